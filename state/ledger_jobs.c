/*
 * ledger_jobs.c - the ledger summed per job on one side, for reconciling
 * that side with its own accounting (hpcbridge report --reconcile): each
 * job's first period start and last period end over its live entries,
 * and its CPU millicore-seconds net of reversals.
 */
#include <stdint.h>

#include "hpcbridge/store.h"
#include "store_int.h"

/*
 * A live entry is neither a reversal nor reversed (ledger_reversed_once
 * makes r at most one row).  Each part of a job is listed apart: on the
 * Slurm side a part is the Slurm job it ran as (an array task, a job
 * placed again), the job's bound Slurm id for entries without one.  The window selects by period_end_ms, as
 * reports do; a reversal keeps its entry's period, so both fall in the
 * same window.  Jobs with no live entry left are not listed.
 */
static const char jobs_sql[] =
	"SELECT l.job_id, CASE WHEN l.part GLOB '[0-9]*' AND l.part NOT GLOB"
	" '*[^0-9]*' THEN CAST(l.part AS INTEGER) ELSE j.slurm_job_id END,"
	" j.target, min(l.\"user\"),"
	" min(l.account),"
	" min(CASE WHEN l.reverses IS NULL AND r.id IS NULL"
	"  THEN l.period_start_ms END),"
	" max(CASE WHEN l.reverses IS NULL AND r.id IS NULL"
	"  THEN l.period_end_ms END),"
	" sum(l.cpu_mcore_s), count(*)"
	" FROM ledger AS l JOIN jobs AS j ON j.id = l.job_id"
	" LEFT JOIN ledger AS r ON r.reverses = l.id"
	" WHERE l.side = ?3 AND l.period_end_ms >= ?1 AND l.period_end_ms < ?2"
	" GROUP BY l.job_id, l.part"
	" HAVING count(CASE WHEN l.reverses IS NULL AND r.id IS NULL"
	"  THEN 1 END) > 0"
	" ORDER BY min(j.seq)";

int hb_store_ledger_jobs(struct hb_store *st, enum hb_job_target side,
			 int64_t from_ms, int64_t to_ms,
			 int (*cb)(const struct hb_ledger_job *, void *),
			 void *arg, struct hb_err *err)
{
	static const char op[] = "ledger jobs";
	sqlite3_stmt *s = NULL;
	int rc;

	if (!st || !cb)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: no store or callback", op);
	if (side != HB_TARGET_SLURM && side != HB_TARGET_KUBERNETES)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: side %d is none", op, (int)side);
	if (sqlite3_prepare_v2(hb_si_db(st), jobs_sql, -1, &s, NULL))
		return hb_si_db_fail(st, op, err);
	sqlite3_bind_int64(s, 1, from_ms);
	sqlite3_bind_int64(s, 2, to_ms);
	sqlite3_bind_text(s, 3, hb_job_target_name(side), -1, SQLITE_STATIC);
	while ((rc = hb_si_step(st, s, op, err)) == SQLITE_ROW) {
		struct hb_ledger_job j = { 0 };
		const char *target = (const char *)sqlite3_column_text(s, 2);
		int t = target ? hb_job_target_parse(target) : -1;

		j.job_id = (const char *)sqlite3_column_text(s, 0);
		j.slurm_job_id = sqlite3_column_type(s, 1) == SQLITE_NULL
					 ? -1
					 : sqlite3_column_int64(s, 1);
		j.target = t < 0 ? HB_TARGET_PENDING : (enum hb_job_target)t;
		j.user = (const char *)sqlite3_column_text(s, 3);
		j.account = (const char *)sqlite3_column_text(s, 4);
		j.first_start_ms = sqlite3_column_int64(s, 5);
		j.last_end_ms = sqlite3_column_int64(s, 6);
		j.cpu_mcore_s = sqlite3_column_int64(s, 7);
		j.entries = sqlite3_column_int64(s, 8);
		if ((rc = cb(&j, arg)))
			break;
	}
	if (rc == SQLITE_DONE)
		rc = 0;
	sqlite3_finalize(s);
	return rc;
}
