/*
 * meter.h - metering: what a finished job used on its side, priced with
 * the rate card (ratecard.h) and written to the ledger (store.h).
 *
 * A job is metered once it is final, from what its side reports:
 * - on Slurm, what slurmctld allocated (CPUs, memory, GPUs by type,
 *   nodes) from its start to its end, less the time it was suspended;
 * - on Kubernetes, each pod's requests from the job's start to its end:
 *   the worker pods (one per node of the decided jobspec, each with the
 *   request the translator writes) and the launcher's.  Where measured
 *   usage is known it counts instead of a smaller request (OpenCost's
 *   max(request, usage)).
 * A burst job's proxy (1 CPU in the burst partition) is never metered:
 * the job is charged once, on the cluster side.
 *
 * Metering a job again is safe: when its entries would be the same,
 * nothing is written; when they differ (a late figure, a rerun), the
 * old ones are reversed and the new ones appended.
 */
#ifndef HPCBRIDGE_METER_H
#define HPCBRIDGE_METER_H

#include <stdint.h>

#include "hpcbridge/error.h"
#include "hpcbridge/ratecard.h"

struct hb_store;
struct hb_jobspec;
struct hb_k8s_opts;

/* The most entries one job gets: one per rate period it spans. */
#define HB_METER_MAX_ENTRIES 64

/* The name a ledger entry gives GPUs of no type. */
#define HB_METER_GPU_UNTYPED "any"

/* A finished job's use of one side.  Strings are borrowed. */
struct hb_meter_job {
	const char *job_id; /* the gateway job: required */
	/* the part of it this usage is (struct hb_ledger_entry's part:
	 * the Slurm job id on Slurm, "t<N>" for a burst array task, NULL
	 * for the whole job): each part is metered on its own */
	const char *part;
	const char *user, *account;
	const char *partition; /* the rate class on Slurm */
	const char *queue;     /* the rate class on Kubernetes (LocalQueue) */
	/* side, start, end (Unix seconds) and what was used; rate_class
	 * and account are set from the fields above */
	struct hb_usage usage;
};

/*
 * A burst job's use, from its decided jobspec: shape.nodes worker pods
 * of cpus_per_node CPUs, mem_per_node_mb MiB (k8s->worker_mem_mb for a
 * whole node's memory) and gpus_per_node GPUs of spec->gpu_type, plus
 * the launcher's k8s->launcher_cpus and launcher_mem_mb, from start_ms
 * to end_ms (rounded to whole seconds: start down, end up).  measured
 * (may be NULL) is what the pods used, summed over them, where a metrics
 * source reports it: each of its CPUs, memory and GPU count that
 * exceeds the request counts instead.  nodes is the pod count.
 */
int hb_meter_kube_usage(const struct hb_jobspec *spec,
			const struct hb_k8s_opts *k8s, int64_t start_ms,
			int64_t end_ms, const struct hb_usage *measured,
			struct hb_usage *u, struct hb_err *err);

/* What hb_meter_record() did. */
struct hb_meter_result {
	uint32_t entries;	  /* the job's entries now (0: nothing used) */
	uint32_t reversed;	  /* old entries reversed */
	int written;		  /* 0: the same entries were there already */
	int64_t amount_micros;	  /* the part's cost now */
	int64_t replaced_micros;  /* what its entries before charged */
	const char *rate_version; /* of its last entry; borrowed from card */
};

/*
 * Price j with card and make its ledger entries the part's: append them
 * (in the caller's transaction, or one of their own) unless the part's
 * current entries (those of the job with the same part, not reversed)
 * are the same; reverse those first when they differ.  A job whose start and end are the same
 * second (it ran, for less than its side's clock tells) gets one entry
 * of nothing at the version then in force, so that reports count it; a
 * job that never ran is not metered at all.  Errors from pricing (no rate
 * version in
 * force, usage beyond bounds) and from the store are passed on, err
 * naming the job.
 */
int hb_meter_record(struct hb_store *st, const struct hb_ratecard *card,
		    const struct hb_meter_job *j, struct hb_meter_result *res,
		    struct hb_err *err);

/* ---- checkpoint storage (gateway/ledger/storage.c) -------------------
 *
 * A checkpoint location (s3://BUCKET/PREFIX) is charged for the bytes S3
 * holds under it, over time, on the Kubernetes side (S3 is the cluster's
 * storage), at storage_gb_month in the holding job's rate class.  Each
 * measurement charges the time since the last one at the bytes the last
 * one found (struct hb_storage_meter, store.h), then records what this
 * one found: so storage goes on being charged after the job ends, for as
 * long as S3 keeps the bytes, and stops once a measurement finds none.
 */

/* A measurement of one location.  Strings are borrowed. */
struct hb_meter_storage {
	const char *url; /* the location: required */
	/* the job charged from now on, with its account, user and
	 * LocalQueue; job_id NULL: the one the meter names already (a
	 * periodic measurement) */
	const char *job_id, *account, *user, *queue;
	uint64_t bytes; /* what S3 holds under the location now */
	int64_t now_ms; /* when it was measured (wall clock) */
};

/* What hb_meter_storage() charged. */
struct hb_meter_storage_result {
	uint32_t entries;      /* ledger entries written (one per rate
				* period, more for a long period of many
				* bytes) */
	int64_t seconds;       /* charged, in all */
	int64_t bytes;	       /* ... at so many bytes (the last measure) */
	int64_t amount_micros; /* what they cost */
	int more;	       /* the period was longer than one call
				* charges: the rest is charged next time */
	char job_id[64];       /* the job charged ("" when none) */
	char account[256];     /* its account ("" when none or longer) */
};

/*
 * Charge url's meter for [since, now) at the bytes it last measured and
 * record m's bytes and now (and job, when given) as its new state, in
 * one store transaction (the caller's, or one of its own): a crash
 * between the two never charges a period twice nor loses one.  Time is
 * charged in whole seconds (now rounded down; the fraction waits for
 * the next measurement).  The period is cut at rate changes, each piece
 * priced with hb_rate_price_storage() at its own version's rates and
 * rounded once; time before the card's first version, or under a
 * version that does not price Kubernetes, is not charged.  No entry for
 * zero bytes or zero seconds; the first measurement of a location
 * charges nothing.  A location not measured before needs m->job_id
 * (HB_EINVAL).  Store and pricing errors are passed on.
 */
int hb_meter_storage(struct hb_store *st, const struct hb_ratecard *card,
		     const struct hb_meter_storage *m,
		     struct hb_meter_storage_result *res, struct hb_err *err);

#endif
