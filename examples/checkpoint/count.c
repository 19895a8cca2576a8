/*
 * count.c - an MPI program that counts with checkpoints, to show (and
 * test) a job resuming on the other side from its last checkpoint.
 *
 *   count DIR STEPS [EVERY] [STOP_AT] [STEP_MS]
 *
 * Each rank r adds (s + 1) * (r + 1) for every step s below STEPS.  Every
 * EVERY steps (default 10) each rank writes DIR/rank-R.S, its running sum
 * at step S, and once all have, rank 0 writes DIR/step ("S"): the step
 * the whole job can resume from.  Files go through a temporary name and
 * rename(), so a checkpoint file is whole or absent.  On start, rank 0
 * reads DIR/step and every rank resumes from its rank-R.S.
 *
 * STOP_AT: exit with status 3 right after the checkpoint of that step, as
 * a preempted job would (0: never).  STEP_MS: sleep per step (default 0).
 * Rank 0 prints "resumed from step S", then "result X expected Y ran N
 * steps", and the exit status is 1 when X differs from Y.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "count: %s: %s\n", what, strerror(errno));
	MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Write "value\n" to DIR/name through DIR/.name.tmp and rename(). */
static void put(const char *dir, const char *name, long long v)
{
	char path[4096], tmp[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	if (!(f = fopen(tmp, "w")) || fprintf(f, "%lld\n", v) < 0 ||
	    fflush(f) || fsync(fileno(f)) || fclose(f) || rename(tmp, path))
		die(path);
}

/* The number in DIR/name, or dflt when there is no such file. */
static long long get(const char *dir, const char *name, long long dflt)
{
	char path[4096];
	long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r"))) {
		if (errno == ENOENT)
			return dflt;
		die(path);
	}
	if (fscanf(f, "%lld", &v) != 1) {
		fprintf(stderr, "count: %s: not a number\n", path);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long long steps, every, stop_at, step_ms, start, last, sum = 0;
	long long total = 0;
	char name[64];
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 3) {
		if (!rank)
			fprintf(stderr, "usage: count DIR STEPS [EVERY] "
					"[STOP_AT] [STEP_MS]\n");
		MPI_Finalize();
		return 2;
	}
	steps = atoll(argv[2]);
	every = argc > 3 ? atoll(argv[3]) : 10;
	stop_at = argc > 4 ? atoll(argv[4]) : 0;
	step_ms = argc > 5 ? atoll(argv[5]) : 0;
	if (every < 1)
		every = 1;

	start = rank ? 0 : get(argv[1], "step", 0);
	MPI_Bcast(&start, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
	if (start) {
		snprintf(name, sizeof(name), "rank-%d.%lld", rank, start);
		sum = get(argv[1], name, -1);
		if (sum < 0) {
			fprintf(stderr, "count: %s/%s: missing\n", argv[1],
				name);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (!rank)
		printf("resumed from step %lld\n", start);
	last = start;

	for (long long s = start; s < steps; s++) {
		sum += (s + 1) * (rank + 1);
		if (step_ms) {
			struct timespec ts = { step_ms / 1000,
					       (step_ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
		}
		if ((s + 1) % every && s + 1 != steps)
			continue;
		snprintf(name, sizeof(name), "rank-%d.%lld", rank, s + 1);
		put(argv[1], name, sum);
		MPI_Barrier(MPI_COMM_WORLD);
		if (!rank)
			put(argv[1], "step", s + 1);
		MPI_Barrier(MPI_COMM_WORLD);
		/* The previous checkpoint is no longer needed. */
		if (last) {
			snprintf(name, sizeof(name), "%s/rank-%d.%lld",
				 argv[1], rank, last);
			unlink(name);
		}
		last = s + 1;
		if (stop_at && s + 1 == stop_at) {
			if (!rank)
				printf("stopped at step %lld\n", s + 1);
			fflush(stdout);
			MPI_Finalize();
			return 3;
		}
	}
	MPI_Reduce(&sum, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank) {
		long long want = steps * (steps + 1) / 2 *
				 ((long long)size * (size + 1) / 2);

		printf("result %lld expected %lld ran %lld steps\n", total,
		       want, steps - start);
		fflush(stdout);
	}
	MPI_Finalize();
	return !rank && total != steps * (steps + 1) / 2 *
					 ((long long)size * (size + 1) / 2);
}
