/*
 * host.c - the real provider: GPUs from sysfs's PCI devices, the NVIDIA
 * driver and its peer-memory module, NCCL through dlopen, and the MPI
 * libraries through their own tools (ompi_info, mpichversion), run as
 * children with a deadline, never through a shell.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fabric_int.h"

extern char **environ;

#define NVIDIA 0x10de
#define AMD    0x1002
/* What a tool prints that we read: ompi_info --all is ~1 MiB. */
#define TOOL_MAX (8u << 20)

const char *fab_gpu_vendor(uint16_t vendor)
{
	return vendor == NVIDIA ? "NVIDIA" : vendor == AMD ? "AMD" : "other";
}

/* A sysfs attribute holding one hex number ("0x10de\n"). */
static int read_hex(const char *dir, const char *name, unsigned long *out)
{
	char path[512], buf[32], *end;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "re")))
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	errno = 0;
	*out = strtoul(buf, &end, 16);
	return errno || end == buf ? -1 : 0;
}

static int is_gpu_class(unsigned long cls)
{
	unsigned long c = cls >> 8; /* class and subclass */

	return c == 0x0300 || c == 0x0302 || c == 0x0380;
}

static int add_gpu(struct hb_fab_node *n, const char *name, unsigned long v,
		   unsigned long d, unsigned long cls)
{
	struct hb_fab_gpu *g = realloc(n->gpus, (n->ngpus + 1) * sizeof(*g));

	if (!g)
		return HB_ENOMEM;
	n->gpus = g;
	g = &n->gpus[n->ngpus++];
	memset(g, 0, sizeof(*g));
	snprintf(g->pci, sizeof(g->pci), "%.15s", name);
	g->vendor = (uint16_t)v;
	g->device = (uint16_t)d;
	g->pci_class = (uint32_t)cls;
	return 0;
}

/* The first line of path into buf ("" when it cannot be read). */
static void first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static int dir_exists(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int hb_fab_scan_gpus(const char *sysfs, const char *procfs,
		     struct hb_fab_node *n, struct hb_err *err)
{
	char path[512];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	sysfs = sysfs ? sysfs : "/sys";
	procfs = procfs ? procfs : "/proc";
	snprintf(path, sizeof(path), "%s/driver/nvidia/version", procfs);
	first_line(path, n->nvidia_driver, sizeof(n->nvidia_driver));
	snprintf(path, sizeof(path), "%s/module/nvidia_peermem", sysfs);
	n->peermem = dir_exists(path);
	snprintf(path, sizeof(path), "%s/module/nv_peer_mem", sysfs);
	n->peermem = n->peermem || dir_exists(path);
	snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs);
	if (!(d = opendir(path)))
		return hb_err_set(err, HB_EIO, path, 0, "cannot list: %s",
				  strerror(errno));
	while (!rc && (e = readdir(d))) {
		char dev[800];
		unsigned long v, id, cls;

		if (e->d_name[0] == '.')
			continue;
		snprintf(dev, sizeof(dev), "%s/%s", path, e->d_name);
		if (read_hex(dev, "vendor", &v) || (v != NVIDIA && v != AMD) ||
		    read_hex(dev, "class", &cls) || !is_gpu_class(cls) ||
		    read_hex(dev, "device", &id))
			continue;
		rc = add_gpu(n, e->d_name, v, id, cls);
	}
	closedir(d);
	return rc;
}

/* --- NCCL --------------------------------------------------------------- */

static int nccl_probe(const char *lib, struct hb_fab_node *n)
{
	int (*get)(int *);
	void *h;
	int v = 0;

	if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(n->nccl_note, sizeof(n->nccl_note),
			 "%s is not present", lib);
		return 0;
	}
	*(void **)&get = dlsym(h, "ncclGetVersion");
	if (!get)
		snprintf(n->nccl_note, sizeof(n->nccl_note),
			 "%s has no ncclGetVersion", lib);
	else if (get(&v) != 0 || v <= 0)
		snprintf(n->nccl_note, sizeof(n->nccl_note),
			 "ncclGetVersion failed");
	else
		n->nccl_version = v;
	dlclose(h);
	return 0;
}

/* --- running a tool ------------------------------------------------------ */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read the child's stdout until EOF or the deadline. */
static int drain(int fd, long long deadline, size_t max, struct hb_buf *out)
{
	char chunk[16384];
	size_t got = 0;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t r;

		if (left <= 0)
			return HB_ETIMEDOUT;
		if (poll(&pf, 1, (int)(left > 1000 ? 1000 : left)) < 0) {
			if (errno == EINTR)
				continue;
			return HB_EIO;
		}
		if (!pf.revents)
			continue;
		r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? HB_EIO : 0;
		if (got < max) {
			size_t take = (size_t)r < max - got ? (size_t)r
							     : max - got;

			if (hb_buf_append(out, chunk, take))
				return HB_ENOMEM;
			got += take;
		}
	}
}

int hb_fab_run(const char *const argv[], int timeout_ms, size_t max,
	       struct hb_buf *out, int *status, struct hb_err *err)
{
	posix_spawn_file_actions_t fa;
	int po[2], rc, st = 0;
	pid_t pid;

	*status = -1;
	if (pipe2(po, O_CLOEXEC))
		return hb_err_set(err, HB_EIO, NULL, 0, "pipe: %s",
				  strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
			  environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	if (rc) {
		close(po[0]);
		return hb_err_set(err, rc == ENOENT ? HB_ENOENT : HB_EIO, NULL,
				  0, "%s: %s", argv[0], strerror(rc));
	}
	rc = drain(po[0], now_ms() + (timeout_ms > 0 ? timeout_ms : 10000),
		   max, out);
	close(po[0]);
	if (rc)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (rc)
		return hb_err_set(err, rc, NULL, 0, "%s: %s", argv[0],
				  rc == HB_ETIMEDOUT ? "timed out"
						     : hb_strerror(rc));
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	/* posix_spawnp reports a missing program as exit 127 where the
	 * C library spawns through vfork and exec. */
	if (*status == 127 && !out->len)
		return hb_err_set(err, HB_ENOENT, NULL, 0, "%s: not found",
				  argv[0]);
	return 0;
}

/* --- MPI --------------------------------------------------------------- */

/* The value after "key:" on a line of ompi_info --parsable text, into
 * out; 0 when found. */
static int parsable(const char *text, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	for (const char *p = text; p && *p;) {
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			size_t n = strcspn(p + kl + 1, "\n");

			snprintf(out, size, "%.*s", (int)n, p + kl + 1);
			return 0;
		}
		if ((p = strchr(p, '\n')))
			p++;
	}
	return -1;
}

void hb_fab_parse_ompi_info(const char *text, const char *all,
			    struct hb_fab_mpi *out)
{
	char v[64];

	out->ompi_version[0] = '\0';
	out->ompi_cuda = -1;
	out->ompi_ucx = out->ompi_openib = false;
	if (!text || parsable(text, "ompi:version:full", out->ompi_version,
			      sizeof(out->ompi_version)))
		return;
	out->ompi_ucx = strstr(text, "\nmca:pml:ucx:") != NULL;
	out->ompi_openib = strstr(text, "\nmca:btl:openib:") != NULL;
	if (all && !parsable(all, "mca:mpi:base:param:mpi_built_with_cuda_support:value",
			     v, sizeof(v)))
		out->ompi_cuda = !strcmp(v, "true") || !strcmp(v, "1");
}

/* The first line a tool prints, into out ("" when it is not there). */
static void tool_line(const char *const argv[], int timeout_ms, char *out,
		      size_t size)
{
	struct hb_buf b;
	struct hb_err e = { 0 };
	int st;

	out[0] = '\0';
	hb_buf_init(&b, 65536);
	if (!hb_fab_run(argv, timeout_ms, 65536, &b, &st, &e) && !st &&
	    b.len)
		snprintf(out, size, "%.*s", (int)strcspn(b.data, "\n"),
			 b.data);
	hb_buf_free(&b);
}

static int scan_mpi(const struct hb_fab_real_opts *o, struct hb_fab_node *n,
		    struct hb_err *err)
{
	const char *prog = o && o->ompi_info ? o->ompi_info : "ompi_info";
	const char *const a1[] = { prog, "--parsable", NULL };
	const char *const a2[] = { prog, "--parsable", "--all", NULL };
	const char *const mv[] = { "mpichversion", NULL };
	const char *const mx[] = { "mpiexec", "--version", NULL };
	int tmo = o && o->timeout_ms > 0 ? o->timeout_ms : 10000;
	struct hb_buf t, all;
	int st = 0, rc;

	hb_buf_init(&t, TOOL_MAX);
	hb_buf_init(&all, TOOL_MAX);
	rc = hb_fab_run(a1, tmo, TOOL_MAX, &t, &st, err);
	if (!rc && !st && t.len) {
		struct hb_err e = { 0 };

		if (hb_fab_run(a2, tmo, TOOL_MAX, &all, &st, &e) || st)
			hb_buf_reset(&all);
		hb_fab_parse_ompi_info(t.data, all.len ? all.data : NULL,
				       &n->mpi);
	} else {
		hb_fab_parse_ompi_info(NULL, NULL, &n->mpi);
	}
	if (rc == HB_ENOENT)
		rc = 0; /* no Open MPI is a finding, not an error */
	hb_buf_free(&t);
	hb_buf_free(&all);
	tool_line(mv, tmo, n->mpi.other, sizeof(n->mpi.other));
	/* Open MPI's own mpiexec says "mpiexec (OpenRTE) 4.1.4": only
	 * another MPI's is news. */
	if (!n->mpi.other[0]) {
		tool_line(mx, tmo, n->mpi.other, sizeof(n->mpi.other));
		if (strstr(n->mpi.other, "OpenRTE") ||
		    strstr(n->mpi.other, "Open MPI"))
			n->mpi.other[0] = '\0';
	}
	return rc;
}

/* --- the real provider --------------------------------------------------- */

static const struct hb_fab_real_opts no_opts;

static int real_rdma(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	const struct hb_fab_real_opts *o = ctx;

	return fab_verbs_scan(o->sysfs ? o->sysfs : "/sys", n, err);
}

static int real_gpus(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	const struct hb_fab_real_opts *o = ctx;

	return hb_fab_scan_gpus(o->sysfs, o->procfs, n, err);
}

static int real_nccl(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	const struct hb_fab_real_opts *o = ctx;

	(void)err;
	return nccl_probe(o->nccl_lib ? o->nccl_lib : "libnccl.so.2", n);
}

static int real_mpi(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	return scan_mpi(ctx, n, err);
}

void hb_fab_real_provider(const struct hb_fab_real_opts *opts,
			  struct hb_fab_provider *out)
{
	*out = (struct hb_fab_provider){ "real", real_rdma, real_gpus,
					 real_nccl, real_mpi,
					 (void *)(opts ? opts : &no_opts) };
}
