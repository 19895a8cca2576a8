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
	/* Kueue: the queue whose pending workloads give the wait (the
	 * backend asks its visibility API); NULL: none */
	const char *kueue_queue;
	int kueue_cluster; /* a ClusterQueue, not a LocalQueue of ns */
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
	/* Kueue (opts.kueue_queue): what its visibility API said.
	 * queue_known 0: no queue, or the API failed (queue_note says how,
	 * and the policy's default wait stands). */
	int queue_known;
	uint32_t queue_ahead;	    /* pending workloads a new job waits
				     * behind (hb_kueue_pending) */
	uint32_t queue_admitted;    /* admitted workloads (0: unknown) */
	int64_t queue_remaining_s;  /* their mean remaining time (0:
				     * unknown) */
	char queue_note[256];
};

/*
 * Kueue's PendingWorkloadsSummary (hb_kube_pending_workloads()): items
 * counts every workload listed; ahead those a new job of priority would
 * queue behind (Kueue orders a queue by priority, then by creation: every
 * pending workload of equal or higher priority); burst those owned by an
 * MPIJob (ownerReferences[0].kind).  HB_EINVAL, err naming the field
 * ("items[2].positionInClusterQueue: not a number >= 0"), for a document
 * of another shape; *out is then zero.
 */
struct hb_kueue_pending {
	uint32_t items, ahead, burst;
};
int hb_kueue_pending(const struct cJSON *summary, int32_t priority,
		     struct hb_kueue_pending *out, struct hb_err *err);

/*
 * The expected wait, in seconds, of a new job behind ahead pending
 * workloads (docs/internals/kube_capacity.md):
 *
 *     0                                 when ahead is 0
 *     ceil(ahead / slots) * turn        otherwise
 *
 * slots = admitted (at least 1): the workloads admitted together, each of
 * which frees its quota for the next; turn = remaining_s, their mean
 * remaining time, when known (> 0), else turn_s (the policy's
 * kubernetes.default_wait).  Saturates at INT64_MAX.
 */
int64_t hb_kueue_wait(uint32_t ahead, uint32_t admitted, int64_t remaining_s,
		      int64_t turn_s);

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
