/*
 * test_kube_capacity.c - free capacity from a NodeList and a PodList:
 * allocatable minus requests in millicores and bytes, GPUs per type (by
 * the configuration's map and by label), nodes that do not count (not
 * Ready, cordoned, tainted), pods that do not (ended, on such nodes),
 * init containers, overhead and limits, pending jobs, and documents of
 * the wrong shape, each rejected with the field named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/kube_capacity.h"
#include "testutil.h"

#define GI (1024ull * 1024 * 1024)
#define MI (1024ull * 1024)

static const char nodes_doc[] =
	"{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":["
	/* 3.9 of 4 CPUs and 15 of 16 GiB allocatable */
	"{\"metadata\":{\"name\":\"n-a\"},"
	" \"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\"},"
	"  \"allocatable\":{\"cpu\":\"3900m\",\"memory\":\"15Gi\","
	"   \"pods\":\"110\"},"
	"  \"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
	"   {\"type\":\"Ready\",\"status\":\"True\"}]}},"
	"{\"metadata\":{\"name\":\"n-gpu\",\"labels\":"
	"  {\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\"}},"
	" \"status\":{\"allocatable\":{\"cpu\":\"32\",\"memory\":\"128Gi\","
	"   \"nvidia.com/gpu\":\"4\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	"{\"metadata\":{\"name\":\"n-h100\",\"labels\":"
	"  {\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}},"
	" \"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"64Gi\","
	"   \"nvidia.com/gpu\":\"8\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	"{\"metadata\":{\"name\":\"n-down\"},"
	" \"status\":{\"allocatable\":{\"cpu\":\"100\",\"memory\":\"1Ti\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}},"
	"{\"metadata\":{\"name\":\"n-unknown\"},"
	" \"status\":{\"allocatable\":{\"cpu\":\"100\",\"memory\":\"1Ti\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}},"
	"{\"metadata\":{\"name\":\"n-cordoned\"},\"spec\":{\"unschedulable\":"
	"  true},"
	" \"status\":{\"allocatable\":{\"cpu\":\"100\",\"memory\":\"1Ti\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	"{\"metadata\":{\"name\":\"n-tainted\"},\"spec\":{\"taints\":["
	"  {\"key\":\"node-role.kubernetes.io/control-plane\","
	"   \"effect\":\"NoSchedule\"}]},"
	" \"status\":{\"allocatable\":{\"cpu\":\"100\",\"memory\":\"1Ti\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	"{\"metadata\":{\"name\":\"n-prefer\"},\"spec\":{\"taints\":["
	"  {\"key\":\"spot\",\"effect\":\"PreferNoSchedule\"}]},"
	" \"status\":{\"capacity\":{\"cpu\":\"2\",\"memory\":\"1e9\"},"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
	"]}";

static const char pods_doc[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
	/* two containers on n-a: 750m and 1.5 GiB */
	"{\"metadata\":{\"name\":\"p1\",\"namespace\":\"team\"},"
	" \"spec\":{\"nodeName\":\"n-a\",\"containers\":["
	"  {\"name\":\"a\",\"resources\":{\"requests\":"
	"   {\"cpu\":\"500m\",\"memory\":\"1Gi\"}}},"
	"  {\"name\":\"b\",\"resources\":{\"requests\":"
	"   {\"cpu\":\"250m\",\"memory\":\"512Mi\"}}}]},"
	" \"status\":{\"phase\":\"Running\"}},"
	/* ended: not counted */
	"{\"metadata\":{\"name\":\"p2\",\"namespace\":\"team\"},"
	" \"spec\":{\"nodeName\":\"n-a\",\"containers\":["
	"  {\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]},"
	" \"status\":{\"phase\":\"Succeeded\"}},"
	/* an init container larger than the containers, and overhead */
	"{\"metadata\":{\"name\":\"p3\",\"namespace\":\"team\"},"
	" \"spec\":{\"nodeName\":\"n-gpu\","
	"  \"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":"
	"   {\"cpu\":\"8\",\"memory\":\"1Gi\"}}}],"
	"  \"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
	"   {\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"2\"}}}],"
	"  \"overhead\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}},"
	" \"status\":{\"phase\":\"Running\"}},"
	/* bound but not started; limits stand for requests */
	"{\"metadata\":{\"name\":\"p4\",\"namespace\":\"other\"},"
	" \"spec\":{\"nodeName\":\"n-gpu\",\"containers\":["
	"  {\"name\":\"a\",\"resources\":{\"limits\":"
	"   {\"cpu\":\"1\",\"memory\":\"2Gi\",\"nvidia.com/gpu\":\"1\"}}}]},"
	" \"status\":{\"phase\":\"Pending\"}},"
	/* on a node that does not count */
	"{\"metadata\":{\"name\":\"p5\",\"namespace\":\"team\"},"
	" \"spec\":{\"nodeName\":\"n-down\",\"containers\":["
	"  {\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"4\"}}}]},"
	" \"status\":{\"phase\":\"Running\"}},"
	/* two unbound pods of one MPIJob, one of another job, one
	 * elsewhere */
	"{\"metadata\":{\"name\":\"j1-worker-0\",\"namespace\":\"team\","
	"  \"labels\":{\"training.kubeflow.org/job-name\":\"j1\"}},"
	" \"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":"
	"  {\"requests\":{\"cpu\":\"64\"}}}]},"
	" \"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
	"  \"PodScheduled\",\"status\":\"False\",\"reason\":"
	"  \"Unschedulable\"}]}},"
	"{\"metadata\":{\"name\":\"j1-worker-1\",\"namespace\":\"team\","
	"  \"labels\":{\"training.kubeflow.org/job-name\":\"j1\"}},"
	" \"spec\":{\"containers\":[{\"name\":\"a\"}]},"
	" \"status\":{\"phase\":\"Pending\"}},"
	"{\"metadata\":{\"name\":\"web-7d9\",\"namespace\":\"team\","
	"  \"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web\","
	"   \"controller\":true}]},"
	" \"spec\":{\"containers\":[{\"name\":\"a\"}]},"
	" \"status\":{\"phase\":\"Pending\"}},"
	"{\"metadata\":{\"name\":\"x\",\"namespace\":\"elsewhere\"},"
	" \"spec\":{\"containers\":[{\"name\":\"a\"}]},"
	" \"status\":{\"phase\":\"Pending\"}},"
	"{\"metadata\":{\"name\":\"p10\",\"namespace\":\"team\"},"
	" \"spec\":{\"nodeName\":\"n-h100\",\"containers\":["
	"  {\"name\":\"a\",\"resources\":{\"requests\":"
	"   {\"nvidia.com/gpu\":\"8\"}}}]},"
	" \"status\":{\"phase\":\"Failed\"}}"
	"]}";

static cJSON *parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	if (!j)
		fail_msg("test document does not parse: %.80s", text);
	return j;
}

static const struct hb_kcap_gpus *gpus(const struct hb_kcap *c,
				       const char *type)
{
	for (uint32_t i = 0; i < c->ngpus; i++)
		if (!strcmp(c->gpus[i].type, type))
			return &c->gpus[i];
	fail_msg("no GPU type %s", type);
	return NULL;
}

static void test_cluster(void **state)
{
	struct hb_kv h100 = { "nvidia.com/gpu.product",
			      "NVIDIA-H100-80GB-HBM3" };
	struct hb_selector_map map = { "h100", &h100, 1 };
	struct hb_kcap_opts o = { .ns = "team",
				  .gpu_types = &map,
				  .ngpu_types = 1 };
	cJSON *n = parse(nodes_doc), *p = parse(pods_doc);
	struct hb_err err = { 0 };
	struct hb_kcap c;

	(void)state;
	assert_int_equal(hb_kube_capacity(n, p, &o, &c, &err), 0);
	/* n-a 3900m - 750m, n-gpu 32000m - (max(4000, 8000) + 100) - 1000,
	 * n-h100 16000m, n-prefer 2000m (capacity: no allocatable) */
	assert_int_equal(c.free_millicpus, 3150 + 22900 + 16000 + 2000);
	assert_int_equal(c.alloc_millicpus, 3900 + 32000 + 16000 + 2000);
	assert_true(c.free_mem_bytes ==
		    (15 * GI - 1536 * MI) + (128 * GI - 18 * GI - 128 * MI) +
			    64 * GI + 1000000000ull);
	assert_true(c.alloc_mem_bytes ==
		    15 * GI + 128 * GI + 64 * GI + 1000000000ull);
	assert_int_equal(c.ngpus, 2);
	/* the label's value, and the map's name for the H100 */
	assert_int_equal(gpus(&c, "NVIDIA-A100-SXM4-80GB")->free, 1);
	assert_int_equal(gpus(&c, "NVIDIA-A100-SXM4-80GB")->allocatable, 4);
	assert_int_equal(gpus(&c, "h100")->free, 8);
	assert_int_equal(c.nodes, 4);
	assert_int_equal(c.skipped, 4);
	assert_int_equal(c.pods, 3);
	/* j1 (two pods) and the ReplicaSet web, in team */
	assert_int_equal(c.pending, 2);

	/* Every namespace: the pod elsewhere too.  No map: the label. */
	o.ns = NULL;
	o.ngpu_types = 0;
	assert_int_equal(hb_kube_capacity(n, p, &o, &c, &err), 0);
	assert_int_equal(c.pending, 3);
	assert_int_equal(gpus(&c, "NVIDIA-H100-80GB-HBM3")->free, 8);
	cJSON_Delete(n);
	cJSON_Delete(p);
}

/* Bare arrays of items, null items, and another GPU resource. */
static void test_shapes(void **state)
{
	cJSON *n = parse(
		"[{\"metadata\":{\"name\":\"a\"},\"status\":{\"allocatable\":"
		"{\"cpu\":\"1e3\",\"memory\":\"2k\",\"amd.com/gpu\":\"2\","
		"\"nvidia.com/gpu\":\"9\"},\"conditions\":[{\"type\":\"Ready\","
		"\"status\":\"True\"}]}}]");
	cJSON *p = parse(
		"[{\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeName\":\"a\","
		"\"containers\":[{\"resources\":{\"requests\":{\"cpu\":"
		"\"0.5\",\"memory\":\"1k\",\"amd.com/gpu\":\"1\"}}}]}}]");
	cJSON *empty = parse("{\"kind\":\"PodList\",\"items\":null}");
	struct hb_kcap_opts o = { .gpu_resource = "amd.com/gpu" };
	struct hb_err err = { 0 };
	struct hb_kcap c;

	(void)state;
	assert_int_equal(hb_kube_capacity(n, p, &o, &c, &err), 0);
	assert_int_equal(c.free_millicpus, 1000000 - 500);
	assert_int_equal(c.free_mem_bytes, 1000);
	assert_int_equal(c.ngpus, 1);
	assert_string_equal(c.gpus[0].type, "unknown"); /* no label */
	assert_int_equal(c.gpus[0].free, 1);
	assert_int_equal(c.pods, 1);
	assert_int_equal(hb_kube_capacity(n, empty, &o, &c, &err), 0);
	assert_int_equal(c.gpus[0].free, 2);
	assert_int_equal(c.pods, 0);
	/* More requested than a node has: that node gives nothing. */
	cJSON_Delete(p);
	p = parse("[{\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeName\":"
		  "\"a\",\"containers\":[{\"resources\":{\"requests\":{"
		  "\"memory\":\"1Mi\"}}}]},\"status\":{\"phase\":"
		  "\"Running\"}}]");
	assert_int_equal(hb_kube_capacity(n, p, NULL, &c, &err), 0);
	assert_int_equal(c.free_mem_bytes, 0);
	assert_int_equal(c.free_millicpus, 1000000);
	assert_int_equal(c.gpus[0].free, 9); /* nvidia.com/gpu by default */
	cJSON_Delete(n);
	cJSON_Delete(p);
	cJSON_Delete(empty);
}

#define NODE(status)                                                           \
	"{\"items\":[{\"metadata\":{\"name\":\"a\"},\"status\":" status "}]}"
#define READY "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]"
#define POD(spec)                                                              \
	"{\"items\":[{\"metadata\":{\"name\":\"p\"},\"spec\":" spec "}]}"

static void test_malformed(void **state)
{
	static const struct {
		const char *nodes, *pods;
		int rc;
		const char *msg;
	} cases[] = {
		{ "42", "[]", HB_EINVAL,
		  "nodes: must be a List object or an array of items" },
		{ "[]", "\"pods\"", HB_EINVAL,
		  "pods: must be a List object or an array of items" },
		{ "{\"items\":{}}", "[]", HB_EINVAL,
		  "nodes.items: must be an array" },
		{ "{\"items\":[1]}", "[]", HB_EINVAL,
		  "nodes.items[0]: must be an object" },
		{ "{\"items\":[{\"metadata\":{}}]}", "[]", HB_EINVAL,
		  "nodes.items[0].metadata.name: must be a non-empty string" },
		{ "{\"items\":[{\"metadata\":[]}]}", "[]", HB_EINVAL,
		  "nodes.items[0].metadata: must be an object" },
		{ NODE("{\"allocatable\":{\"cpu\":\"12x\"}}"), "[]", HB_EINVAL,
		  "nodes.items[0].status.allocatable.cpu: '12x' is not a "
		  "quantity" },
		{ NODE("{\"allocatable\":{\"memory\":5}}"), "[]", HB_EINVAL,
		  "nodes.items[0].status.allocatable.memory: must be a string "
		  "(a quantity)" },
		{ NODE("{\"allocatable\":\"lots\"}"), "[]", HB_EINVAL,
		  "nodes.items[0].status.allocatable: must be an object" },
		{ NODE("{\"allocatable\":{\"memory\":\"100000000000Ei\"}}"),
		  "[]", HB_ERANGE,
		  "nodes.items[0].status.allocatable.memory: "
		  "'100000000000Ei' is too large" },
		{ NODE("{\"conditions\":\"yes\"}"), "[]", HB_EINVAL,
		  "nodes.items[0].status.conditions: must be an array" },
		{ NODE("{\"conditions\":[\"Ready\"]}"), "[]", HB_EINVAL,
		  "nodes.items[0].status.conditions[0]: must be an object" },
		{ "[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"unschedulable\":"
		  "\"true\"}}]",
		  "[]", HB_EINVAL,
		  "nodes[0].spec.unschedulable: must be a boolean" },
		{ "[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"taints\":[7]}}]",
		  "[]", HB_EINVAL,
		  "nodes[0].spec.taints[0]: must be an object" },
		{ NODE("{" READY "}"),
		  POD("{\"nodeName\":\"a\",\"containers\":[{\"resources\":{"
		      "\"requests\":{\"cpu\":\"lots\"}}}]}"),
		  HB_EINVAL,
		  "pods.items[0].spec.containers[0].resources.requests.cpu: "
		  "'lots' is not a quantity" },
		{ NODE("{" READY "}"),
		  POD("{\"nodeName\":\"a\",\"containers\":\"x\"}"), HB_EINVAL,
		  "pods.items[0].spec.containers: must be an array" },
		{ NODE("{" READY "}"),
		  POD("{\"nodeName\":\"a\",\"initContainers\":[{\"resources\":"
		      "{\"limits\":{\"nvidia.com/gpu\":true}}}]}"),
		  HB_EINVAL,
		  "pods.items[0].spec.initContainers[0].resources.limits."
		  "nvidia.com/gpu: must be a string (a quantity)" },
		{ NODE("{" READY "}"),
		  POD("{\"nodeName\":\"a\",\"overhead\":{\"cpu\":\"-1\"}}"),
		  HB_EINVAL,
		  "pods.items[0].spec.overhead.cpu: '-1' is not a quantity" },
		{ "[]", POD("{\"nodeName\":7}"), HB_EINVAL,
		  "pods.items[0].spec.nodeName: must be a string" },
		{ "[]",
		  "[{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":3}}]",
		  HB_EINVAL, "pods[0].status.phase: must be a string" },
		{ "[]", "[{\"spec\":[]}]", HB_EINVAL,
		  "pods[0].spec: must be an object" },
	};
	struct hb_kcap c;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *n = parse(cases[i].nodes), *p = parse(cases[i].pods);
		struct hb_err err = { 0 };
		int rc;

		memset(&c, 0x5a, sizeof(c));
		rc = hb_kube_capacity(n, p, NULL, &c, &err);
		if (rc != cases[i].rc || strcmp(err.msg, cases[i].msg))
			fail_msg("case %zu: rc %d '%s', want %d '%s'", i, rc,
				 err.msg, cases[i].rc, cases[i].msg);
		/* nothing half-written */
		assert_int_equal(c.free_millicpus, 0);
		assert_int_equal(c.ngpus, 0);
		cJSON_Delete(n);
		cJSON_Delete(p);
	}
}

/* More GPU types than the result holds is an error, not a truncation. */
static void test_too_many_types(void **state)
{
	cJSON *items = cJSON_CreateArray(), *p = parse("[]");
	struct hb_err err = { 0 };
	struct hb_kcap c;

	(void)state;
	for (int i = 0; i <= HB_KCAP_MAX_GPU_TYPES; i++) {
		char doc[400];

		snprintf(doc, sizeof(doc),
			 "{\"metadata\":{\"name\":\"n%02d\",\"labels\":{"
			 "\"nvidia.com/gpu.product\":\"T%d\"}},\"status\":{"
			 "\"allocatable\":{\"nvidia.com/gpu\":\"1\"}," READY
			 "}}",
			 i, i);
		cJSON_AddItemToArray(items, parse(doc));
	}
	assert_int_equal(hb_kube_capacity(items, p, NULL, &c, &err),
			 HB_ETOOBIG);
	assert_string_equal(err.msg, "nodes[32]: more than 32 GPU types");
	cJSON_Delete(items);
	cJSON_Delete(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_too_many_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
