/*
 * pull.c - hb_mirror_pull(): a checkpoint at an S3 location into a
 * directory, through hb_ckpt_materialise(), with a fetch callback that
 * GETs each object and checks its SHA-256 as it arrives.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gateway/ckpt/ckpt_int.h"
#include "gateway/mirror/mirror_int.h"

struct pull {
	struct mir *m;
	struct mir_prog prog;
};

/* Where one GET's bytes go: the file, never past the manifest's size. */
struct sink {
	int fd;
	const char *path;
	uint64_t left;
	struct mir_prog *prog;
	struct hb_err err;
};

static int to_fd(const void *p, size_t n, void *arg)
{
	struct sink *s = arg;
	const char *b = p;

	if (n > s->left)
		return hb_err_set(&s->err, HB_EIO, NULL, 0,
				  "%s: the object is longer than the "
				  "manifest says", s->path);
	for (size_t done = 0; done < n;) {
		ssize_t w = write(s->fd, b + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return ckpt_sys_err(&s->err, errno, s->path, "write");
		done += (size_t)w;
	}
	s->left -= n;
	mir_prog_add(s->prog, 0, n);
	return 0;
}

/* Called by hb_ckpt_materialise(), from several threads at once when it
 * runs jobs: everything it touches is its own or atomic. */
static int fetch(void *ctx, const struct hb_ckpt_file *f, int fd,
		 struct hb_err *err)
{
	struct pull *p = ctx;
	struct sink s = { fd, f->path, f->size, &p->prog, { 0 } };
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	int rc;

	mir_key_object(p->m, f->sha256, key);
	rc = hb_s3_get(p->m->s3, p->m->u.bucket, key, 0, 0, f->sha256, to_fd,
		       &s, &e);
	if (rc && s.err.code)
		*err = s.err;
	else if (rc == HB_EIO)
		hb_err_set(err, rc, NULL, 0, "%s: %s: contents do not match "
			   "their SHA-256 (%s)", f->path, key, e.msg);
	else if (rc)
		hb_err_set(err, rc, NULL, 0, "%s: %s", f->path, e.msg);
	else if (s.left)
		rc = hb_err_set(err, HB_EIO, NULL, 0, "%s: %s: shorter than "
				"the manifest says", f->path, key);
	if (!rc)
		mir_prog_add(&p->prog, 1, 0);
	return rc;
}

int hb_mirror_pull(struct hb_s3 *s3, const char *url, const char *dir,
		   const struct hb_mirror_opts *opts,
		   struct hb_mirror_stats *st, struct hb_err *err)
{
	struct hb_ckpt_manifest *man = NULL;
	struct hb_ckpt_mat_stats ms = { 0 };
	struct hb_ckpt_mat_opts mo = { 0 };
	struct pull p = { 0 };
	struct stat sb;
	struct mir m;
	int rc = mir_open(&m, s3, url, opts, st, err);

	st = m.st;
	p.m = &m;
	if (!rc)
		rc = mir_pick(&m, st->id, &man, err);
	if (!rc) {
		st->files = man->nfiles;
		st->bytes = man->total;
		/* Files the directory already holds are copied, not
		 * fetched again. */
		if (!lstat(dir, &sb) && S_ISDIR(sb.st_mode))
			mo.reuse = dir;
		mo.jobs = m.o.jobs;
		mir_prog_start(&p.prog, &m, "download", man->nfiles,
			       man->total);
		rc = hb_ckpt_materialise(man, dir, fetch, &p, &mo, &ms, err);
		if (!rc) {
			/* What was not fetched was there already. */
			atomic_store(&p.prog.files_done, man->nfiles);
			atomic_store(&p.prog.bytes_done, man->total);
		}
		mir_prog_end(&p.prog);
	}
	if (!rc) {
		st->got_files = ms.fetched;
		st->got_bytes = ms.fetched_bytes;
		st->kept_files = ms.kept + ms.reused;
		st->kept_bytes = man->total - ms.fetched_bytes;
	}
	hb_ckpt_manifest_free(man);
	mir_close(&m);
	return rc;
}
