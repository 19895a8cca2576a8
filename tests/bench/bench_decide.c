/*
 * bench_decide.c - the round trip of one decision over hpcbridged's socket,
 * as job_submit/hpcbridge makes it: send "decide" on the connection kept
 * from the last decision, wait for the reply (which the daemon sends only
 * after the decision is committed).
 *
 *   bench_decide SOCKET [N] [env] [gap=MS] [oneshot]
 *
 * "oneshot" connects for each decision and closes after it, as the CLI
 * does (and as the plugin did before it kept its connection).
 * "env" adds this process's environment to each request, as the plugin
 * adds the submitter's (sbatch sends it all: some 2-3 KB in a shell).
 * "gap=MS" waits MS milliseconds between decisions, as the daemon waits
 * between the sbatch calls of one user (about 20 ms apart here): what a
 * decision costs a daemon, and a machine, that were idle.
 * Sends N (default 2000) decisions one after another and prints the
 * median, p90, p99 and maximum round trip in microseconds, the failures,
 * and how many took over 20 ms (the plugin's default timeout, past which
 * it leaves the job on Slurm), as a markdown table row.  The daemon must be
 * running; scripts in tests/bench/ start one (bench_plugin.sh).
 */
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "hpcbridge/proto.h"

extern char **environ;

int main(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 2000, gap_ms = 0;
	double *lat;
	cJSON *req;
	struct hb_proto_conn conn = HB_PROTO_CONN_INIT;
	int fails = 0, with_env = 0, oneshot = 0;
	long slow = 0;
	int bad = argc < 2 || n <= 0 || n > 10000000;

	for (int i = 3; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "env")) {
			with_env = 1;
		} else if (!strcmp(argv[i], "oneshot")) {
			oneshot = 1;
		} else if (!strncmp(argv[i], "gap=", 4)) {
			gap_ms = strtol(argv[i] + 4, &end, 10);
			bad |= *end || gap_ms < 0 || gap_ms > 10000;
		} else {
			bad = 1;
		}
	}
	if (bad) {
		fprintf(stderr, "usage: bench_decide SOCKET [N] [env] "
				"[gap=MS] [oneshot]\n");
		return 2;
	}
	lat = calloc((size_t)n, sizeof(*lat));
	req = cJSON_Parse("{\"op\":\"decide\",\"user\":\"root\",\"uid\":0,"
			  "\"account\":\"physics\",\"partition\":\"gpu\","
			  "\"slurm_job_name\":\"bench\",\"time_limit_min\":60,"
			  "\"script\":\"#!/bin/sh\\n#SBATCH -N 2\\nsrun "
			  "./a.out\\n\"}");
	if (!lat || !req)
		return 1;
	if (with_env) {
		cJSON *env = cJSON_AddArrayToObject(req, "env");

		for (char **e = environ; env && *e; e++)
			cJSON_AddItemToArray(env, cJSON_CreateString(*e));
		if (!env)
			return 1;
	}
	for (long i = 0; i < n; i++) {
		struct hb_err err = { 0 };
		cJSON *reply = NULL;
		double t0 = now();
		int rc = hb_proto_call_on(&conn, argv[1], req, 5000, &reply,
					  &err);

		if (oneshot)
			hb_proto_conn_close(&conn);
		if (!rc)
			rc = hb_proto_reply_status(reply, &err);
		lat[i] = (now() - t0) * 1e6;
		cJSON_Delete(reply);
		if (gap_ms)
			usleep((useconds_t)gap_ms * 1000);
		if (rc && fails++ < 3)
			fprintf(stderr, "decide: %s\n", err.msg);
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	for (long i = 0; i < n; i++)
		slow += lat[i] > 20000.0;
	printf("| %ld | %.0f | %.0f | %.0f | %.0f | %d | %ld |\n", n,
	       lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], lat[n - 1],
	       fails, slow);
	hb_proto_conn_close(&conn);
	cJSON_Delete(req);
	free(lat);
	return fails ? 1 : 0;
}
