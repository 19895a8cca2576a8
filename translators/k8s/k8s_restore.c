/*
 * k8s_restore.c - the hpcbridge.io/ annotation carry-over read back:
 * each annotation hpcbridge writes restored into its jobspec field (the
 * request as the job gave it, if the manifest still agrees), then the
 * script body scanned for its directives (hb_k8s_read_end()).
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/units.h"
#include "translators/k8s/k8s_int.h"

#define SOFF(m) offsetof(struct hb_jobspec, m)

enum ann_type { A_STR, A_BOOL, A_SPECIAL };

static const struct ann {
	const char *key;
	uint8_t field;
	uint8_t type;
	size_t off; /* A_STR: the string; A_BOOL: the bool */
} anns[] = {
    {"name", HB_F_NAME, A_STR, SOFF(name)},
    {"user", HB_F_USER, A_STR, SOFF(user)},
    {"account", HB_F_ACCOUNT, A_STR, SOFF(account)},
    {"partition", HB_F_PARTITION, A_STR, SOFF(partition)},
    {"qos", HB_F_QOS, A_STR, SOFF(qos)},
    {"comment", HB_F_COMMENT, A_STR, SOFF(comment)},
    {"licenses", HB_F_LICENSES, A_STR, SOFF(licenses)},
    {"constraint", HB_F_CONSTRAINT, A_STR, SOFF(constraint)},
    {"nodelist", HB_F_NODELIST, A_STR, SOFF(nodelist)},
    {"exclude", HB_F_EXCLUDE, A_STR, SOFF(exclude)},
    {"begin", HB_F_BEGIN, A_STR, SOFF(begin)},
    {"deadline", HB_F_DEADLINE, A_STR, SOFF(deadline)},
    {"signal", HB_F_SIGNAL, A_STR, SOFF(signal)},
    {"output", HB_F_OUTPUT, A_STR, SOFF(output)},
    {"error", HB_F_ERROR, A_STR, SOFF(error)},
    {"input", HB_F_INPUT, A_STR, SOFF(input)},
    {"chdir", HB_F_CHDIR, A_STR, SOFF(chdir)},
    {"keep", HB_F_KEEP, A_STR, SOFF(keep)},
    {"dependency", HB_F_DEPENDENCY, A_STR, SOFF(dependency)},
    {"mail-type", HB_F_MAIL_TYPE, A_STR, SOFF(mail_type)},
    {"mail-user", HB_F_MAIL_USER, A_STR, SOFF(mail_user)},
    {"export", HB_F_EXPORT, A_STR, SOFF(export_spec)},
    {"container", HB_F_CONTAINER, A_STR, SOFF(container)},
    {"checkpoint-dir", HB_F_CHECKPOINT, A_STR, SOFF(checkpoint_dir)},
    {"gpu-type", HB_F_GPUS, A_STR, SOFF(gpu_type)},
    {"exclusive", HB_F_EXCLUSIVE, A_BOOL, SOFF(exclusive)},
    {"join-output", HB_F_ERROR, A_BOOL, SOFF(join_output)},
    {"export-all", HB_F_EXPORT, A_BOOL, SOFF(export_all)},
    {"fabric-why", HB_F_FABRIC, A_STR, SOFF(fabric_why)},
    {"fabric-inferred", HB_F_FABRIC, A_BOOL, SOFF(fabric_inferred)},
    {"fabric", HB_F_FABRIC, A_SPECIAL, 0},
    {"interpreter", HB_F_SCRIPT, A_SPECIAL, 0},
    {"request", HB__F_COUNT, A_SPECIAL, 0},
    {"time-limit", HB_F_TIME_LIMIT, A_SPECIAL, 0},
    {"time-min", HB_F_TIME_MIN, A_SPECIAL, 0},
    {"requeue", HB_F_REQUEUE, A_SPECIAL, 0},
    {"array", HB_F_ARRAY, A_SPECIAL, 0},
    {"array-index", HB__F_COUNT, A_SPECIAL, 0},
    {"array-env", HB__F_COUNT, A_SPECIAL, 0},
    {"fabric-env", HB__F_COUNT, A_SPECIAL, 0},
    {"data", HB_F_DATA, A_SPECIAL, 0},
    {"chunks", HB_F_HETEROGENEOUS, A_SPECIAL, 0},
    {"mpi", HB_F_MPI, A_SPECIAL, 0},
    {"env-passthrough", HB_F_ENV, A_SPECIAL, 0},
    {"source-kind", HB__F_COUNT, A_SPECIAL, 0},
    {"source-name", HB__F_COUNT, A_SPECIAL, 0},
};

/* Take field f out of the manifest directives: the annotation says it
 * was not given, only derived. */
static void unlist(struct hb_jobspec *s, enum hb_field f)
{
	for (uint32_t i = 0; i < s->ndirectives; i++) {
		struct hb_directive *d = &s->directives[i];

		if (d->kind != HB_DIR_MANIFEST)
			continue;
		for (uint8_t k = 0; k < d->nfields; k++) {
			if (d->fields[k] != f)
				continue;
			memmove(&d->fields[k], &d->fields[k + 1],
				(size_t)(d->nfields - k - 1));
			d->nfields--;
			if (!d->note)
				d->note = "derived; the job did not ask for "
					  "it (" ANN("request") ")";
			break;
		}
	}
	s->prov[f].kind = HB_PROV_NONE;
	s->prov[f].line = 0;
}

struct request {
	uint32_t nodes_min, nodes_max, ntasks, ntasks_per_node, cpus_per_task;
	uint8_t mem_kind, gpu_scope;
	uint64_t mem_mb;
	uint32_t gpus;
	bool has[6]; /* nodes, ntasks, tpn, cpt, mem, gpus */
};

static int find_name(const char *const *names, size_t n, const char *s,
		     size_t len)
{
	for (size_t i = 1; i < n; i++)
		if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0)
			return (int)i;
	return -1;
}

static int u32_of(const char *s, size_t n, uint32_t *out)
{
	char buf[24];

	if (!n || n >= sizeof(buf))
		return HB_EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return hb_parse_u32(buf, out);
}

static int u64_of(const char *s, size_t n, uint64_t *out)
{
	char buf[24];

	if (!n || n >= sizeof(buf))
		return HB_EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return hb_parse_u64(buf, UINT64_MAX, out);
}

/* "nodes=2-4 ntasks=8 ntasks-per-node=4 cpus-per-task=2
 *  mem=per-cpu:2048 gpus=per-task:1" */
static int parse_request(const char *s, struct request *r)
{
	const char *p = s;

	memset(r, 0, sizeof(*r));
	while (*p) {
		const char *e = strchr(p, ' '), *eq, *v, *colon;
		size_t n, kl, vl;

		e = e ? e : p + strlen(p);
		n = (size_t)(e - p);
		eq = memchr(p, '=', n);
		if (!eq)
			return HB_EINVAL;
		kl = (size_t)(eq - p);
		v = eq + 1;
		vl = n - kl - 1;
#define KEY(k) (kl == strlen(k) && memcmp(p, k, kl) == 0)
		if (KEY("nodes")) {
			const char *dash = memchr(v, '-', vl);

			if (dash) {
				if (u32_of(v, (size_t)(dash - v),
					   &r->nodes_min) ||
				    u32_of(dash + 1,
					   vl - (size_t)(dash - v) - 1,
					   &r->nodes_max))
					return HB_EINVAL;
			} else if (u32_of(v, vl, &r->nodes_min)) {
				return HB_EINVAL;
			}
			r->has[0] = true;
		} else if (KEY("ntasks")) {
			if (u32_of(v, vl, &r->ntasks))
				return HB_EINVAL;
			r->has[1] = true;
		} else if (KEY("ntasks-per-node")) {
			if (u32_of(v, vl, &r->ntasks_per_node))
				return HB_EINVAL;
			r->has[2] = true;
		} else if (KEY("cpus-per-task")) {
			if (u32_of(v, vl, &r->cpus_per_task))
				return HB_EINVAL;
			r->has[3] = true;
		} else if (KEY("mem") || KEY("gpus")) {
			bool mem = KEY("mem");
			int k;

			colon = memchr(v, ':', vl);
			if (!colon)
				return HB_EINVAL;
			k = mem ? find_name(hb_k8s_mem_kind_names,
					    NELEM(hb_k8s_mem_kind_names), v,
					    (size_t)(colon - v))
				: find_name(hb_k8s_gpu_scope_names,
					    NELEM(hb_k8s_gpu_scope_names), v,
					    (size_t)(colon - v));
			if (k < 0)
				return HB_EINVAL;
			if (mem) {
				if (u64_of(colon + 1,
					   vl - (size_t)(colon - v) - 1,
					   &r->mem_mb))
					return HB_EINVAL;
				r->mem_kind = (uint8_t)k;
				r->has[4] = true;
			} else {
				if (u32_of(colon + 1,
					   vl - (size_t)(colon - v) - 1,
					   &r->gpus))
					return HB_EINVAL;
				r->gpu_scope = (uint8_t)k;
				r->has[5] = true;
			}
		} else {
			return HB_EINVAL;
		}
#undef KEY
		p = *e ? e + 1 : e;
	}
	return 0;
}

/* Restore the shape fields as the job gave them, if they still agree
 * with what the manifest says (it may have been edited since). */
static int restore_request(struct hb_k8s_reader *rd, const cJSON *a,
			   const char *path)
{
	static const uint8_t fields[6] = {
	    HB_F_NODES,		HB_F_NTASKS, HB_F_NTASKS_PER_NODE,
	    HB_F_CPUS_PER_TASK, HB_F_MEM,    HB_F_GPUS};
	struct hb_jobspec *s = rd->spec, tmp;
	struct request r;
	struct hb_shape sh;
	uint8_t given[6];
	int ng = 0;

	if (parse_request(a->valuestring, &r))
		return hb_k8s_note(rd, a, path, 0, NULL,
				   "not understood; the manifest's values "
				   "are used");
	memset(&tmp, 0, sizeof(tmp));
	tmp.nodes_min = r.nodes_min;
	tmp.nodes_max = r.nodes_max;
	tmp.ntasks = r.ntasks;
	tmp.ntasks_per_node = r.ntasks_per_node;
	tmp.cpus_per_task = r.cpus_per_task;
	tmp.mem_kind = r.mem_kind;
	tmp.mem_mb = r.mem_mb;
	tmp.gpu_scope = r.gpu_scope;
	tmp.gpus = r.gpus;
	if (hb_jobspec_shape(&tmp, &sh) || sh.nodes != rd->m_nodes ||
	    sh.tasks_per_node != rd->m_slots ||
	    (rd->m_has_cpu &&
	     (uint64_t)sh.cpus_per_node * 1000 != rd->m_cpu_milli) ||
	    sh.gpus_per_node != rd->m_gpus ||
	    (sh.mem_per_node_mb && rd->m_has_mem &&
	     sh.mem_per_node_mb != rd->m_mem_mb))
		return hb_k8s_note(rd, a, path, 0, NULL,
				   "differs from the manifest (edited since "
				   "hpcbridge wrote it?): the manifest's "
				   "values are used");
	s->nodes_min = r.nodes_min;
	s->nodes_max = r.nodes_max;
	s->ntasks = r.ntasks;
	s->ntasks_per_node = r.ntasks_per_node;
	s->cpus_per_task = r.cpus_per_task;
	s->mem_kind = r.mem_kind;
	s->mem_mb = r.mem_mb;
	s->gpu_scope = r.gpu_scope;
	s->gpus = r.gpus;
	for (int i = 0; i < 6; i++) {
		if (r.has[i])
			given[ng++] = fields[i];
		else
			unlist(s, (enum hb_field)fields[i]);
	}
	return hb_k8s_note(rd, a, path, ng, given,
			   "the resource request as the job gave it");
}

/* Slurm array syntax: "a[-b[:s]][,...][%m]". */
static int restore_array(struct hb_k8s_reader *rd, const char *v)
{
	struct hb_jobspec *s = rd->spec;
	const char *pct = strchr(v, '%'), *p = v, *end;
	uint32_t n = 1, max = 0, k = 0;
	struct hb_range *rs;

	end = pct ? pct : v + strlen(v);
	if (pct && hb_parse_u32(pct + 1, &max))
		return HB_EINVAL;
	for (const char *q = v; q < end; q++)
		if (*q == ',')
			n++;
	if (n > 100000)
		return HB_EINVAL;
	rs = hb_arena_alloc(&s->arena, n * sizeof(*rs));
	if (!rs)
		return HB_ENOMEM;
	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p));
		const char *dash, *colon;
		struct hb_range r = {0, 0, 1};

		e = e ? e : end;
		dash = memchr(p, '-', (size_t)(e - p));
		colon = memchr(p, ':', (size_t)(e - p));
		if (colon && (!dash || colon < dash))
			return HB_EINVAL;
		if (u32_of(p, (size_t)((dash ? dash : e) - p), &r.start))
			return HB_EINVAL;
		r.end = r.start;
		if (dash &&
		    u32_of(dash + 1, (size_t)((colon ? colon : e) - dash - 1),
			   &r.end))
			return HB_EINVAL;
		if (colon &&
		    (u32_of(colon + 1, (size_t)(e - colon - 1), &r.step) ||
		     !r.step))
			return HB_EINVAL;
		if (r.end < r.start)
			return HB_EINVAL;
		rs[k++] = r;
		if (e == end)
			break;
		p = e + 1;
		if (p == end)
			return HB_EINVAL;
	}
	if (!k)
		return HB_EINVAL;
	s->array_ranges = rs;
	s->narray_ranges = k;
	s->array_max_running = max;
	return 0;
}

static int restore_data(struct hb_k8s_reader *rd, const char *v)
{
	cJSON *a = cJSON_Parse(v), *it;
	int rc = 0;

	if (!cJSON_IsArray(a)) {
		cJSON_Delete(a);
		return HB_EINVAL;
	}
	cJSON_ArrayForEach (it, a) {
		if (!cJSON_IsString(it)) {
			rc = HB_EINVAL;
			break;
		}
	}
	if (!rc) {
		rd->spec->ndata = 0;
		cJSON_ArrayForEach (it, a) {
			if ((rc = hb_jobspec_add_data(rd->spec,
						      it->valuestring)))
				break;
		}
	}
	cJSON_Delete(a);
	return rc;
}

static int restore_chunks(struct hb_k8s_reader *rd, const char *v)
{
	static const char *const keys[] = {"count",	 "ncpus", "mpiprocs",
					   "ompthreads", "ngpus", "mem_mb"};
	cJSON *a = cJSON_Parse(v), *it;
	struct hb_chunk *ch;
	int n, i = 0, rc = 0;

	if (!cJSON_IsArray(a) || (n = cJSON_GetArraySize(a)) < 1 || n > 1000) {
		cJSON_Delete(a);
		return HB_EINVAL;
	}
	ch = hb_arena_alloc(&rd->spec->arena, (size_t)n * sizeof(*ch));
	if (!ch) {
		cJSON_Delete(a);
		return HB_ENOMEM;
	}
	cJSON_ArrayForEach (it, a) {
		double d[6];

		for (int k = 0; k < 6; k++) {
			const cJSON *x =
			    cJSON_GetObjectItemCaseSensitive(it, keys[k]);

			if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||
			    x->valuedouble < 0 ||
			    x->valuedouble != floor(x->valuedouble) ||
			    x->valuedouble > (k == 5 ? 9007199254740992.0
						     : (double)UINT32_MAX)) {
				rc = HB_EINVAL;
				goto out;
			}
			d[k] = x->valuedouble;
		}
		ch[i].count = (uint32_t)d[0];
		ch[i].ncpus = (uint32_t)d[1];
		ch[i].mpiprocs = (uint32_t)d[2];
		ch[i].ompthreads = (uint32_t)d[3];
		ch[i].ngpus = (uint32_t)d[4];
		ch[i].mem_mb = (uint64_t)d[5];
		i++;
	}
	rd->spec->chunks = ch;
	rd->spec->nchunks = (uint32_t)i;
out:
	cJSON_Delete(a);
	return rc;
}

/* Pass-through variables back at their places: "3:NAME,5:OTHER". */
static int restore_passthrough(struct hb_k8s_reader *rd, const char *v)
{
	struct hb_jobspec *s = rd->spec;
	const char *p = v;

	while (*p) {
		const char *e = strchr(p, ','), *colon;
		char name[256];
		uint32_t pos;
		size_t nl;

		e = e ? e : p + strlen(p);
		colon = memchr(p, ':', (size_t)(e - p));
		if (!colon || u32_of(p, (size_t)(colon - p), &pos))
			return HB_EINVAL;
		nl = (size_t)(e - colon - 1);
		if (!nl || nl >= sizeof(name))
			return HB_EINVAL;
		memcpy(name, colon + 1, nl);
		name[nl] = '\0';
		for (uint32_t i = 0; i < s->nenv; i++)
			if (strcmp(s->env[i].name, name) == 0)
				return HB_EINVAL;
		if (hb_jobspec_add_env(s, name, NULL))
			return HB_ENOMEM;
		if (pos < s->nenv - 1) {
			struct hb_env e2 = s->env[s->nenv - 1];

			memmove(&s->env[pos + 1], &s->env[pos],
				(size_t)(s->nenv - 1 - pos) * sizeof(e2));
			s->env[pos] = e2;
		}
		p = *e ? e + 1 : e;
	}
	return 0;
}

static int restore_special(struct hb_k8s_reader *rd, const struct ann *an,
			   const cJSON *a, const char *path)
{
	struct hb_jobspec *s = rd->spec;
	const char *v = a->valuestring;
	uint64_t x;
	int rc = 0;
	uint8_t fl = an->field;

	if (strcmp(an->key, "request") == 0)
		return restore_request(rd, a, path);
	if (strcmp(an->key, "interpreter") == 0) {
		s->interpreter = hb_jobspec_strdup(s, v);
		return s->interpreter ? 0 : RD_OOM(rd);
	}
	if (strcmp(an->key, "source-kind") == 0 ||
	    strcmp(an->key, "source-name") == 0)
		return hb_k8s_note(rd, a, path, 0, NULL,
				   "where the job came from; not a job "
				   "setting");
	if (strcmp(an->key, "fabric-env") == 0)
		return hb_k8s_note(rd, a, path, 0, NULL,
				   "variables set for the RDMA fabric; not "
				   "the job's own");
	if (strcmp(an->key, "array-env") == 0)
		return hb_k8s_note(rd, a, path, 0, NULL,
				   "variables set for this array element; "
				   "not the job's own");
	if (strcmp(an->key, "array-index") == 0)
		return hb_k8s_note(rd, a, path, 0, NULL,
				   "this manifest is one element of the "
				   "array; translated back, the whole array "
				   "is one job again");
	if (strcmp(an->key, "time-limit") == 0) {
		if (rd->m_has_deadline)
			return hb_k8s_note(rd, a, path, 0, NULL,
					   "the manifest has a deadline: "
					   "that one is used");
		if (strcmp(v, "UNLIMITED") == 0)
			s->time_limit = HB_TIME_UNLIMITED;
		else if (strcmp(v, "0") == 0)
			s->time_limit = 0;
		else
			rc = HB_EINVAL;
	} else if (strcmp(an->key, "time-min") == 0) {
		if ((rc = hb_parse_u64(v, UINT64_MAX - 1, &x)) == 0)
			s->time_min = x;
	} else if (strcmp(an->key, "requeue") == 0) {
		if (strcmp(v, "true") == 0)
			s->requeue = 1;
		else if (strcmp(v, "false") == 0)
			s->requeue = 0;
		else
			rc = HB_EINVAL;
	} else if (strcmp(an->key, "array") == 0) {
		s->array = hb_jobspec_strdup(s, v);
		if (!s->array)
			return RD_OOM(rd);
		if (restore_array(rd, v))
			return hb_k8s_note(rd, a, path, 1, &fl,
					   "not Slurm array syntax: kept as "
					   "text only");
	} else if (strcmp(an->key, "data") == 0) {
		rc = restore_data(rd, v);
	} else if (strcmp(an->key, "chunks") == 0) {
		rc = restore_chunks(rd, v);
	} else if (strcmp(an->key, "env-passthrough") == 0) {
		rc = restore_passthrough(rd, v);
	} else if (strcmp(an->key, "fabric") == 0) {
		int f = hb_fabric_parse(v);

		if (f < 0)
			rc = HB_EINVAL;
		else
			s->fabric = (uint8_t)f;
	} else if (strcmp(an->key, "mpi") == 0) {
		if (strcmp(v, "default") == 0) {
			s->mpi = HB_MPI_UNKNOWN;
			unlist(s, HB_F_MPI);
			return hb_k8s_note(rd, a, path, 0, NULL,
					   "the job named no MPI; the "
					   "configured default ran");
		}
		if (strcmp(v, "OpenMPI") == 0)
			s->mpi = HB_MPI_OPENMPI;
		else if (strcmp(v, "Intel") == 0)
			s->mpi = HB_MPI_INTEL;
		else if (strcmp(v, "MPICH") == 0)
			s->mpi = HB_MPI_MPICH;
		else if (strcmp(v, "MVAPICH2") == 0)
			s->mpi = HB_MPI_MVAPICH2;
		else
			rc = HB_EINVAL;
	}
	if (rc == HB_ENOMEM)
		return RD_OOM(rd);
	if (rc)
		return hb_k8s_rd_err(
		    rd, a, HB_EINVAL, path,
		    "'%.100s' is not what hpcbridge writes here", v);
	return hb_k8s_note(rd, a, path, 1, &fl, NULL);
}

/* Take off the variables named in names ("A,B"): what the manifest
 * added, not the job's own. */
static void drop_env(struct hb_jobspec *s, const char *names)
{
	uint32_t k = 0;
	size_t nl;

	if (!names)
		return;
	for (uint32_t i = 0; i < s->nenv; i++) {
		const char *p = names;
		bool drop = false;

		nl = strlen(s->env[i].name);
		while (*p && !drop) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);

			drop = n == nl && memcmp(p, s->env[i].name, n) == 0;
			p += n + (e ? 1 : 0);
		}
		if (!drop)
			s->env[k++] = s->env[i];
	}
	s->nenv = k;
	if (!k)
		unlist(s, HB_F_ENV);
}

int hb_k8s_read_end(struct hb_k8s_reader *rd)
{
	struct hb_jobspec *s = rd->spec;
	const cJSON *a;
	size_t pl = strlen(HB_ANNOTATION_PREFIX);
	struct hb_prov so;
	uint32_t before;
	int rc;

	/* Specials last but one ("request" needs the manifest's values),
	 * pass-through env before the body scan adds its variables. */
	for (int pass = 0; pass < 2; pass++) {
		cJSON_ArrayForEach (a, rd->annotations) {
			const struct ann *an = NULL;
			char path[320];

			snprintf(path, sizeof(path), "metadata.annotations[%s]",
				 a->string);
			if (strncmp(a->string, HB_ANNOTATION_PREFIX, pl)) {
				if (pass == 0 &&
				    (rc = hb_k8s_note(rd, a, path, 0, NULL,
						      "not carried: an "
						      "annotation")))
					return rc;
				continue;
			}
			for (size_t i = 0; i < NELEM(anns); i++)
				if (strcmp(a->string + pl, anns[i].key) == 0)
					an = &anns[i];
			if (!an) {
				if (pass == 0 &&
				    (rc = hb_k8s_note(rd, a, path, 0, NULL,
						      "not an annotation "
						      "hpcbridge writes; not "
						      "carried")))
					return rc;
				continue;
			}
			if ((an->type == A_SPECIAL) != (pass == 1))
				continue;
			if (an->type == A_SPECIAL) {
				rc = restore_special(rd, an, a, path);
			} else if (an->type == A_STR) {
				const char **dst =
				    (const char **)((char *)s + an->off);

				*dst = hb_jobspec_strdup(s, a->valuestring);
				rc = *dst ? hb_k8s_set(rd, a, path,
						       (enum hb_field)an->field,
						       NULL)
					  : RD_OOM(rd);
			} else {
				bool *dst = (bool *)((char *)s + an->off);

				if (strcmp(a->valuestring, "true") &&
				    strcmp(a->valuestring, "false"))
					return hb_k8s_rd_err(
					    rd, a, HB_EINVAL, path,
					    "must be true or false");
				*dst = strcmp(a->valuestring, "true") == 0;
				rc = hb_k8s_set(rd, a, path,
						(enum hb_field)an->field, NULL);
			}
			if (rc)
				return rc;
		}
	}
	/* The array variables an element's manifest sets are not the
	 * job's own. */
	if (rd->ours) {
		drop_env(s, cJSON_GetStringValue(hb_k8s_child(
					  rd->annotations, ANN("array-env"))));
		drop_env(s, cJSON_GetStringValue(hb_k8s_child(
					  rd->annotations, ANN("fabric-env"))));
	}
	/* Nor is the launcher's ssh command line (mpijob.c), nor where its
	 * checkpoint comes from (k8s_ckpt.c). */
	if (rd->ours)
		drop_env(s, "HPCBRIDGE_SSH_ARGS,HPCBRIDGE_CKPT_URL,"
			    "HPCBRIDGE_CKPT_DIR,HPCBRIDGE_CKPT_EVERY,"
			    "HPCBRIDGE_S3_ENDPOINT,"
			    "HPCBRIDGE_S3_REGION,HPCBRIDGE_S3_ACCESS_KEY_ID,"
			    "HPCBRIDGE_S3_SECRET_ACCESS_KEY");
	/* A manifest hpcbridge made says what the job named; a name it
	 * made up from the file name is not the job's. */
	if (rd->ours && !hb_k8s_child(rd->annotations, ANN("name")) &&
	    s->name) {
		s->name = NULL;
		unlist(s, HB_F_NAME);
	}
	before = s->ndirectives;
	if ((rc = hb_jobspec_scan_body(s, rd->err)))
		return rc;
	/* The body's lines are the script's, not the manifest's: place
	 * what the scan found at the script's field, and say which line. */
	so.kind = HB_PROV_MANIFEST;
	so.line = s->prov[HB_F_SCRIPT].line;
	for (uint32_t i = before; i < s->ndirectives; i++) {
		struct hb_directive *d = &s->directives[i];
		char *t;

		if (d->prov.kind != HB_PROV_FILE)
			continue;
		t = hb_arena_printf(&s->arena, "script line %u: %s",
				    d->prov.line, d->text);
		for (uint8_t k = 0; k < d->nfields; k++) {
			struct hb_prov *fo = &s->prov[d->fields[k]];

			if (fo->kind == d->prov.kind &&
			    fo->line == d->prov.line)
				*fo = so;
		}
		d->prov = so;
		if (t)
			d->text = t;
	}
	return 0;
}
