/*
 * k8s.c - what the MPIJob and TrainJob translators share, and the plan
 * that ties it together: the object name, the escaping against
 * Kubernetes' $(VAR) expansion, the plan's lists and annotations, the
 * order of the plan's steps, the writing of its pieces, and the
 * ConfigMap of the launcher runtime.  The steps are in k8s_shape.c,
 * k8s_image.c, k8s_select.c, k8s_meta.c, k8s_pod.c and k8s_ckpt.c; reading manifests back in
 * k8s_read.c and k8s_restore.c.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/bytes.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/launcher.h"
#include "translators/k8s/k8s_int.h"

/* ---------------------------------------------------------------- */
/* Small helpers                                                    */
/* ---------------------------------------------------------------- */

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

const char *hb_kv_get(const struct hb_kv *kv, uint32_t n, const char *key)
{
	uint32_t i;

	if (!kv || !key)
		return NULL;
	for (i = 0; i < n; i++)
		if (kv[i].key && !strcmp(kv[i].key, key))
			return kv[i].value;
	return NULL;
}

const struct hb_selector_map *hb_selector_get(const struct hb_selector_map *m,
					      uint32_t n, const char *key)
{
	uint32_t i;

	if (!m || !key)
		return NULL;
	for (i = 0; i < n; i++)
		if (m[i].key && !strcmp(m[i].key, key))
			return &m[i];
	return NULL;
}

static unsigned digits_u64(uint64_t v)
{
	unsigned d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/*
 * A jobspec read from a manifest hpcbridge made keeps the original
 * source kind and file name as the directives of their annotations;
 * emitting it again carries them forward.
 */
const char *hb_k8s_provenance(const struct hb_jobspec *spec, const char *key)
{
	char prefix[96];
	size_t pl;
	int n;

	if (spec->source != HB_SRC_MPIJOB && spec->source != HB_SRC_TRAINJOB)
		return NULL;
	n = snprintf(prefix, sizeof(prefix),
		     "metadata.annotations[%s%s]: ", HB_ANNOTATION_PREFIX, key);
	if (n < 0 || (size_t)n >= sizeof(prefix))
		return NULL;
	pl = (size_t)n;
	for (uint32_t i = 0; i < spec->ndirectives; i++) {
		const struct hb_directive *d = &spec->directives[i];

		if (d->kind == HB_DIR_MANIFEST && d->text &&
		    strncmp(d->text, prefix, pl) == 0)
			return d->text + pl;
	}
	return NULL;
}

/* ---------------------------------------------------------------- */
/* Names                                                            */
/* ---------------------------------------------------------------- */

int hb_k8s_name_reserve(const struct hb_jobspec *spec, int64_t array_index,
			size_t reserve, char out[HB_DNS_LABEL_MAX + 1])
{
	const char *src = spec->name, *end;
	char buf[HB_DNS_LABEL_MAX + 1];
	size_t n = 0, budget;
	bool dash = false;

	if (!src) {
		/* The script file's base name, without its extension. */
		const char *slash, *dot;

		src = hb_k8s_provenance(spec, "source-name");
		if (!src)
			src = spec->source_name ? spec->source_name : "";
		slash = strrchr(src, '/');
		if (slash)
			src = slash + 1;
		dot = strrchr(src, '.');
		end = dot ? dot : src + strlen(src);
	} else {
		end = src + strlen(src);
	}

	/* Lowercase; each run outside [a-z0-9] becomes one '-'. */
	for (const char *p = src; p < end && n < HB_DNS_LABEL_MAX; p++) {
		char c = hb_ascii_lower(*p);

		if (is_lower_alnum(c)) {
			if (dash && n > 0)
				buf[n++] = '-';
			dash = false;
			if (n < HB_DNS_LABEL_MAX)
				buf[n++] = c;
		} else {
			dash = true;
		}
	}
	buf[n] = '\0';

	if (n == 0 || (buf[0] >= '0' && buf[0] <= '9')) {
		char tmp[HB_DNS_LABEL_MAX + 1];

		/* Cut to the label's length on purpose. */
		if (snprintf(tmp, sizeof(tmp), "job%s%s", n ? "-" : "", buf) <
		    0)
			return HB_EINVAL;
		memcpy(buf, tmp, sizeof(buf));
		n = strlen(buf);
	}

	if (array_index >= 0)
		reserve += 1 + digits_u64((uint64_t)array_index);
	if (reserve >= HB_DNS_LABEL_MAX)
		return HB_ERANGE;
	budget = HB_DNS_LABEL_MAX - reserve;
	if (n > budget)
		n = budget;
	while (n > 0 && buf[n - 1] == '-')
		n--;
	if (n == 0)
		return HB_ERANGE;
	buf[n] = '\0';
	if (array_index >= 0) {
		/* fits: reserve counted the suffix */
		if (snprintf(out, HB_DNS_LABEL_MAX + 1, "%s-%lld", buf,
			     (long long)array_index) > HB_DNS_LABEL_MAX)
			return HB_ERANGE;
	} else
		memcpy(out, buf, n + 1);
	return 0;
}

int hb_k8s_name(const struct hb_jobspec *spec, int64_t array_index,
		uint32_t nodes, char out[HB_DNS_LABEL_MAX + 1])
{
	uint32_t last = nodes ? nodes - 1 : 0;

	/* "-worker-" and the last worker's index. */
	return hb_k8s_name_reserve(spec, array_index, 8 + digits_u64(last),
				   out);
}

/* ---------------------------------------------------------------- */
/* Escaping for Kubernetes $(VAR) expansion                          */
/* ---------------------------------------------------------------- */

int hb_k8s_escape(const char *s, size_t n, struct hb_buf *out)
{
	const char *p = s, *end = s + n;
	char *o;
	int rc;

	/* Room for the worst case (every byte a '$'), then one pass that
	 * copies sixteen bytes at a time and doubles each '$'. */
	if (n > (SIZE_MAX - 16) / 2)
		return HB_ETOOBIG;
	if ((rc = hb_buf_reserve(out, 2 * n + 16)))
		return rc;
	o = out->data + out->len;
	while (end - p >= 16) {
		unsigned m = hb_v16_mask(hb_v16_eq(hb_v16_load(p), '$'));
		size_t k;

		memcpy(o, p, 16); /* 16 bytes to spare */
		if (!m) {
			o += 16;
			p += 16;
			continue;
		}
		k = hb_v16_first(m) + 1; /* to just past the first '$' */
		o += k;
		p += k;
		*o++ = '$';
	}
	for (; p < end; p++) {
		*o++ = *p;
		if (*p == '$')
			*o++ = '$';
	}
	out->len = (size_t)(o - out->data);
	out->data[out->len] = '\0';
	return 0;
}

int hb_k8s_unescape(const char *s, size_t n, struct hb_buf *out)
{
	const char *p = s, *end = s + n;
	int rc;

	while (p < end) {
		const char *d = memchr(p, '$', (size_t)(end - p));

		if (!d)
			return hb_buf_append(out, p, (size_t)(end - p));
		if ((rc = hb_buf_append(out, p, (size_t)(d - p + 1))))
			return rc;
		p = d + 1;
		if (p < end && *p == '$')
			p++;
	}
	if (!out->data)
		return hb_buf_append(out, "", 0);
	return 0;
}

/* ---------------------------------------------------------------- */
/* The emit plan                                                    */
/* ---------------------------------------------------------------- */

/* "<base>.<leaf>" into c->path, for fate targets. */
const char *hb_k8s_at(struct hb_k8s_ctx *c, const char *base, const char *leaf)
{
	/* (no printf: every job's fates come here); cut to fit, as
	 * snprintf() would */
	size_t cap = sizeof(c->path) - 1, n = strlen(base), k;

	if (n > cap)
		n = cap;
	memcpy(c->path, base, n);
	if (leaf && n < cap) {
		c->path[n++] = '.';
		k = strlen(leaf);
		if (k > cap - n)
			k = cap - n;
		memcpy(c->path + n, leaf, k);
		n += k;
	}
	c->path[n] = '\0';
	return c->path;
}

/* Append key (a string the plan may keep) with a copy of value to kv. */
int hb_k8s_kv_push(struct hb_k8s_plan *plan, struct hb_k8s_kvs *kv,
		   const char *key, const char *value)
{
	if (kv->n == kv->cap) {
		uint32_t cap = kv->cap ? kv->cap * 2 : 16;
		struct hb_k8s_kv *v =
			hb_arena_alloc(&plan->arena, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		if (kv->n)
			memcpy(v, kv->v, kv->n * sizeof(*v));
		kv->v = v;
		kv->cap = cap;
	}
	kv->v[kv->n].key = key;
	kv->v[kv->n].value = hb_arena_strdup(&plan->arena, value);
	if (!kv->v[kv->n].value)
		return HB_ENOMEM;
	kv->n++;
	return 0;
}

/* Set key to a copy of value in kv; a key set before moves to the end
 * with its new value. */
int hb_k8s_kv_set(struct hb_k8s_plan *plan, struct hb_k8s_kvs *kv,
		  const char *key, const char *value)
{
	for (uint32_t i = 0; i < kv->n; i++) {
		if (strcmp(kv->v[i].key, key))
			continue;
		memmove(&kv->v[i], &kv->v[i + 1],
			(kv->n - i - 1) * sizeof(kv->v[0]));
		kv->n--;
		break;
	}
	return hb_k8s_kv_push(plan, kv, key, value);
}

int hb_k8s_annotate(struct hb_k8s_plan *plan, const char *key,
		    const char *value)
{
	return hb_k8s_kv_set(plan, &plan->annotations, key, value);
}

int hb_k8s_ann_put(struct hb_k8s_ctx *c, const char *key, const char *value)
{
	return hb_k8s_annotate(c->plan, key, value) ? OOM(c) : 0;
}

bool hb_k8s_is_set(const struct hb_jobspec *s, enum hb_field f)
{
	if (hb_jobspec_has(s, f))
		return true;
	switch (f) {
	case HB_F_NAME:
		return s->name;
	case HB_F_USER:
		return s->user;
	case HB_F_ACCOUNT:
		return s->account;
	case HB_F_PARTITION:
		return s->partition;
	case HB_F_QOS:
		return s->qos;
	case HB_F_COMMENT:
		return s->comment;
	case HB_F_NODES:
		return s->nodes_min || s->nodes_max;
	case HB_F_NTASKS:
		return s->ntasks;
	case HB_F_NTASKS_PER_NODE:
		return s->ntasks_per_node;
	case HB_F_CPUS_PER_TASK:
		return s->cpus_per_task;
	case HB_F_MEM:
		return s->mem_kind != HB_MEM_NONE;
	case HB_F_GPUS:
		return s->gpu_scope != HB_GPU_NONE || s->gpu_type;
	case HB_F_LICENSES:
		return s->licenses;
	case HB_F_EXCLUSIVE:
		return s->exclusive;
	case HB_F_CONSTRAINT:
		return s->constraint;
	case HB_F_NODELIST:
		return s->nodelist;
	case HB_F_EXCLUDE:
		return s->exclude;
	case HB_F_TIME_LIMIT:
		return s->time_limit;
	case HB_F_TIME_MIN:
		return s->time_min;
	case HB_F_BEGIN:
		return s->begin;
	case HB_F_DEADLINE:
		return s->deadline;
	case HB_F_SIGNAL:
		return s->signal;
	case HB_F_OUTPUT:
		return s->output;
	case HB_F_ERROR:
		return s->error || s->join_output;
	case HB_F_INPUT:
		return s->input;
	case HB_F_CHDIR:
		return s->chdir;
	case HB_F_ARRAY:
		return s->array || s->narray_ranges;
	case HB_F_DEPENDENCY:
		return s->dependency;
	case HB_F_MAIL_TYPE:
		return s->mail_type;
	case HB_F_MAIL_USER:
		return s->mail_user;
	case HB_F_REQUEUE:
		return s->requeue >= 0;
	case HB_F_EXPORT:
		return s->export_spec || s->export_all;
	case HB_F_ENV:
		return s->nenv;
	case HB_F_MPI:
		return s->mpi || s->nmpi_lines;
	case HB_F_CONTAINER:
		return s->container || s->nmodules;
	case HB_F_CHECKPOINT:
		return s->checkpoint_dir;
	case HB_F_DATA:
		return s->ndata;
	case HB_F_SCRIPT:
		return s->script;
	case HB_F_KEEP:
		return s->keep;
	case HB_F_HETEROGENEOUS:
		return s->nchunks;
	case HB_F_FABRIC:
		return s->fabric;
	case HB__F_COUNT:
		break;
	}
	return false;
}

void hb_k8s_plan_free(struct hb_k8s_plan *plan)
{
	cJSON_Delete(plan->affinity);
	hb_buf_free(&plan->script);
	hb_arena_free(&plan->arena);
	memset(plan, 0, sizeof(*plan));
}

/* ---------------------------------------------------------------- */
/* Writing the plan's pieces                                        */
/* ---------------------------------------------------------------- */

void hb_k8s_write_kvs(struct hb_emit *w, const char *key,
		      const struct hb_k8s_kvs *kv)
{
	hb_emit_obj(w, key);
	for (uint32_t i = 0; i < kv->n; i++)
		hb_emit_str(w, kv->v[i].key, kv->v[i].value);
	hb_emit_end(w);
}

void hb_k8s_write_metadata(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	hb_emit_obj(w, "metadata");
	hb_emit_str(w, "name", plan->name);
	if (plan->namespace)
		hb_emit_str(w, "namespace", plan->namespace);
	hb_k8s_write_kvs(w, "labels", &plan->labels);
	hb_k8s_write_kvs(w, "annotations", &plan->annotations);
	hb_emit_end(w);
}

static void quantities(struct hb_emit *w, const char *key,
		       const struct hb_k8s_res *r)
{
	hb_emit_obj(w, key);
	if (*r->cpu)
		hb_emit_str(w, "cpu", r->cpu);
	if (*r->mem)
		hb_emit_str(w, "memory", r->mem);
	if (*r->gpu)
		hb_emit_str(w, r->gpu_key, r->gpu);
	if (r->rdma_key)
		hb_emit_str(w, r->rdma_key, r->rdma);
	hb_emit_end(w);
}

void hb_k8s_write_resources(struct hb_emit *w, const char *key,
			    const struct hb_k8s_res *r)
{
	if (!r->set)
		return;
	hb_emit_obj(w, key);
	quantities(w, "requests", r);
	quantities(w, "limits", r);
	if (r->claim) {
		hb_emit_arr(w, "claims");
		hb_emit_obj(w, NULL);
		hb_emit_str(w, "name", r->claim);
		hb_emit_end(w);
		hb_emit_end(w);
	}
	hb_emit_end(w);
}

void hb_k8s_write_env(struct hb_emit *w, const struct hb_k8s_plan *plan,
		      const struct hb_k8s_kv *extra, bool ckpt)
{
	ckpt = ckpt && plan->ckpt_url;
	if (!plan->env.n && !extra && !ckpt)
		return;
	hb_emit_arr(w, "env");
	for (uint32_t i = 0; i <= plan->env.n; i++) {
		const struct hb_k8s_kv *kv =
		    i < plan->env.n ? &plan->env.v[i] : extra;

		if (!kv)
			break;
		hb_emit_obj(w, NULL);
		hb_emit_str(w, "name", kv->key);
		hb_emit_str(w, "value", kv->value);
		hb_emit_end(w);
	}
	if (ckpt)
		hb_k8s_write_ckpt_s3_env(w, plan, false);
	hb_emit_end(w);
}

void hb_k8s_write_pod_meta(struct hb_emit *w, const struct hb_k8s_plan *plan,
			   const char *role)
{
	hb_emit_obj(w, "labels");
	hb_emit_str(w, HB_LABEL_MANAGED_BY, HB_MANAGED_BY);
	hb_emit_str(w, HB_LABEL_JOB, plan->name);
	hb_emit_str(w, HB_LABEL_ROLE, role);
	hb_emit_end(w);
	/* OpenShift (4.14 and later) admits the pod with this SCC or not
	 * at all, rather than the first one that fits */
	if (plan->scc) {
		hb_emit_obj(w, "annotations");
		hb_emit_str(w, "openshift.io/required-scc", plan->scc);
		hb_emit_end(w);
	}
}

void hb_k8s_write_placement(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	if (plan->has_node_selector)
		hb_k8s_write_kvs(w, "nodeSelector", &plan->node_selector);
	if (plan->affinity)
		hb_emit_tree(w, "affinity", plan->affinity);
}

void hb_k8s_write_script(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	hb_emit_strn(w, NULL, plan->script.data ? plan->script.data : "",
		     plan->script.len);
}

int hb_k8s_plan(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		int64_t array_index, size_t name_reserve,
		const struct hb_k8s_paths *paths, struct hb_k8s_plan *plan,
		struct hb_report *rep, struct hb_err *err)
{
	struct hb_k8s_ctx c = {.spec = spec,
			       .cfg = cfg,
			       .paths = paths,
			       .plan = plan,
			       .rep = rep,
			       .err = err};
	int rc;

	memset(plan, 0, sizeof(*plan));
	hb_arena_init(&plan->arena, 0);
	hb_buf_init(&plan->script, 0);
	plan->array_index = array_index < 0 ? -1 : array_index;
	/* Only an MPIJob's launcher pod has a volume to mount it into. */
	plan->runtime_mounted = !strcmp(paths->kind, "MPIJob") &&
				cfg->launcher_runtime &&
				!strcmp(cfg->launcher_runtime, "configmap");
	if (!spec->script) {
		rc = hb_err_set(err, HB_EINVAL, spec->source_name, 0,
				"the job has no script to run");
		goto fail;
	}
	if ((rc = hb_k8s_plan_identity(&c)) ||
	    (rc = hb_k8s_check_array(&c, array_index)))
		goto fail;
	if (hb_jobspec_shape(spec, &plan->shape)) {
		rc = hb_err_set(err, HB_ERANGE, spec->source_name, 0,
				"the resource request overflows (nodes x "
				"tasks x CPUs, GPUs or memory)");
		goto fail;
	}
	if ((rc = hb_k8s_check_shape(&c)))
		goto fail;
	rc = name_reserve ? hb_k8s_name_reserve(spec, plan->array_index,
						name_reserve, plan->name)
			  : hb_k8s_name(spec, plan->array_index,
					plan->shape.nodes, plan->name);
	if (rc) {
		rc = hb_err_set(err, rc, spec->source_name, 0,
				"no room for a Kubernetes name");
		goto fail;
	}
	if ((rc = hb_k8s_plan_metadata(&c)) ||
	    (rc = hb_k8s_plan_resources(&c)) || (rc = hb_k8s_plan_image(&c)) ||
	    (rc = hb_k8s_plan_env(&c)) || (rc = hb_k8s_plan_constraint(&c)) ||
	    (rc = hb_k8s_plan_gpu_type(&c)) ||
	    (rc = hb_k8s_plan_exclusive(&c, paths->role)) ||
	    (rc = hb_k8s_plan_time_limit(&c)) || (rc = hb_k8s_plan_array(&c)) ||
	    (rc = hb_k8s_plan_carried(&c)) || (rc = hb_k8s_plan_volumes(&c)) ||
	    (rc = hb_k8s_plan_ckpt(&c)) || (rc = hb_k8s_plan_fabric(&c)) ||
	    (rc = hb_k8s_plan_script(&c)))
		goto fail;
	if ((rc = hb_k8s_annotation_budget(&c)))
		goto fail;
	return 0;
fail:
	hb_k8s_plan_free(plan);
	if (err && !err->code)
		hb_err_set(err, rc, spec->source_name, 0, "%s",
			   hb_strerror(rc));
	return rc;
}

int hb_k8s_runtime_configmap(const struct hb_k8s_opts *cfg, cJSON **out,
			     struct hb_err *err)
{
	const char *rt = hb_launcher_runtime(NULL);
	cJSON *cm = cJSON_CreateObject(), *md, *labels, *data;

	*out = NULL;
	if (!cm || !cJSON_AddStringToObject(cm, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(cm, "kind", "ConfigMap") ||
	    !(md = cJSON_AddObjectToObject(cm, "metadata")) ||
	    !cJSON_AddStringToObject(md, "name", hb_launcher_runtime_name()) ||
	    (cfg->namespace &&
	     !cJSON_AddStringToObject(md, "namespace", cfg->namespace)) ||
	    !(labels = cJSON_AddObjectToObject(md, "labels")) ||
	    !cJSON_AddStringToObject(labels, HB_LABEL_MANAGED_BY,
				     HB_MANAGED_BY) ||
	    !(data = cJSON_AddObjectToObject(cm, "data")) ||
	    !cJSON_AddItemToObject(data, HB_LAUNCHER_RUNTIME_KEY,
				   cJSON_CreateString(rt)) ||
	    !cJSON_AddTrueToObject(cm, "immutable")) {
		cJSON_Delete(cm);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	*out = cm;
	return 0;
}
