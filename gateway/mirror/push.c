/*
 * push.c - hb_mirror_push(): a directory to a new checkpoint at an S3
 * location.  Scan, find which contents are stored already, send the
 * others (small files in one PUT, big ones in parts, all on a pool of
 * threads), then write the manifest, last.  A file of one PUT that the
 * newest checkpoint does not hold is sent as soon as the scan has hashed
 * it, so the transfer overlaps the hashing of the rest of the tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "gateway/ckpt/ckpt_int.h"
#include "gateway/mirror/mirror_int.h"
#include "hpcbridge/units.h"

#define MIB (1024ull * 1024)
#define MAX_PARTS 10000u
/* Files sent while the scan runs are at least this big: below it, a HEAD
 * each would cost more than the overlap gains, and the listing after the
 * scan finds many at once. */
#define EARLY_MIN MIB

/* One content to send: the first file that has it. */
struct obj {
	size_t file;
	uint64_t size;
	uint64_t part;		/* part size; 0: one PUT */
	unsigned nparts;
	/* Multipart: parts are read and sent in parallel, but hashed in
	 * order, so the file is read once and still checked whole. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	EVP_MD_CTX *md;
	unsigned next_hash;	/* the part to hash next (1-based) */
	char *upload_id;
	struct hb_s3_part *parts;
	atomic_uint left;	/* parts not yet sent */
	int failed, completed;
};

struct early;

struct task {
	size_t obj;
	unsigned part;		/* 0: the whole object in one PUT */
	struct early *early;	/* a file sent during the scan, or NULL */
};

/* A file sent during the scan: its own copy of what the scan found. */
struct early {
	struct task t;
	struct hb_ckpt_file f;
};

struct wbuf {
	char *p;
	size_t cap;
};

struct push {
	struct mir *m;
	int dirfd;
	const struct hb_ckpt_manifest *man;
	struct obj *objs;
	size_t nobjs;
	struct task *tasks;
	size_t ntasks;
	struct wbuf bufs[64];
	struct mir_feed feed;	/* the uploads, early ones first */
	int feeding;
	struct mir_prog prog;
	/* The newest checkpoint's contents, and the files sent during the
	 * scan, by digest (open addressing; cap a power of two). */
	struct mir_digests prev_ds;
	struct early **early;
	size_t nearly, early_cap;
	atomic_uint_fast64_t early_stored_files, early_stored_bytes;
	pthread_mutex_t open_mu; /* the caller's open_file: one at a time */
	/* Finding what is stored: the digests of the tree and a flag each. */
	struct mir_digests ds;
	uint8_t *stored;
	size_t *ask;		/* indices into ds to HEAD */
	size_t nask;
	atomic_uint_fast64_t sent_files, sent_bytes;
};

static int grow(struct wbuf *b, size_t n, const char *path,
		struct hb_err *err)
{
	char *p;

	if (n <= b->cap)
		return 0;
	if (!(p = realloc(b->p, n)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0,
				  "%s: %zu bytes: out of memory", path, n);
	b->p = p;
	b->cap = n;
	return 0;
}

static int changed(const char *path, struct hb_err *err)
{
	return hb_err_set(err, HB_EAGAIN, NULL, 0,
			  "%s: changed since the scan; push again", path);
}

/* Open f through the caller's open_file, one call at a time, and check
 * that it gave a regular file. */
static int open_theirs(struct push *p, const struct hb_ckpt_file *f,
		       struct hb_err *err)
{
	struct stat st;
	int fd;

	pthread_mutex_lock(&p->open_mu);
	fd = p->m->o.open_file(p->m->o.open_ctx, f, err);
	pthread_mutex_unlock(&p->open_mu);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		return changed(f->path, err);
	}
	return fd;
}

/* Open file f under the directory, never following a link. */
static int open_file(struct push *p, const struct hb_ckpt_file *f,
		     struct hb_err *err)
{
	const char *base, *path = f->path;
	struct stat st;
	int pfd, fd, e;

	if (p->m->o.open_file)
		return open_theirs(p, f, err);
	pfd = ckpt_open_parent(p->dirfd, path, 0, &base);
	if (pfd < 0) {
		e = errno;
		goto fail;
	}
	fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	e = errno;
	close(pfd);
	if (fd < 0)
		goto fail;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return changed(path, err);
	}
	return fd;
fail:
	/* Gone, or a link in its place: not what the scan saw. */
	if (e == ENOENT || e == ELOOP || e == ENOTDIR)
		return changed(path, err);
	return ckpt_sys_err(err, e, path, "open");
}

/* Read n bytes at off; a short read means the file shrank. */
static int read_at(int fd, const char *path, char *buf, size_t n,
		   uint64_t off, struct hb_err *err)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ckpt_sys_err(err, errno, path, "read");
		if (!r)
			return changed(path, err);
		got += (size_t)r;
	}
	return 0;
}

/* Whether the file grew past size since the scan. */
static int grew(int fd, const char *path, uint64_t size, struct hb_err *err)
{
	char c;
	ssize_t r;

	while ((r = pread(fd, &c, 1, (off_t)size)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return ckpt_sys_err(err, errno, path, "read");
	return r ? changed(path, err) : 0;
}

static void count_sent(struct push *p, uint64_t size)
{
	atomic_fetch_add(&p->sent_files, 1);
	atomic_fetch_add(&p->sent_bytes, size);
}

/* Send file f in one PUT, read as it goes: the S3 client checks the bytes
 * against the scan's digest before the last of them leaves. */
static int put_whole(struct push *p, const struct hb_ckpt_file *f,
		     struct hb_err *err)
{
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int fd, rc;

	if ((fd = open_file(p, f, err)) < 0)
		return fd;
	mir_key_object(p->m, f->sha256, key);
	rc = hb_s3_put_file(p->m->s3, p->m->u.bucket, key, fd, f->size,
			    f->sha256, &e);
	close(fd);
	if (rc == HB_EAGAIN)
		return changed(f->path, err);
	if (rc)
		return hb_err_set(err, rc, NULL, 0, "%s: %s", f->path, e.msg);
	count_sent(p, f->size);
	mir_prog_add(&p->prog, 1, f->size);
	return 0;
}

/* A file found during the scan: stored already (another checkpoint's
 * contents, under this prefix), or sent now. */
static int send_early(struct push *p, const struct hb_ckpt_file *f,
		      struct hb_err *err)
{
	char key[MIR_KEY_MAX];
	struct hb_s3_obj o;
	struct hb_err e = { 0 };
	int rc;

	mir_key_object(p->m, f->sha256, key);
	rc = hb_s3_head(p->m->s3, p->m->u.bucket, key, &o, &e);
	if (rc && rc != HB_ENOENT)
		return hb_err_set(err, rc, NULL, 0, "%s", e.msg);
	if (!rc && o.size == f->size) {
		atomic_fetch_add(&p->early_stored_files, 1);
		atomic_fetch_add(&p->early_stored_bytes, f->size);
		mir_prog_add(&p->prog, 1, f->size);
		return 0;
	}
	return put_whole(p, f, err);
}

/* Hash part k in its turn; create the upload with the first part. */
static int hash_part(struct push *p, struct obj *o, unsigned k,
		     const char *buf, size_t n, struct hb_err *err)
{
	const struct hb_ckpt_file *f = &p->man->files[o->file];
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int rc = 0;

	pthread_mutex_lock(&o->mu);
	while (o->next_hash != k && !o->failed)
		pthread_cond_wait(&o->cv, &o->mu);
	if (o->failed) {
		pthread_mutex_unlock(&o->mu);
		return 1; /* another part failed and said why */
	}
	EVP_DigestUpdate(o->md, buf, n);
	if (k == o->nparts) {
		uint8_t d[32];
		unsigned len = 32;

		EVP_DigestFinal_ex(o->md, d, &len);
		if (memcmp(d, f->sha256, 32))
			rc = changed(f->path, err);
	}
	if (!rc && !o->upload_id) {
		mir_key_object(p->m, f->sha256, key);
		rc = hb_s3_mpu_create(p->m->s3, p->m->u.bucket, key,
				      &o->upload_id, &e);
		if (rc)
			hb_err_set(err, rc, NULL, 0, "%s: %s", f->path, e.msg);
	}
	o->next_hash++;
	if (rc)
		o->failed = 1;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	return rc;
}

static void fail_obj(struct obj *o)
{
	pthread_mutex_lock(&o->mu);
	o->failed = 1;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

/* The last part sent joins them all. */
static int complete(struct push *p, struct obj *o, struct hb_err *err)
{
	const struct hb_ckpt_file *f = &p->man->files[o->file];
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int rc;

	if (o->failed)
		return 0;
	mir_key_object(p->m, f->sha256, key);
	rc = hb_s3_mpu_complete(p->m->s3, p->m->u.bucket, key, o->upload_id,
				o->parts, o->nparts, &e);
	if (rc) {
		fail_obj(o);
		return hb_err_set(err, rc, NULL, 0, "%s: %s", f->path, e.msg);
	}
	o->completed = 1;
	count_sent(p, o->size);
	mir_prog_add(&p->prog, 1, 0);
	return 0;
}

static int send_part(struct push *p, struct obj *o, unsigned k,
		     struct wbuf *b, struct hb_err *err)
{
	const struct hb_ckpt_file *f = &p->man->files[o->file];
	uint64_t off = (uint64_t)(k - 1) * o->part;
	size_t n = (size_t)(o->size - off < o->part ? o->size - off : o->part);
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int fd, rc;

	rc = grow(b, n, f->path, err);
	if (!rc && (fd = open_file(p, f, err)) < 0)
		rc = fd;
	if (!rc) {
		rc = read_at(fd, f->path, b->p, n, off, err);
		if (!rc && k == o->nparts)
			rc = grew(fd, f->path, o->size, err);
		close(fd);
	}
	if (rc) {
		fail_obj(o);
		return rc;
	}
	rc = hash_part(p, o, k, b->p, n, err);
	if (rc)
		return rc < 0 ? rc : 0;
	mir_key_object(p->m, f->sha256, key);
	rc = hb_s3_mpu_part(p->m->s3, p->m->u.bucket, key, o->upload_id,
			    (int)k, b->p, n, &o->parts[k - 1], &e);
	if (rc) {
		fail_obj(o);
		return hb_err_set(err, rc, NULL, 0, "%s: part %u: %s",
				  f->path, k, e.msg);
	}
	mir_prog_add(&p->prog, 0, n);
	if (atomic_fetch_sub(&o->left, 1) == 1)
		return complete(p, o, err);
	return 0;
}

static int send_task(void *ctx, void *item, unsigned worker,
		     struct hb_err *err)
{
	struct push *p = ctx;
	const struct task *t = item;
	struct obj *o;

	if (t->early)
		return send_early(p, &t->early->f, err);
	o = &p->objs[t->obj];
	if (!t->part)
		return put_whole(p, &p->man->files[o->file], err);
	return send_part(p, o, t->part, &p->bufs[worker], err);
}

/* The uploads start with the first file to send. */
static void start_feed(struct push *p)
{
	if (p->feeding)
		return;
	mir_prog_start(&p->prog, p->m, "upload", 0, 0);
	mir_feed_start(&p->feed, p->m->o.jobs, send_task, p);
	p->feeding = 1;
}

/* ---- Sending during the scan -------------------------------------------- */

static struct early **early_slot(struct push *p, const uint8_t d[32])
{
	uint64_t h;
	size_t i;

	memcpy(&h, d, sizeof(h)); /* a digest's bytes are already random */
	for (i = h & (p->early_cap - 1);; i = (i + 1) & (p->early_cap - 1))
		if (!p->early[i] || !memcmp(p->early[i]->f.sha256, d, 32))
			return &p->early[i];
}

static int early_grow(struct push *p)
{
	struct early **old = p->early;
	size_t n = p->early_cap;

	if ((p->nearly + 1) * 2 <= p->early_cap)
		return 0;
	p->early_cap = n ? n * 2 : 64;
	p->early = calloc(p->early_cap, sizeof(*p->early));
	if (!p->early) {
		p->early = old;
		p->early_cap = n;
		return HB_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (old[i])
			*early_slot(p, old[i]->f.sha256) = old[i];
	free(old);
	return 0;
}

/* The files sent during the scan, by digest: NULL when none. */
static const struct early *early_find(struct push *p, const uint8_t d[32])
{
	return p->early_cap ? *early_slot(p, d) : NULL;
}

static void early_free(struct push *p)
{
	for (size_t i = 0; i < p->early_cap; i++)
		if (p->early[i]) {
			free((char *)p->early[i]->f.path);
			free(p->early[i]);
		}
	free(p->early);
}

/* The scan's hook: a file of one PUT whose contents the newest
 * checkpoint does not hold goes now. */
static int on_scanned(void *ctx, const struct hb_ckpt_file *f,
		      struct hb_err *err)
{
	struct push *p = ctx;
	struct early *x, **slot;

	if (f->size < EARLY_MIN || f->size >= p->m->o.multipart_min ||
	    mir_digests_find(&p->prev_ds, f->sha256) >= 0)
		return 0;
	if (early_grow(p))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	slot = early_slot(p, f->sha256);
	if (*slot)
		return 0; /* the same contents, on their way */
	if (!(x = calloc(1, sizeof(*x))) || !(x->f.path = strdup(f->path))) {
		free(x);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	x->f.size = f->size;
	x->f.mode = f->mode;
	memcpy(x->f.sha256, f->sha256, 32);
	x->t.early = x;
	*slot = x;
	p->nearly++;
	start_feed(p);
	mir_prog_more(&p->prog, 1, f->size);
	/* A failed upload stops the scan; its message comes with the
	 * feed's end. */
	return mir_feed_put(&p->feed, &x->t, err);
}

/* Parts of at most part bytes, more when S3's 10,000 would not do. */
static void plan_parts(struct obj *o, uint64_t part)
{
	if ((o->size + part - 1) / part > MAX_PARTS)
		part = ((o->size + MAX_PARTS - 1) / MAX_PARTS + MIB - 1) /
		       MIB * MIB;
	o->part = part;
	o->nparts = (unsigned)((o->size + part - 1) / part);
}

static int plan(struct push *p, struct hb_err *err)
{
	size_t ntasks = 0, t = 0;

	for (size_t i = 0; i < p->ds.n; i++)
		p->nobjs += !p->stored[i];
	p->objs = calloc(p->nobjs ? p->nobjs : 1, sizeof(*p->objs));
	if (!p->objs)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (size_t i = 0, k = 0; i < p->ds.n; i++) {
		struct obj *o;

		if (p->stored[i])
			continue;
		o = &p->objs[k++];
		o->file = p->ds.v[i].file;
		o->size = p->man->files[o->file].size;
		if (o->size >= p->m->o.multipart_min) {
			plan_parts(o, p->m->o.part_size);
			o->parts = calloc(o->nparts, sizeof(*o->parts));
			o->md = EVP_MD_CTX_new();
			if (!o->parts || !o->md ||
			    !EVP_DigestInit_ex(o->md, EVP_sha256(), NULL))
				return hb_err_set(err, HB_ENOMEM, NULL, 0,
						  "out of memory");
			pthread_mutex_init(&o->mu, NULL);
			pthread_cond_init(&o->cv, NULL);
			o->next_hash = 1;
			atomic_store(&o->left, o->nparts);
		}
		ntasks += o->part ? o->nparts : 1;
	}
	p->tasks = calloc(ntasks ? ntasks : 1, sizeof(*p->tasks));
	if (!p->tasks)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	/* Each object's parts in order: a part waits to be hashed only for
	 * parts taken before it, so the pool cannot deadlock. */
	for (size_t k = 0; k < p->nobjs; k++) {
		if (!p->objs[k].part)
			p->tasks[t++] = (struct task){ k, 0, NULL };
		for (unsigned j = 1; p->objs[k].part && j <= p->objs[k].nparts;
		     j++)
			p->tasks[t++] = (struct task){ k, j, NULL };
	}
	p->ntasks = t;
	return 0;
}

/* Abort the uploads that did not complete, and free the objects. */
static void unplan(struct push *p)
{
	for (size_t k = 0; p->objs && k < p->nobjs; k++) {
		struct obj *o = &p->objs[k];

		if (o->upload_id && !o->completed) {
			char key[MIR_KEY_MAX];
			struct hb_err e = { 0 };

			mir_key_object(p->m, p->man->files[o->file].sha256,
				       key);
			hb_s3_mpu_abort(p->m->s3, p->m->u.bucket, key,
					o->upload_id, &e);
		}
		if (o->part) {
			pthread_mutex_destroy(&o->mu);
			pthread_cond_destroy(&o->cv);
		}
		EVP_MD_CTX_free(o->md);
		free(o->upload_id);
		free(o->parts);
	}
	free(p->objs);
	free(p->tasks);
	for (size_t i = 0; i < 64; i++)
		free(p->bufs[i].p);
}

/* Plan what the scan left and hand it to the uploads. */
static int upload(struct push *p, struct hb_err *err)
{
	uint64_t bytes = 0;
	int rc = plan(p, err);

	if (rc || !p->ntasks)
		return rc;
	for (size_t k = 0; k < p->nobjs; k++)
		bytes += p->objs[k].size;
	start_feed(p);
	mir_prog_more(&p->prog, p->nobjs, bytes);
	for (size_t t = 0; !rc && t < p->ntasks; t++)
		rc = mir_feed_put(&p->feed, &p->tasks[t], err);
	return rc;
}

/* Wait for the uploads; their first failure is the one reported (it
 * stopped whatever the caller was doing: its own error is a consequence).
 * Then abort what did not complete. */
static int finish(struct push *p, int rc, struct hb_err *err)
{
	struct hb_err fe = { 0 };

	if (p->feeding) {
		int frc = mir_feed_end(&p->feed, &fe);

		if (frc) {
			*err = fe;
			rc = frc;
		}
		mir_prog_end(&p->prog);
		p->feeding = 0;
	}
	unplan(p);
	return rc;
}

/* ---- What is stored already ------------------------------------------ */

static int head_task(void *ctx, size_t i, unsigned worker,
		     struct hb_err *err)
{
	struct push *p = ctx;
	size_t k = p->ask[i];
	const struct hb_ckpt_file *f = &p->man->files[p->ds.v[k].file];
	char key[MIR_KEY_MAX];
	struct hb_s3_obj o;
	struct hb_err e = { 0 };
	int rc;

	(void)worker;
	mir_key_object(p->m, f->sha256, key);
	rc = hb_s3_head(p->m->s3, p->m->u.bucket, key, &o, &e);
	if (rc == HB_ENOENT)
		return 0;
	if (rc)
		return hb_err_set(err, rc, NULL, 0, "%s", e.msg);
	/* One of another size is not these contents: sent again. */
	p->stored[k] = o.size == f->size;
	return 0;
}

struct objs_walk {
	struct push *p;
	const char *dir;
	size_t dirlen;
};

static int listed(const struct hb_s3_entry *e, void *arg)
{
	struct objs_walk *w = arg;
	struct push *p = w->p;
	const char *name;
	uint8_t d[32];
	long k;

	/* Only what reads as a digest is looked up; anything else under
	 * objects/ is left alone. */
	if (strncmp(e->key, w->dir, w->dirlen))
		return 0;
	name = e->key + w->dirlen;
	if (!mir_hex_digest(name, strlen(name), d))
		return 0;
	k = mir_digests_find(&p->ds, d);
	if (k >= 0 && !p->stored[k] &&
	    e->size == p->man->files[p->ds.v[k].file].size)
		p->stored[k] = 1;
	return 0;
}

/* Contents the newest checkpoint names are stored, and those the scan
 * sent are handled (stored[] 2); the others are HEADed when few, else
 * found in one listing of objects/. */
static int find_stored(struct push *p, struct hb_err *err)
{
	int rc = mir_digests_of(p->man, &p->ds, err);

	if (rc)
		return rc;
	p->stored = calloc(p->ds.n ? p->ds.n : 1, 1);
	p->ask = calloc(p->ds.n ? p->ds.n : 1, sizeof(*p->ask));
	if (!p->stored || !p->ask)
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (size_t i = 0; !rc && i < p->ds.n; i++) {
		if (early_find(p, p->ds.v[i].d))
			p->stored[i] = 2;
		else
			p->stored[i] =
				mir_digests_find(&p->prev_ds, p->ds.v[i].d) >= 0;
		if (!p->stored[i])
			p->ask[p->nask++] = i;
	}
	if (rc || !p->nask)
		return rc;
	if (p->nask <= MIR_HEAD_MAX)
		return mir_pool(p->m->o.jobs, p->nask, head_task, p, err);
	{
		char dir[MIR_KEY_MAX];
		struct objs_walk w = { p, dir, 0 };

		mir_key_dir(p->m, "objects/", dir);
		w.dirlen = strlen(dir);
		return hb_s3_list(p->m->s3, p->m->u.bucket, dir, listed, &w,
				  err);
	}
}

/* ---- The push ---------------------------------------------------------- */

static int same_tree(const struct hb_ckpt_manifest *a,
		     const struct hb_ckpt_manifest *b)
{
	if (a->nfiles != b->nfiles)
		return 0;
	for (size_t i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].path, b->files[i].path) ||
		    a->files[i].size != b->files[i].size ||
		    a->files[i].mode != b->files[i].mode ||
		    memcmp(a->files[i].sha256, b->files[i].sha256, 32))
			return 0;
	return 1;
}

/* The time an ID names, in seconds since the epoch. */
static int64_t id_time(const char *id)
{
	int64_t v[6];
	static const int w[6] = { 4, 2, 2, 2, 2, 2 };
	const char *s = id;

	for (int i = 0; i < 6; i++) {
		v[i] = 0;
		for (int j = 0; j < w[i]; j++)
			v[i] = v[i] * 10 + (*s++ - '0');
		if (i == 2)
			s++; /* 'T' */
	}
	return hb_days_from_civil(v[0], (unsigned)v[1], (unsigned)v[2]) *
		       86400 + v[3] * 3600 + v[4] * 60 + v[5];
}

/* The newest checkpoint that reads (those that do not are reported),
 * and the newest ID's time. */
static int newest(struct mir *m, struct hb_ckpt_manifest **prev,
		  char id[HB_MIRROR_ID_LEN + 1], int64_t *latest,
		  struct hb_err *err)
{
	struct mir_ids ids;
	int rc = mir_list_ids(m, &ids, err);

	*prev = NULL;
	*latest = 0;
	if (!rc && ids.n)
		*latest = id_time(ids.v[ids.n - 1].id);
	for (size_t i = ids.n; !rc && i-- > 0;) {
		struct hb_err e = { 0 };

		if (!mir_read_manifest(m, ids.v[i].id, prev, NULL, &e)) {
			memcpy(id, ids.v[i].id, HB_MIRROR_ID_LEN + 1);
			break;
		}
		mir_problem(m, ids.v[i].id, e.msg);
	}
	mir_ids_free(&ids);
	return rc;
}

static int write_manifest(struct mir *m, const struct hb_ckpt_manifest *tree,
			  int64_t latest, struct hb_mirror_stats *st,
			  struct hb_err *err)
{
	/* The caller's tree, but for the time: the writer only reads. */
	struct hb_ckpt_manifest man = *tree;
	char key[MIR_KEY_MAX];
	uint8_t d[32];
	struct hb_err e = { 0 };
	struct hb_buf b;
	int rc;

	/* IDs sort in the order of pushes even within one second or with
	 * a clock set back. */
	if (man.created <= latest)
		man.created = latest + 1;
	hb_buf_init(&b, HB_CKPT_MANIFEST_MAX);
	rc = hb_ckpt_manifest_write(&man, &b);
	if (rc) {
		hb_buf_free(&b);
		return hb_err_set(err, rc, NULL, 0, "%s: manifest: %s",
				  m->url, hb_strerror(rc));
	}
	mir_sha256(b.data, b.len, d);
	mir_make_id(man.created, d, st->id);
	mir_key_manifest(m, st->id, key);
	rc = hb_s3_put(m->s3, m->u.bucket, key, b.data, b.len, d, &e);
	if (rc)
		hb_err_set(err, rc, NULL, 0, "%s", e.msg);
	hb_buf_free(&b);
	return rc;
}

static int push(struct mir *m, const char *dir, struct hb_mirror_stats *st,
		struct hb_err *err)
{
	struct hb_ckpt_scan_opts so = { .job = m->o.job };
	struct hb_ckpt_manifest *scanned = NULL, *prev = NULL;
	const struct hb_ckpt_manifest *man = m->o.tree;
	struct push p = { .m = m, .dirfd = -1 };
	char prev_id[HB_MIRROR_ID_LEN + 1] = "";
	struct mir_prog scan;
	int64_t latest;
	int rc;

	pthread_mutex_init(&p.open_mu, NULL);
	rc = newest(m, &prev, prev_id, &latest, err);
	if (!rc && prev)
		rc = mir_digests_of(prev, &p.prev_ds, err);
	/* With the caller's open_file, the directory is never opened
	 * here. */
	if (!rc && !m->o.open_file &&
	    (p.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		rc = ckpt_sys_err(err, errno, dir, "open");
	if (rc)
		goto out;
	/* A tree the caller scanned (as the directory's user) is taken as
	 * it is; a scan here sends big new files as it finds them. */
	if (!man) {
		so.on_file = on_scanned;
		so.ctx = &p;
		mir_prog_start(&scan, m, "scan", 0, 0);
		rc = hb_ckpt_scan(dir, &so, &scanned, NULL, err);
		if (!rc)
			mir_prog_more(&scan, scanned->nfiles, scanned->total);
		if (!rc)
			mir_prog_add(&scan, scanned->nfiles, scanned->total);
		mir_prog_end(&scan);
		man = scanned;
	}
	if (rc)
		goto out;
	p.man = man;
	st->files = man->nfiles;
	st->bytes = man->total;
	/* Every content in the newest checkpoint: the scan sent nothing. */
	if (prev && same_tree(man, prev)) {
		st->unchanged = 1;
		memcpy(st->id, prev_id, sizeof(st->id));
		rc = mir_digests_of(man, &p.ds, err);
		for (size_t i = 0; !rc && i < p.ds.n; i++) {
			st->stored_files++;
			st->stored_bytes += man->files[p.ds.v[i].file].size;
		}
		goto out;
	}
	rc = find_stored(&p, err);
	if (!rc)
		rc = upload(&p, err);
out:
	rc = finish(&p, rc, err);
	for (size_t i = 0; !st->unchanged && p.stored && i < p.ds.n; i++)
		if (p.stored[i] == 1) {
			st->stored_files++;
			st->stored_bytes += man->files[p.ds.v[i].file].size;
		}
	st->stored_files += atomic_load(&p.early_stored_files);
	st->stored_bytes += atomic_load(&p.early_stored_bytes);
	st->sent_files = atomic_load(&p.sent_files);
	st->sent_bytes = atomic_load(&p.sent_bytes);
	if (!rc && !st->unchanged)
		rc = write_manifest(m, man, latest, st, err);
	if (p.dirfd >= 0)
		close(p.dirfd);
	free(p.stored);
	free(p.ask);
	mir_digests_free(&p.ds);
	mir_digests_free(&p.prev_ds);
	early_free(&p);
	pthread_mutex_destroy(&p.open_mu);
	hb_ckpt_manifest_free(prev);
	hb_ckpt_manifest_free(scanned);
	return rc;
}

int hb_mirror_push(struct hb_s3 *s3, const char *url, const char *dir,
		   const struct hb_mirror_opts *opts,
		   struct hb_mirror_stats *st, struct hb_err *err)
{
	struct mir m;
	int rc = mir_open(&m, s3, url, opts, st, err);

	if (!rc)
		rc = push(&m, dir, m.st, err);
	if (!rc && m.o.keep)
		rc = mir_retain(&m, m.o.keep, m.st, err);
	mir_close(&m);
	return rc;
}
