/*
 * test_file.c - file.h: reading a configuration-sized file, and the
 * bytes of data under a path (files, nested directories, hard links
 * counted once, symbolic links not followed, caps and errors).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpcbridge/file.h"
#include "testutil.h"

static char root[64];

static void put(const char *rel, size_t size)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < size; i++)
		fputc('x', f);
	fclose(f);
}

static const char *at(const char *rel)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
	return path;
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/hb-test-file-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(mkdir(at("a"), 0755), 0);
	assert_int_equal(mkdir(at("a/b"), 0755), 0);
	put("one", 1000);
	put("a/two", 20000);
	put("a/b/three", 300);
	put("a/b/empty", 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[192];

	(void)state;
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", root, root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static uint64_t size_ok(const char *path)
{
	struct hb_err err = { 0 };
	uint64_t n = 7;

	if (hb_path_size(path, 1000, 5000, &n, &err))
		fail_msg("%s: %s", path, err.msg);
	return n;
}

static void test_sizes(void **state)
{
	char target[256];

	(void)state;
	assert_int_equal(size_ok(at("")), 21300);
	assert_int_equal(size_ok(at("a")), 20300);
	assert_int_equal(size_ok(at("a/b/three")), 300); /* a file */
	/* a hard link is the same data: counted once */
	snprintf(target, sizeof(target), "%s", at("a/two"));
	assert_int_equal(link(target, at("a/b/two-again")), 0);
	assert_int_equal(size_ok(at("")), 21300);
	/* but both count where only one is under the path */
	assert_int_equal(size_ok(at("a/b")), 20300);
	/* a symbolic link is not followed: its target is elsewhere */
	assert_int_equal(symlink("/usr", at("a/usr")), 0);
	assert_int_equal(size_ok(at("a")), 20300);
}

static void test_errors(void **state)
{
	struct hb_err err = { 0 };
	uint64_t n = 7;

	(void)state;
	assert_int_equal(hb_path_size("relative/dir", 10, 0, &n, &err),
			 HB_EINVAL);
	assert_int_equal(n, 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_path_size(at("missing"), 10, 0, &n, &err),
			 HB_ENOENT);
	assert_non_null(strstr(err.msg, "missing"));
	/* 7 entries (3 directories, 4 files): a cap of 5 stops the walk */
	n = 7;
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_path_size(at(""), 5, 0, &n, &err), HB_ETOOBIG);
	assert_non_null(strstr(err.msg, "more than 5 entries"));
	assert_int_equal(n, 0);
	/* a directory that cannot be read makes the size unknown, not
	 * smaller; root reads everything, so as root the walk runs in a
	 * child that has become nobody */
	assert_int_equal(chmod(root, 0755), 0);
	assert_int_equal(chmod(at("a/b"), 0), 0);
	if (geteuid() == 0) {
		int status = 0;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			memset(&err, 0, sizeof(err));
			if (setgid(65534) || setuid(65534))
				_exit(2);
			_exit(hb_path_size(at(""), 100, 0, &n, &err) ==
					      HB_EPERM &&
				      strstr(err.msg, "a/b") && n == 0
			      ? 0
			      : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	} else {
		memset(&err, 0, sizeof(err));
		assert_int_equal(hb_path_size(at(""), 100, 0, &n, &err),
				 HB_EPERM);
		assert_non_null(strstr(err.msg, "a/b"));
	}
	assert_int_equal(chmod(at("a/b"), 0755), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
