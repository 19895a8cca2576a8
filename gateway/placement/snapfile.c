/*
 * snapfile.c - the snapshot file: its header encoded and checked byte by
 * byte (little-endian, whatever the build), written by rename over the
 * old one, and mapped read-only after its owner and mode are checked.
 * The layout is in docs/internals/snapshot-file.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpcbridge/hash.h"
#include "hpcbridge/snapfile.h"

/* Field offsets in the header. */
enum {
	OFF_MAGIC = 0,
	OFF_SUM = 8,	 /* u64: of bytes OFF_FORMAT.. to the body's end */
	OFF_FORMAT = 16, /* u16 */
	OFF_HLEN = 18,	 /* u16 */
	OFF_BLEN = 20,	 /* u32 */
	OFF_VERSION = 24,
	OFF_WRITTEN = 32,
	OFF_MAXAGE = 40,
	OFF_LEASE_LO = 48,
	OFF_LEASE_HI = 56
};

/* n bytes of v at p, least significant first. */
static void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * The checksum of a whole image: SipHash-1-3 under the fixed key of
 * every byte from the format field to the body's end, one pass over
 * memory that is contiguous in the file.
 */
static uint64_t checksum(const unsigned char *img, size_t blen)
{
	static const struct hb_siphash_key key = { HB_SNAPFILE_KEY0,
						   HB_SNAPFILE_KEY1 };

	return hb_siphash13(&key, img + OFF_FORMAT,
			    HB_SNAPFILE_HEADER - OFF_FORMAT + blen);
}

/* What any file must satisfy, written or read; NULL when it does. */
static const char *meta_wrong(const struct hb_snapfile_meta *m, char *why,
			      size_t n)
{
	if (!m->version)
		return "version is 0";
	if (m->max_age_ms <= 0)
		snprintf(why, n, "max_age_ms %" PRId64 " is not positive",
			 m->max_age_ms);
	else if (m->lease_lo > m->lease_hi || (!m->lease_lo != !m->lease_hi))
		snprintf(why, n,
			 "lease [%" PRIu64 ", %" PRIu64 "] is not a range",
			 m->lease_lo, m->lease_hi);
	else
		return NULL;
	return why;
}

int hb_snapfile_parse(const void *buf, size_t len, struct hb_snapfile_meta *m,
		      const char **body, size_t *blen, struct hb_err *err)
{
	const unsigned char *p = buf;
	const char *wrong;
	char why[96];
	size_t n;
	unsigned v;

	if (len < HB_SNAPFILE_HEADER)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "truncated: %zu bytes, shorter than the "
				  "%d-byte header",
				  len, HB_SNAPFILE_HEADER);
	if (memcmp(p + OFF_MAGIC, HB_SNAPFILE_MAGIC, 8))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "bad magic: not a snapshot file");
	v = (unsigned)get_le(p + OFF_FORMAT, 2);
	if (v != HB_SNAPFILE_FORMAT)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "format %u not understood (this build "
				  "reads %d)",
				  v, HB_SNAPFILE_FORMAT);
	v = (unsigned)get_le(p + OFF_HLEN, 2);
	if (v != HB_SNAPFILE_HEADER)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "header length %u, format %d has %d", v,
				  HB_SNAPFILE_FORMAT, HB_SNAPFILE_HEADER);
	n = get_le(p + OFF_BLEN, 4);
	if (n > HB_SNAPFILE_BODY_MAX || n != len - HB_SNAPFILE_HEADER - 1)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "body length %zu does not match the file's "
				  "%zu bytes (truncated or damaged)",
				  n, len);
	if (p[len - 1])
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "no NUL after the body");
	if (get_le(p + OFF_SUM, 8) != checksum(p, n))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "checksum mismatch (header bytes %d-%d or "
				  "body damaged)",
				  OFF_FORMAT, HB_SNAPFILE_HEADER - 1);
	m->version = get_le(p + OFF_VERSION, 8);
	m->written_ms = (int64_t)get_le(p + OFF_WRITTEN, 8);
	m->max_age_ms = (int64_t)get_le(p + OFF_MAXAGE, 8);
	m->lease_lo = get_le(p + OFF_LEASE_LO, 8);
	m->lease_hi = get_le(p + OFF_LEASE_HI, 8);
	wrong = meta_wrong(m, why, sizeof(why));
	if (wrong) {
		memset(m, 0, sizeof(*m));
		return hb_err_set(err, HB_EPROTO, NULL, 0, "%s", wrong);
	}
	*body = (const char *)p + HB_SNAPFILE_HEADER;
	*blen = n;
	return 0;
}

/* Write n bytes at p to fd; 0 or an errno. */
static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Record "snapshot PATH: what" in err; returns code. */
__attribute__((format(printf, 4, 5))) static int
snap_err(struct hb_err *err, int code, const char *path, const char *fmt, ...)
{
	char what[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return hb_err_set(err, code, NULL, 0, "snapshot %s: %s", path, what);
}

static int errno_code(int e)
{
	return e == ENOENT || e == ENOTDIR		 ? HB_ENOENT
	       : e == EACCES || e == EPERM || e == EROFS ? HB_EPERM
							 : HB_EIO;
}

/* Create the temporary file beside path: tmp gets its full name. */
static int create_tmp(const char *path, char *tmp, size_t n, mode_t mode)
{
	static unsigned seq;
	const char *slash = strrchr(path, '/');
	int dlen = slash ? (int)(slash - path + 1) : 0;

	for (int tries = 0; tries < 16; tries++) {
		unsigned s = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
		int fd, w = snprintf(tmp, n, "%.*s.%s.%ld.%u", dlen, path,
				     path + dlen, (long)getpid(), s);

		if (w < 0 || (size_t)w >= n) {
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = open(tmp,
			  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

/* The whole file in one buffer, so the checksum is one pass over the
 * bytes as the reader sees them.  Caller frees with free(). */
static unsigned char *encode(const struct hb_snapfile_meta *m, const void *body,
			     size_t len)
{
	unsigned char *img = malloc(HB_SNAPFILE_HEADER + len + 1);

	if (!img)
		return NULL;
	memset(img, 0, HB_SNAPFILE_HEADER);
	memcpy(img + OFF_MAGIC, HB_SNAPFILE_MAGIC, 8);
	put_le(img + OFF_FORMAT, HB_SNAPFILE_FORMAT, 2);
	put_le(img + OFF_HLEN, HB_SNAPFILE_HEADER, 2);
	put_le(img + OFF_BLEN, (uint32_t)len, 4);
	put_le(img + OFF_VERSION, m->version, 8);
	put_le(img + OFF_WRITTEN, (uint64_t)m->written_ms, 8);
	put_le(img + OFF_MAXAGE, (uint64_t)m->max_age_ms, 8);
	put_le(img + OFF_LEASE_LO, m->lease_lo, 8);
	put_le(img + OFF_LEASE_HI, m->lease_hi, 8);
	if (len)
		memcpy(img + HB_SNAPFILE_HEADER, body, len);
	img[HB_SNAPFILE_HEADER + len] = 0;
	put_le(img + OFF_SUM, checksum(img, len), 8);
	return img;
}

int hb_snapfile_write(const char *path, const struct hb_snapfile_meta *m,
		      const void *body, size_t len, mode_t mode, gid_t gid,
		      struct hb_err *err)
{
	char tmp[PATH_MAX], why[96];
	const char *wrong = meta_wrong(m, why, sizeof(why)), *step;
	unsigned char *img;
	int fd, e;

	if (wrong)
		return snap_err(err, HB_EINVAL, path, "%s", wrong);
	if (len > HB_SNAPFILE_BODY_MAX)
		return snap_err(err, HB_ETOOBIG, path,
				"body of %zu bytes, the most is %u", len,
				HB_SNAPFILE_BODY_MAX);
	if (mode & 022)
		return snap_err(err, HB_EINVAL, path,
				"mode %04o lets group or others write; "
				"readers refuse it",
				(unsigned)mode & 07777);
	if (!*path || path[strlen(path) - 1] == '/')
		return snap_err(err, HB_EINVAL, path, "not a file name");
	img = encode(m, body, len);
	if (!img)
		return snap_err(err, HB_ENOMEM, path, "out of memory");

	fd = create_tmp(path, tmp, sizeof(tmp), mode & 07777);
	if (fd < 0) {
		e = errno;
		free(img);
		return snap_err(err, errno_code(e), path,
				"cannot create a temporary file beside it: %s",
				strerror(e));
	}
	/* The mode exactly, whatever the umask; the group before the mode,
	 * as chown() may clear mode bits. */
	step = "chown";
	if (gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid))
		goto fail;
	step = "chmod";
	if (fchmod(fd, mode & 07777))
		goto fail;
	step = "write";
	errno = write_all(fd, img, HB_SNAPFILE_HEADER + len + 1);
	if (errno)
		goto fail;
	step = "close";
	e = close(fd);
	fd = -1;
	if (e)
		goto fail;
	step = "rename";
	if (rename(tmp, path))
		goto fail;
	free(img);
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(img);
	return snap_err(err, errno_code(e), path, "%s %s: %s", step, tmp,
			strerror(e));
}

void hb_snapfile_close(struct hb_snapfile *f)
{
	if (f->map)
		munmap(f->map, f->maplen);
	memset(f, 0, sizeof(*f));
}

/* Refuse what root or trusted_uid did not write alone; 0 or HB_EPERM. */
static int trusted(const char *path, const struct stat *st, uid_t uid,
		   struct hb_err *err)
{
	if (!S_ISREG(st->st_mode))
		return snap_err(err, HB_EPERM, path,
				"not a regular file (mode %06o)",
				(unsigned)st->st_mode);
	if (st->st_uid != 0 && st->st_uid != uid)
		return snap_err(err, HB_EPERM, path,
				"owned by uid %u, not root or %u",
				(unsigned)st->st_uid, (unsigned)uid);
	if (st->st_mode & 022)
		return snap_err(err, HB_EPERM, path,
				"mode %04o is writable by group or others",
				(unsigned)st->st_mode & 07777);
	/* A hard link elsewhere would let whoever can write that directory
	 * put an old, valid snapshot back; a renamed file has one link, or
	 * none once the next one replaced it after our open(). */
	if (st->st_nlink > 1)
		return snap_err(err, HB_EPERM, path,
				"has %ju links, a snapshot has one",
				(uintmax_t)st->st_nlink);
	return 0;
}

int hb_snapfile_open(const char *path, uid_t trusted_uid, struct hb_snapfile *f,
		     struct hb_err *err)
{
	struct hb_err inner = { 0 };
	struct stat st;
	void *map;
	int fd, rc, e;

	memset(f, 0, sizeof(*f));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		return snap_err(err, e == ELOOP ? HB_EPERM : errno_code(e),
				path, "%s",
				e == ELOOP ? "a symbolic link, not followed"
					   : strerror(e));
	}
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		return snap_err(err, HB_EIO, path, "%s", strerror(e));
	}
	rc = trusted(path, &st, trusted_uid, err);
	if (!rc && (st.st_size < HB_SNAPFILE_HEADER ||
		    st.st_size > HB_SNAPFILE_HEADER + HB_SNAPFILE_BODY_MAX + 1))
		rc = snap_err(err, HB_EPROTO, path,
			      "size %jd is outside %d..%u",
			      (intmax_t)st.st_size, HB_SNAPFILE_HEADER,
			      HB_SNAPFILE_HEADER + HB_SNAPFILE_BODY_MAX + 1);
	if (rc) {
		close(fd);
		return rc;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = errno;
	close(fd);
	if (map == MAP_FAILED)
		return snap_err(err, HB_EIO, path, "mmap: %s", strerror(e));
	rc = hb_snapfile_parse(map, (size_t)st.st_size, &f->meta, &f->body,
			       &f->blen, &inner);
	if (rc) {
		munmap(map, (size_t)st.st_size);
		memset(f, 0, sizeof(*f));
		return snap_err(err, rc, path, "%s", inner.msg);
	}
	f->map = map;
	f->maplen = (size_t)st.st_size;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->mtime_ns =
		(int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	f->size = st.st_size;
	return 0;
}

int hb_snapfile_changed(const char *path, const struct hb_snapfile *f)
{
	struct stat st;

	/* f's mapping keeps its inode alive, so a new file cannot reuse
	 * the inode number: a rename always shows. */
	if (lstat(path, &st))
		return 1;
	return st.st_dev != f->dev || st.st_ino != f->ino ||
	       st.st_size != f->size ||
	       (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec !=
		       f->mtime_ns;
}
