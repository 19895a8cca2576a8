/*
 * bench_kubemu.c - how many MPIJobs per second hb-kubemu creates.
 *
 * Starts the emulator (or uses one at -u URL), then POSTs MPIJobs to it
 * over keep-alive HTTP with libcurl, from -c client threads (one
 * connection each).  Every create is a full one: the body is an
 * hpcbridge-shaped MPIJob of about 4 KiB (with a launcher script, labels
 * and annotations), parsed, defaulted and validated against the real CRD
 * schema, given managed fields and stored; the reply is the stored
 * object.  A run is -n creates in a fresh namespace; the rate is the
 * median of -r runs, with the spread, and the latency of one create is
 * p50/p99 over every create of every run.  The emulator runs without its
 * MPI Operator, and the jobs name another controller in managedBy; with
 * -o the operator runs and the jobs are its own, so creates compete with
 * it turning every job into a ConfigMap, pods, events and status
 * updates.
 *
 * usage: bench_kubemu [-e HB_KUBEMU] [-u URL] [-n CREATES] [-r RUNS]
 *                     [-c CLIENTS] [-o]
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
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bench.h"

#define MAX_CLIENTS 16

/* The body of one create: an MPIJob as hpcbridge emits it. */
static int make_body(char *buf, size_t cap, const char *ns, long i,
		     int operated)
{
	static const char script[] =
		"# hpcbridge launcher 1\\nhb_dir=$$(mktemp -d "
		"\\\"$${TMPDIR:-/tmp}/hpcbridge.XXXXXX\\\") || exit 1\\n"
		"cat \\\"$${HPCBRIDGE_RUNTIME:-/opt/hpcbridge/launcher/"
		"runtime.sh}\\\" >>\\\"$$hb_dir/lib.sh\\\" || exit 1\\n"
		". \\\"$$hb_dir/lib.sh\\\" || exit 1\\nhb_install\\n"
		"hb_ntasks_req=0 hb_ntpn=8 hb_cpt=0 hb_fallback=16\\n"
		"hb_setup\\nexport SLURM_JOB_NAME='bench'\\n"
		"hb_script=$$hb_dir/slurm_script\\n"
		"cat >\\\"$$hb_script\\\" <<'HPCBRIDGE_EOF' || exit 1\\n"
		"#!/bin/bash\\n#SBATCH --job-name=bench\\n#SBATCH --nodes=2\\n"
		"#SBATCH --ntasks-per-node=8\\n#SBATCH --time=01:00:00\\n"
		"#SBATCH --mem=4G\\nmodule load openmpi/4.1\\n"
		"echo \\\"running on $$SLURM_JOB_NUM_NODES nodes\\\"\\n"
		"srun ./hello\\nHPCBRIDGE_EOF\\nhb_run 0\\n";
	int n = snprintf(
		buf, cap,
		"{\"apiVersion\":\"kubeflow.org/v2beta1\",\"kind\":\"MPIJob\","
		"\"metadata\":{\"name\":\"bench-%ld\",\"namespace\":\"%s\","
		"\"labels\":{\"app.kubernetes.io/managed-by\":\"hpcbridge\","
		"\"hpcbridge.io/account\":\"physics\",\"hpcbridge.io/"
		"gateway-id\":"
		"\"g%ld\",\"hpcbridge.io/user\":\"alice\"},"
		"\"annotations\":{\"hpcbridge.io/name\":\"bench\","
		"\"hpcbridge.io/partition\":\"debug\",\"hpcbridge.io/account\":"
		"\"physics\",\"hpcbridge.io/request\":\"nodes=2-2 "
		"ntasks-per-node=8 mem=per-node:4096\",\"hpcbridge.io/output\":"
		"\"hello-%%j.out\",\"hpcbridge.io/interpreter\":\"/bin/bash\","
		"\"hpcbridge.io/source-kind\":\"sbatch\"}},"
		"\"spec\":{\"slotsPerWorker\":8,\"runPolicy\":{"
		"\"cleanPodPolicy\":\"Running\",\"backoffLimit\":0,"
		"\"activeDeadlineSeconds\":3600%s},"
		"\"sshAuthMountPath\":\"/root/.ssh\","
		"\"mpiImplementation\":\"OpenMPI\",\"mpiReplicaSpecs\":{"
		"\"Launcher\":{\"replicas\":1,\"restartPolicy\":\"Never\","
		"\"template\":{\"metadata\":{\"labels\":{"
		"\"app.kubernetes.io/managed-by\":\"hpcbridge\","
		"\"hpcbridge.io/job-name\":\"bench-%ld\",\"hpcbridge.io/role\":"
		"\"launcher\"}},\"spec\":{\"containers\":[{\"name\":"
		"\"launcher\","
		"\"image\":\"mpioperator/openmpi:v0.6.0\",\"command\":"
		"[\"/bin/sh\",\"-c\"],\"args\":[\"%s\"],\"resources\":{"
		"\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"limits\":{"
		"\"cpu\":\"1\",\"memory\":\"1Gi\"}},\"volumeMounts\":[{"
		"\"name\":"
		"\"hpcbridge-launcher\",\"mountPath\":\"/opt/hpcbridge/"
		"launcher\","
		"\"readOnly\":true}]}],\"volumes\":[{\"name\":"
		"\"hpcbridge-launcher\",\"configMap\":{\"name\":"
		"\"hpcbridge-launcher-4b1e2f5c\",\"optional\":true}}]}}},"
		"\"Worker\":{\"replicas\":2,\"restartPolicy\":\"Never\","
		"\"template\":{\"metadata\":{\"labels\":{"
		"\"app.kubernetes.io/managed-by\":\"hpcbridge\","
		"\"hpcbridge.io/job-name\":\"bench-%ld\",\"hpcbridge.io/role\":"
		"\"worker\"}},\"spec\":{\"containers\":[{\"name\":\"worker\","
		"\"image\":\"mpioperator/openmpi:v0.6.0\",\"command\":"
		"[\"/usr/sbin/sshd\"],\"args\":[\"-De\"],\"resources\":{"
		"\"requests\":{\"cpu\":\"8\",\"memory\":\"4Gi\"},\"limits\":{"
		"\"cpu\":\"8\",\"memory\":\"4Gi\"}}}]}}}}}}",
		i, ns, i,
		operated ? "" : ",\"managedBy\":\"example.com/bench\"", i,
		script, i);

	return n > 0 && (size_t)n < cap ? n : -1;
}

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	*(size_t *)arg += size * n;
	return size * n;
}

struct client {
	const char *url;
	const char *ns;
	long first, count;
	int operated; /* jobs for the operator, or managed elsewhere */
	double *lat;  /* count entries */
	long errors;
	pthread_t th;
};

static void *run_client(void *arg)
{
	struct client *c = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char url[512], body[16384];
	size_t got = 0;

	if (!h) {
		c->errors = c->count;
		return NULL;
	}
	snprintf(url, sizeof(url),
		 "%s/apis/kubeflow.org/v2beta1/namespaces/%s/mpijobs", c->url,
		 c->ns);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "Accept: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	for (long i = 0; i < c->count; i++) {
		long code = 0;
		int len = make_body(body, sizeof(body), c->ns, c->first + i,
				    c->operated);
		double t0 = now();

		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
		if (len < 0 || curl_easy_perform(h) != CURLE_OK) {
			c->errors++;
			c->lat[i] = 0;
			continue;
		}
		c->lat[i] = now() - t0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		if (code != 201)
			c->errors++;
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return NULL;
}

/* DELETE a whole collection (between runs, not timed). */
static void delete_all(const char *base, const char *ns)
{
	CURL *h = curl_easy_init();
	char url[512];
	size_t got = 0;

	if (!h)
		return;
	snprintf(url, sizeof(url),
		 "%s/apis/kubeflow.org/v2beta1/namespaces/%s/mpijobs", base,
		 ns);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
	curl_easy_perform(h);
	curl_easy_cleanup(h);
}

/* Start hb-kubemu; its port through a port file.  0 or -1. */
static int start_emu(const char *emu, int operator, pid_t * pid, int *port,
		     char *dir, size_t cap)
{
	char pf[600], num[32];
	FILE *f;

	snprintf(dir, cap, "/tmp/bench-kubemu.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(pf, sizeof(pf), "%s/port", dir);
	*pid = fork();
	if (*pid < 0)
		return -1;
	if (*pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		/* The emulator goes when the bench does, however it ends. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (operator)
			execl(emu, emu, "--port-file", pf, "--log-level",
			      "warn", "--watch-window", "1024", (char *)NULL);
		else
			execl(emu, emu, "--port-file", pf, "--log-level",
			      "warn", "--watch-window", "1024", "--no-operator",
			      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		f = fopen(pf, "r");
		if (f && fgets(num, sizeof(num), f)) {
			long v;

			fclose(f);
			num[strcspn(num, "\n")] = '\0';
			if (!parse_long(num, 1, 65535, &v)) {
				*port = (int)v;
				return 0;
			}
		} else if (f) {
			fclose(f);
		}
		usleep(50000);
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_kubemu [-e HB_KUBEMU] [-u URL] "
			"[-n CREATES] [-r RUNS] [-c CLIENTS] [-o]\n");
}

int main(int argc, char **argv)
{
	const char *emu = NULL, *url = NULL;
	long n = 5000, runs = 5, clients = 1;
	int operator= 0, opt, port = 0, rc = 1;
	pid_t pid = 0;
	char dir[256] = "", base[128], exe[4096], emu_path[4200];
	double *rates = NULL, *lat = NULL;
	size_t nlat = 0;
	long errors = 0;

	while ((opt = getopt(argc, argv, "e:u:n:r:c:oh")) != -1) {
		long v;

		switch (opt) {
		case 'e':
			emu = optarg;
			break;
		case 'u':
			url = optarg;
			break;
		case 'n':
		case 'r':
		case 'c':
			if (parse_long(optarg, 1,
				       opt == 'c' ? MAX_CLIENTS : 10000000,
				       &v)) {
				usage();
				return 2;
			}
			if (opt == 'n')
				n = v;
			else if (opt == 'r')
				runs = v;
			else
				clients = v;
			break;
		case 'o':
			operator= 1;
			break;
		default:
			usage();
			return 2;
		}
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!url) {
		if (!emu) {
			/* Beside this program: BUILD/bin/hb-kubemu. */
			ssize_t k = readlink("/proc/self/exe", exe,
					     sizeof(exe) - 1);

			if (k <= 0)
				return 1;
			exe[k] = '\0';
			*strrchr(exe, '/') = '\0';
			snprintf(emu_path, sizeof(emu_path), "%s/hb-kubemu",
				 exe);
			emu = emu_path;
		}
		if (start_emu(emu, operator, & pid, &port, dir, sizeof(dir))) {
			fprintf(stderr, "bench_kubemu: cannot start %s\n", emu);
			goto out;
		}
		snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
		url = base;
	}
	rates = calloc((size_t)runs, sizeof(*rates));
	lat = calloc((size_t)(runs * n), sizeof(*lat));
	if (!rates || !lat)
		goto out;
	printf("bench_kubemu: %ld runs of %ld creates, %ld client%s, "
	       "operator %s, %s\n",
	       runs, n, clients,
	       clients == 1 ? "" : "s", operator? "on" : "off", url);
	for (long r = 0; r < runs; r++) {
		struct client cl[MAX_CLIENTS];
		char ns[64];
		double t0, el;

		snprintf(ns, sizeof(ns), "bench-%ld", r);
		t0 = now();
		for (long i = 0; i < clients; i++) {
			cl[i].url = url;
			cl[i].ns = ns;
			cl[i].first = i * (n / clients);
			cl[i].count = i == clients - 1 ? n - i * (n / clients)
						       : n / clients;
			cl[i].lat = lat + nlat + (size_t)cl[i].first;
			cl[i].errors = 0;
			cl[i].operated = operator;
			pthread_create(&cl[i].th, NULL, run_client, &cl[i]);
		}
		for (long i = 0; i < clients; i++) {
			pthread_join(cl[i].th, NULL);
			errors += cl[i].errors;
		}
		el = now() - t0;
		rates[r] = (double)n / el;
		nlat += (size_t)n;
		printf("  run %ld: %.0f creates/s (%.2f s)\n", r + 1, rates[r],
		       el);
		fflush(stdout);
		delete_all(url, ns);
	}
	qsort(rates, (size_t)runs, sizeof(*rates), cmp_double);
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	printf("creates/s: median %.0f (min %.0f, max %.0f); latency "
	       "p50 %.2f ms, p99 %.2f ms, max %.2f ms; errors %ld\n",
	       pct(rates, (size_t)runs, 0.5), rates[0], rates[runs - 1],
	       pct(lat, nlat, 0.5) * 1e3, pct(lat, nlat, 0.99) * 1e3,
	       lat[nlat - 1] * 1e3, errors);
	rc = errors ? 1 : 0;
out:
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	if (dir[0]) {
		char pf[600];

		snprintf(pf, sizeof(pf), "%s/port", dir);
		unlink(pf);
		rmdir(dir);
	}
	free(rates);
	free(lat);
	curl_global_cleanup();
	return rc;
}
