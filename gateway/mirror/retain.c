/*
 * retain.c - hb_mirror_retain(): keep the newest N checkpoints, delete
 * the older manifests, then the objects no remaining manifest names, and
 * count the bytes that stay.  Multipart uploads left unfinished under
 * objects/ (a push that was killed) are aborted once past the grace.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/mirror/mirror_int.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/timefmt.h"

struct retain {
	struct mir *m;
	struct mir_ids ids;
	size_t ndel;		/* ids.v[0..ndel) were deleted */
	size_t unread;		/* kept manifests that do not read */
	struct mir_digests named; /* what the remaining manifests name */
	char objdir[MIR_KEY_MAX], ckdir[MIR_KEY_MAX];
	size_t objlen, cklen;
	int64_t now;
	/* Objects to delete. */
	uint8_t (*gone)[32];
	size_t ngone, cap;
	/* Unfinished uploads to abort: the digest of their key, their id. */
	struct stale {
		uint8_t d[32];
		char *id;
	} *stale;
	size_t nstale, stale_cap;
	uint64_t bytes;		/* what stays */
};

static int deleted_id(const struct retain *r, const char *name)
{
	for (size_t i = 0; i < r->ndel; i++)
		if (!strncmp(name, r->ids.v[i].id, HB_MIRROR_ID_LEN) &&
		    !strcmp(name + HB_MIRROR_ID_LEN, ".json"))
			return 1;
	return 0;
}

/* Whether an object listed at lm (ISO 8601) is older than the grace. */
static int old_enough(const struct retain *r, const char *lm)
{
	int64_t t;

	if (!r->m->o.gc_grace_s)
		return 1;
	if (!lm || hb_time_rfc3339_parse(lm, &t))
		return 0; /* no age known: kept */
	return r->now - t >= r->m->o.gc_grace_s;
}

static int sort_out(const struct hb_s3_entry *e, void *arg)
{
	struct retain *r = arg;
	const char *k = e->key;
	uint8_t d[32];

	if (!r->unread && !strncmp(k, r->objdir, r->objlen) &&
	    mir_hex_digest(k + r->objlen, strlen(k + r->objlen), d) &&
	    mir_digests_find(&r->named, d) < 0 &&
	    old_enough(r, e->last_modified)) {
		if (r->ngone == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 256;
			void *v = realloc(r->gone, cap * sizeof(*r->gone));

			if (!v)
				return HB_ENOMEM;
			r->gone = v;
			r->cap = cap;
		}
		/* The key is rebuilt from the digest, not taken as listed. */
		memcpy(r->gone[r->ngone++], d, 32);
		return 0;
	}
	/* A manifest just deleted may still be listed. */
	if (!strncmp(k, r->ckdir, r->cklen) && deleted_id(r, k + r->cklen))
		return 0;
	r->bytes += e->size;
	return 0;
}

/* An upload under objects/, begun before the grace, that no push will
 * complete: killed, or failed without aborting. */
static int sort_upload(const struct hb_s3_upload *u, void *arg)
{
	struct retain *r = arg;
	const char *k = u->key;
	uint8_t d[32];

	if (strncmp(k, r->objdir, r->objlen) ||
	    !mir_hex_digest(k + r->objlen, strlen(k + r->objlen), d) ||
	    !old_enough(r, u->initiated))
		return 0;
	if (r->nstale == r->stale_cap) {
		size_t cap = r->stale_cap ? 2 * r->stale_cap : 16;
		void *v = realloc(r->stale, cap * sizeof(*r->stale));

		if (!v)
			return HB_ENOMEM;
		r->stale = v;
		r->stale_cap = cap;
	}
	if (!(r->stale[r->nstale].id = strdup(u->upload_id)))
		return HB_ENOMEM;
	memcpy(r->stale[r->nstale++].d, d, 32);
	return 0;
}

static int abort_task(void *ctx, size_t i, unsigned worker,
		      struct hb_err *err)
{
	struct retain *r = ctx;
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int rc;

	(void)worker;
	mir_key_object(r->m, r->stale[i].d, key);
	rc = hb_s3_mpu_abort(r->m->s3, r->m->u.bucket, key, r->stale[i].id,
			     &e);
	/* Completed or aborted since the listing: nothing left to do. */
	if (rc == HB_ENOENT)
		return 0;
	return rc ? hb_err_set(err, rc, NULL, 0, "%s", e.msg) : 0;
}

static int delete_task(void *ctx, size_t i, unsigned worker,
		       struct hb_err *err)
{
	struct retain *r = ctx;
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int rc;

	(void)worker;
	mir_key_object(r->m, r->gone[i], key);
	rc = hb_s3_delete(r->m->s3, r->m->u.bucket, key, &e);
	return rc ? hb_err_set(err, rc, NULL, 0, "%s", e.msg) : 0;
}

/*
 * Read the manifests newest first: the newest keep that read are kept,
 * and so is every one that does not (it may be a later version's, and a
 * hostile one must not make the good ones go); the older ones are
 * deleted.  The objects a manifest that does not read names are not
 * known, so none is deleted then (r->unread).
 */
static int manifests(struct retain *r, unsigned keep, struct hb_err *err)
{
	struct mir *m = r->m;
	size_t good = 0, i;
	int rc = mir_list_ids(m, &r->ids, err);

	for (i = r->ids.n; !rc && i > 0 && (!keep || good < keep); i--) {
		struct hb_ckpt_manifest *man;
		struct hb_err e = { 0 };

		if (mir_read_manifest(m, r->ids.v[i - 1].id, &man, NULL, &e)) {
			if (e.code == HB_ENOMEM)
				return hb_err_set(err, e.code, NULL, 0, "%s",
						  e.msg);
			mir_problem(m, r->ids.v[i - 1].id, e.msg);
			r->unread++;
			continue;
		}
		good++;
		rc = mir_digests_add(&r->named, man, err);
		hb_ckpt_manifest_free(man);
	}
	if (!rc && keep && good == keep)
		r->ndel = i; /* ids.v[0..i) are older than the last kept */
	for (size_t k = 0; !rc && k < r->ndel; k++) {
		char key[MIR_KEY_MAX];
		struct hb_err e = { 0 };

		mir_key_manifest(m, r->ids.v[k].id, key);
		rc = hb_s3_delete(m->s3, m->u.bucket, key, &e);
		if (rc)
			hb_err_set(err, rc, NULL, 0, "%s", e.msg);
	}
	mir_digests_seal(&r->named);
	if (!rc && r->unread)
		mir_problem(m, m->url,
			    "a checkpoint that does not read is kept, and "
			    "every object with it");
	return rc;
}

int mir_retain(struct mir *m, unsigned keep, struct hb_mirror_stats *st,
	       struct hb_err *err)
{
	struct retain r = { .m = m };
	char top[MIR_KEY_MAX];
	int rc;

	r.now = hb_clock_wall_ms() / 1000;
	mir_key_dir(m, "objects/", r.objdir);
	mir_key_dir(m, "checkpoints/", r.ckdir);
	mir_key_dir(m, "", top);
	r.objlen = strlen(r.objdir);
	r.cklen = strlen(r.ckdir);
	rc = manifests(&r, keep, err);
	st->removed_checkpoints = r.ndel;
	if (!rc)
		rc = hb_s3_list(m->s3, m->u.bucket, top[0] ? top : NULL,
				sort_out, &r, err);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "%s: out of memory", m->url);
	if (!rc)
		rc = mir_pool(m->o.jobs, r.ngone, delete_task, &r, err);
	if (!rc)
		rc = hb_s3_mpu_list(m->s3, m->u.bucket, r.objdir, sort_upload,
				    &r, err);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "%s: out of memory", m->url);
	if (!rc)
		rc = mir_pool(m->o.jobs, r.nstale, abort_task, &r, err);
	if (!rc) {
		st->removed_objects = r.ngone;
		st->aborted_uploads = r.nstale;
		st->prefix_bytes = r.bytes;
	}
	for (size_t i = 0; i < r.nstale; i++)
		free(r.stale[i].id);
	free(r.stale);
	mir_ids_free(&r.ids);
	mir_digests_free(&r.named);
	free(r.gone);
	return rc;
}

int hb_mirror_retain(struct hb_s3 *s3, const char *url, unsigned keep,
		     const struct hb_mirror_opts *opts,
		     struct hb_mirror_stats *st, struct hb_err *err)
{
	struct mir m;
	int rc = mir_open(&m, s3, url, opts, st, err);

	if (!rc)
		rc = mir_retain(&m, keep, m.st, err);
	mir_close(&m);
	return rc;
}
