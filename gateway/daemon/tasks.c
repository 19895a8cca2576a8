/*
 * tasks.c - the worker tasks the requests and the managed MPIJobs make
 * (a Slurm submit or cancel, a twin MPIJob's creation or deletion, a
 * remote job's work, a user name): made, launched on the pool, run there,
 * and completed on the loop, where the result is recorded in the batch
 * and the reply staged.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"

static void rwork_free(struct rwork *w)
{
	if (!w)
		return;
	free(w->jobspec);
	free(w->name);
	free(w->user);
	free(w->account);
	free(w->frame);
	free(w->why);
	free(w);
}

void hbd_task_free(struct task *t)
{
	if (!t)
		return;
	if (t->rw) {
		/* off the remote tasks in flight */
		if (t->rprev)
			t->rprev->rnext = t->rnext;
		else
			t->d->rtasks = t->rnext;
		if (t->rnext)
			t->rnext->rprev = t->rprev;
		t->d->nremote--;
		rwork_free(t->rw);
	}
	for (size_t i = 0; t->argv && t->argv[i]; i++)
		free((char *)t->argv[i]);
	for (size_t i = 0; t->env && t->env[i]; i++)
		free((char *)t->env[i]);
	free(t->argv);
	free(t->env);
	free(t->script);
	free(t->name);
	free(t->cwd);
	free(t->user);
	free(t->admin_comment);
	cJSON_Delete(t->twin);
	free(t);
}

/* On a worker: the task's blocking call. */
static void task_run(struct hb_task *ht)
{
	struct task *t = (struct task *)ht;

	if (t->kind == TASK_LOOKUP) {
		struct passwd pw, *res = NULL;
		char buf[4096];

		if (getpwuid_r(t->luid, &pw, buf, sizeof(buf), &res) == 0 &&
		    res) {
			t->user = strdup(res->pw_name);
			t->lgid = res->pw_gid;
		}
		return;
	}
	if (t->kind == TASK_REMOTE_START)
		t->rc = hbd_rstart_run(t);
	else if (t->kind == TASK_REMOTE_POLL)
		t->rc = hbd_rpoll_run(t);
	else if (t->kind == TASK_REMOTE_CANCEL) {
		t->rc = hb_remote_cancel(t->rw->be, t->rw->rid, &t->err);
		/* when it ran, for metering (start_ms 0: unknown) */
		if (!t->rc && hb_remote_status(t->rw->be, t->rw->rid,
					       &t->rw->st, NULL))
			memset(&t->rw->st, 0, sizeof(t->rw->st));
	}
	else if (t->kind == TASK_SUBMIT)
		t->rc = t->be.slurm_submit(t->be.ctx, &t->req, &t->slurm_job_id,
					   &t->err);
	else if (t->kind == TASK_CANCEL)
		t->rc = t->be.slurm_cancel(t->be.ctx, t->slurm_job_id, &t->err);
	else
		t->rc = hbd_twin_run(t);
	if (t->rc && !t->err.msg[0])
		hb_err_set(&t->err, t->rc, NULL, 0, "%s", hb_strerror(t->rc));
}

static void task_done(struct hb_task *ht);

/* Hand t to its pool (the remote pool for a remote job's work). */
void hbd_task_launch(struct hb_daemon *d, struct task *t)
{
	struct hb_pool *p = t->rw ? d->rpool : d->pool;

	t->be = d->be;
	if (!p || hb_pool_submit(p, &t->t)) {
		/* only after shutdown began: answer now */
		t->rc = HB_EUNAVAIL;
		hb_err_set(&t->err, HB_EUNAVAIL, NULL, 0,
			   "the daemon is stopping");
		task_done(&t->t);
	}
}

/* A task for connection c, or, with c NULL, one the daemon starts itself
 * (for a Kubernetes-origin MPIJob: actor hpcbridged, peer kubernetes). */
struct task *hbd_task_new(struct hb_daemon *d, struct conn *c,
			  enum task_kind kind, const char *id)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->t.run = task_run;
	t->t.done = task_done;
	t->kind = kind;
	t->c = c;
	t->d = d;
	snprintf(t->id, sizeof(t->id), "%s", id);
	t->actor_uid = c ? c->uid : 0;
	snprintf(t->actor_user, sizeof(t->actor_user), "%s",
		 c ? c->user : "hpcbridged");
	snprintf(t->peer, sizeof(t->peer), "%s", c ? c->peer : "kubernetes");
	return t;
}

/* The loop side of a finished Slurm submit, in the batch's transaction:
 * the job is queued with its Slurm id, or failed with Slurm's word.  *r:
 * the reply; a store error is returned. */
static int submit_done(struct hb_daemon *d, struct task *t, cJSON *detail,
		       cJSON **r, struct hb_err *err)
{
	int rc;

	if (t->rc == 0) {
		cJSON_AddNumberToObject(detail, "slurm_job_id",
					(double)t->slurm_job_id);
		rc = hb_store_job_set_slurm(d->st, t->id, t->slurm_job_id,
					    err);
		if (!rc)
			rc = hb_store_job_set_state(d->st, t->id, HB_JOB_QUEUED,
						    -1, NULL, err);
		if (rc == HB_ESTATE && !t->c) /* origin hook */
			rc = hbd_origin_late_submit(d, t, err);
		if (!rc)
			rc = hbd_audit(d, t->actor_uid, t->actor_user, t->peer,
				       "slurm-submit", t->id, detail, err);
		if (rc)
			return rc;
		*r = hb_proto_ok();
		if (*r) {
			cJSON_AddStringToObject(*r, "id", t->id);
			cJSON_AddStringToObject(
				*r, "target",
				hb_job_target_name(HB_TARGET_SLURM));
			cJSON_AddNumberToObject(*r, "slurm_job_id",
						(double)t->slurm_job_id);
		}
		hb_logf(HB_LOG_INFO,
			(struct hb_log_field[]){
				HB_LOG_STR("job", t->id),
				HB_LOG_INT("slurm_job_id", t->slurm_job_id),
				HB_LOG_STR("user", t->user) },
			3, "submitted to Slurm");
		return 0;
	}
	cJSON_AddStringToObject(detail, "error", hb_errname(t->rc) ?: "EIO");
	cJSON_AddStringToObject(detail, "message", t->err.msg);
	rc = hb_store_job_set_state(d->st, t->id, HB_JOB_FAILED, -1, t->err.msg,
				    err);
	if (!rc)
		rc = hbd_audit(d, t->actor_uid, t->actor_user, t->peer,
			       "slurm-submit-failed", t->id, detail, err);
	if (rc)
		return rc;
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){ HB_LOG_STR("job", t->id),
					 HB_LOG_STR("user", t->user) },
		2, "Slurm refused the job: %s", t->err.msg);
	*r = hb_proto_error(t->rc, t->err.msg);
	return 0;
}

/* The loop side of a finished Slurm cancel, likewise: the job is
 * cancelled (Slurm did, or no longer knows it), unless it ended
 * meanwhile. */
static int cancel_done(struct hb_daemon *d, struct task *t, cJSON *detail,
		       cJSON **r, struct hb_err *err)
{
	char why[128];
	int rc;

	if (t->rc && t->rc != HB_ENOENT) {
		*r = hb_proto_error(t->rc, t->err.msg);
		return 0;
	}
	snprintf(why, sizeof(why), "cancelled by %s",
		 t->actor_user[0] ? t->actor_user : "uid");
	cJSON_AddNumberToObject(detail, "slurm_job_id",
				(double)t->slurm_job_id);
	rc = hb_store_job_set_state(d->st, t->id, HB_JOB_CANCELLED, -1, why,
				    err);
	if (!rc)
		rc = hbd_audit(d, t->actor_uid, t->actor_user, t->peer,
			       "cancel", t->id, detail, err);
	if (rc == HB_ESTATE) {
		/* it ended meanwhile */
		*r = hb_proto_error(rc, err->msg);
		return 0;
	}
	if (rc)
		return rc;
	*r = hb_proto_ok();
	if (*r)
		cJSON_AddStringToObject(*r, "state",
					hb_job_state_name(HB_JOB_CANCELLED));
	return 0;
}

/* The loop side of a finished task: record, then reply. */
static void task_done(struct hb_task *ht)
{
	struct task *t = (struct task *)ht;
	struct conn *c = t->c;
	struct hb_daemon *d = t->d;
	struct hb_err err = { 0 };
	cJSON *detail = NULL, *r = NULL;
	int rc;

	if (t->rw) {
		hbd_remote_done(t);
		return;
	}
	if (t->kind == TASK_LOOKUP) {
		hbd_lookup_done(t);
		return;
	}
	if (c)
		c->busy = 0;
	if (!c && !t->rc && t->kind == TASK_SUBMIT) /* origin hooks */
		hbd_failpoint(d, "origin-submitted");
	if (!c && !t->rc && t->kind == TASK_TWIN_CREATE)
		hbd_failpoint(d, "origin-twin-created");
	detail = cJSON_CreateObject();
	if ((rc = hbd_txn(d, &err)))
		goto store_fail;
	if (t->kind == TASK_TWIN_CREATE || t->kind == TASK_TWIN_DELETE) {
		if ((rc = hbd_twin_done(d, t, &err)))
			goto store_fail;
		goto out;
	}
	rc = t->kind == TASK_SUBMIT ? submit_done(d, t, detail, &r, &err)
				    : cancel_done(d, t, detail, &r, &err);
	if (rc)
		goto store_fail;
	hb_origin_job_changed(d->origin, d->st, t->id); /* origin hook */
	if (c && !c->dead)
		hbd_stage_reply(d, c, r, 1, 0);
	else
		cJSON_Delete(r);
	r = NULL;
	goto out;
store_fail:
	hbd_batch_abort(d, &err);
	if (c && !c->dead)
		hbd_stage_error(d, c, HB_ESTORE,
				err.msg[0] ? err.msg : "the state store failed",
				0);
out:
	cJSON_Delete(detail);
	cJSON_Delete(r);
	hbd_task_free(t);
	if (c) /* an origin task has nobody waiting for a reply */
		hbd_conn_resume(c);
}
