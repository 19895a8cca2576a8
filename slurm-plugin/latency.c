/*
 * latency.c - the time job_submit/hpcbridge spends inside slurmctld's job
 * write lock, kept as a log-linear histogram of microseconds so that the
 * plugin can say its p50 and p99 without keeping every sample.
 *
 * Below 16 us each microsecond has a bucket of its own; above, each power
 * of two is cut into 16 equal buckets, so a quantile is read to within
 * 1/16 (6.25 %) of the true value.  Adding a sample is a few shifts and
 * one increment: it runs in the lock it measures.
 */
#include <string.h>

#include "hbplugin.h"

#define SUB 16	   /* buckets per power of two */
#define SUB_BITS 4 /* log2(SUB) */

static unsigned top_bit(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

static size_t bucket_of(uint64_t us)
{
	unsigned e;
	size_t i;

	if (us < SUB)
		return (size_t)us;
	e = top_bit(us);
	i = SUB + (size_t)(e - SUB_BITS) * SUB +
	    (size_t)((us >> (e - SUB_BITS)) & (SUB - 1));
	return i < HB_LATENCY_BUCKETS ? i : HB_LATENCY_BUCKETS - 1;
}

/* The largest value bucket i holds. */
static uint64_t bucket_top(size_t i)
{
	unsigned e;
	uint64_t sub;

	if (i < SUB)
		return (uint64_t)i;
	e = (unsigned)((i - SUB) / SUB) + SUB_BITS;
	sub = (uint64_t)((i - SUB) % SUB);
	return ((SUB + sub + 1) << (e - SUB_BITS)) - 1;
}

void hb_latency_reset(struct hb_latency *l)
{
	memset(l, 0, sizeof(*l));
}

void hb_latency_add(struct hb_latency *l, uint64_t us)
{
	l->buckets[bucket_of(us)]++;
	l->n++;
	if (us > l->max_us)
		l->max_us = us;
}

uint64_t hb_latency_quantile(const struct hb_latency *l, double q)
{
	uint64_t rank, seen = 0, top;

	if (!l->n)
		return 0;
	if (q <= 0)
		q = 0;
	if (q >= 1)
		return l->max_us;
	/* the smallest sample with at least q of them at or below it */
	rank = (uint64_t)(q * (double)l->n);
	if ((double)rank < q * (double)l->n || rank == 0)
		rank++;
	for (size_t i = 0; i < HB_LATENCY_BUCKETS; i++) {
		seen += l->buckets[i];
		if (seen >= rank) {
			top = bucket_top(i);
			return top < l->max_us ? top : l->max_us;
		}
	}
	return l->max_us;
}
