/*
 * test_pbs.c - the PBS parser, Torque and PBS Pro: every option, the
 * resource arithmetic (job-wide mem against pmem, bare-second walltimes,
 * byte-default sizes, select chunks), arrays, dependencies, command-line
 * overrides, errors with their FILE:LINE text, and the whole corpus.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "translators/pbs/pbs.h"
#include "hpcbridge/sbatch.h"
#include "testutil.h"

#define GIB 1024u

static int parse_argv(const char *script, const char *const *argv, int argc,
		      struct hb_jobspec *s, struct hb_err *e)
{
	hb_jobspec_init(s, "job.pbs");
	memset(e, 0, sizeof(*e));
	return hb_pbs_parse(script, strlen(script), "job.pbs", argv, argc, s,
			    e);
}

static int parse(const char *script, struct hb_jobspec *s, struct hb_err *e)
{
	return parse_argv(script, NULL, 0, s, e);
}

/* Parse and require success. */
static void ok(const char *script, struct hb_jobspec *s)
{
	struct hb_err e;
	int rc = parse(script, s, &e);

	if (rc)
		fail_msg("rc %d: %s\n--- script:\n%s", rc, e.msg, script);
}

static const struct hb_directive *find_dir(const struct hb_jobspec *s,
					   const char *text)
{
	for (uint32_t i = 0; i < s->ndirectives; i++)
		if (strcmp(s->directives[i].text, text) == 0)
			return &s->directives[i];
	fail_msg("no directive '%s'", text);
	return NULL;
}

static int has_field(const struct hb_directive *d, enum hb_field f)
{
	for (uint8_t i = 0; i < d->nfields; i++)
		if (d->fields[i] == f)
			return 1;
	return 0;
}

static void assert_note(const struct hb_directive *d, const char *needle)
{
	if (!d->note || !strstr(d->note, needle))
		fail_msg("directive '%s': note '%s' lacks '%s'", d->text,
			 d->note ? d->note : "(none)", needle);
}

/* Every PBS directive either set a field or says why it did not. */
static void assert_accounted(const struct hb_jobspec *s)
{
	for (uint32_t i = 0; i < s->ndirectives; i++) {
		const struct hb_directive *d = &s->directives[i];

		if (d->kind != HB_DIR_PBS)
			continue;
		if (!d->nfields && !d->note)
			fail_msg("directive '%s' has no field and no note",
				 d->text);
		if (d->note && strcmp(d->note, "no effect") == 0)
			fail_msg("directive '%s' fell through to the generic "
				 "note",
				 d->text);
	}
}

static void expect_err(const char *script, const char *const *argv, int argc,
		       int code, const char *msg)
{
	struct hb_jobspec s;
	struct hb_err e;
	int rc = parse_argv(script, argv, argc, &s, &e);

	if (rc != code)
		fail_msg("rc %d (want %d), '%s'\n--- script:\n%s", rc, code,
			 e.msg, script);
	if (!strstr(e.msg, msg))
		fail_msg("message '%s' lacks '%s'", e.msg, msg);
	hb_jobspec_free(&s);
}

/* ------------------------------------------------------------------ */

static void test_torque_basic(void **state)
{
	struct hb_jobspec s;
	const struct hb_directive *d;

	(void)state;
	ok("#!/bin/bash\n"
	   "#PBS -N cfd\n"
	   "#PBS -l nodes=4:ppn=16\n"
	   "#PBS -l walltime=12:00:00,mem=256gb\n"
	   "#PBS -q batch\n"
	   "#PBS -A aero\n"
	   "cd $PBS_O_WORKDIR\n"
	   "mpirun -np 64 ./solver\n",
	   &s);
	assert_int_equal(s.source, HB_SRC_PBS);
	assert_string_equal(s.name, "cfd");
	assert_int_equal(s.nodes_min, 4);
	assert_int_equal(s.nodes_max, 4);
	assert_int_equal(s.ntasks_per_node, 16);
	assert_int_equal(s.ntasks, 0);
	assert_true(s.time_limit == 12 * 3600);
	assert_int_equal(s.mem_kind, HB_MEM_JOB);
	assert_true(s.mem_mb == 256 * GIB);
	assert_string_equal(s.partition, "batch");
	assert_string_equal(s.account, "aero");
	assert_string_equal(s.interpreter, "/bin/bash");
	assert_non_null(s.script);
	assert_int_equal(s.script_len, strlen(s.script));
	assert_non_null(strstr(s.script, "mpirun -np 64"));

	d = find_dir(&s, "-l nodes=4:ppn=16");
	assert_int_equal(d->kind, HB_DIR_PBS);
	assert_int_equal(d->prov.kind, HB_PROV_FILE);
	assert_int_equal(d->prov.line, 3);
	assert_true(has_field(d, HB_F_NODES));
	assert_true(has_field(d, HB_F_NTASKS_PER_NODE));
	/* one directive per resource of a comma list, same line */
	d = find_dir(&s, "-l mem=256gb");
	assert_int_equal(d->prov.line, 4);
	assert_true(has_field(d, HB_F_MEM));
	assert_int_equal(s.prov[HB_F_MEM].kind, HB_PROV_FILE);
	assert_int_equal(s.prov[HB_F_MEM].line, 4);
	assert_int_equal(s.prov[HB_F_TIME_LIMIT].line, 4);
	assert_int_equal(s.prov[HB_F_NODES].line, 3);
	assert_accounted(&s);
	hb_jobspec_free(&s);
}

static void test_mem_job_vs_pmem(void **state)
{
	struct hb_jobspec s;
	struct hb_shape sh;

	(void)state;
	/* mem is the whole job's: 4 nodes share 64 GiB. */
	ok("#PBS -l nodes=4:ppn=8\n#PBS -l mem=64gb\ntrue\n", &s);
	assert_int_equal(s.mem_kind, HB_MEM_JOB);
	assert_true(s.mem_mb == 64 * GIB);
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_true(sh.mem_per_node_mb == 16 * GIB);
	hb_jobspec_free(&s);

	/* pmem is per process: 8 per node at 2 GiB each. */
	ok("#PBS -l nodes=4:ppn=8\n#PBS -l pmem=2gb\ntrue\n", &s);
	assert_int_equal(s.mem_kind, HB_MEM_PER_PROCESS);
	assert_true(s.mem_mb == 2 * GIB);
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_true(sh.mem_per_node_mb == 16 * GIB);
	hb_jobspec_free(&s);

	/* Both: the one needing more per node wins, the other is noted. */
	ok("#PBS -l nodes=2:ppn=8\n#PBS -l mem=8gb\n#PBS -l pmem=1gb\n"
	   "true\n",
	   &s);
	assert_int_equal(s.mem_kind, HB_MEM_PER_PROCESS);
	assert_false(has_field(find_dir(&s, "-l mem=8gb"), HB_F_MEM));
	assert_note(find_dir(&s, "-l mem=8gb"), "pmem at line 3");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -l nodes=2:ppn=8\n#PBS -l mem=64gb\n#PBS -l pmem=1gb\n"
	   "true\n",
	   &s);
	assert_int_equal(s.mem_kind, HB_MEM_JOB);
	assert_true(s.mem_mb == 64 * GIB);
	assert_note(find_dir(&s, "-l pmem=1gb"), "job-wide mem at line 2");
	hb_jobspec_free(&s);

	/* vmem and pvmem are read and dropped with a note. */
	ok("#PBS -l vmem=10gb,pvmem=1gb\ntrue\n", &s);
	assert_int_equal(s.mem_kind, HB_MEM_NONE);
	assert_note(find_dir(&s, "-l vmem=10gb"), "virtual memory");
	assert_note(find_dir(&s, "-l pvmem=1gb"), "virtual memory");
	hb_jobspec_free(&s);
}

static void test_walltime_seconds(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l walltime=90\ntrue\n", &s);
	assert_true(s.time_limit == 90); /* seconds, not minutes */
	hb_jobspec_free(&s);
	ok("#PBS -l walltime=1:30\ntrue\n", &s);
	assert_true(s.time_limit == 90);
	hb_jobspec_free(&s);
	ok("#PBS -l walltime=100:00:00\ntrue\n", &s);
	assert_true(s.time_limit == 360000);
	hb_jobspec_free(&s);
	/* a later walltime replaces an earlier one */
	ok("#PBS -l walltime=60\n#PBS -l walltime=120\ntrue\n", &s);
	assert_true(s.time_limit == 120);
	assert_int_equal(s.prov[HB_F_TIME_LIMIT].line, 2);
	assert_note(find_dir(&s, "-l walltime=60"), "overridden by line 2");
	hb_jobspec_free(&s);
	/* shrink-to-fit: min_walltime is Slurm's --time-min */
	ok("#PBS -l min_walltime=1:00:00,max_walltime=4:00:00\ntrue\n", &s);
	assert_true(s.time_min == 3600);
	assert_true(s.time_limit == 4 * 3600);
	hb_jobspec_free(&s);
	/* a zero walltime is no limit */
	ok("#PBS -l walltime=0\ntrue\n", &s);
	assert_true(s.time_limit == 0);
	assert_false(hb_jobspec_has(&s, HB_F_TIME_LIMIT));
	assert_note(find_dir(&s, "-l walltime=0"), "zero");
	hb_jobspec_free(&s);
}

static void test_size_units(void **state)
{
	static const struct {
		const char *mem;
		uint64_t mib;
	} cases[] = {
	    {"1048576", 1}, /* bytes by default */
	    {"1048577", 2}, /* rounded up to whole MiB */
	    {"1", 1},
	    {"131072w", 1}, /* 8-byte words */
	    {"1024kb", 1},
	    {"1025KB", 2},
	    {"512mb", 512},
	    {"512MB", 512},
	    {"2gb", 2048},
	    {"2GB", 2048},
	    {"1tb", 1024 * 1024},
	    {"1pb", 1024ull * 1024 * 1024},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_jobspec s;
		char script[128];

		snprintf(script, sizeof(script), "#PBS -l mem=%s\ntrue\n",
			 cases[i].mem);
		ok(script, &s);
		if (s.mem_mb != cases[i].mib)
			fail_msg("mem=%s: %llu MiB, want %llu", cases[i].mem,
				 (unsigned long long)s.mem_mb,
				 (unsigned long long)cases[i].mib);
		hb_jobspec_free(&s);
	}
}

static void test_select_single(void **state)
{
	struct hb_jobspec s;
	const struct hb_directive *d;

	(void)state;
	/* mpiprocs and ompthreads given */
	ok("#PBS -l select=8:ncpus=48:mpiprocs=4:ompthreads=12:mem=180gb\n"
	   "true\n",
	   &s);
	assert_int_equal(s.nodes_min, 8);
	assert_int_equal(s.ntasks_per_node, 4);
	assert_int_equal(s.cpus_per_task, 12);
	assert_int_equal(s.mem_kind, HB_MEM_PER_NODE);
	assert_true(s.mem_mb == 180 * GIB);
	assert_int_equal(s.nchunks, 0); /* one chunk: no chunk list */
	d = find_dir(&s, "-l select=8:ncpus=48:mpiprocs=4:ompthreads=12:"
			 "mem=180gb");
	assert_true(has_field(d, HB_F_NODES));
	assert_true(has_field(d, HB_F_NTASKS_PER_NODE));
	assert_true(has_field(d, HB_F_CPUS_PER_TASK));
	assert_true(has_field(d, HB_F_MEM));
	assert_false(has_field(d, HB_F_HETEROGENEOUS));
	hb_jobspec_free(&s);

	/* no mpiprocs: PBS Pro's default is 1 when ncpus > 0 */
	ok("#PBS -l select=2:ncpus=8\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.ntasks_per_node, 1);
	assert_int_equal(s.cpus_per_task, 8);
	hb_jobspec_free(&s);

	/* no ompthreads: ncpus / mpiprocs CPUs per task */
	ok("#PBS -l select=1:ncpus=32:mpiprocs=8\ntrue\n", &s);
	assert_int_equal(s.ntasks_per_node, 8);
	assert_int_equal(s.cpus_per_task, 4);
	hb_jobspec_free(&s);

	/* no ncpus: mpiprocs x ompthreads */
	ok("#PBS -l select=2:mpiprocs=4:ompthreads=2\ntrue\n", &s);
	assert_int_equal(s.ntasks_per_node, 4);
	assert_int_equal(s.cpus_per_task, 2);
	assert_note(find_dir(&s, "-l select=2:mpiprocs=4:ompthreads=2"),
		    "no ncpus");
	hb_jobspec_free(&s);
	ok("#PBS -l select=3\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 3);
	assert_int_equal(s.ntasks_per_node, 1);
	assert_int_equal(s.cpus_per_task, 1);
	hb_jobspec_free(&s);

	/* not a multiple: noted */
	ok("#PBS -l select=1:ncpus=10:mpiprocs=3\ntrue\n", &s);
	assert_int_equal(s.cpus_per_task, 3);
	assert_note(find_dir(&s, "-l select=1:ncpus=10:mpiprocs=3"),
		    "not a multiple");
	hb_jobspec_free(&s);

	/* no count: one chunk; ngpus and a GPU model */
	ok("#PBS -l select=ncpus=16:ngpus=4:mpiprocs=4:gpu_model=a100\n"
	   "true\n",
	   &s);
	assert_int_equal(s.nodes_min, 1);
	assert_int_equal(s.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(s.gpus, 4);
	assert_string_equal(s.gpu_type, "a100");
	hb_jobspec_free(&s);

	/* custom resources: model= and booleans become constraints, host=
	 * the node list, others are noted */
	ok("#PBS -l select=2:ncpus=28:model=bro:bigmem=true:scratch=10gb:"
	   "host=r1i0n3\n"
	   "true\n",
	   &s);
	assert_string_equal(s.constraint, "bro&bigmem");
	assert_string_equal(s.nodelist, "r1i0n3");
	assert_note(find_dir(&s, "-l select=2:ncpus=28:model=bro:bigmem=true:"
				 "scratch=10gb:host=r1i0n3"),
		    "site resource scratch=10gb");
	hb_jobspec_free(&s);
}

static void test_select_multichunk(void **state)
{
	struct hb_jobspec s;
	const struct hb_directive *d;
	struct hb_shape sh;

	(void)state;
	ok("#PBS -l select=1:ncpus=8:mpiprocs=1:mem=500gb"
	   "+16:ncpus=36:mpiprocs=36:mem=150gb:ngpus=2\n"
	   "#PBS -l place=scatter\n"
	   "true\n",
	   &s);
	assert_int_equal(s.nchunks, 2);
	assert_non_null(s.chunks);
	assert_int_equal(s.chunks[0].count, 1);
	assert_int_equal(s.chunks[0].ncpus, 8);
	assert_int_equal(s.chunks[0].mpiprocs, 1);
	assert_true(s.chunks[0].mem_mb == 500 * GIB);
	assert_int_equal(s.chunks[1].count, 16);
	assert_int_equal(s.chunks[1].ncpus, 36);
	assert_int_equal(s.chunks[1].mpiprocs, 36);
	assert_int_equal(s.chunks[1].ngpus, 2);
	assert_int_equal(s.nodes_min, 17);	 /* chunk total */
	assert_int_equal(s.ntasks, 1 + 16 * 36); /* sum of count x procs */
	/* per-node fields hold the largest chunk */
	assert_int_equal(s.ntasks_per_node, 36);
	assert_int_equal(s.cpus_per_task, 1);
	assert_true(s.mem_mb == 500 * GIB);
	assert_int_equal(s.gpus, 2);
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_true(sh.cpus_per_node >= 36);
	assert_true(hb_jobspec_has(&s, HB_F_HETEROGENEOUS));
	d = find_dir(&s, "-l select=1:ncpus=8:mpiprocs=1:mem=500gb"
			 "+16:ncpus=36:mpiprocs=36:mem=150gb:ngpus=2");
	assert_true(has_field(d, HB_F_HETEROGENEOUS));
	assert_true(has_field(d, HB_F_NTASKS));
	assert_note(d, "2 chunks");
	assert_note(find_dir(&s, "-l place=scatter"), "one node per chunk");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* a hybrid chunk next to a flat one: CPUs per node cover both */
	ok("#PBS -l select=2:ncpus=20:mpiprocs=2:ompthreads=10"
	   "+3:ncpus=3:mpiprocs=3\n"
	   "true\n",
	   &s);
	assert_int_equal(s.ntasks_per_node, 3);
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_true(sh.cpus_per_node >= 20);
	assert_int_equal(s.ntasks, 2 * 2 + 3 * 3);
	hb_jobspec_free(&s);
}

static void test_place(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l select=4:ncpus=36:mpiprocs=36\n"
	   "#PBS -l place=scatter:excl\ntrue\n",
	   &s);
	assert_true(s.exclusive);
	assert_true(
	    has_field(find_dir(&s, "-l place=scatter:excl"), HB_F_EXCLUSIVE));
	hb_jobspec_free(&s);

	ok("#PBS -l select=1:ncpus=4\n#PBS -l place=free:exclhost\ntrue\n", &s);
	assert_true(s.exclusive);
	hb_jobspec_free(&s);

	ok("#PBS -l select=1:ncpus=4\n#PBS -l place=scatter:shared\ntrue\n",
	   &s);
	assert_false(s.exclusive);
	assert_note(find_dir(&s, "-l place=scatter:shared"), "shared");
	hb_jobspec_free(&s);

	/* pack: one node holding every chunk */
	ok("#PBS -l select=4:ncpus=2:mpiprocs=2:mem=4gb:ngpus=1\n"
	   "#PBS -l place=pack\ntrue\n",
	   &s);
	assert_int_equal(s.nodes_min, 1);
	assert_int_equal(s.ntasks_per_node, 8);
	assert_int_equal(s.cpus_per_task, 1);
	assert_true(s.mem_mb == 16 * GIB);
	assert_int_equal(s.gpus, 4);
	hb_jobspec_free(&s);

	/* Torque whole-node requests */
	ok("#PBS -l nodes=2:ppn=4,naccesspolicy=singlejob\ntrue\n", &s);
	assert_true(s.exclusive);
	hb_jobspec_free(&s);
	ok("#PBS -l nodes=2:ppn=4#excl\ntrue\n", &s);
	assert_true(s.exclusive);
	hb_jobspec_free(&s);
	ok("#PBS -l naccesspolicy=singleuser\ntrue\n", &s);
	assert_false(s.exclusive);
	assert_note(find_dir(&s, "-l naccesspolicy=singleuser"), "not carried");
	hb_jobspec_free(&s);
}

static void test_torque_nodes(void **state)
{
	struct hb_jobspec s;
	const struct hb_directive *d;

	(void)state;
	/* '+'-joined specs: nodes summed, largest ppn, exact task total */
	ok("#PBS -l nodes=1:ppn=16:bigmem+4:ppn=8:ib\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 5);
	assert_int_equal(s.ntasks_per_node, 16);
	assert_int_equal(s.ntasks, 16 + 4 * 8);
	assert_string_equal(s.constraint, "bigmem&ib");
	d = find_dir(&s, "-l nodes=1:ppn=16:bigmem+4:ppn=8:ib");
	assert_note(d, "largest spec");
	assert_true(has_field(d, HB_F_NTASKS));
	hb_jobspec_free(&s);

	/* named hosts */
	ok("#PBS -l nodes=node01:ppn=4+node02:ppn=4\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.ntasks_per_node, 4);
	assert_int_equal(s.ntasks, 0); /* uniform: derived */
	assert_string_equal(s.nodelist, "node01,node02");
	hb_jobspec_free(&s);

	/* GPUs per node, with a GPU mode that is noted */
	ok("#PBS -l nodes=2:ppn=8:gpus=4:exclusive_process\ntrue\n", &s);
	assert_int_equal(s.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(s.gpus, 4);
	assert_null(s.constraint);
	assert_note(find_dir(&s, "-l nodes=2:ppn=8:gpus=4:exclusive_process"),
		    "GPU mode");
	hb_jobspec_free(&s);

	/* bare node count: no ppn, nothing per node */
	ok("#PBS -l nodes=3\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 3);
	assert_int_equal(s.ntasks_per_node, 0);
	hb_jobspec_free(&s);

	/* job-wide ncpus alone: one task with that many CPUs */
	ok("#PBS -l ncpus=6\ntrue\n", &s);
	assert_int_equal(s.cpus_per_task, 6);
	assert_int_equal(s.nodes_min, 0);
	hb_jobspec_free(&s);

	/* ncpus with nodes: spread */
	ok("#PBS -l nodes=2:ppn=2,ncpus=16\ntrue\n", &s);
	assert_int_equal(s.cpus_per_task, 4);
	hb_jobspec_free(&s);

	/* procs: a task count */
	ok("#PBS -l procs=48\ntrue\n", &s);
	assert_int_equal(s.ntasks, 48);
	hb_jobspec_free(&s);

	/* feature= and host= */
	ok("#PBS -l nodes=2:ppn=4:haswell,feature=ib\n#PBS -l host=n1+n2\n"
	   "true\n",
	   &s);
	assert_string_equal(s.constraint, "haswell&ib");
	assert_string_equal(s.nodelist, "n1,n2");
	assert_note(find_dir(&s, "-l nodes=2:ppn=4:haswell"),
		    "joined into the constraint");
	hb_jobspec_free(&s);
}

static void test_gres(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l nodes=1:ppn=4,gres=matlab:2+gpu:1\ntrue\n", &s);
	assert_string_equal(s.licenses, "matlab:2");
	assert_int_equal(s.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(s.gpus, 1);
	hb_jobspec_free(&s);
	ok("#PBS -l ngpus=8\ntrue\n", &s);
	assert_int_equal(s.gpu_scope, HB_GPU_PER_JOB);
	assert_int_equal(s.gpus, 8);
	hb_jobspec_free(&s);
}

static void test_unknown_resource(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l nodes=1:ppn=2,matlab_lic=1,cput=10:00:00,file=2gb\n"
	   "true\n",
	   &s);
	assert_note(find_dir(&s, "-l matlab_lic=1"), "unknown resource");
	assert_note(find_dir(&s, "-l cput=10:00:00"), "CPU-time");
	assert_note(find_dir(&s, "-l file=2gb"), "not carried");
	assert_int_equal(find_dir(&s, "-l matlab_lic=1")->nfields, 0);
	assert_accounted(&s);
	hb_jobspec_free(&s);
}

static void test_arrays(void **state)
{
	struct hb_jobspec s;

	(void)state;
	/* Torque: lists, sorted and merged, with a slot limit */
	ok("#PBS -t 7,1-3,2-5,10%4\ntrue\n", &s);
	assert_string_equal(s.array, "7,1-3,2-5,10%4");
	assert_int_equal(s.narray_ranges, 3);
	assert_int_equal(s.array_ranges[0].start, 1);
	assert_int_equal(s.array_ranges[0].end, 5);
	assert_int_equal(s.array_ranges[1].start, 7);
	assert_int_equal(s.array_ranges[1].end, 7);
	assert_int_equal(s.array_ranges[2].start, 10);
	assert_int_equal(s.array_max_running, 4);
	assert_true(hb_jobspec_array_count(&s) == 7);
	assert_true(has_field(find_dir(&s, "-t 7,1-3,2-5,10%4"), HB_F_ARRAY));
	hb_jobspec_free(&s);

	ok("#PBS -t 1,3,5\ntrue\n", &s);
	assert_int_equal(s.narray_ranges, 3);
	assert_true(hb_jobspec_array_count(&s) == 3);
	assert_int_equal(hb_jobspec_array_index(&s, 2), 5);
	hb_jobspec_free(&s);

	/* adjacent ranges merge */
	ok("#PBS -t 4-6,1-3\ntrue\n", &s);
	assert_int_equal(s.narray_ranges, 1);
	assert_int_equal(s.array_ranges[0].start, 1);
	assert_int_equal(s.array_ranges[0].end, 6);
	hb_jobspec_free(&s);

	/* PBS Pro: one range with a step; the end is the last index */
	ok("#PBS -J 0-10:3\ntrue\n", &s);
	assert_int_equal(s.narray_ranges, 1);
	assert_int_equal(s.array_ranges[0].start, 0);
	assert_int_equal(s.array_ranges[0].end, 9);
	assert_int_equal(s.array_ranges[0].step, 3);
	assert_true(hb_jobspec_array_count(&s) == 4);
	hb_jobspec_free(&s);

	/* -W max_run_subjobs limits running subjobs */
	ok("#PBS -J 1-100\n#PBS -W max_run_subjobs=5\ntrue\n", &s);
	assert_int_equal(s.array_max_running, 5);
	hb_jobspec_free(&s);
	/* ... in either order: a range without %N keeps it. */
	ok("#PBS -W max_run_subjobs=5\n#PBS -J 1-100\ntrue\n", &s);
	assert_int_equal(s.array_max_running, 5);
	hb_jobspec_free(&s);
	ok("#PBS -W max_run_subjobs=5\n#PBS -t 1-100%3\ntrue\n", &s);
	assert_int_equal(s.array_max_running, 3);
	hb_jobspec_free(&s);

	expect_err("#PBS -J 5\ntrue\n", NULL, 0, HB_EINVAL,
		   "job.pbs:1: -J: '5' is not a range");
	expect_err("#PBS -J 1-5,7-9\ntrue\n", NULL, 0, HB_EINVAL,
		   "job.pbs:1: -J: one range");
	expect_err("#PBS -t 5-1\ntrue\n", NULL, 0, HB_EINVAL,
		   "ends before it starts");
	expect_err("#PBS -t 1-10%0\ntrue\n", NULL, 0, HB_EINVAL,
		   "must be at least 1");
	expect_err("#PBS -J 1-10:0\ntrue\n", NULL, 0, HB_EINVAL,
		   "step must be at least 1");
	expect_err("#PBS -t 1,,2\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed index");
	expect_err("#PBS -t 1%2%3\ntrue\n", NULL, 0, HB_EINVAL,
		   "-t: malformed number '1%2'");
	expect_err("#PBS -t 1-2%3,4%5\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed number '2%3'");
	expect_err("#PBS -J 1-9%2%3\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed number '9%2'");
	expect_err("#PBS -t 1-99999999999\ntrue\n", NULL, 0, HB_ERANGE,
		   "too large");
}

static void test_depend(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"afterok:123", "afterok:123"},
	    {"afterok:123.server.example.com:124.server", "afterok:123:124"},
	    {"afterany:7[].srv", "afterany:7"},
	    {"afternotok:7[3].srv", "afternotok:7_3"},
	    {"after:1,afterok:2:3,afterany:4", "after:1,afterok:2:3,"
					       "afterany:4"},
	    {"afterokarray:55[]", "afterok:55"},
	    {"AFTEROK:9", "afterok:9"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_jobspec s;
		char script[256];

		snprintf(script, sizeof(script), "#PBS -W depend=%s\ntrue\n",
			 cases[i].in);
		ok(script, &s);
		if (!s.dependency || strcmp(s.dependency, cases[i].out) != 0)
			fail_msg("depend=%s: '%s', want '%s'", cases[i].in,
				 s.dependency ? s.dependency : "(null)",
				 cases[i].out);
		assert_int_equal(s.prov[HB_F_DEPENDENCY].line, 1);
		hb_jobspec_free(&s);
	}
	expect_err("#PBS -W depend=beforeok:12\ntrue\n", NULL, 0, HB_EUNSUP,
		   "job.pbs:1: -W depend=beforeok: Slurm has no 'beforeok'");
	expect_err("#PBS -W depend=on:2\ntrue\n", NULL, 0, HB_EUNSUP,
		   "no 'on' dependency");
	expect_err("#PBS -W depend=syncwith:12\ntrue\n", NULL, 0, HB_EUNSUP,
		   "syncwith");
	expect_err("#PBS -W depend=waitfor:12\ntrue\n", NULL, 0, HB_EINVAL,
		   "unknown dependency type 'waitfor'");
	expect_err("#PBS -W depend=afterok:abc\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed job id 'abc'");
	expect_err("#PBS -W depend=afterok:1:\ntrue\n", NULL, 0, HB_EINVAL,
		   "empty job id");
}

static void test_other_w(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -W group_list=chem,umask=022\n"
	   "#PBS -W stagein=in.dat@arch:/data/in.dat,b.dat@arch:/data/b.dat\n"
	   "#PBS -W stageout=out.dat@arch:/data/out.dat\n"
	   "#PBS -W sandbox=PRIVATE\n"
	   "#PBS -W x=FLAGS:ADVRES\n"
	   "#PBS -W block=true\n"
	   "true\n",
	   &s);
	assert_note(find_dir(&s, "-W group_list=chem"), "group_list");
	assert_note(find_dir(&s, "-W umask=022"), "umask");
	assert_int_equal(s.ndata, 2);
	assert_string_equal(s.data[0], "arch:/data/in.dat");
	assert_string_equal(s.data[1], "arch:/data/b.dat");
	assert_true(has_field(find_dir(&s, "-W stagein=in.dat@arch:/data/"
					   "in.dat,b.dat@arch:/data/b.dat"),
			      HB_F_DATA));
	assert_note(find_dir(&s, "-W stageout=out.dat@arch:/data/out.dat"),
		    "not copied back");
	assert_note(find_dir(&s, "-W sandbox=PRIVATE"), "not carried");
	assert_note(find_dir(&s, "-W x=FLAGS:ADVRES"), "not carried");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -W x=NACCESSPOLICY:SINGLEJOB\ntrue\n", &s);
	assert_true(s.exclusive);
	hb_jobspec_free(&s);

	expect_err("#PBS -W umask=99\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed umask '99'");
	expect_err("#PBS -W stagein=nohost\ntrue\n", NULL, 0, HB_EINVAL,
		   "local_path@host:remote_path");
	expect_err("#PBS -W interactive=true\ntrue\n", NULL, 0, HB_EUNSUP,
		   "interactive");
	expect_err("#PBS -W novalue\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed attribute 'novalue'");
}

static void test_identity_and_io(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -N job1\n"
	   "#PBS -q gpu@pbs01.example.com\n"
	   "#PBS -o login1:/home/u/out.txt\n"
	   "#PBS -e /home/u/err.txt\n"
	   "#PBS -d /scratch/u\n"
	   "#PBS -M u@example.com,v@example.com\n"
	   "#PBS -u alice@host1,bob\n"
	   "#PBS -r n\n"
	   "true\n",
	   &s);
	assert_string_equal(s.name, "job1");
	assert_string_equal(s.partition, "gpu");
	assert_note(find_dir(&s, "-q gpu@pbs01.example.com"),
		    "server 'pbs01.example.com' dropped");
	assert_string_equal(s.output, "/home/u/out.txt");
	assert_note(find_dir(&s, "-o login1:/home/u/out.txt"),
		    "host 'login1' dropped");
	assert_string_equal(s.error, "/home/u/err.txt");
	assert_string_equal(s.chdir, "/scratch/u");
	assert_string_equal(s.mail_user, "u@example.com,v@example.com");
	assert_string_equal(s.user, "bob");
	assert_int_equal(s.requeue, 0);
	assert_false(s.join_output);
	hb_jobspec_free(&s);

	ok("#PBS -r y\n#PBS -w /tmp/w\n#PBS -q @otherserver\ntrue\n", &s);
	assert_int_equal(s.requeue, 1);
	assert_string_equal(s.chdir, "/tmp/w");
	assert_null(s.partition);
	assert_note(find_dir(&s, "-q @otherserver"), "without a queue");
	hb_jobspec_free(&s);
}

static void test_output_dir(void **state)
{
	struct hb_jobspec s;

	(void)state;
	/* a directory takes PBS's default file name, as a Slurm pattern */
	ok("#PBS -o logs/\n#PBS -e /tmp/e/\ntrue\n", &s);
	assert_string_equal(s.output, "logs/%x.o%j");
	assert_string_equal(s.error, "/tmp/e/%x.e%j");
	assert_note(find_dir(&s, "-o logs/"), "default name JOB.oSEQ");
	hb_jobspec_free(&s);
	ok("#PBS -J 1-4\n#PBS -o logs/\ntrue\n", &s);
	assert_string_equal(s.output, "logs/%x.o%A.%a");
	assert_int_equal(hb_pbs_array_sep(&s), '.');
	hb_jobspec_free(&s);
	/* Torque's array tasks: NAME.oSEQ-INDEX */
	ok("#PBS -t 1-4\n#PBS -o logs/\ntrue\n", &s);
	assert_string_equal(s.output, "logs/%x.o%A-%a");
	assert_int_equal(hb_pbs_array_sep(&s), '-');
	assert_note(find_dir(&s, "-o logs/"), "JOB.oSEQ-INDEX");
	hb_jobspec_free(&s);
	/* -j eo with a directory: both streams in the .e file */
	ok("#PBS -j eo\n#PBS -e logs/\ntrue\n", &s);
	assert_string_equal(s.output, "logs/%x.e%j");
	assert_null(s.error);
	hb_jobspec_free(&s);
	/* '%' means something to Slurm: noted */
	ok("#PBS -o out%1.log\ntrue\n", &s);
	assert_string_equal(s.output, "out%1.log");
	assert_note(find_dir(&s, "-o out%1.log"), "pattern");
	hb_jobspec_free(&s);
}

static void test_join_keep(void **state)
{
	struct hb_jobspec s;
	const struct hb_directive *d;

	(void)state;
	/* -j oe: stderr joins stdout; an -e path has no effect */
	ok("#PBS -j oe\n#PBS -o out.log\n#PBS -e err.log\ntrue\n", &s);
	assert_true(s.join_output);
	assert_string_equal(s.output, "out.log");
	assert_null(s.error);
	d = find_dir(&s, "-e err.log");
	assert_false(has_field(d, HB_F_ERROR));
	assert_note(d, "-j oe at line 1");
	assert_true(has_field(find_dir(&s, "-j oe"), HB_F_ERROR));
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* -j eo: both streams go to the -e path */
	ok("#PBS -j eo\n#PBS -o out.log\n#PBS -e err.log\ntrue\n", &s);
	assert_true(s.join_output);
	assert_string_equal(s.output, "err.log");
	assert_null(s.error);
	assert_note(find_dir(&s, "-o out.log"), "-j eo");
	assert_note(find_dir(&s, "-e err.log"), "both streams");
	hb_jobspec_free(&s);

	ok("#PBS -j eo\ntrue\n", &s);
	assert_true(s.join_output);
	assert_note(find_dir(&s, "-j eo"), "eo:");
	hb_jobspec_free(&s);

	ok("#PBS -j n\ntrue\n", &s);
	assert_false(s.join_output);
	assert_note(find_dir(&s, "-j n"), "apart");
	hb_jobspec_free(&s);

	ok("#PBS -k oe\ntrue\n", &s);
	assert_string_equal(s.keep, "oe");
	d = find_dir(&s, "-k oe");
	assert_true(has_field(d, HB_F_KEEP));
	assert_note(d, "-k oe: output is streamed; nothing to keep");
	hb_jobspec_free(&s);

	expect_err("#PBS -j xo\ntrue\n", NULL, 0, HB_EINVAL,
		   "job.pbs:1: -j: unknown join 'xo'");
	expect_err("#PBS -k on\ntrue\n", NULL, 0, HB_EINVAL,
		   "-k: malformed keep 'on'");
}

static void test_mail(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"a", "FAIL"},
	    {"b", "BEGIN"},
	    {"e", "END"},
	    {"abe", "BEGIN,END,FAIL"},
	    {"eba", "BEGIN,END,FAIL"},
	    {"n", "NONE"},
	    {"f", "FAIL"},
	    {"abej", "BEGIN,END,FAIL,ARRAY_TASKS"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_jobspec s;
		char script[64];

		snprintf(script, sizeof(script), "#PBS -m %s\ntrue\n",
			 cases[i].in);
		ok(script, &s);
		assert_string_equal(s.mail_type, cases[i].out);
		hb_jobspec_free(&s);
	}
	expect_err("#PBS -m abx\ntrue\n", NULL, 0, HB_EINVAL,
		   "unknown mail point 'x'");
	expect_err("#PBS -m an\ntrue\n", NULL, 0, HB_EINVAL,
		   "'n' cannot be combined");
}

static void test_env(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -v A=1,B,\"C='x,y'\"\n#PBS -v 'D=it''s'\ntrue\n", &s);
	assert_true(s.nenv >= 4);
	assert_string_equal(s.env[0].name, "A");
	assert_string_equal(s.env[0].value, "1");
	assert_string_equal(s.env[1].name, "B");
	assert_null(s.env[1].value);
	assert_string_equal(s.env[2].name, "C");
	assert_string_equal(s.env[2].value, "x,y");
	assert_string_equal(s.env[3].name, "D");
	assert_string_equal(s.env[3].value, "its");
	assert_string_equal(s.export_spec, "A=1,B,C=x,y,D=its");
	assert_false(s.export_all);
	/* one origin: the last -v; the first says it was joined */
	assert_int_equal(s.prov[HB_F_EXPORT].line, 2);
	assert_note(find_dir(&s, "-v A=1,B,\"C='x,y'\""), "joined with line 2");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -V\ntrue\n", &s);
	assert_true(s.export_all);
	assert_string_equal(s.export_spec, "ALL");
	assert_true(has_field(find_dir(&s, "-V"), HB_F_EXPORT));
	hb_jobspec_free(&s);

	ok("#PBS -V -v X=1\ntrue\n", &s);
	assert_string_equal(s.export_spec, "ALL,X=1");
	hb_jobspec_free(&s);

	expect_err("#PBS -v 1BAD=2\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed variable name");
	expect_err("#PBS -v A='x\ntrue\n", NULL, 0, HB_EINVAL, "unterminated");
	expect_err("#PBS -v A=1,\ntrue\n", NULL, 0, HB_EINVAL, "trailing ','");
}

static void test_begin(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"202406150230", "2024-06-15T02:30"},
	    {"202406150230.45", "2024-06-15T02:30:45"},
	    {"2406150230", "2024-06-15T02:30"},
	    {"9912312359", "1999-12-31T23:59"},
	    {"06150230", "06/15-02:30"},
	    {"2230", "22:30"},
	    {"2230.05", "22:30:05"},
	    {"202402291200", "2024-02-29T12:00"},
	};
	struct hb_jobspec s;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char script[64];

		snprintf(script, sizeof(script), "#PBS -a %s\ntrue\n",
			 cases[i].in);
		ok(script, &s);
		if (!s.begin || strcmp(s.begin, cases[i].out) != 0)
			fail_msg("-a %s: '%s', want '%s'", cases[i].in,
				 s.begin ? s.begin : "(null)", cases[i].out);
		hb_jobspec_free(&s);
	}
	/* a day without a month has no Slurm form: noted, not set */
	ok("#PBS -a 151030\ntrue\n", &s);
	assert_null(s.begin);
	assert_note(find_dir(&s, "-a 151030"), "no Slurm form");
	hb_jobspec_free(&s);

	expect_err("#PBS -a 2460\ntrue\n", NULL, 0, HB_EINVAL,
		   "-a: malformed date and time '2460'");
	expect_err("#PBS -a 202302291200\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed date");
	expect_err("#PBS -a 123\ntrue\n", NULL, 0, HB_EINVAL, "malformed date");
	expect_err("#PBS -a 1200.5\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed date");
	expect_err("#PBS -a 13011200\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed date");
}

static void test_project(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -P chem42\ntrue\n", &s);
	assert_string_equal(s.account, "chem42");
	assert_note(find_dir(&s, "-P chem42"), "used as the account");
	hb_jobspec_free(&s);
	/* -A wins wherever it is; the project becomes the comment */
	ok("#PBS -P chem42\n#PBS -A grant7\ntrue\n", &s);
	assert_string_equal(s.account, "grant7");
	assert_string_equal(s.comment, "project=chem42");
	assert_true(has_field(find_dir(&s, "-P chem42"), HB_F_COMMENT));
	hb_jobspec_free(&s);
	/* the account in lower case, as slurmctld stores it; the project
	 * kept as the comment stays as written */
	ok("#PBS -A Grant7\ntrue\n", &s);
	assert_string_equal(s.account, "grant7");
	assert_true(has_field(find_dir(&s, "-A Grant7"), HB_F_ACCOUNT));
	assert_note(find_dir(&s, "-A Grant7"),
		    "account grant7: Slurm stores account names in lower case");
	hb_jobspec_free(&s);
	ok("#PBS -P Chem42\ntrue\n", &s);
	assert_string_equal(s.account, "chem42");
	assert_true(has_field(find_dir(&s, "-P Chem42"), HB_F_ACCOUNT));
	assert_note(find_dir(&s, "-P Chem42"), "used as the account");
	assert_note(find_dir(&s, "-P Chem42"), "lower case");
	hb_jobspec_free(&s);
	ok("#PBS -P Chem42\n#PBS -A K1206\ntrue\n", &s);
	assert_string_equal(s.account, "k1206");
	assert_string_equal(s.comment, "project=Chem42");
	hb_jobspec_free(&s);
	ok("#PBS -A grant7\ntrue\n", &s);
	assert_null(find_dir(&s, "-A grant7")->note);
	hb_jobspec_free(&s);
}

static void test_recorded_only(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -h\n#PBS -p -20\n#PBS -X\n#PBS -z\n#PBS -c s\n"
	   "#PBS -C XX\n#PBS -R oe\n#PBS -f\n"
	   "true\n",
	   &s);
	assert_note(find_dir(&s, "-h"), "hold");
	assert_note(find_dir(&s, "-p -20"), "priority");
	assert_note(find_dir(&s, "-X"), "X11");
	assert_note(find_dir(&s, "-z"), "no effect");
	assert_note(find_dir(&s, "-c s"), "checkpoint");
	assert_note(find_dir(&s, "-C XX"), "only on the qsub command line");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -S /bin/tcsh@h1,/bin/bash\ntrue\n", &s);
	assert_string_equal(s.interpreter, "/bin/bash");
	hb_jobspec_free(&s);
	ok("#PBS -S /bin/tcsh@h1\ntrue\n", &s);
	assert_string_equal(s.interpreter, "/bin/tcsh");
	hb_jobspec_free(&s);

	expect_err("#PBS -p 2000\ntrue\n", NULL, 0, HB_ERANGE,
		   "outside -1024..1023");
	expect_err("#PBS -p high\ntrue\n", NULL, 0, HB_EINVAL,
		   "malformed priority");
	expect_err("#PBS -I\ntrue\n", NULL, 0, HB_EUNSUP,
		   "job.pbs:1: -I: an interactive job is not a batch script");
}

static void test_scanning(void **state)
{
	struct hb_jobspec s;

	(void)state;
	/* No shebang: allowed, no interpreter. */
	ok("#PBS -N a\necho hi\n", &s);
	assert_null(s.interpreter);
	assert_string_equal(s.name, "a");
	hb_jobspec_free(&s);

	/* Comments and blank lines do not stop the scan; a command does. */
	ok("#!/bin/sh\n\n# a comment\n   \n#PBS -N a\n"
	   "  # indented comment\n#PBS -q q1\n"
	   "echo start\n#PBS -N b\n#PBS -l walltime=oops\n",
	   &s);
	assert_string_equal(s.name, "a");
	assert_string_equal(s.partition, "q1");
	assert_int_equal(s.prov[HB_F_PARTITION].line, 7);
	hb_jobspec_free(&s);

	/* Only column 0 counts; "#PBSX" is a comment. */
	ok(" #PBS -N x\n#PBSX -N y\n#PBS\n#PBS\t-N z\ntrue\n", &s);
	assert_string_equal(s.name, "z");
	hb_jobspec_free(&s);

	/* Several options on a line, getopt style, quotes, comments. */
	ok("#PBS -hV -lwalltime=10 -N 'my'job \"-x\" # -q ignored\n"
	   "#PBS -M \"a b\"@x\n"
	   "true\n",
	   &s);
	assert_string_equal(s.name, "myjob");
	assert_true(s.export_all);
	assert_true(s.time_limit == 10);
	assert_null(s.partition);
	assert_string_equal(s.mail_user, "a b@x");
	assert_note(find_dir(&s, "-h"), "hold");
	hb_jobspec_free(&s);

	/* Backslash escapes outside quotes and inside double quotes. */
	ok("#PBS -M a\\ b \n#PBS -o \"x\\\"y\"\ntrue\n", &s);
	assert_string_equal(s.mail_user, "a b");
	assert_string_equal(s.output, "x\"y");
	hb_jobspec_free(&s);

	/* #SBATCH lines are comments to qsub. */
	ok("#!/bin/bash\n#SBATCH -N 4\n#PBS -N p\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 0);
	assert_string_equal(s.name, "p");
	hb_jobspec_free(&s);

	/* A script that is only a header is fine. */
	ok("#PBS -N only", &s);
	assert_string_equal(s.name, "only");
	hb_jobspec_free(&s);
}

static void test_cli_override(void **state)
{
	static const char *script = "#!/bin/bash\n"
				    "#PBS -N from_file\n"
				    "#PBS -l walltime=1:00:00,mem=4gb\n"
				    "#PBS -q short\n"
				    "true\n";
	const char *argv[] = {"-l", "walltime=2:00:00", "-Ncli", "-V"};
	struct hb_jobspec s;
	struct hb_err e;
	const struct hb_directive *d;

	(void)state;
	assert_int_equal(parse_argv(script, argv, 4, &s, &e), 0);
	assert_string_equal(s.name, "cli");
	assert_int_equal(s.prov[HB_F_NAME].kind, HB_PROV_CLI);
	assert_int_equal(s.prov[HB_F_NAME].line, 2);
	assert_true(s.time_limit == 2 * 3600);
	assert_int_equal(s.prov[HB_F_TIME_LIMIT].kind, HB_PROV_CLI);
	assert_int_equal(s.prov[HB_F_TIME_LIMIT].line, 0);
	/* field by field: the script's mem and queue stay */
	assert_true(s.mem_mb == 4 * GIB);
	assert_int_equal(s.prov[HB_F_MEM].kind, HB_PROV_FILE);
	assert_string_equal(s.partition, "short");
	assert_true(s.export_all);
	d = find_dir(&s, "-l walltime=1:00:00");
	assert_note(d, "overridden by argv[0]");
	d = find_dir(&s, "-l walltime=2:00:00");
	assert_int_equal(d->prov.kind, HB_PROV_CLI);
	assert_true(has_field(d, HB_F_TIME_LIMIT));
	d = find_dir(&s, "-Ncli");
	assert_int_equal(d->prov.kind, HB_PROV_CLI);
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* command-line errors name the argument */
	{
		const char *bad[] = {"-l", "walltime=abc"};

		expect_err(script, bad, 2, HB_EINVAL,
			   "command line argv[0]: -l walltime: malformed time "
			   "'abc'");
	}
	{
		const char *bad[] = {"-N", "x", "-Q"};

		expect_err(script, bad, 3, HB_EINVAL,
			   "command line argv[2]: unknown option -Q");
	}
	{
		const char *bad[] = {"-N"};

		expect_err(script, bad, 1, HB_EINVAL, "-N: missing argument");
	}
	{
		const char *bad[] = {"job.pbs"};

		expect_err(script, bad, 1, HB_EINVAL, "unexpected argument");
	}
	{
		const char *bad[] = {"-N", "a\nb"};

		expect_err(script, bad, 2, HB_EINVAL, "control byte 0x0a");
	}
}

static void test_cli_prefix(void **state)
{
	static const char *script = "#PBS -N pbsname\n"
				    "#MY -N myname\n"
				    "true\n";
	struct hb_jobspec s;
	struct hb_err e;

	(void)state;
	{
		const char *argv[] = {"-C", "#MY"};

		assert_int_equal(parse_argv(script, argv, 2, &s, &e), 0);
		assert_string_equal(s.name, "myname");
		assert_note(find_dir(&s, "-C #MY"), "prefix '#MY'");
		hb_jobspec_free(&s);
	}
	{
		const char *argv[] = {"-C", ""};

		assert_int_equal(parse_argv(script, argv, 2, &s, &e), 0);
		assert_null(s.name);
		assert_note(find_dir(&s, "-C "), "not read");
		hb_jobspec_free(&s);
	}
}

static void test_select_nodes_conflict(void **state)
{
	const char *argv[] = {"-l", "select=2:ncpus=4"};

	(void)state;
	expect_err("#PBS -l nodes=2:ppn=4\n#PBS -l select=1:ncpus=2\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l select cannot be mixed with -l nodes (line "
		   "1)");
	expect_err("#PBS -l nodes=2:ppn=4\ntrue\n", argv, 2, HB_ECONFLICT,
		   "command line argv[0]: -l select cannot be mixed");
}

static void test_errors(void **state)
{
	static const struct {
		const char *script;
		int code;
		const char *msg;
	} cases[] = {
	    {"#!/bin/bash\n#PBS -N a\n#PBS -l walltime=abc\ntrue\n", HB_EINVAL,
	     "job.pbs:3: -l walltime: malformed time 'abc'"},
	    {"#PBS -l walltime=99999999999999999999\n", HB_ERANGE,
	     "job.pbs:1: -l walltime: time '99999999999999999999' "
	     "is too large"},
	    {"#PBS -l mem=12qb\n", HB_EINVAL,
	     "job.pbs:1: -l mem: malformed size '12qb'"},
	    {"#PBS -l mem=99999999999pb\n", HB_ERANGE,
	     "-l mem: size '99999999999pb' overflows"},
	    {"#PBS -l nodes=0:ppn=4\n", HB_EINVAL,
	     "-l nodes: '0' must be at least 1"},
	    {"#PBS -l nodes=2:ppn=x\n", HB_EINVAL,
	     "-l nodes: ppn: malformed number 'x'"},
	    {"#PBS -l nodes=2:ppn=99999999999\n", HB_ERANGE,
	     "number '99999999999' is too large"},
	    {"#PBS -l nodes=2::ppn=4\n", HB_EINVAL, "empty element"},
	    {"#PBS -l nodes=2+\n", HB_EINVAL, "empty node spec"},
	    {"#PBS -l nodes=2147483647+1\n", HB_ERANGE,
	     "-l nodes: nodes: 2147483648 in all is too many"},
	    {"#PBS -l select=2:ncpus\n", HB_EINVAL,
	     "chunk resource 'ncpus' has no value"},
	    {"#PBS -l select=2:ncpus=4+\n", HB_EINVAL, "empty chunk"},
	    {"#PBS -l select=2147483647:mpiprocs=2\n", HB_ERANGE,
	     "-l select: tasks (count x mpiprocs): 4294967294 in all"},
	    {"#PBS -l select=2:mem=2zz\n", HB_EINVAL,
	     "-l select: mem: malformed size '2zz'"},
	    {"#PBS -l place=everywhere\n", HB_EINVAL,
	     "-l place: unknown element 'everywhere'"},
	    {"#PBS -l mem=\n", HB_EINVAL, "-l mem: missing value"},
	    {"#PBS -l\n", HB_EINVAL, "-l: missing argument"},
	    {"#PBS -l a=1,,b=2\n", HB_EINVAL, "empty resource"},
	    {"#PBS -Y\n", HB_EINVAL, "job.pbs:1: unknown option -Y"},
	    {"#PBS --name=x\n", HB_EINVAL, "unknown option '--name=x'"},
	    {"#PBS name\n", HB_EINVAL, "job.pbs:1: unexpected argument 'name'"},
	    {"#PBS -N 'abc\n", HB_EINVAL, "unterminated ' quote"},
	    {"#PBS -N \"abc\n", HB_EINVAL, "unterminated \" quote"},
	    {"#PBS -N abc\\", HB_EINVAL, "trailing backslash"},
	    {"#PBS -N ''\n", HB_EINVAL, "malformed job name ''"},
	    {"#PBS -N 'a b'\n", HB_EINVAL, "malformed job name 'a b'"},
	    {"#PBS -r maybe\n", HB_EINVAL, "-r: rerunable must be y or n"},
	    {"#PBS -A ''\n", HB_EINVAL, "-A: empty value"},
	    {"#PBS -o host:\n", HB_EINVAL, "-o: empty path"},
	    {"#PBS -S @h\n", HB_EINVAL, "-S: malformed entry"},
	    {"#!/bin/bash\r\n#PBS -N a\r\n", HB_EINVAL,
	     "job.pbs:1: DOS line break"},
	    {"#!/bin/bash\n#PBS -N a\nx\x01y\n", HB_EINVAL,
	     "job.pbs:3: control byte 0x01"},
	    {"#!/bin/bash\n#PBS -N a\rb\n", HB_EINVAL,
	     "job.pbs:2: control byte 0x0d"},
	    {"#!/bin/bash\n\x7f\n", HB_EINVAL, "job.pbs:2: control byte 0x7f"},
	    {"", HB_EINVAL, "job.pbs: empty script"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_err(cases[i].script, NULL, 0, cases[i].code,
			   cases[i].msg);
}

/* The bounds of the sbatch parser, each one under and one over: counts
 * fit an int, GPUs 32 bits, times stay below INT_MAX seconds, array
 * indices run to 1000, and no product of counts overflows.  An error names
 * the file, the line and the field. */
static void test_sbatch_bounds(void **state)
{
	static const struct {
		const char *script;
		int code;
		const char *msg;
	} cases[] = {
	    /* the issue's own: every number 2^32-1 */
	    {"#PBS -N a\n#PBS -l select=4294967295:ncpus=4294967295\n",
	     HB_ERANGE,
	     "job.pbs:2: -l select: chunk count: number '4294967295' is "
	     "too large (at most 2147483647, as sbatch)"},
	    {"#PBS -l walltime=4294967295:00:00\n", HB_ERANGE,
	     "job.pbs:1: -l walltime: time '4294967295:00:00' is too large "
	     "(at most 2147483588 seconds, as sbatch)"},
	    /* Torque nodes= */
	    {"#PBS -l nodes=2147483647\n", 0, NULL},
	    {"#PBS -l nodes=2147483648\n", HB_ERANGE,
	     "job.pbs:1: -l nodes: number '2147483648' is too large"},
	    {"#PBS -l nodes=1:ppn=2147483647\n", 0, NULL},
	    {"#PBS -l nodes=1:ppn=2147483648\n", HB_ERANGE,
	     "-l nodes: ppn: number '2147483648' is too large"},
	    {"#PBS -l nodes=1:ncpus=2147483647\n", 0, NULL},
	    {"#PBS -l nodes=1:ncpus=2147483648\n", HB_ERANGE,
	     "-l nodes: ncpus: number '2147483648' is too large"},
	    {"#PBS -l nodes=1:gpus=4294967295\n", 0, NULL},
	    {"#PBS -l nodes=1:gpus=4294967296\n", HB_ERANGE,
	     "-l nodes: gpus: number '4294967296' is too large"},
	    {"#PBS -l nodes=2:ppn=1073741823\n", 0, NULL},
	    {"#PBS -l nodes=2:ppn=1073741824\n", HB_ERANGE,
	     "-l nodes: tasks: 2147483648 in all is too many"},
	    {"#PBS -l nodes=1:ppn=1073741824+1:ppn=1\n", HB_ERANGE,
	     "-l nodes: tasks (ppn x nodes): 2147483648 in all"},
	    {"#PBS -l nodes=2:ncpus=1073741823\n", 0, NULL},
	    {"#PBS -l nodes=2:ncpus=1073741824\n", HB_ERANGE,
	     "-l nodes: CPUs (ncpus x nodes): 2147483648 in all"},
	    {"#PBS -l nodes=2:gpus=2147483647\n", 0, NULL},
	    {"#PBS -l nodes=2:gpus=2147483648\n", HB_ERANGE,
	     "-l nodes: GPUs (gpus x nodes): 4294967296 in all"},
	    /* PBS Pro select= */
	    {"#PBS -l select=2147483647:ncpus=1\n", 0, NULL},
	    {"#PBS -l select=2147483648:ncpus=1\n", HB_ERANGE,
	     "-l select: chunk count: number '2147483648' is too large"},
	    {"#PBS -l select=1:ncpus=2147483647\n", 0, NULL},
	    {"#PBS -l select=1:ncpus=2147483648\n", HB_ERANGE,
	     "-l select: ncpus: number '2147483648' is too large"},
	    {"#PBS -l select=1:ncpus=1:mpiprocs=2147483647\n", 0, NULL},
	    {"#PBS -l select=1:ncpus=1:mpiprocs=2147483648\n", HB_ERANGE,
	     "-l select: mpiprocs: number '2147483648' is too large"},
	    {"#PBS -l select=1:ncpus=1:ompthreads=2147483647\n", 0, NULL},
	    {"#PBS -l select=1:ncpus=1:ompthreads=2147483648\n", HB_ERANGE,
	     "-l select: ompthreads: number '2147483648' is too large"},
	    {"#PBS -l select=1:ngpus=4294967295\n", 0, NULL},
	    {"#PBS -l select=1:ngpus=4294967296\n", HB_ERANGE,
	     "-l select: ngpus: number '4294967296' is too large"},
	    {"#PBS -l select=2:ncpus=1073741823\n", 0, NULL},
	    {"#PBS -l select=2:ncpus=1073741824\n", HB_ERANGE,
	     "job.pbs:1: -l select: CPUs (count x ncpus): 2147483648 in "
	     "all is too many (at most 2147483647, as sbatch)"},
	    {"#PBS -l select=2:ncpus=1:mpiprocs=1073741823\n", 0, NULL},
	    {"#PBS -l select=2:ncpus=1:mpiprocs=1073741824\n", HB_ERANGE,
	     "-l select: tasks (count x mpiprocs): 2147483648 in all"},
	    {"#PBS -l select=1:ncpus=1+1:ncpus=2147483646\n", 0, NULL},
	    {"#PBS -l select=1:ncpus=2+1:ncpus=2147483646\n", HB_ERANGE,
	     "-l select: CPUs (count x ncpus): 2147483648 in all"},
	    {"#PBS -l select=2:ngpus=2147483647\n", 0, NULL},
	    {"#PBS -l select=2:ngpus=2147483648\n", HB_ERANGE,
	     "-l select: GPUs (count x ngpus): 4294967296 in all"},
	    {"#PBS -l select=1:mpiprocs=2:ompthreads=1073741823\n", 0, NULL},
	    {"#PBS -l select=1:mpiprocs=2:ompthreads=1073741824\n", HB_ERANGE,
	     "-l select: ncpus (mpiprocs x ompthreads): 2147483648 in all"},
	    {"#PBS -l select=1:ncpus=1:mpiprocs=2:ompthreads=1073741823\n", 0,
	     NULL},
	    {"#PBS -l select=1:ncpus=1:mpiprocs=2:ompthreads=1073741824\n",
	     HB_ERANGE,
	     "-l select: mpiprocs x ompthreads: 2147483648 in all"},
	    {"#PBS -l select=536870911:ncpus=1:mem=16pb\n#PBS -l place=pack\n",
	     0, NULL},
	    {"#PBS -l select=536870912:ncpus=1:mem=16pb\n#PBS -l place=pack\n",
	     HB_ERANGE,
	     "job.pbs:1: -l select: mem (count x mem) is too large (at most "
	     "9223372036854775807 MiB, as sbatch)"},
	    /* times */
	    {"#PBS -l walltime=2147483588\n", 0, NULL},
	    {"#PBS -l walltime=2147483589\n", HB_ERANGE,
	     "-l walltime: time '2147483589' is too large"},
	    {"#PBS -l walltime=596523:13:08\n", 0, NULL},
	    {"#PBS -l walltime=596523:13:09\n", HB_ERANGE,
	     "-l walltime: time '596523:13:09' is too large"},
	    {"#PBS -l max_walltime=2147483588\n", 0, NULL},
	    {"#PBS -l max_walltime=2147483589\n", HB_ERANGE,
	     "-l max_walltime: time '2147483589' is too large"},
	    {"#PBS -l min_walltime=2147483588\n", 0, NULL},
	    {"#PBS -l min_walltime=2147483589\n", HB_ERANGE,
	     "-l min_walltime: time '2147483589' is too large"},
	    /* other counts */
	    {"#PBS -l ncpus=2147483647\n", 0, NULL},
	    {"#PBS -l ncpus=2147483648\n", HB_ERANGE,
	     "-l ncpus: number '2147483648' is too large"},
	    {"#PBS -l procs=2147483647\n", 0, NULL},
	    {"#PBS -l procs=2147483648\n", HB_ERANGE,
	     "-l procs: number '2147483648' is too large"},
	    {"#PBS -l ngpus=4294967295\n", 0, NULL},
	    {"#PBS -l ngpus=4294967296\n", HB_ERANGE,
	     "-l ngpus: number '4294967296' is too large"},
	    {"#PBS -l gres=gpu:4294967295\n", 0, NULL},
	    {"#PBS -l gres=gpu:4294967296\n", HB_ERANGE,
	     "-l gres: number '4294967296' is too large"},
	    /* arrays */
	    {"#PBS -t 0-1000\n", 0, NULL},
	    {"#PBS -t 0-1001\n", HB_ERANGE,
	     "job.pbs:1: -t: index '1001' is too large (indices run from 0 "
	     "to 1000, as sbatch)"},
	    {"#PBS -J 1-1000:999\n", 0, NULL},
	    {"#PBS -J 1001-1002\n", HB_ERANGE, "-J: index '1001' is too large"},
	    {"#PBS -t 1-2%2147483647\n", 0, NULL},
	    {"#PBS -t 1-2%2147483648\n", HB_ERANGE,
	     "-t: number '2147483648' is too large"},
	    {"#PBS -J 1-2\n#PBS -W max_run_subjobs=2147483647\n", 0, NULL},
	    {"#PBS -J 1-2\n#PBS -W max_run_subjobs=2147483648\n", HB_ERANGE,
	     "job.pbs:2: -W max_run_subjobs: number '2147483648' is too "
	     "large"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_jobspec s;
		struct hb_shape sh;

		if (cases[i].code) {
			expect_err(cases[i].script, NULL, 0, cases[i].code,
				   cases[i].msg);
			continue;
		}
		ok(cases[i].script, &s);
		/* what is accepted has a shape every emitter can use */
		if (hb_jobspec_shape(&s, &sh))
			fail_msg("no shape for %s", cases[i].script);
		hb_jobspec_free(&s);
	}
	/* the same bounds for qsub options on the command line */
	{
		const char *argv[] = {"-l", "select=1:ncpus=2147483648"};

		expect_err("#PBS -N a\n", argv, 2, HB_ERANGE,
			   "command line argv[0]: -l select: ncpus: number "
			   "'2147483648' is too large");
	}
}

static void test_nul_and_size(void **state)
{
	static const char nul[] = "#PBS -N a\n\0#PBS -N b\n";
	struct hb_jobspec s;
	struct hb_err e;
	char *big;

	(void)state;
	hb_jobspec_init(&s, "job.pbs");
	memset(&e, 0, sizeof(e));
	assert_int_equal(
	    hb_pbs_parse(nul, sizeof(nul) - 1, "job.pbs", NULL, 0, &s, &e),
	    HB_EINVAL);
	assert_non_null(strstr(e.msg, "job.pbs:2: NUL byte"));
	hb_jobspec_free(&s);

	big = malloc(HB_SCRIPT_MAX + 1);
	assert_non_null(big);
	memset(big, '#', HB_SCRIPT_MAX + 1);
	hb_jobspec_init(&s, "job.pbs");
	memset(&e, 0, sizeof(e));
	assert_int_equal(
	    hb_pbs_parse(big, HB_SCRIPT_MAX + 1, "job.pbs", NULL, 0, &s, &e),
	    HB_ETOOBIG);
	assert_non_null(strstr(e.msg, "larger than"));
	hb_jobspec_free(&s);
	/* exactly the cap is fine */
	hb_jobspec_init(&s, "job.pbs");
	memset(&e, 0, sizeof(e));
	big[HB_SCRIPT_MAX - 1] = '\n';
	assert_int_equal(
	    hb_pbs_parse(big, HB_SCRIPT_MAX, "job.pbs", NULL, 0, &s, &e), 0);
	assert_int_equal(s.script_len, HB_SCRIPT_MAX);
	hb_jobspec_free(&s);
	free(big);
}

/* Big headers: long lines parse, too many directives is a clear error. */
static void test_big_headers(void **state)
{
	const size_t name_len = 1024 * 1024;
	struct hb_jobspec s;
	struct hb_err e;
	char *big;
	size_t off = 0;

	(void)state;
	/* four 1 MiB directive lines in a script near the size cap */
	big = malloc(HB_SCRIPT_MAX);
	assert_non_null(big);
	for (int i = 0; i < 3; i++) {
		memcpy(big + off, "#PBS -M ", 8);
		off += 8;
		memset(big + off, 'm', name_len);
		off += name_len;
		big[off++] = '\n';
	}
	memcpy(big + off, "#PBS -N ", 8);
	off += 8;
	memset(big + off, 'n', HB_SCRIPT_MAX - off - 1);
	big[HB_SCRIPT_MAX - 1] = '\n';
	hb_jobspec_init(&s, "job.pbs");
	memset(&e, 0, sizeof(e));
	if (hb_pbs_parse(big, HB_SCRIPT_MAX, "job.pbs", NULL, 0, &s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(strlen(s.mail_user), name_len);
	assert_int_equal(strlen(s.name), HB_SCRIPT_MAX - off - 1);
	hb_jobspec_free(&s);

	/* 70000 directives: more than the cap */
	off = 0;
	for (int i = 0; i < 70000; i++) {
		memcpy(big + off, "#PBS -r y\n", 10);
		off += 10;
	}
	hb_jobspec_init(&s, "job.pbs");
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_pbs_parse(big, off, "job.pbs", NULL, 0, &s, &e),
			 HB_ETOOBIG);
	assert_non_null(strstr(e.msg, "job.pbs:65537: more than 65536 "
				      "directives"));
	hb_jobspec_free(&s);
	free(big);
}

static void test_detect(void **state)
{
	static const struct {
		const char *in;
		int pbs;
	} cases[] = {
	    {"#!/bin/bash\n#PBS -N a\n", 1},
	    {"#PBS -l nodes=1\n", 1},
	    {"#!/bin/bash\n# comment\n\n#PBS\n", 1},
	    {"#!/bin/bash\n#SBATCH -N 1\n#PBS -N a\n", 0},
	    {"#!/bin/bash\n#PBS -N a\n#SBATCH -N 1\n", 1},
	    {"#!/bin/bash\necho\n#PBS -N a\n", 0},
	    {"#!/bin/bash\n#PBSX -N a\n", 0},
	    {"#!/bin/bash\r\n#PBS -N a\r\n", 1},
	    {"", 0},
	    {"echo hi\n", 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (hb_pbs_detect(cases[i].in, strlen(cases[i].in)) !=
		    cases[i].pbs)
			fail_msg("detect '%s': want %d", cases[i].in,
				 cases[i].pbs);
	/* only len bytes are read */
	assert_false(hb_pbs_detect("#PBS -N a", 3));
	assert_true(hb_pbs_detect("#PBS -N a", 4));
	assert_false(hb_pbs_detect(NULL, 0));
}

/* The corpus others use for tests and benchmarks: all of it parses. */
/* ------------------------------------------------------------------ */
/* Cray's -l mppwidth, mppnppn and mppdepth (ALPS: aprun -n, -N, -d)    */

/* Field f came from the file at line, or (line 0) was derived. */
static void assert_prov(const struct hb_jobspec *s, enum hb_field f,
			uint32_t line)
{
	assert_int_equal(s->prov[f].kind,
			 line ? HB_PROV_FILE : HB_PROV_DERIVED);
	assert_int_equal(s->prov[f].line, line);
}

/* The Hopper script of the real-world set: 128 PEs, 24 per node. */
static void test_mpp_hopper(void **state)
{
	struct hb_jobspec s;
	struct hb_shape sh;
	char path[4096];
	size_t len;
	char *buf;
	struct hb_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s",
		 hb_test_src_path("tests/corpus/pbs/torque_cray_mppwidth.pbs"));
	buf = hb_test_read_file(path, &len);
	hb_jobspec_init(&s, "job.pbs");
	memset(&e, 0, sizeof(e));
	if (hb_pbs_parse(buf, len, "job.pbs", NULL, 0, &s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(s.ntasks, 128);
	assert_int_equal(s.ntasks_per_node, 24);
	assert_int_equal(s.nodes_min, 6);
	assert_int_equal(s.nodes_max, 6);
	assert_prov(&s, HB_F_NTASKS, 3);
	assert_prov(&s, HB_F_NTASKS_PER_NODE, 4);
	assert_prov(&s, HB_F_NODES, 0);
	assert_true(has_field(find_dir(&s, "-l mppwidth=128"), HB_F_NTASKS));
	assert_true(has_field(find_dir(&s, "-l mppwidth=128"), HB_F_NODES));
	assert_true(has_field(find_dir(&s, "-l mppnppn=24"),
			      HB_F_NTASKS_PER_NODE));
	assert_true(has_field(find_dir(&s, "-l mppnppn=24"), HB_F_NODES));
	assert_note(find_dir(&s, "-l mppnppn=24"),
		    "128 PEs at 24 per node: 6 nodes");
	assert_int_equal(hb_jobspec_shape(&s, &sh), 0);
	assert_int_equal(sh.nodes, 6);
	assert_int_equal(sh.ntasks, 128);
	assert_accounted(&s);
	hb_jobspec_free(&s);
	free(buf);
}

static void test_mpp_width(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l mppwidth=48\ntrue\n", &s);
	assert_int_equal(s.ntasks, 48);
	assert_int_equal(s.nodes_min, 0);
	assert_int_equal(s.ntasks_per_node, 0);
	assert_prov(&s, HB_F_NTASKS, 1);
	assert_true(has_field(find_dir(&s, "-l mppwidth=48"), HB_F_NTASKS));
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* the last of two wins, as for every -l resource */
	ok("#PBS -l mppwidth=8\n#PBS -l mppwidth=16\ntrue\n", &s);
	assert_int_equal(s.ntasks, 16);
	assert_note(find_dir(&s, "-l mppwidth=8"), "overridden by line 2");
	hb_jobspec_free(&s);
}

static void test_mpp_width_nppn(void **state)
{
	struct hb_jobspec s;

	(void)state;
	/* 100 PEs at 32 a node: 4 nodes, the last one partly filled */
	ok("#PBS -l mppnppn=32,mppwidth=100\ntrue\n", &s);
	assert_int_equal(s.ntasks, 100);
	assert_int_equal(s.ntasks_per_node, 32);
	assert_int_equal(s.nodes_min, 4);
	assert_int_equal(s.nodes_max, 4);
	assert_prov(&s, HB_F_NODES, 0);
	assert_note(find_dir(&s, "-l mppnppn=32"),
		    "100 PEs at 32 per node: 4 nodes");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* an even division */
	ok("#PBS -l mppwidth=64\n#PBS -l mppnppn=16\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 4);
	assert_int_equal(s.ntasks, 64);
	hb_jobspec_free(&s);

	/* mppnppn alone: ALPS's width is one PE */
	ok("#PBS -l mppnppn=8\ntrue\n", &s);
	assert_int_equal(s.ntasks_per_node, 0);
	assert_note(find_dir(&s, "-l mppnppn=8"), "not carried");
	assert_accounted(&s);
	hb_jobspec_free(&s);
}

static void test_mpp_depth(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l mppwidth=8,mppnppn=4,mppdepth=6\ntrue\n", &s);
	assert_int_equal(s.ntasks, 8);
	assert_int_equal(s.ntasks_per_node, 4);
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.cpus_per_task, 6);
	assert_prov(&s, HB_F_CPUS_PER_TASK, 1);
	assert_true(has_field(find_dir(&s, "-l mppdepth=6"),
			      HB_F_CPUS_PER_TASK));
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -l mppdepth=12\ntrue\n", &s);
	assert_int_equal(s.cpus_per_task, 12);
	assert_int_equal(s.ntasks, 0);
	hb_jobspec_free(&s);
}

/* mppmem: memory per PE (aprun -m), read as pmem is. */
static void test_mpp_mem(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l mppwidth=48,mppnppn=24,mppmem=1500mb\ntrue\n", &s);
	assert_int_equal(s.mem_kind, HB_MEM_PER_PROCESS);
	assert_int_equal(s.mem_mb, 1500);
	assert_true(has_field(find_dir(&s, "-l mppmem=1500mb"), HB_F_MEM));
	assert_int_equal(s.ntasks, 48);
	assert_int_equal(s.nodes_min, 2);
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* a size as Torque reads it */
	ok("#PBS -l mppmem=2gb\ntrue\n", &s);
	assert_int_equal(s.mem_mb, 2048);
	hb_jobspec_free(&s);

	/* the same as pmem: one request */
	ok("#PBS -l pmem=1gb\n#PBS -l mppmem=1024mb\ntrue\n", &s);
	assert_int_equal(s.mem_kind, HB_MEM_PER_PROCESS);
	assert_int_equal(s.mem_mb, 1024);
	assert_note(find_dir(&s, "-l mppmem=1024mb"),
		    "the same as -l pmem (line 1)");
	assert_true(has_field(find_dir(&s, "-l pmem=1gb"), HB_F_MEM));
	assert_accounted(&s);
	hb_jobspec_free(&s);

	/* against the job-wide mem, as pmem is: the larger per node wins */
	ok("#PBS -l mem=1gb\n#PBS -l mppwidth=4,mppnppn=4,mppmem=1gb\n"
	   "true\n",
	   &s);
	assert_int_equal(s.mem_kind, HB_MEM_PER_PROCESS);
	assert_int_equal(s.mem_mb, 1024);
	assert_note(find_dir(&s, "-l mem=1gb"), "dropped");
	hb_jobspec_free(&s);

	/* zero asks for nothing */
	ok("#PBS -l mppmem=0\ntrue\n", &s);
	assert_int_equal(s.mem_kind, HB_MEM_NONE);
	assert_note(find_dir(&s, "-l mppmem=0"), "dropped");
	hb_jobspec_free(&s);

	expect_err("#PBS -l pmem=1gb\n#PBS -l mppmem=2gb\ntrue\n", NULL, 0,
		   HB_ECONFLICT,
		   "job.pbs:2: -l mppmem (2048 MiB a PE) conflicts with -l "
		   "pmem (line 1, 1024 MiB a process)");
	expect_err("#PBS -l mppmem=2gb\n#PBS -l pmem=1gb\ntrue\n", NULL, 0,
		   HB_ECONFLICT, "job.pbs:2: -l mppmem (2048 MiB a PE)");
	expect_err("#PBS -l select=1:ncpus=2\n#PBS -l mppmem=1gb\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppmem cannot be mixed with -l select "
		   "(line 1)");
	expect_err("#PBS -l mppmem=lots\ntrue\n", NULL, 0, HB_EINVAL,
		   "-l mppmem: malformed size 'lots'");
}

/* mppnodes: ALPS's candidate nodes (aprun -L), as the node list. */
static void test_mpp_nodes(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l mppwidth=96,mppnppn=24\n#PBS -l mppnodes=32\n"
	   "#PBS -l 'mppnodes=\"32,33,40-41\"'\ntrue\n",
	   &s);
	assert_string_equal(s.nodelist, "32,33,[40-41]");
	assert_int_equal(s.nodes_min, 4);
	assert_true(has_field(find_dir(&s, "-l mppnodes=\"32,33,40-41\""),
			      HB_F_NODELIST));
	assert_note(find_dir(&s, "-l mppnodes=32"), "overridden by line 3");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -l mppwidth=8 -l mppnodes=nid00012\ntrue\n", &s);
	assert_string_equal(s.nodelist, "nid00012");
	assert_int_equal(s.nodes_min, 1);
	hb_jobspec_free(&s);

	/* no node count: the list gives it */
	ok("#PBS -l mppwidth=8\n#PBS -l mppnodes=100-103\ntrue\n", &s);
	assert_string_equal(s.nodelist, "[100-103]");
	assert_int_equal(s.nodes_min, 4);
	assert_int_equal(s.nodes_max, 4);
	assert_true(has_field(find_dir(&s, "-l mppnodes=100-103"),
			      HB_F_NODES));
	assert_note(find_dir(&s, "-l mppnodes=100-103"), "4 nodes");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	expect_err("#PBS -l mppwidth=48,mppnppn=24\n#PBS -l mppnodes=1-3\n"
		   "true\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppnodes names 3 nodes, but the job has 2 "
		   "(line 1)");
	expect_err("#PBS -l mppwidth=2\n#PBS -l mppnodes=1-3\ntrue\n", NULL,
		   0, HB_ECONFLICT,
		   "-l mppnodes names 3 nodes, more than the 2 PEs");
	expect_err("#PBS -l mppnodes=7\n#PBS -l nodes=n1+n2\ntrue\n", NULL, 0,
		   HB_ECONFLICT,
		   "job.pbs:1: -l mppnodes cannot be mixed with the hosts of "
		   "-l nodes (line 2)");
	expect_err("#PBS -l host=n1\n#PBS -l mppnodes=7\ntrue\n", NULL, 0,
		   HB_ECONFLICT, "with the hosts of -l host (line 1)");
	expect_err("#PBS -l select=1:ncpus=2\n#PBS -l mppnodes=7\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "-l mppnodes cannot be mixed with -l select");
	expect_err("#PBS -l mppnodes=9-3\ntrue\n", NULL, 0, HB_EINVAL,
		   "-l mppnodes: malformed node list '9-3'");
	expect_err("#PBS -l mppnodes=a/b\ntrue\n", NULL, 0, HB_EINVAL,
		   "-l mppnodes: malformed node list");
}

/* nodes=, ncpus and procs where they agree with the mpp* shape. */
static void test_mpp_agree(void **state)
{
	struct hb_jobspec s;

	(void)state;
	ok("#PBS -l nodes=4:ppn=24\n#PBS -l mppwidth=96,mppnppn=24\n"
	   "true\n",
	   &s);
	assert_int_equal(s.nodes_min, 4);
	assert_int_equal(s.ntasks_per_node, 24);
	assert_int_equal(s.ntasks, 96);
	assert_prov(&s, HB_F_NTASKS_PER_NODE, 0);
	assert_true(has_field(find_dir(&s, "-l mppnppn=24"),
			      HB_F_NTASKS_PER_NODE));
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -l nodes=2\n#PBS -l mppwidth=10\ntrue\n", &s);
	assert_int_equal(s.nodes_min, 2);
	assert_int_equal(s.ntasks, 10);
	hb_jobspec_free(&s);

	ok("#PBS -l mppwidth=4,mppdepth=3,ncpus=12,procs=4\ntrue\n", &s);
	assert_int_equal(s.ntasks, 4);
	assert_int_equal(s.cpus_per_task, 3);
	assert_prov(&s, HB_F_CPUS_PER_TASK, 0);
	assert_prov(&s, HB_F_NTASKS, 0);
	assert_note(find_dir(&s, "-l ncpus=12"), "the same as mppwidth");
	assert_note(find_dir(&s, "-l procs=4"), "the same as -l mppwidth");
	assert_accounted(&s);
	hb_jobspec_free(&s);

	ok("#PBS -l nodes=1:ppn=2:ncpus=8\n#PBS -l mppdepth=4\ntrue\n", &s);
	assert_int_equal(s.cpus_per_task, 4);
	assert_true(has_field(find_dir(&s, "-l mppdepth=4"),
			      HB_F_CPUS_PER_TASK));
	hb_jobspec_free(&s);
}

static void test_mpp_conflicts(void **state)
{
	(void)state;
	expect_err("#PBS -l select=2:ncpus=4\n#PBS -l mppwidth=8\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppwidth cannot be mixed with -l select "
		   "(line 1)");
	expect_err("#PBS -l mppdepth=2\n#PBS -l select=1:ncpus=2\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l select cannot be mixed with -l mppdepth "
		   "(line 1)");
	expect_err("#PBS -l nodes=2:ppn=16\n#PBS -l mppnppn=24\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppnppn=24 conflicts with ppn=16 of -l "
		   "nodes (line 1)");
	expect_err("#PBS -l nodes=2:ppn=24\n#PBS -l mppwidth=128\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppwidth=128 at 24 per node needs 6 nodes, "
		   "but -l nodes (line 1) gives 2");
	expect_err("#PBS -l nodes=8\n#PBS -l mppwidth=4\ntrue\n", NULL, 0,
		   HB_ECONFLICT,
		   "job.pbs:2: -l mppwidth=4 is fewer PEs than the 8 nodes");
	expect_err("#PBS -l nodes=1:ppn=2+2:ppn=4\n#PBS -l mppwidth=10\n"
		   "true\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppwidth cannot be mixed with node specs "
		   "that differ");
	expect_err("#PBS -l nodes=1:ppn=2:ncpus=8\n#PBS -l mppdepth=3\n"
		   "true\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:2: -l mppdepth=3 conflicts with ncpus=8 of -l "
		   "nodes (line 1)");
	expect_err("#PBS -l mppwidth=8\n#PBS -l mppnppn=16\ntrue\n", NULL, 0,
		   HB_ECONFLICT,
		   "job.pbs:2: -l mppnppn=16 is more PEs per node than the 8 "
		   "of -l mppwidth (line 1)");
	expect_err("#PBS -l mppwidth=4\n#PBS -l mppdepth=2\n"
		   "#PBS -l ncpus=4\ntrue\n",
		   NULL, 0, HB_ECONFLICT,
		   "job.pbs:3: -l ncpus=4 conflicts with the 8 CPUs of -l "
		   "mppwidth x mppdepth (line 2)");
	expect_err("#PBS -l mppwidth=4\n#PBS -l procs=5\ntrue\n", NULL, 0,
		   HB_ECONFLICT,
		   "job.pbs:2: -l procs=5 conflicts with -l mppwidth=4 "
		   "(line 1)");
}

static void test_mpp_bad_values(void **state)
{
	(void)state;
	expect_err("#!/bin/bash\n#PBS -l mppwidth=0\ntrue\n", NULL, 0,
		   HB_EINVAL, "job.pbs:2: -l mppwidth: '0' must be at least 1");
	expect_err("#PBS -N a\n#PBS -l walltime=1:00\n#PBS -l mppnppn=two\n",
		   NULL, 0, HB_EINVAL,
		   "job.pbs:3: -l mppnppn: malformed number 'two'");
	expect_err("#PBS -l mppdepth=-1\n", NULL, 0, HB_EINVAL,
		   "job.pbs:1: -l mppdepth: malformed number '-1'");
	expect_err("#PBS -l mppdepth=0\n", NULL, 0, HB_EINVAL,
		   "job.pbs:1: -l mppdepth: '0' must be at least 1");
	expect_err("#PBS -l mppwidth=99999999999999999999\n", NULL, 0,
		   HB_ERANGE,
		   "job.pbs:1: -l mppwidth: number '99999999999999999999' is "
		   "too large");
	expect_err("#PBS -l mppnppn=2147483648\n", NULL, 0, HB_ERANGE,
		   "job.pbs:1: -l mppnppn: number '2147483648' is too large "
		   "(at most 2147483647");
	expect_err("#PBS -l mppwidth=65536\n#PBS -l mppdepth=65536\n", NULL, 0,
		   HB_ERANGE,
		   "job.pbs:2: -l mppdepth: 4294967296 CPUs in all");
	expect_err("#PBS -l mppwidth=\n", NULL, 0, HB_EINVAL,
		   "job.pbs:1: -l mppwidth: missing value");
}

static void test_corpus(void **state)
{
	const char *dir = hb_test_src_path("tests/corpus/pbs");
	char path[4096];
	DIR *dp;
	struct dirent *de;
	unsigned n = 0, pro = 0, torque = 0, multi = 0, arrays = 0, gpus = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s", dir);
	dp = opendir(path);
	assert_non_null(dp);
	while ((de = readdir(dp)) != NULL) {
		struct hb_jobspec s;
		struct hb_err e;
		char file[4352];
		size_t len;
		char *buf;
		int rc;

		if (!strstr(de->d_name, ".pbs"))
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		buf = hb_test_read_file(file, &len);
		assert_true(hb_pbs_detect(buf, len));
		hb_jobspec_init(&s, de->d_name);
		memset(&e, 0, sizeof(e));
		rc = hb_pbs_parse(buf, len, de->d_name, NULL, 0, &s, &e);
		if (rc)
			fail_msg("%s: rc %d: %s", de->d_name, rc, e.msg);
		assert_int_equal(s.source, HB_SRC_PBS);
		assert_int_equal(s.script_len, len);
		assert_memory_equal(s.script, buf, len);
		assert_accounted(&s);
		if (strncmp(de->d_name, "pbspro_", 7) == 0)
			pro++;
		if (strncmp(de->d_name, "torque_", 7) == 0)
			torque++;
		if (s.nchunks > 1)
			multi++;
		if (s.narray_ranges)
			arrays++;
		if (s.gpus)
			gpus++;
		/* every corpus job asks for some time */
		if (!s.time_limit)
			fail_msg("%s: no walltime", de->d_name);
		hb_jobspec_free(&s);
		free(buf);
		n++;
	}
	closedir(dp);
	assert_true(n >= 15);
	assert_true(pro >= 5);
	assert_true(torque >= 5);
	assert_true(multi >= 1);
	assert_true(arrays >= 2);
	assert_true(gpus >= 2);
}

/* #SBATCH lines in a PBS script are listed with a note, never applied. */
static void test_sbatch_lines_listed(void **state)
{
	struct hb_jobspec s;
	int found = 0;

	(void)state;
	ok("#!/bin/sh\n#PBS -N a\n#SBATCH -J b\necho\n", &s);
	assert_string_equal(s.name, "a");
	for (uint32_t i = 0; i < s.ndirectives; i++) {
		const struct hb_directive *d = &s.directives[i];

		if (d->prov.line == 3) {
			found++;
			assert_string_equal(d->text, "#SBATCH -J b");
			assert_int_equal(d->nfields, 0);
			assert_non_null(strstr(d->note, "not read"));
		}
	}
	assert_int_equal(found, 1);
	hb_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sbatch_lines_listed),
	    cmocka_unit_test(test_torque_basic),
	    cmocka_unit_test(test_mem_job_vs_pmem),
	    cmocka_unit_test(test_walltime_seconds),
	    cmocka_unit_test(test_size_units),
	    cmocka_unit_test(test_select_single),
	    cmocka_unit_test(test_select_multichunk),
	    cmocka_unit_test(test_place),
	    cmocka_unit_test(test_torque_nodes),
	    cmocka_unit_test(test_gres),
	    cmocka_unit_test(test_unknown_resource),
	    cmocka_unit_test(test_arrays),
	    cmocka_unit_test(test_depend),
	    cmocka_unit_test(test_other_w),
	    cmocka_unit_test(test_identity_and_io),
	    cmocka_unit_test(test_output_dir),
	    cmocka_unit_test(test_join_keep),
	    cmocka_unit_test(test_mail),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_begin),
	    cmocka_unit_test(test_project),
	    cmocka_unit_test(test_recorded_only),
	    cmocka_unit_test(test_scanning),
	    cmocka_unit_test(test_cli_override),
	    cmocka_unit_test(test_cli_prefix),
	    cmocka_unit_test(test_select_nodes_conflict),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_sbatch_bounds),
	    cmocka_unit_test(test_nul_and_size),
	    cmocka_unit_test(test_big_headers),
	    cmocka_unit_test(test_detect),
	    cmocka_unit_test(test_mpp_hopper),
	    cmocka_unit_test(test_mpp_width),
	    cmocka_unit_test(test_mpp_width_nppn),
	    cmocka_unit_test(test_mpp_depth),
	    cmocka_unit_test(test_mpp_mem),
	    cmocka_unit_test(test_mpp_nodes),
	    cmocka_unit_test(test_mpp_agree),
	    cmocka_unit_test(test_mpp_conflicts),
	    cmocka_unit_test(test_mpp_bad_values),
	    cmocka_unit_test(test_corpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
