/*
 * job_submit_hpcbridge.c - job_submit/hpcbridge, the slurmctld hook.
 *
 * With plugin.decide: snapshot (the default), every batch job is placed
 * here, in process, from the snapshot hpcbridged publishes (inproc.c):
 * no socket and no disk under slurmctld's lock.  With plugin.decide:
 * daemon, the plugin instead asks hpcbridged where it runs (the "decide"
 * op of protocol v1) within plugin.timeout_ms.  Either way:
 *   slurm       leave the job as it is, tag its admin_comment;
 *   kubernetes  rewrite it into the proxy job the daemon describes.
 * Anything else - no daemon, a slow one, a malformed or refused reply -
 * leaves the job untouched and logs one line: slurmctld is never held
 * hostage, and Slurm behaves as if hpcbridge were not there.
 *
 * The hook runs inside slurmctld with its job write lock held.  It does
 * one write/read on a local socket, bounded by the timeout, and no other
 * I/O (the configuration is read once, in init()).  It looks no name up
 * (no getpwuid: a slow LDAP or SSSD would stall slurmctld): the request
 * carries the uid, the daemon resolves the name.  A new connection is
 * believed only if root or daemon.user serves it (two lstat()s and
 * SO_PEERCRED, no lookup: the user is resolved in init()).  The connection is
 * kept from one job to the next (hb_proto_call_on()), so a submission
 * costs neither side a connect, an accept or a close.  It links no
 * Slurm library: strings given to Slurm are made with slurm_xstrdup (Slurm
 * frees job_desc fields with xfree), and logging uses slurm_info and
 * slurm_error, all exported by the slurmctld process.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h> /* slurm_info, slurm_error, slurm_verbose */

#include "hbplugin.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"

#define EXPORT __attribute__((visibility("default")))

/* Slurm's allocator (src/common/xmalloc.h, xstring.h in 22.05), exported
 * by libslurmfull, which slurmctld links. */
extern char *slurm_xstrdup(const char *str);
extern void slurm_xfree(void **ptr);

EXPORT extern const char plugin_name[];
EXPORT extern const char plugin_type[];
EXPORT extern const uint32_t plugin_version;
const char plugin_name[] = "hpcbridge gateway placement";
const char plugin_type[] = "job_submit/hpcbridge";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

EXPORT int init(void);
EXPORT void fini(void);
EXPORT int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid,
		      char **err_msg);
/* slurmctld's job_record_t, never looked into. */
struct job_record;
EXPORT int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr,
		      uint32_t submit_uid);

static struct hb_plugin_conf conf;
/* plugin.decide: snapshot; NULL otherwise */
static struct hb_inproc *inproc;
/* The connection to the daemon, kept between jobs; the job write lock
 * already makes calls one at a time, the mutex says so. */
static struct hb_proto_conn daemon_conn = HB_PROTO_CONN_INIT;
static pthread_mutex_t daemon_mu = PTHREAD_MUTEX_INITIALIZER;

/* The time each decision spends in slurmctld's job write lock, said in
 * the log every LATENCY_EVERY decisions and at fini(), since init(). */
#define LATENCY_EVERY 100
static struct hb_latency latency;
static pthread_mutex_t latency_mu = PTHREAD_MUTEX_INITIALIZER;

static const struct hb_slurm_alloc slurm_alloc = {
	.strdup = slurm_xstrdup,
	.free = slurm_xfree,
};

/* hb_log() records go to slurmctld's log, with the plugin's prefix. */
static void to_slurm(enum hb_log_level level, const char *msg,
		     const char *json_line, void *arg)
{
	(void)json_line;
	(void)arg;
	switch (level) {
	case HB_LOG_ERROR:
	case HB_LOG_WARN:
		slurm_error("%s: %s", plugin_type, msg);
		break;
	case HB_LOG_INFO:
		slurm_info("%s: %s", plugin_type, msg);
		break;
	default:
		slurm_verbose("%s: %s", plugin_type, msg);
		break;
	}
}

int init(void)
{
	const char *path = getenv("HPCBRIDGE_CONFIG");
	struct hb_err err = { 0 };
	int rc;

	hb_log_set_hook(to_slurm, NULL);
	/* a debug line would be formatted for slurmctld to drop it (at
	 * its default level): under its lock, on every job */
	hb_log_set_level(getenv("HPCBRIDGE_PLUGIN_DEBUG") ? HB_LOG_DEBUG
							  : HB_LOG_INFO);
	if (!path || !*path)
		path = HB_PLUGIN_DEFAULT_CONFIG;
	rc = hb_plugin_conf_load(path, &conf, &err);
	if (rc == 0)
		hb_log(HB_LOG_INFO,
		       "daemon %s, timeout %d ms, daemon uid %lu (from %s)",
		       conf.socket, conf.timeout_ms,
		       (unsigned long)conf.daemon_uid, path);
	else if (rc == HB_ENOENT)
		hb_log(HB_LOG_INFO,
		       "daemon %s, timeout %d ms, daemon uid %lu (%s not "
		       "found)",
		       conf.socket, conf.timeout_ms,
		       (unsigned long)conf.daemon_uid, path);
	else
		hb_log(HB_LOG_ERROR,
		       "%s; using daemon %s, timeout %d ms, daemon uid %lu",
		       err.msg, conf.socket, conf.timeout_ms,
		       (unsigned long)conf.daemon_uid);
	/* Only a socket served by root or daemon.user is believed
	 * (hb_proto_check_server()). */
	pthread_mutex_lock(&daemon_mu);
	hb_proto_conn_close(&daemon_conn);
	daemon_conn.daemon_uid = conf.daemon_uid;
	pthread_mutex_unlock(&daemon_mu);
	pthread_mutex_lock(&latency_mu);
	hb_latency_reset(&latency);
	pthread_mutex_unlock(&latency_mu);
	hb_inproc_stop(inproc);
	inproc = NULL;
	if (conf.inproc) {
		if (hb_inproc_start(conf.snapshot, conf.daemon_uid, 1, &inproc,
				    &err))
			hb_log(HB_LOG_ERROR, "%s; jobs stay on Slurm",
			       err.msg);
		else
			hb_log(HB_LOG_INFO, "deciding in slurmctld from %s",
			       conf.snapshot);
	}
	/* Never fail: slurmctld would not start. */
	return SLURM_SUCCESS;
}

/* One line with the in-lock time so far; latency_mu held. */
static void say_latency(void)
{
	hb_log(HB_LOG_INFO,
	       "in-lock time over %" PRIu64 " decisions: p50 %" PRIu64
	       " us, p99 %" PRIu64 " us, max %" PRIu64 " us",
	       latency.n, hb_latency_quantile(&latency, 0.5),
	       hb_latency_quantile(&latency, 0.99), latency.max_us);
}

static void count_latency(const struct timespec *t0)
{
	struct timespec t1;
	int64_t us;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = (int64_t)(t1.tv_sec - t0->tv_sec) * 1000000 +
	     (t1.tv_nsec - t0->tv_nsec) / 1000;
	pthread_mutex_lock(&latency_mu);
	hb_latency_add(&latency, us > 0 ? (uint64_t)us : 0);
	if (latency.n % LATENCY_EVERY == 0)
		say_latency();
	pthread_mutex_unlock(&latency_mu);
}

void fini(void)
{
	pthread_mutex_lock(&latency_mu);
	if (latency.n % LATENCY_EVERY)
		say_latency();
	pthread_mutex_unlock(&latency_mu);
	pthread_mutex_lock(&daemon_mu);
	hb_proto_conn_close(&daemon_conn);
	pthread_mutex_unlock(&daemon_mu);
	hb_inproc_stop(inproc);
	inproc = NULL;
	hb_log_set_hook(NULL, NULL);
}

/* The job's name for the log: one line, at most 64 characters. */
static const char *shown(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	for (; name && *name && n + 1 < len && n < 64; name++)
		buf[n++] = (unsigned char)*name < 0x20 || *name == 0x7f ? '?'
									: *name;
	buf[n] = '\0';
	return buf;
}

/* Tell the user the job runs on Kubernetes (sbatch prints it). */
static void tell_user(char **err_msg, const char *id, const char *reason)
{
	char msg[600];

	if (!err_msg || *err_msg)
		return;
	snprintf(msg, sizeof(msg),
		 "hpcbridge: job %s runs on Kubernetes%s%s%s; this Slurm job "
		 "follows it",
		 id, reason && *reason ? " (" : "", reason ? reason : "",
		 reason && *reason ? ")" : "");
	*err_msg = slurm_xstrdup(msg);
}

/* Tell the user why the policy refused the job (sbatch prints it). */
static void reject(char **err_msg, const char *id, const char *reason)
{
	char msg[600];

	if (!err_msg || *err_msg)
		return;
	snprintf(msg, sizeof(msg), "hpcbridge: job %s rejected: %s", id,
		 reason);
	*err_msg = slurm_xstrdup(msg);
}

/* Decide here, from the daemon's snapshot (inproc.c), and apply it. */
static int place_inproc(job_desc_msg_t *job_desc, char **err_msg)
{
	struct hb_inproc_result r;
	struct hb_err err = { 0 };
	char name[72];

	shown(job_desc->name, name, sizeof(name));
	if (hb_inproc_decide(inproc, job_desc, &slurm_alloc,
			     hb_clock_wall_ms(), &r, &err)) {
		hb_log(HB_LOG_ERROR,
		       "job '%s' of uid %" PRIu32 " left on Slurm: %s", name,
		       job_desc->user_id, err.msg);
		return SLURM_SUCCESS;
	}
	if (r.target == HB_PLUGIN_REJECTED) {
		hb_log(HB_LOG_INFO,
		       "%s: job '%s' of uid %" PRIu32 " rejected: %s", r.id,
		       name, job_desc->user_id, r.reason);
		reject(err_msg, r.id, r.reason);
		return ESLURM_ACCESS_DENIED;
	}
	/* the daemon logs and audits every decision; a line here would be
	 * a write to slurmctld's log under its lock */
	if (r.target == HB_PLUGIN_KUBERNETES) {
		hb_log(HB_LOG_DEBUG,
		       "%s: job '%s' of uid %" PRIu32 " runs on Kubernetes; "
		       "proxy in partition %s",
		       r.id, name, job_desc->user_id, r.partition);
		tell_user(err_msg, r.id, r.reason);
	} else {
		hb_log(HB_LOG_DEBUG,
		       "%s: job '%s' of uid %" PRIu32 " stays on Slurm", r.id,
		       name, job_desc->user_id);
	}
	return SLURM_SUCCESS;
}

/* Ask the daemon where the job runs, and apply its answer. */
static int place(job_desc_msg_t *job_desc, char **err_msg)
{
	struct hb_err err = { 0 };
	struct hb_plugin_decision d;
	cJSON *req = NULL, *reply = NULL;
	char name[72];
	int64_t t0;
	int rc, ret = SLURM_SUCCESS;

	shown(job_desc->name, name, sizeof(name));
	t0 = hb_clock_mono_ms();
	req = hb_decide_request(job_desc, &err);
	if (!req) {
		hb_log(HB_LOG_ERROR,
		       "job '%s' of uid %" PRIu32 " left on Slurm: request: %s",
		       name, job_desc->user_id, err.msg);
		goto out;
	}
	pthread_mutex_lock(&daemon_mu);
	rc = hb_proto_call_on(&daemon_conn, conf.socket, req, conf.timeout_ms,
			      &reply, &err);
	pthread_mutex_unlock(&daemon_mu);
	if (rc) {
		hb_log(HB_LOG_ERROR,
		       "job '%s' of uid %" PRIu32 " left on Slurm: daemon %s: "
		       "%s (%s) after %" PRId64 " ms",
		       name, job_desc->user_id, conf.socket, hb_errname(rc),
		       err.msg, hb_clock_mono_ms() - t0);
		goto out;
	}
	rc = hb_plugin_decision_parse(reply, &d, &err);
	if (rc) {
		hb_log(HB_LOG_ERROR,
		       "job '%s' of uid %" PRIu32 " left on Slurm: %s", name,
		       job_desc->user_id, err.msg);
		goto out;
	}
	if (d.target == HB_PLUGIN_REJECTED) {
		hb_log(HB_LOG_INFO,
		       "%s: job '%s' of uid %" PRIu32 " rejected: %s (%" PRId64
		       " ms)",
		       d.id, name, job_desc->user_id, d.reason,
		       hb_clock_mono_ms() - t0);
		reject(err_msg, d.id, d.reason);
		ret = ESLURM_ACCESS_DENIED;
		goto out;
	}
	rc = hb_plugin_decision_apply(job_desc, &d, &slurm_alloc, &err);
	if (rc) {
		hb_log(HB_LOG_ERROR,
		       "job '%s' of uid %" PRIu32 " left on Slurm: %s: %s",
		       name, job_desc->user_id, d.id, err.msg);
		goto out;
	}
	if (d.target == HB_PLUGIN_KUBERNETES) {
		hb_log(HB_LOG_INFO,
		       "%s: job '%s' of uid %" PRIu32 " runs on Kubernetes; "
		       "proxy in partition %s (%" PRId64 " ms)",
		       d.id, name, job_desc->user_id, d.partition,
		       hb_clock_mono_ms() - t0);
		tell_user(err_msg, d.id, d.reason);
	} else {
		hb_log(HB_LOG_DEBUG,
		       "%s: job '%s' of uid %" PRIu32 " stays on Slurm "
		       "(%" PRId64 " ms)",
		       d.id, name, job_desc->user_id, hb_clock_mono_ms() - t0);
	}
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return ret;
}

int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	struct timespec in;
	int ret;

	(void)submit_uid;
	if (!hb_decide_wanted(job_desc))
		return SLURM_SUCCESS;
	clock_gettime(CLOCK_MONOTONIC, &in);
	ret = inproc ? place_inproc(job_desc, err_msg)
		     : conf.inproc ? SLURM_SUCCESS /* could not start */
				   : place(job_desc, err_msg);
	count_latency(&in);
	return ret;
}

/* 22.05: job_modify(job_desc, job_record_t *, submit_uid); the record
 * stays opaque.  Modifications are left alone. */
int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr,
	       uint32_t submit_uid)
{
	(void)job_desc;
	(void)job_ptr;
	(void)submit_uid;
	return SLURM_SUCCESS;
}
