/*
 * decide.c - job_submit/hpcbridge's logic: the decide request built from
 * a job_desc, the reply checked, and the decision applied to the job_desc.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hbplugin.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/proto.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/translate.h"

#define GATEWAY_ENV "HPCBRIDGE_JOB_ID="

/* ------------------------------------------------------------ request */

int hb_decide_wanted(const job_desc_msg_t *jd)
{
	size_t gl = strlen(GATEWAY_ENV);

	if (!jd || !jd->script || !jd->script[0])
		return 0;
	if (jd->het_job_offset != NO_VAL)
		return 0;
	for (uint32_t i = 0; jd->environment && i < jd->env_size; i++) {
		if (!jd->environment[i])
			break;
		if (!strncmp(jd->environment[i], GATEWAY_ENV, gl))
			return 0;
	}
	return 1;
}

static int set(uint32_t v)
{
	return v != NO_VAL && v != 0;
}

static int set16(uint16_t v)
{
	return v != NO_VAL16 && v != 0;
}

static const struct hb_prov from_slurm = { HB_PROV_DERIVED, 0 };

/*
 * The daemon refuses a request that is not valid UTF-8, and scripts,
 * names and environments from Slurm are bytes (Latin-1 comments in old
 * scripts).  s's n bytes made valid as the request's writer makes them
 * (hb_emit): each byte that starts no valid sequence becomes U+FFFD.
 * Appended to out; 0 or HB_ENOMEM.
 */
static int utf8_mend(const char *s, size_t n, struct hb_buf *out)
{
	const unsigned char *v = (const unsigned char *)s;
	size_t i = hb_utf8_span(s, n), k;
	int rc = hb_buf_append(out, v, i);

	while (!rc && i < n) {
		k = hb_utf8_dec(v + i, n - i, NULL);
		if (k) {
			rc = hb_buf_append(out, v + i, k);
			i += k;
		} else {
			rc = hb_buf_puts(out, "\xef\xbf\xbd");
			i++;
		}
	}
	return rc;
}

/* s in the jobspec's memory, mended (utf8_mend()) when it needs it, so
 * that the engine here reads what the daemon reads from the request;
 * NULL when out of memory. */
static const char *spec_dup(struct hb_jobspec *spec, const char *s)
{
	size_t n = strlen(s);
	struct hb_buf b;
	const char *d;

	if (hb_utf8_span(s, n) == n)
		return hb_jobspec_strdup(spec, s);
	hb_buf_init(&b, 0);
	d = utf8_mend(s, n, &b) || !b.data ? NULL
					   : hb_jobspec_strdup(spec, b.data);
	hb_buf_free(&b);
	return d;
}

/* Copy s into the jobspec as field f; 0, or HB_ENOMEM. */
static int spec_str(struct hb_jobspec *spec, const char **dst, const char *s,
		    enum hb_field f)
{
	if (!s || !*s)
		return 0;
	*dst = spec_dup(spec, s);
	if (!*dst)
		return HB_ENOMEM;
	hb_jobspec_set_prov(spec, f, from_slurm);
	return 0;
}

/* A time_t as the local "YYYY-MM-DDTHH:MM:SS" Slurm reads back, in the
 * zone's offset at t (localtime_r()'s tm_gmtoff). */
static int spec_date(struct hb_jobspec *spec, const char **dst, time_t t,
		     enum hb_field f)
{
	struct tm tm;
	char buf[32];

	if (!t || !localtime_r(&t, &tm))
		return 0;
	hb_time_slurm_date_format(t, (int32_t)tm.tm_gmtoff, buf);
	return spec_str(spec, dst, buf, f);
}

/* Parse an unsigned decimal at *p, advancing it.  0 or -1. */
static int take_u32(const char **p, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	*p = end;
	return 0;
}

/* "0-15:2,20%4" into the jobspec's array ranges; silently nothing when
 * Slurm's own syntax is not recognised (the script still carries it). */
static int spec_array(struct hb_jobspec *spec, const char *inx)
{
	struct hb_range *r;
	uint32_t n = 1, i = 0, maxrun = 0;
	const char *p;

	if (!inx || !*inx)
		return 0;
	for (p = inx; *p; p++)
		n += *p == ',';
	r = hb_arena_alloc(&spec->arena, n * sizeof(*r));
	if (!r)
		return HB_ENOMEM;
	for (p = inx;;) {
		if (i >= n || take_u32(&p, &r[i].start))
			return 0;
		r[i].end = r[i].start;
		r[i].step = 1;
		if (*p == '-') {
			p++;
			if (take_u32(&p, &r[i].end) || r[i].end < r[i].start)
				return 0;
			if (*p == ':') {
				p++;
				if (take_u32(&p, &r[i].step) || !r[i].step)
					return 0;
			}
		}
		i++;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '%') {
			p++;
			if (take_u32(&p, &maxrun))
				return 0;
		}
		if (*p)
			return 0;
		break;
	}
	spec->array = hb_jobspec_strdup(spec, inx);
	if (!spec->array)
		return HB_ENOMEM;
	spec->array_ranges = r;
	spec->narray_ranges = i;
	spec->array_max_running = maxrun;
	hb_jobspec_set_prov(spec, HB_F_ARRAY, from_slurm);
	return 0;
}

/*
 * GPUs from Slurm's TRES strings: "gres:gpu:4", "gres:gpu:a100:4" (22.05)
 * or "gres/gpu:a100:4", among other comma-separated TRES.  1 if found.
 */
static int tres_gpus(const char *tres, uint32_t *count, char *type, size_t tlen)
{
	const char *p = tres;

	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		const char *f[4];
		size_t fl[4];
		int nf = 0;

		/* Split p[0..n) at ':' and '/' into at most 4 fields. */
		for (size_t i = 0, s = 0; i <= n && nf < 4; i++) {
			if (i < n && p[i] != ':' && p[i] != '/')
				continue;
			f[nf] = p + s;
			fl[nf++] = i - s;
			s = i + 1;
		}
		if (nf >= 3 && fl[0] == 4 && !strncmp(f[0], "gres", 4) &&
		    fl[1] == 3 && !strncmp(f[1], "gpu", 3)) {
			const char *c = f[nf - 1];
			uint32_t v;

			if (!take_u32(&c, &v) && c == f[nf - 1] + fl[nf - 1]) {
				if (nf == 4 && fl[2] < tlen) {
					memcpy(type, f[2], fl[2]);
					type[fl[2]] = '\0';
				}
				*count = v;
				return 1;
			}
		}
		p = e ? e + 1 : NULL;
	}
	return 0;
}

static int spec_gpus(struct hb_jobspec *spec, const job_desc_msg_t *jd)
{
	static const struct {
		size_t off;
		enum hb_gpu_scope scope;
	} src[] = {
		{ offsetof(job_desc_msg_t, tres_per_task), HB_GPU_PER_TASK },
		{ offsetof(job_desc_msg_t, tres_per_node), HB_GPU_PER_NODE },
		{ offsetof(job_desc_msg_t, tres_per_job), HB_GPU_PER_JOB },
	};

	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
		const char *t = *(char *const *)((const char *)jd + src[i].off);
		char type[64] = "";
		uint32_t n;

		if (!t || !tres_gpus(t, &n, type, sizeof(type)))
			continue;
		spec->gpu_scope = (uint8_t)src[i].scope;
		spec->gpus = n;
		if (type[0] &&
		    !(spec->gpu_type = hb_jobspec_strdup(spec, type)))
			return HB_ENOMEM;
		hb_jobspec_set_prov(spec, HB_F_GPUS, from_slurm);
		return 0;
	}
	return 0;
}

static void spec_time(struct hb_jobspec *spec, uint64_t *dst, uint32_t min,
		      enum hb_field f)
{
	if (min == NO_VAL)
		return;
	*dst = min == INFINITE ? HB_TIME_UNLIMITED : (uint64_t)min * 60;
	hb_jobspec_set_prov(spec, f, from_slurm);
}

/* The jobspec of what Slurm resolved for jd. */
static int build_spec(struct hb_jobspec *spec, const job_desc_msg_t *jd,
		      const char *const vals[HB__OPT_COUNT])
{
	int rc = 0;

	spec->source = HB_SRC_SBATCH;
	rc |= spec_str(spec, &spec->name, jd->name, HB_F_NAME);
	rc |= spec_str(spec, &spec->account, jd->account, HB_F_ACCOUNT);
	rc |= spec_str(spec, &spec->partition, jd->partition, HB_F_PARTITION);
	rc |= spec_str(spec, &spec->qos, jd->qos, HB_F_QOS);
	rc |= spec_str(spec, &spec->comment, jd->comment, HB_F_COMMENT);
	if (set(jd->min_nodes)) {
		spec->nodes_min = jd->min_nodes;
		hb_jobspec_set_prov(spec, HB_F_NODES, from_slurm);
	}
	if (set(jd->max_nodes) && jd->max_nodes >= spec->nodes_min) {
		spec->nodes_max = jd->max_nodes;
		hb_jobspec_set_prov(spec, HB_F_NODES, from_slurm);
	}
	if (set(jd->num_tasks)) {
		spec->ntasks = jd->num_tasks;
		hb_jobspec_set_prov(spec, HB_F_NTASKS, from_slurm);
	}
	if (set16(jd->ntasks_per_node)) {
		spec->ntasks_per_node = jd->ntasks_per_node;
		hb_jobspec_set_prov(spec, HB_F_NTASKS_PER_NODE, from_slurm);
	}
	if (set16(jd->cpus_per_task)) {
		spec->cpus_per_task = jd->cpus_per_task;
		hb_jobspec_set_prov(spec, HB_F_CPUS_PER_TASK, from_slurm);
	}
	if (jd->pn_min_memory != NO_VAL64) {
		spec->mem_kind = jd->pn_min_memory & MEM_PER_CPU
					 ? HB_MEM_PER_CPU
					 : HB_MEM_PER_NODE;
		spec->mem_mb = jd->pn_min_memory & ~MEM_PER_CPU;
		hb_jobspec_set_prov(spec, HB_F_MEM, from_slurm);
	}
	rc |= spec_gpus(spec, jd);
	rc |= spec_str(spec, &spec->licenses, jd->licenses, HB_F_LICENSES);
	rc |= spec_str(spec, &spec->constraint, jd->features, HB_F_CONSTRAINT);
	rc |= spec_str(spec, &spec->nodelist, jd->req_nodes, HB_F_NODELIST);
	rc |= spec_str(spec, &spec->exclude, jd->exc_nodes, HB_F_EXCLUDE);
	if (jd->shared == JOB_SHARED_NONE) {
		spec->exclusive = true;
		hb_jobspec_set_prov(spec, HB_F_EXCLUSIVE, from_slurm);
	}
	spec_time(spec, &spec->time_limit, jd->time_limit, HB_F_TIME_LIMIT);
	spec_time(spec, &spec->time_min, jd->time_min, HB_F_TIME_MIN);
	rc |= spec_date(spec, &spec->begin, jd->begin_time, HB_F_BEGIN);
	if (jd->deadline)
		rc |= spec_date(spec, &spec->deadline, jd->deadline,
				HB_F_DEADLINE);
	else
		rc |= spec_str(spec, &spec->deadline, vals[HB_OPT_DEADLINE],
			       HB_F_DEADLINE);
	rc |= spec_str(spec, &spec->output, jd->std_out, HB_F_OUTPUT);
	rc |= spec_str(spec, &spec->error, jd->std_err, HB_F_ERROR);
	rc |= spec_str(spec, &spec->input, jd->std_in, HB_F_INPUT);
	rc |= spec_str(spec, &spec->chdir, jd->work_dir, HB_F_CHDIR);
	rc |= spec_array(spec, jd->array_inx);
	rc |= spec_str(spec, &spec->dependency, jd->dependency,
		       HB_F_DEPENDENCY);
	rc |= spec_str(spec, &spec->mail_user, jd->mail_user, HB_F_MAIL_USER);
	if (jd->requeue != NO_VAL16) {
		spec->requeue = jd->requeue ? 1 : 0;
		hb_jobspec_set_prov(spec, HB_F_REQUEUE, from_slurm);
	}
	rc |= spec_str(spec, &spec->container, jd->container, HB_F_CONTAINER);
	rc |= spec_str(spec, &spec->checkpoint_dir, vals[HB_OPT_CHECKPOINT],
		       HB_F_CHECKPOINT);
	if (vals[HB_OPT_DATA]) {
		rc |= hb_jobspec_add_data(spec, vals[HB_OPT_DATA]);
		hb_jobspec_set_prov(spec, HB_F_DATA, from_slurm);
	}
	/* The fabric: said in words (checked), else read from the script */
	if (vals[HB_OPT_FABRIC]) {
		char why[64];

		snprintf(why, sizeof(why), "--hpcbridge-fabric=%s",
			 vals[HB_OPT_FABRIC]);
		rc |= hb_jobspec_set_fabric(spec, vals[HB_OPT_FABRIC], why,
					    from_slurm);
	}
	rc |= hb_jobspec_fabric_from_script(spec, jd->script);
	return rc ? HB_ENOMEM : 0;
}

/* A JSON array of count strings from v, at most max bytes in all (the
 * rest is left out); NULL entries end it. */
static void emit_strs(struct hb_emit *e, const char *key, char *const *v,
		      uint32_t count, size_t max)
{
	size_t used = 0;

	hb_emit_arr(e, key);
	for (uint32_t i = 0; v && i < count && v[i]; i++) {
		size_t n = strlen(v[i]);

		if (used + n > max)
			break;
		used += n;
		hb_emit_strn(e, NULL, v[i], n);
	}
	hb_emit_end(e);
}

/* A string member, left out when absent or empty. */
static void emit_str(struct hb_emit *e, const char *key, const char *v)
{
	if (v && *v)
		hb_emit_str(e, key, v);
}

/* Every string of the tree made valid as the text writer makes it
 * (utf8_mend()).  0 or HB_ENOMEM. */
static int fix_utf8(cJSON *node, int depth)
{
	cJSON *it;

	if (depth > HB_PROTO_MAX_DEPTH)
		return 0;
	if (cJSON_IsString(node) && node->valuestring) {
		size_t n = strlen(node->valuestring);
		struct hb_buf b;
		int rc;

		if (hb_utf8_span(node->valuestring, n) == n)
			return 0;
		hb_buf_init(&b, 0);
		rc = utf8_mend(node->valuestring, n, &b);
		if (rc || !b.data || !cJSON_SetValuestring(node, b.data))
			rc = HB_ENOMEM;
		hb_buf_free(&b);
		return rc;
	}
	cJSON_ArrayForEach (it, node)
		if (fix_utf8(it, depth + 1))
			return HB_ENOMEM;
	return 0;
}

int hb_decide_job_read(const job_desc_msg_t *jd, struct hb_decide_job *dj,
		       struct hb_err *err)
{
	const char *t;
	size_t i;

	memset(dj, 0, sizeof(*dj));
	if (!jd)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "no job description");
	hb_jobspec_init(&dj->spec, "job_desc");
	for (int o = 0; o < HB__OPT_COUNT; o++) {
		const char *v = hb_opt_find((enum hb_opt)o, jd->spank_job_env,
					    jd->spank_job_env_size,
					    jd->environment, jd->env_size);
		struct hb_err e = { 0 };

		if (v && hb_opt_check((enum hb_opt)o, v, &e) == 0 &&
		    !(dj->vals[o] = spec_dup(&dj->spec, v))) {
			hb_decide_job_free(dj);
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		}
	}
	/* checked: auto, slurm or kubernetes, in any case */
	t = dj->vals[HB_OPT_TARGET];
	for (i = 0; t && t[i] && i + 1 < sizeof(dj->target); i++)
		dj->target[i] = (char)tolower((unsigned char)t[i]);
	dj->target[i] = '\0';
	snprintf(dj->user, sizeof(dj->user), "%" PRIu32, jd->user_id);
	if (build_spec(&dj->spec, jd, dj->vals)) {
		hb_decide_job_free(dj);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	/* as hb_place_request_read() reads the request written below: the
	 * jobspec's copies, mended as the request's writer mends them */
	dj->job.user = dj->user;
	dj->job.account = dj->spec.account;
	dj->job.partition = dj->spec.partition;
	dj->job.name = dj->spec.name;
	dj->job.ask = !strcmp(dj->target, "slurm")	  ? HB_ASK_SLURM
		      : !strcmp(dj->target, "kubernetes") ? HB_ASK_KUBE
							  : HB_ASK_AUTO;
	dj->job.time_limit_min = hb_rules_time_limit(
		jd->time_limit != NO_VAL && jd->time_limit != INFINITE
			? (int64_t)jd->time_limit
			: HB_RULES_NO_LIMIT);
	dj->job.spec = &dj->spec;
	dj->job.uid = jd->user_id;
	return 0;
}

void hb_decide_job_free(struct hb_decide_job *dj)
{
	hb_jobspec_free(&dj->spec);
	dj->job.spec = NULL;
}

int hb_decide_request_emit(struct hb_emit *e, const job_desc_msg_t *jd,
			   const struct hb_decide_job *dj)
{
	cJSON *spec = hb_jobspec_to_json(&dj->spec);
	int nopts = 0, rc;

	if (!spec)
		return HB_ENOMEM;
	hb_emit_obj(e, NULL);
	hb_emit_str(e, "op", "decide");
	hb_emit_num(e, "uid", (double)jd->user_id);
	emit_str(e, "account", jd->account);
	emit_str(e, "partition", jd->partition);
	emit_str(e, "slurm_job_name", jd->name);
	if (jd->time_limit != NO_VAL && jd->time_limit != INFINITE)
		hb_emit_num(e, "time_limit_min", (double)jd->time_limit);
	emit_str(e, "target", dj->target);
	for (int i = HB_OPT_DEADLINE; i < HB__OPT_COUNT; i++)
		nopts += dj->vals[i] != NULL;
	if (nopts) {
		hb_emit_obj(e, "options");
		for (int i = HB_OPT_DEADLINE; i < HB__OPT_COUNT; i++)
			emit_str(e, hb_opt_key((enum hb_opt)i), dj->vals[i]);
		hb_emit_end(e);
	}
	emit_str(e, "script", jd->script);
	emit_str(e, "cwd", jd->work_dir);
	emit_strs(e, "argv", jd->argv, jd->argc, HB_DECIDE_ARGV_MAX);
	emit_strs(e, "env", jd->environment, jd->env_size, HB_DECIDE_ENV_MAX);
	rc = hb_emit_tree(e, "jobspec", spec);
	cJSON_Delete(spec);
	return rc ? rc : hb_emit_end(e);
}

cJSON *hb_decide_request(const job_desc_msg_t *jd, struct hb_err *err)
{
	struct hb_decide_job dj;
	struct hb_emit *e = NULL;
	cJSON *req = NULL;
	int rc;

	if ((rc = hb_decide_job_read(jd, &dj, err)))
		return NULL;
	if (!(e = hb_emit_new(HB_EMIT_TREE, NULL)) ||
	    hb_decide_request_emit(e, jd, &dj) || hb_emit_done(e) ||
	    hb_emit_take(e, &req) || fix_utf8(req, 0)) {
		cJSON_Delete(req);
		req = NULL;
		hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	hb_emit_free(e);
	hb_decide_job_free(&dj);
	return req;
}

/* -------------------------------------------------------------- reply */

static int perr(struct hb_err *err, const char *msg)
{
	return hb_err_set(err, HB_EPROTO, NULL, 0, "%s", msg);
}

/* A plain token: [A-Za-z0-9._:-], 1..n bytes. */
static int token_ok(const char *s, size_t n)
{
	size_t i;

	if (!s || !*s)
		return 0;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (i >= n ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == ':' || c == '-'))
			return 0;
	}
	return 1;
}

static int parse_proxy(const cJSON *p, struct hb_plugin_decision *d,
		       struct hb_err *err)
{
	uint64_t v;

	if (!cJSON_IsObject(p))
		return perr(err, "a kubernetes decision without proxy");
	/* The getters' own messages stay out of err: these name the path. */
	if (hb_doc_get_str(p, "partition", 64, HB_DOC_ONELINE, &d->partition,
			   NULL) ||
	    !token_ok(d->partition, 64))
		return perr(err, "proxy.partition: not a partition name");
	if (hb_doc_get_str(p, "script", HB_PROXY_SCRIPT_MAX, HB_DOC_LINES,
			   &d->script, NULL) ||
	    !d->script || strncmp(d->script, "#!", 2))
		return perr(err, "proxy.script: not a script starting with #!");
	if (hb_doc_get_str(p, "comment", HB_COMMENT_MAX, HB_DOC_ONELINE,
			   &d->comment, NULL))
		return perr(err, "proxy.comment: not a one-line string");
	v = NO_VAL;
	if (hb_doc_get_u64(p, "time_limit_min", 1, NO_VAL - 1, 0, &v, NULL))
		return perr(err, "proxy.time_limit_min: out of range");
	d->time_limit_min = (uint32_t)v;
	v = 1;
	if (hb_doc_get_u64(p, "cpus", 1, 1024, 0, &v, NULL))
		return perr(err, "proxy.cpus: out of range");
	d->cpus = (uint32_t)v;
	d->mem_mb = 64;
	if (hb_doc_get_u64(p, "mem_mb", 1, 1u << 30, 0, &d->mem_mb, NULL))
		return perr(err, "proxy.mem_mb: out of range");
	return 0;
}

int hb_plugin_decision_parse(const cJSON *reply, struct hb_plugin_decision *d,
			     struct hb_err *err)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	const char *target = NULL;
	int rc;

	memset(d, 0, sizeof(*d));
	if (!cJSON_IsObject(reply) || !cJSON_IsBool(ok)) {
		rc = perr(err, "reply without \"ok\"");
		goto out;
	}
	if (!cJSON_IsTrue(ok)) {
		const cJSON *e =
			cJSON_GetObjectItemCaseSensitive(reply, "error");
		const char *code = NULL, *msg = NULL;

		/* a bad code or message reads as none */
		hb_doc_get_str(e, "code", 32, HB_DOC_ONELINE, &code, NULL);
		hb_doc_get_str(e, "message", 400, HB_DOC_ONELINE, &msg, NULL);

		rc = code ? hb_errcode(code) : HB_EPROTO;
		if (rc >= 0) /* "OK" is no error code */
			rc = HB_EPROTO;
		hb_err_set(err, rc, NULL, 0, "daemon refused: %s: %s",
			   code ? code : "?", msg ? msg : "no message");
		goto out;
	}
	if (hb_doc_get_str(reply, "id", 64, HB_DOC_ONELINE, &d->id, NULL) ||
	    !token_ok(d->id, 64)) {
		rc = perr(err, "reply without a valid \"id\"");
		goto out;
	}
	if (hb_doc_get_str(reply, "reason", 400, HB_DOC_ONELINE, &d->reason,
			   NULL) ||
	    hb_doc_get_str(reply, "admin_comment", HB_COMMENT_MAX,
			   HB_DOC_ONELINE, &d->admin_comment, NULL)) {
		rc = perr(err, "reason/admin_comment: not a one-line "
			       "string");
		goto out;
	}
	hb_doc_get_str(reply, "target", 16, HB_DOC_ONELINE, &target, NULL);
	if (target && !strcmp(target, "slurm")) {
		d->target = HB_PLUGIN_SLURM;
		rc = 0;
	} else if (target && !strcmp(target, "rejected")) {
		d->target = HB_PLUGIN_REJECTED;
		rc = d->reason ? 0
			       : perr(err, "a rejection without a \"reason\"");
	} else if (target && !strcmp(target, "kubernetes")) {
		d->target = HB_PLUGIN_KUBERNETES;
		rc = parse_proxy(
			cJSON_GetObjectItemCaseSensitive(reply, "proxy"), d,
			err);
	} else {
		rc = perr(err, "reply without a known \"target\"");
	}
out:
	if (rc)
		memset(d, 0, sizeof(*d));
	return rc;
}

/* -------------------------------------------------------------- apply */

/* Cut s to at most max bytes, not inside a UTF-8 sequence. */
static void cut(struct hb_buf *b, size_t max)
{
	size_t n = b->len;

	if (n <= max)
		return;
	n = max;
	while (n > 0 && ((unsigned char)b->data[n] & 0xc0) == 0x80)
		n--;
	b->len = n;
	b->data[n] = '\0';
}

int hb_plugin_decision_summary(const job_desc_msg_t *jd, char *buf, size_t len)
{
	struct hb_buf b;
	int rc = 0;

	if (!buf || !len)
		return HB_EINVAL;
	hb_buf_init(&b, 4096);
	rc |= hb_buf_puts(&b, "orig:");
	if (jd->partition)
		rc |= hb_buf_printf(&b, " partition=%s", jd->partition);
	if (set(jd->min_nodes)) {
		rc |= hb_buf_printf(&b, " nodes=%" PRIu32, jd->min_nodes);
		if (set(jd->max_nodes) && jd->max_nodes > jd->min_nodes)
			rc |= hb_buf_printf(&b, "-%" PRIu32, jd->max_nodes);
	}
	if (set(jd->num_tasks))
		rc |= hb_buf_printf(&b, " tasks=%" PRIu32, jd->num_tasks);
	if (set16(jd->cpus_per_task))
		rc |= hb_buf_printf(&b, " cpus_per_task=%u",
				    (unsigned)jd->cpus_per_task);
	if (set(jd->min_cpus))
		rc |= hb_buf_printf(&b, " cpus=%" PRIu32, jd->min_cpus);
	if (jd->pn_min_memory != NO_VAL64)
		rc |= hb_buf_printf(&b, " mem=%" PRIu64 "M/%s",
				    jd->pn_min_memory & ~MEM_PER_CPU,
				    jd->pn_min_memory & MEM_PER_CPU ? "cpu"
								    : "node");
	if (jd->tres_per_job)
		rc |= hb_buf_printf(&b, " tres_per_job=%s", jd->tres_per_job);
	if (jd->tres_per_node)
		rc |= hb_buf_printf(&b, " tres_per_node=%s", jd->tres_per_node);
	if (jd->tres_per_task)
		rc |= hb_buf_printf(&b, " tres_per_task=%s", jd->tres_per_task);
	if (jd->time_limit == INFINITE)
		rc |= hb_buf_puts(&b, " time=UNLIMITED");
	else if (jd->time_limit != NO_VAL)
		rc |= hb_buf_printf(&b, " time=%" PRIu32, jd->time_limit);
	if (rc) {
		hb_buf_free(&b);
		return HB_ENOMEM;
	}
	rc = b.len + 1 > len ? HB_ETOOBIG : 0;
	cut(&b, len - 1);
	memcpy(buf, b.data, b.len + 1);
	hb_buf_free(&b);
	return rc;
}

/* "old; new" (or "new"), at most HB_COMMENT_MAX bytes, made with a. */
static char *join(const struct hb_slurm_alloc *a, const char *old,
		  const char *add)
{
	struct hb_buf b;
	char *s = NULL;
	int rc = 0;

	hb_buf_init(&b, 2 * HB_COMMENT_MAX + 8);
	if (old && *old) {
		rc |= hb_buf_puts(&b, old);
		rc |= hb_buf_puts(&b, "; ");
	}
	rc |= hb_buf_puts(&b, add);
	if (!rc && b.data) {
		cut(&b, HB_COMMENT_MAX);
		s = a->strdup(b.data);
	}
	hb_buf_free(&b);
	return s;
}

/* Replace *field with v (made by a), freeing the old value. */
static void replace(const struct hb_slurm_alloc *a, char **field, char *v)
{
	a->free((void **)field);
	*field = v;
}

static void clear(const struct hb_slurm_alloc *a, char **field)
{
	if (*field)
		a->free((void **)field);
	*field = NULL;
}

static int apply_slurm(job_desc_msg_t *jd, const struct hb_plugin_decision *d,
		       const struct hb_slurm_alloc *a, struct hb_err *err)
{
	char tag[160];
	char *ac;

	snprintf(tag, sizeof(tag), "hpcbridge:%s target=slurm", d->id);
	ac = join(a, jd->admin_comment,
		  d->admin_comment && *d->admin_comment ? d->admin_comment
							: tag);
	if (!ac)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	replace(a, &jd->admin_comment, ac);
	return 0;
}

static int apply_kubernetes(job_desc_msg_t *jd,
			    const struct hb_plugin_decision *d,
			    const struct hb_slurm_alloc *a, struct hb_err *err)
{
	char sum[600], tag[160], ours[HB_COMMENT_MAX + 1];
	char *part = NULL, *script = NULL, *comment = NULL, *ac = NULL;

	hb_plugin_decision_summary(jd, sum, sizeof(sum));
	snprintf(tag, sizeof(tag), "hpcbridge:%s target=kubernetes", d->id);
	snprintf(ours, sizeof(ours), "%s %s",
		 d->admin_comment && *d->admin_comment ? d->admin_comment : tag,
		 sum);
	part = a->strdup(d->partition);
	script = a->strdup(d->script);
	comment = join(a, NULL, d->comment && *d->comment ? d->comment : tag);
	ac = join(a, jd->admin_comment, ours);
	if (!part || !script || !comment || !ac) {
		a->free((void **)&part);
		a->free((void **)&script);
		a->free((void **)&comment);
		a->free((void **)&ac);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	/* The user's comment follows the proxy's. */
	if (jd->comment && *jd->comment) {
		char *both = join(a, comment, jd->comment);

		if (both)
			replace(a, &comment, both);
	}
	replace(a, &jd->partition, part);
	replace(a, &jd->script, script);
	replace(a, &jd->comment, comment);
	replace(a, &jd->admin_comment, ac);

	/* One node, one task, d->cpus CPUs, d->mem_mb per node. */
	jd->min_nodes = jd->max_nodes = 1;
	jd->num_tasks = 1;
	jd->min_cpus = jd->max_cpus = d->cpus;
	jd->cpus_per_task = NO_VAL16;
	jd->pn_min_cpus = NO_VAL16;
	jd->ntasks_per_node = jd->ntasks_per_socket = NO_VAL16;
	jd->ntasks_per_core = jd->ntasks_per_board = NO_VAL16;
	jd->ntasks_per_tres = NO_VAL16;
	jd->boards_per_node = jd->sockets_per_board = NO_VAL16;
	jd->sockets_per_node = jd->cores_per_socket = NO_VAL16;
	jd->threads_per_core = NO_VAL16;
	jd->core_spec = NO_VAL16;
	jd->pn_min_memory = d->mem_mb;
	jd->pn_min_tmp_disk = NO_VAL;
	jd->shared = NO_VAL16;
	jd->contiguous = 0;
	jd->overcommit = NO_VAL8;
	jd->time_min = NO_VAL;
	if (d->time_limit_min != NO_VAL)
		jd->time_limit = d->time_limit_min;

	/* No GPUs or other TRES, no node, feature or reservation ties. */
	clear(a, &jd->tres_per_job);
	clear(a, &jd->tres_per_node);
	clear(a, &jd->tres_per_socket);
	clear(a, &jd->tres_per_task);
	clear(a, &jd->cpus_per_tres);
	clear(a, &jd->mem_per_tres);
	clear(a, &jd->tres_bind);
	clear(a, &jd->tres_freq);
	clear(a, &jd->features);
	clear(a, &jd->prefer);
	clear(a, &jd->cluster_features);
	clear(a, &jd->batch_features);
	clear(a, &jd->req_nodes);
	clear(a, &jd->exc_nodes);
	clear(a, &jd->reservation);
	clear(a, &jd->licenses);
	clear(a, &jd->burst_buffer);
	return 0;
}

int hb_plugin_decision_apply(job_desc_msg_t *jd,
			     const struct hb_plugin_decision *d,
			     const struct hb_slurm_alloc *a, struct hb_err *err)
{
	if (!jd || !d || !a || !d->id)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "bad arguments");
	if (d->target == HB_PLUGIN_SLURM)
		return apply_slurm(jd, d, a, err);
	if (d->target == HB_PLUGIN_KUBERNETES)
		return apply_kubernetes(jd, d, a, err);
	return hb_err_set(err, HB_EINVAL, NULL, 0, "unknown target");
}
