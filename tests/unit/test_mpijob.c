/*
 * test_mpijob.c - the MPIJob mapping contract, item by item, on
 * hand-built jobspecs; every field's fate; the round trip jobspec ->
 * MPIJob -> jobspec; reading the operator's own examples and hostile
 * manifests; golden files.  Every manifest emitted here is validated
 * against the real CRD, strictly, with the operator's rules.
 *
 * HB_UPDATE_GOLDEN=1 rewrites tests/golden/ instead of comparing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/launcher.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/schema.h"
#include "hpcbridge/translate.h"
#include "testutil.h"
#include "translators/k8s/k8s_int.h"

/* ---------------------------------------------------------------- */
/* Fixtures                                                         */
/* ---------------------------------------------------------------- */

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

/* Strictly valid, and passes the controllers' own validation. */
static void assert_valid(const cJSON *doc)
{
	hb_test_assert_valid(schemas, doc);
}

static struct hb_kv module_images[] = {
    {"openmpi/4.1.5", "ghcr.io/site/openmpi:4.1.5"},
    {"intel-oneapi-mpi", "ghcr.io/site/impi:2021"},
};
static struct hb_kv partition_images[] = {{"gpu", "ghcr.io/site/cuda:12"}};
static struct hb_kv container_images[] = {{"lammps", "ghcr.io/site/lammps:2"}};
static struct hb_kv partition_queues[] = {{"gpu", "gpu-queue"},
					  {"debug", "debug-queue"}};
static struct hb_kv ib[] = {{"feature.node/ib", "true"}};
static struct hb_kv a100[] = {{"nvidia.com/gpu.product", "A100"}};
static struct hb_selector_map cons[] = {{"ib", ib, 1}};
static struct hb_selector_map gsel[] = {{"a100", a100, 1}};

static void config(struct hb_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->k8s.namespace = "hpc";
	cfg->k8s.default_image = "docker.io/library/ubuntu:22.04";
	cfg->k8s.module_images = module_images;
	cfg->k8s.nmodule_images = 2;
	cfg->k8s.partition_images = partition_images;
	cfg->k8s.npartition_images = 1;
	cfg->k8s.container_images = container_images;
	cfg->k8s.ncontainer_images = 1;
	cfg->k8s.partition_queues = partition_queues;
	cfg->k8s.npartition_queues = 2;
	cfg->k8s.default_mpi = "OpenMPI";
	cfg->k8s.trainjob_runtime = "mpi-distributed";
	cfg->k8s.ssh_auth_mount_path = "/home/mpiuser/.ssh";
	cfg->k8s.gpu_resource = "nvidia.com/gpu";
	cfg->k8s.launcher_cpus = 1;
	cfg->k8s.launcher_mem_mb = 512;
	cfg->k8s.constraint_selectors = cons;
	cfg->k8s.nconstraint_selectors = 1;
	cfg->k8s.gpu_type_selectors = gsel;
	cfg->k8s.ngpu_type_selectors = 1;
	cfg->k8s.max_array_jobs = 10;
}

/* Building jobspecs as a parser would: each field from a directive. */

static const char *const body = "#!/bin/bash\n"
				"module load openmpi/4.1.5\n"
				"export NCCL_DEBUG=INFO\n"
				"echo $$ $(hostname) ${SLURM_JOB_ID}\n"
				"mpirun ./app --in 'it''s'\n";

static void new_spec(struct hb_jobspec *s, const char *script)
{
	struct hb_err err = {0};

	hb_jobspec_init(s, "job.sh");
	s->source = HB_SRC_SBATCH;
	hb_test_lineno = 0;
	s->script = hb_jobspec_strdup(s, script ? script : body);
	s->script_len = (uint32_t)strlen(s->script);
	s->interpreter = hb_jobspec_strdup(s, "/bin/bash");
	hb_test_dir(s, HB_F_SCRIPT, "(script)");
	assert_int_equal(hb_jobspec_scan_body(s, &err), 0);
}

static cJSON *emit_idx(const struct hb_jobspec *s, const struct hb_config *cfg,
		       int64_t idx, struct hb_report *rep)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;

	hb_report_init(rep, "MPIJob");
	if (hb_mpijob_emit(s, &cfg->k8s, idx, &doc, rep, &err))
		fail_msg("emit: %s", err.msg);
	assert_non_null(doc);
	assert_valid(doc);
	return doc;
}

static cJSON *emit(const struct hb_jobspec *s, struct hb_report *rep)
{
	struct hb_config cfg;

	config(&cfg);
	return emit_idx(s, &cfg, -1, rep);
}

static int emit_err(const struct hb_jobspec *s, const struct hb_config *cfg,
		    int64_t idx, struct hb_err *err)
{
	struct hb_report rep;
	cJSON *doc = NULL;
	int rc;

	memset(err, 0, sizeof(*err));
	hb_report_init(&rep, "MPIJob");
	rc = hb_mpijob_emit(s, &cfg->k8s, idx, &doc, &rep, err);
	assert_null(doc);
	hb_report_free(&rep);
	return rc;
}

static const char *str_at(const cJSON *doc, const char *path)
{
	const cJSON *n = hb_doc_get(doc, path);

	if (!cJSON_IsString(n))
		fail_msg("%s: not a string", path);
	return n->valuestring;
}

static double num_at(const cJSON *doc, const char *path)
{
	const cJSON *n = hb_doc_get(doc, path);

	if (!cJSON_IsNumber(n))
		fail_msg("%s: not a number", path);
	return n->valuedouble;
}

static const cJSON *container(const cJSON *doc, const char *replica)
{
	char p[128];

	snprintf(p, sizeof(p), "spec.mpiReplicaSpecs.%s.template.spec",
		 replica);
	return cJSON_GetArrayItem(
	    cJSON_GetObjectItemCaseSensitive(hb_doc_get(doc, p), "containers"),
	    0);
}

/* Worker resources: requests equal limits, and the limit of key. */
static const char *worker_res(const cJSON *doc, const char *key)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(
	    container(doc, "Worker"), "resources");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(r, "requests");
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(r, "limits");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(req, key);
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(lim, key);

	assert_true(cJSON_Compare(req, lim, 1));
	if (!a)
		return NULL;
	assert_non_null(b);
	return cJSON_GetStringValue(b);
}

static const char *annotation(const cJSON *doc, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    hb_doc_get(doc, "metadata.annotations"), key));
}

static const char *label(const cJSON *doc, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    hb_doc_get(doc, "metadata.labels"), key));
}

static const char *env_of(const cJSON *c, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach (it, cJSON_GetObjectItemCaseSensitive(c, "env")) {
		if (strcmp(cJSON_GetStringValue(
			       cJSON_GetObjectItemCaseSensitive(it, "name")),
			   name) == 0)
			return cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(it, "value"));
	}
	return NULL;
}

/* ---------------------------------------------------------------- */
/* The mapping contract                                             */
/* ---------------------------------------------------------------- */

static void test_shape(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 3);
	HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 4);
	HB_TEST_SET_NUM(&s, cpus_per_task, HB_F_CPUS_PER_TASK, 2);
	doc = emit(&s, &rep);
	assert_int_equal(num_at(doc, "spec.mpiReplicaSpecs.Worker.replicas"),
			 3);
	assert_int_equal(num_at(doc, "spec.slotsPerWorker"), 4);
	assert_string_equal(worker_res(doc, "cpu"), "8");
	assert_null(worker_res(doc, "memory"));
	assert_null(worker_res(doc, "nvidia.com/gpu"));
	assert_int_equal(rep.fate[HB_F_NODES].kind, HB_FATE_MAPPED);
	assert_string_equal(rep.fate[HB_F_NODES].target,
			    "spec.mpiReplicaSpecs.Worker.replicas");
	assert_int_equal(rep.fate[HB_F_CPUS_PER_TASK].kind, HB_FATE_MAPPED);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* --ntasks alone: ceil(ntasks / nodes) slots, the rest reported. */
	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 3);
	HB_TEST_SET_NUM(&s, ntasks, HB_F_NTASKS, 10);
	doc = emit(&s, &rep);
	assert_int_equal(num_at(doc, "spec.slotsPerWorker"), 4);
	assert_string_equal(worker_res(doc, "cpu"), "4");
	assert_int_equal(rep.fate[HB_F_NTASKS].kind, HB_FATE_PARTIAL);
	assert_string_equal(annotation(doc, "hpcbridge.io/request"),
			    "nodes=3 ntasks=10");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* Nothing asked: one worker, one slot, one CPU. */
	new_spec(&s, NULL);
	doc = emit(&s, &rep);
	assert_int_equal(num_at(doc, "spec.mpiReplicaSpecs.Worker.replicas"),
			 1);
	assert_int_equal(num_at(doc, "spec.slotsPerWorker"), 1);
	assert_string_equal(worker_res(doc, "cpu"), "1");
	assert_string_equal(annotation(doc, "hpcbridge.io/request"), "");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void mem_case(uint8_t kind, uint64_t mb, uint32_t nodes, uint32_t tpn,
		     uint32_t cpt, uint8_t gscope, uint32_t gpus,
		     uint64_t worker_mem, const char *want, uint8_t want_fate)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	const char *got;
	cJSON *doc;

	new_spec(&s, NULL);
	if (nodes)
		HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, nodes);
	if (tpn)
		HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, tpn);
	if (cpt)
		HB_TEST_SET_NUM(&s, cpus_per_task, HB_F_CPUS_PER_TASK, cpt);
	s.mem_kind = kind;
	HB_TEST_SET_NUM(&s, mem_mb, HB_F_MEM, mb);
	if (gscope) {
		s.gpu_scope = gscope;
		HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, gpus);
	}
	config(&cfg);
	cfg.k8s.worker_mem_mb = worker_mem;
	doc = emit_idx(&s, &cfg, -1, &rep);
	got = worker_res(doc, "memory");
	if (want) {
		if (!got || strcmp(got, want))
			fail_msg("memory: want %s, got %s", want,
				 got ? got : "(none)");
	} else {
		assert_null(got);
	}
	assert_int_equal(rep.fate[HB_F_MEM].kind, want_fate);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_memory(void **state)
{
	(void)state;
	/* --mem: per node. */
	mem_case(HB_MEM_PER_NODE, 4096, 2, 0, 0, 0, 0, 0, "4Gi",
		 HB_FATE_MAPPED);
	/* --mem-per-cpu x CPUs per node (4 tasks x 2 CPUs). */
	mem_case(HB_MEM_PER_CPU, 2048, 2, 4, 2, 0, 0, 0, "16Gi",
		 HB_FATE_MAPPED);
	/* --mem-per-gpu x GPUs per node. */
	mem_case(HB_MEM_PER_GPU, 10240, 2, 0, 0, HB_GPU_PER_NODE, 2, 0, "20Gi",
		 HB_FATE_MAPPED);
	/* Per GPU with GPUs per task: 3 tasks x 1 GPU x 1000 MiB. */
	mem_case(HB_MEM_PER_GPU, 1000, 1, 3, 0, HB_GPU_PER_TASK, 1, 0, "3000Mi",
		 HB_FATE_MAPPED);
	/* Torque job-wide mem / nodes. */
	mem_case(HB_MEM_JOB, 10000, 4, 0, 0, 0, 0, 0, "2500Mi", HB_FATE_MAPPED);
	/* ... rounded up when it does not divide. */
	mem_case(HB_MEM_JOB, 10001, 4, 0, 0, 0, 0, 0, "2501Mi",
		 HB_FATE_PARTIAL);
	/* Torque pmem x processes per node. */
	mem_case(HB_MEM_PER_PROCESS, 1000, 2, 4, 0, 0, 0, 0, "4000Mi",
		 HB_FATE_MAPPED);
	/* --mem=0: the worker shape's memory when configured... */
	mem_case(HB_MEM_PER_NODE, 0, 2, 0, 0, 0, 0, 65536, "64Gi",
		 HB_FATE_PARTIAL);
	/* ... else no memory at all, never "0". */
	mem_case(HB_MEM_PER_NODE, 0, 2, 0, 0, 0, 0, 0, NULL, HB_FATE_PARTIAL);
	/* Per GPU without GPUs comes to nothing: unset, reported. */
	mem_case(HB_MEM_PER_GPU, 4096, 1, 0, 0, 0, 0, 0, NULL, HB_FATE_PARTIAL);
}

static void gpu_case(uint8_t scope, uint32_t gpus, uint32_t nodes, uint32_t tpn,
		     const char *want, uint8_t want_fate)
{
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;
	const char *got;

	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, nodes);
	if (tpn)
		HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, tpn);
	s.gpu_scope = scope;
	HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, gpus);
	doc = emit(&s, &rep);
	got = worker_res(doc, "nvidia.com/gpu");
	if (want)
		assert_string_equal(got, want);
	else
		assert_null(got);
	assert_int_equal(rep.fate[HB_F_GPUS].kind, want_fate);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_gpus(void **state)
{
	(void)state;
	gpu_case(HB_GPU_PER_NODE, 4, 2, 0, "4", HB_FATE_MAPPED);
	gpu_case(HB_GPU_PER_JOB, 8, 2, 0, "4", HB_FATE_MAPPED);
	/* 5 over 2 workers: 3 each, reported. */
	gpu_case(HB_GPU_PER_JOB, 5, 2, 0, "3", HB_FATE_PARTIAL);
	gpu_case(HB_GPU_PER_TASK, 1, 2, 4, "4", HB_FATE_MAPPED);
	gpu_case(HB_GPU_PER_NODE, 0, 1, 0, NULL, HB_FATE_MAPPED);
}

static void test_time_and_mpi(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	struct hb_err err;
	cJSON *doc;

	(void)state;
	new_spec(&s, "#!/bin/sh\n./serial\n");
	HB_TEST_SET_NUM(&s, time_limit, HB_F_TIME_LIMIT, 5400);
	s.mpi = HB_MPI_INTEL;
	doc = emit(&s, &rep);
	assert_int_equal(num_at(doc, "spec.runPolicy.activeDeadlineSeconds"),
			 5400);
	assert_string_equal(str_at(doc, "spec.mpiImplementation"), "Intel");
	assert_string_equal(str_at(doc, "spec.runPolicy.cleanPodPolicy"),
			    "Running");
	assert_int_equal(num_at(doc, "spec.runPolicy.backoffLimit"), 0);
	assert_null(annotation(doc, "hpcbridge.io/mpi"));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* UNLIMITED: no deadline; no MPI named: the configured default. */
	new_spec(&s, "#!/bin/sh\n./serial\n");
	HB_TEST_SET_NUM(&s, time_limit, HB_F_TIME_LIMIT, HB_TIME_UNLIMITED);
	config(&cfg);
	cfg.k8s.default_mpi = "MPICH";
	doc = emit_idx(&s, &cfg, -1, &rep);
	assert_null(hb_doc_get(doc, "spec.runPolicy.activeDeadlineSeconds"));
	assert_string_equal(annotation(doc, "hpcbridge.io/time-limit"),
			    "UNLIMITED");
	assert_string_equal(str_at(doc, "spec.mpiImplementation"), "MPICH");
	assert_string_equal(annotation(doc, "hpcbridge.io/mpi"), "default");
	assert_int_equal(rep.fate[HB_F_TIME_LIMIT].kind, HB_FATE_MAPPED);
	cJSON_Delete(doc);
	hb_report_free(&rep);

	/* A default MPI the operator does not know is a config error. */
	cfg.k8s.default_mpi = "LAM";
	assert_int_equal(emit_err(&s, &cfg, -1, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "default_mpi"));
	hb_jobspec_free(&s);
}

static void test_metadata(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	cJSON *doc;

	(void)state;
	new_spec(&s, NULL);
	HB_TEST_SET_STR(&s, name, HB_F_NAME, "My Job");
	HB_TEST_SET_STR(&s, partition, HB_F_PARTITION, "debug");
	HB_TEST_SET_STR(&s, user, HB_F_USER, "alice");
	HB_TEST_SET_STR(&s, account, HB_F_ACCOUNT, "proj1");
	doc = emit(&s, &rep);
	assert_string_equal(str_at(doc, "metadata.name"), "my-job");
	assert_string_equal(str_at(doc, "metadata.namespace"), "hpc");
	assert_string_equal(label(doc, "kueue.x-k8s.io/queue-name"),
			    "debug-queue");
	assert_string_equal(label(doc, "app.kubernetes.io/managed-by"),
			    "hpcbridge");
	assert_string_equal(label(doc, "hpcbridge.io/user"), "alice");
	assert_string_equal(label(doc, "hpcbridge.io/account"), "proj1");
	assert_string_equal(annotation(doc, "hpcbridge.io/name"), "My Job");
	assert_string_equal(annotation(doc, "hpcbridge.io/source-kind"),
			    "sbatch");
	assert_string_equal(annotation(doc, "hpcbridge.io/source-name"),
			    "job.sh");
	assert_int_equal(rep.fate[HB_F_PARTITION].kind, HB_FATE_MAPPED);
	assert_int_equal(rep.fate[HB_F_NAME].kind, HB_FATE_PARTIAL);
	assert_int_equal(rep.fate[HB_F_ACCOUNT].kind, HB_FATE_CARRIED);
	cJSON_Delete(doc);
	hb_report_free(&rep);

	/* No queue for the partition: the default queue, else none. */
	config(&cfg);
	s.partition = "long";
	cfg.k8s.default_queue = "batch";
	doc = emit_idx(&s, &cfg, -1, &rep);
	assert_string_equal(label(doc, "kueue.x-k8s.io/queue-name"), "batch");
	assert_int_equal(rep.fate[HB_F_PARTITION].kind, HB_FATE_CARRIED);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	cfg.k8s.default_queue = NULL;
	doc = emit_idx(&s, &cfg, -1, &rep);
	assert_null(label(doc, "kueue.x-k8s.io/queue-name"));
	assert_string_equal(annotation(doc, "hpcbridge.io/partition"), "long");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static const char *image_of(struct hb_jobspec *s, struct hb_config *cfg)
{
	static char img[256];
	struct hb_report rep;
	cJSON *doc = emit_idx(s, cfg, -1, &rep);

	snprintf(img, sizeof(img), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		     container(doc, "Launcher"), "image")));
	assert_string_equal(
	    img, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		     container(doc, "Worker"), "image")));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	return img;
}

static void test_image(void **state)
{
	struct hb_jobspec s;
	struct hb_config cfg;
	struct hb_err err;

	(void)state;
	config(&cfg);
	/* The body loads openmpi/4.1.5: the module map. */
	new_spec(&s, NULL);
	assert_string_equal(image_of(&s, &cfg), "ghcr.io/site/openmpi:4.1.5");
	/* --container beats the module; mapped first... */
	HB_TEST_SET_STR(&s, container, HB_F_CONTAINER, "lammps");
	assert_string_equal(image_of(&s, &cfg), "ghcr.io/site/lammps:2");
	/* ... else an image reference is used as it is ... */
	s.container = "quay.io/x/y:1";
	assert_string_equal(image_of(&s, &cfg), "quay.io/x/y:1");
	/* ... and a path falls through to the module. */
	s.container = "/opt/bundles/x";
	assert_string_equal(image_of(&s, &cfg), "ghcr.io/site/openmpi:4.1.5");
	hb_jobspec_free(&s);

	/* A module matched by its name without the version. */
	new_spec(&s, "#!/bin/sh\nmodule load gcc/12 intel-oneapi-mpi/2021.9\n"
		     "mpirun ./x\n");
	assert_string_equal(image_of(&s, &cfg), "ghcr.io/site/impi:2021");
	hb_jobspec_free(&s);

	/* The partition, then the default. */
	new_spec(&s, "#!/bin/sh\n./x\n");
	HB_TEST_SET_STR(&s, partition, HB_F_PARTITION, "gpu");
	assert_string_equal(image_of(&s, &cfg), "ghcr.io/site/cuda:12");
	s.partition = "cpu";
	assert_string_equal(image_of(&s, &cfg),
			    "docker.io/library/ubuntu:22.04");
	/* Nothing at all: an error that says what to configure. */
	cfg.k8s.default_image = NULL;
	assert_int_equal(emit_err(&s, &cfg, -1, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "default_image"));
	hb_jobspec_free(&s);
}

static void test_pods(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	const cJSON *l, *w, *args;
	struct hb_buf un;
	const char *b;
	size_t blen;
	cJSON *doc;

	(void)state;
	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 2);
	HB_TEST_SET_NUM(&s, exclusive, HB_F_EXCLUSIVE, true);
	HB_TEST_SET_STR(&s, constraint, HB_F_CONSTRAINT, "ib");
	doc = emit(&s, &rep);
	l = container(doc, "Launcher");
	w = container(doc, "Worker");
	assert_int_equal(num_at(doc, "spec.mpiReplicaSpecs.Launcher.replicas"),
			 1);
	assert_string_equal(str_at(doc, "spec.mpiReplicaSpecs.Launcher."
					"restartPolicy"),
			    "Never");
	assert_string_equal(str_at(doc, "spec.sshAuthMountPath"),
			    "/home/mpiuser/.ssh");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "name")),
	    "launcher");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "name")),
	    "worker");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(l, "command"), 0)),
	    "/bin/sh");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(l, "command"), 1)),
	    "-c");
	/* The workers start sshd as the user, on the unprivileged port,
	 * with the operator's keys where it mounts them. */
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(w, "command"), 0)),
	    "/bin/sh");
	b = cJSON_GetStringValue(
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(w, "args"), 0));
	assert_non_null(b);
	assert_non_null(strstr(b, "exec /usr/sbin/sshd -De -f "));
	assert_non_null(strstr(b, "'Port 2222'"));
	assert_non_null(strstr(b, "'HostKey /home/mpiuser/.ssh/id_rsa'"));
	assert_non_null(strstr(
	    b, "'AuthorizedKeysFile /home/mpiuser/.ssh/authorized_keys'"));
	assert_non_null(strstr(b, "'StrictModes no'"));
	assert_non_null(strstr(b, "PidFile $$d/sshd.pid"));
	/* The launcher's own small resources. */
	assert_string_equal(str_at(l, "resources.limits.cpu"), "1");
	assert_string_equal(str_at(l, "resources.limits.memory"), "512Mi");
	/* The script is the launcher script, escaped for Kubernetes, and
	 * gives back the original script byte for byte. */
	args = cJSON_GetObjectItemCaseSensitive(l, "args");
	assert_int_equal(cJSON_GetArraySize(args), 1);
	assert_non_null(strstr(cJSON_GetArrayItem(args, 0)->valuestring,
			       "echo $$$$ $$(hostname) $${SLURM_JOB_ID}"));
	hb_buf_init(&un, 0);
	assert_int_equal(
	    hb_k8s_unescape(cJSON_GetArrayItem(args, 0)->valuestring,
			    strlen(cJSON_GetArrayItem(args, 0)->valuestring),
			    &un),
	    0);
	assert_int_equal(hb_launcher_extract(un.data, &b, &blen), 0);
	assert_int_equal(blen, strlen(body));
	assert_memory_equal(b, body, blen);
	hb_buf_free(&un);
	/* Env on both containers. */
	assert_string_equal(env_of(l, "NCCL_DEBUG"), "INFO");
	assert_string_equal(env_of(w, "NCCL_DEBUG"), "INFO");
	/* Placement on the workers only. */
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		hb_doc_get(doc, "spec.mpiReplicaSpecs.Worker.template."
				"spec.nodeSelector"),
		"feature.node/ib")),
	    "true");
	assert_null(hb_doc_get(doc, "spec.mpiReplicaSpecs.Launcher.template."
				    "spec.nodeSelector"));
	assert_non_null(hb_doc_get(doc, "spec.mpiReplicaSpecs.Worker.template."
					"spec.affinity.podAntiAffinity"));
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		hb_doc_get(doc, "spec.mpiReplicaSpecs.Worker.template."
				"metadata.labels"),
		"hpcbridge.io/role")),
	    "worker");
	assert_int_equal(rep.fate[HB_F_EXCLUSIVE].kind, HB_FATE_PARTIAL);
	assert_int_equal(rep.fate[HB_F_SCRIPT].kind, HB_FATE_MAPPED);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void set_array(struct hb_jobspec *s, const char *text, uint32_t start,
		      uint32_t end, uint32_t step, uint32_t max)
{
	s->array = hb_jobspec_strdup(s, text);
	s->array_ranges = hb_arena_alloc(&s->arena, sizeof(struct hb_range));
	s->array_ranges[0] = (struct hb_range){start, end, step};
	s->narray_ranges = 1;
	s->array_max_running = max;
	hb_test_dir(s, HB_F_ARRAY, text);
}

static void test_array(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	struct hb_err err;
	cJSON *doc;

	(void)state;
	config(&cfg);
	new_spec(&s, NULL);
	HB_TEST_SET_STR(&s, name, HB_F_NAME, "sweep");
	set_array(&s, "1-9:2%2", 1, 9, 2, 2);
	doc = emit_idx(&s, &cfg, 7, &rep);
	assert_string_equal(str_at(doc, "metadata.name"), "sweep-7");
	assert_string_equal(
	    env_of(container(doc, "Launcher"), "SLURM_ARRAY_TASK_ID"), "7");
	assert_string_equal(env_of(container(doc, "Worker"), "PBS_ARRAYID"),
			    "7");
	assert_string_equal(
	    env_of(container(doc, "Launcher"), "PBS_ARRAY_INDEX"), "7");
	assert_string_equal(annotation(doc, "hpcbridge.io/array"), "1-9:2%2");
	assert_string_equal(annotation(doc, "hpcbridge.io/array-index"), "7");
	/* The %2 limit is not Kubernetes's to enforce. */
	assert_int_equal(rep.fate[HB_F_ARRAY].kind, HB_FATE_PARTIAL);
	cJSON_Delete(doc);
	hb_report_free(&rep);

	/* 4 is not an index of 1-9:2. */
	assert_int_equal(emit_err(&s, &cfg, 4, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "not an index"));
	/* More elements than max_array_jobs. */
	s.array_ranges[0] = (struct hb_range){0, 99, 1};
	assert_int_equal(emit_err(&s, &cfg, 3, &err), HB_ETOOBIG);
	assert_non_null(strstr(err.msg, "max_array_jobs"));
	assert_non_null(strstr(err.msg, "100"));
	s.array_ranges[0] = (struct hb_range){1, 9, 2};

	/* Kubernetes takes at most 256 KiB of annotations. */
	{
		char *big = malloc(300 * 1024);

		assert_non_null(big);
		memset(big, 'c', 300 * 1024 - 1);
		big[300 * 1024 - 1] = '\0';
		s.comment = hb_jobspec_strdup(&s, big);
		free(big);
		assert_int_equal(emit_err(&s, &cfg, 3, &err), HB_ETOOBIG);
		assert_non_null(strstr(err.msg, "hpcbridge.io/comment"));
	}
	hb_jobspec_free(&s);

	/* An index for a job that is no array. */
	new_spec(&s, NULL);
	assert_int_equal(emit_err(&s, &cfg, 0, &err), HB_EINVAL);
	hb_jobspec_free(&s);
}

static void test_worker_shape(void **state)
{
	struct hb_jobspec s;
	struct hb_config cfg;
	struct hb_err err;

	(void)state;
	config(&cfg);
	cfg.k8s.worker_cpus = 32;
	cfg.k8s.worker_mem_mb = 65536;
	cfg.k8s.worker_gpus = 4;
	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 8);
	HB_TEST_SET_NUM(&s, cpus_per_task, HB_F_CPUS_PER_TASK, 8);
	assert_int_equal(emit_err(&s, &cfg, -1, &err), HB_EINVAL);
	/* Names the field (its directive and line) and both numbers. */
	assert_non_null(strstr(err.msg, "job.sh:"));
	assert_non_null(strstr(err.msg, "cpus_per_task=8"));
	assert_non_null(strstr(err.msg, "64"));
	assert_non_null(strstr(err.msg, "32"));
	assert_non_null(strstr(err.msg, "kubernetes.worker.cpus"));
	s.cpus_per_task = 4;

	s.mem_kind = HB_MEM_PER_CPU;
	HB_TEST_SET_NUM(&s, mem_mb, HB_F_MEM, 4096);
	assert_int_equal(emit_err(&s, &cfg, -1, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "mem_mb=4096"));
	assert_non_null(strstr(err.msg, "128Gi"));
	assert_non_null(strstr(err.msg, "64Gi"));
	assert_non_null(strstr(err.msg, "kubernetes.worker.memory"));
	s.mem_mb = 1024;

	s.gpu_scope = HB_GPU_PER_TASK;
	HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, 1);
	assert_int_equal(emit_err(&s, &cfg, -1, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "8 GPUs"));
	assert_non_null(strstr(err.msg, "kubernetes.worker.gpus"));
	s.gpu_scope = HB_GPU_PER_NODE;
	s.gpus = 4;
	/* At the limits exactly: fine. */
	{
		struct hb_report rep;
		cJSON *doc = emit_idx(&s, &cfg, -1, &rep);

		assert_string_equal(worker_res(doc, "cpu"), "32");
		cJSON_Delete(doc);
		hb_report_free(&rep);
	}
	hb_jobspec_free(&s);
}

/* ---------------------------------------------------------------- */
/* Every field: a fate, and the way back                            */
/* ---------------------------------------------------------------- */

/* A job that sets every field the jobspec can hold. */
static void full_spec(struct hb_jobspec *s)
{
	new_spec(s, NULL);
	HB_TEST_SET_STR(s, name, HB_F_NAME, "Full Job");
	HB_TEST_SET_STR(s, user, HB_F_USER, "alice");
	HB_TEST_SET_STR(s, account, HB_F_ACCOUNT, "proj1");
	HB_TEST_SET_STR(s, partition, HB_F_PARTITION, "gpu");
	HB_TEST_SET_STR(s, qos, HB_F_QOS, "high");
	HB_TEST_SET_STR(s, comment, HB_F_COMMENT, "a \"quoted\" comment: yes");
	s->nodes_max = 4;
	HB_TEST_SET_NUM(s, nodes_min, HB_F_NODES, 2);
	HB_TEST_SET_NUM(s, ntasks, HB_F_NTASKS, 6);
	HB_TEST_SET_NUM(s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 3);
	HB_TEST_SET_NUM(s, cpus_per_task, HB_F_CPUS_PER_TASK, 2);
	s->mem_kind = HB_MEM_PER_CPU;
	HB_TEST_SET_NUM(s, mem_mb, HB_F_MEM, 1024);
	s->gpu_scope = HB_GPU_PER_TASK;
	s->gpu_type = hb_jobspec_strdup(s, "a100");
	HB_TEST_SET_NUM(s, gpus, HB_F_GPUS, 1);
	HB_TEST_SET_STR(s, licenses, HB_F_LICENSES, "matlab:1");
	HB_TEST_SET_NUM(s, exclusive, HB_F_EXCLUSIVE, true);
	HB_TEST_SET_STR(s, constraint, HB_F_CONSTRAINT, "ib&fast");
	HB_TEST_SET_STR(s, nodelist, HB_F_NODELIST, "n[1-2]");
	HB_TEST_SET_STR(s, exclude, HB_F_EXCLUDE, "n3");
	HB_TEST_SET_NUM(s, time_limit, HB_F_TIME_LIMIT, 3600);
	HB_TEST_SET_NUM(s, time_min, HB_F_TIME_MIN, 600);
	HB_TEST_SET_STR(s, begin, HB_F_BEGIN, "now+1hour");
	HB_TEST_SET_STR(s, deadline, HB_F_DEADLINE, "2027-01-01T00:00:00");
	HB_TEST_SET_STR(s, signal, HB_F_SIGNAL, "B:USR1@60");
	HB_TEST_SET_STR(s, output, HB_F_OUTPUT, "out-%j.log");
	HB_TEST_SET_STR(s, error, HB_F_ERROR, "err-%j.log");
	HB_TEST_SET_STR(s, input, HB_F_INPUT, "in.txt");
	HB_TEST_SET_STR(s, chdir, HB_F_CHDIR, "/scratch/run");
	set_array(s, "1-5:2%2", 1, 5, 2, 2);
	HB_TEST_SET_STR(s, dependency, HB_F_DEPENDENCY, "afterok:123");
	HB_TEST_SET_STR(s, mail_type, HB_F_MAIL_TYPE, "END,FAIL");
	HB_TEST_SET_STR(s, mail_user, HB_F_MAIL_USER, "a@example.org");
	HB_TEST_SET_NUM(s, requeue, HB_F_REQUEUE, 1);
	HB_TEST_SET_STR(s, export_spec, HB_F_EXPORT, "ALL,PASS");
	assert_int_equal(hb_jobspec_add_env(s, "OMP_NUM_THREADS", "2"), 0);
	assert_int_equal(hb_jobspec_add_env(s, "PASS", NULL), 0);
	assert_int_equal(hb_jobspec_add_env(s, "PRICE", "$5 $(X)"), 0);
	/* The job's own, not the one an array element adds. */
	assert_int_equal(hb_jobspec_add_env(s, "PBS_ARRAYID", "job's"), 0);
	hb_test_dir(s, HB_F_ENV, "--export=...");
	s->mpi = HB_MPI_INTEL;
	hb_test_dir(s, HB_F_MPI, "mpi");
	HB_TEST_SET_STR(s, container, HB_F_CONTAINER, "lammps");
	HB_TEST_SET_STR(s, checkpoint_dir, HB_F_CHECKPOINT, "/ckpt/run");
	assert_int_equal(hb_jobspec_add_data(s, "s3://bucket/in"), 0);
	assert_int_equal(hb_jobspec_add_data(s, "/shared/\"odd\" path"), 0);
	hb_test_dir(s, HB_F_DATA, "data");
	HB_TEST_SET_STR(s, keep, HB_F_KEEP, "oe");
	s->join_output = true;
	s->export_all = true;
	s->chunks = hb_arena_alloc(&s->arena, 2 * sizeof(struct hb_chunk));
	s->chunks[0] = (struct hb_chunk){1, 8, 2, 4, 1, 4096};
	s->chunks[1] = (struct hb_chunk){1, 8, 2, 4, 0, 2048};
	s->nchunks = 2;
	hb_test_dir(s, HB_F_HETEROGENEOUS, "select=...");
	/* tcp: an rdma job asks the cluster for devices (its own test) */
	s->fabric = HB_FABRIC_TCP;
	s->fabric_why = "--hpcbridge-fabric=tcp";
	hb_test_dir(s, HB_F_FABRIC, "--hpcbridge-fabric=tcp");
}

static void test_every_field_has_a_fate(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	cJSON *doc;

	(void)state;
	full_spec(&s);
	config(&cfg);
	for (int pass = 0; pass < 2; pass++) {
		doc = emit_idx(&s, &cfg, pass ? 3 : -1, &rep);
		for (int f = 0; f < HB__F_COUNT; f++) {
			if (!hb_jobspec_has(&s, (enum hb_field)f))
				continue;
			if (rep.fate[f].kind == HB_FATE_NONE)
				fail_msg("field %s has no fate",
					 hb_field_name((enum hb_field)f));
			/* Carried fields say where. */
			if (rep.fate[f].kind == HB_FATE_CARRIED)
				assert_non_null(strstr(rep.fate[f].target,
						       "hpcbridge.io/"));
		}
		cJSON_Delete(doc);
		hb_report_free(&rep);
	}
	/* Every field is in the fidelity check above. */
	for (int f = 0; f < HB__F_COUNT; f++)
		if (!hb_jobspec_has(&s, (enum hb_field)f))
			fail_msg("full_spec does not set %s",
				 hb_field_name((enum hb_field)f));
	hb_jobspec_free(&s);
}


/* jobspec -> MPIJob -> YAML -> jobspec -> MPIJob, valid throughout. */
static void round_trip(const struct hb_jobspec *a, int64_t idx)
{
	struct hb_config cfg;

	config(&cfg);
	hb_test_manifest_round_trip(a, &cfg, HB_SRC_MPIJOB, idx, schemas,
				    NULL);
}

static void test_round_trip(void **state)
{
	struct hb_jobspec s;

	(void)state;
	full_spec(&s);
	round_trip(&s, -1);
	round_trip(&s, 5);
	hb_jobspec_free(&s);

	/* Derived values stay derived; an unnamed job keeps no name. */
	new_spec(&s, "#!/bin/sh\nsrun ./x\n");
	HB_TEST_SET_NUM(&s, ntasks, HB_F_NTASKS, 8);
	round_trip(&s, -1);
	hb_jobspec_free(&s);

	/* Whole-node memory, with and without a configured shape. */
	new_spec(&s, "#!/bin/sh\n./x\n");
	s.mem_kind = HB_MEM_PER_NODE;
	HB_TEST_SET_NUM(&s, mem_mb, HB_F_MEM, 0);
	HB_TEST_SET_NUM(&s, time_limit, HB_F_TIME_LIMIT, HB_TIME_UNLIMITED);
	round_trip(&s, -1);
	hb_jobspec_free(&s);

	/* Torque job-wide memory and GPUs per job over uneven nodes. */
	new_spec(&s, NULL);
	s.source = HB_SRC_PBS;
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 3);
	s.mem_kind = HB_MEM_JOB;
	HB_TEST_SET_NUM(&s, mem_mb, HB_F_MEM, 10000);
	s.gpu_scope = HB_GPU_PER_JOB;
	HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, 5);
	HB_TEST_SET_NUM(&s, requeue, HB_F_REQUEUE, 0);
	round_trip(&s, -1);
	hb_jobspec_free(&s);
}

/* Something edited the manifest: its values win over the annotation. */
static void test_edited_manifest(void **state)
{
	struct hb_jobspec s, b;
	struct hb_report rep;
	struct hb_err err = {0};
	cJSON *doc;
	bool noted = false;

	(void)state;
	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 2);
	HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 4);
	doc = emit(&s, &rep);
	cJSON_SetNumberValue(
	    hb_doc_get(doc, "spec.mpiReplicaSpecs.Worker.replicas"), 5);
	hb_jobspec_init(&b, "edited.yaml");
	assert_int_equal(hb_mpijob_parse(doc, &b, &err), 0);
	assert_int_equal(b.nodes_min, 5);
	assert_int_equal(b.ntasks_per_node, 4);
	for (uint32_t i = 0; i < b.ndirectives; i++)
		if (b.directives[i].note &&
		    strstr(b.directives[i].note, "differs from the manifest"))
			noted = true;
	assert_true(noted);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
	hb_jobspec_free(&b);
}

/* ---------------------------------------------------------------- */
/* Reading manifests                                                */
/* ---------------------------------------------------------------- */

static int parse_text(const char *text, const char *name, struct hb_jobspec *s,
		      struct hb_err *err)
{
	cJSON *doc = NULL;
	int rc;

	memset(err, 0, sizeof(*err));
	hb_jobspec_init(s, name);
	rc = hb_doc_parse(text, strlen(text), name, &doc, err);
	if (rc)
		return rc;
	rc = hb_mpijob_parse(doc, s, err);
	cJSON_Delete(doc);
	return rc;
}

static const struct hb_directive *find_dir(const struct hb_jobspec *s,
					   const char *prefix)
{
	for (uint32_t i = 0; i < s->ndirectives; i++)
		if (strncmp(s->directives[i].text, prefix, strlen(prefix)) == 0)
			return &s->directives[i];
	return NULL;
}

static void test_operator_examples(void **state)
{
	struct hb_jobspec s;
	struct hb_err err = {0};
	const struct hb_directive *d;
	size_t len;
	char *text;

	(void)state;
	text = hb_test_read_file(
	    hb_test_shared_path("reference/examples/mpijob-pi-openmpi.yaml"),
	    &len);
	if (parse_text(text, "pi.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(s.name, "pi");
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.ntasks_per_node, 1);
	assert_int_equal(s.cpus_per_task, 1);
	assert_int_equal(s.mem_kind, HB_MEM_PER_NODE);
	assert_int_equal(s.mem_mb, 1024);
	assert_int_equal(s.mpi, HB_MPI_OPENMPI);
	assert_string_equal(s.container, "mpioperator/mpi-pi:openmpi");
	assert_string_equal(s.script,
			    "#!/bin/sh\nmpirun -n 2 /home/mpiuser/pi\n");
	assert_string_equal(s.interpreter, "/bin/sh");
	assert_int_equal(s.nmpi_lines, 1);
	/* Fields remember their line; directives read "path: value". */
	d = find_dir(&s, "spec.mpiReplicaSpecs.Worker.replicas: 2");
	assert_non_null(d);
	assert_int_equal(d->prov.kind, HB_PROV_MANIFEST);
	assert_true(d->prov.line > 20);
	assert_int_equal(s.prov[HB_F_NODES].line, d->prov.line);
	/* What has no sbatch equivalent is listed, not lost. */
	d = find_dir(&s, "spec.runPolicy.ttlSecondsAfterFinished");
	assert_non_null(d);
	assert_int_equal(d->nfields, 0);
	assert_non_null(find_dir(&s, "spec.sshAuthMountPath"));
	assert_non_null(find_dir(&s, "spec.mpiReplicaSpecs.Launcher.template."
				     "spec.containers[0].securityContext"));
	hb_jobspec_free(&s);
	free(text);

	text = hb_test_read_file(
	    hb_test_shared_path("reference/examples/mpijob-pi-intel.yaml"),
	    &len);
	if (parse_text(text, "pi-intel.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(s.mpi, HB_MPI_INTEL);
	/* args without command: the args are the command line. */
	assert_string_equal(s.script,
			    "#!/bin/sh\nmpirun -n 2 /home/mpiuser/pi\n");
	hb_jobspec_free(&s);
	free(text);
}

/* The example manifests users are pointed to. */
static void test_examples(void **state)
{
	struct hb_jobspec s;
	struct hb_err err;
	size_t len;
	char *text;

	(void)state;
	text = hb_test_read_file(
	    hb_test_src_path("examples/manifests/mpijob-wrf.yaml"), &len);
	if (parse_text(text, "mpijob-wrf.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.ntasks_per_node, 8);
	assert_int_equal(s.cpus_per_task, 2);
	assert_int_equal(s.mem_mb, 48 * 1024);
	assert_int_equal(s.time_limit, 21600);
	assert_string_equal(s.chdir, "/data/conus-12km");
	assert_string_equal(s.script, "#!/bin/sh\nmpirun --bind-to core "
				      "/opt/wrf/main/wrf.exe\n");
	assert_int_equal(s.nenv, 1);
	hb_jobspec_free(&s);
	free(text);

	text = hb_test_read_file(
	    hb_test_src_path("examples/manifests/mpijob-shell.yaml"), &len);
	if (parse_text(text, "mpijob-shell.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(s.interpreter, "/bin/bash");
	assert_true(strncmp(s.script, "#!/bin/bash\nset -euo pipefail\n",
			    strlen("#!/bin/bash\nset -euo pipefail\n")) == 0);
	assert_int_equal(s.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(s.gpus, 1);
	assert_int_equal(s.nmpi_lines, 1);
	hb_jobspec_free(&s);
	free(text);
}

static const char *const hdr =
    "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n"
    "  name: x\n";

static void test_foreign_scripts(void **state)
{
	static const struct {
		const char *launcher, *script;
	} cases[] = {
	    {"command: [python3, -c, \"print('hi')\"]",
	     "#!/bin/sh\npython3 -c 'print('\\''hi'\\'')'\n"},
	    {"command: [/bin/bash, -c, \"echo $$HOME; ls\"]",
	     "#!/bin/bash\necho $HOME; ls\n"},
	    {"command: [sh, -c, 'echo \"$(MY_VAR)\" $(NOPE)']\n"
	     "                env: [{name: MY_VAR, value: v}]",
	     "#!/bin/sh\necho \"${MY_VAR}\" $(NOPE)\n"},
	    {"command: [echo]\n                args: [\"a b\", \"$(MY_VAR)x\", "
	     "\"\", \"$$1\"]\n                env: [{name: MY_VAR, value: v}]",
	     "#!/bin/sh\necho 'a b' \"${MY_VAR}\"'x' '' '$1'\n"},
	};
	char text[2048];
	struct hb_jobspec s;
	struct hb_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text),
			 "%sspec:\n  mpiReplicaSpecs:\n    Launcher:\n"
			 "      replicas: 1\n      template:\n        spec:\n"
			 "          containers:\n              - name: l\n"
			 "                image: img:1\n                %s\n",
			 hdr, cases[i].launcher);
		if (parse_text(text, "f.yaml", &s, &err))
			fail_msg("%s\n%s", err.msg, text);
		assert_string_equal(s.script, cases[i].script);
		hb_jobspec_free(&s);
	}
}

static void test_hostile(void **state)
{
	static const struct {
		const char *spec, *want;
	} cases[] = {
	    {"spec: 5", "spec: must be a mapping"},
	    {"spec: {}", "spec.mpiReplicaSpecs: missing"},
	    {"spec: {mpiReplicaSpecs: {Worker: {replicas: 1}}}",
	     "spec.mpiReplicaSpecs.Launcher: missing"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {replicas: 2}}}",
	     "spec.mpiReplicaSpecs.Launcher.replicas: must be 1"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {replicas: 1}, Worker: "
	     "{replicas: -1}}}",
	     "spec.mpiReplicaSpecs.Worker.replicas: must be an integer "
	     "\u2265 0"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {replicas: 1}, Worker: "
	     "{replicas: two}}}",
	     "spec.mpiReplicaSpecs.Worker.replicas: must be an integer"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {replicas: 1}, Worker: "
	     "{replicas: 1e12}}}",
	     "spec.mpiReplicaSpecs.Worker.replicas: must be at most"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {replicas: 1, template: "
	     "{spec: {containers: []}}}}}",
	     "containers: must list at least one container"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: x}}}}}",
	     "containers: must be a list"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: [x]}}}}}",
	     "containers[0]: must be a mapping"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: [{command: [1]}]}}}}}",
	     "containers[0].command[0]: must be a string"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: [{command: [a], env: [{value: x}]}]}}}}}",
	     "env[0]: name must be"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: [{command: [a], env: 3}]}}}}}",
	     "env: must be a list"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: [{image: i}]}}}}}",
	     "no command or args"},
	    {"spec: {mpiImplementation: LAM, mpiReplicaSpecs: {Launcher: "
	     "{template: {spec: {containers: [{command: [a]}]}}}}}",
	     "spec.mpiImplementation: 'LAM' is not"},
	    {"spec: {runPolicy: {activeDeadlineSeconds: 0}, "
	     "mpiReplicaSpecs: {Launcher: {template: {spec: {containers: "
	     "[{command: [a]}]}}}}}",
	     "spec.runPolicy.activeDeadlineSeconds: must be an integer"},
	    {"spec: {slotsPerWorker: 1.5, mpiReplicaSpecs: {}}",
	     "spec.slotsPerWorker: must be an integer"},
	    {"spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
	     "{containers: [{command: [a], resources: {limits: {cpu: "
	     "[1]}}}]}}}}}",
	     "resources.limits.cpu: must be a quantity"},
	};
	char text[2048];
	struct hb_jobspec s;
	struct hb_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "%s%s\n", hdr, cases[i].spec);
		if (!parse_text(text, "bad.yaml", &s, &err))
			fail_msg("accepted: %s", cases[i].spec);
		if (!strstr(err.msg, cases[i].want))
			fail_msg("'%s': got '%s', want '%s'", cases[i].spec,
				 err.msg, cases[i].want);
		assert_true(strncmp(err.msg, "bad.yaml", 8) == 0);
		hb_jobspec_free(&s);
	}

	/* Wrong kind, version, shape of the document, and labels. */
	assert_int_not_equal(parse_text("- a\n- b\n", "bad.yaml", &s, &err), 0);
	assert_non_null(strstr(err.msg, "not a Kubernetes object"));
	hb_jobspec_free(&s);
	assert_int_not_equal(parse_text("apiVersion: kubeflow.org/v1\n"
					"kind: MPIJob\n",
					"bad.yaml", &s, &err),
			     0);
	assert_non_null(strstr(err.msg, "apiVersion"));
	hb_jobspec_free(&s);
	assert_int_not_equal(
	    parse_text("apiVersion: trainer.kubeflow.org/v1alpha1\n"
		       "kind: TrainJob\n",
		       "bad.yaml", &s, &err),
	    0);
	assert_non_null(strstr(err.msg, "kind"));
	hb_jobspec_free(&s);
	snprintf(text, sizeof(text),
		 "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\n"
		 "metadata: {name: x, labels: {a: 1}}\nspec: {}\n");
	assert_int_not_equal(parse_text(text, "bad.yaml", &s, &err), 0);
	assert_non_null(strstr(err.msg, "metadata.labels[a]: must be a "
					"string"));
	hb_jobspec_free(&s);
	/* An annotation of ours with a value we never write. */
	snprintf(text, sizeof(text),
		 "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\n"
		 "metadata:\n  name: x\n  annotations:\n"
		 "    hpcbridge.io/requeue: maybe\n"
		 "spec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
		 "{containers: [{command: [a]}]}}}}}\n");
	assert_int_not_equal(parse_text(text, "bad.yaml", &s, &err), 0);
	assert_non_null(strstr(err.msg, "bad.yaml:6:"));
	assert_non_null(strstr(err.msg, "hpcbridge.io/requeue"));
	hb_jobspec_free(&s);
}

static void test_env_value_from(void **state)
{
	struct hb_jobspec s;
	struct hb_err err;
	char text[1024];

	(void)state;
	snprintf(text, sizeof(text),
		 "%sspec: {mpiReplicaSpecs: {Launcher: {template: {spec: "
		 "{containers: [{command: [a], env: [{name: S, valueFrom: "
		 "{secretKeyRef: {name: s, key: k}}}, {name: P, value: "
		 "\"$$x\"}]}]}}}}}\n",
		 hdr);
	assert_int_equal(parse_text(text, "e.yaml", &s, &err), 0);
	assert_int_equal(s.nenv, 1);
	assert_string_equal(s.env[0].name, "P");
	assert_string_equal(s.env[0].value, "$x");
	assert_non_null(find_dir(&s, "spec.mpiReplicaSpecs.Launcher.template."
				     "spec.containers[0].env[0]"));
	hb_jobspec_free(&s);
}

/* ---------------------------------------------------------------- */
/* Golden files                                                     */
/* ---------------------------------------------------------------- */

/* The launcher script belongs to launcher.c and has its own tests: the
 * golden files show the job script it runs instead. */
static void shorten_script(cJSON *doc)
{
	cJSON *args = cJSON_GetObjectItemCaseSensitive(
	    (cJSON *)container(doc, "Launcher"), "args");
	struct hb_buf un, out;
	const char *b;
	size_t blen;

	hb_buf_init(&un, 0);
	hb_buf_init(&out, 0);
	assert_int_equal(
	    hb_k8s_unescape(cJSON_GetArrayItem(args, 0)->valuestring,
			    strlen(cJSON_GetArrayItem(args, 0)->valuestring),
			    &un),
	    0);
	assert_int_equal(hb_launcher_extract(un.data, &b, &blen), 0);
	hb_buf_puts(&out, "(the launcher script, running:)\n");
	hb_buf_append(&out, b, blen);
	cJSON_ReplaceItemInArray(args, 0, cJSON_CreateString(out.data));
	hb_buf_free(&un);
	hb_buf_free(&out);
}

/* doc written as YAML against tests/golden/name. */
static void golden_doc(const char *name, const cJSON *doc)
{
	char rel[256];
	struct hb_buf y;
	const char *path;
	char *want;
	size_t len;

	hb_buf_init(&y, 0);
	assert_int_equal(hb_doc_write_yaml(doc, &y), 0);
	snprintf(rel, sizeof(rel), "tests/golden/%s", name);
	path = hb_test_src_path(rel);
	if (getenv("HB_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(y.data, 1, y.len, f), y.len);
		fclose(f);
	} else {
		want = hb_test_read_file(path, &len);
		if (len != y.len || memcmp(want, y.data, len) != 0)
			fail_msg("%s differs (HB_UPDATE_GOLDEN=1 rewrites "
				 "it)\n--- got\n%s",
				 rel, y.data);
		free(want);
	}
	hb_buf_free(&y);
}

static void golden(const char *name, cJSON *doc)
{
	shorten_script(doc);
	golden_doc(name, doc);
}

/*
 * The fabric (k8s_fabric.c): one Open MPI job over 2 nodes with 4 GPUs
 * each, as an RDMA job through the device plugin, through DRA (its
 * ResourceClaimTemplate too), and as a job that asks no RDMA on the same
 * cluster.
 */
static void golden_fabric(void)
{
	/* The fabric is set below, not inferred from the script, so that
	 * the three differ in it alone. */
	static const char *const script =
	    "#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=mi300x:4\n"
	    "export NCCL_IB_DISABLE=0 NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO\n"
	    "mpirun ./all_reduce_perf -b 8 -e 1G\n";
	static const char *const names[] = {"mpijob-rdma-plugin.yaml",
					    "mpijob-rdma-dra.yaml",
					    "mpijob-tcp.yaml"};
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	struct hb_err err = {0};
	cJSON *doc, *tmpl = NULL;

	for (int i = 0; i < 3; i++) {
		config(&cfg);
		cfg.k8s.rdma_mode = i == 0 ? "device_plugin" : "dra";
		cfg.k8s.rdma_resource = "rdma/rdma_shared_device_a";
		cfg.k8s.rdma_dra_class = "dranet.net";
		cfg.k8s.rdma_dra_api = "resource.k8s.io/v1";
		cfg.k8s.rdma_dra_driver = "dra.net";
		cfg.k8s.rdma_dra_ifname = "rdma0";
		cfg.k8s.rdma_dra_selector =
		    "device.attributes[\"dra.net\"].rdma == true";
		new_spec(&s, script);
		HB_TEST_SET_STR(&s, name, HB_F_NAME, "allreduce");
		HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 2);
		s.gpu_scope = HB_GPU_PER_NODE;
		s.gpu_type = hb_jobspec_strdup(&s, "mi300x");
		HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, 4);
		s.mpi = HB_MPI_OPENMPI;
		s.fabric = i < 2 ? HB_FABRIC_RDMA : HB_FABRIC_TCP;
		doc = emit_idx(&s, &cfg, -1, &rep);
		if (i == 1) {
			assert_int_equal(hb_k8s_claim_template(doc, &cfg.k8s,
							       &tmpl, &err),
					 0);
			assert_non_null(tmpl);
			golden_doc("resourceclaimtemplate-rdma.yaml", tmpl);
			cJSON_Delete(tmpl);
		}
		golden(names[i], doc);
		cJSON_Delete(doc);
		hb_report_free(&rep);
		hb_jobspec_free(&s);
	}
}

static void test_golden(void **state)
{
	static const uint32_t groups[] = {5000, 1234, 5001};
	static struct hb_k8s_volume vols[] = {
	    {.path = "/scratch", .pvc = "scratch"},
	    {.path = "/apps",
	     .nfs_server = "nfs.example.org",
	     .nfs_path = "/export/apps",
	     .read_only = true},
	};
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	cJSON *doc;

	(void)state;
	config(&cfg);
	full_spec(&s);
	doc = emit_idx(&s, &cfg, 3, &rep);
	golden("mpijob-full.yaml", doc);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	new_spec(&s, "#!/bin/bash\n#SBATCH -N 4 --gpus-per-node=a100:4\n"
		     "module load openmpi/4.1.5\n"
		     "export NCCL_IB_DISABLE=0\n"
		     "srun python train.py\n");
	HB_TEST_SET_STR(&s, name, HB_F_NAME, "train");
	HB_TEST_SET_STR(&s, partition, HB_F_PARTITION, "gpu");
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 4);
	s.gpu_scope = HB_GPU_PER_NODE;
	s.gpu_type = hb_jobspec_strdup(&s, "a100");
	HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, 4);
	s.mem_kind = HB_MEM_PER_GPU;
	HB_TEST_SET_NUM(&s, mem_mb, HB_F_MEM, 40960);
	HB_TEST_SET_NUM(&s, time_limit, HB_F_TIME_LIMIT, 86400);
	/* As the daemon bursts it: the user's identity, the site's
	 * volumes, gang scheduling. */
	assert_int_equal(hb_jobspec_set_identity(&s, 1234, 1234, groups, 3),
			 0);
	cfg.k8s.fs_group = HB_FS_GROUP_PRIMARY;
	cfg.k8s.volumes = vols;
	cfg.k8s.nvolumes = 2;
	cfg.k8s.gang_scheduling = true;
	doc = emit_idx(&s, &cfg, -1, &rep);
	golden("mpijob-gpu.yaml", doc);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
	config(&cfg);

	/* A checkpoint pulled from S3 (k8s_ckpt.c): the variables, the
	 * init container in both pods, the emptyDir on the parent. */
	new_spec(&s, "#!/bin/bash\n#SBATCH -N 2\nsrun ./resume\n");
	HB_TEST_SET_STR(&s, name, HB_F_NAME, "resume");
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 2);
	HB_TEST_SET_STR(&s, checkpoint_dir, HB_F_CHECKPOINT,
			"/home/alice/run/ckpt");
	assert_int_equal(hb_jobspec_set_identity(&s, 1234, 1234, groups, 1),
			 0);
	cfg.k8s.ckpt_url = "s3://hpcbridge-ckpt/jobs";
	cfg.k8s.ckpt_endpoint = "http://minio.storage:9000";
	cfg.k8s.ckpt_secret = "hpcbridge-s3";
	cfg.k8s.ckpt_image = "ghcr.io/site/hpcbridge:1.0";
	doc = emit_idx(&s, &cfg, -1, &rep);
	golden("mpijob-ckpt.yaml", doc);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
	config(&cfg);

	new_spec(&s, "#!/bin/sh\n./serial\n");
	doc = emit_idx(&s, &cfg, -1, &rep);
	golden("mpijob-minimal.yaml", doc);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
	golden_fabric();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shape),
	    cmocka_unit_test(test_memory),
	    cmocka_unit_test(test_gpus),
	    cmocka_unit_test(test_time_and_mpi),
	    cmocka_unit_test(test_metadata),
	    cmocka_unit_test(test_image),
	    cmocka_unit_test(test_pods),
	    cmocka_unit_test(test_array),
	    cmocka_unit_test(test_worker_shape),
	    cmocka_unit_test(test_every_field_has_a_fate),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_edited_manifest),
	    cmocka_unit_test(test_operator_examples),
	    cmocka_unit_test(test_examples),
	    cmocka_unit_test(test_foreign_scripts),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_env_value_from),
	    cmocka_unit_test(test_golden),
	};
	return cmocka_run_group_tests(tests, load_schemas, free_schemas);
}
