/*
 * test_schema.c - CRD schema validation and the controllers' rules,
 * against the reference CRDs and examples in shared/reference.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/schema.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

static const char *const crd_files[] = {
    "reference/crds/kubeflow.org_mpijobs.yaml",
    "reference/crds/trainer.kubeflow.org_trainjobs.yaml",
    "reference/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
};

static const char *const example_files[] = {
    "reference/examples/mpijob-pi-openmpi.yaml",
    "reference/examples/mpijob-pi-intel.yaml",
    "reference/examples/trainjob-kueue.yaml",
    "reference/examples/clustertrainingruntime-mpi-distributed.yaml",
};

static cJSON *load_doc(const char *path)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;
	size_t len;
	char *buf = hb_test_read_file(path, &len);
	int rc = hb_doc_parse(buf, len, path, &doc, &err);

	if (rc)
		fail_msg("%s: %s", path, err.msg);
	free(buf);
	return doc;
}

static cJSON *parse_yaml(const char *text)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;

	if (hb_doc_parse(text, strlen(text), "inline", &doc, &err))
		fail_msg("inline: %s", err.msg);
	return doc;
}

static int setup(void **state)
{
	struct hb_schema_set *set = hb_schema_set_new();
	size_t i;

	assert_non_null(set);
	for (i = 0; i < sizeof(crd_files) / sizeof(crd_files[0]); i++) {
		const char *path = hb_test_shared_path(crd_files[i]);
		struct hb_err err = {0};
		size_t len;
		char *buf = hb_test_read_file(path, &len);
		int rc =
		    hb_schema_set_add_crd(set, buf, len, crd_files[i], &err);

		free(buf);
		if (rc)
			fail_msg("%s: %s", crd_files[i], err.msg);
	}
	*state = set;
	return 0;
}

static int teardown(void **state)
{
	hb_schema_set_free(*state);
	return 0;
}

/* Validate with the rules; violations into out (reset first). */
static int check(void **state, const cJSON *obj, unsigned flags,
		 struct hb_buf *out, struct hb_err *err)
{
	memset(err, 0, sizeof(*err));
	hb_buf_reset(out);
	return hb_schema_validate_all(*state, obj, flags, out, err);
}

static void assert_has_line(const struct hb_buf *out, const char *want)
{
	const char *p = out->data;
	size_t n = strlen(want);

	for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, want, n))
			return;
	fail_msg("no violation starting with\n  %s\nin:\n%s", want,
		 out->data ? out->data : "(none)");
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* ---- loading ---- */

static void test_crds_load_and_unchecked_rules(void **state)
{
	struct hb_buf out;
	const char *p;
	size_t n;

	hb_buf_init(&out, 0);
	assert_int_equal(hb_schema_set_unchecked(*state, &out), 0);
	n = count_lines(out.data);
	/* 13 transition rules in TrainJob, 6 in ClusterTrainingRuntime;
	 * every other rule, pattern and format is checked */
	assert_int_equal(n, 19);
	for (p = out.data; p && *p; p = strchr(p, '\n') + 1) {
		const char *eol = strchr(p, '\n');
		const char *hit = strstr(p, "transition rule");

		assert_non_null(eol);
		if (!hit || hit > eol)
			fail_msg("not a transition rule: %.*s", (int)(eol - p),
				 p);
	}
	assert_non_null(strstr(out.data, "TrainJob v1alpha1 spec.runtimeRef: "
					 "rule 'self == oldSelf'"));
	hb_buf_free(&out);
}

static void test_crd_errors(void **state)
{
	struct hb_schema_set *set = hb_schema_set_new();
	struct hb_err err = {0};
	const char *ref =
	    "{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"CustomResourceDefinition\","
	    "\"spec\":{\"group\":\"x.io\",\"scope\":\"Namespaced\","
	    "\"names\":{\"kind\":\"Foo\"},\"versions\":[{\"name\":\"v1\","
	    "\"served\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":"
	    "\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
	    "\"properties\":{\"a\":{\"$ref\":\"#/x\"}}}}}}}]}}";
	const char *kw =
	    "{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"CustomResourceDefinition\","
	    "\"spec\":{\"group\":\"x.io\",\"scope\":\"Namespaced\","
	    "\"names\":{\"kind\":\"Foo\"},\"versions\":[{\"name\":\"v1\","
	    "\"served\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":"
	    "\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
	    "\"properties\":{\"a\":{\"type\":\"strin\"}}}}}}}]}}";

	(void)state;
	assert_non_null(set);
	assert_int_equal(
	    hb_schema_set_add_crd(set, "a: 1\n", 5, "x.yaml", &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "x.yaml: not an apiextensions"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(
	    hb_schema_set_add_crd(set, ref, strlen(ref), "r.json", &err),
	    HB_EUNSUP);
	assert_string_equal(err.msg, "r.json: spec.a: $ref: $ref is not "
				     "allowed in a CRD schema");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
	    hb_schema_set_add_crd(set, kw, strlen(kw), "k.json", &err),
	    HB_EINVAL);
	assert_string_equal(err.msg, "k.json: spec.a: type: unknown type "
				     "'strin'");
	hb_schema_set_free(set);
	hb_schema_set_free(NULL);
}

static void test_crd_replace(void **state)
{
	struct hb_schema_set *set = hb_schema_set_new();
	struct hb_buf out;
	struct hb_err err = {0};
	const char *path = hb_test_shared_path(crd_files[1]);
	size_t len, i;
	char *buf = hb_test_read_file(path, &len);

	(void)state;
	hb_buf_init(&out, 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(
		    hb_schema_set_add_crd(set, buf, len, "tj", &err), 0);
	assert_int_equal(hb_schema_set_unchecked(set, &out), 0);
	assert_int_equal(count_lines(out.data), 13);
	free(buf);
	hb_buf_free(&out);
	hb_schema_set_free(set);
}

/* ---- the reference examples ---- */

static void test_examples_valid(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	size_t i;

	hb_buf_init(&out, 0);
	for (i = 0; i < sizeof(example_files) / sizeof(example_files[0]); i++) {
		cJSON *doc = load_doc(hb_test_shared_path(example_files[i]));
		int rc = check(state, doc, HB_SCHEMA_RULES, &out, &err);

		if (rc)
			fail_msg("%s: %d\n%s", example_files[i], rc, out.data);
		assert_int_equal(out.len, 0);
		assert_int_equal(hb_schema_check_rules(doc, NULL, &err), 0);
		cJSON_Delete(doc);
	}
	hb_buf_free(&out);
}

static const char big_mpijob[] =
    "apiVersion: kubeflow.org/v2beta1\n"
    "kind: MPIJob\n"
    "metadata:\n"
    "  name: cfd-run-1842\n"
    "  namespace: hpc-burst\n"
    "  labels:\n"
    "    kueue.x-k8s.io/queue-name: gpu-queue\n"
    "    app.kubernetes.io/managed-by: hpcbridge\n"
    "    hpcbridge.io/slurm-job-id: \"1842\"\n"
    "  annotations:\n"
    "    hpcbridge.io/origin: \"slurm:job.sh:1\"\n"
    "    hpcbridge.io/script: |\n"
    "      #!/bin/bash\n"
    "      #SBATCH --nodes=4\n"
    "      srun ./cfd\n"
    "spec:\n"
    "  slotsPerWorker: 8\n"
    "  runLauncherAsWorker: false\n"
    "  launcherCreationPolicy: WaitForWorkersReady\n"
    "  mpiImplementation: OpenMPI\n"
    "  sshAuthMountPath: /home/mpiuser/.ssh\n"
    "  runPolicy:\n"
    "    cleanPodPolicy: Running\n"
    "    activeDeadlineSeconds: 86400\n"
    "    backoffLimit: 0\n"
    "    ttlSecondsAfterFinished: 3600\n"
    "    suspend: false\n"
    "    schedulingPolicy:\n"
    "      minAvailable: 5\n"
    "      queue: gpu-queue\n"
    "      minResources:\n"
    "        cpu: \"33\"\n"
    "        nvidia.com/gpu: 16\n"
    "  mpiReplicaSpecs:\n"
    "    Launcher:\n"
    "      replicas: 1\n"
    "      restartPolicy: OnFailure\n"
    "      template:\n"
    "        metadata:\n"
    "          labels:\n"
    "            role: launcher\n"
    "        spec:\n"
    "          serviceAccountName: mpi\n"
    "          containers:\n"
    "          - name: launcher\n"
    "            image: registry.example.com/hpc/openmpi:4.1.4\n"
    "            imagePullPolicy: IfNotPresent\n"
    "            command: [/bin/bash, /etc/hpcbridge/launch.sh]\n"
    "            env:\n"
    "            - name: SLURM_JOB_ID\n"
    "              value: \"1842\"\n"
    "            - name: NCCL_IB_DISABLE\n"
    "              value: \"1\"\n"
    "            - name: POD_NAME\n"
    "              valueFrom:\n"
    "                fieldRef:\n"
    "                  fieldPath: metadata.name\n"
    "            resources:\n"
    "              requests: {cpu: 1, memory: 2Gi}\n"
    "              limits: {cpu: 1, memory: 2Gi}\n"
    "            volumeMounts:\n"
    "            - name: script\n"
    "              mountPath: /etc/hpcbridge\n"
    "              readOnly: true\n"
    "            - name: scratch\n"
    "              mountPath: /scratch\n"
    "          volumes:\n"
    "          - name: script\n"
    "            configMap:\n"
    "              name: cfd-run-1842-script\n"
    "              defaultMode: 0755\n"
    "          - name: scratch\n"
    "            persistentVolumeClaim:\n"
    "              claimName: shared-scratch\n"
    "    Worker:\n"
    "      replicas: 4\n"
    "      restartPolicy: Never\n"
    "      template:\n"
    "        spec:\n"
    "          nodeSelector:\n"
    "            nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
    "            node.kubernetes.io/instance-type: p4d.24xlarge\n"
    "          tolerations:\n"
    "          - key: nvidia.com/gpu\n"
    "            operator: Exists\n"
    "            effect: NoSchedule\n"
    "          affinity:\n"
    "            nodeAffinity:\n"
    "              requiredDuringSchedulingIgnoredDuringExecution:\n"
    "                nodeSelectorTerms:\n"
    "                - matchExpressions:\n"
    "                  - key: topology.kubernetes.io/zone\n"
    "                    operator: In\n"
    "                    values: [us-east-1a]\n"
    "          securityContext:\n"
    "            runAsUser: 1000\n"
    "            fsGroup: 1000\n"
    "          containers:\n"
    "          - name: worker\n"
    "            image: registry.example.com/hpc/openmpi:4.1.4\n"
    "            command: [/usr/sbin/sshd, -De]\n"
    "            ports:\n"
    "            - containerPort: 2222\n"
    "              name: ssh\n"
    "            - containerPort: 2222\n"
    "              protocol: UDP\n"
    "            env:\n"
    "            - name: OMP_NUM_THREADS\n"
    "              value: \"4\"\n"
    "            resources:\n"
    "              requests:\n"
    "                cpu: \"32\"\n"
    "                memory: 480Gi\n"
    "                nvidia.com/gpu: 4\n"
    "                ephemeral-storage: 100G\n"
    "              limits:\n"
    "                cpu: 32000m\n"
    "                memory: 515396075520\n"
    "                nvidia.com/gpu: \"4\"\n"
    "            readinessProbe:\n"
    "              tcpSocket: {port: 2222}\n"
    "              initialDelaySeconds: 2\n"
    "            volumeMounts:\n"
    "            - {name: scratch, mountPath: /scratch}\n"
    "            - {name: dshm, mountPath: /dev/shm}\n"
    "          volumes:\n"
    "          - name: scratch\n"
    "            persistentVolumeClaim: {claimName: shared-scratch}\n"
    "          - name: dshm\n"
    "            emptyDir: {medium: Memory, sizeLimit: 64Gi}\n";

static void test_large_realistic_mpijob(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = parse_yaml(big_mpijob);
	int rc;

	hb_buf_init(&out, 0);
	rc = check(state, doc, HB_SCHEMA_RULES, &out, &err);
	if (rc)
		fail_msg("%d: %s\n%s", rc, err.msg, out.data);
	assert_int_equal(hb_schema_validate(*state, doc, &err), 0);
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

/* ---- mutations ---- */

static int atoi_safe(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return v < 0 || v > 1000000 || end == s ? -1 : (int)v;
}

/* Follow "a.b[2].c" from root; NULL if missing. */
static cJSON *at(cJSON *root, const char *path)
{
	char seg[256];
	cJSON *cur = root;

	while (cur && *path) {
		size_t n = strcspn(path, ".[");

		if (n) {
			if (n >= sizeof(seg))
				return NULL;
			memcpy(seg, path, n);
			seg[n] = '\0';
			cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
			path += n;
		} else if (*path == '[') {
			cur = cJSON_GetArrayItem(cur, atoi_safe(path + 1));
			path = strchr(path, ']') + 1;
		}
		if (*path == '.')
			path++;
	}
	return cur;
}

struct mutation {
	const char *base;   /* mpijob, trainjob, runtime */
	const char *parent; /* object to change ("" = root) */
	const char *key;
	const char *value;  /* JSON; NULL deletes key */
	int rules_only;	    /* the schema alone accepts it */
	const char *expect; /* start of one violation line */
};

static const struct mutation mutations[] = {
    /* unknown fields */
    {"mpijob", "", "specs", "{}", 0, "specs: unknown field"},
    {"mpijob", "spec", "slotPerWorker", "1", 0,
     "spec.slotPerWorker: unknown field"},
    {"mpijob", "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]",
     "imagePullPolicyy", "\"Always\"", 0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]."
     "imagePullPolicyy: unknown field"},
    {"mpijob", "metadata", "labelz", "{}", 0, "metadata.labelz: unknown field"},
    {"mpijob", "spec.mpiReplicaSpecs.Launcher.template", "metadata",
     "{\"labels\": {\"a\": \"b\"}, \"uid\": \"x\"}", 0,
     "spec.mpiReplicaSpecs.Launcher.template.metadata.uid: unknown "
     "field"},
    /* types */
    {"mpijob", "spec.mpiReplicaSpecs.Worker", "replicas", "\"2\"", 0,
     "spec.mpiReplicaSpecs.Worker.replicas: must be of type integer"},
    {"mpijob", "spec.mpiReplicaSpecs.Worker", "replicas", "2.5", 0,
     "spec.mpiReplicaSpecs.Worker.replicas: must be of type integer"},
    {"mpijob", "spec", "runLauncherAsWorker", "\"yes\"", 0,
     "spec.runLauncherAsWorker: must be of type boolean"},
    {"mpijob", "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]",
     "args", "[\"a\", 1]", 0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].args[1]: "
     "must be of type string"},
    {"mpijob",
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]."
     "resources.limits",
     "cpu", "true", 0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources."
     "limits.cpu: must be of type string or integer"},
    {"mpijob",
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]."
     "resources.limits",
     "cpu", "\"1 core\"", 0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources."
     "limits.cpu: Invalid value: \"1 core\": must match"},
    {"mpijob", "metadata", "labels", "{\"app\": 2}", 0,
     "metadata.labels.app: must be of type string"},
    /* enum, int32, required */
    {"mpijob", "spec", "mpiImplementation", "\"MVAPICH\"", 0,
     "spec.mpiImplementation: Unsupported value: \"MVAPICH\": supported "
     "values: \"OpenMPI\", \"Intel\", \"MPICH\""},
    {"mpijob", "spec", "slotsPerWorker", "3000000000", 0,
     "spec.slotsPerWorker: Invalid value: 3000000000: must fit in "
     "int32"},
    {"mpijob", "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]",
     "name", NULL, 0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].name: "
     "Required value"},
    {"mpijob", "spec", "mpiReplicaSpecs", NULL, 0,
     "spec.mpiReplicaSpecs: Required value"},
    {"mpijob", "spec", "mpiReplicaSpecs", "null", 0,
     "spec.mpiReplicaSpecs: Required value"},
    /* list-type map: defaults of map keys count */
    {"mpijob", "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]",
     "ports",
     "[{\"containerPort\": 22}, {\"containerPort\": 22, "
     "\"protocol\": \"TCP\"}]",
     0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].ports[1]: "
     "Duplicate value: containerPort=22, protocol=\"TCP\""},
    {"mpijob", "spec.mpiReplicaSpecs.Worker.template.spec", "containers",
     "[{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"a\"}]", 0,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers[2]: "
     "Duplicate value: name=\"a\""},
    /* ObjectMeta */
    {"mpijob", "metadata", "name", "\"Pi_Job\"", 0,
     "metadata.name: Invalid value: \"Pi_Job\": a lowercase RFC 1123 "
     "subdomain"},
    {"mpijob", "metadata", "name", NULL, 0,
     "metadata.name: Required value: name or generateName is "
     "required"},
    {"mpijob", "metadata", "namespace", "\"Team_A\"", 0,
     "metadata.namespace: Invalid value: \"Team_A\""},
    {"mpijob", "metadata", "labels", "{\"bad key!\": \"x\"}", 0,
     "metadata.labels[bad key!]: Invalid value: \"bad key!\": name part "
     "must consist of"},
    {"mpijob", "metadata", "labels", "{\"-x.io/a\": \"x\"}", 0,
     "metadata.labels[-x.io/a]: Invalid value: \"-x.io/a\": prefix "
     "part"},
    {"mpijob", "metadata", "labels", "{\"app\": \"-bad-\"}", 0,
     "metadata.labels.app: Invalid value: \"-bad-\": a valid label"},
    {"mpijob", "metadata", "labels",
     "{\"app\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaa\"}",
     0, "metadata.labels.app: Invalid value: \"aaaa"},
    {"mpijob", "metadata", "annotations", "{\"a/b/c\": \"x\"}", 0,
     "metadata.annotations[a/b/c]: Invalid value: \"a/b/c\": a "
     "qualified name"},
    {"mpijob", "metadata", "creationTimestamp", "\"yesterday\"", 0,
     "metadata.creationTimestamp: Invalid value: \"yesterday\""},
    {"mpijob", "metadata", "ownerReferences",
     "[{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"name\": \"p\"}]", 0,
     "metadata.ownerReferences[0].uid: Required value"},
    /* the operator's rules */
    {"mpijob", "spec.mpiReplicaSpecs.Launcher", "replicas", "2", 1,
     "spec.mpiReplicaSpecs.Launcher.replicas: Invalid value: 2: must "
     "be 1"},
    {"mpijob", "spec.mpiReplicaSpecs.Worker", "restartPolicy", "\"Always\"", 1,
     "spec.mpiReplicaSpecs.Worker.restartPolicy: Unsupported value: "
     "\"Always\": supported values: \"Never\", \"OnFailure\""},
    {"mpijob", "spec.mpiReplicaSpecs.Worker", "replicas", "0", 1,
     "spec.mpiReplicaSpecs.Worker.replicas: Invalid value: 0: must be "
     "greater than or equal to 1"},
    {"mpijob", "spec.mpiReplicaSpecs", "Launcher", NULL, 1,
     "spec.mpiReplicaSpecs.Launcher: Required value"},
    {"mpijob", "spec.mpiReplicaSpecs", "PS", "{\"replicas\": 1}", 1,
     "spec.mpiReplicaSpecs.PS: Unsupported value"},
    {"mpijob", "spec.mpiReplicaSpecs.Worker.template.spec", "containers", "[]",
     1,
     "spec.mpiReplicaSpecs.Worker.template.spec.containers: Required "
     "value: must define at least one container"},
    {"mpijob", "metadata", "name",
     "\"a-name-that-is-fifty-five-characters-long-xxxxxxxxxxxxx\"", 1,
     "metadata.name: Invalid value: \"a-name-that-is-fifty-five-"
     "characters-long-xxxxxxxxxxxxx\": will not be able to create pod "
     "and service with invalid DNS label"},
    {"mpijob", "metadata", "name", "\"1pi\"", 1,
     "metadata.name: Invalid value: \"1pi\": will not be able to create "
     "pod and service with invalid DNS label \"1pi-worker-1\": a "
     "DNS-1035 label"},
    {"mpijob", "spec.runPolicy", "cleanPodPolicy", "\"Sometimes\"", 1,
     "spec.runPolicy.cleanPodPolicy: Unsupported value: \"Sometimes\""},
    {"mpijob", "spec.runPolicy", "backoffLimit", "-1", 1,
     "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater "
     "than or equal to 0"},
    {"mpijob", "spec.runPolicy", "managedBy", "\"example.com/x\"", 1,
     "spec.runPolicy.managedBy: Unsupported value: \"example.com/x\""},
    {"mpijob", "spec", "slotsPerWorker", "-2", 1,
     "spec.slotsPerWorker: Invalid value: -2: must be greater than or "
     "equal to 0"},
    /* TrainJob: schema, CEL and webhook */
    {"trainjob", "metadata", "name", "\"9-train\"", 0,
     "<root>: metadata.name must match RFC 1035 DNS label format"},
    {"trainjob", "spec", "managedBy", "\"example.com/x\"", 0,
     "spec.managedBy: ManagedBy must be trainer.kubeflow.org/"
     "trainjob-controller or kueue.x-k8s.io/multikueue if set"},
    {"trainjob", "spec", "runtimeRef", NULL, 0,
     "spec.runtimeRef: Required value"},
    {"trainjob", "spec", "activeDeadlineSeconds", "0", 0,
     "spec.activeDeadlineSeconds: Invalid value: 0: must be greater "
     "than or equal to 1"},
    {"trainjob", "spec.runtimeRef", "name", "\"\"", 0,
     "spec.runtimeRef.name: Invalid value: \"\": must be at least 1 "
     "characters long"},
    {"trainjob", "spec", "initializer",
     "{\"dataset\": {\"storageUri\": \"s3-bucket/data\"}}", 0,
     "spec.initializer.dataset.storageUri: storageUri may be empty"},
    {"trainjob", "spec.runtimeRef", "kind", "\"MPIJob\"", 1,
     "spec.runtimeRef: Invalid value: unsupported runtime: "
     "MPIJob.trainer.kubeflow.org"},
    {"trainjob", "spec.trainer", "numNodes", "0", 1,
     "spec.trainer.numNodes: Invalid value: 0: must be greater than or "
     "equal to 1"},
    /* ClusterTrainingRuntime: cluster-scoped, CEL and webhook */
    {"runtime", "metadata", "namespace", "\"default\"", 0,
     "metadata.namespace: Forbidden: not allowed on this type"},
    {"runtime", "spec.mlPolicy", "torch", "{}", 0,
     "spec.mlPolicy: Only one of the policy can be configured"},
    {"runtime", "spec.mlPolicy.mpi", "mpiImplementation", "\"Intel\"", 0,
     "spec.mlPolicy.mpi.mpiImplementation: Unsupported value"},
    {"runtime", "spec.template.spec.replicatedJobs[0]", "replicas", "2", 1,
     "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: "
     "always must be 1"},
    {"runtime",
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec."
     "containers[0]",
     "name", "\"main\"", 1,
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec."
     "containers: Invalid value: must contain the required container "
     "for the ancestor: trainer"},
};

static cJSON *base_doc(const char *base)
{
	const char *file = !strcmp(base, "mpijob")     ? example_files[0]
			   : !strcmp(base, "trainjob") ? example_files[2]
						       : example_files[3];

	return load_doc(hb_test_shared_path(file));
}

static void test_mutations(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	size_t i;

	hb_buf_init(&out, 0);
	for (i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const struct mutation *m = &mutations[i];
		cJSON *doc = base_doc(m->base);
		cJSON *parent = at(doc, m->parent);
		int rc;

		if (!parent)
			fail_msg("mutation %zu: no %s", i, m->parent);
		cJSON_DeleteItemFromObjectCaseSensitive(parent, m->key);
		if (m->value) {
			cJSON *v = cJSON_Parse(m->value);

			assert_non_null(v);
			cJSON_AddItemToObject(parent, m->key, v);
		}
		rc = check(state, doc, HB_SCHEMA_RULES, &out, &err);
		if (rc != HB_EINVAL)
			fail_msg("mutation %zu (%s): rc %d, want HB_EINVAL", i,
				 m->expect, rc);
		assert_has_line(&out, m->expect);
		assert_true(err.msg[0] != '\0');
		memset(&err, 0, sizeof(err));
		rc = hb_schema_validate(*state, doc, &err);
		if (m->rules_only && rc != 0)
			fail_msg("mutation %zu: schema should accept it: %s", i,
				 err.msg);
		if (!m->rules_only && rc != HB_EINVAL)
			fail_msg("mutation %zu: schema should reject it", i);
		memset(&err, 0, sizeof(err));
		rc = hb_schema_check_rules(doc, NULL, &err);
		if (m->rules_only && rc != HB_EINVAL)
			fail_msg("mutation %zu: rules should reject it", i);
		cJSON_Delete(doc);
	}
	hb_buf_free(&out);
}

/* ---- specific behaviours ---- */

static void test_worker_name_boundary(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");
	cJSON *meta = at(doc, "metadata");
	/* 54 characters + "-worker-1" = 63: the longest name for 2
	 * workers; 55 is one too many */
	const char *ok =
	    "a-name-that-is-fifty-four-characters-long-xxxxxxxxxxxx";

	hb_buf_init(&out, 0);
	assert_int_equal(strlen(ok), 54);
	cJSON_ReplaceItemInObjectCaseSensitive(meta, "name",
					       cJSON_CreateString(ok));
	assert_int_equal(check(state, doc, HB_SCHEMA_RULES, &out, &err), 0);
	/* with 10 workers the suffix is "-worker-9": still 63 */
	cJSON_ReplaceItemInObjectCaseSensitive(
	    at(doc, "spec.mpiReplicaSpecs.Worker"), "replicas",
	    cJSON_CreateNumber(10));
	assert_int_equal(check(state, doc, HB_SCHEMA_RULES, &out, &err), 0);
	/* with 11 it is "-worker-10": 64 */
	cJSON_ReplaceItemInObjectCaseSensitive(
	    at(doc, "spec.mpiReplicaSpecs.Worker"), "replicas",
	    cJSON_CreateNumber(11));
	assert_int_equal(check(state, doc, HB_SCHEMA_RULES, &out, &err),
			 HB_EINVAL);
	assert_has_line(&out, "metadata.name: Invalid value");
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_null_is_pruned(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");
	cJSON *c0 = at(doc, "spec.mpiReplicaSpecs.Worker.template.spec."
			    "containers[0]");

	hb_buf_init(&out, 0);
	/* a non-nullable field given as null is dropped, as the server
	 * prunes it (the Intel example has "command:" with no value) */
	cJSON_ReplaceItemInObjectCaseSensitive(c0, "command",
					       cJSON_CreateNull());
	cJSON_AddItemToObject(at(doc, "metadata"), "creationTimestamp",
			      cJSON_CreateNull());
	assert_int_equal(check(state, doc, HB_SCHEMA_RULES, &out, &err), 0);
	/* but null is no array item */
	cJSON_ReplaceItemInObjectCaseSensitive(c0, "args",
					       cJSON_Parse("[null]"));
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "spec.mpiReplicaSpecs.Worker.template.spec."
			      "containers[0].args[0]: must be of type string");
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_duplicate_fields(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");
	cJSON *spec = at(doc, "spec");
	cJSON *labels;
	char key[32];
	int i;

	hb_buf_init(&out, 0);
	cJSON_AddItemToObject(spec, "slotsPerWorker", cJSON_CreateNumber(2));
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "spec.slotsPerWorker: duplicate field");
	assert_int_equal(count_lines(out.data), 1);
	/* many labels take the sorted path: 10 keys given twice */
	cJSON_DeleteItemFromObject(spec, "slotsPerWorker");
	labels = cJSON_AddObjectToObject(at(doc, "metadata"), "labels");
	for (i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "k%d", i % 30);
		cJSON_AddItemToObject(labels, key, cJSON_CreateString("v"));
	}
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_int_equal(count_lines(out.data), 10);
	assert_has_line(&out, "metadata.labels.k0: duplicate field");
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_set_list_unique(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");
	cJSON *c0 = at(doc, "spec.mpiReplicaSpecs.Worker.template.spec."
			    "containers[0]");

	hb_buf_init(&out, 0);
	cJSON_AddItemToObject(
	    c0, "restartPolicyRules",
	    cJSON_Parse("[{\"action\": \"Restart\", \"exitCodes\": "
			"{\"operator\": \"In\", \"values\": [1, 2, 1]}}]"));
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "spec.mpiReplicaSpecs.Worker.template.spec."
			      "containers[0].restartPolicyRules[0].exitCodes."
			      "values[2]: Duplicate value: 1");
	assert_int_equal(count_lines(out.data), 1);
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_create_drops_status(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("trainjob");

	hb_buf_init(&out, 0);
	/* TrainJob status has minProperties: 1, and conditions is a list */
	cJSON_AddItemToObject(doc, "status",
			      cJSON_Parse("{\"conditions\": \"x\", "
					  "\"bogus\": 1}"));
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "status.conditions: must be of type array");
	assert_has_line(&out, "status.bogus: unknown field");
	assert_int_equal(check(state, doc, HB_SCHEMA_CREATE, &out, &err),
			 HB_EINVAL);
	assert_int_equal(count_lines(out.data), 1);
	assert_has_line(&out, "status.bogus: unknown field");
	cJSON_DeleteItemFromObject(doc, "status");
	cJSON_AddItemToObject(doc, "status", cJSON_CreateObject());
	assert_int_equal(check(state, doc, HB_SCHEMA_CREATE, &out, &err), 0);
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "status: must have at least 1 properties");
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_violation_cap_and_detail(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");
	cJSON *spec = at(doc, "spec");
	char key[32];
	int i;

	hb_buf_init(&out, 0);
	for (i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "x%03d", i);
		cJSON_AddItemToObject(spec, key, cJSON_CreateTrue());
	}
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_int_equal(count_lines(out.data), HB_SCHEMA_MAX_VIOLATIONS + 1);
	assert_has_line(&out, "... and 100 more");
	assert_string_equal(err.msg, "spec.x000: unknown field (and 299 more)");
	assert_int_equal(err.code, HB_EINVAL);
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_kind_selection(void **state)
{
	struct hb_err err = {0};
	cJSON *doc = base_doc("mpijob");

	cJSON_ReplaceItemInObjectCaseSensitive(
	    doc, "apiVersion", cJSON_CreateString("kubeflow.org/v1"));
	assert_int_equal(hb_schema_validate(*state, doc, &err), HB_ENOENT);
	assert_non_null(strstr(err.msg, "no schema for kind MPIJob"));
	cJSON_DeleteItemFromObject(doc, "apiVersion");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_validate(*state, doc, &err), HB_EINVAL);
	assert_string_equal(err.msg, "apiVersion: Required value");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_check_rules(doc, NULL, &err), HB_ENOENT);
	cJSON_Delete(doc);
}

static void test_annotation_budget(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");
	cJSON *ann =
	    cJSON_AddObjectToObject(at(doc, "metadata"), "annotations");
	char *big = malloc(200 * 1024);

	assert_non_null(big);
	memset(big, 'x', 200 * 1024 - 1);
	big[200 * 1024 - 1] = '\0';
	hb_buf_init(&out, 0);
	cJSON_AddItemToObject(ann, "hpcbridge.io/a", cJSON_CreateString(big));
	assert_int_equal(check(state, doc, 0, &out, &err), 0);
	cJSON_AddItemToObject(ann, "hpcbridge.io/b", cJSON_CreateString(big));
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "metadata.annotations: Too long");
	free(big);
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_trainjob_runtime(void **state)
{
	struct hb_buf out;
	struct hb_err err = {0};
	cJSON *tj = base_doc("trainjob");
	cJSON *rt = base_doc("runtime");
	cJSON *ref = at(tj, "spec.runtimeRef");

	(void)state;
	hb_buf_init(&out, 0);
	/* the example refers to torch-distributed */
	assert_int_equal(hb_schema_check_trainjob_runtime(tj, rt, &out, &err),
			 HB_EINVAL);
	assert_has_line(&out, "spec.runtimeRef: Invalid value: "
			      "ClusterTrainingRuntime \"torch-distributed\" "
			      "not found");
	cJSON_ReplaceItemInObjectCaseSensitive(
	    ref, "name", cJSON_CreateString("mpi-distributed"));
	hb_buf_reset(&out);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_check_trainjob_runtime(tj, rt, &out, &err),
			 0);
	/* runLauncherAsNode with 3 nodes needs launcher and node jobs */
	cJSON_DeleteItemFromArray(at(rt, "spec.template.spec.replicatedJobs"),
				  1);
	assert_int_equal(hb_schema_check_trainjob_runtime(tj, rt, &out, &err),
			 HB_EINVAL);
	assert_has_line(&out, "spec.trainer.numNodes: Invalid value: 3: must "
			      "have 1 when MPI trainingRuntime");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_check_trainjob_runtime(tj, tj, NULL, &err),
			 HB_EINVAL);
	cJSON_Delete(tj);
	cJSON_Delete(rt);
	hb_buf_free(&out);
}

static void test_path_quoting(void **state)
{
	struct hb_buf out;
	struct hb_err err;
	cJSON *doc = base_doc("mpijob");

	hb_buf_init(&out, 0);
	cJSON_AddItemToObject(at(doc, "spec"), "we ird]\n", cJSON_CreateTrue());
	assert_int_equal(check(state, doc, 0, &out, &err), HB_EINVAL);
	assert_has_line(&out, "spec[we ird\\x5d\\x0a]: unknown field");
	cJSON_Delete(doc);
	hb_buf_free(&out);
}

static void test_many_validations(void **state)
{
	struct hb_err err = {0};
	cJSON *doc = parse_yaml(big_mpijob);
	int i;

	/* load once, validate many: no state carried between runs */
	for (i = 0; i < 2000; i++)
		assert_int_equal(hb_schema_validate_all(
				     *state, doc, HB_SCHEMA_RULES, NULL, &err),
				 0);
	cJSON_Delete(doc);
}

/* ---- keywords the reference CRDs do not use ---- */

static const char widget_crd[] =
    "apiVersion: apiextensions.k8s.io/v1\n"
    "kind: CustomResourceDefinition\n"
    "metadata: {name: widgets.example.com}\n"
    "spec:\n"
    "  group: example.com\n"
    "  scope: Cluster\n"
    "  names: {kind: Widget, plural: widgets}\n"
    "  versions:\n"
    "  - name: v0\n"
    "    served: false\n"
    "    storage: false\n"
    "    schema: {openAPIV3Schema: {type: object}}\n"
    "  - name: v1\n"
    "    served: true\n"
    "    storage: true\n"
    "    subresources: {status: {}}\n"
    "    schema:\n"
    "      openAPIV3Schema:\n"
    "        type: object\n"
    "        required: [spec]\n"
    "        properties:\n"
    "          apiVersion: {type: string}\n"
    "          kind: {type: string}\n"
    "          metadata: {type: object}\n"
    "          status: {type: object, properties: {n: {type: integer}}}\n"
    "          spec:\n"
    "            type: object\n"
    "            maxProperties: 12\n"
    "            properties:\n"
    "              ratio: {type: number, exclusiveMinimum: true,\n"
    "                      minimum: 0, maximum: 1}\n"
    "              step: {type: integer, multipleOf: 5}\n"
    "              note: {type: string, nullable: true}\n"
    "              when: {type: string, format: date-time}\n"
    "              code: {type: string, pattern: '^[A-Z]{3}$'}\n"
    "              size: {type: string, format: email}\n"
    "              tags: {type: array, uniqueItems: true,\n"
    "                     items: {type: string}, maxItems: 3}\n"
    "              free: {type: object,\n"
    "                     x-kubernetes-preserve-unknown-fields: true}\n"
    "              open: {type: object, additionalProperties: true}\n"
    "              closed: {type: object, additionalProperties: false}\n"
    "              choice:\n"
    "                oneOf:\n"
    "                - {required: [a]}\n"
    "                - {required: [b]}\n"
    "                type: object\n"
    "                properties: {a: {type: string}, b: {type: string}}\n"
    "              notc:\n"
    "                type: string\n"
    "                not: {enum: [forbidden]}\n"
    "                allOf: [{minLength: 2}, {maxLength: 4}]\n"
    "              inner:\n"
    "                type: object\n"
    "                x-kubernetes-embedded-resource: true\n"
    "                properties: {spec: {type: object},\n"
    "                             metadata: {type: object}}\n";

static void test_generic_keywords(void **state)
{
	struct hb_schema_set *set = hb_schema_set_new();
	struct hb_buf out;
	struct hb_err err = {0};
	cJSON *doc;
	const char *good = "apiVersion: example.com/v1\n"
			   "kind: Widget\n"
			   "metadata: {name: w, generateName: w-}\n"
			   "status: {n: x}\n"
			   "spec:\n"
			   "  ratio: 0.5\n"
			   "  step: 15\n"
			   "  note: null\n"
			   "  when: 2024-02-29T23:59:60.5+05:30\n"
			   "  code: ABC\n"
			   "  size: anything\n"
			   "  tags: [a, b]\n"
			   "  free: {x: {y: [1]}}\n"
			   "  open: {z: 1}\n"
			   "  choice: {a: x}\n"
			   "  notc: abc\n"
			   "  inner:\n"
			   "    apiVersion: v1\n"
			   "    kind: ConfigMap\n"
			   "    metadata: {name: c, labels: {a: b}}\n"
			   "    spec: {}\n";
	const char *bad = "apiVersion: example.com/v1\n"
			  "kind: Widget\n"
			  "metadata: {name: w, namespace: default}\n"
			  "spec:\n"
			  "  ratio: 0\n"
			  "  step: 7\n"
			  "  when: 2024-13-01T00:00:00Z\n"
			  "  code: abc\n"
			  "  tags: [a, b, a, c]\n"
			  "  closed: {z: 1}\n"
			  "  choice: {a: x, b: y}\n"
			  "  notc: forbidden\n"
			  "  inner: {metadata: {bogus: 1}}\n";

	(void)state;
	hb_buf_init(&out, 0);
	assert_non_null(set);
	if (hb_schema_set_add_crd(set, widget_crd, strlen(widget_crd), "w",
				  &err))
		fail_msg("%s", err.msg);
	assert_int_equal(hb_schema_set_unchecked(set, &out), 0);
	assert_string_equal(out.data, "Widget v1 spec.size: format 'email' "
				      "(not checked)\n");

	/* on create the status subresource is dropped, else checked */
	doc = parse_yaml(good);
	hb_buf_reset(&out);
	assert_int_equal(
	    hb_schema_validate_all(set, doc, HB_SCHEMA_CREATE, &out, &err), 0);
	assert_int_equal(hb_schema_validate_all(set, doc, 0, &out, &err),
			 HB_EINVAL);
	assert_string_equal(out.data, "status.n: must be of type integer\n");
	cJSON_Delete(doc);

	doc = parse_yaml(bad);
	hb_buf_reset(&out);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_validate_all(set, doc, 0, &out, &err),
			 HB_EINVAL);
	assert_has_line(&out, "metadata.namespace: Forbidden");
	assert_has_line(&out, "spec.ratio: Invalid value: 0: must be greater "
			      "than 0");
	assert_has_line(&out, "spec.step: Invalid value: 7: must be a "
			      "multiple of 5");
	assert_has_line(&out, "spec.when: Invalid value: "
			      "\"2024-13-01T00:00:00Z\": must be a date-time");
	assert_has_line(&out, "spec.code: Invalid value: \"abc\": must match "
			      "'^[A-Z]{3}$'");
	assert_has_line(&out, "spec.tags: Too many: 4: must have at most 3");
	assert_has_line(&out, "spec.tags[2]: Duplicate value: \"a\"");
	assert_has_line(&out, "spec.closed.z: unknown field");
	assert_has_line(&out, "spec.choice: must match exactly one schema in "
			      "oneOf, not 2");
	assert_has_line(&out, "spec.notc: must not match the schema in not");
	assert_has_line(&out, "spec.notc: must match schema 1 of allOf");
	assert_has_line(&out, "spec.inner.metadata.bogus: unknown field");
	assert_has_line(&out, "spec.inner.apiVersion: Required value");
	assert_has_line(&out, "spec.inner.kind: Required value");
	assert_int_equal(count_lines(out.data), 14);
	cJSON_Delete(doc);

	/* v0 is not served */
	doc = parse_yaml("apiVersion: example.com/v0\nkind: Widget\n"
			 "metadata: {name: w}\n");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_validate(set, doc, &err), HB_ENOENT);
	cJSON_Delete(doc);
	/* required spec; status is not required on create either way */
	doc = parse_yaml("apiVersion: example.com/v1\nkind: Widget\n"
			 "metadata: {name: w}\n");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_schema_validate(set, doc, &err), HB_EINVAL);
	assert_string_equal(err.msg, "spec: Required value");
	cJSON_Delete(doc);
	hb_buf_free(&out);
	hb_schema_set_free(set);
}

/* ---- what the project emits ---- */

/* Validate doc with the rules; on failure append a report to fails. */
static void check_emitted(void **state, const char *what, const cJSON *doc,
			  const cJSON *runtime, struct hb_buf *fails)
{
	struct hb_buf out;
	struct hb_err err = {0};
	int rc;

	hb_buf_init(&out, 0);
	rc = hb_schema_validate_all(*state, doc, HB_SCHEMA_RULES, &out, &err);
	if (!rc && runtime)
		rc = hb_schema_check_trainjob_runtime(doc, runtime, &out, &err);
	if (rc)
		hb_buf_printf(fails, "%s:\n%s%s", what,
			      out.len ? out.data : err.msg,
			      out.len ? "" : "\n");
	hb_buf_free(&out);
}

static size_t translate_dir(void **state, const char *dir,
			    const struct hb_config *cfg, const cJSON *runtime,
			    struct hb_buf *fails)
{
	struct dirent *de;
	size_t docs = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[4096], what[4200];
		struct hb_jobspec spec;
		struct hb_report rep;
		struct hb_err err = {0};
		uint64_t count, i;
		size_t len;
		char *buf;
		int to;

		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		buf = hb_test_read_file(path, &len);
		hb_jobspec_init(&spec, de->d_name);
		if (hb_parse_any(buf, len, de->d_name, NULL, &spec, &err)) {
			/* bad inputs belong to the parsers' tests */
			hb_jobspec_free(&spec);
			free(buf);
			continue;
		}
		count = hb_jobspec_array_count(&spec);
		for (to = 0; to < 2; to++) {
			for (i = 0; i < (count ? count : 1) && i < 3; i++) {
				int64_t idx =
				    count ? (int64_t)hb_jobspec_array_index(
						&spec, i)
					  : -1;
				cJSON *doc = NULL;
				int rc;

				hb_report_init(&rep,
					       to ? "TrainJob" : "MPIJob");
				memset(&err, 0, sizeof(err));
				rc = to ? hb_trainjob_emit(&spec, &cfg->k8s, idx,
							   &doc, &rep, &err)
					: hb_mpijob_emit(&spec, &cfg->k8s, idx, &doc,
							 &rep, &err);
				snprintf(what, sizeof(what), "%s -> %s[%lld]",
					 path, to ? "TrainJob" : "MPIJob",
					 (long long)idx);
				if (!rc) {
					check_emitted(state, what, doc,
						      to ? runtime : NULL,
						      fails);
					docs++;
				}
				cJSON_Delete(doc);
				hb_report_free(&rep);
			}
		}
		hb_jobspec_free(&spec);
		free(buf);
	}
	closedir(d);
	return docs;
}

static void test_emitted_manifests(void **state)
{
	static const char *const dirs[] = {
	    "examples/sbatch",
	    "examples/pbs",
	    "tests/corpus/pbs",
	    "tests/corpus/sbatch-oracle",
	};
	struct hb_config cfg;
	struct hb_buf fails;
	cJSON *runtime = base_doc("runtime");
	size_t i, docs = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.k8s.namespace = "hpc";
	cfg.k8s.default_image = "registry.example.com/hpc/openmpi:4.1.4";
	cfg.k8s.default_mpi = "OpenMPI";
	cfg.k8s.trainjob_runtime = "mpi-distributed"; /* the reference runtime */
	cfg.k8s.ssh_auth_mount_path = "/home/mpiuser/.ssh";
	cfg.k8s.gpu_resource = "nvidia.com/gpu";
	cfg.k8s.launcher_cpus = 1;
	cfg.k8s.launcher_mem_mb = 1024;
	cfg.k8s.max_array_jobs = 100;
	hb_buf_init(&fails, 0);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		docs += translate_dir(state, hb_test_src_path(dirs[i]), &cfg,
				      runtime, &fails);
	if (fails.len)
		fail_msg("emitted manifests the CRDs or controllers reject:\n"
			 "%s",
			 fails.data);
	/* the bundled examples alone give a dozen manifests */
	assert_true(docs >= 10);
	cJSON_Delete(runtime);
	hb_buf_free(&fails);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crds_load_and_unchecked_rules),
	    cmocka_unit_test(test_crd_errors),
	    cmocka_unit_test(test_crd_replace),
	    cmocka_unit_test(test_examples_valid),
	    cmocka_unit_test(test_large_realistic_mpijob),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_worker_name_boundary),
	    cmocka_unit_test(test_null_is_pruned),
	    cmocka_unit_test(test_duplicate_fields),
	    cmocka_unit_test(test_set_list_unique),
	    cmocka_unit_test(test_create_drops_status),
	    cmocka_unit_test(test_violation_cap_and_detail),
	    cmocka_unit_test(test_kind_selection),
	    cmocka_unit_test(test_annotation_budget),
	    cmocka_unit_test(test_trainjob_runtime),
	    cmocka_unit_test(test_path_quoting),
	    cmocka_unit_test(test_many_validations),
	    cmocka_unit_test(test_generic_keywords),
	    cmocka_unit_test(test_emitted_manifests),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
