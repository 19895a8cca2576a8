/*
 * slurmc.c - the gateway's Slurm client over libslurm 22.05: the
 * connection handle (libslurm configured once per process), errors, and
 * job, partition and node states.  Submission and will_run are in
 * slurmc_submit.c, job queries, polls, partitions and nodes in
 * slurmc_jobs.c.
 *
 * Slurm types stay in these files: the header speaks only hb_* and C types.
 * Every libslurm response is freed with libslurm's own free function before
 * the function that asked for it returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gateway/slurm/slurmc_int.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/slurmc.h"

/* Where libslurm looks when neither an argument nor $SLURM_CONF names a
 * file (Debian's build). */
#define DEFAULT_CONF "/etc/slurm/slurm.conf"
/* How long the trial load of slurm.conf in a child may take. */
#define PROBE_TIMEOUT_MS 10000

/* libslurm is configured once per process. */
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned lib_refs;
static char *lib_conf;

/* ----------------------------------------------------------- errors */

int hb_slurmc_errcode(int e)
{
	switch (e) {
	case 0:
		return 0;
	case ENOMEM:
		return HB_ENOMEM;
	case ESLURM_INVALID_JOB_ID:
	case ESLURM_INVALID_PARTITION_NAME:
		return HB_ENOENT;
	case EPERM:
	case EACCES:
	case ESLURM_ACCESS_DENIED:
	case ESLURM_USER_ID_MISSING:
	case ESLURM_GROUP_ID_MISSING:
	case ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP:
	case ESLURM_RESERVATION_ACCESS:
		return HB_EPERM;
	case ESLURM_ALREADY_DONE:
	case ESLURM_JOB_FINISHED:
	case ESLURM_JOB_PENDING:
	case ESLURM_JOB_NOT_PENDING:
	case ESLURM_JOB_NOT_RUNNING:
	case ESLURM_JOB_NOT_PENDING_NOR_RUNNING:
	case ESLURM_JOB_SUSPENDED:
	case ESLURM_JOB_NOT_SUSPENDED:
	case ESLURM_TRANSITION_STATE_NO_UPDATE:
		return HB_ESTATE;
	case ESLURM_PATHNAME_TOO_LONG: /* any string over Slurm's limit */
		return HB_ETOOBIG;
	case ETIMEDOUT:
	case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
		return HB_ETIMEDOUT;
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EPIPE:
	case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
	case SLURM_COMMUNICATIONS_SEND_ERROR:
	case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
	case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
	case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
	case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
	case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
	case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
	case SLURM_PROTOCOL_SOCKET_IMPL_ZERO_RECV_LENGTH:
	case SLURM_PROTOCOL_SOCKET_IMPL_NEGATIVE_RECV_LENGTH:
	case SLURM_PROTOCOL_SOCKET_IMPL_NOT_ALL_DATA_SENT:
	case SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT:
	case ESLURM_IN_STANDBY_MODE:
	case ESLURM_AUTH_UNABLE_TO_SIGN: /* munged unreachable */
		return HB_EUNAVAIL;
	case SLURM_UNEXPECTED_MSG_ERROR:
	case SLURM_PROTOCOL_VERSION_ERROR:
	case SLURM_PROTOCOL_INSANE_MSG_LENGTH:
	case ESLURM_PROTOCOL_INCOMPLETE_PACKET:
		return HB_EPROTO;
	default:
		return HB_ESLURM;
	}
}

/* ----------------------------------------------------- states, exits */

static const char *const state_names[] = {
	[HB_SLURMC_PENDING] = "PENDING",
	[HB_SLURMC_RUNNING] = "RUNNING",
	[HB_SLURMC_SUSPENDED] = "SUSPENDED",
	[HB_SLURMC_COMPLETE] = "COMPLETED",
	[HB_SLURMC_CANCELLED] = "CANCELLED",
	[HB_SLURMC_FAILED] = "FAILED",
	[HB_SLURMC_TIMEOUT] = "TIMEOUT",
	[HB_SLURMC_NODE_FAIL] = "NODE_FAIL",
	[HB_SLURMC_PREEMPTED] = "PREEMPTED",
	[HB_SLURMC_BOOT_FAIL] = "BOOT_FAIL",
	[HB_SLURMC_DEADLINE] = "DEADLINE",
	[HB_SLURMC_OOM] = "OUT_OF_MEMORY",
	[HB_SLURMC_UNKNOWN] = "UNKNOWN",
};

const char *hb_slurmc_state_name(enum hb_slurmc_state st)
{
	if ((unsigned)st < sizeof(state_names) / sizeof(state_names[0]))
		return state_names[st];
	return "UNKNOWN";
}

bool hb_slurmc_state_final(enum hb_slurmc_state st)
{
	switch (st) {
	case HB_SLURMC_COMPLETE:
	case HB_SLURMC_CANCELLED:
	case HB_SLURMC_FAILED:
	case HB_SLURMC_TIMEOUT:
	case HB_SLURMC_NODE_FAIL:
	case HB_SLURMC_PREEMPTED:
	case HB_SLURMC_BOOT_FAIL:
	case HB_SLURMC_DEADLINE:
	case HB_SLURMC_OOM:
		return true;
	default:
		return false;
	}
}

enum hb_slurmc_state hb_slurmc_state_from_slurm(uint32_t job_state,
						bool *completing)
{
	if (completing)
		*completing = (job_state & JOB_COMPLETING) != 0;
	switch (job_state & JOB_STATE_BASE) {
	case JOB_PENDING:
		return HB_SLURMC_PENDING;
	case JOB_RUNNING:
		return HB_SLURMC_RUNNING;
	case JOB_SUSPENDED:
		return HB_SLURMC_SUSPENDED;
	case JOB_COMPLETE:
		return HB_SLURMC_COMPLETE;
	case JOB_CANCELLED:
		return HB_SLURMC_CANCELLED;
	case JOB_FAILED:
		return HB_SLURMC_FAILED;
	case JOB_TIMEOUT:
		return HB_SLURMC_TIMEOUT;
	case JOB_NODE_FAIL:
		return HB_SLURMC_NODE_FAIL;
	case JOB_PREEMPTED:
		return HB_SLURMC_PREEMPTED;
	case JOB_BOOT_FAIL:
		return HB_SLURMC_BOOT_FAIL;
	case JOB_DEADLINE:
		return HB_SLURMC_DEADLINE;
	case JOB_OOM:
		return HB_SLURMC_OOM;
	default:
		return HB_SLURMC_UNKNOWN;
	}
}

void hb_slurmc_decode_exit(uint32_t status, int *code, int *sig)
{
	int st = (int)status;

	if (status == NO_VAL || status == INFINITE) {
		*code = 0;
		*sig = 0;
	} else if (WIFSIGNALED(st)) {
		*code = 0;
		*sig = WTERMSIG(st);
	} else {
		*code = WEXITSTATUS(st);
		*sig = 0;
	}
}

static const char *const part_state_names[] = {
	[HB_SLURMC_PART_UP] = "UP",
	[HB_SLURMC_PART_DOWN] = "DOWN",
	[HB_SLURMC_PART_DRAIN] = "DRAIN",
	[HB_SLURMC_PART_INACTIVE] = "INACTIVE",
};

const char *hb_slurmc_part_state_name(enum hb_slurmc_part_state st)
{
	if ((unsigned)st <
	    sizeof(part_state_names) / sizeof(part_state_names[0]))
		return part_state_names[st];
	return "UNKNOWN";
}

static const char *const node_state_names[] = {
	[HB_SLURMC_NODE_UNKNOWN] = "unknown",
	[HB_SLURMC_NODE_DOWN] = "down",
	[HB_SLURMC_NODE_IDLE] = "idle",
	[HB_SLURMC_NODE_ALLOCATED] = "allocated",
	[HB_SLURMC_NODE_MIXED] = "mixed",
	[HB_SLURMC_NODE_FUTURE] = "future",
};

const char *hb_slurmc_node_state_name(enum hb_slurmc_node_state st)
{
	if ((unsigned)st <
	    sizeof(node_state_names) / sizeof(node_state_names[0]))
		return node_state_names[st];
	return "unknown";
}

/* ------------------------------------------------------ open, close */

/* Read what the child wrote on fd until EOF or the deadline. */
static void read_child(int fd, char *buf, size_t size, int timeout_ms,
		       bool *timed_out)
{
	size_t len = 0;
	int64_t t0 = hb_clock_mono_ms();

	*timed_out = false;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long spent;
		ssize_t n;
		char scratch[256];

		spent = (long)(hb_clock_mono_ms() - t0);
		if (spent >= timeout_ms) {
			*timed_out = true;
			break;
		}
		if (poll(&pfd, 1, (int)(timeout_ms - spent)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!pfd.revents)
			continue;
		if (len + 1 < size)
			n = read(fd, buf + len, size - 1 - len);
		else
			n = read(fd, scratch, sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + 1 < size)
			len += (size_t)n;
	}
	buf[len] = '\0';
}

/* The last non-empty line of text, without its line break. */
const char *hb_slurmc_last_line(char *text)
{
	char *end = text + strlen(text), *p;

	while (end > text &&
	       (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		*--end = '\0';
	p = strrchr(text, '\n');
	return p ? p + 1 : text;
}

/*
 * Load slurm.conf in a child first: libslurm calls exit() when the file
 * does not parse or a plugin it names does not load, and that must not end
 * the daemon.  The child's stderr carries libslurm's reason.
 */
static int probe_conf(const char *path, struct hb_err *err)
{
	int fds[2], status, rc = 0;
	char out[2048];
	bool timed_out;
	pid_t pid, w;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return hb_err_set(err, HB_EIO, path, 0, "pipe: %s",
				  strerror(errno));
	fflush(NULL); /* exit() in the child must not flush our buffers */
	pid = fork();
	if (pid < 0) {
		rc = hb_err_set(err, HB_EIO, path, 0, "fork: %s",
				strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
		}
		dup2(fds[1], STDERR_FILENO);
		slurm_init(path);
		_exit(0);
	}
	close(fds[1]);
	read_child(fds[0], out, sizeof(out), PROBE_TIMEOUT_MS, &timed_out);
	close(fds[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	if (timed_out)
		return hb_err_set(err, HB_ETIMEDOUT, path, 0,
				  "libslurm took over %d s to load it",
				  PROBE_TIMEOUT_MS / 1000);
	if (w < 0) /* reaped elsewhere (SIGCHLD ignored): judge by output */
		status = out[0] ? 1 << 8 : 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (out[0])
		return hb_err_set(err, HB_EINVAL, path, 0,
				  "libslurm refuses it: %s",
				  hb_slurmc_last_line(out));
	if (WIFSIGNALED(status))
		return hb_err_set(err, HB_EINVAL, path, 0,
				  "libslurm died loading it (signal %d)",
				  WTERMSIG(status));
	return hb_err_set(err, HB_EINVAL, path, 0,
			  "libslurm refuses it (exit %d)", WEXITSTATUS(status));
}

int hb_slurmc_check_conf_file(const char *path, struct hb_err *err)
{
	struct stat st;

	if (!*path)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "slurm.conf: empty path");
	if (stat(path, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return hb_err_set(err, HB_ENOENT, path, 0,
					  "no such file (slurm.conf)");
		return hb_err_set(err, HB_EINVAL, path, 0, "%s",
				  strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return hb_err_set(err, HB_EINVAL, path, 0,
				  "not a regular file (slurm.conf)");
	if (access(path, R_OK) < 0)
		return hb_err_set(err, HB_EINVAL, path, 0, "cannot read: %s",
				  strerror(errno));
	return 0;
}

int hb_slurmc_open(const char *slurm_conf, struct hb_slurmc **out,
		   struct hb_err *err)
{
	struct hb_slurmc *c = NULL;
	const char *given = slurm_conf;
	char *path = NULL;
	int rc;

	if (!out)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_open: no output handle");
	if (!given) {
		given = getenv("SLURM_CONF");
		if (!given || !*given)
			given = DEFAULT_CONF;
	}
	if ((rc = hb_slurmc_check_conf_file(given, err)))
		return rc;
	/* One name per file, so that two spellings of it do not conflict. */
	path = realpath(given, NULL);
	if (!path)
		return hb_err_set(err, HB_EINVAL, given, 0, "realpath: %s",
				  strerror(errno));
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}

	pthread_mutex_lock(&lib_lock);
	if (lib_refs) {
		if (strcmp(lib_conf, path)) {
			rc = hb_err_set(err, HB_ECONFLICT, path, 0,
					"libslurm already uses %s; one "
					"slurm.conf per process",
					lib_conf);
			pthread_mutex_unlock(&lib_lock);
			goto out;
		}
	} else {
		char *keep = strdup(path);

		if (!keep) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			pthread_mutex_unlock(&lib_lock);
			goto out;
		}
		if ((rc = probe_conf(path, err))) {
			free(keep);
			pthread_mutex_unlock(&lib_lock);
			goto out;
		}
		slurm_init(path);
		lib_conf = keep;
	}
	lib_refs++;
	pthread_mutex_unlock(&lib_lock);

	c->conf = path;
	path = NULL;
	*out = c;
	c = NULL;
out:
	free(path);
	free(c);
	return rc;
}

void hb_slurmc_close(struct hb_slurmc *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&lib_lock);
	if (lib_refs && --lib_refs == 0) {
		slurm_fini();
		free(lib_conf);
		lib_conf = NULL;
	}
	pthread_mutex_unlock(&lib_lock);
	hb_slurmc_snap_free(c->snap, c->nsnap);
	free(c->pend);
	free(c->conf);
	free(c);
}

const char *hb_slurmc_conf(const struct hb_slurmc *c)
{
	return c ? c->conf : NULL;
}
