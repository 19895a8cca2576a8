/*
 * slurmc_suspend.c - suspending and resuming a job (scontrol suspend /
 * resume), and re-tagging its admin comment: what the daemon does to a
 * burst job's proxy when Kueue preempts the job's MPIJob, admits it
 * again, or the job is placed on Slurm instead.
 *
 * Both need SlurmUser or root (the daemon is root).  Slurm stops a
 * suspended job's processes (SIGSTOP) and its clock: suspended time is
 * not counted against the time limit.
 */
#include <stdbool.h>

#include "gateway/slurm/slurmc_int.h"

int hb_slurmc_suspend(struct hb_slurmc *c, uint32_t job_id, bool resume,
		      struct hb_err *err)
{
	int e;

	if (!c)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_suspend: no handle");
	if ((resume ? slurm_resume(job_id) : slurm_suspend(job_id)) ==
	    SLURM_SUCCESS)
		return 0;
	e = slurm_errno_of(SLURM_ERROR);
	/* Already as asked: what a retry after a lost reply finds. */
	if ((!resume && e == ESLURM_JOB_SUSPENDED) ||
	    (resume && e == ESLURM_JOB_NOT_SUSPENDED))
		return 0;
	return fail_slurm(err, e, resume ? "slurm_resume" : "slurm_suspend");
}

int hb_slurmc_set_admin_comment(struct hb_slurmc *c, uint32_t job_id,
				const char *text, struct hb_err *err)
{
	job_desc_msg_t d;

	if (!c)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_set_admin_comment: no handle");
	slurm_init_job_desc_msg(&d);
	d.job_id = job_id;
	d.admin_comment = (char *)(text ? text : "");
	if (slurm_update_job(&d) != SLURM_SUCCESS)
		return fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				  "slurm_update_job(admin_comment)");
	return 0;
}
