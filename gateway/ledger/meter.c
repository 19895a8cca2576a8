/*
 * meter.c - metering a finished job: its usage on its side, priced with
 * the rate card, made its ledger entries (reversing what they replace).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/jobspec.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/meter.h"
#include "hpcbridge/store.h"
#include "gateway/ledger/meter_int.h"

#define MIB (1024ULL * 1024)

/* ------------------------------------------------------------------ */
/* Kubernetes: pods x requests                                        */
/* ------------------------------------------------------------------ */

int hb_meter_kube_usage(const struct hb_jobspec *spec,
			const struct hb_k8s_opts *k8s, int64_t start_ms,
			int64_t end_ms, const struct hb_usage *measured,
			struct hb_usage *u, struct hb_err *err)
{
	struct hb_shape sh;
	uint64_t mem_mb, cpus, gpus, mem;

	memset(u, 0, sizeof(*u));
	if (start_ms < 0 || end_ms < start_ms)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "the job's times: start %lld ms, end %lld ms",
				  (long long)start_ms, (long long)end_ms);
	if (hb_jobspec_shape(spec, &sh))
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "the job's shape overflows");
	mem_mb = sh.mem_per_node_mb;
	if (sh.whole_node_mem && k8s->worker_mem_mb)
		mem_mb = k8s->worker_mem_mb;
	cpus = (uint64_t)sh.nodes * sh.cpus_per_node + k8s->launcher_cpus;
	gpus = (uint64_t)sh.nodes * sh.gpus_per_node;
	mem = ((uint64_t)sh.nodes * mem_mb + k8s->launcher_mem_mb) * MIB;
	if (measured) {
		uint64_t mg = 0;

		for (uint32_t i = 0; i < measured->ngpus; i++)
			mg += measured->gpus[i].count;
		if (measured->cpus > cpus)
			cpus = measured->cpus;
		if (measured->mem_bytes > mem)
			mem = measured->mem_bytes;
		if (mg > gpus)
			gpus = mg;
	}
	if (cpus > HB_USAGE_MAX_CPUS || gpus > HB_USAGE_MAX_GPU ||
	    mem > HB_USAGE_MAX_MEM)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "the job's pods request more than a ledger "
				  "entry can hold (%llu CPUs, %llu bytes, %llu "
				  "GPUs)",
				  (unsigned long long)cpus,
				  (unsigned long long)mem,
				  (unsigned long long)gpus);
	u->side = HB_RATE_KUBE;
	u->start = start_ms / 1000;
	u->end = end_ms / 1000 + (end_ms % 1000 != 0);
	u->cpus = (uint32_t)cpus;
	u->mem_bytes = mem;
	u->nodes = sh.nodes + 1; /* the pods: workers and the launcher */
	if (gpus) {
		u->gpus[0].type = spec->gpu_type;
		u->gpus[0].count = (uint32_t)gpus;
		u->ngpus = 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Usage into ledger entries                                          */
/* ------------------------------------------------------------------ */

/* The entries of j priced with card, into e (HB_METER_MAX_ENTRIES);
 * strings borrowed from j and card. */
static int entries_of(const struct hb_ratecard *card,
		      const struct hb_meter_job *j, struct hb_ledger_entry *e,
		      uint32_t *n, struct hb_err *err)
{
	struct hb_charge ch[HB_METER_MAX_ENTRIES];
	struct hb_usage u = j->usage;
	enum hb_job_target side = u.side == HB_RATE_SLURM
					  ? HB_TARGET_SLURM
					  : HB_TARGET_KUBERNETES;
	int rc;

	*n = 0;
	u.rate_class = u.side == HB_RATE_SLURM ? j->partition : j->queue;
	u.account = j->account;
	if (u.end < u.start)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "it ended (%lld) before it started (%lld)",
				  (long long)u.end, (long long)u.start);
	if (u.end == u.start) {
		/* it ran, for less than its side's clock can tell: one entry
		 * of nothing, so that it counts as a job */
		const struct hb_rate_version *v = hb_ratecard_at(card, u.start);

		if (!v)
			return hb_err_set(err, HB_ENOENT, NULL, 0,
					  "no rate version in force at %lld",
					  (long long)u.start);
		memset(ch, 0, sizeof(ch[0]));
		ch[0].version = v->version;
		ch[0].start = ch[0].end = u.start;
		*n = 1;
	} else if ((rc = hb_rate_price(card, &u, ch, HB_METER_MAX_ENTRIES, n,
				       err))) {
		return rc;
	}
	for (uint32_t i = 0; i < *n; i++) {
		struct hb_ledger_entry *x = &e[i];

		memset(x, 0, sizeof(*x));
		if (ch[i].cpu_s > INT64_MAX / 1000 ||
		    ch[i].mem_mib_s > INT64_MAX || ch[i].node_s > INT64_MAX)
			return hb_err_set(err, HB_ERANGE, NULL, 0,
					  "resource-seconds overflow");
		x->job_id = j->job_id;
		x->part = j->part;
		x->side = side;
		x->account = j->account;
		x->user = j->user;
		x->partition = j->partition;
		x->queue = u.side == HB_RATE_KUBE ? j->queue : NULL;
		x->rate_version = ch[i].version;
		x->period_start_ms = ch[i].start * 1000;
		x->period_end_ms = ch[i].end * 1000;
		x->cpu_mcore_s = (int64_t)ch[i].cpu_s * 1000;
		x->mem_mib_s = (int64_t)ch[i].mem_mib_s;
		x->node_s = (int64_t)ch[i].node_s;
		x->amount_micros = ch[i].amount;
		for (uint32_t g = 0; g < u.ngpus && g < HB_LEDGER_GPU_TYPES;
		     g++) {
			if (!u.gpus[g].count)
				continue;
			x->gpu[x->n_gpu].type = u.gpus[g].type
							? u.gpus[g].type
							: HB_METER_GPU_UNTYPED;
			x->gpu[x->n_gpu].seconds = (int64_t)ch[i].gpu_s[g];
			x->n_gpu++;
		}
	}
	if (u.egress_bytes && *n) {
		struct hb_ledger_entry *last = &e[*n - 1];
		int64_t amount;

		if ((rc = hb_rate_price_egress(card, u.side, u.rate_class,
					       u.end, u.egress_bytes, &amount,
					       NULL, err)))
			return rc;
		if (u.egress_bytes > INT64_MAX ||
		    amount > INT64_MAX - last->amount_micros)
			return hb_err_set(err, HB_ERANGE, NULL, 0,
					  "egress: amount overflows");
		last->egress_bytes = (int64_t)u.egress_bytes;
		last->amount_micros += amount;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The job's current entries                                          */
/* ------------------------------------------------------------------ */

/* An entry as listed, with its strings copied. */
struct held {
	int64_t id, reverses;
	struct hb_ledger_entry e;
	char *str[7]; /* account, user, partition, queue, version, part */
	char *gtype[HB_LEDGER_GPU_TYPES];
};

struct current {
	struct held *v;
	size_t n, cap;
	int rc;
};

static char *dup_or_null(const char *s, int *rc)
{
	char *d;

	if (!s)
		return NULL;
	if (!(d = strdup(s)))
		*rc = HB_ENOMEM;
	return d;
}

static int hold(const struct hb_ledger_entry *e, void *arg)
{
	struct current *c = arg;
	struct held *h;
	int rc = 0;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct held *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	h = &c->v[c->n++];
	memset(h, 0, sizeof(*h));
	h->id = e->id;
	h->reverses = e->reverses;
	h->e = *e;
	h->e.account = h->str[0] = dup_or_null(e->account, &rc);
	h->e.user = h->str[1] = dup_or_null(e->user, &rc);
	h->e.partition = h->str[2] = dup_or_null(e->partition, &rc);
	h->e.queue = h->str[3] = dup_or_null(e->queue, &rc);
	h->e.rate_version = h->str[4] = dup_or_null(e->rate_version, &rc);
	h->e.part = h->str[5] = dup_or_null(e->part, &rc);
	h->e.job_id = NULL;
	for (int g = 0; g < e->n_gpu; g++)
		h->e.gpu[g].type = h->gtype[g] =
			dup_or_null(e->gpu[g].type, &rc);
	return rc;
}

static void current_free(struct current *c)
{
	for (size_t i = 0; i < c->n; i++) {
		for (int k = 0; k < 7; k++)
			free(c->v[i].str[k]);
		for (int g = 0; g < HB_LEDGER_GPU_TYPES; g++)
			free(c->v[i].gtype[g]);
	}
	free(c->v);
}

/* Strings equal, NULL equal to NULL only. */
static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int same_entry(const struct hb_ledger_entry *a,
		      const struct hb_ledger_entry *b)
{
	if (a->side != b->side || a->period_start_ms != b->period_start_ms ||
	    a->period_end_ms != b->period_end_ms ||
	    a->cpu_mcore_s != b->cpu_mcore_s || a->mem_mib_s != b->mem_mib_s ||
	    a->node_s != b->node_s || a->egress_bytes != b->egress_bytes ||
	    a->amount_micros != b->amount_micros || a->n_gpu != b->n_gpu ||
	    !same_str(a->part, b->part) ||
	    !same_str(a->account, b->account) || !same_str(a->user, b->user) ||
	    !same_str(a->partition, b->partition) ||
	    !same_str(a->queue, b->queue) ||
	    !same_str(a->rate_version, b->rate_version))
		return 0;
	for (int g = 0; g < a->n_gpu; g++) {
		int found = 0;

		for (int h = 0; h < b->n_gpu && !found; h++)
			found = !strcmp(a->gpu[g].type, b->gpu[h].type) &&
				a->gpu[g].seconds == b->gpu[h].seconds;
		if (!found)
			return 0;
	}
	return 1;
}

/* Mark in live[] the entries of c of part no later entry reverses; *amount
 * gets what they charge. */
static size_t live_of(const struct current *c, const char *part, int *live,
		      int64_t *amount)
{
	size_t n = 0;

	*amount = 0;
	for (size_t i = 0; i < c->n; i++) {
		live[i] = !c->v[i].reverses && same_str(c->v[i].e.part, part);
		for (size_t k = 0; k < c->n && live[i]; k++)
			if (c->v[k].reverses == c->v[i].id)
				live[i] = 0;
		n += (size_t)live[i];
		if (live[i])
			*amount += c->v[i].e.amount_micros;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* Recording                                                          */
/* ------------------------------------------------------------------ */

int hb_meter_txn_begin(struct hb_store *st, int *own, struct hb_err *err)
{
	int rc = hb_store_begin(st, err);

	*own = !rc;
	if (rc == HB_ESTATE) { /* the caller's transaction */
		memset(err, 0, sizeof(*err));
		rc = 0;
	}
	return rc;
}

int hb_meter_txn_end(struct hb_store *st, int own, int rc, struct hb_err *err)
{
	if (own && !rc)
		return hb_store_commit(st, err);
	if (own)
		hb_store_rollback(st);
	return rc;
}

int hb_meter_err_named(struct hb_err *err, int rc, const char *what)
{
	char why[sizeof(err->msg)];

	snprintf(why, sizeof(why), "%s",
		 err->msg[0] ? err->msg : hb_strerror(rc));
	memset(err, 0, sizeof(*err));
	return hb_err_set(err, rc, NULL, 0, "%s: %s", what, why);
}

/* Reverse the live entries of c and append e[0..n); the caller holds a
 * transaction. */
static int replace(struct hb_store *st, const struct current *c,
		   const int *live, struct hb_ledger_entry *e, uint32_t n,
		   struct hb_meter_result *res, struct hb_err *err)
{
	int rc;

	for (size_t i = 0; i < c->n; i++) {
		if (!live[i])
			continue;
		if ((rc = hb_store_ledger_reverse(st, c->v[i].id, NULL, err)))
			return rc;
		res->reversed++;
	}
	return n ? hb_store_ledger_append(st, e, n, err) : 0;
}

int hb_meter_record(struct hb_store *st, const struct hb_ratecard *card,
		    const struct hb_meter_job *j, struct hb_meter_result *res,
		    struct hb_err *err)
{
	struct hb_ledger_entry e[HB_METER_MAX_ENTRIES];
	struct current cur = { 0 };
	struct hb_meter_result r = { 0 };
	int *live = NULL, own = 0, rc;
	uint32_t n = 0;
	size_t nlive, k = 0;

	if (!j->job_id)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "job_id: required");
	if ((rc = entries_of(card, j, e, &n, err)))
		return hb_meter_err_named(err, rc, j->job_id);
	for (uint32_t i = 0; i < n; i++) {
		r.amount_micros += e[i].amount_micros;
		r.rate_version = e[i].rate_version;
	}
	r.entries = n;
	rc = hb_store_ledger_list(st, j->job_id, hold, &cur, err);
	if (!rc && cur.n && !(live = calloc(cur.n, sizeof(*live))))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if (rc)
		goto out;
	nlive = cur.n ? live_of(&cur, j->part, live, &r.replaced_micros) : 0;
	/* the same entries, in the same order: nothing to write */
	if (nlive == n) {
		for (size_t i = 0; i < cur.n && k < n; i++)
			if (live[i] && same_entry(&cur.v[i].e, &e[k]))
				k++;
		if (k == n)
			goto out;
	}
	if ((rc = hb_meter_txn_begin(st, &own, err)))
		goto out;
	rc = replace(st, &cur, live, e, n, &r, err);
	rc = hb_meter_txn_end(st, own, rc, err);
	r.written = !rc;
out:
	free(live);
	current_free(&cur);
	if (!rc && res)
		*res = r;
	return rc;
}
