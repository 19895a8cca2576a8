/*
 * decider.c - the daemon's placement: policy, warm snapshot, and one
 * engine decision per job.  See decider.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "decider.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/file.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/store.h"
#include "hpcbridge/translate.h"

/* Largest policy file read. */
#define POLICY_MAX (4u * 1024 * 1024)
/* Most partitions a refresh looks at. */
#define MAX_PARTS 256
/* The name of a policy made from the configuration. */
#define BUILT_IN "placement.partitions"

/* A partition the last refresh reported: its entry in the snapshot, and
 * the instant its probe would start, so that each decision sees what is
 * left of the wait. */
struct part_seen {
	size_t idx;    /* in snap.parts (entries are never removed) */
	int64_t start; /* Unix seconds */
};

struct hb_decider {
	struct hb_policy pol;
	char *policy_name;
	struct hb_buf policy_text; /* what pol was read from */
	struct hb_snapshot snap;
	struct part_seen *seen;
	size_t nseen;
	/* the partitions a refresh asks about (names owned here) */
	char *parts[MAX_PARTS];
	size_t nparts;
	/* the data locations to measure (borrowed from pol) */
	const char **data;
	size_t ndata;
	int64_t spend_day; /* the day the spend was last loaded for */
	/* why Kueue gave no wait (hb_kcap.queue_note), said in every
	 * explanation while it lasts; "" when it did */
	char kube_note[256];
};

/* ---------------------------------------------------------- policy */

static int add_rule(cJSON *rules, const char *partition, const char *target)
{
	char name[160];
	cJSON *r = cJSON_CreateObject();

	snprintf(name, sizeof(name), BUILT_IN "[%s]", partition);
	if (!r || !cJSON_AddItemToArray(rules, r)) {
		cJSON_Delete(r);
		return HB_ENOMEM;
	}
	return cJSON_AddStringToObject(r, "name", name) &&
			       cJSON_AddStringToObject(r, "partition",
						       partition) &&
			       cJSON_AddStringToObject(r, "prefer", target)
		       ? 0
		       : HB_ENOMEM;
}

/*
 * The policy the simple settings mean: a rule per mapped partition that
 * prefers its side, defaults that prefer placement.default_target, no
 * costs and no capacity limits (any GPU type, MIG profile, shards and
 * RDMA on Kubernetes too), --hpcbridge-target obeyed.
 */
static int built_in(const struct hb_config *cfg, struct hb_buf *out)
{
	cJSON *p = cJSON_CreateObject(), *defs, *k, *rules;
	int rc = HB_ENOMEM;

	if (!p || !cJSON_AddNumberToObject(p, "version", 1) ||
	    !(defs = cJSON_AddObjectToObject(p, "defaults")) ||
	    !cJSON_AddStringToObject(defs, "prefer", cfg->default_target) ||
	    !(k = cJSON_AddObjectToObject(p, "kubernetes")) ||
	    !cJSON_AddStringToObject(k, "namespace",
				     cfg->k8s.namespace ? cfg->k8s.namespace
						    : "default") ||
	    !cJSON_AddStringToObject(k, "gpu_types", HB_GPU_ANY) ||
	    !cJSON_AddStringToObject(k, "mig", HB_GPU_ANY) ||
	    !cJSON_AddTrueToObject(k, "shards") ||
	    !cJSON_AddTrueToObject(k, "rdma") ||
	    !(rules = cJSON_AddArrayToObject(p, "rules")))
		goto out;
	for (uint32_t i = 0; i < cfg->nplacement_partitions; i++)
		if (add_rule(rules, cfg->placement_partitions[i].key,
			     cfg->placement_partitions[i].value))
			goto out;
	rc = hb_doc_write_json(p, out);
out:
	cJSON_Delete(p);
	return rc;
}

static int load_policy(const struct hb_config *cfg, struct hb_policy *pol,
		       char **name, struct hb_buf *text, struct hb_err *err)
{
	const char *path = cfg->placement_policy;
	int rc;

	hb_buf_init(text, POLICY_MAX);
	if (path)
		rc = hb_file_read(path, POLICY_MAX, "placement.policy", text,
				  err);
	else if ((rc = built_in(cfg, text)))
		hb_err_set(err, rc, NULL, 0, "placement: %s",
			   hb_strerror(rc));
	if (!rc)
		rc = hb_policy_parse(text->data, text->len,
				     path ? path : BUILT_IN, pol, err);
	if (!rc && !(*name = strdup(path ? path : BUILT_IN))) {
		hb_policy_free(pol);
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	if (rc)
		hb_buf_free(text);
	return rc;
}

/* Remember a partition for the refresh (at most MAX_PARTS). */
static void want_part(struct hb_decider *dc, const char *name)
{
	if (!name || !*name ||
	    strlen(name) >= sizeof(((struct hb_decider_part *)0)->name))
		return;
	for (size_t i = 0; i < dc->nparts; i++)
		if (!strcmp(dc->parts[i], name))
			return;
	if (dc->nparts == MAX_PARTS)
		return;
	if (!(dc->parts[dc->nparts] = strdup(name)))
		return;
	dc->nparts++;
}

static void forget_parts(struct hb_decider *dc)
{
	for (size_t i = 0; i < dc->nparts; i++)
		free(dc->parts[i]);
	dc->nparts = 0;
}

/* The policy's unsized data locations on a file system. */
static void want_data(struct hb_decider *dc)
{
	free(dc->data);
	dc->data = NULL;
	dc->ndata = 0;
	if (!dc->pol.ndata ||
	    !(dc->data = calloc(dc->pol.ndata, sizeof(*dc->data))))
		return;
	for (uint32_t i = 0; i < dc->pol.ndata; i++)
		if (!dc->pol.data[i].size_known &&
		    dc->pol.data[i].prefix[0] == '/')
			dc->data[dc->ndata++] = dc->pol.data[i].prefix;
}

size_t hb_decider_data_paths(const struct hb_decider *dc,
			     const char ***paths)
{
	*paths = dc->data;
	return dc->ndata;
}

int hb_decider_set_data(struct hb_decider *dc, const char *prefix,
			uint64_t bytes)
{
	return hb_snapshot_set_data(&dc->snap, prefix, bytes);
}

static void want_policy_parts(struct hb_decider *dc)
{
	for (uint32_t i = 0; i < dc->pol.npartitions; i++)
		want_part(dc, dc->pol.partitions[i].name);
	for (uint32_t i = 0; i < dc->pol.nrules; i++)
		want_part(dc, dc->pol.rules[i].partition);
}

int hb_decider_new(const struct hb_config *cfg, struct hb_decider **out,
		   struct hb_err *err)
{
	struct hb_decider *dc = calloc(1, sizeof(*dc));
	int rc;

	*out = NULL;
	if (!dc)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if ((rc = load_policy(cfg, &dc->pol, &dc->policy_name,
			      &dc->policy_text, err))) {
		free(dc);
		return rc;
	}
	hb_snapshot_init(&dc->snap, (int64_t)time(NULL));
	want_policy_parts(dc);
	want_data(dc);
	*out = dc;
	return 0;
}

int hb_decider_reload(struct hb_decider *dc, const struct hb_config *cfg,
		      struct hb_err *err)
{
	struct hb_policy pol = { 0 };
	struct hb_buf text;
	char *name = NULL;
	int rc = load_policy(cfg, &pol, &name, &text, err);

	if (rc)
		return rc;
	hb_policy_free(&dc->pol);
	free(dc->policy_name);
	hb_buf_free(&dc->policy_text);
	dc->pol = pol;
	dc->policy_name = name;
	dc->policy_text = text;
	forget_parts(dc);
	want_policy_parts(dc);
	want_data(dc);
	for (size_t i = 0; i < dc->nseen; i++)
		want_part(dc, dc->snap.parts[dc->seen[i].idx].name);
	return 0;
}

void hb_decider_free(struct hb_decider *dc)
{
	if (!dc)
		return;
	hb_policy_free(&dc->pol);
	hb_snapshot_free(&dc->snap);
	hb_buf_free(&dc->policy_text);
	free(dc->policy_name);
	free(dc->seen);
	free(dc->data);
	forget_parts(dc);
	free(dc);
}

const char *hb_decider_policy_name(const struct hb_decider *dc)
{
	return dc->policy_name;
}

const char *hb_decider_currency(const struct hb_decider *dc)
{
	return dc->pol.currency;
}

void hb_decider_budgets(const struct hb_decider *dc, hb_decider_budget_fn fn,
			void *arg)
{
	for (uint32_t i = 0; i < dc->pol.nrules; i++) {
		const struct hb_rule *r = &dc->pol.rules[i];
		const struct hb_snap_spend *e;
		hb_money spent = 0;
		uint32_t j;

		if (!r->account || r->budget == HB_UNSET)
			continue;
		for (j = 0; j < i; j++) /* an account once: its first rule */
			if (dc->pol.rules[j].account &&
			    dc->pol.rules[j].budget != HB_UNSET &&
			    !strcmp(dc->pol.rules[j].account, r->account))
				break;
		if (j < i)
			continue;
		e = hb_snapshot_spend(&dc->snap, r->account, r->budget_period);
		for (int side = 0; e && side < HB__SIDE_COUNT; side++)
			if (r->budget_sides & (1u << side))
				spent += e->spent[side];
		fn(arg, r->account, hb_period_name(r->budget_period), r->budget,
		   spent);
	}
}

const char *hb_decider_note(const struct hb_decider *dc)
{
	return dc->kube_note;
}

const char *hb_decider_policy_text(const struct hb_decider *dc)
{
	return dc->policy_text.data ? dc->policy_text.data : "";
}

/* ------------------------------------------------------- snapshot */

int hb_decider_set_slurm(struct hb_decider *dc,
			 const struct hb_decider_part *parts, size_t n,
			 int64_t now)
{
	struct part_seen *v = n ? calloc(n, sizeof(*v)) : NULL;
	int rc;

	if (n && !v)
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char name[sizeof(parts[i].name)];
		struct hb_snap_partition *sp;

		memcpy(name, parts[i].name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		if ((rc = hb_snapshot_set_partition(
			     &dc->snap, name,
			     parts[i].wait > 0 ? parts[i].wait : 0,
			     parts[i].pending, parts[i].idle_nodes))) {
			free(v);
			return rc;
		}
		sp = (struct hb_snap_partition *)hb_snapshot_partition(
			&dc->snap, name);
		sp->wait_known = parts[i].wait_known;
		sp->idle_known = parts[i].idle_known;
		v[i].idx = (size_t)(sp - dc->snap.parts);
		v[i].start = now + sp->wait;
	}
	free(dc->seen);
	dc->seen = v;
	dc->nseen = n;
	return 0;
}

static int set_queue(struct hb_snapshot *snap, const char *name,
		     const struct hb_kcap *cap, int64_t turn_s)
{
	struct hb_snap_queue *q;
	uint32_t kept;
	int rc;

	if ((rc = hb_snapshot_set_queue(snap, name, 0, cap->pending,
					cap->free_millicpus / 1000,
					cap->free_mem_bytes / 1048576)))
		return rc;
	q = (struct hb_snap_queue *)hb_snapshot_queue(snap, name);
	/* Kueue's pending workloads, when its visibility API answered */
	q->wait_known = cap->queue_known;
	if (cap->queue_known) {
		q->pending = cap->queue_ahead;
		q->wait = hb_kueue_wait(cap->queue_ahead, cap->queue_admitted,
					cap->queue_remaining_s, turn_s);
	}
	/* Types no node has any more go (their names stay in the arena:
	 * a few bytes each time a type disappears). */
	kept = 0;
	for (uint32_t i = 0; i < q->nfree_gpus; i++) {
		uint32_t j = 0;

		while (j < cap->ngpus &&
		       strcasecmp(cap->gpus[j].type, q->free_gpus[i].type))
			j++;
		if (j < cap->ngpus)
			q->free_gpus[kept++] = q->free_gpus[i];
	}
	q->nfree_gpus = kept;
	for (uint32_t i = 0; i < cap->ngpus; i++) {
		uint64_t n = cap->gpus[i].free;

		if ((rc = hb_snapshot_set_queue_gpus(
			     snap, name, cap->gpus[i].type,
			     n > UINT32_MAX ? UINT32_MAX : (uint32_t)n)))
			return rc;
	}
	return 0;
}

int hb_decider_set_kube(struct hb_decider *dc, const struct hb_kcap *cap)
{
	int rc;

	if (!dc->pol.kube_enabled)
		return 0;
	snprintf(dc->kube_note, sizeof(dc->kube_note), "%s",
		 cap->queue_known ? "" : cap->queue_note);
	for (uint32_t i = 0; i < dc->pol.nqueues; i++)
		if ((rc = set_queue(&dc->snap, dc->pol.queues[i].name, cap,
				    dc->pol.kube_default_wait)))
			return rc;
	return 0;
}

/* Bring the snapshot to instant now: each reported partition's wait is
 * what is left of it. */
static void age(struct hb_decider *dc, int64_t now)
{
	dc->snap.now = now;
	for (size_t i = 0; i < dc->nseen; i++) {
		const struct part_seen *p = &dc->seen[i];

		dc->snap.parts[p->idx].wait =
			p->start > now ? p->start - now : 0;
	}
}

size_t hb_decider_partitions(const struct hb_decider *dc,
			     const char *const **names)
{
	*names = (const char *const *)dc->parts;
	return dc->nparts;
}

cJSON *hb_decider_state(struct hb_decider *dc, int64_t now)
{
	age(dc, now);
	return hb_snapshot_to_json(&dc->snap);
}

/* ------------------------------------------------------- decisions */

int hb_decider_decide(struct hb_decider *dc, const struct hb_place_job *job,
		      int64_t now, struct hb_place_out *out,
		      struct hb_err *err)
{
	int rc;

	age(dc, now);
	rc = hb_place_job(&dc->pol, &dc->snap, job, now, dc->kube_note, out,
			  err);
	if (!rc && out->partition[0])
		want_part(dc, out->partition);
	return rc;
}

/* ----------------------------------------------------------- spend */

struct spend_load {
	struct hb_snapshot *snap;
	int64_t start[HB__PERIOD_COUNT]; /* Unix seconds; -1: not tracked */
	int rc;
};

static int charge_row(const struct hb_spend_row *r, void *arg)
{
	struct spend_load *l = arg;
	int side = r->side == HB_TARGET_SLURM	     ? HB_SIDE_SLURM
		   : r->side == HB_TARGET_KUBERNETES ? HB_SIDE_KUBE
						     : -1;

	if (side < 0 || !r->account || r->cost_micro <= 0)
		return 0;
	for (int p = 0; p < HB__PERIOD_COUNT; p++)
		if (l->start[p] >= 0 && r->at_ms / 1000 >= l->start[p] &&
		    (l->rc = hb_snapshot_charge(l->snap, r->account, p, side,
						(hb_money)r->cost_micro)))
			return l->rc;
	return 0;
}

/* The start of each budget period the policy uses, as of now (local
 * time); -1 for the others.  Returns the earliest. */
static int64_t tracked_periods(const struct hb_decider *dc, int64_t now,
			       int64_t start[HB__PERIOD_COUNT])
{
	int32_t off = hb_place_local_offset(now);
	int64_t since = now;

	for (int p = 0; p < HB__PERIOD_COUNT; p++)
		start[p] = -1;
	start[dc->pol.defaults.budget_period] = 0;
	for (uint32_t i = 0; i < dc->pol.nrules; i++)
		start[dc->pol.rules[i].budget_period] = 0;
	for (int p = 0; p < HB__PERIOD_COUNT; p++)
		if (start[p] == 0) {
			start[p] = hb_period_start(p, now, off);
			if (start[p] < since)
				since = start[p];
		}
	return since;
}

int hb_decider_load_spend(struct hb_decider *dc, struct hb_store *st,
			  int64_t now, int metered, struct hb_err *err)
{
	struct spend_load l = { .snap = &dc->snap };
	int64_t since = tracked_periods(dc, now, l.start);
	int rc;

	hb_snapshot_clear_spend(&dc->snap);
	rc = hb_store_spend_list(st, since * 1000, metered, charge_row, &l,
				 err);
	if (rc && l.rc)
		hb_err_set(err, rc, NULL, 0, "spend: %s", hb_strerror(rc));
	if (!rc)
		dc->spend_day = hb_period_start(HB_PERIOD_DAY, now,
						hb_place_local_offset(now));
	return rc;
}

int hb_decider_spend_add(struct hb_decider *dc, const char *account,
			 enum hb_job_target side, int64_t at_ms,
			 int64_t delta, int64_t now)
{
	int64_t start[HB__PERIOD_COUNT];
	int s = side == HB_TARGET_SLURM	       ? HB_SIDE_SLURM
		: side == HB_TARGET_KUBERNETES ? HB_SIDE_KUBE
					       : -1;
	int rc;

	if (s < 0 || !account || !delta)
		return 0;
	tracked_periods(dc, now, start);
	for (int p = 0; p < HB__PERIOD_COUNT; p++)
		if (start[p] >= 0 && at_ms / 1000 >= start[p] &&
		    (rc = hb_snapshot_charge(&dc->snap, account, p, s,
					     (hb_money)delta)))
			return rc;
	return 0;
}

bool hb_decider_spend_stale(const struct hb_decider *dc, int64_t now)
{
	return hb_period_start(HB_PERIOD_DAY, now, hb_place_local_offset(now)) !=
	       dc->spend_day;
}
