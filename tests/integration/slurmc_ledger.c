/*
 * slurmc_ledger.c - write jobs and Slurm-side ledger entries into a store
 * for reconcile.test.sh, from what the test read of real Slurm jobs.
 *
 *   slurmc_ledger PATH job TARGET SLURM_JOB_ID USER ACCOUNT
 *       add a job (target slurm or kubernetes) with that Slurm job id;
 *       prints its gateway id
 *   slurmc_ledger PATH charge ID START_S END_S CPUS
 *       append one Slurm-side entry of job ID: the period [START_S,
 *       END_S) in ms, CPUS cores over it (millicore-seconds)
 *
 * The store makes its schema at open.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/store.h"

static int fail(const char *what, const struct hb_err *err)
{
	fprintf(stderr, "slurmc_ledger: %s: %s\n", what, err->msg);
	return 1;
}

static int num(const char *s, int64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "slurmc_ledger: '%s' is not a number\n", s);
		return 1;
	}
	return 0;
}

static int add_job(struct hb_store *st, char **argv)
{
	struct hb_job_row j = { .entry = HB_ENTRY_SLURM,
				.state = HB_JOB_SUCCEEDED,
				.uid = 0,
				.exit_code = 0 };
	struct hb_err err = { 0 };
	int t = hb_job_target_parse(argv[0]);

	if (t < 0 || num(argv[1], &j.slurm_job_id)) {
		fprintf(stderr, "slurmc_ledger: job TARGET SLURM_JOB_ID ...\n");
		return 2;
	}
	j.target = (enum hb_job_target)t;
	j.user = argv[2];
	j.account = argv[3];
	if (hb_store_job_add(st, &j, &err))
		return fail("job_add", &err);
	printf("%s\n", j.id);
	return 0;
}

static int charge(struct hb_store *st, char **argv)
{
	struct hb_ledger_entry e;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	int64_t start, end, cpus;
	int rc;

	if (num(argv[1], &start) || num(argv[2], &end) || num(argv[3], &cpus))
		return 2;
	memset(&row, 0, sizeof(row));
	if (hb_store_job_get(st, argv[0], &row, &err))
		return fail(argv[0], &err);
	memset(&e, 0, sizeof(e));
	e.job_id = argv[0];
	e.side = HB_TARGET_SLURM;
	e.user = row.user;
	e.account = row.account;
	e.partition = "debug";
	e.rate_version = "test";
	e.period_start_ms = start * 1000;
	e.period_end_ms = end * 1000;
	e.cpu_mcore_s = cpus * (end - start) * 1000;
	rc = hb_store_ledger_append(st, &e, 1, &err);
	hb_job_row_free(&row);
	return rc ? fail("ledger_append", &err) : 0;
}

int main(int argc, char **argv)
{
	struct hb_err err = { 0 };
	struct hb_store *st;
	int rc;

	if (argc != 7 ||
	    (strcmp(argv[2], "job") && strcmp(argv[2], "charge"))) {
		fprintf(stderr,
			"usage: slurmc_ledger PATH job TARGET SLURM_ID USER "
			"ACCOUNT\n"
			"       slurmc_ledger PATH charge ID START_S END_S "
			"CPUS\n");
		return 2;
	}
	if (hb_store_open(argv[1], &st, &err))
		return fail(argv[1], &err);
	rc = strcmp(argv[2], "job") ? charge(st, argv + 3)
				    : add_job(st, argv + 3);
	hb_store_close(st);
	return rc;
}
