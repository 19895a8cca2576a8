/*
 * placement.c - the placement engine: estimates per side, the rules, the
 * choice, and its explanation.
 *
 * hb_place_decide() is the hot path: it reads the policy, the snapshot and
 * the input, writes the result, and does nothing else (no allocation, no
 * formatting).  Explanations and documents are built afterwards from the
 * result, by hb_place_explain() and hb_place_to_json(), only for the
 * decisions someone keeps or reads.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/units.h"

/* ---- names ------------------------------------------------------------ */

static const char *const factor_names[HB__PF_COUNT] = {
	[HB_PF_NONE] = "none",
	[HB_PF_DEADLINE] = "deadline",
	[HB_PF_TIME_LIMIT] = "time_limit",
	[HB_PF_MEMORY] = "memory",
	[HB_PF_DATA_UNPLACED] = "data_unplaced",
	[HB_PF_DATA_SIZE] = "data_size_unknown",
	[HB_PF_PARTITION] = "partition_unknown",
	[HB_PF_NO_ESTIMATE] = "no_estimate",
	[HB_PF_WAIT] = "wait",
	[HB_PF_FREE_NOW] = "free_now",
	[HB_PF_STAGING] = "staging",
	[HB_PF_COST] = "cost",
	[HB_PF_LATE] = "late",
	[HB_PF_NOT_CONFIGURED] = "not_configured",
	[HB_PF_NODES] = "nodes",
	[HB_PF_NODE_CPUS] = "node_cpus",
	[HB_PF_NODE_MEMORY] = "node_memory",
	[HB_PF_NODE_GPUS] = "node_gpus",
	[HB_PF_GPU_TYPE] = "gpu_type",
	[HB_PF_MIG] = "mig",
	[HB_PF_SHARDS] = "shards",
	[HB_PF_RDMA] = "rdma",
	[HB_PF_SITE] = "site",
	[HB_PF_BURST_NEVER] = "burst_never",
	[HB_PF_BUDGET] = "budget",
	[HB_PF_DATA_PINNED] = "data_pinned",
	[HB_PF_DATA_TOO_BIG] = "data_too_big",
	[HB_PF_STAGING_SLACK] = "staging_slack",
	[HB_PF_PREMIUM] = "premium",
	[HB_PF_REQUESTED] = "requested",
	[HB_PF_REQUEST_DENIED] = "request_denied",
	[HB_PF_PILOT] = "pilot",
};

const char *hb_place_factor_name(int kind)
{
	return kind >= 0 && kind < HB__PF_COUNT ? factor_names[kind] : NULL;
}

bool hb_place_factor_is_rule(int kind)
{
	return kind >= HB_PF_BURST_NEVER && kind <= HB_PF_PREMIUM;
}

static bool is_capability(int kind)
{
	return kind >= HB_PF_NOT_CONFIGURED && kind <= HB_PF_SITE;
}

static const char *const why_names[HB__WHY_COUNT] = {
	[HB_WHY_REQUESTED] = "requested",
	[HB_WHY_PILOT] = "pilot",
	[HB_WHY_PREFERRED] = "preferred",
	[HB_WHY_CHEAPEST] = "cheapest",
	[HB_WHY_EARLIEST] = "earliest",
	[HB_WHY_DEADLINE] = "deadline",
	[HB_WHY_ONLY] = "only_side",
	[HB_WHY_PREMIUM] = "premium",
	[HB_WHY_FALLBACK] = "fallback",
	[HB_WHY_NO_SIDE] = "no_side",
	[HB_WHY_NO_DEADLINE] = "no_side_meets_deadline",
	[HB_WHY_NO_PREMIUM] = "premium_too_high",
};

const char *hb_place_why_name(int why)
{
	return why >= 0 && why < HB__WHY_COUNT ? why_names[why] : NULL;
}

const char *hb_place_target_name(int target)
{
	return target == HB_PLACE_REJECT ? "reject" : hb_side_name(target);
}

/* ---- hashing and time ------------------------------------------------- */

uint64_t hb_place_hash(const char *name, const char *user, uint64_t seq)
{
	uint64_t h = HB_FNV1A_INIT;
	char num[24];
	int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)seq);

	h = hb_fnv1a_strz(h, name);
	h = hb_fnv1a_strz(h, user);
	return hb_fnv1a(h, num, (size_t)n);
}

/* ---- the input -------------------------------------------------------- */

/* The shards a --gres directive (or SBATCH_GRES) asks for
 * ("--gres=shard:2", "--gres gpu:1,shard:type:4"); 0 when none. */
static uint32_t shards_in(const char *text)
{
	const char *p;
	int64_t v = 0;

	if (strncmp(text, "--gres", 6) && strncmp(text, "SBATCH_GRES=", 12))
		return 0;
	if (!strncmp(text, "--gres-flags", 12))
		return 0;
	for (p = strstr(text, "shard"); p; p = strstr(p + 1, "shard"))
		if (p[-1] == '=' || p[-1] == ' ' || p[-1] == ',' ||
		    p[-1] == ':')
			break;
	if (!p)
		return 0;
	p += 5;
	while (*p == ':') {
		p++;
		if (hb_scan_digits(&p, 9, &v))
			return (uint32_t)v;
		while (*p && *p != ':' && *p != ',')
			p++;
	}
	return 1;
}

/* Whether the constraint expression names one of the features. */
static bool constraint_has(const char *expr, const char *const *feat,
			   uint32_t n)
{
	const char *p = expr;

	while (p && *p) {
		size_t len = strcspn(p, "&|,[]*()");

		for (uint32_t i = 0; len && i < n; i++)
			if (strlen(feat[i]) == len &&
			    !strncasecmp(p, feat[i], len))
				return true;
		p += len;
		if (*p)
			p++;
	}
	return false;
}

/*
 * Whether the job needs RDMA, and what says so: the jobspec's fabric (said
 * in words, or read from the script's variables), a --constraint feature
 * the policy lists, or the policy's rule for multi-node MPI, which a job
 * that says tcp turns off.
 */
static void rdma_need(const struct hb_policy *pol,
		      const struct hb_jobspec *spec, struct hb_place_input *in)
{
	const size_t n = sizeof(in->rdma_why);

	if (spec->fabric == HB_FABRIC_RDMA) {
		in->needs_rdma = true;
		in->rdma_any_size = !spec->fabric_inferred;
		snprintf(in->rdma_why, n, "%s",
			 spec->fabric_why ? spec->fabric_why
					  : "--hpcbridge-fabric=rdma");
	} else if (spec->constraint && pol &&
		   constraint_has(spec->constraint, pol->rdma_features,
				  pol->nrdma_features)) {
		in->needs_rdma = true;
		in->rdma_any_size = true;
		snprintf(in->rdma_why, n, "--constraint=%.*s",
			 (int)(n - 16), spec->constraint);
	} else if (pol && pol->multinode_mpi_needs_rdma && in->nodes > 1 &&
		   spec->fabric != HB_FABRIC_TCP &&
		   (spec->mpi != HB_MPI_UNKNOWN || spec->nmpi_lines)) {
		in->needs_rdma = true;
		snprintf(in->rdma_why, n,
			 "multi-node MPI (policy: multinode_mpi_needs_rdma)");
	}
}

int hb_place_input_from_jobspec(const struct hb_policy *pol,
				const struct hb_jobspec *spec, int64_t now,
				int32_t utc_offset, struct hb_place_input *in,
				struct hb_err *err)
{
	struct hb_shape sh;
	int rc;

	memset(in, 0, sizeof(*in));
	in->requested = -1;
	in->name = spec->name;
	in->user = spec->user;
	in->account = spec->account;
	in->partition = spec->partition;
	in->source_name = spec->source_name;
	if ((rc = hb_jobspec_shape(spec, &sh)))
		return hb_err_set(err, rc, spec->source_name, 0,
				  "the job's shape is too large to place");
	in->nodes = sh.nodes ? sh.nodes : 1;
	in->cpus_per_node = sh.cpus_per_node ? sh.cpus_per_node : 1;
	in->mem_per_node_mb = sh.mem_per_node_mb;
	in->whole_node = spec->exclusive || sh.whole_node_mem;
	in->gpus_per_node = sh.gpus_per_node;
	in->gpu_type = spec->gpu_type;
	if (spec->time_limit && spec->time_limit != HB_TIME_UNLIMITED)
		in->time_limit = spec->time_limit > (uint64_t)HB_DURATION_MAX
					 ? HB_DURATION_MAX
					 : (int64_t)spec->time_limit;
	in->data = spec->data;
	in->ndata = spec->ndata;
	rdma_need(pol, spec, in);
	for (uint32_t i = 0; i < spec->ndirectives; i++) {
		const struct hb_directive *d = &spec->directives[i];
		const char *t = d->text, *v;

		if (!t || d->kind != HB_DIR_SBATCH)
			continue;
		if (!in->shards_per_node)
			in->shards_per_node = shards_in(t);
		if (strncmp(t, "--hpcbridge-target", 18))
			continue;
		v = t + 18;
		if (*v != '=' && *v != ' ')
			continue;
		while (*v == '=' || *v == ' ')
			v++;
		in->requested = !strcmp(v, "slurm")	   ? HB_SIDE_SLURM
				: !strcmp(v, "kubernetes") ? HB_SIDE_KUBE
							   : -1;
	}
	if (spec->deadline) {
		in->deadline_line = spec->prov[HB_F_DEADLINE].line;
		if (hb_time_slurm_date(spec->deadline, now, utc_offset,
					&in->deadline))
			return hb_err_set(err, HB_EINVAL, spec->source_name,
					  in->deadline_line,
					  "deadline '%.60s': placement reads "
					  "now+N[units], HH:MM[:SS], "
					  "YYYY-MM-DD[THH:MM[:SS]], "
					  "MM/DD[/YY][-HH:MM], today, "
					  "tomorrow, midnight, noon, fika, "
					  "teatime or uts<seconds>",
					  spec->deadline);
		if (in->deadline <= 0)
			in->deadline = 1; /* 0 means none: keep it past */
	}
	return 0;
}

/* ---- the decision ----------------------------------------------------- */

struct ctx {
	const struct hb_policy *pol;
	const struct hb_snapshot *snap;
	const struct hb_place_input *in;
	struct hb_place_result *out;
	const struct hb_rule *rule;
	const char *partition;
	const struct hb_partition *pt;
	int64_t now;
	uint64_t mem_per_node; /* MiB, the job's or assumed */
	/* data, per side it would be staged to */
	uint64_t moved[HB__SIDE_COUNT];
	int64_t staging[HB__SIDE_COUNT];
	hb_money egress[HB__SIDE_COUNT];
	const char *pinned[HB__SIDE_COUNT]; /* a prefix that may not move */
};

static void factor(struct ctx *c, int kind, int side, int64_t value,
		   int64_t limit, const char *subject)
{
	struct hb_place_result *o = c->out;
	struct hb_place_factor *f;

	if (o->nfactors == HB_PLACE_MAX_FACTORS) {
		o->factors_truncated = true;
		return;
	}
	f = &o->factor[o->nfactors++];
	f->kind = (uint8_t)kind;
	f->side = (int8_t)side;
	f->value = value;
	f->limit = limit;
	f->subject = subject;
}

/* A side ruled out by kind: recorded once, the first reason kept. */
static void block(struct ctx *c, int side, int kind, int64_t value,
		  int64_t limit, const char *subject)
{
	struct hb_place_alt *a = &c->out->alt[side];

	factor(c, kind, side, value, limit, subject);
	if (is_capability(kind))
		a->can_run = false;
	else
		a->allowed = false;
	if (!a->blocked_by)
		a->blocked_by = (uint8_t)kind;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	return a + b;
}

static uint64_t ceil_div(unsigned __int128 a, unsigned __int128 b)
{
	unsigned __int128 q = (a + b - 1) / b;

	return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* The data the job reads: what each side would have to stage. */
static void data(struct ctx *c)
{
	const struct hb_place_input *in = c->in;
	const struct hb_data_loc *seen[32];
	uint32_t nseen = 0, unplaced = 0;
	const char *first_unplaced = NULL;

	for (uint32_t i = 0; i < in->ndata; i++) {
		const struct hb_data_loc *l =
			in->data[i] ? hb_policy_data(c->pol, in->data[i])
				    : NULL;
		const struct hb_snap_data *sd;
		uint64_t size, e;
		bool dup = false;
		int to;

		if (!l) {
			if (!unplaced++)
				first_unplaced = in->data[i];
			continue;
		}
		for (uint32_t j = 0; j < nseen; j++)
			dup |= seen[j] == l;
		if (dup)
			continue;
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = l;
		sd = hb_snapshot_data(c->snap, l->prefix);
		if (sd) {
			size = sd->size;
		} else if (l->size_known) {
			size = l->size;
		} else {
			size = 0;
			factor(c, HB_PF_DATA_SIZE, -1, 0, 0, l->prefix);
		}
		to = 1 - l->side;
		if (!l->movable && !c->pinned[to])
			c->pinned[to] = l->prefix;
		c->moved[to] += size;
		if (l->bandwidth)
			c->staging[to] =
				sat_add(c->staging[to],
					(int64_t)ceil_div(size, l->bandwidth));
		e = ceil_div((unsigned __int128)size *
				     (uint64_t)l->egress_per_gb,
			     1000000000ULL);
		c->egress[to] +=
			e > (uint64_t)HB_MONEY_MAX ? HB_MONEY_MAX : (int64_t)e;
		if (c->egress[to] > HB_MONEY_MAX)
			c->egress[to] = HB_MONEY_MAX;
	}
	if (unplaced)
		factor(c, HB_PF_DATA_UNPLACED, -1, unplaced, 0, first_unplaced);
}

/* The rate of one GPU of type t on a card. */
static hb_money gpu_rate(const struct hb_rates *r, const char *t)
{
	if (t)
		for (uint32_t i = 0; i < r->ngpu; i++)
			if (!strcasecmp(r->gpu[i].type, t))
				return r->gpu[i].per_hour;
	return r->gpu_hour;
}

/* Free GPUs of type t in a queue's snapshot. */
static uint32_t free_gpus(const struct hb_snap_queue *q, const char *t)
{
	uint32_t n = 0;

	if (!q)
		return 0;
	for (uint32_t i = 0; i < q->nfree_gpus; i++)
		if (!t || !strcasecmp(q->free_gpus[i].type, t))
			n += q->free_gpus[i].count;
	return n;
}

/*
 * Can the side run the job?  Picks the GPU type it would run on: a MIG
 * profile the side offers, or among the types the request may run on the
 * one free now (Kubernetes), then the cheapest, then the first listed.
 * cap NULL: unknown (a partition the policy does not describe): no
 * limits.
 */
static void capability(struct ctx *c, int side, const struct hb_capability *cap,
		       const struct hb_rates *rates,
		       const struct hb_snap_queue *sq)
{
	const struct hb_place_input *in = c->in;
	struct hb_place_alt *a = &c->out->alt[side];
	const char *want = in->gpu_type;

	if (!cap)
		return;
	if (cap->max_nodes && in->nodes > cap->max_nodes)
		block(c, side, HB_PF_NODES, in->nodes, cap->max_nodes, NULL);
	if (cap->node_cpus && in->cpus_per_node > cap->node_cpus)
		block(c, side, HB_PF_NODE_CPUS, in->cpus_per_node,
		      cap->node_cpus, NULL);
	if (cap->node_mem_mb && c->mem_per_node > cap->node_mem_mb)
		block(c, side, HB_PF_NODE_MEMORY, (int64_t)c->mem_per_node,
		      (int64_t)cap->node_mem_mb, NULL);
	if (in->shards_per_node && !cap->shards)
		block(c, side, HB_PF_SHARDS, in->shards_per_node, 0, NULL);
	if (in->needs_rdma && !cap->rdma && (in->nodes > 1 || in->rdma_any_size))
		block(c, side, HB_PF_RDMA, in->nodes, 0,
		      in->rdma_why[0] ? in->rdma_why : NULL);
	if (!in->gpus_per_node)
		return;
	if (want && hb_gpu_is_mig(want)) {
		for (uint32_t i = 0; i < cap->nmig; i++)
			if (hb_policy_gpu_ok(c->pol, want, cap->mig[i])) {
				a->gpu_type = strcmp(cap->mig[i], HB_GPU_ANY)
						      ? cap->mig[i]
						      : want;
				return;
			}
		block(c, side, HB_PF_MIG, in->gpus_per_node, 0, want);
		return;
	}
	if (cap->node_gpus && in->gpus_per_node > cap->node_gpus)
		block(c, side, HB_PF_NODE_GPUS, in->gpus_per_node,
		      cap->node_gpus, NULL);
	if (!cap->ngpu_types) {
		/* untyped GPUs: only an untyped request can be sure */
		if (!cap->node_gpus || want)
			block(c, side, HB_PF_GPU_TYPE, in->gpus_per_node, 0,
			      want ? want : "gpu");
		return;
	}
	{
		const char *best = NULL;
		hb_money best_rate = 0;
		bool best_free = false;
		uint64_t need = (uint64_t)in->gpus_per_node * in->nodes;

		for (uint32_t i = 0; i < cap->ngpu_types; i++) {
			const char *t = cap->gpu_types[i];
			hb_money r;
			bool fr;

			if (!hb_policy_gpu_ok(c->pol, want, t))
				continue;
			r = gpu_rate(rates, t);
			fr = sq && free_gpus(sq, t) >= need;
			if (!best || (fr && !best_free) ||
			    (fr == best_free && r < best_rate)) {
				best = t;
				best_rate = r;
				best_free = fr;
			}
		}
		if (!best)
			block(c, side, HB_PF_GPU_TYPE, in->gpus_per_node, 0,
			      want);
		a->gpu_type = best && !strcmp(best, HB_GPU_ANY) ? want : best;
	}
}

/* compute = ceil(nodes * runtime * per-node hourly rate / 3600) +
 * per_job; memory is rated per GiB. */
static hb_money compute_cost(const struct ctx *c, int side,
			     const struct hb_rates *r,
			     const struct hb_capability *cap)
{
	const struct hb_place_input *in = c->in;
	const struct hb_place_alt *a = &c->out->alt[side];
	uint64_t cpus = in->cpus_per_node, mem = c->mem_per_node;
	unsigned __int128 per_node, total;
	uint64_t v;

	if (in->whole_node && cap) {
		if (cap->node_cpus > cpus)
			cpus = cap->node_cpus;
		if (cap->node_mem_mb > mem)
			mem = cap->node_mem_mb;
	}
	/* per node-hour, in micro-units * 1024 */
	per_node = (unsigned __int128)cpus * (uint64_t)r->cpu_hour * 1024 +
		   (unsigned __int128)mem * (uint64_t)r->mem_gb_hour +
		   (unsigned __int128)in->gpus_per_node *
			   (uint64_t)gpu_rate(r, a->gpu_type) * 1024 +
		   (unsigned __int128)in->shards_per_node *
			   (uint64_t)r->shard_hour * 1024;
	total = per_node * in->nodes * (uint64_t)a->runtime;
	v = ceil_div(total, 3600ULL * 1024);
	if (v > (uint64_t)HB_MONEY_MAX)
		v = (uint64_t)HB_MONEY_MAX;
	return (int64_t)v + r->per_job; /* both <= HB_MONEY_MAX */
}

static void slurm_side(struct ctx *c)
{
	const struct hb_place_input *in = c->in;
	struct hb_place_alt *a = &c->out->alt[HB_SIDE_SLURM];
	const struct hb_snap_partition *sp;
	const struct hb_rates *rates =
		c->pt ? &c->pt->rates : &c->pol->slurm_rates;

	a->resource = c->pt ? c->pt->name : c->partition;
	capability(c, HB_SIDE_SLURM, c->pt ? &c->pt->cap : NULL, rates, NULL);
	sp = hb_snapshot_partition(c->snap, c->partition);
	if (in->slurm_start > 0) {
		a->estimated = true;
		a->wait =
			in->slurm_start > c->now ? in->slurm_start - c->now : 0;
	} else if (sp && sp->idle_known && !sp->pending &&
		   sp->idle_nodes >= in->nodes) {
		a->estimated = a->fits_now = true;
	} else if (sp && sp->wait_known) {
		a->estimated = true;
		a->wait = sp->wait;
	} else {
		a->wait = c->pol->slurm_default_wait;
		factor(c, HB_PF_NO_ESTIMATE, HB_SIDE_SLURM, a->wait, 0,
		       a->resource);
	}
	if (a->fits_now)
		factor(c, HB_PF_FREE_NOW, HB_SIDE_SLURM, 0, 0, a->resource);
	else if (a->estimated)
		factor(c, HB_PF_WAIT, HB_SIDE_SLURM, a->wait,
		       sp ? sp->pending : 0, a->resource);
	a->staging = c->staging[HB_SIDE_SLURM];
	a->moved = c->moved[HB_SIDE_SLURM];
	a->start = c->now + (a->wait > a->staging ? a->wait : a->staging);
	a->finish = sat_add(a->start, a->runtime);
	a->compute = compute_cost(c, HB_SIDE_SLURM, rates,
				  c->pt ? &c->pt->cap : NULL);
	a->egress = c->egress[HB_SIDE_SLURM];
}

static void kube_side(struct ctx *c)
{
	const struct hb_place_input *in = c->in;
	struct hb_place_alt *a = &c->out->alt[HB_SIDE_KUBE];
	const struct hb_capability *cap = &c->pol->kube_cap;
	const struct hb_kqueue *q;
	const struct hb_snap_queue *sq;
	uint64_t cpus, mem;

	if (!c->pol->kube_enabled) {
		block(c, HB_SIDE_KUBE, HB_PF_NOT_CONFIGURED, 0, 0, NULL);
		a->start = a->finish = c->now;
		return;
	}
	q = hb_policy_queue(c->pol, in->account, c->partition);
	a->resource = q->name;
	sq = hb_snapshot_queue(c->snap, q->name);
	capability(c, HB_SIDE_KUBE, cap, &c->pol->kube_rates, sq);
	if (in->kube_refusal)
		block(c, HB_SIDE_KUBE, HB_PF_SITE, 0, 0, in->kube_refusal);
	cpus = (uint64_t)in->cpus_per_node * in->nodes;
	mem = c->mem_per_node * in->nodes;
	if (in->whole_node && cap->node_cpus)
		cpus = (uint64_t)cap->node_cpus * in->nodes;
	if (in->whole_node && cap->node_mem_mb)
		mem = cap->node_mem_mb * in->nodes;
	if (sq && sq->free_known && !sq->pending && cpus <= sq->free_cpus &&
	    mem <= sq->free_mem_mb &&
	    (!in->gpus_per_node ||
	     free_gpus(sq, a->gpu_type) >=
		     (uint64_t)in->gpus_per_node * in->nodes)) {
		a->estimated = a->fits_now = true;
	} else if (sq && sq->wait_known) {
		a->estimated = true;
		a->wait = sq->wait;
	} else {
		a->wait = c->pol->kube_default_wait;
		factor(c, HB_PF_NO_ESTIMATE, HB_SIDE_KUBE, a->wait, 0,
		       a->resource);
	}
	if (a->fits_now)
		factor(c, HB_PF_FREE_NOW, HB_SIDE_KUBE, 0, 0, a->resource);
	else if (a->estimated)
		factor(c, HB_PF_WAIT, HB_SIDE_KUBE, a->wait,
		       sq ? sq->pending : 0, a->resource);
	a->staging = c->staging[HB_SIDE_KUBE];
	a->moved = c->moved[HB_SIDE_KUBE];
	a->start =
		sat_add(c->now + (a->wait > a->staging ? a->wait : a->staging),
			c->pol->kube_startup);
	a->finish = sat_add(a->start, a->runtime);
	a->compute = compute_cost(c, HB_SIDE_KUBE, &c->pol->kube_rates, cap);
	a->egress = c->egress[HB_SIDE_KUBE];
}

/* The rules that may forbid a side the job could run on. */
static void rules(struct ctx *c, int side)
{
	const struct hb_rule *ru = c->rule;
	const struct hb_place_alt *a = &c->out->alt[side];
	int64_t deadline = c->out->deadline;

	if (!a->can_run)
		return;
	if (side == HB_SIDE_KUBE && !ru->burst)
		block(c, side, HB_PF_BURST_NEVER, 0, 0, ru->name);
	if (c->pinned[side])
		block(c, side, HB_PF_DATA_PINNED, (int64_t)a->moved, 0,
		      c->pinned[side]);
	if (ru->keep_with_data_over && a->moved > ru->keep_with_data_over)
		block(c, side, HB_PF_DATA_TOO_BIG, (int64_t)a->moved,
		      (int64_t)ru->keep_with_data_over, ru->name);
	if (ru->staging_slack_bp != HB_UNSET && deadline && a->staging > 0) {
		int64_t slack = deadline - c->now - a->runtime;
		int64_t allowed =
			slack > 0 ? (int64_t)((unsigned __int128)slack *
					      (uint64_t)ru->staging_slack_bp /
					      10000)
				  : 0;

		if (a->staging > allowed)
			block(c, side, HB_PF_STAGING_SLACK, a->staging, allowed,
			      ru->name);
	}
	if (ru->budget != HB_UNSET && (ru->budget_sides & (1u << side))) {
		const struct hb_snap_spend *sp = hb_snapshot_spend(
			c->snap, c->in->account, ru->budget_period);
		int64_t spent = 0, after;

		for (int s = 0; sp && s < HB__SIDE_COUNT; s++)
			if (ru->budget_sides & (1u << s))
				spent = sat_add(spent, sp->spent[s]);
		after = sat_add(spent, a->cost);
		if (after > ru->budget)
			block(c, side, HB_PF_BUDGET, after, ru->budget,
			      ru->name);
	}
}

/* The side the rule prefers among two candidates, deadline aside. */
static int base_side(const struct ctx *c)
{
	const struct hb_place_alt *s = &c->out->alt[HB_SIDE_SLURM];
	const struct hb_place_alt *k = &c->out->alt[HB_SIDE_KUBE];

	switch (c->rule->prefer) {
	case HB_PREFER_KUBE:
		return HB_SIDE_KUBE;
	case HB_PREFER_CHEAPEST:
		return k->cost < s->cost ? HB_SIDE_KUBE : HB_SIDE_SLURM;
	case HB_PREFER_EARLIEST:
		if (k->finish != s->finish)
			return k->finish < s->finish ? HB_SIDE_KUBE
						     : HB_SIDE_SLURM;
		return k->cost < s->cost ? HB_SIDE_KUBE : HB_SIDE_SLURM;
	default:
		return HB_SIDE_SLURM;
	}
}

/* Of the candidates, the one that finishes first (then the cheaper, then
 * Slurm). */
static int earliest(const struct ctx *c, const bool cand[])
{
	const struct hb_place_alt *s = &c->out->alt[HB_SIDE_SLURM];
	const struct hb_place_alt *k = &c->out->alt[HB_SIDE_KUBE];

	if (!cand[HB_SIDE_KUBE])
		return HB_SIDE_SLURM;
	if (!cand[HB_SIDE_SLURM])
		return HB_SIDE_KUBE;
	if (k->finish != s->finish)
		return k->finish < s->finish ? HB_SIDE_KUBE : HB_SIDE_SLURM;
	return k->cost < s->cost ? HB_SIDE_KUBE : HB_SIDE_SLURM;
}

/* The most a side may cost above base to meet the deadline; -1: no
 * limit. */
static int64_t max_premium(const struct hb_rule *ru, hb_money base)
{
	int64_t lim = -1;

	if (ru->premium_abs != HB_UNSET)
		lim = ru->premium_abs;
	if (ru->premium_bp != HB_UNSET) {
		int64_t p = (int64_t)((unsigned __int128)(base > 0 ? base : 0) *
				      (uint64_t)ru->premium_bp / 10000);

		if (lim < 0 || p < lim)
			lim = p;
	}
	return lim;
}

static void choose(struct ctx *c)
{
	struct hb_place_result *o = c->out;
	const struct hb_rule *ru = c->rule;
	bool cand[HB__SIDE_COUNT];
	int req = c->in->requested, base, other, ncand = 0;

	for (int s = 0; s < HB__SIDE_COUNT; s++) {
		cand[s] = o->alt[s].can_run && o->alt[s].allowed;
		ncand += cand[s];
	}
	if (req >= 0 && req < HB__SIDE_COUNT && ru->honour_target) {
		if (cand[req]) {
			factor(c, HB_PF_REQUESTED, req, 0, 0, NULL);
			o->target = (uint8_t)req;
			o->why = HB_WHY_REQUESTED;
			return;
		}
		factor(c, HB_PF_REQUEST_DENIED, req, o->alt[req].blocked_by, 0,
		       NULL);
	}
	if (!ncand) {
		o->target = HB_PLACE_REJECT;
		o->why = HB_WHY_NO_SIDE;
		return;
	}
	if (ru->pilot_bp > 0) {
		o->pilot_bucket =
			(uint32_t)(hb_place_hash(c->in->name, c->in->user,
						 c->in->seq) %
				   10000);
		o->pilot_selected = o->pilot_bucket < (uint32_t)ru->pilot_bp;
		factor(c, HB_PF_PILOT, o->pilot_selected ? HB_SIDE_KUBE : -1,
		       o->pilot_bucket, ru->pilot_bp, ru->name);
		if (o->pilot_selected && cand[HB_SIDE_KUBE] &&
		    o->alt[HB_SIDE_KUBE].meets_deadline) {
			o->target = HB_PLACE_KUBE;
			o->why = HB_WHY_PILOT;
			return;
		}
	}
	if (ncand == 1) {
		int s = cand[HB_SIDE_KUBE] ? HB_SIDE_KUBE : HB_SIDE_SLURM;

		if (o->alt[s].meets_deadline) {
			o->target = (uint8_t)s;
			o->why = HB_WHY_ONLY;
		} else if (ru->fallback == HB_FALLBACK_REJECT) {
			o->target = HB_PLACE_REJECT;
			o->why = HB_WHY_NO_DEADLINE;
		} else {
			o->target = (uint8_t)s;
			o->why = HB_WHY_FALLBACK;
		}
		return;
	}
	base = base_side(c);
	other = 1 - base;
	if (o->alt[base].meets_deadline) {
		o->target = (uint8_t)base;
		o->why = ru->prefer == HB_PREFER_CHEAPEST   ? HB_WHY_CHEAPEST
			 : ru->prefer == HB_PREFER_EARLIEST ? HB_WHY_EARLIEST
							    : HB_WHY_PREFERRED;
		return;
	}
	if (o->alt[other].meets_deadline) {
		int64_t prem = o->alt[other].cost - o->alt[base].cost;
		int64_t lim = max_premium(ru, o->alt[base].cost);

		if (prem > 0 && lim >= 0 && prem > lim) {
			factor(c, HB_PF_PREMIUM, other, prem, lim, ru->name);
			if (ru->fallback == HB_FALLBACK_REJECT) {
				o->target = HB_PLACE_REJECT;
				o->why = HB_WHY_NO_PREMIUM;
			} else {
				o->target = (uint8_t)base;
				o->why = HB_WHY_PREMIUM;
			}
			return;
		}
		o->target = (uint8_t)other;
		o->why = HB_WHY_DEADLINE;
		return;
	}
	if (ru->fallback == HB_FALLBACK_REJECT) {
		o->target = HB_PLACE_REJECT;
		o->why = HB_WHY_NO_DEADLINE;
		return;
	}
	/* Late anyway: where it finishes first, unless that costs more
	 * than the premium above the preferred side (which keeps the
	 * choice monotone: a side the premium ruled out while it met the
	 * deadline is not taken once it misses too). */
	o->target = (uint8_t)earliest(c, cand);
	o->why = HB_WHY_FALLBACK;
	if (o->target != base) {
		int64_t prem = o->alt[other].cost - o->alt[base].cost;
		int64_t lim = max_premium(ru, o->alt[base].cost);

		if (prem > 0 && lim >= 0 && prem > lim) {
			factor(c, HB_PF_PREMIUM, other, prem, lim, ru->name);
			o->target = (uint8_t)base;
		}
	}
}

int hb_place_decide(const struct hb_policy *pol, const struct hb_snapshot *snap,
		    const struct hb_place_input *in,
		    struct hb_place_result *out)
{
	struct ctx c = { .pol = pol, .snap = snap, .in = in, .out = out };
	int64_t runtime;

	/* the factors beyond nfactors are never read: clear the rest */
	memset(out, 0, offsetof(struct hb_place_result, factor));
	out->nfactors = 0;
	out->factors_truncated = false;
	out->target = HB_PLACE_REJECT;
	out->why = HB_WHY_NO_SIDE;
	c.now = out->now = snap->now;
	c.partition = in->partition ? in->partition : pol->default_partition;
	c.rule = out->rule = hb_policy_rule(pol, in->account, c.partition);
	if (!in->nodes || !in->cpus_per_node)
		return HB_EINVAL;
	c.pt = hb_policy_partition(pol, c.partition);
	if (c.partition && !c.pt && pol->npartitions)
		factor(&c, HB_PF_PARTITION, HB_SIDE_SLURM, 0, 0, c.partition);

	/* the job: run time, deadline, memory */
	runtime = in->time_limit;
	if (runtime <= 0) {
		runtime = c.pt && c.pt->default_time_limit
				  ? c.pt->default_time_limit
				  : pol->default_time_limit;
		factor(&c, HB_PF_TIME_LIMIT, -1, runtime, 0, NULL);
	}
	out->runtime = runtime;
	if (in->deadline) {
		out->deadline = in->deadline;
	} else if (c.pt && c.pt->default_deadline) {
		out->deadline = c.now + c.pt->default_deadline;
		out->deadline_default = true;
	}
	if (out->deadline)
		factor(&c, HB_PF_DEADLINE, -1, out->deadline - c.now, 0,
		       out->deadline_default ? c.partition : NULL);
	c.mem_per_node = in->mem_per_node_mb;
	if (!c.mem_per_node) {
		c.mem_per_node =
			pol->default_mem_per_cpu_mb * in->cpus_per_node;
		factor(&c, HB_PF_MEMORY, -1, (int64_t)c.mem_per_node, 0, NULL);
	}
	data(&c);

	for (int s = 0; s < HB__SIDE_COUNT; s++) {
		out->alt[s].can_run = out->alt[s].allowed = true;
		out->alt[s].runtime = runtime;
	}
	slurm_side(&c);
	kube_side(&c);
	for (int s = 0; s < HB__SIDE_COUNT; s++) {
		struct hb_place_alt *a = &out->alt[s];

		a->cost = sat_add(a->compute, a->egress);
		a->meets_deadline =
			!out->deadline || a->finish <= out->deadline;
		if (!a->can_run)
			continue;
		if (a->staging)
			factor(&c, HB_PF_STAGING, s, a->staging,
			       (int64_t)a->moved, NULL);
		factor(&c, HB_PF_COST, s, a->cost, a->egress, NULL);
		if (!a->meets_deadline)
			factor(&c, HB_PF_LATE, s, a->finish - out->deadline, 0,
			       NULL);
	}
	for (int s = 0; s < HB__SIDE_COUNT; s++)
		rules(&c, s);
	choose(&c);
	return 0;
}

int hb_place_charge(struct hb_snapshot *snap, const char *account,
		    int period, int side, hb_money cost)
{
	int rc;

	/* every period the snapshot tracks for the account contains now */
	for (uint32_t i = 0; i < snap->nspend; i++) {
		const struct hb_snap_spend *e = &snap->spend[i];

		if (e->period != period && !strcmp(e->account, account) &&
		    (rc = hb_snapshot_charge(snap, account, e->period, side,
					     cost)))
			return rc;
	}
	return hb_snapshot_charge(snap, account, period, side, cost);
}

int hb_place_commit(const struct hb_place_input *in,
		    const struct hb_place_result *res, struct hb_snapshot *snap)
{
	const struct hb_rule *ru = res->rule;

	if (res->target == HB_PLACE_REJECT || !in->account || !ru)
		return 0;
	return hb_place_charge(snap, in->account, ru->budget_period,
			       res->target, res->alt[res->target].cost);
}

/* ---- the explanation -------------------------------------------------- */

/*
 * The explanation is written for every decision the daemon makes, and
 * vsnprintf's set-up alone costs more than most of its lines.  tell() is
 * hb_buf_printf() for the conversions these lines use (%s, %d, %u, %lld,
 * %llu, a '0' flag and a width, %%): the pieces are gathered on the stack
 * and appended once.  Anything else, a NULL string included, goes to
 * hb_buf_vprintf() from the start, so the text is printf's either way.
 */
static int tell(struct hb_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What tell() has written and not yet appended to b. */
struct line {
	struct hb_buf *b;
	int rc;
	size_t n;
	char t[256];
};

/* n bytes at p onto the line; when they do not fit, what is there goes
 * to b first (and p too when it is longer than the line). */
static void add(struct line *l, const char *p, size_t n)
{
	if (n > sizeof(l->t) - l->n) {
		if (!l->rc && l->n)
			l->rc = hb_buf_append(l->b, l->t, l->n);
		l->n = 0;
		if (n > sizeof(l->t)) {
			if (!l->rc)
				l->rc = hb_buf_append(l->b, p, n);
			return;
		}
	}
	memcpy(l->t + l->n, p, n);
	l->n += n;
}

/* An integer as printf writes it with a '0' flag and a width (<= 20). */
static void add_int(struct line *l, bool neg, uint64_t u, unsigned width)
{
	char t[24], *p = t + sizeof(t);

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while ((size_t)(t + sizeof(t) - p) + neg < width)
		*--p = '0';
	if (neg)
		*--p = '-';
	add(l, p, (size_t)(t + sizeof(t) - p));
}

static int tell(struct hb_buf *b, const char *fmt, ...)
{
	struct line l; /* l.t is not cleared: only what is written is read */
	size_t mark = b->len;
	const char *p = fmt, *q, *s;
	va_list ap, ap0;
	int rc;

	l.b = b;
	l.rc = 0;
	l.n = 0;
	va_start(ap, fmt);
	va_copy(ap0, ap);
	while (*p) {
		unsigned width = 0, lng = 0;
		bool zero = false;
		long long v;
		unsigned long long u;

		q = strchrnul(p, '%');
		if (q > p) {
			add(&l, p, (size_t)(q - p));
			p = q;
			continue;
		}
		if (*++p == '%') {
			add(&l, p++, 1);
			continue;
		}
		if (*p == '0') {
			zero = true;
			p++;
		}
		while (*p >= '0' && *p <= '9' && width < 100)
			width = width * 10 + (unsigned)(*p++ - '0');
		while (*p == 'l') {
			lng++;
			p++;
		}
		if (width > 20 || (width && !zero) || lng > 2)
			goto slow;
		switch (*p++) {
		case 's':
			s = va_arg(ap, const char *);
			if (!s || width || lng)
				goto slow;
			add(&l, s, strlen(s));
			break;
		case 'd':
			v = lng == 2   ? va_arg(ap, long long)
			    : lng == 1 ? va_arg(ap, long)
				       : va_arg(ap, int);
			u = v < 0 ? 0 - (unsigned long long)v
				  : (unsigned long long)v;
			add_int(&l, v < 0, u, width);
			break;
		case 'u':
			u = lng == 2   ? va_arg(ap, unsigned long long)
			    : lng == 1 ? va_arg(ap, unsigned long)
				       : va_arg(ap, unsigned);
			add_int(&l, false, u, width);
			break;
		default:
			goto slow;
		}
	}
	va_end(ap);
	va_end(ap0);
	rc = l.rc;
	if (!rc && l.n)
		rc = hb_buf_append(b, l.t, l.n);
	if (rc) { /* as hb_buf_printf() leaves it */
		b->len = mark;
		if (b->data)
			b->data[mark] = '\0';
	}
	return rc;
slow:
	va_end(ap);
	b->len = mark;
	if (b->data)
		b->data[mark] = '\0';
	rc = hb_buf_vprintf(b, fmt, ap0);
	va_end(ap0);
	return rc;
}

static const struct hb_place_factor *find(const struct hb_place_result *r,
					  int kind, int side)
{
	for (uint32_t i = 0; i < r->nfactors; i++)
		if (r->factor[i].kind == kind && r->factor[i].side == side)
			return &r->factor[i];
	return NULL;
}

#define DUR(v)	 hb_format_duration((v), (char[32]){ 0 }, 32)
#define MONEY(v) hb_format_money((v), (char[48]){ 0 }, 48)
#define SIZE(v)	 hb_format_size((v), (char[32]){ 0 }, 32)

static const char *mem_text(uint64_t mib, char buf[32])
{
	hb_format_k8s_mem(mib, buf);
	return buf;
}

static const char *prefer_text(int p)
{
	static const char *const t[] = { "slurm", "kubernetes", "cheapest",
					 "earliest" };

	return p >= 0 && p < 4 ? t[p] : "?";
}

/* Why side s cannot run the job, or may not take it. */
static int reason(const struct hb_policy *pol, const struct hb_place_input *in,
		  const struct hb_place_result *r, int s, struct hb_buf *b)
{
	const struct hb_place_factor *f = find(r, r->alt[s].blocked_by, s);
	const struct hb_rule *ru = r->rule;
	const char *sym = pol->currency_symbol;
	char m1[32], m2[32];

	if (!f)
		return hb_buf_puts(b, "?");
	switch (f->kind) {
	case HB_PF_NOT_CONFIGURED:
		return hb_buf_puts(b, "the policy has no kubernetes section");
	case HB_PF_NODES:
		return tell(b, "%lld nodes, at most %lld per job",
			    (long long)f->value, (long long)f->limit);
	case HB_PF_NODE_CPUS:
		return tell(b, "%lld CPUs per node; its nodes have %lld",
			    (long long)f->value, (long long)f->limit);
	case HB_PF_NODE_MEMORY:
		return tell(b, "%s per node; its nodes have %s",
			    mem_text((uint64_t)f->value, m1),
			    mem_text((uint64_t)f->limit, m2));
	case HB_PF_NODE_GPUS:
		return tell(b, "%lld GPUs per node; its nodes have %lld",
			    (long long)f->value, (long long)f->limit);
	case HB_PF_GPU_TYPE:
		if (!in->gpu_type)
			return hb_buf_puts(b, "no GPUs");
		return tell(b,
			    "no GPU type that can take the %s "
			    "request",
			    f->subject);
	case HB_PF_MIG:
		return tell(b, "no MIG profile %s", f->subject);
	case HB_PF_SHARDS:
		return hb_buf_puts(b, "no GPU shards");
	case HB_PF_RDMA:
		if (!f->subject)
			return hb_buf_puts(b,
					   "no RDMA fabric for a multi-node job");
		return tell(b, "no RDMA fabric on %s; the job asks for it: %s",
			    hb_side_name(s), f->subject);
	case HB_PF_SITE:
		return hb_buf_puts(b, f->subject ? f->subject : "?");
	case HB_PF_BURST_NEVER:
		return tell(b, "rule %s says burst: never", ru->name);
	case HB_PF_BUDGET: {
		int64_t spent = f->value - r->alt[s].cost;

		return tell(b,
			    "rule %s's budget is %s%s per %s; %s%s spent, this "
			    "job would make it %s%s",
			    ru->name, sym, MONEY(f->limit),
			    hb_period_name(ru->budget_period), sym,
			    MONEY(spent), sym, MONEY(f->value));
	}
	case HB_PF_DATA_PINNED:
		return tell(b, "data under %s may not leave %s", f->subject,
			    hb_side_title(1 - s));
	case HB_PF_DATA_TOO_BIG:
		return tell(b,
			    "%s would move; rule %s keeps jobs with "
			    "their data above %s",
			    SIZE((uint64_t)f->value), ru->name,
			    SIZE((uint64_t)f->limit));
	case HB_PF_STAGING_SLACK:
		return tell(b,
			    "staging takes %s; rule %s allows %d.%02d%% "
			    "of the deadline's slack (%s)",
			    DUR(f->value), ru->name, ru->staging_slack_bp / 100,
			    ru->staging_slack_bp % 100, DUR(f->limit));
	default:
		return hb_buf_puts(b, hb_place_factor_name(f->kind));
	}
}

/* The single data location staged to side s, or NULL (none or several). */
static const struct hb_data_loc *
staged_from(const struct hb_policy *pol, const struct hb_place_input *in, int s)
{
	const struct hb_data_loc *one = NULL;

	for (uint32_t i = 0; i < in->ndata; i++) {
		const struct hb_data_loc *l =
			in->data[i] ? hb_policy_data(pol, in->data[i]) : NULL;

		if (!l || l->side == s || l == one)
			continue;
		if (one)
			return NULL;
		one = l;
	}
	return one;
}

/* A margin, rounded down to the minute once it is shown in minutes (the
 * formatter rounds up: a margin must not look larger than it is). */
static int64_t spare(int64_t s)
{
	return s >= 3600 ? s - s % 60 : s;
}

static int side_line(const struct hb_policy *pol,
		     const struct hb_place_input *in,
		     const struct hb_place_result *r, int s, struct hb_buf *b)
{
	const struct hb_place_alt *a = &r->alt[s];
	const struct hb_place_factor *w = find(r, HB_PF_WAIT, s);
	const char *sym = pol->currency_symbol;
	int rc;

	rc = tell(b, "%s (%s %s): ", hb_side_title(s),
		  s == HB_SIDE_SLURM ? "partition" : "queue",
		  a->resource ? a->resource : "(none)");
	if (rc)
		return rc;
	if (!a->can_run) {
		if ((rc = hb_buf_puts(b, "cannot run the job: ")) ||
		    (rc = reason(pol, in, r, s, b)))
			return rc;
		return hb_buf_putc(b, '\n');
	}
	if (in->gpus_per_node && a->fits_now)
		rc = tell(b, "%llu\xc3\x97%s free now",
			  (unsigned long long)in->gpus_per_node * in->nodes,
			  a->gpu_type ? a->gpu_type : "GPU");
	else if (a->fits_now)
		rc = tell(b, "%s now",
			  s == HB_SIDE_SLURM ? "idle nodes" : "free capacity");
	else if (a->estimated)
		rc = tell(b, "%s in %s (%lld pending)",
			  s == HB_SIDE_SLURM ? "expected start" : "admitted",
			  DUR(a->wait), w ? (long long)w->limit : 0LL);
	else
		rc = tell(b, "no estimate, assuming a wait of %s",
			  DUR(a->wait));
	if (!rc && a->moved) {
		const struct hb_data_loc *l = staged_from(pol, in, s);

		rc = tell(b, ", staging %s", SIZE(a->moved));
		if (!rc && l && l->bandwidth)
			rc = tell(b, " at %s",
				  hb_format_bandwidth(l->bandwidth,
						      (char[32]){ 0 }, 32));
		if (!rc)
			rc = tell(b, " takes %s", DUR(a->staging));
	}
	if (!rc && s == HB_SIDE_KUBE && pol->kube_startup)
		rc = tell(b, ", start-up %s", DUR(pol->kube_startup));
	if (!rc)
		rc = tell(b, ", finish in %s", DUR(a->finish - r->now));
	if (!rc && r->deadline && a->meets_deadline)
		rc = tell(b, ", meets the deadline with %s to spare",
			  DUR(spare(r->deadline - a->finish)));
	else if (!rc && r->deadline)
		rc = tell(b, ", misses the deadline (%s) by %s",
			  DUR(r->deadline - r->now),
			  DUR(a->finish - r->deadline));
	if (!rc)
		rc = tell(b, "; cost %s%s", sym, MONEY(a->cost));
	if (!rc && a->egress)
		rc = tell(b, " (+%s%s egress)", sym, MONEY(a->egress));
	if (!rc && !a->allowed) {
		if ((rc = hb_buf_puts(b, "; not allowed: ")) ||
		    (rc = reason(pol, in, r, s, b)))
			return rc;
	}
	return rc ? rc : hb_buf_putc(b, '\n');
}

static int decision_line(const struct hb_policy *pol,
			 const struct hb_place_result *r, struct hb_buf *b)
{
	const struct hb_rule *ru = r->rule;
	const char *sym = pol->currency_symbol;
	int t = r->target, base, other;
	const struct hb_place_factor *p;
	int rc;

	if (t == HB_PLACE_REJECT)
		rc = hb_buf_puts(b, "decision: reject: ");
	else
		rc = tell(b, "decision: %s (%s %s): ", hb_side_name(t),
			  t == HB_SIDE_SLURM ? "partition" : "queue",
			  r->alt[t].resource ? r->alt[t].resource : "(none)");
	if (rc)
		return rc;
	other = t < HB_PLACE_REJECT ? 1 - t : HB_SIDE_KUBE;
	switch (r->why) {
	case HB_WHY_REQUESTED:
		rc = tell(b,
			  "the job asks for %s "
			  "(--hpcbridge-target)",
			  hb_side_title(t));
		break;
	case HB_WHY_PILOT:
		rc = tell(b,
			  "chosen by rule %s's migration pilot "
			  "(bucket %u is below %d.%02d%%)",
			  ru->name, r->pilot_bucket, ru->pilot_bp / 100,
			  ru->pilot_bp % 100);
		break;
	case HB_WHY_PREFERRED:
		rc = tell(b, "rule %s prefers %s%s", ru->name, hb_side_title(t),
			  r->deadline ? ", and it meets the deadline" : "");
		break;
	case HB_WHY_CHEAPEST:
		rc = tell(b,
			  "%s is the cheaper side%s (%s%s against "
			  "%s%s)",
			  hb_side_title(t),
			  r->deadline ? " and meets the deadline" : "", sym,
			  MONEY(r->alt[t].cost), sym,
			  MONEY(r->alt[other].cost));
		break;
	case HB_WHY_EARLIEST:
		rc = tell(b, "%s finishes first (in %s against %s)",
			  hb_side_title(t), DUR(r->alt[t].finish - r->now),
			  DUR(r->alt[other].finish - r->now));
		break;
	case HB_WHY_DEADLINE:
		rc = tell(b, "%s would miss the deadline; %s meets it",
			  hb_side_title(other), hb_side_title(t));
		if (!rc && r->alt[t].cost > r->alt[other].cost)
			rc = tell(b, " for %s%s more", sym,
				  MONEY(r->alt[t].cost - r->alt[other].cost));
		break;
	case HB_WHY_ONLY:
		rc = tell(b, "the only side that can take it%s",
			  r->deadline ? ", and it meets the deadline" : "");
		break;
	case HB_WHY_PREMIUM:
	case HB_WHY_NO_PREMIUM:
		base = t == HB_PLACE_REJECT ? HB_SIDE_SLURM : t;
		p = find(r, HB_PF_PREMIUM, 1 - base);
		if (!p) {
			base = 1 - base;
			p = find(r, HB_PF_PREMIUM, 1 - base);
		}
		rc = tell(b,
			  "%s would meet the deadline but costs %s%s more than "
			  "%s, above rule %s's max premium of %s%s",
			  hb_side_title(1 - base), sym, MONEY(p ? p->value : 0),
			  hb_side_title(base), ru->name, sym,
			  MONEY(p ? p->limit : 0));
		if (!rc && r->why == HB_WHY_PREMIUM)
			rc = tell(b, "; runs on %s, %s late",
				  hb_side_title(base),
				  DUR(r->alt[base].finish - r->deadline));
		else if (!rc)
			rc = hb_buf_puts(b, "; the rule's fallback is reject");
		break;
	case HB_WHY_FALLBACK:
		p = find(r, HB_PF_PREMIUM, other);
		if (p)
			rc = tell(b,
				  "no side meets the deadline; %s would finish "
				  "first but costs %s%s more than %s, above "
				  "rule %s's max premium of %s%s; runs on %s, "
				  "%s late",
				  hb_side_title(other), sym, MONEY(p->value),
				  hb_side_title(t), ru->name, sym,
				  MONEY(p->limit), hb_side_title(t),
				  DUR(r->alt[t].finish - r->deadline));
		else
			rc = tell(b,
				  "no side meets the deadline; "
				  "fallback earliest: %s finishes "
				  "first, %s late",
				  hb_side_title(t),
				  DUR(r->alt[t].finish - r->deadline));
		break;
	case HB_WHY_NO_SIDE:
		rc = hb_buf_puts(b, "no side can run the job, or may take it");
		break;
	case HB_WHY_NO_DEADLINE:
		rc = tell(b,
			  "no side meets the deadline, and rule "
			  "%s's fallback is reject",
			  ru->name);
		break;
	}
	return rc ? rc : hb_buf_putc(b, '\n');
}

static int rule_line(const struct hb_policy *pol, const struct hb_rule *ru,
		     struct hb_buf *b)
{
	const char *sym = pol->currency_symbol;
	int rc;

	if (ru->index)
		rc = tell(b, "rule: %s (%s:%u): ", ru->name, pol->source_name,
			  ru->line);
	else
		rc = hb_buf_puts(b, "rule: defaults (no rule matches): ");
	if (!rc)
		rc = tell(b, "prefer %s, burst %s, fallback %s",
			  prefer_text(ru->prefer),
			  ru->burst ? "allowed" : "never",
			  ru->fallback == HB_FALLBACK_REJECT ? "reject"
							     : "earliest");
	if (!rc && ru->budget != HB_UNSET)
		rc = tell(b, ", budget %s%s per %s%s", sym, MONEY(ru->budget),
			  hb_period_name(ru->budget_period),
			  ru->budget_sides == (1u << HB_SIDE_KUBE)
				  ? " on kubernetes"
			  : ru->budget_sides == (1u << HB_SIDE_SLURM)
				  ? " on slurm"
				  : "");
	if (!rc && ru->premium_bp != HB_UNSET)
		rc = tell(b, ", max premium %d.%02d%%", ru->premium_bp / 100,
			  ru->premium_bp % 100);
	if (!rc && ru->premium_abs != HB_UNSET)
		rc = tell(b, ", max premium %s%s", sym, MONEY(ru->premium_abs));
	if (!rc && ru->keep_with_data_over)
		rc = tell(b, ", keep with data over %s",
			  SIZE(ru->keep_with_data_over));
	if (!rc && ru->staging_slack_bp != HB_UNSET)
		rc = tell(b, ", staging at most %d.%02d%% of slack",
			  ru->staging_slack_bp / 100,
			  ru->staging_slack_bp % 100);
	if (!rc && ru->pilot_bp)
		rc = tell(b, ", pilot %d.%02d%% to kubernetes",
			  ru->pilot_bp / 100, ru->pilot_bp % 100);
	return rc ? rc : hb_buf_putc(b, '\n');
}

static int job_line(const struct hb_place_input *in,
		    const struct hb_place_result *r, struct hb_buf *b)
{
	const struct hb_place_factor *mem = find(r, HB_PF_MEMORY, -1);
	char m[32];
	int rc;

	rc = tell(b, "job: %u node%s \xc3\x97 %u CPU%s, %s%s%s", in->nodes,
		  in->nodes == 1 ? "" : "s", in->cpus_per_node,
		  in->cpus_per_node == 1 ? "" : "s",
		  mem_text(mem ? (uint64_t)mem->value : in->mem_per_node_mb, m),
		  mem ? " (assumed)" : "",
		  in->whole_node ? " (whole node)" : "");
	if (!rc && in->gpus_per_node)
		rc = tell(b, ", %u\xc3\x97%s", in->gpus_per_node,
			  in->gpu_type ? in->gpu_type : "GPU");
	if (!rc && in->shards_per_node)
		rc = tell(b, ", %u shard%s", in->shards_per_node,
			  in->shards_per_node == 1 ? "" : "s");
	if (!rc)
		rc = tell(b, "%s; runs %s%s", in->nodes > 1 ? " each" : "",
			  DUR(r->runtime),
			  find(r, HB_PF_TIME_LIMIT, -1)
				  ? " (no time limit given: assumed)"
				  : " (its time limit)");
	if (rc)
		return rc;
	if (!r->deadline)
		rc = hb_buf_puts(b, "; no deadline");
	else if (r->deadline_default)
		rc = tell(b,
			  "; deadline in %s (partition %s's "
			  "default)",
			  DUR(r->deadline - r->now),
			  r->alt[HB_SIDE_SLURM].resource);
	else if (in->deadline_line)
		rc = tell(b, "; deadline in %s (%s:%u)",
			  DUR(r->deadline - r->now),
			  in->source_name ? in->source_name : "job",
			  in->deadline_line);
	else
		rc = tell(b, "; deadline in %s", DUR(r->deadline - r->now));
	return rc ? rc : hb_buf_putc(b, '\n');
}

/* Lines for the factors no other line tells. */
static int other_lines(const struct hb_policy *pol,
		       const struct hb_place_input *in,
		       const struct hb_place_result *r, struct hb_buf *b)
{
	const struct hb_rule *ru = r->rule;
	int rc = 0;

	for (uint32_t i = 0; !rc && i < r->nfactors; i++) {
		const struct hb_place_factor *f = &r->factor[i];

		switch (f->kind) {
		case HB_PF_PARTITION:
			rc = tell(b,
				  "note: partition %s is not in the "
				  "policy: its limits are unknown, "
				  "slurm.rates apply\n",
				  f->subject);
			break;
		case HB_PF_DATA_UNPLACED:
			rc = tell(b,
				  "note: %lld data input%s in no data "
				  "location (%s%s): not staged\n",
				  (long long)f->value, f->value == 1 ? "" : "s",
				  f->subject, f->value > 1 ? ", ..." : "");
			break;
		case HB_PF_DATA_SIZE:
			rc = tell(b,
				  "note: the size of %s is unknown "
				  "(not in the policy or the "
				  "snapshot): counted as 0\n",
				  f->subject);
			break;
		case HB_PF_REQUEST_DENIED:
			rc = tell(b,
				  "note: the job asks for %s "
				  "(--hpcbridge-target), which "
				  "cannot take it\n",
				  hb_side_title(f->side));
			break;
		case HB_PF_PILOT:
			if (r->why == HB_WHY_PILOT)
				break;
			rc = tell(b,
				  "pilot: bucket %lld, share %d.%02d%%: %s\n",
				  (long long)f->value, ru->pilot_bp / 100,
				  ru->pilot_bp % 100,
				  !r->pilot_selected ? "not selected"
				  : !r->alt[HB_SIDE_KUBE].can_run ||
						  !r->alt[HB_SIDE_KUBE].allowed
					  ? "selected, but Kubernetes cannot "
					    "take it"
					  : "selected, but Kubernetes misses "
					    "the deadline");
			break;
		default:
			break;
		}
	}
	if (!rc && r->factors_truncated)
		rc = hb_buf_puts(b, "note: more factors than the result holds; "
				    "the list is cut\n");
	(void)pol;
	(void)in;
	return rc;
}

int hb_place_explain(const struct hb_policy *pol,
		     const struct hb_place_input *in,
		     const struct hb_place_result *r, struct hb_buf *out)
{
	size_t mark = out->len;
	int rc;

	if ((rc = decision_line(pol, r, out)) ||
	    (rc = rule_line(pol, r->rule, out)) ||
	    (rc = job_line(in, r, out)) ||
	    (rc = side_line(pol, in, r, HB_SIDE_SLURM, out)) ||
	    (rc = side_line(pol, in, r, HB_SIDE_KUBE, out)) ||
	    (rc = other_lines(pol, in, r, out))) {
		out->len = mark;
		if (out->data)
			out->data[mark] = '\0';
	}
	return rc;
}

/* ---- the document ----------------------------------------------------- */

static void emit_instant(struct hb_emit *e, const char *k, int64_t t)
{
	char b[32];

	hb_emit_str(e, k, hb_format_instant(t, b, sizeof(b)));
}

static void emit_money(struct hb_emit *e, const char *k, const char *kmicro,
		       hb_money v)
{
	char b[48];

	hb_emit_str(e, k, hb_format_money(v, b, sizeof(b)));
	hb_emit_num(e, kmicro, (double)v);
}

static void emit_alt(struct hb_emit *e, const struct hb_place_result *r, int s)
{
	const struct hb_place_alt *a = &r->alt[s];

	hb_emit_obj(e, NULL);
	hb_emit_str(e, "side", hb_side_name(s));
	hb_emit_str_or_null(e, "resource", a->resource);
	hb_emit_str_or_null(e, "gpu_type", a->gpu_type);
	hb_emit_bool(e, "can_run", a->can_run);
	hb_emit_bool(e, "allowed", a->allowed);
	hb_emit_str_or_null(e, "blocked_by",
			 a->blocked_by ? hb_place_factor_name(a->blocked_by)
				       : NULL);
	hb_emit_bool(e, "meets_deadline", a->meets_deadline);
	hb_emit_bool(e, "fits_now", a->fits_now);
	hb_emit_bool(e, "estimated", a->estimated);
	hb_emit_num(e, "wait_s", (double)a->wait);
	hb_emit_num(e, "staging_s", (double)a->staging);
	hb_emit_num(e, "moved_bytes", (double)(int64_t)a->moved);
	hb_emit_num(e, "runtime_s", (double)a->runtime);
	emit_instant(e, "start", a->start);
	emit_instant(e, "finish", a->finish);
	hb_emit_num(e, "start_in_s", (double)(a->start - r->now));
	hb_emit_num(e, "finish_in_s", (double)(a->finish - r->now));
	emit_money(e, "cost", "cost_micro", a->cost);
	emit_money(e, "compute", "compute_micro", a->compute);
	emit_money(e, "egress", "egress_micro", a->egress);
	hb_emit_end(e);
}

static void emit_factor(struct hb_emit *e, const struct hb_place_factor *f)
{
	hb_emit_obj(e, NULL);
	hb_emit_str(e, "factor", hb_place_factor_name(f->kind));
	hb_emit_str_or_null(e, "side", f->side >= 0 ? hb_side_name(f->side) : NULL);
	hb_emit_bool(e, "rule", hb_place_factor_is_rule(f->kind));
	hb_emit_num(e, "value", (double)f->value);
	hb_emit_num(e, "limit", (double)f->limit);
	hb_emit_str_or_null(e, "subject", f->subject);
	hb_emit_end(e);
}

/* What the decision was made from, as far as the job goes; absent
 * optional fields are left out. */
static void emit_job(struct hb_emit *e, const struct hb_place_input *in)
{
	hb_emit_obj(e, "job");
	hb_emit_str_or_null(e, "source", in->source_name);
	if (in->name)
		hb_emit_str(e, "name", in->name);
	if (in->user)
		hb_emit_str(e, "user", in->user);
	if (in->account)
		hb_emit_str(e, "account", in->account);
	if (in->partition)
		hb_emit_str(e, "partition", in->partition);
	hb_emit_num(e, "seq", (double)(int64_t)in->seq);
	hb_emit_num(e, "nodes", (double)in->nodes);
	hb_emit_num(e, "cpus_per_node", (double)in->cpus_per_node);
	hb_emit_num(e, "mem_per_node_mb", (double)(int64_t)in->mem_per_node_mb);
	hb_emit_bool(e, "whole_node", in->whole_node);
	hb_emit_num(e, "gpus_per_node", (double)in->gpus_per_node);
	if (in->gpu_type)
		hb_emit_str(e, "gpu_type", in->gpu_type);
	hb_emit_num(e, "shards_per_node", (double)in->shards_per_node);
	hb_emit_bool(e, "needs_rdma", in->needs_rdma);
	if (in->rdma_why[0])
		hb_emit_str(e, "rdma_why", in->rdma_why);
	hb_emit_num(e, "time_limit_s", (double)in->time_limit);
	if (in->requested >= 0)
		hb_emit_str(e, "requested", hb_side_name(in->requested));
	if (in->slurm_start)
		emit_instant(e, "slurm_start", in->slurm_start);
	hb_emit_arr(e, "data");
	for (uint32_t i = 0; i < in->ndata; i++)
		hb_emit_str_or_null(e, NULL, in->data[i]);
	hb_emit_end(e);
	hb_emit_end(e);
}

int hb_place_emit(struct hb_emit *e, const char *key,
		  const struct hb_policy *pol, const struct hb_place_input *in,
		  const struct hb_place_result *r, const char *explanation)
{
	hb_emit_obj(e, key);
	hb_emit_str(e, "target", hb_place_target_name(r->target));
	hb_emit_str(e, "why", hb_place_why_name(r->why));
	hb_emit_str_or_null(e, "resource",
			 r->target != HB_PLACE_REJECT
				 ? r->alt[r->target].resource
				 : NULL);
	hb_emit_obj(e, "rule");
	hb_emit_str(e, "name", r->rule->name);
	hb_emit_num(e, "index", (double)r->rule->index);
	hb_emit_num(e, "line", (double)r->rule->line);
	hb_emit_end(e);
	hb_emit_str(e, "policy", pol->source_name);
	hb_emit_str(e, "currency", pol->currency);
	emit_instant(e, "now", r->now);
	if (r->deadline) {
		emit_instant(e, "deadline", r->deadline);
		hb_emit_str(e, "deadline_source",
			    r->deadline_default ? "partition" : "job");
	} else {
		hb_emit_null(e, "deadline");
		hb_emit_null(e, "deadline_source");
	}
	hb_emit_num(e, "runtime_s", (double)r->runtime);
	if (r->rule->pilot_bp) {
		hb_emit_obj(e, "pilot");
		hb_emit_num(e, "bucket", (double)r->pilot_bucket);
		hb_emit_num(e, "share_bp", (double)r->rule->pilot_bp);
		hb_emit_bool(e, "selected", r->pilot_selected);
		hb_emit_end(e);
	}
	hb_emit_arr(e, "alternatives");
	for (int s = 0; s < HB__SIDE_COUNT; s++)
		emit_alt(e, r, s);
	hb_emit_end(e);
	hb_emit_arr(e, "factors");
	for (uint32_t i = 0; i < r->nfactors; i++)
		emit_factor(e, &r->factor[i]);
	hb_emit_end(e);
	hb_emit_bool(e, "factors_truncated", r->factors_truncated);
	emit_job(e, in);
	if (explanation) {
		hb_emit_arr(e, "explanation");
		for (const char *p = explanation, *nl;
		     (nl = strchr(p, '\n')); p = nl + 1)
			hb_emit_strn(e, NULL, p, (size_t)(nl - p));
		hb_emit_end(e);
	}
	return hb_emit_end(e);
}

cJSON *hb_place_to_json(const struct hb_policy *pol,
			const struct hb_place_input *in,
			const struct hb_place_result *r)
{
	struct hb_emit *e = hb_emit_new(HB_EMIT_TREE, NULL);
	struct hb_buf text;
	cJSON *doc = NULL;

	hb_buf_init(&text, 1u << 20);
	if (e && !hb_place_explain(pol, in, r, &text)) {
		hb_place_emit(e, NULL, pol, in, r, text.data ? text.data : "");
		if (!hb_emit_done(e))
			hb_emit_take(e, &doc);
	}
	hb_emit_free(e);
	hb_buf_free(&text);
	return doc;
}
