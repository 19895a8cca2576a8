/*
 * sbatch_emit.c - write a jobspec as an sbatch script that real sbatch
 * (22.05) accepts: the interpreter line, one #SBATCH line per field sbatch
 * can express, then the original body unchanged.
 *
 * Values are quoted so that sbatch's get_argument() reads them back
 * byte for byte.  The original header's #SBATCH/#SLURM/#PBS/#BSUB lines
 * are left out (sbatch would read them again); when the body still holds
 * #PBS or #BSUB lines further down, --ignore-pbs keeps sbatch from
 * translating them.  A PBS job gets a short block that defines the PBS_*
 * variables from Slurm's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/fidelity.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/units.h"

struct em {
	const struct hb_jobspec *spec;
	struct hb_buf *out;
	struct hb_report *rep;
	struct hb_err *err;
	const char *name;
	bool gpus_written;
};

static int nomem(struct em *e)
{
	return hb_err_set(e->err, HB_ENOMEM, e->name, 0, "out of memory");
}

static void fate(struct em *e, enum hb_field f, enum hb_fate_kind k,
		 const char *target, const char *note)
{
	if (e->rep)
		hb_report_fate(e->rep, f, k, target, note ? "%s" : NULL, note);
}

/* Can v be written on an #SBATCH line at all? */
static bool writable(const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

/* v as one argument that get_argument() reads back unchanged. */
static int put_value(struct hb_buf *b, const char *v)
{
	bool plain = *v != '\0';
	int rc;

	for (const char *p = v; *p && plain; p++)
		if (*p == ' ' || *p == '\t' || *p == '"' || *p == '\'' ||
		    *p == '\\' || *p == '#')
			plain = false;
	if (plain || *v == '\0')
		return hb_buf_puts(b, v);
	rc = hb_buf_putc(b, '"');
	for (const char *p = v; !rc && *p; p++) {
		if (*p == '"' || *p == '\\')
			rc = hb_buf_putc(b, '\\');
		if (!rc)
			rc = hb_buf_putc(b, *p);
	}
	if (!rc)
		rc = hb_buf_putc(b, '"');
	return rc;
}

/* "#SBATCH --opt=value" (value NULL: a flag), recorded as field f's fate. */
static int line(struct em *e, enum hb_field f, const char *opt,
		const char *value, enum hb_fate_kind k, const char *note)
{
	char target[64];
	int rc;

	if (value && !writable(value)) {
		fate(e, f, HB_FATE_DROPPED, NULL,
		     "holds a control character or line break, which an "
		     "#SBATCH line cannot carry");
		return hb_err_set(e->err, HB_EUNSUP, e->name, 0,
				  "%s: the value of %s cannot be written on an "
				  "#SBATCH line",
				  hb_field_name(f), opt);
	}
	rc = hb_buf_printf(e->out, "#SBATCH %s", opt);
	if (!rc && value) {
		rc = hb_buf_putc(e->out, '=');
		if (!rc)
			rc = put_value(e->out, value);
	}
	if (!rc)
		rc = hb_buf_putc(e->out, '\n');
	if (rc)
		return rc == HB_ENOMEM ? nomem(e)
				       : hb_err_set(e->err, rc, e->name, 0,
						    "output too large");
	snprintf(target, sizeof(target), "#SBATCH %s", opt);
	fate(e, f, k, target, note);
	return 0;
}

/*
 * Would sbatch take "opt=v" on its own?  Used for the values other
 * readers hand over as written (times, signals, mail types), which must
 * be in Slurm's syntax to be written at all.
 */
static bool sbatch_accepts(const char *opt, const char *v)
{
	struct hb_jobspec t;
	struct hb_err err = {0};
	struct hb_buf b;
	bool ok;

	hb_buf_init(&b, 0);
	if (hb_buf_printf(&b, "#!/bin/sh\n#SBATCH %s=", opt) ||
	    put_value(&b, v) || hb_buf_putc(&b, '\n')) {
		hb_buf_free(&b);
		return false;
	}
	hb_jobspec_init(&t, "check");
	ok = hb_sbatch_parse(b.data, b.len, "check", NULL, &t, &err) == 0;
	hb_jobspec_free(&t);
	hb_buf_free(&b);
	return ok;
}

static int str_line(struct em *e, enum hb_field f, const char *opt,
		    const char *v)
{
	if (!v)
		return 0;
	if (e->spec->source != HB_SRC_SBATCH &&
	    (f == HB_F_BEGIN || f == HB_F_DEADLINE || f == HB_F_SIGNAL ||
	     f == HB_F_MAIL_TYPE) &&
	    writable(v) && !sbatch_accepts(opt, v)) {
		fate(e, f, HB_FATE_DROPPED, NULL,
		     "the value is not in a form sbatch accepts");
		return 0;
	}
	return line(e, f, opt, v, HB_FATE_MAPPED, NULL);
}

/* The fabric: --hpcbridge-fabric when the job said it so; read from the
 * script's variables or its --constraint, those carry it again. */
static int fabric_line(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	const char *why = s->fabric_why ? s->fabric_why : "";

	if (!hb_jobspec_has(s, HB_F_FABRIC))
		return 0;
	if (!s->fabric_inferred && !strncmp(why, "--hpcbridge-fabric", 18))
		return str_line(e, HB_F_FABRIC, "--hpcbridge-fabric",
				hb_fabric_name((enum hb_fabric)s->fabric));
	if (e->rep)
		hb_report_fate(e->rep, HB_F_FABRIC, HB_FATE_CARRIED,
			       s->fabric_inferred ? "script body"
						  : "--constraint",
			       "%s, from %s",
			       hb_fabric_name((enum hb_fabric)s->fabric),
			       why);
	return 0;
}

static int num_line(struct em *e, enum hb_field f, const char *opt, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return line(e, f, opt, buf, HB_FATE_MAPPED, NULL);
}

/* MiB as sbatch writes sizes: the largest unit that divides it. */
static void size_str(uint64_t mb, char out[32])
{
	if (mb && mb % (1024 * 1024) == 0)
		snprintf(out, 32, "%lluT", (unsigned long long)(mb >> 20));
	else if (mb && mb % 1024 == 0)
		snprintf(out, 32, "%lluG", (unsigned long long)(mb >> 10));
	else
		snprintf(out, 32, "%llu", (unsigned long long)mb);
}

static int emit_nodes(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	char buf[48];

	if (s->nodes_min && s->ntasks && s->ntasks < s->nodes_min &&
	    !(s->gpu_scope == HB_GPU_PER_TASK && s->gpus)) {
		/* sbatch itself lowers the node count to the task count */
		snprintf(buf, sizeof(buf), "%u", s->ntasks);
		return line(e, HB_F_NODES, "--nodes", buf, HB_FATE_PARTIAL,
			    "fewer tasks than nodes: written as sbatch would "
			    "run it, one node per task");
	}

	if (!s->nodes_min) {
		/* sbatch -N 0 asks for no nodes at all: never write it */
		if (s->nodes_max || hb_jobspec_has(s, HB_F_NODES))
			fate(e, HB_F_NODES, HB_FATE_DROPPED, NULL,
			     "no minimum node count to write");
		return 0;
	}
	if (s->nodes_max && s->nodes_max != s->nodes_min) {
		snprintf(buf, sizeof(buf), "%u-%u", s->nodes_min, s->nodes_max);
	} else if (!s->nodes_max && s->nodelist) {
		/* the node list alone gives sbatch the count */
		fate(e, HB_F_NODES, HB_FATE_MAPPED, "#SBATCH --nodelist",
		     "sbatch counts the nodes of the node list");
		return 0;
	} else if (!s->nodes_max && s->ntasks && s->ntasks_per_node &&
		   s->nodes_min == ((uint64_t)s->ntasks + s->ntasks_per_node -
				    1) / s->ntasks_per_node) {
		/* as many nodes as the tasks need: Slurm's own count, and
		 * --nodes would fix a maximum the job did not ask for */
		fate(e, HB_F_NODES, HB_FATE_MAPPED, "#SBATCH --ntasks-per-node",
		     "Slurm allocates the nodes the tasks need");
		return 0;
	} else {
		snprintf(buf, sizeof(buf), "%u", s->nodes_min);
	}
	return line(e, HB_F_NODES, "--nodes", buf, HB_FATE_MAPPED, NULL);
}

static int emit_mem(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	struct hb_shape sh;
	char buf[32], note[128];

	size_str(s->mem_mb, buf);
	switch (s->mem_kind) {
	case HB_MEM_PER_NODE:
		return line(e, HB_F_MEM, "--mem", buf, HB_FATE_MAPPED, NULL);
	case HB_MEM_PER_CPU:
		return line(e, HB_F_MEM, "--mem-per-cpu", buf, HB_FATE_MAPPED,
			    NULL);
	case HB_MEM_PER_GPU:
		if (!e->gpus_written) {
			fate(e, HB_F_MEM, HB_FATE_DROPPED, NULL,
			     "memory per GPU without a GPU request that can "
			     "be written");
			return 0;
		}
		return line(e, HB_F_MEM, "--mem-per-gpu", buf, HB_FATE_MAPPED,
			    NULL);
	case HB_MEM_JOB:
	case HB_MEM_PER_PROCESS:
		if (hb_jobspec_shape(s, &sh) || !sh.mem_per_node_mb) {
			fate(e, HB_F_MEM, HB_FATE_DROPPED, NULL,
			     "the per-node memory cannot be computed");
			return 0;
		}
		size_str(sh.mem_per_node_mb, buf);
		snprintf(note, sizeof(note),
			 "%s memory written per node "
			 "(%llu MiB)",
			 s->mem_kind == HB_MEM_JOB ? "job-wide" : "per-process",
			 (unsigned long long)sh.mem_per_node_mb);
		return line(e, HB_F_MEM, "--mem", buf, HB_FATE_PARTIAL, note);
	}
	return 0;
}

/* "[gpu:][type:]count" for a GPU line, in b (no length limit). */
static int gpu_value(struct hb_buf *b, bool gres, const char *type,
		     uint64_t count)
{
	return hb_buf_printf(b, "%s%s%s%llu", gres ? "gpu:" : "",
			     type ? type : "", type ? ":" : "",
			     (unsigned long long)count);
}

static int emit_gpus(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	struct hb_buf b;
	const char *opt;
	int rc;

	if (s->gpu_scope == HB_GPU_NONE || !s->gpus)
		return 0;
	if (s->gpu_type &&
	    (!writable(s->gpu_type) || strpbrk(s->gpu_type, ":,"))) {
		fate(e, HB_F_GPUS, HB_FATE_DROPPED, NULL,
		     "the GPU type cannot be written as a GRES type");
		return 0;
	}
	switch (s->gpu_scope) {
	case HB_GPU_PER_NODE:
		opt = "--gres";
		break;
	case HB_GPU_PER_TASK:
		opt = "--gpus-per-task";
		break;
	case HB_GPU_PER_JOB:
	default:
		opt = "--gpus";
		break;
	}
	hb_buf_init(&b, 0);
	if (gpu_value(&b, s->gpu_scope == HB_GPU_PER_NODE, s->gpu_type,
		      s->gpus)) {
		hb_buf_free(&b);
		return nomem(e);
	}
	rc = line(e, HB_F_GPUS, opt, b.data, HB_FATE_MAPPED, NULL);
	hb_buf_free(&b);
	e->gpus_written = rc == 0;
	return rc;
}

static int emit_time(struct em *e, enum hb_field f, const char *opt,
		     uint64_t secs)
{
	char buf[32];

	if (!hb_jobspec_has(e->spec, f) && !secs)
		return 0;
	if (secs != HB_TIME_UNLIMITED && secs % 60)
		secs += 60 - secs % 60; /* sbatch counts whole minutes */
	hb_format_slurm_time(secs, buf);
	return line(e, f, opt, buf, HB_FATE_MAPPED, NULL);
}

/* The array as Slurm syntax: the spec as written when it came from
 * sbatch, else built from the ranges. */
static int emit_array(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	struct hb_buf b;
	int rc = 0;

	if (!s->narray_ranges && !s->array)
		return 0;
	if (s->array && s->source == HB_SRC_SBATCH)
		return line(e, HB_F_ARRAY, "--array", s->array, HB_FATE_MAPPED,
			    NULL);
	if (!s->narray_ranges) {
		fate(e, HB_F_ARRAY, HB_FATE_DROPPED, NULL,
		     "no array index could be read");
		return 0;
	}
	hb_buf_init(&b, 0);
	for (uint32_t i = 0; !rc && i < s->narray_ranges; i++) {
		const struct hb_range *r = &s->array_ranges[i];

		rc = hb_buf_printf(&b, "%s%u", i ? "," : "", r->start);
		if (!rc && r->end != r->start)
			rc = hb_buf_printf(&b, "-%u", r->end);
		if (!rc && r->end != r->start && r->step > 1)
			rc = hb_buf_printf(&b, ":%u", r->step);
	}
	if (!rc && s->array_max_running)
		rc = hb_buf_printf(&b, "%%%u", s->array_max_running);
	if (!rc)
		rc = line(e, HB_F_ARRAY, "--array", b.data, HB_FATE_MAPPED,
			  NULL);
	else
		rc = nomem(e);
	hb_buf_free(&b);
	return rc;
}

/* Did --hpcbridge-deadline (not --deadline) give the deadline? */
static bool deadline_is_ours(const struct hb_jobspec *s)
{
	for (uint32_t i = 0; i < s->ndirectives; i++) {
		const struct hb_directive *d = &s->directives[i];

		for (uint8_t k = 0; k < d->nfields; k++)
			if (d->fields[k] == HB_F_DEADLINE && d->text &&
			    strstr(d->text, "hpcbridge-"))
				return true;
	}
	return false;
}

/* --export for a job from elsewhere: the variables it sets. */
static int emit_env_export(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	struct hb_buf b;
	int rc = 0;
	uint32_t n = 0;

	hb_buf_init(&b, 0);
	rc = hb_buf_puts(&b, "ALL");
	for (uint32_t i = 0; !rc && i < s->nenv; i++) {
		const struct hb_env *v = &s->env[i];
		const char *val = v->value;
		bool q = val && (strchr(val, ',') || strchr(val, '"'));

		if (!writable(v->name) || (val && !writable(val)) ||
		    (q && strchr(val, '\'')) || strchr(v->name, ',') ||
		    strchr(v->name, '='))
			continue;
		if (val)
			rc = hb_buf_printf(&b, q ? ",'%s=%s'" : ",%s=%s",
					   v->name, val);
		else
			rc = hb_buf_printf(&b, ",%s", v->name);
		n++;
	}
	if (rc) {
		hb_buf_free(&b);
		return nomem(e);
	}
	if (n < s->nenv) {
		fate(e, HB_F_ENV, HB_FATE_PARTIAL, "#SBATCH --export",
		     "variables whose value cannot be written are left out");
	}
	if (n)
		rc = line(e, HB_F_ENV, "--export", b.data,
			  n < s->nenv ? HB_FATE_PARTIAL : HB_FATE_MAPPED,
			  n < s->nenv ? "variables whose value cannot be "
					"written are left out"
				      : NULL);
	hb_buf_free(&b);
	return rc;
}

static int emit_directives(struct em *e)
{
	const struct hb_jobspec *s = e->spec;
	int rc = 0;

#define TRY(x)                                                                 \
	do {                                                                   \
		if ((rc = (x)))                                                \
			return rc;                                             \
	} while (0)

	TRY(str_line(e, HB_F_NAME, "--job-name", s->name));
	if (s->user) {
		if (s->source == HB_SRC_SBATCH)
			TRY(str_line(e, HB_F_USER, "--uid", s->user));
		else
			fate(e, HB_F_USER, HB_FATE_DROPPED, NULL,
			     "sbatch --uid needs root; the job runs as the "
			     "user who submits it");
	}
	TRY(str_line(e, HB_F_ACCOUNT, "--account", s->account));
	TRY(str_line(e, HB_F_PARTITION, "--partition", s->partition));
	TRY(str_line(e, HB_F_QOS, "--qos", s->qos));
	TRY(str_line(e, HB_F_COMMENT, "--comment", s->comment));
	TRY(emit_nodes(e));
	if (s->ntasks && s->nodes_min && s->ntasks < s->nodes_min &&
	    s->gpu_scope == HB_GPU_PER_TASK && s->gpus &&
	    (uint64_t)s->ntasks * s->gpus <= UINT32_MAX) {
		/* fewer tasks than nodes: sbatch keeps that only when the
		 * task count comes from --gpus / --gpus-per-task */
		struct hb_buf b;

		hb_buf_init(&b, 0);
		if (gpu_value(&b, false, s->gpu_type,
			      (uint64_t)s->ntasks * s->gpus)) {
			hb_buf_free(&b);
			return nomem(e);
		}
		if (!s->gpu_type ||
		    (writable(s->gpu_type) && !strpbrk(s->gpu_type, ":,")))
			rc = line(e, HB_F_NTASKS, "--gpus", b.data,
				  HB_FATE_MAPPED,
				  "the task count follows from --gpus and "
				  "--gpus-per-task");
		hb_buf_free(&b);
		if (rc)
			return rc;
	} else if (s->ntasks) {
		TRY(num_line(e, HB_F_NTASKS, "--ntasks", s->ntasks));
	}
	if (s->ntasks_per_node)
		TRY(num_line(e, HB_F_NTASKS_PER_NODE, "--ntasks-per-node",
			     s->ntasks_per_node));
	if (s->cpus_per_task)
		TRY(num_line(e, HB_F_CPUS_PER_TASK, "--cpus-per-task",
			     s->cpus_per_task));
	TRY(emit_gpus(e));
	TRY(emit_mem(e));
	TRY(str_line(e, HB_F_LICENSES, "--licenses", s->licenses));
	if (s->exclusive)
		TRY(line(e, HB_F_EXCLUSIVE, "--exclusive", NULL, HB_FATE_MAPPED,
			 NULL));
	else if (hb_jobspec_has(s, HB_F_EXCLUSIVE))
		TRY(line(e, HB_F_EXCLUSIVE, "--oversubscribe", NULL,
			 HB_FATE_MAPPED, NULL));
	TRY(str_line(e, HB_F_CONSTRAINT, "--constraint", s->constraint));
	TRY(str_line(e, HB_F_NODELIST, "--nodelist", s->nodelist));
	TRY(str_line(e, HB_F_EXCLUDE, "--exclude", s->exclude));
	TRY(emit_time(e, HB_F_TIME_LIMIT, "--time", s->time_limit));
	TRY(emit_time(e, HB_F_TIME_MIN, "--time-min", s->time_min));
	TRY(str_line(e, HB_F_BEGIN, "--begin", s->begin));
	if (s->deadline)
		TRY(str_line(e, HB_F_DEADLINE,
			     deadline_is_ours(s) ? "--hpcbridge-deadline"
						 : "--deadline",
			     s->deadline));
	TRY(str_line(e, HB_F_SIGNAL, "--signal", s->signal));
	TRY(str_line(e, HB_F_OUTPUT, "--output", s->output));
	if (s->join_output && s->error)
		fate(e, HB_F_ERROR, HB_FATE_DROPPED, NULL,
		     "stderr is joined to stdout, as sbatch does when "
		     "--error is not given; the error path is not used");
	else if (s->join_output)
		fate(e, HB_F_ERROR, HB_FATE_MAPPED, "no --error line",
		     "sbatch joins stderr to stdout when --error is not "
		     "given");
	else
		TRY(str_line(e, HB_F_ERROR, "--error", s->error));
	TRY(str_line(e, HB_F_INPUT, "--input", s->input));
	TRY(str_line(e, HB_F_CHDIR, "--chdir", s->chdir));
	TRY(emit_array(e));
	TRY(str_line(e, HB_F_DEPENDENCY, "--dependency", s->dependency));
	TRY(str_line(e, HB_F_MAIL_TYPE, "--mail-type", s->mail_type));
	TRY(str_line(e, HB_F_MAIL_USER, "--mail-user", s->mail_user));
	if (s->requeue >= 0)
		TRY(line(e, HB_F_REQUEUE,
			 s->requeue ? "--requeue" : "--no-requeue", NULL,
			 HB_FATE_MAPPED, NULL));
	if (s->export_spec)
		TRY(str_line(e, HB_F_EXPORT, "--export", s->export_spec));
	else if (s->export_all)
		fate(e, HB_F_EXPORT, HB_FATE_MAPPED, NULL,
		     "sbatch exports the whole environment by default");
	if (s->nenv) {
		if (s->source == HB_SRC_SBATCH || s->export_spec)
			fate(e, HB_F_ENV, HB_FATE_MAPPED, "script body",
			     "set by --export or the body, both kept");
		else
			TRY(emit_env_export(e));
	}
	if (s->container)
		TRY(str_line(e, HB_F_CONTAINER, "--container", s->container));
	else if (hb_jobspec_has(s, HB_F_CONTAINER))
		fate(e, HB_F_CONTAINER, HB_FATE_MAPPED, "script body",
		     "the module loads run unchanged");
	TRY(str_line(e, HB_F_CHECKPOINT, "--hpcbridge-checkpoint",
		     s->checkpoint_dir));
	for (uint32_t i = 0; i < s->ndata; i++)
		TRY(str_line(e, HB_F_DATA, "--hpcbridge-data", s->data[i]));
	TRY(fabric_line(e));
	if (s->keep)
		fate(e, HB_F_KEEP, HB_FATE_DROPPED, NULL,
		     "sbatch writes output where --output says; PBS -k has "
		     "no equivalent");
	if (s->nchunks > 1)
		fate(e, HB_F_HETEROGENEOUS, HB_FATE_DROPPED, NULL,
		     "chunks of different shapes have no single sbatch form; "
		     "the node, task and memory totals are written");
	if (s->mpi || hb_jobspec_has(s, HB_F_MPI))
		fate(e, HB_F_MPI, HB_FATE_MAPPED, "script body",
		     "the launch lines run unchanged");
#undef TRY
	return 0;
}

/* ------------------------------------------------------------------ */
/* Body                                                                */
/* ------------------------------------------------------------------ */

static bool starts(const char *p, const char *e, const char *w)
{
	size_t n = strlen(w);

	return (size_t)(e - p) >= n && memcmp(p, w, n) == 0;
}

static bool header_directive(const char *p, const char *e)
{
	return starts(p, e, "#SBATCH") || starts(p, e, "#SLURM") ||
	       starts(p, e, "#PBS") || starts(p, e, "#BSUB");
}

static bool is_command(const char *p, const char *e)
{
	for (; p < e; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' ||
		    *p == '\f')
			continue;
		return *p != '#';
	}
	return false;
}

/* The body splits into kept header lines (comments, blanks) and the rest,
 * which starts at the first command line. */
struct body {
	const char *script, *end;
	const char *rest;   /* first command line, or end */
	bool wrapper_lines; /* #PBS/#BSUB lines in the rest */
};

static void split_body(const struct hb_jobspec *s, struct body *b)
{
	const char *p = s->script, *end = s->script + s->script_len;

	b->script = p;
	b->end = end;
	b->rest = end;
	b->wrapper_lines = false;
	if (p < end && starts(p, end, "#!")) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
	}
	b->script = p;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (!header_directive(p, le) && is_command(p, le)) {
			b->rest = p;
			break;
		}
		p = nl ? nl + 1 : end;
	}
	for (p = b->rest; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (starts(p, le, "#PBS") || starts(p, le, "#BSUB")) {
			b->wrapper_lines = true;
			break;
		}
		p = nl ? nl + 1 : end;
	}
}

/* The header's own comment lines, without its directives. */
static int put_header_comments(struct em *e, const struct body *b)
{
	for (const char *p = b->script; p < b->rest;) {
		const char *nl = memchr(p, '\n', (size_t)(b->rest - p));
		const char *le = nl ? nl + 1 : b->rest;

		if (!header_directive(p, le) &&
		    hb_buf_append(e->out, p, (size_t)(le - p)))
			return nomem(e);
		p = le;
	}
	return 0;
}

enum shell { SH_NONE, SH_POSIX, SH_CSH };

static enum shell shell_of(const char *interp)
{
	static const char *const posix[] = {"sh",   "bash", "ksh", "zsh",
					    "dash", "ash",  "mksh"};
	const char *p = interp, *w, *we;
	char word[32];
	size_t n;

	if (!p)
		return SH_POSIX; /* /bin/bash by default */
	/* the program, or the first argument of env */
	for (int pass = 0; pass < 2; pass++) {
		while (*p == ' ' || *p == '\t')
			p++;
		w = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		we = p;
		for (const char *q = w; q < we; q++)
			if (*q == '/')
				w = q + 1;
		n = (size_t)(we - w);
		if (n >= sizeof(word))
			return SH_NONE;
		memcpy(word, w, n);
		word[n] = '\0';
		if (pass == 0 && strcmp(word, "env") == 0)
			continue;
		break;
	}
	for (size_t i = 0; i < sizeof(posix) / sizeof(posix[0]); i++)
		if (strcmp(word, posix[i]) == 0)
			return SH_POSIX;
	if (strcmp(word, "csh") == 0 || strcmp(word, "tcsh") == 0)
		return SH_CSH;
	return SH_NONE;
}

/* PBS_NODEFILE lists each node once per task on it, as Torque does;
 * SLURM_TASKS_PER_NODE reads like "4(x2),3". */
static const char nodefile_awk[] =
    "awk -v t=\"$SLURM_TASKS_PER_NODE\" 'BEGIN { n = split(t, a, \",\"); "
    "k = 0; for (i = 1; i <= n; i++) { c = a[i]; r = 1; "
    "if (match(c, /\\(x[0-9]+\\)/)) { r = substr(c, RSTART + 2, "
    "RLENGTH - 3); c = substr(c, 1, RSTART - 1) } "
    "for (j = 0; j < r; j++) m[k++] = c + 0 } } "
    "{ x = (NR - 1 < k) ? m[NR - 1] : 1; if (x < 1) x = 1; "
    "for (j = 0; j < x; j++) print }'";

static const char pbs_sh[] =
    "# PBS variables, from Slurm's\n"
    "export PBS_ENVIRONMENT=PBS_BATCH\n"
    "export PBS_O_WORKDIR=\"${SLURM_SUBMIT_DIR:-$PWD}\"\n"
    "export PBS_O_HOST=\"${SLURM_SUBMIT_HOST:-}\"\n"
    "export PBS_JOBID=\"${SLURM_JOB_ID:-}\"\n"
    "export PBS_JOBNAME=\"${SLURM_JOB_NAME:-}\"\n"
    "export PBS_QUEUE=\"${SLURM_JOB_PARTITION:-}\"\n"
    "export PBS_O_QUEUE=\"$PBS_QUEUE\"\n"
    "export PBS_ARRAYID=\"${SLURM_ARRAY_TASK_ID:-}\"\n"
    "export PBS_ARRAY_INDEX=\"$PBS_ARRAYID\"\n"
    "export PBS_NUM_NODES=\"${SLURM_JOB_NUM_NODES:-1}\"\n"
    "PBS_NUM_PPN=\"${SLURM_TASKS_PER_NODE:-1}\"\n"
    "export PBS_NUM_PPN=\"${PBS_NUM_PPN%%%%[(,]*}\"\n"
    "export PBS_NODEFILE=\"${TMPDIR:-/tmp}/pbs_nodefile."
    "${SLURM_JOB_ID:-$$}\"\n"
    "scontrol show hostnames \"${SLURM_JOB_NODELIST:-$(hostname)}\" | "
    "%s > \"$PBS_NODEFILE\"\n"
    "export PBS_NP=\"$(($(wc -l < \"$PBS_NODEFILE\")))\"\n"
    "export PBS_TASKNUM=1\n";

static const char pbs_csh[] =
    "# PBS variables, from Slurm's\n"
    "setenv PBS_ENVIRONMENT PBS_BATCH\n"
    "setenv PBS_O_WORKDIR \"$SLURM_SUBMIT_DIR\"\n"
    "setenv PBS_JOBID \"$SLURM_JOB_ID\"\n"
    "setenv PBS_JOBNAME \"$SLURM_JOB_NAME\"\n"
    "setenv PBS_QUEUE \"$SLURM_JOB_PARTITION\"\n"
    "setenv PBS_O_QUEUE \"$SLURM_JOB_PARTITION\"\n"
    "setenv PBS_ARRAYID \"\"\n"
    "if ($?SLURM_ARRAY_TASK_ID) setenv PBS_ARRAYID "
    "\"$SLURM_ARRAY_TASK_ID\"\n"
    "setenv PBS_ARRAY_INDEX \"$PBS_ARRAYID\"\n"
    "setenv PBS_NUM_NODES \"$SLURM_JOB_NUM_NODES\"\n"
    "setenv PBS_NUM_PPN `echo \"$SLURM_TASKS_PER_NODE\" | "
    "sed 's/[(,].*//'`\n"
    "setenv PBS_NODEFILE \"/tmp/pbs_nodefile.$SLURM_JOB_ID\"\n"
    "scontrol show hostnames \"$SLURM_JOB_NODELIST\" | %s > "
    "\"$PBS_NODEFILE\"\n"
    "setenv PBS_NP `wc -l < \"$PBS_NODEFILE\"`\n"
    "setenv PBS_TASKNUM 1\n";

static int put_pbs_block(struct em *e, enum shell sh)
{
	int rc;

	if (sh == SH_NONE) {
		if (e->rep)
			hb_report_warn(e->rep,
				       "the PBS_* variables are not "
				       "defined: the interpreter is not a "
				       "shell");
		return 0;
	}
	rc = hb_buf_printf(e->out, sh == SH_CSH ? pbs_csh : pbs_sh,
			   nodefile_awk);
	return rc ? nomem(e) : 0;
}

int hb_sbatch_emit(const struct hb_jobspec *spec, struct hb_buf *out,
		   struct hb_report *rep, struct hb_err *err)
{
	struct em e = {spec, out, rep, err, NULL, false};
	size_t start = out->len;
	const char *interp = spec->interpreter;
	struct body b = {0};
	int rc;

	e.name = spec->source_name ? spec->source_name : "-";
	if (interp && (!writable(interp) || !*interp)) {
		rc = hb_err_set(err, HB_EUNSUP, e.name, 0,
				"the interpreter line cannot be written");
		goto fail;
	}
	rc = hb_buf_printf(out, "#!%s\n", interp ? interp : "/bin/bash");
	if (rc) {
		rc = nomem(&e);
		goto fail;
	}
	if (spec->script)
		split_body(spec, &b);
	rc = emit_directives(&e);
	if (rc)
		goto fail;
	if (b.wrapper_lines && hb_buf_puts(out, "#SBATCH --ignore-pbs\n")) {
		rc = nomem(&e);
		goto fail;
	}
	if (spec->script) {
		rc = put_header_comments(&e, &b);
		if (rc)
			goto fail;
		fate(&e, HB_F_SCRIPT, HB_FATE_MAPPED, "script body",
		     "the body runs unchanged");
	}
	if (spec->source == HB_SRC_PBS) {
		rc = put_pbs_block(&e, shell_of(interp));
		if (rc)
			goto fail;
	}
	if (spec->script) {
		if (hb_buf_append(out, b.rest, (size_t)(b.end - b.rest))) {
			rc = nomem(&e);
			goto fail;
		}
	} else {
		for (uint32_t i = 0; i < spec->nmpi_lines; i++) {
			if (!writable(spec->mpi_lines[i]) ||
			    hb_buf_printf(out, "%s\n", spec->mpi_lines[i])) {
				rc = hb_err_set(err, HB_EUNSUP, e.name, 0,
						"a launch line cannot be "
						"written");
				goto fail;
			}
		}
	}
	return 0;
fail:
	out->len = start;
	if (out->data)
		out->data[start] = '\0';
	return rc ? rc : HB_EINVAL;
}
