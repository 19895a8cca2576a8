/*
 * fsutil.c - the system-call helpers of the checkpoint part: errno into
 * HB_E* codes and messages, walking a relative path under a directory
 * descriptor without following links, removing a tree, SHA-256 of a
 * descriptor, and the directory source that copies an earlier
 * checkpoint's files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ckpt_int.h"

int ckpt_errno_code(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
	case EROFS:
	case ELOOP:
	case ENOTDIR:
		return HB_EPERM;
	case ENOENT:
		return HB_ENOENT;
	case ENOMEM:
		return HB_ENOMEM;
	case EEXIST:
	case ENOTEMPTY:
		return HB_EEXIST;
	default:
		return HB_EIO;
	}
}

int ckpt_sys_err(struct hb_err *err, int e, const char *path,
		 const char *what)
{
	const char *why = e == ELOOP	 ? "a symbolic link on the way"
			  : e == ENOTDIR ? "a symbolic link or a file on the "
					   "way, not a directory"
					 : strerror(e);

	return hb_err_set(err, ckpt_errno_code(e), NULL, 0, "%s: %s: %s",
			  path, what, why);
}

/* Copy the component of path at p (up to '/' or the end) into name. */
static size_t component(const char *p, char name[HB_CKPT_NAME_MAX + 1])
{
	size_t n = strcspn(p, "/");

	if (n == 0 || n > HB_CKPT_NAME_MAX)
		return 0;
	memcpy(name, p, n);
	name[n] = '\0';
	return n;
}

int ckpt_open_parent(int dirfd, const char *path, int create,
		     const char **base)
{
	char name[HB_CKPT_NAME_MAX + 1];
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	const char *p = path;

	while (fd >= 0 && strchr(p, '/')) {
		size_t n = component(p, name);
		int next;

		if (!n || !strcmp(name, ".") || !strcmp(name, "..")) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0777) && errno != EEXIST) {
				int e = errno;

				close(fd);
				errno = e;
				return -1;
			}
			next = openat(fd, name, O_RDONLY | O_DIRECTORY |
							O_NOFOLLOW | O_CLOEXEC);
		}
		close(fd);
		fd = next;
		p += n + 1;
	}
	*base = p;
	return fd;
}

static int remove_dir_contents(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (ckpt_remove_tree(dirfd(d), de->d_name))
			rc = -1;
	}
	closedir(d);
	return rc;
}

int ckpt_remove_tree(int dirfd, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) && errno != ENOENT ? -1 : 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (remove_dir_contents(fd))
		return -1;
	return unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT ? -1
								       : 0;
}

int ckpt_sha256_fd_buf(int fd, const char *what, char *buf, size_t bufsz,
		       uint8_t out[32], uint64_t *bytes, struct hb_err *err)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint64_t total = 0;
	unsigned len = 0;
	int rc = 0;

	if (!md)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "%s: out of memory",
				  what);
	if (!EVP_DigestInit_ex(md, EVP_sha256(), NULL)) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "%s: SHA-256 failed",
				what);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = ckpt_sys_err(err, errno, what, "read");
			goto out;
		}
		if (n == 0)
			break;
		EVP_DigestUpdate(md, buf, (size_t)n);
		total += (uint64_t)n;
	}
	if (!EVP_DigestFinal_ex(md, out, &len) || len != 32)
		rc = hb_err_set(err, HB_EIO, NULL, 0, "%s: SHA-256 failed",
				what);
	*bytes = total;
out:
	EVP_MD_CTX_free(md);
	return rc;
}

int hb_ckpt_sha256_fd(int fd, const char *what, uint8_t out[32],
		      uint64_t *bytes, struct hb_err *err)
{
	size_t bufsz = 256 * 1024;
	char *buf = malloc(bufsz);
	int rc;

	if (!buf)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "%s: out of memory",
				  what);
	rc = ckpt_sha256_fd_buf(fd, what, buf, bufsz, out, bytes, err);
	free(buf);
	return rc;
}

/* Copy at most max bytes from in to out: copy_file_range() where the
 * kernel can, read and write where it cannot. */
static int copy_fd(int in, int out, uint64_t max, const char *path,
		   struct hb_err *err)
{
	char buf[64 * 1024];
	int plain = 0;

	while (max > 0) {
		size_t want = max > (1u << 30) ? (1u << 30) : (size_t)max;
		ssize_t n;

		if (!plain) {
			n = copy_file_range(in, NULL, out, NULL, want, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL ||
				      errno == ENOSYS || errno == EOPNOTSUPP)) {
				plain = 1;
				continue;
			}
		} else {
			n = read(in, buf, want < sizeof(buf) ? want
							       : sizeof(buf));
			for (ssize_t done = 0, w; n > 0 && done < n;
			     done += w) {
				w = write(out, buf + done, (size_t)(n - done));
				if (w < 0 && errno == EINTR)
					w = 0;
				else if (w < 0)
					return ckpt_sys_err(err, errno, path,
							    "write");
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ckpt_sys_err(err, errno, path, "copy");
		if (n == 0)
			break;
		max -= (uint64_t)n;
	}
	return 0;
}

int hb_ckpt_open_file(int dirfd, const char *path, struct hb_err *err)
{
	const char *base;
	struct stat st;
	int pfd, in;

	if (hb_ckpt_path_check(path, strlen(path), NULL, err))
		return HB_EINVAL;
	pfd = ckpt_open_parent(dirfd, path, 0, &base);
	if (pfd < 0)
		return ckpt_sys_err(err, errno, path, "open");
	in = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				       O_CLOEXEC);
	close(pfd);
	if (in < 0)
		return ckpt_sys_err(err, errno, path, "open");
	if (fstat(in, &st) || !S_ISREG(st.st_mode)) {
		close(in);
		return hb_err_set(err, HB_EPERM, NULL, 0,
				   "%s: not a regular file", path);
	}
	return in;
}

int hb_ckpt_fetch_dir(void *ctx, const struct hb_ckpt_file *f, int fd,
		      struct hb_err *err)
{
	const struct hb_ckpt_dir_source *src = ctx;
	int in, rc;

	in = hb_ckpt_open_file(src->dirfd, f->path, err);
	if (in < 0)
		return in;
	/* One byte more than the manifest says, so a longer file is
	 * caught by the size check rather than copied whole. */
	rc = copy_fd(in, fd, f->size + 1, f->path, err);
	close(in);
	return rc;
}
