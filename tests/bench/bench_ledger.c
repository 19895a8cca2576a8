/*
 * bench_ledger.c - the cost ledger: batched ingest, and `hpcbridge report
 * --by account` over a large ledger against the sqlite3 CLI running the
 * same statements on the same file, side by side.
 *
 * usage: bench_ledger [-d DIR] [-r ROUNDS] [-n ENTRIES] [-b BATCH]
 *                     [-N REPORT_ENTRIES] [-H HPCBRIDGE] [-S SQLITE3]
 *
 * Ingest: ROUNDS times, a fresh store with 10,000 jobs, then ENTRIES
 * entries (default 200,000) appended BATCH at a time (default 1,000),
 * each batch one hb_store_ledger_append() call and one transaction,
 * synchronous=FULL; entries/s, median of the rounds.
 * Report: one store of REPORT_ENTRIES (default 1,000,000: 50 accounts,
 * 500 users, a GPU on one entry in ten, 12 months), then ROUNDS times,
 * alternately, `hpcbridge report --state F --by account --format csv`
 * and `sqlite3 -readonly F` with hb_store_report_sql()'s three
 * statements (window: everything), both writing to /dev/null; wall time
 * of each process, medians and their ratio.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "hpcbridge/store.h"

extern char **environ;

#define NJOBS 10000

static char jobs[NJOBS][32];

static void die(const char *what, const struct hb_err *err)
{
	fprintf(stderr, "bench_ledger: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static struct hb_store *fresh(const char *path)
{
	struct hb_err err = { 0 };
	struct hb_store *st;
	char side[512];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	if (hb_store_open(path, &st, &err) || hb_store_begin(st, &err))
		die(path, &err);
	for (int i = 0; i < NJOBS; i++) {
		struct hb_job_row j = { .entry = HB_ENTRY_CLI,
					.uid = 1000,
					.slurm_job_id = -1,
					.exit_code = -1 };

		if (hb_store_job_add(st, &j, &err))
			die("job_add", &err);
		memcpy(jobs[i], j.id, sizeof(j.id));
	}
	if (hb_store_commit(st, &err))
		die("commit", &err);
	return st;
}

static char names[550][16];

/* The next entry of a generated ledger (xorshift, so every run is the
 * same), in the order a meter writes them: periods ending later and
 * later (30 s apart on average: a million entries span a year), for jobs
 * among the most recent hundred. */
static void gen(struct hb_ledger_entry *e, uint64_t *x)
{
	static int64_t end = INT64_C(1767225600000); /* 2026-01-01 */
	static uint64_t seq;
	uint64_t r;

	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	r = *x;
	memset(e, 0, sizeof(*e));
	seq++;
	e->job_id = jobs[(seq / 100 + r % 100) % NJOBS];
	e->side = (r >> 14) % 3 ? HB_TARGET_SLURM : HB_TARGET_KUBERNETES;
	e->account = names[(r >> 16) % 50];
	e->user = names[50 + (r >> 22) % 500];
	e->partition = (r >> 31) % 2 ? "cpu" : "gpu";
	e->queue = e->side == HB_TARGET_KUBERNETES ? "burst" : NULL;
	e->rate_version = (r >> 33) % 2 ? "2026-01" : "2026-07";
	end += (int64_t)((r >> 20) % 60000);
	e->period_end_ms = end;
	e->period_start_ms = end - (int64_t)((r >> 40) % 86400000);
	e->cpu_mcore_s = (int64_t)((r >> 8) % 100000000);
	e->mem_mib_s = (int64_t)((r >> 12) % 1000000000);
	e->egress_bytes = (int64_t)((r >> 3) % 1000000);
	if ((r >> 50) % 10 == 0) {
		e->gpu[0].type = (r >> 54) % 2 ? "a100" : "h100";
		e->gpu[0].seconds = (int64_t)((r >> 24) % 100000);
		e->n_gpu = 1;
	}
	e->amount_micros = (int64_t)((r >> 6) % 50000000);
}

/* Append n generated entries, batch at a time; the seconds it took. */
static double ingest(struct hb_store *st, long n, long batch, uint64_t *x)
{
	struct hb_ledger_entry *e = calloc((size_t)batch, sizeof(*e));
	struct hb_err err = { 0 };
	double t0, t = 0;

	if (!e)
		die("out of memory", NULL);
	for (long done = 0; done < n; done += batch) {
		long k = n - done < batch ? n - done : batch;

		for (long i = 0; i < k; i++)
			gen(&e[i], x);
		t0 = now();
		if (hb_store_ledger_append(st, e, (size_t)k, &err))
			die("ledger_append", &err);
		t += now() - t0;
	}
	free(e);
	return t;
}

/* Run argv with stdout on /dev/null; its wall time in seconds. */
static double timed(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	double t0 = now();
	int status;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ))
		die(argv[0], NULL);
	posix_spawn_file_actions_destroy(&fa);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die(argv[0], NULL);
	return now() - t0;
}

/* sql with ?1 and ?2 written out: the whole window. */
static void literal(const char *sql, char *out, size_t size)
{
	size_t o = 0;

	for (const char *p = sql; *p && o + 24 < size; p++) {
		if (p[0] == '?' && (p[1] == '1' || p[1] == '2')) {
			o += (size_t)snprintf(
				out + o, size - o, "%s",
				p[1] == '1' ? "0" : "9223372036854775807");
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = 0;
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp", *hb = "hpcbridge", *sq = "sqlite3";
	long rounds = 5, n = 200000, batch = 1000, big = 1000000;
	char path[400], sql[8192], one[2800];
	double *in, *th, *ts, t;
	struct hb_store *st;
	uint64_t x = 88172645463325252ull;
	int opt;

	while ((opt = getopt(argc, argv, "d:r:n:b:N:H:S:")) != -1) {
		if ((opt == 'r' && parse_long(optarg, 1, 1000, &rounds)) ||
		    (opt == 'n' && parse_long(optarg, 1, 100000000, &n)) ||
		    (opt == 'b' && parse_long(optarg, 1, 1000000, &batch)) ||
		    (opt == 'N' && parse_long(optarg, 1, 100000000, &big)) ||
		    opt == '?') {
			fprintf(stderr,
				"usage: bench_ledger [-d DIR] [-r ROUNDS] "
				"[-n ENTRIES] [-b BATCH] "
				"[-N REPORT_ENTRIES] [-H HPCBRIDGE] "
				"[-S SQLITE3]\n");
			return 2;
		}
		if (opt == 'd')
			dir = optarg;
		else if (opt == 'H')
			hb = optarg;
		else if (opt == 'S')
			sq = optarg;
	}
	for (int i = 0; i < 550; i++)
		snprintf(names[i], sizeof(names[i]), "%s%03d",
			 i < 50 ? "acct" : "user", i);
	in = calloc((size_t)rounds, sizeof(double));
	th = calloc((size_t)rounds, sizeof(double));
	ts = calloc((size_t)rounds, sizeof(double));
	if (!in || !th || !ts)
		die("out of memory", NULL);
	snprintf(path, sizeof(path), "%s/bench_ledger.db", dir);

	for (long r = 0; r < rounds; r++) {
		st = fresh(path);
		t = ingest(st, n, batch, &x);
		in[r] = (double)n / t;
		hb_store_close(st);
	}
	qsort(in, (size_t)rounds, sizeof(double), cmp_double);
	printf("ingest: %ld entries in batches of %ld, %ld rounds: median "
	       "%.0f entries/s (min %.0f, max %.0f)\n",
	       n, batch, rounds, pct(in, (size_t)rounds, 0.5), in[0],
	       in[rounds - 1]);

	st = fresh(path);
	t = ingest(st, big, 10000, &x);
	hb_store_close(st);
	printf("report store: %ld entries written in %.2f s (%.0f entries/s, "
	       "batches of 10,000)\n",
	       big, t, (double)big / t);

	sql[0] = 0;
	for (int w = 0; w < 3; w++) {
		literal(hb_store_report_sql(HB_BY_ACCOUNT, w), one,
			sizeof(one));
		strncat(sql, one, sizeof(sql) - strlen(sql) - 3);
		strcat(sql, ";\n");
	}
	{
		char *hargv[] = { (char *)hb, "report", "--state",
				  path,	      "--by",	"account",
				  "--format", "csv",	NULL };
		char *sargv[] = { (char *)sq, "-readonly", path, sql, NULL };

		timed(hargv); /* warm the page cache for both */
		for (long r = 0; r < rounds; r++) {
			th[r] = timed(hargv);
			ts[r] = timed(sargv);
		}
	}
	qsort(th, (size_t)rounds, sizeof(double), cmp_double);
	qsort(ts, (size_t)rounds, sizeof(double), cmp_double);
	printf("report --by account over %ld entries, %ld rounds each, "
	       "alternating:\n  hpcbridge report: median %.3f s (min %.3f, "
	       "max %.3f)\n  sqlite3 CLI:      median %.3f s (min %.3f, max "
	       "%.3f)\n  ratio: %.3f (target <= 1.2)\n",
	       big, rounds, pct(th, (size_t)rounds, 0.5), th[0], th[rounds - 1],
	       pct(ts, (size_t)rounds, 0.5), ts[0], ts[rounds - 1],
	       pct(th, (size_t)rounds, 0.5) / pct(ts, (size_t)rounds, 0.5));
	free(in);
	free(th);
	free(ts);
	return 0;
}
