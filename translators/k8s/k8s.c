/*
 * k8s.c - what the MPIJob and TrainJob translators share: the object name,
 * labels and the hpcbridge.io/ annotation carry-over, per-node resources
 * and the worker-shape check, the image, env, node selectors, the
 * launcher script, and the reading of manifests back into a jobspec.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/bytes.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/launcher.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/units.h"

#define ANN(k) HB_ANNOTATION_PREFIX k

/* Largest time limit written as activeDeadlineSeconds (about 31700
 * years; Slurm's own limit is far below). */
#define DEADLINE_MAX 1000000000000ULL
/* Largest memory per node (MiB) written as a quantity: 2^63 bytes. */
#define MEM_MAX_MB (1ULL << 43)

/* ---------------------------------------------------------------- */
/* Small helpers                                                    */
/* ---------------------------------------------------------------- */

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static char lower(char c)
{
	return (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
}

static const char *kv_get(const struct hb_kv *kv, uint32_t n, const char *key)
{
	if (!key)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		if (kv[i].key && strcmp(kv[i].key, key) == 0)
			return kv[i].value;
	return NULL;
}

static const struct hb_selector_map *sel_get(const struct hb_selector_map *m,
					     uint32_t n, const char *key,
					     size_t klen)
{
	for (uint32_t i = 0; i < n; i++)
		if (m[i].key && strlen(m[i].key) == klen &&
		    memcmp(m[i].key, key, klen) == 0)
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

/* A label value: [A-Za-z0-9] at both ends, [-_.A-Za-z0-9] inside, at
 * most 63 characters; other characters become '_'.  False if empty. */
/* v in decimal into out (at least 11 bytes). */
static void put_u32(char *out, uint32_t v)
{
	char t[10];
	size_t i = sizeof(t);

	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(out, t + i, sizeof(t) - i);
	out[sizeof(t) - i] = '\0';
}

static bool label_value(const char *s, char out[HB_DNS_LABEL_MAX + 1])
{
	size_t n = 0;

	for (; s && *s && n < HB_DNS_LABEL_MAX; s++) {
		char c = *s;

		if (!is_alnum(c) && c != '-' && c != '.' && c != '_')
			c = '_';
		if (n == 0 && !is_alnum(c))
			continue;
		out[n++] = c;
	}
	while (n && !is_alnum(out[n - 1]))
		n--;
	out[n] = '\0';
	return n > 0;
}

static bool valid_label_value(const char *s)
{
	char tmp[HB_DNS_LABEL_MAX + 1];

	return s && label_value(s, tmp) && strcmp(tmp, s) == 0;
}

/*
 * The directive that set field f (its text), for error messages; the
 * field's name when no directive did.
 */
static const char *field_text(const struct hb_jobspec *spec, enum hb_field f)
{
	for (uint32_t i = spec->ndirectives; i-- > 0;) {
		const struct hb_directive *d = &spec->directives[i];

		if (d->origin.kind != spec->origin[f].kind ||
		    d->origin.line != spec->origin[f].line)
			continue;
		for (uint8_t k = 0; k < d->nfields; k++)
			if (d->fields[k] == f && d->text)
				return d->text;
	}
	return hb_field_name(f);
}

static int field_err(const struct hb_jobspec *spec, struct hb_err *err,
		     int code, enum hb_field f, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int field_err(const struct hb_jobspec *spec, struct hb_err *err,
		     int code, enum hb_field f, const char *fmt, ...)
{
	char msg[384];
	unsigned line = 0;
	va_list ap;

	if (spec->origin[f].kind == HB_ORIGIN_FILE ||
	    spec->origin[f].kind == HB_ORIGIN_MANIFEST)
		line = spec->origin[f].line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(err, code, spec->source_name, line, "%s: %s",
			  field_text(spec, f), msg);
}

/*
 * A jobspec read from a manifest hpcbridge made keeps the original
 * source kind and file name as the directives of their annotations;
 * emitting it again carries them forward.
 */
static const char *provenance(const struct hb_jobspec *spec, const char *key)
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

		src = provenance(spec, "source-name");
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
		char c = lower(*p);

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

struct ctx {
	const struct hb_jobspec *spec;
	const struct hb_config *cfg;
	const struct hb_k8s_paths *paths;
	struct hb_k8s_plan *plan;
	struct hb_report *rep;
	struct hb_err *err;
	char path[256];
};

#define OOM(c) hb_err_set((c)->err, HB_ENOMEM, NULL, 0, "out of memory")

/* "<base>.<leaf>" into c->path, for fate targets. */
static const char *at(struct ctx *c, const char *base, const char *leaf)
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
static int kv_push(struct hb_k8s_plan *plan, struct hb_k8s_kvs *kv,
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
static int kv_set(struct hb_k8s_plan *plan, struct hb_k8s_kvs *kv,
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
	return kv_push(plan, kv, key, value);
}

static const char *kv_find(const struct hb_k8s_kvs *kv, const char *key)
{
	for (uint32_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->v[i].key, key))
			return kv->v[i].value;
	return NULL;
}

int hb_k8s_annotate(struct hb_k8s_plan *plan, const char *key,
		    const char *value)
{
	return kv_set(plan, &plan->annotations, key, value);
}

/* Annotation hpcbridge.io/<k> (k a string literal). */
#define annotate(c, k, v) ann_put((c), ANN(k), (v))

static int ann_put(struct ctx *c, const char *key, const char *value)
{
	return hb_k8s_annotate(c->plan, key, value) ? OOM(c) : 0;
}

/* Field f has no Kubernetes equivalent: keep value in an annotation
 * (hpcbridge.io/<k>, k a string literal). */
#define carry(c, f, k, value, why)                                             \
	carry_((c), (f), ANN(k), "metadata.annotations[" ANN(k) "]", (value),  \
	       (why))

static int carry_(struct ctx *c, enum hb_field f, const char *key,
		  const char *target, const char *value, const char *why)
{
	int rc;

	if (!value)
		return 0;
	if ((rc = ann_put(c, key, value)))
		return rc;
	hb_report_fate(c->rep, f, HB_FATE_CARRIED, target,
		       "%s%sno Kubernetes equivalent; kept in annotation %s",
		       why ? why : "", why ? "; " : "", key);
	return 0;
}

static bool is_set(const struct hb_jobspec *s, enum hb_field f)
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
	case HB__F_COUNT:
		break;
	}
	return false;
}

static const char *const mem_kind_names[] = {
    [HB_MEM_NONE] = "none",	  [HB_MEM_PER_NODE] = "per-node",
    [HB_MEM_PER_CPU] = "per-cpu", [HB_MEM_PER_GPU] = "per-gpu",
    [HB_MEM_JOB] = "job",	  [HB_MEM_PER_PROCESS] = "per-process",
};

static const char *const gpu_scope_names[] = {
    [HB_GPU_NONE] = "none",
    [HB_GPU_PER_JOB] = "per-job",
    [HB_GPU_PER_NODE] = "per-node",
    [HB_GPU_PER_TASK] = "per-task",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The array check: which element this is, and the cap on elements. */
static int check_array(struct ctx *c, int64_t index)
{
	const struct hb_jobspec *s = c->spec;
	uint64_t count = hb_jobspec_array_count(s);
	uint32_t max = c->cfg->max_array_jobs;
	bool member = false;

	if (index < 0)
		return 0;
	if (index > UINT32_MAX)
		return hb_err_set(c->err, HB_ERANGE, s->source_name, 0,
				  "array index %lld is out of range",
				  (long long)index);
	if (!s->narray_ranges)
		return field_err(s, c->err, HB_EINVAL, HB_F_ARRAY,
				 "array index %lld given for a job that is "
				 "not an array",
				 (long long)index);
	if (max && count > max)
		return field_err(s, c->err, HB_ETOOBIG, HB_F_ARRAY,
				 "%llu array elements; at most %u are "
				 "translated (max_array_jobs)",
				 (unsigned long long)count, max);
	for (uint32_t i = 0; i < s->narray_ranges; i++) {
		const struct hb_range *r = &s->array_ranges[i];

		if (r->step && (uint64_t)index >= r->start &&
		    (uint64_t)index <= r->end &&
		    ((uint64_t)index - r->start) % r->step == 0)
			member = true;
	}
	if (!member)
		return field_err(s, c->err, HB_EINVAL, HB_F_ARRAY,
				 "%lld is not an index of this array",
				 (long long)index);
	return 0;
}

/* The worker pod must fit the configured worker shape. */
static int check_shape(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_shape *sh = &c->plan->shape;
	const struct hb_config *cfg = c->cfg;

	if (cfg->worker_cpus && sh->cpus_per_node > cfg->worker_cpus) {
		enum hb_field f = s->cpus_per_task > 1 ? HB_F_CPUS_PER_TASK
				  : s->ntasks_per_node ? HB_F_NTASKS_PER_NODE
						       : HB_F_NTASKS;

		return field_err(s, c->err, HB_EINVAL, f,
				 "needs %u CPUs per worker (%u tasks per "
				 "node x %u CPUs per task), more than the "
				 "worker shape's %u (kubernetes.worker.cpus)",
				 sh->cpus_per_node, sh->tasks_per_node,
				 sh->cpus_per_task, cfg->worker_cpus);
	}
	if (cfg->worker_mem_mb && sh->mem_per_node_mb > cfg->worker_mem_mb) {
		char a[32], b[32];

		hb_format_k8s_mem(sh->mem_per_node_mb, a);
		hb_format_k8s_mem(cfg->worker_mem_mb, b);
		return field_err(s, c->err, HB_EINVAL, HB_F_MEM,
				 "needs %s memory per worker (%llu MiB), "
				 "more than the worker shape's %s (%llu MiB, "
				 "kubernetes.worker.memory)",
				 a, (unsigned long long)sh->mem_per_node_mb, b,
				 (unsigned long long)cfg->worker_mem_mb);
	}
	if (cfg->worker_gpus && sh->gpus_per_node > cfg->worker_gpus)
		return field_err(s, c->err, HB_EINVAL, HB_F_GPUS,
				 "needs %u GPUs per worker, more than the "
				 "worker shape's %u (kubernetes.worker.gpus)",
				 sh->gpus_per_node, cfg->worker_gpus);
	if (sh->mem_per_node_mb > MEM_MAX_MB)
		return field_err(s, c->err, HB_ERANGE, HB_F_MEM,
				 "%llu MiB per node is too large",
				 (unsigned long long)sh->mem_per_node_mb);
	return 0;
}

/* "nodes=2 ntasks=8 mem=per-cpu:2048 ..." as given, for the reverse. */
/* Text pieces into a fixed buffer, without printf (every job comes
 * here); the caller sizes the buffer for the worst case. */
static size_t put_text(char *o, const char *s)
{
	size_t n = strlen(s);

	memcpy(o, s, n);
	return n;
}

static size_t put_dec(char *o, uint64_t v)
{
	char t[20];
	size_t i = sizeof(t);

	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(o, t + i, sizeof(t) - i);
	return sizeof(t) - i;
}

/* "nodes=2 ntasks=8 mem=per-cpu:2048 ..." as given, for the reverse. */
static int request_annotation(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	char buf[256]; /* the longest: about 160 */
	size_t n = 0;

	if (s->nodes_min || s->nodes_max) {
		n += put_text(buf + n, "nodes=");
		n += put_dec(buf + n, s->nodes_min);
		if (s->nodes_max) {
			buf[n++] = '-';
			n += put_dec(buf + n, s->nodes_max);
		}
		buf[n++] = ' ';
	}
	if (s->ntasks) {
		n += put_text(buf + n, "ntasks=");
		n += put_dec(buf + n, s->ntasks);
		buf[n++] = ' ';
	}
	if (s->ntasks_per_node) {
		n += put_text(buf + n, "ntasks-per-node=");
		n += put_dec(buf + n, s->ntasks_per_node);
		buf[n++] = ' ';
	}
	if (s->cpus_per_task) {
		n += put_text(buf + n, "cpus-per-task=");
		n += put_dec(buf + n, s->cpus_per_task);
		buf[n++] = ' ';
	}
	if (s->mem_kind != HB_MEM_NONE && s->mem_kind < NELEM(mem_kind_names)) {
		n += put_text(buf + n, "mem=");
		n += put_text(buf + n, mem_kind_names[s->mem_kind]);
		buf[n++] = ':';
		n += put_dec(buf + n, s->mem_mb);
		buf[n++] = ' ';
	}
	if (s->gpu_scope != HB_GPU_NONE &&
	    s->gpu_scope < NELEM(gpu_scope_names)) {
		n += put_text(buf + n, "gpus=");
		n += put_text(buf + n, gpu_scope_names[s->gpu_scope]);
		buf[n++] = ':';
		n += put_dec(buf + n, s->gpus);
		buf[n++] = ' ';
	}
	if (n)
		n--;
	buf[n] = '\0';
	return annotate(c, "request", buf);
}

/* Worker resources, requests = limits, and the fates of the shape. */
static int resources(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_shape *sh = &c->plan->shape;
	const struct hb_config *cfg = c->cfg;
	const struct hb_k8s_paths *p = c->paths;
	const char *gres =
	    cfg->gpu_resource ? cfg->gpu_resource : "nvidia.com/gpu";
	struct hb_k8s_res *r = &c->plan->resources;
	const char *mem = r->mem;
	uint64_t mem_mb = sh->mem_per_node_mb;

	r->set = true;
	put_u32(r->cpu, sh->cpus_per_node);
	if (sh->whole_node_mem && cfg->worker_mem_mb)
		mem_mb = cfg->worker_mem_mb;
	if (mem_mb)
		hb_format_k8s_mem(mem_mb, r->mem);
	if (sh->gpus_per_node) {
		put_u32(r->gpu, sh->gpus_per_node);
		r->gpu_key = gres;
	}

	/* Fates. */
	if (is_set(s, HB_F_NODES)) {
		if (s->nodes_max && s->nodes_max != sh->nodes)
			hb_report_fate(c->rep, HB_F_NODES, HB_FATE_PARTIAL,
				       p->nodes,
				       "a fixed worker count: the minimum %u "
				       "of %u-%u; the range is kept in "
				       "annotation " ANN("request"),
				       sh->nodes, s->nodes_min, s->nodes_max);
		else
			hb_report_fate(c->rep, HB_F_NODES, HB_FATE_MAPPED,
				       p->nodes, "%u", sh->nodes);
	}
	if (is_set(s, HB_F_NTASKS_PER_NODE))
		hb_report_fate(c->rep, HB_F_NTASKS_PER_NODE, HB_FATE_MAPPED,
			       p->slots, "%u", sh->tasks_per_node);
	if (is_set(s, HB_F_NTASKS)) {
		uint64_t slots = (uint64_t)sh->nodes * sh->tasks_per_node;

		if (slots == sh->ntasks)
			hb_report_fate(c->rep, HB_F_NTASKS, HB_FATE_MAPPED,
				       p->slots, "%u workers x %u slots",
				       sh->nodes, sh->tasks_per_node);
		else
			hb_report_fate(
			    c->rep, HB_F_NTASKS, HB_FATE_PARTIAL, p->slots,
			    "%u tasks do not fill %u workers x %u "
			    "slots evenly: the hostfile offers %llu "
			    "slots; the task count is kept in "
			    "annotation " ANN("request"),
			    sh->ntasks, sh->nodes, sh->tasks_per_node,
			    (unsigned long long)slots);
	}
	if (is_set(s, HB_F_CPUS_PER_TASK))
		hb_report_fate(c->rep, HB_F_CPUS_PER_TASK, HB_FATE_MAPPED,
			       at(c, p->resources, "limits.cpu"),
			       "%u CPUs per worker = %u tasks x %u CPUs",
			       sh->cpus_per_node, sh->tasks_per_node,
			       sh->cpus_per_task);
	if (is_set(s, HB_F_MEM)) {
		const char *t = at(c, p->resources, "limits.memory");
		unsigned long long v = (unsigned long long)s->mem_mb;

		if (sh->whole_node_mem && cfg->worker_mem_mb)
			hb_report_fate(c->rep, HB_F_MEM, HB_FATE_PARTIAL, t,
				       "the whole node's memory: the worker "
				       "shape's %s (kubernetes.worker.memory)",
				       mem);
		else if (sh->whole_node_mem)
			hb_report_fate(
			    c->rep, HB_F_MEM, HB_FATE_PARTIAL, NULL,
			    "the whole node's memory has no "
			    "Kubernetes equivalent and no "
			    "kubernetes.worker.memory is set: memory "
			    "left unset; kept in annotation " ANN("request"));
		else if (!mem_mb)
			hb_report_fate(
			    c->rep, HB_F_MEM, HB_FATE_PARTIAL, NULL,
			    "%llu MiB %s comes to no memory per "
			    "node (nothing to multiply by): memory "
			    "left unset; kept in annotation " ANN("request"),
			    v, mem_kind_names[s->mem_kind]);
		else if (s->mem_kind == HB_MEM_PER_CPU)
			hb_report_fate(c->rep, HB_F_MEM, HB_FATE_MAPPED, t,
				       "%s = %llu MiB per CPU x %u CPUs", mem,
				       v, sh->cpus_per_node);
		else if (s->mem_kind == HB_MEM_PER_GPU)
			hb_report_fate(c->rep, HB_F_MEM, HB_FATE_MAPPED, t,
				       "%s = %llu MiB per GPU x %u GPUs", mem,
				       v, sh->gpus_per_node);
		else if (s->mem_kind == HB_MEM_JOB)
			hb_report_fate(c->rep, HB_F_MEM,
				       s->mem_mb % sh->nodes ? HB_FATE_PARTIAL
							     : HB_FATE_MAPPED,
				       t, "%s = job-wide %llu MiB / %u nodes%s",
				       mem, v, sh->nodes,
				       s->mem_mb % sh->nodes ? ", rounded up"
							     : "");
		else if (s->mem_kind == HB_MEM_PER_PROCESS)
			hb_report_fate(c->rep, HB_F_MEM, HB_FATE_MAPPED, t,
				       "%s = %llu MiB per process x %u "
				       "processes per node",
				       mem, v, sh->tasks_per_node);
		else
			hb_report_fate(c->rep, HB_F_MEM, HB_FATE_MAPPED, t,
				       "%s per node", mem);
	}
	if (is_set(s, HB_F_GPUS) && s->gpu_scope != HB_GPU_NONE) {
		char t[160];

		snprintf(t, sizeof(t), "%s.limits[%s]", p->resources, gres);
		if (!sh->gpus_per_node)
			hb_report_fate(c->rep, HB_F_GPUS, HB_FATE_MAPPED, NULL,
				       "no GPUs");
		else if (s->gpu_scope == HB_GPU_PER_JOB && s->gpus % sh->nodes)
			hb_report_fate(c->rep, HB_F_GPUS, HB_FATE_PARTIAL, t,
				       "%u GPUs per job over %u workers: %u "
				       "per worker, %llu in all; the request "
				       "is kept in annotation " ANN("request"),
				       s->gpus, sh->nodes, sh->gpus_per_node,
				       (unsigned long long)sh->gpus_per_node *
					   sh->nodes);
		else if (s->gpu_scope == HB_GPU_PER_TASK)
			hb_report_fate(c->rep, HB_F_GPUS, HB_FATE_MAPPED, t,
				       "%u = %u per task x %u tasks per node",
				       sh->gpus_per_node, s->gpus,
				       sh->tasks_per_node);
		else
			hb_report_fate(c->rep, HB_F_GPUS, HB_FATE_MAPPED, t,
				       "%u per worker", sh->gpus_per_node);
	}

	/* The launcher pod's own small request. */
	if (cfg->launcher_cpus || cfg->launcher_mem_mb) {
		struct hb_k8s_res *lr = &c->plan->launcher_resources;

		lr->set = true;
		if (cfg->launcher_cpus)
			put_u32(lr->cpu, cfg->launcher_cpus);
		if (cfg->launcher_mem_mb)
			hb_format_k8s_mem(cfg->launcher_mem_mb, lr->mem);
	}
	return request_annotation(c);
}

static bool looks_like_image(const char *s)
{
	size_t n = 0;

	if (!s || !*s || *s == '/' || *s == '.' || *s == '~' || *s == '-')
		return false;
	for (; s[n]; n++) {
		char ch = s[n];

		if (!is_alnum(ch) && !strchr("._/:@-", ch))
			return false;
	}
	return n <= 500;
}

/* The image: --container map, the container as an image reference, the
 * first mapped module, the partition, the default. */
static int image(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_config *cfg = c->cfg;
	const char *img = NULL, *how = NULL, *cont_note = NULL;
	char why[256];

	why[0] = '\0';
	if (s->container) {
		img = kv_get(cfg->container_images, cfg->ncontainer_images,
			     s->container);
		if (img) {
			how = "container";
		} else if (looks_like_image(s->container)) {
			img = s->container;
			how = "container-as-image";
		} else {
			cont_note = "is not an image reference and has no "
				    "container_images entry";
		}
	}
	for (uint32_t i = 0; !img && i < s->nmodules; i++) {
		const char *m = s->modules[i], *sl = strchr(m, '/');

		img = kv_get(cfg->module_images, cfg->nmodule_images, m);
		if (!img && sl) {
			char base[128];
			size_t bl = (size_t)(sl - m);

			if (bl < sizeof(base)) {
				memcpy(base, m, bl);
				base[bl] = '\0';
				img = kv_get(cfg->module_images,
					     cfg->nmodule_images, base);
			}
		}
		if (img) {
			snprintf(why, sizeof(why), "module %s -> %s", m, img);
			how = "module";
		}
	}
	if (!img && s->partition) {
		img = kv_get(cfg->partition_images, cfg->npartition_images,
			     s->partition);
		if (img) {
			snprintf(why, sizeof(why), "partition %s -> %s",
				 s->partition, img);
			how = "partition";
		}
	}
	if (!img) {
		/* The job's MPI implementation, else the configured one. */
		const char *m = hb_mpi_impl_name((enum hb_mpi_impl)s->mpi);

		if (!m)
			m = cfg->default_mpi ? cfg->default_mpi : "OpenMPI";
		img = !strcmp(m, "Intel")   ? cfg->intel_image
		      : !strcmp(m, "MPICH") ? cfg->mpich_image
					    : cfg->openmpi_image;
		if (img) {
			snprintf(why, sizeof(why), "the %s image %s", m, img);
			how = "mpi";
		}
	}
	if (!img && cfg->default_image) {
		img = cfg->default_image;
		how = "default";
		snprintf(why, sizeof(why), "the default image %s", img);
	}
	if (!img)
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "no image for this job: map its --container, "
				  "a module it loads or its partition to an "
				  "image, or set default_image in the "
				  "configuration");
	if (!looks_like_image(img))
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "image '%.200s' is not a valid image "
				  "reference",
				  img);
	c->plan->image = img;

	if (s->container) {
		int rc = annotate(c, "container", s->container);

		if (rc)
			return rc;
		if (cont_note)
			hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_PARTIAL,
				       c->paths->image,
				       "'%.100s' %s: used %s; kept in "
				       "annotation " ANN("container"),
				       s->container, cont_note, why);
		else if (strcmp(how, "container") == 0)
			hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_MAPPED,
				       c->paths->image, "%.100s -> %.200s",
				       s->container, img);
		else
			hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_MAPPED,
				       c->paths->image, "used as the image");
	} else if (is_set(s, HB_F_CONTAINER)) {
		hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_MAPPED,
			       c->paths->image, "%s", why);
	}
	return 0;
}

/* Env for the containers; NULL values (pass-through from the submit
 * host) cannot be given and are listed in an annotation. */
static int env(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	struct hb_buf v, pass;
	uint32_t npass = 0, nbad = 0;
	int rc = 0;
	char idx[24];
	static const char *const array_vars[] = {
	    "SLURM_ARRAY_TASK_ID", "PBS_ARRAYID", "PBS_ARRAY_INDEX"};

	hb_buf_init(&v, 0);
	hb_buf_init(&pass, 0);
	for (uint32_t i = 0; i < s->nenv; i++) {
		const struct hb_env *e = &s->env[i];

		if (!e->name || !*e->name || strchr(e->name, '=')) {
			nbad++;
			continue;
		}
		if (!e->value) {
			if ((rc = hb_buf_printf(&pass, "%s%u:%s",
						npass ? "," : "", i, e->name)))
				goto out;
			npass++;
			continue;
		}
		hb_buf_reset(&v);
		if ((rc = hb_k8s_escape(e->value, strlen(e->value), &v)))
			goto out;
		if (kv_push(c->plan, &c->plan->env, e->name, v.data))
			goto nomem;
	}
	if (c->plan->array_index >= 0) {
		hb_buf_reset(&v);
		snprintf(idx, sizeof(idx), "%lld",
			 (long long)c->plan->array_index);
		for (size_t k = 0; k < NELEM(array_vars); k++) {
			bool dup = false;

			for (uint32_t i = 0; i < s->nenv; i++)
				if (s->env[i].name &&
				    strcmp(s->env[i].name, array_vars[k]) == 0)
					dup = true;
			if (dup)
				continue;
			if (kv_push(c->plan, &c->plan->env, array_vars[k], idx))
				goto nomem;
			if ((rc = hb_buf_printf(&v, "%s%s", v.len ? "," : "",
						array_vars[k])))
				goto out;
		}
		/* What this element adds, so the way back can take it off
		 * again and keep the job's own. */
		if (v.len && (rc = annotate(c, "array-env", v.data)))
			goto out;
	}
	if (npass && (rc = annotate(c, "env-passthrough", pass.data)))
		goto out;
	if (is_set(s, HB_F_ENV)) {
		if (npass || nbad)
			hb_report_fate(
			    c->rep, HB_F_ENV, HB_FATE_PARTIAL, c->paths->env,
			    "%u variable(s) passed through from the "
			    "submit environment have no value in "
			    "the pod (kept in annotation " ANN(
				"env-passthrough") "); %u invalid "
						   "name(s) left out",
			    npass, nbad);
		else
			hb_report_fate(
			    c->rep, HB_F_ENV, HB_FATE_MAPPED, c->paths->env,
			    "%u variable(s), on every container", s->nenv);
	}
	goto out;
nomem:
	rc = OOM(c);
out:
	hb_buf_free(&v);
	hb_buf_free(&pass);
	return rc ? hb_err_set(c->err, rc, NULL, 0, "out of memory") : 0;
}

/* Merge labels into the nodeSelector; a clash keeps the first value. */
static int merge_selector(struct ctx *c, const struct hb_selector_map *m,
			  const char *what)
{
	c->plan->has_node_selector = true;
	for (uint32_t i = 0; i < m->nlabels; i++) {
		const struct hb_kv *l = &m->labels[i];
		const char *old;

		if (!l->key || !l->value)
			continue;
		old = kv_find(&c->plan->node_selector, l->key);
		if (old) {
			if (strcmp(old, l->value))
				hb_report_warn(c->rep,
					       "nodeSelector %s: %s wants '%s' "
					       "but '%s' was set first; kept "
					       "'%s'",
					       l->key, what, l->value, old,
					       old);
			continue;
		}
		if (kv_set(c->plan, &c->plan->node_selector, l->key, l->value))
			return OOM(c);
	}
	return 0;
}

/* One nodeSelectorTerm per mapped alternative of an OR group. */
static int or_group(struct ctx *c, const char *s, size_t n,
		    struct hb_buf *unmapped, uint32_t *nmapped)
{
	const struct hb_config *cfg = c->cfg;
	cJSON *terms = NULL, *aff;
	const char *p = s, *end = s + n;

	while (p <= end) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		const char *e = bar ? bar : end;
		const struct hb_selector_map *m;
		cJSON *term, *exprs;

		m = sel_get(cfg->constraint_selectors,
			    cfg->nconstraint_selectors, p, (size_t)(e - p));
		if (!m || !m->nlabels) {
			if (hb_buf_printf(unmapped, "%s%.*s",
					  unmapped->len ? ", " : "",
					  (int)(e - p), p))
				return OOM(c);
		} else {
			if (!terms) {
				if (!c->plan->affinity)
					c->plan->affinity =
					    cJSON_CreateObject();
				aff = c->plan->affinity;
				if (!aff)
					return OOM(c);
				aff = cJSON_AddObjectToObject(aff,
							      "nodeAffinity");
				aff = aff ? cJSON_AddObjectToObject(
						aff, "requiredDuringScheduling"
						     "IgnoredDuringExecution")
					  : NULL;
				terms = aff ? cJSON_AddArrayToObject(
						  aff, "nodeSelectorTerms")
					    : NULL;
				if (!terms)
					return OOM(c);
			}
			term = cJSON_CreateObject();
			if (!term)
				return OOM(c);
			cJSON_AddItemToArray(terms, term);
			exprs =
			    cJSON_AddArrayToObject(term, "matchExpressions");
			if (!exprs)
				return OOM(c);
			for (uint32_t i = 0; i < m->nlabels; i++) {
				cJSON *x = cJSON_CreateObject(), *vals;

				if (!x)
					return OOM(c);
				cJSON_AddItemToArray(exprs, x);
				if (!cJSON_AddStringToObject(
					x, "key", m->labels[i].key) ||
				    !cJSON_AddStringToObject(x, "operator",
							     "In") ||
				    !(vals =
					  cJSON_AddArrayToObject(x, "values")))
					return OOM(c);
				cJSON_AddItemToArray(
				    vals,
				    cJSON_CreateString(m->labels[i].value));
				if (cJSON_GetArraySize(vals) != 1)
					return OOM(c);
			}
			(*nmapped)++;
		}
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

/*
 * Slurm constraints: "a&b", "a,b" (all of them) map each feature through
 * constraint_selectors into the nodeSelector; one "[a|b]" or "a|b" group
 * becomes a required node affinity, one term per alternative.  Counts
 * ("a*2"), parentheses and anything else are reported.
 */
static int constraint(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_config *cfg = c->cfg;
	const char *str = s->constraint;
	struct hb_buf unmapped;
	uint32_t nmapped = 0, ngroups = 0;
	bool top_or = false, top_and = false;
	int depth = 0, rc = 0;
	size_t len;

	if (!str)
		return 0;
	len = strlen(str);
	hb_buf_init(&unmapped, 0);
	for (size_t i = 0; i < len; i++) {
		if (str[i] == '[')
			depth++;
		else if (str[i] == ']')
			depth--;
		else if (depth == 0 && str[i] == '|')
			top_or = true;
		else if (depth == 0 && (str[i] == '&' || str[i] == ','))
			top_and = true;
	}
	if (depth || strpbrk(str, "()") || (top_or && top_and) || !len) {
		rc = hb_buf_printf(&unmapped, "%s", str);
	} else if (top_or) {
		if (strpbrk(str, "[]*:"))
			rc = hb_buf_printf(&unmapped, "%s", str);
		else
			rc = or_group(c, str, len, &unmapped, &nmapped);
	} else {
		const char *p = str, *end = str + len;

		while (!rc && p < end) {
			const char *e = p;
			size_t n;

			depth = 0;
			while (e < end && (depth || (*e != '&' && *e != ','))) {
				if (*e == '[')
					depth++;
				else if (*e == ']')
					depth--;
				e++;
			}
			n = (size_t)(e - p);
			if (n >= 2 && p[0] == '[' && p[n - 1] == ']' &&
			    !memchr(p + 1, '[', n - 2) &&
			    !memchr(p + 1, '*', n - 2) &&
			    !memchr(p + 1, ':', n - 2) &&
			    !memchr(p + 1, '&', n - 2) &&
			    !memchr(p + 1, ',', n - 2) && ngroups == 0) {
				ngroups++;
				rc = or_group(c, p + 1, n - 2, &unmapped,
					      &nmapped);
			} else {
				const struct hb_selector_map *m = NULL;

				if (n && !memchr(p, '[', n) &&
				    !memchr(p, '*', n) && !memchr(p, '|', n))
					m = sel_get(cfg->constraint_selectors,
						    cfg->nconstraint_selectors,
						    p, n);
				if (m && m->nlabels) {
					char what[96];

					snprintf(what, sizeof(what),
						 "constraint %.*s", (int)n, p);
					rc = merge_selector(c, m, what);
					nmapped++;
				} else if (n) {
					rc = hb_buf_printf(&unmapped, "%s%.*s",
							   unmapped.len ? ", "
									: "",
							   (int)n, p);
				}
			}
			p = e < end ? e + 1 : end;
		}
	}
	if (rc) {
		hb_buf_free(&unmapped);
		return OOM(c);
	}
	rc = annotate(c, "constraint", str);
	if (!rc) {
		if (!unmapped.len)
			hb_report_fate(c->rep, HB_F_CONSTRAINT, HB_FATE_MAPPED,
				       c->paths->selector,
				       "through constraint_selectors");
		else if (nmapped)
			hb_report_fate(c->rep, HB_F_CONSTRAINT, HB_FATE_PARTIAL,
				       c->paths->selector,
				       "not mapped: %.200s (no "
				       "constraint_selectors entry, or a form "
				       "a nodeSelector cannot express); kept "
				       "in annotation " ANN("constraint"),
				       unmapped.data);
		else
			hb_report_fate(
			    c->rep, HB_F_CONSTRAINT, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("constraint") "]",
			    "not mapped: %.200s (no "
			    "constraint_selectors entry, or a form "
			    "a nodeSelector cannot express); no "
			    "Kubernetes equivalent; kept in "
			    "annotation " ANN("constraint"),
			    unmapped.data);
	}
	hb_buf_free(&unmapped);
	return rc;
}

static int gpu_type(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_selector_map *m;
	char what[96];
	int rc;

	if (!s->gpu_type)
		return 0;
	if ((rc = annotate(c, "gpu-type", s->gpu_type)))
		return rc;
	m = sel_get(c->cfg->gpu_type_selectors, c->cfg->ngpu_type_selectors,
		    s->gpu_type, strlen(s->gpu_type));
	if (!m || !m->nlabels) {
		if (s->gpu_scope == HB_GPU_NONE)
			hb_report_fate(
			    c->rep, HB_F_GPUS, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("gpu-type") "]",
			    "GPU type %.60s has no "
			    "gpu_type_selectors entry; kept in "
			    "annotation " ANN("gpu-type"),
			    s->gpu_type);
		else
			hb_report_fate(
			    c->rep, HB_F_GPUS, HB_FATE_PARTIAL,
			    c->rep->fate[HB_F_GPUS].target,
			    "%s; GPU type %.60s has no "
			    "gpu_type_selectors entry: any GPU "
			    "model; kept in annotation " ANN("gpu-type"),
			    c->rep->fate[HB_F_GPUS].note
				? c->rep->fate[HB_F_GPUS].note
				: "GPUs",
			    s->gpu_type);
		return 0;
	}
	snprintf(what, sizeof(what), "GPU type %.60s", s->gpu_type);
	if ((rc = merge_selector(c, m, what)))
		return rc;
	if (c->rep->fate[HB_F_GPUS].kind != HB_FATE_PARTIAL)
		hb_report_fate(
		    c->rep, HB_F_GPUS, HB_FATE_MAPPED,
		    c->rep->fate[HB_F_GPUS].target, "%s; type %.60s -> %s",
		    c->rep->fate[HB_F_GPUS].note ? c->rep->fate[HB_F_GPUS].note
						 : "GPUs",
		    s->gpu_type, c->paths->selector);
	return 0;
}

static cJSON *hostname_term(void)
{
	cJSON *t = cJSON_CreateObject();

	if (t && !cJSON_AddObjectToObject(t, "labelSelector")) {
		cJSON_Delete(t);
		return NULL;
	}
	if (t && !cJSON_AddStringToObject(t, "topologyKey",
					  "kubernetes.io/hostname")) {
		cJSON_Delete(t);
		return NULL;
	}
	return t;
}

/* --exclusive: one worker per node, and no other hpcbridge job's pods
 * beside it. */
static int exclusive(struct ctx *c, const char *role)
{
	cJSON *anti, *req, *t, *sel, *ml, *exprs, *x, *vals;

	if (!c->spec->exclusive) {
		if (is_set(c->spec, HB_F_EXCLUSIVE))
			hb_report_fate(c->rep, HB_F_EXCLUSIVE, HB_FATE_MAPPED,
				       NULL, "not exclusive");
		return 0;
	}
	if (!c->plan->affinity)
		c->plan->affinity = cJSON_CreateObject();
	if (!c->plan->affinity)
		return OOM(c);
	anti = cJSON_AddObjectToObject(c->plan->affinity, "podAntiAffinity");
	req = anti ? cJSON_AddArrayToObject(
			 anti, "requiredDuringSchedulingIgnoredDuring"
			       "Execution")
		   : NULL;
	if (!req)
		return OOM(c);
	/* This job's other workers. */
	if (!(t = hostname_term()))
		return OOM(c);
	cJSON_AddItemToArray(req, t);
	sel = cJSON_GetObjectItemCaseSensitive(t, "labelSelector");
	ml = cJSON_AddObjectToObject(sel, "matchLabels");
	if (!ml || !cJSON_AddStringToObject(ml, HB_LABEL_JOB, c->plan->name) ||
	    !cJSON_AddStringToObject(ml, HB_LABEL_ROLE, role))
		return OOM(c);
	/* Any other hpcbridge job's pods. */
	if (!(t = hostname_term()))
		return OOM(c);
	cJSON_AddItemToArray(req, t);
	sel = cJSON_GetObjectItemCaseSensitive(t, "labelSelector");
	exprs = cJSON_AddArrayToObject(sel, "matchExpressions");
	if (!exprs)
		return OOM(c);
	x = cJSON_CreateObject();
	if (!x)
		return OOM(c);
	cJSON_AddItemToArray(exprs, x);
	if (!cJSON_AddStringToObject(x, "key", HB_LABEL_JOB) ||
	    !cJSON_AddStringToObject(x, "operator", "Exists"))
		return OOM(c);
	x = cJSON_CreateObject();
	if (!x)
		return OOM(c);
	cJSON_AddItemToArray(exprs, x);
	if (!cJSON_AddStringToObject(x, "key", HB_LABEL_JOB) ||
	    !cJSON_AddStringToObject(x, "operator", "NotIn") ||
	    !(vals = cJSON_AddArrayToObject(x, "values")))
		return OOM(c);
	cJSON_AddItemToArray(vals, cJSON_CreateString(c->plan->name));
	if (cJSON_GetArraySize(vals) != 1)
		return OOM(c);
	hb_report_fate(c->rep, HB_F_EXCLUSIVE, HB_FATE_PARTIAL,
		       at(c, c->paths->affinity, "podAntiAffinity"),
		       "one worker per node and no other hpcbridge job's pods "
		       "beside it; other workloads may still share the node; "
		       "kept in annotation " ANN("exclusive"));
	return annotate(c, "exclusive", "true");
}

/* The launcher script, escaped against $(VAR) expansion. */
static int script(struct ctx *c)
{
	struct hb_buf raw, *esc;
	int rc;

	struct hb_jobspec orig = *c->spec;
	const char *kind = provenance(c->spec, "source-kind");
	const char *file = provenance(c->spec, "source-name");

	/* A job read back from a manifest hpcbridge made runs under the
	 * name of its original script, as it did the first time. */
	if (file) {
		orig.source_name = file;
		orig.source = kind && strcmp(kind, "pbs") == 0 ? HB_SRC_PBS
			      : kind && strcmp(kind, "sbatch") == 0
				  ? HB_SRC_SBATCH
				  : orig.source;
	}
	/* No cap of its own: the launcher keeps to HB_LAUNCHER_MAX, and
	 * builds straight into a buffer that leaves it the room. */
	hb_buf_init(&raw, 0);
	esc = &c->plan->script;
	rc = hb_launcher_script_ex(&orig, c->plan->name, c->plan->array_index,
				   c->plan->runtime_mounted, &raw, c->err);
	if (rc) {
		if (c->err && !c->err->code)
			hb_err_set(c->err, rc, c->spec->source_name, 0,
				   "cannot write the launcher script: %s",
				   hb_strerror(rc));
		goto out;
	}
	if ((rc = hb_k8s_escape(raw.data ? raw.data : "", raw.len, esc))) {
		OOM(c);
		goto out;
	}
	hb_report_fate(c->rep, HB_F_SCRIPT, HB_FATE_MAPPED, c->paths->script,
		       "run unchanged by the launcher script, with "
		       "SLURM_*/PBS_* variables from the hostfile%s",
		       c->plan->runtime_mounted
			       ? "; the launcher runtime is mounted "
				 "from the ConfigMap"
			       : "");
out:
	hb_buf_free(&raw);
	return rc;
}

static int metadata(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_config *cfg = c->cfg;
	struct hb_k8s_kvs *labels = &c->plan->labels;
	char v[HB_DNS_LABEL_MAX + 1];
	const char *queue = NULL, *part = NULL;

	c->plan->namespace = cfg->namespace;
	if (kv_set(c->plan, labels, HB_LABEL_MANAGED_BY, HB_MANAGED_BY))
		return OOM(c);

	/* The Kueue queue: partition map, else the default. */
	if (s->partition) {
		queue = kv_get(cfg->partition_queues, cfg->npartition_queues,
			       s->partition);
		if (queue)
			part = s->partition;
	}
	if (!queue)
		queue = cfg->default_queue;
	if (queue) {
		if (!valid_label_value(queue))
			return hb_err_set(c->err, HB_EINVAL, NULL, 0,
					  "configuration: queue '%.100s' is "
					  "not a valid label value",
					  queue);
		if (kv_set(c->plan, labels, HB_LABEL_QUEUE, queue))
			return OOM(c);
	}
	if (s->user && label_value(s->user, v) &&
	    kv_set(c->plan, labels, ANN("user"), v))
		return OOM(c);
	if (s->account && label_value(s->account, v) &&
	    kv_set(c->plan, labels, ANN("account"), v))
		return OOM(c);

	/* Fates of identity fields. */
	if (s->name) {
		int rc = annotate(c, "name", s->name);

		if (rc)
			return rc;
		if (strcmp(s->name, c->plan->name) == 0)
			hb_report_fate(c->rep, HB_F_NAME, HB_FATE_MAPPED,
				       "metadata.name", NULL);
		else
			hb_report_fate(
			    c->rep, HB_F_NAME, HB_FATE_PARTIAL, "metadata.name",
			    "'%.100s' became '%s' (a DNS-1035 label"
			    "%s); kept in annotation " ANN("name"),
			    s->name, c->plan->name,
			    c->plan->array_index >= 0 ? " with the array index"
						      : "");
	}
	if (s->partition) {
		int rc = annotate(c, "partition", s->partition);

		if (rc)
			return rc;
		if (part)
			hb_report_fate(c->rep, HB_F_PARTITION, HB_FATE_MAPPED,
				       "metadata.labels[" HB_LABEL_QUEUE "]",
				       "partition %.100s -> LocalQueue %.100s",
				       s->partition, queue);
		else
			hb_report_fate(
			    c->rep, HB_F_PARTITION, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("partition") "]",
			    "no partition_queues entry%s%.100s; no "
			    "Kubernetes equivalent; kept in "
			    "annotation " ANN("partition"),
			    queue ? ": the default queue " : "",
			    queue ? queue : "");
	}
	if (s->user) {
		int rc = carry(
		    c, HB_F_USER, "user", s->user,
		    "the pod runs as its image's user; labelled " ANN("user"));
		if (rc)
			return rc;
	}
	if (s->account) {
		int rc = carry(c, HB_F_ACCOUNT, "account", s->account,
			       "labelled " ANN("account") " for chargeback");
		if (rc)
			return rc;
	}
	return 0;
}

static int time_limit(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;

	if (s->time_limit == HB_TIME_UNLIMITED ||
	    (s->time_limit == 0 && hb_jobspec_has(s, HB_F_TIME_LIMIT))) {
		hb_report_fate(c->rep, HB_F_TIME_LIMIT, HB_FATE_MAPPED, NULL,
			       "no time limit: no activeDeadlineSeconds");
		return annotate(c, "time-limit",
				s->time_limit ? "UNLIMITED" : "0");
	}
	if (!s->time_limit)
		return 0;
	if (s->time_limit > DEADLINE_MAX)
		return field_err(s, c->err, HB_ERANGE, HB_F_TIME_LIMIT,
				 "%llu seconds is too long a time limit",
				 (unsigned long long)s->time_limit);
	c->plan->deadline = s->time_limit;
	hb_report_fate(c->rep, HB_F_TIME_LIMIT, HB_FATE_MAPPED,
		       c->paths->deadline,
		       "%llu s, counted from the job's start (image pulls and "
		       "worker start-up included)",
		       (unsigned long long)s->time_limit);
	return 0;
}

/* "a-b:s,c%m" from the ranges, for a jobspec without the text. */
static int array_text(const struct hb_jobspec *s, struct hb_buf *b)
{
	int rc = 0;

	for (uint32_t i = 0; !rc && i < s->narray_ranges; i++) {
		const struct hb_range *r = &s->array_ranges[i];

		rc = hb_buf_printf(b, "%s%u", i ? "," : "", r->start);
		if (!rc && r->end != r->start)
			rc = hb_buf_printf(b, "-%u", r->end);
		if (!rc && r->step > 1)
			rc = hb_buf_printf(b, ":%u", r->step);
	}
	if (!rc && s->array_max_running)
		rc = hb_buf_printf(b, "%%%u", s->array_max_running);
	return rc;
}

static int array(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	struct hb_buf b;
	char idx[24];
	int rc = 0;

	if (!is_set(s, HB_F_ARRAY))
		return 0;
	hb_buf_init(&b, 0);
	if (s->array)
		rc = annotate(c, "array", s->array);
	else if (!(rc = array_text(s, &b)) && b.len)
		rc = annotate(c, "array", b.data);
	hb_buf_free(&b);
	if (rc)
		return rc == HB_ENOMEM ? OOM(c) : rc;
	if (c->plan->array_index < 0) {
		hb_report_fate(c->rep, HB_F_ARRAY, HB_FATE_PARTIAL,
			       "metadata.annotations[" ANN("array") "]",
			       "no array index given: this %s stands for the "
			       "whole array; one %s is made per index (named "
			       "-<index>, with SLURM_ARRAY_TASK_ID set)",
			       c->paths->kind, c->paths->kind);
		return 0;
	}
	snprintf(idx, sizeof(idx), "%lld", (long long)c->plan->array_index);
	if ((rc = annotate(c, "array-index", idx)))
		return rc;
	if (s->array_max_running)
		hb_report_fate(c->rep, HB_F_ARRAY, HB_FATE_PARTIAL,
			       "metadata.name",
			       "element %s: one %s per index, named -%s, with "
			       "SLURM_ARRAY_TASK_ID/PBS_ARRAYID set; the %%%u "
			       "limit on running elements is not enforced by "
			       "Kubernetes; kept in annotation " ANN("array"),
			       idx, c->paths->kind, idx, s->array_max_running);
	else
		hb_report_fate(c->rep, HB_F_ARRAY, HB_FATE_MAPPED,
			       "metadata.name",
			       "element %s: one %s per index, named -%s, with "
			       "SLURM_ARRAY_TASK_ID/PBS_ARRAYID set",
			       idx, c->paths->kind, idx);
	return 0;
}

static int annotate_json(struct ctx *c, const char *key, cJSON *v)
{
	char *text;
	int rc;

	if (!v)
		return OOM(c);
	text = cJSON_PrintUnformatted(v);
	cJSON_Delete(v);
	if (!text)
		return OOM(c);
	rc = ann_put(c, key, text);
	cJSON_free(text);
	return rc;
}

static const char *source_kind_name(uint8_t k)
{
	switch (k) {
	case HB_SRC_SBATCH:
		return "sbatch";
	case HB_SRC_PBS:
		return "pbs";
	case HB_SRC_MPIJOB:
		return "mpijob";
	case HB_SRC_TRAINJOB:
		return "trainjob";
	}
	return "unknown";
}

/* Everything Kubernetes has no field for. */
static int carried(struct ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const char *v;
	char num[24];
	int rc = 0;

#define CARRY(f, key, val, why)                                                \
	do {                                                                   \
		if ((rc = carry(c, f, key, val, why)))                         \
			return rc;                                             \
	} while (0)

	CARRY(HB_F_QOS, "qos", s->qos, NULL);
	CARRY(HB_F_COMMENT, "comment", s->comment, NULL);
	CARRY(HB_F_LICENSES, "licenses", s->licenses, NULL);
	CARRY(HB_F_NODELIST, "nodelist", s->nodelist,
	      "Slurm host names do not exist on Kubernetes");
	CARRY(HB_F_EXCLUDE, "exclude", s->exclude,
	      "Slurm host names do not exist on Kubernetes");
	if (s->time_min) {
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)s->time_min);
		CARRY(HB_F_TIME_MIN, "time-min", num, NULL);
	}
	CARRY(HB_F_BEGIN, "begin", s->begin,
	      "the gateway decides when the job is created");
	CARRY(HB_F_DEADLINE, "deadline", s->deadline, NULL);
	CARRY(HB_F_SIGNAL, "signal", s->signal,
	      "Kubernetes sends SIGTERM at the deadline");
	CARRY(HB_F_OUTPUT, "output", s->output,
	      "the launcher's log is the job's output");
	CARRY(HB_F_ERROR, "error", s->error,
	      "the launcher's log holds stderr too");
	if (s->join_output) {
		if ((rc = annotate(c, "join-output", "true")))
			return rc;
		if (!s->error)
			hb_report_fate(
			    c->rep, HB_F_ERROR, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("join-output") "]",
			    "stderr joins stdout in the launcher's "
			    "log anyway; kept in annotation " ANN(
				"join-output"));
	}
	CARRY(HB_F_INPUT, "input", s->input, NULL);
	CARRY(HB_F_CHDIR, "chdir", s->chdir,
	      "the launcher cds there if the pod has the path, else runs in "
	      "/tmp");
	CARRY(HB_F_KEEP, "keep", s->keep, NULL);
	CARRY(HB_F_DEPENDENCY, "dependency", s->dependency,
	      "Slurm job ids mean nothing to Kubernetes");
	CARRY(HB_F_MAIL_TYPE, "mail-type", s->mail_type, NULL);
	CARRY(HB_F_MAIL_USER, "mail-user", s->mail_user, NULL);
	if (s->requeue >= 0)
		CARRY(HB_F_REQUEUE, "requeue", s->requeue ? "true" : "false",
		      "the launcher runs once (runPolicy.backoffLimit 0)");
	CARRY(HB_F_EXPORT, "export", s->export_spec,
	      "the submit host's environment does not exist in the pod; "
	      "settings the job makes are in env");
	if (s->export_all) {
		if ((rc = annotate(c, "export-all", "true")))
			return rc;
		if (!s->export_spec)
			hb_report_fate(
			    c->rep, HB_F_EXPORT, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("export-all") "]",
			    "the submit host's environment does "
			    "not exist in the pod; no Kubernetes "
			    "equivalent; kept in annotation " ANN(
				"export-all"));
	}
	CARRY(HB_F_CHECKPOINT, "checkpoint-dir", s->checkpoint_dir,
	      "the gateway syncs it between the file system and S3");
	if (s->ndata) {
		cJSON *a = cJSON_CreateArray();

		for (uint32_t i = 0; a && i < s->ndata; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(s->data[i]));
		if (a && cJSON_GetArraySize(a) != (int)s->ndata) {
			cJSON_Delete(a);
			a = NULL;
		}
		if ((rc = annotate_json(c, ANN("data"), a)))
			return rc;
		hb_report_fate(c->rep, HB_F_DATA, HB_FATE_CARRIED,
			       "metadata.annotations[" ANN("data") "]",
			       "the gateway stages data; no Kubernetes "
			       "equivalent; kept in annotation " ANN("data"));
	}
	if (s->nchunks) {
		cJSON *a = cJSON_CreateArray();

		for (uint32_t i = 0; a && i < s->nchunks; i++) {
			const struct hb_chunk *k = &s->chunks[i];
			cJSON *o = cJSON_CreateObject();

			if (!o) {
				cJSON_Delete(a);
				a = NULL;
				break;
			}
			cJSON_AddItemToArray(a, o);
			if (!cJSON_AddNumberToObject(o, "count", k->count) ||
			    !cJSON_AddNumberToObject(o, "ncpus", k->ncpus) ||
			    !cJSON_AddNumberToObject(o, "mpiprocs",
						     k->mpiprocs) ||
			    !cJSON_AddNumberToObject(o, "ompthreads",
						     k->ompthreads) ||
			    !cJSON_AddNumberToObject(o, "ngpus", k->ngpus) ||
			    !cJSON_AddNumberToObject(o, "mem_mb",
						     (double)k->mem_mb)) {
				cJSON_Delete(a);
				a = NULL;
			}
		}
		if ((rc = annotate_json(c, ANN("chunks"), a)))
			return rc;
		hb_report_fate(c->rep, HB_F_HETEROGENEOUS, HB_FATE_PARTIAL,
			       c->paths->nodes,
			       "%u select chunks: Kubernetes workers are all "
			       "alike, sized %u workers x %u CPUs; the chunks "
			       "are kept in annotation " ANN("chunks"),
			       s->nchunks, c->plan->shape.nodes,
			       c->plan->shape.cpus_per_node);
	}
	if (s->interpreter && (rc = annotate(c, "interpreter", s->interpreter)))
		return rc;
	v = provenance(s, "source-kind");
	if ((rc = annotate(c, "source-kind",
			   v ? v : source_kind_name(s->source))))
		return rc;
	v = provenance(s, "source-name");
	if (!v)
		v = s->source_name;
	if (v && (rc = annotate(c, "source-name", v)))
		return rc;
#undef CARRY
	return 0;
}

/* The API server refuses more than 256 KiB of annotations. */
#define ANNOTATIONS_MAX (256u * 1024)

static int annotation_budget(struct ctx *c)
{
	const struct hb_k8s_kvs *kv = &c->plan->annotations;
	const struct hb_k8s_kv *big = NULL;
	size_t total = 0, bigsz = 0;

	for (uint32_t i = 0; i < kv->n; i++) {
		size_t n = strlen(kv->v[i].key) + strlen(kv->v[i].value);

		total += n;
		if (n > bigsz) {
			bigsz = n;
			big = &kv->v[i];
		}
	}
	if (total <= ANNOTATIONS_MAX)
		return 0;
	return hb_err_set(c->err, HB_ETOOBIG, c->spec->source_name, 0,
			  "the fields kept in annotations take %zu bytes, more "
			  "than Kubernetes' %u; the largest is %s (%zu bytes)",
			  total, ANNOTATIONS_MAX, big ? big->key : "?", bigsz);
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
	hb_emit_end(w);
}

void hb_k8s_write_env(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	if (!plan->env.n)
		return;
	hb_emit_arr(w, "env");
	for (uint32_t i = 0; i < plan->env.n; i++) {
		hb_emit_obj(w, NULL);
		hb_emit_str(w, "name", plan->env.v[i].key);
		hb_emit_str(w, "value", plan->env.v[i].value);
		hb_emit_end(w);
	}
	hb_emit_end(w);
}

void hb_k8s_write_pod_labels(struct hb_emit *w, const struct hb_k8s_plan *plan,
			     const char *role)
{
	hb_emit_obj(w, "labels");
	hb_emit_str(w, HB_LABEL_MANAGED_BY, HB_MANAGED_BY);
	hb_emit_str(w, HB_LABEL_JOB, plan->name);
	hb_emit_str(w, HB_LABEL_ROLE, role);
	hb_emit_end(w);
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

int hb_k8s_plan(const struct hb_jobspec *spec, const struct hb_config *cfg,
		int64_t array_index, size_t name_reserve,
		const struct hb_k8s_paths *paths, struct hb_k8s_plan *plan,
		struct hb_report *rep, struct hb_err *err)
{
	struct ctx c = {.spec = spec,
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
	if ((rc = check_array(&c, array_index)))
		goto fail;
	if (hb_jobspec_shape(spec, &plan->shape)) {
		rc = hb_err_set(err, HB_ERANGE, spec->source_name, 0,
				"the resource request overflows (nodes x "
				"tasks x CPUs, GPUs or memory)");
		goto fail;
	}
	if ((rc = check_shape(&c)))
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
	if ((rc = metadata(&c)) || (rc = resources(&c)) || (rc = image(&c)) ||
	    (rc = env(&c)) || (rc = constraint(&c)) || (rc = gpu_type(&c)) ||
	    (rc = exclusive(&c, paths->role)) || (rc = time_limit(&c)) ||
	    (rc = array(&c)) || (rc = carried(&c)) || (rc = script(&c)))
		goto fail;
	if ((rc = annotation_budget(&c)))
		goto fail;
	return 0;
fail:
	hb_k8s_plan_free(plan);
	if (err && !err->code)
		hb_err_set(err, rc, spec->source_name, 0, "%s",
			   hb_strerror(rc));
	return rc;
}

/* ---------------------------------------------------------------- */
/* Reading manifests                                                */
/* ---------------------------------------------------------------- */

#define RD_OOM(rd) hb_err_set((rd)->err, HB_ENOMEM, NULL, 0, "out of memory")

static unsigned line_of(const cJSON *n)
{
	int l = n ? hb_doc_line(n) : 0;

	return l > 0 ? (unsigned)l : 0;
}

static int rd_err(struct hb_k8s_reader *rd, const cJSON *n, int code,
		  const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int rd_err(struct hb_k8s_reader *rd, const cJSON *n, int code,
		  const char *path, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(rd->err, code, rd->spec->source_name, line_of(n),
			  "%s: %s", path, msg);
}

/* A short, one-line rendering of a value for directive texts. */
static int render(const cJSON *n, struct hb_buf *b)
{
	if (!n || cJSON_IsNull(n))
		return hb_buf_puts(b, "null");
	if (cJSON_IsBool(n))
		return hb_buf_puts(b, cJSON_IsTrue(n) ? "true" : "false");
	if (cJSON_IsNumber(n)) {
		double d = n->valuedouble;

		if (isfinite(d) && d == floor(d) && fabs(d) < 1e17)
			return hb_buf_printf(b, "%.0f", d);
		return hb_buf_printf(b, "%g", d);
	}
	if (cJSON_IsString(n)) {
		const char *s = n->valuestring;
		size_t len = strlen(s), max = 1024;
		int rc = 0;

		for (size_t i = 0; !rc && i < len && i < max; i++) {
			char ch = s[i];

			if ((unsigned char)ch < 0x20 || ch == 0x7f)
				ch = ' ';
			rc = hb_buf_putc(b, ch);
		}
		if (!rc && len > max)
			rc = hb_buf_puts(b, "...");
		return rc;
	}
	if (cJSON_IsArray(n))
		return hb_buf_printf(b, "[%d items]", cJSON_GetArraySize(n));
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(n, "name"))) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(n, "name");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(n, "value");
		int rc = render(nm, b);

		if (!rc && cJSON_IsString(v))
			rc = hb_buf_putc(b, '=') ? HB_ENOMEM : render(v, b);
		else if (!rc)
			rc = hb_buf_puts(b, " {...}");
		return rc;
	}
	return hb_buf_puts(b, "{...}");
}

int hb_k8s_note(struct hb_k8s_reader *rd, const cJSON *node, const char *path,
		int nfields, const uint8_t *fields, const char *note)
{
	struct hb_origin o = {HB_ORIGIN_MANIFEST, line_of(node)};
	struct hb_directive *d;
	struct hb_buf b;
	int rc;

	hb_buf_init(&b, 0);
	rc = hb_buf_printf(&b, "%s: ", path);
	if (!rc)
		rc = render(node, &b);
	if (rc) {
		hb_buf_free(&b);
		return RD_OOM(rd);
	}
	d = hb_jobspec_add_directive(rd->spec, HB_DIR_MANIFEST, o, b.data,
				     b.len);
	hb_buf_free(&b);
	if (!d)
		return RD_OOM(rd);
	if (note) {
		d->note = hb_jobspec_strdup(rd->spec, note);
		if (!d->note)
			return RD_OOM(rd);
	}
	for (int i = 0; i < nfields; i++) {
		hb_directive_add_field(d, (enum hb_field)fields[i]);
		hb_jobspec_set_origin(rd->spec, (enum hb_field)fields[i], o);
	}
	return 0;
}

int hb_k8s_set(struct hb_k8s_reader *rd, const cJSON *node, const char *path,
	       enum hb_field f, const char *note)
{
	uint8_t fl = (uint8_t)f;

	return hb_k8s_note(rd, node, path, 1, &fl, note);
}

int hb_k8s_get_int(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, int64_t min, int64_t max, int64_t *out,
		   bool *present)
{
	double d;

	*present = false;
	*out = 0;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsNumber(node))
		return rd_err(rd, node, HB_EINVAL, path,
			      "must be an integer \u2265 %lld", (long long)min);
	d = node->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min)
		return rd_err(rd, node, HB_EINVAL, path,
			      "must be an integer \u2265 %lld", (long long)min);
	if (d > (double)max)
		return rd_err(rd, node, HB_ERANGE, path, "must be at most %lld",
			      (long long)max);
	*out = (int64_t)d;
	*present = true;
	return 0;
}

int hb_k8s_get_str(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, const char **out)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsString(node))
		return rd_err(rd, node, HB_EINVAL, path, "must be a string");
	*out = node->valuestring;
	return 0;
}

int hb_k8s_get_obj(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, const cJSON **out)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsObject(node))
		return rd_err(rd, node, HB_EINVAL, path, "must be a mapping");
	*out = node;
	return 0;
}

int hb_k8s_get_arr(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, const cJSON **out)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsArray(node))
		return rd_err(rd, node, HB_EINVAL, path, "must be a list");
	*out = node;
	return 0;
}

static const cJSON *child(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

int hb_k8s_note_unknown(struct hb_k8s_reader *rd, const cJSON *obj,
			const char *path, const char *const *known,
			const char *why)
{
	const cJSON *it;
	char p[320];
	int rc;

	if (!obj || !cJSON_IsObject(obj))
		return 0;
	cJSON_ArrayForEach (it, obj) {
		bool k = false;

		for (size_t i = 0; known && known[i]; i++)
			if (it->string && strcmp(it->string, known[i]) == 0)
				k = true;
		if (k || !it->string)
			continue;
		snprintf(p, sizeof(p), "%s.%s", path, it->string);
		if ((rc = hb_k8s_note(rd, it, p, 0, NULL, why)))
			return rc;
	}
	return 0;
}

int hb_k8s_read_begin(struct hb_k8s_reader *rd, const cJSON *doc,
		      struct hb_jobspec *spec, struct hb_err *err,
		      const char *api_version, const char *kind, uint8_t source)
{
	static const char *const md_known[] = {"name", "namespace", "labels",
					       "annotations", NULL};
	const cJSON *md, *labels, *ann, *it;
	const char *av, *k, *name, *ns;
	int rc;

	memset(rd, 0, sizeof(*rd));
	rd->spec = spec;
	rd->err = err;
	rd->doc = doc;
	spec->source = source;
	if (!doc || !cJSON_IsObject(doc))
		return hb_err_set(err, HB_EINVAL, spec->source_name,
				  line_of(doc),
				  "not a Kubernetes object (expected a "
				  "mapping with apiVersion and kind)");
	if ((rc = hb_k8s_get_str(rd, child(doc, "apiVersion"), "apiVersion",
				 &av)) ||
	    (rc = hb_k8s_get_str(rd, child(doc, "kind"), "kind", &k)))
		return rc;
	if (!k || strcmp(k, kind) != 0)
		return rd_err(rd, child(doc, "kind"), HB_EINVAL, "kind",
			      "'%.60s' is not %s", k ? k : "(missing)", kind);
	if (!av || strcmp(av, api_version) != 0)
		return rd_err(rd, child(doc, "apiVersion"), HB_EINVAL,
			      "apiVersion", "'%.60s' is not %s",
			      av ? av : "(missing)", api_version);
	if ((rc = hb_k8s_get_obj(rd, child(doc, "metadata"), "metadata", &md)))
		return rc;
	if ((rc =
		 hb_k8s_get_str(rd, child(md, "name"), "metadata.name", &name)))
		return rc;
	if (name) {
		spec->name = hb_jobspec_strdup(spec, name);
		if (!spec->name)
			return RD_OOM(rd);
		if ((rc = hb_k8s_set(rd, child(md, "name"), "metadata.name",
				     HB_F_NAME, NULL)))
			return rc;
	}
	if ((rc = hb_k8s_get_str(rd, child(md, "namespace"),
				 "metadata.namespace", &ns)))
		return rc;
	if (ns &&
	    (rc = hb_k8s_note(rd, child(md, "namespace"), "metadata.namespace",
			      0, NULL, "not carried: a Kubernetes namespace")))
		return rc;
	if ((rc = hb_k8s_get_obj(rd, child(md, "labels"), "metadata.labels",
				 &labels)) ||
	    (rc = hb_k8s_get_obj(rd, child(md, "annotations"),
				 "metadata.annotations", &ann)))
		return rc;
	cJSON_ArrayForEach (it, labels) {
		char p[320];

		snprintf(p, sizeof(p), "metadata.labels[%s]", it->string);
		if (!cJSON_IsString(it))
			return rd_err(rd, it, HB_EINVAL, p, "must be a string");
		if (strcmp(it->string, HB_LABEL_MANAGED_BY) == 0 &&
		    strcmp(it->valuestring, HB_MANAGED_BY) == 0)
			rd->ours = true;
		else if (strcmp(it->string, ANN("user")) &&
			 strcmp(it->string, ANN("account")) &&
			 (rc = hb_k8s_note(rd, it, p, 0, NULL,
					   strcmp(it->string, HB_LABEL_QUEUE) ==
						   0
					       ? "not carried: a Kueue "
						 "queue (partitions are "
						 "the site's)"
					       : "not carried: a label")))
			return rc;
	}
	cJSON_ArrayForEach (it, ann) {
		if (!cJSON_IsString(it))
			return rd_err(rd, it, HB_EINVAL, "metadata.annotations",
				      "%.100s: must be a string", it->string);
	}
	rd->annotations = ann;
	return hb_k8s_note_unknown(rd, md, "metadata", md_known,
				   "not carried: object metadata");
}

/* A quantity (string or number) as text, for the units parsers. */
static int quantity_text(struct hb_k8s_reader *rd, const cJSON *n,
			 const char *path, char out[64])
{
	if (cJSON_IsString(n)) {
		if (strlen(n->valuestring) >= 64)
			return rd_err(rd, n, HB_EINVAL, path, "not a quantity");
		memcpy(out, n->valuestring, strlen(n->valuestring) + 1);
		return 0;
	}
	if (cJSON_IsNumber(n)) {
		double d = n->valuedouble;

		if (!isfinite(d) || d < 0 || d > 1e18)
			return rd_err(rd, n, HB_ERANGE, path,
				      "must be a quantity \u2265 0");
		if (d == floor(d))
			snprintf(out, 64, "%.0f", d);
		else
			snprintf(out, 64, "%.9f", d);
		return 0;
	}
	return rd_err(rd, n, HB_EINVAL, path,
		      "must be a quantity (\"500m\", \"4Gi\", 2)");
}

int hb_k8s_read_resources(struct hb_k8s_reader *rd, const cJSON *res,
			  const char *path, uint32_t tpn)
{
	static const char *const res_known[] = {"limits", "requests", NULL};
	struct hb_jobspec *s = rd->spec;
	const cJSON *lim, *req, *it;
	char p[320], q[64];
	int rc;

	if ((rc = hb_k8s_get_obj(rd, res, path, &res)) || !res)
		return rc;
	snprintf(p, sizeof(p), "%s.limits", path);
	if ((rc = hb_k8s_get_obj(rd, child(res, "limits"), p, &lim)))
		return rc;
	snprintf(p, sizeof(p), "%s.requests", path);
	if ((rc = hb_k8s_get_obj(rd, child(res, "requests"), p, &req)))
		return rc;
	if (!tpn)
		tpn = 1;

	/* Each resource: the limit (what the job may use, as Slurm
	 * allocates it), else the request. */
	for (int pass = 0; pass < 2; pass++) {
		const cJSON *from = pass ? req : lim;

		cJSON_ArrayForEach (it, from) {
			const char *key = it->string;
			const char *slash = key ? strrchr(key, '/') : NULL;
			uint64_t v;
			uint8_t fl;

			if (!key)
				continue;
			snprintf(p, sizeof(p), "%s.%s.%s", path,
				 pass ? "requests" : "limits", key);
			if (pass && child(lim, key)) {
				/* Requests equal to the limit say nothing
				 * more; others are listed. */
				if (!cJSON_Compare(it, child(lim, key), 1) &&
				    (rc = hb_k8s_note(
					 rd, it, p, 0, NULL,
					 "not carried: the limit is used "
					 "(Slurm allocates what a job may "
					 "use; it has no burst)")))
					return rc;
				continue;
			}
			if ((rc = quantity_text(rd, it, p, q)))
				return rc;
			if (strcmp(key, "cpu") == 0) {
				uint64_t cpn, cpt;

				if ((rc = hb_parse_k8s_cpu(q, &v)))
					return rd_err(rd, it, rc, p,
						      "'%s' is not a CPU "
						      "quantity",
						      q);
				rd->m_cpu_milli = v;
				rd->m_has_cpu = true;
				cpn = (v + 999) / 1000;
				if (!cpn)
					continue;
				cpt = (cpn + tpn - 1) / tpn;
				if (cpt > UINT32_MAX)
					return rd_err(rd, it, HB_ERANGE, p,
						      "too many CPUs");
				s->cpus_per_task = (uint32_t)cpt;
				if ((rc = hb_k8s_set(
					 rd, it, p, HB_F_CPUS_PER_TASK,
					 v % 1000 || cpn % tpn
					     ? "rounded up to whole "
					       "CPUs per task"
					     : "CPUs per node / tasks "
					       "per node")))
					return rc;
			} else if (strcmp(key, "memory") == 0) {
				if ((rc = hb_parse_k8s_mem(q, &v)))
					return rd_err(rd, it, rc, p,
						      "'%s' is not a memory "
						      "quantity",
						      q);
				if (!v)
					continue;
				rd->m_mem_mb = v;
				rd->m_has_mem = true;
				s->mem_kind = HB_MEM_PER_NODE;
				s->mem_mb = v;
				if ((rc = hb_k8s_set(rd, it, p, HB_F_MEM,
						     "memory per node")))
					return rc;
			} else if (slash && strcmp(slash + 1, "gpu") == 0) {
				if ((rc = hb_parse_k8s_cpu(q, &v)) ||
				    v % 1000 || v / 1000 > UINT32_MAX)
					return rd_err(rd, it,
						      rc ? rc : HB_EINVAL, p,
						      "'%s' is not a whole "
						      "number of GPUs",
						      q);
				rd->m_gpus = (uint32_t)(v / 1000);
				if (!rd->m_gpus)
					continue;
				s->gpu_scope = HB_GPU_PER_NODE;
				s->gpus = rd->m_gpus;
				fl = HB_F_GPUS;
				if ((rc = hb_k8s_note(rd, it, p, 1, &fl,
						      "GPUs per node")))
					return rc;
			} else if ((rc = hb_k8s_note(rd, it, p, 0, NULL,
						     "not carried: no sbatch "
						     "equivalent for this "
						     "resource"))) {
				return rc;
			}
		}
	}
	return hb_k8s_note_unknown(rd, res, path, res_known,
				   "not carried: resource claims");
}

static bool shell_safe(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr("_@%+=:,./-", s[i]))
			return false;
	return true;
}

static int sq_append(struct hb_buf *b, const char *s, size_t n)
{
	int rc = hb_buf_putc(b, '\'');

	for (size_t i = 0; !rc && i < n; i++)
		rc = s[i] == '\'' ? hb_buf_puts(b, "'\\''")
				  : hb_buf_putc(b, s[i]);
	return rc ? rc : hb_buf_putc(b, '\'');
}

static bool env_defines(const cJSON *env, const char *name, size_t n)
{
	const cJSON *it;

	cJSON_ArrayForEach (it, env) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsString(nm) && strlen(nm->valuestring) == n &&
		    memcmp(nm->valuestring, name, n) == 0)
			return true;
	}
	return false;
}

static bool shell_name(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '_')
			return false;
	return true;
}

/*
 * What the container really runs, as shell text: Kubernetes turns $$
 * into $ and $(NAME) into NAME's value when the container defines it.
 * word: out gets one shell word (quoted as needed); else raw text for a
 * script, with references written ${NAME}.
 */
static int flush_seg(struct hb_buf *seg, bool word, struct hb_buf *out,
		     bool *any)
{
	int rc;

	if (!seg->len)
		return 0;
	rc = word ? sq_append(out, seg->data, seg->len)
		  : hb_buf_append(out, seg->data, seg->len);
	hb_buf_reset(seg);
	*any = true;
	return rc;
}

static int k8s_expand(const cJSON *env, const char *s, bool word,
		      struct hb_buf *out)
{
	const char *p = s;
	struct hb_buf seg;
	bool any = false;
	int rc = 0;

	if (word && shell_safe(s, strlen(s)))
		return hb_buf_puts(out, s);
	hb_buf_init(&seg, 0);
	while (!rc && *p) {
		const char *close = NULL;
		size_t n = 0;

		if (p[0] == '$' && p[1] == '$') {
			rc = hb_buf_putc(&seg, '$');
			p += 2;
			continue;
		}
		if (p[0] == '$' && p[1] == '(') {
			close = strchr(p + 2, ')');
			n = close ? (size_t)(close - p - 2) : 0;
		}
		if (close && shell_name(p + 2, n) &&
		    env_defines(env, p + 2, n)) {
			if (!(rc = flush_seg(&seg, word, out, &any)))
				rc = hb_buf_printf(out, "%s%.*s%s",
						   word ? "\"${" : "${", (int)n,
						   p + 2, word ? "}\"" : "}");
			any = true;
			p = close + 1;
			continue;
		}
		rc = hb_buf_putc(&seg, *p++);
	}
	if (!rc)
		rc = flush_seg(&seg, word, out, &any);
	if (!rc && word && !any)
		rc = hb_buf_puts(out, "''");
	hb_buf_free(&seg);
	return rc;
}

static bool is_shell(const char *s)
{
	const char *b = strrchr(s, '/');
	static const char *const shells[] = {"sh",  "bash", "dash", "ksh",
					     "zsh", "ash",  NULL};

	b = b ? b + 1 : s;
	for (size_t i = 0; shells[i]; i++)
		if (strcmp(b, shells[i]) == 0)
			return true;
	return false;
}

/* Strings of a command or args list. */
static int str_list(struct hb_k8s_reader *rd, const cJSON *arr,
		    const char *path, const char **v, int max, int *n)
{
	const cJSON *it;
	int i = 0;

	*n = 0;
	cJSON_ArrayForEach (it, arr) {
		char p[320];

		snprintf(p, sizeof(p), "%s[%d]", path, i);
		if (!cJSON_IsString(it))
			return rd_err(rd, it, HB_EINVAL, p, "must be a string");
		if (i >= max)
			return rd_err(rd, it, HB_ETOOBIG, path,
				      "more than %d items", max);
		v[i++] = it->valuestring;
	}
	*n = i;
	return 0;
}

#define SCRIPT_MAX (4u * 1024 * 1024)
#define WORDS_MAX  4096

static int set_script(struct hb_k8s_reader *rd, const char *text, size_t len,
		      const cJSON *node, const char *path, const char *note)
{
	struct hb_jobspec *s = rd->spec;
	char *copy;

	if (len > SCRIPT_MAX)
		return rd_err(rd, node, HB_ETOOBIG, path,
			      "the script is larger than %u bytes", SCRIPT_MAX);
	copy = hb_jobspec_strndup(s, text, len);
	if (!copy)
		return RD_OOM(rd);
	s->script = copy;
	s->script_len = (uint32_t)len;
	s->interpreter = NULL;
	if (!rd->ours && len > 2 && text[0] == '#' && text[1] == '!') {
		const char *p = text + 2, *e;

		while (*p == ' ' || *p == '\t')
			p++;
		e = p;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		if (e > p) {
			s->interpreter =
			    hb_jobspec_strndup(s, p, (size_t)(e - p));
			if (!s->interpreter)
				return RD_OOM(rd);
		}
	}
	return hb_k8s_set(rd, node, path, HB_F_SCRIPT, note);
}

/* The script from command and args. */
static int read_script(struct hb_k8s_reader *rd, const cJSON *c,
		       const char *path)
{
	const cJSON *cmd, *args, *where;
	const char **w = NULL;
	int ncmd = 0, nargs = 0, n, rc;
	struct hb_buf b, t;
	char p[320];
	const char *body;
	size_t blen;

	snprintf(p, sizeof(p), "%s.command", path);
	if ((rc = hb_k8s_get_arr(rd, child(c, "command"), p, &cmd)))
		return rc;
	snprintf(p, sizeof(p), "%s.args", path);
	if ((rc = hb_k8s_get_arr(rd, child(c, "args"), p, &args)))
		return rc;
	w = calloc(2 * WORDS_MAX, sizeof(*w));
	if (!w)
		return RD_OOM(rd);
	hb_buf_init(&b, 4 * SCRIPT_MAX);
	hb_buf_init(&t, 4 * SCRIPT_MAX);
	snprintf(p, sizeof(p), "%s.command", path);
	if ((rc = str_list(rd, cmd, p, w, WORDS_MAX, &ncmd)))
		goto out;
	snprintf(p, sizeof(p), "%s.args", path);
	if ((rc = str_list(rd, args, p, w + ncmd, WORDS_MAX, &nargs)))
		goto out;
	n = ncmd + nargs;
	where = nargs ? args : cmd;
	snprintf(p, sizeof(p), "%s.%s", path, nargs ? "args" : "command");
	if (n == 0) {
		rc = rd_err(rd, c, HB_EUNSUP, path,
			    "no command or args: the image's own entrypoint "
			    "runs, which sbatch cannot express");
		goto out;
	}

	/* A shell with -c and one script: the script itself. */
	if (n == 3 && is_shell(w[0]) && strcmp(w[1], "-c") == 0) {
		if ((rc = k8s_expand(rd->env, w[2], false, &t)))
			goto oom;
		if (hb_launcher_extract(t.data, &body, &blen) == 0) {
			rc = set_script(rd, body, blen, where, p,
					"the original script, from the "
					"launcher script");
			goto out;
		}
		if ((rc = hb_buf_printf(&b, "#!%s%s\n",
					w[0][0] == '/' ? "" : "/bin/", w[0])) ||
		    (rc = hb_buf_append(&b, t.data, t.len)) ||
		    (t.len && t.data[t.len - 1] != '\n' &&
		     (rc = hb_buf_putc(&b, '\n'))))
			goto oom;
		rc = set_script(rd, b.data, b.len, where, p,
				"the shell script the container runs");
		goto out;
	}

	/* Any other command: one shell line, each word quoted. */
	if ((rc = hb_buf_puts(&b, "#!/bin/sh\n")))
		goto oom;
	for (int i = 0; i < n; i++) {
		if ((i && (rc = hb_buf_putc(&b, ' '))) ||
		    (rc = k8s_expand(rd->env, w[i], true, &b)))
			goto oom;
	}
	if ((rc = hb_buf_putc(&b, '\n')))
		goto oom;
	rc = set_script(rd, b.data, b.len, where, p,
			ncmd ? "a script that runs the container's command"
			     : "a script that runs the container's args (the "
			       "image is assumed to have no entrypoint)");
	goto out;
oom:
	rc = rc == HB_ETOOBIG ? rd_err(rd, c, rc, path,
				       "the script is too "
				       "large")
			      : RD_OOM(rd);
out:
	free(w);
	hb_buf_free(&b);
	hb_buf_free(&t);
	return rc;
}

static int read_env(struct hb_k8s_reader *rd, const cJSON *c, const char *path)
{
	const cJSON *env, *it;
	struct hb_buf v, list;
	char p[320];
	int i = 0, rc;

	snprintf(p, sizeof(p), "%s.env", path);
	if ((rc = hb_k8s_get_arr(rd, child(c, "env"), p, &env)) || !env)
		return rc;
	rd->env = env;
	hb_buf_init(&v, 0);
	hb_buf_init(&list, 0);
	cJSON_ArrayForEach (it, env) {
		const char *name, *value;

		snprintf(p, sizeof(p), "%s.env[%d]", path, i++);
		if (!cJSON_IsObject(it)) {
			rc = rd_err(rd, it, HB_EINVAL, p, "must be a mapping");
			break;
		}
		if ((rc = hb_k8s_get_str(rd, child(it, "name"), p, &name)) ||
		    (rc = hb_k8s_get_str(rd, child(it, "value"), p, &value)))
			break;
		if (!name || !*name || strchr(name, '=')) {
			rc = rd_err(rd, it, HB_EINVAL, p,
				    "name must be a non-empty string without "
				    "'='");
			break;
		}
		if (child(it, "valueFrom")) {
			if ((rc = hb_k8s_note(rd, it, p, 0, NULL,
					      "not carried: valueFrom "
					      "(secrets, ConfigMaps, fields) "
					      "has no sbatch equivalent")))
				break;
			continue;
		}
		hb_buf_reset(&v);
		if ((rc = hb_k8s_unescape(value ? value : "",
					  value ? strlen(value) : 0, &v)) ||
		    (rc = hb_jobspec_add_env(rd->spec, name, v.data))) {
			rc = RD_OOM(rd);
			break;
		}
		if (!list.len)
			rc = hb_buf_printf(&list, "%s.env: ", path);
		if (!rc && list.len < 1024)
			rc = hb_buf_printf(&list, "%s%s=%s",
					   list.data[list.len - 2] == ':' ? ""
									  : " ",
					   name, value ? value : "");
		if (rc) {
			rc = RD_OOM(rd);
			break;
		}
	}
	/* The list is one setting: one directive for all of it. */
	if (!rc && list.len) {
		struct hb_origin o = {HB_ORIGIN_MANIFEST, line_of(env)};
		struct hb_directive *d = hb_jobspec_add_directive(
		    rd->spec, HB_DIR_MANIFEST, o, list.data,
		    list.len > 1100 ? 1100 : list.len);

		if (!d) {
			rc = RD_OOM(rd);
		} else {
			hb_directive_add_field(d, HB_F_ENV);
			hb_jobspec_set_origin(rd->spec, HB_F_ENV, o);
		}
	}
	hb_buf_free(&v);
	hb_buf_free(&list);
	return rc;
}

int hb_k8s_read_container(struct hb_k8s_reader *rd, const cJSON *c,
			  const char *path)
{
	struct hb_jobspec *s = rd->spec;
	const char *img, *wd;
	char p[320];
	int rc;

	if (!c || !cJSON_IsObject(c))
		return rd_err(rd, c, HB_EINVAL, path, "must be a mapping");
	snprintf(p, sizeof(p), "%s.image", path);
	if ((rc = hb_k8s_get_str(rd, child(c, "image"), p, &img)))
		return rc;
	if (img && !rd->ours) {
		s->container = hb_jobspec_strdup(s, img);
		if (!s->container)
			return RD_OOM(rd);
		if ((rc = hb_k8s_set(rd, child(c, "image"), p, HB_F_CONTAINER,
				     "the image")))
			return rc;
	} else if (img &&
		   (rc = hb_k8s_note(rd, child(c, "image"), p, 0, NULL,
				     "chosen by the image map; not a job "
				     "setting")))
		return rc;
	snprintf(p, sizeof(p), "%s.workingDir", path);
	if ((rc = hb_k8s_get_str(rd, child(c, "workingDir"), p, &wd)))
		return rc;
	if (wd) {
		s->chdir = hb_jobspec_strdup(s, wd);
		if (!s->chdir)
			return RD_OOM(rd);
		if ((rc = hb_k8s_set(rd, child(c, "workingDir"), p, HB_F_CHDIR,
				     NULL)))
			return rc;
	}
	if ((rc = read_env(rd, c, path)))
		return rc;
	return read_script(rd, c, path);
}

/* ---------------------------------------------------------------- */
/* The annotation carry-over, read back                              */
/* ---------------------------------------------------------------- */

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
    {"interpreter", HB_F_SCRIPT, A_SPECIAL, 0},
    {"request", HB__F_COUNT, A_SPECIAL, 0},
    {"time-limit", HB_F_TIME_LIMIT, A_SPECIAL, 0},
    {"time-min", HB_F_TIME_MIN, A_SPECIAL, 0},
    {"requeue", HB_F_REQUEUE, A_SPECIAL, 0},
    {"array", HB_F_ARRAY, A_SPECIAL, 0},
    {"array-index", HB__F_COUNT, A_SPECIAL, 0},
    {"array-env", HB__F_COUNT, A_SPECIAL, 0},
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
	s->origin[f].kind = HB_ORIGIN_NONE;
	s->origin[f].line = 0;
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
			k = mem ? find_name(mem_kind_names,
					    NELEM(mem_kind_names), v,
					    (size_t)(colon - v))
				: find_name(gpu_scope_names,
					    NELEM(gpu_scope_names), v,
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
		else
			rc = HB_EINVAL;
	}
	if (rc == HB_ENOMEM)
		return RD_OOM(rd);
	if (rc)
		return rd_err(rd, a, HB_EINVAL, path,
			      "'%.100s' is not what hpcbridge writes here", v);
	return hb_k8s_note(rd, a, path, 1, &fl, NULL);
}

/* Take off the variables an array element's manifest added ("A,B"). */
static void drop_array_env(struct hb_jobspec *s, const char *names)
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
	struct hb_origin so;
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
					return rd_err(rd, a, HB_EINVAL, path,
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
	if (rd->ours)
		drop_array_env(s, cJSON_GetStringValue(child(
				      rd->annotations, ANN("array-env"))));
	/* A manifest hpcbridge made says what the job named; a name it
	 * made up from the file name is not the job's. */
	if (rd->ours && !child(rd->annotations, ANN("name")) && s->name) {
		s->name = NULL;
		unlist(s, HB_F_NAME);
	}
	before = s->ndirectives;
	if ((rc = hb_jobspec_scan_body(s, rd->err)))
		return rc;
	/* The body's lines are the script's, not the manifest's: place
	 * what the scan found at the script's field, and say which line. */
	so.kind = HB_ORIGIN_MANIFEST;
	so.line = s->origin[HB_F_SCRIPT].line;
	for (uint32_t i = before; i < s->ndirectives; i++) {
		struct hb_directive *d = &s->directives[i];
		char *t;

		if (d->origin.kind != HB_ORIGIN_FILE)
			continue;
		t = hb_arena_printf(&s->arena, "script line %u: %s",
				    d->origin.line, d->text);
		for (uint8_t k = 0; k < d->nfields; k++) {
			struct hb_origin *fo = &s->origin[d->fields[k]];

			if (fo->kind == d->origin.kind &&
			    fo->line == d->origin.line)
				*fo = so;
		}
		d->origin = so;
		if (t)
			d->text = t;
	}
	return 0;
}

int hb_k8s_runtime_configmap(const struct hb_config *cfg, cJSON **out,
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
