/*
 * util.c - the resource table, clocks, names, and cJSON helpers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "hpcbridge/units.h"
#include "kubemu.h"

const struct km_resinfo km_res[KM_NRES] = {
	[KM_MPIJOB] = { "kubeflow.org", "v2beta1", "kubeflow.org/v2beta1",
			"mpijobs", "mpijob", "MPIJob", "MPIJobList", NULL,
			KM_CRD | KM_STATUS },
	[KM_TRAINJOB] = { "trainer.kubeflow.org", "v1alpha1",
			  "trainer.kubeflow.org/v1alpha1", "trainjobs",
			  "trainjob", "TrainJob", "TrainJobList", NULL,
			  KM_CRD | KM_STATUS },
	[KM_POD] = { "", "v1", "v1", "pods", "pod", "Pod", "PodList", "po",
		     KM_STATUS | KM_LOG },
	[KM_EVENT] = { "", "v1", "v1", "events", "event", "Event", "EventList",
		       "ev", 0 },
	[KM_LEASE] = { "coordination.k8s.io", "v1", "coordination.k8s.io/v1",
		       "leases", "lease", "Lease", "LeaseList", NULL, 0 },
	[KM_CONFIGMAP] = { "", "v1", "v1", "configmaps", "configmap",
			   "ConfigMap", "ConfigMapList", "cm", 0 },
	[KM_SECRET] = { "", "v1", "v1", "secrets", "secret", "Secret",
			"SecretList", NULL, 0 },
	[KM_NODE] = { "", "v1", "v1", "nodes", "node", "Node", "NodeList",
		      "no", KM_CLUSTER },
	[KM_NAMESPACE] = { "", "v1", "v1", "namespaces", "namespace",
			   "Namespace", "NamespaceList", "ns", KM_CLUSTER },
	/* Kueue, served at v1beta1 (its CRDs also serve v1beta2). */
	[KM_RFLAVOR] = { "kueue.x-k8s.io", "v1beta1", "kueue.x-k8s.io/v1beta1",
			 "resourceflavors", "resourceflavor", "ResourceFlavor",
			 "ResourceFlavorList", "flavor flavors rf",
			 KM_CRD | KM_CSCOPE },
	[KM_CQUEUE] = { "kueue.x-k8s.io", "v1beta1", "kueue.x-k8s.io/v1beta1",
			"clusterqueues", "clusterqueue", "ClusterQueue",
			"ClusterQueueList", "cq",
			KM_CRD | KM_STATUS | KM_CSCOPE },
	[KM_LQUEUE] = { "kueue.x-k8s.io", "v1beta1", "kueue.x-k8s.io/v1beta1",
			"localqueues", "localqueue", "LocalQueue",
			"LocalQueueList", "queue queues lq",
			KM_CRD | KM_STATUS },
	[KM_WPRIORITY] = { "kueue.x-k8s.io", "v1beta1",
			   "kueue.x-k8s.io/v1beta1", "workloadpriorityclasses",
			   "workloadpriorityclass", "WorkloadPriorityClass",
			   "WorkloadPriorityClassList", "wpc",
			   KM_CRD | KM_CSCOPE },
	[KM_WORKLOAD] = { "kueue.x-k8s.io", "v1beta1", "kueue.x-k8s.io/v1beta1",
			  "workloads", "workload", "Workload", "WorkloadList",
			  "kwl kueueworkload kueueworkloads",
			  KM_CRD | KM_STATUS },
	/* Dynamic Resource Allocation, at v1 (Kubernetes 1.34); dra.c
	 * checks them. */
	[KM_RCTEMPLATE] = { "resource.k8s.io", "v1", "resource.k8s.io/v1",
			    "resourceclaimtemplates", "resourceclaimtemplate",
			    "ResourceClaimTemplate",
			    "ResourceClaimTemplateList", NULL, 0 },
	[KM_DEVCLASS] = { "resource.k8s.io", "v1", "resource.k8s.io/v1",
			  "deviceclasses", "deviceclass", "DeviceClass",
			  "DeviceClassList", NULL, KM_CSCOPE },
	[KM_RSLICE] = { "resource.k8s.io", "v1", "resource.k8s.io/v1",
			"resourceslices", "resourceslice", "ResourceSlice",
			"ResourceSliceList", NULL, KM_CSCOPE },
};

int km_res_find(const char *group, const char *version, const char *plural)
{
	for (int i = 0; i < KM_NRES; i++) {
		if (!strcmp(km_res[i].group, group) &&
		    !strcmp(km_res[i].version, version) &&
		    !strcmp(km_res[i].plural, plural))
			return i;
	}
	return -1;
}

const char *km_res_qualified(enum km_res r)
{
	static const char *const names[KM_NRES] = {
		[KM_MPIJOB] = "mpijobs.kubeflow.org",
		[KM_TRAINJOB] = "trainjobs.trainer.kubeflow.org",
		[KM_POD] = "pods",
		[KM_EVENT] = "events",
		[KM_LEASE] = "leases.coordination.k8s.io",
		[KM_CONFIGMAP] = "configmaps",
		[KM_SECRET] = "secrets",
		[KM_NODE] = "nodes",
		[KM_NAMESPACE] = "namespaces",
		[KM_RFLAVOR] = "resourceflavors.kueue.x-k8s.io",
		[KM_CQUEUE] = "clusterqueues.kueue.x-k8s.io",
		[KM_LQUEUE] = "localqueues.kueue.x-k8s.io",
		[KM_WPRIORITY] = "workloadpriorityclasses.kueue.x-k8s.io",
		[KM_WORKLOAD] = "workloads.kueue.x-k8s.io",
		[KM_RCTEMPLATE] = "resourceclaimtemplates.resource.k8s.io",
		[KM_DEVCLASS] = "deviceclasses.resource.k8s.io",
		[KM_RSLICE] = "resourceslices.resource.k8s.io",
	};
	return names[r];
}

const char *const km_evtype_name[3] = { "ADDED", "MODIFIED", "DELETED" };

int64_t km_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void km_timestamp(char *buf, size_t cap, int micro)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (micro)
		snprintf(buf + n, cap - n, ".%06ldZ", ts.tv_nsec / 1000);
	else
		snprintf(buf + n, cap - n, "Z");
}

static void random_bytes(void *p, size_t n)
{
	unsigned char *b = p;

	while (n) {
		ssize_t r = getrandom(b, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* No entropy source: fall back on rand(). */
			for (size_t i = 0; i < n; i++)
				b[i] = (unsigned char)rand();
			return;
		}
		b += r;
		n -= (size_t)r;
	}
}

void km_uuid(char *buf)
{
	unsigned char u[16];

	random_bytes(u, sizeof(u));
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
	snprintf(buf, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

void km_rand_suffix(char *buf, size_t n)
{
	/* The alphabet of k8s.io/apimachinery/pkg/util/rand.String: no
	 * vowels, no look-alikes. */
	static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char r[64];

	if (n > sizeof(r))
		n = sizeof(r);
	random_bytes(r, n);
	for (size_t i = 0; i < n; i++)
		buf[i] = alpha[r[i] % (sizeof(alpha) - 1)];
	buf[n] = '\0';
}

int km_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return HB_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return HB_EINVAL;
	*out = v;
	return 0;
}

cJSON *km_get(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

const char *km_str(const cJSON *o, const char *key)
{
	const cJSON *v = km_get(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

cJSON *km_obj_at(cJSON *o, const char *key)
{
	cJSON *v = km_get(o, key);

	if (cJSON_IsObject(v))
		return v;
	v = cJSON_CreateObject();
	if (!v || km_set(o, key, v))
		return NULL;
	return v;
}

int km_set(cJSON *o, const char *key, cJSON *item)
{
	if (!item)
		return HB_ENOMEM;
	if (km_get(o, key)) {
		if (!cJSON_ReplaceItemInObjectCaseSensitive(o, key, item)) {
			cJSON_Delete(item);
			return HB_ENOMEM;
		}
		return 0;
	}
	if (!cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return HB_ENOMEM;
	}
	return 0;
}

int km_set_str(cJSON *o, const char *key, const char *v)
{
	return km_set(o, key, cJSON_CreateString(v));
}

int km_set_num(cJSON *o, const char *key, double v)
{
	return km_set(o, key, cJSON_CreateNumber(v));
}

void km_del(cJSON *o, const char *key)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, key);
}

const char *km_meta_str(const cJSON *obj, const char *key)
{
	return km_str(km_get(obj, "metadata"), key);
}

int km_equal(const cJSON *a, const cJSON *b)
{
	return cJSON_Compare(a, b, 1);
}

/* ---- a string-keyed hash map (chained) ------------------------------ */

struct map_node {
	struct map_node *next;
	void *val;
	char key[];
};

struct km_map {
	struct map_node **b;
	size_t nb, n;
};

static uint64_t map_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

struct km_map *km_map_new(void)
{
	struct km_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nb = 64;
	m->b = calloc(m->nb, sizeof(*m->b));
	if (!m->b) {
		free(m);
		return NULL;
	}
	return m;
}

void km_map_free(struct km_map *m, void (*free_val)(void *))
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nb; i++) {
		struct map_node *n = m->b[i];

		while (n) {
			struct map_node *next = n->next;

			if (free_val)
				free_val(n->val);
			free(n);
			n = next;
		}
	}
	free(m->b);
	free(m);
}

void *km_map_get(const struct km_map *m, const char *key)
{
	struct map_node *n = m->b[map_hash(key) % m->nb];

	for (; n; n = n->next) {
		if (!strcmp(n->key, key))
			return n->val;
	}
	return NULL;
}

static void map_grow(struct km_map *m)
{
	size_t nb = m->nb * 2;
	struct map_node **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* stay slower, still correct */
	for (size_t i = 0; i < m->nb; i++) {
		struct map_node *n = m->b[i];

		while (n) {
			struct map_node *next = n->next;
			size_t j = map_hash(n->key) % nb;

			n->next = b[j];
			b[j] = n;
			n = next;
		}
	}
	free(m->b);
	m->b = b;
	m->nb = nb;
}

int km_map_put(struct km_map *m, const char *key, void *val, void **old)
{
	size_t i = map_hash(key) % m->nb, len = strlen(key);
	struct map_node *n;

	if (old)
		*old = NULL;
	for (n = m->b[i]; n; n = n->next) {
		if (!strcmp(n->key, key)) {
			if (old)
				*old = n->val;
			n->val = val;
			return 0;
		}
	}
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return HB_ENOMEM;
	memcpy(n->key, key, len + 1);
	n->val = val;
	n->next = m->b[i];
	m->b[i] = n;
	if (++m->n > m->nb * 2)
		map_grow(m);
	return 0;
}

void *km_map_del(struct km_map *m, const char *key)
{
	struct map_node **pp = &m->b[map_hash(key) % m->nb], *n;

	for (; (n = *pp); pp = &n->next) {
		if (!strcmp(n->key, key)) {
			void *v = n->val;

			*pp = n->next;
			free(n);
			m->n--;
			return v;
		}
	}
	return NULL;
}

size_t km_map_count(const struct km_map *m)
{
	return m->n;
}

cJSON *km_cond_find(const cJSON *status, const char *type)
{
	cJSON *c;

	cJSON_ArrayForEach (c, km_get(status, "conditions")) {
		const char *t = km_str(c, "type");

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

int km_cond_true(const cJSON *status, const char *type)
{
	const char *s = km_str(km_cond_find(status, type), "status");

	return s && !strcmp(s, "True");
}

int km_qty_is_bytes(const char *key)
{
	return !strcmp(key, "memory") || !strcmp(key, "ephemeral-storage") ||
	       !strncmp(key, "hugepages-", 10);
}

uint64_t km_qty(const char *key, const char *s)
{
	uint64_t v = 0;

	if (!s)
		return 0;
	if (km_qty_is_bytes(key) ? hb_parse_k8s_units(s, &v)
				 : hb_parse_k8s_cpu(s, &v))
		return 0;
	return v;
}
