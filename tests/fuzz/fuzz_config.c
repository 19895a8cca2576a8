/*
 * fuzz_config.c - hb_config_parse must never crash or leak, must leave
 * nothing behind on error, and whatever it accepts must hold values
 * within the table's bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_strings(const struct hb_kv *kv, uint32_t n)
{
	uint32_t i;

	if (n && !kv)
		abort();
	for (i = 0; i < n; i++)
		if (!kv[i].key || !kv[i].value || !*kv[i].key)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_err err = {0};
	struct hb_config cfg, def;
	uint32_t i;
	int rc;

	rc = hb_config_parse((const char *)data, size, "fuzz.yaml", &cfg, &err);
	if (rc) {
		/* an error says something, and nothing is left loaded */
		if (!err.msg[0] || cfg.priv || cfg.k8s.namespace)
			abort();
		hb_config_free(&cfg);
		return 0;
	}
	if (!cfg.k8s.namespace || !*cfg.k8s.namespace || !cfg.k8s.default_image ||
	    !cfg.k8s.default_mpi || !cfg.k8s.trainjob_runtime ||
	    !cfg.k8s.ssh_auth_mount_path || cfg.k8s.ssh_auth_mount_path[0] != '/' ||
	    !cfg.k8s.gpu_resource)
		abort();
	if (cfg.k8s.worker_cpus > 4096 || cfg.k8s.worker_gpus > 256 ||
	    cfg.k8s.launcher_cpus > 4096 || cfg.k8s.max_array_jobs < 1 ||
	    cfg.k8s.max_array_jobs > 100000 ||
	    cfg.k8s.worker_mem_mb > 64ull * 1024 * 1024 ||
	    cfg.k8s.launcher_mem_mb > 64ull * 1024 * 1024)
		abort();
	check_strings(cfg.k8s.module_images, cfg.k8s.nmodule_images);
	check_strings(cfg.k8s.partition_images, cfg.k8s.npartition_images);
	check_strings(cfg.k8s.container_images, cfg.k8s.ncontainer_images);
	check_strings(cfg.k8s.partition_queues, cfg.k8s.npartition_queues);
	for (i = 0; i < cfg.k8s.nconstraint_selectors; i++)
		check_strings(cfg.k8s.constraint_selectors[i].labels,
			      cfg.k8s.constraint_selectors[i].nlabels);
	for (i = 0; i < cfg.k8s.ngpu_type_selectors; i++)
		check_strings(cfg.k8s.gpu_type_selectors[i].labels,
			      cfg.k8s.gpu_type_selectors[i].nlabels);
	/* the reload check runs on any pair */
	if (hb_config_defaults(&def))
		abort();
	memset(&err, 0, sizeof(err));
	rc = hb_config_check_reload(&def, &cfg, &err);
	if (rc && (rc != HB_ECONFLICT || !err.msg[0]))
		abort();
	hb_config_free(&def);
	hb_config_free(&cfg);
	return 0;
}
