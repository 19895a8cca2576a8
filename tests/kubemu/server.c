/*
 * server.c - the HTTP(S) side: libmicrohttpd in thread-per-connection
 * mode, request bodies, faults, bearer-token authentication, routing of
 * Kubernetes paths, the admin endpoints under /_hb/, and responses
 * (bodies, or streams for watches and logs).
 *
 * Paths served:
 *   /version /healthz /livez /readyz /api /api/v1 /apis /apis/G /apis/G/V
 *   /openapi/v2 /openapi/v3 /openapi/v3/api/v1 /openapi/v3/apis/G/V
 *   /api/v1/namespaces/NS/PLURAL[/NAME[/status|/log]]   (core)
 *   /apis/G/V/namespaces/NS/PLURAL[/NAME[/status]]       (groups)
 *   /api/v1/PLURAL, /apis/G/V/PLURAL                      (all namespaces)
 *   /api/v1/nodes[/NAME], /api/v1/namespaces[/NAME]      (cluster scope)
 *   /_hb/faults /_hb/stats /_hb/evict                     (admin, no auth)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "hpcbridge/log.h"
#include "kubemu.h"

/* Largest body read (the API server allows 3 MiB; one byte more tells
 * the API layer that it was too big). */
#define BODY_CAP (3u * 1024 * 1024 + 1)
/* Longest path segment kept. */
#define SEG_MAX 320

struct km_server {
	struct km_ctx *ctx;
	struct MHD_Daemon *d;
};

/* One request as it arrives. */
struct conn_req {
	struct hb_buf body;
	int too_big;
	int refuse_ms; /* admin: refuse connections once this one ends */
};

/* Refusals asked for by the admin endpoint, for main() to carry out. */
static pthread_mutex_t refuse_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t refuse_cond = PTHREAD_COND_INITIALIZER;
static int refuse_pending;

int km_server_refuse_pending(void)
{
	int ms;

	pthread_mutex_lock(&refuse_mu);
	ms = refuse_pending;
	refuse_pending = 0;
	pthread_mutex_unlock(&refuse_mu);
	return ms;
}

void km_server_wait_refuse(int64_t timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&refuse_mu);
	if (!refuse_pending)
		pthread_cond_timedwait(&refuse_cond, &refuse_mu, &ts);
	pthread_mutex_unlock(&refuse_mu);
}

static const char *conn_arg(void *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

static const char *conn_header(void *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, key);
}

static enum MHD_Result queue(struct MHD_Connection *c, struct km_resp *rs)
{
	struct MHD_Response *resp;
	enum MHD_Result ok;
	char *line, *next;

	if (rs->watch) {
		resp = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 64 * 1024, km_watch_read, rs->watch,
			km_watch_free);
		if (!resp)
			km_watch_free(rs->watch);
	} else if (rs->log) {
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
							 64 * 1024, km_log_read,
							 rs->log, km_log_free);
		if (!resp)
			km_log_free(rs->log);
	} else {
		resp = MHD_create_response_from_buffer(
			rs->len, rs->body ? rs->body : "",
			rs->body ? MHD_RESPMEM_MUST_FREE
				 : MHD_RESPMEM_PERSISTENT);
		if (!resp)
			free(rs->body);
	}
	rs->watch = NULL;
	rs->log = NULL;
	rs->body = NULL;
	if (!resp) {
		hb_buf_free(&rs->warnings);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
				rs->ctype ? rs->ctype : "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
	if (rs->retry_after > 0) {
		char ra[16];

		snprintf(ra, sizeof(ra), "%d", rs->retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	for (line = rs->warnings.data; line && *line; line = next) {
		struct hb_buf h;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		hb_buf_init(&h, 8192);
		/* RFC 7234 warn-text: a quoted string. */
		hb_buf_puts(&h, "299 - \"");
		for (const char *p = line; *p; p++) {
			if (*p == '"' || *p == '\\')
				hb_buf_putc(&h, '\\');
			hb_buf_putc(&h, *p);
		}
		hb_buf_putc(&h, '"');
		if (h.data)
			MHD_add_response_header(resp, "Warning", h.data);
		hb_buf_free(&h);
	}
	hb_buf_free(&rs->warnings);
	ok = MHD_queue_response(c, (unsigned)rs->code, resp);
	MHD_destroy_response(resp);
	return ok;
}

/* ---- admin ---------------------------------------------------------- */

static void admin(struct km_ctx *ctx, struct conn_req *cr, const char *method,
		  const char *url, struct km_resp *rs)
{
	rs->ctype = "application/json";
	if (!strcmp(url, "/_hb/faults")) {
		int drop, refuse, code;
		char *reply;

		km_faults_admin(ctx->faults, method, cr->body.data,
				cr->body.len, &drop, &refuse, &reply, &code);
		if (drop) {
			atomic_fetch_add(&ctx->drop_gen, 1);
			km_store_kick(ctx->store);
			hb_log(HB_LOG_INFO, "faults: dropping every watch");
		}
		if (refuse) {
			cr->refuse_ms = refuse;
			hb_log(HB_LOG_INFO,
			       "faults: refusing connections for %d ms",
			       refuse);
		}
		rs->code = code;
		rs->body = reply;
		rs->len = reply ? strlen(reply) : 0;
		return;
	}
	if (!strcmp(url, "/_hb/stats") && !strcmp(method, "GET")) {
		size_t counts[KM_NRES], events;
		uint64_t rv;
		struct hb_buf b;

		km_store_stats(ctx->store, counts, &rv, &events);
		hb_buf_init(&b, 0);
		hb_buf_printf(&b, "{\"resourceVersion\":%llu,\"events\":%zu",
			      (unsigned long long)rv, events);
		for (int i = 0; i < KM_NRES; i++)
			hb_buf_printf(&b, ",\"%s\":%zu", km_res[i].plural,
				      counts[i]);
		hb_buf_puts(&b, "}");
		rs->code = 200;
		rs->len = b.len;
		rs->body = hb_buf_steal(&b);
		hb_buf_free(&b);
		return;
	}
	if (!strcmp(url, "/_hb/evict") && !strcmp(method, "POST")) {
		cJSON *o = cJSON_ParseWithLength(
			cr->body.data ? cr->body.data : "", cr->body.len);
		const char *ns = km_str(o, "namespace"),
			   *name = km_str(o, "name");
		int rc = ns && name ? km_ctl_evict(ctx->ctl, ns, name)
				    : HB_EINVAL;

		rs->code = rc == 0 ? 200 : rc == HB_ENOENT ? 404 : 400;
		rs->body =
			strdup(rc == 0		 ? "{\"evicted\":true}"
			       : rc == HB_ENOENT ? "{\"error\":\"no such pod\"}"
						 : "{\"error\":\"want "
						   "namespace and name\"}");
		rs->len = rs->body ? strlen(rs->body) : 0;
		cJSON_Delete(o);
		return;
	}
	rs->code = 404;
	rs->body = strdup("{\"error\":\"unknown admin endpoint\"}");
	rs->len = rs->body ? strlen(rs->body) : 0;
}

/* ---- authentication ------------------------------------------------- */

/* 0 when allowed (*user, *allowed_ns set), HB_EPERM otherwise. */
static int authenticate(struct km_ctx *ctx, struct MHD_Connection *c,
			char *user, size_t cap, const char **allowed_ns)
{
	const char *h = conn_header(c, "Authorization");

	*allowed_ns = NULL;
	if (!ctx->o->ntokens) {
		snprintf(user, cap, "system:admin");
		return 0;
	}
	if (!h || strncasecmp(h, "Bearer ", 7))
		return HB_EPERM;
	h += 7;
	while (*h == ' ')
		h++;
	for (size_t i = 0; i < ctx->o->ntokens; i++) {
		const struct km_token *t = &ctx->o->tokens[i];

		if (strcmp(t->token, h))
			continue;
		*allowed_ns = t->ns;
		if (t->ns)
			snprintf(user, cap,
				 "system:serviceaccount:%s:hpcbridge", t->ns);
		else
			snprintf(user, cap, "kubemu-admin-%zu", i);
		return 0;
	}
	return HB_EPERM;
}

/* ---- routing -------------------------------------------------------- */

/* Split path into at most max segments of at most SEG_MAX bytes. */
static int split(const char *path, char seg[][SEG_MAX], int max)
{
	int n = 0;

	while (*path == '/')
		path++;
	while (*path) {
		size_t len = strcspn(path, "/");

		if (n == max || len >= SEG_MAX || len == 0)
			return -1;
		memcpy(seg[n], path, len);
		seg[n][len] = '\0';
		n++;
		path += len;
		while (*path == '/')
			path++;
	}
	return n;
}

/* Fill the routing part of rq from url; 0, or HB_ENOENT. */
static int route(const char *url, struct km_req *rq, char seg[][SEG_MAX])
{
	int n = split(url, seg, 8), i;
	const char *group, *version;

	rq->res = -1;
	if (n < 2)
		return HB_ENOENT;
	if (!strcmp(seg[0], "api")) {
		group = "";
		version = seg[1];
		i = 2;
	} else if (!strcmp(seg[0], "apis") && n >= 3) {
		group = seg[1];
		version = seg[2];
		i = 3;
	} else {
		return HB_ENOENT;
	}
	if (n > i + 2 && !strcmp(seg[i], "namespaces")) {
		rq->ns = seg[i + 1];
		i += 2;
	}
	if (n <= i || n > i + 3)
		return HB_ENOENT;
	rq->res = km_res_find(group, version, seg[i]);
	if (rq->res < 0)
		return HB_ENOENT;
	rq->name = n > i + 1 ? seg[i + 1] : NULL;
	rq->sub = n > i + 2 ? seg[i + 2] : NULL;
	/* Cluster-scoped objects have no namespace; the others need one
	 * when named. */
	if (KM_NO_NS(rq->res))
		return rq->ns ? HB_ENOENT : 0;
	if (rq->name && !rq->ns)
		return HB_ENOENT;
	return 0;
}

static void serve(struct km_ctx *ctx, struct MHD_Connection *c,
		  struct conn_req *cr, const char *url, const char *method,
		  struct km_resp *rs)
{
	char seg[8][SEG_MAX], user[320];
	struct km_req rq = { 0 };
	enum km_fault_act act;
	int delay, retry;
	const char *w = conn_arg(c, "watch");
	char clean[2048];
	size_t n = strlen(url);

	/* "/version/" is "/version". */
	while (n > 1 && url[n - 1] == '/')
		n--;
	if (n >= sizeof(clean)) {
		km_resp_status(rs, km_status_plain(414, "RequestURITooLong",
						   "the request path is too "
						   "long"));
		return;
	}
	memcpy(clean, url, n);
	clean[n] = '\0';
	url = clean;
	if (!strncmp(url, "/_hb/", 5)) {
		admin(ctx, cr, method, url, rs);
		return;
	}
	act = km_faults_take(ctx->faults, method, url,
			     w && (!strcmp(w, "1") || !strcasecmp(w, "true")),
			     &delay, &retry);
	if (delay > 0)
		usleep((useconds_t)delay * 1000);
	if (act == KM_FAULT_500) {
		km_resp_status(rs, km_status_plain(500, "InternalError",
						   "Internal error occurred: "
						   "injected by the faults "
						   "endpoint"));
		return;
	}
	if (act == KM_FAULT_429) {
		cJSON *st = km_status_plain(429, "TooManyRequests",
					    "Too many requests, please try "
					    "again later.");
		cJSON *d = cJSON_CreateObject();

		if (st && d && !km_set_num(d, "retryAfterSeconds", retry)) {
			km_del(st, "code");
			km_set(st, "details", d);
			km_set_num(st, "code", 429);
		} else {
			cJSON_Delete(d);
		}
		km_resp_status(rs, st);
		rs->retry_after = retry;
		return;
	}
	if (!strcmp(url, "/version") || !strcmp(url, "/healthz") ||
	    !strcmp(url, "/livez") || !strcmp(url, "/readyz")) {
		km_discovery_serve(url, rs);
		return;
	}
	if (authenticate(ctx, c, user, sizeof(user), &rq.allowed_ns)) {
		km_resp_status(rs, km_status_plain(401, "Unauthorized",
						   "Unauthorized"));
		return;
	}
	if (!km_discovery_serve(url, rs))
		return;
	if (!km_openapi_serve(ctx, url, conn_header(c, "Accept"), rs))
		return;
	if (!km_kueue_visibility(ctx, method, url, conn_arg(c, "limit"),
				 conn_arg(c, "offset"), rs))
		return;
	if (route(url, &rq, seg)) {
		km_resp_status(rs, km_status_plain(404, "NotFound",
						   "the server could not find "
						   "the requested resource"));
		return;
	}
	if (cr->too_big) {
		km_resp_status(rs, km_status_plain(413, "RequestEntityTooLarge",
						   "the request body is too "
						   "large"));
		return;
	}
	rq.method = method;
	rq.path = url;
	rq.arg = conn_arg;
	rq.header = conn_header;
	rq.conn = c;
	rq.body = cr->body.data;
	rq.body_len = cr->body.len;
	rq.user = user;
	km_api_serve(ctx, &rq, rs);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct km_ctx *ctx = cls;
	struct conn_req *cr = *con_cls;
	struct km_resp rs = { 0 };

	(void)version;
	if (!cr) {
		cr = calloc(1, sizeof(*cr));
		if (!cr)
			return MHD_NO;
		hb_buf_init(&cr->body, BODY_CAP);
		*con_cls = cr;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!cr->too_big &&
		    hb_buf_append(&cr->body, upload, *upload_size))
			cr->too_big = 1;
		*upload_size = 0;
		return MHD_YES;
	}
	hb_buf_init(&rs.warnings, 64 * 1024);
	serve(ctx, c, cr, url, method, &rs);
	if (hb_log_enabled(HB_LOG_DEBUG))
		hb_log(HB_LOG_DEBUG, "%s %s %d", method, url, rs.code);
	return queue(c, &rs);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn_req *cr = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (!cr)
		return;
	if (cr->refuse_ms) {
		pthread_mutex_lock(&refuse_mu);
		refuse_pending = cr->refuse_ms;
		pthread_cond_broadcast(&refuse_cond);
		pthread_mutex_unlock(&refuse_mu);
	}
	hb_buf_free(&cr->body);
	free(cr);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	hb_log(HB_LOG_DEBUG, "libmicrohttpd: %s", msg);
}

struct km_server *km_server_start(struct km_ctx *ctx, int *port,
				  struct hb_err *err)
{
	struct km_server *sv = calloc(1, sizeof(*sv));
	struct sockaddr_in sa = { 0 };
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const char *host = ctx->o->host;

	if (!sv) {
		hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		return NULL;
	}
	sv->ctx = ctx;
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)*port);
	if (!strcmp(host, "localhost"))
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		hb_err_set(err, HB_EINVAL, NULL, 0,
			   "--listen: %s is not an IPv4 address", host);
		free(sv);
		return NULL;
	}
	if (ctx->tls_key)
		flags |= MHD_USE_TLS;
	if (ctx->tls_key)
		sv->d = MHD_start_daemon(
			flags, 0, NULL, NULL, on_request, ctx,
			MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctx,
			MHD_OPTION_EXTERNAL_LOGGER, mhd_log, ctx,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT,
			(size_t)(256 * 1024), MHD_OPTION_THREAD_STACK_SIZE,
			(size_t)(1024 * 1024),
			MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
			MHD_OPTION_HTTPS_MEM_KEY, ctx->tls_key,
			MHD_OPTION_HTTPS_MEM_CERT, ctx->tls_cert,
			MHD_OPTION_END);
	else
		sv->d = MHD_start_daemon(
			flags, 0, NULL, NULL, on_request, ctx,
			MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctx,
			MHD_OPTION_EXTERNAL_LOGGER, mhd_log, ctx,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT,
			(size_t)(256 * 1024), MHD_OPTION_THREAD_STACK_SIZE,
			(size_t)(1024 * 1024),
			MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
			MHD_OPTION_END);
	if (!sv->d) {
		hb_err_set(err, HB_EIO, NULL, 0,
			   "cannot listen on %s:%d (port in use?)", host,
			   *port);
		free(sv);
		return NULL;
	}
	info = MHD_get_daemon_info(sv->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info)
		*port = info->port;
	return sv;
}

void km_server_stop(struct km_server *sv)
{
	if (!sv)
		return;
	MHD_stop_daemon(sv->d);
	free(sv);
}
