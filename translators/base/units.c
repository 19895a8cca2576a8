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

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive comparison of two NUL-terminated strings. */
static bool eq_nocase(const char *a, const char *b)
{
	while (*a && *b) {
		if (lower(*a) != lower(*b))
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
	u = lower(*p);
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
	u = lower(*p);
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
		char w = lower(p[1]);

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
