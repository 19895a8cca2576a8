/*
 * hpcbridged.c - the hpcbridge daemon: options, configuration, start-up
 * (detached unless --foreground), the pid file, the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "gateway/sides/slurm.h"
#include "hpcbridge/mirror.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/file.h"
#include "hpcbridge/log.h"
#include "hpcbridge/slurmc.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hpcbridged --config FILE [--foreground] [--socket "
		"PATH]\n"
		"                  [--state PATH] [--pidfile PATH]\n"
		"                  [--idle-timeout MS] [--max-connections N]\n"
		"       hpcbridged --config FILE --check\n"
		"\n"
		"The hpcbridge daemon: decides where Slurm jobs run, and "
		"keeps\n"
		"their state.  Logs are JSON lines on standard error.\n"
		"\n"
		"  --config FILE        the site configuration "
		"(hpcbridge.yaml);\n"
		"                       re-read on SIGHUP\n"
		"  --foreground         do not detach\n"
		"  --socket PATH        API socket (overrides daemon.socket)\n"
		"  --state PATH         state database (overrides "
		"daemon.state)\n"
		"  --pidfile PATH       write the daemon's pid here\n"
		"  --idle-timeout MS    close idle connections after MS "
		"(60000)\n"
		"  --max-connections N  refuse connections past N (1024)\n"
		"  --check              check the configuration and exit\n");
}

/* Read and check path into cfg; its text stays in b (the daemon's
 * snapshot carries it to the plugin). */
static int read_config(const char *path, struct hb_config *cfg,
		       struct hb_buf *b)
{
	struct hb_err err = { 0 };
	int rc;

	hb_buf_init(b, HB_CONFIG_FILE_MAX);
	if (!path)
		return hb_config_defaults(cfg);
	rc = hb_file_read(path, HB_CONFIG_FILE_MAX, NULL, b, &err);
	if (!rc)
		rc = hb_config_parse(b->data ? b->data : "", b->len, path, cfg,
				     &err);
	if (rc)
		fprintf(stderr, "hpcbridged: %s\n",
			err.msg[0] ? err.msg : hb_strerror(rc));
	return rc;
}

static int parse_num(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return HB_EINVAL;
	*out = v;
	return 0;
}

/*
 * The pid file is not followed through a symlink (O_NOFOLLOW), nor
 * truncated until it is known to be a plain file of the daemon's own
 * with one link: a hard link to another file is left alone.
 */
static int write_pidfile(const char *path)
{
	struct stat sb;
	char buf[32];
	int fd, n;

	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return HB_EIO;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_nlink != 1 ||
	    sb.st_uid != geteuid()) {
		close(fd);
		errno = EPERM;
		return HB_EIO;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || write(fd, buf, (size_t)n) != n) {
		close(fd);
		return HB_EIO;
	}
	return close(fd) < 0 ? HB_EIO : 0;
}

/* Take every descriptor the hard limit allows: each connection is one
 * (the daemon still keeps its own cap, daemon.c's fit_fd_limit()). */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			hb_log(HB_LOG_WARN, "cannot raise RLIMIT_NOFILE: %s",
			       strerror(errno));
	}
}

/*
 * Detach: the parent waits for the child to say it is serving (one byte
 * on a pipe) so that start-up errors reach the caller's exit status.
 * Returns in the child with *ready_fd set; the parent exits.
 */
static void detach(int *ready_fd)
{
	int p[2];
	pid_t pid;
	char c = 0;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("hpcbridged: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("hpcbridged: fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		exit(n == 1 && c == 'R' ? 0 : 1);
	}
	close(p[0]);
	if (setsid() < 0)
		perror("hpcbridged: setsid");
	if (chdir("/") < 0)
		perror("hpcbridged: chdir");
	*ready_fd = p[1];
}

/*
 * Keep freed heap instead of handing it back after every batch.  With
 * glibc's default (a trim threshold that follows the largest freed
 * block), each batch of decisions grew the heap with brk and shrank it
 * again; on a virtual machine every shrink is a TLB shootdown on every
 * CPU, and that cost the daemon half its throughput with 256 callers
 * (docs/benchmarks.md).  What is kept is bounded by the busiest batch.
 */
static void heap_settings(void)
{
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "state", required_argument, NULL, 'S' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "max-connections", required_argument, NULL, 'm' },
		{ "check", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct hb_daemon_opts opts = { 0 };
	struct hb_buf text;
	struct hb_err err = { 0 };
	struct hb_config cfg = { 0 };
	struct hb_daemon *d = NULL;
	struct hb_slurm_side *slurm = NULL;
	struct hb_slurm_side_ops backend;
	const char *pidfile = NULL;
	int foreground = 0, check = 0, ready_fd = -1, opt, rc, devnull;
	long v;

	hb_slurmc_child_main(argc, argv); /* returns unless it is that child */
	hb_mirror_agent_main(argc, argv); /* the same for a checkpoint agent */
	heap_settings();
	while ((opt = getopt_long(argc, argv, "c:fs:S:p:h", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'c':
			opts.config_path = optarg;
			break;
		case 'f':
			foreground = 1;
			break;
		case 's':
			opts.socket_path = optarg;
			break;
		case 'S':
			opts.state_path = optarg;
			break;
		case 'p':
			pidfile = optarg;
			break;
		case 'i':
			if (parse_num(optarg, 1, 86400000, &v)) {
				fprintf(stderr, "hpcbridged: --idle-timeout: "
						"1 to 86400000 ms\n");
				return 2;
			}
			opts.idle_ms = (int)v;
			break;
		case 'm':
			if (parse_num(optarg, 1, 1000000, &v)) {
				fprintf(stderr,
					"hpcbridged: --max-connections: "
					"1 to 1000000\n");
				return 2;
			}
			opts.max_conns = (unsigned)v;
			break;
		case 'k':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("hpcbridged %s\n", HB_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !opts.config_path) {
		usage(stderr);
		return 2;
	}
	if (read_config(opts.config_path, &cfg, &text)) {
		hb_buf_free(&text);
		return 1;
	}
	opts.config_text = text.data;
	if (check) {
		hb_buf_free(&text);
		hb_config_free(&cfg);
		printf("%s: ok\n", opts.config_path);
		return 0;
	}
	if (!foreground)
		detach(&ready_fd);
	raise_nofile();
	/* before any thread starts: the loop reads them from a signalfd */
	if (hb_daemon_block_signals()) {
		fprintf(stderr, "hpcbridged: cannot block signals\n");
		return 1;
	}
	/* The Slurm side, opened before any thread starts (the Slurm client
	 * checks slurm.conf in a child process).  Without a slurm.conf the
	 * daemon still serves decisions; submit is then refused, and cancel
	 * works for jobs without a Slurm job. */
	if (hb_slurm_side_open(NULL, &slurm, &err) == 0)
		hb_slurm_side_ops(slurm, &backend);
	else
		hb_log(HB_LOG_WARN, "no Slurm client: %s",
		       err.msg[0] ? err.msg : "unavailable");
	memset(&err, 0, sizeof(err));
	rc = hb_daemon_new(&opts, &cfg, &d, &err);
	hb_buf_free(&text); /* copied */
	opts.config_text = NULL;
	if (rc) {
		hb_log(HB_LOG_ERROR, "cannot start: %s",
		       err.msg[0] ? err.msg : hb_strerror(rc));
		hb_slurm_side_close(slurm);
		return 1;
	}
	if (slurm)
		hb_daemon_set_slurm(d, &backend);
	if (pidfile && write_pidfile(pidfile)) {
		hb_log(HB_LOG_ERROR, "cannot write the pid file %s: %s",
		       pidfile, strerror(errno));
		hb_daemon_free(d);
		hb_slurm_side_close(slurm);
		return 1;
	}
	if (ready_fd >= 0) {
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
			close(devnull);
		}
		if (write(ready_fd, "R", 1) != 1)
			hb_log(HB_LOG_WARN, "could not tell the parent");
		close(ready_fd);
	}
	rc = hb_daemon_run(d);
	hb_daemon_free(d);
	hb_slurm_side_close(slurm);
	if (pidfile)
		unlink(pidfile);
	return rc ? 1 : 0;
}
