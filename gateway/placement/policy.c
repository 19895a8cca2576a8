/*
 * policy.c - reading placement policies and snapshots, and the values
 * they are written in (money, durations, sizes, bandwidths, percentages,
 * instants).
 *
 * Documents come from hb_doc_parse() as cJSON trees whose nodes know
 * their source line.  Every mapping is checked against the keys it may
 * hold, so a misspelt key is an error, not a silently ignored setting.
 * Every message reads "FILE:LINE: key.path: what is wrong".
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/units.h"

/* ---- values ---------------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * A decimal number "123" or "123.456" at *p: its digits as an integer
 * (int_part * 10^nfrac + fraction), at most max_frac decimals and 18
 * digits in all.  Advances *p past it.
 */
static int decimal(const char **p, unsigned max_frac, uint64_t *mant,
		   unsigned *nfrac)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned nd = 0, nf = 0;

	if (!is_digit(*s))
		return HB_EINVAL;
	for (; is_digit(*s); s++, nd++) {
		if (nd >= 18)
			return HB_ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return HB_EINVAL;
		for (; is_digit(*s); s++, nf++) {
			if (nf >= max_frac)
				return HB_EINVAL;
			if (nd + nf >= 18)
				return HB_ERANGE;
			v = v * 10 + (uint64_t)(*s - '0');
		}
	}
	*p = s;
	*mant = v;
	*nfrac = nf;
	return 0;
}

static uint64_t pow10u(unsigned n)
{
	uint64_t v = 1;

	while (n--)
		v *= 10;
	return v;
}

int hb_parse_money(const char *s, hb_money *out)
{
	uint64_t m;
	unsigned nf;
	int rc = decimal(&s, 6, &m, &nf);

	if (rc)
		return rc;
	if (*s)
		return HB_EINVAL;
	m *= pow10u(6 - nf); /* 18 digits at most: fits */
	if (m > (uint64_t)HB_MONEY_MAX)
		return HB_ERANGE;
	*out = (hb_money)m;
	return 0;
}

int hb_parse_duration(const char *s, int64_t *out)
{
	static const struct {
		char c;
		int64_t mult;
	} units[] = { { 'w', 604800 },
		      { 'd', 86400 },
		      { 'h', 3600 },
		      { 'm', 60 },
		      { 's', 1 } };
	uint64_t total = 0;
	int last = -1;

	if (!*s)
		return HB_EINVAL;
	while (*s) {
		uint64_t v = 0;
		int nd = 0, u;

		for (; is_digit(*s); s++) {
			if (++nd > 12)
				return HB_ERANGE;
			v = v * 10 + (uint64_t)(*s - '0');
		}
		if (!nd)
			return HB_EINVAL;
		if (!*s && last < 0) { /* a bare number: seconds */
			total = v;
			break;
		}
		for (u = 0; u < 5; u++)
			if (*s == units[u].c)
				break;
		/* units in decreasing order, each once: "1d12h" */
		if (u == 5 || u <= last)
			return HB_EINVAL;
		last = u;
		s++;
		total += v * (uint64_t)units[u].mult;
		if (total > (uint64_t)HB_DURATION_MAX)
			return HB_ERANGE;
	}
	if (total > (uint64_t)HB_DURATION_MAX)
		return HB_ERANGE;
	*out = (int64_t)total;
	return 0;
}

/* A unit prefix at *p: K M G T P E (any case), then 'i' for powers of
 * 1024.  *mult is 1 when there is none. */
static void unit_prefix(const char **p, uint64_t *mult)
{
	static const char letters[] = "KMGTPE";
	const char *s = *p, *l;
	uint64_t m = 1;

	*mult = 1;
	if (!*s)
		return;
	l = strchr(letters, toupper((unsigned char)*s));
	if (!l)
		return;
	s++;
	if (*s == 'i') {
		for (long i = 0; i <= l - letters; i++)
			m *= 1024;
		s++;
	} else {
		for (long i = 0; i <= l - letters; i++)
			m *= 1000;
	}
	*mult = m;
	*p = s;
}

/* mant / 10^nfrac * mult / div, rounded up; HB_ERANGE past max. */
static int scale(uint64_t mant, unsigned nfrac, uint64_t mult, uint64_t div,
		 uint64_t max, uint64_t *out)
{
	unsigned __int128 num = (unsigned __int128)mant * mult;
	unsigned __int128 den = (unsigned __int128)pow10u(nfrac) * div;
	unsigned __int128 v = (num + den - 1) / den;

	if (v > max)
		return HB_ERANGE;
	*out = (uint64_t)v;
	return 0;
}

int hb_parse_size(const char *s, uint64_t *out)
{
	uint64_t mant, mult;
	unsigned nf;
	int rc = decimal(&s, 3, &mant, &nf);

	if (rc)
		return rc;
	unit_prefix(&s, &mult);
	if (*s == 'B' || *s == 'b')
		s++;
	if (*s)
		return HB_EINVAL;
	return scale(mant, nf, mult, 1, HB_SIZE_MAX, out);
}

int hb_parse_bandwidth(const char *s, uint64_t *out)
{
	uint64_t mant, mult, div;
	unsigned nf;
	int rc = decimal(&s, 3, &mant, &nf);

	if (rc)
		return rc;
	unit_prefix(&s, &mult);
	if (!strncmp(s, "bit", 3)) {
		div = 8;
		s += 3;
	} else if (*s == 'b') {
		div = 8;
		s++;
	} else if (!strncmp(s, "Byte", 4)) {
		div = 1;
		s += 4;
	} else if (*s == 'B') {
		div = 1;
		s++;
	} else {
		return HB_EINVAL; /* a unit is required: bits or bytes */
	}
	if (!strcmp(s, "/s"))
		s += 2;
	else if (!strcmp(s, "ps"))
		s += 2;
	if (*s)
		return HB_EINVAL;
	rc = scale(mant, nf, mult, div, HB_SIZE_MAX, out);
	if (!rc && !*out)
		return HB_EINVAL; /* zero bandwidth never finishes */
	return rc;
}

int hb_parse_percent(const char *s, int32_t *out)
{
	uint64_t m;
	unsigned nf;
	int rc = decimal(&s, 2, &m, &nf);

	if (rc)
		return rc;
	if (strcmp(s, "%"))
		return HB_EINVAL;
	m *= pow10u(2 - nf);
	if (m > 10000000) /* 100,000 % */
		return HB_ERANGE;
	*out = (int32_t)m;
	return 0;
}

int64_t hb_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void hb_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static unsigned month_days(int64_t y, unsigned m)
{
	static const unsigned days[] = { 31, 28, 31, 30, 31, 30,
					 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* n digits at *p into *v. */
static bool digits(const char **p, int n, int *v)
{
	int x = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return false;
		x = x * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return true;
}

int hb_parse_utc_offset(const char *s, int32_t *out)
{
	int sign, hh, mm = 0;

	if (!strcmp(s, "Z") || !strcmp(s, "z")) {
		*out = 0;
		return 0;
	}
	if (*s != '+' && *s != '-')
		return HB_EINVAL;
	sign = *s++ == '-' ? -1 : 1;
	if (!digits(&s, 2, &hh))
		return HB_EINVAL;
	if (*s == ':')
		s++;
	if (*s && !digits(&s, 2, &mm))
		return HB_EINVAL;
	if (*s || hh > 14 || mm > 59)
		return HB_EINVAL;
	*out = sign * (hh * 3600 + mm * 60);
	return 0;
}

int hb_parse_instant(const char *s, int64_t *out)
{
	int y, mo, d, hh = 0, mi = 0, ss = 0;
	int32_t off = 0;

	if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) ||
	    *s++ != '-' || !digits(&s, 2, &d))
		return HB_EINVAL;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    (unsigned)d > month_days(y, (unsigned)mo))
		return HB_EINVAL;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (!digits(&s, 2, &hh) || *s++ != ':' || !digits(&s, 2, &mi))
			return HB_EINVAL;
		if (*s == ':') {
			s++;
			if (!digits(&s, 2, &ss))
				return HB_EINVAL;
		}
		if (hh > 23 || mi > 59 || ss > 60)
			return HB_EINVAL;
		if (*s && hb_parse_utc_offset(s, &off))
			return HB_EINVAL;
	} else if (*s) {
		return HB_EINVAL;
	}
	*out = hb_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	       hh * 3600 + mi * 60 + ss - off;
	return 0;
}

/* ---- formatting -------------------------------------------------------- */

/*
 * A placement decision formats a few dozen amounts and instants (its
 * explanation and its document), so these write their digits by hand:
 * through snprintf each cost 1,000 to 3,000 instructions, now 100 to
 * 300.  The text is what "%llu", "%02u" and "%04lld" gave, byte for byte
 * (tests/unit/test_policy.c keeps the snprintf versions to compare),
 * except where those negated INT64_MIN, which C leaves undefined: a rate
 * of INT64_MIN and an instant within a day of it now read as they are.
 *
 * Every text fits FMT_MAX bytes with its NUL (the longest, an instant
 * near INT64_MIN, takes 30), so a buffer that large is written in place;
 * a smaller one gets what snprintf would leave: the text cut to size - 1
 * bytes, NUL-terminated, nothing at all when size is 0.
 */
#define FMT_MAX 32

/* Digits of v in decimal (1 to 20). */
static size_t ndigits(uint64_t v)
{
	size_t n = 1;

	for (uint64_t p = 10; n < 20 && v >= p; p *= 10)
		n++;
	return n;
}

/* v in decimal at o, at least width digits (zeros in front); returns
 * the length.  Counted first, then written from the last digit: no
 * copy. */
static size_t put_dec(char *o, uint64_t v, size_t width)
{
	size_t n = ndigits(v);

	if (n < width)
		n = width;
	for (size_t i = n; i--; v /= 10)
		o[i] = (char)('0' + v % 10);
	return n;
}

/* Two digits of v < 100: minutes, hours, days of the month. */
static void put2(char *o, uint64_t v)
{
	o[0] = (char)('0' + v / 10);
	o[1] = (char)('0' + v % 10);
}

/* |v| without overflow, INT64_MIN included. */
static uint64_t magnitude(int64_t v)
{
	return v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
}

/* The n bytes at o, written for buf: in place (o == buf) they only need
 * the NUL; from scratch, what fits is copied. */
static char *finish(char *buf, size_t size, const char *o, size_t n)
{
	if (o == buf) {
		buf[n] = '\0';
	} else if (size) {
		if (n > size - 1)
			n = size - 1;
		memcpy(buf, o, n);
		buf[n] = '\0';
	}
	return buf;
}

char *hb_format_duration(int64_t sec, char *buf, size_t size)
{
	char tmp[FMT_MAX], *o = size >= FMT_MAX ? buf : tmp;
	uint64_t s = magnitude(sec), m;
	size_t n = 0;

	if (sec < 0)
		o[n++] = '-';
	if (s < 60) {
		n += put_dec(o + n, s, 1);
		o[n++] = 's';
	} else if (s < 3600) {
		n += put_dec(o + n, s / 60, 1);
		o[n++] = 'm';
		put2(o + n, s % 60);
		n += 2;
		o[n++] = 's';
	} else {
		m = (s + 59) / 60; /* whole minutes, rounded up */
		if (m < 1440) {
			n += put_dec(o + n, m / 60, 1);
		} else {
			n += put_dec(o + n, m / 1440, 1);
			o[n++] = 'd';
			put2(o + n, m / 60 % 24);
			n += 2;
		}
		o[n++] = 'h';
		put2(o + n, m % 60);
		n += 2;
		o[n++] = 'm';
	}
	return finish(buf, size, o, n);
}

char *hb_format_money(hb_money m, char *buf, size_t size)
{
	char tmp[FMT_MAX], *o = size >= FMT_MAX ? buf : tmp, *p;
	uint64_t cents = (magnitude(m) + 5000) / 10000, whole = cents / 100;
	size_t n = 0, nd = ndigits(whole);

	if (m < 0)
		o[n++] = '-';
	n += nd + (nd - 1) / 3; /* a comma before each group of three */
	p = o + n;
	for (unsigned i = 1;; i++) {
		*--p = (char)('0' + whole % 10);
		if (!(whole /= 10))
			break;
		if (i % 3 == 0)
			*--p = ',';
	}
	o[n++] = '.';
	put2(o + n, cents % 100);
	n += 2;
	return finish(buf, size, o, n);
}

char *hb_format_rate(hb_money m, char *buf, size_t size)
{
	char tmp[FMT_MAX], *o = size >= FMT_MAX ? buf : tmp;
	uint64_t a = magnitude(m), frac = a % HB_MONEY_UNIT;
	size_t n = 0, k = 6;

	if (m >= 0 && m % 10000 == 0)
		return hb_format_money(m, buf, size);
	while (k > 2 && frac % 10 == 0) { /* 6 decimals, trailing 0s cut */
		frac /= 10;
		k--;
	}
	if (m < 0)
		o[n++] = '-';
	n += put_dec(o + n, a / HB_MONEY_UNIT, 1);
	o[n++] = '.';
	n += put_dec(o + n, frac, k);
	return finish(buf, size, o, n);
}

/* v in units of 1000 with suffixes sfx[], one decimal below 100. */
static char *format_si(uint64_t v, const char *const *sfx, int nsfx, char *buf,
		       size_t size)
{
	char tmp[FMT_MAX], *o = size >= FMT_MAX ? buf : tmp;
	uint64_t unit = 1;
	size_t n, ns;
	int i = 0;

	while (i + 1 < nsfx && v / unit >= 1000) {
		unit *= 1000;
		i++;
	}
	if (i == 0 || v % unit == 0 || v / unit >= 100) {
		n = put_dec(o, (v + unit / 2) / unit, 1);
	} else {
		uint64_t tenths = (v * 10 + unit / 2) / unit;

		if (v > UINT64_MAX / 10)
			tenths = v / (unit / 10);
		n = put_dec(o, tenths / 10, 1);
		o[n++] = '.';
		o[n++] = (char)('0' + tenths % 10);
	}
	o[n++] = ' ';
	ns = strlen(sfx[i]); /* 4 at most */
	memcpy(o + n, sfx[i], ns);
	return finish(buf, size, o, n + ns);
}

char *hb_format_size(uint64_t bytes, char *buf, size_t size)
{
	static const char *const sfx[] = { "B",	 "KB", "MB", "GB",
					   "TB", "PB", "EB" };

	return format_si(bytes, sfx, 7, buf, size);
}

char *hb_format_bandwidth(uint64_t bps, char *buf, size_t size)
{
	static const char *const sfx[] = { "b/s",  "Kb/s", "Mb/s",
					   "Gb/s", "Tb/s", "Pb/s" };

	return format_si(bps > UINT64_MAX / 8 ? UINT64_MAX : bps * 8, sfx, 6,
			 buf, size);
}

char *hb_format_instant(int64_t t, char *buf, size_t size)
{
	char tmp[FMT_MAX], *o = size >= FMT_MAX ? buf : tmp;
	int64_t days = t / 86400, rem = t % 86400, y;
	unsigned m, d;
	size_t n = 0;

	if (rem < 0) { /* the day it falls in, before 1970 too */
		rem += 86400;
		days--;
	}
	hb_civil_from_days(days, &y, &m, &d);
	if (y < 0) /* "%04lld": the sign counts in the width */
		o[n++] = '-';
	n += put_dec(o + n, magnitude(y), y < 0 ? 3 : 4);
	o[n++] = '-';
	put2(o + n, m);
	o[n + 2] = '-';
	put2(o + n + 3, d);
	o[n + 5] = 'T';
	put2(o + n + 6, (uint64_t)rem / 3600);
	o[n + 8] = ':';
	put2(o + n + 9, (uint64_t)rem / 60 % 60);
	o[n + 11] = ':';
	put2(o + n + 12, (uint64_t)rem % 60);
	o[n + 14] = 'Z';
	return finish(buf, size, o, n + 15);
}

/* ---- names ------------------------------------------------------------ */

const char *hb_side_name(int side)
{
	return side == HB_SIDE_SLURM  ? "slurm"
	       : side == HB_SIDE_KUBE ? "kubernetes"
				      : NULL;
}

const char *hb_side_title(int side)
{
	return side == HB_SIDE_KUBE ? "Kubernetes" : "Slurm";
}

static const char *const period_names[] = { "day",     "week", "month",
					    "quarter", "year", NULL };

const char *hb_period_name(int period)
{
	return period >= 0 && period < HB__PERIOD_COUNT ? period_names[period]
							: NULL;
}

int64_t hb_period_start(int period, int64_t now, int32_t utc_offset)
{
	int64_t local = now + utc_offset, y;
	int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
	unsigned m, d;

	hb_civil_from_days(days, &y, &m, &d);
	switch (period) {
	case HB_PERIOD_DAY:
		break;
	case HB_PERIOD_WEEK:
		/* 1970-01-01 was a Thursday: Monday is 3 days before it */
		days -= ((days % 7) + 7 + 3) % 7;
		break;
	case HB_PERIOD_MONTH:
		days = hb_days_from_civil(y, m, 1);
		break;
	case HB_PERIOD_QUARTER:
		days = hb_days_from_civil(y, (m - 1) / 3 * 3 + 1, 1);
		break;
	default:
		days = hb_days_from_civil(y, 1, 1);
		break;
	}
	return days * 86400 - utc_offset;
}

/* ---- document reading ------------------------------------------------- */

struct rd {
	const char *file;
	struct hb_err *err;
	struct hb_arena *a;
};

#define PATH_MAX_ 256

static int failv(struct rd *r, int code, const cJSON *at, const char *path,
		 const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
static int failv(struct rd *r, int code, const cJSON *at, const char *path,
		 const char *fmt, va_list ap)
{
	char msg[HB_ERR_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return hb_err_set(r->err, code, r->file,
			  at ? (unsigned)hb_doc_line(at) : 0, "%s%s%s",
			  path ? path : "", path && *path ? ": " : "", msg);
}

static int fail(struct rd *r, const cJSON *at, const char *path,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(struct rd *r, const cJSON *at, const char *path,
		const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = failv(r, HB_EINVAL, at, path, fmt, ap);
	va_end(ap);
	return rc;
}

/* path + "." + key into buf; a path too long for messages ends in
 * "...". */
static const char *join(char *buf, const char *path, const char *key)
{
	int n = snprintf(buf, PATH_MAX_, "%s%s%s", path, *path ? "." : "", key);

	if (n < 0 || n >= PATH_MAX_)
		memcpy(buf + PATH_MAX_ - 4, "...", 4);
	return buf;
}

static const char *type_name(const cJSON *it)
{
	if (cJSON_IsString(it))
		return "a string";
	if (cJSON_IsNumber(it))
		return "a number";
	if (cJSON_IsBool(it))
		return "a boolean";
	if (cJSON_IsNull(it))
		return "null";
	if (cJSON_IsArray(it))
		return "a list";
	return "a mapping";
}

/* obj must be a mapping holding only keys from allowed (NULL-ended). */
static int mapping(struct rd *r, const cJSON *obj, const char *path,
		   const char *const *allowed)
{
	const cJSON *it;

	if (!cJSON_IsObject(obj))
		return fail(r, obj, path, "expected a mapping, not %s",
			    type_name(obj));
	cJSON_ArrayForEach (it, obj) {
		size_t i;
		char p[PATH_MAX_];

		if (!allowed)
			continue;
		for (i = 0; allowed[i]; i++)
			if (!strcmp(it->string, allowed[i]))
				break;
		if (!allowed[i]) {
			char known[200];
			size_t n = 0;

			known[0] = '\0';
			for (i = 0; allowed[i] && n < sizeof(known); i++)
				n += (size_t)snprintf(
					known + n, sizeof(known) - n, "%s%s",
					i ? ", " : "", allowed[i]);
			return fail(r, it, join(p, path, it->string),
				    "unknown key (known here: %s)", known);
		}
	}
	return 0;
}

/* The member key of obj, or NULL when absent or null. */
static const cJSON *member(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return it && !cJSON_IsNull(it) ? it : NULL;
}

/* A scalar's text: strings as they are, numbers written back; NULL for
 * anything else. */
static const char *scalar(const cJSON *it, char *buf, size_t size)
{
	double v;

	if (cJSON_IsString(it))
		return it->valuestring;
	if (!cJSON_IsNumber(it))
		return NULL;
	v = it->valuedouble;
	if (!isfinite(v))
		return NULL;
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.15g", v);
	return buf;
}

static const char *why(int rc)
{
	return rc == HB_ERANGE ? "too large" : "malformed";
}

/* A name: 1-128 printable characters, no whitespace. */
static int name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];

		if (c <= ' ' || c == 0x7f || n >= 128)
			return 0;
	}
	return n > 0;
}

static int get_name(struct rd *r, const cJSON *it, const char *path,
		    const char **out)
{
	if (!cJSON_IsString(it))
		return fail(r, it, path, "expected a name, not %s",
			    type_name(it));
	if (!name_ok(it->valuestring))
		return fail(r, it, path,
			    "'%.60s' is not a name (1 to 128 characters, no "
			    "spaces or control characters)",
			    it->valuestring);
	*out = hb_arena_strdup(r->a, it->valuestring);
	return *out ? 0 : HB_ENOMEM;
}

/* A GPU type or MIG profile: lower-cased copy of [A-Za-z0-9._-]{1,64}. */
static int gpu_name(struct rd *r, const cJSON *at, const char *path,
		    const char *s, const char **out)
{
	size_t n = strlen(s);
	char *c;

	if (!strcmp(s, HB_GPU_ANY)) { /* any type at all */
		*out = HB_GPU_ANY;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			n = 0;
	if (!n || n > 64)
		return fail(r, at, path,
			    "'%.60s' is not a GPU type (letters, digits, "
			    "'.', '_' and '-')",
			    s);
	c = hb_arena_strdup(r->a, s);
	if (!c)
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++)
		c[i] = (char)tolower((unsigned char)c[i]);
	*out = c;
	return 0;
}

static int get_bool(struct rd *r, const cJSON *obj, const char *path,
		    const char *key, bool *out)
{
	const cJSON *it = member(obj, key);
	char p[PATH_MAX_];

	if (!it)
		return 0;
	if (!cJSON_IsBool(it))
		return fail(r, it, join(p, path, key),
			    "expected true or false, not %s", type_name(it));
	*out = cJSON_IsTrue(it);
	return 0;
}

static int get_uint(struct rd *r, const cJSON *obj, const char *path,
		    const char *key, uint64_t max, uint64_t *out)
{
	const cJSON *it = member(obj, key);
	char p[PATH_MAX_], b[64];
	const char *t;
	uint64_t v = 0;

	if (!it)
		return 0;
	t = scalar(it, b, sizeof(b));
	if (!t || hb_parse_u64(t, max, &v))
		return fail(r, it, join(p, path, key),
			    "expected a whole number from 0 to %llu",
			    (unsigned long long)max);
	*out = v;
	return 0;
}

static int get_u32(struct rd *r, const cJSON *obj, const char *path,
		   const char *key, uint32_t max, uint32_t *out)
{
	uint64_t v = *out;
	int rc = get_uint(r, obj, path, key, max, &v);

	*out = (uint32_t)v;
	return rc;
}

/* A scalar read by a value parser (units.h style), with the words of its
 * errors. */
struct scalar_kind {
	const char *what; /* "an amount like 0.25" */
	const char *noun; /* "amount" */
	const char *hint; /* how a good one looks */
	int (*parse)(const char *s, void *out);
};

static int parse_money(const char *s, void *out)
{
	return hb_parse_money(s, out);
}

static int parse_duration(const char *s, void *out)
{
	return hb_parse_duration(s, out);
}

static int parse_size(const char *s, void *out)
{
	return hb_parse_size(s, out);
}

static const struct scalar_kind k_money = {
	"an amount like 0.25", "amount",
	"(digits, at most 6 decimals, not negative)", parse_money
};
static const struct scalar_kind k_duration = {
	"a duration like 6h10m", "duration",
	"(like 90s, 11m, 6h10m, 1d12h; a bare number is seconds)",
	parse_duration
};
static const struct scalar_kind k_size = {
	"a size like 800G", "size",
	"(like 800G, 1.5TB, 512Mi; a bare number is bytes)", parse_size
};

static int get_scalar(struct rd *r, const cJSON *obj, const char *path,
		      const char *key, const struct scalar_kind *k, void *out)
{
	const cJSON *it = member(obj, key);
	char p[PATH_MAX_], b[64];
	const char *t;
	int rc;

	if (!it)
		return 0;
	t = scalar(it, b, sizeof(b));
	if (!t)
		return fail(r, it, join(p, path, key), "expected %s, not %s",
			    k->what, type_name(it));
	if ((rc = k->parse(t, out)))
		return fail(r, it, join(p, path, key), "%s '%.40s' is %s %s",
			    k->noun, t, why(rc), k->hint);
	return 0;
}

static int get_money(struct rd *r, const cJSON *obj, const char *path,
		     const char *key, hb_money *out)
{
	return get_scalar(r, obj, path, key, &k_money, out);
}

static int get_duration(struct rd *r, const cJSON *obj, const char *path,
			const char *key, int64_t *out)
{
	return get_scalar(r, obj, path, key, &k_duration, out);
}

static int get_size(struct rd *r, const cJSON *obj, const char *path,
		    const char *key, uint64_t *out)
{
	return get_scalar(r, obj, path, key, &k_size, out);
}

static int get_mem_mb(struct rd *r, const cJSON *obj, const char *path,
		      const char *key, uint64_t *out)
{
	uint64_t bytes = (uint64_t)-1;
	int rc = get_size(r, obj, path, key, &bytes);

	if (!rc && bytes != (uint64_t)-1)
		*out = (bytes + 1048575) / 1048576;
	return rc;
}

/* A percentage: "20%" or a number of percent. */
static int get_percent(struct rd *r, const cJSON *obj, const char *path,
		       const char *key, int32_t max_bp, int32_t *out)
{
	const cJSON *it = member(obj, key);
	char p[PATH_MAX_], b[64];
	const char *t;
	int32_t v;
	int rc;

	if (!it)
		return 0;
	t = scalar(it, b, sizeof(b));
	if (t && cJSON_IsNumber(it)) {
		size_t n = strlen(b); /* b holds the number */

		if (n + 2 > sizeof(b))
			t = NULL;
		else
			memcpy(b + n, "%", 2);
	}
	if (!t)
		return fail(r, it, join(p, path, key),
			    "expected a percentage like 20%%, not %s",
			    type_name(it));
	rc = hb_parse_percent(t, &v);
	if (!rc && v > max_bp)
		rc = HB_ERANGE;
	if (rc)
		return fail(r, it, join(p, path, key),
			    "percentage '%.40s' is %s (0%% to %d%%, at most "
			    "2 decimals)",
			    t, why(rc), max_bp / 100);
	*out = v;
	return 0;
}

/* One of words[] (NULL-ended); *out is its index. */
static int get_word(struct rd *r, const cJSON *obj, const char *path,
		    const char *key, const char *const *words, uint8_t *out)
{
	const cJSON *it = member(obj, key);
	char p[PATH_MAX_], list[160];
	size_t n = 0;

	if (!it)
		return 0;
	for (uint8_t i = 0; cJSON_IsString(it) && words[i]; i++)
		if (!strcmp(it->valuestring, words[i])) {
			*out = i;
			return 0;
		}
	list[0] = '\0';
	for (size_t i = 0; words[i] && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      i ? ", " : "", words[i]);
	if (cJSON_IsString(it))
		return fail(r, it, join(p, path, key),
			    "'%.40s' is not one of: %s", it->valuestring, list);
	return fail(r, it, join(p, path, key), "expected one of: %s, not %s",
		    list, type_name(it));
}

/* A list of names (or GPU types when gpu is set). */
static int get_names(struct rd *r, const cJSON *obj, const char *path,
		     const char *key, bool gpu, const char ***out,
		     uint32_t *nout)
{
	const cJSON *it = member(obj, key), *e;
	char p[PATH_MAX_], pe[PATH_MAX_ + 16];
	const char **v;
	uint32_t n = 0;
	int rc, count;

	if (!it)
		return 0;
	join(p, path, key);
	if (cJSON_IsString(it)) { /* one name alone */
		count = 1;
	} else if (!cJSON_IsArray(it)) {
		return fail(r, it, p, "expected a list of names, not %s",
			    type_name(it));
	} else {
		count = cJSON_GetArraySize(it);
	}
	if (count > HB_POLICY_MAX_ITEMS)
		return fail(r, it, p, "more than %d entries",
			    HB_POLICY_MAX_ITEMS);
	v = hb_arena_alloc(r->a, sizeof(*v) * (size_t)(count + 1));
	if (!v)
		return HB_ENOMEM;
	if (cJSON_IsString(it)) {
		rc = gpu ? gpu_name(r, it, p, it->valuestring, &v[0])
			 : get_name(r, it, p, &v[0]);
		if (rc)
			return rc;
		n = 1;
	} else {
		cJSON_ArrayForEach (e, it) {
			snprintf(pe, sizeof(pe), "%s[%u]", p, n);
			if (gpu && cJSON_IsString(e))
				rc = gpu_name(r, e, pe, e->valuestring, &v[n]);
			else
				rc = get_name(r, e, pe, &v[n]);
			if (rc)
				return rc;
			for (uint32_t j = 0; j < n; j++)
				if (!strcmp(v[j], v[n]))
					return fail(r, e, pe,
						    "'%s' is listed twice",
						    v[n]);
			n++;
		}
	}
	*out = v;
	*nout = n;
	return 0;
}

/* ---- the policy ------------------------------------------------------- */

static const char *const rate_keys[] = { "cpu_hour", "mem_gb_hour",
					 "gpu_hour", "shard_hour",
					 "per_job",  NULL };

static int get_rates(struct rd *r, const cJSON *obj, const char *path,
		     struct hb_rates *out)
{
	const cJSON *it = member(obj, "rates"), *g, *e;
	char p[PATH_MAX_], pg[PATH_MAX_], pe[PATH_MAX_];
	int rc, n;

	if (!it)
		return 0;
	join(p, path, "rates");
	if ((rc = mapping(r, it, p, rate_keys)))
		return rc;
	out->line = (uint32_t)hb_doc_line(it);
	if ((rc = get_money(r, it, p, "cpu_hour", &out->cpu_hour)) ||
	    (rc = get_money(r, it, p, "mem_gb_hour", &out->mem_gb_hour)) ||
	    (rc = get_money(r, it, p, "shard_hour", &out->shard_hour)) ||
	    (rc = get_money(r, it, p, "per_job", &out->per_job)))
		return rc;
	g = member(it, "gpu_hour");
	if (!g)
		return 0;
	if (!cJSON_IsObject(g))
		return get_money(r, it, p, "gpu_hour", &out->gpu_hour);
	/* per type; "default" for the others */
	join(pg, p, "gpu_hour");
	n = cJSON_GetArraySize(g);
	if (n > HB_POLICY_MAX_ITEMS)
		return fail(r, g, pg, "more than %d entries",
			    HB_POLICY_MAX_ITEMS);
	out->gpu = hb_arena_alloc(r->a, sizeof(*out->gpu) * (size_t)(n + 1));
	out->ngpu = 0;
	if (!out->gpu)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, g) {
		struct hb_gpu_rate *gr = &out->gpu[out->ngpu];

		join(pe, pg, e->string);
		if (!strcmp(e->string, "default")) {
			rc = get_money(r, g, pg, "default", &out->gpu_hour);
			if (rc)
				return rc;
			continue;
		}
		if ((rc = gpu_name(r, e, pe, e->string, &gr->type)) ||
		    (rc = get_money(r, g, pg, e->string, &gr->per_hour)))
			return rc;
		out->ngpu++;
	}
	return 0;
}

static const char *const node_keys[] = { "cpus", "memory", "gpus", NULL };

/* Capability keys, read into cap; path names the section. */
static int get_cap(struct rd *r, const cJSON *obj, const char *path,
		   struct hb_capability *cap)
{
	const cJSON *node = member(obj, "node");
	char p[PATH_MAX_];
	int rc;

	if ((rc = get_u32(r, obj, path, "max_nodes", 1000000,
			  &cap->max_nodes)) ||
	    (rc = get_names(r, obj, path, "gpu_types", true, &cap->gpu_types,
			    &cap->ngpu_types)) ||
	    (rc = get_names(r, obj, path, "mig", true, &cap->mig,
			    &cap->nmig)) ||
	    (rc = get_bool(r, obj, path, "shards", &cap->shards)) ||
	    (rc = get_bool(r, obj, path, "rdma", &cap->rdma)))
		return rc;
	for (uint32_t i = 0; i < cap->nmig; i++)
		if (strcmp(cap->mig[i], HB_GPU_ANY) &&
		    !hb_gpu_is_mig(cap->mig[i]))
			return fail(r, member(obj, "mig"), join(p, path, "mig"),
				    "'%s' is not a MIG profile (like 1g.10gb)",
				    cap->mig[i]);
	if (!node)
		return 0;
	join(p, path, "node");
	if ((rc = mapping(r, node, p, node_keys)) ||
	    (rc = get_u32(r, node, p, "cpus", 1000000, &cap->node_cpus)) ||
	    (rc = get_mem_mb(r, node, p, "memory", &cap->node_mem_mb)) ||
	    (rc = get_u32(r, node, p, "gpus", 1024, &cap->node_gpus)))
		return rc;
	return 0;
}

static const char *const prefer_words[] = { "slurm", "kubernetes", "cheapest",
					    "earliest", NULL };
static const char *const fallback_words[] = { "earliest", "reject", NULL };
static const char *const burst_words[] = { "never", "allowed", NULL };
static const char *const side_words[] = { "slurm", "kubernetes", NULL };
static const char *const budget_keys[] = { "amount", "period", "sides", NULL };

#define RULE_KEYS                                                              \
	"burst", "prefer", "fallback", "honour_target", "budget",              \
		"max_premium", "keep_with_data_over", "max_staging_slack",     \
		"pilot"

static int get_rule_settings(struct rd *r, const cJSON *obj, const char *path,
			     struct hb_rule *rule)
{
	const cJSON *it, *b;
	char p[PATH_MAX_], pb[PATH_MAX_];
	uint8_t w;
	int rc;

	it = member(obj, "burst");
	if (it && cJSON_IsBool(it)) {
		rule->burst = cJSON_IsTrue(it);
	} else if (it) {
		w = rule->burst;
		if ((rc = get_word(r, obj, path, "burst", burst_words, &w)))
			return rc;
		rule->burst = w == 1;
	}
	if ((rc = get_word(r, obj, path, "prefer", prefer_words,
			   &rule->prefer)) ||
	    (rc = get_word(r, obj, path, "fallback", fallback_words,
			   &rule->fallback)) ||
	    (rc = get_bool(r, obj, path, "honour_target",
			   &rule->honour_target)) ||
	    (rc = get_size(r, obj, path, "keep_with_data_over",
			   &rule->keep_with_data_over)) ||
	    (rc = get_percent(r, obj, path, "max_staging_slack", 10000,
			      &rule->staging_slack_bp)) ||
	    (rc = get_percent(r, obj, path, "pilot", 10000, &rule->pilot_bp)))
		return rc;

	it = member(obj, "max_premium");
	if (it) {
		char t[64];
		const char *s = scalar(it, t, sizeof(t));

		if (s && strchr(s, '%')) {
			rule->premium_abs = HB_UNSET;
			rc = get_percent(r, obj, path, "max_premium", 10000000,
					 &rule->premium_bp);
		} else {
			rule->premium_bp = HB_UNSET;
			rc = get_money(r, obj, path, "max_premium",
				       &rule->premium_abs);
		}
		if (rc)
			return rc;
	} else if (cJSON_GetObjectItemCaseSensitive(obj, "max_premium")) {
		/* max_premium: null lifts an inherited limit */
		rule->premium_abs = rule->premium_bp = HB_UNSET;
	}

	b = cJSON_GetObjectItemCaseSensitive(obj, "budget");
	if (b && cJSON_IsNull(b)) { /* lifts an inherited budget */
		rule->budget = HB_UNSET;
	} else if (b) {
		const cJSON *sides;

		join(pb, path, "budget");
		if ((rc = mapping(r, b, pb, budget_keys)))
			return rc;
		if (!member(b, "amount"))
			return fail(r, b, pb, "amount is required");
		rule->budget_period = HB_PERIOD_MONTH;
		rule->budget_sides = 1u << HB_SIDE_SLURM | 1u << HB_SIDE_KUBE;
		if ((rc = get_money(r, b, pb, "amount", &rule->budget)))
			return rc;
		if ((rc = get_word(r, b, pb, "period", period_names,
				   &rule->budget_period)))
			return rc;
		sides = member(b, "sides");
		if (sides) {
			const cJSON *e;
			char pe[PATH_MAX_ + 16];
			uint32_t i = 0;

			join(p, pb, "sides");
			if (!cJSON_IsArray(sides) || !cJSON_GetArraySize(sides))
				return fail(r, sides, p,
					    "expected a list of sides "
					    "(slurm, kubernetes)");
			rule->budget_sides = 0;
			cJSON_ArrayForEach (e, sides) {
				uint8_t s;

				snprintf(pe, sizeof(pe), "%s[%u]", p, i++);
				if (!cJSON_IsString(e))
					return fail(r, e, pe,
						    "expected slurm or "
						    "kubernetes, not %s",
						    type_name(e));
				for (s = 0; side_words[s]; s++)
					if (!strcmp(e->valuestring,
						    side_words[s]))
						break;
				if (!side_words[s])
					return fail(r, e, pe,
						    "'%.40s' is not slurm or "
						    "kubernetes",
						    e->valuestring);
				rule->budget_sides |= (uint8_t)(1u << s);
			}
		}
	}
	return 0;
}

static const char *const top_keys[] = {
	"version", "currency",	      "defaults", "slurm", "kubernetes",
	"data",	   "gpu_equivalence", "rules",	  NULL
};
static const char *const defaults_keys[] = {
	"time_limit",	 "mem_per_cpu",
	"rdma_features", "multinode_mpi_needs_rdma",
	RULE_KEYS,	 NULL
};
static const char *const slurm_keys[] = { "default_partition", "default_wait",
					  "rates", "partitions", NULL };
static const char *const part_keys[] = { "max_nodes",
					 "node",
					 "gpu_types",
					 "mig",
					 "shards",
					 "rdma",
					 "rates",
					 "default_deadline",
					 "default_time_limit",
					 NULL };
static const char *const kube_keys[] = {
	"namespace", "default_queue", "queues", "max_nodes", "node",
	"gpu_types", "mig",	      "shards", "rdma",	     "rates",
	"startup",   "default_wait",  NULL
};
static const char *const queue_keys[] = { "accounts", "partitions", NULL };
static const char *const data_keys[] = {
	"prefix", "side", "size", "egress_per_gb", "bandwidth", "movable", NULL
};
static const char *const rule_keys[] = { "name", "account", "partition",
					 RULE_KEYS, NULL };

static const char *currency_symbol(const char *code)
{
	static const struct {
		const char *code, *sym;
	} syms[] = { { "USD", "$" },
		     { "EUR", "\xe2\x82\xac" },
		     { "GBP", "\xc2\xa3" },
		     { "JPY", "\xc2\xa5" } };

	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!strcmp(code, syms[i].code))
			return syms[i].sym;
	return NULL;
}

static int read_slurm(struct rd *r, const cJSON *sl, struct hb_policy *pol)
{
	const cJSON *parts, *e;
	char pp[PATH_MAX_];
	int rc, n;

	if ((rc = mapping(r, sl, "slurm", slurm_keys)) ||
	    (rc = get_duration(r, sl, "slurm", "default_wait",
			       &pol->slurm_default_wait)) ||
	    (rc = get_rates(r, sl, "slurm", &pol->slurm_rates)))
		return rc;
	parts = member(sl, "partitions");
	if (parts) {
		if ((rc = mapping(r, parts, "slurm.partitions", NULL)))
			return rc;
		n = cJSON_GetArraySize(parts);
		if (n > HB_POLICY_MAX_ITEMS)
			return fail(r, parts, "slurm.partitions",
				    "more than %d partitions",
				    HB_POLICY_MAX_ITEMS);
		pol->partitions =
			hb_arena_alloc(&pol->arena, sizeof(*pol->partitions) *
							    (size_t)(n + 1));
		if (!pol->partitions)
			return HB_ENOMEM;
	}
	cJSON_ArrayForEach (e, parts) {
		struct hb_partition *pt = &pol->partitions[pol->npartitions];

		join(pp, "slurm.partitions", e->string);
		if (!name_ok(e->string))
			return fail(r, e, pp, "not a partition name");
		pt->name = hb_arena_strdup(&pol->arena, e->string);
		if (!pt->name)
			return HB_ENOMEM;
		pt->line = (uint32_t)hb_doc_line(e);
		pt->rates = pol->slurm_rates;
		if (cJSON_IsNull(e)) { /* a partition with nothing to say */
			pol->npartitions++;
			continue;
		}
		if ((rc = mapping(r, e, pp, part_keys)) ||
		    (rc = get_cap(r, e, pp, &pt->cap)) ||
		    (rc = get_rates(r, e, pp, &pt->rates)) ||
		    (rc = get_duration(r, e, pp, "default_deadline",
				       &pt->default_deadline)) ||
		    (rc = get_duration(r, e, pp, "default_time_limit",
				       &pt->default_time_limit)))
			return rc;
		pol->npartitions++;
	}
	e = member(sl, "default_partition");
	if (e) {
		if ((rc = get_name(r, e, "slurm.default_partition",
				   &pol->default_partition)))
			return rc;
		if (pol->npartitions &&
		    !hb_policy_partition(pol, pol->default_partition))
			return fail(r, e, "slurm.default_partition",
				    "'%s' is not in slurm.partitions",
				    pol->default_partition);
	} else if (pol->npartitions) {
		pol->default_partition = pol->partitions[0].name;
	}
	return 0;
}

static int read_kube(struct rd *r, const cJSON *k, struct hb_policy *pol)
{
	const cJSON *qs, *e;
	char pq[PATH_MAX_];
	int rc, n;

	pol->kube_enabled = true;
	pol->namespace = "default";
	if (cJSON_IsNull(k))
		goto queues;
	if ((rc = mapping(r, k, "kubernetes", kube_keys)) ||
	    (rc = get_cap(r, k, "kubernetes", &pol->kube_cap)) ||
	    (rc = get_rates(r, k, "kubernetes", &pol->kube_rates)) ||
	    (rc = get_duration(r, k, "kubernetes", "startup",
			       &pol->kube_startup)) ||
	    (rc = get_duration(r, k, "kubernetes", "default_wait",
			       &pol->kube_default_wait)))
		return rc;
	e = member(k, "namespace");
	if (e && (rc = get_name(r, e, "kubernetes.namespace", &pol->namespace)))
		return rc;
	qs = member(k, "queues");
	if (qs) {
		if ((rc = mapping(r, qs, "kubernetes.queues", NULL)))
			return rc;
		n = cJSON_GetArraySize(qs);
		if (n > HB_POLICY_MAX_ITEMS)
			return fail(r, qs, "kubernetes.queues",
				    "more than %d queues", HB_POLICY_MAX_ITEMS);
		pol->queues = hb_arena_alloc(
			&pol->arena, sizeof(*pol->queues) * (size_t)(n + 1));
		if (!pol->queues)
			return HB_ENOMEM;
	}
	cJSON_ArrayForEach (e, qs) {
		struct hb_kqueue *q = &pol->queues[pol->nqueues];

		join(pq, "kubernetes.queues", e->string);
		if (!name_ok(e->string))
			return fail(r, e, pq, "not a queue name");
		q->name = hb_arena_strdup(&pol->arena, e->string);
		if (!q->name)
			return HB_ENOMEM;
		q->line = (uint32_t)hb_doc_line(e);
		if (!cJSON_IsNull(e) &&
		    ((rc = mapping(r, e, pq, queue_keys)) ||
		     (rc = get_names(r, e, pq, "accounts", false, &q->accounts,
				     &q->naccounts)) ||
		     (rc = get_names(r, e, pq, "partitions", false,
				     &q->partitions, &q->npartitions))))
			return rc;
		pol->nqueues++;
	}
	e = member(k, "default_queue");
	if (e) {
		if ((rc = get_name(r, e, "kubernetes.default_queue",
				   &pol->default_queue)))
			return rc;
		for (n = 0; n < (int)pol->nqueues; n++)
			if (!strcmp(pol->queues[n].name, pol->default_queue))
				break;
		if (n == (int)pol->nqueues)
			return fail(r, e, "kubernetes.default_queue",
				    "'%s' is not in kubernetes.queues",
				    pol->default_queue);
	}
queues:
	if (!pol->nqueues) {
		pol->queues = hb_arena_alloc(&pol->arena, sizeof(*pol->queues));
		if (!pol->queues)
			return HB_ENOMEM;
		pol->queues[0].name = pol->namespace;
		pol->nqueues = 1;
	}
	return 0;
}

static int read_data(struct rd *r, const cJSON *d, struct hb_policy *pol)
{
	const cJSON *e;
	char pe[PATH_MAX_];
	int rc, n;

	if (!cJSON_IsArray(d))
		return fail(r, d, "data",
			    "expected a list of locations, not %s",
			    type_name(d));
	n = cJSON_GetArraySize(d);
	if (n > HB_POLICY_MAX_ITEMS)
		return fail(r, d, "data", "more than %d locations",
			    HB_POLICY_MAX_ITEMS);
	pol->data = hb_arena_alloc(&pol->arena,
				   sizeof(*pol->data) * (size_t)(n + 1));
	if (!pol->data)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, d) {
		struct hb_data_loc *l = &pol->data[pol->ndata];
		char pk[PATH_MAX_];
		const cJSON *pre, *sz;
		char *pfx;
		size_t len;
		uint8_t side = 0;

		snprintf(pe, sizeof(pe), "data[%u]", pol->ndata);
		if ((rc = mapping(r, e, pe, data_keys)))
			return rc;
		pre = member(e, "prefix");
		if (!pre)
			return fail(r, e, pe, "prefix is required");
		if (!cJSON_IsString(pre) ||
		    (pre->valuestring[0] != '/' &&
		     !strstr(pre->valuestring, "://")) ||
		    strlen(pre->valuestring) > 1024)
			return fail(r, pre, join(pk, pe, "prefix"),
				    "expected an absolute path or a URL "
				    "prefix like s3://bucket/dir");
		for (const char *c = pre->valuestring; *c; c++)
			if ((unsigned char)*c < ' ' || *c == 0x7f)
				return fail(r, pre, join(pk, pe, "prefix"),
					    "control character in prefix");
		pfx = hb_arena_strdup(&pol->arena, pre->valuestring);
		if (!pfx)
			return HB_ENOMEM;
		len = strlen(pfx);
		while (len > 1 && pfx[len - 1] == '/')
			pfx[--len] = '\0';
		l->prefix = pfx;
		l->prefix_len = (uint32_t)len;
		l->line = (uint32_t)hb_doc_line(e);
		l->movable = true;
		if (!member(e, "side"))
			return fail(r, e, pe,
				    "side is required (slurm or "
				    "kubernetes)");
		if ((rc = get_word(r, e, pe, "side", side_words, &side)) ||
		    (rc = get_bool(r, e, pe, "movable", &l->movable)) ||
		    (rc = get_money(r, e, pe, "egress_per_gb",
				    &l->egress_per_gb)))
			return rc;
		l->side = side;
		sz = member(e, "size");
		if (sz) {
			if ((rc = get_size(r, e, pe, "size", &l->size)))
				return rc;
			l->size_known = true;
		}
		if (member(e, "bandwidth")) {
			const cJSON *bw = member(e, "bandwidth");
			char b[64], p2[PATH_MAX_];
			const char *t = scalar(bw, b, sizeof(b));

			if (!t || (rc = hb_parse_bandwidth(t, &l->bandwidth)))
				return fail(r, bw, join(p2, pe, "bandwidth"),
					    "expected a bandwidth like "
					    "10Gb/s or 1.25GB/s");
		} else if (l->movable) {
			return fail(r, e, pe,
				    "bandwidth is required to stage it "
				    "(or movable: false)");
		}
		for (uint32_t i = 0; i < pol->ndata; i++)
			if (!strcmp(pol->data[i].prefix, l->prefix))
				return fail(r, e, pe,
					    "prefix %s is also data[%u]",
					    l->prefix, i);
		pol->ndata++;
	}
	return 0;
}

static int read_equiv(struct rd *r, const cJSON *g, struct hb_policy *pol)
{
	const cJSON *e;
	char pe[PATH_MAX_];
	int rc, n;

	if ((rc = mapping(r, g, "gpu_equivalence", NULL)))
		return rc;
	n = cJSON_GetArraySize(g);
	if (n > HB_POLICY_MAX_ITEMS)
		return fail(r, g, "gpu_equivalence", "more than %d entries",
			    HB_POLICY_MAX_ITEMS);
	pol->equiv = hb_arena_alloc(&pol->arena,
				    sizeof(*pol->equiv) * (size_t)(n + 1));
	if (!pol->equiv)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, g) {
		struct hb_gpu_equiv *q = &pol->equiv[pol->nequiv];

		join(pe, "gpu_equivalence", e->string);
		if ((rc = gpu_name(r, e, pe, e->string, &q->type)) ||
		    (rc = get_names(r, g, "gpu_equivalence", e->string, true,
				    &q->runs_on, &q->n)))
			return rc;
		for (uint32_t i = 0; i < pol->nequiv; i++)
			if (!strcmp(pol->equiv[i].type, q->type))
				return fail(r, e, pe, "'%s' is given twice",
					    q->type);
		pol->nequiv++;
	}
	return 0;
}

static void rule_defaults(struct hb_rule *d)
{
	memset(d, 0, sizeof(*d));
	d->name = "defaults";
	d->burst = true;
	d->honour_target = true;
	d->prefer = HB_PREFER_SLURM;
	d->fallback = HB_FALLBACK_EARLIEST;
	d->budget = HB_UNSET;
	d->budget_period = HB_PERIOD_MONTH;
	d->budget_sides = 1u << HB_SIDE_SLURM | 1u << HB_SIDE_KUBE;
	d->premium_bp = HB_UNSET;
	d->premium_abs = HB_UNSET;
	d->staging_slack_bp = HB_UNSET;
}

static int read_rules(struct rd *r, const cJSON *rules, struct hb_policy *pol)
{
	const cJSON *e, *it;
	char pe[PATH_MAX_], pn[PATH_MAX_];
	int rc, n;

	if (!cJSON_IsArray(rules))
		return fail(r, rules, "rules",
			    "expected a list of rules, not %s",
			    type_name(rules));
	n = cJSON_GetArraySize(rules);
	if (n > HB_POLICY_MAX_ITEMS)
		return fail(r, rules, "rules", "more than %d rules",
			    HB_POLICY_MAX_ITEMS);
	pol->rules = hb_arena_alloc(&pol->arena,
				    sizeof(*pol->rules) * (size_t)(n + 1));
	if (!pol->rules)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, rules) {
		struct hb_rule *ru = &pol->rules[pol->nrules];

		snprintf(pe, sizeof(pe), "rules[%u]", pol->nrules);
		if ((rc = mapping(r, e, pe, rule_keys)))
			return rc;
		*ru = pol->defaults;
		ru->line = (uint32_t)hb_doc_line(e);
		ru->index = pol->nrules + 1;
		it = member(e, "name");
		if (it) {
			if ((rc = get_name(r, it, join(pn, pe, "name"),
					   &ru->name)))
				return rc;
		} else {
			ru->name = hb_arena_strdup(&pol->arena, pe);
			if (!ru->name)
				return HB_ENOMEM;
		}
		it = member(e, "account");
		if (it && (rc = get_name(r, it, join(pn, pe, "account"),
					 &ru->account)))
			return rc;
		it = member(e, "partition");
		if (it && (rc = get_name(r, it, join(pn, pe, "partition"),
					 &ru->partition)))
			return rc;
		if (ru->account && !strcmp(ru->account, "*"))
			ru->account = NULL;
		if (ru->partition && !strcmp(ru->partition, "*"))
			ru->partition = NULL;
		if ((rc = get_rule_settings(r, e, pe, ru)))
			return rc;
		pol->nrules++;
	}
	return 0;
}

static int read_policy(struct rd *r, const cJSON *doc, struct hb_policy *pol)
{
	const cJSON *it;
	uint64_t version = 1;
	int rc;

	if (cJSON_IsNull(doc))
		return fail(r, doc, "", "the policy is empty");
	if ((rc = mapping(r, doc, "", top_keys)) ||
	    (rc = get_uint(r, doc, "", "version", 1000, &version)))
		return rc;
	if (version != 1)
		return fail(r, member(doc, "version"), "version",
			    "only version 1 is known");
	pol->currency = "USD";
	it = member(doc, "currency");
	if (it && (rc = get_name(r, it, "currency", &pol->currency)))
		return rc;
	if (strlen(pol->currency) > 8)
		return fail(r, it, "currency", "expected a code like USD");
	pol->currency_symbol = currency_symbol(pol->currency);
	if (!pol->currency_symbol)
		pol->currency_symbol =
			hb_arena_printf(&pol->arena, "%s ", pol->currency);
	if (!pol->currency_symbol)
		return HB_ENOMEM;

	pol->default_time_limit = 3600;
	pol->default_mem_per_cpu_mb = 1024;
	pol->slurm_default_wait = 3600;
	pol->kube_default_wait = 3600;
	pol->kube_startup = 120;
	rule_defaults(&pol->defaults);
	it = member(doc, "defaults");
	if (it) {
		if ((rc = mapping(r, it, "defaults", defaults_keys)) ||
		    (rc = get_duration(r, it, "defaults", "time_limit",
				       &pol->default_time_limit)) ||
		    (rc = get_mem_mb(r, it, "defaults", "mem_per_cpu",
				     &pol->default_mem_per_cpu_mb)) ||
		    (rc = get_names(r, it, "defaults", "rdma_features", false,
				    &pol->rdma_features,
				    &pol->nrdma_features)) ||
		    (rc = get_bool(r, it, "defaults",
				   "multinode_mpi_needs_rdma",
				   &pol->multinode_mpi_needs_rdma)) ||
		    (rc = get_rule_settings(r, it, "defaults", &pol->defaults)))
			return rc;
		if (!pol->default_time_limit)
			return fail(r, member(it, "time_limit"),
				    "defaults.time_limit",
				    "must be more than 0");
	}
	it = member(doc, "slurm");
	if (it && (rc = read_slurm(r, it, pol)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(doc, "kubernetes");
	if (it && (rc = read_kube(r, it, pol)))
		return rc;
	it = member(doc, "data");
	if (it && (rc = read_data(r, it, pol)))
		return rc;
	it = member(doc, "gpu_equivalence");
	if (it && (rc = read_equiv(r, it, pol)))
		return rc;
	it = member(doc, "rules");
	if (it && (rc = read_rules(r, it, pol)))
		return rc;
	return 0;
}

int hb_policy_parse(const char *buf, size_t len, const char *name,
		    struct hb_policy *pol, struct hb_err *err)
{
	struct rd r = { .file = name, .err = err, .a = &pol->arena };
	cJSON *doc = NULL;
	int rc;

	memset(pol, 0, sizeof(*pol));
	hb_arena_init(&pol->arena, 16u * 1024 * 1024);
	rc = hb_doc_parse(buf, len, name, &doc, err);
	if (rc)
		goto out;
	pol->source_name = hb_arena_strdup(&pol->arena, name ? name : "-");
	if (!pol->source_name) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = read_policy(&r, doc, pol);
out:
	cJSON_Delete(doc);
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, name, 0, "out of memory");
		hb_policy_free(pol);
	}
	return rc;
}

void hb_policy_free(struct hb_policy *pol)
{
	if (!pol)
		return;
	hb_arena_free(&pol->arena);
	memset(pol, 0, sizeof(*pol));
}

/* ---- lookups ---------------------------------------------------------- */

const struct hb_partition *hb_policy_partition(const struct hb_policy *pol,
					       const char *name)
{
	if (!name)
		return NULL;
	for (uint32_t i = 0; i < pol->npartitions; i++)
		if (!strcmp(pol->partitions[i].name, name))
			return &pol->partitions[i];
	return NULL;
}

static bool listed(const char *const *v, uint32_t n, const char *s)
{
	if (!n)
		return true; /* no list: any */
	if (!s)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

const struct hb_kqueue *hb_policy_queue(const struct hb_policy *pol,
					const char *account,
					const char *partition)
{
	const struct hb_kqueue *def = NULL;

	if (!pol->kube_enabled || !pol->nqueues)
		return NULL;
	for (uint32_t i = 0; i < pol->nqueues; i++) {
		const struct hb_kqueue *q = &pol->queues[i];

		if (listed(q->accounts, q->naccounts, account) &&
		    listed(q->partitions, q->npartitions, partition))
			return q;
		if (pol->default_queue && !strcmp(q->name, pol->default_queue))
			def = q;
	}
	return def ? def : &pol->queues[0];
}

const struct hb_rule *hb_policy_rule(const struct hb_policy *pol,
				     const char *account, const char *partition)
{
	for (uint32_t i = 0; i < pol->nrules; i++) {
		const struct hb_rule *ru = &pol->rules[i];

		if (ru->account && (!account || strcmp(ru->account, account)))
			continue;
		if (ru->partition &&
		    (!partition || strcmp(ru->partition, partition)))
			continue;
		return ru;
	}
	return &pol->defaults;
}

const struct hb_data_loc *hb_policy_data(const struct hb_policy *pol,
					 const char *path)
{
	const struct hb_data_loc *best = NULL;

	for (uint32_t i = 0; i < pol->ndata; i++) {
		const struct hb_data_loc *l = &pol->data[i];
		char next;

		if (strncmp(path, l->prefix, l->prefix_len))
			continue;
		next = path[l->prefix_len];
		/* "/" as a prefix, or a whole path component */
		if (next && next != '/' && l->prefix[l->prefix_len - 1] != '/')
			continue;
		if (!best || l->prefix_len > best->prefix_len)
			best = l;
	}
	return best;
}

/* The MIG profile inside t ("nvidia_a100_1g.10gb" -> "1g.10gb"), or
 * NULL. */
static const char *mig_profile(const char *t)
{
	for (const char *p = t; *p; p++) {
		const char *q = p;

		if (!is_digit(*q) || (p > t && is_digit(p[-1])))
			continue;
		while (is_digit(*q))
			q++;
		if ((*q != 'g' && *q != 'G') || q[1] != '.' || !is_digit(q[2]))
			continue;
		q += 2;
		while (is_digit(*q))
			q++;
		if ((q[0] == 'g' || q[0] == 'G') &&
		    (q[1] == 'b' || q[1] == 'B') && !q[2])
			return p;
	}
	return NULL;
}

bool hb_gpu_is_mig(const char *t)
{
	return t && mig_profile(t);
}

bool hb_policy_gpu_ok(const struct hb_policy *pol, const char *want,
		      const char *have)
{
	const char *mw, *mh;

	if (!want || !strcmp(have, HB_GPU_ANY))
		return true;
	if (!strcasecmp(want, have))
		return true;
	mw = mig_profile(want);
	mh = mig_profile(have);
	if (mw || mh)
		return mw && mh && !strcasecmp(mw, mh);
	for (uint32_t i = 0; i < pol->nequiv; i++) {
		const struct hb_gpu_equiv *q = &pol->equiv[i];

		if (strcasecmp(q->type, want))
			continue;
		for (uint32_t j = 0; j < q->n; j++)
			if (!strcasecmp(q->runs_on[j], have))
				return true;
		return false;
	}
	return false;
}

/* ---- the snapshot ----------------------------------------------------- */

static const char *const snap_keys[] = { "now",	       "utc_offset", "slurm",
					 "kubernetes", "data",	     "spend",
					 NULL };
static const char *const snap_slurm_keys[] = { "partitions", NULL };
static const char *const snap_part_keys[] = { "expected_start", "pending",
					      "idle_nodes", NULL };
static const char *const snap_kube_keys[] = { "queues", NULL };
static const char *const snap_queue_keys[] = { "expected_wait", "pending",
					       "free", NULL };
static const char *const snap_free_keys[] = { "cpus", "memory", "gpus", NULL };
static const char *const snap_side_keys[] = { "slurm", "kubernetes", NULL };

/* An instant: a string like 2026-11-21T08:00:00Z or Unix seconds. */
static int get_instant(struct rd *r, const cJSON *it, const char *path,
		       int64_t *out)
{
	char b[64];
	const char *t = scalar(it, b, sizeof(b));
	uint64_t v;

	int64_t x;

	if (t && cJSON_IsNumber(it) &&
	    !hb_parse_u64(t, (uint64_t)HB_INSTANT_MAX, &v)) {
		*out = (int64_t)v;
		return 0;
	}
	if (t && cJSON_IsString(it) && !hb_parse_instant(t, &x) && x >= 0 &&
	    x <= HB_INSTANT_MAX) {
		*out = x;
		return 0;
	}
	return fail(r, it, path,
		    "expected an instant like 2026-11-21T08:00:00Z or Unix "
		    "seconds, from 1970 to 9999");
}

static int snap_entries(struct rd *r, const cJSON *obj, const char *path)
{
	int rc = mapping(r, obj, path, NULL);

	if (!rc && cJSON_GetArraySize(obj) > HB_POLICY_MAX_ITEMS)
		return fail(r, obj, path, "more than %d entries",
			    HB_POLICY_MAX_ITEMS);
	return rc;
}

static int snap_enomem(struct rd *r, int rc, const cJSON *at, const char *path)
{
	if (rc == HB_ETOOBIG)
		return fail(r, at, path, "too many entries");
	if (rc)
		hb_err_set(r->err, rc, r->file, 0, "%s", hb_strerror(rc));
	return rc;
}

static int read_snap_slurm(struct rd *r, const cJSON *sl, struct hb_snapshot *s)
{
	const cJSON *parts, *e;
	char pp[PATH_MAX_], pk[PATH_MAX_];
	int rc;

	if ((rc = mapping(r, sl, "slurm", snap_slurm_keys)))
		return rc;
	parts = member(sl, "partitions");
	if (!parts)
		return 0;
	if ((rc = snap_entries(r, parts, "slurm.partitions")))
		return rc;
	cJSON_ArrayForEach (e, parts) {
		struct hb_snap_partition *sp;
		const cJSON *es;
		uint32_t pending = 0, idle = 0;
		int64_t wait = 0;

		join(pp, "slurm.partitions", e->string);
		if (!name_ok(e->string))
			return fail(r, e, pp, "not a partition name");
		if ((rc = mapping(r, e, pp, snap_part_keys)) ||
		    (rc = get_u32(r, e, pp, "pending", UINT32_MAX, &pending)) ||
		    (rc = get_u32(r, e, pp, "idle_nodes", UINT32_MAX, &idle)))
			return rc;
		es = member(e, "expected_start");
		if (es && cJSON_IsString(es) && strlen(es->valuestring) > 4 &&
		    es->valuestring[4] == '-') {
			int64_t t;

			if ((rc = get_instant(r, es,
					      join(pk, pp, "expected_start"),
					      &t)))
				return rc;
			wait = t > s->now ? t - s->now : 0;
			if (wait > HB_DURATION_MAX)
				return fail(r, es, pk,
					    "more than 100 years from now");
		} else if (es && (rc = get_duration(r, e, pp, "expected_start",
						    &wait))) {
			return rc;
		}
		rc = hb_snapshot_set_partition(s, e->string, wait, pending,
					       idle);
		if (rc)
			return snap_enomem(r, rc, e, pp);
		sp = (struct hb_snap_partition *)hb_snapshot_partition(
			s, e->string);
		sp->wait_known = es != NULL;
		sp->idle_known = member(e, "idle_nodes") != NULL;
	}
	return 0;
}

static int read_snap_kube(struct rd *r, const cJSON *k, struct hb_snapshot *s)
{
	const cJSON *qs, *e, *f, *g, *ge;
	char pq[PATH_MAX_], pf[PATH_MAX_], pg[PATH_MAX_], pe[PATH_MAX_];
	int rc;

	if ((rc = mapping(r, k, "kubernetes", snap_kube_keys)))
		return rc;
	qs = member(k, "queues");
	if (!qs)
		return 0;
	if ((rc = snap_entries(r, qs, "kubernetes.queues")))
		return rc;
	cJSON_ArrayForEach (e, qs) {
		struct hb_snap_queue *sq;
		uint32_t pending = 0;
		uint64_t cpus = 0, mem = 0;
		int64_t wait = 0;

		join(pq, "kubernetes.queues", e->string);
		if (!name_ok(e->string))
			return fail(r, e, pq, "not a queue name");
		if ((rc = mapping(r, e, pq, snap_queue_keys)) ||
		    (rc = get_u32(r, e, pq, "pending", UINT32_MAX, &pending)) ||
		    (rc = get_duration(r, e, pq, "expected_wait", &wait)))
			return rc;
		f = member(e, "free");
		join(pf, pq, "free");
		if (f &&
		    ((rc = mapping(r, f, pf, snap_free_keys)) ||
		     (rc = get_uint(r, f, pf, "cpus", 1ULL << 40, &cpus)) ||
		     (rc = get_mem_mb(r, f, pf, "memory", &mem))))
			return rc;
		rc = hb_snapshot_set_queue(s, e->string, wait, pending, cpus,
					   mem);
		if (rc)
			return snap_enomem(r, rc, e, pq);
		sq = (struct hb_snap_queue *)hb_snapshot_queue(s, e->string);
		sq->wait_known = member(e, "expected_wait") != NULL;
		sq->free_known =
			f && (member(f, "cpus") || member(f, "memory"));
		g = f ? member(f, "gpus") : NULL;
		if (!g)
			continue;
		join(pg, pf, "gpus");
		if ((rc = snap_entries(r, g, pg)))
			return rc;
		cJSON_ArrayForEach (ge, g) {
			const char *type;
			uint32_t n = 0;

			join(pe, pg, ge->string);
			if ((rc = gpu_name(r, ge, pe, ge->string, &type)) ||
			    (rc = get_u32(r, g, pg, ge->string, 1000000, &n)))
				return rc;
			rc = hb_snapshot_set_queue_gpus(s, e->string, type, n);
			if (rc)
				return snap_enomem(r, rc, ge, pe);
		}
	}
	return 0;
}

static int read_snap_spend(struct rd *r, const cJSON *sp, struct hb_snapshot *s)
{
	const cJSON *a, *p;
	char pa[PATH_MAX_], pp[PATH_MAX_];
	int rc;

	if ((rc = snap_entries(r, sp, "spend")))
		return rc;
	cJSON_ArrayForEach (a, sp) {
		join(pa, "spend", a->string);
		if (!name_ok(a->string))
			return fail(r, a, pa, "not an account name");
		if ((rc = mapping(r, a, pa, period_names)))
			return rc;
		cJSON_ArrayForEach (p, a) {
			int period;

			for (period = 0; period < HB__PERIOD_COUNT; period++)
				if (!strcmp(p->string, period_names[period]))
					break;
			join(pp, pa, p->string);
			if ((rc = mapping(r, p, pp, snap_side_keys)))
				return rc;
			for (int side = 0; side < HB__SIDE_COUNT; side++) {
				hb_money m = 0;

				if ((rc = get_money(r, p, pp,
						    hb_side_name(side), &m)))
					return rc;
				rc = hb_snapshot_set_spend(s, a->string, period,
							   side, m);
				if (rc)
					return snap_enomem(r, rc, p, pp);
			}
		}
	}
	return 0;
}

static int read_snapshot(struct rd *r, const cJSON *doc, struct hb_snapshot *s)
{
	const cJSON *it, *e;
	char pe[PATH_MAX_];
	int rc;

	if (cJSON_IsNull(doc))
		return fail(r, doc, "", "the snapshot is empty");
	if ((rc = mapping(r, doc, "", snap_keys)))
		return rc;
	it = member(doc, "now");
	if (!it)
		return fail(r, doc, "now",
			    "is required: every estimate is "
			    "counted from it");
	if ((rc = get_instant(r, it, "now", &s->now)))
		return rc;
	it = member(doc, "utc_offset");
	if (it && (!cJSON_IsString(it) ||
		   hb_parse_utc_offset(it->valuestring, &s->utc_offset)))
		return fail(r, it, "utc_offset",
			    "expected an offset like +01:00 or Z");
	it = member(doc, "slurm");
	if (it && (rc = read_snap_slurm(r, it, s)))
		return rc;
	it = member(doc, "kubernetes");
	if (it && (rc = read_snap_kube(r, it, s)))
		return rc;
	it = member(doc, "data");
	if (it && (rc = snap_entries(r, it, "data")))
		return rc;
	cJSON_ArrayForEach (e, it) {
		uint64_t size = 0;

		join(pe, "data", e->string);
		if (!*e->string || strlen(e->string) > 1024)
			return fail(r, e, pe, "not a data prefix");
		if ((rc = get_size(r, it, "data", e->string, &size)))
			return rc;
		rc = hb_snapshot_set_data(s, e->string, size);
		if (rc)
			return snap_enomem(r, rc, e, pe);
	}
	it = member(doc, "spend");
	if (it && (rc = read_snap_spend(r, it, s)))
		return rc;
	return 0;
}

int hb_snapshot_parse(const char *buf, size_t len, const char *name,
		      struct hb_snapshot *s, struct hb_err *err)
{
	struct rd r = { .file = name, .err = err, .a = &s->arena };
	cJSON *doc = NULL;
	int rc;

	hb_snapshot_init(s, 0);
	rc = hb_doc_parse(buf, len, name, &doc, err);
	if (rc)
		goto out;
	s->source_name = hb_arena_strdup(&s->arena, name ? name : "-");
	if (!s->source_name) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = read_snapshot(&r, doc, s);
out:
	cJSON_Delete(doc);
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, name, 0, "out of memory");
		hb_snapshot_free(s);
	}
	return rc;
}

/* ---- describing ------------------------------------------------------- */

#define D_MONEY(v) hb_format_money((v), (char[48]){ 0 }, 48)
#define D_RATE(v)  hb_format_rate((v), (char[48]){ 0 }, 48)
#define D_MEM(v)   mem_text((v), (char[32]){ 0 })

static const char *mem_text(uint64_t mib, char buf[32])
{
	hb_format_k8s_mem(mib, buf);
	return buf;
}
#define D_DUR(v)  hb_format_duration((v), (char[32]){ 0 }, 32)
#define D_SIZE(v) hb_format_size((v), (char[32]){ 0 }, 32)

static int describe_list(struct hb_buf *b, const char *const *v, uint32_t n)
{
	int rc = 0;

	for (uint32_t i = 0; !rc && i < n; i++)
		rc = hb_buf_printf(b, "%s%s", i ? ", " : "", v[i]);
	return rc;
}

static int describe_cap(struct hb_buf *b, const struct hb_capability *c)
{
	int rc = hb_buf_puts(b, "    runs: ");

	if (!rc && c->max_nodes)
		rc = hb_buf_printf(b, "up to %u nodes per job", c->max_nodes);
	else if (!rc)
		rc = hb_buf_puts(b, "any number of nodes");
	if (!rc && (c->node_cpus || c->node_mem_mb || c->node_gpus))
		rc = hb_buf_printf(b, "; nodes of %u CPUs, %s, %u GPUs",
				   c->node_cpus, D_MEM(c->node_mem_mb),
				   c->node_gpus);
	if (!rc && c->ngpu_types) {
		rc = hb_buf_puts(b, "; GPU types ");
		if (!rc)
			rc = describe_list(b, c->gpu_types, c->ngpu_types);
	}
	if (!rc && c->nmig) {
		rc = hb_buf_puts(b, "; MIG ");
		if (!rc)
			rc = describe_list(b, c->mig, c->nmig);
	}
	if (!rc)
		rc = hb_buf_printf(b, "; shards %s; RDMA %s\n",
				   c->shards ? "yes" : "no",
				   c->rdma ? "yes" : "no");
	return rc;
}

static int describe_rates(struct hb_buf *b, const struct hb_policy *pol,
			  const struct hb_rates *r)
{
	const char *sym = pol->currency_symbol;
	int rc =
		hb_buf_printf(b,
			      "    costs: %s%s per CPU-hour, %s%s per "
			      "GiB-hour, %s%s per GPU-hour",
			      sym, D_RATE(r->cpu_hour), sym,
			      D_RATE(r->mem_gb_hour), sym, D_RATE(r->gpu_hour));

	for (uint32_t i = 0; !rc && i < r->ngpu; i++)
		rc = hb_buf_printf(b, ", %s %s%s", r->gpu[i].type, sym,
				   D_RATE(r->gpu[i].per_hour));
	if (!rc && r->shard_hour)
		rc = hb_buf_printf(b, ", %s%s per shard-hour", sym,
				   D_RATE(r->shard_hour));
	if (!rc)
		rc = hb_buf_printf(b, ", %s%s per job\n", sym,
				   D_RATE(r->per_job));
	return rc;
}

static int describe_rule(struct hb_buf *b, const struct hb_policy *pol,
			 const struct hb_rule *ru)
{
	static const char *const prefer[] = {
		"stays on Slurm unless Slurm would miss the deadline",
		"goes to Kubernetes unless Kubernetes would miss the deadline",
		"goes to the cheaper side that meets the deadline",
		"goes to the side that finishes first"
	};
	const char *sym = pol->currency_symbol;
	int rc;

	if (ru->index)
		rc = hb_buf_printf(b, "  rule %s (line %u), for %s%s%s%s:\n",
				   ru->name, ru->line,
				   ru->account ? "account " : "any account",
				   ru->account ? ru->account : "",
				   ru->partition ? " in partition " : "",
				   ru->partition ? ru->partition : "");
	else
		rc = hb_buf_puts(b, "  defaults, for jobs no rule matches:\n");
	if (rc)
		return rc;
	if (!ru->burst)
		rc = hb_buf_puts(b, "    never bursts: every job stays on "
				    "Slurm\n");
	else
		rc = hb_buf_printf(b, "    a job %s\n", prefer[ru->prefer]);
	if (!rc)
		rc = hb_buf_printf(b,
				   "    when no side meets the deadline: %s\n",
				   ru->fallback == HB_FALLBACK_REJECT
					   ? "reject the job"
					   : "run where it finishes first");
	if (!rc && ru->budget != HB_UNSET)
		rc = hb_buf_printf(
			b,
			"    budget: %s%s per %s of %s spend; a side that "
			"would exceed it is not used\n",
			sym, D_MONEY(ru->budget),
			hb_period_name(ru->budget_period),
			ru->budget_sides == (1u << HB_SIDE_KUBE) ? "Kubernetes"
			: ru->budget_sides == (1u << HB_SIDE_SLURM) ? "Slurm"
								    : "all");
	if (!rc &&
	    (ru->premium_bp != HB_UNSET || ru->premium_abs != HB_UNSET)) {
		rc = hb_buf_puts(b, "    to meet a deadline it pays at most ");
		if (!rc && ru->premium_bp != HB_UNSET)
			rc = hb_buf_printf(b, "%d.%02d%%", ru->premium_bp / 100,
					   ru->premium_bp % 100);
		if (!rc && ru->premium_bp != HB_UNSET &&
		    ru->premium_abs != HB_UNSET)
			rc = hb_buf_puts(b, " and at most ");
		if (!rc && ru->premium_abs != HB_UNSET)
			rc = hb_buf_printf(b, "%s%s", sym,
					   D_MONEY(ru->premium_abs));
		if (!rc)
			rc = hb_buf_puts(b, " more than the preferred side\n");
	}
	if (!rc && ru->keep_with_data_over)
		rc = hb_buf_printf(b,
				   "    a job whose data to move exceeds %s "
				   "stays with its data\n",
				   D_SIZE(ru->keep_with_data_over));
	if (!rc && ru->staging_slack_bp != HB_UNSET)
		rc = hb_buf_printf(b,
				   "    staging may take at most %d.%02d%% of "
				   "the deadline's slack\n",
				   ru->staging_slack_bp / 100,
				   ru->staging_slack_bp % 100);
	if (!rc && ru->pilot_bp)
		rc = hb_buf_printf(b,
				   "    migration pilot: %d.%02d%% of eligible "
				   "jobs go to Kubernetes (by hash)\n",
				   ru->pilot_bp / 100, ru->pilot_bp % 100);
	if (!rc && !ru->honour_target)
		rc = hb_buf_puts(b, "    --hpcbridge-target is ignored\n");
	return rc;
}

int hb_policy_describe(const struct hb_policy *pol, struct hb_buf *b)
{
	int rc;

	rc = hb_buf_printf(b,
			   "policy %s: valid\n"
			   "money in %s; a job with no time limit is assumed "
			   "to run %s, with %s per CPU when it gives no "
			   "memory\n",
			   pol->source_name, pol->currency,
			   D_DUR(pol->default_time_limit),
			   D_MEM(pol->default_mem_per_cpu_mb));
	if (!rc)
		rc = hb_buf_printf(
			b,
			"slurm: %u partition%s, default %s; "
			"without an estimate a job waits %s\n",
			pol->npartitions, pol->npartitions == 1 ? "" : "s",
			pol->default_partition ? pol->default_partition
					       : "(the job's)",
			D_DUR(pol->slurm_default_wait));
	if (!rc && !pol->npartitions)
		rc = describe_rates(b, pol, &pol->slurm_rates);
	for (uint32_t i = 0; !rc && i < pol->npartitions; i++) {
		const struct hb_partition *p = &pol->partitions[i];

		rc = hb_buf_printf(b, "  partition %s (line %u)\n", p->name,
				   p->line);
		if (!rc)
			rc = describe_cap(b, &p->cap);
		if (!rc)
			rc = describe_rates(b, pol, &p->rates);
		if (!rc && p->default_deadline)
			rc = hb_buf_printf(b,
					   "    default deadline: %s after "
					   "submission\n",
					   D_DUR(p->default_deadline));
		if (!rc && p->default_time_limit)
			rc = hb_buf_printf(b, "    default run time: %s\n",
					   D_DUR(p->default_time_limit));
	}
	if (!rc && !pol->kube_enabled)
		rc = hb_buf_puts(b, "kubernetes: not configured; no job "
				    "bursts\n");
	else if (!rc) {
		rc = hb_buf_printf(b,
				   "kubernetes: namespace %s, start-up %s; "
				   "without an estimate a job waits %s\n",
				   pol->namespace, D_DUR(pol->kube_startup),
				   D_DUR(pol->kube_default_wait));
		for (uint32_t i = 0; !rc && i < pol->nqueues; i++) {
			const struct hb_kqueue *q = &pol->queues[i];

			rc = hb_buf_printf(b, "  queue %s: ", q->name);
			if (!rc && !q->naccounts && !q->npartitions)
				rc = hb_buf_puts(b, "any job");
			if (!rc && q->naccounts) {
				rc = hb_buf_puts(b, "accounts ");
				if (!rc)
					rc = describe_list(b, q->accounts,
							   q->naccounts);
			}
			if (!rc && q->npartitions) {
				rc = hb_buf_puts(b, q->naccounts
							    ? "; partitions "
							    : "partitions ");
				if (!rc)
					rc = describe_list(b, q->partitions,
							   q->npartitions);
			}
			if (!rc)
				rc = hb_buf_puts(b, "\n");
		}
		if (!rc)
			rc = describe_cap(b, &pol->kube_cap);
		if (!rc)
			rc = describe_rates(b, pol, &pol->kube_rates);
	}
	for (uint32_t i = 0; !rc && i < pol->ndata; i++) {
		const struct hb_data_loc *l = &pol->data[i];

		rc = hb_buf_printf(b, "data %s lives on %s", l->prefix,
				   hb_side_name(l->side));
		if (!rc && l->size_known)
			rc = hb_buf_printf(b, ", %s", D_SIZE(l->size));
		if (!rc && !l->movable)
			rc = hb_buf_puts(b, "; it never moves");
		else if (!rc)
			rc = hb_buf_printf(
				b, "; moving it costs %s%s per GB at %s",
				pol->currency_symbol, D_RATE(l->egress_per_gb),
				hb_format_bandwidth(l->bandwidth,
						    (char[32]){ 0 }, 32));
		if (!rc)
			rc = hb_buf_puts(b, "\n");
	}
	for (uint32_t i = 0; !rc && i < pol->nequiv; i++) {
		rc = hb_buf_printf(b, "gpu: a request for %s may also run on ",
				   pol->equiv[i].type);
		if (!rc)
			rc = describe_list(b, pol->equiv[i].runs_on,
					   pol->equiv[i].n);
		if (!rc)
			rc = hb_buf_puts(b, "\n");
	}
	if (!rc)
		rc = hb_buf_printf(b, "rules, first match wins (%u):\n",
				   pol->nrules);
	for (uint32_t i = 0; !rc && i < pol->nrules; i++)
		rc = describe_rule(b, pol, &pol->rules[i]);
	if (!rc)
		rc = describe_rule(b, pol, &pol->defaults);
	return rc;
}
