/*
 * bench_translate.c - translation throughput on one core.
 *
 * Loads a corpus of sbatch scripts, then, pinned to one CPU, measures in
 * the same run:
 *   read     touching every byte of every script (a checksum): the floor
 *   parse    script text -> jobspec (hb_parse_any, as the CLI: the kind
 *            is detected first)
 *   json     what "hpcbridge translate --format json FILE" does per
 *            script, once the file is read: parse, write the MPIJob
 *            straight into the output buffer (hb_mpijob_write with the
 *            streaming JSON writer; the report keeps fates without
 *            notes, as without --explain), then the fidelity counts and
 *            warnings the CLI checks for its stderr summary
 *   yaml     the same with --format yaml
 *   json-inline, yaml-inline
 *            the same with kubernetes.launcher.runtime: inline (the
 *            launcher runtime carried in every manifest)
 *   tree     parse, build the MPIJob as a cJSON tree with a full report
 *            (hb_mpijob_emit, as the gateway's Kubernetes backend does),
 *            not written
 *   tree-json, tree-yaml
 *            the tree written with hb_doc_write_json/yaml: the path the
 *            CLI took before the streaming writer
 * Each measure is repeated; the median rate is reported, with its ratio to
 * the read rate.  Peak RSS is printed for two corpus sizes to show that
 * memory stays flat as the corpus grows (each script is freed before the
 * next is read).
 *
 * usage: bench_translate [-n SCRIPTS] [-r REPEATS] [-m MEASURE] FILE...
 * -m runs one measure only (for profiling it with perf).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/translate.h"

#include "bench.h"

struct script {
	char *name;
	char *data;
	size_t len;
};

static long peak_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

enum mode {
	M_READ,
	M_PARSE,
	M_JSON,
	M_YAML,
	M_JSON_INLINE,
	M_YAML_INLINE,
	M_TREE,
	M_TREE_JSON,
	M_TREE_YAML
};
#define NMODES 9
static const char *const mode_names[] = { "read", "parse",	 "json",
					  "yaml", "json-inline", "yaml-inline",
					  "tree", "tree-json",	 "tree-yaml" };

static int is_inline(int m)
{
	return m == M_JSON_INLINE || m == M_YAML_INLINE;
}

static volatile unsigned long sink;

/* One pass over n scripts (cycling through the corpus).  jw and yw write
 * JSON and YAML into out. */
static int run(enum mode m, const struct script *c, size_t nc, size_t n,
	       const struct hb_k8s_opts *cfg, struct hb_buf *out,
	       struct hb_emit *jw, struct hb_emit *yw, struct hb_arena *trees)
{
	for (size_t i = 0; i < n; i++) {
		const struct script *s = &c[i % nc];
		struct hb_jobspec spec;
		struct hb_report rep;
		struct hb_err err = {0};
		cJSON *doc = NULL;
		int rc;

		if (m == M_READ) {
			unsigned long sum = 0;

			for (size_t k = 0; k < s->len; k++)
				sum += (unsigned char)s->data[k];
			sink += sum;
			continue;
		}
		hb_jobspec_init(&spec, s->name);
		hb_report_init(&rep, "MPIJob");
		hb_doc_scope_begin(trees);
		rc = hb_parse_any(s->data, s->len, s->name, NULL, &spec, &err);
		if (!rc && m >= M_JSON && m <= M_YAML_INLINE) {
			unsigned counts[HB__FATE_COUNT];

			/* The CLI without --explain. */
			rep.no_notes = true;
			hb_buf_reset(out);
			rc = hb_mpijob_write(
				&spec, cfg, -1,
				m == M_JSON || m == M_JSON_INLINE ? jw : yw,
				&rep, &err);
			for (uint32_t k = 0; !rc && k < rep.nwarnings; k++)
				sink += strlen(rep.warnings[k]);
			if (!rc)
				hb_report_counts(&spec, &rep, counts);
			sink += out->len + counts[HB_FATE_DROPPED];
		} else if (!rc && m >= M_TREE) {
			rc = hb_mpijob_emit(&spec, cfg, -1, &doc, &rep, &err);
			hb_buf_reset(out);
			if (!rc && m == M_TREE_JSON)
				rc = hb_doc_write_json(doc, out);
			else if (!rc && m == M_TREE_YAML)
				rc = hb_doc_write_yaml(doc, out);
			sink += out->len;
		}
		cJSON_Delete(doc);
		hb_doc_scope_end();
		hb_arena_reset(trees);
		hb_report_free(&rep);
		hb_jobspec_free(&spec);
		if (rc) {
			fprintf(stderr, "%s: %s\n", s->name,
				err.msg[0] ? err.msg : hb_strerror(rc));
			return rc;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = 200000, nc = 0, bytes = 0;
	int repeats = 7, opt, only = -1;
	struct script *c;
	struct hb_config cfg, cfg_inline;
	struct hb_buf out;
	struct hb_emit *jw, *yw;
	struct hb_arena trees;
	double rates[NMODES][64], med[NMODES];
	cpu_set_t one;

	while ((opt = getopt(argc, argv, "n:r:m:")) != -1) {
		if (opt == 'm') {
			for (int m = 0; m < NMODES; m++)
				if (!strcmp(optarg, mode_names[m]))
					only = m;
			if (only < 0) {
				fprintf(stderr, "unknown measure %s\n",
					optarg);
				return 2;
			}
		} else if (opt == 'n')
			n = strtoul(optarg, NULL, 10);
		else if (opt == 'r')
			repeats = atoi(optarg) > 0 && atoi(optarg) <= 64
					  ? atoi(optarg)
					  : 7;
		else
			return 2;
	}
	if (optind >= argc || n == 0) {
		fprintf(stderr,
			"usage: bench_translate [-n N] [-r R] FILE...\n");
		return 2;
	}
	c = calloc((size_t)(argc - optind), sizeof(*c));
	for (int i = optind; i < argc; i++) {
		c[nc].name = argv[i];
		c[nc].data = slurp(argv[i], &c[nc].len);
		if (!c[nc].data) {
			fprintf(stderr, "cannot read %s\n", argv[i]);
			return 1;
		}
		bytes += c[nc].len;
		nc++;
	}
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		perror("sched_setaffinity (continuing unpinned)");
	if (hb_config_defaults(&cfg) || hb_config_defaults(&cfg_inline)) {
		fprintf(stderr, "cannot load the default configuration\n");
		return 1;
	}
	cfg_inline.k8s.launcher_runtime = "inline";
	hb_buf_init(&out, 0);
	hb_arena_init(&trees, 0);
	jw = hb_emit_new(HB_EMIT_JSON, &out);
	yw = hb_emit_new(HB_EMIT_YAML, &out);
	if (!jw || !yw)
		return 1;

	/* Warm up, and check every script translates. */
	for (int m = M_PARSE; m < NMODES; m++)
		if (run((enum mode)m, c, nc, nc,
			is_inline(m) ? &cfg_inline.k8s : &cfg.k8s, &out, jw, yw,
			&trees))
			return 1;
	long rss_small = 0;

	/* Interleave the modes so that machine noise hits all alike. */
	for (int r = 0; r < repeats; r++) {
		for (int m = M_READ; m < NMODES; m++) {
			double t0 = now(), dt;

			if (only >= 0 && m != only) {
				rates[m][r] = 0;
				continue;
			}
			if (run((enum mode)m, c, nc, n,
				is_inline(m) ? &cfg_inline.k8s : &cfg.k8s, &out, jw, yw,
				&trees))
				return 1;
			dt = now() - t0;
			rates[m][r] = (double)n / dt;
		}
		if (r == 0)
			rss_small = peak_rss_kb();
	}
	for (int m = M_READ; m < NMODES; m++) {
		qsort(rates[m], (size_t)repeats, sizeof(double), cmp_double);
		med[m] = rates[m][repeats / 2];
	}
	/* Ten times the scripts: peak memory must not grow.  Not when one
	 * measure is being profiled. */
	if (only < 0 && run(M_YAML, c, nc, n * 10, &cfg.k8s, &out, jw, yw, &trees))
		return 1;
	long rss_big = peak_rss_kb();

	printf("corpus: %zu scripts, %zu bytes (mean %zu B); %zu "
	       "translations per run, %d runs, 1 CPU\n",
	       nc, bytes, bytes / nc, n, repeats);
	printf("| measure | median scripts/s | MB/s | vs read |\n");
	printf("|---|---:|---:|---:|\n");
	for (int m = M_READ; m < NMODES; m++)
		printf("| %s | %.0f | %.1f | %.4f |\n", mode_names[m], med[m],
		       med[m] * (double)bytes / (double)nc / 1e6,
		       med[M_READ] > 0 ? med[m] / med[M_READ] : 0.0);
	if (only < 0)
		printf("peak RSS: %ld KiB after %zu translations, %ld KiB "
		       "after %zu more\n",
		       rss_small, n * NMODES, rss_big, n * 10);
	hb_emit_free(jw);
	hb_emit_free(yw);
	hb_buf_free(&out);
	hb_config_free(&cfg);
	cfg_inline.k8s.launcher_runtime = NULL;
	hb_config_free(&cfg_inline);
	for (size_t i = 0; i < nc; i++)
		free(c[i].data);
	free(c);
	return 0;
}
