/*
 * report.c - chargeback reports: the ledger's entries whose period ends
 * in a window, grouped by account, user, partition, queue, side or month.
 *
 * Every sum is an integer sum in SQL (SQLite's sum() fails on overflow
 * rather than going to floating point); the total is the sum of the
 * lines, so the lines add up to it to the micro-unit.  Three statements:
 * the lines, their GPU-seconds by type, and the total's distinct jobs.
 */
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/store.h"
#include "store_int.h"

static const char *const by_names[HB__BY_COUNT] = { "account",	 "user",
						    "partition", "queue",
						    "side",	 "month" };

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
	"sum(amount_micros), group_concat(DISTINCT rate_version) "             \
	"FROM ledger" WINDOW " GROUP BY k ORDER BY k"
#define GPUS(K)                                                                \
	"SELECT " K " AS k, g.key, sum(g.value) FROM ledger, "                 \
	"json_each(ledger.gpu_s) AS g" WINDOW " AND gpu_s IS NOT NULL "        \
	"GROUP BY k, g.key ORDER BY k, g.key"
#define JOBS  "SELECT count(DISTINCT job_id) FROM ledger" WINDOW
#define MONTH "strftime('%Y-%m', period_end_ms / 1000, 'unixepoch')"
#define ONE(K)                                                                 \
	{                                                                      \
		LINES(K), GPUS(K), JOBS                                        \
	}

static const char *const report_sql[HB__BY_COUNT][3] = {
	ONE("account"), ONE("\"user\""), ONE("\"partition\""),
	ONE("queue"),	ONE("side"),	 ONE(MONTH),
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
	/* one read transaction: the three statements see the same file */
	own = sqlite3_get_autocommit(hb_si_db(st));
	rc = own && sqlite3_exec(hb_si_db(st), "BEGIN", NULL, NULL, NULL)
		     ? hb_si_db_fail(st, op, err)
		     : 0;
	if (!rc)
		rc = read_lines(st, r, op, err);
	if (!rc)
		rc = read_gpus(st, r, &rows, &n, op, err);
	if (!rc)
		rc = total_jobs(st, r, op, err);
	if (own && !sqlite3_get_autocommit(hb_si_db(st)))
		sqlite3_exec(hb_si_db(st), "COMMIT", NULL, NULL, NULL);
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
