/*
 * catalogue.c - hpcbridged's metrics: the process's registry, its
 * families, and the one-line hooks the parts that own an event call.
 * Each hook does nothing until hb_metrics_init() made the registry.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "hpcbridge/error.h"
#include "hpcbridge/metrics.h"

/* Seconds: a decision takes milliseconds, a commit less (the daemon
 * syncs apart) or tens of them with a sync (the CLI); the top buckets
 * catch a stalled disk, or a decision near the plugin's timeout. */
static const double decision_bounds[] = { 0.0005, 0.001, 0.0025, 0.005,
					  0.01,	  0.025, 0.05,	 0.1,
					  0.25,	  0.5,	 1,	 2.5 };
static const double commit_bounds[] = { 0.0001, 0.0005, 0.001, 0.0025,
					0.005,	0.01,	0.025, 0.05,
					0.1,	0.25,	0.5,   1 };

#define NB(a) (sizeof(a) / sizeof((a)[0]))

static const char *const sides[] = { "slurm", "kube" };

static struct hb_metrics *_Atomic global;

/* The families, found once: the hooks only look up their series. */
static struct hb_metric *m_decisions, *m_decision_s, *m_side_err, *m_side_retry,
	*m_watch, *m_commit_s, *m_accepted, *m_refused, *m_open, *m_notices,
	*m_notices_bad;
/* The series with no labels, and each side's, made once: their hooks,
 * some on worker and sync threads, take no lock at all. */
static struct hb_series *s_decision_s, *s_commit_s, *s_accepted, *s_refused,
	*s_open, *s_err[2], *s_retry[2], *s_notices, *s_notices_bad;

struct family {
	struct hb_metric **out;
	struct hb_series **one; /* no labels: its one series */
	enum hb_metric_type type;
	const char *name, *help;
	const char *labels[3];
	const double *bounds;
	size_t nbounds;
};

static const struct family families[] = {
	{ &m_decisions,
	  NULL,
	  HB_METRIC_COUNTER,
	  "hpcbridge_decisions_total",
	  "Placement decisions stored for the Slurm plugin, by side and "
	  "policy rule.",
	  { "target", "rule" },
	  NULL,
	  0 },
	{ &m_decision_s,
	  &s_decision_s,
	  HB_METRIC_HISTOGRAM,
	  "hpcbridge_decision_duration_seconds",
	  "Time from a decide request read to its reply staged.",
	  { NULL },
	  decision_bounds,
	  NB(decision_bounds) },
	{ &m_side_err,
	  NULL,
	  HB_METRIC_COUNTER,
	  "hpcbridge_side_errors_total",
	  "Calls to a side (slurm, kube) that failed.",
	  { "side" },
	  NULL,
	  0 },
	{ &m_side_retry,
	  NULL,
	  HB_METRIC_COUNTER,
	  "hpcbridge_side_retries_total",
	  "Calls to a side retried after a transient failure.",
	  { "side" },
	  NULL,
	  0 },
	{ &m_watch,
	  NULL,
	  HB_METRIC_COUNTER,
	  "hpcbridge_watch_restarts_total",
	  "Kubernetes watches listed or started again, by resource and "
	  "reason.",
	  { "resource", "reason" },
	  NULL,
	  0 },
	{ &m_commit_s,
	  &s_commit_s,
	  HB_METRIC_HISTOGRAM,
	  "hpcbridge_store_commit_duration_seconds",
	  "Time the state store took to commit a transaction.",
	  { NULL },
	  commit_bounds,
	  NB(commit_bounds) },
	{ &m_open,
	  &s_open,
	  HB_METRIC_GAUGE,
	  "hpcbridge_connections_open",
	  "API connections open.",
	  { NULL },
	  NULL,
	  0 },
	{ &m_accepted,
	  &s_accepted,
	  HB_METRIC_COUNTER,
	  "hpcbridge_connections_accepted_total",
	  "API connections accepted.",
	  { NULL },
	  NULL,
	  0 },
	{ &m_refused,
	  &s_refused,
	  HB_METRIC_COUNTER,
	  "hpcbridge_connections_refused_total",
	  "API connections refused (limits, descriptors).",
	  { NULL },
	  NULL,
	  0 },
	{ &m_notices,
	  &s_notices,
	  HB_METRIC_COUNTER,
	  "hpcbridge_plugin_notices_total",
	  "Decisions made in slurmctld that the plugin told the daemon of.",
	  { NULL },
	  NULL,
	  0 },
	{ &m_notices_bad,
	  &s_notices_bad,
	  HB_METRIC_COUNTER,
	  "hpcbridge_plugin_notices_ignored_total",
	  "Notices ignored: from a user other than root and SlurmUser, "
	  "malformed, or not recorded.",
	  { NULL },
	  NULL,
	  0 },
};

int hb_metrics_init(void)
{
	struct hb_metrics *m;

	if (atomic_load(&global))
		return 0;
	if (!(m = hb_metrics_new()))
		return HB_ENOMEM;
	for (size_t i = 0; i < NB(families); i++) {
		const struct family *f = &families[i];

		*f->out = hb_metrics_add(m, f->type, f->name, f->help,
					 f->labels, f->bounds, f->nbounds);
		/* a family without labels shows 0 from the start, so that
		 * rate() has a series before the first event */
		if (!*f->out ||
		    (f->one && !(*f->one = hb_metric_with(*f->out, NULL)))) {
			hb_metrics_free(m);
			return HB_ENOMEM;
		}
	}
	for (size_t i = 0; i < NB(sides); i++)
		if (!(s_err[i] = hb_metric_with(m_side_err, &sides[i])) ||
		    !(s_retry[i] = hb_metric_with(m_side_retry, &sides[i]))) {
			hb_metrics_free(m);
			return HB_ENOMEM;
		}
	atomic_store(&global, m);
	return 0;
}

struct hb_metrics *hb_metrics_global(void)
{
	return atomic_load_explicit(&global, memory_order_acquire);
}

/* The series of a family of the catalogue, or NULL before init. */
static struct hb_series *with(struct hb_metric *f, const char *const *v)
{
	if (!hb_metrics_global())
		return NULL;
	return hb_metric_with(f, v);
}

/* A series made at init, or NULL before it (written before the registry
 * was published, read after it was seen). */
static struct hb_series *made(struct hb_series *s)
{
	return hb_metrics_global() ? s : NULL;
}

/* A side's series of family f (arr: the ones made at init). */
static struct hb_series *of_side(struct hb_series *const *arr,
				 struct hb_metric *f, const char *side)
{
	for (size_t i = 0; i < NB(sides); i++)
		if (side && !strcmp(side, sides[i]))
			return made(arr[i]);
	return with(f, (const char *[]){ side });
}

void hb_metrics_decision(const char *target, const char *rule, double seconds)
{
	hb_series_add(with(m_decisions, (const char *[]){ target, rule }), 1);
	hb_series_observe(made(s_decision_s), seconds);
}

void hb_metrics_side_error(const char *side)
{
	hb_series_add(of_side(s_err, m_side_err, side), 1);
}

void hb_metrics_side_retry(const char *side)
{
	hb_series_add(of_side(s_retry, m_side_retry, side), 1);
}

void hb_metrics_watch_restart(const char *resource, const char *reason)
{
	hb_series_add(with(m_watch, (const char *[]){ resource, reason }), 1);
}

void hb_metrics_store_commit(double seconds)
{
	hb_series_observe(made(s_commit_s), seconds);
}

void hb_metrics_conn_accepted(void)
{
	hb_series_add(made(s_accepted), 1);
}

void hb_metrics_conn_refused(void)
{
	hb_series_add(made(s_refused), 1);
}

void hb_metrics_notice(int heard)
{
	hb_series_add(made(heard ? s_notices : s_notices_bad), 1);
}

void hb_metrics_conn_open(unsigned n)
{
	hb_series_set(made(s_open), n);
}
