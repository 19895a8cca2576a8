/*
 * units.c - strict parsers for the numbers, times and sizes jobs are
 * written in, and the formatters that write them back.
 *
 * The Slurm forms follow Slurm 22.05 itself: hb_parse_slurm_time() accepts
 * exactly what time_str2mins() (src/common/parse_time.c) accepts, and
 * hb_parse_slurm_size() exactly what str_to_mbytes()
 * (src/common/proc_args.c) accepts, with overflow reported instead of
 * wrapping.
 */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/error.h"
#include "hpcbridge/units.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Case-insensitive comparison of two NUL-terminated strings. */
static bool eq_nocase(const char *a, const char *b)
{
	while (*a && *b) {
		if (hb_ascii_lower(*a) != hb_ascii_lower(*b))
			return false;
		a++;
		b++;
	}
	return *a == *b;
}

/*
 * Read a run of decimal digits at *p into *out, advancing *p.  Returns 0,
 * HB_EINVAL when there is no digit, HB_ERANGE when the value exceeds max.
 */
static int digits(const char **p, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	bool range = false;

	if (!is_digit(*s))
		return HB_EINVAL;
	while (is_digit(*s)) {
		unsigned d = (unsigned)(*s - '0');

		if (range || d > max || v > (max - d) / 10)
			range = true;
		else
			v = v * 10 + d;
		s++;
	}
	*p = s;
	if (range)
		return HB_ERANGE;
	*out = v;
	return 0;
}

int hb_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int rc;

	if (!s)
		return HB_EINVAL;
	rc = digits(&s, max, &v);
	/* a malformed tail wins over overflow */
	if (rc == HB_EINVAL || *s != '\0')
		return HB_EINVAL;
	if (rc)
		return rc;
	*out = v;
	return 0;
}

int hb_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	int rc = hb_parse_u64(s, UINT32_MAX, &v);

	if (rc == 0)
		*out = (uint32_t)v;
	return rc;
}

/*
 * Slurm's _is_valid_timespec(): digits, at most one '-' (before any ':'),
 * at most two ':', and enough digit runs for the separators given.
 */
static bool slurm_timespec_ok(const char *s)
{
	int ndigit = 0, ndash = 0, ncolon = 0;
	bool in_digit = false;

	for (; *s; s++) {
		if (is_digit(*s)) {
			if (!in_digit) {
				ndigit++;
				in_digit = true;
			}
		} else if (*s == '-') {
			in_digit = false;
			ndash++;
			if (ncolon)
				return false;
		} else if (*s == ':') {
			in_digit = false;
			ncolon++;
		} else {
			return false;
		}
	}
	if (!ndigit || ndash > 1 || ncolon > 2)
		return false;
	if (ndash) {
		if ((ncolon == 1 && ndigit < 3) || (ncolon == 2 && ndigit < 4))
			return false;
	} else {
		if ((ncolon == 1 && ndigit < 2) || (ncolon == 2 && ndigit < 3))
			return false;
	}
	return true;
}

/*
 * One component as sscanf("%d") reads it: optional digits, bounded by
 * INT_MAX.  Returns 1 if a number was read, 0 if none, HB_ERANGE.
 */
static int time_part(const char **p, uint64_t *v)
{
	int rc;

	if (!is_digit(**p))
		return 0;
	rc = digits(p, INT_MAX, v);
	return rc ? rc : 1;
}

int hb_parse_slurm_time(const char *s, uint64_t *seconds)
{
	uint64_t d = 0, h = 0, m = 0, sec = 0, total;
	const char *p = s;
	int rc;

	if (!s || !*s)
		return HB_EINVAL;
	if (strcmp(s, "-1") == 0 || eq_nocase(s, "INFINITE") ||
	    eq_nocase(s, "UNLIMITED")) {
		*seconds = HB_TIME_UNLIMITED;
		return 0;
	}
	if (!slurm_timespec_ok(s))
		return HB_EINVAL;

	if (*p == '-') {
		/* "-N": sscanf reads a negative day count; only -0 is sane */
		p++;
		rc = time_part(&p, &d);
		if (rc < 0)
			return rc;
		if (*p != '\0' || d != 0)
			return HB_EINVAL;
		*seconds = 0;
		return 0;
	}
	if (strchr(s, '-')) {
		/* days-[hours[:minutes[:seconds]]] */
		if ((rc = time_part(&p, &d)) < 0)
			return rc;
		p++; /* the '-' */
		if ((rc = time_part(&p, &h)) < 0)
			return rc;
		if (rc == 1 && *p == ':') {
			p++;
			if ((rc = time_part(&p, &m)) < 0)
				return rc;
			if (rc == 1 && *p == ':') {
				p++;
				if ((rc = time_part(&p, &sec)) < 0)
					return rc;
			}
		}
		total = d * 86400 + h * 3600 + m * 60 + sec;
	} else {
		uint64_t v[3] = {0, 0, 0};
		int n = 0;

		while (n < 3) {
			if ((rc = time_part(&p, &v[n])) < 0)
				return rc;
			n++;
			if (*p != ':')
				break;
			p++;
		}
		if (n == 3) /* hours:minutes:seconds */
			total = v[0] * 3600 + v[1] * 60 + v[2];
		else /* minutes[:seconds] */
			total = v[0] * 60 + v[1];
	}
	if (*p != '\0')
		return HB_EINVAL;
	/* Slurm computes this in an int and then rounds up to minutes. */
	if (total > (uint64_t)INT_MAX - 59)
		return HB_ERANGE;
	*seconds = (total + 59) / 60 * 60;
	return 0;
}

int hb_parse_pbs_time(const char *s, uint64_t *seconds)
{
	uint64_t v[3];
	uint64_t total = 0;
	const char *p = s;
	int n = 0, rc;

	if (!s || !*s)
		return HB_EINVAL;
	for (;;) {
		if (n == 3)
			return HB_EINVAL;
		rc = digits(&p, UINT64_MAX / 3600, &v[n]);
		if (rc)
			return rc;
		n++;
		if (*p != ':')
			break;
		p++;
	}
	if (*p == '.') {
		p++;
		if (!is_digit(*p))
			return HB_EINVAL;
		while (is_digit(*p))
			p++;
	}
	if (*p != '\0')
		return HB_EINVAL;
	for (int i = 0; i < n; i++) {
		if (total > (UINT64_MAX - v[i]) / 60)
			return HB_ERANGE;
		total = total * 60 + v[i];
	}
	if (total == HB_TIME_UNLIMITED)
		return HB_ERANGE;
	*seconds = total;
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

int hb_parse_slurm_size(const char *s, uint64_t *mib)
{
	const char *p = s;
	uint64_t v, mult = 1;
	bool neg = false;
	char u;
	int rc;

	if (!s)
		return HB_EINVAL;
	/* strtoll(): leading white space and a sign */
	while (is_space(*p))
		p++;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	rc = digits(&p, (uint64_t)LLONG_MAX, &v);
	if (rc)
		return rc;
	if (neg && v != 0)
		return HB_EINVAL;
	u = hb_ascii_lower(*p);
	if (u != '\0') {
		if (u != 'k' && u != 'm' && u != 'g' && u != 't')
			return HB_EINVAL;
		if (!(p[1] == '\0' ||
		      ((p[1] == 'b' || p[1] == 'B') && p[2] == '\0')))
			return HB_EINVAL;
	}
	switch (u) {
	case 'k':
		*mib = (v + 1023) / 1024;
		return 0;
	case 'g':
		mult = 1024;
		break;
	case 't':
		mult = 1024 * 1024;
		break;
	}
	if (v > (uint64_t)LLONG_MAX / mult)
		return HB_ERANGE;
	*mib = v * mult;
	return 0;
}

int hb_parse_pbs_size(const char *s, uint64_t *bytes)
{
	const char *p = s;
	uint64_t v, mult = 1;
	char u;
	int rc;

	if (!s)
		return HB_EINVAL;
	rc = digits(&p, UINT64_MAX, &v);
	if (rc)
		return rc;
	u = hb_ascii_lower(*p);
	switch (u) {
	case '\0':
		break;
	case 'b':
	case 'w':
		mult = 1;
		break;
	case 'k':
		mult = 1ull << 10;
		break;
	case 'm':
		mult = 1ull << 20;
		break;
	case 'g':
		mult = 1ull << 30;
		break;
	case 't':
		mult = 1ull << 40;
		break;
	case 'p':
		mult = 1ull << 50;
		break;
	default:
		return HB_EINVAL;
	}
	if (u != '\0' && u != 'b' && u != 'w') {
		char w = hb_ascii_lower(p[1]);

		/* kb, kw or bare k */
		if (w == 'b' || w == 'w') {
			if (p[2] != '\0')
				return HB_EINVAL;
			if (w == 'w')
				u = 'w';
		} else if (w != '\0') {
			return HB_EINVAL;
		}
	} else if (u != '\0' && p[1] != '\0') {
		return HB_EINVAL;
	}
	if (u == 'w') {
		if (mult > UINT64_MAX / 8)
			return HB_ERANGE;
		mult *= 8;
	}
	if (mult > 1 && v > UINT64_MAX / mult)
		return HB_ERANGE;
	*bytes = v * mult;
	return 0;
}

uint64_t hb_bytes_to_mib(uint64_t bytes)
{
	return (bytes >> 20) + ((bytes & ((1u << 20) - 1)) != 0);
}

void hb_format_slurm_time(uint64_t seconds, char out[32])
{
	unsigned long long d, h, m, s;

	if (seconds == HB_TIME_UNLIMITED) {
		snprintf(out, 32, "UNLIMITED");
		return;
	}
	d = seconds / 86400;
	h = seconds / 3600 % 24;
	m = seconds / 60 % 60;
	s = seconds % 60;
	if (d)
		snprintf(out, 32, "%llu-%02llu:%02llu:%02llu", d, h, m, s);
	else
		snprintf(out, 32, "%02llu:%02llu:%02llu", h, m, s);
}

void hb_format_k8s_mem(uint64_t mib, char out[32])
{
	static const char *const unit[] = {"Mi", "Gi", "Ti", "Pi", "Ei"};
	unsigned i = 0;

	char t[20];
	size_t k = sizeof(t), n;

	if (mib == 0) {
		out[0] = '0';
		out[1] = '\0';
		return;
	}
	while (i < 4 && mib % 1024 == 0) {
		mib /= 1024;
		i++;
	}
	/* (no printf: every translated job comes here) */
	do {
		t[--k] = (char)('0' + mib % 10);
		mib /= 10;
	} while (mib);
	n = sizeof(t) - k;
	memcpy(out, t + k, n);
	memcpy(out + n, unit[i], 3);
}

/*
 * A Kubernetes quantity (apimachinery resource.Quantity):
 *   [+]digits[.digits] | [+].digits, then one of Ki Mi Gi Ti Pi Ei,
 *   n u m k M G T P E, or e/E followed by a signed integer exponent.
 * The value is mant * 10^dexp * 2^bexp; negative values are refused.
 */
struct quantity {
	unsigned __int128 mant;
	int dexp;
	int bexp;
};

#define MANT_DIGITS_MAX 30

static int parse_quantity(const char *s, struct quantity *q)
{
	const char *p = s;
	unsigned ndig = 0;
	bool any = false;

	if (!s)
		return HB_EINVAL;
	q->mant = 0;
	q->dexp = 0;
	q->bexp = 0;
	if (*p == '+')
		p++;
	else if (*p == '-')
		return HB_EINVAL;
	while (is_digit(*p)) {
		any = true;
		if (q->mant == 0 && *p == '0') {
			p++;
			continue;
		}
		if (++ndig > MANT_DIGITS_MAX)
			return HB_ERANGE;
		q->mant = q->mant * 10 + (unsigned)(*p - '0');
		p++;
	}
	if (*p == '.') {
		p++;
		while (is_digit(*p)) {
			any = true;
			if (q->mant != 0 || *p != '0') {
				if (++ndig > MANT_DIGITS_MAX)
					return HB_ERANGE;
			}
			q->mant = q->mant * 10 + (unsigned)(*p - '0');
			q->dexp--;
			if (q->dexp < -60)
				return HB_ERANGE;
			p++;
		}
	}
	if (!any)
		return HB_EINVAL;
	if (*p == '\0')
		return 0;
	if ((*p == 'e' || *p == 'E') && p[1] != '\0' && p[1] != 'i') {
		const char *e = p + 1;
		bool neg = false;
		uint64_t x;

		int rc;

		if (*e == '+' || *e == '-')
			neg = *e++ == '-';
		rc = digits(&e, 1000, &x);
		if (rc == HB_EINVAL || *e != '\0')
			return HB_EINVAL;
		if (rc)
			return rc;
		q->dexp += neg ? -(int)x : (int)x;
		return 0;
	}
	if (p[1] == 'i' && p[2] == '\0') {
		static const char bin[] = "KMGTPE";
		const char *b = strchr(bin, *p);

		if (!b || *p == '\0')
			return HB_EINVAL;
		q->bexp = 10 * (int)(b - bin + 1);
		return 0;
	}
	if (p[1] != '\0')
		return HB_EINVAL;
	switch (*p) {
	case 'n':
		q->dexp -= 9;
		break;
	case 'u':
		q->dexp -= 6;
		break;
	case 'm':
		q->dexp -= 3;
		break;
	case 'k':
		q->dexp += 3;
		break;
	case 'M':
		q->dexp += 6;
		break;
	case 'G':
		q->dexp += 9;
		break;
	case 'T':
		q->dexp += 12;
		break;
	case 'P':
		q->dexp += 15;
		break;
	case 'E':
		q->dexp += 18;
		break;
	default:
		return HB_EINVAL;
	}
	return 0;
}

/*
 * ceil(q * 2^shift_b * 10^shift_d) as a uint64_t: used for bytes→MiB
 * (shift_b = -20) and cores→millicores (shift_d = 3).
 */
static int quantity_ceil(const struct quantity *q, int shift_b, int shift_d,
			 uint64_t *out)
{
	const unsigned __int128 lim = (unsigned __int128)1 << 126;
	unsigned __int128 num = q->mant, den = 1;
	int d = q->dexp + shift_d, b = q->bexp + shift_b;

	if (num == 0) {
		*out = 0;
		return 0;
	}
	for (; d > 0; d--) {
		if (num > lim / 10)
			return HB_ERANGE;
		num *= 10;
	}
	for (; b > 0; b--) {
		if (num > lim / 2)
			return HB_ERANGE;
		num *= 2;
	}
	for (; d < 0; d++) {
		if (den > lim / 10)
			goto tiny;
		den *= 10;
	}
	for (; b < 0; b++) {
		if (den > lim / 2)
			goto tiny;
		den *= 2;
	}
	num = num / den + (num % den != 0);
	if (num > UINT64_MAX)
		return HB_ERANGE;
	*out = (uint64_t)num;
	return 0;
tiny:
	/* a positive value far below one unit rounds up to one */
	*out = 1;
	return 0;
}

int hb_parse_k8s_mem(const char *s, uint64_t *mib)
{
	struct quantity q;
	int rc = parse_quantity(s, &q);

	if (rc)
		return rc;
	return quantity_ceil(&q, -20, 0, mib);
}

int hb_parse_k8s_cpu(const char *s, uint64_t *millicpus)
{
	struct quantity q;
	int rc = parse_quantity(s, &q);

	if (rc)
		return rc;
	return quantity_ceil(&q, 0, 3, millicpus);
}

int hb_parse_k8s_units(const char *s, uint64_t *out)
{
	struct quantity q;
	int rc = parse_quantity(s, &q);

	if (rc)
		return rc;
	return quantity_ceil(&q, 0, 0, out);
}

/* ---- Quantities as people write them ---------------------------------- */

/*
 * Placement policies and snapshots (gateway/placement) write money,
 * durations, sizes, bandwidths, percentages and instants as people do:
 * "212.40", "6h10m", "1.5TB", "10Gb/s", "20%", "2026-11-21T08:00:00Z".
 */

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

/*
 * mant, read with nfrac decimals, in units of 10^-decimals, or HB_ERANGE
 * past max.  18 digits fit in 64 bits, but not once scaled: 14 whole
 * digits with 6 decimals pass 2^64, so compare before multiplying
 * (mant * scale > max exactly when mant > max / scale).
 */
static int in_units(uint64_t mant, unsigned nfrac, unsigned decimals,
		    uint64_t max, uint64_t *out)
{
	uint64_t scale = pow10u(decimals - nfrac);

	if (mant > max / scale)
		return HB_ERANGE;
	*out = mant * scale;
	return 0;
}

int hb_parse_decimal(const char *s, unsigned decimals, uint64_t max,
		     uint64_t *out)
{
	uint64_t m;
	unsigned nf;
	int rc = decimal(&s, decimals, &m, &nf);

	if (rc)
		return rc;
	if (*s)
		return HB_EINVAL;
	return in_units(m, nf, decimals, max, out);
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
	if ((rc = in_units(m, nf, 2, 10000000, &m))) /* 100,000 % */
		return rc;
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
static bool digits_n(const char **p, int n, int *v)
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
	if (!digits_n(&s, 2, &hh))
		return HB_EINVAL;
	if (*s == ':')
		s++;
	if (*s && !digits_n(&s, 2, &mm))
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

	if (!digits_n(&s, 4, &y) || *s++ != '-' || !digits_n(&s, 2, &mo) ||
	    *s++ != '-' || !digits_n(&s, 2, &d))
		return HB_EINVAL;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    (unsigned)d > month_days(y, (unsigned)mo))
		return HB_EINVAL;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (!digits_n(&s, 2, &hh) || *s++ != ':' ||
		    !digits_n(&s, 2, &mi))
			return HB_EINVAL;
		if (*s == ':') {
			s++;
			if (!digits_n(&s, 2, &ss))
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

bool hb_scan_digits(const char **p, int maxd, int64_t *v)
{
	int64_t x = 0;
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		if (++n > maxd)
			return false;
		x = x * 10 + (**p - '0');
		(*p)++;
	}
	*v = x;
	return n > 0;
}
