/*
 * daemon.c - hpcbridged's core: its life cycle (set up, run, free), the
 * configuration and its reload, the API socket, and the one epoll loop
 * over the socket, the connections, a signalfd and the worker pools'
 * eventfds.
 *
 * An iteration of the loop handles every ready descriptor.  Requests are
 * answered in the order they arrive on a connection; what they write is
 * one store transaction, committed before any of their replies is sent
 * (batch.c).  The other files: conn.c (connections), dispatch.c (requests
 * to ops), ops_*.c (the ops), tasks.c (worker tasks), reconcile.c and
 * refresh.c (timers), origin_jobs.c (Kubernetes-origin MPIJobs).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon_int.h"
#include "hpcbridge/file.h"
#include "hpcbridge/log.h"

/* Most memory one decision's cJSON trees may take (hbd_op_decide()). */
#define SCRATCH_MAX (64u * 1024 * 1024)
/* How long a remote job's cancel waits after SIGTERM before SIGKILL. */
#define REMOTE_GRACE_MS 5000
/* Remote jobs' requests in flight, per worker (remote_busy()). */
#define REMOTE_QUEUE_PER_WORKER 8
/* Descriptors kept for the daemon's own files beside its connections. */
#define FD_HEADROOM 32
/* Callers waiting to be accepted.  Not SOMAXCONN (4096): a user who
 * connects as fast as refusals go keeps the queue full, and root's
 * connect waits behind all of it (about 10 us each). */
#define LISTEN_BACKLOG 256

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

/* The command line's overrides, applied to a freshly parsed cfg. */
static void apply_overrides(const struct hb_daemon *d, struct hb_config *cfg)
{
	if (d->socket_path)
		cfg->daemon_socket = d->socket_path;
	if (d->state_path)
		cfg->daemon_state = d->state_path;
}

static void apply_config(struct hb_daemon *d)
{
	enum hb_log_level lvl;

	if (hb_log_level_parse(d->cfg.daemon_log_level, &lvl) == 0)
		hb_log_set_level(lvl);
	hbd_resolve_slurm_user(d);
}

/* 0: the new configuration is in use; else it was refused. */
static int reload_config(struct hb_daemon *d)
{
	struct hb_err err = { 0 };
	struct hb_config next = { 0 };
	struct hb_ratecard card = { 0 };
	struct hb_buf b;
	int parsed = 0, rc;

	if (!d->config_path) {
		hb_log(HB_LOG_INFO, "SIGHUP: no configuration file to re-read");
		return 0;
	}
	hb_buf_init(&b, HB_CONFIG_FILE_MAX);
	rc = hb_file_read(d->config_path, HB_CONFIG_FILE_MAX, NULL, &b, &err);
	if (!rc)
		rc = hb_config_parse(b.data ? b.data : "", b.len,
				     d->config_path, &next, &err);
	if (!rc) {
		parsed = 1;
		apply_overrides(d, &next);
		rc = hb_config_check_reload(&d->cfg, &next, &err);
	}
	if (!rc)
		rc = hbd_ratecard_load(&next, &card, &err);
	/* the policy last: the decider takes it only if all else is good */
	if (!rc)
		rc = hb_decider_reload(d->dc, &next, &err);
	if (rc) {
		hb_logf(HB_LOG_ERROR,
			(struct hb_log_field[]){
				HB_LOG_STR("config", d->config_path) },
			1,
			"reload refused, the running configuration stays: %s",
			err.msg);
		if (parsed)
			hb_config_free(&next);
		hb_ratecard_free(&card);
		hb_buf_free(&b);
		return rc;
	}
	hb_config_free(&d->cfg);
	d->cfg = next;
	/* the text the plugin's snapshot carries (publish.c), published
	 * at once */
	hb_buf_free(&d->feed.config);
	d->feed.config = b;
	d->feed.last_ms = 0;
	hb_ratecard_free(&d->card);
	d->card = card;
	hbd_metering_apply(d);
	apply_config(d);
	/* the budget periods may differ */
	hbd_refresh_spend(d, hb_clock_mono_ms(), 1);
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("config", d->config_path) },
		1, "configuration reloaded");
	return 0;
}

/* systemd hears of the reload on both sides of it (notify.c). */
static void reload(struct hb_daemon *d)
{
	hbd_notify_reloading(d);
	hbd_notify_reloaded(d, reload_config(d));
}

/* ------------------------------------------------------------------ */
/* Socket                                                              */
/* ------------------------------------------------------------------ */

/* mkdir -p the parent of path, new directories with mode. */
static int make_parent(const char *path, mode_t mode, struct hb_err *err)
{
	char dir[PATH_MAX];
	char *p;
	size_t n = strlen(path);

	if (n >= sizeof(dir))
		return hb_err_set(err, HB_EINVAL, path, 0, "path too long");
	memcpy(dir, path, n + 1);
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, mode) < 0 && errno != EEXIST)
			return hb_err_set(err, HB_EIO, dir, 0, "mkdir: %s",
					  strerror(errno));
		*p = '/';
	}
	if (mkdir(dir, mode) < 0 && errno != EEXIST)
		return hb_err_set(err, HB_EIO, dir, 0, "mkdir: %s",
				  strerror(errno));
	return 0;
}

/* The socket's directory should be root's (the daemon's) and writable
 * by it alone: whoever may write it may replace the socket, and the
 * plugin and the CLI check who owns it.  A warning, not a refusal. */
static void socket_dir_check(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat sb;
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!slash || n >= sizeof(dir))
		return;
	memcpy(dir, path, n ? n : 1);
	dir[n ? n : 1] = '\0';
	if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) &&
	    sb.st_uid == geteuid() && !(sb.st_mode & 022))
		return;
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){ HB_LOG_STR("dir", dir) },
		1,
		"the socket's directory is not the daemon's own or is "
		"writable by others: a user could replace the socket");
}

static int make_socket(const char *path, struct hb_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	struct stat sb;
	mode_t old;
	int fd, probe, rc;

	if (n == 0 || n >= sizeof(sa.sun_path))
		return hb_err_set(err, HB_EINVAL, path, 0,
				  "socket path too long (at most %zu)",
				  sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, n);
	if ((rc = make_parent(path, 0755, err)))
		return rc;
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			return hb_err_set(err, HB_EEXIST, path, 0,
					  "exists and is not a socket; not "
					  "replacing it");
		/* a live daemon answers; a stale socket refuses */
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			return hb_err_set(err, HB_EEXIST, path, 0,
					  "another daemon is listening here");
		}
		if (probe >= 0)
			close(probe);
		if (unlink(path) < 0)
			return hb_err_set(err, HB_EIO, path, 0,
					  "cannot remove the stale socket: %s",
					  strerror(errno));
		hb_logf(HB_LOG_INFO,
			(struct hb_log_field[]){ HB_LOG_STR("socket", path) },
			1, "replaced a stale socket");
	}
	socket_dir_check(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hb_err_set(err, HB_EIO, path, 0, "socket: %s",
				  strerror(errno));
	/* Who may call is decided by SO_PEERCRED, per op: the socket is
	 * 0666.  bind() gives it that mode through the umask, so no chmod
	 * ever runs on a path that could have become a symlink meanwhile
	 * (start-up is single-minded: the workers create no files). */
	old = umask(0111);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0) {
		rc = hb_err_set(err, HB_EIO, path, 0, "bind: %s",
				strerror(errno));
		close(fd);
		return rc;
	}
	if (listen(fd, LISTEN_BACKLOG) < 0) {
		rc = hb_err_set(err, HB_EIO, path, 0, "listen: %s",
				strerror(errno));
		close(fd);
		unlink(path);
		return rc;
	}
	return fd;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

int hb_daemon_block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	signal(SIGPIPE, SIG_IGN);
	return pthread_sigmask(SIG_BLOCK, &set, NULL) ? HB_EIO : 0;
}

static int add_watch(struct hb_daemon *d, int fd, struct watch *w, enum tag tag)
{
	struct epoll_event ev = { .events = EPOLLIN };

	w->tag = tag;
	ev.data.ptr = w;
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? HB_EIO : 0;
}

/* Connections past the descriptors the process may open would only
 * meet EMFILE: the cap comes down to fit RLIMIT_NOFILE (which
 * hpcbridged raises to its hard limit first), so that the share per uid
 * and the reserve for root and SlurmUser (conn_refused()) bite first. */
static void fit_fd_limit(struct hb_daemon *d)
{
	struct rlimit rl;
	unsigned fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= (rlim_t)d->opts.max_conns + FD_HEADROOM)
		return;
	fit = rl.rlim_cur > FD_HEADROOM + 8 ? (unsigned)rl.rlim_cur -
						      FD_HEADROOM
					    : 8;
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){
			HB_LOG_INT("nofile", (int64_t)rl.rlim_cur),
			HB_LOG_INT("max_connections", fit) },
		2, "RLIMIT_NOFILE is low: fewer connections taken");
	d->opts.max_conns = fit;
}

bool hbd_remote_cfg_is_cluster(const struct hb_config *cfg)
{
	return !strcmp(cfg->remote_backend, "kubernetes");
}

/* The backend burst jobs run on, as remote.backend says. */
static int remote_new(struct hb_daemon *d, struct hb_err *err)
{
	struct hb_remote_kube_opts ko = { 0 };

	if (!hbd_remote_cfg_is_cluster(&d->cfg))
		return hb_remote_local_new(d->cfg.remote_local_dir,
					    REMOTE_GRACE_MS, &d->remote, err);
	ko.kubeconfig = d->cfg.remote_kubeconfig;
	ko.context = d->cfg.remote_context;
	ko.ns = d->cfg.k8s.namespace;
	ko.workers = d->cfg.daemon_workers;
	return hb_remote_kube_new(&ko, &d->remote, err);
}

int hb_daemon_new(const struct hb_daemon_opts *opts, struct hb_config *cfg,
		  struct hb_daemon **out, struct hb_err *err)
{
	struct hb_daemon *d;
	sigset_t set;
	int rc;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d) {
		hb_config_free(cfg);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	d->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	d->epfd = d->lfd = d->sfd = d->reserve_fd = -1;
	d->feed.fd = -1;
	hb_buf_init(&d->feed.config, HB_CONFIG_FILE_MAX);
	if (opts->config_text &&
	    hb_buf_append(&d->feed.config, opts->config_text,
			  strlen(opts->config_text))) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto fail;
	}
	d->staged_tail = &d->staged;
	d->waiting_tail = &d->waiting;
	d->opts = *opts;
	d->failpoint = getenv("HPCBRIDGE_FAILPOINT");
	if (!d->opts.idle_ms)
		d->opts.idle_ms = HB_DAEMON_IDLE_MS;
	if (!d->opts.max_conns)
		d->opts.max_conns = HB_DAEMON_MAX_CONNS;
	fit_fd_limit(d);
	/* the room accept_starved() makes when descriptors run out */
	d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	d->config_path = xstrdup(opts->config_path);
	d->socket_path = xstrdup(opts->socket_path);
	d->state_path = xstrdup(opts->state_path);
	if ((opts->config_path && !d->config_path) ||
	    (opts->socket_path && !d->socket_path) ||
	    (opts->state_path && !d->state_path)) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto fail;
	}
	d->opts.config_path = d->config_path;
	d->opts.socket_path = d->socket_path;
	d->opts.state_path = d->state_path;
	apply_overrides(d, &d->cfg);
	apply_config(d);

	/* 0711, as systemd's StateDirectoryMode and the package make it: the
	 * store is 0600 itself, no user lists the folder, and the local
	 * backend's jobs (remote.local_dir may lie under it) run as their
	 * users, who must pass through */
	if ((rc = make_parent(d->cfg.daemon_state, 0711, err)))
		goto fail;
	if ((rc = hb_decider_new(&d->cfg, &d->dc, err)) ||
	    (rc = hbd_ratecard_load(&d->cfg, &d->card, err)))
		goto fail;
	hb_arena_init(&d->scratch, SCRATCH_MAX);
	if ((rc = hb_store_open(d->cfg.daemon_state, &d->st, err)))
		goto fail;
	hbd_metering_start(d);
	d->rlimit = REMOTE_QUEUE_PER_WORKER * d->cfg.daemon_workers;
	d->ckpt_pages = d->opts.checkpoint_pages > 0
				? d->opts.checkpoint_pages
				: (int)d->cfg.daemon_checkpoint_pages;
	hb_store_set_autocheckpoint(d->st, CKPT_INLINE_FACTOR * d->ckpt_pages);
	if ((rc = hb_decider_load_spend(d->dc, d->st,
					hb_clock_wall_ms() / 1000,
					d->budget_actuals, err)))
		goto fail;
	if ((rc = remote_new(d, err)))
		goto fail;
	if ((rc = hbd_origin_new(d, err))) /* origin hook */
		goto fail;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "epoll: %s",
				strerror(errno));
		goto fail;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	d->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sfd < 0) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "signalfd: %s",
				strerror(errno));
		goto fail;
	}
	if ((rc = hb_pool_new(d->cfg.daemon_workers, &d->pool)) ||
	    (rc = hb_pool_new(d->cfg.daemon_workers, &d->rpool)) ||
	    (rc = hb_pool_new(1, &d->syncpool))) {
		hb_err_set(err, rc, NULL, 0, "cannot start the workers");
		goto fail;
	}
	if ((rc = hb_store_defer_sync(d->st, err)))
		goto fail;
	rc = make_socket(d->cfg.daemon_socket, err);
	if (rc < 0)
		goto fail;
	d->lfd = rc;
	if (add_watch(d, d->lfd, &d->wl, T_LISTEN) ||
	    add_watch(d, d->sfd, &d->ws, T_SIGNAL) ||
	    add_watch(d, hb_pool_fd(d->pool), &d->wp, T_POOL) ||
	    add_watch(d, hb_pool_fd(d->rpool), &d->wr, T_RPOOL) ||
	    add_watch(d, hb_pool_fd(d->syncpool), &d->wy, T_SYNC) ||
	    (d->origin &&
	     add_watch(d, hb_origin_fd(d->origin), &d->wo, T_ORIGIN))) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "epoll_ctl: %s",
				strerror(errno));
		goto fail;
	}
	if ((rc = hbd_metrics_start(d, err))) /* metrics.listen */
		goto fail;
	/* without it the plugin's decisions still arrive, through the
	 * reconciler: a warning, not a failure */
	if (hbd_notice_open(d, err)) {
		hb_log(HB_LOG_ERROR, "%s", err->msg);
		memset(err, 0, sizeof(*err));
	}
	*out = d;
	return 0;
fail:
	hb_daemon_free(d);
	return rc;
}

void hb_daemon_set_slurm(struct hb_daemon *d,
			   const struct hb_slurm_side_ops *b)
{
	if (b)
		d->be = *b;
	else
		memset(&d->be, 0, sizeof(d->be));
}

const char *hb_daemon_socket(const struct hb_daemon *d)
{
	return d->cfg.daemon_socket;
}

void hb_daemon_free(struct hb_daemon *d)
{
	struct conn *c, *next;

	if (!d)
		return;
	d->stopping = 1; /* no new requests from here on */
	/* the remote tasks first: they use the backend */
	if (d->rpool) {
		hb_pool_free(d->rpool);
		d->rpool = NULL;
	}
	hb_remote_free(d->remote); /* remote jobs keep running */
	d->remote = NULL;
	free(d->trips);
	d->trips = NULL;
	/* what waits for a sync goes out first, while its tasks can still
	 * reach the workers; from here on syncs are made in this thread */
	if (d->syncpool) {
		hb_pool_free(d->syncpool);
		d->syncpool = NULL;
	}
	hbd_sync_kick(d);
	/* the workers end next; what they finish is recorded */
	if (d->pool) {
		hb_pool_free(d->pool);
		d->pool = NULL;
		hbd_batch_end(d);
	}
	for (c = d->conns; c; c = next) {
		next = c->next;
		hbd_conn_close(c, "daemon exit");
	}
	hbd_batch_end(d);
	hbd_bury(d);
	if (d->txn_open) {
		struct hb_err err = { 0 };

		hb_store_commit(d->st, &err);
	}
	if (d->lfd >= 0) {
		close(d->lfd);
		unlink(d->cfg.daemon_socket);
	}
	if (d->sfd >= 0)
		close(d->sfd);
	hbd_notice_close(d);
	/* a daemon that stopped leaves the plugin nothing to decide from:
	 * jobs stay on Slurm until it is back (after a crash, the file ages
	 * out: plugin.snapshot_max_age_s) */
	if (d->feed.version)
		unlink(d->feed.snap_path);
	hb_buf_free(&d->feed.config);
	hbd_metrics_stop(d);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->reserve_fd >= 0)
		close(d->reserve_fd);
	hb_origin_free(d->origin); /* after the pool: done() may publish */
	hb_origin_ev_free(d->origin_wait);
	hb_store_close(d->ckpt_st); /* after the pool: nothing uses it */
	hb_store_close(d->st);
	hb_decider_free(d->dc);
	hb_ratecard_free(&d->card);
	hb_arena_free(&d->scratch);
	hb_config_free(&d->cfg);
	free(d->config_path);
	free(d->socket_path);
	free(d->state_path);
	free(d);
}

/* ------------------------------------------------------------------ */
/* Signals and the loop                                                */
/* ------------------------------------------------------------------ */

static void start_stop(struct hb_daemon *d, const char *sig)
{
	struct conn *c, *next;

	if (d->stopping)
		return;
	d->stopping = 1;
	d->stop_deadline = hb_clock_mono_ms() + HB_DAEMON_STOP_MS;
	hbd_notify_stopping(d);
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_STR("signal", sig),
			HB_LOG_INT("connections", d->nconns),
			HB_LOG_INT("in_flight", hb_pool_pending(d->pool)) },
		3, "stopping: no new connections, finishing requests");
	/* new callers now fail at once (and the plugin keeps their jobs on
	 * Slurm) */
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->lfd, NULL);
	close(d->lfd);
	d->lfd = -1;
	unlink(d->cfg.daemon_socket);
	for (c = d->conns; c; c = next) {
		next = c->next;
		if (conn_idle(c))
			hbd_conn_close(c, "stopping");
		else
			hbd_conn_interest(c);
	}
}

static void on_signal(struct hb_daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP && d->nremote) {
			/* remote tasks read the configuration: it changes
			 * once they are done (new ones wait meanwhile) */
			d->reload_wanted = 1;
			hb_log(HB_LOG_INFO, "SIGHUP: reloading once the remote "
					    "jobs' requests in flight are done");
		} else if (si.ssi_signo == SIGHUP)
			reload(d);
		else if (si.ssi_signo == SIGTERM)
			start_stop(d, "SIGTERM");
		else if (si.ssi_signo == SIGINT)
			start_stop(d, "SIGINT");
	}
}

int hb_daemon_run(struct hb_daemon *d)
{
	struct epoll_event evs[256];
	int64_t now;
	int n, i, timeout, origin_ready;

	/* the plugin has a snapshot to decide from once this is said */
	hbd_publish_tick(d, hb_clock_mono_ms());
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_STR("socket", d->cfg.daemon_socket),
			HB_LOG_STR("state", d->cfg.daemon_state),
			HB_LOG_INT("pid", getpid()),
			HB_LOG_INT("workers", d->cfg.daemon_workers),
			HB_LOG_STR("version", HB_VERSION) },
		5, "hpcbridged serving");
	d->last_scan = hb_clock_mono_ms();
	hbd_notify_start(d);
	for (;;) {
		timeout = 1000;
		if (d->stopping || d->accept_paused)
			timeout = ACCEPT_PAUSE_MS;
		if (d->opts.idle_ms < timeout * 2)
			timeout = d->opts.idle_ms / 2 + 1;
		n = epoll_wait(d->epfd, evs, 256,
			       hbd_notify_timeout(d, timeout));
		d->iter++;
		if (n < 0 && errno != EINTR) {
			hb_log(HB_LOG_ERROR, "epoll_wait: %s", strerror(errno));
			return HB_EIO;
		}
		origin_ready = 0;
		for (i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;

			switch (w->tag) {
			case T_LISTEN:
				if (!d->stopping)
					hbd_do_accept(d);
				break;
			case T_SIGNAL:
				on_signal(d);
				break;
			case T_POOL:
				hb_pool_complete(d->pool);
				break;
			case T_RPOOL:
				hb_pool_complete(d->rpool);
				break;
			case T_SYNC:
				hb_pool_complete(d->syncpool);
				break;
			case T_CONN:
				hbd_conn_event((struct conn *)w, evs[i].events);
				break;
			case T_ORIGIN:
				origin_ready = 1;
				break;
			case T_METRICS:
				hbd_metrics_run(d);
				break;
			case T_NOTICE:
				hbd_notice_read(d);
				break;
			}
		}
		hbd_batch_end(d);
		if (d->reload_wanted && !d->nremote) {
			d->reload_wanted = 0;
			reload(d);
		}
		/* origin hooks: managed MPIJobs, then their status patches;
		 * both act on what the store says, so that is synced first */
		if (d->origin && (origin_ready || d->origin_redo) &&
		    !d->stopping) {
			d->origin_redo = 0;
			hbd_sync_now(d);
			hbd_origin_drain(d);
		}
		if (hb_origin_staged(d->origin)) {
			hbd_sync_now(d);
			hb_origin_flush(d->origin);
		}
		hbd_bury(d);
		now = hb_clock_mono_ms();
		hbd_notify_tick(d, now); /* the watchdog, fed by the loop */
		if (d->accept_paused && now >= d->accept_resume_ms)
			hbd_accept_resume(d);
		hbd_poll_slurm(d, now);
		hbd_expire_orphans(d, now);
		hbd_refresh_estimates(d, now);
		hbd_refresh_spend(d, now, 0);
		hbd_publish_tick(d, now);
		hbd_ckpt_bill(d, now);
		if (now - d->last_scan >= timeout) {
			hbd_idle_scan(d, now);
			hbd_bury(d);
			hbd_metrics_run(d); /* its timeouts */
			d->last_scan = now;
		}
		if (d->stopping) {
			if (!d->conns && hb_pool_pending(d->pool) == 0 &&
			    hb_pool_pending(d->rpool) == 0 && hbd_all_synced(d))
				break;
			if (now >= d->stop_deadline) {
				hb_logf(HB_LOG_WARN,
					(struct hb_log_field[]){ HB_LOG_INT(
						"connections", d->nconns) },
					1,
					"stopping: gave up waiting for "
					"requests in flight");
				break;
			}
		}
	}
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_INT("requests", d->nrequests),
			HB_LOG_INT("decisions", d->ndecisions) },
		2, "stopped");
	return 0;
}
