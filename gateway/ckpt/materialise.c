/*
 * materialise.c - a checkpoint manifest into a directory that appears
 * whole or not at all.  Files are written into ".NAME.hbpart" beside the
 * target, each checked for size and SHA-256 as written and synced; then
 * the directory takes the target's place in one rename (an exchange when
 * a target exists).  A run that stops part way leaves its ".hbpart" for
 * the next one, which keeps the files already right.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_int.h"

#define HASH_BUF (256 * 1024)

struct mat {
	const struct hb_ckpt_manifest *m;
	hb_ckpt_fetch_fn fetch;
	void *ctx;
	struct hb_ckpt_mat_stats *st;
	struct hb_err *err;
	int pfd, tfd;        /* the target's parent, the temporary directory */
	int reuse_fd;        /* opts->reuse, or -1 */
	char name[HB_CKPT_NAME_MAX + 1];  /* the target's last component */
	char tmp[HB_CKPT_NAME_MAX + 16];  /* ".NAME.hbpart" */
	char dir[HB_CKPT_PATH_MAX + 1];   /* the directory dfd holds */
	int dfd;
	int owned;           /* the temporary directory is ours to remove */
	char *buf;
	char rel[HB_CKPT_PATH_MAX + HB_CKPT_NAME_MAX + 2]; /* prune's path */
};

/* Whether fd holds f exactly: its size, then its SHA-256.  0, or
 * HB_EINVAL naming what is wrong. */
static int verify(struct mat *t, int fd, const struct hb_ckpt_file *f)
{
	char want[65], got[65];
	uint8_t sha[32];
	struct stat st;
	uint64_t n = 0;
	int rc;

	if (fstat(fd, &st))
		return ckpt_sys_err(t->err, errno, f->path, "stat");
	if ((uint64_t)st.st_size != f->size)
		return hb_err_set(t->err, HB_EINVAL, NULL, 0,
				  "%s: %lld bytes written, the manifest says "
				  "%llu", f->path, (long long)st.st_size,
				  (unsigned long long)f->size);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return ckpt_sys_err(t->err, errno, f->path, "seek");
	rc = ckpt_sha256_fd_buf(fd, f->path, t->buf, HASH_BUF, sha, &n,
				t->err);
	if (rc)
		return rc;
	if (n == f->size && !memcmp(sha, f->sha256, 32))
		return 0;
	hb_ckpt_hex(sha, got);
	hb_ckpt_hex(f->sha256, want);
	return hb_err_set(t->err, HB_EINVAL, NULL, 0,
			  "%s: SHA-256 %s, the manifest says %s", f->path, got,
			  want);
}

/* The directory of f under the temporary one, in t->dfd; consecutive
 * files of one directory open it once. */
static int parent_of(struct mat *t, const struct hb_ckpt_file *f,
		     const char **base)
{
	const char *slash = strrchr(f->path, '/');
	size_t n = slash ? (size_t)(slash - f->path) : 0;

	*base = slash ? slash + 1 : f->path;
	if (t->dfd >= 0 && strlen(t->dir) == n && !memcmp(t->dir, f->path, n))
		return 0;
	if (t->dfd >= 0)
		close(t->dfd);
	t->dfd = ckpt_open_parent(t->tfd, f->path, 1, base);
	if (t->dfd < 0)
		return ckpt_sys_err(t->err, errno, f->path,
				    "make its directory");
	memcpy(t->dir, f->path, n);
	t->dir[n] = '\0';
	return 0;
}

/* Give the file its mode: it is then done.  Its bytes reach the disk by
 * build()'s one syncfs() before the rename. */
static int finish(struct mat *t, int fd, const struct hb_ckpt_file *f)
{
	if (fchmod(fd, f->mode))
		return ckpt_sys_err(t->err, errno, f->path, "chmod");
	return 0;
}

/* A file a run before left: 1 if it is right and kept, 0 if it is gone
 * (wrong, or never there), or an error. */
static int keep(struct mat *t, const struct hb_ckpt_file *f,
		const char *base)
{
	struct hb_err e = {0};
	struct stat st;
	int fd, rc;

	fd = openat(t->dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					  O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == f->size) {
		struct hb_err *was = t->err;

		t->err = &e;
		rc = verify(t, fd, f);
		t->err = was;
		if (!rc) {
			rc = finish(t, fd, f);
			close(fd);
			return rc ? rc : 1;
		}
	}
	if (fd >= 0)
		close(fd);
	if (ckpt_remove_tree(t->dfd, base))
		return ckpt_sys_err(t->err, errno, f->path, "remove");
	return 0;
}

/* Rewind an empty-again fd after a source that failed. */
static int restart(struct mat *t, int fd, const struct hb_ckpt_file *f)
{
	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) < 0)
		return ckpt_sys_err(t->err, errno, f->path, "truncate");
	return 0;
}

static int one_file(struct mat *t, const struct hb_ckpt_file *f)
{
	struct hb_err e = {0};
	const char *base;
	int fd, rc;

	/* Checked again: a manifest built by hand skips the readers. */
	rc = hb_ckpt_path_check(f->path, strlen(f->path), f->path, t->err);
	if (!rc && f->size > HB_CKPT_MAX_TOTAL)
		rc = hb_err_set(t->err, HB_ERANGE, NULL, 0, "%s: too large",
				f->path);
	if (!rc)
		rc = parent_of(t, f, &base);
	if (rc)
		return rc;
	rc = keep(t, f, base);
	if (rc) {
		if (rc == 1) {
			t->st->kept++;
			t->st->kept_bytes += f->size;
			rc = 0;
		}
		return rc;
	}
	fd = openat(t->dfd, base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					  O_CLOEXEC, 0600);
	if (fd < 0)
		return ckpt_sys_err(t->err, errno, f->path, "create");
	if (t->reuse_fd >= 0) {
		struct hb_ckpt_dir_source src = {t->reuse_fd};
		struct hb_err *was = t->err;

		t->err = &e;
		rc = hb_ckpt_fetch_dir(&src, f, fd, &e);
		if (!rc)
			rc = verify(t, fd, f);
		t->err = was;
		if (!rc) {
			t->st->reused++;
			goto done;
		}
		rc = restart(t, fd, f);
		if (rc)
			goto done;
	}
	rc = t->fetch(t->ctx, f, fd, t->err);
	if (rc) {
		hb_err_set(t->err, rc, NULL, 0, "%s: the source failed: %s",
			   f->path, hb_strerror(rc));
		goto done;
	}
	rc = verify(t, fd, f);
	if (!rc) {
		t->st->fetched++;
		t->st->fetched_bytes += f->size;
	}
done:
	if (!rc)
		rc = finish(t, fd, f);
	close(fd);
	return rc;
}

/* Whether some file of the manifest lies under directory rel. */
static int needed_dir(const struct hb_ckpt_manifest *m, const char *rel)
{
	size_t n = strlen(rel), i = ckpt_lower_bound(m, rel);

	if (i < m->nfiles && !strcmp(m->files[i].path, rel))
		i++;
	return i < m->nfiles && !strncmp(m->files[i].path, rel, n) &&
	       m->files[i].path[n] == '/';
}

/* Remove from the temporary directory what the manifest does not hold,
 * so that a run resumed for another manifest leaves nothing behind. */
static int prune(struct mat *t, int dfd, size_t len)
{
	struct dirent *de;
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0), rc = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return ckpt_sys_err(t->err, errno, t->tmp, "list");
	}
	while (!rc && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct stat st;
		int keep_it = 0;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (len + n + 2 > sizeof(t->rel))
			goto remove;
		if (len)
			t->rel[len] = '/';
		memcpy(t->rel + len + !!len, de->d_name, n + 1);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			goto remove;
		if (S_ISREG(st.st_mode))
			keep_it = hb_ckpt_manifest_find(t->m, t->rel) != NULL;
		else if (S_ISDIR(st.st_mode) && needed_dir(t->m, t->rel)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY |
					 O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				rc = prune(t, sub, len + !!len + n);
				close(sub);
				keep_it = 1;
			}
		}
remove:
		t->rel[len] = '\0';
		if (keep_it)
			continue;
		if (ckpt_remove_tree(dirfd(d), de->d_name))
			rc = ckpt_sys_err(t->err, errno, t->tmp, "prune");
		t->st->pruned++;
	}
	closedir(d);
	return rc;
}

/* Split target into its parent (opened into t->pfd) and its name. */
static int open_target(struct mat *t, const char *target)
{
	char parent[4096];
	size_t n = strlen(target);
	const char *base;
	char *slash;

	while (n > 1 && target[n - 1] == '/')
		n--;
	if (n == 0 || n >= sizeof(parent))
		return hb_err_set(t->err, HB_EINVAL, NULL, 0,
				  "%s: not a directory name", target);
	memcpy(parent, target, n);
	parent[n] = '\0';
	slash = strrchr(parent, '/');
	base = slash ? slash + 1 : parent;
	n = strlen(base);
	if (n == 0 || n > HB_CKPT_NAME_MAX - 8 || !strcmp(base, ".") ||
	    !strcmp(base, ".."))
		return hb_err_set(t->err, HB_EINVAL, NULL, 0,
				  "%s: not a directory name", target);
	memcpy(t->name, base, n + 1);
	snprintf(t->tmp, sizeof(t->tmp), ".%s.hbpart", t->name);
	if (slash == parent)
		parent[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof(parent), ".");
	t->pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->pfd < 0)
		return ckpt_sys_err(t->err, errno, parent, "open");
	return 0;
}

/* Make or reopen the temporary directory, ours alone: one run at a
 * time holds its lock, and one another user made is refused. */
static int open_tmp(struct mat *t)
{
	struct stat st;

	if (mkdirat(t->pfd, t->tmp, 0777) && errno != EEXIST)
		return ckpt_sys_err(t->err, errno, t->tmp, "create");
	t->tfd = openat(t->pfd, t->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						O_CLOEXEC);
	if (t->tfd < 0)
		return ckpt_sys_err(t->err, errno, t->tmp, "open");
	if (fstat(t->tfd, &st))
		return ckpt_sys_err(t->err, errno, t->tmp, "stat");
	if (st.st_uid != geteuid())
		return hb_err_set(t->err, HB_EPERM, NULL, 0,
				  "%s: owned by uid %u, not this one", t->tmp,
				  (unsigned)st.st_uid);
	if (flock(t->tfd, LOCK_EX | LOCK_NB))
		return hb_err_set(t->err, HB_ECONFLICT, NULL, 0,
				  "%s: another run is writing it", t->tmp);
	t->owned = 1;
	return prune(t, t->tfd, 0);
}

/*
 * The temporary directory takes the target's place.  An existing target
 * is exchanged with it in one renameat2(RENAME_EXCHANGE) and then
 * removed; a filesystem without exchanges (NFS) moves the old one aside
 * first, so the target is briefly absent but never partial.
 */
static int install(struct mat *t)
{
	char old[HB_CKPT_NAME_MAX + 16];
	struct stat st, ours;

	/* The name still holds the directory we wrote: one swapped in by
	 * someone who may write the parent is not renamed into place. */
	if (fstat(t->tfd, &ours) ||
	    fstatat(t->pfd, t->tmp, &st, AT_SYMLINK_NOFOLLOW) ||
	    st.st_dev != ours.st_dev || st.st_ino != ours.st_ino)
		return hb_err_set(t->err, HB_EAGAIN, NULL, 0,
				  "%s: replaced while it was written", t->tmp);
	if (fstatat(t->pfd, t->name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno != ENOENT)
			return ckpt_sys_err(t->err, errno, t->name, "stat");
		if (!renameat2(t->pfd, t->tmp, t->pfd, t->name,
			       RENAME_NOREPLACE))
			return 0;
		if (errno != EINVAL && errno != ENOSYS)
			return ckpt_sys_err(t->err, errno, t->name, "rename");
		if (renameat(t->pfd, t->tmp, t->pfd, t->name))
			return ckpt_sys_err(t->err, errno, t->name, "rename");
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return hb_err_set(t->err, HB_EEXIST, NULL, 0,
				  "%s: exists and is not a directory", t->name);
	if (!renameat2(t->pfd, t->tmp, t->pfd, t->name, RENAME_EXCHANGE))
		return ckpt_remove_tree(t->pfd, t->tmp)
			       ? ckpt_sys_err(t->err, errno, t->tmp, "remove old")
			       : 0;
	if (errno != EINVAL && errno != ENOSYS)
		return ckpt_sys_err(t->err, errno, t->name, "exchange");
	snprintf(old, sizeof(old), ".%s.hbold", t->name);
	if (ckpt_remove_tree(t->pfd, old) ||
	    renameat(t->pfd, t->name, t->pfd, old))
		return ckpt_sys_err(t->err, errno, t->name, "move aside");
	if (renameat(t->pfd, t->tmp, t->pfd, t->name)) {
		int e = errno;

		renameat(t->pfd, old, t->pfd, t->name);
		return ckpt_sys_err(t->err, e, t->name, "rename");
	}
	return ckpt_remove_tree(t->pfd, old) ?
		ckpt_sys_err(t->err, errno, old, "remove the old") : 0;
}

/* Whether a failure leaves the temporary directory for a resume: only
 * when the source said it went away for now. */
static int transient(int rc)
{
	return rc == HB_EAGAIN || rc == HB_ETIMEDOUT || rc == HB_EUNAVAIL;
}

static int build(struct mat *t)
{
	int rc = open_tmp(t);

	for (size_t i = 0; !rc && i < t->m->nfiles; i++)
		rc = one_file(t, &t->m->files[i]);
	/*
	 * Every file and directory on the disk before the rename shows them:
	 * one syncfs() of the target's filesystem rather than an fsync() per
	 * file and directory, the same guarantee at one journal commit
	 * instead of one per file (10,000 files: 0.1 s, not 8 s, on ext4).
	 */
	if (!rc && syncfs(t->tfd))
		rc = ckpt_sys_err(t->err, errno, t->tmp, "sync");
	if (!rc)
		rc = install(t);
	if (!rc && fsync(t->pfd))
		rc = ckpt_sys_err(t->err, errno, t->name, "sync");
	return rc;
}

int hb_ckpt_materialise(const struct hb_ckpt_manifest *m, const char *target,
			hb_ckpt_fetch_fn fetch, void *ctx,
			const struct hb_ckpt_mat_opts *opts,
			struct hb_ckpt_mat_stats *st, struct hb_err *err)
{
	struct hb_ckpt_mat_stats local;
	struct mat *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	*t = (struct mat){.m = m, .fetch = fetch, .ctx = ctx, .err = err,
			  .st = st ? st : &local, .pfd = -1, .tfd = -1,
			  .reuse_fd = -1, .dfd = -1};
	memset(t->st, 0, sizeof(*t->st));
	t->buf = malloc(HASH_BUF);
	rc = t->buf ? open_target(t, target)
		    : hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if (!rc && opts && opts->reuse) {
		t->reuse_fd = open(opts->reuse, O_RDONLY | O_DIRECTORY |
					O_CLOEXEC);
		if (t->reuse_fd < 0)
			rc = ckpt_sys_err(err, errno, opts->reuse, "open");
	}
	if (!rc) {
		rc = build(t);
		if (rc && t->owned && !transient(rc))
			ckpt_remove_tree(t->pfd, t->tmp);
	}
	if (t->dfd >= 0)
		close(t->dfd);
	if (t->tfd >= 0)
		close(t->tfd);
	if (t->pfd >= 0)
		close(t->pfd);
	if (t->reuse_fd >= 0)
		close(t->reuse_fd);
	free(t->buf);
	free(t);
	return rc;
}
