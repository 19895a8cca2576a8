/*
 * test_jobspec_fabric.c - what a job needs from the network, and which MPI it
 * runs: every inference rule of translators/fabric.c, an explicit
 * --hpcbridge-fabric beating them, the JSON round trip and its refusals,
 * the fidelity report's fabric line and MPI warnings, and MPI flavours
 * told apart in scripts (the project's corpus and ../shared/realworld).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/fidelity.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

static void parse(struct hb_jobspec *s, const char *script)
{
	struct hb_err err = { 0 };
	struct hb_sbatch_opts o = { 0 };

	hb_jobspec_init(s, "job.sh");
	if (hb_sbatch_parse(script, strlen(script), "job.sh", &o, s, &err))
		fail_msg("%s\n%s", err.msg, script);
}

#define assert_has(hay, needle)                                                \
	do {                                                                   \
		const char *h_ = (hay);                                        \
		if (!h_ || !strstr(h_, (needle)))                              \
			fail_msg("missing '%s' in '%s'", (needle),             \
				 h_ ? h_ : "(null)");                          \
	} while (0)

/* ---- inference from the script's variables ---------------------------- */

struct rule_case {
	const char *exports; /* the body's export lines */
	int fabric;	     /* enum hb_fabric; AUTO: nothing decided */
	const char *why;     /* a part of fabric_why, or NULL */
};

static const struct rule_case rule_cases[] = {
	/* UCX naming an RDMA device, and not a network interface */
	{ "export UCX_NET_DEVICES=mlx5_0:1\n", HB_FABRIC_RDMA,
	  "UCX_NET_DEVICES=mlx5_0:1 at job.sh:4" },
	{ "export UCX_NET_DEVICES=bnxt_re0\n", HB_FABRIC_RDMA,
	  "UCX_NET_DEVICES=bnxt_re0" },
	{ "export UCX_NET_DEVICES=eth0\n", HB_FABRIC_AUTO, NULL },
	{ "export UCX_NET_DEVICES=ib0,lo\n", HB_FABRIC_AUTO, NULL },
	{ "export UCX_NET_DEVICES=all\n", HB_FABRIC_AUTO, NULL },
	/* UCX transports */
	{ "export OMPI_MCA_pml=ucx\nexport UCX_TLS=rc,sm,self\n",
	  HB_FABRIC_RDMA,
	  "UCX_TLS=rc,sm,self at job.sh:5 with OMPI_MCA_pml=ucx at job.sh:4" },
	{ "export UCX_TLS=dc_x,sm\n", HB_FABRIC_RDMA, "UCX_TLS=dc_x,sm" },
	{ "export UCX_TLS=tcp,sm,self\n", HB_FABRIC_TCP, "UCX_TLS=tcp,sm,self" },
	{ "export UCX_TLS=tcp\nexport UCX_NET_DEVICES=mlx5_0:1\n",
	  HB_FABRIC_TCP, "UCX_TLS=tcp" },
	{ "export UCX_TLS=^rc\n", HB_FABRIC_AUTO, NULL },
	/* NCCL */
	{ "export NCCL_IB_HCA=mlx5_0,mlx5_1\n", HB_FABRIC_RDMA,
	  "NCCL_IB_HCA=mlx5_0,mlx5_1 at job.sh:4" },
	{ "export NCCL_IB_HCA=^mlx5_1\n", HB_FABRIC_AUTO, NULL },
	{ "export NCCL_IB_DISABLE=1\n", HB_FABRIC_TCP, "NCCL_IB_DISABLE=1" },
	{ "export NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1\n", HB_FABRIC_TCP,
	  "NCCL_IB_DISABLE=1 at job.sh:4 with NCCL_P2P_DISABLE=1" },
	{ "export NCCL_IB_DISABLE=0 NCCL_IB_HCA=mlx5_0\n", HB_FABRIC_RDMA,
	  "NCCL_IB_HCA=mlx5_0" },
	{ "export NCCL_NET=Socket\n", HB_FABRIC_TCP, "NCCL_NET=Socket" },
	{ "export NCCL_NET=IB\n", HB_FABRIC_RDMA, "NCCL_NET=IB" },
	/* Open MPI's BTLs */
	{ "export OMPI_MCA_btl=openib,self,vader\n", HB_FABRIC_RDMA,
	  "OMPI_MCA_btl=openib,self,vader" },
	{ "export OMPI_MCA_btl=^openib\n", HB_FABRIC_TCP,
	  "OMPI_MCA_btl=^openib" },
	{ "export OMPI_MCA_btl=tcp,self\n", HB_FABRIC_TCP,
	  "OMPI_MCA_btl=tcp,self" },
	{ "export OMPI_MCA_btl=^openib OMPI_MCA_pml=ucx\n", HB_FABRIC_AUTO,
	  NULL },
	/* Intel MPI and libfabric */
	{ "export I_MPI_FABRICS=shm:ofi\nexport FI_PROVIDER=verbs\n",
	  HB_FABRIC_RDMA, "FI_PROVIDER=verbs at job.sh:5 with I_MPI_FABRICS" },
	{ "export I_MPI_FABRICS=shm:ofi FI_PROVIDER=mlx\n", HB_FABRIC_RDMA,
	  "FI_PROVIDER=mlx" },
	{ "export FI_PROVIDER=tcp\n", HB_FABRIC_TCP, "FI_PROVIDER=tcp" },
	{ "export I_MPI_FABRICS=shm:dapl\n", HB_FABRIC_RDMA,
	  "I_MPI_FABRICS=shm:dapl" },
	{ "export I_MPI_FABRICS=shm:tcp\n", HB_FABRIC_TCP,
	  "I_MPI_FABRICS=shm:tcp" },
	/* MVAPICH2 */
	{ "export MV2_IBA_HCA=mlx5_0\n", HB_FABRIC_RDMA, "MV2_IBA_HCA=mlx5_0" },
	{ "export MV2_USE_RoCE=1\n", HB_FABRIC_RDMA, "MV2_USE_RoCE=1" },
	{ "export MV2_ENABLE_AFFINITY=0\n", HB_FABRIC_AUTO, NULL },
	/* nothing about the network */
	{ "export NCCL_DEBUG=INFO OMP_NUM_THREADS=4\n", HB_FABRIC_AUTO, NULL },
	{ "", HB_FABRIC_AUTO, NULL },
};

static void test_rules(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rule_cases) / sizeof(rule_cases[0]);
	     i++) {
		const struct rule_case *c = &rule_cases[i];
		char script[512];
		struct hb_jobspec s;

		snprintf(script, sizeof(script),
			 "#!/bin/bash\n#SBATCH -N 2\n\n%ssrun ./a.out\n",
			 c->exports);
		parse(&s, script);
		if (s.fabric != c->fabric)
			fail_msg("case %zu: fabric %s, want %s\n%s", i,
				 hb_fabric_name(s.fabric),
				 hb_fabric_name(c->fabric), script);
		if (c->why) {
			assert_has(s.fabric_why, c->why);
			assert_true(s.fabric_inferred);
			assert_true(hb_jobspec_has(&s, HB_F_FABRIC));
		} else {
			assert_null(s.fabric_why);
			assert_false(hb_jobspec_has(&s, HB_F_FABRIC));
		}
		hb_jobspec_free(&s);
	}
}

/* A later export of the same variable wins, as in the shell. */
static void test_later_export_wins(void **state)
{
	struct hb_jobspec s;

	(void)state;
	parse(&s, "#!/bin/bash\nexport NCCL_IB_DISABLE=1\n"
		  "export NCCL_IB_DISABLE=0\nexport NCCL_IB_HCA=mlx5_2\n"
		  "srun x\n");
	assert_int_equal(s.fabric, HB_FABRIC_RDMA);
	assert_has(s.fabric_why, "NCCL_IB_HCA=mlx5_2 at job.sh:4");
	hb_jobspec_free(&s);
}

/* ---- said in words ---------------------------------------------------- */

static void test_explicit_beats_inference(void **state)
{
	struct hb_jobspec s;
	struct hb_err err = { 0 };
	struct hb_sbatch_opts o = { 0 };
	static const char bad[] = "#!/bin/bash\n"
				  "#SBATCH --hpcbridge-fabric=fast\nsrun x\n";

	(void)state;
	parse(&s, "#!/bin/bash\n#SBATCH --hpcbridge-fabric=tcp\n"
		  "export UCX_NET_DEVICES=mlx5_0:1\nsrun x\n");
	assert_int_equal(s.fabric, HB_FABRIC_TCP);
	assert_string_equal(s.fabric_why, "--hpcbridge-fabric=tcp at job.sh:2");
	assert_false(s.fabric_inferred);
	assert_int_equal(s.prov[HB_F_FABRIC].kind, HB_PROV_FILE);
	assert_int_equal(s.prov[HB_F_FABRIC].line, 2);
	hb_jobspec_free(&s);

	/* auto said in words stops the inference too */
	parse(&s, "#!/bin/bash\n#SBATCH --hpcbridge-fabric=AUTO\n"
		  "export NCCL_IB_HCA=mlx5_0\nsrun x\n");
	assert_int_equal(s.fabric, HB_FABRIC_AUTO);
	assert_true(hb_jobspec_has(&s, HB_F_FABRIC));
	hb_jobspec_free(&s);

	/* and beats a --constraint feature */
	parse(&s, "#!/bin/bash\n#SBATCH --constraint=ib\n"
		  "#SBATCH --hpcbridge-fabric=tcp\nsrun x\n");
	assert_int_equal(s.fabric, HB_FABRIC_TCP);
	hb_jobspec_free(&s);

	/* a --constraint feature beats the variables, and is not inferred */
	parse(&s, "#!/bin/bash\n#SBATCH --constraint=haswell&IB\n"
		  "export NCCL_IB_DISABLE=1\nsrun x\n");
	assert_int_equal(s.fabric, HB_FABRIC_RDMA);
	assert_string_equal(s.fabric_why, "--constraint=haswell&IB at job.sh:2");
	assert_false(s.fabric_inferred);
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/bash\n#SBATCH --constraint=haswell\nsrun x\n");
	assert_int_equal(s.fabric, HB_FABRIC_AUTO);
	hb_jobspec_free(&s);

	/* on the command line */
	{
		const char *argv[] = { "--hpcbridge-fabric=rdma", NULL };

		o.argv = argv;
		o.argc = 1;
		hb_jobspec_init(&s, "job.sh");
		assert_int_equal(hb_sbatch_parse("#!/bin/sh\nsrun x\n", 17,
						 "job.sh", &o, &s, &err),
				 0);
		assert_int_equal(s.fabric, HB_FABRIC_RDMA);
		assert_string_equal(s.fabric_why, "--hpcbridge-fabric=rdma");
		assert_int_equal(s.prov[HB_F_FABRIC].kind, HB_PROV_CLI);
		hb_jobspec_free(&s);
		o.argv = NULL;
		o.argc = 0;
	}

	/* a value it does not know is refused, naming what is wanted */
	hb_jobspec_init(&s, "job.sh");
	assert_int_equal(hb_sbatch_parse(bad, strlen(bad), "job.sh", &o, &s,
					 &err),
			 HB_EINVAL);
	assert_has(err.msg, "--hpcbridge-fabric");
	assert_has(err.msg, "want rdma, tcp or auto");
	hb_jobspec_free(&s);
}

/* translate --to sbatch writes --hpcbridge-fabric again, and leaves an
 * inferred fabric to the variables it keeps. */
static void test_emit(void **state)
{
	struct hb_jobspec s, b;
	struct hb_err err = { 0 };
	struct hb_buf out;
	struct hb_report rep;

	(void)state;
	parse(&s, "#!/bin/bash\n#SBATCH --hpcbridge-fabric=rdma\nsrun x\n");
	hb_buf_init(&out, 0);
	hb_report_init(&rep, "sbatch");
	assert_int_equal(hb_sbatch_emit(&s, &out, &rep, &err), 0);
	assert_has(out.data, "#SBATCH --hpcbridge-fabric=rdma\n");
	assert_int_equal(rep.fate[HB_F_FABRIC].kind, HB_FATE_MAPPED);
	hb_jobspec_init(&b, "out.sh");
	assert_int_equal(hb_sbatch_parse(out.data, out.len, "out.sh", NULL, &b,
					 &err),
			 0);
	assert_int_equal(b.fabric, HB_FABRIC_RDMA);
	assert_false(b.fabric_inferred);
	hb_jobspec_free(&b);
	hb_report_free(&rep);
	hb_buf_free(&out);
	hb_jobspec_free(&s);

	parse(&s, "#!/bin/bash\nexport NCCL_IB_DISABLE=1\nsrun x\n");
	hb_buf_init(&out, 0);
	hb_report_init(&rep, "sbatch");
	assert_int_equal(hb_sbatch_emit(&s, &out, &rep, &err), 0);
	assert_null(strstr(out.data, "hpcbridge-fabric"));
	assert_int_equal(rep.fate[HB_F_FABRIC].kind, HB_FATE_CARRIED);
	assert_string_equal(rep.fate[HB_F_FABRIC].target, "script body");
	hb_report_free(&rep);
	hb_buf_free(&out);
	hb_jobspec_free(&s);
}

/* ---- JSON ------------------------------------------------------------- */

static int from_text(const char *json, struct hb_jobspec *s,
		     struct hb_err *err)
{
	cJSON *doc = cJSON_Parse(json);
	int rc;

	memset(err, 0, sizeof(*err));
	assert_non_null(doc);
	hb_jobspec_init(s, "job.json");
	rc = hb_jobspec_from_json(doc, s, err);
	cJSON_Delete(doc);
	return rc;
}

static void test_json(void **state)
{
	struct hb_jobspec s, b;
	struct hb_err err = { 0 };
	cJSON *j;
	char long_why[400], json[600];

	(void)state;
	parse(&s, "#!/bin/bash\n#SBATCH -N 2\nexport UCX_NET_DEVICES=mlx5_0:1\n"
		  "module load mvapich2/2.3.7\nsrun x\n");
	assert_int_equal(s.mpi, HB_MPI_MVAPICH2);
	j = hb_jobspec_to_json(&s);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "fabric")),
			    "rdma");
	assert_string_equal(
		cJSON_GetStringValue(cJSON_GetObjectItem(j, "fabric_why")),
		"UCX_NET_DEVICES=mlx5_0:1 at job.sh:3");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "fabric_inferred")));
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "mpi")),
			    "MVAPICH2");
	hb_jobspec_init(&b, "back");
	assert_int_equal(hb_jobspec_from_json(j, &b, &err), 0);
	assert_int_equal(b.fabric, HB_FABRIC_RDMA);
	assert_true(b.fabric_inferred);
	assert_string_equal(b.fabric_why, s.fabric_why);
	assert_int_equal(b.mpi, HB_MPI_MVAPICH2);
	/* read back, the body's variables do not decide again */
	b.script = "export NCCL_IB_DISABLE=1\n";
	b.script_len = (uint32_t)strlen(b.script);
	assert_int_equal(hb_jobspec_scan_body(&b, &err), 0);
	assert_int_equal(b.fabric, HB_FABRIC_RDMA);
	hb_jobspec_free(&b);
	cJSON_Delete(j);
	hb_jobspec_free(&s);

	/* hostile values are refused, naming the key */
	assert_int_equal(from_text("{\"fabric\":\"infiniband\"}", &s, &err),
			 HB_EINVAL);
	assert_has(err.msg, "fabric: must be auto, tcp or rdma");
	assert_int_equal(s.fabric, HB_FABRIC_AUTO);
	hb_jobspec_free(&s);
	assert_int_equal(from_text("{\"fabric\":1}", &s, &err), HB_EINVAL);
	hb_jobspec_free(&s);
	assert_int_equal(from_text("{\"fabric\":\"rdma\",\"fabric_why\":"
				   "\"x\\n\\u001b[31mforged log line\"}",
				   &s, &err),
			 HB_EINVAL);
	assert_has(err.msg, "fabric_why: must be one printable line");
	assert_null(s.fabric_why);
	hb_jobspec_free(&s);
	memset(long_why, 'a', sizeof(long_why) - 1);
	long_why[sizeof(long_why) - 1] = '\0';
	snprintf(json, sizeof(json), "{\"fabric_why\":\"%s\"}", long_why);
	assert_int_equal(from_text(json, &s, &err), HB_EINVAL);
	assert_has(err.msg, "at most 256 bytes");
	hb_jobspec_free(&s);
	assert_int_equal(from_text("{\"fabric_inferred\":\"yes\"}", &s, &err),
			 HB_EINVAL);
	hb_jobspec_free(&s);
	assert_int_equal(from_text("{\"mpi\":\"LAM\"}", &s, &err), HB_EINVAL);
	assert_has(err.msg, "OpenMPI, Intel, MPICH or MVAPICH2");
	hb_jobspec_free(&s);
}

/* The Slurm plugin's jobspec has no body: the variables are read from
 * the script in a scratch jobspec, and only the fabric comes over. */
static void test_from_script(void **state)
{
	struct hb_jobspec s;

	(void)state;
	hb_jobspec_init(&s, "job_desc");
	assert_int_equal(hb_jobspec_fabric_from_script(
				 &s, "#!/bin/sh\nexport NCCL_IB_HCA=mlx5_0\n"
				     "srun x\n"),
			 0);
	assert_int_equal(s.fabric, HB_FABRIC_RDMA);
	assert_true(s.fabric_inferred);
	assert_int_equal(s.nenv, 0);
	assert_int_equal(s.nmpi_lines, 0);
	hb_jobspec_free(&s);

	/* a fabric said in words stays */
	hb_jobspec_init(&s, "job_desc");
	assert_int_equal(hb_jobspec_set_fabric(&s, "tcp", "--hpcbridge-fabric=tcp",
					       (struct hb_prov){ HB_PROV_DERIVED,
								 0 }),
			 0);
	assert_int_equal(hb_jobspec_fabric_from_script(
				 &s, "export NCCL_IB_HCA=mlx5_0\n"),
			 0);
	assert_int_equal(s.fabric, HB_FABRIC_TCP);
	assert_int_equal(hb_jobspec_set_fabric(&s, "token-ring", "x",
					       (struct hb_prov){ HB_PROV_DERIVED,
								 0 }),
			 HB_EINVAL);
	assert_int_equal(s.fabric, HB_FABRIC_TCP);
	hb_jobspec_free(&s);

	/* the job description's constraint */
	hb_jobspec_init(&s, "job_desc");
	s.constraint = "rdma";
	assert_int_equal(hb_jobspec_fabric_from_script(&s, NULL), 0);
	assert_int_equal(s.fabric, HB_FABRIC_RDMA);
	assert_string_equal(s.fabric_why, "--constraint=rdma");
	hb_jobspec_free(&s);
}

/* ---- the fidelity report ---------------------------------------------- */

static char *report_text(const struct hb_jobspec *s, const char *kind)
{
	struct hb_report rep;
	struct hb_buf out;

	hb_report_init(&rep, kind);
	hb_buf_init(&out, 0);
	assert_int_equal(hb_report_write_text(s, &rep, &out), 0);
	hb_report_free(&rep);
	return out.data;
}

static void test_report(void **state)
{
	struct hb_jobspec s;
	struct hb_report rep;
	char *t;
	cJSON *j;

	(void)state;
	/* where the need came from, under the line that said it */
	parse(&s, "#!/bin/bash\nexport NCCL_IB_DISABLE=1\nsrun x\n");
	t = report_text(&s, "MPIJob");
	assert_has(t, "job.sh:2       export NCCL_IB_DISABLE=1");
	assert_has(t, "    fabric           carried  placement (fabric tcp) "
		      "(NCCL_IB_DISABLE=1 at job.sh:2)\n");
	free(t);
	hb_jobspec_free(&s);

	/* the script's MPI against its image's */
	parse(&s, "#!/bin/bash\n#SBATCH --container=docker.io/mpich/mpich:4\n"
		  "module load openmpi/4.1.5\nmpirun ./a.out\n");
	assert_int_equal(s.mpi, HB_MPI_OPENMPI);
	t = report_text(&s, "MPIJob");
	assert_has(t, "warning: the script runs Open MPI but its image "
		      "docker.io/mpich/mpich:4 holds MPICH: Open MPI's ABI is "
		      "not MPICH's");
	free(t);
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/bash\n#SBATCH --container=intel/oneapi-hpckit\n"
		  "module load mpich/4.1\nmpiexec ./a.out\n");
	t = report_text(&s, "sbatch");
	assert_has(t, "both keep the MPICH ABI");
	free(t);
	/* in the JSON form too */
	hb_report_init(&rep, "sbatch");
	j = hb_report_to_json(&s, &rep);
	assert_has(cJSON_GetStringValue(
			   cJSON_GetArrayItem(cJSON_GetObjectItem(j, "warnings"), 0)),
		   "both keep the MPICH ABI");
	cJSON_Delete(j);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* hostfiles: Open MPI 5 documents slots= only; Hydra host:N */
	parse(&s, "#!/bin/bash\nmodule load openmpi/5.0.3\n"
		  "for h in $(scontrol show hostnames); do\n"
		  "  echo \"$h slots=4 max_slots=4\" >> hosts\ndone\n"
		  "mpirun --hostfile hosts ./a.out\n");
	t = report_text(&s, "MPIJob");
	assert_has(t, "Open MPI 5 reads hostfiles through PRRTE");
	assert_has(t, "max_slots=");
	free(t);
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/bash\nmodule load openmpi/4.1.5\n"
		  "echo \"n1 slots=4 max_slots=4\" > hosts\n"
		  "mpirun --hostfile hosts ./a.out\n");
	t = report_text(&s, "MPIJob");
	assert_null(strstr(t, "warning"));
	free(t);
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/bash\nmodule load mvapich2/2.3.7\n"
		  "echo \"n1 slots=4\" > hosts\nmpiexec -f hosts ./a.out\n");
	t = report_text(&s, "MPIJob");
	assert_has(t, "whose machinefiles say host:N");
	free(t);
	hb_jobspec_free(&s);
}

/* ---- MPI flavours ----------------------------------------------------- */

struct flavour_case {
	const char *body;
	int mpi;
};

static const struct flavour_case flavour_cases[] = {
	{ "module load mvapich2/2.3.7-gcc\nsrun ./a\n", HB_MPI_MVAPICH2 },
	{ "module load openmpi/4.1.5\nmpirun ./a\n", HB_MPI_OPENMPI },
	{ "module load intel-oneapi-mpi/2021.9.0\nmpirun ./a\n", HB_MPI_INTEL },
	{ "module load mpich/4.1\nmpiexec ./a\n", HB_MPI_MPICH },
	/* variables only one MPI reads */
	{ "export MV2_ENABLE_AFFINITY=0\nmpirun ./a\n", HB_MPI_MVAPICH2 },
	{ "export I_MPI_PIN=1\nmpirun ./a\n", HB_MPI_INTEL },
	{ "export OMPI_MCA_btl=self,vader\nmpirun ./a\n", HB_MPI_OPENMPI },
	{ "export HYDRA_LAUNCHER=ssh\nmpiexec ./a\n", HB_MPI_MPICH },
	/* launcher flags */
	{ "mpirun --mca btl ^tcp -np 4 ./a\n", HB_MPI_OPENMPI },
	{ "mpirun -x LD_LIBRARY_PATH --map-by node ./a\n", HB_MPI_OPENMPI },
	{ "mpiexec -ppn 4 -genv OMP_NUM_THREADS 2 ./a\n", HB_MPI_MPICH },
	{ "module load intel-mpi/2019\nmpiexec -ppn 4 ./a\n", HB_MPI_INTEL },
	{ "export MV2_USE_CUDA=1\nmpiexec -ppn 4 ./a\n", HB_MPI_MVAPICH2 },
	{ "srun --mpi=pmix_v3 ./a\n", HB_MPI_OPENMPI },
	{ "srun --mpi=pmi2 ./a\n", HB_MPI_MPICH },
	/* the launcher's own name beats everything */
	{ "export I_MPI_PIN=1\nmpiexec.hydra ./a\n", HB_MPI_INTEL },
	{ "module load mpich\nprterun ./a\n", HB_MPI_OPENMPI },
	/* a module beats a hint */
	{ "module load openmpi\nsrun --mpi=pmi2 ./a\n", HB_MPI_OPENMPI },
	/* the program's own flags are not the launcher's */
	{ "mpirun ./a -ppn 4\n", HB_MPI_UNKNOWN },
	{ "srun ./a\n", HB_MPI_UNKNOWN },
};

static void test_flavours(void **state)
{
	(void)state;
	for (size_t i = 0;
	     i < sizeof(flavour_cases) / sizeof(flavour_cases[0]); i++) {
		char script[512];
		struct hb_jobspec s;

		snprintf(script, sizeof(script), "#!/bin/bash\n%s",
			 flavour_cases[i].body);
		parse(&s, script);
		if (s.mpi != flavour_cases[i].mpi)
			fail_msg("case %zu: %s, want %s\n%s", i,
				 hb_mpi_impl_name(s.mpi)
					 ? hb_mpi_impl_name(s.mpi)
					 : "unknown",
				 hb_mpi_impl_name(flavour_cases[i].mpi)
					 ? hb_mpi_impl_name(
						   flavour_cases[i].mpi)
					 : "unknown",
				 script);
		hb_jobspec_free(&s);
	}
}

static void test_images(void **state)
{
	struct hb_jobspec s;

	(void)state;
	assert_int_equal(hb_mpi_from_image("mpioperator/openmpi:0.5.0"),
			 HB_MPI_OPENMPI);
	assert_int_equal(hb_mpi_from_image("docker.io/mpich/mpich:4.1"),
			 HB_MPI_MPICH);
	assert_int_equal(hb_mpi_from_image("mpioperator/intel:latest"),
			 HB_MPI_INTEL);
	assert_int_equal(hb_mpi_from_image("intel/oneapi-hpckit:2024"),
			 HB_MPI_INTEL);
	assert_int_equal(hb_mpi_from_image("ghcr.io/x/MVAPICH2-gdr:2.3.7"),
			 HB_MPI_MVAPICH2);
	assert_int_equal(hb_mpi_from_image("nvcr.io/nvidia/pytorch:24.01"),
			 HB_MPI_UNKNOWN);
	assert_int_equal(hb_mpi_from_image("my-compiler:1"), HB_MPI_UNKNOWN);
	assert_int_equal(hb_mpi_from_image(NULL), HB_MPI_UNKNOWN);

	/* a script that says nothing takes its image's MPI */
	parse(&s, "#!/bin/bash\n#SBATCH --container=mvapich2:2.3\nsrun ./a\n");
	assert_int_equal(s.mpi, HB_MPI_MVAPICH2);
	hb_jobspec_free(&s);
	/* one that says runs its own */
	parse(&s, "#!/bin/bash\n#SBATCH --container=mvapich2:2.3\n"
		  "module load openmpi\nsrun ./a\n");
	assert_int_equal(s.mpi, HB_MPI_OPENMPI);
	hb_jobspec_free(&s);

	/* families and ABIs */
	assert_int_equal(hb_mpi_family(HB_MPI_MVAPICH2), HB_MPI_MPICH);
	assert_int_equal(hb_mpi_family(HB_MPI_INTEL), HB_MPI_INTEL);
	assert_true(hb_mpi_abi_compatible(HB_MPI_MPICH, HB_MPI_INTEL));
	assert_true(hb_mpi_abi_compatible(HB_MPI_MVAPICH2, HB_MPI_MPICH));
	assert_true(hb_mpi_abi_compatible(HB_MPI_UNKNOWN, HB_MPI_OPENMPI));
	assert_false(hb_mpi_abi_compatible(HB_MPI_OPENMPI, HB_MPI_MPICH));
	assert_false(hb_mpi_abi_compatible(HB_MPI_INTEL, HB_MPI_OPENMPI));
	assert_int_equal(hb_mpi_impl_parse("MVAPICH2"), HB_MPI_MVAPICH2);
	assert_int_equal(hb_mpi_impl_parse("mvapich2"), HB_MPI_UNKNOWN);
	assert_int_equal(hb_fabric_parse("RDMA"), HB_FABRIC_RDMA);
	assert_int_equal(hb_fabric_parse("ib"), -1);
	assert_null(hb_fabric_name((enum hb_fabric)3));
}

/* ---- real scripts ----------------------------------------------------- */

struct real_case {
	const char *path; /* under ../shared or the source tree */
	bool shared;
	int mpi;
	int fabric;
	const char *why;
};

static const struct real_case real_cases[] = {
	/* module load gromacs/openmpi/intel/2020.4; mpirun */
	{ "realworld/gmx_commented_gres.sbatch", true, HB_MPI_OPENMPI,
	  HB_FABRIC_AUTO, NULL },
	{ "realworld/idris_ntasks2_pernode1.sbatch", true, HB_MPI_OPENMPI,
	  HB_FABRIC_AUTO, NULL },
	/* lammps/...-intel-mpi-2021.5.1: built against Intel MPI */
	{ "realworld/lsu_lammps_mpi.sbatch", true, HB_MPI_INTEL,
	  HB_FABRIC_AUTO, NULL },
	/* Cray's MPICH: MPICH_GPU_SUPPORT_ENABLED=1 */
	{ "realworld/lumi_hybrid_doc.sbatch", true, HB_MPI_MPICH,
	  HB_FABRIC_AUTO, NULL },
	{ "realworld/openfoam_zsh_mpiexec.sbatch", true, HB_MPI_OPENMPI,
	  HB_FABRIC_AUTO, NULL },
	/* mpirun --mca btl ^tcp: Open MPI's flag */
	{ "realworld/mdscaling_lammps14.sbatch", true, HB_MPI_OPENMPI,
	  HB_FABRIC_AUTO, NULL },
	/* PrgEnv-cray and srun: nothing says which MPI */
	{ "realworld/archer2_mitgcm_10nodes.sbatch", true, HB_MPI_UNKNOWN,
	  HB_FABRIC_AUTO, NULL },
	/* the project's corpus */
	{ "tests/corpus/sbatch/01-openmpi-hello.sh", false, HB_MPI_OPENMPI,
	  HB_FABRIC_RDMA, "UCX_TLS=rc,sm,self at" },
	{ "tests/corpus/sbatch/02-intel-mpi-wrf.sh", false, HB_MPI_INTEL,
	  HB_FABRIC_RDMA, "FI_PROVIDER=mlx at" },
	{ "tests/corpus/sbatch/04-pytorch-ddp-a100.sh", false, HB_MPI_OPENMPI,
	  HB_FABRIC_RDMA, "NCCL_IB_HCA=mlx5_0,mlx5_1 at" },
	{ "tests/corpus/sbatch/09-lammps-kokkos.sh", false, HB_MPI_OPENMPI,
	  HB_FABRIC_RDMA, "UCX_TLS=rc,cuda_copy,cuda_ipc,sm,self at" },
	{ "tests/corpus/sbatch/03-mpich-hydro.sh", false, HB_MPI_MPICH,
	  HB_FABRIC_AUTO, NULL },
};

static void test_real_scripts(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(real_cases) / sizeof(real_cases[0]);
	     i++) {
		const struct real_case *c = &real_cases[i];
		const char *path = c->shared ? hb_test_shared_path(c->path)
					     : hb_test_src_path(c->path);
		size_t len;
		char *text = hb_test_read_file(path, &len);
		struct hb_jobspec s;
		struct hb_err err = { 0 };
		struct hb_sbatch_opts o = { 0 };

		hb_jobspec_init(&s, "job.sh");
		if (hb_sbatch_parse(text, len, "job.sh", &o, &s, &err))
			fail_msg("%s: %s", c->path, err.msg);
		if (s.mpi != c->mpi || s.fabric != c->fabric)
			fail_msg("%s: %s over %s, want %s over %s", c->path,
				 hb_mpi_impl_name(s.mpi)
					 ? hb_mpi_impl_name(s.mpi)
					 : "unknown",
				 hb_fabric_name(s.fabric),
				 hb_mpi_impl_name(c->mpi)
					 ? hb_mpi_impl_name(c->mpi)
					 : "unknown",
				 hb_fabric_name(c->fabric));
		if (c->why)
			assert_has(s.fabric_why, c->why);
		hb_jobspec_free(&s);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_later_export_wins),
		cmocka_unit_test(test_explicit_beats_inference),
		cmocka_unit_test(test_emit),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_from_script),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_flavours),
		cmocka_unit_test(test_images),
		cmocka_unit_test(test_real_scripts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
