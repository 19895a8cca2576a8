/*
 * decider.h - the daemon's placement: the policy in force, a warm
 * snapshot of both sides, and one decision per job with the placement
 * engine (placement.h), the same engine "hpcbridge explain" runs.
 *
 * The policy is placement.policy, or, when that is null, one made from
 * placement.default_target and placement.partitions (a rule per mapped
 * partition that prefers its side, and defaults that prefer the default
 * target), so that every decision goes through the engine.
 *
 * The snapshot holds what the daemon last learnt: each Slurm partition's
 * expected start and idle nodes (hb_decider_set_slurm(), from a periodic
 * refresh on a worker), the Kubernetes cluster's free capacity and
 * pending jobs (hb_decider_set_kube(), from the same refresh), and what
 * each account has spent this period: loaded from the store's decisions
 * (hb_decider_load_spend()), and added to by every decision
 * (hb_place_commit).  Kubernetes queue waits are not measured: when a job
 * does not fit now, the policy's default wait stands for it.
 *
 * Loop thread only: nothing here locks.
 */
#ifndef HPCBRIDGE_DECIDER_H
#define HPCBRIDGE_DECIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/config.h"
#include "hpcbridge/error.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/store.h"

struct cJSON;
struct hb_decider;

/* Load the policy cfg names (or make one from cfg).  Errors name the
 * file, line and key of the policy. */
int hb_decider_new(const struct hb_config *cfg, struct hb_decider **out,
		   struct hb_err *err);
/* The same for a reloaded configuration: on error the running policy
 * stays.  The snapshot is kept. */
int hb_decider_reload(struct hb_decider *dc, const struct hb_config *cfg,
		      struct hb_err *err);
void hb_decider_free(struct hb_decider *dc); /* NULL is fine */

/* The policy's name for humans: its file, or "placement.partitions". */
const char *hb_decider_policy_name(const struct hb_decider *dc);
/* The policy's currency code ("USD"): its costs and budgets are in it. */
const char *hb_decider_currency(const struct hb_decider *dc);
/* Each account a rule gives a budget (its first such rule): the period's
 * name, the budget and what the sides it covers spent in the current
 * period, in micro-units (for the metrics). */
typedef void (*hb_decider_budget_fn)(void *arg, const char *account,
				     const char *period, int64_t budget,
				     int64_t spent);
void hb_decider_budgets(const struct hb_decider *dc, hb_decider_budget_fn fn,
			void *arg);
/* The policy's text, as read or made (NUL-terminated; borrowed until the
 * next reload). */
const char *hb_decider_policy_text(const struct hb_decider *dc);
/* What every explanation ends with while it lasts ("" for nothing): why
 * Kueue gave no wait. */
const char *hb_decider_note(const struct hb_decider *dc);

/*
 * Decide for job at Unix time now, and charge its estimated cost to the
 * account's spend.  HB_EINVAL (err names the field) for a jobspec that
 * does not read or a deadline that does not parse; HB_ENOMEM.
 */
int hb_decider_decide(struct hb_decider *dc, const struct hb_place_job *job,
		      int64_t now, struct hb_place_out *out,
		      struct hb_err *err);

/* One Slurm partition as a refresh saw it. */
struct hb_decider_part {
	char name[64];
	bool wait_known;
	int64_t wait; /* seconds from the refresh to a probe job's start */
	bool idle_known;
	uint32_t idle_nodes;
	uint32_t pending; /* jobs waiting there (0 when unknown) */
};

/* Replace the Slurm side of the snapshot (taken at now). */
int hb_decider_set_slurm(struct hb_decider *dc,
			 const struct hb_decider_part *parts, size_t n,
			 int64_t now);

/*
 * Replace the Kubernetes side of the snapshot with what a refresh
 * measured (kube_capacity.h): every queue of the policy gets the
 * cluster's free CPUs, memory (whole CPUs and MiB, rounded down) and GPUs
 * per type, and the pending jobs; its wait stays unknown.  GPU types seen
 * before and gone now are dropped.  Nothing when the policy has no
 * kubernetes side.  0 or HB_ENOMEM.
 */
struct hb_kcap;
int hb_decider_set_kube(struct hb_decider *dc, const struct hb_kcap *cap);

/*
 * The policy's data locations the daemon measures: path prefixes on a
 * file system ("/...") whose size the policy does not give.  *paths is
 * borrowed until the next reload.  hb_decider_set_data() records what
 * one measured (bytes) into the snapshot, where it overrides nothing the
 * policy says and is what the engine reads.
 */
size_t hb_decider_data_paths(const struct hb_decider *dc,
			     const char ***paths);
int hb_decider_set_data(struct hb_decider *dc, const char *prefix,
			uint64_t bytes);

/* The partitions a refresh should look at: the policy's, and those jobs
 * were submitted to.  Borrowed; valid until the next decide or reload. */
size_t hb_decider_partitions(const struct hb_decider *dc,
			     const char *const **names);

/* The snapshot in use, as "hpcbridge explain --state" reads it, with its
 * instant set to now.  NULL when out of memory. */
struct cJSON *hb_decider_state(struct hb_decider *dc, int64_t now);

/*
 * What each account has spent in the budget periods the policy uses, as
 * of instant now: what st holds since the earliest such period began
 * (local time: hb_store_spend_list(), the ledger's actuals and the
 * estimates of jobs not metered; with metered, only of jobs still to
 * end), replacing what the snapshot counted.  The daemon loads it at
 * start-up, after a reload, and when a new day begins
 * (hb_decider_spend_stale()), so budgets survive restarts and start
 * afresh with each period.  Errors are the store's.
 */
struct hb_store;
int hb_decider_load_spend(struct hb_decider *dc, struct hb_store *st,
			  int64_t now, int metered, struct hb_err *err);
/*
 * Add delta (micro-units; negative takes off, down to 0) to what account
 * has spent on side (HB_TARGET_SLURM or HB_TARGET_KUBERNETES) in each
 * budget period that at_ms falls in, as of now: a job metered (its
 * actual cost in place of what was counted), a reservation released.
 */
int hb_decider_spend_add(struct hb_decider *dc, const char *account,
			 enum hb_job_target side, int64_t at_ms,
			 int64_t delta, int64_t now);
/* Whether a day has begun since the spend was last loaded. */
bool hb_decider_spend_stale(const struct hb_decider *dc, int64_t now);

#endif
