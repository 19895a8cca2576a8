/*
 * sbatch_values.c - the value of each option, checked as Slurm checks it
 * (counts, node counts, signals, mail types, GRES and GPU requests, array
 * indices, distributions, hints, ...), and applied: stored in the
 * option's slot for the resolution to read.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/timefmt.h"
#include "hpcbridge/units.h"
#include "sbatch_int.h"

/* Record that the current directive set slot g's value. */
static void store(struct ctx *c, int id, const char *val)
{
	struct slot *s = &c->slot[sb_group(id)];

	s->set = true;
	s->by_env = c->prov.kind == HB_PROV_ENV;
	s->dir = c->cur;
	s->reset_by = NO_DIR;
	s->val = val;
}

/* ------------------------------------------------------------------ */
/* Value parsers, as Slurm's                                           */
/* ------------------------------------------------------------------ */

/* parse_int(): a decimal int; positive also refuses 0. */
int sb_slurm_int(struct ctx *c, const char *opt, const char *v, bool positive,
		 uint64_t *out)
{
	const char *end;
	long n;
	bool ovf = sb_strtol(v, &n, &end);

	if (*end != '\0' || end == v || n < 0 || (positive && n == 0))
		return sb_fail(c, HB_EINVAL,
			       "invalid numeric value '%s' for --%s",
			       sb_shown(c, v), opt);
	if (ovf || n > INT_MAX)
		return sb_fail(c, HB_ERANGE,
			       "numeric value '%s' for --%s is too large",
			       sb_shown(c, v), opt);
	*out = (uint64_t)n;
	return 0;
}

/* _str_to_nodes(): a count with an optional k or m multiplier. */
static int str_to_nodes(const char *s, long *n, const char **left)
{
	const char *end;
	bool ovf = sb_strtol(s, n, &end);

	if (end == s) {
		*left = s;
		*n = -1;
		return 0;
	}
	if (*end == 'k' || *end == 'K') {
		if (*n > INT_MAX / 1024 || *n < -(INT_MAX / 1024))
			ovf = true;
		else
			*n *= 1024;
		end++;
	}
	if (*end == 'm' || *end == 'M') {
		if (ovf || *n > INT_MAX / (1024 * 1024) ||
		    *n < -(INT_MAX / (1024 * 1024)))
			ovf = true;
		else
			*n *= 1024 * 1024;
		end++;
	}
	*left = end;
	return ovf || *n > INT_MAX ? HB_ERANGE : 0;
}

/* verify_node_count(): "N" or "MIN-MAX". */
static int node_count(struct ctx *c, const char *v, uint64_t *min,
		      uint64_t *max)
{
	const char *dash = strchr(v, '-'), *left;
	long lo, hi;
	int rc;

	if (dash) {
		char *lo_s =
		    hb_arena_strndup(&c->spec->arena, v, (size_t)(dash - v));

		if (!lo_s)
			return sb_nomem(c);
		rc = str_to_nodes(lo_s, &lo, &left);
		if (rc)
			goto range;
		if (!all_space(left))
			goto bad;
		if (lo < 0)
			lo = 1;
		rc = str_to_nodes(dash + 1, &hi, &left);
		if (rc)
			goto range;
		if (!all_space(left))
			goto bad;
	} else {
		rc = str_to_nodes(v, &lo, &left);
		if (rc)
			goto range;
		if (!all_space(left) || lo < 0)
			goto bad;
		hi = lo;
	}
	if (hi != 0 && hi < lo)
		return sb_fail(
			c, HB_EINVAL,
			"invalid --nodes '%s': maximum node count %ld is "
			"less than minimum node count %ld",
			sb_shown(c, v), hi, lo);
	*min = (uint64_t)lo;
	*max = (uint64_t)hi;
	return 0;
bad:
	return sb_fail(c, HB_EINVAL,
		       "invalid --nodes: '%s' is not a valid node "
		       "count",
		       sb_shown(c, v));
range:
	return sb_fail(c, HB_ERANGE,
		       "invalid --nodes: node count '%s' is too "
		       "large",
		       sb_shown(c, v));
}

/* sig_name2num() */
static long sig_num(const char *s)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = {
	    {"HUP", 1},	  {"INT", 2},	{"QUIT", 3},  {"ABRT", 6},
	    {"KILL", 9},  {"ALRM", 14}, {"TERM", 15}, {"USR1", 10},
	    {"USR2", 12}, {"URG", 23},	{"CONT", 18}, {"STOP", 19},
	    {"TSTP", 20}, {"TTIN", 21}, {"TTOU", 22}, {"XCPU", 24},
	};
	const char *end;
	long n;
	bool ovf = sb_strtol(s, &n, &end);

	if (end != s)
		return (!ovf && all_space(end)) ? n : 0;
	while (is_space(*s))
		s++;
	if (hb_ascii_iprefix(s, "SIG"))
		s += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		size_t n2 = strlen(sigs[i].name);

		if (hb_ascii_iprefix(s, sigs[i].name) && all_space(s + n2))
			return sigs[i].num;
	}
	return 0;
}

/* get_signal_opts(), as sbatch runs it: [R][B][R][:]sig[@secs]. */
static bool signal_ok(struct ctx *c, const char *v)
{
	const char *at;
	char *name;
	long n;
	const char *end;
	bool ovf;

	if (hb_ascii_lower(*v) == 'r')
		v++;
	if (hb_ascii_lower(*v) == 'b')
		v++;
	if (hb_ascii_lower(*v) == 'r')
		v++;
	if (*v == ':')
		v++;
	at = strchr(v, '@');
	name = hb_arena_strndup(&c->spec->arena, v,
				at ? (size_t)(at - v) : strlen(v));
	if (!name)
		return false;
	n = sig_num(name);
	if (n < 1 || n > 0xffff)
		return false;
	if (!at)
		return true;
	ovf = sb_strtol(at + 1, &n, &end);
	if (ovf || n < 0 || n > 0xffff)
		return false;
	return *end == '\0';
}

/* parse_mail_type(): a bit set; NONE gives 0, nothing valid is -1. */
enum {
	M_ARRAY_TASKS = 1 << 0,
	M_INVALID_DEPEND = 1 << 1,
	M_BEGIN = 1 << 2,
	M_END = 1 << 3,
	M_FAIL = 1 << 4,
	M_REQUEUE = 1 << 5,
	M_STAGE_OUT = 1 << 6,
	M_TIME50 = 1 << 7,
	M_TIME80 = 1 << 8,
	M_TIME90 = 1 << 9,
	M_TIME100 = 1 << 10,
};

static const struct {
	const char *name;
	uint32_t bits;
} mail_names[] = {
    /* print_mail_type() order */
    {"ARRAY_TASKS", M_ARRAY_TASKS},
    {"INVALID_DEPEND", M_INVALID_DEPEND},
    {"BEGIN", M_BEGIN},
    {"END", M_END},
    {"FAIL", M_FAIL},
    {"REQUEUE", M_REQUEUE},
    {"STAGE_OUT", M_STAGE_OUT},
    {"TIME_LIMIT_50", M_TIME50},
    {"TIME_LIMIT_80", M_TIME80},
    {"TIME_LIMIT_90", M_TIME90},
    {"TIME_LIMIT", M_TIME100},
};

static long mail_type(const char *v)
{
	uint32_t bits = 0;
	bool none = false;
	const char *p = v;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char tok[32];

		if (n && n < sizeof(tok)) {
			memcpy(tok, p, n);
			tok[n] = '\0';
			if (ieq(tok, "NONE")) {
				bits = 0;
				none = true;
				break;
			} else if (ieq(tok, "ALL")) {
				bits |= M_INVALID_DEPEND | M_BEGIN | M_END |
					M_FAIL | M_REQUEUE | M_STAGE_OUT;
			} else {
				for (size_t i = 0;
				     i <
				     sizeof(mail_names) / sizeof(mail_names[0]);
				     i++)
					if (ieq(tok, mail_names[i].name))
						bits |= mail_names[i].bits;
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (!bits && !none)
		return -1;
	return bits;
}

const char *sb_mail_string(struct ctx *c, uint32_t bits)
{
	char buf[256];
	size_t n = 0;

	if (!bits)
		return "NONE";
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(mail_names) / sizeof(mail_names[0]);
	     i++) {
		if (!(bits & mail_names[i].bits))
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
				      n ? "," : "", mail_names[i].name);
	}
	return hb_arena_strdup(&c->spec->arena, buf);
}

/* _is_valid_number() of gres.c: a count with an optional unit suffix. */
static int gres_count(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		uint64_t mult;
	} sfx[] = {
	    {"", 1},
	    {"k", 1024},
	    {"kib", 1024},
	    {"kb", 1000},
	    {"m", 1024 * 1024},
	    {"mib", 1024 * 1024},
	    {"mb", 1000 * 1000},
	    {"g", 1024ull * 1024 * 1024},
	    {"gib", 1024ull * 1024 * 1024},
	    {"gb", 1000ull * 1000 * 1000},
	    {"t", 1024ull * 1024 * 1024 * 1024},
	    {"tib", 1024ull * 1024 * 1024 * 1024},
	    {"tb", 1000ull * 1000 * 1000 * 1000},
	    {"p", 1024ull * 1024 * 1024 * 1024 * 1024},
	    {"pib", 1024ull * 1024 * 1024 * 1024 * 1024},
	    {"pb", 1000ull * 1000 * 1000 * 1000 * 1000},
	};
	const char *p = s;
	uint64_t v = 0;
	bool ovf = false;

	while (is_space(*p))
		p++;
	if (*p == '+')
		p++;
	for (; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			ovf = true;
		else
			v = v * 10 + d;
	}
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (!ieq(p, sfx[i].sfx))
			continue;
		if (ovf || (v && sfx[i].mult > UINT64_MAX / v))
			return HB_ERANGE;
		*out = v * sfx[i].mult;
		return 0;
	}
	return HB_EINVAL;
}

/* GPUs asked for by a --gres or --gpus* value. */
struct gpu_req {
	uint64_t count;
	const char *type; /* NULL: untyped, or several types */
	bool multi_type;
	bool typed, untyped; /* items with and without a type */
	const char *other;   /* non-GPU GRES, comma separated, or NULL */
};

/*
 * One item "name[:type][:count]" as _get_next_gres() reads it.  Returns 0
 * and sets the type and count, or an error code.
 */
static int gres_item(struct ctx *c, char *item, char **type, uint64_t *count)
{
	char *sep = strchr(item, ':'), *sep2 = NULL;
	int rc;

	*type = NULL;
	*count = 1;
	if (sep) {
		*sep++ = '\0';
		sep2 = strchr(sep, ':');
		if (sep2)
			*sep2++ = '\0';
	}
	if (sep2) {
		if (!*sep || !*sep2)
			return HB_EINVAL;
		*type = sep;
		return gres_count(sep2, count);
	}
	if (sep) {
		if (!*sep)
			return HB_EINVAL;
		rc = gres_count(sep, count);
		if (rc == HB_EINVAL) {
			*type = sep;
			*count = 1;
			rc = 0;
		}
		return rc;
	}
	(void)c;
	return 0;
}

/* Parse a GRES list (gres: "gpu:a100:2,license:1") or a --gpus* value
 * (gpu_only: "[type:]count,..."). */
static int parse_gpus(struct ctx *c, const char *opt, const char *v,
		      bool gpu_only, struct gpu_req *g)
{
	char *copy = hb_arena_strdup(&c->spec->arena, v), *p, *item;
	struct hb_buf other;
	int rc = 0;

	memset(g, 0, sizeof(*g));
	if (!copy)
		return sb_nomem(c);
	if (!gpu_only && ieq(v, "none"))
		return 0;
	hb_buf_init(&other, 0);
	for (p = copy; p && *p; p = item) {
		char *comma = strchr(p, ','), *type, *name = p;
		const char *orig;
		uint64_t n;

		item = comma ? comma + 1 : NULL;
		if (comma)
			*comma = '\0';
		if (!*p)
			continue;
		orig = hb_arena_strdup(&c->spec->arena, p);
		if (!orig) {
			rc = sb_nomem(c);
			break;
		}
		if (gpu_only) {
			char *full =
			    hb_arena_printf(&c->spec->arena, "gpu:%s", p);

			if (!full) {
				rc = sb_nomem(c);
				break;
			}
			name = full;
		} else if (strncmp(name, "gres:", 5) == 0) {
			name += 5;
		}
		rc = gres_item(c, name, &type, &n);
		if (rc) {
			rc = sb_fail(c, rc, "invalid --%s specification '%s'",
				     opt, sb_shown(c, v));
			break;
		}
		if (n == 0)
			continue;
		if (strcmp(name, "gpu") != 0) {
			if (hb_buf_printf(&other, "%s%s", other.len ? "," : "",
					  orig)) {
				rc = sb_nomem(c);
				break;
			}
			continue;
		}
		if (n > UINT32_MAX || g->count + n > UINT32_MAX) {
			rc = sb_fail(c, HB_ERANGE,
				     "--%s: GPU count in '%s' is "
				     "too large",
				     opt, sb_shown(c, v));
			break;
		}
		if (type) {
			/* a GRES type is a plain name, as gres.conf has it */
			for (const char *t = type; *t; t++) {
				unsigned char ch = (unsigned char)*t;

				if (ch <= ' ' || ch == 0x7f || ch == '=' ||
				    ch == '"' || ch == '\'' || ch == '\\') {
					rc = sb_fail(
						c, HB_EINVAL,
						"--%s: invalid GPU type in "
						"'%s'",
						opt, sb_shown(c, v));
					break;
				}
			}
			if (rc)
				break;
		}
		if (g->count && (!type || !g->type || strcmp(type, g->type)))
			g->multi_type = true;
		if (type)
			g->typed = true;
		else
			g->untyped = true;
		g->type = type ? hb_arena_strdup(&c->spec->arena, type) : NULL;
		if (type && !g->type) {
			rc = sb_nomem(c);
			break;
		}
		g->count += n;
	}
	if (!rc && other.len) {
		g->other = hb_arena_strdup(&c->spec->arena, other.data);
		if (!g->other)
			rc = sb_nomem(c);
	}
	if (g->multi_type)
		g->type = NULL;
	hb_buf_free(&other);
	return rc;
}

/* _valid_array_inx() / _parse_array_tok() of slurmctld, into a bitmap. */
int sb_parse_array(const char *v, uint8_t *bits, uint32_t *limit, bool *any)
{
	const char *p = v, *pct;
	long first, last, step;
	const char *end;

	*any = false;
	*limit = 0;
	while (*p) {
		const char *tok_end = strchr(p, ',');
		size_t n = tok_end ? (size_t)(tok_end - p) : strlen(p);
		char tok[64];
		const char *t = tok;

		if (n == 0) {
			p++;
			continue;
		}
		/* longer tokens cannot be valid: digits stay under 64 */
		if (n >= sizeof(tok))
			return HB_EINVAL;
		memcpy(tok, p, n);
		tok[n] = '\0';
		p += n;
		if (*p == ',')
			p++;

		step = 1;
		if (*t == '[')
			t++;
		sb_strtol(t, &first, &end);
		if (*end == ']')
			end++;
		if (first < 0)
			return HB_EINVAL;
		if (*end == '-') {
			sb_strtol(end + 1, &last, &end);
			if (*end == ']')
				end++;
			if (*end == ':') {
				sb_strtol(end + 1, &step, &end);
				if (*end == ']')
					end++;
				if (*end != '\0' && *end != '%')
					return HB_EINVAL;
				if (step <= 0 || step >= ARRAY_MAX_SIZE)
					return HB_EINVAL;
			} else if (*end != '\0' && *end != '%') {
				return HB_EINVAL;
			}
			if (last < first)
				return HB_EINVAL;
		} else if (*end != '\0' && *end != '%') {
			return HB_EINVAL;
		} else {
			last = first;
		}
		if (last >= ARRAY_MAX_SIZE)
			return HB_ERANGE;
		for (long i = first; i <= last; i += step)
			bits[i / 8] |= (uint8_t)(1u << (i % 8));
		*any = true;
	}
	pct = strchr(v, '%');
	if (pct) {
		long lim;
		bool ovf = sb_strtol(pct + 1, &lim, &end);

		if (ovf || lim > INT_MAX)
			return HB_ERANGE;
		if (lim > 0)
			*limit = (uint32_t)lim;
	}
	return 0;
}

bool sb_array_bit(const uint8_t *bits, uint32_t i)
{
	return i < ARRAY_MAX_SIZE && (bits[i / 8] >> (i % 8)) & 1;
}

/*
 * The indices as sorted, disjoint ranges: runs of consecutive indices,
 * and runs of three or more with a common step.
 */
int sb_array_ranges(struct ctx *c, const uint8_t *bits)
{
	uint32_t idx[ARRAY_MAX_SIZE], n = 0, nr = 0, i = 0;
	struct hb_range *r;

	for (uint32_t byte = 0; byte < (ARRAY_MAX_SIZE + 7) / 8; byte++) {
		if (!bits[byte])
			continue;
		for (uint32_t k = byte * 8; k < byte * 8 + 8; k++)
			if (sb_array_bit(bits, k))
				idx[n++] = k;
	}
	r = hb_arena_alloc(&c->spec->arena, (size_t)(n ? n : 1) * sizeof(*r));
	if (!r)
		return sb_nomem(c);
	while (i < n) {
		uint32_t j = i + 1, step = 1;

		if (j < n) {
			step = idx[j] - idx[i];
			while (j + 1 < n && idx[j + 1] - idx[j] == step)
				j++;
			/* a stride needs three members to be worth it */
			if (step != 1 && j - i < 2)
				j = i;
		} else {
			j = i;
		}
		if (j == i)
			step = 1;
		r[nr].start = idx[i];
		r[nr].end = idx[j];
		r[nr].step = step;
		nr++;
		i = j + 1;
	}
	c->spec->array_ranges = r;
	c->spec->narray_ranges = nr;
	return 0;
}

/* _parse_dist_base() / _parse_plane_dist() of proc_args.c. */
static bool dist_ok(const char *v)
{
	static const char *const bases[] = {"cyclic",
					    "block",
					    "arbitrary",
					    "hostfile",
					    "cyclic:cyclic",
					    "cyclic:block",
					    "block:block",
					    "block:cyclic",
					    "block:fcyclic",
					    "cyclic:fcyclic",
					    "cyclic:cyclic:cyclic",
					    "cyclic:cyclic:block",
					    "cyclic:cyclic:fcyclic",
					    "cyclic:block:cyclic",
					    "cyclic:block:block",
					    "cyclic:block:fcyclic",
					    "cyclic:fcyclic:cyclic",
					    "cyclic:fcyclic:block",
					    "cyclic:fcyclic:fcyclic",
					    "block:cyclic:cyclic",
					    "block:cyclic:block",
					    "block:cyclic:fcyclic",
					    "block:block:cyclic",
					    "block:block:block",
					    "block:block:fcyclic",
					    "block:fcyclic:cyclic",
					    "block:fcyclic:block",
					    "block:fcyclic:fcyclic"};
	char base[128], out[128];
	const char *comma, *flag = NULL, *sock = NULL;
	size_t n, o = 0;
	int lvl = 0;
	bool known = false;

	if (hb_ascii_iprefix(v, "plane")) {
		const char *eq = strchr(v, '='), *end;
		long sz;
		bool ovf;

		if (!eq)
			return false; /* no SLURM_DIST_PLANESIZE here */
		ovf = sb_strtol(eq + 1, &sz, &end);
		return !ovf && end != eq + 1 && *end == '\0' && sz > 0 &&
		       sz <= INT_MAX;
	}
	if (!*v || *v == ',')
		return false;
	comma = strchr(v, ',');
	n = comma ? (size_t)(comma - v) : strlen(v);
	if (comma)
		flag = comma + 1;
	if (n >= sizeof(base))
		return false;
	memcpy(base, v, n);
	base[n] = '\0';
	out[0] = '\0';
	for (char *tok = base, *next; tok; tok = next) {
		const char *w;

		next = strchr(tok, ':');
		if (next)
			*next++ = '\0';
		if (!*tok)
			continue; /* strtok_r skips empty fields */
		if (lvl > 2)
			return false;
		if (strcmp(tok, "*") == 0)
			w = lvl == 0   ? "block"
			    : lvl == 1 ? "cyclic"
				       : (sock ? sock : "");
		else
			w = tok;
		if (lvl == 1)
			sock = w;
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s",
				      lvl ? ":" : "", w);
		if (o >= sizeof(out))
			return false;
		lvl++;
	}
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (ieq(out, bases[i]))
			known = true;
	if (!known && !ieq(out, "pack") && !ieq(out, "nopack"))
		return false;
	if (flag && *flag && !ieq(flag, "pack") && !ieq(flag, "nopack"))
		return false;
	return true;
}

/* verify_hint() */
static bool hint_ok(const char *v)
{
	const char *p = v;

	while (1) {
		const char *e = p;
		char tok[32];
		size_t n;

		/* a ',' not followed by a digit separates */
		while (*e && !(*e == ';' || (*e == ',' && !is_digit(e[1]))))
			e++;
		n = (size_t)(e - p);
		if (n >= sizeof(tok))
			return false;
		memcpy(tok, p, n);
		tok[n] = '\0';
		if (!ieq(tok, "compute_bound") && !ieq(tok, "memory_bound") &&
		    !ieq(tok, "multithread") && !ieq(tok, "nomultithread"))
			return false;
		if (!*e)
			return true;
		p = e + 1;
	}
}

/* validate_acctg_freq(): "N" or "type=N", comma separated. */
static bool acctg_freq_ok(const char *v)
{
	static const char *const types[] = {
	    "task=", "energy=", "network=", "filesystem="};
	const char *p = v;

	while (*p) {
		const char *e = strchr(p, ','), *num = p, *end;
		size_t n = e ? (size_t)(e - p) : strlen(p);
		long x;

		if (n) {
			for (size_t i = 0; i < 4; i++)
				if (hb_ascii_iprefix(p, types[i]))
					num = p + strlen(types[i]);
			if (sb_strtol(num, &x, &end) || end == num ||
			    end != p + n || x < 0)
				return false;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return true;
}

/* parse_rlimits(): ALL, NONE or resource limit names. */
static bool rlimits_ok(const char *v)
{
	static const char *const names[] = {
	    "ALL",   "NONE",	"AS",	  "CORE",  "CPU", "DATA",
	    "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK"};
	const char *p = v;

	while (1) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		bool ok = false;

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i]) == n && hb_ascii_iprefix(p, names[i]))
				ok = true;
		if (!ok)
			return false;
		if (!e)
			return true;
		p = e + 1;
	}
}

/* get_resource_arg_range(): "", "*", N or N-M (k/m suffixes); the minimum,
 * or -1 for "any". */
static bool resource_range(const char *v, long *min)
{
	const char *end;
	long n;

	if (*v == '\0' || *v == '*') {
		*min = -1;
		return true;
	}
	if (sb_strtol(v, &n, &end))
		return false;
	if (hb_ascii_lower(*end) == 'k' || hb_ascii_lower(*end) == 'm') {
		long m = hb_ascii_lower(*end) == 'k' ? 1024 : 1048576;

		if (n < 0 || n > INT_MAX / m)
			return false;
		n *= m;
		end++;
	}
	if ((*end != '\0' && *end != '-') || n < 0 || n > INT_MAX)
		return false;
	*min = n;
	if (*end == '\0')
		return true;
	{
		const char *p = end + 1;
		long hi;

		if (sb_strtol(p, &hi, &end))
			return false;
		if (hb_ascii_lower(*end) == 'k' || hb_ascii_lower(*end) == 'm') {
			long m = hb_ascii_lower(*end) == 'k' ? 1024 : 1048576;

			if (hi < 0 || hi > INT_MAX / m)
				return false;
			hi *= m;
			end++;
		}
		if ((*end != '\0' && *end != '-') || hi <= 0 || hi > INT_MAX)
			return false;
		if (*min == 1 && hi == INT_MAX)
			*min = -1;
	}
	return true;
}

/* verify_socket_core_thread_count(): -B S[:C[:T]]. */
static bool extra_node_info(const char *v, long out[3])
{
	char buf[3][48];
	const char *p = v;
	int j;

	memset(buf, 0, sizeof(buf));
	for (j = 0; j < 3; j++) {
		for (int i = 0; i < 47 && *p && *p != ':'; i++)
			buf[j][i] = *p++;
		while (*p && *p != ':')
			p++; /* Slurm keeps 47 bytes of each */
		if (!*p)
			break;
		p++;
	}
	for (j = 0; j < 3; j++)
		if (!resource_range(buf[j], &out[j]))
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Applying one option                                                 */
/* ------------------------------------------------------------------ */

/* The argument as the checks read it: "" when there is none. */
static const char *value_of(const char *arg)
{
	return arg ? arg : "";
}

static int bad_value(struct ctx *c, int id, const char *v)
{
	return sb_fail(c, HB_EINVAL, "invalid --%s specification '%s'",
		       sb_opt_name(id), sb_shown(c, v));
}

static int apply_time(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);
	uint64_t s;
	int rc = hb_parse_slurm_time(v, &s);

	if (rc == HB_ERANGE)
		return sb_fail(c, rc, "--%s: time '%s' is too large",
			       sb_opt_name(id), sb_shown(c, v));
	if (rc)
		return bad_value(c, id, v);
	if (s == 0) /* sbatch: a zero limit means no limit */
		s = HB_TIME_UNLIMITED;
	store(c, id, v);
	c->slot[id].a = s;
	return 0;
}

static int apply_size(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);
	uint64_t mb;
	int rc = hb_parse_slurm_size(v, &mb);

	if (rc == HB_ERANGE)
		return sb_fail(c, rc, "--%s: size '%s' is too large",
			       sb_opt_name(id), sb_shown(c, v));
	if (rc)
		return bad_value(c, id, v);
	store(c, id, v);
	c->slot[id].a = mb;
	return 0;
}

static int apply_int(struct ctx *c, int id, const char *v, bool positive)
{
	uint64_t n = 0;
	int rc = sb_slurm_int(c, sb_opt_name(id), v, positive, &n);

	if (rc)
		return rc;
	store(c, id, v);
	c->slot[sb_group(id)].a = n;
	return 0;
}

/* Counts: -n, -c, --ntasks-per-*, ... (0 refused) */
static int apply_positive(struct ctx *c, int id, const char *arg)
{
	return apply_int(c, id, value_of(arg), true);
}

/* --core-spec (0 allowed) */
static int apply_nonnegative(struct ctx *c, int id, const char *arg)
{
	return apply_int(c, id, value_of(arg), false);
}

static int apply_gpus(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);
	struct gpu_req g;
	int rc;

	if (id == O_GRES && (ieq(v, "help") || ieq(v, "list")))
		return sb_fail(c, HB_EINVAL,
			       "--gres=%s lists GRES and submits no "
			       "job",
			       sb_shown(c, v));
	rc = parse_gpus(c, sb_opt_name(id), v, id != O_GRES, &g);
	if (rc)
		return rc;
	store(c, id, v);
	c->slot[id].a = g.count;
	c->slot[id].b = (uint64_t)g.multi_type | (uint64_t)g.typed << 1 |
			(uint64_t)g.untyped << 2;
	c->slot[id].t = g.type;
	if (g.other) {
		const char *n = hb_arena_printf(
		    &c->spec->arena, "non-GPU GRES dropped: %s", g.other);
		if (!n)
			return sb_nomem(c);
		sb_note(c, c->cur, n);
	}
	return 0;
}

static int apply_hb_data(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);

	if (!*v)
		return bad_value(c, id, v);
	if (strncmp(v, "s3://", 5) == 0 && (v[5] == '\0' || v[5] == '/'))
		return sb_fail(c, HB_EINVAL,
			       "--hpcbridge-data: '%s' names no "
			       "bucket",
			       sb_shown(c, v));
	store(c, id, v);
	if (hb_jobspec_add_data(c->spec, v))
		return sb_nomem(c);
	sb_set_field(c, HB_F_DATA, c->cur);
	return 0;
}

/* Strings that map to a field, or that need no checking. */
static int apply_string(struct ctx *c, int id, const char *arg)
{
	store(c, id, arg);
	return 0;
}

/* Flags: set, with no value. */
static int apply_flag(struct ctx *c, int id, const char *arg)
{
	(void)arg;
	store(c, id, NULL);
	return 0;
}

static int apply_ignore_pbs(struct ctx *c, int id, const char *arg)
{
	(void)arg;
	store(c, id, NULL);
	if (c->prov.kind == HB_PROV_FILE)
		c->ignore_pbs = true;
	return 0;
}

static int apply_array(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);
	uint8_t bits[(ARRAY_MAX_SIZE + 7) / 8] = {0};
	uint32_t lim;
	bool any;
	int rc = sb_parse_array(v, bits, &lim, &any);

	if (rc == HB_ERANGE)
		return sb_fail(c, rc,
			       "invalid --array specification "
			       "'%s': indices run from 0 to %d",
			       sb_shown(c, v), ARRAY_MAX_SIZE - 1);
	if (rc)
		return bad_value(c, id, v);
	store(c, id, arg);
	return 0;
}

static int apply_exclusive(struct ctx *c, int id, const char *arg)
{
	uint64_t x;

	if (!arg || ieq(arg, "exclusive"))
		x = 0;
	else if (ieq(arg, "oversubscribe"))
		x = 1;
	else if (ieq(arg, "user"))
		x = 2;
	else if (ieq(arg, "mcs"))
		x = 3;
	else
		return bad_value(c, id, arg);
	store(c, id, arg);
	c->slot[O_EXCLUSIVE].a = x;
	return 0;
}

static int apply_oversubscribe(struct ctx *c, int id, const char *arg)
{
	(void)arg;
	store(c, id, NULL);
	c->slot[O_EXCLUSIVE].a = 1;
	return 0;
}

static int apply_extra_node_info(struct ctx *c, int id, const char *arg)
{
	long t[3];

	if (!extra_node_info(value_of(arg), t))
		return bad_value(c, id, value_of(arg));
	store(c, id, arg);
	memcpy(c->topo, t, sizeof(t));
	c->topo_dir = c->cur;
	c->extra_set = true;
	return 0;
}

/* --sockets-per-node, --cores-per-socket, --threads-per-core */
static int apply_topo(struct ctx *c, int id, const char *arg)
{
	int rc = apply_int(c, id, value_of(arg), true);

	if (rc)
		return rc;
	c->topo[id == O_SOCKETS_PER_NODE   ? 0
		: id == O_CORES_PER_SOCKET ? 1
					   : 2] = (long)c->slot[id].a;
	c->topo_dir = c->cur;
	return 0;
}

static int apply_mail_type(struct ctx *c, int id, const char *arg)
{
	long n = mail_type(value_of(arg));

	if (n < 0)
		return bad_value(c, id, value_of(arg));
	store(c, id, arg);
	c->mail_bits |= (uint32_t)n;
	return 0;
}

static int apply_nice(struct ctx *c, int id, const char *arg)
{
	if (arg) {
		const char *end;
		long n;
		bool ovf = sb_strtol(arg, &n, &end);

		if (ovf || n > 2147483645L || n < -2147483645L)
			return sb_fail(c, HB_ERANGE,
				       "invalid --nice value '%s': out of "
				       "range (+/- 2147483645)",
				       sb_shown(c, arg));
	}
	store(c, id, arg);
	return 0;
}

static int apply_nodes(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);
	uint64_t x = 0, y = 0;
	int rc = node_count(c, v, &x, &y);

	if (rc)
		return rc;
	if (x == 0)
		return sb_fail(c, HB_EUNSUP,
			       "--nodes '%s': a job with no "
			       "nodes is not supported",
			       sb_shown(c, v));
	store(c, id, arg);
	c->slot[id].a = x;
	c->slot[id].b = y;
	return 0;
}

static int apply_priority(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);

	if (!ieq(v, "TOP")) {
		const char *end;
		long n;
		bool ovf = sb_strtol(v, &n, &end);

		if (n < 0)
			return sb_fail(c, HB_EINVAL,
				       "--priority '%s': priority must be "
				       ">= 0",
				       sb_shown(c, v));
		if (ovf || n >= 0xfffffffeL)
			return sb_fail(c, HB_ERANGE,
				       "--priority '%s': priority must be "
				       "< 4294967294",
				       sb_shown(c, v));
	}
	store(c, id, arg);
	return 0;
}

/* --requeue and --no-requeue, which share a slot */
static int apply_requeue(struct ctx *c, int id, const char *arg)
{
	(void)arg;
	store(c, id, NULL);
	c->slot[O_REQUEUE].a = id == O_REQUEUE;
	return 0;
}

static int apply_signal(struct ctx *c, int id, const char *arg)
{
	if (!signal_ok(c, value_of(arg)))
		return bad_value(c, id, value_of(arg));
	store(c, id, arg);
	return 0;
}

static int apply_switches(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg), *atp = strchr(v, '@');
	char *cnt = hb_arena_strndup(&c->spec->arena, v,
				     atp ? (size_t)(atp - v) : strlen(v));
	uint64_t x;
	int rc;

	if (!cnt)
		return sb_nomem(c);
	rc = sb_slurm_int(c, "switches", cnt, true, &x);
	if (rc)
		return rc;
	store(c, id, arg);
	return 0;
}

static int apply_wait_all_nodes(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);
	uint64_t x = 0;
	int rc = sb_slurm_int(c, "wait-all-nodes", v, false, &x);

	if (rc)
		return rc;
	if ((x & 0xffff) > 1)
		return bad_value(c, id, v);
	store(c, id, arg);
	return 0;
}

/* An option of the project's that takes one of a few words. */
static int apply_word(struct ctx *c, int id, const char *arg, bool ok,
		      const char *want)
{
	if (!ok)
		return sb_fail(c, HB_EINVAL, "invalid --%s '%s': want %s",
			       sb_opt_name(id), sb_shown(c, value_of(arg)),
			       want);
	store(c, id, arg);
	return 0;
}

static int apply_hb_fabric(struct ctx *c, int id, const char *arg)
{
	return apply_word(c, id, arg, hb_fabric_parse(value_of(arg)) >= 0,
			  "rdma, tcp or auto");
}

static int apply_hb_target(struct ctx *c, int id, const char *arg)
{
	const char *v = value_of(arg);

	return apply_word(c, id, arg,
			  ieq(v, "auto") || ieq(v, "slurm") ||
				  ieq(v, "kubernetes"),
			  "auto, slurm or kubernetes");
}

/* The checks of the options that take a value as it is or refuse it. */
static bool nonempty(const char *v)
{
	return *v != '\0';
}

static bool duration_ok(const char *v)
{
	uint64_t x;

	return hb_parse_slurm_time(v, &x) == 0;
}

static bool get_user_env_ok(const char *v)
{
	const char *end;
	long n;

	sb_strtol(v, &n, &end);
	return !*end || hb_ascii_lower(*end) == 's' || hb_ascii_lower(*end) == 'l';
}

static bool gres_flags_ok(const char *v)
{
	return ieq(v, "disable-binding") || ieq(v, "enforce-binding");
}

static bool yes_no(const char *v)
{
	return ieq(v, "yes") || ieq(v, "no");
}

static bool no_kill_ok(const char *v)
{
	return ieq(v, "set") || ieq(v, "off") || ieq(v, "no");
}

static bool open_mode_ok(const char *v)
{
	return hb_ascii_lower(*v) == 'a' || hb_ascii_lower(*v) == 't';
}

static bool profile_ok(const char *v)
{
	return icontains(v, "none") || icontains(v, "all") ||
	       icontains(v, "energy") || icontains(v, "task") ||
	       icontains(v, "lustre") || icontains(v, "network");
}

/*
 * How each option is applied: by its own function, or, for a value that
 * a check takes as it is or refuses, by that check (with no_arg_ok, an
 * option given without a value is not checked).  An option with neither,
 * such as --help, is never applied.
 */
static const struct applier {
	int (*fn)(struct ctx *c, int id, const char *arg);
	bool (*ok)(const char *v);
	bool no_arg_ok;
} appliers[O__COUNT] = {
    [O_ACCOUNT] = {apply_string},
    [O_ACCTG_FREQ] = {.ok = acctg_freq_ok},
    [O_ARRAY] = {apply_array},
    [O_BATCH] = {apply_string},
    [O_BEGIN] = {.ok = hb_time_slurm_date_ok},
    [O_BB] = {apply_string},
    [O_BBF] = {apply_string},
    [O_CLUSTER_CONSTRAINT] = {apply_string},
    [O_CHDIR] = {apply_string},
    [O_CLUSTER] = {apply_string},
    [O_CLUSTERS] = {apply_string},
    [O_COMMENT] = {apply_string},
    [O_CONTAINER] = {apply_string},
    [O_CONTEXT] = {apply_string},
    [O_CONTIGUOUS] = {apply_flag},
    [O_CONSTRAINT] = {apply_string},
    [O_CORE_SPEC] = {apply_nonnegative},
    [O_CORES_PER_SOCKET] = {apply_topo},
    [O_CPU_FREQ] = {apply_string},
    [O_CPUS_PER_GPU] = {apply_positive},
    [O_CPUS_PER_TASK] = {apply_positive},
    [O_DEADLINE] = {.ok = hb_time_slurm_date_ok},
    [O_DELAY_BOOT] = {.ok = duration_ok},
    [O_DEPENDENCY] = {apply_string},
    [O_DISTRIBUTION] = {.ok = dist_ok},
    [O_ERROR] = {apply_string},
    [O_EXCLUDE] = {apply_string},
    [O_EXCLUSIVE] = {apply_exclusive},
    [O_EXPORT] = {apply_string},
    [O_EXPORT_FILE] = {apply_string},
    [O_EXTRA_NODE_INFO] = {apply_extra_node_info},
    [O_GET_USER_ENV] = {.ok = get_user_env_ok, .no_arg_ok = true},
    [O_GID] = {.ok = nonempty},
    [O_GPU_BIND] = {apply_string},
    [O_GPU_FREQ] = {apply_string},
    [O_GPUS] = {apply_gpus},
    [O_GPUS_PER_NODE] = {apply_gpus},
    [O_GPUS_PER_SOCKET] = {apply_gpus},
    [O_GPUS_PER_TASK] = {apply_gpus},
    [O_GRES] = {apply_gpus},
    [O_GRES_FLAGS] = {.ok = gres_flags_ok},
    [O_HINT] = {.ok = hint_ok},
    [O_HOLD] = {apply_flag},
    [O_IGNORE_PBS] = {apply_ignore_pbs},
    [O_INPUT] = {apply_string},
    [O_JOB_NAME] = {apply_string},
    [O_KILL_ON_INVALID_DEP] = {.ok = yes_no},
    [O_LICENSES] = {apply_string},
    [O_MAIL_TYPE] = {apply_mail_type},
    [O_MAIL_USER] = {apply_string},
    [O_MCS_LABEL] = {apply_string},
    [O_MEM] = {apply_size},
    [O_MEM_BIND] = {apply_string},
    [O_MEM_PER_CPU] = {apply_size},
    [O_MEM_PER_GPU] = {apply_size},
    [O_MINCPUS] = {apply_positive},
    [O_NETWORK] = {apply_string},
    [O_NICE] = {apply_nice},
    [O_NO_KILL] = {.ok = no_kill_ok, .no_arg_ok = true},
    [O_NO_REQUEUE] = {apply_requeue},
    [O_NODEFILE] = {apply_string},
    [O_NODELIST] = {apply_string},
    [O_NODES] = {apply_nodes},
    [O_NTASKS] = {apply_positive},
    [O_NTASKS_PER_CORE] = {apply_positive},
    [O_NTASKS_PER_GPU] = {apply_positive},
    [O_NTASKS_PER_NODE] = {apply_positive},
    [O_NTASKS_PER_SOCKET] = {apply_positive},
    [O_NTASKS_PER_TRES] = {apply_positive},
    [O_OPEN_MODE] = {.ok = open_mode_ok},
    [O_OUTPUT] = {apply_string},
    [O_OVERCOMMIT] = {apply_flag},
    [O_OVERSUBSCRIBE] = {apply_oversubscribe},
    [O_PARSABLE] = {apply_flag},
    [O_PARTITION] = {apply_string},
    [O_POWER] = {apply_string},
    [O_PREFER] = {apply_string},
    [O_PRIORITY] = {apply_priority},
    [O_PROFILE] = {.ok = profile_ok},
    [O_PROPAGATE] = {.ok = rlimits_ok, .no_arg_ok = true},
    [O_QOS] = {apply_string},
    [O_QUIET] = {apply_string},
    [O_REBOOT] = {apply_flag},
    [O_REQUEUE] = {apply_requeue},
    [O_RESERVATION] = {apply_string},
    [O_SIGNAL] = {apply_signal},
    [O_SOCKETS_PER_NODE] = {apply_topo},
    [O_SPREAD_JOB] = {apply_flag},
    [O_SWITCHES] = {apply_switches},
    [O_TEST_ONLY] = {apply_flag},
    [O_THREAD_SPEC] = {apply_positive},
    [O_THREADS_PER_CORE] = {apply_topo},
    [O_TIME] = {apply_time},
    [O_TIME_MIN] = {apply_time},
    [O_TMP] = {apply_size},
    [O_UID] = {.ok = nonempty},
    [O_USE_MIN_NODES] = {apply_flag},
    [O_VERBOSE] = {apply_string},
    [O_WAIT] = {apply_flag},
    [O_WAIT_ALL_NODES] = {apply_wait_all_nodes},
    [O_WCKEY] = {apply_string},
    [O_SWITCH_REQ] = {apply_positive},
    [O_SWITCH_WAIT] = {apply_string},
    [O_HB_TARGET] = {apply_hb_target},
    [O_HB_DEADLINE] = {.ok = hb_time_slurm_date_ok},
    [O_HB_CHECKPOINT] = {.ok = nonempty},
    [O_HB_DATA] = {apply_hb_data},
    [O_HB_FABRIC] = {apply_hb_fabric},
};

/* Apply option id with argument arg (NULL: none) from the current source. */
int sb_apply(struct ctx *c, int id, const char *arg)
{
	const struct applier *a = &appliers[id];

	if (a->fn)
		return a->fn(c, id, arg);
	if (!a->ok)
		return sb_fail(c, HB_EINVAL, "unhandled option --%s",
			       sb_opt_name(id));
	if ((arg || !a->no_arg_ok) && !a->ok(value_of(arg)))
		return bad_value(c, id, value_of(arg));
	store(c, id, arg);
	return 0;
}
