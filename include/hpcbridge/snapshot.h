/*
 * snapshot.h - the snapshot of the world a placement decision reads, and
 * the words policies and snapshots share: the two sides, money, budget
 * periods, and the text of amounts, times and sizes.
 *
 * A snapshot says how the world looks now: the Slurm queue per
 * partition, free capacity per Kubernetes queue, measured data sizes and
 * the spend so far per account and period.  It is plain data, validated
 * in full when read: an unknown key, a wrong type or a value out of
 * bounds is an error "FILE:LINE: key.path: message".  Names live in its
 * own arena; hb_snapshot_free() releases everything.  Its owner updates
 * it through the hb_snapshot_set_*() functions.
 *
 * Money is integer micro-units of the policy's currency (hb_money):
 * 1.25 is 1250000.  Times are seconds; instants are Unix seconds (UTC).
 * Durations, sizes, bandwidths, percentages and instants are read by
 * units.h; the policy itself is policy.h.
 */
#ifndef HPCBRIDGE_SNAPSHOT_H
#define HPCBRIDGE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/units.h"

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

/* A GPU type that stands for any type: in a policy's gpu_types or mig, a
 * side that runs any type. */
#define HB_GPU_ANY "*"

/* Largest free capacity a snapshot holds (setters clamp to them). */
#define HB_SNAP_MAX_CPUS (1ULL << 40)
#define HB_SNAP_MAX_GPUS 1000000u
/* Instants a snapshot may hold: 1970 to the end of 9999. */
#define HB_INSTANT_MAX 253402300799LL

/* Most entries of each list in a policy or snapshot. */
#define HB_POLICY_MAX_ITEMS 1024

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
 * need not be initialised.  On error s holds nothing and err says
 * "NAME:LINE: key.path: what is wrong".  A snapshot with no "now" is
 * HB_EINVAL: decisions depend on it.
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
 * (saturating at HB_MONEY_MAX; a negative amount takes off, down to 0:
 * a reservation released, an estimate replaced by a smaller actual). */
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

/* "212.40", "0.000125": at most 6 decimals, not negative.  Accepts the
 * whole string or fails with HB_EINVAL (malformed) or HB_ERANGE (too
 * large), leaving *out alone.  The other values (durations, sizes,
 * bandwidths, percentages, instants) are read by units.h. */
int hb_parse_money(const char *s, hb_money *out);

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