/*
 * daemon.c - hpcbridged's core: one epoll loop over the API socket, the
 * connections, a signalfd and the worker pool's eventfd.
 *
 * An iteration of the loop handles every ready descriptor.  Requests are
 * answered in the order they arrive on a connection.  Replies are not sent
 * at once: they are staged, and at the end of the iteration the store
 * transaction that holds every write of the iteration is committed (one
 * sync for all of them), and only then are the staged replies queued on
 * their connections.  When the commit fails, every reply that depended on
 * it becomes an ESTORE error: nobody is told about a decision that is not
 * on disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
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
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daemon.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/file.h"
#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/log.h"
#include "hpcbridge/backend.h"
#include "hpcbridge/proto.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/store.h"
#include "origin.h"
#include "gateway/placement/decider.h"
#include "pool.h"

#ifndef HB_VERSION
#define HB_VERSION "0.0.0"
#endif

/* Read at most this much per read(2). */
#define READ_CHUNK (64u * 1024)
/* Most memory one decision's cJSON trees may take (op_decide). */
#define SCRATCH_MAX (64u * 1024 * 1024)
/* Stop taking requests from a connection whose unsent replies pass this. */
#define OUT_HIGH (4u * 1024 * 1024)
/* A connection's buffers larger than this are freed once empty. */
#define KEEP_BUF (256u * 1024)
/* Largest configuration file read on SIGHUP. */
/* How long a uid -> name lookup is cached. */
/* Remote jobs: output bytes per poll (base64 in the reply), and how long
 * cancel waits after SIGTERM before SIGKILL. */
#define REMOTE_CHUNK_MAX (256 * 1024)
#define REMOTE_GRACE_MS	 5000
/* Remote jobs' requests in flight, per worker (remote_busy()). */
#define REMOTE_QUEUE_PER_WORKER 8
/* How often the reconciler asks Slurm what changed. */
#define SLURM_POLL_MS 1000
#define TWIN_TRIES    30 /* a twin create or delete, a second apart */
#define PW_CACHE_MS   60000
#define PW_CACHE_SIZE 256
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
/* Descriptors kept for the daemon's own files beside its connections. */
#define FD_HEADROOM 32
/* Callers waiting to be accepted.  Not SOMAXCONN (4096): a user who
 * connects as fast as refusals go keeps the queue full, and root's
 * connect waits behind all of it (about 10 us each). */
#define LISTEN_BACKLOG 256
/* Out of descriptors: the listening socket rests this long. */
#define ACCEPT_PAUSE_MS 100

/* One warning a second at most from one place; the rest are counted. */
struct ratelog {
	int64_t last_ms;
	unsigned dropped;
};

/* Connection memory held by one uid. */
struct ustat {
	uid_t uid;
	unsigned refs; /* its live connections */
	size_t mem;
	uint64_t iter;	/* the loop iteration ... */
	size_t read;	/* ... and the bytes read from the uid in it */
	struct ustat *next;
};

enum tag { T_LISTEN = 1, T_SIGNAL, T_POOL, T_RPOOL, T_SYNC, T_CONN, T_ORIGIN };

struct watch {
	enum tag tag;
};

struct conn {
	struct watch w; /* first: the epoll tag */
	struct hb_daemon *d;
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	char user[64]; /* "" when the uid has no name */
	int named;     /* user is known ("" or not): see conn_named() */
	char peer[32]; /* "pid 123" */
	struct hb_buf in, out;
	size_t in_off;	   /* bytes of in already consumed */
	size_t out_off;	   /* bytes of out already written */
	size_t staged_len; /* bytes of replies staged, not yet in out */
	unsigned nstaged;  /* staged entries pointing here */
	uint32_t events;   /* epoll interest now */
	int64_t last_ms;   /* last activity */
	int64_t frame_ms;  /* when the partial frame buffered began; 0 */
	size_t held;	   /* in.cap + out.cap, as counted in us */
	struct ustat *us;  /* its uid's memory */
	int busy;	   /* a task runs for it */
	int eof;	   /* the peer shut its side */
	int closing;	   /* no more requests; close once flushed */
	int dead;	   /* fd closed; freed when nothing points here */
	struct conn *prev, *next;
};

/* A reply waiting for the commit, or a task waiting to be launched. */
struct staged {
	struct conn *c;
	char *reply; /* framed JSON, malloc'd */
	size_t len;
	int needs_commit;
	int failed;	   /* the commit it needed failed */
	int close_after;   /* a protocol error: close once sent */
	int burst;	   /* a decision for Kubernetes (failpoints) */
	struct task *task; /* instead of a reply */
	struct staged *next;
};

/* TWIN_*: a Kubernetes-origin job's twin MPIJob (origin.c); REMOTE_*: a
 * burst job's remote side (remote_start, remote_poll), on d->rpool. */
enum task_kind {
	TASK_SUBMIT,
	TASK_CANCEL,
	TASK_TWIN_CREATE,
	TASK_TWIN_DELETE,
	TASK_REMOTE_START,
	TASK_REMOTE_POLL,
	TASK_REMOTE_CANCEL, /* cancel and remote_abandon (rcancel_done()) */
	TASK_LOOKUP /* a uid's name (lookup_task()) */
};

/* What a TASK_REMOTE_CANCEL goes on with on the loop. */
enum rstop {
	RSTOP_JOB,	/* cancel of the whole job (op_cancel()) */
	RSTOP_TASK,	/* cancel of one array task (remote_stop()) */
	RSTOP_ABANDON	/* remote_abandon (remote_stop()) */
};

/* What a TASK_REMOTE_* task carries, and what its worker found. */
struct rwork {
	struct hb_backend *be;
	/* &d->cfg: a reload waits until no rwork is in flight */
	const struct hb_config *cfg;
	char rid[48];	  /* the remote id: "<id>" or "<id>-t<N>" */
	int64_t task;	  /* the array task, or -1 */
	int64_t slurm_id; /* START: root's binding, or -1 */
	uid_t uid;	  /* START: the job's user */
	char *jobspec, *name, *user, *account; /* START: as stored */
	uint64_t offset;		       /* POLL */
	size_t max;
	struct hb_remote_status st;
	char *frame; /* POLL: the reply, framed on the worker */
	size_t flen;
	int done; /* POLL: final, and read to the end */
	enum rstop stop; /* CANCEL: what the loop does next */
	char *why;	 /* CANCEL: remote_abandon's reason */
};

struct task {
	struct hb_task t; /* first */
	enum task_kind kind;
	struct hb_daemon *d;
	struct conn *c; /* NULL: a Kubernetes-origin job's task (origin.c) */
	struct task *onext; /* origin tasks waiting for their commit */
	char id[32];
	int64_t slurm_job_id;
	struct hb_submit_req req;
	const char **argv, **env; /* owned copies */
	char *script, *name, *cwd, *user, *admin_comment;
	cJSON *twin;		 /* TWIN_CREATE: the twin */
	char tns[64], tname[64]; /* TWIN_*: its namespace and name */
	int rc;
	struct hb_err err;
	/* what the backend is: copied when launched */
	struct hb_daemon_backend be;
	uid_t actor_uid;
	char actor_user[64], peer[32];
	struct rwork *rw;	      /* TASK_REMOTE_* */
	uid_t luid; /* TASK_LOOKUP: this uid's name (in user, NULL if none) */
	gid_t lgid; /* ... and primary group; script: the request */
	int lconn;  /* ... for the connection (c->named), not a decide */
	struct task *rprev, *rnext; /* d->rtasks */
};

struct pw_entry {
	uid_t uid;
	gid_t gid; /* the primary group */
	int known;
	int64_t at_ms;
	char name[64];
};

struct hb_daemon {
	struct hb_daemon_opts opts;
	char *config_path, *socket_path, *state_path;
	struct hb_config cfg;
	struct hb_store *st;
	struct hb_pool *pool;
	struct hb_pool *rpool;	/* remote jobs' work (TASK_REMOTE_*) */
	struct task *rtasks;	/* ... staged, queued or running */
	unsigned nremote, rlimit; /* how many; at most */
	int reload_wanted;	/* SIGHUP came while rtasks ran */
	struct hb_daemon_backend be;
	struct hb_backend *remote;     /* where burst jobs run */
	struct hb_kube_origin *origin; /* managed MPIJobs (origin.c), or NULL */
	struct hb_origin_ev *origin_wait; /* their events until Slurm is
					   * seen */
	int slurm_seen;  /* a whole Slurm poll has been reconciled */
	int origin_redo; /* origin_wait may go now */
	const char *failpoint; /* $HPCBRIDGE_FAILPOINT (tests) */
	struct hb_decider *dc;	       /* placement (decider.c) */
	struct hb_arena scratch;       /* a decision's cJSON trees */
	int epfd, lfd, sfd;
	struct watch wl, ws, wp, wr, wy, wo;
	struct conn *conns; /* doubly linked */
	unsigned nconns;
	struct conn *graveyard; /* closed, freed at the end of an iteration */
	struct ustat *ustats;	/* per uid with connections */
	size_t users_mem;	/* held by uids other than root, SlurmUser */
	int reserve_fd;		/* /dev/null: a descriptor for EMFILE */
	int accept_paused;	/* the listening socket rests ... */
	int64_t accept_resume_ms; /* ... until then, or a connection closes */
	struct ratelog rl_refused, rl_fds, rl_bad, rl_mem, rl_frame, rl_perm;
	uint64_t iter; /* loop iterations (UID_READ_BUDGET) */
	/* the iteration's batch */
	int txn_open;
	struct staged *staged, **staged_tail;
	/* committed batches waiting for their sync (see sync_kick()) */
	struct hb_pool *syncpool; /* one thread: the syncs */
	int sync_busy;		  /* a sync runs */
	struct staged *waiting, **waiting_tail;
	/* SlurmUser */
	uid_t slurm_uid;
	int slurm_uid_valid;
	int stopping;
	int64_t stop_deadline;
	int64_t last_scan;
	int64_t last_poll; /* the reconciler's last Slurm poll */
	int64_t poll_ok_ms; /* wall clock: the last whole poll began */
	int64_t last_orphan_scan;
	int64_t last_estimate; /* placement's last Slurm estimates */
	int estimating;	       /* estimates are on a worker */
	int measuring;	       /* Kubernetes capacity is on a worker */
	int sizing;	       /* data locations are measured on a worker */
	int64_t last_sizing;
	int64_t last_spend_check; /* loop time the day was last looked at */
	int64_t last_kcap;     /* ... last asked for */
	int kcap_failing;      /* the last capacity read failed */
	int polling;	   /* a poll is on a worker */
	struct hb_store *ckpt_st; /* the checkpoint worker's own handle */
	int ckpt_pages;		  /* a checkpoint goes to a worker ... */
	int ckpt_mark;		  /* ... this many pages after the last */
	int checkpointing;	  /* one is on a worker */
	uint64_t ncheckpoints;	  /* done on a worker */
	struct pw_entry pw[PW_CACHE_SIZE];
	uint64_t nrequests, ndecisions;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ------------------------------------------------------------------ */
/* Users                                                               */
/* ------------------------------------------------------------------ */

/* Remember what NSS said of uid: its name and primary group, or (name
 * NULL) that it has none. */
static void pw_fill(struct hb_daemon *d, uid_t uid, const char *name,
		    gid_t gid)
{
	struct pw_entry *e = &d->pw[uid % PW_CACHE_SIZE];

	e->uid = uid;
	e->at_ms = mono_ms();
	e->known = name && strlen(name) < sizeof(e->name);
	e->gid = gid;
	snprintf(e->name, sizeof(e->name), "%s", e->known ? name : "");
}

/* What the cache says of uid: 0 with name and *gid set (either may be
 * NULL), HB_ENOENT if it has no name, HB_EAGAIN if not (freshly)
 * cached. */
static int pw_cached(const struct hb_daemon *d, uid_t uid, char *name,
		     size_t n, gid_t *gid)
{
	const struct pw_entry *e = &d->pw[uid % PW_CACHE_SIZE];

	if (!e->at_ms || e->uid != uid || mono_ms() - e->at_ms >= PW_CACHE_MS)
		return HB_EAGAIN;
	if (!e->known)
		return HB_ENOENT;
	if (name)
		snprintf(name, n, "%s", e->name);
	if (gid)
		*gid = e->gid;
	return 0;
}

static void resolve_slurm_user(struct hb_daemon *d)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	d->slurm_uid_valid = 0;
	if (getpwnam_r(d->cfg.slurm_user, &pw, buf, sizeof(buf), &res) == 0 &&
	    res) {
		d->slurm_uid = res->pw_uid;
		d->slurm_uid_valid = 1;
		return;
	}
	hb_logf(HB_LOG_WARN,
		(struct hb_log_field[]){
			HB_LOG_STR("user", d->cfg.slurm_user) },
		1, "slurm.user has no passwd entry; only root may decide");
}

/* root or SlurmUser: may decide and act for anyone */
static int uid_is_priv(const struct hb_daemon *d, uid_t uid)
{
	return uid == 0 || (d->slurm_uid_valid && uid == d->slurm_uid);
}

static int is_priv(const struct hb_daemon *d, const struct conn *c)
{
	return uid_is_priv(d, c->uid);
}

/* may see and cancel every job */
static int is_admin(const struct hb_daemon *d, const struct conn *c)
{
	return is_priv(d, c) ||
	       (c->user[0] && hb_list_has(d->cfg.daemon_admins,
					  d->cfg.ndaemon_admins, c->user));
}

static int may_see(const struct hb_daemon *d, const struct conn *c,
		   const struct hb_job_row *j)
{
	return is_admin(d, c) || (j->uid >= 0 && (uid_t)j->uid == c->uid);
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/* Whether to log now: once a second at most; *dropped: how many were
 * not since the last. */
static int rate_ok(struct ratelog *r, unsigned *dropped)
{
	int64_t now = mono_ms();

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
static void conn_release(struct conn *c)
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
static void accept_resume(struct hb_daemon *d)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->wl };

	if (!d->accept_paused || d->lfd < 0)
		return;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->lfd, &ev) == 0)
		d->accept_paused = 0;
}

static void conn_close(struct conn *c, const char *why)
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
	accept_resume(d);
	if (c->prev)
		c->prev->next = c->next;
	else
		d->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	d->nconns--;
	conn_release(c);
}

static size_t out_pending(const struct conn *c)
{
	return c->out.len - c->out_off + c->staged_len;
}

/* Recompute what the loop waits for on c. */
static void conn_interest(struct conn *c)
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

/* Nothing left to do on c: no task, nothing staged or unsent. */
static int conn_idle(const struct conn *c)
{
	return !c->busy && !c->nstaged && c->out.len == c->out_off;
}

/* Write what can be written; close when done and asked to. */
static void conn_flush(struct conn *c)
{
	ssize_t n;

	while (!c->dead && c->out.len > c->out_off) {
		n = send(c->fd, c->out.data + c->out_off,
			 c->out.len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->out_off += (size_t)n;
			c->last_ms = mono_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		conn_close(c, n < 0 ? strerror(errno) : "write failed");
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
		conn_close(c, c->closing ? "after an error reply" : "done");
		return;
	}
	conn_interest(c);
}

/* ------------------------------------------------------------------ */
/* The batch: one transaction, staged replies                          */
/* ------------------------------------------------------------------ */

static int txn(struct hb_daemon *d, struct hb_err *err)
{
	int rc;

	if (d->txn_open)
		return 0;
	rc = hb_store_begin(d->st, err);
	if (rc == 0)
		d->txn_open = 1;
	return rc;
}

/* A write failed in the middle of a request: undo the whole batch, and
 * fail every reply that needed it. */
static void batch_abort(struct hb_daemon *d, const struct hb_err *err)
{
	struct staged *s;

	if (!d->txn_open)
		return;
	hb_store_rollback(d->st);
	d->txn_open = 0;
	for (s = d->staged; s; s = s->next)
		if (s->needs_commit)
			s->failed = 1;
	hb_log(HB_LOG_ERROR, "store write failed, batch rolled back: %s",
	       err && err->msg[0] ? err->msg : "unknown error");
}

static struct staged *stage(struct hb_daemon *d, struct conn *c)
{
	struct staged *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c = c;
	c->nstaged++;
	*d->staged_tail = s;
	d->staged_tail = &s->next;
	return s;
}

/* The reply framed: the header, filled in once the JSON after it is
 * written.  NULL if it does not fit the protocol, or out of memory. */
static char *frame_json(const cJSON *reply, size_t *len)
{
	unsigned char hdr[HB_PROTO_HDR] = { 0 };
	struct hb_buf b;

	hb_buf_init(&b, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	if (hb_buf_append(&b, hdr, sizeof(hdr)) ||
	    hb_doc_write_json_compact(reply, &b) ||
	    hb_proto_header(hdr, HB_PROTO_REPLY, b.len - HB_PROTO_HDR)) {
		hb_buf_free(&b);
		return NULL;
	}
	memcpy(b.data, hdr, sizeof(hdr));
	*len = b.len;
	return hb_buf_steal(&b);
}

/* A framed error reply, or NULL when out of memory. */
static char *frame_error(int code, const char *msg, size_t *len)
{
	cJSON *r = hb_proto_error(code, msg);
	char *f = r ? frame_json(r, len) : NULL;

	cJSON_Delete(r);
	return f;
}

/* Stage the framed reply f of len bytes (taken) for c.  NULL: one that
 * could not be written, too large (too_big) or out of memory, becomes an
 * error reply.  The entry, or NULL when out of memory (c then closes). */
static struct staged *stage_frame(struct hb_daemon *d, struct conn *c,
				  char *f, size_t len, int too_big,
				  int needs_commit, int close_after)
{
	struct staged *s = stage(d, c);

	if (!s) {
		free(f);
		c->closing = 1;
		return NULL;
	}
	if (!f)
		f = frame_error(too_big ? HB_ETOOBIG : HB_ENOMEM,
				too_big ? "the reply would exceed the protocol's "
					  "1 MiB; ask for less (limit)"
					: "out of memory",
				&len);
	s->reply = f;
	s->len = f ? len : 0;
	s->needs_commit = needs_commit;
	s->close_after = close_after || !f;
	c->staged_len += s->len;
	return s;
}

/* Stage reply (taken) for c.  A reply too large for the protocol becomes
 * an ETOOBIG error. */
static void stage_reply(struct hb_daemon *d, struct conn *c, cJSON *reply,
			int needs_commit, int close_after)
{
	size_t len = 0;
	char *f = reply ? frame_json(reply, &len) : NULL;

	cJSON_Delete(reply);
	stage_frame(d, c, f, len, reply != NULL, needs_commit, close_after);
}

/*
 * A reply written with the streaming writer, as frame_json() writes a
 * tree: reply_begin() reserves the frame's header and opens the object
 * with "ok":true (NULL, and b freed, when out of memory); reply_end()
 * closes it, fills in the header and frees e and b.  The framed reply, or
 * NULL (out of memory, or past the protocol's size).
 */
static struct hb_emit *reply_begin(struct hb_buf *b)
{
	unsigned char hdr[HB_PROTO_HDR] = { 0 };
	struct hb_emit *e = NULL;

	hb_buf_init(b, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	if (!hb_buf_reserve(b, 511) && !hb_buf_append(b, hdr, sizeof(hdr)) &&
	    (e = hb_emit_new(HB_EMIT_JSON_COMPACT, b))) {
		hb_emit_obj(e, NULL);
		hb_emit_bool(e, "ok", 1);
	} else {
		hb_buf_free(b);
	}
	return e;
}

static char *reply_end(struct hb_emit *e, struct hb_buf *b, size_t *len)
{
	char *f = NULL;

	if (e && !hb_emit_end(e) && !hb_emit_done(e) &&
	    !hb_proto_header((unsigned char *)b->data, HB_PROTO_REPLY,
			     b->len - HB_PROTO_HDR)) {
		*len = b->len;
		f = hb_buf_steal(b);
	}
	hb_emit_free(e);
	hb_buf_free(b);
	return f;
}

static void stage_error(struct hb_daemon *d, struct conn *c, int code,
			const char *msg, int close_after)
{
	stage_reply(d, c, hb_proto_error(code, msg), 0, close_after);
}

static void process_conn(struct conn *c);
static void task_launch(struct hb_daemon *d, struct task *t);
static void task_free(struct task *t);
static struct task *task_new(struct hb_daemon *d, struct conn *c,
			     enum task_kind kind, const char *id);
static void stage_task(struct hb_daemon *d, struct conn *c, struct task *t,
		       int needs_commit);

/*
 * Checkpoints, off the loop.  Left to SQLite, the commit that takes the
 * WAL past its limit (1,000 pages) also copies them into the database and
 * syncs both files, and the requests of that batch wait for it (the tail
 * of the decision round trip).  Here a worker does it through a handle of its
 * own once the WAL reaches ckpt_pages; the loop's handle still checkpoints
 * inline, but only past CKPT_INLINE_FACTOR times that (the worker cannot
 * finish one while writes keep coming, so the WAL would otherwise only
 * grow; by then most of it is copied already).
 */
#define CKPT_INLINE_FACTOR 8

struct ckpt_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	int rc, left;
	struct hb_err err;
};

static void ckpt_run(struct hb_task *ht)
{
	struct ckpt_task *ct = (struct ckpt_task *)ht;
	struct hb_daemon *d = ct->d;

	/* only one checkpoint task at a time touches ckpt_st; the loop's
	 * handle is only read for the file it has open, which never changes
	 * (a state file moved away is not created again) */
	if (!d->ckpt_st)
		ct->rc = hb_store_reopen(d->st, &d->ckpt_st, &ct->err);
	if (!ct->rc)
		ct->rc = hb_store_checkpoint(d->ckpt_st, &ct->left, &ct->err);
}

static void ckpt_done(struct hb_task *ht)
{
	struct ckpt_task *ct = (struct ckpt_task *)ht;
	struct hb_daemon *d = ct->d;

	d->checkpointing = 0;
	if (ct->rc)
		hb_log(HB_LOG_WARN, "checkpoint: %s", ct->err.msg);
	else
		d->ncheckpoints++;
	free(ct);
}

static void ckpt_maybe(struct hb_daemon *d)
{
	int pages = hb_store_wal_pages(d->st);
	struct ckpt_task *ct;

	if (pages < d->ckpt_mark)
		d->ckpt_mark = 0; /* the WAL started again */
	/* every ckpt_pages new pages, as SQLite would: one more right after
	 * the last would only add syncs */
	if (d->checkpointing || d->stopping || !d->pool ||
	    pages < d->ckpt_mark + d->ckpt_pages)
		return;
	d->ckpt_mark = pages;
	if (!(ct = calloc(1, sizeof(*ct))))
		return; /* the inline checkpoint stays */
	ct->t.run = ckpt_run;
	ct->t.done = ckpt_done;
	ct->d = d;
	d->checkpointing = 1;
	if (hb_pool_submit(d->pool, &ct->t)) {
		d->checkpointing = 0;
		free(ct);
	}
}

/* Test hook: with $HPCBRIDGE_FAILPOINT set to name, the daemon dies here
 * as if killed (crash-recovery tests). */
static void failpoint(const struct hb_daemon *d, const char *name)
{
	if (d->failpoint && !strcmp(d->failpoint, name)) {
		hb_log(HB_LOG_WARN, "failpoint %s: the daemon kills itself",
		       name);
		raise(SIGKILL);
	}
}

/* Deliver a settled list, in order: replies, and tasks launched now
 * that what they need is on disk. */
static void deliver(struct hb_daemon *d, struct staged *list)
{
	struct staged *s;

	while ((s = list)) {
		struct conn *c = s->c;
		int burst = s->burst;

		list = s->next;
		if (burst) /* committed, synced, not told */
			failpoint(d, "burst-committed");
		c->nstaged--;
		c->staged_len -= s->len;
		if (s->task && s->failed) {
			/* the job it was for was never recorded */
			s->task->c = NULL;
			task_free(s->task);
			c->busy = 0;
			s->reply = frame_error(HB_ESTORE,
					       "the state store failed; "
					       "nothing was done",
					       &s->len);
		} else if (s->task) {
			task_launch(d, s->task);
		} else if (s->failed) {
			free(s->reply);
			s->reply =
				frame_error(HB_ESTORE,
					    "the state store failed; nothing "
					    "was recorded",
					    &s->len);
		}
		if (s->reply && !c->dead &&
		    hb_buf_append(&c->out, s->reply, s->len))
			c->closing = 1;
		if (!s->task && !s->reply)
			c->closing = 1; /* out of memory */
		if (s->close_after)
			c->closing = 1;
		free(s->reply);
		free(s);
		if (c->dead) {
			conn_release(c);
			continue;
		}
		conn_flush(c);
		if (burst) /* told: the proxy is on its way, nothing remote */
			failpoint(d, "burst-replied");
		/* a connection held back by its unsent replies goes on */
		if (!c->dead && !c->busy)
			process_conn(c);
	}
}

/*
 * Group commit, with its sync off the loop.  A batch's commit writes the
 * WAL (hb_store_commit_nosync) and its list waits; one sync at a time runs
 * on the sync thread, covering every commit made before it started, and
 * only when it is done is its list delivered.  The loop meanwhile reads,
 * decides and commits the next batch, which the next sync covers.  So no
 * reply and no task goes out before what it depends on is on disk, and
 * the disk's sync time no longer stalls the loop.  A list with nothing
 * committed (a read, an error) still waits if an earlier one does: it may
 * have read what is not yet synced, and replies keep their order.
 *
 * Handing a sync to the thread and back costs two wake-ups (about 0.1 ms
 * on the machines measured), which only pays when other callers have
 * work for the loop meanwhile: a batch of fewer than SYNC_INLINE_MAX
 * replies, with nothing ahead of it, syncs in the loop.
 */
#define SYNC_INLINE_MAX 8
struct sync_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct staged *list; /* delivered once synced */
};

static void sync_kick(struct hb_daemon *d);

/* Nothing committed is waiting for its sync: what the store holds may be
 * shown to anyone (decisions read from it, Kubernetes status patches). */
static int all_synced(const struct hb_daemon *d)
{
	return !d->sync_busy && !d->waiting;
}

/* Before acting on the store outside a reply: make what it holds durable
 * now, rather than wait behind the lists (under load there always is
 * one). */
static void sync_now(struct hb_daemon *d)
{
	if (!all_synced(d))
		hb_store_sync(d->st);
}

static void sync_run(struct hb_task *ht)
{
	struct sync_task *sy = (struct sync_task *)ht;

	hb_store_sync(sy->d->st); /* a failure stops the process */
}

static void sync_done(struct hb_task *ht)
{
	struct sync_task *sy = (struct sync_task *)ht;
	struct hb_daemon *d = sy->d;
	struct staged *list = sy->list;

	free(sy);
	d->sync_busy = 0;
	deliver(d, list);
	sync_kick(d);
}

/* Start a sync for what waits, unless one runs; without the sync thread
 * (it could not start, or the daemon is ending), sync here. */
static void sync_kick(struct hb_daemon *d)
{
	struct sync_task *sy;
	struct staged *list;

	while (!d->sync_busy && d->waiting) {
		list = d->waiting;
		d->waiting = NULL;
		d->waiting_tail = &d->waiting;
		if (d->syncpool && (sy = calloc(1, sizeof(*sy)))) {
			sy->t.run = sync_run;
			sy->t.done = sync_done;
			sy->d = d;
			sy->list = list;
			if (!hb_pool_submit(d->syncpool, &sy->t)) {
				d->sync_busy = 1;
				return;
			}
			free(sy);
		}
		hb_store_sync(d->st);
		deliver(d, list);
	}
}

/* Commit the batch; deliver what it staged once that is on disk. */
static void batch_settle(struct hb_daemon *d)
{
	struct staged *s, *list;
	struct hb_err err = { 0 };
	int wrote = 0, n = 1;

	if (d->txn_open) {
		d->txn_open = 0;
		if (hb_store_commit_nosync(d->st, &err)) {
			hb_log(HB_LOG_ERROR, "store commit failed: %s",
			       err.msg);
			hb_store_rollback(d->st);
			for (s = d->staged; s; s = s->next)
				if (s->needs_commit)
					s->failed = 1;
		} else {
			wrote = 1;
			ckpt_maybe(d);
		}
	}
	list = d->staged;
	d->staged = NULL;
	d->staged_tail = &d->staged;
	for (s = list; s && s->next; s = s->next)
		n++;
	/* Synced here: a write no reply waits for (the reconciler's, a
	 * task's result), and a small batch with nothing unsynced before it */
	if (!list || (all_synced(d) && (!wrote || n < SYNC_INLINE_MAX))) {
		if (wrote)
			hb_store_sync(d->st);
		deliver(d, list);
		return;
	}
	*d->waiting_tail = list;
	d->waiting_tail = &s->next; /* s is the list's last */
	sync_kick(d);
}

/* End of an iteration: settle until nothing more is staged (delivering
 * may let held-back connections take more requests). */
static void batch_end(struct hb_daemon *d)
{
	while (d->staged || d->txn_open)
		batch_settle(d);
}

/* ------------------------------------------------------------------ */
/* Request fields                                                      */
/* ------------------------------------------------------------------ */

struct req_err {
	int code;
	char msg[256];
};

static int rerr(struct req_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rerr(struct req_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e->code)
		return e->code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* An optional string field of at most max bytes; *out NULL if absent or
 * null. */
static int get_str(const cJSON *req, const char *key, size_t max, int required,
		   const char **out, struct req_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return rerr(e, HB_EINVAL, "%s: required", key);
		return 0;
	}
	if (!cJSON_IsString(v))
		return rerr(e, HB_EINVAL, "%s: must be a string", key);
	if (strlen(v->valuestring) > max)
		return rerr(e, HB_EINVAL, "%s: longer than %zu bytes", key,
			    max);
	if (required && !v->valuestring[0])
		return rerr(e, HB_EINVAL, "%s: must not be empty", key);
	*out = v->valuestring;
	return 0;
}

/* An optional integer field in [min, max]; *out = def if absent or null. */
static int get_int(const cJSON *req, const char *key, int64_t min, int64_t max,
		   int64_t def, int required, int64_t *out, struct req_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
	double x;

	*out = def;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return rerr(e, HB_EINVAL, "%s: required", key);
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return rerr(e, HB_EINVAL, "%s: must be an integer", key);
	x = v->valuedouble;
	if (!(x >= (double)min && x <= (double)max) || x != (double)(int64_t)x)
		return rerr(e, HB_EINVAL,
			    "%s: must be an integer from %" PRId64
			    " to %" PRId64,
			    key, min, max);
	*out = (int64_t)x;
	return 0;
}

static int get_bool(const cJSON *req, const char *key, int *out,
		    struct req_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return rerr(e, HB_EINVAL, "%s: must be true or false", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* An optional array of strings; *out NULL if absent. */
static int get_strv(const cJSON *req, const char *key, const cJSON **out,
		    struct req_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key), *c;

	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return rerr(e, HB_EINVAL, "%s: must be a list of strings", key);
	cJSON_ArrayForEach (c, v) {
		if (!cJSON_IsString(c))
			return rerr(e, HB_EINVAL,
				    "%s: must be a list of strings", key);
	}
	*out = v;
	return 0;
}

static int get_obj(const cJSON *req, const char *key, const cJSON **out,
		   struct req_err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return rerr(e, HB_EINVAL, "%s: must be an object", key);
	*out = v;
	return 0;
}

/* j as one line of JSON; caller frees with free().  NULL for NULL, or
 * when out of memory. */
static char *print_or_null(const cJSON *j)
{
	struct hb_buf b;

	hb_buf_init(&b, HB_PROTO_MAX_PAYLOAD);
	if (!j || hb_doc_write_json_compact(j, &b)) {
		hb_buf_free(&b);
		return NULL;
	}
	return hb_buf_steal(&b);
}

/* "2026-01-31T12:00:00.123Z" for wall-clock ms. */
static void fmt_time(int64_t ms, char *buf, size_t n)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	size_t len;

	if (ms < 0)
		s = 0;
	gmtime_r(&s, &tm);
	len = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + len, n - len, ".%03uZ", (unsigned)(ms % 1000) % 1000);
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static void add_int_or_null(cJSON *o, const char *k, int64_t v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, k, (double)v);
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *job_json(const struct hb_job_row *j)
{
	cJSON *o = cJSON_CreateObject();
	char t[40];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "id", j->id);
	add_str_or_null(o, "user", j->user);
	add_int_or_null(o, "uid", j->uid);
	add_str_or_null(o, "origin", j->origin);
	add_str_or_null(o, "state", j->state);
	add_str_or_null(o, "target", j->target);
	add_int_or_null(o, "slurm_job_id", j->slurm_job_id);
	add_str_or_null(o, "name", j->name);
	add_str_or_null(o, "account", j->account);
	add_str_or_null(o, "partition", j->partition);
	add_str_or_null(o, "reason", j->reason);
	add_int_or_null(o, "exit_code", j->exit_code);
	fmt_time(j->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "created", t);
	fmt_time(j->updated_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "updated", t);
	return o;
}

/* Record an audit event for c (inside the batch). */
static int audit(struct hb_daemon *d, uid_t uid, const char *user,
		 const char *peer, const char *action, const char *job_id,
		 const cJSON *detail, struct hb_err *err)
{
	char *text = print_or_null(detail);
	int rc;

	if (detail && !text)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	rc = hb_store_event_add(d->st, (int64_t)uid, user[0] ? user : NULL,
				peer, action, job_id, text, err);
	free(text);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Ops                                                                 */
/* ------------------------------------------------------------------ */

static void op_ping(struct hb_daemon *d, struct conn *c)
{
	cJSON *r = hb_proto_ok();

	if (r) {
		cJSON_AddStringToObject(r, "version", HB_VERSION);
		cJSON_AddNumberToObject(r, "proto", HB_PROTO_VERSION);
		cJSON_AddNumberToObject(r, "decisions",
					(double)d->ndecisions);
		cJSON_AddNumberToObject(r, "checkpoints",
					(double)d->ncheckpoints);
	}
	stage_reply(d, c, r, 0, 0);
}

/* The document e wrote into b, ended, as a malloc'd string; NULL when it
 * failed (out of memory).  Frees e and b. */
static char *emitted(struct hb_emit *e, struct hb_buf *b)
{
	char *s = e && !hb_emit_done(e) ? hb_buf_steal(b) : NULL;

	hb_emit_free(e);
	hb_buf_free(b);
	return s;
}

/* What a job was submitted as, compact JSON: its kind, then the
 * request's script, argv, env, cwd, jobspec and options.  Caller frees;
 * NULL when out of memory. */
static char *job_source(const char *kind, const cJSON *req)
{
	static const char *const keys[] = { "script",  "argv",	  "env", "cwd",
					    "jobspec", "options", NULL };
	struct hb_buf b;
	struct hb_emit *e;

	hb_buf_init(&b, HB_PROTO_MAX_PAYLOAD);
	if ((e = hb_emit_new(HB_EMIT_JSON_COMPACT, &b))) {
		hb_emit_obj(e, NULL);
		hb_emit_str(e, "source", kind);
		for (size_t i = 0; keys[i]; i++) {
			const cJSON *v =
				cJSON_GetObjectItemCaseSensitive(req, keys[i]);

			if (v)
				hb_emit_tree(e, keys[i], v);
		}
		hb_emit_end(e);
	}
	return emitted(e, &b);
}

/*
 * What a decision was made from, as compact JSON: an object that the
 * caller fills between inputs_begin() and inputs_end(), then the engine's
 * document, already written, as its last member ("placement").
 */
static struct hb_emit *inputs_begin(struct hb_buf *b,
				    const struct hb_decider_out *dec)
{
	struct hb_emit *e = NULL;

	hb_buf_init(b, HB_PROTO_MAX_PAYLOAD);
	if (!hb_buf_reserve(b, strlen(dec->doc_json) + 511) &&
	    (e = hb_emit_new(HB_EMIT_JSON_COMPACT, b)))
		hb_emit_obj(e, NULL);
	return e;
}

/* The inputs as a malloc'd string; NULL when out of memory.  Frees e
 * (NULL: inputs_begin() failed) and b. */
static char *inputs_end(struct hb_emit *e, struct hb_buf *b,
			const struct hb_decider_out *dec)
{
	char *s = NULL;

	if (e && !hb_emit_end(e) && !hb_emit_done(e)) {
		/* the closing brace makes way for the last member */
		b->len--;
		if (!hb_buf_puts(b, ",\"placement\":") &&
		    !hb_buf_puts(b, dec->doc_json) && !hb_buf_putc(b, '}'))
			s = hb_buf_steal(b);
	}
	hb_emit_free(e);
	hb_buf_free(b);
	return s;
}

/* A job_submit request's inputs (no script, no environment). */
static char *decision_inputs(const struct hb_decider_job *job, int64_t uid,
			     const cJSON *options,
			     const struct hb_decider_out *dec)
{
	struct hb_buf b;
	struct hb_emit *e = inputs_begin(&b, dec);

	if (e) {
		hb_emit_str(e, "user", job->user);
		hb_emit_num(e, "uid", (double)uid);
		hb_emit_str_or_null(e, "account", job->account);
		hb_emit_str_or_null(e, "partition", job->partition);
		hb_emit_str_or_null(e, "target", job->target);
		if (job->time_limit_min >= 0)
			hb_emit_num(e, "time_limit_min",
				    (double)job->time_limit_min);
		else
			hb_emit_null(e, "time_limit_min");
		if (options)
			hb_emit_tree(e, "options", options);
		hb_emit_str(e, "rule", dec->rule);
	}
	return inputs_end(e, &b, dec);
}

static void lookup_task(struct hb_daemon *d, struct conn *c,
			const cJSON *req, uid_t uid, int lconn);

/* looked_up: the user's name a worker found for the request's uid ("":
 * none), or NULL (see lookup_task()). */
static void decide(struct hb_daemon *d, struct conn *c, const cJSON *req,
		   const char *looked_up)
{
	const char *user, *account, *partition, *name, *target, *script;
	const cJSON *options, *jobspec, *argv, *env;
	struct hb_decider_job job = { 0 };
	struct hb_decider_out dec = { 0 };
	struct hb_job_row row = { 0 };
	struct hb_proxy proxy;
	struct req_err e = { 0 };
	struct hb_err err = { 0 };
	cJSON *detail = NULL;
	struct hb_emit *w;
	struct staged *s;
	struct hb_buf rb;
	size_t flen = 0;
	char *inputs_s = NULL, *src_s = NULL, *f, script_buf[2 * 4096 + 128];
	char cm[96], uname[64];
	const char *tname;
	int64_t uid, tl;
	int rc;

	if (!is_priv(d, c)) {
		unsigned dropped;

		if (rate_ok(&d->rl_perm, &dropped))
			hb_logf(HB_LOG_WARN,
				(struct hb_log_field[]){
					HB_LOG_INT("uid", c->uid),
					HB_LOG_STR("peer", c->peer),
					HB_LOG_INT("not_logged", dropped) },
				3, "decide refused: only root and SlurmUser "
				   "may ask");
		stage_error(d, c, HB_EPERM,
			    "only root and SlurmUser may ask for decisions", 0);
		return;
	}
	/* The plugin sends the uid only, so that slurmctld never waits on
	 * NSS under its locks: the name is looked up here (cached, a miss
	 * on a worker), the uid in decimal for a user without a passwd
	 * entry, as Slurm shows one. */
	get_str(req, "user", HB_STORE_NAME_MAX, 0, &user, &e);
	get_int(req, "uid", 0, 4294967294LL, -1, 1, &uid, &e);
	if (!e.code && (!user || !*user)) {
		rc = looked_up ? (looked_up[0] ? 0 : HB_ENOENT)
			       : pw_cached(d, (uid_t)uid, uname,
					   sizeof(uname), NULL);
		if (rc == HB_EAGAIN) {
			lookup_task(d, c, req, (uid_t)uid, 0);
			return;
		}
		if (looked_up && !rc)
			snprintf(uname, sizeof(uname), "%s", looked_up);
		if (rc)
			snprintf(uname, sizeof(uname), "%" PRId64, uid);
		user = uname;
	}
	get_str(req, "account", HB_STORE_NAME_MAX, 0, &account, &e);
	get_str(req, "partition", HB_STORE_NAME_MAX, 0, &partition, &e);
	get_str(req, "slurm_job_name", HB_STORE_NAME_MAX, 0, &name, &e);
	get_str(req, "target", 32, 0, &target, &e);
	get_int(req, "time_limit_min", INT64_MIN / 2, INT64_MAX / 2,
		HB_RULES_NO_LIMIT, 0, &tl, &e);
	get_obj(req, "options", &options, &e);
	get_obj(req, "jobspec", &jobspec, &e);
	get_str(req, "script", HB_PROTO_MAX_PAYLOAD, 0, &script, &e);
	get_strv(req, "argv", &argv, &e);
	get_strv(req, "env", &env, &e);
	if (!e.code && !hb_rules_target_valid(target)) {
		snprintf(e.msg, sizeof(e.msg),
			 "target: '%.60s' is not auto, slurm or kubernetes",
			 target);
		e.code = HB_EINVAL;
	}
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	job.user = user;
	job.account = account;
	job.partition = partition;
	job.name = name;
	job.target = target;
	job.time_limit_min = hb_rules_time_limit(tl);
	job.jobspec = jobspec;
	job.seq = (uint64_t)hb_remote_now_ms(); /* the pilot's sample key */
	if ((rc = hb_decider_decide(d->dc, &job, job.seq / 1000, &dec,
				    &err))) {
		stage_error(d, c, rc, err.msg, 0);
		return;
	}
	tname = dec.target == HB_DECIDE_KUBE	? "kubernetes"
		: dec.target == HB_DECIDE_SLURM ? "slurm"
						: "rejected";

	inputs_s = decision_inputs(&job, uid, options, &dec);
	src_s = job_source("slurm", req);
	detail = cJSON_CreateObject();
	if (!inputs_s || !src_s || !detail)
		goto nomem;

	if ((rc = txn(d, &err)))
		goto store_fail;
	row.origin = "slurm";
	row.target = tname;
	/* a rejected job never reaches Slurm: it ends here */
	row.state = dec.target == HB_DECIDE_REJECT ? "failed" : "pending";
	row.user = user;
	row.uid = uid;
	row.account = account;
	row.partition = partition;
	row.name = name;
	row.reason = dec.reason;
	row.jobspec = src_s;
	row.slurm_job_id = -1;
	row.exit_code = -1;
	if ((rc = hb_store_job_add(d->st, &row, &err)))
		goto store_fail;
	if ((rc = hb_store_decision_add(d->st, row.id, tname, inputs_s,
					dec.explanation,
					hb_decider_policy_name(d->dc), &err)))
		goto store_fail;
	cJSON_AddStringToObject(detail, "target", tname);
	cJSON_AddStringToObject(detail, "rule", dec.rule);
	cJSON_AddStringToObject(detail, "why", dec.why);
	cJSON_AddStringToObject(detail, "for_user", user);
	if ((rc = audit(d, c->uid, c->user, c->peer, "decide", row.id, detail,
			&err)))
		goto store_fail;

	if (!(w = reply_begin(&rb)))
		goto nomem;
	hb_emit_str(w, "id", row.id);
	hb_emit_str(w, "target", tname);
	hb_emit_str(w, "reason", dec.reason);
	if (dec.target == HB_DECIDE_KUBE) {
		hb_rules_proxy(&d->cfg, job.time_limit_min, &proxy);
		hb_emit_obj(w, "proxy");
		hb_emit_str(w, "partition", proxy.partition);
		if (proxy.time_limit_min != HB_RULES_NO_LIMIT)
			hb_emit_num(w, "time_limit_min",
				    (double)proxy.time_limit_min);
		hb_emit_num(w, "cpus", proxy.cpus);
		hb_emit_num(w, "mem_mb", proxy.mem_mb);
		if (hb_rules_proxy_script(&d->cfg, row.id, script_buf,
					  sizeof(script_buf)))
			script_buf[0] = '\0'; /* cannot happen: both paths
						* fit PATH_MAX */
		hb_emit_str(w, "script", script_buf);
		snprintf(cm, sizeof(cm), "hpcbridge:%s kubernetes", row.id);
		hb_emit_str(w, "comment", cm);
		hb_emit_end(w);
	}
	snprintf(cm, sizeof(cm), "hpcbridge:%s target=%s", row.id, tname);
	hb_emit_str(w, "admin_comment", cm);
	if (!(f = reply_end(w, &rb, &flen)))
		goto nomem;
	d->ndecisions++;
	hb_logf(HB_LOG_DEBUG,
		(struct hb_log_field[]){ HB_LOG_STR("job", row.id),
					 HB_LOG_STR("target", tname),
					 HB_LOG_STR("user", user) },
		3, "decided: %s", dec.reason);
	if ((s = stage_frame(d, c, f, flen, 0, 1, 0)))
		s->burst = dec.target == HB_DECIDE_KUBE;
	goto out;
nomem:
	stage_error(d, c, HB_ENOMEM, "out of memory", 0);
	goto out;
store_fail:
	batch_abort(d, &err);
	stage_error(d, c, rc == HB_EINVAL || rc == HB_ETOOBIG ? rc : HB_ESTORE,
		    err.msg[0] ? err.msg : "the state store failed", 0);
out:
	/* detail is left to op_decide()'s scratch arena: deleting it would
	 * walk its nodes to free nothing */
	hb_decider_out_free(&dec);
	free(inputs_s);
	free(src_s);
}

/*
 * A decision builds and drops a few hundred cJSON nodes (the engine's
 * document, what is stored, the reply); they come from the daemon's
 * scratch arena, reset after each decision, instead of malloc.  Nothing
 * made here outlives it: replies are framed into malloc'd buffers.
 * decide() may abandon its trees: only the reset frees them.
 */
static void op_decide(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	hb_doc_scope_begin(&d->scratch);
	decide(d, c, req, NULL);
	hb_doc_scope_end();
	hb_arena_reset(&d->scratch);
}

/*
 * A name that is not cached, for a decide that names only the uid, or
 * (lconn) for the caller's own uid (conn_named()): a worker asks NSS
 * (which may wait on LDAP or SSSD), and the loop goes on with other
 * callers; c waits (its later requests keep their order), and the
 * request runs again when the name is known (lookup_done()).
 */
static void lookup_task(struct hb_daemon *d, struct conn *c,
			const cJSON *req, uid_t uid, int lconn)
{
	struct task *t = task_new(d, c, TASK_LOOKUP, "");
	/* in the scratch arena inside a decide (cJSON_free leaves it) */
	char *text = cJSON_PrintUnformatted(req);

	if (!t || !text || !(t->script = strdup(text))) {
		cJSON_free(text);
		task_free(t);
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return;
	}
	cJSON_free(text);
	t->luid = uid;
	t->lconn = lconn;
	stage_task(d, c, t, 0);
}

static void dispatch_named(struct hb_daemon *d, struct conn *c,
			   const cJSON *req);

static void lookup_done(struct task *t)
{
	struct conn *c = t->c;
	struct hb_daemon *d = t->d;
	cJSON *req;

	c->busy = 0;
	pw_fill(d, t->luid, t->user, t->lgid);
	if (!c->dead) {
		req = t->script ? cJSON_Parse(t->script) : NULL;
		if (t->lconn) {
			/* a name too long for the cache is no name, as
			 * pw_fill() has it */
			if (pw_cached(d, c->uid, c->user, sizeof(c->user),
				      NULL))
				c->user[0] = '\0';
			c->named = 1;
			if (req)
				dispatch_named(d, c, req);
			else
				stage_error(d, c, HB_ENOMEM, "out of memory",
					    0);
		} else {
			hb_doc_scope_begin(&d->scratch);
			if (req)
				decide(d, c, req, t->user ? t->user : "");
			else
				stage_error(d, c, HB_ENOMEM, "out of memory",
					    0);
			hb_doc_scope_end();
			hb_arena_reset(&d->scratch);
		}
		cJSON_Delete(req);
	}
	task_free(t);
	if (c->dead)
		conn_release(c);
	else if (!c->nstaged) {
		process_conn(c);
		conn_flush(c);
	}
}

struct list_ctx {
	cJSON *arr;
	int rc;
};

static int list_cb(const struct hb_job_row *j, void *arg)
{
	struct list_ctx *l = arg;
	cJSON *o = job_json(j);

	if (!o || !cJSON_AddItemToArray(l->arr, o)) {
		cJSON_Delete(o);
		return l->rc = HB_ENOMEM;
	}
	return 0;
}

static void op_jobs(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	struct req_err e = { 0 };
	struct hb_err err = { 0 };
	struct list_ctx l = { 0 };
	int all, rc;
	int64_t limit;
	cJSON *r;

	get_bool(req, "all", &all, &e);
	get_int(req, "limit", 1, HB_DAEMON_LIST_MAX, HB_DAEMON_LIST_DEFAULT, 0,
		&limit, &e);
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (all && !is_admin(d, c)) {
		stage_error(d, c, HB_EPERM,
			    "only administrators may list every user's jobs",
			    0);
		return;
	}
	r = hb_proto_ok();
	l.arr = r ? cJSON_AddArrayToObject(r, "jobs") : NULL;
	if (!l.arr) {
		cJSON_Delete(r);
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return;
	}
	rc = hb_store_job_list(d->st, all ? -1 : (int64_t)c->uid, NULL,
			       (unsigned)limit, list_cb, &l, &err);
	if (rc) {
		cJSON_Delete(r);
		stage_error(d, c, rc == HB_ENOMEM ? rc : HB_ESTORE,
			    err.msg[0] ? err.msg : hb_strerror(rc), 0);
		return;
	}
	stage_reply(d, c, r, 0, 0);
}

static int event_cb(const struct hb_event_row *ev, void *arg)
{
	cJSON *arr = arg, *o = cJSON_CreateObject(), *detail;
	char t[40];

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return HB_ENOMEM;
	}
	fmt_time(ev->at_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "at", t);
	add_str_or_null(o, "action", ev->action);
	add_str_or_null(o, "actor", ev->actor_user);
	add_int_or_null(o, "actor_uid", ev->actor_uid);
	add_str_or_null(o, "peer", ev->peer);
	detail = ev->detail ? cJSON_Parse(ev->detail) : NULL;
	if (detail)
		cJSON_AddItemToObject(o, "detail", detail);
	return 0;
}

/* Look up a job c may see: 0 with j filled (caller frees), else staged
 * an error (ENOENT for a job c may not see: ids do not leak). */
static int visible_job(struct hb_daemon *d, struct conn *c, const cJSON *req,
		       struct hb_job_row *j)
{
	struct req_err e = { 0 };
	struct hb_err err = { 0 };
	const char *id;
	char msg[128];
	int rc;

	if (get_str(req, "id", 31, 1, &id, &e)) {
		stage_error(d, c, e.code, e.msg, 0);
		return e.code;
	}
	rc = hb_store_job_get(d->st, id, j, &err);
	if (rc == 0 && !may_see(d, c, j)) {
		hb_job_row_free(j);
		rc = HB_ENOENT;
	}
	if (rc == HB_ENOENT) {
		snprintf(msg, sizeof(msg), "no job %s", id);
		stage_error(d, c, HB_ENOENT, msg, 0);
	} else if (rc) {
		stage_error(d, c, HB_ESTORE, err.msg, 0);
	}
	return rc;
}

static void op_status(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	struct hb_job_row j = { 0 };
	struct hb_decision_row dr = { 0 };
	struct hb_err err = { 0 };
	cJSON *r = NULL, *job, *o, *ev;
	char t[40];
	int rc;

	if (visible_job(d, c, req, &j))
		return;
	r = hb_proto_ok();
	job = r ? job_json(&j) : NULL;
	if (!job || !cJSON_AddItemToObject(r, "job", job)) {
		cJSON_Delete(job);
		goto nomem;
	}
	rc = hb_store_decision_get(d->st, j.id, &dr, &err);
	if (rc == 0) {
		o = cJSON_AddObjectToObject(job, "decision");
		if (!o)
			goto nomem;
		fmt_time(dr.at_ms, t, sizeof(t));
		cJSON_AddStringToObject(o, "at", t);
		add_str_or_null(o, "target", dr.target);
		add_str_or_null(o, "explanation", dr.explanation);
		add_str_or_null(o, "policy", dr.policy);
		if (dr.inputs) {
			cJSON *in = cJSON_Parse(dr.inputs);

			if (in)
				cJSON_AddItemToObject(o, "inputs", in);
		}
	} else if (rc == HB_ENOENT) {
		cJSON_AddNullToObject(job, "decision");
	} else {
		goto store;
	}
	ev = cJSON_AddArrayToObject(job, "events");
	if (!ev)
		goto nomem;
	memset(&err, 0, sizeof(err));
	rc = hb_store_event_list(d->st, j.id, 0, 200, event_cb, ev, &err);
	if (rc == HB_ENOMEM)
		goto nomem;
	if (rc)
		goto store;
	stage_reply(d, c, r, 0, 0);
	r = NULL;
	goto out;
nomem:
	stage_error(d, c, HB_ENOMEM, "out of memory", 0);
	goto out;
store:
	stage_error(d, c, HB_ESTORE, err.msg, 0);
out:
	cJSON_Delete(r);
	hb_decision_row_free(&dr);
	hb_job_row_free(&j);
}

/* ---- tasks ------------------------------------------------------- */

static void rwork_free(struct rwork *w)
{
	if (!w)
		return;
	free(w->jobspec);
	free(w->name);
	free(w->user);
	free(w->account);
	free(w->frame);
	free(w->why);
	free(w);
}

static void task_free(struct task *t)
{
	if (!t)
		return;
	if (t->rw) {
		/* off the remote tasks in flight */
		if (t->rprev)
			t->rprev->rnext = t->rnext;
		else
			t->d->rtasks = t->rnext;
		if (t->rnext)
			t->rnext->rprev = t->rprev;
		t->d->nremote--;
		rwork_free(t->rw);
	}
	for (size_t i = 0; t->argv && t->argv[i]; i++)
		free((char *)t->argv[i]);
	for (size_t i = 0; t->env && t->env[i]; i++)
		free((char *)t->env[i]);
	free(t->argv);
	free(t->env);
	free(t->script);
	free(t->name);
	free(t->cwd);
	free(t->user);
	free(t->admin_comment);
	cJSON_Delete(t->twin);
	free(t);
}

/* A NULL-terminated copy of a list of strings (NULL list: empty). */
static const char **strv_dup(const cJSON *arr)
{
	size_t n = arr ? (size_t)cJSON_GetArraySize(arr) : 0, i = 0;
	const char **v = calloc(n + 1, sizeof(*v));
	const cJSON *c;

	if (!v)
		return NULL;
	cJSON_ArrayForEach (c, arr) {
		v[i] = strdup(c->valuestring);
		if (!v[i]) {
			while (i--)
				free((char *)v[i]);
			free(v);
			return NULL;
		}
		i++;
	}
	return v;
}

/* A twin task on a worker: a transient failure (the API server away) is
 * tried again every second, up to TWIN_TRIES times. */
static int twin_run(struct task *t)
{
	int rc = HB_EUNAVAIL;

	for (int i = 0; i < TWIN_TRIES; i++) {
		if (i)
			sleep(1);
		memset(&t->err, 0, sizeof(t->err));
		rc = t->kind == TASK_TWIN_CREATE
			     ? hb_origin_twin_create(t->d->origin, t->twin,
						     &t->err)
			     : hb_origin_twin_delete(t->d->origin, t->tns,
						     t->tname, &t->err);
		if (!hb_kube_retryable(rc))
			break;
	}
	return rc;
}

static int rstart_run(struct task *t);
static int rpoll_run(struct task *t);
static void remote_done(struct task *t);

static void task_run(struct hb_task *ht)
{
	struct task *t = (struct task *)ht;

	if (t->kind == TASK_LOOKUP) {
		struct passwd pw, *res = NULL;
		char buf[4096];

		if (getpwuid_r(t->luid, &pw, buf, sizeof(buf), &res) == 0 &&
		    res) {
			t->user = strdup(res->pw_name);
			t->lgid = res->pw_gid;
		}
		return;
	}
	if (t->kind == TASK_REMOTE_START)
		t->rc = rstart_run(t);
	else if (t->kind == TASK_REMOTE_POLL)
		t->rc = rpoll_run(t);
	else if (t->kind == TASK_REMOTE_CANCEL)
		t->rc = hb_backend_cancel(t->rw->be, t->rw->rid, &t->err);
	else if (t->kind == TASK_SUBMIT)
		t->rc = t->be.slurm_submit(t->be.ctx, &t->req, &t->slurm_job_id,
					   &t->err);
	else if (t->kind == TASK_CANCEL)
		t->rc = t->be.slurm_cancel(t->be.ctx, t->slurm_job_id, &t->err);
	else
		t->rc = twin_run(t);
	if (t->rc && !t->err.msg[0])
		hb_err_set(&t->err, t->rc, NULL, 0, "%s", hb_strerror(t->rc));
}

static void task_done(struct hb_task *ht);
static void lookup_done(struct task *t);

static void task_launch(struct hb_daemon *d, struct task *t)
{
	struct hb_pool *p = t->rw ? d->rpool : d->pool;

	t->be = d->be;
	if (!p || hb_pool_submit(p, &t->t)) {
		/* only after shutdown began: answer now */
		t->rc = HB_EUNAVAIL;
		hb_err_set(&t->err, HB_EUNAVAIL, NULL, 0,
			   "the daemon is stopping");
		task_done(&t->t);
	}
}

/* A task for connection c, or, with c NULL, one the daemon starts itself
 * (for a Kubernetes-origin MPIJob: actor hpcbridged, peer kubernetes). */
static struct task *task_new(struct hb_daemon *d, struct conn *c,
			     enum task_kind kind, const char *id)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->t.run = task_run;
	t->t.done = task_done;
	t->kind = kind;
	t->c = c;
	t->d = d;
	snprintf(t->id, sizeof(t->id), "%s", id);
	t->actor_uid = c ? c->uid : 0;
	snprintf(t->actor_user, sizeof(t->actor_user), "%s",
		 c ? c->user : "hpcbridged");
	snprintf(t->peer, sizeof(t->peer), "%s", c ? c->peer : "kubernetes");
	return t;
}

/* Stage t to be launched after the commit (needs_commit: only if the
 * commit succeeds); c waits for it. */
static void stage_task(struct hb_daemon *d, struct conn *c, struct task *t,
		       int needs_commit)
{
	struct staged *s = stage(d, c);

	if (!s) {
		task_free(t);
		c->closing = 1;
		return;
	}
	s->task = t;
	s->needs_commit = needs_commit;
	c->busy = 1;
}

static int origin_late_submit(struct hb_daemon *d, const struct task *t,
			      struct hb_err *err);
static int twin_done(struct hb_daemon *d, struct task *t, struct hb_err *err);

/* The loop side of a finished task: record, then reply. */
static void task_done(struct hb_task *ht)
{
	struct task *t = (struct task *)ht;
	struct conn *c = t->c;
	struct hb_daemon *d = t->d;
	struct hb_err err = { 0 };
	cJSON *detail = NULL, *r = NULL;
	int rc;

	if (t->rw) {
		remote_done(t);
		return;
	}
	if (t->kind == TASK_LOOKUP) {
		lookup_done(t);
		return;
	}
	if (c)
		c->busy = 0;
	if (!c && !t->rc && t->kind == TASK_SUBMIT) /* origin hooks */
		failpoint(d, "origin-submitted");
	if (!c && !t->rc && t->kind == TASK_TWIN_CREATE)
		failpoint(d, "origin-twin-created");
	detail = cJSON_CreateObject();
	if ((rc = txn(d, &err)))
		goto store_fail;
	if (t->kind == TASK_TWIN_CREATE || t->kind == TASK_TWIN_DELETE) {
		if ((rc = twin_done(d, t, &err)))
			goto store_fail;
		goto out;
	} else if (t->kind == TASK_SUBMIT) {
		if (t->rc == 0) {
			cJSON_AddNumberToObject(detail, "slurm_job_id",
						(double)t->slurm_job_id);
			rc = hb_store_job_set_slurm(d->st, t->id,
						    t->slurm_job_id, &err);
			if (!rc)
				rc = hb_store_job_set_state(
					d->st, t->id, "queued", -1, NULL, &err);
			if (rc == HB_ESTATE && !c) /* origin hook */
				rc = origin_late_submit(d, t, &err);
			if (!rc)
				rc = audit(d, t->actor_uid, t->actor_user,
					   t->peer, "slurm-submit", t->id,
					   detail, &err);
			if (rc)
				goto store_fail;
			r = hb_proto_ok();
			if (r) {
				cJSON_AddStringToObject(r, "id", t->id);
				cJSON_AddStringToObject(r, "target", "slurm");
				cJSON_AddNumberToObject(
					r, "slurm_job_id",
					(double)t->slurm_job_id);
			}
			hb_logf(HB_LOG_INFO,
				(struct hb_log_field[]){
					HB_LOG_STR("job", t->id),
					HB_LOG_INT("slurm_job_id",
						   t->slurm_job_id),
					HB_LOG_STR("user", t->user) },
				3, "submitted to Slurm");
		} else {
			cJSON_AddStringToObject(detail, "error",
						hb_errname(t->rc) ?: "EIO");
			cJSON_AddStringToObject(detail, "message", t->err.msg);
			rc = hb_store_job_set_state(d->st, t->id, "failed", -1,
						    t->err.msg, &err);
			if (!rc)
				rc = audit(d, t->actor_uid, t->actor_user,
					   t->peer, "slurm-submit-failed",
					   t->id, detail, &err);
			if (rc)
				goto store_fail;
			hb_logf(HB_LOG_WARN,
				(struct hb_log_field[]){
					HB_LOG_STR("job", t->id),
					HB_LOG_STR("user", t->user) },
				2, "Slurm refused the job: %s", t->err.msg);
			r = hb_proto_error(t->rc, t->err.msg);
		}
	} else {
		if (t->rc == 0 || t->rc == HB_ENOENT) {
			char why[128];

			snprintf(why, sizeof(why), "cancelled by %s",
				 t->actor_user[0] ? t->actor_user : "uid");
			cJSON_AddNumberToObject(detail, "slurm_job_id",
						(double)t->slurm_job_id);
			rc = hb_store_job_set_state(d->st, t->id, "cancelled",
						    -1, why, &err);
			if (!rc)
				rc = audit(d, t->actor_uid, t->actor_user,
					   t->peer, "cancel", t->id, detail,
					   &err);
			if (rc == HB_ESTATE) {
				/* it ended meanwhile */
				r = hb_proto_error(rc, err.msg);
				rc = 0;
			} else if (rc) {
				goto store_fail;
			} else {
				r = hb_proto_ok();
				if (r)
					cJSON_AddStringToObject(r, "state",
								"cancelled");
			}
		} else {
			r = hb_proto_error(t->rc, t->err.msg);
		}
	}
	hb_origin_job_changed(d->origin, d->st, t->id); /* origin hook */
	if (c && !c->dead)
		stage_reply(d, c, r, 1, 0);
	else
		cJSON_Delete(r);
	r = NULL;
	goto out;
store_fail:
	batch_abort(d, &err);
	if (c && !c->dead)
		stage_error(d, c, HB_ESTORE,
			    err.msg[0] ? err.msg : "the state store failed", 0);
out:
	cJSON_Delete(detail);
	cJSON_Delete(r);
	task_free(t);
	if (!c) {
		/* an origin task: nobody waits for a reply */
	} else if (c->dead) {
		conn_release(c);
	} else if (!c->nstaged) {
		process_conn(c);
		conn_flush(c);
	}
}


/* ------------------------------------------------------------------ */
/* The reconciler: Slurm jobs the plugin tagged, followed from Slurm    */
/* ------------------------------------------------------------------ */

/*
 * Every SLURM_POLL_MS a worker asks Slurm which jobs changed (cheap when
 * nothing did).  For each job tagged "hpcbridge:<id>" the loop binds the
 * Slurm job id to the gateway job and, for jobs that run on Slurm, mirrors
 * the state and exit code.  A burst job's state comes from its remote
 * side; only its proxy's id is bound here.
 */
struct poll_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_daemon_backend be;
	struct hb_slurm_change *v;
	size_t n, cap;
	int64_t began_ms; /* wall clock */
	int rc;
	struct hb_err err;
};

static int poll_collect(const struct hb_slurm_change *ch, void *arg)
{
	struct poll_task *pt = arg;

	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 64;
		struct hb_slurm_change *v = realloc(pt->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		pt->v = v;
		pt->cap = cap;
	}
	pt->v[pt->n++] = *ch;
	return 0;
}

static void poll_run(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;

	pt->began_ms = hb_remote_now_ms();
	pt->rc = pt->be.slurm_poll(pt->be.ctx, poll_collect, pt, &pt->err);
}

/* Apply one change; a store error is returned (the batch is aborted). */
static int reconcile_one(struct hb_daemon *d, const struct hb_slurm_change *ch,
			 struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = NULL;
	int rc = hb_store_job_get(d->st, ch->id, &j, err);

	if (rc == HB_ENOENT) {
		memset(err, 0, sizeof(*err));
		return 0; /* not ours, or from another state file */
	}
	if (rc)
		return rc;
	if ((rc = txn(d, err)))
		goto out;
	if (j.slurm_job_id < 0) {
		rc = hb_store_job_set_slurm(d->st, j.id, ch->slurm_job_id, err);
		if (rc)
			goto out;
	}
	if (strcmp(j.target, "slurm") || hb_store_state_terminal(j.state) ||
	    !strcmp(j.state, ch->state) ||
	    !hb_store_state_allowed(j.state, ch->state))
		goto out;
	rc = hb_store_job_set_state(d->st, j.id, ch->state, ch->exit_code,
				    NULL, err);
	detail = cJSON_CreateObject();
	if (!rc && detail) {
		cJSON_AddNumberToObject(detail, "slurm_job_id",
					(double)ch->slurm_job_id);
		cJSON_AddStringToObject(detail, "from", j.state);
		cJSON_AddStringToObject(detail, "to", ch->state);
		if (ch->exit_code >= 0)
			cJSON_AddNumberToObject(detail, "exit_code",
						(double)ch->exit_code);
		rc = audit(d, 0, "hpcbridged", "slurm", "slurm-state", j.id,
			   detail, err);
	}
	if (!rc) /* origin hook: the MPIJob's status follows */
		hb_origin_job_changed(d->origin, d->st, j.id);
out:
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

static void poll_done(struct hb_task *ht)
{
	struct poll_task *pt = (struct poll_task *)ht;
	struct hb_daemon *d = pt->d;
	struct hb_err err = { 0 };

	d->polling = 0;
	if (pt->rc)
		hb_log(HB_LOG_WARN, "Slurm poll: %s", pt->err.msg);
	for (size_t i = 0; !pt->rc && i < pt->n; i++)
		if ((pt->rc = reconcile_one(d, &pt->v[i], &err))) {
			hb_log(HB_LOG_ERROR, "reconciling %s: %s", pt->v[i].id,
			       err.msg);
			batch_abort(d, &err);
			pt->rc = HB_ESTORE;
			break;
		}
	/* every tagged job Slurm had when the poll began is now bound */
	if (!pt->rc)
		d->poll_ok_ms = pt->began_ms;
	if (!pt->rc && !d->slurm_seen) {
		/* Slurm's whole table is bound: the origin jobs it holds
		 * have their ids, the others may be submitted */
		d->slurm_seen = 1;
		d->origin_redo = 1;
	}
	free(pt->v);
	free(pt);
}

/*
 * Orphans (HB_DAEMON_ORPHAN_MS): jobs still pending and unbound that long
 * after they were decided, though a poll that began since then reported
 * every tagged job, never reached Slurm.  They end "lost", each with an
 * audit event.  Looked for once a minute.
 */
struct orphans {
	int64_t before_ms; /* decided before this */
	char (*ids)[32];
	size_t n, cap;
};

static int orphan_cb(const struct hb_job_row *j, void *arg)
{
	struct orphans *o = arg;

	if (j->slurm_job_id >= 0 || j->created_ms >= o->before_ms ||
	    (strcmp(j->origin, "slurm") && strcmp(j->origin, "cli")))
		return 0;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		char(*v)[32] = realloc(o->ids, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		o->ids = v;
		o->cap = cap;
	}
	snprintf(o->ids[o->n++], sizeof(o->ids[0]), "%s", j->id);
	return 0;
}

static void expire_orphans(struct hb_daemon *d, int64_t now)
{
	static const char *const pending[] = { "pending", NULL };
	int64_t grace = d->opts.orphan_ms > 0 ? d->opts.orphan_ms
					      : HB_DAEMON_ORPHAN_MS;
	struct orphans o = { .before_ms = d->poll_ok_ms - grace };
	struct hb_err err = { 0 };
	char reason[160];
	int rc;

	if (!d->be.slurm_poll || d->poll_ok_ms <= 0 || d->stopping ||
	    now - d->last_orphan_scan < (grace < 60000 ? grace / 2 : 60000))
		return;
	d->last_orphan_scan = now;
	rc = hb_store_job_list(d->st, -1, pending, 0, orphan_cb, &o, &err);
	snprintf(reason, sizeof(reason),
		 "Slurm never queued the job: no job tagged with it %llds "
		 "after the decision",
		 (long long)(grace / 1000));
	for (size_t i = 0; !rc && i < o.n; i++) {
		cJSON *detail = cJSON_CreateObject();

		if (!detail)
			rc = hb_err_set(&err, HB_ENOMEM, NULL, 0,
					"out of memory");
		else if (!(rc = txn(d, &err)) &&
			 !(rc = hb_store_job_set_state(d->st, o.ids[i], "lost",
						       -1, reason, &err))) {
			cJSON_AddStringToObject(detail, "from", "pending");
			cJSON_AddStringToObject(detail, "to", "lost");
			cJSON_AddStringToObject(detail, "reason", reason);
			rc = audit(d, 0, "hpcbridged", "daemon", "lost",
				   o.ids[i], detail, &err);
		}
		cJSON_Delete(detail);
		if (!rc)
			hb_logf(HB_LOG_WARN,
				(struct hb_log_field[]){
					HB_LOG_STR("job", o.ids[i]) },
				1, "lost: %s", reason);
	}
	if (rc) {
		hb_log(HB_LOG_ERROR, "orphaned jobs: %s", err.msg);
		batch_abort(d, &err);
	}
	free(o.ids);
}

static void poll_slurm(struct hb_daemon *d, int64_t now)
{
	struct poll_task *pt;

	if (!d->be.slurm_poll || d->polling || d->stopping || !d->pool ||
	    now - d->last_poll < SLURM_POLL_MS)
		return;
	d->last_poll = now;
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return;
	pt->t.run = poll_run;
	pt->t.done = poll_done;
	pt->d = d;
	pt->be = d->be;
	d->polling = 1;
	if (hb_pool_submit(d->pool, &pt->t)) {
		d->polling = 0;
		free(pt);
	}
}

/*
 * Every placement.refresh_s a worker asks Slurm, for each partition the
 * placement knows, when a probe job would start and how many nodes are
 * idle; the loop folds the answer into the decider's snapshot.
 */
struct estimate_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_daemon_backend be;
	struct hb_decider_part *v;
	size_t n;
	int64_t at; /* Unix seconds the refresh began */
	int rc;
	struct hb_err err;
};

static void estimate_run(struct hb_task *ht)
{
	struct estimate_task *et = (struct estimate_task *)ht;

	et->at = hb_remote_now_ms() / 1000;
	et->rc = et->be.slurm_estimate(et->be.ctx, et->v, et->n, &et->err);
}

static void estimate_done(struct hb_task *ht)
{
	struct estimate_task *et = (struct estimate_task *)ht;
	struct hb_daemon *d = et->d;

	d->estimating = 0;
	if (et->rc)
		hb_log(HB_LOG_WARN, "Slurm estimates: %s", et->err.msg);
	else if (hb_decider_set_slurm(d->dc, et->v, et->n, et->at))
		hb_log(HB_LOG_WARN, "Slurm estimates: out of memory");
	free(et->v);
	free(et);
}

/*
 * Beside it, a worker lists the cluster's nodes and pods through the
 * remote backend and measures its free capacity (kube_capacity.h); the
 * loop writes it into the snapshot.  The task carries its own copy of the
 * GPU settings: a reload may free the configuration meanwhile.
 */
struct kcap_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	struct hb_kcap_opts o;
	struct hb_selector_map *maps;
	struct hb_kv *kvs;
	char *gpu_resource;
	struct hb_kcap cap;
	int rc;
	struct hb_err err;
};

static void kcap_free(struct kcap_task *kt)
{
	for (uint32_t i = 0; i < kt->o.ngpu_types; i++) {
		free((char *)kt->maps[i].key);
		for (uint32_t j = 0; j < kt->maps[i].nlabels; j++) {
			free((char *)kt->maps[i].labels[j].key);
			free((char *)kt->maps[i].labels[j].value);
		}
	}
	free(kt->maps);
	free(kt->kvs);
	free(kt->gpu_resource);
	free(kt);
}

/* kt's copy of the configuration's GPU settings. */
static int kcap_opts(struct kcap_task *kt, const struct hb_config *cfg)
{
	uint32_t n = cfg->k8s.ngpu_type_selectors, nkv = 0;
	const struct hb_selector_map *src = cfg->k8s.gpu_type_selectors;

	for (uint32_t i = 0; i < n; i++)
		nkv += src[i].nlabels;
	kt->maps = n ? calloc(n, sizeof(*kt->maps)) : NULL;
	kt->kvs = nkv ? calloc(nkv, sizeof(*kt->kvs)) : NULL;
	if ((n && !kt->maps) || (nkv && !kt->kvs))
		return HB_ENOMEM;
	kt->o.gpu_types = kt->maps;
	nkv = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct hb_selector_map *m = &kt->maps[i];

		kt->o.ngpu_types = i + 1;
		m->labels = &kt->kvs[nkv];
		if (!(m->key = strdup(src[i].key)))
			return HB_ENOMEM;
		for (uint32_t j = 0; j < src[i].nlabels; j++, nkv++) {
			m->nlabels = j + 1;
			kt->kvs[nkv].key = strdup(src[i].labels[j].key);
			kt->kvs[nkv].value = strdup(src[i].labels[j].value);
			if (!kt->kvs[nkv].key || !kt->kvs[nkv].value)
				return HB_ENOMEM;
		}
	}
	if (cfg->k8s.gpu_resource &&
	    !(kt->gpu_resource = strdup(cfg->k8s.gpu_resource)))
		return HB_ENOMEM;
	kt->o.gpu_resource = kt->gpu_resource;
	return 0;
}

static void kcap_run(struct hb_task *ht)
{
	struct kcap_task *kt = (struct kcap_task *)ht;

	kt->rc = hb_backend_capacity(kt->d->remote, &kt->o, &kt->cap,
				     &kt->err);
}

static void kcap_done(struct hb_task *ht)
{
	struct kcap_task *kt = (struct kcap_task *)ht;
	struct hb_daemon *d = kt->d;

	d->measuring = 0;
	if (kt->rc) {
		/* One warning while it keeps failing; the last values stay. */
		if (!d->kcap_failing)
			hb_log(HB_LOG_WARN,
			       "Kubernetes capacity: %s (the last values stay)",
			       kt->err.msg);
		d->kcap_failing = 1;
	} else if (hb_decider_set_kube(d->dc, &kt->cap)) {
		hb_log(HB_LOG_WARN, "Kubernetes capacity: out of memory");
	} else {
		if (d->kcap_failing)
			hb_log(HB_LOG_INFO, "Kubernetes capacity: read again");
		d->kcap_failing = 0;
		hb_logf(HB_LOG_DEBUG,
			(struct hb_log_field[]){
				HB_LOG_INT("nodes", kt->cap.nodes),
				HB_LOG_INT("millicpus", kt->cap.free_millicpus),
				HB_LOG_INT("pending", kt->cap.pending) },
			3, "Kubernetes capacity");
	}
	kcap_free(kt);
}

/* Whether a refresh last made at last (0: never) is due again, every
 * interval_s seconds. */
static int refresh_due(int64_t last, int64_t now, uint32_t interval_s)
{
	return !last || now - last >= (int64_t)interval_s * 1000;
}

static void refresh_capacity(struct hb_daemon *d, int64_t now)
{
	struct kcap_task *kt;

	if (d->measuring || !d->remote || !d->remote->ops->capacity ||
	    !refresh_due(d->last_kcap, now, d->cfg.placement_refresh_s))
		return;
	d->last_kcap = now;
	if (!(kt = calloc(1, sizeof(*kt))))
		return;
	kt->t.run = kcap_run;
	kt->t.done = kcap_done;
	kt->d = d;
	if (kcap_opts(kt, &d->cfg)) {
		kcap_free(kt);
		return;
	}
	d->measuring = 1;
	if (hb_pool_submit(d->pool, &kt->t)) {
		d->measuring = 0;
		kcap_free(kt);
	}
}

/*
 * The policy's data locations on a file system that give no size are
 * measured on a worker every placement.data_refresh_s (hb_path_size); a
 * location that cannot be measured (missing, unreadable, too many files,
 * too slow) keeps its last size, or none, and the engine says its size is
 * unknown.  The task owns copies of the paths: a reload may free them.
 */
#define DATA_MAX_ENTRIES (10u * 1000 * 1000)
#define DATA_TIMEOUT_MS	 (5 * 60 * 1000)

struct size_task {
	struct hb_task t; /* first */
	struct hb_daemon *d;
	size_t n;
	char **paths;
	uint64_t *bytes;
	int *rc;
	struct hb_err *err;
};

static void size_free(struct size_task *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->paths[i]);
	free(st->paths);
	free(st->bytes);
	free(st->rc);
	free(st->err);
	free(st);
}

static void size_run(struct hb_task *ht)
{
	struct size_task *st = (struct size_task *)ht;

	for (size_t i = 0; i < st->n; i++)
		st->rc[i] = hb_path_size(st->paths[i], DATA_MAX_ENTRIES,
					 DATA_TIMEOUT_MS, &st->bytes[i],
					 &st->err[i]);
}

static void size_done(struct hb_task *ht)
{
	struct size_task *st = (struct size_task *)ht;

	st->d->sizing = 0;
	for (size_t i = 0; i < st->n; i++) {
		if (st->rc[i])
			hb_log(HB_LOG_WARN, "data size: %s", st->err[i].msg);
		else if (hb_decider_set_data(st->d->dc, st->paths[i],
					     st->bytes[i]))
			hb_log(HB_LOG_WARN, "data size: out of memory");
	}
	size_free(st);
}

static void refresh_data(struct hb_daemon *d, int64_t now)
{
	const char **paths;
	size_t n = hb_decider_data_paths(d->dc, &paths);
	struct size_task *st;

	if (!n || d->sizing || !d->cfg.placement_data_refresh_s ||
	    !refresh_due(d->last_sizing, now, d->cfg.placement_data_refresh_s))
		return;
	d->last_sizing = now;
	if (!(st = calloc(1, sizeof(*st))))
		return;
	st->paths = calloc(n, sizeof(*st->paths));
	st->bytes = calloc(n, sizeof(*st->bytes));
	st->rc = calloc(n, sizeof(*st->rc));
	st->err = calloc(n, sizeof(*st->err));
	if (!st->paths || !st->bytes || !st->rc || !st->err) {
		size_free(st);
		return;
	}
	for (; st->n < n; st->n++)
		if (!(st->paths[st->n] = strdup(paths[st->n]))) {
			size_free(st);
			return;
		}
	st->t.run = size_run;
	st->t.done = size_done;
	st->d = d;
	d->sizing = 1;
	if (hb_pool_submit(d->pool, &st->t)) {
		d->sizing = 0;
		size_free(st);
	}
}

static void refresh_estimates(struct hb_daemon *d, int64_t now)
{
	const char *const *names;
	struct estimate_task *et;
	size_t n;

	if (d->stopping || !d->pool)
		return;
	refresh_capacity(d, now);
	refresh_data(d, now);
	if (!d->be.slurm_estimate || d->estimating ||
	    !refresh_due(d->last_estimate, now, d->cfg.placement_refresh_s))
		return;
	d->last_estimate = now;
	n = hb_decider_partitions(d->dc, &names);
	if (!n || !(et = calloc(1, sizeof(*et))))
		return;
	if (!(et->v = calloc(n, sizeof(*et->v)))) {
		free(et);
		return;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(et->v[i].name, sizeof(et->v[i].name), "%s", names[i]);
	et->n = n;
	et->t.run = estimate_run;
	et->t.done = estimate_done;
	et->d = d;
	et->be = d->be;
	d->estimating = 1;
	if (hb_pool_submit(d->pool, &et->t)) {
		d->estimating = 0;
		free(et->v);
		free(et);
	}
}

static void op_submit(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	const char *script, *name, *cwd;
	const cJSON *argv, *env;
	struct req_err e = { 0 };
	struct hb_err err = { 0 };
	struct hb_job_row row = { 0 };
	cJSON *detail = NULL;
	char *src_s = NULL, cm[96];
	struct task *t = NULL;
	int rc;

	get_str(req, "script", HB_PROTO_MAX_PAYLOAD, 1, &script, &e);
	get_str(req, "name", HB_STORE_NAME_MAX, 0, &name, &e);
	get_str(req, "cwd", 4096, 0, &cwd, &e);
	get_strv(req, "argv", &argv, &e);
	get_strv(req, "env", &env, &e);
	if (!e.code && cwd && cwd[0] != '/')
		rerr(&e, HB_EINVAL, "cwd: must be an absolute path");
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (!d->be.slurm_submit) {
		stage_error(d, c, HB_EUNSUP,
			    "this daemon has no Slurm client to submit with",
			    0);
		return;
	}
	src_s = job_source("cli", req);
	detail = cJSON_CreateObject();
	if (!src_s || !detail)
		goto nomem;
	if ((rc = txn(d, &err)))
		goto store_fail;
	row.origin = "cli";
	row.target = "slurm";
	row.state = "pending";
	row.user = c->user;
	row.uid = c->uid;
	row.name = name;
	row.reason = "submitted with hpcbridge submit";
	row.jobspec = src_s;
	row.slurm_job_id = -1;
	row.exit_code = -1;
	if ((rc = hb_store_job_add(d->st, &row, &err)))
		goto store_fail;
	if ((rc = hb_store_decision_add(d->st, row.id, "slurm", NULL,
					"submitted with hpcbridge submit",
					"submit", &err)))
		goto store_fail;
	add_str_or_null(detail, "name", name);
	if ((rc = audit(d, c->uid, c->user, c->peer, "submit", row.id, detail,
			&err)))
		goto store_fail;

	t = task_new(d, c, TASK_SUBMIT, row.id);
	if (!t)
		goto nomem;
	snprintf(cm, sizeof(cm), "hpcbridge:%s target=slurm", row.id);
	t->script = xstrdup(script);
	t->name = xstrdup(name);
	t->cwd = xstrdup(cwd);
	t->user = xstrdup(c->user);
	t->admin_comment = xstrdup(cm);
	t->argv = strv_dup(argv);
	t->env = strv_dup(env);
	if (!t->script || (name && !t->name) || (cwd && !t->cwd) || !t->user ||
	    !t->admin_comment || !t->argv || !t->env)
		goto nomem;
	t->req.id = t->id;
	t->req.script = t->script;
	t->req.name = t->name;
	t->req.cwd = t->cwd;
	t->req.user = t->user;
	t->req.uid = c->uid;
	t->req.gid = c->gid;
	t->req.argv = t->argv;
	t->req.env = t->env;
	t->req.admin_comment = t->admin_comment;
	stage_task(d, c, t, 1);
	t = NULL;
	goto out;
nomem:
	/* the job row may be in the batch: undo it with everything else
	 * rather than leave a job nobody will submit */
	err.code = HB_ENOMEM;
	snprintf(err.msg, sizeof(err.msg), "out of memory");
	batch_abort(d, &err);
	stage_error(d, c, HB_ENOMEM, "out of memory", 0);
	goto out;
store_fail:
	batch_abort(d, &err);
	stage_error(d, c, rc == HB_EINVAL || rc == HB_ETOOBIG ? rc : HB_ESTORE,
		    err.msg[0] ? err.msg : "the state store failed", 0);
out:
	task_free(t);
	cJSON_Delete(detail);
	free(src_s);
}

/*
 * A store call of this batch failed with rc (err says why): a state move
 * the store refused (HB_ESTATE) or a Slurm id already taken (HB_EEXIST) is
 * the request's error; anything else aborts the batch.
 */
static void store_failed(struct hb_daemon *d, struct conn *c, int rc,
			 struct hb_err *err)
{
	if (rc == HB_ESTATE || rc == HB_EEXIST) {
		stage_error(d, c, rc, err->msg, 0);
		return;
	}
	batch_abort(d, err);
	stage_error(d, c, HB_ESTORE, err->msg, 0);
}

static void remote_stop(struct hb_daemon *d, struct conn *c,
			const cJSON *req, int abandon);
static struct task *remote_task(struct hb_daemon *d, struct conn *c,
				enum task_kind kind,
				const struct hb_job_row *j, const char *rid,
				int64_t task);
static void cancel_rest(struct hb_daemon *d, struct conn *c,
			const struct hb_job_row *j);

static void op_cancel(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(req, "array_task");
	struct hb_job_row j = { 0 };
	struct task *t;

	if (task && !cJSON_IsNull(task)) {
		remote_stop(d, c, req, 0);
		return;
	}
	if (visible_job(d, c, req, &j))
		return;
	if (!strcmp(j.target, "kubernetes") &&
	    !hb_store_state_terminal(j.state)) {
		/* The remote side first, on a worker (the local backend
		 * writes, syncs and forks): SIGTERM now, SIGKILL after the
		 * grace period (the next look at it sends it).  The rest
		 * goes on in rcancel_done(). */
		t = remote_task(d, c, TASK_REMOTE_CANCEL, &j, j.id, -1);
		if (t) {
			t->rw->stop = RSTOP_JOB;
			stage_task(d, c, t, 0);
		}
		hb_job_row_free(&j);
		return;
	}
	cancel_rest(d, c, &j);
	hb_job_row_free(&j);
}

/* op_cancel() once the remote side, if any, is cancelled: the Slurm
 * job, or only the record. */
static void cancel_rest(struct hb_daemon *d, struct conn *c,
			const struct hb_job_row *j)
{
	struct hb_err err = { 0 };
	cJSON *r, *detail = NULL;
	char msg[160];
	struct task *t;
	int rc;

	if (hb_store_state_terminal(j->state)) {
		if (!strcmp(j->state, "cancelled")) {
			r = hb_proto_ok();
			if (r)
				cJSON_AddStringToObject(r, "state",
							"cancelled");
			stage_reply(d, c, r, 0, 0);
		} else {
			snprintf(msg, sizeof(msg),
				 "job %s has already ended (%s)", j->id,
				 j->state);
			stage_error(d, c, HB_ESTATE, msg, 0);
		}
		goto out;
	}
	if (j->slurm_job_id >= 0) {
		if (!d->be.slurm_cancel) {
			snprintf(msg, sizeof(msg),
				 "job %s is Slurm job %" PRId64
				 ", and this daemon has no Slurm client to "
				 "cancel it with",
				 j->id, j->slurm_job_id);
			stage_error(d, c, HB_EUNAVAIL, msg, 0);
			goto out;
		}
		t = task_new(d, c, TASK_CANCEL, j->id);
		if (!t) {
			stage_error(d, c, HB_ENOMEM, "out of memory", 0);
			goto out;
		}
		t->slurm_job_id = j->slurm_job_id;
		/* nothing to commit first: launched at the end of the
		 * iteration all the same, to keep the replies in order */
		stage_task(d, c, t, 0);
		goto out;
	}
	/* no Slurm job (yet): only the record changes */
	detail = cJSON_CreateObject();
	snprintf(msg, sizeof(msg), "cancelled by %s",
		 c->user[0] ? c->user : "uid");
	if (!detail) {
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	cJSON_AddStringToObject(detail, "from", j->state);
	if ((rc = txn(d, &err)) ||
	    (rc = hb_store_job_set_state(d->st, j->id, "cancelled", -1, msg,
					 &err)) ||
	    (rc = audit(d, c->uid, c->user, c->peer, "cancel", j->id, detail,
			&err))) {
		store_failed(d, c, rc, &err);
		goto out;
	}
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("job", j->id),
					 HB_LOG_STR("by", c->user) },
		2, "job cancelled");
	r = hb_proto_ok();
	if (r)
		cJSON_AddStringToObject(r, "state", "cancelled");
	stage_reply(d, c, r, 1, 0);
out:
	cJSON_Delete(detail);
}


/* ------------------------------------------------------------------ */
/* Remote jobs: what the shadow (a burst job's proxy) asks             */
/* ------------------------------------------------------------------ */

/* The store state for a final remote phase. */
static const char *remote_state(enum hb_remote_phase p)
{
	switch (p) {
	case HB_REMOTE_SUCCEEDED:
		return "succeeded";
	case HB_REMOTE_FAILED:
		return "failed";
	case HB_REMOTE_CANCELLED:
		return "cancelled";
	case HB_REMOTE_LOST:
		return "lost";
	default:
		return "running";
	}
}

/* A job that runs remotely, visible to the caller; 0 or an error staged. */
static int remote_job(struct hb_daemon *d, struct conn *c, const cJSON *req,
		      struct hb_job_row *j)
{
	char msg[128];

	if (visible_job(d, c, req, j))
		return -1;
	if (strcmp(j->target, "kubernetes")) {
		snprintf(msg, sizeof(msg), "job %s runs on %s, not remotely",
			 j->id, j->target);
		stage_error(d, c, HB_ESTATE, msg, 0);
		hb_job_row_free(j);
		return -1;
	}
	return 0;
}

/* Record a state change of j (and its audit event) in this iteration's
 * batch; 0, or an error staged. */
static int remote_record(struct hb_daemon *d, struct conn *c,
			 const struct hb_job_row *j, const char *state,
			 int64_t exit_code, int64_t slurm_job_id,
			 const char *action)
{
	struct hb_err err = { 0 };
	cJSON *detail = cJSON_CreateObject();
	int rc;

	if (!detail) {
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return HB_ENOMEM;
	}
	cJSON_AddStringToObject(detail, "from", j->state);
	cJSON_AddStringToObject(detail, "to", state);
	if (exit_code >= 0)
		cJSON_AddNumberToObject(detail, "exit_code", (double)exit_code);
	if ((rc = txn(d, &err)) ||
	    (slurm_job_id > 0 && j->slurm_job_id < 0 &&
	     (rc = hb_store_job_set_slurm(d->st, j->id, slurm_job_id,
					  &err))) ||
	    (strcmp(j->state, state) &&
	     (rc = hb_store_job_set_state(d->st, j->id, state, exit_code,
					  NULL, &err))) ||
	    (rc = audit(d, c->uid, c->user, c->peer, action, j->id, detail,
			&err))) {
		store_failed(d, c, rc, &err);
	}
	cJSON_Delete(detail);
	return rc;
}


/*
 * The remote job's id: the gateway id, or "<id>-t<N>" for task N of an
 * array (each array task's proxy runs its own remote job).  0, or an
 * error staged.
 */
static int remote_id(struct hb_daemon *d, struct conn *c, const cJSON *req,
		     const struct hb_job_row *j, char out[48], int64_t *task)
{
	struct req_err e = { 0 };

	get_int(req, "array_task", 0, 4000000, -1, 0, task, &e);
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return e.code;
	}
	/* ids are at most 31 characters, tasks at most 7 digits */
	if (snprintf(out, 48, *task >= 0 ? "%s-t%lld" : "%s", j->id,
		     (long long)*task) >= 48) {
		stage_error(d, c, HB_ERANGE, "array_task: id too long", 0);
		return HB_ERANGE;
	}
	return 0;
}

/*
 * Stop a burst job's remote side only; its Slurm jobs are left alone.
 *
 * - cancel {id, array_task}: one task of an array, from that task's
 *   shadow (scancel of the task).  The other tasks and the gateway job go
 *   on (it ends with its tasks).
 * - remote_abandon {id, [array_task], reason}: the shadow is ending its
 *   proxy failed (it cannot write the job's output, or lost the daemon):
 *   the remote job must not run on with nothing to follow it.  The
 *   gateway job (not an array's) is marked failed with the reason.
 *
 * A remote job that is already gone answers ok all the same.  The
 * backend's cancel runs on a worker; stop_rest() goes on.
 */
static void remote_stop(struct hb_daemon *d, struct conn *c,
			const cJSON *req, int abandon)
{
	struct hb_job_row j = { 0 };
	struct req_err e = { 0 };
	const char *why = NULL;
	struct task *t;
	char rid[48];
	int64_t task;

	if (abandon)
		get_str(req, "reason", 1024, 1, &why, &e);
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (remote_job(d, c, req, &j))
		return;
	if (remote_id(d, c, req, &j, rid, &task))
		goto out;
	if (!(t = remote_task(d, c, TASK_REMOTE_CANCEL, &j, rid, task)))
		goto out;
	t->rw->stop = abandon ? RSTOP_ABANDON : RSTOP_TASK;
	if (why && !(t->rw->why = strdup(why))) {
		task_free(t);
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	stage_task(d, c, t, 0);
out:
	hb_job_row_free(&j);
}

/* remote_stop() once the backend's cancel said rc (0 or HB_ENOENT) for
 * rid, task of j: the record, the audit event, the reply. */
static void stop_rest(struct hb_daemon *d, struct conn *c,
		      const struct hb_job_row *j, const char *rid,
		      int64_t task, const char *why, int abandon, int rc)
{
	struct hb_err err = { 0 };
	const char *state;
	cJSON *r, *detail = NULL;

	detail = cJSON_CreateObject();
	if (!detail ||
	    (task >= 0 &&
	     !cJSON_AddNumberToObject(detail, "array_task", (double)task)) ||
	    !cJSON_AddStringToObject(detail, "remote",
				     rc ? "not found" : "cancelled") ||
	    (why && !cJSON_AddStringToObject(detail, "reason", why))) {
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	state = abandon && task < 0 && !hb_store_state_terminal(j->state)
			? "failed"
			: j->state;
	memset(&err, 0, sizeof(err));
	if ((rc = txn(d, &err)) ||
	    (strcmp(state, j->state) &&
	     (rc = hb_store_job_set_state(d->st, j->id, state, -1, why,
					  &err))) ||
	    (rc = audit(d, c->uid, c->user, c->peer,
			abandon ? "remote-abandon" : "cancel-task", j->id,
			detail, &err))) {
		store_failed(d, c, rc, &err);
		goto out;
	}
	hb_logf(abandon ? HB_LOG_WARN : HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("job", j->id),
					 HB_LOG_STR("remote", rid),
					 HB_LOG_STR("by", c->user),
					 HB_LOG_STR("reason", why ? why : "") },
		4,
		abandon ? "proxy failed: remote job stopped"
			: "array task cancelled");
	r = hb_proto_ok();
	if (r)
		cJSON_AddStringToObject(r, "state", state);
	stage_reply(d, c, r, 1, 0);
out:
	cJSON_Delete(detail);
}

/*
 * A remote job's work runs on its own workers (d->rpool), never on the
 * loop: remote_start parses the stored source (a script of up to 4 MiB),
 * checks the array task against the job's array, and has the backend
 * build the manifest or start the process; remote_poll reads the output
 * and encodes it; cancel and remote_abandon have the backend cancel (the
 * local backend writes and syncs a mark and forks a child that signals
 * as the user).  The loop looks the job up and checks who asks before,
 * and records what happened after (remote_done).  Their own workers, so
 * that a flood of them never delays Slurm's submits and polls.
 *
 * The queue is bounded: at most d->rlimit tasks staged, queued or
 * running; a uid other than root and SlurmUser at most a quarter of
 * them, and all such uids together at most three quarters, so root's and
 * SlurmUser's requests always find room.  Past that the request is
 * answered EUNAVAIL ("busy, try again"), which the shadow retries.
 */

/* Why a remote task for c may not be queued now; NULL if it may. */
static const char *remote_busy(const struct hb_daemon *d,
			       const struct conn *c)
{
	unsigned mine = 0, users = 0, share = d->rlimit / 4;

	if (d->reload_wanted)
		return "the daemon is reloading its configuration; try again";
	if (d->nremote >= d->rlimit)
		return "busy: too many remote jobs' requests in flight; try "
		       "again";
	if (uid_is_priv(d, c->uid))
		return NULL;
	for (const struct task *t = d->rtasks; t; t = t->rnext) {
		mine += t->actor_uid == c->uid;
		users += !uid_is_priv(d, t->actor_uid);
	}
	if (mine >= (share ? share : 1))
		return "busy: too many remote jobs' requests from your uid in "
		       "flight; try again";
	if (users >= d->rlimit - share)
		return "busy: the rest is kept for root and SlurmUser; try "
		       "again";
	return NULL;
}

/* A remote task for c on job j, staged (launched at the end of the
 * iteration); NULL with an error staged. */
static struct task *remote_task(struct hb_daemon *d, struct conn *c,
				enum task_kind kind,
				const struct hb_job_row *j, const char *rid,
				int64_t task)
{
	const char *why = remote_busy(d, c);
	struct task *t;

	if (why) {
		stage_error(d, c, HB_EUNAVAIL, why, 0);
		return NULL;
	}
	t = task_new(d, c, kind, j->id);
	if (!t || !(t->rw = calloc(1, sizeof(*t->rw)))) {
		task_free(t);
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return NULL;
	}
	t->rnext = d->rtasks;
	if (d->rtasks)
		d->rtasks->rprev = t;
	d->rtasks = t;
	d->nremote++;
	t->rw->be = d->remote;
	t->rw->cfg = &d->cfg;
	t->rw->task = task;
	t->rw->slurm_id = -1;
	snprintf(t->rw->rid, sizeof(t->rw->rid), "%s", rid);
	return t;
}

/* The script, environment and directory the job was submitted with. */
struct source {
	cJSON *doc;
	const char *script, *cwd;
	const char **env; /* NULL-terminated, borrowed from doc */
};

static int source_of(const char *jobspec, struct source *s)
{
	const cJSON *e, *v;
	size_t n = 0;

	memset(s, 0, sizeof(*s));
	s->doc = jobspec ? cJSON_Parse(jobspec) : NULL;
	v = cJSON_GetObjectItemCaseSensitive(s->doc, "script");
	if (!cJSON_IsString(v))
		return HB_EINVAL;
	s->script = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(s->doc, "cwd");
	if (cJSON_IsString(v) && v->valuestring[0] == '/')
		s->cwd = v->valuestring;
	e = cJSON_GetObjectItemCaseSensitive(s->doc, "env");
	/* room for HPCBRIDGE_JOB_ID, SLURM_ARRAY_TASK_ID and the NULL */
	s->env = calloc((size_t)cJSON_GetArraySize(e) + 3, sizeof(*s->env));
	if (!s->env)
		return HB_ENOMEM;
	cJSON_ArrayForEach (v, e)
		if (cJSON_IsString(v) && strchr(v->valuestring, '='))
			s->env[n++] = v->valuestring;
	return 0;
}

static void source_free(struct source *s)
{
	cJSON_Delete(s->doc);
	free(s->env);
}

/*
 * On a worker: whether array task t->rw->task is in the job's array as
 * Slurm read it: the jobspec the plugin sent (Slurm's array_inx); without
 * one, the script's #SBATCH --array or the SBATCH_ARRAY it was submitted
 * with.  A job without an array has no task.  0, or EINVAL in t->err.
 */
static int array_check(struct task *t, const struct source *s)
{
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(s->doc, "jobspec");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(js, "array"), "spec");
	struct hb_sbatch_opts o = { .envp = s->env };
	struct hb_jobspec spec;
	struct hb_err perr = { 0 };
	const char *arr = cJSON_IsString(a) ? a->valuestring : NULL;
	int rc = 0;

	hb_jobspec_init(&spec, "script");
	if (!arr && hb_sbatch_parse(s->script, strlen(s->script), "script",
				    &o, &spec, &perr) == 0)
		arr = spec.array;
	if (!arr || !*arr)
		rc = hb_err_set(&t->err, HB_EINVAL, NULL, 0,
				"array_task: job %s is not an array job",
				t->id);
	else if (!hb_sbatch_array_has(arr, (uint32_t)t->rw->task))
		rc = hb_err_set(&t->err, HB_EINVAL, NULL, 0,
				"array_task: %lld is not in job %s's array "
				"(%.60s)",
				(long long)t->rw->task, t->id, arr);
	hb_jobspec_free(&spec);
	return rc;
}

/* On a worker: the primary group of uid (the uid itself if none). */
static gid_t user_gid(uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		return res->pw_gid;
	return (gid_t)uid;
}

/* On a worker: remote_start's work. */
static int rstart_run(struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_remote_job rj = { 0 };
	struct hb_err err = { 0 };
	struct source src;
	char idvar[64], taskvar[48];
	int rc;

	if ((rc = source_of(w->jobspec, &src))) {
		source_free(&src);
		return hb_err_set(&t->err, rc == HB_ENOMEM ? rc : HB_ESTATE,
				  NULL, 0, "%s",
				  rc == HB_ENOMEM ? "out of memory"
						  : "the job's script was not "
						    "kept");
	}
	if (w->task >= 0 && (rc = array_check(t, &src)))
		goto out;
	snprintf(idvar, sizeof(idvar), "HPCBRIDGE_JOB_ID=%s", t->id);
	snprintf(taskvar, sizeof(taskvar), "SLURM_ARRAY_TASK_ID=%lld",
		 (long long)w->task);
	for (size_t i = 0;; i++)
		if (!src.env[i]) {
			src.env[i] = idvar;
			src.env[i + 1] = w->task >= 0 ? taskvar : NULL;
			break;
		}
	rj.id = w->rid;
	rj.script = src.script;
	rj.script_len = strlen(src.script);
	rj.uid = w->uid;
	rj.gid = user_gid(w->uid);
	rj.workdir = src.cwd;
	rj.env = src.env;
	rj.name = w->name;
	rj.user = w->user;
	rj.account = w->account;
	rj.array_task = w->task;
	rj.cfg = w->cfg;
	rc = hb_backend_start(w->be, &rj, &err);
	if (!rc)
		rc = hb_backend_status(w->be, w->rid, &w->st, &err);
	if (rc)
		hb_err_set(&t->err, rc, NULL, 0, "cannot start %s: %s", t->id,
			   err.msg[0] ? err.msg : hb_strerror(rc));
out:
	source_free(&src);
	return rc;
}

/* On a worker: remote_poll's work, down to the framed reply. */
static int rpoll_run(struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_buf data, b64;
	cJSON *r = NULL;
	int rc;

	hb_buf_init(&data, w->max + 1);
	hb_buf_init(&b64, 0);
	if ((rc = hb_backend_status(w->be, w->rid, &w->st, &t->err)) ||
	    (rc = hb_backend_log(w->be, w->rid, w->offset, w->max, &data,
				 &t->err)))
		goto out;
	/* Final, and this read did not stop at the cap: nothing more. */
	w->done = hb_remote_phase_done(w->st.phase) && data.len < w->max;
	if ((rc = hb_buf_base64(&b64, data.data ? data.data : "",
				data.len))) {
		hb_err_set(&t->err, rc, NULL, 0, "output too large");
		goto out;
	}
	r = hb_proto_ok();
	if (r && (!cJSON_AddStringToObject(r, "phase",
					   hb_remote_phase_name(w->st.phase)) ||
		  !cJSON_AddNumberToObject(r, "exit_code", w->st.exit_code) ||
		  (w->st.message[0] &&
		   !cJSON_AddStringToObject(r, "message", w->st.message)) ||
		  !cJSON_AddStringToObject(r, "data",
					   b64.data ? b64.data : "") ||
		  !cJSON_AddNumberToObject(r, "next",
					   (double)(w->offset + data.len)) ||
		  !cJSON_AddBoolToObject(r, "done", w->done))) {
		cJSON_Delete(r);
		r = NULL;
	}
	/* NULL: out of memory, or too big (stage_frame says which) */
	w->frame = r ? frame_json(r, &w->flen) : NULL;
	if (!w->frame)
		w->flen = r != NULL;
out:
	cJSON_Delete(r);
	hb_buf_free(&data);
	hb_buf_free(&b64);
	return rc;
}

/* The loop side of a finished remote_start. */
static void rstart_done(struct hb_daemon *d, struct conn *c, struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };
	int final = hb_remote_phase_done(w->st.phase) && w->task < 0;
	int rc;
	cJSON *r;

	if (t->rc) {
		stage_error(d, c, t->rc, t->err.msg, 0);
		return;
	}
	/* the job as it is now: it may have moved while the worker ran */
	if ((rc = hb_store_job_get(d->st, t->id, &j, &err))) {
		stage_error(d, c, HB_ESTORE, err.msg, 0);
		return;
	}
	/* An array's tasks share the gateway job: it is running while any
	 * runs; their ends are audited, not recorded as the job's end. */
	if (remote_record(d, c, &j,
			  final ? remote_state(w->st.phase)
			  : hb_store_state_terminal(j.state) ? j.state
							     : "running",
			  final ? w->st.exit_code : -1,
			  w->task < 0 ? w->slurm_id : -1, "remote_start"))
		goto out;
	r = hb_proto_ok();
	if (r)
		cJSON_AddStringToObject(r, "phase",
					hb_remote_phase_name(w->st.phase));
	stage_reply(d, c, r, 1, 0);
out:
	hb_job_row_free(&j);
}

/* The loop side of a finished remote_poll. */
static void rpoll_done(struct hb_daemon *d, struct conn *c, struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };
	const char *to = remote_state(w->st.phase);
	int recorded = 0;

	if (t->rc) {
		stage_error(d, c, t->rc, t->err.msg, 0);
		return;
	}
	if (w->done && w->task < 0) {
		if (hb_store_job_get(d->st, t->id, &j, &err)) {
			stage_error(d, c, HB_ESTORE, err.msg, 0);
			return;
		}
		if (strcmp(j.state, to) && !hb_store_state_terminal(j.state)) {
			if (remote_record(d, c, &j, to, w->st.exit_code, -1,
					  "remote_end"))
				goto out;
			recorded = 1;
		}
	}
	stage_frame(d, c, w->frame, w->frame ? w->flen : 0,
		    !w->frame && w->flen, recorded, 0);
	w->frame = NULL;
out:
	hb_job_row_free(&j);
}

/* The loop side of a finished cancel or remote_abandon: what op_cancel()
 * or remote_stop() did after the backend's cancel, on the job as it is
 * now (it may have moved while the worker ran). */
static void rcancel_done(struct hb_daemon *d, struct conn *c, struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };

	if (t->rc && t->rc != HB_ENOENT) {
		stage_error(d, c, t->rc, t->err.msg, 0);
		return;
	}
	if (hb_store_job_get(d->st, t->id, &j, &err)) {
		stage_error(d, c, HB_ESTORE, err.msg, 0);
		return;
	}
	if (w->stop == RSTOP_JOB)
		cancel_rest(d, c, &j);
	else
		stop_rest(d, c, &j, w->rid, w->task, w->why,
			  w->stop == RSTOP_ABANDON, t->rc);
	hb_job_row_free(&j);
}

/* The loop side of a finished remote task: record, reply, go on. */
static void remote_done(struct task *t)
{
	struct conn *c = t->c;
	struct hb_daemon *d = t->d;

	c->busy = 0;
	/* recorded even when the caller has gone: the remote job runs (or
	 * was cancelled) */
	if (t->kind == TASK_REMOTE_START)
		rstart_done(d, c, t);
	else if (t->kind == TASK_REMOTE_POLL)
		rpoll_done(d, c, t);
	else
		rcancel_done(d, c, t);
	task_free(t);
	if (c->dead)
		conn_release(c);
	else if (!c->nstaged) {
		process_conn(c);
		conn_flush(c);
	}
}

static void op_remote_start(struct hb_daemon *d, struct conn *c,
			    const cJSON *req)
{
	struct hb_job_row j = { 0 };
	struct req_err e = { 0 };
	char rid[48];
	const char *sid = NULL;
	int64_t slurm_id = -1, task;
	struct task *t;
	struct rwork *w;
	cJSON *r;

	get_str(req, "slurm_job_id", 16, 0, &sid, &e);
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (sid) {
		char *end;

		errno = 0;
		slurm_id = strtoll(sid, &end, 10);
		if (errno || *end || end == sid || slurm_id <= 0) {
			stage_error(d, c, HB_EINVAL,
				    "slurm_job_id: not a Slurm job id", 0);
			return;
		}
	}
	/* Only root and SlurmUser bind a Slurm job here: a `cancel` acts on
	 * the bound job with the daemon's own rights, and a user naming
	 * someone else's job would have it cancelled.  The shadow runs as
	 * the job's user; its proxy is bound by the reconciler, from the tag
	 * only the plugin can write (admin_comment). */
	if (!is_priv(d, c))
		slurm_id = -1;
	if (remote_job(d, c, req, &j))
		return;
	if (remote_id(d, c, req, &j, rid, &task))
		goto out;
	if (task < 0 && hb_store_state_terminal(j.state)) {
		r = hb_proto_ok();
		if (r)
			cJSON_AddStringToObject(r, "phase", j.state);
		stage_reply(d, c, r, 0, 0);
		goto out;
	}
	if (!j.jobspec) {
		stage_error(d, c, HB_ESTATE, "the job's script was not kept",
			    0);
		goto out;
	}
	if (!(t = remote_task(d, c, TASK_REMOTE_START, &j, rid, task)))
		goto out;
	w = t->rw;
	w->slurm_id = slurm_id;
	w->uid = (uid_t)j.uid;
	w->jobspec = strdup(j.jobspec);
	w->name = xstrdup(j.name);
	w->user = xstrdup(j.user);
	w->account = xstrdup(j.account);
	if (!w->jobspec || (j.name && !w->name) || (j.user && !w->user) ||
	    (j.account && !w->account)) {
		task_free(t);
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	stage_task(d, c, t, 0);
out:
	hb_job_row_free(&j);
}

static void op_remote_poll(struct hb_daemon *d, struct conn *c,
			   const cJSON *req)
{
	struct hb_job_row j = { 0 };
	struct req_err e = { 0 };
	int64_t offset, max, task;
	char rid[48];
	struct task *t;

	get_int(req, "offset", 0, INT64_MAX / 2, 0, 0, &offset, &e);
	get_int(req, "max", 1, REMOTE_CHUNK_MAX, REMOTE_CHUNK_MAX, 0, &max,
		&e);
	if (e.code) {
		stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (remote_job(d, c, req, &j))
		return;
	if (remote_id(d, c, req, &j, rid, &task))
		goto out;
	if (!(t = remote_task(d, c, TASK_REMOTE_POLL, &j, rid, task)))
		goto out;
	t->rw->offset = (uint64_t)offset;
	t->rw->max = (size_t)max;
	stage_task(d, c, t, 0);
out:
	hb_job_row_free(&j);
}

/* The placement policy in force and the snapshot decisions are made
 * from, for "hpcbridge explain" without --state.  What accounts have
 * spent is for administrators only. */
static void op_placement(struct hb_daemon *d, struct conn *c)
{
	cJSON *r = hb_proto_ok(), *state;

	state = r ? hb_decider_state(d->dc, hb_remote_now_ms() / 1000) : NULL;
	if (!state || !cJSON_AddItemToObject(r, "state", state)) {
		cJSON_Delete(state);
		cJSON_Delete(r);
		stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return;
	}
	if (!is_admin(d, c))
		cJSON_DeleteItemFromObjectCaseSensitive(state, "spend");
	cJSON_AddStringToObject(r, "policy", hb_decider_policy_name(d->dc));
	cJSON_AddStringToObject(r, "policy_text",
				hb_decider_policy_text(d->dc));
	stage_reply(d, c, r, 0, 0);
}

/*
 * Whether c's user name is known; if not, and not cached either, a
 * worker looks it up and req runs when it is done (lookup_done()): the
 * loop never waits on NSS for a new caller.  take_conn() names a
 * caller whose uid is cached; a ping needs no name.
 */
static int conn_named(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	int rc;

	if (c->named)
		return 1;
	rc = pw_cached(d, c->uid, c->user, sizeof(c->user), NULL);
	if (rc == HB_EAGAIN) {
		lookup_task(d, c, req, c->uid, 1);
		return 0;
	}
	if (rc)
		c->user[0] = '\0';
	c->named = 1;
	return 1;
}

static void dispatch(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	const char *op =
		cJSON_GetObjectItemCaseSensitive(req, "op")->valuestring;

	d->nrequests++;
	if (!strcmp(op, "ping"))
		op_ping(d, c);
	else if (conn_named(d, c, req))
		dispatch_named(d, c, req);
}

/* A request other than ping, from a caller whose name is known. */
static void dispatch_named(struct hb_daemon *d, struct conn *c,
			   const cJSON *req)
{
	const char *op =
		cJSON_GetObjectItemCaseSensitive(req, "op")->valuestring;
	char msg[128];

	if (!c->user[0]) {
		unsigned dropped;

		if (rate_ok(&d->rl_perm, &dropped))
			hb_logf(HB_LOG_WARN,
				(struct hb_log_field[]){
					HB_LOG_INT("uid", c->uid),
					HB_LOG_STR("op", op),
					HB_LOG_INT("not_logged", dropped) },
				3, "request from a uid with no user name "
				   "refused");
		stage_error(d, c, HB_EPERM, "your uid has no user name", 0);
		return;
	}
	if (!strcmp(op, "decide"))
		op_decide(d, c, req);
	else if (!strcmp(op, "submit"))
		op_submit(d, c, req);
	else if (!strcmp(op, "jobs"))
		op_jobs(d, c, req);
	else if (!strcmp(op, "status"))
		op_status(d, c, req);
	else if (!strcmp(op, "cancel"))
		op_cancel(d, c, req);
	else if (!strcmp(op, "remote_start"))
		op_remote_start(d, c, req);
	else if (!strcmp(op, "remote_poll"))
		op_remote_poll(d, c, req);
	else if (!strcmp(op, "remote_abandon"))
		remote_stop(d, c, req, 1);
	else if (!strcmp(op, "placement"))
		op_placement(d, c);
	else {
		snprintf(msg, sizeof(msg), "unknown op '%.60s'", op);
		stage_error(d, c, HB_EUNSUP, msg, 0);
	}
}

/* ------------------------------------------------------------------ */
/* Reading and framing                                                 */
/* ------------------------------------------------------------------ */

/* Take every whole request buffered on c, in order, until one needs a
 * task, an error closes it, or its replies pile up. */
static void process_conn(struct conn *c)
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
			if (rate_ok(&d->rl_bad, &dropped))
				hb_logf(HB_LOG_WARN,
					(struct hb_log_field[]){
						HB_LOG_INT("uid", c->uid),
						HB_LOG_STR("peer", c->peer),
						HB_LOG_INT("not_logged",
							   dropped) },
					3, "bad request, closing: %s", err.msg);
			stage_error(d, c, rc, err.msg, 1);
			c->closing = 1;
			break;
		}
		c->in_off += flen;
		dispatch(d, c, req);
		cJSON_Delete(req);
	}
	/* a partial frame left after whole ones began about now */
	if (c->in_off != off0)
		c->frame_ms = mono_ms();
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
	conn_interest(c);
}

/* Close c now, telling it why if tell (best effort); the warning
 * rate-limited by rl. */
static void conn_kill(struct conn *c, const char *why, struct ratelog *rl,
		      int tell)
{
	unsigned dropped;
	size_t len;
	char *f = tell ? frame_error(HB_EUNAVAIL, why, &len) : NULL;

	if (rate_ok(rl, &dropped))
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){
				HB_LOG_INT("uid", c->uid),
				HB_LOG_STR("peer", c->peer),
				HB_LOG_INT("not_logged", dropped) },
			3, "connection closed: %s", why);
	if (f && send(c->fd, f, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		hb_log(HB_LOG_DEBUG, "could not tell a closed caller why");
	free(f);
	conn_close(c, why);
}

static void conn_read(struct conn *c)
{
	char buf[READ_CHUNK];
	size_t room = c->in.max - c->in.len;
	struct ustat *u = c->us;
	ssize_t n;

	if (room == 0) {
		conn_interest(c);
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
		conn_close(c, strerror(errno));
		return;
	}
	if (n == 0) {
		c->eof = 1;
		process_conn(c);
		if (conn_idle(c))
			conn_close(c, "the peer closed");
		else
			conn_interest(c);
		return;
	}
	c->last_ms = mono_ms();
	if (u)
		u->read += (size_t)n;
	if (!c->frame_ms)
		c->frame_ms = c->last_ms;
	if (hb_buf_append(&c->in, buf, (size_t)n)) {
		conn_close(c, "out of memory");
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
	process_conn(c);
}

static void conn_event(struct conn *c, uint32_t ev)
{
	if (c->dead)
		return;
	if (ev & EPOLLIN)
		conn_read(c);
	if (!c->dead && (ev & EPOLLOUT))
		conn_flush(c);
	if (!c->dead && (ev & (EPOLLERR | EPOLLHUP)) && !(ev & EPOLLIN)) {
		/* the peer is gone; a task's result has nobody to go to */
		conn_close(c, "hang-up");
	}
}

static void refuse(int fd, const char *msg)
{
	size_t len;
	char *f = frame_error(HB_EUNAVAIL, msg, &len);

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
	rc = pw_cached(d, cr->uid, c->user, sizeof(c->user), NULL);
	c->named = rc != HB_EAGAIN;
	if (rc)
		c->user[0] = '\0';
	/* one largest frame and the start of the next */
	hb_buf_init(&c->in, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD + READ_CHUNK);
	hb_buf_init(&c->out, 0);
	c->last_ms = mono_ms();
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

	if (rate_ok(&d->rl_fds, &dropped))
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
		d->accept_resume_ms = mono_ms() + ACCEPT_PAUSE_MS;
	}
}

/* Callers taken per wake-up: one who connects as fast as the daemon
 * refuses would otherwise keep the loop here for good. */
#define ACCEPT_BATCH 32

static void do_accept(struct hb_daemon *d)
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
				 rate_ok(&d->rl_fds, &dropped))
				hb_log(HB_LOG_WARN, "accept: %s",
				       strerror(errno));
			return;
		}
		if (peer_cred(fd, &cr))
			continue;
		if ((why = conn_refused(d, cr.uid))) {
			if (rate_ok(&d->rl_refused, &dropped))
				hb_logf(HB_LOG_WARN,
					(struct hb_log_field[]){
						HB_LOG_INT("uid", cr.uid),
						HB_LOG_INT("connections",
							   d->nconns),
						HB_LOG_INT("not_logged",
							   dropped) },
					3, "connection refused: %s", why);
			refuse(fd, why);
			continue;
		}
		take_conn(d, fd, &cr);
	}
}

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
	resolve_slurm_user(d);
}

/* Budgets: what each account has spent this period, loaded again from
 * the store when a day begins (looked at once a second, at loop time
 * mono), or at once when forced. */
static void refresh_spend(struct hb_daemon *d, int64_t mono, int force)
{
	struct hb_err err = { 0 };
	int64_t now;

	if (!force && !refresh_due(d->last_spend_check, mono, 1))
		return;
	d->last_spend_check = mono;
	now = hb_remote_now_ms() / 1000;
	if ((force || hb_decider_spend_stale(d->dc, now)) &&
	    hb_decider_load_spend(d->dc, d->st, now, &err))
		hb_log(HB_LOG_WARN, "budgets: %s", err.msg);
}

static void reload(struct hb_daemon *d)
{
	struct hb_err err = { 0 };
	struct hb_config next = { 0 };
	struct hb_buf b;
	int parsed = 0, rc;

	if (!d->config_path) {
		hb_log(HB_LOG_INFO, "SIGHUP: no configuration file to re-read");
		return;
	}
	hb_buf_init(&b, HB_CONFIG_FILE_MAX);
	rc = hb_file_read(d->config_path, HB_CONFIG_FILE_MAX, NULL, &b, &err);
	if (!rc)
		rc = hb_config_parse(b.data ? b.data : "", b.len,
				     d->config_path, &next, &err);
	hb_buf_free(&b);
	if (!rc) {
		parsed = 1;
		apply_overrides(d, &next);
		rc = hb_config_check_reload(&d->cfg, &next, &err);
	}
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
		return;
	}
	hb_config_free(&d->cfg);
	d->cfg = next;
	apply_config(d);
	refresh_spend(d, mono_ms(), 1); /* the budget periods may differ */
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("config", d->config_path) },
		1, "configuration reloaded");
}

/* ------------------------------------------------------------------ */
/* Socket                                                              */
/* ------------------------------------------------------------------ */

/* mkdir -p the parent of path, new directories with mode. */
/* The backend burst jobs run on, as remote.backend says. */
static int remote_new(struct hb_daemon *d, struct hb_err *err)
{
	struct hb_backend_kube_opts ko = { 0 };

	if (strcmp(d->cfg.remote_backend, "kubernetes"))
		return hb_backend_local_new(d->cfg.remote_local_dir,
					    REMOTE_GRACE_MS, &d->remote, err);
	ko.kubeconfig = d->cfg.remote_kubeconfig;
	ko.context = d->cfg.remote_context;
	ko.ns = d->cfg.k8s.namespace;
	ko.workers = d->cfg.daemon_workers;
	return hb_backend_kube_new(&ko, &d->remote, err);
}

/* ------------------------------------------------------------------ */
/* Kubernetes-origin MPIJobs (origin.c): stored and submitted here      */
/* ------------------------------------------------------------------ */

/*
 * An MPIJob with managedBy hpcbridge.io/gateway is placed by the decider
 * like any job: on Slurm it runs as the user its hpcbridge.io/user label
 * names, once hb_origin_prepare has found that user granted to its
 * namespace (origin.namespaces, origin.min_uid: refused otherwise, the
 * reason in its status); in the cluster as a twin MPIJob without
 * managedBy.  Its events
 * reach the loop through the module's eventfd; the job is stored (origin
 * kubernetes, its namespace, name and uid, its decision) and committed
 * before its submit or twin task starts, so a restart finds it by uid and
 * never runs it twice.  Its status follows through hb_origin_job_changed()
 * (task_done, reconcile_one) or, for a twin, is copied from the twin's.
 */
/* A managed MPIJob's submit ended after its MPIJob was deleted (the row
 * is cancelled already): cancel the Slurm job it got. */
static int origin_late_submit(struct hb_daemon *d, const struct task *t,
			      struct hb_err *err)
{
	struct task *c = task_new(d, NULL, TASK_CANCEL, t->id);

	memset(err, 0, sizeof(*err));
	if (!c)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	snprintf(c->actor_user, sizeof(c->actor_user),
		 "kubernetes (MPIJob deleted)");
	c->slurm_job_id = t->slurm_job_id;
	task_launch(d, c);
	return 0;
}

/* A task deleting job id's twin ns/name. */
static struct task *twin_delete_task(struct hb_daemon *d, const char *id,
				     const char *ns, const char *name)
{
	struct task *t = task_new(d, NULL, TASK_TWIN_DELETE, id);

	if (t) {
		snprintf(t->tns, sizeof(t->tns), "%s", ns);
		snprintf(t->tname, sizeof(t->tname), "%s", name);
	}
	return t;
}

/* A twin task ended (in the batch's transaction).  Created or adopted:
 * the job is queued, and follows the twin's events from now on; but if
 * it was cancelled meanwhile (its MPIJob went), the twin goes too.
 * Refused: the job fails with the server's word; the API server still
 * away after the task's tries: it is tried again (a stopping daemon
 * leaves the job pending, for the next start).  Deleted: recorded. */
static int twin_done(struct hb_daemon *d, struct task *t, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = cJSON_CreateObject();
	char why[sizeof(t->err.msg) + 32];
	struct task *del;
	int rc;

	if (!detail)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	cJSON_AddStringToObject(detail, "namespace", t->tns);
	cJSON_AddStringToObject(detail, "twin", t->tname);
	if (t->rc)
		cJSON_AddStringToObject(detail, "error", t->err.msg);
	if (t->kind == TASK_TWIN_DELETE) {
		if (t->rc)
			hb_log(HB_LOG_ERROR,
			       "%s: deleting twin MPIJob %s/%s: %s", t->id,
			       t->tns, t->tname, t->err.msg);
		rc = audit(d, 0, "hpcbridged", "kubernetes",
			   t->rc ? "twin-delete-failed" : "twin-delete", t->id,
			   detail, err);
		goto out;
	}
	if ((rc = hb_store_job_get(d->st, t->id, &j, err)))
		goto out;
	if (!t->rc && !strcmp(j.state, "cancelled")) {
		/* the MPIJob was deleted while its twin was being made (a
		 * twin that ended before its adoption returned stays) */
		if (!(del = twin_delete_task(d, t->id, t->tns, t->tname))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		task_launch(d, del);
		goto out;
	}
	if (!t->rc) {
		if (!strcmp(j.state, "pending"))
			rc = hb_store_job_set_state(d->st, t->id, "queued", -1,
						    NULL, err);
		if (!rc)
			rc = audit(d, 0, "hpcbridged", "kubernetes",
				   "twin-create", t->id, detail, err);
		hb_log(HB_LOG_INFO, "%s: twin MPIJob %s/%s created", t->id,
		       t->tns, t->tname);
		goto out;
	}
	hb_log(HB_LOG_ERROR, "%s: twin MPIJob %s/%s: %s", t->id, t->tns,
	       t->tname, t->err.msg);
	if (hb_kube_retryable(t->rc)) {
		struct task *again;

		if (d->stopping || strcmp(j.state, "pending"))
			goto out;
		if (!(again = task_new(d, NULL, TASK_TWIN_CREATE, t->id))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		again->twin = t->twin;
		t->twin = NULL;
		snprintf(again->tns, sizeof(again->tns), "%s", t->tns);
		snprintf(again->tname, sizeof(again->tname), "%s", t->tname);
		task_launch(d, again);
		goto out;
	}
	snprintf(why, sizeof(why), "TwinCreateFailed: %s", t->err.msg);
	rc = hb_store_job_set_state(d->st, t->id, "failed", -1, why, err);
	if (!rc)
		rc = audit(d, 0, "hpcbridged", "kubernetes",
			   "twin-create-failed", t->id, detail, err);
	if (!rc)
		hb_origin_job_changed(d->origin, d->st, t->id);
out:
	if (rc == HB_ESTATE) { /* it ended meanwhile */
		memset(err, 0, sizeof(*err));
		rc = 0;
	}
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* The Slurm submit of a managed MPIJob (stored as job id), as its user. */
static int origin_submit_task(struct hb_daemon *d, const char *id,
			      const char *name, const struct hb_origin_job *oj,
			      struct task **tasks, struct hb_err *err)
{
	char cm[96], home_env[600], user_env[80], logn_env[80];
	struct task *t = task_new(d, NULL, TASK_SUBMIT, id);

	if (!t)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	snprintf(cm, sizeof(cm), "hpcbridge:%s target=slurm", id);
	snprintf(home_env, sizeof(home_env), "HOME=%s", oj->home);
	snprintf(user_env, sizeof(user_env), "USER=%s", oj->user);
	snprintf(logn_env, sizeof(logn_env), "LOGNAME=%s", oj->user);
	t->script = xstrdup(oj->script.data);
	t->name = xstrdup(name);
	t->cwd = xstrdup(oj->home);
	t->user = xstrdup(oj->user);
	t->admin_comment = xstrdup(cm);
	t->argv = calloc(1, sizeof(*t->argv));
	t->env = calloc(5, sizeof(*t->env));
	if (t->env) {
		t->env[0] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
		t->env[1] = xstrdup(home_env);
		t->env[2] = xstrdup(user_env);
		t->env[3] = xstrdup(logn_env);
	}
	if (!t->script || !t->name || !t->cwd || !t->user ||
	    !t->admin_comment || !t->argv || !t->env || !t->env[0] ||
	    !t->env[1] || !t->env[2] || !t->env[3]) {
		task_free(t);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	t->req.id = t->id;
	t->req.script = t->script;
	t->req.name = t->name;
	t->req.cwd = t->cwd;
	t->req.user = t->user;
	t->req.uid = oj->uid;
	t->req.gid = oj->gid;
	t->req.argv = t->argv;
	t->req.env = t->env;
	t->req.admin_comment = t->admin_comment;
	t->onext = *tasks;
	*tasks = t;
	return 0;
}

/* The creation of job id's twin (doc taken, whatever happens). */
static int origin_twin_task(struct hb_daemon *d, const char *id, cJSON *doc,
			    const char *ns, const char *name,
			    struct task **tasks, struct hb_err *err)
{
	struct task *t = task_new(d, NULL, TASK_TWIN_CREATE, id);

	if (!t) {
		cJSON_Delete(doc);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	t->twin = doc;
	snprintf(t->tns, sizeof(t->tns), "%s", ns);
	snprintf(t->tname, sizeof(t->tname), "%s", name);
	t->onext = *tasks;
	*tasks = t;
	return 0;
}

/* Where a managed MPIJob that can run goes: the placement engine decides,
 * as for every job.  *inputs gets what the decision was made from. */
static int origin_place(struct hb_daemon *d, const struct hb_origin_ev *ev,
			const struct hb_origin_job *oj,
			struct hb_decider_out *dec, char **inputs,
			struct hb_err *err)
{
	struct hb_decider_job job = { 0 };
	struct hb_buf b;
	struct hb_emit *e;
	int rc;

	job.user = oj->user;
	job.account = oj->account[0] ? oj->account : NULL;
	job.name = ev->name;
	job.time_limit_min = HB_RULES_NO_LIMIT;
	job.jobspec = oj->jobspec;
	job.seq = (uint64_t)hb_remote_now_ms(); /* the pilot's sample key */
	if ((rc = hb_decider_decide(d->dc, &job, (int64_t)(job.seq / 1000),
				    dec, err)))
		return rc;
	if ((e = inputs_begin(&b, dec))) {
		hb_emit_str(e, "user", oj->user);
		hb_emit_str(e, "namespace", ev->ns);
		hb_emit_str(e, "mpijob", ev->name);
		hb_emit_str(e, "rule", dec->rule);
		hb_emit_str_or_null(e, "account", job.account);
	}
	if (!(*inputs = inputs_end(e, &b, dec)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

/* A new managed MPIJob: place it, store it with its decision, and queue
 * its Slurm submit or its twin's creation (or, when it cannot run, store
 * it failed and say why in its status). */
static int origin_submit(struct hb_daemon *d, const struct hb_origin_ev *ev,
			 struct task **tasks, struct hb_err *err)
{
	struct hb_origin_job oj;
	struct hb_decider_out dec = { 0 };
	struct hb_job_row row = { 0 };
	struct hb_err why = { 0 };
	cJSON *src = NULL, *twin = NULL, *detail = cJSON_CreateObject();
	char *src_s = NULL, *inputs = NULL, tname[64] = "";
	int bad = hb_origin_prepare(ev->obj, ev->ns, &d->cfg, &oj, &why), rc;
	int target = HB_DECIDE_REJECT;

	if (!bad && (bad = origin_place(d, ev, &oj, &dec, &inputs, &why)))
		oj.reason = bad == HB_ENOMEM ? "Rejected" : "InvalidSpec";
	if (!bad) {
		target = dec.target;
		if (target == HB_DECIDE_REJECT) {
			bad = hb_err_set(&why, HB_EPERM, NULL, 0, "%s",
					 dec.reason);
			oj.reason = "PlacementRejected";
		} else if (target == HB_DECIDE_SLURM && !d->be.slurm_submit) {
			bad = hb_err_set(&why, HB_EUNSUP, NULL, 0,
					 "this daemon has no Slurm client");
			oj.reason = "NoSlurm";
		} else if (target == HB_DECIDE_KUBE &&
			   !(twin = hb_origin_twin_doc(ev->obj, tname, &why))) {
			bad = why.code;
			oj.reason = "InvalidSpec";
		}
	}
	if (bad) { /* the row's reason is "Reason: message" */
		char m[sizeof(why.msg)];

		memcpy(m, why.msg, sizeof(m));
		if (snprintf(why.msg, sizeof(why.msg), "%s: %.400s",
			     oj.reason ? oj.reason : "Rejected", m) < 0)
			why.msg[0] = '\0';
		target = HB_DECIDE_REJECT;
	}
	src = cJSON_CreateObject();
	if (!src || !detail ||
	    !cJSON_AddStringToObject(src, "kind", "MPIJob") ||
	    !cJSON_AddStringToObject(src, "script",
				     bad ? "" : oj.script.data) ||
	    (twin && !cJSON_AddStringToObject(src, "twin", tname)) ||
	    !(src_s = cJSON_PrintUnformatted(src))) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	row.origin = "kubernetes";
	row.target = target == HB_DECIDE_KUBE	 ? "kubernetes"
		     : target == HB_DECIDE_SLURM ? "slurm"
						 : "rejected";
	row.state = "pending";
	row.user = oj.user[0] ? oj.user : NULL;
	row.uid = bad ? -1 : (int64_t)oj.uid;
	row.account = oj.account[0] ? oj.account : NULL;
	row.partition = bad ? NULL : hb_doc_str(oj.jobspec, "partition");
	row.name = ev->name;
	row.reason = bad ? why.msg : dec.reason;
	row.jobspec = src_s;
	row.slurm_job_id = -1;
	row.exit_code = -1;
	cJSON_AddStringToObject(detail, "namespace", ev->ns);
	cJSON_AddStringToObject(detail, "name", ev->name);
	cJSON_AddStringToObject(detail, "uid", ev->uid);
	cJSON_AddStringToObject(detail, "target", row.target);
	if (twin)
		cJSON_AddStringToObject(detail, "twin", tname);
	if (dec.rule[0])
		cJSON_AddStringToObject(detail, "rule", dec.rule);
	if ((rc = txn(d, err)) || (rc = hb_store_job_add(d->st, &row, err)) ||
	    (rc = hb_store_job_set_k8s(d->st, row.id, ev->ns, ev->name,
				       ev->uid[0] ? ev->uid : NULL, err)) ||
	    (rc = hb_store_decision_add(
		     d->st, row.id, row.target, inputs,
		     dec.explanation ? dec.explanation : row.reason,
		     inputs ? hb_decider_policy_name(d->dc) : "managedBy",
		     err)) ||
	    (rc = audit(d, 0, "hpcbridged", "kubernetes", "submit", row.id,
			detail, err)))
		goto out;
	if ((rc = hb_origin_index_add(d->origin, ev->uid, ev->ns, ev->name,
				      row.id)) ||
	    (twin && (rc = hb_origin_twin_add(d->origin, ev->ns, tname,
					      row.id)))) {
		hb_err_set(err, rc, NULL, 0, "out of memory");
		goto out;
	}
	if (bad) {
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){
				HB_LOG_STR("job", row.id),
				HB_LOG_STR("mpijob", ev->name),
				HB_LOG_STR("reason", oj.reason) },
			3, "managed MPIJob not run: %s", why.msg);
		if (!(rc = hb_store_job_set_state(d->st, row.id, "failed", -1,
						  why.msg, err)))
			hb_origin_job_changed(d->origin, d->st, row.id);
		goto out;
	}
	if (twin) {
		hb_origin_job_changed(d->origin, d->st, row.id); /* Created */
		rc = origin_twin_task(d, row.id, twin, ev->ns, tname, tasks,
				      err);
		twin = NULL;
	} else {
		rc = origin_submit_task(d, row.id, ev->name, &oj, tasks, err);
	}
	if (rc)
		goto out;
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("job", row.id),
					 HB_LOG_STR("mpijob", ev->name),
					 HB_LOG_STR("user", oj.user),
					 HB_LOG_STR("target", row.target) },
		4, "managed MPIJob placed: %s", dec.reason);
out:
	cJSON_Delete(twin);
	hb_origin_job_free(&oj);
	hb_decider_out_free(&dec);
	cJSON_Delete(src);
	cJSON_Delete(detail);
	free(src_s);
	free(inputs);
	return rc;
}

/*
 * A managed MPIJob this process has not taken up yet, stored by an
 * earlier one (seen again by the watch's first list): a job stored but
 * never submitted is submitted now (Slurm's whole table has been
 * reconciled first, so a job Slurm got is bound, not submitted twice); a
 * job whose twin may not exist gets it created (or adopted).  Others only
 * have their status said again.
 */
static int origin_resume(struct hb_daemon *d, const struct hb_origin_ev *ev,
			 const char *id, struct task **tasks,
			 struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	struct hb_origin_job oj = { 0 };
	struct hb_err why = { 0 };
	char tname[64], reason[sizeof(why.msg) + 64];
	cJSON *twin;
	int rc = hb_store_job_get(d->st, id, &j, err);

	if (rc)
		goto out;
	if (strcmp(j.state, "pending") ||
	    (strcmp(j.target, "slurm") && strcmp(j.target, "kubernetes")) ||
	    (!strcmp(j.target, "slurm") && j.slurm_job_id >= 0)) {
		if (strcmp(j.target, "kubernetes")) /* a twin's events say */
			hb_origin_job_changed(d->origin, d->st, id);
		goto out;
	}
	hb_log(HB_LOG_INFO, "%s: MPIJob %s/%s was stored but not %s: %s now",
	       id, ev->ns, ev->name,
	       strcmp(j.target, "slurm") ? "given its twin" : "submitted",
	       strcmp(j.target, "slurm") ? "creating it" : "submitting");
	if (!strcmp(j.target, "kubernetes")) {
		if (!(twin = hb_origin_twin_doc(ev->obj, tname, &why))) {
			rc = hb_err_set(err, why.code, NULL, 0, "%s", why.msg);
			goto out;
		}
		rc = origin_twin_task(d, id, twin, ev->ns, tname, tasks, err);
		goto out;
	}
	if (!(rc = hb_origin_prepare(ev->obj, ev->ns, &d->cfg, &oj, &why))) {
		rc = origin_submit_task(d, id, ev->name, &oj, tasks, err);
		goto out;
	}
	/* it no longer reads, or its user is no longer granted (the user
	 * went, the configuration changed): it fails, "Reason: message" */
	snprintf(reason, sizeof(reason), "%s: %.400s",
		 oj.reason ? oj.reason : "InvalidSpec", why.msg);
	if (!(rc = txn(d, err)) &&
	    !(rc = hb_store_job_set_state(d->st, id, "failed", -1, reason,
					  err)))
		hb_origin_job_changed(d->origin, d->st, id);
out:
	hb_origin_job_free(&oj);
	hb_job_row_free(&j);
	return rc;
}

/* A managed MPIJob was deleted: cancel its Slurm job (or, before it has
 * one, only the record), or delete its twin.  why says how it was seen. */
static int origin_cancel(struct hb_daemon *d, const char *id, const char *why,
			 struct task **tasks, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = NULL;
	char twin[64] = "";
	struct task *t;
	int rc = hb_store_job_get(d->st, id, &j, err);

	if (rc)
		goto out;
	if (!strcmp(j.target, "kubernetes"))
		hb_origin_row_twin(&j, twin);
	if (twin[0] && j.k8s_namespace) { /* even if it ended: it goes too */
		if (!(t = twin_delete_task(d, j.id, j.k8s_namespace, twin))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		t->onext = *tasks;
		*tasks = t;
	}
	if (hb_store_state_terminal(j.state))
		goto out;
	if (j.slurm_job_id >= 0 && d->be.slurm_cancel) {
		if (!(t = task_new(d, NULL, TASK_CANCEL, j.id))) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		snprintf(t->actor_user, sizeof(t->actor_user),
			 "kubernetes (MPIJob deleted)");
		t->slurm_job_id = j.slurm_job_id;
		t->onext = *tasks;
		*tasks = t;
		goto out;
	}
	if ((detail = cJSON_CreateObject()))
		cJSON_AddStringToObject(detail, "why", why);
	if (!(rc = txn(d, err)) &&
	    !(rc = hb_store_job_set_state(d->st, j.id, "cancelled", -1, why,
					  err)))
		rc = audit(d, 0, "hpcbridged", "kubernetes", "cancel", j.id,
			   detail, err);
out:
	if (rc == HB_ENOENT || rc == HB_ESTATE) {
		memset(err, 0, sizeof(*err));
		rc = 0;
	}
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* A twin changed: the job's state follows its conditions (each move an
 * event), and its status is copied to the original.  A twin deleted by
 * someone else cancels the job. */
static int origin_twin_event(struct hb_daemon *d, const struct hb_origin_ev *ev,
			     const char *id, struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	cJSON *detail = cJSON_CreateObject();
	const char *to;
	char msg[256], why[400];
	int rc = hb_store_job_get(d->st, id, &j, err);

	if (rc || !detail || strcmp(j.target, "kubernetes") ||
	    hb_store_state_terminal(j.state) || !j.k8s_name ||
	    !j.k8s_namespace)
		goto out;
	cJSON_AddStringToObject(detail, "twin", ev->name);
	if (ev->type == HB_ORIGIN_DELETED) {
		snprintf(why, sizeof(why),
			 "TwinDeleted: its twin MPIJob %s/%s was deleted",
			 ev->ns, ev->name);
		if (!(rc = txn(d, err)) &&
		    !(rc = hb_store_job_set_state(d->st, id, "cancelled", -1,
						  why, err)) &&
		    !(rc = audit(d, 0, "hpcbridged", "kubernetes",
				 "twin-deleted", id, detail, err)))
			hb_origin_job_changed(d->origin, d->st, id);
		goto out;
	}
	to = hb_origin_twin_state(ev->obj, msg, sizeof(msg));
	if (strcmp(j.state, to) && hb_store_state_allowed(j.state, to)) {
		cJSON_AddStringToObject(detail, "from", j.state);
		cJSON_AddStringToObject(detail, "to", to);
		if ((rc = txn(d, err)) ||
		    (rc = hb_store_job_set_state(
			     d->st, id, to, !strcmp(to, "succeeded") ? 0 : -1,
			     msg[0] ? msg : NULL, err)) ||
		    (rc = audit(d, 0, "hpcbridged", "kubernetes", "twin-state",
				id, detail, err)))
			goto out;
	}
	if (hb_doc_get(ev->obj, "status"))
		hb_origin_stage(d->origin, j.k8s_namespace, j.k8s_name,
				hb_origin_twin_status(ev->obj));
out:
	cJSON_Delete(detail);
	hb_job_row_free(&j);
	return rc;
}

/* The watch's first list: collect the live jobs of its namespace it did
 * not bring. */
struct sweep_ctx {
	struct hb_daemon *d;
	unsigned gen;
	char (*ids)[32];
	size_t n, cap;
};

static int sweep_cb(const struct hb_job_row *r, void *arg)
{
	struct sweep_ctx *sc = arg;

	if (!r->origin || strcmp(r->origin, "kubernetes") || !r->k8s_name ||
	    !r->k8s_namespace ||
	    strcmp(r->k8s_namespace, hb_origin_ns(sc->d->origin)) ||
	    hb_origin_index_listed(sc->d->origin, r->k8s_uid, r->k8s_namespace,
				   r->k8s_name, sc->gen))
		return 0;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 16;
		char(*v)[32] = realloc(sc->ids, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		sc->ids = v;
		sc->cap = cap;
	}
	snprintf(sc->ids[sc->n++], 32, "%s", r->id);
	return 0;
}

/* MPIJobs deleted while nobody watched (the daemon down, the watch
 * broken): their jobs are cancelled, their twins deleted. */
static int origin_sweep(struct hb_daemon *d, unsigned gen, struct task **tasks,
			struct hb_err *err)
{
	static const char *const live[] = { "pending", "queued", "running",
					    "completing", NULL };
	struct sweep_ctx sc = { .d = d, .gen = gen };
	int rc = hb_store_job_list(d->st, -1, live, 0, sweep_cb, &sc, err);

	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	for (size_t i = 0; !rc && i < sc.n; i++) {
		hb_log(HB_LOG_INFO,
		       "%s: its MPIJob is gone (deleted while the gateway did "
		       "not watch): cancelled",
		       sc.ids[i]);
		rc = origin_cancel(d, sc.ids[i],
				   "the MPIJob was deleted while the gateway "
				   "did not watch",
				   tasks, err);
	}
	free(sc.ids);
	return rc;
}

/* One event of the module. */
static int origin_event(struct hb_daemon *d, const struct hb_origin_ev *ev,
			struct task **tasks, struct hb_err *err)
{
	const char *id;
	char idbuf[32];
	int rc = 0;

	if (ev->type == HB_ORIGIN_SYNC)
		return origin_sweep(d, ev->gen, tasks, err);
	id = ev->twin ? NULL
		      : hb_origin_index_find(d->origin, ev->uid, ev->ns,
					     ev->name);
	if (!id && (ev->twin || ev->type == HB_ORIGIN_DELETED)) {
		id = hb_origin_twin_find(d->origin, ev->ns, ev->name);
		if (id || ev->twin)
			return id ? origin_twin_event(d, ev, id, err) : 0;
	}
	if (id) /* borrowed until the index changes */
		id = memcpy(idbuf, id, strlen(id) + 1);
	if (ev->type == HB_ORIGIN_DELETED)
		return id ? origin_cancel(d, id, "the MPIJob was deleted",
					  tasks, err)
			  : 0;
	if (id && hb_origin_index_claim(d->origin, ev->uid, ev->ns, ev->name))
		rc = origin_resume(d, ev, id, tasks, err);
	else if (!id)
		rc = origin_submit(d, ev, tasks, err);
	hb_origin_index_seen(d->origin, ev->uid, ev->ns, ev->name, ev->gen);
	return rc;
}

/* The module's events, after the iteration's batch: their writes are one
 * transaction, committed here; only then do their tasks start.  Until a
 * whole Slurm poll has been reconciled they wait, so that a job stored
 * but not known to be submitted is looked for on Slurm first. */
static void origin_drain(struct hb_daemon *d)
{
	struct hb_origin_ev *list = hb_origin_take(d->origin), *ev, **tail;
	struct task *tasks = NULL, *t;
	struct hb_err err = { 0 };
	int rc = 0;

	for (tail = &d->origin_wait; *tail; tail = &(*tail)->next)
		;
	*tail = list;
	if (!d->slurm_seen && d->be.slurm_poll)
		return;
	list = d->origin_wait;
	d->origin_wait = NULL;
	for (ev = list; ev && !rc; ev = ev->next)
		rc = origin_event(d, ev, &tasks, &err);
	hb_origin_ev_free(list);
	if (!rc && d->txn_open) {
		d->txn_open = 0;
		if ((rc = hb_store_commit(d->st, &err)))
			hb_store_rollback(d->st);
	}
	if (rc) {
		batch_abort(d, &err);
		hb_log(HB_LOG_ERROR,
		       "managed MPIJobs: %s; their jobs were "
		       "not recorded",
		       err.msg);
	}
	if (!rc && tasks)
		failpoint(d, "origin-stored");
	while ((t = tasks)) {
		tasks = t->onext;
		if (rc)
			task_free(t);
		else
			task_launch(d, t);
	}
}

static int origin_new(struct hb_daemon *d, struct hb_err *err)
{
	struct hb_origin_opts oo = { 0 };
	int rc;

	if (strcmp(d->cfg.remote_backend, "kubernetes"))
		return 0;
	oo.kubeconfig = d->cfg.remote_kubeconfig;
	oo.context = d->cfg.remote_context;
	oo.ns = d->cfg.k8s.namespace;
	if ((rc = hb_origin_new(&oo, &d->origin, err)) ||
	    (rc = hb_origin_load(d->origin, d->st, err)))
		return rc;
	d->wo.tag = T_ORIGIN;
	return 0;
}

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

	if ((rc = make_parent(d->cfg.daemon_state, 0750, err)))
		goto fail;
	if ((rc = hb_decider_new(&d->cfg, &d->dc, err)))
		goto fail;
	hb_arena_init(&d->scratch, SCRATCH_MAX);
	if ((rc = hb_store_open(d->cfg.daemon_state, &d->st, err)))
		goto fail;
	d->rlimit = REMOTE_QUEUE_PER_WORKER * d->cfg.daemon_workers;
	d->ckpt_pages = d->opts.checkpoint_pages > 0
				? d->opts.checkpoint_pages
				: (int)d->cfg.daemon_checkpoint_pages;
	hb_store_set_autocheckpoint(d->st, CKPT_INLINE_FACTOR * d->ckpt_pages);
	if ((rc = hb_decider_load_spend(d->dc, d->st,
					hb_remote_now_ms() / 1000, err)))
		goto fail;
	if ((rc = remote_new(d, err)))
		goto fail;
	if ((rc = origin_new(d, err))) /* origin hook */
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
	*out = d;
	return 0;
fail:
	hb_daemon_free(d);
	return rc;
}

void hb_daemon_set_backend(struct hb_daemon *d,
			   const struct hb_daemon_backend *b)
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

static void start_stop(struct hb_daemon *d, const char *sig)
{
	struct conn *c, *next;

	if (d->stopping)
		return;
	d->stopping = 1;
	d->stop_deadline = mono_ms() + HB_DAEMON_STOP_MS;
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
			conn_close(c, "stopping");
		else
			conn_interest(c);
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

static void idle_scan(struct hb_daemon *d, int64_t now)
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
			conn_close(c, c->in.len > c->in_off
					      ? "timed out mid-frame"
					      : "idle");
	}
}

static void bury(struct hb_daemon *d)
{
	struct conn *c;

	while ((c = d->graveyard)) {
		d->graveyard = c->next;
		conn_free(c);
	}
}

int hb_daemon_run(struct hb_daemon *d)
{
	struct epoll_event evs[256];
	int64_t now;
	int n, i, timeout, origin_ready;

	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_STR("socket", d->cfg.daemon_socket),
			HB_LOG_STR("state", d->cfg.daemon_state),
			HB_LOG_INT("pid", getpid()),
			HB_LOG_INT("workers", d->cfg.daemon_workers),
			HB_LOG_STR("version", HB_VERSION) },
		5, "hpcbridged serving");
	d->last_scan = mono_ms();
	for (;;) {
		timeout = 1000;
		if (d->stopping || d->accept_paused)
			timeout = ACCEPT_PAUSE_MS;
		if (d->opts.idle_ms < timeout * 2)
			timeout = d->opts.idle_ms / 2 + 1;
		n = epoll_wait(d->epfd, evs, 256, timeout);
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
					do_accept(d);
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
				conn_event((struct conn *)w, evs[i].events);
				break;
			case T_ORIGIN:
				origin_ready = 1;
				break;
			}
		}
		batch_end(d);
		if (d->reload_wanted && !d->nremote) {
			d->reload_wanted = 0;
			reload(d);
		}
		/* origin hooks: managed MPIJobs, then their status patches;
		 * both act on what the store says, so that is synced first */
		if (d->origin && (origin_ready || d->origin_redo) &&
		    !d->stopping) {
			d->origin_redo = 0;
			sync_now(d);
			origin_drain(d);
		}
		if (hb_origin_staged(d->origin)) {
			sync_now(d);
			hb_origin_flush(d->origin);
		}
		bury(d);
		now = mono_ms();
		if (d->accept_paused && now >= d->accept_resume_ms)
			accept_resume(d);
		poll_slurm(d, now);
		expire_orphans(d, now);
		refresh_estimates(d, now);
		refresh_spend(d, now, 0);
		if (now - d->last_scan >= timeout) {
			idle_scan(d, now);
			bury(d);
			d->last_scan = now;
		}
		if (d->stopping) {
			if (!d->conns && hb_pool_pending(d->pool) == 0 &&
			    hb_pool_pending(d->rpool) == 0 &&
			    all_synced(d))
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
	hb_backend_free(d->remote); /* remote jobs keep running */
	d->remote = NULL;
	/* what waits for a sync goes out first, while its tasks can still
	 * reach the workers; from here on syncs are made in this thread */
	if (d->syncpool) {
		hb_pool_free(d->syncpool);
		d->syncpool = NULL;
	}
	sync_kick(d);
	/* the workers end next; what they finish is recorded */
	if (d->pool) {
		hb_pool_free(d->pool);
		d->pool = NULL;
		batch_end(d);
	}
	for (c = d->conns; c; c = next) {
		next = c->next;
		conn_close(c, "daemon exit");
	}
	batch_end(d);
	bury(d);
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
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->reserve_fd >= 0)
		close(d->reserve_fd);
	hb_origin_free(d->origin); /* after the pool: done() may publish */
	hb_origin_ev_free(d->origin_wait);
	hb_store_close(d->ckpt_st); /* after the pool: nothing uses it */
	hb_store_close(d->st);
	hb_decider_free(d->dc);
	hb_arena_free(&d->scratch);
	hb_config_free(&d->cfg);
	free(d->config_path);
	free(d->socket_path);
	free(d->state_path);
	free(d);
}
