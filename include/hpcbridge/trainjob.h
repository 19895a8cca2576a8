/*
 * trainjob.h - Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1),
 * both directions.  The runtime is the MPI ClusterTrainingRuntime named in
 * the configuration.
 */
#ifndef HPCBRIDGE_TRAINJOB_H
#define HPCBRIDGE_TRAINJOB_H

#include <stdint.h>

#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/error.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"

struct cJSON;

int hb_trainjob_emit(const struct hb_jobspec *spec,
		     const struct hb_k8s_opts *cfg, int64_t array_index,
		     struct cJSON **out, struct hb_report *rep,
		     struct hb_err *err);

/* The same TrainJob written as one document of w (doc.h), ended with
 * hb_emit_done(); on error nothing is left in w's output. */
struct hb_emit;
int hb_trainjob_write(const struct hb_jobspec *spec,
		      const struct hb_k8s_opts *cfg, int64_t array_index,
		      struct hb_emit *w, struct hb_report *rep,
		      struct hb_err *err);

int hb_trainjob_parse(const struct cJSON *doc, struct hb_jobspec *spec,
		      struct hb_err *err);

#endif
