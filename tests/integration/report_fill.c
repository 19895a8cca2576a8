/*
 * report_fill.c - fill a store for report_html.test.sh and
 * report_csv.test.sh: October and November 2026, four entries a day, on
 * both sides, of seven accounts (one named like a script tag, three
 * like spreadsheet formulas, entries without one) and twelve users (one
 * named like a formula), with amounts that are not round.
 *
 *   report_fill PATH
 *
 * Every job ran (started 3 hours before its entry's period ends, after
 * a queue wait of 0 to 6 minutes) and ended then: every sixth failed,
 * the others succeeded.  Every fifth job is in the migration pilot,
 * the one after it in the control group (its placement decision's
 * document says so), the others in neither.
 *
 * The numbers are fixed (the store's clock is set, no randomness): the
 * tests compare the formats with each other, and a one-day window
 * (2026-11-06) holds four accounts, the script-named one among them.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/store.h"

#define HOUR_MS INT64_C(3600000)
#define DAY_MS	(24 * HOUR_MS)
/* 2026-10-01T00:00:00Z */
#define OCT1	INT64_C(1790812800000)
#define DAYS	61
#define PER_DAY 4

static const char *const accounts[] = {
	"physics",
	"chemistry",
	"<script>alert(1)</script>",
	"=HYPERLINK(\"http://example.invalid\",\"x\")",
	"astro",
	"@SUM(A1)",
	NULL,
	"-2+3",
};
#define N_ACCOUNTS (sizeof(accounts) / sizeof(accounts[0]))

static const char *const users[] = {
	"alice", "bob",	  "carol", "dave", "erin",    "frank",
	"grace", "heidi", "ivan",  "judy", "mallory", "+cmd",
};
#define N_USERS (sizeof(users) / sizeof(users[0]))

static int64_t now_ms;

static int64_t fixed_clock(void *arg)
{
	(void)arg;
	return now_ms;
}

/* Job i, submitted at now_ms: its decision (pilot, control or
 * neither), then its run from start to end as the store records it. */
static int run_job(struct hb_store *st, const char *id, int i,
		   const struct hb_ledger_entry *e, struct hb_err *err)
{
	static const char *const docs[5] = {
		"{\"placement\":{\"pilot\":{\"selected\":true}}}",
		"{\"placement\":{\"pilot\":{\"selected\":false}}}",
		"{\"placement\":{}}",
		NULL,
		NULL,
	};
	int rc;

	rc = hb_store_decision_add(st, id, e->side, docs[i % 5], "fill", NULL,
				   err);
	rc = rc ? rc
		: hb_store_job_set_state(st, id, HB_JOB_QUEUED, -1, NULL, err);
	now_ms = e->period_start_ms;
	rc = rc ? rc
		: hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1, NULL, err);
	now_ms = e->period_end_ms;
	return rc ? rc
		  : hb_store_job_set_state(
			    st, id, i % 6 ? HB_JOB_SUCCEEDED : HB_JOB_FAILED,
			    i % 6 ? 0 : 1, NULL, err);
}

static int fail(const char *what, const struct hb_err *err)
{
	fprintf(stderr, "report_fill: %s: %s\n", what, err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	static struct hb_ledger_entry le[DAYS * PER_DAY];
	static char ids[DAYS * PER_DAY][32];
	struct hb_err err = { 0 };
	struct hb_store *st;

	if (argc != 2) {
		fprintf(stderr, "usage: report_fill PATH\n");
		return 2;
	}
	if (hb_store_open(argv[1], &st, &err))
		return fail(argv[1], &err);
	hb_store_set_clock(st, fixed_clock, NULL);
	for (int i = 0; i < DAYS * PER_DAY; i++) {
		int d = i / PER_DAY, j = i % PER_DAY;
		struct hb_job_row row = { .entry = HB_ENTRY_CLI,
					  .uid = 1000,
					  .slurm_job_id = -1,
					  .exit_code = -1 };
		struct hb_ledger_entry *e = &le[i];
		int64_t cores = 1 + (i * 7) % 32;

		row.account = accounts[(d + 2 * j) % N_ACCOUNTS];
		row.user = users[(i * 5 + d) % N_USERS];
		/* submitted a wait before it starts: 3 hours before its
		 * entry's period ends */
		now_ms = OCT1 + d * DAY_MS + (3 + 4 * j) * HOUR_MS -
			 (i % 7) * 60000;
		if (hb_store_job_add(st, &row, &err))
			return fail("job_add", &err);
		snprintf(ids[i], sizeof(ids[i]), "%s", row.id);
		e->job_id = ids[i];
		e->account = row.account;
		e->user = row.user;
		e->side = j % 3 == 1 ? HB_TARGET_KUBERNETES : HB_TARGET_SLURM;
		e->partition = e->side == HB_TARGET_SLURM ? "cpu" : NULL;
		e->queue = e->side == HB_TARGET_KUBERNETES ? "burst" : NULL;
		e->rate_version = d < 31 ? "2026.10" : "2026.11";
		e->period_end_ms = OCT1 + d * DAY_MS + (6 + 4 * j) * HOUR_MS;
		e->period_start_ms = e->period_end_ms - 3 * HOUR_MS;
		e->cpu_mcore_s = cores * 3 * 3600 * 1000;
		e->mem_mib_s = cores * 4096 * 3 * 3600;
		if (j == 1) {
			e->gpu[0].type = d % 2 ? "a100" : "h100";
			e->gpu[0].seconds = 3 * 3600 * (1 + d % 4);
			e->n_gpu = 1;
		}
		e->amount_micros = cores * 187531 + (i % 13) * 1000003 + i;
	}
	if (hb_store_ledger_append(st, le, DAYS * PER_DAY, &err))
		return fail("ledger_append", &err);
	for (int i = 0; i < DAYS * PER_DAY; i++)
		if (run_job(st, ids[i], i, &le[i], &err))
			return fail(ids[i], &err);
	hb_store_close(st);
	return 0;
}
