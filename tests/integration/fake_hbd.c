/*
 * fake_hbd.c - a stand-in for hpcbridged's "decide" op, for the plugin
 * tests (tests/integration/plugins.test.sh).
 *
 *   fake_hbd SOCKET LOG MODEFILE
 *
 * Listens on the UNIX socket SOCKET and serves one request per
 * connection.  Each request is appended to LOG as one line of JSON (the
 * request as received).  The reply depends on the first line of MODEFILE,
 * read for every request, so a test switches behaviour without a restart:
 *
 *   slurm                       {"ok":true,"target":"slurm",...}
 *   kubernetes PART MINUTES     a proxy in partition PART with that time
 *                               limit (default burst, 17)
 *   refuse                      {"ok":false,"error":{"code":"EPERM",...}}
 *   garbage                     bytes that are not a frame, then close
 *   badjson                     a frame whose payload is not JSON
 *   hang                        read the request, never answer
 *   slow MS                     wait MS milliseconds, then as "slurm"
 *
 * Ids are hb-000001, hb-000002, ... in request order.  Prints "ready" on
 * stdout once it listens.  Exits on SIGTERM/SIGINT.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/proto.h"

#define MAX_HUNG 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR && !stop)
		;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one request frame (2 s at most); its parsed object or NULL. */
static cJSON *read_request(int fd)
{
	struct hb_buf in;
	cJSON *req = NULL;

	hb_buf_init(&in, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		enum hb_proto_kind kind;
		const char *payload;
		size_t plen, flen;
		char chunk[65536];
		ssize_t r;
		int rc;

		rc = hb_proto_peek(in.data, in.len, 0, &kind, &payload, &plen,
				   &flen, NULL);
		if (rc == 0) {
			if (hb_proto_parse(payload, plen, HB_PROTO_REQUEST,
					   &req, NULL))
				req = NULL;
			break;
		}
		if (rc != HB_EAGAIN)
			break;
		if (poll(&p, 1, 2000) <= 0)
			break;
		r = read(fd, chunk, sizeof(chunk));
		if (r <= 0 || hb_buf_append(&in, chunk, (size_t)r))
			break;
	}
	hb_buf_free(&in);
	return req;
}

static int send_reply(int fd, cJSON *reply)
{
	struct hb_buf out;
	char *json = cJSON_PrintUnformatted(reply);
	int rc = -1;

	hb_buf_init(&out, 0);
	if (json && !hb_proto_frame(&out, HB_PROTO_REPLY, json, strlen(json)))
		rc = write_all(fd, out.data, out.len);
	hb_buf_free(&out);
	cJSON_free(json);
	return rc;
}

static void log_request(const char *path, const cJSON *req)
{
	char *json = cJSON_PrintUnformatted(req);
	FILE *f = fopen(path, "a");

	if (f && json)
		fprintf(f, "%s\n", json);
	if (f)
		fclose(f);
	cJSON_free(json);
}

static void read_mode(const char *path, char *mode, size_t len, char *a1,
		      size_t l1, long *num)
{
	FILE *f = fopen(path, "r");
	char line[256] = "", m[64] = "", x[64] = "", y[64] = "";

	snprintf(mode, len, "slurm");
	a1[0] = '\0';
	*num = 0;
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) &&
	    sscanf(line, "%63s %63s %63s", m, x, y) >= 1) {
		snprintf(mode, len, "%s", m);
		if (!strcmp(m, "slow")) {
			*num = strtol(x, NULL, 10);
		} else {
			snprintf(a1, l1, "%s", x);
			*num = strtol(y, NULL, 10);
		}
	}
	fclose(f);
}

/* Serve one connection; 1 if it is kept open (hang), else 0. */
static int serve(int fd, const char *logpath, const char *modepath,
		 unsigned *seq)
{
	char mode[64], a1[64], id[32], text[256];
	cJSON *req = read_request(fd), *reply = NULL, *proxy;
	long num;

	if (!req)
		return 0;
	log_request(logpath, req);
	cJSON_Delete(req);
	read_mode(modepath, mode, sizeof(mode), a1, sizeof(a1), &num);
	snprintf(id, sizeof(id), "hb-%06u", ++*seq);

	if (!strcmp(mode, "hang"))
		return 1;
	if (!strcmp(mode, "garbage")) {
		static const char junk[] =
			"HTTP/1.0 200 OK\r\n\r\n{\"ok\":true}";

		write_all(fd, junk, sizeof(junk) - 1);
		return 0;
	}
	if (!strcmp(mode, "badjson")) {
		struct hb_buf out;
		static const char bad[] = "{\"ok\": tru";

		hb_buf_init(&out, 0);
		if (!hb_proto_frame(&out, HB_PROTO_REPLY, bad, sizeof(bad) - 1))
			write_all(fd, out.data, out.len);
		hb_buf_free(&out);
		return 0;
	}
	if (!strcmp(mode, "slow")) {
		sleep_ms(num);
		snprintf(mode, sizeof(mode), "slurm");
	}
	if (!strcmp(mode, "refuse")) {
		reply = hb_proto_error(HB_EPERM, "fake refusal");
	} else if (!strcmp(mode, "kubernetes")) {
		reply = cJSON_CreateObject();
		cJSON_AddTrueToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "id", id);
		cJSON_AddStringToObject(reply, "target", "kubernetes");
		cJSON_AddStringToObject(reply, "reason", "fake: kubernetes");
		snprintf(text, sizeof(text), "hpcbridge:%s target=kubernetes",
			 id);
		cJSON_AddStringToObject(reply, "admin_comment", text);
		proxy = cJSON_AddObjectToObject(reply, "proxy");
		cJSON_AddStringToObject(proxy, "partition",
					a1[0] ? a1 : "burst");
		cJSON_AddNumberToObject(proxy, "time_limit_min",
					num > 0 ? (double)num : 17);
		cJSON_AddNumberToObject(proxy, "cpus", 1);
		cJSON_AddNumberToObject(proxy, "mem_mb", 64);
		snprintf(text, sizeof(text),
			 "#!/bin/sh\n# hpcbridge proxy\necho proxy-of-%s\n",
			 id);
		cJSON_AddStringToObject(proxy, "script", text);
		snprintf(text, sizeof(text), "hpcbridge:%s kubernetes", id);
		cJSON_AddStringToObject(proxy, "comment", text);
	} else {
		reply = cJSON_CreateObject();
		cJSON_AddTrueToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "id", id);
		cJSON_AddStringToObject(reply, "target", "slurm");
		cJSON_AddStringToObject(reply, "reason", "fake: slurm");
		snprintf(text, sizeof(text), "hpcbridge:%s target=slurm", id);
		cJSON_AddStringToObject(reply, "admin_comment", text);
	}
	if (reply)
		send_reply(fd, reply);
	cJSON_Delete(reply);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sigaction act = { .sa_handler = on_signal };
	int hung[MAX_HUNG], nhung = 0, lfd;
	unsigned seq = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s SOCKET LOG MODEFILE\n", argv[0]);
		return 2;
	}
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "fake_hbd: socket path too long\n");
		return 2;
	}
	memcpy(sa.sun_path, argv[1], strlen(argv[1]) + 1);
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	signal(SIGPIPE, SIG_IGN);

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 64)) {
		perror("fake_hbd: listen");
		return 1;
	}
	chmod(argv[1], 0600);
	printf("ready\n");
	fflush(stdout);

	while (!stop) {
		struct pollfd p = { lfd, POLLIN, 0 };
		int fd;

		if (poll(&p, 1, 200) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (serve(fd, argv[2], argv[3], &seq)) {
			if (nhung == MAX_HUNG) {
				close(hung[0]);
				memmove(hung, hung + 1,
					(MAX_HUNG - 1) * sizeof(int));
				nhung--;
			}
			hung[nhung++] = fd;
		} else {
			close(fd);
		}
	}
	for (int i = 0; i < nhung; i++)
		close(hung[i]);
	close(lfd);
	unlink(argv[1]);
	return 0;
}
