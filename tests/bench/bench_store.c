/*
 * bench_store.c - how many placement decisions the store makes durable per
 * second.
 *
 * One decision is what the daemon writes before it answers the plugin:
 * hb_store_job_add (with a ~1 KiB jobspec) + hb_store_decision_add +
 * hb_store_event_add.  Decisions are committed in batches of 1, 8, 64 and
 * 256 (begin, the batch, commit: one sync per batch), on a fresh file per
 * run, with the store's own settings: WAL, synchronous=FULL.  Each batch
 * size is run -r times; the median rate is reported, with the spread.  The
 * latency of a single-decision commit (begin .. commit returned) is given
 * as p50/p99/max over every batch-of-1 commit of every run.
 *
 * usage: bench_store [-d DIR] [-r RUNS] [-n DECISIONS] [-b SIZES]
 *   -d  where the files go (default /tmp); it is the disk being measured
 *   -r  runs per batch size (default 5)
 *   -n  decisions per run (default 2048)
 *   -b  comma-separated batch sizes (default 1,8,64,256)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hpcbridge/store.h"

#include "bench.h"

#define MAX_SIZES 16

/* "1,8,64": each 1..1000000, at most MAX_SIZES of them. */
static int parse_sizes(const char *s, long *sizes, size_t *n)
{
	char *end;
	long v;

	*n = 0;
	for (;;) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 1 || v > 1000000 ||
		    *n == MAX_SIZES)
			return -1;
		sizes[(*n)++] = v;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static void remove_db(const char *path)
{
	char p[4200];

	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

/* A jobspec of about 1 KiB, like the translator's JSON form. */
static char jobspec[1400];

static void make_jobspec(void)
{
	snprintf(jobspec, sizeof(jobspec),
		 "{\"name\":\"lammps-kokkos\",\"source\":\"sbatch\","
		 "\"account\":\"physics\",\"partition\":\"batch\","
		 "\"nodes_min\":4,\"nodes_max\":4,\"tasks\":128,"
		 "\"tasks_per_node\":32,\"cpus_per_task\":2,"
		 "\"mem_per_node_mib\":192000,\"time_limit_s\":86400,"
		 "\"gpus\":{\"type\":\"a100\",\"per_node\":4},"
		 "\"env\":[\"OMP_NUM_THREADS=2\",\"OMP_PROC_BIND=spread\","
		 "\"OMP_PLACES=threads\",\"KOKKOS_DEVICES=Cuda\"],"
		 "\"modules\":[\"gcc/12.2.0\",\"openmpi/4.1.4\","
		 "\"cuda/12.2\",\"lammps/2Aug2023-kokkos\"],"
		 "\"launcher\":{\"kind\":\"srun\",\"mpi\":\"pmix\"},"
		 "\"script\":\"#!/bin/bash\\nset -euo pipefail\\n"
		 "module load lammps\\nsrun lmp -k on g 4 -sf kk "
		 "-pk kokkos cuda/aware on neigh full comm device "
		 "-in in.lj -var x 8 -var y 8 -var z 8\\n\","
		 "\"checkpoint\":{\"dir\":\"/scratch/alice/ckpt\","
		 "\"every_s\":1800},\"output\":\"slurm-%%j.out\","
		 "\"error\":\"slurm-%%j.err\",\"mail\":null,"
		 "\"directives\":[{\"line\":2,\"text\":\"--nodes=4\"},"
		 "{\"line\":3,\"text\":\"--ntasks-per-node=32\"},"
		 "{\"line\":4,\"text\":\"--gpus-per-node=a100:4\"},"
		 "{\"line\":5,\"text\":\"--time=1-00:00:00\"}]}");
}

static int one_decision(struct hb_store *st, long i, struct hb_err *err)
{
	struct hb_job_row row = {
		.entry = HB_ENTRY_SLURM,
		.target = HB_TARGET_PENDING,
		.state = HB_JOB_PENDING,
		.user = "alice",
		.uid = 1000 + i % 50,
		.account = "physics",
		.partition = "batch",
		.name = "lammps-kokkos",
		.jobspec = jobspec,
		.slurm_job_id = -1,
		.exit_code = -1,
	};
	int rc;

	rc = hb_store_job_add(st, &row, err);
	if (!rc)
		rc = hb_store_decision_add(
			st, row.id,
			i % 3 ? HB_TARGET_SLURM : HB_TARGET_KUBERNETES,
			"{\"queue_wait_s\":5400,\"deadline_s\":7200,"
			"\"cost_slurm\":1830000,\"cost_k8s\":2410000,"
			"\"data_gib\":12,\"free_gpus_k8s\":16}",
			"{\"rule\":\"deadline\",\"why\":\"queue wait "
			"exceeds slack\"}",
			"burst-v1", err);
	if (!rc)
		rc = hb_store_event_add(st, row.uid, "alice", "plugin",
					"decide", row.id,
					"{\"target\":\"slurm\",\"ms\":1}", err);
	return rc;
}

/* One run: n decisions in batches of b on a fresh file; the rate, and
 * each commit's latency into lat (when not NULL). */
static int run(const char *path, long n, long b, double *rate, double *lat,
	       size_t *nlat)
{
	struct hb_store_info info;
	struct hb_err err = { 0 };
	struct hb_store *st = NULL;
	double t0, t1, c0;
	int rc;

	remove_db(path);
	rc = hb_store_open(path, &st, &err);
	if (!rc)
		rc = hb_store_info(st, &info, &err);
	if (rc)
		goto out;
	if (info.synchronous != 2 || strcmp(info.journal_mode, "wal")) {
		fprintf(stderr, "store is not WAL + synchronous=FULL\n");
		rc = HB_ESTORE;
		goto out;
	}
	t0 = now();
	for (long i = 0; i < n && !rc; i += b) {
		c0 = now();
		rc = hb_store_begin(st, &err);
		for (long j = i; j < i + b && j < n && !rc; j++)
			rc = one_decision(st, j, &err);
		if (!rc)
			rc = hb_store_commit(st, &err);
		if (lat && !rc)
			lat[(*nlat)++] = now() - c0;
	}
	t1 = now();
	if (!rc)
		*rate = (double)n / (t1 - t0);
out:
	if (rc)
		fprintf(stderr, "bench_store: %s (%s)\n", err.msg,
			hb_strerror(rc));
	hb_store_close(st);
	remove_db(path);
	return rc;
}

static const char *fs_name(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf))
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		return "ext2/3/4";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x01021994:
		return "tmpfs (no real sync: not a durability figure)";
	case 0x794c7630:
		return "overlayfs";
	default:
		return "other";
	}
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp";
	long runs = 5, n = 2048, sizes[MAX_SIZES] = { 1, 8, 64, 256 };
	size_t nsizes = 4, nlat = 0;
	double *lat = NULL;
	char path[4096];
	int opt;

	while ((opt = getopt(argc, argv, "d:r:n:b:")) != -1) {
		switch (opt) {
		case 'd':
			dir = optarg;
			break;
		case 'r':
			if (parse_long(optarg, 1, 1000, &runs))
				goto usage;
			break;
		case 'n':
			if (parse_long(optarg, 1, 100000000, &n))
				goto usage;
			break;
		case 'b':
			if (parse_sizes(optarg, sizes, &nsizes))
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	if ((size_t)snprintf(path, sizeof(path), "%s/bench-store-%ld.db", dir,
			     (long)getpid()) >= sizeof(path))
		goto usage;
	make_jobspec();

	printf("SQLite %s, WAL, synchronous=FULL; %s on %s; %ld decisions "
	       "per run, median of %ld runs; jobspec %zu bytes\n\n",
	       sqlite3_libversion(), dir, fs_name(dir), n, runs,
	       strlen(jobspec));
	printf("| batch | decisions/s (median) | min | max | commits/s | "
	       "us/decision |\n");
	printf("|---:|---:|---:|---:|---:|---:|\n");
	for (size_t k = 0; k < nsizes; k++) {
		long b = sizes[k];
		double rates[1000];

		if (b == 1) {
			free(lat);
			lat = calloc((size_t)(n * runs), sizeof(*lat));
			if (!lat)
				return 1;
			nlat = 0;
		}
		for (long r = 0; r < runs; r++)
			if (run(path, n, b, &rates[r], b == 1 ? lat : NULL,
				&nlat))
				return 1;
		qsort(rates, (size_t)runs, sizeof(double), cmp_double);
		double med = rates[runs / 2];
		printf("| %ld | %.0f | %.0f | %.0f | %.0f | %.1f |\n", b, med,
		       rates[0], rates[runs - 1], med / (double)b, 1e6 / med);
		fflush(stdout);
	}
	if (nlat) {
		qsort(lat, nlat, sizeof(double), cmp_double);
		printf("\nsingle-decision commit latency (%zu commits): "
		       "p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		       nlat, pct(lat, nlat, 0.50) * 1e3,
		       pct(lat, nlat, 0.99) * 1e3, lat[nlat - 1] * 1e3);
	}
	free(lat);
	return 0;
usage:
	fprintf(stderr, "usage: bench_store [-d DIR] [-r RUNS] "
			"[-n DECISIONS] [-b SIZES]\n");
	return 2;
}
