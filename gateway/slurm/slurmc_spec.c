/*
 * slurmc_spec.c - a jobspec onto a Slurm batch request: one row per
 * jobspec field saying which job_desc_msg_t member carries it, and the
 * function that carries it or refuses the job naming the field.  Also
 * the readers of --signal and --mail-type text that fill_desc() and the
 * request check share.
 *
 * libslurm's slurm_submit_batch_job() reads no #SBATCH line: whatever a
 * script's directives say reaches Slurm only through the request, so a
 * field without a carrier here would be lost without a word.  rows[]
 * has one entry per enum hb_field (a static assert counts them and the
 * unit test walks them); a field set in the jobspec that Slurm cannot
 * take refuses the job instead.
 */
#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/slurm/slurmc_int.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/timefmt.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------ --signal, --mail-type */

static const struct {
	const char *name;
	int num;
} signals[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },	  { "QUIT", SIGQUIT },
	{ "ABRT", SIGABRT }, { "KILL", SIGKILL }, { "ALRM", SIGALRM },
	{ "TERM", SIGTERM }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
	{ "URG", SIGURG },   { "CONT", SIGCONT }, { "STOP", SIGSTOP },
	{ "TSTP", SIGTSTP }, { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },
	{ "XCPU", SIGXCPU },
};

/* A decimal number from 0 to max, all of [p, end). */
static bool dec(const char *p, const char *end, unsigned long max,
		unsigned long *out)
{
	unsigned long n = 0;

	if (p == end)
		return false;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (unsigned long)(*p - '0');
		if (n > max)
			return false;
	}
	*out = n;
	return true;
}

bool hb_slurmc_parse_signal(const char *s, uint16_t *sig, uint16_t *secs,
			    uint16_t *flags)
{
	const char *at, *end;
	unsigned long n = 60;
	size_t len;

	if (!s || !*s)
		return false;
	*flags = 0;
	if ((s[0] == 'B' || s[0] == 'R') && s[1] == ':') {
		*flags = s[0] == 'B' ? KILL_JOB_BATCH : KILL_JOB_RESV;
		s += 2;
	} else if (s[0] == 'R' && s[1] == 'B' && s[2] == ':') {
		*flags = KILL_JOB_BATCH | KILL_JOB_RESV;
		s += 3;
	}
	at = strchr(s, '@');
	end = at ? at : s + strlen(s);
	if (at && !dec(at + 1, at + strlen(at), 0xffff, &n))
		return false;
	*secs = (uint16_t)n;
	if (end - s > 3 && !strncmp(s, "SIG", 3))
		s += 3;
	len = (size_t)(end - s);
	if (dec(s, end, 0xff, &n)) {
		if (n == 0)
			return false;
		*sig = (uint16_t)n;
		return true;
	}
	for (size_t i = 0; i < NELEM(signals); i++)
		if (strlen(signals[i].name) == len &&
		    !strncmp(signals[i].name, s, len)) {
			*sig = (uint16_t)signals[i].num;
			return true;
		}
	return false;
}

static const struct {
	const char *name;
	uint16_t bits;
} mail_types[] = {
	{ "NONE", 0 },
	{ "BEGIN", MAIL_JOB_BEGIN },
	{ "END", MAIL_JOB_END },
	{ "FAIL", MAIL_JOB_FAIL },
	{ "REQUEUE", MAIL_JOB_REQUEUE },
	{ "ALL", MAIL_JOB_BEGIN | MAIL_JOB_END | MAIL_JOB_FAIL |
			 MAIL_JOB_REQUEUE | MAIL_JOB_STAGE_OUT },
	{ "INVALID_DEPEND", MAIL_INVALID_DEPEND },
	{ "STAGE_OUT", MAIL_JOB_STAGE_OUT },
	{ "TIME_LIMIT", MAIL_JOB_TIME100 },
	{ "TIME_LIMIT_90", MAIL_JOB_TIME90 },
	{ "TIME_LIMIT_80", MAIL_JOB_TIME80 },
	{ "TIME_LIMIT_50", MAIL_JOB_TIME50 },
	{ "ARRAY_TASKS", MAIL_ARRAY_TASKS },
};

bool hb_slurmc_parse_mail_type(const char *s, uint16_t *bits)
{
	*bits = 0;
	if (!s || !*s)
		return false;
	for (;;) {
		size_t n = strcspn(s, ","), i;

		for (i = 0; i < NELEM(mail_types); i++)
			if (strlen(mail_types[i].name) == n &&
			    !strncasecmp(mail_types[i].name, s, n))
				break;
		if (i == NELEM(mail_types))
			return false;
		*bits |= mail_types[i].bits;
		if (!s[n])
			return true;
		s += n + 1;
	}
}

/* ------------------------------------------------------- the mapping */

struct ctx {
	struct hb_jobspec *s;
	struct hb_slurmc_submit *r;
	int64_t now;
	int32_t utc_offset;
	struct hb_err *err;
	uint8_t kind;	/* the fate the carrier gives (default mapped) */
	char note[192]; /* its note, "" for none */
	bool env_done;
};

struct row;
typedef int (*carry_fn)(struct ctx *c, const struct row *w);

/* One jobspec field: what carries it and how.  soff/roff: a string
 * copied from the jobspec member at soff to the request member at roff
 * (carry_str). */
struct row {
	uint8_t field; /* enum hb_field; the row's index too */
	const char *target;
	carry_fn carry; /* NULL: the script itself carries it */
	size_t soff, roff;
};

static int refuse(struct ctx *c, const struct row *w, int code,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Refuse the job: "field NAME: WHY: cannot be submitted to Slurm". */
static int refuse(struct ctx *c, const struct row *w, int code,
		  const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return hb_err_set(c->err, code, c->s->source_name, 0,
			  "field %s: %s: cannot be submitted to Slurm",
			  hb_field_name((enum hb_field)w->field), why);
}

static void note(struct ctx *c, uint8_t kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(struct ctx *c, uint8_t kind, const char *fmt, ...)
{
	va_list ap;

	c->kind = kind;
	va_start(ap, fmt);
	vsnprintf(c->note, sizeof(c->note), fmt, ap);
	va_end(ap);
}

#define S_STR(c, off) (*(const char *const *)((const char *)(c)->s + (off)))
#define R_STR(c, off) (*(const char **)((char *)(c)->r + (off)))

static int carry_str(struct ctx *c, const struct row *w)
{
	const char *v = S_STR(c, w->soff);

	if (v)
		R_STR(c, w->roff) = v;
	return 0;
}

/* Seconds to whole minutes, rounding up; 0 stays "not given". */
static uint32_t minutes(uint64_t s)
{
	if (s == HB_TIME_UNLIMITED)
		return HB_SLURMC_INFINITE;
	if (s / 60 >= NO_VAL - 1)
		return NO_VAL - 1;
	return (uint32_t)((s + 59) / 60);
}

static int carry_user(struct ctx *c, const struct row *w)
{
	struct passwd pw, *res = NULL;
	char buf[4096], *end;
	unsigned long uid;

	if (!c->s->user)
		return 0;
	errno = 0;
	uid = strtoul(c->s->user, &end, 10);
	if (errno || *end || end == c->s->user) {
		if (getpwnam_r(c->s->user, &pw, buf, sizeof(buf), &res) ||
		    !res)
			return refuse(c, w, HB_EINVAL, "no such user '%s'",
				      c->s->user);
		uid = pw.pw_uid;
	}
	if (!c->r->as_user || uid != c->r->uid)
		return refuse(c, w, HB_EINVAL,
			      "the job asks to run as '%s', but is submitted "
			      "as uid %u",
			      c->s->user,
			      c->r->as_user ? c->r->uid : (unsigned)getuid());
	return 0;
}

static int carry_nodes(struct ctx *c, const struct row *w)
{
	const struct hb_jobspec *s = c->s;

	if (s->nodes_min >= NO_VAL || s->nodes_max >= NO_VAL)
		return refuse(c, w, HB_ERANGE, "%u-%u is out of range",
			      s->nodes_min, s->nodes_max);
	if (s->nodes_max && s->nodes_min > s->nodes_max)
		return refuse(c, w, HB_EINVAL, "%u-%u: more than the most",
			      s->nodes_min, s->nodes_max);
	c->r->nodes = s->nodes_min;
	if (s->nodes_max > s->nodes_min)
		c->r->nodes_max = s->nodes_max;
	return 0;
}

static int carry_ntasks(struct ctx *c, const struct row *w)
{
	if (c->s->ntasks >= NO_VAL)
		return refuse(c, w, HB_ERANGE, "%u is out of range",
			      c->s->ntasks);
	c->r->ntasks = c->s->ntasks;
	return 0;
}

static int carry_u16(struct ctx *c, const struct row *w, uint32_t v,
		     uint16_t *to)
{
	if (v >= NO_VAL16)
		return refuse(c, w, HB_ERANGE, "%u is out of Slurm's range",
			      v);
	*to = (uint16_t)v;
	return 0;
}

static int carry_tpn(struct ctx *c, const struct row *w)
{
	return carry_u16(c, w, c->s->ntasks_per_node, &c->r->ntasks_per_node);
}

static int carry_cpt(struct ctx *c, const struct row *w)
{
	return carry_u16(c, w, c->s->cpus_per_task, &c->r->cpus_per_task);
}

static int carry_mem(struct ctx *c, const struct row *w)
{
	const struct hb_jobspec *s = c->s;
	struct hb_shape sh;

	if (s->mem_mb >= MEM_PER_CPU)
		return refuse(c, w, HB_ERANGE, "%llu MB is out of range",
			      (unsigned long long)s->mem_mb);
	switch (s->mem_kind) {
	case HB_MEM_NONE:
		return 0;
	case HB_MEM_PER_NODE:
		c->r->mem_per_node_mb = s->mem_mb;
		c->r->mem_whole_node = s->mem_mb == 0;
		return 0;
	case HB_MEM_PER_CPU:
		c->r->mem_per_cpu_mb = s->mem_mb;
		return 0;
	case HB_MEM_PER_GPU:
		c->r->mem_per_gpu_mb = s->mem_mb;
		return 0;
	default: /* PBS job-wide or per-process memory: per node */
		if (hb_jobspec_shape(s, &sh) || !sh.mem_per_node_mb)
			return refuse(c, w, HB_EINVAL,
				      "job-wide or per-process memory with "
				      "no node count to share it over");
		c->r->mem_per_node_mb = sh.mem_per_node_mb;
		note(c, HB_FATE_PARTIAL, "%llu MB per node",
		     (unsigned long long)sh.mem_per_node_mb);
		return 0;
	}
}

static int carry_gpus(struct ctx *c, const struct row *w)
{
	struct hb_jobspec *s = c->s;
	char *g;

	if (!s->gpus)
		return 0;
	if (s->gpu_type && strpbrk(s->gpu_type, ",:"))
		return refuse(c, w, HB_EINVAL, "GPU type '%s'", s->gpu_type);
	g = s->gpu_type ? hb_arena_printf(&s->arena, "gpu:%s:%u", s->gpu_type,
					  s->gpus)
			: hb_arena_printf(&s->arena, "gpu:%u", s->gpus);
	if (!g)
		return hb_err_set(c->err, HB_ENOMEM, NULL, 0, "out of memory");
	switch (s->gpu_scope) {
	case HB_GPU_PER_NODE:
		c->r->gres = g;
		break;
	case HB_GPU_PER_JOB:
		c->r->gres_per_job = g;
		note(c, HB_FATE_MAPPED, "tres_per_job");
		break;
	case HB_GPU_PER_TASK:
		c->r->gres_per_task = g;
		note(c, HB_FATE_MAPPED, "tres_per_task");
		break;
	default:
		return refuse(c, w, HB_EINVAL, "%u GPUs with no scope",
			      s->gpus);
	}
	return 0;
}

static int carry_exclusive(struct ctx *c, const struct row *w)
{
	(void)w;
	c->r->exclusive = c->s->exclusive;
	return 0;
}

static int carry_time(struct ctx *c, const struct row *w)
{
	if (w->field == HB_F_TIME_LIMIT)
		c->r->time_limit = minutes(c->s->time_limit);
	else
		c->r->time_min = minutes(c->s->time_min);
	return 0;
}

static int carry_date(struct ctx *c, const struct row *w)
{
	const char *v = S_STR(c, w->soff);
	int64_t t;

	if (!v)
		return 0;
	if (hb_time_slurm_date(v, c->now, c->utc_offset, &t) || t <= 0)
		return refuse(c, w, HB_EINVAL, "'%s' is not a time Slurm "
			      "reads", v);
	if (w->field == HB_F_BEGIN)
		c->r->begin_time = (uint64_t)t;
	else
		c->r->deadline = (uint64_t)t;
	return 0;
}

static int carry_signal(struct ctx *c, const struct row *w)
{
	uint16_t a, b, f;

	if (c->s->signal && !hb_slurmc_parse_signal(c->s->signal, &a, &b, &f))
		return refuse(c, w, HB_EINVAL,
			      "'%s' is not [{R|B}:]SIG[@seconds]",
			      c->s->signal);
	return carry_str(c, w);
}

static int carry_mail_type(struct ctx *c, const struct row *w)
{
	uint16_t bits;

	if (c->s->mail_type &&
	    !hb_slurmc_parse_mail_type(c->s->mail_type, &bits))
		return refuse(c, w, HB_EINVAL, "'%s' has a type Slurm does "
			      "not know", c->s->mail_type);
	return carry_str(c, w);
}

static int carry_error(struct ctx *c, const struct row *w)
{
	if (c->s->join_output) { /* PBS -j oe: Slurm's default */
		c->r->error = NULL;
		note(c, HB_FATE_MAPPED, "joined to std_out");
		return 0;
	}
	return carry_str(c, w);
}

static int carry_keep(struct ctx *c, const struct row *w)
{
	const char *k = c->s->keep;

	if (!k)
		return 0;
	/* n (nothing kept) and d (written straight to its path) are what
	 * Slurm does; keeping on the execution host is not */
	if (k[strspn(k, "nd")])
		return refuse(c, w, HB_EINVAL, "-k %s keeps output on the "
			      "execution host", k);
	note(c, HB_FATE_MAPPED, "Slurm writes output to its final path");
	return 0;
}

static int carry_array(struct ctx *c, const struct row *w)
{
	struct hb_jobspec *s = c->s;
	struct hb_buf b;
	int rc = 0;

	if (!s->array && !s->narray_ranges)
		return 0;
	if (!s->narray_ranges) {
		c->r->array = s->array;
		return 0;
	}
	/* Slurm syntax from the ranges (PBS -J "1-10:2" reads alike, but
	 * is written from the ranges all the same) */
	hb_buf_init(&b, 64 * 1024);
	for (uint32_t i = 0; !rc && i < s->narray_ranges; i++) {
		const struct hb_range *g = &s->array_ranges[i];

		if (i)
			rc = hb_buf_putc(&b, ',');
		if (!rc && g->start == g->end)
			rc = hb_buf_printf(&b, "%u", g->start);
		else if (!rc)
			rc = hb_buf_printf(&b, g->step > 1 ? "%u-%u:%u"
							   : "%u-%u",
					   g->start, g->end, g->step);
	}
	if (!rc && s->array_max_running)
		rc = hb_buf_printf(&b, "%%%u", s->array_max_running);
	if (!rc && !(c->r->array = hb_jobspec_strdup(s, b.data)))
		rc = HB_ENOMEM;
	hb_buf_free(&b);
	if (rc)
		return refuse(c, w, rc, "'%s' does not fit", s->array);
	return 0;
}

static int carry_requeue(struct ctx *c, const struct row *w)
{
	(void)w;
	if (c->s->requeue >= 0)
		c->r->requeue = c->s->requeue ? HB_SLURMC_REQUEUE_YES
					      : HB_SLURMC_REQUEUE_NO;
	return 0;
}

/* Index of variable name (len n) in env, or -1. */
static long env_find(const char **env, size_t n_env, const char *name,
		     size_t n)
{
	for (size_t i = 0; i < n_env; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return (long)i;
	return -1;
}

/* Whether --export's list names variable e ("NAME=..."). */
static bool export_names(const char *spec, const char *e)
{
	size_t n = strcspn(e, "=");

	for (const char *p = spec; *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && !strncmp(p, e, n))
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

/* The job's environment: the caller's, cut to what --export keeps (NONE:
 * only SLURM_* and HPCBRIDGE_*; a list: those and the names listed; ALL
 * or none: all), then the job's own NAME=value variables (from --export
 * and the script) set over it. */
static int carry_env(struct ctx *c, const struct row *w)
{
	struct hb_jobspec *s = c->s;
	const char *ex = s->export_spec;
	const char *const *base = c->r->env;
	size_t nb = 0, n = 0;
	bool all = !ex || !strncmp(ex, "ALL", 3) || s->export_all;
	const char **env;

	(void)w;
	if (c->env_done)
		return 0;
	c->env_done = true;
	if (all && !s->nenv)
		return 0;
	while (base && base[nb])
		nb++;
	env = hb_arena_alloc(&s->arena, (nb + s->nenv + 1) * sizeof(*env));
	if (!env)
		return hb_err_set(c->err, HB_ENOMEM, NULL, 0, "out of memory");
	for (size_t i = 0; i < nb; i++)
		if (all || !strncmp(base[i], "SLURM_", 6) ||
		    !strncmp(base[i], "HPCBRIDGE_", 10) ||
		    (strcmp(ex, "NONE") && export_names(ex, base[i])))
			env[n++] = base[i];
	for (uint32_t i = 0; i < s->nenv; i++) {
		const struct hb_env *v = &s->env[i];
		size_t k = strlen(v->name);
		long at = env_find(env, n, v->name, k), b;
		const char *e;

		if (!v->value) { /* pass-through: the caller's, if any */
			b = env_find((const char **)base, nb, v->name, k);
			if (at < 0 && b >= 0)
				env[n++] = base[b];
			continue;
		}
		if (!(e = hb_arena_printf(&s->arena, "%s=%s", v->name,
					  v->value)))
			return hb_err_set(c->err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		if (at >= 0)
			env[at] = e;
		else
			env[n++] = e;
	}
	env[n] = NULL;
	c->r->env = env;
	return 0;
}

static int carry_container(struct ctx *c, const struct row *w)
{
	const char *v = c->s->container;

	if (!v)
		return 0;
	if (v[0] != '/')
		return refuse(c, w, HB_EINVAL,
			      "'%s' is an image; Slurm runs an OCI bundle "
			      "(a directory path)",
			      v);
	c->r->container = v;
	return 0;
}

static int carry_data(struct ctx *c, const struct row *w)
{
	for (uint32_t i = 0; i < c->s->ndata; i++)
		if (c->s->data[i][0] != '/')
			return refuse(c, w, HB_EINVAL,
				      "'%s' would need staging in, which a "
				      "Slurm job does not do",
				      c->s->data[i]);
	if (c->s->ndata)
		note(c, HB_FATE_MAPPED, "read in place by the job");
	return 0;
}

static int carry_checkpoint(struct ctx *c, const struct row *w)
{
	const char *v = c->s->checkpoint_dir;

	if (v && v[0] != '/')
		return refuse(c, w, HB_EINVAL, "'%s' is not a path", v);
	if (v)
		note(c, HB_FATE_MAPPED, "written in place by the job");
	return 0;
}

static int carry_chunks(struct ctx *c, const struct row *w)
{
	if (c->s->nchunks > 1)
		return refuse(c, w, HB_EINVAL,
			      "%u select chunks of different shapes make a "
			      "heterogeneous job",
			      c->s->nchunks);
	return 0;
}

#define SOFF(m) offsetof(struct hb_jobspec, m)
#define ROFF(m) offsetof(struct hb_slurmc_submit, m)
#define STR(f, t, sm, rm) [f] = { f, t, carry_str, SOFF(sm), ROFF(rm) }
#define FN(f, t, fn) [f] = { f, t, fn, 0, 0 }
#define FNS(f, t, fn, sm, rm) [f] = { f, t, fn, SOFF(sm), ROFF(rm) }

/* Every jobspec field and the job_desc_msg_t member that carries it
 * ("refused" where Slurm has none: the job is refused when it is set). */
static const struct row rows[] = {
	STR(HB_F_NAME, "name", name, name),
	FN(HB_F_USER, "user_id (the submitting user)", carry_user),
	STR(HB_F_ACCOUNT, "account", account, account),
	STR(HB_F_PARTITION, "partition", partition, partition),
	STR(HB_F_QOS, "qos", qos, qos),
	STR(HB_F_COMMENT, "comment", comment, comment),
	FN(HB_F_NODES, "min_nodes, max_nodes", carry_nodes),
	FN(HB_F_NTASKS, "num_tasks", carry_ntasks),
	FN(HB_F_NTASKS_PER_NODE, "ntasks_per_node", carry_tpn),
	FN(HB_F_CPUS_PER_TASK, "cpus_per_task", carry_cpt),
	FN(HB_F_MEM, "pn_min_memory, mem_per_tres", carry_mem),
	FN(HB_F_GPUS, "tres_per_node, tres_per_job, tres_per_task",
	   carry_gpus),
	STR(HB_F_LICENSES, "licenses", licenses, licenses),
	FN(HB_F_EXCLUSIVE, "shared (JOB_SHARED_NONE)", carry_exclusive),
	STR(HB_F_CONSTRAINT, "features", constraint, constraint),
	STR(HB_F_NODELIST, "req_nodes", nodelist, nodelist),
	STR(HB_F_EXCLUDE, "exc_nodes", exclude, exclude),
	FN(HB_F_TIME_LIMIT, "time_limit", carry_time),
	FN(HB_F_TIME_MIN, "time_min", carry_time),
	FNS(HB_F_BEGIN, "begin_time", carry_date, begin, name),
	FNS(HB_F_DEADLINE, "deadline", carry_date, deadline, name),
	FNS(HB_F_SIGNAL, "warn_signal, warn_time, warn_flags", carry_signal,
	    signal, signal),
	STR(HB_F_OUTPUT, "std_out", output, output),
	FNS(HB_F_ERROR, "std_err", carry_error, error, error),
	STR(HB_F_INPUT, "std_in", input, input),
	STR(HB_F_CHDIR, "work_dir", chdir, work_dir),
	FN(HB_F_ARRAY, "array_inx", carry_array),
	STR(HB_F_DEPENDENCY, "dependency", dependency, dependency),
	FNS(HB_F_MAIL_TYPE, "mail_type", carry_mail_type, mail_type,
	    mail_type),
	STR(HB_F_MAIL_USER, "mail_user", mail_user, mail_user),
	FN(HB_F_REQUEUE, "requeue", carry_requeue),
	FN(HB_F_EXPORT, "environment", carry_env),
	FN(HB_F_ENV, "environment", carry_env),
	FN(HB_F_MPI, "script (its launch lines)", NULL),
	FN(HB_F_CONTAINER, "container", carry_container),
	FN(HB_F_CHECKPOINT, "the nodes' file system", carry_checkpoint),
	FN(HB_F_DATA, "the nodes' file system", carry_data),
	FN(HB_F_SCRIPT, "script", NULL),
	FN(HB_F_KEEP, "std_out, std_err", carry_keep),
	FN(HB_F_HETEROGENEOUS, "refused", carry_chunks),
	FN(HB_F_FABRIC, "features, script (its variables)", NULL),
};

_Static_assert(NELEM(rows) == HB__F_COUNT,
	       "every jobspec field needs a row in rows[] (slurmc_spec.c)");

const char *hb_slurmc_field_target(int f)
{
	if (f < 0 || f >= HB__F_COUNT || rows[f].field != f)
		return NULL;
	return rows[f].target;
}

int hb_slurmc_from_jobspec(struct hb_jobspec *spec,
			   struct hb_slurmc_submit *req, int64_t now,
			   int32_t utc_offset, struct hb_report *rep,
			   struct hb_err *err)
{
	struct ctx c = { .s = spec, .r = req, .now = now,
			 .utc_offset = utc_offset, .err = err };
	int rc;

	if (!spec || !req)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_from_jobspec: no jobspec or "
				  "request");
	for (size_t i = 0; i < NELEM(rows); i++) {
		const struct row *w = &rows[i];
		bool set = hb_jobspec_has(spec, (enum hb_field)i);

		c.kind = HB_FATE_MAPPED;
		c.note[0] = '\0';
		rc = w->field != i ? hb_err_set(err, HB_EINVAL, NULL, 0,
						"no row for field %zu", i)
		     : w->carry ? w->carry(&c, w)
				: 0;
		if (rc) {
			if (rep && set)
				hb_report_fate(rep, (enum hb_field)i,
					       HB_FATE_DROPPED, NULL, "%s",
					       err ? err->msg : "refused");
			return rc;
		}
		if (rep && set)
			hb_report_fate(rep, (enum hb_field)i, c.kind,
				       w->target, c.note[0] ? "%s" : NULL,
				       c.note);
	}
	return 0;
}
