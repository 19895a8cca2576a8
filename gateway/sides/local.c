/*
 * sides/local.c - the local backend (remote.backend: local): a burst
 * job's script runs on this host, as the job's user, in a session of its
 * own.
 *
 * It stands in for a cluster in the tests that check the daemon's and the
 * shadow's mechanics (HB_SANDBOX_BACKEND=local).  The daemon runs it as
 * root for users who may be hostile, so root never acts on a path a user
 * controls.  Each job has two directories:
 *
 *   DIR/<id>/         the daemon's (owner: the daemon, 0711): the user can
 *                     reach work/ through it, and change nothing in it
 *     pid             "PID STARTTIME" of the job's session leader, written
 *                     by the job while it is still root, before it runs
 *                     the script (STARTTIME, from /proc/PID/stat, tells a
 *                     reused pid apart).  Its existence is "started".
 *     cancelled       "MS": when cancel was asked (SIGTERM sent); past the
 *                     grace period the next status check sends SIGKILL
 *     error           why the job could not run, when it could not
 *   DIR/<id>/work/    the user's (owner: the job's user, 0700)
 *     script          the job's script, written by the job as the user
 *     output          its stdout and stderr, likewise
 *     result          its exit status, written by its shell at the end
 *
 * Root creates nothing in work/ and writes nothing there.  The job is
 * double-forked, so it is never the daemon's child: no zombie to reap, and
 * it outlives a daemon restart.  A new backend on the same directory sees
 * every job the old one started.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/remote.h"
#include "hpcbridge/log.h"
#include "hpcbridge/user.h"

#define SMALL_FILE 64
/* How long start waits for the job to exec its shell. */
#define START_WAIT_MS 5000
/* The most supplementary groups a job's user may have. */

struct local {
	struct hb_remote be; /* first */
	char *dir;
	int grace_ms;
	/* start and cancel, one at a time; status and log only read */
	pthread_mutex_t mu;
};

/* What a file is, for messages. */
static const char *kind_of(mode_t m)
{
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	return "not a regular file";
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

/* Whether a directory of the daemon's own is the daemon's alone: owned by
 * it and writable by nobody else.  0, or an error naming what it is. */
static int check_ours(int fd, const char *dir, const char *name,
		      struct stat *st, struct hb_err *err)
{
	if (fstat(fd, st) != 0)
		return hb_err_set(err, HB_EIO, dir, 0, "%s: stat: %s",
				  name ? name : ".", strerror(errno));
	if (st->st_uid != geteuid())
		return hb_err_set(err, HB_EPERM, dir, 0,
				  "%s is owned by uid %u, not by the daemon "
				  "(uid %u): it must be the daemon's alone "
				  "(left from an older layout? remove it)",
				  name ? name : ".", (unsigned)st->st_uid,
				  (unsigned)geteuid());
	if (st->st_mode & 022)
		return hb_err_set(err, HB_EPERM, dir, 0,
				  "%s is mode %04o: others may write in it",
				  name ? name : ".",
				  (unsigned)(st->st_mode & 07777));
	return 0;
}

/* Why openat(O_NOFOLLOW) of a directory failed, as an error. */
static int open_dir_failed(int e, const char *dir, const char *name,
			   const char *id, struct hb_err *err)
{
	if (e == ENOENT)
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "local backend: no job %s", id);
	if (e == ELOOP || e == ENOTDIR)
		return hb_err_set(err, HB_EIO, dir, 0,
				  "%s is not a directory (a symbolic link or "
				  "a file): refused",
				  name);
	return hb_err_set(err, HB_EIO, dir, 0, "%s: %s", name, strerror(e));
}

/* DIR, opened; created first (0711) when create is set.  A file
 * descriptor, or a negative HB_E* code. */
static int open_base(const struct local *be, int create, const char *id,
		     struct stat *st, struct hb_err *err)
{
	int fd, rc;

	if (create && (rc = make_dirs(be->dir, err)))
		return rc;
	fd = open(be->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return open_dir_failed(errno, be->dir, ".", id, err);
	if ((rc = check_ours(fd, be->dir, NULL, st, err))) {
		close(fd);
		return rc;
	}
	return fd;
}

/* DIR/<id>, the daemon's state of one job, opened; created first (0711)
 * when create is set.  A file descriptor, or a negative HB_E* code. */
static int open_job(const struct local *be, int base, const char *id,
		    int create, struct hb_err *err)
{
	struct stat st;
	int fd, rc, made = 0;

	if (create) {
		if (mkdirat(base, id, 0711) == 0)
			made = 1;
		else if (errno != EEXIST)
			return hb_err_set(err, HB_EIO, be->dir, 0,
					  "cannot create %s: %s", id,
					  strerror(errno));
	}
	fd = openat(base, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return open_dir_failed(errno, be->dir, id, id, err);
	if ((rc = check_ours(fd, be->dir, id, &st, err)) ||
	    (made && fchmod(fd, 0711) != 0 &&
	     (rc = hb_err_set(err, HB_EIO, be->dir, 0, "%s: chmod: %s", id,
			      strerror(errno))))) {
		close(fd);
		return rc;
	}
	return fd;
}

/* DIR/<id>/work, the user's, opened (never followed); its owner and group
 * in *st.  A file descriptor, or a negative HB_E* code (HB_ENOENT when
 * there is none yet). */
static int open_work(const struct local *be, int jfd, const char *id,
		     struct stat *st, struct hb_err *err)
{
	int fd = openat(jfd, "work",
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return HB_ENOENT;
		return hb_err_set(err, HB_EIO, be->dir, 0, "%s/work: %s", id,
				  strerror(errno));
	}
	if (fstat(fd, st) != 0) {
		close(fd);
		return hb_err_set(err, HB_EIO, be->dir, 0, "%s/work: stat: %s",
				  id, strerror(errno));
	}
	return fd;
}

/*
 * Open dirfd/name to read it, without following a link, blocking on a FIFO
 * or opening what is not a regular file owned by owner.  where names
 * dirfd in messages.  A file descriptor, or a negative HB_E* code:
 * HB_ENOENT when it does not exist, else an error that says what was
 * found.
 */
static int open_checked(int dirfd, const char *name, uid_t owner,
			const char *where, struct hb_err *err)
{
	struct stat st;
	int fd = openat(dirfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
				O_NOCTTY);

	if (fd < 0) {
		if (errno == ENOENT)
			return HB_ENOENT;
		if (errno == ELOOP)
			return hb_err_set(err, HB_EPERM, NULL, 0,
					  "local backend: %s/%s is a symbolic "
					  "link: not followed",
					  where, name);
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "local backend: %s/%s: %s", where, name,
				  strerror(errno));
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "local backend: %s/%s: stat: %s", where, name,
				  strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "local backend: %s/%s is %s, not a regular "
				  "file: refused",
				  where, name, kind_of(st.st_mode));
	}
	if (st.st_uid != owner) {
		close(fd);
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "local backend: %s/%s is owned by uid %u, "
				  "not %u: refused",
				  where, name, (unsigned)st.st_uid,
				  (unsigned)owner);
	}
	return fd;
}

/* Read a small file (see open_checked) into buf, NUL-terminated. */
static int read_small(int dirfd, const char *name, uid_t owner,
		      const char *where, char *buf, size_t size,
		      struct hb_err *err)
{
	int fd = open_checked(dirfd, name, owner, where, err);
	ssize_t n;

	if (fd < 0)
		return fd;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "local backend: %s/%s: read: %s", where, name,
				  strerror(errno));
	buf[n] = '\0';
	return 0;
}

/* Write a small file of the daemon's own state in jfd (root-owned)
 * atomically: tmp, then rename. */
static int write_state(int jfd, const char *name, const char *text)
{
	char tmp[64];
	size_t len = strlen(text);
	int fd, n = snprintf(tmp, sizeof(tmp), "%s.tmp", name);

	if (n < 0 || (size_t)n >= sizeof(tmp))
		return HB_ETOOBIG;
	if (unlinkat(jfd, tmp, 0) != 0 && errno != ENOENT)
		return HB_EIO;
	fd = openat(jfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return HB_EIO;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0) {
		close(fd);
		unlinkat(jfd, tmp, 0);
		return HB_EIO;
	}
	close(fd);
	return renameat(jfd, tmp, jfd, name) == 0 ? 0 : HB_EIO;
}

/* "N" into p (no NUL); its length. */
static size_t put_u64(char *p, unsigned long long v)
{
	char d[24];
	size_t n = 0, i;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (i = 0; i < n; i++)
		p[i] = d[n - 1 - i];
	return n;
}

/* Field 22 (starttime) of /proc/PID/stat, and whether it is a zombie.
 * Async-signal-safe: the job's process calls it between fork and exec. */
static int proc_start(pid_t pid, unsigned long long *start, int *zombie)
{
	char path[64], buf[1024], *p;
	int fd, field;
	ssize_t n;
	unsigned long long v = 0;

	/* "/proc/PID/stat", without snprintf */
	memcpy(path, "/proc/", 6);
	n = 6 + (ssize_t)put_u64(path + 6, (unsigned long long)pid);
	memcpy(path + n, "/stat", 6);
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
	if (!p || *p < '0' || *p > '9')
		return HB_EIO;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (unsigned long long)(*p - '0');
	*start = v;
	return 0;
}

/*
 * The job's process group, from the daemon's own pid file, if any of it is
 * still alive (0 otherwise).  The leader (the wrapper shell) may be gone
 * while the script lives on, for instance when the script ignores SIGTERM.
 */
static pid_t live_pid(int jfd, const char *id)
{
	char buf[SMALL_FILE], *end;
	unsigned long long want, have;
	long pid;
	int zombie;

	if (read_small(jfd, "pid", geteuid(), id, buf, sizeof(buf), NULL))
		return 0;
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || pid <= 1 || pid > INT_MAX || *end != ' ')
		return 0;
	errno = 0;
	want = strtoull(end + 1, NULL, 10);
	if (errno)
		return 0;
	if (!proc_start((pid_t)pid, &have, &zombie)) {
		if (have != want)
			return 0; /* the pid is another process's now */
		if (!zombie)
			return (pid_t)pid;
	}
	/* The leader is gone; its group lives while any member does, and
	 * its number cannot be taken by another process meanwhile. */
	return kill(-(pid_t)pid, 0) == 0 ? (pid_t)pid : 0;
}

/*
 * Send sig to process group pgid as the job's user: a short-lived child
 * drops to uid (and gid, no groups) first, so the kernel itself refuses
 * to signal any process that is not the user's, whatever happened to the
 * group since it was checked.  A daemon that is not root, or a root job,
 * signals directly.
 */
static void signal_job(pid_t pgid, int sig, uid_t uid, gid_t gid)
{
	pid_t child;
	int status;

	if (pgid <= 1)
		return;
	if (geteuid() != 0 || uid == 0) {
		kill(-pgid, sig);
		return;
	}
	child = fork();
	if (child < 0)
		return; /* the next status check tries again */
	if (child == 0) {
		/* The child has one thread: glibc's set*id change it
		 * alone. */
		if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
		    setresuid(uid, uid, uid) != 0 || geteuid() != uid)
			_exit(2);
		_exit(kill(-pgid, sig) == 0 ? 0 : 1);
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* Start                                                                */
/* ------------------------------------------------------------------ */

/* What the job's process needs, all of it resolved before the fork: the
 * child calls no function that takes a lock or reads NSS. */
struct launch {
	const struct hb_remote_job *job;
	int jfd, wfd;  /* DIR/<id>, DIR/<id>/work */
	int report;    /* a pipe's write end, closed by exec */
	int drop;      /* become job->uid */
	gid_t *groups; /* the user's supplementary groups */
	size_t ngroups;
	const char *cwd;     /* where the script runs */
	char work[PATH_MAX]; /* DIR/<id>/work, for the wrapper */
};

/* What the job's process says, through the pipe, when it cannot run. */
struct launch_msg {
	int started; /* 1: after the pid file was written */
	int err;     /* errno; 0: what is not a regular file */
	char what[96];
};

/* Tell the daemon why the job cannot run, and end.  Never returns. */
static void launch_fail(const struct launch *l, int started, const char *what,
			int e)
{
	struct launch_msg m;
	size_t n = strlen(what);

	memset(&m, 0, sizeof(m));
	m.started = started;
	m.err = e;
	if (n >= sizeof(m.what))
		n = sizeof(m.what) - 1;
	memcpy(m.what, what, n);
	if (write(l->report, &m, sizeof(m)) < 0) {
		/* nobody to tell */
	}
	_exit(started ? 126 : 127);
}

/*
 * Record the job's pid in the daemon's state, while still root: written
 * whole under a name of its own, then linked as "pid", which fails if a
 * pid is there already (another start won: this one ends quietly).
 */
static void claim_pid(const struct launch *l)
{
	char tmp[40], text[64];
	unsigned long long start;
	size_t n;
	int zombie, fd, e;

	if (proc_start(getpid(), &start, &zombie))
		launch_fail(l, 0, "reading /proc/self/stat", EIO);
	memcpy(tmp, "pid.", 4);
	n = 4 + put_u64(tmp + 4, (unsigned long long)getpid());
	memcpy(tmp + n, ".tmp", 5);
	n = put_u64(text, (unsigned long long)getpid());
	text[n++] = ' ';
	n += put_u64(text + n, start);
	text[n++] = '\n';
	fd = openat(l->jfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		launch_fail(l, 0, "creating the pid file", errno);
	if (write(fd, text, n) != (ssize_t)n || fsync(fd) != 0) {
		e = errno;
		close(fd);
		unlinkat(l->jfd, tmp, 0);
		launch_fail(l, 0, "writing the pid file", e);
	}
	close(fd);
	e = linkat(l->jfd, tmp, l->jfd, "pid", 0) == 0 ? 0 : errno;
	unlinkat(l->jfd, tmp, 0);
	if (e == EEXIST)
		_exit(0); /* started already: nothing to say */
	if (e)
		launch_fail(l, 0, "linking the pid file", e);
}

/* Create name in the work directory as the user (never following a link,
 * never opening a FIFO or a device): a writable descriptor. */
static int user_file(const struct launch *l, const char *name, const char *what,
		     int flags, mode_t mode)
{
	struct stat st;
	int fd = openat(l->wfd, name,
			O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK |
				O_NOCTTY | flags,
			mode);

	if (fd < 0)
		launch_fail(l, 1, what, errno);
	if (fstat(fd, &st) != 0)
		launch_fail(l, 1, what, errno);
	if (!S_ISREG(st.st_mode))
		launch_fail(l, 1, what, 0); /* "not a regular file" */
	if (fchmod(fd, mode) != 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		launch_fail(l, 1, what, errno);
	return fd;
}

/* In the job's process: claim the pid while root, become the user, then,
 * as the user, write the script and open the output, and run the script
 * through a shell that records its exit status.  Never returns. */
static void run_job(const struct launch *l)
{
	/* $1: the work dir.  The status of "$1/script" is kept in result. */
	static const char wrapper[] =
		"\"$1/script\"; s=$?; "
		"printf '%s %s\\n' \"$s\" \"$(date +%s%3N)\" "
		">\"$1/result.tmp\" "
		"&& mv -f \"$1/result.tmp\" \"$1/result\"";
	const struct hb_remote_job *job = l->job;
	size_t off = 0;
	int fd, maxfd;

	/* Nothing of the daemon's reaches the job: every descriptor but
	 * the standard ones closes at exec (ours are CLOEXEC already). */
	maxfd = (int)sysconf(_SC_OPEN_MAX);
	if (maxfd < 0 || maxfd > 65536)
		maxfd = 65536;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */))
#endif
		for (fd = 3; fd < maxfd; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	/* The job's own session and process group: cancel signals it all. */
	if (setsid() < 0)
		launch_fail(l, 0, "setsid", errno);
	claim_pid(l);
	close(l->jfd);
	if (l->drop && (setgroups(l->ngroups, l->groups) != 0 ||
			setresgid(job->gid, job->gid, job->gid) != 0 ||
			setresuid(job->uid, job->uid, job->uid) != 0 ||
			getuid() != job->uid || geteuid() != job->uid ||
			getegid() != job->gid))
		launch_fail(l, 1, "becoming the job's user", errno);
	/* From here on, the user's rights only. */
	fd = user_file(l, "script", "work/script", O_CLOEXEC, 0700);
	while (off < job->script_len) {
		ssize_t n = write(fd, job->script + off, job->script_len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			launch_fail(l, 1, "writing the script", errno);
		off += (size_t)n;
	}
	close(fd);
	fd = user_file(l, "output", "work/output", O_APPEND, 0600);
	if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		launch_fail(l, 1, "output", errno);
	if (fd > 2)
		close(fd);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	close(l->wfd);
	if (chdir(l->cwd) != 0 && chdir("/") != 0)
		launch_fail(l, 1, "chdir", errno);
	if (job->env)
		execle("/bin/sh", "sh", "-c", wrapper, "hpcbridge-job", l->work,
		       (char *)NULL, (char *const *)job->env);
	else
		execl("/bin/sh", "sh", "-c", wrapper, "hpcbridge-job", l->work,
		      (char *)NULL);
	launch_fail(l, 1, "exec /bin/sh", errno);
}

/* DIR/<id>/work: made by root inside the root-owned DIR/<id>, then given
 * to the user (0700).  A descriptor, or a negative HB_E* code. */
static int make_work(const struct local *be, int jfd,
		     const struct hb_remote_job *job, struct hb_err *err)
{
	struct stat st;
	int fd;

	if (mkdirat(jfd, "work", 0700) != 0 && errno != EEXIST)
		return hb_err_set(err, HB_EIO, be->dir, 0,
				  "%s/work: cannot create: %s", job->id,
				  strerror(errno));
	fd = openat(jfd, "work",
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return hb_err_set(err, HB_EIO, be->dir, 0, "%s/work: %s",
				  job->id, strerror(e));
	}
	if ((st.st_uid != job->uid || st.st_gid != job->gid) &&
	    fchown(fd, job->uid, job->gid) != 0) {
		close(fd);
		return hb_err_set(err, HB_EPERM, be->dir, 0,
				  "%s/work: cannot chown to %u:%u: %s", job->id,
				  (unsigned)job->uid, (unsigned)job->gid,
				  strerror(errno));
	}
	if (fchmod(fd, 0700) != 0) {
		close(fd);
		return hb_err_set(err, HB_EIO, be->dir, 0, "%s/work: chmod: %s",
				  job->id, strerror(errno));
	}
	return fd;
}

/* Wait for the job's report: nothing (its shell runs, or another start
 * had run it), or why it cannot run.  1 with *m filled, 0 for nothing,
 * HB_ETIMEDOUT. */
static int read_report(int fd, struct launch_msg *m)
{
	int64_t deadline = hb_clock_wall_ms() + START_WAIT_MS;
	size_t got = 0;

	while (got < sizeof(*m)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - hb_clock_wall_ms();
		ssize_t n;

		if (left <= 0)
			return HB_ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return HB_EIO;
		}
		n = read(fd, (char *)m + got, sizeof(*m) - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	m->what[sizeof(m->what) - 1] = '\0';
	return 1;
}

/* Fork the job (twice, so that it is nobody's child) and wait until it
 * runs its shell or says why it cannot. */
static int launch(struct launch *l, struct hb_err *err)
{
	struct launch_msg m;
	char text[256];
	pid_t child;
	int p[2], status, rc;

	if (pipe2(p, O_CLOEXEC) != 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "pipe: %s",
				  strerror(errno));
	l->report = p[1];
	child = fork();
	if (child < 0) {
		close(p[0]);
		close(p[1]);
		return hb_err_set(err, HB_EIO, NULL, 0, "fork: %s",
				  strerror(errno));
	}
	if (child == 0) {
		/* Reset what the daemon may have blocked or ignored. */
		sigset_t none;
		pid_t job;

		close(p[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		job = fork();
		if (job == 0)
			run_job(l);
		if (job < 0)
			launch_fail(l, 0, "fork", errno);
		_exit(0);
	}
	close(p[1]);
	l->report = -1;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	rc = read_report(p[0], &m);
	close(p[0]);
	if (rc == HB_ETIMEDOUT) {
		struct stat st;

		if (fstatat(l->jfd, "pid", &st, AT_SYMLINK_NOFOLLOW) == 0)
			return 0; /* it runs, slowly */
		return hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
				  "local backend: %s: the job did not start "
				  "within %d ms",
				  l->job->id, START_WAIT_MS);
	}
	if (rc < 0)
		return hb_err_set(err, rc, NULL, 0,
				  "local backend: %s: lost the job's report",
				  l->job->id);
	if (rc == 0)
		return 0;
	snprintf(text, sizeof(text), "the job could not start: %s: %s", m.what,
		 m.err ? strerror(m.err) : "not a regular file");
	if (m.started) {
		/* Started (its pid is recorded), and ended at once: its
		 * status says lost, with this message. */
		if (write_state(l->jfd, "error", text))
			hb_log(HB_LOG_WARN, "local backend: %s: %s", l->job->id,
			       text);
		return 0;
	}
	return hb_err_set(err, HB_EIO, NULL, 0, "local backend: %s: %s",
			  l->job->id, text);
}

static int local_start(struct hb_remote *b, const struct hb_remote_job *job,
		       struct hb_err *err)
{
	struct local *be = (struct local *)b;
	struct launch l;
	struct stat st;
	char *home = NULL;
	int base = -1, rc, n;

	if (!be || !job || !job->script)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: missing job");
	if (!hb_remote_id_valid(job->id))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: bad job id '%.80s'",
				  job->id ? job->id : "");
	if (job->workdir && job->workdir[0] != '/')
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: %s: workdir must be "
				  "absolute",
				  job->id);
	if (geteuid() != 0 && job->uid != geteuid())
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "local backend: %s: cannot run a job as uid "
				  "%u: the daemon runs as uid %u, not root",
				  job->id, (unsigned)job->uid,
				  (unsigned)geteuid());
	memset(&l, 0, sizeof(l));
	l.job = job;
	l.jfd = l.wfd = l.report = -1;
	l.drop = geteuid() == 0 && job->uid != 0;
	n = snprintf(l.work, sizeof(l.work), "%s/%s/work", be->dir, job->id);
	if (n < 0 || (size_t)n >= sizeof(l.work))
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "local backend: path too long");
	/* Names are resolved here, before the lock and the fork. */
	if (l.drop && (rc = hb_user_lookup(job->uid, job->gid, &l.groups,
					   &l.ngroups, &home, err)))
		return rc;
	l.cwd = job->workdir ? job->workdir : home ? home : "/";

	pthread_mutex_lock(&be->mu);
	if ((base = open_base(be, 1, job->id, &st, err)) < 0) {
		rc = base;
		goto out;
	}
	if (job->uid != geteuid() && !(st.st_mode & 01)) {
		rc = hb_err_set(err, HB_EPERM, be->dir, 0,
				"mode %04o: uid %u cannot reach its job's "
				"directory (make it 0711)",
				(unsigned)(st.st_mode & 07777),
				(unsigned)job->uid);
		goto out;
	}
	if ((l.jfd = open_job(be, base, job->id, 1, err)) < 0) {
		rc = l.jfd;
		goto out;
	}
	/* Started before (the pid file is the daemon's): adopt. */
	if (fstatat(l.jfd, "pid", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		rc = 0;
		goto out;
	}
	if ((l.wfd = make_work(be, l.jfd, job, err)) < 0) {
		rc = l.wfd;
		goto out;
	}
	rc = launch(&l, err);
out:
	pthread_mutex_unlock(&be->mu);
	if (l.wfd >= 0)
		close(l.wfd);
	if (l.jfd >= 0)
		close(l.jfd);
	if (base >= 0)
		close(base);
	free(l.groups);
	free(home);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Status, log, cancel                                                  */
/* ------------------------------------------------------------------ */

/* DIR and DIR/<id>, opened (no creation); *jfd, or an error. */
static int open_existing(const struct local *be, const char *id, int *jfd,
			 struct hb_err *err)
{
	struct stat st;
	int base;

	*jfd = -1;
	if (!hb_remote_id_valid(id))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "local backend: bad job id '%.80s'",
				  id ? id : "");
	base = open_base(be, 0, id, &st, err);
	if (base < 0)
		return base;
	*jfd = open_job(be, base, id, 0, err);
	close(base);
	return *jfd < 0 ? *jfd : 0;
}

/* The status, from DIR/<id> (jfd); the work dir's owner in *owner and
 * *group (-1 if there is none yet). */
static int status_of(struct local *be, const char *id, int jfd,
		     struct hb_remote_status *out, uid_t *owner, gid_t *group,
		     struct hb_err *err)
{
	char buf[SMALL_FILE], where[PATH_MAX], msg[sizeof(out->message)];
	char *end;
	int64_t cancel_ms = 0;
	struct stat st;
	pid_t pid;
	int wfd, rc;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	*owner = (uid_t)-1;
	*group = (gid_t)-1;
	snprintf(where, sizeof(where), "%s/%s", be->dir, id);
	rc = read_small(jfd, "cancelled", geteuid(), where, buf, sizeof(buf),
			err);
	if (rc && rc != HB_ENOENT)
		return rc;
	if (!rc)
		cancel_ms = strtoll(buf, NULL, 10);
	rc = read_small(jfd, "error", geteuid(), where, msg, sizeof(msg), err);
	if (rc && rc != HB_ENOENT)
		return rc;
	if (!rc) {
		msg[strcspn(msg, "\n")] = '\0';
		snprintf(out->message, sizeof(out->message), "%s", msg);
	}
	if (fstatat(jfd, "pid", &st, AT_SYMLINK_NOFOLLOW) == 0)
		out->start_ms = (int64_t)st.st_mtim.tv_sec * 1000 +
				st.st_mtim.tv_nsec / 1000000;
	wfd = open_work(be, jfd, id, &st, err);
	if (wfd < 0 && wfd != HB_ENOENT)
		return wfd;
	if (wfd >= 0) {
		*owner = st.st_uid;
		*group = st.st_gid;
		snprintf(where, sizeof(where), "%s/%s/work", be->dir, id);
		rc = read_small(wfd, "result", st.st_uid, where, buf,
				sizeof(buf), err);
		close(wfd);
		if (rc && rc != HB_ENOENT)
			return rc;
		if (!rc) {
			long code;

			errno = 0;
			code = strtol(buf, &end, 10);
			if (errno || end == buf || code < 0 || code > 255)
				return hb_err_set(err, HB_EIO, where, 0,
						  "result: malformed");
			out->exit_code = (int)code;
			out->end_ms = strtoll(end, NULL, 10);
			out->phase = cancel_ms	 ? HB_REMOTE_CANCELLED
				     : code == 0 ? HB_REMOTE_SUCCEEDED
						 : HB_REMOTE_FAILED;
			return 0;
		}
	}
	if (!out->start_ms) {
		out->phase =
			cancel_ms ? HB_REMOTE_CANCELLED : HB_REMOTE_PENDING;
		return 0;
	}
	if (out->message[0]) {
		/* It could not run (the message says why); what is left of
		 * its process is ending. */
		out->phase = cancel_ms ? HB_REMOTE_CANCELLED : HB_REMOTE_LOST;
		out->end_ms = out->start_ms;
		return 0;
	}
	pid = live_pid(jfd, id);
	if (pid) {
		out->phase = HB_REMOTE_RUNNING;
		if (cancel_ms &&
		    hb_clock_wall_ms() - cancel_ms >= be->grace_ms &&
		    *owner != (uid_t)-1)
			signal_job(pid, SIGKILL, *owner, *group);
		return 0;
	}
	/* Gone without a result: killed by cancel, or lost. */
	out->phase = cancel_ms ? HB_REMOTE_CANCELLED : HB_REMOTE_LOST;
	out->end_ms = cancel_ms;
	return 0;
}

static int local_status(struct hb_remote *b, const char *id,
			struct hb_remote_status *out, struct hb_err *err)
{
	struct local *be = (struct local *)b;
	uid_t owner;
	gid_t group;
	int jfd, rc;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	if ((rc = open_existing(be, id, &jfd, err)))
		return rc;
	rc = status_of(be, id, jfd, out, &owner, &group, err);
	close(jfd);
	return rc;
}

static int local_log(struct hb_remote *b, const char *id, uint64_t offset,
		     size_t max, struct hb_buf *out, struct hb_err *err)
{
	struct local *be = (struct local *)b;
	char chunk[16384], where[PATH_MAX];
	struct stat st;
	int jfd, wfd, fd, rc;

	if ((rc = open_existing(be, id, &jfd, err)))
		return rc;
	wfd = open_work(be, jfd, id, &st, err);
	close(jfd);
	if (wfd == HB_ENOENT)
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "local backend: no output for %s", id);
	if (wfd < 0)
		return wfd;
	snprintf(where, sizeof(where), "%s/%s/work", be->dir, id);
	fd = open_checked(wfd, "output", st.st_uid, where, err);
	close(wfd);
	if (fd == HB_ENOENT)
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "local backend: no output for %s", id);
	if (fd < 0)
		return fd;
	rc = 0;
	while (max > 0) {
		size_t want = max < sizeof(chunk) ? max : sizeof(chunk);
		ssize_t n = pread(fd, chunk, want, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = hb_err_set(err, HB_EIO, where, 0, "output: %s",
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

static int local_cancel(struct hb_remote *b, const char *id,
			struct hb_err *err)
{
	struct local *be = (struct local *)b;
	struct hb_remote_status st;
	char text[32];
	uid_t owner;
	gid_t group;
	pid_t pid;
	int jfd, rc;

	if ((rc = open_existing(be, id, &jfd, err)))
		return rc;
	pthread_mutex_lock(&be->mu);
	if ((rc = status_of(be, id, jfd, &st, &owner, &group, err)) ||
	    hb_remote_phase_done(st.phase))
		goto out;
	snprintf(text, sizeof(text), "%lld\n", (long long)hb_clock_wall_ms());
	if (write_state(jfd, "cancelled", text)) {
		rc = hb_err_set(err, HB_EIO, be->dir, 0,
				"%s/cancelled: cannot write", id);
		goto out;
	}
	pid = live_pid(jfd, id);
	if (pid && owner != (uid_t)-1)
		signal_job(pid, be->grace_ms ? SIGTERM : SIGKILL, owner, group);
out:
	pthread_mutex_unlock(&be->mu);
	close(jfd);
	return rc;
}

static void local_free(struct hb_remote *b)
{
	struct local *be = (struct local *)b;

	pthread_mutex_destroy(&be->mu);
	free(be->dir);
	free(be);
}

static const struct hb_remote_ops local_ops = {
	.name = "local",
	.start = local_start,
	.status = local_status,
	.log = local_log,
	.cancel = local_cancel,
	.free = local_free,
};

int hb_remote_local_new(const char *dir, int grace_ms, struct hb_remote **out,
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
	pthread_mutex_init(&be->mu, NULL);
	be->be.ops = &local_ops;
	be->grace_ms = grace_ms > 0 ? grace_ms : 0;
	*out = &be->be;
	return 0;
}
