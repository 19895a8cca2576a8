/*
 * ops_common.c - what the ops share: a job as JSON, its audit events, the
 * source and the decision inputs a job is stored with, the job a caller
 * may see, and what a failed store call answers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_int.h"
#include "hpcbridge/proto.h"

/* j as one line of JSON; caller frees with free().  NULL for NULL, or
 * when out of memory. */
static char *print_or_null(const cJSON *j)
{
	struct hb_buf b;

	hb_buf_init(&b, HB_PROTO_MAX_PAYLOAD);
	if (!j || hb_doc_write_json_compact(j, &b)) {
		hb_buf_free(&b);
		return NULL;
	}
	return hb_buf_steal(&b);
}

void hbd_add_str_or_null(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

void hbd_add_int_or_null(cJSON *o, const char *k, int64_t v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, k, (double)v);
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *hbd_job_json(const struct hb_job_row *j)
{
	cJSON *o = cJSON_CreateObject();
	char t[40];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "id", j->id);
	hbd_add_str_or_null(o, "user", j->user);
	hbd_add_int_or_null(o, "uid", j->uid);
	/* the JSON keeps the store's word for the entry point */
	cJSON_AddStringToObject(o, "origin", hb_job_entry_name(j->entry));
	cJSON_AddStringToObject(o, "state", hb_job_state_name(j->state));
	cJSON_AddStringToObject(o, "target", hb_job_target_name(j->target));
	hbd_add_int_or_null(o, "slurm_job_id", j->slurm_job_id);
	hbd_add_str_or_null(o, "name", j->name);
	hbd_add_str_or_null(o, "account", j->account);
	hbd_add_str_or_null(o, "partition", j->partition);
	hbd_add_str_or_null(o, "reason", j->reason);
	hbd_add_int_or_null(o, "exit_code", j->exit_code);
	hb_time_rfc3339_format_ms(j->created_ms < 0 ? 0 : j->created_ms, t);
	cJSON_AddStringToObject(o, "created", t);
	hb_time_rfc3339_format_ms(j->updated_ms < 0 ? 0 : j->updated_ms, t);
	cJSON_AddStringToObject(o, "updated", t);
	/* when it ran, and what it cost (the ledger's sum, micro-units) */
	if (j->started_ms >= 0) {
		hb_time_rfc3339_format_ms(j->started_ms, t);
		cJSON_AddStringToObject(o, "started", t);
	} else {
		cJSON_AddNullToObject(o, "started");
	}
	if (j->ended_ms >= 0) {
		hb_time_rfc3339_format_ms(j->ended_ms, t);
		cJSON_AddStringToObject(o, "ended", t);
	} else {
		cJSON_AddNullToObject(o, "ended");
	}
	hbd_add_int_or_null(o, "elapsed_s",
			    j->started_ms >= 0 && j->ended_ms >= j->started_ms
				    ? (j->ended_ms - j->started_ms) / 1000
				    : -1);
	hbd_add_int_or_null(o, "cost_micros", j->cost_micros);
	return o;
}

/* Record an audit event for c (inside the batch). */
int hbd_audit(struct hb_daemon *d, uid_t uid, const char *user,
	      const char *peer, const char *action, const char *job_id,
	      const cJSON *detail, struct hb_err *err)
{
	char *text = print_or_null(detail);
	int rc;

	if (detail && !text)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	rc = hb_store_event_add(d->st, (int64_t)uid, user[0] ? user : NULL,
				peer, action, job_id, text, err);
	free(text);
	return rc;
}

/* The document e wrote into b, ended, as a malloc'd string; NULL when it
 * failed (out of memory).  Frees e and b. */
static char *emitted(struct hb_emit *e, struct hb_buf *b)
{
	char *s = e && !hb_emit_done(e) ? hb_buf_steal(b) : NULL;

	hb_emit_free(e);
	hb_buf_free(b);
	return s;
}

/* What a job was submitted as, compact JSON: its entry point (as
 * "source"), then the request's script, argv, env, cwd, jobspec and
 * options.  Caller frees; NULL when out of memory. */
char *hbd_job_source(enum hb_job_entry entry, const cJSON *req)
{
	static const char *const keys[] = { "script",  "argv",	  "env", "cwd",
					    "jobspec", "options", NULL };
	struct hb_buf b;
	struct hb_emit *e;

	hb_buf_init(&b, HB_PROTO_MAX_PAYLOAD);
	if ((e = hb_emit_new(HB_EMIT_JSON_COMPACT, &b))) {
		hb_emit_obj(e, NULL);
		hb_emit_str(e, "source", hb_job_entry_name(entry));
		for (size_t i = 0; keys[i]; i++) {
			const cJSON *v =
				cJSON_GetObjectItemCaseSensitive(req, keys[i]);

			if (v)
				hb_emit_tree(e, keys[i], v);
		}
		hb_emit_end(e);
	}
	return emitted(e, &b);
}

/*
 * What a decision was made from, as compact JSON: an object that the
 * caller fills between hbd_inputs_begin() and hbd_inputs_end(), then the
 * engine's document, already written, as its last member ("placement").
 */
struct hb_emit *hbd_inputs_begin(struct hb_buf *b,
				 const struct hb_place_out *dec)
{
	struct hb_emit *e = NULL;

	hb_buf_init(b, HB_PROTO_MAX_PAYLOAD);
	if (!hb_buf_reserve(b, strlen(dec->doc_json) + 511) &&
	    (e = hb_emit_new(HB_EMIT_JSON_COMPACT, b)))
		hb_emit_obj(e, NULL);
	return e;
}

/* The inputs as a malloc'd string; NULL when out of memory.  Frees e
 * (NULL: hbd_inputs_begin() failed) and b. */
char *hbd_inputs_end(struct hb_emit *e, struct hb_buf *b,
		     const struct hb_place_out *dec)
{
	char *s = NULL;

	if (e && !hb_emit_end(e) && !hb_emit_done(e) &&
	    !hb_doc_append_member(b, "placement", dec->doc_json,
				  strlen(dec->doc_json)))
		s = hb_buf_steal(b);
	hb_emit_free(e);
	hb_buf_free(b);
	return s;
}

/* Look up a job c may see: 0 with j filled (caller frees), else staged
 * an error (ENOENT for a job c may not see: ids do not leak). */
int hbd_visible_job(struct hb_daemon *d, struct conn *c, const cJSON *req,
		    struct hb_job_row *j)
{
	struct hb_err e = { 0 };
	struct hb_err err = { 0 };
	const char *id = NULL;
	char msg[128];
	int rc;

	if (hb_doc_get_str(req, "id", 31, HBD_REQUIRED, &id, &e)) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return e.code;
	}
	rc = hb_store_job_get(d->st, id, j, &err);
	if (rc == 0 && !may_see(d, c, j)) {
		hb_job_row_free(j);
		rc = HB_ENOENT;
	}
	if (rc == HB_ENOENT) {
		snprintf(msg, sizeof(msg), "no job %s", id);
		hbd_stage_error(d, c, HB_ENOENT, msg, 0);
	} else if (rc) {
		hbd_stage_error(d, c, HB_ESTORE, err.msg, 0);
	}
	return rc;
}

/*
 * A store call of this batch failed with rc (err says why): a state move
 * the store refused (HB_ESTATE) or a Slurm id already taken (HB_EEXIST) is
 * the request's error; anything else aborts the batch.
 */
void hbd_store_failed(struct hb_daemon *d, struct conn *c, int rc,
		      struct hb_err *err)
{
	if (rc == HB_ESTATE || rc == HB_EEXIST) {
		hbd_stage_error(d, c, rc, err->msg, 0);
		return;
	}
	hbd_batch_abort(d, err);
	hbd_stage_error(d, c, HB_ESTORE, err->msg, 0);
}
