/*
 * test_sides_slurm.c - the reconciler's reading of a Slurm job's admin
 * comment (hb_slurm_tag_read()): the gateway id, target=WORD, snap=N and
 * cost=N of the tag, and nothing from what the plugin (orig:) or the daemon
 * ("; ...") appends after it.
 */
#include <string.h>

#include "gateway/sides/slurm.h"
#include "testutil.h"

static void expect_tag(const char *comment, const char *id, const char *target,
		       int64_t snap)
{
	struct hb_slurm_change ch;

	memset(&ch, 0x5a, sizeof(ch));
	if (hb_slurm_tag_read(comment, &ch))
		fail_msg("not read as a tag: '%s'", comment);
	assert_string_equal(ch.id, id);
	assert_string_equal(ch.target, target);
	assert_int_equal(ch.snap, snap);
}

/* The cost the tag says (0: none, or not a number). */
static void expect_cost(const char *comment, int64_t cost)
{
	struct hb_slurm_change ch;

	memset(&ch, 0x5a, sizeof(ch));
	if (hb_slurm_tag_read(comment, &ch))
		fail_msg("not read as a tag: '%s'", comment);
	assert_int_equal(ch.cost_micro, cost);
}

/* The estimate the plugin charged, for a decision rebuilt from it. */
static void test_cost(void **state)
{
	(void)state;
	expect_cost("hpcbridge:hb-000123 target=kubernetes snap=17 "
		    "cost=1000000",
		    1000000);
	expect_cost("hpcbridge:hb-000123 cost=0 target=slurm snap=17", 0);
	expect_cost("hpcbridge:hb-000123 target=slurm snap=17", 0);
	expect_cost("hpcbridge:hb-000123 target=slurm cost=-5", 0);
	expect_cost("hpcbridge:hb-000123 target=slurm cost=5x", 0);
	expect_cost("hpcbridge:hb-000123 target=slurm; cost=5", 0);
	expect_cost("hpcbridge:hb-000123 target=slurm orig: cost=5", 0);
	expect_cost("hpcbridge:hb-000123 target=slurm cost=9223372036854775807",
		    9223372036854775807LL);
}

static void expect_none(const char *comment)
{
	struct hb_slurm_change ch;

	if (!hb_slurm_tag_read(comment, &ch))
		fail_msg("read as a tag: '%s'", comment ? comment : "(null)");
}

static void test_plugin_tags(void **state)
{
	(void)state;
	expect_tag("hpcbridge:hb-000123 target=slurm snap=1795845206222",
		   "hb-000123", "slurm", 1795845206222LL);
	expect_tag("hpcbridge:hb-000124 target=kubernetes snap=17 orig: "
		   "partition=gpu snap=99 target=x",
		   "hb-000124", "kubernetes", 17);
	/* words in any order, spaces doubled */
	expect_tag("hpcbridge:hb-000125  snap=5  target=slurm", "hb-000125",
		   "slurm", 5);
	expect_tag("hpcbridge:hb-000126 snap=9223372036854775807 target=slurm",
		   "hb-000126", "slurm", 9223372036854775807LL);
}

/* Tags of the socket path and the CLI have no snap: 0. */
static void test_tags_without_snap(void **state)
{
	(void)state;
	expect_tag("hpcbridge:hb-000042 target=kubernetes orig: partition=gpu",
		   "hb-000042", "kubernetes", 0);
	expect_tag("hpcbridge:hb-000042 target=slurm", "hb-000042", "slurm", 0);
	expect_tag("hpcbridge:hb-000042", "hb-000042", "", 0);
	expect_tag("hpcbridge:hb-000042 kubernetes", "hb-000042", "", 0);
}

/* What follows the tag is not read as its words. */
static void test_appended_text(void **state)
{
	(void)state;
	expect_tag("hpcbridge:hb-000042; ran on k8s snap=5 target=slurm",
		   "hb-000042", "", 0);
	expect_tag("hpcbridge:hb-000042 target=kubernetes; snap=5", "hb-000042",
		   "kubernetes", 0);
	expect_tag("hpcbridge:hb-000042 target=kubernetes snap=3; ran",
		   "hb-000042", "kubernetes", 3);
	expect_tag("hpcbridge:hb-000042 orig: snap=5", "hb-000042", "", 0);
}

/* A snap that is no positive decimal, a target too long: none. */
static void test_bad_words(void **state)
{
	(void)state;
	expect_tag("hpcbridge:hb-1 snap=abc", "hb-1", "", 0);
	expect_tag("hpcbridge:hb-1 snap=-1", "hb-1", "", 0);
	expect_tag("hpcbridge:hb-1 snap=12x", "hb-1", "", 0);
	expect_tag("hpcbridge:hb-1 snap=", "hb-1", "", 0);
	expect_tag("hpcbridge:hb-1 snap=9223372036854775808", "hb-1", "", 0);
	expect_tag("hpcbridge:hb-1 snap=99999999999999999999", "hb-1", "", 0);
	expect_tag("hpcbridge:hb-1 target=abcdefghijklmnopqrstuvwxyz", "hb-1",
		   "", 0);
	expect_tag("hpcbridge:hb-1 target=", "hb-1", "", 0);
}

static void test_not_tags(void **state)
{
	(void)state;
	expect_none(NULL);
	expect_none("");
	expect_none("hpcbridge:");
	expect_none("hpcbridge: hb-1");
	expect_none("hpcbridge:;");
	expect_none("hpcbridge-replaced:hb-000042 slurm_job_id=7");
	expect_none("HPCBRIDGE:hb-000042");
	expect_none(" hpcbridge:hb-000042");
	expect_none("hpcbridge:hb-0000000000000000000000000000000042");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plugin_tags),
		cmocka_unit_test(test_tags_without_snap),
		cmocka_unit_test(test_appended_text),
		cmocka_unit_test(test_bad_words),
		cmocka_unit_test(test_not_tags),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
