/*
 * mpijob.h - Kubeflow MPIJob (kubeflow.org/v2beta1), both directions.
 */
#ifndef HPCBRIDGE_MPIJOB_H
#define HPCBRIDGE_MPIJOB_H

#include <stdint.h>

#include "hpcbridge/config.h"
#include "hpcbridge/error.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"

struct cJSON;

/* Annotation and label keys hpcbridge writes on the objects it makes. */
#define HB_ANNOTATION_PREFIX "hpcbridge.io/"
#define HB_LABEL_QUEUE "kueue.x-k8s.io/queue-name"

/* Longest metadata.name: "<name>-worker-<N-1>" must stay <= 63. */
#define HB_DNS_LABEL_MAX 63

/*
 * The Kubernetes name for spec: the job name (else the source file's base
 * name without extension) lowercased, each run of characters outside
 * [a-z0-9] turned into one '-', trimmed of '-', and cut so that
 * "<name>[-<array_index>]-worker-<nodes-1>" fits in 63 characters.  A name
 * that comes out empty or starting with a digit is prefixed "job-".
 * array_index < 0: not an array element.  out: HB_DNS_LABEL_MAX + 1 bytes.
 */
int hb_k8s_name(const struct hb_jobspec *spec, int64_t array_index,
		uint32_t nodes, char out[HB_DNS_LABEL_MAX + 1]);

/*
 * Build the MPIJob for spec (array_index >= 0: that element of an array).
 * Records every field's fate in rep.  Caller frees *out with cJSON_Delete.
 */
int hb_mpijob_emit(const struct hb_jobspec *spec, const struct hb_config *cfg,
		   int64_t array_index, struct cJSON **out,
		   struct hb_report *rep, struct hb_err *err);

/* Read an MPIJob manifest (already parsed into doc) into spec.  Fields
 * hpcbridge wrote as annotations are recovered.  Errors name the field
 * path. */
int hb_mpijob_parse(const struct cJSON *doc, struct hb_jobspec *spec,
		    struct hb_err *err);

#endif
