/*
 * mirror_int.h - what the files of the mirror part share: a location
 * with its options resolved, the keys under PREFIX, the list of
 * checkpoints, reading a manifest, a pool of worker threads and the
 * progress reports.
 */
#ifndef HPCBRIDGE_MIRROR_INT_H
#define HPCBRIDGE_MIRROR_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "hpcbridge/mirror.h"

/* "PREFIX/checkpoints/ID.json" and the like, with room to spare. */
#define MIR_KEY_MAX (HB_MIRROR_PREFIX_MAX + 96)
/* Contents that are HEADed one by one at most; more: one listing. */
#define MIR_HEAD_MAX 256u

/* A location and its options, defaults filled in. */
struct mir {
	struct hb_s3 *s3;
	struct hb_mirror_url u;
	struct hb_mirror_opts o;
	const char *url;	/* as the caller gave it, for messages */
	int64_t start_ms;	/* monotonic, for elapsed_ms */
	struct hb_mirror_stats *st; /* the caller's, else local */
	struct hb_mirror_stats local;
	pthread_mutex_t mu;	/* one opts.problem call at a time */
};

/* Parse url, check opts (NULL: defaults) and fill m; m->st is st zeroed
 * (NULL: one of m's own).  mir_close() after, whatever the result: it
 * sets elapsed_ms. */
int mir_open(struct mir *m, struct hb_s3 *s3, const char *url,
	     const struct hb_mirror_opts *opts, struct hb_mirror_stats *st,
	     struct hb_err *err);
void mir_close(struct mir *m);

/* Report a problem through opts.problem, one thread at a time. */
void mir_problem(struct mir *m, const char *what, const char *why);

/* The keys: "PREFIX/" (or "") followed by the word and the name.  Only
 * fixed words, checked IDs and hex digests go in. */
void mir_key_dir(const struct mir *m, const char *word, char out[MIR_KEY_MAX]);
void mir_key_object(const struct mir *m, const uint8_t d[32],
		    char out[MIR_KEY_MAX]);
void mir_key_manifest(const struct mir *m, const char *id,
		      char out[MIR_KEY_MAX]);
/* "s3://BUCKET/KEY", for messages. */
void mir_key_url(const struct mir *m, const char *key, char *out, size_t n);

/* Whether s (n bytes) is 64 lowercase hex digits; then d holds them. */
int mir_hex_digest(const char *s, size_t n, uint8_t d[32]);

/* The complete checkpoints at a location: their IDs, sorted, and the
 * size of each manifest as listed. */
struct mir_id {
	char id[HB_MIRROR_ID_LEN + 1];
	uint64_t bytes;
};
struct mir_ids {
	struct mir_id *v;
	size_t n, cap;
};
/* List PREFIX/checkpoints/: every key that is ID.json with a valid ID,
 * oldest first; any other key goes to mir_problem() and is not used. */
int mir_list_ids(struct mir *m, struct mir_ids *ids, struct hb_err *err);
void mir_ids_free(struct mir_ids *ids);

/* GET and read checkpoint id's manifest, strictly, and check that its
 * bytes and its created time give id.  Errors name
 * "s3://B/P/checkpoints/ID.json".  Caller frees *out. */
int mir_read_manifest(struct mir *m, const char *id,
		      struct hb_ckpt_manifest **out, uint64_t *bytes,
		      struct hb_err *err);

/* The checkpoint opts.checkpoint names, else the newest one: its ID and
 * manifest.  HB_ENOENT when there is none. */
int mir_pick(struct mir *m, char id[HB_MIRROR_ID_LEN + 1],
	     struct hb_ckpt_manifest **out, struct hb_err *err);

/* The SHA-256 of n bytes at p. */
void mir_sha256(const void *p, size_t n, uint8_t out[32]);

/* The ID of a manifest created at created whose bytes hash to d. */
void mir_make_id(int64_t created, const uint8_t d[32],
		 char out[HB_MIRROR_ID_LEN + 1]);

/* The distinct digests of a manifest, sorted (memcmp order). */
struct mir_digest {
	uint8_t d[32];
	size_t file;		/* the first file with the digest */
};
struct mir_digests {
	struct mir_digest *v;
	size_t n;
};
int mir_digests_of(const struct hb_ckpt_manifest *m, struct mir_digests *ds,
		   struct hb_err *err);
/* Append m's digests to ds (zeroed to start), then sort and fold them. */
int mir_digests_add(struct mir_digests *ds, const struct hb_ckpt_manifest *m,
		    struct hb_err *err);
void mir_digests_seal(struct mir_digests *ds);
void mir_digests_free(struct mir_digests *ds);
/* The index of d in ds, or -1. */
long mir_digests_find(const struct mir_digests *ds, const uint8_t d[32]);

/*
 * Run fn(ctx, i, worker, err) for i in 0..n-1 on up to jobs threads
 * (worker is 0..jobs-1); tasks start in order of i.  The first failure
 * stops new tasks from starting and is returned with its message.
 */
typedef int (*mir_task_fn)(void *ctx, size_t i, unsigned worker,
			   struct hb_err *err);
int mir_pool(unsigned jobs, size_t n, mir_task_fn fn, void *ctx,
	     struct hb_err *err);

/*
 * A pool fed while it runs: jobs threads run fn(ctx, item, worker, err)
 * on the items mir_feed_put() queues, in the order queued.  The first
 * failure drops the items not yet started; mir_feed_put() then returns
 * it (so the producer stops) and mir_feed_end() waits for the running
 * ones and returns it with its message.
 */
typedef int (*mir_item_fn)(void *ctx, void *item, unsigned worker,
			   struct hb_err *err);
struct mir_feed {
	mir_item_fn fn;
	void *ctx;
	pthread_t th[64];
	unsigned nth;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void **q;		/* items queued; head: the next to start */
	size_t head, n, cap;
	int closed;
	atomic_int rc;
	struct hb_err err;
};
void mir_feed_start(struct mir_feed *f, unsigned jobs, mir_item_fn fn,
		    void *ctx);
int mir_feed_put(struct mir_feed *f, void *item, struct hb_err *err);
int mir_feed_end(struct mir_feed *f, struct hb_err *err);

/* Progress of one phase, fed from any thread. */
struct mir_prog {
	struct mir *m;
	const char *phase;
	atomic_uint_fast64_t files_total, bytes_total;
	atomic_uint_fast64_t files_done, bytes_done;
	atomic_int_fast64_t last_ms;
	int64_t start_ms;
	pthread_mutex_t mu;
};
void mir_prog_start(struct mir_prog *p, struct mir *m, const char *phase,
		    uint64_t files_total, uint64_t bytes_total);
/* More to do than the phase began with. */
void mir_prog_more(struct mir_prog *p, uint64_t files, uint64_t bytes);
/* Count files and bytes done; report when progress_ms have passed. */
void mir_prog_add(struct mir_prog *p, uint64_t files, uint64_t bytes);
/* The final report of the phase. */
void mir_prog_end(struct mir_prog *p);

/* hb_mirror_retain() on an open location: fills only removed_* and
 * prefix_bytes of st. */
int mir_retain(struct mir *m, unsigned keep, struct hb_mirror_stats *st,
	       struct hb_err *err);

#endif
