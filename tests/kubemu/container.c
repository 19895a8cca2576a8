/*
 * container.c - what a container runtime does to an executed process
 * before it runs: the identity the pod's securityContext asks for
 * (runAsUser, runAsGroup, supplementalGroups, fsGroup, runAsNonRoot) and
 * volumes bound at their mount paths in a private mount namespace.
 *
 * The process is forked by the controller thread and, in the child (which
 * only makes system calls: the emulator has other threads), gets its own
 * session, its standard streams, a mount namespace of its own whose
 * mounts no longer propagate back (/ made rslave) with each volume bound
 * at its mountPath (read-only ones remounted so), then its supplementary
 * groups, gid and uid, in that order and checked, then its working
 * directory, and runs the command.  A step that fails is reported
 * through a close-on-exec pipe, so the caller learns why at once and the
 * pod fails with that message.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kubemu.h"

/* A member of the container's securityContext, else of the pod's. */
static const cJSON *sc_pick(const cJSON *pod, const cJSON *c, const char *key)
{
	const cJSON *v = km_get(km_get(c, "securityContext"), key);

	return v ? v
		 : km_get(km_get(km_get(pod, "spec"), "securityContext"), key);
}

unsigned km_image_uid;

static int id_of(const cJSON *v, unsigned *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 2147483647.0)
		return 0;
	*out = (unsigned)v->valuedouble;
	return 1;
}

int km_container_ident(const cJSON *pod, const cJSON *c, struct km_ident *id,
		       char *why, size_t cap)
{
	const cJSON *psc = km_get(km_get(pod, "spec"), "securityContext"), *g;
	unsigned uid = 0, gid = 0, v;
	int has_uid = id_of(sc_pick(pod, c, "runAsUser"), &uid);
	int has_gid = id_of(sc_pick(pod, c, "runAsGroup"), &gid);
	char podref[600];

	memset(id, 0, sizeof(*id));
	if (!has_uid && km_image_uid) {
		uid = km_image_uid;
		has_uid = 1;
	}
	snprintf(podref, sizeof(podref), "\"%s_%s(%s)\"",
		 km_meta_str(pod, "name") ?: "",
		 km_meta_str(pod, "namespace") ?: "",
		 km_meta_str(pod, "uid") ?: "");
	/* The kubelet's verifyRunAsNonRoot: images run as km_image_uid. */
	if (cJSON_IsTrue(sc_pick(pod, c, "runAsNonRoot"))) {
		if (!has_uid) {
			snprintf(why, cap,
				 "container has runAsNonRoot and image will "
				 "run as root (pod: %s, container: %s)",
				 podref, km_str(c, "name") ?: "");
			return HB_EPERM;
		}
		if (uid == 0) {
			snprintf(why, cap,
				 "container's runAsUser breaks non-root "
				 "policy (pod: %s, container: %s)",
				 podref, km_str(c, "name") ?: "");
			return HB_EPERM;
		}
	}
	cJSON_ArrayForEach (g, km_get(psc, "supplementalGroups")) {
		if (id_of(g, &v) && id->ngroups < KM_MAX_GROUPS)
			id->groups[id->ngroups++] = v;
	}
	if (id_of(km_get(psc, "fsGroup"), &v) && id->ngroups < KM_MAX_GROUPS)
		id->groups[id->ngroups++] = v;
	if (!has_uid && !has_gid && !id->ngroups)
		return 0; /* as the emulator runs */
	if (has_uid && !has_gid) {
		/* The image's passwd entry gives the group: this host's. */
		struct passwd pw, *res = NULL;
		char buf[4096];

		if (!getpwuid_r(uid, &pw, buf, sizeof(buf), &res) && res)
			gid = pw.pw_gid;
	}
	id->set = 1;
	id->uid = uid;
	id->gid = gid;
	return 0;
}

/* ---- the child ------------------------------------------------------ */

enum step {
	S_IO,
	S_NS,
	S_SLAVE,
	S_BIND,
	S_RO,
	S_GROUPS,
	S_GID,
	S_UID,
	S_CHDIR,
	S_EXEC
};

struct child_err {
	int step;
	int idx;
	int err;
};

static void report(int fd, enum step step, int idx)
{
	struct child_err e = { step, idx, errno };
	ssize_t w = write(fd, &e, sizeof(e));

	(void)w;
	_exit(127);
}

/* Runs after fork(): system calls only. */
static void child(const struct km_launch *l, const char *path,
		  char *const argv[], char *const envp[], const char *wd,
		  int in, int out, int efd)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	static const int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP };
	sigset_t none;

	setsid();
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(1, 2) < 0)
		report(efd, S_IO, 0);
	if (l->nbinds) {
		if (unshare(CLONE_NEWNS))
			report(efd, S_NS, 0);
		if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
			report(efd, S_SLAVE, 0);
	}
	for (size_t i = 0; i < l->nbinds; i++) {
		const struct km_bind *b = &l->binds[i];

		if (mount(b->src, b->dst, NULL, MS_BIND | MS_REC, NULL))
			report(efd, S_BIND, (int)i);
		if (b->ro && mount(NULL, b->dst, NULL,
				   MS_BIND | MS_REMOUNT | MS_RDONLY, NULL))
			report(efd, S_RO, (int)i);
	}
	if (l->id.set) {
		if (setgroups((size_t)l->id.ngroups, l->id.groups))
			report(efd, S_GROUPS, 0);
		if (setgid(l->id.gid))
			report(efd, S_GID, 0);
		if (setuid(l->id.uid))
			report(efd, S_UID, 0);
		errno = EPERM;
		if (getgid() != l->id.gid || getegid() != l->id.gid ||
		    getuid() != l->id.uid || geteuid() != l->id.uid)
			report(efd, S_UID, 0);
	}
	if (chdir(wd))
		report(efd, S_CHDIR, 0);
	execve(path, argv, envp);
	report(efd, S_EXEC, 0);
}

/* argv0 found on the container's PATH (envp's, as a runtime looks in
 * the image's environment), else the emulator's. */
int km_container_resolve(const char *argv0, char *const envp[], char *out,
			 size_t cap)
{
	const char *p = getenv("PATH");
	struct stat sb;

	for (size_t i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], "PATH=", 5))
			p = envp[i] + 5;

	if (strchr(argv0, '/'))
		return snprintf(out, cap, "%s", argv0) >= (int)cap ? -1 : 0;
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");

		/* An empty entry is the working directory. */
		if (snprintf(out, cap, "%.*s/%s", n ? (int)n : 1, n ? p : ".",
			     argv0) < (int)cap &&
		    !stat(out, &sb) && S_ISREG(sb.st_mode) &&
		    (sb.st_mode & 0111))
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

static void explain(const struct km_launch *l, const struct child_err *e,
		    const char *path, const char *wd, char *why, size_t cap)
{
	const struct km_bind *b = &l->binds[e->idx];
	const char *es = strerror(e->err);

	switch ((enum step)e->step) {
	case S_BIND:
		snprintf(why, cap,
			 "error mounting \"%s\" to rootfs at \"%s\": %s",
			 b->src, b->dst, es);
		break;
	case S_RO:
		snprintf(why, cap,
			 "error mounting \"%s\" read-only at \"%s\": %s",
			 b->src, b->dst, es);
		break;
	case S_NS:
	case S_SLAVE:
		snprintf(why, cap, "cannot make a private mount namespace: %s",
			 es);
		break;
	case S_GROUPS:
	case S_GID:
	case S_UID:
		snprintf(why, cap,
			 "cannot run as uid %u gid %u (%d supplementary "
			 "groups): %s",
			 (unsigned)l->id.uid, (unsigned)l->id.gid,
			 l->id.ngroups, es);
		break;
	case S_CHDIR:
		snprintf(why, cap, "chdir to cwd (\"%s\") failed: %s", wd, es);
		break;
	case S_EXEC:
		snprintf(why, cap, "exec: \"%s\": %s", path, es);
		break;
	default:
		snprintf(why, cap, "cannot set up the process: %s", es);
	}
}

int km_container_exec(const struct km_launch *l, char *const argv[],
		      char *const envp[], const char *wd, const char *logpath,
		      pid_t *pid, char *why, size_t cap)
{
	char path[4096];
	int in = -1, out = -1, pfd[2] = { -1, -1 }, rc = HB_EIO;
	struct child_err e;
	ssize_t n;

	*pid = 0;
	if (km_container_resolve(argv[0], envp, path, sizeof(path))) {
		snprintf(why, cap,
			 "exec: \"%s\": executable file not found in $PATH",
			 argv[0]);
		return HB_EIO;
	}
	in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	out = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (in < 0 || out < 0 || pipe2(pfd, O_CLOEXEC)) {
		snprintf(why, cap, "cannot open %s: %s", logpath,
			 strerror(errno));
		goto out;
	}
	*pid = fork();
	if (*pid < 0) {
		snprintf(why, cap, "fork: %s", strerror(errno));
		*pid = 0;
		goto out;
	}
	if (*pid == 0)
		child(l, path, argv, envp, wd, in, out, pfd[1]);
	close(pfd[1]);
	pfd[1] = -1;
	do
		n = read(pfd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(e)) {
		/* The child failed before exec and has exited. */
		explain(l, &e, path, wd, why, cap);
		waitpid(*pid, NULL, 0);
		*pid = 0;
		goto out;
	}
	rc = 0;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	return rc;
}
