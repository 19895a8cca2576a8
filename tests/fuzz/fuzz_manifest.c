/*
 * fuzz_manifest.c - reading MPIJob and TrainJob manifests must never
 * crash, and what is read must translate again:
 *   manifest -> jobspec (hb_mpijob_parse / hb_trainjob_parse, by kind)
 *   -> MPIJob and TrainJob (on success)
 * and hpcbridge's own output must read back and re-emit unchanged:
 *   jobspec -> M1 -> jobspec' -> M2, with M1 == M2.
 * A broken invariant aborts with the manifests on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/trainjob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hb_kv module_images[] = {{"openmpi", "ghcr.io/x/ompi:4"}};
static struct hb_kv partition_queues[] = {{"gpu", "gpu-queue"}};
static struct hb_kv ib[] = {{"feature.node/ib", "true"}};
static struct hb_kv sky[] = {{"cpu", "skylake"}};
static struct hb_kv a100[] = {{"nvidia.com/gpu.product", "A100"}};
static struct hb_selector_map cons[] = {{"ib", ib, 1}, {"skylake", sky, 1}};
static struct hb_selector_map gsel[] = {{"a100", a100, 1}};

static void config(struct hb_k8s_opts *cfg, int bounded)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->namespace = "fuzz";
	cfg->default_image = "docker.io/library/ubuntu:22.04";
	cfg->module_images = module_images;
	cfg->nmodule_images = 1;
	cfg->partition_queues = partition_queues;
	cfg->npartition_queues = 1;
	cfg->default_mpi = "OpenMPI";
	cfg->trainjob_runtime = "mpi-distributed";
	cfg->ssh_auth_mount_path = "/root/.ssh";
	cfg->gpu_resource = "nvidia.com/gpu";
	cfg->launcher_cpus = 1;
	cfg->launcher_mem_mb = 1024;
	cfg->constraint_selectors = cons;
	cfg->nconstraint_selectors = 2;
	cfg->gpu_type_selectors = gsel;
	cfg->ngpu_type_selectors = 1;
	cfg->max_array_jobs = 16;
	if (bounded) {
		cfg->worker_cpus = 64;
		cfg->worker_mem_mb = 262144;
		cfg->worker_gpus = 8;
	}
}

static void dump(const char *what, const cJSON *a, const cJSON *b)
{
	char *x = a ? cJSON_Print(a) : NULL, *y = b ? cJSON_Print(b) : NULL;

	fprintf(stderr, "fuzz_manifest: %s\n--- first\n%s\n--- second\n%s\n",
		what, x ? x : "(none)", y ? y : "(none)");
	free(x);
	free(y);
	abort();
}

typedef int (*emit_fn)(const struct hb_jobspec *, const struct hb_k8s_opts *,
		       int64_t, struct cJSON **, struct hb_report *,
		       struct hb_err *);
typedef int (*parse_fn)(const struct cJSON *, struct hb_jobspec *,
			struct hb_err *);

/* Emit spec; if that works, read it back and emit again: the same. */
static void check(const struct hb_jobspec *spec, emit_fn emit, parse_fn parse,
		  const char *kind, int64_t idx, int bounded)
{
	struct hb_k8s_opts cfg;
	struct hb_report rep;
	struct hb_err err = {0};
	struct hb_jobspec back;
	cJSON *m1 = NULL, *m2 = NULL;
	struct hb_buf y;

	config(&cfg, bounded);
	hb_report_init(&rep, kind);
	if (emit(spec, &cfg, idx, &m1, &rep, &err)) {
		if (m1 || !err.code || !err.msg[0])
			dump("a failed emit must leave no output and say why",
			     m1, NULL);
		hb_report_free(&rep);
		return;
	}
	/* Our own output, through YAML text as it travels. */
	hb_buf_init(&y, 0);
	if (hb_doc_write_yaml(m1, &y) == 0) {
		cJSON *t = NULL;
		struct hb_err e2 = {0};

		if (hb_doc_parse(y.data, y.len, "m1.yaml", &t, &e2) == 0)
			cJSON_Delete(t);
	}
	hb_buf_free(&y);

	hb_jobspec_init(&back, "m1.yaml");
	memset(&err, 0, sizeof(err));
	if (parse(m1, &back, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		dump("our own manifest does not read back", m1, NULL);
	}
	hb_report_free(&rep);
	hb_report_init(&rep, kind);
	memset(&err, 0, sizeof(err));
	if (emit(&back, &cfg, idx, &m2, &rep, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		dump("what was read back does not emit again", m1, NULL);
	}
	if (!cJSON_Compare(m1, m2, 1))
		dump("emitted again, the manifest differs", m1, m2);
	cJSON_Delete(m1);
	cJSON_Delete(m2);
	hb_jobspec_free(&back);
	hb_report_free(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_err err = {0};
	struct hb_jobspec spec;
	cJSON *doc = NULL;
	const char *kind;
	int64_t idx = -1;
	int rc;

	if (hb_doc_parse((const char *)data, size, "fuzz.yaml", &doc, &err))
		return 0;
	kind =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "kind"));
	hb_jobspec_init(&spec, "fuzz.yaml");
	if (kind && strcmp(kind, "TrainJob") == 0)
		rc = hb_trainjob_parse(doc, &spec, &err);
	else
		rc = hb_mpijob_parse(doc, &spec, &err);
	if (rc) {
		if (!err.code || !err.msg[0])
			dump("an error without a message", doc, NULL);
	} else {
		if (hb_jobspec_array_count(&spec))
			idx = hb_jobspec_array_index(&spec, 0);
		check(&spec, hb_mpijob_emit, hb_mpijob_parse, "MPIJob", -1, 0);
		check(&spec, hb_trainjob_emit, hb_trainjob_parse, "TrainJob",
		      -1, 0);
		if (idx >= 0)
			check(&spec, hb_mpijob_emit, hb_mpijob_parse, "MPIJob",
			      idx, 1);
	}
	hb_jobspec_free(&spec);
	cJSON_Delete(doc);
	return 0;
}
