/*
 * values.c - the values placement speaks in: money, the two sides and
 * budget periods by name, and the text of amounts, times and sizes in
 * explanations.  Policies (policy.c) and snapshots (snapshot.c) read
 * money with hb_parse_money(); every other value they are written in is
 * read by units.c.
 */
#include <string.h>

#include "gateway/placement/docread.h"
#include "hpcbridge/snapshot.h"
#include "hpcbridge/units.h"

/* ---- money ------------------------------------------------------------ */

/* 6 decimals: micro-units of the currency. */
int hb_parse_money(const char *s, hb_money *out)
{
	uint64_t m;
	int rc = hb_parse_decimal(s, 6, (uint64_t)HB_MONEY_MAX, &m);

	if (rc)
		return rc;
	*out = (hb_money)m;
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

const char *const hb_period_names[] = { "day",	   "week", "month",
					"quarter", "year", NULL };

const char *hb_period_name(int period)
{
	return period >= 0 && period < HB__PERIOD_COUNT
		       ? hb_period_names[period]
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
