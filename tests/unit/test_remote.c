/*
 * test_remote.c - the local backend runs real processes.
 *
 * Run as root (as CI does), the tests also play a hostile job user
 * (nobody, uid 65534): a child that drops to it changes what the user
 * may change, and the daemon's side must neither follow, block on nor
 * signal what the user points it at.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/remote.h"
#include "testutil.h"

static char dir[64];

#define NOBODY 65534

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/hb-backend-XXXXXX");
	/* 0711, as the backend makes it: a job's user reaches its work dir */
	return mkdtemp(dir) && chmod(dir, 0711) == 0 ? 0 : -1;
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
static struct hb_remote_status wait_done(struct hb_remote *be, const char *id)
{
	struct hb_remote_status st;
	struct hb_err err = { 0 };

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(hb_remote_status(be, id, &st, &err), 0);
		if (hb_remote_phase_done(st.phase))
			return st;
		usleep(10000);
	}
	fail_msg("job %s did not finish", id);
	return st;
}

static void test_run_and_exit_code(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of(
		"hb-1", "#!/bin/sh\necho out; echo err >&2; pwd; exit 3\n");
	struct hb_remote_status st;
	struct hb_buf log;

	(void)state;
	assert_int_equal(hb_remote_local_new(dir, 1000, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	st = wait_done(be, "hb-1");
	assert_int_equal(st.phase, HB_REMOTE_FAILED);
	assert_int_equal(st.exit_code, 3);
	assert_true(st.start_ms > 0 && st.end_ms >= st.start_ms);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_remote_log(be, "hb-1", 0, 1 << 20, &log, &err), 0);
	assert_string_equal(log.data, "out\nerr\n/tmp\n");
	/* From an offset, and capped. */
	hb_buf_reset(&log);
	assert_int_equal(hb_remote_log(be, "hb-1", 4, 3, &log, &err), 0);
	assert_string_equal(log.data, "err");
	hb_buf_reset(&log);
	assert_int_equal(hb_remote_log(be, "hb-1", 100, 10, &log, &err), 0);
	assert_int_equal(log.len, 0);
	hb_buf_free(&log);
	/* A second start adopts: the job does not run again. */
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	st = wait_done(be, "hb-1");
	assert_int_equal(st.exit_code, 3);
	/* Cancelling a finished job changes nothing. */
	assert_int_equal(hb_remote_cancel(be, "hb-1", &err), 0);
	assert_int_equal(wait_done(be, "hb-1").phase, HB_REMOTE_FAILED);
	hb_remote_free(be);
}

static void test_success_without_shebang(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("hb-2", "echo plain sh script\n");
	const char *const env[] = { "HB_TEST_VAR=v1", "PATH=/usr/bin:/bin",
				    NULL };
	struct hb_buf log;

	(void)state;
	j.script = "echo \"$HB_TEST_VAR\"\n";
	j.script_len = strlen(j.script);
	j.env = env;
	assert_int_equal(hb_remote_local_new(dir, 1000, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	assert_int_equal(wait_done(be, "hb-2").phase, HB_REMOTE_SUCCEEDED);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_remote_log(be, "hb-2", 0, 100, &log, &err), 0);
	assert_string_equal(log.data, "v1\n");
	hb_buf_free(&log);
	hb_remote_free(be);
}

static void test_cancel_and_restart(void **state)
{
	struct hb_remote *be, *be2;
	struct hb_err err = { 0 };
	struct hb_remote_job j =
		job_of("hb-3", "#!/bin/sh\ntrap '' TERM\necho started\n"
			       "sleep 30 & wait; sleep 30\n");
	struct hb_remote_status st;

	(void)state;
	assert_int_equal(hb_remote_local_new(dir, 200, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	assert_int_equal(hb_remote_status(be, "hb-3", &st, &err), 0);
	assert_int_equal(st.phase, HB_REMOTE_RUNNING);
	/* A new backend on the same directory (a daemon restart) sees it. */
	assert_int_equal(hb_remote_local_new(dir, 200, &be2, &err), 0);
	hb_remote_free(be);
	assert_int_equal(hb_remote_status(be2, "hb-3", &st, &err), 0);
	assert_int_equal(st.phase, HB_REMOTE_RUNNING);
	/* The script ignores SIGTERM: SIGKILL follows after the grace. */
	assert_int_equal(hb_remote_cancel(be2, "hb-3", &err), 0);
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
	hb_remote_free(be2);
}

/* Run cmd through sh as nobody (no groups); its exit status. */
static int as_user(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int as_user(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	pid_t pid;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 2) < 0 || setgroups(0, NULL) ||
		    setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(99);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(98);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void need_root(void)
{
	if (geteuid() != 0)
		skip();
}

static void expect_owner(const char *rel, uid_t uid, mode_t type, mode_t perm)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(lstat(path, &st), 0);
	if (st.st_uid != uid || (st.st_mode & S_IFMT) != type ||
	    (perm && (st.st_mode & 07777) != perm))
		fail_msg("%s: uid %u mode %o, want uid %u mode %o", rel,
			 (unsigned)st.st_uid, (unsigned)st.st_mode,
			 (unsigned)uid, (unsigned)(type | perm));
}

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A root-owned 0600 file with a secret line; 0 if it still is. */
static void make_canary(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("root secret 7f3a\n", f);
	fclose(f);
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(chmod(path, 0600), 0);
}
static void expect_canary(const char *path)
{
	char buf[64] = "";
	struct stat st;
	FILE *f;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "root secret 7f3a\n");
}

/* The job runs as its user; the daemon's state is root's, the work dir
 * the user's, and the user cannot touch the state. */
static void test_layout_and_user(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j =
		job_of("hb-u1", "#!/bin/sh\nid -u; id -g; id -G; pwd\n");
	struct hb_buf log;

	(void)state;
	need_root();
	j.uid = NOBODY;
	j.gid = NOBODY;
	assert_int_equal(hb_remote_local_new(dir, 1000, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	assert_int_equal(wait_done(be, "hb-u1").phase, HB_REMOTE_SUCCEEDED);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_remote_log(be, "hb-u1", 0, 1 << 20, &log, &err),
			 0);
	assert_string_equal(log.data, "65534\n65534\n65534\n/tmp\n");
	hb_buf_free(&log);
	expect_owner("hb-u1", 0, S_IFDIR, 0711);
	expect_owner("hb-u1/pid", 0, S_IFREG, 0);
	expect_owner("hb-u1/work", NOBODY, S_IFDIR, 0700);
	expect_owner("hb-u1/work/script", NOBODY, S_IFREG, 0700);
	expect_owner("hb-u1/work/output", NOBODY, S_IFREG, 0600);
	expect_owner("hb-u1/work/result", NOBODY, S_IFREG, 0);
	/* The user can neither remove nor plant the daemon's state. */
	assert_int_not_equal(as_user("rm -f %s/hb-u1/pid", dir), 0);
	expect_owner("hb-u1/pid", 0, S_IFREG, 0);
	assert_int_not_equal(as_user("mkfifo %s/hb-u1/cancelled", dir), 0);
	assert_int_not_equal(as_user("mv %s/hb-u1/work %s/hb-u1/w2", dir, dir),
			     0);
	hb_remote_free(be);
}

/* Holes (a), (b), (d): what the user plants in its work dir is never
 * followed, written or blocked on by the daemon. */
static void test_user_plants(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("hb-u2", "echo hello\n");
	struct hb_remote_status st;
	char canary[128];
	struct hb_buf log;
	int64_t t0;

	(void)state;
	need_root();
	j.uid = NOBODY;
	j.gid = NOBODY;
	snprintf(canary, sizeof(canary), "%s/canary", dir);
	make_canary(canary);
	assert_int_equal(hb_remote_local_new(dir, 1000, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	assert_int_equal(wait_done(be, "hb-u2").phase, HB_REMOTE_SUCCEEDED);
	/* (b) output -> a root file: refused, nothing of it read */
	assert_int_equal(as_user("cd %s/hb-u2/work && ln -s %s o && "
				 "mv -f o output",
				 dir, canary),
			 0);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_remote_log(be, "hb-u2", 0, 1 << 20, &log, &err),
			 HB_EPERM);
	assert_non_null(strstr(err.msg, "work/output is a symbolic link"));
	assert_int_equal(log.len, 0);
	/* a hard link (where the kernel allows one) is not the user's */
	memset(&err, 0, sizeof(err));
	if (as_user("cd %s/hb-u2/work && rm output && ln %s output", dir,
		    canary) == 0) {
		assert_int_equal(
			hb_remote_log(be, "hb-u2", 0, 1 << 20, &log, &err),
			HB_EPERM);
		assert_non_null(strstr(err.msg, "owned by uid 0"));
		assert_int_equal(log.len, 0);
	}
	/* (a) script -> a root file, pid gone (it cannot be): a second start
	 * adopts, the root file is untouched */
	assert_int_not_equal(as_user("rm -f %s/hb-u2/pid", dir), 0);
	assert_int_equal(as_user("cd %s/hb-u2/work && rm -f script && "
				 "ln -s %s script",
				 dir, canary),
			 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	expect_canary(canary);
	/* (d) FIFOs for output and result: errors at once, no wait */
	assert_int_equal(as_user("cd %s/hb-u2/work && rm -f output result && "
				 "mkfifo output result",
				 dir),
			 0);
	t0 = ms_now();
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_status(be, "hb-u2", &st, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "work/result is a FIFO"));
	memset(&err, 0, sizeof(err));
	hb_buf_reset(&log);
	assert_int_equal(hb_remote_log(be, "hb-u2", 0, 100, &log, &err),
			 HB_EPERM);
	assert_non_null(strstr(err.msg, "work/output is a FIFO"));
	assert_true(ms_now() - t0 < 1000);
	expect_canary(canary);
	hb_buf_free(&log);
	hb_remote_free(be);
}

/* The first line of DIR/rel. */
static void read_line(const char *rel, char *buf, size_t size)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, (int)size, f));
	fclose(f);
}

/* Hole (c), in depth: even if the daemon's pid file named a root process
 * group, cancel and the SIGKILL after the grace are sent as the job's
 * user, and the kernel refuses them. */
static void test_signals_as_the_user(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("hb-u3", "sleep 30\n");
	struct hb_remote_status st;
	char buf[64], path[256], stat[1024], *p;
	unsigned long long start;
	int job_pid, f, w;
	pid_t root;
	FILE *fp;

	(void)state;
	need_root();
	j.uid = NOBODY;
	j.gid = NOBODY;
	assert_int_equal(hb_remote_local_new(dir, 0, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	assert_int_equal(hb_remote_status(be, "hb-u3", &st, &err), 0);
	assert_int_equal(st.phase, HB_REMOTE_RUNNING);
	read_line("hb-u3/pid", buf, sizeof(buf));
	job_pid = (int)strtol(buf, NULL, 10);
	assert_true(job_pid > 1);
	/* The user cannot write the pid file. */
	assert_int_not_equal(as_user("echo 1 1 >%s/hb-u3/pid", dir), 0);
	/* A root process in a group of its own. */
	root = fork();
	assert_true(root >= 0);
	if (root == 0) {
		setsid();
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(1);
	}
	usleep(50000);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)root);
	fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(stat, sizeof(stat), fp));
	fclose(fp);
	p = strrchr(stat, ')') + 2;
	for (f = 3; f < 22; f++)
		p = strchr(p, ' ') + 1;
	start = strtoull(p, NULL, 10);
	/* The daemon's state says that group, as a user never can make it */
	snprintf(path, sizeof(path), "%s/hb-u3/pid", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "%d %llu\n", (int)root, start);
	fclose(fp);
	assert_int_equal(hb_remote_cancel(be, "hb-u3", &err), 0);
	/* grace 0: SIGKILL at once, and again at each status */
	assert_int_equal(hb_remote_status(be, "hb-u3", &st, &err), 0);
	usleep(100000);
	w = waitpid(root, &f, WNOHANG);
	assert_int_equal(w, 0); /* the root process lives */
	kill(root, SIGKILL);
	waitpid(root, &f, 0);
	kill(-job_pid, SIGKILL);
	hb_remote_free(be);
}

struct starter {
	struct hb_remote *be;
	const struct hb_remote_job *job;
	int rc;
};

static void *start_one(void *arg)
{
	struct starter *s = arg;
	struct hb_err err = { 0 };

	s->rc = hb_remote_start(s->be, s->job, &err);
	return NULL;
}

/* Starts of one id from several threads and two backends (two daemons on
 * one directory) at once run the job once. */
static void test_concurrent_start(void **state)
{
	struct hb_remote *be[2];
	struct hb_err err = { 0 };
	char script[256], buf[64], path[256];
	struct hb_remote_job j;
	struct starter s[8];
	pthread_t t[8];
	int lines = 0;
	FILE *f;

	(void)state;
	snprintf(script, sizeof(script), "echo ran >>%s/ran\n", dir);
	j = job_of("hb-c1", script);
	assert_int_equal(hb_remote_local_new(dir, 1000, &be[0], &err), 0);
	assert_int_equal(hb_remote_local_new(dir, 1000, &be[1], &err), 0);
	for (int i = 0; i < 8; i++) {
		s[i] = (struct starter){ .be = be[i % 2], .job = &j };
		assert_int_equal(pthread_create(&t[i], NULL, start_one, &s[i]),
				 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(s[i].rc, 0);
	}
	assert_int_equal(wait_done(be[0], "hb-c1").phase, HB_REMOTE_SUCCEEDED);
	snprintf(path, sizeof(path), "%s/ran", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f))
		lines++;
	fclose(f);
	assert_int_equal(lines, 1);
	hb_remote_free(be[0]);
	hb_remote_free(be[1]);
}

/* A state directory that is not the daemon's alone is refused, and a job
 * that cannot open its output ends lost, saying why. */
static void test_foreign_dirs(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("hb-o1", "true\n");
	struct hb_remote_status st;
	char sub[128], path[256];

	(void)state;
	need_root();
	/* DIR/<id> of another owner (the old layout) */
	snprintf(path, sizeof(path), "%s/hb-o1", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	assert_int_equal(hb_remote_local_new(dir, 0, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "hb-o1 is owned by uid 65534"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_status(be, "hb-o1", &st, &err), HB_EPERM);
	hb_remote_free(be);
	/* DIR writable by others */
	snprintf(sub, sizeof(sub), "%s/open", dir);
	assert_int_equal(mkdir(sub, 0777), 0);
	assert_int_equal(chmod(sub, 0777), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_local_new(sub, 0, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "others may write"));
	hb_remote_free(be);
	/* DIR a symbolic link */
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink(sub, path), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_local_new(path, 0, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), HB_EIO);
	assert_non_null(strstr(err.msg, "not a directory"));
	hb_remote_free(be);
	/* A job whose output is a directory: lost, with the reason */
	j.id = "hb-o2";
	j.uid = NOBODY;
	j.gid = NOBODY;
	snprintf(path, sizeof(path), "%s/hb-o2", dir);
	assert_int_equal(mkdir(path, 0711), 0);
	snprintf(path, sizeof(path), "%s/hb-o2/work", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/hb-o2/work/output", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_local_new(dir, 0, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), 0);
	assert_int_equal(hb_remote_status(be, "hb-o2", &st, &err), 0);
	assert_int_equal(st.phase, HB_REMOTE_LOST);
	assert_non_null(strstr(st.message, "work/output"));
	hb_remote_free(be);
}

static void test_bad_input(void **state)
{
	struct hb_remote *be;
	struct hb_err err = { 0 };
	struct hb_remote_job j = job_of("../etc", "true\n");
	struct hb_remote_status st;
	struct hb_buf log;

	(void)state;
	assert_int_equal(hb_remote_local_new("relative", 0, &be, &err),
			 HB_EINVAL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_remote_local_new(dir, 0, &be, &err), 0);
	assert_int_equal(hb_remote_start(be, &j, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "bad job id"));
	j.id = "Upper";
	assert_int_equal(hb_remote_start(be, &j, NULL), HB_EINVAL);
	j.id = "-x";
	assert_int_equal(hb_remote_start(be, &j, NULL), HB_EINVAL);
	j.id = "ok-1";
	j.workdir = "tmp";
	assert_int_equal(hb_remote_start(be, &j, NULL), HB_EINVAL);
	assert_int_equal(hb_remote_status(be, "nope", &st, NULL), HB_ENOENT);
	hb_buf_init(&log, 0);
	assert_int_equal(hb_remote_log(be, "nope", 0, 10, &log, NULL),
			 HB_ENOENT);
	hb_buf_free(&log);
	assert_int_equal(hb_remote_cancel(be, "nope", NULL), HB_ENOENT);
	assert_string_equal(hb_remote_phase_name(HB_REMOTE_LOST), "lost");
	assert_string_equal(hb_remote_phase_name((enum hb_remote_phase)99),
			    "unknown");
	hb_remote_free(be);
	hb_remote_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_and_exit_code),
		cmocka_unit_test(test_success_without_shebang),
		cmocka_unit_test(test_cancel_and_restart),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_layout_and_user),
		cmocka_unit_test(test_user_plants),
		cmocka_unit_test(test_signals_as_the_user),
		cmocka_unit_test(test_concurrent_start),
		cmocka_unit_test(test_foreign_dirs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
