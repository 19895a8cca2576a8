/*
 * test_backend.c - the local backend runs real processes.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/backend.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/hb-backend-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct hb_remote_job job_of(const char *id, const char *script)
{
	struct hb_remote_job j = {
		.id = id,
		.script = script,
		.script_len = strlen(script),
		.uid = geteuid(),
		.gid = getegid(),
		.workdir = "/tmp",
	};
	return j;
}

/* Poll until the job is final (or 10 s pass). */
static struct hb_remote_status wait_done(struct hb_backend *be, const char *id)
{
	struct hb_remote_status st;
	struct hb_err err = { 0 };

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(hb_backend_status(be, id, &st, &err), 0);
		if (hb_remote_phase_done(st.phase))
			return st;
		usleep(10000);
	}
	fail_msg("job %s did not finish", id);
	return st;
}

static void test_run_and_exit_code(void **state)
{
	struct hb_backend *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of(
		"hb-1", "#!/bin/sh\necho out; echo err >&2; pwd; exit 3\n");
	struct hb_remote_status st;
	struct hb_buf log;

	(void)state;
	assert_int_equal(hb_backend_local_new(dir, 1000, &be, &err), 0);
	assert_int_equal(hb_backend_start(be, &j, &err), 0);
	st = wait_done(be, "hb-1");
	assert_int_equal(st.phase, HB_REMOTE_FAILED);
	assert_int_equal(st.exit_code, 3);
	assert_true(st.start_ms > 0 && st.end_ms >= st.start_ms);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_backend_log(be, "hb-1", 0, 1 << 20, &log, &err), 0);
	assert_string_equal(log.data, "out\nerr\n/tmp\n");
	/* From an offset, and capped. */
	hb_buf_reset(&log);
	assert_int_equal(hb_backend_log(be, "hb-1", 4, 3, &log, &err), 0);
	assert_string_equal(log.data, "err");
	hb_buf_reset(&log);
	assert_int_equal(hb_backend_log(be, "hb-1", 100, 10, &log, &err), 0);
	assert_int_equal(log.len, 0);
	hb_buf_free(&log);
	/* A second start adopts: the job does not run again. */
	assert_int_equal(hb_backend_start(be, &j, &err), 0);
	st = wait_done(be, "hb-1");
	assert_int_equal(st.exit_code, 3);
	/* Cancelling a finished job changes nothing. */
	assert_int_equal(hb_backend_cancel(be, "hb-1", &err), 0);
	assert_int_equal(wait_done(be, "hb-1").phase, HB_REMOTE_FAILED);
	hb_backend_free(be);
}

static void test_success_without_shebang(void **state)
{
	struct hb_backend *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("hb-2", "echo plain sh script\n");
	const char *const env[] = { "HB_TEST_VAR=v1", "PATH=/usr/bin:/bin",
				    NULL };
	struct hb_buf log;

	(void)state;
	j.script = "echo \"$HB_TEST_VAR\"\n";
	j.script_len = strlen(j.script);
	j.env = env;
	assert_int_equal(hb_backend_local_new(dir, 1000, &be, &err), 0);
	assert_int_equal(hb_backend_start(be, &j, &err), 0);
	assert_int_equal(wait_done(be, "hb-2").phase, HB_REMOTE_SUCCEEDED);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_backend_log(be, "hb-2", 0, 100, &log, &err), 0);
	assert_string_equal(log.data, "v1\n");
	hb_buf_free(&log);
	hb_backend_free(be);
}

static void test_cancel_and_restart(void **state)
{
	struct hb_backend *be, *be2;
	struct hb_err err = { 0 };
	struct hb_remote_job j =
		job_of("hb-3", "#!/bin/sh\ntrap '' TERM\necho started\n"
			       "sleep 30 & wait; sleep 30\n");
	struct hb_remote_status st;

	(void)state;
	assert_int_equal(hb_backend_local_new(dir, 200, &be, &err), 0);
	assert_int_equal(hb_backend_start(be, &j, &err), 0);
	assert_int_equal(hb_backend_status(be, "hb-3", &st, &err), 0);
	assert_int_equal(st.phase, HB_REMOTE_RUNNING);
	/* A new backend on the same directory (a daemon restart) sees it. */
	assert_int_equal(hb_backend_local_new(dir, 200, &be2, &err), 0);
	hb_backend_free(be);
	assert_int_equal(hb_backend_status(be2, "hb-3", &st, &err), 0);
	assert_int_equal(st.phase, HB_REMOTE_RUNNING);
	/* The script ignores SIGTERM: SIGKILL follows after the grace. */
	assert_int_equal(hb_backend_cancel(be2, "hb-3", &err), 0);
	st = wait_done(be2, "hb-3");
	assert_int_equal(st.phase, HB_REMOTE_CANCELLED);
	{
		/* Nothing of the job's process group is left. */
		char path[128], buf[64];
		FILE *f;
		int pid = 0;

		snprintf(path, sizeof(path), "%s/hb-3/pid", dir);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		pid = (int)strtol(buf, NULL, 10);
		assert_true(pid > 1);
		assert_int_equal(kill(-pid, 0), -1);
	}
	hb_backend_free(be2);
}

static void test_bad_input(void **state)
{
	struct hb_backend *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("../etc", "true\n");
	struct hb_remote_status st;
	struct hb_buf log;

	(void)state;
	assert_int_equal(hb_backend_local_new("relative", 0, &be, &err),
			 HB_EINVAL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_backend_local_new(dir, 0, &be, &err), 0);
	assert_int_equal(hb_backend_start(be, &j, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "bad job id"));
	j.id = "Upper";
	assert_int_equal(hb_backend_start(be, &j, NULL), HB_EINVAL);
	j.id = "-x";
	assert_int_equal(hb_backend_start(be, &j, NULL), HB_EINVAL);
	j.id = "ok-1";
	j.workdir = "tmp";
	assert_int_equal(hb_backend_start(be, &j, NULL), HB_EINVAL);
	assert_int_equal(hb_backend_status(be, "nope", &st, NULL), HB_ENOENT);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_backend_log(be, "nope", 0, 10, &log, NULL),
			 HB_ENOENT);
	hb_buf_free(&log);
	assert_int_equal(hb_backend_cancel(be, "nope", NULL), HB_ENOENT);
	assert_string_equal(hb_remote_phase_name(HB_REMOTE_LOST), "lost");
	assert_string_equal(hb_remote_phase_name((enum hb_remote_phase)99),
			    "unknown");
	hb_backend_free(be);
	hb_backend_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_and_exit_code),
		cmocka_unit_test(test_success_without_shebang),
		cmocka_unit_test(test_cancel_and_restart),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
