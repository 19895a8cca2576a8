/*
 * test_launcher.c - the launcher script: its text, its quoting, the
 * extract round trip, the size cap, and runs of the generated program under
 * /bin/sh with fake hostfiles and fake MPI launchers.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpcbridge/launcher.h"
#include "testutil.h"

/* ---- helpers ---------------------------------------------------------- */

static char root[PATH_MAX]; /* per-test scratch directory */
/* The launcher container's shell: /bin/sh, or bash, which is /bin/sh in
 * some images. */
static const char *shell = "/bin/sh";
/* Read the runtime from a mounted file (root/runtime.sh) instead of
 * carrying it inline. */
static bool mounted;
static char runtime_path[PATH_MAX];

static void mkspec(struct hb_jobspec *s, const char *script)
{
	hb_jobspec_init(s, "job.sh");
	s->script = hb_jobspec_strdup(s, script);
	assert_non_null(s->script);
	s->script_len = (uint32_t)strlen(script);
}

static char *gen(const struct hb_jobspec *s, const char *id, int64_t idx)
{
	struct hb_err err = {0};
	struct hb_buf b;
	int rc;

	hb_buf_init(&b, 0);
	rc = hb_launcher_script_ex(s, id, idx, mounted, &b, &err);
	if (rc)
		fail_msg("hb_launcher_script: %d %s", rc, err.msg);
	return hb_buf_steal(&b);
}

static const char *path(const char *rel)
{
	static char p[2][PATH_MAX];
	static int k;
	int n;

	k ^= 1;
	n = snprintf(p[k], sizeof(p[k]), "%s/%s", root, rel);
	assert_true(n > 0 && (size_t)n < sizeof(p[k]));
	return p[k];
}

static void write_file(const char *rel, const char *data, size_t n, int mode)
{
	int fd = open(path(rel), O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
}

static void write_str(const char *rel, const char *s)
{
	write_file(rel, s, strlen(s), 0644);
}

static char *read_rel(const char *rel, size_t *n)
{
	return hb_test_read_file(path(rel), n);
}

static bool exists(const char *rel)
{
	struct stat st;

	return stat(path(rel), &st) == 0;
}

/* Value of NAME in an `env` dump (first match), or NULL.  Caller frees. */
static char *env_get(const char *dump, const char *name)
{
	size_t nl = strlen(name);
	const char *p = dump;

	while (p && *p) {
		if (strncmp(p, name, nl) == 0 && p[nl] == '=') {
			const char *v = p + nl + 1, *e = strchr(v, '\n');

			return strndup(v, e ? (size_t)(e - v) : strlen(v));
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static void assert_env(const char *dump, const char *name, const char *want)
{
	char *v = env_get(dump, name);

	if (!want) {
		if (v)
			fail_msg("%s is set to '%s', want unset", name, v);
		return;
	}
	if (!v)
		fail_msg("%s is unset, want '%s'", name, want);
	if (strcmp(v, want) != 0)
		fail_msg("%s='%s', want '%s'", name, v, want);
	free(v);
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;
	size_t nl = strlen(needle);

	for (const char *p = text; (p = strstr(p, needle)); p += nl)
		n++;
	return n;
}

/*
 * Run the launcher text as the launcher container would: /bin/sh -c TEXT,
 * in root/work, with a clean environment: PATH (pathvar, or /usr/bin:/bin),
 * HOME, TMPDIR=root and the given extra NAME=VALUE strings.  pathvar must
 * not point into path()'s buffers, which this function reuses.  stdout and
 * stderr go to root/out and root/err.  Returns the exit status, or
 * 128+signal if it was killed.
 */
static int run_launcher(const char *text, const char *pathvar,
			const char *const *extra)
{
	pid_t pid;
	int st;

	mkdir(path("work"), 0755);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(path("out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(path("err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);

		if (o < 0 || e < 0 || in < 0 || chdir(path("work")) != 0)
			_exit(125);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		clearenv();
		setenv("PATH", pathvar ? pathvar : "/usr/bin:/bin", 1);
		setenv("HOME", root, 1);
		setenv("TMPDIR", root, 1);
		if (mounted)
			setenv("HPCBRIDGE_RUNTIME", runtime_path, 1);
		for (; extra && *extra; extra++)
			putenv((char *)*extra);
		alarm(120);
		execl(shell, "sh", "-c", text, (char *)NULL);
		_exit(126);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

static int rm_entry(const char *p, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	const char *t = getenv("TMPDIR");
	int n;

	(void)state;
	n = snprintf(root, sizeof(root), "%s/hb-launcher-XXXXXX",
		     t && *t ? t : "/tmp");
	if (n < 0 || (size_t)n >= sizeof(root) || !mkdtemp(root))
		return -1;
	return 0;
}

static int setup_bash(void **state)
{
	shell = "/bin/bash";
	return setup(state);
}

/* The runtime as a ConfigMap would mount it. */
static int setup_mounted(void **state)
{
	size_t len;
	const char *rt = hb_launcher_runtime(&len);
	FILE *f;
	int n;

	if (setup(state))
		return -1;
	mounted = true;
	n = snprintf(runtime_path, sizeof(runtime_path), "%s/runtime.sh",
		     root);
	if (n < 0 || (size_t)n >= sizeof(runtime_path))
		return -1;
	f = fopen(runtime_path, "w");
	if (!f || fwrite(rt, 1, len, f) != len || fclose(f) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	shell = "/bin/sh";
	mounted = false;
	return nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* clang-format off */
#define BASH_TEST(f) {#f "_bash", f, setup_bash, teardown, NULL}
#define MOUNTED_TEST(f) {#f "_mounted", f, setup_mounted, teardown, NULL}
/* clang-format on */

/* HPCBRIDGE_HOSTFILE=root/<rel>, as a NULL-terminated extra environment. */
static const char **hostenv(const char *hostfile_rel)
{
	static char buf[PATH_MAX + 32];
	static const char *env[2];
	int n = snprintf(buf, sizeof(buf), "HPCBRIDGE_HOSTFILE=%s",
			 path(hostfile_rel));

	assert_true(n > 0 && (size_t)n < sizeof(buf));
	env[0] = buf;
	env[1] = NULL;
	return env;
}

/* ---- text ------------------------------------------------------------- */

static void test_text_properties(void **state)
{
	struct hb_jobspec s;
	char *t;

	(void)state;
	mkspec(&s, "#!/bin/bash\nsrun ./a.out\n");
	s.name = "train";
	s.partition = "gpu";
	s.cpus_per_task = 2;
	assert_int_equal(hb_jobspec_add_env(&s, "NCCL_IB_DISABLE", "1"), 0);
	t = gen(&s, "1234", -1);
	assert_true(strncmp(t, "# hpcbridge launcher", 20) == 0);
	assert_non_null(strstr(t, "${HPCBRIDGE_HOSTFILE:-/etc/mpi/hostfile}"));
	assert_non_null(strstr(t, "export SLURM_JOB_ID='1234'\n"));
	assert_non_null(strstr(t, "export SLURM_JOB_NAME='train'\n"));
	assert_non_null(strstr(t, "export SLURM_JOB_PARTITION='gpu'\n"));
	assert_non_null(strstr(t, "export SLURM_CPUS_PER_TASK=2\n"));
	assert_non_null(strstr(t, "export NCCL_IB_DISABLE='1'\n"));
	assert_non_null(strstr(t, "hb_fwd_names='NCCL_IB_DISABLE'\n"));
	assert_non_null(strstr(t, "hb_interp='/bin/bash'\n"));
	assert_non_null(strstr(t, "<<'HPCBRIDGE_EOF' || exit 1\n"
				  "#!/bin/bash\nsrun ./a.out\n"
				  "HPCBRIDGE_EOF\nhb_run 0\n"));
	/* Not an array: no array variables. */
	assert_null(strstr(t, "SLURM_ARRAY_TASK_ID"));
	/* SLURM_CPUS_PER_TASK only when given. */
	free(t);
	s.cpus_per_task = 0;
	t = gen(&s, "1234", -1);
	assert_null(strstr(t, "export SLURM_CPUS_PER_TASK="));
	free(t);
	hb_jobspec_free(&s);
}

static void test_text_mpi_flavor(void **state)
{
	struct hb_jobspec s;
	char *t;

	(void)state;
	mkspec(&s, "mpirun ./x\n");
	s.mpi = HB_MPI_INTEL;
	t = gen(&s, "1", -1);
	assert_non_null(strstr(t, "hb_default_flavor=intel\n"));
	/* No shebang: /bin/sh runs it. */
	assert_non_null(strstr(t, "hb_interp=/bin/sh\n"));
	free(t);
	s.mpi = HB_MPI_MPICH;
	t = gen(&s, "1", -1);
	assert_non_null(strstr(t, "hb_default_flavor=mpich\n"));
	free(t);
	hb_jobspec_free(&s);
}

/* "\nexport NAME='value'\n" with each ' of value written '\'' */
static void export_line(char *out, size_t cap, const char *name,
			const char *value)
{
	size_t n = (size_t)snprintf(out, cap, "\nexport %s='", name);

	for (; *value; value++) {
		assert_true(n + 8 < cap);
		if (*value == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = *value;
		}
	}
	assert_true(n + 3 < cap);
	memcpy(out + n, "'\n", 3);
}

/* A value is single-quoted, each ' written as '\'' and nothing else
 * changed, whatever it holds. */
static void test_text_quoting(void **state)
{
	/* clang-format off */
	static const char *const nasty[] = {
		"it's", "$(touch PWNED)", "`touch PWNED`", "a\nb",
		"'; touch PWNED; '", "\\", "${HOME}", "'\"'\"'", "x",
	};
	/* clang-format on */
	struct hb_jobspec s;

	(void)state;
	for (size_t i = 0; i < sizeof(nasty) / sizeof(*nasty); i++) {
		char want[256], *t;

		mkspec(&s, "#!/bin/sh\n");
		s.name = nasty[i];
		s.partition = nasty[i];
		assert_int_equal(hb_jobspec_add_env(&s, "V", nasty[i]), 0);
		t = gen(&s, nasty[i], -1);
		export_line(want, sizeof(want), "SLURM_JOB_NAME", nasty[i]);
		assert_non_null(strstr(t, want));
		export_line(want, sizeof(want), "SLURM_JOB_ID", nasty[i]);
		assert_non_null(strstr(t, want));
		export_line(want, sizeof(want), "PBS_QUEUE", nasty[i]);
		assert_non_null(strstr(t, want));
		export_line(want, sizeof(want), "V", nasty[i]);
		assert_non_null(strstr(t, want));
		free(t);
		hb_jobspec_free(&s);
	}
}

/* ---- extract ---------------------------------------------------------- */

static void roundtrip(const char *script, size_t n)
{
	struct hb_jobspec s;
	const char *body;
	size_t len;
	char *t;

	hb_jobspec_init(&s, "job.sh");
	s.script = hb_jobspec_strndup(&s, script, n);
	s.script_len = (uint32_t)n;
	t = gen(&s, "7", -1);
	assert_int_equal(hb_launcher_extract(t, &body, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(body, script, n);
	free(t);
	hb_jobspec_free(&s);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_extract_roundtrip(void **state)
{
	/* clang-format off */
	static const char *const pieces[] = {
		"HPCBRIDGE_EOF", "HPCBRIDGE_EOF\n", "\nHPCBRIDGE_EOF\n",
		"HPCBRIDGE_LIB\n", "hb_run 0\n", "hb_run 1", "<<'", "'",
		"\"", "$", "`", "\\", "\n", "\n\n", " ", "\t", "\r", "#!",
		"# hpcbridge launcher 1\n", "srun ./a\n", "\x01", "\xff",
		"\xc3\xa9", "EOF", "HPCBRIDGE_EOF_", "|| exit 1\n",
	};
	/* clang-format on */
	/* clang-format off */
	static const char *const fixed[] = {
		"", "\n", "x", "HPCBRIDGE_EOF", "HPCBRIDGE_EOF\n",
		"#!/bin/bash\necho hi\n", "#!/bin/bash\necho hi",
		"HPCBRIDGE_EOF\nHPCBRIDGE_EOF\nhb_run 0\n",
		"cat <<'HPCBRIDGE_EOF' || exit 1\nHPCBRIDGE_EOF\n",
	};
	/* clang-format on */
	char buf[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
		roundtrip(fixed[i], strlen(fixed[i]));
	for (int i = 0; i < 300; i++) {
		size_t n = 0, k = next() % 40;

		for (size_t j = 0; j < k; j++) {
			const char *p =
			    pieces[next() % (sizeof(pieces) / sizeof(*pieces))];
			size_t pl = strlen(p);

			if (n + pl >= sizeof(buf))
				break;
			memcpy(buf + n, p, pl);
			n += pl;
		}
		roundtrip(buf, n);
	}
}

/* A script holding the plain delimiter gets another one. */
static void test_extract_delim_varies(void **state)
{
	struct hb_jobspec s;
	const char *body;
	size_t len;
	char *t;

	(void)state;
	mkspec(&s, "cat <<HPCBRIDGE_EOF\nhi\nHPCBRIDGE_EOF\n");
	t = gen(&s, "1", -1);
	assert_null(strstr(t, "<<'HPCBRIDGE_EOF' "));
	assert_non_null(strstr(t, "<<'HPCBRIDGE_EOF_"));
	assert_int_equal(hb_launcher_extract(t, &body, &len), 0);
	assert_int_equal(len, s.script_len);
	assert_memory_equal(body, s.script, len);
	free(t);
	hb_jobspec_free(&s);
}

static void test_extract_rejects(void **state)
{
	struct hb_jobspec s;
	const char *body = NULL;
	size_t len = 0, n;
	char *t;

	(void)state;
	assert_int_equal(hb_launcher_extract("", &body, &len), HB_ENOENT);
	assert_int_equal(
	    hb_launcher_extract("#!/bin/sh\necho hi\n", &body, &len),
	    HB_ENOENT);
	mkspec(&s, "echo hi\n");
	t = gen(&s, "1", -1);
	n = strlen(t);
	/* Every truncation of a real launcher is refused, never misread. */
	for (size_t cut = 0; cut < n; cut++) {
		char c = t[cut];

		t[cut] = '\0';
		assert_int_equal(hb_launcher_extract(t, &body, &len),
				 HB_ENOENT);
		t[cut] = c;
	}
	free(t);
	hb_jobspec_free(&s);
}

/* ---- errors ----------------------------------------------------------- */

static void test_size_cap(void **state)
{
	struct hb_jobspec s;
	struct hb_err err = {0};
	struct hb_buf b;
	char *big = malloc(HB_LAUNCHER_MAX);
	size_t n;

	(void)state;
	assert_non_null(big);
	/* Under the cap with the preamble: accepted. */
	n = HB_LAUNCHER_MAX / 2;
	memset(big, 'x', n);
	big[n] = '\0';
	mkspec(&s, big);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), 0);
	assert_true(b.len < HB_LAUNCHER_MAX);
	hb_buf_free(&b);
	hb_jobspec_free(&s);

	/* Script fits alone, launcher does not: ETOOBIG naming the size. */
	n = HB_LAUNCHER_MAX - 100;
	memset(big, 'x', n);
	big[n] = '\0';
	mkspec(&s, big);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), HB_ETOOBIG);
	assert_int_equal(b.len, 0);
	assert_non_null(strstr(err.msg, "131072 bytes"));
	hb_buf_free(&b);
	hb_jobspec_free(&s);
	free(big);
}

static void test_size_cap_message(void **state)
{
	struct hb_jobspec s;
	struct hb_err err = {0};
	struct hb_buf b;
	char *big = malloc(HB_LAUNCHER_MAX + 10);
	char want[64];

	(void)state;
	assert_non_null(big);
	memset(big, 'y', HB_LAUNCHER_MAX + 9);
	big[HB_LAUNCHER_MAX + 9] = '\0';
	mkspec(&s, big);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), HB_ETOOBIG);
	snprintf(want, sizeof(want), "%u bytes", HB_LAUNCHER_MAX + 9);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "job.sh"));
	hb_buf_free(&b);
	hb_jobspec_free(&s);

	/* Just under: the message names the script's own size too. */
	memset(&err, 0, sizeof(err));
	big[HB_LAUNCHER_MAX - 50] = '\0';
	mkspec(&s, big);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), HB_ETOOBIG);
	snprintf(want, sizeof(want), "%u-byte job script",
		 HB_LAUNCHER_MAX - 50);
	assert_non_null(strstr(err.msg, want));
	hb_buf_free(&b);
	hb_jobspec_free(&s);
	free(big);
}

static void test_bad_input(void **state)
{
	struct hb_jobspec s;
	struct hb_err err = {0};
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 0);
	mkspec(&s, "echo hi\n");
	assert_int_equal(hb_launcher_script(&s, NULL, -1, &b, &err), HB_EINVAL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_launcher_script(&s, "", -1, &b, &err), HB_EINVAL);

	/* An environment name a shell cannot set. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_jobspec_add_env(&s, "A-B", "1"), 0);
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "A-B"));
	hb_jobspec_free(&s);

	/* A NUL inside the script. */
	memset(&err, 0, sizeof(err));
	hb_jobspec_init(&s, "job.sh");
	s.script = hb_jobspec_strndup(&s, "echo a\0b\n", 9);
	s.script_len = 9;
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "NUL"));
	hb_jobspec_free(&s);

	/* No script; an index outside the array. */
	memset(&err, 0, sizeof(err));
	hb_jobspec_init(&s, "job.sh");
	assert_int_equal(hb_launcher_script(&s, "1", -1, &b, &err), HB_EINVAL);
	hb_jobspec_free(&s);
	mkspec(&s, "echo\n");
	s.array = "1-3";
	s.array_ranges = hb_arena_alloc(&s.arena, sizeof(struct hb_range));
	s.array_ranges[0] = (struct hb_range){1, 3, 1};
	s.narray_ranges = 1;
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_launcher_script(&s, "1", 7, &b, &err), HB_EINVAL);
	assert_int_equal(b.len, 0);
	hb_jobspec_free(&s);
	hb_buf_free(&b);
}

/* ---- runs ------------------------------------------------------------- */

#define ENV_DUMP "env > env.txt\n"

static void test_run_openmpi_hosts(void **state)
{
	struct hb_jobspec s;
	char *t, *env, *nodes;
	size_t n;

	(void)state;
	write_str("hosts", "# written by the operator\n"
			   "job-worker-0.job-worker.ns.svc slots=4\n"
			   "\n"
			   "job-worker-1.job-worker.ns.svc slots=4\n");
	mkspec(&s, "#!/bin/sh\n" ENV_DUMP
		   "printf '%s|%s\\n' \"$0\" \"$#\" > args.txt\n"
		   "cp \"$PBS_NODEFILE\" nodefile.txt\n"
		   "pwd > pwd.txt\n"
		   "exit 7\n");
	s.name = "sim";
	s.account = "physics";
	s.partition = "batch";
	s.mem_kind = HB_MEM_PER_NODE;
	s.mem_mb = 4096;
	t = gen(&s, "4242", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 7);

	env = read_rel("work/env.txt", NULL);
	assert_env(env, "SLURM_JOB_ID", "4242");
	assert_env(env, "SLURM_JOBID", "4242");
	assert_env(env, "SLURM_JOB_NAME", "sim");
	assert_env(env, "SLURM_NTASKS", "8");
	assert_env(env, "SLURM_NPROCS", "8");
	assert_env(env, "SLURM_JOB_NUM_NODES", "2");
	assert_env(env, "SLURM_NNODES", "2");
	assert_env(env, "SLURM_NTASKS_PER_NODE", "4");
	assert_env(env, "SLURM_TASKS_PER_NODE", "4(x2)");
	assert_env(env, "SLURM_JOB_CPUS_PER_NODE", "4(x2)");
	assert_env(env, "SLURM_JOB_NODELIST",
		   "job-worker-0.job-worker.ns.svc,"
		   "job-worker-1.job-worker.ns.svc");
	assert_env(env, "SLURM_NODELIST",
		   "job-worker-0.job-worker.ns.svc,"
		   "job-worker-1.job-worker.ns.svc");
	assert_env(env, "SLURM_JOB_ACCOUNT", "physics");
	assert_env(env, "SLURM_JOB_PARTITION", "batch");
	assert_env(env, "SLURM_MEM_PER_NODE", "4096");
	assert_env(env, "SLURM_CPUS_PER_TASK", NULL);
	assert_env(env, "SLURM_ARRAY_TASK_ID", NULL);
	assert_env(env, "SLURM_GPUS_ON_NODE", NULL);
	assert_env(env, "SLURM_SUBMIT_DIR", path("work"));
	assert_env(env, "PBS_JOBID", "4242");
	assert_env(env, "PBS_JOBNAME", "sim");
	assert_env(env, "PBS_O_WORKDIR", path("work"));
	assert_env(env, "PBS_NUM_NODES", "2");
	assert_env(env, "PBS_NUM_PPN", "4");
	assert_env(env, "PBS_NP", "8");
	assert_env(env, "PBS_QUEUE", "batch");
	assert_env(env, "PBS_ENVIRONMENT", "PBS_BATCH");
	assert_env(env, "PBS_ARRAYID", NULL);
	free(env);

	nodes = read_rel("work/nodefile.txt", &n);
	assert_string_equal(nodes, "job-worker-0.job-worker.ns.svc\n"
				   "job-worker-0.job-worker.ns.svc\n"
				   "job-worker-0.job-worker.ns.svc\n"
				   "job-worker-0.job-worker.ns.svc\n"
				   "job-worker-1.job-worker.ns.svc\n"
				   "job-worker-1.job-worker.ns.svc\n"
				   "job-worker-1.job-worker.ns.svc\n"
				   "job-worker-1.job-worker.ns.svc\n");
	free(nodes);
	/* $0 is the script's own file; no arguments. */
	nodes = read_rel("work/args.txt", NULL);
	assert_non_null(strstr(nodes, "/slurm_script|0\n"));
	assert_true(nodes[0] == '/');
	free(nodes);
	nodes = read_rel("work/pwd.txt", NULL);
	assert_non_null(strstr(nodes, "/work\n"));
	free(nodes);
	free(t);
	hb_jobspec_free(&s);
}


/* The workers' sshd listens where HPCBRIDGE_SSH_ARGS says: each MPI's
 * ssh gets it after what the operator set, Open MPI 5 too. */
static void test_run_ssh_args(void **state)
{
	static const char *const extra[] = {
	    "OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10",
	    "HPCBRIDGE_SSH_ARGS=-p 2222 -i /k/id_rsa", NULL};
	const char *hosts[8];
	const char **h;
	const char *const *x;
	struct hb_jobspec s;
	char *t, *env;
	size_t i = 0;

	(void)state;
	write_str("hosts", "job-worker-0.job-worker.ns.svc slots=1\n");
	for (h = hostenv("hosts"); h && *h && i < 5; h++)
		hosts[i++] = *h;
	for (x = extra; *x; x++)
		hosts[i++] = *x;
	hosts[i] = NULL;
	mkspec(&s, "#!/bin/sh\n" ENV_DUMP);
	t = gen(&s, "7", -1);
	assert_int_equal(run_launcher(t, NULL, hosts), 0);
	env = read_rel("work/env.txt", NULL);
	assert_env(env, "OMPI_MCA_plm_rsh_args",
		   "-o ConnectionAttempts=10 -p 2222 -i /k/id_rsa");
	assert_env(env, "PRTE_MCA_plm_rsh_args",
		   "-o ConnectionAttempts=10 -p 2222 -i /k/id_rsa");
	assert_env(env, "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS",
		   "-p 2222 -i /k/id_rsa");
	assert_env(env, "HYDRA_LAUNCHER_EXTRA_ARGS", "-p 2222 -i /k/id_rsa");
	free(env);
	free(t);
	hb_jobspec_free(&s);
}

/* Hydra's host:N format, fewer tasks than slots, CPUs per task. */
static void test_run_hydra_hosts_uneven(void **state)
{
	struct hb_jobspec s;
	char *t, *env, *nodes;

	(void)state;
	write_str("hosts", "a:3\r\nb:3\r\n");
	mkspec(&s, ENV_DUMP "cp \"$PBS_NODEFILE\" nodefile.txt\n");
	s.ntasks = 5;
	s.nodes_min = 2;
	s.cpus_per_task = 2;
	s.mpi = HB_MPI_INTEL;
	t = gen(&s, "9", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
	env = read_rel("work/env.txt", NULL);
	assert_env(env, "SLURM_NTASKS", "5");
	assert_env(env, "SLURM_JOB_NUM_NODES", "2");
	assert_env(env, "SLURM_TASKS_PER_NODE", "3,2");
	assert_env(env, "SLURM_NTASKS_PER_NODE", NULL);
	assert_env(env, "SLURM_CPUS_PER_TASK", "2");
	assert_env(env, "SLURM_JOB_CPUS_PER_NODE", "6(x2)");
	assert_env(env, "SLURM_JOB_NODELIST", "a,b");
	assert_env(env, "PBS_NP", "5");
	free(env);
	nodes = read_rel("work/nodefile.txt", NULL);
	assert_string_equal(nodes, "a\na\na\nb\nb\n");
	free(nodes);
	free(t);
	hb_jobspec_free(&s);
}

static void test_run_array(void **state)
{
	struct hb_jobspec s;
	char *t, *env;

	(void)state;
	write_str("hosts", "n0 slots=1\n");
	mkspec(&s, ENV_DUMP);
	s.array = "1-9:2";
	s.array_ranges = hb_arena_alloc(&s.arena, sizeof(struct hb_range));
	s.array_ranges[0] = (struct hb_range){1, 9, 2};
	s.narray_ranges = 1;
	s.gpu_scope = HB_GPU_PER_NODE;
	s.gpus = 2;
	t = gen(&s, "77", 5);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
	env = read_rel("work/env.txt", NULL);
	assert_env(env, "SLURM_ARRAY_TASK_ID", "5");
	assert_env(env, "SLURM_ARRAY_JOB_ID", "77");
	assert_env(env, "SLURM_ARRAY_TASK_MIN", "1");
	assert_env(env, "SLURM_ARRAY_TASK_MAX", "9");
	assert_env(env, "SLURM_ARRAY_TASK_COUNT", "5");
	assert_env(env, "SLURM_ARRAY_TASK_STEP", "2");
	assert_env(env, "PBS_ARRAYID", "5");
	assert_env(env, "PBS_ARRAY_INDEX", "5");
	assert_env(env, "SLURM_GPUS_ON_NODE", "2");
	assert_env(env, "SLURM_GPUS_PER_NODE", "2");
	free(env);
	free(t);
	hb_jobspec_free(&s);
}

/* The proxy's Slurm ids, passed by the daemon, are the job's ids in the
 * pod (what squeue shows), for a single job and for an array task. */
static void test_run_proxy_ids(void **state)
{
	static const char *const ids[] = { "HPCBRIDGE_SLURM_JOB_ID=5150",
					   "HPCBRIDGE_SLURM_ARRAY_JOB_ID=5140",
					   NULL, NULL };
	const char *extra[4];
	struct hb_jobspec s;
	char *t, *env;

	(void)state;
	write_str("hosts", "n0 slots=1\n");
	extra[0] = hostenv("hosts")[0];
	extra[1] = ids[0];
	extra[2] = ids[1];
	extra[3] = NULL;
	mkspec(&s, ENV_DUMP);
	t = gen(&s, "hb-7", -1);
	assert_int_equal(run_launcher(t, NULL, extra), 0);
	env = read_rel("work/env.txt", NULL);
	assert_env(env, "SLURM_JOB_ID", "5150");
	assert_env(env, "SLURM_JOBID", "5150");
	assert_env(env, "PBS_JOBID", "5150");
	/* not an array task: no array id, whatever is passed */
	assert_env(env, "SLURM_ARRAY_JOB_ID", NULL);
	free(env);
	free(t);
	hb_jobspec_free(&s);

	mkspec(&s, ENV_DUMP);
	s.array = "1-3";
	s.array_ranges = hb_arena_alloc(&s.arena, sizeof(struct hb_range));
	s.array_ranges[0] = (struct hb_range){ 1, 3, 1 };
	s.narray_ranges = 1;
	t = gen(&s, "hb-8", 2);
	assert_int_equal(run_launcher(t, NULL, extra), 0);
	env = read_rel("work/env.txt", NULL);
	assert_env(env, "SLURM_JOB_ID", "5150");
	assert_env(env, "SLURM_ARRAY_JOB_ID", "5140");
	assert_env(env, "PBS_ARRAY_ID", "5140");
	assert_env(env, "SLURM_ARRAY_TASK_ID", "2");
	free(env);
	free(t);
	hb_jobspec_free(&s);

	/* without them, the job's name as before */
	mkspec(&s, ENV_DUMP);
	t = gen(&s, "hb-9", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
	env = read_rel("work/env.txt", NULL);
	assert_env(env, "SLURM_JOB_ID", "hb-9");
	assert_env(env, "PBS_JOBID", "hb-9");
	free(env);
	free(t);
	hb_jobspec_free(&s);
}

/* Every quoted value reaches the script exactly and runs nothing. */
static void test_run_quoting(void **state)
{
	static const char value[] = "it's $(touch PWNED) `touch PWNED` "
				    "${HOME} \\ \"q\"\nline2 '; touch PWNED; '";
	struct hb_jobspec s;
	char *t, *got;
	size_t n;

	(void)state;
	write_str("hosts", "h slots=1\n");
	mkspec(&s, "printf '%s' \"$SLURM_JOB_NAME\" > name.txt\n"
		   "printf '%s' \"$SLURM_JOB_ID\" > id.txt\n"
		   "printf '%s' \"$SLURM_JOB_ACCOUNT\" > acct.txt\n"
		   "printf '%s' \"$MY_VAR\" > var.txt\n"
		   "pwd > pwd.txt\n");
	s.name = value;
	s.account = value;
	s.chdir = "d'ir $x `y`";
	assert_int_equal(hb_jobspec_add_env(&s, "MY_VAR", value), 0);
	mkdir(path("work"), 0755);
	mkdir(path("work/d'ir $x `y`"), 0755);
	t = gen(&s, value, -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
	got = read_rel("work/d'ir $x `y`/name.txt", &n);
	assert_int_equal(n, sizeof(value) - 1);
	assert_memory_equal(got, value, n);
	free(got);
	got = read_rel("work/d'ir $x `y`/id.txt", &n);
	assert_memory_equal(got, value, n);
	free(got);
	got = read_rel("work/d'ir $x `y`/acct.txt", &n);
	assert_memory_equal(got, value, n);
	free(got);
	got = read_rel("work/d'ir $x `y`/var.txt", &n);
	assert_int_equal(n, sizeof(value) - 1);
	assert_memory_equal(got, value, n);
	free(got);
	assert_false(exists("work/PWNED"));
	assert_false(exists("PWNED"));
	free(t);
	hb_jobspec_free(&s);
}

/* The script file the interpreter runs is the original, byte for byte. */
static void test_run_bytes_exact(void **state)
{
	/* clang-format off */
	static const char *const tails[] = {
		"", "\n", "no final newline", "HPCBRIDGE_EOF\nHPCBRIDGE_EOF",
		"\\\n$x `y` 'z' \"w\"\r\n\x01\x7f\xff\xc3\xa9\n\n\n",
		"HPCBRIDGE_LIB\nhb_run 0\nhb_run 1",
	};
	/* clang-format on */

	(void)state;
	write_str("hosts", "h slots=1\n");
	for (size_t i = 0; i < sizeof(tails) / sizeof(*tails); i++) {
		struct hb_jobspec s;
		char script[512], *t, *got;
		size_t n;
		int k = snprintf(script, sizeof(script),
				 "#!/bin/sh\ncp \"$0\" copy.bin\nexit 0\n%s",
				 tails[i]);

		assert_true(k > 0 && (size_t)k < sizeof(script));
		mkspec(&s, script);
		t = gen(&s, "1", -1);
		assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
		got = read_rel("work/copy.bin", &n);
		assert_int_equal(n, (size_t)k);
		assert_memory_equal(got, script, n);
		free(got);
		free(t);
		hb_jobspec_free(&s);
	}
}

static void test_run_interpreters(void **state)
{
	struct hb_jobspec s;
	char *t, *got;

	(void)state;
	write_str("hosts", "h slots=2\n");

	/* python3 through env, with its own exit code. */
	mkspec(&s, "#!/usr/bin/env python3\n"
		   "import os, sys\n"
		   "open('py.txt', 'w').write(os.environ['SLURM_NTASKS'] + "
		   "' ' + str(sys.argv[0].endswith('/slurm_script')))\n"
		   "sys.exit(3)");
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 3);
	got = read_rel("work/py.txt", NULL);
	assert_string_equal(got, "2 True");
	free(got);
	free(t);
	hb_jobspec_free(&s);

	/* bash syntax, and a shebang argument (-e stops at false). */
	mkspec(&s, "#!/bin/bash -e\n"
		   "[[ -n $BASH_VERSION ]] && echo bash > sh.txt\n"
		   "false\necho unreachable >> sh.txt\n");
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 1);
	got = read_rel("work/sh.txt", NULL);
	assert_string_equal(got, "bash\n");
	free(got);
	free(t);
	hb_jobspec_free(&s);

	/* No shebang: /bin/sh. */
	mkspec(&s, "echo \"${BASH_VERSION:-posix}\" > sh.txt\n");
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
	got = read_rel("work/sh.txt", NULL);
	if (access("/bin/sh", X_OK) == 0 && strcmp(got, "posix\n") != 0) {
		/* /bin/sh may itself be bash on some systems. */
		char link[64] = {0};

		assert_true(readlink("/bin/sh", link, sizeof(link) - 1) > 0);
		assert_non_null(strstr(link, "bash"));
	}
	free(got);
	free(t);
	hb_jobspec_free(&s);

	/* csh, where it is installed. */
	if (access("/bin/csh", X_OK) == 0) {
		mkspec(&s, "#!/bin/csh -f\n"
			   "echo \"$SLURM_NTASKS $shell\" > csh.txt\n");
		t = gen(&s, "1", -1);
		assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
		got = read_rel("work/csh.txt", NULL);
		assert_non_null(strstr(got, "2 "));
		free(got);
		free(t);
		hb_jobspec_free(&s);
	}

	/* A missing interpreter fails like exec does. */
	mkspec(&s, "#!/no/such/interpreter\necho hi\n");
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 127);
	free(t);
	hb_jobspec_free(&s);
}

static void test_run_chdir_and_fallback(void **state)
{
	struct hb_jobspec s;
	char *t, *got, *env;
	char submit[PATH_MAX + 32];
	const char *extra[2];

	(void)state;
	/* No hostfile: one host, every task on it. */
	mkdir(path("work"), 0755);
	mkdir(path("work/sub"), 0755);
	mkspec(&s, "pwd > \"$SLURM_SUBMIT_DIR/pwd.txt\"\n" ENV_DUMP);
	s.chdir = "sub";
	s.ntasks = 3;
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("no-such-file")), 0);
	got = read_rel("work/pwd.txt", NULL);
	assert_non_null(strstr(got, "/work/sub\n"));
	free(got);
	env = read_rel("work/sub/env.txt", NULL);
	assert_env(env, "SLURM_NTASKS", "3");
	assert_env(env, "SLURM_JOB_NUM_NODES", "1");
	assert_env(env, "SLURM_TASKS_PER_NODE", "3");
	free(env);
	got = read_rel("err", NULL);
	assert_non_null(strstr(got, "no hosts in"));
	free(got);
	free(t);
	hb_jobspec_free(&s);

	/* HPCBRIDGE_SUBMIT_DIR names the submit directory; a chdir that
	 * does not exist sends the job to /tmp, as slurmstepd does. */
	mkspec(&s, "pwd > \"$SLURM_SUBMIT_DIR/pwd.txt\"\n");
	s.chdir = "missing";
	snprintf(submit, sizeof(submit), "HPCBRIDGE_SUBMIT_DIR=%s",
		 path("work/sub"));
	extra[0] = submit;
	extra[1] = NULL;
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, extra), 0);
	got = read_rel("work/sub/pwd.txt", NULL);
	assert_string_equal(got, "/tmp\n");
	free(got);
	got = read_rel("err", NULL);
	assert_non_null(strstr(got, "cannot chdir to ./missing"));
	free(got);
	free(t);
	hb_jobspec_free(&s);
}

/* A fake Open MPI / Hydra mpirun that logs its arguments and the
 * resource-manager variables it can see. */
static void fake_mpi(const char *version)
{
	char text[1024];
	int n;

	mkdir(path("fake"), 0755);
	n = snprintf(text, sizeof(text),
		     "#!/bin/sh\n"
		     "if [ \"$1\" = --version ]; then\n"
		     "  echo VERSION >> \"$FAKE_LOG\"; echo '%s'; exit 0\n"
		     "fi\n"
		     "{ echo CALL; for a do printf 'ARG %%s\\n' \"$a\"; done\n"
		     "  env | grep -E '^(SLURM|PBS_)' | sed 's/^/RM /'\n"
		     "  printf 'NCCL %%s\\n' \"$NCCL_DEBUG\"\n"
		     "  env | grep -E '^(NCCL|UCX)_' | sort | sed 's/^/SEEN /'\n"
		     "} >> \"$FAKE_LOG\"\n",
		     version);
	assert_true(n > 0 && (size_t)n < sizeof(text));
	write_file("fake/mpirun", text, (size_t)n, 0755);
	write_file("fake/mpiexec", text, (size_t)n, 0755);
}

static char *run_with_fake(const char *version, const struct hb_jobspec *s,
			   const char *hosts, int want)
{
	static char log[PATH_MAX + 16], pathv[PATH_MAX + 32];
	char hf[PATH_MAX + 32];
	const char *extra[3];
	char *t, *got;

	fake_mpi(version);
	write_str("hosts", hosts);
	snprintf(log, sizeof(log), "FAKE_LOG=%s", path("log"));
	snprintf(hf, sizeof(hf), "HPCBRIDGE_HOSTFILE=%s", path("hosts"));
	snprintf(pathv, sizeof(pathv), "%s:/usr/bin:/bin", path("fake"));
	extra[0] = log;
	extra[1] = hf;
	extra[2] = NULL;
	write_str("log", "");
	t = gen(s, "55", -1);
	assert_int_equal(run_launcher(t, pathv, extra), want);
	free(t);
	got = read_rel("log", NULL);
	return got;
}

static void test_run_wrappers_openmpi(void **state)
{
	struct hb_jobspec s;
	char *log, *err;

	(void)state;
	mkspec(&s, "#!/bin/sh\n"
		   "export NCCL_DEBUG=INFO UCX_TLS=rc NOT_FORWARDED=1\n"
		   "mpirun -np 4 ./hello 'a b'\n"
		   "mpiexec --hostfile mine ./hello -f x\n"
		   "srun --mpi=pmix -l --bogus ./hello\n"
		   "srun -n 3 --bogus --kill-on-bad-exit ./hello\n"
		   "srun -N1 -c2 ./hello\n"
		   "srun --ntasks-per-node=2 -w n1 ./hello\n");
	assert_int_equal(hb_jobspec_add_env(&s, "MY_SETTING", "v"), 0);
	log = run_with_fake("mpirun (Open MPI) 5.0.3", &s,
			    "n0 slots=4\nn1 slots=4\n", 0);
	assert_int_equal(count_lines_with(log, "CALL\n"), 6);
	/* The flavour is asked once per launcher binary, then remembered. */
	assert_int_equal(count_lines_with(log, "VERSION\n"), 2);
	/* The hostfile is added, explicitly, unless the caller gave one. */
	assert_int_equal(count_lines_with(log, "ARG --hostfile\n"), 6);
	assert_int_equal(count_lines_with(log, "ARG mine\n"), 1);
	assert_non_null(strstr(log, "/hostfile\nARG -np\nARG 4\nARG ./hello\n"
				    "ARG a b\n"));
	/* The job's NCCL/UCX settings and its own variables go to every
	 * rank; others do not. */
	assert_int_equal(count_lines_with(log, "ARG -x\nARG NCCL_DEBUG\n"), 6);
	assert_int_equal(count_lines_with(log, "ARG -x\nARG UCX_TLS\n"), 6);
	assert_int_equal(count_lines_with(log, "ARG -x\nARG MY_SETTING\n"), 6);
	assert_null(strstr(log, "ARG NOT_FORWARDED\n"));
	assert_int_equal(count_lines_with(log, "NCCL INFO\n"), 6);
	/* The real mpirun never sees SLURM_* or PBS_*: it would try to
	 * launch through them. */
	assert_null(strstr(log, "RM "));
	/* srun: -np from SLURM_NTASKS, from -n, from -N and the per-node
	 * tasks, --ntasks-per-node with -w; -c binds. */
	assert_non_null(strstr(log, "ARG -np\nARG 8\nARG /bin/sh\n"));
	assert_non_null(strstr(log, "ARG -np\nARG 3\nARG /bin/sh\n"));
	assert_non_null(strstr(log, "ARG -np\nARG 4\nARG --map-by\n"
				    "ARG slot:PE=2\nARG /bin/sh\n"));
	assert_non_null(strstr(log, "ARG -np\nARG 2\nARG /bin/sh\n"));
	assert_non_null(strstr(log, "ARG SLURM_STEP_NODELIST=n1\n"));
	assert_non_null(strstr(log, "ARG SLURM_CPUS_PER_TASK=2\n"));
	assert_non_null(strstr(log, "ARG SLURM_JOB_ID=55\n"));
	assert_int_equal(count_lines_with(log, "ARG --\nARG ./hello\n"), 4);
	free(log);
	/* Ignored and unknown srun options are said once each. */
	err = read_rel("err", NULL);
	assert_int_equal(count_lines_with(err, "--bogus"), 1);
	assert_int_equal(count_lines_with(err, "srun: --mpi has no effect"), 1);
	assert_int_equal(count_lines_with(err, "srun: -l has no effect"), 1);
	assert_int_equal(count_lines_with(err, "--kill-on-bad-exit"), 1);
	free(err);
	hb_jobspec_free(&s);
}

static void test_run_wrappers_hydra(void **state)
{
	struct hb_jobspec s;
	char *log, *hf;

	(void)state;
	mkspec(&s, "#!/bin/sh\n"
		   "export NCCL_DEBUG=WARN\n"
		   "mpirun ./hello\n"
		   "cp \"$(dirname \"$PBS_NODEFILE\")/hostfile.hydra\" hf.txt\n"
		   "srun -n 2 ./hello\n");
	s.mpi = HB_MPI_MPICH;
	log = run_with_fake("HYDRA build details:", &s, "n0:2\nn1:2\n", 0);
	assert_int_equal(count_lines_with(log, "CALL\n"), 2);
	assert_int_equal(count_lines_with(log, "ARG -f\n"), 2);
	assert_null(strstr(log, "ARG --hostfile\n"));
	/* Hydra passes the environment itself: no -x. */
	assert_null(strstr(log, "ARG -x\n"));
	assert_int_equal(count_lines_with(log, "NCCL WARN\n"), 2);
	assert_non_null(strstr(log, "ARG -n\nARG 2\nARG /bin/sh\n"));
	assert_null(strstr(log, "RM "));
	free(log);
	hf = read_rel("work/hf.txt", NULL);
	assert_string_equal(hf, "n0:2\nn1:2\n");
	free(hf);
	hb_jobspec_free(&s);
}

/*
 * The fabric settings a script exports reach every rank: Open MPI's
 * mpirun is told to forward each (-x), on every launch, srun's included;
 * Hydra passes the environment itself.
 */
static void test_run_fabric_env(void **state)
{
	static const char *const names[] = {"NCCL_IB_DISABLE",
					    "NCCL_P2P_DISABLE",
					    "UCX_NET_DEVICES"};
	static const char *const seen[] = {"SEEN NCCL_IB_DISABLE=1\n",
					   "SEEN NCCL_P2P_DISABLE=1\n",
					   "SEEN UCX_NET_DEVICES=mlx5_0:1\n"};
	struct hb_jobspec s;
	char *log, want[64];

	(void)state;
	mkspec(&s, "#!/bin/sh\n"
		   "export NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1\n"
		   "export UCX_NET_DEVICES=mlx5_0:1\n"
		   "mpirun -np 4 ./rl_train\n"
		   "srun ./rl_train\n");
	log = run_with_fake("mpirun (Open MPI) 4.1.5", &s,
			    "n0 slots=2\nn1 slots=2\n", 0);
	assert_int_equal(count_lines_with(log, "CALL\n"), 2);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(want, sizeof(want), "ARG -x\nARG %s\n", names[i]);
		assert_int_equal(count_lines_with(log, want), 2);
		assert_int_equal(count_lines_with(log, seen[i]), 2);
	}
	free(log);
	log = run_with_fake("HYDRA build details:", &s, "n0:2\nn1:2\n", 0);
	assert_int_equal(count_lines_with(log, "CALL\n"), 2);
	assert_null(strstr(log, "ARG -x\n"));
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		assert_int_equal(count_lines_with(log, seen[i]), 2);
	free(log);
	hb_jobspec_free(&s);
}

/* Without any MPI on PATH, a one-task srun runs the program itself with
 * the task variables; more tasks fail clearly. */
static void test_run_srun_without_mpi(void **state)
{
	/* clang-format off */
	static const char *const tools[] = {
		"sh", "mktemp", "cat", "chmod", "mkdir", "uname", "env",
		"pwd", "cp",
	};
	/* clang-format on */
	struct hb_jobspec s;
	char *t, *got, dst[PATH_MAX], src[PATH_MAX];
	const char **extra;

	(void)state;
	mkdir(path("tools"), 0755);
	for (size_t i = 0; i < sizeof(tools) / sizeof(*tools); i++) {
		snprintf(src, sizeof(src), "/bin/%s", tools[i]);
		snprintf(dst, sizeof(dst), "%s/%s", path("tools"), tools[i]);
		if (access(src, X_OK) == 0)
			assert_int_equal(symlink(src, dst), 0);
	}
	write_str("hosts", "n0 slots=2\n");
	mkspec(&s, "srun -n1 sh -c 'echo \"$SLURM_PROCID/$SLURM_NTASKS "
		   "$SLURM_STEP_ID $SLURM_JOB_ID\" > task.txt'\n"
		   "srun -n2 true\n");
	t = gen(&s, "31", -1);
	extra = hostenv("hosts");
	snprintf(src, sizeof(src), "%s", path("tools"));
	assert_int_equal(run_launcher(t, src, extra), 127);
	got = read_rel("work/task.txt", NULL);
	assert_string_equal(got, "0/1 0 31\n");
	free(got);
	got = read_rel("err", NULL);
	assert_non_null(strstr(got, "no mpirun or mpiexec"));
	free(got);
	free(t);
	hb_jobspec_free(&s);
}

static void test_run_scontrol_module(void **state)
{
	struct hb_jobspec s;
	char *t, *got;

	(void)state;
	write_str("hosts", "gpu-a slots=1\ngpu-b slots=1\n");
	mkspec(&s, "#!/bin/bash\nset -e\n"
		   "module load openmpi/4.1 cuda\n"
		   "ml gcc\n"
		   "scontrol show hostnames > h1.txt\n"
		   "scontrol show hostnames 'n[08-10],x,r[1-2]-g[1,3]' "
		   "> h2.txt\n"
		   "if scontrol show job 1; then exit 9; fi\n");
	t = gen(&s, "1", -1);
	assert_int_equal(run_launcher(t, NULL, hostenv("hosts")), 0);
	got = read_rel("work/h1.txt", NULL);
	assert_string_equal(got, "gpu-a\ngpu-b\n");
	free(got);
	got = read_rel("work/h2.txt", NULL);
	assert_string_equal(got, "n08\nn09\nn10\nx\nr1-g1\nr1-g3\nr2-g1\n"
				 "r2-g3\n");
	free(got);
	got = read_rel("err", NULL);
	assert_int_equal(count_lines_with(got, "'module load'"), 1);
	assert_non_null(strstr(got, "scontrol: only"));
	free(got);
	free(t);
	hb_jobspec_free(&s);
}

/* A mounted launcher carries only the job: small, with no runtime inside,
 * and it fails clearly when the runtime is not mounted. */
static void test_mounted_small_and_needs_runtime(void **state)
{
	struct hb_jobspec s;
	size_t rlen;
	const char *rt = hb_launcher_runtime(&rlen);
	char *t, *out;

	/* The runtime's own code is what a mounted launcher leaves out. */
	assert_non_null(strstr(rt, "hb_cmd_srun"));

	(void)state;
	mkspec(&s, "#!/bin/sh\necho ran\n");
	t = gen(&s, "7", -1);
	assert_true(strlen(t) < 2048);
	assert_true(rlen > 8192);
	assert_null(strstr(t, "hb_cmd_srun"));
	assert_non_null(strstr(t, "/opt/hpcbridge/launcher/runtime.sh"));
	assert_int_equal(run_launcher(t, NULL, NULL), 0);
	out = read_rel("out", NULL);
	assert_string_equal(out, "ran\n");
	free(out);
	/* Without the runtime file the launcher stops, and says why. */
	assert_int_equal(remove(runtime_path), 0);
	assert_int_equal(run_launcher(t, NULL, NULL), 1);
	out = read_rel("err", NULL);
	assert_non_null(strstr(out, "cannot read the launcher runtime"));
	free(out);
	out = read_rel("out", NULL);
	assert_string_equal(out, "");
	free(out);
	assert_true(strncmp(hb_launcher_runtime_name(), "hpcbridge-launcher-",
			    19) == 0);
	assert_int_equal(strlen(hb_launcher_runtime_name()), 19 + 8);
	free(t);
	hb_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_properties),
	    cmocka_unit_test(test_text_mpi_flavor),
	    cmocka_unit_test(test_text_quoting),
	    cmocka_unit_test(test_extract_roundtrip),
	    cmocka_unit_test(test_extract_delim_varies),
	    cmocka_unit_test(test_extract_rejects),
	    cmocka_unit_test(test_size_cap),
	    cmocka_unit_test(test_size_cap_message),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test_setup_teardown(test_run_openmpi_hosts, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_ssh_args, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_hydra_hosts_uneven, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_array, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_proxy_ids, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_quoting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_bytes_exact, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_interpreters, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_chdir_and_fallback, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_wrappers_openmpi, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_wrappers_hydra, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_fabric_env, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_srun_without_mpi, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_run_scontrol_module, setup,
					    teardown),
	    MOUNTED_TEST(test_run_openmpi_hosts),
	    MOUNTED_TEST(test_run_array),
	    MOUNTED_TEST(test_run_bytes_exact),
	    MOUNTED_TEST(test_run_wrappers_openmpi),
	    MOUNTED_TEST(test_run_wrappers_hydra),
	    MOUNTED_TEST(test_extract_roundtrip),
	    cmocka_unit_test_setup_teardown(test_mounted_small_and_needs_runtime,
					    setup_mounted, teardown),
	    BASH_TEST(test_run_openmpi_hosts),
	    BASH_TEST(test_run_quoting),
	    BASH_TEST(test_run_bytes_exact),
	    BASH_TEST(test_run_wrappers_openmpi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
