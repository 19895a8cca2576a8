/*
 * test_place_props.c - properties of the placement engine over generated
 * policies, snapshots and jobs:
 *
 *   price     raising one side's rates never moves a job onto that side;
 *   queue     a later expected Slurm start never moves a job from
 *             Kubernetes back to Slurm;
 *   deadline  a job that can meet its deadline on some side is never
 *             placed where it misses it, unless a rule forbids that side
 *             (or the premium to reach it is too high, or the job asked),
 *             and then the explanation says which rule;
 *   budget    the decisions the engine makes never take an account past
 *             its budget;
 *   and every decision is repeatable and lands on a side that can run
 *   the job and may take it.
 *
 * The generator is a seeded splitmix64.  The seed is printed; set
 * HB_PLACE_SEED to replay a failure, HB_PLACE_ROUNDS to run longer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/placement.h"
#include "hpcbridge/units.h"
#include "testutil.h"

#define NOW 1795248000LL
#define H   3600LL

static uint64_t seed = 20261121;
static long rounds = 4000;

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* 0 .. n-1 */
static uint64_t below(struct rng *g, uint64_t n)
{
	return n ? next(g) % n : 0;
}

static bool chance(struct rng *g, unsigned percent)
{
	return below(g, 100) < percent;
}

static const char base_policy[] =
	"slurm:\n"
	"  partitions:\n"
	"    cpu:\n"
	"      max_nodes: 16\n"
	"      node: {cpus: 64, memory: 256Gi}\n"
	"    gpu:\n"
	"      max_nodes: 8\n"
	"      node: {cpus: 64, memory: 512Gi, gpus: 4}\n"
	"      gpu_types: [a100, h100]\n"
	"      mig: [1g.10gb]\n"
	"      shards: true\n"
	"      rdma: true\n"
	"      rates: {gpu_hour: {a100: 1, h100: 2}}\n"
	"kubernetes:\n"
	"  queues:\n"
	"    qa: {accounts: [a]}\n"
	"    qb: {}\n"
	"  max_nodes: 12\n"
	"  node: {cpus: 96, memory: 768Gi, gpus: 8}\n"
	"  gpu_types: [a100, h200]\n"
	"  rates: {gpu_hour: {a100: 3, h200: 5}}\n"
	"gpu_equivalence:\n"
	"  h100: [h200]\n"
	"data:\n"
	"  - {prefix: /lustre/a, side: slurm, size: 100G, bandwidth: 1Gb/s}\n"
	"  - {prefix: /lustre/b, side: slurm, size: 5T, bandwidth: 10Gb/s}\n"
	"  - {prefix: /lustre/p, side: slurm, movable: false}\n"
	"  - {prefix: s3://k, side: kubernetes, size: 300G, bandwidth: "
	"2Gb/s}\n"
	"rules:\n"
	"  - {name: ra, account: a}\n"
	"  - {name: rb, account: b, partition: gpu}\n"
	"  - {name: rc, partition: cpu}\n";

static const char *const accounts[] = { "a", "b", "c", NULL };
static const char *const partitions[] = { "cpu", "gpu", "other", NULL };
static const char *const gpu_types[] = { NULL, "a100", "h100", "h200",
					 "1g.10gb" };
static const char *const paths[] = { "/lustre/a/x", "/lustre/b", "/lustre/p/q",
				     "s3://k/y", "/home/u" };

static hb_money money(struct rng *g, hb_money max)
{
	return (hb_money)below(g, (uint64_t)max + 1);
}

static void random_rates(struct rng *g, struct hb_rates *r)
{
	r->cpu_hour = money(g, 100000);
	r->mem_gb_hour = money(g, 10000);
	r->gpu_hour = money(g, 5000000);
	r->shard_hour = money(g, 500000);
	r->per_job = chance(g, 50) ? 0 : money(g, 2000000);
	for (uint32_t i = 0; i < r->ngpu; i++)
		r->gpu[i].per_hour = money(g, 6000000);
}

static void random_rule(struct rng *g, struct hb_rule *ru)
{
	ru->burst = !chance(g, 15);
	ru->honour_target = chance(g, 70);
	ru->prefer = (uint8_t)below(g, 4);
	ru->fallback = (uint8_t)below(g, 2);
	ru->budget = chance(g, 40) ? money(g, 3000 * HB_MONEY_UNIT) : HB_UNSET;
	ru->budget_period = (uint8_t)below(g, HB__PERIOD_COUNT);
	ru->budget_sides = (uint8_t)(1 + below(g, 3));
	ru->premium_bp = chance(g, 40) ? (int32_t)below(g, 30000) : HB_UNSET;
	ru->premium_abs =
		chance(g, 30) ? money(g, 200 * HB_MONEY_UNIT) : HB_UNSET;
	ru->keep_with_data_over =
		chance(g, 30) ? below(g, 6000000000000ULL) + 1 : 0;
	ru->staging_slack_bp =
		chance(g, 30) ? (int32_t)below(g, 10001) : HB_UNSET;
	ru->pilot_bp = chance(g, 25) ? (int32_t)below(g, 10001) : 0;
}

static void random_policy(struct rng *g, struct hb_policy *pol)
{
	random_rates(g, &pol->slurm_rates);
	for (uint32_t i = 0; i < pol->npartitions; i++) {
		random_rates(g, &pol->partitions[i].rates);
		pol->partitions[i].default_deadline =
			chance(g, 30) ? (int64_t)below(g, 3 * 86400) + 1 : 0;
	}
	random_rates(g, &pol->kube_rates);
	pol->kube_startup = (int64_t)below(g, 900);
	pol->kube_cap.rdma = chance(g, 50);
	pol->kube_cap.shards = chance(g, 20);
	pol->slurm_default_wait = (int64_t)below(g, 4 * H);
	pol->kube_default_wait = (int64_t)below(g, 4 * H);
	for (uint32_t i = 0; i < pol->ndata; i++) {
		pol->data[i].egress_per_gb = money(g, 100000);
		if (pol->data[i].movable)
			pol->data[i].bandwidth = 1 + below(g, 5000000000ULL);
	}
	random_rule(g, &pol->defaults);
	for (uint32_t i = 0; i < pol->nrules; i++)
		random_rule(g, &pol->rules[i]);
}

static void random_snapshot(struct rng *g, struct hb_snapshot *s)
{
	const char *parts[] = { "cpu", "gpu" }, *queues[] = { "qa", "qb" };

	hb_snapshot_free(s);
	hb_snapshot_init(s, NOW);
	for (int i = 0; i < 2; i++)
		if (!chance(g, 10))
			assert_int_equal(hb_snapshot_set_partition(
						 s, parts[i],
						 (int64_t)below(g, 2 * 86400),
						 (uint32_t)below(g, 3),
						 (uint32_t)below(g, 20)),
					 0);
	for (int i = 0; i < 2; i++) {
		if (chance(g, 10))
			continue;
		assert_int_equal(hb_snapshot_set_queue(
					 s, queues[i],
					 (int64_t)below(g, 2 * 86400),
					 (uint32_t)below(g, 3), below(g, 2000),
					 below(g, 8u << 20)),
				 0);
		assert_int_equal(
			hb_snapshot_set_queue_gpus(s, queues[i], "a100",
						   (uint32_t)below(g, 64)),
			0);
		assert_int_equal(
			hb_snapshot_set_queue_gpus(s, queues[i], "h200",
						   (uint32_t)below(g, 64)),
			0);
	}
	if (chance(g, 30))
		hb_snapshot_set_data(s, "/lustre/a",
				     below(g, 3000000000000ULL));
	for (int i = 0; i < 3; i++)
		for (int p = 0; p < HB__PERIOD_COUNT; p++)
			for (int side = 0; side < HB__SIDE_COUNT; side++)
				if (chance(g, 50))
					hb_snapshot_set_spend(
						s, accounts[i], p, side,
						money(g, 1500 * HB_MONEY_UNIT));
}

static void random_input(struct rng *g, struct hb_place_input *in,
			 const char **data)
{
	memset(in, 0, sizeof(*in));
	in->name = "job";
	in->user = "u";
	in->seq = next(g);
	in->account = accounts[below(g, 4)];
	in->partition = partitions[below(g, 4)];
	in->nodes = (uint32_t)(1 + below(g, chance(g, 80) ? 4 : 20));
	in->cpus_per_node = (uint32_t)(1 + below(g, 100));
	in->mem_per_node_mb = chance(g, 30) ? 0 : 1 + below(g, 900000);
	in->whole_node = chance(g, 10);
	if (chance(g, 40)) {
		in->gpus_per_node = (uint32_t)(1 + below(g, 8));
		in->gpu_type = gpu_types[below(g, 5)];
	}
	in->shards_per_node = chance(g, 5) ? 1 + (uint32_t)below(g, 4) : 0;
	in->needs_rdma = chance(g, 20);
	in->time_limit =
		chance(g, 15) ? 0 : (int64_t)(600 + below(g, 2 * 86400));
	in->deadline = chance(g, 30) ? 0 : NOW + (int64_t)below(g, 4 * 86400);
	in->ndata = 0;
	for (int i = 0; i < 5; i++)
		if (chance(g, 20))
			data[in->ndata++] = paths[i];
	in->data = data;
	in->requested = chance(g, 10) ? (int)below(g, 2) : -1;
	in->source_name = "gen.sh";
}

static void describe(const struct hb_policy *pol,
		     const struct hb_place_input *in,
		     const struct hb_place_result *r, const char *what,
		     long round)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	hb_place_explain(pol, in, r, &b);
	fprintf(stderr,
		"%s failed: seed %llu, round %ld "
		"(HB_PLACE_SEED=%llu replays it)\n%s",
		what, (unsigned long long)seed, round, (unsigned long long)seed,
		b.data ? b.data : "");
	hb_buf_free(&b);
}

static void check_sane(const struct hb_policy *pol,
		       const struct hb_place_input *in,
		       const struct hb_place_result *r, long round)
{
	const struct hb_place_alt *a;

	if (r->target == HB_PLACE_REJECT) {
		if (r->why != HB_WHY_NO_SIDE && r->why != HB_WHY_NO_DEADLINE &&
		    r->why != HB_WHY_NO_PREMIUM) {
			describe(pol, in, r, "sane (reject why)", round);
			fail();
		}
		return;
	}
	a = &r->alt[r->target];
	if (!a->can_run || !a->allowed || a->cost < 0 || a->finish < a->start ||
	    a->start < r->now) {
		describe(pol, in, r, "sane", round);
		fail();
	}
}

static void test_price(void **state)
{
	struct rng g = { seed };
	struct hb_policy pol;
	struct hb_snapshot snap = { 0 };
	struct hb_err err = { 0 };
	long moved = 0;

	(void)state;
	if (hb_policy_parse(base_policy, strlen(base_policy), "gen.yaml", &pol,
			    &err))
		fail_msg("%s", err.msg);
	hb_snapshot_init(&snap, NOW);
	for (long i = 0; i < rounds; i++) {
		struct hb_place_input in;
		struct hb_place_result r1, r2;
		const char *data[5];
		int side = (int)below(&g, 2);
		hb_money bump = 1 + money(&g, 3000000);
		unsigned field = (unsigned)below(&g, 6);

		random_policy(&g, &pol);
		random_snapshot(&g, &snap);
		random_input(&g, &in, data);
		hb_place_decide(&pol, &snap, &in, &r1);
		check_sane(&pol, &in, &r1, i);
		/* raise one rate on every card of the side */
		for (uint32_t c = 0; c <= pol.npartitions; c++) {
			struct hb_rates *rt =
				side == HB_SIDE_KUBE  ? &pol.kube_rates
				: c < pol.npartitions ? &pol.partitions[c].rates
						      : &pol.slurm_rates;

			switch (field) {
			case 0:
				rt->cpu_hour += bump;
				break;
			case 1:
				rt->mem_gb_hour += bump;
				break;
			case 2:
				rt->gpu_hour += bump;
				for (uint32_t k = 0; k < rt->ngpu; k++)
					rt->gpu[k].per_hour += bump;
				break;
			case 3:
				rt->shard_hour += bump;
				break;
			case 4:
				rt->per_job += bump;
				break;
			default:
				if (rt->ngpu)
					rt->gpu[below(&g, rt->ngpu)].per_hour +=
						bump;
				break;
			}
			if (side == HB_SIDE_KUBE)
				break;
		}
		hb_place_decide(&pol, &snap, &in, &r2);
		check_sane(&pol, &in, &r2, i);
		if (r2.alt[side].cost < r1.alt[side].cost) {
			describe(&pol, &in, &r2, "price (cost fell)", i);
			fail();
		}
		if (r1.target != side && r2.target == side) {
			describe(&pol, &in, &r1, "price (before)", i);
			describe(&pol, &in, &r2, "price (after)", i);
			fail();
		}
		moved += r1.target != r2.target;
	}
	/* the property was exercised: some decisions did move away */
	assert_true(moved > 0);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

static void test_queue(void **state)
{
	struct rng g = { seed ^ 1 };
	struct hb_policy pol;
	struct hb_snapshot snap = { 0 };
	struct hb_err err = { 0 };
	long moved = 0;

	(void)state;
	if (hb_policy_parse(base_policy, strlen(base_policy), "gen.yaml", &pol,
			    &err))
		fail_msg("%s", err.msg);
	hb_snapshot_init(&snap, NOW);
	for (long i = 0; i < rounds; i++) {
		struct hb_place_input in;
		struct hb_place_result r1, r2;
		const char *data[5];
		int64_t later = 1 + (int64_t)below(&g, 86400);

		random_policy(&g, &pol);
		random_snapshot(&g, &snap);
		random_input(&g, &in, data);
		if (chance(&g, 50)) {
			/* a will_run answer for this job */
			in.slurm_start = NOW + (int64_t)below(&g, 86400);
			hb_place_decide(&pol, &snap, &in, &r1);
			in.slurm_start += later;
		} else {
			/* the partition's estimate (or none, or idle
			 * nodes), then a busy partition with a later one */
			const char *p = in.partition ? in.partition : "cpu";

			in.slurm_start = 0;
			hb_place_decide(&pol, &snap, &in, &r1);
			hb_snapshot_set_partition(
				&snap, p, r1.alt[HB_SIDE_SLURM].wait + later, 5,
				0);
		}
		hb_place_decide(&pol, &snap, &in, &r2);
		check_sane(&pol, &in, &r2, i);
		if (r2.alt[HB_SIDE_SLURM].start < r1.alt[HB_SIDE_SLURM].start) {
			describe(&pol, &in, &r2, "queue (start fell)", i);
			fail();
		}
		if (r1.target == HB_PLACE_KUBE && r2.target == HB_PLACE_SLURM) {
			describe(&pol, &in, &r1, "queue (before)", i);
			describe(&pol, &in, &r2, "queue (after)", i);
			fail();
		}
		moved += r1.target != r2.target;
	}
	assert_true(moved > 0);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

static void test_deadline(void **state)
{
	struct rng g = { seed ^ 2 };
	struct hb_policy pol;
	struct hb_snapshot snap = { 0 };
	struct hb_err err = { 0 };
	long saved = 0, ruled = 0;

	(void)state;
	if (hb_policy_parse(base_policy, strlen(base_policy), "gen.yaml", &pol,
			    &err))
		fail_msg("%s", err.msg);
	hb_snapshot_init(&snap, NOW);
	for (long i = 0; i < rounds; i++) {
		struct hb_place_input in;
		struct hb_place_result r, again;
		const char *data[5];
		const struct hb_place_alt *o;
		struct hb_buf b;
		int t;

		random_policy(&g, &pol);
		random_snapshot(&g, &snap);
		random_input(&g, &in, data);
		if (!in.deadline)
			in.deadline = NOW + (int64_t)below(&g, 2 * 86400);
		hb_place_decide(&pol, &snap, &in, &r);
		check_sane(&pol, &in, &r, i);
		hb_place_decide(&pol, &snap, &in, &again);
		if (again.target != r.target || again.why != r.why ||
		    again.alt[0].cost != r.alt[0].cost ||
		    again.alt[1].finish != r.alt[1].finish) {
			describe(&pol, &in, &r, "repeatable", i);
			fail();
		}
		t = r.target;
		if (t == HB_PLACE_REJECT) {
			/* rejected for the deadline: no candidate meets it */
			for (int s = 0; r.why == HB_WHY_NO_DEADLINE && s < 2;
			     s++)
				if (r.alt[s].can_run && r.alt[s].allowed &&
				    r.alt[s].meets_deadline) {
					describe(&pol, &in, &r,
						 "deadline (reject)", i);
					fail();
				}
			continue;
		}
		if (r.alt[t].meets_deadline)
			continue;
		o = &r.alt[1 - t];
		if (!o->can_run || !o->meets_deadline)
			continue;
		/* placed late although the other side is on time */
		hb_buf_init(&b, 0);
		assert_int_equal(hb_place_explain(&pol, &in, &r, &b), 0);
		if (!o->allowed && hb_place_factor_is_rule(o->blocked_by)) {
			if (!strstr(b.data, "not allowed: ")) {
				describe(&pol, &in, &r, "deadline (words)", i);
				fail();
			}
			ruled++;
		} else if (r.why == HB_WHY_PREMIUM) {
			if (!strstr(b.data, "max premium")) {
				describe(&pol, &in, &r, "deadline (words)", i);
				fail();
			}
			ruled++;
		} else if (r.why == HB_WHY_REQUESTED) {
			if (!strstr(b.data, "--hpcbridge-target")) {
				describe(&pol, &in, &r, "deadline (words)", i);
				fail();
			}
		} else {
			hb_buf_free(&b);
			describe(&pol, &in, &r, "deadline", i);
			fail();
		}
		saved++;
		hb_buf_free(&b);
	}
	/* both branches were exercised */
	assert_true(ruled > 0);
	(void)saved;
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

static void test_budget(void **state)
{
	struct rng g = { seed ^ 3 };
	struct hb_policy pol;
	struct hb_snapshot snap = { 0 };
	struct hb_err err = { 0 };
	long blocked = 0;

	(void)state;
	if (hb_policy_parse(base_policy, strlen(base_policy), "gen.yaml", &pol,
			    &err))
		fail_msg("%s", err.msg);
	hb_snapshot_init(&snap, NOW);
	for (long i = 0; i < rounds / 20; i++) {
		struct hb_rule *ru;
		const char *data[5];
		struct hb_place_input in;
		const char *acct = accounts[below(&g, 3)];
		const char *part = partitions[below(&g, 3)];

		random_policy(&g, &pol);
		random_snapshot(&g, &snap);
		/* the rule this account's jobs take has a budget, and the
		 * account is within it */
		ru = (struct hb_rule *)hb_policy_rule(&pol, acct, part);
		ru->budget = money(&g, 5000 * HB_MONEY_UNIT);
		for (int s = 0; s < HB__SIDE_COUNT; s++)
			hb_snapshot_set_spend(&snap, acct, ru->budget_period, s,
					      0);
		for (int k = 0; k < 40; k++) {
			struct hb_place_result r;
			const struct hb_snap_spend *sp;
			int64_t covered = 0;

			random_input(&g, &in, data);
			in.account = acct;
			in.partition = part;
			hb_place_decide(&pol, &snap, &in, &r);
			check_sane(&pol, &in, &r, i);
			assert_ptr_equal(r.rule, ru);
			blocked += r.alt[0].blocked_by == HB_PF_BUDGET ||
				   r.alt[1].blocked_by == HB_PF_BUDGET;
			assert_int_equal(hb_place_commit(&in, &r, &snap), 0);
			sp = hb_snapshot_spend(&snap, acct, ru->budget_period);
			for (int s = 0; s < HB__SIDE_COUNT; s++)
				if (ru->budget_sides & (1u << s))
					covered += sp->spent[s];
			if (covered > ru->budget) {
				describe(&pol, &in, &r, "budget", i);
				fail_msg("spent %lld of %lld",
					 (long long)covered,
					 (long long)ru->budget);
			}
		}
	}
	assert_true(blocked > 0);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_price),
		cmocka_unit_test(test_queue),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_budget),
	};
	const char *s = getenv("HB_PLACE_SEED"), *n = getenv("HB_PLACE_ROUNDS");

	uint64_t v;

	if (s && !hb_parse_u64(s, UINT64_MAX, &v))
		seed = v;
	if (n && !hb_parse_u64(n, 100000000, &v) && v > 0)
		rounds = (long)v;
	fprintf(stderr, "test_place_props: seed %llu, %ld rounds\n",
		(unsigned long long)seed, rounds);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
