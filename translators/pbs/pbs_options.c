/*
 * pbs_options.c - qsub's options: which letters take a value, the -W
 * attributes (depend=, stagein=, ...), and every other option (-a, -J,
 * -t, -m, -v, -o, -e, ...), applied to the jobspec as it is read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pbs_int.h"

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

int pbs_opt_kind(char o)
{
	if (o && strchr("aAbcCdDeFjJklLmMNopPqrRStTuvwW", o))
		return OPT_ARG;
	if (o && strchr("fhIVxXz", o))
		return OPT_FLAG;
	return OPT_NONE;
}

char hb_pbs_array_sep(const struct hb_jobspec *s)
{
	char sep = '-';

	/* the last -t or -J wins, as it does for the array itself */
	for (uint32_t i = 0; s->array && i < s->ndirectives; i++) {
		const struct hb_directive *d = &s->directives[i];

		for (uint8_t k = 0; k < d->nfields; k++)
			if (d->fields[k] == HB_F_ARRAY && d->text &&
			    d->text[0] == '-')
				sep = d->text[1] == 'J' ? '.' : '-';
	}
	return sep;
}

int hb_pbs_option_kind(char o)
{
	int k = pbs_opt_kind(o);

	return k == OPT_ARG ? 2 : k == OPT_FLAG ? 1 : 0;
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
			return pbs_oom(c);
		i++;
	} else if (hb_buf_append(b, s, d)) {
		return pbs_oom(c);
	}
	if (i < n && (s[i] != '.' || i + 1 == n))
		goto bad;
	return 0;
bad:
	return pbs_fail(c, HB_EINVAL, "-W depend: malformed job id '%.*s'",
			(int)n, s);
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
			rc = pbs_fail(c, HB_EINVAL,
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
				rc = pbs_fail(
					c, HB_EUNSUP,
					"-W depend=%s: Slurm has no '%s' "
					"dependency (it holds other jobs); "
					"give those jobs afterok:<this "
					"job> instead",
					type, type);
				goto out;
			}
		}
		if (!slurm) {
			rc = pbs_fail(c, HB_EINVAL,
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
				rc = pbs_oom(c);
				goto out;
			}
			for (a++; a < end;) {
				size_t il = strcspn(a, ":,");

				if (a + il > end)
					il = (size_t)(end - a);
				if (hb_buf_putc(&b, ':')) {
					rc = pbs_oom(c);
					goto out;
				}
				rc = conv_jobid(c, &b, a, il);
				if (rc)
					goto out;
				a += il;
				if (a < end)
					a++;
				if (a == end && a[-1] == ':') {
					rc = pbs_fail(
						c, HB_EINVAL,
						"-W depend: empty job id in "
						"'%s'",
						v);
					goto out;
				}
			}
		}
		p = *end ? end + 1 : end;
		if (*end && !*p) {
			rc = pbs_fail(c, HB_EINVAL,
				      "-W depend: trailing ',' in '%s'", v);
			goto out;
		}
	}
	if (b.len) {
		*out = pbs_dup(c, b.data);
		if (!*out)
			rc = pbs_oom(c);
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
			return pbs_fail(c, HB_EINVAL,
					"-W %s: malformed file spec in '%s' "
					"(local_path@host:remote_path)",
					in ? "stagein" : "stageout", v);
		p += l;
		if (*p && !*++p)
			return pbs_fail(c, HB_EINVAL,
					"-W %s: trailing ',' in '%s'",
					in ? "stagein" : "stageout", v);
	}
	if (!in)
		return NOTE(c, "files staged out after the job are not "
			       "copied back");
	c->stagein = pbs_dup(c, v);
	if (!c->stagein)
		return pbs_oom(c);
	return pbs_take_slot(c, &c->d_stagein);
}

static int w_item(struct ctx *c, char *item)
{
	char *eq = strchr(item, '=');
	const char *v;
	int rc;

	if (!eq || eq == item)
		return pbs_fail(c, HB_EINVAL,
				"-W: malformed attribute '%s' (name=value)",
				item);
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
			return pbs_fail(c, HB_EUNSUP,
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
		rc = pbs_num32(c, "-W max_run_subjobs", v, 1, MAX_COUNT,
			       &c->spec->array_max_running);
		if (!rc) {
			c->w_max_run = true;
			SET(c, HB_F_ARRAY);
		}
		return rc;
	}
	if (strcasecmp(item, "umask") == 0) {
		if (!*v || strlen(v) > 4 || strspn(v, "01234567") != strlen(v))
			return pbs_fail(c, HB_EINVAL,
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

int pbs_opt_W(struct ctx *c, const char *arg)
{
	char *s = pbs_dup(c, arg), *item;
	uint32_t n = 0;
	int rc;

	if (!s)
		return pbs_oom(c);
	if (!*s) {
		rc = pbs_new_dir(c, "-W", 2);
		return rc ? rc
			  : pbs_fail(c, HB_EINVAL, "-W: empty attribute list");
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
			return pbs_fail(c, HB_ETOOBIG,
					"-W: more than %d attributes",
					MAX_ITEMS);
		text = hb_arena_printf(&c->spec->arena, "-W %s", item);
		if (!text)
			return pbs_oom(c);
		rc = pbs_new_dir(c, text, strlen(text));
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
	c->spec->begin = pbs_dup(c, out);
	if (!c->spec->begin)
		return pbs_oom(c);
	SET(c, HB_F_BEGIN);
	if (n < 10)
		return NOTE(c, "the next such time after submission, as in "
			       "PBS");
	return 0;
bad:
	return pbs_fail(c, HB_EINVAL,
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
		return pbs_fail(c, HB_EINVAL, "%s: malformed index '%.*s'", opt,
				(int)n, s);
	memcpy(num, s, n);
	num[n] = '\0';
	rc = pbs_num32(c, opt, num, 0, UINT32_MAX, out);
	if (!rc && *out > MAX_ARRAY_INDEX)
		return pbs_fail(
			c, HB_ERANGE,
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
		rc = pbs_num32(c, optname, pct + 1, 1, MAX_COUNT, &limit);
		if (rc)
			return rc;
	}
	if (len == 0)
		return pbs_fail(c, HB_EINVAL, "%s: empty index list", optname);
	for (size_t i = 0; i < len; i++)
		if (v[i] == ',' && ++n > 65536)
			return pbs_fail(c, HB_ETOOBIG, "%s: too many ranges",
					optname);
	if (opt == 'J' && n > 1)
		return pbs_fail(c, HB_EINVAL,
				"-J: one range X-Y[:Z] is allowed, got '%s'",
				v);
	r = hb_arena_alloc(&c->spec->arena, n * sizeof(*r));
	if (!r)
		return pbs_oom(c);
	for (const char *p = v, *end = v + len; p <= end && k < n; k++) {
		size_t il = strcspn(p, ",");
		const char *dash, *colon;
		struct hb_range *x = &r[k];

		if (p + il > end)
			il = (size_t)(end - p);
		dash = memchr(p, '-', il);
		colon = opt == 'J' ? memchr(p, ':', il) : NULL;
		if (opt == 'J' && (!dash || (colon && colon < dash)))
			return pbs_fail(c, HB_EINVAL,
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
					rc = pbs_fail(
						c, HB_EINVAL,
						"%s: step must be at least "
						"1",
						optname);
			}
			if (!rc && x->end < x->start)
				rc = pbs_fail(c, HB_EINVAL,
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
	c->spec->array = pbs_dup(c, v);
	if (!c->spec->array)
		return pbs_oom(c);
	c->spec->array_ranges = r;
	c->array_opt = opt;
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
		return pbs_fail(c, HB_EINVAL, "-m: empty mail points");
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
			return pbs_fail(c, HB_EINVAL,
					"-m: unknown mail point '%c' in '%s' "
					"(a, b, e, n)",
					*p, v);
		}
	}
	if (none && (a || b || e || j))
		return pbs_fail(c, HB_EINVAL,
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
			return pbs_fail(c, HB_EINVAL,
					"-m: 'j' needs a, b or e, got '%s'", v);
	}
	c->spec->mail_type = pbs_dup(c, out);
	if (!c->spec->mail_type)
		return pbs_oom(c);
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
		return pbs_fail(c, HB_EINVAL, "-v: empty variable list");
	while (*p) {
		struct hb_buf val;
		size_t nl = strcspn(p, "=,");
		char *name;

		if (!is_env_name(p, nl))
			return pbs_fail(c, HB_EINVAL,
					"-v: malformed variable name in '%s'",
					v);
		if (++c->nexports > MAX_ENV)
			return pbs_fail(c, HB_ETOOBIG,
					"-v: more than %d variables", MAX_ENV);
		name = pbs_dupn(c, p, nl);
		if (!name)
			return pbs_oom(c);
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
						return pbs_fail(
							c, HB_EINVAL,
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
			return pbs_oom(c);
		if (*p == ',' && !*++p)
			return pbs_fail(c, HB_EINVAL,
					"-v: trailing ',' in '%s'", v);
	}
	/* One provenance for the whole list: the last -v or -V carries it. */
	if (c->d_export != NO_DIR) {
		pbs_drop_field(c, c->d_export, HB_F_ENV);
		pbs_drop_field(c, c->d_export, HB_F_EXPORT);
		rc = pbs_note_at(c, c->d_export,
				 "joined with %s into one export "
				 "list",
				 pbs_where(c, c->cur, w));
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
		pbs_drop_field(c, c->d_export, HB_F_EXPORT);
		if (dir_at(c, c->d_export)->nfields)
			rc = pbs_note_at(c, c->d_export,
					 "export list joined with %s",
					 pbs_where(c, c->cur, w));
		else
			rc = pbs_note_at(c, c->d_export,
					 "joined with %s into one export list",
					 pbs_where(c, c->cur, w));
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
			return pbs_fail(c, HB_EINVAL,
					"%s: malformed entry in '%s'", opt, v);
		if (pl == n) {
			*out = pbs_dupn(c, p, n);
			return *out ? 0 : pbs_oom(c);
		}
		if (!first) {
			first = p;
			firstlen = pl;
		}
		p += n;
		if (*p && !*++p)
			return pbs_fail(c, HB_EINVAL,
					"%s: trailing ',' in '%s'", opt, v);
	}
	if (!first)
		return pbs_fail(c, HB_EINVAL, "%s: empty value", opt);
	*out = pbs_dupn(c, first, firstlen);
	if (!*out)
		return pbs_oom(c);
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
		return pbs_fail(c, HB_EINVAL, "-%c: empty path", opt);
	copy = pbs_dup(c, path);
	if (!copy)
		return pbs_oom(c);
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
		return pbs_fail(c, HB_EINVAL, "-p: malformed priority '%s'", v);
	n = strtol(p, NULL, 10);
	if (*v == '-')
		n = -n;
	if (n < -1024 || n > 1023)
		return pbs_fail(c, HB_ERANGE,
				"-p: priority '%s' is outside -1024..1023", v);
	return NOTE(c, "job priority is not carried");
}

static int need(struct ctx *c, char opt, const char *v)
{
	if (!*v)
		return pbs_fail(c, HB_EINVAL, "-%c: empty value", opt);
	return 0;
}

static int set_str(struct ctx *c, const char **dst, const char *v,
		   enum hb_field f)
{
	*dst = pbs_dup(c, v);
	if (!*dst)
		return pbs_oom(c);
	SET(c, f);
	return 0;
}

/* Options read and noted, with no effect on the job: why. */
static const struct {
	char opt;
	const char *why;
} no_effect[] = {
    {'b', "how long qsub retries the server is a client matter; no effect"},
    {'c', "PBS checkpoint intervals are not carried; the job's own "
	  "checkpoint directory is"},
    {'D', "a root directory for the job is not carried"},
    {'f', "a qsub client option; no effect on the job"},
    {'F', "arguments to the script are not carried"},
    {'h', "user hold is not carried: the job is submitted eligible to run"},
    {'L', "NUMA resource requests are not carried"},
    {'R', "removing output files of successful jobs is not carried"},
    {'T', "Torque job types (prologue/epilogue selection) are not carried"},
    {'x', "-x applies to interactive jobs only; no effect"},
    {'X', "X11 forwarding applies to interactive jobs only; no effect"},
    {'z', "qsub not printing the job id is a client matter; no effect"},
};

/* -C PREFIX: read by cli_prefix() before the script; noted here. */
static int opt_prefix(struct ctx *c, const char *arg)
{
	if (!c->cli)
		return NOTE(c, "-C works only on the qsub command line; "
			       "ignored in a script");
	if (!*arg)
		return NOTE(c, "empty directive prefix: the script's "
			       "directives were not read");
	return NOTE(c, "directives read with prefix '%s'", arg);
}

/* -j oe|eo|n: settled at the end, with -o and -e. */
static int opt_join(struct ctx *c, const char *arg)
{
	if (strcmp(arg, "oe") == 0)
		c->join = JOIN_OE;
	else if (strcmp(arg, "eo") == 0)
		c->join = JOIN_EO;
	else if (strcmp(arg, "n") == 0)
		c->join = JOIN_N;
	else
		return pbs_fail(c, HB_EINVAL,
				"-j: unknown join '%s' (oe, eo or n)", arg);
	c->d_join = c->cur;
	return 0;
}

/* -k: any of d, e, o, or n. */
static int opt_keep(struct ctx *c, const char *arg)
{
	int rc;

	if (strcmp(arg, "n") != 0 &&
	    (!*arg || strspn(arg, "deo") != strlen(arg)))
		return pbs_fail(c, HB_EINVAL,
				"-k: malformed keep '%s' (any of d, e, o; "
				"or n)",
				arg);
	rc = set_str(c, &c->spec->keep, arg, HB_F_KEEP);
	if (rc)
		return rc;
	if (strcmp(arg, "n") == 0)
		return NOTE(c, "keep nothing on the execution host "
			       "(the default)");
	return NOTE(c, "-k %s: output is streamed; nothing to keep", arg);
}

static int opt_name(struct ctx *c, const char *arg)
{
	if (!*arg || strpbrk(arg, " \t"))
		return pbs_fail(c, HB_EINVAL,
				"-N: malformed job name '%s' (printable, "
				"no blanks)",
				arg);
	return set_str(c, &c->spec->name, arg, HB_F_NAME);
}

/* -P: settled at the end, against -A. */
static int opt_project(struct ctx *c, const char *arg)
{
	int rc = need(c, 'P', arg);

	if (rc)
		return rc;
	c->project = pbs_dup(c, arg);
	if (!c->project)
		return pbs_oom(c);
	c->d_project = c->cur;
	return 0;
}

/* -q queue[@server]: the partition. */
static int opt_queue(struct ctx *c, const char *arg)
{
	struct hb_jobspec *s = c->spec;
	const char *at = strchr(arg, '@');
	int rc = need(c, 'q', arg);

	if (rc)
		return rc;
	if (at == arg)
		return NOTE(c, "a server without a queue: the default "
			       "partition is used");
	s->partition =
		at ? pbs_dupn(c, arg, (size_t)(at - arg)) : pbs_dup(c, arg);
	if (!s->partition)
		return pbs_oom(c);
	SET(c, HB_F_PARTITION);
	if (at)
		return NOTE(c, "server '%s' dropped", at + 1);
	return 0;
}

/* -r y|n: rerunable. */
static int opt_rerun(struct ctx *c, const char *arg)
{
	if (strcasecmp(arg, "y") == 0)
		c->spec->requeue = 1;
	else if (strcasecmp(arg, "n") == 0)
		c->spec->requeue = 0;
	else
		return pbs_fail(c, HB_EINVAL,
				"-r: rerunable must be y or n, got '%s'", arg);
	SET(c, HB_F_REQUEUE);
	return 0;
}

/* -S path[@host],...: the interpreter. */
static int opt_shell(struct ctx *c, const char *arg)
{
	char *pick;
	int rc = pick_hostless(c, "-S", arg, &pick);

	if (rc)
		return rc;
	c->spec->interpreter = pick;
	SET(c, HB_F_SCRIPT);
	return NOTE(c, "the script runs with %s", pick);
}

/* -u user[@host],...: the user. */
static int opt_user(struct ctx *c, const char *arg)
{
	char *pick;
	int rc = pick_hostless(c, "-u", arg, &pick);

	if (rc)
		return rc;
	c->spec->user = pick;
	SET(c, HB_F_USER);
	return 0;
}

/* One option with its argument (NULL for flags). */
int pbs_option(struct ctx *c, char opt, const char *arg)
{
	struct hb_jobspec *s = c->spec;

	for (size_t i = 0; i < sizeof(no_effect) / sizeof(no_effect[0]); i++)
		if (no_effect[i].opt == opt)
			return NOTE(c, "%s", no_effect[i].why);
	switch (opt) {
	case 'a':
		return opt_begin(c, arg);
	case 'A':
		return need(c, opt, arg) ?: pbs_set_account(c, arg, c->cur);
	case 'C':
		return opt_prefix(c, arg);
	case 'd':
	case 'w':
		return need(c, opt, arg) ?: opt_path(c, 'd', arg);
	case 'e':
	case 'o':
		return need(c, opt, arg) ?: opt_path(c, opt, arg);
	case 'I':
		return pbs_fail(c, HB_EUNSUP,
				"-I: an interactive job is not a batch script");
	case 'j':
		return opt_join(c, arg);
	case 'J':
	case 't':
		return opt_array(c, opt, arg);
	case 'k':
		return opt_keep(c, arg);
	case 'm':
		return opt_mail(c, arg);
	case 'M':
		return need(c, opt, arg)
			   ?: set_str(c, &s->mail_user, arg, HB_F_MAIL_USER);
	case 'N':
		return opt_name(c, arg);
	case 'p':
		return opt_priority(c, arg);
	case 'P':
		return opt_project(c, arg);
	case 'q':
		return opt_queue(c, arg);
	case 'r':
		return opt_rerun(c, arg);
	case 'S':
		return opt_shell(c, arg);
	case 'u':
		return opt_user(c, arg);
	case 'v':
		return opt_env(c, arg);
	case 'V':
		return opt_export_all(c);
	}
	return pbs_fail(c, HB_EINVAL, "unknown option -%c", opt);
}
