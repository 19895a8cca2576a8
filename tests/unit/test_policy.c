/*
 * test_policy.c - placement policies and snapshots: the values they are
 * written in, reading them (every example policy, every error naming its
 * file, line and key), lookups, the snapshot's writer and setters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/policy.h"
#include "testutil.h"

/* ---- values ----------------------------------------------------------- */

static void test_money(void **state)
{
	hb_money m;

	(void)state;
	assert_int_equal(hb_parse_money("212.40", &m), 0);
	assert_int_equal(m, 212400000);
	assert_int_equal(hb_parse_money("0.000125", &m), 0);
	assert_int_equal(m, 125);
	assert_int_equal(hb_parse_money("5000", &m), 0);
	assert_int_equal(m, 5000000000LL);
	assert_int_equal(hb_parse_money("0.0000001", &m), HB_EINVAL);
	assert_int_equal(hb_parse_money("-1", &m), HB_EINVAL);
	assert_int_equal(hb_parse_money("1.", &m), HB_EINVAL);
	assert_int_equal(hb_parse_money("", &m), HB_EINVAL);
	assert_int_equal(hb_parse_money("1e3", &m), HB_EINVAL);
	assert_int_equal(hb_parse_money("9999999999999", &m), HB_ERANGE);
	assert_int_equal(hb_parse_money("1000000000000", &m), 0);
	assert_int_equal(m, HB_MONEY_MAX);
	/* Whole digits that overflow 64 bits once scaled to micro-units
	 * are too large, not wrapped: 18446744073710 * 10^6 is 448384
	 * past 2^64. */
	m = 7;
	assert_int_equal(hb_parse_money("18446744073710", &m), HB_ERANGE);
	assert_int_equal(m, 7);
	assert_int_equal(hb_parse_money("18446744073709.551616", &m),
			 HB_ERANGE);
	assert_int_equal(hb_parse_money("100000000000000000", &m), HB_ERANGE);
	assert_int_equal(hb_parse_money("1000000000000.000001", &m), HB_ERANGE);
	assert_int_equal(m, 7);
}

static void test_duration(void **state)
{
	int64_t d;

	(void)state;
	assert_int_equal(hb_parse_duration("6h10m", &d), 0);
	assert_int_equal(d, 6 * 3600 + 600);
	assert_int_equal(hb_parse_duration("90", &d), 0);
	assert_int_equal(d, 90);
	assert_int_equal(hb_parse_duration("1d12h", &d), 0);
	assert_int_equal(d, 36 * 3600);
	assert_int_equal(hb_parse_duration("2w", &d), 0);
	assert_int_equal(d, 14 * 86400);
	assert_int_equal(hb_parse_duration("0s", &d), 0);
	assert_int_equal(d, 0);
	/* units in decreasing order, each once */
	assert_int_equal(hb_parse_duration("10m1h", &d), HB_EINVAL);
	assert_int_equal(hb_parse_duration("1h1h", &d), HB_EINVAL);
	assert_int_equal(hb_parse_duration("h", &d), HB_EINVAL);
	assert_int_equal(hb_parse_duration("1x", &d), HB_EINVAL);
	assert_int_equal(hb_parse_duration("", &d), HB_EINVAL);
	assert_int_equal(hb_parse_duration("-1s", &d), HB_EINVAL);
	assert_int_equal(hb_parse_duration("999999999999w", &d), HB_ERANGE);
}

static void test_size(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(hb_parse_size("800G", &v), 0);
	assert_int_equal(v, 800000000000ULL);
	assert_int_equal(hb_parse_size("800GB", &v), 0);
	assert_int_equal(v, 800000000000ULL);
	assert_int_equal(hb_parse_size("1.5TB", &v), 0);
	assert_int_equal(v, 1500000000000ULL);
	assert_int_equal(hb_parse_size("512Mi", &v), 0);
	assert_int_equal(v, 512ULL << 20);
	assert_int_equal(hb_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(hb_parse_size("100", &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(hb_parse_size("1k", &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(hb_parse_size("1.0005K", &v), HB_EINVAL);
	assert_int_equal(hb_parse_size("1.5", &v), 0);
	assert_int_equal(v, 2); /* rounded up */
	assert_int_equal(hb_parse_size("10X", &v), HB_EINVAL);
	assert_int_equal(hb_parse_size("G", &v), HB_EINVAL);
	assert_int_equal(hb_parse_size("5E", &v), HB_ERANGE);
}

static void test_bandwidth(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(hb_parse_bandwidth("10Gb/s", &v), 0);
	assert_int_equal(v, 1250000000ULL);
	assert_int_equal(hb_parse_bandwidth("10Gbps", &v), 0);
	assert_int_equal(v, 1250000000ULL);
	assert_int_equal(hb_parse_bandwidth("1.25GB/s", &v), 0);
	assert_int_equal(v, 1250000000ULL);
	assert_int_equal(hb_parse_bandwidth("400Mbit/s", &v), 0);
	assert_int_equal(v, 50000000ULL);
	assert_int_equal(hb_parse_bandwidth("10G", &v), HB_EINVAL);
	assert_int_equal(hb_parse_bandwidth("0Gb/s", &v), HB_EINVAL);
	assert_int_equal(hb_parse_bandwidth("10Gb/h", &v), HB_EINVAL);
}

static void test_percent_instant(void **state)
{
	int32_t p, off;
	int64_t t;

	(void)state;
	assert_int_equal(hb_parse_percent("20%", &p), 0);
	assert_int_equal(p, 2000);
	assert_int_equal(hb_parse_percent("2.5%", &p), 0);
	assert_int_equal(p, 250);
	assert_int_equal(hb_parse_percent("20", &p), HB_EINVAL);
	assert_int_equal(hb_parse_percent("2.555%", &p), HB_EINVAL);
	assert_int_equal(hb_parse_percent("100000%", &p), 0);
	assert_int_equal(p, 10000000);
	assert_int_equal(hb_parse_percent("100000.01%", &p), HB_ERANGE);
	/* scaled to hundredths this passes 2^64 by 84: too large, not 0.84% */
	p = 7;
	assert_int_equal(hb_parse_percent("184467440737095517%", &p),
			 HB_ERANGE);
	assert_int_equal(p, 7);

	assert_int_equal(hb_parse_instant("2026-11-21T08:00:00Z", &t), 0);
	assert_int_equal(t, 1795248000);
	assert_int_equal(hb_parse_instant("2026-11-21T09:00:00+01:00", &t), 0);
	assert_int_equal(t, 1795248000);
	assert_int_equal(hb_parse_instant("2026-11-21 08:00", &t), 0);
	assert_int_equal(t, 1795248000);
	assert_int_equal(hb_parse_instant("2026-11-21", &t), 0);
	assert_int_equal(t, 1795219200);
	assert_int_equal(hb_parse_instant("2024-02-29", &t), 0);
	assert_int_equal(hb_parse_instant("2026-02-29", &t), HB_EINVAL);
	assert_int_equal(hb_parse_instant("2026-13-01", &t), HB_EINVAL);
	assert_int_equal(hb_parse_instant("2026-11-21T25:00", &t), HB_EINVAL);
	assert_int_equal(hb_parse_instant("2026-11-21T08:00X", &t), HB_EINVAL);

	assert_int_equal(hb_parse_utc_offset("-05:30", &off), 0);
	assert_int_equal(off, -(5 * 3600 + 1800));
	assert_int_equal(hb_parse_utc_offset("Z", &off), 0);
	assert_int_equal(off, 0);
	assert_int_equal(hb_parse_utc_offset("+15:00", &off), HB_EINVAL);
}

static void test_civil(void **state)
{
	(void)state;
	/* every day from 1970 to 2400 goes there and back */
	for (int64_t z = 0; z < 157000; z += 1) {
		int64_t y;
		unsigned m, d;

		hb_civil_from_days(z, &y, &m, &d);
		assert_int_equal(hb_days_from_civil(y, m, d), z);
	}
}

static void test_format(void **state)
{
	char b[48];

	(void)state;
	assert_string_equal(hb_format_duration(0, b, sizeof(b)), "0s");
	assert_string_equal(hb_format_duration(45, b, sizeof(b)), "45s");
	assert_string_equal(hb_format_duration(640, b, sizeof(b)), "10m40s");
	assert_string_equal(hb_format_duration(22200, b, sizeof(b)), "6h10m");
	assert_string_equal(hb_format_duration(22201, b, sizeof(b)), "6h11m");
	assert_string_equal(hb_format_duration(43200, b, sizeof(b)), "12h00m");
	assert_string_equal(hb_format_duration(86400 + 7200, b, sizeof(b)),
			    "1d02h00m");
	assert_string_equal(hb_format_duration(-7800, b, sizeof(b)), "-2h10m");
	assert_string_equal(hb_format_money(212400000, b, sizeof(b)), "212.40");
	assert_string_equal(hb_format_money(4900000000LL, b, sizeof(b)),
			    "4,900.00");
	assert_string_equal(hb_format_money(5000, b, sizeof(b)), "0.01");
	assert_string_equal(hb_format_money(4999, b, sizeof(b)), "0.00");
	assert_string_equal(hb_format_money(-1234567890, b, sizeof(b)),
			    "-1,234.57");
	assert_string_equal(hb_format_rate(1000, b, sizeof(b)), "0.001");
	assert_string_equal(hb_format_rate(4500000, b, sizeof(b)), "4.50");
	assert_string_equal(hb_format_size(800000000000ULL, b, sizeof(b)),
			    "800 GB");
	assert_string_equal(hb_format_size(1500000000000ULL, b, sizeof(b)),
			    "1.5 TB");
	assert_string_equal(hb_format_size(512, b, sizeof(b)), "512 B");
	assert_string_equal(hb_format_bandwidth(1250000000ULL, b, sizeof(b)),
			    "10 Gb/s");
	assert_string_equal(hb_format_instant(1795248000, b, sizeof(b)),
			    "2026-11-21T08:00:00Z");
}

/*
 * The formatters write their digits by hand; the ref_* below are the
 * snprintf versions they replaced, kept as the specification.  Each pair
 * must give the same bytes for every value, and for every buffer size
 * (snprintf cuts the text to size - 1 bytes and a NUL; size 0 writes
 * nothing).
 */
static char *ref_duration(int64_t sec, char *buf, size_t size)
{
	const char *sign = "";
	uint64_t s, m;

	if (sec < 0) {
		sign = "-";
		s = (uint64_t)(-(sec + 1)) + 1;
	} else {
		s = (uint64_t)sec;
	}
	if (s < 60) {
		snprintf(buf, size, "%s%llus", sign, (unsigned long long)s);
	} else if (s < 3600) {
		snprintf(buf, size, "%s%llum%02llus", sign,
			 (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	} else {
		m = (s + 59) / 60;
		if (m < 1440)
			snprintf(buf, size, "%s%lluh%02llum", sign,
				 (unsigned long long)(m / 60),
				 (unsigned long long)(m % 60));
		else
			snprintf(buf, size, "%s%llud%02lluh%02llum", sign,
				 (unsigned long long)(m / 1440),
				 (unsigned long long)(m / 60 % 24),
				 (unsigned long long)(m % 60));
	}
	return buf;
}

static char *ref_money(hb_money m, char *buf, size_t size)
{
	char digits_[32], grouped[48];
	uint64_t cents, whole;
	size_t n, k = 0;
	bool neg = m < 0;

	cents = neg ? ((uint64_t)(-(m + 1)) + 1 + 5000) / 10000
		    : ((uint64_t)m + 5000) / 10000;
	whole = cents / 100;
	n = (size_t)snprintf(digits_, sizeof(digits_), "%llu",
			     (unsigned long long)whole);
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			grouped[k++] = ',';
		grouped[k++] = digits_[i];
	}
	grouped[k] = '\0';
	snprintf(buf, size, "%s%s.%02llu", neg ? "-" : "", grouped,
		 (unsigned long long)(cents % 100));
	return buf;
}

/* Undefined for INT64_MIN (-m): that one is checked on its own. */
static char *ref_rate(hb_money m, char *buf, size_t size)
{
	char frac[8];
	int n;

	if (m < 0 || m % 10000) {
		n = snprintf(frac, sizeof(frac), "%06lld",
			     (long long)((m < 0 ? -m : m) % HB_MONEY_UNIT));
		while (n > 2 && frac[n - 1] == '0')
			frac[--n] = '\0';
		snprintf(buf, size, "%s%lld.%s", m < 0 ? "-" : "",
			 (long long)((m < 0 ? -m : m) / HB_MONEY_UNIT), frac);
		return buf;
	}
	return ref_money(m, buf, size);
}

static char *ref_si(uint64_t v, const char *const *sfx, int nsfx, char *buf,
		    size_t size)
{
	uint64_t unit = 1;
	int i = 0;

	while (i + 1 < nsfx && v / unit >= 1000) {
		unit *= 1000;
		i++;
	}
	if (i == 0 || v % unit == 0 || v / unit >= 100) {
		snprintf(buf, size, "%llu %s",
			 (unsigned long long)((v + unit / 2) / unit), sfx[i]);
	} else {
		uint64_t tenths = (v * 10 + unit / 2) / unit;

		if (v > UINT64_MAX / 10)
			tenths = v / (unit / 10);
		snprintf(buf, size, "%llu.%llu %s",
			 (unsigned long long)(tenths / 10),
			 (unsigned long long)(tenths % 10), sfx[i]);
	}
	return buf;
}

static char *ref_size(uint64_t bytes, char *buf, size_t size)
{
	static const char *const sfx[] = { "B",	 "KB", "MB", "GB",
					   "TB", "PB", "EB" };

	return ref_si(bytes, sfx, 7, buf, size);
}

static char *ref_bandwidth(uint64_t bps, char *buf, size_t size)
{
	static const char *const sfx[] = { "b/s",  "Kb/s", "Mb/s",
					   "Gb/s", "Tb/s", "Pb/s" };

	return ref_si(bps > UINT64_MAX / 8 ? UINT64_MAX : bps * 8, sfx, 6, buf,
		      size);
}

/* Undefined below INT64_MIN + 86400 (-t): those are checked on their
 * own. */
static char *ref_instant(int64_t t, char *buf, size_t size)
{
	int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
	int64_t rem = t - days * 86400, y;
	unsigned m, d;

	hb_civil_from_days(days, &y, &m, &d);
	snprintf(buf, size, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
		 (long long)y, m, d, (long long)(rem / 3600),
		 (long long)(rem / 60 % 60), (long long)(rem % 60));
	return buf;
}

enum { F_DURATION, F_MONEY, F_RATE, F_SIZE, F_BANDWIDTH, F_INSTANT, F__N };

static const char *const f_names[F__N] = { "duration", "money",	    "rate",
					   "size",     "bandwidth", "instant" };

/* Formatter f (or its reference) on v. */
static char *run_format(int f, bool ref, uint64_t v, char *buf, size_t size)
{
	int64_t s = (int64_t)v;

	switch (f) {
	case F_DURATION:
		return (ref ? ref_duration : hb_format_duration)(s, buf, size);
	case F_MONEY:
		return (ref ? ref_money : hb_format_money)(s, buf, size);
	case F_RATE:
		return (ref ? ref_rate : hb_format_rate)(s, buf, size);
	case F_SIZE:
		return (ref ? ref_size : hb_format_size)(v, buf, size);
	case F_BANDWIDTH:
		return (ref ? ref_bandwidth : hb_format_bandwidth)(v, buf,
								   size);
	default:
		return (ref ? ref_instant : hb_format_instant)(s, buf, size);
	}
}

/* Whether the reference is defined at v (see ref_rate, ref_instant). */
static bool ref_defined(int f, uint64_t v)
{
	int64_t s = (int64_t)v;

	if (f == F_RATE)
		return s != INT64_MIN;
	if (f == F_INSTANT)
		return s >= INT64_MIN + 86400;
	return true;
}

/* Formatter f and its reference give the same bytes for v, into a
 * buffer of each size from 0 to 33 when all_sizes, else of 32 (the
 * smallest written in place): what lies past the NUL is compared too. */
static void same_format(int f, uint64_t v, bool all_sizes)
{
	char got[40], want[40];
	size_t lo = all_sizes ? 0 : 32, hi = all_sizes ? 33 : 32;

	if (!ref_defined(f, v))
		return;
	for (size_t size = lo; size <= hi; size++) {
		memset(got, 0x5a, sizeof(got));
		memset(want, 0x5a, sizeof(want));
		run_format(f, false, v, got, size);
		run_format(f, true, v, want, size);
		if (memcmp(got, want, sizeof(got)))
			fail_msg("hb_format_%s(%lld / %llu), size %zu: "
				 "\"%.*s\", expected \"%.*s\"",
				 f_names[f], (long long)v,
				 (unsigned long long)v, size,
				 (int)strnlen(got, sizeof(got)), got,
				 (int)strnlen(want, sizeof(want)), want);
	}
}

static uint64_t fmt_rng = 20261126;

static uint64_t fmt_next(void)
{
	uint64_t z = (fmt_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void test_format_edges(void **state)
{
	/* Where a text changes form, rounds, grows a digit or a comma,
	 * and the ends of the range. */
	static const int64_t base[] = {
		0,
		1,
		59,
		60,
		3599,
		3600,
		3601,
		3659,
		3660,
		86340,
		86341,
		86399,
		86400,
		86401,
		4999,
		5000,
		9999,
		10000,
		14999,
		15000,
		999999,
		1000000,
		1005000,
		999995000,
		1000000000,
		999999995000LL,
		1000000000000LL,
		999999999995000LL,
		HB_MONEY_MAX,
		253402300799LL, /* 9999-12-31T23:59:59Z */
		253402300800LL,
		-62135596800LL, /* 0001-01-01 */
		-62135596801LL,
		-62167219200LL, /* 0000-01-01 */
		-62167219201LL,
		-62198755200LL,	 /* -0001-01-01: "%04lld" counts the '-' */
		-93692592000LL,	 /* -0999-01-01 */
		-377705116801LL, /* -10000-12-31T23:59:59Z */
		1795248000,
		INT32_MAX,
		(int64_t)UINT32_MAX,
		999,
		1000,
		1049,
		1050,
		99949,
		99950,
		999499,
		999500,
		INT64_MAX / 10,
		INT64_MAX / 8,
		INT64_MAX - 86400,
		INT64_MAX,
		INT64_MIN + 86400,
		INT64_MIN + 86401,
		INT64_MIN + 1,
		INT64_MIN,
	};
	char b[40];

	(void)state;
	for (int f = 0; f < F__N; f++) {
		for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
			for (int64_t d = -2; d <= 2; d++) {
				int64_t v = base[i];

				if ((d > 0 && v > INT64_MAX - d) ||
				    (d < 0 && v < INT64_MIN - d))
					continue;
				same_format(f, (uint64_t)(v + d), true);
				if (v + d != INT64_MIN)
					same_format(f, (uint64_t) - (v + d),
						    true);
				same_format(f,
					    (uint64_t)(v + d) + UINT64_MAX / 2,
					    true);
			}
		}
		for (int k = 0; k < 64; k++) {
			same_format(f, 1ULL << k, true);
			same_format(f, (1ULL << k) - 1, true);
			same_format(f, UINT64_MAX >> k, true);
		}
		for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10) {
			same_format(f, p, true);
			same_format(f, p - 1, true);
			same_format(f, p * 5, true);
			same_format(f, p * 5 - 1, true);
		}
	}
	/* Where the snprintf versions were undefined (-INT64_MIN). */
	assert_string_equal(hb_format_rate(INT64_MIN, b, sizeof(b)),
			    "-9223372036854.775808");
	assert_string_equal(hb_format_instant(INT64_MIN, b, sizeof(b)),
			    "-292277022657-01-27T08:29:52Z");
	assert_string_equal(hb_format_instant(INT64_MIN + 86399, b, sizeof(b)),
			    "-292277022657-01-28T08:29:51Z");
	assert_string_equal(hb_format_instant(INT64_MAX, b, sizeof(b)),
			    "292277026596-12-04T15:30:07Z");
	assert_string_equal(hb_format_instant(-1, b, sizeof(b)),
			    "1969-12-31T23:59:59Z");
	assert_string_equal(hb_format_instant(253402300800LL, b, sizeof(b)),
			    "10000-01-01T00:00:00Z");
	assert_string_equal(hb_format_money(INT64_MIN, b, sizeof(b)),
			    "-9,223,372,036,854.78");
	assert_string_equal(hb_format_duration(INT64_MIN, b, sizeof(b)),
			    "-106751991167300d15h31m");
	/* The header's promise: 32 bytes are always enough. */
	for (int f = 0; f < F__N; f++) {
		assert_true(strlen(run_format(f, false, (uint64_t)INT64_MIN, b,
					      32)) < 31);
		assert_true(strlen(run_format(f, false, UINT64_MAX, b, 32)) <
			    31);
	}
}

/* Pseudo-random values (a fixed seed): any size of number, either sign,
 * and values next to the places where a text changes. */
static void test_format_random(void **state)
{
	static const uint64_t step[] = { 60, 3600, 86400, 10000, 1000000 };

	(void)state;
	for (int i = 0; i < 1 << 19; i++) {
		uint64_t r = fmt_next(), v = fmt_next() >> (r & 63);

		if (r & 64)
			v = -v;
		if ((r >> 8) % 4 == 0) { /* next to a multiple of a step */
			uint64_t st = step[(r >> 12) % 5];

			v = v / st * st + (r >> 16) % 5 - 2;
			if ((r >> 8) % 8 == 0)
				v += st / 2;
		}
		for (int f = 0; f < F__N; f++)
			same_format(f, v, (i & 1023) == 0);
	}
}

/* ---- policies --------------------------------------------------------- */

static void parse_ok(const char *text, struct hb_policy *pol)
{
	struct hb_err err = { 0 };

	if (hb_policy_parse(text, strlen(text), "p.yaml", pol, &err))
		fail_msg("%s", err.msg);
}

static void test_examples(void **state)
{
	static const char *const files[] = {
		"config/policies/full.yaml",
		"config/policies/deadline-burst.yaml",
		"config/policies/cheaper-burst.yaml",
		"config/policies/data-gravity.yaml",
		"config/policies/budget-cap.yaml",
		"config/policies/gpu-equivalence.yaml",
		"config/policies/migration-pilot.yaml",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct hb_policy pol;
		struct hb_err err = { 0 };
		struct hb_buf b;
		size_t len;
		char *text =
			hb_test_read_file(hb_test_src_path(files[i]), &len);

		if (hb_policy_parse(text, len, files[i], &pol, &err))
			fail_msg("%s", err.msg);
		hb_buf_init(&b, 0);
		assert_int_equal(hb_policy_describe(&pol, &b), 0);
		assert_non_null(strstr(b.data, ": valid\n"));
		hb_buf_free(&b);
		hb_policy_free(&pol);
		free(text);
	}
	/* and the example snapshots */
	for (int i = 0; i < 2; i++) {
		const char *rel = i ? "tests/unit/data/place/idle.yaml"
				    : "tests/unit/data/place/busy.yaml";
		struct hb_snapshot s;
		struct hb_err err = { 0 };
		size_t len;
		char *text = hb_test_read_file(hb_test_src_path(rel), &len);

		if (hb_snapshot_parse(text, len, rel, &s, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(s.now, 1795248000);
		assert_int_equal(s.nparts, 2);
		hb_snapshot_free(&s);
		free(text);
	}
}

static void test_full(void **state)
{
	struct hb_policy pol;
	struct hb_err err = { 0 };
	const struct hb_partition *gpu;
	const struct hb_rule *ru;
	size_t len;
	char *text = hb_test_read_file(
		hb_test_src_path("config/policies/full.yaml"), &len);

	(void)state;
	if (hb_policy_parse(text, len, "full.yaml", &pol, &err))
		fail_msg("%s", err.msg);
	free(text);
	assert_string_equal(pol.currency_symbol, "$");
	assert_int_equal(pol.default_time_limit, 3600);
	assert_int_equal(pol.default_mem_per_cpu_mb, 2048);
	assert_int_equal(pol.nrdma_features, 2);
	assert_string_equal(pol.default_partition, "batch");
	assert_int_equal(pol.npartitions, 2);
	gpu = hb_policy_partition(&pol, "gpu");
	assert_non_null(gpu);
	assert_int_equal(gpu->cap.node_gpus, 4);
	assert_int_equal(gpu->cap.node_mem_mb, 512 * 1024);
	assert_int_equal(gpu->cap.nmig, 2);
	assert_true(gpu->cap.shards);
	/* its own GPU rates, the rest from slurm.rates */
	assert_int_equal(gpu->rates.cpu_hour, 10000);
	assert_int_equal(gpu->rates.ngpu, 3);
	assert_string_equal(gpu->rates.gpu[0].type, "a100");
	assert_int_equal(gpu->rates.gpu[0].per_hour, 1100000);
	assert_int_equal(hb_policy_partition(&pol, "batch")->default_deadline,
			 2 * 86400);
	assert_null(hb_policy_partition(&pol, "nope"));

	assert_true(pol.kube_enabled);
	assert_string_equal(pol.namespace, "hpc");
	assert_int_equal(pol.kube_startup, 120);
	assert_string_equal(hb_policy_queue(&pol, "physics", "gpu")->name,
			    "research");
	assert_string_equal(hb_policy_queue(&pol, "bio", "gpu")->name, "burst");
	assert_string_equal(hb_policy_queue(&pol, NULL, NULL)->name, "burst");
	/* Slurm keeps accounts in lower case: a policy's account names
	 * match whatever case either side wrote */
	assert_string_equal(hb_policy_queue(&pol, "Physics", "gpu")->name,
			    "research");
	assert_string_equal(hb_policy_rule(&pol, "PHYSICS", "gpu")->name,
			    "physics");
	assert_string_equal(hb_policy_rule(&pol, "physicsx", "gpu")->name,
			    hb_policy_rule(&pol, "nobody", "gpu")->name);

	/* data: longest prefix on a path boundary */
	assert_string_equal(hb_policy_data(&pol, "/lustre/era5/2020")->prefix,
			    "/lustre/era5");
	assert_string_equal(hb_policy_data(&pol, "/lustre/era5")->prefix,
			    "/lustre/era5");
	assert_null(hb_policy_data(&pol, "/lustre/era55"));
	assert_false(hb_policy_data(&pol, "/lustre/medical/x")->movable);
	assert_int_equal(hb_policy_data(&pol, "s3://datasets/imagenet")->side,
			 HB_SIDE_KUBE);
	assert_int_equal(hb_policy_data(&pol, "/lustre/era5/x")->bandwidth,
			 1250000000ULL);

	/* rules: first match, inheriting the defaults */
	ru = hb_policy_rule(&pol, "physics", "gpu");
	assert_string_equal(ru->name, "physics");
	assert_int_equal(ru->index, 2);
	assert_int_equal(ru->prefer, HB_PREFER_CHEAPEST);
	assert_int_equal(ru->budget, 5000LL * HB_MONEY_UNIT);
	assert_int_equal(ru->budget_period, HB_PERIOD_MONTH);
	assert_int_equal(ru->budget_sides, 1u << HB_SIDE_KUBE);
	assert_int_equal(ru->premium_bp, 2000);
	assert_int_equal(ru->premium_abs, HB_UNSET);
	assert_int_equal(ru->staging_slack_bp, 5000);
	assert_true(ru->honour_target);
	assert_int_equal(ru->fallback, HB_FALLBACK_EARLIEST);
	ru = hb_policy_rule(&pol, "physics", "batch");
	assert_int_equal(ru->index, 0); /* the defaults */
	assert_false(hb_policy_rule(&pol, "medical", NULL)->burst);
	assert_int_equal(hb_policy_rule(&pol, "chemistry", "x")->pilot_bp,
			 1000);

	/* GPU equivalence and MIG */
	assert_true(hb_policy_gpu_ok(&pol, "h100", "h200"));
	assert_true(hb_policy_gpu_ok(&pol, "H100", "h100"));
	assert_false(hb_policy_gpu_ok(&pol, "h100", "a100"));
	assert_true(hb_policy_gpu_ok(&pol, "a100", "h200"));
	assert_false(hb_policy_gpu_ok(&pol, "h200", "h100"));
	assert_true(hb_policy_gpu_ok(&pol, NULL, "a100"));
	assert_true(hb_policy_gpu_ok(&pol, "nvidia_a100_1g.10gb", "1g.10gb"));
	assert_false(hb_policy_gpu_ok(&pol, "1g.10gb", "3g.40gb"));
	assert_false(hb_policy_gpu_ok(&pol, "1g.10gb", "a100"));
	assert_true(hb_gpu_is_mig("3g.40gb"));
	assert_false(hb_gpu_is_mig("a100"));
	assert_false(hb_gpu_is_mig("h100-80gb"));
	hb_policy_free(&pol);
}

static void test_minimal(void **state)
{
	struct hb_policy pol;

	(void)state;
	parse_ok("version: 1\n", &pol);
	assert_false(pol.kube_enabled);
	assert_null(hb_policy_queue(&pol, "a", "b"));
	assert_int_equal(pol.defaults.prefer, HB_PREFER_SLURM);
	assert_true(pol.defaults.burst);
	assert_int_equal(pol.defaults.budget, HB_UNSET);
	hb_policy_free(&pol);

	/* a kubernetes section with nothing in it: one queue, the
	 * namespace's */
	parse_ok("kubernetes:\n", &pol);
	assert_true(pol.kube_enabled);
	assert_int_equal(pol.nqueues, 1);
	assert_string_equal(hb_policy_queue(&pol, NULL, NULL)->name, "default");
	hb_policy_free(&pol);

	/* JSON is YAML too; a rule lifts an inherited budget with null */
	parse_ok("{\"defaults\": {\"budget\": {\"amount\": 10}},"
		 " \"rules\": [{\"account\": \"a\", \"budget\": null},"
		 " {\"account\": \"*\", \"max_premium\": 12.5}]}",
		 &pol);
	assert_int_equal(pol.defaults.budget, 10 * HB_MONEY_UNIT);
	assert_int_equal(pol.rules[0].budget, HB_UNSET);
	assert_null(pol.rules[1].account);
	assert_int_equal(pol.rules[1].premium_abs, 12500000);
	assert_string_equal(pol.rules[1].name, "rules[1]");
	hb_policy_free(&pol);

	/* numbers where strings are usual, and an untyped gpu_hour */
	parse_ok("defaults: {pilot: 2.5, max_staging_slack: 50}\n"
		 "slurm: {rates: {gpu_hour: 2, cpu_hour: 0.0125}}\n",
		 &pol);
	assert_int_equal(pol.defaults.pilot_bp, 250);
	assert_int_equal(pol.defaults.staging_slack_bp, 5000);
	assert_int_equal(pol.slurm_rates.gpu_hour, 2 * HB_MONEY_UNIT);
	assert_int_equal(pol.slurm_rates.cpu_hour, 12500);
	hb_policy_free(&pol);
}

/* Each bad policy, and the start of the message it must give. */
static void test_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "", "p.yaml: the policy is empty" },
		{ "- a\n", "p.yaml:1: expected a mapping, not a list" },
		{ "versoin: 1\n", "p.yaml:1: versoin: unknown key" },
		{ "version: 2\n", "p.yaml:1: version: only version 1" },
		{ "defaults:\n  prefer: fastest\n",
		  "p.yaml:2: defaults.prefer: 'fastest' is not one of: "
		  "slurm, kubernetes, cheapest, earliest" },
		{ "defaults:\n  time_limit: 5 hours\n",
		  "p.yaml:2: defaults.time_limit: duration '5 hours' is "
		  "malformed" },
		{ "defaults:\n  time_limit: 0\n",
		  "p.yaml:2: defaults.time_limit: must be more than 0" },
		{ "defaults:\n  burst: sometimes\n",
		  "p.yaml:2: defaults.burst: 'sometimes' is not one of: never, "
		  "allowed" },
		{ "defaults:\n  pilot: 120%\n",
		  "p.yaml:2: defaults.pilot: percentage '120%' is too large" },
		{ "defaults:\n  budget: {period: month}\n",
		  "p.yaml:2: defaults.budget: amount is required" },
		{ "defaults:\n  budget: {amount: 5, period: fortnight}\n",
		  "p.yaml:2: defaults.budget.period: 'fortnight' is not one "
		  "of: day, week, month, quarter, year" },
		{ "defaults:\n  budget:\n    amount: 5\n    sides: [cloud]\n",
		  "p.yaml:4: defaults.budget.sides[0]: 'cloud' is not slurm "
		  "or kubernetes" },
		{ "slurm:\n  partitions:\n    gpu:\n      rates:\n"
		  "        cpu_hour: -1\n",
		  "p.yaml:5: slurm.partitions.gpu.rates.cpu_hour: amount '-1' "
		  "is malformed" },
		{ "slurm:\n  partitions:\n    gpu:\n      rates:\n"
		  "        gpu_hour: {a100: cheap}\n",
		  "p.yaml:5: slurm.partitions.gpu.rates.gpu_hour.a100: amount "
		  "'cheap'" },
		{ "slurm:\n  partitions:\n    gpu:\n      node: {cpu: 4}\n",
		  "p.yaml:4: slurm.partitions.gpu.node.cpu: unknown key (known "
		  "here: cpus, memory, gpus)" },
		{ "slurm:\n  partitions:\n    gpu:\n      node: {memory: "
		  "lots}\n",
		  "p.yaml:4: slurm.partitions.gpu.node.memory: size 'lots'" },
		{ "slurm:\n  partitions:\n    gpu:\n      max_nodes: -2\n",
		  "p.yaml:4: slurm.partitions.gpu.max_nodes: expected a whole "
		  "number" },
		{ "slurm:\n  partitions:\n    gpu:\n      mig: [a100]\n",
		  "p.yaml:4: slurm.partitions.gpu.mig: 'a100' is not a MIG "
		  "profile" },
		{ "slurm:\n  partitions:\n    gpu:\n      gpu_types: [a 100]\n",
		  "p.yaml:4: slurm.partitions.gpu.gpu_types[0]: 'a 100' is "
		  "not a GPU type" },
		{ "slurm:\n  partitions:\n    gpu:\n      gpu_types: [a100, "
		  "A100]\n",
		  "p.yaml:4: slurm.partitions.gpu.gpu_types[1]: 'a100' is "
		  "listed twice" },
		{ "slurm:\n  default_partition: cpu\n  partitions:\n"
		  "    gpu: {}\n",
		  "p.yaml:2: slurm.default_partition: 'cpu' is not in "
		  "slurm.partitions" },
		{ "slurm:\n  partitions:\n    gpu:\n      shards: yes\n",
		  "p.yaml:4: slurm.partitions.gpu.shards: expected true or "
		  "false, not a string" },
		{ "kubernetes:\n  default_queue: x\n  queues: {y: {}}\n",
		  "p.yaml:2: kubernetes.default_queue: 'x' is not in "
		  "kubernetes.queues" },
		{ "kubernetes:\n  queues:\n    y: {teams: [a]}\n",
		  "p.yaml:3: kubernetes.queues.y.teams: unknown key" },
		{ "kubernetes:\n  startup: soon\n",
		  "p.yaml:2: kubernetes.startup: duration 'soon'" },
		{ "data:\n  - prefix: /a\n    side: slurm\n",
		  "p.yaml:2: data[0]: bandwidth is required" },
		{ "data:\n  - side: slurm\n", "p.yaml:2: data[0]: prefix is "
					      "required" },
		{ "data:\n  - prefix: relative/dir\n    side: slurm\n",
		  "p.yaml:2: data[0].prefix: expected an absolute path" },
		{ "data:\n  - prefix: /a\n    side: cloud\n",
		  "p.yaml:3: data[0].side: 'cloud' is not one of: slurm, "
		  "kubernetes" },
		{ "data:\n  - prefix: /a\n    side: slurm\n    bandwidth: "
		  "fast\n",
		  "p.yaml:4: data[0].bandwidth: expected a bandwidth" },
		{ "data:\n  - {prefix: /a, side: slurm, movable: false}\n"
		  "  - {prefix: /a/, side: slurm, movable: false}\n",
		  "p.yaml:3: data[1]: prefix /a is also data[0]" },
		{ "gpu_equivalence:\n  h100: h200\n  H100: [a100]\n",
		  "p.yaml:3: gpu_equivalence.H100: 'h100' is given twice" },
		{ "rules:\n  - account: a\n    preferred: slurm\n",
		  "p.yaml:3: rules[0].preferred: unknown key" },
		{ "rules:\n  - name: x\n  - name: 'a b'\n",
		  "p.yaml:3: rules[1].name: 'a b' is not a name" },
		{ "rules:\n  - account: a\n    max_premium: lots\n",
		  "p.yaml:3: rules[0].max_premium: amount 'lots'" },
		{ "rules: {a: 1}\n", "p.yaml:1: rules: expected a list" },
		{ "currency: US Dollar\n", "p.yaml:1: currency: 'US Dollar' "
					   "is not a name" },
		{ "a: 1\na: 2\n", "p.yaml:2: duplicate mapping key" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_policy pol;
		struct hb_err err = { 0 };
		int rc = hb_policy_parse(cases[i].text, strlen(cases[i].text),
					 "p.yaml", &pol, &err);

		if (rc == 0)
			fail_msg("case %zu accepted: %s", i, cases[i].text);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)) &&
		    !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: got '%s', want '%s'", i, err.msg,
				 cases[i].msg);
		/* nothing is left behind */
		assert_null(pol.partitions);
		assert_null(pol.source_name);
	}
}

/* ---- snapshots -------------------------------------------------------- */

static const char snap_text[] =
	"now: 2026-11-21T08:00:00Z\n"
	"utc_offset: \"+01:00\"\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch: {expected_start: 6h10m, pending: 42, idle_nodes: 0}\n"
	"    gpu: {expected_start: 2026-11-21T10:00:00Z, pending: 3}\n"
	"    debug: {pending: 0}\n"
	"kubernetes:\n"
	"  queues:\n"
	"    burst:\n"
	"      expected_wait: 30m\n"
	"      pending: 2\n"
	"      free: {cpus: 512, memory: 4Ti, gpus: {H100: 8, a100: 2}}\n"
	"    idle: {}\n"
	"data:\n"
	"  /lustre/era5: 800G\n"
	"  s3://bucket/x: 12345\n"
	"spend:\n"
	"  physics:\n"
	"    month: {slurm: 120.5, kubernetes: \"4900.000001\"}\n"
	"    day: {kubernetes: 10}\n";

static void test_snapshot(void **state)
{
	struct hb_snapshot s, s2;
	struct hb_err err = { 0 };
	const struct hb_snap_partition *p;
	const struct hb_snap_queue *q;
	const struct hb_snap_spend *sp;
	struct hb_buf b;
	cJSON *doc, *doc2;

	(void)state;
	if (hb_snapshot_parse(snap_text, strlen(snap_text), "s.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(s.now, 1795248000);
	assert_int_equal(s.utc_offset, 3600);
	p = hb_snapshot_partition(&s, "batch");
	assert_non_null(p);
	assert_int_equal(p->wait, 22200);
	assert_true(p->wait_known && p->idle_known);
	assert_int_equal(p->pending, 42);
	p = hb_snapshot_partition(&s, "gpu");
	assert_int_equal(p->wait, 7200); /* an instant, from now */
	assert_false(p->idle_known);
	p = hb_snapshot_partition(&s, "debug");
	assert_false(p->wait_known);
	q = hb_snapshot_queue(&s, "burst");
	assert_int_equal(q->wait, 1800);
	assert_int_equal(q->free_cpus, 512);
	assert_int_equal(q->free_mem_mb, 4u << 20);
	assert_int_equal(q->nfree_gpus, 2);
	assert_string_equal(q->free_gpus[0].type, "h100");
	q = hb_snapshot_queue(&s, "idle");
	assert_false(q->free_known || q->wait_known);
	assert_int_equal(hb_snapshot_data(&s, "/lustre/era5")->size,
			 800000000000ULL);
	sp = hb_snapshot_spend(&s, "physics", HB_PERIOD_MONTH);
	assert_int_equal(sp->spent[HB_SIDE_SLURM], 120500000);
	assert_int_equal(sp->spent[HB_SIDE_KUBE], 4900000001LL);
	assert_null(hb_snapshot_spend(&s, "physics", HB_PERIOD_YEAR));

	/* written out and read back: the same document */
	doc = hb_snapshot_to_json(&s);
	assert_non_null(doc);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_yaml(doc, &b), 0);
	if (hb_snapshot_parse(b.data, b.len, "s2.yaml", &s2, &err))
		fail_msg("%s\n%s", err.msg, b.data);
	doc2 = hb_snapshot_to_json(&s2);
	assert_true(cJSON_Compare(doc, doc2, 1));
	assert_int_equal(hb_snapshot_partition(&s2, "gpu")->wait, 7200);
	assert_false(hb_snapshot_partition(&s2, "debug")->wait_known);
	cJSON_Delete(doc);
	cJSON_Delete(doc2);
	hb_buf_free(&b);
	hb_snapshot_free(&s2);

	/* setters and charges */
	assert_int_equal(hb_snapshot_set_partition(&s, "batch", -5, 1, 2), 0);
	assert_int_equal(hb_snapshot_partition(&s, "batch")->wait, 0);
	assert_int_equal(hb_snapshot_set_partition(&s, "new", 60, 1, 2), 0);
	assert_int_equal(s.nparts, 4);
	assert_int_equal(hb_snapshot_charge(&s, "physics", HB_PERIOD_MONTH,
					    HB_SIDE_KUBE, 1000000),
			 0);
	sp = hb_snapshot_spend(&s, "physics", HB_PERIOD_MONTH);
	assert_int_equal(sp->spent[HB_SIDE_KUBE], 4901000001LL);
	assert_int_equal(hb_snapshot_charge(&s, "bio", HB_PERIOD_WEEK,
					    HB_SIDE_SLURM, HB_MONEY_MAX - 2),
			 0);
	assert_int_equal(
		hb_snapshot_charge(&s, "bio", HB_PERIOD_WEEK, HB_SIDE_SLURM, 5),
		0);
	assert_int_equal(hb_snapshot_spend(&s, "bio", HB_PERIOD_WEEK)->spent[0],
			 HB_MONEY_MAX); /* saturates */
	assert_int_equal(hb_snapshot_charge(&s, "bio", 9, 0, 1), HB_EINVAL);
	assert_int_equal(hb_snapshot_charge(&s, "bio", 0, 2, 1), HB_EINVAL);
	assert_int_equal(hb_snapshot_set_queue_gpus(&s, "fresh", "A100", 3), 0);
	q = hb_snapshot_queue(&s, "fresh");
	assert_false(q->free_known);
	assert_string_equal(q->free_gpus[0].type, "a100");
	for (int i = 0; i < HB_POLICY_MAX_ITEMS + 5; i++) {
		char name[32];
		int rc;

		snprintf(name, sizeof(name), "d%d", i);
		rc = hb_snapshot_set_data(&s, name, (uint64_t)i);
		if (rc) {
			assert_int_equal(rc, HB_ETOOBIG);
			break;
		}
	}
	assert_int_equal(s.ndata, HB_POLICY_MAX_ITEMS);
	hb_snapshot_free(&s);
	hb_snapshot_free(&s); /* twice is fine */
}

static void test_snapshot_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "slurm: {}\n", "s.yaml:1: now: is required" },
		{ "now: yesterday\n", "s.yaml:1: now: expected an instant" },
		{ "now: 1795248000\nutc_offset: 1\n",
		  "s.yaml:2: utc_offset: expected an offset" },
		{ "now: 1\nslurm:\n  partitions:\n    b: {expected_start: "
		  "soon}\n",
		  "s.yaml:4: slurm.partitions.b.expected_start: duration "
		  "'soon'" },
		{ "now: 1\nslurm:\n  partitions:\n    b: {pending: -1}\n",
		  "s.yaml:4: slurm.partitions.b.pending: expected a whole" },
		{ "now: 1\nslurm:\n  partitions:\n    b: {queued: 1}\n",
		  "s.yaml:4: slurm.partitions.b.queued: unknown key" },
		{ "now: 1\nkubernetes:\n  queues:\n    q:\n      free: {gpus: "
		  "{h100: many}}\n",
		  "s.yaml:5: kubernetes.queues.q.free.gpus.h100: expected a "
		  "whole number" },
		{ "now: 1\ndata:\n  /x: big\n",
		  "s.yaml:3: data./x: size 'big'" },
		{ "now: 1\nspend:\n  a:\n    fortnight: {slurm: 1}\n",
		  "s.yaml:4: spend.a.fortnight: unknown key" },
		{ "now: 1\nspend:\n  a:\n    month: {cloud: 1}\n",
		  "s.yaml:4: spend.a.month.cloud: unknown key" },
		{ "now: 1\nspend:\n  a:\n    month: {slurm: 1.0000001}\n",
		  "s.yaml:4: spend.a.month.slurm: amount" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_snapshot s;
		struct hb_err err = { 0 };
		int rc = hb_snapshot_parse(cases[i].text, strlen(cases[i].text),
					   "s.yaml", &s, &err);

		if (rc == 0)
			fail_msg("case %zu accepted", i);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)))
			fail_msg("case %zu: got '%s', want '%s'", i, err.msg,
				 cases[i].msg);
		assert_null(s.parts);
	}
}

static int64_t at(const char *s)
{
	int64_t t;

	assert_int_equal(hb_parse_instant(s, &t), 0);
	return t;
}

/* Budget periods begin at local midnight, ISO Monday, the 1st of the
 * month, of the quarter, of the year. */
static void test_period_start(void **state)
{
	int64_t now = at("2026-11-25T11:22:00Z"); /* a Wednesday */

	(void)state;
	assert_int_equal(hb_period_start(HB_PERIOD_DAY, now, 0),
			 at("2026-11-25T00:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_WEEK, now, 0),
			 at("2026-11-23T00:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_MONTH, now, 0),
			 at("2026-11-01T00:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_QUARTER, now, 0),
			 at("2026-10-01T00:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_YEAR, now, 0),
			 at("2026-01-01T00:00:00Z"));
	/* a Monday is its own week's start */
	assert_int_equal(hb_period_start(HB_PERIOD_WEEK,
					 at("2026-11-23T00:00:00Z"), 0),
			 at("2026-11-23T00:00:00Z"));
	/* one hour east: 23:30 UTC is already December there */
	now = at("2026-11-30T23:30:00Z");
	assert_int_equal(hb_period_start(HB_PERIOD_DAY, now, 3600),
			 at("2026-11-30T23:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_MONTH, now, 3600),
			 at("2026-11-30T23:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_QUARTER, now, 3600),
			 at("2026-09-30T23:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_MONTH, now, 0),
			 at("2026-11-01T00:00:00Z"));
	/* five hours west: 03:00 UTC on New Year's Day is still last year */
	now = at("2027-01-01T03:00:00Z");
	assert_int_equal(hb_period_start(HB_PERIOD_YEAR, now, -5 * 3600),
			 at("2026-01-01T05:00:00Z"));
	assert_int_equal(hb_period_start(HB_PERIOD_YEAR, now, 0),
			 at("2027-01-01T00:00:00Z"));
	/* before 1970: 1969-12-31 was a Wednesday */
	assert_int_equal(hb_period_start(HB_PERIOD_DAY, -1, 0), -86400);
	assert_int_equal(hb_period_start(HB_PERIOD_WEEK, -1, 0), -3 * 86400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_money),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_bandwidth),
		cmocka_unit_test(test_percent_instant),
		cmocka_unit_test(test_civil),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_edges),
		cmocka_unit_test(test_format_random),
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_snapshot_errors),
		cmocka_unit_test(test_period_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
