/*
 * slurmc_acct.c - what Slurm's accounting (slurmdbd) recorded of the
 * jobs that ran in a window: job records without their steps, through
 * libslurm's slurmdb API, as sacct reads them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <slurm/slurmdb.h>

#include "gateway/slurm/slurmc_int.h"
#include "hpcbridge/slurmc.h"

/* Exported by libslurm 22.05 (src/common/read_config.c) and typed in
 * slurm.h, but not declared there: the configuration slurm_init()
 * loaded, so that accounting's type and the cluster's name need no RPC. */
extern slurm_conf_t slurm_conf;

#define ACCT_SLURMDBD "accounting_storage/slurmdbd"

/* Our view of one record; strings borrowed from r. */
static int job_from_acct(const slurmdb_job_rec_t *r,
			 struct hb_slurmc_acct_job *j, struct hb_err *err)
{
	struct hb_slurmc_tres t;
	struct hb_err perr = { 0 };

	memset(j, 0, sizeof(*j));
	j->job_id = r->jobid;
	j->user = str_or_empty(r->user);
	j->account = str_or_empty(r->account);
	j->partition = str_or_empty(r->partition);
	j->cluster = str_or_empty(r->cluster);
	j->admin_comment = str_or_empty(r->admin_comment);
	j->state = hb_slurmc_state_from_slurm(r->state, NULL);
	j->start_s = (int64_t)r->start;
	j->end_s = (int64_t)r->end;
	j->elapsed_s = (int64_t)r->elapsed;
	j->suspended_s = (int64_t)r->suspended;
	/* slurmdbd keeps TRES by id: "1=4,2=2000,4=1" */
	if (hb_slurmc_parse_tres(r->tres_alloc_str, &t, &perr))
		return hb_err_set(err, perr.code, NULL, 0,
				  "slurmdbd: job %u: %s", r->jobid, perr.msg);
	j->alloc_cpus = t.cpus;
	return 0;
}

/* The job condition of [from_s, to_s): every record, no steps, times
 * not cut to the window (sacct without --truncate), this cluster. */
static int make_cond(slurmdb_job_cond_t *cond, int64_t from_s, int64_t to_s,
		     struct hb_err *err)
{
	memset(cond, 0, sizeof(*cond));
	/* 0 would be "today" to slurmdbd: the epoch's first second is
	 * before any job */
	cond->usage_start = (time_t)(from_s > 0 ? from_s : 1);
	cond->usage_end = (time_t)to_s;
	cond->flags = JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_TRUNC;
	cond->db_flags = SLURMDB_JOB_FLAG_NOTSET;
	if (slurm_conf.cluster_name && *slurm_conf.cluster_name) {
		cond->cluster_list = slurm_list_create(NULL);
		if (!cond->cluster_list)
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		slurm_list_append(cond->cluster_list, slurm_conf.cluster_name);
	}
	return 0;
}

int hb_slurmc_acct_jobs(struct hb_slurmc *c, int64_t from_s, int64_t to_s,
			hb_slurmc_acct_cb cb, void *arg, struct hb_err *err)
{
	slurmdb_job_cond_t cond;
	void *db = NULL;
	List jobs = NULL;
	ListIterator it = NULL;
	slurmdb_job_rec_t *r;
	struct hb_slurmc_acct_job j;
	const char *type = slurm_conf.accounting_storage_type;
	int rc;

	if (!c || !cb)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_acct_jobs: no handle or callback");
	if (to_s <= from_s)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_acct_jobs: empty window");
	if (!type || strcmp(type, ACCT_SLURMDBD))
		return hb_err_set(err, HB_EUNSUP, c->conf, 0,
				  "Slurm accounting is not configured "
				  "(AccountingStorageType=%s, not %s)",
				  type ? type : "none", ACCT_SLURMDBD);
	if ((rc = make_cond(&cond, from_s, to_s, err)))
		return rc;
	errno = 0;
	db = slurmdb_connection_get(NULL);
	if (!db || errno) {
		rc = hb_err_set(
			err, HB_EUNSUP, NULL, 0,
			"slurmdbd at %s:%u does not answer: %s",
			str_or_empty(slurm_conf.accounting_storage_host),
			(unsigned)slurm_conf.accounting_storage_port,
			errno ? slurm_strerror(errno) : "no connection");
		goto out;
	}
	jobs = slurmdb_jobs_get(db, &cond);
	if (!jobs) {
		rc = hb_err_set(err, HB_EUNSUP, NULL, 0,
				"slurmdbd: no job records: %s",
				slurm_strerror(slurm_get_errno()));
		goto out;
	}
	it = slurm_list_iterator_create(jobs);
	while ((r = slurm_list_next(it))) {
		if ((rc = job_from_acct(r, &j, err)) || (rc = cb(&j, arg)))
			break;
	}
out:
	if (it)
		slurm_list_iterator_destroy(it);
	if (jobs)
		slurm_list_destroy(jobs);
	if (db)
		slurmdb_connection_close(&db);
	if (cond.cluster_list)
		slurm_list_destroy(cond.cluster_list);
	return rc;
}
