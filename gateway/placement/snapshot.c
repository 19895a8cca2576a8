/*
 * snapshot.c - the snapshot of the world a placement decision reads: the
 * Slurm queue per partition, free capacity per Kubernetes queue, data
 * sizes and spend.  The daemon keeps one warm with the setters; the CLI
 * reads one from a file (hb_snapshot_parse(), with docread.c) and can
 * write it back.
 *
 * Entries live in malloc'd arrays that grow by doubling; names live in
 * the snapshot's arena.  Lookups scan: a snapshot holds tens of entries,
 * and a scan of short names is cheaper than hashing them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "gateway/placement/docread.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/snapshot.h"
#include "hpcbridge/units.h"

void hb_snapshot_init(struct hb_snapshot *s, int64_t now)
{
	memset(s, 0, sizeof(*s));
	hb_arena_init(&s->arena, 16u * 1024 * 1024);
	s->now = now;
}

void hb_snapshot_free(struct hb_snapshot *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nqueues; i++)
		free(s->queues[i].free_gpus);
	free(s->parts);
	free(s->queues);
	free(s->data);
	free(s->spend);
	hb_arena_free(&s->arena);
	memset(s, 0, sizeof(*s));
}

/* Waits as a snapshot can write them back: 0 .. HB_DURATION_MAX. */
static int64_t clamp_wait(int64_t w)
{
	return w < 0 ? 0 : w > HB_DURATION_MAX ? HB_DURATION_MAX : w;
}

/* Room for one more element in *v (n used, *cap allocated). */
static int grow(void **v, uint32_t n, uint32_t *cap, size_t elem)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	if (n >= HB_POLICY_MAX_ITEMS)
		return HB_ETOOBIG;
	ncap = *cap ? *cap * 2 : 8;
	if (ncap > HB_POLICY_MAX_ITEMS)
		ncap = HB_POLICY_MAX_ITEMS;
	p = realloc(*v, (size_t)ncap * elem);
	if (!p)
		return HB_ENOMEM;
	memset((char *)p + (size_t)*cap * elem, 0,
	       (size_t)(ncap - *cap) * elem);
	*v = p;
	*cap = ncap;
	return 0;
}

const struct hb_snap_partition *
hb_snapshot_partition(const struct hb_snapshot *s, const char *name)
{
	if (!name)
		return NULL;
	for (uint32_t i = 0; i < s->nparts; i++)
		if (!strcmp(s->parts[i].name, name))
			return &s->parts[i];
	return NULL;
}

const struct hb_snap_queue *hb_snapshot_queue(const struct hb_snapshot *s,
					      const char *name)
{
	if (!name)
		return NULL;
	for (uint32_t i = 0; i < s->nqueues; i++)
		if (!strcmp(s->queues[i].name, name))
			return &s->queues[i];
	return NULL;
}

const struct hb_snap_data *hb_snapshot_data(const struct hb_snapshot *s,
					    const char *prefix)
{
	for (uint32_t i = 0; i < s->ndata; i++)
		if (!strcmp(s->data[i].prefix, prefix))
			return &s->data[i];
	return NULL;
}

const struct hb_snap_spend *hb_snapshot_spend(const struct hb_snapshot *s,
					      const char *account, int period)
{
	if (!account)
		return NULL;
	for (uint32_t i = 0; i < s->nspend; i++)
		if (s->spend[i].period == period &&
		    !strcmp(s->spend[i].account, account))
			return &s->spend[i];
	return NULL;
}

int hb_snapshot_set_partition(struct hb_snapshot *s, const char *name,
			      int64_t wait, uint32_t pending,
			      uint32_t idle_nodes)
{
	struct hb_snap_partition *p =
		(struct hb_snap_partition *)hb_snapshot_partition(s, name);
	int rc;

	if (!p) {
		if ((rc = grow((void **)&s->parts, s->nparts, &s->cap_parts,
			       sizeof(*s->parts))))
			return rc;
		p = &s->parts[s->nparts];
		p->name = hb_arena_strdup(&s->arena, name);
		if (!p->name)
			return HB_ENOMEM;
		s->nparts++;
	}
	p->wait = clamp_wait(wait);
	p->wait_known = true;
	p->pending = pending;
	p->idle_nodes = idle_nodes;
	p->idle_known = true;
	return 0;
}

int hb_snapshot_set_queue(struct hb_snapshot *s, const char *name, int64_t wait,
			  uint32_t pending, uint64_t free_cpus,
			  uint64_t free_mem_mb)
{
	struct hb_snap_queue *q =
		(struct hb_snap_queue *)hb_snapshot_queue(s, name);
	int rc;

	if (!q) {
		if ((rc = grow((void **)&s->queues, s->nqueues, &s->cap_queues,
			       sizeof(*s->queues))))
			return rc;
		q = &s->queues[s->nqueues];
		q->name = hb_arena_strdup(&s->arena, name);
		if (!q->name)
			return HB_ENOMEM;
		s->nqueues++;
	}
	q->wait = clamp_wait(wait);
	q->wait_known = true;
	q->pending = pending;
	q->free_known = true;
	q->free_cpus =
		free_cpus > HB_SNAP_MAX_CPUS ? HB_SNAP_MAX_CPUS : free_cpus;
	q->free_mem_mb = free_mem_mb > HB_SIZE_MAX / 1048576
				 ? HB_SIZE_MAX / 1048576
				 : free_mem_mb;
	return 0;
}

int hb_snapshot_set_queue_gpus(struct hb_snapshot *s, const char *queue,
			       const char *type, uint32_t count)
{
	struct hb_snap_queue *q =
		(struct hb_snap_queue *)hb_snapshot_queue(s, queue);
	struct hb_snap_gpus *g;
	char *t;
	int rc;

	if (!q) {
		if ((rc = hb_snapshot_set_queue(s, queue, 0, 0, 0, 0)))
			return rc;
		q = (struct hb_snap_queue *)hb_snapshot_queue(s, queue);
		q->wait_known = q->free_known = false;
	}
	if (count > HB_SNAP_MAX_GPUS)
		count = HB_SNAP_MAX_GPUS;
	for (uint32_t i = 0; i < q->nfree_gpus; i++)
		if (!strcasecmp(q->free_gpus[i].type, type)) {
			q->free_gpus[i].count = count;
			return 0;
		}
	if ((rc = grow((void **)&q->free_gpus, q->nfree_gpus, &q->cap_free_gpus,
		       sizeof(*q->free_gpus))))
		return rc;
	g = &q->free_gpus[q->nfree_gpus];
	t = hb_arena_strdup(&s->arena, type);
	if (!t)
		return HB_ENOMEM;
	for (char *c = t; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	g->type = t;
	g->count = count;
	q->nfree_gpus++;
	return 0;
}

int hb_snapshot_set_data(struct hb_snapshot *s, const char *prefix,
			 uint64_t size)
{
	struct hb_snap_data *d =
		(struct hb_snap_data *)hb_snapshot_data(s, prefix);
	int rc;

	if (!d) {
		if ((rc = grow((void **)&s->data, s->ndata, &s->cap_data,
			       sizeof(*s->data))))
			return rc;
		d = &s->data[s->ndata];
		d->prefix = hb_arena_strdup(&s->arena, prefix);
		if (!d->prefix)
			return HB_ENOMEM;
		s->ndata++;
	}
	d->size = size > HB_SIZE_MAX ? HB_SIZE_MAX : size;
	return 0;
}

static struct hb_snap_spend *
spend_entry(struct hb_snapshot *s, const char *account, int period, int *rc)
{
	struct hb_snap_spend *e =
		(struct hb_snap_spend *)hb_snapshot_spend(s, account, period);

	*rc = 0;
	if (e)
		return e;
	if (period < 0 || period >= HB__PERIOD_COUNT) {
		*rc = HB_EINVAL;
		return NULL;
	}
	if ((*rc = grow((void **)&s->spend, s->nspend, &s->cap_spend,
			sizeof(*s->spend))))
		return NULL;
	e = &s->spend[s->nspend];
	e->account = hb_arena_strdup(&s->arena, account);
	if (!e->account) {
		*rc = HB_ENOMEM;
		return NULL;
	}
	e->period = (uint8_t)period;
	s->nspend++;
	return e;
}

void hb_snapshot_clear_spend(struct hb_snapshot *s)
{
	for (uint32_t i = 0; i < s->nspend; i++)
		memset(s->spend[i].spent, 0, sizeof(s->spend[i].spent));
}

int hb_snapshot_set_spend(struct hb_snapshot *s, const char *account,
			  int period, int side, hb_money spent)
{
	struct hb_snap_spend *e;
	int rc;

	if (side < 0 || side >= HB__SIDE_COUNT || !account)
		return HB_EINVAL;
	e = spend_entry(s, account, period, &rc);
	if (!e)
		return rc;
	e->spent[side] = spent < 0		? 0
			 : spent > HB_MONEY_MAX ? HB_MONEY_MAX
						: spent;
	return 0;
}

int hb_snapshot_charge(struct hb_snapshot *s, const char *account, int period,
		       int side, hb_money amount)
{
	struct hb_snap_spend *e;
	int rc;

	if (side < 0 || side >= HB__SIDE_COUNT || !account)
		return HB_EINVAL;
	e = spend_entry(s, account, period, &rc);
	if (!e)
		return rc;
	if (amount > 0 && e->spent[side] > HB_MONEY_MAX - amount)
		e->spent[side] = HB_MONEY_MAX;
	else if (amount > 0)
		e->spent[side] += amount;
	else if (amount < 0)
		e->spent[side] = e->spent[side] < -amount
					 ? 0
					 : e->spent[side] + amount;
	return 0;
}

/* ---- writing ---------------------------------------------------------- */

/* Seconds as the shortest exact duration: "6h10m", "0s". */
static void exact_duration(int64_t v, char *buf, size_t size)
{
	static const struct {
		char c;
		int64_t n;
	} u[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < 4 && len < size; i++) {
		if (v < u[i].n)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%lld%c",
					(long long)(v / u[i].n), u[i].c);
		v %= u[i].n;
	}
	if (!len)
		snprintf(buf, size, "0s");
}

/* Bytes as the shortest exact size: "800G", "512Mi", "1234". */
static void exact_size(uint64_t v, char *buf, size_t size)
{
	static const char letters[] = "KMGTPE";
	int dec = 0, bin = 0;
	uint64_t d = v, b = v;

	while (v && dec < 6 && d % 1000 == 0) {
		d /= 1000;
		dec++;
	}
	while (v && bin < 6 && b % 1024 == 0) {
		b /= 1024;
		bin++;
	}
	if (!dec && !bin)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else if (dec >= bin)
		snprintf(buf, size, "%llu%c", (unsigned long long)d,
			 letters[dec - 1]);
	else
		snprintf(buf, size, "%llu%ci", (unsigned long long)b,
			 letters[bin - 1]);
}

/* Money as a decimal string with no trailing zeros: "120.5". */
static void exact_money(hb_money m, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%lld.%06lld",
			 (long long)(m / HB_MONEY_UNIT),
			 (long long)(m % HB_MONEY_UNIT));

	while (n > 0 && (size_t)n < size && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && (size_t)n < size && buf[n - 1] == '.')
		buf[--n] = '\0';
}

static bool add_str(cJSON *o, const char *k, const char *v)
{
	return cJSON_AddStringToObject(o, k, v) != NULL;
}

static bool add_num(cJSON *o, const char *k, double v)
{
	return cJSON_AddNumberToObject(o, k, v) != NULL;
}

static bool write_slurm(const struct hb_snapshot *s, cJSON *doc)
{
	cJSON *parts, *sl;
	char b[64];

	if (!s->nparts)
		return true;
	sl = cJSON_AddObjectToObject(doc, "slurm");
	parts = sl ? cJSON_AddObjectToObject(sl, "partitions") : NULL;
	if (!parts)
		return false;
	for (uint32_t i = 0; i < s->nparts; i++) {
		const struct hb_snap_partition *p = &s->parts[i];
		cJSON *o = cJSON_AddObjectToObject(parts, p->name);

		if (!o)
			return false;
		exact_duration(p->wait, b, sizeof(b));
		if ((p->wait_known && !add_str(o, "expected_start", b)) ||
		    !add_num(o, "pending", p->pending) ||
		    (p->idle_known && !add_num(o, "idle_nodes", p->idle_nodes)))
			return false;
	}
	return true;
}

static bool write_kube(const struct hb_snapshot *s, cJSON *doc)
{
	cJSON *qs, *k;
	char b[64];

	if (!s->nqueues)
		return true;
	k = cJSON_AddObjectToObject(doc, "kubernetes");
	qs = k ? cJSON_AddObjectToObject(k, "queues") : NULL;
	if (!qs)
		return false;
	for (uint32_t i = 0; i < s->nqueues; i++) {
		const struct hb_snap_queue *q = &s->queues[i];
		cJSON *o = cJSON_AddObjectToObject(qs, q->name), *f, *g;

		if (!o)
			return false;
		exact_duration(q->wait, b, sizeof(b));
		if ((q->wait_known && !add_str(o, "expected_wait", b)) ||
		    !add_num(o, "pending", q->pending))
			return false;
		if (!q->free_known && !q->nfree_gpus)
			continue;
		f = cJSON_AddObjectToObject(o, "free");
		if (!f)
			return false;
		exact_size(q->free_mem_mb * 1048576, b, sizeof(b));
		if (q->free_known &&
		    (!add_num(f, "cpus", (double)q->free_cpus) ||
		     !add_str(f, "memory", b)))
			return false;
		if (!q->nfree_gpus)
			continue;
		g = cJSON_AddObjectToObject(f, "gpus");
		if (!g)
			return false;
		for (uint32_t j = 0; j < q->nfree_gpus; j++)
			if (!add_num(g, q->free_gpus[j].type,
				     q->free_gpus[j].count))
				return false;
	}
	return true;
}

static bool write_spend(const struct hb_snapshot *s, cJSON *doc)
{
	cJSON *sp;
	char b[64];

	if (!s->nspend)
		return true;
	sp = cJSON_AddObjectToObject(doc, "spend");
	if (!sp)
		return false;
	for (uint32_t i = 0; i < s->nspend; i++) {
		const struct hb_snap_spend *e = &s->spend[i];
		cJSON *a = cJSON_GetObjectItemCaseSensitive(sp, e->account), *p;

		if (!a)
			a = cJSON_AddObjectToObject(sp, e->account);
		p = a ? cJSON_AddObjectToObject(a, hb_period_name(e->period))
		      : NULL;
		if (!p)
			return false;
		for (int side = 0; side < HB__SIDE_COUNT; side++) {
			exact_money(e->spent[side], b, sizeof(b));
			if (!add_str(p, hb_side_name(side), b))
				return false;
		}
	}
	return true;
}

cJSON *hb_snapshot_to_json(const struct hb_snapshot *s)
{
	cJSON *doc = cJSON_CreateObject(), *d;
	char b[64];

	if (!doc)
		return NULL;
	hb_format_instant(s->now, b, sizeof(b));
	if (!add_str(doc, "now", b))
		goto fail;
	if (s->utc_offset) {
		int32_t o = s->utc_offset < 0 ? -s->utc_offset : s->utc_offset;

		snprintf(b, sizeof(b), "%c%02d:%02d",
			 s->utc_offset < 0 ? '-' : '+', o / 3600, o / 60 % 60);
		if (!add_str(doc, "utc_offset", b))
			goto fail;
	}
	if (!write_slurm(s, doc) || !write_kube(s, doc))
		goto fail;
	if (s->ndata) {
		d = cJSON_AddObjectToObject(doc, "data");
		if (!d)
			goto fail;
		for (uint32_t i = 0; i < s->ndata; i++) {
			exact_size(s->data[i].size, b, sizeof(b));
			if (!add_str(d, s->data[i].prefix, b))
				goto fail;
		}
	}
	if (!write_spend(s, doc))
		goto fail;
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

/* ---- reading ---------------------------------------------------------- */

static const char *const snap_keys[] = { "now",	       "utc_offset", "slurm",
					 "kubernetes", "data",	     "spend",
					 NULL };
static const char *const snap_slurm_keys[] = { "partitions", NULL };
static const char *const snap_part_keys[] = { "expected_start", "pending",
					      "idle_nodes", NULL };
static const char *const snap_kube_keys[] = { "queues", NULL };
static const char *const snap_queue_keys[] = { "expected_wait", "pending",
					       "free", NULL };
static const char *const snap_free_keys[] = { "cpus", "memory", "gpus", NULL };
static const char *const snap_side_keys[] = { "slurm", "kubernetes", NULL };

/* An instant: a string like 2026-11-21T08:00:00Z or Unix seconds. */
static int get_instant(struct hb_rd *r, const cJSON *it, const char *path,
		       int64_t *out)
{
	char b[64];
	const char *t = hb_rd_scalar(it, b, sizeof(b));
	uint64_t v;

	int64_t x;

	if (t && cJSON_IsNumber(it) &&
	    !hb_parse_u64(t, (uint64_t)HB_INSTANT_MAX, &v)) {
		*out = (int64_t)v;
		return 0;
	}
	if (t && cJSON_IsString(it) && !hb_parse_instant(t, &x) && x >= 0 &&
	    x <= HB_INSTANT_MAX) {
		*out = x;
		return 0;
	}
	return hb_rd_fail(
		r, it, path,
		"expected an instant like 2026-11-21T08:00:00Z or Unix "
		"seconds, from 1970 to 9999");
}

static int snap_entries(struct hb_rd *r, const cJSON *obj, const char *path)
{
	int rc = hb_rd_mapping(r, obj, path, NULL);

	if (!rc && cJSON_GetArraySize(obj) > HB_POLICY_MAX_ITEMS)
		return hb_rd_fail(r, obj, path, "more than %d entries",
				  HB_POLICY_MAX_ITEMS);
	return rc;
}

static int snap_enomem(struct hb_rd *r, int rc, const cJSON *at,
		       const char *path)
{
	if (rc == HB_ETOOBIG)
		return hb_rd_fail(r, at, path, "too many entries");
	if (rc)
		hb_err_set(r->err, rc, r->file, 0, "%s", hb_strerror(rc));
	return rc;
}

static int read_snap_slurm(struct hb_rd *r, const cJSON *sl,
			   struct hb_snapshot *s)
{
	const cJSON *parts, *e;
	char pp[HB_RD_PATH_MAX], pk[HB_RD_PATH_MAX];
	int rc;

	if ((rc = hb_rd_mapping(r, sl, "slurm", snap_slurm_keys)))
		return rc;
	parts = hb_rd_member(sl, "partitions");
	if (!parts)
		return 0;
	if ((rc = snap_entries(r, parts, "slurm.partitions")))
		return rc;
	cJSON_ArrayForEach (e, parts) {
		struct hb_snap_partition *sp;
		const cJSON *es;
		uint32_t pending = 0, idle = 0;
		int64_t wait = 0;

		hb_rd_join(pp, "slurm.partitions", e->string);
		if (!hb_rd_name_ok(e->string))
			return hb_rd_fail(r, e, pp, "not a partition name");
		if ((rc = hb_rd_mapping(r, e, pp, snap_part_keys)) ||
		    (rc = hb_rd_get_u32(r, e, pp, "pending", UINT32_MAX,
					&pending)) ||
		    (rc = hb_rd_get_u32(r, e, pp, "idle_nodes", UINT32_MAX,
					&idle)))
			return rc;
		es = hb_rd_member(e, "expected_start");
		if (es && cJSON_IsString(es) && strlen(es->valuestring) > 4 &&
		    es->valuestring[4] == '-') {
			int64_t t;

			if ((rc = get_instant(
				     r, es,
				     hb_rd_join(pk, pp, "expected_start"), &t)))
				return rc;
			wait = t > s->now ? t - s->now : 0;
			if (wait > HB_DURATION_MAX)
				return hb_rd_fail(
					r, es, pk,
					"more than 100 years from now");
		} else if (es && (rc = hb_rd_get_duration(
					  r, e, pp, "expected_start", &wait))) {
			return rc;
		}
		rc = hb_snapshot_set_partition(s, e->string, wait, pending,
					       idle);
		if (rc)
			return snap_enomem(r, rc, e, pp);
		sp = (struct hb_snap_partition *)hb_snapshot_partition(
			s, e->string);
		sp->wait_known = es != NULL;
		sp->idle_known = hb_rd_member(e, "idle_nodes") != NULL;
	}
	return 0;
}

static int read_snap_kube(struct hb_rd *r, const cJSON *k,
			  struct hb_snapshot *s)
{
	const cJSON *qs, *e, *f, *g, *ge;
	char pq[HB_RD_PATH_MAX], pf[HB_RD_PATH_MAX], pg[HB_RD_PATH_MAX],
		pe[HB_RD_PATH_MAX];
	int rc;

	if ((rc = hb_rd_mapping(r, k, "kubernetes", snap_kube_keys)))
		return rc;
	qs = hb_rd_member(k, "queues");
	if (!qs)
		return 0;
	if ((rc = snap_entries(r, qs, "kubernetes.queues")))
		return rc;
	cJSON_ArrayForEach (e, qs) {
		struct hb_snap_queue *sq;
		uint32_t pending = 0;
		uint64_t cpus = 0, mem = 0;
		int64_t wait = 0;

		hb_rd_join(pq, "kubernetes.queues", e->string);
		if (!hb_rd_name_ok(e->string))
			return hb_rd_fail(r, e, pq, "not a queue name");
		if ((rc = hb_rd_mapping(r, e, pq, snap_queue_keys)) ||
		    (rc = hb_rd_get_u32(r, e, pq, "pending", UINT32_MAX,
					&pending)) ||
		    (rc = hb_rd_get_duration(r, e, pq, "expected_wait", &wait)))
			return rc;
		f = hb_rd_member(e, "free");
		hb_rd_join(pf, pq, "free");
		if (f && ((rc = hb_rd_mapping(r, f, pf, snap_free_keys)) ||
			  (rc = hb_rd_get_uint(r, f, pf, "cpus", 1ULL << 40,
					       &cpus)) ||
			  (rc = hb_rd_get_mem_mb(r, f, pf, "memory", &mem))))
			return rc;
		rc = hb_snapshot_set_queue(s, e->string, wait, pending, cpus,
					   mem);
		if (rc)
			return snap_enomem(r, rc, e, pq);
		sq = (struct hb_snap_queue *)hb_snapshot_queue(s, e->string);
		sq->wait_known = hb_rd_member(e, "expected_wait") != NULL;
		sq->free_known = f && (hb_rd_member(f, "cpus") ||
				       hb_rd_member(f, "memory"));
		g = f ? hb_rd_member(f, "gpus") : NULL;
		if (!g)
			continue;
		hb_rd_join(pg, pf, "gpus");
		if ((rc = snap_entries(r, g, pg)))
			return rc;
		cJSON_ArrayForEach (ge, g) {
			const char *type;
			uint32_t n = 0;

			hb_rd_join(pe, pg, ge->string);
			if ((rc = hb_rd_gpu_name(r, ge, pe, ge->string,
						 &type)) ||
			    (rc = hb_rd_get_u32(r, g, pg, ge->string, 1000000,
						&n)))
				return rc;
			rc = hb_snapshot_set_queue_gpus(s, e->string, type, n);
			if (rc)
				return snap_enomem(r, rc, ge, pe);
		}
	}
	return 0;
}

static int read_snap_spend(struct hb_rd *r, const cJSON *sp,
			   struct hb_snapshot *s)
{
	const cJSON *a, *p;
	char pa[HB_RD_PATH_MAX], pp[HB_RD_PATH_MAX];
	int rc;

	if ((rc = snap_entries(r, sp, "spend")))
		return rc;
	cJSON_ArrayForEach (a, sp) {
		hb_rd_join(pa, "spend", a->string);
		if (!hb_rd_name_ok(a->string))
			return hb_rd_fail(r, a, pa, "not an account name");
		if ((rc = hb_rd_mapping(r, a, pa, hb_period_names)))
			return rc;
		cJSON_ArrayForEach (p, a) {
			int period;

			for (period = 0; period < HB__PERIOD_COUNT; period++)
				if (!strcmp(p->string, hb_period_names[period]))
					break;
			hb_rd_join(pp, pa, p->string);
			if ((rc = hb_rd_mapping(r, p, pp, snap_side_keys)))
				return rc;
			for (int side = 0; side < HB__SIDE_COUNT; side++) {
				hb_money m = 0;

				if ((rc = hb_rd_get_money(
					     r, p, pp, hb_side_name(side), &m)))
					return rc;
				rc = hb_snapshot_set_spend(s, a->string, period,
							   side, m);
				if (rc)
					return snap_enomem(r, rc, p, pp);
			}
		}
	}
	return 0;
}

static int read_snapshot(struct hb_rd *r, const cJSON *doc,
			 struct hb_snapshot *s)
{
	const cJSON *it, *e;
	char pe[HB_RD_PATH_MAX];
	int rc;

	if (cJSON_IsNull(doc))
		return hb_rd_fail(r, doc, "", "the snapshot is empty");
	if ((rc = hb_rd_mapping(r, doc, "", snap_keys)))
		return rc;
	it = hb_rd_member(doc, "now");
	if (!it)
		return hb_rd_fail(r, doc, "now",
				  "is required: every estimate is "
				  "counted from it");
	if ((rc = get_instant(r, it, "now", &s->now)))
		return rc;
	it = hb_rd_member(doc, "utc_offset");
	if (it && (!cJSON_IsString(it) ||
		   hb_parse_utc_offset(it->valuestring, &s->utc_offset)))
		return hb_rd_fail(r, it, "utc_offset",
				  "expected an offset like +01:00 or Z");
	it = hb_rd_member(doc, "slurm");
	if (it && (rc = read_snap_slurm(r, it, s)))
		return rc;
	it = hb_rd_member(doc, "kubernetes");
	if (it && (rc = read_snap_kube(r, it, s)))
		return rc;
	it = hb_rd_member(doc, "data");
	if (it && (rc = snap_entries(r, it, "data")))
		return rc;
	cJSON_ArrayForEach (e, it) {
		uint64_t size = 0;

		hb_rd_join(pe, "data", e->string);
		if (!*e->string || strlen(e->string) > 1024)
			return hb_rd_fail(r, e, pe, "not a data prefix");
		if ((rc = hb_rd_get_size(r, it, "data", e->string, &size)))
			return rc;
		rc = hb_snapshot_set_data(s, e->string, size);
		if (rc)
			return snap_enomem(r, rc, e, pe);
	}
	it = hb_rd_member(doc, "spend");
	if (it && (rc = read_snap_spend(r, it, s)))
		return rc;
	return 0;
}

int hb_snapshot_parse(const char *buf, size_t len, const char *name,
		      struct hb_snapshot *s, struct hb_err *err)
{
	struct hb_rd r = { .file = name, .err = err, .a = &s->arena };
	cJSON *doc = NULL;
	int rc;

	hb_snapshot_init(s, 0);
	rc = hb_doc_parse(buf, len, name, &doc, err);
	if (rc)
		goto out;
	s->source_name = hb_arena_strdup(&s->arena, name ? name : "-");
	if (!s->source_name) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = read_snapshot(&r, doc, s);
out:
	cJSON_Delete(doc);
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, name, 0, "out of memory");
		hb_snapshot_free(s);
	}
	return rc;
}
