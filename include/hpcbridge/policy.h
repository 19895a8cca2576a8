/*
 * policy.h - the placement policy.
 *
 * A policy (YAML or JSON, docs/placement.md) says what each side can run
 * and what it costs, where data lives, and the rules per account or
 * partition: burst allowed or never, a budget per period, a preferred
 * side, the premium accepted to meet a deadline, data gravity, a
 * migration pilot.  It is applied to a snapshot of the world
 * (snapshot.h), which also holds the words both share: sides, money,
 * periods.
 *
 * A policy is plain data, validated in full when read: an unknown key, a
 * wrong type or a value out of bounds is an error "FILE:LINE: key.path:
 * message".  Everything it points to lives in its own arena;
 * hb_policy_free() releases it.  After parsing, a policy is read-only and
 * may be shared by threads.
 */
#ifndef HPCBRIDGE_POLICY_H
#define HPCBRIDGE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/snapshot.h"

/* A rate card: what one hour of each resource costs, per node. */
struct hb_gpu_rate {
	const char *type; /* lower case: "h100", "1g.10gb" */
	hb_money per_hour;
};

struct hb_rates {
	hb_money cpu_hour;	 /* one CPU for an hour */
	hb_money mem_gb_hour;	 /* one GiB of memory for an hour */
	hb_money gpu_hour;	 /* a GPU of a type with no rate of its own */
	hb_money shard_hour;	 /* one GPU shard for an hour */
	hb_money per_job;	 /* fixed overhead per job */
	struct hb_gpu_rate *gpu; /* per type, MIG profiles included */
	uint32_t ngpu;
	uint32_t line; /* where the card is written (0: default) */
};

/* What a side (or one partition) can run.  0 means "not limited". */
/* In gpu_types or mig, HB_GPU_ANY ("*", snapshot.h): a side that runs any
 * type. */

struct hb_capability {
	uint32_t max_nodes;	/* nodes one job may use */
	uint32_t node_cpus;	/* CPUs of one node */
	uint64_t node_mem_mb;	/* memory of one node */
	uint32_t node_gpus;	/* GPUs of one node */
	const char **gpu_types; /* lower case; none: no GPUs at all */
	uint32_t ngpu_types;
	const char **mig; /* MIG profiles offered ("1g.10gb") */
	uint32_t nmig;
	bool shards; /* GPU shards (gres shard) */
	bool rdma;   /* a fabric for multi-node MPI (InfiniBand, RoCE) */
};

struct hb_partition {
	const char *name;
	uint32_t line;
	struct hb_capability cap;
	struct hb_rates rates;	    /* slurm.rates unless its own */
	int64_t default_deadline;   /* seconds after submission; 0: none */
	int64_t default_time_limit; /* 0: the policy's */
};

/* A Kueue LocalQueue and which jobs it takes (none listed: any). */
struct hb_kqueue {
	const char *name;
	uint32_t line;
	const char **accounts;
	uint32_t naccounts;
	const char **partitions;
	uint32_t npartitions;
};

/* A data location: a path or bucket prefix that lives on one side. */
struct hb_data_loc {
	const char *prefix; /* "/lustre/era5" or "s3://bucket/prefix" */
	uint32_t prefix_len;
	uint32_t line;
	uint8_t side;	 /* enum hb_side where it lives */
	bool movable;	 /* false: never leaves its side */
	bool size_known; /* size given here (a snapshot may measure it) */
	uint64_t size;	 /* bytes */
	hb_money egress_per_gb; /* per 10^9 bytes moved off its side */
	uint64_t bandwidth;	/* bytes per second when staging */
};

/* An h100 request may also run on each of runs_on. */
struct hb_gpu_equiv {
	const char *type;
	const char **runs_on;
	uint32_t n;
};

enum hb_prefer {
	HB_PREFER_SLURM = 0, /* stay on Slurm unless it misses the deadline */
	HB_PREFER_KUBE,	     /* the mirror image */
	HB_PREFER_CHEAPEST,  /* the cheaper side that meets the deadline */
	HB_PREFER_EARLIEST   /* the side that finishes first */
};

enum hb_fallback {
	HB_FALLBACK_EARLIEST = 0, /* run anyway where it finishes first */
	HB_FALLBACK_REJECT	  /* reject, saying why */
};

#define HB_UNSET (-1)

/*
 * One rule.  A job takes the first rule whose account and partition
 * match (NULL: any), or the policy's defaults.  Every setting a rule does
 * not give is the defaults' value.
 */
struct hb_rule {
	const char *name;      /* "rules[2]" when the file names none */
	uint32_t line;	       /* 0 for the built-in defaults */
	uint32_t index;	       /* 1-based position in rules; 0: defaults */
	const char *account;   /* NULL: any */
	const char *partition; /* NULL: any */
	bool burst;	       /* false: never leaves Slurm */
	bool honour_target;    /* --hpcbridge-target is obeyed when allowed */
	uint8_t prefer;	       /* enum hb_prefer */
	uint8_t fallback;      /* enum hb_fallback */
	hb_money budget;       /* per period; HB_UNSET: none */
	uint8_t budget_period; /* enum hb_period */
	uint8_t budget_sides;  /* bit (1 << side) for each side it covers */
	int32_t premium_bp;    /* max premium, basis points; HB_UNSET */
	hb_money premium_abs;  /* max premium, money; HB_UNSET */
	uint64_t keep_with_data_over; /* bytes; 0: no limit */
	int32_t staging_slack_bp;     /* of the deadline's slack; HB_UNSET */
	int32_t pilot_bp;	      /* share of eligible jobs; 0: none */
};

struct hb_policy {
	struct hb_arena arena;
	const char *source_name;     /* file name, for messages */
	const char *currency;	     /* "USD" */
	const char *currency_symbol; /* "$", or "USD " */

	/* job defaults */
	int64_t default_time_limit;	 /* seconds */
	uint64_t default_mem_per_cpu_mb; /* when the job gives no memory */
	const char **rdma_features;	 /* --constraint features asking RDMA */
	uint32_t nrdma_features;
	bool multinode_mpi_needs_rdma;

	/* Slurm */
	const char *default_partition; /* NULL: the first one */
	struct hb_partition *partitions;
	uint32_t npartitions;
	struct hb_rates slurm_rates;
	int64_t slurm_default_wait; /* when the snapshot has no estimate */

	/* Kubernetes; kube_enabled false when the policy has no
	 * kubernetes section: nothing bursts. */
	bool kube_enabled;
	const char *namespace;
	const char *default_queue; /* NULL: the first queue */
	/* At least one when kube_enabled: with none in the file, one
	 * named after the namespace. */
	struct hb_kqueue *queues;
	uint32_t nqueues;
	struct hb_capability kube_cap;
	struct hb_rates kube_rates;
	int64_t kube_startup;	   /* pod scheduling and image pull */
	int64_t kube_default_wait; /* when the snapshot has no estimate */

	struct hb_data_loc *data;
	uint32_t ndata;
	struct hb_gpu_equiv *equiv;
	uint32_t nequiv;

	struct hb_rule defaults;
	struct hb_rule *rules;
	uint32_t nrules;
};

/*
 * Read a policy document of len bytes named name into pol (which need not
 * be initialised).  On error pol holds nothing and err says
 * "NAME:LINE: key.path: what is wrong".  Caller frees with
 * hb_policy_free() on success.
 */
int hb_policy_parse(const char *buf, size_t len, const char *name,
		    struct hb_policy *pol, struct hb_err *err);
/* Release everything the policy holds; safe on a zeroed struct. */
void hb_policy_free(struct hb_policy *pol);

/* Lookups (no allocation).  NULL when nothing matches. */
const struct hb_partition *hb_policy_partition(const struct hb_policy *pol,
					       const char *name);
const struct hb_kqueue *hb_policy_queue(const struct hb_policy *pol,
					const char *account,
					const char *partition);
const struct hb_rule *hb_policy_rule(const struct hb_policy *pol,
				     const char *account,
				     const char *partition);
/* The longest data location that is a prefix of path, on a path
 * boundary ('/' or the end). */
const struct hb_data_loc *hb_policy_data(const struct hb_policy *pol,
					 const char *path);
/* Whether a GPU request of type want (NULL: any) may run on type have;
 * case-insensitive, through the equivalence table. */
bool hb_policy_gpu_ok(const struct hb_policy *pol, const char *want,
		      const char *have);
/* Whether t names a MIG profile ("1g.10gb", "a100_3g.40gb"). */
bool hb_gpu_is_mig(const char *t);

/* Write what the policy means, in sentences, for "policy check". */
int hb_policy_describe(const struct hb_policy *pol, struct hb_buf *out);

#endif
