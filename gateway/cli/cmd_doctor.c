/*
 * cmd_doctor.c - hpcbridge doctor [--json] [--job SCRIPT] [--config FILE]
 * [--user NAME]...: what a site must have in place before jobs run well
 * on it, checked against this node and both sides.
 *
 *   - This node (gateway/fabric): RDMA devices and ports, GPUs, GPUDirect,
 *     NCCL, the MPI libraries, the variables that turn RDMA off, and why a
 *     multi-node job would fall back to TCP.
 *   - Slurm: the nodes' features and gres, from `scontrol --json show
 *     nodes` (`sinfo --json` on Slurm 22.05, whose scontrol has none).
 *   - Kubernetes (remote.backend kubernetes), through the configuration's
 *     kubeconfig: the namespace burst jobs go to and its Pod Security
 *     labels; on OpenShift the uid range it assigns
 *     (openshift.io/sa.scc.uid-range) against the site's users; whether
 *     the MPIJob API is served and the MPI Operator's common failures in
 *     the namespace's MPIJobs; the Kueue LocalQueue; the nodes' GPUs and
 *     rdma/... resources; DRA DeviceClasses and ResourceSlices.
 *   - With --job, the script's MPI and fabric against the node, its image
 *     and both sides.
 * Each finding has a level (ok, warn, FAIL), a stable code, a message and
 * a hint; --json prints them with the node's inventory.  Exit 1 when
 * anything failed, 0 otherwise (warnings included).  It only reads, as
 * the user who runs it.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fabric.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/translate.h"

#define MAX_USERS 64
#define MAX_MPIJOBS 200
/* scontrol's answer: a node is a few KiB of JSON. */
#define SCONTROL_MAX (32u << 20)
#define SCONTROL_MS 15000

/* The ordinary users a site's login.defs gives by default. */
#define UID_MIN 1000
#define UID_MAX 60000

static const struct hb_kube_res ns_res = { "", "v1", "namespaces",
					   "Namespace" };
static const struct hb_kube_res lq_res = { "kueue.x-k8s.io", "v1beta1",
					   "localqueues", "LocalQueue" };

struct doctor {
	struct hb_fab_findings f;
	struct hb_kube *k;
	const char *ns;
	const struct hb_k8s_opts *k8s;
	struct hb_fab_side slurm, kube;
	bool have_slurm, have_kube;
};

#define say(dr, level, code, hint, ...) \
	hb_fab_add(&(dr)->f, level, code, hint, __VA_ARGS__)
#define OK   HB_FAB_OK
#define WARN HB_FAB_WARN
#define FAIL HB_FAB_FAIL

/* The users to check: those named, else the site's ordinary users. */
static size_t users_to_check(char **named, size_t nnamed,
			     struct passwd *out, char **names)
{
	size_t n = 0;
	struct passwd *pw;

	for (size_t i = 0; i < nnamed && n < MAX_USERS; i++) {
		if (!(pw = getpwnam(named[i]))) {
			fprintf(stderr, "hpcbridge doctor: no user %s\n",
				named[i]);
			continue;
		}
		out[n] = *pw;
		names[n++] = strdup(pw->pw_name);
	}
	if (nnamed)
		return n;
	setpwent();
	while ((pw = getpwent()) && n < MAX_USERS)
		if (pw->pw_uid >= UID_MIN && pw->pw_uid < UID_MAX) {
			out[n] = *pw;
			names[n++] = strdup(pw->pw_name);
		}
	endpwent();
	return n;
}

static void check_users(struct doctor *dr, const char *range, char **named,
			size_t nnamed)
{
	struct passwd users[MAX_USERS];
	char *names[MAX_USERS];
	size_t n, outside = 0;

	n = users_to_check(named, nnamed, users, names);
	for (size_t i = 0; i < n; i++) {
		if (hb_k8s_uid_in_range(range, users[i].pw_uid) == 1)
			say(dr, OK, "openshift.user_inside", NULL,
			    "user %s (uid %u) is inside the range",
			    names[i] ? names[i] : "?",
			    (unsigned)users[i].pw_uid);
		else if (outside++ < 10)
			say(dr, WARN, "openshift.user_outside",
			    "docs/kubernetes.md, OpenShift",
			    "user %s (uid %u) is outside the range: restricted-v2 "
			    "rejects its pods unless a site SCC allows its uid "
			    "(docs/kubernetes.md, OpenShift)",
			    names[i] ? names[i] : "?",
			    (unsigned)users[i].pw_uid);
		free(names[i]);
	}
	if (outside > 10)
		say(dr, WARN, "openshift.user_outside", NULL,
		    "%zu more users outside the range", outside - 10);
}

static void check_uids(struct doctor *dr, const cJSON *ann, char **named,
		       size_t nnamed)
{
	const char *range = NULL;

	hb_doc_get_str(ann, "openshift.io/sa.scc.uid-range", 256, 0, &range,
		       NULL);
	if (!range) {
		say(dr, OK, "openshift.no_range", NULL,
		    "namespace %s assigns no uid range (not "
		    "OpenShift): pods run as the user's own uid",
		    dr->ns);
		return;
	}
	if (hb_k8s_uid_in_range(range, 0) < 0) {
		say(dr, WARN, "openshift.range_unreadable", NULL,
		    "namespace %s: cannot read its uid range '%s'", dr->ns,
		    range);
		return;
	}
	say(dr, OK, "openshift.range", NULL,
	    "namespace %s assigns uids %s (OpenShift)", dr->ns, range);
	if (dr->k8s->uid_range && strcmp(dr->k8s->uid_range, range))
		say(dr, FAIL, "openshift.range_mismatch",
		    "set kubernetes.openshift.uid_range to the namespace's",
		    "kubernetes.openshift.uid_range is %s, not the namespace's "
		    "%s: placement would send jobs the namespace refuses, or "
		    "keep ones it takes",
		    dr->k8s->uid_range, range);
	else if (!dr->k8s->uid_range && !dr->k8s->openshift_scc)
		say(dr, WARN, "openshift.unconfigured",
		    "set kubernetes.openshift.uid_range or "
		    "kubernetes.openshift.scc",
		    "neither kubernetes.openshift.uid_range nor "
		    "kubernetes.openshift.scc is set: a job whose uid is "
		    "outside the range bursts, and its pods are refused");
	check_users(dr, range, named, nnamed);
}

static void check_namespace(struct doctor *dr, char **named, size_t nnamed)
{
	char sel[300];
	cJSON *items = NULL, *ns;
	const cJSON *labels, *ann;
	const char *enforce = NULL;
	struct hb_err err = { 0 };

	snprintf(sel, sizeof(sel), "metadata.name=%s", dr->ns);
	if (hb_kube_list_cluster(dr->k, &ns_res, NULL, sel, 0, &items, &err)) {
		say(dr, FAIL, "k8s.namespace_unreadable",
		    "the kubeconfig's user needs get/list on namespaces",
		    "cannot read namespace %s: %s", dr->ns, err.msg);
		return;
	}
	if (!(ns = cJSON_GetArrayItem(items, 0))) {
		say(dr, FAIL, "k8s.namespace_missing",
		    "create it, or set kubernetes.namespace",
		    "namespace %s does not exist", dr->ns);
		cJSON_Delete(items);
		return;
	}
	labels = hb_doc_get(ns, "metadata.labels");
	ann = hb_doc_get(ns, "metadata.annotations");
	hb_doc_get_str(labels, "pod-security.kubernetes.io/enforce", 64, 0,
		       &enforce, NULL);
	say(dr, OK, "k8s.namespace", NULL,
	    "namespace %s: Pod Security enforces %s%s", dr->ns,
	    enforce ? enforce : "nothing",
	    enforce ? "; hpcbridge's pods meet restricted" : "");
	check_uids(dr, ann, named, nnamed);
	cJSON_Delete(items);
}

/* The MPI Operator's common failures in the namespace's MPIJobs. */
static void check_mpijobs(struct doctor *dr, const cJSON *items)
{
	size_t before = dr->f.n;
	int n = cJSON_GetArraySize(items);
	const cJSON *j;

	cJSON_ArrayForEach(j, items)
		hb_fab_check_mpijob(j, &dr->f);
	if (dr->f.n == before)
		say(dr, OK, "mpiop.ok",
		    "when a launcher cannot reach its workers: the SSH keys "
		    "Secret mounted at spec.sshAuthMountPath (the .ssh of "
		    "the user the pods run as), and the workers' hostnames "
		    "through the job's headless Service; with hostNetwork, "
		    "one worker per node",
		    "%d MPIJob%s in %s: no hostNetwork port clash, SSH mount "
		    "mismatch or SSH failure",
		    n, n == 1 ? "" : "s", dr->ns);
}

static void check_apis(struct doctor *dr, const struct hb_config *cfg)
{
	struct hb_err err = { 0 };
	cJSON *page = NULL;
	const char *q = cfg->k8s.default_queue;

	if (hb_kube_list(dr->k, &hb_kube_mpijob, dr->ns, NULL, NULL,
			 MAX_MPIJOBS, NULL, &page, &err)) {
		say(dr, FAIL, "k8s.mpijob_api",
		    "install the MPI Operator (kubeflow.org/v2beta1 MPIJob)",
		    "MPIJobs (kubeflow.org/v2beta1) are not served: is the MPI "
		    "Operator installed? %s",
		    err.msg);
	} else {
		say(dr, OK, "k8s.mpijob_api", NULL,
		    "MPIJobs (kubeflow.org/v2beta1) are served");
		check_mpijobs(dr, hb_doc_get(page, "items"));
	}
	cJSON_Delete(page);
	if (!q) {
		say(dr, OK, "kueue.none", NULL,
		    "no Kueue queue configured (kubernetes.queue)");
		return;
	}
	memset(&err, 0, sizeof(err));
	if (hb_kube_get(dr->k, &lq_res, dr->ns, q, NULL, &err))
		say(dr, FAIL, "kueue.queue_missing",
		    "create the LocalQueue, or fix kubernetes.queues.default",
		    "Kueue LocalQueue %s/%s: %s", dr->ns, q, err.msg);
	else
		say(dr, OK, "kueue.queue", NULL,
		    "Kueue LocalQueue %s/%s exists", dr->ns, q);
}

/* Every object of a DRA kind at the newest version served; NULL when
 * resource.k8s.io serves none of them. */
static cJSON *list_dra(struct hb_kube *k, const char *plural,
		       const char *kind)
{
	static const char *const versions[] = { "v1", "v1beta2", "v1beta1" };

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct hb_kube_res res = { "resource.k8s.io", versions[i],
					   plural, kind };
		struct hb_err err = { 0 };
		cJSON *items = NULL;

		if (!hb_kube_list_cluster(k, &res, NULL, NULL, 500, &items,
					  &err))
			return items;
		cJSON_Delete(items);
	}
	return NULL;
}

/* What the cluster's nodes and DRA offer for the fabric. */
static void check_kube_fabric(struct doctor *dr, const struct hb_config *cfg)
{
	struct hb_err err = { 0 };
	cJSON *nodes = NULL, *classes, *slices;

	dr->kube.side = "kubernetes";
	if (hb_kube_list_cluster(dr->k, &hb_kube_node, NULL, NULL, 500,
				 &nodes, &err)) {
		say(dr, WARN, "k8s.nodes_unreadable",
		    "the kubeconfig's user needs list on nodes (a "
		    "ClusterRole) for this check",
		    "cannot list the cluster's nodes: %s", err.msg);
		cJSON_Delete(nodes);
		return;
	}
	classes = list_dra(dr->k, "deviceclasses", "DeviceClass");
	slices = list_dra(dr->k, "resourceslices", "ResourceSlice");
	if (!hb_fab_kube_nodes(nodes, &dr->kube, &err) &&
	    !hb_fab_kube_dra(classes, slices, &dr->kube, &err)) {
		dr->have_kube = true;
		hb_fab_check_side(&dr->kube, &dr->f);
		hb_fab_check_kube_rdma_config(&dr->kube, cfg->k8s.rdma_mode,
					      cfg->k8s.rdma_resource,
					      cfg->k8s.rdma_dra_class, &dr->f);
	} else {
		say(dr, WARN, "k8s.nodes_unreadable", NULL,
		    "cannot read the cluster's nodes: %s", err.msg);
	}
	cJSON_Delete(nodes);
	cJSON_Delete(classes);
	cJSON_Delete(slices);
}

static void check_kube(struct doctor *dr, const struct hb_config *cfg,
		       char **named, size_t nnamed)
{
	struct hb_kube_config *kc = NULL;
	struct hb_err err = { 0 };
	int rc;

	if (strcmp(cfg->remote_backend, "kubernetes")) {
		say(dr, OK, "k8s.none", NULL,
		    "remote.backend is %s: no cluster to check",
		    cfg->remote_backend);
		return;
	}
	rc = cfg->remote_kubeconfig &&
			     !strcmp(cfg->remote_kubeconfig, "in-cluster")
		     ? hb_kube_config_incluster(NULL, &kc, &err)
		     : hb_kube_config_load(cfg->remote_kubeconfig,
					   cfg->remote_context, &kc, &err);
	if (!rc)
		rc = hb_kube_new(kc, NULL, &dr->k, &err);
	if (rc) {
		say(dr, FAIL, "k8s.unreachable",
		    "check remote.kubeconfig and that the API server answers",
		    "cannot reach the cluster: %s", err.msg);
	} else {
		dr->k8s = &cfg->k8s;
		dr->ns = cfg->k8s.namespace ? cfg->k8s.namespace
					    : hb_kube_config_namespace(kc);
		if (!dr->ns)
			dr->ns = "default";
		say(dr, OK, "k8s.cluster", NULL, "cluster %s, namespace %s",
		    hb_kube_config_server(kc), dr->ns);
		check_namespace(dr, named, nnamed);
		check_apis(dr, cfg);
		check_kube_fabric(dr, cfg);
	}
	hb_kube_free(dr->k);
	dr->k = NULL;
	hb_kube_config_free(kc);
}

/* Slurm's nodes as JSON, as the user: `scontrol --json show nodes`, or,
 * on Slurm 22.05, whose scontrol has no --json, `sinfo --json` (whose
 * "nodes" are the same objects there).  0 with *doc set. */
static int slurm_nodes_json(cJSON **doc, struct hb_err *err)
{
	static const char *const tries[][4] = {
		{ "scontrol", "--json", "show", "nodes" },
		{ "sinfo", "--json", NULL, NULL },
	};
	int rc = HB_ENOENT;

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		const char *argv[5] = { tries[i][0], tries[i][1], tries[i][2],
					tries[i][3], NULL };
		struct hb_buf out;
		int st = -1;

		memset(err, 0, sizeof(*err));
		hb_buf_init(&out, SCONTROL_MAX);
		rc = hb_fab_run(argv, SCONTROL_MS, SCONTROL_MAX, &out, &st, err);
		if (!rc && st)
			rc = hb_err_set(err, HB_EUNAVAIL, NULL, 0,
					"%s --json exited %d", argv[0], st);
		if (!rc && !(*doc = cJSON_ParseWithLength(
				     out.data ? out.data : "", out.len)))
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"%s --json printed no JSON", argv[0]);
		if (!rc && !cJSON_IsArray(hb_doc_get(*doc, "nodes"))) {
			cJSON_Delete(*doc);
			*doc = NULL;
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"%s --json printed no nodes", argv[0]);
		}
		hb_buf_free(&out);
		/* A controller that does not answer one does not answer
		 * the other: one wait is enough. */
		if (!rc || rc == HB_ETIMEDOUT)
			return rc;
	}
	return rc;
}

/* What Slurm's nodes offer: no Slurm to reach is a warning. */
static void check_slurm(struct doctor *dr)
{
	struct hb_err err = { 0 };
	cJSON *doc = NULL;
	int rc;

	rc = slurm_nodes_json(&doc, &err);
	if (!rc)
		rc = hb_fab_slurm_nodes(doc, NULL, &dr->slurm, &err);
	if (rc) {
		say(dr, WARN, "slurm.unreachable",
		    "run doctor where scontrol reaches slurmctld to check "
		    "what Slurm's nodes offer",
		    "cannot read Slurm's nodes: %s", err.msg);
	} else {
		dr->have_slurm = true;
		hb_fab_check_side(&dr->slurm, &dr->f);
	}
	cJSON_Delete(doc);
}

/* --job: the script's needs against the node and the sides. */
static int check_job(struct doctor *dr, const char *path,
		     const struct hb_fab_node *node)
{
	struct hb_jobspec spec;
	struct hb_buf in;
	struct hb_err err = { 0 };
	int rc;

	hb_jobspec_init(&spec, path);
	rc = hb_cli_read_file(path, HB_SCRIPT_MAX, &in, &err);
	if (!rc)
		rc = hb_parse_any(in.data, in.len, path, NULL, &spec, &err);
	if (rc) {
		fprintf(stderr, "hpcbridge doctor: %s\n", err.msg);
	} else {
		hb_fab_check_job(&spec, path, node, &dr->f);
		if (dr->have_slurm)
			hb_fab_check_job_side(&spec, path, &dr->slurm, &dr->f);
		if (dr->have_kube)
			hb_fab_check_job_side(&spec, path, &dr->kube, &dr->f);
	}
	hb_buf_free(&in);
	hb_jobspec_free(&spec);
	return rc;
}

static const char *env_get(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

static cJSON *side_json(const struct hb_fab_side *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddNumberToObject(o, "nodes", (double)s->n) ||
	    !cJSON_AddNumberToObject(o, "nodes_rdma", (double)s->nodes_rdma) ||
	    !cJSON_AddNumberToObject(o, "nodes_gpu", (double)s->nodes_gpu) ||
	    !cJSON_AddNumberToObject(o, "gpus", (double)s->gpus) ||
	    !cJSON_AddBoolToObject(o, "dra_served", s->dra_served) ||
	    !cJSON_AddNumberToObject(o, "dra_rdma", (double)s->dra_rdma) ||
	    !cJSON_AddNumberToObject(o, "dra_gpu", (double)s->dra_gpu)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int print_json(const struct doctor *dr, const struct hb_fab_node *n,
		      int code)
{
	cJSON *o = cJSON_CreateObject(), *sides;
	struct hb_buf b;
	int rc = HB_ENOMEM;

	hb_buf_init(&b, 0);
	if (o && cJSON_AddItemToObject(o, "node", hb_fab_node_json(n)) &&
	    (sides = cJSON_AddObjectToObject(o, "sides")) &&
	    (!dr->have_slurm ||
	     cJSON_AddItemToObject(sides, "slurm", side_json(&dr->slurm))) &&
	    (!dr->have_kube ||
	     cJSON_AddItemToObject(sides, "kubernetes", side_json(&dr->kube))) &&
	    cJSON_AddItemToObject(o, "findings", hb_fab_findings_json(&dr->f)) &&
	    cJSON_AddStringToObject(o, "worst",
				    hb_fab_level_name(hb_fab_worst(&dr->f))) &&
	    cJSON_AddNumberToObject(o, "exit", code))
		rc = hb_doc_write_json(o, &b);
	if (!rc)
		fwrite(b.data, 1, b.len, stdout);
	else
		fprintf(stderr, "hpcbridge doctor: %s\n", hb_strerror(rc));
	hb_buf_free(&b);
	cJSON_Delete(o);
	return rc;
}

static void print_text(const struct doctor *dr)
{
	for (size_t i = 0; i < dr->f.n; i++) {
		const struct hb_fab_finding *x = &dr->f.v[i];

		printf("%-4s  %s [%s]\n",
		       x->level == HB_FAB_FAIL ? "FAIL"
					       : hb_fab_level_name(x->level),
		       x->msg, x->code);
		if (x->level != HB_FAB_OK && x->hint[0])
			printf("      hint: %s\n", x->hint);
	}
	if (dr->f.oom)
		printf("warn  some findings were lost: out of memory\n");
}

static const char usage[] =
	"usage: hpcbridge doctor [--json] [--job SCRIPT] [--config FILE]\n"
	"                        [--user NAME]...\n"
	"  check this node and both sides, and say in plain words what is\n"
	"  missing:\n"
	"  - this node: RDMA devices and ports (libibverbs), GPUs, GPUDirect,\n"
	"    NCCL, Open MPI (UCX, CUDA) and other MPIs, the variables that\n"
	"    turn RDMA off, and why a multi-node job would fall back to TCP\n"
	"  - Slurm: what its nodes' features and gres offer (scontrol or\n"
	"    sinfo --json)\n"
	"  - Kubernetes (remote.backend kubernetes): the namespace, Pod\n"
	"    Security, the OpenShift uid range (for the users named, else\n"
	"    every user of uid 1000-59999), the MPIJob API and the MPI\n"
	"    Operator's common failures, the Kueue LocalQueue, the nodes'\n"
	"    GPUs and rdma/ resources, DRA DeviceClasses and ResourceSlices\n"
	"  --job SCRIPT  also check a job script: the MPI it expects against\n"
	"                this node and its image, its fabric against both sides\n"
	"  --json        print the node's inventory and the findings as JSON\n"
	"  Each finding: ok, warn or FAIL, a code and a hint (docs/doctor.md).\n"
	"  Exit 0 when nothing failed (warnings included), 1 when something\n"
	"  did or the input is bad, 2 on a bad command line.\n";

int hb_cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "user", required_argument, NULL, 'u' },
		{ "job", required_argument, NULL, 'j' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *config = getenv("HPCBRIDGE_CONFIG"), *job = NULL;
	char *named[MAX_USERS];
	size_t nnamed = 0;
	struct hb_config cfg;
	struct hb_fab_provider prov;
	struct hb_fab_node node = { 0 };
	struct doctor dr = { 0 };
	struct hb_err err = { 0 };
	int opt, json = 0, code;

	while ((opt = getopt_long(argc, argv, "c:u:j:h", opts, NULL)) != -1) {
		if (opt == 'c')
			config = optarg;
		else if (opt == 'u' && nnamed < MAX_USERS)
			named[nnamed++] = optarg;
		else if (opt == 'j')
			job = optarg;
		else if (opt == 'J')
			json = 1;
		else {
			fputs(usage, opt == 'h' ? stdout : stderr);
			return opt == 'h' ? HB_EXIT_OK : HB_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		return HB_EXIT_USAGE;
	}
	memset(&cfg, 0, sizeof(cfg));
	if (hb_cli_load_config(config, &cfg, &err)) {
		fprintf(stderr, "hpcbridge doctor: %s\n", err.msg);
		hb_config_free(&cfg);
		return HB_EXIT_INPUT;
	}
	hb_fab_real_provider(NULL, &prov);
	if (hb_fab_inventory(&prov, &node, &err))
		say(&dr, WARN, "node.inventory", NULL,
		    "part of this node's inventory could not be read: %s",
		    err.msg);
	hb_fab_check_node(&node, env_get, NULL, &dr.f);
	check_slurm(&dr);
	check_kube(&dr, &cfg, named, nnamed);
	code = job && check_job(&dr, job, &node) ? HB_EXIT_INPUT
		: hb_fab_worst(&dr.f) == HB_FAB_FAIL ? HB_EXIT_INPUT
						     : HB_EXIT_OK;
	if (json) {
		if (print_json(&dr, &node, code))
			code = HB_EXIT_INPUT;
	} else {
		print_text(&dr);
	}
	hb_fab_findings_free(&dr.f);
	hb_fab_side_free(&dr.slurm);
	hb_fab_side_free(&dr.kube);
	hb_fab_node_free(&node);
	hb_config_free(&cfg);
	return code;
}
