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

int hb_cmd_shadow(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "poll", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = getenv("HPCBRIDGE_SOCKET"), *id, *slurm_id;
	const char *task = getenv("SLURM_ARRAY_TASK_ID");
	long task_id = -1;
	struct hb_config cfg;
	struct sigaction sa;
	struct hb_err err = { 0 };
	struct hb_buf data;
	cJSON *req, *reply = NULL;
	double offset = 0;
	char shown[32] = "", why[HB_ERR_MAX + 64];
	int opt, poll_ms = 200, rc, code = 1;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+s:p:h", opts, NULL)) != -1) {
		if (opt == 's') {
			sock = optarg;
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
			poll_ms = (int)v;
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
	id = argv[optind];
	if (task && *task) {
		char *end;

		errno = 0;
		task_id = strtol(task, &end, 10);
		if (errno || *end || task_id < 0)
			task_id = -1;
	}
	/* Who may answer: root, or daemon.user of $HPCBRIDGE_CONFIG or the
	 * system file.  An impostor's socket is refused (HB_EPERM, not
	 * retried): none of its replies is acted on. */
	if ((rc = hb_cli_daemon_uid(NULL, &daemon_uid, &err))) {
		note(id, "%s", err.msg[0] ? err.msg : hb_strerror(rc));
		return HB_EXIT_INPUT;
	}
	memset(&cfg, 0, sizeof(cfg));
	if (!sock) {
		if (hb_config_defaults(&cfg))
			return HB_EXIT_INPUT;
		sock = cfg.daemon_socket;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* Start, or adopt, the remote job. */
	req = hb_cli_id_request("remote_start", id);
	slurm_id = getenv("SLURM_JOB_ID");
	if (req && slurm_id)
		cJSON_AddStringToObject(req, "slurm_job_id", slurm_id);
	/* Each task of an array has its own proxy and its own remote job. */
	if (req && task_id >= 0)
		cJSON_AddNumberToObject(req, "array_task", (double)task_id);
	rc = req ? request(sock, id, req, &reply, &err) : HB_ENOMEM;
	cJSON_Delete(req);
	cJSON_Delete(reply);
	reply = NULL;
	if (rc) {
		if (stop_signal)
			goto stopped;
		note(id, "cannot start the remote job: %s",
		     err.msg[0] ? err.msg : hb_strerror(rc));
		hb_config_free(&cfg);
		return 1;
	}

	hb_buf_init(&data, 0);
	for (;;) {
		const cJSON *d, *ph, *ec, *nx;
		int done;

		if (stop_signal)
			break;
		req = hb_cli_id_request("remote_poll", id);
		if (req && (!cJSON_AddNumberToObject(req, "offset", offset) ||
			    !cJSON_AddNumberToObject(req, "max", CHUNK) ||
			    (task_id >= 0 &&
			     !cJSON_AddNumberToObject(req, "array_task",
						      (double)task_id)))) {
			cJSON_Delete(req);
			req = NULL;
		}
		rc = req ? request(sock, id, req, &reply, &err) : HB_ENOMEM;
		cJSON_Delete(req);
		if (rc) {
			if (stop_signal)
				break;
			snprintf(why, sizeof(why), "lost the remote job: %s",
				 err.msg[0] ? err.msg : hb_strerror(rc));
			goto abandon;
		}
		d = cJSON_GetObjectItem(reply, "data");
		ph = cJSON_GetObjectItem(reply, "phase");
		ec = cJSON_GetObjectItem(reply, "exit_code");
		nx = cJSON_GetObjectItem(reply, "next");
		hb_buf_reset(&data);
		if (!cJSON_IsString(ph) || !cJSON_IsNumber(nx) ||
		    nx->valuedouble < offset ||
		    (d && (!cJSON_IsString(d) ||
			   hb_buf_unbase64(&data, d->valuestring,
					   strlen(d->valuestring))))) {
			snprintf(why, sizeof(why), "%s",
				 "malformed reply from the daemon");
			goto abandon;
		}
		if (data.len &&
		    (fwrite(data.data, 1, data.len, stdout) != data.len ||
		     fflush(stdout) != 0)) {
			snprintf(why, sizeof(why),
				 "cannot write the output: %s",
				 strerror(errno));
			goto abandon;
		}
		offset = nx->valuedouble;
		if (strcmp(shown, ph->valuestring)) {
			snprintf(shown, sizeof(shown), "%s", ph->valuestring);
			show_phase(id, shown);
		}
		done = cJSON_IsTrue(cJSON_GetObjectItem(reply, "done"));
		if (done) {
			code = cJSON_IsNumber(ec) && ec->valuedouble >= 0 &&
					       ec->valuedouble <= 255
				       ? (int)ec->valuedouble
				       : 1;
			if (strcmp(ph->valuestring, "succeeded")) {
				const cJSON *m = cJSON_GetObjectItem(reply,
								     "message");

				note(id, "the remote job ended %s%s%s",
				     ph->valuestring,
				     cJSON_IsString(m) ? ": " : "",
				     cJSON_IsString(m) ? m->valuestring : "");
			}
			if (!strcmp(ph->valuestring, "cancelled")) {
				cancel_self();
				/* scancel's signal ends the shadow */
				for (int i = 0; i < 100 && !stop_signal; i++)
					sleep_ms(100);
				if (stop_signal) {
					cJSON_Delete(reply);
					hb_buf_free(&data);
					goto stopped;
				}
			}
			goto out;
		}
		cJSON_Delete(reply);
		reply = NULL;
		if (data.len < CHUNK)
			sleep_ms(poll_ms);
	}
	hb_buf_free(&data);
stopped:
	note(id, "stopped by signal %s",
	     stop_signal == SIGINT ? "INT" : "TERM");
	cancel_remote(sock, id, task_id, NULL);
	hb_config_free(&cfg);
	return 128 + (int)stop_signal;
abandon:
	/* This proxy ends failed: the remote job must not run on with no
	 * Slurm job to follow it. */
	note(id, "%s", why);
	code = 1;
	cancel_remote(sock, id, task_id, why);
out:
	cJSON_Delete(reply);
	hb_buf_free(&data);
	hb_config_free(&cfg);
	return code;
}
