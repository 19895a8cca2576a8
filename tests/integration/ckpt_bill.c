/*
 * ckpt_bill.c - a checkpoint location's storage measured and charged as
 * the daemon does it (hb_mirror_usage(), then hb_meter_storage()), for
 * tests/integration/ckpt_bill.test.sh:
 *
 *   ckpt_bill usage s3://BUCKET/PREFIX
 *       prints "BYTES KEYS": what S3 holds under PREFIX/
 *   ckpt_bill meter STATE CARD s3://BUCKET/PREFIX NOW_S [QUEUE]
 *       measures the location and charges it at NOW_S (Unix seconds) in
 *       the store STATE with the rate card CARD; with QUEUE, to a job
 *       it adds (alice, account physics, that LocalQueue) from then on.
 *       Prints "bytes B entries E seconds S amount A job J".
 *
 * S3's endpoint and keys come from the AWS_* variables.  Exit 0, or 1
 * with the error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/mirror/usage.h"
#include "hpcbridge/meter.h"
#include "hpcbridge/store.h"

static int usage_of(const char *url, uint64_t *bytes, uint64_t *keys,
		    struct hb_err *err)
{
	struct hb_s3_opts so = { 0 };
	struct hb_s3 *s3 = NULL;
	int rc = hb_s3_new(&so, &s3, err);

	if (!rc)
		rc = hb_mirror_usage(s3, url, bytes, keys, err);
	hb_s3_free(s3);
	return rc;
}

static int meter(char **argv, int argc, struct hb_err *err)
{
	struct hb_job_row r = { .entry = HB_ENTRY_SLURM,
				.user = "alice",
				.uid = 1000,
				.account = "physics",
				.slurm_job_id = -1,
				.exit_code = -1 };
	struct hb_meter_storage m = { .url = argv[4] };
	struct hb_meter_storage_result res = { 0 };
	struct hb_ratecard card = { 0 };
	struct hb_store *st = NULL;
	int rc;

	m.now_ms = strtoll(argv[5], NULL, 10) * 1000;
	rc = usage_of(m.url, &m.bytes, NULL, err);
	if (!rc)
		rc = hb_ratecard_load(argv[3], &card, err);
	if (!rc)
		rc = hb_store_open(argv[2], &st, err);
	if (!rc && argc == 7 && !(rc = hb_store_job_add(st, &r, err))) {
		m.job_id = r.id;
		m.account = r.account;
		m.user = r.user;
		m.queue = argv[6];
	}
	if (!rc)
		rc = hb_meter_storage(st, &card, &m, &res, err);
	if (!rc)
		printf("bytes %llu entries %u seconds %lld amount %lld job "
		       "%s\n",
		       (unsigned long long)m.bytes, res.entries,
		       (long long)res.seconds, (long long)res.amount_micros,
		       res.job_id[0] ? res.job_id : "-");
	hb_store_close(st);
	hb_ratecard_free(&card);
	return rc;
}

int main(int argc, char **argv)
{
	struct hb_err err = { 0 };
	uint64_t bytes = 0, keys = 0;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "usage")) {
		rc = usage_of(argv[2], &bytes, &keys, &err);
		if (!rc)
			printf("%llu %llu\n", (unsigned long long)bytes,
			       (unsigned long long)keys);
	} else if ((argc == 6 || argc == 7) && !strcmp(argv[1], "meter")) {
		rc = meter(argv, argc, &err);
	} else {
		fprintf(stderr, "usage: ckpt_bill usage URL | ckpt_bill meter "
				"STATE CARD URL NOW_S [QUEUE]\n");
		return 2;
	}
	if (rc)
		fprintf(stderr, "ckpt_bill: %s\n",
			err.msg[0] ? err.msg : hb_strerror(rc));
	return rc ? 1 : 0;
}
