/*
 * daemon_int.h - what the daemon's files share: struct hb_daemon, the
 * connections, the staged replies, the worker tasks, and the functions
 * one file calls in another.  Not a public header: hpcbridged and the
 * tests see daemon.h and origin.h only.  The shared functions are named
 * hbd_* (internal to hbdaemon); docs/internals/daemon.md maps the files.
 */
#ifndef HB_DAEMON_INT_H
#define HB_DAEMON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "daemon.h"
#include "hpcbridge/remote.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/error.h"
#include "hpcbridge/ratecard.h"
#include "hpcbridge/store.h"
#include "hpcbridge/timefmt.h"
#include "origin.h"
#include "gateway/placement/decider.h"
#include "pool.h"

#ifndef HB_VERSION
#define HB_VERSION "0.0.0"
#endif

/* Out of descriptors: the listening socket rests this long. */
#define ACCEPT_PAUSE_MS 100
/* The loop's store handle checkpoints inline only past this many times
 * daemon.checkpoint_pages (batch.c, "Checkpoints, off the loop"). */
#define CKPT_INLINE_FACTOR 8
/* Entries of the uid -> name cache (struct pw_entry). */
#define PW_CACHE_SIZE 256

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

enum tag { T_LISTEN = 1, T_SIGNAL, T_POOL, T_RPOOL, T_SYNC, T_CONN, T_ORIGIN,
	   T_METRICS, T_NOTICE };

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

/* TWIN_*: a Kubernetes-origin job's twin MPIJob (origin_jobs.c);
 * REMOTE_*: a burst job's remote side (remote_start, remote_poll), on
 * d->rpool. */
enum task_kind {
	TASK_SUBMIT,
	TASK_CANCEL,
	TASK_TWIN_CREATE,
	TASK_TWIN_DELETE,
	TASK_REMOTE_START,
	TASK_REMOTE_POLL,
	TASK_REMOTE_CANCEL, /* cancel and remote_abandon (rcancel_done()) */
	TASK_LOOKUP /* a uid's name (hbd_lookup_task()) */
};

/* What a TASK_REMOTE_CANCEL goes on with on the loop. */
enum rstop {
	RSTOP_JOB,	/* cancel of the whole job (hbd_op_cancel()) */
	RSTOP_TASK,	/* cancel of one array task (hbd_remote_stop()) */
	RSTOP_ABANDON	/* remote_abandon (hbd_remote_stop()) */
};

/* What a TASK_REMOTE_* task carries, and what its worker found. */
struct hb_jobspec;

/* What a checkpoint push or pull did (ckpt.c), for the job's events. */
struct hbd_ckpt {
	char event[16];	/* "ckpt_push", "ckpt_pull", "ckpt_none"; "": none */
	int rc;
	char id[32];	/* the checkpoint's ID */
	char url[640];	/* its location */
	char dir[HB_K8S_CKPT_DIR_MAX]; /* the job's checkpoint directory */
	uint64_t files, bytes;		/* in the checkpoint */
	uint64_t moved_files, moved_bytes; /* sent or fetched */
	int unchanged;	/* push: S3's newest already held the tree */
	uint32_t kept_checkpoints; /* pull: retention ran, keeping so many */
	uint64_t removed;	   /* ... deleting so many checkpoints */
	uint64_t stored_bytes;	   /* ... leaving so many bytes in S3 */
	int measured;		   /* stored_bytes is what S3 holds now */
	int periodic;		   /* pull: while the job runs, not its end */
	char why[HB_ERR_MAX];
};

/* The states of a job not yet over (metrics, STATUS=). */
#define HBD_LIVE_STATES                                                        \
	(HB_JOB_BIT(HB_JOB_PENDING) | HB_JOB_BIT(HB_JOB_QUEUED) |              \
	 HB_JOB_BIT(HB_JOB_RUNNING) | HB_JOB_BIT(HB_JOB_COMPLETING) |          \
	 HB_JOB_BIT(HB_JOB_SUSPENDED))

struct rwork {
	struct hb_remote *be;
	/* &d->cfg: a reload waits until no rwork is in flight */
	const struct hb_config *cfg;
	char rid[48];	  /* the remote id: "<id>" or "<id>-t<N>" */
	int64_t task;	  /* the array task, or -1 */
	int64_t slurm_id; /* START: root's binding, or -1 */
	/* START: the proxy's Slurm job id and array job id as its shadow
	 * says, for the job's own environment only (never bound), or -1 */
	int64_t env_job_id, env_array_id;
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
	struct hbd_ckpt ckpt; /* START: pushed; POLL: pulled at the end */
	int ckpt_due;	      /* POLL: pull even if the job runs on */
};

struct task {
	struct hb_task t; /* first */
	enum task_kind kind;
	struct hb_daemon *d;
	struct conn *c; /* NULL: a managed MPIJob's task (origin_jobs.c) */
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
	struct hb_slurm_side_ops be;
	uid_t actor_uid;
	char actor_user[64], peer[32];
	struct rwork *rw;	      /* TASK_REMOTE_* */
	uid_t luid; /* TASK_LOOKUP: this uid's name (in user, NULL if none) */
	gid_t lgid; /* ... and primary group; script: the request */
	int lconn;  /* ... for the connection (c->named), not a decide */
	struct task *rprev, *rnext; /* d->rtasks */
};

/* What systemd has been told (notify.c); all zero without
 * $NOTIFY_SOCKET. */
struct hbd_notify {
	int on;		    /* $NOTIFY_SOCKET is set */
	int64_t wd_half_ms; /* the watchdog's ping period; 0: none */
	int64_t wd_next;    /* loop time of the next WATCHDOG=1 */
	int64_t status_ms;  /* when STATUS= was last looked at */
	char status[256];   /* ... and what it said */
	int failing;	    /* the last sd_notify() failed */
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
	/* When each running burst job's checkpoint last came back (ckpt.c,
	 * loop only): jobs and times, at most HBD_CKPT_TRIPS */
	struct hbd_ckpt_trip { char id[32]; int64_t at_ms; } *trips;
	size_t ntrips;
	unsigned nremote, rlimit; /* how many; at most */
	int reload_wanted;	/* SIGHUP came while rtasks ran */
	struct hb_slurm_side_ops be;
	struct hb_remote *remote;     /* where burst jobs run */
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
	/* committed batches waiting for their sync (see hbd_sync_kick()) */
	struct hb_pool *syncpool; /* one thread: the syncs */
	int sync_busy;		  /* a sync runs */
	struct staged *waiting, **waiting_tail;
	/* SlurmUser */
	uid_t slurm_uid;
	gid_t slurm_gid;
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
	/* What feeds the job_submit plugin's decisions (publish.c) and
	 * what it tells of them (notice.c). */
	struct {
		int64_t last_ms;	     /* loop time of the last snapshot */
		uint64_t version;	     /* the last snapshot's */
		int64_t lease_lo, lease_hi;  /* the ids it leases; 0: none */
		int64_t lease_used;	     /* the highest of them noticed */
		int64_t noticed;	     /* the highest leased id noticed */
		int lease_wanted;	     /* a plugin asked: lease afresh */
		uint64_t owner;		     /* the plugin (nonce) it is for */
		int failing;		     /* the last write failed (logged) */
		int fd;			     /* the notice socket; -1: none */
		struct watch w;
		struct hb_buf config;	     /* the configuration's text */
		char snap_path[4096];	     /* hb_config_plugin_path() */
		char notice_path[108];
		uint64_t notices, ignored;   /* counted, for the log */
	} feed;
	int kcap_failing;      /* the last capacity read failed */
	int kqueue_state;      /* Kueue's visibility API: 0 not yet
				* read, 1 answering, 2 failing */
	int polling;	   /* a poll is on a worker */
	int poll_rescan;   /* the next poll reports every job (reconcile.c) */
	int preempting;	   /* preempted jobs are looked at on a worker */
	int64_t last_preempt; /* ... last asked for */
	struct ratelog rl_preempt;
	struct hb_store *ckpt_st; /* the checkpoint worker's own handle */
	int ckpt_pages;		  /* a checkpoint goes to a worker ... */
	int ckpt_mark;		  /* ... this many pages after the last */
	int checkpointing;	  /* one is on a worker */
	uint64_t ncheckpoints;	  /* done on a worker */
	struct pw_entry pw[PW_CACHE_SIZE];
	uint64_t nrequests, ndecisions;
	/* metering (metering.c): the rate card (none: nversions 0) */
	struct hb_ratecard card;
	int budget_actuals; /* budgets count actuals: the card prices in
			     * the policy's currency */
	int spend_dirty; /* a batch was rolled back: load the spend again */
	uint64_t nmetered;    /* jobs whose entries were written */
	int64_t last_bill;    /* checkpoint storage last measured (ckpt.c) */
	int billing;	      /* ... on a worker now */
	struct hbd_metrics *mx; /* /metrics and /healthz (metrics_http.c) */
	struct hbd_notify notify; /* systemd (notify.c) */
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static inline char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* root or SlurmUser: may decide and act for anyone */
static inline int uid_is_priv(const struct hb_daemon *d, uid_t uid)
{
	return uid == 0 || (d->slurm_uid_valid && uid == d->slurm_uid);
}

static inline int is_priv(const struct hb_daemon *d, const struct conn *c)
{
	return uid_is_priv(d, c->uid);
}

/* may see and cancel every job */
static inline int is_admin(const struct hb_daemon *d, const struct conn *c)
{
	return is_priv(d, c) ||
	       (c->user[0] && hb_list_has(d->cfg.daemon_admins,
					  d->cfg.ndaemon_admins, c->user));
}

static inline int may_see(const struct hb_daemon *d, const struct conn *c,
			  const struct hb_job_row *j)
{
	return is_admin(d, c) || (j->uid >= 0 && (uid_t)j->uid == c->uid);
}

/* The job target a decision (enum hb_place_verdict) places a job on. */
static inline enum hb_job_target decided_target(int decided)
{
	return decided == HB_DECIDE_KUBE    ? HB_TARGET_KUBERNETES
	       : decided == HB_DECIDE_SLURM ? HB_TARGET_SLURM
					    : HB_TARGET_REJECTED;
}

/* Nothing left to do on c: no task, nothing staged or unsent. */
static inline int conn_idle(const struct conn *c)
{
	return !c->busy && !c->nstaged && c->out.len == c->out_off;
}

/* ------------------------------------------------------------------ */
/* conn.c: users, connections, reading and accepting                   */
/* ------------------------------------------------------------------ */

void hbd_pw_fill(struct hb_daemon *d, uid_t uid, const char *name, gid_t gid);
int hbd_pw_cached(const struct hb_daemon *d, uid_t uid, char *name, size_t n,
		  gid_t *gid);
void hbd_resolve_slurm_user(struct hb_daemon *d);
int hbd_rate_ok(struct ratelog *r, unsigned *dropped);
void hbd_conn_release(struct conn *c);
void hbd_accept_resume(struct hb_daemon *d);
void hbd_conn_close(struct conn *c, const char *why);
void hbd_conn_interest(struct conn *c);
void hbd_conn_flush(struct conn *c);
void hbd_conn_resume(struct conn *c);
void hbd_process_conn(struct conn *c);
void hbd_conn_event(struct conn *c, uint32_t ev);
void hbd_do_accept(struct hb_daemon *d);
void hbd_idle_scan(struct hb_daemon *d, int64_t now);
void hbd_bury(struct hb_daemon *d);

/* ------------------------------------------------------------------ */
/* batch.c: the batch, staged replies, checkpoints, group commit       */
/* ------------------------------------------------------------------ */

int hbd_txn(struct hb_daemon *d, struct hb_err *err);
void hbd_batch_abort(struct hb_daemon *d, const struct hb_err *err);
char *hbd_frame_json(const cJSON *reply, size_t *len);
char *hbd_frame_error(int code, const char *msg, size_t *len);
struct staged *hbd_stage_frame(struct hb_daemon *d, struct conn *c, char *f,
			       size_t len, int too_big, int needs_commit,
			       int close_after);
void hbd_stage_reply(struct hb_daemon *d, struct conn *c, cJSON *reply,
		     int needs_commit, int close_after);
struct hb_emit *hbd_reply_begin(struct hb_buf *b);
char *hbd_reply_end(struct hb_emit *e, struct hb_buf *b, size_t *len);
void hbd_stage_error(struct hb_daemon *d, struct conn *c, int code,
		     const char *msg, int close_after);
void hbd_stage_task(struct hb_daemon *d, struct conn *c, struct task *t,
		    int needs_commit);
void hbd_failpoint(const struct hb_daemon *d, const char *name);
int hbd_all_synced(const struct hb_daemon *d);
void hbd_sync_now(struct hb_daemon *d);
void hbd_sync_kick(struct hb_daemon *d);
void hbd_batch_end(struct hb_daemon *d);

/* ------------------------------------------------------------------ */
/* dispatch.c: names, the op table                                     */
/* ------------------------------------------------------------------ */

/* A request's string field that must be there and not empty, for
 * hb_doc_get_str(); the ops read every field with hb_doc_get_*(), into a
 * struct hb_err that keeps the first error. */
#define HBD_REQUIRED (HB_DOC_REQUIRED | HB_DOC_NONEMPTY)

void hbd_lookup_task(struct hb_daemon *d, struct conn *c, const cJSON *req,
		     uid_t uid, int lconn);
void hbd_lookup_done(struct task *t);
void hbd_dispatch(struct hb_daemon *d, struct conn *c, const cJSON *req);

/* ------------------------------------------------------------------ */
/* ckpt.c: a burst job's checkpoints, through S3 and the user's agent   */
/* ------------------------------------------------------------------ */

/* On a worker: push the job's checkpoint directory to its location
 * before it starts on the cluster; pull the newest checkpoint there back
 * into it when it is over.  Nothing (r->event "") when the job has no
 * directory or the site no checkpoints.url. */
int hbd_ckpt_push(const struct hb_config *cfg, const char *job, uid_t uid,
		  gid_t gid, const struct hb_jobspec *spec, struct hbd_ckpt *r,
		  struct hb_err *err);
int hbd_ckpt_pull(const struct hb_config *cfg, const char *job, uid_t uid,
		  gid_t gid, const struct hb_jobspec *spec, struct hbd_ckpt *r,
		  struct hb_err *err);
/* On the loop: whether job id's checkpoint is due to come back while it
 * runs (checkpoints.interval since the last time; the first poll starts
 * the clock), and taking the time when it is; done: the job is over,
 * forget it. */
int hbd_ckpt_due(struct hb_daemon *d, const char *id, int done);
/* On the loop: r as the job's event (ckpt_push, ckpt_pull, ckpt_failed);
 * side: where the checkpoint came from. */
int hbd_ckpt_audit(struct hb_daemon *d, const char *job_id,
		   const struct hbd_ckpt *r, const char *side,
		   struct hb_err *err);
/* On the loop, at loop time now: every checkpoints.bill_interval, a
 * worker measures each checkpoint location whose storage meter holds
 * bytes, and the loop charges the time since (hbd_meter_storage()). */
void hbd_ckpt_bill(struct hb_daemon *d, int64_t now);

/* ------------------------------------------------------------------ */
/* ops_common.c: what the ops share                                    */
/* ------------------------------------------------------------------ */

void hbd_add_str_or_null(cJSON *o, const char *k, const char *v);
void hbd_add_int_or_null(cJSON *o, const char *k, int64_t v);
cJSON *hbd_job_json(const struct hb_job_row *j);
int hbd_audit(struct hb_daemon *d, uid_t uid, const char *user,
	      const char *peer, const char *action, const char *job_id,
	      const cJSON *detail, struct hb_err *err);
char *hbd_job_source(enum hb_job_entry entry, const cJSON *req);
struct hb_emit *hbd_inputs_begin(struct hb_buf *b,
				 const struct hb_place_out *dec);
char *hbd_inputs_end(struct hb_emit *e, struct hb_buf *b,
		     const struct hb_place_out *dec);
int hbd_visible_job(struct hb_daemon *d, struct conn *c, const cJSON *req,
		    struct hb_job_row *j);
void hbd_store_failed(struct hb_daemon *d, struct conn *c, int rc,
		      struct hb_err *err);

/* ------------------------------------------------------------------ */
/* The ops (the handlers of dispatch.c's table)                        */
/* ------------------------------------------------------------------ */

/* ops_decide.c */
void hbd_decide(struct hb_daemon *d, struct conn *c, const cJSON *req,
		const char *looked_up);
void hbd_op_decide(struct hb_daemon *d, struct conn *c, const cJSON *req);
void hbd_op_placement(struct hb_daemon *d, struct conn *c, const cJSON *req);
/* ops_jobs.c */
void hbd_op_submit(struct hb_daemon *d, struct conn *c, const cJSON *req);
void hbd_op_jobs(struct hb_daemon *d, struct conn *c, const cJSON *req);
void hbd_op_status(struct hb_daemon *d, struct conn *c, const cJSON *req);
void hbd_op_cancel(struct hb_daemon *d, struct conn *c, const cJSON *req);
void hbd_cancel_rest(struct hb_daemon *d, struct conn *c,
		     const struct hb_job_row *j);
/* ops_remote.c */
void hbd_op_remote_start(struct hb_daemon *d, struct conn *c,
			 const cJSON *req);
void hbd_op_remote_poll(struct hb_daemon *d, struct conn *c,
			const cJSON *req);
void hbd_op_remote_abandon(struct hb_daemon *d, struct conn *c,
			   const cJSON *req);
void hbd_remote_stop(struct hb_daemon *d, struct conn *c, const cJSON *req,
		     int abandon);
/* reconcile.c: burst jobs' proxies follow Kueue's preemptions */
void hbd_watch_preempted(struct hb_daemon *d, int64_t now);
/* Whether j, a burst job, was placed on Slurm after its MPIJob stayed
 * preempted: its latest decision says so. */
int hbd_replaced(struct hb_daemon *d, const struct hb_job_row *j);
struct task *hbd_remote_task(struct hb_daemon *d, struct conn *c,
			     enum task_kind kind, const struct hb_job_row *j,
			     const char *rid, int64_t task);
/* Whether burst jobs run on a Kubernetes cluster (remote.backend
 * kubernetes), whose pod rules then apply; the local backend runs them
 * on this host as their user, as Slurm would. */
bool hbd_remote_cfg_is_cluster(const struct hb_config *cfg);
int hbd_rstart_run(struct task *t);
/* The decided jobspec of job id from its stored source (the jobs table's
 * jobspec column), into spec (initialised by the caller): as
 * remote_start builds it.  0, or an error in err. */
int hbd_job_spec(const char *id, const char *jobspec, struct hb_jobspec *spec,
		 struct hb_err *err);
int hbd_rpoll_run(struct task *t);
void hbd_remote_done(struct task *t);

/* ------------------------------------------------------------------ */
/* tasks.c: worker tasks and their completion on the loop              */
/* ------------------------------------------------------------------ */

struct task *hbd_task_new(struct hb_daemon *d, struct conn *c,
			  enum task_kind kind, const char *id);
void hbd_task_free(struct task *t);
void hbd_task_launch(struct hb_daemon *d, struct task *t);

/* ------------------------------------------------------------------ */
/* reconcile.c, refresh.c: what the loop does on its timers            */
/* ------------------------------------------------------------------ */

/*
 * A decision the job_submit plugin made in slurmctld under a leased id
 * (ops_decide.c): n is its notice, {"id", "target", "snapshot", "rule",
 * "why", "reason", "explanation", "doc", "cost_micro", "request": the
 * decide request}, heard on the notice socket or rebuilt from Slurm's job
 * record.  Records the job, its decision and the audit event in the
 * batch and charges the estimate.  noticed: it came in a notice (not
 * rebuilt from Slurm).  HB_EEXIST when it is recorded already.
 */
int hbd_plugin_decided(struct hb_daemon *d, const cJSON *n, const char *peer,
		       int noticed, struct hb_err *err);

/* publish.c, notice.c: the plugin's snapshot, and what it tells back */
int hbd_publishing(const struct hb_daemon *d);
/* Whether id may name a decision made in slurmctld not recorded yet: at
 * most the last lease's end (reconcile.c). */
int hbd_maybe_leased(const struct hb_daemon *d, const char *id);
void hbd_publish_tick(struct hb_daemon *d, int64_t now);
/* Leased id seq was recorded, from a notice (noticed) or rebuilt from
 * Slurm: the lease's use, and how far the daemon's spend counts the
 * plugin's decisions ("noticed" in the snapshot). */
void hbd_publish_used(struct hb_daemon *d, int64_t seq, int noticed);
int hbd_notice_open(struct hb_daemon *d, struct hb_err *err);
void hbd_notice_read(struct hb_daemon *d);
void hbd_notice_close(struct hb_daemon *d);

void hbd_poll_slurm(struct hb_daemon *d, int64_t now);
void hbd_expire_orphans(struct hb_daemon *d, int64_t now);
void hbd_refresh_estimates(struct hb_daemon *d, int64_t now);
void hbd_refresh_spend(struct hb_daemon *d, int64_t mono, int force);

/* ------------------------------------------------------------------ */
/* metering.c: finished jobs priced into the ledger                    */
/* ------------------------------------------------------------------ */

/* Read cfg's rate card into card (nothing when it names none). */
void hbd_metering_start(struct hb_daemon *d);
/* After the card or the policy changed: whether budgets count actuals
 * (said in the log when they cannot: the currencies differ). */
void hbd_metering_apply(struct hb_daemon *d);
int hbd_ratecard_load(const struct hb_config *cfg, struct hb_ratecard *card,
		      struct hb_err *err);
/*
 * Meter a job that ended on Slurm, from the reconciler's final change
 * (each Slurm job it ran as, an array's tasks too, is a part of its own);
 * meter a burst job, or its array task task (-1: the whole job), from
 * its remote status and decided jobspec.  Both
 * run in the iteration's batch and write nothing without a rate card;
 * a job the card cannot price is logged and left unmetered.  0, or a
 * store error (the batch is to be aborted).
 */
struct hb_slurm_change;
struct hb_remote_status;
int hbd_meter_slurm(struct hb_daemon *d, const struct hb_job_row *j,
		    const struct hb_slurm_change *ch, struct hb_err *err);
int hbd_meter_remote(struct hb_daemon *d, const struct hb_job_row *j,
		     int64_t task, const struct hb_remote_status *rs,
		     struct hb_err *err);
/* A Kubernetes-origin job's twin MPIJob, over: its status's times x the
 * pods its spec asks for. */
int hbd_meter_twin(struct hb_daemon *d, const struct hb_job_row *j,
		   const cJSON *twin, struct hb_err *err);
/* On the loop: what S3 holds at url now (bytes, measured at now_ms)
 * charged as checkpoint storage (meter.h hb_meter_storage()), to job_id
 * from now on (NULL: the job the location's meter names), and counted
 * in its account's budget.  Nothing without a rate card.  0, or a store
 * error. */
int hbd_meter_storage(struct hb_daemon *d, const char *job_id,
		      const char *url, uint64_t bytes, int64_t now_ms,
		      struct hb_err *err);
/* The status reply's "storage" of job id: {mib_s, amount_micros}, what
 * its checkpoint storage has been charged so far; nothing when none. */
int hbd_storage_status(struct hb_daemon *d, const char *id, cJSON *job,
		       struct hb_err *err);
/*
 * On a worker: what a burst job ran remotely, for its proxy's admin
 * comment (sacct's AdminComment), after the tag and what the job asked:
 * "ran on kubernetes: 2 pods, 3 CPUs, ...".  0, or an error in err.
 */
int hbd_proxy_record(const char *id, const char *jobspec,
		     const struct hb_config *cfg,
		     const struct hb_remote_status *rs, char *out,
		     size_t outsz, struct hb_err *err);

/* ------------------------------------------------------------------ */
/* notify.c: systemd's notifications and watchdog                      */
/* ------------------------------------------------------------------ */

/* As the loop starts (the socket listens, the store is open): read
 * $NOTIFY_SOCKET and the watchdog's settings, send READY=1. */
void hbd_notify_start(struct hb_daemon *d);
/* The loop's epoll timeout, cut so that the next WATCHDOG=1 is on time. */
int hbd_notify_timeout(const struct hb_daemon *d, int timeout);
/* Each iteration, at loop time now: WATCHDOG=1 when due, STATUS=. */
void hbd_notify_tick(struct hb_daemon *d, int64_t now);
/* Around a configuration re-read: RELOADING=1; then READY=1 with a
 * STATUS= saying whether it was taken (rc 0) or refused. */
void hbd_notify_reloading(struct hb_daemon *d);
void hbd_notify_reloaded(struct hb_daemon *d, int rc);
/* SIGTERM or SIGINT: STOPPING=1. */
void hbd_notify_stopping(struct hb_daemon *d);

/* ------------------------------------------------------------------ */
/* origin_jobs.c: Kubernetes-origin MPIJobs on the loop                */
/* ------------------------------------------------------------------ */

int hbd_origin_new(struct hb_daemon *d, struct hb_err *err);
void hbd_origin_drain(struct hb_daemon *d);
int hbd_twin_run(struct task *t);
int hbd_twin_done(struct hb_daemon *d, struct task *t, struct hb_err *err);
int hbd_origin_late_submit(struct hb_daemon *d, const struct task *t,
			   struct hb_err *err);

/* ------------------------------------------------------------------ */
/* metrics_http.c: /metrics and /healthz, served from the loop         */
/* ------------------------------------------------------------------ */

/* Serve metrics.listen, if set, from the loop's epoll. */
int hbd_metrics_start(struct hb_daemon *d, struct hb_err *err);
/* Its descriptor is ready, or a second went by (its timeouts). */
void hbd_metrics_run(struct hb_daemon *d);
void hbd_metrics_stop(struct hb_daemon *d);

#endif
