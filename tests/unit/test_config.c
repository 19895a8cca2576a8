/*
 * test_config.c - the site configuration: defaults, the shipped file,
 * maps and selectors, every kind of error with its key path and line, and
 * the settings table against the documentation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/config.h"
#include "testutil.h"

static void parse_ok(const char *text, struct hb_config *cfg)
{
	struct hb_err err = {0};
	int rc =
	    hb_config_parse(text, strlen(text), "hpcbridge.yaml", cfg, &err);

	if (rc)
		fail_msg("config failed (%d): %s\n%s", rc, err.msg, text);
}

/* The parse must fail with exactly msg, and leave cfg zeroed. */
static void parse_fails(const char *text, const char *msg)
{
	struct hb_err err = {0};
	struct hb_config cfg;
	int rc;

	memset(&cfg, 0xA5, sizeof(cfg));
	rc = hb_config_parse(text, strlen(text), "hpcbridge.yaml", &cfg, &err);
	if (rc == 0)
		fail_msg("config should fail: %s", text);
	assert_true(rc < 0);
	if (strcmp(err.msg, msg))
		fail_msg("got  '%s'\nwant '%s'", err.msg, msg);
	/* nothing half-loaded */
	assert_null(cfg.priv);
	assert_null(cfg.k8s.namespace);
	assert_null(cfg.k8s.module_images);
	assert_int_equal(cfg.k8s.nmodule_images, 0);
	assert_int_equal(cfg.k8s.max_array_jobs, 0);
	hb_config_free(&cfg);
}

static void check_defaults(const struct hb_config *c)
{
	assert_string_equal(c->k8s.namespace, "default");
	assert_string_equal(c->k8s.default_image, "mpioperator/openmpi:v0.6.0");
	assert_string_equal(c->k8s.default_mpi, "OpenMPI");
	assert_string_equal(c->k8s.trainjob_runtime, "mpi-distributed");
	assert_string_equal(c->k8s.ssh_auth_mount_path, "/etc/hpcbridge/ssh");
	assert_int_equal(c->k8s.ssh_port, 2222);
	assert_int_equal(c->k8s.fs_group, HB_FS_GROUP_NONE);
	assert_int_equal(c->k8s.nvolumes, 0);
	assert_int_equal(c->k8s.nallowed_images, 0);
	assert_null(c->k8s.default_priority_class);
	assert_false(c->k8s.gang_scheduling);
	assert_string_equal(c->k8s.gpu_resource, "nvidia.com/gpu");
	assert_null(c->k8s.default_queue);
	assert_int_equal(c->k8s.nmodule_images, 0);
	assert_int_equal(c->k8s.npartition_images, 0);
	assert_int_equal(c->k8s.ncontainer_images, 0);
	assert_int_equal(c->k8s.npartition_queues, 0);
	assert_int_equal(c->k8s.worker_cpus, 0);
	assert_int_equal(c->k8s.worker_mem_mb, 0);
	assert_int_equal(c->k8s.worker_gpus, 0);
	assert_int_equal(c->k8s.launcher_cpus, 1);
	assert_int_equal(c->k8s.launcher_mem_mb, 1024);
	assert_int_equal(c->k8s.nconstraint_selectors, 0);
	assert_int_equal(c->k8s.ngpu_type_selectors, 0);
	assert_int_equal(c->k8s.max_array_jobs, 1000);
	assert_string_equal(c->daemon_socket, "/run/hpcbridge/hpcbridged.sock");
	assert_string_equal(c->daemon_state, "/var/lib/hpcbridge/state.db");
	assert_int_equal(c->ndaemon_admins, 0);
	assert_null(c->daemon_admins);
	assert_int_equal(c->daemon_max_request, 1048576);
	assert_int_equal(c->daemon_workers, 4);
	assert_int_equal(c->daemon_checkpoint_pages, 1000);
	assert_string_equal(c->daemon_log_level, "info");
	assert_string_equal(c->slurm_user, "slurm");
	assert_string_equal(c->burst_partition, "burst");
	assert_int_equal(c->proxy_mem_mb, 64);
	assert_int_equal(c->proxy_grace_min, 5);
	assert_int_equal(c->plugin_timeout_ms, 20);
	assert_string_equal(c->default_target, "slurm");
	assert_int_equal(c->nplacement_partitions, 0);
}

static void test_defaults(void **state)
{
	struct hb_config c;

	(void)state;
	assert_int_equal(hb_config_defaults(&c), 0);
	check_defaults(&c);
	assert_non_null(c.priv);
	hb_config_free(&c);
	assert_null(c.priv);
	assert_null(c.k8s.namespace);
	hb_config_free(&c); /* twice is fine */
	hb_config_free(NULL);

	/* an empty file, a comment-only file, empty sections */
	parse_ok("", &c);
	check_defaults(&c);
	hb_config_free(&c);
	parse_ok("# nothing\n", &c);
	check_defaults(&c);
	hb_config_free(&c);
	parse_ok("kubernetes:\ntranslation:\n", &c);
	check_defaults(&c);
	hb_config_free(&c);
	parse_ok("kubernetes:\n  worker: {}\n  images:\n", &c);
	check_defaults(&c);
	hb_config_free(&c);
}

static void test_shipped_file(void **state)
{
	size_t len;
	char *text =
	    hb_test_read_file(hb_test_src_path("config/hpcbridge.yaml"), &len);
	struct hb_err err = {0};
	struct hb_config c, d;

	(void)state;
	if (hb_config_parse(text, len, "config/hpcbridge.yaml", &c, &err))
		fail_msg("%s", err.msg);
	/* it repeats the defaults, all of them */
	check_defaults(&c);
	assert_int_equal(hb_config_defaults(&d), 0);
	assert_int_equal(hb_config_check_reload(&c, &d, &err), 0);
	hb_config_free(&c);
	hb_config_free(&d);
	free(text);
}

static void test_full(void **state)
{
	struct hb_config c;
	const struct hb_selector_map *m;

	(void)state;
	parse_ok("kubernetes:\n"
		 "  namespace: hpc-burst\n"
		 "  default_image: ghcr.io/site/base:1.0\n"
		 "  mpi_implementation: Intel\n"
		 "  trainjob_runtime: mpi.runtime-2\n"
		 "  ssh_auth_mount_path: /home/mpiuser/.ssh\n"
		 "  gpu_resource: amd.com/gpu\n"
		 "  images:\n"
		 "    modules:\n"
		 "      openmpi/4.1: ghcr.io/site/openmpi:4.1\n"
		 "      intel-mpi: ghcr.io/site/impi@sha256:abcdef0123\n"
		 "    partitions: {gpu: nvcr.io/nvidia/pytorch:24.01-py3}\n"
		 "    containers:\n"
		 "      /shared/lammps.sqsh: ghcr.io/site/lammps:2\n"
		 "  queues:\n"
		 "    default: batch\n"
		 "    partitions: {gpu: gpu-queue, debug: debug.q}\n"
		 "  worker: {cpus: 64, memory: 256Gi, gpus: 8}\n"
		 "  launcher:\n"
		 "    cpus: 2\n"
		 "    memory: 2048\n"
		 "  node_selectors:\n"
		 "    constraints:\n"
		 "      ib:\n"
		 "        feature.node.kubernetes.io/rdma.available: \"true\"\n"
		 "      skylake:\n"
		 "        feature.node.kubernetes.io/cpu-model.family: \"6\"\n"
		 "        zone: \"\"\n"
		 "      anywhere: {}\n"
		 "    gpu_types:\n"
		 "      a100: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
		 "translation:\n"
		 "  max_array_jobs: 50\n",
		 &c);
	assert_string_equal(c.k8s.namespace, "hpc-burst");
	assert_string_equal(c.k8s.default_image, "ghcr.io/site/base:1.0");
	assert_string_equal(c.k8s.default_mpi, "Intel");
	assert_string_equal(c.k8s.trainjob_runtime, "mpi.runtime-2");
	assert_string_equal(c.k8s.ssh_auth_mount_path, "/home/mpiuser/.ssh");
	assert_string_equal(c.k8s.gpu_resource, "amd.com/gpu");
	assert_int_equal(c.k8s.nmodule_images, 2);
	assert_string_equal(
	    hb_kv_get(c.k8s.module_images, c.k8s.nmodule_images, "openmpi/4.1"),
	    "ghcr.io/site/openmpi:4.1");
	assert_string_equal(
	    hb_kv_get(c.k8s.module_images, c.k8s.nmodule_images, "intel-mpi"),
	    "ghcr.io/site/impi@sha256:abcdef0123");
	assert_null(hb_kv_get(c.k8s.module_images, c.k8s.nmodule_images, "mpich"));
	assert_string_equal(
	    hb_kv_get(c.k8s.partition_images, c.k8s.npartition_images, "gpu"),
	    "nvcr.io/nvidia/pytorch:24.01-py3");
	assert_string_equal(hb_kv_get(c.k8s.container_images, c.k8s.ncontainer_images,
				      "/shared/lammps.sqsh"),
			    "ghcr.io/site/lammps:2");
	assert_string_equal(c.k8s.default_queue, "batch");
	assert_int_equal(c.k8s.npartition_queues, 2);
	assert_string_equal(
	    hb_kv_get(c.k8s.partition_queues, c.k8s.npartition_queues, "debug"),
	    "debug.q");
	assert_int_equal(c.k8s.worker_cpus, 64);
	assert_int_equal(c.k8s.worker_mem_mb, 256 * 1024);
	assert_int_equal(c.k8s.worker_gpus, 8);
	assert_int_equal(c.k8s.launcher_cpus, 2);
	assert_int_equal(c.k8s.launcher_mem_mb, 2048);
	assert_int_equal(c.k8s.nconstraint_selectors, 3);
	m = hb_selector_get(c.k8s.constraint_selectors, c.k8s.nconstraint_selectors,
			    "ib");
	assert_non_null(m);
	assert_int_equal(m->nlabels, 1);
	assert_string_equal(m->labels[0].key,
			    "feature.node.kubernetes.io/rdma.available");
	assert_string_equal(m->labels[0].value, "true");
	m = hb_selector_get(c.k8s.constraint_selectors, c.k8s.nconstraint_selectors,
			    "skylake");
	assert_int_equal(m->nlabels, 2);
	assert_string_equal(hb_kv_get(m->labels, m->nlabels, "zone"), "");
	m = hb_selector_get(c.k8s.constraint_selectors, c.k8s.nconstraint_selectors,
			    "anywhere");
	assert_non_null(m);
	assert_int_equal(m->nlabels, 0);
	assert_null(hb_selector_get(c.k8s.constraint_selectors,
				    c.k8s.nconstraint_selectors, "nope"));
	m = hb_selector_get(c.k8s.gpu_type_selectors, c.k8s.ngpu_type_selectors,
			    "a100");
	assert_string_equal(
	    hb_kv_get(m->labels, m->nlabels, "nvidia.com/gpu.product"),
	    "NVIDIA-A100-SXM4-80GB");
	assert_int_equal(c.k8s.max_array_jobs, 50);
	hb_config_free(&c);
	/* lookups are NULL-safe */
	assert_null(hb_kv_get(NULL, 0, "x"));
	assert_null(hb_selector_get(NULL, 0, "x"));
}

static void test_sizes(void **state)
{
	static const struct {
		const char *text;
		uint64_t mib;
	} sizes[] = {
	    {"0", 0},	      {"4096", 4096},  {"\"4096\"", 4096},
	    {"4Gi", 4096},    {"512Mi", 512},  {"1Ti", 1048576},
	    {"1536Ki", 2},    {"4G", 4096},    {"4000M", 4000},
	    {"4gb", 4096},    {"1T", 1048576}, {"2048K", 2},
	    {"\"1e9\"", 954}, {"\"500k\"", 1}, {"64Ti", 67108864},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char text[128];
		struct hb_config c;

		snprintf(text, sizeof(text),
			 "kubernetes:\n  worker:\n"
			 "    memory: %s\n",
			 sizes[i].text);
		parse_ok(text, &c);
		if (c.k8s.worker_mem_mb != sizes[i].mib)
			fail_msg("%s: got %llu MiB, want %llu", sizes[i].text,
				 (unsigned long long)c.k8s.worker_mem_mb,
				 (unsigned long long)sizes[i].mib);
		hb_config_free(&c);
	}
}

static void test_errors(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
	    /* unknown keys, with a hint when one is close */
	    {"kubernetes:\n  namespace: a\n  nmespace: b\n",
	     "hpcbridge.yaml:3: kubernetes.nmespace: unknown key (did "
	     "you mean 'namespace'?)"},
	    {"kubernetes:\n  worker:\n    cpu: 4\n",
	     "hpcbridge.yaml:3: kubernetes.worker.cpu: unknown key (did "
	     "you mean 'cpus'?)"},
	    {"translation: {}\ns3:\n  x: 1\n",
	     "hpcbridge.yaml:2: s3: unknown key"},
	    {"kubernetes:\n  worker.cpus: 4\n",
	     "hpcbridge.yaml:2: kubernetes: unknown key 'worker.cpus'"},
	    /* wrong types */
	    {"kubernetes:\n  worker:\n    cpus: four\n",
	     "hpcbridge.yaml:3: kubernetes.worker.cpus: must be a "
	     "non-negative integer, not a string"},
	    {"kubernetes:\n  worker:\n    cpus: 1.5\n",
	     "hpcbridge.yaml:3: kubernetes.worker.cpus: must be a whole "
	     "number"},
	    {"kubernetes:\n  namespace: 123\n",
	     "hpcbridge.yaml:2: kubernetes.namespace: must be a string, "
	     "not a number (put it in quotes)"},
	    {"kubernetes:\n  namespace: ~\n",
	     "hpcbridge.yaml:2: kubernetes.namespace: must be a string, "
	     "not null"},
	    {"kubernetes: [1]\n",
	     "hpcbridge.yaml:1: kubernetes: must be a mapping, not a "
	     "list"},
	    {"kubernetes:\n  worker: 4\n",
	     "hpcbridge.yaml:2: kubernetes.worker: must be a mapping, "
	     "not a number"},
	    {"- a\n",
	     "hpcbridge.yaml:1: the configuration must be a mapping, not "
	     "a list"},
	    {"kubernetes:\n  images:\n    modules: [a]\n",
	     "hpcbridge.yaml:3: kubernetes.images.modules: must be a "
	     "mapping, not a list"},
	    {"kubernetes:\n  images:\n    modules:\n      openmpi: 4\n",
	     "hpcbridge.yaml:4: kubernetes.images.modules.openmpi: must "
	     "be a string, not a number (put it in quotes)"},
	    {"kubernetes:\n  worker:\n    memory: true\n",
	     "hpcbridge.yaml:3: kubernetes.worker.memory: must be a size "
	     "(an integer in MiB, or \"4Gi\", \"512Mi\", \"4G\"), not a "
	     "boolean"},
	    /* bounds */
	    {"kubernetes:\n  worker:\n    cpus: 5000\n",
	     "hpcbridge.yaml:3: kubernetes.worker.cpus: must be between "
	     "0 and 4096"},
	    {"kubernetes:\n  worker:\n    cpus: -1\n",
	     "hpcbridge.yaml:3: kubernetes.worker.cpus: must be between "
	     "0 and 4096"},
	    {"translation:\n  max_array_jobs: 0\n",
	     "hpcbridge.yaml:2: translation.max_array_jobs: must be "
	     "between 1 and 100000"},
	    {"kubernetes:\n  worker:\n    memory: 65Ti\n",
	     "hpcbridge.yaml:3: kubernetes.worker.memory: must be between "
	     "0 and 64Ti"},
	    {"kubernetes:\n  worker:\n    memory: 99999999999999999999G\n",
	     "hpcbridge.yaml:3: kubernetes.worker.memory: must be between "
	     "0 and 64Ti"},
	    {"kubernetes:\n  launcher:\n    memory: 4 GB\n",
	     "hpcbridge.yaml:3: kubernetes.launcher.memory: '4 GB' is not "
	     "a size (an integer in MiB, or \"4Gi\", \"512Mi\", \"4G\")"},
	    {"kubernetes:\n  launcher:\n    memory: -1Gi\n",
	     "hpcbridge.yaml:3: kubernetes.launcher.memory: '-1Gi' is not "
	     "a size (an integer in MiB, or \"4Gi\", \"512Mi\", \"4G\")"},
	    /* enums */
	    {"kubernetes:\n  mpi_implementation: openmpi\n",
	     "hpcbridge.yaml:2: kubernetes.mpi_implementation: must be "
	     "one of OpenMPI, Intel, MPICH (not 'openmpi')"},
	    /* names */
	    {"kubernetes:\n  namespace: My_NS\n",
	     "hpcbridge.yaml:2: kubernetes.namespace: 'My_NS' must be a "
	     "DNS-1123 label (at most 63 characters: a-z, 0-9 and '-', "
	     "starting and ending with a letter or digit)"},
	    {"kubernetes:\n  namespace: -ns\n",
	     "hpcbridge.yaml:2: kubernetes.namespace: '-ns' must be a "
	     "DNS-1123 label (at most 63 characters: a-z, 0-9 and '-', "
	     "starting and ending with a letter or digit)"},
	    {"kubernetes:\n  namespace: "
	     "a234567890123456789012345678901234567890123456789012345678901"
	     "234\n",
	     "hpcbridge.yaml:2: kubernetes.namespace: "
	     "'a234567890123456789012345678901234567890123456789012345678901"
	     "234' must be a DNS-1123 label (at most 63 characters: a-z, "
	     "0-9 and '-', starting and ending with a letter or digit)"},
	    {"kubernetes:\n  queues:\n    default: Batch\n",
	     "hpcbridge.yaml:3: kubernetes.queues.default: 'Batch' must "
	     "be a valid queue name (a DNS-1123 subdomain of at most 63 "
	     "characters)"},
	    {"kubernetes:\n  queues:\n    partitions:\n      gpu: a..b\n",
	     "hpcbridge.yaml:4: kubernetes.queues.partitions.gpu: 'a..b' "
	     "must be a valid queue name (a DNS-1123 subdomain of at most "
	     "63 characters)"},
	    {"kubernetes:\n  default_image: \"\"\n",
	     "hpcbridge.yaml:2: kubernetes.default_image: '' is not an "
	     "image reference (at most 500 characters of A-Z, a-z, 0-9 "
	     "and ._/:@-, starting with a letter or digit)"},
	    {"kubernetes:\n  images:\n    partitions:\n"
	     "      gpu: \"my image\"\n",
	     "hpcbridge.yaml:4: kubernetes.images.partitions.gpu: 'my "
	     "image' is not an image reference (at most 500 characters "
	     "of A-Z, a-z, 0-9 and ._/:@-, starting with a letter or "
	     "digit)"},
	    {"kubernetes:\n  images:\n    modules:\n"
	     "      \"open mpi\": ghcr.io/x:1\n",
	     "hpcbridge.yaml:4: kubernetes.images.modules.open mpi: the "
	     "key must be 1 to 253 characters without spaces or control "
	     "characters"},
	    {"kubernetes:\n  ssh_auth_mount_path: .ssh\n",
	     "hpcbridge.yaml:2: kubernetes.ssh_auth_mount_path: '.ssh' "
	     "must be an absolute path without whitespace"},
	    {"kubernetes:\n  gpu_resource: gpu\n",
	     "hpcbridge.yaml:2: kubernetes.gpu_resource: 'gpu' must be an "
	     "extended resource name (domain/name, e.g. nvidia.com/gpu)"},
	    {"kubernetes:\n  trainjob_runtime: MPI\n",
	     "hpcbridge.yaml:2: kubernetes.trainjob_runtime: 'MPI' must "
	     "be a DNS-1123 subdomain (a-z, 0-9, '-' and '.', at most 253 "
	     "characters)"},
	    /* selectors */
	    {"kubernetes:\n  node_selectors:\n    constraints:\n"
	     "      ib:\n        feature/rdma: true\n",
	     "hpcbridge.yaml:5: "
	     "kubernetes.node_selectors.constraints.ib.feature/rdma: must "
	     "be a string, not a boolean (put it in quotes)"},
	    {"kubernetes:\n  node_selectors:\n    constraints:\n"
	     "      ib:\n        -bad: \"x\"\n",
	     "hpcbridge.yaml:5: "
	     "kubernetes.node_selectors.constraints.ib.-bad: the key is "
	     "not a valid label key ([prefix/]name: the name at most 63 "
	     "characters of A-Z, a-z, 0-9, '-', '_', '.', the prefix a "
	     "DNS subdomain)"},
	    {"kubernetes:\n  node_selectors:\n    gpu_types:\n"
	     "      a100:\n        Bad_Prefix/x: \"y\"\n",
	     "hpcbridge.yaml:5: "
	     "kubernetes.node_selectors.gpu_types.a100.Bad_Prefix/x: the "
	     "key is not a valid label key ([prefix/]name: the name at "
	     "most 63 characters of A-Z, a-z, 0-9, '-', '_', '.', the "
	     "prefix a DNS subdomain)"},
	    {"kubernetes:\n  node_selectors:\n    gpu_types:\n"
	     "      a100:\n        nvidia.com/gpu.product: \"A 100\"\n",
	     "hpcbridge.yaml:5: "
	     "kubernetes.node_selectors.gpu_types.a100."
	     "nvidia.com/gpu.product: 'A 100' is not a valid label value "
	     "(at most 63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
	     "starting and ending with a letter or digit)"},
	    {"kubernetes:\n  node_selectors:\n    gpu_types:\n"
	     "      a100: nvidia\n",
	     "hpcbridge.yaml:4: kubernetes.node_selectors.gpu_types.a100: "
	     "must be a mapping of node labels, not a string"},
	    /* the document itself */
	    {"kubernetes:\n  namespace: a\n  namespace: b\n",
	     "hpcbridge.yaml:3: duplicate mapping key \"namespace\""},
	    {"kubernetes:\n  worker: &w {cpus: 1}\n  launcher: *w\n",
	     "hpcbridge.yaml:3: YAML aliases are not supported"},
	    {"kubernetes:\n\tnamespace: a\n",
	     "hpcbridge.yaml:2: found character that cannot start any "
	     "token while scanning for the next token (line 2)"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		parse_fails(cases[i].text, cases[i].msg);
}

/* The whole file is checked: every error is counted, the first named. */
static void test_all_errors_counted(void **state)
{
	(void)state;
	parse_fails("kubernetes:\n"
		    "  namespace: Bad\n"
		    "  worker: {cpus: 9999, gpus: -1}\n"
		    "  mpi_implementation: lam\n"
		    "  bogus: 1\n"
		    "translation:\n"
		    "  max_array_jobs: many\n",
		    "hpcbridge.yaml:2: kubernetes.namespace: 'Bad' must be a "
		    "DNS-1123 label (at most 63 characters: a-z, 0-9 and '-', "
		    "starting and ending with a letter or digit) (and 5 more "
		    "errors)");
	parse_fails("kubernetes:\n"
		    "  images:\n"
		    "    modules: {a: \"x y\", b: \"\"}\n",
		    "hpcbridge.yaml:3: kubernetes.images.modules.a: 'x y' is "
		    "not an image reference (at most 500 characters of A-Z, "
		    "a-z, 0-9 and ._/:@-, starting with a letter or digit) "
		    "(and 1 more error)");
}

static void test_reload(void **state)
{
	struct hb_err err = {0};
	struct hb_config a, b;

	(void)state;
	assert_int_equal(hb_config_defaults(&a), 0);
	parse_ok("kubernetes:\n  worker: {cpus: 8}\n  queues:\n"
		 "    partitions: {gpu: q}\n",
		 &b);
	/* reloadable settings may change */
	assert_int_equal(hb_config_check_reload(&a, &b, &err), 0);
	hb_config_free(&b);
	parse_ok("kubernetes:\n  namespace: other\n", &b);
	assert_int_equal(hb_config_check_reload(&a, &b, &err), HB_ECONFLICT);
	assert_string_equal(err.msg,
			    "kubernetes.namespace: changing it needs a "
			    "restart");
	hb_config_free(&a);
	hb_config_free(&b);
}

/* The daemon, Slurm, plugin and placement sections. */
static void test_daemon_keys(void **state)
{
	struct hb_err err = {0};
	struct hb_config a, b;

	(void)state;
	parse_ok("daemon:\n"
		 "  socket: /tmp/hb/api.sock\n"
		 "  state: /tmp/hb/state.db\n"
		 "  admins: [alice, hpc.ops, svc-1, \"machine$\"]\n"
		 "  max_request: 4096\n"
		 "  workers: 64\n"
		 "  log_level: debug\n"
		 "slurm:\n"
		 "  user: slurmadm\n"
		 "  burst_partition: cloud\n"
		 "  proxy_mem_mb: 128\n"
		 "  proxy_grace_min: 0\n"
		 "plugin:\n"
		 "  timeout_ms: 5000\n"
		 "placement:\n"
		 "  default_target: kubernetes\n"
		 "  partitions: {gpu: kubernetes, debug: slurm}\n",
		 &a);
	assert_string_equal(a.daemon_socket, "/tmp/hb/api.sock");
	assert_string_equal(a.daemon_state, "/tmp/hb/state.db");
	assert_int_equal(a.ndaemon_admins, 4);
	assert_true(hb_list_has(a.daemon_admins, a.ndaemon_admins, "hpc.ops"));
	assert_true(
	    hb_list_has(a.daemon_admins, a.ndaemon_admins, "machine$"));
	assert_false(hb_list_has(a.daemon_admins, a.ndaemon_admins, "bob"));
	assert_false(hb_list_has(NULL, 0, "bob"));
	assert_false(hb_list_has(a.daemon_admins, a.ndaemon_admins, NULL));
	assert_int_equal(a.daemon_max_request, 4096);
	assert_int_equal(a.daemon_workers, 64);
	assert_string_equal(a.daemon_log_level, "debug");
	assert_string_equal(a.slurm_user, "slurmadm");
	assert_string_equal(a.burst_partition, "cloud");
	assert_int_equal(a.proxy_mem_mb, 128);
	assert_int_equal(a.proxy_grace_min, 0);
	assert_int_equal(a.plugin_timeout_ms, 5000);
	assert_string_equal(a.default_target, "kubernetes");
	assert_string_equal(hb_kv_get(a.placement_partitions,
				      a.nplacement_partitions, "gpu"),
			    "kubernetes");
	assert_string_equal(hb_kv_get(a.placement_partitions,
				      a.nplacement_partitions, "debug"),
			    "slurm");

	/* reloads: admins, levels, placement may change; the socket, the
	 * state file and the worker count may not */
	parse_ok("daemon:\n"
		 "  socket: /tmp/hb/api.sock\n"
		 "  state: /tmp/hb/state.db\n"
		 "  admins: [alice]\n"
		 "  workers: 64\n"
		 "placement: {partitions: {gpu: slurm}}\n",
		 &b);
	assert_int_equal(hb_config_check_reload(&a, &b, &err), 0);
	hb_config_free(&b);
	parse_ok("daemon:\n"
		 "  socket: /tmp/hb/api.sock\n"
		 "  state: /tmp/hb/state.db\n"
		 "  workers: 2\n",
		 &b);
	assert_int_equal(hb_config_check_reload(&a, &b, &err), HB_ECONFLICT);
	assert_string_equal(err.msg,
			    "daemon.workers: changing it needs a restart");
	hb_config_free(&b);
	memset(&err, 0, sizeof(err));
	parse_ok("daemon: {state: /tmp/hb/state.db, workers: 64}\n", &b);
	assert_int_equal(hb_config_check_reload(&a, &b, &err), HB_ECONFLICT);
	assert_string_equal(err.msg,
			    "daemon.socket: changing it needs a restart");
	hb_config_free(&b);
	hb_config_free(&a);

	/* an empty or null list is no admins */
	parse_ok("daemon:\n  admins:\n", &a);
	assert_int_equal(a.ndaemon_admins, 0);
	hb_config_free(&a);
	parse_ok("daemon: {admins: []}\n", &a);
	assert_int_equal(a.ndaemon_admins, 0);
	hb_config_free(&a);
}

static void test_daemon_key_errors(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
	    {"daemon:\n  socket: relative.sock\n",
	     "hpcbridge.yaml:2: daemon.socket: 'relative.sock' must be an "
	     "absolute path of at most 107 characters without whitespace "
	     "(a UNIX socket address)"},
	    {"daemon:\n  socket: /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "a\n",
	     "hpcbridge.yaml:2: daemon.socket: '/aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' must be "
	     "an absolute path of at most 107 characters without whitespace "
	     "(a UNIX socket address)"},
	    {"daemon:\n  state: state.db\n",
	     "hpcbridge.yaml:2: daemon.state: 'state.db' must be an absolute "
	     "path without whitespace"},
	    {"daemon:\n  admins: alice\n",
	     "hpcbridge.yaml:2: daemon.admins: must be a list, not a string"},
	    {"daemon:\n  admins: {alice: 1}\n",
	     "hpcbridge.yaml:2: daemon.admins: must be a list, not a "
	     "mapping"},
	    {"daemon:\n  admins:\n    - alice\n    - 1000\n",
	     "hpcbridge.yaml:4: daemon.admins[1]: must be a string, not a "
	     "number (put it in quotes)"},
	    {"daemon:\n  admins: [alice, -bob]\n",
	     "hpcbridge.yaml:2: daemon.admins[1]: '-bob' is not a user name "
	     "(1 to 32 characters of A-Z, a-z, 0-9, '_', '.', '-', not "
	     "starting with '-')"},
	    {"daemon:\n  admins: [\"a b\"]\n",
	     "hpcbridge.yaml:2: daemon.admins[0]: 'a b' is not a user name "
	     "(1 to 32 characters of A-Z, a-z, 0-9, '_', '.', '-', not "
	     "starting with '-')"},
	    {"daemon:\n  admins:\n    - alice\n    - alice\n",
	     "hpcbridge.yaml:4: daemon.admins[1]: 'alice' is listed twice"},
	    {"daemon:\n  max_request: 100\n",
	     "hpcbridge.yaml:2: daemon.max_request: must be between 4096 and "
	     "1048576"},
	    {"daemon:\n  max_request: 1048577\n",
	     "hpcbridge.yaml:2: daemon.max_request: must be between 4096 and "
	     "1048576"},
	    {"daemon:\n  workers: 0\n",
	     "hpcbridge.yaml:2: daemon.workers: must be between 1 and 64"},
	    {"daemon:\n  checkpoint_pages: 99\n",
	     "hpcbridge.yaml:2: daemon.checkpoint_pages: must be between 100 "
	     "and 100000"},
	    {"daemon:\n  log_level: verbose\n",
	     "hpcbridge.yaml:2: daemon.log_level: must be one of debug, info, "
	     "warn, error (not 'verbose')"},
	    {"slurm:\n  user: \"\"\n",
	     "hpcbridge.yaml:2: slurm.user: '' is not a user name (1 to 32 "
	     "characters of A-Z, a-z, 0-9, '_', '.', '-', not starting with "
	     "'-')"},
	    {"slurm:\n  proxy_mem_mb: 0\n",
	     "hpcbridge.yaml:2: slurm.proxy_mem_mb: must be between 1 and "
	     "65536"},
	    {"slurm:\n  proxy_grace_min: 1441\n",
	     "hpcbridge.yaml:2: slurm.proxy_grace_min: must be between 0 and "
	     "1440"},
	    {"slurm:\n  burst_partition: \"a b\"\n",
	     "hpcbridge.yaml:2: slurm.burst_partition: 'a b' must be 1 to 253 "
	     "characters without spaces or control characters"},
	    {"plugin:\n  timeout_ms: 0\n",
	     "hpcbridge.yaml:2: plugin.timeout_ms: must be between 1 and "
	     "5000"},
	    {"plugin:\n  timeout_ms: 5001\n",
	     "hpcbridge.yaml:2: plugin.timeout_ms: must be between 1 and "
	     "5000"},
	    {"plugin:\n  timout_ms: 5\n",
	     "hpcbridge.yaml:2: plugin.timout_ms: unknown key (did you mean "
	     "'timeout_ms'?)"},
	    {"placement:\n  default_target: auto\n",
	     "hpcbridge.yaml:2: placement.default_target: must be one of "
	     "slurm, kubernetes (not 'auto')"},
	    {"placement:\n  partitions:\n    gpu: k8s\n",
	     "hpcbridge.yaml:3: placement.partitions.gpu: 'k8s' must be "
	     "slurm or kubernetes"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		parse_fails(cases[i].text, cases[i].msg);
}

/* origin.namespaces and origin.min_uid: who managed MPIJobs may run as. */
static void test_origin_keys(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} bad[] = {
	    {"origin:\n  namespaces: [team-a]\n",
	     "hpcbridge.yaml:2: origin.namespaces: must be a mapping, not a "
	     "list"},
	    {"origin:\n  namespaces:\n    Team_A: [alice]\n",
	     "hpcbridge.yaml:3: origin.namespaces.Team_A: the key must be a "
	     "DNS-1123 label (at most 63 characters: a-z, 0-9 and '-', "
	     "starting and ending with a letter or digit)"},
	    {"origin:\n  namespaces:\n    team-a: alice\n",
	     "hpcbridge.yaml:3: origin.namespaces.team-a: must be a list, not "
	     "a string"},
	    {"origin:\n  namespaces:\n    team-a: [alice, -bob]\n",
	     "hpcbridge.yaml:3: origin.namespaces.team-a[1]: '-bob' is "
	     "neither a user name (1 to 32 characters of A-Z, a-z, 0-9, '_', "
	     "'.', '-', not starting with '-') nor \"*\""},
	    {"origin:\n  namespaces:\n    team-a: [\"**\"]\n",
	     "hpcbridge.yaml:3: origin.namespaces.team-a[0]: '**' is "
	     "neither a user name (1 to 32 characters of A-Z, a-z, 0-9, '_', "
	     "'.', '-', not starting with '-') nor \"*\""},
	    {"origin:\n  namespaces:\n    team-a: [1000]\n",
	     "hpcbridge.yaml:3: origin.namespaces.team-a[0]: must be a "
	     "string, not a number (put it in quotes)"},
	    {"origin:\n  namespaces:\n    team-a:\n      - bob\n      - bob\n",
	     "hpcbridge.yaml:5: origin.namespaces.team-a[1]: 'bob' is listed "
	     "twice"},
	    {"origin:\n  min_uid: 0\n",
	     "hpcbridge.yaml:2: origin.min_uid: must be between 1 and "
	     "4294967294"},
	    {"origin:\n  min_uid: -1\n",
	     "hpcbridge.yaml:2: origin.min_uid: must be between 1 and "
	     "4294967294"},
	    {"origin:\n  min_uid: \"1000\"\n",
	     "hpcbridge.yaml:2: origin.min_uid: must be a non-negative "
	     "integer, not a string"},
	    {"origin:\n  namespace: {}\n",
	     "hpcbridge.yaml:2: origin.namespace: unknown key (did you mean "
	     "'namespaces'?)"},
	};
	struct hb_err err = {0};
	struct hb_config a, b;
	const struct hb_list_map *m;
	size_t i;

	(void)state;
	/* the default: nothing mapped, the floor at 1000 */
	assert_int_equal(hb_config_defaults(&a), 0);
	assert_int_equal(a.norigin_namespaces, 0);
	assert_null(a.origin_namespaces);
	assert_int_equal(a.origin_min_uid, 1000);
	parse_ok("origin:\n"
		 "  namespaces:\n"
		 "    team-a: [alice, bob]\n"
		 "    team-b: [carol]\n"
		 "    sandbox: [\"*\"]\n"
		 "    closed: []\n"
		 "    gone: null\n"
		 "  min_uid: 5000\n",
		 &b);
	assert_int_equal(b.norigin_namespaces, 5);
	assert_int_equal(b.origin_min_uid, 5000);
	m = hb_list_map_get(b.origin_namespaces, b.norigin_namespaces,
			    "team-a");
	assert_non_null(m);
	assert_int_equal(m->nvalues, 2);
	assert_string_equal(m->values[0], "alice");
	assert_string_equal(m->values[1], "bob");
	m = hb_list_map_get(b.origin_namespaces, b.norigin_namespaces,
			    "sandbox");
	assert_true(hb_list_has(m->values, m->nvalues, "*"));
	m = hb_list_map_get(b.origin_namespaces, b.norigin_namespaces,
			    "closed");
	assert_non_null(m);
	assert_int_equal(m->nvalues, 0);
	assert_null(hb_list_map_get(b.origin_namespaces, b.norigin_namespaces,
				    "team-c"));
	assert_null(hb_list_map_get(NULL, 0, "team-a"));
	/* both reload */
	assert_int_equal(hb_config_check_reload(&a, &b, &err), 0);
	hb_config_free(&a);
	hb_config_free(&b);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		parse_fails(bad[i].text, bad[i].msg);
}

/* Every setting is documented and shipped; the table is sound. */
static void test_table_documented(void **state)
{
	size_t dlen, ylen, i;
	char *doc =
	    hb_test_read_file(hb_test_src_path("docs/configuration.md"), &dlen);
	char *yaml =
	    hb_test_read_file(hb_test_src_path("config/hpcbridge.yaml"), &ylen);
	struct hb_config_key k;

	(void)state;
	for (i = 0; hb_config_key(i, &k) == 0; i++) {
		char needle[160];
		const char *leaf = strrchr(k.path, '.');

		assert_non_null(k.help);
		snprintf(needle, sizeof(needle), "`%s`", k.path);
		if (!strstr(doc, needle))
			fail_msg("%s is not in docs/configuration.md", k.path);
		snprintf(needle, sizeof(needle),
			 " %s:", leaf ? leaf + 1 : k.path);
		if (!strstr(yaml, needle))
			fail_msg("%s is not in config/hpcbridge.yaml", k.path);
		if (k.type == HB_CFG_UINT || k.type == HB_CFG_SIZE)
			assert_true(k.min <= k.max);
		if (k.type == HB_CFG_ENUM)
			assert_non_null(k.values);
	}
	assert_true(i >= 19);
	assert_int_equal(hb_config_key(i, &k), HB_ENOENT);
	free(doc);
	free(yaml);
}


/* What makes the pods run as the user on the site's files. */
static void test_pod_keys(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} bad[] = {
	    {"kubernetes:\n  ssh_port: 22\n",
	     "hpcbridge.yaml:2: kubernetes.ssh_port: must be between 1024 "
	     "and 65535"},
	    {"kubernetes:\n  fs_group: root\n",
	     "hpcbridge.yaml:2: kubernetes.fs_group: must be none, primary "
	     "or a group id between 1 and 4294967294 (not 'root')"},
	    {"kubernetes:\n  fs_group: 0\n",
	     "hpcbridge.yaml:2: kubernetes.fs_group: a group id must be a "
	     "whole number between 1 and 4294967294"},
	    {"kubernetes:\n  fs_group: [1]\n",
	     "hpcbridge.yaml:2: kubernetes.fs_group: must be none, primary "
	     "or a group id, not a list"},
	    {"kubernetes:\n  openshift:\n    uid_range: \"1000\"\n",
	     "hpcbridge.yaml:3: kubernetes.openshift.uid_range: '1000' must "
	     "be a uid range as OpenShift writes it: START/SIZE or START-END, "
	     "comma-separated (1000660000/10000)"},
	    {"kubernetes:\n  openshift:\n    scc: Not_A_Name\n",
	     "hpcbridge.yaml:3: kubernetes.openshift.scc: 'Not_A_Name' must "
	     "be a DNS-1123 subdomain (a-z, 0-9, '-' and '.', at most 253 "
	     "characters)"},
	    {"kubernetes:\n  gang_scheduling: yes please\n",
	     "hpcbridge.yaml:2: kubernetes.gang_scheduling: must be true "
	     "or false, not a string"},
	    {"kubernetes:\n  volumes: {path: /scratch}\n",
	     "hpcbridge.yaml:2: kubernetes.volumes: must be a list, not a "
	     "mapping"},
	    {"kubernetes:\n  volumes:\n    - pvc: scratch\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0]: needs a path (where "
	     "the pods mount it)"},
	    {"kubernetes:\n  volumes:\n    - path: /scratch\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0]: needs exactly one of "
	     "pvc, nfs and host_path (it has 0)"},
	    {"kubernetes:\n  volumes:\n"
	     "    - {path: /a, pvc: a, host_path: /a}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0]: needs exactly one of "
	     "pvc, nfs and host_path (it has 2)"},
	    {"kubernetes:\n  volumes:\n    - {path: /a/../etc, pvc: a}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].path: '/a/../etc' "
	     "must be written plainly: no '.', '..', '//' or trailing '/'"},
	    {"kubernetes:\n  volumes:\n    - {path: /scratch/, pvc: a}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].path: '/scratch/' "
	     "must be written plainly: no '.', '..', '//' or trailing '/'"},
	    {"kubernetes:\n  volumes:\n    - {path: /, pvc: a}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].path: '/' cannot be "
	     "/ itself"},
	    {"kubernetes:\n  volumes:\n    - {path: scratch, pvc: a}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].path: 'scratch' must "
	     "be an absolute path without whitespace"},
	    {"kubernetes:\n  volumes:\n    - {path: /a, pvc: Bad_Claim}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].pvc: 'Bad_Claim' "
	     "must be a DNS-1123 subdomain (a-z, 0-9, '-' and '.', at most "
	     "253 characters)"},
	    {"kubernetes:\n  volumes:\n    - {path: /a, nfs: {server: h}}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].nfs: needs both "
	     "server and path"},
	    {"kubernetes:\n  volumes:\n"
	     "    - {path: /a, nfs: {server: h, path: /x, port: 1}}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].nfs: unknown key "
	     "'port' (server, path)"},
	    {"kubernetes:\n  volumes:\n    - {path: /a, pvc: a, ro: true}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0]: unknown key 'ro' "
	     "(path, pvc, nfs, host_path, read_only)"},
	    {"kubernetes:\n  volumes:\n"
	     "    - {path: /a, pvc: a, read_only: \"yes\"}\n",
	     "hpcbridge.yaml:3: kubernetes.volumes[0].read_only: must be "
	     "true or false, not a string"},
	    {"kubernetes:\n  volumes:\n    - {path: /a, pvc: a}\n"
	     "    - {path: /a, pvc: b}\n",
	     "hpcbridge.yaml:4: kubernetes.volumes[1]: path /a is listed "
	     "twice"},
	    {"kubernetes:\n  allowed_images: ghcr.io/*\n",
	     "hpcbridge.yaml:2: kubernetes.allowed_images: must be a list, "
	     "not a string"},
	    {"kubernetes:\n  priority_classes: {high: High_Prio}\n",
	     "hpcbridge.yaml:2: kubernetes.priority_classes.high: "
	     "'High_Prio' must be a priority class name (a DNS-1123 "
	     "subdomain of at most 63 characters)"},
	    {"kubernetes:\n  default_priority_class: X\n",
	     "hpcbridge.yaml:2: kubernetes.default_priority_class: 'X' "
	     "must be a priority class name (a DNS-1123 subdomain of at "
	     "most 63 characters)"},
	};
	struct hb_config c;

	(void)state;
	parse_ok("kubernetes:\n"
		 "  ssh_port: 2022\n"
		 "  fs_group: primary\n"
		 "  gang_scheduling: true\n"
		 "  volumes:\n"
		 "    - path: /scratch\n"
		 "      pvc: scratch\n"
		 "    - path: /projects\n"
		 "      nfs: {server: nfs.example.org, path: /export/p}\n"
		 "      read_only: true\n"
		 "    - {path: /apps, host_path: /opt/apps}\n"
		 "  allowed_images: [\"ghcr.io/site/*\", \"docker.io/library/"
		 "ubuntu:2?.04\"]\n"
		 "  priority_classes: {high: hpc-high}\n"
		 "  default_priority_class: hpc-normal\n"
		 "  pod_priority_classes: {high: high-priority}\n",
		 &c);
	assert_int_equal(c.k8s.ssh_port, 2022);
	assert_int_equal(c.k8s.fs_group, HB_FS_GROUP_PRIMARY);
	assert_true(c.k8s.gang_scheduling);
	assert_int_equal(c.k8s.nvolumes, 3);
	assert_string_equal(c.k8s.volumes[0].path, "/scratch");
	assert_string_equal(c.k8s.volumes[0].pvc, "scratch");
	assert_false(c.k8s.volumes[0].read_only);
	assert_string_equal(c.k8s.volumes[1].nfs_server, "nfs.example.org");
	assert_string_equal(c.k8s.volumes[1].nfs_path, "/export/p");
	assert_null(c.k8s.volumes[1].pvc);
	assert_true(c.k8s.volumes[1].read_only);
	assert_string_equal(c.k8s.volumes[2].host_path, "/opt/apps");
	assert_int_equal(c.k8s.nallowed_images, 2);
	assert_string_equal(c.k8s.allowed_images[0], "ghcr.io/site/*");
	assert_string_equal(hb_kv_get(c.k8s.priority_classes,
				      c.k8s.npriority_classes, "high"),
			    "hpc-high");
	assert_string_equal(c.k8s.default_priority_class, "hpc-normal");
	assert_string_equal(hb_kv_get(c.k8s.pod_priority_classes,
				      c.k8s.npod_priority_classes, "high"),
			    "high-priority");
	hb_config_free(&c);

	parse_ok("kubernetes:\n  fs_group: 5000\n", &c);
	assert_int_equal(c.k8s.fs_group, HB_FS_GROUP_GID);
	assert_int_equal(c.k8s.fs_group_gid, 5000);
	hb_config_free(&c);
	parse_ok("kubernetes:\n  fs_group: \"6000\"\n", &c);
	assert_int_equal(c.k8s.fs_group, HB_FS_GROUP_GID);
	assert_int_equal(c.k8s.fs_group_gid, 6000);
	hb_config_free(&c);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		parse_fails(bad[i].text, bad[i].msg);
}

/* The fabric keys: GPU types to resources, the Pod Security level, RDMA
 * by device plugin or DRA; their defaults and what each refuses. */
static void test_fabric_keys(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} bad[] = {
	    {"kubernetes:\n  gpu_resources:\n    mi300x: amd\n",
	     "hpcbridge.yaml:3: kubernetes.gpu_resources.mi300x: 'amd' must "
	     "be an extended resource name (domain/name, e.g. "
	     "nvidia.com/gpu)"},
	    {"kubernetes:\n  pod_security: open\n",
	     "hpcbridge.yaml:2: kubernetes.pod_security: must be one of "
	     "restricted, baseline, privileged (not 'open')"},
	    {"kubernetes:\n  rdma:\n    mode: sriov\n",
	     "hpcbridge.yaml:3: kubernetes.rdma.mode: must be one of none, "
	     "device_plugin, dra (not 'sriov')"},
	    {"kubernetes:\n  rdma:\n    count: 0\n",
	     "hpcbridge.yaml:3: kubernetes.rdma.count: must be between 1 "
	     "and 64"},
	    {"kubernetes:\n  rdma:\n    dra:\n      interface_name: "
	     "rdma0/../x\n",
	     "hpcbridge.yaml:4: kubernetes.rdma.dra.interface_name: "
	     "'rdma0/../x' must be a network interface name (1 to 15 "
	     "characters of A-Z, a-z, 0-9, '-', '_', '.')"},
	    {"kubernetes:\n  rdma:\n    dra:\n      interface_name: "
	     "a-very-long-name0\n",
	     "hpcbridge.yaml:4: kubernetes.rdma.dra.interface_name: "
	     "'a-very-long-name0' must be a network interface name (1 to 15 "
	     "characters of A-Z, a-z, 0-9, '-', '_', '.')"},
	    {"kubernetes:\n  rdma:\n    dra:\n      selector: \"a\\nb\"\n",
	     "hpcbridge.yaml:4: kubernetes.rdma.dra.selector: 'a\nb' must be "
	     "one line of text (no control characters)"},
	    {"kubernetes:\n  rdma:\n    dra:\n      api_version: v1\n",
	     "hpcbridge.yaml:4: kubernetes.rdma.dra.api_version: must be one "
	     "of resource.k8s.io/v1, resource.k8s.io/v1beta2, "
	     "resource.k8s.io/v1beta1 (not 'v1')"},
	};
	struct hb_config c;

	(void)state;
	parse_ok("", &c);
	assert_int_equal(c.k8s.ngpu_resources, 0);
	assert_string_equal(c.k8s.pod_security, "restricted");
	assert_string_equal(c.k8s.rdma_mode, "none");
	assert_null(c.k8s.rdma_resource);
	assert_int_equal(c.k8s.rdma_count, 1);
	assert_null(c.k8s.rdma_dra_class);
	assert_string_equal(c.k8s.rdma_dra_api, "resource.k8s.io/v1");
	assert_string_equal(c.k8s.rdma_dra_driver, "dra.net");
	assert_null(c.k8s.rdma_dra_ifname);
	assert_null(c.k8s.rdma_dra_selector);
	hb_config_free(&c);
	parse_ok("kubernetes:\n"
		 "  gpu_resources: {mi300x: amd.com/gpu, h100: nvidia.com/gpu}\n"
		 "  pod_security: privileged\n"
		 "  rdma:\n"
		 "    mode: dra\n"
		 "    count: 2\n"
		 "    dra:\n"
		 "      device_class: dranet.net\n"
		 "      api_version: resource.k8s.io/v1beta1\n"
		 "      interface_name: rdma\n"
		 "      selector: 'device.attributes[\"dra.net\"].rdma == "
		 "true'\n",
		 &c);
	assert_int_equal(c.k8s.ngpu_resources, 2);
	assert_string_equal(hb_kv_get(c.k8s.gpu_resources, 2, "mi300x"),
			    "amd.com/gpu");
	assert_string_equal(c.k8s.pod_security, "privileged");
	assert_string_equal(c.k8s.rdma_mode, "dra");
	assert_int_equal(c.k8s.rdma_count, 2);
	assert_string_equal(c.k8s.rdma_dra_class, "dranet.net");
	assert_string_equal(c.k8s.rdma_dra_api, "resource.k8s.io/v1beta1");
	assert_string_equal(c.k8s.rdma_dra_ifname, "rdma");
	assert_string_equal(c.k8s.rdma_dra_selector,
			    "device.attributes[\"dra.net\"].rdma == true");
	hb_config_free(&c);
	parse_ok("kubernetes:\n  rdma:\n    mode: device_plugin\n"
		 "    resource: rdma/rdma_shared_device_a\n",
		 &c);
	assert_string_equal(c.k8s.rdma_resource, "rdma/rdma_shared_device_a");
	hb_config_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		parse_fails(bad[i].text, bad[i].msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_shipped_file),
	    cmocka_unit_test(test_full),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_all_errors_counted),
	    cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_daemon_keys),
	    cmocka_unit_test(test_daemon_key_errors),
	    cmocka_unit_test(test_origin_keys),
	    cmocka_unit_test(test_table_documented),
	    cmocka_unit_test(test_pod_keys),
	    cmocka_unit_test(test_fabric_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
