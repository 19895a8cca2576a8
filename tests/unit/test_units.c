/*
 * test_units.c - the number, time and size parsers and formatters.
 *
 * The Slurm cases mirror what Slurm 22.05's time_str2mins() and
 * str_to_mbytes() accept and reject (checked against sbatch itself).
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/units.h"
#include "testutil.h"

struct tcase {
	const char *in;
	int rc;
	uint64_t out;
};

/* Each case through parse: its code, and its value when 0. */
static void run_cases(const struct tcase *cases, size_t n,
		      int (*parse)(const char *, uint64_t *))
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 5;
		int rc = parse(cases[i].in, &v);

		if (rc != cases[i].rc)
			fail_msg("'%s': rc %d, want %d", cases[i].in, rc,
				 cases[i].rc);
		if (rc == 0 && v != cases[i].out)
			fail_msg("'%s': %llu, want %llu", cases[i].in,
				 (unsigned long long)v,
				 (unsigned long long)cases[i].out);
	}
}

static void test_u64(void **state)
{
	static const struct tcase cases[] = {
	    {"0", 0, 0},
	    {"42", 0, 42},
	    {"007", 0, 7},
	    {"18446744073709551615", 0, UINT64_MAX},
	    {"18446744073709551616", HB_ERANGE, 0},
	    {"99999999999999999999999", HB_ERANGE, 0},
	    {"99999999999999999999999x", HB_EINVAL, 0},
	    {"", HB_EINVAL, 0},
	    {"-1", HB_EINVAL, 0},
	    {"+1", HB_EINVAL, 0},
	    {" 1", HB_EINVAL, 0},
	    {"1 ", HB_EINVAL, 0},
	    {"1x", HB_EINVAL, 0},
	    {"0x10", HB_EINVAL, 0},
	};
	uint64_t v;
	uint32_t v32;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		assert_int_equal(hb_parse_u64(cases[i].in, UINT64_MAX, &v),
				 cases[i].rc);
		if (cases[i].rc == 0)
			assert_true(v == cases[i].out);
	}
	assert_int_equal(hb_parse_u64("10", 9, &v), HB_ERANGE);
	assert_int_equal(hb_parse_u64("9", 9, &v), 0);
	assert_int_equal(hb_parse_u64("1", 0, &v), HB_ERANGE);
	assert_int_equal(hb_parse_u64("0", 0, &v), 0);
	assert_int_equal(hb_parse_u64(NULL, 5, &v), HB_EINVAL);
	assert_int_equal(hb_parse_u32("4294967295", &v32), 0);
	assert_true(v32 == UINT32_MAX);
	assert_int_equal(hb_parse_u32("4294967296", &v32), HB_ERANGE);
	assert_int_equal(hb_parse_u32("12a", &v32), HB_EINVAL);
}

static void test_slurm_time(void **state)
{
	static const struct tcase cases[] = {
	    /* minutes */
	    {"10", 0, 600},
	    {"0", 0, 0},
	    {"007", 0, 420},
	    /* minutes:seconds, rounded up to whole minutes */
	    {"10:30", 0, 660},
	    {"0:30", 0, 60},
	    {"0:0", 0, 0},
	    {"1:00", 0, 60},
	    {"0:60", 0, 60},
	    /* hours:minutes:seconds */
	    {"1:00:00", 0, 3600},
	    {"2:30:15", 0, 2 * 3600 + 31 * 60},
	    {"0:0:1", 0, 60},
	    /* days-hours[:minutes[:seconds]] */
	    {"1-0", 0, 86400},
	    {"2-12", 0, 2 * 86400 + 12 * 3600},
	    {"1-2:30", 0, 86400 + 2 * 3600 + 30 * 60},
	    {"1-2:30:45", 0, 86400 + 2 * 3600 + 31 * 60},
	    {"5-", 0, 5 * 86400}, /* sbatch takes "5-" as five days */
	    {"-0", 0, 0},
	    /* unlimited */
	    {"UNLIMITED", 0, HB_TIME_UNLIMITED},
	    {"unlimited", 0, HB_TIME_UNLIMITED},
	    {"Infinite", 0, HB_TIME_UNLIMITED},
	    {"-1", 0, HB_TIME_UNLIMITED},
	    /* malformed, as _is_valid_timespec() rejects */
	    {"", HB_EINVAL, 0},
	    {"abc", HB_EINVAL, 0},
	    {"1h", HB_EINVAL, 0},
	    {" 10", HB_EINVAL, 0},
	    {"+10", HB_EINVAL, 0},
	    {"1:", HB_EINVAL, 0},
	    {":1", HB_EINVAL, 0},
	    {"1::2", HB_EINVAL, 0},
	    {"1:2:3:4", HB_EINVAL, 0},
	    {"1-2-3", HB_EINVAL, 0},
	    {"1:2-3", HB_EINVAL, 0},
	    {"1-:2", HB_EINVAL, 0},
	    {"1-2:", HB_EINVAL, 0},
	    {"1-2:3:", HB_EINVAL, 0},
	    {"-", HB_EINVAL, 0},
	    {"-2", HB_EINVAL, 0},
	    {"1.5", HB_EINVAL, 0},
	    {"UNLIMITEDX", HB_EINVAL, 0},
	    /* overflow of Slurm's int arithmetic */
	    {"2147483648", HB_ERANGE, 0},
	    {"99999999999999999999", HB_ERANGE, 0},
	    {"35791393", 0, 35791393ull * 60},
	    {"35791395", HB_ERANGE, 0},
	    {"24855-0", 0, 24855ull * 86400},
	    {"24856-0", HB_ERANGE, 0},
	};
	uint64_t v;

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_slurm_time);
	assert_int_equal(hb_parse_slurm_time(NULL, &v), HB_EINVAL);
}

static void test_pbs_time(void **state)
{
	static const struct tcase cases[] = {
	    {"3600", 0, 3600}, /* a bare number is seconds */
	    {"0", 0, 0},
	    {"10:00", 0, 600},
	    {"01:00:00", 0, 3600},
	    {"100:00:00", 0, 360000},
	    {"1:30:15", 0, 5415},
	    {"1:30:15.75", 0, 5415},
	    {"45.5", 0, 45},
	    {"", HB_EINVAL, 0},
	    {"1:2:3:4", HB_EINVAL, 0},
	    {"1:", HB_EINVAL, 0},
	    {":5", HB_EINVAL, 0},
	    {"5.", HB_EINVAL, 0},
	    {"1.5:00", HB_EINVAL, 0},
	    {"-5", HB_EINVAL, 0},
	    {"5s", HB_EINVAL, 0},
	    {"99999999999999999999", HB_ERANGE, 0},
	    {"5124095576030432:00:00", HB_ERANGE, 0},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_pbs_time);
}

static void test_slurm_size(void **state)
{
	static const struct tcase cases[] = {
	    {"100", 0, 100}, /* MiB by default */
	    {"0", 0, 0},
	    {"100M", 0, 100},
	    {"100m", 0, 100},
	    {"100MB", 0, 100},
	    {"100mb", 0, 100},
	    {"4G", 0, 4096},
	    {"4g", 0, 4096},
	    {"4GB", 0, 4096},
	    {"2T", 0, 2 * 1024 * 1024},
	    {"1K", 0, 1}, /* K rounds up */
	    {"1024K", 0, 1},
	    {"1025K", 0, 2},
	    {"0K", 0, 0},
	    /* strtoll() leniency that sbatch has */
	    {" 4G", 0, 4096},
	    {"+4G", 0, 4096},
	    {"-0", 0, 0},
	    {"", HB_EINVAL, 0},
	    {"G", HB_EINVAL, 0},
	    {"-1", HB_EINVAL, 0},
	    {"4B", HB_EINVAL, 0},
	    {"4P", HB_EINVAL, 0},
	    {"4GiB", HB_EINVAL, 0},
	    {"4 G", HB_EINVAL, 0},
	    {"4G ", HB_EINVAL, 0},
	    {"4.5G", HB_EINVAL, 0},
	    {"9223372036854775807", 0, 9223372036854775807ull},
	    {"9223372036854775808", HB_ERANGE, 0},
	    {"9007199254740992G", HB_ERANGE, 0},
	    {"9007199254740991G", 0, 9007199254740991ull * 1024},
	    {"8796093022208T", HB_ERANGE, 0},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_slurm_size);
}

static void test_pbs_size(void **state)
{
	static const struct tcase cases[] = {
	    {"100", 0, 100}, /* bytes by default */
	    {"100b", 0, 100},
	    {"100B", 0, 100},
	    {"2w", 0, 16},
	    {"1kb", 0, 1024},
	    {"1k", 0, 1024},
	    {"1KB", 0, 1024},
	    {"1kw", 0, 8192},
	    {"4mb", 0, 4ull << 20},
	    {"4gb", 0, 4ull << 30},
	    {"4GB", 0, 4ull << 30},
	    {"2tb", 0, 2ull << 40},
	    {"1pb", 0, 1ull << 50},
	    {"", HB_EINVAL, 0},
	    {"gb", HB_EINVAL, 0},
	    {"4xb", HB_EINVAL, 0},
	    {"4gbx", HB_EINVAL, 0},
	    {"4bb", HB_EINVAL, 0},
	    {"-4gb", HB_EINVAL, 0},
	    {"4 gb", HB_EINVAL, 0},
	    {"16384pb", HB_ERANGE, 0},
	    {"18446744073709551616", HB_ERANGE, 0},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_pbs_size);
	assert_true(hb_bytes_to_mib(0) == 0);
	assert_true(hb_bytes_to_mib(1) == 1);
	assert_true(hb_bytes_to_mib(1 << 20) == 1);
	assert_true(hb_bytes_to_mib((1 << 20) + 1) == 2);
	assert_true(hb_bytes_to_mib(UINT64_MAX) == (UINT64_MAX >> 20) + 1);
}

static void test_format_time(void **state)
{
	char out[32];

	(void)state;
	hb_format_slurm_time(0, out);
	assert_string_equal(out, "00:00:00");
	hb_format_slurm_time(59, out);
	assert_string_equal(out, "00:00:59");
	hb_format_slurm_time(3600 + 120 + 3, out);
	assert_string_equal(out, "01:02:03");
	hb_format_slurm_time(86399, out);
	assert_string_equal(out, "23:59:59");
	hb_format_slurm_time(86400, out);
	assert_string_equal(out, "1-00:00:00");
	hb_format_slurm_time(3 * 86400 + 4 * 3600 + 5 * 60 + 6, out);
	assert_string_equal(out, "3-04:05:06");
	hb_format_slurm_time(HB_TIME_UNLIMITED, out);
	assert_string_equal(out, "UNLIMITED");
	hb_format_slurm_time(UINT64_MAX - 1, out);
	assert_true(strlen(out) < 32 && strchr(out, '-'));

	/* whatever we format, the Slurm parser reads back */
	for (uint64_t m = 0; m < 3 * 1440; m += 7) {
		uint64_t back;

		hb_format_slurm_time(m * 60, out);
		assert_int_equal(hb_parse_slurm_time(out, &back), 0);
		assert_true(back == m * 60);
	}
}

static void test_k8s_mem(void **state)
{
	static const struct tcase cases[] = {
	    {"512Mi", 0, 512},
	    {"4Gi", 0, 4096},
	    {"1Ti", 0, 1024 * 1024},
	    {"1Ki", 0, 1},
	    {"1024Ki", 0, 1},
	    {"1025Ki", 0, 2},
	    {"1048576", 0, 1},
	    {"1048577", 0, 2},
	    {"1M", 0, 1},   /* 10^6 bytes: rounds up */
	    {"1G", 0, 954}, /* 10^9 / 2^20 = 953.67 */
	    {"1.5Gi", 0, 1536},
	    {"0.5Gi", 0, 512},
	    {".5Gi", 0, 512},
	    {"1e9", 0, 954},
	    {"1E9", 0, 954},
	    {"1e+9", 0, 954},
	    {"1E", 0, 953674316407ull}, /* exa */
	    {"1Ei", 0, 1ull << 40},
	    {"100m", 0, 1}, /* 0.1 byte */
	    {"0", 0, 0},
	    {"0Gi", 0, 0},
	    {"+1Gi", 0, 1024},
	    {"", HB_EINVAL, 0},
	    {"Gi", HB_EINVAL, 0},
	    {"-1Gi", HB_EINVAL, 0},
	    {"1gi", HB_EINVAL, 0},
	    {"1KB", HB_EINVAL, 0},
	    {"1 Gi", HB_EINVAL, 0},
	    {"1e", HB_EINVAL, 0},
	    {"1e+", HB_EINVAL, 0},
	    {"1.2.3", HB_EINVAL, 0},
	    {"1Xi", HB_EINVAL, 0},
	    {"100000000000Ei", HB_ERANGE, 0},
	    {"1e1001", HB_ERANGE, 0},
	};
	uint64_t v;
	char out[32];

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_k8s_mem);

	hb_format_k8s_mem(0, out);
	assert_string_equal(out, "0");
	hb_format_k8s_mem(512, out);
	assert_string_equal(out, "512Mi");
	hb_format_k8s_mem(4096, out);
	assert_string_equal(out, "4Gi");
	hb_format_k8s_mem(1536, out);
	assert_string_equal(out, "1536Mi");
	hb_format_k8s_mem(1024 * 1024, out);
	assert_string_equal(out, "1Ti");
	hb_format_k8s_mem(1ull << 40, out);
	assert_string_equal(out, "1Ei");
	hb_format_k8s_mem(UINT64_MAX, out);
	assert_true(strlen(out) < 32);
	for (uint64_t m = 1; m < 100000; m = m * 3 + 1) {
		hb_format_k8s_mem(m, out);
		assert_int_equal(hb_parse_k8s_mem(out, &v), 0);
		assert_true(v == m);
	}
}

static void test_k8s_cpu(void **state)
{
	static const struct tcase cases[] = {
	    {"1", 0, 1000},
	    {"2", 0, 2000},
	    {"500m", 0, 500},
	    {"0.5", 0, 500},
	    {"1.0001", 0, 1001}, /* rounds up to a millicore */
	    {"250000u", 0, 250},
	    {"1k", 0, 1000000},
	    {"0", 0, 0},
	    {"1e-3", 0, 1},
	    {"", HB_EINVAL, 0},
	    {"m", HB_EINVAL, 0},
	    {"-1", HB_EINVAL, 0},
	    {"1 m", HB_EINVAL, 0},
	    {"1core", HB_EINVAL, 0},
	    {"1E18", HB_ERANGE, 0},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_k8s_cpu);
}

static void test_k8s_units(void **state)
{
	static const struct tcase cases[] = {
	    {"16Gi", 0, 17179869184ull},
	    {"32803268Ki", 0, 33590546432ull},
	    {"1e3", 0, 1000},
	    {"2k", 0, 2000},
	    {"4", 0, 4},
	    {"500m", 0, 1}, /* half a unit rounds up */
	    {"1.5", 0, 2},
	    {"0", 0, 0},
	    {"1Ei", 0, 1ull << 60},
	    {"20E", HB_ERANGE, 0}, /* past 2^64 */
	    {"", HB_EINVAL, 0},
	    {"4 GPUs", HB_EINVAL, 0},
	    {"-1", HB_EINVAL, 0},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]), hb_parse_k8s_units);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_u64),	     cmocka_unit_test(test_slurm_time),
	    cmocka_unit_test(test_pbs_time), cmocka_unit_test(test_slurm_size),
	    cmocka_unit_test(test_pbs_size), cmocka_unit_test(test_format_time),
	    cmocka_unit_test(test_k8s_mem),  cmocka_unit_test(test_k8s_cpu),
	    cmocka_unit_test(test_k8s_units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
