/*
 * ckpt.c - a burst job's checkpoint directory, mirrored through S3.
 *
 * Before the job starts on the cluster, its directory on the shared
 * filesystem is pushed to the job's location under checkpoints.url (the
 * init container the translator adds pulls it into the pods).  When the
 * job is over, the newest complete checkpoint there (the one the pods
 * pushed last) is pulled back into the directory.  docs/checkpoints.md
 * says it for users.
 *
 * The daemon is root and the directory is its user's: the S3 part runs
 * here with the daemon's own credentials (AWS_* of its environment, or
 * root's credentials file), the filesystem part in the agent
 * (hb_mirror_agent_spawn()), which runs as the user.  Both run on a
 * worker; the loop records what happened as the job's events
 * (hbd_ckpt_audit()), which `hpcbridge status` shows.
 *
 * With a rate card, what S3 holds at the location is charged as storage
 * (hbd_meter_storage()): measured after each push and pull (retention's
 * count, or a listing), and every checkpoints.bill_interval for every
 * location that held bytes (hbd_ckpt_bill()), so that storage is
 * charged for as long as S3 keeps it, the job over or not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "gateway/mirror/usage.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/log.h"
#include "hpcbridge/mirror.h"
#include "hpcbridge/user.h"

/* An agent's answer to one request; a scan of a big tree takes long. */
#define AGENT_TIMEOUT_MS (10 * 60 * 1000)

/* The directory and location of a job's checkpoints, the very ones its
 * pods get (hb_k8s_ckpt_dir(), hb_k8s_ckpt_key()): 0, or HB_ENOENT when
 * it has none (no checkpoints.url, no directory, one the translator
 * refused). */
static int where(const struct hb_config *cfg, const struct hb_jobspec *spec,
		 uid_t uid, struct hbd_ckpt *r)
{
	char key[HB_K8S_CKPT_KEY_MAX];

	if (!cfg->k8s.ckpt_url || hb_k8s_ckpt_dir(&cfg->k8s, spec, r->dir) ||
	    hb_k8s_ckpt_key((int64_t)uid, r->dir, key))
		return HB_ENOENT;
	snprintf(r->url, sizeof(r->url), "%s/%s", cfg->k8s.ckpt_url, key);
	return 0;
}

static int s3_of(const struct hb_config *cfg, struct hb_s3 **s3,
		 struct hb_err *err)
{
	struct hb_s3_opts o = { .endpoint = cfg->k8s.ckpt_endpoint,
				.region = cfg->k8s.ckpt_region };

	return hb_s3_new(&o, s3, err);
}

static int agent_of(const struct hbd_ckpt *r, uid_t uid, gid_t gid,
		    struct hb_mirror_agent **a, struct hb_err *err)
{
	gid_t *groups = NULL;
	size_t n = 0;
	int rc;

	if ((rc = hb_user_lookup(uid, gid, &groups, &n, NULL, err)))
		return rc;
	rc = hb_mirror_agent_spawn("/proc/self/exe", r->dir, uid, gid, groups,
				   n, AGENT_TIMEOUT_MS, a, err);
	free(groups);
	return rc;
}

/* opts.open_file for a push: the agent opens the file, as the user. */
static int open_by_agent(void *ctx, const struct hb_ckpt_file *f,
			 struct hb_err *err)
{
	return hb_mirror_agent_open(ctx, f->path, f->size, err);
}

/* After a push or a pull, with a rate card: what S3 holds at the
 * location now, for its storage charge (retention measures it too).  A
 * failure is a warning: the push or pull stands. */
static void measure(const struct hb_config *cfg, struct hb_s3 *s3,
		    struct hbd_ckpt *r)
{
	struct hb_err err = { 0 };

	if (!cfg->chargeback_ratecard)
		return;
	if (hb_mirror_usage(s3, r->url, &r->stored_bytes, NULL, &err)) {
		hb_log(HB_LOG_WARN, "%s: not measured for its storage: %s",
		       r->url, err.msg);
		return;
	}
	r->measured = 1;
}

static void finish(struct hbd_ckpt *r, const char *what, int rc,
		   const struct hb_err *err)
{
	r->rc = rc;
	if (what != r->event)
		snprintf(r->event, sizeof(r->event), "%s", what);
	if (rc)
		snprintf(r->why, sizeof(r->why), "%s", err->msg);
}

int hbd_ckpt_push(const struct hb_config *cfg, const char *job, uid_t uid,
		  gid_t gid, const struct hb_jobspec *spec, struct hbd_ckpt *r,
		  struct hb_err *err)
{
	struct hb_mirror_opts o = { .job = job, .open_file = open_by_agent };
	struct hb_mirror_stats st = { 0 };
	struct hb_mirror_agent *a = NULL;
	struct hb_ckpt_manifest *m = NULL;
	struct hb_s3 *s3 = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	if (where(cfg, spec, uid, r))
		return 0;
	if ((rc = agent_of(r, uid, gid, &a, err)))
		goto out;
	rc = hb_mirror_agent_scan(a, job, &m, err);
	if (rc == HB_ENOENT || (!rc && !m->nfiles)) {
		/* Nothing to resume from: the job starts afresh. */
		snprintf(r->event, sizeof(r->event), "ckpt_none");
		rc = 0;
		goto out;
	}
	if (rc || (rc = s3_of(cfg, &s3, err)))
		goto out;
	o.tree = m;
	o.open_ctx = a;
	rc = hb_mirror_push(s3, r->url, r->dir, &o, &st, err);
	if (!rc) {
		snprintf(r->id, sizeof(r->id), "%s", st.id);
		r->files = st.files;
		r->bytes = st.bytes;
		r->moved_files = st.sent_files;
		r->moved_bytes = st.sent_bytes;
		r->unchanged = st.unchanged;
		measure(cfg, s3, r);
	}
out:
	finish(r, r->event[0] ? r->event : "ckpt_push", rc, err);
	hb_ckpt_manifest_free(m);
	hb_mirror_agent_free(a);
	hb_s3_free(s3);
	return rc;
}

/* hb_mirror_agent_src_fn: a file's bytes from its object. */
struct pull_src {
	struct hb_s3 *s3;
	const char *url;
};

static int from_s3(void *ctx, const struct hb_ckpt_file *f, hb_s3_sink_fn sink,
		   void *arg, struct hb_err *err)
{
	struct pull_src *ps = ctx;

	return hb_mirror_object_get(ps->s3, ps->url, f, sink, arg, err);
}

/* Keep the newest checkpoints; what stays is what storage holds for the
 * job's directory.  A failure is a warning: the pull stands. */
static void retain(const struct hb_config *cfg, struct hb_s3 *s3,
		   struct hbd_ckpt *r)
{
	struct hb_mirror_opts o = { .gc_grace_s = -1 };
	struct hb_mirror_stats st = { 0 };
	struct hb_err err = { 0 };

	if (hb_mirror_retain(s3, r->url, cfg->k8s.ckpt_keep, &o, &st, &err)) {
		hb_log(HB_LOG_WARN, "%s: retention: %s", r->url, err.msg);
		return;
	}
	r->kept_checkpoints = cfg->k8s.ckpt_keep;
	r->removed = st.removed_checkpoints;
	r->stored_bytes = st.prefix_bytes;
	r->measured = 1;
}

int hbd_ckpt_pull(const struct hb_config *cfg, const char *job, uid_t uid,
		  gid_t gid, const struct hb_jobspec *spec, struct hbd_ckpt *r,
		  struct hb_err *err)
{
	struct hb_ckpt_mat_stats ms = { 0 };
	struct hb_ckpt_manifest *m = NULL;
	struct hb_mirror_agent *a = NULL;
	struct pull_src ps = { 0 };
	struct hb_s3 *s3 = NULL;
	struct hb_buf json;
	int rc;

	(void)job;
	memset(r, 0, sizeof(*r));
	hb_buf_init(&json, HB_CKPT_MANIFEST_MAX);
	if (where(cfg, spec, uid, r))
		return 0;
	if ((rc = s3_of(cfg, &s3, err)))
		goto out;
	rc = hb_mirror_manifest_get(s3, r->url, NULL, &m, r->id, err);
	if (rc == HB_ENOENT) {
		snprintf(r->event, sizeof(r->event), "ckpt_none");
		rc = 0;
		goto out;
	}
	/* The agent reads it again, as its user's input. */
	if (!rc && (rc = hb_ckpt_manifest_write(m, &json)))
		hb_err_set(err, rc, NULL, 0, "%s: the manifest is too big",
			   r->url);
	if (rc || (rc = agent_of(r, uid, gid, &a, err)))
		goto out;
	ps.s3 = s3;
	ps.url = r->url;
	rc = hb_mirror_agent_put(a, json.data, json.len, from_s3, &ps, &ms,
				 err);
	r->files = ms.fetched + ms.kept;
	r->bytes = ms.fetched_bytes + ms.kept_bytes;
	r->moved_files = ms.fetched;
	r->moved_bytes = ms.fetched_bytes;
	if (!rc && cfg->k8s.ckpt_keep)
		retain(cfg, s3, r);
	/* what the pods pushed is measured with or without retention */
	if (!rc && !r->measured)
		measure(cfg, s3, r);
out:
	finish(r, r->event[0] ? r->event : "ckpt_pull", rc, err);
	hb_ckpt_manifest_free(m);
	hb_mirror_agent_free(a);
	hb_s3_free(s3);
	hb_buf_free(&json);
	return rc;
}

/* Jobs followed at once; past that, the oldest is forgotten (its next
 * poll starts its clock again). */
#define HBD_CKPT_TRIPS 4096

int hbd_ckpt_due(struct hb_daemon *d, const char *id, int done)
{
	int64_t now = hb_clock_mono_ms();
	uint32_t every = d->cfg.k8s.ckpt_interval;
	size_t i;

	for (i = 0; i < d->ntrips && strcmp(d->trips[i].id, id); i++)
		;
	if (done || !d->cfg.k8s.ckpt_url || !every) {
		if (i < d->ntrips)
			d->trips[i] = d->trips[--d->ntrips];
		return 0;
	}
	if (i < d->ntrips) {
		if (now - d->trips[i].at_ms < (int64_t)every * 1000)
			return 0;
		d->trips[i].at_ms = now;
		return 1;
	}
	if (!d->trips &&
	    !(d->trips = calloc(HBD_CKPT_TRIPS, sizeof(*d->trips))))
		return 0;
	if (d->ntrips == HBD_CKPT_TRIPS)
		d->trips[0] = d->trips[--d->ntrips];
	snprintf(d->trips[d->ntrips].id, sizeof(d->trips[0].id), "%s", id);
	d->trips[d->ntrips++].at_ms = now;
	return 0;
}

int hbd_ckpt_audit(struct hb_daemon *d, const char *job_id,
		   const struct hbd_ckpt *r, const char *side,
		   struct hb_err *err)
{
	int push = !strcmp(r->event, "ckpt_push");
	cJSON *o;
	int rc = 0;

	if (!r->event[0] || !strcmp(r->event, "ckpt_none"))
		return 0;
	/* A trip while the job runs that brought nothing new is no event:
	 * one every checkpoints.interval would bury the job's history.  What
	 * S3 holds is still metered. */
	if (r->periodic && !r->rc && !r->moved_files)
		goto meter;
	if (!(o = cJSON_CreateObject()))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	hbd_add_str_or_null(o, "checkpoint", r->id[0] ? r->id : NULL);
	cJSON_AddStringToObject(o, "from", push ? r->dir : r->url);
	cJSON_AddStringToObject(o, "to", push ? r->url : r->dir);
	cJSON_AddStringToObject(o, "side", side);
	cJSON_AddNumberToObject(o, "files", (double)r->files);
	cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(o, "moved_bytes", (double)r->moved_bytes);
	if (r->unchanged)
		cJSON_AddBoolToObject(o, "unchanged", 1);
	if (r->kept_checkpoints)
		cJSON_AddNumberToObject(o, "removed_checkpoints",
					(double)r->removed);
	if (r->measured)
		cJSON_AddNumberToObject(o, "stored_bytes",
					(double)r->stored_bytes);
	if (r->rc)
		cJSON_AddStringToObject(o, "error", r->why);
	rc = hbd_audit(d, 0, "", "", r->rc ? "ckpt_failed" : r->event, job_id,
		       o, err);
	cJSON_Delete(o);
meter:
	/* the storage the location holds now: charged to this job on */
	if (!rc && !r->rc && r->measured)
		rc = hbd_meter_storage(d, job_id, r->url, r->stored_bytes,
				       hb_clock_wall_ms(), err);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Storage, measured every checkpoints.bill_interval                   */
/* ------------------------------------------------------------------ */

/* The locations to measure, and what the worker found.  The task owns
 * copies of everything: a reload may free the configuration. */
struct bill_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	char *endpoint, *region;
	char **urls;
	size_t n, cap;
	uint64_t *bytes;
	int64_t *at_ms;	   /* when each was measured; 0: it failed */
	struct hb_err err; /* the first failure */
	size_t failed;
};

static void bill_free(struct bill_task *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->urls[i]);
	free(b->urls);
	free(b->bytes);
	free(b->at_ms);
	free(b->endpoint);
	free(b->region);
	free(b);
}

static int bill_add(const struct hb_storage_meter *m, void *arg)
{
	struct bill_task *b = arg;

	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		char **v = realloc(b->urls, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		b->urls = v;
		b->cap = cap;
	}
	if (!(b->urls[b->n] = strdup(m->url)))
		return HB_ENOMEM;
	b->n++;
	return 0;
}

static void bill_run(struct hb_task *ht)
{
	struct bill_task *b = (struct bill_task *)ht;
	struct hb_s3_opts o = { .endpoint = b->endpoint, .region = b->region };
	struct hb_s3 *s3 = NULL;
	struct hb_err err = { 0 };

	if (hb_s3_new(&o, &s3, &b->err)) {
		b->failed = b->n;
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		memset(&err, 0, sizeof(err));
		if (hb_mirror_usage(s3, b->urls[i], &b->bytes[i], NULL, &err)) {
			if (!b->failed++)
				b->err = err;
			continue;
		}
		b->at_ms[i] = hb_clock_wall_ms();
	}
	hb_s3_free(s3);
}

static void bill_done(struct hb_task *ht)
{
	struct bill_task *b = (struct bill_task *)ht;
	struct hb_daemon *d = b->d;
	struct hb_err err = { 0 };

	d->billing = 0;
	if (b->failed)
		hb_log(HB_LOG_WARN,
		       "checkpoint storage: %zu of %zu locations not measured "
		       "(charged at the next measurement): %s",
		       b->failed, b->n, b->err.msg);
	/* the charges join the iteration's batch: one commit for them all,
	 * not one per location on the loop */
	if (hbd_txn(d, &err)) {
		hb_log(HB_LOG_WARN, "checkpoint storage: %s", err.msg);
		bill_free(b);
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (!b->at_ms[i])
			continue;
		if (hbd_meter_storage(d, NULL, b->urls[i], b->bytes[i],
				      b->at_ms[i], &err)) {
			hb_log(HB_LOG_ERROR, "checkpoint storage: %s", err.msg);
			hbd_batch_abort(d, &err);
			break;
		}
	}
	bill_free(b);
}

void hbd_ckpt_bill(struct hb_daemon *d, int64_t now)
{
	uint32_t every = d->cfg.k8s.ckpt_bill_interval;
	struct bill_task *b;
	struct hb_err err = { 0 };

	if (d->stopping || !d->pool || d->billing || !every ||
	    !d->card.nversions ||
	    (d->last_bill && now - d->last_bill < (int64_t)every * 1000))
		return;
	d->last_bill = now;
	if (!(b = calloc(1, sizeof(*b))))
		return;
	if (hb_store_storage_list(d->st, NULL, 1, bill_add, b, &err)) {
		hb_log(HB_LOG_WARN, "checkpoint storage: %s",
		       err.msg[0] ? err.msg : "out of memory");
		bill_free(b);
		return;
	}
	b->bytes = calloc(b->n ? b->n : 1, sizeof(*b->bytes));
	b->at_ms = calloc(b->n ? b->n : 1, sizeof(*b->at_ms));
	b->endpoint = d->cfg.k8s.ckpt_endpoint
			      ? strdup(d->cfg.k8s.ckpt_endpoint)
			      : NULL;
	b->region =
		d->cfg.k8s.ckpt_region ? strdup(d->cfg.k8s.ckpt_region) : NULL;
	if (!b->n || !b->bytes || !b->at_ms ||
	    (d->cfg.k8s.ckpt_endpoint && !b->endpoint) ||
	    (d->cfg.k8s.ckpt_region && !b->region)) {
		bill_free(b);
		return;
	}
	b->t.run = bill_run;
	b->t.done = bill_done;
	b->d = d;
	d->billing = 1;
	if (hb_pool_submit(d->pool, &b->t)) {
		d->billing = 0;
		bill_free(b);
	}
}
