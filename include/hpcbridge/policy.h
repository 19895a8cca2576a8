/*
 * policy.h - the placement policy and the snapshot of the world it is
 * applied to.
 *
 * A policy (YAML or JSON, docs/placement.md) says what each side can run
 * and what it costs, where data lives, and the rules per account or
 * partition: burst allowed or never, a budget per period, a preferred
 * side, the premium accepted to meet a deadline, data gravity, a
 * migration pilot.  A snapshot says how the world looks now: the Slurm
 * queue per partition, free capacity per Kubernetes queue, measured data
 * sizes and the spend so far per account and period.
 *
 * Both are plain data, validated in full when read: an unknown key, a
 * wrong type or a value out of bounds is an error "FILE:LINE: key.path:
 * message".  Everything they point to lives in their own arena; the
 * _free() functions release it.  After parsing, a policy is read-only and
 * may be shared by threads; a snapshot is updated by its owner through
 * the hb_snapshot_set_*() functions.
 *
 * Money is integer micro-units of the policy's currency (hb_money):
 * 1.25 is 1250000.  Times are seconds; instants are Unix seconds (UTC).
 */
#ifndef HPCBRIDGE_POLICY_H
#define HPCBRIDGE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* The two sides a job can run on. */
enum hb_side { HB_SIDE_SLURM = 0, HB_SIDE_KUBE = 1, HB__SIDE_COUNT };

/* "slurm" or "kubernetes" (static); NULL for anything else. */
const char *hb_side_name(int side);
/* "Slurm" or "Kubernetes", for sentences (static). */
const char *hb_side_title(int side);

typedef int64_t hb_money; /* micro-units of the policy's currency */
#define HB_MONEY_UNIT 1000000LL
/* Largest amount a policy or snapshot may state (10^12 units). */
#define HB_MONEY_MAX (1000000000000LL * HB_MONEY_UNIT)

/* Largest duration or data size a policy may state. */
#define HB_DURATION_MAX (100LL * 366 * 86400) /* 100 years */
#define HB_SIZE_MAX	(1ULL << 62)	      /* 4 EiB */

/* Largest free capacity a snapshot holds (setters clamp to them). */
#define HB_SNAP_MAX_CPUS (1ULL << 40)
#define HB_SNAP_MAX_GPUS 1000000u
/* Instants a snapshot may hold: 1970 to the end of 9999. */
#define HB_INSTANT_MAX 253402300799LL

/* Most entries of each list in a policy or snapshot. */
#define HB_POLICY_MAX_ITEMS 1024

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
/* In gpu_types or mig: a side that runs any type ("*"). */
#define HB_GPU_ANY "*"

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

enum hb_period {
	HB_PERIOD_DAY = 0,
	HB_PERIOD_WEEK,
	HB_PERIOD_MONTH,
	HB_PERIOD_QUARTER,
	HB_PERIOD_YEAR,
	HB__PERIOD_COUNT
};
/* "day", "week", ... (static); NULL if unknown. */
const char *hb_period_name(int period);
/* The instant (Unix seconds) the period that holds now began, in the zone
 * utc_offset seconds east of UTC: midnight, Monday's midnight (ISO weeks),
 * the 1st of the month, of January/April/July/October, of January. */
int64_t hb_period_start(int period, int64_t now, int32_t utc_offset);

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

/* ---- The snapshot ---------------------------------------------------- */

struct hb_snap_partition {
	const char *name;
	int64_t wait; /* expected start, seconds from now */
	bool wait_known;
	uint32_t pending;    /* jobs waiting in the partition */
	uint32_t idle_nodes; /* nodes free now */
	bool idle_known;
};

struct hb_snap_gpus {
	const char *type;
	uint32_t count;
};

struct hb_snap_queue {
	const char *name;
	int64_t wait; /* expected admission when it does not fit now */
	bool wait_known;
	uint32_t pending; /* workloads waiting in the queue */
	bool free_known;  /* free capacity given */
	uint64_t free_cpus;
	uint64_t free_mem_mb;
	struct hb_snap_gpus *free_gpus;
	uint32_t nfree_gpus;
	uint32_t cap_free_gpus;
};

struct hb_snap_data {
	const char *prefix;
	uint64_t size; /* bytes, as measured */
};

struct hb_snap_spend {
	const char *account;
	uint8_t period; /* enum hb_period */
	hb_money spent[HB__SIDE_COUNT];
};

struct hb_snapshot {
	struct hb_arena arena; /* names */
	const char *source_name;
	int64_t now;	    /* the decision instant */
	int32_t utc_offset; /* seconds east of UTC, for calendar deadlines */
	struct hb_snap_partition *parts;
	uint32_t nparts, cap_parts;
	struct hb_snap_queue *queues;
	uint32_t nqueues, cap_queues;
	struct hb_snap_data *data;
	uint32_t ndata, cap_data;
	struct hb_snap_spend *spend;
	uint32_t nspend, cap_spend;
};

/* An empty snapshot at instant now.  Cannot fail. */
void hb_snapshot_init(struct hb_snapshot *s, int64_t now);
void hb_snapshot_free(struct hb_snapshot *s);

/*
 * Read a snapshot document (docs/placement.md, "Snapshot") into s, which
 * need not be initialised.  Errors as for hb_policy_parse().  A snapshot
 * with no "now" is HB_EINVAL: decisions depend on it.
 */
int hb_snapshot_parse(const char *buf, size_t len, const char *name,
		      struct hb_snapshot *s, struct hb_err *err);
/* The snapshot as a document hb_snapshot_parse() reads back equal.
 * Caller frees with cJSON_Delete(); NULL when out of memory. */
struct cJSON *hb_snapshot_to_json(const struct hb_snapshot *s);

/*
 * Updates, for the daemon that keeps a snapshot warm.  Each finds the
 * entry by name (creating it the first time: names are copied, arrays
 * grow with malloc) and overwrites what it sets.  Values are clamped to
 * what a snapshot document can say (waits to HB_DURATION_MAX, sizes to
 * HB_SIZE_MAX, money to 0..HB_MONEY_MAX), so hb_snapshot_to_json() always
 * reads back.  HB_ENOMEM, or HB_ETOOBIG past HB_POLICY_MAX_ITEMS entries.
 */
int hb_snapshot_set_partition(struct hb_snapshot *s, const char *name,
			      int64_t wait, uint32_t pending,
			      uint32_t idle_nodes);
int hb_snapshot_set_queue(struct hb_snapshot *s, const char *name, int64_t wait,
			  uint32_t pending, uint64_t free_cpus,
			  uint64_t free_mem_mb);
int hb_snapshot_set_queue_gpus(struct hb_snapshot *s, const char *queue,
			       const char *type, uint32_t count);
int hb_snapshot_set_data(struct hb_snapshot *s, const char *prefix,
			 uint64_t size);
int hb_snapshot_set_spend(struct hb_snapshot *s, const char *account,
			  int period, int side, hb_money spent);
/* Every account's spend back to zero (the entries stay). */
void hb_snapshot_clear_spend(struct hb_snapshot *s);
/* Add amount to what account has spent on side this period
 * (saturating at HB_MONEY_MAX; a negative amount adds nothing). */
int hb_snapshot_charge(struct hb_snapshot *s, const char *account, int period,
		       int side, hb_money amount);

/* Lookups (no allocation); NULL when absent. */
const struct hb_snap_partition *
hb_snapshot_partition(const struct hb_snapshot *s, const char *name);
const struct hb_snap_queue *hb_snapshot_queue(const struct hb_snapshot *s,
					      const char *name);
const struct hb_snap_data *hb_snapshot_data(const struct hb_snapshot *s,
					    const char *prefix);
const struct hb_snap_spend *hb_snapshot_spend(const struct hb_snapshot *s,
					      const char *account, int period);

/* ---- Values as policies and snapshots write them ---------------------- */

/* Each accepts the whole string or fails with HB_EINVAL (malformed) or
 * HB_ERANGE (too large), leaving *out alone. */

/* "212.40", "0.000125": at most 6 decimals, not negative. */
int hb_parse_money(const char *s, hb_money *out);
/* "90s", "11m", "6h10m", "1d12h", "2w"; a bare number is seconds. */
int hb_parse_duration(const char *s, int64_t *out);
/* "800G", "1.5TB", "512Mi", "2GiB", "100": K M G T P E are powers of
 * 1000, Ki Mi Gi Ti Pi Ei of 1024, a trailing B is allowed; bytes. */
int hb_parse_size(const char *s, uint64_t *out);
/* "10Gb/s", "10Gbps", "1.25GB/s", "400Mbit/s": bits (b, bit) or bytes
 * (B), per second; into bytes per second. */
int hb_parse_bandwidth(const char *s, uint64_t *out);
/* "20%", "2.5%": into basis points (hundredths of a percent). */
int hb_parse_percent(const char *s, int32_t *out);
/* "2026-11-21T08:00:00Z", "2026-11-21T09:00:00+01:00", "2026-11-21"
 * (midnight UTC): into Unix seconds. */
int hb_parse_instant(const char *s, int64_t *out);
/* "+01:00", "-05:30", "Z": into seconds east of UTC. */
int hb_parse_utc_offset(const char *s, int32_t *out);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t hb_days_from_civil(int64_t y, unsigned m, unsigned d);
void hb_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* Formatting for explanations.  Each writes a NUL-terminated string that
 * fits its buffer (32 bytes is always enough) and returns it. */
/* "6h10m", "11m", "45s", "2d3h", "0s"; negative values get a '-'. */
char *hb_format_duration(int64_t seconds, char *buf, size_t size);
/* "1,212.40": two decimals, rounded half up, thousands separated. */
char *hb_format_money(hb_money m, char *buf, size_t size);
/* A rate, exactly: at least 2 decimals, up to 6 ("0.001", "4.50"). */
char *hb_format_rate(hb_money m, char *buf, size_t size);
/* "800 GB", "1.5 TB", "512 B": powers of 1000, one decimal at most. */
char *hb_format_size(uint64_t bytes, char *buf, size_t size);
/* "10 Gb/s": bits per second, powers of 1000. */
char *hb_format_bandwidth(uint64_t bytes_per_s, char *buf, size_t size);
/* "2026-11-21T08:00:00Z" */
char *hb_format_instant(int64_t t, char *buf, size_t size);

#endif
