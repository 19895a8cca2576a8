/*
 * verify.c - hb_mirror_verify(): every object a checkpoint names is
 * there with its size (HEAD), and with deep, has its SHA-256 (GET).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gateway/mirror/mirror_int.h"

struct verify {
	struct mir *m;
	const struct hb_ckpt_manifest *man;
	struct mir_digests ds;
	struct mir_prog prog;
	atomic_uint_fast64_t bad;
};

static void problem(struct verify *v, const struct hb_ckpt_file *f,
		    const char *why)
{
	char hex[65], what[HB_CKPT_PATH_MAX + 96];

	hb_ckpt_hex(f->sha256, hex);
	snprintf(what, sizeof(what), "objects/%s (file %s)", hex, f->path);
	atomic_fetch_add(&v->bad, 1);
	mir_problem(v->m, what, why);
}

/* A deep check's bytes: counted and dropped. */
struct count {
	uint64_t n, max;
};

static int counted(const void *p, size_t n, void *arg)
{
	struct count *c = arg;

	(void)p;
	c->n += n;
	/* Longer than the manifest says: no need to read the rest. */
	return c->n > c->max ? HB_ERANGE : 0;
}

static int check(void *ctx, size_t i, unsigned worker, struct hb_err *err)
{
	struct verify *v = ctx;
	const struct hb_ckpt_file *f = &v->man->files[v->ds.v[i].file];
	char key[MIR_KEY_MAX], why[128];
	struct hb_err e = { 0 };
	struct hb_s3_obj o = { 0 };
	struct count c = { 0, f->size };
	int rc;

	(void)worker;
	mir_key_object(v->m, f->sha256, key);
	if (v->m->o.deep)
		rc = hb_s3_get(v->m->s3, v->m->u.bucket, key, 0, 0, f->sha256,
			       counted, &c, &e);
	else
		rc = hb_s3_head(v->m->s3, v->m->u.bucket, key, &o, &e);
	if (!v->m->o.deep)
		c.n = o.size;
	if (rc == HB_ENOENT) {
		problem(v, f, "missing");
	} else if (rc == HB_ERANGE) {
		snprintf(why, sizeof(why), "longer than the manifest's %" PRIu64
			 " bytes", f->size);
		problem(v, f, why);
	} else if (!rc && c.n != f->size) {
		snprintf(why, sizeof(why), "%" PRIu64 " bytes, the manifest "
			 "says %" PRIu64, c.n, f->size);
		problem(v, f, why);
	} else if (rc == HB_EIO) {
		problem(v, f, "contents do not match their SHA-256");
	} else if (rc) {
		return hb_err_set(err, rc, NULL, 0, "%s", e.msg);
	}
	mir_prog_add(&v->prog, 1, v->m->o.deep ? f->size : 0);
	return 0;
}

int hb_mirror_verify(struct hb_s3 *s3, const char *url,
		     const struct hb_mirror_opts *opts,
		     struct hb_mirror_stats *st, struct hb_err *err)
{
	struct hb_ckpt_manifest *man = NULL;
	struct verify v = { 0 };
	uint64_t bytes = 0;
	struct mir m;
	int rc = mir_open(&m, s3, url, opts, st, err);

	st = m.st;
	v.m = &m;
	if (!rc)
		rc = mir_pick(&m, st->id, &man, err);
	if (!rc) {
		v.man = man;
		st->files = man->nfiles;
		st->bytes = man->total;
		rc = mir_digests_of(man, &v.ds, err);
	}
	if (!rc) {
		for (size_t i = 0; i < v.ds.n; i++)
			bytes += man->files[v.ds.v[i].file].size;
		mir_prog_start(&v.prog, &m, "verify", v.ds.n,
			       m.o.deep ? bytes : 0);
		rc = mir_pool(m.o.jobs, v.ds.n, check, &v, err);
		mir_prog_end(&v.prog);
	}
	st->bad = atomic_load(&v.bad);
	if (!rc && st->bad)
		rc = hb_err_set(err, HB_EIO, NULL, 0,
				"%s: checkpoint %s: %" PRIu64 " of %zu objects "
				"missing or wrong", m.url, st->id, st->bad,
				v.ds.n);
	mir_digests_free(&v.ds);
	hb_ckpt_manifest_free(man);
	mir_close(&m);
	return rc;
}
