/*
 * scan.c - a directory into a checkpoint manifest.  Every entry is opened
 * by its one-component name under its parent's descriptor, with
 * O_NOFOLLOW, and what was opened is checked against what was listed
 * (device and inode), so neither a link in the tree nor one swapped in
 * while the scan runs makes it read a file outside the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_int.h"

#define SCAN_BUF (1024 * 1024)

struct scan {
	struct hb_ckpt_manifest *m;
	const struct hb_ckpt_scan_opts *o;
	struct hb_ckpt_scan_stats *st;
	struct hb_err *err;
	const char *dir;
	dev_t dev;
	uid_t owner;
	char path[HB_CKPT_PATH_MAX + HB_CKPT_NAME_MAX + 2];
	size_t len;
	char *buf;
};

/* "DIR/REL" for messages, with bytes that would garble a log as '?'. */
static const char *shown(struct scan *s, char *out, size_t n)
{
	size_t k;

	snprintf(out, n, "%.200s/%.300s", s->dir, s->path);
	for (k = 0; out[k]; k++)
		if ((unsigned char)out[k] < 0x20 || out[k] == 0x7f)
			out[k] = '?';
	return out;
}

static int sys_err(struct scan *s, int e, const char *what)
{
	char p[512];

	return ckpt_sys_err(s->err, e, shown(s, p, sizeof(p)), what);
}

static int refuse(struct scan *s, int code, const char *why)
{
	char p[512];

	return hb_err_set(s->err, code, NULL, 0, "%s: %s",
			  shown(s, p, sizeof(p)), why);
}

/* A link or a special file: skipped and counted, or refused. */
static int skip(struct scan *s, uint64_t *count, const char *what)
{
	if (s->o->flags & HB_CKPT_SCAN_STRICT)
		return refuse(s, HB_EPERM, what);
	(*count)++;
	return 0;
}

static int same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int scan_file(struct scan *s, int dfd, const char *name,
		     const struct stat *listed)
{
	struct stat a, b;
	uint8_t sha[32];
	uint64_t n = 0;
	char p[512];
	int fd, rc;

	if (listed->st_nlink > 1 && listed->st_uid != s->owner)
		return refuse(s, HB_EPERM, "another owner's file linked in "
			      "(more than one link)");
	if (s->o->before_open)
		s->o->before_open(s->o->ctx, s->path);
	/* O_NONBLOCK: a FIFO swapped in does not hang the open. */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				       O_CLOEXEC);
	if (fd < 0)
		return sys_err(s, errno, "open");
	if (fstat(fd, &a) || !S_ISREG(a.st_mode) || !same(&a, listed) ||
	    a.st_nlink != listed->st_nlink) {
		close(fd);
		return refuse(s, HB_EAGAIN, "changed during the scan");
	}
	rc = ckpt_sha256_fd_buf(fd, shown(s, p, sizeof(p)), s->buf, SCAN_BUF,
				sha, &n, s->err);
	if (!rc && (fstat(fd, &b) || n != (uint64_t)a.st_size ||
		    b.st_size != a.st_size ||
		    b.st_mtim.tv_sec != a.st_mtim.tv_sec ||
		    b.st_mtim.tv_nsec != a.st_mtim.tv_nsec))
		rc = refuse(s, HB_EAGAIN, "changed while it was read");
	close(fd);
	if (rc)
		return rc;
	rc = hb_ckpt_manifest_add(s->m, s->path, n, a.st_mode & 0777, sha,
				  s->err);
	if (!rc) {
		s->st->files++;
		s->st->bytes += n;
	}
	if (!rc && s->o->on_file) {
		struct hb_ckpt_file f = { .path = s->path, .size = n,
					  .mode = a.st_mode & 0777 };

		memcpy(f.sha256, sha, sizeof(f.sha256));
		rc = s->o->on_file(s->o->ctx, &f, s->err);
	}
	return rc;
}

static int walk(struct scan *s, int dfd, unsigned depth);

static int scan_dir(struct scan *s, int dfd, const char *name,
		    const struct stat *listed, unsigned depth)
{
	struct stat a;
	int fd, rc;

	if (listed->st_dev != s->dev)
		return skip(s, &s->st->skipped_mounts,
			    "another filesystem mounted here");
	if (depth >= HB_CKPT_DEPTH_MAX)
		return refuse(s, HB_ETOOBIG, "directories nested too deep");
	if (s->o->before_open)
		s->o->before_open(s->o->ctx, s->path);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				       O_CLOEXEC);
	if (fd < 0)
		return sys_err(s, errno, "open");
	if (fstat(fd, &a) || !same(&a, listed)) {
		close(fd);
		return refuse(s, HB_EAGAIN, "changed during the scan");
	}
	s->st->dirs++;
	rc = walk(s, fd, depth + 1);
	close(fd);
	return rc;
}

/* One entry of the directory at dfd; s->path already names it. */
static int entry(struct scan *s, int dfd, const char *name, unsigned depth)
{
	struct hb_err e = {0};
	struct stat st;

	if (hb_ckpt_path_check(s->path, s->len, "name", &e))
		return refuse(s, HB_EINVAL, e.msg);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? refuse(s, HB_EAGAIN,
						"removed during the scan")
				       : sys_err(s, errno, "stat");
	if (S_ISLNK(st.st_mode))
		return skip(s, &s->st->skipped_links, "a symbolic link");
	if (S_ISDIR(st.st_mode))
		return scan_dir(s, dfd, name, &st, depth);
	if (S_ISREG(st.st_mode))
		return scan_file(s, dfd, name, &st);
	return skip(s, &s->st->skipped_special,
		    "a device, FIFO or socket");
}

static int walk(struct scan *s, int dfd, unsigned depth)
{
	size_t was = s->len;
	struct dirent *de;
	int fd, rc = 0;
	DIR *d;

	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return sys_err(s, errno, "list");
	}
	while (!rc) {
		size_t n;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				rc = sys_err(s, errno, "list");
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n = strlen(de->d_name);
		if (was + 1 + n > HB_CKPT_PATH_MAX) {
			rc = refuse(s, HB_EINVAL, "a path under it is longer "
				    "than 4095 bytes");
			break;
		}
		if (was)
			s->path[s->len++] = '/';
		memcpy(s->path + s->len, de->d_name, n + 1);
		s->len += n;
		rc = entry(s, dirfd(d), de->d_name, depth);
		s->len = was;
		s->path[was] = '\0';
	}
	closedir(d);
	return rc;
}

int hb_ckpt_scan(const char *dir, const struct hb_ckpt_scan_opts *opts,
		 struct hb_ckpt_manifest **out, struct hb_ckpt_scan_stats *st,
		 struct hb_err *err)
{
	static const struct hb_ckpt_scan_opts none;
	struct hb_ckpt_scan_stats local;
	struct scan s = {.o = opts ? opts : &none, .err = err, .dir = dir};
	struct stat top;
	int fd, rc;

	*out = NULL;
	s.st = st ? st : &local;
	memset(s.st, 0, sizeof(*s.st));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ckpt_sys_err(err, errno, dir, "open");
	s.m = hb_ckpt_manifest_new();
	s.buf = malloc(SCAN_BUF);
	if (!s.m || !s.buf) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "%s: out of memory",
				dir);
		goto out;
	}
	if (fstat(fd, &top)) {
		rc = ckpt_sys_err(err, errno, dir, "stat");
		goto out;
	}
	s.dev = top.st_dev;
	s.owner = top.st_uid;
	s.m->created = s.o->created ? s.o->created : (int64_t)time(NULL);
	rc = hb_ckpt_manifest_set_job(s.m, s.o->job ? s.o->job : "-", err);
	if (!rc)
		rc = walk(&s, fd, 0);
	if (!rc)
		rc = hb_ckpt_manifest_seal(s.m, err);
out:
	close(fd);
	free(s.buf);
	if (rc) {
		hb_ckpt_manifest_free(s.m);
		return rc;
	}
	*out = s.m;
	return 0;
}
