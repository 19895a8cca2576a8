/*
 * cmd_reconcile.c - hpcbridge report --reconcile: the ledger's Slurm side
 * against Slurm's own accounting (slurmdbd, what sacct reads), job by
 * job: elapsed time and CPU-hours, each difference beyond the stated
 * tolerances listed, with the Slurm-side jobs accounting lacks, the
 * tagged Slurm jobs the ledger lacks, and, apart, the burst jobs'
 * proxies (charged on the cluster side, never a difference).
 *
 * The comparison (hb_recon_compare(), reconcile.h) touches neither Slurm
 * nor the store; hb_cli_reconcile() reads both into tables first.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/slurmc.h"
#include "hpcbridge/store.h"
#include "hpcbridge/timefmt.h"
#include "reconcile.h"

/* ------------------------------------------------------- comparison */

static uint64_t abs_diff(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

unsigned hb_recon_diff(const struct hb_recon_ledger *l,
		       const struct hb_recon_acct *a)
{
	unsigned what = 0;
	/* accounting's figures are the reference of the percentages */
	unsigned __int128 acct_ms =
		(unsigned __int128)(a->elapsed_s > 0 ? a->elapsed_s : 0) * 1000;
	unsigned __int128 acct_mcs = acct_ms * a->cpus; /* ms * cores */
	unsigned __int128 tol = acct_ms * HB_RECON_PER_MILLE / 1000;
	unsigned __int128 d;

	if (tol < HB_RECON_ELAPSED_MS)
		tol = HB_RECON_ELAPSED_MS;
	if (abs_diff(l->elapsed_ms, (int64_t)acct_ms) > tol)
		what |= HB_RECON_ELAPSED;
	/* millicore-seconds: ms * cores is the same unit */
	d = l->cpu_mcore_s > 0 ? (unsigned __int128)l->cpu_mcore_s : 0;
	d = d > acct_mcs ? d - acct_mcs : acct_mcs - d;
	if (l->cpu_mcore_s < 0 || d * 1000 > acct_mcs * HB_RECON_PER_MILLE)
		what |= HB_RECON_CPU;
	return what;
}

/* The target word after the first " KEY" in s ("target=slurm", "ran on
 * kubernetes:"), or -1. */
static int target_after(const char *s, const char *key)
{
	const char *t = strstr(s, key);
	char word[16];
	size_t wl;

	if (!t)
		return -1;
	t += strlen(key);
	wl = strcspn(t, " :");
	if (wl >= sizeof(word))
		return -1;
	memcpy(word, t, wl);
	word[wl] = '\0';
	return hb_job_target_parse(word);
}

int hb_recon_parse_tag(const char *comment, char id[32],
		       enum hb_job_target *target)
{
	static const char tag[] = "hpcbridge:";
	const char *p;
	size_t n;
	int v;

	if (!comment || strncmp(comment, tag, sizeof(tag) - 1))
		return -1;
	p = comment + sizeof(tag) - 1;
	n = strcspn(p, " ");
	if (!n || n >= 32)
		return -1;
	memcpy(id, p, n);
	id[n] = '\0';
	/* as tagged ("... target=T"), or a proxy's record once its job
	 * ended ("... ran on kubernetes: 2 pods, ...") */
	if ((v = target_after(p + n, " target=")) < 0)
		v = target_after(p + n, " ran on ");
	*target = v < 0 ? HB_TARGET_PENDING : (enum hb_job_target)v;
	return 0;
}

static int push(struct hb_recon_result *r, size_t *cap, enum hb_recon_kind kind,
		unsigned what, const struct hb_recon_ledger *l,
		const struct hb_recon_acct *a)
{
	if (r->n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		void *v = realloc(r->items, c * sizeof(*r->items));

		if (!v)
			return HB_ENOMEM;
		r->items = v;
		*cap = c;
	}
	r->items[r->n++] = (struct hb_recon_item){ kind, what, l, a };
	if (kind != HB_RECON_PROXY)
		r->differences++;
	return 0;
}

static const struct hb_recon_acct *acct_find(const struct hb_recon_acct *A,
					     size_t na, int64_t slurm_job_id)
{
	for (size_t i = 0; slurm_job_id > 0 && i < na; i++)
		if (A[i].job_id == (uint64_t)slurm_job_id)
			return &A[i];
	return NULL;
}

static bool ledger_has(const struct hb_recon_ledger *L, size_t nl,
		       const struct hb_recon_acct *a)
{
	for (size_t i = 0; i < nl; i++)
		if (L[i].slurm_job_id == (int64_t)a->job_id ||
		    !strcmp(L[i].job_id, a->tag))
			return true;
	return false;
}

int hb_recon_compare(const struct hb_recon_ledger *L, size_t nl,
		     const struct hb_recon_acct *A, size_t na, int64_t from_s,
		     int64_t to_s, struct hb_recon_result *out)
{
	size_t cap = 0, i;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	/* differences first, then what either side lacks, then proxies */
	for (i = 0; !rc && i < nl; i++) {
		const struct hb_recon_acct *a =
			acct_find(A, na, L[i].slurm_job_id);
		unsigned what;

		if (!a)
			continue;
		if ((what = hb_recon_diff(&L[i], a)))
			rc = push(out, &cap, HB_RECON_DIFFERS, what, &L[i], a);
		else
			out->matched++;
	}
	for (i = 0; !rc && i < nl; i++)
		if (!acct_find(A, na, L[i].slurm_job_id))
			rc = push(out, &cap, HB_RECON_NO_ACCOUNTING, 0, &L[i],
				  NULL);
	for (i = 0; !rc && i < na; i++) {
		const struct hb_recon_acct *a = &A[i];

		/* a job that never ran (cancelled while queued) used
		 * nothing, and the ledger rightly has nothing of it */
		if (!a->tag[0] || a->tag_target == HB_TARGET_KUBERNETES ||
		    !a->final || a->end_s < from_s || a->end_s >= to_s ||
		    a->elapsed_s <= 0 || !a->cpus || ledger_has(L, nl, a))
			continue;
		rc = push(out, &cap, HB_RECON_NO_LEDGER, 0, NULL, a);
	}
	for (i = 0; !rc && i < na; i++)
		if (A[i].tag[0] && A[i].tag_target == HB_TARGET_KUBERNETES)
			rc = push(out, &cap, HB_RECON_PROXY, 0, NULL, &A[i]);
	if (rc)
		hb_recon_result_free(out);
	return rc;
}

void hb_recon_result_free(struct hb_recon_result *r)
{
	if (!r)
		return;
	free(r->items);
	memset(r, 0, sizeof(*r));
}

/* ---------------------------------------------------------- reading */

struct tables {
	struct hb_recon_ledger *L;
	size_t nl, capl;
	struct hb_recon_acct *A;
	size_t na, capa;
	struct hb_store *st;
};

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *nv;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 32;
	if (!(nv = realloc(*v, c * size)))
		return HB_ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

static int take_ledger(const struct hb_ledger_job *j, void *arg)
{
	struct tables *t = arg;
	struct hb_recon_ledger *l;

	if (grow((void **)&t->L, &t->capl, t->nl, sizeof(*t->L)))
		return HB_ENOMEM;
	l = &t->L[t->nl];
	memset(l, 0, sizeof(*l));
	l->slurm_job_id = j->slurm_job_id;
	l->elapsed_ms = j->last_end_ms - j->first_start_ms;
	l->cpu_mcore_s = j->cpu_mcore_s;
	l->job_id = dup_or_empty(j->job_id);
	l->user = dup_or_empty(j->user);
	l->account = dup_or_empty(j->account);
	t->nl++;
	return l->job_id && l->user && l->account ? 0 : HB_ENOMEM;
}

/* The target of the job a tag names: the store's, else the tag's. */
static enum hb_job_target tag_target(struct hb_store *st, const char *id,
				     enum hb_job_target from_tag)
{
	struct hb_job_row row;
	struct hb_err err = { 0 };
	enum hb_job_target t = from_tag;

	memset(&row, 0, sizeof(row));
	if (hb_store_job_get(st, id, &row, &err) == 0) {
		t = row.target;
		hb_job_row_free(&row);
	}
	return t;
}

static int take_acct(const struct hb_slurmc_acct_job *j, void *arg)
{
	struct tables *t = arg;
	struct hb_recon_acct *a;
	enum hb_job_target tt;

	if (grow((void **)&t->A, &t->capa, t->na, sizeof(*t->A)))
		return HB_ENOMEM;
	a = &t->A[t->na];
	memset(a, 0, sizeof(*a));
	a->job_id = j->job_id;
	a->start_s = j->start_s;
	a->end_s = j->end_s;
	a->elapsed_s = j->elapsed_s;
	a->cpus = j->alloc_cpus;
	a->final = hb_slurmc_state_final(j->state);
	if (hb_recon_parse_tag(j->admin_comment, a->tag, &tt) == 0)
		a->tag_target = tag_target(t->st, a->tag, tt);
	else
		a->tag[0] = '\0';
	a->user = dup_or_empty(j->user);
	a->account = dup_or_empty(j->account);
	a->partition = dup_or_empty(j->partition);
	a->state = dup_or_empty(hb_slurmc_state_name(j->state));
	t->na++;
	return a->user && a->account && a->partition && a->state ? 0
								 : HB_ENOMEM;
}

static void tables_free(struct tables *t)
{
	for (size_t i = 0; i < t->nl; i++) {
		free(t->L[i].job_id);
		free(t->L[i].user);
		free(t->L[i].account);
	}
	for (size_t i = 0; i < t->na; i++) {
		free(t->A[i].user);
		free(t->A[i].account);
		free(t->A[i].partition);
		free(t->A[i].state);
	}
	free(t->L);
	free(t->A);
}

/* ----------------------------------------------------------- output */

static const char *const kind_names[] = {
	[HB_RECON_DIFFERS] = "differs",
	[HB_RECON_NO_ACCOUNTING] = "missing_in_accounting",
	[HB_RECON_NO_LEDGER] = "missing_in_ledger",
	[HB_RECON_PROXY] = "burst_proxy",
};

static const char *const kind_titles[] = {
	[HB_RECON_DIFFERS] = "Differences beyond the tolerances",
	[HB_RECON_NO_ACCOUNTING] = "Slurm-side ledger jobs that accounting "
				   "lacks",
	[HB_RECON_NO_LEDGER] = "Tagged Slurm jobs that the ledger lacks",
	[HB_RECON_PROXY] = "Burst proxies, charged on the cluster side (not "
			   "differences)",
};

static const char *what_text(unsigned w)
{
	switch (w) {
	case HB_RECON_ELAPSED:
		return "elapsed";
	case HB_RECON_CPU:
		return "cpu_hours";
	case HB_RECON_ELAPSED | HB_RECON_CPU:
		return "elapsed,cpu_hours";
	default:
		return "";
	}
}

/* The figures of one item, NaN-free: -1 where a side has none. */
struct figures {
	const char *job_id, *user, *account;
	int64_t slurm_job_id;
	double l_elapsed, a_elapsed, l_cpu_h, a_cpu_h;
};

static void figures_of(const struct hb_recon_item *it, struct figures *f)
{
	const struct hb_recon_ledger *l = it->l;
	const struct hb_recon_acct *a = it->a;

	f->job_id = l ? l->job_id : a->tag;
	f->slurm_job_id = l ? l->slurm_job_id : (int64_t)a->job_id;
	f->user = l ? l->user : a->user;
	f->account = l ? l->account : a->account;
	f->l_elapsed = l ? (double)l->elapsed_ms / 1000.0 : -1;
	f->l_cpu_h = l ? (double)l->cpu_mcore_s / 3.6e6 : -1;
	f->a_elapsed = a ? (double)a->elapsed_s : -1;
	f->a_cpu_h = a ? (double)a->elapsed_s * a->cpus / 3600.0 : -1;
}

static void table_num(double v, int dec)
{
	if (v < 0)
		printf(" %12s", "-");
	else
		printf(" %12.*f", dec, v);
}

static void print_table(const struct hb_recon_result *r, const char *from,
			const char *to)
{
	printf("Reconciliation of the ledger's Slurm side with Slurm "
	       "accounting (slurmdbd),\nperiods ending in [%s, %s).\n"
	       "Tolerances: %s.\n",
	       from, to, HB_RECON_TOLERANCE_TEXT);
	for (int k = HB_RECON_DIFFERS; k <= HB_RECON_PROXY; k++) {
		size_t n = 0;

		for (size_t i = 0; i < r->n; i++)
			n += r->items[i].kind == (enum hb_recon_kind)k;
		printf("\n%s: %zu\n", kind_titles[k], n);
		if (!n)
			continue;
		printf("%-12s %9s %-10s %-10s %12s %12s %12s %12s  %s\n", "JOB",
		       "SLURM-ID", "USER", "ACCOUNT", "ELAPSED-S", "SACCT-S",
		       "CORE-H", "SACCT-CORE-H", "DIFFERS");
		for (size_t i = 0; i < r->n; i++) {
			struct figures f;

			if (r->items[i].kind != (enum hb_recon_kind)k)
				continue;
			figures_of(&r->items[i], &f);
			printf("%-12s %9" PRId64 " %-10s %-10s", f.job_id,
			       f.slurm_job_id, f.user, f.account);
			table_num(f.l_elapsed, 3);
			table_num(f.a_elapsed, 0);
			table_num(f.l_cpu_h, 6);
			table_num(f.a_cpu_h, 6);
			printf("  %s\n", what_text(r->items[i].what));
		}
	}
	printf("\nWithin the tolerances: %zu job(s); differences: %zu\n",
	       r->matched, r->differences);
}

/* One CSV field (RFC 4180), quoted when it must be; text a spreadsheet
 * would take for a formula (=, +, -, @, tab, CR first: a user or
 * account name) is quoted with a leading apostrophe, as reports do. */
static void csv_field(const char *s)
{
	bool formula = *s && strchr("=+-@\t\r", *s);

	if (!formula && !strpbrk(s, ",\"\r\n")) {
		fputs(s, stdout);
		return;
	}
	fputs(formula ? "\"'" : "\"", stdout);
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void csv_num(double v, int dec)
{
	if (v >= 0)
		printf(",%.*f", dec, v);
	else
		putchar(',');
}

static void print_csv(const struct hb_recon_result *r)
{
	printf("kind,job_id,slurm_job_id,user,account,ledger_elapsed_s,"
	       "sacct_elapsed_s,ledger_core_hours,sacct_core_hours,differs,"
	       "tolerance\r\n");
	for (size_t i = 0; i < r->n; i++) {
		struct figures f;

		figures_of(&r->items[i], &f);
		printf("%s,", kind_names[r->items[i].kind]);
		csv_field(f.job_id);
		printf(",%" PRId64 ",", f.slurm_job_id);
		csv_field(f.user);
		putchar(',');
		csv_field(f.account);
		csv_num(f.l_elapsed, 3);
		csv_num(f.a_elapsed, 0);
		csv_num(f.l_cpu_h, 6);
		csv_num(f.a_cpu_h, 6);
		putchar(',');
		csv_field(what_text(r->items[i].what));
		printf(",\"%s\"\r\n", HB_RECON_TOLERANCE_TEXT);
	}
}

static void json_num(cJSON *o, const char *k, double v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static int print_json(const struct hb_recon_result *r, const char *from,
		      const char *to)
{
	cJSON *o = cJSON_CreateObject(), *tol, *lists[4];
	char *text;

	cJSON_AddStringToObject(o, "from", from);
	cJSON_AddStringToObject(o, "to", to);
	tol = cJSON_AddObjectToObject(o, "tolerance");
	cJSON_AddNumberToObject(tol, "elapsed_s", HB_RECON_ELAPSED_MS / 1000);
	cJSON_AddNumberToObject(tol, "elapsed_percent",
				HB_RECON_PER_MILLE / 10.0);
	cJSON_AddNumberToObject(tol, "cpu_hours_percent",
				HB_RECON_PER_MILLE / 10.0);
	cJSON_AddStringToObject(tol, "text", HB_RECON_TOLERANCE_TEXT);
	cJSON_AddNumberToObject(o, "matched", (double)r->matched);
	cJSON_AddNumberToObject(o, "differences", (double)r->differences);
	for (int k = 0; k < 4; k++)
		lists[k] = cJSON_AddArrayToObject(o, kind_names[k]);
	for (size_t i = 0; i < r->n; i++) {
		cJSON *e = cJSON_CreateObject();
		struct figures f;

		figures_of(&r->items[i], &f);
		cJSON_AddStringToObject(e, "job_id", f.job_id);
		cJSON_AddNumberToObject(e, "slurm_job_id",
					(double)f.slurm_job_id);
		cJSON_AddStringToObject(e, "user", f.user);
		cJSON_AddStringToObject(e, "account", f.account);
		json_num(e, "ledger_elapsed_s", f.l_elapsed);
		json_num(e, "sacct_elapsed_s", f.a_elapsed);
		json_num(e, "ledger_core_hours", f.l_cpu_h);
		json_num(e, "sacct_core_hours", f.a_cpu_h);
		if (r->items[i].what)
			cJSON_AddStringToObject(e, "differs",
						what_text(r->items[i].what));
		cJSON_AddItemToArray(lists[r->items[i].kind], e);
	}
	text = cJSON_Print(o);
	cJSON_Delete(o);
	if (!text)
		return HB_ENOMEM;
	printf("%s\n", text);
	free(text);
	return 0;
}

/* ------------------------------------------------------------- main */

/* Exit codes of --reconcile. */
enum { RC_SAME = 0, RC_DIFFERS = 1, RC_ERROR = 2 };

static int read_tables(const char *state, int64_t from_ms, int64_t to_ms,
		       int64_t from_s, int64_t to_s, struct tables *t,
		       struct hb_err *err)
{
	struct hb_slurmc *c = NULL;
	int rc = hb_store_open_readonly(state, &t->st, err);

	if (!rc)
		rc = hb_store_ledger_jobs(t->st, HB_TARGET_SLURM, from_ms,
					  to_ms, take_ledger, t, err);
	if (!rc)
		rc = hb_slurmc_open(NULL, &c, err);
	if (!rc)
		rc = hb_slurmc_acct_jobs(c, from_s, to_s, take_acct, t, err);
	if (rc == HB_ENOMEM && !err->msg[0])
		hb_err_set(err, rc, NULL, 0, "out of memory");
	hb_slurmc_close(c);
	return rc;
}

int hb_cli_reconcile(const char *state, int64_t from_ms, int64_t to_ms, int fmt)
{
	struct tables t = { 0 };
	struct hb_recon_result r = { 0 };
	struct hb_err err = { 0 };
	char from[32], to[32];
	int64_t from_s = from_ms / 1000, to_s;
	int rc;

	/* slurmdbd's window in whole seconds, covering [from_ms, to_ms);
	 * no --to: until now */
	if (to_ms == INT64_MAX)
		to_s = (int64_t)time(NULL) + 1;
	else
		to_s = to_ms / 1000 + (to_ms % 1000 != 0);
	hb_time_rfc3339_format(from_s, from);
	hb_time_rfc3339_format(to_s, to);
	if (!state || !*state) {
		fprintf(stderr, "hpcbridge report: --reconcile: no store "
				"(--state or daemon.state)\n");
		return RC_ERROR;
	}
	rc = read_tables(state, from_ms, to_ms, from_s, to_s, &t, &err);
	if (!rc)
		rc = hb_recon_compare(t.L, t.nl, t.A, t.na, from_s, to_s, &r);
	if (rc) {
		fprintf(stderr, "hpcbridge report: --reconcile: %s\n",
			err.msg[0] ? err.msg : hb_strerror(rc));
		rc = RC_ERROR;
		goto out;
	}
	if (fmt == 1)
		print_csv(&r);
	else if (fmt == 2)
		rc = print_json(&r, from, to);
	else
		print_table(&r, from, to);
	if (rc || fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "hpcbridge report: --reconcile: writing the "
				"report failed\n");
		rc = RC_ERROR;
	} else {
		rc = r.differences ? RC_DIFFERS : RC_SAME;
	}
out:
	hb_recon_result_free(&r);
	tables_free(&t);
	hb_store_close(t.st);
	return rc;
}
