/*
 * bench_wake.c - the floor under a decision's round trip: a bare echo over
 * a UNIX stream socket, the server waiting in epoll_wait() as hpcbridged's
 * loop does and the client in poll() as the plugin does, 1.5 KB each way
 * (about a decide request without the environment).  No daemon, no
 * store: what waking the two processes costs on this machine, back to
 * back and after a pause like the one between two sbatch calls.
 *
 *   bench_wake [N] [GAP_MS] [ROUNDS]
 *
 * Per round, N echoes back to back, then N with GAP_MS milliseconds
 * between them (defaults 400, 8, 3).  Prints one markdown row per round
 * and way: p50, p90 and p99 in microseconds.  Compare with
 * `bench_decide SOCKET N gap=GAP_MS`.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench.h"

#define MSG_BYTES 1500

/* The echo server: until EOF, send back what arrives. */
static void serve(int fd)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	char buf[4096];

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		_exit(1);
	for (;;) {
		struct epoll_event got;
		ssize_t n;

		if (epoll_wait(ep, &got, 1, -1) < 1)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			_exit(n == 0 ? 0 : 1);
		if (write(fd, buf, (size_t)n) != n)
			_exit(1);
	}
}

/* One echo of MSG_BYTES; its time in microseconds, or -1. */
static double echo(int fd, char *buf)
{
	double t0 = now();
	size_t got = 0;

	if (write(fd, buf, MSG_BYTES) != MSG_BYTES)
		return -1;
	while (got < MSG_BYTES) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, -1) < 0)
			return -1;
		n = read(fd, buf + got, MSG_BYTES - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return (now() - t0) * 1e6;
}

/* N echoes, gap_ms apart; prints the row.  0, or -1 on a failed echo. */
static int measure(int fd, double *lat, long n, long gap_ms, long round)
{
	char buf[MSG_BYTES];

	memset(buf, 'x', sizeof(buf));
	for (long i = 0; i < n; i++) {
		if (gap_ms)
			usleep((useconds_t)gap_ms * 1000);
		if ((lat[i] = echo(fd, buf)) < 0)
			return -1;
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	printf("| %ld | %ld | %.0f | %.0f | %.0f |\n", round, gap_ms,
	       pct(lat, (size_t)n, 0.5), pct(lat, (size_t)n, 0.9),
	       pct(lat, (size_t)n, 0.99));
	return 0;
}

int main(int argc, char **argv)
{
	long n = 400, gap_ms = 8, rounds = 3;
	int sv[2], status, rc = 0;
	double *lat;
	pid_t pid;

	if (argc > 4 || (argc > 1 && parse_long(argv[1], 1, 1000000, &n)) ||
	    (argc > 2 && parse_long(argv[2], 0, 10000, &gap_ms)) ||
	    (argc > 3 && parse_long(argv[3], 1, 1000, &rounds))) {
		fprintf(stderr, "usage: bench_wake [N] [GAP_MS] [ROUNDS]\n");
		return 2;
	}
	lat = calloc((size_t)n, sizeof(*lat));
	if (!lat || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sv[0]);
		serve(sv[1]);
	}
	close(sv[1]);
	printf("| round | gap ms | p50 µs | p90 µs | p99 µs |\n");
	printf("|---:|---:|---:|---:|---:|\n");
	for (long r = 1; r <= rounds && !rc; r++) {
		rc = measure(sv[0], lat, n, 0, r);
		if (!rc && gap_ms)
			rc = measure(sv[0], lat, n, gap_ms, r);
	}
	close(sv[0]); /* the server reads EOF and exits */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		rc = -1;
	free(lat);
	if (rc)
		fprintf(stderr, "bench_wake: the echo failed\n");
	return rc ? 1 : 0;
}
