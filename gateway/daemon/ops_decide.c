/*
 * ops_decide.c - the placement ops: decide (where a Slurm job runs, asked
 * by the plugin: stored with its decision before the reply) and placement
 * (the policy and snapshot decisions are made from).
 */
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/proto.h"
#include "hpcbridge/rules.h"

/* A job_submit request's inputs (no script, no environment); target: the
 * request's, as it came. */
static char *decision_inputs(const struct hb_place_job *job, int64_t uid,
			     const char *target, const cJSON *options,
			     const struct hb_place_out *dec)
{
	struct hb_buf b;
	struct hb_emit *e = hbd_inputs_begin(&b, dec);

	if (e) {
		hb_emit_str(e, "user", job->user);
		hb_emit_num(e, "uid", (double)uid);
		hb_emit_str_or_null(e, "account", job->account);
		hb_emit_str_or_null(e, "partition", job->partition);
		hb_emit_str_or_null(e, "target", target);
		if (job->time_limit_min >= 0)
			hb_emit_num(e, "time_limit_min",
				    (double)job->time_limit_min);
		else
			hb_emit_null(e, "time_limit_min");
		if (options)
			hb_emit_tree(e, "options", options);
		hb_emit_str(e, "rule", dec->rule);
	}
	return hbd_inputs_end(e, &b, dec);
}

/* A decide request's fields, read and checked (decide_read()). */
struct decide_req {
	struct hb_place_job job; /* user, account, ..., jobspec */
	const char *target;	   /* the request's, borrowed */
	const cJSON *options;
	int64_t uid;
	char uname[64]; /* job.user, when the request gave the uid alone */
};

/* Read and check req's fields into q, the user's name given (borrowed).
 * 0, or the error in e. */
static int decide_fields(const cJSON *req, const char *user,
			 struct decide_req *q, struct hb_err *e)
{
	struct hb_place_request r;
	int rc = hb_place_request_read(req, user, &r, e);

	if (rc)
		return rc;
	q->job = r.job;
	q->target = r.target;
	q->options = r.options;
	q->uid = r.uid;
	return 0;
}

/*
 * Read and check req's fields into q.  looked_up: the user's name a worker
 * found for the request's uid ("": none), or NULL (see
 * hbd_lookup_task()).  0, or nonzero with the request dealt with: an
 * error staged, or the name to be looked up first.
 */
static int decide_read(struct hb_daemon *d, struct conn *c, const cJSON *req,
		       const char *looked_up, struct decide_req *q)
{
	const char *user = NULL;
	struct hb_err e = { 0 };
	int rc;

	/* The plugin sends the uid only, so that slurmctld never waits on
	 * NSS under its locks: the name is looked up here (cached, a miss
	 * on a worker), the uid in decimal for a user without a passwd
	 * entry, as Slurm shows one. */
	q->uid = -1;
	hb_doc_get_str(req, "user", HB_STORE_NAME_MAX, 0, &user, &e);
	hb_doc_get_i64(req, "uid", 0, 4294967294LL, HB_DOC_REQUIRED, &q->uid,
		       &e);
	if (!e.code && (!user || !*user)) {
		rc = looked_up ? (looked_up[0] ? 0 : HB_ENOENT)
			       : hbd_pw_cached(d, (uid_t)q->uid, q->uname,
					       sizeof(q->uname), NULL);
		if (rc == HB_EAGAIN) {
			hbd_lookup_task(d, c, req, (uid_t)q->uid, 0);
			return rc;
		}
		if (looked_up && !rc)
			snprintf(q->uname, sizeof(q->uname), "%s", looked_up);
		if (rc)
			snprintf(q->uname, sizeof(q->uname), "%" PRId64,
				 q->uid);
		user = q->uname;
	}
	if (e.code || decide_fields(req, user, q, &e)) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return e.code;
	}
	q->job.k8s = hbd_remote_cfg_is_cluster(&d->cfg) ? &d->cfg.k8s : NULL;
	return 0;
}

/* Who a decision is recorded for: the caller of the op, or slurmctld,
 * whose plugin decided under a leased id. */
struct who {
	uid_t uid;
	const char *user, *peer;
	const char *leased_id; /* NULL: the store gives the id */
};

/* Store the decided job in the batch: its row (row->id set), its
 * decision and the audit event `decide` (detail filled).  0, or the
 * store's error (err says why). */
static int decide_store(struct hb_daemon *d, const struct who *by,
			const struct decide_req *q,
			const struct hb_place_out *dec, const char *inputs_s,
			const char *src_s, cJSON *detail,
			struct hb_job_row *row, struct hb_err *err)
{
	int rc;

	if ((rc = hbd_txn(d, err)))
		return rc;
	row->entry = HB_ENTRY_SLURM;
	row->target = decided_target(dec->target);
	/* a rejected job never reaches Slurm: it ends here */
	row->state = dec->target == HB_DECIDE_REJECT ? HB_JOB_FAILED
						     : HB_JOB_PENDING;
	row->user = q->job.user;
	row->uid = q->uid;
	row->account = q->job.account;
	row->partition = q->job.partition;
	row->name = q->job.name;
	row->reason = dec->reason;
	row->jobspec = src_s;
	row->slurm_job_id = -1;
	row->exit_code = -1;
	if ((rc = by->leased_id ? hb_store_job_add_leased(d->st, row,
							  by->leased_id, err)
				: hb_store_job_add(d->st, row, err)))
		return rc;
	if ((rc = hb_store_decision_add(d->st, row->id, row->target, inputs_s,
					dec->explanation,
					hb_decider_policy_name(d->dc), err)))
		return rc;
	cJSON_AddStringToObject(detail, "target",
				hb_job_target_name(row->target));
	cJSON_AddStringToObject(detail, "rule", dec->rule);
	cJSON_AddStringToObject(detail, "why", dec->why);
	cJSON_AddStringToObject(detail, "for_user", q->job.user);
	return hbd_audit(d, by->uid, by->user, by->peer, "decide", row->id,
			 detail, err);
}

/* The decision's reply, framed (*flen bytes), with the proxy a
 * Kubernetes job's Slurm side becomes; NULL when out of memory. */
static char *decide_reply(struct hb_daemon *d, const struct hb_job_row *row,
			  const struct hb_place_out *dec,
			  int64_t time_limit_min, size_t *flen)
{
	const char *tname = hb_job_target_name(row->target);
	char cm[96], script_buf[2 * 4096 + 128];
	struct hb_proxy proxy;
	struct hb_emit *w;
	struct hb_buf rb;

	if (!(w = hbd_reply_begin(&rb)))
		return NULL;
	hb_emit_str(w, "id", row->id);
	hb_emit_str(w, "target", tname);
	hb_emit_str(w, "reason", dec->reason);
	if (dec->target == HB_DECIDE_KUBE) {
		hb_rules_proxy(&d->cfg, time_limit_min, &proxy);
		hb_emit_obj(w, "proxy");
		hb_emit_str(w, "partition", proxy.partition);
		if (proxy.time_limit_min != HB_RULES_NO_LIMIT)
			hb_emit_num(w, "time_limit_min",
				    (double)proxy.time_limit_min);
		hb_emit_num(w, "cpus", proxy.cpus);
		hb_emit_num(w, "mem_mb", proxy.mem_mb);
		if (hb_rules_proxy_script(&d->cfg, row->id, script_buf,
					  sizeof(script_buf)))
			script_buf[0] = '\0'; /* cannot happen: both paths
						* fit PATH_MAX */
		hb_emit_str(w, "script", script_buf);
		snprintf(cm, sizeof(cm), "hpcbridge:%s kubernetes", row->id);
		hb_emit_str(w, "comment", cm);
		hb_emit_end(w);
	}
	snprintf(cm, sizeof(cm), "hpcbridge:%s target=%s", row->id, tname);
	hb_emit_str(w, "admin_comment", cm);
	return hbd_reply_end(w, &rb, flen);
}

/*
 * A decision for a Slurm job, from a caller op_allowed() let through
 * (dispatch.c): read the request, decide, store the job with its decision
 * (decide_store()) and stage the reply (decide_reply()), sent once the
 * batch is committed.  looked_up: as for decide_read().
 */
void hbd_decide(struct hb_daemon *d, struct conn *c, const cJSON *req,
		const char *looked_up)
{
	struct decide_req q = { 0 };
	struct hb_place_out dec = { 0 };
	struct hb_job_row row = { 0 };
	struct hb_err err = { 0 };
	cJSON *detail = NULL;
	struct staged *s;
	size_t flen = 0;
	char *inputs_s = NULL, *src_s = NULL, *f;
	double t0 = hb_metrics_now();
	int rc;

	if (decide_read(d, c, req, looked_up, &q))
		return;
	q.job.seq = (uint64_t)hb_clock_wall_ms(); /* the pilot's sample key */
	if ((rc = hb_decider_decide(d->dc, &q.job, q.job.seq / 1000, &dec,
				    &err))) {
		hbd_stage_error(d, c, rc, err.msg, 0);
		return;
	}
	inputs_s = decision_inputs(&q.job, q.uid, q.target, q.options, &dec);
	src_s = hbd_job_source(HB_ENTRY_SLURM, req);
	detail = cJSON_CreateObject();
	if (!inputs_s || !src_s || !detail)
		goto nomem;
	if ((rc = decide_store(d,
			       &(struct who){ .uid = c->uid,
					      .user = c->user,
					      .peer = c->peer },
			       &q, &dec, inputs_s, src_s, detail, &row,
			       &err)))
		goto store_fail;
	if (!(f = decide_reply(d, &row, &dec, q.job.time_limit_min, &flen)))
		goto nomem;
	d->ndecisions++;
	hb_metrics_decision(hb_job_target_name(row.target), dec.rule,
			    hb_metrics_now() - t0);
	hb_logf(HB_LOG_DEBUG,
		(struct hb_log_field[]){
			HB_LOG_STR("job", row.id),
			HB_LOG_STR("target", hb_job_target_name(row.target)),
			HB_LOG_STR("user", q.job.user) },
		3, "decided: %s", dec.reason);
	if ((s = hbd_stage_frame(d, c, f, flen, 0, 1, 0)))
		s->burst = dec.target == HB_DECIDE_KUBE;
	goto out;
nomem:
	hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
	goto out;
store_fail:
	hbd_batch_abort(d, &err);
	hbd_stage_error(d, c,
			rc == HB_EINVAL || rc == HB_ETOOBIG ? rc : HB_ESTORE,
			err.msg[0] ? err.msg : "the state store failed", 0);
out:
	/* detail is left to hbd_op_decide()'s scratch arena: deleting it
	 * would walk its nodes to free nothing */
	hb_place_out_free(&dec);
	free(inputs_s);
	free(src_s);
}

/* The user's name for uid: the cache's, else asked of NSS here (once per
 * user while the cache holds it; the plugin cannot ask under slurmctld's
 * lock), else the uid in decimal, as Slurm shows a user without one. */
static void user_name(struct hb_daemon *d, int64_t uid, char *name, size_t n)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int rc = hbd_pw_cached(d, (uid_t)uid, name, n, NULL);

	if (rc == HB_EAGAIN) {
		if (getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) || !res)
			res = NULL;
		hbd_pw_fill(d, (uid_t)uid, res ? res->pw_name : NULL,
			    res ? res->pw_gid : 0);
		rc = res && strlen(res->pw_name) < n ? 0 : HB_ENOENT;
		if (!rc)
			snprintf(name, n, "%s", res->pw_name);
	}
	if (rc)
		snprintf(name, n, "%" PRId64, uid);
}

/* A notice's decision, read into dec (strings borrowed from n; the
 * explanation and document stand in when n lacks them). */
static int notice_read(const cJSON *n, struct hb_place_out *dec,
		       const char **id, int64_t *snap, int64_t *cost,
		       const cJSON **req, struct hb_err *e)
{
	const char *target = NULL, *rule = NULL, *why = NULL, *reason = NULL;
	const char *expl = NULL, *doc = NULL;
	cJSON *parsed;
	int t;

	hb_doc_get_str(n, "id", 32, HB_DOC_REQUIRED, id, e);
	hb_doc_get_str(n, "target", 32, HB_DOC_REQUIRED, &target, e);
	hb_doc_get_i64(n, "snapshot", 0, INT64_MAX, 0, snap, e);
	hb_doc_get_i64(n, "cost_micro", 0, INT64_MAX / 4, 0, cost, e);
	hb_doc_get_str(n, "rule", sizeof(dec->rule) - 1, 0, &rule, e);
	hb_doc_get_str(n, "why", sizeof(dec->why) - 1, 0, &why, e);
	hb_doc_get_str(n, "reason", sizeof(dec->reason) - 1, 0, &reason, e);
	hb_doc_get_str(n, "explanation", HB_PROTO_MAX_PAYLOAD, 0, &expl, e);
	hb_doc_get_str(n, "doc", HB_PROTO_MAX_PAYLOAD, 0, &doc, e);
	hb_doc_get_obj(n, "request", HB_DOC_REQUIRED, req, e);
	if (e->code)
		return e->code;
	t = hb_job_target_parse(target);
	if (t != HB_TARGET_SLURM && t != HB_TARGET_KUBERNETES &&
	    t != HB_TARGET_REJECTED)
		return hb_err_set(e, HB_EINVAL, NULL, 0,
				  "target: '%.32s' is not slurm, kubernetes "
				  "or rejected",
				  target);
	dec->target = t == HB_TARGET_SLURM	  ? HB_DECIDE_SLURM
		      : t == HB_TARGET_KUBERNETES ? HB_DECIDE_KUBE
						  : HB_DECIDE_REJECT;
	snprintf(dec->rule, sizeof(dec->rule), "%s", rule ? rule : "");
	snprintf(dec->why, sizeof(dec->why), "%s", why ? why : "");
	snprintf(dec->reason, sizeof(dec->reason), "%s",
		 reason ? reason : "decided in slurmctld");
	dec->explanation =
		(char *)(expl ? expl
			      : "explanation: not received by the daemon; "
				"the decision was recovered from Slurm's job "
				"record\n");
	/* what is stored must read back: a document that does not parse
	 * is left out */
	parsed = doc ? cJSON_Parse(doc) : NULL;
	dec->doc_json = (char *)(parsed ? doc : "null");
	cJSON_Delete(parsed);
	return 0;
}

int hbd_plugin_decided(struct hb_daemon *d, const cJSON *n, const char *peer,
		       int noticed, struct hb_err *err)
{
	struct decide_req q = { 0 };
	struct hb_place_out dec = { 0 };
	struct hb_job_row row = { 0 };
	const cJSON *req = NULL;
	const char *id = NULL;
	int64_t snap = 0, cost = 0, now = hb_clock_wall_ms();
	char *inputs_s = NULL, *src_s = NULL;
	cJSON *detail = NULL;
	int rc;

	if ((rc = notice_read(n, &dec, &id, &snap, &cost, &req, err)))
		return rc;
	q.uid = -1;
	hb_doc_get_i64(req, "uid", 0, 4294967294LL, HB_DOC_REQUIRED, &q.uid,
		       err);
	if (err->code)
		return err->code;
	user_name(d, q.uid, q.uname, sizeof(q.uname));
	if ((rc = decide_fields(req, q.uname, &q, err)))
		return rc;
	inputs_s = decision_inputs(&q.job, q.uid, q.target, q.options, &dec);
	src_s = hbd_job_source(HB_ENTRY_SLURM, req);
	detail = cJSON_CreateObject();
	if (!inputs_s || !src_s || !detail ||
	    !cJSON_AddNumberToObject(detail, "snapshot", (double)snap) ||
	    !cJSON_AddStringToObject(detail, "decided_in", "slurmctld")) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	rc = decide_store(d,
			  &(struct who){ .uid = d->slurm_uid_valid
							? d->slurm_uid
							: 0,
					 .user = "slurmctld",
					 .peer = peer,
					 .leased_id = id },
			  &q, &dec, inputs_s, src_s, detail, &row, err);
	if (rc)
		goto out;
	/* its estimate counts against the budgets, as the plugin counted
	 * it in its copy of the snapshot */
	hb_decider_spend_add(d->dc, q.job.account, row.target, now, cost,
			     now / 1000);
	/* a notice brings the estimate the plugin charged, and so does a
	 * decision the reconciler rebuilt from the tag's cost= (only a
	 * notice says how far the plugin's decisions were counted) */
	hbd_publish_used(d, hb_store_id_seq(id), noticed);
	d->ndecisions++;
	hb_metrics_decision(hb_job_target_name(row.target), dec.rule, 0);
	hb_logf(HB_LOG_DEBUG,
		(struct hb_log_field[]){
			HB_LOG_STR("job", row.id),
			HB_LOG_STR("target", hb_job_target_name(row.target)),
			HB_LOG_STR("user", q.job.user) },
		3, "decided in slurmctld: %s", dec.reason);
out:
	cJSON_Delete(detail);
	free(inputs_s);
	free(src_s);
	return rc;
}

/*
 * A decision builds and drops a few hundred cJSON nodes (the engine's
 * document, what is stored, the reply); they come from the daemon's
 * scratch arena, reset after each decision, instead of malloc.  Nothing
 * made here outlives it: replies are framed into malloc'd buffers.
 * hbd_decide() may abandon its trees: only the reset frees them.
 */
void hbd_op_decide(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	hb_doc_scope_begin(&d->scratch);
	hbd_decide(d, c, req, NULL);
	hb_doc_scope_end();
	hb_arena_reset(&d->scratch);
}

/* The placement policy in force and the snapshot decisions are made
 * from, for "hpcbridge explain" without --state.  What accounts have
 * spent is for administrators only. */
void hbd_op_placement(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	cJSON *r = hb_proto_ok(), *state;

	(void)req;
	state = r ? hb_decider_state(d->dc, hb_clock_wall_ms() / 1000) : NULL;
	if (!state || !cJSON_AddItemToObject(r, "state", state)) {
		cJSON_Delete(state);
		cJSON_Delete(r);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return;
	}
	if (!is_admin(d, c))
		cJSON_DeleteItemFromObjectCaseSensitive(state, "spend");
	cJSON_AddStringToObject(r, "policy", hb_decider_policy_name(d->dc));
	cJSON_AddStringToObject(r, "policy_text",
				hb_decider_policy_text(d->dc));
	hbd_stage_reply(d, c, r, 0, 0);
}
