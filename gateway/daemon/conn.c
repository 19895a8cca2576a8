/*
 * conn.c - the daemon's connections: who the peer is (SO_PEERCRED, and its
 * name from a cache a worker fills), the buffers and what a uid may hold in
 * them, reading and framing requests, accepting callers within the caps,
 * and the idle and slow-frame timeouts.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/proto.h"

/* Read at most this much per read(2). */
#define READ_CHUNK (64u * 1024)
/* Stop taking requests from a connection whose unsent replies pass this. */
#define OUT_HIGH (4u * 1024 * 1024)
/* A connection's buffers larger than this are freed once empty. */
#define KEEP_BUF (256u * 1024)
/* How long a uid -> name lookup is cached. */
#define PW_CACHE_MS 60000
/* A whole frame must arrive within this (or the idle timeout, if less),
 * however its bytes trickle in. */
#define FRAME_MS 10000
/* Connection buffers (input and output) a uid other than root and
 * SlurmUser may hold, and all such uids together. */
#define UID_MEM_MAX   (16u * 1024 * 1024)
#define USERS_MEM_MAX (128u * 1024 * 1024)
/* Bytes read per loop iteration from a uid other than root and SlurmUser:
 * one who sends as fast as it can gets its turn, and no more, before
 * root's requests of the same iteration. */
#define UID_READ_BUDGET (256u * 1024)

/* ------------------------------------------------------------------ */
/* Users                                                               */
/* ------------------------------------------------------------------ */

/* Remember what NSS said of uid: its name and primary group, or (name
 * NULL) that it has none. */
void hbd_pw_fill(struct hb_daemon *d, uid_t uid, const char *name, gid_t gid)
{
	struct pw_entry *e = &d->pw[uid % PW_CACHE_SIZE];

	e->uid = uid;
	e->at_ms = hb_clock_mono_ms();
	e->known = name && strlen(name) < sizeof(e->name);
	e->gid = gid;
	snprintf(e->name, sizeof(e->name), "%s", e->known ? name : "");
}

/* What the cache says of uid: 0 with name and *gid set (either may be
 * NULL), HB_ENOENT if it has no name, HB_EAGAIN if not (freshly)
 * cached. */
int hbd_pw_cached(const struct hb_daemon *d, uid_t uid, char *name, size_t n,
		  gid_t *gid)
{
	const struct pw_entry *e = &d->pw[uid % PW_CACHE_SIZE];

	if (!e->at_ms || e->uid != uid ||
	    hb_clock_mono_ms() - e->at_ms >= PW_CACHE_MS)
		return HB_EAGAIN;
	if (!e->known)
		return HB_ENOENT;
	if (name)
		snprintf(name, n, "%s", e->name);
	if (gid)
		*gid = e->gid;
	return 0;
}

void hbd_resolve_slurm_user(struct hb_daemon *d)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	d->slurm_uid_valid = 0;
	if (getpwnam_r(d->cfg.slurm_user, &pw, buf, sizeof(buf), &res) == 0 &&
	    res) {
		d->slurm_uid = res->pw_uid;
		d->slurm_gid = res->pw_gid;
		d->slurm_uid_valid = 1;
		return;
	}
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){
			HB_LOG_STR("user", d->cfg.slurm_user) },
		1, "slurm.user has no passwd entry; only root may decide");
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/* Whether to log now: once a second at most; *dropped: how many were
 * not since the last. */
int hbd_rate_ok(struct ratelog *r, unsigned *dropped)
{
	int64_t now = hb_clock_mono_ms();

	if (r->last_ms && now - r->last_ms < 1000) {
		r->dropped++;
		return 0;
	}
	r->last_ms = now;
	*dropped = r->dropped;
	r->dropped = 0;
	return 1;
}

/* uid's memory count, one more connection on it; NULL if out of
 * memory. */
static struct ustat *ustat_get(struct hb_daemon *d, uid_t uid)
{
	struct ustat *u;

	for (u = d->ustats; u; u = u->next)
		if (u->uid == uid)
			break;
	if (!u && (u = calloc(1, sizeof(*u)))) {
		u->uid = uid;
		u->next = d->ustats;
		d->ustats = u;
	}
	if (u)
		u->refs++;
	return u;
}

static void ustat_put(struct hb_daemon *d, struct ustat *u)
{
	struct ustat **pp;

	if (!u || --u->refs)
		return;
	for (pp = &d->ustats; *pp; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	free(u);
}

/* Count what c's buffers hold now against its uid (and all users). */
static void conn_account(struct conn *c)
{
	size_t now = c->dead ? 0 : c->in.cap + c->out.cap;

	if (!c->us || now == c->held)
		return;
	c->us->mem = c->us->mem - c->held + now;
	if (!uid_is_priv(c->d, c->uid))
		c->d->users_mem = c->d->users_mem - c->held + now;
	c->held = now;
}

static void conn_free(struct conn *c)
{
	hb_buf_free(&c->in);
	hb_buf_free(&c->out);
	free(c);
}

/* Free c if it is closed and nothing points at it any more. */
void hbd_conn_release(struct conn *c)
{
	struct hb_daemon *d = c->d;

	if (!c->dead || c->busy || c->nstaged)
		return;
	/* off the live list already; to the graveyard, freed after the
	 * iteration's events (one may still name it) */
	c->next = d->graveyard;
	d->graveyard = c;
}

/* Listen again after running out of descriptors (accept_starved()). */
void hbd_accept_resume(struct hb_daemon *d)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->wl };

	if (!d->accept_paused || d->lfd < 0)
		return;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->lfd, &ev) == 0)
		d->accept_paused = 0;
}

void hbd_conn_close(struct conn *c, const char *why)
{
	struct hb_daemon *d = c->d;

	if (c->dead)
		return;
	hb_logf(HB_LOG_DEBUG,
		(struct hb_log_field[]){ HB_LOG_INT("uid", c->uid),
					 HB_LOG_STR("peer", c->peer) },
		2, "connection closed: %s", why);
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->dead = 1;
	conn_account(c);
	ustat_put(d, c->us);
	c->us = NULL;
	/* a descriptor is free: the reserve first, then new callers */
	if (d->reserve_fd < 0)
		d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	hbd_accept_resume(d);
	if (c->prev)
		c->prev->next = c->next;
	else
		d->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	d->nconns--;
	hbd_conn_release(c);
}

static size_t out_pending(const struct conn *c)
{
	return c->out.len - c->out_off + c->staged_len;
}

/* Recompute what the loop waits for on c. */
void hbd_conn_interest(struct conn *c)
{
	struct epoll_event ev = { 0 };
	uint32_t want = 0;

	if (c->dead)
		return;
	if (!c->eof && !c->closing && !c->d->stopping &&
	    c->in.len < c->in.max && out_pending(c) < OUT_HIGH)
		want |= EPOLLIN;
	if (c->out.len > c->out_off)
		want |= EPOLLOUT;
	if (want == c->events)
		return;
	ev.events = want;
	ev.data.ptr = c;
	if (epoll_ctl(c->d->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = want;
}

/* A task for c is done: c is freed if it closed meanwhile, else, once
 * nothing of it is staged, its next requests are taken and its replies
 * written. */
void hbd_conn_resume(struct conn *c)
{
	if (c->dead)
		hbd_conn_release(c);
	else if (!c->nstaged) {
		hbd_process_conn(c);
		hbd_conn_flush(c);
	}
}

/* Write what can be written; close when done and asked to. */
void hbd_conn_flush(struct conn *c)
{
	ssize_t n;

	while (!c->dead && c->out.len > c->out_off) {
		n = send(c->fd, c->out.data + c->out_off,
			 c->out.len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->out_off += (size_t)n;
			c->last_ms = hb_clock_mono_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		hbd_conn_close(c, n < 0 ? strerror(errno) : "write failed");
		return;
	}
	if (c->out.len == c->out_off) {
		/* give back what a large reply took */
		if (c->out.cap > KEEP_BUF)
			hb_buf_free(&c->out);
		else
			hb_buf_reset(&c->out);
		c->out_off = 0;
	}
	conn_account(c);
	if (!c->dead && (c->closing || c->eof || c->d->stopping) &&
	    conn_idle(c)) {
		hbd_conn_close(c, c->closing ? "after an error reply" : "done");
		return;
	}
	hbd_conn_interest(c);
}

/* ------------------------------------------------------------------ */
/* Reading and framing                                                 */
/* ------------------------------------------------------------------ */

/* Take every whole request buffered on c, in order, until one needs a
 * task, an error closes it, or its replies pile up. */
void hbd_process_conn(struct conn *c)
{
	struct hb_daemon *d = c->d;
	enum hb_proto_kind kind;
	const char *payload;
	size_t plen, flen, off0 = c->in_off;
	unsigned dropped;
	cJSON *req;
	int rc;

	while (!c->dead && !c->busy && !c->closing && !d->stopping &&
	       out_pending(c) < OUT_HIGH && c->in.len > c->in_off) {
		struct hb_err err = { 0 };

		rc = hb_proto_peek(c->in.data + c->in_off,
				   c->in.len - c->in_off,
				   d->cfg.daemon_max_request, &kind, &payload,
				   &plen, &flen, &err);
		if (rc == HB_EAGAIN)
			break;
		if (rc == 0 && kind != HB_PROTO_REQUEST)
			rc = hb_err_set(&err, HB_EPROTO, NULL, 0,
					"expected a request frame, got a "
					"reply");
		if (rc == 0)
			rc = hb_proto_parse(payload, plen, HB_PROTO_REQUEST,
					    &req, &err);
		if (rc) {
			if (hbd_rate_ok(&d->rl_bad, &dropped))
				hb_logf(HB_LOG_WARN,
					(struct hb_log_field[]){
						HB_LOG_INT("uid", c->uid),
						HB_LOG_STR("peer", c->peer),
						HB_LOG_INT("not_logged",
							   dropped) },
					3, "bad request, closing: %s", err.msg);
			hbd_stage_error(d, c, rc, err.msg, 1);
			c->closing = 1;
			break;
		}
		c->in_off += flen;
		hbd_dispatch(d, c, req);
		cJSON_Delete(req);
	}
	/* a partial frame left after whole ones began about now */
	if (c->in_off != off0)
		c->frame_ms = hb_clock_mono_ms();
	/* drop what was consumed */
	if (c->in_off == c->in.len) {
		c->frame_ms = 0;
		if (c->in.cap > KEEP_BUF)
			hb_buf_free(&c->in);
		else
			hb_buf_reset(&c->in);
		c->in_off = 0;
	} else if (c->in_off > 0 && (c->in_off >= READ_CHUNK || c->busy)) {
		memmove(c->in.data, c->in.data + c->in_off,
			c->in.len - c->in_off);
		c->in.len -= c->in_off;
		c->in.data[c->in.len] = '\0';
		c->in_off = 0;
	}
	conn_account(c);
	hbd_conn_interest(c);
}

/* Close c now, telling it why if tell (best effort); the warning
 * rate-limited by rl. */
static void conn_kill(struct conn *c, const char *why, struct ratelog *rl,
		      int tell)
{
	unsigned dropped;
	size_t len;
	char *f = tell ? hbd_frame_error(HB_EUNAVAIL, why, &len) : NULL;

	if (hbd_rate_ok(rl, &dropped))
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){
				HB_LOG_INT("uid", c->uid),
				HB_LOG_STR("peer", c->peer),
				HB_LOG_INT("not_logged", dropped) },
			3, "connection closed: %s", why);
	if (f && send(c->fd, f, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		hb_log(HB_LOG_DEBUG, "could not tell a closed caller why");
	free(f);
	hbd_conn_close(c, why);
}

static void conn_read(struct conn *c)
{
	char buf[READ_CHUNK];
	size_t room = c->in.max - c->in.len;
	struct ustat *u = c->us;
	ssize_t n;

	if (room == 0) {
		hbd_conn_interest(c);
		return;
	}
	if (u && !uid_is_priv(c->d, c->uid)) {
		/* its share of this iteration is spent: the next one (the
		 * socket stays readable) */
		if (u->iter != c->d->iter) {
			u->iter = c->d->iter;
			u->read = 0;
		}
		if (u->read >= UID_READ_BUDGET)
			return;
	}
	n = recv(c->fd, buf, room < sizeof(buf) ? room : sizeof(buf),
		 MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		hbd_conn_close(c, strerror(errno));
		return;
	}
	if (n == 0) {
		c->eof = 1;
		hbd_process_conn(c);
		if (conn_idle(c))
			hbd_conn_close(c, "the peer closed");
		else
			hbd_conn_interest(c);
		return;
	}
	c->last_ms = hb_clock_mono_ms();
	if (u)
		u->read += (size_t)n;
	if (!c->frame_ms)
		c->frame_ms = c->last_ms;
	if (hb_buf_append(&c->in, buf, (size_t)n)) {
		hbd_conn_close(c, "out of memory");
		return;
	}
	conn_account(c);
	if (!uid_is_priv(c->d, c->uid) &&
	    (c->us->mem > UID_MEM_MAX || c->d->users_mem > USERS_MEM_MAX)) {
		conn_kill(c, c->us->mem > UID_MEM_MAX
				     ? "your uid's connections hold too much "
				       "memory; close some"
				     : "users' connections hold too much "
				       "memory; try again",
			  &c->d->rl_mem, 1);
		return;
	}
	hbd_process_conn(c);
}

void hbd_conn_event(struct conn *c, uint32_t ev)
{
	if (c->dead)
		return;
	if (ev & EPOLLIN)
		conn_read(c);
	if (!c->dead && (ev & EPOLLOUT))
		hbd_conn_flush(c);
	if (!c->dead && (ev & (EPOLLERR | EPOLLHUP)) && !(ev & EPOLLIN)) {
		/* the peer is gone; a task's result has nobody to go to */
		hbd_conn_close(c, "hang-up");
	}
}

/* ------------------------------------------------------------------ */
/* Accepting                                                           */
/* ------------------------------------------------------------------ */

static void refuse(int fd, const char *msg)
{
	size_t len;
	char *f = hbd_frame_error(HB_EUNAVAIL, msg, &len);

	/* best effort: the caller learns why, or sees the close */
	if (f && send(fd, f, len, MSG_NOSIGNAL | MSG_DONTWAIT) < (ssize_t)len)
		hb_log(HB_LOG_DEBUG, "could not tell a refused caller why");
	free(f);
	close(fd);
}

/*
 * Whether a new connection from uid may be taken; NULL, or why not.  The
 * cap is shared, so one local user holding every slot (each may buffer a
 * frame up to daemon.max_request) would make the plugin fail open for
 * everyone: a user other than root and SlurmUser may hold at most an
 * eighth of the cap, and the last eighth is kept for those two.
 */
static const char *conn_refused(const struct hb_daemon *d, uid_t uid)
{
	unsigned share = d->opts.max_conns / 8, n = 0;

	if (d->nconns >= d->opts.max_conns)
		return "too many connections; try again";
	if (uid_is_priv(d, uid))
		return NULL;
	if (d->nconns + share >= d->opts.max_conns)
		return "too many connections (the last ones are kept for "
		       "root and SlurmUser); try again";
	for (const struct conn *c = d->conns; c; c = c->next)
		n += c->uid == uid && !c->dead;
	if (n >= (share ? share : 1))
		return "too many connections from your uid; close some";
	return NULL;
}

/* Take fd, a caller with credentials cr, as a connection; 0, or -1 with
 * fd closed. */
static int take_conn(struct hb_daemon *d, int fd, const struct ucred *cr)
{
	struct epoll_event ev = { 0 };
	struct conn *c = calloc(1, sizeof(*c));
	int rc;

	if (!c || !(c->us = ustat_get(d, cr->uid))) {
		free(c);
		refuse(fd, "out of memory");
		return -1;
	}
	c->w.tag = T_CONN;
	c->d = d;
	c->fd = fd;
	c->uid = cr->uid;
	c->gid = cr->gid;
	c->pid = cr->pid;
	snprintf(c->peer, sizeof(c->peer), "pid %d", (int)cr->pid);
	/* the name from the cache; else looked up on a worker when the
	 * first request that needs it comes (conn_named()) */
	rc = hbd_pw_cached(d, cr->uid, c->user, sizeof(c->user), NULL);
	c->named = rc != HB_EAGAIN;
	if (rc)
		c->user[0] = '\0';
	/* one largest frame and the start of the next */
	hb_buf_init(&c->in, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD + READ_CHUNK);
	hb_buf_init(&c->out, 0);
	c->last_ms = hb_clock_mono_ms();
	c->events = EPOLLIN;
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		hb_log(HB_LOG_WARN, "epoll_ctl: %s", strerror(errno));
		close(fd);
		ustat_put(d, c->us);
		conn_free(c);
		return -1;
	}
	c->next = d->conns;
	if (d->conns)
		d->conns->prev = c;
	d->conns = c;
	d->nconns++;
	hb_metrics_conn_accepted();
	return 0;
}

/* The caller's credentials; 0, or -1 with fd closed. */
static int peer_cred(int fd, struct ucred *cr)
{
	socklen_t sl = sizeof(*cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &sl) == 0)
		return 0;
	hb_log(HB_LOG_WARN, "SO_PEERCRED: %s", strerror(errno));
	close(fd);
	return -1;
}

/*
 * accept4() said EMFILE or ENFILE.  Left alone, the listening socket
 * stays readable and the loop spins on it.  As Redis and libuv do, the
 * reserve descriptor makes room for one caller at a time: the pending
 * callers are taken one by one, root and SlurmUser kept (the reserve
 * comes back when a descriptor frees), anyone else told to try again.
 * Then the listening socket rests until a connection closes, or
 * ACCEPT_PAUSE_MS.
 */
static void accept_starved(struct hb_daemon *d, int err)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &d->wl };
	unsigned dropped, n = 0;
	struct ucred cr;
	int fd;

	if (hbd_rate_ok(&d->rl_fds, &dropped))
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){
				HB_LOG_INT("connections", d->nconns),
				HB_LOG_INT("not_logged", dropped) },
			2,
			"accept: %s; refusing callers other than root and "
			"SlurmUser until a descriptor frees",
			strerror(err));
	while (d->reserve_fd >= 0 && n++ < 1024) {
		close(d->reserve_fd);
		d->reserve_fd = -1;
		fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		if (peer_cred(fd, &cr) == 0) {
			if (!uid_is_priv(d, cr.uid) ||
			    d->nconns >= d->opts.max_conns)
				refuse(fd, "the daemon is out of file "
					   "descriptors; try again");
			else if (take_conn(d, fd, &cr) == 0)
				break; /* it keeps the reserve's room */
		}
		d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (d->reserve_fd < 0)
		d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->lfd, &ev) == 0) {
		d->accept_paused = 1;
		d->accept_resume_ms = hb_clock_mono_ms() + ACCEPT_PAUSE_MS;
	}
}

/* Callers taken per wake-up: one who connects as fast as the daemon
 * refuses would otherwise keep the loop here for good. */
#define ACCEPT_BATCH 32

void hbd_do_accept(struct hb_daemon *d)
{
	const char *why;
	unsigned dropped;
	struct ucred cr;
	int fd;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				accept_starved(d, errno);
			else if (errno != EAGAIN && errno != EWOULDBLOCK &&
				 hbd_rate_ok(&d->rl_fds, &dropped))
				hb_log(HB_LOG_WARN, "accept: %s",
				       strerror(errno));
			return;
		}
		if (peer_cred(fd, &cr))
			continue;
		if ((why = conn_refused(d, cr.uid))) {
			if (hbd_rate_ok(&d->rl_refused, &dropped))
				hb_logf(HB_LOG_WARN,
					(struct hb_log_field[]){
						HB_LOG_INT("uid", cr.uid),
						HB_LOG_INT("connections",
							   d->nconns),
						HB_LOG_INT("not_logged",
							   dropped) },
					3, "connection refused: %s", why);
			refuse(fd, why);
			hb_metrics_conn_refused();
			continue;
		}
		take_conn(d, fd, &cr);
	}
}

/* ------------------------------------------------------------------ */
/* Timeouts and the graveyard                                          */
/* ------------------------------------------------------------------ */

/* Close what is idle, and what sends a frame too slowly. */
void hbd_idle_scan(struct hb_daemon *d, int64_t now)
{
	struct conn *c, *next;

	int frame_ms = d->opts.idle_ms < FRAME_MS ? d->opts.idle_ms : FRAME_MS;

	for (c = d->conns; c; c = next) {
		next = c->next;
		/* slow senders: a frame's bytes trickling in do not keep a
		 * connection, however often each comes */
		if (!c->busy && !c->nstaged && c->frame_ms &&
		    c->in.len > c->in_off && now - c->frame_ms >= frame_ms)
			conn_kill(c, "a request frame took too long to arrive",
				  &d->rl_frame, 0);
		else if (!c->busy && !c->nstaged &&
			 now - c->last_ms >= d->opts.idle_ms)
			hbd_conn_close(c, c->in.len > c->in_off
						  ? "timed out mid-frame"
						  : "idle");
	}
}

/* Free the connections closed in this iteration (hbd_conn_release()). */
void hbd_bury(struct hb_daemon *d)
{
	struct conn *c;

	while ((c = d->graveyard)) {
		d->graveyard = c->next;
		conn_free(c);
	}
}
