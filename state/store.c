/*
 * store.c - the SQLite state store: schema and migrations, jobs,
 * decisions, audit events, and the (append-only) cost ledger.
 *
 * One connection per handle, WAL, synchronous=FULL, foreign keys on,
 * through the store's VFS (walbuf.c), which writes a commit's WAL frames
 * with one call.
 * Every statement is prepared once per handle (persistent) and bound; no
 * value is ever written into SQL text.  Operations made of several
 * statements run in a transaction of their own, or in a savepoint inside
 * the caller's group transaction, so a failed call leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/store.h"
#include "store_int.h"
#include "walbuf.h"

#define JOB_COLS                                                               \
	"id, origin, target, state, \"user\", uid, account, \"partition\", "   \
	"name, slurm_job_id, k8s_namespace, k8s_name, k8s_uid, exit_code, "    \
	"reason, created_ms, updated_ms, jobspec, started_ms, ended_ms, "      \
	"(SELECT sum(amount_micros) FROM ledger WHERE ledger.job_id = jobs.id)"
#define STATES_IN "state IN (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
_Static_assert(HB__JOB_STATE_COUNT == 9, "STATES_IN binds one per state");

enum stmt_id {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_SAVEPOINT,
	S_RELEASE,
	S_ROLLBACK_TO,
	S_SEQ_GET,
	S_SEQ_SET,
	S_JOB_INSERT,
	S_JOB_GET,
	S_JOB_BY_SLURM,
	S_JOB_STATE,
	S_JOB_SET_STATE,
	S_JOB_SET_TIMES,
	S_JOB_SET_SLURM,
	S_JOB_SET_K8S,
	S_JOB_SET_TARGET,
	S_JOB_LIST,
	S_JOB_LIST_UID,
	S_JOB_LIST_STATES,
	S_JOB_COUNT_STATES,
	S_JOB_LIST_UID_STATES,
	S_DECISION_INSERT,
	S_DECISION_GET,
	S_EVENT_INSERT,
	S_EVENT_LIST,
	S_EVENT_LIST_JOB,
	S_SPEND_LIST,
	S_RESERVATION,
	NSTMT
};

static const char *const stmt_sql[NSTMT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_SAVEPOINT] = "SAVEPOINT hb_op",
	[S_RELEASE] = "RELEASE hb_op",
	[S_ROLLBACK_TO] = "ROLLBACK TO hb_op",
	[S_SEQ_GET] = "SELECT value FROM seq WHERE name = 'job'",
	[S_SEQ_SET] = "UPDATE seq SET value = ?1 WHERE name = 'job'",
	[S_JOB_INSERT] =
		"INSERT INTO jobs (id, seq, origin, target, state, \"user\", "
		"uid, account, \"partition\", name, slurm_job_id, "
		"k8s_namespace, k8s_name, k8s_uid, exit_code, reason, "
		"created_ms, updated_ms, jobspec) VALUES (?1, ?2, ?3, ?4, ?5, "
		"?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17, "
		"?18)",
	[S_JOB_GET] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?1",
	[S_JOB_BY_SLURM] =
		"SELECT " JOB_COLS " FROM jobs WHERE slurm_job_id = ?1",
	[S_JOB_STATE] = "SELECT state FROM jobs WHERE id = ?1",
	[S_JOB_SET_STATE] =
		"UPDATE jobs SET state = ?2, exit_code = coalesce(?3, "
		"exit_code), reason = coalesce(?4, reason), updated_ms = ?5, "
		"started_ms = coalesce(started_ms, CASE WHEN ?2 IN ('running', "
		"'suspended', 'completing') THEN ?5 END), ended_ms = "
		"coalesce(ended_ms, CASE WHEN ?2 IN ('succeeded', 'failed', "
		"'cancelled', 'lost') THEN ?5 END) WHERE id = ?1",
	[S_JOB_SET_TIMES] =
		"UPDATE jobs SET started_ms = coalesce(?2, started_ms), "
		"ended_ms = coalesce(?3, ended_ms), updated_ms = ?4 WHERE id = ?1 "
		"RETURNING started_ms, ended_ms",
	[S_JOB_SET_SLURM] = "UPDATE jobs SET slurm_job_id = ?2, "
			    "updated_ms = ?3 WHERE id = ?1",
	[S_JOB_SET_K8S] = "UPDATE jobs SET k8s_namespace = ?2, k8s_name = ?3, "
			  "k8s_uid = ?4, updated_ms = ?5 WHERE id = ?1",
	[S_JOB_SET_TARGET] = "UPDATE jobs SET target = ?2, updated_ms = ?3 "
			     "WHERE id = ?1 AND target IS NOT ?2",
	[S_JOB_LIST] = "SELECT " JOB_COLS " FROM jobs "
		       "ORDER BY seq DESC LIMIT ?1",
	[S_JOB_LIST_UID] = "SELECT " JOB_COLS " FROM jobs WHERE uid = ?11 "
			   "ORDER BY seq DESC LIMIT ?1",
	[S_JOB_LIST_STATES] = "SELECT " JOB_COLS " FROM jobs WHERE " STATES_IN
			      " ORDER BY seq DESC LIMIT ?1",
	[S_JOB_COUNT_STATES] = "SELECT target, state, count(*) FROM jobs "
			       "WHERE " STATES_IN " GROUP BY target, state",
	[S_JOB_LIST_UID_STATES] =
		"SELECT " JOB_COLS " FROM jobs WHERE uid = ?11 AND " STATES_IN
		" ORDER BY seq DESC LIMIT ?1",
	[S_DECISION_INSERT] = "INSERT INTO decisions (job_id, at_ms, target, "
			      "inputs, explanation, policy) VALUES (?1, ?2, "
			      "?3, ?4, ?5, ?6)",
	[S_DECISION_GET] = "SELECT id, job_id, at_ms, target, inputs, "
			   "explanation, policy FROM decisions WHERE job_id = "
			   "?1 ORDER BY id DESC LIMIT 1",
	[S_EVENT_INSERT] = "INSERT INTO events (at_ms, actor_uid, actor_user, "
			   "peer, action, job_id, detail) VALUES (?1, ?2, ?3, "
			   "?4, ?5, ?6, ?7)",
	[S_EVENT_LIST] = "SELECT id, at_ms, actor_uid, actor_user, peer, "
			 "action, job_id, detail FROM events WHERE id > ?1 "
			 "ORDER BY id LIMIT ?2",
	[S_EVENT_LIST_JOB] = "SELECT id, at_ms, actor_uid, actor_user, peer, "
			     "action, job_id, detail FROM events WHERE "
			     "job_id = ?3 AND id > ?1 ORDER BY id LIMIT ?2",
	/* What accounts have spent: the ledger's actuals, net of reversals
	 * (per job, side and period, dated by the period's end), and for
	 * each decided job not metered, the cost its latest placement
	 * document estimated for the side chosen (a reservation); with
	 * metering (?2), only while the job is not final: one that ended
	 * unmetered (cancelled before it ran) holds nothing. */
	[S_SPEND_LIST] =
		"SELECT account, side, period_end_ms, sum(amount_micros), 1 FROM "
		"ledger WHERE period_end_ms >= ?1 AND account IS NOT NULL "
		"GROUP BY job_id, side, period_end_ms, account "
		"UNION ALL "
		"SELECT j.account, d.target, d.at_ms, (SELECT "
		"json_extract(a.value, '$.cost_micro') FROM "
		"json_each(d.inputs, '$.placement.alternatives') AS a WHERE "
		"json_extract(a.value, '$.side') = d.target) AS cost, 0 "
		"FROM jobs AS j JOIN decisions AS d ON d.id = (SELECT max(id) "
		"FROM decisions WHERE job_id = j.id) "
		"WHERE (?2 = 0 OR j.state NOT IN ('succeeded', 'failed', "
		"'cancelled', 'lost')) AND d.at_ms >= ?1 AND d.target <> 'rejected' AND "
		"j.account IS NOT NULL AND json_valid(d.inputs) AND NOT EXISTS "
		"(SELECT 1 FROM ledger WHERE ledger.job_id = j.id)",
	[S_RESERVATION] =
		"SELECT j.account, d.target, d.at_ms, (SELECT "
		"json_extract(a.value, '$.cost_micro') FROM "
		"json_each(d.inputs, '$.placement.alternatives') AS a WHERE "
		"json_extract(a.value, '$.side') = d.target) AS cost, 0 "
		"FROM jobs AS j JOIN decisions AS d ON d.id = (SELECT max(id) "
		"FROM decisions WHERE job_id = j.id) WHERE j.id = ?1 AND "
		"j.account IS NOT NULL AND json_valid(d.inputs)",
};

struct hb_store {
	sqlite3 *db;
	char *path;
	int version;
	/* An explicit (group) transaction is open; lost: SQLite abandoned
	 * it after an error, so everything until commit/rollback fails. */
	int in_tx, tx_lost;
	int64_t (*now_ms)(void *);
	void *clock_arg;
	int wal_pages, ckpt_pages; /* see hb_store_set_autocheckpoint() */
	int wal_fd; /* deferred sync: a descriptor of the WAL, else -1 */
	int nosync; /* this commit leaves its sync to hb_store_sync() */
	/* In a write transaction: seq's value, read on first use
	 * (seq_read), and the last job number handed out since.  The write
	 * lock is held, so no one else moves seq meanwhile. */
	int64_t seq_base, seq_last;
	int seq_read;
	int op_savepoint; /* the call under way took a savepoint */
	/* The file opened, as SQLite resolved its name, and its identity:
	 * set at open, never changed (hb_store_reopen() reads them). */
	char *file;
	dev_t dev;
	ino_t ino;
	sqlite3_stmt *stmt[NSTMT];
	sqlite3_stmt *slot[HB_SI_NSLOT]; /* the ledger's (store_int.h) */
	int readonly; /* hb_store_open_readonly() */
	void (*end_hook)(void *, const char *); /* hb_store_set_end_hook() */
	void *end_arg;
};

/* --- names ------------------------------------------------------------ */

static const char *const state_names[HB__JOB_STATE_COUNT] = {
	"pending",   "queued", "running",   "completing",
	"succeeded", "failed", "cancelled", "lost",	 "suspended"
};
/* The text column "origin" holds a job's entry point. */
static const char *const entry_names[HB__ENTRY_COUNT] = { "slurm", "cli",
							  "kubernetes" };
static const char *const target_names[HB__TARGET_COUNT] = { "pending", "slurm",
							    "kubernetes",
							    "rejected" };

/* names[v], or "unknown" for a v past the n names. */
static const char *name_of(const char *const *names, int n, int v)
{
	return v >= 0 && v < n ? names[v] : "unknown";
}

/* The index of s among the n names, or -1. */
static int index_of(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

const char *hb_job_state_name(enum hb_job_state s)
{
	return name_of(state_names, HB__JOB_STATE_COUNT, (int)s);
}

int hb_job_state_parse(const char *name)
{
	return index_of(state_names, HB__JOB_STATE_COUNT, name);
}

const char *hb_job_target_name(enum hb_job_target t)
{
	return name_of(target_names, HB__TARGET_COUNT, (int)t);
}

int hb_job_target_parse(const char *name)
{
	return index_of(target_names, HB__TARGET_COUNT, name);
}

const char *hb_job_entry_name(enum hb_job_entry e)
{
	return name_of(entry_names, HB__ENTRY_COUNT, (int)e);
}

int hb_job_entry_parse(const char *name)
{
	return index_of(entry_names, HB__ENTRY_COUNT, name);
}

static int state_ok(int s)
{
	return s >= 0 && s < HB__JOB_STATE_COUNT;
}

static int terminal(int s)
{
	return s >= HB_JOB_SUCCEEDED && s <= HB_JOB_LOST;
}

/* Forward along pending < queued < running = suspended < completing <
 * terminal. */
static int rank(int s)
{
	if (s == HB_JOB_SUSPENDED)
		return HB_JOB_RUNNING;
	return terminal(s) ? HB_JOB_SUCCEEDED : s;
}

static int allowed(int from, int to)
{
	if (from == to)
		return 1;
	if (terminal(from))
		return 0;
	/* Preempted, and admitted again: only a running job is suspended;
	 * a suspended one goes on as a running one would. */
	if (to == HB_JOB_SUSPENDED)
		return from == HB_JOB_RUNNING;
	if (from == HB_JOB_SUSPENDED && to == HB_JOB_RUNNING)
		return 1;
	if (rank(to) > rank(from))
		return 1;
	/* A requeue. */
	return to == HB_JOB_QUEUED &&
	       (from == HB_JOB_RUNNING || from == HB_JOB_SUSPENDED ||
		from == HB_JOB_COMPLETING);
}

int hb_store_state_terminal(enum hb_job_state s)
{
	return state_ok((int)s) && terminal((int)s);
}

int hb_store_state_allowed(enum hb_job_state from, enum hb_job_state to)
{
	return state_ok((int)from) && state_ok((int)to) &&
	       allowed((int)from, (int)to);
}

/* --- errors ----------------------------------------------------------- */

static int map_sqlite(int xrc)
{
	switch (xrc) {
	case SQLITE_NOMEM:
		return HB_ENOMEM;
	case SQLITE_TOOBIG:
		return HB_ETOOBIG;
	case SQLITE_CONSTRAINT_UNIQUE:
	case SQLITE_CONSTRAINT_PRIMARYKEY:
		return HB_EEXIST;
	case SQLITE_CONSTRAINT_FOREIGNKEY:
		return HB_ENOENT;
	case SQLITE_CONSTRAINT_CHECK:
	case SQLITE_CONSTRAINT_NOTNULL:
	case SQLITE_CONSTRAINT_DATATYPE:
		return HB_EINVAL;
	case SQLITE_CONSTRAINT_TRIGGER:
		return HB_EPERM;
	default:
		return HB_ESTORE;
	}
}

/* Record SQLite's last error on st for operation op. */
static int db_fail(struct hb_store *st, const char *op, struct hb_err *err)
{
	int xrc = sqlite3_extended_errcode(st->db);
	int code = map_sqlite(xrc);

	hb_err_set(err, code, st->path, 0, "%s: %s (%s)", op,
		   sqlite3_errmsg(st->db), sqlite3_errstr(xrc));
	return code;
}

static int fail(struct hb_store *st, struct hb_err *err, int code,
		const char *op, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int fail(struct hb_store *st, struct hb_err *err, int code,
		const char *op, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(err, code, st ? st->path : NULL, 0, "%s: %s", op,
			  msg);
}

/* A string argument: required ones non-empty, all within max bytes. */
static int check_str(struct hb_store *st, struct hb_err *err, const char *op,
		     const char *field, const char *s, size_t max, int required)
{
	if (!s)
		return required ? fail(st, err, HB_EINVAL, op, "%s: required",
				       field)
				: 0;
	if (required && !*s)
		return fail(st, err, HB_EINVAL, op, "%s: empty", field);
	if (strnlen(s, max + 1) > max)
		return fail(st, err, HB_ETOOBIG, op,
			    "%s: longer than %zu bytes", field, max);
	return 0;
}

/* An optional JSON text of at most max bytes. */
static int check_json(struct hb_store *st, struct hb_err *err,
		      const char *op, const char *field, const char *s,
		      size_t max)
{
	const char *why;
	size_t at = 0;
	int rc = check_str(st, err, op, field, s, max, 0);

	if (rc || !s)
		return rc;
	why = hb_json_check(s, strlen(s), &at);
	if (why)
		return fail(st, err, HB_EINVAL, op,
			    "%s: not JSON: %s at byte %zu", field, why, at);
	return 0;
}

/* A value of one of the enums, which has n values: HB_EINVAL naming the
 * field when v is none of them (what lists them). */
static int check_enum(struct hb_store *st, struct hb_err *err, const char *op,
		      const char *field, int v, int n, const char *what)
{
	if (v >= 0 && v < n)
		return 0;
	return fail(st, err, HB_EINVAL, op, "%s: unknown value %d (%s)", field,
		    v, what);
}

/* --- statements ------------------------------------------------------- */

/* The cached statement id, prepared on first use.  A statement still being
 * stepped (a callback calling back into a listing) is HB_ESTATE. */
static int prep(struct hb_store *st, enum stmt_id id, sqlite3_stmt **out,
		const char *op, struct hb_err *err)
{
	sqlite3_stmt *s = st->stmt[id];

	*out = NULL;
	if (st->tx_lost && id != S_ROLLBACK)
		return fail(st, err, HB_ESTORE, op,
			    "the transaction was abandoned after an earlier "
			    "error; roll it back");
	if (!s) {
		if (sqlite3_prepare_v3(st->db, stmt_sql[id], -1,
				       SQLITE_PREPARE_PERSISTENT, &s, NULL))
			return db_fail(st, op, err);
		st->stmt[id] = s;
	} else if (sqlite3_stmt_busy(s)) {
		return fail(st, err, HB_ESTATE, op,
			    "called again from its own callback");
	}
	*out = s;
	return 0;
}

/*
 * Bind values in order from index 1: 't' text (NULL binds NULL), 'i'
 * int64_t, 'n' int64_t that binds NULL when negative, '-' skips an index.
 */
static int bind(struct hb_store *st, sqlite3_stmt *s, const char *op,
		struct hb_err *err, const char *fmt, ...)
{
	va_list ap;
	int rc = SQLITE_OK, idx = 1;

	va_start(ap, fmt);
	for (const char *f = fmt; *f && rc == SQLITE_OK; f++, idx++) {
		const char *t;
		int64_t v;

		switch (*f) {
		case 't':
			t = va_arg(ap, const char *);
			rc = t ? sqlite3_bind_text(s, idx, t, -1, SQLITE_STATIC)
			       : sqlite3_bind_null(s, idx);
			break;
		case 'i':
			v = va_arg(ap, int64_t);
			rc = sqlite3_bind_int64(s, idx, v);
			break;
		case 'n':
			v = va_arg(ap, int64_t);
			rc = v < 0 ? sqlite3_bind_null(s, idx)
				   : sqlite3_bind_int64(s, idx, v);
			break;
		default:
			break;
		}
	}
	va_end(ap);
	if (rc != SQLITE_OK) {
		sqlite3_reset(s);
		return db_fail(st, op, err);
	}
	return 0;
}

/* Step; SQLITE_ROW and SQLITE_DONE come back, an error becomes HB_E*. */
static int step(struct hb_store *st, sqlite3_stmt *s, const char *op,
		struct hb_err *err)
{
	int rc = sqlite3_step(s);

	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	rc = db_fail(st, op, err);
	sqlite3_reset(s);
	/* Some errors (I/O, full disk, busy) make SQLite roll back the
	 * whole transaction: the group is gone, say so until it ends. */
	if (st->in_tx && sqlite3_get_autocommit(st->db))
		st->tx_lost = 1;
	return rc;
}

/* Run a statement without results to its end and reset it. */
static int run(struct hb_store *st, sqlite3_stmt *s, const char *op,
	       struct hb_err *err)
{
	int rc = step(st, s, op, err);

	if (rc < 0)
		return rc;
	sqlite3_reset(s);
	return 0;
}

static int exec_stmt(struct hb_store *st, enum stmt_id id, const char *op,
		     struct hb_err *err)
{
	sqlite3_stmt *s;
	int rc = prep(st, id, &s, op, err);

	return rc ? rc : run(st, s, op, err);
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

/* Column i of s, one of the n names (field: the column; id: the job): its
 * index, or -1 with HB_ESTORE in err for a name this build does not know
 * (written by hand, or by a later version: nothing this store writes). */
static int col_enum(struct hb_store *st, sqlite3_stmt *s, int i,
		    const char *const *names, int n, const char *field,
		    const char *id, const char *op, struct hb_err *err)
{
	const char *v = col_text(s, i);
	int x = index_of(names, n, v);

	if (x < 0)
		fail(st, err, HB_ESTORE, op, "%s has an unknown %s '%.64s'", id,
		     field, v ? v : "");
	return x;
}

static void copy_id(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int64_t col_opt(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL
		       ? -1
		       : sqlite3_column_int64(s, i);
}

static int64_t now(struct hb_store *st)
{
	struct timespec ts;

	if (st->now_ms)
		return st->now_ms(st->clock_arg);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- transactions ----------------------------------------------------- */

/* Make one API call atomic: its own transaction, or a savepoint inside
 * the caller's group.  A call whose only write is one statement
 * (one_write) needs no savepoint there: SQLite undoes a statement that
 * fails by itself, and the savepoint's copies of every page it touches
 * cost a decision some 5,000 instructions. */
static int op_begin(struct hb_store *st, int one_write, const char *op,
		    struct hb_err *err)
{
	st->op_savepoint = st->in_tx && !one_write;
	if (st->in_tx && one_write)
		return 0;
	return exec_stmt(st, st->in_tx ? S_SAVEPOINT : S_BEGIN, op, err);
}

/* Commit the open transaction, job numbers handed out included; a
 * failed commit keeps nothing. */
static int commit(struct hb_store *st, const char *op, struct hb_err *err)
{
	sqlite3_stmt *s;
	int rc = 0;

	if (st->seq_read && st->seq_last > st->seq_base) {
		rc = prep(st, S_SEQ_SET, &s, op, err);
		if (!rc)
			rc = bind(st, s, op, err, "i", st->seq_last);
		if (!rc)
			rc = run(st, s, op, err);
	}
	if (!rc) {
		hb_walbuf_begin(st->db, st->nosync);
		rc = exec_stmt(st, S_COMMIT, op, err);
		hb_walbuf_end(st->db, rc == 0);
	}
	if (rc && !sqlite3_get_autocommit(st->db))
		exec_stmt(st, S_ROLLBACK, op, NULL);
	st->seq_read = 0;
	return rc;
}

/* End what op_begin started: keep it when rc is 0, else undo it.  Returns
 * rc, or the commit's error. */
static int op_end(struct hb_store *st, int rc, const char *op,
		  struct hb_err *err)
{
	if (st->in_tx) {
		if (st->tx_lost || !st->op_savepoint)
			return rc;
		if (rc)
			exec_stmt(st, S_ROLLBACK_TO, op, NULL);
		int r = exec_stmt(st, S_RELEASE, op, err);
		return rc ? rc : r;
	}
	if (!rc)
		return commit(st, op, err);
	if (!sqlite3_get_autocommit(st->db))
		exec_stmt(st, S_ROLLBACK, op, NULL);
	st->seq_read = 0;
	return rc;
}

int hb_store_begin(struct hb_store *st, struct hb_err *err)
{
	int rc;

	if (st->in_tx)
		return fail(st, err, HB_ESTATE, "begin",
			    "a transaction is already open");
	rc = exec_stmt(st, S_BEGIN, "begin", err);
	if (!rc)
		st->in_tx = 1;
	return rc;
}

int hb_store_commit(struct hb_store *st, struct hb_err *err)
{
	double t0;
	int rc;

	if (!st->in_tx)
		return fail(st, err, HB_ESTATE, "commit",
			    "no transaction is open");
	if (st->tx_lost) {
		st->in_tx = st->tx_lost = 0;
		st->seq_read = 0;
		return fail(st, err, HB_ESTORE, "commit",
			    "the transaction was abandoned after an earlier "
			    "error; nothing was kept");
	}
	/* A failed commit keeps nothing: the caller told nobody yet. */
	t0 = hb_metrics_now();
	rc = commit(st, "commit", err);
	hb_metrics_store_commit(hb_metrics_now() - t0);
	st->in_tx = st->tx_lost = 0;
	return rc;
}

int hb_store_rollback(struct hb_store *st)
{
	int rc = 0;

	if (!st->in_tx)
		return 0;
	st->tx_lost = 0;
	if (!sqlite3_get_autocommit(st->db))
		rc = exec_stmt(st, S_ROLLBACK, "rollback", NULL);
	st->in_tx = 0;
	st->seq_read = 0;
	return rc;
}

/* --- open, migrate, close -------------------------------------------- */

/* The integer a PRAGMA query returns. */
static int pragma_int(struct hb_store *st, const char *sql, int *val,
		      const char *op, struct hb_err *err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL))
		return db_fail(st, op, err);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*val = sqlite3_column_int(s, 0);
		rc = 0;
	} else {
		rc = db_fail(st, op, err);
	}
	sqlite3_finalize(s);
	return rc;
}

static int exec_sql(struct hb_store *st, const char *sql, const char *op,
		    struct hb_err *err)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(st, op, err);
	return 0;
}

static int set_wal(struct hb_store *st, struct hb_err *err)
{
	sqlite3_stmt *s = NULL;
	const char *mode;
	int rc;

	if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s,
			       NULL))
		return db_fail(st, "open: journal_mode", err);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		rc = db_fail(st, "open: journal_mode", err);
	} else {
		mode = col_text(s, 0);
		rc = 0;
		if (!mode || strcmp(mode, "wal"))
			rc = fail(st, err, HB_ESTORE, "open",
				  "cannot use WAL (journal_mode stays "
				  "'%.32s'); the store needs a local "
				  "filesystem",
				  mode ? mode : "?");
	}
	sqlite3_finalize(s);
	return rc;
}

/* Apply migrations[from..] one transaction each. */
static int migrate(struct hb_store *st, struct hb_err *err)
{
	char sql[64], op[64];
	int v, bad_fk = 0, rc = 0;

	for (v = st->version; v < HB_STORE_SCHEMA_VERSION; v++) {
		snprintf(op, sizeof(op), "migration to schema version %d",
			 v + 1);
		rc = exec_sql(st, "BEGIN IMMEDIATE", op, err);
		if (rc)
			return rc;
		/* Another process may have migrated while we waited. */
		rc = pragma_int(st, "PRAGMA user_version", &st->version, op,
				err);
		if (rc)
			goto out;
		if (st->version > v) {
			rc = exec_sql(st, "COMMIT", op, err);
			if (rc)
				goto out;
			v = st->version - 1;
			continue;
		}
		rc = exec_sql(st, hb_si_migrations[v], op, err);
		if (rc)
			goto out;
		/* Foreign keys are off while migrating (a table rebuild
		 * needs it): check them all before committing. */
		rc = pragma_int(st,
				"SELECT count(*) FROM pragma_foreign_key_check",
				&bad_fk, op, err);
		if (!rc && bad_fk)
			rc = fail(st, err, HB_ESTORE, op,
				  "%d rows break a foreign key; nothing was "
				  "changed",
				  bad_fk);
		if (rc)
			goto out;
		/* PRAGMA takes no parameters: the version is our own
		 * integer. */
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		rc = exec_sql(st, sql, op, err);
		if (!rc && v == 0) {
			snprintf(sql, sizeof(sql), "PRAGMA application_id = %d",
				 HB_STORE_APP_ID);
			rc = exec_sql(st, sql, op, err);
		}
		if (!rc)
			rc = exec_sql(st, "COMMIT", op, err);
		if (rc)
			goto out;
		st->version = v + 1;
	}
	return 0;
out:
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* --- checkpoints and syncs --------------------------------------------- */

/*
 * A failed fdatasync of the WAL is the end: Linux may already have marked
 * the pages it could not write clean, and reports the error once, so no
 * later sync can say whether a commit is on disk, and committed changes
 * cannot be taken back.  The process stops (as PostgreSQL does); on the
 * next start SQLite recovers the WAL up to its last good frame and the
 * daemon reconciles from there.
 */
static void sync_wal(const struct hb_store *st)
{
	if (fdatasync(st->wal_fd))
		hb_walbuf_fatal(st->path, "fdatasync", errno);
}

/* After each commit (in place of SQLite's own hook, which does the same
 * inline checkpoint, at a fixed limit).  Never call
 * sqlite3_wal_autocheckpoint() or PRAGMA wal_autocheckpoint on a store's
 * connection: either replaces this hook, and with it the end of a
 * nosync commit's skipped sync. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct hb_store *st = arg;

	st->wal_pages = pages;
	/* The commit is published: a checkpoint's syncs are real ones. */
	hb_walbuf_end(db, 1);
	if (st->ckpt_pages > 0 && pages >= st->ckpt_pages)
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
					  NULL, NULL);
	return SQLITE_OK;
}

void hb_store_set_autocheckpoint(struct hb_store *st, int pages)
{
	st->ckpt_pages = pages > 0 ? pages : 0;
}

int hb_store_wal_pages(const struct hb_store *st)
{
	return st->wal_pages;
}

int hb_store_checkpoint(struct hb_store *st, int *left, struct hb_err *err)
{
	int log = 0, done = 0;
	int rc = sqlite3_wal_checkpoint_v2(st->db, "main",
					   SQLITE_CHECKPOINT_PASSIVE, &log,
					   &done);

	if (rc == SQLITE_BUSY) {
		/* another handle is checkpointing: it does the work */
		if (left)
			*left = -1;
		return 0;
	}
	if (rc != SQLITE_OK)
		return db_fail(st, "checkpoint", err);
	if (left)
		*left = log > done ? log - done : 0;
	return 0;
}

/* Before SQLite starts: no global memory statistics, which take a
 * process-wide mutex on every allocation (nothing here reads them).
 * Refused (harmlessly) if the process already started SQLite. */
static void sqlite_setup(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int hb_store_defer_sync(struct hb_store *st, struct hb_err *err)
{
	const char *wal;
	int fd;

	if (st->wal_fd >= 0)
		return 0;
	if (st->in_tx)
		return fail(st, err, HB_ESTATE, "defer_sync",
			    "a transaction is open");
	/* The WAL SQLite writes: beside the real file when the path is a
	 * symbolic link.  SQLite made it when the connection first read the
	 * file, and keeps it (same inode) while any connection is open. */
	wal = sqlite3_filename_wal(sqlite3_db_filename(st->db, "main"));
	if (!wal || !*wal)
		return fail(st, err, HB_ESTORE, "defer_sync",
			    "SQLite names no write-ahead log");
	fd = open(wal, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(st, err, HB_EIO, "defer_sync", "%s: %s", wal,
			    strerror(errno));
	st->wal_fd = fd;
	return 0;
}

int hb_store_commit_nosync(struct hb_store *st, struct hb_err *err)
{
	int rc;

	st->nosync = st->wal_fd >= 0;
	rc = hb_store_commit(st, err);
	st->nosync = 0;
	return rc;
}

void hb_store_sync(const struct hb_store *st)
{
	/* st->wal_fd only: another thread may be using the rest of st */
	if (st->wal_fd >= 0)
		sync_wal(st);
}

/*
 * The store holds every user's script and environment: its files are
 * the owner's alone.  SQLite gives the -wal and -shm files the mode of
 * the database file, so a new database file is made here, 0600 and not
 * through a symlink (O_EXCL), before SQLite opens it.  An existing one of
 * ours left readable by others (older versions made it 0644) is
 * tightened, and so are its -wal and -shm.  Whatever cannot be opened
 * here is left for SQLite to report.
 */
static int private_file(const char *path, int create, struct hb_err *err)
{
	struct stat sb;
	int fd = -1;

	if (create)
		fd = open(path,
			  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 077) &&
	    sb.st_uid == geteuid() && fchmod(fd, sb.st_mode & 0700)) {
		close(fd);
		return hb_err_set(err, HB_ESTORE, path, 0, "chmod: %s",
				  strerror(errno));
	}
	close(fd);
	return 0;
}

static int private_files(const char *path, struct hb_err *err)
{
	static const char *const sfx[] = { "-wal", "-shm" };
	char side[4096];
	int rc = private_file(path, 1, err);

	for (size_t i = 0; !rc && i < 2; i++) {
		if (snprintf(side, sizeof(side), "%s%s", path, sfx[i]) >=
		    (int)sizeof(side))
			return 0; /* SQLite says so */
		rc = private_file(side, 0, err);
	}
	return rc;
}

/* open_store()'s modes: an existing file, created if missing, read only. */
enum { OPEN_EXISTING, OPEN_CREATE, OPEN_RO };

static int open_store(const char *path, int create, struct hb_store **out,
		      struct hb_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	struct hb_store *st = NULL;
	struct stat sb;
	int rc, appid = 0;

	*out = NULL;
	if (!path || !*path)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "store open: path: required");
	pthread_once(&once, sqlite_setup);
	if (create == OPEN_CREATE && (rc = private_files(path, err)))
		return rc;
	st = calloc(1, sizeof(*st));
	if (st)
		st->wal_fd = -1;
	if (!st || !(st->path = strdup(path))) {
		rc = hb_err_set(err, HB_ENOMEM, path, 0, "open: out of memory");
		goto out;
	}
	st->readonly = create == OPEN_RO;
	rc = sqlite3_open_v2(path, &st->db,
			     (st->readonly ? SQLITE_OPEN_READONLY
					   : SQLITE_OPEN_READWRITE) |
				     (create == OPEN_CREATE ? SQLITE_OPEN_CREATE
							    : 0) |
				     SQLITE_OPEN_NOMUTEX |
				     SQLITE_OPEN_EXRESCODE,
			     hb_walbuf_vfs());
	if (rc != SQLITE_OK) {
		if (!st->db) {
			rc = hb_err_set(err, HB_ENOMEM, path, 0,
					"open: out of memory");
			goto out;
		}
		rc = db_fail(st, "open", err);
		goto out;
	}
	sqlite3_extended_result_codes(st->db, 1);
	if (!(st->file = strdup(sqlite3_db_filename(st->db, "main")))) {
		rc = hb_err_set(err, HB_ENOMEM, path, 0, "open: out of memory");
		goto out;
	}
	if (stat(st->file, &sb)) {
		rc = fail(st, err, HB_ESTORE, "open", "%s: %s", st->file,
			  strerror(errno));
		goto out;
	}
	st->dev = sb.st_dev;
	st->ino = sb.st_ino;
	sqlite3_busy_timeout(st->db, HB_STORE_BUSY_MS);
	st->ckpt_pages = 1000; /* SQLite's default */
	sqlite3_wal_hook(st->db, wal_hook, st);

	/* Read before writing anything: a file we cannot understand is
	 * left exactly as it was. */
	rc = pragma_int(st, "PRAGMA application_id", &appid, "open", err);
	if (!rc)
		rc = pragma_int(st, "PRAGMA user_version", &st->version, "open",
				err);
	if (rc)
		goto out;
	if (appid != 0 && appid != HB_STORE_APP_ID) {
		rc = fail(st, err, HB_ESTORE, "open",
			  "not an hpcbridge store (application_id 0x%08x)",
			  (unsigned)appid);
		goto out;
	}
	if (st->version < 0) {
		rc = fail(st, err, HB_ESTORE, "open",
			  "schema version %d is not one of hpcbridge's",
			  st->version);
		goto out;
	}
	if (st->version > HB_STORE_SCHEMA_VERSION) {
		rc = fail(st, err, HB_ESTORE, "open",
			  "schema version %d is newer than this build's (%d): "
			  "refusing to open it; run a newer hpcbridge",
			  st->version, HB_STORE_SCHEMA_VERSION);
		goto out;
	}
	if (st->readonly) {
		/* nothing is written: an older file is the daemon's to
		 * upgrade (a version-0 file has none of our tables) */
		if (st->version < HB_STORE_SCHEMA_VERSION)
			rc = fail(st, err, HB_ESTORE, "open",
				  "schema version %d is older than this "
				  "build's (%d): hpcbridged upgrades it when "
				  "it next starts",
				  st->version, HB_STORE_SCHEMA_VERSION);
		if (rc)
			goto out;
		*out = st;
		return 0;
	}
	rc = set_wal(st, err);
	if (!rc)
		rc = exec_sql(st, "PRAGMA synchronous = FULL", "open", err);
	/* off while migrating, whatever SQLite's build defaults to: a table
	 * rebuild needs it (migrate() checks the keys itself) */
	if (!rc)
		rc = exec_sql(st, "PRAGMA foreign_keys = OFF", "open", err);
	if (!rc)
		rc = migrate(st, err);
	if (!rc)
		rc = exec_sql(st, "PRAGMA foreign_keys = ON", "open", err);
	if (rc)
		goto out;
	*out = st;
	return 0;
out:
	hb_store_close(st);
	return rc;
}

int hb_store_open(const char *path, struct hb_store **out, struct hb_err *err)
{
	return open_store(path, OPEN_CREATE, out, err);
}

int hb_store_open_readonly(const char *path, struct hb_store **out,
			   struct hb_err *err)
{
	return open_store(path, OPEN_RO, out, err);
}

int hb_store_reopen(const struct hb_store *st, struct hb_store **out,
		    struct hb_err *err)
{
	struct hb_store *o = NULL;
	struct stat sb;
	int rc;

	*out = NULL;
	/* Looked at before SQLite reads it (and its WAL), and again after,
	 * in case it changed in between. */
	if (stat(st->file, &sb))
		return hb_err_set(err, HB_ESTORE, st->path, 0,
				  "reopen: %s: %s (moved since it was opened?)",
				  st->file, strerror(errno));
	if (sb.st_dev == st->dev && sb.st_ino == st->ino &&
	    (rc = open_store(st->file, OPEN_EXISTING, &o, err)))
		return rc;
	if (!o || o->dev != st->dev || o->ino != st->ino) {
		hb_store_close(o);
		return hb_err_set(err, HB_ESTORE, st->path, 0,
				  "reopen: %s is no longer the file the "
				  "store opened (moved or replaced since)",
				  st->file);
	}
	*out = o;
	return 0;
}

void hb_store_close(struct hb_store *st)
{
	if (!st)
		return;
	if (st->db && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	if (st->wal_fd >= 0) {
		sync_wal(st); /* what commit_nosync left */
		close(st->wal_fd);
	}
	for (int i = 0; i < NSTMT; i++)
		sqlite3_finalize(st->stmt[i]);
	for (int i = 0; i < HB_SI_NSLOT; i++)
		sqlite3_finalize(st->slot[i]);
	sqlite3_close(st->db);
	free(st->path);
	free(st->file);
	free(st);
}

int hb_store_version(struct hb_store *st)
{
	return st->version;
}

int hb_store_info(struct hb_store *st, struct hb_store_info *out,
		  struct hb_err *err)
{
	static const char op[] = "info";
	sqlite3_stmt *s = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = pragma_int(st, "PRAGMA user_version", &out->version, op, err);
	if (!rc)
		rc = pragma_int(st, "PRAGMA application_id", &out->app_id, op,
				err);
	if (!rc)
		rc = pragma_int(st, "PRAGMA synchronous", &out->synchronous, op,
				err);
	if (!rc)
		rc = pragma_int(st, "PRAGMA foreign_keys", &out->foreign_keys,
				op, err);
	if (!rc)
		rc = pragma_int(st, "PRAGMA busy_timeout",
				&out->busy_timeout_ms, op, err);
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode", -1, &s, NULL))
		return db_fail(st, op, err);
	if (sqlite3_step(s) == SQLITE_ROW)
		copy_id(out->journal_mode, sizeof(out->journal_mode),
			col_text(s, 0));
	else
		rc = db_fail(st, op, err);
	sqlite3_finalize(s);
	return rc;
}

void hb_store_set_clock(struct hb_store *st, int64_t (*now_ms)(void *),
			void *arg)
{
	st->now_ms = now_ms;
	st->clock_arg = now_ms ? arg : NULL;
}

/* --- rows ------------------------------------------------------------- */

/* Copy the n strings *f[i] (NULL stays NULL) into one block, which *priv
 * gets, and point them into it. */
static int own_strings(const char **f[], size_t n, void **priv)
{
	size_t total = 1, len;
	char *p;

	for (size_t i = 0; i < n; i++)
		if (*f[i])
			total += strlen(*f[i]) + 1;
	p = malloc(total);
	if (!p)
		return HB_ENOMEM;
	*priv = p;
	for (size_t i = 0; i < n; i++) {
		if (!*f[i])
			continue;
		len = strlen(*f[i]) + 1;
		memcpy(p, *f[i], len);
		*f[i] = p;
		p += len;
	}
	return 0;
}

/* The current row of a JOB_COLS query, borrowed from s: 0, or HB_ESTORE
 * (col_enum()) with r zeroed. */
static int job_from_stmt(struct hb_store *st, sqlite3_stmt *s,
			 struct hb_job_row *r, const char *op,
			 struct hb_err *err)
{
	int entry, target, state;

	memset(r, 0, sizeof(*r));
	copy_id(r->id, sizeof(r->id), col_text(s, 0));
	entry = col_enum(st, s, 1, entry_names, HB__ENTRY_COUNT, "origin",
			 r->id, op, err);
	target = col_enum(st, s, 2, target_names, HB__TARGET_COUNT, "target",
			  r->id, op, err);
	state = col_enum(st, s, 3, state_names, HB__JOB_STATE_COUNT, "state",
			 r->id, op, err);
	if (entry < 0 || target < 0 || state < 0) {
		memset(r, 0, sizeof(*r));
		return HB_ESTORE;
	}
	r->entry = (enum hb_job_entry)entry;
	r->target = (enum hb_job_target)target;
	r->state = (enum hb_job_state)state;
	r->user = col_text(s, 4);
	r->uid = sqlite3_column_int64(s, 5);
	r->account = col_text(s, 6);
	r->partition = col_text(s, 7);
	r->name = col_text(s, 8);
	r->slurm_job_id = col_opt(s, 9);
	r->k8s_namespace = col_text(s, 10);
	r->k8s_name = col_text(s, 11);
	r->k8s_uid = col_text(s, 12);
	r->exit_code = col_opt(s, 13);
	r->reason = col_text(s, 14);
	r->created_ms = sqlite3_column_int64(s, 15);
	r->updated_ms = sqlite3_column_int64(s, 16);
	r->jobspec = col_text(s, 17);
	r->started_ms = col_opt(s, 18);
	r->ended_ms = col_opt(s, 19);
	r->cost_micros = col_opt(s, 20);
	return 0;
}

void hb_job_row_free(struct hb_job_row *row)
{
	if (!row)
		return;
	free(row->priv);
	memset(row, 0, sizeof(*row));
}

void hb_decision_row_free(struct hb_decision_row *row)
{
	if (!row)
		return;
	free(row->priv);
	memset(row, 0, sizeof(*row));
}

/* Run a JOB_COLS query expected to give one row into out (owned). */
static int job_fetch_one(struct hb_store *st, sqlite3_stmt *s,
			 struct hb_job_row *out, const char *op,
			 const char *what, struct hb_err *err)
{
	int rc = step(st, s, op, err);

	if (rc < 0)
		return rc;
	if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		return fail(st, err, HB_ENOENT, op, "no job %s", what);
	}
	if ((rc = job_from_stmt(st, s, out, op, err))) {
		sqlite3_reset(s);
		return rc;
	}
	const char **f[] = { &out->user,	  &out->account,
			     &out->partition,	  &out->name,
			     &out->reason,	  &out->jobspec,
			     &out->k8s_namespace, &out->k8s_name,
			     &out->k8s_uid };
	rc = own_strings(f, sizeof(f) / sizeof(f[0]), &out->priv);
	sqlite3_reset(s);
	if (rc) {
		memset(out, 0, sizeof(*out));
		return fail(st, err, rc, op, "out of memory");
	}
	return 0;
}

/* --- jobs ------------------------------------------------------------- */

static int check_job(struct hb_store *st, const struct hb_job_row *r,
		     struct hb_err *err)
{
	static const char op[] = "job_add";
	int rc;

	rc = check_enum(st, err, op, "entry", (int)r->entry, HB__ENTRY_COUNT,
			"slurm, cli, kubernetes");
	if (!rc)
		rc = check_enum(st, err, op, "target", (int)r->target,
				HB__TARGET_COUNT,
				"pending, slurm, kubernetes, rejected");
	if (!rc)
		rc = check_enum(st, err, op, "state", (int)r->state,
				HB__JOB_STATE_COUNT, HB_JOB_STATES);
	if (rc)
		return rc;
	const struct {
		const char *field, *val;
		size_t max;
	} strs[] = {
		{ "user", r->user, HB_STORE_NAME_MAX },
		{ "account", r->account, HB_STORE_NAME_MAX },
		{ "partition", r->partition, HB_STORE_NAME_MAX },
		{ "name", r->name, HB_STORE_NAME_MAX },
		{ "k8s_namespace", r->k8s_namespace, HB_STORE_NAME_MAX },
		{ "k8s_name", r->k8s_name, HB_STORE_NAME_MAX },
		{ "k8s_uid", r->k8s_uid, HB_STORE_NAME_MAX },
		{ "reason", r->reason, HB_STORE_TEXT_MAX },
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		rc = check_str(st, err, op, strs[i].field, strs[i].val,
			       strs[i].max, 0);
		if (rc)
			return rc;
	}
	if ((rc = check_json(st, err, op, "jobspec", r->jobspec,
			     HB_STORE_TEXT_MAX)))
		return rc;
	if (r->uid < -1)
		return fail(st, err, HB_EINVAL, op,
			    "uid: %" PRId64 " (-1 when unknown)", r->uid);
	if (r->slurm_job_id == 0 || r->slurm_job_id < -1)
		return fail(st, err, HB_EINVAL, op,
			    "slurm_job_id: %" PRId64 " (> 0, or -1 for none)",
			    r->slurm_job_id);
	if (r->exit_code < -1)
		return fail(st, err, HB_EINVAL, op,
			    "exit_code: %" PRId64 " (-1 for none)",
			    r->exit_code);
	return 0;
}

/* The job id sequence, read once per transaction into seq_base and
 * seq_last (written back at commit). */
static int seq_read(struct hb_store *st, const char *op, struct hb_err *err)
{
	sqlite3_stmt *s;
	int rc;

	if (st->seq_read)
		return 0;
	if ((rc = prep(st, S_SEQ_GET, &s, op, err)))
		return rc;
	rc = step(st, s, op, err);
	if (rc < 0)
		return rc;
	st->seq_read = rc == SQLITE_ROW;
	st->seq_base = st->seq_read ? sqlite3_column_int64(s, 0) : 0;
	st->seq_last = st->seq_base;
	sqlite3_reset(s);
	if (!st->seq_read)
		return fail(st, err, HB_ESTORE, op,
			    "the job id sequence is missing");
	return 0;
}

/* Insert row with the number given (a leased one, at most the sequence's
 * value), or 0 for the next. */
static int job_add(struct hb_store *st, struct hb_job_row *row, int64_t given,
		   struct hb_err *err)
{
	static const char op[] = "job_add";
	sqlite3_stmt *s;
	int64_t seq = 0, t;
	int took = 0, rc;

	row->id[0] = '\0';
	rc = check_job(st, row, err);
	if (rc)
		return rc;
	t = now(st);
	rc = op_begin(st, 1, op, err);
	if (rc)
		return rc;
	/* The number is written back to seq once, at commit: an UPDATE
	 * ... RETURNING per job cost a quarter of a decision's store work.
	 * A job that fails gives its number back. */
	if ((rc = seq_read(st, op, err)))
		goto out;
	if (given > st->seq_last) {
		rc = fail(st, err, HB_EINVAL, op,
			  "id: hb-%06" PRId64 " was never leased", given);
		goto out;
	} else if (given) {
		seq = given;
	} else if (st->seq_last >= 0 && st->seq_last < INT64_MAX) {
		seq = ++st->seq_last;
		took = 1;
	}
	snprintf(row->id, sizeof(row->id), "hb-%06" PRId64, seq);
	rc = prep(st, S_JOB_INSERT, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "tittttitttntttntit", row->id, seq,
			  entry_names[row->entry], target_names[row->target],
			  state_names[row->state], row->user, row->uid,
			  row->account, row->partition, row->name,
			  row->slurm_job_id, row->k8s_namespace, row->k8s_name,
			  row->k8s_uid, row->exit_code, row->reason, t,
			  row->jobspec);
	if (!rc)
		rc = run(st, s, op, err);
	if (rc && took)
		st->seq_last--;
out:
	rc = op_end(st, rc, op, err);
	if (rc) {
		row->id[0] = '\0';
		return rc;
	}
	row->created_ms = row->updated_ms = t;
	return 0;
}

int hb_store_job_add(struct hb_store *st, struct hb_job_row *row,
		     struct hb_err *err)
{
	return job_add(st, row, 0, err);
}

int hb_store_job_add_leased(struct hb_store *st, struct hb_job_row *row,
			    const char *id, struct hb_err *err)
{
	int64_t seq = id ? hb_store_id_seq(id) : -1;

	if (seq <= 0)
		return fail(st, err, HB_EINVAL, "job_add",
			    "id: '%.40s' is not a gateway id (hb-NNNNNN)",
			    id ? id : "(none)");
	return job_add(st, row, seq, err);
}

int64_t hb_store_id_seq(const char *id)
{
	int64_t v = 0;
	const char *p;

	if (strncmp(id, "hb-", 3) || strlen(id) < 9)
		return -1;
	for (p = id + 3; *p; p++) {
		if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	/* one spelling per number: "hb-%06" PRId64 */
	if (id[3] == '0' && strlen(id) > 9)
		return -1;
	return v;
}

int hb_store_id_lease(struct hb_store *st, uint32_t n, int64_t *lo,
		      int64_t *hi, struct hb_err *err)
{
	static const char op[] = "id_lease";
	int rc;

	*lo = *hi = 0;
	if (!n)
		return fail(st, err, HB_EINVAL, op, "a lease of no ids");
	if ((rc = op_begin(st, 1, op, err)))
		return rc;
	if (!(rc = seq_read(st, op, err))) {
		if (st->seq_last > INT64_MAX - (int64_t)n) {
			rc = fail(st, err, HB_ERANGE, op,
				  "the job id sequence is exhausted");
		} else {
			*lo = st->seq_last + 1;
			st->seq_last += n;
			*hi = st->seq_last;
		}
	}
	rc = op_end(st, rc, op, err);
	if (rc)
		*lo = *hi = 0;
	return rc;
}

int hb_store_job_get(struct hb_store *st, const char *id,
		     struct hb_job_row *out, struct hb_err *err)
{
	static const char op[] = "job_get";
	sqlite3_stmt *s;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = check_str(st, err, op, "id", id, HB_STORE_NAME_MAX, 1);
	if (!rc)
		rc = prep(st, S_JOB_GET, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "t", id);
	if (rc)
		return rc;
	return job_fetch_one(st, s, out, op, id, err);
}

int hb_store_job_by_slurm_id(struct hb_store *st, int64_t slurm_job_id,
			     struct hb_job_row *out, struct hb_err *err)
{
	static const char op[] = "job_by_slurm_id";
	char what[48];
	sqlite3_stmt *s;
	int rc;

	memset(out, 0, sizeof(*out));
	if (slurm_job_id <= 0)
		return fail(st, err, HB_EINVAL, op,
			    "slurm_job_id: %" PRId64 " (> 0)", slurm_job_id);
	rc = prep(st, S_JOB_BY_SLURM, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "i", slurm_job_id);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "with Slurm job id %" PRId64,
		 slurm_job_id);
	return job_fetch_one(st, s, out, op, what, err);
}

int hb_store_job_set_state(struct hb_store *st, const char *id,
			   enum hb_job_state state, int64_t exit_code,
			   const char *reason, struct hb_err *err)
{
	static const char op[] = "job_set_state";
	sqlite3_stmt *s;
	int rc, from = -1, to = (int)state;

	rc = check_str(st, err, op, "id", id, HB_STORE_NAME_MAX, 1);
	if (!rc)
		rc = check_enum(st, err, op, "state", to, HB__JOB_STATE_COUNT,
				HB_JOB_STATES);
	if (!rc)
		rc = check_str(st, err, op, "reason", reason, HB_STORE_TEXT_MAX,
			       0);
	if (!rc && exit_code < -1)
		rc = fail(st, err, HB_EINVAL, op,
			  "exit_code: %" PRId64 " (-1 to keep)", exit_code);
	if (rc)
		return rc;
	rc = op_begin(st, 1, op, err);
	if (rc)
		return rc;
	rc = prep(st, S_JOB_STATE, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "t", id);
	if (rc)
		goto out;
	rc = step(st, s, op, err);
	if (rc < 0)
		goto out;
	if (rc == SQLITE_DONE) {
		rc = fail(st, err, HB_ENOENT, op, "no job %s", id);
	} else {
		from = col_enum(st, s, 0, state_names, HB__JOB_STATE_COUNT,
				"state", id, op, err);
		rc = 0;
		if (from < 0)
			rc = HB_ESTORE;
		else if (!allowed(from, to))
			rc = fail(st, err, HB_ESTATE, op,
				  "%s: %s -> %s is not allowed%s", id,
				  state_names[from], state_names[to],
				  terminal(from) ? " (a final state)" : "");
	}
	sqlite3_reset(s);
	/* A final state is set once: setting it again changes nothing. */
	if (rc || (terminal(from) && from == to))
		goto out;
	rc = prep(st, S_JOB_SET_STATE, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "ttnti", id, state_names[to],
			  exit_code, reason, now(st));
	if (!rc)
		rc = run(st, s, op, err);
	if (!rc && terminal(to) && !terminal(from) && st->end_hook)
		st->end_hook(st->end_arg, id);
out:
	return op_end(st, rc, op, err);
}

void hb_store_set_end_hook(struct hb_store *st,
			   void (*fn)(void *arg, const char *id), void *arg)
{
	st->end_hook = fn;
	st->end_arg = fn ? arg : NULL;
}

int hb_store_job_set_times(struct hb_store *st, const char *id,
			   int64_t started_ms, int64_t ended_ms,
			   struct hb_err *err)
{
	static const char op[] = "job_set_times";
	sqlite3_stmt *s;
	int rc;

	rc = check_str(st, err, op, "id", id, HB_STORE_NAME_MAX, 1);
	if (!rc && (started_ms < -1 || ended_ms < -1))
		rc = fail(st, err, HB_EINVAL, op,
			  "%s: %" PRId64 ": a time is >= 0 (-1 to keep)",
			  started_ms < -1 ? "started_ms" : "ended_ms",
			  started_ms < -1 ? started_ms : ended_ms);
	if (rc)
		return rc;
	if ((rc = op_begin(st, 1, op, err)))
		return rc;
	rc = prep(st, S_JOB_SET_TIMES, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "tnni", id, started_ms, ended_ms,
			  now(st));
	if (!rc) {
		int r = step(st, s, op, err);
		int64_t a, b;

		if (r < 0) {
			rc = r;
		} else if (r == SQLITE_DONE) {
			rc = fail(st, err, HB_ENOENT, op, "no job %s", id);
		} else {
			a = col_opt(s, 0);
			b = col_opt(s, 1);
			if (a >= 0 && b >= 0 && b < a)
				rc = fail(st, err, HB_EINVAL, op,
					  "%s: ended_ms %" PRId64 " is before "
					  "started_ms %" PRId64,
					  id, b, a);
		}
		sqlite3_reset(s);
	}
	return op_end(st, rc, op, err);
}

/* Run an UPDATE of one job; HB_ENOENT when no row matched. */
static int update_job(struct hb_store *st, sqlite3_stmt *s, const char *op,
		      const char *id, struct hb_err *err)
{
	int rc = run(st, s, op, err);

	if (!rc && sqlite3_changes(st->db) == 0)
		rc = fail(st, err, HB_ENOENT, op, "no job %s", id);
	return rc;
}

int hb_store_job_set_slurm(struct hb_store *st, const char *id,
			   int64_t slurm_job_id, struct hb_err *err)
{
	static const char op[] = "job_set_slurm";
	sqlite3_stmt *s;
	int rc;

	rc = check_str(st, err, op, "id", id, HB_STORE_NAME_MAX, 1);
	if (!rc && slurm_job_id <= 0 && slurm_job_id != -1)
		rc = fail(st, err, HB_EINVAL, op,
			  "slurm_job_id: %" PRId64 " (> 0, or -1)",
			  slurm_job_id);
	if (!rc)
		rc = prep(st, S_JOB_SET_SLURM, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "tni", id, slurm_job_id, now(st));
	if (!rc)
		rc = update_job(st, s, op, id, err);
	return rc;
}

int hb_store_job_set_k8s(struct hb_store *st, const char *id, const char *ns,
			 const char *name, const char *uid, struct hb_err *err)
{
	static const char op[] = "job_set_k8s";
	sqlite3_stmt *s;
	int rc;

	rc = check_str(st, err, op, "id", id, HB_STORE_NAME_MAX, 1);
	if (!rc)
		rc = check_str(st, err, op, "k8s_namespace", ns,
			       HB_STORE_NAME_MAX, 1);
	if (!rc)
		rc = check_str(st, err, op, "k8s_name", name, HB_STORE_NAME_MAX,
			       1);
	if (!rc)
		rc = check_str(st, err, op, "k8s_uid", uid, HB_STORE_NAME_MAX,
			       0);
	if (!rc)
		rc = prep(st, S_JOB_SET_K8S, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "tttti", id, ns, name, uid, now(st));
	if (!rc)
		rc = update_job(st, s, op, id, err);
	return rc;
}

int hb_store_job_list(struct hb_store *st, int64_t uid, unsigned states,
		      unsigned limit,
		      int (*cb)(const struct hb_job_row *, void *), void *arg,
		      struct hb_err *err)
{
	static const char op[] = "job_list";
	int pick = states != HB_JOB_ANY;
	enum stmt_id id;
	sqlite3_stmt *s;
	int rc;

	if (!cb)
		return fail(st, err, HB_EINVAL, op, "callback: required");
	if (states & ~HB_JOB_ANY)
		return fail(st, err, HB_EINVAL, op,
			    "states: 0x%x has bits that are no state", states);
	if (!states)
		return 0; /* no state wanted: nothing matches */
	if (pick)
		id = uid < 0 ? S_JOB_LIST_STATES : S_JOB_LIST_UID_STATES;
	else
		id = uid < 0 ? S_JOB_LIST : S_JOB_LIST_UID;
	rc = prep(st, id, &s, op, err);
	if (rc)
		return rc;
	/* ?1 limit, ?2..?10 the wanted states (NULL matches nothing), ?11
	 * uid; a statement that lacks one ignores its binding. */
	rc = sqlite3_bind_int64(s, 1, limit ? (int64_t)limit : -1);
	for (int i = 0; !rc && pick && i < HB__JOB_STATE_COUNT; i++)
		rc = states & HB_JOB_BIT(i)
			     ? sqlite3_bind_text(s, 2 + i, state_names[i], -1,
						 SQLITE_STATIC)
			     : sqlite3_bind_null(s, 2 + i);
	if (!rc && uid >= 0)
		rc = sqlite3_bind_int64(s, 11, uid);
	if (rc) {
		sqlite3_reset(s);
		return db_fail(st, op, err);
	}
	while ((rc = step(st, s, op, err)) == SQLITE_ROW) {
		struct hb_job_row row;

		rc = job_from_stmt(st, s, &row, op, err);
		if (!rc)
			rc = cb(&row, arg);
		if (rc) {
			sqlite3_reset(s);
			return rc;
		}
	}
	if (rc < 0)
		return rc;
	sqlite3_reset(s);
	return 0;
}

int hb_store_job_counts(struct hb_store *st, unsigned states,
			uint64_t n[HB__TARGET_COUNT][HB__JOB_STATE_COUNT],
			struct hb_err *err)
{
	static const char op[] = "job_counts";
	sqlite3_stmt *s;
	int rc;

	memset(n, 0, sizeof(uint64_t) * HB__TARGET_COUNT * HB__JOB_STATE_COUNT);
	if (states & ~HB_JOB_ANY)
		return fail(st, err, HB_EINVAL, op,
			    "states: 0x%x has bits that are no state", states);
	if (!states)
		return 0;
	if ((rc = prep(st, S_JOB_COUNT_STATES, &s, op, err)))
		return rc;
	for (int i = 0; !rc && i < HB__JOB_STATE_COUNT; i++)
		rc = states & HB_JOB_BIT(i)
			     ? sqlite3_bind_text(s, 2 + i, state_names[i], -1,
						 SQLITE_STATIC)
			     : sqlite3_bind_null(s, 2 + i);
	if (rc) {
		sqlite3_reset(s);
		return db_fail(st, op, err);
	}
	while ((rc = step(st, s, op, err)) == SQLITE_ROW) {
		int t = col_enum(st, s, 0, target_names, HB__TARGET_COUNT,
				 "target", "a job", op, err);
		int x = col_enum(st, s, 1, state_names, HB__JOB_STATE_COUNT,
				 "state", "a job", op, err);

		if (t < 0 || x < 0) {
			sqlite3_reset(s);
			return HB_ESTORE;
		}
		n[t][x] = (uint64_t)sqlite3_column_int64(s, 2);
	}
	if (rc < 0)
		return rc;
	sqlite3_reset(s);
	return 0;
}

/* --- decisions -------------------------------------------------------- */

int hb_store_decision_add(struct hb_store *st, const char *job_id,
			  enum hb_job_target target, const char *inputs_json,
			  const char *explanation, const char *policy,
			  struct hb_err *err)
{
	static const char op[] = "decision_add";
	sqlite3_stmt *s;
	int64_t t;
	int rc;

	rc = check_str(st, err, op, "job_id", job_id, HB_STORE_NAME_MAX, 1);
	if (!rc && target == HB_TARGET_PENDING)
		rc = fail(st, err, HB_EINVAL, op,
			  "target: pending places nothing (slurm, kubernetes, "
			  "rejected)");
	if (!rc)
		rc = check_enum(st, err, op, "target", (int)target,
				HB__TARGET_COUNT,
				"slurm, kubernetes, rejected");
	if (!rc)
		rc = check_json(st, err, op, "inputs", inputs_json,
				HB_STORE_TEXT_MAX);
	if (!rc)
		rc = check_str(st, err, op, "explanation", explanation,
			       HB_STORE_TEXT_MAX, 0);
	if (!rc)
		rc = check_str(st, err, op, "policy", policy, HB_STORE_NAME_MAX,
			       0);
	if (rc)
		return rc;
	t = now(st);
	rc = op_begin(st, 0, op, err);
	if (rc)
		return rc;
	/* The job takes the decision's target, unless it has it already
	 * (as when it was added with it): no row rewritten for nothing.  A
	 * job that is not there fails the decision's foreign key. */
	rc = prep(st, S_JOB_SET_TARGET, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "tti", job_id, target_names[target],
			  t);
	if (!rc)
		rc = run(st, s, op, err);
	if (!rc)
		rc = prep(st, S_DECISION_INSERT, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "titttt", job_id, t,
			  target_names[target], inputs_json, explanation,
			  policy);
	if (!rc) {
		struct hb_err e = { 0 };

		rc = run(st, s, op, &e);
		if (rc == HB_ENOENT) /* which job, not which constraint */
			rc = fail(st, err, rc, op, "no job %s", job_id);
		else if (rc)
			hb_err_set(err, rc, NULL, 0, "%s", e.msg);
	}
	return op_end(st, rc, op, err);
}

int hb_store_decision_get(struct hb_store *st, const char *job_id,
			  struct hb_decision_row *out, struct hb_err *err)
{
	static const char op[] = "decision_get";
	sqlite3_stmt *s;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = check_str(st, err, op, "job_id", job_id, HB_STORE_NAME_MAX, 1);
	if (!rc)
		rc = prep(st, S_DECISION_GET, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "t", job_id);
	if (rc)
		return rc;
	rc = step(st, s, op, err);
	if (rc < 0)
		return rc;
	if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		return fail(st, err, HB_ENOENT, op, "no decision for job %s",
			    job_id);
	}
	out->id = sqlite3_column_int64(s, 0);
	copy_id(out->job_id, sizeof(out->job_id), col_text(s, 1));
	out->at_ms = sqlite3_column_int64(s, 2);
	rc = col_enum(st, s, 3, target_names, HB__TARGET_COUNT,
		      "decision target", job_id, op, err);
	if (rc < 0) {
		sqlite3_reset(s);
		memset(out, 0, sizeof(*out));
		return HB_ESTORE;
	}
	out->target = (enum hb_job_target)rc;
	out->inputs = col_text(s, 4);
	out->explanation = col_text(s, 5);
	out->policy = col_text(s, 6);
	const char **f[] = { &out->inputs, &out->explanation, &out->policy };
	rc = own_strings(f, sizeof(f) / sizeof(f[0]), &out->priv);
	sqlite3_reset(s);
	if (rc) {
		memset(out, 0, sizeof(*out));
		return fail(st, err, rc, op, "out of memory");
	}
	return 0;
}

/* --- events ----------------------------------------------------------- */

int hb_store_event_add(struct hb_store *st, int64_t actor_uid,
		       const char *actor_user, const char *peer,
		       const char *action, const char *job_id,
		       const char *detail_json, struct hb_err *err)
{
	static const char op[] = "event_add";
	sqlite3_stmt *s;
	int rc;

	rc = check_str(st, err, op, "action", action, HB_STORE_NAME_MAX, 1);
	if (!rc)
		rc = check_str(st, err, op, "actor_user", actor_user,
			       HB_STORE_NAME_MAX, 0);
	if (!rc)
		rc = check_str(st, err, op, "peer", peer, HB_STORE_NAME_MAX, 0);
	if (!rc)
		rc = check_str(st, err, op, "job_id", job_id, HB_STORE_NAME_MAX,
			       0);
	if (!rc)
		rc = check_json(st, err, op, "detail", detail_json,
				HB_STORE_TEXT_MAX);
	if (!rc && actor_uid < -1)
		rc = fail(st, err, HB_EINVAL, op,
			  "actor_uid: %" PRId64 " (-1 when unknown)",
			  actor_uid);
	if (!rc)
		rc = prep(st, S_EVENT_INSERT, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "iittttt", now(st), actor_uid,
			  actor_user, peer, action, job_id, detail_json);
	if (!rc)
		rc = run(st, s, op, err);
	return rc;
}

int hb_store_event_list(struct hb_store *st, const char *job_id,
			int64_t after_id, unsigned limit,
			int (*cb)(const struct hb_event_row *, void *),
			void *arg, struct hb_err *err)
{
	static const char op[] = "event_list";
	sqlite3_stmt *s;
	int rc;

	if (!cb)
		return fail(st, err, HB_EINVAL, op, "callback: required");
	rc = check_str(st, err, op, "job_id", job_id, HB_STORE_NAME_MAX, 0);
	if (!rc)
		rc = prep(st, job_id ? S_EVENT_LIST_JOB : S_EVENT_LIST, &s, op,
			  err);
	if (!rc)
		rc = bind(st, s, op, err, job_id ? "iit" : "ii",
			  after_id < 0 ? (int64_t)0 : after_id,
			  limit ? (int64_t)limit : (int64_t)-1, job_id);
	if (rc)
		return rc;
	while ((rc = step(st, s, op, err)) == SQLITE_ROW) {
		struct hb_event_row ev = {
			.id = sqlite3_column_int64(s, 0),
			.at_ms = sqlite3_column_int64(s, 1),
			.actor_uid = sqlite3_column_int64(s, 2),
			.actor_user = col_text(s, 3),
			.peer = col_text(s, 4),
			.action = col_text(s, 5),
			.job_id = col_text(s, 6),
			.detail = col_text(s, 7),
		};

		rc = cb(&ev, arg);
		if (rc) {
			sqlite3_reset(s);
			return rc;
		}
	}
	if (rc < 0)
		return rc;
	sqlite3_reset(s);
	return 0;
}

/* --- spend -------------------------------------------------------------- */

/* The current row of S_SPEND_LIST or S_RESERVATION into sp; 0 for a row
 * that charges nothing (no estimate, a target that is no side). */
static int spend_row(sqlite3_stmt *s, struct hb_spend_row *sp)
{
	int side = index_of(target_names, HB__TARGET_COUNT, col_text(s, 1));

	sp->account = col_text(s, 0);
	sp->side = (enum hb_job_target)side;
	sp->at_ms = sqlite3_column_int64(s, 2);
	sp->cost_micro = sqlite3_column_int64(s, 3);
	sp->actual = sqlite3_column_int(s, 4);
	return sqlite3_column_type(s, 3) == SQLITE_INTEGER &&
	       (side == HB_TARGET_SLURM || side == HB_TARGET_KUBERNETES);
}

int hb_store_reservation(struct hb_store *st, const char *id,
			 struct hb_spend_row *out, char *account,
			 size_t account_size, struct hb_err *err)
{
	static const char op[] = "reservation";
	sqlite3_stmt *s;
	int rc;

	if ((rc = prep(st, S_RESERVATION, &s, op, err)) ||
	    (rc = bind(st, s, op, err, "t", id)))
		return rc;
	rc = step(st, s, op, err);
	if (rc < 0)
		return rc;
	if (rc == SQLITE_ROW && spend_row(s, out) &&
	    strlen(out->account) < account_size) {
		memcpy(account, out->account, strlen(out->account) + 1);
		out->account = account;
		rc = 0;
	} else {
		rc = HB_ENOENT;
	}
	sqlite3_reset(s);
	return rc;
}

int hb_store_spend_list(struct hb_store *st, int64_t since_ms, int metered,
			int (*cb)(const struct hb_spend_row *, void *),
			void *arg, struct hb_err *err)
{
	static const char op[] = "spend_list";
	sqlite3_stmt *s;
	int rc;

	if (!cb)
		return fail(st, err, HB_EINVAL, op, "callback: required");
	rc = prep(st, S_SPEND_LIST, &s, op, err);
	if (!rc)
		rc = bind(st, s, op, err, "ii", since_ms, (int64_t)!!metered);
	if (rc)
		return rc;
	while ((rc = step(st, s, op, err)) == SQLITE_ROW) {
		struct hb_spend_row sp;

		/* a document without the chosen side's cost charges
		 * nothing, nor does a target that is no side */
		if (!spend_row(s, &sp))
			continue;
		rc = cb(&sp, arg);
		if (rc) {
			sqlite3_reset(s);
			return rc;
		}
	}
	if (rc < 0)
		return rc;
	sqlite3_reset(s);
	return 0;
}

/* --- for the rest of state/ (store_int.h) ----------------------------- */

sqlite3 *hb_si_db(struct hb_store *st)
{
	return st->db;
}

const char *hb_si_path(const struct hb_store *st)
{
	return st->path;
}

int64_t hb_si_now(struct hb_store *st)
{
	return now(st);
}

int hb_si_readonly(const struct hb_store *st)
{
	return st->readonly;
}

int hb_si_prep(struct hb_store *st, enum hb_si_slot slot, const char *sql,
	       sqlite3_stmt **out, const char *op, struct hb_err *err)
{
	*out = NULL;
	if (st->tx_lost)
		return fail(st, err, HB_ESTORE, op,
			    "the transaction was abandoned after an earlier "
			    "error; roll it back");
	if (!st->slot[slot]) {
		if (sqlite3_prepare_v3(st->db, sql, -1,
				       SQLITE_PREPARE_PERSISTENT,
				       &st->slot[slot], NULL))
			return db_fail(st, op, err);
	} else if (sqlite3_stmt_busy(st->slot[slot])) {
		return fail(st, err, HB_ESTATE, op,
			    "called again from its own callback");
	}
	*out = st->slot[slot];
	return 0;
}

int hb_si_step(struct hb_store *st, sqlite3_stmt *s, const char *op,
	       struct hb_err *err)
{
	return step(st, s, op, err);
}

int hb_si_db_fail(struct hb_store *st, const char *op, struct hb_err *err)
{
	return db_fail(st, op, err);
}

int hb_si_op_begin(struct hb_store *st, int one_write, const char *op,
		   struct hb_err *err)
{
	return op_begin(st, one_write, op, err);
}

int hb_si_op_end(struct hb_store *st, int rc, const char *op,
		 struct hb_err *err)
{
	return op_end(st, rc, op, err);
}
