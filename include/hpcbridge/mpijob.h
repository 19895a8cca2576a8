/*
 * mpijob.h - Kubeflow MPIJob (kubeflow.org/v2beta1), both directions, and
 * the pieces the MPIJob and TrainJob translators share (k8s.c).
 *
 * The mapping, the annotation carry-over and the reverse direction are
 * described in docs/internals/manifests.md.
 */
#ifndef HPCBRIDGE_MPIJOB_H
#define HPCBRIDGE_MPIJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/error.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"

struct cJSON;

/* Annotation and label keys hpcbridge writes on the objects it makes. */
#define HB_ANNOTATION_PREFIX "hpcbridge.io/"
#define HB_LABEL_QUEUE	     "kueue.x-k8s.io/queue-name"
#define HB_LABEL_MANAGED_BY  "app.kubernetes.io/managed-by"
#define HB_MANAGED_BY	     "hpcbridge"
/* Label on every pod template, for the --exclusive anti-affinity. */
#define HB_LABEL_JOB  HB_ANNOTATION_PREFIX "job-name"
#define HB_LABEL_ROLE HB_ANNOTATION_PREFIX "role"

/* Longest metadata.name: "<name>-worker-<N-1>" must stay <= 63. */
#define HB_DNS_LABEL_MAX 63

/*
 * The Kubernetes name for spec: the job name (else the source file's base
 * name without extension) lowercased, each run of characters outside
 * [a-z0-9] turned into one '-', trimmed of '-', and cut so that
 * "<name>[-<array_index>]-worker-<nodes-1>" fits in 63 characters.  A name
 * that comes out empty or starting with a digit is prefixed "job-" (an
 * empty one becomes "job").  The result is a DNS-1035 label.  A jobspec
 * read back from one of hpcbridge's manifests uses the original script's
 * file name (hpcbridge.io/source-name).  array_index < 0: not an array
 * element; nodes 0 counts as 1.  out: HB_DNS_LABEL_MAX + 1 bytes.
 */
int hb_k8s_name(const struct hb_jobspec *spec, int64_t array_index,
		uint32_t nodes, char out[HB_DNS_LABEL_MAX + 1]);

/*
 * The same, reserving reserve characters after "<name>[-<index>]" instead
 * of "-worker-<nodes-1>" (a TrainJob's longest pod host name is
 * "<name>-launcher-0-0" or "<name>-node-0-<N-1>").  HB_ERANGE when the
 * reserve leaves no room.
 */
int hb_k8s_name_reserve(const struct hb_jobspec *spec, int64_t array_index,
			size_t reserve, char out[HB_DNS_LABEL_MAX + 1]);

/*
 * Build the MPIJob for spec (array_index >= 0: that element of an array).
 * Records every field's fate in rep.  Caller frees *out with cJSON_Delete.
 */
int hb_mpijob_emit(const struct hb_jobspec *spec, const struct hb_config *cfg,
		   int64_t array_index, struct cJSON **out,
		   struct hb_report *rep, struct hb_err *err);

/*
 * The same MPIJob written as one document of w (doc.h: JSON, YAML or a
 * tree), ended with hb_emit_done().  hb_mpijob_emit() is this with a
 * tree writer.  On error nothing is left in w's output.
 */
struct hb_emit;
int hb_mpijob_write(const struct hb_jobspec *spec, const struct hb_config *cfg,
		    int64_t array_index, struct hb_emit *w,
		    struct hb_report *rep, struct hb_err *err);

/* Read an MPIJob manifest (already parsed into doc) into spec.  Fields
 * hpcbridge wrote as annotations are recovered.  Errors name the field
 * path. */
int hb_mpijob_parse(const struct cJSON *doc, struct hb_jobspec *spec,
		    struct hb_err *err);

/* ------------------------------------------------------------------ */
/* Shared by mpijob.c and trainjob.c; implemented in k8s.c.  Not a     */
/* stable interface for other modules.                                 */
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
int hb_k8s_plan(const struct hb_jobspec *spec, const struct hb_config *cfg,
		int64_t array_index, size_t name_reserve,
		const struct hb_k8s_paths *paths, struct hb_k8s_plan *plan,
		struct hb_report *rep, struct hb_err *err);
void hb_k8s_plan_free(struct hb_k8s_plan *plan);

/*
 * The ConfigMap that holds the launcher runtime (launcher.h), in
 * cfg->namespace, for MPIJobs whose launcher mounts it.  Creating it once
 * per namespace is enough; the name changes with the runtime.  Caller
 * frees *out with cJSON_Delete().
 */
int hb_k8s_runtime_configmap(const struct hb_config *cfg, struct cJSON **out,
			     struct hb_err *err);

/* Set annotation key (kept: a literal or longer-lived string) to a copy
 * of value; a key set before moves to the end.  HB_ENOMEM. */
int hb_k8s_annotate(struct hb_k8s_plan *plan, const char *key,
		    const char *value);

/* The plan's pieces as events of w (doc.h), each under its usual key:
 * "metadata"; an object of kv under key; resources r under key (nothing
 * unless r->set); "env" (nothing when empty); the pod template's
 * "labels" with HB_LABEL_ROLE role; "nodeSelector" and "affinity" when
 * there are; the launcher script as an array element. */
void hb_k8s_write_metadata(struct hb_emit *w, const struct hb_k8s_plan *plan);
void hb_k8s_write_kvs(struct hb_emit *w, const char *key,
		      const struct hb_k8s_kvs *kv);
void hb_k8s_write_resources(struct hb_emit *w, const char *key,
			    const struct hb_k8s_res *r);
void hb_k8s_write_env(struct hb_emit *w, const struct hb_k8s_plan *plan);
void hb_k8s_write_pod_labels(struct hb_emit *w, const struct hb_k8s_plan *plan,
			     const char *role);
void hb_k8s_write_placement(struct hb_emit *w, const struct hb_k8s_plan *plan);
void hb_k8s_write_script(struct hb_emit *w, const struct hb_k8s_plan *plan);

/* Kubernetes expands $(VAR) and turns $$ into $ in command, args and env
 * values; these write and read text that must reach the shell as is. */
int hb_k8s_escape(const char *s, size_t n, struct hb_buf *out);
int hb_k8s_unescape(const char *s, size_t n, struct hb_buf *out);

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
 * and the field's origin).  note may be NULL. */
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

#endif
