/*
 * list.c - the checkpoints at a location: listing their IDs, reading a
 * manifest and checking it against its ID, picking the one a call is
 * about, and hb_mirror_list().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "gateway/mirror/mirror_int.h"

void mir_sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned len = 32;

	EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

struct ids_walk {
	struct mir *m;
	struct mir_ids *ids;
	const char *dir;
	size_t dirlen;
};

static int add_id(const struct hb_s3_entry *e, void *arg)
{
	struct ids_walk *w = arg;
	const char *name = e->key + w->dirlen;
	size_t n;

	/* The server answers for the prefix it was asked; a key outside it
	 * or not of the form ID.json is named and never used. */
	if (strncmp(e->key, w->dir, w->dirlen) ||
	    (n = strlen(name)) != HB_MIRROR_ID_LEN + 5 ||
	    strcmp(name + HB_MIRROR_ID_LEN, ".json") ||
	    !hb_mirror_id_valid(name, HB_MIRROR_ID_LEN)) {
		char url[MIR_KEY_MAX + 80];

		mir_key_url(w->m, e->key, url, sizeof(url));
		mir_problem(w->m, url, "not a checkpoint manifest "
				       "(checkpoints/ID.json): ignored");
		return 0;
	}
	if (w->ids->n == w->ids->cap) {
		size_t cap = w->ids->cap ? 2 * w->ids->cap : 64;
		struct mir_id *v = realloc(w->ids->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		w->ids->v = v;
		w->ids->cap = cap;
	}
	memcpy(w->ids->v[w->ids->n].id, name, HB_MIRROR_ID_LEN);
	w->ids->v[w->ids->n].id[HB_MIRROR_ID_LEN] = '\0';
	w->ids->v[w->ids->n++].bytes = e->size;
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mir_id *)a)->id,
		      ((const struct mir_id *)b)->id);
}

int mir_list_ids(struct mir *m, struct mir_ids *ids, struct hb_err *err)
{
	char dir[MIR_KEY_MAX];
	struct ids_walk w = { m, ids, dir, 0 };
	int rc;

	memset(ids, 0, sizeof(*ids));
	mir_key_dir(m, "checkpoints/", dir);
	w.dirlen = strlen(dir);
	rc = hb_s3_list(m->s3, m->u.bucket, dir, add_id, &w, err);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "%s: out of memory", m->url);
	if (!rc && ids->n > 1)
		qsort(ids->v, ids->n, sizeof(*ids->v), id_cmp);
	return rc;
}

void mir_ids_free(struct mir_ids *ids)
{
	free(ids->v);
	memset(ids, 0, sizeof(*ids));
}

int mir_read_manifest(struct mir *m, const char *id,
		      struct hb_ckpt_manifest **out, uint64_t *bytes,
		      struct hb_err *err)
{
	char key[MIR_KEY_MAX], name[MIR_KEY_MAX + 80];
	char again[HB_MIRROR_ID_LEN + 1];
	uint8_t d[32];
	struct hb_err e = { 0 };
	struct hb_buf b;
	int rc;

	*out = NULL;
	mir_key_manifest(m, id, key);
	mir_key_url(m, key, name, sizeof(name));
	hb_buf_init(&b, HB_CKPT_MANIFEST_MAX);
	rc = hb_s3_get_buf(m->s3, m->u.bucket, key, 0, 0, NULL, &b, &e);
	if (rc == HB_ENOENT)
		rc = hb_err_set(err, rc, NULL, 0, "%s: no such checkpoint",
				name);
	else if (rc)
		rc = hb_err_set(err, rc, NULL, 0, "%s: %s", name, e.msg);
	if (!rc)
		rc = hb_ckpt_manifest_parse(b.data ? b.data : "", b.len, name,
					    out, err);
	if (!rc) {
		/* The ID is the manifest's time and a digest of its bytes:
		 * a manifest that does not give its own name was changed or
		 * put there by hand. */
		mir_sha256(b.data ? b.data : "", b.len, d);
		mir_make_id((*out)->created, d, again);
		if (strcmp(again, id))
			rc = hb_err_set(err, HB_EINVAL, NULL, 0,
					"%s: its time and bytes give the ID "
					"%s, not its name", name, again);
	}
	if (!rc && bytes)
		*bytes = b.len;
	if (rc) {
		hb_ckpt_manifest_free(*out);
		*out = NULL;
	}
	hb_buf_free(&b);
	return rc;
}

int mir_pick(struct mir *m, char id[HB_MIRROR_ID_LEN + 1],
	     struct hb_ckpt_manifest **out, struct hb_err *err)
{
	struct mir_ids ids;
	int rc;

	if (m->o.checkpoint) {
		snprintf(id, HB_MIRROR_ID_LEN + 1, "%s", m->o.checkpoint);
		return mir_read_manifest(m, id, out, NULL, err);
	}
	rc = mir_list_ids(m, &ids, err);
	if (!rc && !ids.n)
		rc = hb_err_set(err, HB_ENOENT, NULL, 0,
				"%s: no complete checkpoint", m->url);
	if (!rc) {
		memcpy(id, ids.v[ids.n - 1].id, HB_MIRROR_ID_LEN + 1);
		rc = mir_read_manifest(m, id, out, NULL, err);
	}
	mir_ids_free(&ids);
	return rc;
}

static int digest_cmp(const void *a, const void *b)
{
	const struct mir_digest *x = a, *y = b;
	int c = memcmp(x->d, y->d, 32);

	return c ? c : (x->file > y->file) - (x->file < y->file);
}

int mir_digests_add(struct mir_digests *ds, const struct hb_ckpt_manifest *m,
		    struct hb_err *err)
{
	struct mir_digest *v;

	if (!m->nfiles)
		return 0;
	v = realloc(ds->v, (ds->n + m->nfiles) * sizeof(*v));
	if (!v)
		return hb_err_set(err, HB_ENOMEM, NULL, 0,
				  "digests of %zu files: out of memory",
				  ds->n + m->nfiles);
	ds->v = v;
	for (size_t i = 0; i < m->nfiles; i++) {
		memcpy(v[ds->n].d, m->files[i].sha256, 32);
		v[ds->n++].file = i;
	}
	return 0;
}

void mir_digests_seal(struct mir_digests *ds)
{
	size_t n = 0;

	if (!ds->n)
		return;
	qsort(ds->v, ds->n, sizeof(*ds->v), digest_cmp);
	/* Files with the same contents share one object: keep the first
	 * file of each digest. */
	for (size_t k = 0; k < ds->n; k++)
		if (!n || memcmp(ds->v[n - 1].d, ds->v[k].d, 32))
			ds->v[n++] = ds->v[k];
	ds->n = n;
}

int mir_digests_of(const struct hb_ckpt_manifest *m, struct mir_digests *ds,
		   struct hb_err *err)
{
	int rc;

	memset(ds, 0, sizeof(*ds));
	if ((rc = mir_digests_add(ds, m, err)))
		return rc;
	mir_digests_seal(ds);
	return 0;
}

void mir_digests_free(struct mir_digests *ds)
{
	free(ds->v);
	memset(ds, 0, sizeof(*ds));
}

long mir_digests_find(const struct mir_digests *ds, const uint8_t d[32])
{
	size_t lo = 0, hi = ds->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(ds->v[mid].d, d, 32);

		if (!c)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int hb_mirror_list(struct hb_s3 *s3, const char *url,
		   const struct hb_mirror_opts *opts, hb_mirror_list_fn fn,
		   void *ctx, struct hb_err *err)
{
	struct mir m;
	struct mir_ids ids = { 0 };
	int rc = mir_open(&m, s3, url, opts, NULL, err);

	if (!rc)
		rc = mir_list_ids(&m, &ids, err);
	for (size_t i = 0; !rc && i < ids.n; i++) {
		struct hb_ckpt_manifest *man;
		struct hb_err e = { 0 };
		struct hb_mirror_ckpt c = { .id = ids.v[i].id };
		char key[MIR_KEY_MAX], name[MIR_KEY_MAX + 80];

		if (mir_read_manifest(&m, ids.v[i].id, &man, &c.manifest_bytes,
				      &e)) {
			mir_key_manifest(&m, ids.v[i].id, key);
			mir_key_url(&m, key, name, sizeof(name));
			mir_problem(&m, name, e.msg);
			continue;
		}
		c.created = man->created;
		c.job = man->job;
		c.files = man->nfiles;
		c.bytes = man->total;
		rc = fn(ctx, &c);
		hb_ckpt_manifest_free(man);
	}
	mir_ids_free(&ids);
	mir_close(&m);
	return rc;
}
