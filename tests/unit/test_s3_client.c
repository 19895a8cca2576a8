/*
 * test_s3_client.c - the S3 client against a scripted HTTP server in a
 * thread: what goes on the wire (signed x-amz-content-sha256 and
 * x-amz-date, Content-MD5, path and virtual-host addressing, "uploads="),
 * retries on 503 SlowDown, 500, 429 and dropped connections but not on
 * 403, a GET resumed where a cut connection left it, digests checked,
 * ListObjectsV2 pagination, multipart upload with a 200 <Error>, where
 * credentials come from, and that no error message ever holds the
 * secret.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/s3/s3_int.h"
#include "hpcbridge/clock.h"
#include "testutil.h"

#define SECRET "sEcReT/k3y+NeverShown0123456789abcdefXY"
#define AK "AKTEST"
#define NMAX 24

/* ------------------------------------------------ the scripted server */

struct srv {
	int lfd, port;
	pthread_t th;
	atomic_int stop;
	pthread_mutex_t mu;
	char *reply[NMAX]; /* "": close without answering */
	int nreply, next;
	char *req[NMAX];   /* each request as received, body included */
	int nreq;
};

static void srv_add(struct srv *s, const char *text)
{
	pthread_mutex_lock(&s->mu);
	assert_true(s->nreply < NMAX);
	s->reply[s->nreply++] = strdup(text);
	pthread_mutex_unlock(&s->mu);
}

/* An answer with a body; extra holds more header lines. */
static void srv_http(struct srv *s, int status, const char *extra,
		     const char *body)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_printf(&b, "HTTP/1.1 %d X\r\n%sContent-Length:"
				       " %zu\r\nConnection: close\r\n\r\n%s",
				       status, extra ? extra : "",
				       strlen(body), body), 0);
	srv_add(s, b.data);
	hb_buf_free(&b);
}

static void srv_error(struct srv *s, int status, const char *code,
		      const char *msg)
{
	char body[1024];

	snprintf(body, sizeof(body), "<?xml version=\"1.0\" encoding=\"UTF-8\""
		 "?>\n<Error><Code>%s</Code><Message>%s</Message></Error>",
		 code, msg);
	srv_http(s, status, "Content-Type: application/xml\r\n", body);
}

static int read_request(int fd, struct hb_buf *b)
{
	size_t need = 0;
	char *end = NULL, chunk[65536];

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 3000) <= 0)
			return -1;
		n = read(fd, chunk, sizeof(chunk));
		if (n <= 0)
			return -1;
		if (hb_buf_append(b, chunk, (size_t)n))
			return -1;
		if (!end && (end = strstr(b->data, "\r\n\r\n"))) {
			char *cl = strcasestr(b->data, "\r\nContent-Length:");

			need = (size_t)(end - b->data) + 4;
			if (cl && cl < end)
				need += strtoul(cl + 17, NULL, 10);
		}
		if (end && b->len >= need)
			return 0;
	}
}

static void *srv_main(void *u)
{
	struct srv *s = u;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = { s->lfd, POLLIN, 0 };
		struct hb_buf b;
		const char *text;
		int fd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		hb_buf_init(&b, 0);
		if (!read_request(fd, &b)) {
			pthread_mutex_lock(&s->mu);
			if (s->nreq < NMAX)
				s->req[s->nreq++] = hb_buf_steal(&b);
			text = s->next < s->nreply ? s->reply[s->next++]
				: "HTTP/1.1 599 NoScript\r\nContent-Length: "
				  "0\r\nConnection: close\r\n\r\n";
			pthread_mutex_unlock(&s->mu);
			for (size_t off = 0, n = strlen(text); off < n;) {
				ssize_t w = write(fd, text + off, n - off);

				if (w <= 0)
					break;
				off += (size_t)w;
			}
		}
		hb_buf_free(&b);
		shutdown(fd, SHUT_RDWR);
		close(fd);
	}
	return NULL;
}

static struct srv *srv_start(void)
{
	struct srv *s = calloc(1, sizeof(*s));
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	assert_non_null(s);
	pthread_mutex_init(&s->mu, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
	return s;
}

static void srv_stop(struct srv *s)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->th, NULL);
	close(s->lfd);
	for (int i = 0; i < s->nreply; i++)
		free(s->reply[i]);
	for (int i = 0; i < s->nreq; i++)
		free(s->req[i]);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Request i as received (the server thread has answered it). */
static const char *srv_req(struct srv *s, int i)
{
	const char *r;

	pthread_mutex_lock(&s->mu);
	assert_true(i < s->nreq);
	r = s->req[i];
	pthread_mutex_unlock(&s->mu);
	return r;
}

static int srv_count(struct srv *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->nreq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static struct hb_s3 *client(struct srv *s, int vhost)
{
	char ep[64];
	struct hb_s3_opts o = { .endpoint = ep, .region = "eu-test-1",
				.access_key = AK, .secret_key = SECRET,
				.virtual_host = vhost, .backoff_ms = 1,
				.backoff_cap_ms = 5, .retries = 3,
				.timeout_ms = 5000 };
	struct hb_err e = { 0 };
	struct hb_s3 *c;

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", s->port);
	assert_int_equal(hb_s3_new(&o, &c, &e), 0);
	return c;
}

/* The value of header name in request r, in out. */
static const char *header(const char *r, const char *name, char *out,
			  size_t n)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\r\n%s:", name);
	p = strcasestr(r, pat);
	assert_non_null(p);
	p += strlen(pat);
	while (*p == ' ')
		p++;
	snprintf(out, n, "%.*s", (int)strcspn(p, "\r"), p);
	return out;
}

/* ------------------------------------------------------------- tests */

static void test_put_wire(void **state)
{
	static const char body[] = "Welcome to Amazon S3.";
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_err e = { 0 };
	char v[256], host[32];
	const char *r;

	(void)state;
	srv_http(s, 200, "ETag: \"abc\"\r\n", "");
	assert_int_equal(hb_s3_put(c, "ckpt", "job 1/a+b.bin", body,
				   strlen(body), NULL, &e), 0);
	r = srv_req(s, 0);
	assert_true(!strncmp(r, "PUT /ckpt/job%201/a%2Bb.bin HTTP/1.1\r\n",
			     38));
	assert_string_equal(header(r, "x-amz-content-sha256", v, sizeof(v)),
			    "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e420"
			    "34a8b803f8b072");
	assert_string_equal(header(r, "Content-MD5", v, sizeof(v)),
			    "1EfQ6PKJ8WoS/2AnznfCWA==");
	snprintf(host, sizeof(host), "127.0.0.1:%d", s->port);
	assert_string_equal(header(r, "Host", v, sizeof(v)), host);
	header(r, "Authorization", v, sizeof(v));
	assert_true(!strncmp(v, "AWS4-HMAC-SHA256 Credential=AKTEST/", 35));
	assert_non_null(strstr(v, "/eu-test-1/s3/aws4_request, SignedHeaders="
			       "content-md5;content-type;host;"
			       "x-amz-content-sha256;x-amz-date, Signature="));
	assert_null(strstr(r, SECRET));
	assert_non_null(strstr(r, "\r\n\r\nWelcome to Amazon S3."));
	hb_s3_free(c);
	srv_stop(s);
}

static void test_vhost_and_checksum(void **state)
{
	struct srv *s = srv_start();
	char ep[64], v[128];
	struct hb_s3_opts o = { .endpoint = ep, .region = "r",
				.access_key = AK, .secret_key = SECRET,
				.virtual_host = 1, .checksum_sha256 = 1 };
	struct hb_err e = { 0 };
	struct hb_s3 *c;
	const char *r;

	(void)state;
	/* libcurl resolves *.localhost to the loopback itself. */
	snprintf(ep, sizeof(ep), "http://localhost:%d/base/", s->port);
	assert_int_equal(hb_s3_new(&o, &c, &e), 0);
	srv_http(s, 200, "", "");
	assert_int_equal(hb_s3_put(c, "bkt", "k", "", 0, NULL, &e), 0);
	r = srv_req(s, 0);
	assert_true(!strncmp(r, "PUT /base/k HTTP/1.1", 20));
	snprintf(ep, sizeof(ep), "bkt.localhost:%d", s->port);
	assert_string_equal(header(r, "Host", v, sizeof(v)), ep);
	assert_string_equal(header(r, "x-amz-checksum-sha256", v, sizeof(v)),
			    "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
	hb_s3_free(c);
	srv_stop(s);
}

static void test_retries(void **state)
{
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_err e = { 0 };

	(void)state;
	srv_error(s, 503, "SlowDown", "Please reduce your request rate.");
	srv_add(s, ""); /* a dropped connection */
	srv_error(s, 500, "InternalError", "We encountered an internal error.");
	srv_http(s, 200, "", "");
	assert_int_equal(hb_s3_put(c, "b", "k", "x", 1, NULL, &e), 0);
	assert_int_equal(srv_count(s), 4);

	/* 403 is not retried, and says who refused and why. */
	srv_error(s, 403, "SignatureDoesNotMatch", "The request signature we "
		  "calculated does not match the signature you provided.");
	assert_int_equal(hb_s3_put(c, "b", "dir/k", "x", 1, NULL, &e),
			 HB_EPERM);
	assert_int_equal(srv_count(s), 5);
	assert_string_equal(e.msg, "s3 PutObject b/dir/k: HTTP 403 "
			    "SignatureDoesNotMatch: The request signature we "
			    "calculated does not match the signature you "
			    "provided.");

	/* 429 runs out of retries: 1 + 3 attempts. */
	for (int i = 0; i < 4; i++)
		srv_error(s, 429, "SlowDown", "busy");
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_s3_delete(c, "b", "k", &e), HB_EUNAVAIL);
	assert_int_equal(srv_count(s), 9);
	assert_non_null(strstr(e.msg, "(after retries)"));
	hb_s3_free(c);
	srv_stop(s);
}

/* A Retry-After longer than the backoff is waited for. */
static void test_retry_after(void **state)
{
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_err e = { 0 };
	int64_t t0;

	(void)state;
	srv_http(s, 503, "Retry-After: 1\r\n", "");
	srv_http(s, 200, "", "");
	t0 = hb_clock_mono_ms();
	assert_int_equal(hb_s3_delete(c, "b", "k", &e), 0);
	assert_true(hb_clock_mono_ms() - t0 >= 1000);
	assert_int_equal(srv_count(s), 2);
	hb_s3_free(c);
	srv_stop(s);
}

/* Parts of one upload from several threads through one handle. */
struct par {
	struct hb_s3 *c;
	int first;
	struct hb_s3_part parts[4];
	int rc;
};

static void *par_main(void *u)
{
	struct par *p = u;

	for (int i = 0; i < 4 && !p->rc; i++) {
		struct hb_err e = { 0 };

		p->rc = hb_s3_mpu_part(p->c, "b", "k", "U", p->first + i, "abc",
				       3, &p->parts[i], &e);
	}
	return NULL;
}

static void test_parallel_parts(void **state)
{
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct par p[4];
	pthread_t th[4];

	(void)state;
	for (int i = 0; i < 16; i++)
		srv_http(s, 200, "ETag: \"same\"\r\n", "");
	for (int t = 0; t < 4; t++) {
		p[t] = (struct par){ .c = c, .first = 1 + 4 * t };
		assert_int_equal(pthread_create(&th[t], NULL, par_main, &p[t]),
				 0);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(p[t].rc, 0);
		for (int i = 0; i < 4; i++) {
			assert_int_equal(p[t].parts[i].number, 1 + 4 * t + i);
			assert_string_equal(p[t].parts[i].etag, "same");
		}
	}
	assert_int_equal(srv_count(s), 16);
	hb_s3_free(c);
	srv_stop(s);
}

static void test_head_and_get(void **state)
{
	static const char data[] = "0123456789abcdef";
	unsigned char sha[32], bad[32] = { 0 };
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_s3_obj obj;
	struct hb_err e = { 0 };
	struct hb_buf b;
	char v[64];

	(void)state;
	hb_buf_init(&b, 0);
	hb_s3_sha256(data, 16, sha);
	srv_add(s, "HTTP/1.1 200 OK\r\nContent-Length: 16\r\nETag: \"e1\"\r\n"
		   "x-amz-checksum-sha256: AAAA\r\nLast-Modified: Fri, 27 Nov "
		   "2026 10:00:00 GMT\r\nConnection: close\r\n\r\n");
	assert_int_equal(hb_s3_head(c, "b", "k", &obj, &e), 0);
	assert_int_equal(obj.size, 16);
	assert_string_equal(obj.etag, "e1");
	assert_string_equal(obj.sha256_b64, "AAAA");
	assert_true(!strncmp(srv_req(s, 0), "HEAD /b/k ", 10));
	srv_add(s, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
		   "Connection: close\r\n\r\n");
	assert_int_equal(hb_s3_head(c, "b", "gone", &obj, &e), HB_ENOENT);

	srv_http(s, 200, "", data);
	assert_int_equal(hb_s3_get_buf(c, "b", "k", 0, 0, sha, &b, &e), 0);
	assert_string_equal(b.data, data);
	/* A digest that does not match is an error. */
	hb_buf_reset(&b);
	srv_http(s, 200, "", data);
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_s3_get_buf(c, "b", "k", 0, 0, bad, &b, &e),
			 HB_EIO);
	assert_non_null(strstr(e.msg, "SHA-256 of the 16 bytes read"));
	/* A range. */
	hb_buf_reset(&b);
	srv_http(s, 206, "Content-Range: bytes 5-9/16\r\n", "56789");
	assert_int_equal(hb_s3_get_buf(c, "b", "k", 5, 5, NULL, &b, &e), 0);
	assert_string_equal(b.data, "56789");
	assert_string_equal(header(srv_req(s, 4), "Range", v, sizeof(v)),
			    "bytes=5-9");
	/* A server that ignores Range and sends it all is caught. */
	hb_buf_reset(&b);
	srv_http(s, 200, "", data);
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_s3_get_buf(c, "b", "k", 5, 0, NULL, &b, &e),
			 HB_EPROTO);
	assert_int_equal(b.len, 0);
	hb_buf_free(&b);
	hb_s3_free(c);
	srv_stop(s);
}

/* A connection cut half way through a GET: the next attempt asks for the
 * rest, and the digest covers the whole. */
static void test_get_resumes(void **state)
{
	static const char data[] = "0123456789abcdef";
	unsigned char sha[32];
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_err e = { 0 };
	struct hb_buf b;
	char v[64];

	(void)state;
	hb_buf_init(&b, 0);
	hb_s3_sha256(data, 16, sha);
	srv_add(s, "HTTP/1.1 200 OK\r\nContent-Length: 16\r\nConnection: "
		   "close\r\n\r\n0123456");
	srv_http(s, 206, "Content-Range: bytes 7-15/16\r\n", "789abcdef");
	assert_int_equal(hb_s3_get_buf(c, "b", "k", 0, 0, sha, &b, &e), 0);
	assert_string_equal(b.data, data);
	assert_string_equal(header(srv_req(s, 1), "Range", v, sizeof(v)),
			    "bytes=7-");
	hb_buf_free(&b);
	hb_s3_free(c);
	srv_stop(s);
}

#define LIST_PAGE(trunc, token, key)                                           \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "       \
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"     \
	"<IsTruncated>" trunc "</IsTruncated>" token "<Contents><Key>" key     \
	"</Key><Size>3</Size><ETag>&quot;x&quot;</ETag></Contents>"           \
	"</ListBucketResult>"

static int collect(const struct hb_s3_entry *en, void *arg)
{
	struct hb_buf *b = arg;

	return hb_buf_printf(b, "%s=%llu;", en->key,
			     (unsigned long long)en->size);
}

static void test_list_pages(void **state)
{
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_err e = { 0 };
	struct hb_buf b;
	const char *r;

	(void)state;
	hb_buf_init(&b, 0);
	srv_http(s, 200, "", LIST_PAGE("true", "<NextContinuationToken>t/1+="
				       "</NextContinuationToken>", "p/a"));
	srv_http(s, 200, "", LIST_PAGE("false", "", "p/z/../../x"));
	assert_int_equal(hb_s3_list(c, "b", "p/", collect, &b, &e), 0);
	assert_string_equal(b.data, "p/a=3;p/z/../../x=3;");
	r = "GET /b?encoding-type=url&list-type=2&prefix=p%2F HTTP/1.1";
	assert_true(!strncmp(srv_req(s, 0), r, strlen(r)));
	r = "GET /b?continuation-token=t%2F1%2B%3D&encoding-type=url&"
	    "list-type=2&prefix=p%2F HTTP/1.1";
	assert_true(!strncmp(srv_req(s, 1), r, strlen(r)));
	/* A server whose pages do not move on (the same key again, and
	 * again) cannot keep the listing going for ever. */
	hb_buf_reset(&b);
	srv_http(s, 200, "", LIST_PAGE("true", "<NextContinuationToken>t"
				       "</NextContinuationToken>", "p/a"));
	srv_http(s, 200, "", LIST_PAGE("true", "<NextContinuationToken>t"
				       "</NextContinuationToken>", "p/a"));
	assert_int_equal(hb_s3_list(c, "b", "p/", collect, &b, &e), HB_EPROTO);
	assert_non_null(strstr(e.msg, "does not move on"));
	assert_string_equal(b.data, "p/a=3;");
	memset(&e, 0, sizeof(e));
	/* A malformed page is an error naming the operation. */
	srv_http(s, 200, "", "<ListBucketResult><Contents><Key>a&#0;</Key>"
			     "</Contents></ListBucketResult>");
	hb_buf_reset(&b);
	assert_int_equal(hb_s3_list(c, "b", NULL, collect, &b, &e), HB_EPROTO);
	assert_true(!strncmp(e.msg, "s3 ListObjectsV2 b: xml: byte ", 30));
	hb_buf_free(&b);
	hb_s3_free(c);
	srv_stop(s);
}

static void test_multipart(void **state)
{
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_s3_part parts[2];
	struct hb_err e = { 0 };
	char *id = NULL;
	const char *r;

	(void)state;
	srv_http(s, 200, "", "<?xml version=\"1.0\"?><InitiateMultipartUpload"
		 "Result><Bucket>b</Bucket><Key>k</Key><UploadId>U/1+</UploadId>"
		 "</InitiateMultipartUploadResult>");
	assert_int_equal(hb_s3_mpu_create(c, "b", "k", &id, &e), 0);
	assert_string_equal(id, "U/1+");
	assert_true(!strncmp(srv_req(s, 0), "POST /b/k?uploads= HTTP/1.1",
			     27));
	srv_http(s, 200, "ETag: \"p2\"\r\n", "");
	srv_http(s, 200, "ETag: \"p1\"\r\n", "");
	assert_int_equal(hb_s3_mpu_part(c, "b", "k", id, 2, "yy", 2, &parts[0],
					&e), 0);
	assert_int_equal(hb_s3_mpu_part(c, "b", "k", id, 1, "xx", 2, &parts[1],
					&e), 0);
	assert_string_equal(parts[0].etag, "p2");
	assert_true(!strncmp(srv_req(s, 1), "PUT /b/k?partNumber=2&uploadId="
			     "U%2F1%2B HTTP/1.1", 48));
	/* 200 with an <Error> inside: retried, then done. */
	srv_http(s, 200, "", "<?xml version=\"1.0\"?>\n\n<Error><Code>"
		 "InternalError</Code><Message>m</Message></Error>");
	srv_http(s, 200, "", "<CompleteMultipartUploadResult><ETag>&quot;x-2"
		 "&quot;</ETag></CompleteMultipartUploadResult>");
	assert_int_equal(hb_s3_mpu_complete(c, "b", "k", id, parts, 2, &e), 0);
	r = srv_req(s, 4);
	assert_true(!strncmp(r, "POST /b/k?uploadId=U%2F1%2B HTTP/1.1", 36));
	assert_non_null(strstr(r, "<Part><PartNumber>1</PartNumber><ETag>"
			       "&quot;p1&quot;</ETag></Part><Part><PartNumber>"
			       "2</PartNumber><ETag>&quot;p2&quot;</ETag>"
			       "</Part></CompleteMultipartUpload>"));
	/* A 200 <Error> that is not worth retrying. */
	srv_http(s, 200, "", "<Error><Code>InvalidPart</Code><Message>One or "
		 "more of the specified parts could not be found.</Message>"
		 "</Error>");
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_s3_mpu_complete(c, "b", "k", id, parts, 2, &e),
			 HB_EINVAL);
	assert_non_null(strstr(e.msg, "HTTP 200 InvalidPart"));
	srv_error(s, 404, "NoSuchUpload", "The specified upload does not "
		  "exist.");
	assert_int_equal(hb_s3_mpu_abort(c, "b", "k", id, &e), HB_ENOENT);
	free(id);
	hb_s3_free(c);
	srv_stop(s);
}

/* Every error path's message, and the secret in none of them, even when
 * a server echoes it. */
static void test_secret_never_shown(void **state)
{
	struct srv *s = srv_start();
	struct hb_s3 *c = client(s, 0);
	struct hb_s3_opts o = { .endpoint = "http://127.0.0.1:1",
				.access_key = AK, .secret_key = SECRET,
				.retries = -1, .connect_timeout_ms = 500 };
	unsigned char bad[32] = { 0 };
	struct hb_s3_part part = { 1, "e" };
	struct hb_s3_page page;
	struct hb_s3 *dead;
	struct hb_err e;
	struct hb_buf b;
	char *id = NULL;
	int n = 0;

	(void)state;
	hb_buf_init(&b, 0);
#define CHECK(call, code)                                                      \
	do {                                                                   \
		memset(&e, 0, sizeof(e));                                      \
		assert_int_equal((call), (code));                              \
		assert_true(e.msg[0] != '\0');                                 \
		assert_null(strstr(e.msg, SECRET));                            \
		assert_null(strstr(e.msg, "sEcReT"));                          \
		n++;                                                           \
	} while (0)
	srv_error(s, 403, "SignatureDoesNotMatch", "secret was " SECRET);
	CHECK(hb_s3_put(c, "b", "k", "x", 1, NULL, &e), HB_EPERM);
	srv_error(s, 400, "InvalidDigest", SECRET);
	CHECK(hb_s3_mpu_part(c, "b", "k", "u", 1, "x", 1, &part, &e),
	      HB_EINVAL);
	srv_error(s, 409, "BucketNotEmpty", "x");
	CHECK(hb_s3_delete(c, "b", "k", &e), HB_ECONFLICT);
	srv_http(s, 200, "", "not xml");
	CHECK(hb_s3_mpu_create(c, "b", "k", &id, &e), HB_EPROTO);
	srv_http(s, 200, "", "<Error><Code>AccessDenied</Code><Message>"
		 SECRET "</Message></Error>");
	CHECK(hb_s3_mpu_complete(c, "b", "k", "u", &part, 1, &e), HB_EINVAL);
	srv_http(s, 200, "", "abc");
	CHECK(hb_s3_get_buf(c, "b", "k", 0, 0, bad, &b, &e), HB_EIO);
	srv_http(s, 200, "", "<x/>");
	CHECK(hb_s3_list_page(c, "b", NULL, NULL, 0, &page, &e), HB_EPROTO);
	hb_s3_page_free(&page);
	CHECK(hb_s3_put(c, "", "k", "x", 1, NULL, &e), HB_EINVAL);
	CHECK(hb_s3_get_buf(c, "b", "", 0, 0, NULL, &b, &e), HB_EINVAL);
	CHECK(hb_s3_mpu_part(c, "b", "k", "u", 0, "x", 1, &part, &e),
	      HB_EINVAL);
	CHECK(hb_s3_mpu_abort(c, "b", "k", "", &e), HB_EINVAL);
	assert_int_equal(hb_s3_new(&o, &dead, &e), 0);
	CHECK(hb_s3_head(dead, "b", "k", NULL, &e), HB_EUNAVAIL);
	hb_s3_free(dead);
	o.endpoint = "ftp://x";
	CHECK(hb_s3_new(&o, &dead, &e), HB_EINVAL);
	o.endpoint = "http://user:" SECRET "@host/";
	CHECK(hb_s3_new(&o, &dead, &e), HB_EINVAL);
	o.endpoint = "http://h";
	o.access_key = AK;
	o.secret_key = NULL;
	CHECK(hb_s3_new(&o, &dead, &e), HB_EINVAL);
	assert_int_equal(n, 15);
#undef CHECK
	free(id);
	hb_buf_free(&b);
	hb_s3_free(c);
	srv_stop(s);
}

static void test_credentials(void **state)
{
	char path[] = "/tmp/hb-s3-creds-XXXXXX";
	struct hb_s3_opts o = { .endpoint = "http://h" };
	struct hb_err e = { 0 };
	struct hb_s3 *c;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("[default]\naws_access_key_id=AKFILE\naws_secret_access_key="
	      "sfile\n[other]\naws_access_key_id=AKOTHER\n"
	      "aws_secret_access_key=sother\n", f);
	fclose(f);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	/* The options first. */
	o.access_key = "AKOPT";
	o.secret_key = "sopt";
	assert_int_equal(hb_s3_new(&o, &c, &e), 0);
	assert_string_equal(hb_s3_creds_source(c), "options");
	hb_s3_free(c);
	/* Then the environment. */
	o.access_key = o.secret_key = NULL;
	assert_int_equal(hb_s3_new(&o, &c, &e), 0);
	assert_string_equal(hb_s3_creds_source(c), "environment");
	hb_s3_free(c);
	/* Then the file, profile AWS_PROFILE. */
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_PROFILE", "other", 1);
	assert_int_equal(hb_s3_new(&o, &c, &e), 0);
	assert_non_null(strstr(hb_s3_creds_source(c), "[other]"));
	hb_s3_free(c);
	setenv("AWS_PROFILE", "missing", 1);
	assert_int_equal(hb_s3_new(&o, &c, &e), HB_ENOENT);
	assert_null(strstr(e.msg, "sother"));
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unlink(path);
}

static void test_backoff(void **state)
{
	(void)state;
	for (uint32_t r = 0; r < 1000; r += 7) {
		long d1 = hb_s3_backoff_ms(1, 100, 10000, r);
		long d4 = hb_s3_backoff_ms(4, 100, 10000, r);
		long d20 = hb_s3_backoff_ms(20, 100, 10000, r);

		assert_true(d1 >= 50 && d1 <= 100);
		assert_true(d4 >= 400 && d4 <= 800);
		assert_true(d20 >= 5000 && d20 <= 10000);
	}
	assert_true(hb_s3_http_retryable(503));
	assert_true(hb_s3_http_retryable(500));
	assert_true(hb_s3_http_retryable(429));
	assert_false(hb_s3_http_retryable(501));
	assert_false(hb_s3_http_retryable(403));
	assert_false(hb_s3_http_retryable(400));
	assert_false(hb_s3_http_retryable(404));
	assert_int_equal(hb_s3_http_code(404), HB_ENOENT);
	assert_int_equal(hb_s3_http_code(403), HB_EPERM);
	assert_int_equal(hb_s3_http_code(412), HB_ECONFLICT);
	assert_int_equal(hb_s3_http_code(416), HB_EINVAL);
	assert_int_equal(hb_s3_http_code(503), HB_EUNAVAIL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_wire),
		cmocka_unit_test(test_vhost_and_checksum),
		cmocka_unit_test(test_retries),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_parallel_parts),
		cmocka_unit_test(test_head_and_get),
		cmocka_unit_test(test_get_resumes),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_multipart),
		cmocka_unit_test(test_secret_never_shown),
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_backoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
