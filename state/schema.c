/*
 * schema.c - the store's schema: one migration per version, each taking a
 * file from version v to v + 1 (store.c runs them, see migrate()).
 */
#include "store_int.h"

/*
 * Migrations: migrations[v] takes a file from version v to v + 1.  Never
 * edit one that has shipped; add the next.  Each runs in one transaction
 * with the user_version update, so a file is always at some version.
 */
static const char schema_v1[] =
	/* The job id sequence: only grows (a trigger says so), so an id is
	 * never handed out twice, whatever happens to the jobs table. */
	"CREATE TABLE seq ("
	" name TEXT PRIMARY KEY NOT NULL,"
	" value INTEGER NOT NULL"
	") WITHOUT ROWID, STRICT;"
	"INSERT INTO seq (name, value) VALUES ('job', 0);"
	"CREATE TRIGGER seq_grows BEFORE UPDATE ON seq"
	" WHEN NEW.value <= OLD.value OR NEW.name IS NOT OLD.name"
	" BEGIN SELECT RAISE(ABORT, 'seq: a sequence only grows'); END;"
	"CREATE TRIGGER seq_kept BEFORE DELETE ON seq"
	" BEGIN SELECT RAISE(ABORT, 'seq: a sequence is never deleted'); END;"

	/* seq is the rowid (newest first is a plain backward scan); id, the
	 * job's name everywhere, is its unique key. */
	"CREATE TABLE jobs ("
	" seq INTEGER PRIMARY KEY,"
	" id TEXT NOT NULL UNIQUE,"
	" origin TEXT NOT NULL,"
	" target TEXT NOT NULL,"
	" state TEXT NOT NULL,"
	" \"user\" TEXT,"
	" uid INTEGER NOT NULL,"
	" account TEXT,"
	" \"partition\" TEXT,"
	" name TEXT,"
	" slurm_job_id INTEGER,"
	" k8s_namespace TEXT,"
	" k8s_name TEXT,"
	" k8s_uid TEXT,"
	" exit_code INTEGER,"
	" reason TEXT,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL,"
	" jobspec TEXT CONSTRAINT jobspec_json"
	"  CHECK (jobspec IS NULL OR json_valid(jobspec))"
	") STRICT;"
	"CREATE INDEX jobs_uid ON jobs (uid);"
	"CREATE INDEX jobs_state ON jobs (state);"
	"CREATE UNIQUE INDEX jobs_slurm_job_id ON jobs (slurm_job_id)"
	" WHERE slurm_job_id IS NOT NULL;"

	/* No AUTOINCREMENT: nothing refers to a decision's id, and events
	 * and ledger rows cannot be deleted, so max + 1 never repeats. */
	"CREATE TABLE decisions ("
	" id INTEGER PRIMARY KEY,"
	" job_id TEXT NOT NULL REFERENCES jobs (id),"
	" at_ms INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" inputs TEXT CONSTRAINT inputs_json"
	"  CHECK (inputs IS NULL OR json_valid(inputs)),"
	" explanation TEXT,"
	" policy TEXT"
	") STRICT;"
	"CREATE INDEX decisions_job ON decisions (job_id, id);"

	"CREATE TABLE events ("
	" id INTEGER PRIMARY KEY,"
	" at_ms INTEGER NOT NULL,"
	" actor_uid INTEGER NOT NULL,"
	" actor_user TEXT,"
	" peer TEXT,"
	" action TEXT NOT NULL,"
	" job_id TEXT,"
	" detail TEXT CONSTRAINT detail_json"
	"  CHECK (detail IS NULL OR json_valid(detail))"
	") STRICT;"
	"CREATE INDEX events_job ON events (job_id, id)"
	" WHERE job_id IS NOT NULL;"
	"CREATE TRIGGER events_no_update BEFORE UPDATE ON events"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"
	"CREATE TRIGGER events_no_delete BEFORE DELETE ON events"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"
	/* INSERT OR REPLACE deletes without firing delete triggers. */
	"CREATE TRIGGER events_no_replace BEFORE INSERT ON events"
	" WHEN EXISTS (SELECT 1 FROM events WHERE id = NEW.id)"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"

	/* Money is integers; a correction is a new row that reverses one. */
	"CREATE TABLE ledger ("
	" id INTEGER PRIMARY KEY,"
	" at_ms INTEGER NOT NULL,"
	" job_id TEXT REFERENCES jobs (id),"
	" account TEXT,"
	" \"user\" TEXT,"
	" side TEXT NOT NULL,"
	" kind TEXT NOT NULL,"
	" quantity INTEGER NOT NULL,"
	" rate_version TEXT,"
	" amount_micros INTEGER NOT NULL,"
	" reverses INTEGER REFERENCES ledger (id)"
	") STRICT;"
	"CREATE INDEX ledger_job ON ledger (job_id);"
	"CREATE INDEX ledger_at ON ledger (at_ms);"
	"CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER ledger_no_replace BEFORE INSERT ON ledger"
	" WHEN EXISTS (SELECT 1 FROM ledger WHERE id = NEW.id)"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;";

/*
 * Version 2: the JSON columns lose their json_valid() CHECKs.  SQLite's
 * check parsed every JSON column again on each insert, about a third of a
 * decision's cost; the store now checks JSON itself before binding
 * (hb_json_check, same strictness, a fraction of the cost), so nothing
 * that is not JSON gets in either way.  SQLite cannot drop a constraint:
 * each table is rebuilt (create, copy, drop, rename) and its indexes and
 * triggers made again.  Runs with foreign keys off, as SQLite requires for
 * a rebuild; migrate() checks them before committing.
 */
static const char schema_v2[] =
	"CREATE TABLE jobs_v2 ("
	" seq INTEGER PRIMARY KEY,"
	" id TEXT NOT NULL UNIQUE,"
	" origin TEXT NOT NULL,"
	" target TEXT NOT NULL,"
	" state TEXT NOT NULL,"
	" \"user\" TEXT,"
	" uid INTEGER NOT NULL,"
	" account TEXT,"
	" \"partition\" TEXT,"
	" name TEXT,"
	" slurm_job_id INTEGER,"
	" k8s_namespace TEXT,"
	" k8s_name TEXT,"
	" k8s_uid TEXT,"
	" exit_code INTEGER,"
	" reason TEXT,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL,"
	" jobspec TEXT"
	") STRICT;"
	"INSERT INTO jobs_v2 SELECT seq, id, origin, target, state, \"user\","
	" uid, account, \"partition\", name, slurm_job_id, k8s_namespace,"
	" k8s_name, k8s_uid, exit_code, reason, created_ms, updated_ms,"
	" jobspec FROM jobs;"
	"DROP TABLE jobs;"
	"ALTER TABLE jobs_v2 RENAME TO jobs;"
	"CREATE INDEX jobs_uid ON jobs (uid);"
	"CREATE INDEX jobs_state ON jobs (state);"
	"CREATE UNIQUE INDEX jobs_slurm_job_id ON jobs (slurm_job_id)"
	" WHERE slurm_job_id IS NOT NULL;"

	"CREATE TABLE decisions_v2 ("
	" id INTEGER PRIMARY KEY,"
	" job_id TEXT NOT NULL REFERENCES jobs (id),"
	" at_ms INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" inputs TEXT,"
	" explanation TEXT,"
	" policy TEXT"
	") STRICT;"
	"INSERT INTO decisions_v2 SELECT id, job_id, at_ms, target, inputs,"
	" explanation, policy FROM decisions;"
	"DROP TABLE decisions;"
	"ALTER TABLE decisions_v2 RENAME TO decisions;"
	"CREATE INDEX decisions_job ON decisions (job_id, id);"

	"CREATE TABLE events_v2 ("
	" id INTEGER PRIMARY KEY,"
	" at_ms INTEGER NOT NULL,"
	" actor_uid INTEGER NOT NULL,"
	" actor_user TEXT,"
	" peer TEXT,"
	" action TEXT NOT NULL,"
	" job_id TEXT,"
	" detail TEXT"
	") STRICT;"
	"INSERT INTO events_v2 SELECT id, at_ms, actor_uid, actor_user, peer,"
	" action, job_id, detail FROM events;"
	"DROP TABLE events;"
	"ALTER TABLE events_v2 RENAME TO events;"
	"CREATE INDEX events_job ON events (job_id, id)"
	" WHERE job_id IS NOT NULL;"
	"CREATE TRIGGER events_no_update BEFORE UPDATE ON events"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"
	"CREATE TRIGGER events_no_delete BEFORE DELETE ON events"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"
	"CREATE TRIGGER events_no_replace BEFORE INSERT ON events"
	" WHEN EXISTS (SELECT 1 FROM events WHERE id = NEW.id)"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;";

/*
 * Version 3 (issue 20): the ledger holds one entry per job, per side, per
 * rate period, with the resource-seconds it charges, in place of one row
 * per kind of resource (nothing wrote those; any row there is copied,
 * kind and quantity kept, and appears in no report: it has no period).
 * Resource-seconds are integers in units fine enough for both sides:
 * CPU in millicore-seconds (Kubernetes requests 500m), memory in
 * MiB-seconds (Slurm's MB), whole nodes in node-seconds (exclusive
 * jobs), GPUs as a JSON object of type -> GPU-seconds (types are open:
 * a new GPU model needs no migration).  A unique partial index makes a
 * second reversal of one entry impossible, whoever writes it.  Reports
 * select by period_end_ms (indexed).
 */
static const char schema_v3[] =
	"CREATE TABLE ledger_v3 ("
	" id INTEGER PRIMARY KEY,"
	" at_ms INTEGER NOT NULL,"
	" job_id TEXT REFERENCES jobs (id),"
	" account TEXT,"
	" \"user\" TEXT,"
	" side TEXT NOT NULL,"
	" \"partition\" TEXT,"
	" queue TEXT,"
	" period_start_ms INTEGER,"
	" period_end_ms INTEGER,"
	" rate_version TEXT,"
	" cpu_mcore_s INTEGER NOT NULL DEFAULT 0,"
	" mem_mib_s INTEGER NOT NULL DEFAULT 0,"
	" node_s INTEGER NOT NULL DEFAULT 0,"
	" gpu_s TEXT,"
	" egress_bytes INTEGER NOT NULL DEFAULT 0,"
	" amount_micros INTEGER NOT NULL,"
	" reverses INTEGER REFERENCES ledger (id),"
	" kind TEXT,"
	" quantity INTEGER"
	") STRICT;"
	"INSERT INTO ledger_v3 (id, at_ms, job_id, account, \"user\", side,"
	" rate_version, amount_micros, reverses, kind, quantity)"
	" SELECT id, at_ms, job_id, account, \"user\", side, rate_version,"
	" amount_micros, reverses, kind, quantity FROM ledger;"
	"DROP TABLE ledger;"
	"ALTER TABLE ledger_v3 RENAME TO ledger;"
	"CREATE INDEX ledger_job ON ledger (job_id);"
	"CREATE INDEX ledger_period ON ledger (period_end_ms);"
	"CREATE UNIQUE INDEX ledger_reversed_once ON ledger (reverses)"
	" WHERE reverses IS NOT NULL;"
	"CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER ledger_no_replace BEFORE INSERT ON ledger"
	" WHEN EXISTS (SELECT 1 FROM ledger WHERE id = NEW.id)"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;";

/*
 * Version 4 (issue 20): when a job started and ended, in wall-clock ms
 * (NULL: not known).  The store sets them as the job's state moves
 * (running: started, final: ended, each the first time);
 * hb_store_job_set_times() replaces them with what the side measured
 * (Slurm's start and end, the pods').  The pilot report's queue wait and
 * run time are read from them, the ledger's amounts are not.  And the
 * ledger's entries say which part of their job they charge.
 */
static const char schema_v4[] =
	"ALTER TABLE jobs ADD COLUMN started_ms INTEGER;"
	"ALTER TABLE jobs ADD COLUMN ended_ms INTEGER;"
	/* Which part of its job an entry charges: on Slurm the Slurm job
	 * it ran as (each task of an array is one), on Kubernetes "t<N>"
	 * for array task N; NULL: the whole job.  A part is metered and
	 * corrected on its own. */
	"ALTER TABLE ledger ADD COLUMN part TEXT;";

/*
 * Version 5 (issue 21): checkpoint storage is charged.  A ledger entry
 * carries the checkpoint storage it charges in MiB-seconds (bytes kept
 * in S3 x seconds / 2^20, rounded half up: byte-seconds would pass
 * 2^63 in a year's report of a few TB), and each checkpoint location
 * (s3://BUCKET/PREFIX) has a storage meter: the bytes it held when last
 * measured, since when they are charged, and the job (with its account, user and rate class)
 * charged for them.  The location is the key, not the job: the jobs of
 * one user and directory share it, and its bytes are charged once.
 */
static const char schema_v5[] =
	"ALTER TABLE ledger ADD COLUMN storage_mib_s INTEGER NOT NULL "
	"DEFAULT 0;"
	"CREATE TABLE storage_meters ("
	" url TEXT PRIMARY KEY NOT NULL,"
	" job_id TEXT NOT NULL REFERENCES jobs (id),"
	" account TEXT,"
	" \"user\" TEXT,"
	" queue TEXT,"
	" bytes INTEGER NOT NULL CHECK (bytes >= 0),"
	" since_ms INTEGER NOT NULL CHECK (since_ms >= 0)"
	") STRICT;"
	"CREATE INDEX storage_meters_job ON storage_meters (job_id);";

const char *const hb_si_migrations[] = {
	schema_v1, schema_v2, schema_v3, schema_v4, schema_v5
};

_Static_assert(sizeof(hb_si_migrations) / sizeof(hb_si_migrations[0]) ==
		       HB_STORE_SCHEMA_VERSION,
	       "one migration per schema version");

