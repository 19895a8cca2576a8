/*
 * test_mirror_agent.c - the agent that does the filesystem's part of the
 * daemon's mirroring as the user: scan, open (confined: no link, no
 * "..", a descriptor only for a regular file), materialise with bytes the
 * daemon's side streams, a source that fails leaving the last good
 * directory intact, and a hostile agent (oversized frames, a pipe passed
 * as a file, an index past the manifest, silence) that the daemon's side
 * must refuse without harm.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpcbridge/mirror.h"
#include "test_ckpt_util.h"

static char root[64], dir[96], target[96], canary[96];
static pid_t agent_pid;

static const char *in(const char *base, const char *rel)
{
	static char path[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", base, rel);
	return path[k];
}

static char *slurp(const char *path)
{
	static char buf[4][256];
	static int k;
	int fd = open(path, O_RDONLY);
	ssize_t n;

	k = (k + 1) % 4;
	if (fd < 0)
		return NULL;
	n = read(fd, buf[k], sizeof(buf[k]) - 1);
	close(fd);
	buf[k][n < 0 ? 0 : n] = '\0';
	return buf[k];
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/hbagent.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/ck", root);
	snprintf(target, sizeof(target), "%s/new", root);
	snprintf(canary, sizeof(canary), "%s/canary", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(in(dir, "sub"), 0755), 0);
	ckpt_test_put(in(dir, "a"), "alpha", 5, 0644);
	ckpt_test_put(in(dir, "sub/b"), "beta", 4, 0600);
	ckpt_test_put(canary, "canary", 6, 0600);
	assert_int_equal(symlink(canary, in(dir, "link")), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* A real agent on dir in a child process. */
static struct hb_mirror_agent *start(const char *d)
{
	struct hb_mirror_agent *a = NULL;
	struct hb_err err = { 0 };
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv),
			 0);
	agent_pid = fork();
	assert_true(agent_pid >= 0);
	if (agent_pid == 0) {
		close(sv[0]);
		_exit(hb_mirror_agent_serve(sv[1], d, &err) ? 1 : 0);
	}
	close(sv[1]);
	assert_int_equal(hb_mirror_agent_new(sv[0], 5000, &a, &err), 0);
	return a;
}

/* End the agent and expect it to exit with status want. */
static void stop(struct hb_mirror_agent *a, int want)
{
	int status;

	hb_mirror_agent_free(a);
	assert_int_equal(waitpid(agent_pid, &status, 0), agent_pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), want);
}

static void test_scan(void **state)
{
	struct hb_mirror_agent *a = start(dir);
	struct hb_ckpt_manifest *m = NULL;
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_mirror_agent_scan(a, "42", &m, &err), 0);
	/* The link is not followed: only a and sub/b. */
	assert_int_equal(m->nfiles, 2);
	assert_string_equal(m->files[0].path, "a");
	assert_int_equal(m->files[0].size, 5);
	assert_string_equal(m->files[1].path, "sub/b");
	assert_int_equal(m->files[1].mode, 0600);
	assert_string_equal(m->job, "42");
	hb_ckpt_manifest_free(m);
	stop(a, 0);
}

static void test_open(void **state)
{
	struct hb_mirror_agent *a = start(dir);
	struct hb_err err = { 0 };
	char buf[16] = { 0 };
	int fd;

	(void)state;
	fd = hb_mirror_agent_open(a, "sub/b", 4, &err);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 4);
	assert_string_equal(buf, "beta");
	close(fd);

	/* A link to the canary is not opened. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_mirror_agent_open(a, "link", 6, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "link"));
	/* Nor is a path out of the directory. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_mirror_agent_open(a, "../canary", 6, &err),
			 HB_EINVAL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_mirror_agent_open(a, "/etc/passwd", 6, &err),
			 HB_EINVAL);
	/* A file whose size is not the scan's has changed. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_mirror_agent_open(a, "a", 6, &err), HB_EAGAIN);
	assert_non_null(strstr(err.msg, "changed"));
	stop(a, 0);
}

/* Bytes of a file by its path, as S3 would give them; fail_path fails. */
struct mem_src {
	const char *fail_path;
	int calls;
};

static int mem_src(void *ctx, const struct hb_ckpt_file *f,
		   hb_s3_sink_fn sink, void *arg, struct hb_err *err)
{
	struct mem_src *ms = ctx;
	const char *text = !strcmp(f->path, "a") ? "alpha" : "beta";

	ms->calls++;
	if (ms->fail_path && !strcmp(f->path, ms->fail_path))
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "objects/xyz (file %s): digest mismatch",
				  f->path);
	return sink(text, strlen(text), arg);
}

static char *manifest_text(void)
{
	struct hb_ckpt_scan_opts so = { .job = "42" };
	struct hb_ckpt_manifest *m = NULL;
	struct hb_err err = { 0 };
	struct hb_buf b;

	assert_int_equal(hb_ckpt_scan(dir, &so, &m, NULL, &err), 0);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_ckpt_manifest_write(m, &b), 0);
	hb_ckpt_manifest_free(m);
	return hb_buf_steal(&b);
}

static void test_put(void **state)
{
	struct hb_mirror_agent *a = start(target);
	struct hb_ckpt_mat_stats st;
	struct mem_src ms = { 0 };
	struct hb_err err = { 0 };
	char *json = manifest_text();
	struct stat sb;

	(void)state;
	assert_int_equal(hb_mirror_agent_put(a, json, strlen(json), mem_src,
					     &ms, &st, &err),
			 0);
	assert_int_equal(st.fetched, 2);
	assert_int_equal(ms.calls, 2);
	assert_string_equal(slurp(in(target, "a")), "alpha");
	assert_string_equal(slurp(in(target, "sub/b")), "beta");
	assert_int_equal(stat(in(target, "sub/b"), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);

	/* Again: both files are there already, nothing is asked for. */
	ms.calls = 0;
	assert_int_equal(hb_mirror_agent_put(a, json, strlen(json), mem_src,
					     &ms, &st, &err),
			 0);
	assert_int_equal(ms.calls, 0);
	assert_int_equal(st.fetched, 0);
	assert_int_equal(st.kept, 2);
	stop(a, 0);
	free(json);
}

static void test_put_fails(void **state)
{
	struct hb_mirror_agent *a;
	struct hb_ckpt_mat_stats st;
	struct mem_src ms = { .fail_path = "sub/b" };
	struct hb_err err = { 0 };
	char *json;

	(void)state;
	/* A checkpoint whose b changed, into the good target of before. */
	ckpt_test_put(in(dir, "sub/b"), "BETA", 4, 0600);
	json = manifest_text();
	ckpt_test_put(in(dir, "sub/b"), "beta", 4, 0600);
	a = start(target);
	assert_int_equal(hb_mirror_agent_put(a, json, strlen(json), mem_src,
					     &ms, &st, &err),
			 HB_EIO);
	assert_non_null(strstr(err.msg, "sub/b"));
	assert_non_null(strstr(err.msg, "digest mismatch"));
	/* The last good directory is as it was, and no partial is left. */
	assert_string_equal(slurp(in(target, "sub/b")), "beta");
	assert_string_equal(slurp(in(target, "a")), "alpha");
	assert_int_equal(access(in(root, ".new.hbpart"), F_OK), -1);
	stop(a, 0);
	free(json);
}

/* ---- a hostile agent ---------------------------------------------- */

static void raw_frame(int sock, char type, const void *p, uint32_t n,
		      int passfd)
{
	unsigned char hdr[8] = { (unsigned char)type, 0, 0, 0 };
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov[2] = { { hdr, 8 }, { (void *)p, n } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n ? 2 : 1 };

	memcpy(hdr + 4, &n, 4);
	if (passfd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &passfd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		_exit(3);
}

enum evil { HUGE_FRAME, PIPE_FD, BAD_INDEX, SILENT };

/* An "agent" that reads one request and answers it as evil says. */
static struct hb_mirror_agent *start_evil(enum evil how, int timeout_ms)
{
	struct hb_mirror_agent *a = NULL;
	struct hb_err err = { 0 };
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv),
			 0);
	agent_pid = fork();
	assert_true(agent_pid >= 0);
	if (agent_pid == 0) {
		char req[65536];
		int p[2];
		uint32_t big = 0x7fffffff, idx = 99;

		close(sv[0]);
		if (read(sv[1], req, sizeof(req)) <= 0)
			_exit(4);
		switch (how) {
		case HUGE_FRAME: {
			unsigned char hdr[8] = { 'M', 0, 0, 0 };

			memcpy(hdr + 4, &big, 4);
			if (write(sv[1], hdr, 8) != 8)
				_exit(3);
			break;
		}
		case PIPE_FD:
			if (pipe(p))
				_exit(3);
			raw_frame(sv[1], 'F', NULL, 0, p[0]);
			break;
		case BAD_INDEX:
			raw_frame(sv[1], 'G', &idx, sizeof(idx), -1);
			break;
		case SILENT:
			break;
		}
		/* Wait for the daemon's side to hang up. */
		while (read(sv[1], req, sizeof(req)) > 0)
			;
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(hb_mirror_agent_new(sv[0], timeout_ms, &a, &err), 0);
	return a;
}

static void test_hostile_agent(void **state)
{
	struct hb_mirror_agent *a;
	struct hb_ckpt_manifest *m = NULL;
	struct hb_ckpt_mat_stats st;
	struct mem_src ms = { 0 };
	struct hb_err err = { 0 };
	char *json = manifest_text();
	int fds = ckpt_test_nfds();

	(void)state;
	a = start_evil(HUGE_FRAME, 5000);
	assert_int_equal(hb_mirror_agent_scan(a, "1", &m, &err), HB_EPROTO);
	assert_null(m);
	assert_non_null(strstr(err.msg, "malformed frame"));
	stop(a, 0);

	memset(&err, 0, sizeof(err));
	a = start_evil(PIPE_FD, 5000);
	assert_int_equal(hb_mirror_agent_open(a, "a", 5, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "not a regular file"));
	stop(a, 0);

	memset(&err, 0, sizeof(err));
	a = start_evil(BAD_INDEX, 5000);
	assert_int_equal(hb_mirror_agent_put(a, json, strlen(json), mem_src,
					     &ms, &st, &err),
			 HB_EPROTO);
	assert_non_null(strstr(err.msg, "file 99 of 2"));
	assert_int_equal(ms.calls, 0);
	stop(a, 0);

	memset(&err, 0, sizeof(err));
	a = start_evil(SILENT, 300);
	assert_int_equal(hb_mirror_agent_scan(a, "1", &m, &err),
			 HB_ETIMEDOUT);
	stop(a, 0);
	/* No descriptor the agents sent stayed open here. */
	assert_int_equal(ckpt_test_nfds(), fds);
	free(json);
}

/* The agent run as nobody by hb_mirror_agent_spawn(): what it makes is
 * nobody's, and it cannot be made to run as root. */
static void test_spawn(void **state)
{
	struct hb_mirror_agent *a = NULL;
	struct hb_ckpt_mat_stats st;
	struct mem_src ms = { 0 };
	struct hb_err err = { 0 };
	char *json = manifest_text(), home[128];
	const uid_t nobody = 65534;
	gid_t g = 65534;
	struct stat sb;

	(void)state;
	if (geteuid() != 0) {
		free(json);
		skip();
	}
	assert_int_equal(hb_mirror_agent_spawn("/proc/self/exe", "/x", 0, 0,
					       NULL, 0, 5000, &a, &err),
			 HB_EPERM);
	assert_null(a);

	/* nobody must reach its directory through root's. */
	assert_int_equal(chmod(root, 0711), 0);
	snprintf(home, sizeof(home), "%s/nobody", root);
	assert_int_equal(mkdir(home, 0700), 0);
	assert_int_equal(chown(home, nobody, g), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_mirror_agent_spawn("/proc/self/exe",
					       in(home, "ck"), nobody, g, &g,
					       1, 5000, &a, &err),
			 0);
	if (hb_mirror_agent_put(a, json, strlen(json), mem_src, &ms, &st,
				&err))
		fail_msg("put as nobody: %s", err.msg);
	assert_int_equal(stat(in(home, "ck/sub/b"), &sb), 0);
	assert_int_equal(sb.st_uid, nobody);
	assert_int_equal(stat(in(home, "ck"), &sb), 0);
	assert_int_equal(sb.st_uid, nobody);
	hb_mirror_agent_free(a);

	/* Where nobody may not write, nothing is written. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_mirror_agent_spawn("/proc/self/exe",
					       in(root, "rootonly"), nobody, g,
					       &g, 1, 5000, &a, &err),
			 0);
	assert_int_not_equal(hb_mirror_agent_put(a, json, strlen(json),
						 mem_src, &ms, &st, &err),
			     0);
	assert_non_null(strstr(err.msg, "Permission denied"));
	assert_int_equal(access(in(root, "rootonly"), F_OK), -1);
	hb_mirror_agent_free(a);
	assert_int_equal(chmod(root, 0700), 0);
	free(json);
}

int main(int argc, char **argv)
{
	if (hb_mirror_agent_main(argc, argv) >= 0)
		return 2;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_put),
		cmocka_unit_test(test_put_fails),
		cmocka_unit_test(test_hostile_agent),
		cmocka_unit_test(test_spawn),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
