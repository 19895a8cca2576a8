/*
 * test_meter_storage.c - checkpoint storage metered (hb_meter_storage()):
 * the time between two measurements charged at the bytes the first
 * found, amounts exactly as hb_rate_price_storage() gives them, cut at
 * rate changes, handed over between jobs, zero bytes charging nothing,
 * the entries and the meter committed together or not at all, and the
 * report's storage column.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/meter.h"
#include "hpcbridge/store.h"
#include "testutil.h"

/* v1 from 2026-01-01 (queue "fast" dearer), v2 from July 1st, v3 from
 * October 1st pricing Slurm only. */
static const char card_yaml[] =
	"currency: {code: EUR}\n"
	"versions:\n"
	"  - version: v1\n"
	"    effective: 2026-01-01\n"
	"    slurm:\n"
	"      default: {cpu_hour: 0.02}\n"
	"    kubernetes:\n"
	"      default: {cpu_hour: 0.03, storage_gb_month: 0.02}\n"
	"      fast: {cpu_hour: 0.03, storage_gb_month: 0.05}\n"
	"  - version: v2\n"
	"    effective: 2026-07-01T00:00:00Z\n"
	"    kubernetes:\n"
	"      default: {cpu_hour: 0.03, storage_gb_month: 0.01}\n"
	"  - version: v3\n"
	"    effective: 2026-10-01\n"
	"    slurm:\n"
	"      default: {cpu_hour: 0.02}\n";
#define JUNE	1780272000LL
#define JULY	1782864000LL
#define OCTOBER 1790812800LL
#define URL	"s3://ckpt/jobs/1000/count-c9724427eef8dafc"
#define GB	1000000000ULL

struct fx {
	struct hb_test_store t;
	struct hb_ratecard card;
	char a[32], b[32]; /* alice's job (physics), bob's (chemistry) */
};

static void add_job(struct fx *fx, const char *user, const char *account,
		    char *id)
{
	struct hb_err err = { 0 };
	struct hb_job_row r = { .entry = HB_ENTRY_SLURM,
				.user = user,
				.uid = 1000,
				.account = account,
				.slurm_job_id = -1,
				.exit_code = -1 };

	if (hb_store_job_add(fx->t.st, &r, &err))
		fail_msg("job_add: %s", err.msg);
	snprintf(id, 32, "%s", r.id);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct hb_err err = { 0 };

	assert_non_null(fx);
	assert_int_equal(hb_test_store_open(&fx->t, "hb-meter-storage-test"),
			 0);
	if (hb_ratecard_parse(card_yaml, sizeof(card_yaml) - 1, "card.yaml",
			      &fx->card, &err))
		fail_msg("card: %s", err.msg);
	add_job(fx, "alice", "physics", fx->a);
	add_job(fx, "bob", "chemistry", fx->b);
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

/* Measure URL: bytes at now_ms, for job (NULL: the meter's). */
static int measure(struct fx *fx, const char *job, const char *account,
		   const char *queue, uint64_t bytes, int64_t now_ms,
		   struct hb_meter_storage_result *res, struct hb_err *err)
{
	struct hb_meter_storage m = { .url = URL,
				      .job_id = job,
				      .account = account,
				      .user = job ? "someone" : NULL,
				      .queue = queue,
				      .bytes = bytes,
				      .now_ms = now_ms };

	memset(res, 0, sizeof(*res));
	return hb_meter_storage(fx->t.st, &fx->card, &m, res, err);
}

static void measure_ok(struct fx *fx, const char *job, const char *account,
		       const char *queue, uint64_t bytes, int64_t now_ms,
		       struct hb_meter_storage_result *res)
{
	struct hb_err err = { 0 };

	if (measure(fx, job, account, queue, bytes, now_ms, res, &err))
		fail_msg("measure: %s", err.msg);
}

/* The meter of URL, copied. */
struct meter_copy {
	int found;
	char job[32], queue[32];
	int64_t bytes, since_ms;
};

static int copy_meter(const struct hb_storage_meter *m, void *arg)
{
	struct meter_copy *c = arg;

	c->found++;
	snprintf(c->job, sizeof(c->job), "%s", m->job_id);
	snprintf(c->queue, sizeof(c->queue), "%s", m->queue ? m->queue : "");
	c->bytes = m->bytes;
	c->since_ms = m->since_ms;
	return 0;
}

static struct meter_copy meter(struct fx *fx, int held)
{
	struct meter_copy c = { 0 };
	struct hb_err err = { 0 };

	assert_int_equal(hb_store_storage_list(fx->t.st, URL, held, copy_meter,
					       &c, &err),
			 0);
	return c;
}

/* A job's entries, the last one copied. */
struct seen {
	int n;
	int64_t amount, mib_s;
	struct hb_ledger_entry last;
	char part[16], account[32], queue[32], version[8];
};

static int seen_cb(const struct hb_ledger_entry *e, void *arg)
{
	struct seen *s = arg;

	s->n++;
	s->amount += e->amount_micros;
	s->mib_s += e->storage_mib_s;
	s->last = *e;
	snprintf(s->part, sizeof(s->part), "%s", e->part ? e->part : "");
	snprintf(s->account, sizeof(s->account), "%s",
		 e->account ? e->account : "");
	snprintf(s->queue, sizeof(s->queue), "%s", e->queue ? e->queue : "");
	snprintf(s->version, sizeof(s->version), "%s",
		 e->rate_version ? e->rate_version : "");
	return 0;
}

static struct seen entries(struct fx *fx, const char *job)
{
	struct seen s = { 0 };
	struct hb_err err = { 0 };

	assert_int_equal(hb_store_ledger_list(fx->t.st, job, seen_cb, &s, &err),
			 0);
	return s;
}

static int64_t price(struct fx *fx, const char *queue, int64_t at,
		     uint64_t bytes, uint64_t seconds)
{
	struct hb_err err = { 0 };
	int64_t amount = -1;

	assert_int_equal(hb_rate_price_storage(&fx->card, HB_RATE_KUBE, queue,
					       at, bytes, seconds, &amount,
					       NULL, &err),
			 0);
	return amount;
}

/* The first measurement charges nothing; the next charges the hour in
 * between at the bytes the first found, exactly as the card prices it;
 * the fraction of a second waits for the next one; a measurement of no
 * bytes stops the charges after the period it closes. */
static void test_charges_interval_at_old_bytes(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	int64_t t0 = JUNE + 86400, mib, amount;
	struct hb_err err = { 0 };
	struct meter_copy c;
	struct seen s;

	measure_ok(fx, fx->a, "physics", NULL, 100 * GB, t0 * 1000 + 500, &res);
	assert_int_equal(res.entries, 0);
	assert_int_equal(entries(fx, fx->a).n, 0);
	c = meter(fx, 0);
	assert_int_equal(c.found, 1);
	assert_string_equal(c.job, fx->a);
	assert_int_equal(c.bytes, 100 * GB);
	assert_int_equal(c.since_ms, t0 * 1000); /* whole seconds */

	/* an hour and 0.7 s later, 50 GB: the hour at 100 GB */
	measure_ok(fx, NULL, NULL, NULL, 50 * GB, (t0 + 3600) * 1000 + 700,
		   &res);
	assert_int_equal(res.entries, 1);
	assert_int_equal(res.seconds, 3600);
	assert_int_equal(res.bytes, 100 * GB);
	/* 100 GB x 1 h at 0.02 a GB-month of 720 h: 2777.78 -> 2778 */
	assert_int_equal(res.amount_micros, 2778);
	assert_int_equal(res.amount_micros,
			 price(fx, NULL, t0, 100 * GB, 3600));
	assert_string_equal(res.job_id, fx->a);
	assert_string_equal(res.account, "physics");
	s = entries(fx, fx->a);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.part, HB_LEDGER_PART_STORAGE);
	assert_int_equal(s.last.side, HB_TARGET_KUBERNETES);
	assert_string_equal(s.account, "physics");
	assert_string_equal(s.version, "v1");
	assert_int_equal(s.last.period_start_ms, t0 * 1000);
	assert_int_equal(s.last.period_end_ms, (t0 + 3600) * 1000);
	/* 10^11 x 3600 / 2^20 = 343322753.9 -> 343322754 */
	assert_int_equal(s.last.storage_mib_s, 343322754);
	assert_int_equal(s.last.cpu_mcore_s, 0);
	c = meter(fx, 1);
	assert_int_equal(c.bytes, 50 * GB);
	assert_int_equal(c.since_ms, (t0 + 3600) * 1000);

	/* the prefix is gone: its last hour at 50 GB, then nothing */
	measure_ok(fx, NULL, NULL, NULL, 0, (t0 + 7200) * 1000, &res);
	assert_int_equal(res.entries, 1);
	assert_int_equal(res.amount_micros,
			 price(fx, NULL, t0 + 3600, 50 * GB, 3600));
	assert_int_equal(meter(fx, 1).found, 0); /* holds nothing */
	assert_int_equal(meter(fx, 0).bytes, 0);
	measure_ok(fx, NULL, NULL, NULL, 0, (t0 + 10800) * 1000, &res);
	assert_int_equal(res.entries, 0);
	measure_ok(fx, NULL, NULL, NULL, 0, (t0 + 10801) * 1000, &res);
	assert_int_equal(entries(fx, fx->a).n, 2);

	/* bytes again: charged from when they were seen, not before */
	measure_ok(fx, NULL, NULL, NULL, 10 * GB, (t0 + 20000) * 1000, &res);
	measure_ok(fx, NULL, NULL, NULL, 10 * GB, (t0 + 20060) * 1000, &res);
	assert_int_equal(res.seconds, 60);
	s = entries(fx, fx->a);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.last.period_start_ms, (t0 + 20000) * 1000);

	/* what status shows: the job's storage entries added up */
	assert_int_equal(
		hb_store_storage_charged(fx->t.st, fx->a, &mib, &amount, &err),
		0);
	assert_int_equal(amount, s.amount);
	assert_int_equal(mib, s.mib_s);
	assert_int_equal(
		hb_store_storage_charged(fx->t.st, fx->b, &mib, &amount, &err),
		0);
	assert_int_equal(amount, 0);
}

/* A period across rate changes is cut there, each piece at its own
 * version's rates in the job's queue (a class the version lacks: its
 * default); a version that prices no Kubernetes charges nothing. */
static void test_rate_changes(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	struct meter_copy c;
	struct seen s;

	measure_ok(fx, fx->a, "physics", "fast", 3 * GB, (JULY - 1800) * 1000,
		   &res);
	measure_ok(fx, NULL, NULL, NULL, 3 * GB, (JULY + 1800) * 1000, &res);
	assert_int_equal(res.entries, 2);
	assert_int_equal(res.seconds, 3600);
	assert_int_equal(res.amount_micros,
			 price(fx, "fast", JULY - 1800, 3 * GB, 1800) +
				 price(fx, NULL, JULY, 3 * GB, 1800));
	/* 3 GB x 30 min at 0.05 a month: 104.17 -> 104; at 0.01: 21 */
	assert_int_equal(price(fx, "fast", JULY - 1800, 3 * GB, 1800), 104);
	assert_int_equal(price(fx, NULL, JULY, 3 * GB, 1800), 21);
	s = entries(fx, fx->a);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.version, "v2");
	assert_string_equal(s.queue, "fast");
	assert_int_equal(s.last.period_start_ms, JULY * 1000);

	/* to an hour into October: v2 up to October 1st, v3 nothing */
	measure_ok(fx, NULL, NULL, NULL, 3 * GB, (OCTOBER + 3600) * 1000, &res);
	assert_int_equal(res.entries, 1);
	assert_int_equal(res.seconds, OCTOBER - JULY - 1800);
	assert_int_equal(res.amount_micros, price(fx, NULL, JULY + 1800, 3 * GB,
						  OCTOBER - JULY - 1800));
	c = meter(fx, 1);
	assert_int_equal(c.since_ms, (OCTOBER + 3600) * 1000);
	assert_string_equal(c.queue, "fast");
}

/* The location is the key: a second job that measures it takes it over,
 * the time before charged to the first. */
static void test_handover(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	int64_t t0 = JUNE;

	measure_ok(fx, fx->a, "physics", NULL, 2 * GB, t0 * 1000, &res);
	measure_ok(fx, fx->b, "chemistry", NULL, 4 * GB, (t0 + 600) * 1000,
		   &res);
	assert_string_equal(res.job_id, fx->a);
	assert_string_equal(res.account, "physics");
	assert_int_equal(res.amount_micros, price(fx, NULL, t0, 2 * GB, 600));
	measure_ok(fx, NULL, NULL, NULL, 4 * GB, (t0 + 1200) * 1000, &res);
	assert_string_equal(res.job_id, fx->b);
	assert_string_equal(res.account, "chemistry");
	assert_int_equal(res.amount_micros,
			 price(fx, NULL, t0 + 600, 4 * GB, 600));
	assert_int_equal(entries(fx, fx->a).n, 1);
	assert_int_equal(entries(fx, fx->b).n, 1);
	assert_string_equal(meter(fx, 1).job, fx->b);
}

/* The entries and the meter's new state commit together: a meter that
 * cannot be written (a job that does not exist) leaves no entry and the
 * meter as it was; nor does a caller's transaction rolled back. */
static void test_atomic(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	struct hb_err err = { 0 };
	int64_t t0 = JUNE;
	struct meter_copy c;

	measure_ok(fx, fx->a, "physics", NULL, 7 * GB, t0 * 1000, &res);
	assert_int_not_equal(measure(fx, "hb-999999", "x", NULL, 1 * GB,
				     (t0 + 3600) * 1000, &res, &err),
			     0);
	assert_int_equal(entries(fx, fx->a).n, 0);
	c = meter(fx, 0);
	assert_string_equal(c.job, fx->a);
	assert_int_equal(c.bytes, 7 * GB);
	assert_int_equal(c.since_ms, t0 * 1000);

	assert_int_equal(hb_store_begin(fx->t.st, &err), 0);
	measure_ok(fx, NULL, NULL, NULL, 1 * GB, (t0 + 3600) * 1000, &res);
	assert_int_equal(res.entries, 1);
	hb_store_rollback(fx->t.st);
	assert_int_equal(entries(fx, fx->a).n, 0);
	assert_int_equal(meter(fx, 0).since_ms, t0 * 1000);

	/* and once more, for real: the same hour, charged once */
	measure_ok(fx, NULL, NULL, NULL, 1 * GB, (t0 + 3600) * 1000, &res);
	measure_ok(fx, NULL, NULL, NULL, 1 * GB, (t0 + 3600) * 1000, &res);
	assert_int_equal(res.entries, 0);
	assert_int_equal(entries(fx, fx->a).n, 1);
}

/* A first measurement needs its job; a clock set back charges nothing
 * and keeps the meter's instant. */
static void test_errors_and_clock(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	struct hb_err err = { 0 };
	int64_t t0 = JUNE;

	assert_int_equal(
		measure(fx, NULL, NULL, NULL, GB, t0 * 1000, &res, &err),
		HB_EINVAL);
	assert_non_null(strstr(err.msg, "job_id required"));
	assert_int_equal(meter(fx, 0).found, 0);
	measure_ok(fx, fx->a, "physics", NULL, GB, t0 * 1000, &res);
	measure_ok(fx, NULL, NULL, NULL, 2 * GB, (t0 - 100) * 1000, &res);
	assert_int_equal(res.entries, 0);
	assert_int_equal(meter(fx, 0).since_ms, t0 * 1000);
	assert_int_equal(meter(fx, 0).bytes, 2 * GB);
}

/* Time before the card's first version is not charged. */
static void test_before_first_version(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	const int64_t jan1 = 1767225600; /* 2026-01-01T00:00:00Z */
	struct seen s;

	measure_ok(fx, fx->a, "physics", NULL, GB, (jan1 - 1800) * 1000, &res);
	measure_ok(fx, NULL, NULL, NULL, GB, (jan1 + 1800) * 1000, &res);
	assert_int_equal(res.entries, 1);
	assert_int_equal(res.seconds, 1800);
	s = entries(fx, fx->a);
	assert_int_equal(s.last.period_start_ms, jan1 * 1000);
}

/* The report sums storage per line and in its total. */
static void test_report_sums_storage(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	struct hb_ledger_report *r = NULL;
	struct hb_err err = { 0 };
	int64_t t0 = JUNE, a, b;

	measure_ok(fx, fx->a, "physics", NULL, 5 * GB, t0 * 1000, &res);
	measure_ok(fx, NULL, NULL, NULL, 5 * GB, (t0 + 3600) * 1000, &res);
	measure_ok(fx, fx->b, "chemistry", NULL, 5 * GB, (t0 + 7200) * 1000,
		   &res);
	measure_ok(fx, NULL, NULL, NULL, 5 * GB, (t0 + 9000) * 1000, &res);
	a = entries(fx, fx->a).mib_s;
	b = entries(fx, fx->b).mib_s;
	assert_true(a > 0 && b > 0);
	assert_int_equal(hb_store_report(fx->t.st, HB_BY_ACCOUNT, 0, INT64_MAX,
					 &r, &err),
			 0);
	assert_int_equal(r->n_lines, 2);
	assert_string_equal(r->lines[0].key, "chemistry");
	assert_int_equal(r->lines[0].storage_mib_s, b);
	assert_string_equal(r->lines[1].key, "physics");
	assert_int_equal(r->lines[1].storage_mib_s, a);
	assert_int_equal(r->total.storage_mib_s, a + b);
	assert_int_equal(r->total.amount_micros,
			 entries(fx, fx->a).amount + entries(fx, fx->b).amount);
	hb_ledger_report_free(r);
}

/* A reversal of a storage entry negates its MiB-seconds. */
static void test_reversal_negates(void **state)
{
	struct fx *fx = *state;
	struct hb_meter_storage_result res;
	struct hb_err err = { 0 };
	struct seen s;

	measure_ok(fx, fx->a, "physics", NULL, 5 * GB, JUNE * 1000, &res);
	measure_ok(fx, NULL, NULL, NULL, 5 * GB, (JUNE + 60) * 1000, &res);
	s = entries(fx, fx->a);
	assert_int_equal(
		hb_store_ledger_reverse(fx->t.st, s.last.id, NULL, &err), 0);
	s = entries(fx, fx->a);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.mib_s, 0);
	assert_int_equal(s.amount, 0);
	assert_string_equal(s.part, HB_LEDGER_PART_STORAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_charges_interval_at_old_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_changes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_handover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors_and_clock, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_before_first_version,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_sums_storage, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reversal_negates, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
