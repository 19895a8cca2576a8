/*
 * kubemu.h - the Kubernetes API emulator's modules, as they see each other.
 *
 * hb-kubemu is an HTTP(S) server that speaks the Kubernetes REST protocol
 * for the few resources hpcbridge uses, backed by an in-memory store, with
 * the real CRD schemas for validation, a watch window, an emulated MPI
 * Operator and a kubelet that simulates pods or really runs launchers.
 * See docs/internals/kubemu.md.
 *
 * Modules (one file each): main (options, start-up, restarts), server
 * (libmicrohttpd, routing, auth, streaming), api (the verbs), discovery,
 * store (objects, resourceVersion, event window), watch (event streams),
 * selector (label and field selectors), patch (merge, JSON and apply
 * patches, managed fields), validate (CRD schemas, defaults, pruning),
 * operator (the MPI Operator), kubelet (pod lifecycle, processes, logs),
 * podstatus (the kubelet's status writes),
 * container (an executed container's identity and mounts), podsecurity
 * (Namespaces, PodSecurity admission), faults (fault injection), tls (CA,
 * certificates, kubeconfig), util.
 *
 * Locking: the store has one mutex; every other module keeps its own and
 * never holds it while calling into the store, except the store's hook,
 * which runs under the store mutex and takes only the controller queue's.
 */
#ifndef HB_KUBEMU_H
#define HB_KUBEMU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* ---- resources ------------------------------------------------------ */

enum km_res {
	KM_MPIJOB,
	KM_TRAINJOB,
	KM_POD,
	KM_EVENT,
	KM_LEASE,
	KM_CONFIGMAP,
	KM_SECRET,
	KM_NODE,
	KM_NAMESPACE,
	KM_RFLAVOR,   /* kueue.x-k8s.io: ResourceFlavor */
	KM_CQUEUE,    /* ClusterQueue */
	KM_LQUEUE,    /* LocalQueue */
	KM_WPRIORITY, /* WorkloadPriorityClass */
	KM_WORKLOAD,  /* Workload */
	KM_RCTEMPLATE, /* resource.k8s.io: ResourceClaimTemplate */
	KM_DEVCLASS,   /* DeviceClass */
	KM_RSLICE,     /* ResourceSlice */
	KM_NRES
};

enum {
	KM_CRD = 1u << 0,     /* a custom resource: schema, generation */
	KM_STATUS = 1u << 1,  /* has the status subresource */
	KM_LOG = 1u << 2,     /* has the log subresource (pods) */
	KM_CLUSTER = 1u << 3, /* cluster-scoped and read-only (nodes) */
	KM_CSCOPE = 1u << 4   /* cluster-scoped and writable (ClusterQueue) */
};

/* Whether objects of r have no namespace. */
#define KM_NO_NS(r) ((km_res[r].flags & (KM_CLUSTER | KM_CSCOPE)) != 0)

struct km_resinfo {
	const char *group;   /* "" for the core group */
	const char *version; /* "v1", "v2beta1" */
	const char *gv;	     /* apiVersion: "kubeflow.org/v2beta1", "v1" */
	const char *plural;
	const char *singular;
	const char *kind;
	const char *list_kind;
	const char *short_name; /* "a b": a list; NULL if none */
	unsigned flags;
};

extern const struct km_resinfo km_res[KM_NRES];

/* The resource served at group/version/plural; -1 if none. */
int km_res_find(const char *group, const char *version, const char *plural);
/* "mpijobs.kubeflow.org" or "pods": how errors name a resource. */
const char *km_res_qualified(enum km_res r);

/* ---- util ----------------------------------------------------------- */

/* Milliseconds on the monotonic clock. */
int64_t km_now_ms(void);
/* The current UTC time as "2006-01-02T15:04:05Z" (buf of 32 bytes); with
 * micro, "2006-01-02T15:04:05.000000Z" (MicroTime). */
void km_timestamp(char *buf, size_t cap, int micro);
/* A random version 4 UUID, 36 characters (buf of 37 bytes). */
void km_uuid(char *buf);
/* n random characters from the API server's name-suffix alphabet. */
void km_rand_suffix(char *buf, size_t n);
/* Parse a non-negative decimal integer; HB_EINVAL unless all of s. */
int km_parse_u64(const char *s, uint64_t *out);

/* Case-sensitive member lookup (cJSON_GetObjectItem is not). */
cJSON *km_get(const cJSON *o, const char *key);
/* The string member key of o, or NULL. */
const char *km_str(const cJSON *o, const char *key);
/* The object member key of o, added empty when missing or not an
 * object; NULL on ENOMEM. */
cJSON *km_obj_at(cJSON *o, const char *key);
/* Replace or add member key; item is taken (freed on failure).
 * 0 or HB_ENOMEM. */
int km_set(cJSON *o, const char *key, cJSON *item);
int km_set_str(cJSON *o, const char *key, const char *v);
int km_set_num(cJSON *o, const char *key, double v);
/* Remove member key if present. */
void km_del(cJSON *o, const char *key);
/* metadata.KEY of an object, or NULL. */
const char *km_meta_str(const cJSON *obj, const char *key);
/* The condition of type in status.conditions (status: an object's
 * .status), or NULL; whether its status is "True". */
cJSON *km_cond_find(const cJSON *status, const char *type);
int km_cond_true(const cJSON *status, const char *type);
/* A quantity of resource key as quota and the scheduler compare it:
 * bytes for memory-like resources (km_qty_is_bytes), milli-units for
 * the others; 0 when s is NULL or unreadable. */
int km_qty_is_bytes(const char *key);
uint64_t km_qty(const char *key, const char *s);
/* Whether two trees are equal (order of members ignored). */
int km_equal(const cJSON *a, const cJSON *b);

/* A string-keyed hash map; values are the caller's.  NULL on ENOMEM. */
struct km_map;
struct km_map *km_map_new(void);
/* Free the map; free_val (may be NULL) is called on each value. */
void km_map_free(struct km_map *m, void (*free_val)(void *));
void *km_map_get(const struct km_map *m, const char *key);
/* Set key to val (replacing, and returning through *old, any value it
 * had); 0 or HB_ENOMEM. */
int km_map_put(struct km_map *m, const char *key, void *val, void **old);
/* Remove key; its value, or NULL. */
void *km_map_del(struct km_map *m, const char *key);
size_t km_map_count(const struct km_map *m);

/* ---- store ---------------------------------------------------------- */

/*
 * One version of one object.  Immutable once the store has published it:
 * tree and json never change, so any thread holding a reference may read
 * them without a lock.
 */
struct km_obj {
	atomic_int refs;
	enum km_res res;
	uint64_t rv;
	cJSON *tree; /* metadata.resourceVersion is rv */
	char *json;  /* tree, serialised compactly */
	size_t len;
	const char *ns;	     /* borrowed from tree; "" if none */
	const char *name;    /* borrowed from tree */
	struct km_obj *base; /* holds what tree shares (NULL if nothing) */
};

struct km_obj *km_obj_ref(struct km_obj *o);
void km_obj_unref(struct km_obj *o);

enum km_evtype { KM_ADDED, KM_MODIFIED, KM_DELETED };
extern const char *const km_evtype_name[3];

/* One change; obj is the new version (the last one for DELETED), prev
 * the one it replaced (NULL for ADDED). */
struct km_event {
	uint64_t rv;
	enum km_evtype type;
	struct km_obj *obj;
	struct km_obj *prev;
};

struct km_store;

/* Called under the store lock for every change; must not call the
 * store.  The event and its objects are borrowed for the call. */
typedef void (*km_store_hook_fn)(void *arg, const struct km_event *ev);

/* An empty store that keeps the last window events; NULL on ENOMEM. */
struct km_store *km_store_new(size_t window);
void km_store_free(struct km_store *s);
void km_store_set_hook(struct km_store *s, km_store_hook_fn fn, void *arg);

uint64_t km_store_rv(struct km_store *s);
/* The oldest resourceVersion a watch may still resume from. */
uint64_t km_store_oldest(struct km_store *s);

/* A reference to the current version, or NULL. */
struct km_obj *km_store_get(struct km_store *s, enum km_res r, const char *ns,
			    const char *name);

/*
 * Writes.  tree is always taken.  The store sets metadata.resourceVersion
 * and publishes the new version; *out (may be NULL) gets a reference to
 * it.  create: HB_EEXIST when the name is taken.  update: HB_ENOENT when
 * the object is gone, HB_ECONFLICT when its version is not base_rv (the
 * caller read base_rv, computed tree from it, and retries on conflict).
 * delete: base_rv 0 deletes whatever version is there; *out gets the
 * final version (with the deletion's resourceVersion).
 */
int km_store_create(struct km_store *s, enum km_res r, cJSON *tree,
		    struct km_obj **out);
int km_store_update(struct km_store *s, enum km_res r, cJSON *tree,
		    uint64_t base_rv, struct km_obj **out);
int km_store_delete(struct km_store *s, enum km_res r, const char *ns,
		    const char *name, uint64_t base_rv, struct km_obj **out);

/* A filter for lists: nonzero keeps o.  Runs under the store lock. */
typedef int (*km_match_fn)(void *arg, const struct km_obj *o);

/*
 * List the objects of r in namespace ns (NULL: all), in key order
 * (namespace, name), starting after (after_ns, after_name) when after_name
 * is not NULL, keeping those match accepts (match NULL: all), at most
 * limit (0: no limit).  *out is an array of references (free each with
 * km_obj_unref, then the array with free()); *remaining counts the
 * matching objects left after the page; *rv is the store's version.
 */
int km_store_list(struct km_store *s, enum km_res r, const char *ns,
		  const char *after_ns, const char *after_name,
		  km_match_fn match, void *arg, size_t limit,
		  struct km_obj ***out, size_t *n, size_t *remaining,
		  uint64_t *rv);

/*
 * Copy into ev (at most max) the events of resource r after version
 * after, taking references (free with km_event_release).  *scanned gets
 * the last version looked at (of any resource).  Returns the count, or
 * HB_ERANGE when after is older than the window.
 */
int km_store_events(struct km_store *s, enum km_res r, uint64_t after,
		    struct km_event *ev, size_t max, uint64_t *scanned);
void km_event_release(struct km_event *ev);

/* Wait until the store passes version after, km_store_kick() is called,
 * or deadline (km_now_ms() time) comes.  Returns the kick count. */
unsigned km_store_wait(struct km_store *s, uint64_t after, int64_t deadline);
/* Wake every waiter, and count one more kick. */
void km_store_kick(struct km_store *s);
unsigned km_store_kicks(struct km_store *s);

/* Counts for /_hb/stats. */
void km_store_stats(struct km_store *s, size_t counts[KM_NRES], uint64_t *rv,
		    size_t *events);

/* ---- selectors ------------------------------------------------------ */

struct km_selector;

/*
 * Parse a label selector ("a=b,c!=d,e in (f,g),h notin (i),j,!k") or,
 * with field set, a field selector ("metadata.name=x,status.phase!=y").
 * An empty or NULL string gives NULL (matches everything) and 0.
 * HB_EINVAL with a message for a malformed selector.  Free with
 * km_selector_free().
 */
int km_selector_parse(const char *s, int field, struct km_selector **out,
		      struct hb_err *err);
void km_selector_free(struct km_selector *sel);
/* Whether the labels (an object of strings, may be NULL) match. */
int km_selector_match(const struct km_selector *sel, const cJSON *labels);
/* Whether an object matches a field selector. */
int km_fields_match(const struct km_selector *sel, const cJSON *obj);
/* HB_EINVAL unless every field the selector names is one r supports. */
int km_fields_check(const struct km_selector *sel, enum km_res r,
		    struct hb_err *err);

/* ---- patches -------------------------------------------------------- */

/* RFC 7386: apply merge patch to *doc (replaced when the patch is not an
 * object).  0 or HB_ENOMEM. */
int km_merge_patch(cJSON **doc, const cJSON *patch);
/* RFC 6902: apply the operations to *doc.  HB_EINVAL (message in err)
 * for a malformed operation, a missing path or a failed test. */
int km_json_patch(cJSON **doc, const cJSON *ops, struct hb_err *err);

/*
 * Managed fields.  km_fields_of() gives the field set (fieldsV1) of a
 * value; km_fields_diff() the leaves that differ between two values.
 * km_track_update() records that manager changed old into new (an
 * "Update" entry, or with sub "status" for the status subresource) in
 * new's metadata.managedFields, and takes those fields from every other
 * manager.  km_apply() merges an applied configuration into live (NULL to
 * create): fields the manager applied before and no longer applies are
 * removed, and a field another manager owns with a different value is a
 * conflict (HB_ECONFLICT, message listing them) unless force.  With sub
 * "status" only .status counts; otherwise, when has_status, .status is
 * left out (the status subresource owns it).
 */
cJSON *km_fields_of(const cJSON *v);
cJSON *km_fields_diff(const cJSON *a, const cJSON *b);
int km_track_update(cJSON *new_obj, const cJSON *old_obj, const char *manager,
		    const char *sub, int has_status, const char *api_version);
int km_apply(const cJSON *live, const cJSON *applied, const char *manager,
	     const char *sub, int has_status, int force,
	     const char *api_version, cJSON **out, struct hb_err *err);

/* ---- validation ----------------------------------------------------- */

struct km_valid;

/* Load every CRD (*.yaml, *.yml, *.json) in dir.  NULL and err set on
 * failure. */
struct km_valid *km_valid_new(const char *dir, struct hb_err *err);
void km_valid_free(struct km_valid *v);

enum km_fv { KM_FV_IGNORE, KM_FV_WARN, KM_FV_STRICT };

/*
 * Check a new version of an object of resource r (create when create is
 * set).  Unknown and duplicate fields are dropped (and listed in warnings,
 * one per line, for KM_FV_WARN) or, for KM_FV_STRICT, make the call fail.
 * CRD defaults are applied.  On failure *status gets a Kubernetes Status
 * object (400 BadRequest for strict decoding errors, 422 Invalid with
 * causes for schema violations).  Returns 0 or a negative HB_E*.
 */
int km_valid_check(struct km_valid *v, enum km_res r, cJSON *obj, int create,
		   enum km_fv fv, struct hb_buf *warnings, cJSON **status);

/* The MPI Operator's own rules on an MPIJob (ValidateMPIJob); 0 or
 * HB_EINVAL with "Found validation errors: ..." in msg. */
int km_valid_mpijob_rules(const cJSON *mpijob, struct hb_buf *msg);

/* The causes of a 422 as validation gathers them (validate.c). */
struct km_causes {
	cJSON *arr;
	struct hb_buf msg;
	int n;
};
/* Add the cause "field: message" (reason FieldValueInvalid). */
void km_cause(struct km_causes *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A DNS-1123 subdomain; a label when label is set. */
int km_dns_name(const char *s, int label);
/* The cause a missing (Required) or malformed name v at field earns:
 * a DNS-1123 label when label is set, else a subdomain. */
void km_cause_dns(struct km_causes *c, const char *field, const char *v,
		  int label);

/* dra.c: the API server's checks of the resource.k8s.io kinds and of a
 * pod's resourceClaims; and, for the kubelet, the first template a pod
 * claims from that does not exist (NULL: none), with the resource claim
 * controller's event message in msg. */
void km_dra_check(enum km_res r, const cJSON *obj, struct km_causes *c);
void km_dra_check_pod(const cJSON *pod, struct km_causes *c);
struct km_ctx;
const char *km_dra_missing(struct km_ctx *ctx, const cJSON *pod, char *msg,
			   size_t cap);

/* ---- Status objects ------------------------------------------------- */

/* A Status object for a failure (reason "NotFound", code 404, ...);
 * details name the object when name is not NULL.  NULL on ENOMEM. */
cJSON *km_status(int code, const char *reason, const char *message,
		 enum km_res r, const char *name);
cJSON *km_statusf(int code, const char *reason, enum km_res r, const char *name,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The same as a plain failure without details (r ignored). */
cJSON *km_status_plain(int code, const char *reason, const char *message);

/* ---- faults --------------------------------------------------------- */

struct km_faults;

struct km_faults *km_faults_new(void);
void km_faults_free(struct km_faults *f);

enum km_fault_act { KM_FAULT_NONE, KM_FAULT_500, KM_FAULT_429 };

/*
 * Decide the fault for a request (method, path; watch when it is a
 * watch): *delay_ms gets the latency to add, *retry_after the
 * Retry-After seconds of a 429.  Consumes the counted faults it uses.
 */
enum km_fault_act km_faults_take(struct km_faults *f, const char *method,
				 const char *path, int watch, int *delay_ms,
				 int *retry_after);
/* Whether the next watch must end at once with 410 Gone (consumed). */
int km_faults_take_gone(struct km_faults *f);
/* POST (merge in), DELETE (clear) or GET the faults; *reply is JSON
 * text (caller frees).  drop_watches in a POST is returned in *drop. */
int km_faults_admin(struct km_faults *f, const char *method, const char *body,
		    size_t len, int *drop, int *refuse_ms, char **reply,
		    int *http_code);

/* ---- the controller: MPI Operator and kubelet ----------------------- */

struct km_ctx;
struct km_ctl;

struct km_ctl *km_ctl_new(struct km_ctx *ctx);
/* Start the controller thread; 0 or HB_ENOMEM/HB_EIO. */
int km_ctl_start(struct km_ctl *c);
/* Stop the thread, end every process it started, free everything. */
void km_ctl_free(struct km_ctl *c);
/* The store hook that feeds the controller. */
void km_ctl_hook(void *arg, const struct km_event *ev);

/* The next deletion of the object with this uid orphans its dependents
 * (propagationPolicy=Orphan). */
void km_ctl_orphan(struct km_ctl *c, const char *uid);
/* ownerReferences naming an MPIJob as the controller of an object
 * (caller frees); NULL on ENOMEM. */
cJSON *km_owner_refs(const cJSON *job);
/* Evict a pod (admin endpoint): phase Failed, reason Evicted. */
int km_ctl_evict(struct km_ctl *c, const char *ns, const char *name);

/* Record a core/v1 Event (type "Normal" or "Warning") about obj, as the
 * recorder of component ("kubelet", "mpi-job-controller") does. */
void km_event_record(struct km_ctx *ctx, const cJSON *obj, const char *type,
		     const char *reason, const char *msg,
		     const char *component);

/* kubelet side, used by the controller thread. */
struct km_kubelet;
struct km_kubelet *km_kubelet_new(struct km_ctx *ctx);
void km_kubelet_free(struct km_kubelet *k);
/* Move pod ns/name along; *next_ms gets when it wants to be called again
 * (0: only on a change). */
void km_kubelet_sync(struct km_kubelet *k, const char *ns, const char *name,
		     int64_t *next_ms);
/* Reap processes that ended; for each, the pod is updated. */
void km_kubelet_reap(struct km_kubelet *k);
/* Whether a process is running (the controller then polls). */
int km_kubelet_busy(struct km_kubelet *k);
/* The log file of a pod's main container, or with init set of that init
 * container (NULL if it has none yet); caller frees. */
char *km_kubelet_log_path(struct km_kubelet *k, const char *ns,
			  const char *name, const char *init);

/* ---- pods as a Table (table.c) -------------------------------------- */

/* Whether an Accept header asks for a meta.k8s.io Table. */
int km_table_wanted(const char *accept);
/* The Table of pods (n of them) that kubectl get prints, as the API
 * server's pod printer makes it; the list's rv, continue token (NULL:
 * none) and remaining count.  Caller frees; NULL on ENOMEM. */
cJSON *km_table_pods(struct km_obj *const *pods, size_t n, uint64_t rv,
		     const char *cont, size_t left);

/* ---- the kubelet's pod status writes (podstatus.c) ------------------ */

/* What happened to a pod's container, for the writers below. */
struct km_podst {
	int index;	       /* the init container concerned */
	const char *cid;       /* the containerID of one that started */
	int code;	       /* the exit code of one that ended */
	const char *reason;    /* Completed, Error, StartError; waiting:
				* CreateContainerConfigError */
	const char *message;   /* NULL for none */
	const char *container; /* waiting: the container's name */
	int fail;	       /* an init container's end fails the pod */
	int restart;	       /* ... or it restarts (CrashLoopBackOff) */
};

/*
 * km_mutate_fn writers.  running: the main containers run (phase
 * Running; init containers that did not run are taken as completed);
 * ended: they terminated with code (Succeeded or Failed); init_running:
 * init container index runs (Pending, PodInitializing); init_ended: it
 * terminated, the pod fails (fail), waits to restart it (restart), or
 * goes on; waiting: container cannot be made (reason, message), the pod
 * stays Pending (1, no change, when it said so already).  running and
 * init_running also set spec.nodeName when missing: call them without
 * the status subresource.
 */
int km_podst_running(void *arg, cJSON *pod);
int km_podst_ended(void *arg, cJSON *pod);
int km_podst_init_running(void *arg, cJSON *pod);
int km_podst_init_ended(void *arg, cJSON *pod);
int km_podst_waiting(void *arg, cJSON *pod);
/* The scheduler's PodScheduled False, Unschedulable, with message arg (a
 * string); 1 when it said so already. */
int km_podst_unschedulable(void *arg, cJSON *pod);

/* ---- nodes and the scheduler (nodes.c) ------------------------------ */

/*
 * A Node object from a --node spec, "NAME[,KEY=VALUE]...": cpu, memory,
 * pods, nvidia.com/gpu (or gpu), gpu-product (the nvidia.com/gpu.product
 * label), label:KEY (any label), ready, unschedulable.  HB_EINVAL with a
 * message naming the key.  Caller frees *out with cJSON_Delete().
 */
int km_node_from_spec(const char *spec, cJSON **out, struct hb_err *err);
/* Store the nodes of ctx->o->nodes; 0 or an error with err set. */
int km_nodes_create(struct km_ctx *ctx, struct hb_err *err);

/*
 * Pick a node for pod, as kube-scheduler's resource fit would: the first
 * Ready, schedulable node (in name order) whose allocatable cpu, memory,
 * pods and extended resources (nvidia.com/gpu) cover the pod's requests
 * on top of those of the pods bound to it that have not ended.  0 with
 * node set; HB_EAGAIN with why set ("0/2 nodes are available: 2
 * Insufficient cpu.") when none fits.  Controller thread only.
 */
int km_sched_pick(struct km_ctx *ctx, const cJSON *pod, char *node,
		  size_t cap, char *why, size_t wcap);

/* ---- namespaces and Pod Security admission (podsecurity.c) --------- */

/*
 * A Namespace object from a --namespace spec,
 * "NAME[,LABEL=VALUE|,annotation:KEY=VALUE]...".
 * HB_EINVAL with a message.  Caller frees *out with cJSON_Delete().
 */
int km_namespace_from_spec(const char *spec, cJSON **out, struct hb_err *err);
/* Store the namespaces of ctx->o->namespaces; 0 or an error, err set. */
int km_namespaces_create(struct km_ctx *ctx, struct hb_err *err);
/*
 * The Pod Security Standards checks of level ("baseline", "restricted";
 * anything else but "privileged" counts as restricted) that pod
 * violates, appended to out as the real plugin words them: "reason
 * (detail), reason (detail)".  Returns how many.
 */
int km_psa_evaluate(const cJSON *pod, const char *level, struct hb_buf *out);
/*
 * PodSecurity admission of a new pod in namespace ns, by the labels of
 * that Namespace (none: privileged).  enforce: HB_EPERM and *status a
 * 403 Forbidden Status (caller frees); warn: a line in warnings (may be
 * NULL); audit: a log line.  0 when admitted.
 */
int km_psa_admit(struct km_ctx *ctx, const char *ns, const cJSON *pod,
		 struct hb_buf *warnings, cJSON **status);

/* ---- containers' identity and mounts (container.c) ------------------ */

#define KM_MAX_GROUPS 64
#define KM_MAX_BINDS  32

/* Who an executed container runs as; set 0: as the emulator. */
struct km_ident {
	int set;
	uid_t uid;
	gid_t gid;
	gid_t groups[KM_MAX_GROUPS]; /* supplementary */
	int ngroups;
};

/* A volume bound at its mount path: host path src seen at dst. */
struct km_bind {
	char src[4096];
	char dst[1024];
	int ro;
};

/* What the child does before it runs the command. */
struct km_launch {
	struct km_ident id;
	struct km_bind binds[KM_MAX_BINDS];
	size_t nbinds;
};

/*
 * The identity container c of pod asks for: runAsUser and runAsGroup
 * (the container's, else the pod's; without runAsGroup, the gid of the
 * uid's passwd entry here, else 0), supplementalGroups and fsGroup as
 * supplementary groups.  HB_EPERM with why set to the kubelet's message
 * when runAsNonRoot cannot hold (no runAsUser, and the image runs as
 * root).
 */
int km_container_ident(const cJSON *pod, const cJSON *c, struct km_ident *id,
		       char *why, size_t cap);
/* The uid images run as when a pod names none (--image-user; 0: root, as
 * most images): a container without runAsUser runs as it. */
extern unsigned km_image_uid;
/*
 * Fork and run argv (found on the emulator's PATH) with envp in wd, its
 * output appended to logpath, in a session of its own, with l's binds and
 * identity.  0 with *pid set, or HB_EIO with why set when a step failed
 * (the child is reaped then).  Controller thread.
 */
/* The program argv0 names, found on envp's PATH (else the emulator's)
 * unless it holds a '/': 0, or -1 when there is none. */
int km_container_resolve(const char *argv0, char *const envp[], char *out,
			 size_t cap);
int km_container_exec(const struct km_launch *l, char *const argv[],
		      char *const envp[], const char *wd, const char *logpath,
		      pid_t *pid, char *why, size_t cap);

/* ---- watch and log streams ------------------------------------------ */

struct km_watch_opts {
	enum km_res res;
	const char *ns;		    /* NULL: every namespace */
	struct km_selector *labels; /* taken */
	struct km_selector *fields; /* taken */
	int has_rv;		    /* resourceVersion given ... */
	uint64_t rv;		    /* ... and not "0" */
	int bookmarks;
	int64_t timeout_ms;
	int gone;  /* fault: send 410 at once */
	int table; /* pods as meta.k8s.io Tables (kubectl get -w) */
};

struct km_watch;
/* A watch stream; NULL on ENOMEM.  Reads go through km_watch_read() as
 * a libmicrohttpd content reader; km_watch_free() releases it. */
struct km_watch *km_watch_new(struct km_ctx *ctx, struct km_watch_opts *o);
ssize_t km_watch_read(void *cls, uint64_t pos, char *buf, size_t max);
void km_watch_free(void *cls);

/* ---- the context ---------------------------------------------------- */

struct km_token {
	char *token;
	char *ns; /* NULL: every namespace */
};

struct km_opts {
	char *host;
	int port;
	char *port_file;
	char *tls_dir;
	char *kubeconfig_out;
	char *crds_dir;
	char *pidfile;
	char *workdir;
	struct km_token *tokens;
	size_t ntokens;
	int execute;
	int no_operator;
	int no_kueue;
	int pod_start_ms;
	int run_ms;
	size_t window;
	int bookmark_ms;
	int watch_timeout_s;
	int kill_grace_ms;
	char **exec_env; /* NAME=VALUE added to executed containers */
	size_t nexec_env;
	int hostfile_slots; /* 0: workers x slotsPerWorker */
	char **nodes; /* --node specs; none: no scheduling constraints */
	size_t nnodes;
	char **namespaces; /* --namespace specs */
	size_t nnamespaces;
	char *pvc_root; /* --pvc-root: claims are DIR/NAMESPACE/CLAIM */
};

struct km_ctx {
	struct km_opts *o;
	struct km_store *store;
	struct km_valid *valid;
	struct km_faults *faults;
	struct km_ctl *ctl;
	struct km_kubelet *kubelet;
	char *workdir; /* per-pod directories live here */
	atomic_int stopping;
	atomic_uint drop_gen; /* bumped to drop every watch */
	/* TLS material in PEM (NULL without --tls-dir). */
	char *tls_key;
	char *tls_cert;
	char *tls_ca;
	char *tls_ca_path;
};

/* ---- api and discovery (called by the server) ----------------------- */

/* One parsed request, as the server hands it to the API layer. */
struct km_req {
	const char *method;
	const char *path;
	/* Routing result. */
	int res;	  /* enum km_res, or -1 */
	const char *ns;	  /* NULL: cluster scope */
	const char *name; /* NULL: collection */
	const char *sub;  /* "status", "log", or NULL */
	/* Query arguments (NULL when absent). */
	const char *(*arg)(void *conn, const char *key);
	const char *(*header)(void *conn, const char *key);
	void *conn;
	const char *body;
	size_t body_len;
	const char *user;	/* authenticated user, for messages */
	const char *allowed_ns; /* a token limited to one namespace */
};

/* What the API layer answers: a body with a code, or a stream. */
struct km_resp {
	int code;
	char *body; /* malloc'd; NULL for streams */
	size_t len;
	const char *ctype;	/* Content-Type */
	struct hb_buf warnings; /* Warning header values, one per line */
	int retry_after;	/* seconds, for a Retry-After header */
	/* Streams: exactly one of these is set. */
	struct km_watch *watch;
	struct km_logstream *log;
};

/* Serve a resource request; fills resp. */
void km_api_serve(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs);
/* Serve a discovery path; 0, or HB_ENOENT if path is not discovery. */
int km_discovery_serve(const char *path, struct km_resp *rs);
/* Put a Status object (taken) into resp, with its code. */
void km_resp_status(struct km_resp *rs, cJSON *status);
/* Put a JSON tree (not taken) into resp with code. */
void km_resp_json(struct km_resp *rs, int code, const cJSON *tree);

/*
 * Writes by the emulated controllers, with the server's bookkeeping but
 * without validation.  km_internal_create() stamps uid and
 * creationTimestamp (and generation for custom resources) and records
 * manager's fields.  km_internal_update() gives fn a copy of the current
 * version to change (fn returns 0 to store it, 1 for no change, or a
 * negative HB_E*), and retries on conflicts; with sub "status" only the
 * status counts.  km_internal_delete() deletes at once.  *out (may be
 * NULL) gets the stored version.
 */
typedef int (*km_mutate_fn)(void *arg, cJSON *obj);
int km_internal_create(struct km_ctx *ctx, enum km_res r, cJSON *tree,
		       const char *manager, struct km_obj **out);
int km_internal_update(struct km_ctx *ctx, enum km_res r, const char *ns,
		       const char *name, const char *manager, const char *sub,
		       km_mutate_fn fn, void *arg, struct km_obj **out);
int km_internal_delete(struct km_ctx *ctx, enum km_res r, const char *ns,
		       const char *name);

/* Pod logs. */
struct km_logstream;
/* A stream of the log file at path of pod ns/name; with follow it ends
 * once the pod (or, with init set, that init container) has ended. */
struct km_logstream *km_log_open(struct km_ctx *ctx, const char *ns,
				 const char *name, const char *init,
				 const char *path, int follow, uint64_t skip,
				 uint64_t limit);
ssize_t km_log_read(void *cls, uint64_t pos, char *buf, size_t max);
void km_log_free(void *cls);

/* ---- TLS and kubeconfig --------------------------------------------- */

/* Make (or reuse) ca.crt/ca.key and server.crt/server.key in dir, and
 * load them into ctx.  0 or HB_EIO with err set. */
int km_tls_setup(struct km_ctx *ctx, const char *dir, struct hb_err *err);
/* Write a kubeconfig for the server at url; 0 or HB_EIO. */
int km_write_kubeconfig(struct km_ctx *ctx, const char *path, const char *url,
			struct hb_err *err);

/* ---- server --------------------------------------------------------- */

struct km_server;
/* Listen on ctx->o->host:port (0 picks one: *port gets it). */
struct km_server *km_server_start(struct km_ctx *ctx, int *port,
				  struct hb_err *err);
void km_server_stop(struct km_server *sv);
/* Set by the server when an admin request asked to refuse connections
 * for that many milliseconds; main() restarts the listener. */
int km_server_refuse_pending(void);
void km_server_wait_refuse(int64_t timeout_ms);

/* ---- OpenAPI (openapi.c) and strategic merge patches (patch.c) ------ */

/* The openAPIV3Schema of resource r's CRD, or NULL if none was loaded;
 * borrowed from v. */
const cJSON *km_valid_schema(const struct km_valid *v, enum km_res r);
/* Serve /openapi/v2, /openapi/v3 and /openapi/v3/{api/v1,apis/G/V};
 * 0, or HB_ENOENT if path is none of them. */
int km_openapi_serve(struct km_ctx *ctx, const char *path, const char *accept,
		     struct km_resp *rs);
/* The built-in kinds' definitions (name to schema, v2 references), and
 * the one of resource r (NULL for custom resources); static, read-only. */
const cJSON *km_openapi_builtin_defs(void);
const cJSON *km_openapi_kind_schema(enum km_res r);
/* A strategic merge patch of an object of schema (NULL: unknown; its
 * references name members of defs): lists merge by the key the schema
 * names (x-kubernetes-patch-merge-key), and the $patch, $retainKeys,
 * $setElementOrder and $deleteFromPrimitiveList directives apply.
 * HB_EINVAL (message in err) for a malformed directive. */
int km_strategic_patch(cJSON **doc, const cJSON *patch, const cJSON *schema,
		       const cJSON *defs, struct hb_err *err);
/* ---- Kueue (kueue.c) ------------------------------------------------ */

/* One reconcile of every queued MPIJob, Workload and queue (controller
 * thread). */
void km_kueue_sync(struct km_ctx *ctx);
/* Whether an MPIJob change concerns Kueue (the job has, or had, a
 * queue-name label); called by the store hook. */
int km_kueue_queued(const struct km_event *ev);
/* The job webhook's default on create: an MPIJob with a queue-name label
 * is created suspended. */
void km_kueue_webhook(struct km_ctx *ctx, enum km_res r, cJSON *obj);
/* Serve a visibility.kueue.x-k8s.io/v1beta1 path (pending workloads of
 * a ClusterQueue or LocalQueue, query limit and offset); HB_ENOENT when
 * path is not one. */
int km_kueue_visibility(struct km_ctx *ctx, const char *method,
			const char *path, const char *limit, const char *offset,
			struct km_resp *rs);

#endif
