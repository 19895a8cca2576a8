/*
 * placement.h - the placement engine: where one job should run (Slurm,
 * Kubernetes, or nowhere), by cost, deadline and data locality, with an
 * explanation a person can read and a list of factors a program can.
 *
 * hb_place_decide() is a pure function of (policy, snapshot, input): no
 * I/O, no allocation, no clock, no randomness.  The same three always
 * give the same result, so a stored decision can be replayed and
 * "hpcbridge explain --state" shows what the daemon did.  The policy and
 * snapshot are only read, so threads may decide concurrently as long as
 * nobody updates the snapshot at the same time.
 *
 * A caller builds the input once per job (hb_place_input_from_jobspec()
 * or by hand), decides, stores the result (hb_place_to_json()), then
 * hb_place_commit() adds the decision's estimated cost to the snapshot's
 * spend, so that the next decision sees it against the budgets.
 *
 * The model, the formulas and the order of the rules are in
 * docs/placement.md.
 */
#ifndef HPCBRIDGE_PLACEMENT_H
#define HPCBRIDGE_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/policy.h"

/* What a decision needs to know about a job.  Strings are borrowed and
 * must outlive the result (the result points at none of them, but
 * hb_place_explain() and hb_place_to_json() read them). */
struct hb_place_input {
	const char *name;	 /* job name; NULL: none */
	const char *user;	 /* NULL: unknown */
	const char *account;	 /* NULL: none (rules for any account) */
	const char *partition;	 /* NULL: the policy's default partition */
	const char *source_name; /* the script, for messages ("job.sh") */
	uint64_t seq;		 /* submission counter, for the pilot hash */

	/* Shape: nodes of cpus_per_node CPUs, memory and GPUs each. */
	uint32_t nodes;		  /* >= 1 */
	uint32_t cpus_per_node;	  /* >= 1 */
	uint64_t mem_per_node_mb; /* 0: not given (policy's mem_per_cpu) */
	bool whole_node;	  /* --exclusive or --mem=0: charged whole */
	uint32_t gpus_per_node;
	const char *gpu_type;	  /* NULL: any type; may be a MIG profile */
	uint32_t shards_per_node; /* gres shard */
	/* RDMA (InfiniBand, RoCE): a side without it cannot run the job.
	 * Inferred needs (the script's variables, the policy's
	 * multinode_mpi_needs_rdma) hold for a multi-node job only: one
	 * node's ranks talk through shared memory.  A need said in words
	 * (--hpcbridge-fabric=rdma, a --constraint feature) holds for any
	 * job, as Slurm holds --constraint=ib for one node too. */
	bool needs_rdma;
	bool rdma_any_size;	  /* said in words: even one node */
	char rdma_why[HB_FABRIC_WHY_MAX + 64]; /* what asks for it, as
						 * written; "": unknown */

	int64_t time_limit;	/* seconds; 0: not given (policy default) */
	int64_t deadline;	/* Unix seconds; 0: none given */
	uint32_t deadline_line; /* where it is written; 0: unknown */

	const char *const *data; /* data inputs: paths or URLs */
	uint32_t ndata;

	/* Why the site's cluster may not run this job, whatever its
	 * capacity: it runs as root, or a path it writes is on no volume
	 * the cluster mounts.  NULL: nothing. */
	const char *kube_refusal;

	int requested;	     /* HB_SIDE_* the job asks for, or -1 */
	int64_t slurm_start; /* will_run's start for this job; 0: from the
			      * snapshot */
};

/* The kinds of factor.  Names (hb_place_factor_name) are stable: they
 * are stored with decisions. */
enum hb_place_factor_kind {
	HB_PF_NONE = 0,
	/* the job */
	HB_PF_DEADLINE,	     /* value: seconds from now; subject: source */
	HB_PF_TIME_LIMIT,    /* value: assumed run time (none was given) */
	HB_PF_MEMORY,	     /* value: assumed MiB per node */
	HB_PF_DATA_UNPLACED, /* value: inputs in no data location */
	HB_PF_DATA_SIZE,     /* subject: prefix with no known size */
	/* estimates, per side */
	HB_PF_PARTITION,   /* subject: a partition the policy lacks */
	HB_PF_NO_ESTIMATE, /* value: wait assumed; subject: resource */
	HB_PF_WAIT,	   /* value: wait; limit: jobs pending */
	HB_PF_FREE_NOW,	   /* fits in the free capacity now */
	HB_PF_STAGING,	   /* value: seconds; limit: bytes moved */
	HB_PF_COST,	   /* value: total; limit: egress part */
	HB_PF_LATE,	   /* value: seconds past the deadline */
	/* capabilities: the side cannot run the job */
	HB_PF_NOT_CONFIGURED, /* the policy has no such side */
	HB_PF_NODES,	      /* value: nodes; limit: max */
	HB_PF_NODE_CPUS,      /* value: CPUs per node; limit: node's */
	HB_PF_NODE_MEMORY,    /* value: MiB per node; limit: node's */
	HB_PF_NODE_GPUS,      /* value: GPUs per node; limit: node's */
	HB_PF_GPU_TYPE,	      /* subject: the type asked for */
	HB_PF_MIG,	      /* subject: the MIG profile asked for */
	HB_PF_SHARDS,	      /* no GPU shards there */
	HB_PF_RDMA,	      /* no RDMA fabric there */
	HB_PF_SITE,	      /* subject: why the site's cluster may not
			       * take it (the input's kube_refusal) */
	/* rules: the side is forbidden */
	HB_PF_BURST_NEVER,   /* subject: rule name */
	HB_PF_BUDGET,	     /* value: spend after; limit: budget */
	HB_PF_DATA_PINNED,   /* subject: prefix that may not move */
	HB_PF_DATA_TOO_BIG,  /* value: bytes to move; limit: rule's */
	HB_PF_STAGING_SLACK, /* value: staging s; limit: allowed s */
	HB_PF_PREMIUM,	     /* value: premium; limit: max premium */
	/* choice */
	HB_PF_REQUESTED,      /* the job asked for this side */
	HB_PF_REQUEST_DENIED, /* the side asked for is not possible */
	HB_PF_PILOT,	      /* value: hash bucket; limit: share (bp) */
	HB__PF_COUNT
};

/* Stable lower-case name ("budget", "staging_slack"); NULL if unknown. */
const char *hb_place_factor_name(int kind);
/* Whether a factor kind is a rule (a policy choice) rather than a
 * capability or an estimate. */
bool hb_place_factor_is_rule(int kind);

struct hb_place_factor {
	uint8_t kind; /* enum hb_place_factor_kind */
	int8_t side;  /* HB_SIDE_*, or -1 for the job as a whole */
	int64_t value, limit;
	const char *subject; /* borrowed from policy or input; or NULL */
};

enum hb_place_target {
	HB_PLACE_SLURM = HB_SIDE_SLURM,
	HB_PLACE_KUBE = HB_SIDE_KUBE,
	HB_PLACE_REJECT
};

/* Why the target won.  Names (hb_place_why_name) are stable. */
enum hb_place_why {
	HB_WHY_REQUESTED = 0, /* the job asked for it */
	HB_WHY_PILOT,	      /* chosen by the migration pilot */
	HB_WHY_PREFERRED,     /* the rule's preferred side meets the deadline */
	HB_WHY_CHEAPEST,      /* the cheaper side that meets the deadline */
	HB_WHY_EARLIEST,      /* finishes first */
	HB_WHY_DEADLINE,      /* the only side meeting the deadline */
	HB_WHY_ONLY,	      /* the only side possible */
	HB_WHY_PREMIUM,	      /* meeting the deadline costs too much more */
	HB_WHY_FALLBACK,      /* no side meets the deadline: finishes first */
	HB_WHY_NO_SIDE,	      /* reject: no side can run it */
	HB_WHY_NO_DEADLINE,   /* reject: no side meets the deadline */
	HB_WHY_NO_PREMIUM,    /* reject: the deadline costs too much more */
	HB__WHY_COUNT
};

const char *hb_place_target_name(int target); /* slurm|kubernetes|reject */
const char *hb_place_why_name(int why);

/* One side's estimate. */
struct hb_place_alt {
	const char *resource;  /* partition or queue (borrowed) */
	const char *gpu_type;  /* the type it would run on, or NULL */
	bool can_run;	       /* the side can run the job at all */
	bool allowed;	       /* no rule forbids it */
	bool meets_deadline;   /* true when there is no deadline */
	bool fits_now;	       /* free capacity now, nobody waiting */
	bool estimated;	       /* the snapshot had an estimate */
	uint8_t blocked_by;    /* first factor that ruled it out, or 0 */
	int64_t wait;	       /* queue wait, seconds */
	int64_t staging;       /* data staging, seconds */
	uint64_t moved;	       /* bytes staged */
	int64_t start, finish; /* Unix seconds */
	int64_t runtime;       /* seconds */
	hb_money compute, egress, cost; /* cost = compute + egress */
};

#define HB_PLACE_MAX_FACTORS 48

struct hb_place_result {
	uint8_t target;		    /* enum hb_place_target */
	uint8_t why;		    /* enum hb_place_why */
	const struct hb_rule *rule; /* borrowed from the policy */
	int64_t now;
	int64_t deadline;      /* 0: none */
	bool deadline_default; /* from the partition's default_deadline */
	int64_t runtime;       /* the time limit used */
	uint32_t pilot_bucket; /* 0..9999 */
	bool pilot_selected;
	struct hb_place_alt alt[HB__SIDE_COUNT];
	struct hb_place_factor factor[HB_PLACE_MAX_FACTORS];
	uint32_t nfactors;
	bool factors_truncated;
};

/* FNV-1a (64 bits) of name NUL user NUL decimal(seq); NULL strings hash
 * as empty.  hb_place_decide() takes the pilot bucket as this mod
 * 10000. */
uint64_t hb_place_hash(const char *name, const char *user, uint64_t seq);

/*
 * Fill in from spec: identity, shape (hb_jobspec_shape), GPU type,
 * shards (from a --gres=shard:N directive), RDMA (a --constraint feature
 * the policy lists, or multi-node MPI when the policy says so), time
 * limit, deadline (read at now/utc_offset), data inputs and a
 * --hpcbridge-target directive.  user and seq are left for the caller.
 * in borrows spec's strings.  HB_EINVAL (err names the file and line)
 * for a deadline it cannot read or a shape that overflows.
 */
int hb_place_input_from_jobspec(const struct hb_policy *pol,
				const struct hb_jobspec *spec, int64_t now,
				int32_t utc_offset, struct hb_place_input *in,
				struct hb_err *err);

/*
 * Decide.  out is filled whatever happens.  HB_EINVAL only when in has
 * no nodes or CPUs; every other problem is a decision (reject) with its
 * reason.  No allocation.
 */
int hb_place_decide(const struct hb_policy *pol, const struct hb_snapshot *snap,
		    const struct hb_place_input *in,
		    struct hb_place_result *out);

/*
 * Charge the decision's estimated cost to in->account's spend on the
 * chosen side, for the period of the rule's budget and every other
 * period the snapshot tracks for the account (so the next decision sees
 * it).  Nothing for a rejection or a job without an account.  Errors as
 * the hb_snapshot_set_*() functions.
 */
int hb_place_commit(const struct hb_place_input *in,
		    const struct hb_place_result *res,
		    struct hb_snapshot *snap);

/* The same charge by its parts: cost to account on side (HB_SIDE_*) in
 * period (the rule's budget period) and every other period the snapshot
 * tracks for the account.  The plugin charges again, on each new
 * snapshot, what the daemon has not yet counted. */
int hb_place_charge(struct hb_snapshot *snap, const char *account,
		    int period, int side, hb_money cost);

/* Append the explanation, one line per point, each ending in '\n'. */
int hb_place_explain(const struct hb_policy *pol,
		     const struct hb_place_input *in,
		     const struct hb_place_result *res, struct hb_buf *out);

/*
 * The decision as a document: target, why, rule, deadline, every
 * alternative, the factors, the job's input ("job") and, when explanation
 * is not NULL, its lines (the text hb_place_explain() wrote, one array
 * item per '\n'-ended line).  One object, under key inside an object,
 * through the writer e (doc.h): the stored decision takes it as compact
 * JSON text, hb_place_to_json() as a tree.  Returns the writer's code.
 */
struct hb_emit;
int hb_place_emit(struct hb_emit *e, const char *key,
		  const struct hb_policy *pol, const struct hb_place_input *in,
		  const struct hb_place_result *res, const char *explanation);

/* The same document, explanation included, as a tree.  Caller frees with
 * cJSON_Delete(); NULL when out of memory. */
struct cJSON *hb_place_to_json(const struct hb_policy *pol,
			       const struct hb_place_input *in,
			       const struct hb_place_result *res);

/* ------------------------------------------------------------------ */
/* One job placed (job.c): the daemon's decider and the job_submit      */
/* plugin both run this.                                                */
/* ------------------------------------------------------------------ */

/* The longest account, partition and job name a decide request carries,
 * and its largest script. */
#define HB_PLACE_NAME_MAX 1024
#define HB_PLACE_REQUEST_MAX (1u << 20)

/* The side a job asks for: --hpcbridge-target, or none (the policy
 * chooses). */
enum hb_place_ask { HB_ASK_AUTO = 0, HB_ASK_SLURM, HB_ASK_KUBE };

struct hb_k8s_opts;
struct hb_jobspec;

/* One job to place.  Strings are borrowed for the call. */
struct hb_place_job {
	const char *user, *account, *partition, *name;
	enum hb_place_ask ask;
	int64_t time_limit_min;	     /* HB_RULES_NO_LIMIT: none */
	const struct cJSON *jobspec; /* what Slurm resolved; NULL: a job
				      * of one node and one CPU */
	/* Or the jobspec itself, already read (the plugin builds it from
	 * Slurm's job description, as the request's "jobspec" says it):
	 * used before jobspec when not NULL.  hb_place_job() may complete
	 * it (the time limit from time_limit_min). */
	struct hb_jobspec *spec;
	uint64_t seq;		     /* the job's number, for the pilot */
	/* The cluster's pod rules, when the remote side is a Kubernetes
	 * cluster (NULL otherwise): a job of uid 0 may not burst, nor one
	 * whose files are on no volume the cluster mounts. */
	const struct hb_k8s_opts *k8s;
	int64_t uid; /* the job's user */
};

enum hb_place_verdict {
	HB_DECIDE_SLURM = 0,
	HB_DECIDE_KUBE = 1,
	HB_DECIDE_REJECT = 2
};

struct hb_place_out {
	int target;	   /* enum hb_place_verdict */
	char why[32];	   /* hb_place_why_name() */
	char rule[128];	   /* the rule that applied */
	char reason[400];  /* one line for the user (a rejection says what
			    * each side lacks) */
	char *explanation; /* every line, '\n'-separated (malloc) */
	char *doc_json;	   /* hb_place_emit()'s document without the
			    * explanation, compact JSON (malloc) */
	int64_t cost_micro;	/* the estimate charged to the account */
	int side, period;	/* where it was charged: HB_SIDE_* and the
				 * rule's budget period (cost_micro > 0) */
	char partition[HB_PLACE_NAME_MAX + 1]; /* the partition it was
						* placed against ("": none) */
};
void hb_place_out_free(struct hb_place_out *out);

/*
 * Place job at Unix time now with pol and snap, and charge its estimated
 * cost to the account's spend in snap (hb_place_commit()).  note, when
 * not NULL or "", ends the explanation ("note: ...").  HB_EINVAL (err
 * names the field) for an account, partition or name longer than
 * HB_PLACE_NAME_MAX, a jobspec that does not read or a deadline that
 * does not parse; HB_ENOMEM; HB_ETOOBIG.  out is zeroed on error.
 */
struct hb_snapshot;
int hb_place_job(const struct hb_policy *pol, struct hb_snapshot *snap,
		 const struct hb_place_job *job, int64_t now, const char *note,
		 struct hb_place_out *out, struct hb_err *err);


/* A decide request (protocol v1: what job_submit/hpcbridge builds from
 * Slurm's job description), read. */
struct hb_place_request {
	struct hb_place_job job; /* k8s and seq left for the caller */
	const char *target;	 /* as asked (NULL: none), borrowed */
	const struct cJSON *options;
	int64_t uid;
};

/*
 * Read and check req's fields into q, the user's name given (borrowed):
 * uid, account, partition, slurm_job_name, target, time_limit_min,
 * options, jobspec, script, argv, env.  0, or an HB_E* code with err
 * naming the field.  The daemon reads what the plugin sends with it;
 * the plugin decides from the job it read itself (hb_decide_job_read(),
 * the same fields), and a unit test checks the two decide alike.
 */
int hb_place_request_read(const struct cJSON *req, const char *user,
			  struct hb_place_request *q, struct hb_err *err);

/* The local time's offset from UTC at Unix time now, in seconds. */
int32_t hb_place_local_offset(int64_t now);

#endif
