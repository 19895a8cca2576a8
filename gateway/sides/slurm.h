/*
 * sides/slurm.h - the daemon's Slurm side: what the daemon asks of Slurm
 * (struct hb_slurm_side_ops) and its implementation over the Slurm client
 * (sides/slurm.c).
 */
#ifndef HPCBRIDGE_SIDES_SLURM_H
#define HPCBRIDGE_SIDES_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/placement/decider.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/store.h"

/* A batch job to submit to Slurm for a user (the "submit" op).  Strings
 * are borrowed for the call. */
struct hb_submit_req {
	const char *id;		   /* "hb-000042" */
	const char *script;	   /* the script text */
	const char *name;	   /* job name, or NULL */
	const char *cwd;	   /* working directory, or NULL */
	const char *user;	   /* the submitting user */
	uint32_t uid, gid;	   /* submit as this user (the peer's creds) */
	const char *const *argv;   /* script arguments, NULL-terminated */
	const char *const *env;	   /* "K=V", NULL-terminated (may be empty) */
	const char *admin_comment; /* "hpcbridge:hb-000042 target=slurm" */
	const char *partition;	   /* NULL: the script's own */
	/* The job as Slurm read it when it was decided (the plugin's
	 * jobspec: the command line's options too); NULL: the script's
	 * directives.  Borrowed. */
	const struct cJSON *jobspec;
};

/*
 * What the daemon asks of Slurm.  Both calls run on worker threads, maybe
 * several at once, so they must be thread-safe (a handle per thread, or a
 * lock).  A NULL member means the daemon has no such backend: submit is
 * refused with EUNSUP, cancelling a job that has a Slurm id with
 * EUNAVAIL.  sides/slurm.c provides them over gateway/slurm/slurmc.c;
 * the daemon's main wires them.
 */
/* A Slurm job hpcbridge tagged ("hpcbridge:<id>" in its admin comment)
 * whose state changed, as the reconciler sees it. */
struct hb_slurm_change {
	int64_t slurm_job_id;
	char id[32];	   /* the gateway id */
	/* The tag's words: "hpcbridge:<id> target=<target> snap=<snap>
	 * cost=<micro-units>"; target "" and snap and cost 0 when the tag has
	 * none (snap and cost are set only by the plugin deciding inside
	 * slurmctld: a job tagged by the daemon's reply or the CLI has
	 * none; cost is the estimate the plugin charged the account) */
	char target[16];
	int64_t snap, cost_micro;
	/* Who and what, for a decision the daemon must rebuild from Slurm:
	 * the job's user, account ("" none), name and time limit (minutes,
	 * -1: none).  account and name are borrowed for the callback. */
	uint32_t uid;
	const char *account, *name;
	int64_t time_limit_min;
	enum hb_job_state state; /* queued, running, succeeded, failed or
				  * cancelled */
	int64_t exit_code; /* final states; -1 otherwise */
	/* For metering (the daemon charges a job when state is final):
	 * Unix seconds; start 0 while queued and for a job that never ran
	 * (cancelled while queued), end 0 until it ended after running */
	int64_t start_s, end_s;
	/* seconds spent suspended (end_s - start_s - suspended_s is the
	 * run time, as sacct's Elapsed) */
	int64_t suspended_s;
	char partition[64]; /* "" unknown; cut to fit */
	/* What Slurm allocated (while queued: the CPUs and nodes asked) */
	uint32_t cpus, nodes;
	uint64_t mem_mib;
	bool exclusive; /* whole nodes */
	struct {
		char type[32]; /* "" for GPUs without a type */
		uint32_t count;
	} gpu[8];
	uint32_t ngpu;
};

struct hb_slurm_side_ops {
	void *ctx;
	/* 0 with *slurm_job_id set, or an HB_E* code with err set. */
	int (*slurm_submit)(void *ctx, const struct hb_submit_req *req,
			    int64_t *slurm_job_id, struct hb_err *err);
	/* 0 if cancelled or already ended; HB_ENOENT if Slurm no longer
	 * knows the job (the daemon then marks it cancelled too); another
	 * HB_E* code with err set on failure. */
	int (*slurm_cancel)(void *ctx, int64_t slurm_job_id,
			    struct hb_err *err);
	/* Report the tagged Slurm jobs that changed since the last call
	 * (the first call: all of them), one cb call each.  Runs on a worker;
	 * NULL: the daemon does not follow Slurm jobs. */
	int (*slurm_poll)(void *ctx,
			  int (*cb)(const struct hb_slurm_change *, void *),
			  void *arg, struct hb_err *err);
	/* For placement: fill out[i] (name set by the caller) for each of
	 * the n partitions: when a probe job of one node would start
	 * (slurm_job_will_run2) and how many of its nodes are idle.  A
	 * partition Slurm does not know is left unknown.  Runs on a worker
	 * every placement.refresh_s; NULL: no estimates (the policy's
	 * default wait stands). */
	int (*slurm_estimate)(void *ctx, struct hb_decider_part *out,
			      size_t n, struct hb_err *err);
	/* Suspend a running job (resume 0) or resume a suspended one: a
	 * burst job's proxy while Kueue holds its MPIJob preempted.  0 when
	 * the job is already so.  NULL: proxies are left running. */
	int (*slurm_suspend)(void *ctx, int64_t slurm_job_id, int resume,
			     struct hb_err *err);
	/* A proxy whose job was placed on Slurm instead: its admin comment
	 * (the reconciler's tag) becomes admin and its comment (squeue %k)
	 * comment, so the reconciler no longer takes it for the job. */
	int (*slurm_retag)(void *ctx, int64_t slurm_job_id, const char *admin,
			   const char *comment, struct hb_err *err);
	/* Append "; " and text to the admin comment of a job whose admin
	 * comment is tag ("hpcbridge:<id>") or starts with tag and a space:
	 * a burst job's proxy, before it ends, says what ran remotely.  0,
	 * doing nothing, for a job tagged otherwise or already so noted.
	 * NULL: proxies keep their tag alone. */
	int (*slurm_annotate)(void *ctx, int64_t slurm_job_id, const char *tag,
			      const char *text, struct hb_err *err);
	/* Append the batch script of a Slurm job to out (slurmctld's copy:
	 * a burst job's proxy carries its decide request there, see
	 * hb_rules_proxy_request()); HB_ENOENT when Slurm has none.  Runs
	 * on a worker.  NULL: decisions made in slurmctld are rebuilt
	 * without their scripts. */
	int (*slurm_batch_script)(void *ctx, int64_t slurm_job_id,
				  struct hb_buf *out, struct hb_err *err);
	/* Forget what the last poll saw: the next reports every job again
	 * (a decision that could not be rebuilt is tried again).  NULL:
	 * never. */
	void (*slurm_poll_reset)(void *ctx);
};

/*
 * Read a Slurm job's admin comment as the reconciler does: "hpcbridge:"
 * then the gateway id, then words up to " orig:" or ";" (what the plugin
 * and the daemon append): target=WORD, snap=N and cost=N.  Fills ch->id,
 * ch->target, ch->snap and ch->cost_micro; HB_ENOENT when it is no such
 * tag (or the id does not fit).
 */
int hb_slurm_tag_read(const char *admin_comment, struct hb_slurm_change *ch);

struct hb_slurm_side;

/* Open the Slurm client (slurm_conf NULL: $SLURM_CONF or Slurm's default
 * path).  Call before any thread starts.  Caller frees with
 * hb_slurm_side_close(). */
int hb_slurm_side_open(const char *slurm_conf, struct hb_slurm_side **out,
			  struct hb_err *err);
void hb_slurm_side_close(struct hb_slurm_side *sb); /* NULL ok */

/* The daemon's submit, cancel and poll slots, borrowing sb. */
void hb_slurm_side_ops(struct hb_slurm_side *sb,
			  struct hb_slurm_side_ops *out);

#endif
