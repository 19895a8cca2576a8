/*
 * test_ratecard.c - rate cards and pricing: the example card, rounding
 * (half up, once per entry), a job split by a rate change, GPUs by type
 * with a default, exclusive node-hours, egress and storage, and bad
 * cards, each with its FILE:LINE: key.path message and nothing left
 * allocated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/ratecard.h"
#include "hpcbridge/units.h"
#include "testutil.h"

static void parse_ok(const char *yaml, struct hb_ratecard *card)
{
	struct hb_err err = { 0 };
	int rc = hb_ratecard_parse(yaml, strlen(yaml), "card.yaml", card, &err);

	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
}

static int64_t at(const char *s)
{
	int64_t t;

	assert_int_equal(hb_parse_instant(s, &t), 0);
	return t;
}

/* The one amount of a usage that lies in one rate period. */
static int64_t price1(const struct hb_ratecard *card, const struct hb_usage *u)
{
	struct hb_charge c[4];
	struct hb_err err = { 0 };
	uint32_t n;

	assert_int_equal(hb_rate_price(card, u, c, 4, &n, &err), 0);
	assert_int_equal(n, 1);
	return c[0].amount;
}

/* config/ratecards/example.yaml, which docs/chargeback.md works with. */
static void load_example(struct hb_ratecard *card)
{
	struct hb_err err = { 0 };

	assert_int_equal(
		hb_ratecard_load(
			hb_test_src_path("config/ratecards/example.yaml"), card,
			&err),
		0);
}

/* ---- the example card ------------------------------------------------- */

static void test_example(void **state)
{
	struct hb_ratecard card;
	const struct hb_rate_version *v;
	const struct hb_rate *r;

	(void)state;
	load_example(&card);
	assert_string_equal(card.currency, "EUR");
	assert_string_equal(card.currency_symbol, "€");
	assert_int_equal(card.idle_cost, HB_IDLE_NONE);
	assert_int_equal(card.nversions, 2);
	assert_string_equal(card.versions[0].version, "2026.1");
	assert_int_equal(card.versions[1].effective, at("2026-07-01"));
	assert_null(hb_ratecard_at(&card, at("2025-12-31T23:59:59Z")));
	v = hb_ratecard_at(&card, at("2026-06-30T23:59:59Z"));
	assert_string_equal(v->version, "2026.1");
	v = hb_ratecard_at(&card, at("2026-07-01"));
	assert_string_equal(v->version, "2026.7");
	r = hb_rate_class(v, HB_RATE_SLURM, "gpu");
	assert_string_equal(r->name, "gpu");
	assert_int_equal(r->cpu_hour, 22000);
	assert_int_equal(hb_rate_gpu_hour(r, "H100"), 2300000);
	assert_int_equal(hb_rate_gpu_hour(r, "l4"), 1000000);
	assert_int_equal(hb_rate_gpu_hour(r, NULL), 1000000);
	r = hb_rate_class(v, HB_RATE_SLURM, "batch");
	assert_string_equal(r->name, "default");
	assert_int_equal(r->memory_gb_hour, 3500);
	hb_ratecard_free(&card);
	hb_ratecard_free(&card); /* a freed card is a no-op */
}

/* ---- rounding --------------------------------------------------------- */

static const char tiny[] = "currency: {code: EUR}\n"
			   "versions:\n"
			   "  - version: 1\n"
			   "    effective: 2026-01-01\n"
			   "    slurm:\n"
			   "      default: {cpu_hour: 0.000001, "
			   "memory_gb_hour: 0.000001, egress_gb: 0.000001}\n"
			   "  - version: 2\n"
			   "    effective: 2026-02-01\n"
			   "    slurm:\n"
			   "      default: {cpu_hour: 0.000001}\n";

static void test_round(void **state)
{
	struct hb_ratecard card;
	struct hb_err err = { 0 };
	struct hb_usage u = { .side = HB_RATE_SLURM, .cpus = 1 };
	struct hb_charge c[4];
	uint32_t n;
	int64_t a, t0 = at("2026-01-10");
	const char *ver;

	(void)state;
	/* the rule itself: half up, exactly */
	assert_int_equal(hb_rate_round(5, 10, &a), 0);
	assert_int_equal(a, 1);
	assert_int_equal(hb_rate_round(4, 10, &a), 0);
	assert_int_equal(a, 0);
	assert_int_equal(hb_rate_round(15, 10, &a), 0);
	assert_int_equal(a, 2);
	assert_int_equal(hb_rate_round(7, 3, &a), 0); /* 2.33 */
	assert_int_equal(a, 2);
	assert_int_equal(hb_rate_round(8, 3, &a), 0); /* 2.67 */
	assert_int_equal(a, 3);
	assert_int_equal(
		hb_rate_round((unsigned __int128)INT64_MAX * 2 + 2, 2, &a),
		HB_ERANGE);

	parse_ok(tiny, &card);
	/* 1 micro-unit per CPU-hour: half an hour is half a micro-unit */
	u.start = t0;
	u.end = t0 + 1800;
	assert_int_equal(price1(&card, &u), 1);
	u.end = t0 + 1799;
	assert_int_equal(price1(&card, &u), 0);
	u.end = t0 + 5400; /* 1.5 */
	assert_int_equal(price1(&card, &u), 2);
	u.end = t0 + 9000; /* 2.5 */
	assert_int_equal(price1(&card, &u), 3);
	/* memory: 512 MiB for an hour is half a GB-hour */
	u.cpus = 0;
	u.mem_bytes = 512ull << 20;
	u.end = t0 + 3600;
	assert_int_equal(price1(&card, &u), 1);
	/* 0.5 CPU + 0.5 memory rounds once: 1, not 2 */
	u.cpus = 1;
	u.end = t0 + 1800;
	u.mem_bytes = 1024ull << 20;
	assert_int_equal(price1(&card, &u), 1);

	/* never on sums: an hour across the change is two entries of half a
	 * micro-unit, 1 each, 2 in all, where one entry would be 1 */
	u.mem_bytes = 0;
	u.start = at("2026-02-01") - 1800;
	u.end = at("2026-02-01") + 1800;
	assert_int_equal(hb_rate_price(&card, &u, c, 4, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(c[0].amount, 1);
	assert_int_equal(c[1].amount, 1);

	/* egress: 10^9 bytes at 0.000001 a GB */
	assert_int_equal(hb_rate_price_egress(&card, HB_RATE_SLURM, NULL, t0,
					      500000000, &a, &ver, &err),
			 0);
	assert_int_equal(a, 1);
	assert_string_equal(ver, "1");
	assert_int_equal(hb_rate_price_egress(&card, HB_RATE_SLURM, NULL, t0,
					      499999999, &a, NULL, &err),
			 0);
	assert_int_equal(a, 0);
	/* no rate for the other side, nor before the first version */
	assert_int_equal(hb_rate_price_egress(&card, HB_RATE_KUBE, NULL, t0, 1,
					      &a, NULL, &err),
			 HB_ENOENT);
	u.start = u.end = at("2025-01-01");
	assert_int_equal(hb_rate_price(&card, &u, c, 4, &n, &err), HB_ENOENT);
	hb_ratecard_free(&card);
}

/* ---- a job split by a rate change -------------------------------------- */

static void test_split(void **state)
{
	struct hb_ratecard card;
	struct hb_err err = { 0 };
	struct hb_usage u = {
		.side = HB_RATE_SLURM,
		.rate_class = "batch",
		.account = "physics",
		.cpus = 64,
		.mem_bytes = 256ull << 30,
		.nodes = 1,
	};
	struct hb_charge c[4];
	uint32_t n;

	(void)state;
	load_example(&card);
	u.start = at("2026-06-30T22:00:00Z");
	u.end = at("2026-07-01T02:00:00Z");
	assert_int_equal(hb_rate_price(&card, &u, c, 4, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(c[0].version, "2026.1");
	assert_string_equal(c[1].version, "2026.7");
	assert_string_equal(c[0].rate_class, "default");
	assert_string_equal(c[0].account, "physics");
	assert_int_equal(c[0].end, at("2026-07-01"));
	assert_int_equal(c[1].start, at("2026-07-01"));
	/* 64 * 2 h * 0.02 + 256 GB * 2 h * 0.004 = 2.56 + 2.048 */
	assert_int_equal(c[0].amount, 4608000);
	/* 64 * 2 h * 0.018 + 256 GB * 2 h * 0.0035 = 2.304 + 1.792 */
	assert_int_equal(c[1].amount, 4096000);
	/* the pieces add up to the whole */
	assert_int_equal(c[0].cpu_s + c[1].cpu_s, 64 * 4 * 3600);
	assert_int_equal(c[0].mem_mib_s + c[1].mem_mib_s, 262144ull * 4 * 3600);
	assert_int_equal(c[0].node_s + c[1].node_s, 4 * 3600);
	assert_false(c[0].node_charged);
	/* too little room for the entries */
	assert_int_equal(hb_rate_price(&card, &u, c, 1, &n, &err), HB_ETOOBIG);
	/* a job that ends at the change is one entry */
	u.end = at("2026-07-01");
	assert_int_equal(hb_rate_price(&card, &u, c, 4, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].amount, 4608000);
	/* usage out of bounds */
	u.end = u.start - 1;
	assert_int_equal(hb_rate_price(&card, &u, c, 4, &n, &err), HB_EINVAL);
	hb_ratecard_free(&card);
}

/* ---- GPUs, exclusive nodes, egress and storage ----------------------------
 */

static void test_gpu_exclusive(void **state)
{
	struct hb_ratecard card;
	struct hb_err err = { 0 };
	struct hb_usage k = {
		.side = HB_RATE_KUBE,
		.rate_class = "burst", /* not listed: the default */
		.cpus = 8,
		.mem_bytes = 32ull << 30,
		.gpus = { { "H100", 2 }, { "l4", 1 } },
		.ngpus = 2,
		.nodes = 1,
	};
	struct hb_usage s = {
		.side = HB_RATE_SLURM,
		.rate_class = "gpu",
		.cpus = 128,
		.mem_bytes = 1ull << 40,
		.gpus = { { "h100", 8 } },
		.ngpus = 1,
		.nodes = 2,
		.exclusive = true,
	};
	struct hb_charge c[2];
	uint32_t n;
	int64_t a;
	const char *ver;

	(void)state;
	load_example(&card);
	/* 2 h100 * 3.20 + 1 l4 at the default 2.10 + 8 * 0.031
	 * + 32 GB * 0.0042 = 6.40 + 2.10 + 0.248 + 0.1344 */
	k.start = at("2026-03-01");
	k.end = k.start + 3600;
	assert_int_equal(hb_rate_price(&card, &k, c, 2, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].amount, 8882400);
	assert_int_equal(c[0].gpu_s[0], 7200);
	assert_int_equal(c[0].gpu_s[1], 3600);
	/* exclusive: 2 nodes * 3 h * 12.00 in place of CPU and memory, and
	 * 8 h100 * 3 h * 2.50 */
	s.start = at("2026-03-01");
	s.end = s.start + 3 * 3600;
	assert_int_equal(hb_rate_price(&card, &s, c, 2, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_true(c[0].node_charged);
	assert_int_equal(c[0].node_s, 2 * 3 * 3600);
	assert_int_equal(c[0].cpu_s, 128 * 3 * 3600);
	assert_int_equal(c[0].amount, 132000000);
	/* exclusive in a class with no exclusive_node_hour: CPUs and
	 * memory, and no GPU rate there (128*3*0.02 + 1024*3*0.004) */
	s.rate_class = "batch";
	assert_int_equal(hb_rate_price(&card, &s, c, 2, &n, &err), 0);
	assert_false(c[0].node_charged);
	assert_int_equal(c[0].amount, 19968000);
	s.rate_class = "gpu";
	/* the same job not exclusive: CPUs and memory instead */
	s.exclusive = false;
	assert_int_equal(hb_rate_price(&card, &s, c, 2, &n, &err), 0);
	/* 128*3*0.025 + 1024*3*0.004 + 60 = 9.6 + 12.288 + 60 */
	assert_int_equal(c[0].amount, 81888000);
	assert_false(c[0].node_charged);
	/* egress at the rate of the job's end: 1.5 GB * 0.09 */
	assert_int_equal(hb_rate_price_egress(&card, HB_RATE_KUBE, "burst",
					      k.end, 1500000000, &a, &ver,
					      &err),
			 0);
	assert_int_equal(a, 135000);
	assert_string_equal(ver, "2026.1");
	/* storage: 100 GB for 30 days * 0.02 */
	assert_int_equal(hb_rate_price_storage(&card, HB_RATE_SLURM, NULL,
					       at("2026-08-01"), 100000000000,
					       2592000, &a, &ver, &err),
			 0);
	assert_int_equal(a, 2000000);
	assert_string_equal(ver, "2026.7");
	hb_ratecard_free(&card);
}

/* ---- bad cards ------------------------------------------------------- */

static const char head[] = "currency: {code: EUR}\n"
			   "versions:\n"
			   "  - version: a\n"
			   "    effective: 2026-01-01\n"
			   "    slurm:\n";

static const struct bad {
	const char *yaml; /* appended to head unless it starts with '!' */
	const char *msg;
} bad[] = {
	{ "      default: {cpu_hour: -0.5}\n",
	  "bad.yaml:6: versions[0].slurm.default.cpu_hour: '-0.5' is "
	  "negative" },
	{ "      default: {cpu_hour: \"0.0000001\"}\n",
	  "bad.yaml:6: versions[0].slurm.default.cpu_hour: '0.0000001' is "
	  "not an amount (digits, at most 6 decimals)" },
	{ "      default: {memory_gb_hour: 0.0000001}\n",
	  "bad.yaml:6: versions[0].slurm.default.memory_gb_hour: '1e-07' is "
	  "not an amount (digits, at most 6 decimals)" },
	{ "      default: {cpu_hours: 1}\n",
	  "bad.yaml:6: versions[0].slurm.default.cpu_hours: unknown key" },
	{ "      batch: {cpu_hour: 1}\n",
	  "bad.yaml:5: versions[0].slurm: no 'default' class" },
	{ "      default:\n        gpu_hour: {h100: 2}\n",
	  "bad.yaml:7: versions[0].slurm.default.gpu_hour: no 'default' rate "
	  "for other types" },
	{ "      default: {gpu_hour: {default: 1, H100: 2, h100: 3}}\n",
	  "bad.yaml:6: versions[0].slurm.default.gpu_hour.h100: type 'h100' "
	  "is given twice" },
	{ "      default: {egress_gb: [1]}\n",
	  "bad.yaml:6: versions[0].slurm.default.egress_gb: expected an "
	  "amount like 0.25, not a list" },
	{ "      default: {cpu_hour: 1000001}\n",
	  "bad.yaml:6: versions[0].slurm.default.cpu_hour: '1000001' is more "
	  "than 1000000" },
	{ "      default: {}\n"
	  "  - version: b\n"
	  "    effective: 2026-01-01T00:00:00Z\n"
	  "    kubernetes: {default: {}}\n",
	  "bad.yaml:7: versions[1]: effective at the same instant as version "
	  "'a' (line 3)" },
	{ "      default: {}\n"
	  "  - version: a\n"
	  "    effective: 2026-02-01\n"
	  "    kubernetes: {default: {}}\n",
	  "bad.yaml:7: versions[1]: version 'a' is given twice (line 3)" },
	{ "      default: {}\n"
	  "  - version: b\n"
	  "    effective: next week\n"
	  "    slurm: {default: {}}\n",
	  "bad.yaml:8: versions[1].effective: expected an instant like "
	  "2026-01-01 or 2026-01-01T00:00:00Z" },
	{ "      default: {}\n"
	  "  - effective: 2026-02-01\n"
	  "    slurm: {default: {}}\n",
	  "bad.yaml:7: versions[1].version: required" },
	{ "      default: {}\n"
	  "  - version: b\n"
	  "    effective: 2026-02-01\n",
	  "bad.yaml:7: versions[1]: prices neither slurm nor kubernetes" },
	{ "      default: {}\n"
	  "idle_cost: shared\n",
	  "bad.yaml:7: idle_cost: expected none, proportional or even" },
	{ "!currency: {code: euro}\nversions: []\n",
	  "bad.yaml:1: currency.code: expected an ISO 4217 code like EUR" },
	{ "!currency: {code: EUR}\nversions: []\n",
	  "bad.yaml:2: versions: no version" },
	{ "!currency: {code: EUR}\nversion: []\n",
	  "bad.yaml:2: version: unknown key" },
	{ "!versions: []\n", "bad.yaml:1: currency: required" },
	{ "!", "bad.yaml: the rate card is empty" },
};

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hb_ratecard card;
		struct hb_err err = { 0 };
		char buf[1024];
		const char *y = bad[i].yaml;

		if (y[0] == '!')
			snprintf(buf, sizeof(buf), "%s", y + 1);
		else
			snprintf(buf, sizeof(buf), "%s%s", head, y);
		assert_int_equal(hb_ratecard_parse(buf, strlen(buf), "bad.yaml",
						   &card, &err),
				 HB_EINVAL);
		if (strcmp(err.msg, bad[i].msg))
			fail_msg("case %zu:\n got  %s\n want %s", i, err.msg,
				 bad[i].msg);
		/* nothing is left allocated: the card is all zero */
		assert_null(card.arena.head);
		assert_null(card.arena.spare);
		assert_null(card.versions);
		assert_null(card.currency);
		assert_int_equal(card.nversions, 0);
		hb_ratecard_free(&card);
	}
}

static void test_idle_cost(void **state)
{
	static const char *const words[] = { "none", "proportional", "even" };

	(void)state;
	for (int i = 0; i < 3; i++) {
		struct hb_ratecard card;
		char buf[256];

		snprintf(buf, sizeof(buf),
			 "idle_cost: %s\ncurrency: {code: USD}\nversions:\n"
			 "  - {version: 1, effective: 2026-01-01, "
			 "kubernetes: {default: {}}}\n",
			 words[i]);
		parse_ok(buf, &card);
		assert_int_equal(card.idle_cost, i);
		assert_string_equal(card.currency_symbol, "USD");
		assert_null(
			hb_rate_class(&card.versions[0], HB_RATE_SLURM, NULL));
		hb_ratecard_free(&card);
	}
}

static void test_missing_file(void **state)
{
	struct hb_ratecard card;
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(
		hb_ratecard_load("/nonexistent/card.yaml", &card, &err),
		HB_ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/card.yaml"));
	assert_null(card.arena.head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_round),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_gpu_exclusive),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_idle_cost),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
