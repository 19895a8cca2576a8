/*
 * store.h - the gateway's durable state: jobs, placement decisions, the
 * audit event log and the cost ledger, in one SQLite file.
 *
 * The file runs in WAL mode with synchronous=FULL (deferred sync, below,
 * makes one exception): when a write function returns 0 outside
 * hb_store_begin()/hb_store_commit(), or when hb_store_commit() returns 0,
 * the change is on disk.  Nobody may be told about a decision or a state
 * change before that.
 *
 * All functions return 0 or a negative HB_E* code and, where they take a
 * struct hb_err, fill it with "PATH: OPERATION: message" (SQLite's own
 * message when SQLite failed).  Codes: HB_EINVAL (a bad argument, the
 * message names the field), HB_ETOOBIG (a string over its cap), HB_ENOENT
 * (no such job), HB_EEXIST (a unique value is taken: slurm_job_id),
 * HB_ESTATE (a forbidden state transition, or begin/commit out of order),
 * HB_ENOMEM, HB_ESTORE (anything else SQLite reports, and a file this build
 * cannot read).
 *
 * A handle is used by one thread at a time.  Strings are stored as given
 * (bound, never interpolated into SQL) and must not contain NUL.
 */
#ifndef HPCBRIDGE_STORE_H
#define HPCBRIDGE_STORE_H

#include <stdint.h>

#include "hpcbridge/error.h"

/* The schema version this build writes (PRAGMA user_version). */
#define HB_STORE_SCHEMA_VERSION 5

/* PRAGMA application_id of an hpcbridge store ("HBst"). */
#define HB_STORE_APP_ID 0x48427374

/* How long a write waits for another process's lock, in ms. */
#define HB_STORE_BUSY_MS 5000

/* Caps on stored strings: names and short fields, and JSON documents. */
#define HB_STORE_NAME_MAX 1024
#define HB_STORE_TEXT_MAX (4u << 20)

struct hb_store;

/*
 * Open (creating it if missing) the store at path and bring its schema to
 * HB_STORE_SCHEMA_VERSION, one migration per version, each in its own
 * transaction.  A file whose version is newer than this build's, or whose
 * application_id is another program's, is refused with HB_ESTORE and left
 * untouched.  *out gets the handle; caller closes it with hb_store_close().
 */
int hb_store_open(const char *path, struct hb_store **out, struct hb_err *err);
/*
 * A second handle on the very file st has open (as SQLite resolved its
 * name at open), never creating one: HB_ESTORE when that name now leads
 * to another file or to none (moved or replaced since).  Reads only what
 * st's open set, so another thread may call it while st is in use.
 */
int hb_store_reopen(const struct hb_store *st, struct hb_store **out,
		    struct hb_err *err);
/*
 * Open an existing store for reading only (SQLITE_OPEN_READONLY): nothing
 * is created, migrated, chmod'ed or written; every write through the
 * handle fails (HB_ESTORE: "attempt to write a readonly database").  A
 * file at an older schema version is refused (the daemon upgrades it).
 * For reports, run by root or by whoever can read the file.
 */
int hb_store_open_readonly(const char *path, struct hb_store **out,
			   struct hb_err *err);
/* Close; an open transaction is rolled back.  NULL is a no-op. */
void hb_store_close(struct hb_store *st);
/* The schema version (user_version) of the open file. */
int hb_store_version(struct hb_store *st);

/* What the open connection runs with, read back from SQLite (PRAGMAs):
 * for start-up checks, status output and tests. */
struct hb_store_info {
	int version;	       /* user_version */
	int app_id;	       /* application_id: HB_STORE_APP_ID */
	char journal_mode[16]; /* "wal" */
	int synchronous;       /* 2: FULL */
	int foreign_keys;      /* 1: on */
	int busy_timeout_ms;
};
int hb_store_info(struct hb_store *st, struct hb_store_info *out,
		  struct hb_err *err);

/* Replace the wall clock (CLOCK_REALTIME, ms) used for timestamps; NULL
 * restores it.  For tests. */
void hb_store_set_clock(struct hb_store *st, int64_t (*now_ms)(void *),
			void *arg);

/*
 * Group commit: everything between begin and commit is one transaction,
 * made durable by one sync at commit.  Without begin, each call is its own
 * transaction.  begin while one is open, or commit without one, is
 * HB_ESTATE.  A call that fails inside the transaction undoes its own
 * writes only; the transaction stays open unless SQLite itself abandoned it
 * (then commit says so with HB_ESTORE).  rollback undoes everything since
 * begin; without an open transaction it does nothing and returns 0.
 */
int hb_store_begin(struct hb_store *st, struct hb_err *err);
int hb_store_commit(struct hb_store *st, struct hb_err *err);
int hb_store_rollback(struct hb_store *st);

/*
 * Checkpoints (copying the write-ahead log into the database file).  By
 * default SQLite does one inside the commit that takes the WAL past 1,000
 * pages: two syncs and a thousand page writes in the middle of somebody's
 * request.  A caller that can checkpoint elsewhere (a second handle on
 * another thread) sets a higher inline limit, watches hb_store_wal_pages()
 * after its commits, and calls hb_store_checkpoint() on the other handle.
 *
 * hb_store_set_autocheckpoint: checkpoint inline when a commit leaves the
 * WAL at pages or more; 0 never.  Default 1,000.
 * hb_store_wal_pages: the WAL's length in pages after this handle's last
 * commit (creating the schema is one; 0 before any).
 * hb_store_checkpoint: copy what the WAL holds into the database without
 * waiting for readers or writers (SQLite's PASSIVE), syncing both files;
 * *left gets the pages it could not copy yet (a writer or reader was in
 * the way), or -1 when another handle was checkpointing (then it does
 * the work, and this returns 0); left may be NULL.  The next write after a complete checkpoint
 * starts the WAL again from its beginning, so it stops growing.
 */
void hb_store_set_autocheckpoint(struct hb_store *st, int pages);

/*
 * Deferred sync, for a caller that commits groups on one thread and can
 * wait for their sync on another.  After hb_store_defer_sync(), every
 * call is as durable on return as before (SQLite syncs the WAL at each
 * commit, before readers see it: synchronous=FULL) -- except
 * hb_store_commit_nosync(), whose commit is written, and visible, without
 * that sync.  Its caller must call hb_store_sync() before telling
 * anyone about it; meanwhile it may go on writing.  hb_store_sync() makes
 * every commit made before it durable (one fdatasync of the WAL); it uses
 * only a descriptor of its own, so another thread may call it while st is
 * in use.  Without deferred sync, commit_nosync is commit and sync does
 * nothing.  hb_store_close() syncs what is left.
 *
 * A failed sync of the WAL stops the process (abort(), after a line on
 * stderr naming the file and the error): committed changes cannot be
 * taken back, and after a failed fdatasync Linux cannot say whether they
 * are on disk.  SQLite recovers the WAL at the next start.
 */
int hb_store_defer_sync(struct hb_store *st, struct hb_err *err);
int hb_store_commit_nosync(struct hb_store *st, struct hb_err *err);
void hb_store_sync(const struct hb_store *st);
int hb_store_wal_pages(const struct hb_store *st);
int hb_store_checkpoint(struct hb_store *st, int *left, struct hb_err *err);

/*
 * Job states.  Terminal states (succeeded, failed, cancelled, lost) are
 * final.  Otherwise a job moves forward along pending -> queued -> running
 * -> completing -> terminal, skipping steps freely (a status poll can miss
 * one); the only move back is a requeue, running, suspended or completing
 * -> queued.  suspended stands beside running (a burst job whose remote
 * side was preempted: its proxy is suspended in Slurm): running <->
 * suspended both ways, and from suspended on as from running.  It comes
 * last in the enum so the other states keep their values.
 * Setting the state a job already has is allowed (it updates reason and
 * exit code; for a terminal state it changes nothing).
 *
 * States, targets and entry points are enums everywhere in C; their names
 * are what the store's text columns, the protocol's JSON and the logs
 * hold.  Each *_name() gives "unknown" for a value that is none (never
 * NULL); each *_parse() gives the value of a name, or -1 for NULL or a
 * name that is none (names are lowercase, compared exactly).
 */
enum hb_job_state {
	HB_JOB_PENDING,
	HB_JOB_QUEUED,
	HB_JOB_RUNNING,
	HB_JOB_COMPLETING,
	HB_JOB_SUCCEEDED, /* the terminal states, from here on */
	HB_JOB_FAILED,
	HB_JOB_CANCELLED,
	HB_JOB_LOST,
	HB_JOB_SUSPENDED, /* not terminal: see above */
	HB__JOB_STATE_COUNT
};
/* The states' names in order, for messages. */
#define HB_JOB_STATES                                                          \
	"pending, queued, running, completing, succeeded, failed, "            \
	"cancelled, lost, suspended"
const char *hb_job_state_name(enum hb_job_state s);
int hb_job_state_parse(const char *name);
/* 1 if s is a terminal state, 0 otherwise. */
int hb_store_state_terminal(enum hb_job_state s);
/* 1 if a job in state from may be set to state to, 0 otherwise (and for a
 * value that is no state). */
int hb_store_state_allowed(enum hb_job_state from, enum hb_job_state to);

/* A set of states, for hb_store_job_list(): HB_JOB_BIT(s) ORed together;
 * HB_JOB_ANY is every state. */
#define HB_JOB_BIT(s) (1u << (s))
#define HB_JOB_ANY    ((1u << HB__JOB_STATE_COUNT) - 1)

/* Where a job runs: pending until placed. */
enum hb_job_target {
	HB_TARGET_PENDING,
	HB_TARGET_SLURM,
	HB_TARGET_KUBERNETES,
	HB_TARGET_REJECTED,
	HB__TARGET_COUNT
};
const char *hb_job_target_name(enum hb_job_target t);
int hb_job_target_parse(const char *name);

/* How a job entered the gateway: decided for the Slurm plugin, submitted
 * with the CLI, or created on Kubernetes (an MPIJob). */
enum hb_job_entry {
	HB_ENTRY_SLURM,
	HB_ENTRY_CLI,
	HB_ENTRY_KUBERNETES,
	HB__ENTRY_COUNT
};
const char *hb_job_entry_name(enum hb_job_entry e);
int hb_job_entry_parse(const char *name);

/*
 * A job.  On input (hb_store_job_add) the strings are borrowed from the
 * caller and id, created_ms and updated_ms are ignored.  Rows filled by
 * hb_store_job_get() and hb_store_job_by_slurm_id() own their strings
 * (one block, in priv): caller frees with hb_job_row_free().  Rows passed
 * to a hb_store_job_list() callback are borrowed for the call.  A NULL
 * string is SQL NULL and comes back NULL.  A row read back whose state,
 * target or origin column holds a name this build does not know is
 * HB_ESTORE.
 *
 * entry: how the job entered; stored in the column "origin", and the
 * protocol's JSON calls it "origin" too (in C, an origin is only a job
 * created on Kubernetes: origin.h).
 * target, state: zero (a zeroed row) is pending.
 * jobspec: JSON text or NULL.
 * uid: -1 when unknown.  slurm_job_id, exit_code: -1 when none.
 * started_ms, ended_ms: when the job started and ended (wall-clock ms), -1
 * when not known (hb_store_job_set_state() and hb_store_job_set_times()
 * set them; ignored on input).  cost_micros: the sum of the job's ledger
 * entries, reversals included, -1 when it has none (read only).
 */
struct hb_job_row {
	char id[32]; /* "hb-000042" */
	enum hb_job_entry entry;
	enum hb_job_target target;
	enum hb_job_state state;
	const char *user, *account, *partition, *name, *reason, *jobspec;
	int64_t uid, slurm_job_id, exit_code;
	const char *k8s_namespace, *k8s_name, *k8s_uid;
	int64_t created_ms, updated_ms;
	int64_t started_ms, ended_ms, cost_micros;
	void *priv;
};

/*
 * Insert a job.  The store allocates row->id from a sequence that only
 * grows: ids are unique, increase with every committed job, and are never
 * handed out again, whatever happens to the rows (an id taken by a
 * transaction that was rolled back never existed and may come again).
 * row->created_ms and updated_ms are set.  HB_EEXIST if slurm_job_id is
 * already some job's.
 */
int hb_store_job_add(struct hb_store *st, struct hb_job_row *row,
		     struct hb_err *err);
/*
 * The same for a job whose id was taken from a lease (hb_store_id_lease():
 * the job_submit plugin decided it inside slurmctld).  HB_EINVAL if id is
 * not a gateway id or above every number leased; HB_EEXIST if a job has
 * it already (the decision was recorded before: a notice and the
 * reconciler may both bring it).
 */
int hb_store_job_add_leased(struct hb_store *st, struct hb_job_row *row,
			    const char *id, struct hb_err *err);
/* The number in a gateway id ("hb-000042": 42), -1 if id is not one. */
int64_t hb_store_id_seq(const char *id);
/*
 * Reserve n job numbers, [*lo, *hi], for the job_submit plugin to hand
 * out: the sequence moves past them at commit, so the store never gives
 * them to another job.  In a transaction (or one of its own).
 */
int hb_store_id_lease(struct hb_store *st, uint32_t n, int64_t *lo,
		      int64_t *hi, struct hb_err *err);
/* The job with this id, or HB_ENOENT. */
int hb_store_job_get(struct hb_store *st, const char *id,
		     struct hb_job_row *out, struct hb_err *err);
/* The job with this Slurm job id, or HB_ENOENT. */
int hb_store_job_by_slurm_id(struct hb_store *st, int64_t slurm_job_id,
			     struct hb_job_row *out, struct hb_err *err);
/* Free what a get filled and zero the row.  NULL is a no-op. */
void hb_job_row_free(struct hb_job_row *row);

/*
 * Move a job to state (see above; HB_ESTATE names both states when the
 * move is forbidden, HB_EINVAL names the field for a value that is no
 * state).  exit_code -1 and reason NULL keep the current values.  The
 * first move to running (or on: suspended, completing) sets started_ms,
 * the first to a final state ended_ms, to now, unless they are set.
 */
int hb_store_job_set_state(struct hb_store *st, const char *id,
			   enum hb_job_state state, int64_t exit_code,
			   const char *reason, struct hb_err *err);
/*
 * Replace when the job started and ended with what its side measured
 * (wall-clock ms >= 0; -1 keeps the value).  HB_EINVAL when the result
 * would end before it starts.
 */
int hb_store_job_set_times(struct hb_store *st, const char *id,
			   int64_t started_ms, int64_t ended_ms,
			   struct hb_err *err);
/*
 * fn(arg, id) is called each time this handle moves a job to a final
 * state from one that is not (once per job, unless the write is rolled
 * back), inside the write, after the row changed: for a caller that
 * keeps sums over jobs (budgets).  fn may read the store.  NULL fn
 * removes it.
 */
void hb_store_set_end_hook(struct hb_store *st,
			   void (*fn)(void *arg, const char *id), void *arg);
/* Record the Slurm job id (> 0), or forget it (-1: Slurm gave the
 * number to another job); HB_EEXIST if another job has it. */
int hb_store_job_set_slurm(struct hb_store *st, const char *id,
			   int64_t slurm_job_id, struct hb_err *err);
/* Record the Kubernetes object (ns and name required, uid may be NULL). */
int hb_store_job_set_k8s(struct hb_store *st, const char *id, const char *ns,
			 const char *name, const char *uid, struct hb_err *err);

/*
 * List jobs, newest first: uid < 0 means all users, states the set of
 * states wanted (HB_JOB_ANY: any; 0: none, so nothing matches; a bit that
 * is no state is HB_EINVAL), limit 0 means no limit.  cb gets each row,
 * borrowed for the call; it must not call hb_store_job_list() itself
 * (HB_ESTATE).  A non-zero return from cb stops the listing and is
 * returned.
 */
int hb_store_job_list(struct hb_store *st, int64_t uid, unsigned states,
		      unsigned limit,
		      int (*cb)(const struct hb_job_row *, void *), void *arg,
		      struct hb_err *err);

/*
 * How many jobs are in each (target, state) of states (a set as for
 * hb_store_job_list()), counted by the database in one query (found
 * through the index on state; no row is decoded or copied out):
 * n[target][state], zero where none.
 */
int hb_store_job_counts(struct hb_store *st, unsigned states,
			uint64_t n[HB__TARGET_COUNT][HB__JOB_STATE_COUNT],
			struct hb_err *err);

/*
 * A placement decision for an existing job (HB_ENOENT otherwise).
 * target: slurm, kubernetes or rejected (pending is no decision: HB_EINVAL);
 * it also becomes the job's target.  inputs_json: JSON or NULL;
 * explanation: text or JSON; policy: the policy name or NULL.
 */
int hb_store_decision_add(struct hb_store *st, const char *job_id,
			  enum hb_job_target target, const char *inputs_json,
			  const char *explanation, const char *policy,
			  struct hb_err *err);

/* A decision as read back; owns its strings: free with
 * hb_decision_row_free(). */
struct hb_decision_row {
	int64_t id, at_ms;
	char job_id[32];
	enum hb_job_target target;
	const char *inputs, *explanation, *policy;
	void *priv;
};
/* The latest decision for a job, or HB_ENOENT (HB_ESTORE when its target
 * is no name this build knows). */
int hb_store_decision_get(struct hb_store *st, const char *job_id,
			  struct hb_decision_row *out, struct hb_err *err);
/* NULL is a no-op. */
void hb_decision_row_free(struct hb_decision_row *row);

/*
 * Append an audit event.  actor_uid -1 when unknown; actor_user, peer
 * ("pid 123", "plugin", "daemon"), job_id and detail_json may be NULL;
 * action (decide, submit, cancel, state, ...) is required.  job_id is not
 * checked against the jobs table: a refused request about an unknown job
 * is logged too.  Events can never be changed or deleted.
 */
int hb_store_event_add(struct hb_store *st, int64_t actor_uid,
		       const char *actor_user, const char *peer,
		       const char *action, const char *job_id,
		       const char *detail_json, struct hb_err *err);

/* An event as passed to a hb_store_event_list() callback (borrowed). */
struct hb_event_row {
	int64_t id, at_ms, actor_uid;
	const char *actor_user, *peer, *action, *job_id, *detail;
};
/*
 * Events oldest first: those of job_id (NULL: all), with id > after_id
 * (0: from the start), up to limit (0: no limit).  cb as for
 * hb_store_job_list().
 */
int hb_store_event_list(struct hb_store *st, const char *job_id,
			int64_t after_id, unsigned limit,
			int (*cb)(const struct hb_event_row *, void *),
			void *arg, struct hb_err *err);

/* A charge against an account, as passed to a hb_store_spend_list()
 * callback (borrowed). */
struct hb_spend_row {
	const char *account;
	enum hb_job_target side; /* HB_TARGET_SLURM or HB_TARGET_KUBERNETES */
	int64_t at_ms;
	int64_t cost_micro;
	int actual; /* 1: metered (the ledger); 0: a reservation (estimate) */
};
/*
 * What accounts have spent since since_ms (wall-clock ms), for budgets:
 * - actuals: the ledger's entries with an account whose period ended at
 *   or after since_ms, net of their reversals, one row per job, side
 *   and period (at_ms: the period's end);
 * - reservations: each job with an account and no ledger entry whose
 *   latest decision (at or after since_ms) placed it on a side, with the
 *   cost that decision's stored placement document estimated there
 *   (at_ms: the decision's).  With metered (jobs are metered when they
 *   end), only jobs that are not final: one that ended without ledger
 *   entries (cancelled before it ran) reserves nothing.  Without, the
 *   estimate stands for every job (nothing else will replace it).
 * Rows whose side is no side this build knows, or whose estimate is
 * missing, are skipped.  In no particular order.  cb as for
 * hb_store_job_list().
 */
int hb_store_spend_list(struct hb_store *st, int64_t since_ms, int metered,
			int (*cb)(const struct hb_spend_row *, void *),
			void *arg, struct hb_err *err);

/*
 * The reservation job id holds or held: its latest decision's estimate,
 * as hb_store_spend_list() counts it, whatever the job's state; account
 * (account_size bytes) gets the account, and out->account points to it.
 * HB_ENOENT when there is none (no account, no decision, no estimate).
 */
int hb_store_reservation(struct hb_store *st, const char *id,
			 struct hb_spend_row *out, char *account,
			 size_t account_size, struct hb_err *err);

/*
 * The cost ledger: append-only, money in integer micro-units of the
 * currency.  One entry per job, per side, per rate period; a correction
 * is a reversal entry (hb_store_ledger_reverse()), never an update.
 *
 * Resource-seconds are integers: CPU in millicore-seconds (one core for
 * one second is 1000), memory in MiB-seconds, whole nodes (exclusive
 * jobs) in node-seconds, GPUs in GPU-seconds per type, egress in bytes,
 * checkpoint storage in MiB-seconds (bytes x seconds / 2^20, rounded half
 * up: byte-seconds would overflow a year's sums).  A reversal carries them negated.
 */
#define HB_LEDGER_GPU_TYPES 8 /* GPU types per entry */
#define HB_LEDGER_TYPE_MAX 64 /* bytes in a GPU type or rate version */

struct hb_ledger_gpu {
	const char *type; /* [A-Za-z0-9._/:-], 1 to HB_LEDGER_TYPE_MAX bytes */
	int64_t seconds;  /* GPU-seconds */
};

/*
 * An entry.  On input the strings are borrowed; id and at_ms are set by
 * the append.  job_id is required (a job of the jobs table: HB_ENOENT
 * otherwise); side is HB_TARGET_SLURM or HB_TARGET_KUBERNETES; account,
 * user, partition, queue, rate_version may be NULL; a rate version holds
 * no comma or control character (reports list them joined by commas).
 * period_end_ms >= period_start_ms >= 0.  reverses is 0 on input (only
 * hb_store_ledger_reverse() sets it).
 */
struct hb_ledger_entry {
	int64_t id, at_ms;
	const char *job_id;
	/* the part of the job it charges: a Slurm job id on Slurm (an
	 * array's tasks are Slurm jobs of their own), "t<N>" for array task
	 * N on Kubernetes; NULL: the whole job.  1 to 64 of [A-Za-z0-9._-] */
	const char *part;
	enum hb_job_target side;
	const char *account, *user, *partition, *queue, *rate_version;
	int64_t period_start_ms, period_end_ms;
	int64_t cpu_mcore_s, mem_mib_s, node_s, egress_bytes;
	int64_t storage_mib_s; /* checkpoint storage: MiB-seconds */
	struct hb_ledger_gpu gpu[HB_LEDGER_GPU_TYPES];
	int n_gpu;
	int64_t amount_micros;
	int64_t reverses; /* the id of the entry this one reverses, or 0 */
};

/*
 * Append n entries in one transaction (a savepoint inside the caller's
 * group), with one prepared statement: all or none.  Each entry is checked
 * first; an error names the entry's index and field ("entries[3]:
 * gpu[0]: type: ...").  Amounts and resource-seconds may not be
 * negative: only a reversal is.  e[i].id and at_ms are set.
 */
int hb_store_ledger_append(struct hb_store *st, struct hb_ledger_entry *e,
			   size_t n, struct hb_err *err);
/*
 * Append the reversal of entry id: a new entry with the same job, part,
 * side, account, user, partition, queue, period and rate version, every amount
 * and resource-second negated, reverses = id.  *out_id (may be NULL) gets
 * its id.  HB_ENOENT: no entry id; HB_EEXIST: id was reversed already;
 * HB_EINVAL: id is itself a reversal (append a new entry instead).
 */
int hb_store_ledger_reverse(struct hb_store *st, int64_t id, int64_t *out_id,
			    struct hb_err *err);
/*
 * The entries of job_id, oldest first; cb gets each, borrowed for the
 * call (strings and gpu[] point into the statement).  An entry whose
 * stored GPU object has more than HB_LEDGER_GPU_TYPES types, or values
 * that are not integers, is HB_ESTORE.  cb as for hb_store_job_list().
 */
int hb_store_ledger_list(struct hb_store *st, const char *job_id,
			 int (*cb)(const struct hb_ledger_entry *, void *),
			 void *arg, struct hb_err *err);

/*
 * Checkpoint storage meters (issue 21).  Each checkpoint location
 * (s3://BUCKET/PREFIX) has one: the bytes S3 held under it when last
 * measured, the instant up to which they are charged, and the job
 * charged for them (the last job that pushed or pulled there, with its
 * account, user and Kubernetes rate class).  The location is the key:
 * the jobs of one user and directory share it, so its bytes are charged
 * once, to one job at a time.  gateway/ledger/storage.c
 * (hb_meter_storage()) prices the time between two measurements.
 */
struct hb_storage_meter {
	const char *url;    /* the key: 1 to HB_STORE_NAME_MAX bytes */
	const char *job_id; /* a job of the jobs table (HB_ENOENT otherwise) */
	const char *account, *user, *queue; /* NULL: none */
	int64_t bytes;	    /* held when last measured, >= 0 */
	int64_t since_ms;   /* charged up to this instant, >= 0 */
};

/* The ledger entry part a storage charge carries. */
#define HB_LEDGER_PART_STORAGE "ckpt"

/*
 * The meters, url's alone (NULL: every one), and with held set only those
 * that hold bytes, in url order; cb gets each, borrowed for the call.
 * A non-zero return from cb stops and is returned.
 */
int hb_store_storage_list(struct hb_store *st, const char *url, int held,
			  int (*cb)(const struct hb_storage_meter *, void *),
			  void *arg, struct hb_err *err);
/*
 * Append e[0..n) (checked as hb_store_ledger_append() checks them) and
 * make m its location's meter (created or replaced), all in one
 * transaction (a savepoint inside the caller's group): both or neither.
 * e[i].id and at_ms are set.
 */
int hb_store_storage_charge(struct hb_store *st,
			    const struct hb_storage_meter *m,
			    struct hb_ledger_entry *e, size_t n,
			    struct hb_err *err);
/* What job_id's storage entries (part HB_LEDGER_PART_STORAGE) add up to,
 * reversals included: MiB-seconds and micro-units (0 and 0: none). */
int hb_store_storage_charged(struct hb_store *st, const char *job_id,
			     int64_t *mib_s, int64_t *amount_micros,
			     struct hb_err *err);

/* What a report groups by. */
enum hb_ledger_by {
	HB_BY_ACCOUNT,
	HB_BY_USER,
	HB_BY_PARTITION,
	HB_BY_QUEUE,
	HB_BY_SIDE,
	HB_BY_MONTH, /* "YYYY-MM" of the period's end, UTC */
	HB_BY_PILOT, /* "pilot", "control", NULL: hb_store_pilot_report() */
	HB__BY_COUNT
};
#define HB_LEDGER_BYS "account, user, partition, queue, side, month, pilot"
const char *hb_ledger_by_name(enum hb_ledger_by by);
int hb_ledger_by_parse(const char *name);

/* One line of a report, or its total.  Sums of the entries' integers. */
struct hb_ledger_line {
	char *key;     /* NULL: entries without one (no account, ...) */
	int64_t jobs;  /* distinct job ids */
	int64_t entries;
	int64_t cpu_mcore_s, mem_mib_s, node_s, egress_bytes, amount_micros;
	int64_t storage_mib_s; /* checkpoint storage, MiB-seconds */
	int64_t *gpu_s;      /* per report type: gpu_s[i] is types[i]'s */
	char *rate_versions; /* sorted, comma-separated, "" for none */
};

struct hb_ledger_report {
	enum hb_ledger_by by;
	int64_t from_ms, to_ms;
	char **types; /* the GPU types seen, sorted */
	size_t n_types;
	struct hb_ledger_line *lines; /* ordered by key, NULL first */
	size_t n_lines;
	/* The sums of the lines (jobs: distinct over the whole window, so
	 * a job in two lines counts once). */
	struct hb_ledger_line total;
};

/*
 * Aggregate the entries whose period ends in [from_ms, to_ms), grouped by
 * by, into *out (caller frees with hb_ledger_report_free()).  Amounts and
 * resource-seconds are summed as integers in SQL; the total is the sum of
 * the lines, to the micro-unit (HB_ERANGE if a sum overflows).
 */
int hb_store_report(struct hb_store *st, enum hb_ledger_by by,
		    int64_t from_ms, int64_t to_ms, struct hb_ledger_report **out,
		    struct hb_err *err);
/* NULL is a no-op. */
void hb_ledger_report_free(struct hb_ledger_report *r);
/*
 * The SQL hb_store_report() runs for by, in the order it runs them, with
 * ?1 and ?2 standing for from_ms and to_ms: [0] the lines, [1] the GPU
 * types, [2] the distinct jobs of the total.  For comparing with the
 * sqlite3 CLI (tests/bench/bench_ledger.c).  NULL for a by that is none.
 */
const char *hb_store_report_sql(enum hb_ledger_by by, int which);

/* How a series cuts time: by day or month of the period's end, UTC;
 * AUTO: by day when the window (its open ends closed by the first and
 * last entry in it) spans at most HB_SERIES_DAYS_MAX days, else by month. */
enum hb_ledger_step { HB_STEP_AUTO, HB_STEP_DAY, HB_STEP_MONTH };
#define HB_SERIES_DAYS_MAX 31

/* A report's amounts cut by time: one cell per key and bucket. */
struct hb_ledger_series {
	enum hb_ledger_by by;
	enum hb_ledger_step step; /* DAY or MONTH, what AUTO chose */
	/* "YYYY-MM-DD" or "YYYY-MM", every one from the first entry's to
	 * the last's, empty ones included; none for an empty window */
	char **buckets;
	size_t n_buckets;
	char **keys; /* sorted, NULL first, as a report's lines */
	size_t n_keys;
	/* [k * n_buckets + b]: key k's amount in bucket b; has[] is 1
	 * where the cell has entries (its amount may still be 0) */
	int64_t *amount_micros;
	unsigned char *has;
	int64_t total_micros; /* the cells' sum */
};

/*
 * Sum the entries' amounts whose period ends in [from_ms, to_ms) per key
 * of by and per bucket of step, into *out (caller frees with
 * hb_ledger_series_free()).  Integer sums in SQL, as hb_store_report():
 * the cells add up to its total to the micro-unit.
 */
int hb_store_report_series(struct hb_store *st, enum hb_ledger_by by,
			   enum hb_ledger_step step, int64_t from_ms,
			   int64_t to_ms, struct hb_ledger_series **out,
			   struct hb_err *err);
/* NULL is a no-op. */
void hb_ledger_series_free(struct hb_ledger_series *s);

/*
 * The migration pilot.  A job is in it when its latest decision's stored
 * document says so: $.placement.pilot.selected is true (the pilot group)
 * or false (the control group, chosen by the same rule and not
 * selected); a job whose latest decision has neither is in no group.
 */
enum hb_pilot_group { HB_PILOT_PILOT, HB_PILOT_CONTROL, HB__PILOT_COUNT };
const char *hb_pilot_group_name(enum hb_pilot_group g);

/* One group's jobs on one side (jobs.target). */
struct hb_pilot_cell {
	int64_t jobs;	   /* terminal jobs */
	int64_t succeeded; /* of them, succeeded: the success rate's */
	/* medians over the jobs that have the times (started_ms -
	 * created_ms; ended_ms - started_ms); of an even count, the mean
	 * of the two middle values, rounded down; -1: none */
	int64_t waited, ran; /* how many jobs each median is over */
	int64_t wait_median_ms, run_median_ms;
	/* the sums of the jobs' ledger entries (reversals included) */
	int64_t amount_micros, cpu_mcore_s;
	/* amount per core-hour, micro-units, rounded half up; -1: no
	 * core-hours */
	int64_t per_core_h_micros;
};

struct hb_pilot_report {
	int64_t from_ms, to_ms;
	/* [group][side]: side 0 slurm, 1 kubernetes */
	struct hb_pilot_cell cell[HB__PILOT_COUNT][2];
};

/*
 * The pilot and control groups' terminal jobs that ended in [from_ms,
 * to_ms) (ended_ms, or updated_ms where it is not known), per group and
 * side, into *out.  Read in one transaction.
 */
int hb_store_pilot_report(struct hb_store *st, int64_t from_ms, int64_t to_ms,
			  struct hb_pilot_report *out, struct hb_err *err);

/*
 * The ledger per job, for reconciliation (state/ledger_jobs.c; hpcbridge
 * report --reconcile compares it with Slurm's accounting).
 */
struct hb_ledger_job {
	const char *job_id;	   /* the gateway id */
	int64_t slurm_job_id;	   /* -1: none */
	enum hb_job_target target; /* the job's own (a burst job's is
				    * kubernetes) */
	const char *user, *account; /* NULL: none */
	/* Over the job's live entries (neither a reversal nor reversed):
	 * the first period's start and the last period's end */
	int64_t first_start_ms, last_end_ms;
	int64_t cpu_mcore_s; /* every entry's, so net of reversals */
	int64_t entries;     /* reversals included */
};

/*
 * Call cb for each job (each part of a job: the Slurm job each array
 * task ran as, in slurm_job_id) with a live entry on side whose period
 * ends in [from_ms, to_ms), oldest job first; strings are borrowed for
 * the call.
 * A non-zero return from cb stops and is returned.
 */
int hb_store_ledger_jobs(struct hb_store *st, enum hb_job_target side,
			 int64_t from_ms, int64_t to_ms,
			 int (*cb)(const struct hb_ledger_job *, void *),
			 void *arg, struct hb_err *err);

#endif
