/*
 * k8s_int.h - what the files of translators/k8s/ share and no other part
 * uses: the label and annotation keys, the plan both emitters (mpijob.c,
 * trainjob.c) fill from a jobspec and write out, the reader that turns a
 * manifest back into a jobspec, and, between the files of the plan and
 * of the reader, the context and helpers of their steps.
 *
 * k8s.c holds the plan and its writers, k8s_shape.c, k8s_image.c,
 * k8s_select.c and k8s_meta.c its steps; k8s_read.c and k8s_restore.c
 * the reader.  docs/internals/manifests.md describes the mapping.
 */
#ifndef HPCBRIDGE_K8S_INT_H
#define HPCBRIDGE_K8S_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/error.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/mpijob.h"

struct cJSON;
struct hb_emit;

/* Annotation and label keys hpcbridge writes on the objects it makes. */
#define HB_ANNOTATION_PREFIX "hpcbridge.io/"
#define HB_LABEL_QUEUE	     "kueue.x-k8s.io/queue-name"
#define HB_LABEL_PRIORITY    "kueue.x-k8s.io/priority-class"
#define HB_LABEL_MANAGED_BY  "app.kubernetes.io/managed-by"
#define HB_MANAGED_BY	     "hpcbridge"
/* Label on every pod template, for the --exclusive anti-affinity. */
#define HB_LABEL_JOB  HB_ANNOTATION_PREFIX "job-name"
#define HB_LABEL_ROLE HB_ANNOTATION_PREFIX "role"

/* ------------------------------------------------------------------ */
/* Shared by mpijob.c and trainjob.c; implemented in k8s*.c.           */
/* ------------------------------------------------------------------ */

/* Where an emitter puts each mapped field, for the fidelity report. */
struct hb_k8s_paths {
	const char *kind;      /* "MPIJob", "TrainJob" */
	const char *nodes;     /* the worker count */
	const char *slots;     /* tasks per node */
	const char *resources; /* the worker container's resources */
	const char *deadline;  /* activeDeadlineSeconds */
	const char *image;
	const char *env;
	const char *script;   /* where the launcher script goes */
	const char *selector; /* the worker pods' nodeSelector */
	const char *affinity; /* the worker pods' affinity */
	const char *role;     /* HB_LABEL_ROLE of the worker pods */
	/* The pods' securityContext; NULL: the emitter writes none. */
	const char *security;
	/* Whether the emitter mounts the site volumes in the containers (a
	 * TrainJob's containers are its runtime's). */
	bool mounts;
};

/* A key and its value, borrowed from the jobspec, the configuration,
 * string literals or the plan's arena. */
struct hb_k8s_kv {
	const char *key;
	const char *value;
};
struct hb_k8s_kvs {
	struct hb_k8s_kv *v;
	uint32_t n, cap;
};

/* A container's {requests, limits} (the same); empty strings are left
 * out. */
struct hb_k8s_res {
	bool set;
	char cpu[16];
	char mem[32];
	char gpu[16];
	const char *gpu_key; /* the GPU resource name, with gpu */
	/* The RDMA device plugin's resource and count (NULL: none). */
	const char *rdma_key;
	char rdma[12];
	/* The pod's resource claim the container uses (NULL: none). */
	const char *claim;
};

/* What both emitters derive from a jobspec and the configuration, written
 * with the hb_k8s_write_*() functions below.  hb_k8s_plan_free() frees
 * it. */
struct hb_k8s_plan {
	char name[HB_DNS_LABEL_MAX + 1];
	struct hb_shape shape;
	int64_t array_index;	       /* -1: not an array element */
	const char *image;	       /* borrowed from cfg or spec */
	uint64_t deadline;	       /* activeDeadlineSeconds; 0: none */
	const char *namespace;	       /* metadata.namespace, or NULL */
	struct hb_k8s_kvs labels;      /* metadata.labels */
	struct hb_k8s_kvs annotations; /* metadata.annotations */
	struct hb_k8s_res resources;   /* the worker's */
	struct hb_k8s_res launcher_resources; /* from cfg launcher_* */
	struct hb_k8s_kvs env;		 /* name -> value, on every container */
	struct hb_buf script;		 /* the launcher script, escaped */
	struct hb_k8s_kvs node_selector; /* with has_node_selector */
	bool has_node_selector;
	struct cJSON *affinity;	     /* NULL when none */
	bool runtime_mounted;	     /* launcher runtime from the ConfigMap */
	const char *queue;	     /* the Kueue LocalQueue, or NULL */
	const char *pod_priority;    /* PriorityClass for gang scheduling */
	/* Who the pods run as (-1: not known), from the jobspec. */
	int64_t run_uid, run_gid, fs_group;
	const uint32_t *groups;
	uint32_t ngroups;
	const struct hb_k8s_volume *volumes; /* cfg's: the site mounts */
	uint32_t nvolumes;
	const char *scc; /* cfg's openshift_scc, or NULL */
	/* The checkpoint pulled from S3 before the job starts (k8s_ckpt.c;
	 * ckpt_url NULL: none): its location s3://BUCKET/PREFIX/KEY, the
	 * directory, the init container's image, and the emptyDir's mount
	 * path, the directory's parent (NULL: the directory is on a site
	 * volume, which the launcher's init container alone fills). */
	const char *ckpt_url, *ckpt_dir, *ckpt_image, *ckpt_mount;
	const char *ckpt_endpoint, *ckpt_region, *ckpt_secret; /* cfg's */
	/* RDMA (k8s_fabric.c): the workers' container adds IPC_LOCK; the
	 * worker pod claims its NIC from this ResourceClaimTemplate (NULL:
	 * none), named after the object. */
	bool ipc_lock;
	const char *claim_template;
	struct hb_arena arena;	     /* the plan's strings and lists */
};

/*
 * Fill plan for spec: the array check, the shape and the worker-shape
 * check, the name (reserving name_reserve characters; 0: MPIJob's
 * "-worker-<N-1>"), image, queue, labels, the annotation carry-over,
 * resources, env, selectors and the launcher script.  Records the fate
 * of every field that is set, using paths.  The caller may override a
 * fate afterwards.  On error the plan is freed.
 */
int hb_k8s_plan(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		int64_t array_index, size_t name_reserve,
		const struct hb_k8s_paths *paths, struct hb_k8s_plan *plan,
		struct hb_report *rep, struct hb_err *err);
void hb_k8s_plan_free(struct hb_k8s_plan *plan);

/* Set annotation key (kept: a literal or longer-lived string) to a copy
 * of value; a key set before moves to the end.  HB_ENOMEM. */
int hb_k8s_annotate(struct hb_k8s_plan *plan, const char *key,
		    const char *value);

/* The plan's pieces as events of w (doc.h), each under its usual key:
 * "metadata"; an object of kv under key; resources r under key (nothing
 * unless r->set); "env", then extra (NULL: none; nothing when both are
 * empty); the pod template's "labels" with HB_LABEL_ROLE role;
 * "nodeSelector" and "affinity" when there are; the launcher script as
 * an array element. */
void hb_k8s_write_metadata(struct hb_emit *w, const struct hb_k8s_plan *plan);
void hb_k8s_write_kvs(struct hb_emit *w, const char *key,
		      const struct hb_k8s_kvs *kv);
void hb_k8s_write_resources(struct hb_emit *w, const char *key,
			    const struct hb_k8s_res *r);
/* The container's env: the plan's, extra (may be NULL), and with ckpt
 * the checkpoint's S3 settings (the launcher pushes it back). */
void hb_k8s_write_env(struct hb_emit *w, const struct hb_k8s_plan *plan,
		      const struct hb_k8s_kv *extra, bool ckpt);
/* A pod template's metadata members: its labels, and with a configured
 * OpenShift SCC the annotation that asks for it. */
void hb_k8s_write_pod_meta(struct hb_emit *w, const struct hb_k8s_plan *plan,
			   const char *role);
void hb_k8s_write_placement(struct hb_emit *w, const struct hb_k8s_plan *plan);
void hb_k8s_write_script(struct hb_emit *w, const struct hb_k8s_plan *plan);

/* k8s_pod.c: a pod spec's "securityContext" (the identity, runAsNonRoot,
 * the RuntimeDefault seccomp profile); a container's (no privilege
 * escalation, every capability dropped); the site volumes' entries of a
 * pod's "volumes" and of a container's "volumeMounts" (inside an array
 * the caller opened). */
void hb_k8s_write_pod_security(struct hb_emit *w,
			       const struct hb_k8s_plan *plan);
void hb_k8s_write_container_security(struct hb_emit *w, bool ipc_lock);
void hb_k8s_write_site_volumes(struct hb_emit *w,
			       const struct hb_k8s_plan *plan);
void hb_k8s_write_site_mounts(struct hb_emit *w,
			      const struct hb_k8s_plan *plan);

/* k8s_ckpt.c: the pod's "initContainers" that pulls the checkpoint
 * (nothing when the plan has none, or when pod is a worker and the
 * directory is on a site volume); the checkpoint emptyDir's entries of a
 * pod's "volumes" and of a container's "volumeMounts" (nothing when the
 * directory is on a site volume). */
/* The S3 endpoint, region and credentials (secretKeyRef) the init
 * container (own: as AWS_*) and the launcher, which pushes the
 * checkpoint back when the job ends (as HPCBRIDGE_S3_*), get in their
 * env: items of an open "env" array. */
void hb_k8s_write_ckpt_s3_env(struct hb_emit *w, const struct hb_k8s_plan *plan,
			      bool own);
void hb_k8s_write_ckpt_init(struct hb_emit *w, const struct hb_k8s_plan *plan,
			    bool launcher);
void hb_k8s_write_ckpt_volume(struct hb_emit *w,
			      const struct hb_k8s_plan *plan);
void hb_k8s_write_ckpt_mount(struct hb_emit *w,
			     const struct hb_k8s_plan *plan);

/* Reading a manifest into a jobspec. */
struct hb_k8s_reader {
	struct hb_jobspec *spec;
	struct hb_err *err;
	const struct cJSON *doc;
	const struct cJSON *annotations; /* metadata.annotations or NULL */
	bool ours;			 /* labelled managed-by hpcbridge */
	const struct cJSON *env; /* the job container's env, for $(VAR) */
	/* What the manifest itself says, to check hpcbridge.io/request. */
	uint32_t m_nodes, m_slots, m_gpus;
	uint64_t m_cpu_milli, m_mem_mb;
	bool m_has_cpu, m_has_mem, m_has_deadline;
};

/* Check apiVersion and kind, read metadata (name, labels) and remember
 * the annotations.  Sets spec->source. */
int hb_k8s_read_begin(struct hb_k8s_reader *rd, const struct cJSON *doc,
		      struct hb_jobspec *spec, struct hb_err *err,
		      const char *api_version, const char *kind,
		      uint8_t source);

/* Record field f as read from node at path (a directive "path: value"
 * and the field's provenance).  note may be NULL. */
int hb_k8s_note(struct hb_k8s_reader *rd, const struct cJSON *node,
		const char *path, int nfields, const uint8_t *fields,
		const char *note);
int hb_k8s_set(struct hb_k8s_reader *rd, const struct cJSON *node,
	       const char *path, enum hb_field f, const char *note);

/* node must be an integer in [min, max]; NULL or JSON null: *present is
 * false.  Errors name path. */
int hb_k8s_get_int(struct hb_k8s_reader *rd, const struct cJSON *node,
		   const char *path, int64_t min, int64_t max, int64_t *out,
		   bool *present);
/* node must be a string (or absent/null: *out NULL). */
int hb_k8s_get_str(struct hb_k8s_reader *rd, const struct cJSON *node,
		   const char *path, const char **out);
/* node must be an object (or absent/null: *out NULL). */
int hb_k8s_get_obj(struct hb_k8s_reader *rd, const struct cJSON *node,
		   const char *path, const struct cJSON **out);
/* node must be an array (or absent/null: *out NULL). */
int hb_k8s_get_arr(struct hb_k8s_reader *rd, const struct cJSON *node,
		   const char *path, const struct cJSON **out);

/* Per-node resources {requests, limits} at path; tasks_per_node divides
 * the CPUs into cpus_per_task. */
int hb_k8s_read_resources(struct hb_k8s_reader *rd, const struct cJSON *res,
			  const char *path, uint32_t tasks_per_node);

/* The container that runs the job: image, workingDir, env, and the
 * script from command and args (ours: the original script; else a
 * synthesised one).  Other keys are the caller's to note. */
int hb_k8s_read_container(struct hb_k8s_reader *rd, const struct cJSON *c,
			  const char *path);

/* Note the keys of obj that are not in known[] (NULL-terminated) as
 * directives that set nothing ("not carried: ..."). */
int hb_k8s_note_unknown(struct hb_k8s_reader *rd, const struct cJSON *obj,
			const char *path, const char *const *known,
			const char *why);

/* Restore what hpcbridge kept in annotations, scan the script body, and
 * fill what the manifest leaves to defaults.  Call last. */
int hb_k8s_read_end(struct hb_k8s_reader *rd);

/* Kubernetes expands $(VAR) and turns $$ into $ in command, args and env
 * values; these write and read text that must reach the shell as is. */
int hb_k8s_escape(const char *s, size_t n, struct hb_buf *out);
int hb_k8s_unescape(const char *s, size_t n, struct hb_buf *out);

/* ------------------------------------------------------------------ */
/* Between the files of the plan (k8s.c, k8s_shape.c, k8s_image.c,     */
/* k8s_select.c, k8s_meta.c) and of the reader (k8s_read.c,            */
/* k8s_restore.c).                                                     */
/* ------------------------------------------------------------------ */

/* Annotation hpcbridge.io/<k> (k a string literal). */
#define ANN(k) HB_ANNOTATION_PREFIX k

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* What every step of the plan works on. */
struct hb_k8s_ctx {
	const struct hb_jobspec *spec;
	const struct hb_k8s_opts *cfg;
	const struct hb_k8s_paths *paths;
	struct hb_k8s_plan *plan;
	struct hb_report *rep;
	struct hb_err *err;
	char path[256];
};

#define OOM(c) hb_err_set((c)->err, HB_ENOMEM, NULL, 0, "out of memory")

static inline int hb_k8s_is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c >= 'A' && c <= 'Z');
}

/* The value annotation hpcbridge.io/<key> had in the manifest spec was
 * read from, when that was one of hpcbridge's (its directive); NULL for
 * any other jobspec. */
const char *hb_k8s_provenance(const struct hb_jobspec *spec, const char *key);

/* "<base>.<leaf>" into c->path, for fate targets. */
const char *hb_k8s_at(struct hb_k8s_ctx *c, const char *base,
		      const char *leaf);

/* Append key (a string the plan may keep) with a copy of value to kv;
 * hb_k8s_kv_set() first takes out a key set before.  HB_ENOMEM. */
int hb_k8s_kv_push(struct hb_k8s_plan *plan, struct hb_k8s_kvs *kv,
		   const char *key, const char *value);
int hb_k8s_kv_set(struct hb_k8s_plan *plan, struct hb_k8s_kvs *kv,
		  const char *key, const char *value);

/* hb_k8s_annotate() with the error in c->err. */
int hb_k8s_ann_put(struct hb_k8s_ctx *c, const char *key, const char *value);
#define annotate(c, k, v) hb_k8s_ann_put((c), ANN(k), (v))

/* Whether the job sets field f: a directive gave it, or its value is
 * not the default. */
bool hb_k8s_is_set(const struct hb_jobspec *s, enum hb_field f);

/* Names of enum hb_mem_kind and enum hb_gpu_scope in hpcbridge.io/request. */
extern const char *const hb_k8s_mem_kind_names[HB_MEM_PER_PROCESS + 1];
extern const char *const hb_k8s_gpu_scope_names[HB_GPU_PER_TASK + 1];

/*
 * The steps of hb_k8s_plan(), which calls them in a fixed order (the
 * array and shape checks first, the annotation budget last).  Each
 * returns 0 or an error code with the message in c->err.
 */
/* k8s_shape.c */
int hb_k8s_check_array(struct hb_k8s_ctx *c, int64_t index);
int hb_k8s_check_shape(struct hb_k8s_ctx *c);
int hb_k8s_plan_resources(struct hb_k8s_ctx *c);
int hb_k8s_plan_time_limit(struct hb_k8s_ctx *c);
int hb_k8s_plan_array(struct hb_k8s_ctx *c);
/* k8s_image.c */
int hb_k8s_plan_image(struct hb_k8s_ctx *c);
int hb_k8s_plan_env(struct hb_k8s_ctx *c);
int hb_k8s_plan_script(struct hb_k8s_ctx *c);
/* k8s_select.c */
int hb_k8s_plan_constraint(struct hb_k8s_ctx *c);
int hb_k8s_plan_gpu_type(struct hb_k8s_ctx *c);
int hb_k8s_plan_exclusive(struct hb_k8s_ctx *c, const char *role);
/* k8s_pod.c */
int hb_k8s_plan_identity(struct hb_k8s_ctx *c);
int hb_k8s_plan_volumes(struct hb_k8s_ctx *c);
/* in (absolute) written plainly into out: no empty or "." components,
 * no trailing '/'.  HB_EINVAL for a ".." component, HB_ERANGE when it
 * does not fit cap. */
int hb_k8s_path_plain(const char *in, char *out, size_t cap);
/* The first of cfg's site volumes the plain path dir lies on; NULL:
 * none. */
const struct hb_k8s_volume *hb_k8s_on_volume(const struct hb_k8s_opts *cfg,
					     const char *dir);
/* k8s_fabric.c: the GPUs' extended resource (kubernetes.gpu_resources,
 * the vendor of the type, else gpu_resource; HB_EINVAL for a type the
 * configuration does not list); the RDMA device, IPC_LOCK and Open MPI's
 * PML for an RDMA job (after hb_k8s_plan_env()); the worker pod's
 * "resourceClaims". */
int hb_k8s_gpu_key(struct hb_k8s_ctx *c, const char **out);
int hb_k8s_plan_fabric(struct hb_k8s_ctx *c);
void hb_k8s_write_pod_claims(struct hb_emit *w,
			     const struct hb_k8s_plan *plan);
/* k8s_ckpt.c: after hb_k8s_plan_carried() and hb_k8s_plan_env() */
int hb_k8s_plan_ckpt(struct hb_k8s_ctx *c);
/* Whether image, one the user chose, is allowed (cfg->allowed_images:
 * fnmatch() patterns; none: any). */
bool hb_k8s_image_allowed(const struct hb_k8s_opts *cfg, const char *image);
/* k8s_meta.c */
int hb_k8s_plan_metadata(struct hb_k8s_ctx *c);
int hb_k8s_plan_carried(struct hb_k8s_ctx *c);
int hb_k8s_annotation_budget(struct hb_k8s_ctx *c);

#define RD_OOM(rd) hb_err_set((rd)->err, HB_ENOMEM, NULL, 0, "out of memory")

/* The source line of n (0: none). */
unsigned hb_k8s_line_of(const struct cJSON *n);

/* An error at path, on n's line. */
int hb_k8s_rd_err(struct hb_k8s_reader *rd, const struct cJSON *n, int code,
		  const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* o's member key (NULL: no o, or no such member). */
const struct cJSON *hb_k8s_child(const struct cJSON *o, const char *key);

#endif
