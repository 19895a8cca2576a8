/*
 * ckpt_treepush.c - hb_mirror_push() as the daemon calls it: with a tree
 * scanned beforehand (opts.tree) and the files opened by the caller
 * (opts.open_file), never by the push.  For tests/integration/
 * ckpt_sync.test.sh:
 *
 *   ckpt_treepush DIR s3://BUCKET/PREFIX JOBS
 *
 * scans DIR itself, then pushes with dir set to a path that does not
 * exist (the push may only name it), opening each file under DIR in the
 * callback.  The callback fails the run if two calls overlap.  Prints
 * "id ID unchanged U sent S opened O" and exits 0, or 1 with the error.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hpcbridge/mirror.h"

struct opener {
	int dirfd;
	atomic_int inside;
	atomic_int overlapped;
	atomic_uint opened;
};

static int open_one(void *ctx, const struct hb_ckpt_file *f,
		    struct hb_err *err)
{
	struct opener *o = ctx;
	int fd;

	if (atomic_fetch_add(&o->inside, 1))
		atomic_store(&o->overlapped, 1);
	usleep(1000); /* widen the window an overlap would need */
	fd = openat(o->dirfd, f->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	atomic_fetch_sub(&o->inside, 1);
	if (fd < 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "%s: open", f->path);
	atomic_fetch_add(&o->opened, 1);
	return fd;
}

int main(int argc, char **argv)
{
	struct opener o = { .dirfd = -1 };
	struct hb_mirror_opts mo = { 0 };
	struct hb_mirror_stats st;
	struct hb_ckpt_manifest *m = NULL;
	struct hb_s3_opts so = { 0 };
	struct hb_s3 *s3 = NULL;
	struct hb_err err = { 0 };
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: ckpt_treepush DIR URL JOBS\n");
		return 2;
	}
	o.dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = o.dirfd < 0 ? hb_err_set(&err, HB_EIO, NULL, 0, "%s: open",
				      argv[1])
			 : hb_ckpt_scan(argv[1], NULL, &m, NULL, &err);
	if (!rc)
		rc = hb_s3_new(&so, &s3, &err);
	mo.jobs = (unsigned)atoi(argv[3]);
	mo.tree = m;
	mo.open_file = open_one;
	mo.open_ctx = &o;
	if (!rc)
		rc = hb_mirror_push(s3, argv[2], "/nonexistent/named-only", &mo,
				    &st, &err);
	if (!rc && atomic_load(&o.overlapped))
		rc = hb_err_set(&err, HB_EINVAL, NULL, 0,
				"open_file was called from two threads at once");
	if (rc)
		fprintf(stderr, "ckpt_treepush: %s\n", err.msg);
	else
		printf("id %s unchanged %d sent %llu opened %u\n", st.id,
		       st.unchanged, (unsigned long long)st.sent_files,
		       atomic_load(&o.opened));
	hb_ckpt_manifest_free(m);
	hb_s3_free(s3);
	if (o.dirfd >= 0)
		close(o.dirfd);
	return rc ? 1 : 0;
}
