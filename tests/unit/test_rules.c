/*
 * test_rules.c - the proxy job: its shape and time limit, its script,
 * and the --hpcbridge-target values.
 */
#include <string.h>

#include "hpcbridge/config.h"
#include "hpcbridge/rules.h"
#include "testutil.h"

static struct hb_config cfg;

static int setup(void **state)
{
	static const char text[] = "slurm:\n"
				   "  burst_partition: cloud\n"
				   "  proxy_mem_mb: 96\n"
				   "  proxy_grace_min: 7\n"
				   "placement:\n"
				   "  default_target: slurm\n";
	struct hb_err err = { 0 };

	(void)state;
	if (hb_config_parse(text, strlen(text), "rules.yaml", &cfg, &err))
		fail_msg("%s", err.msg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hb_config_free(&cfg);
	return 0;
}

static void test_proxy_shape(void **state)
{
	struct hb_proxy p;
	struct hb_config k;
	static const char text[] = "placement: {default_target: kubernetes}\n";

	(void)state;
	hb_rules_proxy(&cfg, 60, &p);
	assert_string_equal(p.partition, "cloud");
	assert_int_equal(p.cpus, 1);
	assert_int_equal(p.mem_mb, 96);
	assert_int_equal(p.time_limit_min, 67);

	/* defaults: burst, 64 MiB, 5 minutes of grace */
	assert_int_equal(
		hb_config_parse(text, strlen(text), "k.yaml", &k, NULL), 0);
	hb_rules_proxy(&k, 30, &p);
	assert_string_equal(p.partition, "burst");
	assert_int_equal(p.mem_mb, 64);
	assert_int_equal(p.time_limit_min, 35);
	hb_config_free(&k);
}

static void test_targets(void **state)
{
	(void)state;
	assert_true(hb_rules_target_valid(NULL));
	assert_true(hb_rules_target_valid(""));
	assert_true(hb_rules_target_valid("auto"));
	assert_true(hb_rules_target_valid("slurm"));
	assert_true(hb_rules_target_valid("kubernetes"));
	assert_false(hb_rules_target_valid("k8s"));
	assert_false(hb_rules_target_valid("Slurm"));
	assert_false(hb_rules_target_valid("slurm "));
}

static void test_time_limits(void **state)
{
	static const int64_t none[] = { HB_RULES_NO_LIMIT, 0, -5,
					0xfffffffeLL, 0xffffffffLL };
	struct hb_proxy p;

	(void)state;
	/* none: absent, 0, negative, Slurm's NO_VAL and INFINITE */
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		hb_rules_proxy(&cfg, hb_rules_time_limit(none[i]), &p);
		assert_int_equal(p.time_limit_min, HB_RULES_NO_LIMIT);
	}
	/* 1 minute, and a grace that would pass NO_VAL is capped */
	hb_rules_proxy(&cfg, 1, &p);
	assert_int_equal(p.time_limit_min, 8);
	hb_rules_proxy(&cfg, HB_RULES_MAX_LIMIT - 1, &p);
	assert_int_equal(p.time_limit_min, HB_RULES_MAX_LIMIT);
	assert_int_equal(hb_rules_time_limit(0), HB_RULES_NO_LIMIT);
	assert_int_equal(hb_rules_time_limit(60), 60);
}

static void test_proxy_script(void **state)
{
	struct hb_config pc;
	char buf[256], tiny[40];

	(void)state;
	assert_int_equal(hb_config_defaults(&pc), 0);
	assert_int_equal(
	    hb_rules_proxy_script(&pc, "hb-000042", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "#!/bin/sh\nexec '/usr/bin/hpcbridge' shadow "
				 "--socket '/run/hpcbridge/hpcbridged.sock' "
				 "hb-000042\n");
	/* A quote in a path is quoted for sh. */
	pc.shadow_command = "/opt/it's/hpcbridge";
	assert_int_equal(
	    hb_rules_proxy_script(&pc, "hb-000042", buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "exec '/opt/it'\\''s/hpcbridge' shadow"));
	assert_int_equal(
	    hb_rules_proxy_script(&pc, "hb-000042", tiny, sizeof(tiny)),
	    HB_ETOOBIG);
	pc.shadow_command = "/usr/bin/hpcbridge";
	hb_config_free(&pc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proxy_shape),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_time_limits),
		cmocka_unit_test(test_proxy_script),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
