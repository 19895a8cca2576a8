/*
 * inproc.c - placement inside slurmctld (plugin.decide: snapshot).
 *
 * The daemon publishes a snapshot file about once a second
 * (gateway/daemon/publish.c; the format in snapfile.h).  A thread of the
 * plugin maps each new one, parses it (policy, state, configuration) into
 * a view, and swaps it in.  job_submit, under slurmctld's job write lock,
 * then decides with the engine the daemon runs (hb_place_job()) from the
 * view in memory: no socket, no file, no wait.  It:
 *   - takes the job's gateway id from the view's lease, when the lease
 *     is this plugin's (it names the nonce the plugin sent in its hello:
 *     no other slurmctld uses it), so the daemon need not be asked;
 *   - tags the job (admin_comment "hpcbridge:ID target=T snap=V cost=C",
 *     C the estimate charged, in micro-units) and, for
 *     a burst job, makes it the proxy whose script carries the decide
 *     request (hb_rules_proxy_payload()): Slurm's own job record is the
 *     decision's durable record;
 *   - sends the daemon a notice (a datagram, MSG_DONTWAIT) with the whole
 *     decision; one that cannot go now waits in a queue the thread empties
 *     (a decision whose notice could not even be queued is not made).
 * A missing, stale or unreadable snapshot, or a used-up lease, leaves the
 * job on Slurm untouched, as a daemon that does not answer does.
 *
 * Budgets: each decision's estimate is charged to the view's spend, so
 * the next decision sees it.  A new view holds what the daemon counted up
 * to the id it says ("noticed"); the plugin charges it again what came
 * after.  What the daemon has not counted is capped per account by the
 * view's allowance: past it, the account's jobs stay on Slurm until the
 * daemon catches up.  So decisions made here overspend a budget by at most
 * the allowance (docs/internals/snapshot-file.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hbplugin.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/log.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/snapfile.h"
#include "hpcbridge/snapshot.h"

/* The body format this plugin reads (publish.c's BODY_FORMAT). */
#define BODY_FORMAT 1
/* A notice is at most this long (notice.c's NOTICE_MAX); a longer one is
 * not sent: the reconciler reads the decision from Slurm. */
#define NOTICE_MAX (256u * 1024)
/* Notices kept while the daemon cannot take them. */
#define QUEUE_MAX 65536
#define QUEUE_BYTES (64u << 20)
/* Decisions the daemon has not counted, kept for the allowance. */
#define PENDING_MAX 65536
/* The largest proxy script made: under Slurm's default max_script_size
 * (4 MB), so the proxy is never refused for its size. */
#define PROXY_SCRIPT_MAX (4000u * 1000)
/* The most of its working memory a decision keeps for the next. */
#define SCRATCH_KEEP (256u * 1024)
/* How often the thread looks for a new snapshot (one lstat) and sends
 * what waits (job_submit only queues notices: it never wakes the daemon
 * while slurmctld's lock is held). */
#define TICK_MS 20
#define RETRY_MS 2
/* The least time between two requests for a lease. */
#define HELLO_MS 500

/* One snapshot, parsed. */
struct view {
	struct hb_snapfile f;
	struct hb_policy pol;
	struct hb_snapshot snap; /* with the charges made since */
	struct hb_config cfg;	 /* the proxy's and the pods' rules */
	int cluster;		 /* remote.backend is kubernetes */
	char note[256];
	char daemon_socket[108];
	char notice_path[108];
	uint64_t owner;	   /* the plugin the lease is for (its nonce) */
	int64_t noticed;   /* the daemon counted every id up to it */
	int64_t allowance; /* micro-units per account */
};

/* A decision the daemon has not counted yet. */
struct pend {
	int64_t seq;
	uint32_t owe; /* its account's entry in ip->owed */
	int side, period;
	int64_t cost;
};

/* An account's decisions the daemon has not counted: their sum. */
struct owe {
	char *account;
	int64_t sum;
};

/* A notice waiting. */
struct qmsg {
	char *text;
	size_t len;
};

struct hb_inproc {
	pthread_mutex_t mu; /* everything below */
	char path[4096];
	uid_t daemon_uid;
	struct view *v;	     /* NULL: nothing to decide from */
	uint64_t nonce;	  /* this plugin's, for its leases (random) */
	int64_t next_id;  /* the next id of v's lease; 0: none ours */
	int64_t lease_lo; /* the lease next_id belongs to */
	int deciding;	  /* a view and an id: said in the log */
	int need_ids;	  /* a job found no id of ours: ask again */
	int64_t hello_ms; /* when a lease was last asked for; 0: never */
	int busy;	  /* notices were waiting at the last tick */
	struct pend *pend;
	size_t npend;
	struct owe *owed; /* every account seen with a cost, kept */
	size_t nowed, owed_cap;
	struct qmsg *q;
	size_t qhead, qlen, qbytes;
	size_t inflight; /* taken out by the sender, not yet sent */
	int fd; /* the notice socket (unbound datagram) */
	size_t notice_max; /* the longest notice it can send */
	uint64_t dropped; /* notices given up (the reconciler has them) */
	int64_t last_warn_ms;
	struct hb_inproc_stats st;
	/* decide_locked()'s working memory, kept from one job to the next:
	 * a decision writes into memory it used before, never into pages
	 * the allocator has just had back from the kernel (those cost a
	 * fault each under slurmctld's lock) */
	struct hb_buf req, note, script;
	/* the thread */
	pthread_t thread;
	int running, stop;
	pthread_cond_t cv;
};

/* ------------------------------------------------------------ views */

static void view_free(struct view *v)
{
	if (!v)
		return;
	hb_policy_free(&v->pol);
	hb_snapshot_free(&v->snap);
	hb_config_free(&v->cfg);
	hb_snapfile_close(&v->f);
	free(v);
}

/* A string member of the body into buf (it must fit). */
static int body_str(const cJSON *b, const char *key, char *buf, size_t n,
		    struct hb_err *err)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(b, key);

	if (!cJSON_IsString(s) || strlen(s->valuestring) >= n)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "snapshot: %s missing or too long", key);
	memcpy(buf, s->valuestring, strlen(s->valuestring) + 1);
	return 0;
}

/* Parse the mapped file's body into v. */
static int view_parse(struct view *v, struct hb_err *err)
{
	cJSON *b = cJSON_ParseWithLength(v->f.body, v->f.blen);
	const cJSON *fmt, *pol, *state, *cfg, *n;
	char *state_text = NULL;
	int rc;

	if (!b)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "snapshot: the body is not JSON");
	fmt = cJSON_GetObjectItemCaseSensitive(b, "format");
	pol = cJSON_GetObjectItemCaseSensitive(b, "policy");
	state = cJSON_GetObjectItemCaseSensitive(b, "state");
	cfg = cJSON_GetObjectItemCaseSensitive(b, "config");
	if (!cJSON_IsNumber(fmt) || fmt->valuedouble != BODY_FORMAT) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"snapshot: body format not %d", BODY_FORMAT);
		goto out;
	}
	if (!cJSON_IsString(pol) || !cJSON_IsObject(state) ||
	    !cJSON_IsString(cfg)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"snapshot: policy, state or config missing");
		goto out;
	}
	if ((rc = body_str(b, "note", v->note, sizeof(v->note), err)) ||
	    (rc = body_str(b, "daemon_socket", v->daemon_socket,
			   sizeof(v->daemon_socket), err)) ||
	    (rc = body_str(b, "notice_socket", v->notice_path,
			   sizeof(v->notice_path), err)))
		goto out;
	n = cJSON_GetObjectItemCaseSensitive(b, "lease_owner");
	v->owner = cJSON_IsString(n) ? strtoull(n->valuestring, NULL, 16) : 0;
	n = cJSON_GetObjectItemCaseSensitive(b, "noticed");
	v->noticed = cJSON_IsNumber(n) ? (int64_t)n->valuedouble : 0;
	n = cJSON_GetObjectItemCaseSensitive(b, "allowance");
	v->allowance =
		cJSON_IsNumber(n) ? (int64_t)(n->valuedouble * 1e6) : 0;
	if ((rc = hb_policy_parse(pol->valuestring, strlen(pol->valuestring),
				  "snapshot policy", &v->pol, err)))
		goto out;
	if (!(state_text = cJSON_PrintUnformatted(state))) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	if ((rc = hb_snapshot_parse(state_text, strlen(state_text),
				    "snapshot state", &v->snap, err)) ||
	    (rc = hb_config_parse(cfg->valuestring, strlen(cfg->valuestring),
				  "snapshot config", &v->cfg, err)))
		goto out;
	/* the daemon's socket as it serves it (hpcbridged --socket) */
	v->cfg.daemon_socket = v->daemon_socket;
	v->cluster = !strcmp(v->cfg.remote_backend, "kubernetes");
out:
	free(state_text);
	cJSON_Delete(b);
	return rc;
}

/* Map and parse the snapshot at path; NULL with err set. */
static struct view *view_load(const char *path, uid_t trusted,
			      struct hb_err *err)
{
	struct view *v = calloc(1, sizeof(*v));

	if (!v) {
		hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		return NULL;
	}
	if (hb_snapfile_open(path, trusted, &v->f, err) ||
	    view_parse(v, err)) {
		view_free(v);
		return NULL;
	}
	return v;
}

/* Charge v with the decisions its daemon had not counted; drop those it
 * had, and sum what is left per account.  mu held. */
static void pend_carry(struct hb_inproc *ip, struct view *v)
{
	size_t k = 0;

	for (size_t i = 0; i < ip->nowed; i++)
		ip->owed[i].sum = 0;
	for (size_t i = 0; i < ip->npend; i++) {
		struct pend *p = &ip->pend[i];

		if (p->seq <= v->noticed)
			continue;
		hb_place_charge(&v->snap, ip->owed[p->owe].account, p->period,
				p->side, (hb_money)p->cost);
		ip->owed[p->owe].sum += p->cost;
		ip->pend[k++] = *p;
	}
	ip->npend = k;
}

/* account's entry in ip->owed, made when new; NULL when out of memory.
 * mu held.  The accounts are few (one per Slurm account that spends),
 * so a scan is fine. */
static struct owe *owed_of(struct hb_inproc *ip, const char *account)
{
	for (size_t i = 0; i < ip->nowed; i++)
		if (!strcmp(ip->owed[i].account, account))
			return &ip->owed[i];
	if (ip->nowed == ip->owed_cap) {
		size_t cap = ip->owed_cap ? ip->owed_cap * 2 : 16;
		struct owe *o = realloc(ip->owed, cap * sizeof(*o));

		if (!o)
			return NULL;
		ip->owed = o;
		ip->owed_cap = cap;
	}
	if (!(ip->owed[ip->nowed].account = strdup(account)))
		return NULL;
	ip->owed[ip->nowed].sum = 0;
	return &ip->owed[ip->nowed++];
}

/* ------------------------------------------------------------ notices */

/* Whether a notice of len bytes can be queued: a decision the daemon
 * could not be told of is not made (the job stays on Slurm), so no
 * notice is ever given up while slurmctld runs.  mu held. */
static int notice_room(const struct hb_inproc *ip, size_t len)
{
	return len <= ip->notice_max && ip->qlen + ip->inflight < QUEUE_MAX &&
	       ip->qbytes + len <= QUEUE_BYTES;
}

/* Queue a notice (text owned from now on); the caller made sure of the
 * room.  Nothing is sent here: job_submit never wakes another process. */
static void notice_queue(struct hb_inproc *ip, char *text, size_t len)
{
	ip->q[(ip->qhead + ip->qlen) % QUEUE_MAX] = (struct qmsg){ text, len };
	ip->qlen++;
	ip->qbytes += len;
}

/* Send m; 0 when sent (or given up), -1 when the socket refuses it
 * now.  Off the mutex. */
static int send_one(struct hb_inproc *ip, const char *path, struct qmsg *m)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memcpy(sa.sun_path, path, sizeof(sa.sun_path));
	if (sendto(ip->fd, m->text, m->len, MSG_DONTWAIT,
		   (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EMSGSIZE)
			return -1;
		__atomic_add_fetch(&ip->dropped, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&ip->st.notices_sent, 1, __ATOMIC_RELAXED);
	}
	free(m->text);
	m->text = NULL;
	return 0;
}

int hb_inproc_flush(struct hb_inproc *ip)
{
	struct qmsg batch[256];
	char path[108];
	size_t n = 0, sent = 0, bytes = 0;

	pthread_mutex_lock(&ip->mu);
	if (ip->v && ip->fd >= 0) {
		memcpy(path, ip->v->notice_path, sizeof(path));
		while (n < 256 && ip->qlen) {
			batch[n++] = ip->q[ip->qhead];
			ip->qhead = (ip->qhead + 1) % QUEUE_MAX;
			ip->qlen--;
		}
		ip->inflight = n;
	}
	pthread_mutex_unlock(&ip->mu);
	while (sent < n && !send_one(ip, path, &batch[sent]))
		sent++;
	pthread_mutex_lock(&ip->mu);
	/* what the socket refused goes back to the head, in order, before
	 * what was queued meanwhile */
	for (size_t i = n; i > sent; i--) {
		ip->qhead = (ip->qhead + QUEUE_MAX - 1) % QUEUE_MAX;
		ip->q[ip->qhead] = batch[i - 1];
		ip->qlen++;
	}
	for (size_t i = 0; i < sent; i++)
		bytes += batch[i].len;
	ip->qbytes -= bytes;
	ip->inflight = 0;
	n = ip->qlen;
	pthread_mutex_unlock(&ip->mu);
	return (int)n;
}

/* Give up what waits (stop).  mu held. */
static void queue_drop(struct hb_inproc *ip)
{
	while (ip->qlen) {
		free(ip->q[ip->qhead].text);
		ip->qhead = (ip->qhead + 1) % QUEUE_MAX;
		ip->qlen--;
	}
}

/* ------------------------------------------------------------ refresh */

/* Take v in (mu held): its lease is this plugin's to use only when the
 * daemon leased it to this plugin's nonce.  Returns the view it replaces. */
static struct view *view_take(struct hb_inproc *ip, struct view *v)
{
	struct view *old = ip->v;

	if (v->owner != ip->nonce) {
		ip->lease_lo = 0;
		ip->next_id = 0;
	} else if ((int64_t)v->f.meta.lease_lo != ip->lease_lo) {
		ip->lease_lo = (int64_t)v->f.meta.lease_lo;
		ip->next_id = ip->lease_lo;
	}
	pend_carry(ip, v);
	ip->v = v;
	ip->st.views++;
	return old;
}

/* Ask for a lease (mu held): once a snapshot says where, and again when a
 * job found no id of ours, at most every HELLO_MS. */
static void hello(struct hb_inproc *ip, int64_t now)
{
	char *text;

	if (!ip->v || (ip->hello_ms && !(ip->need_ids &&
					  now - ip->hello_ms >= HELLO_MS)))
		return;
	if (asprintf(&text, "{\"op\":\"hello\",\"nonce\":\"%016" PRIx64 "\"}",
		     ip->nonce) < 0)
		return;
	ip->hello_ms = now;
	ip->need_ids = 0;
	if (notice_room(ip, strlen(text)))
		notice_queue(ip, text, strlen(text));
	else
		free(text);
}

int hb_inproc_refresh(struct hb_inproc *ip)
{
	struct hb_err err = { 0 };
	struct hb_snapfile cur = { 0 };
	struct view *v = NULL, *old = NULL;
	char say[4096 + 800] = "";
	int had, changed, deciding, rc = 0;
	int64_t now = hb_clock_mono_ms();

	/* the file's identity is read under the mutex, looked at without */
	pthread_mutex_lock(&ip->mu);
	had = ip->v != NULL;
	if (had) {
		cur.dev = ip->v->f.dev;
		cur.ino = ip->v->f.ino;
		cur.mtime_ns = ip->v->f.mtime_ns;
		cur.size = ip->v->f.size;
	}
	pthread_mutex_unlock(&ip->mu);
	changed = !had || hb_snapfile_changed(ip->path, &cur);
	/* parsed off the lock: job_submit goes on with the old view */
	if (changed && !(v = view_load(ip->path, ip->daemon_uid, &err)))
		rc = err.code;
	pthread_mutex_lock(&ip->mu);
	if (v) {
		old = view_take(ip, v);
	} else if (rc == HB_ENOENT && ip->v) {
		/* a file that went away takes its view along */
		old = ip->v;
		ip->v = NULL;
		ip->next_id = 0;
		snprintf(say, sizeof(say),
			 "no placement snapshot at %s: jobs stay on Slurm "
			 "until hpcbridged publishes one",
			 ip->path);
	} else if (rc && rc != HB_ENOENT && now - ip->last_warn_ms > 60000) {
		ip->last_warn_ms = now;
		snprintf(say, sizeof(say), "%s: %s", ip->path, err.msg);
	}
	deciding = ip->v && ip->next_id;
	if (deciding && !ip->deciding)
		snprintf(say, sizeof(say),
			 "deciding from placement snapshot %s (version %" PRIu64
			 ", ids %" PRIu64 "-%" PRIu64 ")",
			 ip->path, ip->v->f.meta.version,
			 ip->v->f.meta.lease_lo, ip->v->f.meta.lease_hi);
	ip->deciding = deciding;
	hello(ip, now);
	pthread_mutex_unlock(&ip->mu);
	view_free(old);
	hb_inproc_flush(ip);
	/* Slurm's log is written outside the mutex job_submit takes */
	if (say[0])
		hb_log(rc && rc != HB_ENOENT ? HB_LOG_ERROR : HB_LOG_INFO,
		       "%s", say);
	return rc;
}

static void *thread_main(void *arg)
{
	struct hb_inproc *ip = arg;
	struct timespec ts;

	pthread_mutex_lock(&ip->mu);
	while (!ip->stop) {
		pthread_mutex_unlock(&ip->mu);
		hb_inproc_refresh(ip);
		pthread_mutex_lock(&ip->mu);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* notices waiting (job_submit only queues them, and the
		 * socket holds a few datagrams): soon again */
		ts.tv_nsec += (ip->qlen || ip->busy ? RETRY_MS : TICK_MS) *
			      1000000L;
		ip->busy = ip->qlen > 0;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!ip->stop)
			pthread_cond_timedwait(&ip->cv, &ip->mu, &ts);
	}
	pthread_mutex_unlock(&ip->mu);
	return NULL;
}

int hb_inproc_start(const char *path, uid_t daemon_uid, int thread,
		    struct hb_inproc **out, struct hb_err *err)
{
	struct hb_inproc *ip = calloc(1, sizeof(*ip));
	int one = 8 << 20;

	*out = NULL;
	if (!ip || !(ip->q = calloc(QUEUE_MAX, sizeof(*ip->q))) ||
	    !(ip->pend = calloc(PENDING_MAX, sizeof(*ip->pend)))) {
		if (ip)
			free(ip->q);
		free(ip);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	if (strlen(path) >= sizeof(ip->path)) {
		free(ip->pend);
		free(ip->q);
		free(ip);
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "plugin.snapshot: too long");
	}
	memcpy(ip->path, path, strlen(path) + 1);
	ip->daemon_uid = daemon_uid;
	pthread_mutex_init(&ip->mu, NULL);
	{
		pthread_condattr_t ca;

		/* a clock stepped back must not stop the thread */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ip->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* leases are this plugin's alone: another slurmctld (one that
	 * crashed, a backup that took over) has another nonce */
	if (getrandom(&ip->nonce, sizeof(ip->nonce), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(ip->nonce))
		ip->nonce = (uint64_t)hb_clock_wall_ms() * 1000003u ^
			    (uint64_t)getpid() << 32 ^ (uint64_t)hb_clock_mono_ms();
	if (!ip->nonce)
		ip->nonce = 1;
	ip->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	/* room for a burst of notices (as root, past wmem_max) */
	if (ip->fd >= 0 &&
	    setsockopt(ip->fd, SOL_SOCKET, SO_SNDBUFFORCE, &one, sizeof(one)))
		setsockopt(ip->fd, SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	/* a datagram must fit the send buffer the kernel gave (without
	 * CAP_NET_ADMIN, net.core.wmem_max: 208 KiB by default) */
	{
		int got = 0;
		socklen_t gl = sizeof(got);

		ip->notice_max = NOTICE_MAX;
		if (ip->fd >= 0 &&
		    !getsockopt(ip->fd, SOL_SOCKET, SO_SNDBUF, &got, &gl) &&
		    (size_t)got / 2 - 1024 < ip->notice_max)
			ip->notice_max = (size_t)got / 2 - 1024;
	}
	hb_buf_init(&ip->req, ip->notice_max);
	hb_buf_init(&ip->note, ip->notice_max);
	hb_buf_init(&ip->script, PROXY_SCRIPT_MAX);
	if (thread) {
		/* the snapshot there now, before the first job */
		hb_inproc_refresh(ip);
		if (pthread_create(&ip->thread, NULL, thread_main, ip)) {
			hb_inproc_stop(ip);
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "cannot start the snapshot thread");
		}
		ip->running = 1;
	}
	*out = ip;
	return 0;
}

void hb_inproc_stop(struct hb_inproc *ip)
{
	if (!ip)
		return;
	if (ip->running) {
		pthread_mutex_lock(&ip->mu);
		ip->stop = 1;
		pthread_cond_signal(&ip->cv);
		pthread_mutex_unlock(&ip->mu);
		pthread_join(ip->thread, NULL);
	}
	/* what the daemon does not take now is left to the reconciler */
	hb_inproc_flush(ip);
	pthread_mutex_lock(&ip->mu);
	queue_drop(ip);
	pthread_mutex_unlock(&ip->mu);
	if (ip->fd >= 0)
		close(ip->fd);
	view_free(ip->v);
	pthread_mutex_destroy(&ip->mu);
	pthread_cond_destroy(&ip->cv);
	for (size_t i = 0; i < ip->nowed; i++)
		free(ip->owed[i].account);
	free(ip->owed);
	free(ip->q);
	free(ip->pend);
	hb_buf_free(&ip->req);
	hb_buf_free(&ip->note);
	hb_buf_free(&ip->script);
	free(ip);
}

void hb_inproc_stats(struct hb_inproc *ip, struct hb_inproc_stats *out)
{
	pthread_mutex_lock(&ip->mu);
	*out = ip->st;
	out->queued = ip->qlen;
	out->queued_bytes = ip->qbytes;
	out->dropped = ip->dropped;
	pthread_mutex_unlock(&ip->mu);
}

/* ------------------------------------------------------------ decide */

static const char *target_word(int t)
{
	return t == HB_DECIDE_SLURM  ? "slurm"
	       : t == HB_DECIDE_KUBE ? "kubernetes"
				     : "rejected";
}

/* The decision's notice into out: its fields, then the request (req,
 * JSON text) as it is.  0, HB_ENOMEM or HB_ETOOBIG (past out's cap). */
static int notice_write(struct hb_buf *out, const char *id, uint64_t version,
			const struct hb_place_out *o, const struct hb_buf *req)
{
	struct hb_emit *e = hb_emit_new(HB_EMIT_JSON_COMPACT, out);
	int rc;

	if (!e)
		return HB_ENOMEM;
	hb_emit_obj(e, NULL);
	hb_emit_str(e, "op", "decided");
	hb_emit_str(e, "id", id);
	hb_emit_str(e, "target", target_word(o->target));
	hb_emit_num(e, "snapshot", (double)version);
	hb_emit_str(e, "rule", o->rule);
	hb_emit_str(e, "why", o->why);
	hb_emit_str(e, "reason", o->reason);
	hb_emit_str(e, "explanation", o->explanation);
	hb_emit_str(e, "doc", o->doc_json);
	hb_emit_num(e, "cost_micro", (double)o->cost_micro);
	hb_emit_end(e);
	rc = hb_emit_done(e);
	hb_emit_free(e);
	/* the request's text goes in as it is, as the last member */
	return rc ? rc : hb_doc_append_member(out, "request", req->data,
					      req->len);
}

/* The proxy's script: the exec line, then the request (req). */
static int proxy_script(const struct view *v, const char *id,
			const struct hb_buf *req, struct hb_buf *out)
{
	char line[2 * 4096 + 128];
	int rc;

	if ((rc = hb_rules_proxy_script(&v->cfg, id, line, sizeof(line))))
		return rc;
	/* at once: the line, the payload's mark, the request in base64 */
	(void)hb_buf_reserve(out, strlen(line) + 64 + (req->len + 2) / 3 * 4);
	rc = hb_buf_puts(out, line);
	if (!rc)
		rc = hb_rules_proxy_payload(out, req->data, req->len);
	return rc;
}

/* Apply o to jd (the tag, or the proxy).  0, or an error with jd as it
 * was. */
static int apply(const struct view *v, job_desc_msg_t *jd, const char *id,
		 const struct hb_place_out *o, const struct hb_buf *req,
		 struct hb_buf *script, const struct hb_slurm_alloc *a,
		 struct hb_err *err)
{
	struct hb_plugin_decision d = { 0 };
	struct hb_proxy proxy;
	char ac[160], cm[96];
	int rc;

	/* the estimate charged, so that a decision the daemon rebuilds from
	 * the tag counts against the budget as the notice would have */
	snprintf(ac, sizeof(ac),
		 "hpcbridge:%s target=%s snap=%" PRIu64 " cost=%" PRId64, id,
		 target_word(o->target), v->f.meta.version, o->cost_micro);
	d.id = id;
	d.reason = o->reason;
	d.admin_comment = ac;
	d.time_limit_min = NO_VAL;
	if (o->target == HB_DECIDE_SLURM) {
		d.target = HB_PLUGIN_SLURM;
		return hb_plugin_decision_apply(jd, &d, a, err);
	}
	hb_buf_reset(script);
	if ((rc = proxy_script(v, id, req, script))) {
		return hb_err_set(err, rc, NULL, 0,
				  rc == HB_ETOOBIG
					  ? "the proxy's script would pass %u "
					    "bytes"
					  : "out of memory (%u)",
				  PROXY_SCRIPT_MAX);
	}
	hb_rules_proxy(&v->cfg, hb_rules_time_limit((int64_t)jd->time_limit),
		       &proxy);
	snprintf(cm, sizeof(cm), "hpcbridge:%s kubernetes", id);
	d.target = HB_PLUGIN_KUBERNETES;
	d.partition = proxy.partition;
	d.script = script->data;
	d.comment = cm;
	d.time_limit_min = proxy.time_limit_min == HB_RULES_NO_LIMIT
				   ? NO_VAL
				   : (uint32_t)proxy.time_limit_min;
	d.cpus = proxy.cpus;
	d.mem_mb = proxy.mem_mb;
	return hb_plugin_decision_apply(jd, &d, a, err);
}

/* The decide request for jd (read into dj) as text into req.  0, or
 * HB_ENOMEM / HB_ETOOBIG (past req's cap) with err. */
static int request_write(const job_desc_msg_t *jd,
			 const struct hb_decide_job *dj, struct hb_buf *req,
			 struct hb_err *err)
{
	struct hb_emit *e = hb_emit_new(HB_EMIT_JSON_COMPACT, req);
	int rc = e ? hb_decide_request_emit(e, jd, dj) : HB_ENOMEM;

	if (!rc)
		rc = hb_emit_done(e);
	hb_emit_free(e);
	if (rc == HB_ETOOBIG)
		return hb_err_set(err, rc, NULL, 0,
				  "its request would pass %zu bytes", req->max);
	return rc ? hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory") : 0;
}

/* Decide for jd with ip's view (mu held): 0 with r filled, or a reason
 * in err to leave the job alone. */
static int decide_locked(struct hb_inproc *ip, job_desc_msg_t *jd,
			 const struct hb_slurm_alloc *a, int64_t now_ms,
			 struct hb_inproc_result *r, struct hb_err *err)
{
	struct view *v = ip->v;
	struct hb_decide_job dj;
	struct hb_place_out o = { 0 };
	struct hb_buf *req = &ip->req, *note = &ip->note;
	char *text = NULL;
	char id[32];
	struct owe *owe = NULL;
	int64_t seq;
	int rc, charged = 0;

	if (!v)
		return hb_err_set(err, HB_EUNAVAIL, NULL, 0,
				  "no placement snapshot (is hpcbridged "
				  "running?)");
	if (now_ms > v->f.meta.written_ms + v->f.meta.max_age_ms)
		return hb_err_set(err, HB_EUNAVAIL, NULL, 0,
				  "the placement snapshot is %" PRId64
				  " s old (the daemon is down or stuck)",
				  (now_ms - v->f.meta.written_ms) / 1000);
	if (!ip->next_id || ip->next_id > (int64_t)v->f.meta.lease_hi) {
		ip->need_ids = 1;
		return hb_err_set(err, HB_EUNAVAIL, NULL, 0,
				  "no gateway id of this slurmctld's to give "
				  "(asked the daemon for a lease)");
	}
	/* no name lookup under slurmctld's lock: the uid stands for the
	 * user (the engine reads it for the pilot's sample only; the daemon
	 * records the name) */
	if ((rc = hb_decide_job_read(jd, &dj, err)))
		return rc;
	/* the request as the daemon will read it, from the notice or from
	 * the proxy's script; a notice must fit one datagram */
	hb_buf_reset(req);
	hb_buf_reset(note);
	if ((rc = request_write(jd, &dj, req, err)))
		goto out;
	dj.job.seq = (uint64_t)now_ms;
	dj.job.k8s = v->cluster ? &v->cfg.k8s : NULL;
	if ((rc = hb_place_job(&v->pol, &v->snap, &dj.job, now_ms / 1000,
			       v->note, &o, err)))
		goto out;
	charged = o.cost_micro > 0 && dj.job.account;
	if (charged &&
	    (!(owe = owed_of(ip, dj.job.account)) ||
	     ip->npend == PENDING_MAX ||
	     owe->sum + o.cost_micro > v->allowance)) {
		rc = hb_err_set(err, HB_EUNAVAIL, NULL, 0,
				"account %.64s: the daemon has not yet "
				"counted its last decisions (allowance %" PRId64
				" micro-units)",
				dj.job.account, v->allowance);
		goto out;
	}
	seq = ip->next_id;
	snprintf(id, sizeof(id), "hb-%06" PRId64, seq);
	/* the notice first: a decision the daemon cannot be told of is
	 * not made */
	rc = notice_write(note, id, v->f.meta.version, &o, req);
	if (!rc && !(text = malloc(note->len + 1)))
		rc = HB_ENOMEM;
	if (rc || !notice_room(ip, note->len)) {
		rc = hb_err_set(err, rc == HB_ENOMEM ? rc : HB_EUNAVAIL, NULL,
				0,
				rc == HB_ENOMEM ? "out of memory"
						: "its notice would pass %zu "
						  "bytes, or %zu notices "
						  "wait for the daemon",
				ip->notice_max, ip->qlen);
		goto out;
	}
	if (o.target != HB_DECIDE_REJECT &&
	    (rc = apply(v, jd, id, &o, req, &ip->script, a, err)))
		goto out;
	ip->next_id++;
	if (owe) {
		struct pend *p = &ip->pend[ip->npend++];

		p->seq = seq;
		p->owe = (uint32_t)(owe - ip->owed);
		p->side = o.side;
		p->period = o.period;
		p->cost = o.cost_micro;
		owe->sum += o.cost_micro;
	}
	r->target = o.target == HB_DECIDE_SLURM	 ? HB_PLUGIN_SLURM
		    : o.target == HB_DECIDE_KUBE ? HB_PLUGIN_KUBERNETES
						 : HB_PLUGIN_REJECTED;
	memcpy(r->id, id, sizeof(r->id));
	snprintf(r->reason, sizeof(r->reason), "%s", o.reason);
	snprintf(r->partition, sizeof(r->partition), "%s",
		 jd->partition ? jd->partition : "");
	r->version = v->f.meta.version;
	memcpy(text, note->data, note->len + 1);
	notice_queue(ip, text, note->len);
	text = NULL;
	ip->st.decisions++;
out:
	/* hb_place_job() charged the view; a decision not made (the
	 * allowance, apply() failing) gives the charge back */
	if (rc && charged)
		hb_place_charge(&v->snap, dj.job.account, o.period, o.side,
				(hb_money)-o.cost_micro);
	hb_place_out_free(&o);
	free(text);
	hb_decide_job_free(&dj);
	/* what one huge job grew is not kept */
	if (req->cap > SCRATCH_KEEP)
		hb_buf_free(req);
	if (note->cap > SCRATCH_KEEP)
		hb_buf_free(note);
	if (ip->script.cap > SCRATCH_KEEP)
		hb_buf_free(&ip->script);
	return rc;
}

int hb_inproc_decide(struct hb_inproc *ip, job_desc_msg_t *jd,
		     const struct hb_slurm_alloc *a, int64_t now_ms,
		     struct hb_inproc_result *r, struct hb_err *err)
{
	int rc;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&ip->mu);
	rc = decide_locked(ip, jd, a, now_ms, r, err);
	if (rc)
		ip->st.left++;
	pthread_mutex_unlock(&ip->mu);
	return rc;
}
