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
 *
 * The files of the reader: this one (the script, the command line, the
 * word lists, the driver, and the helpers every part uses),
 * pbs_options.c (the options and -W), pbs_resources.c (-l) and
 * pbs_settle.c (what is settled at the end); pbs_int.h is what they
 * share.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/sbatch.h"
#include "hpcbridge/units.h"
#include "pbs_int.h"

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* ------------------------------------------------------------------ */
/* Errors, strings, directives and their notes                          */

int pbs_fail(struct ctx *c, int code, const char *fmt, ...)
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

int pbs_oom(struct ctx *c)
{
	return pbs_fail(c, HB_ENOMEM, "out of memory");
}

char *pbs_dup(struct ctx *c, const char *s)
{
	return hb_jobspec_strdup(c->spec, s);
}

char *pbs_dupn(struct ctx *c, const char *s, size_t n)
{
	return hb_jobspec_strndup(c->spec, s, n);
}

/*
 * The account as Slurm stores it: slurmctld lowercases every account name
 * (ASCII capitals, whatever the configuration) when it creates the job,
 * as sacctmgr does when it creates the account, so "K1206" is charged and
 * shown as "k1206".  Sets the jobspec's account and notes a change on d.
 */
int pbs_set_account(struct ctx *c, const char *v, uint32_t d)
{
	char *low = pbs_dup(c, v);
	bool changed = false;

	if (!low)
		return pbs_oom(c);
	for (char *p = low; *p; p++) {
		changed |= *p != hb_ascii_lower(*p);
		*p = hb_ascii_lower(*p);
	}
	c->spec->account = low;
	pbs_set_at(c, d, HB_F_ACCOUNT);
	return changed ? pbs_note_at(c, d, "account %s: Slurm stores account "
					   "names in lower case", low)
		       : 0;
}

/* Where directive d was written, for notes: "line 7" or "argv[2]". */
const char *pbs_where(struct ctx *c, uint32_t d, char buf[48])
{
	const struct hb_directive *x = dir_at(c, d);

	if (x->prov.kind == HB_PROV_CLI)
		snprintf(buf, 48, "argv[%u]", x->prov.line);
	else
		snprintf(buf, 48, "line %u", x->prov.line);
	return buf;
}

/* Append a remark to directive d's note. */
int pbs_note_at(struct ctx *c, uint32_t d, const char *fmt, ...)
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
		n = pbs_dupn(c, msg, ml);
		if (!n)
			return pbs_oom(c);
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
			return pbs_oom(c);
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

/* Record that directive d set field f (its provenance becomes d's). */
void pbs_set_at(struct ctx *c, uint32_t d, enum hb_field f)
{
	hb_jobspec_set_prov(c->spec, f, dir_at(c, d)->prov);
	hb_directive_add_field(dir_at(c, d), f);
}

/* Directive d had a part in field f's value, which several directives
 * gave together: the field's provenance is derived, and d lists it. */
void pbs_set_derived(struct ctx *c, uint32_t d, enum hb_field f)
{
	hb_jobspec_set_prov(c->spec, f, (struct hb_prov){HB_PROV_DERIVED, 0});
	hb_directive_add_field(dir_at(c, d), f);
}

void pbs_drop_field(struct ctx *c, uint32_t d, enum hb_field f)
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

int pbs_new_dir(struct ctx *c, const char *text, size_t len)
{
	struct hb_prov o;
	struct hb_directive *d;

	if (c->spec->ndirectives >= MAX_DIRECTIVES)
		return pbs_fail(c, HB_ETOOBIG, "more than %d directives",
				MAX_DIRECTIVES);
	o.kind = c->cli ? HB_PROV_CLI : HB_PROV_FILE;
	o.line = c->loc;
	d = hb_jobspec_add_directive(c->spec, HB_DIR_PBS, o, text, len);
	if (!d)
		return pbs_oom(c);
	c->cur = (uint32_t)(d - c->spec->directives);
	return 0;
}

/* The current directive replaces resource slot *slot. */
int pbs_take_slot(struct ctx *c, uint32_t *slot)
{
	char w[48];
	int rc = 0;

	if (*slot != NO_DIR && *slot != c->cur)
		rc = pbs_note_at(c, *slot, "overridden by %s",
				 pbs_where(c, c->cur, w));
	*slot = c->cur;
	return rc;
}

int pbs_set_add(struct ctx *c, struct strset *s, const char *w, size_t n)
{
	const char *copy;

	for (uint32_t i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == n && memcmp(s->v[i], w, n) == 0)
			return 0;
	if (s->n >= MAX_ITEMS)
		return pbs_fail(c, HB_ETOOBIG, "more than %d items in one list",
				MAX_ITEMS);
	if (!s->v) {
		s->v =
		    hb_arena_alloc(&c->spec->arena, MAX_ITEMS * sizeof(*s->v));
		if (!s->v)
			return pbs_oom(c);
	}
	copy = pbs_dupn(c, w, n);
	if (!copy)
		return pbs_oom(c);
	s->v[s->n++] = copy;
	return 0;
}

/* Numbers, sizes and times, with errors naming what and the value. */
int pbs_num32(struct ctx *c, const char *what, const char *v, uint32_t min,
	      uint32_t max, uint32_t *out)
{
	int rc = hb_parse_u32(v, out);

	if (rc == HB_ERANGE || (!rc && *out > max))
		return pbs_fail(c, HB_ERANGE,
				"%s: number '%s' is too large (at most %u, as "
				"sbatch)",
				what, v, max);
	if (rc)
		return pbs_fail(c, HB_EINVAL, "%s: malformed number '%s'", what,
				v);
	if (*out < min)
		return pbs_fail(c, HB_EINVAL, "%s: '%s' must be at least %u",
				what, v, min);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Word lists, read getopt style                                        */

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
			return pbs_fail(
				c, HB_EINVAL,
				"unexpected argument '%s' (qsub options "
				"start with '-')",
				v);
		if (v[1] == '-')
			return pbs_fail(c, HB_EINVAL, "unknown option '%s'", v);
		for (size_t j = 1; v[j]; j++) {
			char o = v[j];
			int kind = pbs_opt_kind(o);
			const char *arg, *text;

			if (kind == OPT_NONE)
				return pbs_fail(c, HB_EINVAL,
						"unknown option -%c in '%s'", o,
						v);
			if (kind == OPT_FLAG) {
				char t[3] = {'-', o, '\0'};

				rc = pbs_new_dir(c, t, 2);
				rc = rc ? rc : pbs_option(c, o, NULL);
				if (rc)
					return rc;
				continue;
			}
			if (v[j + 1]) {
				arg = v + j + 1;
				if (j == 1)
					text = pbs_dupn(c, w[i].raw,
							w[i].rawlen);
				else
					text = hb_arena_printf(&c->spec->arena,
							       "-%c%s", o, arg);
			} else {
				if (i + 1 >= nw)
					return pbs_fail(c, HB_EINVAL,
							"-%c: missing argument",
							o);
				i++;
				arg = w[i].val;
				text = hb_arena_printf(
				    &c->spec->arena, "-%c %.*s", o,
				    (int)w[i].rawlen, w[i].raw);
			}
			if (!text)
				return pbs_oom(c);
			if (o == 'l')
				rc = pbs_opt_l(c, arg);
			else if (o == 'W')
				rc = pbs_opt_W(c, arg);
			else
				rc = pbs_new_dir(c, text, strlen(text))
					     ?: pbs_option(c, o, arg);
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
		return pbs_oom(c);
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
					return pbs_fail(c, HB_EINVAL,
							"unterminated ' quote");
				l = (size_t)(q - (s + i + 1));
				memcpy(o, s + i + 1, l);
				o += l;
				i = (size_t)(q - s) + 1;
			} else if (ch == '"') {
				for (i++;;) {
					if (i >= n)
						return pbs_fail(
							c, HB_EINVAL,
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
					return pbs_fail(c, HB_EINVAL,
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
			return pbs_fail(
				c, HB_EINVAL,
				"DOS line break (\\r\\n): the script was "
				"saved on Windows; convert it with "
				"dos2unix");
		if (ch == 0)
			return pbs_fail(c, HB_EINVAL, "NUL byte in the script");
		return pbs_fail(c, HB_EINVAL,
				"control byte 0x%02x in the script", ch);
	}
	return 0;
}

static int check_argv(struct ctx *c, const char *const *argv, int argc)
{
	c->cli = true;
	for (int i = 0; i < argc; i++) {
		c->loc = (uint32_t)i;
		if (!argv[i])
			return pbs_fail(c, HB_EINVAL, "missing argument");
		for (const char *p = argv[i]; *p; p++) {
			unsigned char ch = (unsigned char)*p;

			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return pbs_fail(c, HB_EINVAL,
						"control byte 0x%02x", ch);
		}
		if (strlen(argv[i]) > HB_SCRIPT_MAX)
			return pbs_fail(c, HB_ETOOBIG, "argument too long");
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
			int k = pbs_opt_kind(v[j]);
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
	struct hb_prov o = {HB_PROV_FILE, c->loc};
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
				return pbs_oom(c);
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
		return pbs_oom(c);
	for (int i = 0; i < argc; i++) {
		w[i].raw = argv[i];
		w[i].rawlen = strlen(argv[i]);
		w[i].val = pbs_dup(c, argv[i]);
		w[i].loc = (uint32_t)i;
		if (!w[i].val)
			return pbs_oom(c);
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
	c.d_mppwidth = c.d_mppnppn = c.d_mppdepth = NO_DIR;
	c.d_mppmem = c.d_mppnodes = NO_DIR;
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

	spec->script = pbs_dupn(&c, buf, len);
	if (!spec->script) {
		rc = pbs_oom(&c);
		goto out;
	}
	spec->script_len = (uint32_t)len;
	hb_jobspec_set_prov(spec, HB_F_SCRIPT,
			      (struct hb_prov){HB_PROV_FILE, 1});
	if (len >= 2 && buf[0] == '#' && buf[1] == '!') {
		const char *s = buf + 2, *e = memchr(buf, '\n', len);

		if (!e)
			e = buf + len;
		while (s < e && is_blank(*s))
			s++;
		while (e > s && is_blank(e[-1]))
			e--;
		if (e > s) {
			spec->interpreter = pbs_dupn(&c, s, (size_t)(e - s));
			if (!spec->interpreter) {
				rc = pbs_oom(&c);
				goto out;
			}
		}
	}

	pfx = cli_prefix(argv, argc, pfx);
	rc = read_header(&c, buf, len, pfx);
	if (!rc)
		rc = read_argv(&c, argv, argc);
	if (!rc)
		rc = pbs_settle(&c);
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
