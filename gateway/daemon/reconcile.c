/*
 * reconcile.c - the reconciler: the Slurm jobs the plugin tagged, bound to
 * their gateway jobs and followed from Slurm, the decisions made in
 * slurmctld that the daemon never recorded, rebuilt from Slurm's job
 * table, the decided jobs Slurm never queued (orphans), given up as lost,
 * and the proxies of burst jobs that Kueue preempted, suspended and
 * resumed with them (or their jobs placed on Slurm instead).
 */
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/log.h"
#include "hpcbridge/rules.h"

/* How often the reconciler asks Slurm what changed. */
#define SLURM_POLL_MS 1000

/* ------------------------------------------------------------------ */
/* The reconciler: Slurm jobs the plugin tagged, followed from Slurm    */
/* ------------------------------------------------------------------ */

/* A decision made in slurmctld the store does not have (see "Decisions
 * made in slurmctld, rebuilt from Slurm's job record" below). */
struct import {
	struct hb_slurm_change ch; /* account, name: in the task's arena */
	char *request; /* a burst job's decide request (JSON text, from its
			* proxy's script; malloc'ed), NULL: none */
	char why[192]; /* request NULL for a burst job: why */
	int again;     /* the script could not be read now: next poll */
};

/*
 * Every SLURM_POLL_MS a worker asks Slurm which jobs changed (cheap when
 * nothing did).  For each job tagged "hpcbridge:<id>" the loop binds the
 * Slurm job id to the gateway job and, for jobs that run on Slurm, mirrors
 * the state and exit code.  A burst job's state comes from its remote
 * side; only its proxy's id is bound here.
 */
struct poll_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_slurm_side_ops be;
	struct hb_slurm_change *v;
	size_t n, cap;
	int rescan;	     /* forget the last poll first: report every job */
	struct hb_arena mem; /* strings of the changes that carry a snap */
	struct import *imp;
	size_t nimp;
	int64_t began_ms; /* wall clock */
	int rc;
	struct hb_err err;
};

static void poll_free(struct poll_task *pt)
{
	for (size_t i = 0; i < pt->nimp; i++)
		free(pt->imp[i].request);
	free(pt->imp);
	free(pt->v);
	hb_arena_free(&pt->mem);
	free(pt);
}

static int poll_collect(const struct hb_slurm_change *ch, void *arg)
{
	struct poll_task *pt = arg;
	struct hb_slurm_change *c;

	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 64;
		struct hb_slurm_change *v = realloc(pt->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		pt->v = v;
		pt->cap = cap;
	}
	c = &pt->v[pt->n];
	*c = *ch;
	c->account = c->name = NULL;
	/* borrowed for the call: kept for a decision that may need to be
	 * rebuilt only */
	if (ch->snap &&
	    (!(c->account = hb_arena_strdup(&pt->mem,
					    ch->account ? ch->account : "")) ||
	     !(c->name = hb_arena_strdup(&pt->mem, ch->name ? ch->name : ""))))
		return HB_ENOMEM;
	pt->n++;
	return 0;
}

static void poll_run(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;

	pt->began_ms = hb_clock_wall_ms();
	if (pt->rescan && pt->be.slurm_poll_reset)
		pt->be.slurm_poll_reset(pt->be.ctx);
	pt->rc = pt->be.slurm_poll(pt->be.ctx, poll_collect, pt, &pt->err);
}

/*
 * Slurm gives a job number again when slurmctld restarts without the job
 * that had it (killed before its state was saved).  A job recorded under
 * ch's number that is not ch's is that lost job: its number is forgotten
 * and, unless it is over, it ends lost, so ch can be bound.  0, or the
 * store's error.
 */
static int release_reused(struct hb_daemon *d, const struct hb_slurm_change *ch,
			  struct hb_err *err)
{
	static const char why[] = "Slurm lost the job: slurmctld restarted "
				  "without it and gave its job id to another";
	struct hb_job_row o = { 0 };
	cJSON *detail;
	int rc = hb_store_job_by_slurm_id(d->st, ch->slurm_job_id, &o, err);

	if (rc == HB_ENOENT) {
		memset(err, 0, sizeof(*err));
		return 0;
	}
	if (rc || !strcmp(o.id, ch->id))
		goto out;
	if ((rc = hb_store_job_set_slurm(d->st, o.id, -1, err)))
		goto out;
	if (!hb_store_state_terminal(o.state) &&
	    hb_store_state_allowed(o.state, HB_JOB_LOST)) {
		if ((rc = hb_store_job_set_state(d->st, o.id, HB_JOB_LOST, -1,
						 why, err)))
			goto out;
		detail = cJSON_CreateObject();
		cJSON_AddStringToObject(detail, "reason", why);
		cJSON_AddNumberToObject(detail, "slurm_job_id",
					(double)ch->slurm_job_id);
		cJSON_AddStringToObject(detail, "now", ch->id);
		rc = hbd_audit(d, 0, "hpcbridged", "reconciler", "lost", o.id,
			       detail, err);
		cJSON_Delete(detail);
	}
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){
			HB_LOG_STR("job", o.id),
			HB_LOG_INT("slurm_job_id", ch->slurm_job_id),
			HB_LOG_STR("now", ch->id) },
		3, "%s", why);
out:
	hb_job_row_free(&o);
	return rc;
}

/* Apply one change; a store error is returned (the batch is aborted). */
static int reconcile_one(struct hb_daemon *d, const struct hb_slurm_change *ch,
			 int *unknown, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = NULL;
	int rc = hb_store_job_get(d->st, ch->id, &j, err);

	*unknown = rc == HB_ENOENT;
	if (rc == HB_ENOENT) {
		memset(err, 0, sizeof(*err));
		return 0; /* not ours, from another state file, or decided
			   * in slurmctld and not recorded yet */
	}
	if (rc)
		return rc;
	if ((rc = hbd_txn(d, err)))
		goto out;
	if (j.slurm_job_id < 0) {
		if ((rc = release_reused(d, ch, err)) ||
		    (rc = hb_store_job_set_slurm(d->st, j.id, ch->slurm_job_id,
						 err)))
			goto out;
	}
	/* A job placed on Slurm after a preemption: its old proxy (should
	 * its re-tag have failed) is not the job. */
	if (j.target == HB_TARGET_SLURM && j.slurm_job_id >= 0 &&
	    ch->slurm_job_id != j.slurm_job_id && hbd_replaced(d, &j))
		goto out;
	if (j.target != HB_TARGET_SLURM)
		goto out;
	if (hb_store_state_terminal(j.state) || j.state == ch->state ||
	    !hb_store_state_allowed(j.state, ch->state))
		goto meter;
	rc = hb_store_job_set_state(d->st, j.id, ch->state, ch->exit_code,
				    NULL, err);
	detail = cJSON_CreateObject();
	if (!rc && detail) {
		cJSON_AddNumberToObject(detail, "slurm_job_id",
					(double)ch->slurm_job_id);
		cJSON_AddStringToObject(detail, "from",
					hb_job_state_name(j.state));
		cJSON_AddStringToObject(detail, "to",
					hb_job_state_name(ch->state));
		if (ch->exit_code >= 0)
			cJSON_AddNumberToObject(detail, "exit_code",
						(double)ch->exit_code);
		rc = hbd_audit(d, 0, "hpcbridged", "slurm", "slurm-state", j.id,
			       detail, err);
	}
	if (!rc) /* origin hook: the MPIJob's status follows */
		hb_origin_job_changed(d->origin, d->st, j.id);
meter:
	/* ended: metered from what Slurm allocated, whoever ended it (a
	 * job cancelled through the gateway is final here already) */
	if (!rc && hb_store_state_terminal(ch->state))
		rc = hbd_meter_slurm(d, &j, ch, err);
out:
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* The end of a poll, whose decisions to rebuild (if any) were rebuilt. */
static void poll_end(struct poll_task *pt)
{
	struct hb_daemon *d = pt->d;

	d->polling = 0;
	/* every tagged job Slurm had when the poll began is now bound */
	if (!pt->rc)
		d->poll_ok_ms = pt->began_ms;
	if (!pt->rc && !d->slurm_seen) {
		/* Slurm's whole table is bound: the origin jobs it holds
		 * have their ids, the others may be submitted */
		d->slurm_seen = 1;
		d->origin_redo = 1;
	}
	poll_free(pt);
}

static void import_run(struct hb_task *ht);
static void import_done(struct hb_task *ht);
static int import_add(struct poll_task *pt, const struct hb_slurm_change *ch);

static void poll_done(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;
	struct hb_daemon *d = pt->d;
	struct hb_err err = { 0 };
	int unknown;

	if (pt->rc)
		hb_log(HB_LOG_WARN, "Slurm poll: %s", pt->err.msg);
	for (size_t i = 0; !pt->rc && i < pt->n; i++) {
		if ((pt->rc = reconcile_one(d, &pt->v[i], &unknown, &err))) {
			hb_log(HB_LOG_ERROR, "reconciling %s: %s", pt->v[i].id,
			       err.msg);
			hbd_batch_abort(d, &err);
			/* what the batch held is reported again */
			d->poll_rescan = 1;
			pt->rc = HB_ESTORE;
			break;
		}
		if (unknown && pt->v[i].snap &&
		    (pt->rc = import_add(pt, &pt->v[i])))
			hb_log(HB_LOG_ERROR, "Slurm poll: out of memory");
	}
	if (pt->rc || !pt->nimp) {
		poll_end(pt);
		return;
	}
	/* the scripts are read on a worker; the poll ends after */
	pt->t.run = import_run;
	pt->t.done = import_done;
	if (hb_pool_submit(d->pool, &pt->t)) {
		pt->rc = HB_ESTATE; /* stopping: the next start does it */
		poll_end(pt);
	}
}

/* ------------------------------------------------------------------ */
/* Decisions made in slurmctld, rebuilt from Slurm's job record        */
/* ------------------------------------------------------------------ */

/*
 * The job_submit plugin decides inside slurmctld under an id the daemon
 * leased to it, tags the job ("hpcbridge:<id> target=<t> snap=<n>
 * cost=<micro-units>") and
 * tells the daemon by a notice that may be lost (the daemon was down,
 * its socket full, slurmctld died first).  Slurm's job record is the
 * decision's durable copy: a poll that reports a job tagged with a snap
 * whose id the store lacks rebuilds the notice from it and records it
 * (hbd_plugin_decided(), as a notice would), then binds the Slurm job as
 * for any known job.  A burst job's decide request is in its proxy's
 * batch script (hb_rules_proxy_request()), read on a worker, every such
 * job of one poll in one task.  One whose script lacks it (or where it
 * does not decode) is recorded from what Slurm says and failed: it
 * cannot run remotely, and its shadow ends the proxy with the reason.
 * Only Slurm's table, read as root, brings a job here: nothing a user
 * sends creates one.
 */

int hbd_maybe_leased(const struct hb_daemon *d, const char *id)
{
	int64_t seq = hb_store_id_seq(id);

	if (seq <= 0)
		return 0;
	/* the sequence never goes back: every id leased before, in this
	 * life of the daemon or an earlier one, is at most this */
	if (d->feed.lease_hi > 0)
		return seq <= d->feed.lease_hi;
	/* just started, no lease yet: the store knows its sequence */
	return hbd_publishing(d);
}

/* Log about the Slurm job of ch, naming both ids. */
static void log_change(enum hb_log_level level,
		       const struct hb_slurm_change *ch, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void log_change(enum hb_log_level level,
		       const struct hb_slurm_change *ch, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hb_vlogf(level,
		 (struct hb_log_field[]){
			 HB_LOG_STR("job", ch->id),
			 HB_LOG_STR("target", ch->target),
			 HB_LOG_INT("slurm_job_id", ch->slurm_job_id) },
		 3, fmt, ap);
	va_end(ap);
}

/* Count ch among the poll's decisions to rebuild, if it may be one. */
static int import_add(struct poll_task *pt, const struct hb_slurm_change *ch)
{
	struct import *v;

	if (!hbd_maybe_leased(pt->d, ch->id)) {
		log_change(HB_LOG_WARN, ch,
			   "Slurm job tagged with an id never leased: ignored");
		return 0;
	}
	if (!(v = realloc(pt->imp, (pt->nimp + 1) * sizeof(*v))))
		return HB_ENOMEM;
	pt->imp = v;
	memset(&v[pt->nimp], 0, sizeof(*v));
	v[pt->nimp++].ch = *ch;
	return 0;
}

/* Proxies' scripts are small (a shell line and the request in base64). */
#define PROXY_SCRIPT_MAX (2 * HB_PLACE_REQUEST_MAX)

/* On a worker: the decide request in im's proxy's script, or why not. */
static void import_request(const struct hb_slurm_side_ops *be,
			   struct import *im)
{
	struct hb_buf script, req;
	struct hb_err e = { 0 };
	int rc;

	hb_buf_init(&script, PROXY_SCRIPT_MAX);
	hb_buf_init(&req, HB_PLACE_REQUEST_MAX);
	rc = be->slurm_batch_script
		     ? be->slurm_batch_script(be->ctx, im->ch.slurm_job_id,
					      &script, &e)
		     : hb_err_set(&e, HB_EUNSUP, NULL, 0,
				  "the daemon cannot read Slurm's scripts");
	/* a Slurm that cannot answer now is asked again at the next poll */
	im->again = rc == HB_EUNAVAIL || rc == HB_ETIMEDOUT ||
		    rc == HB_ESLURM || rc == HB_ENOMEM;
	if (rc) {
		snprintf(im->why, sizeof(im->why),
			 "its proxy's script could not be read: %.150s", e.msg);
	} else if ((rc = hb_rules_proxy_request(script.data, script.len,
						&req))) {
		snprintf(im->why, sizeof(im->why), "%s",
			 rc == HB_ENOENT
				 ? "its proxy's script carries no decide request"
			 : rc == HB_EINVAL
				 ? "the decide request in its proxy's script "
				   "does not decode"
				 : "the decide request in its proxy's script is "
				   "too large");
		im->again = rc == HB_ENOMEM;
	} else if (!(im->request = hb_buf_steal(&req))) {
		snprintf(im->why, sizeof(im->why), "out of memory");
		im->again = 1;
	}
	hb_buf_free(&script);
	hb_buf_free(&req);
}

static void import_run(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;

	for (size_t i = 0; i < pt->nimp; i++)
		if (!strcmp(pt->imp[i].ch.target, "kubernetes"))
			import_request(&pt->be, &pt->imp[i]);
}

/* The request a decision is rebuilt with when its own is not there: what
 * Slurm's record of the job says.  NULL when out of memory. */
static cJSON *request_from_slurm(const struct hb_slurm_change *ch)
{
	cJSON *r = cJSON_CreateObject();

	if (!r || !cJSON_AddNumberToObject(r, "uid", (double)ch->uid) ||
	    (ch->account && ch->account[0] &&
	     !cJSON_AddStringToObject(r, "account", ch->account)) ||
	    (ch->partition[0] &&
	     !cJSON_AddStringToObject(r, "partition", ch->partition)) ||
	    (ch->name && ch->name[0] &&
	     !cJSON_AddStringToObject(r, "slurm_job_name", ch->name)) ||
	    (ch->time_limit_min >= 0 &&
	     !cJSON_AddNumberToObject(r, "time_limit_min",
				      (double)ch->time_limit_min))) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* The notice the plugin sent, or would have, for im.  NULL when out of
 * memory; *failed: a burst job that cannot run (im->why says why). */
static cJSON *import_notice(struct import *im, int *failed)
{
	cJSON *n = cJSON_CreateObject();
	cJSON *req = im->request ? cJSON_Parse(im->request) : NULL;
	char reason[256], doc[160];

	*failed = 0;
	if (im->request && !cJSON_IsObject(req)) {
		snprintf(im->why, sizeof(im->why), "%s",
			 "the decide request in its proxy's script does not "
			 "parse");
		cJSON_Delete(req);
		req = NULL;
	}
	if (!req && !strcmp(im->ch.target, "kubernetes"))
		*failed = 1;
	if (!req)
		req = request_from_slurm(&im->ch);
	snprintf(reason, sizeof(reason),
		 *failed ? "decided in slurmctld; recovered from Slurm, but %.190s"
			 : "decided in slurmctld; recovered from Slurm%s",
		 *failed ? im->why : "");
	/* the estimate the plugin charged (the tag's cost=): it counts
	 * against the account's budget as the notice's would have, read
	 * where every decision's is (its document's alternative for the
	 * side chosen) */
	if (im->ch.cost_micro > 0 && strcmp(im->ch.target, "rejected")) {
		int64_t c = im->ch.cost_micro < INT64_MAX / 4
				    ? im->ch.cost_micro
				    : INT64_MAX / 4;

		snprintf(doc, sizeof(doc),
			 "{\"recovered\":true,\"alternatives\":[{\"side\":"
			 "\"%s\",\"cost_micro\":%" PRId64 "}]}",
			 im->ch.target, c);
		if (n && (!cJSON_AddNumberToObject(n, "cost_micro", (double)c) ||
			  !cJSON_AddStringToObject(n, "doc", doc))) {
			cJSON_Delete(n);
			n = NULL;
		}
	}
	/* request last: n owns it only once that succeeded */
	if (n && req && cJSON_AddStringToObject(n, "id", im->ch.id) &&
	    cJSON_AddStringToObject(n, "target", im->ch.target) &&
	    cJSON_AddNumberToObject(n, "snapshot", (double)im->ch.snap) &&
	    cJSON_AddStringToObject(n, "reason", reason) &&
	    cJSON_AddItemToObject(n, "request", req))
		return n;
	cJSON_Delete(req);
	cJSON_Delete(n);
	return NULL;
}

/* A burst job rebuilt without its request ends failed here: its shadow
 * hears so and ends the proxy with the reason.  So does one whose proxy
 * ended before the decision was recorded (cancelled, if it was): nothing
 * ran remotely, for no shadow could start it. */
static int import_fail(struct hb_daemon *d, const struct import *im,
		       struct hb_err *err)
{
	cJSON *detail = cJSON_CreateObject();
	enum hb_job_state to = im->ch.state == HB_JOB_CANCELLED
				       ? HB_JOB_CANCELLED
				       : HB_JOB_FAILED;
	char reason[256];
	int rc;

	snprintf(reason, sizeof(reason),
		 "cannot run on Kubernetes: %.150s (decided in slurmctld, "
		 "recovered from Slurm job %lld)",
		 im->why, (long long)im->ch.slurm_job_id);
	if (!detail || !cJSON_AddStringToObject(detail, "reason", reason))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	else if (!(rc = hbd_txn(d, err)) &&
		 !(rc = hb_store_job_set_state(d->st, im->ch.id, to, -1, reason,
					       err)))
		rc = hbd_audit(d, 0, "hpcbridged", "reconciler",
			       hb_job_state_name(to), im->ch.id, detail, err);
	cJSON_Delete(detail);
	return rc;
}

/* Whether text reads as a decide request (hb_place_request_read()). */
static int request_reads(const char *text)
{
	struct hb_place_request q;
	struct hb_err e = { 0 };
	cJSON *req = cJSON_Parse(text);
	int ok = req && !hb_place_request_read(req, "-", &q, &e);

	cJSON_Delete(req);
	return ok;
}

/* On the loop: record one rebuilt decision and bind its Slurm job.  A
 * store error is returned (the caller aborts the batch); one the
 * decision itself has (an id never leased) is logged and skipped. */
static int import_one(struct hb_daemon *d, struct import *im,
		      struct hb_err *err)
{
	cJSON *n;
	int failed, unknown, rc;

	if (im->again) {
		log_change(HB_LOG_WARN, &im->ch,
			   "decision not recovered yet: %s", im->why);
		d->poll_rescan = 1;
		return 0;
	}
	if (!(n = import_notice(im, &failed)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	rc = hbd_plugin_decided(d, n, "reconciler", 0, err);
	cJSON_Delete(n);
	if (rc == HB_EINVAL && im->request && !request_reads(im->request)) {
		/* a burst job whose request does not read: recorded from what
		 * Slurm says, and failed, so that its shadow ends the proxy
		 * instead of waiting for a record that never comes */
		snprintf(im->why, sizeof(im->why),
			 "the decide request in its proxy's script does not "
			 "read: %.120s",
			 err->msg);
		memset(err, 0, sizeof(*err));
		free(im->request);
		im->request = NULL;
		if (!(n = import_notice(im, &failed)))
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		rc = hbd_plugin_decided(d, n, "reconciler", 0, err);
		cJSON_Delete(n);
	}
	if (rc == HB_EEXIST) {
		memset(err, 0, sizeof(*err));
		rc = failed = 0; /* its notice came first */
	} else if (rc == HB_EINVAL) {
		log_change(HB_LOG_ERROR, &im->ch,
			   "decision made in slurmctld not recovered: %s",
			   err->msg);
		memset(err, 0, sizeof(*err));
		return 0;
	}
	if (!rc && !failed && !strcmp(im->ch.target, "kubernetes") &&
	    hb_store_state_terminal(im->ch.state)) {
		failed = 1;
		snprintf(im->why, sizeof(im->why),
			 "its proxy ended before the decision was recorded");
	}
	if (rc || (failed && (rc = import_fail(d, im, err))))
		return rc;
	if (failed)
		log_change(HB_LOG_ERROR, &im->ch,
			   "burst job recovered from Slurm job %lld cannot "
			   "run: %s",
			   (long long)im->ch.slurm_job_id, im->why);
	else
		log_change(HB_LOG_INFO, &im->ch,
			   "decision made in slurmctld recovered from Slurm");
	/* bound now: the job may never change in Slurm again */
	return reconcile_one(d, &im->ch, &unknown, err);
}

static void import_done(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;
	struct hb_err err = { 0 };

	for (size_t i = 0; i < pt->nimp; i++)
		if ((pt->rc = import_one(pt->d, &pt->imp[i], &err))) {
			hb_log(HB_LOG_ERROR, "recovering %s: %s",
			       pt->imp[i].ch.id, err.msg);
			hbd_batch_abort(pt->d, &err);
			/* the aborted ones are reported again */
			pt->d->poll_rescan = 1;
			break;
		}
	poll_end(pt);
}

/*
 * Orphans (HB_DAEMON_ORPHAN_MS): jobs still pending and unbound that long
 * after they were decided, though a poll that began since then reported
 * every tagged job, never reached Slurm.  They end "lost", each with an
 * audit event.  Looked for once a minute.
 */
struct orphans {
	int64_t before_ms; /* decided before this */
	char (*ids)[32];
	size_t n, cap;
};

static int orphan_cb(const struct hb_job_row *j, void *arg)
{
	struct orphans *o = arg;

	if (j->slurm_job_id >= 0 || j->created_ms >= o->before_ms ||
	    (j->entry != HB_ENTRY_SLURM && j->entry != HB_ENTRY_CLI))
		return 0;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		char(*v)[32] = realloc(o->ids, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		o->ids = v;
		o->cap = cap;
	}
	snprintf(o->ids[o->n++], sizeof(o->ids[0]), "%s", j->id);
	return 0;
}

void hbd_expire_orphans(struct hb_daemon *d, int64_t now)
{
	int64_t grace = d->opts.orphan_ms > 0 ? d->opts.orphan_ms
					      : HB_DAEMON_ORPHAN_MS;
	struct orphans o = { .before_ms = d->poll_ok_ms - grace };
	struct hb_err err = { 0 };
	char reason[160];
	int rc;

	if (!d->be.slurm_poll || d->poll_ok_ms <= 0 || d->stopping ||
	    now - d->last_orphan_scan < (grace < 60000 ? grace / 2 : 60000))
		return;
	d->last_orphan_scan = now;
	rc = hb_store_job_list(d->st, -1, HB_JOB_BIT(HB_JOB_PENDING), 0,
			       orphan_cb, &o, &err);
	snprintf(reason, sizeof(reason),
		 "Slurm never queued the job: no job tagged with it %llds "
		 "after the decision",
		 (long long)(grace / 1000));
	for (size_t i = 0; !rc && i < o.n; i++) {
		cJSON *detail = cJSON_CreateObject();

		if (!detail)
			rc = hb_err_set(&err, HB_ENOMEM, NULL, 0,
					"out of memory");
		else if (!(rc = hbd_txn(d, &err)) &&
			 !(rc = hb_store_job_set_state(d->st, o.ids[i],
						       HB_JOB_LOST, -1, reason,
						       &err))) {
			cJSON_AddStringToObject(
				detail, "from",
				hb_job_state_name(HB_JOB_PENDING));
			cJSON_AddStringToObject(detail, "to",
						hb_job_state_name(HB_JOB_LOST));
			cJSON_AddStringToObject(detail, "reason", reason);
			rc = hbd_audit(d, 0, "hpcbridged", "daemon", "lost",
				       o.ids[i], detail, &err);
		}
		cJSON_Delete(detail);
		if (!rc)
			hb_logf(HB_LOG_WARN,
				(struct hb_log_field[]){
					HB_LOG_STR("job", o.ids[i]) },
				1, "lost: %s", reason);
	}
	if (rc) {
		hb_log(HB_LOG_ERROR, "orphaned jobs: %s", err.msg);
		hbd_batch_abort(d, &err);
	}
	free(o.ids);
}

void hbd_poll_slurm(struct hb_daemon *d, int64_t now)
{
	struct poll_task *pt;

	hbd_watch_preempted(d, now);
	if (!d->be.slurm_poll || d->polling || d->stopping || !d->pool ||
	    now - d->last_poll < SLURM_POLL_MS)
		return;
	d->last_poll = now;
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return;
	pt->t.run = poll_run;
	pt->t.done = poll_done;
	pt->d = d;
	pt->be = d->be;
	hb_arena_init(&pt->mem, 0);
	pt->rescan = d->poll_rescan;
	d->poll_rescan = 0;
	d->polling = 1;
	if (hb_pool_submit(d->pool, &pt->t)) {
		d->polling = 0;
		d->poll_rescan = pt->rescan;
		poll_free(pt);
	}
}

/* How the decision that places a preempted job on Slurm begins. */
#define REPLACED_INPUTS "{\"replaced\":"

int hbd_replaced(struct hb_daemon *d, const struct hb_job_row *j)
{
	struct hb_decision_row dr = { 0 };
	int yes;

	if (j->target != HB_TARGET_SLURM ||
	    hb_store_decision_get(d->st, j->id, &dr, NULL))
		return 0;
	/* preempt_record()'s inputs, and no other decision's */
	yes = dr.inputs && !strncmp(dr.inputs, REPLACED_INPUTS,
				    sizeof(REPLACED_INPUTS) - 1);
	hb_decision_row_free(&dr);
	return yes;
}

/* ------------------------------------------------------------------ */
/* Preempted burst jobs: the proxy follows its MPIJob's admission      */
/* ------------------------------------------------------------------ */

/*
 * Kueue preempts an admitted MPIJob by suspending it again; the remote
 * backend reports that as HB_REMOTE_SUSPENDED.  Every PREEMPT_SCAN_MS a
 * worker reads the phase of each burst job that runs or is suspended and
 * has a proxy, and makes the proxy follow: suspended in Slurm while the
 * MPIJob is (its clock stops, squeue shows ST=S), resumed when Kueue
 * admits it again or it ends.  The daemon does this, not the shadow: a
 * suspended proxy's shadow is stopped with it.
 *
 * A job suspended kubernetes.preempted_replace_after seconds (counted
 * from the store's record of the suspension) is placed on Slurm instead:
 * the worker submits its script, environment and directory as its user
 * to its own partition (tagged target=slurm, with HPCBRIDGE_JOB_ID so the
 * plugin lets it through), deletes the MPIJob, re-tags the proxy so the
 * reconciler no longer follows it, and resumes the proxy, whose shadow
 * then hears "replaced" and ends.  The loop records the new decision
 * (target slurm), the new Slurm job id and the state queued; from then
 * on the reconciler follows the new job.  One scan at a time, and a job
 * leaves the scan once its target is slurm: it is submitted once.  (A
 * daemon that dies between the submission and the record would submit
 * it again after a restart: the window is one loop iteration.)
 */
#define PREEMPT_SCAN_MS 1000

enum pact { PA_NONE, PA_SUSPEND, PA_RESUME, PA_REPLACE };

struct pjob {
	char id[32];
	int64_t slurm_id, uid;
	enum hb_job_state state;
	int64_t since_ms; /* suspended: when it was recorded */
	char *jobspec, *partition, *name, *user;
	/* found on the worker */
	struct hb_remote_status st;
	enum pact act;
	int64_t new_id; /* PA_REPLACE */
	struct hbd_ckpt *ckpt; /* PA_REPLACE: its checkpoint brought back */
	int rc;
	struct hb_err err;
};

struct preempt_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_slurm_side_ops be;
	struct hb_remote *remote;
	int64_t replace_ms; /* 0: never */
	/* the checkpoints: settings, copied: a reload may come meanwhile */
	struct hb_config ck;
	struct pjob *v;
	size_t n, cap;
};

static void preempt_free(struct preempt_task *pt)
{
	free((char *)pt->ck.k8s.ckpt_url);
	free((char *)pt->ck.k8s.ckpt_endpoint);
	free((char *)pt->ck.k8s.ckpt_region);
	free((char *)pt->ck.k8s.ckpt_default_dir);
	for (size_t i = 0; i < pt->n; i++) {
		free(pt->v[i].ckpt);
		free(pt->v[i].jobspec);
		free(pt->v[i].partition);
		free(pt->v[i].name);
		free(pt->v[i].user);
	}
	free(pt->v);
	free(pt);
}

static int preempt_collect(const struct hb_job_row *j, void *arg)
{
	struct preempt_task *pt = arg;
	struct pjob *p;

	if (j->target != HB_TARGET_KUBERNETES || j->slurm_job_id <= 0)
		return 0;
	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 16;
		struct pjob *v = realloc(pt->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		pt->v = v;
		pt->cap = cap;
	}
	p = &pt->v[pt->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", j->id);
	p->slurm_id = j->slurm_job_id;
	p->uid = j->uid;
	p->state = j->state;
	p->since_ms = j->updated_ms;
	if (j->state != HB_JOB_SUSPENDED || !pt->replace_ms)
		return 0;
	p->jobspec = xstrdup(j->jobspec);
	p->partition = xstrdup(j->partition);
	p->name = xstrdup(j->name);
	p->user = xstrdup(j->user);
	if ((j->jobspec && !p->jobspec) || (j->partition && !p->partition) ||
	    (j->name && !p->name) || (j->user && !p->user))
		return HB_ENOMEM;
	return 0;
}

/* The strings of array a (NULL-terminated, borrowed from a), or NULL
 * when out of memory. */
static const char **strings_of(const cJSON *a)
{
	const char **v = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*v));
	const cJSON *s;
	size_t n = 0;

	if (v)
		cJSON_ArrayForEach (s, a)
			if (cJSON_IsString(s))
				v[n++] = s->valuestring;
	return v;
}

/* On a worker: submit p's job to Slurm as its user, from what it was
 * submitted with; 0 with p->new_id, or an error in p->err. */
static int replace_submit(struct preempt_task *pt, struct pjob *p)
{
	struct hb_submit_req r = { 0 };
	cJSON *doc = p->jobspec ? cJSON_Parse(p->jobspec) : NULL;
	const char *cwd = hb_doc_str(doc, "cwd");
	const char **env = strings_of(hb_doc_get(doc, "env"));
	const char **argv = strings_of(hb_doc_get(doc, "argv"));
	struct passwd pw, *res = NULL;
	char buf[4096], tag[64];
	int rc;

	r.script = hb_doc_str(doc, "script");
	if (!r.script || p->uid < 0 || !pt->be.slurm_submit) {
		rc = hb_err_set(&p->err, HB_ESTATE, NULL, 0,
				"the job's script or user was not kept");
		goto out;
	}
	if (!env || !argv) {
		rc = hb_err_set(&p->err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	snprintf(tag, sizeof(tag), "hpcbridge:%s target=slurm", p->id);
	r.id = p->id;
	r.name = p->name;
	r.cwd = cwd && cwd[0] == '/' ? cwd : NULL;
	r.user = p->user;
	r.uid = (uint32_t)p->uid;
	r.gid = getpwuid_r((uid_t)p->uid, &pw, buf, sizeof(buf), &res) == 0 &&
				res
			? pw.pw_gid
			: (uint32_t)p->uid;
	r.argv = argv;
	r.env = env;
	r.admin_comment = tag;
	r.partition = p->partition;
	/* as Slurm read it at the decision: the command line's options too */
	r.jobspec = hb_doc_get(doc, "jobspec");
	if (!cJSON_IsObject(r.jobspec))
		r.jobspec = NULL;
	rc = pt->be.slurm_submit(pt->be.ctx, &r, &p->new_id, &p->err);
out:
	free(env);
	free(argv);
	cJSON_Delete(doc);
	return rc;
}

/*
 * On a worker, before p is placed on Slurm: the checkpoint its pods
 * pushed when Kueue stopped them comes back into its directory, so that
 * it resumes there from where it was.  Until that succeeds the job is
 * not placed again (it stays suspended; the next scan tries again):
 * started from the directory's older state, it would redo the work and
 * leave the older state as the newest checkpoint.
 */
static int ckpt_back(struct preempt_task *pt, struct pjob *p, gid_t gid)
{
	struct hb_jobspec spec;
	int rc;

	if (!pt->ck.k8s.ckpt_url)
		return 0;
	if (!p->ckpt && !(p->ckpt = calloc(1, sizeof(*p->ckpt))))
		return hb_err_set(&p->err, HB_ENOMEM, NULL, 0,
				  "out of memory");
	hb_jobspec_init(&spec, p->id);
	rc = hbd_job_spec(p->id, p->jobspec, &spec, &p->err);
	if (!rc && (rc = hbd_ckpt_pull(&pt->ck, p->id, (uid_t)p->uid, gid,
				       &spec, p->ckpt, &p->err)))
		hb_err_set(&p->err, rc, NULL, 0,
			   "not placed on Slurm yet: its checkpoint did not "
			   "come back: %s",
			   p->ckpt->why);
	hb_jobspec_free(&spec);
	return rc;
}

/* On a worker: p placed on Slurm instead (see above).  Past the
 * submission, what fails is logged: the job runs on Slurm all the same. */
static void replace(struct preempt_task *pt, struct pjob *p)
{
	struct hb_err e = { 0 };
	struct passwd pw, *res = NULL;
	char admin[96], note[128], buf[4096];
	gid_t gid = getpwuid_r((uid_t)p->uid, &pw, buf, sizeof(buf), &res) ==
					0 &&
				res
			? pw.pw_gid
			: (gid_t)p->uid;

	if (p->uid < 0 || (p->rc = ckpt_back(pt, p, gid)) ||
	    (p->rc = replace_submit(pt, p)))
		return;
	p->act = PA_REPLACE;
	if ((p->rc = hb_remote_cancel(pt->remote, p->id, &e)) &&
	    p->rc != HB_ENOENT)
		hb_log(HB_LOG_WARN, "%s: deleting the preempted MPIJob: %s",
		       p->id, e.msg);
	snprintf(admin, sizeof(admin),
		 "hpcbridge-replaced:%s slurm_job_id=%lld", p->id,
		 (long long)p->new_id);
	snprintf(note, sizeof(note), "re-placed on Slurm as job %lld",
		 (long long)p->new_id);
	memset(&e, 0, sizeof(e));
	if (pt->be.slurm_retag &&
	    pt->be.slurm_retag(pt->be.ctx, p->slurm_id, admin, note, &e))
		hb_log(HB_LOG_WARN, "%s: re-tagging proxy %lld: %s", p->id,
		       (long long)p->slurm_id, e.msg);
	memset(&e, 0, sizeof(e));
	if (pt->be.slurm_suspend(pt->be.ctx, p->slurm_id, 1, &e))
		hb_log(HB_LOG_WARN, "%s: resuming proxy %lld: %s", p->id,
		       (long long)p->slurm_id, e.msg);
	p->rc = 0;
}

static void preempt_run(struct hb_task *ht)
{
	struct preempt_task *pt = (struct preempt_task *)ht;
	int64_t now = hb_clock_wall_ms();

	for (size_t i = 0; i < pt->n; i++) {
		struct pjob *p = &pt->v[i];
		enum hb_remote_phase ph;
		int resume;

		if (hb_remote_status(pt->remote, p->id, &p->st, NULL))
			continue; /* an array's tasks, or not started yet */
		ph = p->st.phase;
		if (p->state == HB_JOB_RUNNING && ph == HB_REMOTE_SUSPENDED)
			resume = 0;
		else if (p->state == HB_JOB_SUSPENDED &&
			 ph != HB_REMOTE_SUSPENDED)
			resume = 1; /* admitted again, or ended */
		else if (p->state == HB_JOB_SUSPENDED && pt->replace_ms &&
			 now - p->since_ms >= pt->replace_ms) {
			replace(pt, p);
			continue;
		} else
			continue;
		p->rc = pt->be.slurm_suspend(pt->be.ctx, p->slurm_id, resume,
					     &p->err);
		if (!p->rc)
			p->act = resume ? PA_RESUME : PA_SUSPEND;
	}
}

/* On the loop: record what the worker did to p. */
static int preempt_record(struct hb_daemon *d, const struct pjob *p,
			  int64_t replace_ms, struct hb_err *err)
{
	static const char *const action[] = { [PA_SUSPEND] = "preempted",
					      [PA_RESUME] = "resumed",
					      [PA_REPLACE] = "replaced" };
	enum hb_job_state to = p->act == PA_SUSPEND  ? HB_JOB_SUSPENDED
			       : p->act == PA_RESUME ? HB_JOB_RUNNING
						     : HB_JOB_QUEUED;
	struct hb_job_row j = { 0 };
	cJSON *detail = cJSON_CreateObject();
	char why[320], inputs[160];
	int rc;

	if (!detail)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if ((rc = hb_store_job_get(d->st, p->id, &j, err)))
		goto out;
	/* the shadow may have recorded the end meanwhile */
	if (!hb_store_state_allowed(j.state, to) || j.state == to)
		goto out;
	if (p->act == PA_REPLACE)
		snprintf(why, sizeof(why),
			 "preempted on Kubernetes for %llds: placed on Slurm "
			 "as job %lld",
			 (long long)(replace_ms / 1000), (long long)p->new_id);
	else
		snprintf(why, sizeof(why), "%s",
			 p->act == PA_SUSPEND ? p->st.message
					      : "admitted again");
	cJSON_AddNumberToObject(detail, "slurm_job_id", (double)p->slurm_id);
	cJSON_AddStringToObject(detail, "from", hb_job_state_name(j.state));
	cJSON_AddStringToObject(detail, "to", hb_job_state_name(to));
	cJSON_AddStringToObject(detail, "reason", why);
	if (p->act == PA_REPLACE) {
		cJSON_AddNumberToObject(detail, "new_slurm_job_id",
					(double)p->new_id);
		hbd_add_str_or_null(detail, "partition", j.partition);
		snprintf(inputs, sizeof(inputs),
			 REPLACED_INPUTS "{\"after_s\":%lld,\"proxy\":%lld}}",
			 (long long)(replace_ms / 1000),
			 (long long)p->slurm_id);
	}
	if ((rc = hbd_txn(d, err)) ||
	    (p->act == PA_REPLACE &&
	     ((rc = hb_store_decision_add(d->st, j.id, HB_TARGET_SLURM, inputs,
					  why, NULL, err)) ||
	      (rc = hb_store_job_set_slurm(d->st, j.id, p->new_id, err)))) ||
	    (rc = hb_store_job_set_state(d->st, j.id, to, -1, why, err)) ||
	    (rc = hbd_audit(d, 0, "hpcbridged", "daemon", action[p->act],
			    j.id, detail, err)))
		goto out;
	hb_logf(p->act == PA_RESUME ? HB_LOG_INFO : HB_LOG_WARN,
		(struct hb_log_field[]){ HB_LOG_STR("job", j.id),
					 HB_LOG_INT("slurm_job_id",
						    p->slurm_id) },
		2, "%s: %s", action[p->act], why);
out:
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

static void preempt_done(struct hb_task *ht)
{
	struct preempt_task *pt = (struct preempt_task *)ht;
	struct hb_daemon *d = pt->d;
	struct hb_err err = { 0 };
	unsigned dropped;

	d->preempting = 0;
	for (size_t i = 0; i < pt->n; i++) {
		const struct pjob *p = &pt->v[i];

		if (p->rc && hbd_rate_ok(&d->rl_preempt, &dropped))
			hb_log(HB_LOG_WARN, "%s: following its preemption: %s",
			       p->id, p->err.msg);
		if (p->act == PA_NONE)
			continue;
		if (preempt_record(d, p, pt->replace_ms, &err) ||
		    (p->ckpt &&
		     hbd_ckpt_audit(d, p->id, p->ckpt, "kubernetes", &err))) {
			hb_log(HB_LOG_ERROR, "recording %s: %s", p->id,
			       err.msg);
			hbd_batch_abort(d, &err);
			break;
		}
	}
	preempt_free(pt);
}

void hbd_watch_preempted(struct hb_daemon *d, int64_t now)
{
	struct preempt_task *pt;
	struct hb_err err = { 0 };

	if (!d->remote || !d->be.slurm_suspend || d->preempting ||
	    d->stopping || !d->pool || now - d->last_preempt < PREEMPT_SCAN_MS)
		return;
	d->last_preempt = now;
	if (!(pt = calloc(1, sizeof(*pt))))
		return;
	pt->replace_ms = (int64_t)d->cfg.remote_preempted_replace_s * 1000;
	if (pt->replace_ms && d->cfg.k8s.ckpt_url &&
	    (!(pt->ck.k8s.ckpt_url = xstrdup(d->cfg.k8s.ckpt_url)) ||
	     (d->cfg.k8s.ckpt_endpoint &&
	      !(pt->ck.k8s.ckpt_endpoint = xstrdup(d->cfg.k8s.ckpt_endpoint))) ||
	     (d->cfg.k8s.ckpt_region &&
	      !(pt->ck.k8s.ckpt_region = xstrdup(d->cfg.k8s.ckpt_region))) ||
	     (d->cfg.k8s.ckpt_default_dir &&
	      !(pt->ck.k8s.ckpt_default_dir =
			xstrdup(d->cfg.k8s.ckpt_default_dir))))) {
		preempt_free(pt);
		return;
	}
	pt->ck.k8s.ckpt_keep = d->cfg.k8s.ckpt_keep;
	if (hb_store_job_list(d->st, -1,
			      HB_JOB_BIT(HB_JOB_RUNNING) |
				      HB_JOB_BIT(HB_JOB_SUSPENDED),
			      0, preempt_collect, pt, &err) ||
	    !pt->n) {
		preempt_free(pt);
		return;
	}
	pt->t.run = preempt_run;
	pt->t.done = preempt_done;
	pt->d = d;
	pt->be = d->be;
	pt->remote = d->remote;
	d->preempting = 1;
	if (hb_pool_submit(d->pool, &pt->t)) {
		d->preempting = 0;
		preempt_free(pt);
	}
}
