/*
 * metrics.h - counters, gauges and histograms with labels, their
 * Prometheus text exposition (format 0.0.4), and hpcbridged's own metrics
 * (docs/internals/metrics.md).
 *
 * A registry holds families (a name, a help text, a type, label names);
 * a family holds series (one per set of label values).  Families and
 * series are found or made under the registry's mutex and live as long
 * as it does; values are C11 atomics, added to outside the mutex.
 * The hooks at the end (hb_metrics_decision() ...) feed the process's
 * registry and do nothing until hb_metrics_init() made one, so the parts
 * that call them cost nothing in the CLI and the tests.
 */
#ifndef HB_METRICS_H
#define HB_METRICS_H

#include <stddef.h>
#include <time.h>

#include "hpcbridge/buf.h"

enum hb_metric_type { HB_METRIC_COUNTER, HB_METRIC_GAUGE, HB_METRIC_HISTOGRAM };

#define HB_METRIC_MAX_LABELS  4	 /* label names of a family */
#define HB_METRIC_MAX_BUCKETS 16 /* upper bounds of a histogram */
#define HB_METRIC_MAX_SERIES                                                   \
	256 /* label sets of a family; more are                                \
	     * dropped (and counted) */
#define HB_METRIC_MAX_VALUE                                                    \
	128 /* bytes of a label value; longer ones                             \
	     * are cut */

struct hb_metrics;
struct hb_metric;
struct hb_series;

/* A registry; NULL when out of memory.  Caller frees with
 * hb_metrics_free() (NULL is a no-op). */
struct hb_metrics *hb_metrics_new(void);
void hb_metrics_free(struct hb_metrics *m);

/*
 * Add a family.  labels: NULL-terminated label names (NULL: none);
 * bounds: a histogram's bucket upper bounds, increasing, without +Inf
 * (others pass NULL, 0).  NULL for a name or label name Prometheus
 * refuses, a histogram label "le", a name already added, bounds that do
 * not increase, or out of memory.  Borrowed until hb_metrics_free().
 */
struct hb_metric *hb_metrics_add(struct hb_metrics *m, enum hb_metric_type type,
				 const char *name, const char *help,
				 const char *const *labels,
				 const double *bounds, size_t nbounds);
/* The family named so, or NULL. */
struct hb_metric *hb_metrics_find(struct hb_metrics *m, const char *name);

/*
 * The series of f with these label values (as many as f has labels; NULL
 * for a family without), made when new.  NULL when f already holds
 * HB_METRIC_MAX_SERIES series or out of memory.  Borrowed until
 * hb_metrics_free() or hb_metric_clear().
 */
struct hb_series *hb_metric_with(struct hb_metric *f,
				 const char *const *values);
/* Drop every series of a gauge family, for one rebuilt at each scrape.
 * Not for a family whose series another thread may hold. */
void hb_metric_clear(struct hb_metric *f);

/* Counters and gauges: add v (a counter ignores v < 0 and NaN). */
void hb_series_add(struct hb_series *s, double v);
/* Gauges: set to v. */
void hb_series_set(struct hb_series *s, double v);
/* Histograms: count one observation of v. */
void hb_series_observe(struct hb_series *s, double v);
/* A counter's or gauge's value; a histogram's count. */
double hb_series_value(const struct hb_series *s);

/*
 * Append the exposition of every family to out, in the order they were
 * added, each family's series ordered by their label values: "# HELP"
 * and "# TYPE" lines, then the samples (a histogram's cumulative
 * _bucket{le=...} up to "+Inf", _sum and _count).  A family with no
 * series writes only its HELP and TYPE.  0, or HB_ENOMEM / HB_ETOOBIG
 * from out.
 */
int hb_metrics_write(struct hb_metrics *m, struct hb_buf *out);

/* The content type of what hb_metrics_write() writes. */
#define HB_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* ------------------------------------------------------------------ */
/* hpcbridged's metrics                                                */
/* ------------------------------------------------------------------ */

/*
 * Make the process's registry with hpcbridged's families; a second call
 * does nothing.  0 or HB_ENOMEM.  Call it before starting threads that
 * count.  The registry lives until the process ends.
 */
int hb_metrics_init(void);
/* The process's registry, or NULL before hb_metrics_init(). */
struct hb_metrics *hb_metrics_global(void);

/* Seconds on CLOCK_MONOTONIC, for the durations the hooks take. */
static inline double hb_metrics_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The hooks: each does nothing before hb_metrics_init(). */
/* A decision stored for the plugin: the side, the policy rule, and the
 * seconds from the request read to the reply staged. */
void hb_metrics_decision(const char *target, const char *rule, double seconds);
/* A failed call to a side ("slurm", "kube"), and a retried one. */
void hb_metrics_side_error(const char *side);
void hb_metrics_side_retry(const char *side);
/* A watch listed or started again: the resource ("mpijobs") and why
 * ("gone", "bad_event", "broken", "stopped"). */
void hb_metrics_watch_restart(const char *resource, const char *reason);
/* A store commit took this long. */
void hb_metrics_store_commit(double seconds);
/* API connections: one accepted, one refused, how many are open. */
void hb_metrics_conn_accepted(void);
void hb_metrics_conn_refused(void);
/* A notice from the job_submit plugin: recorded (1) or ignored (0). */
void hb_metrics_notice(int heard);
void hb_metrics_conn_open(unsigned n);

#endif
