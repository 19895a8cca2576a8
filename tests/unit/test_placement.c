/*
 * test_placement.c - the placement engine: its formulas (start, finish,
 * staging, cost, egress), the six burst policies of config/policies (one
 * test each), premiums, fallbacks, requests, Slurm's time forms, inputs
 * built from scripts, explanations and the decision document.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/placement.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

/* 2026-11-21T08:00:00Z */
#define NOW  1795248000LL
#define H    3600LL
#define UNIT HB_MONEY_UNIT

static void load_policy(const char *rel, struct hb_policy *pol)
{
	struct hb_err err = { 0 };
	size_t len;
	char *text = hb_test_read_file(hb_test_src_path(rel), &len);

	if (hb_policy_parse(text, len, rel, pol, &err))
		fail_msg("%s", err.msg);
	free(text);
}

static void policy_text(const char *text, struct hb_policy *pol)
{
	struct hb_err err = { 0 };

	if (hb_policy_parse(text, strlen(text), "t.yaml", pol, &err))
		fail_msg("%s", err.msg);
}

/* A job parsed from an sbatch script, and its input. */
struct job {
	struct hb_jobspec spec;
	struct hb_place_input in;
};

static void job(struct job *j, const struct hb_policy *pol, const char *script)
{
	struct hb_err err = { 0 };
	struct hb_sbatch_opts o = { 0 };

	hb_jobspec_init(&j->spec, "job.sh");
	if (hb_parse_any(script, strlen(script), "job.sh", &o, &j->spec, &err))
		fail_msg("%s", err.msg);
	if (hb_place_input_from_jobspec(pol, &j->spec, NOW, 0, &j->in, &err))
		fail_msg("%s", err.msg);
	j->in.user = "alice";
}

static void job_free(struct job *j)
{
	hb_jobspec_free(&j->spec);
}

/* The explanation, in a static buffer. */
static const char *explain(const struct hb_policy *pol,
			   const struct hb_place_input *in,
			   const struct hb_place_result *r)
{
	static char text[8192];
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_place_explain(pol, in, r, &b), 0);
	snprintf(text, sizeof(text), "%s", b.data);
	hb_buf_free(&b);
	return text;
}

#define assert_has(hay, needle)                                                \
	do {                                                                   \
		if (!strstr((hay), (needle)))                                  \
			fail_msg("missing '%s' in:\n%s", (needle), (hay));     \
	} while (0)

static bool has_factor(const struct hb_place_result *r, int kind, int side)
{
	for (uint32_t i = 0; i < r->nfactors; i++)
		if (r->factor[i].kind == kind && r->factor[i].side == side)
			return true;
	return false;
}

/* ---- formulas --------------------------------------------------------- */

static const char formula_policy[] =
	"defaults: {prefer: slurm}\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch:\n"
	"      node: {cpus: 64, memory: 256Gi}\n"
	"      rates: {cpu_hour: 0.01, mem_gb_hour: 0.001}\n"
	"kubernetes:\n"
	"  queues: {burst: {}}\n"
	"  node: {cpus: 96, memory: 768Gi}\n"
	"  startup: 2m\n"
	"  rates: {cpu_hour: 0.04, mem_gb_hour: 0.005, per_job: 0.10}\n"
	"data:\n"
	"  - {prefix: /lustre/era5, side: slurm, size: 800G,\n"
	"     egress_per_gb: 0.02, bandwidth: 10Gb/s}\n";

static const char regrid[] = "#!/bin/bash\n"
			     "#SBATCH -J era5-regrid\n"
			     "#SBATCH -A climate\n"
			     "#SBATCH -N 2\n"
			     "#SBATCH --ntasks-per-node=32\n"
			     "#SBATCH --mem=64G\n"
			     "#SBATCH -t 8:00:00\n"
			     "#SBATCH --deadline=2026-11-21T20:00:00\n"
			     "#SBATCH --hpcbridge-data=/lustre/era5/2020\n"
			     "srun ./regrid\n";

static void test_formulas(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	const struct hb_place_alt *s, *k;

	(void)state;
	policy_text(formula_policy, &pol);
	hb_snapshot_init(&snap, NOW);
	assert_int_equal(
		hb_snapshot_set_partition(&snap, "batch", 6 * H + 600, 42, 0),
		0);
	assert_int_equal(
		hb_snapshot_set_queue(&snap, "burst", 1800, 0, 512, 4u << 20),
		0);
	job(&j, &pol, regrid);
	assert_int_equal(j.in.nodes, 2);
	assert_int_equal(j.in.cpus_per_node, 32);
	assert_int_equal(j.in.mem_per_node_mb, 65536);
	assert_int_equal(j.in.time_limit, 8 * H);
	assert_int_equal(j.in.deadline, NOW + 12 * H);
	assert_int_equal(j.in.deadline_line, 8);
	assert_int_equal(hb_place_decide(&pol, &snap, &j.in, &r), 0);

	s = &r.alt[HB_SIDE_SLURM];
	k = &r.alt[HB_SIDE_KUBE];
	/* Slurm: waits 6h10m; the data is there already */
	assert_string_equal(s->resource, "batch");
	assert_int_equal(s->wait, 6 * H + 600);
	assert_int_equal(s->staging, 0);
	assert_int_equal(s->start, NOW + 6 * H + 600);
	assert_int_equal(s->finish, NOW + 14 * H + 600);
	assert_false(s->meets_deadline);
	/* 2 nodes x 8 h x (32 CPUs x 0.01 + 64 GiB x 0.001) = 6.144 */
	assert_int_equal(s->compute, 6144000);
	assert_int_equal(s->cost, 6144000);

	/* Kubernetes: free now; 800 GB at 10 Gb/s is 640 s; start-up 2m */
	assert_true(k->fits_now);
	assert_int_equal(k->wait, 0);
	assert_int_equal(k->moved, 800000000000ULL);
	assert_int_equal(k->staging, 640);
	assert_int_equal(k->start, NOW + 640 + 120);
	assert_int_equal(k->finish, NOW + 640 + 120 + 8 * H);
	assert_true(k->meets_deadline);
	/* 2 x 8 x (32 x 0.04 + 64 x 0.005) + 0.10 = 25.70; egress 800 x
	 * 0.02 = 16.00 */
	assert_int_equal(k->compute, 25700000);
	assert_int_equal(k->egress, 16 * UNIT);
	assert_int_equal(k->cost, 41700000);

	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_DEADLINE);
	assert_string_equal(r.rule->name, "defaults");
	assert_true(has_factor(&r, HB_PF_LATE, HB_SIDE_SLURM));
	assert_true(has_factor(&r, HB_PF_STAGING, HB_SIDE_KUBE));
	assert_false(has_factor(&r, HB_PF_MEMORY, -1));

	/* the same three inputs always give the same result */
	{
		struct hb_place_result r2;

		memset(&r2, 0xa5, sizeof(r2));
		hb_place_decide(&pol, &snap, &j.in, &r2);
		assert_int_equal(
			memcmp(&r, &r2,
			       offsetof(struct hb_place_result, factor)),
			0);
		assert_int_equal(r.nfactors, r2.nfactors);
		for (uint32_t i = 0; i < r.nfactors; i++) {
			assert_int_equal(r.factor[i].kind, r2.factor[i].kind);
			assert_int_equal(r.factor[i].side, r2.factor[i].side);
			assert_int_equal(r.factor[i].value, r2.factor[i].value);
			assert_int_equal(r.factor[i].limit, r2.factor[i].limit);
			assert_ptr_equal(r.factor[i].subject,
					 r2.factor[i].subject);
		}
	}

	/* a will_run answer for this job overrides the partition's */
	j.in.slurm_start = NOW + 60;
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.alt[HB_SIDE_SLURM].wait, 60);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_PREFERRED);

	/* whole nodes are charged whole: 2 x 8 x (64 x 0.01 + 256 x 0.001) */
	j.in.slurm_start = 0;
	j.in.whole_node = true;
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.alt[HB_SIDE_SLURM].compute, 14336000);
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* The example, in words. */
static void test_explanation(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	const char *t;
	static const char script[] = "#!/bin/bash\n"
				     "#SBATCH -J train\n"
				     "#SBATCH -p gpu\n"
				     "#SBATCH --gres=gpu:h100:4\n"
				     "#SBATCH -t 8:00:00\n"
				     "#SBATCH --deadline=now+12hours\n"
				     "#SBATCH --hpcbridge-data=/lustre/era5\n"
				     "python train.py\n";

	(void)state;
	policy_text("slurm:\n"
		    "  partitions:\n"
		    "    gpu:\n"
		    "      node: {cpus: 64, memory: 512Gi, gpus: 4}\n"
		    "      gpu_types: [h100]\n"
		    "      rates: {gpu_hour: 2.50}\n"
		    "kubernetes:\n"
		    "  queues: {burst: {}}\n"
		    "  gpu_types: [h100]\n"
		    "  startup: 10m\n"
		    "  rates: {gpu_hour: {h100: 6.00}, per_job: 5.00}\n"
		    "data:\n"
		    "  - {prefix: /lustre/era5, side: slurm, size: 800G,\n"
		    "     egress_per_gb: 0.0225, bandwidth: 10Gb/s}\n",
		    &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "gpu", 6 * H + 600, 17, 0);
	hb_snapshot_set_queue(&snap, "burst", 0, 0, 1000, 1u << 30);
	hb_snapshot_set_queue_gpus(&snap, "burst", "H100", 4);
	job(&j, &pol, script);
	hb_place_decide(&pol, &snap, &j.in, &r);
	t = explain(&pol, &j.in, &r);
	assert_has(t, "decision: kubernetes (queue burst): Slurm would miss "
		      "the deadline; Kubernetes meets it for $");
	assert_has(t, "rule: defaults (no rule matches): prefer slurm, burst "
		      "allowed, fallback earliest\n");
	assert_has(t, "job: 1 node \xc3\x97 1 CPU, 1Gi (assumed), "
		      "4\xc3\x97h100; runs 8h00m (its time limit); deadline "
		      "in 12h00m (job.sh:6)\n");
	assert_has(t, "Slurm (partition gpu): expected start in 6h10m (17 "
		      "pending), finish in 14h10m, misses the deadline "
		      "(12h00m) by 2h10m; cost $80.00\n");
	/* 4 x 6.00 x 8 + 5.00 + 1 GiB of memory at 0 = 197.00; egress
	 * 800 x 0.0225 = 18.00 */
	assert_has(t, "Kubernetes (queue burst): 4\xc3\x97h100 free now, "
		      "staging 800 GB at 10 Gb/s takes 10m40s, start-up "
		      "10m00s, finish in 8h21m, meets the deadline with 3h39m "
		      "to spare; cost $215.00 (+$18.00 egress)\n");
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* ---- the six burst policies ------------------------------------------- */

/* 1. Burst only when the Slurm queue would make the job miss its
 * deadline. */
static void test_policy_deadline_burst(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	static const char script[] = "#!/bin/bash\n"
				     "#SBATCH -p batch -N 4 -n 128\n"
				     "#SBATCH -t 6:00:00\n"
				     "#SBATCH --deadline=now+10hours\n"
				     "srun ./model\n";

	(void)state;
	load_policy("config/policies/deadline-burst.yaml", &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_queue(&snap, "burst", 0, 0, 4096, 1u << 30);
	job(&j, &pol, script);

	/* Slurm starts in 2h: finishes in 8h, meets the deadline: stays,
	 * although Kubernetes would start now */
	hb_snapshot_set_partition(&snap, "batch", 2 * H, 10, 0);
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_PREFERRED);

	/* Slurm starts in 5h: 11h, misses the 10h deadline: bursts */
	hb_snapshot_set_partition(&snap, "batch", 5 * H, 80, 0);
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_DEADLINE);
	assert_has(explain(&pol, &j.in, &r),
		   "misses the deadline (10h00m) by 1h00m");

	/* the site's cluster may not take it (a root job, a path no volume
	 * maps): it stays on Slurm, late, and says why */
	j.in.kube_refusal = "--output /home/u/x.out is not on a volume the "
			    "cluster mounts";
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_false(r.alt[HB_SIDE_KUBE].can_run);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_SITE);
	assert_has(explain(&pol, &j.in, &r),
		   "cannot run the job: --output /home/u/x.out is not on a "
		   "volume the cluster mounts\n");
	assert_string_equal(hb_place_factor_name(HB_PF_SITE), "site");
	j.in.kube_refusal = NULL;

	/* neither meets it: where it finishes first */
	hb_snapshot_set_queue(&snap, "burst", 9 * H, 5, 0, 0);
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_FALLBACK);
	assert_has(explain(&pol, &j.in, &r),
		   "no side meets the deadline; fallback earliest: Slurm "
		   "finishes first, 1h00m late");
	job_free(&j);

	/* no deadline of its own: the partition's default (1 day) */
	job(&j, &pol, "#!/bin/bash\n#SBATCH -p batch -t 1:00:00\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.deadline, NOW + 86400);
	assert_true(r.deadline_default);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_has(explain(&pol, &j.in, &r),
		   "deadline in 1d00h00m (partition batch's default)");
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* 2. Burst whenever Kubernetes is cheaper, unless the account is on-prem
 * only. */
static void test_policy_cheaper_burst(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	const char *t;

	(void)state;
	load_policy("config/policies/cheaper-burst.yaml", &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "batch", 0, 0, 10);
	hb_snapshot_set_queue(&snap, "spot", 0, 0, 1024, 1u << 30);

	/* 16 CPUs for 4 h: Slurm 16 x 4 x 0.05 + 0.50 + memory; Kubernetes
	 * 16 x 4 x 0.02 + 0.10 + memory: cheaper */
	job(&j, &pol, "#!/bin/bash\n#SBATCH -A bio -n 16 -t 4:00:00\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_CHEAPEST);
	assert_true(r.alt[HB_SIDE_KUBE].cost < r.alt[HB_SIDE_SLURM].cost);
	assert_has(explain(&pol, &j.in, &r), "Kubernetes is the cheaper side");
	job_free(&j);

	/* the on-prem-only account stays, and the explanation says why */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -A defense -n 16 -t 4:00:00\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_ONLY);
	assert_string_equal(r.rule->name, "on-prem-only");
	assert_false(r.alt[HB_SIDE_KUBE].allowed);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_BURST_NEVER);
	t = explain(&pol, &j.in, &r);
	assert_has(t, "not allowed: rule on-prem-only says burst: never");
	assert_has(t, "rule: on-prem-only (config/policies/cheaper-burst.yaml");
	job_free(&j);

	/* cheaper is not enough when it misses the deadline: the spot queue
	 * admits in 6 h, the job must end in 5 */
	hb_snapshot_set_queue(&snap, "spot", 6 * H, 40, 0, 0);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -A bio -n 16 -t 4:00:00\n"
	    "#SBATCH --deadline=now+5hours\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_true(r.alt[HB_SIDE_KUBE].cost < r.alt[HB_SIDE_SLURM].cost);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_DEADLINE);
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* 3. Keep the job where its data is when the data is larger than X, or
 * when staging would eat the deadline's slack. */
static void test_policy_data_gravity(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;

	(void)state;
	load_policy("config/policies/data-gravity.yaml", &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "batch", 0, 0, 100);
	hb_snapshot_set_queue(&snap, "hpc", 0, 0, 100000, 1u << 30);

	/* 800 GB of ERA5, a loose deadline: moving it (11 min, $16) still
	 * leaves Kubernetes cheaper for 16 nodes x 24 h */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=64 -t 1-0\n"
	    "#SBATCH --deadline=now+3days\n"
	    "#SBATCH --hpcbridge-data=/lustre/era5/1990\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.alt[HB_SIDE_KUBE].egress, 16 * UNIT);
	job_free(&j);

	/* 40 TB of genomes: above 1 TB, the job stays with its data */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=64 -t 1-0\n"
	    "#SBATCH --deadline=now+30days\n"
	    "#SBATCH --hpcbridge-data=/lustre/genomes/hg38\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_DATA_TOO_BIG);
	assert_has(explain(&pol, &j.in, &r),
		   "not allowed: 40 TB would move; rule defaults keeps jobs "
		   "with their data above 1 TB");
	job_free(&j);

	/* a measured size overrides the policy's: 2 TB of ERA5 now */
	hb_snapshot_set_data(&snap, "/lustre/era5", 2000000000000ULL);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=64 -t 1-0\n"
	    "#SBATCH --hpcbridge-data=/lustre/era5\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.alt[HB_SIDE_KUBE].moved, 2000000000000ULL);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_DATA_TOO_BIG);
	job_free(&j);
	hb_snapshot_set_data(&snap, "/lustre/era5", 800000000000ULL);

	/* a tight deadline: 8 h of work, 9 h to go, 1 h of slack; staging
	 * 800 GB takes 640 s, more than half of it?  No: 640 < 1800.
	 * With 8h20m to go the slack is 20 min and 640 s is more than
	 * half: stays */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=64 -t 8:00:00\n"
	    "#SBATCH --deadline=now+9hours\n"
	    "#SBATCH --hpcbridge-data=/lustre/era5\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	job_free(&j);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=64 -t 8:00:00\n"
	    "#SBATCH --deadline=now+500minutes\n"
	    "#SBATCH --hpcbridge-data=/lustre/era5\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_STAGING_SLACK);
	assert_has(explain(&pol, &j.in, &r),
		   "not allowed: staging takes 10m40s; rule defaults allows "
		   "50.00% of the deadline's slack (10m00s)");
	job_free(&j);

	/* clinical data never moves */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=64 -t 1-0\n"
	    "#SBATCH --hpcbridge-data=/lustre/clinical/trial7\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_DATA_PINNED);
	assert_has(explain(&pol, &j.in, &r),
		   "data under /lustre/clinical may not leave Slurm");
	job_free(&j);

	/* data in a bucket is staged to Slurm instead: Kubernetes is
	 * cheaper anyway, and a path in no location is said so */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -n 4 -t 1:00:00\n"
	    "#SBATCH --hpcbridge-data=s3://training-sets/v2\n"
	    "#SBATCH --hpcbridge-data=/scratch/tmp\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.alt[HB_SIDE_SLURM].moved, 200000000000ULL);
	assert_int_equal(r.alt[HB_SIDE_SLURM].staging, 800);
	assert_int_equal(r.alt[HB_SIDE_KUBE].moved, 0);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_has(explain(&pol, &j.in, &r),
		   "note: 1 data input in no data location (/scratch/tmp)");
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* 4. Never exceed an account's budget: decide on-prem, or reject when
 * Slurm is impossible. */
static void test_policy_budget_cap(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	const struct hb_snap_spend *sp;
	int nkube = 0;

	(void)state;
	load_policy("config/policies/budget-cap.yaml", &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "batch", 0, 0, 8);
	hb_snapshot_set_queue(&snap, "default", 0, 0, 100000, 1u << 30);
	hb_snapshot_set_spend(&snap, "chem", HB_PERIOD_MONTH, HB_SIDE_KUBE,
			      1900 * UNIT);

	/* 4 nodes x 32 CPUs x 10 h: Kubernetes is cheaper; each job costs
	 * about 41 there, so the account's 100 left buys two */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -A chem -N 4 --ntasks-per-node=32\n"
	    "#SBATCH --mem=64G -t 10:00:00\nsrun x\n");
	for (int i = 0; i < 5; i++) {
		hb_place_decide(&pol, &snap, &j.in, &r);
		assert_int_not_equal(r.target, HB_PLACE_REJECT);
		if (r.target == HB_PLACE_KUBE) {
			nkube++;
		} else {
			assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by,
					 HB_PF_BUDGET);
			assert_has(explain(&pol, &j.in, &r),
				   "not allowed: rule defaults's budget is "
				   "$2,000.00 per month; $");
		}
		assert_int_equal(hb_place_commit(&j.in, &r, &snap), 0);
		sp = hb_snapshot_spend(&snap, "chem", HB_PERIOD_MONTH);
		assert_true(sp->spent[HB_SIDE_KUBE] <= 2000 * UNIT);
	}
	assert_int_equal(nkube, 2);
	/* a period the snapshot tracks is charged too */
	{
		hb_money before, after;

		hb_snapshot_set_spend(&snap, "chem", HB_PERIOD_DAY,
				      HB_SIDE_SLURM, 0);
		hb_place_decide(&pol, &snap, &j.in, &r);
		before = hb_snapshot_spend(&snap, "chem", HB_PERIOD_MONTH)
				 ->spent[r.target];
		assert_int_equal(hb_place_commit(&j.in, &r, &snap), 0);
		after = hb_snapshot_spend(&snap, "chem", HB_PERIOD_MONTH)
				->spent[r.target];
		assert_int_equal(after - before, r.alt[r.target].cost);
		assert_int_equal(hb_snapshot_spend(&snap, "chem", HB_PERIOD_DAY)
					 ->spent[r.target],
				 r.alt[r.target].cost);
		sp = hb_snapshot_spend(&snap, "chem", HB_PERIOD_MONTH);
	}
	/* Slurm spend is charged too, but not counted against the cap */
	assert_true(sp->spent[HB_SIDE_SLURM] > 0);
	job_free(&j);

	/* wider than Slurm's partition, and over budget: rejected */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -A chem -N 8 --ntasks-per-node=32\n"
	    "#SBATCH -t 10:00:00\nsrun x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_REJECT);
	assert_int_equal(r.why, HB_WHY_NO_SIDE);
	assert_int_equal(r.alt[HB_SIDE_SLURM].blocked_by, HB_PF_NODES);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_BUDGET);
	assert_has(explain(&pol, &j.in, &r),
		   "Slurm (partition batch): cannot run the job: 8 nodes, at "
		   "most 4 per job\n");
	/* another account has its own budget */
	j.in.account = "phys";
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_ONLY);
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* 5. GPU type equivalence, and MIG and shard requests stay where they can
 * run. */
static void test_policy_gpu_equivalence(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;

	(void)state;
	load_policy("config/policies/gpu-equivalence.yaml", &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "gpu", 4 * H, 20, 0);
	hb_snapshot_set_queue(&snap, "gpu", 0, 0, 1000, 1u << 30);
	hb_snapshot_set_queue_gpus(&snap, "gpu", "h200", 16);

	/* h100 runs on H200, not on A100 */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -p gpu --gres=gpu:h100:4 -t 2:00:00\n"
	    "python x\n");
	assert_int_equal(j.in.gpus_per_node, 4);
	assert_string_equal(j.in.gpu_type, "h100");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_string_equal(r.alt[HB_SIDE_KUBE].gpu_type, "h200");
	assert_int_equal(r.alt[HB_SIDE_SLURM].blocked_by, HB_PF_GPU_TYPE);
	assert_has(explain(&pol, &j.in, &r),
		   "Slurm (partition gpu): cannot run the job: no GPU type "
		   "that can take the h100 request");
	job_free(&j);

	/* a100 may run on either; Kubernetes finishes first */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -p gpu --gres=gpu:a100:2 -t 2:00:00\n"
	    "python x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_string_equal(r.alt[HB_SIDE_SLURM].gpu_type, "a100");
	assert_string_equal(r.alt[HB_SIDE_KUBE].gpu_type, "h200");
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_EARLIEST);
	job_free(&j);

	/* a MIG slice stays where the profile is */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1g.10gb:1 -t 1:00:00\n"
	    "python x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_string_equal(r.alt[HB_SIDE_SLURM].gpu_type, "1g.10gb");
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_MIG);
	/* 1 x 0.20 for an hour */
	assert_int_equal(r.alt[HB_SIDE_SLURM].compute, 200000);
	job_free(&j);

	/* so does a shard request */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -p gpu --gres=shard:2 -t 1:00:00\n"
	    "python x\n");
	assert_int_equal(j.in.shards_per_node, 2);
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_SHARDS);
	assert_int_equal(r.alt[HB_SIDE_SLURM].compute, 300000);
	job_free(&j);

	/* more GPUs per node than a node has */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -p gpu --gres=gpu:a100:6 -t 1:00:00\n"
	    "python x\n");
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_int_equal(r.alt[HB_SIDE_SLURM].blocked_by, HB_PF_NODE_GPUS);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* 6. A migration pilot: a fixed share of an account's eligible jobs,
 * chosen by hash. */
static void test_policy_migration_pilot(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	int picked = 0, n = 4000;

	(void)state;
	load_policy("config/policies/migration-pilot.yaml", &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "batch", 0, 0, 100);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -J md -A chemistry -n 8 -t 2:00:00\n"
	    "srun x\n");
	for (int i = 0; i < n; i++) {
		struct hb_place_result again;

		j.in.seq = (uint64_t)i;
		hb_place_decide(&pol, &snap, &j.in, &r);
		assert_int_equal(r.pilot_bucket,
				 hb_place_hash("md", "alice", (uint64_t)i) %
					 10000);
		assert_int_equal(r.pilot_selected, r.pilot_bucket < 1000);
		if (r.target == HB_PLACE_KUBE) {
			assert_int_equal(r.why, HB_WHY_PILOT);
			picked++;
		} else {
			assert_int_equal(r.why, HB_WHY_PREFERRED);
		}
		hb_place_decide(&pol, &snap, &j.in, &again);
		assert_int_equal(again.target, r.target);
	}
	/* about 10% */
	assert_true(picked > n * 8 / 100 && picked < n * 12 / 100);
	/* known values: FNV-1a 64 of "md\0alice\0" "7", and of
	 * "\0\0" "0" */
	assert_int_equal(hb_place_hash("md", "alice", 7),
			 0xf85c44d831f1bf39ULL);
	assert_int_equal(hb_place_hash(NULL, NULL, 0), 0xd94d02186c0f1487ULL);

	/* a selected job Kubernetes cannot take stays, and says so */
	for (j.in.seq = 0;; j.in.seq++) {
		hb_place_decide(&pol, &snap, &j.in, &r);
		if (r.pilot_selected)
			break;
	}
	j.in.deadline = NOW + 2 * H + 60; /* Kubernetes starts up in 2m */
	hb_place_decide(&pol, &snap, &j.in, &r);
	assert_true(r.pilot_selected);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_PREFERRED);
	assert_has(explain(&pol, &j.in, &r),
		   "share 10.00%: selected, but Kubernetes misses the "
		   "deadline\n");

	/* other accounts never take part */
	j.in.account = "physics";
	j.in.deadline = 0;
	for (int i = 0; i < 200; i++) {
		j.in.seq = (uint64_t)i;
		hb_place_decide(&pol, &snap, &j.in, &r);
		assert_int_equal(r.target, HB_PLACE_SLURM);
		assert_false(r.pilot_selected);
	}
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* ---- premium, fallback, requests -------------------------------------- */

static const char premium_policy[] =
	"defaults: {prefer: cheapest, max_premium: 50%}\n"
	"rules:\n"
	"  - {name: strict, account: strict, max_premium: 50%, fallback: "
	"reject}\n"
	"  - {name: flat, account: flat, max_premium: 1.00}\n"
	"  - {name: any, account: any, max_premium: null}\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch: {rates: {cpu_hour: 0.01}}\n"
	"kubernetes:\n"
	"  startup: 0s\n"
	"  rates: {cpu_hour: 0.018}\n";

static void test_premium(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct hb_place_result r;
	struct hb_place_input in = { .nodes = 1,
				     .cpus_per_node = 10,
				     .mem_per_node_mb = 1,
				     .time_limit = 10 * H,
				     .deadline = NOW + 11 * H,
				     .requested = -1 };

	(void)state;
	policy_text(premium_policy, &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "batch", 2 * H, 5, 0);
	hb_snapshot_set_queue(&snap, "default", 0, 0, 100, 1u << 20);

	/* Slurm $1.00, late; Kubernetes $1.80 on time: +80% > 50% */
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.alt[HB_SIDE_SLURM].cost, 1000000);
	assert_int_equal(r.alt[HB_SIDE_KUBE].cost, 1800000);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_PREMIUM);
	assert_true(has_factor(&r, HB_PF_PREMIUM, HB_SIDE_KUBE));
	assert_has(explain(&pol, &in, &r),
		   "Kubernetes would meet the deadline but costs $0.80 more "
		   "than Slurm, above rule defaults's max premium of $0.50; "
		   "runs on Slurm, 1h00m late");

	in.account = "strict";
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_REJECT);
	assert_int_equal(r.why, HB_WHY_NO_PREMIUM);

	/* both late: Kubernetes would finish first, but the premium rules
	 * it out there too (else a later Slurm start could move the job
	 * from Kubernetes back to Slurm) */
	in.account = NULL;
	in.deadline = NOW + 9 * H;
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.why, HB_WHY_FALLBACK);
	assert_true(has_factor(&r, HB_PF_PREMIUM, HB_SIDE_KUBE));
	assert_has(explain(&pol, &in, &r),
		   "no side meets the deadline; Kubernetes would finish first "
		   "but costs $0.80 more than Slurm, above rule defaults's max "
		   "premium of $0.50; runs on Slurm, 3h00m late");
	in.deadline = NOW + 11 * H;

	in.account = "flat"; /* $0.80 <= $1.00 */
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_DEADLINE);
	assert_has(explain(&pol, &in, &r),
		   "Slurm would miss the deadline; Kubernetes meets it for "
		   "$0.80 more");

	in.account = "any";
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);

	/* no deadline anywhere, fallback reject */
	in.account = "strict";
	in.deadline = NOW + H;
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_REJECT);
	assert_int_equal(r.why, HB_WHY_NO_DEADLINE);
	assert_has(explain(&pol, &in, &r),
		   "decision: reject: no side meets the deadline, and rule "
		   "strict's fallback is reject");

	/* the job asks for a side: honoured when it may go there */
	in.account = NULL;
	in.requested = HB_SIDE_KUBE;
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_KUBE);
	assert_int_equal(r.why, HB_WHY_REQUESTED);
	in.nodes = 0;
	assert_int_equal(hb_place_decide(&pol, &snap, &in, &r), HB_EINVAL);
	assert_int_equal(r.target, HB_PLACE_REJECT);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);

	/* ...and not when a rule forbids it */
	policy_text("rules: [{account: a, burst: never}]\nkubernetes:\n", &pol);
	hb_snapshot_init(&snap, NOW);
	in.nodes = 1;
	in.account = "a";
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_true(has_factor(&r, HB_PF_REQUEST_DENIED, HB_SIDE_KUBE));
	assert_true(has_factor(&r, HB_PF_NO_ESTIMATE, HB_SIDE_SLURM));
	assert_has(explain(&pol, &in, &r),
		   "note: the job asks for Kubernetes (--hpcbridge-target), "
		   "which cannot take it");
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);

	/* no kubernetes section: nothing bursts */
	policy_text("version: 1\n", &pol);
	hb_snapshot_init(&snap, NOW);
	in.account = NULL;
	in.requested = -1;
	hb_place_decide(&pol, &snap, &in, &r);
	assert_int_equal(r.target, HB_PLACE_SLURM);
	assert_int_equal(r.alt[HB_SIDE_KUBE].blocked_by, HB_PF_NOT_CONFIGURED);
	assert_has(explain(&pol, &in, &r),
		   "Kubernetes (queue (none)): cannot run the job: the policy "
		   "has no kubernetes section");
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* ---- Slurm's times ---------------------------------------------------- */

static void test_parse_time(void **state)
{
	static const struct {
		const char *s;
		int32_t off;
		int64_t want; /* seconds after NOW (08:00 UTC) */
	} ok[] = {
		{ "now", 0, 0 },
		{ "now+4hours", 0, 4 * H },
		{ "now+90", 0, 90 },
		{ "NOW + 2 days", 0, 2 * 86400 },
		{ "now-1week", 0, -604800 },
		{ "now+1minute", 0, 60 },
		{ "2026-11-21T20:00:00", 0, 12 * H },
		{ "2026-11-21T20:00", 0, 12 * H },
		{ "2026-11-21T20", 0, 12 * H },
		{ "2026-11-22", 0, 16 * H },
		{ "2026-11-21T20:00:00", 3600, 11 * H },
		{ "20:00", 0, 12 * H },
		{ "07:00", 0, 23 * H }, /* past: tomorrow */
		{ "8:00pm", 0, 12 * H },
		{ "10:30:15 AM", 0, 2 * H + 1815 },
		{ "noon", 0, 4 * H },
		{ "fika", 0, 7 * H },
		{ "teatime", 0, 8 * H },
		{ "midnight", 0, 16 * H },
		{ "today", 0, -8 * H },
		{ "tomorrow", 0, 16 * H },
		{ "noon", 5 * 3600, 23 * H }, /* 13:00 local: past */
		{ "11/22", 0, 16 * H },
		{ "11/22/26-06:00", 0, 22 * H },
		{ "11.22.26", 0, 16 * H },
		{ "112226", 0, 16 * H },
		{ "1122", 0, 16 * H },
		{ "uts1795291200", 0, 12 * H },
	};
	static const char *const bad[] = {
		"",	 "now+",       "now+3fortnights",
		"later", "2026-13-01", "25:00",
		"11/32", "uts",	       "2026-11-21T20:00:00Z",
		"now*2",
	};
	int64_t t;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (hb_time_slurm_date(ok[i].s, NOW, ok[i].off, &t))
			fail_msg("'%s' refused", ok[i].s);
		if (t != NOW + ok[i].want)
			fail_msg("'%s': %lld, want %lld", ok[i].s,
				 (long long)(t - NOW), (long long)ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!hb_time_slurm_date(bad[i], NOW, 0, &t))
			fail_msg("'%s' accepted", bad[i]);
}

/* ---- the fabric ------------------------------------------------------- */

static const char rdma_policy[] =
	"defaults:\n"
	"  prefer: kubernetes\n"
	"  rdma_features: [ib]\n"
	"  multinode_mpi_needs_rdma: true\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch: {node: {cpus: 64, memory: 256Gi}, rdma: true}\n"
	"    eth: {node: {cpus: 64, memory: 256Gi}}\n"
	"kubernetes:\n"
	"  queues: {burst: {}}\n"
	"  node: {cpus: 96, memory: 768Gi}\n";

/* One job under rdma_policy: where it goes, which sides RDMA rules out,
 * and a line of the explanation (NULL: not checked). */
#define KUBE  (1u << HB_SIDE_KUBE)
#define SLURM (1u << HB_SIDE_SLURM)
struct fabric_case {
	const char *why; /* what the case shows */
	const char *script;
	int target;
	unsigned blocked; /* the sides RDMA rules out: 1 << HB_SIDE_* */
	const char *line;
};

static const struct fabric_case fabric_cases[] = {
	{ "said in words: Kubernetes has no RDMA, and says who asked",
	  "#!/bin/bash\n#SBATCH -N 2 -p batch\n"
	  "#SBATCH --hpcbridge-fabric=rdma\nsrun x\n",
	  HB_PLACE_SLURM, KUBE,
	  "no RDMA fabric on kubernetes; the job asks for it: "
	  "--hpcbridge-fabric=rdma at job.sh:3" },
	{ "said in words holds for one node too",
	  "#!/bin/bash\n#SBATCH -p batch\n"
	  "#SBATCH --hpcbridge-fabric=rdma\nsrun x\n",
	  HB_PLACE_SLURM, KUBE, NULL },
	{ "read from the variables: a multi-node job",
	  "#!/bin/bash\n#SBATCH -N 2 -p batch\n"
	  "export UCX_NET_DEVICES=mlx5_0:1\n./a.out\n",
	  HB_PLACE_SLURM, KUBE,
	  "no RDMA fabric on kubernetes; the job asks for it: "
	  "UCX_NET_DEVICES=mlx5_0:1 at job.sh:3" },
	{ "read from the variables: not a one-node job",
	  "#!/bin/bash\n#SBATCH -p batch\n"
	  "export UCX_NET_DEVICES=mlx5_0:1\n./a.out\n",
	  HB_PLACE_KUBE, 0, NULL },
	{ "a Slurm partition without RDMA cannot run it either: rejected",
	  "#!/bin/bash\n#SBATCH -N 4 -p eth\n#SBATCH --constraint=ib\n"
	  "srun x\n",
	  HB_PLACE_REJECT, KUBE | SLURM,
	  "no RDMA fabric on slurm; the job asks for it: "
	  "--constraint=ib at job.sh:3" },
	{ "multi-node MPI under multinode_mpi_needs_rdma",
	  "#!/bin/bash\n#SBATCH -N 2 -p batch\nmpirun ./a\n", HB_PLACE_SLURM,
	  KUBE,
	  "the job asks for it: multi-node MPI (policy: "
	  "multinode_mpi_needs_rdma)" },
	{ "... unless the job says tcp in words",
	  "#!/bin/bash\n#SBATCH -N 2 -p batch\n"
	  "#SBATCH --hpcbridge-fabric=tcp\nmpirun ./a\n",
	  HB_PLACE_KUBE, 0, NULL },
	{ "... or by its variables",
	  "#!/bin/bash\n#SBATCH -N 2 -p batch\nexport NCCL_IB_DISABLE=1\n"
	  "mpirun ./a\n",
	  HB_PLACE_KUBE, 0, NULL },
};

#undef KUBE
#undef SLURM

static void test_fabric(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct hb_place_result r;
	struct job j;

	(void)state;
	policy_text(rdma_policy, &pol);
	hb_snapshot_init(&snap, NOW);
	for (size_t i = 0; i < sizeof(fabric_cases) / sizeof(fabric_cases[0]);
	     i++) {
		const struct fabric_case *c = &fabric_cases[i];
		const char *t;

		job(&j, &pol, c->script);
		assert_int_equal(hb_place_decide(&pol, &snap, &j.in, &r), 0);
		t = explain(&pol, &j.in, &r);
		if (r.target != c->target)
			fail_msg("%s: target %d, want %d\n%s", c->why,
				 r.target, c->target, t);
		for (int s = 0; s < HB__SIDE_COUNT; s++)
			if (has_factor(&r, HB_PF_RDMA, s) !=
			    !!(c->blocked & 1u << s) ||
			    (c->blocked & 1u << s && r.alt[s].can_run))
				fail_msg("%s: side %d\n%s", c->why, s, t);
		if (c->line)
			assert_has(t, c->line);
		job_free(&j);
	}

	/* the decision document names it */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --hpcbridge-fabric=rdma\n"
	    "srun x\n");
	assert_true(j.in.needs_rdma);
	assert_true(j.in.rdma_any_size);
	assert_string_equal(j.in.rdma_why,
			    "--hpcbridge-fabric=rdma at job.sh:3");
	job_free(&j);

	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

/* ---- inputs from scripts ---------------------------------------------- */

static void test_input(void **state)
{
	struct hb_policy pol;
	struct job j;
	struct hb_jobspec spec;
	struct hb_place_input in;
	struct hb_err err = { 0 };
	struct hb_sbatch_opts o = { 0 };
	static const char bad[] = "#!/bin/bash\n#SBATCH -t 1:00:00\n"
				  "#SBATCH --begin=now\n"
				  "#SBATCH --deadline=0101\n"
				  "srun x\n";

	(void)state;
	policy_text("defaults:\n  rdma_features: [ib]\n"
		    "  multinode_mpi_needs_rdma: true\n",
		    &pol);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -J n -A acc -p part -N 3 -c 4 "
	    "--ntasks-per-node=2\n#SBATCH --constraint=ib&haswell\n"
	    "#SBATCH --exclusive --mem-per-cpu=2G\n"
	    "#SBATCH --hpcbridge-target=kubernetes\n"
	    "#SBATCH --hpcbridge-data=/a --hpcbridge-data=s3://b/c\n"
	    "hostname\n");
	assert_string_equal(j.in.name, "n");
	assert_string_equal(j.in.account, "acc");
	assert_string_equal(j.in.partition, "part");
	assert_string_equal(j.in.source_name, "job.sh");
	assert_int_equal(j.in.nodes, 3);
	assert_int_equal(j.in.cpus_per_node, 8);
	assert_int_equal(j.in.mem_per_node_mb, 16384);
	assert_true(j.in.whole_node);
	assert_true(j.in.needs_rdma);
	assert_int_equal(j.in.requested, HB_SIDE_KUBE);
	assert_int_equal(j.in.ndata, 2);
	assert_int_equal(j.in.time_limit, 0);
	assert_int_equal(j.in.deadline, 0);
	job_free(&j);

	/* the words inside other options do not count */
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH --comment=hpcbridge-target=kubernetes\n"
	    "#SBATCH --gres-flags=enforce-binding --comment=shard:4\n"
	    "srun x\n");
	assert_int_equal(j.in.requested, -1);
	assert_int_equal(j.in.shards_per_node, 0);
	job_free(&j);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH --hpcbridge-target slurm\n"
	    "#SBATCH --gres gpu:1,shard:3\nsrun x\n");
	assert_int_equal(j.in.requested, HB_SIDE_SLURM);
	assert_int_equal(j.in.shards_per_node, 3);
	job_free(&j);

	/* multi-node MPI asks for RDMA when the policy says so */
	job(&j, &pol, "#!/bin/bash\n#SBATCH -N 2\nmpirun ./a.out\n");
	assert_true(j.in.needs_rdma);
	assert_int_equal(j.in.requested, -1);
	job_free(&j);
	job(&j, &pol,
	    "#!/bin/bash\n#SBATCH -N 1 -t UNLIMITED\n"
	    "mpirun ./a.out\n");
	assert_false(j.in.needs_rdma);
	assert_int_equal(j.in.time_limit, 0);
	job_free(&j);

	/* a deadline placement cannot read names its line */
	hb_jobspec_init(&spec, "late.sh");
	assert_int_equal(
		hb_parse_any(bad, strlen(bad), "late.sh", &o, &spec, &err), 0);
	spec.deadline = "1 fortnight";
	assert_int_equal(
		hb_place_input_from_jobspec(&pol, &spec, NOW, 0, &in, &err),
		HB_EINVAL);
	assert_has(err.msg, "late.sh:4: deadline '1 fortnight': placement "
			    "reads now+N");
	hb_jobspec_free(&spec);
	hb_policy_free(&pol);
}

/* ---- the document ----------------------------------------------------- */

static void test_json(void **state)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct job j;
	struct hb_place_result r;
	cJSON *doc, *alts, *a, *f;
	int nf = 0;

	(void)state;
	policy_text(formula_policy, &pol);
	hb_snapshot_init(&snap, NOW);
	hb_snapshot_set_partition(&snap, "batch", 6 * H + 600, 42, 0);
	hb_snapshot_set_queue(&snap, "burst", 1800, 0, 512, 4u << 20);
	job(&j, &pol, regrid);
	hb_place_decide(&pol, &snap, &j.in, &r);
	doc = hb_place_to_json(&pol, &j.in, &r);
	assert_non_null(doc);
	assert_string_equal(cJSON_GetObjectItem(doc, "target")->valuestring,
			    "kubernetes");
	assert_string_equal(cJSON_GetObjectItem(doc, "why")->valuestring,
			    "deadline");
	assert_string_equal(cJSON_GetObjectItem(doc, "resource")->valuestring,
			    "burst");
	assert_string_equal(cJSON_GetObjectItem(doc, "deadline")->valuestring,
			    "2026-11-21T20:00:00Z");
	assert_string_equal(
		cJSON_GetObjectItem(doc, "deadline_source")->valuestring,
		"job");
	alts = cJSON_GetObjectItem(doc, "alternatives");
	assert_int_equal(cJSON_GetArraySize(alts), 2);
	a = cJSON_GetArrayItem(alts, 1);
	assert_string_equal(cJSON_GetObjectItem(a, "side")->valuestring,
			    "kubernetes");
	assert_string_equal(cJSON_GetObjectItem(a, "cost")->valuestring,
			    "41.70");
	assert_int_equal(cJSON_GetObjectItem(a, "cost_micro")->valuedouble,
			 41700000);
	assert_int_equal(cJSON_GetObjectItem(a, "staging_s")->valuedouble, 640);
	assert_string_equal(cJSON_GetObjectItem(a, "finish")->valuestring,
			    "2026-11-21T16:12:40Z");
	a = cJSON_GetArrayItem(alts, 0);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(a, "meets_deadline")));
	cJSON_ArrayForEach (f, cJSON_GetObjectItem(doc, "factors")) {
		assert_non_null(cJSON_GetObjectItem(f, "factor")->valuestring);
		nf++;
	}
	assert_int_equal(nf, (int)r.nfactors);
	assert_int_equal(
		cJSON_GetArraySize(cJSON_GetObjectItem(doc, "explanation")), 5);
	assert_has(
		cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "explanation"), 0)
			->valuestring,
		"decision: kubernetes");
	a = cJSON_GetObjectItem(doc, "job");
	assert_string_equal(cJSON_GetObjectItem(a, "name")->valuestring,
			    "era5-regrid");
	assert_int_equal(cJSON_GetObjectItem(a, "nodes")->valuedouble, 2);
	assert_string_equal(
		cJSON_GetArrayItem(cJSON_GetObjectItem(a, "data"), 0)
			->valuestring,
		"/lustre/era5/2020");
	cJSON_Delete(doc);

	/* every factor and reason has a name */
	for (int k = 0; k < HB__PF_COUNT; k++)
		assert_non_null(hb_place_factor_name(k));
	for (int w = 0; w < HB__WHY_COUNT; w++)
		assert_non_null(hb_place_why_name(w));
	assert_null(hb_place_factor_name(HB__PF_COUNT));
	assert_string_equal(hb_place_target_name(HB_PLACE_REJECT), "reject");
	job_free(&j);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formulas),
		cmocka_unit_test(test_explanation),
		cmocka_unit_test(test_policy_deadline_burst),
		cmocka_unit_test(test_policy_cheaper_burst),
		cmocka_unit_test(test_policy_data_gravity),
		cmocka_unit_test(test_policy_budget_cap),
		cmocka_unit_test(test_policy_gpu_equivalence),
		cmocka_unit_test(test_policy_migration_pilot),
		cmocka_unit_test(test_premium),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_fabric),
		cmocka_unit_test(test_input),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
