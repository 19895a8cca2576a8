/*
 * test_trainjob.c - the TrainJob mapping on hand-built jobspecs, every
 * field's fate, the round trip jobspec -> TrainJob -> jobspec, reading
 * the Trainer's own example and hostile manifests, golden files.  Every
 * TrainJob emitted here is validated against the real CRD, strictly, with
 * the Trainer webhook's rules.
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
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"
#include "testutil.h"
#include "translators/k8s/k8s_int.h"

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

static struct hb_kv module_images[] = {{"openmpi", "ghcr.io/site/openmpi:4.1"}};
static struct hb_kv partition_queues[] = {{"gpu", "gpu-queue"}};
static struct hb_kv ib[] = {{"feature.node/ib", "true"}};
static struct hb_kv a100[] = {{"nvidia.com/gpu.product", "A100"}};
static struct hb_selector_map cons[] = {{"ib", ib, 1}};
static struct hb_selector_map gsel[] = {{"a100", a100, 1}};

static void config(struct hb_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->k8s.namespace = "ml";
	cfg->k8s.default_image = "docker.io/library/ubuntu:22.04";
	cfg->k8s.module_images = module_images;
	cfg->k8s.nmodule_images = 1;
	cfg->k8s.partition_queues = partition_queues;
	cfg->k8s.npartition_queues = 1;
	cfg->k8s.default_mpi = "OpenMPI";
	cfg->k8s.trainjob_runtime = "site-mpi";
	cfg->k8s.gpu_resource = "nvidia.com/gpu";
	cfg->k8s.constraint_selectors = cons;
	cfg->k8s.nconstraint_selectors = 1;
	cfg->k8s.gpu_type_selectors = gsel;
	cfg->k8s.ngpu_type_selectors = 1;
	cfg->k8s.max_array_jobs = 10;
}


static const char *const body = "#!/bin/bash\n"
				"module load openmpi/4.1.5\n"
				"export NCCL_P2P_DISABLE=1\n"
				"echo $$ $(date)\n"
				"mpirun python train.py\n";

static void new_spec(struct hb_jobspec *s, const char *script)
{
	struct hb_err err = {0};

	hb_jobspec_init(s, "train.sh");
	s->source = HB_SRC_SBATCH;
	hb_test_lineno = 0;
	s->script = hb_jobspec_strdup(s, script ? script : body);
	s->script_len = (uint32_t)strlen(s->script);
	s->interpreter = hb_jobspec_strdup(s, "/bin/bash");
	hb_test_dir(s, HB_F_SCRIPT, "(script)");
	assert_int_equal(hb_jobspec_scan_body(s, &err), 0);
}

static cJSON *emit_cfg(const struct hb_jobspec *s, const struct hb_config *cfg,
		       int64_t idx, struct hb_report *rep)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;

	hb_report_init(rep, "TrainJob");
	if (hb_trainjob_emit(s, &cfg->k8s, idx, &doc, rep, &err))
		fail_msg("emit: %s", err.msg);
	assert_valid(doc);
	return doc;
}

static cJSON *emit(const struct hb_jobspec *s, struct hb_report *rep)
{
	struct hb_config cfg;

	config(&cfg);
	return emit_cfg(s, &cfg, -1, rep);
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

static const char *key_at(const cJSON *doc, const char *path, const char *key)
{
	return cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(hb_doc_get(doc, path), key));
}

/* The pod spec the runtime patch gives replicated job i. */
static const cJSON *patched_pod(const cJSON *doc, int i, const char *name)
{
	const cJSON *jobs = hb_doc_get(
	    cJSON_GetArrayItem(hb_doc_get(doc, "spec.runtimePatches"), 0),
	    "trainingRuntimeSpec.template.spec."
	    "replicatedJobs");
	const cJSON *j = cJSON_GetArrayItem(jobs, i);

	assert_string_equal(key_at(j, "", "name"), name);
	return hb_doc_get(j, "template.spec.template");
}

static void test_contract(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	const cJSON *args, *pod;
	struct hb_buf un;
	const char *b;
	size_t blen;
	cJSON *doc;

	(void)state;
	new_spec(&s, NULL);
	HB_TEST_SET_STR(&s, name, HB_F_NAME, "ResNet Train");
	HB_TEST_SET_STR(&s, partition, HB_F_PARTITION, "gpu");
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 4);
	HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 8);
	HB_TEST_SET_NUM(&s, cpus_per_task, HB_F_CPUS_PER_TASK, 4);
	s.mem_kind = HB_MEM_PER_GPU;
	HB_TEST_SET_NUM(&s, mem_mb, HB_F_MEM, 16384);
	s.gpu_scope = HB_GPU_PER_TASK;
	s.gpu_type = hb_jobspec_strdup(&s, "a100");
	HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, 1);
	HB_TEST_SET_NUM(&s, time_limit, HB_F_TIME_LIMIT, 7200);
	HB_TEST_SET_STR(&s, constraint, HB_F_CONSTRAINT, "ib");
	HB_TEST_SET_NUM(&s, exclusive, HB_F_EXCLUSIVE, true);
	doc = emit(&s, &rep);

	assert_string_equal(str_at(doc, "apiVersion"),
			    "trainer.kubeflow.org/v1alpha1");
	assert_string_equal(str_at(doc, "kind"), "TrainJob");
	assert_string_equal(str_at(doc, "metadata.name"), "resnet-train");
	assert_string_equal(str_at(doc, "metadata.namespace"), "ml");
	assert_string_equal(
	    key_at(doc, "metadata.labels", "kueue.x-k8s.io/queue-name"),
	    "gpu-queue");
	assert_string_equal(str_at(doc, "spec.runtimeRef.apiGroup"),
			    "trainer.kubeflow.org");
	assert_string_equal(str_at(doc, "spec.runtimeRef.kind"),
			    "ClusterTrainingRuntime");
	assert_string_equal(str_at(doc, "spec.runtimeRef.name"), "site-mpi");
	assert_int_equal(num_at(doc, "spec.activeDeadlineSeconds"), 7200);
	assert_int_equal(num_at(doc, "spec.trainer.numNodes"), 4);
	/* An integer in this CRD, not a string. */
	assert_int_equal(num_at(doc, "spec.trainer.numProcPerNode"), 8);
	assert_string_equal(str_at(doc, "spec.trainer.image"),
			    "ghcr.io/site/openmpi:4.1");
	assert_string_equal(str_at(doc, "spec.trainer.resourcesPerNode."
					"limits.cpu"),
			    "32");
	assert_string_equal(str_at(doc, "spec.trainer.resourcesPerNode."
					"requests.memory"),
			    "128Gi");
	assert_string_equal(key_at(doc, "spec.trainer.resourcesPerNode.limits",
				   "nvidia.com/gpu"),
			    "8");
	assert_true(cJSON_Compare(
	    hb_doc_get(doc, "spec.trainer.resourcesPerNode.limits"),
	    hb_doc_get(doc, "spec.trainer.resourcesPerNode.requests"), 1));
	assert_string_equal(cJSON_GetArrayItem(hb_doc_get(doc, "spec.trainer."
							       "command"),
					       0)
				->valuestring,
			    "/bin/sh");
	assert_string_equal(
	    key_at(cJSON_GetArrayItem(hb_doc_get(doc, "spec.trainer."
						      "env"),
				      0),
		   "", "name"),
	    "NCCL_P2P_DISABLE");
	/* args[0] is the launcher script, escaped, around the job. */
	args = hb_doc_get(doc, "spec.trainer.args");
	assert_int_equal(cJSON_GetArraySize(args), 1);
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
	/* Placement on both of the runtime's jobs. */
	for (int i = 0; i < 2; i++) {
		pod = patched_pod(doc, i, i ? "node" : "launcher");
		assert_string_equal(
		    key_at(pod, "spec.nodeSelector", "feature.node/ib"),
		    "true");
		assert_string_equal(
		    key_at(pod, "spec.nodeSelector", "nvidia.com/gpu.product"),
		    "A100");
		assert_non_null(hb_doc_get(pod, "spec.affinity."
						"podAntiAffinity"));
		assert_string_equal(
		    key_at(pod, "metadata.labels", "hpcbridge.io/job-name"),
		    "resnet-train");
	}
	assert_string_equal(
	    str_at(
		cJSON_GetArrayItem(hb_doc_get(doc, "spec.runtimePatches"), 0),
		"manager"),
	    "hpcbridge.io/gateway");
	/* No MPI field: the runtime decides; kept for the way back. */
	assert_string_equal(
	    key_at(doc, "metadata.annotations", "hpcbridge.io/mpi"), "OpenMPI");
	assert_int_equal(rep.fate[HB_F_MPI].kind, HB_FATE_CARRIED);
	assert_string_equal(rep.fate[HB_F_NODES].target,
			    "spec.trainer.numNodes");
	assert_string_equal(rep.fate[HB_F_NTASKS_PER_NODE].target,
			    "spec.trainer.numProcPerNode");
	assert_string_equal(rep.fate[HB_F_TIME_LIMIT].target,
			    "spec.activeDeadlineSeconds");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_runtime_and_mpi(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	cJSON *doc;

	(void)state;
	config(&cfg);
	cfg.k8s.trainjob_runtime = NULL;
	new_spec(&s, "#!/bin/sh\nmpiexec.hydra ./x\n");
	doc = emit_cfg(&s, &cfg, -1, &rep);
	assert_string_equal(str_at(doc, "spec.runtimeRef.name"),
			    "mpi-distributed");
	/* Trainer runs Open MPI only: an Intel job is reported. */
	assert_int_equal(s.mpi, HB_MPI_INTEL);
	assert_int_equal(rep.fate[HB_F_MPI].kind, HB_FATE_PARTIAL);
	assert_string_equal(
	    key_at(doc, "metadata.annotations", "hpcbridge.io/mpi"), "Intel");
	/* No deadline, no placement: labels and who the pod runs as
	 * only in the patch. */
	assert_null(hb_doc_get(doc, "spec.activeDeadlineSeconds"));
	assert_null(hb_doc_get(patched_pod(doc, 1, "node"), "spec.nodeSelector"));
	assert_null(hb_doc_get(patched_pod(doc, 1, "node"), "spec.affinity"));
	assert_int_equal(
	    cJSON_GetArraySize(hb_doc_get(patched_pod(doc, 1, "node"), "spec")),
	    1);
	assert_true(cJSON_IsTrue(hb_doc_get(
	    patched_pod(doc, 1, "node"), "spec.securityContext.runAsNonRoot")));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_name_budget(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	char host[128], longname[120];
	static const uint32_t nodes[] = {1, 2, 100, 100000};
	cJSON *doc;

	(void)state;
	memset(longname, 'z', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		const char *n;

		new_spec(&s, "#!/bin/sh\n./x\n");
		s.name = hb_jobspec_strdup(&s, longname);
		s.nodes_min = nodes[i];
		doc = emit(&s, &rep);
		n = str_at(doc, "metadata.name");
		/* JobSet's pod host names stay DNS labels. */
		snprintf(host, sizeof(host), "%s-launcher-0-0", n);
		assert_true(strlen(host) <= 63);
		snprintf(host, sizeof(host), "%s-node-0-%u", n, nodes[i] - 1);
		assert_true(strlen(host) <= 63);
		cJSON_Delete(doc);
		hb_report_free(&rep);
		hb_jobspec_free(&s);
	}
}

/* A job that sets every field. */
static void full_spec(struct hb_jobspec *s)
{
	new_spec(s, NULL);
	HB_TEST_SET_STR(s, name, HB_F_NAME, "Full Train");
	HB_TEST_SET_STR(s, user, HB_F_USER, "bob");
	HB_TEST_SET_STR(s, account, HB_F_ACCOUNT, "ml-team");
	HB_TEST_SET_STR(s, partition, HB_F_PARTITION, "gpu");
	HB_TEST_SET_STR(s, qos, HB_F_QOS, "normal");
	HB_TEST_SET_STR(s, comment, HB_F_COMMENT, "nightly");
	HB_TEST_SET_NUM(s, nodes_min, HB_F_NODES, 2);
	HB_TEST_SET_NUM(s, ntasks, HB_F_NTASKS, 16);
	HB_TEST_SET_NUM(s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 8);
	HB_TEST_SET_NUM(s, cpus_per_task, HB_F_CPUS_PER_TASK, 4);
	s->mem_kind = HB_MEM_PER_NODE;
	HB_TEST_SET_NUM(s, mem_mb, HB_F_MEM, 262144);
	s->gpu_scope = HB_GPU_PER_NODE;
	s->gpu_type = hb_jobspec_strdup(s, "a100");
	HB_TEST_SET_NUM(s, gpus, HB_F_GPUS, 8);
	HB_TEST_SET_STR(s, licenses, HB_F_LICENSES, "fluent:4");
	HB_TEST_SET_NUM(s, exclusive, HB_F_EXCLUSIVE, true);
	HB_TEST_SET_STR(s, constraint, HB_F_CONSTRAINT, "ib");
	HB_TEST_SET_STR(s, nodelist, HB_F_NODELIST, "g[01-02]");
	HB_TEST_SET_STR(s, exclude, HB_F_EXCLUDE, "g03");
	HB_TEST_SET_NUM(s, time_limit, HB_F_TIME_LIMIT, 172800);
	HB_TEST_SET_NUM(s, time_min, HB_F_TIME_MIN, 86400);
	HB_TEST_SET_STR(s, begin, HB_F_BEGIN, "2027-02-01T00:00:00");
	HB_TEST_SET_STR(s, deadline, HB_F_DEADLINE, "2027-03-01T00:00:00");
	HB_TEST_SET_STR(s, signal, HB_F_SIGNAL, "USR2@300");
	HB_TEST_SET_STR(s, output, HB_F_OUTPUT, "train-%j.out");
	HB_TEST_SET_STR(s, error, HB_F_ERROR, "train-%j.err");
	HB_TEST_SET_STR(s, input, HB_F_INPUT, "/dev/null");
	HB_TEST_SET_STR(s, chdir, HB_F_CHDIR, "/work/ml");
	s->array = hb_jobspec_strdup(s, "0-3");
	s->array_ranges = hb_arena_alloc(&s->arena, sizeof(struct hb_range));
	s->array_ranges[0] = (struct hb_range){0, 3, 1};
	s->narray_ranges = 1;
	hb_test_dir(s, HB_F_ARRAY, "--array=0-3");
	HB_TEST_SET_STR(s, dependency, HB_F_DEPENDENCY, "afterany:42");
	HB_TEST_SET_STR(s, mail_type, HB_F_MAIL_TYPE, "ALL");
	HB_TEST_SET_STR(s, mail_user, HB_F_MAIL_USER, "bob@example.org");
	HB_TEST_SET_NUM(s, requeue, HB_F_REQUEUE, 0);
	HB_TEST_SET_STR(s, export_spec, HB_F_EXPORT, "NONE");
	assert_int_equal(hb_jobspec_add_env(s, "WANDB_MODE", "offline"), 0);
	hb_test_dir(s, HB_F_ENV, "--export=...");
	s->mpi = HB_MPI_OPENMPI;
	hb_test_dir(s, HB_F_MPI, "mpi");
	HB_TEST_SET_STR(s, container, HB_F_CONTAINER, "nvcr.io/nvidia/pytorch:24.01");
	HB_TEST_SET_STR(s, checkpoint_dir, HB_F_CHECKPOINT, "/ckpt/train");
	assert_int_equal(hb_jobspec_add_data(s, "s3://datasets/imagenet"), 0);
	hb_test_dir(s, HB_F_DATA, "data");
	HB_TEST_SET_STR(s, keep, HB_F_KEEP, "n");
	s->chunks = hb_arena_alloc(&s->arena, sizeof(struct hb_chunk));
	s->chunks[0] = (struct hb_chunk){2, 32, 8, 4, 8, 262144};
	s->nchunks = 1;
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
	config(&cfg);
	full_spec(&s);
	doc = emit_cfg(&s, &cfg, 2, &rep);
	for (int f = 0; f < HB__F_COUNT; f++) {
		if (!hb_jobspec_has(&s, (enum hb_field)f))
			fail_msg("full_spec does not set %s",
				 hb_field_name((enum hb_field)f));
		if (rep.fate[f].kind == HB_FATE_NONE)
			fail_msg("field %s has no fate",
				 hb_field_name((enum hb_field)f));
	}
	assert_string_equal(str_at(doc, "metadata.name"), "full-train-2");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}


/* jobspec -> TrainJob -> YAML -> jobspec -> TrainJob, valid throughout. */
static void round_trip(const struct hb_jobspec *a, int64_t idx)
{
	struct hb_config cfg;

	config(&cfg);
	hb_test_manifest_round_trip(a, &cfg, HB_SRC_TRAINJOB, idx, schemas,
				    NULL);
}

static void test_round_trip(void **state)
{
	struct hb_jobspec s;

	(void)state;
	full_spec(&s);
	round_trip(&s, -1);
	round_trip(&s, 3);
	hb_jobspec_free(&s);

	/* No MPI named, nothing but a script. */
	new_spec(&s, "#!/bin/sh\necho hi\n");
	round_trip(&s, -1);
	hb_jobspec_free(&s);
}

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
	rc = hb_trainjob_parse(doc, s, err);
	cJSON_Delete(doc);
	return rc;
}

static bool has_dir(const struct hb_jobspec *s, const char *prefix)
{
	for (uint32_t i = 0; i < s->ndirectives; i++)
		if (strncmp(s->directives[i].text, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

static void test_trainer_example(void **state)
{
	struct hb_jobspec s;
	struct hb_err err;
	size_t len;
	char *text = hb_test_read_file(
	    hb_test_shared_path("reference/examples/trainjob-kueue.yaml"),
	    &len);

	(void)state;
	if (parse_text(text, "kueue.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(s.name, "kueue-example");
	assert_int_equal(s.nodes_min, 3);
	/* Limits, as Slurm allocates them. */
	assert_int_equal(s.cpus_per_task, 4);
	assert_int_equal(s.mem_mb, 8192);
	assert_string_equal(s.container, "python:3.11-slim");
	assert_true(
	    strncmp(s.script, "#!/bin/sh\npython3 -c 'import time\n", 34) == 0);
	assert_non_null(strstr(s.script, "print(f\"Step {i + 1}/10\")"));
	/* The runtime, suspend and the queue are listed, not carried. */
	assert_true(has_dir(&s, "spec.runtimeRef.name: torch-distributed"));
	assert_true(has_dir(&s, "spec.suspend: true"));
	assert_true(has_dir(&s, "metadata.labels[kueue.x-k8s.io/queue-name]"));
	assert_true(has_dir(&s, "spec.trainer.resourcesPerNode.requests.cpu"));
	hb_jobspec_free(&s);
	free(text);
}

static void test_example(void **state)
{
	struct hb_jobspec s;
	struct hb_err err;
	size_t len;
	char *text = hb_test_read_file(
	    hb_test_src_path("examples/manifests/trainjob-mpi.yaml"), &len);

	(void)state;
	if (parse_text(text, "trainjob-mpi.yaml", &s, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.ntasks_per_node, 4);
	assert_int_equal(s.cpus_per_task, 8);
	assert_int_equal(s.gpus, 4);
	assert_int_equal(s.time_limit, 43200);
	/* $(RUN_ID) is the container's variable: ${RUN_ID} in the shell. */
	assert_non_null(strstr(s.script, "'/ckpt/run-'\"${RUN_ID}\""));
	assert_int_equal(s.nenv, 2);
	hb_jobspec_free(&s);
	free(text);
}

static const char *const hdr =
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
    "metadata: {name: t}\n";

static void test_hostile(void **state)
{
	static const struct {
		const char *spec, *want;
	} cases[] = {
	    {"spec: {}", "spec.runtimeRef.name: missing"},
	    {"spec: {runtimeRef: {name: 3}}",
	     "spec.runtimeRef.name: must be a string"},
	    {"spec: {runtimeRef: {name: r}}", "spec.trainer: missing"},
	    {"spec: {runtimeRef: {name: r}, trainer: []}",
	     "spec.trainer: must be a mapping"},
	    {"spec: {runtimeRef: {name: r}, trainer: {numNodes: 0, "
	     "command: [a]}}",
	     "spec.trainer.numNodes: must be an integer \u2265 1"},
	    {"spec: {runtimeRef: {name: r}, trainer: {numProcPerNode: "
	     "auto, command: [a]}}",
	     "spec.trainer.numProcPerNode: must be an integer"},
	    {"spec: {runtimeRef: {name: r}, trainer: {numNodes: "
	     "99999999999, command: [a]}}",
	     "spec.trainer.numNodes: must be at most"},
	    {"spec: {runtimeRef: {name: r}, trainer: {resourcesPerNode: "
	     "3, command: [a]}}",
	     "spec.trainer.resourcesPerNode: must be a mapping"},
	    {"spec: {runtimeRef: {name: r}, trainer: {image: x}}",
	     "no command or args"},
	    {"spec: {runtimeRef: {name: r}, activeDeadlineSeconds: x, "
	     "trainer: {command: [a]}}",
	     "spec.activeDeadlineSeconds: must be an integer"},
	    {"spec: {runtimeRef: {name: r}, trainer: {args: {a: 1}}}",
	     "spec.trainer.args: must be a list"},
	};
	char text[1024];
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
		assert_true(strncmp(err.msg, "bad.yaml:", 9) == 0);
		hb_jobspec_free(&s);
	}
	assert_int_not_equal(parse_text("apiVersion: kubeflow.org/v2beta1\n"
					"kind: MPIJob\n",
					"bad.yaml", &s, &err),
			     0);
	assert_non_null(strstr(err.msg, "kind"));
	hb_jobspec_free(&s);
}

/* The launcher script belongs to launcher.c: golden files show the job
 * script it runs instead. */
static void shorten_script(cJSON *doc)
{
	cJSON *args = hb_doc_get(doc, "spec.trainer.args");
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

static void golden(const char *name, cJSON *doc)
{
	char rel[256];
	struct hb_buf y;
	const char *path;
	char *want;
	size_t len;

	shorten_script(doc);
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

static void test_golden(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_config cfg;
	cJSON *doc;

	(void)state;
	config(&cfg);
	full_spec(&s);
	doc = emit_cfg(&s, &cfg, 1, &rep);
	golden("trainjob-full.yaml", doc);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	new_spec(&s, NULL);
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 2);
	HB_TEST_SET_NUM(&s, ntasks_per_node, HB_F_NTASKS_PER_NODE, 4);
	s.gpu_scope = HB_GPU_PER_TASK;
	HB_TEST_SET_NUM(&s, gpus, HB_F_GPUS, 1);
	doc = emit_cfg(&s, &cfg, -1, &rep);
	golden("trainjob-gpu.yaml", doc);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_contract),
	    cmocka_unit_test(test_runtime_and_mpi),
	    cmocka_unit_test(test_name_budget),
	    cmocka_unit_test(test_every_field_has_a_fate),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_trainer_example),
	    cmocka_unit_test(test_example),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_golden),
	};
	return cmocka_run_group_tests(tests, load_schemas, free_schemas);
}
