/*
 * sbatch.c - read an sbatch script exactly as Slurm 22.05's sbatch reads
 * it (src/sbatch/sbatch.c, src/sbatch/opt.c, src/common/slurm_opt.c):
 *
 *  - the script must start with "#!", may not contain NUL bytes or DOS
 *    line breaks (we also refuse other control bytes);
 *  - "#SBATCH" (or "#SLURM") at column 0 starts a directive; scanning stops
 *    at the first line that is neither blank nor a comment;
 *  - each directive line is split like get_argument(): white space
 *    separates, quotes group, a backslash escapes, an unquoted '#' ends
 *    the line, and an empty argument ends the line;
 *  - the arguments of all lines form one argv that getopt_long() reads
 *    with sbatch's option table (so an option's value may sit on the next
 *    line, long options may be abbreviated, short options clustered);
 *  - then the SBATCH_* environment variables, then the command line, each
 *    overriding the one before option by option;
 *  - then the checks sbatch makes at the end (memory options, node and
 *    task counts).
 *
 * Every option read becomes a directive in the jobspec; those that map to
 * a field set it, the others carry a note saying what they were.
 *
 * The files of the reader: this one (the script, the variables, the
 * command line, getopt, the driver), sbatch_options.c (the option table),
 * sbatch_values.c (each option's value) and sbatch_resolve.c (what sbatch
 * settles at the end); sbatch_int.h is what they share.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbatch_int.h"

/* ------------------------------------------------------------------ */
/* Characters and numbers, as the C locale sees them                   */
/* ------------------------------------------------------------------ */

/*
 * strtol(s, &end, 10) without undefined behaviour: leading white space, a
 * sign, digits.  *end is s when there are no digits.  Returns true on
 * overflow (the value is then clamped).
 */
bool sb_strtol(const char *s, long *out, const char **end)
{
	const char *p = s;
	bool neg = false, ovf = false;
	unsigned long v = 0, lim;

	while (is_space(*p))
		p++;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	lim = neg ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
	if (!is_digit(*p)) {
		*out = 0;
		*end = s;
		return false;
	}
	for (; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (ovf || v > (lim - d) / 10)
			ovf = true;
		else
			v = v * 10 + d;
	}
	*end = p;
	if (ovf)
		*out = neg ? LONG_MIN : LONG_MAX;
	else if (neg)
		*out = v == (unsigned long)LONG_MAX + 1 ? LONG_MIN : -(long)v;
	else
		*out = (long)v;
	return ovf;
}

/* ------------------------------------------------------------------ */
/* Errors, messages, directives                                        */
/* ------------------------------------------------------------------ */

int sb_fail(struct ctx *c, int code, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(c->err, code, c->where, c->where_line, "%s", msg);
}

int sb_nomem(struct ctx *c)
{
	return sb_fail(c, HB_ENOMEM, "out of memory");
}

/* Values are quoted in messages; keep them short and printable. */
const char *sb_shown(struct ctx *c, const char *v)
{
	char buf[80];
	size_t i, n = 0;

	if (!v)
		return "";
	for (i = 0; v[i] && n < sizeof(buf) - 4; i++)
		buf[n++] = (unsigned char)v[i] < 0x20 ? '?' : v[i];
	if (v[i]) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return hb_arena_strdup(&c->spec->arena, buf);
}

static int add_dir(struct ctx *c, int id, uint16_t flags, const char *text,
		   size_t len, uint8_t kind)
{
	struct hb_directive *d;
	uint32_t idx = c->spec->ndirectives;

	d = hb_jobspec_add_directive(c->spec, kind, c->prov, text, len);
	if (!d)
		return sb_nomem(c);
	if (idx >= c->ndinfo) {
		uint32_t n = c->ndinfo ? c->ndinfo * 2 : 32;
		uint16_t *p;

		if (n <= idx)
			n = idx + 1;
		p = realloc(c->dinfo, (size_t)n * sizeof(*p));
		if (!p)
			return sb_nomem(c);
		c->dinfo = p;
		c->ndinfo = n;
	}
	c->dinfo[idx] = (uint16_t)(id | flags);
	c->cur = idx;
	return 0;
}

/* Add a remark to directive d (after any it already has). */
void sb_note(struct ctx *c, uint32_t d, const char *text)
{
	struct hb_directive *x = dir(c, d);
	const char *both;

	if (!text)
		return;
	if (!x->note || strcmp(x->note, text) == 0) {
		x->note = text;
		return;
	}
	both = hb_arena_printf(&c->spec->arena, "%s; %s", x->note, text);
	x->note = both ? both : text;
}

/* The field f now comes from directive d. */
void sb_set_field(struct ctx *c, enum hb_field f, uint32_t d)
{
	hb_jobspec_set_prov(c->spec, f, dir(c, d)->prov);
	hb_directive_add_field(dir(c, d), f);
}

/* ------------------------------------------------------------------ */
/* Reading one option                                                  */
/* ------------------------------------------------------------------ */

/* Reset option id (an environment variable set a flag to "no"). */
static void reset(struct ctx *c, int id)
{
	struct slot *s = &c->slot[sb_group(id)];

	s->set = false;
	s->by_env = false;
	s->dir = NO_DIR;
	s->reset_by = c->cur;
	s->val = NULL;
	if (id == O_IGNORE_PBS)
		c->ignore_pbs = false;
}

/*
 * An option as read from the script or the command line: early-pass
 * options are skipped as sbatch's second pass skips them, the others
 * applied.  text/len: the directive as written.
 */
static int option(struct ctx *c, int id, const char *arg, const char *text,
		  size_t len)
{
	int rc;
	const char *copy = arg;

	if (arg && c->prov.kind != HB_PROV_FILE) {
		copy = hb_jobspec_strdup(c->spec, arg);
		if (!copy)
			return sb_nomem(c);
	}
	if (sb_early_pass(id)) {
		rc = add_dir(c, id, DI_NOVALUE, text, len, HB_DIR_SBATCH);
		if (rc)
			return rc;
		sb_note(c, c->cur, sb_unmapped_note[id]);
		if (c->prov.kind == HB_PROV_CLI && id != O_VERBOSE &&
		    id != O_QUIET)
			return sb_fail(c, HB_EINVAL,
				       "--%s makes sbatch %s, not "
				       "submit this script",
				       sb_opt_name(id),
				       id == O_WRAP ? "submit its own command"
						    : "print and exit");
		return 0;
	}
	rc = add_dir(c, id, 0, text, len, HB_DIR_SBATCH);
	if (rc)
		return rc;
	if (sb_unmapped_note[id])
		sb_note(c, c->cur, sb_unmapped_note[id]);
	return sb_apply(c, id, copy);
}

/* ------------------------------------------------------------------ */
/* getopt_long(), with sbatch's "+" option string                      */
/* ------------------------------------------------------------------ */

struct tok {
	const char *val;
	const char *raw;
	uint32_t rawlen;
	uint32_t line;
};

struct toks {
	struct tok *v;
	size_t n, cap;
};

static int push_tok(struct toks *t, const struct tok *x)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 32;
		struct tok *p = realloc(t->v, cap * sizeof(*p));

		if (!p)
			return HB_ENOMEM;
		t->v = p;
		t->cap = cap;
	}
	t->v[t->n++] = *x;
	return 0;
}

static void set_where(struct ctx *c, const struct tok *t)
{
	c->prov.line = t->line;
	c->where_line = t->line;
}

/* text: raw of t, plus " " and raw of u when the value is separate. */
static int join_text(struct ctx *c, const struct tok *t, const struct tok *u,
		     const char *prefix, size_t plen)
{
	int rc;

	hb_buf_reset(&c->text);
	if (prefix)
		rc = hb_buf_append(&c->text, prefix, plen);
	else
		rc = hb_buf_append(&c->text, t->raw, t->rawlen);
	if (!rc && u) {
		rc = hb_buf_putc(&c->text, ' ');
		if (!rc)
			rc = hb_buf_append(&c->text, u->raw, u->rawlen);
	}
	return rc ? sb_nomem(c) : 0;
}

static int long_option(struct ctx *c, struct toks *ts, size_t *i)
{
	const struct tok *t = &ts->v[*i], *u = NULL;
	const char *name = t->val + 2, *eq = strchr(name, '=');
	size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
	const struct lopt *found = NULL;
	bool ambig = false;
	const char *arg = NULL;
	int rc;

	found = sb_long_opt(name, nlen, &ambig);
	set_where(c, t);
	if (ambig) {
		struct hb_buf b;

		hb_buf_init(&b, 0);
		sb_long_opt_list(&b, name, nlen);
		rc = sb_fail(c, HB_EINVAL,
			     "option '%s' is ambiguous; possibilities:%s",
			     sb_shown(c, t->val), b.data ? b.data : "");
		hb_buf_free(&b);
		return rc;
	}
	if (!found)
		return sb_fail(c, HB_EINVAL, "unrecognized option '%s'",
			       sb_shown(c, t->val));
	if (eq) {
		if (found->has_arg == NO_ARG)
			return sb_fail(
				c, HB_EINVAL,
				"option '--%s' doesn't allow an argument",
				found->name);
		arg = eq + 1;
	} else if (found->has_arg == REQ_ARG) {
		if (*i + 1 >= ts->n)
			return sb_fail(c, HB_EINVAL,
				       "option '--%s' requires an argument",
				       found->name);
		u = &ts->v[++*i];
		arg = u->val;
	}
	rc = join_text(c, t, u, NULL, 0);
	if (rc)
		return rc;
	rc = option(c, found->id, arg, c->text.data, c->text.len);
	(*i)++;
	return rc;
}

static int short_options(struct ctx *c, struct toks *ts, size_t *i)
{
	const struct tok *t = &ts->v[*i];
	const char *p = t->val + 1;
	size_t ti = *i;
	int rc;

	set_where(c, t);
	while (*p) {
		const struct lopt *o = sb_short_opt(*p);
		const struct tok *u = NULL;
		const char *arg = NULL, *start = p;
		bool whole;

		if (!o)
			return sb_fail(c, HB_EINVAL, "invalid option -- '%c'",
				       (unsigned char)*p < 0x20 ? '?' : *p);
		p++;
		if (o->has_arg == REQ_ARG) {
			if (*p) {
				arg = p;
			} else if (*i + 1 < ts->n) {
				u = &ts->v[++*i];
				arg = u->val;
			} else {
				return sb_fail(c, HB_EINVAL,
					       "option requires an "
					       "argument -- '%c'",
					       o->shortc);
			}
			p += strlen(p);
		} else if (o->has_arg == OPT_ARG && *p) {
			arg = p;
			p += strlen(p);
		}
		whole = start == t->val + 1 && *p == '\0';
		if (whole) {
			rc = join_text(c, t, u, NULL, 0);
		} else {
			char pre[2] = {'-', o->shortc};

			rc = join_text(c, t, u, pre, 2);
			if (!rc && arg && !u && hb_buf_puts(&c->text, arg))
				rc = sb_nomem(c);
		}
		if (rc)
			return rc;
		rc = option(c, o->id, arg, c->text.data, c->text.len);
		if (rc)
			return rc;
		set_where(c, &ts->v[ti]);
	}
	(*i)++;
	return 0;
}

/* Read every option in ts; a non-option argument is an error. */
static int getopt_all(struct ctx *c, struct toks *ts)
{
	size_t i = 0;
	int rc;

	while (i < ts->n) {
		const struct tok *t = &ts->v[i];
		const char *a = t->val;

		if (a[0] != '-' || a[1] == '\0') {
			set_where(c, t);
			if (c->prov.kind == HB_PROV_FILE)
				return sb_fail(
					c, HB_EINVAL,
					"invalid directive found in batch "
					"script: %s",
					sb_shown(c, a));
			return sb_fail(c, HB_EINVAL,
				       "unexpected argument '%s' (only sbatch "
				       "options are expected)",
				       sb_shown(c, a));
		}
		if (strcmp(a, "--") == 0) {
			if (i + 1 < ts->n) {
				set_where(c, &ts->v[i + 1]);
				return sb_fail(
					c, HB_EINVAL,
					"invalid directive found in batch "
					"script: %s",
					sb_shown(c, ts->v[i + 1].val));
			}
			return 0;
		}
		rc = a[1] == '-' ? long_option(c, ts, &i)
				 : short_options(c, ts, &i);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The script header                                                   */
/* ------------------------------------------------------------------ */

/* "hetjob"/"packjob" at p, followed by white space or the line's end. */
static bool het_word(const char *p, const char *e)
{
	if (e - p >= 7 && hb_ascii_iprefix(p, "packjob") &&
	    (p + 7 == e || is_space(p[7])))
		return true;
	return e - p >= 6 && hb_ascii_iprefix(p, "hetjob") &&
	       (p + 6 == e || is_space(p[6]));
}

/*
 * get_argument(): the next argument of a directive line [*pp, e).
 * Returns 1 and fills *t, 0 at the end of the line's arguments, or an
 * error.  scratch holds at least e - *pp bytes.
 */
static int get_argument(struct ctx *c, const char **pp, const char *e,
			char *scratch, struct tok *t)
{
	const char *p = *pp, *start;
	bool esc = false, quoted = false;
	char q = 0;
	size_t n = 0;

	while (p < e && is_space(*p))
		p++;
	if (het_word(p, e))
		return 0; /* sbatch blanks the word, ending the line */
	if (p < e && *p == ':')
		return sb_fail(c, HB_EINVAL, "unexpected ':' in #SBATCH line");
	if (p == e)
		return 0;
	start = p;
	/* The usual argument has no quote, backslash or '#': it is taken as
	 * it is written. */
	{
		static const unsigned char stop[256] = {
			[' '] = 1,  ['\t'] = 1, ['\n'] = 1, ['\v'] = 1,
			['\f'] = 1, ['\r'] = 1, ['\\'] = 1, ['"'] = 1,
			['\''] = 1, ['#'] = 1,
		};
		const char *r = p;

		while (r < e && !stop[(unsigned char)*r])
			r++;
		if (r == e || is_space(*r)) {
			t->val = hb_jobspec_strndup(c->spec, p, (size_t)(r - p));
			if (!t->val)
				return sb_nomem(c);
			*pp = r;
			t->raw = start;
			t->rawlen = (uint32_t)(r - start);
			return 1;
		}
	}
	while (p < e && (quoted || !is_space(*p))) {
		if (esc) {
			esc = false;
		} else if (*p == '\\') {
			esc = true;
			p++;
			continue;
		} else if (quoted) {
			if (*p == q) {
				quoted = false;
				p++;
				continue;
			}
		} else if (*p == '"' || *p == '\'') {
			quoted = true;
			q = *p++;
			continue;
		} else if (*p == '#') {
			break;
		}
		scratch[n++] = *p++;
	}
	if (quoted)
		return sb_fail(c, HB_EINVAL, "unmatched %c in #SBATCH line", q);
	*pp = p;
	if (n == 0)
		return 0; /* an empty argument ends the line, as in sbatch */
	t->val = hb_jobspec_strndup(c->spec, scratch, n);
	if (!t->val)
		return sb_nomem(c);
	t->raw = start;
	t->rawlen = (uint32_t)(p - start);
	return 1;
}

/* A line that stops sbatch's scan: anything but blanks and comments. */
static bool is_command(const char *p, const char *e)
{
	for (; p < e; p++) {
		if (is_space(*p))
			continue;
		return *p != '#';
	}
	return false;
}

static int read_header(struct ctx *c, struct toks *ts)
{
	const char *s = c->spec->script, *end = s + c->spec->script_len;
	char *scratch = malloc((size_t)c->spec->script_len + 1);
	uint32_t line = 0;
	int rc = 0;

	if (!scratch)
		return sb_nomem(c);
	c->prov.kind = HB_PROV_FILE;
	c->where = c->name;
	for (const char *p = s; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q;

		line++;
		c->where_line = line;
		if (le - p >= 7 && memcmp(p, "#SBATCH", 7) == 0) {
			q = p + 7;
		} else if (le - p >= 6 && memcmp(p, "#SLURM", 6) == 0) {
			q = p + 6;
		} else {
			if (is_command(p, le))
				break;
			p = nl ? nl + 1 : end;
			continue;
		}
		while (q < le && is_space(*q))
			q++;
		if (het_word(q, le)) {
			rc = sb_fail(c, HB_EUNSUP,
				     "heterogeneous job components "
				     "(#SBATCH hetjob) are not supported");
			break;
		}
		for (;;) {
			struct tok t;

			rc = get_argument(c, &q, le, scratch, &t);
			if (rc <= 0)
				break;
			t.line = line;
			if (push_tok(ts, &t)) {
				rc = sb_nomem(c);
				break;
			}
		}
		if (rc < 0)
			break;
		rc = 0;
		p = nl ? nl + 1 : end;
	}
	free(scratch);
	return rc;
}

/*
 * sbatch also translates #BSUB or #PBS lines (the first kind it finds,
 * anywhere in the first 100 non-comment lines) unless --ignore-pbs.  We
 * do not: record each such line so that the report shows it.
 */
static int wrapper_lines(struct ctx *c)
{
	static const char *const magic[] = {"#BSUB", "#PBS"};
	const char *s = c->spec->script, *end = s + c->spec->script_len;

	/* the first line is "#!...", so such a line follows a newline */
	if (!strstr(s, "\n#BSUB") && !strstr(s, "\n#PBS"))
		return 0;

	for (int m = 0; m < 2; m++) {
		size_t ml = strlen(magic[m]);
		uint32_t line = 0, noncomment = 0;
		bool found = false;

		for (const char *p = s; p < end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *le = nl ? nl : end;

			line++;
			if ((size_t)(le - p) >= ml &&
			    memcmp(p, magic[m], ml) == 0) {
				int rc;

				found = true;
				c->prov.kind = HB_PROV_FILE;
				c->prov.line = line;
				rc = add_dir(c, 0, DI_NOVALUE, p,
					     (size_t)(le - p),
					     m ? HB_DIR_PBS : HB_DIR_SBATCH);
				if (rc)
					return rc;
				sb_note(c, c->cur,
					c->ignore_pbs
						? "ignored, as sbatch does "
						  "with --ignore-pbs"
						: "sbatch would translate this "
						  "line itself; not read");
			} else if (*p != '#') {
				if (++noncomment > 100)
					break;
			}
			p = nl ? nl + 1 : end;
		}
		if (found)
			break;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Environment and command line                                        */
/* ------------------------------------------------------------------ */

static const char *env_get(const char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* One variable, as slurm_process_option(set_by_env = true) takes it. */
static int env_option(struct ctx *c, const char *var, int id, const char *val)
{
	uint8_t has = sb_opt_has_arg(id);
	const char *arg = val;
	bool set = true;
	char *text;
	int rc;

	c->prov.kind = HB_PROV_ENV;
	c->prov.line = 0;
	c->where = var;
	c->where_line = 0;
	text = hb_arena_printf(&c->spec->arena, "%s=%s", var, val);
	if (!text)
		return sb_nomem(c);
	if (has == NO_ARG) {
		const char *end;
		long n;

		if (*val == '\0' || ieq(val, "yes"))
			set = true;
		else
			set = !sb_strtol(val, &n, &end) && end != val &&
			      *end == '\0' && n != 0;
		arg = id == O_VERBOSE ? val : NULL;
	} else if (has == OPT_ARG && *val == '\0') {
		arg = NULL;
	}
	if (!set) {
		rc = add_dir(c, id, DI_NOVALUE, text, strlen(text),
			     HB_DIR_SBATCH);
		if (rc)
			return rc;
		reset(c, id);
		sb_note(c, c->cur,
			hb_arena_printf(&c->spec->arena, "resets --%s",
					sb_opt_name(id)));
		return 0;
	}
	rc = add_dir(c, id, 0, text, strlen(text), HB_DIR_SBATCH);
	if (rc)
		return rc;
	if (sb_unmapped_note[id])
		sb_note(c, c->cur, sb_unmapped_note[id]);
	if (id == O_VERBOSE) {
		uint64_t x;

		rc = sb_slurm_int(c, "verbose", val, false, &x);
		if (rc)
			return rc;
	}
	if (arg) {
		arg = hb_jobspec_strdup(c->spec, arg);
		if (!arg)
			return sb_nomem(c);
	}
	return sb_apply(c, id, arg);
}

static int read_env(struct ctx *c, const char *const *envp)
{
	const char *v;
	int rc;

	if (!envp)
		return 0;
	for (size_t k = 0; k < sb_nenvopts; k++) {
		v = env_get(envp, sb_envopts[k].var);
		if (v && (rc = env_option(c, sb_envopts[k].var,
					  sb_envopts[k].id, v)))
			return rc;
	}
	return 0;
}

static int read_argv(struct ctx *c, const struct hb_sbatch_opts *o)
{
	struct toks ts = {0};
	int rc = 0;

	if (!o->argv || o->argc <= 0)
		return 0;
	for (int i = 0; i < o->argc; i++) {
		struct tok t;

		if (!o->argv[i]) {
			c->where = "command line";
			c->where_line = (uint32_t)i + 1;
			rc = sb_fail(c, HB_EINVAL, "argument %d is NULL",
				     i + 1);
			goto out;
		}
		t.val = o->argv[i];
		t.raw = o->argv[i];
		t.rawlen = (uint32_t)strlen(o->argv[i]);
		t.line = (uint32_t)i + 1;
		if (push_tok(&ts, &t)) {
			rc = sb_nomem(c);
			goto out;
		}
	}
	c->prov.kind = HB_PROV_CLI;
	c->where = "command line";
	rc = getopt_all(c, &ts);
out:
	free(ts.v);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */

typedef unsigned char v16 __attribute__((vector_size(16)));

/* The checks sbatch makes on the whole script before reading it. */
static int check_script(struct ctx *c, const char *buf, size_t len)
{
	uint32_t line = 1, nul = 0, dos = 0, ctl = 0;
	bool blank = true;

	c->where = c->name;
	c->where_line = 0;
	if (len == 0)
		return sb_fail(c, HB_EINVAL, "batch script is empty");
	if (len > HB_SCRIPT_MAX)
		return sb_fail(c, HB_ETOOBIG,
			       "batch script is larger than %u "
			       "bytes",
			       HB_SCRIPT_MAX);
	{
		/* fast path: no byte below 0x20 but tab and newline, no DEL */
		static const uint8_t bad_byte[256] = {
		    1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1,	    1,
		    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, [0x7f] = 1};
		const unsigned char *u = (const unsigned char *)buf;
		unsigned bad = 0;
		size_t i = 0;
		v16 acc = {0};

		/* sixteen bytes at a time with the compiler's vectors */
		for (; i + 16 <= len; i += 16) {
			v16 x;

			memcpy(&x, u + i, 16);
			acc |= (v16)((x < 0x20) & (x != '\t') & (x != '\n')) |
			       (v16)(x == 0x7f);
		}
		for (int k = 0; k < 16; k++)
			bad |= acc[k];
		for (; i < len; i++)
			bad |= bad_byte[u[i]];
		for (i = 0; i < len && blank; i++)
			if (!is_space(buf[i]))
				blank = false;
		if (!bad)
			goto checked;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n') {
			line++;
			continue;
		}
		if (ch == '\0') {
			if (!nul)
				nul = line;
		} else if (ch == '\r' && i + 1 < len && buf[i + 1] == '\n') {
			if (!dos)
				dos = line;
		} else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			if (!ctl)
				ctl = line;
		}
	}
checked:
	if (blank)
		return sb_fail(c, HB_EINVAL,
			       "batch script contains only white "
			       "space");
	if (len < 2 || buf[0] != '#' || buf[1] != '!') {
		c->where_line = 1;
		return sb_fail(c, HB_EINVAL,
			       "this does not look like a batch "
			       "script: the first line must start with #! "
			       "followed by the path to an interpreter");
	}
	if (nul) {
		c->where_line = nul;
		return sb_fail(c, HB_EINVAL,
			       "batch script contains a NUL "
			       "character");
	}
	if (dos) {
		c->where_line = dos;
		return sb_fail(c, HB_EINVAL,
			       "batch script contains DOS line "
			       "breaks (\\r\\n) instead of UNIX line breaks "
			       "(\\n)");
	}
	if (ctl) {
		c->where_line = ctl;
		return sb_fail(c, HB_EINVAL,
			       "batch script contains a control "
			       "character");
	}
	return 0;
}

static int set_interpreter(struct ctx *c)
{
	const char *s = c->spec->script + 2, *e = s;

	while (*e && *e != '\n')
		e++;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e == s)
		return 0;
	c->spec->interpreter = hb_jobspec_strndup(c->spec, s, (size_t)(e - s));
	return c->spec->interpreter ? 0 : sb_nomem(c);
}

int hb_sbatch_parse(const char *buf, size_t len, const char *name,
		    const struct hb_sbatch_opts *opts, struct hb_jobspec *spec,
		    struct hb_err *err)
{
	struct ctx *c = calloc(1, sizeof(*c));
	struct toks ts = {0};
	char *copy;
	int rc;

	if (!c)
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	c->spec = spec;
	c->err = err;
	c->name = name ? name : spec->source_name ? spec->source_name : "-";
	c->where = c->name;
	for (int k = 0; k < O__COUNT; k++) {
		c->slot[k].dir = NO_DIR;
		c->slot[k].reset_by = NO_DIR;
	}
	c->topo[0] = c->topo[1] = c->topo[2] = -1;
	hb_buf_init(&c->text, 0);
	spec->source = HB_SRC_SBATCH;

	rc = check_script(c, buf ? buf : "", buf ? len : 0);
	if (rc)
		goto out;
	copy = hb_jobspec_strndup(spec, buf, len);
	if (!copy) {
		rc = sb_nomem(c);
		goto out;
	}
	spec->script = copy;
	spec->script_len = (uint32_t)len;
	hb_jobspec_set_prov(spec, HB_F_SCRIPT,
			      (struct hb_prov){HB_PROV_FILE, 1});
	rc = set_interpreter(c);
	if (rc)
		goto out;

	/* 1. #SBATCH lines: all arguments, then one getopt pass */
	rc = read_header(c, &ts);
	if (rc)
		goto out;
	c->prov.kind = HB_PROV_FILE;
	c->where = c->name;
	rc = getopt_all(c, &ts);
	if (rc)
		goto out;
	/* 1b. #BSUB/#PBS lines, which sbatch reads after #SBATCH */
	if (opts && env_get(opts->envp, "SBATCH_IGNORE_PBS")) {
		const char *v = env_get(opts->envp, "SBATCH_IGNORE_PBS");
		const char *end;
		long n;

		if (!*v || ieq(v, "yes") ||
		    (!sb_strtol(v, &n, &end) && end != v && !*end && n))
			c->ignore_pbs = true;
	}
	rc = wrapper_lines(c);
	if (rc)
		goto out;
	/* 2. SBATCH_* variables, 3. the command line */
	if (opts) {
		rc = read_env(c, opts->envp);
		if (!rc)
			rc = read_argv(c, opts);
		if (rc)
			goto out;
	}
	/* 4. what sbatch checks and derives at the end */
	rc = sb_resolve(c);
	if (!rc)
		rc = sb_resolve_hpcbridge(c);
	if (rc)
		goto out;
	sb_override_notes(c);
	rc = hb_jobspec_scan_body(spec, err);
out:
	free(ts.v);
	free(c->dinfo);
	hb_buf_free(&c->text);
	free(c);
	return rc;
}

int hb_sbatch_detect(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	if (!buf)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le - p >= 7 && memcmp(p, "#SBATCH", 7) == 0)
			return 1;
		if (is_command(p, le))
			return 0;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int hb_sbatch_array_has(const char *array_spec, uint32_t task)
{
	uint8_t bits[(ARRAY_MAX_SIZE + 7) / 8] = {0};
	uint32_t lim;
	bool any;

	if (!array_spec || task >= ARRAY_MAX_SIZE ||
	    sb_parse_array(array_spec, bits, &lim, &any) || !any)
		return 0;
	return sb_array_bit(bits, task);
}
