/*
 * test_jobspec.c - the job model: derived shape, arrays, lists, body scan,
 * JSON in both directions.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hpcbridge/jobspec.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

static void test_shape_defaults(void **state)
{
	struct hb_jobspec s;
	struct hb_shape sh;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.nodes, 1);
	assert_int_equal(sh.tasks_per_node, 1);
	assert_int_equal(sh.ntasks, 1);
	assert_int_equal(sh.cpus_per_task, 1);
	assert_int_equal(sh.gpus_per_node, 0);
	assert_int_equal(sh.mem_per_node_mb, 0);
	assert_false(sh.whole_node_mem);
	hb_jobspec_free(&s);
}

/* No node count: as many nodes as the tasks need, as Slurm allocates. */
static void test_shape_nodes_from_tasks(void **state)
{
	struct hb_jobspec s;
	struct hb_shape sh;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	s.ntasks = 80;
	s.ntasks_per_node = 40;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.nodes, 2);
	assert_int_equal(sh.tasks_per_node, 40);
	assert_int_equal(sh.ntasks, 80);
	s.ntasks = 10;
	s.ntasks_per_node = 4;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.nodes, 3);
	s.ntasks = UINT32_MAX;
	s.ntasks_per_node = 1;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.nodes, UINT32_MAX);
	s.nodes_min = 1; /* a node count given wins */
	s.ntasks = 10;
	s.ntasks_per_node = 4;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.nodes, 1);
	hb_jobspec_free(&s);
}

static void test_shape_memory_kinds(void **state)
{
	struct hb_jobspec s;
	struct hb_shape sh;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	s.nodes_min = 4;
	s.ntasks = 30; /* ceil(30/4) = 8 per node */
	s.cpus_per_task = 2;
	s.mem_kind = HB_MEM_PER_CPU;
	s.mem_mb = 1000;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.tasks_per_node, 8);
	assert_int_equal(sh.ntasks, 30);
	assert_int_equal(sh.cpus_per_node, 16);
	assert_int_equal(sh.mem_per_node_mb, 16000);

	s.mem_kind = HB_MEM_JOB; /* Torque: job-wide, split over nodes */
	s.mem_mb = 32769;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.mem_per_node_mb, 8193);

	s.mem_kind = HB_MEM_PER_PROCESS;
	s.mem_mb = 512;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.mem_per_node_mb, 8 * 512);

	s.gpu_scope = HB_GPU_PER_TASK;
	s.gpus = 1;
	s.mem_kind = HB_MEM_PER_GPU;
	s.mem_mb = 65536;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.gpus_per_node, 8);
	assert_int_equal(sh.mem_per_node_mb, 8 * 65536);

	s.gpu_scope = HB_GPU_PER_JOB;
	s.gpus = 6; /* over 4 nodes: 2 per node, rounded up */
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.gpus_per_node, 2);

	s.mem_kind = HB_MEM_PER_NODE;
	s.mem_mb = 0;
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_true(sh.whole_node_mem);
	assert_int_equal(sh.mem_per_node_mb, 0);
	hb_jobspec_free(&s);
}

static void test_shape_overflow(void **state)
{
	struct hb_jobspec s;
	struct hb_shape sh;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	s.ntasks_per_node = 100000;
	s.cpus_per_task = 100000;
	assert_int_equal(hb_jobspec_shape(&s, &sh), HB_ERANGE);
	s.cpus_per_task = 1;
	s.mem_kind = HB_MEM_PER_CPU;
	s.mem_mb = UINT64_MAX / 2;
	assert_int_equal(hb_jobspec_shape(&s, &sh), HB_ERANGE);
	hb_jobspec_free(&s);
}

static void test_array_indices(void **state)
{
	struct hb_jobspec s;
	struct hb_range r[] = {{1, 1, 1}, {3, 9, 3}, {20, 21, 1}};

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	assert_int_equal(hb_jobspec_array_count(&s), 0);
	s.array_ranges = r;
	s.narray_ranges = 3;
	assert_int_equal(hb_jobspec_array_count(&s), 1 + 3 + 2);
	assert_int_equal(hb_jobspec_array_index(&s, 0), 1);
	assert_int_equal(hb_jobspec_array_index(&s, 1), 3);
	assert_int_equal(hb_jobspec_array_index(&s, 3), 9);
	assert_int_equal(hb_jobspec_array_index(&s, 5), 21);
	/* The widest range counts 2^32 indices (capped), not 0. */
	struct hb_range wide = {0, UINT32_MAX, 1};

	s.array_ranges = &wide;
	s.narray_ranges = 1;
	assert_true(hb_jobspec_array_count(&s) == UINT32_MAX);
	assert_int_equal(hb_jobspec_array_index(&s, UINT32_MAX), UINT32_MAX);
	s.array_ranges = NULL;
	s.narray_ranges = 0;
	hb_jobspec_free(&s);
}

static void test_lists_and_directives(void **state)
{
	struct hb_jobspec s;
	struct hb_prov o = {HB_PROV_FILE, 3};
	struct hb_directive *d;
	char name[32];

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		assert_int_equal(hb_jobspec_add_env(&s, name, "x"), 0);
		assert_int_equal(hb_jobspec_add_data(&s, name), 0);
	}
	assert_int_equal(s.nenv, 100);
	assert_int_equal(hb_jobspec_add_env(&s, "V7", "later"), 0);
	assert_int_equal(s.nenv, 100);
	assert_string_equal(s.env[7].value, "later");
	assert_string_equal(s.data[99], "V99");
	for (int i = 0; i < 50; i++) {
		d = hb_jobspec_add_directive(&s, HB_DIR_SBATCH, o, "--nodes=2",
					     9);
		assert_non_null(d);
		hb_directive_add_field(d, HB_F_NODES);
		hb_directive_add_field(d, HB_F_NODES);
		assert_int_equal(d->nfields, 1);
	}
	assert_int_equal(s.ndirectives, 50);
	assert_string_equal(s.directives[49].text, "--nodes=2");
	assert_string_equal(hb_field_name(HB_F_NTASKS_PER_NODE),
			    "ntasks_per_node");
	assert_null(hb_field_name(HB__F_COUNT));
	for (int f = 0; f < HB__F_COUNT; f++)
		assert_non_null(hb_field_name((enum hb_field)f));
	hb_jobspec_free(&s);
}

static void scan(struct hb_jobspec *s, const char *script)
{
	struct hb_err err = {0};

	s->script = script;
	s->script_len = (uint32_t)strlen(script);
	assert_int_equal(hb_jobspec_scan_body(s, &err), 0);
}

/* A model of hb_jobspec_add_env: the scan the index replaced. */
struct env_model {
	char name[64][8];
	const char *value[64];
	int n;
};

static void model_add(struct env_model *m, const char *name,
		      const char *value)
{
	for (int i = 0; i < m->n; i++) {
		if (strcmp(m->name[i], name) == 0) {
			m->value[i] = value;
			return;
		}
	}
	snprintf(m->name[m->n], sizeof(m->name[0]), "%s", name);
	m->value[m->n++] = value;
}

static void assert_env_is(const struct hb_jobspec *s,
			  const struct env_model *m)
{
	assert_int_equal(s->nenv, m->n);
	for (int i = 0; i < m->n; i++) {
		assert_string_equal(s->env[i].name, m->name[i]);
		if (m->value[i])
			assert_string_equal(s->env[i].value, m->value[i]);
		else
			assert_null(s->env[i].value);
	}
}

/* Later assignment wins in the first one's place, below and above the
 * size where the index takes over, with values and pass-throughs. */
static void test_env_later_wins(void **state)
{
	static const char *const vals[] = {"a", NULL, "", "c,d", NULL};
	struct env_model m = {.n = 0};
	struct hb_jobspec s;
	unsigned x = 12345;
	char name[8];

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	for (int i = 0; i < 2000; i++) {
		const char *v = vals[i % 5];

		x = x * 1103515245u + 12345u;
		snprintf(name, sizeof(name), "N%u", (x >> 16) % 60);
		assert_int_equal(hb_jobspec_add_env(&s, name, v), 0);
		model_add(&m, name, v);
		assert_env_is(&s, &m);
	}
	assert_int_equal(s.nenv, 60);
	assert_int_equal(hb_jobspec_add_env(&s, NULL, "x"), HB_EINVAL);
	hb_jobspec_free(&s);
}

/* Callers reorder and remove entries in place (k8s.c restores
 * pass-through variables at their places and drops an array element's
 * variables): the next add still finds every name, once. */
static void test_env_edited_in_place(void **state)
{
	struct hb_jobspec s;
	struct hb_env e;
	char name[16];
	uint32_t k = 0;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		assert_int_equal(hb_jobspec_add_env(&s, name, "1"), 0);
	}
	/* move the last to the front, as restore_passthrough() does */
	e = s.env[39];
	memmove(&s.env[1], &s.env[0], 39 * sizeof(e));
	s.env[0] = e;
	assert_int_equal(hb_jobspec_add_env(&s, "V39", "front"), 0);
	assert_int_equal(hb_jobspec_add_env(&s, "V0", "second"), 0);
	assert_int_equal(s.nenv, 40);
	assert_string_equal(s.env[0].name, "V39");
	assert_string_equal(s.env[0].value, "front");
	assert_string_equal(s.env[1].value, "second");
	/* drop the odd ones, as drop_array_env() does */
	for (uint32_t i = 0; i < s.nenv; i++)
		if (i % 2 == 0)
			s.env[k++] = s.env[i];
	s.nenv = k;
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		assert_int_equal(hb_jobspec_add_env(&s, name, "2"), 0);
	}
	assert_int_equal(s.nenv, 40);
	for (uint32_t i = 0; i < s.nenv; i++) {
		for (uint32_t j = i + 1; j < s.nenv; j++)
			assert_string_not_equal(s.env[i].name, s.env[j].name);
		assert_string_equal(s.env[i].value, "2");
	}
	assert_string_equal(s.env[0].name, "V39");
	hb_jobspec_free(&s);
}

/* 200,000 names and each again: linear, where the scan took minutes. */
static void test_env_many_names(void **state)
{
	struct hb_jobspec s;
	char name[16];
	struct timespec t0, t1;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 200000; i++) {
			snprintf(name, sizeof(name), "V%d", i);
			assert_int_equal(
			    hb_jobspec_add_env(&s, name, pass ? "b" : NULL),
			    0);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(s.nenv, 200000);
	assert_string_equal(s.env[0].name, "V0");
	assert_string_equal(s.env[199999].name, "V199999");
	assert_string_equal(s.env[123456].value, "b");
	/* the scan needs about 2e10 comparisons here: minutes */
	assert_true(t1.tv_sec - t0.tv_sec < 30);
	hb_jobspec_free(&s);
}

static void test_body_scan(void **state)
{
	struct hb_jobspec s;

	(void)state;
	hb_jobspec_init(&s, "t.sh");
	scan(&s, "#!/bin/bash\n"
		 "#SBATCH -N 2\n"
		 "module purge\n"
		 "module load gcc/12 openmpi/4.1.5 # the MPI\n"
		 "ml cuda/12\n"
		 "export NCCL_DEBUG=INFO NCCL_IB_HCA=\"mlx5_0\" OTHER=1\n"
		 "export NCCL_SOCKET_IFNAME=$IFACE\n"
		 "  # srun not-a-launch\n"
		 "time srun --mpi=pmix \\\n"
		 "   ./a.out\n"
		 "/usr/bin/mpirun -np 4 ./b\n"
		 "echo srun\n");
	assert_int_equal(s.nmodules, 3);
	assert_string_equal(s.modules[0], "gcc/12");
	assert_string_equal(s.modules[1], "openmpi/4.1.5");
	assert_string_equal(s.modules[2], "cuda/12");
	assert_int_equal(s.nenv, 2);
	assert_string_equal(s.env[0].name, "NCCL_DEBUG");
	assert_string_equal(s.env[1].value, "mlx5_0");
	assert_int_equal(s.nmpi_lines, 2);
	assert_string_equal(s.mpi_lines[0], "time srun --mpi=pmix    ./a.out");
	assert_int_equal(s.mpi, HB_MPI_OPENMPI);
	/* The launch line's directive names its first line. */
	assert_int_equal(s.prov[HB_F_MPI].line, 9);
	hb_jobspec_free(&s);

	hb_jobspec_init(&s, "t.sh");
	scan(&s, "#!/bin/sh\nmodule load compiler/intel mpi/mpich-4\n"
		 "mpiexec -n 2 x\n");
	assert_int_equal(s.mpi, HB_MPI_MPICH); /* not "ompi" in compiler */
	hb_jobspec_free(&s);

	hb_jobspec_init(&s, "t.sh");
	scan(&s, "#!/bin/sh\nexport I_MPI_PIN=1\nmpiexec.hydra x\n");
	assert_int_equal(s.mpi, HB_MPI_INTEL);
	hb_jobspec_free(&s);

	/* A comment does not continue; Lmod subcommands load nothing; a
	 * logical line too long to hold is skipped, never spliced. */
	hb_jobspec_init(&s, "t.sh");
	{
		static char big[6000];
		struct hb_buf b;

		memset(big, 'x', sizeof(big) - 1);
		hb_buf_init(&b, 0);
		hb_buf_puts(&b, "#!/bin/sh\n# see the wiki \\\nsrun ./a.out\n"
				"ml unload openmpi\nml purge\nml list\n"
				"ml gcc/12\nml load mpich/4\n"
				"mpirun \\\n");
		hb_buf_puts(&b, big);
		hb_buf_puts(&b, " \\\n -np 4 ./b.out\n");
		scan(&s, b.data);
		assert_int_equal(s.nmpi_lines, 1);
		assert_string_equal(s.mpi_lines[0], "srun ./a.out");
		assert_int_equal(s.nmodules, 2);
		assert_string_equal(s.modules[0], "gcc/12");
		assert_string_equal(s.modules[1], "mpich/4");
		assert_int_equal(s.mpi, HB_MPI_MPICH);
		s.script = NULL;
		hb_buf_free(&b);
	}
	hb_jobspec_free(&s);

	hb_jobspec_init(&s, "t.sh");
	scan(&s, "#!/bin/sh\necho hello\n");
	assert_int_equal(s.mpi, HB_MPI_UNKNOWN);
	assert_int_equal(s.nmpi_lines, 0);
	hb_jobspec_free(&s);
}

static void test_json_round_trip(void **state)
{
	struct hb_jobspec a, b;
	struct hb_range r[] = {{0, 15, 1}};
	struct hb_err err = {0};
	cJSON *ja, *jb;

	(void)state;
	hb_jobspec_init(&a, "a.sh");
	a.source = HB_SRC_SBATCH;
	a.name = "x";
	a.account = "acct";
	a.nodes_min = 2;
	a.nodes_max = 4;
	a.ntasks_per_node = 8;
	a.mem_kind = HB_MEM_PER_GPU;
	a.mem_mb = 4096;
	a.gpu_scope = HB_GPU_PER_NODE;
	a.gpus = 4;
	a.gpu_type = "a100";
	a.time_limit = HB_TIME_UNLIMITED;
	hb_jobspec_set_prov(&a, HB_F_TIME_LIMIT,
			      (struct hb_prov){HB_PROV_FILE, 2});
	a.array = "0-15%4";
	a.array_ranges = r;
	a.narray_ranges = 1;
	a.array_max_running = 4;
	a.requeue = 0;
	a.exclusive = true;
	a.mpi = HB_MPI_INTEL;
	a.script = "#!/bin/sh\necho hi\n";
	a.script_len = (uint32_t)strlen(a.script);
	assert_int_equal(hb_jobspec_add_env(&a, "NCCL_DEBUG", "INFO"), 0);
	assert_int_equal(hb_jobspec_add_data(&a, "s3://b/k"), 0);

	ja = hb_jobspec_to_json(&a);
	assert_non_null(ja);
	hb_jobspec_init(&b, "a.sh");
	assert_int_equal(hb_jobspec_from_json(ja, &b, &err), 0);
	jb = hb_jobspec_to_json(&b);
	assert_true(cJSON_Compare(ja, jb, 1));
	assert_string_equal(
		cJSON_GetObjectItem(ja, "time_limit")->valuestring,
		"UNLIMITED");
	assert_int_equal(b.array_max_running, 4);
	assert_int_equal(b.requeue, 0);
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	hb_jobspec_free(&b);
	a.array_ranges = NULL;
	hb_jobspec_free(&a);
}

static void expect_json_error(const char *json, const char *needle)
{
	struct hb_jobspec s;
	struct hb_err err = {0};
	cJSON *j = cJSON_Parse(json);

	assert_non_null(j);
	hb_jobspec_init(&s, "in.json");
	assert_int_equal(hb_jobspec_from_json(j, &s, &err), HB_EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("error '%s' lacks '%s'", err.msg, needle);
	cJSON_Delete(j);
	hb_jobspec_free(&s);
}

static void test_json_errors(void **state)
{
	(void)state;
	expect_json_error("[]", "in.json: a jobspec must be a JSON object");
	expect_json_error("{\"nodes_min\": -1}", "nodes_min");
	expect_json_error("{\"nodes_min\": 1.5}", "nodes_min");
	expect_json_error("{\"nodes_min\": 5e9}", "nodes_min");
	expect_json_error("{\"name\": 3}", "name: must be a string");
	expect_json_error("{\"bogus\": 3}", "bogus: unknown key");
	expect_json_error("{\"mem\": {\"kind\": \"huge\", \"mb\": 1}}",
			  "mem.kind");
	expect_json_error("{\"array\": {\"spec\": \"1-2\", "
			  "\"ranges\": [[2, 1, 1]]}}",
			  "array.ranges");
	expect_json_error("{\"mpi\": \"LAM\"}", "mpi");
	expect_json_error("{\"requeue\": 1}", "requeue");
	expect_json_error("{\"array\": {\"spec\": \"1-2\", "
			  "\"ranges\": [{\"a\": 1, \"b\": 2, \"c\": 3}]}}",
			  "array.ranges");
	expect_json_error("{\"name\": \"a\", \"name\": \"b\"}",
			  "name: given twice");
	expect_json_error("{\"kind\": 7}", "kind");
	expect_json_error("{\"env\": [{\"name\": \"\"}]}", "env");
	expect_json_error("{\"nodes_min\": 4, \"nodes_max\": 2}",
			  "nodes_min: is larger than nodes_max");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shape_defaults),
		cmocka_unit_test(test_shape_nodes_from_tasks),
		cmocka_unit_test(test_shape_memory_kinds),
		cmocka_unit_test(test_shape_overflow),
		cmocka_unit_test(test_array_indices),
		cmocka_unit_test(test_lists_and_directives),
		cmocka_unit_test(test_env_later_wins),
		cmocka_unit_test(test_env_edited_in_place),
		cmocka_unit_test(test_env_many_names),
		cmocka_unit_test(test_body_scan),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
