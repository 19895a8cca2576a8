/*
 * ratecard.h - rate cards and pricing: what a job's use of each side
 * costs, in integer micro-units of the card's currency.
 *
 * A rate card (YAML, docs/chargeback.md) holds versions, each effective
 * from an instant until the next one.  A version has rates per side
 * (Slurm, Kubernetes) per resource class (a partition, a LocalQueue, and
 * "default" for the rest): CPU-hour, memory GB-hour, GPU-hour by type,
 * exclusive node-hour, storage GB-month and egress GB.
 *
 * Units: a memory GB is 1024 MiB (Slurm counts memory in MiB); an egress
 * or storage GB is 10^9 bytes; a month is 30 days (2,592,000 s).
 *
 * Rounding: every entry's amount is computed exactly, in 128-bit
 * integers, from its resource-seconds and its version's rates, and then
 * rounded once, half up, to a whole micro-unit.  Sums of entries are
 * never rounded again: a total is the sum of its entries' amounts.
 */
#ifndef HPCBRIDGE_RATECARD_H
#define HPCBRIDGE_RATECARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* The largest rate a card may hold, in micro-units (one million
 * currency units per hour, GB or month). */
#define HB_RATE_MAX 1000000000000LL
/* At most this many versions, classes per side and GPU types per class. */
#define HB_RATE_MAX_VERSIONS 256
#define HB_RATE_MAX_CLASSES  256
#define HB_RATE_MAX_GPUS     64
/* The name of the class (and GPU type) that prices everything unnamed. */
#define HB_RATE_DEFAULT "default"

enum hb_rate_side { HB_RATE_SLURM, HB_RATE_KUBE, HB_RATE_NSIDES };

/* How the cost of idle capacity is spread over the jobs (recorded at
 * load; docs/chargeback.md says what each means). */
enum hb_idle_cost { HB_IDLE_NONE, HB_IDLE_PROPORTIONAL, HB_IDLE_EVEN };

struct hb_rate_gpu {
	const char *type; /* lower case */
	int64_t per_hour;
};

/* The rates of one resource class, micro-units per unit. */
struct hb_rate {
	const char *name; /* partition, queue, or "default" */
	int64_t cpu_hour;
	int64_t memory_gb_hour;
	int64_t gpu_default;	 /* GPU-hour of a type not listed */
	struct hb_rate_gpu *gpu; /* by type */
	uint32_t ngpu;
	bool has_exclusive; /* exclusive_node_hour was given */
	int64_t exclusive_node_hour;
	int64_t storage_gb_month;
	int64_t egress_gb;
	uint32_t line;
};

struct hb_rate_version {
	const char *version;
	int64_t effective; /* Unix seconds; in force until the next one */
	/* per side; none: the version does not price that side */
	struct hb_rate *classes[HB_RATE_NSIDES];
	uint32_t nclasses[HB_RATE_NSIDES];
	uint32_t line;
};

struct hb_ratecard {
	struct hb_arena arena; /* everything below lives here */
	const char *source_name;
	const char *currency;	     /* "EUR" */
	const char *currency_symbol; /* "€" */
	enum hb_idle_cost idle_cost;
	/* per side, what it has (capacity:), for idle cost; NULL: not
	 * given */
	struct hb_rate_capacity *capacity[HB_RATE_NSIDES];
	struct hb_rate_version *versions; /* sorted by effective */
	uint32_t nversions;
};

/*
 * Read a rate card of len bytes named name (for messages) into card,
 * checked in full: unknown keys, malformed or negative rates, two
 * versions with the same name or the same effective instant, a side
 * without a "default" class, a GPU map without "default".  Errors read
 * "NAME:LINE: key.path: what is wrong".  On error card holds nothing
 * (hb_ratecard_free() is harmless).  Free with hb_ratecard_free().
 */
int hb_ratecard_parse(const char *buf, size_t len, const char *name,
		      struct hb_ratecard *card, struct hb_err *err);
/* The same from the file at path. */
int hb_ratecard_load(const char *path, struct hb_ratecard *card,
		     struct hb_err *err);
/* Release card; a zeroed or freed card is a no-op. */
void hb_ratecard_free(struct hb_ratecard *card);

/* The version in force at t (Unix seconds), or NULL before the first. */
const struct hb_rate_version *hb_ratecard_at(const struct hb_ratecard *card,
					     int64_t t);
/* The rates of class cls (NULL: default) on side, or the side's default;
 * NULL when the version does not price that side. */
const struct hb_rate *hb_rate_class(const struct hb_rate_version *v,
				    enum hb_rate_side side, const char *cls);
/* The GPU-hour of type (case-insensitive; NULL or unlisted: default). */
int64_t hb_rate_gpu_hour(const struct hb_rate *r, const char *type);

/* ---- pricing ---------------------------------------------------------- */

/* Usage bounds, so that every product fits its integer. */
#define HB_USAGE_MAX_SECONDS   (100LL * 366 * 86400)
#define HB_USAGE_MAX_CPUS      (1u << 24)
#define HB_USAGE_MAX_NODES     (1u << 24)
#define HB_USAGE_MAX_MEM       (1ULL << 50) /* bytes: 1 PiB */
#define HB_USAGE_MAX_GPU       (1u << 20)   /* of one type */
#define HB_USAGE_MAX_GPU_TYPES 8

struct hb_usage_gpu {
	const char *type; /* NULL: untyped, priced at the default */
	uint32_t count;
};

/* A side's capacity (the card's capacity.slurm, capacity.kubernetes):
 * priced as one job of that size in the side's default class. */
struct hb_rate_capacity {
	uint32_t cpus;
	uint64_t mem_bytes; /* memory_gb × 2^30 */
	struct hb_usage_gpu gpus[HB_USAGE_MAX_GPU_TYPES];
	uint32_t ngpus;
	uint32_t line;
};

/* What one job used on one side.  Strings are borrowed. */
struct hb_usage {
	enum hb_rate_side side;
	const char *rate_class; /* partition or queue; NULL: default */
	const char *account;
	int64_t start, end; /* Unix seconds, start <= end */
	uint32_t cpus;
	uint64_t mem_bytes; /* rounded up to MiB */
	struct hb_usage_gpu gpus[HB_USAGE_MAX_GPU_TYPES];
	uint32_t ngpus;
	uint32_t nodes;
	bool exclusive; /* whole nodes */
	uint64_t egress_bytes;
};

/*
 * One ledger entry: the part of a job inside one rate period.  Its
 * resource-seconds add up, over a job's entries, to the job's whole.
 * For an exclusive job whose class has an exclusive_node_hour, the
 * node-seconds are charged at that rate in place of CPU and memory
 * (GPUs are charged either way); otherwise node_s is recorded and not
 * charged.
 */
struct hb_charge {
	const char *version;	/* borrowed from the card */
	const char *rate_class; /* the class that priced it; borrowed */
	const char *account;	/* the usage's */
	enum hb_rate_side side;
	int64_t start, end;
	uint64_t cpu_s;				/* CPU-seconds */
	uint64_t mem_mib_s;			/* MiB-seconds */
	uint64_t gpu_s[HB_USAGE_MAX_GPU_TYPES]; /* by the usage's gpus[] */
	uint64_t node_s;
	bool node_charged; /* node_s was charged at exclusive_node_hour */
	int64_t amount;	   /* micro-units, rounded half up */
};

/*
 * Price u: one entry per rate period it overlaps, in time order, into
 * out (room for max); *n is how many.  Egress is not in them (see
 * hb_rate_price_egress()).  HB_EINVAL (err says why) for usage beyond
 * the bounds above or end < start, HB_ENOENT when no version is in force
 * at u->start or a version does not price u->side, HB_ETOOBIG when max
 * is too small, HB_ERANGE when an amount passes INT64_MAX.
 */
int hb_rate_price(const struct hb_ratecard *card, const struct hb_usage *u,
		  struct hb_charge *out, uint32_t max, uint32_t *n,
		  struct hb_err *err);

/* Egress of bytes by a job on side in class cls that ended at end: at
 * the rates in force at end.  *version (may be NULL) is borrowed. */
int hb_rate_price_egress(const struct hb_ratecard *card, enum hb_rate_side side,
			 const char *cls, int64_t end, uint64_t bytes,
			 int64_t *amount, const char **version,
			 struct hb_err *err);

/* Storage of bytes (at most HB_USAGE_MAX_MEM) kept for seconds (at most
 * HB_USAGE_MAX_SECONDS), at the rates in force at at. */
int hb_rate_price_storage(const struct hb_ratecard *card,
			  enum hb_rate_side side, const char *cls, int64_t at,
			  uint64_t bytes, uint64_t seconds, int64_t *amount,
			  const char **version, struct hb_err *err);

/* ---- idle cost --------------------------------------------------------- */

/*
 * What side's capacity costs over [from, to) (Unix seconds): the
 * capacity priced as one job in the side's default class, split by rate
 * period and rounded per period as any job.  HB_ENOENT (err says why)
 * when the card gives no capacity for side, or no version prices the
 * side at some instant of the window.
 */
int hb_ratecard_capacity_cost(const struct hb_ratecard *card,
			      enum hb_rate_side side, int64_t from, int64_t to,
			      int64_t *amount, struct hb_err *err);
/*
 * Spread idle (>= 0) micro-units over n lines into out[]: PROPORTIONAL in
 * proportion to the lines' positive weights, EVEN equally over the lines
 * whose weight is positive; lines with a weight <= 0 get 0.  Each line
 * gets its share rounded down, and the micro-units left (fewer than the
 * lines) go one each to the lines with the largest remainders
 * (PROPORTIONAL) or to the first lines (EVEN), earlier lines first on a
 * tie: out[] sums to idle exactly.  NONE, or no positive weight: all 0.
 * HB_EINVAL for a negative idle.
 */
int hb_idle_allocate(enum hb_idle_cost how, int64_t idle,
		     const int64_t *weights, size_t n, int64_t *out);

/* num / den rounded half up (den > 0); HB_ERANGE past INT64_MAX.  The
 * one rounding every amount goes through. */
int hb_rate_round(unsigned __int128 num, uint64_t den, int64_t *out);

#endif
