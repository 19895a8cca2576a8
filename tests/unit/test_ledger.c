/*
 * test_ledger.c - the cost ledger in the store: batched appends (all or
 * none), reversals (negated quantities, never twice, never of a
 * reversal), UPDATE and DELETE refused, reports whose lines add up to the
 * total to the micro-unit for every grouping over generated entries,
 * months split at a boundary in UTC, and the read-only handle; the
 * series by day and month, and the idle column's pieces: a card's
 * capacity, its cost over a window, its allocation over lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hpcbridge/ratecard.h"
#include "hpcbridge/store.h"
#include "testutil.h"

#define HOUR_MS INT64_C(3600000)
/* 2026-11-01T00:00:00Z */
#define NOV1 INT64_C(1793491200000)

struct fx {
	struct hb_test_store t;
	char jobs[64][32];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct hb_err err = { 0 };

	if (!fx)
		return -1;
	if (hb_test_store_open(&fx->t, "hb-ledger-test"))
		return -1;
	for (int i = 0; i < 64; i++) {
		struct hb_job_row j = { .entry = HB_ENTRY_CLI,
					.uid = 1000,
					.slurm_job_id = -1,
					.exit_code = -1 };

		if (hb_store_job_add(fx->t.st, &j, &err))
			return -1;
		memcpy(fx->jobs[i], j.id, sizeof(j.id));
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	hb_test_store_close(&fx->t);
	free(fx);
	return 0;
}

static int64_t raw_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t v = -999;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* A raw statement that must fail; its message (caller frees). */
static char *raw_fails(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL, *out;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(db, sql, NULL, NULL, &msg),
			     SQLITE_OK);
	out = strdup(msg ? msg : "");
	sqlite3_free(msg);
	sqlite3_close(db);
	return out;
}

static struct hb_ledger_entry entry(const char *job, int64_t end_ms,
				    int64_t amount)
{
	struct hb_ledger_entry e = { 0 };

	e.job_id = job;
	e.side = HB_TARGET_SLURM;
	e.account = "physics";
	e.user = "alice";
	e.partition = "cpu";
	e.rate_version = "2026-11";
	e.period_start_ms = end_ms - HOUR_MS;
	e.period_end_ms = end_ms;
	e.cpu_mcore_s = 4 * 3600 * 1000;
	e.mem_mib_s = 8192 * 3600;
	e.amount_micros = amount;
	return e;
}

struct got {
	int n;
	struct hb_ledger_entry e[8];
	char gpu0[8][HB_LEDGER_TYPE_MAX + 1];
	char rv[8][HB_LEDGER_TYPE_MAX + 1]; /* strings are borrowed */
};

static int collect(const struct hb_ledger_entry *e, void *arg)
{
	struct got *g = arg;

	if (g->n < 8) {
		g->e[g->n] = *e;
		if (e->n_gpu)
			snprintf(g->gpu0[g->n], sizeof(g->gpu0[0]), "%s",
				 e->gpu[0].type);
		snprintf(g->rv[g->n], sizeof(g->rv[0]), "%s",
			 e->rate_version ? e->rate_version : "");
	}
	g->n++;
	return 0;
}

static void test_append_batch(void **state)
{
	struct fx *fx = *state;
	struct hb_ledger_entry e[3];
	struct hb_err err = { 0 };
	struct got g = { 0 };

	for (int i = 0; i < 3; i++)
		e[i] = entry(fx->jobs[0], NOV1 + i * HOUR_MS, 1000000 + i);
	e[1].side = HB_TARGET_KUBERNETES;
	e[1].queue = "gpu-q";
	e[1].gpu[0] = (struct hb_ledger_gpu){ "nvidia.com/a100", 7200 };
	e[1].gpu[1] = (struct hb_ledger_gpu){ "h100", 3600 };
	e[1].n_gpu = 2;
	e[2].egress_bytes = 12345;
	assert_int_equal(hb_store_ledger_append(fx->t.st, e, 3, &err), 0);
	assert_true(e[0].id > 0 && e[1].id == e[0].id + 1 &&
		    e[2].id == e[1].id + 1);
	assert_int_equal(
		hb_store_ledger_list(fx->t.st, fx->jobs[0], collect, &g, &err),
		0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.e[1].side, HB_TARGET_KUBERNETES);
	assert_int_equal(g.e[1].n_gpu, 2);
	assert_string_equal(g.gpu0[1], "nvidia.com/a100");
	assert_int_equal(g.e[1].gpu[0].seconds, 7200);
	assert_int_equal(g.e[2].egress_bytes, 12345);
	assert_int_equal(g.e[2].amount_micros, 1000002);
	assert_int_equal(g.e[0].cpu_mcore_s, 4 * 3600 * 1000);

	/* All or none: a bad entry in a batch keeps nothing, and names its
	 * index and field. */
	e[0] = entry(fx->jobs[1], NOV1, 5);
	e[1] = entry(fx->jobs[1], NOV1, 5);
	e[1].rate_version = "v1,v2";
	assert_int_equal(hb_store_ledger_append(fx->t.st, e, 2, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "entries[1]: rate_version"));
	memset(&err, 0, sizeof(err));
	e[1] = entry("hb-999999", NOV1, 5); /* no such job: foreign key */
	assert_int_equal(hb_store_ledger_append(fx->t.st, e, 2, &err), HB_ENOENT);
	assert_non_null(strstr(err.msg, "entries[1]"));
	assert_int_equal(raw_int(fx->t.path, "SELECT count(*) FROM ledger"), 3);
	memset(&err, 0, sizeof(err));
	e[0].amount_micros = -1;
	assert_int_equal(hb_store_ledger_append(fx->t.st, e, 1, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "negative"));
	memset(&err, 0, sizeof(err));
	e[0] = entry(fx->jobs[1], NOV1, 5);
	e[0].gpu[0] = (struct hb_ledger_gpu){ "a\"100", 1 };
	e[0].n_gpu = 1;
	assert_int_equal(hb_store_ledger_append(fx->t.st, e, 1, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "entries[0]: gpu[0]"));
}

static void test_reversal(void **state)
{
	struct fx *fx = *state;
	struct hb_ledger_entry e = entry(fx->jobs[2], NOV1, 2500000);
	struct hb_err err = { 0 };
	struct got g = { 0 };
	int64_t rev = 0, again = 0;
	char *msg;

	e.gpu[0] = (struct hb_ledger_gpu){ "a100", 3600 };
	e.n_gpu = 1;
	e.egress_bytes = 100;
	assert_int_equal(hb_store_ledger_append(fx->t.st, &e, 1, &err), 0);
	assert_int_equal(hb_store_ledger_reverse(fx->t.st, e.id, &rev, &err), 0);
	assert_true(rev > e.id);
	assert_int_equal(
		hb_store_ledger_list(fx->t.st, fx->jobs[2], collect, &g, &err),
		0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.e[1].reverses, e.id);
	assert_int_equal(g.e[1].amount_micros, -2500000);
	assert_int_equal(g.e[1].cpu_mcore_s, -e.cpu_mcore_s);
	assert_int_equal(g.e[1].mem_mib_s, -e.mem_mib_s);
	assert_int_equal(g.e[1].egress_bytes, -100);
	assert_int_equal(g.e[1].gpu[0].seconds, -3600);
	assert_string_equal(g.gpu0[1], "a100");
	assert_int_equal(g.e[1].period_end_ms, NOV1);
	assert_string_equal(g.rv[1], "2026-11");
	assert_int_equal(raw_int(fx->t.path, "SELECT sum(amount_micros) FROM "
					   "ledger WHERE job_id = 'hb-000003'"),
			 0);

	/* Twice: refused; a reversal's reversal: refused; none: ENOENT. */
	assert_int_equal(hb_store_ledger_reverse(fx->t.st, e.id, &again, &err),
			 HB_EEXIST);
	assert_non_null(strstr(err.msg, "reversed already"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_ledger_reverse(fx->t.st, rev, NULL, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "itself a reversal"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_ledger_reverse(fx->t.st, 999999, NULL, &err),
			 HB_ENOENT);
	assert_int_equal(raw_int(fx->t.path, "SELECT count(*) FROM ledger"), 2);
	/* The schema refuses a second reversal whoever writes it. */
	msg = raw_fails(fx->t.path,
			"INSERT INTO ledger (at_ms, job_id, side, "
			"amount_micros, reverses) VALUES (1, 'hb-000003', "
			"'slurm', -1, 1)");
	assert_non_null(strstr(msg, "UNIQUE constraint failed"));
	free(msg);
	/* Corrections are new rows: UPDATE and DELETE fail. */
	msg = raw_fails(fx->t.path, "UPDATE ledger SET amount_micros = 0");
	assert_non_null(strstr(msg, "ledger is append-only"));
	free(msg);
	msg = raw_fails(fx->t.path, "DELETE FROM ledger");
	assert_non_null(strstr(msg, "ledger is append-only"));
	free(msg);
	assert_int_equal(raw_int(fx->t.path, "SELECT count(*) FROM ledger WHERE "
					   "amount_micros = 2500000"),
			 1);
}

/* Generated entries: pseudo-random accounts (some NULL, one with a comma
 * and a quote), users, partitions, queues, sides, GPUs, amounts, over
 * October and November; a few reversed; jobs in the pilot's groups. */
static int64_t fill(struct fx *fx, int n)
{
	static const char *const acct[] = { "physics", "chem,\"bio\"", NULL,
					    "astro" };
	static const char *const part[] = { "cpu", "gpu", NULL };
	static const char *const gpu[] = { "a100", "h100", "nvidia.com/gpu" };
	struct hb_ledger_entry *e = calloc((size_t)n, sizeof(*e));
	struct hb_err err = { 0 };
	uint64_t x = 88172645463325252ull;
	int64_t sum = 0;

	assert_non_null(e);
	for (int i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		e[i] = entry(fx->jobs[x % 64],
			     NOV1 + (int64_t)(x % 97 - 48) * HOUR_MS,
			     (int64_t)(x % 9999991));
		e[i].account = acct[(x >> 8) % 4];
		e[i].user = (x >> 12) % 2 ? "alice" : "bob";
		e[i].partition = part[(x >> 16) % 3];
		e[i].queue = (x >> 20) % 2 ? "q1" : NULL;
		e[i].side =
			(x >> 24) % 2 ? HB_TARGET_SLURM : HB_TARGET_KUBERNETES;
		e[i].rate_version = (x >> 28) % 2 ? "2026-10" : "2026-11";
		if ((x >> 32) % 3 == 0) {
			e[i].gpu[0].type = gpu[(x >> 36) % 3];
			e[i].gpu[0].seconds = (int64_t)((x >> 40) % 10000);
			e[i].n_gpu = 1;
		}
		sum += e[i].amount_micros;
	}
	assert_int_equal(hb_store_ledger_append(fx->t.st, e, (size_t)n, &err), 0);
	/* a third of the jobs in the pilot, a third in its control group */
	for (int i = 0; i < 64; i++)
		if (i % 3 < 2)
			assert_int_equal(
				hb_store_decision_add(
					fx->t.st, fx->jobs[i], HB_TARGET_SLURM,
					i % 3 ? "{\"placement\":{\"pilot\":"
						"{\"selected\":false}}}"
					      : "{\"placement\":{\"pilot\":"
						"{\"selected\":true}}}",
					NULL, NULL, &err),
				0);
	for (int i = 0; i < n; i += 17) {
		assert_int_equal(
			hb_store_ledger_reverse(fx->t.st, e[i].id, NULL, &err),
			0);
		sum -= e[i].amount_micros;
	}
	free(e);
	return sum;
}

/* NULL first, then bytes: the order of report lines and series keys. */
static int key_cmp_test(const char *a, const char *b)
{
	if (!a || !b)
		return a == b ? 0 : a ? 1 : -1;
	return strcmp(a, b);
}

static void test_report_sums(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	int64_t sum = fill(fx, 2000);
	int64_t jobs = raw_int(fx->t.path, "SELECT count(DISTINCT job_id) FROM "
					 "ledger");
	int64_t cpu = raw_int(fx->t.path, "SELECT sum(cpu_mcore_s) FROM ledger");
	int64_t gsum = raw_int(fx->t.path, "SELECT sum(g.value) FROM ledger, "
					 "json_each(ledger.gpu_s) AS g");

	for (int by = 0; by < HB__BY_COUNT; by++) {
		struct hb_ledger_report *r = NULL;
		int64_t a = 0, c = 0, g = 0, gt = 0;

		assert_int_equal(hb_store_report(fx->t.st, (enum hb_ledger_by)by,
						 0, INT64_MAX, &r, &err),
				 0);
		assert_true(r->n_lines > 1);
		for (size_t i = 0; i < r->n_lines; i++) {
			a += r->lines[i].amount_micros;
			c += r->lines[i].cpu_mcore_s;
			for (size_t t = 0; t < r->n_types; t++)
				g += r->lines[i].gpu_s[t];
			if (i)
				assert_true(r->lines[i - 1].key == NULL ||
					    strcmp(r->lines[i - 1].key,
						   r->lines[i].key) < 0);
		}
		for (size_t t = 0; t < r->n_types; t++)
			gt += r->total.gpu_s[t];
		/* to the micro-unit, against an independent sum */
		assert_int_equal(a, sum);
		assert_int_equal(r->total.amount_micros, sum);
		assert_int_equal(c, cpu);
		assert_int_equal(r->total.cpu_mcore_s, cpu);
		assert_int_equal(g, gsum);
		assert_int_equal(gt, gsum);
		assert_int_equal(r->total.jobs, jobs);
		assert_int_equal(r->n_types, 3);
		assert_string_equal(r->total.rate_versions, "2026-10,2026-11");
		hb_ledger_report_free(r);
	}
}

static void test_report_months(void **state)
{
	struct fx *fx = *state;
	struct hb_ledger_entry e[3] = {
		entry(fx->jobs[5], NOV1 - 1, 100), /* 23:59:59.999 */
		entry(fx->jobs[5], NOV1, 20),	   /* midnight: November */
		entry(fx->jobs[6], NOV1 + HOUR_MS, 3),
	};
	struct hb_ledger_report *r = NULL;
	struct hb_err err = { 0 };

	assert_int_equal(hb_store_ledger_append(fx->t.st, e, 3, &err), 0);
	assert_int_equal(
		hb_store_report(fx->t.st, HB_BY_MONTH, 0, INT64_MAX, &r, &err),
		0);
	assert_int_equal(r->n_lines, 2);
	assert_string_equal(r->lines[0].key, "2026-10");
	assert_int_equal(r->lines[0].amount_micros, 100);
	assert_int_equal(r->lines[0].jobs, 1);
	assert_string_equal(r->lines[1].key, "2026-11");
	assert_int_equal(r->lines[1].amount_micros, 23);
	assert_int_equal(r->lines[1].jobs, 2);
	/* the job in both months counts once in the total */
	assert_int_equal(r->total.jobs, 2);
	assert_int_equal(r->total.amount_micros, 123);
	hb_ledger_report_free(r);
	/* [from, to): November alone */
	assert_int_equal(hb_store_report(fx->t.st, HB_BY_ACCOUNT, NOV1,
					 NOV1 + 30 * 24 * HOUR_MS, &r, &err),
			 0);
	assert_int_equal(r->n_lines, 1);
	assert_int_equal(r->total.amount_micros, 23);
	hb_ledger_report_free(r);
	assert_int_equal(hb_store_report(fx->t.st, HB__BY_COUNT, 0, 1, &r, &err),
			 HB_EINVAL);
	assert_null(r);
}

/* The series: every key's cells add up to its report line, all cells to
 * the total, to the micro-unit; buckets run without a gap from the first
 * entry's to the last's; AUTO cuts a few days by day, months by month. */
static void test_report_series(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	int64_t sum = fill(fx, 2000);
	struct hb_ledger_series *s = NULL;
	struct hb_ledger_report *r = NULL;

	for (int by = 0; by < HB__BY_COUNT; by++) {
		assert_int_equal(hb_store_report(fx->t.st, (enum hb_ledger_by)by,
						 0, INT64_MAX, &r, &err),
				 0);
		assert_int_equal(hb_store_report_series(
					 fx->t.st, (enum hb_ledger_by)by,
					 HB_STEP_AUTO, 0, INT64_MAX, &s, &err),
				 0);
		/* entries end from Oct 30 to Nov 3: by day, 5 days */
		assert_int_equal(s->step, HB_STEP_DAY);
		assert_int_equal(s->n_buckets, 5);
		assert_string_equal(s->buckets[0], "2026-10-30");
		assert_string_equal(s->buckets[2], "2026-11-01");
		assert_string_equal(s->buckets[4], "2026-11-03");
		assert_int_equal(s->total_micros, sum);
		assert_int_equal(s->n_keys, r->n_lines);
		for (size_t k = 0; k < s->n_keys; k++) {
			int64_t a = 0;

			for (size_t b = 0; b < s->n_buckets; b++)
				a += s->amount_micros[k * s->n_buckets + b];
			assert_int_equal(
				key_cmp_test(s->keys[k], r->lines[k].key), 0);
			assert_int_equal(a, r->lines[k].amount_micros);
		}
		hb_ledger_series_free(s);
		hb_ledger_report_free(r);
	}
	/* by month: October and November, adding up to the month lines */
	assert_int_equal(
		hb_store_report(fx->t.st, HB_BY_MONTH, 0, INT64_MAX, &r, &err),
		0);
	assert_int_equal(hb_store_report_series(fx->t.st, HB_BY_ACCOUNT,
						HB_STEP_MONTH, 0, INT64_MAX, &s,
						&err),
			 0);
	assert_int_equal(s->n_buckets, 2);
	assert_string_equal(s->buckets[0], "2026-10");
	assert_string_equal(s->buckets[1], "2026-11");
	for (size_t b = 0; b < 2; b++) {
		int64_t a = 0;

		for (size_t k = 0; k < s->n_keys; k++)
			a += s->amount_micros[k * 2 + b];
		assert_int_equal(a, r->lines[b].amount_micros);
	}
	hb_ledger_series_free(s);
	hb_ledger_report_free(r);
	/* a three-month window is cut by month, a day's by day: one
	 * bucket; an empty window has none */
	assert_int_equal(
		hb_store_report_series(fx->t.st, HB_BY_ACCOUNT, HB_STEP_AUTO,
				       NOV1 - 61 * 24 * HOUR_MS,
				       NOV1 + 30 * 24 * HOUR_MS, &s, &err),
		0);
	assert_int_equal(s->step, HB_STEP_MONTH);
	assert_int_equal(s->n_buckets, 2);
	hb_ledger_series_free(s);
	assert_int_equal(hb_store_report_series(fx->t.st, HB_BY_USER,
						HB_STEP_AUTO, NOV1,
						NOV1 + 24 * HOUR_MS, &s, &err),
			 0);
	assert_int_equal(s->step, HB_STEP_DAY);
	assert_int_equal(s->n_buckets, 1);
	assert_string_equal(s->buckets[0], "2026-11-01");
	assert_int_equal(s->n_keys, 2); /* alice, bob */
	assert_true(s->has[0] && s->has[1]);
	hb_ledger_series_free(s);
	assert_int_equal(hb_store_report_series(fx->t.st, HB_BY_USER,
						HB_STEP_AUTO, 0, 1, &s, &err),
			 0);
	assert_int_equal(s->n_buckets + s->n_keys, 0);
	assert_int_equal(s->total_micros, 0);
	hb_ledger_series_free(s);
	assert_int_equal(hb_store_report_series(fx->t.st, HB_BY_USER,
						HB_STEP_AUTO, 2, 1, &s, &err),
			 HB_EINVAL);
	assert_null(s);
}

/* Idle cost spread over lines: exact sums, the remainders' order, lines
 * that take nothing. */
static void test_idle_allocate(void **state)
{
	int64_t out[8];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	assert_int_equal(hb_idle_allocate(HB_IDLE_PROPORTIONAL, 10,
					  (int64_t[]){ 1, 1, 1 }, 3, out),
			 0);
	assert_int_equal(out[0], 4); /* a tie: the first line */
	assert_int_equal(out[1] + out[2], 6);
	assert_int_equal(out[1], 3);
	assert_int_equal(hb_idle_allocate(HB_IDLE_PROPORTIONAL, 100,
					  (int64_t[]){ 3, 0, -5, 7 }, 4, out),
			 0);
	assert_int_equal(out[0], 30);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 0);
	assert_int_equal(out[3], 70);
	/* 1/3 and 2/3 of one micro-unit: the larger remainder takes it */
	assert_int_equal(hb_idle_allocate(HB_IDLE_PROPORTIONAL, 1,
					  (int64_t[]){ 1, 2 }, 2, out),
			 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 1);
	/* even: over the lines charged, the first ones take what is left */
	assert_int_equal(hb_idle_allocate(HB_IDLE_EVEN, 7,
					  (int64_t[]){ 5, 0, 9, 1 }, 4, out),
			 0);
	assert_int_equal(out[0], 3);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 2);
	assert_int_equal(out[3], 2);
	/* none, or nobody to take it: nothing; negative: refused */
	assert_int_equal(
		hb_idle_allocate(HB_IDLE_NONE, 7, (int64_t[]){ 5, 9 }, 2, out),
		0);
	assert_int_equal(out[0] + out[1], 0);
	assert_int_equal(
		hb_idle_allocate(HB_IDLE_EVEN, 7, (int64_t[]){ 0, -9 }, 2, out),
		0);
	assert_int_equal(out[0] + out[1], 0);
	assert_int_equal(
		hb_idle_allocate(HB_IDLE_EVEN, -1, (int64_t[]){ 1 }, 1, out),
		HB_EINVAL);
	/* the largest numbers: 128-bit products, still exact */
	assert_int_equal(
		hb_idle_allocate(HB_IDLE_PROPORTIONAL, INT64_MAX,
				 (int64_t[]){ INT64_MAX, INT64_MAX, 1 }, 3,
				 out),
		0);
	/* each 2^62 - 1 and a remainder of 2^62; the third's share is
	 * 0 with a remainder of 2^63 - 1, the largest: it takes the one
	 * micro-unit left */
	assert_int_equal(out[0], INT64_C(4611686018427387903));
	assert_int_equal(out[1], INT64_C(4611686018427387903));
	assert_int_equal(out[2], 1);
	/* random weights and amounts: the column sums to idle exactly */
	for (int round = 0; round < 2000; round++) {
		int64_t w[8], sum = 0, idle;
		size_t n = 1 + round % 8;
		enum hb_idle_cost how =
			round % 2 ? HB_IDLE_EVEN : HB_IDLE_PROPORTIONAL;
		int any = 0;

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			w[i] = (int64_t)(x % 1000000007) - 100000000;
			any |= w[i] > 0;
		}
		idle = (int64_t)(x >> 20);
		assert_int_equal(hb_idle_allocate(how, idle, w, n, out), 0);
		for (size_t i = 0; i < n; i++) {
			assert_true(out[i] >= 0);
			if (w[i] <= 0)
				assert_int_equal(out[i], 0);
			sum += out[i];
		}
		assert_int_equal(sum, any ? idle : 0);
	}
}

/* A card's capacity: read and checked, priced over a window that a
 * version change cuts in two. */
static void test_capacity_cost(void **state)
{
	static const char card_text[] =
		"currency: {code: EUR}\n"
		"idle_cost: even\n"
		"capacity:\n"
		"  slurm: {cpus: 10, memory_gb: 100, gpus: {A100: 2}}\n"
		"versions:\n"
		"  - version: a\n"
		"    effective: 2026-01-01\n"
		"    slurm:\n"
		"      default: {cpu_hour: 0.01, memory_gb_hour: 0.001,\n"
		"                gpu_hour: {a100: 1.5, default: 1}}\n"
		"  - version: b\n"
		"    effective: 2026-07-01\n"
		"    slurm:\n"
		"      default: {cpu_hour: 0.02, memory_gb_hour: 0.002,\n"
		"                gpu_hour: 2}\n";
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "capacity: {slurm: {cpus: x}}",
		  "capacity.slurm.cpus: expected "
		  "a whole number" },
		{ "capacity: {slurm: {disk: 1}}",
		  "capacity.slurm.disk: unknown "
		  "key" },
		{ "capacity: {lustre: {cpus: 1}}", "capacity.lustre: unknown "
						   "key" },
		{ "capacity: {slurm: {gpus: 3}}",
		  "capacity.slurm.gpus: expected "
		  "a mapping" },
	};
	struct hb_ratecard card;
	struct hb_err err = { 0 };
	int64_t amount = -1;
	/* 2026-06-30T23:00:00Z to 2026-07-01T01:00:00Z */
	int64_t from = INT64_C(1782860400), to = from + 7200;

	(void)state;
	assert_int_equal(hb_ratecard_parse(card_text, sizeof(card_text) - 1,
					   "card.yaml", &card, &err),
			 0);
	assert_int_equal(card.idle_cost, HB_IDLE_EVEN);
	assert_non_null(card.capacity[HB_RATE_SLURM]);
	assert_null(card.capacity[HB_RATE_KUBE]);
	assert_int_equal(card.capacity[HB_RATE_SLURM]->cpus, 10);
	assert_int_equal(card.capacity[HB_RATE_SLURM]->mem_bytes,
			 INT64_C(100) << 30);
	assert_string_equal(card.capacity[HB_RATE_SLURM]->gpus[0].type, "a100");
	/* an hour at a: 0.10 + 0.10 + 3.00; an hour at b: 0.20 + 0.20 +
	 * 4.00 */
	assert_int_equal(hb_ratecard_capacity_cost(&card, HB_RATE_SLURM, from,
						   to, &amount, &err),
			 0);
	assert_int_equal(amount, 3200000 + 4400000);
	assert_int_equal(hb_ratecard_capacity_cost(&card, HB_RATE_KUBE, from,
						   to, &amount, &err),
			 HB_ENOENT);
	assert_non_null(strstr(err.msg, "no capacity for kubernetes"));
	hb_ratecard_free(&card);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[512];

		snprintf(text, sizeof(text),
			 "currency: {code: EUR}\n%s\nversions:\n"
			 "  - {version: a, effective: 2026-01-01,\n"
			 "     slurm: {default: {cpu_hour: 1}}}\n",
			 bad[i].text);
		memset(&err, 0, sizeof(err));
		assert_int_equal(hb_ratecard_parse(text, strlen(text),
						   "card.yaml", &card, &err),
				 HB_EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: got '%s'", bad[i].msg, err.msg);
		assert_non_null(strstr(err.msg, "card.yaml:2: "));
	}
}

static void test_readonly(void **state)
{
	struct fx *fx = *state;
	struct hb_ledger_entry e = entry(fx->jobs[7], NOV1, 42);
	struct hb_ledger_report *r = NULL;
	struct hb_err err = { 0 };
	struct hb_store *ro = NULL;
	char missing[192];

	assert_int_equal(hb_store_ledger_append(fx->t.st, &e, 1, &err), 0);
	assert_int_equal(hb_store_open_readonly(fx->t.path, &ro, &err), 0);
	assert_int_equal(
		hb_store_report(ro, HB_BY_USER, 0, INT64_MAX, &r, &err), 0);
	assert_int_equal(r->total.amount_micros, 42);
	hb_ledger_report_free(r);
	/* a write through it fails, and leaves nothing */
	e = entry(fx->jobs[7], NOV1, 1);
	assert_int_equal(hb_store_ledger_append(ro, &e, 1, &err), HB_ESTORE);
	assert_non_null(strstr(err.msg, "readonly"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_ledger_reverse(ro, 1, NULL, &err), HB_ESTORE);
	hb_store_close(ro);
	assert_int_equal(raw_int(fx->t.path, "SELECT count(*) FROM ledger"), 1);
	/* never created */
	snprintf(missing, sizeof(missing), "%s/none.db", fx->t.dir);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_open_readonly(missing, &ro, &err), HB_ESTORE);
	assert_null(ro);
	assert_non_null(strstr(err.msg, missing));
	assert_int_equal(access(missing, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_append_batch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reversal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_sums, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_report_months, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_report_series, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
		cmocka_unit_test(test_idle_allocate),
		cmocka_unit_test(test_capacity_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
