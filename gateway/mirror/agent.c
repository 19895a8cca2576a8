/*
 * agent.c - the user's side of mirroring done by the daemon, and the
 * daemon's side of talking to it.
 *
 * The daemon is root and the checkpoint directory is the user's, so root
 * never opens a path in it.  It runs its own program again as the user
 * (hb_mirror_agent_spawn(): PROGRAM --hb-ckpt-agent DIR), with a socket
 * on its standard input, and asks it, one request at a time:
 *
 *   'S' job          scan DIR            -> 'M' manifest JSON | 'E'
 *   'O' path         open a file of DIR  -> 'F' + the descriptor | 'E'
 *   'P' manifest     materialise into DIR; for each file the agent asks
 *                    'G' index and the daemon answers 'B' bytes... then
 *                    'Z' (the whole object) or 'E'   -> 'K' stats | 'E'
 *   'Q'              end
 *
 * A frame is a type byte, three zero bytes and a 32-bit length (host
 * order: both ends are one machine), then the payload.  'E' carries a
 * 32-bit HB_E* code and the message.  The secret key never reaches the
 * agent: it sees only its own files and the bytes of its own objects.
 * Everything the agent sends is checked as the user's input: frames are
 * bounded, a descriptor must be a regular file, a manifest is parsed
 * strictly, and every read has a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/mirror.h"
#include "hpcbridge/user.h"

#define FRAME_MAX (HB_CKPT_MANIFEST_MAX + 4096u)
#define CHUNK (1u << 20)
#define FUSE_MAGIC 0x65735546L

struct hb_mirror_agent {
	int sock;
	int timeout_ms; /* one request's reply; <= 0: none */
	pid_t pid;	/* the agent process hb_mirror_agent_spawn() ran, or 0 */
	int errfd;	/* the read end of its stdout and stderr, or -1 */
	uid_t uid;
};

/* ---- frames ---------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until sock is readable, up to deadline (0: forever). */
static int wait_in(int sock, int64_t deadline, struct hb_err *err)
{
	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		int left = -1, n;

		if (deadline) {
			int64_t d = deadline - now_ms();

			if (d <= 0)
				return hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
						  "checkpoint agent: no answer "
						  "in time");
			left = d > 60000 ? 60000 : (int)d;
		}
		n = poll(&p, 1, left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return hb_err_set(err, HB_EIO, NULL, 0,
					  "checkpoint agent: poll: %s",
					  strerror(errno));
	}
}

static int read_full(int sock, void *p, size_t n, int64_t deadline, int *fd,
		     struct hb_err *err)
{
	char *c = p;

	while (n) {
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { c, n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t got;
		int rc;

		if (fd) {
			mh.msg_control = ctl;
			mh.msg_controllen = sizeof(ctl);
		}
		if ((rc = wait_in(sock, deadline, err)))
			return rc;
		got = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return hb_err_set(err, HB_EIO, NULL, 0,
					  "checkpoint agent: read: %s",
					  strerror(errno));
		if (got == 0)
			return hb_err_set(err, HB_EUNAVAIL, NULL, 0,
					  "checkpoint agent: went away");
		if (fd) {
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
			     cm = CMSG_NXTHDR(&mh, cm))
				if (cm->cmsg_level == SOL_SOCKET &&
				    cm->cmsg_type == SCM_RIGHTS &&
				    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
					int f;

					memcpy(&f, CMSG_DATA(cm), sizeof(f));
					if (*fd >= 0)
						close(f);
					else
						*fd = f;
				}
			if (mh.msg_flags & MSG_CTRUNC)
				return hb_err_set(err, HB_EPROTO, NULL, 0,
						  "checkpoint agent: more "
						  "descriptors than asked for");
		}
		c += got;
		n -= (size_t)got;
	}
	return 0;
}

static int send_frame(int sock, char type, const void *p, size_t n,
		      int passfd, struct hb_err *err)
{
	unsigned char hdr[8] = { (unsigned char)type, 0, 0, 0 };
	uint32_t len = (uint32_t)n;
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)p, n } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t done = 0, total = sizeof(hdr) + n;

	memcpy(hdr + 4, &len, sizeof(len));
	if (passfd >= 0) {
		struct cmsghdr *cm;

		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &passfd, sizeof(int));
	}
	while (done < total) {
		ssize_t put = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return hb_err_set(err, HB_EUNAVAIL, NULL, 0,
					  "checkpoint agent: write: %s",
					  strerror(errno));
		done += (size_t)put;
		mh.msg_control = NULL; /* the descriptor went with byte 0 */
		mh.msg_controllen = 0;
		/* Step the vector past what went. */
		while (put > 0 && mh.msg_iovlen) {
			size_t take = (size_t)put < mh.msg_iov->iov_len
					      ? (size_t)put
					      : mh.msg_iov->iov_len;

			mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + take;
			mh.msg_iov->iov_len -= take;
			put -= (ssize_t)take;
			if (!mh.msg_iov->iov_len) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

/* Read one frame: its type into *type and its payload into b (reset
 * first; at most max bytes).  fd: where a passed descriptor goes (-1 if
 * none came), NULL to take none. */
static int recv_frame(int sock, char *type, struct hb_buf *b, size_t max,
		      int64_t deadline, int *fd, struct hb_err *err)
{
	unsigned char hdr[8];
	uint32_t len;
	int rc;

	hb_buf_reset(b);
	if (fd)
		*fd = -1;
	if ((rc = read_full(sock, hdr, sizeof(hdr), deadline, fd, err)))
		return rc;
	memcpy(&len, hdr + 4, sizeof(len));
	if (hdr[1] || hdr[2] || hdr[3] || len > max)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "checkpoint agent: a malformed frame "
				  "(type %u, %u bytes)",
				  hdr[0], len);
	*type = (char)hdr[0];
	if ((rc = hb_buf_reserve(b, len)))
		return hb_err_set(err, rc, NULL, 0, "out of memory");
	if ((rc = read_full(sock, b->data, len, deadline, NULL, err)))
		return rc;
	b->len = len;
	b->data[len] = '\0';
	return 0;
}

static int send_error(int sock, const struct hb_err *e)
{
	struct hb_err ignore = { 0 };
	char p[4 + HB_ERR_MAX];
	int32_t code = e->code ? e->code : HB_EIO;
	size_t n = strlen(e->msg);

	memcpy(p, &code, sizeof(code));
	memcpy(p + 4, e->msg, n);
	return send_frame(sock, 'E', p, 4 + n, -1, &ignore);
}

/* An 'E' frame's payload into err. */
static int take_error(const struct hb_buf *b, struct hb_err *err)
{
	int32_t code = HB_EPROTO;

	if (b->len >= 4)
		memcpy(&code, b->data, sizeof(code));
	if (code >= 0 || code < -100)
		code = HB_EPROTO;
	return hb_err_set(err, code, NULL, 0, "%.*s",
			  b->len > 4 ? (int)(b->len - 4) : 0,
			  b->len > 4 ? b->data + 4 : "");
}

/* ---- the agent: the user's side -------------------------------------- */

struct serve {
	int sock;
	int dirfd;   /* DIR's parent's view: DIR itself, -1 when absent */
	const char *dir;
	const struct hb_ckpt_manifest *m;
	struct hb_buf in;
};

static int serve_scan(struct serve *s)
{
	struct hb_ckpt_scan_opts so = { .job = s->in.len ? s->in.data : NULL };
	struct hb_ckpt_manifest *m = NULL;
	struct hb_err e = { 0 };
	struct hb_buf out;
	int rc;

	hb_buf_init(&out, HB_CKPT_MANIFEST_MAX);
	rc = hb_ckpt_scan(s->dir, &so, &m, NULL, &e);
	if (!rc && (rc = hb_ckpt_manifest_write(m, &out)))
		hb_err_set(&e, rc, NULL, 0, "%s: the manifest is too big",
			   s->dir);
	rc = rc ? send_error(s->sock, &e)
		: send_frame(s->sock, 'M', out.data, out.len, -1, &e);
	hb_ckpt_manifest_free(m);
	hb_buf_free(&out);
	return rc;
}

static int serve_open(struct serve *s)
{
	struct hb_err e = { 0 };
	int fd, rc;

	if (s->dirfd < 0)
		s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		hb_err_set(&e, HB_ENOENT, NULL, 0, "%s: %s", s->dir,
			   strerror(errno));
		return send_error(s->sock, &e);
	}
	fd = hb_ckpt_open_file(s->dirfd, s->in.data, &e);
	if (fd < 0)
		return send_error(s->sock, &e);
	rc = send_frame(s->sock, 'F', NULL, 0, fd, &e);
	close(fd);
	return rc;
}

/* hb_ckpt_fetch_fn for the agent: ask the daemon for file f's bytes. */
static int agent_fetch(void *ctx, const struct hb_ckpt_file *f, int fd,
		       struct hb_err *err)
{
	struct serve *s = ctx;
	const struct hb_ckpt_file *mf = hb_ckpt_manifest_find(s->m, f->path);
	uint32_t idx;
	int rc;

	if (!mf)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: not in the manifest", f->path);
	idx = (uint32_t)(mf - s->m->files);

	if ((rc = send_frame(s->sock, 'G', &idx, sizeof(idx), -1, err)))
		return rc;
	for (;;) {
		char type = 0;

		if ((rc = recv_frame(s->sock, &type, &s->in, CHUNK, 0, NULL,
				     err)))
			return rc;
		if (type == 'Z')
			return 0;
		if (type == 'E')
			return take_error(&s->in, err);
		if (type != 'B')
			return hb_err_set(err, HB_EPROTO, NULL, 0,
					  "%s: unexpected frame '%c'", f->path,
					  type);
		for (size_t off = 0; off < s->in.len;) {
			ssize_t n = write(fd, s->in.data + off,
					  s->in.len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return hb_err_set(err, HB_EIO, NULL, 0,
						  "%s: write: %s", f->path,
						  strerror(errno));
			off += (size_t)n;
		}
	}
}

static int serve_put(struct serve *s)
{
	struct hb_ckpt_manifest *m = NULL;
	struct hb_ckpt_mat_stats ms = { 0 };
	struct hb_ckpt_mat_opts mo = { 0 };
	struct hb_err e = { 0 };
	struct stat st;
	char stats[256];
	int rc;

	rc = hb_ckpt_manifest_parse(s->in.data, s->in.len, "manifest", &m,
				    &e);
	if (rc)
		return send_error(s->sock, &e);
	/* Files the directory already holds are copied, not sent again. */
	if (!stat(s->dir, &st) && S_ISDIR(st.st_mode))
		mo.reuse = s->dir;
	s->m = m;
	rc = hb_ckpt_materialise(m, s->dir, agent_fetch, s, &mo, &ms, &e);
	s->m = NULL;
	hb_ckpt_manifest_free(m);
	if (s->dirfd >= 0) { /* DIR is another directory now */
		close(s->dirfd);
		s->dirfd = -1;
	}
	if (rc)
		return send_error(s->sock, &e);
	snprintf(stats, sizeof(stats), "%llu %llu %llu %llu",
		 (unsigned long long)ms.fetched,
		 (unsigned long long)ms.fetched_bytes,
		 (unsigned long long)ms.kept + ms.reused,
		 (unsigned long long)ms.kept_bytes);
	return send_frame(s->sock, 'K', stats, strlen(stats), -1, &e);
}

int hb_mirror_agent_serve(int sock, const char *dir, struct hb_err *err)
{
	struct serve s = { .sock = sock, .dirfd = -1, .dir = dir };
	int rc = 0;

	hb_buf_init(&s.in, FRAME_MAX);
	while (!rc) {
		char type = 0;

		rc = recv_frame(sock, &type, &s.in, FRAME_MAX, 0, NULL, err);
		if (rc == HB_EUNAVAIL || (!rc && type == 'Q')) {
			rc = 0;
			break;
		}
		if (rc)
			break;
		switch (type) {
		case 'S':
			rc = serve_scan(&s);
			break;
		case 'O':
			rc = serve_open(&s);
			break;
		case 'P':
			rc = serve_put(&s);
			break;
		default:
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"checkpoint agent: unknown request "
					"'%c'",
					type);
		}
	}
	if (s.dirfd >= 0)
		close(s.dirfd);
	hb_buf_free(&s.in);
	return rc;
}

/* ---- running the agent as the user ----------------------------------- */

int hb_mirror_agent_main(int argc, char **argv)
{
	struct hb_err err = { 0 };
	int rc;

	if (argc < 2 || strcmp(argv[1], HB_MIRROR_AGENT_ARG))
		return -1;
	if (argc != 3) {
		fputs("usage: PROGRAM " HB_MIRROR_AGENT_ARG " DIR\n", stderr);
		_exit(2);
	}
	/* It acts for a user, never for root: root's jobs stay on Slurm,
	 * and a root agent would open paths as root. */
	if (getuid() == 0 || geteuid() == 0) {
		fputs("checkpoint agent: refusing to run as root\n", stderr);
		_exit(2);
	}
	umask(077);
	signal(SIGPIPE, SIG_IGN);
	rc = hb_mirror_agent_serve(STDIN_FILENO, argv[2], &err);
	if (rc)
		fprintf(stderr, "checkpoint agent: %s\n", err.msg);
	_exit(rc ? 1 : 0);
}

/* Wait for pid: a short grace after the socket closed, then SIGKILL. */
static void reap(pid_t pid)
{
	int status;

	for (int i = 0; i < 200; i++) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid || (w < 0 && errno != EINTR))
			return;
		struct timespec ts = { 0, 10 * 1000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* The child, from fork() to execve(): async-signal-safe calls only. */
static void agent_child(int sock, int errw, uid_t uid, gid_t gid,
			const gid_t *groups, size_t n, const char *exe,
			char *const argv[], char *const envp[])
{
	static const char drop[] = "checkpoint agent: cannot become the "
				   "user\n";
	static const char exec[] = "checkpoint agent: cannot run the "
				   "program\n";
	struct sigaction dfl;
	sigset_t set;

	sigfillset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	if (dup2(sock, STDIN_FILENO) < 0 || dup2(errw, STDOUT_FILENO) < 0 ||
	    dup2(errw, STDERR_FILENO) < 0)
		_exit(126);
	hb_close_from(3);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	if (hb_user_become(uid, gid, groups, n)) {
		if (write(STDERR_FILENO, drop, sizeof(drop) - 1) < 0)
			_exit(126);
		_exit(126);
	}
	/* set after the change of uid, which clears it */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	execve(exe, argv, envp);
	if (write(STDERR_FILENO, exec, sizeof(exec) - 1) < 0)
		_exit(127);
	_exit(127);
}

int hb_mirror_agent_spawn(const char *exe, const char *dir, uid_t uid,
			  gid_t gid, const gid_t *groups, size_t n,
			  int timeout_ms, struct hb_mirror_agent **out,
			  struct hb_err *err)
{
	static const char *const pass[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS",
					    "LSAN_OPTIONS" };
	char *argv[] = { (char *)exe, (char *)HB_MIRROR_AGENT_ARG,
			 (char *)dir, NULL };
	char *envp[4] = { NULL }, *own[3] = { NULL };
	int sv[2] = { -1, -1 }, ep[2] = { -1, -1 }, rc = 0;
	size_t ne = 0;
	pid_t pid;

	*out = NULL;
	if (uid == 0)
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: the checkpoint agent does not run as "
				  "root",
				  dir);
	/* The sanitizers' settings, so a checked build's agent is checked
	 * the same way; nothing else of the daemon's environment. */
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		const char *v = getenv(pass[i]);
		size_t k = strlen(pass[i]);

		if (!v)
			continue;
		if (!(own[ne] = malloc(k + strlen(v) + 2))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		sprintf(own[ne], "%s=%s", pass[i], v);
		envp[ne] = own[ne];
		ne++;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ||
	    pipe2(ep, O_CLOEXEC)) {
		rc = hb_err_set(err, HB_EIO, NULL, 0,
				"checkpoint agent: %s", strerror(errno));
		goto out;
	}
	if (sv[1] < 3 || ep[1] < 3) {
		rc = hb_err_set(err, HB_EIO, NULL, 0,
				"checkpoint agent: descriptors 0 to 2 are "
				"not open");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = hb_err_set(err, HB_EIO, NULL, 0,
				"checkpoint agent: fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		agent_child(sv[1], ep[1], uid, gid, groups, n, exe, argv, envp);
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	if ((rc = hb_mirror_agent_new(sv[0], timeout_ms, out, err))) {
		close(sv[0]);
		close(ep[0]);
		kill(pid, SIGKILL);
		reap(pid);
	} else {
		(*out)->pid = pid;
		(*out)->errfd = ep[0];
		(*out)->uid = uid;
	}
	sv[0] = ep[0] = -1;
out:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	for (size_t i = 0; i < ne; i++)
		free(own[i]);
	return rc;
}

/* When the agent went away: say so with the last thing it wrote. */
static int gone(struct hb_mirror_agent *a, int rc, struct hb_err *err)
{
	char buf[HB_ERR_MAX], *line;
	ssize_t n = -1;

	if (rc != HB_EUNAVAIL || a->errfd < 0)
		return rc;
	n = read(a->errfd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return rc;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	for (char *c = line; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	memset(err, 0, sizeof(*err));
	return hb_err_set(err, rc, NULL, 0, "checkpoint agent (uid %u): %s",
			  (unsigned)a->uid, line);
}

/* ---- the daemon's side ----------------------------------------------- */

int hb_mirror_agent_new(int sock, int timeout_ms,
			struct hb_mirror_agent **out, struct hb_err *err)
{
	struct hb_mirror_agent *a = calloc(1, sizeof(*a));

	if (!a)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	a->sock = sock;
	a->timeout_ms = timeout_ms;
	a->errfd = -1;
	*out = a;
	return 0;
}

void hb_mirror_agent_free(struct hb_mirror_agent *a)
{
	struct hb_err ignore = { 0 };

	if (!a)
		return;
	send_frame(a->sock, 'Q', NULL, 0, -1, &ignore);
	close(a->sock);
	if (a->pid > 0)
		reap(a->pid);
	if (a->errfd >= 0)
		close(a->errfd);
	free(a);
}

static int64_t deadline_of(const struct hb_mirror_agent *a)
{
	return a->timeout_ms > 0 ? now_ms() + a->timeout_ms : 0;
}

int hb_mirror_agent_scan(struct hb_mirror_agent *a, const char *job,
			 struct hb_ckpt_manifest **out, struct hb_err *err)
{
	struct hb_buf b;
	char type = 0;
	int rc;

	*out = NULL;
	hb_buf_init(&b, FRAME_MAX);
	rc = send_frame(a->sock, 'S', job, job ? strlen(job) : 0, -1, err);
	if (!rc)
		rc = recv_frame(a->sock, &type, &b, FRAME_MAX, deadline_of(a),
				NULL, err);
	if (!rc && type == 'E')
		rc = take_error(&b, err);
	else if (!rc && type != 'M')
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"checkpoint agent: answered a scan with '%c'",
				type);
	else if (!rc)
		rc = hb_ckpt_manifest_parse(b.data, b.len, "the agent's scan",
					    out, err);
	hb_buf_free(&b);
	return gone(a, rc, err);
}

int hb_mirror_agent_open(struct hb_mirror_agent *a, const char *path,
			 uint64_t size, struct hb_err *err)
{
	struct hb_buf b;
	struct statfs sf;
	struct stat st;
	char type = 0;
	int fd = -1, rc;

	hb_buf_init(&b, HB_ERR_MAX + 8);
	rc = send_frame(a->sock, 'O', path, strlen(path), -1, err);
	if (!rc)
		rc = recv_frame(a->sock, &type, &b, HB_ERR_MAX + 8,
				deadline_of(a), &fd, err);
	if (!rc && type == 'E')
		rc = take_error(&b, err);
	else if (!rc && (type != 'F' || fd < 0))
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: the agent sent no descriptor", path);
	/* Root reads it: a regular file of the size the scan saw, on no
	 * filesystem its user serves (a FUSE read could block for ever). */
	else if (!rc && (fstat(fd, &st) || !S_ISREG(st.st_mode)))
		rc = hb_err_set(err, HB_EPERM, NULL, 0,
				"%s: not a regular file", path);
	else if (!rc && (uint64_t)st.st_size != size)
		rc = hb_err_set(err, HB_EAGAIN, NULL, 0,
				"%s: changed since it was scanned", path);
	else if (!rc && (fstatfs(fd, &sf) || sf.f_type == FUSE_MAGIC))
		rc = hb_err_set(err, HB_EPERM, NULL, 0,
				"%s: on a FUSE filesystem, which the daemon "
				"does not read",
				path);
	hb_buf_free(&b);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return gone(a, rc, err);
	}
	return fd;
}

struct put_sink {
	int sock;
	struct hb_err *err;
};

static int put_sink(const void *p, size_t n, void *arg)
{
	struct put_sink *ps = arg;
	const char *c = p;

	while (n) {
		size_t take = n < CHUNK ? n : CHUNK;
		int rc = send_frame(ps->sock, 'B', c, take, -1, ps->err);

		if (rc)
			return rc;
		c += take;
		n -= take;
	}
	return 0;
}

int hb_mirror_agent_put(struct hb_mirror_agent *a, const char *json,
			size_t n, hb_mirror_agent_src_fn src, void *ctx,
			struct hb_ckpt_mat_stats *st, struct hb_err *err)
{
	struct hb_ckpt_manifest *m = NULL;
	struct hb_buf b;
	char type = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = hb_ckpt_manifest_parse(json, n, "manifest", &m, err)))
		return rc;
	hb_buf_init(&b, FRAME_MAX);
	rc = send_frame(a->sock, 'P', json, n, -1, err);
	while (!rc) {
		uint32_t idx;

		/* The agent decides how long materialising takes; each of
		 * its requests still has the deadline. */
		rc = recv_frame(a->sock, &type, &b, FRAME_MAX, deadline_of(a),
				NULL, err);
		if (rc)
			break;
		if (type == 'K') {
			unsigned long long v[4] = { 0 };

			if (sscanf(b.data, "%llu %llu %llu %llu", &v[0], &v[1],
				   &v[2], &v[3]) != 4)
				rc = hb_err_set(err, HB_EPROTO, NULL, 0,
						"checkpoint agent: bad "
						"stats");
			st->fetched = v[0];
			st->fetched_bytes = v[1];
			st->kept = v[2];
			st->kept_bytes = v[3];
			break;
		}
		if (type == 'E') {
			rc = take_error(&b, err);
			break;
		}
		if (type != 'G' || b.len != sizeof(idx)) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"checkpoint agent: unexpected frame "
					"'%c'",
					type);
			break;
		}
		memcpy(&idx, b.data, sizeof(idx));
		if (idx >= m->nfiles) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"checkpoint agent: asked for file %u "
					"of %zu",
					idx, m->nfiles);
			break;
		}
		{
			struct hb_err fe = { 0 };
			struct put_sink ps = { a->sock, err };
			int frc = src(ctx, &m->files[idx], put_sink, &ps, &fe);

			/* A failure of the socket ends it all; one of the
			 * source goes to the agent, which stops. */
			if (frc && err->code)
				rc = frc;
			else if (frc)
				rc = send_error(a->sock, &fe);
			else
				rc = send_frame(a->sock, 'Z', NULL, 0, -1,
						err);
		}
	}
	hb_buf_free(&b);
	hb_ckpt_manifest_free(m);
	return gone(a, rc, err);
}
