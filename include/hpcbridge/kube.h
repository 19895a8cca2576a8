/*
 * kube.h - a Kubernetes API client: kubeconfig, REST verbs, watches.
 *
 * Built on libcurl (HTTP/1.1 and TLS through OpenSSL) and cJSON.  It speaks
 * only what the gateway needs: namespaced custom resources (MPIJobs,
 * TrainJobs), pods and their logs, and events.
 *
 * Configuration comes from a kubeconfig (several files merged, as kubectl
 * does: the first file to set a map key wins) or from the in-cluster service
 * account.  TLS is verified unless the kubeconfig explicitly says
 * insecure-skip-tls-verify: true.  Credentials: client certificate and key,
 * a bearer token, a token file (re-read when it changes, as projected
 * service-account tokens rotate), or an exec credential plugin
 * (client.authentication.k8s.io/v1, whose token is cached until its
 * expirationTimestamp).
 *
 * Errors.  Every verb returns 0 or a negative HB_E* code and fills err with
 * the server's Status message when there is one.  The HTTP status maps to:
 *   400, 422     HB_EINVAL       (the request or the object is invalid)
 *   401, 403     HB_EPERM
 *   404          HB_ENOENT
 *   409          HB_EEXIST (reason AlreadyExists) or HB_ECONFLICT (any other
 *                409: a stale resourceVersion, an apply conflict)
 *   410          HB_ESTATE       (Gone/Expired: a resourceVersion too old)
 *   429, 5xx     HB_EUNAVAIL     (after the retries are spent)
 *   connection refused, DNS, TLS: HB_EUNAVAIL
 *   a deadline:  HB_ETIMEDOUT
 *   a malformed or oversized response: HB_EPROTO / HB_ETOOBIG
 * 429 and 5xx (and connection failures) are retried with jittered
 * exponential backoff that honours Retry-After, up to a cap; other errors are
 * not retried.  hb_kube_last() tells the HTTP status and reason of the
 * last response.
 *
 * Threads.  A struct hb_kube may be shared by threads: each call uses its own
 * curl handle.  A decoder belongs to one thread; hb_kube_reflect runs in
 * its caller's thread.
 *
 * Memory.  cJSON objects returned through out-parameters belong to the
 * caller (cJSON_Delete).  Objects passed in are borrowed.
 */
#ifndef HPCBRIDGE_KUBE_H
#define HPCBRIDGE_KUBE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* Whether a verb's error is worth another try later, once the client's own
 * retries are spent: unreachable, 5xx/429, timed out, out of memory, I/O. */
int hb_kube_retryable(int rc);

/* --- configuration --------------------------------------------------- */

/* A resolved connection: one cluster, one user, one namespace. */
struct hb_kube_config;

/*
 * Load a kubeconfig.  paths: a colon-separated list of files, as
 * $KUBECONFIG; NULL means $KUBECONFIG, else ~/.kube/config.  context: NULL
 * means current-context.  Missing files in a list are skipped, as kubectl
 * does; a list with no readable file is HB_ENOENT.  Errors name the file and
 * the field ("a.yaml:12: users[0].user.tokenFile: ...").  Relative paths in a
 * file are resolved against that file's directory.
 */
int hb_kube_config_load(const char *paths, const char *context,
			struct hb_kube_config **out, struct hb_err *err);

/*
 * The in-cluster configuration: $KUBERNETES_SERVICE_HOST and _PORT, and
 * the token, ca.crt and namespace under root (NULL: the real
 * /var/run/secrets/kubernetes.io/serviceaccount).  HB_ENOENT when not in a
 * cluster.
 */
int hb_kube_config_incluster(const char *root, struct hb_kube_config **out,
			     struct hb_err *err);

/* The server URL ("https://10.0.0.1:6443") and the namespace ("default"
 * unless the context or the service account says otherwise). */
const char *hb_kube_config_server(const struct hb_kube_config *cfg);
const char *hb_kube_config_namespace(const struct hb_kube_config *cfg);

/* NULL is fine. */
void hb_kube_config_free(struct hb_kube_config *cfg);

/* --- the client ------------------------------------------------------ */

struct hb_kube_opts {
	int timeout_ms;	     /* each request, all retries included
				(0: 30000) */
	int connect_timeout_ms; /* 0: 5000 */
	int retries;	     /* extra attempts on 429/5xx/refused (-1: 0;
				0: 5) */
	int backoff_ms;	     /* first backoff (0: 100) */
	int backoff_cap_ms;  /* largest backoff (0: 5000) */
	size_t max_body;     /* largest response body (0: 16 MiB) */
	const char *user_agent; /* NULL: "hpcbridge/VERSION" */
};

struct hb_kube;

/* The client keeps its own copy of what it needs from cfg. */
int hb_kube_new(const struct hb_kube_config *cfg,
		const struct hb_kube_opts *opts, struct hb_kube **out,
		struct hb_err *err);
/* NULL is fine. */
void hb_kube_free(struct hb_kube *k);

/* The HTTP status (0: no response) and the Status reason ("NotFound", ""
 * when none) of this thread's last call on k. */
struct hb_kube_last {
	long http;
	char reason[48];
	int attempts; /* requests made, retries included */
};
void hb_kube_last(const struct hb_kube *k, struct hb_kube_last *out);

/* A kind of resource. */
struct hb_kube_res {
	const char *group;   /* "" for the core group */
	const char *version; /* "v1", "v2beta1" */
	const char *plural;  /* "mpijobs" */
	const char *kind;    /* "MPIJob" */
};
extern const struct hb_kube_res hb_kube_mpijob;	  /* kubeflow.org/v2beta1 */
extern const struct hb_kube_res hb_kube_trainjob; /* trainer.kubeflow.org/
						     v1alpha1 */
extern const struct hb_kube_res hb_kube_pod;	  /* v1 pods */
extern const struct hb_kube_res hb_kube_event;	  /* v1 events */
extern const struct hb_kube_res hb_kube_node;	  /* v1 nodes (cluster) */

/* --- verbs ----------------------------------------------------------- */
/* ns may be NULL: the configuration's namespace.  out may be NULL. */

int hb_kube_create(struct hb_kube *k, const struct hb_kube_res *res,
		   const char *ns, const cJSON *obj, cJSON **out,
		   struct hb_err *err);
int hb_kube_get(struct hb_kube *k, const struct hb_kube_res *res,
		const char *ns, const char *name, cJSON **out,
		struct hb_err *err);

/*
 * One page of a list.  selector: a label selector or NULL; fields: a field
 * selector or NULL; limit 0: no limit; cont: the previous page's
 * metadata.continue or NULL.  *out is the List object (items, metadata).
 */
int hb_kube_list(struct hb_kube *k, const struct hb_kube_res *res,
		 const char *ns, const char *selector, const char *fields,
		 int limit, const char *cont, cJSON **out, struct hb_err *err);

/*
 * Every page of a list, limit per page: *items is one array holding all
 * the items; rv (may be NULL) gets the first page's resourceVersion.
 */
int hb_kube_list_all(struct hb_kube *k, const struct hb_kube_res *res,
		     const char *ns, const char *selector, int limit,
		     cJSON **items, char rv[32], struct hb_err *err);

/*
 * hb_kube_list_all() at the cluster scope: every namespace's objects, or a
 * cluster-scoped kind (nodes); fields: a field selector or NULL.
 */
int hb_kube_list_cluster(struct hb_kube *k, const struct hb_kube_res *res,
			 const char *selector, const char *fields, int limit,
			 cJSON **items, struct hb_err *err);

/* propagation: "Background", "Foreground", "Orphan" or NULL (the server's
 * default).  Deleting what is not there is HB_ENOENT. */
int hb_kube_delete(struct hb_kube *k, const struct hb_kube_res *res,
		   const char *ns, const char *name, const char *propagation,
		   struct hb_err *err);

/*
 * Server-side apply (PATCH application/apply-patch+yaml, sent as JSON) of
 * obj, which names itself (metadata.name), as field_manager; force takes
 * fields other managers own.  status: apply to the status subresource.
 */
int hb_kube_apply(struct hb_kube *k, const struct hb_kube_res *res,
		  const char *ns, const cJSON *obj, const char *field_manager,
		  int force, int status, cJSON **out, struct hb_err *err);

/* A JSON merge patch of the status subresource. */
int hb_kube_patch_status(struct hb_kube *k, const struct hb_kube_res *res,
			 const char *ns, const char *name, const cJSON *patch,
			 cJSON **out, struct hb_err *err);

/*
 * A pod's log (container NULL: the only one), appended to out, at most
 * limit bytes (0: no limit beyond opts.max_body).
 */
int hb_kube_log(struct hb_kube *k, const char *ns, const char *pod,
		const char *container, size_t limit, struct hb_buf *out,
		struct hb_err *err);

/*
 * Follow a pod's log: fn gets each chunk as it arrives, until the
 * container ends (0), fn returns non-zero (that value), or timeout_ms
 * passes (HB_ETIMEDOUT; 0: no timeout).
 */
typedef int (*hb_kube_log_fn)(void *ctx, const char *data, size_t len);
int hb_kube_log_follow(struct hb_kube *k, const char *ns, const char *pod,
		       const char *container, int timeout_ms, hb_kube_log_fn fn,
		       void *ctx, struct hb_err *err);

/* The events about one object (involvedObject.name), as a List. */
int hb_kube_events(struct hb_kube *k, const char *ns, const char *name,
		   cJSON **out, struct hb_err *err);

/*
 * Kueue's visibility API (visibility.kueue.x-k8s.io/v1beta1): the
 * workloads pending in a LocalQueue of ns (NULL: the configuration's
 * namespace), or, cluster set, in a ClusterQueue (ns ignored), as the
 * PendingWorkloadsSummary the server sends ({items: [{metadata,
 * priority, localQueueName, positionInClusterQueue,
 * positionInLocalQueue}]}; hb_kueue_pending() reads it).  limit 0: the
 * server's default (1000).  HB_ENOENT when the API is not served (Kueue
 * without its visibility server) or the queue does not exist.
 */
int hb_kube_pending_workloads(struct hb_kube *k, const char *ns,
			      const char *queue, int cluster, int limit,
			      cJSON **out, struct hb_err *err);

/* --- watches --------------------------------------------------------- */

enum hb_kube_ev_type {
	HB_KUBE_ADDED,
	HB_KUBE_MODIFIED,
	HB_KUBE_DELETED,
	HB_KUBE_BOOKMARK,
	HB_KUBE_ERROR
};

struct hb_kube_event {
	enum hb_kube_ev_type type;
	cJSON *object;	/* owned by the event: hb_kube_event_clear() */
	char rv[32];	/* the object's metadata.resourceVersion ("" if none) */
	int code;	/* HB_KUBE_ERROR: the Status code (410, ...) */
};

/* Free the event's object; the event can be reused.  NULL is fine. */
void hb_kube_event_clear(struct hb_kube_event *ev);

/*
 * The watch-stream decoder, apart from the network so it can be fuzzed:
 * feed it the bytes of a response as they come; each complete line becomes
 * an event.  A line longer than max_line is HB_ETOOBIG; a line that is not a
 * watch event ({"type": ..., "object": {...}}) is HB_EPROTO with the reason.
 */
struct hb_kube_decoder;
int hb_kube_decoder_new(size_t max_line, struct hb_kube_decoder **out);
void hb_kube_decoder_free(struct hb_kube_decoder *d);
/* Append bytes. */
int hb_kube_decoder_feed(struct hb_kube_decoder *d, const char *data,
			 size_t len);
/* The next complete event: 0 and *ev filled; HB_EAGAIN when no complete
 * line is buffered; an error for a bad line (which is consumed). */
int hb_kube_decoder_next(struct hb_kube_decoder *d, struct hb_kube_event *ev,
			 struct hb_err *err);
/* Decode one line (without its newline). */
int hb_kube_event_decode(const char *line, size_t len,
			 struct hb_kube_event *ev, struct hb_err *err);

/*
 * A reflector: list, then watch from the list's resourceVersion with
 * bookmarks, resuming from the last version seen after a dropped stream,
 * and listing again on 410.  It keeps the names and versions it has seen,
 * so after a relist fn gets DELETED for what vanished meanwhile and nothing
 * for what did not change: every change is delivered once, in order per
 * object.
 *
 * hb_kube_reflect runs until *stop becomes non-zero (checked at least every
 * poll_ms) or fn returns non-zero; it backs off between failed attempts
 * and never returns for a transient error.  fn gets ADDED, MODIFIED and
 * DELETED (the event's object is valid during the call only), and a
 * HB_KUBE_BOOKMARK after each complete (re)list, with object NULL, once the
 * view is whole.
 */
typedef int (*hb_kube_event_fn)(void *ctx, const struct hb_kube_event *ev);
struct hb_kube_reflect_opts {
	const char *ns;	      /* NULL: all namespaces */
	const char *selector; /* label selector or NULL */
	int page;	      /* list page size (0: 500) */
	int poll_ms;	      /* how often *stop is checked (0: 200) */
	int watch_timeout_s;  /* timeoutSeconds of each watch (0: 300) */
};
int hb_kube_reflect(struct hb_kube *k, const struct hb_kube_res *res,
		    const struct hb_kube_reflect_opts *opts,
		    hb_kube_event_fn fn, void *ctx, const atomic_int *stop,
		    struct hb_err *err);

#endif
