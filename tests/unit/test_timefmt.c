/*
 * test_timefmt.c - the hb_time_* family: Slurm durations, Slurm dates
 * (the check and the instant, against a fixed clock and zone), RFC 3339
 * read (plain, HB_TIME_STRICT, HB_TIME_LENIENT) and written, and the
 * local dates the job_submit plugin writes back.
 *
 * Expected instants were worked out with date(1), not with the code
 * under test; the formatters are also held against strftime().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hpcbridge/error.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/units.h"
#include "testutil.h"

#define H 3600
#define D 86400
/* Saturday 2026-11-21 08:00:00 UTC, the tests' clock. */
#define NOW 1795248000LL

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Slurm durations -------------------------------------------------- */

static void test_duration_parse(void **state)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t want;
	} cases[] = {
		{ "10", 0, 600 },
		{ "0", 0, 0 },
		{ "10:30", 0, 660 }, /* M:S, rounded up to whole minutes */
		{ "0:01", 0, 60 },
		{ "2:30:15", 0, 2 * H + 31 * 60 },
		{ "1-0", 0, D },
		{ "1-2", 0, D + 2 * H },
		{ "1-2:30", 0, D + 2 * H + 30 * 60 },
		{ "1-2:30:45", 0, D + 2 * H + 31 * 60 },
		{ "UNLIMITED", 0, HB_TIME_UNLIMITED },
		{ "infinite", 0, HB_TIME_UNLIMITED },
		{ "-1", 0, HB_TIME_UNLIMITED },
		{ "35791393", 0, 2147483580 }, /* Slurm's int, to the minute */
		{ "35791394", HB_ERANGE, 0 },
		{ "", HB_EINVAL, 0 },
		{ "1h", HB_EINVAL, 0 },
		{ " 10", HB_EINVAL, 0 },
		{ "1:2:3:4", HB_EINVAL, 0 },
		{ "1-2-3", HB_EINVAL, 0 },
		{ "-2", HB_EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < N_OF(cases); i++) {
		uint64_t v = 12345;
		int rc = hb_parse_slurm_time(cases[i].s, &v);

		if (rc != cases[i].rc)
			fail_msg("'%s': rc %d, want %d", cases[i].s, rc,
				 cases[i].rc);
		if (!rc && v != cases[i].want)
			fail_msg("'%s': %llu, want %llu", cases[i].s,
				 (unsigned long long)v,
				 (unsigned long long)cases[i].want);
		if (rc && v != 12345)
			fail_msg("'%s': refused, but wrote %llu", cases[i].s,
				 (unsigned long long)v);
	}
}

static void test_duration_format(void **state)
{
	char out[32];

	(void)state;
	hb_format_slurm_time(0, out);
	assert_string_equal(out, "00:00:00");
	hb_format_slurm_time(H + 2 * 60 + 3, out);
	assert_string_equal(out, "01:02:03");
	hb_format_slurm_time(D - 1, out);
	assert_string_equal(out, "23:59:59");
	hb_format_slurm_time(D, out);
	assert_string_equal(out, "1-00:00:00");
	hb_format_slurm_time(12 * D + 4 * H + 5 * 60 + 6, out);
	assert_string_equal(out, "12-04:05:06");
	hb_format_slurm_time(HB_TIME_UNLIMITED, out);
	assert_string_equal(out, "UNLIMITED");

	/* read back to the same minute count */
	for (uint64_t m = 0; m < 5 * 1440; m += 13) {
		uint64_t back = 1;

		hb_format_slurm_time(m * 60, out);
		assert_int_equal(hb_parse_slurm_time(out, &back), 0);
		assert_true(back == m * 60);
	}
}

/* ---- Slurm dates: the check ------------------------------------------- */

static void test_slurm_date_ok(void **state)
{
	static const char *const ok[] = {
		"now",
		"NOW",
		"now+1hour",
		"now-2days",
		"now+90",
		"now + 3 weeks",
		"today",
		"tomorrow",
		"midnight",
		"noon",
		"fika",
		"teatime",
		"tomorrow 10:00", /* several forms in a row, as Slurm */
		"noon fika",
		"10:00",
		"9:05:30",
		"10:00 PM",
		"10:00am",
		"2026-11-21",
		"2026-11-21T20:00",
		"2026-11-21T20:00:00",
		"2024-02-29",
		"11/22",
		"11/22/26",
		"11.22.26",
		"1122",
		"112226",
		"122", /* a short date */
		"\t10:00",
		"-1122",
		"uts1000000",
		"uts1795291200",
		"UTS1795291200",
		"uts\t1795291200", /* strtol() skips blanks */
	};
	static const char *const bad[] = {
		"",
		" ",
		"later",
		"now+",
		"now+1fortnight",
		"now+1234567890123", /* past Slurm's long */
		" now+1hour",	     /* Slurm's absolute-index quirk */
		"nowish",
		"25:00",
		"10:60",
		"10:00:60",
		"13:00pm",
		"13/01",
		"00/10",
		"11/32",
		"11/00",
		"2026-13-01",
		"2026-11-32",
		"uts999999",
		"uts-5",
		"uts12x",
		"uts",
	};

	(void)state;
	for (size_t i = 0; i < N_OF(ok); i++)
		if (!hb_time_slurm_date_ok(ok[i]))
			fail_msg("'%s' refused", ok[i]);
	for (size_t i = 0; i < N_OF(bad); i++)
		if (hb_time_slurm_date_ok(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

/* ---- Slurm dates: the instant ----------------------------------------- */

struct date_case {
	const char *s;
	int32_t off; /* the zone, seconds east of UTC */
	int64_t want;
};

static void run_dates(const struct date_case *c, size_t n, int64_t now)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t = -7;

		if (hb_time_slurm_date(c[i].s, now, c[i].off, &t))
			fail_msg("'%s' (offset %d) refused", c[i].s,
				 (int)c[i].off);
		if (t != c[i].want)
			fail_msg("'%s' (offset %d): %lld, want %lld", c[i].s,
				 (int)c[i].off, (long long)t,
				 (long long)c[i].want);
	}
}

/* Each refused in UTC, leaving the instant alone. */
static void run_dates_bad(const char *const *bad, size_t n, int64_t now)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t = -7;

		if (!hb_time_slurm_date(bad[i], now, 0, &t))
			fail_msg("'%s' accepted", bad[i]);
		if (t != -7)
			fail_msg("'%s': refused, but wrote %lld", bad[i],
				 (long long)t);
	}
}

/* now[{+|-}N[units]]: plain arithmetic on the clock, whatever the zone. */
static void test_slurm_date_now(void **state)
{
	static const struct date_case cases[] = {
		{ "now", 0, NOW },
		{ "NOW", 5 * H, NOW },
		{ "  now", 0, NOW },
		{ "now+90", 0, NOW + 90 },
		{ "now+3seconds", 0, NOW + 3 },
		{ "now+1second", 0, NOW + 1 },
		{ "now+1minute", 0, NOW + 60 },
		{ "now+5minutes", 0, NOW + 300 },
		{ "now+4hours", -8 * H, NOW + 4 * H },
		{ "now+1hour", 0, NOW + H },
		{ "now + 2 days", 0, NOW + 2 * D },
		{ "now+1day", 0, NOW + D },
		{ "now-1week", 0, NOW - 7 * D },
		{ "now+5WEEKS", 0, NOW + 35 * D },
		{ "now-0", 0, NOW },
		{ "now+999999999", 0, NOW + 999999999 },
	};
	static const char *const bad[] = {
		"now+",	  "now-",	 "now*2",	   "now+3fortnights",
		"now+1h", "now 5",	 "now+1000000000", /* ten digits */
		"now+-1", "now+1 day x",
	};
	(void)state;
	run_dates(cases, N_OF(cases), NOW);
	run_dates_bad(bad, N_OF(bad), NOW);
}

/* The words, clock times and dates, in the zone utc_offset gives. */
static void test_slurm_date_local(void **state)
{
	static const struct date_case cases[] = {
		/* UTC: 08:00 on Saturday 2026-11-21 */
		{ "today", 0, NOW - 8 * H },
		{ "tomorrow", 0, NOW + 16 * H },
		{ "midnight", 0, NOW + 16 * H },
		{ "noon", 0, NOW + 4 * H },
		{ "fika", 0, NOW + 7 * H },
		{ "teatime", 0, NOW + 8 * H },
		{ "Teatime", 0, NOW + 8 * H },
		{ "20:00", 0, NOW + 12 * H },
		{ "07:00", 0, NOW + 23 * H }, /* past: tomorrow */
		{ "08:00", 0, NOW + 24 * H }, /* now counts as past */
		{ "08:00:01", 0, NOW + 1 },
		{ "8:00pm", 0, NOW + 12 * H },
		{ "8:00 PM", 0, NOW + 12 * H },
		{ "10:30:15 AM", 0, NOW + 2 * H + 1815 },
		{ "12:00am", 0, NOW + 16 * H },
		{ "12:00pm", 0, NOW + 4 * H },
		{ "23:5", 0, NOW + 15 * H + 5 * 60 },
		/* 18:00 local, ten hours east */
		{ "today", 10 * H, NOW - 18 * H },
		{ "noon", 10 * H, NOW + 18 * H },
		{ "teatime", 10 * H, NOW + 22 * H },
		{ "20:00", 10 * H, NOW + 2 * H },
		/* 13:00 local: noon is past, fika is not */
		{ "noon", 5 * H, NOW + 23 * H },
		{ "fika", 5 * H, NOW + 2 * H },
		/* 12:00 local: noon is already past */
		{ "noon", 4 * H, NOW + D },
		/* 23:00 on Friday the 20th, nine hours west */
		{ "today", -9 * H, NOW - 23 * H },
		{ "tomorrow", -9 * H, NOW + H },
		{ "23:30", -9 * H, NOW + 1800 },
		{ "22:59", -9 * H, NOW + D - 60 },
		/* half-hour zones */
		{ "14:00", 5 * H + 1800, NOW + 30 * 60 },
		{ "midnight", -(3 * H + 1800), NOW + 19 * H + 1800 },
		/* YYYY-MM-DD[THH[:MM[:SS]]], local */
		{ "2026-11-21T20:00:00", 0, NOW + 12 * H },
		{ "2026-11-21T20:00", 0, NOW + 12 * H },
		{ "2026-11-21T20", 0, NOW + 12 * H },
		{ "2026-11-22", 0, NOW + 16 * H },
		{ "2026-11-21T20:00:00", H, NOW + 11 * H },
		{ "2026-11-21T20:00:00", -H, NOW + 13 * H },
		{ "2024-02-29", 0, 1709164800 }, /* a leap day */
		{ "2023-02-29", 0, 1677628800 }, /* runs into March 1 */
		{ "2026-02-31", 0, 1772323200 + 2 * D },
		{ "2000-02-29T12", 0, 951782400 + 12 * H },
		/* MM/DD[/YY], MM.DD[.YY], MMDD[YY], this year by default */
		{ "11/22", 0, NOW + 16 * H },
		{ "11.22", 0, NOW + 16 * H },
		{ "1122", 0, NOW + 16 * H },
		{ "11/22/27", 0, 1826841600 },
		{ "11.22.27", 0, 1826841600 },
		{ "112227", 0, 1826841600 },
		{ "11/22-06:00", 0, NOW + 22 * H },
		{ "1122T06:00", 0, NOW + 22 * H },
		{ "11/22/26-06:00:30", 0, NOW + 22 * H + 30 },
		{ "11/22/26-06:00", 2 * H, NOW + 20 * H },
		{ "02/29/28", 0, 1835395200 },
		{ "0229", 0, 1772323200 }, /* 2026 has no Feb 29 */
		{ "uts1795291200", 0, 1795291200 },
		{ "uts1795291200", 7 * H, 1795291200 },
		{ "uts5", 0, 5 },
	};
	static const char *const bad[] = {
		"",
		"later",
		"2026-13-01",
		"2026-00-10",
		"2026-11-32",
		"2026-11-00",
		"2026-11-21T24",
		"2026-11-21T20:60",
		"2026-11-21T20:00:60",
		"2026-11-21T20:00:00Z",
		"2026-11-21 20:00",
		"25:00",
		"13:00pm",
		"0:00am",
		"10:00 xm",
		"11/32",
		"13/01",
		"11/22/",
		"11-22",
		"112",
		"11/22-25:00",
		"uts",
		"uts-5",
		"uts1234567890123",
		"tomorrow 10:00", /* the check takes it; the instant does not */
	};
	(void)state;
	run_dates(cases, N_OF(cases), NOW);
	run_dates_bad(bad, N_OF(bad), NOW);
}

/* In a leap year, MMDD reads Feb 29 of the clock's own year. */
static void test_slurm_date_leap(void **state)
{
	/* 2028-01-15 12:00 UTC */
	static const struct date_case cases[] = {
		{ "0229", 0, 1835395200 },
		{ "02/29", 0, 1835395200 },
		{ "02.29", -H, 1835395200 + H },
		{ "0301", 0, 1835395200 + D },
	};

	(void)state;
	run_dates(cases, N_OF(cases), 1831550400);
}

/* A clock before 1970: days still start at midnight. */
static void test_slurm_date_before_1970(void **state)
{
	/* 1969-12-31 12:00 UTC */
	static const struct date_case cases[] = {
		{ "today", 0, -D },
		{ "tomorrow", 0, 0 },
		{ "noon", 0, D / 2 }, /* noon now counts as past */
		{ "11:00", 0, D / 2 - H },
		{ "today", -13 * H, -2 * D + 13 * H },
		{ "now-1day", 0, -D - D / 2 },
	};

	(void)state;
	run_dates(cases, N_OF(cases), -D / 2);
}

/* ---- RFC 3339 ------------------------------------------------------- */

struct rfc_case {
	const char *s;
	int64_t want;
};

static void run_rfc(const struct rfc_case *c, size_t n, unsigned flags)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t = -7;
		int rc = hb_time_rfc3339_parse_flags(c[i].s, flags, &t);

		if (rc)
			fail_msg("'%s' (flags %u) refused: %d", c[i].s, flags,
				 rc);
		if (t != c[i].want)
			fail_msg("'%s' (flags %u): %lld, want %lld", c[i].s,
				 flags, (long long)t, (long long)c[i].want);
		/* and with nothing to write to */
		if (hb_time_rfc3339_parse_flags(c[i].s, flags, NULL))
			fail_msg("'%s' (flags %u) refused as a check", c[i].s,
				 flags);
	}
}

static void run_rfc_bad(const char *const *bad, size_t n, unsigned flags)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t = -7;
		int rc = hb_time_rfc3339_parse_flags(bad[i], flags, &t);

		if (rc != HB_EINVAL)
			fail_msg("'%s' (flags %u): rc %d, want HB_EINVAL",
				 bad[i], flags, rc);
		if (t != -7)
			fail_msg("'%s' (flags %u): refused, but wrote %lld",
				 bad[i], flags, (long long)t);
		if (hb_time_rfc3339_parse_flags(bad[i], flags, NULL) !=
		    HB_EINVAL)
			fail_msg("'%s' (flags %u) passes as a check", bad[i],
				 flags);
	}
}

/* What every reading takes alike. */
static const struct rfc_case rfc_common[] = {
	{ "1970-01-01T00:00:00Z", 0 },
	{ "2024-05-01T10:00:00Z", 1714557600 },
	{ "2024-05-01T10:00:00z", 1714557600 },
	{ "2024-05-01T10:00:00.123456Z", 1714557600 },
	{ "2024-05-01T10:00:00.999999999Z", 1714557600 }, /* dropped */
	{ "2024-05-01T12:30:00+02:30", 1714557600 },
	{ "2024-05-01T08:00:00-02:00", 1714557600 },
	{ "2024-05-01T10:00:00-00:00", 1714557600 },
	{ "2024-05-01T10:00:00.5+00:00", 1714557600 },
	{ "2024-05-01T23:59:00+23:59", 1714521600 },
	{ "2024-02-29T12:00:00Z", 1709208000 },
	{ "2000-02-29T00:00:00Z", 951782400 },
	{ "2024-02-30T00:00:00Z", 1709251200 }, /* runs into March 1 */
	{ "2023-02-29T00:00:00Z", 1677628800 },
	{ "2024-04-31T00:00:00Z", 1714521600 }, /* May 1 */
	{ "1972-06-30T23:59:60Z", 78796800 },	/* leap second: next one */
	{ "1969-12-31T23:59:59Z", -1 },
	{ "1969-12-31T23:59:59.9Z", -1 }, /* dropped, not rounded */
	{ "1970-01-01T01:00:00+01:00", 0 },
	{ "1900-03-01T00:00:00Z", -2203891200 },
	{ "2100-03-01T00:00:00Z", 4107542400 },
	{ "0000-01-01T00:00:00Z", -62167219200 },
	{ "9999-12-31T23:59:59Z", 253402300799 },
};

static void test_rfc3339_parse(void **state)
{
	static const struct rfc_case more[] = {
		{ "2024-05-01t08:00:00-02:00", 1714557600 },
		{ "2024-05-01 10:00:00Z", 1714557600 },
		{ "2024-05-01 10:00:00+00:00", 1714557600 },
	};
	static const char *const bad[] = {
		"",
		"2024",
		"2024-05-01",
		"2024-05-01T10:00:00", /* no zone */
		"2024-05-01T10:00Z",
		"2024-05-01T10:00:00Zx",
		"2024-05-01T10:00:00Z ",
		" 2024-05-01T10:00:00Z",
		"2024-05-01T10:00:00.Z", /* a fraction needs a digit */
		"2024-05-01T10:00:00,5Z",
		"2024-05-01T10:00:00+02",
		"2024-05-01T10:00:00+0200",
		"2024-05-01T10:00:00+2:00",
		"2024-05-01T10:00:00+24:00",
		"2024-05-01T10:00:00+23:60",
		"2024-05-01T10:00:00+02:00Z",
		"2024-05-01T10:00:00 Z",
		"2024-00-01T10:00:00Z",
		"2024-13-01T10:00:00Z",
		"2024-05-00T10:00:00Z",
		"2024-05-32T10:00:00Z",
		"2024-05-01T24:00:00Z",
		"2024-05-01T10:60:00Z",
		"2024-05-01T10:00:61Z",
		"2024-5-01T10:00:00Z",
		"2024-05-1T10:00:00Z",
		"2024-05-01T1:00:00Z",
		"24-05-01T10:00:00Z",
		"12024-05-01T10:00:00Z",
		"2024/05/01T10:00:00Z",
		"2024-05-01X10:00:00Z",
		"2024-05-01T10-00-00Z",
		"+2024-05-01T10:00:00Z",
		"2024-05-01T10:00:00.1a2Z",
	};
	int64_t t = -7;

	(void)state;
	run_rfc(rfc_common, N_OF(rfc_common), 0);
	run_rfc(more, N_OF(more), 0);
	run_rfc_bad(bad, N_OF(bad), 0);
	assert_int_equal(hb_time_rfc3339_parse(NULL, &t), HB_EINVAL);
	assert_int_equal(t, -7);
	assert_int_equal(hb_time_rfc3339_parse_flags(NULL, HB_TIME_LENIENT, &t),
			 HB_EINVAL);
	assert_int_equal(t, -7);

	/* hb_time_rfc3339_parse() is the reading with no flags */
	for (size_t i = 0; i < N_OF(rfc_common); i++) {
		t = -7;
		assert_int_equal(hb_time_rfc3339_parse(rfc_common[i].s, &t), 0);
		assert_true(t == rfc_common[i].want);
	}
	for (size_t i = 0; i < N_OF(bad); i++)
		assert_int_equal(hb_time_rfc3339_parse(bad[i], &t), HB_EINVAL);
}

/* JSON Schema's date-time: as the plain reading, but no blank for 'T'. */
static void test_rfc3339_strict(void **state)
{
	static const struct rfc_case more[] = {
		{ "2024-05-01t08:00:00-02:00", 1714557600 },
	};
	static const char *const bad[] = {
		"2024-05-01 10:00:00Z",	     "2024-05-01 10:00:00+00:00",
		"2024-05-01T10:00:00",	     "2024-05-01T10:00:00.Z",
		"2024-05-01T10:00:00+24:00", "2024-05-01T10:00:61Z",
		"2024-5-01T10:00:00Z",
	};

	(void)state;
	run_rfc(rfc_common, N_OF(rfc_common), HB_TIME_STRICT);
	run_rfc(more, N_OF(more), HB_TIME_STRICT);
	run_rfc_bad(bad, N_OF(bad), HB_TIME_STRICT);
}

/* strptime("%Y-%m-%dT%H:%M:%S") and a zone: the cluster objects' times. */
static void test_rfc3339_lenient(void **state)
{
	static const struct rfc_case more[] = {
		{ "2024-5-1T8:0:0Z", 1714550400 },
		{ " 2024- 5- 1T 8: 0: 0Z", 1714550400 },
		{ "\t2024-05-01T08:00:00Z", 1714550400 },
		{ "2024-05-01T08:00:61Z", 1714550400 + 61 },
		{ "2024-05-01T08:00:00.Z", 1714550400 },
		{ "2024-05-01T08:00:00.25z", 1714550400 },
		{ "2024-05-01T08:00:00+99:99", 1714550400 - 99 * H - 99 * 60 },
		{ "2024-05-01T08:00:00-24:00", 1714550400 + D },
		{ "24-1-1T0:0:0Z", -61409836800 },
		{ "0-1-1T0:0:0Z", -62167219200 },
	};
	static const char *const bad[] = {
		"2024-05-01t08:00:00Z", /* 'T' only */
		"2024-05-01 08:00:00Z",
		"2024-05-01T08:00:00",
		"2024-05-01T08:00:00 Z",
		"2024-05-01T08:00:00Z ",
		"2024-05-01T08:00:62Z",
		"2024-05-01T24:00:00Z",
		"2024-05-01T08:60:00Z",
		"2024-13-01T08:00:00Z",
		"2024-00-01T08:00:00Z",
		"2024-05-32T08:00:00Z",
		"2024-05-00T08:00:00Z",
		"12024-05-01T08:00:00Z", /* four digits at most */
		"2024-1201T08:00:00Z",	 /* two digits at most */
		"+2024-05-01T08:00:00Z",
		"2024-05-01T08:00:00+0a:00",
		"2024-05-01T08:00:00+01:0",
		"2024-05-01T08:00:00+1:00",
		"2024-05-01T08:00:00+0100",
		"2024-05-01T08:00:00.1x",
		"",
	};

	(void)state;
	run_rfc(rfc_common, N_OF(rfc_common), HB_TIME_LENIENT);
	run_rfc(more, N_OF(more), HB_TIME_LENIENT);
	run_rfc_bad(bad, N_OF(bad), HB_TIME_LENIENT);
}

static void test_rfc3339_format(void **state)
{
	static const struct {
		int64_t t;
		const char *want;
	} cases[] = {
		{ 0, "1970-01-01T00:00:00Z" },
		{ -1, "1969-12-31T23:59:59Z" },
		{ -D, "1969-12-31T00:00:00Z" },
		{ -D - 1, "1969-12-30T23:59:59Z" },
		{ 1714557600, "2024-05-01T10:00:00Z" },
		{ 1709208000, "2024-02-29T12:00:00Z" },
		{ 1709251200 - 1, "2024-02-29T23:59:59Z" },
		{ 951782400, "2000-02-29T00:00:00Z" },
		{ 4107542400 - D, "2100-02-28T00:00:00Z" }, /* not leap */
		{ -2203891200, "1900-03-01T00:00:00Z" },
		{ 253402300799, "9999-12-31T23:59:59Z" },
		{ 253402300800, "10000-01-01T00:00:00Z" },
		{ -62167219200, "0000-01-01T00:00:00Z" },
		{ -62167219201, "-001-12-31T23:59:59Z" },
		{ INT64_MAX, "292277026596-12-04T15:30:07Z" },
		{ INT64_MIN, "-292277022657-01-27T08:29:52Z" },
	};
	char out[32];

	(void)state;
	for (size_t i = 0; i < N_OF(cases); i++) {
		hb_time_rfc3339_format(cases[i].t, out);
		if (strcmp(out, cases[i].want))
			fail_msg("%lld: '%s', want '%s'", (long long)cases[i].t,
				 out, cases[i].want);
	}
}

static void test_rfc3339_format_ms(void **state)
{
	static const struct {
		int64_t ms;
		const char *want;
	} cases[] = {
		{ 0, "1970-01-01T00:00:00.000Z" },
		{ 1, "1970-01-01T00:00:00.001Z" },
		{ 999, "1970-01-01T00:00:00.999Z" },
		{ 1000, "1970-01-01T00:00:01.000Z" },
		{ -1, "1969-12-31T23:59:59.999Z" },
		{ -1000, "1969-12-31T23:59:59.000Z" },
		{ -1001, "1969-12-31T23:59:58.999Z" },
		{ 1714557600123, "2024-05-01T10:00:00.123Z" },
		{ 1709251199999, "2024-02-29T23:59:59.999Z" },
		{ 253402300799999, "9999-12-31T23:59:59.999Z" },
		{ INT64_MAX, "292278994-08-17T07:12:55.807Z" },
	};
	char out[32];

	(void)state;
	for (size_t i = 0; i < N_OF(cases); i++) {
		hb_time_rfc3339_format_ms(cases[i].ms, out);
		if (strcmp(out, cases[i].want))
			fail_msg("%lld ms: '%s', want '%s'",
				 (long long)cases[i].ms, out, cases[i].want);
	}
}

/* Written and read back; read and written in the canonical form. */
static void test_rfc3339_round_trip(void **state)
{
	static const struct {
		const char *in, *out;
	} canon[] = {
		{ "2024-05-01T12:30:00.5+02:30", "2024-05-01T10:00:00Z" },
		{ "2024-05-01 10:00:00z", "2024-05-01T10:00:00Z" },
		{ "2024-12-31T23:00:00-01:00", "2025-01-01T00:00:00Z" },
		{ "2025-01-01T00:30:00+01:00", "2024-12-31T23:30:00Z" },
		{ "2024-02-28T23:00:00-01:00", "2024-02-29T00:00:00Z" },
		{ "2023-02-28T23:00:00-01:00", "2023-03-01T00:00:00Z" },
		{ "2016-12-31T23:59:60Z", "2017-01-01T00:00:00Z" },
		{ "2024-06-31T00:00:00Z", "2024-07-01T00:00:00Z" },
	};
	char out[32];
	int64_t t;

	(void)state;
	for (size_t i = 0; i < N_OF(canon); i++) {
		assert_int_equal(hb_time_rfc3339_parse(canon[i].in, &t), 0);
		hb_time_rfc3339_format(t, out);
		if (strcmp(out, canon[i].out))
			fail_msg("'%s': '%s', want '%s'", canon[i].in, out,
				 canon[i].out);
	}
	/* every few hours from year 0 to 9999, both readers */
	for (int64_t s = -62167219200; s <= 253402300799; s += 7777777) {
		int64_t back = 0;

		hb_time_rfc3339_format(s, out);
		if (hb_time_rfc3339_parse(out, &back) || back != s)
			fail_msg("%lld: '%s' reads back as %lld", (long long)s,
				 out, (long long)back);
		back = 0;
		if (hb_time_rfc3339_parse_flags(out, HB_TIME_LENIENT, &back) ||
		    back != s)
			fail_msg("%lld: '%s' reads back leniently as %lld",
				 (long long)s, out, (long long)back);
	}
}

/* For the years 1000 on, the bytes strftime() writes: the log's
 * timestamps and the plugin's dates were written with it. */
static void test_format_as_strftime(void **state)
{
	char out[32], want[64];
	int n = 0;

	(void)state;
	/* 1000-01-01 to 9999-12-31 */
	for (int64_t s = -30610224000; s <= 253402300799; s += 86399 * 97) {
		time_t tt = (time_t)s;
		struct tm tm;
		size_t len;

		assert_non_null(gmtime_r(&tt, &tm));
		strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%SZ", &tm);
		hb_time_rfc3339_format(s, out);
		assert_string_equal(out, want);

		len = strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(want + len, sizeof(want) - len, ".%03uZ",
			 (unsigned)(n % 1000));
		hb_time_rfc3339_format_ms(s * 1000 + n % 1000, out);
		assert_string_equal(out, want);
		n += 7;
	}
}

/* ---- local dates, as the plugin writes them back ---------------------- */

static void test_slurm_date_format(void **state)
{
	static const struct {
		int64_t t;
		int32_t off;
		const char *want;
	} cases[] = {
		{ NOW, 0, "2026-11-21T08:00:00" },
		{ NOW, H, "2026-11-21T09:00:00" },
		{ NOW, -9 * H, "2026-11-20T23:00:00" },
		{ NOW, 16 * H, "2026-11-22T00:00:00" },
		{ NOW, 5 * H + 1800, "2026-11-21T13:30:00" },
		{ NOW, -(3 * H + 1800), "2026-11-21T04:30:00" },
		{ 0, -1, "1969-12-31T23:59:59" },
		{ -1, 1, "1970-01-01T00:00:00" },
		{ 1709164800, -H, "2024-02-28T23:00:00" },
		{ 1709164800 + D - 1, H, "2024-03-01T00:59:59" },
		{ INT64_MAX, 14 * H, "292277026596-12-05T05:30:07" },
		{ INT64_MIN, -14 * H, "-292277022657-01-26T18:29:52" },
	};
	static const int32_t offs[] = {
		0, H, -H, 5 * H + 1800, -(9 * H + 1800), 14 * H, -12 * H
	};
	char out[32];

	(void)state;
	for (size_t i = 0; i < N_OF(cases); i++) {
		hb_time_slurm_date_format(cases[i].t, cases[i].off, out);
		if (strcmp(out, cases[i].want))
			fail_msg("%lld at %d: '%s', want '%s'",
				 (long long)cases[i].t, (int)cases[i].off, out,
				 cases[i].want);
	}
	/* Slurm's reader, given the same zone, finds the instant again */
	for (size_t o = 0; o < N_OF(offs); o++)
		for (int64_t s = 0; s < 4102444800; s += 3333331) {
			int64_t back = 0;

			hb_time_slurm_date_format(s, offs[o], out);
			if (hb_time_slurm_date(out, NOW, offs[o], &back) ||
			    back != s)
				fail_msg("%lld at %d: '%s' reads back as %lld",
					 (long long)s, (int)offs[o], out,
					 (long long)back);
		}
}

/* With localtime_r()'s offset, strftime("%Y-%m-%dT%H:%M:%S") of
 * localtime(), across daylight saving changes. */
static void test_slurm_date_format_as_localtime(void **state)
{
	static const char *const zones[] = { "UTC0", "EST5EDT,M3.2.0,M11.1.0",
					     "CET-1CEST,M3.5.0,M10.5.0/3",
					     "<+0530>-5:30", "<-0930>9:30" };
	char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
	char out[32], want[32];

	(void)state;
	for (size_t z = 0; z < N_OF(zones); z++) {
		setenv("TZ", zones[z], 1);
		tzset();
		for (int64_t s = 946684800; s < 1893456000;
		     s += 86400 * 3 + 1234) {
			time_t tt = (time_t)s;
			struct tm tm;

			assert_non_null(localtime_r(&tt, &tm));
			strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S", &tm);
			hb_time_slurm_date_format(s, (int32_t)tm.tm_gmtoff,
						  out);
			if (strcmp(out, want))
				fail_msg("%s, %lld: '%s', want '%s'", zones[z],
					 (long long)s, out, want);
		}
	}
	if (old)
		setenv("TZ", old, 1);
	else
		unsetenv("TZ");
	tzset();
	free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_parse),
		cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_slurm_date_ok),
		cmocka_unit_test(test_slurm_date_now),
		cmocka_unit_test(test_slurm_date_local),
		cmocka_unit_test(test_slurm_date_leap),
		cmocka_unit_test(test_slurm_date_before_1970),
		cmocka_unit_test(test_rfc3339_parse),
		cmocka_unit_test(test_rfc3339_strict),
		cmocka_unit_test(test_rfc3339_lenient),
		cmocka_unit_test(test_rfc3339_format),
		cmocka_unit_test(test_rfc3339_format_ms),
		cmocka_unit_test(test_rfc3339_round_trip),
		cmocka_unit_test(test_format_as_strftime),
		cmocka_unit_test(test_slurm_date_format),
		cmocka_unit_test(test_slurm_date_format_as_localtime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
