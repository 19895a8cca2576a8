/*
 * test_pilot.c - the migration pilot report (hb_store_pilot_report())
 * and the ledger grouped by pilot group (HB_BY_PILOT), on a small store
 * made by hand: which jobs are in the pilot and control groups (the
 * latest decision decides; false is control; absent, a string or a
 * document that is not JSON is neither), which count (terminal, ended in
 * the window), and each figure: jobs, successes, median queue wait and
 * run time (odd and even counts, jobs that never started), cost per
 * core-hour rounded half up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpcbridge/store.h"
#include "testutil.h"

#define S_MS	INT64_C(1000)
#define HOUR_MS INT64_C(3600000)
/* 2026-11-01T00:00:00Z */
#define NOV1 INT64_C(1793491200000)

#define PILOT	"{\"placement\":{\"pilot\":{\"selected\":true}}}"
#define CONTROL "{\"placement\":{\"pilot\":{\"selected\":false}}}"
#define NOPILOT "{\"placement\":{\"side\":\"slurm\"}}"

struct fx {
	struct hb_test_store t;
	int64_t now;
};

static int64_t clock_of(void *arg)
{
	return ((struct fx *)arg)->now;
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	if (hb_test_store_open(&fx->t, "hb-pilot-test"))
		return -1;
	hb_store_set_clock(fx->t.st, clock_of, fx);
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

/* A job created at NOV1 + at_s, placed on side with the decision
 * documents doc0 (may be NULL: none) then doc1 (the latest; NULL: no
 * second), queued; it starts wait_s later (-1: never), runs run_s, and
 * ends in state fin (HB_JOB_RUNNING: still running).  Its one ledger
 * entry charges cores for an hour, amount micro-units (0: no entry). */
struct spec {
	int64_t at_s;
	enum hb_job_target side;
	const char *doc0, *doc1;
	int64_t wait_s, run_s;
	enum hb_job_state fin;
	int64_t cores, amount;
};

static void mkjob(struct fx *fx, const struct spec *s)
{
	struct hb_job_row j = { .entry = HB_ENTRY_CLI,
				.uid = 1000,
				.slurm_job_id = -1,
				.exit_code = -1 };
	struct hb_err err = { 0 };

	j.user = "alice";
	j.account = "physics";
	fx->now = NOV1 + s->at_s * S_MS;
	assert_int_equal(hb_store_job_add(fx->t.st, &j, &err), 0);
	if (s->doc0)
		assert_int_equal(hb_store_decision_add(fx->t.st, j.id, s->side,
						       s->doc0, "first", NULL,
						       &err),
				 0);
	if (s->doc1)
		assert_int_equal(hb_store_decision_add(fx->t.st, j.id, s->side,
						       s->doc1, "latest", NULL,
						       &err),
				 0);
	assert_int_equal(hb_store_job_set_state(fx->t.st, j.id, HB_JOB_QUEUED, -1,
						NULL, &err),
			 0);
	if (s->wait_s >= 0) {
		fx->now += s->wait_s * S_MS;
		assert_int_equal(hb_store_job_set_state(fx->t.st, j.id,
							HB_JOB_RUNNING, -1,
							NULL, &err),
				 0);
		fx->now += s->run_s * S_MS;
	}
	if (s->fin != HB_JOB_RUNNING)
		assert_int_equal(hb_store_job_set_state(fx->t.st, j.id, s->fin,
							-1, NULL, &err),
				 0);
	if (s->amount) {
		struct hb_ledger_entry e = { 0 };

		e.job_id = j.id;
		e.side = s->side;
		e.account = "physics";
		e.user = "alice";
		e.rate_version = "2026.11";
		e.period_end_ms = fx->now;
		e.period_start_ms = fx->now - HOUR_MS;
		e.cpu_mcore_s = s->cores * 3600 * 1000;
		e.amount_micros = s->amount;
		assert_int_equal(hb_store_ledger_append(fx->t.st, &e, 1, &err),
				 0);
	}
}

#define SL HB_TARGET_SLURM
#define KU HB_TARGET_KUBERNETES
#define OK HB_JOB_SUCCEEDED

static const struct spec jobs[] = {
	/* pilot, Slurm: 4 jobs, 3 succeeded; waits 10 20 30 40 s (median
	 * 25), runs 100 200 300 450 s (median 250); 8 core-hours for
	 * 10,000,004 micro-units: 1,250,000.5 a core-hour, 1,250,001 */
	{ 0, SL, NULL, PILOT, 10, 100, OK, 2, 2500001 },
	{ 1, SL, NULL, PILOT, 20, 200, OK, 2, 2500001 },
	{ 2, SL, NULL, PILOT, 30, 450, HB_JOB_FAILED, 2, 2500001 },
	/* control first, pilot latest: pilot */
	{ 3, SL, CONTROL, PILOT, 40, 300, OK, 2, 2500001 },
	/* pilot, Kubernetes: 3 jobs, 2 succeeded, one cancelled while
	 * queued (no wait, no run time, no cost); waits 5 and 9 s (median 7),
	 * runs 60 and 81 s (median 70.5, rounded down); 3 core-hours for
	 * 1,000,000: 333,333.33 */
	{ 4, KU, NULL, PILOT, 5, 60, OK, 1, 400000 },
	{ 5, KU, NULL, PILOT, 9, 81, OK, 2, 600000 },
	{ 6, KU, NULL, PILOT, -1, 0, HB_JOB_CANCELLED, 0, 0 },
	/* control, Slurm: 3 jobs, 1 succeeded; waits 60 90 120 s (median
	 * 90), runs 1000 2000 3000 s (median 2000); no core-hours in the
	 * ledger for one: 4 core-hours for 3,000,000 */
	{ 7, SL, NULL, CONTROL, 60, 1000, OK, 4, 3000000 },
	{ 8, SL, PILOT, CONTROL, 90, 2000, HB_JOB_FAILED, 0, 0 },
	{ 9, SL, NULL, CONTROL, 120, 3000, HB_JOB_LOST, 0, 0 },
	/* in neither group */
	{ 10, SL, NULL, NULL, 1, 1, OK, 1, 7 },	     /* no decision */
	{ 11, SL, NULL, NOPILOT, 1, 1, OK, 1, 11 },  /* no pilot key */
	{ 12, SL, PILOT, NOPILOT, 1, 1, OK, 1, 13 }, /* latest: none */
	{ 13, KU, NULL, "{\"placement\":{\"pilot\":{\"selected\":\"yes\"}}}", 1,
	  1, OK, 1, 17 },
	/* in a group but not counted: running; ended after the window */
	{ 14, SL, NULL, PILOT, 1, 1, HB_JOB_RUNNING, 1, 19 },
	{ 200000, KU, NULL, CONTROL, 1, 1, OK, 1, 23 },
};

static void fill(struct fx *fx)
{
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		mkjob(fx, &jobs[i]);
}

static void test_figures(void **state)
{
	struct fx *fx = *state;
	struct hb_pilot_report r;
	struct hb_err err = { 0 };
	const struct hb_pilot_cell *c;

	fill(fx);
	assert_int_equal(hb_store_pilot_report(fx->t.st, NOV1,
					       NOV1 + 24 * HOUR_MS, &r, &err),
			 0);
	c = &r.cell[HB_PILOT_PILOT][0];
	assert_int_equal(c->jobs, 4);
	assert_int_equal(c->succeeded, 3);
	assert_int_equal(c->waited, 4);
	assert_int_equal(c->wait_median_ms, 25000);
	assert_int_equal(c->ran, 4);
	assert_int_equal(c->run_median_ms, 250000);
	assert_int_equal(c->amount_micros, 10000004);
	assert_int_equal(c->cpu_mcore_s, 8 * 3600 * 1000);
	assert_int_equal(c->per_core_h_micros, 1250001);

	c = &r.cell[HB_PILOT_PILOT][1];
	assert_int_equal(c->jobs, 3);
	assert_int_equal(c->succeeded, 2);
	assert_int_equal(c->waited, 2);
	assert_int_equal(c->wait_median_ms, 7000);
	assert_int_equal(c->ran, 2);
	assert_int_equal(c->run_median_ms, 70500);
	assert_int_equal(c->amount_micros, 1000000);
	assert_int_equal(c->per_core_h_micros, 333333);

	c = &r.cell[HB_PILOT_CONTROL][0];
	assert_int_equal(c->jobs, 3);
	assert_int_equal(c->succeeded, 1);
	assert_int_equal(c->wait_median_ms, 90000);
	assert_int_equal(c->run_median_ms, 2000000);
	assert_int_equal(c->amount_micros, 3000000);
	assert_int_equal(c->per_core_h_micros, 750000);

	/* no jobs: no medians, no rate */
	c = &r.cell[HB_PILOT_CONTROL][1];
	assert_int_equal(c->jobs, 0);
	assert_int_equal(c->waited + c->ran, 0);
	assert_int_equal(c->wait_median_ms, -1);
	assert_int_equal(c->run_median_ms, -1);
	assert_int_equal(c->per_core_h_micros, -1);

	/* a wider window takes the late control job */
	assert_int_equal(hb_store_pilot_report(fx->t.st, 0, INT64_MAX, &r, &err),
			 0);
	assert_int_equal(r.cell[HB_PILOT_CONTROL][1].jobs, 1);
	assert_int_equal(r.cell[HB_PILOT_CONTROL][1].amount_micros, 23);
	assert_int_equal(r.cell[HB_PILOT_PILOT][0].jobs, 4);
	/* one that ends before it starts: refused */
	assert_int_equal(hb_store_pilot_report(fx->t.st, 2, 1, &r, &err),
			 HB_EINVAL);
	assert_string_equal(hb_pilot_group_name(HB_PILOT_CONTROL), "control");
}

/* Measured times replace the store's: the wait and run time follow. */
static void test_measured_times(void **state)
{
	struct fx *fx = *state;
	static const struct spec one = {
		0, SL, NULL, PILOT, 10, 100, OK, 1, 5
	};
	struct hb_pilot_report r;
	struct hb_err err = { 0 };
	struct hb_job_row j = { 0 };

	mkjob(fx, &one);
	assert_int_equal(hb_store_job_get(fx->t.st, "hb-000001", &j, &err), 0);
	assert_int_equal(j.started_ms - j.created_ms, 10000);
	assert_int_equal(
		hb_store_job_set_times(fx->t.st, j.id, j.created_ms + 3000,
				       j.created_ms + 3000 + 7000, &err),
		0);
	hb_job_row_free(&j);
	assert_int_equal(hb_store_pilot_report(fx->t.st, 0, INT64_MAX, &r, &err),
			 0);
	assert_int_equal(r.cell[HB_PILOT_PILOT][0].wait_median_ms, 3000);
	assert_int_equal(r.cell[HB_PILOT_PILOT][0].run_median_ms, 7000);
}

/* --by pilot: the ledger's lines by group add up to the total; the
 * groups as the pilot report reads them. */
static void test_by_pilot(void **state)
{
	struct fx *fx = *state;
	struct hb_ledger_report *r = NULL;
	struct hb_err err = { 0 };

	fill(fx);
	assert_int_equal(
		hb_store_report(fx->t.st, HB_BY_PILOT, 0, INT64_MAX, &r, &err),
		0);
	assert_int_equal(r->n_lines, 3);
	assert_null(r->lines[0].key);
	assert_int_equal(r->lines[0].amount_micros, 7 + 11 + 13 + 17);
	assert_int_equal(r->lines[0].jobs, 4);
	assert_string_equal(r->lines[1].key, "control");
	assert_int_equal(r->lines[1].amount_micros, 3000000 + 23);
	assert_string_equal(r->lines[2].key, "pilot");
	assert_int_equal(r->lines[2].amount_micros, 10000004 + 1000000 + 19);
	assert_int_equal(r->total.amount_micros,
			 r->lines[0].amount_micros + r->lines[1].amount_micros +
				 r->lines[2].amount_micros);
	assert_int_equal(hb_ledger_by_parse("pilot"), HB_BY_PILOT);
	assert_string_equal(hb_ledger_by_name(HB_BY_PILOT), "pilot");
	hb_ledger_report_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_figures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_measured_times, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_by_pilot, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
