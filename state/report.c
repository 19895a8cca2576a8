/*
 * report.c - chargeback reports: the ledger's entries whose period ends
 * in a window, grouped by account, user, partition, queue, side or month.
 *
 * Every sum is an integer sum in SQL (SQLite's sum() fails on overflow
 * rather than going to floating point); the total is the sum of the
 * lines, so the lines add up to it to the micro-unit.  Three statements:
 * the lines, their GPU-seconds by type, and the total's distinct jobs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/store.h"
#include "hpcbridge/timefmt.h"
#include "store_int.h"

static const char *const by_names[HB__BY_COUNT] = {
	"account", "user", "partition", "queue", "side", "month", "pilot"
};

const char *hb_ledger_by_name(enum hb_ledger_by by)
{
	return (int)by >= 0 && by < HB__BY_COUNT ? by_names[by] : "unknown";
}

int hb_ledger_by_parse(const char *name)
{
	for (int i = 0; name && i < HB__BY_COUNT; i++)
		if (!strcmp(by_names[i], name))
			return i;
	return -1;
}

#define WINDOW " WHERE period_end_ms >= ?1 AND period_end_ms < ?2"
#define LINES(K)                                                               \
	"SELECT " K " AS k, count(DISTINCT job_id), count(*), "                \
	"sum(cpu_mcore_s), sum(mem_mib_s), sum(node_s), sum(egress_bytes), "   \
	"sum(amount_micros), group_concat(DISTINCT rate_version), "            \
	"sum(storage_mib_s) FROM ledger" WINDOW " GROUP BY k ORDER BY k"
#define GPUS(K)                                                                \
	"SELECT " K " AS k, g.key, sum(g.value) FROM ledger, "                 \
	"json_each(ledger.gpu_s) AS g" WINDOW " AND gpu_s IS NOT NULL "        \
	"GROUP BY k, g.key ORDER BY k, g.key"
#define JOBS  "SELECT count(DISTINCT job_id) FROM ledger" WINDOW
#define MONTH "strftime('%Y-%m', period_end_ms / 1000, 'unixepoch')"
/* The pilot group of job JOB: its latest decision's document's
 * $.placement.pilot.selected, true "pilot", false "control", else NULL
 * (a document that is not JSON included: json_extract() would fail). */
#define PILOT_OF(JOB)                                                          \
	"(SELECT CASE WHEN json_valid(d.inputs) THEN CASE json_extract("       \
	"d.inputs, '$.placement.pilot.selected') WHEN 1 THEN 'pilot' "         \
	"WHEN 0 THEN 'control' END END FROM decisions AS d WHERE "             \
	"d.job_id = " JOB " ORDER BY d.id DESC LIMIT 1)"
#define PILOT PILOT_OF("ledger.job_id")
#define ONE(K)                                                                 \
	{                                                                      \
		LINES(K), GPUS(K), JOBS                                        \
	}

static const char *const report_sql[HB__BY_COUNT][3] = {
	ONE("account"), ONE("\"user\""), ONE("\"partition\""), ONE("queue"),
	ONE("side"),	ONE(MONTH),	 ONE(PILOT),
};

const char *hb_store_report_sql(enum hb_ledger_by by, int which)
{
	if ((int)by < 0 || by >= HB__BY_COUNT || which < 0 || which > 2)
		return NULL;
	return report_sql[by][which];
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add s (copied) to the sorted set *v of *n; 0 or HB_ENOMEM. */
static int set_add(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv, *c;
	size_t lo = 0, hi = *n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = strncmp((*v)[mid], s, len);

		if (!d && (*v)[mid][len] == 0)
			return 0;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	c = strndup(s, len);
	if (nv)
		*v = nv;
	if (!nv || !c) {
		free(c);
		return HB_ENOMEM;
	}
	memmove(nv + lo + 1, nv + lo, (*n - lo) * sizeof(*nv));
	nv[lo] = c;
	(*n)++;
	return 0;
}

/* The comma-separated list csv (may be NULL) added to the set. */
static int set_add_list(char ***v, size_t *n, const char *csv)
{
	while (csv && *csv) {
		const char *c = strchr(csv, ',');
		size_t len = c ? (size_t)(c - csv) : strlen(csv);
		int rc = len ? set_add(v, n, csv, len) : 0;

		if (rc)
			return rc;
		csv = c ? c + 1 : NULL;
	}
	return 0;
}

/* The set joined by commas (caller frees); the set is freed. */
static char *set_join(char **v, size_t n)
{
	size_t len = 1;
	char *out, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	out = p = malloc(len);
	for (size_t i = 0; i < n; i++) {
		if (out) {
			size_t l = strlen(v[i]);

			if (i)
				*p++ = ',';
			memcpy(p, v[i], l);
			p += l;
		}
		free(v[i]);
	}
	free(v);
	if (out)
		*p = 0;
	return out;
}

static void line_free(struct hb_ledger_line *l)
{
	free(l->key);
	free(l->gpu_s);
	free(l->rate_versions);
}

void hb_ledger_report_free(struct hb_ledger_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_lines; i++)
		line_free(&r->lines[i]);
	free(r->lines);
	line_free(&r->total);
	for (size_t i = 0; i < r->n_types; i++)
		free(r->types[i]);
	free(r->types);
	free(r);
}

/* SQLite's ORDER BY of a text column: NULL first, then bytes. */
static int key_cmp(const char *a, const char *b)
{
	if (!a)
		return b ? -1 : 0;
	return b ? strcmp(a, b) : 1;
}

static struct hb_ledger_line *find_line(struct hb_ledger_report *r,
					const char *k)
{
	size_t lo = 0, hi = r->n_lines;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = key_cmp(r->lines[mid].key, k);

		if (!d)
			return &r->lines[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Statement which of r's report, bound to its window, into *s. */
static int prepare(struct hb_store *st, const struct hb_ledger_report *r,
		   int which, sqlite3_stmt **s, const char *op,
		   struct hb_err *err)
{
	*s = NULL;
	if (sqlite3_prepare_v2(hb_si_db(st), report_sql[r->by][which], -1, s,
			       NULL))
		return hb_si_db_fail(st, op, err);
	sqlite3_bind_int64(*s, 1, r->from_ms);
	sqlite3_bind_int64(*s, 2, r->to_ms);
	return 0;
}

static int read_lines(struct hb_store *st, struct hb_ledger_report *r,
		      const char *op, struct hb_err *err)
{
	sqlite3_stmt *s;
	size_t cap = 0;
	int rc = prepare(st, r, 0, &s, op, err);

	if (rc)
		return rc;
	while ((rc = hb_si_step(st, s, op, err)) == SQLITE_ROW) {
		struct hb_ledger_line *l;
		const char *k = (const char *)sqlite3_column_text(s, 0);

		if (r->n_lines == cap) {
			void *n = realloc(r->lines, (cap = cap ? 2 * cap : 16) *
							    sizeof(*l));
			if (!n) {
				rc = HB_ENOMEM;
				break;
			}
			r->lines = n;
		}
		l = &r->lines[r->n_lines++];
		memset(l, 0, sizeof(*l));
		l->key = k ? strdup(k) : NULL;
		l->jobs = sqlite3_column_int64(s, 1);
		l->entries = sqlite3_column_int64(s, 2);
		l->cpu_mcore_s = sqlite3_column_int64(s, 3);
		l->mem_mib_s = sqlite3_column_int64(s, 4);
		l->node_s = sqlite3_column_int64(s, 5);
		l->egress_bytes = sqlite3_column_int64(s, 6);
		l->amount_micros = sqlite3_column_int64(s, 7);
		l->storage_mib_s = sqlite3_column_int64(s, 9);
		/* sorted and without repeats: set_add_list() in fill */
		l->rate_versions =
			strdup(sqlite3_column_text(s, 8)
				       ? (const char *)sqlite3_column_text(s, 8)
				       : "");
		if ((k && !l->key) || !l->rate_versions) {
			rc = HB_ENOMEM;
			break;
		}
	}
	sqlite3_finalize(s);
	if (rc == HB_ENOMEM)
		return hb_err_set(err, rc, hb_si_path(st), 0,
				  "%s: out of memory", op);
	return rc == SQLITE_DONE ? 0 : rc;
}

/* A GPU row of the second statement, kept until the types are known. */
struct gpu_row {
	struct hb_ledger_line *line;
	char *type;
	int64_t s;
};

static int read_gpus(struct hb_store *st, struct hb_ledger_report *r,
		     struct gpu_row **rows, size_t *n, const char *op,
		     struct hb_err *err)
{
	sqlite3_stmt *s;
	size_t cap = 0;
	int rc = prepare(st, r, 1, &s, op, err);

	if (rc)
		return rc;
	while ((rc = hb_si_step(st, s, op, err)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		const char *t = (const char *)sqlite3_column_text(s, 1);
		struct gpu_row *g;

		if (*n == cap) {
			void *nr = realloc(*rows, (cap = cap ? 2 * cap : 16) *
							  sizeof(**rows));
			if (!nr) {
				rc = HB_ENOMEM;
				break;
			}
			*rows = nr;
		}
		g = &(*rows)[*n];
		g->line = find_line(r, k);
		g->s = sqlite3_column_int64(s, 2);
		g->type = strdup(t ? t : "");
		if (!g->type) {
			rc = HB_ENOMEM;
			break;
		}
		(*n)++;
		if (!g->line || (rc = set_add(&r->types, &r->n_types, g->type,
					      strlen(g->type))))
			break;
	}
	sqlite3_finalize(s);
	if (rc == SQLITE_ROW || rc == HB_ENOMEM)
		return hb_err_set(err, rc == HB_ENOMEM ? rc : HB_ESTORE,
				  hb_si_path(st), 0, "%s: %s", op,
				  rc == HB_ENOMEM ? "out of memory"
						  : "GPU rows without a line "
						    "(the file changed?)");
	return rc == SQLITE_DONE ? 0 : rc;
}

static int add(int64_t *sum, int64_t v)
{
	return __builtin_add_overflow(*sum, v, sum) ? HB_ERANGE : 0;
}

/* The lines' GPU arrays from rows, the rate versions sorted, the total
 * summed. */
static int fill(struct hb_ledger_report *r, struct gpu_row *rows, size_t n)
{
	size_t nt = r->n_types ? r->n_types : 1;
	char **all = NULL;
	size_t n_all = 0;
	int rc = 0;

	r->total.gpu_s = calloc(nt, sizeof(int64_t));
	for (size_t i = 0; i < r->n_lines; i++)
		if (!(r->lines[i].gpu_s = calloc(nt, sizeof(int64_t))))
			return HB_ENOMEM;
	if (!r->total.gpu_s)
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char **t = bsearch(&rows[i].type, r->types, r->n_types,
				   sizeof(char *), cmp_str);

		rows[i].line->gpu_s[t - r->types] = rows[i].s;
		rc = rc ? rc : add(&r->total.gpu_s[t - r->types], rows[i].s);
	}
	for (size_t i = 0; i < r->n_lines && !rc; i++) {
		struct hb_ledger_line *l = &r->lines[i], *t = &r->total;
		char **v = NULL;
		size_t nv = 0;

		rc = add(&t->entries, l->entries);
		rc = rc ? rc : add(&t->cpu_mcore_s, l->cpu_mcore_s);
		rc = rc ? rc : add(&t->mem_mib_s, l->mem_mib_s);
		rc = rc ? rc : add(&t->node_s, l->node_s);
		rc = rc ? rc : add(&t->egress_bytes, l->egress_bytes);
		rc = rc ? rc : add(&t->storage_mib_s, l->storage_mib_s);
		rc = rc ? rc : add(&t->amount_micros, l->amount_micros);
		rc = rc ? rc : set_add_list(&all, &n_all, l->rate_versions);
		if (!rc)
			rc = set_add_list(&v, &nv, l->rate_versions);
		free(l->rate_versions);
		l->rate_versions = set_join(v, nv);
		if (!rc && !l->rate_versions)
			rc = HB_ENOMEM;
	}
	r->total.rate_versions = set_join(all, n_all);
	return rc ? rc : r->total.rate_versions ? 0 : HB_ENOMEM;
}

static int total_jobs(struct hb_store *st, struct hb_ledger_report *r,
		      const char *op, struct hb_err *err)
{
	sqlite3_stmt *s;
	int rc = prepare(st, r, 2, &s, op, err);

	if (rc)
		return rc;
	rc = hb_si_step(st, s, op, err);
	if (rc == SQLITE_ROW)
		r->total.jobs = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : rc < 0 ? rc : HB_ESTORE;
}

/* One read transaction for a report's statements, so that they see the
 * same file, unless the caller holds one: *own says which.  0 or the
 * error of BEGIN. */
static int read_begin(struct hb_store *st, int *own, const char *op,
		      struct hb_err *err)
{
	*own = sqlite3_get_autocommit(hb_si_db(st));
	if (*own && sqlite3_exec(hb_si_db(st), "BEGIN", NULL, NULL, NULL))
		return hb_si_db_fail(st, op, err);
	return 0;
}

static void read_end(struct hb_store *st, int own)
{
	if (own && !sqlite3_get_autocommit(hb_si_db(st)))
		sqlite3_exec(hb_si_db(st), "COMMIT", NULL, NULL, NULL);
}

int hb_store_report(struct hb_store *st, enum hb_ledger_by by, int64_t from_ms,
		    int64_t to_ms, struct hb_ledger_report **out,
		    struct hb_err *err)
{
	static const char op[] = "report";
	struct hb_ledger_report *r;
	struct gpu_row *rows = NULL;
	size_t n = 0;
	int rc, own;

	*out = NULL;
	if ((int)by < 0 || by >= HB__BY_COUNT)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: by: unknown value %d (%s)", op, (int)by,
				  HB_LEDGER_BYS);
	if (to_ms < from_ms)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: to: before from", op);
	if (!(r = calloc(1, sizeof(*r))))
		return hb_err_set(err, HB_ENOMEM, hb_si_path(st), 0,
				  "%s: out of memory", op);
	r->by = by;
	r->from_ms = from_ms;
	r->to_ms = to_ms;
	rc = read_begin(st, &own, op, err);
	if (!rc)
		rc = read_lines(st, r, op, err);
	if (!rc)
		rc = read_gpus(st, r, &rows, &n, op, err);
	if (!rc)
		rc = total_jobs(st, r, op, err);
	read_end(st, own);
	if (!rc && (rc = fill(r, rows, n)))
		hb_err_set(err, rc, hb_si_path(st), 0, "%s: %s", op,
			   rc == HB_ERANGE ? "a total overflows 64 bits"
					   : "out of memory");
	for (size_t i = 0; i < n; i++)
		free(rows[i].type);
	free(rows);
	if (rc) {
		hb_ledger_report_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* --- series: amounts per key and per day or month ------------------------ */

static const char *const key_sql[HB__BY_COUNT] = {
	"account", "\"user\"", "\"partition\"", "queue", "side", MONTH, PILOT,
};

#define DAY_MS	       INT64_C(86400000)
#define STEP_FMT(step) ((step) == HB_STEP_DAY ? "'%Y-%m-%d'" : "'%Y-%m'")

void hb_ledger_series_free(struct hb_ledger_series *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_buckets; i++)
		free(s->buckets[i]);
	for (size_t i = 0; i < s->n_keys; i++)
		free(s->keys[i]);
	free(s->buckets);
	free(s->keys);
	free(s->amount_micros);
	free(s->has);
	free(s);
}

/* The buckets from the one of first_ms to the one of last_ms, every one
 * between included ("YYYY-MM-DD" or "YYYY-MM": the prefix of an RFC 3339
 * time); 0 or HB_ENOMEM. */
static int make_buckets(struct hb_ledger_series *s, int64_t first_ms,
			int64_t last_ms)
{
	size_t len = s->step == HB_STEP_DAY ? 10 : 7, cap = 0;
	int64_t t = first_ms - first_ms % DAY_MS;
	char at[32], end[32];

	hb_time_rfc3339_format(last_ms / 1000, end);
	end[len] = 0;
	for (;;) {
		hb_time_rfc3339_format(t / 1000, at);
		if (s->step == HB_STEP_MONTH) /* back to the 1st */
			t -= ((at[8] - '0') * 10 + (at[9] - '0') - 1) * DAY_MS;
		at[len] = 0;
		if (strcmp(at, end) > 0)
			return 0;
		if (s->n_buckets == cap) {
			void *n =
				realloc(s->buckets, (cap = cap ? 2 * cap : 32) *
							    sizeof(char *));
			if (!n)
				return HB_ENOMEM;
			s->buckets = n;
		}
		if (!(s->buckets[s->n_buckets] = strdup(at)))
			return HB_ENOMEM;
		s->n_buckets++;
		/* a month: 32 days from the 1st is in the next one */
		t += s->step == HB_STEP_DAY ? DAY_MS : 32 * DAY_MS;
	}
}

/* The first and last period ends in the window, and the step AUTO
 * means; *n 0 when the window is empty. */
static int series_extent(struct hb_store *st, struct hb_ledger_series *s,
			 int64_t from_ms, int64_t to_ms, int64_t *first,
			 int64_t *last, int64_t *n, const char *op,
			 struct hb_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(hb_si_db(st),
			       "SELECT count(*), min(period_end_ms), "
			       "max(period_end_ms) FROM ledger" WINDOW,
			       -1, &q, NULL))
		return hb_si_db_fail(st, op, err);
	sqlite3_bind_int64(q, 1, from_ms);
	sqlite3_bind_int64(q, 2, to_ms);
	rc = hb_si_step(st, q, op, err);
	if (rc == SQLITE_ROW) {
		*n = sqlite3_column_int64(q, 0);
		*first = sqlite3_column_int64(q, 1);
		*last = sqlite3_column_int64(q, 2);
		rc = 0;
	}
	sqlite3_finalize(q);
	if (!rc && s->step == HB_STEP_AUTO) {
		int64_t lo = from_ms > 0 ? from_ms : *first;
		int64_t hi = to_ms != INT64_MAX ? to_ms : *last + 1;

		s->step = hi - lo <= HB_SERIES_DAYS_MAX * DAY_MS
				  ? HB_STEP_DAY
				  : HB_STEP_MONTH;
	}
	return rc == SQLITE_DONE ? HB_ESTORE : rc;
}

/* Key k at the end of the sorted key list (rows come ordered by key). */
static int series_key(struct hb_ledger_series *s, const char *k, size_t *cap)
{
	if (s->n_keys && !key_cmp(s->keys[s->n_keys - 1], k))
		return 0;
	if (s->n_keys == *cap) {
		void *n = realloc(s->keys, (*cap = *cap ? 2 * *cap : 16) *
						   sizeof(char *));
		if (!n)
			return HB_ENOMEM;
		s->keys = n;
	}
	s->keys[s->n_keys] = k ? strdup(k) : NULL;
	if (k && !s->keys[s->n_keys])
		return HB_ENOMEM;
	s->n_keys++;
	return 0;
}

struct cell {
	size_t key, bucket;
	int64_t micros;
};

/* The cells' rows: key, bucket, sum, ordered by key then bucket. */
static int series_cells(struct hb_store *st, struct hb_ledger_series *s,
			int64_t from_ms, int64_t to_ms, struct cell **cells,
			size_t *n, const char *op, struct hb_err *err)
{
	char sql[512];
	sqlite3_stmt *q = NULL;
	size_t cap = 0, kcap = 0;
	int rc;

	snprintf(sql, sizeof(sql),
		 "SELECT %s AS k, strftime(%s, period_end_ms / 1000, "
		 "'unixepoch') AS b, sum(amount_micros) FROM ledger" WINDOW
		 " GROUP BY k, b ORDER BY k, b",
		 key_sql[s->by], STEP_FMT(s->step));
	if (sqlite3_prepare_v2(hb_si_db(st), sql, -1, &q, NULL))
		return hb_si_db_fail(st, op, err);
	sqlite3_bind_int64(q, 1, from_ms);
	sqlite3_bind_int64(q, 2, to_ms);
	while ((rc = hb_si_step(st, q, op, err)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(q, 0);
		const char *b = (const char *)sqlite3_column_text(q, 1);
		char **at = b ? bsearch(&b, s->buckets, s->n_buckets,
					sizeof(char *), cmp_str)
			      : NULL;

		if (!at) {
			rc = HB_ESTORE;
			break;
		}
		if (*n == cap) {
			void *nc = realloc(*cells, (cap = cap ? 2 * cap : 64) *
							   sizeof(**cells));
			if (!nc) {
				rc = HB_ENOMEM;
				break;
			}
			*cells = nc;
		}
		if ((rc = series_key(s, k, &kcap)))
			break;
		(*cells)[(*n)++] =
			(struct cell){ s->n_keys - 1, (size_t)(at - s->buckets),
				       sqlite3_column_int64(q, 2) };
	}
	sqlite3_finalize(q);
	if (rc == HB_ENOMEM || rc == HB_ESTORE)
		return hb_err_set(err, rc, hb_si_path(st), 0, "%s: %s", op,
				  rc == HB_ENOMEM ? "out of memory"
						  : "a period outside the "
						    "window's buckets");
	return rc == SQLITE_DONE ? 0 : rc;
}

/* The key-by-bucket matrix from the cells, and its total. */
static int series_fill(struct hb_ledger_series *s, const struct cell *c,
		       size_t n)
{
	size_t nb = s->n_buckets;

	s->amount_micros = calloc(s->n_keys * nb + 1, sizeof(int64_t));
	s->has = calloc(s->n_keys * nb + 1, 1);
	if (!s->amount_micros || !s->has)
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		s->amount_micros[c[i].key * nb + c[i].bucket] = c[i].micros;
		s->has[c[i].key * nb + c[i].bucket] = 1;
		if (add(&s->total_micros, c[i].micros))
			return HB_ERANGE;
	}
	return 0;
}

int hb_store_report_series(struct hb_store *st, enum hb_ledger_by by,
			   enum hb_ledger_step step, int64_t from_ms,
			   int64_t to_ms, struct hb_ledger_series **out,
			   struct hb_err *err)
{
	static const char op[] = "report series";
	struct hb_ledger_series *s;
	struct cell *cells = NULL;
	int64_t first = 0, last = 0, n = 0;
	size_t n_cells = 0;
	int rc, own;

	*out = NULL;
	if ((int)by < 0 || by >= HB__BY_COUNT || (int)step < HB_STEP_AUTO ||
	    step > HB_STEP_MONTH || to_ms < from_ms)
		return hb_err_set(
			err, HB_EINVAL, hb_si_path(st), 0, "%s: %s", op,
			to_ms < from_ms ? "to: before from"
					: "by or step: unknown value");
	if (!(s = calloc(1, sizeof(*s))))
		return hb_err_set(err, HB_ENOMEM, hb_si_path(st), 0,
				  "%s: out of memory", op);
	s->by = by;
	s->step = step;
	rc = read_begin(st, &own, op, err);
	if (!rc)
		rc = series_extent(st, s, from_ms, to_ms, &first, &last, &n, op,
				   err);
	if (!rc && n && (rc = make_buckets(s, first, last)))
		hb_err_set(err, rc, hb_si_path(st), 0, "%s: out of memory", op);
	if (!rc && n)
		rc = series_cells(st, s, from_ms, to_ms, &cells, &n_cells, op,
				  err);
	read_end(st, own);
	if (!rc && (rc = series_fill(s, cells, n_cells)))
		hb_err_set(err, rc, hb_si_path(st), 0, "%s: %s", op,
			   rc == HB_ERANGE ? "a total overflows 64 bits"
					   : "out of memory");
	free(cells);
	if (rc) {
		hb_ledger_series_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* --- the migration pilot ------------------------------------------------- */

static const char *const group_names[HB__PILOT_COUNT] = { "pilot", "control" };

const char *hb_pilot_group_name(enum hb_pilot_group g)
{
	return (int)g >= 0 && g < HB__PILOT_COUNT ? group_names[g] : "unknown";
}

/* One row per terminal job of a group in the window: group, side,
 * succeeded, queue wait, run time, ledger amount, CPU millicore-s. */
static const char pilot_sql[] =
	"SELECT g, target, state = 'succeeded', started_ms - created_ms, "
	"ended_ms - started_ms, "
	"(SELECT sum(amount_micros) FROM ledger AS l WHERE l.job_id = j.id), "
	"(SELECT sum(cpu_mcore_s) FROM ledger AS l WHERE l.job_id = j.id) "
	"FROM (SELECT *, " PILOT_OF(
		"jobs.id") " AS g FROM jobs "
			   "WHERE state IN ('succeeded', 'failed', "
			   "'cancelled', 'lost') "
			   "AND target IN ('slurm', 'kubernetes') "
			   "AND coalesce(ended_ms, updated_ms) >= ?1 "
			   "AND coalesce(ended_ms, updated_ms) < ?2) AS j "
			   "WHERE g IS NOT NULL";

/* A growable list of durations, for a median. */
struct durs {
	int64_t *v;
	size_t n, cap;
};

static int durs_add(struct durs *d, int64_t v)
{
	if (d->n == d->cap) {
		void *nv = realloc(d->v, (d->cap = d->cap ? 2 * d->cap : 32) *
						 sizeof(*d->v));
		if (!nv)
			return HB_ENOMEM;
		d->v = nv;
	}
	d->v[d->n++] = v;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The median of d, -1 for none; an even count's two middle values'
 * mean, rounded down.  *n gets the count. */
static int64_t median(struct durs *d, int64_t *n)
{
	int64_t lo, hi;

	*n = (int64_t)d->n;
	if (!d->n)
		return -1;
	qsort(d->v, d->n, sizeof(*d->v), cmp_i64);
	lo = d->v[(d->n - 1) / 2];
	hi = d->v[d->n / 2];
	return lo + (hi - lo) / 2;
}

/* amount per core-hour in micro-units, half up; -1 without core-hours */
static int64_t per_core_h(int64_t micros, int64_t mcore_s)
{
	__int128 num = (__int128)micros * 3600000;

	if (mcore_s <= 0)
		return -1;
	return (int64_t)((num * 2 + (num < 0 ? -mcore_s : mcore_s)) /
			 (2 * (__int128)mcore_s));
}

/* The rows of pilot_sql into the cells and their duration lists. */
static int pilot_rows(struct hb_store *st, struct hb_pilot_report *r,
		      struct durs wait[][2], struct durs run[][2],
		      const char *op, struct hb_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(hb_si_db(st), pilot_sql, -1, &q, NULL))
		return hb_si_db_fail(st, op, err);
	sqlite3_bind_int64(q, 1, r->from_ms);
	sqlite3_bind_int64(q, 2, r->to_ms);
	while ((rc = hb_si_step(st, q, op, err)) == SQLITE_ROW) {
		const char *g = (const char *)sqlite3_column_text(q, 0);
		const char *t = (const char *)sqlite3_column_text(q, 1);
		int gi = g && !strcmp(g, "control"), si = t && t[0] == 'k';
		struct hb_pilot_cell *c = &r->cell[gi][si];

		c->jobs++;
		c->succeeded += sqlite3_column_int64(q, 2);
		rc = add(&c->amount_micros, sqlite3_column_int64(q, 5));
		rc = rc ? rc : add(&c->cpu_mcore_s, sqlite3_column_int64(q, 6));
		if (!rc && sqlite3_column_type(q, 3) != SQLITE_NULL)
			rc = durs_add(&wait[gi][si],
				      sqlite3_column_int64(q, 3));
		if (!rc && sqlite3_column_type(q, 4) != SQLITE_NULL)
			rc = durs_add(&run[gi][si], sqlite3_column_int64(q, 4));
		if (rc)
			break;
	}
	sqlite3_finalize(q);
	if (rc == HB_ENOMEM || rc == HB_ERANGE)
		return hb_err_set(err, rc, hb_si_path(st), 0, "%s: %s", op,
				  rc == HB_ENOMEM ? "out of memory"
						  : "a sum overflows 64 bits");
	return rc == SQLITE_DONE ? 0 : rc;
}

int hb_store_pilot_report(struct hb_store *st, int64_t from_ms, int64_t to_ms,
			  struct hb_pilot_report *out, struct hb_err *err)
{
	static const char op[] = "pilot report";
	struct durs wait[HB__PILOT_COUNT][2] = { 0 },
		    run[HB__PILOT_COUNT][2] = { 0 };
	int rc, own;

	memset(out, 0, sizeof(*out));
	if (to_ms < from_ms)
		return hb_err_set(err, HB_EINVAL, hb_si_path(st), 0,
				  "%s: to: before from", op);
	out->from_ms = from_ms;
	out->to_ms = to_ms;
	rc = read_begin(st, &own, op, err);
	if (!rc)
		rc = pilot_rows(st, out, wait, run, op, err);
	read_end(st, own);
	for (int g = 0; g < HB__PILOT_COUNT; g++)
		for (int i = 0; i < 2; i++) {
			struct hb_pilot_cell *c = &out->cell[g][i];

			c->wait_median_ms = median(&wait[g][i], &c->waited);
			c->run_median_ms = median(&run[g][i], &c->ran);
			c->per_core_h_micros =
				per_core_h(c->amount_micros, c->cpu_mcore_s);
			free(wait[g][i].v);
			free(run[g][i].v);
		}
	return rc;
}
