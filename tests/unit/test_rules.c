/*
 * test_rules.c - the interim placement rules: option, partition map,
 * default; the proxy's shape and time limit.
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
				   "  default_target: slurm\n"
				   "  partitions:\n"
				   "    gpu: kubernetes\n"
				   "    cpu: slurm\n";
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

static void decide(const char *part, const char *target, int64_t lim,
		   struct hb_decision *d)
{
	struct hb_rules_input in = { .partition = part,
				     .target = target,
				     .time_limit_min = lim };
	struct hb_err err = { 0 };

	if (hb_rules_decide(&cfg, &in, d, &err))
		fail_msg("%s", err.msg);
}

static void test_partition_map(void **state)
{
	struct hb_decision d;

	(void)state;
	decide("gpu", NULL, 60, &d);
	assert_string_equal(d.target, "kubernetes");
	assert_string_equal(d.rule, "partition");
	assert_string_equal(d.reason, "partition gpu maps to kubernetes");
	assert_string_equal(d.proxy_partition, "cloud");
	assert_int_equal(d.proxy_cpus, 1);
	assert_int_equal(d.proxy_mem_mb, 96);
	assert_int_equal(d.proxy_time_limit_min, 67);

	decide("cpu", "auto", 60, &d);
	assert_string_equal(d.target, "slurm");
	assert_string_equal(d.rule, "partition");
	assert_string_equal(d.reason, "partition cpu maps to slurm");
	/* no proxy for Slurm */
	assert_null(d.proxy_partition);
	assert_int_equal(d.proxy_mem_mb, 0);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_NO_LIMIT);
}

static void test_option_wins(void **state)
{
	struct hb_decision d;
	struct hb_err err = { 0 };
	struct hb_rules_input in = { .partition = "gpu", .target = "k8s" };

	(void)state;
	decide("gpu", "slurm", 60, &d);
	assert_string_equal(d.target, "slurm");
	assert_string_equal(d.rule, "option");
	assert_string_equal(d.reason,
			    "the job asks for slurm (--hpcbridge-target)");
	decide("cpu", "kubernetes", 10, &d);
	assert_string_equal(d.target, "kubernetes");
	assert_string_equal(d.rule, "option");
	assert_int_equal(d.proxy_time_limit_min, 17);
	decide(NULL, "kubernetes", 10, &d);
	assert_string_equal(d.target, "kubernetes");

	/* anything else is refused, naming it */
	assert_int_equal(hb_rules_decide(&cfg, &in, &d, &err), HB_EINVAL);
	assert_string_equal(err.msg,
			    "target: 'k8s' is not auto, slurm or kubernetes");
	in.target = "Slurm";
	assert_int_equal(hb_rules_decide(&cfg, &in, &d, NULL), HB_EINVAL);
}

static void test_default(void **state)
{
	struct hb_decision d;
	struct hb_config k;
	struct hb_rules_input in = { .partition = "batch",
				     .time_limit_min = 30 };
	static const char text[] = "placement: {default_target: kubernetes}\n";

	(void)state;
	decide("batch", NULL, 60, &d);
	assert_string_equal(d.target, "slurm");
	assert_string_equal(d.rule, "default");
	assert_string_equal(d.reason, "partition batch is not mapped; the "
				      "default target is slurm");
	decide(NULL, "", 60, &d);
	assert_string_equal(d.reason,
			    "no partition given; the default target is slurm");
	decide("", "auto", 60, &d);
	assert_string_equal(d.rule, "default");

	assert_int_equal(
		hb_config_parse(text, strlen(text), "k.yaml", &k, NULL), 0);
	assert_int_equal(hb_rules_decide(&k, &in, &d, NULL), 0);
	assert_string_equal(d.target, "kubernetes");
	assert_string_equal(d.rule, "default");
	/* defaults: burst, 64 MiB, 5 minutes of grace */
	assert_string_equal(d.proxy_partition, "burst");
	assert_int_equal(d.proxy_mem_mb, 64);
	assert_int_equal(d.proxy_time_limit_min, 35);
	hb_config_free(&k);
}

static void test_time_limits(void **state)
{
	struct hb_decision d;

	(void)state;
	/* none: absent, 0, negative, Slurm's NO_VAL and INFINITE */
	decide("gpu", NULL, HB_RULES_NO_LIMIT, &d);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_NO_LIMIT);
	decide("gpu", NULL, 0, &d);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_NO_LIMIT);
	decide("gpu", NULL, -5, &d);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_NO_LIMIT);
	decide("gpu", NULL, 0xfffffffeLL, &d);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_NO_LIMIT);
	decide("gpu", NULL, 0xffffffffLL, &d);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_NO_LIMIT);
	/* 1 minute, and a grace that would pass NO_VAL is capped */
	decide("gpu", NULL, 1, &d);
	assert_int_equal(d.proxy_time_limit_min, 8);
	decide("gpu", NULL, HB_RULES_MAX_LIMIT - 1, &d);
	assert_int_equal(d.proxy_time_limit_min, HB_RULES_MAX_LIMIT);
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
		cmocka_unit_test(test_partition_map),
		cmocka_unit_test(test_option_wins),
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_time_limits),
		cmocka_unit_test(test_proxy_script),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
