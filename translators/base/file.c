/*
 * file.c - reading a whole configuration-sized file, and measuring a
 * tree of data files (file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/file.h"

int hb_file_read(const char *path, size_t max, const char *what,
		 struct hb_buf *out, struct hb_err *err)
{
	char tmp[8192];
	struct stat st;
	size_t start = out->len, total = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = errno == ENOENT   ? HB_ENOENT
		     : errno == EACCES ? HB_EPERM
				       : HB_EIO;
		return hb_err_set(err, rc, NULL, 0, "%s%s%s: %s",
				  what ? what : "", what ? ": " : "", path,
				  strerror(errno));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = hb_err_set(err, HB_EINVAL, NULL, 0,
				"%s%s%s: not a regular file", what ? what : "",
				what ? ": " : "", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = hb_err_set(err, HB_EIO, NULL, 0, "%s%s%s: %s",
					what ? what : "", what ? ": " : "",
					path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > max) {
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"%s%s%s: larger than %zu bytes",
					what ? what : "", what ? ": " : "",
					path, max);
			goto out;
		}
		rc = hb_buf_append(out, tmp, (size_t)n);
		if (rc) {
			hb_err_set(err, rc, NULL, 0, "%s: %s", path,
				   hb_strerror(rc));
			goto out;
		}
	}
out:
	if (rc && out->data) {
		out->len = start;
		out->data[start] = '\0';
	}
	close(fd);
	return rc;
}

/* Hard-linked files seen, so each is counted once: an open-addressing set
 * of (device, inode) that doubles as it fills. */
struct inodes {
	struct {
		dev_t dev;
		ino_t ino;
	} *v;
	size_t n, cap; /* cap: 0 or a power of two */
};

/* 1 if (dev, ino) was new and is now in, 0 if seen, HB_ENOMEM. */
static int inode_add(struct inodes *s, dev_t dev, ino_t ino)
{
	size_t i;

	if (2 * (s->n + 1) > s->cap) {
		struct inodes g = { .cap = s->cap ? 2 * s->cap : 64 };

		if (!(g.v = calloc(g.cap, sizeof(*g.v))))
			return HB_ENOMEM;
		for (i = 0; i < s->cap; i++)
			if (s->v[i].ino)
				inode_add(&g, s->v[i].dev, s->v[i].ino);
		free(s->v);
		*s = g;
	}
	for (i = ((uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev) &
		 (s->cap - 1);
	     s->v[i].ino; i = (i + 1) & (s->cap - 1))
		if (s->v[i].ino == ino && s->v[i].dev == dev)
			return 0;
	s->v[i].dev = dev;
	s->v[i].ino = ino ? ino : 1; /* 0 marks an empty slot */
	s->n++;
	return 1;
}

int hb_path_size(const char *path, uint64_t max_entries, int timeout_ms,
		 uint64_t *bytes, struct hb_err *err)
{
	char *argv[2] = { (char *)path, NULL };
	struct inodes seen = { 0 };
	int64_t deadline =
		hb_clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	uint64_t total = 0, entries = 0;
	FTSENT *e;
	FTS *fts;
	int rc = 0, k;

	*bytes = 0;
	if (!path || path[0] != '/')
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: not an absolute path",
				  path ? path : "(null)");
	/* physical: symbolic links are not followed; one file system */
	fts = fts_open(argv, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL);
	if (!fts)
		return hb_err_set(err, HB_EIO, NULL, 0, "%s: %s", path,
				  strerror(errno));
	while (!rc && (errno = 0, e = fts_read(fts))) {
		switch (e->fts_info) {
		case FTS_F:
			if (e->fts_statp->st_nlink > 1) {
				k = inode_add(&seen, e->fts_statp->st_dev,
					      e->fts_statp->st_ino);
				if (k < 0) {
					rc = hb_err_set(err, k, NULL, 0,
							"out of memory");
					break;
				}
				if (!k)
					break;
			}
			total += (uint64_t)e->fts_statp->st_size;
			break;
		case FTS_NS:
		case FTS_DNR:
		case FTS_ERR:
			if (e->fts_level == 0 || e->fts_errno != ENOENT)
				rc = hb_err_set(
					err,
					e->fts_errno == ENOENT	? HB_ENOENT
					: e->fts_errno == EACCES ? HB_EPERM
								 : HB_EIO,
					NULL, 0, "%s: %s", e->fts_path,
					strerror(e->fts_errno));
			/* a file removed during the walk is simply gone */
			break;
		default:
			break;
		}
		if (!rc && ++entries > max_entries)
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"%s: more than %llu entries", path,
					(unsigned long long)max_entries);
		if (!rc && timeout_ms > 0 && !(entries & 1023) &&
		    hb_clock_mono_ms() > deadline)
			rc = hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
					"%s: not measured within %d ms", path,
					timeout_ms);
	}
	if (!rc && errno && !e)
		rc = hb_err_set(err, HB_EIO, NULL, 0, "%s: %s", path,
				strerror(errno));
	fts_close(fts);
	free(seen.v);
	if (!rc)
		*bytes = total;
	return rc;
}
