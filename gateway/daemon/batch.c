/*
 * batch.c - the batch of one loop iteration: its store transaction, the
 * replies and tasks staged until the transaction is committed and synced
 * (group commit, the sync off the loop), the framing of replies, and the
 * checkpoints a worker makes.
 *
 * Replies are not sent at once: they are staged, and at the end of the
 * iteration the store transaction that holds every write of the iteration
 * is committed (one sync for all of them), and only then are the staged
 * replies queued on their connections.  When the commit fails, every reply
 * that depended on it becomes an ESTORE error: nobody is told about a
 * decision that is not on disk.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"

/* ------------------------------------------------------------------ */
/* The batch: one transaction, staged replies                          */
/* ------------------------------------------------------------------ */

int hbd_txn(struct hb_daemon *d, struct hb_err *err)
{
	int rc;

	if (d->txn_open)
		return 0;
	rc = hb_store_begin(d->st, err);
	if (rc == 0)
		d->txn_open = 1;
	return rc;
}

/* A write failed in the middle of a request: undo the whole batch, and
 * fail every reply that needed it. */
void hbd_batch_abort(struct hb_daemon *d, const struct hb_err *err)
{
	struct staged *s;

	if (!d->txn_open)
		return;
	hb_store_rollback(d->st);
	d->txn_open = 0;
	d->spend_dirty = 1; /* what the batch counted did not happen */
	for (s = d->staged; s; s = s->next)
		if (s->needs_commit)
			s->failed = 1;
	hb_log(HB_LOG_ERROR, "store write failed, batch rolled back: %s",
	       err && err->msg[0] ? err->msg : "unknown error");
}

static struct staged *stage(struct hb_daemon *d, struct conn *c)
{
	struct staged *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c = c;
	c->nstaged++;
	*d->staged_tail = s;
	d->staged_tail = &s->next;
	return s;
}

/* The reply framed: the header, filled in once the JSON after it is
 * written.  NULL if it does not fit the protocol, or out of memory. */
char *hbd_frame_json(const cJSON *reply, size_t *len)
{
	unsigned char hdr[HB_PROTO_HDR] = { 0 };
	struct hb_buf b;

	hb_buf_init(&b, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	if (hb_buf_append(&b, hdr, sizeof(hdr)) ||
	    hb_doc_write_json_compact(reply, &b) ||
	    hb_proto_header(hdr, HB_PROTO_REPLY, b.len - HB_PROTO_HDR)) {
		hb_buf_free(&b);
		return NULL;
	}
	memcpy(b.data, hdr, sizeof(hdr));
	*len = b.len;
	return hb_buf_steal(&b);
}

/* A framed error reply, or NULL when out of memory. */
char *hbd_frame_error(int code, const char *msg, size_t *len)
{
	cJSON *r = hb_proto_error(code, msg);
	char *f = r ? hbd_frame_json(r, len) : NULL;

	cJSON_Delete(r);
	return f;
}

/* Stage the framed reply f of len bytes (taken) for c.  NULL: one that
 * could not be written, too large (too_big) or out of memory, becomes an
 * error reply.  The entry, or NULL when out of memory (c then closes). */
struct staged *hbd_stage_frame(struct hb_daemon *d, struct conn *c, char *f,
			       size_t len, int too_big, int needs_commit,
			       int close_after)
{
	struct staged *s = stage(d, c);

	if (!s) {
		free(f);
		c->closing = 1;
		return NULL;
	}
	if (!f)
		f = hbd_frame_error(
			too_big ? HB_ETOOBIG : HB_ENOMEM,
			too_big ? "the reply would exceed the protocol's "
				  "1 MiB; ask for less (limit)"
				: "out of memory",
			&len);
	s->reply = f;
	s->len = f ? len : 0;
	s->needs_commit = needs_commit;
	s->close_after = close_after || !f;
	c->staged_len += s->len;
	return s;
}

/* Stage reply (taken) for c.  A reply too large for the protocol becomes
 * an ETOOBIG error. */
void hbd_stage_reply(struct hb_daemon *d, struct conn *c, cJSON *reply,
		     int needs_commit, int close_after)
{
	size_t len = 0;
	char *f = reply ? hbd_frame_json(reply, &len) : NULL;

	cJSON_Delete(reply);
	hbd_stage_frame(d, c, f, len, reply != NULL, needs_commit, close_after);
}

/*
 * A reply written with the streaming writer, as hbd_frame_json() writes a
 * tree: hbd_reply_begin() reserves the frame's header and opens the object
 * with "ok":true (NULL, and b freed, when out of memory); hbd_reply_end()
 * closes it, fills in the header and frees e and b.  The framed reply, or
 * NULL (out of memory, or past the protocol's size).
 */
struct hb_emit *hbd_reply_begin(struct hb_buf *b)
{
	unsigned char hdr[HB_PROTO_HDR] = { 0 };
	struct hb_emit *e = NULL;

	hb_buf_init(b, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	if (!hb_buf_reserve(b, 511) && !hb_buf_append(b, hdr, sizeof(hdr)) &&
	    (e = hb_emit_new(HB_EMIT_JSON_COMPACT, b))) {
		hb_emit_obj(e, NULL);
		hb_emit_bool(e, "ok", 1);
	} else {
		hb_buf_free(b);
	}
	return e;
}

char *hbd_reply_end(struct hb_emit *e, struct hb_buf *b, size_t *len)
{
	char *f = NULL;

	if (e && !hb_emit_end(e) && !hb_emit_done(e) &&
	    !hb_proto_header((unsigned char *)b->data, HB_PROTO_REPLY,
			     b->len - HB_PROTO_HDR)) {
		*len = b->len;
		f = hb_buf_steal(b);
	}
	hb_emit_free(e);
	hb_buf_free(b);
	return f;
}

void hbd_stage_error(struct hb_daemon *d, struct conn *c, int code,
		     const char *msg, int close_after)
{
	hbd_stage_reply(d, c, hb_proto_error(code, msg), 0, close_after);
}

/* Stage t to be launched after the commit (needs_commit: only if the
 * commit succeeds); c waits for it. */
void hbd_stage_task(struct hb_daemon *d, struct conn *c, struct task *t,
		    int needs_commit)
{
	struct staged *s = stage(d, c);

	if (!s) {
		hbd_task_free(t);
		c->closing = 1;
		return;
	}
	s->task = t;
	s->needs_commit = needs_commit;
	c->busy = 1;
}

/* ------------------------------------------------------------------ */
/* Checkpoints, off the loop                                           */
/* ------------------------------------------------------------------ */

/*
 * Checkpoints, off the loop.  Left to SQLite, the commit that takes the
 * WAL past its limit (1,000 pages) also copies them into the database and
 * syncs both files, and the requests of that batch wait for it (the tail
 * of the decision round trip).  Here a worker does it through a handle of its
 * own once the WAL reaches ckpt_pages; the loop's handle still checkpoints
 * inline, but only past CKPT_INLINE_FACTOR times that (the worker cannot
 * finish one while writes keep coming, so the WAL would otherwise only
 * grow; by then most of it is copied already).  CKPT_INLINE_FACTOR is in
 * daemon_int.h: hb_daemon_new() sets SQLite's limit with it.
 */

struct ckpt_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	int rc, left;
	struct hb_err err;
};

static void ckpt_run(struct hb_task *ht)
{
	struct ckpt_task *ct = (struct ckpt_task *)ht;
	struct hb_daemon *d = ct->d;

	/* only one checkpoint task at a time touches ckpt_st; the loop's
	 * handle is only read for the file it has open, which never changes
	 * (a state file moved away is not created again) */
	if (!d->ckpt_st)
		ct->rc = hb_store_reopen(d->st, &d->ckpt_st, &ct->err);
	if (!ct->rc)
		ct->rc = hb_store_checkpoint(d->ckpt_st, &ct->left, &ct->err);
}

static void ckpt_done(struct hb_task *ht)
{
	struct ckpt_task *ct = (struct ckpt_task *)ht;
	struct hb_daemon *d = ct->d;

	d->checkpointing = 0;
	if (ct->rc)
		hb_log(HB_LOG_WARN, "checkpoint: %s", ct->err.msg);
	else
		d->ncheckpoints++;
	free(ct);
}

static void ckpt_maybe(struct hb_daemon *d)
{
	int pages = hb_store_wal_pages(d->st);
	struct ckpt_task *ct;

	if (pages < d->ckpt_mark)
		d->ckpt_mark = 0; /* the WAL started again */
	/* every ckpt_pages new pages, as SQLite would: one more right after
	 * the last would only add syncs */
	if (d->checkpointing || d->stopping || !d->pool ||
	    pages < d->ckpt_mark + d->ckpt_pages)
		return;
	d->ckpt_mark = pages;
	if (!(ct = calloc(1, sizeof(*ct))))
		return; /* the inline checkpoint stays */
	ct->t.run = ckpt_run;
	ct->t.done = ckpt_done;
	ct->d = d;
	d->checkpointing = 1;
	if (hb_pool_submit(d->pool, &ct->t)) {
		d->checkpointing = 0;
		free(ct);
	}
}

/* ------------------------------------------------------------------ */
/* Delivery and group commit                                           */
/* ------------------------------------------------------------------ */

/* Test hook: with $HPCBRIDGE_FAILPOINT set to name, the daemon dies here
 * as if killed (crash-recovery tests). */
void hbd_failpoint(const struct hb_daemon *d, const char *name)
{
	if (d->failpoint && !strcmp(d->failpoint, name)) {
		hb_log(HB_LOG_WARN, "failpoint %s: the daemon kills itself",
		       name);
		raise(SIGKILL);
	}
}

/* Deliver a settled list, in order: replies, and tasks launched now
 * that what they need is on disk. */
static void deliver(struct hb_daemon *d, struct staged *list)
{
	struct staged *s;

	while ((s = list)) {
		struct conn *c = s->c;
		int burst = s->burst;

		list = s->next;
		if (burst) /* committed, synced, not told */
			hbd_failpoint(d, "burst-committed");
		c->nstaged--;
		c->staged_len -= s->len;
		if (s->task && s->failed) {
			/* the job it was for was never recorded */
			s->task->c = NULL;
			hbd_task_free(s->task);
			c->busy = 0;
			s->reply = hbd_frame_error(HB_ESTORE,
						   "the state store failed; "
						   "nothing was done",
						   &s->len);
		} else if (s->task) {
			hbd_task_launch(d, s->task);
		} else if (s->failed) {
			free(s->reply);
			s->reply = hbd_frame_error(
				HB_ESTORE,
				"the state store failed; nothing "
				"was recorded",
				&s->len);
		}
		if (s->reply && !c->dead &&
		    hb_buf_append(&c->out, s->reply, s->len))
			c->closing = 1;
		if (!s->task && !s->reply)
			c->closing = 1; /* out of memory */
		if (s->close_after)
			c->closing = 1;
		free(s->reply);
		free(s);
		if (c->dead) {
			hbd_conn_release(c);
			continue;
		}
		hbd_conn_flush(c);
		if (burst) /* told: the proxy is on its way, nothing remote */
			hbd_failpoint(d, "burst-replied");
		/* a connection held back by its unsent replies goes on */
		if (!c->dead && !c->busy)
			hbd_process_conn(c);
	}
}

/*
 * Group commit, with its sync off the loop.  A batch's commit writes the
 * WAL (hb_store_commit_nosync) and its list waits; one sync at a time runs
 * on the sync thread, covering every commit made before it started, and
 * only when it is done is its list delivered.  The loop meanwhile reads,
 * decides and commits the next batch, which the next sync covers.  So no
 * reply and no task goes out before what it depends on is on disk, and
 * the disk's sync time no longer stalls the loop.  A list with nothing
 * committed (a read, an error) still waits if an earlier one does: it may
 * have read what is not yet synced, and replies keep their order.
 *
 * Handing a sync to the thread and back costs two wake-ups (about 0.1 ms
 * on the machines measured), which only pays when other callers have
 * work for the loop meanwhile: a batch of fewer than SYNC_INLINE_MAX
 * replies, with nothing ahead of it, syncs in the loop.
 */
#define SYNC_INLINE_MAX 8
struct sync_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct staged *list; /* delivered once synced */
};

/* Nothing committed is waiting for its sync: what the store holds may be
 * shown to anyone (decisions read from it, Kubernetes status patches). */
int hbd_all_synced(const struct hb_daemon *d)
{
	return !d->sync_busy && !d->waiting;
}

/* Before acting on the store outside a reply: make what it holds durable
 * now, rather than wait behind the lists (under load there always is
 * one). */
void hbd_sync_now(struct hb_daemon *d)
{
	if (!hbd_all_synced(d))
		hb_store_sync(d->st);
}

static void sync_run(struct hb_task *ht)
{
	struct sync_task *sy = (struct sync_task *)ht;

	hb_store_sync(sy->d->st); /* a failure stops the process */
}

static void sync_done(struct hb_task *ht)
{
	struct sync_task *sy = (struct sync_task *)ht;
	struct hb_daemon *d = sy->d;
	struct staged *list = sy->list;

	free(sy);
	d->sync_busy = 0;
	deliver(d, list);
	hbd_sync_kick(d);
}

/* Start a sync for what waits, unless one runs; without the sync thread
 * (it could not start, or the daemon is ending), sync here. */
void hbd_sync_kick(struct hb_daemon *d)
{
	struct sync_task *sy;
	struct staged *list;

	while (!d->sync_busy && d->waiting) {
		list = d->waiting;
		d->waiting = NULL;
		d->waiting_tail = &d->waiting;
		if (d->syncpool && (sy = calloc(1, sizeof(*sy)))) {
			sy->t.run = sync_run;
			sy->t.done = sync_done;
			sy->d = d;
			sy->list = list;
			if (!hb_pool_submit(d->syncpool, &sy->t)) {
				d->sync_busy = 1;
				return;
			}
			free(sy);
		}
		hb_store_sync(d->st);
		deliver(d, list);
	}
}

/* Commit the batch; deliver what it staged once that is on disk. */
static void batch_settle(struct hb_daemon *d)
{
	struct staged *s, *list;
	struct hb_err err = { 0 };
	int wrote = 0, n = 1;

	if (d->txn_open) {
		d->txn_open = 0;
		if (hb_store_commit_nosync(d->st, &err)) {
			hb_log(HB_LOG_ERROR, "store commit failed: %s",
			       err.msg);
			hb_store_rollback(d->st);
			d->spend_dirty = 1;
			for (s = d->staged; s; s = s->next)
				if (s->needs_commit)
					s->failed = 1;
		} else {
			wrote = 1;
			ckpt_maybe(d);
		}
	}
	list = d->staged;
	d->staged = NULL;
	d->staged_tail = &d->staged;
	for (s = list; s && s->next; s = s->next)
		n++;
	/* Synced here: a write no reply waits for (the reconciler's, a
	 * task's result), and a small batch with nothing unsynced before it */
	if (!list || (hbd_all_synced(d) && (!wrote || n < SYNC_INLINE_MAX))) {
		if (wrote)
			hb_store_sync(d->st);
		deliver(d, list);
		return;
	}
	*d->waiting_tail = list;
	d->waiting_tail = &s->next; /* s is the list's last */
	hbd_sync_kick(d);
}

/* End of an iteration: settle until nothing more is staged (delivering
 * may let held-back connections take more requests). */
void hbd_batch_end(struct hb_daemon *d)
{
	while (d->staged || d->txn_open)
		batch_settle(d);
}
