/*
 * ledger_fill.c - fill a store with a fixed set of ledger entries for
 * report.test.sh: jobs of three accounts (one named with a comma, one
 * with a quote), both sides, two months, two GPU types, one reversal.
 *
 *   ledger_fill PATH
 *
 * The store makes its schema at open.  Totals, which the test checks:
 * 6 jobs (the reversed one included: it has entries), 8 entries, amount
 * 43.000000 (43,000,000 micro-units) after the reversal, core-hours 50,
 * GPU-hours a100 3 and h100 2; October 6.000000, November 37.000000.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/store.h"

#define HOUR_MS INT64_C(3600000)
/* 2026-10-31T22:00:00Z and 2026-11-01T00:00:00Z */
#define OCT31 INT64_C(1793484000000)
#define NOV1  INT64_C(1793491200000)

static int fail(const char *what, const struct hb_err *err)
{
	fprintf(stderr, "ledger_fill: %s: %s\n", what, err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *account, *user, *part, *queue;
		enum hb_job_target side;
		int64_t end_ms, cores, gpus;
		const char *gpu;
		int64_t amount;
	} e[] = {
		{ "physics", "alice", "cpu", NULL, HB_TARGET_SLURM, OCT31, 8, 0,
		  NULL, 4000000 },
		{ "physics", "bob", "gpu", "gpu-q", HB_TARGET_KUBERNETES, NOV1,
		  4, 3, "a100", 12000000 },
		{ "chem,bio", "carol", "cpu", NULL, HB_TARGET_SLURM, NOV1, 16,
		  0, NULL, 8000000 },
		{ "quote\"d", "dave", "gpu", "gpu-q", HB_TARGET_KUBERNETES,
		  NOV1 + HOUR_MS, 2, 2, "h100", 10000000 },
		{ NULL, "erin", "cpu", NULL, HB_TARGET_SLURM, NOV1 + HOUR_MS,
		  16, 0, NULL, 7000000 },
		{ "physics", "alice", "cpu", NULL, HB_TARGET_SLURM, OCT31, 4, 0,
		  NULL, 2000000 },
		/* reversed below */
		{ "physics", "frank", "cpu", NULL, HB_TARGET_SLURM, NOV1, 99, 0,
		  NULL, 99000000 },
	};
	struct hb_ledger_entry le[7];
	struct hb_err err = { 0 };
	struct hb_store *st;
	int64_t rev;
	static char ids[7][32];

	if (argc != 2) {
		fprintf(stderr, "usage: ledger_fill PATH\n");
		return 2;
	}
	if (hb_store_open(argv[1], &st, &err))
		return fail(argv[1], &err);
	memset(le, 0, sizeof(le));
	for (int i = 0; i < 7; i++) {
		struct hb_job_row j = { .entry = HB_ENTRY_CLI,
					.uid = 1000,
					.slurm_job_id = -1,
					.exit_code = -1 };

		j.user = e[i].user;
		j.account = e[i].account;
		if (hb_store_job_add(st, &j, &err))
			return fail("job_add", &err);
		snprintf(ids[i], sizeof(ids[i]), "%s", j.id);
		le[i].job_id = i == 5 ? ids[0] : ids[i];
		le[i].side = e[i].side;
		le[i].account = e[i].account;
		le[i].user = e[i].user;
		le[i].partition = e[i].part;
		le[i].queue = e[i].queue;
		le[i].rate_version = i < 3 ? "2026-10" : "2026-11";
		le[i].period_start_ms = e[i].end_ms - HOUR_MS;
		le[i].period_end_ms = e[i].end_ms;
		le[i].cpu_mcore_s = e[i].cores * 3600 * 1000;
		le[i].mem_mib_s = e[i].cores * 1024 * 3600;
		if (e[i].gpus) {
			le[i].gpu[0].type = e[i].gpu;
			le[i].gpu[0].seconds = e[i].gpus * 3600;
			le[i].n_gpu = 1;
		}
		le[i].egress_bytes = i == 1 ? INT64_C(1) << 30 : 0;
		le[i].amount_micros = e[i].amount;
	}
	if (hb_store_ledger_append(st, le, 7, &err))
		return fail("ledger_append", &err);
	if (hb_store_ledger_reverse(st, le[6].id, &rev, &err))
		return fail("ledger_reverse", &err);
	hb_store_close(st);
	return 0;
}
