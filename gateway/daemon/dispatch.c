/*
 * dispatch.c - from a parsed request to its op: the op table (which
 * handler, who may call it), and the caller's user name, which a worker
 * looks up when the cache does not have it.  The ops read their fields
 * with hb_doc_get_*() (doc.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"

/* ------------------------------------------------------------------ */
/* The op table                                                        */
/* ------------------------------------------------------------------ */

/* Who may call an op.  Every op but those marked OP_NONAME needs the
 * caller's user name: a uid without one is refused (EPERM). */
#define OP_NONAME 1u /* any caller; no name is looked up for it */
#define OP_PRIV	  2u /* root and SlurmUser only (EPERM, logged) */

struct op {
	const char *name;
	void (*run)(struct hb_daemon *d, struct conn *c, const cJSON *req);
	unsigned flags;	     /* OP_* */
	const char *refused; /* OP_PRIV: what the EPERM reply says */
};

static void op_ping(struct hb_daemon *d, struct conn *c, const cJSON *req);

/* The ops of protocol version 1 (docs/internals/protocol.md); their
 * handlers are in ops_decide.c, ops_jobs.c and ops_remote.c. */
static const struct op ops[] = {
	{ "ping", op_ping, OP_NONAME, NULL },
	{ "decide", hbd_op_decide, OP_PRIV,
	  "only root and SlurmUser may ask for decisions" },
	{ "submit", hbd_op_submit, 0, NULL },
	{ "jobs", hbd_op_jobs, 0, NULL },
	{ "status", hbd_op_status, 0, NULL },
	{ "cancel", hbd_op_cancel, 0, NULL },
	{ "remote_start", hbd_op_remote_start, 0, NULL },
	{ "remote_poll", hbd_op_remote_poll, 0, NULL },
	{ "remote_abandon", hbd_op_remote_abandon, 0, NULL },
	{ "placement", hbd_op_placement, 0, NULL },
};

/* The op called name, or NULL. */
static const struct op *op_find(const char *name)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	return NULL;
}

/* The name of req's op (hb_proto_parse() checked that it is a string). */
static const char *op_name(const cJSON *req)
{
	return cJSON_GetObjectItemCaseSensitive(req, "op")->valuestring;
}

static const struct op *op_of(const cJSON *req)
{
	return op_find(op_name(req));
}

/* Whether c may call op; if not, the refusal is logged (once a second at
 * most) and staged. */
static int op_allowed(struct hb_daemon *d, struct conn *c, const struct op *op)
{
	unsigned dropped;

	if (!(op->flags & OP_PRIV) || is_priv(d, c))
		return 1;
	if (hbd_rate_ok(&d->rl_perm, &dropped))
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){
				HB_LOG_INT("uid", c->uid),
				HB_LOG_STR("peer", c->peer),
				HB_LOG_INT("not_logged", dropped) },
			3, "%s refused: only root and SlurmUser may ask",
			op->name);
	hbd_stage_error(d, c, HB_EPERM, op->refused, 0);
	return 0;
}

static void op_ping(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	cJSON *r = hb_proto_ok();

	(void)req;
	if (r) {
		cJSON_AddStringToObject(r, "version", HB_VERSION);
		cJSON_AddNumberToObject(r, "proto", HB_PROTO_VERSION);
		cJSON_AddNumberToObject(r, "decisions",
					(double)d->ndecisions);
		cJSON_AddNumberToObject(r, "checkpoints",
					(double)d->ncheckpoints);
	}
	hbd_stage_reply(d, c, r, 0, 0);
}

/* A request that needs a name, from a caller whose name is known; op is
 * its entry, or NULL for an op there is none for. */
static void dispatch_named(struct hb_daemon *d, struct conn *c,
			   const cJSON *req, const struct op *op)
{
	char msg[128];

	if (!c->user[0]) {
		unsigned dropped;

		if (hbd_rate_ok(&d->rl_perm, &dropped))
			hb_logf(HB_LOG_WARN,
				(struct hb_log_field[]){
					HB_LOG_INT("uid", c->uid),
					HB_LOG_STR("op", op_name(req)),
					HB_LOG_INT("not_logged", dropped) },
				3, "request from a uid with no user name "
				   "refused");
		hbd_stage_error(d, c, HB_EPERM, "your uid has no user name", 0);
		return;
	}
	if (!op) {
		snprintf(msg, sizeof(msg), "unknown op '%.60s'", op_name(req));
		hbd_stage_error(d, c, HB_EUNSUP, msg, 0);
		return;
	}
	if (op_allowed(d, c, op))
		op->run(d, c, req);
}

/* ------------------------------------------------------------------ */
/* The caller's name, looked up on a worker                            */
/* ------------------------------------------------------------------ */

/*
 * A name that is not cached, for a decide that names only the uid, or
 * (lconn) for the caller's own uid (conn_named()): a worker asks NSS
 * (which may wait on LDAP or SSSD), and the loop goes on with other
 * callers; c waits (its later requests keep their order), and the
 * request runs again when the name is known (hbd_lookup_done()).
 */
void hbd_lookup_task(struct hb_daemon *d, struct conn *c, const cJSON *req,
		     uid_t uid, int lconn)
{
	struct task *t = hbd_task_new(d, c, TASK_LOOKUP, "");
	/* in the scratch arena inside a decide (cJSON_free leaves it) */
	char *text = cJSON_PrintUnformatted(req);

	if (!t || !text || !(t->script = strdup(text))) {
		cJSON_free(text);
		hbd_task_free(t);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return;
	}
	cJSON_free(text);
	t->luid = uid;
	t->lconn = lconn;
	hbd_stage_task(d, c, t, 0);
}

/* The loop side of a finished name lookup: the request runs again. */
void hbd_lookup_done(struct task *t)
{
	struct conn *c = t->c;
	struct hb_daemon *d = t->d;
	cJSON *req;

	c->busy = 0;
	hbd_pw_fill(d, t->luid, t->user, t->lgid);
	if (!c->dead) {
		req = t->script ? cJSON_Parse(t->script) : NULL;
		if (t->lconn) {
			/* a name too long for the cache is no name, as
			 * hbd_pw_fill() has it */
			if (hbd_pw_cached(d, c->uid, c->user, sizeof(c->user),
					  NULL))
				c->user[0] = '\0';
			c->named = 1;
			if (req)
				dispatch_named(d, c, req, op_of(req));
			else
				hbd_stage_error(d, c, HB_ENOMEM,
						"out of memory", 0);
		} else {
			hb_doc_scope_begin(&d->scratch);
			/* who may decide is checked again on each run, as
			 * before the lookup (a reload may change it) */
			if (!req)
				hbd_stage_error(d, c, HB_ENOMEM,
						"out of memory", 0);
			else if (op_allowed(d, c, op_find("decide")))
				hbd_decide(d, c, req, t->user ? t->user : "");
			hb_doc_scope_end();
			hb_arena_reset(&d->scratch);
		}
		cJSON_Delete(req);
	}
	hbd_task_free(t);
	hbd_conn_resume(c);
}

/*
 * Whether c's user name is known; if not, and not cached either, a
 * worker looks it up and req runs when it is done (hbd_lookup_done()): the
 * loop never waits on NSS for a new caller.  take_conn() names a
 * caller whose uid is cached; a ping needs no name.
 */
static int conn_named(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	int rc;

	if (c->named)
		return 1;
	rc = hbd_pw_cached(d, c->uid, c->user, sizeof(c->user), NULL);
	if (rc == HB_EAGAIN) {
		hbd_lookup_task(d, c, req, c->uid, 1);
		return 0;
	}
	if (rc)
		c->user[0] = '\0';
	c->named = 1;
	return 1;
}

/* One request: its op looked up once, then run if c may call it. */
void hbd_dispatch(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	const struct op *op = op_of(req);

	d->nrequests++;
	if (op && (op->flags & OP_NONAME))
		op->run(d, c, req);
	else if (conn_named(d, c, req))
		dispatch_named(d, c, req, op);
}
