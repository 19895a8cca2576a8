/*
 * metrics_http.c - /metrics (Prometheus text) and /healthz over HTTP on
 * metrics.listen, served by libmicrohttpd from the daemon's own epoll
 * loop: no thread of its own (MHD_USE_EPOLL without an internal thread),
 * its epoll descriptor watched by the loop, MHD_run() when it is ready
 * and once a second for its timeouts.  So a scrape reads the store, the
 * connections and the decider's budgets in the loop thread, like any
 * request.  docs/internals/metrics.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/snapshot.h"

/* What one scraper, or a few, need; a hostile local user gets no more. */
#define MX_CONNECTIONS 16
#define MX_TIMEOUT_S   5 /* idle: MHD's own, reset by every byte */
#define MX_REQUEST_S                                                           \
	10 /* from a request's first byte to its reply's                       \
	    * last: a byte a second does not hold a slot */
#define MX_CONN_MEMORY (32 * 1024) /* a request's headers must fit */
#define MX_BODY_MAX    (8u * 1024 * 1024)
#define MX_BACKLOG     32
#define MX_BODY_MS     1000  /* /metrics is made at most this often */
#define MX_RETRY_MS    10000 /* listen again after a failure */
/* MHD_run() rounds after one, while MHD says it has work left */
#define MX_RUN_AGAIN 8

/* A connection of the port: since when its request runs. */
struct mx_conn {
	int fd;
	int cut;      /* shut down: MHD closes it on its next round */
	double since; /* accepted, or the last reply sent */
	struct mx_conn *prev, *next;
};

struct hbd_metrics {
	struct watch w; /* first: the epoll tag */
	struct MHD_Daemon *mhd; /* NULL: not serving (yet) */
	int epfd; /* MHD's */
	struct mx_conn *conns;
	int64_t retry_ms; /* when to try to listen again */
	/* the families rebuilt at each scrape */
	struct hb_metric *jobs, *spend, *budget;
	/* the text of the last scrape, and when it was made */
	char *body;
	size_t body_len;
	int64_t body_ms;
};

/* The gauges read at a scrape, in the process's registry (a second
 * daemon in one process, as in the tests, finds them there). */
static struct hb_metric *gauge(const char *name, const char *help,
			       const char *const *labels)
{
	struct hb_metrics *m = hb_metrics_global();
	struct hb_metric *f = hb_metrics_find(m, name);

	return f ? f
		 : hb_metrics_add(m, HB_METRIC_GAUGE, name, help, labels, NULL,
				  0);
}

/* ------------------------------------------------------------------ */
/* A scrape                                                            */
/* ------------------------------------------------------------------ */

/* Jobs not yet over, by side and state (counted by the database, no row
 * copied out: the scrape runs on the loop); 0 or the store's error. */
static int scrape_jobs(struct hb_daemon *d, struct hb_err *err)
{
	uint64_t n[HB__TARGET_COUNT][HB__JOB_STATE_COUNT];
	int rc = hb_store_job_counts(d->st, HBD_LIVE_STATES, n, err);

	if (rc)
		return rc;
	hb_metric_clear(d->mx->jobs);
	for (int t = 0; t < HB__TARGET_COUNT; t++)
		for (int s = 0; s < HB__JOB_STATE_COUNT; s++) {
			const char *v[2] = { hb_job_target_name(t),
					     hb_job_state_name(s) };

			if (t == HB_TARGET_REJECTED ||
			    !(HBD_LIVE_STATES & (1u << s)))
				continue;
			hb_series_set(hb_metric_with(d->mx->jobs, v),
				      (double)n[t][s]);
		}
	return 0;
}

struct budget_ctx {
	struct hbd_metrics *mx;
	const char *currency;
};

static void one_budget(void *arg, const char *account, const char *period,
		       int64_t budget, int64_t spent)
{
	struct budget_ctx *b = arg;
	const char *v[3] = { account, period, b->currency };

	hb_series_set(hb_metric_with(b->mx->budget, v),
		      (double)budget / HB_MONEY_UNIT);
	hb_series_set(hb_metric_with(b->mx->spend, v),
		      (double)spent / HB_MONEY_UNIT);
}

static void scrape_budgets(struct hb_daemon *d)
{
	struct budget_ctx b = { d->mx, hb_decider_currency(d->dc) };

	hb_metric_clear(d->mx->budget);
	hb_metric_clear(d->mx->spend);
	hb_decider_budgets(d->dc, one_budget, &b);
}

/* ------------------------------------------------------------------ */
/* HTTP                                                                */
/* ------------------------------------------------------------------ */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *ctype, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status,
			    const char *s)
{
	return reply(c, status, "text/plain; charset=utf-8", (char *)s,
		     strlen(s), MHD_RESPMEM_PERSISTENT);
}

/*
 * The text is made at most once per MX_BODY_MS and served again to the
 * scrapes within it: a local user pipelining scrapes on every connection
 * costs the loop (which the plugin waits on) one render per period.
 */
static enum MHD_Result serve_metrics(struct hb_daemon *d,
				     struct MHD_Connection *c)
{
	struct hbd_metrics *mx = d->mx;
	struct hb_err err = { 0 };
	int64_t now = hb_clock_mono_ms();
	struct hb_buf b;

	if (!mx->body || now - mx->body_ms >= MX_BODY_MS) {
		hb_metrics_conn_open(d->nconns);
		if (scrape_jobs(d, &err))
			hb_log(HB_LOG_WARN, "metrics: jobs: %s", err.msg);
		scrape_budgets(d);
		hb_buf_init(&b, MX_BODY_MAX);
		if (hb_metrics_write(hb_metrics_global(), &b)) {
			hb_buf_free(&b);
			return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "out of memory\n");
		}
		free(mx->body);
		mx->body_len = b.len;
		mx->body = hb_buf_steal(&b);
		mx->body_ms = now;
	}
	return reply(c, MHD_HTTP_OK, HB_METRICS_CONTENT_TYPE, mx->body,
		     mx->body_len, MHD_RESPMEM_MUST_COPY);
}

static int one_row(const struct hb_job_row *row, void *arg)
{
	(void)row;
	(void)arg;
	return 0;
}

/* 200 "ok": the loop answers (this runs in it) and the store reads. */
static enum MHD_Result serve_health(struct hb_daemon *d,
				    struct MHD_Connection *c)
{
	struct hb_err err = { 0 };
	struct hb_buf b;
	size_t len;

	if (d->stopping)
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "stopping\n");
	if (!hb_store_job_list(d->st, -1, HB_JOB_ANY, 1, one_row, NULL, &err))
		return text(c, MHD_HTTP_OK, "ok\n");
	hb_buf_init(&b, 1024);
	if (hb_buf_printf(&b, "store unreachable: %.900s\n", err.msg))
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "store unreachable\n");
	len = b.len;
	return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE,
		     "text/plain; charset=utf-8", hb_buf_steal(&b), len,
		     MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct hb_daemon *d = cls;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	/* answered at once, a body unread: MHD closes the connection */
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "only GET and HEAD\n");
	if (!strcmp(url, "/metrics"))
		return serve_metrics(d, c);
	if (!strcmp(url, "/healthz"))
		return serve_health(d, c);
	return text(c, MHD_HTTP_NOT_FOUND, "/metrics or /healthz\n");
}

/* ------------------------------------------------------------------ */
/* The request deadline                                                */
/* ------------------------------------------------------------------ */

/* MHD's timeout is for silence; this one bounds a whole request, kept
 * by the connections' list here. */
static void on_conn(void *cls, struct MHD_Connection *c, void **ctx,
		    enum MHD_ConnectionNotificationCode toe)
{
	struct hbd_metrics *mx = cls;
	struct mx_conn *e = *ctx;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci || !(e = calloc(1, sizeof(*e))))
			return; /* MHD's own timeout still holds */
		e->fd = ci->connect_fd;
		e->since = hb_metrics_now();
		e->next = mx->conns;
		if (mx->conns)
			mx->conns->prev = e;
		mx->conns = e;
		*ctx = e;
	} else if (e) {
		if (e->prev)
			e->prev->next = e->next;
		else
			mx->conns = e->next;
		if (e->next)
			e->next->prev = e->prev;
		free(e);
		*ctx = NULL;
	}
}

/* A reply went: the connection's next request starts its clock. */
static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct mx_conn *e = ci ? ci->socket_context : NULL;

	(void)cls;
	(void)con_cls;
	(void)toe;
	if (e)
		e->since = hb_metrics_now();
}

/* Shut down (not close: MHD owns the descriptor) what ran too long. */
static void cut_slow(struct hbd_metrics *mx)
{
	double now = hb_metrics_now();

	for (struct mx_conn *e = mx->conns; e; e = e->next)
		if (!e->cut && now - e->since > MX_REQUEST_S) {
			e->cut = 1;
			shutdown(e->fd, SHUT_RDWR);
			hb_log(HB_LOG_DEBUG,
			       "metrics: a request took over %d "
			       "s: connection cut",
			       MX_REQUEST_S);
		}
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

/* The listening socket, bound here so that a failure says why. */
static int listen_on(const char *addr, struct hb_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	if (hb_config_listen_addr(addr, &ss, &len, NULL))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "metrics.listen: %s is not IP:PORT", addr);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, MX_BACKLOG)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "metrics.listen: %s: %s", addr, strerror(e));
	}
	return fd;
}

static int families(struct hbd_metrics *mx)
{
	mx->jobs = gauge("hpcbridge_jobs",
			 "Jobs not yet over, by side (target) and state.",
			 (const char *[]){ "side", "state", NULL });
	mx->budget = gauge(
		"hpcbridge_account_budget",
		"An account's budget per period, in the policy's "
		"currency.",
		(const char *[]){ "account", "period", "currency", NULL });
	mx->spend = gauge(
		"hpcbridge_account_spend",
		"What an account spent in the current budget "
		"period on the sides its budget covers, in the "
		"policy's currency.",
		(const char *[]){ "account", "period", "currency", NULL });
	return mx->jobs && mx->budget && mx->spend ? 0 : HB_ENOMEM;
}

/* Listen and start the HTTP server on the loop; 0 or the error. */
static int serve(struct hb_daemon *d, struct hb_err *err)
{
	struct hbd_metrics *mx = d->mx;
	const union MHD_DaemonInfo *info;
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if ((fd = listen_on(d->cfg.metrics_listen, err)) < 0)
		return fd;
	mx->mhd = MHD_start_daemon(
		MHD_USE_EPOLL, 0, NULL, NULL, on_request, d,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)MX_CONNECTIONS,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MX_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MX_CONN_MEMORY,
		MHD_OPTION_NOTIFY_CONNECTION, on_conn, mx,
		MHD_OPTION_NOTIFY_COMPLETED, on_done, mx, MHD_OPTION_END);
	if (!mx->mhd) {
		close(fd);
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "metrics.listen: %s: cannot start the HTTP "
				  "server",
				  d->cfg.metrics_listen);
	}
	info = MHD_get_daemon_info(mx->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	mx->epfd = info ? info->epoll_fd : -1;
	mx->w.tag = T_METRICS;
	ev.data.ptr = &mx->w;
	if (mx->epfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, mx->epfd, &ev)) {
		int e = errno;

		MHD_stop_daemon(mx->mhd); /* closes the listening socket */
		mx->mhd = NULL;
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "metrics: cannot watch the HTTP server: %s",
				  strerror(e));
	}
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_STR("listen", d->cfg.metrics_listen) },
		1, "serving /metrics and /healthz");
	return 0;
}

/* Not serving: try again every MX_RETRY_MS, saying why once per try. */
static void serve_later(struct hb_daemon *d, const struct hb_err *why)
{
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){
			HB_LOG_STR("listen", d->cfg.metrics_listen) },
		1, "not serving /metrics yet, trying again in %d s: %s",
		MX_RETRY_MS / 1000, why->msg);
	d->mx->retry_ms = hb_clock_mono_ms() + MX_RETRY_MS;
}

/*
 * A port someone else holds (a local user may bind 127.0.0.1:9464 first)
 * or a failing HTTP server must not keep the daemon from deciding: it
 * starts without /metrics and tries again from its loop.  Only running
 * out of memory is fatal.
 */
int hbd_metrics_start(struct hb_daemon *d, struct hb_err *err)
{
	struct hbd_metrics *mx;
	struct hb_err why = { 0 };

	if (!d->cfg.metrics_listen)
		return 0;
	if (hb_metrics_init() || !(mx = calloc(1, sizeof(*mx))))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	d->mx = mx;
	mx->epfd = -1;
	if (families(mx))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if (serve(d, &why))
		serve_later(d, &why);
	return 0;
}

void hbd_metrics_run(struct hb_daemon *d)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (!d->mx)
		return;
	if (!d->mx->mhd) {
		struct hb_err why = { 0 };

		if (!d->stopping && hb_clock_mono_ms() >= d->mx->retry_ms &&
		    serve(d, &why))
			serve_later(d, &why);
		return;
	}
	cut_slow(d->mx);
	/* MHD keeps connections it could not finish in one round ready
	 * without waking its descriptor: it says so with a timeout of 0 */
	for (int i = 0; i < MX_RUN_AGAIN; i++)
		if (MHD_run(d->mx->mhd) != MHD_YES ||
		    MHD_get_timeout(d->mx->mhd, &ms) != MHD_YES || ms > 0)
			break;
}

void hbd_metrics_stop(struct hb_daemon *d)
{
	if (!d->mx)
		return;
	if (d->mx->mhd) {
		if (d->epfd >= 0 && d->mx->epfd >= 0)
			epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->mx->epfd, NULL);
		MHD_stop_daemon(d->mx->mhd); /* closes the listening socket */
	}
	free(d->mx->body);
	free(d->mx);
	d->mx = NULL;
}
