/*
 * test_k8s_fabric.c - what the MPIJob asks for the job's hardware
 * (k8s_fabric.c): GPUs by type or vendor, the RDMA device through a
 * device plugin or a DRA ResourceClaimTemplate, IPC_LOCK and Open MPI's
 * UCX PML only for RDMA jobs, the warning a restricted namespace earns,
 * and the way back.  Every MPIJob is validated against the real CRD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/schema.h"
#include "hpcbridge/trainjob.h"
#include "testutil.h"

static struct hb_schema_set *schemas;

static int load_schemas(void **state)
{
	(void)state;
	schemas = hb_test_load_crds();
	return 0;
}

static int free_schemas(void **state)
{
	(void)state;
	hb_schema_set_free(schemas);
	return 0;
}

static void config(struct hb_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->k8s.namespace = "hpc";
	cfg->k8s.default_image = "docker.io/library/ubuntu:22.04";
	cfg->k8s.default_mpi = "OpenMPI";
	cfg->k8s.gpu_resource = "nvidia.com/gpu";
	cfg->k8s.launcher_cpus = 1;
	cfg->k8s.launcher_mem_mb = 512;
	cfg->k8s.max_array_jobs = 10;
}

static void new_spec(struct hb_jobspec *s, const char *script)
{
	struct hb_err err = { 0 };

	hb_jobspec_init(s, "job.sh");
	s->source = HB_SRC_SBATCH;
	hb_test_lineno = 0;
	s->script = hb_jobspec_strdup(s, script);
	s->script_len = (uint32_t)strlen(s->script);
	s->interpreter = hb_jobspec_strdup(s, "/bin/bash");
	hb_test_dir(s, HB_F_SCRIPT, "(script)");
	assert_int_equal(hb_jobspec_scan_body(s, &err), 0);
	HB_TEST_SET_STR(s, name, HB_F_NAME, "nccl");
	HB_TEST_SET_NUM(s, nodes_min, HB_F_NODES, 2);
}

/* An RDMA job, as the jobspec says it (--hpcbridge-fabric=rdma). */
static void rdma_spec(struct hb_jobspec *s, const char *script)
{
	new_spec(s, script);
	s->fabric = HB_FABRIC_RDMA;
	s->fabric_why = "--hpcbridge-fabric=rdma";
}

static cJSON *emit(const struct hb_jobspec *s, const struct hb_config *cfg,
		   struct hb_report *rep)
{
	struct hb_err err = { 0 };
	cJSON *doc = NULL;

	hb_report_init(rep, "MPIJob");
	if (hb_mpijob_emit(s, &cfg->k8s, -1, &doc, rep, &err))
		fail_msg("emit: %s", err.msg);
	hb_test_assert_valid(schemas, doc);
	return doc;
}

static int emit_err(const struct hb_jobspec *s, const struct hb_config *cfg,
		    struct hb_err *err)
{
	struct hb_report rep;
	cJSON *doc = NULL;
	int rc;

	memset(err, 0, sizeof(*err));
	hb_report_init(&rep, "MPIJob");
	rc = hb_mpijob_emit(s, &cfg->k8s, -1, &doc, &rep, err);
	hb_report_free(&rep);
	assert_null(doc);
	return rc;
}

static const cJSON *pod(const cJSON *doc, const char *replica)
{
	char p[128];

	snprintf(p, sizeof(p), "spec.mpiReplicaSpecs.%s.template.spec",
		 replica);
	return hb_doc_get(doc, p);
}

static const cJSON *ctr(const cJSON *doc, const char *replica)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
					  pod(doc, replica), "containers"),
				  0);
}

static const char *limit(const cJSON *doc, const char *key)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(ctr(doc, "Worker"),
							    "resources");
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(res, "limits");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(res, "requests");
	const char *lv =
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, key));
	const char *rv =
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, key));

	if (lv || rv)
		assert_string_equal(lv ? lv : "", rv ? rv : "");
	return lv;
}

/* The capabilities a container adds, as one text ("" for none). */
static const char *adds(const cJSON *c)
{
	static char buf[128];
	const cJSON *a = hb_doc_get(c, "securityContext.capabilities.add");
	const cJSON *x;

	buf[0] = '\0';
	cJSON_ArrayForEach (x, a)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
			 buf[0] ? "," : "", x->valuestring);
	return buf;
}

static const char *env_of(const cJSON *c, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach (e, cJSON_GetObjectItemCaseSensitive(c, "env"))
		if (!strcmp(cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(e,
								     "name")),
			    name))
			return cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(e, "value"));
	return NULL;
}

static bool warned(const struct hb_report *rep, const char *needle)
{
	for (uint32_t i = 0; i < rep->nwarnings; i++)
		if (strstr(rep->warnings[i], needle))
			return true;
	return false;
}

/* One emitted case is over. */
static void done(cJSON *doc, struct hb_report *rep, struct hb_jobspec *s)
{
	cJSON_Delete(doc);
	hb_report_free(rep);
	if (s)
		hb_jobspec_free(s);
}

/* A cluster whose RDMA is a device plugin's resource. */
static void plugin_config(struct hb_config *cfg, const char *resource)
{
	config(cfg);
	cfg->k8s.rdma_mode = "device_plugin";
	cfg->k8s.rdma_resource = resource;
}

/* ---------------------------------------------------------------- */

static void gpu_job(struct hb_jobspec *s, const char *type)
{
	new_spec(s, "#!/bin/bash\nsrun ./train\n");
	s->gpu_scope = HB_GPU_PER_NODE;
	s->gpu_type = type ? hb_jobspec_strdup(s, type) : NULL;
	HB_TEST_SET_NUM(s, gpus, HB_F_GPUS, 4);
}

static void test_gpu_vendor(void **state)
{
	static struct hb_kv map[] = { { "MI300X", "amd.com/gpu" },
				      { "h100", "nvidia.com/gpu" } };
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = { 0 };
	cJSON *doc;

	(void)state;
	config(&cfg);
	/* No map: AMD Instinct types by name, the rest as configured. */
	static const char *const amd[] = { "mi250x", "MI300X", "mi100",
					   "amd-w7900", "instinct" };
	for (size_t i = 0; i < sizeof(amd) / sizeof(amd[0]); i++) {
		gpu_job(&s, amd[i]);
		doc = emit(&s, &cfg, &rep);
		assert_string_equal(limit(doc, "amd.com/gpu"), "4");
		assert_null(limit(doc, "nvidia.com/gpu"));
		done(doc, &rep, &s);
	}
	static const char *const nv[] = { "a100", "mig", "milan", NULL };
	for (size_t i = 0; i < sizeof(nv) / sizeof(nv[0]); i++) {
		gpu_job(&s, nv[i]);
		doc = emit(&s, &cfg, &rep);
		assert_string_equal(limit(doc, "nvidia.com/gpu"), "4");
		assert_null(limit(doc, "amd.com/gpu"));
		done(doc, &rep, &s);
	}
	/* A map lists the cluster's types, in any case. */
	cfg.k8s.gpu_resources = map;
	cfg.k8s.ngpu_resources = 2;
	gpu_job(&s, "mi300x");
	doc = emit(&s, &cfg, &rep);
	assert_string_equal(limit(doc, "amd.com/gpu"), "4");
	done(doc, &rep, &s);
	/* Untyped GPUs: gpu_resource. */
	gpu_job(&s, NULL);
	doc = emit(&s, &cfg, &rep);
	assert_string_equal(limit(doc, "nvidia.com/gpu"), "4");
	done(doc, &rep, &s);
	/* A type it does not list cannot go, and the message says why. */
	gpu_job(&s, "mi250");
	assert_int_equal(emit_err(&s, &cfg, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "GPU type 'mi250'"));
	assert_non_null(strstr(err.msg, "kubernetes.gpu_resources lists "
					"MI300X, h100"));
	hb_jobspec_free(&s);
}

/* No RDMA asked: nothing of it, however the cluster is configured. */
static void test_no_rdma(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	for (int f = HB_FABRIC_AUTO; f <= HB_FABRIC_TCP; f++) {
		for (int m = 0; m < 2; m++) {
			config(&cfg);
			cfg.k8s.rdma_mode = m ? "dra" : "device_plugin";
			cfg.k8s.rdma_resource = "rdma/rdma_shared_device_a";
			cfg.k8s.rdma_dra_class = "dranet.net";
			new_spec(&s, "#!/bin/bash\nmpirun ./app\n");
			s.mpi = HB_MPI_OPENMPI;
			s.fabric = (uint8_t)f;
			doc = emit(&s, &cfg, &rep);
			assert_string_equal(adds(ctr(doc, "Worker")), "");
			assert_string_equal(adds(ctr(doc, "Launcher")), "");
			assert_null(limit(doc, "rdma/rdma_shared_device_a"));
			assert_null(cJSON_GetObjectItemCaseSensitive(
				pod(doc, "Worker"), "resourceClaims"));
			assert_null(env_of(ctr(doc, "Worker"), "OMPI_MCA_pml"));
			assert_false(warned(&rep, "IPC_LOCK"));
			cJSON *t = NULL;
			struct hb_err err = { 0 };

			assert_int_equal(
				hb_k8s_claim_template(doc, &cfg.k8s, &t, &err),
				0);
			assert_null(t);
			done(doc, &rep, &s);
		}
	}
}

static void test_device_plugin(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	plugin_config(&cfg, "rdma/rdma_shared_device_a");
	cfg.k8s.rdma_count = 2;
	rdma_spec(&s, "#!/bin/bash\nexport NCCL_IB_HCA=mlx5_0\n"
		      "mpirun ./app\n");
	s.mpi = HB_MPI_OPENMPI;
	doc = emit(&s, &cfg, &rep);
	assert_string_equal(limit(doc, "rdma/rdma_shared_device_a"), "2");
	/* IPC_LOCK on the workers, which run the ranks; never the
	 * launcher.  Everything else stays dropped. */
	assert_string_equal(adds(ctr(doc, "Worker")), "IPC_LOCK");
	assert_string_equal(adds(ctr(doc, "Launcher")), "");
	assert_string_equal(
		cJSON_GetArrayItem(
			hb_doc_get(ctr(doc, "Worker"),
				   "securityContext.capabilities.drop"),
			0)
			->valuestring,
		"ALL");
	/* Open MPI goes through UCX, on every rank's container. */
	assert_string_equal(env_of(ctr(doc, "Worker"), "OMPI_MCA_pml"), "ucx");
	assert_string_equal(env_of(ctr(doc, "Launcher"), "OMPI_MCA_pml"),
			    "ucx");
	assert_string_equal(env_of(ctr(doc, "Launcher"), "NCCL_IB_HCA"),
			    "mlx5_0");
	/* The namespace is restricted by default: said, naming the key. */
	assert_true(warned(&rep, "IPC_LOCK"));
	assert_true(warned(&rep, "kubernetes.pod_security"));
	assert_null(cJSON_GetObjectItemCaseSensitive(pod(doc, "Worker"),
						     "resourceClaims"));
	done(doc, &rep, &s);

	/* The script's own PML wins; MPICH gets none. */
	rdma_spec(&s, "#!/bin/bash\nexport OMPI_MCA_pml=ob1\nmpirun ./app\n");
	s.mpi = HB_MPI_OPENMPI;
	doc = emit(&s, &cfg, &rep);
	assert_string_equal(env_of(ctr(doc, "Worker"), "OMPI_MCA_pml"), "ob1");
	done(doc, &rep, &s);
	rdma_spec(&s, "#!/bin/bash\nmpirun --mca pml ob1 ./app\n");
	s.mpi = HB_MPI_OPENMPI;
	doc = emit(&s, &cfg, &rep);
	assert_null(env_of(ctr(doc, "Worker"), "OMPI_MCA_pml"));
	done(doc, &rep, &s);
	rdma_spec(&s, "#!/bin/bash\nmpiexec ./app\n");
	s.mpi = HB_MPI_MPICH;
	doc = emit(&s, &cfg, &rep);
	assert_null(env_of(ctr(doc, "Worker"), "OMPI_MCA_pml"));
	assert_string_equal(adds(ctr(doc, "Worker")), "IPC_LOCK");
	done(doc, &rep, &s);
}

static void test_restricted_warning(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	plugin_config(&cfg, "rdma/hca_shared_devices_a");
	rdma_spec(&s, "#!/bin/bash\nmpirun ./app\n");
	/* A privileged namespace, no SCC: nothing to say. */
	cfg.k8s.pod_security = "privileged";
	doc = emit(&s, &cfg, &rep);
	assert_false(warned(&rep, "IPC_LOCK"));
	done(doc, &rep, NULL);
	/* OpenShift's restricted-v2 forbids it, whatever the level. */
	cfg.k8s.openshift_scc = "restricted-v2";
	doc = emit(&s, &cfg, &rep);
	assert_true(warned(&rep, "restricted-v2 SCC forbids"));
	assert_true(warned(&rep, "kubernetes.openshift.scc"));
	done(doc, &rep, NULL);
	/* An SCC the site made for it: nothing to say. */
	cfg.k8s.openshift_scc = "hpc-rdma";
	doc = emit(&s, &cfg, &rep);
	assert_false(warned(&rep, "IPC_LOCK"));
	done(doc, &rep, &s);
}

static const char *get_str(const cJSON *o, const char *path)
{
	return cJSON_GetStringValue(hb_doc_get(o, path));
}

static void test_dra(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = { 0 };
	cJSON *doc, *t = NULL;
	const cJSON *req, *claims;

	(void)state;
	config(&cfg);
	cfg.k8s.rdma_mode = "dra";
	cfg.k8s.rdma_dra_class = "dranet.net";
	cfg.k8s.rdma_dra_api = "resource.k8s.io/v1";
	cfg.k8s.rdma_dra_driver = "dra.net";
	cfg.k8s.rdma_dra_ifname = "rdma0";
	cfg.k8s.rdma_dra_selector = "device.attributes[\"dra.net\"].rdma == "
				    "true";
	rdma_spec(&s, "#!/bin/bash\nmpirun ./app\n");
	s.mpi = HB_MPI_OPENMPI;
	doc = emit(&s, &cfg, &rep);
	/* The worker pod claims from the job's template; its container
	 * uses the claim; the launcher has none. */
	claims = cJSON_GetObjectItemCaseSensitive(pod(doc, "Worker"),
						  "resourceClaims");
	assert_int_equal(cJSON_GetArraySize(claims), 1);
	assert_string_equal(get_str(cJSON_GetArrayItem(claims, 0), "name"),
			    "rdma");
	assert_string_equal(get_str(cJSON_GetArrayItem(claims, 0),
				    "resourceClaimTemplateName"),
			    "nccl-rdma");
	assert_string_equal(
		get_str(cJSON_GetArrayItem(hb_doc_get(ctr(doc, "Worker"),
						      "resources.claims"),
					   0),
			"name"),
		"rdma");
	assert_null(cJSON_GetObjectItemCaseSensitive(pod(doc, "Launcher"),
						     "resourceClaims"));
	assert_null(hb_doc_get(ctr(doc, "Launcher"), "resources.claims"));
	assert_string_equal(adds(ctr(doc, "Worker")), "IPC_LOCK");

	/* Renamed, as the daemon names it after the job's id: the
	 * template follows. */
	cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "name",
		cJSON_CreateString("hb-42"));
	assert_int_equal(hb_k8s_claim_template(doc, &cfg.k8s, &t, &err), 0);
	assert_non_null(t);
	assert_string_equal(get_str(t, "apiVersion"), "resource.k8s.io/v1");
	assert_string_equal(get_str(t, "kind"), "ResourceClaimTemplate");
	assert_string_equal(get_str(t, "metadata.name"), "hb-42-rdma");
	assert_string_equal(get_str(t, "metadata.namespace"), "hpc");
	assert_string_equal(get_str(cJSON_GetArrayItem(claims, 0),
				    "resourceClaimTemplateName"),
			    "hb-42-rdma");
	req = cJSON_GetArrayItem(hb_doc_get(t, "spec.spec.devices.requests"),
				 0);
	assert_string_equal(get_str(req, "name"), "nic");
	assert_string_equal(get_str(req, "exactly.deviceClassName"),
			    "dranet.net");
	assert_string_equal(get_str(req, "exactly.allocationMode"),
			    "ExactCount");
	assert_int_equal(hb_doc_get(req, "exactly.count")->valueint, 1);
	assert_string_equal(
		get_str(cJSON_GetArrayItem(hb_doc_get(req, "exactly.selectors"),
					   0),
			"cel.expression"),
		"device.attributes[\"dra.net\"].rdma == true");
	/* DraNet names the interface through its opaque configuration. */
	req = cJSON_GetArrayItem(hb_doc_get(t, "spec.spec.devices.config"), 0);
	assert_string_equal(
		cJSON_GetArrayItem(hb_doc_get(req, "requests"), 0)->valuestring,
		"nic");
	assert_string_equal(get_str(req, "opaque.driver"), "dra.net");
	assert_string_equal(get_str(req, "opaque.parameters.interface.name"),
			    "rdma0");
	cJSON_Delete(t);
	done(doc, &rep, NULL);

	/* Two NICs with a name: one request each, numbered names; v1beta1
	 * has no "exactly". */
	cfg.k8s.rdma_count = 2;
	cfg.k8s.rdma_dra_api = "resource.k8s.io/v1beta1";
	cfg.k8s.rdma_dra_selector = NULL;
	doc = emit(&s, &cfg, &rep);
	assert_int_equal(hb_k8s_claim_template(doc, &cfg.k8s, &t, &err), 0);
	assert_string_equal(get_str(t, "apiVersion"),
			    "resource.k8s.io/v1beta1");
	req = hb_doc_get(t, "spec.spec.devices.requests");
	assert_int_equal(cJSON_GetArraySize(req), 2);
	assert_string_equal(get_str(cJSON_GetArrayItem(req, 1), "name"),
			    "nic-1");
	assert_string_equal(
		get_str(cJSON_GetArrayItem(req, 1), "deviceClassName"),
		"dranet.net");
	assert_null(hb_doc_get(cJSON_GetArrayItem(req, 1), "exactly"));
	assert_null(hb_doc_get(cJSON_GetArrayItem(req, 1), "selectors"));
	req = hb_doc_get(t, "spec.spec.devices.config");
	assert_string_equal(get_str(cJSON_GetArrayItem(req, 1),
				    "opaque.parameters.interface.name"),
			    "rdma01");
	cJSON_Delete(t);
	done(doc, &rep, &s);
}

static void test_misconfigured(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_err err = { 0 };
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	config(&cfg);
	rdma_spec(&s, "#!/bin/bash\nmpirun ./app\n");
	s.mpi = HB_MPI_OPENMPI;
	/* A cluster without RDMA: placement keeps the job off it; asked
	 * anyway, the manifest has nothing of RDMA and the report says
	 * so. */
	doc = emit(&s, &cfg, &rep);
	assert_true(warned(&rep, "--hpcbridge-fabric=rdma"));
	assert_true(warned(&rep, "kubernetes.rdma.mode"));
	assert_string_equal(adds(ctr(doc, "Worker")), "");
	assert_null(env_of(ctr(doc, "Worker"), "OMPI_MCA_pml"));
	done(doc, &rep, NULL);
	/* A cluster half configured is an error naming the key. */
	cfg.k8s.rdma_mode = "device_plugin";
	assert_int_equal(emit_err(&s, &cfg, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "kubernetes.rdma.resource"));
	cfg.k8s.rdma_mode = "dra";
	assert_int_equal(emit_err(&s, &cfg, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "kubernetes.rdma.dra.device_class"));
	cfg.k8s.rdma_dra_class = "dranet.net";
	cfg.k8s.rdma_dra_ifname = "abcdefghijklmn"; /* 14 + a digit: 15 */
	cfg.k8s.rdma_count = 2;
	doc = emit(&s, &cfg, &rep);
	done(doc, &rep, NULL);
	cfg.k8s.rdma_dra_ifname = "abcdefghijklmno";
	assert_int_equal(emit_err(&s, &cfg, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "kubernetes.rdma.dra.interface_name"));
	hb_jobspec_free(&s);
}

/* Read back: the PML we added does not become the job's own, the
 * script's variables do. */
static void test_read_back(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s, back;
	struct hb_report rep;
	struct hb_err err = { 0 };
	cJSON *doc;

	(void)state;
	config(&cfg);
	cfg.k8s.rdma_mode = "dra";
	cfg.k8s.rdma_dra_class = "dranet.net";
	rdma_spec(&s, "#!/bin/bash\nexport UCX_NET_DEVICES=mlx5_0:1\n"
		      "mpirun ./app\n");
	s.mpi = HB_MPI_OPENMPI;
	doc = emit(&s, &cfg, &rep);
	hb_jobspec_init(&back, "back.yaml");
	if (hb_mpijob_parse(doc, &back, &err))
		fail_msg("parse: %s", err.msg);
	assert_int_equal(back.nenv, 1);
	assert_string_equal(back.env[0].name, "UCX_NET_DEVICES");
	hb_jobspec_free(&back);
	done(doc, &rep, &s);
}

/* A TrainJob's pods are its runtime's: the device plugin's resource goes
 * into resourcesPerNode with a warning about IPC_LOCK; a DRA claim
 * cannot be added. */
static void test_trainjob(void **state)
{
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = { 0 };
	cJSON *doc = NULL;

	(void)state;
	plugin_config(&cfg, "rdma/rdma_shared_device_a");
	cfg.k8s.trainjob_runtime = "mpi-distributed";
	rdma_spec(&s, "#!/bin/bash\nmpirun ./app\n");
	hb_report_init(&rep, "TrainJob");
	if (hb_trainjob_emit(&s, &cfg.k8s, -1, &doc, &rep, &err))
		fail_msg("emit: %s", err.msg);
	hb_test_assert_valid(schemas, doc);
	assert_string_equal(get_str(doc, "spec.trainer.resourcesPerNode.limits."
					 "rdma/rdma_shared_device_a"),
			    "1");
	assert_true(warned(&rep, "a TrainJob cannot add it"));
	done(doc, &rep, NULL);
	doc = NULL;
	cfg.k8s.rdma_mode = "dra";
	cfg.k8s.rdma_dra_class = "dranet.net";
	hb_report_init(&rep, "TrainJob");
	assert_int_equal(hb_trainjob_emit(&s, &cfg.k8s, -1, &doc, &rep, &err),
			 HB_EINVAL);
	assert_null(doc);
	assert_non_null(strstr(err.msg, "a TrainJob's pods are its runtime's"));
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* What the job or the site writes reaches the manifests as values only:
 * a hostile GPU type picks a resource name and is written nowhere new; a
 * selector full of YAML's own characters comes back as it was. */
static void test_hostile(void **state)
{
	static const char *const evil =
		"mi3\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}";
	static const char *const sel =
		"device.attributes[\"dra.net\"].ifName == 'a: b' || "
		"x == \"}\\n---\\nkind: Secret\" # c";
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = { 0 };
	struct hb_buf y;
	cJSON *doc, *t = NULL, *back = NULL;

	(void)state;
	config(&cfg);
	cfg.k8s.rdma_mode = "dra";
	cfg.k8s.rdma_dra_class = "dranet.net";
	cfg.k8s.rdma_dra_selector = sel;
	gpu_job(&s, evil);
	s.fabric = HB_FABRIC_RDMA;
	doc = emit(&s, &cfg, &rep);
	assert_string_equal(limit(doc, "amd.com/gpu"), "4");
	assert_int_equal(hb_k8s_claim_template(doc, &cfg.k8s, &t, &err), 0);
	hb_buf_init(&y, 0);
	assert_int_equal(hb_doc_write_yaml(doc, &y), 0);
	assert_int_equal(hb_doc_write_yaml(t, &y), 0);
	assert_null(strstr(y.data, "\nkind: Secret"));
	assert_null(strstr(y.data, "\n---"));
	hb_buf_reset(&y);
	assert_int_equal(hb_doc_write_yaml(t, &y), 0);
	assert_int_equal(hb_doc_parse(y.data, y.len, "t.yaml", &back, &err), 0);
	assert_string_equal(
		get_str(cJSON_GetArrayItem(
				hb_doc_get(
					cJSON_GetArrayItem(
						hb_doc_get(back,
							   "spec.spec.devices."
							   "requests"),
						0),
					"exactly.selectors"),
				0),
			"cel.expression"),
		sel);
	hb_buf_free(&y);
	cJSON_Delete(back);
	cJSON_Delete(t);
	done(doc, &rep, &s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_vendor),
		cmocka_unit_test(test_no_rdma),
		cmocka_unit_test(test_device_plugin),
		cmocka_unit_test(test_restricted_warning),
		cmocka_unit_test(test_dra),
		cmocka_unit_test(test_misconfigured),
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_trainjob),
		cmocka_unit_test(test_hostile),
	};
	return cmocka_run_group_tests(tests, load_schemas, free_schemas);
}
