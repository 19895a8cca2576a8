/*
 * bench_kube_track.c - the Kubernetes backend tracking many burst jobs
 * through its one watch, against hb-kubemu.
 *
 * 1. Latency.  -n jobs (1,000) are started through the backend, exactly as
 *    hpcbridged starts them (translated from an sbatch script, created by
 *    the backend's workers).  Then another client changes every MPIJob's
 *    status, one after the other as fast as the API server takes them
 *    (Running; then, in a second measure, Succeeded), while this thread
 *    polls the backend's status of every job, as the shadows do.  The
 *    latency of a job is from just before its status patch was sent to the
 *    first poll that shows the new phase; Succeeded also waits for the
 *    backend to read the launcher's exit code (there is no launcher pod:
 *    the emulator runs without its operator, so that read is one list).
 *    Reported: p50, p99 and max per run, and the median over -r runs.
 * 2. Memory.  The backend then tracks -m jobs (10,000) in all, started
 *    -n at a time: the VmRSS and VmHWM of this process (the backend, its
 *    client, its threads and its job table; the daemon's own state is
 *    apart) are read once every job is known.
 *
 * usage: bench_kube_track [-e HB_KUBEMU] [-n JOBS] [-r RUNS] [-m TOTAL]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/remote.h"
#include "hpcbridge/config.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/log.h"

#include "bench.h"

static const char script[] = "#!/bin/sh\n"
			     "#SBATCH --job-name=track\n"
			     "#SBATCH --nodes=1\n"
			     "#SBATCH --ntasks=2\n"
			     "#SBATCH --time=10\n"
			     "srun ./a.out\n";

/* A line "Key:   N kB" of /proc/self/status, in KiB; -1 if missing. */
static long proc_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

static pid_t emu_pid;
static char dir[64];

static int start_emu(const char *emu)
{
	char pf[128], kc[128];
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/bench-track.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(pf, sizeof(pf), "%s/port", dir);
	snprintf(kc, sizeof(kc), "%s/kubeconfig", dir);
	emu_pid = fork();
	if (emu_pid < 0)
		return -1;
	if (emu_pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		/* The emulator goes when the bench does, however it ends. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(emu, emu, "--port-file", pf, "--kubeconfig-out", kc,
		      "--log-level", "warn", "--watch-window", "200000",
		      "--no-operator", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		if (!stat(pf, &st) && st.st_size > 0)
			return 0;
		usleep(50000);
	}
	return -1;
}

static void stop_emu(void)
{
	char cmd[128];

	if (emu_pid > 0) {
		kill(emu_pid, SIGTERM);
		waitpid(emu_pid, NULL, 0);
	}
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_kube_track: cannot remove %s\n",
				dir);
	}
}

struct patcher {
	struct hb_kube *k;
	char (*ids)[32];
	size_t n;
	const char *type; /* the condition to set */
	double *sent;	  /* when each patch was sent */
	int errors;
};

static void *patch_main(void *arg)
{
	struct patcher *p = arg;

	for (size_t i = 0; i < p->n; i++) {
		struct hb_err err = { 0 };
		cJSON *patch = cJSON_CreateObject(), *st, *conds, *c;

		st = cJSON_AddObjectToObject(patch, "status");
		conds = cJSON_AddArrayToObject(st, "conditions");
		c = cJSON_CreateObject();
		cJSON_AddItemToArray(conds, c);
		cJSON_AddStringToObject(c, "type", p->type);
		cJSON_AddStringToObject(c, "status", "True");
		cJSON_AddStringToObject(c, "reason", "Bench");
		cJSON_AddStringToObject(c, "lastTransitionTime",
					"2026-11-21T00:00:00Z");
		cJSON_AddStringToObject(st, "startTime",
					"2026-11-21T00:00:00Z");
		p->sent[i] = now();
		if (hb_kube_patch_status(p->k, &hb_kube_mpijob, "bench",
					 p->ids[i], patch, NULL, &err)) {
			fprintf(stderr, "patch %s: %s\n", p->ids[i], err.msg);
			p->errors++;
		}
		cJSON_Delete(patch);
	}
	return NULL;
}

/* Start ids[0..n) through be; wait until the cluster holds them all. */
static int start_jobs(struct hb_remote *be, struct hb_kube *k,
		      const struct hb_config *cfg, char (*ids)[32], size_t n,
		      size_t total_before)
{
	struct hb_remote_job j = { .script = script,
				   .script_len = sizeof(script) - 1,
				   .array_task = -1,
				   .user = "bench",
				   .account = "physics",
				   .workdir = "/tmp",
				   .cfg = cfg };
	struct hb_err err = { 0 };

	for (size_t i = 0; i < n; i++) {
		j.id = ids[i];
		if (hb_remote_start(be, &j, &err)) {
			fprintf(stderr, "start %s: %s\n", ids[i], err.msg);
			return -1;
		}
	}
	for (int t = 0; t < 1200; t++) {
		cJSON *list = NULL;
		const cJSON *rest;
		size_t have;

		/* One item and the count of the rest: the bench's own
		 * memory stays out of the figures. */
		memset(&err, 0, sizeof(err));
		if (hb_kube_list(k, &hb_kube_mpijob, "bench", NULL, NULL, 1,
				 NULL, &list, &err)) {
			fprintf(stderr, "list: %s\n", err.msg);
			return -1;
		}
		rest = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(list, "metadata"),
			"remainingItemCount");
		have = (size_t)cJSON_GetArraySize(
			       cJSON_GetObjectItemCaseSensitive(list, "items")) +
		       (cJSON_IsNumber(rest) ? (size_t)rest->valuedouble : 0);
		cJSON_Delete(list);
		if (have >= total_before + n)
			return 0;
		usleep(100000);
	}
	{
		struct hb_remote_status st;

		memset(&err, 0, sizeof(err));
		hb_remote_status(be, ids[0], &st, &err);
		fprintf(stderr,
			"the MPIJobs were not all created (%s: %s %s)\n",
			ids[0], hb_remote_phase_name(st.phase),
			st.message[0] ? st.message : err.msg);
	}
	return -1;
}

/* Patch every job to type; poll until each shows want.  Latencies into
 * lat (seconds).  0 or -1. */
static int measure(struct hb_remote *be, struct hb_kube *k, char (*ids)[32],
		   size_t n, const char *type, enum hb_remote_phase want,
		   double *lat)
{
	struct patcher p = { .k = k, .ids = ids, .n = n, .type = type };
	double *seen = calloc(n, sizeof(double));
	size_t left = n;
	pthread_t th;
	double t0 = now();

	p.sent = calloc(n, sizeof(double));
	if (!seen || !p.sent || pthread_create(&th, NULL, patch_main, &p)) {
		free(seen);
		free(p.sent);
		return -1;
	}
	while (left && now() - t0 < 120) {
		for (size_t i = 0; i < n; i++) {
			struct hb_remote_status st;
			struct hb_err err = { 0 };

			if (seen[i] > 0 ||
			    hb_remote_status(be, ids[i], &st, &err) ||
			    st.phase != want)
				continue;
			seen[i] = now();
			left--;
		}
		usleep(1000);
	}
	pthread_join(th, NULL);
	for (size_t i = 0; i < n; i++)
		lat[i] = seen[i] > 0 ? seen[i] - p.sent[i] : 1e9;
	free(seen);
	free(p.sent);
	if (left || p.errors) {
		fprintf(stderr, "%zu jobs never showed %s; %d patch errors\n",
			left, type, p.errors);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *emu = "build/bin/hb-kubemu";
	long n = 1000, runs = 3, total = 10000;
	struct hb_remote_kube_opts ko = { .ns = "bench", .workers = 4 };
	struct hb_remote *be = NULL;
	struct hb_kube_config *kc = NULL;
	struct hb_kube *k = NULL;
	struct hb_config cfg;
	struct hb_err err = { 0 };
	char kcpath[128], (*ids)[32] = NULL;
	double *lat = NULL, p99s[2][64];
	size_t started = 0;
	int opt, rc = 1;

	while ((opt = getopt(argc, argv, "e:n:r:m:")) != -1) {
		int bad = 0;

		switch (opt) {
		case 'e':
			emu = optarg;
			break;
		case 'n':
			bad = parse_long(optarg, 1, 100000, &n);
			break;
		case 'r':
			bad = parse_long(optarg, 1, 64, &runs);
			break;
		case 'm':
			bad = parse_long(optarg, 0, 1000000, &total);
			break;
		default:
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "usage: bench_kube_track [-e HB_KUBEMU] "
					"[-n JOBS] [-r RUNS] [-m TOTAL]\n");
			return 2;
		}
	}
	hb_log_set_level(HB_LOG_WARN);
	if (total < n * runs)
		total = n * runs;
	if (hb_config_defaults(&cfg) || start_emu(emu)) {
		fprintf(stderr, "cannot start %s\n", emu);
		goto out;
	}
	snprintf(kcpath, sizeof(kcpath), "%s/kubeconfig", dir);
	ko.kubeconfig = kcpath;
	if (hb_remote_kube_new(&ko, &be, &err) ||
	    hb_kube_config_load(kcpath, NULL, &kc, &err) ||
	    hb_kube_new(kc, NULL, &k, &err)) {
		fprintf(stderr, "bench_kube_track: %s\n", err.msg);
		goto out;
	}
	ids = calloc((size_t)total, sizeof(*ids));
	lat = calloc((size_t)n, sizeof(double));
	if (!ids || !lat)
		goto out;
	for (long i = 0; i < total; i++)
		snprintf(ids[i], sizeof(ids[i]), "hb-%07ld", i + 1);

	printf("bench_kube_track: %ld jobs per run, %ld runs, one watch; "
	       "latency = patch sent -> backend status shows it\n\n",
	       n, runs);
	printf("| run | change | p50 ms | p99 ms | max ms |\n"
	       "|---|---|---:|---:|---:|\n");
	for (long r = 0; r < runs; r++) {
		static const struct {
			const char *type;
			enum hb_remote_phase phase;
		} m[2] = { { "Running", HB_REMOTE_RUNNING },
			   { "Succeeded", HB_REMOTE_SUCCEEDED } };
		char(*rids)[32] = ids + started;

		if (start_jobs(be, k, &cfg, rids, (size_t)n, started))
			goto out;
		started += (size_t)n;
		for (int x = 0; x < 2; x++) {
			if (measure(be, k, rids, (size_t)n, m[x].type,
				    m[x].phase, lat))
				goto out;
			qsort(lat, (size_t)n, sizeof(double), cmp_double);
			p99s[x][r] = pct(lat, (size_t)n, 0.99);
			printf("| %ld | %s | %.1f | %.1f | %.1f |\n", r + 1,
			       m[x].type, pct(lat, (size_t)n, 0.5) * 1e3,
			       p99s[x][r] * 1e3, lat[n - 1] * 1e3);
			fflush(stdout);
		}
	}
	for (int x = 0; x < 2; x++)
		qsort(p99s[x], (size_t)runs, sizeof(double), cmp_double);
	printf("\nmedian p99 over %ld runs: Running %.1f ms, Succeeded "
	       "%.1f ms\n",
	       runs, pct(p99s[0], (size_t)runs, 0.5) * 1e3,
	       pct(p99s[1], (size_t)runs, 0.5) * 1e3);

	if ((size_t)total > started) {
		long before = proc_kb("VmRSS");

		/* In batches of n, as shadows start jobs over time rather
		 * than all at once. */
		while (started < (size_t)total) {
			size_t b = (size_t)total - started < (size_t)n
					   ? (size_t)total - started
					   : (size_t)n;

			if (start_jobs(be, k, &cfg, ids + started, b, started))
				goto out;
			started += b;
		}
		printf("\nmemory: VmRSS %ld kB at %zu jobs ", before,
		       (size_t)(n * runs));
	} else {
		printf("\nmemory: ");
	}
	/* Every job known to the backend. */
	for (int t = 0; t < 600; t++) {
		size_t known = 0;

		for (size_t i = 0; i < started; i++) {
			struct hb_remote_status st;
			struct hb_err e2 = { 0 };

			known += hb_remote_status(be, ids[i], &st, &e2) == 0 &&
				 !strstr(st.message, "waiting");
		}
		if (known == started)
			break;
		usleep(100000);
	}
	printf("-> VmRSS %ld kB, VmHWM %ld kB at %zu tracked jobs\n",
	       proc_kb("VmRSS"), proc_kb("VmHWM"), started);
	rc = 0;
out:
	hb_remote_free(be);
	hb_kube_free(k);
	hb_kube_config_free(kc);
	hb_config_free(&cfg);
	free(ids);
	free(lat);
	stop_emu();
	return rc;
}
