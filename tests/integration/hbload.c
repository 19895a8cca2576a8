/*
 * hbload.c - load for hpcbridged: T threads send R "decide" requests each
 * and report decisions per second.
 *
 *   hbload SOCKET THREADS REQUESTS [oneshot|blocking]
 *
 * Each thread keeps one connection and one request in flight, as the
 * job_submit plugin does, and waits for each reply in poll(), as the
 * project's client (hb_proto_call_on) does.  "oneshot" opens a connection
 * per request (hb_proto_call), as the CLI does.  "blocking" waits in a
 * blocking recv() instead of poll(), as hbload did before 2026-11-25
 * night: a caller asleep in recv() on a UNIX stream socket is also woken
 * when the daemon reads its request (the kernel wakes every sleeper on
 * the socket when its send buffer frees), which costs the daemon's loop
 * some 5 µs a request that the plugin does not make it pay.  Prints one
 * line: "N decisions in S s: R/s"; exits 1 if any request failed.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/proto.h"

static const char *sock_path;
static long nreq;
static int oneshot, blocking;
static int failures;

static const char req_json[] =
	"{\"op\":\"decide\",\"user\":\"alice\",\"uid\":1000,"
	"\"account\":\"physics\",\"partition\":\"gpu\","
	"\"slurm_job_name\":\"train\",\"time_limit_min\":60,"
	"\"script\":\"#!/bin/bash\\n#SBATCH -N 2\\nsrun ./a.out\\n\"}";

static int connect_to(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Send one framed request and read one reply on fd; 0 if it said ok. */
static int round_trip(int fd, const struct hb_buf *frame)
{
	char buf[65536];
	size_t have = 0, flen;
	const char *payload;
	size_t plen;
	ssize_t n;

	if (send(fd, frame->data, frame->len, MSG_NOSIGNAL) !=
	    (ssize_t)frame->len)
		return -1;
	for (;;) {
		if (have && hb_proto_peek(buf, have, 0, NULL, &payload, &plen,
					  &flen, NULL) == 0)
			break;
		if (!blocking) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -1;
		}
		n = recv(fd, buf + have, sizeof(buf) - have, 0);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	return memmem(payload, plen, "\"ok\":true", 9) ? 0 : -1;
}

static void *worker(void *arg)
{
	struct hb_buf frame;
	cJSON *req = cJSON_Parse(req_json), *reply;
	int fd = -1, bad = 0;

	(void)arg;
	hb_buf_init(&frame, 0);
	hb_proto_frame(&frame, HB_PROTO_REQUEST, req_json, strlen(req_json));
	for (long i = 0; i < nreq; i++) {
		if (oneshot) {
			reply = NULL;
			if (hb_proto_call(sock_path, req, 5000, &reply, NULL) ||
			    hb_proto_reply_status(reply, NULL))
				bad++;
			cJSON_Delete(reply);
			continue;
		}
		if (fd < 0 && (fd = connect_to()) < 0) {
			bad++;
			continue;
		}
		if (round_trip(fd, &frame)) {
			bad++;
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	cJSON_Delete(req);
	hb_buf_free(&frame);
	__atomic_add_fetch(&failures, bad, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t th[256];
	long nthreads;
	char *end;
	double s;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: hbload SOCKET THREADS REQUESTS "
				"[oneshot|blocking]\n");
		return 2;
	}
	sock_path = argv[1];
	errno = 0;
	nthreads = strtol(argv[2], &end, 10);
	if (errno || *end)
		nthreads = 0;
	nreq = strtol(argv[3], &end, 10);
	if (errno || *end)
		nreq = 0;
	oneshot = argc == 5 && !strcmp(argv[4], "oneshot");
	blocking = argc == 5 && !strcmp(argv[4], "blocking");
	if (argc == 5 && !oneshot && !blocking) {
		fprintf(stderr, "hbload: the last argument is oneshot or "
				"blocking\n");
		return 2;
	}
	if (nthreads < 1 || nthreads > 256 || nreq < 1) {
		fprintf(stderr, "hbload: 1..256 threads, >= 1 request\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (long i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%ld decisions in %.2f s: %.0f/s (%d failed)\n", nthreads * nreq,
	       s, (double)(nthreads * nreq) / s, failures);
	return failures ? 1 : 0;
}
