/*
 * test_kube.c - the Kubernetes client without a cluster: the HTTP status
 * to HB_E* mapping, backoff and Retry-After, URL building, the watch
 * event decoder and line decoder, the reflector's bookkeeping, and the
 * client against a scripted HTTP server in a thread (wrong types,
 * truncated and oversized bodies, retries, timeouts, refused connections,
 * what goes on the wire, paging with an expired continue token, and a
 * reflector through a closed stream, a bad line and a 410).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/kube/kube_int.h"
#include "hpcbridge/clock.h"
#include "testutil.h"

/* ---------------------------------------------------- pure helpers */

static void test_http_errors(void **state)
{
	static const struct {
		long http;
		const char *reason;
		int rc, retry;
	} cases[] = {
		{ 200, "", 0, 0 },
		{ 201, "", 0, 0 },
		{ 400, "BadRequest", HB_EINVAL, 0 },
		{ 422, "Invalid", HB_EINVAL, 0 },
		{ 401, "Unauthorized", HB_EPERM, 0 },
		{ 403, "Forbidden", HB_EPERM, 0 },
		{ 404, "NotFound", HB_ENOENT, 0 },
		{ 409, "AlreadyExists", HB_EEXIST, 0 },
		{ 409, "Conflict", HB_ECONFLICT, 0 },
		{ 409, NULL, HB_ECONFLICT, 0 },
		{ 410, "Expired", HB_ESTATE, 0 },
		{ 413, "", HB_ETOOBIG, 0 },
		{ 415, "UnsupportedMediaType", HB_EUNSUP, 0 },
		{ 405, "MethodNotAllowed", HB_EUNSUP, 0 },
		{ 418, "", HB_EINVAL, 0 },
		{ 429, "TooManyRequests", HB_EUNAVAIL, 1 },
		{ 500, "InternalError", HB_EUNAVAIL, 1 },
		{ 502, "", HB_EUNAVAIL, 1 },
		{ 503, "ServiceUnavailable", HB_EUNAVAIL, 1 },
		{ 504, "Timeout", HB_EUNAVAIL, 1 },
		{ 501, "", HB_EUNAVAIL, 0 },
		{ 505, "", HB_EUNAVAIL, 0 },
		{ 302, "", HB_EPROTO, 0 },
		{ 0, "", HB_EPROTO, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (hb_kube_http_error(cases[i].http, cases[i].reason) !=
			    cases[i].rc ||
		    hb_kube_http_retryable(cases[i].http) != cases[i].retry)
			fail_msg("HTTP %ld %s", cases[i].http,
				 cases[i].reason ? cases[i].reason : "");
	}
}

static void test_backoff(void **state)
{
	static const uint32_t rnds[] = {
		0, 1, 7, 12345, 0x7fffffff, 0xffffffff
	};

	(void)state;
	for (size_t r = 0; r < sizeof(rnds) / sizeof(rnds[0]); r++) {
		for (int a = 1; a <= 40; a++) {
			long d = 100;
			long got =
				hb_kube_backoff_ms(a, 100, 5000, -1, rnds[r]);

			for (int i = 1; i < a && d < 5000; i++)
				d *= 2;
			if (d > 5000)
				d = 5000;
			/* Equal jitter: between half and the whole. */
			if (got < d / 2 || got > d)
				fail_msg("attempt %d rnd %u: %ld not in "
					 "[%ld, %ld]",
					 a, rnds[r], got, d / 2, d);
		}
	}
	/* The smallest and the largest draws. */
	assert_int_equal(hb_kube_backoff_ms(1, 100, 5000, -1, 0), 50);
	assert_int_equal(hb_kube_backoff_ms(1, 100, 5000, -1, 50), 100);
	assert_int_equal(hb_kube_backoff_ms(3, 100, 5000, -1, 0), 200);
	assert_int_equal(hb_kube_backoff_ms(30, 100, 5000, -1, 2500), 5000);
	/* Huge attempt counts do not overflow. */
	assert_true(hb_kube_backoff_ms(1000000, 1000, 60000, -1, 9) <= 60000);
	/* Retry-After wins when longer, with at most 10% more. */
	for (uint32_t r = 0; r < 5000; r += 37) {
		long got = hb_kube_backoff_ms(1, 100, 5000, 2000, r);

		assert_true(got >= 2000 && got <= 2200);
	}
	/* A shorter Retry-After does not shorten the backoff. */
	assert_int_equal(hb_kube_backoff_ms(5, 100, 5000, 0, 0), 800);
	/* Different draws spread out. */
	assert_int_not_equal(hb_kube_backoff_ms(6, 100, 5000, -1, 1),
			     hb_kube_backoff_ms(6, 100, 5000, -1, 999));
}

static void test_retry_after(void **state)
{
	(void)state;
	assert_int_equal(hb_kube_retry_after_ms("3", 0), 3000);
	assert_int_equal(hb_kube_retry_after_ms(" 2 ", 0), 2000);
	assert_int_equal(hb_kube_retry_after_ms("0", 0), 0);
	assert_int_equal(hb_kube_retry_after_ms("999999999999999999999", 0),
			 3600 * 1000L);
	assert_int_equal(hb_kube_retry_after_ms("86400", 0), 3600 * 1000L);
	assert_int_equal(hb_kube_retry_after_ms("3x", 0), -1);
	assert_int_equal(hb_kube_retry_after_ms("soon", 0), -1);
	assert_int_equal(hb_kube_retry_after_ms("", 0), -1);
	assert_int_equal(hb_kube_retry_after_ms(NULL, 0), -1);
	/* An HTTP date: Wed, 01 May 2024 10:00:00 GMT is 1714557600. */
	assert_int_equal(hb_kube_retry_after_ms("Wed, 01 May 2024 10:00:05 GMT",
						1714557600),
			 5000);
	assert_int_equal(hb_kube_retry_after_ms("Wed, 01 May 2024 09:00:00 GMT",
						1714557600),
			 0);
}

static void test_paths(void **state)
{
	static const struct hb_kube_res cm = { "", "v1", "configmaps",
					       "ConfigMap" };
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_kube_path(&hb_kube_mpijob, "ns1", "j1", NULL, &b),
			 0);
	assert_string_equal(b.data, "/apis/kubeflow.org/v2beta1/namespaces/ns1/"
				    "mpijobs/j1");
	hb_buf_reset(&b);
	assert_int_equal(hb_kube_path(&hb_kube_trainjob, NULL, NULL, NULL, &b),
			 0);
	assert_string_equal(b.data,
			    "/apis/trainer.kubeflow.org/v1alpha1/trainjobs");
	hb_buf_reset(&b);
	assert_int_equal(hb_kube_path(&hb_kube_pod, "a b", "x/y?z", "log", &b),
			 0);
	assert_string_equal(b.data,
			    "/api/v1/namespaces/a%20b/pods/x%2Fy%3Fz/log");
	assert_int_equal(hb_kube_query(&b, "labelSelector", "a=b,c in (d)"), 0);
	assert_int_equal(hb_kube_query(&b, "limit", "5"), 0);
	assert_string_equal(b.data,
			    "/api/v1/namespaces/a%20b/pods/x%2Fy%3Fz/log"
			    "?labelSelector=a%3Db%2Cc%20in%20%28d%29&limit=5");
	hb_buf_reset(&b);
	assert_int_equal(hb_kube_path(&cm, "default", NULL, NULL, &b), 0);
	assert_string_equal(b.data, "/api/v1/namespaces/default/configmaps");
	hb_buf_free(&b);
}

/* ---------------------------------------------------------- decoder */

static void test_event_decode(void **state)
{
	static const struct {
		const char *line;
		int rc;
		const char *msg;
	} bad[] = {
		{ "", HB_EPROTO, "not a JSON object" },
		{ "[1]", HB_EPROTO, "not a JSON object" },
		{ "{\"type\":\"ADDED\"", HB_EPROTO, "not a JSON object" },
		{ "{\"object\":{}}", HB_EPROTO, "type: missing" },
		{ "{\"type\":5,\"object\":{}}", HB_EPROTO, "type: missing" },
		{ "{\"type\":\"RENAMED\",\"object\":{}}", HB_EPROTO,
		  "unknown type \"RENAMED\"" },
		{ "{\"type\":\"ADDED\"}", HB_EPROTO, "object: missing" },
		{ "{\"type\":\"ADDED\",\"object\":\"x\"}", HB_EPROTO,
		  "object: missing or not an object" },
		{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":[]}}",
		  HB_EPROTO, "metadata: not an object" },
		{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":"
		  "{\"resourceVersion\":5}}}",
		  HB_EPROTO, "resourceVersion: not a string" },
		{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":"
		  "{\"resourceVersion\":\"12345678901234567890123456789012\"}}"
		  "}",
		  HB_EPROTO, "longer than 31" },
		{ "{\"type\":\"ADDED\",\"object\":{}} x", HB_EPROTO,
		  "bytes after" },
	};
	struct hb_kube_event ev;
	struct hb_err err;
	const char *ok1 = "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\","
			  "\"metadata\":{\"name\":\"p\",\"resourceVersion\":"
			  "\"42\"}}}  ";
	const char *ok2 = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
			  "\"code\":410,\"reason\":\"Expired\"}}";
	const char *ok3 = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
			  "{\"resourceVersion\":\"77\"}}}";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (hb_kube_event_decode(bad[i].line, strlen(bad[i].line), &ev,
					 &err) != bad[i].rc ||
		    !strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: '%s'", i, err.msg);
		assert_null(ev.object);
	}
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_event_decode(ok1, strlen(ok1), &ev, &err), 0);
	assert_int_equal(ev.type, HB_KUBE_MODIFIED);
	assert_string_equal(ev.rv, "42");
	assert_string_equal(cJSON_GetObjectItem(ev.object, "kind")->valuestring,
			    "Pod");
	hb_kube_event_clear(&ev);
	assert_null(ev.object);
	assert_int_equal(hb_kube_event_decode(ok2, strlen(ok2), &ev, &err), 0);
	assert_int_equal(ev.type, HB_KUBE_ERROR);
	assert_int_equal(ev.code, 410);
	assert_string_equal(ev.rv, "");
	hb_kube_event_clear(&ev);
	assert_int_equal(hb_kube_event_decode(ok3, strlen(ok3), &ev, &err), 0);
	assert_int_equal(ev.type, HB_KUBE_BOOKMARK);
	assert_string_equal(ev.rv, "77");
	hb_kube_event_clear(&ev);
	/* Only as many bytes as given are read. */
	assert_int_equal(hb_kube_event_decode(ok3, 10, &ev, &err), HB_EPROTO);
	hb_kube_event_clear(NULL);
}

static int next_type(struct hb_kube_decoder *d, const char *want_rv)
{
	struct hb_kube_event ev;
	struct hb_err err = { 0 };
	int rc = hb_kube_decoder_next(d, &ev, &err);

	if (rc)
		return rc;
	if (want_rv)
		assert_string_equal(ev.rv, want_rv);
	rc = (int)ev.type;
	hb_kube_event_clear(&ev);
	return rc;
}

static void test_decoder(void **state)
{
	const char *stream = "{\"type\":\"ADDED\",\"object\":{\"metadata\":"
			     "{\"resourceVersion\":\"1\"}}}\r\n"
			     "\n   \n"
			     "{\"type\":\"DELETED\",\"object\":{\"metadata\":"
			     "{\"resourceVersion\":\"2\"}}}\n"
			     "not json\n"
			     "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
			     "{\"resourceVersion\":\"3\"}}}\n"
			     "{\"type\":\"ADDED\",\"object\":{}}";
	struct hb_kube_decoder *d;
	struct hb_kube_event ev;
	struct hb_err err = { 0 };
	char big[300];

	(void)state;
	/* Byte by byte and all at once give the same events. */
	for (int mode = 0; mode < 2; mode++) {
		assert_int_equal(hb_kube_decoder_new(0, &d), 0);
		assert_int_equal(next_type(d, NULL), HB_EAGAIN);
		if (mode == 0) {
			for (size_t i = 0; i < strlen(stream); i++)
				assert_int_equal(
					hb_kube_decoder_feed(d, stream + i, 1),
					0);
		} else {
			assert_int_equal(
				hb_kube_decoder_feed(d, stream, strlen(stream)),
				0);
		}
		assert_int_equal(next_type(d, "1"), HB_KUBE_ADDED);
		assert_int_equal(next_type(d, "2"), HB_KUBE_DELETED);
		assert_int_equal(next_type(d, NULL), HB_EPROTO);
		assert_int_equal(next_type(d, "3"), HB_KUBE_BOOKMARK);
		/* The last line has no newline yet. */
		assert_int_equal(next_type(d, NULL), HB_EAGAIN);
		assert_int_equal(hb_kube_decoder_feed(d, "\n", 1), 0);
		assert_int_equal(next_type(d, ""), HB_KUBE_ADDED);
		assert_int_equal(next_type(d, NULL), HB_EAGAIN);
		hb_kube_decoder_free(d);
	}

	/* A line longer than max_line is dropped and reported in its
	 * place, whether it comes whole or in pieces. */
	memset(big, 'x', sizeof(big));
	assert_int_equal(hb_kube_decoder_new(100, &d), 0);
	assert_int_equal(hb_kube_decoder_feed(d, big, 60), 0);
	assert_int_equal(hb_kube_decoder_feed(d, big, 60), 0);
	assert_int_equal(hb_kube_decoder_feed(d, big, sizeof(big)), 0);
	assert_int_equal(hb_kube_decoder_feed(d, "tail\n", 5), 0);
	assert_int_equal(hb_kube_decoder_feed(d, stream, 64), 0);
	assert_int_equal(hb_kube_decoder_feed(d, big, 150), 0);
	assert_int_equal(hb_kube_decoder_feed(d, "\n", 1), 0);
	assert_int_equal(hb_kube_decoder_next(d, &ev, &err), HB_ETOOBIG);
	assert_non_null(strstr(err.msg, "longer than 100 bytes"));
	assert_int_equal(next_type(d, "1"), HB_KUBE_ADDED);
	assert_int_equal(next_type(d, NULL), HB_ETOOBIG);
	assert_int_equal(next_type(d, NULL), HB_EAGAIN);
	/* Exactly max_line is fine, one more is not. */
	{
		const char *ev28 = "{\"type\":\"ADDED\",\"object\":{}}";

		assert_int_equal(strlen(ev28), 28);
		assert_int_equal(hb_kube_decoder_feed(d, ev28, 28), 0);
		memset(big, ' ', 73);
		assert_int_equal(hb_kube_decoder_feed(d, big, 72), 0);
		assert_int_equal(hb_kube_decoder_feed(d, "\n", 1), 0);
		assert_int_equal(next_type(d, ""), HB_KUBE_ADDED);
		assert_int_equal(hb_kube_decoder_feed(d, ev28, 28), 0);
		assert_int_equal(hb_kube_decoder_feed(d, big, 73), 0);
		assert_int_equal(hb_kube_decoder_feed(d, "\n", 1), 0);
		assert_int_equal(next_type(d, NULL), HB_ETOOBIG);
		assert_int_equal(hb_kube_decoder_feed(d, ev28, 28), 0);
		assert_int_equal(hb_kube_decoder_feed(d, "\n", 1), 0);
	}
	assert_int_equal(next_type(d, ""), HB_KUBE_ADDED);
	hb_kube_decoder_free(d);
	hb_kube_decoder_free(NULL);
}

/* ------------------------------------------------------ known map */

static int apply(struct hb_kube_known *m, const char *key,
		 enum hb_kube_ev_type type, const char *rv)
{
	int t;

	assert_int_equal(hb_kube_known_apply(m, key, type, rv, &t), 0);
	return t;
}

static void test_known(void **state)
{
	struct hb_kube_known *m = hb_kube_known_new();
	char key[32], rv[32];

	(void)state;
	assert_non_null(m);
	assert_int_equal(apply(m, "ns/a", HB_KUBE_ADDED, "1"), HB_KUBE_ADDED);
	/* The same version again: nothing. */
	assert_int_equal(apply(m, "ns/a", HB_KUBE_ADDED, "1"), -1);
	assert_int_equal(apply(m, "ns/a", HB_KUBE_MODIFIED, "1"), -1);
	/* ADDED of a known object is a change. */
	assert_int_equal(apply(m, "ns/a", HB_KUBE_ADDED, "2"),
			 HB_KUBE_MODIFIED);
	/* MODIFIED of an unknown one is an addition. */
	assert_int_equal(apply(m, "ns/b", HB_KUBE_MODIFIED, "3"),
			 HB_KUBE_ADDED);
	assert_int_equal(hb_kube_known_count(m), 2);
	assert_string_equal(hb_kube_known_get(m, "ns/a"), "2");
	assert_int_equal(apply(m, "ns/a", HB_KUBE_DELETED, "4"),
			 HB_KUBE_DELETED);
	assert_int_equal(apply(m, "ns/a", HB_KUBE_DELETED, "4"), -1);
	assert_null(hb_kube_known_get(m, "ns/a"));
	assert_int_equal(apply(m, "ns/a", HB_KUBE_BOOKMARK, "5"), -1);
	assert_int_equal(hb_kube_known_del(m, "ns/zz"), HB_ENOENT);
	/* Many keys, deleted and added again: growth and tombstones. */
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 3000; i++) {
			snprintf(key, sizeof(key), "n/k%d", i);
			snprintf(rv, sizeof(rv), "%d", round);
			assert_int_equal(hb_kube_known_put(m, key, rv), 0);
		}
		for (int i = 0; i < 3000; i += 2) {
			snprintf(key, sizeof(key), "n/k%d", i);
			assert_int_equal(hb_kube_known_del(m, key), 0);
		}
		assert_int_equal(hb_kube_known_count(m), 1500 + 1);
	}
	for (int i = 1; i < 3000; i += 2) {
		snprintf(key, sizeof(key), "n/k%d", i);
		assert_string_equal(hb_kube_known_get(m, key), "4");
		snprintf(key, sizeof(key), "n/k%d", i - 1);
		assert_null(hb_kube_known_get(m, key));
	}
	hb_kube_known_free(m);
	hb_kube_known_free(NULL);
}

static void test_obj_key(void **state)
{
	struct hb_buf k;
	cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"n\",\"namespace\":"
			       "\"s\"}}");
	cJSON *p = cJSON_Parse("{\"metadata\":{\"name\":\"n\"}}");
	cJSON *q = cJSON_Parse("{\"metadata\":{\"name\":7}}");

	(void)state;
	hb_buf_init(&k, 0);
	assert_int_equal(hb_kube_obj_key(o, &k), 0);
	assert_string_equal(k.data, "s/n");
	assert_int_equal(hb_kube_obj_key(p, &k), 0);
	assert_string_equal(k.data, "/n");
	assert_int_equal(hb_kube_obj_key(q, &k), HB_EPROTO);
	assert_int_equal(hb_kube_obj_key(NULL, &k), HB_EPROTO);
	hb_buf_free(&k);
	cJSON_Delete(o);
	cJSON_Delete(p);
	cJSON_Delete(q);
}

/* ------------------------------------------------ a scripted server */

#define QMAX 16

struct reply {
	char *text; /* the whole response; NULL: hang until stopped */
	int own;
};

struct fake {
	int lfd, port;
	pthread_t th;
	atomic_int stop;
	pthread_mutex_t mu;
	struct reply q[QMAX];
	int nq, next;
	char req[QMAX][4096]; /* requests as received (truncated) */
	int nreq;
};

static void fake_reply(struct fake *f, const char *text)
{
	pthread_mutex_lock(&f->mu);
	assert_true(f->nq < QMAX);
	f->q[f->nq].text = text ? strdup(text) : NULL;
	f->q[f->nq].own = 1;
	f->nq++;
	pthread_mutex_unlock(&f->mu);
}

/* A response with a body and a Content-Length. */
static void fake_json(struct fake *f, int status, const char *extra,
		      const char *body)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_printf(&b,
				       "HTTP/1.1 %d X\r\nContent-Type: "
				       "application/json\r\n%sContent-Length: "
				       "%zu\r\nConnection: close\r\n\r\n%s",
				       status, extra ? extra : "", strlen(body),
				       body),
			 0);
	fake_reply(f, b.data);
	hb_buf_free(&b);
}

/* A stream: no length, the connection's end ends it. */
static void fake_stream(struct fake *f, const char *lines)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_printf(&b,
				       "HTTP/1.1 200 OK\r\nContent-Type: "
				       "application/json\r\nConnection: "
				       "close\r\n\r\n%s",
				       lines),
			 0);
	fake_reply(f, b.data);
	hb_buf_free(&b);
}

static void serve_one(struct fake *f, int fd)
{
	char buf[65536];
	size_t len = 0, need = 0;
	char *hdr_end = NULL, *text = NULL;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 2000) <= 0)
			return;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return;
		len += (size_t)n;
		buf[len] = '\0';
		if (!hdr_end && (hdr_end = strstr(buf, "\r\n\r\n"))) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");

			need = (size_t)(hdr_end - buf) + 4;
			if (cl && cl < hdr_end)
				need += strtoul(cl + 17, NULL, 10);
		}
		if (hdr_end && len >= need)
			break;
		if (len == sizeof(buf) - 1)
			break;
	}
	pthread_mutex_lock(&f->mu);
	if (f->nreq < QMAX)
		snprintf(f->req[f->nreq++], sizeof(f->req[0]), "%.4000s", buf);
	if (f->next < f->nq)
		text = f->q[f->next++].text;
	else
		text = "HTTP/1.1 599 NoScript\r\nContent-Length: 0\r\n\r\n";
	pthread_mutex_unlock(&f->mu);
	if (!text) {
		while (!atomic_load(&f->stop))
			usleep(10000);
		return;
	}
	for (size_t off = 0, n = strlen(text); off < n;) {
		ssize_t w = write(fd, text + off, n - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

static void *fake_main(void *u)
{
	struct fake *f = u;

	while (!atomic_load(&f->stop)) {
		struct pollfd p = { f->lfd, POLLIN, 0 };
		int fd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve_one(f, fd);
		shutdown(fd, SHUT_RDWR);
		close(fd);
	}
	return NULL;
}

static struct fake *fake_start(void)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	assert_non_null(f);
	pthread_mutex_init(&f->mu, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 16), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &al), 0);
	f->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
	return f;
}

static void fake_stop(struct fake *f)
{
	atomic_store(&f->stop, 1);
	pthread_join(f->th, NULL);
	close(f->lfd);
	for (int i = 0; i < f->nq; i++)
		free(f->q[i].text);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* The request line of request i. */
static const char *req_line(struct fake *f, int i, char *out, size_t n)
{
	pthread_mutex_lock(&f->mu);
	assert_true(i < f->nreq);
	snprintf(out, n, "%.*s", (int)strcspn(f->req[i], "\r"), f->req[i]);
	pthread_mutex_unlock(&f->mu);
	return out;
}

static struct hb_kube *client_for(int port, const struct hb_kube_opts *o)
{
	struct hb_kube_config *c;
	struct hb_kube *k;
	struct hb_err err = { 0 };
	char text[1024];
	struct hb_kube_src s = { "test.yaml", text, 0 };

	snprintf(text, sizeof(text),
		 "clusters: [{name: c, cluster: {server: "
		 "'http://127.0.0.1:%d'}}]\n"
		 "users: [{name: u, user: {token: tok-123}}]\n"
		 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		 "current-context: x\n",
		 port);
	s.len = strlen(text);
	assert_int_equal(hb_kube_config_parse(&s, 1, NULL, 0, &c, &err), 0);
	assert_int_equal(hb_kube_new(c, o, &k, &err), 0);
	hb_kube_config_free(c);
	return k;
}

static void test_client_wire(void **state)
{
	struct fake *f = fake_start();
	struct hb_kube_opts o = { .retries = -1 };
	struct hb_kube *k = client_for(f->port, &o);
	struct hb_kube_last last;
	struct hb_err err = { 0 };
	cJSON *out = NULL, *obj;
	char line[512];

	(void)state;
	fake_json(f, 200, NULL, "{\"kind\":\"Pod\"}");
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 0);
	assert_string_equal(cJSON_GetObjectItem(out, "kind")->valuestring,
			    "Pod");
	cJSON_Delete(out);
	assert_string_equal(req_line(f, 0, line, sizeof(line)),
			    "GET /api/v1/namespaces/default/pods/p1 HTTP/1.1");
	assert_non_null(strstr(f->req[0], "Authorization: Bearer tok-123\r\n"));
	assert_non_null(strstr(f->req[0], "User-Agent: hpcbridge/"));
	assert_non_null(strstr(f->req[0], "Accept: application/json"));
	hb_kube_last(k, &last);
	assert_int_equal(last.http, 200);
	assert_int_equal(last.attempts, 1);

	/* Server-side apply: the query, the content type, the body. */
	obj = cJSON_Parse(
		"{\"apiVersion\":\"kubeflow.org/v2beta1\","
		"\"kind\":\"MPIJob\",\"metadata\":{\"name\":\"j1\"}}");
	fake_json(f, 200, NULL, "{}");
	assert_int_equal(hb_kube_apply(k, &hb_kube_mpijob, "ns1", obj, "hb gw",
				       1, 1, NULL, &err),
			 0);
	assert_string_equal(req_line(f, 1, line, sizeof(line)),
			    "PATCH /apis/kubeflow.org/v2beta1/namespaces/ns1/"
			    "mpijobs/j1/status?fieldManager=hb%20gw&force=true "
			    "HTTP/1.1");
	assert_non_null(strstr(f->req[1],
			       "Content-Type: application/apply-patch+yaml"));
	assert_non_null(strstr(f->req[1], "\"name\": \"j1\""));
	/* A merge patch of status. */
	fake_json(f, 200, NULL, "{}");
	assert_int_equal(hb_kube_patch_status(k, &hb_kube_mpijob, "ns1", "j1",
					      obj, NULL, &err),
			 0);
	assert_non_null(strstr(f->req[2], "PATCH /apis/kubeflow.org/v2beta1/"
					  "namespaces/ns1/mpijobs/j1/status "));
	assert_non_null(strstr(f->req[2],
			       "Content-Type: application/merge-patch+json"));
	/* Create: POST to the collection. */
	fake_json(f, 201, NULL, "{}");
	assert_int_equal(
		hb_kube_create(k, &hb_kube_mpijob, NULL, obj, NULL, &err), 0);
	assert_string_equal(req_line(f, 3, line, sizeof(line)),
			    "POST /apis/kubeflow.org/v2beta1/namespaces/"
			    "default/mpijobs HTTP/1.1");
	cJSON_Delete(obj);
	/* Delete with a propagation policy. */
	fake_json(f, 200, NULL, "{\"kind\":\"Status\"}");
	assert_int_equal(
		hb_kube_delete(k, &hb_kube_pod, "ns1", "p1", "Orphan", &err),
		0);
	assert_non_null(strstr(f->req[4], "DELETE /api/v1/namespaces/ns1/"
					  "pods/p1 HTTP/1.1"));
	assert_non_null(strstr(f->req[4], "\"propagationPolicy\": \"Orphan\""));
	/* Events: a field selector. */
	fake_json(f, 200, NULL, "{\"items\":[]}");
	assert_int_equal(hb_kube_events(k, "ns1", "a,b", &out, &err), 0);
	cJSON_Delete(out);
	assert_string_equal(req_line(f, 5, line, sizeof(line)),
			    "GET /api/v1/namespaces/ns1/events?fieldSelector="
			    "involvedObject.name%3Da%5C%2Cb HTTP/1.1");
	/* A log, cut at its limit. */
	{
		struct hb_buf b;

		hb_buf_init(&b, 0);
		fake_json(f, 200, NULL, "0123456789abcdefghij");
		assert_int_equal(
			hb_kube_log(k, "ns1", "p1", "c1", 10, &b, &err), 0);
		assert_string_equal(b.data, "0123456789");
		assert_string_equal(req_line(f, 6, line, sizeof(line)),
				    "GET /api/v1/namespaces/ns1/pods/p1/log?"
				    "container=c1&limitBytes=10 HTTP/1.1");
		hb_buf_free(&b);
	}
	/* Argument checks that never reach the wire. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "", &out, &err),
			 HB_EINVAL);
	assert_int_equal(hb_kube_apply(k, &hb_kube_pod, NULL, NULL, "m", 0, 0,
				       NULL, &err),
			 HB_EINVAL);
	hb_kube_free(k);
	fake_stop(f);
}

/* Kueue's visibility API: the paths of a LocalQueue's and a
 * ClusterQueue's pending workloads, the limit, and a 404 (no visibility
 * server) as HB_ENOENT. */
static void test_client_kueue(void **state)
{
	struct fake *f = fake_start();
	struct hb_kube_opts o = { .retries = -1 };
	struct hb_kube *k = client_for(f->port, &o);
	struct hb_err err = { 0 };
	cJSON *out = NULL;
	char line[512];

	(void)state;
	fake_json(f, 200, NULL,
		  "{\"kind\":\"PendingWorkloadsSummary\",\"items\":[]}");
	assert_int_equal(hb_kube_pending_workloads(k, NULL, "team-a", 0, 0,
						   &out, &err),
			 0);
	assert_string_equal(cJSON_GetObjectItem(out, "kind")->valuestring,
			    "PendingWorkloadsSummary");
	cJSON_Delete(out);
	assert_string_equal(req_line(f, 0, line, sizeof(line)),
			    "GET /apis/visibility.kueue.x-k8s.io/v1beta1/"
			    "namespaces/default/localqueues/team-a/"
			    "pendingworkloads HTTP/1.1");
	fake_json(f, 200, NULL, "{\"items\":[]}");
	assert_int_equal(hb_kube_pending_workloads(k, "ns1", "cq 1", 1, 50,
						   &out, &err),
			 0);
	cJSON_Delete(out);
	assert_string_equal(req_line(f, 1, line, sizeof(line)),
			    "GET /apis/visibility.kueue.x-k8s.io/v1beta1/"
			    "clusterqueues/cq%201/pendingworkloads?limit=50 "
			    "HTTP/1.1");
	fake_json(f, 404, NULL,
		  "{\"kind\":\"Status\",\"reason\":\"NotFound\","
		  "\"message\":\"the server could not find the requested "
		  "resource\",\"code\":404}");
	assert_int_equal(hb_kube_pending_workloads(k, "ns1", "team-a", 0, 0,
						   &out, &err),
			 HB_ENOENT);
	assert_null(out);
	assert_non_null(strstr(err.msg, "could not find"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_pending_workloads(k, "ns1", "", 0, 0, &out,
						   &err),
			 HB_EINVAL);
	hb_kube_free(k);
	fake_stop(f);
}

static void test_client_bad_responses(void **state)
{
	struct fake *f = fake_start();
	struct hb_kube_opts o = { .retries = -1, .max_body = 1024 };
	struct hb_kube *k = client_for(f->port, &o);
	struct hb_kube_last last;
	struct hb_err err;
	cJSON *out = (cJSON *)1;
	char big[4096 + 16];
	static const struct {
		int status;
		const char *body;
		int rc;
		const char *msg;
	} cases[] = {
		{ 200, "[1,2]", HB_EPROTO, "not a JSON object" },
		{ 200, "{\"a\":", HB_EPROTO, "not a JSON object" },
		{ 200, "", HB_EPROTO, "not a JSON object" },
		{ 200, "{} {}", HB_EPROTO, "not a JSON object" },
		{ 409,
		  "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\","
		  "\"message\":\"pods \\\"p1\\\" already exists\"}",
		  HB_EEXIST, "HTTP 409 AlreadyExists: pods \"p1\" already" },
		{ 409, "{\"reason\":\"Conflict\",\"message\":\"stale\"}",
		  HB_ECONFLICT, "stale" },
		{ 422, "{\"reason\":\"Invalid\",\"message\":[1]}", HB_EINVAL,
		  "HTTP 422 Invalid: {\"reason\":\"Invalid\"" },
		{ 403, "<html>denied</html>", HB_EPERM,
		  "HTTP 403: <html>denied</html>" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_json(f, cases[i].status, NULL, cases[i].body);
		memset(&err, 0, sizeof(err));
		if (hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err) !=
			    cases[i].rc ||
		    !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: '%s'", i, err.msg);
		assert_null(out);
	}
	hb_kube_last(k, &last);
	assert_int_equal(last.http, 403);
	assert_string_equal(last.reason, "");

	/* Lists whose parts have the wrong types. */
	fake_json(f, 200, NULL, "{\"items\":5}");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_list(k, &hb_kube_pod, NULL, NULL, NULL, 0,
				      NULL, &out, &err),
			 HB_EPROTO);
	assert_non_null(strstr(err.msg, "items is not a list"));
	fake_json(f, 200, NULL, "{\"items\":[{}, 3]}");
	assert_int_equal(hb_kube_list(k, &hb_kube_pod, NULL, NULL, NULL, 0,
				      NULL, &out, &err),
			 HB_EPROTO);
	fake_json(f, 200, NULL, "{\"items\":[],\"metadata\":\"x\"}");
	assert_int_equal(hb_kube_list(k, &hb_kube_pod, NULL, NULL, NULL, 0,
				      NULL, &out, &err),
			 HB_EPROTO);
	assert_null(out);

	/* Larger than max_body. */
	memset(big, 'x', sizeof(big));
	memcpy(big, "{\"a\":\"", 6);
	memcpy(big + 4096, "\"}", 3);
	fake_json(f, 200, NULL, big);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 HB_ETOOBIG);
	assert_non_null(strstr(err.msg, "larger than 1024 bytes"));

	/* Not HTTP at all. */
	fake_reply(f, "SSH-2.0-OpenSSH\r\n\r\n");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 HB_EPROTO);
	hb_kube_free(k);
	fake_stop(f);
}

static void test_client_retries(void **state)
{
	struct fake *f = fake_start();
	struct hb_kube_opts o = { .retries = 2,
				  .backoff_ms = 10,
				  .timeout_ms = 5000 };
	struct hb_kube *k = client_for(f->port, &o);
	struct hb_kube_last last;
	struct hb_err err = { 0 };
	cJSON *out;
	int64_t t0;

	(void)state;
	/* 503 with Retry-After: 0, a 429, then the answer. */
	fake_json(f, 503, "Retry-After: 0\r\n", "{}");
	fake_json(f, 429, "Retry-After: 0\r\n", "{}");
	fake_json(f, 200, NULL, "{\"ok\":true}");
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 0);
	cJSON_Delete(out);
	hb_kube_last(k, &last);
	assert_int_equal(last.attempts, 3);
	assert_int_equal(last.http, 200);

	/* Retries spent. */
	for (int i = 0; i < 3; i++)
		fake_json(f, 502, NULL, "<html>bad gateway</html>");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 HB_EUNAVAIL);
	assert_non_null(strstr(err.msg, "HTTP 502: <html>bad gateway"));
	hb_kube_last(k, &last);
	assert_int_equal(last.attempts, 3);

	/* A Retry-After past the deadline is not waited for. */
	fake_json(f, 429, "Retry-After: 60\r\n", "{}");
	memset(&err, 0, sizeof(err));
	t0 = hb_clock_mono_ms();
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 HB_EUNAVAIL);
	assert_true(hb_clock_mono_ms() - t0 < 1000);

	/* A static token's 401 is not retried; 404 neither. */
	fake_json(f, 401, NULL, "{\"reason\":\"Unauthorized\"}");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 HB_EPERM);
	hb_kube_last(k, &last);
	assert_int_equal(last.attempts, 1);
	assert_string_equal(last.reason, "Unauthorized");

	/* A server that never answers: the deadline. */
	hb_kube_free(k);
	o.timeout_ms = 300;
	k = client_for(f->port, &o);
	fake_reply(f, NULL);
	memset(&err, 0, sizeof(err));
	t0 = hb_clock_mono_ms();
	assert_int_equal(hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			 HB_ETIMEDOUT);
	assert_true(hb_clock_mono_ms() - t0 < 1500);
	hb_kube_free(k);
	{
		/* Nobody listening: refused, retried, HB_EUNAVAIL.  A port
		 * bound without listen() refuses connections, and no other
		 * process (a test running at the same time) can take it. */
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t al = sizeof(a);
		int hold = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		fake_stop(f);
		assert_true(hold >= 0);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(hold, (struct sockaddr *)&a, sizeof(a)),
				 0);
		assert_int_equal(getsockname(hold, (struct sockaddr *)&a, &al),
				 0);
		o.timeout_ms = 5000;
		k = client_for(ntohs(a.sin_port), &o);
		memset(&err, 0, sizeof(err));
		assert_int_equal(
			hb_kube_get(k, &hb_kube_pod, NULL, "p1", &out, &err),
			HB_EUNAVAIL);
		hb_kube_last(k, &last);
		assert_int_equal(last.attempts, 3);
		assert_int_equal(last.http, 0);
		hb_kube_free(k);
		close(hold);
	}
	hb_kube_free(NULL);
}

static void test_client_list_all(void **state)
{
	struct fake *f = fake_start();
	struct hb_kube_opts o = { .retries = -1 };
	struct hb_kube *k = client_for(f->port, &o);
	struct hb_err err = { 0 };
	cJSON *items;
	char rv[32], line[512];

	(void)state;
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"10\",\"continue\":"
		  "\"c1\"},\"items\":[{\"metadata\":{\"name\":\"a\"}}]}");
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"11\"},\"items\":"
		  "[{\"metadata\":{\"name\":\"b\"}}]}");
	assert_int_equal(hb_kube_list_all(k, &hb_kube_pod, "ns", "app=x", 1,
					  &items, rv, &err),
			 0);
	assert_int_equal(cJSON_GetArraySize(items), 2);
	assert_string_equal(rv, "10");
	cJSON_Delete(items);
	assert_string_equal(req_line(f, 1, line, sizeof(line)),
			    "GET /api/v1/namespaces/ns/pods?labelSelector="
			    "app%3Dx&limit=1&continue=c1 HTTP/1.1");

	/* The continue token expired: one whole list instead. */
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"10\",\"continue\":"
		  "\"c1\"},\"items\":[{\"metadata\":{\"name\":\"a\"}}]}");
	fake_json(f, 410, NULL, "{\"reason\":\"Expired\",\"code\":410}");
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"12\"},\"items\":"
		  "[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":"
		  "\"b\"}},{\"metadata\":{\"name\":\"c\"}}]}");
	assert_int_equal(hb_kube_list_all(k, &hb_kube_pod, "ns", NULL, 1,
					  &items, rv, &err),
			 0);
	assert_int_equal(cJSON_GetArraySize(items), 3);
	assert_string_equal(rv, "12");
	cJSON_Delete(items);
	assert_string_equal(req_line(f, 4, line, sizeof(line)),
			    "GET /api/v1/namespaces/ns/pods HTTP/1.1");
	hb_kube_free(k);
	fake_stop(f);
}

/* ------------------------------------------------------- reflector */

struct seen {
	char lines[16][64];
	int n, bookmarks;
};

static int record(void *u, const struct hb_kube_event *ev)
{
	static const char *names[] = { "ADDED", "MODIFIED", "DELETED",
				       "BOOKMARK", "ERROR" };
	struct seen *s = u;
	const cJSON *md = cJSON_GetObjectItem(ev->object, "metadata");
	const cJSON *name = cJSON_GetObjectItem(md, "name");

	assert_true(s->n < 16);
	snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s %s %s",
		 names[ev->type],
		 cJSON_IsString(name) ? name->valuestring : "-", ev->rv);
	if (ev->type == HB_KUBE_BOOKMARK && ++s->bookmarks == 3)
		return 99;
	return 0;
}

static void *stop_later(void *u)
{
	usleep(300000);
	atomic_store((atomic_int *)u, 1);
	return NULL;
}

#define OBJ(name, rv)                                                          \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\","           \
	"\"resourceVersion\":\"" rv "\"}}"

static void test_reflector(void **state)
{
	struct fake *f = fake_start();
	struct hb_kube_opts o = { .retries = -1, .backoff_ms = 10 };
	struct hb_kube *k = client_for(f->port, &o);
	struct hb_kube_reflect_opts ro = { .ns = "ns", .poll_ms = 20 };
	struct hb_err err = { 0 };
	struct seen s = { 0 };
	atomic_int stop = 0;
	static const char *want[] = {
		"ADDED a 5",	"BOOKMARK - 5", "ADDED b 6",	 "MODIFIED a 7",
		"BOOKMARK - 9", "DELETED a 7",	"BOOKMARK - 12",
	};
	char line[512];

	(void)state;
	/* 0: the list. */
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[" OBJ(
			  "a", "5") "]}");
	/* 1: a watch that ends after a few events (one a repeat). */
	fake_stream(
		f,
		"{\"type\":\"ADDED\",\"object\":" OBJ(
			"b",
			"6") "}\n"
			     "{\"type\":\"MODIFIED\",\"object\":" OBJ(
				     "a",
				     "7") "}\n"
					  "{\"type\":\"MODIFIED\","
					  "\"object\":" OBJ(
						  "a",
						  "7") "}\n"
						       "{\"type\":\"BOOKMARK\","
						       "\"object\":{"
						       "\"metadata\":"
						       "{\"resourceVersion\":"
						       "\"8\"}}}\n");
	/* 2: resumed from 8, a line that is no event: list again. */
	fake_stream(f, "garbage\n");
	/* 3: the list: nothing new. */
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" OBJ(
			  "a", "7") "," OBJ("b", "6") "]}");
	/* 4: the watch from 9 is too old. */
	fake_stream(f, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
		       "\"code\":410,\"reason\":\"Expired\"}}\n");
	/* 5: the list: a is gone. */
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"12\"},\"items\":[" OBJ(
			  "b", "6") "]}");
	assert_int_equal(
		hb_kube_reflect(k, &hb_kube_pod, &ro, record, &s, &stop, &err),
		99);
	assert_int_equal(s.n, (int)(sizeof(want) / sizeof(want[0])));
	for (int i = 0; i < s.n; i++)
		assert_string_equal(s.lines[i], want[i]);
	assert_non_null(strstr(req_line(f, 1, line, sizeof(line)),
			       "?watch=1&allowWatchBookmarks=true&"
			       "resourceVersion=5&timeoutSeconds=300"));
	assert_non_null(strstr(req_line(f, 2, line, sizeof(line)),
			       "resourceVersion=8&"));
	assert_non_null(strstr(req_line(f, 3, line, sizeof(line)),
			       "GET /api/v1/namespaces/ns/pods?limit=500 "));
	assert_non_null(strstr(req_line(f, 4, line, sizeof(line)),
			       "resourceVersion=9&"));

	/* *stop ends a watch that has nothing to say, within poll_ms. */
	memset(&s, 0, sizeof(s));
	fake_json(f, 200, NULL,
		  "{\"metadata\":{\"resourceVersion\":\"20\"},\"items\":[]}");
	fake_reply(f, NULL);
	{
		pthread_t th;
		int64_t t0 = hb_clock_mono_ms();

		ro.poll_ms = 50;
		assert_int_equal(pthread_create(&th, NULL, stop_later, &stop),
				 0);
		assert_int_equal(hb_kube_reflect(k, &hb_kube_pod, &ro, record,
						 &s, &stop, &err),
				 0);
		pthread_join(th, NULL);
		assert_true(hb_clock_mono_ms() - t0 < 1500);
		assert_int_equal(s.n, 1);
		assert_string_equal(s.lines[0], "BOOKMARK - 20");
	}
	/* No callback: refused at once. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_kube_reflect(k, &hb_kube_pod, &ro, NULL, NULL, &stop, &err),
		HB_EINVAL);
	hb_kube_free(k);
	fake_stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_errors),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_event_decode),
		cmocka_unit_test(test_decoder),
		cmocka_unit_test(test_known),
		cmocka_unit_test(test_obj_key),
		cmocka_unit_test(test_client_wire),
		cmocka_unit_test(test_client_kueue),
		cmocka_unit_test(test_client_bad_responses),
		cmocka_unit_test(test_client_retries),
		cmocka_unit_test(test_client_list_all),
		cmocka_unit_test(test_reflector),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
