/*
 * schema.h - validating objects against CustomResourceDefinition schemas,
 * and the controllers' own rules.
 *
 * A schema set loads the openAPIV3Schema of every served version of one or
 * more CRDs once, compiled into a tree, and then checks any number of
 * objects against it as the Kubernetes API server does with
 * fieldValidation=Strict:
 *
 *   - type, nullable, format (int32/int64 ranges, date-time), enum,
 *     required, minimum/maximum (exclusive too), multipleOf,
 *     minLength/maxLength (in characters), pattern (POSIX extended
 *     regular expressions), minItems/maxItems, minProperties/
 *     maxProperties, additionalProperties (schema or bool), anyOf/allOf/
 *     oneOf/not, x-kubernetes-preserve-unknown-fields,
 *     x-kubernetes-int-or-string, x-kubernetes-embedded-resource and
 *     x-kubernetes-list-type set/map uniqueness (map keys honour their
 *     defaults);
 *   - a field the schema does not declare is an error ("unknown field"),
 *     and so is a field given twice ("duplicate field");
 *   - null for a field that is not nullable is dropped, as the server
 *     prunes it (a required field then counts as missing unless it has a
 *     default);
 *   - metadata is checked as ObjectMeta: name or generateName, both DNS-1123
 *     subdomains; namespace (a DNS-1123 label, forbidden on cluster-scoped
 *     kinds); labels and annotations with valid keys and values and the
 *     256 KiB annotation budget; finalizers, ownerReferences, managedFields;
 *     any other metadata field is unknown;
 *   - the x-kubernetes-validations (CEL) rules of the reference CRDs that
 *     can be decided on one object are implemented natively; any other
 *     rule, and every transition rule (oldSelf), is listed by
 *     hb_schema_set_unchecked() and not checked.
 *
 * A loaded set is read-only: several threads may validate with one set at
 * once.  Nothing here keeps global state.
 *
 * Violations read "PATH: message", one a line, with PATH the JSON path of
 * the offending value: object fields dotted, array items in brackets,
 * keys that are not plain identifiers in brackets
 * ("spec.mpiReplicaSpecs.Worker.template.spec.containers[0].name",
 * "metadata.labels[kueue.x-k8s.io/queue-name]"); a violation of the whole
 * object reads "<root>: message".
 */
#ifndef HPCBRIDGE_SCHEMA_H
#define HPCBRIDGE_SCHEMA_H

#include <stddef.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

struct cJSON;
struct hb_schema_set;

/* At most this many violations are listed; a last line counts the rest. */
#define HB_SCHEMA_MAX_VIOLATIONS 200

/* Flags for hb_schema_validate_all(). */
enum {
	/*
	 * obj is the body of a create request: where the CRD has a status
	 * subresource the server drops status before validating, so status is
	 * checked for unknown and duplicate fields only.
	 */
	HB_SCHEMA_CREATE = 1u << 0,
	/* Also apply the controller rules (hb_schema_check_rules()). */
	HB_SCHEMA_RULES = 1u << 1
};

/* An empty set; NULL when out of memory.  Free with hb_schema_set_free(). */
struct hb_schema_set *hb_schema_set_new(void);
void hb_schema_set_free(struct hb_schema_set *set);

/*
 * Add the CRD in buf (YAML or JSON text, len bytes; name names it in
 * errors).  Every served version becomes validatable.  A CRD with the same
 * group and kind as one already in the set replaces it.  Errors name the
 * file and the schema path: HB_EINVAL for a document that is not a valid
 * apiextensions.k8s.io/v1 CRD, HB_EUNSUP for schema keywords a CRD may not
 * use.  On error the set is unchanged.
 */
int hb_schema_set_add_crd(struct hb_schema_set *set, const char *buf,
			  size_t len, const char *name, struct hb_err *err);

/* The same for a CRD already parsed; crd is copied, not kept. */
int hb_schema_set_add_crd_tree(struct hb_schema_set *set,
			       const struct cJSON *crd, const char *name,
			       struct hb_err *err);

/*
 * Append what the set does not check, one line each:
 * "KIND VERSION PATH: WHAT (why)" - CEL rules that are not implemented,
 * transition rules (they need the old object), formats and patterns that
 * are not supported.
 */
int hb_schema_set_unchecked(const struct hb_schema_set *set,
			    struct hb_buf *out);

/*
 * Validate obj; apiVersion and kind pick the schema.  The first violation
 * is the error detail ("PATH: message", with "(and N more)" when there are
 * others).  Returns 0 when obj is valid, HB_EINVAL when it is not,
 * HB_ENOENT for an apiVersion/kind the set does not know, HB_ENOMEM.
 */
int hb_schema_validate(const struct hb_schema_set *set, const struct cJSON *obj,
		       struct hb_err *err);

/*
 * As hb_schema_validate(), and append every violation to violations (may
 * be NULL), one "PATH: message\n" line each, at most
 * HB_SCHEMA_MAX_VIOLATIONS of them.  flags: HB_SCHEMA_*.
 */
int hb_schema_validate_all(const struct hb_schema_set *set,
			   const struct cJSON *obj, unsigned flags,
			   struct hb_buf *violations, struct hb_err *err);

/*
 * The rules the controllers apply beyond the schema, on one object (after
 * applying their defaults):
 *   MPIJob kubeflow.org/v2beta1 - the MPI Operator's ValidateMPIJob:
 *     "<name>-worker-<replicas-1>" a DNS-1035 label; mpiReplicaSpecs with
 *     a Launcher of exactly 1 replica and a Worker of at least 1; restart
 *     policies Never or OnFailure; at least one container per replica
 *     spec; slotsPerWorker, ttlSecondsAfterFinished, activeDeadlineSeconds
 *     and backoffLimit not negative; cleanPodPolicy None, Running or All;
 *     mpiImplementation OpenMPI, Intel or MPICH; runPolicy.managedBy unset,
 *     kubeflow.org/mpi-operator or kueue.x-k8s.io/multikueue.  Also (a
 *     stricter rule of ours) a replica type other than Launcher and Worker,
 *     which the operator would silently ignore.
 *   TrainJob trainer.kubeflow.org/v1alpha1 - the Trainer webhook's
 *     runtimeRef check (a TrainingRuntime or ClusterTrainingRuntime of
 *     trainer.kubeflow.org); and (ours) trainer.numNodes and numProcPerNode
 *     at least 1.
 *   ClusterTrainingRuntime, TrainingRuntime - the Trainer webhook: a
 *     replicated job labelled with a trainjob-ancestor-step has 1 replica
 *     and its required container; only the trainer ancestor may set a
 *     priorityClassName.
 * Violations are appended to violations (may be NULL) as in
 * hb_schema_validate_all(); the first is the error detail.  Returns 0,
 * HB_EINVAL, HB_ENOENT for a kind without rules, or HB_ENOMEM.
 */
int hb_schema_check_rules(const struct cJSON *obj, struct hb_buf *violations,
			  struct hb_err *err);

/*
 * The Trainer webhook's checks that need the runtime a TrainJob refers to:
 * runtimeRef names this runtime (kind and name, and namespace for a
 * TrainingRuntime), and the MPI plugin's rule that numNodes >= 2 with
 * runLauncherAsNode needs both a "launcher" and a "node" replicated job.
 * Returns 0, HB_EINVAL (violations as above; also for a runtime that is
 * not a training runtime) or HB_ENOMEM.
 */
int hb_schema_check_trainjob_runtime(const struct cJSON *trainjob,
				     const struct cJSON *runtime,
				     struct hb_buf *violations,
				     struct hb_err *err);

#endif
