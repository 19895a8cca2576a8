/*
 * s3_int.h - what the S3 client's files share (sigv4.c, s3_xml.c,
 * s3_creds.c, s3.c), and the pure pieces the unit tests and the fuzzer
 * reach: the signer, the XML reader, the response parsers, the
 * credentials file.  Not a public header: other parts use
 * include/hpcbridge/s3.h only.
 */
#ifndef HB_S3_INT_H
#define HB_S3_INT_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/s3.h"

/* The SHA-256 of nothing, in hex: the payload hash of a bodiless request. */
#define HB_S3_EMPTY_SHA256                                                     \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* --- sigv4.c ----------------------------------------------------------- */

/* A name and a value (a header, a query parameter). */
struct hb_s3_kv {
	const char *name;
	const char *value;
};

/*
 * One request to sign.  path is the raw path ("/bucket/a b"): it is
 * URI-encoded here the way S3 wants (once; '/' kept).  query holds raw
 * names and values, encoded and sorted here.  headers are all signed;
 * their names may have any case, their values are trimmed and inner runs
 * of blanks collapsed; a name given twice signs its values joined by ','.
 */
struct hb_s3_sigreq {
	const char *method;
	const char *path;
	const struct hb_s3_kv *query;
	size_t nquery;
	const struct hb_s3_kv *headers;
	size_t nheaders;
	const char *payload_hash; /* lower-case hex, or UNSIGNED-PAYLOAD */
	const char *amz_date;	  /* "20150830T123600Z" */
	const char *region;
	const char *service;	  /* "s3" */
	const char *access_key;
	const char *secret_key;
};

/* What signing produced; zero-initialise, free with hb_s3_sig_free. */
struct hb_s3_sig {
	struct hb_buf creq;	 /* the canonical request */
	struct hb_buf sts;	 /* the string to sign */
	struct hb_buf query;	 /* the canonical query string: send this */
	struct hb_buf path;	 /* the encoded path: send this */
	struct hb_buf auth;	 /* the Authorization header's value */
	char signature[65];
};
void hb_s3_sig_free(struct hb_s3_sig *sig);

/* Sign r.  0, HB_EINVAL (a missing field, a header name that is not a
 * token, a value with a line break) or HB_ENOMEM. */
int hb_s3_sign(const struct hb_s3_sigreq *r, struct hb_s3_sig *out);

/* The SigV4 signing key for a date ("20150830"), region and service. */
int hb_s3_signing_key(const char *secret, const char *date,
		      const char *region, const char *service,
		      unsigned char key[32]);

/* Append the URI encoding of s (n bytes): unreserved bytes stay, '/'
 * stays when keep_slash, everything else becomes %XX. */
int hb_s3_uri_encode(struct hb_buf *b, const char *s, size_t n,
		     int keep_slash);

/* SHA-256 of n bytes; hex is 65 bytes (NUL-terminated). */
void hb_s3_sha256(const void *p, size_t n, unsigned char out[32]);
void hb_s3_hex(const unsigned char *p, size_t n, char *hex);

/* "YYYYMMDDTHHMMSSZ" of t (seconds since the epoch, UTC). */
void hb_s3_amz_date(int64_t t, char out[17]);

/* --- s3_xml.c ------------------------------------------------------------ */

/* Limits of the XML reader. */
#define HB_S3_XML_MAX (32u << 20) /* document bytes */
#define HB_S3_XML_DEPTH 16
#define HB_S3_XML_NODES 200000

/* An element: its name (prefix kept, attributes dropped), the text of a
 * leaf (entities decoded, never trimmed; "" when empty; NULL for an
 * element with children) and its children in order. */
struct hb_s3_xml {
	const char *name;
	const char *text;
	struct hb_s3_xml *child, *next;
};

/*
 * Read one XML document of n bytes at p into nodes allocated from a.
 * Strict: one root element, tags that match, the five named entities and
 * numeric references (not &#0;, surrogates or other non-characters of
 * XML 1.0), valid UTF-8, no control bytes but tab, CR and LF; an XML
 * declaration may open it, comments and processing instructions may sit
 * between elements; no DTD, no CDATA, no text beside child elements but
 * blanks.  0, or HB_EPROTO / HB_ETOOBIG / HB_ENOMEM with err saying where
 * ("byte 12: ...").
 */
int hb_s3_xml_parse(const char *p, size_t n, struct hb_arena *a,
		    struct hb_s3_xml **root, struct hb_err *err);
/* The first child named name, or NULL. */
const struct hb_s3_xml *hb_s3_xml_child(const struct hb_s3_xml *x,
					const char *name);
/* The text of the first child named name when it is a leaf, or NULL. */
const char *hb_s3_xml_text(const struct hb_s3_xml *x, const char *name);

/* An <Error> document's Code and Message (either may be ""), copied
 * into code/msg and cut to fit.  0, or HB_EPROTO when body is not one. */
int hb_s3_parse_error(const char *body, size_t n, char *code, size_t ncode,
		      char *msg, size_t nmsg);
/* A ListObjectsV2Result into p (its arena).  0 or HB_EPROTO... */
int hb_s3_parse_list(const char *body, size_t n, struct hb_s3_page *p,
		     struct hb_err *err);
/* A ListMultipartUploadsResult into p (its arena).  0 or HB_EPROTO... */
int hb_s3_parse_mpu_list(const char *body, size_t n, struct hb_s3_uploads *p,
			 struct hb_err *err);
/* An InitiateMultipartUploadResult's UploadId (caller frees). */
int hb_s3_parse_mpu_create(const char *body, size_t n, char **upload_id,
			   struct hb_err *err);
/* Whether a CompleteMultipartUpload answer (200 either way) is a
 * CompleteMultipartUploadResult (0) or an <Error> (HB_EAGAIN, with the
 * Code and Message in code/msg); HB_EPROTO for anything else. */
int hb_s3_parse_mpu_complete(const char *body, size_t n, char *code,
			     size_t ncode, char *msg, size_t nmsg);

/* --- s3_creds.c ------------------------------------------------------------ */

/* Credentials; the strings are owned (hb_s3_creds_clear wipes and frees). */
struct hb_s3_creds {
	char *access_key;
	char *secret_key;
	char *session_token;
	char *source; /* "options", "environment", "FILE [profile P]" */
};
void hb_s3_creds_clear(struct hb_s3_creds *c);

/* Read profile's keys from a credentials file's text (INI: [profile],
 * key = value, '#' and ';' comments).  name is for messages.  0,
 * HB_ENOENT (no such profile, or it lacks a key) or HB_ENOMEM. */
int hb_s3_creds_parse(const char *text, size_t n, const char *name,
		      const char *profile, struct hb_s3_creds *out,
		      struct hb_err *err);
/* The options, else the environment, else the credentials file. */
int hb_s3_creds_resolve(const struct hb_s3_opts *o, struct hb_s3_creds *out,
			struct hb_err *err);

/* --- s3.c -------------------------------------------------------------- */

/* Whether an HTTP status is worth another try: 429 and 5xx but 501. */
int hb_s3_http_retryable(long http);
/* The HB_E* code for a final HTTP status. */
int hb_s3_http_code(long http);
/* The delay before attempt (1 = the first retry): full jitter over
 * base * 2^(attempt-1), capped, drawn from rnd. */
long hb_s3_backoff_ms(int attempt, long base_ms, long cap_ms, uint32_t rnd);

#endif
