/*
 * bench_place.c - placement decisions per second on one core, with a warm
 * snapshot.
 *
 * Reads a policy and a snapshot (by default config/policies/full.yaml
 * and a snapshot of its partitions and queues built here), generates a
 * set of jobs (seeded: the same set every run) of every kind the policy
 * has a rule for, then, pinned to one CPU, measures in the same run:
 *   decide   hb_place_decide(): the engine alone, what the daemon runs
 *            per submission
 *   explain  decide, then the explanation lines into a reused buffer
 *   json     decide, then the decision document written as JSON (what
 *            the daemon stores with the job)
 * Each measure is repeated; the median rate is reported, with its
 * minimum and maximum and the mean time per decision.
 *
 * usage: bench_place [-n DECISIONS] [-r REPEATS] [-m MEASURE]
 *                    [-p POLICY] [-s SNAPSHOT]
 */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/units.h"

#include "bench.h"

#define NJOBS 1024

/* Run from the source tree, or give -p. */
#ifdef HB_SOURCE_DIR
#define DEFAULT_POLICY HB_SOURCE_DIR "/config/policies/full.yaml"
#else
#define DEFAULT_POLICY "config/policies/full.yaml"
#endif

/* A busy Slurm, Kubernetes with room, some spend: every branch runs. */
static const char default_snapshot[] =
	"now: 2026-11-21T08:00:00Z\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch: {expected_start: 6h10m, pending: 42, idle_nodes: 0}\n"
	"    gpu: {expected_start: 3h, pending: 17, idle_nodes: 1}\n"
	"kubernetes:\n"
	"  queues:\n"
	"    burst:\n"
	"      expected_wait: 30m\n"
	"      pending: 0\n"
	"      free: {cpus: 2048, memory: 8Ti, gpus: {h100: 16, h200: 8}}\n"
	"    research:\n"
	"      expected_wait: 2h\n"
	"      pending: 3\n"
	"      free: {cpus: 256, memory: 1Ti, gpus: {h100: 4}}\n"
	"data:\n"
	"  /lustre/era5: 900G\n"
	"spend:\n"
	"  physics:\n"
	"    month: {slurm: 1200, kubernetes: 4800}\n";

static uint64_t rng = 20261121;

static uint64_t next(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void make_jobs(struct hb_place_input *in, const char **data, int64_t t)
{
	static const char *const accounts[] = { "physics", "chemistry",
						"medical", "climate", NULL };
	static const char *const parts[] = { "batch", "gpu", NULL };
	static const char *const types[] = { NULL, "a100", "h100", "1g.10gb" };
	static const char *const paths[] = { "/lustre/era5/2020",
					     "s3://datasets/imagenet",
					     "/lustre/medical/x", "/home/u" };

	for (int i = 0; i < NJOBS; i++) {
		struct hb_place_input *j = &in[i];

		memset(j, 0, sizeof(*j));
		j->name = "bench";
		j->user = "alice";
		j->seq = (uint64_t)i;
		j->source_name = "bench.sh";
		j->account = accounts[next() % 5];
		j->partition = parts[next() % 3];
		j->nodes = 1 + (uint32_t)(next() % 8);
		j->cpus_per_node = 1 + (uint32_t)(next() % 64);
		j->mem_per_node_mb = next() % 4 ? 1024 * (1 + next() % 200) : 0;
		if (next() % 3 == 0) {
			j->gpus_per_node = 1 + (uint32_t)(next() % 4);
			j->gpu_type = types[next() % 4];
		}
		j->time_limit = (int64_t)(600 + next() % 86400);
		j->deadline = next() % 3 ? t + (int64_t)(next() % 172800) : 0;
		data[i] = paths[next() % 4];
		j->data = &data[i];
		j->ndata = next() % 2;
		j->requested = -1;
	}
}

enum { M_DECIDE, M_EXPLAIN, M_JSON, M__COUNT };
static const char *const mode_names[] = { "decide", "explain", "json" };

int main(int argc, char **argv)
{
	const char *policy_path = DEFAULT_POLICY;
	const char *snap_path = NULL;
	static struct hb_place_input in[NJOBS];
	static const char *data[NJOBS];
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct hb_err err = { 0 };
	struct hb_buf out;
	uint64_t n = 2000000, reps = 7, v;
	int only = -1, c;
	double rate[M__COUNT][64];
	unsigned long targets[3] = { 0 };
	cpu_set_t one;
	char *text;
	size_t len;

	while ((c = getopt(argc, argv, "n:r:m:p:s:")) != -1) {
		switch (c) {
		case 'n':
			if (hb_parse_u64(optarg, 1000000000, &v) || !v)
				goto usage;
			n = v;
			break;
		case 'r':
			if (hb_parse_u64(optarg, 63, &v) || !v)
				goto usage;
			reps = v;
			break;
		case 'm':
			for (only = 0; only < M__COUNT; only++)
				if (!strcmp(optarg, mode_names[only]))
					break;
			if (only == M__COUNT)
				goto usage;
			break;
		case 'p':
			policy_path = optarg;
			break;
		case 's':
			snap_path = optarg;
			break;
		default:
			goto usage;
		}
	}
	text = slurp(policy_path, &len);
	if (!text || hb_policy_parse(text, len, policy_path, &pol, &err)) {
		fprintf(stderr, "bench_place: %s: %s\n", policy_path,
			text ? err.msg : "cannot read");
		return 1;
	}
	free(text);
	if (snap_path) {
		text = slurp(snap_path, &len);
	} else {
		text = strdup(default_snapshot);
		len = strlen(default_snapshot);
	}
	if (!text || hb_snapshot_parse(text, len, snap_path ? snap_path : "-",
				       &snap, &err)) {
		fprintf(stderr, "bench_place: snapshot: %s\n",
			text ? err.msg : "cannot read");
		return 1;
	}
	free(text);
	make_jobs(in, data, snap.now);

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		perror("sched_setaffinity (continuing unpinned)");
	hb_buf_init(&out, 0);
	for (uint64_t r = 0; r < reps; r++) {
		for (int m = 0; m < M__COUNT; m++) {
			uint64_t count = m == M_DECIDE ? n : n / 10;
			double t0;

			if (only >= 0 && m != only)
				continue;
			t0 = now();
			for (uint64_t i = 0; i < count; i++) {
				const struct hb_place_input *j = &in[i % NJOBS];
				struct hb_place_result res;
				cJSON *doc;

				hb_place_decide(&pol, &snap, j, &res);
				if (m == M_DECIDE) {
					targets[res.target]++;
					continue;
				}
				hb_buf_reset(&out);
				if (m == M_EXPLAIN) {
					hb_place_explain(&pol, j, &res, &out);
					continue;
				}
				doc = hb_place_to_json(&pol, j, &res);
				if (doc)
					hb_doc_write_json(doc, &out);
				cJSON_Delete(doc);
			}
			rate[m][r] = (double)count / (now() - t0);
		}
	}
	printf("policy %s, %d jobs; %llu decisions per run (a tenth for "
	       "explain and json), %llu runs, pinned to CPU 0\n",
	       policy_path, NJOBS, (unsigned long long)n,
	       (unsigned long long)reps);
	if (only < 0 || only == M_DECIDE)
		printf("decisions: %lu slurm, %lu kubernetes, %lu reject\n",
		       targets[0], targets[1], targets[2]);
	printf("| measure | median decisions/s | min | max | us/decision |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (int m = 0; m < M__COUNT; m++) {
		if (only >= 0 && m != only)
			continue;
		qsort(rate[m], reps, sizeof(double), cmp_double);
		printf("| %s | %.0f | %.0f | %.0f | %.2f |\n", mode_names[m],
		       rate[m][reps / 2], rate[m][0], rate[m][reps - 1],
		       1e6 / rate[m][reps / 2]);
	}
	hb_buf_free(&out);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
	return 0;
usage:
	fprintf(stderr, "usage: bench_place [-n DECISIONS] [-r REPEATS] "
			"[-m decide|explain|json] [-p POLICY] [-s "
			"SNAPSHOT]\n");
	return 2;
}
