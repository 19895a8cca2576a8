/*
 * kube.c - the Kubernetes client: requests over libcurl, retries, errors,
 * and the verbs.
 *
 * Each call takes an easy handle from the client's pool (handles keep their
 * connections between calls; a handle is used by one thread at a time) and
 * gives it back reset.  The handles share DNS and TLS sessions through a
 * locked share object.  Credentials are taken anew for every attempt, as
 * token files rotate and exec tokens expire; a 401 re-reads them once.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "kube_int.h"

#define POOL_MAX	  8
#define DEF_TIMEOUT_MS	  30000
#define DEF_CONNECT_MS	  5000
#define DEF_RETRIES	  5
#define DEF_BACKOFF_MS	  100
#define DEF_BACKOFF_CAP	  5000
#define DEF_MAX_BODY	  (16u << 20)
#define ERR_BODY_MAX	  (64u << 10)
#define LIST_ITEMS_MAX	  1000000
#define RETRY_AFTER_MAX_S 3600

const struct hb_kube_res hb_kube_mpijob = { "kubeflow.org", "v2beta1",
					    "mpijobs", "MPIJob" };
const struct hb_kube_res hb_kube_trainjob = { "trainer.kubeflow.org",
					      "v1alpha1", "trainjobs",
					      "TrainJob" };
const struct hb_kube_res hb_kube_pod = { "", "v1", "pods", "Pod" };
const struct hb_kube_res hb_kube_event = { "", "v1", "events", "Event" };
const struct hb_kube_res hb_kube_node = { "", "v1", "nodes", "Node" };
static const struct hb_kube_res pod_log = { "", "v1", "pods", "Pod" };

struct hb_kube {
	uint64_t id;
	char *base; /* scheme://host:port[/prefix], no trailing '/' */
	char *ns;
	char *ua;
	struct hb_kube_opts o;
	int insecure;
	struct hb_kube_blob ca, cert, key;
	char *connect_to; /* tls-server-name: "NAME:PORT:HOST:PORT" */
	char *proxy;
	struct hb_kube_auth *auth;
	int refreshable; /* a token file or an exec plugin */
	CURLSH *share;
	pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_mu;
	CURL *pool[POOL_MAX];
	int npool;
};

/* ----------------------------------------------------- the last call */

struct tl_last {
	uint64_t id;
	struct hb_kube_last v;
};
static __thread struct tl_last tl_last[4];
static __thread unsigned tl_next;
static atomic_uint_fast64_t next_id = 1;

static void set_last(const struct hb_kube *k, long http, const char *reason,
		     int attempts)
{
	struct tl_last *t = NULL;

	for (int i = 0; i < 4; i++)
		if (tl_last[i].id == k->id)
			t = &tl_last[i];
	if (!t)
		t = &tl_last[tl_next++ % 4];
	t->id = k->id;
	t->v.http = http;
	t->v.attempts = attempts;
	snprintf(t->v.reason, sizeof(t->v.reason), "%s", reason ? reason : "");
}

void hb_kube_last(const struct hb_kube *k, struct hb_kube_last *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; k && i < 4; i++)
		if (tl_last[i].id == k->id)
			*out = tl_last[i].v;
}

/* ------------------------------------------------------ pure helpers */

int hb_kube_http_error(long http, const char *reason)
{
	if (http >= 200 && http < 300)
		return 0;
	switch (http) {
	case 400:
	case 422:
		return HB_EINVAL;
	case 401:
	case 403:
		return HB_EPERM;
	case 404:
		return HB_ENOENT;
	case 409:
		return reason && !strcmp(reason, "AlreadyExists")
			       ? HB_EEXIST
			       : HB_ECONFLICT;
	case 410:
		return HB_ESTATE;
	case 413:
		return HB_ETOOBIG;
	case 405:
	case 406:
	case 415:
		return HB_EUNSUP;
	case 429:
		return HB_EUNAVAIL;
	}
	if (http >= 500 && http < 600)
		return HB_EUNAVAIL;
	if (http >= 400 && http < 500)
		return HB_EINVAL;
	return HB_EPROTO;
}

int hb_kube_http_retryable(long http)
{
	return http == 429 ||
	       (http >= 500 && http < 600 && http != 501 && http != 505);
}

long hb_kube_backoff_ms(int attempt, long base_ms, long cap_ms,
			long retry_after_ms, uint32_t rnd)
{
	long d = base_ms > 0 ? base_ms : 0, j;

	if (cap_ms < d)
		cap_ms = d;
	for (int i = 1; i < attempt && d < cap_ms; i++)
		d = d > LONG_MAX / 2 ? cap_ms : d * 2;
	if (d > cap_ms)
		d = cap_ms;
	j = d / 2 + (long)(rnd % (uint32_t)(d - d / 2 + 1));
	if (retry_after_ms >= 0) {
		long r = retry_after_ms;

		if (r / 10 > 0)
			r += (long)((rnd >> 8) % (uint32_t)(r / 10 + 1));
		if (r > j)
			j = r;
	}
	return j;
}

long hb_kube_retry_after_ms(const char *value, int64_t now_s)
{
	char *end;
	long v;
	time_t t;

	if (!value)
		return -1;
	while (*value == ' ' || *value == '\t')
		value++;
	if (*value >= '0' && *value <= '9') {
		errno = 0;
		v = strtol(value, &end, 10);
		while (*end == ' ' || *end == '\t')
			end++;
		if (errno || *end || v < 0)
			return errno == ERANGE ? RETRY_AFTER_MAX_S * 1000L : -1;
		if (v > RETRY_AFTER_MAX_S)
			v = RETRY_AFTER_MAX_S;
		return v * 1000;
	}
	t = curl_getdate(value, NULL);
	if (t == (time_t)-1)
		return -1;
	if ((int64_t)t <= now_s)
		return 0;
	if ((int64_t)t - now_s > RETRY_AFTER_MAX_S)
		return RETRY_AFTER_MAX_S * 1000L;
	return (long)((int64_t)t - now_s) * 1000;
}

uint32_t hb_kube_random(void)
{
	static __thread uint64_t s;
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == sizeof(r))
		return r;
	if (!s) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		    (uint64_t)(uintptr_t)&r;
		s |= 1;
	}
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (uint32_t)(s >> 16);
}

static int put_escaped(struct hb_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~') {
			rc = hb_buf_putc(b, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			rc = hb_buf_append(b, e, 3);
		}
	}
	return rc;
}

int hb_kube_path(const struct hb_kube_res *res, const char *ns,
		 const char *name, const char *sub, struct hb_buf *out)
{
	int bad;

	if (res->group && *res->group)
		bad = hb_buf_puts(out, "/apis/") ||
		      put_escaped(out, res->group) || hb_buf_putc(out, '/');
	else
		bad = hb_buf_puts(out, "/api/");
	bad = bad || put_escaped(out, res->version);
	if (!bad && ns)
		bad = hb_buf_puts(out, "/namespaces/") || put_escaped(out, ns);
	bad = bad || hb_buf_putc(out, '/') || put_escaped(out, res->plural);
	if (!bad && name)
		bad = hb_buf_putc(out, '/') || put_escaped(out, name);
	if (!bad && sub)
		bad = hb_buf_putc(out, '/') || hb_buf_puts(out, sub);
	return bad ? HB_ENOMEM : 0;
}

int hb_kube_query(struct hb_buf *url, const char *key, const char *value)
{
	char sep = url->data && strchr(url->data, '?') ? '&' : '?';

	if (hb_buf_putc(url, sep) || hb_buf_puts(url, key) ||
	    hb_buf_putc(url, '=') || put_escaped(url, value))
		return HB_ENOMEM;
	return 0;
}

/* -------------------------------------------------------- the client */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access acc,
		       void *u)
{
	struct hb_kube *k = u;

	(void)h;
	(void)acc;
	if (data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&k->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *u)
{
	struct hb_kube *k = u;

	(void)h;
	if (data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&k->locks[data]);
}

int hb_kube_retryable(int rc)
{
	return rc == HB_EUNAVAIL || rc == HB_ETIMEDOUT || rc == HB_ENOMEM ||
	       rc == HB_EIO;
}

/*
 * tls-server-name: the URL names the server by that name (so curl checks
 * the certificate against it and sends it as SNI) and CURLOPT_CONNECT_TO
 * sends the connection to the real host.
 */
static int server_name_override(struct hb_kube *k, const char *server,
				const char *tsn)
{
	const char *hs = strstr(server, "://"), *he, *port = NULL;
	const char *path;
	struct hb_buf b, c;
	int https, rc;

	if (!hs)
		return HB_EINVAL;
	https = !strncmp(server, "https", 5);
	hs += 3;
	path = hs + strcspn(hs, "/");
	if (*hs == '[') {
		he = memchr(hs, ']', (size_t)(path - hs));
		if (!he)
			return HB_EINVAL;
		he++;
		if (he < path && *he == ':')
			port = he + 1;
	} else {
		he = memchr(hs, ':', (size_t)(path - hs));
		if (he)
			port = he + 1;
		else
			he = path;
	}
	hb_buf_init(&b, 0);
	hb_buf_init(&c, 0);
	rc = hb_buf_printf(&b, "%.*s://%s:%.*s%s", https ? 5 : 4, server, tsn,
			   port ? (int)(path - port) : 3,
			   port ? port : (https ? "443" : "80"), path);
	rc = rc ? rc
		: hb_buf_printf(&c, "%s:%.*s:%.*s:%.*s", tsn,
				port ? (int)(path - port) : 3,
				port ? port : (https ? "443" : "80"),
				(int)(he - hs), hs,
				port ? (int)(path - port) : 3,
				port ? port : (https ? "443" : "80"));
	if (rc) {
		hb_buf_free(&b);
		hb_buf_free(&c);
		return rc;
	}
	free(k->base);
	k->base = hb_buf_steal(&b);
	k->connect_to = hb_buf_steal(&c);
	return k->base && k->connect_to ? 0 : HB_ENOMEM;
}

int hb_kube_new(const struct hb_kube_config *cfg,
		const struct hb_kube_opts *opts, struct hb_kube **out,
		struct hb_err *err)
{
	struct hb_kube *k;
	int rc = 0;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc)
		return hb_err_set(err, HB_EIO, NULL, 0, "curl_global_init: %s",
				  curl_easy_strerror(curl_init_rc));
	if (!cfg || !cfg->server)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no configuration");
	k = calloc(1, sizeof(*k));
	if (!k)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	k->id = atomic_fetch_add(&next_id, 1);
	pthread_mutex_init(&k->pool_mu, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&k->locks[i], NULL);
	if (opts)
		k->o = *opts;
	if (k->o.timeout_ms <= 0)
		k->o.timeout_ms = DEF_TIMEOUT_MS;
	if (k->o.connect_timeout_ms <= 0)
		k->o.connect_timeout_ms = DEF_CONNECT_MS;
	if (k->o.retries == 0)
		k->o.retries = DEF_RETRIES;
	else if (k->o.retries < 0)
		k->o.retries = 0;
	if (k->o.backoff_ms <= 0)
		k->o.backoff_ms = DEF_BACKOFF_MS;
	if (k->o.backoff_cap_ms <= 0)
		k->o.backoff_cap_ms = DEF_BACKOFF_CAP;
	if (k->o.max_body == 0)
		k->o.max_body = DEF_MAX_BODY;
	if (k->o.user_agent && *k->o.user_agent)
		k->ua = strdup(k->o.user_agent);
	else
		k->ua = strdup("hpcbridge/" HB_VERSION);
	k->o.user_agent = k->ua;
	k->base = strdup(cfg->server);
	k->ns = strdup(cfg->ns ? cfg->ns : "default");
	k->insecure = cfg->insecure;
	if (!k->ua || !k->base || !k->ns || hb_kube_blob_dup(&cfg->ca, &k->ca) ||
	    hb_kube_blob_dup(&cfg->cert, &k->cert) || hb_kube_blob_dup(&cfg->key, &k->key) ||
	    (cfg->proxy_url && !(k->proxy = strdup(cfg->proxy_url)))) {
		rc = HB_ENOMEM;
		goto out;
	}
	if (cfg->tls_server_name &&
	    (rc = server_name_override(k, cfg->server, cfg->tls_server_name))) {
		hb_err_set(err, rc, cfg->source, 0,
			   "server %s: cannot use tls-server-name",
			   cfg->server);
		goto out;
	}
	if ((rc = hb_kube_auth_new(cfg, &k->auth)))
		goto out;
	k->refreshable = cfg->token_file || cfg->exec;
	k->share = curl_share_init();
	if (!k->share) {
		rc = HB_ENOMEM;
		goto out;
	}
	curl_share_setopt(k->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(k->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(k->share, CURLSHOPT_USERDATA, k);
	curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(k->share, CURLSHOPT_SHARE,
			  CURL_LOCK_DATA_SSL_SESSION);
out:
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, NULL, 0, "out of memory");
		hb_kube_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void hb_kube_free(struct hb_kube *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->npool; i++)
		curl_easy_cleanup(k->pool[i]);
	if (k->share)
		curl_share_cleanup(k->share);
	hb_kube_auth_free(k->auth);
	free(k->base);
	free(k->ns);
	free(k->ua);
	free(k->connect_to);
	free(k->proxy);
	hb_kube_blob_free(&k->ca);
	hb_kube_blob_free(&k->cert);
	hb_kube_blob_free(&k->key);
	pthread_mutex_destroy(&k->pool_mu);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&k->locks[i]);
	free(k);
}

const char *hb_kube_ns(const struct hb_kube *k)
{
	return k->ns;
}

const struct hb_kube_opts *hb_kube_opts_of(const struct hb_kube *k)
{
	return &k->o;
}

static CURL *handle_get(struct hb_kube *k)
{
	CURL *h = NULL;

	pthread_mutex_lock(&k->pool_mu);
	if (k->npool)
		h = k->pool[--k->npool];
	pthread_mutex_unlock(&k->pool_mu);
	return h ? h : curl_easy_init();
}

static void handle_put(struct hb_kube *k, CURL *h, int keep)
{
	if (!h)
		return;
	if (keep) {
		curl_easy_reset(h);
		pthread_mutex_lock(&k->pool_mu);
		if (k->npool < POOL_MAX) {
			k->pool[k->npool++] = h;
			h = NULL;
		}
		pthread_mutex_unlock(&k->pool_mu);
	}
	if (h)
		curl_easy_cleanup(h);
}

/* -------------------------------------------------------- a request */

struct call {
	struct hb_kube *k;
	const char *method;
	const char *path; /* from the API root, query included */
	const char *ctype;
	const char *body;
	size_t blen;
	int timeout_ms; /* 0: none */
	/* The response, unless streamed. */
	struct hb_buf resp;
	size_t limit;	 /* largest body kept */
	int truncate_ok; /* a longer body is cut, not an error */
	/* Streaming: data goes to fn once the status is 2xx. */
	int (*fn)(void *ctx, const char *data, size_t len);
	void *ctx;
	const atomic_int *stop;
	int poll_ms;
	/* What happened. */
	CURL *h;
	long http;
	int status_read;
	int too_big, truncated, delivered, stopped, fn_rc;
	char reason[48];
	int attempts;
};

static size_t on_data(char *p, size_t sz, size_t n, void *u)
{
	struct call *c = u;
	size_t len = sz * n;

	if (!c->status_read) {
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->http);
		c->status_read = 1;
	}
	if (c->fn && c->http >= 200 && c->http < 300) {
		int rc;

		c->delivered = 1;
		rc = c->fn(c->ctx, p, len);
		if (rc) {
			c->fn_rc = rc;
			return 0;
		}
		return len;
	}
	if (c->resp.len + len > c->limit) {
		if (c->truncate_ok && c->http >= 200 && c->http < 300) {
			hb_buf_append(&c->resp, p, c->limit - c->resp.len);
			c->truncated = 1;
		} else {
			c->too_big = 1;
		}
		return 0;
	}
	if (hb_buf_append(&c->resp, p, len)) {
		c->too_big = 1;
		return 0;
	}
	return len;
}

static int setup(struct call *c, const struct hb_kube_creds *cr,
		 int64_t deadline, struct curl_slist **hdrs, char **url)
{
	struct hb_kube *k = c->k;
	CURL *h = c->h;
	struct hb_buf b;
	const struct hb_kube_blob *cert = cr->cert.data ? &cr->cert : &k->cert;
	const struct hb_kube_blob *key = cr->key.data ? &cr->key : &k->key;
	struct curl_slist *l = NULL, *t;
	int rc = 0;

	hb_buf_init(&b, 0);
	if (hb_buf_puts(&b, k->base) || hb_buf_puts(&b, c->path))
		goto nomem;
	*url = hb_buf_steal(&b);
	if (!*url)
		goto nomem;
	curl_easy_setopt(h, CURLOPT_URL, *url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_USERAGENT, k->ua);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_SHARE, k->share);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	if (deadline) {
		int64_t left = deadline - hb_clock_mono_ms();

		if (left < 1)
			left = 1;
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
				 (long)(left < k->o.connect_timeout_ms
						? left
						: k->o.connect_timeout_ms));
	} else {
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
				 (long)k->o.connect_timeout_ms);
	}
	if (k->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (k->ca.data) {
		struct curl_blob bl = { k->ca.data, k->ca.len,
					CURL_BLOB_NOCOPY };

		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &bl);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	}
	if (cert->data && key->data) {
		struct curl_blob cb = { cert->data, cert->len, CURL_BLOB_COPY };
		struct curl_blob kb = { key->data, key->len, CURL_BLOB_COPY };

		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (k->connect_to) {
		t = curl_slist_append(NULL, k->connect_to);
		if (!t)
			goto nomem;
		hdrs[1] = t;
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, t);
	}
	if (k->proxy)
		curl_easy_setopt(h, CURLOPT_PROXY, k->proxy);
	if (cr->username || cr->password) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME,
				 cr->username ? cr->username : "");
		curl_easy_setopt(h, CURLOPT_PASSWORD,
				 cr->password ? cr->password : "");
	}
	if (!(l = curl_slist_append(l, "Accept: application/json, */*")))
		goto nomem;
	if (!(t = curl_slist_append(l, "Expect:")))
		goto nomem;
	if (c->ctype) {
		hb_buf_init(&b, 0);
		if (hb_buf_printf(&b, "Content-Type: %s", c->ctype) ||
		    !(t = curl_slist_append(l, b.data))) {
			hb_buf_free(&b);
			goto nomem;
		}
		hb_buf_free(&b);
	}
	if (cr->token) {
		hb_buf_init(&b, 0);
		if (hb_buf_printf(&b, "Authorization: Bearer %s", cr->token) ||
		    !(t = curl_slist_append(l, b.data)))
			rc = HB_ENOMEM;
		if (b.data)
			explicit_bzero(b.data, b.len);
		hb_buf_free(&b);
		if (rc)
			goto nomem;
	}
	hdrs[0] = l;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	if (strcmp(c->method, "GET"))
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
	if (c->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)c->blen);
	}
	return 0;
nomem:
	curl_slist_free_all(l);
	hb_buf_free(&b);
	return HB_ENOMEM;
}

/* One exchange: the easy interface, or a multi loop that checks *stop. */
static CURLcode perform(struct call *c)
{
	CURLM *m;
	CURLMsg *msg;
	CURLcode cc = CURLE_OK;
	int running = 1, q;

	if (!c->stop)
		return curl_easy_perform(c->h);
	m = curl_multi_init();
	if (!m)
		return CURLE_OUT_OF_MEMORY;
	if (curl_multi_add_handle(m, c->h)) {
		curl_multi_cleanup(m);
		return CURLE_OUT_OF_MEMORY;
	}
	while (running) {
		if (curl_multi_perform(m, &running)) {
			cc = CURLE_RECV_ERROR;
			break;
		}
		if (!running)
			break;
		if (atomic_load(c->stop)) {
			c->stopped = 1;
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		curl_multi_poll(m, NULL, 0, c->poll_ms > 0 ? c->poll_ms : 200,
				NULL);
	}
	if (!c->stopped) {
		while ((msg = curl_multi_info_read(m, &q)))
			if (msg->msg == CURLMSG_DONE &&
			    msg->easy_handle == c->h)
				cc = msg->data.result;
	}
	curl_multi_remove_handle(m, c->h);
	curl_multi_cleanup(m);
	return cc;
}

/* The path without its query, for messages. */
static int path_len(const char *path)
{
	size_t n = strcspn(path, "?");

	return n > 160 ? 160 : (int)n;
}

/* An error status: the Status object's reason and message if any. */
static int http_fail(struct call *c, struct hb_err *e)
{
	cJSON *st = NULL;
	const cJSON *reason, *msg;
	char snippet[128] = "";
	int rc;

	if (c->resp.len)
		st = cJSON_ParseWithLength(c->resp.data, c->resp.len);
	reason = cJSON_GetObjectItemCaseSensitive(st, "reason");
	msg = cJSON_GetObjectItemCaseSensitive(st, "message");
	if (cJSON_IsString(reason))
		snprintf(c->reason, sizeof(c->reason), "%s",
			 reason->valuestring);
	rc = hb_kube_http_error(c->http, c->reason);
	if (!cJSON_IsString(msg) && c->resp.len) {
		size_t j = 0;

		/* Not a Status (a proxy's page?): its start, printable. */
		for (size_t i = 0; i < c->resp.len && j < sizeof(snippet) - 1;
		     i++) {
			unsigned char ch = (unsigned char)c->resp.data[i];

			snippet[j++] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
		}
		snippet[j] = '\0';
	}
	hb_err_set(e, rc, NULL, 0, "%s %.*s: HTTP %ld%s%s: %s", c->method,
		   path_len(c->path), c->path, c->http, c->reason[0] ? " " : "",
		   c->reason,
		   cJSON_IsString(msg) ? msg->valuestring
		   : snippet[0]	       ? snippet
				       : "no message");
	cJSON_Delete(st);
	return rc;
}

/* What a transport failure means, and whether to try again. */
static int curl_fail(struct call *c, CURLcode cc, struct hb_err *e, int *retry)
{
	int rc;

	*retry = 0;
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		rc = HB_ETIMEDOUT;
		break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		rc = HB_EUNAVAIL;
		*retry = 1;
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_USE_SSL_FAILED:
		rc = HB_EUNAVAIL;
		break;
	case CURLE_OUT_OF_MEMORY:
		rc = HB_ENOMEM;
		break;
	case CURLE_URL_MALFORMAT:
		rc = HB_EINVAL;
		break;
	default:
		rc = HB_EPROTO;
		break;
	}
	return hb_err_set(e, rc, NULL, 0, "%s %.*s: %s", c->method,
			  path_len(c->path), c->path, curl_easy_strerror(cc));
}

/* Wait ms, or less if *stop comes first; 1 when stopped. */
static int nap(int64_t ms, const atomic_int *stop, int poll_ms)
{
	while (ms > 0) {
		int64_t step =
			stop && poll_ms > 0 && poll_ms < ms ? poll_ms : ms;
		struct timespec ts = { (time_t)(step / 1000),
				       (long)(step % 1000) * 1000000 };

		if (stop && atomic_load(stop))
			return 1;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		ms -= step;
	}
	return stop && atomic_load(stop);
}

/*
 * Run c with retries.  0: a 2xx response (in c->resp unless streamed).
 */
static int run(struct call *c, struct hb_err *err)
{
	struct hb_kube *k = c->k;
	int64_t deadline =
		c->timeout_ms > 0 ? hb_clock_mono_ms() + c->timeout_ms : 0;
	int refreshed = 0, refresh = 0, retries = 0, rc;
	struct hb_err e;

	hb_buf_init(&c->resp, c->limit + 1);
	for (;;) {
		struct hb_kube_creds cr;
		struct curl_slist *hdrs[2] = { NULL, NULL };
		char *url = NULL;
		CURLcode cc;
		long ra = -1;
		int retry = 0;

		memset(&e, 0, sizeof(e));
		hb_buf_reset(&c->resp);
		c->http = 0;
		c->status_read = 0;
		c->reason[0] = '\0';
		c->too_big = c->truncated = 0;
		rc = hb_kube_auth_get(k->auth, refresh, deadline, &cr, &e);
		refresh = 0;
		if (rc)
			break;
		c->h = handle_get(k);
		if (!c->h) {
			hb_kube_creds_clear(&cr);
			rc = hb_err_set(&e, HB_ENOMEM, NULL, 0,
					"out of memory");
			break;
		}
		rc = setup(c, &cr, deadline, hdrs, &url);
		hb_kube_creds_clear(&cr);
		if (rc) {
			hb_err_set(&e, rc, NULL, 0, "out of memory");
			handle_put(k, c->h, 0);
			curl_slist_free_all(hdrs[0]);
			curl_slist_free_all(hdrs[1]);
			free(url);
			break;
		}
		c->attempts++;
		cc = perform(c);
		if (!c->http)
			curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE,
					  &c->http);
		if (c->http == 429 || c->http == 503) {
			struct curl_header *hh;

			if (curl_easy_header(c->h, "Retry-After", 0,
					     CURLH_HEADER, -1,
					     &hh) == CURLHE_OK)
				ra = hb_kube_retry_after_ms(
					hh->value, (int64_t)time(NULL));
		}
		handle_put(k, c->h, 1);
		c->h = NULL;
		curl_slist_free_all(hdrs[0]);
		curl_slist_free_all(hdrs[1]);
		free(url);
		if (c->stopped) {
			rc = 0;
			break;
		}
		if (c->fn_rc) {
			rc = c->fn_rc;
			break;
		}
		if (cc == CURLE_WRITE_ERROR && c->truncated)
			cc = CURLE_OK;
		if (cc == CURLE_WRITE_ERROR && c->too_big) {
			rc = hb_err_set(&e, HB_ETOOBIG, NULL, 0,
					"%s %.*s: the response is larger than "
					"%zu bytes",
					c->method, path_len(c->path), c->path,
					c->limit);
			break;
		}
		if (cc != CURLE_OK && (c->http < 400 || c->delivered)) {
			rc = curl_fail(c, cc, &e, &retry);
		} else if (c->http >= 200 && c->http < 300) {
			rc = 0;
			break;
		} else {
			rc = http_fail(c, &e);
			retry = hb_kube_http_retryable(c->http);
			if (c->http == 401 && !refreshed && k->refreshable &&
			    !c->delivered) {
				refreshed = refresh = 1;
				continue;
			}
		}
		if (!retry || c->delivered || retries >= k->o.retries)
			break;
		{
			long d = hb_kube_backoff_ms(
				retries + 1, k->o.backoff_ms,
				k->o.backoff_cap_ms, ra, hb_kube_random());

			if (deadline && hb_clock_mono_ms() + d >= deadline) {
				hb_log(HB_LOG_DEBUG,
				       "kube: no time left to retry %s %.*s",
				       c->method, path_len(c->path), c->path);
				break;
			}
			hb_log(HB_LOG_DEBUG,
			       "kube: %s %.*s: retry %d in %ld ms (%s)",
			       c->method, path_len(c->path), c->path,
			       retries + 1, d, e.msg);
			if (nap(d, c->stop, c->poll_ms)) {
				c->stopped = 1;
				rc = 0;
				break;
			}
		}
		retries++;
		hb_metrics_side_retry("kube");
	}
	set_last(k, c->http, c->reason, c->attempts);
	if (rc && rc != HB_ENOENT && rc != HB_EEXIST && !c->fn_rc)
		hb_metrics_side_error("kube");
	if (rc && !c->fn_rc && err && !err->code) {
		err->code = rc;
		memcpy(err->msg, e.msg, sizeof(err->msg));
		if (!e.code)
			hb_err_set(err, rc, NULL, 0, "%s", hb_strerror(rc));
	}
	return rc;
}

static void call_init(struct call *c, struct hb_kube *k, const char *method,
		      const char *path)
{
	memset(c, 0, sizeof(*c));
	c->k = k;
	c->method = method;
	c->path = path;
	c->timeout_ms = k->o.timeout_ms;
	c->limit = k->o.max_body;
}

/* The response as a JSON object. */
static int parse_obj(struct call *c, cJSON **out, struct hb_err *err)
{
	const char *end = NULL;
	cJSON *doc;

	doc = cJSON_ParseWithLengthOpts(c->resp.data ? c->resp.data : "",
					c->resp.len, &end, 0);
	if (doc && end) {
		for (; end < c->resp.data + c->resp.len; end++)
			if (!strchr(" \t\r\n", *end)) {
				cJSON_Delete(doc);
				doc = NULL;
				break;
			}
	}
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "%s %.*s: the response is not a JSON object",
				  c->method, path_len(c->path), c->path);
	}
	*out = doc;
	return 0;
}

/* A request with an optional JSON body and an optional JSON answer. */
static int json_call(struct hb_kube *k, const char *method, const char *path,
		     const char *ctype, const cJSON *body, cJSON **out,
		     struct hb_err *err)
{
	struct call c;
	struct hb_buf b;
	int rc;

	if (out)
		*out = NULL;
	call_init(&c, k, method, path);
	hb_buf_init(&b, 0);
	if (body) {
		rc = hb_doc_write_json(body, &b);
		if (rc) {
			hb_buf_free(&b);
			return hb_err_set(err, rc, NULL, 0,
					  "%s %.*s: the object cannot be "
					  "written as JSON: %s",
					  method, path_len(path), path,
					  hb_strerror(rc));
		}
		c.body = b.data;
		c.blen = b.len;
		c.ctype = ctype ? ctype : "application/json";
	}
	rc = run(&c, err);
	if (!rc && out)
		rc = parse_obj(&c, out, err);
	hb_buf_free(&c.resp);
	hb_buf_free(&b);
	return rc;
}

/* ---------------------------------------------------------- the verbs */

static int build_path(struct hb_kube *k, const struct hb_kube_res *res,
		      const char *ns, const char *name, const char *sub,
		      struct hb_buf *b, struct hb_err *err)
{
	hb_buf_init(b, 0);
	if (!res || !res->version || !res->plural)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no resource kind");
	if (name && !*name)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "%s: empty name",
				  res->plural);
	if (ns && !*ns)
		ns = NULL;
	if (hb_kube_path(res, ns ? ns : k->ns, name, sub, b))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

int hb_kube_create(struct hb_kube *k, const struct hb_kube_res *res,
		   const char *ns, const cJSON *obj, cJSON **out,
		   struct hb_err *err)
{
	struct hb_buf p;
	int rc;

	if (out)
		*out = NULL;
	if (!cJSON_IsObject(obj))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "create: the object is not a JSON object");
	if ((rc = build_path(k, res, ns, NULL, NULL, &p, err)) == 0)
		rc = json_call(k, "POST", p.data, NULL, obj, out, err);
	hb_buf_free(&p);
	return rc;
}

int hb_kube_get(struct hb_kube *k, const struct hb_kube_res *res,
		const char *ns, const char *name, cJSON **out,
		struct hb_err *err)
{
	struct hb_buf p;
	cJSON *tmp = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!name)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "get: no name");
	if ((rc = build_path(k, res, ns, name, NULL, &p, err)) == 0)
		rc = json_call(k, "GET", p.data, NULL, NULL, &tmp, err);
	hb_buf_free(&p);
	if (out)
		*out = tmp;
	else
		cJSON_Delete(tmp);
	return rc;
}

static const struct hb_kube_res kueue_lq = { "visibility.kueue.x-k8s.io",
					     "v1beta1", "localqueues",
					     "LocalQueue" };
static const struct hb_kube_res kueue_cq = { "visibility.kueue.x-k8s.io",
					     "v1beta1", "clusterqueues",
					     "ClusterQueue" };

int hb_kube_pending_workloads(struct hb_kube *k, const char *ns,
			      const char *queue, int cluster, int limit,
			      cJSON **out, struct hb_err *err)
{
	struct hb_buf p;
	char n[24];
	int rc;

	*out = NULL;
	if (!queue || !*queue)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "pendingworkloads: no queue");
	if (cluster) {
		hb_buf_init(&p, 0);
		rc = hb_kube_path(&kueue_cq, NULL, queue, "pendingworkloads",
				  &p)
			     ? hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory")
			     : 0;
	} else {
		rc = build_path(k, &kueue_lq, ns, queue, "pendingworkloads",
				&p, err);
	}
	snprintf(n, sizeof(n), "%d", limit);
	if (!rc && limit > 0 && hb_kube_query(&p, "limit", n))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if (!rc)
		rc = json_call(k, "GET", p.data, NULL, NULL, out, err);
	hb_buf_free(&p);
	return rc;
}

static int list_path(struct hb_kube *k, const struct hb_kube_res *res,
		     const char *ns, int all_ns, const char *selector,
		     const char *fields, int limit, const char *cont,
		     struct hb_buf *p, struct hb_err *err)
{
	char n[24];
	int rc;

	hb_buf_init(p, 0);
	if (!res || !res->version || !res->plural)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no resource kind");
	rc = hb_kube_path(res, all_ns ? NULL : (ns && *ns ? ns : k->ns), NULL,
			  NULL, p);
	if (!rc && selector && *selector)
		rc = hb_kube_query(p, "labelSelector", selector);
	if (!rc && fields && *fields)
		rc = hb_kube_query(p, "fieldSelector", fields);
	if (!rc && limit > 0) {
		snprintf(n, sizeof(n), "%d", limit);
		rc = hb_kube_query(p, "limit", n);
	}
	if (!rc && cont && *cont)
		rc = hb_kube_query(p, "continue", cont);
	if (rc)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

/* A List response: items must be an array (or null: none). */
static int check_list(const cJSON *l, const char *what, struct hb_err *err)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(l, "items");
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(l, "metadata");
	const cJSON *it, *arr = cJSON_IsArray(items) ? items : NULL;

	if (items && !cJSON_IsArray(items) && !cJSON_IsNull(items))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "%s: items is not a list", what);
	cJSON_ArrayForEach (it, arr) {
		if (!cJSON_IsObject(it))
			return hb_err_set(err, HB_EPROTO, NULL, 0,
					  "%s: an item is not an object", what);
	}
	if (md && !cJSON_IsObject(md) && !cJSON_IsNull(md))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "%s: metadata is not an object", what);
	return 0;
}

static int list_page(struct hb_kube *k, const struct hb_kube_res *res,
		     const char *ns, int all_ns, const char *selector,
		     const char *fields, int limit, const char *cont,
		     cJSON **out, struct hb_err *err)
{
	struct hb_buf p;
	int rc;

	*out = NULL;
	rc = list_path(k, res, ns, all_ns, selector, fields, limit, cont, &p,
		       err);
	if (!rc)
		rc = json_call(k, "GET", p.data, NULL, NULL, out, err);
	if (!rc && (rc = check_list(*out, res->plural, err))) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	hb_buf_free(&p);
	return rc;
}

int hb_kube_list(struct hb_kube *k, const struct hb_kube_res *res,
		 const char *ns, const char *selector, const char *fields,
		 int limit, const char *cont, cJSON **out, struct hb_err *err)
{
	return list_page(k, res, ns, 0, selector, fields, limit, cont, out,
			 err);
}

static const char *md_str(const cJSON *obj, const char *key)
{
	return hb_doc_str(hb_doc_get(obj, "metadata"), key);
}

static int list_every(struct hb_kube *k, const struct hb_kube_res *res,
		      const char *ns, int all_ns, const char *selector,
		      const char *fields, int limit, cJSON **items, char rv[32],
		      struct hb_err *err)
{
	cJSON *all = cJSON_CreateArray(), *page = NULL;
	char *cont = NULL;
	int rc = 0, first = 1, restarted = 0, n = 0, more;

	*items = NULL;
	if (rv)
		rv[0] = '\0';
	if (!all)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (;;) {
		struct hb_err e = { 0 };
		cJSON *arr;
		const char *c, *v;

		rc = list_page(k, res, ns, all_ns, selector, fields, limit,
			       cont, &page, &e);
		if (rc == HB_ESTATE && !first && !restarted) {
			/* The continue token expired: list again, whole. */
			hb_log(HB_LOG_INFO,
			       "kube: %s: the list's continue token expired, "
			       "listing again without pages",
			       res->plural);
			cJSON_Delete(all);
			if (!(all = cJSON_CreateArray())) {
				rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
						"out of memory");
				break;
			}
			free(cont);
			cont = NULL;
			restarted = first = 1;
			n = 0;
			limit = 0;
			continue;
		}
		if (rc) {
			if (err && !err->code)
				*err = e;
			break;
		}
		if (first && rv) {
			v = md_str(page, "resourceVersion");
			if (v && strlen(v) >= 32) {
				rc = hb_err_set(err, HB_EPROTO, NULL, 0,
						"%s: resourceVersion too long",
						res->plural);
				break;
			}
			snprintf(rv, 32, "%s", v ? v : "");
		}
		first = 0;
		arr = cJSON_GetObjectItemCaseSensitive(page, "items");
		while (cJSON_IsArray(arr) && arr->child) {
			cJSON *it = cJSON_DetachItemViaPointer(arr, arr->child);

			if (++n > LIST_ITEMS_MAX) {
				cJSON_Delete(it);
				rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
						"%s: more than %d items",
						res->plural, LIST_ITEMS_MAX);
				break;
			}
			cJSON_AddItemToArray(all, it);
		}
		if (rc)
			break;
		c = md_str(page, "continue");
		more = c && *c;
		free(cont);
		cont = more ? strdup(c) : NULL;
		cJSON_Delete(page);
		page = NULL;
		if (more && !cont) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			break;
		}
		if (!cont)
			break;
	}
	cJSON_Delete(page);
	free(cont);
	if (rc)
		cJSON_Delete(all);
	else
		*items = all;
	return rc;
}

int hb_kube_list_every(struct hb_kube *k, const struct hb_kube_res *res,
		       const char *ns, int all_ns, const char *selector,
		       int limit, cJSON **items, char rv[32],
		       struct hb_err *err)
{
	return list_every(k, res, ns, all_ns, selector, NULL, limit, items, rv,
			  err);
}

int hb_kube_list_all(struct hb_kube *k, const struct hb_kube_res *res,
		     const char *ns, const char *selector, int limit,
		     cJSON **items, char rv[32], struct hb_err *err)
{
	return list_every(k, res, ns, 0, selector, NULL, limit, items, rv,
			  err);
}

int hb_kube_list_cluster(struct hb_kube *k, const struct hb_kube_res *res,
			 const char *selector, const char *fields, int limit,
			 cJSON **items, struct hb_err *err)
{
	return list_every(k, res, NULL, 1, selector, fields, limit, items,
			  NULL, err);
}

int hb_kube_delete(struct hb_kube *k, const struct hb_kube_res *res,
		   const char *ns, const char *name, const char *propagation,
		   struct hb_err *err)
{
	struct hb_buf p;
	cJSON *opts = NULL;
	int rc;

	if (!name)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "delete: no name");
	if (propagation && strcmp(propagation, "Background") &&
	    strcmp(propagation, "Foreground") && strcmp(propagation, "Orphan"))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "delete: propagation \"%s\": must be "
				  "Background, Foreground or Orphan",
				  propagation);
	if (propagation) {
		opts = cJSON_CreateObject();
		if (!opts ||
		    !cJSON_AddStringToObject(opts, "kind", "DeleteOptions") ||
		    !cJSON_AddStringToObject(opts, "apiVersion", "v1") ||
		    !cJSON_AddStringToObject(opts, "propagationPolicy",
					     propagation)) {
			cJSON_Delete(opts);
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		}
	}
	if ((rc = build_path(k, res, ns, name, NULL, &p, err)) == 0)
		rc = json_call(k, "DELETE", p.data, NULL, opts, NULL, err);
	hb_buf_free(&p);
	cJSON_Delete(opts);
	return rc;
}

int hb_kube_apply(struct hb_kube *k, const struct hb_kube_res *res,
		  const char *ns, const cJSON *obj, const char *field_manager,
		  int force, int status, cJSON **out, struct hb_err *err)
{
	const char *name = md_str(obj, "name");
	struct hb_buf p;
	int rc;

	if (out)
		*out = NULL;
	if (!cJSON_IsObject(obj) || !name || !*name)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "apply: the object has no metadata.name");
	if (!field_manager || !*field_manager)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "apply: no field manager");
	rc = build_path(k, res, ns, name, status ? "status" : NULL, &p, err);
	if (!rc && (hb_kube_query(&p, "fieldManager", field_manager) ||
		    (force && hb_kube_query(&p, "force", "true"))))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if (!rc)
		rc = json_call(k, "PATCH", p.data,
			       "application/apply-patch+yaml", obj, out, err);
	hb_buf_free(&p);
	return rc;
}

int hb_kube_patch_status(struct hb_kube *k, const struct hb_kube_res *res,
			 const char *ns, const char *name, const cJSON *patch,
			 cJSON **out, struct hb_err *err)
{
	struct hb_buf p;
	int rc;

	if (out)
		*out = NULL;
	if (!name)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "patch status: no name");
	if (!cJSON_IsObject(patch))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "patch status: the patch is not an object");
	if ((rc = build_path(k, res, ns, name, "status", &p, err)) == 0)
		rc = json_call(k, "PATCH", p.data,
			       "application/merge-patch+json", patch, out, err);
	hb_buf_free(&p);
	return rc;
}

static int log_path(struct hb_kube *k, const char *ns, const char *pod,
		    const char *container, size_t limit, int follow,
		    struct hb_buf *p, struct hb_err *err)
{
	char n[24];
	int rc;

	if (!pod)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "log: no pod");
	if ((rc = build_path(k, &pod_log, ns, pod, "log", p, err)))
		return rc;
	if (container && *container)
		rc = hb_kube_query(p, "container", container);
	if (!rc && limit) {
		snprintf(n, sizeof(n), "%zu", limit);
		rc = hb_kube_query(p, "limitBytes", n);
	}
	if (!rc && follow)
		rc = hb_kube_query(p, "follow", "true");
	if (rc)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

int hb_kube_log(struct hb_kube *k, const char *ns, const char *pod,
		const char *container, size_t limit, struct hb_buf *out,
		struct hb_err *err)
{
	struct hb_buf p;
	struct call c;
	int rc;

	if ((rc = log_path(k, ns, pod, container, limit, 0, &p, err)))
		goto out;
	call_init(&c, k, "GET", p.data);
	if (limit && limit < c.limit) {
		c.limit = limit;
		c.truncate_ok = 1;
	}
	rc = run(&c, err);
	if (!rc && c.resp.len &&
	    (rc = hb_buf_append(out, c.resp.data, c.resp.len)))
		hb_err_set(err, rc, NULL, 0, "log of %s: %s", pod,
			   hb_strerror(rc));
	hb_buf_free(&c.resp);
out:
	hb_buf_free(&p);
	return rc;
}

struct follow_ctx {
	hb_kube_log_fn fn;
	void *ctx;
};

static int follow_data(void *u, const char *data, size_t len)
{
	struct follow_ctx *f = u;

	return f->fn(f->ctx, data, len);
}

int hb_kube_log_follow(struct hb_kube *k, const char *ns, const char *pod,
		       const char *container, int timeout_ms, hb_kube_log_fn fn,
		       void *ctx, struct hb_err *err)
{
	struct hb_buf p;
	struct call c;
	struct follow_ctx f = { fn, ctx };
	int rc;

	if (!fn)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "log follow: no callback");
	if ((rc = log_path(k, ns, pod, container, 0, 1, &p, err)))
		goto out;
	call_init(&c, k, "GET", p.data);
	c.timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	c.limit = ERR_BODY_MAX;
	c.fn = follow_data;
	c.ctx = &f;
	rc = run(&c, err);
	hb_buf_free(&c.resp);
out:
	hb_buf_free(&p);
	return rc;
}

/* A field selector value: '\', ',' and '=' escaped with '\'. */
static int field_value(struct hb_buf *b, const char *v)
{
	for (; *v; v++) {
		if ((*v == '\\' || *v == ',' || *v == '=') &&
		    hb_buf_putc(b, '\\'))
			return HB_ENOMEM;
		if (hb_buf_putc(b, *v))
			return HB_ENOMEM;
	}
	return 0;
}

int hb_kube_events(struct hb_kube *k, const char *ns, const char *name,
		   cJSON **out, struct hb_err *err)
{
	struct hb_buf f;
	int rc;

	*out = NULL;
	if (!name || !*name)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "events: no name");
	hb_buf_init(&f, 0);
	if (hb_buf_puts(&f, "involvedObject.name=") || field_value(&f, name))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	else
		rc = hb_kube_list(k, &hb_kube_event, ns, NULL, f.data, 0, NULL,
				  out, err);
	hb_buf_free(&f);
	return rc;
}

int hb_kube_stream_get(struct hb_kube *k, struct hb_kube_stream *st,
		       struct hb_err *err)
{
	struct call c;
	int rc;

	call_init(&c, k, "GET", st->path);
	c.timeout_ms = st->timeout_ms > 0 ? st->timeout_ms : 0;
	c.limit = ERR_BODY_MAX;
	c.fn = st->fn;
	c.ctx = st->ctx;
	c.stop = st->stop;
	c.poll_ms = st->poll_ms;
	rc = run(&c, err);
	st->stopped = c.stopped;
	hb_buf_free(&c.resp);
	return rc;
}
