/*
 * k8s_fabric.c - what the pods get for the job's hardware: the extended
 * resource its GPUs are asked as (by type or vendor), and, for a job
 * whose fabric is RDMA, the worker's RDMA device (a device plugin's
 * resource, or a DRA ResourceClaimTemplate in DraNet's style), the
 * IPC_LOCK capability verbs need to pin memory, and Open MPI's UCX PML.
 *
 * The template itself is its own document (hb_k8s_claim_template()),
 * named after the MPIJob, so that whoever renames the MPIJob names it.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "k8s_int.h"

#define AMD_GPU "amd.com/gpu"
/* The pod's name for its RDMA claim, and the template's suffix. */
#define CLAIM	"rdma"
#define PML_ENV "OMPI_MCA_pml"

/* ---------------------------------------------------------------- */
/* GPUs                                                             */
/* ---------------------------------------------------------------- */

/* Whether a GPU type names an AMD Instinct or Radeon card: "mi" and a
 * digit (mi100, mi250x, mi300x), or an "amd", "instinct" or "radeon"
 * prefix. */
static bool amd_type(const char *t)
{
	if ((t[0] == 'm' || t[0] == 'M') && (t[1] == 'i' || t[1] == 'I') &&
	    t[2] >= '0' && t[2] <= '9')
		return true;
	return !strncasecmp(t, "amd", 3) || !strncasecmp(t, "instinct", 8) ||
	       !strncasecmp(t, "radeon", 6);
}

int hb_k8s_gpu_key(struct hb_k8s_ctx *c, const char **out)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	const char *t = c->spec->gpu_type;
	char known[200];
	size_t n = 0;

	*out = cfg->gpu_resource ? cfg->gpu_resource : "nvidia.com/gpu";
	if (!t || !*t)
		return 0;
	if (!cfg->ngpu_resources) {
		if (amd_type(t))
			*out = AMD_GPU;
		return 0;
	}
	known[0] = '\0';
	for (uint32_t i = 0; i < cfg->ngpu_resources; i++) {
		const struct hb_kv *kv = &cfg->gpu_resources[i];

		if (!strcasecmp(kv->key, t)) {
			*out = kv->value;
			return 0;
		}
		if (n < sizeof(known))
			n += (size_t)snprintf(known + n, sizeof(known) - n,
					      "%s%s", i ? ", " : "", kv->key);
	}
	return hb_err_set(c->err, HB_EINVAL, c->spec->source_name,
			  c->spec->prov[HB_F_GPUS].line,
			  "GPU type '%.40s' is not one the cluster has: "
			  "kubernetes.gpu_resources lists %s",
			  t, known);
}

/* ---------------------------------------------------------------- */
/* RDMA                                                             */
/* ---------------------------------------------------------------- */

static bool is_mode(const struct hb_k8s_opts *cfg, const char *m)
{
	return cfg->rdma_mode && !strcmp(cfg->rdma_mode, m);
}

static int cfg_err(struct hb_k8s_ctx *c, const char *key, const char *what)
{
	return hb_err_set(c->err, HB_EINVAL, c->spec->source_name, 0,
			  "the job needs RDMA (%s) but %s: set %s",
			  c->spec->fabric_why ? c->spec->fabric_why
					      : "its fabric",
			  what, key);
}

/* The SCCs of OpenShift that drop every capability but a few, as
 * restricted-v2 does: IPC_LOCK is not among those they allow. */
static bool restricted_scc(const char *scc)
{
	static const char *const names[] = { "restricted", "restricted-v2",
					     "restricted-v3", "nonroot",
					     "nonroot-v2" };

	for (size_t i = 0; i < NELEM(names); i++)
		if (!strcmp(scc, names[i]))
			return true;
	return false;
}

/* Whether the script chose Open MPI's PML itself. */
static bool sets_pml(const struct hb_jobspec *s)
{
	for (uint32_t i = 0; i < s->nenv; i++)
		if (s->env[i].name && !strcmp(s->env[i].name, PML_ENV))
			return true;
	return s->script &&
	       (strstr(s->script, PML_ENV) || strstr(s->script, "-mca pml") ||
		strstr(s->script, "--mca pml"));
}

/* IPC_LOCK against what the namespace admits: said, never silent. */
static void warn_ipc_lock(struct hb_k8s_ctx *c)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	bool pss =
		!cfg->pod_security || strcmp(cfg->pod_security, "privileged");

	if (cfg->openshift_scc && restricted_scc(cfg->openshift_scc))
		hb_report_warn(c->rep,
			       "RDMA needs capability IPC_LOCK on the workers, "
			       "which OpenShift's %s SCC forbids: the pods "
			       "will be rejected; set kubernetes.openshift.scc "
			       "to an SCC that allows IPC_LOCK",
			       cfg->openshift_scc);
	else if (pss)
		hb_report_warn(c->rep,
			       "RDMA needs capability IPC_LOCK on the workers, "
			       "which Pod Security \"%s\" forbids (and "
			       "OpenShift's restricted-v2 SCC): the pods will "
			       "be rejected unless the namespace is "
			       "privileged (kubernetes.pod_security) and, on "
			       "OpenShift, kubernetes.openshift.scc names an "
			       "SCC that allows IPC_LOCK",
			       cfg->pod_security ? cfg->pod_security
						 : "restricted");
}

/* Open MPI over RDMA goes through UCX; its default PML may pick TCP. */
static int plan_pml(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;

	if (s->mpi != HB_MPI_OPENMPI || sets_pml(s))
		return 0;
	if (hb_k8s_kv_set(c->plan, &c->plan->env, PML_ENV, "ucx"))
		return OOM(c);
	/* Not the job's own: the way back takes it off again. */
	return annotate(c, "fabric-env", PML_ENV);
}

static int plan_dra(struct hb_k8s_ctx *c)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	struct hb_k8s_plan *plan = c->plan;
	uint32_t n = cfg->rdma_count ? cfg->rdma_count : 1;

	if (!cfg->rdma_dra_class)
		return cfg_err(c, "kubernetes.rdma.dra.device_class",
			       "kubernetes.rdma.mode is dra and no DeviceClass "
			       "is named");
	if (cfg->rdma_dra_ifname && n > 1 &&
	    strlen(cfg->rdma_dra_ifname) + (n > 10 ? 2 : 1) > 15)
		return cfg_err(c, "kubernetes.rdma.dra.interface_name",
			       "the interface name and a number do not fit "
			       "15 characters");
	plan->claim_template =
		hb_arena_printf(&plan->arena, "%s-" CLAIM, plan->name);
	if (!plan->claim_template)
		return OOM(c);
	plan->resources.claim = CLAIM;
	return 0;
}

int hb_k8s_plan_fabric(struct hb_k8s_ctx *c)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	struct hb_k8s_plan *plan = c->plan;
	bool mpijob = !strcmp(c->paths->kind, "MPIJob");
	int rc;

	if (c->spec->fabric != HB_FABRIC_RDMA)
		return 0;
	if (is_mode(cfg, "device_plugin")) {
		if (!cfg->rdma_resource)
			return cfg_err(c, "kubernetes.rdma.resource",
				       "kubernetes.rdma.mode is device_plugin "
				       "and no resource is named");
		plan->resources.rdma_key = cfg->rdma_resource;
		snprintf(plan->resources.rdma, sizeof(plan->resources.rdma),
			 "%u", cfg->rdma_count ? cfg->rdma_count : 1);
	} else if (is_mode(cfg, "dra")) {
		if (!mpijob)
			return cfg_err(c, "kubernetes.rdma.mode",
				       "a TrainJob's pods are its runtime's: "
				       "no DRA claim can be added");
		if ((rc = plan_dra(c)))
			return rc;
	} else {
		/* Placement keeps such a job off this side; a translation
		 * asked for anyway says what it lacks. */
		hb_report_warn(c->rep,
			       "the job needs RDMA (%s) but the cluster has "
			       "none configured (kubernetes.rdma.mode): the "
			       "manifest asks no RDMA device, and its ranks "
			       "would talk over TCP",
			       c->spec->fabric_why ? c->spec->fabric_why
						   : "its fabric");
		return 0;
	}
	if ((rc = plan_pml(c)))
		return rc;
	if (mpijob) {
		plan->ipc_lock = true;
		warn_ipc_lock(c);
	} else {
		hb_report_warn(c->rep,
			       "RDMA: the runtime's containers need capability "
			       "IPC_LOCK; a TrainJob cannot add it");
	}
	return 0;
}

/* ---------------------------------------------------------------- */
/* Writing                                                          */
/* ---------------------------------------------------------------- */

void hb_k8s_write_pod_claims(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	if (!plan->claim_template)
		return;
	hb_emit_arr(w, "resourceClaims");
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", CLAIM);
	hb_emit_str(w, "resourceClaimTemplateName", plan->claim_template);
	hb_emit_end(w);
	hb_emit_end(w);
}

/* One device request: v1 and v1beta2 wrap it in "exactly", v1beta1 has
 * it flat. */
static void request(struct hb_emit *w, const struct hb_k8s_opts *cfg,
		    const char *name, uint32_t count, bool beta1)
{
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", name);
	if (!beta1)
		hb_emit_obj(w, "exactly");
	hb_emit_str(w, "deviceClassName", cfg->rdma_dra_class);
	hb_emit_str(w, "allocationMode", "ExactCount");
	hb_emit_num(w, "count", count);
	if (cfg->rdma_dra_selector) {
		hb_emit_arr(w, "selectors");
		hb_emit_obj(w, NULL);
		hb_emit_obj(w, "cel");
		hb_emit_str(w, "expression", cfg->rdma_dra_selector);
		hb_emit_end(w);
		hb_emit_end(w);
		hb_emit_end(w);
	}
	if (!beta1)
		hb_emit_end(w);
	hb_emit_end(w);
}

/* DraNet names the interface in the pod through the claim's opaque
 * configuration for its driver: {"interface": {"name": ...}}. */
static void ifname_config(struct hb_emit *w, const struct hb_k8s_opts *cfg,
			  const char *req, const char *ifname)
{
	hb_emit_obj(w, NULL);
	hb_emit_arr(w, "requests");
	hb_emit_str(w, NULL, req);
	hb_emit_end(w);
	hb_emit_obj(w, "opaque");
	hb_emit_str(w, "driver",
		    cfg->rdma_dra_driver ? cfg->rdma_dra_driver : "dra.net");
	hb_emit_obj(w, "parameters");
	hb_emit_obj(w, "interface");
	hb_emit_str(w, "name", ifname);
	hb_emit_end(w);
	hb_emit_end(w);
	hb_emit_end(w);
	hb_emit_end(w);
}

/*
 * The devices of the claim: one request of N NICs; with an interface
 * name and N > 1, N requests of one NIC each, so that each gets its own
 * name (<name>0, <name>1, ...).
 */
static void devices(struct hb_emit *w, const struct hb_k8s_opts *cfg,
		    bool beta1)
{
	uint32_t n = cfg->rdma_count ? cfg->rdma_count : 1;
	const char *ifn = cfg->rdma_dra_ifname;
	bool split = ifn && n > 1;
	char req[16], name[32];

	hb_emit_obj(w, "devices");
	hb_emit_arr(w, "requests");
	for (uint32_t i = 0; i < (split ? n : 1); i++) {
		snprintf(req, sizeof(req), split ? "nic-%u" : "nic", i);
		request(w, cfg, req, split ? 1 : n, beta1);
	}
	hb_emit_end(w);
	if (ifn) {
		hb_emit_arr(w, "config");
		for (uint32_t i = 0; i < (split ? n : 1); i++) {
			snprintf(req, sizeof(req), split ? "nic-%u" : "nic", i);
			if (split)
				snprintf(name, sizeof(name), "%s%u", ifn, i);
			else
				snprintf(name, sizeof(name), "%s", ifn);
			ifname_config(w, cfg, req, name);
		}
		hb_emit_end(w);
	}
	hb_emit_end(w);
}

static cJSON *worker_claims(cJSON *mpijob)
{
	cJSON *x = mpijob;
	static const char *const path[] = { "spec",   "mpiReplicaSpecs",
					    "Worker", "template",
					    "spec",   "resourceClaims" };

	for (size_t i = 0; x && i < NELEM(path); i++)
		x = cJSON_GetObjectItemCaseSensitive(x, path[i]);
	return cJSON_IsArray(x) ? x : NULL;
}

int hb_k8s_claim_template(struct cJSON *mpijob, const struct hb_k8s_opts *cfg,
			  struct cJSON **out, struct hb_err *err)
{
	cJSON *claims = worker_claims(mpijob), *it, *meta, *ref = NULL;
	const char *name, *ns;
	const char *api = cfg && cfg->rdma_dra_api ? cfg->rdma_dra_api
						   : "resource.k8s.io/v1";
	char tname[HB_DNS_LABEL_MAX + sizeof("-" CLAIM)];
	struct hb_emit *w;
	int rc;

	*out = NULL;
	cJSON_ArrayForEach (it, claims) {
		const char *n = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "name"));

		if (n && !strcmp(n, CLAIM))
			ref = it;
	}
	if (!ref)
		return 0;
	if (!cfg || !cfg->rdma_dra_class)
		return hb_err_set(
			err, HB_EINVAL, NULL, 0,
			"the MPIJob claims an RDMA NIC but "
			"kubernetes.rdma.dra.device_class is not set");
	meta = cJSON_GetObjectItemCaseSensitive(mpijob, "metadata");
	name = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(meta, "name"));
	ns = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(meta, "namespace"));
	if (!name || strlen(name) > HB_DNS_LABEL_MAX)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "the MPIJob has no name to name its "
				  "ResourceClaimTemplate after");
	snprintf(tname, sizeof(tname), "%s-" CLAIM, name);
	if (!cJSON_ReplaceItemInObjectCaseSensitive(ref,
						    "resourceClaimTemplateName",
						    cJSON_CreateString(tname)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if (!(w = hb_emit_new(HB_EMIT_TREE, NULL)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "apiVersion", api);
	hb_emit_str(w, "kind", "ResourceClaimTemplate");
	hb_emit_obj(w, "metadata");
	hb_emit_str(w, "name", tname);
	if (ns)
		hb_emit_str(w, "namespace", ns);
	hb_emit_obj(w, "labels");
	hb_emit_str(w, HB_LABEL_MANAGED_BY, HB_MANAGED_BY);
	hb_emit_str(w, HB_LABEL_JOB, name);
	hb_emit_end(w);
	hb_emit_end(w);
	hb_emit_obj(w, "spec");
	hb_emit_obj(w, "spec");
	devices(w, cfg, !strcmp(api, "resource.k8s.io/v1beta1"));
	hb_emit_end(w);
	hb_emit_end(w);
	hb_emit_end(w);
	rc = hb_emit_done(w);
	if (!rc)
		rc = hb_emit_take(w, out);
	hb_emit_free(w);
	return rc ? hb_err_set(err, rc, NULL, 0,
			       "cannot write the ResourceClaimTemplate: %s",
			       hb_strerror(rc))
		  : 0;
}
