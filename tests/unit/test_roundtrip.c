/*
 * test_roundtrip.c - property: for generated sbatch scripts,
 *   sbatch -> jobspec -> MPIJob -> jobspec       gives the same jobspec,
 *   sbatch -> jobspec -> TrainJob -> jobspec     likewise,
 *   sbatch -> jobspec -> sbatch -> jobspec       likewise,
 *   and a manifest read back and emitted again is the same manifest.
 * "The same" compares the jobspec's JSON form, minus where it came from.
 * A failure prints the seed and the script so it can be replayed with
 * HB_ROUNDTRIP_SEED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

/* xorshift64*: deterministic across platforms. */
static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ULL) >> 33) % n;
}

static const char *pick(const char *const *v, size_t n)
{
	return v[rnd((uint32_t)n)];
}

#define PICK(v) pick(v, sizeof(v) / sizeof((v)[0]))

static void gen_script(struct hb_buf *b)
{
	static const char *const names[] = {"lammps", "Big Run #2", "wrf_4km",
					    "a", "train-resnet.v2",
					    "__x__", "Job With Spaces"};
	static const char *const parts[] = {"debug", "gpu", "long"};
	static const char *const times[] = {"30", "1:30", "02:00:00",
					    "1-0", "2-12:30", "3-01:02:03",
					    "UNLIMITED", "45:00"};
	static const char *const mems[] = {"--mem=4G", "--mem=1500",
					   "--mem-per-cpu=2G",
					   "--mem-per-cpu=512M",
					   "--mem-per-gpu=40G", "--mem=0"};
	static const char *const gpus[] = {"--gres=gpu:2", "--gres=gpu:a100:4",
					   "--gpus-per-node=h100:8",
					   "--gpus=4", "--gpus-per-task=1"};
	static const char *const mails[] = {"END", "BEGIN,END,FAIL", "ALL",
					    "FAIL"};
	static const char *const mods[] = {"openmpi/4.1.5",
					   "intel-oneapi-mpi/2021",
					   "mpich/4.1", "gcc/12"};
	static const char *const launch[] = {"srun ./a.out",
					     "mpirun -np $SLURM_NTASKS ./b",
					     "mpiexec ./c --x 1",
					     "srun --mpi=pmix python t.py"};
	uint32_t nodes = 1 + rnd(8);

	hb_buf_reset(b);
	hb_buf_puts(b, "#!/bin/bash\n");
	if (rnd(4))
		hb_buf_printf(b, "#SBATCH --job-name=\"%s\"\n", PICK(names));
	if (rnd(2))
		hb_buf_printf(b, "#SBATCH -A acct%u\n", rnd(100));
	if (rnd(2))
		hb_buf_printf(b, "#SBATCH --partition=%s\n", PICK(parts));
	if (rnd(3) == 0)
		hb_buf_puts(b, "#SBATCH --qos=high\n");
	if (rnd(4)) {
		if (rnd(4) == 0)
			hb_buf_printf(b, "#SBATCH --nodes=%u-%u\n", nodes,
				      nodes + rnd(4));
		else
			hb_buf_printf(b, "#SBATCH -N %u\n", nodes);
	}
	switch (rnd(3)) {
	case 0:
		hb_buf_printf(b, "#SBATCH --ntasks-per-node=%u\n", 1 + rnd(16));
		break;
	case 1:
		hb_buf_printf(b, "#SBATCH --ntasks=%u\n", nodes * (1 + rnd(8)));
		break;
	}
	if (rnd(2))
		hb_buf_printf(b, "#SBATCH --cpus-per-task=%u\n", 1 + rnd(8));
	int has_gpus = rnd(2);
	const char *mem = PICK(mems);

	if (has_gpus) {
		const char *g = PICK(gpus);

		/* sbatch wants at least one GPU per node for --gpus. */
		if (!strcmp(g, "--gpus=4"))
			hb_buf_printf(b, "#SBATCH --gpus=%u\n", 2 * nodes);
		else if (!strcmp(g, "--gpus-per-task=1") && !strstr(b->data, "--ntasks="))
			/* ... and a task count for --gpus-per-task. */
			hb_buf_printf(b, "#SBATCH --ntasks=%u %s\n", nodes, g);
		else
			hb_buf_printf(b, "#SBATCH %s\n", g);
	}
	/* sbatch refuses memory per GPU without a GPU request. */
	if (rnd(4) && (has_gpus || strstr(mem, "per-gpu") == NULL))
		hb_buf_printf(b, "#SBATCH %s\n", mem);
	const char *t = rnd(4) ? PICK(times) : NULL;

	if (t)
		hb_buf_printf(b, "#SBATCH --time=%s\n", t);
	/* --time-min may not exceed the time limit. */
	if (rnd(5) == 0 && !(t && !strcmp(t, "1:30")))
		hb_buf_puts(b, "#SBATCH --time-min=20\n");
	if (rnd(4) == 0)
		hb_buf_puts(b, "#SBATCH --constraint=ib\n");
	if (rnd(5) == 0)
		hb_buf_puts(b, "#SBATCH --exclusive\n");
	if (rnd(5) == 0)
		hb_buf_printf(b, "#SBATCH --array=0-%u%%%u\n", rnd(6),
			      1 + rnd(3));
	if (rnd(4) == 0)
		hb_buf_printf(b, "#SBATCH --dependency=afterok:%u\n",
			      1000 + rnd(9000));
	if (rnd(3) == 0)
		hb_buf_printf(b, "#SBATCH --mail-type=%s\n#SBATCH "
				 "--mail-user=u%u@example.org\n",
			      PICK(mails), rnd(50));
	if (rnd(4) == 0)
		hb_buf_puts(b, rnd(2) ? "#SBATCH --requeue\n"
				      : "#SBATCH --no-requeue\n");
	if (rnd(3) == 0)
		hb_buf_puts(b, "#SBATCH --output=out-%j.log "
			       "--error=err-%j.log\n");
	if (rnd(4) == 0)
		hb_buf_puts(b, "#SBATCH --chdir=/scratch/run\n");
	if (rnd(5) == 0)
		hb_buf_puts(b, "#SBATCH --signal=B:USR1@120\n");
	if (rnd(5) == 0)
		hb_buf_puts(b, "#SBATCH --comment=\"nightly run\"\n");
	if (rnd(6) == 0)
		hb_buf_puts(b, "#SBATCH --begin=2027-01-01T08:00:00\n");
	if (rnd(6) == 0)
		hb_buf_puts(b, "#SBATCH --licenses=matlab:1\n");
	if (rnd(5) == 0)
		hb_buf_puts(b, "#SBATCH --hpcbridge-checkpoint=/ckpt/x\n");
	hb_buf_puts(b, "\n");
	if (rnd(2))
		hb_buf_printf(b, "module load %s\n", PICK(mods));
	if (rnd(3) == 0)
		hb_buf_puts(b, "export NCCL_DEBUG=INFO\n");
	hb_buf_printf(b, "%s\n", PICK(launch));
	if (rnd(3) == 0)
		hb_buf_puts(b, "echo done > result-$SLURM_JOB_ID.txt\n");
}


static struct hb_config cfg;

static void fail_with(const char *what, const struct hb_buf *script,
		      const cJSON *a, const cJSON *b)
{
	struct hb_buf x, y;

	hb_buf_init(&x, 0);
	hb_buf_init(&y, 0);
	hb_doc_write_json(a, &x);
	hb_doc_write_json(b, &y);
	fail_msg("%s differs (seed %llu)\n--- script\n%s\n--- before\n%s\n"
		 "--- after\n%s",
		 what, (unsigned long long)rng_state, script->data, x.data,
		 y.data);
}

/* Through a manifest of the given kind and back. */
static void via_manifest(const struct hb_jobspec *a, int kind,
			 const struct hb_buf *script)
{
	char context[64 + 8192];

	snprintf(context, sizeof(context), "seed %llu\n%s",
		 (unsigned long long)rng_state, script->data);
	hb_test_manifest_round_trip(a, &cfg, kind, -1, NULL, context);
}

static void via_sbatch(const struct hb_jobspec *a,
		       const struct hb_buf *script, const cJSON *want)
{
	struct hb_jobspec b;
	struct hb_err err = {0};
	struct hb_buf out;
	cJSON *got;

	hb_buf_init(&out, 0);
	assert_int_equal(hb_sbatch_emit(a, &out, NULL, &err), 0);
	hb_jobspec_init(&b, "back.sh");
	if (hb_sbatch_parse(out.data, out.len, "back.sh", NULL, &b, &err))
		fail_msg("re-parse: %s\n%s", err.msg, out.data);
	got = hb_test_canon(&b);
	/* The emitted script has no header lines, so only the script text
	 * itself may differ: compare it separately. */
	cJSON_DeleteItemFromObject(got, "script");
	cJSON *w = cJSON_Duplicate(want, 1);

	cJSON_DeleteItemFromObject(w, "script");
	if (!cJSON_Compare(w, got, 1))
		fail_with("sbatch round trip", script, w, got);
	cJSON_Delete(w);
	cJSON_Delete(got);
	hb_buf_free(&out);
	hb_jobspec_free(&b);
}

static void test_property(void **state)
{
	const char *env = getenv("HB_ROUNDTRIP_SEED");
	int iterations = env ? 1 : 400;
	struct hb_buf script;

	(void)state;
	assert_int_equal(hb_config_defaults(&cfg), 0);
	hb_buf_init(&script, 0);
	for (int i = 0; i < iterations; i++) {
		struct hb_jobspec a;
		struct hb_err err = {0};
		cJSON *want;

		rng_state = env ? strtoull(env, NULL, 10)
				: 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
		uint64_t seed = rng_state;

		gen_script(&script);
		rng_state = seed; /* report the seed that made the script */
		hb_jobspec_init(&a, "gen.sh");
		if (hb_sbatch_parse(script.data, script.len, "gen.sh", NULL,
				    &a, &err))
			fail_msg("generated script rejected: %s\n%s", err.msg,
				 script.data);
		want = hb_test_canon(&a);
		via_manifest(&a, HB_SRC_MPIJOB, &script);
		via_manifest(&a, HB_SRC_TRAINJOB, &script);
		via_sbatch(&a, &script, want);
		cJSON_Delete(want);
		hb_jobspec_free(&a);
	}
	hb_buf_free(&script);
	hb_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_property),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
