/*
 * test_k8s.c - the pieces the MPIJob and TrainJob translators share:
 * Kubernetes names, $-escaping, label values, quantities read back,
 * constraints and GPU types as node selectors, and the worker count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/sbatch.h"
#include "testutil.h"
#include "translators/k8s/k8s_int.h"

static void name_of(const char *job, const char *file, int64_t idx,
		    uint32_t nodes, char out[HB_DNS_LABEL_MAX + 1])
{
	struct hb_jobspec s;

	hb_jobspec_init(&s, file);
	if (job)
		s.name = hb_jobspec_strdup(&s, job);
	assert_int_equal(hb_k8s_name(&s, idx, nodes, out), 0);
	hb_jobspec_free(&s);
}

/* A DNS-1035 label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
static void assert_dns1035(const char *n)
{
	size_t len = strlen(n);

	assert_true(len >= 1 && len <= 63);
	assert_true(n[0] >= 'a' && n[0] <= 'z');
	assert_true(n[len - 1] != '-');
	for (size_t i = 0; i < len; i++)
		assert_true((n[i] >= 'a' && n[i] <= 'z') ||
			    (n[i] >= '0' && n[i] <= '9') || n[i] == '-');
}

static void test_name_basic(void **state)
{
	char n[HB_DNS_LABEL_MAX + 1];

	(void)state;
	name_of("LAMMPS", "j.sh", -1, 1, n);
	assert_string_equal(n, "lammps");
	name_of("Big Run #2", "j.sh", -1, 4, n);
	assert_string_equal(n, "big-run-2");
	name_of("wrf_4km..v2", "j.sh", -1, 1, n);
	assert_string_equal(n, "wrf-4km-v2");
	name_of("__x__", "j.sh", -1, 1, n);
	assert_string_equal(n, "x");
	name_of("--a  b--", "j.sh", -1, 1, n);
	assert_string_equal(n, "a-b");
	/* Bytes outside ASCII are runs of non-alphanumerics. */
	name_of("caf\xc3\xa9-run", "j.sh", -1, 1, n);
	assert_string_equal(n, "caf-run");
}

static void test_name_digit_and_empty(void **state)
{
	char n[HB_DNS_LABEL_MAX + 1];

	(void)state;
	name_of("2nd-run", "j.sh", -1, 1, n);
	assert_string_equal(n, "job-2nd-run");
	name_of("###", "j.sh", -1, 1, n);
	assert_string_equal(n, "job");
	name_of("", "j.sh", -1, 1, n);
	assert_string_equal(n, "job");
	name_of("42", "j.sh", 3, 1, n);
	assert_string_equal(n, "job-42-3");
}

static void test_name_from_file(void **state)
{
	char n[HB_DNS_LABEL_MAX + 1];

	(void)state;
	name_of(NULL, "/home/u/My_Job.sbatch", -1, 1, n);
	assert_string_equal(n, "my-job");
	name_of(NULL, "run.v2.sh", -1, 1, n);
	assert_string_equal(n, "run-v2");
	name_of(NULL, "-", -1, 1, n);
	assert_string_equal(n, "job");
	name_of(NULL, ".hidden", -1, 1, n);
	assert_string_equal(n, "job");
	name_of(NULL, "dir.d/noext", -1, 1, n);
	assert_string_equal(n, "noext");
}

static void test_name_budget(void **state)
{
	char n[HB_DNS_LABEL_MAX + 1], host[128];
	char longname[200];
	static const uint32_t nodes[] = {1, 9, 10, 11, 100, 1000, 4000000000u};
	static const int64_t idx[] = {-1, 0, 7, 1000, 4294967295LL};

	(void)state;
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		for (size_t k = 0; k < sizeof(idx) / sizeof(idx[0]); k++) {
			name_of(longname, "j.sh", idx[k], nodes[i], n);
			assert_dns1035(n);
			/* The largest worker's host name is a DNS label. */
			snprintf(host, sizeof(host), "%s-worker-%u", n,
				 nodes[i] - 1);
			assert_true(strlen(host) <= 63);
			assert_dns1035(host);
			/* The budget is used, not wasted. */
			assert_int_equal(strlen(host), 63);
			if (idx[k] >= 0) {
				char suffix[32];

				snprintf(suffix, sizeof(suffix), "-%lld",
					 (long long)idx[k]);
				assert_non_null(strstr(n, suffix));
				assert_string_equal(
				    n + strlen(n) - strlen(suffix), suffix);
			}
		}
	}
	/* 1 node: "-worker-0"; 54 characters of name fit exactly. */
	name_of(longname, "j.sh", -1, 1, n);
	assert_int_equal(strlen(n), 54);
	/* A cut that ends on '-' is trimmed. */
	memset(longname, 'b', 60);
	longname[53] = '-';
	longname[60] = '\0';
	name_of(longname, "j.sh", -1, 1, n);
	assert_int_equal(strlen(n), 53);
	assert_true(n[52] == 'b');
}

static void test_name_reserve(void **state)
{
	struct hb_jobspec s;
	char n[HB_DNS_LABEL_MAX + 1];

	(void)state;
	hb_jobspec_init(&s, "x.sh");
	s.name = hb_jobspec_strdup(&s, "abc");
	assert_int_equal(hb_k8s_name_reserve(&s, -1, 63, n), HB_ERANGE);
	assert_int_equal(hb_k8s_name_reserve(&s, -1, 60, n), 0);
	assert_string_equal(n, "abc");
	assert_int_equal(hb_k8s_name_reserve(&s, -1, 61, n), 0);
	assert_string_equal(n, "ab");
	hb_jobspec_free(&s);
}

static void test_escape(void **state)
{
	static const char *const cases[][2] = {
		{ "echo $$ $(hostname) ${X}", "echo $$$$ $$(hostname) $${X}" },
		{ "no dollars", "no dollars" },
		{ "$", "$$" },
		{ "", "" },
		{ "$(A)$$", "$$(A)$$$$" },
		{ "$$$$$$$$$", "$$$$$$$$$$$$$$$$$$" },
		{ "abcdefgh$abcdefg$abcdefgh", "abcdefgh$$abcdefg$$abcdefgh" },
		{ "x=${HOME}/path/${USER}:$$PATH and a long tail without any",
		  "x=$${HOME}/path/$${USER}:$$$$PATH and a long tail without "
		  "any" },
	};
	struct hb_buf e, u;

	(void)state;
	hb_buf_init(&e, 0);
	hb_buf_init(&u, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hb_buf_reset(&e);
		hb_buf_reset(&u);
		assert_int_equal(
		    hb_k8s_escape(cases[i][0], strlen(cases[i][0]), &e), 0);
		assert_string_equal(e.data, cases[i][1]);
		assert_int_equal(hb_k8s_unescape(e.data, e.len, &u), 0);
		assert_string_equal(u.data, cases[i][0]);
	}
	/* every length and place of '$' across the eight-byte words */
	for (size_t n = 0; n < 40; n++) {
		for (size_t at = 0; at < n; at += 3) {
			char in[40], want[80];
			size_t k = 0;

			for (size_t j = 0; j < n; j++) {
				in[j] = j == at || j % 11 == 10 ? '$' : 'a';
				want[k++] = in[j];
				if (in[j] == '$')
					want[k++] = '$';
			}
			hb_buf_reset(&e);
			assert_int_equal(hb_buf_puts(&e, "pre"), 0);
			assert_int_equal(hb_k8s_escape(in, n, &e), 0);
			assert_int_equal(e.len, 3 + k);
			assert_memory_equal(e.data + 3, want, k);
			assert_int_equal(e.data[e.len], '\0');
		}
	}
	hb_buf_free(&e);
	hb_buf_free(&u);
}

/* ---- Emitting with a small configuration ---- */

static struct hb_kv ib_labels[] = {{"feature.node/ib", "true"}};
static struct hb_kv sky_labels[] = {{"cpu.family", "skylake"}};
static struct hb_kv ice_labels[] = {{"cpu.family", "icelake"}};
static struct hb_kv nvme_labels[] = {{"disk", "nvme"}, {"zone", "a"}};
static struct hb_kv a100_labels[] = {{"nvidia.com/gpu.product", "A100"}};
static struct hb_kv clash_labels[] = {{"disk", "ssd"}};
static struct hb_selector_map cons[] = {
    {"ib", ib_labels, 1},	{"skylake", sky_labels, 1},
    {"icelake", ice_labels, 1}, {"nvme", nvme_labels, 2},
    {"ssd", clash_labels, 1},
};
static struct hb_selector_map gsel[] = {{"a100", a100_labels, 1}};

static void base_cfg(struct hb_k8s_opts *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->namespace = "hpc";
	cfg->default_image = "docker.io/library/ubuntu:22.04";
	cfg->default_mpi = "OpenMPI";
	cfg->trainjob_runtime = "mpi-distributed";
	cfg->ssh_auth_mount_path = "/root/.ssh";
	cfg->gpu_resource = "nvidia.com/gpu";
	cfg->launcher_cpus = 1;
	cfg->launcher_mem_mb = 1024;
	cfg->constraint_selectors = cons;
	cfg->nconstraint_selectors = sizeof(cons) / sizeof(cons[0]);
	cfg->gpu_type_selectors = gsel;
	cfg->ngpu_type_selectors = 1;
	cfg->max_array_jobs = 100;
}

static cJSON *emit(struct hb_jobspec *s, struct hb_report *rep)
{
	struct hb_k8s_opts cfg;
	struct hb_err err = {0};
	cJSON *doc = NULL;

	base_cfg(&cfg);
	hb_report_init(rep, "MPIJob");
	if (hb_mpijob_emit(s, &cfg, -1, &doc, rep, &err))
		fail_msg("emit: %s", err.msg);
	return doc;
}

static void spec_with(struct hb_jobspec *s, const char *constraint)
{
	hb_jobspec_init(s, "c.sh");
	s->script = hb_jobspec_strdup(s, "#!/bin/sh\nhostname\n");
	s->script_len = (uint32_t)strlen(s->script);
	if (constraint) {
		s->constraint = hb_jobspec_strdup(s, constraint);
		hb_jobspec_set_prov(s, HB_F_CONSTRAINT,
				      (struct hb_prov){HB_PROV_FILE, 2});
	}
}

static const cJSON *worker_pod(const cJSON *doc)
{
	return hb_doc_get(doc, "spec.mpiReplicaSpecs.Worker.template.spec");
}

static const char *sel(const cJSON *doc, const char *key)
{
	const cJSON *ns =
	    cJSON_GetObjectItemCaseSensitive(worker_pod(doc), "nodeSelector");

	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ns, key));
}

static void test_constraint_and(void **state)
{
	static const char *const forms[] = {"ib&skylake", "ib,skylake"};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct hb_jobspec s;
		struct hb_report rep;
		cJSON *doc;

		spec_with(&s, forms[i]);
		doc = emit(&s, &rep);
		assert_string_equal(sel(doc, "feature.node/ib"), "true");
		assert_string_equal(sel(doc, "cpu.family"), "skylake");
		assert_int_equal(rep.fate[HB_F_CONSTRAINT].kind,
				 HB_FATE_MAPPED);
		assert_null(cJSON_GetObjectItemCaseSensitive(worker_pod(doc),
							     "affinity"));
		cJSON_Delete(doc);
		hb_report_free(&rep);
		hb_jobspec_free(&s);
	}
}

static void test_constraint_or(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc, *terms, *t;

	(void)state;
	spec_with(&s, "ib&[skylake|icelake|nosuch]");
	doc = emit(&s, &rep);
	assert_string_equal(sel(doc, "feature.node/ib"), "true");
	terms = hb_doc_get(worker_pod(doc),
			   "affinity.nodeAffinity.requiredDuringScheduling"
			   "IgnoredDuringExecution.nodeSelectorTerms");
	assert_non_null(terms);
	assert_int_equal(cJSON_GetArraySize(terms), 2);
	t = cJSON_GetArrayItem(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(terms, 1),
					     "matchExpressions"),
	    0);
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "key")),
	    "cpu.family");
	assert_string_equal(
	    cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(t, "operator")),
	    "In");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(t, "values"), 0)),
	    "icelake");
	/* "nosuch" has no selector: partial, named in the note. */
	assert_int_equal(rep.fate[HB_F_CONSTRAINT].kind, HB_FATE_PARTIAL);
	assert_non_null(strstr(rep.fate[HB_F_CONSTRAINT].note, "nosuch"));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* A bare OR at top level. */
	spec_with(&s, "skylake|icelake");
	doc = emit(&s, &rep);
	terms = hb_doc_get(worker_pod(doc),
			   "affinity.nodeAffinity.requiredDuringScheduling"
			   "IgnoredDuringExecution.nodeSelectorTerms");
	assert_int_equal(cJSON_GetArraySize(terms), 2);
	assert_int_equal(rep.fate[HB_F_CONSTRAINT].kind, HB_FATE_MAPPED);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_constraint_unmapped(void **state)
{
	static const char *const forms[] = {"rack1*2", "(ib|nvme)&skylake",
					    "ib|nvme&skylake", "[ib",
					    "unknown"};

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct hb_jobspec s;
		struct hb_report rep;
		cJSON *doc;

		spec_with(&s, forms[i]);
		doc = emit(&s, &rep);
		assert_null(cJSON_GetObjectItemCaseSensitive(worker_pod(doc),
							     "nodeSelector"));
		assert_int_equal(rep.fate[HB_F_CONSTRAINT].kind,
				 HB_FATE_CARRIED);
		/* Kept for the way back. */
		assert_string_equal(
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
			hb_doc_get(doc, "metadata.annotations"),
			"hpcbridge.io/constraint")),
		    forms[i]);
		cJSON_Delete(doc);
		hb_report_free(&rep);
		hb_jobspec_free(&s);
	}
}

static void test_selector_clash_and_gpu_type(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	spec_with(&s, "nvme&ssd");
	s.gpu_scope = HB_GPU_PER_NODE;
	s.gpus = 2;
	s.gpu_type = hb_jobspec_strdup(&s, "a100");
	doc = emit(&s, &rep);
	/* The first value of a clashing key is kept, with a warning. */
	assert_string_equal(sel(doc, "disk"), "nvme");
	assert_string_equal(sel(doc, "zone"), "a");
	assert_string_equal(sel(doc, "nvidia.com/gpu.product"), "A100");
	/* The clash, and that the identity is filled in at burst time
	 * (the jobspec has none). */
	assert_int_equal(rep.nwarnings, 2);
	assert_non_null(strstr(rep.warnings[0], "when the job bursts"));
	assert_non_null(strstr(rep.warnings[1], "disk"));
	assert_int_equal(rep.fate[HB_F_GPUS].kind, HB_FATE_MAPPED);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* A GPU type without a selector: any GPU model, reported. */
	spec_with(&s, NULL);
	s.gpu_scope = HB_GPU_PER_NODE;
	s.gpus = 1;
	s.gpu_type = hb_jobspec_strdup(&s, "h100");
	doc = emit(&s, &rep);
	assert_null(
	    cJSON_GetObjectItemCaseSensitive(worker_pod(doc), "nodeSelector"));
	assert_int_equal(rep.fate[HB_F_GPUS].kind, HB_FATE_PARTIAL);
	assert_non_null(strstr(rep.fate[HB_F_GPUS].note, "h100"));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_label_values(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc, *labels, *ann;
	char longuser[100];

	(void)state;
	spec_with(&s, NULL);
	s.user = hb_jobspec_strdup(&s, "alice@example.com");
	s.account = hb_jobspec_strdup(&s, "--proj/42--");
	doc = emit(&s, &rep);
	labels = hb_doc_get(doc, "metadata.labels");
	ann = hb_doc_get(doc, "metadata.annotations");
	assert_string_equal(
	    cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(labels, "hpcbridge.io/user")),
	    "alice_example.com");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		labels, "hpcbridge.io/account")),
	    "proj_42");
	assert_string_equal(
	    cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(ann, "hpcbridge.io/account")),
	    "--proj/42--");
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		labels, "app.kubernetes.io/managed-by")),
	    "hpcbridge");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* Too long or nothing usable: cut, or no label at all. */
	memset(longuser, 'u', sizeof(longuser) - 1);
	longuser[sizeof(longuser) - 1] = '\0';
	spec_with(&s, NULL);
	s.user = hb_jobspec_strdup(&s, longuser);
	s.account = hb_jobspec_strdup(&s, "@@@");
	doc = emit(&s, &rep);
	labels = hb_doc_get(doc, "metadata.labels");
	assert_int_equal(
	    strlen(cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(labels, "hpcbridge.io/user"))),
	    63);
	assert_null(
	    cJSON_GetObjectItemCaseSensitive(labels, "hpcbridge.io/account"));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* ---- Quantities read back ---- */

#define MANIFEST_FMT \
    "apiVersion: kubeflow.org/v2beta1\n" \
    "kind: MPIJob\n" \
    "metadata: {name: q}\n" \
    "spec:\n" \
    "  slotsPerWorker: %s\n" \
    "  mpiReplicaSpecs:\n" \
    "    Launcher:\n" \
    "      replicas: 1\n" \
    "      template: {spec: {containers: [{name: l, image: i, command: " \
    "[mpirun, ./x]}]}}\n" \
    "    Worker:\n" \
    "      replicas: 2\n" \
    "      template:\n" \
    "        spec:\n" \
    "          containers:\n" \
    "          - name: w\n" \
    "            image: i\n" \
    "            resources: {limits: {%s}}\n"

static int parse_q(const char *slots, const char *limits, struct hb_jobspec *s,
		   struct hb_err *err)
{
	char buf[2048];
	cJSON *doc = NULL;
	int rc;

	snprintf(buf, sizeof(buf), MANIFEST_FMT, slots, limits);
	hb_jobspec_init(s, "q.yaml");
	rc = hb_doc_parse(buf, strlen(buf), "q.yaml", &doc, err);
	assert_int_equal(rc, 0);
	rc = hb_mpijob_parse(doc, s, err);
	cJSON_Delete(doc);
	return rc;
}

static void test_quantities(void **state)
{
	static const struct {
		const char *slots, *limits;
		uint32_t cpt;
		uint64_t mem;
		uint32_t gpus;
	} ok[] = {
	    {"1", "cpu: 500m", 1, 0, 0},
	    {"4", "cpu: 8, memory: 16Gi", 2, 16384, 0},
	    {"2", "cpu: \"2.5\", memory: 1.5Gi", 2, 1536, 0},
	    {"1", "memory: 1G", 0, 954, 0},
	    {"1", "memory: \"1000000000\"", 0, 954, 0},
	    {"3", "cpu: 7", 3, 0, 0},
	    {"1", "amd.com/gpu: 4, nvidia.com/gpu: 0", 0, 0, 4},
	    {"1", "nvidia.com/gpu: \"2\"", 0, 0, 2},
	};
	static const struct {
		const char *slots, *limits, *want;
	} bad[] = {
	    {"1", "cpu: abc", "limits.cpu"},
	    {"1", "cpu: -1", "limits.cpu"},
	    {"1", "memory: [1]", "limits.memory"},
	    {"1", "nvidia.com/gpu: 1.5", "nvidia.com/gpu"},
	    {"1", "memory: \"1e400\"", "limits.memory"},
	    {"-1", "cpu: 1", "spec.slotsPerWorker"},
	    {"2.5", "cpu: 1", "spec.slotsPerWorker"},
	    {"\"2\"", "cpu: 1", "spec.slotsPerWorker"},
	    {"3000000000", "cpu: 1", "spec.slotsPerWorker"},
	};
	struct hb_jobspec s;
	struct hb_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (parse_q(ok[i].slots, ok[i].limits, &s, &err))
			fail_msg("%s: %s", ok[i].limits, err.msg);
		assert_int_equal(s.cpus_per_task, ok[i].cpt);
		assert_int_equal(s.mem_mb, ok[i].mem);
		if (ok[i].mem)
			assert_int_equal(s.mem_kind, HB_MEM_PER_NODE);
		assert_int_equal(s.gpus, ok[i].gpus);
		assert_int_equal(s.nodes_min, 2);
		hb_jobspec_free(&s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (!parse_q(bad[i].slots, bad[i].limits, &s, &err)) {
			fail_msg("accepted: %s / %s", bad[i].slots,
				 bad[i].limits);
		}
		assert_non_null(strstr(err.msg, bad[i].want));
		assert_true(strncmp(err.msg, "q.yaml:", 7) == 0);
		hb_jobspec_free(&s);
	}
}

static double num_at(const cJSON *doc, const char *path)
{
	const cJSON *v = hb_doc_get(doc, path);

	if (!cJSON_IsNumber(v))
		fail_msg("%s is not a number", path);
	return v->valuedouble;
}

/* The worker count is the node count Slurm would allocate. */
static void test_worker_count(void **state)
{
	static const char script[] = "#!/bin/bash\n"
				     "#SBATCH -n 1\n"
				     "#SBATCH --ntasks=80\n"
				     "#SBATCH --ntasks-per-node=40\n"
				     "srun ./a.out\n";
	static const char gpu_script[] = "#!/bin/bash\n"
					 "#SBATCH -N 2 --gpus-per-node=4\n"
					 "#SBATCH --ntasks-per-gpu=2\n"
					 "srun ./a.out\n";
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = {0};
	struct hb_buf text;
	cJSON *doc;

	(void)state;
	/* -n 80 at 40 per node, no -N: two workers of 40 slots */
	hb_jobspec_init(&s, "job.sh");
	if (hb_sbatch_parse(script, strlen(script), "job.sh", NULL, &s, &err))
		fail_msg("parse: %s", err.msg);
	doc = emit(&s, &rep);
	assert_int_equal(
	    num_at(doc, "spec.mpiReplicaSpecs.Worker.replicas"), 2);
	assert_int_equal(num_at(doc, "spec.slotsPerWorker"), 40);
	assert_int_equal(rep.fate[HB_F_NODES].kind, HB_FATE_MAPPED);
	hb_buf_init(&text, 0);
	assert_int_equal(hb_report_write_text(&s, &rep, &text), 0);
	assert_non_null(strstr(text.data, "Slurm allocates 2 nodes"));
	hb_buf_free(&text);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* a jobspec from elsewhere, with no node count: the same rule */
	spec_with(&s, NULL);
	s.ntasks = 10;
	s.ntasks_per_node = 4;
	hb_jobspec_set_prov(&s, HB_F_NTASKS, (struct hb_prov){HB_PROV_FILE, 2});
	hb_jobspec_set_prov(&s, HB_F_NTASKS_PER_NODE,
			    (struct hb_prov){HB_PROV_FILE, 3});
	doc = emit(&s, &rep);
	assert_int_equal(
	    num_at(doc, "spec.mpiReplicaSpecs.Worker.replicas"), 3);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* --ntasks-per-gpu: 2 tasks x 4 GPUs on each of 2 workers */
	hb_jobspec_init(&s, "job.sh");
	if (hb_sbatch_parse(gpu_script, strlen(gpu_script), "job.sh", NULL,
			    &s, &err))
		fail_msg("parse: %s", err.msg);
	doc = emit(&s, &rep);
	assert_int_equal(
	    num_at(doc, "spec.mpiReplicaSpecs.Worker.replicas"), 2);
	assert_int_equal(num_at(doc, "spec.slotsPerWorker"), 8);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_name_basic),
	    cmocka_unit_test(test_name_digit_and_empty),
	    cmocka_unit_test(test_name_from_file),
	    cmocka_unit_test(test_name_budget),
	    cmocka_unit_test(test_name_reserve),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_constraint_and),
	    cmocka_unit_test(test_constraint_or),
	    cmocka_unit_test(test_constraint_unmapped),
	    cmocka_unit_test(test_selector_clash_and_gpu_type),
	    cmocka_unit_test(test_label_values),
	    cmocka_unit_test(test_quantities),
	    cmocka_unit_test(test_worker_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
