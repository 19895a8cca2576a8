/*
 * bench_ckpt.c - the filesystem side of a re-push and a re-pull of an
 * unchanged checkpoint: scanning N small files into a manifest (every
 * file read and hashed again) and writing the manifest, then
 * reading the manifest back (what a re-push compares against), then
 * materialising the same manifest with an earlier copy of the tree to
 * reuse (every file copied and checked, none fetched).
 *
 * usage: bench_ckpt [-d DIR] [-n FILES] [-s BYTES] [-r ROUNDS]
 *
 * DIR (default /tmp) gets a fresh tree of FILES files (default 10,000) of
 * BYTES bytes (default 4096), 100 to a directory.  Printed: the median
 * and best over ROUNDS (default 5) of each step, in milliseconds, with
 * the page cache warm (the case of a re-push: the job just wrote them).
 */
#include <fcntl.h>
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

static void report(const char *what, double *t, long rounds)
{
	qsort(t, (size_t)rounds, sizeof(*t), cmp_double);
	printf("%-34s median %8.1f ms   best %8.1f ms\n", what,
	       pct(t, (size_t)rounds, 0.5) * 1e3, t[0] * 1e3);
}

int main(int argc, char **argv)
{
	long files = 10000, bytes = 4096, rounds = 5;
	const char *base = "/tmp";
	char top[256], src[300], dst[300], cmd[700];
	double *scan_t, *read_t, *mat_t;
	struct hb_ckpt_dir_source none = {-1};
	int opt;

	while ((opt = getopt(argc, argv, "d:n:s:r:")) != -1) {
		if (opt == 'd')
			base = optarg;
		else if ((opt == 'n' &&
			  parse_long(optarg, 1, 1000000, &files)) ||
			 (opt == 's' && parse_long(optarg, 0, 1 << 30, &bytes)) ||
			 (opt == 'r' && parse_long(optarg, 1, 1000, &rounds)) ||
			 !strchr("nsr", opt)) {
			fprintf(stderr, "usage: bench_ckpt [-d DIR] [-n FILES] "
				"[-s BYTES] [-r ROUNDS]\n");
			return 2;
		}
	}
	snprintf(top, sizeof(top), "%s/hb-bench-ckpt-XXXXXX", base);
	if (!mkdtemp(top))
		die("mkdtemp", NULL);
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
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		die("rm", NULL);
	free(scan_t);
	free(read_t);
	free(mat_t);
	return 0;
}
