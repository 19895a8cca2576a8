/*
 * origin_jobs.c - the loop's side of Kubernetes-origin MPIJobs: placed,
 * stored and submitted (or given a twin) here; origin.c watches them,
 * keeps their index and patches their status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_int.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/log.h"
#include "hpcbridge/rules.h"

#define TWIN_TRIES 30 /* a twin create or delete, a second apart */

/* ------------------------------------------------------------------ */
/* Kubernetes-origin MPIJobs (origin.c): stored and submitted here      */
/* ------------------------------------------------------------------ */

/*
 * An MPIJob with managedBy hpcbridge.io/gateway is placed by the decider
 * like any job: on Slurm it runs as the user its hpcbridge.io/user label
 * names, once hb_origin_prepare has found that user granted to its
 * namespace (origin.namespaces, origin.min_uid: refused otherwise, the
 * reason in its status); in the cluster as a twin MPIJob without
 * managedBy.  Its events
 * reach the loop through the module's eventfd; the job is stored (origin
 * kubernetes, its namespace, name and uid, its decision) and committed
 * before its submit or twin task starts, so a restart finds it by uid and
 * never runs it twice.  Its status follows through hb_origin_job_changed()
 * (task_done, reconcile_one) or, for a twin, is copied from the twin's.
 */

/* A twin task on a worker: a transient failure (the API server away) is
 * tried again every second, up to TWIN_TRIES times. */
int hbd_twin_run(struct task *t)
{
	int rc = HB_EUNAVAIL;

	for (int i = 0; i < TWIN_TRIES; i++) {
		if (i)
			sleep(1);
		memset(&t->err, 0, sizeof(t->err));
		rc = t->kind == TASK_TWIN_CREATE
			     ? hb_origin_twin_create(t->d->origin, t->twin,
						     &t->err)
			     : hb_origin_twin_delete(t->d->origin, t->tns,
						     t->tname, &t->err);
		if (!hb_kube_retryable(rc))
			break;
	}
	return rc;
}

/* A managed MPIJob's submit ended after its MPIJob was deleted (the row
 * is cancelled already): cancel the Slurm job it got. */
int hbd_origin_late_submit(struct hb_daemon *d, const struct task *t,
			   struct hb_err *err)
{
	struct task *c = hbd_task_new(d, NULL, TASK_CANCEL, t->id);

	memset(err, 0, sizeof(*err));
	if (!c)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	snprintf(c->actor_user, sizeof(c->actor_user),
		 "kubernetes (MPIJob deleted)");
	c->slurm_job_id = t->slurm_job_id;
	hbd_task_launch(d, c);
	return 0;
}

/* A task deleting job id's twin ns/name. */
static struct task *twin_delete_task(struct hb_daemon *d, const char *id,
				     const char *ns, const char *name)
{
	struct task *t = hbd_task_new(d, NULL, TASK_TWIN_DELETE, id);

	if (t) {
		snprintf(t->tns, sizeof(t->tns), "%s", ns);
		snprintf(t->tname, sizeof(t->tname), "%s", name);
	}
	return t;
}

/* A twin task ended (in the batch's transaction).  Created or adopted:
 * the job is queued, and follows the twin's events from now on; but if
 * it was cancelled meanwhile (its MPIJob went), the twin goes too.
 * Refused: the job fails with the server's word; the API server still
 * away after the task's tries: it is tried again (a stopping daemon
 * leaves the job pending, for the next start).  Deleted: recorded. */
int hbd_twin_done(struct hb_daemon *d, struct task *t, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = cJSON_CreateObject();
	char why[sizeof(t->err.msg) + 32];
	struct task *del;
	int rc;

	if (!detail)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	cJSON_AddStringToObject(detail, "namespace", t->tns);
	cJSON_AddStringToObject(detail, "twin", t->tname);
	if (t->rc)
		cJSON_AddStringToObject(detail, "error", t->err.msg);
	if (t->kind == TASK_TWIN_DELETE) {
		if (t->rc)
			hb_log(HB_LOG_ERROR,
			       "%s: deleting twin MPIJob %s/%s: %s", t->id,
			       t->tns, t->tname, t->err.msg);
		rc = hbd_audit(d, 0, "hpcbridged", "kubernetes",
			       t->rc ? "twin-delete-failed" : "twin-delete",
			       t->id, detail, err);
		goto out;
	}
	if ((rc = hb_store_job_get(d->st, t->id, &j, err)))
		goto out;
	if (!t->rc && j.state == HB_JOB_CANCELLED) {
		/* the MPIJob was deleted while its twin was being made (a
		 * twin that ended before its adoption returned stays) */
		if (!(del = twin_delete_task(d, t->id, t->tns, t->tname))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		hbd_task_launch(d, del);
		goto out;
	}
	if (!t->rc) {
		if (j.state == HB_JOB_PENDING)
			rc = hb_store_job_set_state(d->st, t->id, HB_JOB_QUEUED,
						    -1, NULL, err);
		if (!rc)
			rc = hbd_audit(d, 0, "hpcbridged", "kubernetes",
				       "twin-create", t->id, detail, err);
		hb_log(HB_LOG_INFO, "%s: twin MPIJob %s/%s created", t->id,
		       t->tns, t->tname);
		goto out;
	}
	hb_log(HB_LOG_ERROR, "%s: twin MPIJob %s/%s: %s", t->id, t->tns,
	       t->tname, t->err.msg);
	if (hb_kube_retryable(t->rc)) {
		struct task *again;

		if (d->stopping || j.state != HB_JOB_PENDING)
			goto out;
		if (!(again = hbd_task_new(d, NULL, TASK_TWIN_CREATE, t->id))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		again->twin = t->twin;
		t->twin = NULL;
		snprintf(again->tns, sizeof(again->tns), "%s", t->tns);
		snprintf(again->tname, sizeof(again->tname), "%s", t->tname);
		hbd_task_launch(d, again);
		goto out;
	}
	snprintf(why, sizeof(why), "TwinCreateFailed: %s", t->err.msg);
	rc = hb_store_job_set_state(d->st, t->id, HB_JOB_FAILED, -1, why, err);
	if (!rc)
		rc = hbd_audit(d, 0, "hpcbridged", "kubernetes",
			       "twin-create-failed", t->id, detail, err);
	if (!rc)
		hb_origin_job_changed(d->origin, d->st, t->id);
out:
	if (rc == HB_ESTATE) { /* it ended meanwhile */
		memset(err, 0, sizeof(*err));
		rc = 0;
	}
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* The Slurm submit of a managed MPIJob (stored as job id), as its user. */
static int origin_submit_task(struct hb_daemon *d, const char *id,
			      const char *name, const struct hb_origin_job *oj,
			      struct task **tasks, struct hb_err *err)
{
	char cm[96], home_env[600], user_env[80], logn_env[80];
	struct task *t = hbd_task_new(d, NULL, TASK_SUBMIT, id);

	if (!t)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	snprintf(cm, sizeof(cm), "hpcbridge:%s target=slurm", id);
	snprintf(home_env, sizeof(home_env), "HOME=%s", oj->home);
	snprintf(user_env, sizeof(user_env), "USER=%s", oj->user);
	snprintf(logn_env, sizeof(logn_env), "LOGNAME=%s", oj->user);
	t->script = xstrdup(oj->script.data);
	t->name = xstrdup(name);
	t->cwd = xstrdup(oj->home);
	t->user = xstrdup(oj->user);
	t->admin_comment = xstrdup(cm);
	t->argv = calloc(1, sizeof(*t->argv));
	t->env = calloc(5, sizeof(*t->env));
	if (t->env) {
		t->env[0] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
		t->env[1] = xstrdup(home_env);
		t->env[2] = xstrdup(user_env);
		t->env[3] = xstrdup(logn_env);
	}
	if (!t->script || !t->name || !t->cwd || !t->user ||
	    !t->admin_comment || !t->argv || !t->env || !t->env[0] ||
	    !t->env[1] || !t->env[2] || !t->env[3]) {
		hbd_task_free(t);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	t->req.id = t->id;
	t->req.script = t->script;
	t->req.name = t->name;
	t->req.cwd = t->cwd;
	t->req.user = t->user;
	t->req.uid = oj->uid;
	t->req.gid = oj->gid;
	t->req.argv = t->argv;
	t->req.env = t->env;
	t->req.admin_comment = t->admin_comment;
	t->onext = *tasks;
	*tasks = t;
	return 0;
}

/* The creation of job id's twin (doc taken, whatever happens). */
static int origin_twin_task(struct hb_daemon *d, const char *id, cJSON *doc,
			    const char *ns, const char *name,
			    struct task **tasks, struct hb_err *err)
{
	struct task *t = hbd_task_new(d, NULL, TASK_TWIN_CREATE, id);

	if (!t) {
		cJSON_Delete(doc);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	t->twin = doc;
	snprintf(t->tns, sizeof(t->tns), "%s", ns);
	snprintf(t->tname, sizeof(t->tname), "%s", name);
	t->onext = *tasks;
	*tasks = t;
	return 0;
}

/* Where a managed MPIJob that can run goes: the placement engine decides,
 * as for every job.  *inputs gets what the decision was made from. */
static int origin_place(struct hb_daemon *d, const struct hb_origin_ev *ev,
			const struct hb_origin_job *oj,
			struct hb_place_out *dec, char **inputs,
			struct hb_err *err)
{
	struct hb_place_job job = { 0 };
	struct hb_buf b;
	struct hb_emit *e;
	int rc;

	job.user = oj->user;
	job.account = oj->account[0] ? oj->account : NULL;
	job.name = ev->name;
	job.time_limit_min = HB_RULES_NO_LIMIT;
	job.jobspec = oj->jobspec;
	job.seq = (uint64_t)hb_clock_wall_ms(); /* the pilot's sample key */
	if ((rc = hb_decider_decide(d->dc, &job, (int64_t)(job.seq / 1000),
				    dec, err)))
		return rc;
	if ((e = hbd_inputs_begin(&b, dec))) {
		hb_emit_str(e, "user", oj->user);
		hb_emit_str(e, "namespace", ev->ns);
		hb_emit_str(e, "mpijob", ev->name);
		hb_emit_str(e, "rule", dec->rule);
		hb_emit_str_or_null(e, "account", job.account);
	}
	if (!(*inputs = hbd_inputs_end(e, &b, dec)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

/* A new managed MPIJob: place it, store it with its decision, and queue
 * its Slurm submit or its twin's creation (or, when it cannot run, store
 * it failed and say why in its status). */
static int origin_submit(struct hb_daemon *d, const struct hb_origin_ev *ev,
			 struct task **tasks, struct hb_err *err)
{
	struct hb_origin_job oj;
	struct hb_place_out dec = { 0 };
	struct hb_job_row row = { 0 };
	struct hb_err why = { 0 };
	cJSON *src = NULL, *twin = NULL, *detail = cJSON_CreateObject();
	char *src_s = NULL, *inputs = NULL, tname[64] = "";
	int bad = hb_origin_prepare(ev->obj, ev->ns, &d->cfg, &oj, &why), rc;
	int target = HB_DECIDE_REJECT; /* enum hb_place_verdict */

	if (!bad && (bad = origin_place(d, ev, &oj, &dec, &inputs, &why)))
		oj.reason = bad == HB_ENOMEM ? "Rejected" : "InvalidSpec";
	if (!bad) {
		target = dec.target;
		if (target == HB_DECIDE_REJECT) {
			bad = hb_err_set(&why, HB_EPERM, NULL, 0, "%s",
					 dec.reason);
			oj.reason = "PlacementRejected";
		} else if (target == HB_DECIDE_SLURM && !d->be.slurm_submit) {
			bad = hb_err_set(&why, HB_EUNSUP, NULL, 0,
					 "this daemon has no Slurm client");
			oj.reason = "NoSlurm";
		} else if (target == HB_DECIDE_SLURM && oj.slurm_refusal[0]) {
			bad = hb_err_set(&why, HB_EINVAL, NULL, 0,
					 "origin: %s", oj.slurm_refusal);
			oj.reason = "InvalidSpec";
		} else if (target == HB_DECIDE_KUBE &&
			   !(twin = hb_origin_twin_doc(ev->obj, tname, &why))) {
			bad = why.code;
			oj.reason = "InvalidSpec";
		}
	}
	if (bad) { /* the row's reason is "Reason: message" */
		char m[sizeof(why.msg)];

		memcpy(m, why.msg, sizeof(m));
		if (snprintf(why.msg, sizeof(why.msg), "%s: %.400s",
			     oj.reason ? oj.reason : "Rejected", m) < 0)
			why.msg[0] = '\0';
		target = HB_DECIDE_REJECT;
	}
	src = cJSON_CreateObject();
	if (src && oj.fidelity) { /* the row keeps each field's fate */
		cJSON_AddItemToObject(src, "fidelity", oj.fidelity);
		oj.fidelity = NULL;
	}
	if (!src || !detail ||
	    !cJSON_AddStringToObject(src, "kind", "MPIJob") ||
	    !cJSON_AddStringToObject(src, "script",
				     bad ? "" : oj.script.data) ||
	    (twin && !cJSON_AddStringToObject(src, "twin", tname)) ||
	    !(src_s = cJSON_PrintUnformatted(src))) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	row.entry = HB_ENTRY_KUBERNETES;
	row.target = decided_target(target);
	row.state = HB_JOB_PENDING;
	row.user = oj.user[0] ? oj.user : NULL;
	row.uid = bad ? -1 : (int64_t)oj.uid;
	row.account = oj.account[0] ? oj.account : NULL;
	row.partition = bad ? NULL : hb_doc_str(oj.jobspec, "partition");
	row.name = ev->name;
	row.reason = bad ? why.msg : dec.reason;
	row.jobspec = src_s;
	row.slurm_job_id = -1;
	row.exit_code = -1;
	cJSON_AddStringToObject(detail, "namespace", ev->ns);
	cJSON_AddStringToObject(detail, "name", ev->name);
	cJSON_AddStringToObject(detail, "uid", ev->uid);
	cJSON_AddStringToObject(detail, "target",
				hb_job_target_name(row.target));
	if (twin)
		cJSON_AddStringToObject(detail, "twin", tname);
	if (dec.rule[0])
		cJSON_AddStringToObject(detail, "rule", dec.rule);
	if ((rc = hbd_txn(d, err)) ||
	    (rc = hb_store_job_add(d->st, &row, err)) ||
	    (rc = hb_store_job_set_k8s(d->st, row.id, ev->ns, ev->name,
				       ev->uid[0] ? ev->uid : NULL, err)) ||
	    (rc = hb_store_decision_add(
		     d->st, row.id, row.target, inputs,
		     dec.explanation ? dec.explanation : row.reason,
		     inputs ? hb_decider_policy_name(d->dc) : "managedBy",
		     err)) ||
	    (rc = hbd_audit(d, 0, "hpcbridged", "kubernetes", "submit", row.id,
			    detail, err)))
		goto out;
	if ((rc = hb_origin_index_add(d->origin, ev->uid, ev->ns, ev->name,
				      row.id)) ||
	    (twin && (rc = hb_origin_twin_add(d->origin, ev->ns, tname,
					      row.id)))) {
		hb_err_set(err, rc, NULL, 0, "out of memory");
		goto out;
	}
	if (bad) {
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){
				HB_LOG_STR("job", row.id),
				HB_LOG_STR("mpijob", ev->name),
				HB_LOG_STR("reason", oj.reason) },
			3, "managed MPIJob not run: %s", why.msg);
		if (!(rc = hb_store_job_set_state(d->st, row.id, HB_JOB_FAILED,
						  -1, why.msg, err)))
			hb_origin_job_changed(d->origin, d->st, row.id);
		goto out;
	}
	if (twin) {
		hb_origin_job_changed(d->origin, d->st, row.id); /* Created */
		rc = origin_twin_task(d, row.id, twin, ev->ns, tname, tasks,
				      err);
		twin = NULL;
	} else {
		rc = origin_submit_task(d, row.id, ev->name, &oj, tasks, err);
	}
	if (rc)
		goto out;
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_STR("job", row.id),
			HB_LOG_STR("mpijob", ev->name),
			HB_LOG_STR("user", oj.user),
			HB_LOG_STR("target", hb_job_target_name(row.target)) },
		4, "managed MPIJob placed: %s", dec.reason);
out:
	cJSON_Delete(twin);
	hb_origin_job_free(&oj);
	hb_place_out_free(&dec);
	cJSON_Delete(src);
	cJSON_Delete(detail);
	free(src_s);
	free(inputs);
	return rc;
}

/*
 * A managed MPIJob this process has not taken up yet, stored by an
 * earlier one (seen again by the watch's first list): a job stored but
 * never submitted is submitted now (Slurm's whole table has been
 * reconciled first, so a job Slurm got is bound, not submitted twice); a
 * job whose twin may not exist gets it created (or adopted).  Others only
 * have their status said again.
 */
static int origin_resume(struct hb_daemon *d, const struct hb_origin_ev *ev,
			 const char *id, struct task **tasks,
			 struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	struct hb_origin_job oj = { 0 };
	struct hb_err why = { 0 };
	char tname[64], reason[sizeof(why.msg) + 64];
	cJSON *twin;
	int rc = hb_store_job_get(d->st, id, &j, err);

	if (rc)
		goto out;
	if (j.state != HB_JOB_PENDING ||
	    (j.target != HB_TARGET_SLURM && j.target != HB_TARGET_KUBERNETES) ||
	    (j.target == HB_TARGET_SLURM && j.slurm_job_id >= 0)) {
		if (j.target != HB_TARGET_KUBERNETES) /* a twin's events say */
			hb_origin_job_changed(d->origin, d->st, id);
		goto out;
	}
	hb_log(HB_LOG_INFO, "%s: MPIJob %s/%s was stored but not %s: %s now",
	       id, ev->ns, ev->name,
	       j.target != HB_TARGET_SLURM ? "given its twin" : "submitted",
	       j.target != HB_TARGET_SLURM ? "creating it" : "submitting");
	if (j.target == HB_TARGET_KUBERNETES) {
		if (!(twin = hb_origin_twin_doc(ev->obj, tname, &why))) {
			rc = hb_err_set(err, why.code, NULL, 0, "%s", why.msg);
			goto out;
		}
		rc = origin_twin_task(d, id, twin, ev->ns, tname, tasks, err);
		goto out;
	}
	if (!(rc = hb_origin_prepare(ev->obj, ev->ns, &d->cfg, &oj, &why)) &&
	    oj.slurm_refusal[0]) {
		rc = hb_err_set(&why, HB_EINVAL, NULL, 0, "origin: %s",
				oj.slurm_refusal);
		oj.reason = "InvalidSpec";
	} else if (!rc) {
		rc = origin_submit_task(d, id, ev->name, &oj, tasks, err);
		goto out;
	}
	/* it no longer reads, or its user is no longer granted (the user
	 * went, the configuration changed): it fails, "Reason: message" */
	snprintf(reason, sizeof(reason), "%s: %.400s",
		 oj.reason ? oj.reason : "InvalidSpec", why.msg);
	if (!(rc = hbd_txn(d, err)) &&
	    !(rc = hb_store_job_set_state(d->st, id, HB_JOB_FAILED, -1, reason,
					  err)))
		hb_origin_job_changed(d->origin, d->st, id);
out:
	hb_origin_job_free(&oj);
	hb_job_row_free(&j);
	return rc;
}

/* A managed MPIJob was deleted: cancel its Slurm job (or, before it has
 * one, only the record), or delete its twin.  why says how it was seen. */
static int origin_cancel(struct hb_daemon *d, const char *id, const char *why,
			 struct task **tasks, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = NULL;
	char twin[64] = "";
	struct task *t;
	int rc = hb_store_job_get(d->st, id, &j, err);

	if (rc)
		goto out;
	if (j.target == HB_TARGET_KUBERNETES)
		hb_origin_row_twin(&j, twin);
	if (twin[0] && j.k8s_namespace) { /* even if it ended: it goes too */
		if (!(t = twin_delete_task(d, j.id, j.k8s_namespace, twin))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		t->onext = *tasks;
		*tasks = t;
	}
	if (hb_store_state_terminal(j.state))
		goto out;
	if (j.slurm_job_id >= 0 && d->be.slurm_cancel) {
		if (!(t = hbd_task_new(d, NULL, TASK_CANCEL, j.id))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		snprintf(t->actor_user, sizeof(t->actor_user),
			 "kubernetes (MPIJob deleted)");
		t->slurm_job_id = j.slurm_job_id;
		t->onext = *tasks;
		*tasks = t;
		goto out;
	}
	if ((detail = cJSON_CreateObject()))
		cJSON_AddStringToObject(detail, "why", why);
	if (!(rc = hbd_txn(d, err)) &&
	    !(rc = hb_store_job_set_state(d->st, j.id, HB_JOB_CANCELLED, -1,
					  why, err)))
		rc = hbd_audit(d, 0, "hpcbridged", "kubernetes", "cancel", j.id,
			       detail, err);
out:
	if (rc == HB_ENOENT || rc == HB_ESTATE) {
		memset(err, 0, sizeof(*err));
		rc = 0;
	}
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* A twin changed: the job's state follows its conditions (each move an
 * event), and its status is copied to the original.  A twin deleted by
 * someone else cancels the job. */
static int origin_twin_event(struct hb_daemon *d, const struct hb_origin_ev *ev,
			     const char *id, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = cJSON_CreateObject();
	enum hb_job_state to;
	char msg[256], why[400];
	int rc = hb_store_job_get(d->st, id, &j, err);

	if (rc || !detail || j.target != HB_TARGET_KUBERNETES ||
	    hb_store_state_terminal(j.state) || !j.k8s_name || !j.k8s_namespace)
		goto out;
	cJSON_AddStringToObject(detail, "twin", ev->name);
	if (ev->type == HB_ORIGIN_DELETED) {
		snprintf(why, sizeof(why),
			 "TwinDeleted: its twin MPIJob %s/%s was deleted",
			 ev->ns, ev->name);
		if (!(rc = hbd_txn(d, err)) &&
		    !(rc = hb_store_job_set_state(d->st, id, HB_JOB_CANCELLED,
						  -1, why, err)) &&
		    !(rc = hbd_audit(d, 0, "hpcbridged", "kubernetes",
				     "twin-deleted", id, detail, err)))
			hb_origin_job_changed(d->origin, d->st, id);
		goto out;
	}
	to = hb_origin_twin_state(ev->obj, msg, sizeof(msg));
	if (j.state != to && hb_store_state_allowed(j.state, to)) {
		cJSON_AddStringToObject(detail, "from",
					hb_job_state_name(j.state));
		cJSON_AddStringToObject(detail, "to", hb_job_state_name(to));
		if ((rc = hbd_txn(d, err)) ||
		    (rc = hb_store_job_set_state(
			     d->st, id, to, to == HB_JOB_SUCCEEDED ? 0 : -1,
			     msg[0] ? msg : NULL, err)) ||
		    (rc = hbd_audit(d, 0, "hpcbridged", "kubernetes",
				    "twin-state", id, detail, err)))
			goto out;
		if (hb_store_state_terminal(to) &&
		    (rc = hbd_meter_twin(d, &j, ev->obj, err)))
			goto out;
	}
	if (hb_doc_get(ev->obj, "status"))
		hb_origin_stage(d->origin, j.k8s_namespace, j.k8s_name,
				hb_origin_twin_status(ev->obj));
out:
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* The watch's first list: collect the live jobs of its namespace it did
 * not bring. */
struct sweep_ctx {
	struct hb_daemon *d;
	unsigned gen;
	char (*ids)[32];
	size_t n, cap;
};

static int sweep_cb(const struct hb_job_row *r, void *arg)
{
	struct sweep_ctx *sc = arg;

	if (r->entry != HB_ENTRY_KUBERNETES || !r->k8s_name ||
	    !r->k8s_namespace ||
	    strcmp(r->k8s_namespace, hb_origin_ns(sc->d->origin)) ||
	    hb_origin_index_listed(sc->d->origin, r->k8s_uid, r->k8s_namespace,
				   r->k8s_name, sc->gen))
		return 0;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 16;
		char(*v)[32] = realloc(sc->ids, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		sc->ids = v;
		sc->cap = cap;
	}
	snprintf(sc->ids[sc->n++], 32, "%s", r->id);
	return 0;
}

/* MPIJobs deleted while nobody watched (the daemon down, the watch
 * broken): their jobs are cancelled, their twins deleted. */
static int origin_sweep(struct hb_daemon *d, unsigned gen, struct task **tasks,
			struct hb_err *err)
{
	static const unsigned live =
		HB_JOB_BIT(HB_JOB_PENDING) | HB_JOB_BIT(HB_JOB_QUEUED) |
		HB_JOB_BIT(HB_JOB_RUNNING) | HB_JOB_BIT(HB_JOB_COMPLETING);
	struct sweep_ctx sc = { .d = d, .gen = gen };
	int rc = hb_store_job_list(d->st, -1, live, 0, sweep_cb, &sc, err);

	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	for (size_t i = 0; !rc && i < sc.n; i++) {
		hb_log(HB_LOG_INFO,
		       "%s: its MPIJob is gone (deleted while the gateway did "
		       "not watch): cancelled",
		       sc.ids[i]);
		rc = origin_cancel(d, sc.ids[i],
				   "the MPIJob was deleted while the gateway "
				   "did not watch",
				   tasks, err);
	}
	free(sc.ids);
	return rc;
}

/* One event of the module. */
static int origin_event(struct hb_daemon *d, const struct hb_origin_ev *ev,
			struct task **tasks, struct hb_err *err)
{
	const char *id;
	char idbuf[32];
	int rc = 0;

	if (ev->type == HB_ORIGIN_SYNC)
		return origin_sweep(d, ev->gen, tasks, err);
	id = ev->twin ? NULL
		      : hb_origin_index_find(d->origin, ev->uid, ev->ns,
					     ev->name);
	if (!id && (ev->twin || ev->type == HB_ORIGIN_DELETED)) {
		id = hb_origin_twin_find(d->origin, ev->ns, ev->name);
		if (id || ev->twin)
			return id ? origin_twin_event(d, ev, id, err) : 0;
	}
	if (id) /* borrowed until the index changes */
		id = memcpy(idbuf, id, strlen(id) + 1);
	if (ev->type == HB_ORIGIN_DELETED)
		return id ? origin_cancel(d, id, "the MPIJob was deleted",
					  tasks, err)
			  : 0;
	if (id && hb_origin_index_claim(d->origin, ev->uid, ev->ns, ev->name))
		rc = origin_resume(d, ev, id, tasks, err);
	else if (!id)
		rc = origin_submit(d, ev, tasks, err);
	hb_origin_index_seen(d->origin, ev->uid, ev->ns, ev->name, ev->gen);
	return rc;
}

/* The module's events, after the iteration's batch: their writes are one
 * transaction, committed here; only then do their tasks start.  Until a
 * whole Slurm poll has been reconciled they wait, so that a job stored
 * but not known to be submitted is looked for on Slurm first. */
void hbd_origin_drain(struct hb_daemon *d)
{
	struct hb_origin_ev *list = hb_origin_take(d->origin), *ev, **tail;
	struct task *tasks = NULL, *t;
	struct hb_err err = { 0 };
	int rc = 0;

	for (tail = &d->origin_wait; *tail; tail = &(*tail)->next)
		;
	*tail = list;
	if (!d->slurm_seen && d->be.slurm_poll)
		return;
	list = d->origin_wait;
	d->origin_wait = NULL;
	for (ev = list; ev && !rc; ev = ev->next)
		rc = origin_event(d, ev, &tasks, &err);
	hb_origin_ev_free(list);
	if (!rc && d->txn_open) {
		d->txn_open = 0;
		if ((rc = hb_store_commit(d->st, &err)))
			hb_store_rollback(d->st);
	}
	if (rc) {
		hbd_batch_abort(d, &err);
		hb_log(HB_LOG_ERROR,
		       "managed MPIJobs: %s; their jobs were "
		       "not recorded",
		       err.msg);
	}
	if (!rc && tasks)
		hbd_failpoint(d, "origin-stored");
	while ((t = tasks)) {
		tasks = t->onext;
		if (rc)
			hbd_task_free(t);
		else
			hbd_task_launch(d, t);
	}
}

int hbd_origin_new(struct hb_daemon *d, struct hb_err *err)
{
	struct hb_origin_opts oo = { 0 };
	int rc;

	if (strcmp(d->cfg.remote_backend, "kubernetes"))
		return 0;
	oo.kubeconfig = d->cfg.remote_kubeconfig;
	oo.context = d->cfg.remote_context;
	oo.ns = d->cfg.k8s.namespace;
	if ((rc = hb_origin_new(&oo, &d->origin, err)) ||
	    (rc = hb_origin_load(d->origin, d->st, err)))
		return rc;
	d->wo.tag = T_ORIGIN;
	return 0;
}
