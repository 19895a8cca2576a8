/*
 * sides.c - what each side advertises for the fabric, read from the
 * objects the caller fetched: Kubernetes Nodes (allocatable GPUs and
 * rdma/... resources, NFD's rdma labels), DRA DeviceClasses and
 * ResourceSlices, and Slurm's nodes (features and gres) as `scontrol
 * --json show nodes` (or 22.05's `sinfo --json`) prints them; and the MPI Operator's common
 * failures an MPIJob shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"
#include "hpcbridge/doc.h"

#define NFD_RDMA "feature.node.kubernetes.io/rdma."

void hb_fab_side_free(struct hb_fab_side *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static struct hb_fab_side_node *side_add(struct hb_fab_side *s,
					 const char *name)
{
	struct hb_fab_side_node *x;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		void *v = realloc(s->v, cap * sizeof(*s->v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	x = &s->v[s->n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name ? name : "?");
	return x;
}

/* A count: a JSON number, or a string of digits (a Kubernetes quantity
 * of whole devices).  0 for anything else. */
static uint32_t count_of(const cJSON *v)
{
	unsigned long long n;
	char *end;

	if (cJSON_IsNumber(v))
		return v->valuedouble > 0 && v->valuedouble < 4e9
			       ? (uint32_t)v->valuedouble
			       : 0;
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return 0;
	errno = 0;
	n = strtoull(v->valuestring, &end, 10);
	return errno || *end || n > UINT32_MAX ? 0 : (uint32_t)n;
}

/* Append one item to the node's rdma_what (what is cut is lost). */
static void what_add(struct hb_fab_side_node *x, const char *item)
{
	size_t len = strlen(x->rdma_what);

	snprintf(x->rdma_what + len, sizeof(x->rdma_what) - len, "%s%s",
		 len ? ", " : "", item);
}

static void side_tally(struct hb_fab_side *s, const struct hb_fab_side_node *x)
{
	s->nodes_rdma += x->rdma > 0;
	s->nodes_gpu += x->gpus > 0;
	s->nodes_rdma_label += x->rdma_label && !x->rdma;
	s->gpus += x->gpus;
}

/* A device plugin's RDMA resource: the shared device plugin's
 * "rdma/NAME", or a name that says RDMA ("nvidia.com/sriov_rdma_vf"). */
static int rdma_resource(const char *key)
{
	const char *slash = strchr(key, '/');

	return !strncmp(key, "rdma/", 5) || (slash && strstr(slash, "rdma"));
}

int hb_fab_kube_nodes(const cJSON *items, struct hb_fab_side *s,
		      struct hb_err *err)
{
	const cJSON *node, *r, *l;

	s->side = "kubernetes";
	if (!cJSON_IsArray(items))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "nodes: not a list");
	cJSON_ArrayForEach(node, items)
	{
		struct hb_fab_side_node *x =
			side_add(s, hb_doc_str(hb_doc_get(node, "metadata"),
					       "name"));

		if (!x)
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		cJSON_ArrayForEach(r, hb_doc_get(node, "status.allocatable"))
		{
			uint32_t c = count_of(r);

			if (!strcmp(r->string, "nvidia.com/gpu") ||
			    !strcmp(r->string, "amd.com/gpu"))
				x->gpus += c;
			else if (rdma_resource(r->string) && c) {
				char w[96];

				x->rdma += c;
				snprintf(w, sizeof(w), "%.80s=%u", r->string, c);
				what_add(x, w);
			}
		}
		cJSON_ArrayForEach(l, hb_doc_get(node, "metadata.labels"))
			if (!strncmp(l->string, NFD_RDMA, strlen(NFD_RDMA)) &&
			    cJSON_IsString(l) &&
			    !strcmp(l->valuestring, "true"))
				x->rdma_label = true;
		side_tally(s, x);
	}
	return 0;
}

/* A device's attributes: v1beta1 keeps them under "basic", v1 and
 * v1beta2 on the device itself. */
static const cJSON *dev_attrs(const cJSON *dev)
{
	const cJSON *a = hb_doc_get(dev, "attributes");

	return a ? a : hb_doc_get(dev, "basic.attributes");
}

static int dev_is_rdma(const cJSON *dev)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, dev_attrs(dev))
	{
		const char *slash = strrchr(a->string, '/');

		if (slash && !strcmp(slash, "/rdma") &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "bool")))
			return 1;
	}
	return 0;
}

/* Whether an item of a comma-and-space list starts with word followed
 * by one of the end characters ("rdma/a=1000" for "rdma/a" and "="); the
 * list's end is an end too. */
static int list_has(const char *list, const char *word, const char *ends)
{
	size_t wl = strlen(word);

	if (!wl)
		return 0;
	for (const char *p = list; (p = strstr(p, word)); p += wl)
		if ((p == list || p[-1] == ' ') && strchr(ends, p[wl]))
			return 1;
	return 0;
}

/* Append name to a comma-and-space list unless it is there. */
static void list_add(char *list, size_t size, const char *name)
{
	size_t len = strlen(list);

	if (!list_has(list, name, ","))
		snprintf(list + len, size - len, "%s%s", len ? ", " : "",
			 name);
}

int hb_fab_kube_dra(const cJSON *classes, const cJSON *slices,
		    struct hb_fab_side *s, struct hb_err *err)
{
	const cJSON *c, *sl, *dev;

	(void)err;
	s->dra_served = classes || slices;
	cJSON_ArrayForEach(c, classes)
	{
		const char *name = hb_doc_str(hb_doc_get(c, "metadata"), "name");

		if (name)
			list_add(s->dra_classes, sizeof(s->dra_classes), name);
	}
	cJSON_ArrayForEach(sl, slices)
	{
		const char *drv = hb_doc_str(hb_doc_get(sl, "spec"), "driver");
		int gpu = drv && strstr(drv, "gpu");

		if (drv)
			list_add(s->dra_drivers, sizeof(s->dra_drivers), drv);
		cJSON_ArrayForEach(dev, hb_doc_get(sl, "spec.devices"))
		{
			if (dev_is_rdma(dev))
				s->dra_rdma++;
			else if (gpu)
				s->dra_gpu++;
			else
				s->dra_other++;
		}
	}
	return 0;
}

/* --- Slurm -------------------------------------------------------------- */

/* Whether the comma-separated list holds word. */
static int in_list(const char *list, const char *word, size_t wl)
{
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == wl && !strncmp(p, word, wl))
			return 1;
		p += len;
		p += *p == ',';
	}
	return 0;
}

/* Features ("ib,gpu" in Slurm 22.05's JSON, a list in later ones) that
 * name RDMA. */
static void slurm_features(const cJSON *v, const char *rdma,
			   struct hb_fab_side_node *x)
{
	const cJSON *it;

	if (cJSON_IsString(v)) {
		for (const char *p = v->valuestring; *p;) {
			size_t len = strcspn(p, ",");

			if (len && in_list(rdma, p, len) &&
			    !strstr(x->rdma_what, "feature ")) {
				char w[72];

				snprintf(w, sizeof(w), "feature %.*s",
					 (int)(len < 60 ? len : 60), p);
				what_add(x, w);
				x->rdma = x->rdma ? x->rdma : 1;
			}
			p += len;
			p += *p == ',';
		}
		return;
	}
	cJSON_ArrayForEach(it, v)
		if (cJSON_IsString(it) &&
		    in_list(rdma, it->valuestring, strlen(it->valuestring)) &&
		    !strstr(x->rdma_what, "feature ")) {
			char w[72];

			snprintf(w, sizeof(w), "feature %.60s",
				 it->valuestring);
			what_add(x, w);
			x->rdma = x->rdma ? x->rdma : 1;
		}
}

/* gres "gpu:a100:4(S:0-1),rdma:1": the count is the last field of each
 * item, before any "(...)". */
static void slurm_gres(const char *g, struct hb_fab_side_node *x)
{
	for (const char *p = g; p && *p;) {
		size_t len = strcspn(p, ",");
		char item[128], *paren, *colon, *end;
		unsigned long n = 1;

		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		if ((paren = strchr(item, '(')))
			*paren = '\0';
		if ((colon = strrchr(item, ':'))) {
			errno = 0;
			n = strtoul(colon + 1, &end, 10);
			if (errno || *end || end == colon + 1)
				n = 1; /* "gpu:a100": a type, one device */
		}
		if (!strncmp(item, "gpu", 3) && (!item[3] || item[3] == ':'))
			x->gpus += (uint32_t)n;
		else if (!strncmp(item, "rdma", 4) || !strncmp(item, "hca", 3)) {
			char w[96];

			item[strcspn(item, ":")] = '\0';
			x->rdma += (uint32_t)n;
			snprintf(w, sizeof(w), "gres %.60s=%lu", item, n);
			what_add(x, w);
		}
		p += len;
		p += *p == ',';
	}
}

int hb_fab_slurm_nodes(const cJSON *doc, const char *rdma_features,
		       struct hb_fab_side *s, struct hb_err *err)
{
	const char *rdma = rdma_features ? rdma_features
					 : "ib,infiniband,rdma,roce";
	const cJSON *nodes = hb_doc_get(doc, "nodes"), *node;

	s->side = "slurm";
	if (!cJSON_IsArray(nodes))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "nodes: not a list (is this `scontrol "
				  "--json show nodes`?)");
	cJSON_ArrayForEach(node, nodes)
	{
		struct hb_fab_side_node *x = side_add(s, hb_doc_str(node, "name"));
		const char *g = hb_doc_str(node, "gres");

		if (!x)
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		slurm_features(cJSON_GetObjectItemCaseSensitive(
				       node, "active_features"),
			       rdma, x);
		slurm_features(cJSON_GetObjectItemCaseSensitive(node,
								"features"),
			       rdma, x);
		if (g)
			slurm_gres(g, x);
		side_tally(s, x);
	}
	return 0;
}

/* --- findings on a side --------------------------------------------------- */

/* The first few nodes that offer RDMA, "a (rdma/x=1), b (feature ib)". */
static void rdma_nodes(const struct hb_fab_side *s, char *out, size_t size)
{
	size_t len = 0, shown = 0;

	out[0] = '\0';
	for (size_t i = 0; i < s->n && shown < 4 && len < size; i++) {
		if (!s->v[i].rdma)
			continue;
		len += (size_t)snprintf(out + len, size - len, "%s%s (%s)",
					shown ? ", " : "", s->v[i].name,
					s->v[i].rdma_what);
		shown++;
	}
	if (len < size && s->nodes_rdma > shown)
		snprintf(out + len, size - len, ", %zu more",
			 s->nodes_rdma - shown);
}

static void check_dra(const struct hb_fab_side *s, struct hb_fab_findings *f)
{
	if (!s->dra_served) {
		hb_fab_add(f, HB_FAB_OK, "k8s.dra.unserved", NULL,
			   "DRA (resource.k8s.io) is not served: RDMA can "
			   "only come from a device plugin's rdma/* "
			   "resource");
		return;
	}
	hb_fab_add(f, HB_FAB_OK, "k8s.dra", NULL,
		   "DRA: DeviceClasses %s; ResourceSlices hold %zu RDMA, "
		   "%zu GPU and %zu other devices (drivers: %s)",
		   s->dra_classes[0] ? s->dra_classes : "none", s->dra_rdma,
		   s->dra_gpu, s->dra_other,
		   s->dra_drivers[0] ? s->dra_drivers : "none");
	if (s->dra_rdma && !s->dra_classes[0])
		hb_fab_add(f, HB_FAB_WARN, "k8s.dra.no_class",
			   "create a DeviceClass selecting the driver's RDMA "
			   "devices (DraNet: device.attributes[\"dra.net\"]."
			   "rdma == true) and name it in the configuration",
			   "ResourceSlices offer RDMA devices but no "
			   "DeviceClass exists to claim them through");
}

void hb_fab_check_side(const struct hb_fab_side *s, struct hb_fab_findings *f)
{
	int kube = strcmp(s->side, "slurm") != 0;
	const char *p = kube ? "k8s" : "slurm";
	char code[48], list[512];

	if (!s->n) {
		snprintf(code, sizeof(code), "%s.no_nodes", p);
		hb_fab_add(f, HB_FAB_WARN, code, NULL, "%s lists no node",
			   s->side);
	}
	rdma_nodes(s, list, sizeof(list));
	snprintf(code, sizeof(code), "%s.%s", p,
		 s->nodes_rdma || (kube && s->dra_rdma) ? "rdma" : "no_rdma");
	if (s->nodes_rdma)
		hb_fab_add(f, HB_FAB_OK, code, NULL,
			   "%s: %zu of %zu nodes offer RDMA: %s", s->side,
			   s->nodes_rdma, s->n, list);
	else if (kube && s->dra_rdma)
		hb_fab_add(f, HB_FAB_OK, code, NULL,
			   "%s: %zu RDMA devices offered through DRA", s->side,
			   s->dra_rdma);
	else if (s->n)
		hb_fab_add(f, HB_FAB_WARN, code,
			   kube ? "deploy the RDMA shared device plugin (an "
				  "rdma/* resource) or DraNet (DRA); see "
				  "docs/doctor.md"
				: "give RDMA nodes a feature (Feature=ib in "
				  "slurm.conf) or an rdma gres",
			   "%s: no node offers RDMA: a job that needs it "
			   "cannot run there",
			   s->side);
	if (kube && s->nodes_rdma_label)
		hb_fab_add(f, HB_FAB_WARN, "k8s.rdma_unallocatable",
			   "NFD sees RDMA hardware; install the RDMA device "
			   "plugin or DraNet so pods can ask for it",
			   "%zu node%s labelled %s* but offer%s no rdma/* "
			   "resource",
			   s->nodes_rdma_label,
			   s->nodes_rdma_label == 1 ? " is" : "s are", NFD_RDMA,
			   s->nodes_rdma_label == 1 ? "s" : "");
	snprintf(code, sizeof(code), "%s.%s", p,
		 s->nodes_gpu ? "gpu" : "no_gpu");
	if (s->nodes_gpu)
		hb_fab_add(f, HB_FAB_OK, code, NULL,
			   "%s: %zu GPUs on %zu node%s", s->side, s->gpus,
			   s->nodes_gpu, s->nodes_gpu == 1 ? "" : "s");
	else if (s->n)
		hb_fab_add(f, HB_FAB_OK, code, NULL, "%s: no node offers GPUs",
			   s->side);
	if (kube)
		check_dra(s, f);
}

void hb_fab_check_kube_rdma_config(const struct hb_fab_side *s,
				   const char *mode, const char *resource,
				   const char *dra_class,
				   struct hb_fab_findings *f)
{
	size_t with = 0;

	if (!mode || !strcmp(mode, "none")) {
		if (s->nodes_rdma || s->dra_rdma)
			hb_fab_add(f, HB_FAB_WARN, "k8s.rdma_config.none",
				   "set kubernetes.rdma.mode (device_plugin "
				   "with kubernetes.rdma.resource, or dra with "
				   "kubernetes.rdma.dra.device_class)",
				   "the cluster offers RDMA, but "
				   "kubernetes.rdma.mode is none: RDMA jobs "
				   "stay off it");
		return;
	}
	if (!strcmp(mode, "device_plugin")) {
		for (size_t i = 0; resource && i < s->n; i++)
			with += list_has(s->v[i].rdma_what, resource, "=");
		if (with)
			hb_fab_add(f, HB_FAB_OK, "k8s.rdma_config.ok", NULL,
				   "kubernetes.rdma.resource %s: allocatable on "
				   "%zu node%s",
				   resource, with, with == 1 ? "" : "s");
		else
			hb_fab_add(f, HB_FAB_FAIL,
				   "k8s.rdma_config.resource_missing",
				   "deploy the device plugin that serves it, or "
				   "name the one the nodes list (k8s.rdma above)",
				   "kubernetes.rdma.resource %s is allocatable "
				   "on no node: RDMA workers would stay Pending",
				   resource ? resource : "(unset)");
		return;
	}
	if (dra_class && list_has(s->dra_classes, dra_class, ","))
		hb_fab_add(f, HB_FAB_OK, "k8s.rdma_config.ok", NULL,
			   "kubernetes.rdma.dra.device_class %s exists",
			   dra_class);
	else
		hb_fab_add(f, HB_FAB_FAIL, "k8s.rdma_config.class_missing",
			   "create the DeviceClass (DraNet's selects "
			   "device.attributes[\"dra.net\"].rdma == true), or "
			   "name an existing one",
			   "kubernetes.rdma.dra.device_class %s %s: RDMA "
			   "workers' claims cannot be allocated",
			   dra_class ? dra_class : "(unset)",
			   s->dra_served ? "does not exist"
					 : "cannot exist: DRA is not served");
}

void hb_fab_check_job_side(const struct hb_jobspec *spec, const char *name,
			   const struct hb_fab_side *s,
			   struct hb_fab_findings *f)
{
	struct hb_shape sh;

	if (spec->fabric == HB_FABRIC_RDMA && !s->nodes_rdma && !s->dra_rdma)
		hb_fab_add(f, HB_FAB_FAIL, "job.side.no_rdma",
			   "placement keeps the job off this side; give it "
			   "RDMA nodes or run the job where they are",
			   "%s needs RDMA (%s), and %s offers none", name,
			   spec->fabric_why ? spec->fabric_why : "said",
			   s->side);
	else if (spec->fabric == HB_FABRIC_RDMA)
		hb_fab_add(f, HB_FAB_OK, "job.side.rdma", NULL,
			   "%s needs RDMA, and %s offers it", name, s->side);
	if (!hb_jobspec_shape(spec, &sh) && sh.gpus_per_node &&
	    !s->nodes_gpu && !s->dra_gpu)
		hb_fab_add(f, HB_FAB_WARN, "job.side.no_gpu",
			   "the job waits or is placed elsewhere",
			   "%s asks for %u GPU%s per node, and %s offers none",
			   name, sh.gpus_per_node,
			   sh.gpus_per_node == 1 ? "" : "s", s->side);
}

/* --- the MPI Operator --------------------------------------------------- */

static int has_anti_affinity(const cJSON *pod)
{
	const cJSON *r = hb_doc_get(
		pod, "affinity.podAntiAffinity."
		     "requiredDuringSchedulingIgnoredDuringExecution");

	return cJSON_GetArraySize(r) > 0;
}

/* The launcher's uid: the container's runAsUser, else the pod's; -1. */
static long launcher_uid(const cJSON *pod)
{
	const cJSON *c = cJSON_GetArrayItem(hb_doc_get(pod, "containers"), 0);
	const cJSON *u = hb_doc_get(c, "securityContext.runAsUser");

	if (!cJSON_IsNumber(u))
		u = hb_doc_get(pod, "securityContext.runAsUser");
	return cJSON_IsNumber(u) ? (long)u->valuedouble : -1;
}

static const char *ssh_failure(const cJSON *mpijob)
{
	static const char *const marks[] = {
		"ssh",		 "Could not resolve", "Host key verification",
		"publickey",	 "Name or service not known",
		"ORTE was unable", "connection refused", NULL
	};
	const cJSON *c;

	cJSON_ArrayForEach(c, hb_doc_get(mpijob, "status.conditions"))
	{
		const char *t = hb_doc_str(c, "type"), *st = hb_doc_str(c, "status");
		const char *m = hb_doc_str(c, "message");

		if (!t || strcmp(t, "Failed") || !st || strcmp(st, "True") || !m)
			continue;
		for (const char *const *k = marks; *k; k++)
			if (strstr(m, *k))
				return m;
	}
	return NULL;
}

void hb_fab_check_mpijob(const cJSON *mpijob, struct hb_fab_findings *f)
{
	const char *name = hb_doc_str(hb_doc_get(mpijob, "metadata"), "name");
	const cJSON *w = hb_doc_get(mpijob, "spec.mpiReplicaSpecs.Worker");
	const cJSON *wpod = hb_doc_get(w, "template.spec");
	const cJSON *lpod =
		hb_doc_get(mpijob, "spec.mpiReplicaSpecs.Launcher.template.spec");
	const char *mount = hb_doc_str(hb_doc_get(mpijob, "spec"),
				       "sshAuthMountPath");
	const cJSON *rep = hb_doc_get(w, "replicas");
	long replicas = cJSON_IsNumber(rep) ? (long)rep->valuedouble : 1;
	long uid = launcher_uid(lpod);
	const char *failed = ssh_failure(mpijob);

	name = name ? name : "?";
	mount = mount ? mount : "/root/.ssh";
	if (cJSON_IsTrue(hb_doc_get(wpod, "hostNetwork")) && replicas > 1 &&
	    !has_anti_affinity(wpod))
		hb_fab_add(f, HB_FAB_WARN, "mpiop.hostnetwork_clash",
			   "add a required podAntiAffinity on the workers "
			   "(training.kubeflow.org/job-role: worker) so no two "
			   "share a node, or drop hostNetwork",
			   "MPIJob %s: %ld workers with hostNetwork and nothing "
			   "keeping two off one node: two on a node clash on "
			   "sshd's port and any fixed port",
			   name, replicas);
	if (uid > 0 && !strncmp(mount, "/root/", 6))
		hb_fab_add(f, HB_FAB_WARN, "mpiop.ssh_mount",
			   "set spec.sshAuthMountPath to the .ssh of the "
			   "user the pods run as (its home)",
			   "MPIJob %s: the launcher runs as uid %ld but the "
			   "SSH keys are mounted at %s: ssh reads the user's "
			   "own ~/.ssh, and cannot reach the workers",
			   name, uid, mount);
	if (failed)
		hb_fab_add(f, HB_FAB_FAIL, "mpiop.ssh_failed",
			   "the launcher reaches workers by hostname through "
			   "the job's headless Service: check it exists, that "
			   "<job>-worker-0.<job>.<namespace>.svc resolves from "
			   "the launcher, and that the <job>-ssh Secret is "
			   "mounted at spec.sshAuthMountPath",
			   "MPIJob %s failed reaching its workers: %s", name,
			   failed);
}
