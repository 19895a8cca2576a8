/*
 * nodes.c - core/v1 Nodes defined at start-up (--node), and the
 * scheduler's resource fit that binds pods to them.
 *
 * With no node defined the emulator behaves as before: every pod runs on
 * "kubemu-node", whatever it asks for.  With nodes, a pod is bound to the
 * first Ready, schedulable node (in name order) with room for its
 * requests, as kube-scheduler's NodeResourcesFit filter decides; a pod
 * that fits nowhere stays Pending, PodScheduled False, reason
 * Unschedulable, and the kubelet asks again until room frees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/units.h"
#include "kubemu.h"

#define GPU	  "nvidia.com/gpu"
#define GPU_LABEL "nvidia.com/gpu.product"
#define MAX_KEYS  16 /* resources one pod may ask for */
#define SPEC_MAX  4096

/* ---- nodes ---------------------------------------------------------- */

static int spec_bool(const char *v, int *out)
{
	if (!strcmp(v, "true"))
		*out = 1;
	else if (!strcmp(v, "false"))
		*out = 0;
	else
		return HB_EINVAL;
	return 0;
}

/* The Ready condition, True or False, as the node lifecycle sets it. */
static cJSON *ready_condition(int ready, const char *ts)
{
	cJSON *c = cJSON_CreateObject();

	if (!c || km_set_str(c, "type", "Ready") ||
	    km_set_str(c, "status", ready ? "True" : "False") ||
	    km_set_str(c, "lastHeartbeatTime", ts) ||
	    km_set_str(c, "lastTransitionTime", ts) ||
	    km_set_str(c, "reason",
		       ready ? "KubeletReady" : "KubeletNotReady") ||
	    km_set_str(c, "message",
		       ready ? "kubelet is posting ready status"
			     : "container runtime network not ready")) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

static cJSON *node_info(const char *name)
{
	static const char *const fields[][2] = {
		{ "architecture", "amd64" },
		{ "bootID", "00000000-0000-0000-0000-000000000000" },
		{ "containerRuntimeVersion", "kubemu://1.0" },
		{ "kernelVersion", "6.1.0" },
		{ "kubeProxyVersion", "v1.29.0" },
		{ "kubeletVersion", "v1.29.0-hb-kubemu" },
		{ "machineID", "" },
		{ "operatingSystem", "linux" },
		{ "osImage", "hb-kubemu" },
		{ "systemUUID", "" },
	};
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; o && i < sizeof(fields) / sizeof(fields[0]); i++)
		if (km_set_str(o, fields[i][0],
			       fields[i][1][0] ? fields[i][1] : name)) {
			cJSON_Delete(o);
			return NULL;
		}
	return o;
}

/* The skeleton of a node: metadata, spec, an empty capacity. */
static cJSON *node_new(const char *name)
{
	cJSON *n = cJSON_CreateObject(), *meta, *labels, *st, *cap;

	if (!n || km_set_str(n, "apiVersion", "v1") ||
	    km_set_str(n, "kind", "Node") ||
	    !(meta = km_obj_at(n, "metadata")) ||
	    km_set_str(meta, "name", name) ||
	    !(labels = km_obj_at(meta, "labels")) ||
	    km_set_str(labels, "kubernetes.io/hostname", name) ||
	    km_set_str(labels, "kubernetes.io/os", "linux") ||
	    km_set_str(labels, "kubernetes.io/arch", "amd64") ||
	    !km_obj_at(n, "spec") || !(st = km_obj_at(n, "status")) ||
	    !(cap = km_obj_at(st, "capacity")) || km_set_str(cap, "cpu", "4") ||
	    km_set_str(cap, "memory", "16Gi") ||
	    km_set_str(cap, "pods", "110")) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

static int node_finish(cJSON *n, const char *name, int ready)
{
	cJSON *st = km_obj_at(n, "status"), *conds, *addrs, *a, *h;
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	if (!st || km_set(st, "allocatable",
			  cJSON_Duplicate(km_get(st, "capacity"), 1)))
		return HB_ENOMEM;
	conds = cJSON_CreateArray();
	addrs = cJSON_CreateArray();
	a = cJSON_CreateObject();
	h = cJSON_CreateObject();
	if (!conds || !addrs || !a || !h ||
	    !cJSON_AddItemToArray(conds, ready_condition(ready, ts)) ||
	    km_set_str(a, "type", "InternalIP") ||
	    km_set_str(a, "address", "127.0.0.1") ||
	    km_set_str(h, "type", "Hostname") ||
	    km_set_str(h, "address", name)) {
		cJSON_Delete(conds);
		cJSON_Delete(addrs);
		cJSON_Delete(a);
		cJSON_Delete(h);
		return HB_ENOMEM;
	}
	cJSON_AddItemToArray(addrs, a);
	cJSON_AddItemToArray(addrs, h);
	if (km_set(st, "conditions", conds) || km_set(st, "addresses", addrs) ||
	    km_set(st, "nodeInfo", node_info(name)) ||
	    km_set_str(st, "phase", "Running"))
		return HB_ENOMEM;
	return 0;
}

/* One KEY=VALUE of a spec into the node. */
static int node_set(cJSON *n, const char *key, const char *val, int *ready,
		    struct hb_err *err)
{
	cJSON *cap = km_get(km_get(n, "status"), "capacity");
	cJSON *labels = km_get(km_get(n, "metadata"), "labels");
	uint64_t v;
	int b;

	if (!strcmp(key, "cpu") || !strcmp(key, "pods") ||
	    !strcmp(key, "gpu") || !strcmp(key, GPU)) {
		if (hb_parse_k8s_cpu(val, &v))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "--node: %s=%s: not a quantity", key,
					  val);
		return km_set_str(cap, !strcmp(key, "gpu") ? GPU : key, val);
	}
	if (!strcmp(key, "memory")) {
		if (hb_parse_k8s_units(val, &v))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "--node: memory=%s: not a quantity",
					  val);
		return km_set_str(cap, key, val);
	}
	/* Labels first: a label's key holds '/' too. */
	if (!strcmp(key, "gpu-product"))
		return km_set_str(labels, GPU_LABEL, val);
	if (!strncmp(key, "label:", 6) && key[6])
		return km_set_str(labels, key + 6, val);
	/* Any other extended resource (amd.com/gpu, a device plugin's
	 * rdma/hca_shared_devices_a): a count. */
	if (strchr(key, '/') && key[0] != '/') {
		if (hb_parse_k8s_cpu(val, &v) || v % 1000)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "--node: %s=%s: not a whole number",
					  key, val);
		return km_set_str(cap, key, val);
	}
	if (!strcmp(key, "ready")) {
		if (spec_bool(val, &b))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "--node: ready=%s: true or false",
					  val);
		*ready = b;
		return 0;
	}
	if (!strcmp(key, "unschedulable")) {
		if (spec_bool(val, &b))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "--node: unschedulable=%s: true or "
					  "false",
					  val);
		return km_set(km_get(n, "spec"), "unschedulable",
			      cJSON_CreateBool(b));
	}
	return hb_err_set(err, HB_EINVAL, NULL, 0, "--node: unknown key '%s'",
			  key);
}

int km_node_from_spec(const char *spec, cJSON **out, struct hb_err *err)
{
	char buf[SPEC_MAX], *p, *comma, *name;
	cJSON *n = NULL;
	int ready = 1, rc;

	*out = NULL;
	if (strlen(spec) >= sizeof(buf))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "--node: the spec is too long");
	memcpy(buf, spec, strlen(spec) + 1);
	name = buf;
	comma = strchr(buf, ',');
	if (comma)
		*comma = '\0';
	if (!*name || strchr(name, '=') || strchr(name, '/'))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "--node '%s': NAME[,KEY=VALUE]...", spec);
	if (!(n = node_new(name)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (p = comma ? comma + 1 : NULL; p; p = comma ? comma + 1 : NULL) {
		char *eq;

		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		eq = strchr(p, '=');
		if (!eq || eq == p) {
			rc = hb_err_set(err, HB_EINVAL, NULL, 0,
					"--node %s: '%s' is not KEY=VALUE",
					name, p);
			goto fail;
		}
		*eq = '\0';
		if ((rc = node_set(n, p, eq + 1, &ready, err))) {
			if (rc == HB_ENOMEM)
				hb_err_set(err, rc, NULL, 0, "out of memory");
			goto fail;
		}
	}
	if ((rc = node_finish(n, name, ready))) {
		hb_err_set(err, rc, NULL, 0, "out of memory");
		goto fail;
	}
	*out = n;
	return 0;
fail:
	cJSON_Delete(n);
	return rc;
}

int km_nodes_create(struct km_ctx *ctx, struct hb_err *err)
{
	for (size_t i = 0; i < ctx->o->nnodes; i++) {
		cJSON *n;
		int rc = km_node_from_spec(ctx->o->nodes[i], &n, err);

		if (rc)
			return rc;
		rc = km_internal_create(ctx, KM_NODE, n, "kubelet", NULL);
		if (rc == HB_EEXIST)
			return hb_err_set(err, rc, NULL, 0,
					  "--node: node \"%s\" given twice",
					  km_meta_str(n, "name"));
		if (rc)
			return hb_err_set(err, rc, NULL, 0, "nodes: %s",
					  hb_strerror(rc));
	}
	return 0;
}

/* ---- the scheduler's fit -------------------------------------------- */

/* A quantity of resource key in the unit the fit compares (km_qty).
 * 0 when absent or unreadable (the API server would have refused it). */
static uint64_t qty(const cJSON *list, const char *key)
{
	return km_qty(key, km_str(list, key));
}

/* What one container asks of key: its request, else its limit (the API
 * server defaults requests to limits). */
static uint64_t container_req(const cJSON *c, const char *key)
{
	const cJSON *res = km_get(c, "resources");
	const cJSON *req = km_get(res, "requests");

	return km_get(req, key) ? qty(req, key)
				: qty(km_get(res, "limits"), key);
}

/* A pod's effective request of key: the sum over its containers, or the
 * largest init container if more, plus overhead; one pod for "pods". */
static uint64_t pod_req(const cJSON *pod, const char *key)
{
	const cJSON *spec = km_get(pod, "spec"), *c;
	uint64_t sum = 0, init = 0;

	if (!strcmp(key, "pods"))
		return 1000;
	cJSON_ArrayForEach (c, km_get(spec, "containers"))
		sum += container_req(c, key);
	cJSON_ArrayForEach (c, km_get(spec, "initContainers")) {
		uint64_t v = container_req(c, key);

		init = v > init ? v : init;
	}
	return (sum > init ? sum : init) + qty(km_get(spec, "overhead"), key);
}

/* The resources a pod names (cpu, memory and pods always). */
static size_t pod_keys(const cJSON *pod, const char **keys)
{
	static const char *const lists[] = { "containers", "initContainers" };
	const cJSON *spec = km_get(pod, "spec"), *c, *r;
	size_t n = 0;

	keys[n++] = "cpu";
	keys[n++] = "memory";
	keys[n++] = "pods";
	for (size_t l = 0; l < 2; l++)
		cJSON_ArrayForEach (c, km_get(spec, lists[l])) {
			const cJSON *res = km_get(c, "resources");

			for (int rl = 0; rl < 2; rl++)
				cJSON_ArrayForEach (
					r, km_get(res, rl ? "limits"
							  : "requests")) {
					size_t i = 0;

					while (i < n &&
					       strcmp(keys[i], r->string))
						i++;
					if (i == n && n < MAX_KEYS)
						keys[n++] = r->string;
				}
		}
	return n;
}

static int node_ready(const cJSON *node)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, km_get(km_get(node, "status"), "conditions")) {
		const char *t = km_str(c, "type"), *s = km_str(c, "status");

		if (t && !strcmp(t, "Ready"))
			return s && !strcmp(s, "True");
	}
	return 0;
}

static int pod_active_on(const cJSON *pod, const char *node)
{
	const char *n = km_str(km_get(pod, "spec"), "nodeName");
	const char *ph = km_str(km_get(pod, "status"), "phase");

	return n && !strcmp(n, node) &&
	       !(ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed")));
}

/* Why nodes were turned down, counted as the scheduler's message does. */
struct reasons {
	size_t not_ready, unschedulable;
	size_t short_of[MAX_KEYS];
};

/* Whether pod fits on node beside pods[0..npods); else counts why. */
static int fits(const cJSON *node, const cJSON *pod, struct km_obj **pods,
		size_t npods, const char **keys, size_t nkeys,
		struct reasons *why)
{
	const char *name = km_meta_str(node, "name");
	const cJSON *alloc = km_get(km_get(node, "status"), "allocatable");
	int ok = 1;

	if (!node_ready(node)) {
		why->not_ready++;
		return 0;
	}
	if (cJSON_IsTrue(km_get(km_get(node, "spec"), "unschedulable"))) {
		why->unschedulable++;
		return 0;
	}
	for (size_t k = 0; k < nkeys; k++) {
		uint64_t need = pod_req(pod, keys[k]), used = 0;

		if (!need)
			continue;
		for (size_t i = 0; i < npods; i++)
			if (pod_active_on(pods[i]->tree, name))
				used += pod_req(pods[i]->tree, keys[k]);
		if (used + need > qty(alloc, keys[k])) {
			why->short_of[k]++;
			ok = 0;
		}
	}
	return ok;
}

static void explain(const struct reasons *why, size_t nnodes, const char **keys,
		    size_t nkeys, char *buf, size_t cap)
{
	struct hb_buf b;
	const char *sep = "";

	hb_buf_init(&b, 0);
	hb_buf_printf(&b, "0/%zu nodes are available: ", nnodes);
	for (size_t k = 0; k < nkeys; k++)
		if (why->short_of[k]) {
			hb_buf_printf(&b, "%s%zu Insufficient %s", sep,
				      why->short_of[k], keys[k]);
			sep = ", ";
		}
	if (why->not_ready) {
		hb_buf_printf(&b,
			      "%s%zu node(s) had untolerated taint "
			      "{node.kubernetes.io/not-ready: }",
			      sep, why->not_ready);
		sep = ", ";
	}
	if (why->unschedulable)
		hb_buf_printf(&b, "%s%zu node(s) were unschedulable", sep,
			      why->unschedulable);
	hb_buf_puts(&b, ".");
	snprintf(buf, cap, "%s", b.data ? b.data : "0 nodes are available.");
	hb_buf_free(&b);
}

int km_sched_pick(struct km_ctx *ctx, const cJSON *pod, char *node, size_t cap,
		  char *why, size_t wcap)
{
	struct km_obj **nodes = NULL, **pods = NULL;
	size_t nn = 0, np = 0, rem, nkeys;
	const char *keys[MAX_KEYS];
	struct reasons r = { 0 };
	uint64_t rv;
	int rc = HB_EAGAIN;

	nkeys = pod_keys(pod, keys);
	if (km_store_list(ctx->store, KM_NODE, NULL, NULL, NULL, NULL, NULL, 0,
			  &nodes, &nn, &rem, &rv) ||
	    km_store_list(ctx->store, KM_POD, NULL, NULL, NULL, NULL, NULL, 0,
			  &pods, &np, &rem, &rv)) {
		snprintf(why, wcap, "the scheduler is out of memory");
		goto out;
	}
	for (size_t i = 0; i < nn && rc; i++)
		if (fits(nodes[i]->tree, pod, pods, np, keys, nkeys, &r)) {
			snprintf(node, cap, "%s", nodes[i]->name);
			rc = 0;
		}
	if (rc)
		explain(&r, nn, keys, nkeys, why, wcap);
out:
	for (size_t i = 0; i < nn; i++)
		km_obj_unref(nodes[i]);
	for (size_t i = 0; i < np; i++)
		km_obj_unref(pods[i]);
	free(nodes);
	free(pods);
	return rc;
}
