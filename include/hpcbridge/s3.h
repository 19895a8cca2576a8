/*
 * s3.h - an S3 client: SigV4 over libcurl and OpenSSL.
 *
 * It speaks what checkpoint mirroring needs: PUT, HEAD, ranged GET,
 * DELETE, ListObjectsV2 with pagination, and multipart upload (create,
 * parts, complete, abort).  Path-style ("host/bucket/key") or
 * virtual-host ("bucket.host/key") addressing.  Every request is signed
 * with SigV4 and carries the SHA-256 of its payload in
 * x-amz-content-sha256; uploads also send Content-MD5 (and, on request,
 * x-amz-checksum-sha256) so the server refuses a body that changed on the
 * way.  A GET given the digest the caller expects checks the bytes it got.
 *
 * Credentials, first found wins: the options; AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); the credentials file
 * (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials), profile AWS_PROFILE
 * or "default".  The secret is never logged nor put in an error message.
 *
 * Errors.  Every call returns 0 or a negative HB_E* code and fills err
 * with the operation, the bucket/key and S3's error Code and Message:
 *   403              HB_EPERM (AccessDenied, SignatureDoesNotMatch, ...)
 *   404              HB_ENOENT (NoSuchKey, NoSuchBucket, NoSuchUpload)
 *   409, 412         HB_ECONFLICT
 *   other 4xx        HB_EINVAL
 *   429, 5xx, connection failures: HB_EUNAVAIL once the retries are spent
 *   a timeout        HB_ETIMEDOUT
 *   a digest that does not match: HB_EIO
 *   a malformed response: HB_EPROTO
 * 429, 5xx (503 SlowDown among them) and connection failures are retried
 * with exponential backoff and jitter, waiting at least what a
 * Retry-After asks (up to a minute); other 4xx are not.
 *
 * Threads.  A struct hb_s3 is immutable once made and every call may run
 * from any thread at the same time (parts of one multipart upload from
 * several threads, say): calls borrow a curl handle from a pool under a
 * mutex and give it back, so connections are reused.
 */
#ifndef HPCBRIDGE_S3_H
#define HPCBRIDGE_S3_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

struct hb_s3_opts {
	/* "https://s3.example.com" or "http://127.0.0.1:8080" (a path
	 * after the host is kept as a prefix).  NULL: AWS_ENDPOINT_URL_S3,
	 * AWS_ENDPOINT_URL, else https://s3.REGION.amazonaws.com. */
	const char *endpoint;
	/* NULL: AWS_REGION, AWS_DEFAULT_REGION, else "us-east-1". */
	const char *region;
	int virtual_host; /* bucket.host addressing (default: path style) */
	/* Credentials; NULL access_key: from the environment or the file. */
	const char *access_key;
	const char *secret_key;
	const char *session_token; /* may be NULL */
	const char *profile;	   /* NULL: AWS_PROFILE, else "default" */
	int timeout_ms;		   /* one attempt (0: none; any transfer
				      slower than 1 KiB/s for 30 s fails) */
	int connect_timeout_ms;	   /* 0: 5000 */
	int retries;		   /* extra attempts (-1: none; 0: 5) */
	int backoff_ms;		   /* first backoff (0: 100) */
	int backoff_cap_ms;	   /* largest backoff (0: 10000) */
	int checksum_sha256;	   /* also send x-amz-checksum-sha256 (PUT;
				      parts carry Content-MD5 only) */
	int insecure;		   /* do not verify the TLS peer (tests) */
	const char *ca_file;	   /* NULL: the system's */
};

struct hb_s3;

/* Resolves the credentials now; the handle keeps its own copies. */
int hb_s3_new(const struct hb_s3_opts *o, struct hb_s3 **out,
	      struct hb_err *err);
/* Wipes the secret.  NULL is fine. */
void hb_s3_free(struct hb_s3 *s);

/* Where the credentials came from: "options", "environment" or the
 * file's path and profile.  Borrowed until hb_s3_free. */
const char *hb_s3_creds_source(const struct hb_s3 *s);

/* What HEAD tells of an object. */
struct hb_s3_obj {
	uint64_t size;
	char etag[72];	      /* as sent, quotes removed */
	char sha256_b64[48];  /* x-amz-checksum-sha256 when the server keeps
				 it, else "" */
	char last_modified[40];
};

/* --- objects --------------------------------------------------------- */

/* Store n bytes of data as bucket/key.  sha256 is the payload's digest
 * when the caller has it (NULL: computed here). */
int hb_s3_put(struct hb_s3 *s, const char *bucket, const char *key,
	      const void *data, size_t n, const unsigned char *sha256,
	      struct hb_err *err);

/*
 * Store the size bytes of the file open at fd (read with pread from
 * offset 0, as they go) as bucket/key.  sha256 is the contents' digest:
 * it is sent as the payload's, for the server to check, and checked here
 * against the bytes read before the last of them is sent, so a file that
 * changed (or grew past size) cuts the upload short and nothing is
 * stored: HB_EAGAIN.  A read error is HB_EIO.  A retry reads the file
 * again from the start.
 */
int hb_s3_put_file(struct hb_s3 *s, const char *bucket, const char *key,
		   int fd, uint64_t size, const unsigned char sha256[32],
		   struct hb_err *err);

/* HB_ENOENT when there is no such object. */
int hb_s3_head(struct hb_s3 *s, const char *bucket, const char *key,
	       struct hb_s3_obj *out, struct hb_err *err);

/* Where a GET's bytes go: 0 to go on, a negative HB_E* to stop (the GET
 * then returns it).  Called from the caller's thread. */
typedef int (*hb_s3_sink_fn)(const void *p, size_t n, void *arg);

/*
 * Read len bytes of bucket/key from offset off (len 0: to the end) into
 * sink.  When want_sha256 is not NULL, the SHA-256 of the bytes read must
 * equal it, else HB_EIO (the sink has then had the bytes: the caller
 * discards them).  An attempt that fails half way is resumed from the
 * byte it reached, so the sink sees each byte once.
 */
int hb_s3_get(struct hb_s3 *s, const char *bucket, const char *key,
	      uint64_t off, uint64_t len, const unsigned char *want_sha256,
	      hb_s3_sink_fn sink, void *arg, struct hb_err *err);
/* hb_s3_get into out (appended; its max bounds the size). */
int hb_s3_get_buf(struct hb_s3 *s, const char *bucket, const char *key,
		  uint64_t off, uint64_t len,
		  const unsigned char *want_sha256, struct hb_buf *out,
		  struct hb_err *err);

/* A missing key is not an error (S3 answers 204 either way). */
int hb_s3_delete(struct hb_s3 *s, const char *bucket, const char *key,
		 struct hb_err *err);

/* --- listing --------------------------------------------------------- */

struct hb_s3_entry {
	const char *key; /* exactly as S3 sent it: the caller confines it */
	uint64_t size;
	const char *etag; /* quotes removed */
	const char *last_modified;
};

/* One page of ListObjectsV2.  Everything in it lives in its arena. */
struct hb_s3_page {
	struct hb_s3_entry *v;
	size_t n;
	int truncated;
	const char *next_token; /* NULL on the last page */
	struct hb_arena arena;
};
void hb_s3_page_free(struct hb_s3_page *p);

/* One page of the keys under prefix (NULL: all), after token (NULL: from
 * the start); max_keys 0: the server's default (1000).  p is filled
 * afresh (free it with hb_s3_page_free even on error). */
int hb_s3_list_page(struct hb_s3 *s, const char *bucket, const char *prefix,
		    const char *token, int max_keys, struct hb_s3_page *p,
		    struct hb_err *err);

/* Called once per key; e is borrowed for the call.  Non-zero stops the
 * listing, which returns it. */
typedef int (*hb_s3_list_fn)(const struct hb_s3_entry *e, void *arg);
/* Every key under prefix, page after page; HB_EPROTO when a page does
 * not begin after the last one (the listing would never end). */
int hb_s3_list(struct hb_s3 *s, const char *bucket, const char *prefix,
	       hb_s3_list_fn fn, void *arg, struct hb_err *err);

/* --- multipart upload -------------------------------------------------- */

/* A part as uploaded: its number (1..10000) and the ETag S3 gave it. */
struct hb_s3_part {
	int number;
	char etag[72];
};

/* Start an upload; *upload_id is the caller's (free()). */
int hb_s3_mpu_create(struct hb_s3 *s, const char *bucket, const char *key,
		     char **upload_id, struct hb_err *err);
/* Upload part number (1..10000) of n bytes (every part but the last at
 * least 5 MiB); fills part.  Parts may go from several threads at once. */
int hb_s3_mpu_part(struct hb_s3 *s, const char *bucket, const char *key,
		   const char *upload_id, int number, const void *data,
		   size_t n, struct hb_s3_part *part, struct hb_err *err);
/* Join the parts (in any order: sorted here by number). */
int hb_s3_mpu_complete(struct hb_s3 *s, const char *bucket, const char *key,
		       const char *upload_id, struct hb_s3_part *parts,
		       size_t n, struct hb_err *err);
int hb_s3_mpu_abort(struct hb_s3 *s, const char *bucket, const char *key,
		    const char *upload_id, struct hb_err *err);

/* An upload begun and neither completed nor aborted.  The key is as S3
 * sent it: the caller confines it. */
struct hb_s3_upload {
	const char *key;
	const char *upload_id;
	const char *initiated; /* ISO 8601, or "" */
};

/* One page of ListMultipartUploads; everything lives in its arena. */
struct hb_s3_uploads {
	struct hb_s3_upload *v;
	size_t n;
	int truncated;
	const char *next_key, *next_upload; /* the markers of the next page */
	struct hb_arena arena;
};

/* Called once per upload, e borrowed for the call; non-zero stops the
 * listing, which returns it. */
typedef int (*hb_s3_upload_fn)(const struct hb_s3_upload *u, void *arg);
/* Every upload in progress under prefix (NULL: all), page after page;
 * HB_EPROTO when a page's markers do not move on. */
int hb_s3_mpu_list(struct hb_s3 *s, const char *bucket, const char *prefix,
		   hb_s3_upload_fn fn, void *arg, struct hb_err *err);

#endif
