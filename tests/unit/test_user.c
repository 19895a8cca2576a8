/*
 * test_user.c - user.h: the groups and home a process takes when it drops
 * to a user (as initgroups() would: the gid and the passwd name's groups;
 * the gid alone for a uid with no passwd entry).
 */
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/user.h"
#include "testutil.h"

static void test_known_user(void **state)
{
	struct hb_err err = { 0 };
	struct passwd *pw = getpwuid(0);
	gid_t *g = NULL;
	size_t n = 0;
	char *home = NULL;
	int has0 = 0;

	(void)state;
	assert_non_null(pw);
	assert_int_equal(hb_user_lookup(0, 0, &g, &n, &home, &err), 0);
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++)
		has0 |= g[i] == 0;
	assert_true(has0);
	assert_non_null(home);
	assert_string_equal(home, pw->pw_dir);
	free(g);
	free(home);
	/* no home wanted */
	assert_int_equal(hb_user_lookup(0, 0, &g, &n, NULL, &err), 0);
	assert_true(n >= 1);
	free(g);
}

static void test_unknown_user(void **state)
{
	struct hb_err err = { 0 };
	gid_t *g = NULL;
	size_t n = 0;
	char *home = (char *)"unset";

	(void)state;
	/* a uid with no passwd entry: only its group, no home */
	assert_null(getpwuid(3999999999u));
	assert_int_equal(
		hb_user_lookup(3999999999u, 12345, &g, &n, &home, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(g[0], 12345);
	assert_null(home);
	free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_user),
		cmocka_unit_test(test_unknown_user),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
