/*
 * bench_ckpt.c - the filesystem side of a re-push and a re-pull of an
 * unchanged checkpoint: scanning N small files into a manifest (every
 * file read and hashed again) and writing the manifest, then
 * reading the manifest back (what a re-push compares against), then
 * materialising the same manifest with an earlier copy of the tree to
 * reuse (every file copied and checked, none fetched).  Then a pull:
 * materialising 64 files of 4 MiB from a source that waits LATENCY ms
 * per file before writing it (standing for a GET's round trip), with
 * opts.jobs 1, 4 and 8.
 *
 * usage: bench_ckpt [-d DIR] [-n FILES] [-s BYTES] [-r ROUNDS]
 *                   [-l LATENCY] [-c all|small|jobs]
 *
 * DIR (default /tmp) gets a fresh tree of FILES files (default 10,000) of
 * BYTES bytes (default 4096), 100 to a directory.  Printed: the median
 * and best over ROUNDS (default 5) of each step, in milliseconds, with
 * the page cache warm (the case of a re-push: the job just wrote them).
 * -c picks the small-file steps or the jobs case alone (default all);
 * LATENCY defaults to 2.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "hpcbridge/ckpt.h"

static void die(const char *what, const struct hb_err *err)
{
	fprintf(stderr, "bench_ckpt: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static void make_tree(const char *dir, long files, long bytes)
{
	char path[512], *data = malloc((size_t)bytes + 1);

	if (!data || mkdir(dir, 0755))
		die("mkdir", NULL);
	for (long i = 0; i < files; i++) {
		int fd;

		if (i % 100 == 0) {
			snprintf(path, sizeof(path), "%s/d%03ld", dir, i / 100);
			if (mkdir(path, 0755))
				die(path, NULL);
		}
		memset(data, 'a' + (int)(i % 26), (size_t)bytes);
		snprintf(path, sizeof(path), "%s/d%03ld/f%05ld", dir, i / 100,
			 i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, data, (size_t)bytes) != bytes)
			die(path, NULL);
		close(fd);
	}
	free(data);
}

#define BIG_FILES 64
#define BIG_BYTES (4L << 20)

/* The source of the jobs case: file dNNN/fNNNNN holds make_tree()'s
 * bytes for its number, written 64 KiB at a time after a wait of ms
 * milliseconds, as a GET would write what it receives. */
struct slow {
	long ms;
};

static int slow_fetch(void *ctx, const struct hb_ckpt_file *f, int fd,
		      struct hb_err *err)
{
	const struct slow *s = ctx;
	struct timespec nap = {s->ms / 1000, (s->ms % 1000) * 1000000L};
	long i = strtol(strrchr(f->path, 'f') + 1, NULL, 10);
	char chunk[64 * 1024];

	nanosleep(&nap, NULL);
	memset(chunk, 'a' + (int)(i % 26), sizeof(chunk));
	for (uint64_t left = f->size; left > 0;) {
		size_t n = left < sizeof(chunk) ? (size_t)left : sizeof(chunk);
		ssize_t w = write(fd, chunk, n);

		if (w <= 0)
			return hb_err_set(err, HB_EIO, NULL, 0, "%s: write",
					  f->path);
		left -= (uint64_t)w;
	}
	return 0;
}

static void report(const char *what, double *t, long rounds)
{
	qsort(t, (size_t)rounds, sizeof(*t), cmp_double);
	printf("%-34s median %8.1f ms   best %8.1f ms\n", what,
	       pct(t, (size_t)rounds, 0.5) * 1e3, t[0] * 1e3);
}

/* The jobs case: 64 files of 4 MiB pulled with 1, 4 and 8 threads,
 * into a target removed before each run (not timed). */
static void jobs_case(const char *top, long rounds, long ms)
{
	static const unsigned jobs[] = {1, 4, 8};
	char src[300], dst[300], cmd[700];
	double t[3][1000];
	struct hb_ckpt_manifest *m = NULL;
	struct slow s = {ms};
	struct hb_err err = {0};

	snprintf(src, sizeof(src), "%s/big", top);
	snprintf(dst, sizeof(dst), "%s/bigdst", top);
	make_tree(src, BIG_FILES, BIG_BYTES);
	if (hb_ckpt_scan(src, NULL, &m, NULL, &err))
		die("scan", &err);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dst);
	for (long r = 0; r < rounds; r++) {
		for (size_t j = 0; j < 3; j++) {
			struct hb_ckpt_mat_opts o = {.jobs = jobs[j]};
			struct hb_ckpt_mat_stats st;
			double t0;

			if (system(cmd))
				die("rm", NULL);
			t0 = now();
			if (hb_ckpt_materialise(m, dst, slow_fetch, &s, &o, &st,
						&err))
				die("materialise", &err);
			t[j][r] = now() - t0;
			if (st.fetched != BIG_FILES)
				die("materialise fetched fewer files", NULL);
		}
	}
	printf("%d files of %ld MiB from a source of %ld ms per file, "
	       "%ld rounds\n", BIG_FILES, BIG_BYTES >> 20, ms, rounds);
	for (size_t j = 0; j < 3; j++) {
		char what[64];

		snprintf(what, sizeof(what), "materialise, jobs %u", jobs[j]);
		report(what, t[j], rounds);
	}
	hb_ckpt_manifest_free(m);
}

/* The small-file steps: scan, read back, materialise all reused. */
static void small_case(const char *top, long files, long bytes, long rounds)
{
	char src[300], dst[300];
	double *scan_t, *read_t, *mat_t;
	struct hb_ckpt_dir_source none = {-1};

	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(dst, sizeof(dst), "%s/dst", top);
	make_tree(src, files, bytes);
	scan_t = calloc((size_t)rounds, sizeof(double));
	read_t = calloc((size_t)rounds, sizeof(double));
	mat_t = calloc((size_t)rounds, sizeof(double));
	if (!scan_t || !read_t || !mat_t)
		die("calloc", NULL);
	for (long r = 0; r < rounds; r++) {
		struct hb_ckpt_manifest *m = NULL, *back = NULL;
		struct hb_ckpt_mat_opts o = {.reuse = src};
		struct hb_ckpt_mat_stats st;
		struct hb_err err = {0};
		struct hb_buf b;
		double t0 = now();

		hb_buf_init(&b, 0);
		if (hb_ckpt_scan(src, NULL, &m, NULL, &err) ||
		    hb_ckpt_manifest_write(m, &b))
			die("scan", &err);
		scan_t[r] = now() - t0;
		t0 = now();
		if (hb_ckpt_manifest_parse(b.data, b.len, "bench", &back, &err))
			die("read", &err);
		read_t[r] = now() - t0;
		hb_ckpt_manifest_free(back);
		t0 = now();
		/* Every file comes from the reused tree: the source, which
		 * has no directory, is never asked. */
		if (hb_ckpt_materialise(m, dst, hb_ckpt_fetch_dir, &none, &o,
					&st, &err))
			die("materialise", &err);
		mat_t[r] = now() - t0;
		if (st.reused != (uint64_t)files)
			die("materialise reused fewer files than it had", NULL);
		hb_buf_free(&b);
		hb_ckpt_manifest_free(m);
	}
	printf("%ld files of %ld bytes, %ld rounds\n", files, bytes, rounds);
	report("scan + manifest (re-push side)", scan_t, rounds);
	report("read the manifest back", read_t, rounds);
	report("materialise, all reused (re-pull)", mat_t, rounds);
	free(scan_t);
	free(read_t);
	free(mat_t);
}

int main(int argc, char **argv)
{
	long files = 10000, bytes = 4096, rounds = 5, ms = 2;
	const char *base = "/tmp", *which = "all";
	char top[256], cmd[700];
	int opt;

	while ((opt = getopt(argc, argv, "d:n:s:r:l:c:")) != -1) {
		if (opt == 'd')
			base = optarg;
		else if (opt == 'c' && (!strcmp(optarg, "all") ||
					!strcmp(optarg, "small") ||
					!strcmp(optarg, "jobs")))
			which = optarg;
		else if ((opt == 'n' &&
			  parse_long(optarg, 1, 1000000, &files)) ||
			 (opt == 's' && parse_long(optarg, 0, 1 << 30, &bytes)) ||
			 (opt == 'r' && parse_long(optarg, 1, 1000, &rounds)) ||
			 (opt == 'l' && parse_long(optarg, 0, 10000, &ms)) ||
			 !strchr("nsrl", opt)) {
			fprintf(stderr, "usage: bench_ckpt [-d DIR] [-n FILES] "
				"[-s BYTES] [-r ROUNDS] [-l LATENCY] "
				"[-c all|small|jobs]\n");
			return 2;
		}
	}
	snprintf(top, sizeof(top), "%s/hb-bench-ckpt-XXXXXX", base);
	if (!mkdtemp(top))
		die("mkdtemp", NULL);
	if (strcmp(which, "jobs"))
		small_case(top, files, bytes, rounds);
	if (strcmp(which, "small"))
		jobs_case(top, rounds, ms);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		die("rm", NULL);
	return 0;
}
