/*
 * s3.c - the S3 client: a handle (endpoint, region, addressing,
 * credentials, a pool of curl handles), one request path that signs,
 * sends, classifies and retries, and the verbs on top of it.
 *
 * Every attempt is signed afresh (a new x-amz-date), with the Host header
 * set here so the signed and the sent one are the same bytes, and the
 * query string built by the signer (libcurl 7.88 would sign "?uploads"
 * wrongly).  CURLOPT_PATH_AS_IS keeps a key's "../" as S3 names it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <errno.h>
#include <unistd.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "hpcbridge/log.h"

#include "gateway/s3/s3_int.h"

#define LOW_SPEED_BPS 1024L
#define LOW_SPEED_S 30L
#define RETRY_AFTER_MAX_MS 60000L
#define DEF_CONNECT_MS 5000
#define DEF_RETRIES 5
#define DEF_BACKOFF_MS 100
#define DEF_BACKOFF_CAP 10000
#define POOL_KEEP 64
#define XML_BODY_MAX (32u << 20)
#define ERR_BODY_MAX (64u << 10)
#define MAX_HDRS 6

struct hb_s3 {
	char *scheme;	/* "http" or "https" */
	char *host;	/* "127.0.0.1:8080", as the Host header says it */
	char *base;	/* a path prefix from the endpoint, or "" */
	char *region;
	char *ca_file;
	int vhost, checksum, insecure;
	long timeout_ms, connect_ms, backoff_ms, backoff_cap;
	int retries;
	struct hb_s3_creds cr;
	pthread_mutex_t mu; /* guards pool */
	CURL *pool[POOL_KEEP];
	size_t npool;
};

/* One request and what came back. */
struct req {
	const char *op; /* "PutObject", for messages */
	const char *method;
	const char *bucket, *key; /* key NULL: the bucket */
	struct hb_s3_kv query[6]; /* the most a call sets: ListObjectsV2's five */
	size_t nq;
	struct hb_s3_kv hdr[MAX_HDRS]; /* signed, beside the standard ones */
	size_t nh;
	const void *body;
	size_t body_len;
	/* hb_s3_put_file's body: read from src_fd as curl sends it. */
	int src;
	int src_fd;
	uint64_t src_len, src_sent;
	const unsigned char *src_sha;
	int src_rc, src_errno;
	char payload_hash[65];
	int nobody; /* HEAD */
	/* A successful GET's bytes go to the sink, through the digest. */
	hb_s3_sink_fn sink;
	void *sink_arg;
	EVP_MD_CTX *md;
	uint64_t delivered;
	uint64_t range_from; /* the Range header's first byte, when sent */
	int ranged;
	int whole; /* the server sent 200 and all bytes for a Range */
	CURL *h;
	int sink_rc;
	/* The response. */
	long http;
	struct hb_buf resp;
	struct hb_s3_obj obj;
	int attempts;
	long retry_after_ms; /* the last answer's Retry-After, or -1 */
	const char *secret; /* wiped out of every message */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ------------------------------------------------------- classification */

int hb_s3_http_retryable(long http)
{
	return http == 429 || (http >= 500 && http < 600 && http != 501);
}

int hb_s3_http_code(long http)
{
	if (http >= 200 && http < 300)
		return 0;
	switch (http) {
	case 401:
	case 403:
		return HB_EPERM;
	case 404:
		return HB_ENOENT;
	case 409:
	case 412:
		return HB_ECONFLICT;
	case 429:
		return HB_EUNAVAIL;
	default:
		break;
	}
	if (http >= 400 && http < 500)
		return HB_EINVAL;
	if (http >= 500)
		return HB_EUNAVAIL;
	return HB_EPROTO;
}

long hb_s3_backoff_ms(int attempt, long base_ms, long cap_ms, uint32_t rnd)
{
	long d = base_ms > 0 ? base_ms : 1;

	if (cap_ms < d)
		cap_ms = d;
	for (int i = 1; i < attempt && d < cap_ms; i++)
		d = d > LONG_MAX / 2 ? cap_ms : d * 2;
	if (d > cap_ms)
		d = cap_ms;
	/* Full jitter: anywhere in [d/2, d], so clients that failed
	 * together do not come back together. */
	return d / 2 + (long)(rnd % (uint32_t)(d - d / 2 + 1));
}

static uint32_t rnd32(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)time(NULL) * 2654435761u;
	return r;
}

static int curl_retryable(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------- handle */

static int parse_endpoint(struct hb_s3 *s, const char *url,
			  struct hb_err *err)
{
	const char *h, *slash;
	size_t n;

	if (!strncmp(url, "https://", 8))
		h = url + 8;
	else if (!strncmp(url, "http://", 7))
		h = url + 7;
	else
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "s3: the endpoint is not http:// or "
				  "https://");
	slash = strchr(h, '/');
	n = slash ? (size_t)(slash - h) : strlen(h);
	/* Not the URL itself: user:password@ might be in it. */
	if (strchr(url, '@'))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "s3: the endpoint may not hold credentials "
				  "(user@host); give them apart");
	if (!n || strpbrk(url, "?# \t\r\n"))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "s3: endpoint '%.200s': want scheme://host"
				  "[:port][/path]", url);
	s->scheme = strndup(url, (size_t)(h - url) - 3);
	s->host = strndup(h, n);
	s->base = strdup(slash ? slash : "");
	if (!s->scheme || !s->host || !s->base)
		return HB_ENOMEM;
	n = strlen(s->base);
	while (n && s->base[n - 1] == '/')
		s->base[--n] = '\0';
	return 0;
}

static const char *env_or(const char *a, const char *b, const char *def)
{
	const char *v = getenv(a);

	if (v && *v)
		return v;
	v = b ? getenv(b) : NULL;
	return v && *v ? v : def;
}

static int new_endpoint(struct hb_s3 *s, const struct hb_s3_opts *o,
			struct hb_err *err)
{
	const char *ep = o->endpoint;
	char aws[128];

	s->region = strdup(o->region ? o->region
			   : env_or("AWS_REGION", "AWS_DEFAULT_REGION",
				    "us-east-1"));
	if (!s->region)
		return HB_ENOMEM;
	if (!ep)
		ep = env_or("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", NULL);
	if (!ep) {
		if (snprintf(aws, sizeof(aws), "https://s3.%s.amazonaws.com",
			     s->region) >= (int)sizeof(aws))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "s3: region name too long");
		ep = aws;
	}
	return parse_endpoint(s, ep, err);
}

int hb_s3_new(const struct hb_s3_opts *o, struct hb_s3 **out,
	      struct hb_err *err)
{
	struct hb_s3_opts none = { 0 };
	struct hb_s3 *s;
	int rc;

	*out = NULL;
	if (!o)
		o = &none;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return hb_err_set(err, HB_EIO, NULL, 0, "curl_global_init: %s",
				  curl_easy_strerror(curl_init_rc));
	s = calloc(1, sizeof(*s));
	if (!s)
		return HB_ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	s->vhost = o->virtual_host;
	s->checksum = o->checksum_sha256;
	s->insecure = o->insecure;
	s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
	s->connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms
						  : DEF_CONNECT_MS;
	s->retries = o->retries < 0 ? 0 : o->retries ? o->retries : DEF_RETRIES;
	s->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : DEF_BACKOFF_MS;
	s->backoff_cap = o->backoff_cap_ms > 0 ? o->backoff_cap_ms
					       : DEF_BACKOFF_CAP;
	rc = new_endpoint(s, o, err);
	if (!rc && o->ca_file && !(s->ca_file = strdup(o->ca_file)))
		rc = HB_ENOMEM;
	if (!rc)
		rc = hb_s3_creds_resolve(o, &s->cr, err);
	if (rc) {
		hb_s3_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void hb_s3_free(struct hb_s3 *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->npool; i++)
		curl_easy_cleanup(s->pool[i]);
	pthread_mutex_destroy(&s->mu);
	hb_s3_creds_clear(&s->cr);
	free(s->scheme);
	free(s->host);
	free(s->base);
	free(s->region);
	free(s->ca_file);
	free(s);
}

const char *hb_s3_creds_source(const struct hb_s3 *s)
{
	return s->cr.source;
}

static CURL *take_curl(struct hb_s3 *s)
{
	CURL *h = NULL;

	pthread_mutex_lock(&s->mu);
	if (s->npool)
		h = s->pool[--s->npool];
	pthread_mutex_unlock(&s->mu);
	if (h)
		curl_easy_reset(h); /* keeps its connections */
	else
		h = curl_easy_init();
	return h;
}

static void give_curl(struct hb_s3 *s, CURL *h)
{
	pthread_mutex_lock(&s->mu);
	if (s->npool < POOL_KEEP) {
		s->pool[s->npool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (h)
		curl_easy_cleanup(h);
}

/* ------------------------------------------------------------ request */

static size_t on_header(char *p, size_t size, size_t n, void *u)
{
	struct req *q = u;
	size_t len = size * n, k;
	static const struct {
		const char *name;
		size_t off, cap;
	} want[] = {
		{ "etag:", offsetof(struct hb_s3_obj, etag), 72 },
		{ "x-amz-checksum-sha256:",
		  offsetof(struct hb_s3_obj, sha256_b64), 48 },
		{ "last-modified:", offsetof(struct hb_s3_obj, last_modified),
		  40 },
	};

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		memset(&q->obj, 0, sizeof(q->obj)); /* a new response */
		q->retry_after_ms = -1;
		return len;
	}
	if (len > 16 && !strncasecmp(p, "content-length:", 15)) {
		q->obj.size = strtoull(p + 15, NULL, 10);
		return len;
	}
	if (len > 13 && !strncasecmp(p, "retry-after:", 12)) {
		/* Seconds only: S3 and Swift send no dates here. */
		char *end;
		long v = strtol(p + 12, &end, 10);

		if (end > p + 12 && v >= 0)
			q->retry_after_ms = v > RETRY_AFTER_MAX_MS / 1000
					    ? RETRY_AFTER_MAX_MS : v * 1000;
		return len;
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *v;
		char *d;

		k = strlen(want[i].name);
		if (len < k || strncasecmp(p, want[i].name, k))
			continue;
		v = p + k;
		while (v < p + len && (*v == ' ' || *v == '\t' || *v == '"'))
			v++;
		k = (size_t)(p + len - v);
		while (k && strchr(" \t\r\n\"", v[k - 1]))
			k--;
		d = (char *)&q->obj + want[i].off;
		if (k >= want[i].cap)
			k = want[i].cap - 1;
		memcpy(d, v, k);
		d[k] = '\0';
	}
	return len;
}

static size_t on_data(char *p, size_t size, size_t n, void *u)
{
	struct req *q = u;
	size_t len = size * n;

	if (!q->http) {
		curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &q->http);
		/* A server that ignores Range sends the whole object: the
		 * bytes would land at the wrong offset. */
		if (q->sink && q->ranged && q->range_from && q->http == 200) {
			q->whole = 1;
			return 0;
		}
	}
	if (q->sink && q->http >= 200 && q->http < 300) {
		if (q->md && !EVP_DigestUpdate(q->md, p, len))
			return 0;
		q->sink_rc = q->sink(p, len, q->sink_arg);
		if (q->sink_rc)
			return 0;
		q->delivered += len;
		return len;
	}
	return hb_buf_append(&q->resp, p, len) ? 0 : len;
}

/* Whether the file has a byte past its promised end. */
static int src_grew(struct req *q)
{
	char c;
	ssize_t r;

	while ((r = pread(q->src_fd, &c, 1, (off_t)q->src_len)) < 0 &&
	       errno == EINTR)
		;
	if (r < 0)
		q->src_errno = errno;
	return r != 0;
}

/*
 * hb_s3_put_file's body, as curl asks for it.  What goes out is hashed on
 * the way, and the digest is checked before the last bytes are handed
 * over: a file that no longer has the promised contents cuts the upload
 * short, and a body cut short never becomes an object.
 */
static size_t on_read(char *p, size_t size, size_t n, void *u)
{
	struct req *q = u;
	uint64_t left = q->src_len - q->src_sent;
	size_t want = size * n < left ? size * n : (size_t)left;
	unsigned char d[32];
	unsigned int dl = sizeof(d);
	ssize_t r;

	if (!want)
		return 0;
	while ((r = pread(q->src_fd, p, want, (off_t)q->src_sent)) < 0 &&
	       errno == EINTR)
		;
	if (r <= 0) {
		/* A read error, or the file shrank. */
		q->src_errno = r < 0 ? errno : 0;
		q->src_rc = r < 0 ? HB_EIO : HB_EAGAIN;
		return CURL_READFUNC_ABORT;
	}
	if (!EVP_DigestUpdate(q->md, p, (size_t)r)) {
		q->src_rc = HB_ENOMEM;
		return CURL_READFUNC_ABORT;
	}
	q->src_sent += (uint64_t)r;
	if (q->src_sent == q->src_len &&
	    (!EVP_DigestFinal_ex(q->md, d, &dl) || memcmp(d, q->src_sha, 32) ||
	     src_grew(q))) {
		q->src_rc = q->src_errno ? HB_EIO : HB_EAGAIN;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)r;
}

/* The path of bucket/key before encoding. */
static int raw_path(const struct hb_s3 *s, const struct req *q,
		    struct hb_buf *b)
{
	if (hb_buf_puts(b, s->base))
		return HB_ENOMEM;
	if (!s->vhost && (hb_buf_putc(b, '/') || hb_buf_puts(b, q->bucket)))
		return HB_ENOMEM;
	if (q->key && (hb_buf_putc(b, '/') || hb_buf_puts(b, q->key)))
		return HB_ENOMEM;
	if (!b->len && hb_buf_putc(b, '/'))
		return HB_ENOMEM;
	return 0;
}

/* Sign q now and build its URL and header list. */
static int sign_req(struct hb_s3 *s, struct req *q, struct hb_s3_sig *sig,
		    struct hb_buf *url, struct curl_slist **hl)
{
	struct hb_s3_kv h[MAX_HDRS + 4];
	struct hb_s3_sigreq r = { 0 };
	struct hb_buf host, path, line;
	char date[17];
	size_t nh = 0;
	int rc = HB_ENOMEM;

	hb_buf_init(&host, 0);
	hb_buf_init(&path, 0);
	hb_buf_init(&line, 0);
	if ((s->vhost && (hb_buf_puts(&host, q->bucket) ||
			  hb_buf_putc(&host, '.'))) ||
	    hb_buf_puts(&host, s->host) || raw_path(s, q, &path))
		goto out;
	hb_s3_amz_date((int64_t)time(NULL), date);
	h[nh++] = (struct hb_s3_kv){ "Host", host.data };
	h[nh++] = (struct hb_s3_kv){ "x-amz-date", date };
	h[nh++] = (struct hb_s3_kv){ "x-amz-content-sha256", q->payload_hash };
	if (s->cr.session_token)
		h[nh++] = (struct hb_s3_kv){ "x-amz-security-token",
					     s->cr.session_token };
	for (size_t i = 0; i < q->nh; i++)
		h[nh++] = q->hdr[i];
	r = (struct hb_s3_sigreq){ .method = q->method, .path = path.data,
		.query = q->query, .nquery = q->nq, .headers = h,
		.nheaders = nh, .payload_hash = q->payload_hash,
		.amz_date = date, .region = s->region, .service = "s3",
		.access_key = s->cr.access_key, .secret_key = s->cr.secret_key };
	rc = hb_s3_sign(&r, sig);
	if (rc)
		goto out;
	rc = HB_ENOMEM;
	if (hb_buf_printf(url, "%s://%s%s%s%s", s->scheme, host.data,
			  sig->path.data, sig->query.len ? "?" : "",
			  sig->query.len ? sig->query.data : ""))
		goto out;
	for (size_t i = 0; i < nh; i++) {
		struct curl_slist *t;

		hb_buf_reset(&line);
		if (hb_buf_printf(&line, "%s: %s", h[i].name, h[i].value))
			goto out;
		if (!(t = curl_slist_append(*hl, line.data)))
			goto out;
		*hl = t;
	}
	hb_buf_reset(&line);
	if (hb_buf_printf(&line, "Authorization: %s", sig->auth.data) ||
	    !(*hl = curl_slist_append(*hl, line.data)) ||
	    !(*hl = curl_slist_append(*hl, "Expect:")))
		goto out;
	rc = 0;
out:
	if (line.data)
		explicit_bzero(line.data, line.len);
	hb_buf_free(&line);
	hb_buf_free(&host);
	hb_buf_free(&path);
	return rc;
}

static void set_opts(struct hb_s3 *s, struct req *q, CURL *h,
		     const char *url, struct curl_slist *hl, char *ebuf)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "hpcbridge/" HB_VERSION);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
	/* A part of gigabytes may take long; a stalled one may not. */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BPS);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_S);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, q);
	if (s->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (s->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
	if (q->src) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, q);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)q->src_len);
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
	} else if (q->nobody) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(q->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
		if (q->body || !strcmp(q->method, "POST") ||
		    !strcmp(q->method, "PUT")) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS,
					 q->body ? q->body : "");
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)q->body_len);
		}
	}
}

static void redact(char *msg, const char *secret);

/* Put "OP bucket/key: " in front of what failed; never a secret. */
static int fail(struct hb_err *err, struct req *q, int code, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));
static int fail(struct hb_err *err, struct req *q, int code, const char *fmt,
		...)
{
	char what[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	redact(what, q->secret);
	return hb_err_set(err, code, NULL, 0, "s3 %s %.100s%s%.200s: %s",
			  q->op, q->bucket, q->key ? "/" : "",
			  q->key ? q->key : "", what);
}

/* What a finished transfer means: 0, or a code with *retry set when
 * another attempt may do better. */
static int judge(struct hb_s3 *s, struct req *q, CURLcode cc,
		 const char *ebuf, int *retry, struct hb_err *err)
{
	char code[64] = "", msg[300] = "";

	*retry = 0;
	if (q->whole)
		return fail(err, q, HB_EPROTO, "asked for bytes from %llu, the "
			    "server sent the whole object",
			    (unsigned long long)q->range_from);
	if (q->sink_rc)
		return fail(err, q, q->sink_rc, "the sink refused the data");
	if (q->src_rc == HB_EAGAIN)
		return fail(err, q, HB_EAGAIN, "the file changed while it was "
			    "sent; the upload was cut short");
	if (q->src_rc)
		return fail(err, q, q->src_rc, "read: %s",
			    q->src_errno ? strerror(q->src_errno) :
					   hb_strerror(q->src_rc));
	if (cc != CURLE_OK) {
		*retry = curl_retryable(cc);
		return fail(err, q, cc == CURLE_OPERATION_TIMEDOUT
				    ? HB_ETIMEDOUT : HB_EUNAVAIL,
			    "%s%s%s", curl_easy_strerror(cc),
			    *ebuf ? ": " : "", ebuf);
	}
	if (q->http >= 200 && q->http < 300)
		return 0;
	*retry = hb_s3_http_retryable(q->http);
	if (q->resp.len)
		redact(q->resp.data, s->cr.secret_key);
	if (q->resp.len)
		hb_s3_parse_error(q->resp.data, q->resp.len, code,
				  sizeof(code), msg, sizeof(msg));
	return fail(err, q, hb_s3_http_code(q->http), "HTTP %ld%s%s%s%s",
		    q->http, *code ? " " : "", code, *msg ? ": " : "", msg);
}

/* One attempt. */
static int attempt(struct hb_s3 *s, struct req *q, int *retry,
		   struct hb_err *err)
{
	struct hb_s3_sig sig = { 0 };
	struct curl_slist *hl = NULL;
	struct hb_buf url;
	char ebuf[CURL_ERROR_SIZE] = "";
	CURL *h = NULL;
	CURLcode cc;
	int rc;

	*retry = 0;
	hb_buf_init(&url, 0);
	q->http = 0;
	q->sink_rc = 0;
	q->whole = 0;
	q->retry_after_ms = -1;
	q->src_sent = 0;
	q->src_rc = 0;
	q->src_errno = 0;
	hb_buf_reset(&q->resp);
	if (q->src && !EVP_DigestInit_ex(q->md, EVP_sha256(), NULL)) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = sign_req(s, q, &sig, &url, &hl);
	if (rc) {
		rc = fail(err, q, rc, "cannot sign the request");
		goto out;
	}
	h = take_curl(s);
	if (!h) {
		rc = HB_ENOMEM;
		goto out;
	}
	q->h = h;
	set_opts(s, q, h, url.data, hl, ebuf);
	q->attempts++;
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &q->http);
	rc = judge(s, q, cc, ebuf, retry, err);
out:
	if (h)
		give_curl(s, h);
	curl_slist_free_all(hl);
	hb_s3_sig_free(&sig);
	hb_buf_free(&url);
	return rc;
}

/* Wipe the secret out of a message, should a server ever echo it. */
static void redact(char *msg, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	char *p;

	while (n >= 4 && (p = strstr(msg, secret)))
		memset(p, '*', n);
}

static int perform(struct hb_s3 *s, struct req *q, struct hb_err *err)
{
	struct hb_err e;
	struct timespec ts;
	long d;
	int rc, retry;

	q->secret = s->cr.secret_key;
	for (int n = 0;; n++) {
		uint64_t before = q->delivered;

		memset(&e, 0, sizeof(e));
		rc = attempt(s, q, &retry, &e);
		redact(e.msg, s->cr.secret_key);
		/* A GET that moved bytes resumes with a new Range (get_loop)
		 * rather than from the start. */
		if (!rc || !retry || n >= s->retries || q->delivered != before)
			break;
		d = hb_s3_backoff_ms(n + 1, s->backoff_ms, s->backoff_cap,
				     rnd32());
		if (q->retry_after_ms > d)
			d = q->retry_after_ms;
		hb_log(HB_LOG_DEBUG, "%s; retry %d in %ld ms", e.msg, n + 1, d);
		ts.tv_sec = d / 1000;
		ts.tv_nsec = (d % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
	if (rc)
		hb_err_set(err, rc, NULL, 0, "%.480s%s", e.msg,
			   q->attempts > 1 ? " (after retries)" : "");
	return rc;
}

static int req_init(struct req *q, const char *op, const char *method,
		    const char *bucket, const char *key, struct hb_err *err)
{
	memset(q, 0, sizeof(*q));
	q->op = op;
	q->method = method;
	q->bucket = bucket ? bucket : "";
	q->key = key;
	memcpy(q->payload_hash, HB_S3_EMPTY_SHA256, 65);
	hb_buf_init(&q->resp, XML_BODY_MAX);
	if (!bucket || !*bucket || strchr(bucket, '/'))
		return fail(err, q, HB_EINVAL, "bad bucket name");
	if (key && !*key)
		return fail(err, q, HB_EINVAL, "empty key");
	return 0;
}

static void req_free(struct req *q)
{
	hb_buf_free(&q->resp);
	if (q->md)
		EVP_MD_CTX_free(q->md);
}

/* Sign the body: its SHA-256 (given or computed), Content-MD5, and
 * x-amz-checksum-sha256 when checksum.  b64 holds the header values. */
static int body_digests(int checksum, struct req *q, const void *data,
			size_t n, const unsigned char *sha256,
			struct hb_buf *b64)
{
	unsigned char h[32], md5[16];
	unsigned int ml = 16;
	size_t mark;

	q->body = data;
	q->body_len = n;
	if (!sha256) {
		hb_s3_sha256(data, n, h);
		sha256 = h;
	}
	hb_s3_hex(sha256, 32, q->payload_hash);
	EVP_Digest(data, n, md5, &ml, EVP_md5(), NULL);
	/* The values live in one buffer: reserve first so it never moves. */
	if (hb_buf_reserve(b64, 128) || hb_buf_base64(b64, md5, 16) ||
	    hb_buf_putc(b64, '\0'))
		return HB_ENOMEM;
	q->hdr[q->nh++] = (struct hb_s3_kv){ "Content-MD5", b64->data };
	mark = b64->len;
	if (checksum) {
		if (hb_buf_base64(b64, sha256, 32))
			return HB_ENOMEM;
		q->hdr[q->nh++] = (struct hb_s3_kv){ "x-amz-checksum-sha256",
						     b64->data + mark };
	}
	return 0;
}

/* --------------------------------------------------------------- verbs */

int hb_s3_put(struct hb_s3 *s, const char *bucket, const char *key,
	      const void *data, size_t n, const unsigned char *sha256,
	      struct hb_err *err)
{
	struct hb_buf b64;
	struct req q;
	int rc;

	hb_buf_init(&b64, 0);
	rc = req_init(&q, "PutObject", "PUT", bucket, key, err);
	if (!rc && !key)
		rc = fail(err, &q, HB_EINVAL, "no key");
	if (!rc)
		rc = body_digests(s->checksum, &q, data, n, sha256, &b64);
	if (!rc) {
		q.hdr[q.nh++] = (struct hb_s3_kv){ "Content-Type",
						   "application/octet-stream" };
		rc = perform(s, &q, err);
	}
	req_free(&q);
	hb_buf_free(&b64);
	return rc;
}

int hb_s3_put_file(struct hb_s3 *s, const char *bucket, const char *key,
		   int fd, uint64_t size, const unsigned char sha256[32],
		   struct hb_err *err)
{
	struct req q;
	int rc;

	/* Nothing for curl to read, so nothing to hash on the way. */
	if (!size) {
		unsigned char e[32];

		hb_s3_sha256("", 0, e);
		req_init(&q, "PutObject", "PUT", bucket, key, err);
		q.src_fd = fd;
		rc = memcmp(e, sha256, 32) || src_grew(&q)
			     ? fail(err, &q, HB_EAGAIN, "the file changed")
			     : hb_s3_put(s, bucket, key, "", 0, sha256, err);
		req_free(&q);
		return rc;
	}
	rc = req_init(&q, "PutObject", "PUT", bucket, key, err);
	if (!rc && !key)
		rc = fail(err, &q, HB_EINVAL, "no key");
	if (!rc && !(q.md = EVP_MD_CTX_new()))
		rc = HB_ENOMEM;
	if (!rc) {
		/* The signed payload digest is the checksum the server
		 * checks: no Content-MD5, which would cost a pass of its
		 * own before the first byte could go. */
		q.src = 1;
		q.src_fd = fd;
		q.src_len = size;
		q.src_sha = sha256;
		hb_s3_hex(sha256, 32, q.payload_hash);
		q.hdr[q.nh++] = (struct hb_s3_kv){ "Content-Type",
						   "application/octet-stream" };
		rc = perform(s, &q, err);
	}
	req_free(&q);
	return rc;
}

int hb_s3_head(struct hb_s3 *s, const char *bucket, const char *key,
	       struct hb_s3_obj *out, struct hb_err *err)
{
	struct req q;
	int rc;

	rc = req_init(&q, "HeadObject", "HEAD", bucket, key, err);
	q.nobody = 1;
	if (!rc)
		rc = perform(s, &q, err);
	if (!rc && out)
		*out = q.obj;
	req_free(&q);
	return rc;
}

int hb_s3_delete(struct hb_s3 *s, const char *bucket, const char *key,
		 struct hb_err *err)
{
	struct req q;
	int rc;

	rc = req_init(&q, "DeleteObject", "DELETE", bucket, key, err);
	if (!rc && !key)
		rc = fail(err, &q, HB_EINVAL, "no key");
	if (!rc)
		rc = perform(s, &q, err);
	req_free(&q);
	return rc;
}

/* A GET, resumed from the byte reached when an attempt fails part way. */
static int get_loop(struct hb_s3 *s, struct req *q, uint64_t off,
		    uint64_t len, struct hb_err *err)
{
	char range[64];
	uint64_t before;
	int rc;

	for (int tries = 0;; tries++) {
		uint64_t from = off + q->delivered;

		q->nh = 0;
		if (len && q->delivered >= len)
			return 0;
		q->ranged = from || len;
		q->range_from = from;
		if (q->ranged) {
			if (len)
				snprintf(range, sizeof(range), "bytes=%llu-%llu",
					 (unsigned long long)from,
					 (unsigned long long)(off + len - 1));
			else
				snprintf(range, sizeof(range), "bytes=%llu-",
					 (unsigned long long)from);
			q->hdr[q->nh++] = (struct hb_s3_kv){ "Range", range };
		}
		before = q->delivered;
		rc = perform(s, q, err);
		/* perform() retried what it could; a transfer that moved
		 * bytes before failing earns a fresh round from there. */
		if (!rc || q->delivered == before || tries >= s->retries ||
		    q->sink_rc || q->whole)
			return rc;
		if (err)
			memset(err, 0, sizeof(*err));
	}
}

int hb_s3_get(struct hb_s3 *s, const char *bucket, const char *key,
	      uint64_t off, uint64_t len, const unsigned char *want_sha256,
	      hb_s3_sink_fn sink, void *arg, struct hb_err *err)
{
	unsigned char got[32];
	unsigned int gl = 32;
	struct req q;
	int rc;

	rc = req_init(&q, "GetObject", "GET", bucket, key, err);
	if (!rc && !key)
		rc = fail(err, &q, HB_EINVAL, "no key");
	if (rc)
		goto out;
	q.sink = sink;
	q.sink_arg = arg;
	hb_buf_init(&q.resp, ERR_BODY_MAX);
	if (want_sha256) {
		q.md = EVP_MD_CTX_new();
		if (!q.md || !EVP_DigestInit_ex(q.md, EVP_sha256(), NULL)) {
			rc = HB_ENOMEM;
			goto out;
		}
	}
	rc = get_loop(s, &q, off, len, err);
	if (!rc && want_sha256) {
		EVP_DigestFinal_ex(q.md, got, &gl);
		if (memcmp(got, want_sha256, 32)) {
			char a[65], b[65];

			hb_s3_hex(got, 32, a);
			hb_s3_hex(want_sha256, 32, b);
			rc = fail(err, &q, HB_EIO, "SHA-256 of the %llu bytes "
				  "read is %s, not %s",
				  (unsigned long long)q.delivered, a, b);
		}
	}
out:
	req_free(&q);
	return rc;
}

/* One page of ListMultipartUploads after the markers (NULL: the first). */
static int mpu_list_page(struct hb_s3 *s, const char *bucket,
			 const char *prefix, const char *key_marker,
			 const char *upload_marker, struct hb_s3_uploads *p,
			 struct hb_err *err)
{
	struct req q;
	int rc;

	hb_arena_free(&p->arena);
	memset(p, 0, sizeof(*p));
	hb_arena_init(&p->arena, 0);
	rc = req_init(&q, "ListMultipartUploads", "GET", bucket, NULL, err);
	if (rc)
		goto out;
	q.query[q.nq++] = (struct hb_s3_kv){ "uploads", "" };
	if (prefix && *prefix)
		q.query[q.nq++] = (struct hb_s3_kv){ "prefix", prefix };
	if (key_marker) {
		q.query[q.nq++] = (struct hb_s3_kv){ "key-marker", key_marker };
		if (upload_marker && *upload_marker)
			q.query[q.nq++] = (struct hb_s3_kv){
				"upload-id-marker", upload_marker };
	}
	rc = perform(s, &q, err);
	if (!rc) {
		struct hb_err e = { 0 };

		rc = hb_s3_parse_mpu_list(q.resp.data ? q.resp.data : "",
					  q.resp.len, p, &e);
		if (rc)
			rc = fail(err, &q, rc, "%s", e.msg);
	}
out:
	req_free(&q);
	return rc;
}

int hb_s3_mpu_list(struct hb_s3 *s, const char *bucket, const char *prefix,
		   hb_s3_upload_fn fn, void *arg, struct hb_err *err)
{
	struct hb_s3_uploads p = { 0 };
	char *km = NULL, *um = NULL;
	int rc;

	for (;;) {
		rc = mpu_list_page(s, bucket, prefix, km, um, &p, err);
		/* The markers must move on, or a server could keep the
		 * listing going for ever. */
		if (!rc && p.truncated && km && !strcmp(p.next_key, km) &&
		    !strcmp(p.next_upload, um))
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"ListMultipartUploads %s: the listing "
					"does not move on",
					bucket);
		for (size_t i = 0; !rc && i < p.n; i++)
			rc = fn(&p.v[i], arg);
		free(km);
		free(um);
		km = um = NULL;
		if (rc || !p.truncated)
			break;
		if (!(km = strdup(p.next_key)) || !(um = strdup(p.next_upload))) {
			rc = HB_ENOMEM;
			break;
		}
	}
	free(km);
	free(um);
	hb_arena_free(&p.arena);
	return rc;
}

static int sink_buf(const void *p, size_t n, void *arg)
{
	struct hb_buf *b = arg;
	int rc = hb_buf_append(b, p, n);

	return rc ? rc : 0;
}

int hb_s3_get_buf(struct hb_s3 *s, const char *bucket, const char *key,
		  uint64_t off, uint64_t len,
		  const unsigned char *want_sha256, struct hb_buf *out,
		  struct hb_err *err)
{
	return hb_s3_get(s, bucket, key, off, len, want_sha256, sink_buf, out,
			 err);
}

/* ------------------------------------------------------------- listing */

void hb_s3_page_free(struct hb_s3_page *p)
{
	if (!p)
		return;
	hb_arena_free(&p->arena);
	memset(p, 0, sizeof(*p));
}

int hb_s3_list_page(struct hb_s3 *s, const char *bucket, const char *prefix,
		    const char *token, int max_keys, struct hb_s3_page *p,
		    struct hb_err *err)
{
	char mk[16];
	struct req q;
	int rc;

	memset(p, 0, sizeof(*p));
	hb_arena_init(&p->arena, XML_BODY_MAX * 2u);
	rc = req_init(&q, "ListObjectsV2", "GET", bucket, NULL, err);
	if (rc)
		goto out;
	q.query[q.nq++] = (struct hb_s3_kv){ "list-type", "2" };
	/* Keys come URL-encoded (and are decoded): a key may hold bytes
	 * that XML 1.0 cannot carry, and a server that must put one in its
	 * listing otherwise fails the whole listing. */
	q.query[q.nq++] = (struct hb_s3_kv){ "encoding-type", "url" };
	if (prefix && *prefix)
		q.query[q.nq++] = (struct hb_s3_kv){ "prefix", prefix };
	if (token)
		q.query[q.nq++] = (struct hb_s3_kv){ "continuation-token",
						     token };
	if (max_keys > 0) {
		snprintf(mk, sizeof(mk), "%d", max_keys);
		q.query[q.nq++] = (struct hb_s3_kv){ "max-keys", mk };
	}
	rc = perform(s, &q, err);
	if (!rc) {
		struct hb_err e = { 0 };

		rc = hb_s3_parse_list(q.resp.data ? q.resp.data : "",
				      q.resp.len, p, &e);
		if (rc)
			rc = fail(err, &q, rc, "%s", e.msg);
	}
out:
	req_free(&q);
	return rc;
}

int hb_s3_list(struct hb_s3 *s, const char *bucket, const char *prefix,
	       hb_s3_list_fn fn, void *arg, struct hb_err *err)
{
	struct hb_s3_page p = { 0 };
	char *token = NULL, *last = NULL;
	int rc;

	for (;;) {
		rc = hb_s3_list_page(s, bucket, prefix, token, 0, &p, err);
		/* S3 lists keys in order, each once: a page that does not
		 * begin after the last one's end, or a truncated page with
		 * no key, would let a server keep the listing going for
		 * ever. */
		if (!rc && ((p.truncated && !p.n) ||
			    (last && p.n && strcmp(p.v[0].key, last) <= 0)))
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"ListObjectsV2 %s: the listing does "
					"not move on",
					bucket);
		for (size_t i = 0; !rc && i < p.n; i++)
			rc = fn(&p.v[i], arg);
		free(token);
		token = NULL;
		if (rc || !p.truncated)
			break;
		free(last);
		if (!(token = strdup(p.next_token)) ||
		    !(last = strdup(p.v[p.n - 1].key))) {
			rc = HB_ENOMEM;
			break;
		}
		hb_s3_page_free(&p);
	}
	hb_s3_page_free(&p);
	free(token);
	free(last);
	return rc;
}

/* ----------------------------------------------------- multipart upload */

int hb_s3_mpu_create(struct hb_s3 *s, const char *bucket, const char *key,
		     char **upload_id, struct hb_err *err)
{
	struct req q;
	int rc;

	*upload_id = NULL;
	rc = req_init(&q, "CreateMultipartUpload", "POST", bucket, key, err);
	if (!rc && !key)
		rc = fail(err, &q, HB_EINVAL, "no key");
	if (rc)
		goto out;
	/* "uploads=": libcurl 7.88 signs a bare "?uploads" wrongly, and the
	 * signer writes every parameter as name=value. */
	q.query[q.nq++] = (struct hb_s3_kv){ "uploads", "" };
	q.hdr[q.nh++] = (struct hb_s3_kv){ "Content-Type",
					   "application/octet-stream" };
	rc = perform(s, &q, err);
	if (!rc) {
		struct hb_err e = { 0 };

		rc = hb_s3_parse_mpu_create(q.resp.data ? q.resp.data : "",
					    q.resp.len, upload_id, &e);
		if (rc)
			rc = fail(err, &q, rc, "%s", e.msg);
	}
out:
	req_free(&q);
	return rc;
}

int hb_s3_mpu_part(struct hb_s3 *s, const char *bucket, const char *key,
		   const char *upload_id, int number, const void *data,
		   size_t n, struct hb_s3_part *part, struct hb_err *err)
{
	struct hb_buf b64;
	char num[16];
	struct req q;
	int rc;

	hb_buf_init(&b64, 0);
	rc = req_init(&q, "UploadPart", "PUT", bucket, key, err);
	if (!rc && (!key || !upload_id || !*upload_id || number < 1 ||
		    number > 10000))
		rc = fail(err, &q, HB_EINVAL, "part %d: bad key, upload id "
			  "or number", number);
	if (!rc)
		/* Not x-amz-checksum-sha256: a part may carry one only when
		 * the upload was created with that algorithm, and complete
		 * must then repeat every part's; Content-MD5 is checked. */
		rc = body_digests(0, &q, data, n, NULL, &b64);
	if (rc)
		goto out;
	snprintf(num, sizeof(num), "%d", number);
	q.query[q.nq++] = (struct hb_s3_kv){ "partNumber", num };
	q.query[q.nq++] = (struct hb_s3_kv){ "uploadId", upload_id };
	rc = perform(s, &q, err);
	if (!rc && !q.obj.etag[0])
		rc = fail(err, &q, HB_EPROTO, "part %d: no ETag in the answer",
			  number);
	if (!rc) {
		part->number = number;
		memcpy(part->etag, q.obj.etag, sizeof(part->etag));
	}
out:
	req_free(&q);
	hb_buf_free(&b64);
	return rc;
}

static int part_cmp(const void *a, const void *b)
{
	const struct hb_s3_part *x = a, *y = b;

	return (x->number > y->number) - (x->number < y->number);
}

/* Append s with &, <, >, " and ' as entities. */
static int xml_escape(struct hb_buf *b, const char *s)
{
	for (; *s; s++) {
		const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;"
			      : *s == '>' ? "&gt;" : *s == '"' ? "&quot;"
			      : *s == '\'' ? "&apos;" : NULL;

		if (e ? hb_buf_puts(b, e) : hb_buf_putc(b, *s))
			return HB_ENOMEM;
	}
	return 0;
}

static int complete_body(struct hb_s3_part *parts, size_t n,
			 struct hb_buf *b)
{
	qsort(parts, n, sizeof(*parts), part_cmp);
	if (hb_buf_puts(b, "<CompleteMultipartUpload xmlns=\"http://s3."
			"amazonaws.com/doc/2006-03-01/\">"))
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i && parts[i].number == parts[i - 1].number)
			return HB_EINVAL;
		if (hb_buf_printf(b, "<Part><PartNumber>%d</PartNumber><ETag>"
				  "&quot;", parts[i].number) ||
		    xml_escape(b, parts[i].etag) ||
		    hb_buf_puts(b, "&quot;</ETag></Part>"))
			return HB_ENOMEM;
	}
	return hb_buf_puts(b, "</CompleteMultipartUpload>") ? HB_ENOMEM : 0;
}

int hb_s3_mpu_complete(struct hb_s3 *s, const char *bucket, const char *key,
		       const char *upload_id, struct hb_s3_part *parts,
		       size_t n, struct hb_err *err)
{
	char code[64], msg[300];
	struct hb_buf body;
	struct req q;
	int rc;

	hb_buf_init(&body, 0);
	rc = req_init(&q, "CompleteMultipartUpload", "POST", bucket, key, err);
	if (!rc && (!key || !upload_id || !*upload_id || !n))
		rc = fail(err, &q, HB_EINVAL, "no key, upload id or parts");
	if (!rc && (rc = complete_body(parts, n, &body)))
		rc = fail(err, &q, rc, rc == HB_EINVAL ? "a part number twice"
				       : "out of memory");
	if (rc)
		goto out;
	hb_s3_sha256(body.data, body.len, (unsigned char *)code);
	hb_s3_hex((unsigned char *)code, 32, q.payload_hash);
	q.body = body.data;
	q.body_len = body.len;
	q.query[q.nq++] = (struct hb_s3_kv){ "uploadId", upload_id };
	q.hdr[q.nh++] = (struct hb_s3_kv){ "Content-Type", "application/xml" };
	/* S3 may answer 200 and put an <Error> in the body, after it has
	 * been sending blanks to keep the connection open: an InternalError
	 * there is retried like a 500. */
	for (int tries = 0;; tries++) {
		rc = perform(s, &q, err);
		if (rc)
			break;
		if (q.resp.len)
			redact(q.resp.data, s->cr.secret_key);
		rc = hb_s3_parse_mpu_complete(q.resp.data ? q.resp.data : "",
					      q.resp.len, code, sizeof(code),
					      msg, sizeof(msg));
		if (rc == HB_EAGAIN && tries < s->retries &&
		    (!strcmp(code, "InternalError") ||
		     !strcmp(code, "SlowDown"))) {
			hb_log(HB_LOG_DEBUG, "s3 CompleteMultipartUpload: %s, "
			       "again", code);
			continue;
		}
		if (rc == HB_EAGAIN)
			rc = fail(err, &q, !strcmp(code, "InternalError") ||
					   !strcmp(code, "SlowDown")
					   ? HB_EUNAVAIL : HB_EINVAL,
				  "HTTP 200 %s: %s", code, msg);
		else if (rc)
			rc = fail(err, &q, rc, "%s", msg);
		break;
	}
out:
	req_free(&q);
	hb_buf_free(&body);
	return rc;
}

int hb_s3_mpu_abort(struct hb_s3 *s, const char *bucket, const char *key,
		    const char *upload_id, struct hb_err *err)
{
	struct req q;
	int rc;

	rc = req_init(&q, "AbortMultipartUpload", "DELETE", bucket, key, err);
	if (!rc && (!key || !upload_id || !*upload_id))
		rc = fail(err, &q, HB_EINVAL, "no key or upload id");
	if (!rc) {
		q.query[q.nq++] = (struct hb_s3_kv){ "uploadId", upload_id };
		rc = perform(s, &q, err);
	}
	req_free(&q);
	return rc;
}
