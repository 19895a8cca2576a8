/*
 * test_reconcile.c - hpcbridge report --reconcile's comparison, without
 * Slurm or a store: the tolerances at their edges (elapsed 2 s or 0.5 %,
 * CPU-hours 0.5 %), jobs either side lacks, the window, untagged and
 * unfinished records, burst proxies kept apart, and the admin comment's
 * tag.  gateway/cli/cmd_reconcile.c is compiled into this program (the
 * command is no library); tests/integration/reconcile.test.sh runs it
 * against a real slurmdbd.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/cli/cmd_reconcile.c"
#include "testutil.h"

static struct hb_recon_ledger mk_ledger(const char *id, int64_t slurm_id,
					int64_t elapsed_ms, int64_t mcore_s)
{
	struct hb_recon_ledger l = { (char *)id,      slurm_id,
				     (char *)"alice", (char *)"physics",
				     elapsed_ms,      mcore_s };

	return l;
}

static struct hb_recon_acct mk_acct(uint32_t id, int64_t elapsed_s,
				    uint32_t cpus, const char *tag,
				    enum hb_job_target tt)
{
	struct hb_recon_acct a;

	memset(&a, 0, sizeof(a));
	a.job_id = id;
	a.user = (char *)"alice";
	a.account = (char *)"physics";
	a.partition = (char *)"debug";
	a.state = (char *)"COMPLETED";
	a.start_s = 1000;
	a.end_s = 1000 + elapsed_s;
	a.elapsed_s = elapsed_s;
	a.cpus = cpus;
	a.final = true;
	snprintf(a.tag, sizeof(a.tag), "%s", tag);
	a.tag_target = tt;
	return a;
}

static void test_elapsed_tolerance(void **state)
{
	/* short jobs: 2 s; long ones: 0.5 % (50 s of 10000) */
	static const struct {
		int64_t acct_s, ledger_ms;
		bool differs;
	} cases[] = {
		{ 10, 10000, false },	   { 10, 12000, false },
		{ 10, 8000, false },	   { 10, 12001, true },
		{ 10, 7999, true },	   { 10000, 10050000, false },
		{ 10000, 10050001, true }, { 10000, 9950000, false },
		{ 10000, 9949999, true },  { 0, 2000, false },
		{ 0, 2001, true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* CPU set to agree, so only elapsed can differ */
		struct hb_recon_acct a =
			mk_acct(1, cases[i].acct_s, 1, "", HB_TARGET_SLURM);
		struct hb_recon_ledger l = mk_ledger(
			"hb-1", 1, cases[i].ledger_ms, cases[i].acct_s * 1000);
		unsigned w = hb_recon_diff(&l, &a);

		if (!!(w & HB_RECON_ELAPSED) != cases[i].differs)
			fail_msg("case %zu: %" PRId64 " s vs %" PRId64
				 " ms: %u",
				 i, cases[i].acct_s, cases[i].ledger_ms, w);
	}
}

static void test_cpu_tolerance(void **state)
{
	/* 4 CPUs for 1000 s: 4,000,000 millicore-seconds; 0.5 % is
	 * 20,000 */
	static const struct {
		int64_t mcore_s;
		bool differs;
	} cases[] = {
		{ 4000000, false }, { 4020000, false }, { 3980000, false },
		{ 4020001, true },  { 3979999, true },	{ 2000000, true },
		{ 0, true },	    { -1000, true },
	};
	struct hb_recon_acct a = mk_acct(1, 1000, 4, "", HB_TARGET_SLURM);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_recon_ledger l =
			mk_ledger("hb-1", 1, 1000000, cases[i].mcore_s);
		unsigned w = hb_recon_diff(&l, &a);

		assert_false(w & HB_RECON_ELAPSED);
		if (!!(w & HB_RECON_CPU) != cases[i].differs)
			fail_msg("case %zu: %" PRId64 " mcore-s: %u", i,
				 cases[i].mcore_s, w);
	}
	/* no CPUs on either side agree */
	a.cpus = 0;
	{
		struct hb_recon_ledger l = mk_ledger("hb-1", 1, 1000000, 0);

		assert_int_equal(hb_recon_diff(&l, &a), 0);
	}
}

static void test_compare(void **state)
{
	struct hb_recon_ledger L[] = {
		mk_ledger("hb-1", 101, 30000, 30000),  /* matches */
		mk_ledger("hb-2", 102, 60000, 30000),  /* elapsed off */
		mk_ledger("hb-3", -1, 1000, 1000),     /* no Slurm id */
		mk_ledger("hb-4", 404, 1000, 1000),    /* not in accounting */
		mk_ledger("hb-9", 109, 10000, 100000), /* CPU off */
	};
	struct hb_recon_acct A[] = {
		mk_acct(101, 30, 1, "hb-1", HB_TARGET_SLURM),
		mk_acct(102, 30, 1, "hb-2", HB_TARGET_SLURM),
		mk_acct(103, 5, 1, "hb-5", HB_TARGET_SLURM), /* not in ledger */
		mk_acct(104, 5, 1, "", HB_TARGET_PENDING),   /* not ours */
		mk_acct(105, 5, 1, "hb-6", HB_TARGET_KUBERNETES), /* proxy */
		mk_acct(106, 5, 1, "hb-7", HB_TARGET_SLURM),	/* ends later */
		mk_acct(107, 5, 1, "hb-8", HB_TARGET_SLURM),	/* running */
		mk_acct(108, 5, 1, "hb-10", HB_TARGET_PENDING), /* unknown id */
		mk_acct(109, 10, 2, "hb-9", HB_TARGET_SLURM),
		/* cancelled while queued: used nothing, in no ledger */
		mk_acct(110, 0, 0, "hb-11", HB_TARGET_SLURM),
	};
	struct hb_recon_result r;

	(void)state;
	A[5].end_s = 5000; /* outside [0, 2000) */
	A[6].final = false;
	A[6].end_s = 0;
	assert_int_equal(hb_recon_compare(L, 5, A, 10, 0, 2000, &r), 0);
	assert_int_equal(r.matched, 1);
	assert_int_equal(r.n, 7);
	assert_int_equal(r.differences, 6);
	/* differences, then accounting lacks, ledger lacks, proxies */
	assert_int_equal(r.items[0].kind, HB_RECON_DIFFERS);
	assert_string_equal(r.items[0].l->job_id, "hb-2");
	assert_int_equal(r.items[0].what, HB_RECON_ELAPSED);
	assert_int_equal(r.items[1].kind, HB_RECON_DIFFERS);
	assert_string_equal(r.items[1].l->job_id, "hb-9");
	assert_int_equal(r.items[1].what, HB_RECON_CPU);
	assert_int_equal(r.items[2].kind, HB_RECON_NO_ACCOUNTING);
	assert_string_equal(r.items[2].l->job_id, "hb-3");
	assert_null(r.items[2].a);
	assert_int_equal(r.items[3].kind, HB_RECON_NO_ACCOUNTING);
	assert_string_equal(r.items[3].l->job_id, "hb-4");
	assert_int_equal(r.items[4].kind, HB_RECON_NO_LEDGER);
	assert_int_equal(r.items[4].a->job_id, 103);
	assert_null(r.items[4].l);
	assert_int_equal(r.items[5].kind, HB_RECON_NO_LEDGER);
	assert_int_equal(r.items[5].a->job_id, 108);
	assert_int_equal(r.items[6].kind, HB_RECON_PROXY);
	assert_int_equal(r.items[6].a->job_id, 105);
	hb_recon_result_free(&r);
	assert_null(r.items);

	/* a proxy alone is no difference; nothing at all is none */
	assert_int_equal(hb_recon_compare(NULL, 0, &A[4], 1, 0, 2000, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.differences, 0);
	hb_recon_result_free(&r);
	assert_int_equal(hb_recon_compare(NULL, 0, NULL, 0, 0, 2000, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.differences, 0);
	hb_recon_result_free(&r);

	/* a ledger job matched by its gateway id though its Slurm id is
	 * another (a requeue's new id) is no "ledger lacks" */
	{
		struct hb_recon_ledger l = mk_ledger("hb-5", 999, 5000, 5000);

		assert_int_equal(hb_recon_compare(&l, 1, &A[2], 1, 0, 2000, &r),
				 0);
		assert_int_equal(r.n, 1);
		assert_int_equal(r.items[0].kind, HB_RECON_NO_ACCOUNTING);
		hb_recon_result_free(&r);
	}
}

static void test_parse_tag(void **state)
{
	char id[32];
	enum hb_job_target t;

	(void)state;
	assert_int_equal(
		hb_recon_parse_tag("hpcbridge:hb-000042 target=slurm", id, &t),
		0);
	assert_string_equal(id, "hb-000042");
	assert_int_equal(t, HB_TARGET_SLURM);
	assert_int_equal(
		hb_recon_parse_tag("hpcbridge:hb-7 target=kubernetes", id, &t),
		0);
	assert_string_equal(id, "hb-7");
	assert_int_equal(t, HB_TARGET_KUBERNETES);
	assert_int_equal(
		hb_recon_parse_tag("hpcbridge:hb-5 ran on kubernetes: 3 pods, "
				   "9 CPUs, 1024 MiB",
				   id, &t),
		0);
	assert_string_equal(id, "hb-5");
	assert_int_equal(t, HB_TARGET_KUBERNETES);
	assert_int_equal(hb_recon_parse_tag("hpcbridge:hb-8", id, &t), 0);
	assert_int_equal(t, HB_TARGET_PENDING);
	assert_int_equal(
		hb_recon_parse_tag("hpcbridge:hb-8 xtarget=slurm", id, &t), 0);
	assert_int_equal(t, HB_TARGET_PENDING);
	assert_int_equal(
		hb_recon_parse_tag("hpcbridge:hb-8 target=mars", id, &t), 0);
	assert_int_equal(t, HB_TARGET_PENDING);
	assert_int_equal(hb_recon_parse_tag("", id, &t), -1);
	assert_int_equal(hb_recon_parse_tag(NULL, id, &t), -1);
	assert_int_equal(hb_recon_parse_tag("hpcbridge:", id, &t), -1);
	assert_int_equal(hb_recon_parse_tag("hpcbridge: x", id, &t), -1);
	assert_int_equal(hb_recon_parse_tag("other:hb-1", id, &t), -1);
	assert_int_equal(
		hb_recon_parse_tag("hpcbridge:"
				   "0123456789012345678901234567890123",
				   id, &t),
		-1);
}

/* What fn(r) writes on stdout, read back from a file (caller frees). */
static char *captured(void (*fn)(const struct hb_recon_result *),
		      const struct hb_recon_result *r)
{
	char path[] = "/tmp/hb-recon-out-XXXXXX";
	int fd = mkstemp(path), saved = dup(1);
	size_t len;
	char *text;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stdout);
	assert_int_equal(dup2(fd, 1), 1);
	fn(r);
	fflush(stdout);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	close(fd);
	text = hb_test_read_file(path, &len);
	unlink(path);
	return text;
}

/* CSV as RFC 4180 and spreadsheets want it: quoted commas, formulas
 * defused, a tolerance column, empty fields where a side has nothing. */
static void test_csv(void **state)
{
	struct hb_recon_ledger l = mk_ledger("hb-2", 102, 60000, 30000);
	struct hb_recon_acct A[] = {
		mk_acct(102, 30, 1, "hb-2", HB_TARGET_SLURM),
		mk_acct(105, 5, 1, "hb-6", HB_TARGET_KUBERNETES),
	};
	struct hb_recon_result r;
	char *text;

	(void)state;
	l.user = (char *)"smith, j";
	l.account = (char *)"=HYPERLINK(1)";
	assert_int_equal(hb_recon_compare(&l, 1, A, 2, 0, 2000, &r), 0);
	text = captured(print_csv, &r);
	assert_string_equal(
		text,
		"kind,job_id,slurm_job_id,user,account,ledger_elapsed_s,"
		"sacct_elapsed_s,ledger_core_hours,sacct_core_hours,differs,"
		"tolerance\r\n"
		"differs,hb-2,102,\"smith, j\",\"'=HYPERLINK(1)\",60.000,30,"
		"0.008333,0.008333,elapsed,\"elapsed within 2 s or 0.5% "
		"(whichever is larger), CPU-hours within 0.5%\"\r\n"
		"burst_proxy,hb-6,105,alice,physics,,5,,0.001389,,"
		"\"elapsed within 2 s or 0.5% (whichever is larger), CPU-hours "
		"within 0.5%\"\r\n");
	free(text);
	hb_recon_result_free(&r);
}

struct seen_jobs {
	size_t n;
	struct hb_ledger_job j[4];
	char ids[4][32];
};

static int seen_job(const struct hb_ledger_job *j, void *arg)
{
	struct seen_jobs *s = arg;

	assert_true(s->n < 4);
	s->j[s->n] = *j;
	snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", j->job_id);
	s->j[s->n].job_id = s->ids[s->n];
	s->j[s->n].user = s->j[s->n].account = NULL;
	s->n++;
	return 0;
}

/* The store's per-job view: live entries give the span, reversals net
 * the CPU, a fully reversed job and the other side are left out. */
static void test_ledger_jobs(void **state)
{
	char dir[] = "/tmp/hb-recon-XXXXXX", path[64];
	struct hb_store *st;
	struct hb_err err = { 0 };
	struct hb_ledger_entry e[5];
	struct seen_jobs seen = { 0 };
	char ids[3][32];
	int64_t rev;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state.db", dir);
	assert_int_equal(hb_store_open(path, &st, &err), 0);
	for (int i = 0; i < 3; i++) {
		struct hb_job_row j = { .entry = HB_ENTRY_CLI,
					.uid = 1000,
					.slurm_job_id = 11 + i,
					.exit_code = -1 };

		j.user = "alice";
		assert_int_equal(hb_store_job_add(st, &j, &err), 0);
		snprintf(ids[i], sizeof(ids[i]), "%s", j.id);
	}
	memset(e, 0, sizeof(e));
	for (int i = 0; i < 5; i++) {
		e[i].side = HB_TARGET_SLURM;
		e[i].user = "alice";
		e[i].account = "physics";
	}
	e[0].job_id = ids[0]; /* two periods, 1000..5000 */
	e[0].period_start_ms = 1000;
	e[0].period_end_ms = 2000;
	e[0].cpu_mcore_s = 1000;
	e[1].job_id = ids[0];
	e[1].period_start_ms = 2000;
	e[1].period_end_ms = 5000;
	e[1].cpu_mcore_s = 3000;
	e[2].job_id = ids[0]; /* reversed below: out of the span */
	e[2].period_start_ms = 0;
	e[2].period_end_ms = 9000;
	e[2].cpu_mcore_s = 9000;
	e[3].job_id = ids[1]; /* the other side only */
	e[3].side = HB_TARGET_KUBERNETES;
	e[3].period_end_ms = 3000;
	e[3].cpu_mcore_s = 7;
	e[4].job_id = ids[2]; /* reversed below: nothing live */
	e[4].period_end_ms = 3000;
	e[4].cpu_mcore_s = 5;
	assert_int_equal(hb_store_ledger_append(st, e, 5, &err), 0);
	assert_int_equal(hb_store_ledger_reverse(st, e[2].id, &rev, &err), 0);
	assert_int_equal(hb_store_ledger_reverse(st, e[4].id, &rev, &err), 0);

	assert_int_equal(hb_store_ledger_jobs(st, HB_TARGET_SLURM, 0, 10000,
					      seen_job, &seen, &err),
			 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.j[0].job_id, ids[0]);
	assert_int_equal(seen.j[0].slurm_job_id, 11);
	assert_int_equal(seen.j[0].first_start_ms, 1000);
	assert_int_equal(seen.j[0].last_end_ms, 5000);
	assert_int_equal(seen.j[0].cpu_mcore_s, 4000);
	assert_int_equal(seen.j[0].entries, 4);

	/* the window selects by period end: [0, 5000) keeps the first
	 * period only (the reversal pair ends at 9000) */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(hb_store_ledger_jobs(st, HB_TARGET_SLURM, 0, 5000,
					      seen_job, &seen, &err),
			 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.j[0].last_end_ms, 2000);
	assert_int_equal(seen.j[0].cpu_mcore_s, 1000);

	memset(&seen, 0, sizeof(seen));
	assert_int_equal(hb_store_ledger_jobs(st, HB_TARGET_KUBERNETES, 0,
					      10000, seen_job, &seen, &err),
			 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.j[0].cpu_mcore_s, 7);
	assert_int_equal(hb_store_ledger_jobs(st, HB_TARGET_REJECTED, 0, 10000,
					      seen_job, &seen, &err),
			 HB_EINVAL);
	hb_store_close(st);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elapsed_tolerance),
		cmocka_unit_test(test_cpu_tolerance),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_parse_tag),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_ledger_jobs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
