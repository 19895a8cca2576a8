/*
 * bench.h - what the benchmark programs share: a monotonic clock,
 * percentiles of sorted samples, and checked numbers from the command line.
 */
#ifndef HPCBRIDGE_BENCH_H
#define HPCBRIDGE_BENCH_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_UNUSED __attribute__((unused))

/* Seconds on the monotonic clock. */
static BENCH_UNUSED double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* For qsort of doubles, ascending. */
static BENCH_UNUSED int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The p-quantile (0..1) of n sorted samples (n > 0), nearest rank. */
static BENCH_UNUSED double pct(const double *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return sorted[i < n ? i : n - 1];
}

/* s as a number in lo..hi into *out: 0, or -1 when it is not one. */
static BENCH_UNUSED int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* The whole file at path, NUL-terminated (caller frees), its size in
 * *len; NULL when it cannot be read. */
static BENCH_UNUSED char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return NULL;
	}
	p = malloc((size_t)n + 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	if (p) {
		p[n] = '\0';
		*len = (size_t)n;
	}
	return p;
}

#endif
