/*
 * kube_int.h - what the Kubernetes client's files share (kubeconfig.c,
 * kube.c, kube_watch.c), and the pure pieces the unit tests reach.  Not a
 * public header: the daemon uses include/hpcbridge/kube.h only.
 */
#ifndef HB_KUBE_INT_H
#define HB_KUBE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcbridge/kube.h"

/* Largest file a kubeconfig points at (token, CA, certificate, key). */
#define HB_KUBE_FILE_MAX (1u << 20)
/* Largest output of an exec credential plugin. */
#define HB_KUBE_EXEC_OUT_MAX (1u << 20)
/* How long an exec credential plugin may run at most. */
#define HB_KUBE_EXEC_TIMEOUT_MS 60000
/* Longest watch line the reflector accepts. */
#define HB_KUBE_WATCH_LINE_MAX (16u << 20)

/* Bytes that may hold NULs (PEM, DER): data owns them; NULL when unset. */
struct hb_kube_blob {
	char *data;
	size_t len;
};
/* A copy of from into to (NUL-terminated too); nothing when from is unset.
 * 0 or HB_ENOMEM. */
int hb_kube_blob_dup(const struct hb_kube_blob *from, struct hb_kube_blob *to);
/* Wipe (the bytes may be a key), free and unset. */
void hb_kube_blob_free(struct hb_kube_blob *b);

/* An exec credential plugin (users[].user.exec). */
struct hb_kube_exec {
	char *api_version; /* client.authentication.k8s.io/v1 or v1beta1 */
	char **argv;	   /* command then args, NULL-terminated */
	char **env;	   /* "NAME=VALUE", NULL-terminated */
	int cluster_info;  /* provideClusterInfo */
	char *what;	   /* "a.yaml: users[1].user.exec", for messages */
};

/* The resolved configuration (hb_kube_config_*). */
struct hb_kube_config {
	char *source; /* "a.yaml (context ctx)" or "in-cluster" */
	char *server; /* without a trailing '/' */
	char *ns;
	char *tls_server_name;
	char *proxy_url;
	int insecure;
	/* PEM bytes: from the -data field, which wins as in kubectl, or read
	 * from the file it names when the configuration is loaded. */
	struct hb_kube_blob ca;
	struct hb_kube_blob cert, key;
	char *token;
	char *token_file; /* read at each use when its mtime changes */
	char *username, *password;
	struct hb_kube_exec *exec;
};

/* --- kubeconfig.c ------------------------------------------------------ */

/* One kubeconfig file's bytes.  name is what errors say, and its
 * directory is where relative paths start. */
struct hb_kube_src {
	const char *name;
	const char *text;
	size_t len;
};

/* Do not touch the files a configuration names (the fuzzer). */
#define HB_KUBE_NO_FILES 1u

/* hb_kube_config_load() on files already read, merged in order. */
int hb_kube_config_parse(const struct hb_kube_src *srcs, size_t n,
			 const char *context, unsigned flags,
			 struct hb_kube_config **out, struct hb_err *err);

/*
 * Credentials, for one client: they change under it (token files rotate,
 * exec tokens expire), so they are taken anew for each request.
 */
struct hb_kube_auth;
int hb_kube_auth_new(const struct hb_kube_config *cfg,
		     struct hb_kube_auth **out);
void hb_kube_auth_free(struct hb_kube_auth *a);

struct hb_kube_creds {
	char *token; /* NULL: none */
	char *username, *password;
	struct hb_kube_blob cert, key; /* exec plugin's, when it gives them */
};
/* What to send now.  refresh: the last request got 401, so re-read the
 * token file and re-run the exec plugin whatever the caches say.
 * deadline_ms: CLOCK_MONOTONIC milliseconds the exec plugin must end by
 * (0: HB_KUBE_EXEC_TIMEOUT_MS from now).  Caller clears out with
 * hb_kube_creds_clear(). */
int hb_kube_auth_get(struct hb_kube_auth *a, int refresh, int64_t deadline_ms,
		     struct hb_kube_creds *out, struct hb_err *err);
void hb_kube_creds_clear(struct hb_kube_creds *c);
/* How many times the exec plugin ran (tests). */
unsigned hb_kube_auth_exec_runs(struct hb_kube_auth *a);

/* --- kube.c ------------------------------------------------------------ */

/* The HB_E* code for an HTTP error status (see kube.h). */
int hb_kube_http_error(long http, const char *reason);
/* Whether a status is worth another attempt (429, 5xx but 501/505). */
int hb_kube_http_retryable(long http);
/*
 * The wait before attempt number attempt + 1 (attempt >= 1 failed
 * ones): equal jitter over base * 2^(attempt-1) capped at cap, that is
 * between half of it and all of it; rnd supplies the randomness.  A
 * Retry-After (retry_after_ms >= 0) wins when it is longer, with up to
 * 10% added so that clients told the same time spread out.
 */
long hb_kube_backoff_ms(int attempt, long base_ms, long cap_ms,
			long retry_after_ms, uint32_t rnd);
/* A Retry-After value (delta-seconds or an HTTP date) in ms from now;
 * -1 when absent or unreadable. */
long hb_kube_retry_after_ms(const char *value, int64_t now_s);
/* A random 32-bit number (getrandom, else a per-thread generator). */
uint32_t hb_kube_random(void);

/* A path under the API for res: "/apis/GROUP/VERSION[/namespaces/NS]/
 * PLURAL[/NAME[/SUB]]" (ns NULL: every namespace), escaped. */
int hb_kube_path(const struct hb_kube_res *res, const char *ns,
		 const char *name, const char *sub, struct hb_buf *out);
/* Append "&key=value" (or "?key=value" for the first), escaped. */
int hb_kube_query(struct hb_buf *url, const char *key, const char *value);

/* hb_kube_list_all(), and across every namespace when all_ns. */
int hb_kube_list_every(struct hb_kube *k, const struct hb_kube_res *res,
		       const char *ns, int all_ns, const char *selector,
		       int limit, cJSON **items, char rv[32],
		       struct hb_err *err);

/* The configuration's namespace (k's copy). */
const char *hb_kube_ns(const struct hb_kube *k);
const struct hb_kube_opts *hb_kube_opts_of(const struct hb_kube *k);

/* A streaming GET: data goes to fn as it comes (once the status is 2xx;
 * an error status is read whole and mapped).  It ends when the server
 * ends the response (0), fn returns non-zero (that value), *stop becomes
 * non-zero (checked every poll_ms; 0 with *stopped set), the connection
 * breaks after data came (HB_EUNAVAIL, no retry), or timeout_ms passes
 * (HB_ETIMEDOUT; 0 none). */
struct hb_kube_stream {
	const char *path;
	int (*fn)(void *ctx, const char *data, size_t len);
	void *ctx;
	const atomic_int *stop;
	int poll_ms;
	int timeout_ms;
	int stopped; /* out */
};
int hb_kube_stream_get(struct hb_kube *k, struct hb_kube_stream *st,
		       struct hb_err *err);

/* --- kube_watch.c ------------------------------------------------------ */

/* What a reflector remembers: "ns/name" -> resourceVersion. */
struct hb_kube_known;
struct hb_kube_known *hb_kube_known_new(void);
void hb_kube_known_free(struct hb_kube_known *m);
/* The version recorded for key, NULL if none (borrowed until the next
 * change to m). */
const char *hb_kube_known_get(const struct hb_kube_known *m, const char *key);
int hb_kube_known_put(struct hb_kube_known *m, const char *key, const char *rv);
int hb_kube_known_del(struct hb_kube_known *m, const char *key);
size_t hb_kube_known_count(const struct hb_kube_known *m);

/*
 * The dedup of a reflector: given an event from a watch or a list, what
 * to deliver: *deliver gets the type to give fn, or -1 for nothing; m is
 * updated.  An ADDED for a known object is a MODIFIED, a MODIFIED for an
 * unknown one an ADDED; a version already seen, or a DELETED of what is
 * unknown, is nothing.  0 or HB_ENOMEM.
 */
int hb_kube_known_apply(struct hb_kube_known *m, const char *key,
			enum hb_kube_ev_type type, const char *rv,
			int *deliver);

/* The "ns/name" key of an object; HB_EPROTO without metadata.name. */
int hb_kube_obj_key(const cJSON *obj, struct hb_buf *key);

#endif
