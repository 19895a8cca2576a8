/*
 * bench_export.c - hostile scripts against the translation library.
 *
 * What the daemon does with a user's script on the Kubernetes backend
 * (parse it, then build the MPIJob), timed for scripts made to be slow:
 *   sbatch-export-N   one #SBATCH --export= line of N distinct names
 *                     (1k, 10k, 100k): the duplicate check of
 *                     hb_jobspec_add_env() was a scan of every earlier
 *                     name, O(N^2)
 *   sbatch-export-1MB the same line grown to 1 MiB (about 140k names)
 *   sbatch-export-dup-1MB
 *                     1 MiB of --export=NAME=VALUE with every name twice
 *                     (a later assignment wins in the first one's place)
 *   body-export-1MB   1 MiB of "export NCCL_Vn=1" lines in the body (the
 *                     body scan forwards each to every rank)
 *   pbs-v-4096        one #PBS -v line of 4096 names (the parser's cap)
 *   sbatch-J-1MB, sbatch-mail-1MB
 *                     1 MiB of repeated #SBATCH -J / --mail-type lines
 *                     (overridden and cumulative options)
 *   pbs-wall-1MB, pbs-N-1MB
 *                     1 MiB of repeated #PBS -l walltime / -N lines
 *   pbs-notes-1MB     one #PBS -l nodes= line of 1 MiB of dropped node
 *                     attributes (one note each)
 *   pbs-select-1MB    one #PBS -l select= line of 1 MiB of dropped site
 *                     resources
 *   pbs-feature-1MB   #PBS -l feature= lines of 1024 names of 240
 *                     characters that differ only at the end (the
 *                     parser's cap per list)
 * For each: the median over the runs of the parse alone and of parse and
 * MPIJob (hb_mpijob_emit, as the gateway's Kubernetes backend builds it),
 * in milliseconds, and the parse's result (ok, or the error).  A case
 * stops repeating once its runs have taken -m seconds, so the old
 * quadratic code can be measured too (with fewer runs).
 *
 * Build it with the translation library and the configuration table
 * alone:
 *   cc -O2 -D_GNU_SOURCE -Iinclude -I. tests/bench/bench_export.c \
 *      translators/[a-z]*.c translators/base/[a-z]*.c \
 *      translators/sbatch/[a-z]*.c translators/pbs/[a-z]*.c \
 *      translators/k8s/[a-z]*.c gateway/config/config.c \
 *      -lcjson -lyaml -lm -o bench_export
 * (Code from before the folders per part, 6fd91e1 and older, took
 * translators/[a-z]*.c alone and an hb_config where the emitters now take
 * its k8s member.)
 *
 * usage: bench_export [-r RUNS] [-m SECONDS] [-c CASE]
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/translate.h"

#include "bench.h"

#define MIB (1024 * 1024)

struct gen {
	char *p;
	size_t len, cap;
	unsigned names;
};

static void put(struct gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!g->p) {
		g->cap = 4096;
		g->p = malloc(g->cap);
		if (!g->p) {
			perror("malloc");
			exit(1);
		}
	}
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(g->p + g->len, g->cap - g->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < g->cap - g->len)
			break;
		g->cap = g->cap * 2 + (size_t)n + 64;
		g->p = realloc(g->p, g->cap);
		if (!g->p) {
			perror("realloc");
			exit(1);
		}
	}
	g->len += (size_t)n;
}

/* One --export line of n names, or of names until the line holds size
 * bytes (n 0); dup: NAME=VALUE with every name given twice. */
static void gen_export(struct gen *g, unsigned n, size_t size, int dup)
{
	put(g, "#!/bin/bash\n#SBATCH --export=");
	for (unsigned i = 0; n ? i < n : g->len < size - 16; i++) {
		if (dup)
			put(g, "%sV%u=%u,V%u=%u", i ? "," : "", i, i, i, i + 1);
		else
			put(g, "%sV%u", i ? "," : "", i);
		g->names++;
	}
	put(g, "\nsrun ./a.out\n");
}

static void gen_case(const char *name, struct gen *g)
{
	unsigned i;

	if (!strcmp(name, "sbatch-export-1k"))
		gen_export(g, 1000, 0, 0);
	else if (!strcmp(name, "sbatch-export-10k"))
		gen_export(g, 10000, 0, 0);
	else if (!strcmp(name, "sbatch-export-100k"))
		gen_export(g, 100000, 0, 0);
	else if (!strcmp(name, "sbatch-export-1MB"))
		gen_export(g, 0, MIB, 0);
	else if (!strcmp(name, "sbatch-export-dup-1MB"))
		gen_export(g, 0, MIB, 1);
	else if (!strcmp(name, "body-export-1MB")) {
		put(g, "#!/bin/bash\n#SBATCH -N 2\n");
		for (i = 0; g->len < MIB - 32; i++, g->names++)
			put(g, "export NCCL_V%u=1\n", i);
		put(g, "srun ./a.out\n");
	} else if (!strcmp(name, "pbs-v-4096")) {
		put(g, "#!/bin/bash\n#PBS -v ");
		for (i = 0; i < 4096; i++, g->names++)
			put(g, "%sV%u", i ? "," : "", i);
		put(g, "\nmpirun ./a.out\n");
	} else if (!strcmp(name, "sbatch-J-1MB")) {
		put(g, "#!/bin/bash\n");
		while (g->len < MIB - 32)
			put(g, "#SBATCH -J x\n");
		put(g, "srun ./a.out\n");
	} else if (!strcmp(name, "sbatch-mail-1MB")) {
		put(g, "#!/bin/bash\n");
		while (g->len < MIB - 32)
			put(g, "#SBATCH --mail-type=END\n");
		put(g, "srun ./a.out\n");
	} else if (!strcmp(name, "pbs-wall-1MB")) {
		put(g, "#!/bin/bash\n");
		while (g->len < MIB - 32)
			put(g, "#PBS -l walltime=60\n");
		put(g, "mpirun ./a.out\n");
	} else if (!strcmp(name, "pbs-N-1MB")) {
		put(g, "#!/bin/bash\n");
		while (g->len < MIB - 32)
			put(g, "#PBS -N x\n");
		put(g, "mpirun ./a.out\n");
	} else if (!strcmp(name, "pbs-notes-1MB")) {
		put(g, "#!/bin/bash\n#PBS -l nodes=1");
		while (g->len < MIB - 32)
			put(g, ":a=b");
		put(g, "\nmpirun ./a.out\n");
	} else if (!strcmp(name, "pbs-select-1MB")) {
		put(g, "#!/bin/bash\n#PBS -l select=1:ncpus=1");
		while (g->len < MIB - 32)
			put(g, ":s=1");
		put(g, "\nmpirun ./a.out\n");
	} else if (!strcmp(name, "pbs-feature-1MB")) {
		put(g, "#!/bin/bash\n");
		while (g->len < MIB - 300 * 1024) {
			put(g, "#PBS -l feature=");
			for (i = 0; i < 1024; i++)
				put(g, "%s%0240u", i ? ":" : "", i);
			put(g, "\n");
		}
		put(g, "mpirun ./a.out\n");
	} else {
		fprintf(stderr, "unknown case %s\n", name);
		exit(2);
	}
}

static const char *const cases[] = {
	"sbatch-export-1k", "sbatch-export-10k",     "sbatch-export-100k",
	"sbatch-export-1MB", "sbatch-export-dup-1MB", "body-export-1MB",
	"pbs-v-4096",	    "sbatch-J-1MB",	     "sbatch-mail-1MB",
	"pbs-wall-1MB",	    "pbs-N-1MB",	     "pbs-notes-1MB",
	"pbs-select-1MB",	"pbs-feature-1MB",
};

/* Parse g (and build its MPIJob when emit): seconds; err gets the
 * parse's result. */
static double run(const struct gen *g, const struct hb_config *cfg, int emit,
		  char *res, size_t rn)
{
	struct hb_jobspec spec;
	struct hb_report rep;
	struct hb_err err = {0};
	cJSON *doc = NULL;
	double t0 = now(), dt;
	int rc;

	hb_jobspec_init(&spec, "job.sh");
	hb_report_init(&rep, "MPIJob");
	rc = hb_parse_any(g->p, g->len, "job.sh", NULL, &spec, &err);
	if (!rc && emit)
		rc = hb_mpijob_emit(&spec, &cfg->k8s, -1, &doc, &rep, &err);
	dt = now() - t0;
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&spec);
	if (rc)
		snprintf(res, rn, "%.60s", err.msg[0] ? err.msg
						      : hb_strerror(rc));
	else
		snprintf(res, rn, "ok");
	return dt;
}

/* Median of up to runs runs, stopping once they took max seconds. */
static double median(const struct gen *g, const struct hb_config *cfg,
		     int emit, int runs, double max, int *done, char *res,
		     size_t rn)
{
	double t[64], total = 0;
	int n = 0;

	while (n < runs && n < 64 && (n == 0 || total < max)) {
		t[n] = run(g, cfg, emit, res, rn);
		total += t[n++];
	}
	qsort(t, (size_t)n, sizeof(t[0]), cmp_double);
	*done = n;
	return t[n / 2];
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	long runs = 7, maxs = 20;
	struct hb_config cfg;
	cpu_set_t one;
	int opt;

	while ((opt = getopt(argc, argv, "r:m:c:")) != -1) {
		if (opt == 'r' && !parse_long(optarg, 1, 64, &runs))
			continue;
		if (opt == 'm' && !parse_long(optarg, 1, 3600, &maxs))
			continue;
		if (opt == 'c') {
			only = optarg;
			continue;
		}
		fprintf(stderr, "usage: bench_export [-r RUNS] [-m SECONDS] "
				"[-c CASE]\n");
		return 2;
	}
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		perror("sched_setaffinity (continuing unpinned)");
	if (hb_config_defaults(&cfg)) {
		fprintf(stderr, "cannot load the default configuration\n");
		return 1;
	}
	printf("| case | bytes | names | parse ms (runs) | parse + MPIJob "
	       "ms (runs) | result |\n");
	printf("|---|---:|---:|---:|---:|---|\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gen g = {0};
		char res[128];
		double a, b;
		int na, nb;

		if (only && strcmp(only, cases[i]))
			continue;
		gen_case(cases[i], &g);
		a = median(&g, &cfg, 0, (int)runs, (double)maxs, &na, res,
			   sizeof(res));
		b = median(&g, &cfg, 1, (int)runs, (double)maxs, &nb, res,
			   sizeof(res));
		printf("| %s | %zu | %u | %.2f (%d) | %.2f (%d) | %s |\n",
		       cases[i], g.len, g.names, a * 1e3, na, b * 1e3, nb, res);
		fflush(stdout);
		free(g.p);
	}
	hb_config_free(&cfg);
	return 0;
}
