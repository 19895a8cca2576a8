/*
 * reconcile.h - the comparison behind hpcbridge report --reconcile
 * (cmd_reconcile.c): the ledger's Slurm-side jobs against slurmdbd's
 * records, job by job, with no Slurm and no store, so that the unit test
 * drives it with tables.
 */
#ifndef HPCBRIDGE_CLI_RECONCILE_H
#define HPCBRIDGE_CLI_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/store.h"

/* The tolerances, as the output and docs/chargeback.md state them:
 * elapsed within 2 s or 0.5 % (the larger), CPU-hours within 0.5 %,
 * both relative to accounting's figure. */
#define HB_RECON_ELAPSED_MS 2000
#define HB_RECON_PER_MILLE  5
#define HB_RECON_TOLERANCE_TEXT                                                \
	"elapsed within 2 s or 0.5% (whichever is larger), CPU-hours "         \
	"within 0.5%"

/* One Slurm-side job of the ledger (strings owned by the table). */
struct hb_recon_ledger {
	char *job_id;	      /* the gateway id */
	int64_t slurm_job_id; /* -1: none */
	char *user, *account;
	int64_t elapsed_ms;  /* last period end - first period start */
	int64_t cpu_mcore_s; /* net of reversals */
};

/* One record of Slurm's accounting (strings owned by the table). */
struct hb_recon_acct {
	uint32_t job_id;
	char *user, *account, *partition, *state;
	int64_t start_s, end_s, elapsed_s;
	uint32_t cpus;
	bool final; /* ended (a state it does not leave) */
	/* "hpcbridge:<id> ..." in the admin comment: the id ("" untagged)
	 * and that job's target (the store's, else the tag's; see
	 * hb_recon_parse_tag()) */
	char tag[32];
	enum hb_job_target tag_target;
};

enum hb_recon_kind {
	HB_RECON_DIFFERS,	/* both have it, beyond a tolerance */
	HB_RECON_NO_ACCOUNTING, /* a ledger job accounting lacks */
	HB_RECON_NO_LEDGER,	/* a tagged Slurm job the ledger lacks */
	HB_RECON_PROXY,		/* a burst job's proxy: not a difference */
};

#define HB_RECON_ELAPSED 1u /* what differs */
#define HB_RECON_CPU	 2u

struct hb_recon_item {
	enum hb_recon_kind kind;
	unsigned what;			 /* HB_RECON_ELAPSED | HB_RECON_CPU */
	const struct hb_recon_ledger *l; /* NULL for NO_LEDGER, PROXY */
	const struct hb_recon_acct *a;	 /* NULL for NO_ACCOUNTING */
};

struct hb_recon_result {
	struct hb_recon_item *items; /* in the order of the kinds, then of
				      * the tables */
	size_t n;
	size_t matched;	    /* both have it, within the tolerances */
	size_t differences; /* DIFFERS, NO_ACCOUNTING and NO_LEDGER */
};

/*
 * Compare L[0..nl) with A[0..na): each ledger job with the record of its
 * Slurm job id (differs or matched; no id, or no record: accounting lacks
 * it); then each tagged record of a job that ended in [from_s, to_s):
 * a burst job's proxy (tag_target kubernetes) is listed as such, any
 * other that used CPU time (AllocCPUS x Elapsed > 0: not one cancelled
 * while queued) and that no ledger job names is one the ledger lacks.  Untagged
 * records are not ours.  out is zeroed first; free it with
 * hb_recon_result_free().  HB_ENOMEM.
 */
int hb_recon_compare(const struct hb_recon_ledger *L, size_t nl,
		     const struct hb_recon_acct *A, size_t na, int64_t from_s,
		     int64_t to_s, struct hb_recon_result *out);
void hb_recon_result_free(struct hb_recon_result *r);

/* The bits of HB_RECON_* that differ between l and a. */
unsigned hb_recon_diff(const struct hb_recon_ledger *l,
		       const struct hb_recon_acct *a);

/* The id and target of an admin comment's "hpcbridge:<id> target=T" tag
 * (or a proxy's "hpcbridge:<id> ran on T: ..." once its job ended): 0
 * with id set (*target HB_TARGET_PENDING when neither says), -1 when it
 * is no tag. */
int hb_recon_parse_tag(const char *comment, char id[32],
		       enum hb_job_target *target);

#endif
