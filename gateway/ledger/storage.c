/*
 * storage.c - checkpoint storage metered (meter.h): the time between two
 * measurements of a location, at the bytes the first one found, priced
 * at storage_gb_month into ledger entries, written together with the
 * location's new meter in one store transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/ledger/meter_int.h"
#include "hpcbridge/meter.h"
#include "hpcbridge/store.h"

/* A meter as stored, its strings copied (the listing's are borrowed). */
struct held_meter {
	int found;
	struct hb_storage_meter m;
	char *s[5];
};

static int hold_meter(const struct hb_storage_meter *m, void *arg)
{
	struct held_meter *h = arg;
	const char *src[5] = { m->url, m->job_id, m->account, m->user,
			       m->queue };

	h->found = 1;
	h->m = *m;
	for (int i = 0; i < 5; i++)
		if (src[i] && !(h->s[i] = strdup(src[i])))
			return HB_ENOMEM;
	h->m.url = h->s[0];
	h->m.job_id = h->s[1];
	h->m.account = h->s[2];
	h->m.user = h->s[3];
	h->m.queue = h->s[4];
	return 0;
}

static void held_free(struct held_meter *h)
{
	for (int i = 0; i < 5; i++)
		free(h->s[i]);
}

/* One piece [t, stop) of h's bytes as entry x. */
static int piece(const struct hb_ratecard *card,
		 const struct hb_storage_meter *h, int64_t t, int64_t stop,
		 struct hb_ledger_entry *x, struct hb_err *err)
{
	const char *version = NULL;
	int64_t amount;
	int rc = hb_rate_price_storage(card, HB_RATE_KUBE, h->queue, t,
				       (uint64_t)h->bytes, (uint64_t)(stop - t),
				       &amount, &version, err);

	if (rc)
		return rc;
	memset(x, 0, sizeof(*x));
	x->job_id = h->job_id;
	x->part = HB_LEDGER_PART_STORAGE;
	x->side = HB_TARGET_KUBERNETES;
	x->account = h->account;
	x->user = h->user;
	x->queue = h->queue;
	x->rate_version = version;
	x->period_start_ms = t * 1000;
	x->period_end_ms = stop * 1000;
	/* <= 2^30 MiB x HB_USAGE_MAX_SECONDS: fits */
	rc = hb_rate_round((unsigned __int128)h->bytes * (uint64_t)(stop - t),
			   1u << 20, &x->storage_mib_s);
	x->amount_micros = amount;
	return rc;
}

/*
 * h's bytes over [from, to) (Unix seconds) as entries e (room for max),
 * cut at every rate change (and every HB_USAGE_MAX_SECONDS, the most
 * one price takes); *end is where the charged time ends (before to when
 * max entries were not enough).  Time no version prices is passed over.
 */
static int price(const struct hb_ratecard *card,
		 const struct hb_storage_meter *h, int64_t from, int64_t to,
		 struct hb_ledger_entry *e, uint32_t max, uint32_t *n,
		 int64_t *end, struct hb_meter_storage_result *r,
		 struct hb_err *err)
{
	const int64_t most = HB_USAGE_MAX_SECONDS;
	int64_t t = from;

	*n = 0;
	while (t < to && *n < max) {
		const struct hb_rate_version *v = hb_ratecard_at(card, t);
		int64_t stop = to;
		uint32_t i;
		int rc;

		if (!v) {
			/* before the first version: not charged */
			if (!card->nversions ||
			    card->versions[0].effective >= to)
				t = to;
			else
				t = card->versions[0].effective;
			continue;
		}
		i = (uint32_t)(v - card->versions);
		if (i + 1 < card->nversions &&
		    card->versions[i + 1].effective < stop)
			stop = card->versions[i + 1].effective;
		if (stop - t > most)
			stop = t + most;
		rc = piece(card, h, t, stop, &e[*n], err);
		if (rc == HB_ENOENT) {
			/* the version prices no Kubernetes: not charged */
			memset(err, 0, sizeof(*err));
			t = stop;
			continue;
		}
		if (rc)
			return rc;
		r->seconds += stop - t;
		r->amount_micros += e[*n].amount_micros;
		(*n)++;
		t = stop;
	}
	*end = t;
	return 0;
}

/* The period and the new state of h into e, *n and next. */
static int charge(const struct hb_ratecard *card,
		  const struct hb_meter_storage *m, const struct held_meter *h,
		  struct hb_ledger_entry *e, uint32_t *n,
		  struct hb_storage_meter *next,
		  struct hb_meter_storage_result *r, struct hb_err *err)
{
	int64_t now = m->now_ms / 1000;
	int64_t since = h->found ? h->m.since_ms / 1000 : now;
	/* a clock set back charges nothing and keeps the meter's instant */
	int64_t end = since > now ? since : now;
	int rc;

	*n = 0;
	if (h->found)
		*next = h->m;
	else
		*next = (struct hb_storage_meter){ .url = m->url };
	if (h->found && h->m.bytes > 0 && now > since) {
		rc = price(card, &h->m, since, now, e, HB_METER_MAX_ENTRIES, n,
			   &end, r, err);
		if (rc)
			return rc;
		r->more = end < now;
		r->bytes = h->m.bytes;
		snprintf(r->job_id, sizeof(r->job_id), "%s", h->m.job_id);
		if (h->m.account && strlen(h->m.account) < sizeof(r->account))
			snprintf(r->account, sizeof(r->account), "%s",
				 h->m.account);
	}
	/* with more to charge, the meter keeps its bytes and job for the
	 * rest: what this measurement found waits for the next one */
	if (!r->more) {
		if (m->job_id) {
			next->job_id = m->job_id;
			next->account = m->account;
			next->user = m->user;
			next->queue = m->queue;
		}
		next->bytes = (int64_t)m->bytes;
	}
	next->since_ms = end * 1000;
	return 0;
}

int hb_meter_storage(struct hb_store *st, const struct hb_ratecard *card,
		     const struct hb_meter_storage *m,
		     struct hb_meter_storage_result *res, struct hb_err *err)
{
	struct hb_ledger_entry e[HB_METER_MAX_ENTRIES];
	struct hb_meter_storage_result r = { 0 };
	struct hb_storage_meter next;
	struct held_meter h = { 0 };
	uint32_t n = 0;
	int own = 0, rc;

	if (!card || !m || !m->url || !*m->url)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "storage meter: %s: required",
				  !card ? "card" : "url");
	if (m->bytes > INT64_MAX || m->now_ms < 0)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: bytes or time out of range", m->url);
	if ((rc = hb_meter_txn_begin(st, &own, err)))
		return rc;
	rc = hb_store_storage_list(st, m->url, 0, hold_meter, &h, err);
	if (!rc && !h.found && !m->job_id)
		rc = hb_err_set(err, HB_EINVAL, NULL, 0,
				"%s: measured for the first time: job_id "
				"required",
				m->url);
	if (!rc && (rc = charge(card, m, &h, e, &n, &next, &r, err)))
		hb_meter_err_named(err, rc, m->url);
	if (!rc)
		rc = hb_store_storage_charge(st, &next, e, n, err);
	rc = hb_meter_txn_end(st, own, rc, err);
	r.entries = rc ? 0 : n;
	if (!rc && res)
		*res = r;
	held_free(&h);
	return rc;
}
