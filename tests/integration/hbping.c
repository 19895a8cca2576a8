/*
 * hbping.c - how fast hpcbridged answers root: COUNT requests, one every
 * INTERVAL_MS, each timed; prints their p50, p99 and max.
 *
 *   hbping [--decide] [--reuse] [--timeout MS] SOCKET COUNT INTERVAL_MS
 *
 * A "ping" by default; --decide asks a decision as the job_submit plugin
 * does.  Each request opens its own connection, as ping_ms in
 * tests/security/lib.sh does; --reuse keeps one, as the plugin does.  Prints one line:
 *
 *   n=100 ok=100 p50=0.21 p99=0.80 max=1.10 ms
 *
 * Exit status 0 when every request was answered ok, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hpcbridge/error.h"
#include "hpcbridge/proto.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static long num(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	const char *ping = "{\"op\":\"ping\"}",
		   *decide = "{\"op\":\"decide\",\"user\":\"root\",\"uid\":0,"
			     "\"partition\":\"cpu\","
			     "\"slurm_job_name\":\"hbping\",\"target\":\"slurm\"}";
	int i = 1, use_decide = 0, reuse = 0, ok = 0, failed = 0;
	struct hb_proto_conn conn = HB_PROTO_CONN_INIT;
	long count, interval, timeout = 5000;
	struct timespec gap;
	double *lat, t0;
	cJSON *req;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--decide"))
			use_decide = 1;
		else if (!strcmp(argv[i], "--reuse"))
			reuse = 1;
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = num(argv[++i], 1, 600000);
		else
			break;
	}
	if (argc - i != 3 || timeout < 0 ||
	    (count = num(argv[i + 1], 1, 10000000)) < 0 ||
	    (interval = num(argv[i + 2], 0, 60000)) < 0) {
		fprintf(stderr, "usage: hbping [--decide] [--reuse] "
				"[--timeout MS] SOCKET COUNT INTERVAL_MS\n");
		return 2;
	}
	req = cJSON_Parse(use_decide ? decide : ping);
	lat = calloc((size_t)count, sizeof(*lat));
	if (!req || !lat)
		return 2;
	gap.tv_sec = interval / 1000;
	gap.tv_nsec = (interval % 1000) * 1000000L;
	for (long k = 0; k < count; k++) {
		struct hb_err err = { 0 };
		cJSON *reply = NULL;
		int rc;

		t0 = now_ms();
		if (reuse)
			rc = hb_proto_call_on(&conn, argv[i], req, (int)timeout,
					      &reply, &err);
		else
			rc = hb_proto_call(argv[i], req, (int)timeout, &reply,
					   &err);
		lat[k] = now_ms() - t0;
		if (rc == 0 && hb_proto_reply_status(reply, NULL) == 0)
			ok++;
		else if (rc && ++failed <= 5)
			fprintf(stderr, "hbping: %s after %.0f ms: %s\n",
				hb_errname(rc) ? hb_errname(rc) : "?", lat[k],
				err.msg);
		cJSON_Delete(reply);
		if (interval)
			nanosleep(&gap, NULL);
	}
	qsort(lat, (size_t)count, sizeof(*lat), cmp);
	printf("n=%ld ok=%d p50=%.2f p99=%.2f max=%.2f ms\n", count, ok,
	       lat[count / 2], lat[(count * 99) / 100 < count - 1
				       ? (count * 99) / 100
				       : count - 1],
	       lat[count - 1]);
	hb_proto_conn_close(&conn);
	free(lat);
	cJSON_Delete(req);
	return ok == count ? 0 : 1;
}
