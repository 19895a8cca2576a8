/*
 * reconcile.c - the reconciler: the Slurm jobs the plugin tagged, bound to
 * their gateway jobs and followed from Slurm, and the decided jobs Slurm
 * never queued (orphans), given up as lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"

/* How often the reconciler asks Slurm what changed. */
#define SLURM_POLL_MS 1000

/* ------------------------------------------------------------------ */
/* The reconciler: Slurm jobs the plugin tagged, followed from Slurm    */
/* ------------------------------------------------------------------ */

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
	int64_t began_ms; /* wall clock */
	int rc;
	struct hb_err err;
};

static int poll_collect(const struct hb_slurm_change *ch, void *arg)
{
	struct poll_task *pt = arg;

	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 64;
		struct hb_slurm_change *v = realloc(pt->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		pt->v = v;
		pt->cap = cap;
	}
	pt->v[pt->n++] = *ch;
	return 0;
}

static void poll_run(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;

	pt->began_ms = hb_clock_wall_ms();
	pt->rc = pt->be.slurm_poll(pt->be.ctx, poll_collect, pt, &pt->err);
}

/* Apply one change; a store error is returned (the batch is aborted). */
static int reconcile_one(struct hb_daemon *d, const struct hb_slurm_change *ch,
			 struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = NULL;
	int rc = hb_store_job_get(d->st, ch->id, &j, err);

	if (rc == HB_ENOENT) {
		memset(err, 0, sizeof(*err));
		return 0; /* not ours, or from another state file */
	}
	if (rc)
		return rc;
	if ((rc = hbd_txn(d, err)))
		goto out;
	if (j.slurm_job_id < 0) {
		rc = hb_store_job_set_slurm(d->st, j.id, ch->slurm_job_id, err);
		if (rc)
			goto out;
	}
	if (j.target != HB_TARGET_SLURM || hb_store_state_terminal(j.state) ||
	    j.state == ch->state || !hb_store_state_allowed(j.state, ch->state))
		goto out;
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
out:
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

static void poll_done(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;
	struct hb_daemon *d = pt->d;
	struct hb_err err = { 0 };

	d->polling = 0;
	if (pt->rc)
		hb_log(HB_LOG_WARN, "Slurm poll: %s", pt->err.msg);
	for (size_t i = 0; !pt->rc && i < pt->n; i++)
		if ((pt->rc = reconcile_one(d, &pt->v[i], &err))) {
			hb_log(HB_LOG_ERROR, "reconciling %s: %s", pt->v[i].id,
			       err.msg);
			hbd_batch_abort(d, &err);
			pt->rc = HB_ESTORE;
			break;
		}
	/* every tagged job Slurm had when the poll began is now bound */
	if (!pt->rc)
		d->poll_ok_ms = pt->began_ms;
	if (!pt->rc && !d->slurm_seen) {
		/* Slurm's whole table is bound: the origin jobs it holds
		 * have their ids, the others may be submitted */
		d->slurm_seen = 1;
		d->origin_redo = 1;
	}
	free(pt->v);
	free(pt);
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
	d->polling = 1;
	if (hb_pool_submit(d->pool, &pt->t)) {
		d->polling = 0;
		free(pt);
	}
}
