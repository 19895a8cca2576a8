/*
 * ledger.c - the cost ledger: batched appends, reversals, a job's
 * entries; and the checkpoint storage meters, whose charges are entries.
 *
 * The table is append-only (triggers refuse UPDATE, DELETE and REPLACE; a
 * unique index refuses a second reversal of one entry).  Entries are
 * checked in full before the first is written; a batch is one
 * transaction, or one savepoint inside the caller's group, through one
 * prepared statement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/store.h"
#include "store_int.h"

static const char insert_sql[] =
	"INSERT INTO ledger (at_ms, job_id, account, \"user\", side, "
	"\"partition\", queue, period_start_ms, period_end_ms, rate_version, "
	"cpu_mcore_s, mem_mib_s, node_s, gpu_s, egress_bytes, amount_micros, "
	"part, storage_mib_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
	"?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

/* What the reversal reads first: whether id exists, and reverses one. */
static const char target_sql[] = "SELECT reverses FROM ledger WHERE id = ?1";

/* Everything copied, every quantity negated (GPU-seconds inside their
 * JSON object too), in one statement. */
static const char reverse_sql[] =
	"INSERT INTO ledger (at_ms, job_id, account, \"user\", side, "
	"\"partition\", queue, period_start_ms, period_end_ms, rate_version, "
	"cpu_mcore_s, mem_mib_s, node_s, gpu_s, egress_bytes, amount_micros, "
	"reverses, kind, quantity, part, storage_mib_s) SELECT ?2, job_id, "
	"account, \"user\", side, "
	"\"partition\", queue, period_start_ms, period_end_ms, rate_version, "
	"-cpu_mcore_s, -mem_mib_s, -node_s, CASE WHEN gpu_s IS NULL THEN NULL "
	"ELSE (SELECT json_group_object(g.key, -g.value) FROM "
	"json_each(l.gpu_s) AS g) END, -egress_bytes, -amount_micros, id, "
	"kind, -quantity, part, -storage_mib_s FROM ledger AS l WHERE id = ?1";

static const char list_sql[] =
	"SELECT id, at_ms, job_id, account, \"user\", side, \"partition\", "
	"queue, period_start_ms, period_end_ms, rate_version, cpu_mcore_s, "
	"mem_mib_s, node_s, gpu_s, egress_bytes, amount_micros, reverses, "
	"part, storage_mib_s FROM ledger WHERE job_id = ?1 ORDER BY id";

static int bad(struct hb_store *st, struct hb_err *err, int code, size_t i,
	       const char *field, const char *why)
{
	return hb_err_set(err, code, hb_si_path(st), 0,
			  "ledger_append: entries[%zu]: %s: %s", i, field, why);
}

/* A GPU type or rate version: printable, none of the characters JSON or a
 * comma-joined list would have to quote. */
static int token_ok(const char *s, int type)
{
	size_t n = strnlen(s, HB_LEDGER_TYPE_MAX + 1);

	if (n == 0 || n > HB_LEDGER_TYPE_MAX)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p <= ' ' || *p >= 0x7f || *p == ',' || *p == '"' ||
		    *p == '\\')
			return 0;
		if (type && !strchr("._/:-", *p) &&
		    !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return 0;
	}
	return 1;
}

static int check_gpu(struct hb_store *st, const struct hb_ledger_entry *e,
		     size_t i, struct hb_err *err)
{
	char field[32];

	if (e->n_gpu < 0 || e->n_gpu > HB_LEDGER_GPU_TYPES)
		return bad(st, err, HB_EINVAL, i, "n_gpu",
			   "outside 0 to HB_LEDGER_GPU_TYPES");
	for (int g = 0; g < e->n_gpu; g++) {
		snprintf(field, sizeof(field), "gpu[%d]", g);
		if (!e->gpu[g].type || !token_ok(e->gpu[g].type, 1))
			return bad(st, err, HB_EINVAL, i, field,
				   "type: 1 to 64 of [A-Za-z0-9._/:-]");
		if (e->gpu[g].seconds < 0)
			return bad(st, err, HB_EINVAL, i, field,
				   "seconds: negative");
		for (int h = 0; h < g; h++)
			if (!strcmp(e->gpu[h].type, e->gpu[g].type))
				return bad(st, err, HB_EINVAL, i, field,
					   "type: given twice");
	}
	return 0;
}

static int check_entry(struct hb_store *st, const struct hb_ledger_entry *e,
		       size_t i, struct hb_err *err)
{
	const char *const strs[] = { e->account, e->user, e->partition,
				     e->queue };
	static const char *const names[] = { "account", "user", "partition",
					     "queue" };

	if (!e->job_id || !*e->job_id)
		return bad(st, err, HB_EINVAL, i, "job_id", "required");
	if (strnlen(e->job_id, HB_STORE_NAME_MAX + 1) > HB_STORE_NAME_MAX)
		return bad(st, err, HB_ETOOBIG, i, "job_id", "too long");
	for (size_t k = 0; k < 4; k++)
		if (strs[k] &&
		    strnlen(strs[k], HB_STORE_NAME_MAX + 1) > HB_STORE_NAME_MAX)
			return bad(st, err, HB_ETOOBIG, i, names[k],
				   "longer than HB_STORE_NAME_MAX bytes");
	if (e->side != HB_TARGET_SLURM && e->side != HB_TARGET_KUBERNETES)
		return bad(st, err, HB_EINVAL, i, "side",
			   "slurm or kubernetes");
	if (e->part && !token_ok(e->part, 1))
		return bad(st, err, HB_EINVAL, i, "part",
			   "1 to 64 of [A-Za-z0-9._/:-]");
	if (e->rate_version && !token_ok(e->rate_version, 0))
		return bad(st, err, HB_EINVAL, i, "rate_version",
			   "1 to 64 printable characters, no comma or quote");
	if (e->period_start_ms < 0 || e->period_end_ms < e->period_start_ms)
		return bad(st, err, HB_EINVAL, i, "period_end_ms",
			   "before period_start_ms (or a negative start)");
	if (e->cpu_mcore_s < 0 || e->mem_mib_s < 0 || e->node_s < 0 ||
	    e->egress_bytes < 0 || e->storage_mib_s < 0 || e->amount_micros < 0)
		return bad(st, err, HB_EINVAL, i, "amounts",
			   "negative (only a reversal is)");
	if (e->reverses)
		return bad(st, err, HB_EINVAL, i, "reverses",
			   "set only by hb_store_ledger_reverse()");
	return check_gpu(st, e, i, err);
}

/* e's GPUs as a JSON object, into buf; NULL when it has none.  Types need
 * no escaping (token_ok). */
static const char *gpu_json(const struct hb_ledger_entry *e, char *buf,
			    size_t size)
{
	size_t at = 0;

	if (!e->n_gpu)
		return NULL;
	buf[at++] = '{';
	for (int g = 0; g < e->n_gpu; g++)
		at += (size_t)snprintf(buf + at, size - at, "%s\"%s\":%lld",
				       g ? "," : "", e->gpu[g].type,
				       (long long)e->gpu[g].seconds);
	snprintf(buf + at, size - at, "}");
	return buf;
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
	if (t)
		sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static int insert_one(struct hb_store *st, sqlite3_stmt *s,
		      struct hb_ledger_entry *e, int64_t at, size_t i,
		      struct hb_err *err)
{
	/* 8 types of at most 64 bytes and a 20-digit count each */
	char gbuf[HB_LEDGER_GPU_TYPES * (HB_LEDGER_TYPE_MAX + 26) + 4];
	char op[48];
	int rc;

	sqlite3_bind_int64(s, 1, at);
	bind_text(s, 2, e->job_id);
	bind_text(s, 3, e->account);
	bind_text(s, 4, e->user);
	bind_text(s, 5, hb_job_target_name(e->side));
	bind_text(s, 6, e->partition);
	bind_text(s, 7, e->queue);
	sqlite3_bind_int64(s, 8, e->period_start_ms);
	sqlite3_bind_int64(s, 9, e->period_end_ms);
	bind_text(s, 10, e->rate_version);
	sqlite3_bind_int64(s, 11, e->cpu_mcore_s);
	sqlite3_bind_int64(s, 12, e->mem_mib_s);
	sqlite3_bind_int64(s, 13, e->node_s);
	bind_text(s, 14, gpu_json(e, gbuf, sizeof(gbuf)));
	sqlite3_bind_int64(s, 15, e->egress_bytes);
	sqlite3_bind_int64(s, 16, e->amount_micros);
	bind_text(s, 17, e->part);
	sqlite3_bind_int64(s, 18, e->storage_mib_s);
	snprintf(op, sizeof(op), "ledger_append: entries[%zu]", i);
	rc = hb_si_step(st, s, op, err);
	if (rc < 0)
		return rc;
	sqlite3_reset(s);
	e->id = sqlite3_last_insert_rowid(hb_si_db(st));
	e->at_ms = at;
	return 0;
}

int hb_store_ledger_append(struct hb_store *st, struct hb_ledger_entry *e,
			   size_t n, struct hb_err *err)
{
	static const char op[] = "ledger_append";
	sqlite3_stmt *s;
	int64_t at;
	int rc;

	if (n && !e)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: entries: NULL", op);
	for (size_t i = 0; i < n; i++)
		if ((rc = check_entry(st, &e[i], i, err)))
			return rc;
	if (!n)
		return 0;
	rc = hb_si_prep(st, HB_SI_LEDGER_INSERT, insert_sql, &s, op, err);
	if (!rc)
		rc = hb_si_op_begin(st, n == 1, op, err);
	if (rc)
		return rc;
	at = hb_si_now(st);
	for (size_t i = 0; i < n && !rc; i++)
		rc = insert_one(st, s, &e[i], at, i, err);
	return hb_si_op_end(st, rc, op, err);
}

/* Whether id can be reversed: 0, HB_ENOENT or HB_EINVAL. */
static int reversible(struct hb_store *st, int64_t id, const char *op,
		      struct hb_err *err)
{
	sqlite3_stmt *s;
	int rc = hb_si_prep(st, HB_SI_LEDGER_TARGET, target_sql, &s, op, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, id);
	rc = hb_si_step(st, s, op, err);
	if (rc < 0)
		return rc;
	if (rc == SQLITE_DONE)
		rc = hb_err_set(err, HB_ENOENT, hb_si_path(st), 0,
				"%s: no entry %lld", op, (long long)id);
	else if (sqlite3_column_type(s, 0) != SQLITE_NULL)
		rc = hb_err_set(
			err, HB_EINVAL, hb_si_path(st), 0,
			"%s: entry %lld is itself a reversal (of %lld): "
			"append a new entry instead",
			op, (long long)id,
			(long long)sqlite3_column_int64(s, 0));
	else
		rc = 0;
	sqlite3_reset(s);
	return rc;
}

int hb_store_ledger_reverse(struct hb_store *st, int64_t id, int64_t *out_id,
			    struct hb_err *err)
{
	static const char op[] = "ledger_reverse";
	sqlite3_stmt *s;
	int rc = hb_si_prep(st, HB_SI_LEDGER_REVERSE, reverse_sql, &s, op, err);

	if (!rc)
		rc = hb_si_op_begin(st, 0, op, err);
	if (rc)
		return rc;
	rc = reversible(st, id, op, err);
	if (!rc) {
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, hb_si_now(st));
		if (sqlite3_step(s) == SQLITE_DONE) {
			if (out_id)
				*out_id =
					sqlite3_last_insert_rowid(hb_si_db(st));
		} else if (sqlite3_extended_errcode(hb_si_db(st)) ==
			   SQLITE_CONSTRAINT_UNIQUE) {
			rc = hb_err_set(err, HB_EEXIST, hb_si_path(st), 0,
					"%s: entry %lld was reversed already",
					op, (long long)id);
		} else {
			rc = hb_si_db_fail(st, op, err);
		}
		sqlite3_reset(s);
	}
	return hb_si_op_end(st, rc, op, err);
}

/* The stored GPU object {"type":n,...} into e->gpu, types copied into
 * names; 0, or -1 for anything else (written by hand). */
static int parse_gpu(const char *j, struct hb_ledger_entry *e,
		     char names[][HB_LEDGER_TYPE_MAX + 1])
{
	const char *p = j;

	e->n_gpu = 0;
	if (!j)
		return 0;
	while (*p == ' ')
		p++;
	if (*p++ != '{')
		return -1;
	while (*p == ' ')
		p++;
	if (*p == '}')
		return 0;
	for (;;) {
		const char *q;
		char *end;
		size_t n;

		if (e->n_gpu == HB_LEDGER_GPU_TYPES || *p++ != '"')
			return -1;
		q = strchr(p, '"');
		n = q ? (size_t)(q - p) : 0;
		if (!q || !n || n > HB_LEDGER_TYPE_MAX)
			return -1;
		memcpy(names[e->n_gpu], p, n);
		names[e->n_gpu][n] = 0;
		p = q + 1;
		while (*p == ' ')
			p++;
		if (*p++ != ':')
			return -1;
		e->gpu[e->n_gpu].type = names[e->n_gpu];
		e->gpu[e->n_gpu].seconds = strtoll(p, &end, 10);
		if (end == p)
			return -1;
		e->n_gpu++;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == '}')
			return 0;
		if (*p++ != ',')
			return -1;
		while (*p == ' ')
			p++;
	}
}

static const char *col(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

int hb_store_ledger_list(struct hb_store *st, const char *job_id,
			 int (*cb)(const struct hb_ledger_entry *, void *),
			 void *arg, struct hb_err *err)
{
	static const char op[] = "ledger_list";
	char names[HB_LEDGER_GPU_TYPES][HB_LEDGER_TYPE_MAX + 1];
	struct hb_ledger_entry e;
	sqlite3_stmt *s;
	int rc;

	if (!job_id)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: job_id: required", op);
	rc = hb_si_prep(st, HB_SI_LEDGER_LIST, list_sql, &s, op, err);
	if (rc)
		return rc;
	sqlite3_bind_text(s, 1, job_id, -1, SQLITE_STATIC);
	while ((rc = hb_si_step(st, s, op, err)) == SQLITE_ROW) {
		int side = hb_job_target_parse(col(s, 5));

		memset(&e, 0, sizeof(e));
		e.id = sqlite3_column_int64(s, 0);
		if ((side != HB_TARGET_SLURM && side != HB_TARGET_KUBERNETES) ||
		    parse_gpu(col(s, 14), &e, names)) {
			rc = hb_err_set(err, HB_ESTORE, hb_si_path(st), 0,
					"%s: entry %lld has an unknown side or "
					"a GPU object this build cannot read",
					op, (long long)e.id);
			break;
		}
		e.at_ms = sqlite3_column_int64(s, 1);
		e.job_id = col(s, 2);
		e.account = col(s, 3);
		e.user = col(s, 4);
		e.side = (enum hb_job_target)side;
		e.partition = col(s, 6);
		e.queue = col(s, 7);
		e.period_start_ms = sqlite3_column_int64(s, 8);
		e.period_end_ms = sqlite3_column_int64(s, 9);
		e.rate_version = col(s, 10);
		e.cpu_mcore_s = sqlite3_column_int64(s, 11);
		e.mem_mib_s = sqlite3_column_int64(s, 12);
		e.node_s = sqlite3_column_int64(s, 13);
		e.egress_bytes = sqlite3_column_int64(s, 15);
		e.amount_micros = sqlite3_column_int64(s, 16);
		e.reverses = sqlite3_column_int64(s, 17);
		e.part = col(s, 18);
		e.storage_mib_s = sqlite3_column_int64(s, 19);
		if ((rc = cb(&e, arg)))
			break;
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : rc;
}

/* ------------------------------------------------------------------ */
/* Checkpoint storage meters                                          */
/* ------------------------------------------------------------------ */

static const char storage_list_sql[] =
	"SELECT url, job_id, account, \"user\", queue, bytes, since_ms FROM "
	"storage_meters WHERE (?1 IS NULL OR url = ?1) AND (?2 = 0 OR bytes > "
	"0) ORDER BY url";

static const char storage_set_sql[] =
	"INSERT INTO storage_meters (url, job_id, account, \"user\", queue, "
	"bytes, since_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
	"ON CONFLICT (url) DO UPDATE SET job_id = excluded.job_id, "
	"account = excluded.account, \"user\" = excluded.\"user\", "
	"queue = excluded.queue, bytes = excluded.bytes, "
	"since_ms = excluded.since_ms";

static const char storage_sum_sql[] =
	"SELECT coalesce(sum(storage_mib_s), 0), coalesce(sum(amount_micros), "
	"0) FROM ledger WHERE job_id = ?1 AND part = '" HB_LEDGER_PART_STORAGE
	"'";

int hb_store_storage_list(struct hb_store *st, const char *url, int held,
			  int (*cb)(const struct hb_storage_meter *, void *),
			  void *arg, struct hb_err *err)
{
	static const char op[] = "storage_list";
	struct hb_storage_meter m;
	sqlite3_stmt *s;
	int rc = hb_si_prep(st, HB_SI_STORAGE_LIST, storage_list_sql, &s, op,
			    err);

	if (rc)
		return rc;
	bind_text(s, 1, url);
	sqlite3_bind_int(s, 2, held != 0);
	while ((rc = hb_si_step(st, s, op, err)) == SQLITE_ROW) {
		memset(&m, 0, sizeof(m));
		m.url = col(s, 0);
		m.job_id = col(s, 1);
		m.account = col(s, 2);
		m.user = col(s, 3);
		m.queue = col(s, 4);
		m.bytes = sqlite3_column_int64(s, 5);
		m.since_ms = sqlite3_column_int64(s, 6);
		if ((rc = cb(&m, arg)))
			break;
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : rc;
}

static int check_meter(struct hb_store *st, const struct hb_storage_meter *m,
		       struct hb_err *err)
{
	const char *const strs[] = { m->url, m->job_id, m->account, m->user,
				     m->queue };
	static const char *const names[] = { "url", "job_id", "account", "user",
					     "queue" };

	for (size_t k = 0; k < 5; k++) {
		if (k < 2 && (!strs[k] || !*strs[k]))
			return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
					  "storage_charge: %s: required",
					  names[k]);
		if (strs[k] &&
		    strnlen(strs[k], HB_STORE_NAME_MAX + 1) > HB_STORE_NAME_MAX)
			return hb_err_set(err, HB_ETOOBIG, hb_si_path(st), 0,
					  "storage_charge: %s: longer than "
					  "HB_STORE_NAME_MAX bytes",
					  names[k]);
	}
	if (m->bytes < 0 || m->since_ms < 0)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "storage_charge: bytes, since_ms: negative");
	return 0;
}

int hb_store_storage_charge(struct hb_store *st,
			    const struct hb_storage_meter *m,
			    struct hb_ledger_entry *e, size_t n,
			    struct hb_err *err)
{
	static const char op[] = "storage_charge";
	sqlite3_stmt *ins = NULL, *set;
	int64_t at;
	int rc;

	if ((n && !e) || !m)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: %s: NULL", op, m ? "entries" : "meter");
	for (size_t i = 0; i < n; i++)
		if ((rc = check_entry(st, &e[i], i, err)))
			return rc;
	if ((rc = check_meter(st, m, err)))
		return rc;
	if (n)
		rc = hb_si_prep(st, HB_SI_LEDGER_INSERT, insert_sql, &ins, op,
				err);
	if (!rc)
		rc = hb_si_prep(st, HB_SI_STORAGE_SET, storage_set_sql, &set,
				op, err);
	if (!rc)
		rc = hb_si_op_begin(st, 0, op, err);
	if (rc)
		return rc;
	at = hb_si_now(st);
	for (size_t i = 0; i < n && !rc; i++)
		rc = insert_one(st, ins, &e[i], at, i, err);
	if (!rc) {
		bind_text(set, 1, m->url);
		bind_text(set, 2, m->job_id);
		bind_text(set, 3, m->account);
		bind_text(set, 4, m->user);
		bind_text(set, 5, m->queue);
		sqlite3_bind_int64(set, 6, m->bytes);
		sqlite3_bind_int64(set, 7, m->since_ms);
		rc = hb_si_step(st, set, op, err);
		if (rc > 0)
			rc = 0; /* SQLITE_DONE */
		sqlite3_reset(set);
	}
	return hb_si_op_end(st, rc, op, err);
}

int hb_store_storage_charged(struct hb_store *st, const char *job_id,
			     int64_t *mib_s, int64_t *amount_micros,
			     struct hb_err *err)
{
	static const char op[] = "storage_charged";
	sqlite3_stmt *s;
	int rc;

	*mib_s = *amount_micros = 0;
	if (!job_id)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: job_id: required", op);
	rc = hb_si_prep(st, HB_SI_STORAGE_SUM, storage_sum_sql, &s, op, err);
	if (rc)
		return rc;
	sqlite3_bind_text(s, 1, job_id, -1, SQLITE_STATIC);
	rc = hb_si_step(st, s, op, err);
	if (rc == SQLITE_ROW) {
		*mib_s = sqlite3_column_int64(s, 0);
		*amount_micros = sqlite3_column_int64(s, 1);
		rc = 0;
	}
	sqlite3_reset(s);
	return rc < 0 ? rc : 0;
}
