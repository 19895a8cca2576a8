/*
 * k8s_shape.c - the plan's steps that size the job: the array check,
 * the worker-shape check, per-node resources (requests = limits) and
 * the fates of the shape's fields, the request as the job gave it
 * (hpcbridge.io/request), the time limit and the array element.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/units.h"
#include "translators/k8s/k8s_int.h"

/* Largest time limit written as activeDeadlineSeconds (about 31700
 * years; Slurm's own limit is far below). */
#define DEADLINE_MAX 1000000000000ULL
/* Largest memory per node (MiB) written as a quantity: 2^63 bytes. */
#define MEM_MAX_MB (1ULL << 43)

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

/*
 * The directive that set field f (its text), for error messages; the
 * field's name when no directive did.
 */
static const char *field_text(const struct hb_jobspec *spec, enum hb_field f)
{
	for (uint32_t i = spec->ndirectives; i-- > 0;) {
		const struct hb_directive *d = &spec->directives[i];

		if (d->prov.kind != spec->prov[f].kind ||
		    d->prov.line != spec->prov[f].line)
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

	if (spec->prov[f].kind == HB_PROV_FILE ||
	    spec->prov[f].kind == HB_PROV_MANIFEST)
		line = spec->prov[f].line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(err, code, spec->source_name, line, "%s: %s",
			  field_text(spec, f), msg);
}

const char *const hb_k8s_mem_kind_names[HB_MEM_PER_PROCESS + 1] = {
    [HB_MEM_NONE] = "none",	  [HB_MEM_PER_NODE] = "per-node",
    [HB_MEM_PER_CPU] = "per-cpu", [HB_MEM_PER_GPU] = "per-gpu",
    [HB_MEM_JOB] = "job",	  [HB_MEM_PER_PROCESS] = "per-process",
};

const char *const hb_k8s_gpu_scope_names[HB_GPU_PER_TASK + 1] = {
    [HB_GPU_NONE] = "none",
    [HB_GPU_PER_JOB] = "per-job",
    [HB_GPU_PER_NODE] = "per-node",
    [HB_GPU_PER_TASK] = "per-task",
};

/* The array check: which element this is, and the cap on elements. */
int hb_k8s_check_array(struct hb_k8s_ctx *c, int64_t index)
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
int hb_k8s_check_shape(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_shape *sh = &c->plan->shape;
	const struct hb_k8s_opts *cfg = c->cfg;

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
static int request_annotation(struct hb_k8s_ctx *c)
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
	if (s->mem_kind != HB_MEM_NONE &&
	    s->mem_kind < NELEM(hb_k8s_mem_kind_names)) {
		n += put_text(buf + n, "mem=");
		n += put_text(buf + n, hb_k8s_mem_kind_names[s->mem_kind]);
		buf[n++] = ':';
		n += put_dec(buf + n, s->mem_mb);
		buf[n++] = ' ';
	}
	if (s->gpu_scope != HB_GPU_NONE &&
	    s->gpu_scope < NELEM(hb_k8s_gpu_scope_names)) {
		n += put_text(buf + n, "gpus=");
		n += put_text(buf + n, hb_k8s_gpu_scope_names[s->gpu_scope]);
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
int hb_k8s_plan_resources(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_shape *sh = &c->plan->shape;
	const struct hb_k8s_opts *cfg = c->cfg;
	const struct hb_k8s_paths *p = c->paths;
	const char *gres;
	struct hb_k8s_res *r = &c->plan->resources;
	const char *mem = r->mem;
	uint64_t mem_mb = sh->mem_per_node_mb;
	int rc;

	if (sh->gpus_per_node && (rc = hb_k8s_gpu_key(c, &gres)))
		return rc;
	if (!sh->gpus_per_node)
		gres = cfg->gpu_resource ? cfg->gpu_resource
					 : "nvidia.com/gpu";

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
	if (hb_k8s_is_set(s, HB_F_NODES)) {
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
	if (hb_k8s_is_set(s, HB_F_NTASKS_PER_NODE))
		hb_report_fate(c->rep, HB_F_NTASKS_PER_NODE, HB_FATE_MAPPED,
			       p->slots, "%u", sh->tasks_per_node);
	if (hb_k8s_is_set(s, HB_F_NTASKS)) {
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
	if (hb_k8s_is_set(s, HB_F_CPUS_PER_TASK))
		hb_report_fate(c->rep, HB_F_CPUS_PER_TASK, HB_FATE_MAPPED,
			       hb_k8s_at(c, p->resources, "limits.cpu"),
			       "%u CPUs per worker = %u tasks x %u CPUs",
			       sh->cpus_per_node, sh->tasks_per_node,
			       sh->cpus_per_task);
	if (hb_k8s_is_set(s, HB_F_MEM)) {
		const char *t = hb_k8s_at(c, p->resources, "limits.memory");
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
			    v, hb_k8s_mem_kind_names[s->mem_kind]);
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
	if (hb_k8s_is_set(s, HB_F_GPUS) && s->gpu_scope != HB_GPU_NONE) {
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

int hb_k8s_plan_time_limit(struct hb_k8s_ctx *c)
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

int hb_k8s_plan_array(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	struct hb_buf b;
	char idx[24];
	int rc = 0;

	if (!hb_k8s_is_set(s, HB_F_ARRAY))
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
