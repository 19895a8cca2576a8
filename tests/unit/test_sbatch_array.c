/*
 * test_sbatch_array.c - hb_sbatch_array_has(): whether an array task is
 * one of an --array spec, as sbatch reads it.  The daemon checks a
 * shadow's array_task with it (remote_start).
 */
#include <stdint.h>

#include "hpcbridge/sbatch.h"
#include "testutil.h"

static void test_members(void **state)
{
	(void)state;
	assert_true(hb_sbatch_array_has("0-2", 0));
	assert_true(hb_sbatch_array_has("0-2", 2));
	assert_false(hb_sbatch_array_has("0-2", 3));
	assert_true(hb_sbatch_array_has("1,5,9", 5));
	assert_false(hb_sbatch_array_has("1,5,9", 4));
	/* steps and a running limit */
	assert_true(hb_sbatch_array_has("0-15:4%2", 12));
	assert_false(hb_sbatch_array_has("0-15:4%2", 13));
	assert_true(hb_sbatch_array_has("[3-4]", 4));
	assert_true(hb_sbatch_array_has("7", 7));
	assert_false(hb_sbatch_array_has("7", 0));
	assert_true(hb_sbatch_array_has("0-1000", 1000));
}

static void test_refused(void **state)
{
	(void)state;
	/* nothing, or a spec sbatch refuses, has no task */
	assert_false(hb_sbatch_array_has(NULL, 0));
	assert_false(hb_sbatch_array_has("", 0));
	assert_false(hb_sbatch_array_has("x", 0));
	assert_false(hb_sbatch_array_has("3-1", 2));
	assert_false(hb_sbatch_array_has("0-4000000", 5));
	assert_false(hb_sbatch_array_has("0-9:0", 5));
	/* past what Slurm allows, whatever the spec */
	assert_false(hb_sbatch_array_has("0-10", 4000000));
	assert_false(hb_sbatch_array_has("0-10", UINT32_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
