/*
 * pbs.c - PBS job scripts, Torque and PBS Pro dialects, into a jobspec.
 *
 * What is read, and how (qsub semantics):
 *
 *  - Directives are lines that start with "#PBS" at column 0 (or the
 *    prefix given with -C on the command line; an empty prefix reads
 *    none).  Scanning stops at the first line that is neither blank nor a
 *    comment.  A directive's text is split like a shell word list: quotes
 *    and backslashes work, and an unquoted '#' at the start of a word
 *    begins a trailing comment.  Several options may share a line and
 *    combine as getopt does ("-hV", "-lwalltime=10").
 *  - qsub options given as argv are read after the script and override it
 *    field by field; -l resources override resource by resource.
 *  - The script must be text: no NUL, no control bytes but tab and
 *    newline, no DOS line breaks, at most HB_SCRIPT_MAX bytes, not empty.
 *    A script without "#!" is fine: qsub runs it with the user's shell.
 *
 * Resource decisions (see docs/translation.md for the full table):
 *
 *  - Torque nodes=: '+'-joined specs are summed; each node is sized for
 *    the largest spec (ppn, gpus) and the exact task total is kept in
 *    ntasks.  A spec that starts with a name is a host (nodelist); other
 *    words are properties (constraint, '&'-joined).  "#excl" suffix:
 *    exclusive.
 *  - PBS Pro select=: one chunk is one node.  mpiprocs defaults to 1 when
 *    ncpus > 0 (0 otherwise) and ncpus to 1 (PBS's usual default_chunk).
 *    Tasks per node = mpiprocs, CPUs per task = ompthreads when given, else
 *    ncpus / mpiprocs.  Several chunks: nodes and tasks are summed, the
 *    per-node fields are the largest over the chunks, and spec->chunks
 *    keeps the exact shape.  place=pack puts every chunk on one node.
 *  - walltime: a bare number is seconds.  Sizes default to bytes and are
 *    stored in MiB rounded up.  Torque mem= is job-wide (HB_MEM_JOB),
 *    pmem= per process; when both are given the one that needs more
 *    memory per node is kept.  Chunk mem is per node.
 *  - Unknown resources are site-defined in PBS: noted and dropped.
 *  - -W depend=: after/afterok/afternotok/afterany (and Torque's *array
 *    forms) become Slurm's; server suffixes are stripped and "123[]" is
 *    the whole array.  before*, on, syncwith and synccount are errors:
 *    they constrain other jobs, and Slurm (whose sbatch would pass them on
 *    only to have slurmctld reject the job) has no twin.
 *  - -P project (PBS Pro) becomes the account when no -A is given, else
 *    the comment "project=NAME".
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/pbs.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/units.h"

#define NO_DIR UINT32_MAX

/* Caps that keep hostile input linear: items in one list value. */
#define MAX_ITEMS      1024
#define MAX_NAME       255
#define MAX_ENV	       4096
#define MAX_DIRECTIVES 65536

/*
 * The bounds the sbatch parser applies (docs/internals/sbatch.md, Limits),
 * so that a PBS job asks for nothing an sbatch script could not: counts of
 * nodes, tasks and CPUs fit an int (sbatch's parse_int() and
 * verify_node_count()), and so do the job's tasks and CPUs in all; GPU
 * counts, per node and in all, fit 32 bits; a time stays below INT_MAX
 * seconds once rounded up to whole minutes (time_str2mins()); array
 * indices run from 0 to 1000 (Slurm's default MaxArraySize); memory is at
 * most LLONG_MAX MiB.
 */
#define MAX_COUNT	((uint32_t)INT_MAX)
#define MAX_GPUS	UINT32_MAX
#define MAX_TIME	((uint64_t)INT_MAX - 59)
#define MAX_ARRAY_INDEX 1000
#define MAX_MEM_MIB	((uint64_t)LLONG_MAX)

/* A list of distinct short strings (features, hosts), in arena memory. */
struct strset {
	const char **v;
	uint32_t n;
};

/* Torque -l nodes=, as summed up. */
struct tnodes {
	uint32_t nodes, ppn, gpus, cpn;
	uint64_t ntasks;
	bool ppn_set, mixed, excl;
	struct strset feat, hosts;
};

/* PBS Pro -l select=, as summed up. */
struct pselect {
	struct hb_chunk *chunks;
	uint32_t n;
	struct strset cons, hosts;
	const char *gpu_type;
};

enum { ARR_NONE, ARR_FREE, ARR_PACK, ARR_SCATTER, ARR_VSCATTER };
enum { JOIN_N, JOIN_OE, JOIN_EO };

struct ctx {
	struct hb_jobspec *spec;
	struct hb_err *err;
	const char *name;
	bool cli;
	uint32_t loc; /* line, or argv index */
	uint32_t cur; /* the directive being read */

	/* -l resources: the directive that gave each (NO_DIR: none). */
	uint32_t d_nodes, d_select, d_place, d_wall, d_minwall, d_maxwall;
	uint32_t d_mem, d_pmem, d_ncpus, d_procs, d_ngpus, d_naccess;
	uint32_t d_feature, d_gres, d_host;
	struct tnodes tn;
	struct pselect ps;
	int place_arr;
	bool place_excl, naccess_excl;
	uint64_t wall, minwall, maxwall, mem_mb, pmem_mb;
	uint32_t ncpus, procs, ngpus, gres_gpus;
	struct strset feature, host;
	const char *gres_lic;

	/* Options settled at the end. */
	uint32_t d_join, d_out, d_errp, d_project, d_wx, d_stagein;
	uint32_t d_export; /* the last -v or -V */
	int join;
	const char *project, *stagein;
	struct hb_buf exports;
	uint32_t nexports;
	bool w_max_run; /* -W max_run_subjobs gave the array limit */

	/* The note note_at() grows: its directive, buffer, length, room. */
	uint32_t note_dir;
	char *note_buf;
	size_t note_len, note_cap;
};

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!is_digit(*s))
			return 0;
	return 1;
}

/* A name fit for a host, a feature or a constraint word. */
static int is_word(const char *s, size_t n)
{
	if (n == 0 || n > MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      is_digit(ch) || ch == '_' || ch == '-' || ch == '.'))
			return 0;
	}
	return 1;
}

static int is_env_name(const char *s, size_t n)
{
	if (n == 0 || is_digit(s[0]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      is_digit(ch) || ch == '_'))
			return 0;
	}
	return 1;
}

static int fail(struct ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct ctx *c, int code, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->cli)
		return hb_err_set(c->err, code, NULL, 0,
				  "command line argv[%u]: %s", c->loc, msg);
	return hb_err_set(c->err, code, c->name, c->loc, "%s", msg);
}

static int oom(struct ctx *c)
{
	return fail(c, HB_ENOMEM, "out of memory");
}

static char *dup(struct ctx *c, const char *s)
{
	return hb_jobspec_strdup(c->spec, s);
}

static char *dupn(struct ctx *c, const char *s, size_t n)
{
	return hb_jobspec_strndup(c->spec, s, n);
}

static struct hb_directive *dir_at(struct ctx *c, uint32_t d)
{
	return &c->spec->directives[d];
}

/* Where directive d was written, for notes: "line 7" or "argv[2]". */
static const char *where(struct ctx *c, uint32_t d, char buf[48])
{
	const struct hb_directive *x = dir_at(c, d);

	if (x->origin.kind == HB_ORIGIN_CLI)
		snprintf(buf, 48, "argv[%u]", x->origin.line);
	else
		snprintf(buf, 48, "line %u", x->origin.line);
	return buf;
}

/* Append a remark to directive d's note. */
static int note_at(struct ctx *c, uint32_t d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int note_at(struct ctx *c, uint32_t d, const char *fmt, ...)
{
	struct hb_directive *x = dir_at(c, d);
	char msg[512];
	size_t ml, len, cap = 0;
	char *n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ml = strlen(msg);
	if (!x->note) {
		n = dupn(c, msg, ml);
		if (!n)
			return oom(c);
		x->note = n;
		return 0;
	}
	/* Remarks on one directive (one per dropped item of a long -l
	 * list) grow one buffer with room to spare: copying the whole note
	 * for each made them quadratic. */
	if (d == c->note_dir && x->note == c->note_buf) {
		len = c->note_len;
		cap = c->note_cap;
	} else {
		len = strlen(x->note);
	}
	if (len + 2 + ml + 1 > cap) {
		cap = 2 * (len + 2 + ml + 1);
		n = hb_arena_alloc(&c->spec->arena, cap);
		if (!n)
			return oom(c);
		memcpy(n, x->note, len);
		x->note = n;
		c->note_dir = d;
		c->note_buf = n;
		c->note_cap = cap;
	}
	memcpy(c->note_buf + len, "; ", 2);
	memcpy(c->note_buf + len + 2, msg, ml + 1);
	c->note_len = len + 2 + ml;
	return 0;
}

#define NOTE(c, ...) note_at((c), (c)->cur, __VA_ARGS__)

/* Record that directive d set field f (its origin becomes d's). */
static void set_at(struct ctx *c, uint32_t d, enum hb_field f)
{
	hb_jobspec_set_origin(c->spec, f, dir_at(c, d)->origin);
	hb_directive_add_field(dir_at(c, d), f);
}

#define SET(c, f) set_at((c), (c)->cur, (f))

static void drop_field(struct ctx *c, uint32_t d, enum hb_field f)
{
	struct hb_directive *x = dir_at(c, d);

	for (uint8_t i = 0; i < x->nfields; i++) {
		if (x->fields[i] != f)
			continue;
		memmove(&x->fields[i], &x->fields[i + 1], x->nfields - i - 1);
		x->nfields--;
		return;
	}
}

static int new_dir(struct ctx *c, const char *text, size_t len)
{
	struct hb_origin o;
	struct hb_directive *d;

	if (c->spec->ndirectives >= MAX_DIRECTIVES)
		return fail(c, HB_ETOOBIG, "more than %d directives",
			    MAX_DIRECTIVES);
	o.kind = c->cli ? HB_ORIGIN_CLI : HB_ORIGIN_FILE;
	o.line = c->loc;
	d = hb_jobspec_add_directive(c->spec, HB_DIR_PBS, o, text, len);
	if (!d)
		return oom(c);
	c->cur = (uint32_t)(d - c->spec->directives);
	return 0;
}

/* Errors from here on name directive d's place (settling). */
static void at_dir(struct ctx *c, uint32_t d)
{
	c->cli = dir_at(c, d)->origin.kind == HB_ORIGIN_CLI;
	c->loc = dir_at(c, d)->origin.line;
}

/* The current directive replaces resource slot *slot. */
static int take_slot(struct ctx *c, uint32_t *slot)
{
	char w[48];
	int rc = 0;

	if (*slot != NO_DIR && *slot != c->cur)
		rc = note_at(c, *slot, "overridden by %s", where(c, c->cur, w));
	*slot = c->cur;
	return rc;
}

static int set_add(struct ctx *c, struct strset *s, const char *w, size_t n)
{
	const char *copy;

	for (uint32_t i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == n && memcmp(s->v[i], w, n) == 0)
			return 0;
	if (s->n >= MAX_ITEMS)
		return fail(c, HB_ETOOBIG, "more than %d items in one list",
			    MAX_ITEMS);
	if (!s->v) {
		s->v =
		    hb_arena_alloc(&c->spec->arena, MAX_ITEMS * sizeof(*s->v));
		if (!s->v)
			return oom(c);
	}
	copy = dupn(c, w, n);
	if (!copy)
		return oom(c);
	s->v[s->n++] = copy;
	return 0;
}

/* Join a set with sep into an arena string; NULL for an empty set. */
static int set_join(struct ctx *c, const struct strset *s, char sep, char **out)
{
	size_t len = 0;
	char *p;

	*out = NULL;
	if (!s->n)
		return 0;
	for (uint32_t i = 0; i < s->n; i++)
		len += strlen(s->v[i]) + 1;
	p = hb_arena_alloc(&c->spec->arena, len);
	if (!p)
		return oom(c);
	*out = p;
	for (uint32_t i = 0; i < s->n; i++) {
		size_t n = strlen(s->v[i]);

		if (i)
			*p++ = sep;
		memcpy(p, s->v[i], n);
		p += n;
	}
	*p = '\0';
	return 0;
}

/* Numbers, sizes and times, with errors naming what and the value. */
static int num32(struct ctx *c, const char *what, const char *v, uint32_t min,
		 uint32_t max, uint32_t *out)
{
	int rc = hb_parse_u32(v, out);

	if (rc == HB_ERANGE || (!rc && *out > max))
		return fail(c, HB_ERANGE,
			    "%s: number '%s' is too large (at most %u, as "
			    "sbatch)",
			    what, v, max);
	if (rc)
		return fail(c, HB_EINVAL, "%s: malformed number '%s'", what, v);
	if (*out < min)
		return fail(c, HB_EINVAL, "%s: '%s' must be at least %u", what,
			    v, min);
	return 0;
}

/* A product or a sum of counts against its bound. */
static int total_ok(struct ctx *c, const char *what, uint64_t n, uint64_t max)
{
	if (n <= max)
		return 0;
	return fail(c, HB_ERANGE,
		    "%s: %llu in all is too many (at most %llu, as sbatch)",
		    what, (unsigned long long)n, (unsigned long long)max);
}

static int size_mib(struct ctx *c, const char *what, const char *v,
		    uint64_t *mib)
{
	uint64_t bytes;
	int rc = hb_parse_pbs_size(v, &bytes);

	if (rc == HB_ERANGE)
		return fail(c, HB_ERANGE, "%s: size '%s' overflows", what, v);
	if (rc)
		return fail(
		    c, HB_EINVAL,
		    "%s: malformed size '%s' (a number with an optional "
		    "b, w, kb, mb, gb, tb or pb suffix)",
		    what, v);
	*mib = hb_bytes_to_mib(bytes);
	return 0;
}

static int pbs_time(struct ctx *c, const char *what, const char *v,
		    uint64_t *sec)
{
	int rc = hb_parse_pbs_time(v, sec);

	if (rc == HB_ERANGE || (!rc && *sec > MAX_TIME))
		return fail(c, HB_ERANGE,
			    "%s: time '%s' is too large (at most %llu "
			    "seconds, as sbatch)",
			    what, v, (unsigned long long)MAX_TIME);
	if (rc)
		return fail(c, HB_EINVAL,
			    "%s: malformed time '%s' (seconds, or "
			    "[[HH:]MM:]SS)",
			    what, v);
	return 0;
}

/* "[host:]path": drop the host, as the job writes where it runs. */
static const char *strip_host(const char *v, const char **host_end)
{
	const char *colon = strchr(v, ':');

	*host_end = NULL;
	if (!colon || colon == v)
		return v;
	for (const char *p = v; p < colon; p++)
		if (*p == '/')
			return v;
	*host_end = colon;
	return colon + 1;
}

/* ------------------------------------------------------------------ */
/* -l resources                                                         */

static int gpu_mode(const char *w)
{
	static const char *const modes[] = {
	    "exclusive_process",
	    "exclusive_thread",
	    "exclusive",
	    "default",
	    "shared",
	    "reseterr",
	    NULL,
	};

	for (int i = 0; modes[i]; i++)
		if (strcasecmp(w, modes[i]) == 0)
			return 1;
	return 0;
}

/* One '+'-separated Torque node spec, in place (s is writable). */
static int node_spec(struct ctx *c, char *s, struct tnodes *t, bool first,
		     uint32_t *shape)
{
	uint32_t count = 1, ppn = 0, gpus = 0, cpn = 0;
	char *save = NULL, *e;
	int idx = 0, rc;

	if (!*s)
		return fail(c, HB_EINVAL, "-l nodes: empty node spec");
	for (e = s;; idx++) {
		char *colon = strchr(e, ':');
		char *eq;

		if (colon)
			*colon = '\0';
		save = colon ? colon + 1 : NULL;
		if (!*e)
			return fail(c, HB_EINVAL,
				    "-l nodes: empty element in '%s'", s);
		eq = strchr(e, '=');
		if (idx == 0 && all_digits(e)) {
			rc = num32(c, "-l nodes", e, 1, MAX_COUNT, &count);
			if (rc)
				return rc;
		} else if (idx == 0) {
			if (!is_word(e, strlen(e)))
				return fail(c, HB_EINVAL,
					    "-l nodes: malformed host name "
					    "'%s'",
					    e);
			rc = set_add(c, &t->hosts, e, strlen(e));
			if (rc)
				return rc;
		} else if (eq) {
			*eq = '\0';
			if (strcasecmp(e, "ppn") == 0) {
				rc = num32(c, "-l nodes: ppn", eq + 1, 1,
					   MAX_COUNT, &ppn);
				t->ppn_set = true;
			} else if (strcasecmp(e, "gpus") == 0) {
				rc = num32(c, "-l nodes: gpus", eq + 1, 0,
					   MAX_GPUS, &gpus);
			} else if (strcasecmp(e, "ncpus") == 0 ||
				   strcasecmp(e, "cpp") == 0) {
				rc = num32(c, "-l nodes: ncpus", eq + 1, 1,
					   MAX_COUNT, &cpn);
			} else {
				rc = NOTE(c,
					  "node attribute %s=%s is not "
					  "carried",
					  e, eq + 1);
			}
			if (rc)
				return rc;
		} else if (gpu_mode(e)) {
			rc = NOTE(c, "GPU mode '%s' is not carried", e);
			if (rc)
				return rc;
		} else {
			if (!is_word(e, strlen(e)))
				return fail(c, HB_EINVAL,
					    "-l nodes: malformed property "
					    "'%s'",
					    e);
			rc = set_add(c, &t->feat, e, strlen(e));
			if (rc)
				return rc;
		}
		if (!save)
			break;
		e = save;
	}
	rc = total_ok(c, "-l nodes: nodes", (uint64_t)t->nodes + count,
		      MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l nodes: tasks",
			      t->ntasks + (uint64_t)count * (ppn ? ppn : 1),
			      MAX_COUNT);
	if (rc)
		return rc;
	t->nodes += count;
	t->ntasks += (uint64_t)count * (ppn ? ppn : 1);
	if (!first && (shape[0] != ppn || shape[1] != gpus || shape[2] != cpn))
		t->mixed = true;
	shape[0] = ppn;
	shape[1] = gpus;
	shape[2] = cpn;
	if (ppn > t->ppn)
		t->ppn = ppn;
	if (gpus > t->gpus)
		t->gpus = gpus;
	if (cpn > t->cpn)
		t->cpn = cpn;
	return 0;
}

static int r_nodes(struct ctx *c, const char *v)
{
	struct tnodes t;
	char *s = dup(c, v), *hash, *spec;
	uint32_t shape[3] = {0, 0, 0}, nspecs = 0;
	int rc;

	memset(&t, 0, sizeof(t));
	if (!s)
		return oom(c);
	hash = strchr(s, '#');
	if (hash)
		*hash++ = '\0';
	for (spec = s; spec; nspecs++) {
		char *plus = strchr(spec, '+');

		if (plus)
			*plus = '\0';
		if (nspecs >= MAX_ITEMS)
			return fail(c, HB_ETOOBIG,
				    "-l nodes: more than %d node specs",
				    MAX_ITEMS);
		rc = node_spec(c, spec, &t, nspecs == 0, shape);
		if (rc)
			return rc;
		spec = plus ? plus + 1 : NULL;
	}
	while (hash) {
		char *next = strchr(hash, '#');

		if (next)
			*next++ = '\0';
		if (strcasecmp(hash, "excl") == 0) {
			t.excl = true;
		} else if (strcasecmp(hash, "shared") == 0) {
			rc = NOTE(c, "#shared: nodes may be shared (the "
				     "default)");
			if (rc)
				return rc;
		} else if (is_word(hash, strlen(hash))) {
			rc = set_add(c, &t.feat, hash, strlen(hash));
			if (rc)
				return rc;
		} else {
			return fail(c, HB_EINVAL,
				    "-l nodes: malformed suffix '#%s'", hash);
		}
		hash = next;
	}
	/* Every node is sized for the largest spec. */
	rc = total_ok(c, "-l nodes: tasks (ppn x nodes)",
		      (uint64_t)t.nodes * (t.ppn ? t.ppn : 1), MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l nodes: CPUs (ncpus x nodes)",
			      (uint64_t)t.nodes * t.cpn, MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l nodes: GPUs (gpus x nodes)",
			      (uint64_t)t.nodes * t.gpus, MAX_GPUS);
	if (rc)
		return rc;
	if (t.mixed) {
		rc = NOTE(c,
			  "node specs differ: %u nodes in all, each sized "
			  "for the largest spec (ppn=%u, gpus=%u); %llu "
			  "tasks in all",
			  t.nodes, t.ppn ? t.ppn : 1, t.gpus,
			  (unsigned long long)t.ntasks);
		if (rc)
			return rc;
	}
	rc = take_slot(c, &c->d_nodes);
	c->tn = t;
	return rc;
}

/* One resource inside a select chunk. */
static int chunk_res(struct ctx *c, struct pselect *p, struct hb_chunk *k,
		     char *e, bool *ncpus_set, bool *mpi_set)
{
	char *eq = strchr(e, '=');
	const char *v;
	uint64_t mib = 0;
	uint32_t n;
	int rc;

	if (!eq)
		return fail(c, HB_EINVAL,
			    "-l select: chunk resource '%s' has no value", e);
	*eq = '\0';
	v = eq + 1;
	if (!*v)
		return fail(c, HB_EINVAL, "-l select: %s has no value", e);
	if (strcasecmp(e, "ncpus") == 0) {
		*ncpus_set = true;
		return num32(c, "-l select: ncpus", v, 0, MAX_COUNT,
			     &k->ncpus);
	}
	if (strcasecmp(e, "mpiprocs") == 0) {
		*mpi_set = true;
		return num32(c, "-l select: mpiprocs", v, 0, MAX_COUNT,
			     &k->mpiprocs);
	}
	if (strcasecmp(e, "ompthreads") == 0)
		return num32(c, "-l select: ompthreads", v, 1, MAX_COUNT,
			     &k->ompthreads);
	if (strcasecmp(e, "ngpus") == 0 ||
	    strcasecmp(e, "naccelerators") == 0) {
		rc = num32(c, "-l select: ngpus", v, 0, MAX_GPUS, &n);
		if (!rc && n > k->ngpus)
			k->ngpus = n;
		return rc;
	}
	if (strcasecmp(e, "accelerator") == 0) {
		if (strcasecmp(v, "true") == 0 && k->ngpus == 0)
			k->ngpus = 1;
		return 0;
	}
	if (strcasecmp(e, "mem") == 0) {
		rc = size_mib(c, "-l select: mem", v, &mib);
		if (!rc)
			k->mem_mb = mib;
		return rc;
	}
	if (strcasecmp(e, "vmem") == 0) {
		rc = size_mib(c, "-l select: vmem", v, &mib);
		return rc ? rc
			  : NOTE(c,
				 "vmem=%s: virtual memory has no "
				 "equivalent; dropped",
				 v);
	}
	if (strcasecmp(e, "host") == 0 || strcasecmp(e, "vnode") == 0) {
		if (!is_word(v, strlen(v)))
			return fail(c, HB_EINVAL,
				    "-l select: malformed %s '%s'", e, v);
		return set_add(c, &p->hosts, v, strlen(v));
	}
	if (strcasecmp(e, "accelerator_model") == 0 ||
	    strcasecmp(e, "gpu_model") == 0 || strcasecmp(e, "gpu_type") == 0) {
		if (!is_word(v, strlen(v)))
			return NOTE(c, "%s=%s: not a GPU type; dropped", e, v);
		p->gpu_type = dup(c, v);
		return p->gpu_type ? 0 : oom(c);
	}
	if (strcasecmp(e, "model") == 0 || strcasecmp(e, "arch") == 0 ||
	    strcasecmp(e, "cpu_type") == 0) {
		if (!is_word(v, strlen(v)))
			return NOTE(c,
				    "%s=%s: not usable as a constraint; "
				    "dropped",
				    e, v);
		return set_add(c, &p->cons, v, strlen(v));
	}
	if (strcasecmp(v, "true") == 0 && is_word(e, strlen(e)))
		return set_add(c, &p->cons, e, strlen(e));
	if (strcasecmp(v, "false") == 0)
		return NOTE(c,
			    "%s=false: a constraint cannot exclude a "
			    "feature; dropped",
			    e);
	return NOTE(c, "site resource %s=%s is not carried", e, v);
}

/* What the chunks of one select= ask for in all. */
struct ptotals {
	uint64_t nodes, tasks, cpus, gpus;
};

/* Add chunk k to the totals, within sbatch's bounds: the CPUs a chunk's
 * node needs are its ncpus, or its tasks x threads when more. */
static int chunk_totals(struct ctx *c, const struct hb_chunk *k,
			struct ptotals *t)
{
	uint64_t per = (uint64_t)(k->mpiprocs ? k->mpiprocs : 1) *
		       (k->ompthreads ? k->ompthreads : 1);
	int rc;

	if (per < k->ncpus)
		per = k->ncpus;
	t->nodes += k->count;
	t->tasks += (uint64_t)k->count * k->mpiprocs;
	t->cpus += (uint64_t)k->count * per;
	t->gpus += (uint64_t)k->count * k->ngpus;
	rc = total_ok(c, "-l select: mpiprocs x ompthreads", per, MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: nodes (chunk counts)", t->nodes,
			      MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: tasks (count x mpiprocs)",
			      t->tasks, MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: CPUs (count x ncpus)", t->cpus,
			      MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: GPUs (count x ngpus)", t->gpus,
			      MAX_GPUS);
	return rc;
}

static int r_select(struct ctx *c, const char *v)
{
	struct pselect p;
	struct ptotals tot = {0, 0, 0, 0};
	char *s = dup(c, v), *chunk;
	uint32_t n = 1;
	int rc;

	memset(&p, 0, sizeof(p));
	if (!s)
		return oom(c);
	for (const char *q = s; *q; q++)
		if (*q == '+' && ++n > MAX_ITEMS)
			return fail(c, HB_ETOOBIG,
				    "-l select: more than %d chunks",
				    MAX_ITEMS);
	p.chunks = hb_arena_alloc(&c->spec->arena, n * sizeof(*p.chunks));
	if (!p.chunks)
		return oom(c);
	for (chunk = s; chunk;) {
		char *plus = strchr(chunk, '+'), *e, *next;
		struct hb_chunk *k = &p.chunks[p.n++];
		bool ncpus_set = false, mpi_set = false;

		if (plus)
			*plus = '\0';
		if (!*chunk)
			return fail(c, HB_EINVAL, "-l select: empty chunk");
		k->count = 1;
		for (e = chunk; e; e = next) {
			char *colon = strchr(e, ':');

			if (colon)
				*colon = '\0';
			next = colon ? colon + 1 : NULL;
			if (!*e)
				return fail(c, HB_EINVAL,
					    "-l select: empty element in "
					    "chunk %u",
					    p.n);
			if (e == chunk && all_digits(e)) {
				rc = num32(c, "-l select: chunk count", e, 1,
					   MAX_COUNT, &k->count);
			} else {
				rc = chunk_res(c, &p, k, e, &ncpus_set,
					       &mpi_set);
			}
			if (rc)
				return rc;
		}
		if (!ncpus_set) {
			uint64_t want = (uint64_t)(mpi_set ? k->mpiprocs : 1) *
					(k->ompthreads ? k->ompthreads : 1);

			rc = total_ok(c,
				      "-l select: ncpus (mpiprocs x "
				      "ompthreads)",
				      want, MAX_COUNT);
			if (rc)
				return rc;
			k->ncpus = want ? (uint32_t)want : 1;
			if (mpi_set || k->ompthreads) {
				rc = NOTE(c,
					  "chunk %u: no ncpus; taken as "
					  "mpiprocs x ompthreads = %u",
					  p.n, k->ncpus);
				if (rc)
					return rc;
			}
		}
		if (!mpi_set)
			k->mpiprocs = k->ncpus > 0 ? 1 : 0;
		rc = chunk_totals(c, k, &tot);
		if (rc)
			return rc;
		chunk = plus ? plus + 1 : NULL;
	}
	rc = take_slot(c, &c->d_select);
	c->ps = p;
	return rc;
}

static int r_place(struct ctx *c, const char *v)
{
	char *s = dup(c, v), *e, *next;
	int arr = ARR_NONE, rc;
	bool excl = false;

	if (!s)
		return oom(c);
	for (e = s; e; e = next) {
		char *colon = strchr(e, ':');

		if (colon)
			*colon = '\0';
		next = colon ? colon + 1 : NULL;
		if (strcasecmp(e, "free") == 0) {
			arr = ARR_FREE;
		} else if (strcasecmp(e, "pack") == 0) {
			arr = ARR_PACK;
		} else if (strcasecmp(e, "scatter") == 0) {
			arr = ARR_SCATTER;
		} else if (strcasecmp(e, "vscatter") == 0) {
			arr = ARR_VSCATTER;
		} else if (strcasecmp(e, "excl") == 0) {
			excl = true;
		} else if (strcasecmp(e, "exclhost") == 0) {
			excl = true;
			rc = NOTE(c, "exclhost: whole hosts, as exclusive");
			if (rc)
				return rc;
		} else if (strcasecmp(e, "shared") == 0) {
			rc = NOTE(c, "shared: nodes may be shared (the "
				     "default)");
			if (rc)
				return rc;
		} else if (strncasecmp(e, "group=", 6) == 0 && e[6]) {
			rc = NOTE(c,
				  "group=%s: grouping by a node resource "
				  "is not carried",
				  e + 6);
			if (rc)
				return rc;
		} else {
			return fail(c, HB_EINVAL,
				    "-l place: unknown element '%s' (free, "
				    "pack, scatter, vscatter, excl, "
				    "exclhost, shared, group=)",
				    e);
		}
	}
	if (arr == ARR_FREE)
		rc = NOTE(c, "free: one node per chunk");
	else if (arr == ARR_SCATTER)
		rc = NOTE(c, "scatter: one node per chunk");
	else if (arr == ARR_VSCATTER)
		rc = NOTE(c, "vscatter: one node per chunk, as scatter");
	else if (arr == ARR_PACK)
		rc = NOTE(c, "pack: every chunk on one node");
	else
		rc = 0;
	if (rc)
		return rc;
	rc = take_slot(c, &c->d_place);
	c->place_arr = arr;
	c->place_excl = excl;
	return rc;
}

static int r_features(struct ctx *c, const char *v, struct strset *set)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ":&");
		int rc;

		if (!is_word(p, n))
			return fail(c, HB_EINVAL, "malformed feature in '%s'",
				    v);
		rc = set_add(c, set, p, n);
		if (rc)
			return rc;
		p += n;
		if (*p && !*++p)
			return fail(c, HB_EINVAL, "malformed feature in '%s'",
				    v);
	}
	return 0;
}

static int r_gres(struct ctx *c, const char *v)
{
	struct hb_buf lic;
	const char *p = v;
	uint32_t gpus = 0, nitems = 0;
	int rc = 0;

	hb_buf_init(&lic, 0);
	while (*p) {
		size_t n = strcspn(p, "+%,");
		size_t nl = strcspn(p, ":=");
		uint32_t cnt = 1;
		char num[24];

		if (nl > n)
			nl = n;
		if (!is_word(p, nl) || ++nitems > MAX_ITEMS) {
			rc = fail(c, HB_EINVAL, "-l gres: malformed '%s'", v);
			goto out;
		}
		if (nl < n) {
			size_t dl = n - nl - 1;

			if (dl == 0 || dl >= sizeof(num)) {
				rc =
				    fail(c, HB_EINVAL,
					 "-l gres: malformed count in '%s'", v);
				goto out;
			}
			memcpy(num, p + nl + 1, dl);
			num[dl] = '\0';
			rc = num32(c, "-l gres", num, 1, MAX_GPUS, &cnt);
			if (rc)
				goto out;
		}
		if ((nl == 3 && strncasecmp(p, "gpu", 3) == 0) ||
		    (nl == 4 && strncasecmp(p, "gpus", 4) == 0)) {
			gpus = cnt;
		} else {
			rc = hb_buf_printf(&lic, "%s%.*s:%u",
					   lic.len ? "," : "", (int)nl, p, cnt);
			if (rc) {
				rc = oom(c);
				goto out;
			}
		}
		p += n;
		if (*p && !*++p) {
			rc = fail(c, HB_EINVAL, "-l gres: malformed '%s'", v);
			goto out;
		}
	}
	rc = take_slot(c, &c->d_gres);
	c->gres_gpus = gpus;
	c->gres_lic = NULL;
	if (!rc && lic.len) {
		c->gres_lic = dup(c, lic.data);
		if (!c->gres_lic)
			rc = oom(c);
	}
out:
	hb_buf_free(&lic);
	return rc;
}

/* Resources read but not carried, with the reason. */
static const struct {
	const char *name;
	const char *why;
} dropped_res[] = {
    {"cput", "a CPU-time limit; only walltime is carried"},
    {"pcput", "a per-process CPU-time limit; only walltime is carried"},
    {"file", "a per-file size limit is not carried"},
    {"nice", "the nice value is not carried"},
    {"arch", "the architecture is not carried"},
    {"opsys", "the operating system is not carried"},
    {"software", "software requests are not carried"},
    {"other", "'other' is site-specific and not carried"},
    {"epilogue", "epilogue scripts are not carried"},
    {"prologue", "prologue scripts are not carried"},
    {"soft_walltime", "a soft walltime is not carried"},
    {"nodect", "nodect is read-only in PBS"},
    {"tpn", "tasks per node without nodes= are not carried"},
    {"trl", "task ranges are not carried"},
    {"mpiprocs", "mpiprocs belongs inside select=; dropped"},
    {"ompthreads", "ompthreads belongs inside select=; dropped"},
    {"naccelerators", "naccelerators belongs inside select=; dropped"},
    {"preempt_targets", "preemption targets are not carried"},
    {NULL, NULL},
};

static int res_item(struct ctx *c, char *item)
{
	char *eq = strchr(item, '=');
	const char *v;
	uint64_t mib = 0;
	int rc;

	if (!eq) {
		if (!is_word(item, strlen(item)))
			return fail(c, HB_EINVAL, "-l: malformed resource '%s'",
				    item);
		return NOTE(c, "resource '%s' without a value is not carried",
			    item);
	}
	*eq = '\0';
	v = eq + 1;
	if (!is_word(item, strlen(item)))
		return fail(c, HB_EINVAL, "-l: malformed resource name '%s'",
			    item);
	if (!*v)
		return fail(c, HB_EINVAL, "-l %s: missing value", item);

	if (strcasecmp(item, "nodes") == 0)
		return r_nodes(c, v);
	if (strcasecmp(item, "select") == 0)
		return r_select(c, v);
	if (strcasecmp(item, "place") == 0)
		return r_place(c, v);
	if (strcasecmp(item, "walltime") == 0 ||
	    strcasecmp(item, "max_walltime") == 0 ||
	    strcasecmp(item, "min_walltime") == 0) {
		const char *what = strcasecmp(item, "walltime") == 0
				       ? "-l walltime"
				   : strcasecmp(item, "max_walltime") == 0
				       ? "-l max_walltime"
				       : "-l min_walltime";
		uint64_t sec;
		uint32_t *slot;

		rc = pbs_time(c, what, v, &sec);
		if (rc)
			return rc;
		if (strcasecmp(item, "walltime") == 0) {
			slot = &c->d_wall;
			c->wall = sec;
		} else if (strcasecmp(item, "max_walltime") == 0) {
			slot = &c->d_maxwall;
			c->maxwall = sec;
		} else {
			slot = &c->d_minwall;
			c->minwall = sec;
		}
		if (sec == 0) {
			rc = NOTE(c, "a zero time is no limit; dropped");
			if (rc)
				return rc;
		}
		return take_slot(c, slot);
	}
	if (strcasecmp(item, "mem") == 0 || strcasecmp(item, "pmem") == 0) {
		bool job = strcasecmp(item, "mem") == 0;

		rc = size_mib(c, job ? "-l mem" : "-l pmem", v, &mib);
		if (rc)
			return rc;
		if (mib == 0) {
			rc = NOTE(c, "zero memory is no request; dropped");
			if (rc)
				return rc;
		}
		if (job) {
			c->mem_mb = mib;
			return take_slot(c, &c->d_mem);
		}
		c->pmem_mb = mib;
		return take_slot(c, &c->d_pmem);
	}
	if (strcasecmp(item, "vmem") == 0 || strcasecmp(item, "pvmem") == 0) {
		rc = size_mib(c, "-l vmem", v, &mib);
		return rc ? rc
			  : NOTE(c, "virtual memory limits have no "
				    "equivalent; dropped");
	}
	if (strcasecmp(item, "ncpus") == 0) {
		rc = num32(c, "-l ncpus", v, 1, MAX_COUNT, &c->ncpus);
		return rc ? rc : take_slot(c, &c->d_ncpus);
	}
	if (strcasecmp(item, "procs") == 0) {
		rc = num32(c, "-l procs", v, 1, MAX_COUNT, &c->procs);
		return rc ? rc : take_slot(c, &c->d_procs);
	}
	if (strcasecmp(item, "ngpus") == 0) {
		rc = num32(c, "-l ngpus", v, 0, MAX_GPUS, &c->ngpus);
		return rc ? rc : take_slot(c, &c->d_ngpus);
	}
	if (strcasecmp(item, "naccesspolicy") == 0) {
		rc = take_slot(c, &c->d_naccess);
		c->naccess_excl = strcasecmp(v, "singlejob") == 0;
		if (!rc && !c->naccess_excl)
			rc = NOTE(c,
				  "access policy '%s' is not carried "
				  "(only singlejob is: exclusive)",
				  v);
		return rc;
	}
	if (strcasecmp(item, "feature") == 0) {
		struct strset s = {0};

		rc = r_features(c, v, &s);
		if (rc)
			return rc;
		c->feature = s;
		return take_slot(c, &c->d_feature);
	}
	if (strcasecmp(item, "host") == 0) {
		struct strset s = {0};
		const char *p = v;

		while (*p) {
			size_t n = strcspn(p, "+");

			if (!is_word(p, n))
				return fail(c, HB_EINVAL,
					    "-l host: malformed host '%s'", v);
			rc = set_add(c, &s, p, n);
			if (rc)
				return rc;
			p += n;
			if (*p && !*++p)
				return fail(c, HB_EINVAL,
					    "-l host: malformed host '%s'", v);
		}
		c->host = s;
		return take_slot(c, &c->d_host);
	}
	if (strcasecmp(item, "gres") == 0)
		return r_gres(c, v);
	for (int i = 0; dropped_res[i].name; i++)
		if (strcasecmp(item, dropped_res[i].name) == 0)
			return NOTE(c, "%s", dropped_res[i].why);
	return NOTE(c,
		    "unknown resource '%s': site-defined resources are "
		    "not carried",
		    item);
}

static int opt_l(struct ctx *c, const char *arg)
{
	char *s = dup(c, arg), *item, *next;
	uint32_t n = 0;
	int rc;

	if (!s)
		return oom(c);
	if (!*s) {
		rc = new_dir(c, "-l", 2);
		return rc ? rc : fail(c, HB_EINVAL, "-l: empty resource list");
	}
	for (item = s; item; item = next) {
		char *comma = strchr(item, ',');
		const char *text;

		if (comma)
			*comma = '\0';
		next = comma ? comma + 1 : NULL;
		if (++n > MAX_ITEMS)
			return fail(c, HB_ETOOBIG, "-l: more than %d resources",
				    MAX_ITEMS);
		text = hb_arena_printf(&c->spec->arena, "-l %s", item);
		if (!text)
			return oom(c);
		rc = new_dir(c, text, strlen(text));
		if (rc)
			return rc;
		if (!*item)
			return fail(c, HB_EINVAL, "-l: empty resource in '%s'",
				    arg);
		rc = res_item(c, item);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* -W attributes                                                        */

/* "123", "123.server", "123[]", "123[4].server" -> Slurm job id. */
static int conv_jobid(struct ctx *c, struct hb_buf *b, const char *s, size_t n)
{
	size_t i = 0, d, x = 0;

	while (i < n && is_digit(s[i]))
		i++;
	d = i;
	if (d == 0 || d > 10)
		goto bad;
	if (i < n && s[i] == '[') {
		size_t st = ++i;

		while (i < n && is_digit(s[i]))
			i++;
		if (i >= n || s[i] != ']' || i - st > 10)
			goto bad;
		x = i - st;
		if (hb_buf_printf(b, "%.*s%s%.*s", (int)d, s, x ? "_" : "",
				  (int)x, s + st))
			return oom(c);
		i++;
	} else if (hb_buf_append(b, s, d)) {
		return oom(c);
	}
	if (i < n && (s[i] != '.' || i + 1 == n))
		goto bad;
	return 0;
bad:
	return fail(c, HB_EINVAL, "-W depend: malformed job id '%.*s'", (int)n,
		    s);
}

static int conv_depend(struct ctx *c, const char *v, char **out)
{
	static const char *const kept[][2] = {
	    {"after", "after"},
	    {"afterok", "afterok"},
	    {"afternotok", "afternotok"},
	    {"afterany", "afterany"},
	    {"afterstartarray", "after"},
	    {"afterokarray", "afterok"},
	    {"afternotokarray", "afternotok"},
	    {"afteranyarray", "afterany"},
	    {NULL, NULL},
	};
	static const char *const refused[] = {
	    "before",
	    "beforeok",
	    "beforenotok",
	    "beforeany",
	    "on",
	    "syncwith",
	    "synccount",
	    "beforestartarray",
	    "beforeokarray",
	    "beforenotokarray",
	    "beforeanyarray",
	    NULL,
	};
	struct hb_buf b;
	const char *p = v;
	int rc = 0;

	*out = NULL;
	hb_buf_init(&b, 0);
	while (*p) {
		size_t n = strcspn(p, ","), tl = strcspn(p, ":");
		const char *slurm = NULL, *a, *end = p + n;
		char type[32];

		if (tl > n)
			tl = n;
		if (tl == 0 || tl >= sizeof(type)) {
			rc = fail(c, HB_EINVAL,
				  "-W depend: malformed dependency '%.*s'",
				  (int)n, p);
			goto out;
		}
		memcpy(type, p, tl);
		type[tl] = '\0';
		for (int i = 0; kept[i][0]; i++)
			if (strcasecmp(type, kept[i][0]) == 0)
				slurm = kept[i][1];
		for (int i = 0; !slurm && refused[i]; i++) {
			if (strcasecmp(type, refused[i]) == 0) {
				rc = fail(c, HB_EUNSUP,
					  "-W depend=%s: Slurm has no '%s' "
					  "dependency (it holds other jobs); "
					  "give those jobs afterok:<this "
					  "job> instead",
					  type, type);
				goto out;
			}
		}
		if (!slurm) {
			rc = fail(c, HB_EINVAL,
				  "-W depend: unknown dependency type '%s'",
				  type);
			goto out;
		}
		a = p + tl;
		if (a == end || a + 1 == end) {
			rc = NOTE(c,
				  "%s with no job ids clears that "
				  "dependency",
				  type);
			if (rc)
				goto out;
		} else {
			if (hb_buf_printf(&b, "%s%s", b.len ? "," : "",
					  slurm)) {
				rc = oom(c);
				goto out;
			}
			for (a++; a < end;) {
				size_t il = strcspn(a, ":,");

				if (a + il > end)
					il = (size_t)(end - a);
				if (hb_buf_putc(&b, ':')) {
					rc = oom(c);
					goto out;
				}
				rc = conv_jobid(c, &b, a, il);
				if (rc)
					goto out;
				a += il;
				if (a < end)
					a++;
				if (a == end && a[-1] == ':') {
					rc = fail(c, HB_EINVAL,
						  "-W depend: empty job id in "
						  "'%s'",
						  v);
					goto out;
				}
			}
		}
		p = *end ? end + 1 : end;
		if (*end && !*p) {
			rc = fail(c, HB_EINVAL,
				  "-W depend: trailing ',' in '%s'", v);
			goto out;
		}
	}
	if (b.len) {
		*out = dup(c, b.data);
		if (!*out)
			rc = oom(c);
	}
out:
	hb_buf_free(&b);
	return rc;
}

static int w_stage(struct ctx *c, const char *v, bool in)
{
	const char *p = v;
	uint32_t n = 0;

	while (*p) {
		size_t l = strcspn(p, ",");
		const char *at = memchr(p, '@', l);

		if (!at || at == p || at + 1 == p + l || ++n > MAX_ITEMS)
			return fail(c, HB_EINVAL,
				    "-W %s: malformed file spec in '%s' "
				    "(local_path@host:remote_path)",
				    in ? "stagein" : "stageout", v);
		p += l;
		if (*p && !*++p)
			return fail(c, HB_EINVAL, "-W %s: trailing ',' in '%s'",
				    in ? "stagein" : "stageout", v);
	}
	if (!in)
		return NOTE(c, "files staged out after the job are not "
			       "copied back");
	c->stagein = dup(c, v);
	if (!c->stagein)
		return oom(c);
	return take_slot(c, &c->d_stagein);
}

static int w_item(struct ctx *c, char *item)
{
	char *eq = strchr(item, '=');
	const char *v;
	int rc;

	if (!eq || eq == item)
		return fail(c, HB_EINVAL,
			    "-W: malformed attribute '%s' (name=value)", item);
	*eq = '\0';
	v = eq + 1;
	if (strcasecmp(item, "depend") == 0) {
		char *dep;

		rc = conv_depend(c, v, &dep);
		if (rc)
			return rc;
		c->spec->dependency = dep;
		SET(c, HB_F_DEPENDENCY);
		if (!dep)
			return NOTE(c, "no dependency left");
		return 0;
	}
	if (strcasecmp(item, "interactive") == 0) {
		if (strcasecmp(v, "true") == 0 || strcasecmp(v, "t") == 0 ||
		    strcmp(v, "1") == 0 || strcasecmp(v, "y") == 0)
			return fail(c, HB_EUNSUP,
				    "-W interactive=%s: an interactive job "
				    "is not a batch script",
				    v);
		return NOTE(c, "not interactive (the default)");
	}
	if (strcasecmp(item, "stagein") == 0)
		return w_stage(c, v, true);
	if (strcasecmp(item, "stageout") == 0)
		return w_stage(c, v, false);
	if (strcasecmp(item, "max_run_subjobs") == 0) {
		rc = num32(c, "-W max_run_subjobs", v, 1, MAX_COUNT,
			   &c->spec->array_max_running);
		if (!rc) {
			c->w_max_run = true;
			SET(c, HB_F_ARRAY);
		}
		return rc;
	}
	if (strcasecmp(item, "umask") == 0) {
		if (!*v || strlen(v) > 4 || strspn(v, "01234567") != strlen(v))
			return fail(c, HB_EINVAL,
				    "-W umask: malformed umask '%s'", v);
		return NOTE(c, "the umask of output files is not carried");
	}
	if (strcasecmp(item, "group_list") == 0)
		return NOTE(c, "the job runs with the submitter's groups; "
			       "group_list is not carried");
	if (strcasecmp(item, "sandbox") == 0)
		return NOTE(c, "the staging directory choice is not carried");
	if (strcasecmp(item, "x") == 0) {
		char low[64];
		size_t n = strlen(v);

		if (n < sizeof(low)) {
			for (size_t i = 0; i <= n; i++)
				low[i] = (char)(v[i] >= 'A' && v[i] <= 'Z'
						    ? v[i] + 32
						    : v[i]);
			if (strstr(low, "naccesspolicy:singlejob")) {
				c->d_wx = c->cur;
				return 0;
			}
		}
		return NOTE(c, "scheduler extensions are not carried");
	}
	if (strcasecmp(item, "block") == 0)
		return NOTE(c, "qsub waiting for the job is a client matter; "
			       "no effect");
	if (strcasecmp(item, "pwd") == 0)
		return NOTE(c, "passwords are never carried");
	return NOTE(c, "job attribute '%s' is not carried", item);
}

/* Does s start a new "name=" attribute? */
static int attr_start(const char *s)
{
	size_t n = 0;

	while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
	       s[n] == '_' || (n && is_digit(s[n])))
		n++;
	return n > 0 && s[n] == '=';
}

static int opt_W(struct ctx *c, const char *arg)
{
	char *s = dup(c, arg), *item;
	uint32_t n = 0;
	int rc;

	if (!s)
		return oom(c);
	if (!*s) {
		rc = new_dir(c, "-W", 2);
		return rc ? rc : fail(c, HB_EINVAL, "-W: empty attribute list");
	}
	/* Split on commas that start a new name=value; others belong to
	 * the value (depend and stagein lists hold commas). */
	for (item = s; item;) {
		char *next = NULL, *p = item;
		const char *text;

		while ((p = strchr(p, ',')) != NULL) {
			if (attr_start(p + 1)) {
				*p = '\0';
				next = p + 1;
				break;
			}
			p++;
		}
		if (++n > MAX_ITEMS)
			return fail(c, HB_ETOOBIG,
				    "-W: more than %d attributes", MAX_ITEMS);
		text = hb_arena_printf(&c->spec->arena, "-W %s", item);
		if (!text)
			return oom(c);
		rc = new_dir(c, text, strlen(text));
		if (rc)
			return rc;
		rc = w_item(c, item);
		if (rc)
			return rc;
		item = next;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Other options                                                        */

static int days_in(unsigned y, unsigned m)
{
	static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (m == 2 &&
	    (y == 0 || (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
		return 29;
	return d[m - 1];
}

static unsigned two(const char *s)
{
	return (unsigned)(s[0] - '0') * 10 + (unsigned)(s[1] - '0');
}

/* -a [[[[CC]YY]MM]DD]hhmm[.SS] */
static int opt_begin(struct ctx *c, const char *v)
{
	size_t n = strspn(v, "0123456789");
	unsigned year = 0, mon = 0, day = 0, hh, mm, ss = 0;
	bool has_ss = false;
	const char *t;
	char out[40];

	if (v[n] == '.') {
		if (strlen(v + n + 1) != 2 || !is_digit(v[n + 1]) ||
		    !is_digit(v[n + 2]))
			goto bad;
		ss = two(v + n + 1);
		has_ss = true;
	} else if (v[n]) {
		goto bad;
	}
	if (n != 4 && n != 6 && n != 8 && n != 10 && n != 12)
		goto bad;
	t = v + n - 4;
	hh = two(t);
	mm = two(t + 2);
	if (n >= 6)
		day = two(t - 2);
	if (n >= 8)
		mon = two(t - 4);
	if (n == 10) {
		year = two(v);
		year += year >= 69 ? 1900 : 2000;
	} else if (n == 12) {
		year = two(v) * 100 + two(v + 2);
	}
	if (hh > 23 || mm > 59 || ss > 59 || (n >= 8 && (mon < 1 || mon > 12)))
		goto bad;
	if (n >= 6 &&
	    (day < 1 || (int)day > (n >= 8 ? days_in(year, mon) : 31)))
		goto bad;
	if (n >= 10)
		snprintf(out, sizeof(out), "%04u-%02u-%02uT%02u:%02u", year,
			 mon, day, hh, mm);
	else if (n == 8)
		snprintf(out, sizeof(out), "%02u/%02u-%02u:%02u", mon, day, hh,
			 mm);
	else if (n == 4)
		snprintf(out, sizeof(out), "%02u:%02u", hh, mm);
	else
		return NOTE(c, "a day of the month without a month has no "
			       "Slurm form; dropped");
	if (has_ss) {
		size_t l = strlen(out);

		snprintf(out + l, sizeof(out) - l, ":%02u", ss);
	}
	c->spec->begin = dup(c, out);
	if (!c->spec->begin)
		return oom(c);
	SET(c, HB_F_BEGIN);
	if (n < 10)
		return NOTE(c, "the next such time after submission, as in "
			       "PBS");
	return 0;
bad:
	return fail(c, HB_EINVAL,
		    "-a: malformed date and time '%s' "
		    "([[[[CC]YY]MM]DD]hhmm[.SS])",
		    v);
}

static int range_cmp(const void *a, const void *b)
{
	const struct hb_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static int array_num(struct ctx *c, const char *opt, const char *s, size_t n,
		     uint32_t *out)
{
	char num[16];
	int rc;

	if (n == 0 || n >= sizeof(num))
		return fail(c, HB_EINVAL, "%s: malformed index '%.*s'", opt,
			    (int)n, s);
	memcpy(num, s, n);
	num[n] = '\0';
	rc = num32(c, opt, num, 0, UINT32_MAX, out);
	if (!rc && *out > MAX_ARRAY_INDEX)
		return fail(c, HB_ERANGE,
			    "%s: index '%s' is too large (indices run from 0 "
			    "to %d, as sbatch)",
			    opt, num, MAX_ARRAY_INDEX);
	return rc;
}

/* -J X-Y[:Z][%N] (PBS Pro) and -t A[-B][,...][%N] (Torque). */
static int opt_array(struct ctx *c, char opt, const char *v)
{
	const char *optname = opt == 'J' ? "-J" : "-t";
	const char *pct = strrchr(v, '%');
	size_t len = pct ? (size_t)(pct - v) : strlen(v);
	struct hb_range *r;
	uint32_t n = 1, limit = 0, k = 0;
	int rc;

	if (pct) {
		rc = num32(c, optname, pct + 1, 1, MAX_COUNT, &limit);
		if (rc)
			return rc;
	}
	if (len == 0)
		return fail(c, HB_EINVAL, "%s: empty index list", optname);
	for (size_t i = 0; i < len; i++)
		if (v[i] == ',' && ++n > 65536)
			return fail(c, HB_ETOOBIG, "%s: too many ranges",
				    optname);
	if (opt == 'J' && n > 1)
		return fail(c, HB_EINVAL,
			    "-J: one range X-Y[:Z] is allowed, got '%s'", v);
	r = hb_arena_alloc(&c->spec->arena, n * sizeof(*r));
	if (!r)
		return oom(c);
	for (const char *p = v, *end = v + len; p <= end && k < n; k++) {
		size_t il = strcspn(p, ",");
		const char *dash, *colon;
		struct hb_range *x = &r[k];

		if (p + il > end)
			il = (size_t)(end - p);
		dash = memchr(p, '-', il);
		colon = opt == 'J' ? memchr(p, ':', il) : NULL;
		if (opt == 'J' && (!dash || (colon && colon < dash)))
			return fail(c, HB_EINVAL,
				    "-J: '%s' is not a range X-Y[:Z]", v);
		x->step = 1;
		if (!dash) {
			rc = array_num(c, optname, p, il, &x->start);
			x->end = x->start;
		} else {
			size_t el =
			    (size_t)((colon ? colon : p + il) - (dash + 1));

			rc = array_num(c, optname, p, (size_t)(dash - p),
				       &x->start);
			if (!rc)
				rc = array_num(c, optname, dash + 1, el,
					       &x->end);
			if (!rc && colon) {
				rc = array_num(c, optname, colon + 1,
					       (size_t)(p + il - colon - 1),
					       &x->step);
				if (!rc && x->step == 0)
					rc = fail(c, HB_EINVAL,
						  "%s: step must be at least "
						  "1",
						  optname);
			}
			if (!rc && x->end < x->start)
				rc = fail(c, HB_EINVAL,
					  "%s: range '%.*s' ends before it "
					  "starts",
					  optname, (int)il, p);
		}
		if (rc)
			return rc;
		x->end = x->start + (x->end - x->start) / x->step * x->step;
		p += il + 1;
	}
	if (opt == 't') {
		/* Sorted, and overlapping or adjacent ranges merged. */
		uint32_t m = 0;

		qsort(r, n, sizeof(*r), range_cmp);
		for (uint32_t i = 1; i < n; i++) {
			if (r[i].start <= r[m].end ||
			    r[i].start - r[m].end == 1) {
				if (r[i].end > r[m].end)
					r[m].end = r[i].end;
			} else {
				r[++m] = r[i];
			}
		}
		n = m + 1;
	}
	c->spec->array = dup(c, v);
	if (!c->spec->array)
		return oom(c);
	c->spec->array_ranges = r;
	c->spec->narray_ranges = n;
	/* A range without "%N" keeps a limit -W max_run_subjobs gave. */
	if (limit || !c->w_max_run)
		c->spec->array_max_running = limit;
	SET(c, HB_F_ARRAY);
	return 0;
}

static int opt_mail(struct ctx *c, const char *v)
{
	bool b = false, e = false, a = false, j = false, none = false;
	char out[64];

	if (!*v)
		return fail(c, HB_EINVAL, "-m: empty mail points");
	for (const char *p = v; *p; p++) {
		switch (*p) {
		case 'a':
		case 'f':
			a = true;
			break;
		case 'b':
			b = true;
			break;
		case 'e':
			e = true;
			break;
		case 'j':
			j = true;
			break;
		case 'n':
			none = true;
			break;
		default:
			return fail(c, HB_EINVAL,
				    "-m: unknown mail point '%c' in '%s' "
				    "(a, b, e, n)",
				    *p, v);
		}
	}
	if (none && (a || b || e || j))
		return fail(c, HB_EINVAL,
			    "-m: 'n' cannot be combined, got '%s'", v);
	if (none)
		snprintf(out, sizeof(out), "NONE");
	else
		snprintf(out, sizeof(out), "%s%s%s%s", b ? "BEGIN," : "",
			 e ? "END," : "", a ? "FAIL," : "",
			 j ? "ARRAY_TASKS," : "");
	if (!none) {
		size_t l = strlen(out);

		if (l)
			out[l - 1] = '\0';
		if (!a && !b && !e)
			return fail(c, HB_EINVAL,
				    "-m: 'j' needs a, b or e, got '%s'", v);
	}
	c->spec->mail_type = dup(c, out);
	if (!c->spec->mail_type)
		return oom(c);
	SET(c, HB_F_MAIL_TYPE);
	return 0;
}

/* "-v A,B=1,C='x,y'": add to the env and to the export list. */
static int opt_env(struct ctx *c, const char *v)
{
	const char *p = v;
	char w[48];
	int rc;

	if (!*v)
		return fail(c, HB_EINVAL, "-v: empty variable list");
	while (*p) {
		struct hb_buf val;
		size_t nl = strcspn(p, "=,");
		char *name;

		if (!is_env_name(p, nl))
			return fail(c, HB_EINVAL,
				    "-v: malformed variable name in '%s'", v);
		if (++c->nexports > MAX_ENV)
			return fail(c, HB_ETOOBIG, "-v: more than %d variables",
				    MAX_ENV);
		name = dupn(c, p, nl);
		if (!name)
			return oom(c);
		p += nl;
		if (*p != '=') {
			rc = hb_jobspec_add_env(c->spec, name, NULL);
			if (!rc)
				rc = hb_buf_printf(&c->exports, "%s%s",
						   c->exports.len ? "," : "",
						   name);
		} else {
			/* The value runs to an unquoted ','; quotes go. */
			hb_buf_init(&val, 0);
			rc = hb_buf_puts(&val, "");
			for (p++; !rc && *p && *p != ',';) {
				if (*p == '\'' || *p == '"') {
					const char *q = strchr(p + 1, *p);

					if (!q) {
						hb_buf_free(&val);
						return fail(c, HB_EINVAL,
							    "-v: unterminated "
							    "quote in '%s'",
							    v);
					}
					rc = hb_buf_append(&val, p + 1,
							   (size_t)(q - p - 1));
					p = q + 1;
				} else {
					rc = hb_buf_putc(&val, *p++);
				}
			}
			if (!rc)
				rc =
				    hb_jobspec_add_env(c->spec, name, val.data);
			if (!rc)
				rc = hb_buf_printf(&c->exports, "%s%s=%s",
						   c->exports.len ? "," : "",
						   name, val.data);
			hb_buf_free(&val);
		}
		if (rc)
			return oom(c);
		if (*p == ',' && !*++p)
			return fail(c, HB_EINVAL, "-v: trailing ',' in '%s'",
				    v);
	}
	/* One origin for the whole list: the last -v or -V carries it. */
	if (c->d_export != NO_DIR) {
		drop_field(c, c->d_export, HB_F_ENV);
		drop_field(c, c->d_export, HB_F_EXPORT);
		rc = note_at(c, c->d_export,
			     "joined with %s into one export "
			     "list",
			     where(c, c->cur, w));
		if (rc)
			return rc;
	}
	c->d_export = c->cur;
	SET(c, HB_F_ENV);
	SET(c, HB_F_EXPORT);
	return 0;
}

static int opt_export_all(struct ctx *c)
{
	char w[48];
	int rc;

	c->spec->export_all = true;
	if (c->d_export != NO_DIR) {
		drop_field(c, c->d_export, HB_F_EXPORT);
		if (dir_at(c, c->d_export)->nfields)
			rc = note_at(c, c->d_export,
				     "export list joined with %s",
				     where(c, c->cur, w));
		else
			rc = note_at(c, c->d_export,
				     "joined with %s into one export list",
				     where(c, c->cur, w));
		if (rc)
			return rc;
	}
	c->d_export = c->cur;
	SET(c, HB_F_EXPORT);
	return 0;
}

/* "path[@host][,path[@host]...]": the entry without a host, else the
 * first entry's path. */
static int pick_hostless(struct ctx *c, const char *opt, const char *v,
			 char **out)
{
	const char *p = v, *first = NULL;
	size_t firstlen = 0;

	*out = NULL;
	while (*p) {
		size_t n = strcspn(p, ","), pl = strcspn(p, "@");

		if (pl > n)
			pl = n;
		if (pl == 0 || (pl < n && pl + 1 == n))
			return fail(c, HB_EINVAL, "%s: malformed entry in '%s'",
				    opt, v);
		if (pl == n) {
			*out = dupn(c, p, n);
			return *out ? 0 : oom(c);
		}
		if (!first) {
			first = p;
			firstlen = pl;
		}
		p += n;
		if (*p && !*++p)
			return fail(c, HB_EINVAL, "%s: trailing ',' in '%s'",
				    opt, v);
	}
	if (!first)
		return fail(c, HB_EINVAL, "%s: empty value", opt);
	*out = dupn(c, first, firstlen);
	if (!*out)
		return oom(c);
	return NOTE(c, "every entry names a host; the first one's is kept");
}

static int opt_path(struct ctx *c, char opt, const char *v)
{
	const char *host_end = NULL, *path = v;
	char *copy;
	int rc;

	if (opt != 'd')
		path = strip_host(v, &host_end);

	if (!*path)
		return fail(c, HB_EINVAL, "-%c: empty path", opt);
	copy = dup(c, path);
	if (!copy)
		return oom(c);
	if (opt == 'o') {
		c->spec->output = copy;
		c->d_out = c->cur;
		SET(c, HB_F_OUTPUT);
	} else if (opt == 'e') {
		c->spec->error = copy;
		c->d_errp = c->cur;
		SET(c, HB_F_ERROR);
	} else {
		c->spec->chdir = copy;
		SET(c, HB_F_CHDIR);
	}
	if (host_end) {
		rc = NOTE(c,
			  "host '%.*s' dropped: the path is used where "
			  "the job runs",
			  (int)(host_end - v), v);
		if (rc)
			return rc;
	}
	return 0;
}

static int opt_priority(struct ctx *c, const char *v)
{
	const char *p = v;
	long n = 0;

	if (*p == '-' || *p == '+')
		p++;
	if (!*p || strlen(p) > 5 || !all_digits(p))
		return fail(c, HB_EINVAL, "-p: malformed priority '%s'", v);
	n = strtol(p, NULL, 10);
	if (*v == '-')
		n = -n;
	if (n < -1024 || n > 1023)
		return fail(c, HB_ERANGE,
			    "-p: priority '%s' is outside -1024..1023", v);
	return NOTE(c, "job priority is not carried");
}

static int need(struct ctx *c, char opt, const char *v)
{
	if (!*v)
		return fail(c, HB_EINVAL, "-%c: empty value", opt);
	return 0;
}

static int set_str(struct ctx *c, const char **dst, const char *v,
		   enum hb_field f)
{
	*dst = dup(c, v);
	if (!*dst)
		return oom(c);
	SET(c, f);
	return 0;
}

/* One option with its argument (NULL for flags). */
static int option(struct ctx *c, char opt, const char *arg)
{
	struct hb_jobspec *s = c->spec;
	char *pick;
	int rc;

	switch (opt) {
	case 'a':
		return opt_begin(c, arg);
	case 'A':
		return need(c, opt, arg)
			   ?: set_str(c, &s->account, arg, HB_F_ACCOUNT);
	case 'b':
		return NOTE(c, "how long qsub retries the server is a client "
			       "matter; no effect");
	case 'c':
		return NOTE(c, "PBS checkpoint intervals are not carried; "
			       "the job's own checkpoint directory is");
	case 'C':
		if (!c->cli)
			return NOTE(c,
				    "-C works only on the qsub command line; "
				    "ignored in a script");
		if (!*arg)
			return NOTE(c, "empty directive prefix: the script's "
				       "directives were not read");
		return NOTE(c, "directives read with prefix '%s'", arg);
	case 'd':
	case 'w':
		return need(c, opt, arg) ?: opt_path(c, 'd', arg);
	case 'D':
		return NOTE(c, "a root directory for the job is not carried");
	case 'e':
	case 'o':
		return need(c, opt, arg) ?: opt_path(c, opt, arg);
	case 'f':
		return NOTE(c, "a qsub client option; no effect on the job");
	case 'F':
		return NOTE(c, "arguments to the script are not carried");
	case 'h':
		return NOTE(c, "user hold is not carried: the job is "
			       "submitted eligible to run");
	case 'I':
		return fail(c, HB_EUNSUP,
			    "-I: an interactive job is not a batch script");
	case 'j':
		if (strcmp(arg, "oe") == 0)
			c->join = JOIN_OE;
		else if (strcmp(arg, "eo") == 0)
			c->join = JOIN_EO;
		else if (strcmp(arg, "n") == 0)
			c->join = JOIN_N;
		else
			return fail(c, HB_EINVAL,
				    "-j: unknown join '%s' (oe, eo or n)", arg);
		c->d_join = c->cur;
		return 0;
	case 'J':
	case 't':
		return opt_array(c, opt, arg);
	case 'k':
		if (strcmp(arg, "n") != 0 &&
		    (!*arg || strspn(arg, "deo") != strlen(arg)))
			return fail(c, HB_EINVAL,
				    "-k: malformed keep '%s' (any of d, e, o; "
				    "or n)",
				    arg);
		rc = set_str(c, &s->keep, arg, HB_F_KEEP);
		if (rc)
			return rc;
		if (strcmp(arg, "n") == 0)
			return NOTE(c, "keep nothing on the execution host "
				       "(the default)");
		return NOTE(c, "-k %s: output is streamed; nothing to keep",
			    arg);
	case 'L':
		return NOTE(c, "NUMA resource requests are not carried");
	case 'm':
		return opt_mail(c, arg);
	case 'M':
		return need(c, opt, arg)
			   ?: set_str(c, &s->mail_user, arg, HB_F_MAIL_USER);
	case 'N':
		if (!*arg || strpbrk(arg, " \t"))
			return fail(c, HB_EINVAL,
				    "-N: malformed job name '%s' (printable, "
				    "no blanks)",
				    arg);
		return set_str(c, &s->name, arg, HB_F_NAME);
	case 'p':
		return opt_priority(c, arg);
	case 'P':
		rc = need(c, opt, arg);
		if (rc)
			return rc;
		c->project = dup(c, arg);
		if (!c->project)
			return oom(c);
		c->d_project = c->cur;
		return 0;
	case 'q': {
		const char *at = strchr(arg, '@');

		rc = need(c, opt, arg);
		if (rc)
			return rc;
		if (at == arg)
			return NOTE(c, "a server without a queue: the default "
				       "partition is used");
		s->partition =
		    at ? dupn(c, arg, (size_t)(at - arg)) : dup(c, arg);
		if (!s->partition)
			return oom(c);
		SET(c, HB_F_PARTITION);
		if (at)
			return NOTE(c, "server '%s' dropped", at + 1);
		return 0;
	}
	case 'r':
		if (strcasecmp(arg, "y") == 0)
			s->requeue = 1;
		else if (strcasecmp(arg, "n") == 0)
			s->requeue = 0;
		else
			return fail(c, HB_EINVAL,
				    "-r: rerunable must be y or n, got '%s'",
				    arg);
		SET(c, HB_F_REQUEUE);
		return 0;
	case 'R':
		return NOTE(c, "removing output files of successful jobs is "
			       "not carried");
	case 'S':
		rc = pick_hostless(c, "-S", arg, &pick);
		if (rc)
			return rc;
		s->interpreter = pick;
		SET(c, HB_F_SCRIPT);
		return NOTE(c, "the script runs with %s", pick);
	case 'T':
		return NOTE(c, "Torque job types (prologue/epilogue "
			       "selection) are not carried");
	case 'u':
		rc = pick_hostless(c, "-u", arg, &pick);
		if (rc)
			return rc;
		s->user = pick;
		SET(c, HB_F_USER);
		return 0;
	case 'v':
		return opt_env(c, arg);
	case 'V':
		return opt_export_all(c);
	case 'x':
		return NOTE(c,
			    "-x applies to interactive jobs only; no effect");
	case 'X':
		return NOTE(c, "X11 forwarding applies to interactive jobs "
			       "only; no effect");
	case 'z':
		return NOTE(c, "qsub not printing the job id is a client "
			       "matter; no effect");
	}
	return fail(c, HB_EINVAL, "unknown option -%c", opt);
}

enum { OPT_NONE, OPT_FLAG, OPT_ARG };

static int opt_kind(char o)
{
	if (o && strchr("aAbcCdDeFjJklLmMNopPqrRStTuvwW", o))
		return OPT_ARG;
	if (o && strchr("fhIVxXz", o))
		return OPT_FLAG;
	return OPT_NONE;
}

struct word {
	const char *raw; /* as written */
	size_t rawlen;
	char *val; /* unquoted */
	uint32_t loc;
};

/* Read qsub options from a word list, getopt style. */
static int run_options(struct ctx *c, struct word *w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		const char *v = w[i].val;
		int rc;

		c->loc = w[i].loc;
		if (v[0] != '-' || v[1] == '\0')
			return fail(c, HB_EINVAL,
				    "unexpected argument '%s' (qsub options "
				    "start with '-')",
				    v);
		if (v[1] == '-')
			return fail(c, HB_EINVAL, "unknown option '%s'", v);
		for (size_t j = 1; v[j]; j++) {
			char o = v[j];
			int kind = opt_kind(o);
			const char *arg, *text;

			if (kind == OPT_NONE)
				return fail(c, HB_EINVAL,
					    "unknown option -%c in '%s'", o, v);
			if (kind == OPT_FLAG) {
				char t[3] = {'-', o, '\0'};

				rc = new_dir(c, t, 2);
				rc = rc ? rc : option(c, o, NULL);
				if (rc)
					return rc;
				continue;
			}
			if (v[j + 1]) {
				arg = v + j + 1;
				if (j == 1)
					text = dupn(c, w[i].raw, w[i].rawlen);
				else
					text = hb_arena_printf(&c->spec->arena,
							       "-%c%s", o, arg);
			} else {
				if (i + 1 >= nw)
					return fail(c, HB_EINVAL,
						    "-%c: missing argument", o);
				i++;
				arg = w[i].val;
				text = hb_arena_printf(
				    &c->spec->arena, "-%c %.*s", o,
				    (int)w[i].rawlen, w[i].raw);
			}
			if (!text)
				return oom(c);
			if (o == 'l')
				rc = opt_l(c, arg);
			else if (o == 'W')
				rc = opt_W(c, arg);
			else
				rc = new_dir(c, text, strlen(text))
					 ?: option(c, o, arg);
			if (rc)
				return rc;
			break;
		}
	}
	return 0;
}

/* Split a directive's text like a shell word list. */
static int split_line(struct ctx *c, const char *s, size_t n, struct word **out,
		      size_t *nout)
{
	size_t cap = n / 2 + 1, nw = 0, i = 0;
	struct word *w;
	char *o;

	/* Scratch memory, freed once the line is read: the words, then
	 * their unquoted values (at most n bytes plus one NUL each). */
	w = malloc(cap * sizeof(*w) + n + cap + 1);
	if (!w)
		return oom(c);
	*out = w;
	*nout = 0;
	o = (char *)(w + cap);
	for (;;) {
		size_t start;

		while (i < n && is_blank(s[i]))
			i++;
		if (i >= n || s[i] == '#')
			break;
		start = i;
		w[nw].val = o;
		while (i < n && !is_blank(s[i])) {
			char ch = s[i];

			if (ch == '\'') {
				const char *q =
				    memchr(s + i + 1, '\'', n - i - 1);
				size_t l;

				if (!q)
					return fail(c, HB_EINVAL,
						    "unterminated ' quote");
				l = (size_t)(q - (s + i + 1));
				memcpy(o, s + i + 1, l);
				o += l;
				i = (size_t)(q - s) + 1;
			} else if (ch == '"') {
				for (i++;;) {
					if (i >= n)
						return fail(c, HB_EINVAL,
							    "unterminated \" "
							    "quote");
					if (s[i] == '"') {
						i++;
						break;
					}
					if (s[i] == '\\' && i + 1 < n &&
					    memchr("\"\\$`", s[i + 1], 4)) {
						*o++ = s[i + 1];
						i += 2;
						continue;
					}
					*o++ = s[i++];
				}
			} else if (ch == '\\') {
				if (i + 1 >= n)
					return fail(c, HB_EINVAL,
						    "trailing backslash");
				*o++ = s[i + 1];
				i += 2;
			} else {
				*o++ = ch;
				i++;
			}
		}
		*o++ = '\0';
		w[nw].raw = s + start;
		w[nw].rawlen = i - start;
		w[nw].loc = c->loc;
		nw++;
	}
	*out = w;
	*nout = nw;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Settling: resources into the jobspec's shape                         */

static int joined_note(struct ctx *c, uint32_t d, uint32_t into,
		       const char *what)
{
	char w[48];

	if (d == NO_DIR || d == into)
		return 0;
	return note_at(c, d, "%s joined into the %s set at %s", what, what,
		       where(c, into, w));
}

static uint32_t latest(const uint32_t *d, int n)
{
	uint32_t best = NO_DIR;

	for (int i = 0; i < n; i++)
		if (d[i] != NO_DIR && (best == NO_DIR || d[i] > best))
			best = d[i];
	return best;
}

/* Constraint, nodelist, licenses and exclusive from every source. */
static int settle_lists(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	const struct strset *fs[3] = {&c->tn.feat, &c->ps.cons, &c->feature};
	const struct strset *hs[3] = {&c->tn.hosts, &c->ps.hosts, &c->host};
	uint32_t fd[3] = {c->d_nodes, c->d_select, c->d_feature};
	uint32_t hd[3] = {c->d_nodes, c->d_select, c->d_host};
	struct strset all = {0}, hall = {0};
	uint32_t into;
	int rc;

	for (int i = 0; i < 3; i++) {
		if (fd[i] == NO_DIR || !fs[i]->n)
			fd[i] = NO_DIR;
		if (hd[i] == NO_DIR || !hs[i]->n)
			hd[i] = NO_DIR;
		for (uint32_t k = 0; fd[i] != NO_DIR && k < fs[i]->n; k++) {
			rc = set_add(c, &all, fs[i]->v[k], strlen(fs[i]->v[k]));
			if (rc)
				return rc;
		}
		for (uint32_t k = 0; hd[i] != NO_DIR && k < hs[i]->n; k++) {
			rc =
			    set_add(c, &hall, hs[i]->v[k], strlen(hs[i]->v[k]));
			if (rc)
				return rc;
		}
	}
	into = latest(fd, 3);
	if (into != NO_DIR) {
		char *j;

		rc = set_join(c, &all, '&', &j);
		if (rc)
			return rc;
		s->constraint = j;
		set_at(c, into, HB_F_CONSTRAINT);
		for (int i = 0; i < 3; i++) {
			rc = joined_note(c, fd[i], into, "constraint");
			if (rc)
				return rc;
		}
	}
	into = latest(hd, 3);
	if (into != NO_DIR) {
		char *j;

		rc = set_join(c, &hall, ',', &j);
		if (rc)
			return rc;
		s->nodelist = j;
		set_at(c, into, HB_F_NODELIST);
		for (int i = 0; i < 3; i++) {
			rc = joined_note(c, hd[i], into, "nodelist");
			if (rc)
				return rc;
		}
	}
	if (c->d_gres != NO_DIR && c->gres_lic) {
		s->licenses = c->gres_lic;
		set_at(c, c->d_gres, HB_F_LICENSES);
	}
	{
		uint32_t ed[4] = {
		    c->tn.excl ? c->d_nodes : NO_DIR,
		    c->place_excl ? c->d_place : NO_DIR,
		    c->naccess_excl ? c->d_naccess : NO_DIR,
		    c->d_wx,
		};

		into = latest(ed, 4);
		if (into != NO_DIR) {
			s->exclusive = true;
			set_at(c, into, HB_F_EXCLUSIVE);
			for (int i = 0; i < 4; i++) {
				char w[48];

				if (ed[i] == NO_DIR || ed[i] == into)
					continue;
				rc = note_at(c, ed[i],
					     "exclusive, as also asked at %s",
					     where(c, into, w));
				if (rc)
					return rc;
			}
		}
	}
	return 0;
}

static int settle_select(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	struct pselect *p = &c->ps;
	uint32_t d = c->d_select;
	uint64_t nodes = 0, tasks = 0, mem = 0, gpus = 0, cpus = 0;
	uint32_t tpn = 0, cpt = 0, maxmpi = 0;
	bool pack = c->d_place != NO_DIR && c->place_arr == ARR_PACK;
	bool any_mem = false, any_gpu = false;
	int rc;

	at_dir(c, d);
	for (uint32_t i = 0; i < p->n; i++) {
		struct hb_chunk *k = &p->chunks[i];
		uint64_t k_cpus;
		uint32_t t;

		if (k->ompthreads) {
			t = k->ompthreads;
			if ((uint64_t)k->ompthreads * k->mpiprocs != k->ncpus) {
				rc = note_at(c, d,
					     "chunk %u: ompthreads x mpiprocs "
					     "= %llu differs from ncpus=%u; "
					     "CPUs per task follow ompthreads",
					     i + 1,
					     (unsigned long long)k->ompthreads *
						 k->mpiprocs,
					     k->ncpus);
				if (rc)
					return rc;
			}
		} else if (k->mpiprocs) {
			t = k->ncpus / k->mpiprocs;
			if (t == 0)
				t = 1;
			if (k->ncpus % k->mpiprocs) {
				rc = note_at(c, d,
					     "chunk %u: ncpus=%u is not a "
					     "multiple of mpiprocs=%u; %u CPUs "
					     "per task",
					     i + 1, k->ncpus, k->mpiprocs, t);
				if (rc)
					return rc;
			}
		} else {
			t = k->ncpus ? k->ncpus : 1;
		}
		/* CPUs this chunk's node needs, as the jobspec asks them:
		 * its tasks (at least one) times CPUs per task. */
		k_cpus = (uint64_t)(k->mpiprocs ? k->mpiprocs : 1) * t;
		if (k_cpus > UINT32_MAX)
			return fail(c, HB_ERANGE,
				    "-l select: CPUs per chunk overflow");
		if (pack)
			cpus += k->count * k_cpus;
		else if (k_cpus > cpus)
			cpus = k_cpus;
		if (k->mpiprocs > maxmpi)
			maxmpi = k->mpiprocs;
		nodes += k->count;
		tasks += (uint64_t)k->count * k->mpiprocs;
		if (k->mem_mb)
			any_mem = true;
		if (k->ngpus)
			any_gpu = true;
		if (pack) {
			if (k->mem_mb &&
			    k->count > (MAX_MEM_MIB - mem) / k->mem_mb)
				return fail(c, HB_ERANGE,
					    "-l select: mem (count x mem) is "
					    "too large (at most %llu MiB, as "
					    "sbatch)",
					    (unsigned long long)MAX_MEM_MIB);
			mem += (uint64_t)k->count * k->mem_mb;
			gpus += (uint64_t)k->count * k->ngpus;
		} else {
			if (k->mem_mb > mem)
				mem = k->mem_mb;
			if (k->ngpus > gpus)
				gpus = k->ngpus;
		}
		if (nodes > UINT32_MAX || tasks > UINT32_MAX ||
		    gpus > UINT32_MAX || cpus > UINT32_MAX ||
		    mem > MAX_MEM_MIB)
			return fail(c, HB_ERANGE, "-l select: totals overflow");
	}
	tpn = pack ? (uint32_t)tasks : maxmpi;
	/* Enough CPUs per task that every node holds its largest chunk. */
	cpt = (uint32_t)((cpus + (tpn ? tpn : 1) - 1) / (tpn ? tpn : 1));
	if (pack) {
		nodes = 1;
		rc = note_at(c, d,
			     "place=pack: every chunk on one node, "
			     "with their tasks, memory and GPUs added");
		if (rc)
			return rc;
	}
	s->nodes_min = s->nodes_max = (uint32_t)nodes;
	set_at(c, d, HB_F_NODES);
	if (tpn) {
		s->ntasks_per_node = tpn;
		set_at(c, d, HB_F_NTASKS_PER_NODE);
	} else {
		rc = note_at(c, d,
			     "no chunk has MPI processes: one task per "
			     "node");
		if (rc)
			return rc;
	}
	s->cpus_per_task = cpt;
	set_at(c, d, HB_F_CPUS_PER_TASK);
	if (any_mem) {
		s->mem_kind = HB_MEM_PER_NODE;
		s->mem_mb = mem;
		set_at(c, d, HB_F_MEM);
	}
	if (any_gpu) {
		s->gpu_scope = HB_GPU_PER_NODE;
		s->gpus = (uint32_t)gpus;
		s->gpu_type = p->gpu_type;
		set_at(c, d, HB_F_GPUS);
	} else if (p->gpu_type) {
		rc = note_at(c, d, "a GPU model without ngpus is not carried");
		if (rc)
			return rc;
	}
	if (p->n > 1) {
		s->chunks = p->chunks;
		s->nchunks = p->n;
		set_at(c, d, HB_F_HETEROGENEOUS);
		if (tasks && !pack) {
			s->ntasks = (uint32_t)tasks;
			set_at(c, d, HB_F_NTASKS);
		}
		if (!pack) {
			rc = note_at(c, d,
				     "%u chunks: %llu nodes and %llu tasks in "
				     "all; every node is sized to hold the "
				     "largest chunk (%u tasks x %u CPUs, "
				     "%llu MiB, %llu GPUs)",
				     p->n, (unsigned long long)nodes,
				     (unsigned long long)tasks, tpn ? tpn : 1,
				     cpt, (unsigned long long)mem,
				     (unsigned long long)gpus);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int settle_nodes(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	struct tnodes *t = &c->tn;
	uint32_t d = c->d_nodes;

	s->nodes_min = s->nodes_max = t->nodes;
	set_at(c, d, HB_F_NODES);
	if (t->ppn_set) {
		s->ntasks_per_node = t->ppn;
		set_at(c, d, HB_F_NTASKS_PER_NODE);
	}
	if (t->mixed) {
		s->ntasks = (uint32_t)t->ntasks;
		set_at(c, d, HB_F_NTASKS);
	}
	if (t->cpn) {
		uint32_t tpn = t->ppn ? t->ppn : 1;

		s->cpus_per_task = t->cpn / tpn ? t->cpn / tpn : 1;
		set_at(c, d, HB_F_CPUS_PER_TASK);
	}
	if (t->gpus) {
		s->gpu_scope = HB_GPU_PER_NODE;
		s->gpus = t->gpus;
		set_at(c, d, HB_F_GPUS);
	}
	return 0;
}

static int settle_shape(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	char w[48];
	int rc;

	if (c->d_select != NO_DIR && c->d_nodes != NO_DIR) {
		uint32_t later =
		    c->d_select > c->d_nodes ? c->d_select : c->d_nodes;
		uint32_t other =
		    later == c->d_select ? c->d_nodes : c->d_select;

		at_dir(c, later);
		return fail(c, HB_ECONFLICT,
			    "-l %s cannot be mixed with -l %s (%s), as in "
			    "PBS",
			    later == c->d_select ? "select" : "nodes",
			    later == c->d_select ? "nodes" : "select",
			    where(c, other, w));
	}
	if (c->d_select != NO_DIR) {
		rc = settle_select(c);
		if (rc)
			return rc;
	} else if (c->d_nodes != NO_DIR) {
		rc = settle_nodes(c);
		if (rc)
			return rc;
	}
	if (c->d_place != NO_DIR && c->d_select == NO_DIR &&
	    c->place_arr != ARR_NONE) {
		rc = note_at(c, c->d_place,
			     "placement without select= has "
			     "nothing to arrange");
		if (rc)
			return rc;
	}
	if (c->d_ncpus != NO_DIR) {
		uint32_t d = c->d_ncpus;

		if (c->d_select != NO_DIR) {
			rc = note_at(c, d, "ignored: select= gives the CPUs");
		} else if (c->d_nodes != NO_DIR) {
			uint32_t per = c->ncpus / s->nodes_min;
			uint32_t tpn =
			    s->ntasks_per_node ? s->ntasks_per_node : 1;

			s->cpus_per_task = per / tpn ? per / tpn : 1;
			set_at(c, d, HB_F_CPUS_PER_TASK);
			rc = note_at(c, d,
				     "%u CPUs spread over %u nodes: %u "
				     "per task",
				     c->ncpus, s->nodes_min, s->cpus_per_task);
		} else {
			s->cpus_per_task = c->ncpus;
			set_at(c, d, HB_F_CPUS_PER_TASK);
			rc = note_at(c, d, "one task with %u CPUs", c->ncpus);
		}
		if (rc)
			return rc;
	}
	if (c->d_procs != NO_DIR) {
		if (c->d_select != NO_DIR) {
			rc = note_at(c, c->d_procs,
				     "ignored: select= gives the tasks");
			if (rc)
				return rc;
		} else {
			s->ntasks = c->procs;
			set_at(c, c->d_procs, HB_F_NTASKS);
		}
	}
	return 0;
}

static int settle_mem(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	bool mem = c->d_mem != NO_DIR && c->mem_mb;
	bool pmem = c->d_pmem != NO_DIR && c->pmem_mb;
	struct hb_shape sh;
	char w[48];

	if (s->mem_kind == HB_MEM_PER_NODE) {
		/* select= chunks gave memory per node */
		if (mem && note_at(c, c->d_mem,
				   "ignored: select= chunks give "
				   "memory per node"))
			return HB_ENOMEM;
		if (pmem && note_at(c, c->d_pmem,
				    "ignored: select= chunks "
				    "give memory per node"))
			return HB_ENOMEM;
		return 0;
	}
	if (mem && pmem) {
		uint64_t job, proc;

		if (hb_jobspec_shape(s, &sh)) {
			at_dir(c, c->d_pmem);
			return fail(c, HB_ERANGE,
				    "-l pmem: job shape overflows");
		}
		job = (c->mem_mb + sh.nodes - 1) / sh.nodes;
		proc = c->pmem_mb > UINT64_MAX / sh.tasks_per_node
			   ? UINT64_MAX
			   : c->pmem_mb * sh.tasks_per_node;
		if (proc > job) {
			mem = false;
			if (note_at(c, c->d_mem,
				    "dropped: pmem at %s needs more memory "
				    "per node (%llu MiB against %llu MiB)",
				    where(c, c->d_pmem, w),
				    (unsigned long long)proc,
				    (unsigned long long)job))
				return HB_ENOMEM;
		} else {
			pmem = false;
			if (note_at(c, c->d_pmem,
				    "dropped: the job-wide mem at %s needs at "
				    "least as much per node",
				    where(c, c->d_mem, w)))
				return HB_ENOMEM;
		}
	}
	if (mem) {
		s->mem_kind = HB_MEM_JOB;
		s->mem_mb = c->mem_mb;
		set_at(c, c->d_mem, HB_F_MEM);
	} else if (pmem) {
		s->mem_kind = HB_MEM_PER_PROCESS;
		s->mem_mb = c->pmem_mb;
		set_at(c, c->d_pmem, HB_F_MEM);
	}
	return 0;
}

static int dir_default(struct ctx *c, uint32_t d, const char **path, char which)
{
	const char *p = *path, *n;
	size_t len;

	if (d == NO_DIR || !p)
		return 0;
	len = strlen(p);
	if (!len || p[len - 1] != '/') {
		if (strchr(p, '%'))
			return note_at(c, d,
				       "'%%' in the path: Slurm reads it "
				       "as a file name pattern");
		return 0;
	}
	n = hb_arena_printf(&c->spec->arena, "%s%%x.%c%s", p, which,
			    c->spec->narray_ranges ? "%A.%a" : "%j");
	if (!n)
		return oom(c);
	*path = n;
	return note_at(c, d,
		       "a directory: PBS's default name JOB.%cSEQ%s is "
		       "used, as %s",
		       which, c->spec->narray_ranges ? ".INDEX" : "", n + len);
}

static int settle_misc(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	char w[48];
	int rc;

	/* GPUs given job-wide or as gres, when nodes/select gave none. */
	if (c->d_gres != NO_DIR && c->gres_gpus) {
		if (s->gpu_scope != HB_GPU_NONE) {
			rc = note_at(c, c->d_gres,
				     "gres GPUs dropped: GPUs "
				     "per node are already "
				     "given");
		} else {
			s->gpu_scope = HB_GPU_PER_NODE;
			s->gpus = c->gres_gpus;
			set_at(c, c->d_gres, HB_F_GPUS);
			rc = 0;
		}
		if (rc)
			return rc;
	}
	if (c->d_ngpus != NO_DIR) {
		if (s->gpu_scope != HB_GPU_NONE) {
			rc = note_at(c, c->d_ngpus,
				     "ignored: GPUs per node "
				     "are already given");
		} else if (c->ngpus) {
			s->gpu_scope = HB_GPU_PER_JOB;
			s->gpus = c->ngpus;
			set_at(c, c->d_ngpus, HB_F_GPUS);
			rc = 0;
		} else {
			rc = note_at(c, c->d_ngpus, "no GPUs");
		}
		if (rc)
			return rc;
	}
	/* Time limits. */
	if (c->d_wall != NO_DIR && c->wall) {
		s->time_limit = c->wall;
		set_at(c, c->d_wall, HB_F_TIME_LIMIT);
	}
	if (c->d_maxwall != NO_DIR && c->maxwall) {
		if (s->time_limit) {
			rc = note_at(c, c->d_maxwall,
				     "ignored: walltime is given");
			if (rc)
				return rc;
		} else {
			s->time_limit = c->maxwall;
			set_at(c, c->d_maxwall, HB_F_TIME_LIMIT);
		}
	}
	if (c->d_minwall != NO_DIR && c->minwall) {
		s->time_min = c->minwall;
		set_at(c, c->d_minwall, HB_F_TIME_MIN);
	}
	/* Stage-in files: data inputs (remote side of local@host:remote). */
	if (c->d_stagein != NO_DIR) {
		const char *p = c->stagein;

		while (*p) {
			size_t n = strcspn(p, ",");
			const char *at = memchr(p, '@', n);
			char *item = dupn(c, at + 1, (size_t)(p + n - at - 1));

			if (!item || hb_jobspec_add_data(s, item))
				return oom(c);
			p += n;
			if (*p)
				p++;
		}
		set_at(c, c->d_stagein, HB_F_DATA);
	}
	/* A directory gets PBS's default file name, JOB.oSEQ / JOB.eSEQ,
	 * as a Slurm pattern (%x job name, %j job id, %A.%a for arrays). */
	rc = dir_default(c, c->d_out, &s->output, 'o');
	if (!rc)
		rc = dir_default(c, c->d_errp, &s->error, 'e');
	if (rc)
		return rc;
	/* Join. */
	if (c->d_join != NO_DIR) {
		uint32_t d = c->d_join;

		if (c->join == JOIN_N) {
			s->join_output = false;
			rc = note_at(c, d, "streams stay apart (the default)");
		} else if (c->join == JOIN_OE) {
			s->join_output = true;
			set_at(c, d, HB_F_ERROR);
			rc = 0;
			if (c->d_errp != NO_DIR) {
				s->error = NULL;
				drop_field(c, c->d_errp, HB_F_ERROR);
				rc = note_at(c, c->d_errp,
					     "ignored: -j oe at %s sends "
					     "stderr to the output file",
					     where(c, d, w));
			}
		} else {
			s->join_output = true;
			rc = 0;
			if (c->d_out != NO_DIR) {
				drop_field(c, c->d_out, HB_F_OUTPUT);
				s->output = NULL;
				rc = note_at(c, c->d_out,
					     "ignored: -j eo at %s sends "
					     "stdout to the error file",
					     where(c, d, w));
			}
			if (!rc && c->d_errp != NO_DIR) {
				s->output = s->error;
				s->error = NULL;
				drop_field(c, c->d_errp, HB_F_ERROR);
				set_at(c, c->d_errp, HB_F_OUTPUT);
				set_at(c, d, HB_F_ERROR);
				rc = note_at(c, c->d_errp,
					     "both streams go here (-j eo)");
			} else if (!rc) {
				set_at(c, d, HB_F_ERROR);
				rc = note_at(c, d,
					     "eo: both streams go to one "
					     "file, the job's output file "
					     "here (PBS names it JOB.eNNN)");
			}
		}
		if (rc)
			return rc;
	}
	/* Project: the account, unless -A gives one. */
	if (c->d_project != NO_DIR) {
		if (!s->account) {
			s->account = c->project;
			set_at(c, c->d_project, HB_F_ACCOUNT);
			rc = note_at(c, c->d_project,
				     "PBS Pro project used as the account "
				     "(no -A)");
		} else {
			s->comment = hb_arena_printf(&s->arena, "project=%s",
						     c->project);
			if (!s->comment)
				return oom(c);
			set_at(c, c->d_project, HB_F_COMMENT);
			rc = note_at(c, c->d_project,
				     "-A gives the account; the project is "
				     "kept as the comment");
		}
		if (rc)
			return rc;
	}
	/* Export. */
	if (c->d_export != NO_DIR) {
		if (s->export_all)
			s->export_spec = hb_arena_printf(
			    &s->arena, "ALL%s%s", c->exports.len ? "," : "",
			    c->exports.len ? c->exports.data : "");
		else
			s->export_spec = dup(c, c->exports.data);
		if (!s->export_spec)
			return oom(c);
	}
	return 0;
}

/* Every directive says what it set or why it set nothing. */
static int check_notes(struct ctx *c)
{
	for (uint32_t i = 0; i < c->spec->ndirectives; i++) {
		struct hb_directive *d = &c->spec->directives[i];

		if (d->kind == HB_DIR_PBS && !d->nfields && !d->note) {
			d->note = "no effect";
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The script                                                          */

static int check_bytes(struct ctx *c, const char *buf, size_t len)
{
	uint32_t line = 1;

	c->cli = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n') {
			line++;
			continue;
		}
		if (ch >= 0x20 && ch != 0x7f)
			continue;
		if (ch == '\t')
			continue;
		c->loc = line;
		if (ch == '\r' && i + 1 < len && buf[i + 1] == '\n')
			return fail(c, HB_EINVAL,
				    "DOS line break (\\r\\n): the script was "
				    "saved on Windows; convert it with "
				    "dos2unix");
		if (ch == 0)
			return fail(c, HB_EINVAL, "NUL byte in the script");
		return fail(c, HB_EINVAL, "control byte 0x%02x in the script",
			    ch);
	}
	return 0;
}

static int check_argv(struct ctx *c, const char *const *argv, int argc)
{
	c->cli = true;
	for (int i = 0; i < argc; i++) {
		c->loc = (uint32_t)i;
		if (!argv[i])
			return fail(c, HB_EINVAL, "missing argument");
		for (const char *p = argv[i]; *p; p++) {
			unsigned char ch = (unsigned char)*p;

			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return fail(c, HB_EINVAL, "control byte 0x%02x",
					    ch);
		}
		if (strlen(argv[i]) > HB_SCRIPT_MAX)
			return fail(c, HB_ETOOBIG, "argument too long");
	}
	return 0;
}

/* The directive prefix a command-line -C sets, if any. */
static const char *cli_prefix(const char *const *argv, int argc,
			      const char *pfx)
{
	for (int i = 0; i < argc; i++) {
		const char *v = argv[i];

		if (!v || v[0] != '-' || !v[1] || v[1] == '-')
			return pfx;
		for (size_t j = 1; v[j]; j++) {
			int k = opt_kind(v[j]);
			const char *a;

			if (k == OPT_NONE)
				return pfx;
			if (k == OPT_FLAG)
				continue;
			a = v[j + 1] ? v + j + 1
				     : (i + 1 < argc ? argv[++i] : NULL);
			if (v[j] == 'C' && a)
				pfx = a;
			break;
		}
	}
	return pfx;
}

/* An #SBATCH line in a PBS script: listed, so that the report shows it,
 * but not applied, as qsub would not. */
static int sbatch_line(struct ctx *c, const char *p, size_t n)
{
	struct hb_origin o = {HB_ORIGIN_FILE, c->loc};
	struct hb_directive *d =
	    hb_jobspec_add_directive(c->spec, HB_DIR_SBATCH, o, p, n);

	if (!d)
		return HB_ENOMEM;
	d->note = "not read: a PBS script's directives are its #PBS lines; "
		  "translate an sbatch script to use #SBATCH";
	return 0;
}

static int read_header(struct ctx *c, const char *buf, size_t len,
		       const char *pfx)
{
	const char *p = buf, *end = buf + len;
	size_t plen = pfx ? strlen(pfx) : 0;
	uint32_t line = 0;

	c->cli = false;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n, k = 0;

		if (!eol)
			eol = end;
		n = (size_t)(eol - p);
		line++;
		c->loc = line;
		if (plen && n >= plen && memcmp(p, pfx, plen) == 0 &&
		    (n == plen || is_blank(p[plen]))) {
			struct word *w = NULL;
			size_t nw = 0;
			int rc = split_line(c, p + plen, n - plen, &w, &nw);

			rc = rc ? rc : run_options(c, w, nw);
			free(w);
			if (rc)
				return rc;
		} else {
			while (k < n && is_blank(p[k]))
				k++;
			if (k < n && p[k] != '#')
				break;
			if (n >= 7 && memcmp(p, "#SBATCH", 7) == 0 &&
			    (n == 7 || is_blank(p[7])) && sbatch_line(c, p, n))
				return oom(c);
		}
		p = eol < end ? eol + 1 : end;
	}
	return 0;
}

static int read_argv(struct ctx *c, const char *const *argv, int argc)
{
	struct word *w;

	if (argc <= 0)
		return 0;
	c->cli = true;
	w = hb_arena_alloc(&c->spec->arena, (size_t)argc * sizeof(*w));
	if (!w)
		return oom(c);
	for (int i = 0; i < argc; i++) {
		w[i].raw = argv[i];
		w[i].rawlen = strlen(argv[i]);
		w[i].val = dup(c, argv[i]);
		w[i].loc = (uint32_t)i;
		if (!w[i].val)
			return oom(c);
	}
	return run_options(c, w, (size_t)argc);
}

int hb_pbs_parse(const char *buf, size_t len, const char *name,
		 const char *const *argv, int argc, struct hb_jobspec *spec,
		 struct hb_err *err)
{
	struct ctx c;
	const char *pfx = "#PBS";
	int rc;

	memset(&c, 0, sizeof(c));
	c.spec = spec;
	c.err = err;
	c.name = name ? name : "-";
	c.d_nodes = c.d_select = c.d_place = c.d_wall = NO_DIR;
	c.d_minwall = c.d_maxwall = c.d_mem = c.d_pmem = NO_DIR;
	c.d_ncpus = c.d_procs = c.d_ngpus = c.d_naccess = NO_DIR;
	c.d_feature = c.d_gres = c.d_host = NO_DIR;
	c.d_join = c.d_out = c.d_errp = c.d_project = NO_DIR;
	c.d_wx = c.d_stagein = c.d_export = NO_DIR;
	c.note_dir = NO_DIR;
	hb_buf_init(&c.exports, 0);
	spec->source = HB_SRC_PBS;

	if (!buf || len == 0) {
		rc = hb_err_set(err, HB_EINVAL, c.name, 0, "empty script");
		goto out;
	}
	if (len > HB_SCRIPT_MAX) {
		rc =
		    hb_err_set(err, HB_ETOOBIG, c.name, 0,
			       "script is larger than %u bytes", HB_SCRIPT_MAX);
		goto out;
	}
	if (argc < 0 || (argc > 0 && !argv)) {
		rc = hb_err_set(err, HB_EINVAL, c.name, 0,
				"bad argument vector");
		goto out;
	}
	rc = check_bytes(&c, buf, len);
	if (!rc)
		rc = check_argv(&c, argv, argc);
	if (rc)
		goto out;

	spec->script = dupn(&c, buf, len);
	if (!spec->script) {
		rc = oom(&c);
		goto out;
	}
	spec->script_len = (uint32_t)len;
	hb_jobspec_set_origin(spec, HB_F_SCRIPT,
			      (struct hb_origin){HB_ORIGIN_FILE, 1});
	if (len >= 2 && buf[0] == '#' && buf[1] == '!') {
		const char *s = buf + 2, *e = memchr(buf, '\n', len);

		if (!e)
			e = buf + len;
		while (s < e && is_blank(*s))
			s++;
		while (e > s && is_blank(e[-1]))
			e--;
		if (e > s) {
			spec->interpreter = dupn(&c, s, (size_t)(e - s));
			if (!spec->interpreter) {
				rc = oom(&c);
				goto out;
			}
		}
	}

	pfx = cli_prefix(argv, argc, pfx);
	rc = read_header(&c, buf, len, pfx);
	if (!rc)
		rc = read_argv(&c, argv, argc);
	if (!rc)
		rc = settle_shape(&c);
	if (!rc)
		rc = settle_lists(&c);
	if (!rc)
		rc = settle_mem(&c);
	if (!rc)
		rc = settle_misc(&c);
	if (!rc)
		rc = check_notes(&c);
	if (!rc)
		rc = hb_jobspec_scan_body(spec, err);
out:
	hb_buf_free(&c.exports);
	return rc;
}

int hb_pbs_detect(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	if (!buf)
		return 0;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n, k = 0;

		if (!eol)
			eol = end;
		n = (size_t)(eol - p);
		if (n >= 4 && memcmp(p, "#PBS", 4) == 0 &&
		    (n == 4 || is_blank(p[4]) || p[4] == '\r'))
			return 1;
		if (n >= 7 && memcmp(p, "#SBATCH", 7) == 0 &&
		    (n == 7 || is_blank(p[7]) || p[7] == '\r'))
			return 0;
		while (k < n && (is_blank(p[k]) || p[k] == '\r'))
			k++;
		if (k < n && p[k] != '#')
			return 0;
		p = eol < end ? eol + 1 : end;
	}
	return 0;
}
