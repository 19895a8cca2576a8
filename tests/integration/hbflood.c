/*
 * hbflood.c - a hostile local user against hpcbridged, for SECONDS:
 *
 *   hbflood SOCKET SECONDS
 *
 * Three threads at once:
 *   churn  opens connections as fast as it can, holding up to 256 and
 *          closing the oldest (the daemon refuses past its share per uid);
 *   slow   keeps 32 connections that each send one byte of a frame a
 *          second (a header announcing 1 MiB, then its payload);
 *   big    sends frames announcing more than the protocol allows, and
 *          frames of almost 1 MiB left one byte short, as fast as it can.
 * Prints what it did: "connects=N refused=N slow_closed=N big=N".
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *sock_path;
static time_t end_at;
static unsigned long nconnect, nrefused, nslow_closed, nbig;

static int dial(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	__atomic_add_fetch(&nrefused, 1, __ATOMIC_RELAXED);
	return -1;
}

/* A frame header: "HB", version 1, kind 1 (request), length. */
static void header(unsigned char h[8], uint32_t len)
{
	h[0] = 'H';
	h[1] = 'B';
	h[2] = 1;
	h[3] = 1;
	h[4] = (unsigned char)(len >> 24);
	h[5] = (unsigned char)(len >> 16);
	h[6] = (unsigned char)(len >> 8);
	h[7] = (unsigned char)len;
}

static void *churn(void *arg)
{
	int held[256], n = 0, at = 0;

	(void)arg;
	while (time(NULL) < end_at) {
		int fd = dial();

		if (fd < 0) {
			usleep(100);
			continue;
		}
		__atomic_add_fetch(&nconnect, 1, __ATOMIC_RELAXED);
		if (n < 256) {
			held[n++] = fd;
			continue;
		}
		close(held[at]);
		held[at] = fd;
		at = (at + 1) % 256;
	}
	while (n--)
		close(held[n]);
	return NULL;
}

static void *slow(void *arg)
{
	int fds[32], sent[32];
	unsigned char h[8];

	(void)arg;
	header(h, 1024 * 1024);
	for (int i = 0; i < 32; i++) {
		fds[i] = -1;
		sent[i] = 0;
	}
	while (time(NULL) < end_at) {
		for (int i = 0; i < 32; i++) {
			unsigned char b = sent[i] < 8 ? h[sent[i]] : '{';

			if (fds[i] < 0 && (fds[i] = dial()) < 0)
				continue;
			if (send(fds[i], &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
			    1) {
				close(fds[i]);
				fds[i] = -1;
				sent[i] = 0;
				__atomic_add_fetch(&nslow_closed, 1,
						   __ATOMIC_RELAXED);
				continue;
			}
			sent[i]++;
		}
		sleep(1);
	}
	for (int i = 0; i < 32; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return NULL;
}

static void *big(void *arg)
{
	size_t max = 1024 * 1024;
	unsigned char h[8];
	char *payload = malloc(max);
	int held[8] = { -1, -1, -1, -1, -1, -1, -1, -1 }, at = 0;
	struct timeval tmo = { .tv_sec = 2 };

	(void)arg;
	if (!payload)
		return NULL;
	memset(payload, 'x', max);
	payload[0] = '{';
	while (time(NULL) < end_at) {
		int fd = dial();

		if (fd < 0) {
			usleep(1000);
			continue;
		}
		__atomic_add_fetch(&nbig, 1, __ATOMIC_RELAXED);
		if (nbig % 2) {
			/* past the protocol's limit: refused at the header */
			header(h, 64u * 1024 * 1024);
			send(fd, h, 8, MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		/* almost a whole 1 MiB frame, held one byte short */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
		header(h, (uint32_t)max);
		if (send(fd, h, 8, MSG_NOSIGNAL) == 8)
			for (size_t off = 0; off < max - 1;) {
				ssize_t n = send(fd, payload + off,
						 max - 1 - off, MSG_NOSIGNAL);

				if (n <= 0)
					break;
				off += (size_t)n;
			}
		if (held[at] >= 0)
			close(held[at]);
		held[at] = fd;
		at = (at + 1) % 8;
	}
	for (int i = 0; i < 8; i++)
		if (held[i] >= 0)
			close(held[i]);
	free(payload);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	char *end;
	long s;

	if (argc != 3) {
		fprintf(stderr, "usage: hbflood SOCKET SECONDS\n");
		return 2;
	}
	sock_path = argv[1];
	errno = 0;
	s = strtol(argv[2], &end, 10);
	if (errno || *end || s < 1 || s > 86400) {
		fprintf(stderr, "hbflood: SECONDS: 1 to 86400\n");
		return 2;
	}
	end_at = time(NULL) + s;
	pthread_create(&t[0], NULL, churn, NULL);
	pthread_create(&t[1], NULL, slow, NULL);
	pthread_create(&t[2], NULL, big, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("connects=%lu refused=%lu slow_closed=%lu big=%lu\n", nconnect,
	       nrefused, nslow_closed, nbig);
	return 0;
}
