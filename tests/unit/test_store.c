/*
 * test_store.c - the SQLite state store: schema versions, ids, state
 * rules, append-only tables, binding, group commit, listing, errors.
 *
 * Each test gets its own temporary directory, removed afterwards.  Checks
 * on the file itself go through a second, raw sqlite3 connection.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hpcbridge/error.h"
#include "hpcbridge/store.h"
#include "testutil.h"
#include "state/walbuf.h" /* private to the store */

struct fx {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/hb-store-test.XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/state.db", fx->dir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	struct dirent *de;
	char p[512];
	DIR *d = opendir(fx->dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", fx->dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* --- helpers ---------------------------------------------------------- */

static struct hb_store *open_ok(const char *path)
{
	struct hb_err err = { 0 };
	struct hb_store *st = NULL;
	int rc = hb_store_open(path, &st, &err);

	if (rc)
		fail_msg("open %s: %s", path, err.msg);
	return st;
}

static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

/* The integer the query's first row gives (-999 for no row). */
static int64_t raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v = -999;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL))
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* The text of the query's first row, malloc'd ("" for NULL/no row). */
static char *raw_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	const char *t = NULL;
	char *r;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL))
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW)
		t = (const char *)sqlite3_column_text(s, 0);
	r = strdup(t ? t : "");
	sqlite3_finalize(s);
	return r;
}

static void raw_exec_ok(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
}

/* sqlite3_exec that must fail; returns SQLite's message (malloc'd). */
static char *raw_exec_fails(sqlite3 *db, const char *sql)
{
	char *msg = NULL, *r;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		fail_msg("succeeded but should not: %s", sql);
	r = strdup(msg ? msg : "");
	sqlite3_free(msg);
	return r;
}

static int64_t count(const char *path, const char *table)
{
	char sql[128];
	sqlite3 *db = raw_open(path);
	int64_t n;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	n = raw_int(db, sql);
	sqlite3_close(db);
	return n;
}

/* The job id sequence as others see it. */
static int64_t seq_value(const char *path)
{
	sqlite3 *db = raw_open(path);
	int64_t n = raw_int(db, "SELECT value FROM seq WHERE name = 'job'");

	sqlite3_close(db);
	return n;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' does not contain '%s'", hay, needle);
}

/* Add a job with the usual fields; its id goes to id. */
static void add_job(struct hb_store *st, int64_t uid, enum hb_job_state state,
		    char *id, size_t idsize)
{
	struct hb_job_row r = {
		.entry = HB_ENTRY_SLURM,
		.user = "alice",
		.uid = uid,
		.account = "physics",
		.partition = "batch",
		.name = "hello",
		.state = state,
		.jobspec = "{\"name\":\"hello\"}",
		.slurm_job_id = -1,
		.exit_code = -1,
	};
	struct hb_err err = { 0 };

	if (hb_store_job_add(st, &r, &err))
		fail_msg("job_add: %s", err.msg);
	assert_true(strlen(r.id) > 3);
	if (id)
		snprintf(id, idsize, "%s", r.id);
}

static int64_t fixed_ms = 1700000000000;

static int64_t fixed_clock(void *arg)
{
	int64_t *t = arg;

	return (*t)++;
}

/* --- open and schema versions ----------------------------------------- */

static void test_open_creates(void **state)
{
	struct fx *fx = *state;
	struct hb_store_info info;
	struct hb_err err = { 0 };
	struct hb_store *st;
	struct stat sb;
	sqlite3 *db;
	char *mode;

	assert_int_not_equal(stat(fx->path, &sb), 0);
	st = open_ok(fx->path);
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(hb_store_version(st), HB_STORE_SCHEMA_VERSION);
	/* The live connection's settings. */
	assert_int_equal(hb_store_info(st, &info, &err), 0);
	assert_string_equal(info.journal_mode, "wal");
	assert_int_equal(info.synchronous, 2); /* FULL */
	assert_int_equal(info.foreign_keys, 1);
	assert_int_equal(info.busy_timeout_ms, HB_STORE_BUSY_MS);
	assert_int_equal(info.version, HB_STORE_SCHEMA_VERSION);
	assert_int_equal(info.app_id, HB_STORE_APP_ID);
	hb_store_close(st);

	/* And the file's, seen from another connection. */
	db = raw_open(fx->path);
	mode = raw_text(db, "PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	free(mode);
	assert_int_equal(raw_int(db, "PRAGMA user_version"),
			 HB_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(db, "PRAGMA application_id"), HB_STORE_APP_ID);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master "
				     "WHERE type = 'table' AND name IN "
				     "('jobs', 'decisions', 'events', "
				     "'ledger', 'seq')"),
			 5);
	mode = raw_text(db, "PRAGMA integrity_check");
	assert_string_equal(mode, "ok");
	free(mode);
	sqlite3_close(db);
	hb_store_close(NULL); /* no-op */
}

static void test_reopen_noop(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *st;
	char id[32], *schema1, *schema2;
	sqlite3 *db;

	st = open_ok(fx->path);
	add_job(st, 1000, HB_JOB_PENDING, id, sizeof(id));
	hb_store_close(st);
	db = raw_open(fx->path);
	schema1 = raw_text(db, "SELECT group_concat(sql, ';') FROM "
			       "(SELECT sql FROM sqlite_master ORDER BY name)");
	sqlite3_close(db);

	st = open_ok(fx->path);
	assert_int_equal(hb_store_version(st), HB_STORE_SCHEMA_VERSION);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_string_equal(row.id, id);
	hb_job_row_free(&row);
	hb_store_close(st);

	db = raw_open(fx->path);
	schema2 = raw_text(db, "SELECT group_concat(sql, ';') FROM "
			       "(SELECT sql FROM sqlite_master ORDER BY name)");
	assert_int_equal(raw_int(db, "PRAGMA user_version"),
			 HB_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(db, "SELECT value FROM seq"), 1);
	sqlite3_close(db);
	assert_true(strlen(schema1) > 100);
	assert_string_equal(schema1, schema2);
	free(schema1);
	free(schema2);
}

static void test_newer_refused(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st = (struct hb_store *)1;
	char sql[64];
	sqlite3 *db;

	hb_store_close(open_ok(fx->path));
	db = raw_open(fx->path);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 HB_STORE_SCHEMA_VERSION + 1);
	raw_exec_ok(db, sql);
	sqlite3_close(db);

	assert_int_equal(hb_store_open(fx->path, &st, &err), HB_ESTORE);
	assert_null(st);
	assert_int_equal(err.code, HB_ESTORE);
	assert_contains(err.msg, fx->path);
	snprintf(sql, sizeof(sql),
		 "open: schema version %d is newer than this build's (%d)",
		 HB_STORE_SCHEMA_VERSION + 1, HB_STORE_SCHEMA_VERSION);
	assert_contains(err.msg, sql);
	/* Left as it was. */
	db = raw_open(fx->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"),
			 HB_STORE_SCHEMA_VERSION + 1);
	sqlite3_close(db);
}

static void test_foreign_files_refused(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st = NULL;
	sqlite3 *db;
	int fd;

	/* Another program's SQLite file. */
	db = raw_open(fx->path);
	raw_exec_ok(db, "PRAGMA application_id = 1234; "
			"CREATE TABLE t (x); INSERT INTO t VALUES (1)");
	sqlite3_close(db);
	assert_int_equal(hb_store_open(fx->path, &st, &err), HB_ESTORE);
	assert_null(st);
	assert_contains(err.msg, "not an hpcbridge store");
	assert_int_equal(count(fx->path, "t"), 1);
	assert_int_equal(count(fx->path, "sqlite_master"), 1);
	unlink(fx->path);

	/* Not SQLite at all: SQLite's own message, the file untouched. */
	fd = open(fx->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(write(fd, "not a database, just text.\n", 27),
				 27);
	close(fd);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_open(fx->path, &st, &err), HB_ESTORE);
	assert_contains(err.msg, "open: file is not a database");
	size_t len;
	char *back = hb_test_read_file(fx->path, &len);
	assert_int_equal(len, 64 * 27);
	assert_memory_equal(back, "not a database, just text.\n", 27);
	free(back);

	/* A directory that does not exist. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_open("/nonexistent-hb/dir/state.db", &st, &err),
		HB_ESTORE);
	assert_contains(err.msg, "/nonexistent-hb/dir/state.db: open: ");
	assert_contains(err.msg, "unable to open database file");

	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_open("", &st, &err), HB_EINVAL);
	assert_contains(err.msg, "path");
}

/*
 * Fixtures for every schema version before the current one, written by
 * hand (never by the store), each with a user row where the version can
 * hold one.  Adding a schema version without a fixture for the one before
 * it does not compile.
 */
static void fixture_v0(const char *path)
{
	sqlite3 *db = raw_open(path);

	/* What an installer leaves: an empty database, rollback journal,
	 * a small page size, version 0. */
	raw_exec_ok(db, "PRAGMA page_size = 1024; PRAGMA journal_mode = "
			"DELETE; PRAGMA user_version = 0; VACUUM");
	sqlite3_close(db);
}

/* Version 1 as a build of that version wrote it (an sqlite3 .dump of
 * its file, see the header of the .sql), with a small page size. */
static void fixture_sql(const char *path, const char *file)
{
	sqlite3 *db = raw_open(path);
	char *sql = hb_test_read_file(file, NULL);

	assert_non_null(sql);
	raw_exec_ok(db, "PRAGMA page_size = 1024; PRAGMA journal_mode = "
			"DELETE");
	raw_exec_ok(db, sql);
	free(sql);
	sqlite3_close(db);
}

static void fixture_v1(const char *path)
{
	fixture_sql(path, HB_SOURCE_DIR "/tests/unit/fixtures/store-v1.sql");
}

/* Version 2: store-v1.sql after version 2's migration (see its header). */
static void fixture_v2(const char *path)
{
	fixture_sql(path, HB_SOURCE_DIR "/tests/unit/fixtures/store-v2.sql");
}

/* Version 3: store-v2.sql after version 3's migration (see its header). */
static void fixture_v3(const char *path)
{
	fixture_sql(path, HB_SOURCE_DIR "/tests/unit/fixtures/store-v3.sql");
}

/* Version 4: store-v3.sql after version 4's migration (see its header). */
static void fixture_v4(const char *path)
{
	fixture_sql(path, HB_SOURCE_DIR "/tests/unit/fixtures/store-v4.sql");
}

static const struct {
	void (*make)(const char *path);
	int64_t jobs; /* rows in jobs */
} fixtures[] = { { fixture_v0, 0 },
		 { fixture_v1, 2 },
		 { fixture_v2, 2 },
		 { fixture_v3, 2 },
		 { fixture_v4, 2 } };

_Static_assert(sizeof(fixtures) / sizeof(fixtures[0]) ==
		       HB_STORE_SCHEMA_VERSION,
	       "a hand-written fixture for every older schema version");

/* What version 1 held is all there after the upgrade, and the rebuilt
 * tables keep their keys, triggers and checks. */
static void check_v1_kept(struct hb_store *st, const char *path)
{
	struct hb_decision_row d = { 0 };
	struct hb_err err = { 0 };
	sqlite3 *db;

	assert_int_equal(hb_store_decision_get(st, "hb-000001", &d, &err), 0);
	assert_int_equal(d.target, HB_TARGET_KUBERNETES);
	assert_non_null(strstr(d.inputs, "\"placement\":{\"target\""));
	assert_non_null(strstr(d.explanation, "decision: kubernetes"));
	hb_decision_row_free(&d);
	/* Version 4: the old jobs have no times; the old ledger row is
	 * the job's cost. */
	struct hb_job_row j = { 0 };

	assert_int_equal(hb_store_job_get(st, "hb-000001", &j, &err), 0);
	assert_int_equal(j.started_ms, -1);
	assert_int_equal(j.ended_ms, -1);
	assert_int_equal(j.cost_micros, 2500);
	hb_job_row_free(&j);
	assert_int_equal(hb_store_job_get(st, "hb-000002", &j, &err), 0);
	assert_int_equal(j.cost_micros, -1);
	hb_job_row_free(&j);
	/* Foreign keys still hold (the rebuild ran with them off). */
	assert_int_equal(hb_store_decision_add(st, "hb-999999", HB_TARGET_SLURM,
					       NULL, NULL, NULL, &err),
			 HB_ENOENT);
	memset(&err, 0, sizeof(err));
	/* JSON is still checked, now by the store itself. */
	assert_int_equal(hb_store_event_add(st, 0, NULL, NULL, "x", NULL,
					    "{\"a\":", &err),
			 HB_EINVAL);
	assert_contains(err.msg, "event_add: detail: not JSON: ");

	db = raw_open(path);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM decisions"), 1);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 1);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM ledger"), 1);
	assert_int_equal(raw_int(db, "SELECT value FROM seq"), 3);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master "
				     "WHERE sql LIKE '%json_valid%' OR "
				     "name LIKE '%_v2'"),
			 0);
	/* every index and trigger of version 1 is there again, but the
	 * ledger's at_ms index: version 3 indexes the period's end instead,
	 * and a reversal's target (unique); version 5 the storage meters'
	 * jobs */
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master "
				     "WHERE type IN ('index', 'trigger') AND "
				     "name NOT LIKE 'sqlite_%'"),
			 17);
	/* Version 5: the old row charges no storage, and no location has
	 * a meter yet */
	assert_int_equal(raw_int(db, "SELECT count(*) FROM ledger WHERE id = 1 "
				     "AND storage_mib_s = 0"),
			 1);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM storage_meters"),
			 0);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master "
				     "WHERE name IN ('ledger_period', "
				     "'ledger_reversed_once')"),
			 2);
	/* the old ledger row is kept as it was, kind and quantity too */
	assert_int_equal(raw_int(db, "SELECT count(*) FROM ledger WHERE id = 1 "
				     "AND kind = 'cpu_seconds' AND quantity = "
				     "120 AND amount_micros = 2500 AND "
				     "period_end_ms IS NULL"),
			 1);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM "
				     "pragma_foreign_key_check"),
			 0);
	assert_int_equal(sqlite3_exec(db, "DELETE FROM events", NULL, NULL,
				      NULL),
			 SQLITE_CONSTRAINT);
	sqlite3_close(db);
}

static void test_upgrade_in_place(void **state)
{
	struct fx *fx = *state;
	struct stat before, after;
	struct hb_store_info info;
	struct hb_err err = { 0 };
	struct hb_store *st;
	sqlite3 *db;
	char *mode;
	char id[32];

	for (size_t v = 0; v < sizeof(fixtures) / sizeof(fixtures[0]); v++) {
		char want[32];

		unlink(fx->path);
		fixtures[v].make(fx->path);
		db = raw_open(fx->path);
		assert_int_equal(raw_int(db, "PRAGMA user_version"),
				 (int64_t)v);
		mode = raw_text(db, "PRAGMA journal_mode");
		assert_string_equal(mode, "delete");
		free(mode);
		sqlite3_close(db);
		assert_int_equal(stat(fx->path, &before), 0);

		st = open_ok(fx->path);
		assert_int_equal(hb_store_version(st), HB_STORE_SCHEMA_VERSION);
		assert_int_equal(hb_store_info(st, &info, &err), 0);
		assert_string_equal(info.journal_mode, "wal");
		assert_int_equal(info.synchronous, 2);
		add_job(st, 7, HB_JOB_PENDING, id, sizeof(id));
		snprintf(want, sizeof(want), "hb-%06lld",
			 (long long)fixtures[v].jobs + 1);
		assert_string_equal(id, want);
		if (v >= 1)
			check_v1_kept(st, fx->path);
		hb_store_close(st);

		/* The same file, upgraded where it lies. */
		assert_int_equal(stat(fx->path, &after), 0);
		assert_int_equal(before.st_ino, after.st_ino);
		db = raw_open(fx->path);
		assert_int_equal(raw_int(db, "PRAGMA user_version"),
				 HB_STORE_SCHEMA_VERSION);
		assert_int_equal(raw_int(db, "PRAGMA page_size"), 1024);
		assert_int_equal(raw_int(db, "SELECT count(*) FROM jobs"),
				 fixtures[v].jobs + 1);
		sqlite3_close(db);
	}

	/* An empty file (touched, never written) is version 0 too. */
	unlink(fx->path);
	int fd = open(fx->path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	st = open_ok(fx->path);
	assert_int_equal(hb_store_version(st), HB_STORE_SCHEMA_VERSION);
	hb_store_close(st);
}

static void test_partial_schema_rolls_back(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st = NULL;
	sqlite3 *db;

	/* Version 0 with a stray half of a schema: the migration fails on
	 * it and leaves nothing of its own behind. */
	db = raw_open(fx->path);
	raw_exec_ok(db, "CREATE TABLE jobs (id TEXT); "
			"INSERT INTO jobs VALUES ('old')");
	sqlite3_close(db);
	assert_int_equal(hb_store_open(fx->path, &st, &err), HB_ESTORE);
	assert_null(st);
	assert_contains(err.msg, "migration to schema version 1: ");
	assert_contains(err.msg, "table jobs already exists");
	db = raw_open(fx->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 0);
	assert_int_equal(raw_int(db, "PRAGMA application_id"), 0);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master "
				     "WHERE name IN ('seq', 'decisions', "
				     "'events', 'ledger')"),
			 0);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM jobs"), 1);
	sqlite3_close(db);
}

/* --- ids -------------------------------------------------------------- */

static void test_ids_never_reused(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row bad = { .entry = HB_ENTRY_CLI, .state = 99 };
	struct hb_err err = { 0 };
	struct hb_store *st;
	char id[32], *msg;
	sqlite3 *db;

	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000001");
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000002");
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000003");
	/* A refused add takes no id. */
	assert_int_equal(hb_store_job_add(st, &bad, &err), HB_EINVAL);
	assert_string_equal(bad.id, "");

	/* Delete the newest rows behind the store's back, and try to wind
	 * the sequence back. */
	db = raw_open(fx->path);
	raw_exec_ok(db, "DELETE FROM jobs WHERE id IN ('hb-000002', "
			"'hb-000003')");
	msg = raw_exec_fails(db, "UPDATE seq SET value = 1");
	assert_contains(msg, "a sequence only grows");
	free(msg);
	msg = raw_exec_fails(db, "DELETE FROM seq");
	assert_contains(msg, "never deleted");
	free(msg);
	sqlite3_close(db);

	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000004");
	hb_store_close(st);

	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000005");
	/* Increasing as text too, while the width holds. */
	assert_true(strcmp("hb-000004", id) < 0);
	hb_store_close(st);

	/* Even with the whole table emptied. */
	db = raw_open(fx->path);
	raw_exec_ok(db, "DELETE FROM jobs");
	sqlite3_close(db);
	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000006");
	hb_store_close(st);
}

/* --- leased ids ------------------------------------------------------- */

/* Add a job under id (a leased one): want is the code expected. */
static void add_leased(struct hb_store *st, const char *id, int want)
{
	struct hb_job_row r = {
		.entry = HB_ENTRY_SLURM,
		.user = "alice",
		.uid = 1000,
		.partition = "batch",
		.target = HB_TARGET_SLURM,
		.jobspec = "{}",
		.slurm_job_id = -1,
		.exit_code = -1,
	};
	struct hb_err err = { 0 };
	int rc = hb_store_job_add_leased(st, &r, id, &err);

	if (rc != want)
		fail_msg("%s: %d, wanted %d (%s)", id ? id : "NULL", rc, want,
			 err.msg);
	if (rc) {
		assert_string_equal(r.id, "");
		assert_true(err.msg[0]);
	} else {
		assert_string_equal(r.id, id);
	}
}

static void lease_ok(struct hb_store *st, uint32_t n, int64_t lo, int64_t hi)
{
	struct hb_err err = { 0 };
	int64_t l = -1, h = -1;

	if (hb_store_id_lease(st, n, &l, &h, &err))
		fail_msg("lease: %s", err.msg);
	assert_int_equal(l, lo);
	assert_int_equal(h, hi);
}

/* A lease reserves numbers past every id given, for good; the plugin's
 * jobs come back with their leased ids, once each. */
static void test_id_lease(void **state)
{
	struct fx *fx = *state;
	static const char *const bad[] = { "hb-12", "hb-0000001", "x",
					   "hb-000000", "hb-00001a", "hb-",
					   "HB-000005", NULL };
	struct hb_job_row got;
	struct hb_err err = { 0 };
	struct hb_store *st;
	int64_t lo = -1, hi = -1;
	char id[32];

	assert_int_equal(hb_store_id_seq("hb-000042"), 42);
	assert_int_equal(hb_store_id_seq("hb-1234567"), 1234567);
	assert_int_equal(hb_store_id_seq("hb-0000001"), -1);

	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000002");
	/* its own transaction: the sequence is on disk at once */
	lease_ok(st, 10, 3, 12);
	assert_int_equal(seq_value(fx->path), 12);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000013");

	add_leased(st, "hb-000005", 0);
	assert_int_equal(hb_store_job_get(st, "hb-000005", &got, &err), 0);
	assert_string_equal(got.user, "alice");
	assert_int_equal(got.target, HB_TARGET_SLURM);
	hb_job_row_free(&got);
	/* a notice and the reconciler may both bring it */
	add_leased(st, "hb-000005", HB_EEXIST);
	/* a number given by the sequence is taken too */
	add_leased(st, "hb-000013", HB_EEXIST);
	/* above everything leased */
	add_leased(st, "hb-000014", HB_EINVAL);
	for (size_t i = 0; bad[i]; i++)
		add_leased(st, bad[i], HB_EINVAL);
	add_leased(st, NULL, HB_EINVAL);
	assert_int_equal(hb_store_id_lease(st, 0, &lo, &hi, &err), HB_EINVAL);
	assert_true(lo == 0 && hi == 0);
	/* the refusals moved nothing */
	assert_int_equal(seq_value(fx->path), 13);
	assert_int_equal(count(fx->path, "jobs"), 4);
	hb_store_close(st);

	/* the sequence is durable: the next lease starts past it, and the
	 * old lease's numbers are still good */
	st = open_ok(fx->path);
	lease_ok(st, 5, 14, 18);
	add_leased(st, "hb-000012", 0);
	add_leased(st, "hb-000018", 0);
	add_leased(st, "hb-000019", HB_EINVAL);
	hb_store_close(st);

	st = open_ok(fx->path);
	/* in a transaction: the sequence moves at commit; a lease rolled
	 * back is given again (so the daemon commits a lease before it
	 * publishes one) */
	assert_int_equal(hb_store_begin(st, &err), 0);
	lease_ok(st, 3, 19, 21);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000022");
	assert_int_equal(hb_store_rollback(st), 0);
	assert_int_equal(seq_value(fx->path), 18);
	assert_int_equal(count(fx->path, "jobs"), 6);
	assert_int_equal(hb_store_begin(st, &err), 0);
	lease_ok(st, 3, 19, 21);
	add_leased(st, "hb-000020", 0);
	assert_int_equal(hb_store_commit(st, &err), 0);
	assert_int_equal(seq_value(fx->path), 21);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000022");
	hb_store_close(st);
	assert_int_equal(count(fx->path, "jobs"), 8);
}

/* --- states ----------------------------------------------------------- */

static void test_state_rules(void **state)
{
	static const char *const names[] = { "pending",	  "queued",
					     "running",	  "completing",
					     "succeeded", "failed",
					     "cancelled", "lost",
					     "suspended" };
	static const char *const targets[] = { "pending", "slurm", "kubernetes",
					       "rejected" };
	static const char *const entries[] = { "slurm", "cli", "kubernetes" };
	/* allowed[from][to] */
	static const int expect[9][9] = {
		/* pending */ { 1, 1, 1, 1, 1, 1, 1, 1, 0 },
		/* queued */ { 0, 1, 1, 1, 1, 1, 1, 1, 0 },
		/* running */ { 0, 1, 1, 1, 1, 1, 1, 1, 1 },
		/* completing */ { 0, 1, 0, 1, 1, 1, 1, 1, 0 },
		/* succeeded */ { 0, 0, 0, 0, 1, 0, 0, 0, 0 },
		/* failed */ { 0, 0, 0, 0, 0, 1, 0, 0, 0 },
		/* cancelled */ { 0, 0, 0, 0, 0, 0, 1, 0, 0 },
		/* lost */ { 0, 0, 0, 0, 0, 0, 0, 1, 0 },
		/* suspended */ { 0, 1, 1, 1, 1, 1, 1, 1, 1 },
	};

	(void)state;
	assert_int_equal(HB__JOB_STATE_COUNT, 9);
	for (int f = 0; f < 9; f++) {
		assert_string_equal(hb_job_state_name(f), names[f]);
		assert_int_equal(hb_job_state_parse(names[f]), f);
		assert_int_equal(hb_store_state_terminal(f), f >= 4 && f <= 7);
		for (int t = 0; t < 9; t++)
			if (hb_store_state_allowed(f, t) != expect[f][t])
				fail_msg("%s -> %s", names[f], names[t]);
	}
	assert_int_equal(hb_job_state_parse("done"), -1);
	assert_int_equal(hb_job_state_parse(NULL), -1);
	assert_int_equal(hb_job_state_parse("Running"), -1);
	assert_string_equal(hb_job_state_name(9), "unknown");
	assert_string_equal(hb_job_state_name(-1), "unknown");
	assert_false(hb_store_state_allowed(9, HB_JOB_RUNNING));
	assert_false(hb_store_state_allowed(HB_JOB_PENDING, -1));
	assert_false(hb_store_state_terminal(9));
	assert_false(hb_store_state_terminal(-1));

	/* Targets and entry points, likewise. */
	assert_int_equal(HB__TARGET_COUNT, 4);
	for (int t = 0; t < 4; t++) {
		assert_string_equal(hb_job_target_name(t), targets[t]);
		assert_int_equal(hb_job_target_parse(targets[t]), t);
	}
	assert_int_equal(hb_job_target_parse("cloud"), -1);
	assert_int_equal(hb_job_target_parse("auto"), -1);
	assert_int_equal(hb_job_target_parse(NULL), -1);
	assert_string_equal(hb_job_target_name(4), "unknown");
	assert_int_equal(HB__ENTRY_COUNT, 3);
	for (int e = 0; e < 3; e++) {
		assert_string_equal(hb_job_entry_name(e), entries[e]);
		assert_int_equal(hb_job_entry_parse(entries[e]), e);
	}
	assert_int_equal(hb_job_entry_parse("pbs"), -1);
	assert_int_equal(hb_job_entry_parse("Slurm"), -1);
	assert_string_equal(hb_job_entry_name(3), "unknown");
}

static void test_set_state(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row, bad = { .entry = HB_ENTRY_SLURM, .state = 9 };
	struct hb_err err = { 0 };
	struct hb_store *st;
	int64_t clock = fixed_ms;
	char id[32];

	st = open_ok(fx->path);
	hb_store_set_clock(st, fixed_clock, &clock);
	add_job(st, 1000, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.state, HB_JOB_PENDING);
	assert_int_equal(row.target, HB_TARGET_PENDING);
	hb_job_row_free(&row);

	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1,
						"started", &err),
			 0);
	/* A requeue goes back to queued; anything else back is refused. */
	assert_int_equal(
		hb_store_job_set_state(st, id, HB_JOB_QUEUED, -1, NULL, &err),
		0);
	assert_int_equal(
		hb_store_job_set_state(st, id, HB_JOB_PENDING, -1, NULL, &err),
		HB_ESTATE);
	assert_contains(err.msg, "job_set_state: hb-000001: queued -> "
				 "pending is not allowed");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1, NULL, &err),
		0);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.state, HB_JOB_RUNNING);
	assert_string_equal(row.reason, "started"); /* NULL kept it */
	assert_int_equal(row.exit_code, -1);
	hb_job_row_free(&row);

	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_SUCCEEDED, 0,
						"exit 0", &err),
			 0);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	int64_t updated = row.updated_ms;
	assert_int_equal(row.state, HB_JOB_SUCCEEDED);
	assert_int_equal(row.exit_code, 0);
	assert_true(row.updated_ms > row.created_ms);
	hb_job_row_free(&row);

	/* Final. */
	assert_int_equal(
		hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1, NULL, &err),
		HB_ESTATE);
	assert_contains(err.msg, "succeeded -> running is not allowed (a "
				 "final state)");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_job_set_state(st, id, HB_JOB_FAILED, 1, NULL, &err),
		HB_ESTATE);
	memset(&err, 0, sizeof(err));
	/* The same final state again is accepted and changes nothing. */
	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_SUCCEEDED, 7,
						"again", &err),
			 0);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.state, HB_JOB_SUCCEEDED);
	assert_int_equal(row.exit_code, 0);
	assert_string_equal(row.reason, "exit 0");
	assert_int_equal(row.updated_ms, updated);
	hb_job_row_free(&row);

	/* Values that are none, and unknown jobs. */
	assert_int_equal(hb_store_job_set_state(st, id, 9, -1, NULL, &err),
			 HB_EINVAL);
	assert_contains(err.msg, "job_set_state: state: unknown value 9 "
				 "(pending, queued, ");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_set_state(st, id, -1, -1, NULL, &err),
			 HB_EINVAL);
	assert_contains(err.msg, "state: unknown value -1");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_set_state(st, "hb-999999", HB_JOB_RUNNING,
						-1, NULL, &err),
			 HB_ENOENT);
	assert_contains(err.msg, "no job hb-999999");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_add(st, &bad, &err), HB_EINVAL);
	assert_contains(err.msg, "job_add: state: unknown value 9");
	memset(&err, 0, sizeof(err));
	bad.state = HB_JOB_PENDING;
	bad.entry = 3;
	assert_int_equal(hb_store_job_add(st, &bad, &err), HB_EINVAL);
	assert_contains(err.msg, "job_add: entry: unknown value 3 (slurm, cli, "
				 "kubernetes)");
	memset(&err, 0, sizeof(err));
	bad.entry = HB_ENTRY_CLI;
	bad.target = 4;
	assert_int_equal(hb_store_job_add(st, &bad, &err), HB_EINVAL);
	assert_contains(err.msg, "job_add: target: unknown value 4");
	assert_int_equal(count(fx->path, "jobs"), 1);
	hb_store_close(st);
}

/* --- append-only ------------------------------------------------------ */

static void test_append_only(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st;
	char id[32], *msg;
	sqlite3 *db;

	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_event_add(st, 1, "alice", "pid 42", "submit",
					    id, "{\"a\":1}", &err),
			 0);
	assert_int_equal(hb_store_event_add(st, 0, "root", "daemon", "start",
					    NULL, NULL, &err),
			 0);

	db = raw_open(fx->path);
	static const char *const bad_events[] = {
		"UPDATE events SET action = 'cancel' WHERE id = 1",
		"UPDATE events SET detail = NULL",
		"DELETE FROM events WHERE id = 1",
		"DELETE FROM events",
		("INSERT OR REPLACE INTO events (id, at_ms, actor_uid, action) "
		 "VALUES (1, 0, 0, 'forged')"),
	};
	for (size_t i = 0; i < sizeof(bad_events) / sizeof(bad_events[0]);
	     i++) {
		msg = raw_exec_fails(db, bad_events[i]);
		if (!strstr(msg, "events are append-only"))
			fail_msg("%s: %s", bad_events[i], msg);
		free(msg);
	}
	assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 2);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM events WHERE "
				     "action = 'submit' AND id = 1"),
			 1);

	/* The ledger: appends work, changes do not. */
	raw_exec_ok(db, "PRAGMA foreign_keys = ON");
	raw_exec_ok(db, "INSERT INTO ledger (at_ms, job_id, account, \"user\", "
			"side, kind, quantity, rate_version, amount_micros) "
			"VALUES (1, 'hb-000001', 'physics', 'alice', 'slurm', "
			"'cpu_s', 3600, 'v1', 1500000)");
	raw_exec_ok(db, "INSERT INTO ledger (at_ms, job_id, side, kind, "
			"quantity, amount_micros, reverses) VALUES (2, "
			"'hb-000001', 'slurm', 'cpu_s', -3600, -1500000, 1)");
	msg = raw_exec_fails(db, "UPDATE ledger SET amount_micros = 0");
	assert_contains(msg, "ledger is append-only");
	free(msg);
	msg = raw_exec_fails(db, "DELETE FROM ledger WHERE id = 2");
	assert_contains(msg, "ledger is append-only");
	free(msg);
	msg = raw_exec_fails(db, "REPLACE INTO ledger (id, at_ms, side, kind, "
				 "quantity, amount_micros) VALUES (1, 3, "
				 "'slurm', 'cpu_s', 0, 0)");
	assert_contains(msg, "ledger is append-only");
	free(msg);
	/* A reversal must point at a real entry. */
	msg = raw_exec_fails(db, "INSERT INTO ledger (at_ms, side, kind, "
				 "quantity, amount_micros, reverses) VALUES "
				 "(3, 'slurm', 'cpu_s', 1, 1, 99)");
	assert_contains(msg, "FOREIGN KEY constraint failed");
	free(msg);
	/* Money is integers. */
	msg = raw_exec_fails(db, "INSERT INTO ledger (at_ms, side, kind, "
				 "quantity, amount_micros) VALUES (3, 'slurm', "
				 "'cpu_s', 1, 1.5)");
	assert_contains(msg, "cannot store REAL value in INTEGER column");
	free(msg);
	assert_int_equal(raw_int(db, "SELECT sum(amount_micros) FROM ledger"),
			 0);
	sqlite3_close(db);
	hb_store_close(st);
}

/* --- binding ---------------------------------------------------------- */

static const char *const nasty[] = {
	"'); DROP TABLE jobs;--",
	"O'Brien said \"hi\" \\ and ''quoted''",
	"Robert'); DELETE FROM events; SELECT ('",
	"h\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80",
	"tab\there\nnewline\r\x01\x02\x1f\x7f",
	"%s %d %n ?1 :name @x $y",
};

static void test_strings_round_trip(void **state)
{
	struct fx *fx = *state;
	struct hb_decision_row d;
	struct hb_job_row in, out;
	struct hb_err err = { 0 };
	struct hb_store *st;
	char bytes[256], json[128];

	/* Every byte but NUL. */
	for (int i = 1; i < 256; i++)
		bytes[i - 1] = (char)i;
	bytes[255] = '\0';

	st = open_ok(fx->path);
	for (size_t i = 0; i <= sizeof(nasty) / sizeof(nasty[0]); i++) {
		const char *s =
			i < sizeof(nasty) / sizeof(nasty[0]) ? nasty[i] : bytes;

		snprintf(json, sizeof(json), "{\"k\":\"%s\"}",
			 i == 0 ? "'); DROP TABLE jobs;--" : "x");
		memset(&in, 0, sizeof(in));
		in.entry = HB_ENTRY_CLI;
		in.user = s;
		in.account = s;
		in.partition = s;
		in.name = s;
		in.reason = s;
		in.k8s_namespace = s;
		in.k8s_name = s;
		in.k8s_uid = s;
		in.jobspec = json;
		in.uid = 5;
		in.slurm_job_id = -1;
		in.exit_code = -1;
		if (hb_store_job_add(st, &in, &err))
			fail_msg("job_add: %s", err.msg);
		assert_int_equal(hb_store_job_get(st, in.id, &out, &err), 0);
		assert_string_equal(out.user, s);
		assert_string_equal(out.account, s);
		assert_string_equal(out.partition, s);
		assert_string_equal(out.name, s);
		assert_string_equal(out.reason, s);
		assert_string_equal(out.k8s_namespace, s);
		assert_string_equal(out.k8s_name, s);
		assert_string_equal(out.k8s_uid, s);
		assert_string_equal(out.jobspec, json);
		hb_job_row_free(&out);
		assert_null(out.priv);

		/* As a job id to look up, too: nothing, no harm. */
		assert_int_equal(hb_store_job_get(st, s, &out, &err),
				 HB_ENOENT);
		memset(&err, 0, sizeof(err));

		assert_int_equal(hb_store_decision_add(st, in.id,
						       HB_TARGET_SLURM, json, s,
						       s, &err),
				 0);
		assert_int_equal(hb_store_decision_get(st, in.id, &d, &err), 0);
		assert_string_equal(d.explanation, s);
		assert_string_equal(d.policy, s);
		assert_string_equal(d.inputs, json);
		hb_decision_row_free(&d);
		assert_int_equal(
			hb_store_event_add(st, 5, s, s, s, s, json, &err), 0);
	}
	hb_store_close(st);

	/* The tables are all still there, with every row. */
	assert_int_equal(count(fx->path, "jobs"), 7);
	assert_int_equal(count(fx->path, "decisions"), 7);
	assert_int_equal(count(fx->path, "events"), 7);
	/* Stored as text, byte for byte. */
	sqlite3 *db = raw_open(fx->path);
	assert_int_equal(raw_int(db, "SELECT length(CAST(name AS BLOB)) "
				     "FROM jobs WHERE id = 'hb-000007'"),
			 255);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM jobs WHERE "
				     "typeof(name) != 'text'"),
			 0);
	sqlite3_close(db);
}

/* JSON columns hold JSON, and strings are capped. */
static void test_json_and_caps(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row r = { .entry = HB_ENTRY_CLI,
				.jobspec = "{not json",
				.slurm_job_id = -1,
				.exit_code = -1 };
	struct hb_err err = { 0 };
	struct hb_store *st;
	char *big;
	char id[32];

	st = open_ok(fx->path);
	assert_int_equal(hb_store_job_add(st, &r, &err), HB_EINVAL);
	assert_contains(err.msg, fx->path);
	assert_contains(err.msg, "job_add: jobspec: not JSON: expected a "
				 "string key at byte 1");
	assert_string_equal(r.id, "");
	memset(&err, 0, sizeof(err));
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	/* The failed add took no id. */
	assert_string_equal(id, "hb-000001");
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_SLURM, "[1,",
					       NULL, NULL, &err),
			 HB_EINVAL);
	assert_contains(err.msg, "decision_add: inputs: not JSON: "
				 "unexpected end of input at byte 3");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_event_add(st, 1, NULL, NULL, "x", NULL, "nope", &err),
		HB_EINVAL);
	assert_contains(err.msg, "event_add: detail: not JSON: invalid "
				 "value at byte 0");
	memset(&err, 0, sizeof(err));

	big = malloc(HB_STORE_NAME_MAX + 2);
	memset(big, 'u', HB_STORE_NAME_MAX + 1);
	big[HB_STORE_NAME_MAX + 1] = '\0';
	r.jobspec = NULL;
	r.user = big;
	assert_int_equal(hb_store_job_add(st, &r, &err), HB_ETOOBIG);
	assert_contains(err.msg, "job_add: user: longer than 1024 bytes");
	memset(&err, 0, sizeof(err));
	big[HB_STORE_NAME_MAX] = '\0';
	assert_int_equal(hb_store_job_add(st, &r, &err), 0);
	free(big);

	/* Other bad arguments name their field. */
	r.user = NULL;
	r.uid = -2;
	assert_int_equal(hb_store_job_add(st, &r, &err), HB_EINVAL);
	assert_contains(err.msg, "uid");
	memset(&err, 0, sizeof(err));
	r.uid = 0;
	r.slurm_job_id = 0;
	assert_int_equal(hb_store_job_add(st, &r, &err), HB_EINVAL);
	assert_contains(err.msg, "slurm_job_id");
	memset(&err, 0, sizeof(err));
	r.slurm_job_id = -1;
	r.entry = -1;
	assert_int_equal(hb_store_job_add(st, &r, &err), HB_EINVAL);
	assert_contains(err.msg, "entry: unknown value -1");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_event_add(st, 1, NULL, NULL, "", NULL, NULL, &err),
		HB_EINVAL);
	assert_contains(err.msg, "event_add: action: empty");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_PENDING, NULL,
					       NULL, NULL, &err),
			 HB_EINVAL);
	assert_contains(err.msg, "decision_add: target: pending places "
				 "nothing");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_decision_add(st, id, 4, NULL, NULL, NULL, &err),
		HB_EINVAL);
	assert_contains(err.msg, "decision_add: target: unknown value 4 "
				 "(slurm, kubernetes, rejected)");
	hb_store_close(st);
}

/* --- group commit ----------------------------------------------------- */

static void add_decision(struct hb_store *st, int64_t uid, char *id,
			 size_t idsize)
{
	struct hb_err err = { 0 };

	add_job(st, uid, HB_JOB_PENDING, id, idsize);
	if (hb_store_decision_add(st, id, HB_TARGET_KUBERNETES, "{\"cost\":1}",
				  "cheaper", "burst", &err) ||
	    hb_store_event_add(st, uid, "alice", "plugin", "decide", id,
			       "{\"target\":\"kubernetes\"}", &err))
		fail_msg("%s", err.msg);
}

static void test_group_commit(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *st;
	char id[32];

	st = open_ok(fx->path);
	assert_int_equal(hb_store_commit(st, &err), HB_ESTATE);
	assert_contains(err.msg, "commit: no transaction is open");
	assert_int_equal(hb_store_rollback(st), 0); /* none: no-op */

	/* Rolled back: nothing stays, and the ids come again. */
	assert_int_equal(hb_store_begin(st, &err), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_begin(st, &err), HB_ESTATE);
	assert_contains(err.msg, "already open");
	for (int i = 0; i < 5; i++)
		add_decision(st, 1, id, sizeof(id));
	assert_string_equal(id, "hb-000005");
	assert_int_equal(hb_store_rollback(st), 0);
	assert_int_equal(hb_store_job_get(st, "hb-000001", &row, &err),
			 HB_ENOENT);
	assert_int_equal(count(fx->path, "jobs"), 0);
	assert_int_equal(count(fx->path, "decisions"), 0);
	assert_int_equal(count(fx->path, "events"), 0);

	/* Committed: all of it, in one go. */
	assert_int_equal(hb_store_begin(st, &err), 0);
	for (int i = 0; i < 10; i++)
		add_decision(st, 1, id, sizeof(id));
	assert_string_equal(id, "hb-000010");
	/* Not visible to others before the commit. */
	assert_int_equal(count(fx->path, "jobs"), 0);
	assert_int_equal(hb_store_commit(st, &err), 0);
	assert_int_equal(count(fx->path, "jobs"), 10);
	assert_int_equal(count(fx->path, "decisions"), 10);
	assert_int_equal(count(fx->path, "events"), 10);

	/* A call that fails inside a group undoes only itself. */
	assert_int_equal(hb_store_job_set_slurm(st, "hb-000001", 500, &err), 0);
	assert_int_equal(hb_store_begin(st, &err), 0);
	add_decision(st, 2, id, sizeof(id));
	struct hb_job_row dup = { .entry = HB_ENTRY_SLURM,
				  .slurm_job_id = 500,
				  .exit_code = -1 };
	assert_int_equal(hb_store_job_add(st, &dup, &err), HB_EEXIST);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_decision_add(st, "hb-424242", HB_TARGET_SLURM,
					       NULL, NULL, NULL, &err),
			 HB_ENOENT);
	memset(&err, 0, sizeof(err));
	add_decision(st, 2, id, sizeof(id));
	assert_string_equal(id, "hb-000012"); /* the failed add took none */
	assert_int_equal(seq_value(fx->path), 10); /* written at commit */
	assert_int_equal(hb_store_commit(st, &err), 0);
	assert_int_equal(seq_value(fx->path), 12);
	assert_int_equal(count(fx->path, "jobs"), 12);
	assert_int_equal(count(fx->path, "decisions"), 12);

	/* Closed without a commit: gone on reopen. */
	assert_int_equal(hb_store_begin(st, &err), 0);
	add_decision(st, 3, id, sizeof(id));
	hb_store_close(st);
	st = open_ok(fx->path);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), HB_ENOENT);
	assert_int_equal(count(fx->path, "jobs"), 12);
	assert_int_equal(count(fx->path, "events"), 12);
	hb_store_close(st);
}

/* A process that dies without closing: what it committed is there, what it
 * had not is not. */
static void test_crash(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *st;
	int status;
	pid_t pid;

	hb_store_close(open_ok(fx->path));
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hb_store *c = NULL;
		char id[32];

		if (hb_store_open(fx->path, &c, &err))
			_exit(10);
		add_decision(c, 1, id, sizeof(id)); /* hb-000001, alone */
		if (hb_store_begin(c, &err))
			_exit(11);
		for (int i = 0; i < 3; i++)
			add_decision(c, 1, id, sizeof(id)); /* 2..4 */
		if (hb_store_commit(c, &err))
			_exit(12);
		if (hb_store_begin(c, &err))
			_exit(13);
		for (int i = 0; i < 50; i++)
			add_decision(c, 1, id, sizeof(id)); /* 5..54 */
		_exit(0); /* no commit, no close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	st = open_ok(fx->path);
	assert_int_equal(hb_store_job_get(st, "hb-000004", &row, &err), 0);
	hb_job_row_free(&row);
	assert_int_equal(hb_store_job_get(st, "hb-000005", &row, &err),
			 HB_ENOENT);
	char id[32];
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000005");
	hb_store_close(st);
	assert_int_equal(count(fx->path, "jobs"), 5);
	assert_int_equal(count(fx->path, "decisions"), 4);
	assert_int_equal(count(fx->path, "events"), 4);
}

/* --- listing and lookups ---------------------------------------------- */

struct seen {
	int n, stop_at;
	char ids[16][32];
};

static int collect(const struct hb_job_row *r, void *arg)
{
	struct seen *s = arg;

	assert_true((unsigned)r->entry < HB__ENTRY_COUNT);
	assert_null(r->priv);
	if (s->n < 16)
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", r->id);
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

static void list(struct hb_store *st, int64_t uid, unsigned states,
		 unsigned limit, struct seen *s)
{
	struct hb_err err = { 0 };

	memset(s, 0, sizeof(*s));
	if (hb_store_job_list(st, uid, states, limit, collect, s, &err))
		fail_msg("job_list: %s", err.msg);
}

static struct hb_store *reenter_st;

static int reenter(const struct hb_job_row *r, void *arg)
{
	struct hb_err err = { 0 };
	struct seen s = { 0 };
	struct hb_job_row row;

	(void)arg;
	/* Other calls are fine from a callback ... */
	assert_int_equal(hb_store_job_get(reenter_st, r->id, &row, &err), 0);
	hb_job_row_free(&row);
	/* ... a listing inside a listing is not. */
	assert_int_equal(hb_store_job_list(reenter_st, -1, HB_JOB_ANY, 0,
					   collect, &s, &err),
			 HB_ESTATE);
	assert_contains(err.msg, "job_list: called again from its own "
				 "callback");
	return 1;
}

/* Counts by (target, state), from the database, agree with the rows. */
static void test_job_counts(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	uint64_t n[HB__TARGET_COUNT][HB__JOB_STATE_COUNT];
	unsigned live = HB_JOB_BIT(HB_JOB_PENDING) | HB_JOB_BIT(HB_JOB_QUEUED) |
			HB_JOB_BIT(HB_JOB_RUNNING);
	struct hb_store *st;
	char id[32];
	uint64_t total = 0;

	st = open_ok(fx->path);
	add_job(st, 1000, HB_JOB_PENDING, id, sizeof(id));
	add_job(st, 1000, HB_JOB_RUNNING, id, sizeof(id));
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_SLURM, "{}",
					       "x", "p", &err), 0);
	for (int i = 0; i < 2; i++) {
		add_job(st, 1001, HB_JOB_RUNNING, id, sizeof(id));
		assert_int_equal(hb_store_decision_add(st, id,
						       HB_TARGET_KUBERNETES,
						       "{}", "x", "p", &err),
				 0);
	}
	add_job(st, 1001, HB_JOB_SUCCEEDED, id, sizeof(id));
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_KUBERNETES,
					       "{}", "x", "p", &err), 0);

	assert_int_equal(hb_store_job_counts(st, live, n, &err), 0);
	assert_int_equal(n[HB_TARGET_PENDING][HB_JOB_PENDING], 1);
	assert_int_equal(n[HB_TARGET_SLURM][HB_JOB_RUNNING], 1);
	assert_int_equal(n[HB_TARGET_KUBERNETES][HB_JOB_RUNNING], 2);
	assert_int_equal(n[HB_TARGET_KUBERNETES][HB_JOB_SUCCEEDED], 0);
	for (int t = 0; t < HB__TARGET_COUNT; t++)
		for (int x = 0; x < HB__JOB_STATE_COUNT; x++)
			total += n[t][x];
	assert_int_equal(total, 4);
	assert_int_equal(hb_store_job_counts(st, HB_JOB_ANY, n, &err), 0);
	assert_int_equal(n[HB_TARGET_KUBERNETES][HB_JOB_SUCCEEDED], 1);
	/* no state asked: all zero; a bit that is no state: refused */
	assert_int_equal(hb_store_job_counts(st, 0, n, &err), 0);
	assert_int_equal(n[HB_TARGET_KUBERNETES][HB_JOB_RUNNING], 0);
	assert_int_equal(hb_store_job_counts(st, 1u << 30, n, &err),
			 HB_EINVAL);
	hb_store_close(st);
}

static void test_list(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st;
	struct seen s;
	char id[32];

	st = open_ok(fx->path);
	/* 1: 1000 pending, 2: 1001 running, 3: 1000 running,
	 * 4: 1000 succeeded, 5: 1001 pending, 6: 1000 queued */
	add_job(st, 1000, HB_JOB_PENDING, id, sizeof(id));
	add_job(st, 1001, HB_JOB_RUNNING, id, sizeof(id));
	add_job(st, 1000, HB_JOB_RUNNING, id, sizeof(id));
	add_job(st, 1000, HB_JOB_SUCCEEDED, id, sizeof(id));
	add_job(st, 1001, HB_JOB_PENDING, id, sizeof(id));
	add_job(st, 1000, HB_JOB_QUEUED, id, sizeof(id));

	list(st, -1, HB_JOB_ANY, 0, &s);
	assert_int_equal(s.n, 6);
	for (int i = 0; i < 6; i++) {
		char want[32];

		snprintf(want, sizeof(want), "hb-%06d", 6 - i);
		assert_string_equal(s.ids[i], want);
	}
	list(st, 1000, HB_JOB_ANY, 0, &s);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.ids[0], "hb-000006");
	assert_string_equal(s.ids[3], "hb-000001");
	list(st, 1001, HB_JOB_ANY, 1, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.ids[0], "hb-000005");
	list(st, 4242, HB_JOB_ANY, 0, &s);
	assert_int_equal(s.n, 0);

	const unsigned active = HB_JOB_BIT(HB_JOB_PENDING) |
				HB_JOB_BIT(HB_JOB_QUEUED) |
				HB_JOB_BIT(HB_JOB_RUNNING);
	list(st, -1, active, 0, &s);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.ids[0], "hb-000006");
	assert_string_equal(s.ids[4], "hb-000001");
	list(st, 1000, active, 2, &s);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.ids[0], "hb-000006");
	assert_string_equal(s.ids[1], "hb-000003");
	list(st, 1001, HB_JOB_BIT(HB_JOB_RUNNING), 0, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.ids[0], "hb-000002");
	list(st, -1, 0, 0, &s);
	assert_int_equal(s.n, 0);
	list(st, -1, HB_JOB_BIT(HB_JOB_SUCCEEDED) | HB_JOB_BIT(HB_JOB_FAILED),
	     0, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.ids[0], "hb-000004");

	/* A callback's non-zero return stops the listing and comes back. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(
		hb_store_job_list(st, -1, HB_JOB_ANY, 0, collect, &s, &err),
		42);
	assert_int_equal(s.n, 2);
	/* And the statement is reusable after it. */
	list(st, -1, HB_JOB_ANY, 0, &s);
	assert_int_equal(s.n, 6);

	/* Every state but one: the states' filter, which matches them all. */
	list(st, -1, HB_JOB_ANY & ~HB_JOB_BIT(HB_JOB_LOST), 0, &s);
	assert_int_equal(s.n, 6);

	assert_int_equal(
		hb_store_job_list(st, -1,
				  HB_JOB_BIT(HB_JOB_RUNNING) | HB_JOB_BIT(9), 0,
				  collect, &s, &err),
		HB_EINVAL);
	assert_contains(err.msg, "job_list: states: 0x204 has bits that are "
				 "no state");

	reenter_st = st;
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_job_list(st, -1, HB_JOB_ANY, 0, reenter, NULL, &err),
		1);
	hb_store_close(st);
}

static void count_end(void *arg, const char *id)
{
	int *n = arg;

	assert_true(strlen(id) > 3);
	(*n)++;
}

/* When a job started and ended: set as its state moves, the first time
 * only, and replaced by what its side measured. */
static void test_job_times(void **state)
{
	struct fx *fx = *state;
	struct hb_store *st = open_ok(fx->path);
	struct hb_err err = { 0 };
	struct hb_job_row row = { 0 };
	int64_t t = 5000;
	char id[32];

	int ends = 0;

	hb_store_set_clock(st, fixed_clock, &t);
	hb_store_set_end_hook(st, count_end, &ends);
	add_job(st, 1000, HB_JOB_QUEUED, id, sizeof(id));
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.started_ms, -1);
	assert_int_equal(row.ended_ms, -1);
	assert_int_equal(row.cost_micros, -1);
	hb_job_row_free(&row);

	t = 7000;
	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1,
						NULL, &err),
			 0);
	/* a requeue and a second start keep the first start */
	t = 8000;
	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_QUEUED, -1,
						NULL, &err),
			 0);
	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1,
						NULL, &err),
			 0);
	assert_int_equal(ends, 0);
	t = 9000;
	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_SUCCEEDED, 0,
						NULL, &err),
			 0);
	assert_int_equal(ends, 1);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.started_ms, 7000);
	assert_int_equal(row.ended_ms, 9000);
	hb_job_row_free(&row);
	/* a final state set again is no second end */
	assert_int_equal(hb_store_job_set_state(st, id, HB_JOB_SUCCEEDED, 0,
						NULL, &err),
			 0);
	assert_int_equal(ends, 1);

	/* what the side measured replaces them; -1 keeps one */
	assert_int_equal(hb_store_job_set_times(st, id, 6500, -1, &err), 0);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.started_ms, 6500);
	assert_int_equal(row.ended_ms, 9000);
	hb_job_row_free(&row);
	/* an end before the start is refused, and nothing changes */
	assert_int_equal(hb_store_job_set_times(st, id, -1, 6000, &err),
			 HB_EINVAL);
	assert_contains(err.msg, "ended_ms 6000 is before started_ms 6500");
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.ended_ms, 9000);
	hb_job_row_free(&row);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_set_times(st, id, -2, -1, &err),
			 HB_EINVAL);
	assert_contains(err.msg, "started_ms: -2");
	assert_int_equal(hb_store_job_set_times(st, "hb-424242", 1, 2, &err),
			 HB_ENOENT);
	hb_store_close(st);
}

/* A placement document that estimated cost_micro on each side. */
static void decide(struct hb_store *st, const char *id,
		   enum hb_job_target side, int64_t cost_micro)
{
	struct hb_err err = { 0 };
	char doc[512];

	snprintf(doc, sizeof(doc),
		 "{\"placement\":{\"alternatives\":["
		 "{\"side\":\"slurm\",\"cost_micro\":%lld},"
		 "{\"side\":\"kubernetes\",\"cost_micro\":%lld}]}}",
		 (long long)cost_micro, (long long)cost_micro);
	if (hb_store_decision_add(st, id, side, doc, "x", NULL, &err))
		fail_msg("decision_add: %s", err.msg);
}

static void charge(struct hb_store *st, const char *id, int64_t end_ms,
		   int64_t amount, int64_t *entry_id)
{
	struct hb_err err = { 0 };
	struct hb_ledger_entry e = {
		.job_id = id,
		.side = HB_TARGET_SLURM,
		.account = "physics",
		.period_start_ms = end_ms - 1000,
		.period_end_ms = end_ms,
		.cpu_mcore_s = 1000,
		.amount_micros = amount,
	};

	if (hb_store_ledger_append(st, &e, 1, &err))
		fail_msg("ledger_append: %s", err.msg);
	if (entry_id)
		*entry_id = e.id;
}

struct spend_sum {
	int64_t actual, reserved, rows;
};

static int spend_cb(const struct hb_spend_row *r, void *arg)
{
	struct spend_sum *s = arg;

	s->rows++;
	if (r->actual)
		s->actual += r->cost_micro;
	else
		s->reserved += r->cost_micro;
	return 0;
}

/* Budgets count the ledger's actuals, net of reversals, and reserve the
 * estimate of decided jobs still to run; a job cancelled before it ran
 * holds nothing. */
static void test_spend_actuals(void **state)
{
	struct fx *fx = *state;
	struct hb_store *st = open_ok(fx->path);
	struct hb_err err = { 0 };
	struct spend_sum s = { 0 };
	char a[32], b[32], c[32];
	int64_t e1;

	add_job(st, 1000, HB_JOB_QUEUED, a, sizeof(a));
	add_job(st, 1000, HB_JOB_QUEUED, b, sizeof(b));
	add_job(st, 1000, HB_JOB_RUNNING, c, sizeof(c));
	decide(st, a, HB_TARGET_SLURM, 5000);
	decide(st, b, HB_TARGET_SLURM, 7000);
	decide(st, c, HB_TARGET_KUBERNETES, 900);
	/* decided again: only the latest decision reserves */
	decide(st, c, HB_TARGET_KUBERNETES, 1100);
	assert_int_equal(hb_store_spend_list(st, 0, 1, spend_cb, &s, &err), 0);
	assert_int_equal(s.reserved, 5000 + 7000 + 1100);
	assert_int_equal(s.actual, 0);

	/* a ran and was metered for less than its estimate */
	assert_int_equal(hb_store_job_set_state(st, a, HB_JOB_SUCCEEDED, 0,
						NULL, &err),
			 0);
	charge(st, a, 2000000, 3000, NULL);
	/* b was cancelled before it ran: nothing */
	assert_int_equal(hb_store_job_set_state(st, b, HB_JOB_CANCELLED, -1,
						NULL, &err),
			 0);
	/* c, still running, was charged, reversed and charged again */
	charge(st, c, 2000000, 4000, &e1);
	assert_int_equal(hb_store_ledger_reverse(st, e1, NULL, &err), 0);
	charge(st, c, 2000000, 4500, NULL);
	memset(&s, 0, sizeof(s));
	assert_int_equal(hb_store_spend_list(st, 0, 1, spend_cb, &s, &err), 0);
	assert_int_equal(s.actual, 3000 + 4500);
	assert_int_equal(s.reserved, 0);
	assert_int_equal(s.rows, 2);
	/* without metering, b's estimate stands */
	memset(&s, 0, sizeof(s));
	assert_int_equal(hb_store_spend_list(st, 0, 0, spend_cb, &s, &err),
			 0);
	assert_int_equal(s.reserved, 7000);
	/* the reservation of one job, whatever its state */
	struct hb_spend_row r;
	char acct[16];

	assert_int_equal(hb_store_reservation(st, b, &r, acct, sizeof(acct),
					      &err),
			 0);
	assert_int_equal(r.cost_micro, 7000);
	assert_string_equal(r.account, "physics");
	assert_int_equal(r.side, HB_TARGET_SLURM);
	assert_int_equal(hb_store_reservation(st, "hb-999999", &r, acct,
					      sizeof(acct), &err),
			 HB_ENOENT);
	/* periods that ended before since_ms are not counted */
	memset(&s, 0, sizeof(s));
	assert_int_equal(hb_store_spend_list(st, 2000001, 1, spend_cb, &s, &err),
			 0);
	assert_int_equal(s.actual, 0);
	/* the job's cost is its entries' sum */
	struct hb_job_row row = { 0 };

	assert_int_equal(hb_store_job_get(st, c, &row, &err), 0);
	assert_int_equal(row.cost_micros, 4500);
	hb_job_row_free(&row);
	hb_store_close(st);
}

/* A preempted burst job: running <-> suspended, listed by its state (the
 * last of the states' bindings, and the uid's after it), requeued from
 * suspended when it is placed again; nothing else becomes suspended. */
static void test_suspended_state(void **state)
{
	struct fx *fx = *state;
	struct hb_store *st = open_ok(fx->path);
	struct hb_err err = { 0 };
	struct hb_job_row row = { 0 };
	struct seen s;
	char run[32], wait[32];

	add_job(st, 1000, HB_JOB_RUNNING, run, sizeof(run));
	add_job(st, 1000, HB_JOB_QUEUED, wait, sizeof(wait));
	assert_int_equal(hb_store_job_set_state(st, run, HB_JOB_SUSPENDED, -1,
						"preempted", &err),
			 0);
	assert_int_equal(hb_store_job_get(st, run, &row, &err), 0);
	assert_int_equal(row.state, HB_JOB_SUSPENDED);
	assert_string_equal(row.reason, "preempted");
	hb_job_row_free(&row);
	list(st, 1000, HB_JOB_BIT(HB_JOB_SUSPENDED), 0, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.ids[0], run);
	list(st, 1001, HB_JOB_BIT(HB_JOB_SUSPENDED), 0, &s);
	assert_int_equal(s.n, 0);
	list(st, -1, HB_JOB_ANY & ~HB_JOB_BIT(HB_JOB_SUSPENDED), 0, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.ids[0], wait);

	/* Admitted again, preempted again, then placed again. */
	assert_int_equal(hb_store_job_set_state(st, run, HB_JOB_RUNNING, -1,
						NULL, &err),
			 0);
	assert_int_equal(hb_store_job_set_state(st, run, HB_JOB_SUSPENDED, -1,
						NULL, &err),
			 0);
	assert_int_equal(hb_store_job_set_state(st, run, HB_JOB_QUEUED, -1,
						"replaced", &err),
			 0);
	/* A job that never ran cannot be suspended. */
	assert_int_equal(hb_store_job_set_state(st, wait, HB_JOB_SUSPENDED, -1,
						NULL, &err),
			 HB_ESTATE);
	assert_contains(err.msg, "queued");
	assert_contains(err.msg, "suspended");
	hb_store_close(st);
}

/* A name the store does not know, written into the file by hand: the row
 * cannot be read, and says why; the job cannot be moved either. */
static void test_unknown_names(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row;
	struct hb_decision_row d;
	struct hb_err err = { 0 };
	struct hb_store *st;
	struct seen s;
	char id[32];
	sqlite3 *db;

	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_SLURM, NULL,
					       NULL, NULL, &err),
			 0);
	db = raw_open(fx->path);
	raw_exec_ok(db, "UPDATE jobs SET state = 'done'");
	assert_int_equal(hb_store_job_get(st, id, &row, &err), HB_ESTORE);
	assert_contains(err.msg, "job_get: hb-000001 has an unknown state "
				 "'done'");
	assert_string_equal(row.id, "");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_job_set_state(st, id, HB_JOB_RUNNING, -1, NULL, &err),
		HB_ESTORE);
	assert_contains(err.msg, "hb-000001 has an unknown state 'done'");
	memset(&err, 0, sizeof(err));
	memset(&s, 0, sizeof(s));
	assert_int_equal(
		hb_store_job_list(st, -1, HB_JOB_ANY, 0, collect, &s, &err),
		HB_ESTORE);
	assert_int_equal(s.n, 0);
	memset(&err, 0, sizeof(err));
	raw_exec_ok(db, "UPDATE jobs SET state = 'queued', origin = 'pbs'");
	assert_int_equal(hb_store_job_get(st, id, &row, &err), HB_ESTORE);
	assert_contains(err.msg, "hb-000001 has an unknown origin 'pbs'");
	memset(&err, 0, sizeof(err));
	raw_exec_ok(db, "UPDATE jobs SET origin = 'cli', target = 'cloud'");
	assert_int_equal(hb_store_job_get(st, id, &row, &err), HB_ESTORE);
	assert_contains(err.msg, "hb-000001 has an unknown target 'cloud'");
	memset(&err, 0, sizeof(err));
	raw_exec_ok(db, "UPDATE jobs SET target = 'slurm'");
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.entry, HB_ENTRY_CLI);
	assert_int_equal(row.target, HB_TARGET_SLURM);
	assert_int_equal(row.state, HB_JOB_QUEUED);
	hb_job_row_free(&row);
	/* A decision's target, likewise. */
	raw_exec_ok(db, "UPDATE decisions SET target = 'cloud'");
	assert_int_equal(hb_store_decision_get(st, id, &d, &err), HB_ESTORE);
	assert_contains(err.msg, "hb-000001 has an unknown decision target "
				 "'cloud'");
	sqlite3_close(db);
	hb_store_close(st);
}

static void test_slurm_and_k8s(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row, with = { .entry = HB_ENTRY_SLURM,
					.slurm_job_id = 77,
					.exit_code = -1,
					.uid = 3 };
	struct hb_err err = { 0 };
	struct hb_store *st;
	char a[32], b[32];

	st = open_ok(fx->path);
	add_job(st, 1, HB_JOB_PENDING, a, sizeof(a));
	add_job(st, 1, HB_JOB_PENDING, b, sizeof(b));
	assert_int_equal(hb_store_job_by_slurm_id(st, 1234, &row, &err),
			 HB_ENOENT);
	assert_contains(err.msg, "job_by_slurm_id: no job with Slurm job id "
				 "1234");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_set_slurm(st, a, 1234, &err), 0);
	assert_int_equal(hb_store_job_by_slurm_id(st, 1234, &row, &err), 0);
	assert_string_equal(row.id, a);
	assert_int_equal(row.slurm_job_id, 1234);
	hb_job_row_free(&row);

	/* One Slurm job, one gateway job. */
	assert_int_equal(hb_store_job_set_slurm(st, b, 1234, &err), HB_EEXIST);
	assert_contains(err.msg, fx->path);
	assert_contains(err.msg, "job_set_slurm: UNIQUE constraint failed: "
				 "jobs.slurm_job_id");
	memset(&err, 0, sizeof(err));
	with.slurm_job_id = 1234;
	assert_int_equal(hb_store_job_add(st, &with, &err), HB_EEXIST);
	assert_contains(err.msg, "job_add: UNIQUE constraint failed: "
				 "jobs.slurm_job_id");
	memset(&err, 0, sizeof(err));
	with.slurm_job_id = 77;
	assert_int_equal(hb_store_job_add(st, &with, &err), 0);
	assert_int_equal(hb_store_job_by_slurm_id(st, 77, &row, &err), 0);
	assert_string_equal(row.id, with.id);
	assert_int_equal(row.uid, 3);
	assert_null(row.user); /* NULL in, NULL out */
	assert_null(row.jobspec);
	assert_null(row.k8s_name);
	hb_job_row_free(&row);
	/* Moving to another Slurm id frees the old one. */
	assert_int_equal(hb_store_job_set_slurm(st, a, 1235, &err), 0);
	assert_int_equal(hb_store_job_set_slurm(st, b, 1234, &err), 0);
	assert_int_equal(hb_store_job_set_slurm(st, b, 0, &err), HB_EINVAL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_set_slurm(st, "hb-999", 9, &err),
			 HB_ENOENT);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_job_by_slurm_id(st, -1, &row, &err),
			 HB_EINVAL);
	memset(&err, 0, sizeof(err));

	assert_int_equal(hb_store_job_set_k8s(st, a, "team-a", "hb-000001",
					      "5f1c-uid", &err),
			 0);
	assert_int_equal(hb_store_job_get(st, a, &row, &err), 0);
	assert_string_equal(row.k8s_namespace, "team-a");
	assert_string_equal(row.k8s_name, "hb-000001");
	assert_string_equal(row.k8s_uid, "5f1c-uid");
	hb_job_row_free(&row);
	assert_int_equal(
		hb_store_job_set_k8s(st, a, "team-a", NULL, NULL, &err),
		HB_EINVAL);
	assert_contains(err.msg, "job_set_k8s: k8s_name: required");
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_store_job_set_k8s(st, "hb-999", "ns", "n", NULL, &err),
		HB_ENOENT);
	hb_store_close(st);
}

static void test_decisions(void **state)
{
	struct fx *fx = *state;
	struct hb_decision_row d;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *st;
	int64_t clock = fixed_ms;
	char id[32];

	st = open_ok(fx->path);
	hb_store_set_clock(st, fixed_clock, &clock);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_decision_get(st, id, &d, &err), HB_ENOENT);
	assert_contains(err.msg, "decision_get: no decision for job");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_KUBERNETES,
					       "{\"cost\":3}", "cheaper",
					       "burst-v1", &err),
			 0);
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_SLURM, NULL,
					       "{\"why\":\"deadline\"}", NULL,
					       &err),
			 0);
	assert_int_equal(hb_store_decision_get(st, id, &d, &err), 0);
	assert_string_equal(d.job_id, id);
	assert_int_equal(d.target, HB_TARGET_SLURM);
	assert_null(d.inputs);
	assert_null(d.policy);
	assert_string_equal(d.explanation, "{\"why\":\"deadline\"}");
	assert_int_equal(d.at_ms, fixed_ms + 2);
	assert_int_equal(d.id, 2);
	hb_decision_row_free(&d);
	hb_decision_row_free(NULL);
	/* The latest decision is the job's target. */
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.target, HB_TARGET_SLURM);
	assert_int_equal(row.created_ms, fixed_ms);
	assert_int_equal(row.updated_ms, fixed_ms + 2);
	hb_job_row_free(&row);
	hb_job_row_free(NULL);
	/* A decision for the target the job has already is recorded, and
	 * leaves the job as it was. */
	assert_int_equal(hb_store_decision_add(st, id, HB_TARGET_SLURM, NULL,
					       "again", NULL, &err),
			 0);
	assert_int_equal(count(fx->path, "decisions"), 3);
	assert_int_equal(hb_store_job_get(st, id, &row, &err), 0);
	assert_int_equal(row.target, HB_TARGET_SLURM);
	assert_int_equal(row.updated_ms, fixed_ms + 2);
	hb_job_row_free(&row);

	assert_int_equal(hb_store_decision_add(st, "hb-000404", HB_TARGET_SLURM,
					       NULL, NULL, NULL, &err),
			 HB_ENOENT);
	assert_contains(err.msg, "decision_add: no job hb-000404");
	assert_int_equal(count(fx->path, "decisions"), 3);

	/* A job with decisions cannot be deleted from under them. */
	sqlite3 *db = raw_open(fx->path);
	raw_exec_ok(db, "PRAGMA foreign_keys = ON");
	char *msg = raw_exec_fails(db, "DELETE FROM jobs");
	assert_contains(msg, "FOREIGN KEY constraint failed");
	free(msg);
	sqlite3_close(db);
	hb_store_close(st);
}

struct evs {
	int n;
	int64_t ids[16];
	char actions[16][16];
};

static int collect_ev(const struct hb_event_row *e, void *arg)
{
	struct evs *v = arg;

	if (v->n < 16) {
		v->ids[v->n] = e->id;
		snprintf(v->actions[v->n], sizeof(v->actions[0]), "%s",
			 e->action);
	}
	v->n++;
	return 0;
}

static void test_events(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st;
	int64_t clock = fixed_ms;
	struct evs v;
	char a[32], b[32];

	st = open_ok(fx->path);
	hb_store_set_clock(st, fixed_clock, &clock);
	add_job(st, 1, HB_JOB_PENDING, a, sizeof(a));
	add_job(st, 2, HB_JOB_PENDING, b, sizeof(b));
	assert_int_equal(hb_store_event_add(st, 1, "alice", "plugin", "decide",
					    a, NULL, &err),
			 0);
	assert_int_equal(hb_store_event_add(st, 2, "bob", "pid 7", "submit", b,
					    NULL, &err),
			 0);
	assert_int_equal(hb_store_event_add(st, 1, "alice", "pid 9", "cancel",
					    a, "{\"signal\":9}", &err),
			 0);
	/* A refused request about a job that does not exist is logged. */
	assert_int_equal(hb_store_event_add(st, -1, NULL, "pid 3", "cancel",
					    "hb-777777", NULL, &err),
			 0);
	assert_int_equal(
		hb_store_event_add(st, -2, NULL, NULL, "x", NULL, NULL, &err),
		HB_EINVAL);
	assert_contains(err.msg, "event_add: actor_uid");
	memset(&err, 0, sizeof(err));

	memset(&v, 0, sizeof(v));
	assert_int_equal(hb_store_event_list(st, a, 0, 0, collect_ev, &v, &err),
			 0);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.actions[0], "decide");
	assert_string_equal(v.actions[1], "cancel");
	assert_true(v.ids[0] < v.ids[1]);

	memset(&v, 0, sizeof(v));
	assert_int_equal(
		hb_store_event_list(st, NULL, 0, 0, collect_ev, &v, &err), 0);
	assert_int_equal(v.n, 4);
	memset(&v, 0, sizeof(v));
	assert_int_equal(
		hb_store_event_list(st, NULL, 1, 2, collect_ev, &v, &err), 0);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.ids[0], 2);
	assert_int_equal(v.ids[1], 3);
	memset(&v, 0, sizeof(v));
	assert_int_equal(
		hb_store_event_list(st, "hb-nope", 0, 0, collect_ev, &v, &err),
		0);
	assert_int_equal(v.n, 0);

	sqlite3 *db = raw_open(fx->path);
	assert_int_equal(raw_int(db, "SELECT at_ms FROM events WHERE id = 1"),
			 fixed_ms + 2);
	assert_int_equal(raw_int(db, "SELECT actor_uid FROM events WHERE "
				     "id = 4"),
			 -1);
	sqlite3_close(db);
	hb_store_close(st);
}

/* Two handles on one file: a second opener sees the first's commits and
 * the migration is not repeated. */
static void test_two_handles(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *a, *b;
	char id[32];

	a = open_ok(fx->path);
	b = open_ok(fx->path);
	add_job(a, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_job_get(b, id, &row, &err), 0);
	hb_job_row_free(&row);
	add_job(b, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_string_equal(id, "hb-000002");
	hb_store_close(a);
	hb_store_close(b);
}

/*
 * Faults: a VFS over the default one, made the default, whose WAL writes
 * fail with SQLITE_FULL while fault_wal is set (a full disk, as SQLite
 * sees it).  Everything else goes to the real VFS.
 */
static sqlite3_vfs *real_vfs;
static sqlite3_vfs fault_vfs;
static int fault_wal;
static int wal_writes, wal_syncs; /* calls that reached the WAL */
static sqlite3_io_methods fault_io;
static const sqlite3_io_methods *real_io;

struct fault_file {
	sqlite3_file base;
	int wal;
	sqlite3_file *real; /* right after this struct */
};

static int f_close(sqlite3_file *f)
{
	struct fault_file *ff = (struct fault_file *)f;

	return ff->real->pMethods->xClose(ff->real);
}

static int f_read(sqlite3_file *f, void *b, int n, sqlite3_int64 off)
{
	struct fault_file *ff = (struct fault_file *)f;

	return ff->real->pMethods->xRead(ff->real, b, n, off);
}

static int f_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 off)
{
	struct fault_file *ff = (struct fault_file *)f;

	if (ff->wal && fault_wal)
		return SQLITE_FULL;
	wal_writes += ff->wal;
	return ff->real->pMethods->xWrite(ff->real, b, n, off);
}

static int f_sync(sqlite3_file *f, int fl)
{
	struct fault_file *ff = (struct fault_file *)f;

	wal_syncs += ff->wal;
	return ff->real->pMethods->xSync(ff->real, fl);
}

#define FORWARD(name, args, call)                                            \
	static int f_##name args                                              \
	{                                                                     \
		struct fault_file *ff = (struct fault_file *)f;               \
		return ff->real->pMethods->x##call;                           \
	}
FORWARD(truncate, (sqlite3_file * f, sqlite3_int64 n), Truncate(ff->real, n))
FORWARD(size, (sqlite3_file * f, sqlite3_int64 *n), FileSize(ff->real, n))
FORWARD(lock, (sqlite3_file * f, int l), Lock(ff->real, l))
FORWARD(unlock, (sqlite3_file * f, int l), Unlock(ff->real, l))
FORWARD(reserved, (sqlite3_file * f, int *r),
	CheckReservedLock(ff->real, r))
FORWARD(fcntl, (sqlite3_file * f, int op, void *a),
	FileControl(ff->real, op, a))
FORWARD(sector, (sqlite3_file * f), SectorSize(ff->real))
FORWARD(devchar, (sqlite3_file * f), DeviceCharacteristics(ff->real))
FORWARD(shmmap, (sqlite3_file * f, int i, int sz, int ext, void volatile **p),
	ShmMap(ff->real, i, sz, ext, p))
FORWARD(shmlock, (sqlite3_file * f, int o, int n, int fl),
	ShmLock(ff->real, o, n, fl))
FORWARD(shmunmap, (sqlite3_file * f, int del), ShmUnmap(ff->real, del))
#undef FORWARD

static void f_shmbarrier(sqlite3_file *f)
{
	struct fault_file *ff = (struct fault_file *)f;

	ff->real->pMethods->xShmBarrier(ff->real);
}

static int f_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f,
		  int flags, int *out)
{
	struct fault_file *ff = (struct fault_file *)f;
	int rc;

	(void)vfs;
	ff->real = (sqlite3_file *)(ff + 1);
	ff->wal = (flags & SQLITE_OPEN_WAL) != 0;
	rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out);
	if (rc || !ff->real->pMethods) {
		f->pMethods = NULL;
		return rc;
	}
	real_io = ff->real->pMethods;
	fault_io = (sqlite3_io_methods){
		.iVersion = real_io->iVersion < 2 ? real_io->iVersion : 2,
		.xClose = f_close,
		.xRead = f_read,
		.xWrite = f_write,
		.xTruncate = f_truncate,
		.xSync = f_sync,
		.xFileSize = f_size,
		.xLock = f_lock,
		.xUnlock = f_unlock,
		.xCheckReservedLock = f_reserved,
		.xFileControl = f_fcntl,
		.xSectorSize = f_sector,
		.xDeviceCharacteristics = f_devchar,
		.xShmMap = f_shmmap,
		.xShmLock = f_shmlock,
		.xShmBarrier = f_shmbarrier,
		.xShmUnmap = f_shmunmap,
	};
	f->pMethods = &fault_io;
	return 0;
}

static void fault_install(void)
{
	if (real_vfs)
		return;
	real_vfs = sqlite3_vfs_find(NULL);
	fault_vfs = *real_vfs;
	fault_vfs.zName = "hb-fault";
	fault_vfs.szOsFile = (int)sizeof(struct fault_file) +
			     real_vfs->szOsFile;
	fault_vfs.xOpen = f_open;
	assert_int_equal(sqlite3_vfs_register(&fault_vfs, 1), SQLITE_OK);
}

/* A commit the disk refuses keeps nothing, hands out no job number, and
 * the handle carries on. */
static void test_commit_fails(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st;
	char id[32];

	fault_install();
	st = open_ok(fx->path);
	add_decision(st, 1, id, sizeof(id));
	assert_int_equal(hb_store_begin(st, &err), 0);
	for (int i = 0; i < 3; i++)
		add_decision(st, 1, id, sizeof(id));
	assert_string_equal(id, "hb-000004");
	fault_wal = 1;
	assert_int_not_equal(hb_store_commit(st, &err), 0);
	fault_wal = 0;
	assert_contains(err.msg, "commit");
	assert_int_equal(count(fx->path, "jobs"), 1);
	assert_int_equal(seq_value(fx->path), 1);
	memset(&err, 0, sizeof(err));
	/* the numbers the failed commit took come again */
	add_decision(st, 1, id, sizeof(id));
	assert_string_equal(id, "hb-000002");
	assert_int_equal(count(fx->path, "jobs"), 2);
	/* a call on its own whose commit fails: the same */
	fault_wal = 1;
	{
		struct hb_job_row r = { .entry = HB_ENTRY_SLURM,
					.slurm_job_id = -1,
					.exit_code = -1 };

		assert_int_not_equal(hb_store_job_add(st, &r, &err), 0);
		assert_string_equal(r.id, "");
	}
	fault_wal = 0;
	memset(&err, 0, sizeof(err));
	add_decision(st, 1, id, sizeof(id));
	assert_string_equal(id, "hb-000003");
	assert_int_equal(seq_value(fx->path), 3);
	hb_store_close(st);
}

/*
 * A commit reaches the WAL as one write, whatever number of pages it has
 * (SQLite writes each frame as two: its header and its page), and SQLite
 * syncs it, except a nosync group's.  Counted under the store's VFS.
 */
static void test_commit_gathered(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st;
	char id[32], big[8192 + 8] = "[\"";
	int pages;

	memset(big + 2, 'x', 8192);
	memcpy(big + 2 + 8192, "\"]", 3);
	fault_install();
	st = open_ok(fx->path);
	assert_int_equal(hb_store_defer_sync(st, &err), 0);
	add_decision(st, 1, id, sizeof(id)); /* the WAL's header is written */
	pages = hb_store_wal_pages(st);
	wal_writes = wal_syncs = 0;
	assert_int_equal(hb_store_begin(st, &err), 0);
	for (int i = 0; i < 5; i++)
		add_decision(st, 1, id, sizeof(id));
	assert_int_equal(hb_store_commit(st, &err), 0);
	assert_true(hb_store_wal_pages(st) - pages >= 5);
	assert_int_equal(wal_writes, 1);
	assert_int_equal(wal_syncs, 1);

	wal_writes = wal_syncs = 0;
	assert_int_equal(hb_store_begin(st, &err), 0);
	add_decision(st, 1, id, sizeof(id));
	assert_int_equal(hb_store_commit_nosync(st, &err), 0);
	assert_int_equal(wal_writes, 1);
	assert_int_equal(wal_syncs, 0);
	hb_store_sync(st); /* the store's own descriptor */
	assert_int_equal(wal_syncs, 0);

	/* a call in a transaction of its own */
	wal_writes = wal_syncs = 0;
	add_job(st, 2, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(wal_writes, 1);
	assert_int_equal(wal_syncs, 1);

	/* after a whole checkpoint the log starts again: SQLite writes and
	 * syncs its new header before any frame, and that sync is made even
	 * for a nosync group (the frames' is not) */
	{
		int left = -1;

		assert_int_equal(hb_store_checkpoint(st, &left, &err), 0);
		assert_int_equal(left, 0);
		wal_writes = wal_syncs = 0;
		assert_int_equal(hb_store_begin(st, &err), 0);
		add_decision(st, 1, id, sizeof(id));
		assert_int_equal(hb_store_commit_nosync(st, &err), 0);
		assert_int_equal(wal_writes, 2); /* the header, the frames */
		assert_int_equal(wal_syncs, 1);
		hb_store_sync(st);
	}

	/* a large group: in pieces of under 128 KiB, SQLite's most per
	 * write, so more than one, yet far fewer than two per frame */
	pages = hb_store_wal_pages(st);
	wal_writes = wal_syncs = 0;
	assert_int_equal(hb_store_begin(st, &err), 0);
	for (int i = 0; i < 40; i++)
		assert_int_equal(hb_store_event_add(st, 0, NULL, NULL, "big",
						    NULL, big, &err),
				 0);
	assert_int_equal(hb_store_commit(st, &err), 0);
	pages = hb_store_wal_pages(st) - pages;
	assert_true(pages * 4120 > 128 * 1024);
	assert_true(wal_writes > 1);
	assert_true(wal_writes <= pages * 4120 / (124 * 1024) + 1);
	assert_int_equal(wal_syncs, 1);
	hb_store_close(st);
	/* and it is all there, for a plain SQLite connection */
	assert_int_equal(count(fx->path, "jobs"), 9);
	assert_int_equal(count(fx->path, "decisions"), 8);
	assert_int_equal(count(fx->path, "events"), 40 + 8); /* + decisions' */
}

/* A connection below FULL publishes a commit without syncing it: what
 * the store's VFS held is written when the commit ends, so another
 * connection reads it. */
static void test_held_written_without_sync(void **state)
{
	struct fx *fx = *state;
	sqlite3 *db = NULL;
	const char *vfs = hb_walbuf_vfs();

	assert_non_null(vfs);
	assert_int_equal(sqlite3_open_v2(fx->path, &db,
					 SQLITE_OPEN_READWRITE |
						 SQLITE_OPEN_CREATE,
					 vfs),
			 SQLITE_OK);
	raw_exec_ok(db, "PRAGMA journal_mode=WAL;"
			"PRAGMA synchronous=NORMAL;"
			"CREATE TABLE jobs (x);"
			"INSERT INTO jobs VALUES (1);");
	hb_walbuf_begin(db, 0);
	raw_exec_ok(db, "INSERT INTO jobs VALUES (2)");
	hb_walbuf_end(db, 1);
	assert_int_equal(count(fx->path, "jobs"), 2);
	sqlite3_close(db);
}

/* A write the disk refuses in the middle of a group (the page cache
 * spills to the WAL) makes SQLite abandon the whole transaction: every
 * call after it fails, the commit says nothing was kept, and the handle
 * works again after it. */
static void test_group_abandoned(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st;
	size_t big = 256 * 1024;
	char *json = malloc(big + 16), id[32];
	int rc = 0, calls;

	assert_non_null(json);
	memcpy(json, "[\"", 2);
	memset(json + 2, 'x', big);
	memcpy(json + 2 + big, "\"]", 3);
	fault_install();
	st = open_ok(fx->path);
	add_decision(st, 1, id, sizeof(id));
	assert_int_equal(hb_store_begin(st, &err), 0);
	fault_wal = 1;
	/* SQLite's default cache is about 2 MB: this spills */
	for (calls = 0; calls < 40 && !rc; calls++)
		rc = hb_store_event_add(st, 0, NULL, NULL, "big", NULL, json,
					&err);
	assert_int_not_equal(rc, 0);
	assert_true(calls > 1); /* it took a spill, not the first write */
	fault_wal = 0;
	memset(&err, 0, sizeof(err));
	/* SQLite's pager fails the spill and rolls the transaction back */
	assert_int_equal(hb_store_event_add(st, 0, NULL, NULL, "after", NULL,
					    NULL, &err),
			 HB_ESTORE);
	assert_contains(err.msg, "event_add: the transaction was abandoned");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_commit(st, &err), HB_ESTORE);
	assert_contains(err.msg, "nothing was kept");
	assert_int_equal(count(fx->path, "events"), 1);
	memset(&err, 0, sizeof(err));
	add_decision(st, 1, id, sizeof(id));
	assert_string_equal(id, "hb-000002");
	hb_store_close(st);
	free(json);
}

/* hb_store_reopen(): a second handle on the file the first has open,
 * found by what it is and never created again. */
static void test_reopen_same_file(void **state)
{
	struct fx *fx = *state;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *a, *b = NULL;
	char id[32], moved[160], link[160];
	struct stat sb;
	int fd;

	a = open_ok(fx->path);
	add_job(a, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_reopen(a, &b, &err), 0);
	assert_int_equal(hb_store_job_get(b, id, &row, &err), 0);
	hb_job_row_free(&row);
	hb_store_close(b);
	b = NULL;

	/* opened through a symbolic link: the file, not the link */
	snprintf(link, sizeof(link), "%s/link.db", fx->dir);
	assert_int_equal(symlink(fx->path, link), 0);
	hb_store_close(a);
	a = open_ok(link);
	assert_int_equal(hb_store_reopen(a, &b, &err), 0);
	hb_store_close(b);
	b = NULL;

	/* moved away: refused, and nothing is created where it was */
	snprintf(moved, sizeof(moved), "%s/moved.db", fx->dir);
	assert_int_equal(rename(fx->path, moved), 0);
	assert_int_not_equal(hb_store_reopen(a, &b, &err), 0);
	assert_null(b);
	assert_int_not_equal(stat(fx->path, &sb), 0);
	memset(&err, 0, sizeof(err));

	/* another file in its place: refused, naming why, and left as it
	 * was */
	fd = open(fx->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a store", 11), 11);
	close(fd);
	assert_int_equal(hb_store_reopen(a, &b, &err), HB_ESTORE);
	assert_null(b);
	assert_contains(err.msg, "no longer the file the store opened");
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(sb.st_size, 11);
	hb_store_close(a);
	unlink(link);
	unlink(moved);
}

/* The WAL grows by commits and starts again after a checkpoint copied
 * all of it; the inline limit checkpoints within the commit. */
static void test_checkpoints(void **state)
{
	struct fx *fx = *state;
	struct hb_err err = { 0 };
	struct hb_store *st, *ck;
	int left = -1, before;
	char id[32];

	st = open_ok(fx->path);
	ck = open_ok(fx->path);
	hb_store_set_autocheckpoint(st, 0); /* never inline */
	for (int i = 0; i < 20; i++)
		add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	before = hb_store_wal_pages(st);
	assert_true(before >= 20);
	/* another handle copies it all: nobody was in the way */
	assert_int_equal(hb_store_checkpoint(ck, &left, &err), 0);
	assert_int_equal(left, 0);
	add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
	assert_true(hb_store_wal_pages(st) < before);

	/* inline: past 8 pages a commit checkpoints itself, so the WAL
	 * starts again and never gets far past the limit */
	hb_store_set_autocheckpoint(st, 8);
	for (int i = 0; i < 40; i++) {
		add_job(st, 1, HB_JOB_PENDING, id, sizeof(id));
		assert_true(hb_store_wal_pages(st) < 8 + 8);
	}
	hb_store_close(ck);
	hb_store_close(st);
}

/*
 * A sync of the WAL that fails stops the process, saying why: Linux
 * reports a failed write back once, so no later sync could vouch for the
 * commit.  A child swaps every descriptor of the WAL (SQLite's, and the
 * read-only one hb_store_defer_sync() opened) for /dev/null, where writes
 * succeed and fdatasync() fails, then commits: a plain call, which SQLite
 * syncs, or a nosync group and then hb_store_sync().
 */
static void sync_fails_in_child(struct fx *fx, int nosync)
{
	char log[160], wal[160], text[512] = "";
	int status, fd;
	ssize_t n;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/stderr", fx->dir);
	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	hb_store_close(open_ok(fx->path));
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hb_err err = { 0 };
		struct hb_store *c = NULL;
		struct dirent *de;
		char link[64], to[256], id[32];
		int swapped = 0;
		DIR *d;

		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(10);
		if (hb_store_open(fx->path, &c, &err) ||
		    hb_store_defer_sync(c, &err))
			_exit(11);
		if (!(d = opendir("/proc/self/fd")))
			_exit(12);
		while ((de = readdir(d))) {
			int f = atoi(de->d_name), null;
			ssize_t k;

			snprintf(link, sizeof(link), "/proc/self/fd/%d", f);
			k = readlink(link, to, sizeof(to) - 1);
			if (k <= 0)
				continue;
			to[k] = '\0';
			if (strcmp(to, wal))
				continue;
			null = open("/dev/null", fcntl(f, F_GETFL) & O_ACCMODE);
			if (null < 0 || dup2(null, f) < 0)
				_exit(13);
			close(null);
			swapped++;
		}
		closedir(d);
		if (swapped != 2)
			_exit(14);
		if (nosync) {
			if (hb_store_begin(c, &err))
				_exit(15);
			add_job(c, 1, HB_JOB_PENDING, id, sizeof(id));
			if (hb_store_commit_nosync(c, &err))
				_exit(16);
			hb_store_sync(c);
		} else {
			add_job(c, 1, HB_JOB_PENDING, id, sizeof(id));
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	fd = open(log, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		fail_msg("the child was not stopped by SIGABRT (status 0x%x): "
			 "%s",
			 status, text);
	assert_contains(text, "fdatasync of the write-ahead log failed");
	assert_contains(text, fx->path);
}

static void test_sync_failure_stops(void **state)
{
	sync_fails_in_child(*state, 0);
	sync_fails_in_child(*state, 1);
}

/* Deferred sync: SQLite still syncs every commit (synchronous=FULL) but
 * a nosync group's, which is visible at once and synced on demand;
 * plain calls work as before. */
static void test_deferred_sync(void **state)
{
	struct fx *fx = *state;
	struct hb_store_info info;
	struct hb_job_row row;
	struct hb_err err = { 0 };
	struct hb_store *st, *other;
	char id[32];

	st = open_ok(fx->path);
	/* nothing to sync yet: both are no-ops */
	hb_store_sync(st);
	assert_int_equal(hb_store_begin(st, &err), 0);
	assert_int_equal(hb_store_defer_sync(st, &err), HB_ESTATE);
	assert_contains(err.msg, "defer_sync: a transaction is open");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_rollback(st), 0);
	assert_int_equal(hb_store_defer_sync(st, &err), 0);
	assert_int_equal(hb_store_defer_sync(st, &err), 0); /* again: kept */
	assert_int_equal(hb_store_info(st, &info, &err), 0);
	assert_int_equal(info.synchronous, 2); /* FULL */

	add_job(st, 1, HB_JOB_PENDING, id,
		sizeof(id)); /* synced by the store */
	assert_int_equal(hb_store_begin(st, &err), 0);
	add_job(st, 2, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_commit_nosync(st, &err), 0);
	/* committed: another handle sees it before the sync */
	other = open_ok(fx->path);
	assert_int_equal(hb_store_job_get(other, id, &row, &err), 0);
	assert_int_equal(row.uid, 2);
	hb_job_row_free(&row);
	hb_store_sync(st);
	/* commit_nosync without a transaction is commit's error */
	assert_int_equal(hb_store_commit_nosync(st, &err), HB_ESTATE);
	hb_store_close(other);
	hb_store_close(st);

	/* a store reached through a symbolic link: SQLite's WAL is beside
	 * the real file, and that is the one synced */
	{
		char real[340], dir2[300];

		snprintf(dir2, sizeof(dir2), "%s/real", fx->dir);
		assert_int_equal(mkdir(dir2, 0700), 0);
		snprintf(real, sizeof(real), "%s/state.db", dir2);
		st = open_ok(real);
		hb_store_close(st);
		snprintf(dir2, sizeof(dir2), "%s/link.db", fx->dir);
		assert_int_equal(symlink(real, dir2), 0);
		st = open_ok(dir2);
		assert_int_equal(hb_store_defer_sync(st, &err), 0);
		assert_int_equal(hb_store_begin(st, &err), 0);
		add_job(st, 4, HB_JOB_PENDING, id, sizeof(id));
		assert_int_equal(hb_store_commit_nosync(st, &err), 0);
		hb_store_sync(st);
		hb_store_close(st);
		unlink(dir2);
		unlink(real);
		snprintf(dir2, sizeof(dir2), "%s/real", fx->dir);
		rmdir(dir2);
	}

	/* a handle without deferred sync: nosync is a plain commit */
	st = open_ok(fx->path);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_store_begin(st, &err), 0);
	add_job(st, 3, HB_JOB_PENDING, id, sizeof(id));
	assert_int_equal(hb_store_commit_nosync(st, &err), 0);
	hb_store_sync(st);
	assert_int_equal(hb_store_info(st, &info, &err), 0);
	assert_int_equal(info.synchronous, 2);
	hb_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_open_creates),
		T(test_reopen_noop),
		T(test_newer_refused),
		T(test_foreign_files_refused),
		T(test_upgrade_in_place),
		T(test_partial_schema_rolls_back),
		T(test_ids_never_reused),
		T(test_id_lease),
		cmocka_unit_test(test_state_rules),
		T(test_set_state),
		T(test_suspended_state),
		T(test_job_times),
		T(test_spend_actuals),
		T(test_unknown_names),
		T(test_append_only),
		T(test_strings_round_trip),
		T(test_json_and_caps),
		T(test_group_commit),
		T(test_crash),
		T(test_list),
		T(test_job_counts),
		T(test_slurm_and_k8s),
		T(test_decisions),
		T(test_events),
		T(test_two_handles),
		T(test_reopen_same_file),
		T(test_commit_fails),
		T(test_group_abandoned),
		T(test_checkpoints),
		T(test_deferred_sync),
		T(test_sync_failure_stops),
		T(test_commit_gathered),
		T(test_held_written_without_sync),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
