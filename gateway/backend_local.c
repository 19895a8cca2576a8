/*
 * backend_local.c - the local backend: a burst job's script runs on this
 * host, as the job's user, in a session of its own.
 *
 * It stands in for a cluster in the tests that check the daemon's and the
 * shadow's mechanics (HB_SANDBOX_BACKEND=local).
 * Each job lives in DIR/<id>/:
 *
 *   script     the job's script, run as is (mode 0700)
 *   output     its stdout and stderr
 *   pid        "PID STARTTIME" of the job's session leader, written by the
 *              job itself before it runs the script (STARTTIME, from
 *              /proc/PID/stat, tells a reused pid apart)
 *   result     its exit status, written when the script ends
 *   cancelled  "MS": when cancel was asked (SIGTERM sent); past the grace
 *              period the next status check sends SIGKILL
 *
 * The job is double-forked, so it is never the daemon's child: no zombie
 * to reap, and it outlives a daemon restart.  A new backend on the same
 * directory sees every job the old one started.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/backend.h"

#define SMALL_FILE 64

struct local {
	struct hb_backend be; /* first */
	char *dir;
	int grace_ms;
};

/* DIR/<id>[/name] into p; HB_EINVAL for a bad id. */
static int job_path(const struct local *be, const char *id,
		    const char *name, char p[PATH_MAX], struct hb_err *err)
{
	int n;

	if (!hb_remote_id_valid(id))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: bad job id '%.80s'",
				  id ? id : "");
	n = name ? snprintf(p, PATH_MAX, "%s/%s/%s", be->dir, id, name)
		 : snprintf(p, PATH_MAX, "%s/%s", be->dir, id);
	if (n < 0 || n >= PATH_MAX)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "local backend: path too long");
	return 0;
}

/* Read a small file into buf (NUL-terminated); HB_ENOENT if missing. */
static int read_small(const char *path, char buf[SMALL_FILE])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? HB_ENOENT : HB_EIO;
	n = read(fd, buf, SMALL_FILE - 1);
	close(fd);
	if (n < 0)
		return HB_EIO;
	buf[n] = '\0';
	return 0;
}

/* Write a small file atomically (tmp + rename). */
static int write_small(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);

	if (n < 0 || (size_t)n >= sizeof(tmp))
		return HB_ETOOBIG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return HB_EIO;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0) {
		close(fd);
		unlink(tmp);
		return HB_EIO;
	}
	close(fd);
	return rename(tmp, path) == 0 ? 0 : HB_EIO;
}

/* Field 22 (starttime) of /proc/PID/stat, and whether it is a zombie. */
static int proc_start(pid_t pid, unsigned long long *start, int *zombie)
{
	char path[64], buf[1024], *p;
	int fd, field;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return HB_ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return HB_ENOENT;
	buf[n] = '\0';
	/* The command name may hold spaces and ')': skip to the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return HB_EIO;
	p += 2;
	*zombie = *p == 'Z' || *p == 'X';
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return HB_EIO;
	*start = strtoull(p, NULL, 10);
	return 0;
}

/*
 * The job's process group, if any of it is still alive (0 otherwise).  The
 * leader (the wrapper shell) may be gone while the script lives on, for
 * instance when the script ignores SIGTERM.
 */
static pid_t live_pid(const char *pidfile)
{
	char buf[SMALL_FILE], *end;
	unsigned long long want, have;
	long pid;
	int zombie;

	if (read_small(pidfile, buf))
		return 0;
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || pid <= 1 || *end != ' ')
		return 0;
	want = strtoull(end + 1, NULL, 10);
	if (!proc_start((pid_t)pid, &have, &zombie)) {
		if (have != want)
			return 0; /* the pid is another process's now */
		if (!zombie)
			return (pid_t)pid;
	}
	return kill(-(pid_t)pid, 0) == 0 ? (pid_t)pid : 0;
}

/* In the job's process: become the user, then run the script through a
 * shell that records its exit status.  Never returns. */
static void run_job(const struct hb_remote_job *job, const char *jdir,
		    const char *pidfile, const char *out)
{
	/* $1: job dir.  The status of "$1/script" is kept in result. */
	static const char wrapper[] =
		"\"$1/script\"; s=$?; "
		"printf '%s %s\\n' \"$s\" \"$(date +%s%3N)\" "
		">\"$1/result.tmp\" "
		"&& mv -f \"$1/result.tmp\" \"$1/result\"";
	char pidtext[64];
	unsigned long long start;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];
	int zombie, fd;

	/* The job's own session and process group: cancel signals it all. */
	if (setsid() < 0 || proc_start(getpid(), &start, &zombie))
		_exit(127);
	snprintf(pidtext, sizeof(pidtext), "%d %llu\n", (int)getpid(), start);
	if (write_small(pidfile, pidtext))
		_exit(127);
	getpwuid_r(job->uid, &pw, pwbuf, sizeof(pwbuf), &pwp);
	if (geteuid() == 0 && job->uid != 0) {
		if ((pwp ? initgroups(pw.pw_name, job->gid)
			 : setgroups(0, NULL)) != 0 ||
		    setgid(job->gid) != 0 || setuid(job->uid) != 0)
			_exit(126);
	}
	if (chdir(job->workdir	       ? job->workdir
		  : pwp && pwp->pw_dir ? pwp->pw_dir
				       : "/") != 0 &&
	    chdir("/") != 0)
		_exit(126);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	fd = open(out, O_WRONLY | O_APPEND);
	if (fd < 0)
		_exit(126);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	if (job->env)
		execle("/bin/sh", "sh", "-c", wrapper, "hpcbridge-job", jdir,
		       (char *)NULL, (char *const *)job->env);
	else
		execl("/bin/sh", "sh", "-c", wrapper, "hpcbridge-job", jdir,
		      (char *)NULL);
	_exit(127);
}

/* mkdir -p dir, each new level 0711. */
static int make_dirs(const char *dir, struct hb_err *err)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);

	if (n >= sizeof(p))
		return hb_err_set(err, HB_ETOOBIG, NULL, 0, "path too long");
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0711) != 0 && errno != EEXIST)
			return hb_err_set(err, HB_EIO, p, 0,
					  "cannot create: %s", strerror(errno));
		p[i] = i < n ? '/' : '\0';
	}
	return 0;
}

/* Create a file owned by the job's user with the given bytes. */
static int make_file(const char *path, mode_t mode,
		     const struct hb_remote_job *job, const char *data,
		     size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int rc = 0;

	if (fd < 0)
		return HB_EIO;
	if (len && write(fd, data, len) != (ssize_t)len)
		rc = HB_EIO;
	if (!rc && job->uid != geteuid() && fchown(fd, job->uid, job->gid) != 0)
		rc = HB_EPERM;
	if (!rc && fsync(fd) != 0)
		rc = HB_EIO;
	close(fd);
	return rc;
}

static int local_start(struct hb_backend *b, const struct hb_remote_job *job,
		       struct hb_err *err)
{
	struct local *be = (struct local *)b;
	char jdir[PATH_MAX], path[PATH_MAX], pidfile[PATH_MAX];
	struct stat st;
	pid_t child;
	int rc, status;

	if (!be || !job || !job->script)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: missing job");
	if ((rc = job_path(be, job->id, NULL, jdir, err)))
		return rc;
	if (job->workdir && job->workdir[0] != '/')
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: %s: workdir must be "
				  "absolute",
				  job->id);
	if ((rc = job_path(be, job->id, "output", path, err)) ||
	    (rc = job_path(be, job->id, "script", path, err)) ||
	    (rc = job_path(be, job->id, "pid", pidfile, err)))
		return rc;
	if (stat(pidfile, &st) == 0)
		return 0; /* started before: adopt */
	if ((rc = make_dirs(be->dir, err)))
		return rc;
	if (mkdir(jdir, 0700) != 0 && errno != EEXIST)
		return hb_err_set(err, HB_EIO, jdir, 0, "cannot create: %s",
				  strerror(errno));
	if (job->uid != geteuid() && chown(jdir, job->uid, job->gid) != 0)
		return hb_err_set(err, HB_EPERM, jdir, 0, "cannot chown: %s",
				  strerror(errno));
	job_path(be, job->id, "script", path, NULL);
	if ((rc = make_file(path, 0700, job, job->script, job->script_len)))
		return hb_err_set(err, rc, path, 0, "cannot write the script");
	job_path(be, job->id, "output", path, NULL);
	if ((rc = make_file(path, 0600, job, "", 0)))
		return hb_err_set(err, rc, path, 0, "cannot create the output");
	child = fork();
	if (child < 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "fork: %s",
				  strerror(errno));
	if (child == 0) {
		/* Reset what the daemon may have blocked or ignored. */
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		job_path(be, job->id, "output", path, NULL);
		if (fork() == 0)
			run_job(job, jdir, pidfile, path);
		_exit(0);
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	/* Wait (briefly) for the job to record its pid, so that a status
	 * right after start sees it running. */
	for (int i = 0; i < 200 && stat(pidfile, &st) != 0; i++)
		usleep(1000);
	return 0;
}

static int local_status(struct hb_backend *b, const char *id,
			struct hb_remote_status *out, struct hb_err *err)
{
	struct local *be = (struct local *)b;
	char path[PATH_MAX], buf[SMALL_FILE], *end;
	int64_t cancel_ms = 0;
	struct stat st;
	pid_t pid;
	int rc;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	if ((rc = job_path(be, id, NULL, path, err)))
		return rc;
	if (stat(path, &st) != 0)
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "local backend: no job %s", id);
	job_path(be, id, "cancelled", path, NULL);
	if (!read_small(path, buf))
		cancel_ms = strtoll(buf, NULL, 10);
	job_path(be, id, "pid", path, NULL);
	if (stat(path, &st) == 0)
		out->start_ms = (int64_t)st.st_mtim.tv_sec * 1000 +
				st.st_mtim.tv_nsec / 1000000;
	job_path(be, id, "result", path, NULL);
	if (!read_small(path, buf)) {
		long code;

		errno = 0;
		code = strtol(buf, &end, 10);
		if (errno || end == buf || code < 0 || code > 255)
			return hb_err_set(err, HB_EIO, path, 0,
					  "malformed result");
		out->exit_code = (int)code;
		out->end_ms = strtoll(end, NULL, 10);
		out->phase = cancel_ms	 ? HB_REMOTE_CANCELLED
			     : code == 0 ? HB_REMOTE_SUCCEEDED
					 : HB_REMOTE_FAILED;
		return 0;
	}
	job_path(be, id, "pid", path, NULL);
	if (!out->start_ms) {
		out->phase =
			cancel_ms ? HB_REMOTE_CANCELLED : HB_REMOTE_PENDING;
		return 0;
	}
	pid = live_pid(path);
	if (pid) {
		out->phase = HB_REMOTE_RUNNING;
		if (cancel_ms && hb_remote_now_ms() - cancel_ms >= be->grace_ms)
			kill(-pid, SIGKILL);
		return 0;
	}
	/* Gone without a result: killed by cancel, or lost. */
	out->phase = cancel_ms ? HB_REMOTE_CANCELLED : HB_REMOTE_LOST;
	out->end_ms = cancel_ms;
	return 0;
}

static int local_log(struct hb_backend *b, const char *id, uint64_t offset,
		     size_t max, struct hb_buf *out, struct hb_err *err)
{
	struct local *be = (struct local *)b;
	char path[PATH_MAX], chunk[16384];
	int fd, rc;

	if ((rc = job_path(be, id, "output", path, err)))
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hb_err_set(err, errno == ENOENT ? HB_ENOENT : HB_EIO,
				  NULL, 0, "local backend: no output for %s",
				  id);
	while (max > 0) {
		size_t want = max < sizeof(chunk) ? max : sizeof(chunk);
		ssize_t n = pread(fd, chunk, want, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = hb_err_set(err, HB_EIO, path, 0, "read: %s",
					strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if ((rc = hb_buf_append(out, chunk, (size_t)n)))
			break;
		offset += (uint64_t)n;
		max -= (size_t)n;
	}
	close(fd);
	return rc;
}

static int local_cancel(struct hb_backend *b, const char *id,
			struct hb_err *err)
{
	struct local *be = (struct local *)b;
	struct hb_remote_status st;
	char path[PATH_MAX], text[32];
	pid_t pid;
	int rc;

	if ((rc = local_status(b, id, &st, err)))
		return rc;
	if (hb_remote_phase_done(st.phase))
		return 0;
	job_path(be, id, "cancelled", path, NULL);
	snprintf(text, sizeof(text), "%lld\n", (long long)hb_remote_now_ms());
	if (write_small(path, text))
		return hb_err_set(err, HB_EIO, path, 0, "cannot write");
	job_path(be, id, "pid", path, NULL);
	pid = live_pid(path);
	if (pid)
		kill(-pid, be->grace_ms ? SIGTERM : SIGKILL);
	return 0;
}

static void local_free(struct hb_backend *b)
{
	struct local *be = (struct local *)b;

	free(be->dir);
	free(be);
}

static const struct hb_backend_ops local_ops = {
	.name = "local",
	.start = local_start,
	.status = local_status,
	.log = local_log,
	.cancel = local_cancel,
	.free = local_free,
};

int hb_backend_local_new(const char *dir, int grace_ms, struct hb_backend **out,
			 struct hb_err *err)
{
	struct local *be;

	*out = NULL;
	if (!dir || dir[0] != '/')
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: the directory must be an "
				  "absolute path");
	be = calloc(1, sizeof(*be));
	if (!be || !(be->dir = strdup(dir))) {
		free(be);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	be->be.ops = &local_ops;
	be->grace_ms = grace_ms > 0 ? grace_ms : 0;
	*out = &be->be;
	return 0;
}
