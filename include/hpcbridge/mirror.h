/*
 * mirror.h - checkpoints between a directory and S3: push, pull, verify,
 * list and retention, on top of the filesystem side (ckpt.h) and the S3
 * client (s3.h).
 *
 * A mirror location is "s3://BUCKET/PREFIX".  Under PREFIX:
 *
 *   PREFIX/objects/SHA256          the contents of one file, named by the
 *                                  SHA-256 of those contents (64 lowercase
 *                                  hex digits); checkpoints share them
 *   PREFIX/checkpoints/ID.json     a checkpoint's manifest (ckpt.h format)
 *
 * ID is "YYYYMMDDTHHMMSSZ-XXXXXXXX": the manifest's creation time in UTC
 * and the first 8 hex digits of the SHA-256 of its bytes, so IDs sort by
 * time and the newest checkpoint is the greatest ID.  A key under
 * checkpoints/ that is not of that form is ignored (and reported), never
 * used: no name a listing gives becomes a local path or another key.
 *
 * A checkpoint is complete when its manifest exists.  A push sends every
 * object first and the manifest last; a pull reads the manifest first and
 * materialises it with hb_ckpt_materialise(), so a directory appears
 * whole or not at all, and a partial pull never replaces a good one.
 *
 * Every call here is blocking and may start up to opts.jobs threads of its
 * own; the struct hb_s3 is shared by them (s3.h says it may be).
 */
#ifndef HPCBRIDGE_MIRROR_H
#define HPCBRIDGE_MIRROR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcbridge/ckpt.h"
#include "hpcbridge/error.h"
#include "hpcbridge/s3.h"

/* The length of "YYYYMMDDTHHMMSSZ-XXXXXXXX" (arrays add one for the NUL). */
#define HB_MIRROR_ID_LEN 25u
#define HB_MIRROR_PREFIX_MAX 512u

/* A parsed "s3://BUCKET/PREFIX" (PREFIX may be empty; no trailing '/'). */
struct hb_mirror_url {
	char bucket[64];
	char prefix[HB_MIRROR_PREFIX_MAX + 1];
};

/*
 * Parse url.  The bucket follows S3's naming rules (3 to 63 of a-z 0-9 .
 * -); the prefix is a good checkpoint path (hb_ckpt_path_check()) or
 * empty; one trailing '/' is dropped.  HB_EINVAL naming what is wrong.
 */
int hb_mirror_url_parse(const char *url, struct hb_mirror_url *out,
			struct hb_err *err);

/* Whether id (n bytes) is a well-formed checkpoint ID. */
int hb_mirror_id_valid(const char *id, size_t n);

/* What a transfer has done so far, for progress output. */
struct hb_mirror_progress {
	const char *phase;	/* "scan", "upload", "download", "verify" */
	uint64_t files_done, files_total;
	uint64_t bytes_done, bytes_total;
	uint64_t elapsed_ms;
	int final;		/* the last report of the phase */
};

/* Called from one thread at a time, at most every progress_ms and once
 * with final set at the end of each phase. */
typedef void (*hb_mirror_progress_fn)(void *ctx,
				      const struct hb_mirror_progress *p);

/* A problem verify (or a listing) found: what names the checkpoint or
 * the object or key, why says what is wrong. */
typedef void (*hb_mirror_problem_fn)(void *ctx, const char *what,
				     const char *why);

struct hb_mirror_opts {
	unsigned jobs;		/* transfers at once; 0: 4, at most 64 */
	uint64_t part_size;	/* multipart part; 0: 16 MiB (5 MiB..5 GiB) */
	uint64_t multipart_min; /* files at least this big go in parts;
				   0: 128 MiB */
	const char *job;	/* push: the manifest's job id; NULL: "-" */
	const char *checkpoint; /* pull, verify: an ID; NULL: the newest */
	unsigned keep;		/* push: then keep the newest N complete
				   checkpoints (0: keep all) */
	int64_t gc_grace_s;	/* retention: objects no checkpoint names
				   are deleted once this old; <0: 3600 */
	int deep;		/* verify: read every object and check its
				   SHA-256 (else HEAD: it exists, its size) */
	unsigned progress_ms;	/* 0: 500 */
	hb_mirror_progress_fn progress;
	hb_mirror_problem_fn problem;
	void *ctx;		/* for progress and problem */
	/* push: the tree as the caller scanned it (dir then only names it
	 * in messages), and how to open one of its files for reading: a
	 * descriptor the push closes, or a negative HB_E*; called from one
	 * thread at a time.  tree NULL: dir is scanned here; open_file NULL:
	 * its files are opened here, under dir. */
	const struct hb_ckpt_manifest *tree;
	int (*open_file)(void *open_ctx, const struct hb_ckpt_file *f,
			 struct hb_err *err);
	void *open_ctx;
};

struct hb_mirror_stats {
	char id[HB_MIRROR_ID_LEN + 1]; /* the checkpoint pushed, pulled or
					  verified ("" when none) */
	int unchanged;		/* push: the newest checkpoint already held
				   exactly this tree; none was made */
	uint64_t files, bytes;	/* in the checkpoint */
	uint64_t sent_files, sent_bytes;     /* push: uploaded */
	uint64_t stored_files, stored_bytes; /* push: already stored */
	uint64_t got_files, got_bytes;	     /* pull: downloaded */
	uint64_t kept_files, kept_bytes;     /* pull: already there */
	uint64_t bad;		/* verify: objects missing or wrong */
	uint64_t removed_checkpoints, removed_objects; /* retention */
	uint64_t aborted_uploads; /* retention: unfinished, past the grace */
	uint64_t prefix_bytes;	/* retention: bytes under PREFIX after it
				   (0 when it did not run) */
	uint64_t elapsed_ms;
};

/*
 * Push directory dir to url as a new checkpoint: scan it
 * (hb_ckpt_scan()), send every file whose contents are not stored yet,
 * then the manifest.  Contents the newest checkpoint names are taken as
 * stored; others are looked for (HEAD, or one listing of objects/ when
 * there are many), so a push that was interrupted resumes without
 * resending what it completed.  A file that changes while it is sent is
 * HB_EAGAIN and no manifest is written.  When the tree is exactly the
 * newest checkpoint's, nothing is sent: st->unchanged is set and st->id
 * names that checkpoint.  With opts.keep, hb_mirror_retain() runs after.
 */
int hb_mirror_push(struct hb_s3 *s3, const char *url, const char *dir,
		   const struct hb_mirror_opts *opts,
		   struct hb_mirror_stats *st, struct hb_err *err);

/*
 * Pull checkpoint opts.checkpoint (NULL: the newest) from url into
 * directory dir with hb_ckpt_materialise(): files dir already holds with
 * the right digest are copied, not downloaded; every object is checked
 * against its SHA-256 as it arrives.  HB_ENOENT when url holds no
 * complete checkpoint (or not that one).
 */
int hb_mirror_pull(struct hb_s3 *s3, const char *url, const char *dir,
		   const struct hb_mirror_opts *opts,
		   struct hb_mirror_stats *st, struct hb_err *err);

/*
 * Check checkpoint opts.checkpoint (NULL: the newest) at url: its manifest
 * reads, and every object it names exists with the right size (opts.deep:
 * and the right SHA-256).  Each problem goes to opts.problem; HB_EIO when
 * there was any (st->bad counts them).
 */
int hb_mirror_verify(struct hb_s3 *s3, const char *url,
		     const struct hb_mirror_opts *opts,
		     struct hb_mirror_stats *st, struct hb_err *err);

/* One complete checkpoint, as hb_mirror_list() gives it. */
struct hb_mirror_ckpt {
	const char *id;
	int64_t created;
	const char *job;
	uint64_t files, bytes;	/* what the manifest lists */
	uint64_t manifest_bytes;
};
typedef int (*hb_mirror_list_fn)(void *ctx, const struct hb_mirror_ckpt *c);

/*
 * Every complete checkpoint at url, oldest first (each manifest is read
 * and checked; one that does not read goes to opts.problem and is
 * skipped).  fn returning non-zero stops the listing, which returns it.
 * opts may be NULL.
 */
int hb_mirror_list(struct hb_s3 *s3, const char *url,
		   const struct hb_mirror_opts *opts, hb_mirror_list_fn fn,
		   void *ctx, struct hb_err *err);

/*
 * Keep the newest keep complete checkpoints at url and delete the older
 * manifests (keep 0: none deleted), then delete every object no
 * remaining manifest names and older than opts.gc_grace_s (a push in
 * progress has sent objects its manifest does not name yet).  Fills
 * removed_* and prefix_bytes: what stays under PREFIX, the bytes storage
 * is charged for.
 */
int hb_mirror_retain(struct hb_s3 *s3, const char *url, unsigned keep,
		     const struct hb_mirror_opts *opts,
		     struct hb_mirror_stats *st, struct hb_err *err);

/* The checkpoint opts->checkpoint names (opts NULL or no name: the
 * newest) at url: its manifest (read strictly; caller frees) and ID.
 * HB_ENOENT when there is none. */
int hb_mirror_manifest_get(struct hb_s3 *s3, const char *url,
			   const struct hb_mirror_opts *opts,
			   struct hb_ckpt_manifest **out,
			   char id[HB_MIRROR_ID_LEN + 1], struct hb_err *err);

/* File f's bytes from its object at url into sink, checked against its
 * SHA-256 (HB_EIO when they differ: the sink has had them). */
int hb_mirror_object_get(struct hb_s3 *s3, const char *url,
			 const struct hb_ckpt_file *f, hb_s3_sink_fn sink,
			 void *arg, struct hb_err *err);

/* ---- Mirroring by the daemon (gateway/mirror/agent.c) ------------------
 *
 * The daemon is root and a checkpoint directory is its user's: root
 * never opens a path in it.  It runs `hpcbridge ckpt agent DIR` as the
 * user with a socket, and the agent does the filesystem's part (scan,
 * open a file and pass its descriptor, materialise) while the daemon
 * keeps the S3 credentials and does the S3 part.  Everything the agent
 * says is checked as its user's input.
 */
struct hb_mirror_agent;

/* The agent's loop on socket sock, for directory dir: until 'Q' or the
 * daemon hangs up (0), or a protocol error. */
int hb_mirror_agent_serve(int sock, const char *dir, struct hb_err *err);

/* argv[1] of the program run again as the agent. */
#define HB_MIRROR_AGENT_ARG "--hb-ckpt-agent"

/*
 * Call first thing in main() of a program that spawns agents: -1 when
 * argv is not { any, HB_MIRROR_AGENT_ARG, DIR }; otherwise this process
 * is the agent (it refuses to run as root), serves the socket on its
 * stdin and ends with _exit(): it does not return.
 */
int hb_mirror_agent_main(int argc, char **argv);

/*
 * Run exe (a program calling hb_mirror_agent_main(); the daemon gives
 * /proc/self/exe) as the agent for dir, as uid, gid and groups (never
 * root: HB_EPERM): forked, the child drops with hb_user_become() and
 * runs it with the sanitizers' settings as its whole environment.  What
 * the agent writes on stdout and stderr ends up in the error of a
 * request it did not answer.  Blocks nothing; call from a worker.
 */
int hb_mirror_agent_spawn(const char *exe, const char *dir, uid_t uid,
			  gid_t gid, const gid_t *groups, size_t n,
			  int timeout_ms, struct hb_mirror_agent **out,
			  struct hb_err *err);

/* Talk to the agent on sock (taken: closed by hb_mirror_agent_free);
 * each answer must come within timeout_ms (<= 0: no limit). */
int hb_mirror_agent_new(int sock, int timeout_ms,
			struct hb_mirror_agent **out, struct hb_err *err);
/* Tell the agent to end, close the socket and reap a spawned agent
 * (killed after 2 s).  NULL is fine. */
void hb_mirror_agent_free(struct hb_mirror_agent *a);

/* The agent scans its directory; *out is the manifest it sent, parsed
 * strictly (job: the manifest's job id). */
int hb_mirror_agent_scan(struct hb_mirror_agent *a, const char *job,
			 struct hb_ckpt_manifest **out, struct hb_err *err);

/* A descriptor for the file at path, opened by the agent confined to its
 * directory: checked to be a regular file of size bytes (else HB_EAGAIN:
 * it changed) and not on FUSE.  The descriptor, or a negative HB_E*. */
int hb_mirror_agent_open(struct hb_mirror_agent *a, const char *path,
			 uint64_t size, struct hb_err *err);

/* Where the bytes of file f come from when the agent materialises: write
 * them all through sink(arg).  0 or a negative HB_E*. */
typedef int (*hb_mirror_agent_src_fn)(void *ctx, const struct hb_ckpt_file *f,
				      hb_s3_sink_fn sink, void *arg,
				      struct hb_err *err);

/* The agent materialises the manifest json (n bytes) into its directory
 * (hb_ckpt_materialise(), files it holds already are copied), asking for
 * each file's bytes, which src gives.  st: what the agent reports. */
int hb_mirror_agent_put(struct hb_mirror_agent *a, const char *json,
			size_t n, hb_mirror_agent_src_fn src, void *ctx,
			struct hb_ckpt_mat_stats *st, struct hb_err *err);

#endif
