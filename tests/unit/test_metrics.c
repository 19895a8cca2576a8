/*
 * test_metrics.c - the metrics registry and its Prometheus text:
 * cumulative buckets, escaping, ordering, names refused, the series cap,
 * counting from several threads, and the hooks before and after init.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/error.h"
#include "hpcbridge/metrics.h"
#include "testutil.h"

static char *expose(struct hb_metrics *m)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_metrics_write(m, &b), 0);
	return hb_buf_steal(&b);
}

static void test_histogram_cumulative(void **state)
{
	static const double bounds[] = { 0.1, 0.5, 1 };
	struct hb_metrics *m = hb_metrics_new();
	struct hb_metric *h;
	struct hb_series *s;
	char *t;

	(void)state;
	h = hb_metrics_add(m, HB_METRIC_HISTOGRAM, "x_seconds", "X.", NULL,
			   bounds, 3);
	assert_non_null(h);
	s = hb_metric_with(h, NULL);
	/* on a bound counts in that bucket (le: less or equal) */
	hb_series_observe(s, 0.1);
	hb_series_observe(s, 0.05);
	hb_series_observe(s, 0.7);
	hb_series_observe(s, 3);
	hb_series_observe(s, NAN); /* ignored */
	assert_true(hb_series_value(s) == 4);
	t = expose(m);
	assert_string_equal(t, "# HELP x_seconds X.\n"
			       "# TYPE x_seconds histogram\n"
			       "x_seconds_bucket{le=\"0.1\"} 2\n"
			       "x_seconds_bucket{le=\"0.5\"} 2\n"
			       "x_seconds_bucket{le=\"1\"} 3\n"
			       "x_seconds_bucket{le=\"+Inf\"} 4\n"
			       "x_seconds_sum 3.85\n"
			       "x_seconds_count 4\n");
	free(t);
	hb_metrics_free(m);
}

static void test_escaping_and_order(void **state)
{
	struct hb_metrics *m = hb_metrics_new();
	struct hb_metric *c, *g;
	char *t;

	(void)state;
	c = hb_metrics_add(m, HB_METRIC_COUNTER, "b_total",
			   "Back\\slash and\nnewline \"kept\".",
			   (const char *[]){ "who", "why", NULL }, NULL, 0);
	g = hb_metrics_add(m, HB_METRIC_GAUGE, "a_gauge", "G.", NULL, NULL, 0);
	assert_non_null(c);
	assert_non_null(g);
	hb_series_add(hb_metric_with(c, (const char *[]){ "zed", "1" }), 2);
	hb_series_add(hb_metric_with(c, (const char *[]){ "a\"b\\c\nd", "x" }),
		      1);
	hb_series_add(hb_metric_with(c, (const char *[]){ "zed", "1" }), 3);
	hb_series_add(hb_metric_with(c, (const char *[]){ "zed", "1" }), -7);
	hb_series_set(hb_metric_with(g, NULL), -0.25);
	t = expose(m);
	/* families in the order added, series by label values */
	assert_string_equal(
		t, "# HELP b_total Back\\\\slash and\\nnewline \"kept\".\n"
		   "# TYPE b_total counter\n"
		   "b_total{who=\"a\\\"b\\\\c\\nd\",why=\"x\"} 1\n"
		   "b_total{who=\"zed\",why=\"1\"} 5\n"
		   "# HELP a_gauge G.\n"
		   "# TYPE a_gauge gauge\n"
		   "a_gauge -0.25\n");
	free(t);
	hb_metric_clear(g);
	t = expose(m);
	assert_null(strstr(t, "a_gauge -"));
	assert_non_null(strstr(t, "# TYPE a_gauge gauge\n"));
	free(t);
	hb_metrics_free(m);
}

static void test_refused(void **state)
{
	static const double up[] = { 1, 2 }, down[] = { 2, 1 };
	struct hb_metrics *m = hb_metrics_new();

	(void)state;
	assert_null(
		hb_metrics_add(m, HB_METRIC_COUNTER, "1x", "", NULL, NULL, 0));
	assert_null(
		hb_metrics_add(m, HB_METRIC_COUNTER, "a-b", "", NULL, NULL, 0));
	assert_null(hb_metrics_add(m, HB_METRIC_COUNTER, "c", "",
				   (const char *[]){ "a:b", NULL }, NULL, 0));
	assert_null(hb_metrics_add(m, HB_METRIC_COUNTER, "c", "",
				   (const char *[]){ "__x", NULL }, NULL, 0));
	assert_null(hb_metrics_add(m, HB_METRIC_HISTOGRAM, "h", "",
				   (const char *[]){ "le", NULL }, up, 2));
	assert_null(
		hb_metrics_add(m, HB_METRIC_HISTOGRAM, "h", "", NULL, down, 2));
	assert_null(
		hb_metrics_add(m, HB_METRIC_HISTOGRAM, "h", "", NULL, NULL, 0));
	assert_non_null(
		hb_metrics_add(m, HB_METRIC_HISTOGRAM, "h", "", NULL, up, 2));
	assert_null(hb_metrics_add(m, HB_METRIC_GAUGE, "h", "", NULL, NULL,
				   0)); /* twice */
	hb_metrics_free(m);
	hb_metrics_free(NULL);
}

static void test_series_cap(void **state)
{
	struct hb_metrics *m = hb_metrics_new();
	struct hb_metric *c;
	char v[16];

	(void)state;
	c = hb_metrics_add(m, HB_METRIC_COUNTER, "c_total", "",
			   (const char *[]){ "k", NULL }, NULL, 0);
	for (int i = 0; i < HB_METRIC_MAX_SERIES; i++) {
		snprintf(v, sizeof(v), "%d", i);
		assert_non_null(hb_metric_with(c, (const char *[]){ v }));
	}
	assert_null(hb_metric_with(c, (const char *[]){ "one more" }));
	/* an existing one is still found */
	assert_non_null(hb_metric_with(c, (const char *[]){ "7" }));
	hb_metrics_free(m);
}

struct thr {
	struct hb_series *c, *h;
};

static void *count_main(void *arg)
{
	struct thr *t = arg;

	for (int i = 0; i < 100000; i++) {
		hb_series_add(t->c, 1);
		hb_series_observe(t->h, 0.5);
	}
	return NULL;
}

static void test_threads(void **state)
{
	static const double b[] = { 1 };
	struct hb_metrics *m = hb_metrics_new();
	struct thr t;
	pthread_t th[4];

	(void)state;
	t.c = hb_metric_with(hb_metrics_add(m, HB_METRIC_COUNTER, "n_total", "",
					    NULL, NULL, 0),
			     NULL);
	t.h = hb_metric_with(
		hb_metrics_add(m, HB_METRIC_HISTOGRAM, "d", "", NULL, b, 1),
		NULL);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, count_main, &t),
				 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	/* no increment lost */
	assert_true(hb_series_value(t.c) == 400000);
	assert_true(hb_series_value(t.h) == 400000);
	hb_metrics_free(m);
}

static void test_hooks(void **state)
{
	struct hb_metrics *m;
	char *t;

	(void)state;
	/* before init: nothing, and nothing breaks */
	assert_null(hb_metrics_global());
	hb_metrics_decision("slurm", "r", 0.001);
	assert_int_equal(hb_metrics_init(), 0);
	assert_int_equal(hb_metrics_init(), 0);
	m = hb_metrics_global();
	assert_non_null(m);
	hb_metrics_decision("kubernetes", "rules[1]", 0.003);
	hb_metrics_decision("kubernetes", "rules[1]", 2);
	hb_metrics_conn_open(3);
	hb_metrics_conn_open(2);
	hb_metrics_side_retry("kube");
	t = expose(m);
	assert_non_null(strstr(t, "hpcbridge_decisions_total{target="
				  "\"kubernetes\",rule=\"rules[1]\"} 2\n"));
	assert_null(strstr(t, "target=\"slurm\""));
	assert_non_null(strstr(t, "hpcbridge_decision_duration_seconds_"
				  "bucket{le=\"0.005\"} 1\n"));
	assert_non_null(strstr(t, "hpcbridge_decision_duration_seconds_"
				  "count 2\n"));
	assert_non_null(strstr(t, "hpcbridge_connections_open 2\n"));
	assert_non_null(strstr(t, "hpcbridge_side_retries_total{side="
				  "\"kube\"} 1\n"));
	free(t);
}

/* metrics.listen: the address, and loopback unless allow_remote */
static void test_listen_config(void **state)
{
	static const char *const good[] = { "127.0.0.1:9464", "[::1]:1",
					    "10.1.2.3:65535", "[fe80::1]:80" };
	static const char *const bad[] = { "127.0.0.1",	      "127.0.0.1:0",
					   "127.0.0.1:65536", "localhost:9464",
					   "::1:9464",	      "[::1]",
					   "1.2.3.4:9x",      ":9464",
					   "127.0.0.1:-1" };
	struct hb_config cfg;
	struct hb_err err = { 0 };
	const char *y;
	int lo = -1;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(
			hb_config_listen_addr(good[i], NULL, NULL, NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(
			hb_config_listen_addr(bad[i], NULL, NULL, NULL),
			HB_EINVAL);
	assert_int_equal(hb_config_listen_addr("127.9.9.9:1", NULL, NULL, &lo),
			 0);
	assert_int_equal(lo, 1);
	assert_int_equal(hb_config_listen_addr("[::2]:1", NULL, NULL, &lo), 0);
	assert_int_equal(lo, 0);
	/* absent: off */
	assert_int_equal(
		hb_config_parse("daemon: {}\n", 11, "t.yaml", &cfg, &err), 0);
	assert_null(cfg.metrics_listen);
	hb_config_free(&cfg);
	/* not loopback: refused, naming the key, unless allowed */
	y = "metrics:\n  listen: 0.0.0.0:9464\n";
	assert_int_equal(hb_config_parse(y, strlen(y), "t.yaml", &cfg, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "metrics.listen"));
	y = "metrics:\n  listen: 0.0.0.0:9464\n  allow_remote: true\n";
	assert_int_equal(hb_config_parse(y, strlen(y), "t.yaml", &cfg, &err),
			 0);
	assert_string_equal(cfg.metrics_listen, "0.0.0.0:9464");
	hb_config_free(&cfg);
	y = "metrics:\n  listen: 127.0.0.1:99999\n";
	assert_int_equal(hb_config_parse(y, strlen(y), "t.yaml", &cfg, &err),
			 HB_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_histogram_cumulative),
		cmocka_unit_test(test_escaping_and_order),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_series_cap),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_listen_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
