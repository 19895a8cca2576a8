/*
 * kube_capacity.h - a Kubernetes cluster's free capacity, from its nodes
 * and pods, as placement's snapshot needs it.  Pure: documents in, numbers
 * out, no I/O.  See docs/internals/kube_capacity.md.
 *
 * Free capacity is, over the nodes that are Ready, not cordoned
 * (spec.unschedulable) and carry no NoSchedule or NoExecute taint:
 *
 *     Σ node  (status.allocatable − Σ requests of the pods bound to it
 *              whose phase is neither Succeeded nor Failed)
 *
 * for CPUs, memory and GPUs, each node clamped at zero.  A pod's requests
 * are what kube-scheduler counts: the sum over its containers (a limit
 * stands for a missing request, as the API server defaults it), or its
 * largest init container when that is more, plus spec.overhead.  A
 * node's GPUs are of one type: the first entry of the GPU type → node
 * labels map (kubernetes.node_selectors.gpu_types) whose labels the node
 * carries, else the value of its GPU product label, else "unknown".
 *
 * Pending work is counted as the jobs that have a Pending pod not yet
 * bound to a node (no spec.nodeName) in the namespace asked about: pods
 * of one MPIJob (the training.kubeflow.org/job-name label), else of one
 * controller (ownerReferences), count once.
 */
#ifndef HPCBRIDGE_KUBE_CAPACITY_H
#define HPCBRIDGE_KUBE_CAPACITY_H

#include <stdint.h>

#include "hpcbridge/config.h"
#include "hpcbridge/error.h"

struct cJSON;

/* The most GPU types one cluster may report. */
#define HB_KCAP_MAX_GPU_TYPES 32
/* The longest GPU type name kept (longer ones are cut). */
#define HB_KCAP_TYPE_MAX 64

struct hb_kcap_opts {
	const char *ns;		  /* pending counts here; NULL: everywhere */
	const char *gpu_resource; /* NULL: "nvidia.com/gpu" */
	const char *gpu_label;	  /* NULL: "nvidia.com/gpu.product" */
	const struct hb_selector_map *gpu_types; /* may be NULL */
	uint32_t ngpu_types;
};

struct hb_kcap_gpus {
	char type[HB_KCAP_TYPE_MAX]; /* as the map or the label names it */
	uint64_t free;
	uint64_t allocatable;
};

struct hb_kcap {
	uint64_t free_millicpus;
	uint64_t free_mem_bytes;
	uint64_t alloc_millicpus; /* over the nodes counted */
	uint64_t alloc_mem_bytes;
	struct hb_kcap_gpus gpus[HB_KCAP_MAX_GPU_TYPES];
	uint32_t ngpus;
	uint32_t nodes;	  /* nodes counted */
	uint32_t skipped; /* nodes not Ready, cordoned or tainted */
	uint32_t pods;	  /* pods whose requests were taken off */
	uint32_t pending; /* jobs with an unbound Pending pod in ns */
};

/*
 * Compute *out from nodes and pods: each a List document (an object with
 * an "items" array, as GET /api/v1/nodes gives) or the array of items
 * itself.  HB_EINVAL, with err naming the field ("pods.items[3].spec.
 * containers[0].resources.requests.cpu: '2x' is not a quantity"), for a
 * document of the wrong shape; HB_ERANGE for a quantity too large;
 * HB_ETOOBIG past HB_KCAP_MAX_GPU_TYPES types; HB_ENOMEM.  *out is
 * zeroed first, and only complete on success.
 */
int hb_kube_capacity(const struct cJSON *nodes, const struct cJSON *pods,
		     const struct hb_kcap_opts *opts, struct hb_kcap *out,
		     struct hb_err *err);

#endif
