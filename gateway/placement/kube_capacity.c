/*
 * kube_capacity.c - free capacity of a Kubernetes cluster from its
 * NodeList and PodList.  See kube_capacity.h and
 * docs/internals/kube_capacity.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/units.h"

#define GPU_RESOURCE "nvidia.com/gpu"
#define GPU_LABEL    "nvidia.com/gpu.product"
#define JOB_LABEL    "training.kubeflow.org/job-name"
#define UNKNOWN_TYPE "unknown"
#define WHERE_MAX    160

/* What the fit counts, per node or per pod. */
struct res {
	uint64_t cpu; /* millicores */
	uint64_t mem; /* bytes */
	uint64_t gpu;
};

struct node {
	const char *name;
	struct res alloc, used;
	int type; /* index in out->gpus, -1 without GPUs */
};

struct ctx {
	const struct hb_kcap_opts *o;
	const char *gpu_resource, *gpu_label;
	struct hb_kcap *out;
	struct hb_err *err;
	struct node *nodes;
	size_t nnodes;
	/* hashes of the pending jobs' keys: only counted, never shown */
	uint64_t *pending;
	size_t npending, cap_pending;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void res_add(struct res *a, const struct res *b)
{
	a->cpu = sat_add(a->cpu, b->cpu);
	a->mem = sat_add(a->mem, b->mem);
	a->gpu = sat_add(a->gpu, b->gpu);
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* where.sub into buf (cut if too long: it only names a place). */
static const char *join(char *buf, size_t cap, const char *where,
			const char *sub)
{
	if (snprintf(buf, cap, "%s.%s", where, sub) >= (int)cap)
		buf[cap - 1] = '\0';
	return buf;
}

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Member key of o, which must be of the type check accepts when present;
 * *v gets it (NULL when absent). */
static int typed(struct ctx *c, const cJSON *o, const char *key,
		 cJSON_bool (*check)(const cJSON *), const char *type,
		 const char *where, const cJSON **v)
{
	*v = member(o, key);
	if (*v && !check(*v))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s.%s: must be %s", where, key, type);
	return 0;
}

/* The items of a List document, or the array itself. */
static int items_of(struct ctx *c, const cJSON *doc, const char *name,
		    const cJSON **items, const char **base)
{
	if (cJSON_IsArray(doc)) {
		*items = doc;
		*base = name;
		return 0;
	}
	*base = !strcmp(name, "nodes") ? "nodes.items" : "pods.items";
	if (!cJSON_IsObject(doc))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s: must be a List object or an array of "
				  "items",
				  name);
	*items = member(doc, "items");
	if (cJSON_IsNull(*items) || !*items) {
		*items = NULL; /* an empty list may say null */
		return 0;
	}
	if (!cJSON_IsArray(*items))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s: must be an array", *base);
	return 0;
}

/* A quantity: millicores when milli, else whole units (bytes, GPUs). */
static int quantity(struct ctx *c, const cJSON *list, const char *key,
		    int milli, const char *where, uint64_t *out)
{
	const cJSON *v = member(list, key);
	int rc;

	*out = 0;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s.%s: must be a string (a quantity)", where,
				  key);
	rc = milli ? hb_parse_k8s_cpu(v->valuestring, out)
		   : hb_parse_k8s_units(v->valuestring, out);
	if (rc == HB_ERANGE)
		return hb_err_set(c->err, rc, NULL, 0,
				  "%s.%s: '%.40s' is too large", where, key,
				  v->valuestring);
	if (rc)
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s.%s: '%.40s' is not a quantity", where,
				  key, v->valuestring);
	return 0;
}

/* cpu, memory and GPUs of a resource list (an object, or absent). */
static int res_list(struct ctx *c, const cJSON *parent, const char *key,
		    const char *where, struct res *r, int *given)
{
	char w[WHERE_MAX + 32];
	const cJSON *list;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = typed(c, parent, key, cJSON_IsObject, "an object", where,
			&list)))
		return rc;
	if (given)
		*given = list != NULL;
	if (!list)
		return 0;
	join(w, sizeof(w), where, key);
	if ((rc = quantity(c, list, "cpu", 1, w, &r->cpu)) ||
	    (rc = quantity(c, list, "memory", 0, w, &r->mem)) ||
	    (rc = quantity(c, list, c->gpu_resource, 0, w, &r->gpu)))
		return rc;
	return 0;
}

/* ---- nodes ---------------------------------------------------------- */

static int node_ready(struct ctx *c, const cJSON *st, const char *where,
		      int *ready)
{
	const cJSON *conds, *cd;
	char w[WHERE_MAX];
	int i = 0, rc;

	*ready = 0;
	join(w, sizeof(w), where, "status");
	if ((rc = typed(c, st, "conditions", cJSON_IsArray, "an array", w,
			&conds)))
		return rc;
	cJSON_ArrayForEach (cd, conds) {
		const char *t, *s;

		if (!cJSON_IsObject(cd))
			return hb_err_set(c->err, HB_EINVAL, NULL, 0,
					  "%s.conditions[%d]: must be an "
					  "object",
					  w, i);
		t = hb_doc_str(cd, "type");
		s = hb_doc_str(cd, "status");
		if (t && !strcmp(t, "Ready"))
			*ready = s && !strcmp(s, "True");
		i++;
	}
	return 0;
}

/* Whether the node turns away pods without tolerations. */
static int node_closed(struct ctx *c, const cJSON *spec, const char *where,
		       int *closed)
{
	const cJSON *v, *t;
	char w[WHERE_MAX];
	int i = 0, rc;

	join(w, sizeof(w), where, "spec");
	if ((rc = typed(c, spec, "unschedulable", cJSON_IsBool, "a boolean", w,
			&v)))
		return rc;
	*closed = cJSON_IsTrue(v);
	if ((rc = typed(c, spec, "taints", cJSON_IsArray, "an array", w, &v)))
		return rc;
	cJSON_ArrayForEach (t, v) {
		const char *e = hb_doc_str(t, "effect");

		if (!cJSON_IsObject(t))
			return hb_err_set(c->err, HB_EINVAL, NULL, 0,
					  "%s.taints[%d]: must be an object", w,
					  i);
		if (e && (!strcmp(e, "NoSchedule") || !strcmp(e, "NoExecute")))
			*closed = 1;
		i++;
	}
	return 0;
}

/* Whether the node's labels hold every label of a map entry. */
static int labels_match(const cJSON *labels, const struct hb_selector_map *m)
{
	if (!m->nlabels)
		return 0;
	for (uint32_t i = 0; i < m->nlabels; i++) {
		const char *v = hb_doc_str(labels, m->labels[i].key);

		if (!v || strcmp(v, m->labels[i].value))
			return 0;
	}
	return 1;
}

/* The slot of the node's GPU type in out->gpus. */
static int gpu_slot(struct ctx *c, const cJSON *labels, const char *where,
		    int *slot)
{
	const char *type = NULL;
	struct hb_kcap *out = c->out;
	uint32_t i;

	for (i = 0; i < c->o->ngpu_types && !type; i++)
		if (labels_match(labels, &c->o->gpu_types[i]))
			type = c->o->gpu_types[i].key;
	if (!type)
		type = hb_doc_str(labels, c->gpu_label);
	if (!type || !*type)
		type = UNKNOWN_TYPE;
	for (i = 0; i < out->ngpus; i++)
		if (!strncmp(out->gpus[i].type, type, HB_KCAP_TYPE_MAX - 1))
			break;
	if (i == out->ngpus) {
		if (i == HB_KCAP_MAX_GPU_TYPES)
			return hb_err_set(c->err, HB_ETOOBIG, NULL, 0,
					  "%s: more than %d GPU types", where,
					  HB_KCAP_MAX_GPU_TYPES);
		snprintf(out->gpus[i].type, sizeof(out->gpus[i].type), "%s",
			 type);
		out->ngpus++;
	}
	*slot = (int)i;
	return 0;
}

static int node_cmp(const void *a, const void *b)
{
	return strcmp(((const struct node *)a)->name,
		      ((const struct node *)b)->name);
}

static int read_node(struct ctx *c, const cJSON *n, const char *where)
{
	const cJSON *meta, *spec, *st, *labels;
	const char *name;
	struct node *nd;
	struct res cap;
	int ready, closed, given, rc;
	char w[WHERE_MAX];

	if (!cJSON_IsObject(n))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s: must be an object", where);
	if ((rc = typed(c, n, "metadata", cJSON_IsObject, "an object", where,
			&meta)) ||
	    (rc = typed(c, n, "spec", cJSON_IsObject, "an object", where,
			&spec)) ||
	    (rc = typed(c, n, "status", cJSON_IsObject, "an object", where,
			&st)))
		return rc;
	name = hb_doc_str(meta, "name");
	if (!name || !*name)
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s.metadata.name: must be a non-empty "
				  "string",
				  where);
	join(w, sizeof(w), where, "metadata");
	if ((rc = typed(c, meta, "labels", cJSON_IsObject, "an object", w,
			&labels)))
		return rc;
	if ((rc = node_ready(c, st, where, &ready)) ||
	    (rc = node_closed(c, spec, where, &closed)))
		return rc;
	join(w, sizeof(w), where, "status");
	nd = &c->nodes[c->nnodes];
	if ((rc = res_list(c, st, "capacity", w, &cap, NULL)) ||
	    (rc = res_list(c, st, "allocatable", w, &nd->alloc, &given)))
		return rc;
	if (!given)
		nd->alloc = cap; /* an old kubelet reports capacity only */
	if (!ready || closed) {
		c->out->skipped++;
		return 0;
	}
	nd->name = name;
	nd->type = -1;
	if (nd->alloc.gpu && (rc = gpu_slot(c, labels, where, &nd->type)))
		return rc;
	c->nnodes++;
	return 0;
}

/* ---- pods ----------------------------------------------------------- */

/* The requests one container counts for: requests, else limits. */
static int container_res(struct ctx *c, const cJSON *ct, const char *where,
			 struct res *r)
{
	const cJSON *res, *rq;
	struct res req, lim;
	char w[WHERE_MAX + 16];
	int rc;

	if (!cJSON_IsObject(ct))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s: must be an object", where);
	if ((rc = typed(c, ct, "resources", cJSON_IsObject, "an object", where,
			&res)))
		return rc;
	join(w, sizeof(w), where, "resources");
	if ((rc = res_list(c, res, "requests", w, &req, NULL)) ||
	    (rc = res_list(c, res, "limits", w, &lim, NULL)))
		return rc;
	rq = member(res, "requests");
	r->cpu = member(rq, "cpu") ? req.cpu : lim.cpu;
	r->mem = member(rq, "memory") ? req.mem : lim.mem;
	r->gpu = member(rq, c->gpu_resource) ? req.gpu : lim.gpu;
	return 0;
}

/* What kube-scheduler counts for a pod. */
static int pod_res(struct ctx *c, const cJSON *spec, const char *where,
		   struct res *r)
{
	static const char *const lists[] = { "containers", "initContainers" };
	struct res sum = { 0 }, init = { 0 }, over;
	char w[WHERE_MAX + 40];
	int rc;

	for (int l = 0; l < 2; l++) {
		const cJSON *arr, *ct;
		int i = 0;

		join(w, sizeof(w), where, "spec");
		if ((rc = typed(c, spec, lists[l], cJSON_IsArray, "an array", w,
				&arr)))
			return rc;
		cJSON_ArrayForEach (ct, arr) {
			struct res one = { 0 };

			snprintf(w, sizeof(w), "%s.spec.%s[%d]", where,
				 lists[l], i++);
			if ((rc = container_res(c, ct, w, &one)))
				return rc;
			if (l == 0) {
				res_add(&sum, &one);
			} else {
				init.cpu =
					one.cpu > init.cpu ? one.cpu : init.cpu;
				init.mem =
					one.mem > init.mem ? one.mem : init.mem;
				init.gpu =
					one.gpu > init.gpu ? one.gpu : init.gpu;
			}
		}
	}
	join(w, sizeof(w), where, "spec");
	if ((rc = res_list(c, spec, "overhead", w, &over, NULL)))
		return rc;
	r->cpu = sat_add(sum.cpu > init.cpu ? sum.cpu : init.cpu, over.cpu);
	r->mem = sat_add(sum.mem > init.mem ? sum.mem : init.mem, over.mem);
	r->gpu = sat_add(sum.gpu > init.gpu ? sum.gpu : init.gpu, over.gpu);
	return 0;
}

/* The job an unbound pod waits for: its MPIJob, else its controller,
 * else itself. */
static int note_pending(struct ctx *c, const cJSON *meta, const char *ns)
{
	const char *job = hb_doc_str(member(meta, "labels"), JOB_LABEL);
	const cJSON *refs = member(meta, "ownerReferences"), *r;
	uint64_t h = hb_fnv1a_strz(HB_FNV1A_INIT, ns);
	uint64_t *v;

	if (job) {
		h = hb_fnv1a_strz(hb_fnv1a_strz(h, "job"), job);
	} else {
		const cJSON *ctl = NULL;

		if (!cJSON_IsArray(refs))
			refs = NULL;
		cJSON_ArrayForEach (r, refs)
			if (cJSON_IsTrue(member(r, "controller")))
				ctl = r;
		if (ctl && hb_doc_str(ctl, "kind") && hb_doc_str(ctl, "name"))
			h = hb_fnv1a_strz(
				hb_fnv1a_strz(h, hb_doc_str(ctl, "kind")),
				hb_doc_str(ctl, "name"));
		else
			h = hb_fnv1a_strz(hb_fnv1a_strz(h, "pod"),
					  hb_doc_str(meta, "name"));
	}
	if (c->npending == c->cap_pending) {
		size_t cap = c->cap_pending ? 2 * c->cap_pending : 64;

		if (!(v = realloc(c->pending, cap * sizeof(*v))))
			return hb_err_set(c->err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		c->pending = v;
		c->cap_pending = cap;
	}
	c->pending[c->npending++] = h;
	return 0;
}

static int read_pod(struct ctx *c, const cJSON *p, const char *where)
{
	const cJSON *meta, *spec, *st;
	const char *phase, *node, *ns;
	struct node key, *nd;
	struct res r;
	int rc;

	if (!cJSON_IsObject(p))
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s: must be an object", where);
	if ((rc = typed(c, p, "metadata", cJSON_IsObject, "an object", where,
			&meta)) ||
	    (rc = typed(c, p, "spec", cJSON_IsObject, "an object", where,
			&spec)) ||
	    (rc = typed(c, p, "status", cJSON_IsObject, "an object", where,
			&st)))
		return rc;
	phase = hb_doc_str(st, "phase");
	if (member(st, "phase") && !phase)
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s.status.phase: must be a string", where);
	if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
		return 0;
	node = hb_doc_str(spec, "nodeName");
	if (member(spec, "nodeName") && !node)
		return hb_err_set(c->err, HB_EINVAL, NULL, 0,
				  "%s.spec.nodeName: must be a string", where);
	if (!node || !*node) {
		ns = hb_doc_str(meta, "namespace") ?: "";
		if ((!phase || !strcmp(phase, "Pending")) &&
		    (!c->o->ns || !strcmp(c->o->ns, ns)))
			return note_pending(c, meta, ns);
		return 0;
	}
	if ((rc = pod_res(c, spec, where, &r)))
		return rc;
	key.name = node;
	nd = c->nnodes
		     ? bsearch(&key, c->nodes, c->nnodes, sizeof(key), node_cmp)
		     : NULL;
	if (!nd)
		return 0; /* on a node not counted */
	res_add(&nd->used, &r);
	c->out->pods++;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- the sum -------------------------------------------------------- */

static int walk(struct ctx *c, const cJSON *items, const char *base,
		int (*fn)(struct ctx *, const cJSON *, const char *))
{
	const cJSON *it;
	char where[WHERE_MAX];
	int i = 0, rc;

	cJSON_ArrayForEach (it, items) {
		snprintf(where, sizeof(where), "%s[%d]", base, i++);
		if ((rc = fn(c, it, where)))
			return rc;
	}
	return 0;
}

int hb_kube_capacity(const cJSON *nodes, const cJSON *pods,
		     const struct hb_kcap_opts *opts, struct hb_kcap *out,
		     struct hb_err *err)
{
	static const struct hb_kcap_opts none = { 0 };
	struct ctx c = { 0 };
	const cJSON *nitems, *pitems;
	const char *nbase, *pbase;
	int n, rc;

	memset(out, 0, sizeof(*out));
	c.o = opts ? opts : &none;
	c.gpu_resource = c.o->gpu_resource ? c.o->gpu_resource : GPU_RESOURCE;
	c.gpu_label = c.o->gpu_label ? c.o->gpu_label : GPU_LABEL;
	c.out = out;
	c.err = err;
	if ((rc = items_of(&c, nodes, "nodes", &nitems, &nbase)) ||
	    (rc = items_of(&c, pods, "pods", &pitems, &pbase)))
		return rc;
	n = nitems ? cJSON_GetArraySize(nitems) : 0;
	if (n && !(c.nodes = calloc((size_t)n, sizeof(*c.nodes))))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if ((rc = walk(&c, nitems, nbase, read_node)))
		goto out;
	if (c.nnodes)
		qsort(c.nodes, c.nnodes, sizeof(*c.nodes), node_cmp);
	if ((rc = walk(&c, pitems, pbase, read_pod)))
		goto out;
	for (size_t i = 0; i < c.nnodes; i++) {
		const struct node *nd = &c.nodes[i];

		out->alloc_millicpus =
			sat_add(out->alloc_millicpus, nd->alloc.cpu);
		out->alloc_mem_bytes =
			sat_add(out->alloc_mem_bytes, nd->alloc.mem);
		out->free_millicpus = sat_add(
			out->free_millicpus, sub0(nd->alloc.cpu, nd->used.cpu));
		out->free_mem_bytes = sat_add(
			out->free_mem_bytes, sub0(nd->alloc.mem, nd->used.mem));
		if (nd->type >= 0) {
			struct hb_kcap_gpus *g = &out->gpus[nd->type];

			g->allocatable = sat_add(g->allocatable, nd->alloc.gpu);
			g->free = sat_add(g->free,
					  sub0(nd->alloc.gpu, nd->used.gpu));
		}
	}
	out->nodes = (uint32_t)c.nnodes;
	if (c.npending)
		qsort(c.pending, c.npending, sizeof(*c.pending), u64_cmp);
	for (size_t i = 0; i < c.npending; i++)
		if (!i || c.pending[i] != c.pending[i - 1])
			out->pending++;
out:
	free(c.nodes);
	free(c.pending);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* --- Kueue's pending workloads ---------------------------------------- */

/* A member that must be a whole number >= 0, or absent (opt). */
static int count_of(const cJSON *it, const char *key, int opt, int i,
		    int64_t *v, struct hb_err *err)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, key);

	*v = 0;
	if (!n && opt)
		return 0;
	if (!cJSON_IsNumber(n) || n->valuedouble < 0 ||
	    n->valuedouble > (double)INT32_MAX ||
	    n->valuedouble != (double)(int64_t)n->valuedouble)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "items[%d].%s: not a whole number >= 0", i,
				  key);
	*v = (int64_t)n->valuedouble;
	return 0;
}

int hb_kueue_pending(const cJSON *summary, int32_t priority,
		     struct hb_kueue_pending *out, struct hb_err *err)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(summary, "items");
	const cJSON *it, *list = cJSON_IsArray(items) ? items : NULL;
	struct hb_kueue_pending n = { 0 };
	int i = 0;

	/* counted in n, and given out whole: an error leaves *out zero */
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(summary))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "PendingWorkloadsSummary: not an object");
	if (items && !cJSON_IsArray(items) && !cJSON_IsNull(items))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "items: not an array");
	cJSON_ArrayForEach (it, list) {
		const cJSON *pr = hb_doc_get(it, "priority");
		const cJSON *own = cJSON_GetArrayItem(
			hb_doc_get(it, "metadata.ownerReferences"), 0);
		const char *kind = hb_doc_str(own, "kind");
		int64_t pos;
		int rc;

		if (!hb_doc_str(hb_doc_get(it, "metadata"), "name"))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "items[%d].metadata.name: missing",
					  i);
		if (pr && (!cJSON_IsNumber(pr) ||
			   pr->valuedouble < (double)INT32_MIN ||
			   pr->valuedouble > (double)INT32_MAX))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "items[%d].priority: not a 32-bit "
					  "number",
					  i);
		if ((rc = count_of(it, "positionInClusterQueue", 1, i, &pos,
				   err)) ||
		    (rc = count_of(it, "positionInLocalQueue", 1, i, &pos,
				   err)))
			return rc;
		n.items++;
		if (!pr || pr->valuedouble >= (double)priority)
			n.ahead++;
		if (kind && !strcmp(kind, "MPIJob"))
			n.burst++;
		i++;
	}
	*out = n;
	return 0;
}

int64_t hb_kueue_wait(uint32_t ahead, uint32_t admitted, int64_t remaining_s,
		      int64_t turn_s)
{
	uint64_t slots = admitted ? admitted : 1;
	uint64_t turns = (ahead + slots - 1) / slots;
	int64_t turn = remaining_s > 0 ? remaining_s : turn_s;

	if (!ahead || turn <= 0)
		return 0;
	if ((uint64_t)turn > (uint64_t)INT64_MAX / turns)
		return INT64_MAX;
	return (int64_t)(turns * (uint64_t)turn);
}
