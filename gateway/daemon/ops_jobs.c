/*
 * ops_jobs.c - the ops on a caller's jobs: submit (through Slurm, as the
 * caller), jobs and status (read-only), and cancel.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"

struct list_ctx {
	cJSON *arr;
	int rc;
	int requested; /* add each job's "requested" (qstat's Resource_List) */
};

/*
 * What the job asked for, from the jobspec it was decided with (the
 * "jobspec" of its stored source), as o's "requested": its shape's nodes,
 * ntasks, cpus_per_node, gpus_per_node and mem_per_node_mb, its
 * time_limit (seconds, or "UNLIMITED") and its output and error patterns.
 * Nothing for a job without one (submitted with hpcbridge submit).
 */
static int add_requested(cJSON *o, const char *src)
{
	static const char *const shape_keys[] = { "nodes", "ntasks",
						  "cpus_per_node",
						  "gpus_per_node",
						  "mem_per_node_mb" };
	static const char *const spec_keys[] = { "time_limit", "output",
						 "error" };
	cJSON *doc = src ? cJSON_Parse(src) : NULL, *r, *v;
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(doc, "jobspec");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(js, "shape");
	int rc = 0;

	if (!cJSON_IsObject(js))
		goto out;
	if (!(r = cJSON_AddObjectToObject(o, "requested")))
		goto nomem;
	for (size_t i = 0; i < sizeof(shape_keys) / sizeof(shape_keys[0]);
	     i++) {
		v = cJSON_GetObjectItemCaseSensitive(sh, shape_keys[i]);
		if (cJSON_IsNumber(v) && v->valuedouble > 0 &&
		    !cJSON_AddNumberToObject(r, shape_keys[i], v->valuedouble))
			goto nomem;
	}
	for (size_t i = 0; i < sizeof(spec_keys) / sizeof(spec_keys[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(js, spec_keys[i]);
		if (!cJSON_IsNumber(v) && !cJSON_IsString(v))
			continue;
		v = cJSON_Duplicate(v, 0);
		if (!v || !cJSON_AddItemToObject(r, spec_keys[i], v)) {
			cJSON_Delete(v);
			goto nomem;
		}
	}
	goto out;
nomem:
	rc = HB_ENOMEM;
out:
	cJSON_Delete(doc);
	return rc;
}

static int list_cb(const struct hb_job_row *j, void *arg)
{
	struct list_ctx *l = arg;
	cJSON *o = hbd_job_json(j);

	if (!o || (l->requested && add_requested(o, j->jobspec)) ||
	    !cJSON_AddItemToArray(l->arr, o)) {
		cJSON_Delete(o);
		return l->rc = HB_ENOMEM;
	}
	return 0;
}

void hbd_op_jobs(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	struct hb_err e = { 0 };
	struct hb_err err = { 0 };
	struct list_ctx l = { 0 };
	int all = 0, rc;
	int64_t limit = HB_DAEMON_LIST_DEFAULT;
	cJSON *r;

	hb_doc_get_bool(req, "all", 0, &all, &e);
	hb_doc_get_bool(req, "requested", 0, &l.requested, &e);
	hb_doc_get_i64(req, "limit", 1, HB_DAEMON_LIST_MAX, 0, &limit, &e);
	if (e.code) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (all && !is_admin(d, c)) {
		hbd_stage_error(
			d, c, HB_EPERM,
			"only administrators may list every user's jobs", 0);
		return;
	}
	r = hb_proto_ok();
	l.arr = r ? cJSON_AddArrayToObject(r, "jobs") : NULL;
	if (!l.arr) {
		cJSON_Delete(r);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return;
	}
	rc = hb_store_job_list(d->st, all ? -1 : (int64_t)c->uid, HB_JOB_ANY,
			       (unsigned)limit, list_cb, &l, &err);
	if (rc) {
		cJSON_Delete(r);
		hbd_stage_error(d, c, rc == HB_ENOMEM ? rc : HB_ESTORE,
				err.msg[0] ? err.msg : hb_strerror(rc), 0);
		return;
	}
	hbd_stage_reply(d, c, r, 0, 0);
}

static int event_cb(const struct hb_event_row *ev, void *arg)
{
	cJSON *arr = arg, *o = cJSON_CreateObject(), *detail;
	char t[40];

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return HB_ENOMEM;
	}
	hb_time_rfc3339_format_ms(ev->at_ms < 0 ? 0 : ev->at_ms, t);
	cJSON_AddStringToObject(o, "at", t);
	hbd_add_str_or_null(o, "action", ev->action);
	hbd_add_str_or_null(o, "actor", ev->actor_user);
	hbd_add_int_or_null(o, "actor_uid", ev->actor_uid);
	hbd_add_str_or_null(o, "peer", ev->peer);
	detail = ev->detail ? cJSON_Parse(ev->detail) : NULL;
	if (detail)
		cJSON_AddItemToObject(o, "detail", detail);
	return 0;
}

void hbd_op_status(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	struct hb_job_row j = { 0 };
	struct hb_decision_row dr = { 0 };
	struct hb_err err = { 0 };
	cJSON *r = NULL, *job, *o, *ev;
	char t[40];
	int rc;

	if (hbd_visible_job(d, c, req, &j))
		return;
	r = hb_proto_ok();
	job = r ? hbd_job_json(&j) : NULL;
	if (!job || !cJSON_AddItemToObject(r, "job", job)) {
		cJSON_Delete(job);
		goto nomem;
	}
	rc = hb_store_decision_get(d->st, j.id, &dr, &err);
	if (rc == 0) {
		o = cJSON_AddObjectToObject(job, "decision");
		if (!o)
			goto nomem;
		hb_time_rfc3339_format_ms(dr.at_ms < 0 ? 0 : dr.at_ms, t);
		cJSON_AddStringToObject(o, "at", t);
		cJSON_AddStringToObject(o, "target",
					hb_job_target_name(dr.target));
		hbd_add_str_or_null(o, "explanation", dr.explanation);
		hbd_add_str_or_null(o, "policy", dr.policy);
		if (dr.inputs) {
			cJSON *in = cJSON_Parse(dr.inputs);

			if (in)
				cJSON_AddItemToObject(o, "inputs", in);
		}
	} else if (rc == HB_ENOENT) {
		cJSON_AddNullToObject(job, "decision");
	} else {
		goto store;
	}
	ev = cJSON_AddArrayToObject(job, "events");
	if (!ev)
		goto nomem;
	memset(&err, 0, sizeof(err));
	rc = hb_store_event_list(d->st, j.id, 0, 200, event_cb, ev, &err);
	if (!rc)
		rc = hbd_storage_status(d, j.id, job, &err);
	if (rc == HB_ENOMEM)
		goto nomem;
	if (rc)
		goto store;
	hbd_stage_reply(d, c, r, 0, 0);
	r = NULL;
	goto out;
nomem:
	hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
	goto out;
store:
	hbd_stage_error(d, c, HB_ESTORE, err.msg, 0);
out:
	cJSON_Delete(r);
	hb_decision_row_free(&dr);
	hb_job_row_free(&j);
}

/* A NULL-terminated copy of a list of strings (NULL list: empty). */
static const char **strv_dup(const cJSON *arr)
{
	size_t n = arr ? (size_t)cJSON_GetArraySize(arr) : 0, i = 0;
	const char **v = calloc(n + 1, sizeof(*v));
	const cJSON *c;

	if (!v)
		return NULL;
	cJSON_ArrayForEach (c, arr) {
		v[i] = strdup(c->valuestring);
		if (!v[i]) {
			while (i--)
				free((char *)v[i]);
			free(v);
			return NULL;
		}
		i++;
	}
	return v;
}

void hbd_op_submit(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	const char *script = NULL, *name = NULL, *cwd = NULL;
	const cJSON *argv = NULL, *env = NULL;
	struct hb_err e = { 0 };
	struct hb_err err = { 0 };
	struct hb_job_row row = { 0 };
	cJSON *detail = NULL;
	char *src_s = NULL, cm[96];
	struct task *t = NULL;
	int rc;

	hb_doc_get_str(req, "script", HB_PROTO_MAX_PAYLOAD, HBD_REQUIRED,
		       &script, &e);
	hb_doc_get_str(req, "name", HB_STORE_NAME_MAX, 0, &name, &e);
	hb_doc_get_str(req, "cwd", 4096, 0, &cwd, &e);
	hb_doc_get_strv(req, "argv", 0, &argv, &e);
	hb_doc_get_strv(req, "env", 0, &env, &e);
	if (!e.code && cwd && cwd[0] != '/')
		hb_err_set(&e, HB_EINVAL, NULL, 0,
			   "cwd: must be an absolute path");
	if (e.code) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (!d->be.slurm_submit) {
		hbd_stage_error(
			d, c, HB_EUNSUP,
			"this daemon has no Slurm client to submit with", 0);
		return;
	}
	src_s = hbd_job_source(HB_ENTRY_CLI, req);
	detail = cJSON_CreateObject();
	if (!src_s || !detail)
		goto nomem;
	if ((rc = hbd_txn(d, &err)))
		goto store_fail;
	row.entry = HB_ENTRY_CLI;
	row.target = HB_TARGET_SLURM;
	row.state = HB_JOB_PENDING;
	row.user = c->user;
	row.uid = c->uid;
	row.name = name;
	row.reason = "submitted with hpcbridge submit";
	row.jobspec = src_s;
	row.slurm_job_id = -1;
	row.exit_code = -1;
	if ((rc = hb_store_job_add(d->st, &row, &err)))
		goto store_fail;
	if ((rc = hb_store_decision_add(d->st, row.id, HB_TARGET_SLURM, NULL,
					"submitted with hpcbridge submit",
					"submit", &err)))
		goto store_fail;
	hbd_add_str_or_null(detail, "name", name);
	if ((rc = hbd_audit(d, c->uid, c->user, c->peer, "submit", row.id,
			    detail, &err)))
		goto store_fail;

	t = hbd_task_new(d, c, TASK_SUBMIT, row.id);
	if (!t)
		goto nomem;
	snprintf(cm, sizeof(cm), "hpcbridge:%s target=slurm", row.id);
	t->script = xstrdup(script);
	t->name = xstrdup(name);
	t->cwd = xstrdup(cwd);
	t->user = xstrdup(c->user);
	t->admin_comment = xstrdup(cm);
	t->argv = strv_dup(argv);
	t->env = strv_dup(env);
	if (!t->script || (name && !t->name) || (cwd && !t->cwd) || !t->user ||
	    !t->admin_comment || !t->argv || !t->env)
		goto nomem;
	t->req.id = t->id;
	t->req.script = t->script;
	t->req.name = t->name;
	t->req.cwd = t->cwd;
	t->req.user = t->user;
	t->req.uid = c->uid;
	t->req.gid = c->gid;
	t->req.argv = t->argv;
	t->req.env = t->env;
	t->req.admin_comment = t->admin_comment;
	hbd_stage_task(d, c, t, 1);
	t = NULL;
	goto out;
nomem:
	/* the job row may be in the batch: undo it with everything else
	 * rather than leave a job nobody will submit */
	err.code = HB_ENOMEM;
	snprintf(err.msg, sizeof(err.msg), "out of memory");
	hbd_batch_abort(d, &err);
	hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
	goto out;
store_fail:
	hbd_batch_abort(d, &err);
	hbd_stage_error(d, c,
			rc == HB_EINVAL || rc == HB_ETOOBIG ? rc : HB_ESTORE,
			err.msg[0] ? err.msg : "the state store failed", 0);
out:
	hbd_task_free(t);
	cJSON_Delete(detail);
	free(src_s);
}

void hbd_op_cancel(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(req, "array_task");
	struct hb_job_row j = { 0 };
	struct task *t;

	if (task && !cJSON_IsNull(task)) {
		hbd_remote_stop(d, c, req, 0);
		return;
	}
	if (hbd_visible_job(d, c, req, &j))
		return;
	if (j.target == HB_TARGET_KUBERNETES &&
	    !hb_store_state_terminal(j.state)) {
		/* The remote side first, on a worker (the local backend
		 * writes, syncs and forks): SIGTERM now, SIGKILL after the
		 * grace period (the next look at it sends it).  The rest
		 * goes on in rcancel_done(). */
		t = hbd_remote_task(d, c, TASK_REMOTE_CANCEL, &j, j.id, -1);
		if (t) {
			t->rw->stop = RSTOP_JOB;
			hbd_stage_task(d, c, t, 0);
		}
		hb_job_row_free(&j);
		return;
	}
	hbd_cancel_rest(d, c, &j);
	hb_job_row_free(&j);
}

/* hbd_op_cancel() once the remote side, if any, is cancelled: the Slurm
 * job, or only the record. */
void hbd_cancel_rest(struct hb_daemon *d, struct conn *c,
		     const struct hb_job_row *j)
{
	struct hb_err err = { 0 };
	cJSON *r, *detail = NULL;
	char msg[160];
	struct task *t;
	int rc;

	if (hb_store_state_terminal(j->state)) {
		if (j->state == HB_JOB_CANCELLED) {
			r = hb_proto_ok();
			if (r)
				cJSON_AddStringToObject(
					r, "state",
					hb_job_state_name(HB_JOB_CANCELLED));
			hbd_stage_reply(d, c, r, 0, 0);
		} else {
			snprintf(msg, sizeof(msg),
				 "job %s has already ended (%s)", j->id,
				 hb_job_state_name(j->state));
			hbd_stage_error(d, c, HB_ESTATE, msg, 0);
		}
		goto out;
	}
	if (j->slurm_job_id >= 0) {
		if (!d->be.slurm_cancel) {
			snprintf(msg, sizeof(msg),
				 "job %s is Slurm job %" PRId64
				 ", and this daemon has no Slurm client to "
				 "cancel it with",
				 j->id, j->slurm_job_id);
			hbd_stage_error(d, c, HB_EUNAVAIL, msg, 0);
			goto out;
		}
		t = hbd_task_new(d, c, TASK_CANCEL, j->id);
		if (!t) {
			hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
			goto out;
		}
		t->slurm_job_id = j->slurm_job_id;
		/* nothing to commit first: launched at the end of the
		 * iteration all the same, to keep the replies in order */
		hbd_stage_task(d, c, t, 0);
		goto out;
	}
	/* no Slurm job (yet): only the record changes */
	detail = cJSON_CreateObject();
	snprintf(msg, sizeof(msg), "cancelled by %s",
		 c->user[0] ? c->user : "uid");
	if (!detail) {
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	cJSON_AddStringToObject(detail, "from", hb_job_state_name(j->state));
	if ((rc = hbd_txn(d, &err)) ||
	    (rc = hb_store_job_set_state(d->st, j->id, HB_JOB_CANCELLED, -1,
					 msg, &err)) ||
	    (rc = hbd_audit(d, c->uid, c->user, c->peer, "cancel", j->id,
			    detail, &err))) {
		hbd_store_failed(d, c, rc, &err);
		goto out;
	}
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("job", j->id),
					 HB_LOG_STR("by", c->user) },
		2, "job cancelled");
	r = hb_proto_ok();
	if (r)
		cJSON_AddStringToObject(r, "state",
					hb_job_state_name(HB_JOB_CANCELLED));
	hbd_stage_reply(d, c, r, 1, 0);
out:
	cJSON_Delete(detail);
}
