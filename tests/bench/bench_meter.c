/*
 * bench_meter.c - what metering a finished job costs the daemon's loop:
 * hbd_meter_slurm() (a Slurm job, from the reconciler's final change) and
 * hbd_meter_remote() (a burst job, from its stored jobspec and remote
 * status), each inside the loop's group transaction, as the loop runs
 * them.
 *
 * usage: bench_meter [-d DIR] [-r ROUNDS] [-n JOBS] [-b BATCH] [-c CARD]
 *
 * Each round: a fresh store of JOBS Slurm jobs and JOBS burst jobs
 * (default 5,000 each; a burst job's stored source is what the plugin
 * sends: its script and the jobspec Slurm resolved), then every job
 * metered once, BATCH (default 64) to a transaction as the loop's batch,
 * with the rate card CARD (default config/ratecards/example.yaml: run
 * from the source tree).  Each job spans a rate change in one case in
 * ten (two entries).  Printed per kind: the median over rounds of the
 * mean time per job on the loop (the commit not included: the daemon
 * commits without a sync and syncs on another thread), and the commit's
 * share per job, measured apart.
 */
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "gateway/daemon/daemon_int.h"
#include "gateway/sides/slurm.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/translate.h"

#define JULY 1782864000LL /* 2026-07-01T00:00:00Z: example.yaml's change */

static void die(const char *what, const struct hb_err *err)
{
	fprintf(stderr, "bench_meter: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static const char script[] = "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4\n"
			     "#SBATCH --mem=8G --gres=gpu:a100:1 -A physics\n"
			     "#SBATCH -p gpu -t 60\nsrun ./a.out\n";

/* The source the plugin stores for a burst job: script and jobspec. */
static char *stored_source(void)
{
	struct hb_jobspec spec;
	struct hb_err err = { 0 };
	cJSON *doc = cJSON_CreateObject(), *js;
	char *text;

	hb_jobspec_init(&spec, "job.sh");
	if (hb_sbatch_parse(script, strlen(script), "job.sh", NULL, &spec,
			    &err))
		die("sbatch", &err);
	js = hb_jobspec_to_json(&spec);
	if (!doc || !js)
		die("jobspec", NULL);
	cJSON_AddStringToObject(doc, "source", "slurm");
	cJSON_AddStringToObject(doc, "script", script);
	cJSON_AddStringToObject(doc, "cwd", "/tmp");
	cJSON_AddItemToObject(doc, "jobspec", js);
	text = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	hb_jobspec_free(&spec);
	return text;
}

struct round {
	double slurm_us, remote_us, commit_us;
};

static void one_round(const char *dir, const char *card, long n, long batch,
		      const char *source, struct round *out)
{
	struct hb_daemon *d = calloc(1, sizeof(*d));
	struct hb_err err = { 0 };
	char path[512];
	char (*ids)[32] = calloc((size_t)n * 2, 32);
	double t_slurm = 0, t_remote = 0, t_commit = 0;

	if (!d || !ids)
		die("memory", NULL);
	snprintf(path, sizeof(path), "%s/bench-meter.db", dir);
	unlink(path);
	strcat(path, "-wal");
	unlink(path);
	path[strlen(path) - 4] = 0;
	if (hb_config_parse("", 0, "bench", &d->cfg, &err) ||
	    hb_decider_new(&d->cfg, &d->dc, &err) ||
	    hb_ratecard_load(card, &d->card, &err) ||
	    hb_store_open(path, &d->st, &err) || hb_store_begin(d->st, &err))
		die("setup", &err);
	hbd_metering_start(d);
	/* budgets count actuals, as when the card and the policy share a
	 * currency (example.yaml is in EUR, the built-in policy in USD) */
	d->budget_actuals = 1;
	for (long i = 0; i < 2 * n; i++) {
		struct hb_job_row r = { .entry = HB_ENTRY_SLURM,
					.target = i < n ? HB_TARGET_SLURM
							: HB_TARGET_KUBERNETES,
					.state = HB_JOB_SUCCEEDED,
					.user = "alice",
					.uid = 1000,
					.account = i % 2 ? "physics" : "chemistry",
					.partition = "gpu",
					.name = "job",
					.jobspec = source,
					.slurm_job_id = -1,
					.exit_code = 0 };

		if (hb_store_job_add(d->st, &r, &err))
			die("job_add", &err);
		memcpy(ids[i], r.id, 32);
	}
	if (hb_store_commit(d->st, &err))
		die("commit", &err);

	for (long b = 0; b < 2 * n; b += batch) {
		double t0;

		if (hb_store_begin(d->st, &err))
			die("begin", &err);
		for (long i = b; i < b + batch && i < 2 * n; i++) {
			struct hb_job_row j = { 0 };
			int64_t start = JULY - (i % 10 ? 7200 : 1800);

			if (hb_store_job_get(d->st, ids[i], &j, &err))
				die("job_get", &err);
			t0 = now();
			if (i < n) {
				struct hb_slurm_change ch = {
					.slurm_job_id = i + 1,
					.state = HB_JOB_SUCCEEDED,
					.exit_code = 0,
					.start_s = start,
					.end_s = start + 3600,
					.cpus = 8,
					.nodes = 2,
					.mem_mib = 16384,
					.ngpu = 1,
				};

				strcpy(ch.partition, "gpu");
				strcpy(ch.gpu[0].type, "a100");
				ch.gpu[0].count = 2;
				if (hbd_meter_slurm(d, &j, &ch, &err))
					die("meter_slurm", &err);
				t_slurm += now() - t0;
			} else {
				struct hb_remote_status rs = {
					.phase = HB_REMOTE_SUCCEEDED,
					.start_ms = start * 1000,
					.end_ms = (start + 3600) * 1000,
				};

				if (hbd_meter_remote(d, &j, -1, &rs, &err))
					die("meter_remote", &err);
				t_remote += now() - t0;
			}
			hb_job_row_free(&j);
		}
		t0 = now();
		if (hb_store_commit(d->st, &err))
			die("commit", &err);
		t_commit += now() - t0;
	}
	if (d->nmetered != (uint64_t)(2 * n))
		die("not every job was metered", NULL);
	out->slurm_us = t_slurm / (double)n * 1e6;
	out->remote_us = t_remote / (double)n * 1e6;
	out->commit_us = t_commit / (double)(2 * n) * 1e6;
	hb_store_close(d->st);
	hb_decider_free(d->dc);
	hb_ratecard_free(&d->card);
	hb_config_free(&d->cfg);
	free(d);
	free(ids);
	unlink(path);
}

static int cmp(const void *a, const void *b)
{
	return cmp_double(a, b);
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp", *card = "config/ratecards/example.yaml";
	long rounds = 5, n = 5000, batch = 64;
	double s[64], r[64], c[64];
	char *source;
	int opt;

	while ((opt = getopt(argc, argv, "d:r:n:b:c:")) != -1) {
		if ((opt == 'r' && parse_long(optarg, 1, 64, &rounds)) ||
		    (opt == 'n' && parse_long(optarg, 1, 1000000, &n)) ||
		    (opt == 'b' && parse_long(optarg, 1, 100000, &batch)) ||
		    opt == '?') {
			fprintf(stderr, "usage: bench_meter [-d DIR] [-r ROUNDS] "
					"[-n JOBS] [-b BATCH] [-c CARD]\n");
			return 2;
		}
		if (opt == 'd')
			dir = optarg;
		else if (opt == 'c')
			card = optarg;
	}
	source = stored_source();
	for (long i = 0; i < rounds; i++) {
		struct round o;

		one_round(dir, card, n, batch, source, &o);
		s[i] = o.slurm_us;
		r[i] = o.remote_us;
		c[i] = o.commit_us;
		printf("round %ld: slurm %.1f us/job, burst %.1f us/job, commit "
		       "%.1f us/job\n",
		       i + 1, s[i], r[i], c[i]);
	}
	qsort(s, (size_t)rounds, sizeof(double), cmp);
	qsort(r, (size_t)rounds, sizeof(double), cmp);
	qsort(c, (size_t)rounds, sizeof(double), cmp);
	printf("median of %ld rounds, %ld jobs of each kind, batch %ld:\n"
	       "  Slurm job metered on the loop: %.1f us (max round %.1f)\n"
	       "  burst job metered on the loop: %.1f us (max round %.1f)\n"
	       "  commit (synchronous=FULL) per job: %.1f us\n",
	       rounds, n, batch, pct(s, (size_t)rounds, 0.5),
	       s[rounds - 1], pct(r, (size_t)rounds, 0.5), r[rounds - 1],
	       pct(c, (size_t)rounds, 0.5));
	free(source);
	return 0;
}
