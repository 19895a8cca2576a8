/*
 * ckpt.h - checkpoints on the filesystem side: the manifest that says what
 * a complete checkpoint holds, scanning a directory into one, and
 * materialising one into a directory that appears whole or not at all.
 *
 * docs/checkpoints.md describes the manifest format for users;
 * docs/internals/ckpt.md says how the code keeps every path inside its
 * directory.
 */
#ifndef HPCBRIDGE_CKPT_H
#define HPCBRIDGE_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* The format tag every manifest carries; another tag is HB_EUNSUP. */
#define HB_CKPT_FORMAT "hpcbridge-checkpoint/1"

/* Caps: a manifest (its text, its files, their bytes), a path, one
 * component of a path, the job id, and a directory's depth. */
#define HB_CKPT_MANIFEST_MAX (256u * 1024 * 1024)
#define HB_CKPT_MAX_FILES 1000000u
#define HB_CKPT_MAX_TOTAL (1ull << 50) /* 1 PiB */
#define HB_CKPT_PATH_MAX 4095u
#define HB_CKPT_NAME_MAX 255u
#define HB_CKPT_JOB_MAX 256u
#define HB_CKPT_DEPTH_MAX 128u

/* One file of a checkpoint. */
struct hb_ckpt_file {
	const char *path;  /* relative, normalised (hb_ckpt_path_check) */
	uint64_t size;     /* bytes */
	uint32_t mode;     /* permission bits, 0 to 0777 */
	uint8_t sha256[32];
};

/*
 * A manifest.  Every string lives in its arena; hb_ckpt_manifest_free()
 * releases all of it.  After hb_ckpt_manifest_seal() (which the readers
 * and the scanner call), files[] is sorted by path, component by
 * component (hb_ckpt_path_cmp()), and total is the sum of the sizes.
 */
struct hb_ckpt_manifest {
	int64_t created;   /* seconds since the epoch, UTC */
	const char *job;   /* the job id, 1 to HB_CKPT_JOB_MAX bytes */
	struct hb_ckpt_file *files;
	size_t nfiles;
	size_t cap;
	uint64_t total;
	struct hb_arena arena;
};

/* An empty manifest (created 0, job "", no files); NULL when out of
 * memory.  Free with hb_ckpt_manifest_free(); NULL is a no-op. */
struct hb_ckpt_manifest *hb_ckpt_manifest_new(void);
void hb_ckpt_manifest_free(struct hb_ckpt_manifest *m);

/* Set the job id (copied): HB_EINVAL "job: ..." when empty, too long,
 * not UTF-8 or holding a control character. */
int hb_ckpt_manifest_set_job(struct hb_ckpt_manifest *m, const char *job,
			     struct hb_err *err);

/*
 * Add a file (path copied).  The path is checked here (HB_EINVAL naming
 * it); the set of paths is checked by hb_ckpt_manifest_seal().
 * HB_ETOOBIG past HB_CKPT_MAX_FILES, HB_ERANGE for a mode past 0777 or a
 * size past HB_CKPT_MAX_TOTAL.
 */
int hb_ckpt_manifest_add(struct hb_ckpt_manifest *m, const char *path,
			 uint64_t size, uint32_t mode,
			 const uint8_t sha256[32], struct hb_err *err);

/*
 * Sort the files and check them as a set: no two paths the same, none
 * equal to another when ASCII letters are folded to lower case ("A" and
 * "a": they cannot both exist on a case-insensitive filesystem), no path
 * under another file ("a" and "a/b"), and a total under
 * HB_CKPT_MAX_TOTAL.  HB_EINVAL names both paths; HB_ETOOBIG.
 */
int hb_ckpt_manifest_seal(struct hb_ckpt_manifest *m, struct hb_err *err);

/*
 * Read a manifest of len bytes named name (for messages).  Strict and
 * total: JSON exactly as docs/checkpoints.md gives it, every key known
 * and present once, every value checked; the result is sealed.  Errors
 * read "NAME:LINE: FIELD: why" ("m.json:9: files[3].path: ..."):
 * HB_EINVAL, HB_EUNSUP (another format), HB_ETOOBIG, HB_ERANGE,
 * HB_ENOMEM.  Caller frees *out with hb_ckpt_manifest_free().
 */
int hb_ckpt_manifest_parse(const char *buf, size_t len, const char *name,
			   struct hb_ckpt_manifest **out, struct hb_err *err);

/*
 * Append the manifest's JSON to out: keys in a fixed order, one file per
 * line, files in the order of files[] (sorted once sealed), so the same
 * manifest always gives the same bytes.  HB_ETOOBIG past the buffer's
 * cap or HB_CKPT_MANIFEST_MAX; out is then left as it was.
 */
int hb_ckpt_manifest_write(const struct hb_ckpt_manifest *m,
			   struct hb_buf *out);

/*
 * Whether path (n bytes) is a good checkpoint path: relative, at most
 * HB_CKPT_PATH_MAX bytes, components of 1 to HB_CKPT_NAME_MAX bytes
 * separated by single '/', none "." or "..", valid UTF-8 with no control
 * character (below 0x20, DEL, U+0080 to U+009F).  0, or HB_EINVAL with
 * "WHAT: why" (what names the field; NULL reads "path").  For manifests
 * and for any listing a remote store gives.
 */
int hb_ckpt_path_check(const char *path, size_t n, const char *what,
		       struct hb_err *err);

/* Order of paths, component by component: '/' sorts before every other
 * byte, so a directory's files come together ("a", "a/b", "a-b"). */
int hb_ckpt_path_cmp(const char *a, const char *b);

/* The file at path in a sealed manifest, or NULL (binary search). */
const struct hb_ckpt_file *hb_ckpt_manifest_find(
	const struct hb_ckpt_manifest *m, const char *path);

/* d as 64 lowercase hex digits and a NUL. */
void hb_ckpt_hex(const uint8_t d[32], char out[65]);

/* ---- Scanning (gateway/ckpt/scan.c) ----------------------------------- */

/* What a scan passed over.  Files and bytes are what the manifest got. */
struct hb_ckpt_scan_stats {
	uint64_t files, bytes;
	uint64_t dirs;
	uint64_t skipped_links;   /* symbolic links: never followed */
	uint64_t skipped_special; /* devices, FIFOs, sockets */
	uint64_t skipped_mounts;  /* directories of another filesystem */
};

/* Refuse (HB_EPERM) instead of skipping links and special files. */
#define HB_CKPT_SCAN_STRICT 0x1u

struct hb_ckpt_scan_opts {
	unsigned flags;
	const char *job;  /* the manifest's job id; NULL: "-" */
	int64_t created;  /* the manifest's time; 0: now */
	/* Called with each entry's relative path after it is listed and
	 * before it is opened (tests use it to swap a file for a link);
	 * NULL: none. */
	void (*before_open)(void *ctx, const char *path);
	/* Called with each file once it is hashed and in the manifest (f
	 * and its path are borrowed for the call); non-zero stops the scan,
	 * which returns it.  NULL: none. */
	int (*on_file)(void *ctx, const struct hb_ckpt_file *f,
		       struct hb_err *err);
	void *ctx;
};

/*
 * A manifest of the directory dir: every regular file under it, with its
 * size, permission bits and SHA-256.  The walk opens each entry by name
 * relative to its parent's descriptor with O_NOFOLLOW and checks that
 * what it opened is what it listed, so no link, even one swapped in
 * during the scan, makes it read outside dir.  Symbolic links, devices,
 * FIFOs and sockets are skipped (HB_CKPT_SCAN_STRICT: refused), and so
 * are directories of other filesystems.  Refused, HB_EPERM: a file with
 * more than one link whose owner is not dir's owner (someone else's file
 * linked in).  Names that are not good paths are HB_EINVAL; a file that
 * changes while it is read is HB_EAGAIN (scan again).  opts and st may be
 * NULL.  Caller frees *out with hb_ckpt_manifest_free().
 */
int hb_ckpt_scan(const char *dir, const struct hb_ckpt_scan_opts *opts,
		 struct hb_ckpt_manifest **out, struct hb_ckpt_scan_stats *st,
		 struct hb_err *err);

/* The SHA-256 of the rest of fd from where it stands, and how many bytes
 * that was.  HB_EIO names what (a path, for the message). */
int hb_ckpt_sha256_fd(int fd, const char *what, uint8_t out[32],
		      uint64_t *bytes, struct hb_err *err);

/* ---- Materialising (gateway/ckpt/materialise.c) ----------------------- */

/*
 * Where file contents come from.  fetch writes the whole of file f into
 * fd (open for writing, empty, at offset 0) and returns 0 or a negative
 * HB_E* with err set.  HB_EAGAIN, HB_ETIMEDOUT and HB_EUNAVAIL mean the
 * source went away for now: what was completed is kept for a resume.
 */
typedef int (*hb_ckpt_fetch_fn)(void *ctx, const struct hb_ckpt_file *f,
				int fd, struct hb_err *err);

/* Open the regular file at path (a good checkpoint path) under dirfd for
 * reading, each component opened with O_NOFOLLOW: a link anywhere on the
 * way, or a path that is not a regular file, is refused (HB_EPERM).  The
 * descriptor (close-on-exec, non-blocking), or a negative HB_E* with err
 * naming the path. */
int hb_ckpt_open_file(int dirfd, const char *path, struct hb_err *err);

/* A source that copies from the directory of an earlier checkpoint
 * (ctx: a struct hb_ckpt_dir_source), each path opened confined to it. */
struct hb_ckpt_dir_source {
	int dirfd; /* borrowed */
};
int hb_ckpt_fetch_dir(void *ctx, const struct hb_ckpt_file *f, int fd,
		      struct hb_err *err);

struct hb_ckpt_mat_stats {
	uint64_t fetched, fetched_bytes; /* files the source wrote */
	uint64_t kept, kept_bytes;       /* already there, right digest */
	uint64_t reused;                 /* copied from opts.reuse */
	uint64_t pruned;                 /* leftovers removed on resume */
};

struct hb_ckpt_mat_opts {
	/* A directory to copy unchanged files from before fetching (an
	 * earlier checkpoint); NULL: none. */
	const char *reuse;
	/* Files fetched at once: 0 or 1, one after the other on the
	 * caller's thread; more, that many threads call fetch, which must
	 * then be safe to call from several threads (at most 64). */
	unsigned jobs;
};

/*
 * Make directory target hold exactly the checkpoint m, whole or not at
 * all.  Files are written under TARGET's parent, in ".NAME.hbpart", each
 * checked for its size and SHA-256 as written and given its mode; one
 * syncfs() puts them all on the disk; then the directory is renamed into
 * place atomically (an existing target is exchanged with it and
 * removed).  Paths stay inside the temporary directory whatever m says:
 * each is checked again, and each component is opened with O_NOFOLLOW
 * under its parent's descriptor.
 *
 * Resume: a ".NAME.hbpart" left by an interrupted run is used again:
 * files in it with the right size and digest are kept, anything the
 * manifest does not hold is removed.  One run at a time holds it (flock);
 * one another user owns is refused.  On failure the target is untouched
 * and the temporary directory removed, except when fetch said the source
 * went away (HB_EAGAIN, HB_ETIMEDOUT, HB_EUNAVAIL), which keeps it for a
 * resume.  Errors name the path: HB_EINVAL (a bad path, digest or size),
 * HB_EIO (a full disk reads "No space left on device"), HB_EPERM
 * (EACCES, a link on the way), HB_EEXIST (target is not a directory),
 * HB_ECONFLICT (another run), and fetch's own.  opts and st may be NULL.
 */
int hb_ckpt_materialise(const struct hb_ckpt_manifest *m, const char *target,
			hb_ckpt_fetch_fn fetch, void *ctx,
			const struct hb_ckpt_mat_opts *opts,
			struct hb_ckpt_mat_stats *st, struct hb_err *err);

#endif
