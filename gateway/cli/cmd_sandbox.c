/*
 * cmd_sandbox.c - hpcbridge sandbox up|down|env [--dir DIR]: a local
 * Slurm with hpcbridge's plugins, and hpcbridged, on loopback.
 *
 * The work is done by scripts/sandbox.sh of the source tree this binary
 * was built from (HPCBRIDGE_SANDBOX_SCRIPT overrides it), given the build
 * directory the binary runs from.  `up` prints `export` lines, so
 * eval "$(hpcbridge sandbox up)" sets the shell up.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define DEFAULT_DIR "/tmp/hpcbridge-sandbox"

static const char usage[] =
	"usage: hpcbridge sandbox up|down|env [--dir DIR]\n"
	"  up    start a real single-node Slurm with hpcbridge's plugins,\n"
	"        the emulated cluster, an S3 server (Swift, bucket\n"
	"        hpcbridge-ckpt; HB_SANDBOX_S3=0: none) and hpcbridged in DIR\n"
	"        (default " DEFAULT_DIR "), and print the environment to\n"
	"        use: eval \"$(hpcbridge sandbox up)\" (KUBECONFIG, SLURM_CONF,\n"
	"        AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...; Debian's aws 2.9\n"
	"        needs --endpoint-url \"$AWS_ENDPOINT_URL\")\n"
	"  down  stop exactly what up started, by PID\n"
	"  env   print the environment again\n";

int hb_cmd_sandbox(int argc, char **argv)
{
	const char *script = getenv("HPCBRIDGE_SANDBOX_SCRIPT");
	const char *dir = DEFAULT_DIR, *verb;
	char exe[PATH_MAX], build[PATH_MAX];
	ssize_t n;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? HB_EXIT_USAGE : HB_EXIT_OK;
	}
	verb = argv[1];
	if (strcmp(verb, "up") && strcmp(verb, "down") && strcmp(verb, "env")) {
		fputs(usage, stderr);
		return HB_EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strncmp(argv[i], "--dir=", 6)) {
			dir = argv[i] + 6;
		} else {
			fputs(usage, stderr);
			return HB_EXIT_USAGE;
		}
	}
	/* BUILD/bin/hpcbridge -> BUILD */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		perror("hpcbridge sandbox: /proc/self/exe");
		return HB_EXIT_INPUT;
	}
	exe[n] = '\0';
	snprintf(build, sizeof(build), "%s", dirname(dirname(exe)));
	if (!script)
		script = HB_SOURCE_DIR "/scripts/sandbox.sh";
	if (access(script, R_OK) != 0) {
		fprintf(stderr,
			"hpcbridge sandbox: cannot read %s (set "
			"HPCBRIDGE_SANDBOX_SCRIPT)\n",
			script);
		return HB_EXIT_INPUT;
	}
	if (!strcmp(verb, "down"))
		execl("/bin/bash", "bash", script, verb, dir, (char *)NULL);
	else
		execl("/bin/bash", "bash", script, verb, dir, build,
		      (char *)NULL);
	perror("hpcbridge sandbox: /bin/bash");
	return HB_EXIT_INPUT;
}
