/*
 * bench_inproc.c - the time job_submit/hpcbridge spends deciding a job
 * inside slurmctld (hb_inproc_decide(), slurm-plugin/inproc.c), measured
 * without slurmctld: the plugin reads a snapshot published here, and each
 * job is the one bench_plugin.sh submits (`sbatch -H -p gpu --wrap=true`:
 * its wrapped script, and this process's own environment, as sbatch
 * sends its caller's).  Partition gpu bursts (the proxy is made, its
 * script carrying the request); with "slurm" as the second argument the
 * job goes to partition batch and stays (only the tag).
 *
 * After each job (or every EVERY jobs) the notices are sent and read
 * back, off the clock, as the plugin's thread (every 2 ms while notices
 * wait) and the daemon would.  With "cold" as
 * the third argument, 64 MiB are written between two jobs (off the
 * clock), so that each decision finds the caches as slurmctld does when
 * other processes ran since its last job.  Printed: the decisions, p50,
 * p90, p99 and max in microseconds.
 *
 * usage: bench_inproc [JOBS] [gpu|slurm] [hot|cold] [EVERY]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/error.h"
#include "hpcbridge/snapfile.h"
#include "hpcbridge/snapshot.h"
#include "slurm-plugin/hbplugin.h"
#include "unit/slurmfix.h"

extern char **environ;

#define EVICT_BYTES (64u << 20)

/* bench daemon's rule (tests/bench/lib/daemon.sh): gpu bursts, the rest
 * stays; with costs and an account budget, so the whole decision runs */
static const char policy_text[] =
	"version: 1\n"
	"defaults:\n"
	"  prefer: slurm\n"
	"  mem_per_cpu: 1Gi\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch:\n"
	"      max_nodes: 4\n"
	"      node: {cpus: 32, memory: 128Gi}\n"
	"      rates: {cpu_hour: 1.00}\n"
	"    gpu:\n"
	"      max_nodes: 4\n"
	"      node: {cpus: 32, memory: 128Gi}\n"
	"kubernetes:\n"
	"  namespace: hpc\n"
	"  max_nodes: 64\n"
	"  node: {cpus: 64, memory: 256Gi}\n"
	"  startup: 2m\n"
	"  rates: {cpu_hour: 0.50, per_job: 0.10}\n"
	"rules:\n"
	"  - name: stay\n"
	"    partition: batch\n"
	"    burst: never\n"
	"  - name: go\n"
	"    partition: gpu\n"
	"    prefer: kubernetes\n";

static char dir[64], snap_path[128], notice_path[128];
static int rx = -1;
static uint64_t version;

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench_inproc: %s: %s\n", what, msg);
	exit(1);
}

static char *a_strdup(const char *s)
{
	return strdup(s);
}

static void a_free(void **p)
{
	free(*p);
	*p = NULL;
}

static const struct hb_slurm_alloc alloc = { a_strdup, a_free };

static void publish(int64_t now_ms, int64_t hi, const char *owner)
{
	struct hb_snapfile_meta m = {
		.version = ++version,
		.written_ms = now_ms,
		.max_age_ms = 3600 * 1000,
		.lease_lo = 1,
		.lease_hi = (uint64_t)hi,
	};
	struct hb_err err = { 0 };
	char cfg[512];

	snprintf(cfg, sizeof(cfg),
		 "daemon:\n  socket: %s/hbd.sock\nslurm:\n  burst_partition: "
		 "burst\nremote:\n  backend: local\n",
		 dir);
	if (hb_fix_publish(snap_path, &m,
			   &(struct hb_fix_body){ .policy = policy_text,
						  .config = cfg,
						  .daemon_socket = "/nonexistent",
						  .notice_socket = notice_path,
						  .allowance = (int64_t)1e15,
						  .owner = owner },
			   &err))
		die("publish", err.msg);
}

/* Read and drop every notice waiting; the nonce of a hello into nonce. */
static size_t drain(char *nonce, size_t len)
{
	static char buf[256 * 1024];
	size_t n = 0;
	ssize_t k;

	while ((k = recv(rx, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
		n++;
		if (nonce) {
			cJSON *j;
			const cJSON *s;

			buf[k] = '\0';
			j = cJSON_Parse(buf);
			s = cJSON_GetObjectItemCaseSensitive(j, "nonce");
			if (cJSON_IsString(s))
				snprintf(nonce, len, "%s", s->valuestring);
			cJSON_Delete(j);
		}
	}
	return n;
}

/* Send what waits and read it, until nothing waits: the notices the
 * daemon got. */
static size_t deliver(struct hb_inproc *ip)
{
	size_t n = 0;

	while (hb_inproc_flush(ip) > 0)
		n += drain(NULL, 0);
	return n + drain(NULL, 0);
}

static size_t count_env(void)
{
	size_t n = 0;

	while (environ[n])
		n++;
	return n;
}

/* The job `sbatch -H -p PART --wrap=true -o /dev/null` sends. */
static void job(job_desc_msg_t *jd, const char *partition)
{
	static char *argv0[] = { "/usr/bin/sbatch", NULL };

	hb_fix_job_desc(jd);
	jd->priority = 0; /* -H */
	jd->group_id = 1000;
	jd->partition = strdup(partition);
	jd->script = strdup("#!/bin/sh\n"
			    "# This script was created by sbatch --wrap.\n\n"
			    "true\n");
	jd->name = strdup("wrap");
	jd->work_dir = strdup("/home/user");
	jd->std_out = strdup("/dev/null");
	jd->argv = argv0;
	jd->argc = 1;
	jd->environment = environ;
	jd->env_size = (uint32_t)count_env();
}

static void job_free(job_desc_msg_t *jd)
{
	free(jd->partition);
	free(jd->script);
	free(jd->name);
	free(jd->work_dir);
	free(jd->std_out);
	free(jd->admin_comment);
	free(jd->comment);
}

int main(int argc, char **argv)
{
	const char *part = argc > 2 && !strcmp(argv[2], "slurm") ? "batch"
								  : "gpu";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hb_inproc *ip = NULL;
	struct hb_err err = { 0 };
	char nonce[32] = "";
	int64_t now_ms = hb_clock_wall_ms();
	size_t decided = 0;
	long jobs = 20000;
	int cold = argc > 3 && !strcmp(argv[3], "cold");
	long every = 1;
	char *evict = NULL;
	double *t;

	if (argc > 1 && parse_long(argv[1], 1, 10000000, &jobs))
		die("usage", "bench_inproc [JOBS] [gpu|slurm] [hot|cold] [EVERY]");
	if (argc > 4 && parse_long(argv[4], 1, 65536, &every))
		die("usage", "EVERY: 1 to 65536 jobs");
	if (cold && !(evict = malloc(EVICT_BYTES)))
		die("memory", "out of memory");
	if (!(t = calloc((size_t)jobs, sizeof(*t))))
		die("memory", "out of memory");
	snprintf(dir, sizeof(dir), "/tmp/hb-bench-inproc.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp", "failed");
	snprintf(snap_path, sizeof(snap_path), "%s/placement.snap", dir);
	snprintf(notice_path, sizeof(notice_path), "%s/notice.sock", dir);
	memcpy(sa.sun_path, notice_path, strlen(notice_path) + 1);
	rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rx < 0 || bind(rx, (struct sockaddr *)&sa, sizeof(sa)))
		die("notice socket", "cannot bind");
	if (hb_inproc_start(snap_path, geteuid(), 0, &ip, &err))
		die("start", err.msg);
	/* the start: a lease that is nobody's, the plugin's hello, then the
	 * lease for its nonce */
	publish(now_ms, jobs + 1, "");
	hb_inproc_refresh(ip);
	drain(nonce, sizeof(nonce));
	if (!nonce[0])
		die("start", "the plugin sent no hello");
	publish(now_ms, jobs + 1, nonce);
	if (hb_inproc_refresh(ip))
		die("start", "the snapshot was not taken in");

	for (long i = 0; i < jobs; i++) {
		struct hb_inproc_result r;
		job_desc_msg_t jd;
		double t0;

		if (evict) {
			memset(evict, (int)i, EVICT_BYTES);
			__asm__ volatile("" : : "r"(evict) : "memory");
		}
		job(&jd, part);
		t0 = now();
		if (hb_inproc_decide(ip, &jd, &alloc, now_ms, &r, &err))
			die("decide", err.msg);
		t[i] = (now() - t0) * 1e6;
		job_free(&jd);
		if (i % every == every - 1)
			decided += deliver(ip);
	}
	decided += deliver(ip);
	qsort(t, (size_t)jobs, sizeof(*t), cmp_double);
	printf("| %s (%zu env vars), %s | %ld | %.1f | %.1f | %.1f | %.1f | %zu |\n",
	       part, count_env(), cold ? "cold" : "hot", jobs, pct(t, (size_t)jobs, 0.5),
	       pct(t, (size_t)jobs, 0.9), pct(t, (size_t)jobs, 0.99),
	       t[jobs - 1], decided);
	hb_inproc_stop(ip);
	close(rx);
	unlink(snap_path);
	unlink(notice_path);
	rmdir(dir);
	free(t);
	free(evict);
	return decided == (size_t)jobs ? 0 : 1;
}
