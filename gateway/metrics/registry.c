/*
 * registry.c - the metrics registry: families, their series, the values
 * (C11 atomics), and the Prometheus text exposition (format 0.0.4).
 * docs/internals/metrics.md says who counts what, from which thread.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/error.h"
#include "hpcbridge/metrics.h"

/* A double kept as its bits, so that any thread may update it. */
typedef _Atomic uint64_t adouble;

struct hb_series {
	struct hb_metric *f;
	char *values[HB_METRIC_MAX_LABELS];
	adouble v; /* counter, gauge; a histogram's sum */
	/* a histogram's observations per bucket (not cumulative): one per
	 * bound, and the last for those above every bound (+Inf) */
	_Atomic uint64_t *buckets;
};

struct hb_metric {
	struct hb_metrics *m;
	enum hb_metric_type type;
	char *name, *help;
	char *labels[HB_METRIC_MAX_LABELS];
	size_t nlabels;
	double bounds[HB_METRIC_MAX_BUCKETS];
	size_t nbounds;
	struct hb_series **series;
	size_t nseries;
	unsigned long dropped; /* label sets past HB_METRIC_MAX_SERIES */
	struct hb_metric *next;
};

struct hb_metrics {
	pthread_mutex_t mu; /* families and series; never held to count */
	struct hb_metric *first, **tail;
};

static double load_d(const adouble *a)
{
	uint64_t u = atomic_load_explicit(a, memory_order_relaxed);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static void store_d(adouble *a, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	atomic_store_explicit(a, u, memory_order_relaxed);
}

static void add_d(adouble *a, double v)
{
	uint64_t old = atomic_load_explicit(a, memory_order_relaxed), nu;
	double d;

	do {
		memcpy(&d, &old, sizeof(d));
		d += v;
		memcpy(&nu, &d, sizeof(nu));
	} while (!atomic_compare_exchange_weak_explicit(
		a, &old, nu, memory_order_relaxed, memory_order_relaxed));
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for a metric name; no ':' in a label name,
 * and none starting "__" (Prometheus keeps those). */
static int valid_name(const char *s, int label)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return 0;
	if (label && s[0] == '_' && s[1] == '_')
		return 0;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' ||
		      (c == ':' && !label)))
			return 0;
	}
	return 1;
}

struct hb_metrics *hb_metrics_new(void)
{
	struct hb_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->mu, NULL);
	m->tail = &m->first;
	return m;
}

static void series_free(struct hb_series *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < HB_METRIC_MAX_LABELS; i++)
		free(s->values[i]);
	free(s->buckets);
	free(s);
}

static void family_free(struct hb_metric *f)
{
	for (size_t i = 0; i < f->nseries; i++)
		series_free(f->series[i]);
	free(f->series);
	for (size_t i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	free(f->name);
	free(f->help);
	free(f);
}

void hb_metrics_free(struct hb_metrics *m)
{
	struct hb_metric *f, *next;

	if (!m)
		return;
	for (f = m->first; f; f = next) {
		next = f->next;
		family_free(f);
	}
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static struct hb_metric *find_locked(struct hb_metrics *m, const char *name)
{
	for (struct hb_metric *f = m->first; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

struct hb_metric *hb_metrics_find(struct hb_metrics *m, const char *name)
{
	struct hb_metric *f;

	pthread_mutex_lock(&m->mu);
	f = find_locked(m, name);
	pthread_mutex_unlock(&m->mu);
	return f;
}

/* The family's fields, checked; NULL when one is wrong. */
static struct hb_metric *family_new(enum hb_metric_type type, const char *name,
				    const char *help, const char *const *labels,
				    const double *bounds, size_t nbounds)
{
	struct hb_metric *f;
	size_t i;

	if (!valid_name(name, 0) || nbounds > HB_METRIC_MAX_BUCKETS ||
	    (type == HB_METRIC_HISTOGRAM) != (nbounds > 0))
		return NULL;
	for (i = 0; i < nbounds; i++)
		if (isnan(bounds[i]) || isinf(bounds[i]) ||
		    (i && bounds[i] <= bounds[i - 1]))
			return NULL;
	if (!(f = calloc(1, sizeof(*f))))
		return NULL;
	f->type = type;
	f->nbounds = nbounds;
	if (nbounds)
		memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (!f->name || !f->help)
		goto bad;
	for (i = 0; labels && labels[i]; i++) {
		if (i == HB_METRIC_MAX_LABELS || !valid_name(labels[i], 1) ||
		    (type == HB_METRIC_HISTOGRAM && !strcmp(labels[i], "le")))
			goto bad;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(labels[i], labels[j]))
				goto bad;
		if (!(f->labels[i] = strdup(labels[i])))
			goto bad;
		f->nlabels = i + 1;
	}
	return f;
bad:
	family_free(f);
	return NULL;
}

struct hb_metric *hb_metrics_add(struct hb_metrics *m, enum hb_metric_type type,
				 const char *name, const char *help,
				 const char *const *labels,
				 const double *bounds, size_t nbounds)
{
	struct hb_metric *f =
		family_new(type, name, help, labels, bounds, nbounds);

	if (!f)
		return NULL;
	pthread_mutex_lock(&m->mu);
	if (find_locked(m, name)) {
		pthread_mutex_unlock(&m->mu);
		family_free(f);
		return NULL;
	}
	f->m = m;
	*m->tail = f;
	m->tail = &f->next;
	pthread_mutex_unlock(&m->mu);
	return f;
}

static int same_values(const struct hb_series *s, size_t n,
		       const char *const *values)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(s->values[i], values[i] ? values[i] : "",
			    HB_METRIC_MAX_VALUE))
			return 0;
	return 1;
}

static struct hb_series *series_new(struct hb_metric *f,
				    const char *const *values)
{
	struct hb_series *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->f = f;
	for (size_t i = 0; i < f->nlabels; i++) {
		const char *v = values[i] ? values[i] : "";

		if (!(s->values[i] = strndup(v, HB_METRIC_MAX_VALUE)))
			goto bad;
	}
	if (f->type == HB_METRIC_HISTOGRAM &&
	    !(s->buckets = calloc(f->nbounds + 1, sizeof(*s->buckets))))
		goto bad;
	return s;
bad:
	series_free(s);
	return NULL;
}

struct hb_series *hb_metric_with(struct hb_metric *f, const char *const *values)
{
	struct hb_series *s = NULL, **v;
	size_t i;

	if (!f || (f->nlabels && !values))
		return NULL;
	pthread_mutex_lock(&f->m->mu);
	for (i = 0; i < f->nseries; i++)
		if (same_values(f->series[i], f->nlabels, values)) {
			s = f->series[i];
			goto out;
		}
	if (f->nseries == HB_METRIC_MAX_SERIES) {
		f->dropped++;
		goto out;
	}
	v = realloc(f->series, (f->nseries + 1) * sizeof(*v));
	if (!v)
		goto out;
	f->series = v;
	if ((s = series_new(f, values)))
		f->series[f->nseries++] = s;
out:
	pthread_mutex_unlock(&f->m->mu);
	return s;
}

void hb_metric_clear(struct hb_metric *f)
{
	if (!f || f->type != HB_METRIC_GAUGE)
		return;
	pthread_mutex_lock(&f->m->mu);
	for (size_t i = 0; i < f->nseries; i++)
		series_free(f->series[i]);
	f->nseries = 0;
	pthread_mutex_unlock(&f->m->mu);
}

void hb_series_add(struct hb_series *s, double v)
{
	if (!s || s->f->type == HB_METRIC_HISTOGRAM || isnan(v) ||
	    (s->f->type == HB_METRIC_COUNTER && v < 0))
		return;
	add_d(&s->v, v);
}

void hb_series_set(struct hb_series *s, double v)
{
	if (s && s->f->type == HB_METRIC_GAUGE)
		store_d(&s->v, v);
}

void hb_series_observe(struct hb_series *s, double v)
{
	size_t i;

	if (!s || s->f->type != HB_METRIC_HISTOGRAM || isnan(v))
		return;
	/* the first bucket whose bound is >= v (Prometheus's le) */
	for (i = 0; i < s->f->nbounds && v > s->f->bounds[i]; i++)
		;
	atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
	add_d(&s->v, v);
}

double hb_series_value(const struct hb_series *s)
{
	uint64_t n = 0;

	if (!s)
		return 0;
	if (s->f->type != HB_METRIC_HISTOGRAM)
		return load_d(&s->v);
	for (size_t i = 0; i <= s->f->nbounds; i++)
		n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
	return (double)n;
}

/* ------------------------------------------------------------------ */
/* The exposition                                                      */
/* ------------------------------------------------------------------ */

/* A value as Prometheus reads it: the shortest text that reads back to
 * the same double; +Inf, -Inf, NaN. */
static int put_double(struct hb_buf *b, double v)
{
	char s[40];

	if (isnan(v))
		return hb_buf_puts(b, "NaN");
	if (isinf(v))
		return hb_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return hb_buf_printf(b, "%.0f", v);
	for (int p = 1; p <= 17; p++) {
		snprintf(s, sizeof(s), "%.*g", p, v);
		if (strtod(s, NULL) == v)
			break;
	}
	return hb_buf_puts(b, s);
}

/* HELP text: backslash and newline escaped; label values: the double
 * quote too. */
static int put_escaped(struct hb_buf *b, const char *s, int quote)
{
	int rc = 0;

	for (; *s && !rc; s++) {
		if (*s == '\\')
			rc = hb_buf_puts(b, "\\\\");
		else if (*s == '\n')
			rc = hb_buf_puts(b, "\\n");
		else if (*s == '"' && quote)
			rc = hb_buf_puts(b, "\\\"");
		else
			rc = hb_buf_putc(b, *s);
	}
	return rc;
}

/* name{l1="v1",...[,le="x"]} value\n; le NULL: no le label. */
static int put_sample(struct hb_buf *b, const struct hb_series *s,
		      const char *suffix, const char *le, double v)
{
	const struct hb_metric *f = s->f;
	int rc = hb_buf_puts(b, f->name);

	if (!rc)
		rc = hb_buf_puts(b, suffix);
	if (!rc && (f->nlabels || le))
		rc = hb_buf_putc(b, '{');
	for (size_t i = 0; i < f->nlabels && !rc; i++) {
		rc = hb_buf_printf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
		if (!rc)
			rc = put_escaped(b, s->values[i], 1);
		if (!rc)
			rc = hb_buf_putc(b, '"');
	}
	if (!rc && le)
		rc = hb_buf_printf(b, "%sle=\"%s\"", f->nlabels ? "," : "", le);
	if (!rc && (f->nlabels || le))
		rc = hb_buf_putc(b, '}');
	if (!rc)
		rc = hb_buf_putc(b, ' ');
	if (!rc)
		rc = put_double(b, v);
	return rc ? rc : hb_buf_putc(b, '\n');
}

static int put_histogram(struct hb_buf *b, const struct hb_series *s)
{
	const struct hb_metric *f = s->f;
	uint64_t cum = 0;
	char le[40];
	int rc = 0;

	for (size_t i = 0; i <= f->nbounds && !rc; i++) {
		struct hb_buf lb = { 0 };

		cum += atomic_load_explicit(&s->buckets[i],
					    memory_order_relaxed);
		if (i == f->nbounds) {
			snprintf(le, sizeof(le), "+Inf");
		} else {
			hb_buf_init(&lb, sizeof(le) - 1);
			rc = put_double(&lb, f->bounds[i]);
			snprintf(le, sizeof(le), "%s", rc ? "" : lb.data);
			hb_buf_free(&lb);
		}
		if (!rc)
			rc = put_sample(b, s, "_bucket", le, (double)cum);
	}
	if (!rc)
		rc = put_sample(b, s, "_sum", NULL, load_d(&s->v));
	/* _count is the +Inf bucket, read once: they always agree */
	return rc ? rc : put_sample(b, s, "_count", NULL, (double)cum);
}

static int cmp_series(const void *a, const void *b)
{
	const struct hb_series *x = *(struct hb_series *const *)a;
	const struct hb_series *y = *(struct hb_series *const *)b;

	for (size_t i = 0; i < x->f->nlabels; i++) {
		int c = strcmp(x->values[i], y->values[i]);

		if (c)
			return c;
	}
	return 0;
}

static const char *type_name(enum hb_metric_type t)
{
	return t == HB_METRIC_COUNTER ? "counter"
	       : t == HB_METRIC_GAUGE ? "gauge"
				      : "histogram";
}

static int put_family(struct hb_buf *b, struct hb_metric *f)
{
	int rc = hb_buf_printf(b, "# HELP %s ", f->name);

	if (!rc)
		rc = put_escaped(b, f->help, 0);
	if (!rc)
		rc = hb_buf_printf(b, "\n# TYPE %s %s\n", f->name,
				   type_name(f->type));
	if (f->nseries > 1)
		qsort(f->series, f->nseries, sizeof(*f->series), cmp_series);
	for (size_t i = 0; i < f->nseries && !rc; i++)
		rc = f->type == HB_METRIC_HISTOGRAM
			     ? put_histogram(b, f->series[i])
			     : put_sample(b, f->series[i], "", NULL,
					  load_d(&f->series[i]->v));
	return rc;
}

int hb_metrics_write(struct hb_metrics *m, struct hb_buf *out)
{
	int rc = 0;

	pthread_mutex_lock(&m->mu);
	for (struct hb_metric *f = m->first; f && !rc; f = f->next)
		rc = put_family(out, f);
	pthread_mutex_unlock(&m->mu);
	return rc;
}
