/*
 * snapfile.h - the snapshot file: what the daemon publishes at every
 * refresh and the job_submit plugin maps read-only inside slurmctld to
 * decide from.
 *
 * A file is a 64-byte header (explicit little-endian fields, the same
 * for every build), a body of at most HB_SNAPFILE_BODY_MAX bytes and one
 * NUL byte after the body.  The header carries a checksum of everything
 * after its own field, so a torn, truncated or corrupted file is refused
 * whole.  The byte layout, the versioning rule and the trust checks are
 * in docs/internals/snapshot-file.md.  What the body says is not this
 * module's business.
 */
#ifndef HPCBRIDGE_SNAPFILE_H
#define HPCBRIDGE_SNAPFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcbridge/error.h"

#define HB_SNAPFILE_FORMAT   1	/* layout of the header below */
#define HB_SNAPFILE_HEADER   64 /* bytes */
#define HB_SNAPFILE_BODY_MAX (64u << 20)

/* The magic that opens every file, 8 bytes: "HBSNAP", a NUL, a LF. */
#define HB_SNAPFILE_MAGIC "HBSNAP\0\n"

/* The fixed SipHash-1-3 key of the checksum (not a secret: the checksum
 * catches torn and damaged files, not forgeries; trust is the file's
 * owner and mode). */
#define HB_SNAPFILE_KEY0 0x30656c6966706e73ull /* "snpfile0", LE */
#define HB_SNAPFILE_KEY1 0x31656c6966706e73ull /* "snpfile1", LE */

struct hb_snapfile_meta {
	/* grows with every file the daemon writes; never 0 */
	uint64_t version;
	int64_t written_ms; /* Unix ms, the writer's wall clock */
	int64_t max_age_ms; /* stale once now > written_ms + max_age_ms (> 0) */
	/* Gateway ids leased to the plugin with this file: [lo, hi];
	 * 0,0: none.  lo <= hi, and lo is 0 only when hi is. */
	uint64_t lease_lo, lease_hi;
};

/*
 * Encode header and body and put them at path atomically: a temporary
 * file ".BASE.PID.N" in path's directory (O_CREAT|O_EXCL|O_NOFOLLOW,
 * exactly mode, group gid unless gid is (gid_t)-1), everything written,
 * then renamed over path.  No fsync: the file is derived data, and a
 * reader that finds a torn or empty file after a power cut treats it as
 * missing.  The temporary file is removed on any failure, so path holds
 * the old file or the new one, never part of one.  Errors name path:
 * HB_EINVAL (meta out of bounds, a mode writable by group or others),
 * HB_ETOOBIG (len over HB_SNAPFILE_BODY_MAX), HB_EPERM, HB_ENOENT (no
 * such directory), HB_EIO.
 */
int hb_snapfile_write(const char *path, const struct hb_snapfile_meta *m,
		      const void *body, size_t len, mode_t mode, gid_t gid,
		      struct hb_err *err);

/*
 * Check a whole file image of len bytes at buf: magic, format, header
 * length, body length, the trailing NUL, the checksum, then the meta's
 * bounds.  On success *m is the meta and *body and *blen the body inside buf
 * (followed by a NUL not counted in blen, so it reads as a C string
 * when it holds none).  HB_EPROTO otherwise, with err naming the field
 * ("format 7 not understood", "checksum mismatch ...").  Pure: no I/O.
 */
int hb_snapfile_parse(const void *buf, size_t len, struct hb_snapfile_meta *m,
		      const char **body, size_t *blen, struct hb_err *err);

/* A mapped snapshot.  body points into map, valid until
 * hb_snapfile_close(). */
struct hb_snapfile {
	void *map;
	size_t maplen;
	struct hb_snapfile_meta meta;
	const char *body;
	size_t blen;
	/* what was opened, for hb_snapfile_changed() */
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
	off_t size;
};

/*
 * Open path (O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK) and check it
 * before reading a byte: a regular file with one link, owned by root or
 * trusted_uid, not writable by group or others (HB_EPERM naming the
 * owner, mode or links otherwise; a symbolic link at path is refused),
 * its size within the format's bounds; then map it read-only, close the
 * descriptor and hb_snapfile_parse() it.  HB_ENOENT when absent,
 * HB_EPROTO when damaged, HB_EIO otherwise; every message names path.
 * On error *f is zeroed and nothing stays mapped.
 */
int hb_snapfile_open(const char *path, uid_t trusted_uid, struct hb_snapfile *f,
		     struct hb_err *err);

/* Unmap and zero f.  A zeroed struct is fine. */
void hb_snapfile_close(struct hb_snapfile *f);

/*
 * 1 when the file now at path is not the one f mapped (device, inode,
 * mtime or size differ, or it is gone), 0 when it is the same.  One
 * lstat(), no open: cheap enough to call on every submission.
 */
int hb_snapfile_changed(const char *path, const struct hb_snapfile *f);

#endif
