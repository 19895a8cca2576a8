/*
 * fuzz_kube_capacity.c - hb_kube_capacity over untrusted NodeLists and
 * PodLists: never a crash or a leak; an error always says where and
 * leaves the result zeroed; a result never has more free than
 * allocatable, nor more GPU types than it holds.  The input is the nodes
 * document, a NUL byte, then the pods document (no NUL: no pods).
 *
 * The first document is also read as Kueue's PendingWorkloadsSummary
 * (hb_kueue_pending): an error says why and leaves the counts zero;
 * otherwise no count exceeds the items, and the wait behind them
 * (hb_kueue_wait) is never negative, and zero with nothing ahead.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/kube_capacity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void kueue(const cJSON *summary, int32_t priority, int64_t remaining)
{
	struct hb_kueue_pending kp;
	struct hb_err err = { 0 };
	int64_t wait;

	if (hb_kueue_pending(summary, priority, &kp, &err)) {
		if (!err.msg[0] || kp.items || kp.ahead || kp.burst)
			abort();
		return;
	}
	if (kp.ahead > kp.items || kp.burst > kp.items)
		abort();
	wait = hb_kueue_wait(kp.ahead, kp.burst, remaining, 60);
	if (wait < 0 || (!kp.ahead && wait))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct hb_kv a100 = { "nvidia.com/gpu.product",
					   "NVIDIA-A100-SXM4-80GB" };
	static const struct hb_selector_map map = { "a100",
						    (struct hb_kv *)&a100, 1 };
	struct hb_kcap_opts o = { .ns = "default",
				  .gpu_types = &map,
				  .ngpu_types = 1 };
	const char *text = (const char *)data;
	const char *nul = memchr(data, 0, size);
	size_t nlen = nul ? (size_t)(nul - text) : size;
	cJSON *nodes = cJSON_ParseWithLength(text, nlen);
	cJSON *pods = nul ? cJSON_ParseWithLength(nul + 1, size - nlen - 1)
			  : cJSON_CreateArray();
	struct hb_err err = { 0 };
	struct hb_kcap c;
	int rc;

	if (!nodes || !pods)
		goto out;
	kueue(nodes, (int32_t)(size * 37) - 500, (int64_t)size);
	rc = hb_kube_capacity(nodes, pods, &o, &c, &err);
	if (rc) {
		if (!err.msg[0] || c.free_millicpus || c.free_mem_bytes ||
		    c.ngpus || c.nodes || c.pending)
			abort();
		goto out;
	}
	if (c.free_millicpus > c.alloc_millicpus ||
	    c.free_mem_bytes > c.alloc_mem_bytes ||
	    c.ngpus > HB_KCAP_MAX_GPU_TYPES)
		abort();
	for (uint32_t i = 0; i < c.ngpus; i++)
		if (c.gpus[i].free > c.gpus[i].allocatable ||
		    !memchr(c.gpus[i].type, 0, sizeof(c.gpus[i].type)))
			abort();
out:
	cJSON_Delete(nodes);
	cJSON_Delete(pods);
	return 0;
}
