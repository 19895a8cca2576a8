/*
 * price.c - pricing usage with a rate card: a job is cut at every rate
 * change inside it, and each piece becomes one ledger entry whose amount
 * is rounded once, half up, from an exact 128-bit product.
 */
#include <string.h>

#include "hpcbridge/ratecard.h"
#include "hpcbridge/units.h"

/* Rates are per hour and memory per GB of 1024 MiB: every amount of a
 * job is an exact fraction over this denominator. */
#define HOUR_MIB (3600ULL * 1024)
#define GB	 1000000000ULL
#define MONTH	 2592000ULL /* 30 days */

int hb_rate_round(unsigned __int128 num, uint64_t den, int64_t *out)
{
	unsigned __int128 q = num / den, rem = num % den;

	if (rem >= den - rem) /* rem >= den / 2, exactly: half up */
		q++;
	if (q > INT64_MAX)
		return HB_ERANGE;
	*out = (int64_t)q;
	return 0;
}

/* The index of the version in force at t, or -1 before the first. */
static int version_at(const struct hb_ratecard *card, int64_t t)
{
	int lo = 0, hi = (int)card->nversions; /* first with effective > t */

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (card->versions[mid].effective <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

const struct hb_rate_version *hb_ratecard_at(const struct hb_ratecard *card,
					     int64_t t)
{
	int i = version_at(card, t);

	return i < 0 ? NULL : &card->versions[i];
}

const struct hb_rate *hb_rate_class(const struct hb_rate_version *v,
				    enum hb_rate_side side, const char *cls)
{
	const struct hb_rate *def = NULL;

	if (!v || (unsigned)side >= HB_RATE_NSIDES)
		return NULL;
	for (uint32_t i = 0; i < v->nclasses[side]; i++) {
		const struct hb_rate *r = &v->classes[side][i];

		if (cls && !strcmp(r->name, cls))
			return r;
		if (!strcmp(r->name, HB_RATE_DEFAULT))
			def = r;
	}
	return def;
}

int64_t hb_rate_gpu_hour(const struct hb_rate *r, const char *type)
{
	for (uint32_t i = 0; type && i < r->ngpu; i++) {
		const char *a = r->gpu[i].type, *b = type;

		while (*a && *a == hb_ascii_lower(*b))
			a++, b++;
		if (!*a && !*b)
			return r->gpu[i].per_hour;
	}
	return r->gpu_default;
}

/* The rates of side and cls in force at t, or HB_ENOENT. */
static int rates_at(const struct hb_ratecard *card, enum hb_rate_side side,
		    const char *cls, int64_t t, const struct hb_rate **rate,
		    const char **version, struct hb_err *err)
{
	const struct hb_rate_version *v = hb_ratecard_at(card, t);

	*rate = hb_rate_class(v, side, cls);
	if (!v)
		return hb_err_set(err, HB_ENOENT, card->source_name, 0,
				  "no version in force at %lld", (long long)t);
	if (!*rate)
		return hb_err_set(err, HB_ENOENT, card->source_name, v->line,
				  "version '%s' prices no %s", v->version,
				  side == HB_RATE_SLURM ? "slurm"
							: "kubernetes");
	if (version)
		*version = v->version;
	return 0;
}

static int check_usage(const struct hb_ratecard *card, const struct hb_usage *u,
		       struct hb_err *err)
{
	const char *why = NULL;

	if ((unsigned)u->side >= HB_RATE_NSIDES)
		why = "no such side";
	else if (u->end < u->start)
		why = "ends before it starts";
	else if ((unsigned __int128)((__int128)u->end - u->start) >
		 HB_USAGE_MAX_SECONDS)
		why = "runs longer than 100 years";
	else if (u->cpus > HB_USAGE_MAX_CPUS || u->nodes > HB_USAGE_MAX_NODES)
		why = "too many CPUs or nodes";
	else if (u->mem_bytes > HB_USAGE_MAX_MEM)
		why = "more memory than 1 PiB";
	else if (u->ngpus > HB_USAGE_MAX_GPU_TYPES)
		why = "too many GPU types";
	for (uint32_t i = 0; !why && i < u->ngpus; i++)
		if (u->gpus[i].count > HB_USAGE_MAX_GPU)
			why = "too many GPUs of one type";
	if (why)
		return hb_err_set(err, HB_EINVAL, card->source_name, 0,
				  "usage: %s", why);
	return 0;
}

/* The entry for [start, end) at rates r: resource-seconds, then the
 * amount, rounded once. */
static int charge(const struct hb_usage *u, const struct hb_rate *r,
		  int64_t start, int64_t end, struct hb_charge *c)
{
	uint64_t s = (uint64_t)(end - start);
	unsigned __int128 num = 0;

	c->start = start;
	c->end = end;
	c->rate_class = r->name;
	c->account = u->account;
	c->side = u->side;
	c->cpu_s = (uint64_t)u->cpus * s;
	c->mem_mib_s = hb_bytes_to_mib(u->mem_bytes) * s;
	c->node_s = (uint64_t)u->nodes * s;
	c->node_charged = u->exclusive && r->has_exclusive;
	if (c->node_charged) {
		num += (unsigned __int128)c->node_s *
		       (uint64_t)r->exclusive_node_hour * 1024;
	} else {
		num += (unsigned __int128)c->cpu_s * (uint64_t)r->cpu_hour *
		       1024;
		num += (unsigned __int128)c->mem_mib_s *
		       (uint64_t)r->memory_gb_hour;
	}
	for (uint32_t i = 0; i < u->ngpus; i++) {
		c->gpu_s[i] = (uint64_t)u->gpus[i].count * s;
		num += (unsigned __int128)c->gpu_s[i] *
		       (uint64_t)hb_rate_gpu_hour(r, u->gpus[i].type) * 1024;
	}
	return hb_rate_round(num, HOUR_MIB, &c->amount);
}

int hb_rate_price(const struct hb_ratecard *card, const struct hb_usage *u,
		  struct hb_charge *out, uint32_t max, uint32_t *n,
		  struct hb_err *err)
{
	int i, rc;
	uint32_t k = 0;
	int64_t t = u->start;

	*n = 0;
	if ((rc = check_usage(card, u, err)))
		return rc;
	i = version_at(card, t);
	/* every period the job overlaps; a job of no time is one entry */
	do {
		const struct hb_rate *r;
		const struct hb_rate_version *v;
		int64_t end = u->end;

		if (i < 0)
			return hb_err_set(err, HB_ENOENT, card->source_name, 0,
					  "no version in force at %lld",
					  (long long)t);
		v = &card->versions[i];
		if ((uint32_t)i + 1 < card->nversions &&
		    card->versions[i + 1].effective < end)
			end = card->versions[i + 1].effective;
		if (k == max)
			return hb_err_set(err, HB_ETOOBIG, card->source_name, 0,
					  "more than %u rate periods", max);
		if ((rc = rates_at(card, u->side, u->rate_class, t, &r, NULL,
				   err)))
			return rc;
		memset(&out[k], 0, sizeof(out[k]));
		out[k].version = v->version;
		if ((rc = charge(u, r, t, end, &out[k])))
			return hb_err_set(err, rc, card->source_name, 0,
					  "amount too large");
		k++;
		*n = k;
		t = end;
		i++;
	} while (t < u->end);
	return 0;
}

int hb_rate_price_egress(const struct hb_ratecard *card, enum hb_rate_side side,
			 const char *cls, int64_t end, uint64_t bytes,
			 int64_t *amount, const char **version,
			 struct hb_err *err)
{
	const struct hb_rate *r;
	int rc = rates_at(card, side, cls, end, &r, version, err);

	if (rc)
		return rc;
	rc = hb_rate_round((unsigned __int128)bytes * (uint64_t)r->egress_gb,
			   GB, amount);
	return rc ? hb_err_set(err, rc, card->source_name, 0,
			       "amount too large")
		  : 0;
}

int hb_rate_price_storage(const struct hb_ratecard *card,
			  enum hb_rate_side side, const char *cls, int64_t at,
			  uint64_t bytes, uint64_t seconds, int64_t *amount,
			  const char **version, struct hb_err *err)
{
	const struct hb_rate *r;
	int rc;

	if (bytes > HB_USAGE_MAX_MEM || seconds > HB_USAGE_MAX_SECONDS)
		return hb_err_set(err, HB_EINVAL, card->source_name, 0,
				  "storage: too large");
	rc = rates_at(card, side, cls, at, &r, version, err);
	if (rc)
		return rc;
	/* bytes * s * rate <= 2^50 * 2^32 * 2^40: fits */
	rc = hb_rate_round((unsigned __int128)bytes * seconds *
				   (uint64_t)r->storage_gb_month,
			   GB * MONTH, amount);
	return rc ? hb_err_set(err, rc, card->source_name, 0,
			       "amount too large")
		  : 0;
}
