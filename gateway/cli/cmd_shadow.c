/*
 * cmd_shadow.c - hpcbridge shadow ID: the process of a burst job's Slurm
 * proxy.
 *
 * The proxy job's script is "exec hpcbridge shadow ID".  The shadow asks
 * the daemon to start the remote job (idempotent: a requeued or restarted
 * proxy adopts the job), copies the remote output to its own stdout (the
 * Slurm job's output file) as it grows, and exits with the remote exit
 * code.  On SIGTERM or SIGINT (scancel, or the time limit) it asks the
 * daemon to cancel the remote job and exits 128+signal.
 *
 * While the daemon is unreachable (restarting), the shadow retries with a
 * capped backoff; the remote job keeps running meanwhile.  A socket that
 * neither root nor daemon.user serves is refused at once, never retried
 * (hb_proto_check_server()): nothing an impostor sends reaches the job's
 * output or its exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/proto.h"

#define CALL_TIMEOUT   10000	     /* ms per request */
#define CHUNK	       (256u * 1024) /* output bytes per poll */
#define BACKOFF_MAX_MS 5000
#define CANCEL_RETRY_MS 5000 /* how long a busy daemon's cancel is retried */

extern char **environ;

static volatile sig_atomic_t stop_signal;
/* daemon.user: the server check believes a socket served by root or it. */
static uid_t daemon_uid;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	/* A signal cuts the sleep short; the caller looks at stop_signal. */
	nanosleep(&ts, NULL);
}

static void note(const char *id, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(const char *id, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hpcbridge shadow %s: ", id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * One request; retried while the daemon cannot be reached or is busy
 * (HB_EUNAVAIL, HB_ETIMEDOUT) until a signal arrives.  0 with an ok
 * reply; otherwise the error (the message in err).
 */
static int request(const char *sock, const char *id, cJSON *req, cJSON **reply,
		   struct hb_err *err)
{
	int backoff = 100, rc, said = 0;

	for (;;) {
		memset(err, 0, sizeof(*err));
		rc = hb_proto_call_uid(sock, daemon_uid, req, CALL_TIMEOUT,
				       reply, err);
		if (!rc) {
			rc = hb_proto_reply_status(*reply, err);
			if (rc) {
				cJSON_Delete(*reply);
				*reply = NULL;
			}
			/* EUNAVAIL: the daemon is busy; try again */
			if (rc != HB_EUNAVAIL || stop_signal)
				return rc;
		}
		if ((rc != HB_EUNAVAIL && rc != HB_ETIMEDOUT) || stop_signal)
			return rc;
		if (!said++)
			note(id, "daemon unreachable or busy, retrying: %s",
			     err->msg);
		sleep_ms(backoff);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
						       : backoff * 2;
	}
}

/*
 * Show the remote phase in the proxy's Slurm comment (squeue -o %k):
 * "hpcbridge:ID running".  The job's owner may update its comment, so
 * scontrol does it; a failure only costs the display.
 */
/* Run a Slurm command and wait for it; a failure is the caller's to
 * ignore. */
static void run_slurm_cmd(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

static void show_phase(const char *id, const char *phase)
{
	const char *job = getenv("SLURM_JOB_ID");
	char jobarg[64], comment[128];
	char *argv[] = { "scontrol", "update", jobarg, comment, NULL };

	if (!job || !*job)
		return;
	snprintf(jobarg, sizeof(jobarg), "JobId=%s", job);
	snprintf(comment, sizeof(comment), "Comment=hpcbridge:%s %s", id,
		 phase);
	run_slurm_cmd(argv);
}

/*
 * The remote job was cancelled on the remote side (its MPIJob deleted
 * with kubectl): cancel this proxy too, so Slurm says CANCELLED, as for
 * scancel.  The signal that follows ends the shadow.
 */
static void cancel_self(void)
{
	const char *job = getenv("SLURM_JOB_ID");
	char *argv[] = { "scancel", (char *)job, NULL };

	if (job && *job)
		run_slurm_cmd(argv);
}

/*
 * Stop the remote job (only this task's, for a task of an array: task
 * >= 0); best effort, one try.  why NULL: a cancel (scancel of the
 * proxy); else the reason the proxy ends failed (remote_abandon, which
 * leaves the Slurm job to end as it does).
 */
static void cancel_remote(const char *sock, const char *id, long task,
			  const char *why)
{
	cJSON *req = hb_cli_id_request(why ? "remote_abandon" : "cancel", id);
	cJSON *reply = NULL;
	struct hb_err err = { 0 };
	int rc = HB_ENOMEM;

	if (req && ((task >= 0 && !cJSON_AddNumberToObject(req, "array_task",
							   (double)task)) ||
		    (why && !cJSON_AddStringToObject(req, "reason", why)))) {
		cJSON_Delete(req);
		req = NULL;
	}
	/* A busy daemon (EUNAVAIL: its remote queue is full, or it cannot
	 * be reached) is asked again for a few seconds, within Slurm's
	 * KillWait: a cancel given up would leave the remote job running
	 * with nothing to follow it. */
	for (int backoff = 100, waited = 0; req; waited += backoff,
		 backoff = backoff * 2 > 1000 ? 1000 : backoff * 2) {
		memset(&err, 0, sizeof(err));
		cJSON_Delete(reply);
		reply = NULL;
		rc = hb_proto_call_uid(sock, daemon_uid, req, CALL_TIMEOUT,
				       &reply, &err);
		if (!rc)
			rc = hb_proto_reply_status(reply, &err);
		if (rc != HB_EUNAVAIL || waited >= CANCEL_RETRY_MS)
			break;
		sleep_ms(backoff);
	}
	if (!rc)
		note(id, "%s", "cancelled the remote job");
	else
		note(id, "could not cancel the remote job: %s",
		     err.msg[0] ? err.msg : "out of memory");
	cJSON_Delete(req);
	cJSON_Delete(reply);
}

static const char usage[] =
	"usage: hpcbridge shadow [--socket PATH] [--poll MS] ID\n"
	"Run as a burst job's Slurm proxy: start the remote job, copy its "
	"output,\nexit with its exit code; cancel it on SIGTERM.\n";

/* One shadow: the remote job it follows and how far it has copied. */
struct shadow {
	const char *sock, *id;
	long task_id; /* the array task, -1: none */
	int poll_ms;
	struct hb_config cfg;
	struct hb_err err;
	double offset;	/* of the output copied so far */
	char shown[32]; /* the phase in the Slurm comment */
	char why[HB_ERR_MAX + 64];
};

/* How a remote_poll ends the loop, if it does. */
enum poll_end {
	POLL_MORE,    /* poll again */
	POLL_DONE,    /* the remote job ended: exit with its code */
	POLL_STOPPED, /* a signal came: cancel the remote job */
	POLL_ABANDON  /* sh->why: this proxy ends failed */
};

/* The command line and $SLURM_ARRAY_TASK_ID into sh; -1 to go on, else
 * the exit status. */
static int shadow_args(int argc, char **argv, struct shadow *sh)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "poll", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *task = getenv("SLURM_ARRAY_TASK_ID");
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+s:p:h", opts, NULL)) != -1) {
		if (opt == 's') {
			sh->sock = optarg;
		} else if (opt == 'p') {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 10 || v > 60000) {
				fprintf(stderr,
					"hpcbridge shadow: --poll: "
					"'%s' is not 10..60000 ms\n",
					optarg);
				return HB_EXIT_USAGE;
			}
			sh->poll_ms = (int)v;
		} else if (opt == 'h') {
			printf("%s", usage);
			return HB_EXIT_OK;
		} else {
			fprintf(stderr, "%s", usage);
			return HB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s", usage);
		return HB_EXIT_USAGE;
	}
	sh->id = argv[optind];
	if (task && *task) {
		char *end;

		errno = 0;
		sh->task_id = strtol(task, &end, 10);
		if (errno || *end || sh->task_id < 0)
			sh->task_id = -1;
	}
	return -1;
}

/* Whom to believe, the socket, the signals; -1 to go on, else the exit
 * status. */
static int shadow_setup(struct shadow *sh)
{
	struct sigaction sa;
	int rc;

	/* Who may answer: root, or daemon.user of $HPCBRIDGE_CONFIG or the
	 * system file.  An impostor's socket is refused (HB_EPERM, not
	 * retried): none of its replies is acted on. */
	if ((rc = hb_cli_daemon_uid(NULL, &daemon_uid, &sh->err))) {
		note(sh->id, "%s",
		     sh->err.msg[0] ? sh->err.msg : hb_strerror(rc));
		return HB_EXIT_INPUT;
	}
	memset(&sh->cfg, 0, sizeof(sh->cfg));
	if (!sh->sock) {
		if (hb_config_defaults(&sh->cfg))
			return HB_EXIT_INPUT;
		sh->sock = sh->cfg.daemon_socket;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return -1;
}

/* Start, or adopt, the remote job: 0 or the error (in sh->err). */
static int start_remote(struct shadow *sh)
{
	cJSON *req = hb_cli_id_request("remote_start", sh->id), *reply = NULL;
	const char *slurm_id = getenv("SLURM_JOB_ID");
	const char *array_id = getenv("SLURM_ARRAY_JOB_ID");
	int rc;

	if (req && slurm_id)
		cJSON_AddStringToObject(req, "slurm_job_id", slurm_id);
	/* Each task of an array has its own proxy and its own remote job. */
	if (req && sh->task_id >= 0)
		cJSON_AddNumberToObject(req, "array_task", (double)sh->task_id);
	if (req && sh->task_id >= 0 && array_id)
		cJSON_AddStringToObject(req, "slurm_array_job_id", array_id);
	rc = req ? request(sh->sock, sh->id, req, &reply, &sh->err) : HB_ENOMEM;
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return rc;
}

/* The remote job ended (reply, phase ph): its exit code into *code; a
 * job cancelled on the remote side cancels this proxy too, whose signal
 * stops the shadow.  A job preempted on Kubernetes is suspended with its
 * proxy (the daemon does both: this process is stopped meanwhile), and
 * one placed on Slurm instead ends the proxy: "replaced". */
static enum poll_end remote_done(struct shadow *sh, const cJSON *reply,
				 const cJSON *ph, int *code)
{
	const cJSON *ec = cJSON_GetObjectItem(reply, "exit_code");

	*code = cJSON_IsNumber(ec) && ec->valuedouble >= 0 &&
				ec->valuedouble <= 255
			? (int)ec->valuedouble
			: 1;
	if (!strcmp(ph->valuestring, "replaced")) {
		/* The daemon placed the job on Slurm instead: this proxy has
		 * nothing left to follow, and ends without a failure. */
		const cJSON *m = cJSON_GetObjectItem(reply, "message");

		note(sh->id, "%s; this proxy ends",
		     cJSON_IsString(m) ? m->valuestring
				       : "placed on Slurm instead");
		*code = 0;
		return POLL_DONE;
	}
	if (strcmp(ph->valuestring, "succeeded")) {
		const cJSON *m = cJSON_GetObjectItem(reply, "message");

		note(sh->id, "the remote job ended %s%s%s", ph->valuestring,
		     cJSON_IsString(m) ? ": " : "",
		     cJSON_IsString(m) ? m->valuestring : "");
	}
	if (!strcmp(ph->valuestring, "cancelled")) {
		cancel_self();
		/* scancel's signal ends the shadow */
		for (int i = 0; i < 100 && !stop_signal; i++)
			sleep_ms(100);
		if (stop_signal)
			return POLL_STOPPED;
	}
	return POLL_DONE;
}

/* The reply to a remote_poll: its output (data) copied to stdout, its
 * phase shown, the end when it says done. */
static enum poll_end poll_reply(struct shadow *sh, const cJSON *reply,
				struct hb_buf *data, int *code)
{
	const cJSON *d, *ph, *nx;

	d = cJSON_GetObjectItem(reply, "data");
	ph = cJSON_GetObjectItem(reply, "phase");
	nx = cJSON_GetObjectItem(reply, "next");
	hb_buf_reset(data);
	if (!cJSON_IsString(ph) || !cJSON_IsNumber(nx) ||
	    nx->valuedouble < sh->offset ||
	    (d &&
	     (!cJSON_IsString(d) ||
	      hb_buf_unbase64(data, d->valuestring, strlen(d->valuestring))))) {
		snprintf(sh->why, sizeof(sh->why), "%s",
			 "malformed reply from the daemon");
		return POLL_ABANDON;
	}
	if (data->len &&
	    (fwrite(data->data, 1, data->len, stdout) != data->len ||
	     fflush(stdout) != 0)) {
		snprintf(sh->why, sizeof(sh->why),
			 "cannot write the output: %s", strerror(errno));
		return POLL_ABANDON;
	}
	sh->offset = nx->valuedouble;
	/* "replaced": the daemon wrote the comment (the new Slurm job) */
	if (strcmp(sh->shown, ph->valuestring) &&
	    strcmp(ph->valuestring, "replaced")) {
		snprintf(sh->shown, sizeof(sh->shown), "%s", ph->valuestring);
		show_phase(sh->id, sh->shown);
	}
	if (cJSON_IsTrue(cJSON_GetObjectItem(reply, "done")))
		return remote_done(sh, reply, ph, code);
	return POLL_MORE;
}

/* One remote_poll: up to CHUNK bytes of output from sh->offset on. */
static enum poll_end poll_once(struct shadow *sh, struct hb_buf *data,
			       int *code)
{
	cJSON *req = hb_cli_id_request("remote_poll", sh->id), *reply = NULL;
	enum poll_end end;
	int rc;

	if (req && (!cJSON_AddNumberToObject(req, "offset", sh->offset) ||
		    !cJSON_AddNumberToObject(req, "max", CHUNK) ||
		    (sh->task_id >= 0 &&
		     !cJSON_AddNumberToObject(req, "array_task",
					      (double)sh->task_id)))) {
		cJSON_Delete(req);
		req = NULL;
	}
	rc = req ? request(sh->sock, sh->id, req, &reply, &sh->err) : HB_ENOMEM;
	cJSON_Delete(req);
	if (rc) {
		cJSON_Delete(reply);
		if (stop_signal)
			return POLL_STOPPED;
		snprintf(sh->why, sizeof(sh->why), "lost the remote job: %s",
			 sh->err.msg[0] ? sh->err.msg : hb_strerror(rc));
		return POLL_ABANDON;
	}
	end = poll_reply(sh, reply, data, code);
	cJSON_Delete(reply);
	if (end == POLL_MORE && data->len < CHUNK)
		sleep_ms(sh->poll_ms);
	return end;
}

int hb_cmd_shadow(int argc, char **argv)
{
	struct shadow sh = { .sock = getenv("HPCBRIDGE_SOCKET"),
			     .task_id = -1,
			     .poll_ms = 200 };
	enum poll_end end = POLL_STOPPED;
	struct hb_buf data;
	int rc, code = 1;

	if ((rc = shadow_args(argc, argv, &sh)) >= 0 ||
	    (rc = shadow_setup(&sh)) >= 0)
		return rc;
	if ((rc = start_remote(&sh)) && !stop_signal) {
		note(sh.id, "cannot start the remote job: %s",
		     sh.err.msg[0] ? sh.err.msg : hb_strerror(rc));
		hb_config_free(&sh.cfg);
		return 1;
	}
	if (!rc) {
		hb_buf_init(&data, 0);
		do
			end = stop_signal ? POLL_STOPPED
					  : poll_once(&sh, &data, &code);
		while (end == POLL_MORE);
		hb_buf_free(&data);
	}
	if (end == POLL_STOPPED) {
		note(sh.id, "stopped by signal %s",
		     stop_signal == SIGINT ? "INT" : "TERM");
		cancel_remote(sh.sock, sh.id, sh.task_id, NULL);
		hb_config_free(&sh.cfg);
		return 128 + (int)stop_signal;
	}
	if (end == POLL_ABANDON) {
		/* This proxy ends failed: the remote job must not run on with
		 * no Slurm job to follow it. */
		note(sh.id, "%s", sh.why);
		code = 1;
		cancel_remote(sh.sock, sh.id, sh.task_id, sh.why);
	}
	hb_config_free(&sh.cfg);
	return code;
}
