/*
 * test_fabric_sides.c - what the sides advertise, read from fixtures in
 * the real APIs' shapes (tests/unit/data/fabric/): Kubernetes Nodes, DRA
 * DeviceClasses and ResourceSlices (v1beta1's basic.attributes and v1's
 * attributes), Slurm 22.05's `sinfo --json` and a later Slurm's
 * `scontrol --json show nodes`; the findings on each side, a job against a side,
 * and the MPI Operator's common failures in MPIJobs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/fabric.h"
#include "hpcbridge/translate.h"
#include "test_fabric_util.h"
#include "testutil.h"

static cJSON *fixture(const char *name)
{
	char rel[128];
	size_t len;
	char *text;
	cJSON *doc;

	snprintf(rel, sizeof(rel), "tests/unit/data/fabric/%s", name);
	text = hb_test_read_file(hb_test_src_path(rel), &len);
	doc = cJSON_ParseWithLength(text, len);
	free(text);
	assert_non_null(doc);
	return doc;
}

static const struct hb_fab_side_node *node(const struct hb_fab_side *s,
					   const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	fail_msg("no node %s", name);
	return NULL;
}

static void test_kube_nodes(void **state)
{
	cJSON *list = fixture("k8s_nodes.json");
	struct hb_fab_side s = { 0 };
	struct hb_fab_findings f = { 0 };
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_fab_kube_nodes(hb_doc_get(list, "items"), &s, &err),
			 0);
	assert_string_equal(s.side, "kubernetes");
	assert_int_equal(s.n, 4);
	assert_int_equal(s.nodes_rdma, 2);
	assert_int_equal(s.nodes_gpu, 2);
	assert_int_equal(s.gpus, 12);
	/* mi250-1: NFD says RDMA-capable, no resource to ask for. */
	assert_int_equal(s.nodes_rdma_label, 1);
	assert_int_equal(node(&s, "gpu-ib-1")->rdma, 1000);
	assert_string_equal(node(&s, "gpu-ib-1")->rdma_what,
			    "rdma/hca_shared_devices_a=1000");
	assert_int_equal(node(&s, "mi250-1")->gpus, 4);
	/* An SR-IOV plugin's RDMA virtual functions. */
	assert_string_equal(node(&s, "sriov-1")->rdma_what,
			    "nvidia.com/sriov_rdma_vf=8");
	/* A resource of 0 is none. */
	assert_int_equal(node(&s, "cpu-1")->rdma, 0);
	hb_fab_check_side(&s, &f);
	assert_string_equal(must(&f, "k8s.rdma", HB_FAB_OK)->msg,
			    "kubernetes: 2 of 4 nodes offer RDMA: gpu-ib-1 "
			    "(rdma/hca_shared_devices_a=1000), sriov-1 "
			    "(nvidia.com/sriov_rdma_vf=8)");
	must(&f, "k8s.rdma_unallocatable", HB_FAB_WARN);
	assert_string_equal(must(&f, "k8s.gpu", HB_FAB_OK)->msg,
			    "kubernetes: 12 GPUs on 2 nodes");
	must(&f, "k8s.dra.unserved", HB_FAB_OK);
	/* Not a list. */
	assert_int_equal(hb_fab_kube_nodes(list, &s, &err), HB_EINVAL);
	hb_fab_findings_free(&f);
	hb_fab_side_free(&s);
	cJSON_Delete(list);
}

static void test_kube_dra(void **state)
{
	cJSON *classes = fixture("deviceclasses.json");
	cJSON *slices = fixture("resourceslices.json");
	struct hb_fab_side s = { .side = "kubernetes" };
	struct hb_fab_findings f = { 0 };
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_fab_kube_dra(classes, slices, &s, &err), 0);
	assert_true(s.dra_served);
	/* eth1 (dra.net/rdma true) is RDMA, eth0 (false) is not; the GPU
	 * driver's two devices are GPUs. */
	assert_int_equal(s.dra_rdma, 1);
	assert_int_equal(s.dra_other, 1);
	assert_int_equal(s.dra_gpu, 2);
	assert_string_equal(s.dra_classes, "dranet-rdma, gpu.nvidia.com");
	assert_string_equal(s.dra_drivers, "dra.net, gpu.nvidia.com");
	hb_fab_check_side(&s, &f);
	/* No node lists rdma/..., but DRA offers an RDMA device. */
	assert_string_equal(must(&f, "k8s.rdma", HB_FAB_OK)->msg,
			    "kubernetes: 1 RDMA devices offered through DRA");
	assert_non_null(strstr(must(&f, "k8s.dra", HB_FAB_OK)->msg,
			       "DeviceClasses dranet-rdma, gpu.nvidia.com; "
			       "ResourceSlices hold 1 RDMA, 2 GPU"));
	assert_null(hb_fab_find(&f, "k8s.dra.no_class"));
	hb_fab_findings_free(&f);

	/* Slices without a class to claim them through. */
	memset(&s, 0, sizeof(s));
	s.side = "kubernetes";
	assert_int_equal(hb_fab_kube_dra(NULL, slices, &s, &err), 0);
	hb_fab_check_side(&s, &f);
	must(&f, "k8s.dra.no_class", HB_FAB_WARN);
	hb_fab_findings_free(&f);

	/* Nothing served. */
	memset(&s, 0, sizeof(s));
	s.side = "kubernetes";
	assert_int_equal(hb_fab_kube_dra(NULL, NULL, &s, &err), 0);
	assert_false(s.dra_served);
	cJSON_Delete(classes);
	cJSON_Delete(slices);
}

static void test_slurm_nodes(void **state)
{
	cJSON *doc = fixture("slurm_nodes.json");
	cJSON *v40 = fixture("slurm_nodes_v40.json");
	struct hb_fab_side s = { 0 };
	struct hb_fab_findings f = { 0 };
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_fab_slurm_nodes(doc, NULL, &s, &err), 0);
	assert_string_equal(s.side, "slurm");
	assert_int_equal(s.n, 3);
	assert_int_equal(s.nodes_rdma, 2);
	assert_int_equal(node(&s, "g001")->gpus, 8);
	assert_string_equal(node(&s, "g001")->rdma_what, "feature ib");
	/* A configured feature counts, and so does an rdma gres. */
	assert_string_equal(node(&s, "r001")->rdma_what,
			    "feature roce, gres rdma=1");
	assert_int_equal(node(&s, "c001")->rdma, 0);
	hb_fab_check_side(&s, &f);
	assert_string_equal(must(&f, "slurm.rdma", HB_FAB_OK)->msg,
			    "slurm: 2 of 3 nodes offer RDMA: g001 (feature ib), "
			    "r001 (feature roce, gres rdma=1)");
	must(&f, "slurm.gpu", HB_FAB_OK);
	hb_fab_findings_free(&f);
	hb_fab_side_free(&s);

	/* Later Slurm lists features as arrays; a site's own feature name. */
	assert_int_equal(hb_fab_slurm_nodes(v40, NULL, &s, &err), 0);
	assert_int_equal(s.nodes_rdma, 1);
	assert_int_equal(node(&s, "n1")->gpus, 4);
	hb_fab_side_free(&s);
	memset(&s, 0, sizeof(s));
	assert_int_equal(hb_fab_slurm_nodes(v40, "hdr", &s, &err), 0);
	assert_string_equal(node(&s, "n1")->rdma_what, "feature hdr");
	hb_fab_side_free(&s);

	/* A side with no RDMA, and a job that needs it. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(hb_fab_slurm_nodes(doc, "opa", &s, &err), 0);
	assert_int_equal(s.nodes_rdma, 1); /* r001's gres rdma only */
	hb_fab_side_free(&s);
	memset(&s, 0, sizeof(s));
	assert_int_equal(hb_fab_slurm_nodes(cJSON_GetObjectItem(doc, "meta"),
					    NULL, &s, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "scontrol --json show nodes"));
	hb_fab_side_free(&s);
	cJSON_Delete(doc);
	cJSON_Delete(v40);
}

static void test_job_side(void **state)
{
	static const char script[] = "#!/bin/bash\n#SBATCH -N 2\n"
				     "#SBATCH --gres=gpu:4\nsrun ./a.out\n";
	cJSON *doc = fixture("slurm_nodes_v40.json");
	struct hb_fab_side s = { 0 };
	struct hb_fab_findings f = { 0 };
	struct hb_jobspec spec;
	struct hb_err err = { 0 };

	(void)state;
	hb_jobspec_init(&spec, "job.sh");
	assert_int_equal(hb_parse_any(script, strlen(script), "job.sh", NULL,
				      &spec, &err),
			 0);
	spec.fabric = HB_FABRIC_RDMA;
	spec.fabric_why = "UCX_NET_DEVICES=mlx5_0:1";
	/* Only n2, which has neither RDMA nor GPUs. */
	cJSON_DeleteItemFromArray(cJSON_GetObjectItem(doc, "nodes"), 0);
	assert_int_equal(hb_fab_slurm_nodes(doc, NULL, &s, &err), 0);
	hb_fab_check_side(&s, &f);
	must(&f, "slurm.no_rdma", HB_FAB_WARN);
	must(&f, "slurm.no_gpu", HB_FAB_OK);
	hb_fab_check_job_side(&spec, "job.sh", &s, &f);
	assert_string_equal(must(&f, "job.side.no_rdma", HB_FAB_FAIL)->msg,
			    "job.sh needs RDMA (UCX_NET_DEVICES=mlx5_0:1), and "
			    "slurm offers none");
	must(&f, "job.side.no_gpu", HB_FAB_WARN);
	assert_int_equal(hb_fab_worst(&f), HB_FAB_FAIL);
	hb_fab_findings_free(&f);
	hb_fab_side_free(&s);
	hb_jobspec_free(&spec);
	cJSON_Delete(doc);
}

static void test_mpijobs(void **state)
{
	cJSON *jobs = fixture("mpijobs.json");
	struct hb_fab_findings f = { 0 };
	const cJSON *j;
	const char *names[] = { "hostnet", "hostnet-spread", "nonroot", "fine" };
	size_t want[] = { 1, 0, 2, 0 }, i = 0;

	(void)state;
	cJSON_ArrayForEach(j, jobs)
	{
		size_t before = f.n;

		assert_string_equal(hb_doc_str(hb_doc_get(j, "metadata"),
					       "name"),
				    names[i]);
		hb_fab_check_mpijob(j, &f);
		assert_int_equal(f.n - before, want[i]);
		i++;
	}
	assert_non_null(strstr(must(&f, "mpiop.hostnetwork_clash",
				    HB_FAB_WARN)->msg,
			       "MPIJob hostnet: 4 workers with hostNetwork"));
	assert_non_null(strstr(must(&f, "mpiop.ssh_mount", HB_FAB_WARN)->msg,
			       "uid 1000 but the SSH keys are mounted at "
			       "/root/.ssh"));
	assert_non_null(strstr(must(&f, "mpiop.ssh_failed", HB_FAB_FAIL)->msg,
			       "Could not resolve hostname"));
	assert_non_null(strstr(hb_fab_find(&f, "mpiop.ssh_failed")->hint,
			       "headless Service"));
	hb_fab_findings_free(&f);
	cJSON_Delete(jobs);
}

static void test_rdma_config(void **state)
{
	cJSON *list = fixture("k8s_nodes.json");
	cJSON *classes = fixture("deviceclasses.json");
	cJSON *slices = fixture("resourceslices.json");
	struct hb_fab_side s = { 0 }, bare = { .side = "kubernetes" };
	struct hb_fab_findings f = { 0 };
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_fab_kube_nodes(hb_doc_get(list, "items"), &s, &err),
			 0);
	assert_int_equal(hb_fab_kube_dra(classes, slices, &s, &err), 0);
	hb_fab_check_kube_rdma_config(&s, "device_plugin",
				      "rdma/hca_shared_devices_a", NULL, &f);
	assert_string_equal(must(&f, "k8s.rdma_config.ok", HB_FAB_OK)->msg,
			    "kubernetes.rdma.resource rdma/hca_shared_devices_a: "
			    "allocatable on 1 node");
	hb_fab_findings_free(&f);
	/* A prefix of a resource's name is not that resource. */
	hb_fab_check_kube_rdma_config(&s, "device_plugin", "rdma/hca", NULL,
				      &f);
	must(&f, "k8s.rdma_config.resource_missing", HB_FAB_FAIL);
	hb_fab_findings_free(&f);
	hb_fab_check_kube_rdma_config(&s, "dra", NULL, "dranet-rdma", &f);
	must(&f, "k8s.rdma_config.ok", HB_FAB_OK);
	hb_fab_findings_free(&f);
	hb_fab_check_kube_rdma_config(&s, "dra", NULL, "dranet", &f);
	assert_non_null(strstr(must(&f, "k8s.rdma_config.class_missing",
				    HB_FAB_FAIL)->msg,
			       "dranet does not exist"));
	hb_fab_findings_free(&f);
	hb_fab_check_kube_rdma_config(&s, "none", NULL, NULL, &f);
	must(&f, "k8s.rdma_config.none", HB_FAB_WARN);
	hb_fab_findings_free(&f);
	/* No RDMA and none configured: nothing to say. */
	hb_fab_check_kube_rdma_config(&bare, NULL, NULL, NULL, &f);
	assert_int_equal(f.n, 0);
	hb_fab_check_kube_rdma_config(&bare, "dra", NULL, "dranet-rdma", &f);
	assert_non_null(strstr(must(&f, "k8s.rdma_config.class_missing",
				    HB_FAB_FAIL)->msg,
			       "DRA is not served"));
	hb_fab_findings_free(&f);
	hb_fab_side_free(&s);
	cJSON_Delete(list);
	cJSON_Delete(classes);
	cJSON_Delete(slices);
}

static void test_findings_json(void **state)
{
	struct hb_fab_findings f = { 0 };
	cJSON *j;

	(void)state;
	hb_fab_add(&f, HB_FAB_OK, "a.ok", NULL, "fine %d", 1);
	hb_fab_add(&f, HB_FAB_FAIL, "b.bad", "do this", "broken%s",
		   "\033]0;title\007\n");
	/* What a side holds never sends a terminal control sequence. */
	assert_string_equal(f.v[1].msg, "broken?]0;title??");
	assert_int_equal(hb_fab_worst(&f), HB_FAB_FAIL);
	j = hb_fab_findings_json(&f);
	assert_int_equal(cJSON_GetArraySize(j), 2);
	assert_string_equal(hb_doc_str(cJSON_GetArrayItem(j, 0), "message"),
			    "fine 1");
	assert_string_equal(hb_doc_str(cJSON_GetArrayItem(j, 0), "hint"), "");
	assert_string_equal(hb_doc_str(cJSON_GetArrayItem(j, 1), "level"),
			    "fail");
	assert_string_equal(hb_doc_str(cJSON_GetArrayItem(j, 1), "hint"),
			    "do this");
	cJSON_Delete(j);
	hb_fab_findings_free(&f);
	hb_fab_findings_free(&f); /* twice is fine */
	assert_int_equal(hb_fab_worst(&f), HB_FAB_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kube_nodes),
		cmocka_unit_test(test_kube_dra),
		cmocka_unit_test(test_slurm_nodes),
		cmocka_unit_test(test_job_side),
		cmocka_unit_test(test_mpijobs),
		cmocka_unit_test(test_rdma_config),
		cmocka_unit_test(test_findings_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
