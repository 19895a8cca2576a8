/*
 * test_meter.c - metering: a burst job's pods x requests (and the
 * max(request, usage) rule), and a job's ledger entries made, kept when
 * the same, and reversed and replaced when they differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpcbridge/jobspec.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/meter.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/store.h"
#include "testutil.h"

/* Two versions: the second from 2026-07-01T00:00:00Z (1782864000). */
static const char card_yaml[] = "currency: {code: EUR, symbol: \"€\"}\n"
				"versions:\n"
				"  - version: v1\n"
				"    effective: 2026-01-01\n"
				"    slurm:\n"
				"      default: {cpu_hour: 0.02, "
				"memory_gb_hour: 0.004}\n"
				"    kubernetes:\n"
				"      default: {cpu_hour: 0.03, "
				"memory_gb_hour: 0.004, gpu_hour: 2.00}\n"
				"  - version: v2\n"
				"    effective: 2026-07-01T00:00:00Z\n"
				"    slurm:\n"
				"      default: {cpu_hour: 0.01, "
				"memory_gb_hour: 0.002}\n"
				"    kubernetes:\n"
				"      default: {cpu_hour: 0.03, "
				"memory_gb_hour: 0.004, gpu_hour: 2.00}\n";
#define JULY 1782864000LL

static void parse_script(const char *text, struct hb_jobspec *spec)
{
	struct hb_err err = { 0 };

	hb_jobspec_init(spec, "job.sh");
	if (hb_sbatch_parse(text, strlen(text), "job.sh", NULL, spec, &err))
		fail_msg("parse: %s", err.msg);
}

/* Workers x their request, plus the launcher's; measured usage counts
 * where it exceeds the request. */
static void test_kube_usage(void **state)
{
	struct hb_k8s_opts k8s = { .launcher_cpus = 1,
				   .launcher_mem_mb = 1024 };
	struct hb_jobspec spec;
	struct hb_usage u, m = { 0 };
	struct hb_err err = { 0 };

	(void)state;
	parse_script("#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4\n"
		     "#SBATCH --mem=8G --gres=gpu:a100:1\nsrun ./a.out\n",
		     &spec);
	assert_int_equal(hb_meter_kube_usage(&spec, &k8s, 1500, 61200, NULL,
					     &u, &err),
			 0);
	assert_int_equal(u.side, HB_RATE_KUBE);
	assert_int_equal(u.start, 1);
	assert_int_equal(u.end, 62); /* rounded up */
	assert_int_equal(u.cpus, 2 * 4 + 1);
	assert_int_equal(u.mem_bytes, (2ULL * 8192 + 1024) << 20);
	assert_int_equal(u.nodes, 3);
	assert_int_equal(u.ngpus, 1);
	assert_string_equal(u.gpus[0].type, "a100");
	assert_int_equal(u.gpus[0].count, 2);

	/* more CPUs used than asked for: those count; memory under its
	 * request: the request counts */
	m.cpus = 12;
	m.mem_bytes = 1 << 20;
	m.ngpus = 1;
	m.gpus[0].count = 1;
	assert_int_equal(hb_meter_kube_usage(&spec, &k8s, 0, 1000, &m, &u,
					     &err),
			 0);
	assert_int_equal(u.cpus, 12);
	assert_int_equal(u.mem_bytes, (2ULL * 8192 + 1024) << 20);
	assert_int_equal(u.gpus[0].count, 2);

	/* an end before the start is refused, naming the times */
	assert_int_equal(hb_meter_kube_usage(&spec, &k8s, 5000, 4000, NULL,
					     &u, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "start 5000 ms, end 4000 ms"));
	hb_jobspec_free(&spec);
}

struct fx {
	struct hb_test_store t;
	struct hb_ratecard card;
	char id[32];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct hb_err err = { 0 };
	struct hb_job_row r = { .entry = HB_ENTRY_SLURM,
				.user = "alice",
				.uid = 1000,
				.account = "physics",
				.slurm_job_id = -1,
				.exit_code = -1 };

	assert_non_null(fx);
	assert_int_equal(hb_test_store_open(&fx->t, "hb-meter-test"), 0);
	if (hb_ratecard_parse(card_yaml, sizeof(card_yaml) - 1, "card.yaml",
			      &fx->card, &err) ||
	    hb_store_job_add(fx->t.st, &r, &err))
		fail_msg("setup: %s", err.msg);
	snprintf(fx->id, sizeof(fx->id), "%s", r.id);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	hb_test_store_close(&fx->t);
	hb_ratecard_free(&fx->card);
	free(fx);
	return 0;
}

struct seen {
	int n, live;
	int64_t amount, cpu;
};

static int count_cb(const struct hb_ledger_entry *e, void *arg)
{
	struct seen *s = arg;

	s->n++;
	s->amount += e->amount_micros;
	s->cpu += e->cpu_mcore_s;
	return 0;
}

static struct seen entries(struct fx *fx)
{
	struct seen s = { 0 };
	struct hb_err err = { 0 };

	assert_int_equal(hb_store_ledger_list(fx->t.st, fx->id, count_cb, &s,
					      &err),
			 0);
	return s;
}

/* A Slurm job of 4 CPUs and 2 GiB from 23:00 to 01:00 across the July
 * change: two entries, at each version's rates. */
static struct hb_meter_job slurm_job(struct fx *fx, int64_t end)
{
	struct hb_meter_job j = { .job_id = fx->id,
				  .user = "alice",
				  .account = "physics",
				  .partition = "batch" };

	j.usage.side = HB_RATE_SLURM;
	j.usage.start = JULY - 3600;
	j.usage.end = end;
	j.usage.cpus = 4;
	j.usage.mem_bytes = 2ULL << 30;
	j.usage.nodes = 1;
	return j;
}

static void test_record(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_job j = slurm_job(fx, JULY + 3600);
	struct hb_meter_result res;
	struct hb_job_row row = { 0 };
	struct hb_err err = { 0 };
	struct seen s;
	/* v1: 4 CPU-h x 0.02 + 2 GB-h x 0.004 = 0.088;
	 * v2: 4 x 0.01 + 2 x 0.002 = 0.044 */
	const int64_t first = 88000 + 44000;

	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res, &err),
			 0);
	assert_int_equal(res.entries, 2);
	assert_int_equal(res.written, 1);
	assert_int_equal(res.reversed, 0);
	assert_int_equal(res.amount_micros, first);
	assert_string_equal(res.rate_version, "v2");
	s = entries(fx);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.amount, first);
	assert_int_equal(s.cpu, 4LL * 7200 * 1000);

	/* metered again with the same figures: nothing written */
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res, &err),
			 0);
	assert_int_equal(res.written, 0);
	assert_int_equal(entries(fx).n, 2);

	/* a late figure: the job ended an hour later; the two entries are
	 * reversed and two new ones appended */
	j = slurm_job(fx, JULY + 7200);
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res, &err),
			 0);
	assert_int_equal(res.written, 1);
	assert_int_equal(res.reversed, 2);
	assert_int_equal(res.amount_micros, 88000 + 2 * 44000);
	s = entries(fx);
	assert_int_equal(s.n, 6);
	assert_int_equal(s.amount, 88000 + 2 * 44000);
	assert_int_equal(hb_store_job_get(fx->t.st, fx->id, &row, &err), 0);
	assert_int_equal(row.cost_micros, 88000 + 2 * 44000);
	hb_job_row_free(&row);

	/* it ran less than a second after all: one entry of nothing, at
	 * the version in force, and the old ones reversed */
	j.usage.end = j.usage.start;
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res, &err),
			 0);
	assert_int_equal(res.entries, 1);
	assert_int_equal(res.reversed, 2);
	assert_string_equal(res.rate_version, "v1");
	s = entries(fx);
	assert_int_equal(s.n, 9);
	assert_int_equal(s.amount, 0);
	/* an end before the start is refused, naming the job */
	j.usage.end = j.usage.start - 1;
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "before it started"));
	assert_int_equal(entries(fx).n, 9);
}

/* Burst jobs are priced on the cluster side, in their queue's class;
 * an untyped GPU count is recorded as HB_METER_GPU_UNTYPED. */
static int gpu_cb(const struct hb_ledger_entry *e, void *arg)
{
	int64_t *gpu_s = arg;

	assert_int_equal(e->side, HB_TARGET_KUBERNETES);
	assert_string_equal(e->queue, "burst");
	assert_int_equal(e->n_gpu, 1);
	assert_string_equal(e->gpu[0].type, HB_METER_GPU_UNTYPED);
	*gpu_s += e->gpu[0].seconds;
	return 0;
}

static void test_record_kube(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_job j = { .job_id = fx->id,
				  .account = "physics",
				  .partition = "gpu",
				  .queue = "burst" };
	struct hb_meter_result res;
	struct hb_err err = { 0 };
	int64_t gpu_s = 0;

	j.usage.side = HB_RATE_KUBE;
	j.usage.start = JULY + 100;
	j.usage.end = JULY + 100 + 1800;
	j.usage.cpus = 2;
	j.usage.gpus[0].count = 2;
	j.usage.ngpus = 1;
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res, &err),
			 0);
	/* 2 CPU x 0.5 h x 0.03 + 2 GPU x 0.5 h x 2.00 */
	assert_int_equal(res.amount_micros, 30000 + 2000000);
	assert_int_equal(hb_store_ledger_list(fx->t.st, fx->id, gpu_cb, &gpu_s,
					      &err),
			 0);
	assert_int_equal(gpu_s, 2 * 1800);

	/* no version in force when the job started: an error naming it,
	 * and nothing written */
	j.usage.start = 1000;
	j.usage.end = 2000;
	assert_int_not_equal(hb_meter_record(fx->t.st, &fx->card, &j, &res,
					     &err),
			     0);
	assert_non_null(strstr(err.msg, fx->id));
	assert_int_equal(entries(fx).n, 1);
}

/* Entries by part: those that are no reversal, per part, and reversals;
 * amounts net per part. */
struct parts {
	int entries_a, entries_b, reversals;
	int64_t amount_a, amount_b;
};

static int parts_cb(const struct hb_ledger_entry *e, void *arg)
{
	struct parts *p = arg;
	int a = e->part && !strcmp(e->part, "101");

	assert_non_null(e->part);
	if (e->reverses)
		p->reversals++;
	else if (a)
		p->entries_a++;
	else
		p->entries_b++;
	if (a)
		p->amount_a += e->amount_micros;
	else
		p->amount_b += e->amount_micros;
	return 0;
}

/* The tasks of an array are parts of one job, each metered and corrected
 * on its own: a late figure for one reverses its entries only. */
static void test_parts(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_job a = slurm_job(fx, JULY - 1800);
	struct hb_meter_job b = slurm_job(fx, JULY - 1800);
	struct hb_meter_result res;
	struct hb_err err = { 0 };
	struct parts p = { 0 };

	a.part = "101";
	b.part = "102";
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &a, &res, &err),
			 0);
	assert_int_equal(res.replaced_micros, 0);
	/* 4 CPU x 0.5 h x 0.02 + 2 GB x 0.5 h x 0.004 */
	assert_int_equal(res.amount_micros, 44000);
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &b, &res, &err),
			 0);
	assert_int_equal(res.written, 1);
	assert_int_equal(res.reversed, 0);
	/* task 101 ran twice as long after all */
	a.usage.end = JULY;
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &a, &res, &err),
			 0);
	assert_int_equal(res.reversed, 1);
	assert_int_equal(res.replaced_micros, 44000);
	assert_int_equal(res.amount_micros, 88000);
	assert_int_equal(hb_store_ledger_list(fx->t.st, fx->id, parts_cb, &p,
					      &err),
			 0);
	/* a: the first entry, its reversal and the new one; b untouched */
	assert_int_equal(p.entries_a, 2);
	assert_int_equal(p.entries_b, 1);
	assert_int_equal(p.reversals, 1);
	assert_int_equal(p.amount_a, 88000);
	assert_int_equal(p.amount_b, 44000);
	/* a part the ledger cannot hold is refused, naming it */
	a.part = "task one";
	assert_int_equal(hb_meter_record(fx->t.st, &fx->card, &a, &res, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "part"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kube_usage),
		cmocka_unit_test_setup_teardown(test_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_kube, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_parts, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
