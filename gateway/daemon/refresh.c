/*
 * refresh.c - what keeps the decider's snapshot current, on workers and
 * timers of the loop: Slurm's estimates, Kubernetes' free capacity, the
 * sizes of the policy's data locations, and what each account has spent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/file.h"
#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/log.h"

/*
 * Every placement.refresh_s a worker asks Slurm, for each partition the
 * placement knows, when a probe job would start and how many nodes are
 * idle; the loop folds the answer into the decider's snapshot.
 */
struct estimate_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_slurm_side_ops be;
	struct hb_decider_part *v;
	size_t n;
	int64_t at; /* Unix seconds the refresh began */
	int rc;
	struct hb_err err;
};

static void estimate_run(struct hb_task *ht)
{
	struct estimate_task *et = (struct estimate_task *)ht;

	et->at = hb_clock_wall_ms() / 1000;
	et->rc = et->be.slurm_estimate(et->be.ctx, et->v, et->n, &et->err);
}

static void estimate_done(struct hb_task *ht)
{
	struct estimate_task *et = (struct estimate_task *)ht;
	struct hb_daemon *d = et->d;

	d->estimating = 0;
	if (et->rc)
		hb_log(HB_LOG_WARN, "Slurm estimates: %s", et->err.msg);
	else if (hb_decider_set_slurm(d->dc, et->v, et->n, et->at))
		hb_log(HB_LOG_WARN, "Slurm estimates: out of memory");
	free(et->v);
	free(et);
}

/*
 * Beside it, a worker lists the cluster's nodes and pods through the
 * remote backend and measures its free capacity (kube_capacity.h); the
 * loop writes it into the snapshot.  The task carries its own copy of the
 * GPU settings: a reload may free the configuration meanwhile.
 */
struct kcap_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_kcap_opts o;
	struct hb_selector_map *maps;
	struct hb_kv *kvs;
	char *gpu_resource;
	char *queue; /* kubernetes.queues.default: Kueue's wait */
	struct hb_kcap cap;
	int rc;
	struct hb_err err;
};

static void kcap_free(struct kcap_task *kt)
{
	for (uint32_t i = 0; i < kt->o.ngpu_types; i++) {
		free((char *)kt->maps[i].key);
		for (uint32_t j = 0; j < kt->maps[i].nlabels; j++) {
			free((char *)kt->maps[i].labels[j].key);
			free((char *)kt->maps[i].labels[j].value);
		}
	}
	free(kt->maps);
	free(kt->kvs);
	free(kt->gpu_resource);
	free(kt->queue);
	free(kt);
}

/* kt's copy of the configuration's GPU settings. */
static int kcap_opts(struct kcap_task *kt, const struct hb_config *cfg)
{
	uint32_t n = cfg->k8s.ngpu_type_selectors, nkv = 0;
	const struct hb_selector_map *src = cfg->k8s.gpu_type_selectors;

	for (uint32_t i = 0; i < n; i++)
		nkv += src[i].nlabels;
	kt->maps = n ? calloc(n, sizeof(*kt->maps)) : NULL;
	kt->kvs = nkv ? calloc(nkv, sizeof(*kt->kvs)) : NULL;
	if ((n && !kt->maps) || (nkv && !kt->kvs))
		return HB_ENOMEM;
	kt->o.gpu_types = kt->maps;
	nkv = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct hb_selector_map *m = &kt->maps[i];

		kt->o.ngpu_types = i + 1;
		m->labels = &kt->kvs[nkv];
		if (!(m->key = strdup(src[i].key)))
			return HB_ENOMEM;
		for (uint32_t j = 0; j < src[i].nlabels; j++, nkv++) {
			m->nlabels = j + 1;
			kt->kvs[nkv].key = strdup(src[i].labels[j].key);
			kt->kvs[nkv].value = strdup(src[i].labels[j].value);
			if (!kt->kvs[nkv].key || !kt->kvs[nkv].value)
				return HB_ENOMEM;
		}
	}
	if (cfg->k8s.gpu_resource &&
	    !(kt->gpu_resource = strdup(cfg->k8s.gpu_resource)))
		return HB_ENOMEM;
	kt->o.gpu_resource = kt->gpu_resource;
	if (cfg->k8s.default_queue &&
	    !(kt->queue = strdup(cfg->k8s.default_queue)))
		return HB_ENOMEM;
	kt->o.kueue_queue = kt->queue;
	return 0;
}

static void kcap_run(struct hb_task *ht)
{
	struct kcap_task *kt = (struct kcap_task *)ht;

	kt->rc = hb_remote_capacity(kt->d->remote, &kt->o, &kt->cap,
				     &kt->err);
}

static void kcap_done(struct hb_task *ht)
{
	struct kcap_task *kt = (struct kcap_task *)ht;
	struct hb_daemon *d = kt->d;

	d->measuring = 0;
	if (kt->rc) {
		/* One warning while it keeps failing; the last values stay. */
		if (!d->kcap_failing)
			hb_log(HB_LOG_WARN,
			       "Kubernetes capacity: %s (the last values stay)",
			       kt->err.msg);
		d->kcap_failing = 1;
	} else if (hb_decider_set_kube(d->dc, &kt->cap)) {
		hb_log(HB_LOG_WARN, "Kubernetes capacity: out of memory");
	} else {
		if (d->kcap_failing)
			hb_log(HB_LOG_INFO, "Kubernetes capacity: read again");
		d->kcap_failing = 0;
		hb_logf(HB_LOG_DEBUG,
			(struct hb_log_field[]){
				HB_LOG_INT("nodes", kt->cap.nodes),
				HB_LOG_INT("millicpus", kt->cap.free_millicpus),
				HB_LOG_INT("pending", kt->cap.pending) },
			3, "Kubernetes capacity");
	}
	/* Kueue's wait: said the first time, and each time it starts or
	 * stops answering (1 answering, 2 failing) */
	if (!kt->rc && kt->cap.queue_note[0] &&
	    d->kqueue_state != 2 - kt->cap.queue_known) {
		hb_log(kt->cap.queue_known ? HB_LOG_INFO : HB_LOG_WARN, "%s",
		       kt->cap.queue_note);
		d->kqueue_state = 2 - kt->cap.queue_known;
	}
	kcap_free(kt);
}

/* Whether a refresh last made at last (0: never) is due again, every
 * interval_s seconds. */
static int refresh_due(int64_t last, int64_t now, uint32_t interval_s)
{
	return !last || now - last >= (int64_t)interval_s * 1000;
}

static void refresh_capacity(struct hb_daemon *d, int64_t now)
{
	struct kcap_task *kt;

	if (d->measuring || !d->remote || !d->remote->ops->capacity ||
	    !refresh_due(d->last_kcap, now, d->cfg.placement_refresh_s))
		return;
	d->last_kcap = now;
	if (!(kt = calloc(1, sizeof(*kt))))
		return;
	kt->t.run = kcap_run;
	kt->t.done = kcap_done;
	kt->d = d;
	if (kcap_opts(kt, &d->cfg)) {
		kcap_free(kt);
		return;
	}
	d->measuring = 1;
	if (hb_pool_submit(d->pool, &kt->t)) {
		d->measuring = 0;
		kcap_free(kt);
	}
}

/*
 * The policy's data locations on a file system that give no size are
 * measured on a worker every placement.data_refresh_s (hb_path_size); a
 * location that cannot be measured (missing, unreadable, too many files,
 * too slow) keeps its last size, or none, and the engine says its size is
 * unknown.  The task owns copies of the paths: a reload may free them.
 */
#define DATA_MAX_ENTRIES (10u * 1000 * 1000)
#define DATA_TIMEOUT_MS	 (5 * 60 * 1000)

struct size_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	size_t n;
	char **paths;
	uint64_t *bytes;
	int *rc;
	struct hb_err *err;
};

static void size_free(struct size_task *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->paths[i]);
	free(st->paths);
	free(st->bytes);
	free(st->rc);
	free(st->err);
	free(st);
}

static void size_run(struct hb_task *ht)
{
	struct size_task *st = (struct size_task *)ht;

	for (size_t i = 0; i < st->n; i++)
		st->rc[i] = hb_path_size(st->paths[i], DATA_MAX_ENTRIES,
					 DATA_TIMEOUT_MS, &st->bytes[i],
					 &st->err[i]);
}

static void size_done(struct hb_task *ht)
{
	struct size_task *st = (struct size_task *)ht;

	st->d->sizing = 0;
	for (size_t i = 0; i < st->n; i++) {
		if (st->rc[i])
			hb_log(HB_LOG_WARN, "data size: %s", st->err[i].msg);
		else if (hb_decider_set_data(st->d->dc, st->paths[i],
					     st->bytes[i]))
			hb_log(HB_LOG_WARN, "data size: out of memory");
	}
	size_free(st);
}

static void refresh_data(struct hb_daemon *d, int64_t now)
{
	const char **paths;
	size_t n = hb_decider_data_paths(d->dc, &paths);
	struct size_task *st;

	if (!n || d->sizing || !d->cfg.placement_data_refresh_s ||
	    !refresh_due(d->last_sizing, now, d->cfg.placement_data_refresh_s))
		return;
	d->last_sizing = now;
	if (!(st = calloc(1, sizeof(*st))))
		return;
	st->paths = calloc(n, sizeof(*st->paths));
	st->bytes = calloc(n, sizeof(*st->bytes));
	st->rc = calloc(n, sizeof(*st->rc));
	st->err = calloc(n, sizeof(*st->err));
	if (!st->paths || !st->bytes || !st->rc || !st->err) {
		size_free(st);
		return;
	}
	for (; st->n < n; st->n++)
		if (!(st->paths[st->n] = strdup(paths[st->n]))) {
			size_free(st);
			return;
		}
	st->t.run = size_run;
	st->t.done = size_done;
	st->d = d;
	d->sizing = 1;
	if (hb_pool_submit(d->pool, &st->t)) {
		d->sizing = 0;
		size_free(st);
	}
}

void hbd_refresh_estimates(struct hb_daemon *d, int64_t now)
{
	const char *const *names;
	struct estimate_task *et;
	size_t n;

	if (d->stopping || !d->pool)
		return;
	refresh_capacity(d, now);
	refresh_data(d, now);
	if (!d->be.slurm_estimate || d->estimating ||
	    !refresh_due(d->last_estimate, now, d->cfg.placement_refresh_s))
		return;
	d->last_estimate = now;
	n = hb_decider_partitions(d->dc, &names);
	if (!n || !(et = calloc(1, sizeof(*et))))
		return;
	if (!(et->v = calloc(n, sizeof(*et->v)))) {
		free(et);
		return;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(et->v[i].name, sizeof(et->v[i].name), "%s", names[i]);
	et->n = n;
	et->t.run = estimate_run;
	et->t.done = estimate_done;
	et->d = d;
	et->be = d->be;
	d->estimating = 1;
	if (hb_pool_submit(d->pool, &et->t)) {
		d->estimating = 0;
		free(et->v);
		free(et);
	}
}

/* Budgets: what each account has spent this period, loaded again from
 * the store when a day begins, or after a batch was rolled back (what
 * was counted in memory for it did not happen), looked at once a second
 * at loop time mono; or at once when forced.  In between, decisions,
 * ends and metering count in memory (metering.c). */
void hbd_refresh_spend(struct hb_daemon *d, int64_t mono, int force)
{
	struct hb_err err = { 0 };
	int64_t now;

	if (!force && !refresh_due(d->last_spend_check, mono, 1))
		return;
	d->last_spend_check = mono;
	now = hb_clock_wall_ms() / 1000;
	if (!force && !d->spend_dirty && !hb_decider_spend_stale(d->dc, now))
		return;
	if (hb_decider_load_spend(d->dc, d->st, now, d->budget_actuals,
				  &err)) {
		hb_log(HB_LOG_WARN, "budgets: %s", err.msg);
		return;
	}
	d->spend_dirty = 0;
}
