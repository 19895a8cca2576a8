/*
 * slurmc_int.h - what the Slurm client's files share (slurmc.c,
 * slurmc_submit.c, slurmc_jobs.c): the handle and how a libslurm error
 * becomes ours.  Not a public header: the daemon uses
 * include/hpcbridge/slurmc.h only.  Slurm types stay behind this header.
 */
#ifndef HB_SLURMC_INT_H
#define HB_SLURMC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "hpcbridge/error.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/slurmc.h"

struct snap {
	uint32_t job_id;
	uint64_t fp;
	/* The GPUs last seen allocated (malloc'ed, NULL: none): Slurm
	 * drops a job's per-node GRES detail when it ends, and its TRES
	 * name GPUs only with AccountingStorageTRES=gres/gpu, so the end
	 * is reported with the GPUs it held while it ran. */
	struct hb_slurmc_gpu *gpu;
	uint32_t ngpu;
};

/* Free n snapshots and their GPUs (slurmc_jobs.c); NULL is a no-op. */
void hb_slurmc_snap_free(struct snap *s, size_t n);

/* Jobs waiting (pending, not held) in one partition of the last table. */
struct pend {
	char name[64];
	uint32_t n;
};

struct hb_slurmc {
	char *conf;
	time_t update_time; /* stamp of the last job table, 0: none */
	struct snap *snap;  /* sorted by job_id */
	size_t nsnap;
	struct pend *pend; /* per partition with waiting jobs */
	size_t npend;
	struct hb_slurmc_stats stats;
};

/* s, or "" for NULL: Slurm leaves unset strings NULL. */
static inline const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

/* (The next two are static inline under their old names: every file
 * uses them, and the unit test calls them.) */

/* The Slurm error of a call that returned rc (some calls return the code,
 * most return SLURM_ERROR and leave it in errno). */
static inline int slurm_errno_of(int rc)
{
	int e = (rc == SLURM_ERROR) ? slurm_get_errno() : rc;

	return e ? e : SLURM_ERROR;
}

/* Record Slurm error e of call `what` in err; returns the HB_E* code. */
static inline int fail_slurm(struct hb_err *err, int e, const char *what)
{
	int code = hb_slurmc_errcode(e);
	const char *text =
		(e == SLURM_ERROR) ? "unspecified error" : slurm_strerror(e);

	if (!code)
		code = HB_ESLURM;
	hb_metrics_side_error("slurm");
	return hb_err_set(err, code, NULL, 0, "%s: %s (Slurm error %d)", what,
			  text ? text : "unknown", e);
}

/* --signal text "[{R|B}:]SIG[@seconds]" (SIG a number or a name, with or
 * without "SIG") into job_desc's warn_signal, warn_time, warn_flags
 * (slurmc_spec.c).  false when it is not that. */
bool hb_slurmc_parse_signal(const char *s, uint16_t *sig, uint16_t *secs,
			    uint16_t *flags);
/* --mail-type text "BEGIN,END,..." into MAIL_* bits (slurmc_spec.c).
 * false for an unknown word. */
bool hb_slurmc_parse_mail_type(const char *s, uint16_t *bits);

/* Add the GPUs of one node's gres_detail_str ("gpu:a100:1(IDX:0),
 * gpu:h100:2(IDX:0-1)", "gpu:2(IDX:0,2)") to t (slurmc_tres.c): what a
 * running or ended job holds, where tres_alloc_str names no GPUs
 * (AccountingStorageTRES without gres/gpu).  HB_EINVAL naming the item. */
int hb_slurmc_tres_add_gres_detail(struct hb_slurmc_tres *t,
				   const char *detail, struct hb_err *err);

/* slurm.conf at path exists and is a readable regular file (slurmc.c). */
int hb_slurmc_check_conf_file(const char *path, struct hb_err *err);
/* The last non-empty line of text, without its line break (slurmc.c). */
const char *hb_slurmc_last_line(char *text);

#endif
