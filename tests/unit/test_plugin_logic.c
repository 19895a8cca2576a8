/*
 * test_plugin_logic.c - the Slurm plugins' logic without Slurm
 * (slurm-plugin/hbplugin.h): SPANK option checks and forwarding names,
 * the plugin's configuration, the decide request built from a job_desc,
 * the reply checks, and the job_desc rewrite (with an allocator that
 * fails on demand, to show a failed rewrite leaves the job as it was).
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "slurm-plugin/hbplugin.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/error.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/proto.h"
#include "hpcbridge/snapshot.h"
#include "slurmfix.h"
#include "testutil.h"

/* ------------------------------------------------------- allocator */

static int alloc_fail_at = -1; /* fail the n-th strdup (0-based); -1 never */
static int alloc_calls;

static char *t_strdup(const char *s)
{
	if (alloc_fail_at >= 0 && alloc_calls++ == alloc_fail_at)
		return NULL;
	return strdup(s);
}

static void t_free(void **p)
{
	free(*p);
	*p = NULL;
}

static const struct hb_slurm_alloc talloc = { t_strdup, t_free };

/* ------------------------------------------------------- job_desc */

static char **strv(const char *const *v, uint32_t *n)
{
	uint32_t c = 0;
	char **out;

	while (v[c])
		c++;
	out = calloc(c + 1, sizeof(char *));
	assert_non_null(out);
	for (uint32_t i = 0; i < c; i++)
		out[i] = strdup(v[i]);
	*n = c;
	return out;
}

static void strv_free(char **v, uint32_t n)
{
	for (uint32_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void jd_free(job_desc_msg_t *jd)
{
	char **fields[] = {
		&jd->account,
		&jd->admin_comment,
		&jd->comment,
		&jd->partition,
		&jd->script,
		&jd->name,
		&jd->tres_per_job,
		&jd->tres_per_node,
		&jd->tres_per_task,
		&jd->tres_per_socket,
		&jd->cpus_per_tres,
		&jd->mem_per_tres,
		&jd->features,
		&jd->req_nodes,
		&jd->exc_nodes,
		&jd->reservation,
		&jd->licenses,
		&jd->array_inx,
		&jd->work_dir,
		&jd->std_out,
		&jd->qos,
		&jd->burst_buffer,
		&jd->prefer,
		&jd->tres_bind,
		&jd->tres_freq,
		&jd->cluster_features,
		&jd->batch_features,
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		free(*fields[i]);
	strv_free(jd->environment, jd->env_size);
	strv_free(jd->spank_job_env, jd->spank_job_env_size);
	strv_free(jd->argv, jd->argc);
	memset(jd, 0, sizeof(*jd));
}

/* A GPU training job as sbatch sends it. */
static void jd_gpu(job_desc_msg_t *jd)
{
	static const char *const env[] = { "HOME=/home/alice", "PATH=/usr/bin",
					   NULL };
	static const char *const spank[] = {
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target=Kubernetes",
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_data=s3://hb-data/in",
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_checkpoint=relative",
		NULL
	};
	static const char *const argv[] = { "/home/alice/job.sh", "x", NULL };

	hb_fix_job_desc(jd);
	jd->name = strdup("train");
	jd->account = strdup("physics");
	jd->partition = strdup("gpu");
	jd->script = strdup("#!/bin/bash\n#SBATCH -N 2\nsrun ./train\n");
	jd->comment = strdup("mine");
	jd->min_nodes = jd->max_nodes = 2;
	jd->num_tasks = 8;
	jd->cpus_per_task = 4;
	jd->min_cpus = 32;
	jd->pn_min_memory = 4096;
	jd->time_limit = 60;
	jd->tres_per_node = strdup("gres:gpu:a100:4");
	jd->cpus_per_tres = strdup("gres:gpu:8");
	jd->features = strdup("ib");
	jd->req_nodes = strdup("n[1-2]");
	jd->reservation = strdup("maint");
	jd->array_inx = strdup("0-15:5,20%2");
	jd->environment = strv(env, &jd->env_size);
	jd->spank_job_env = strv(spank, &jd->spank_job_env_size);
	jd->argv = strv(argv, &jd->argc);
}

/* ------------------------------------------------------- options */

static void test_opt_check(void **state)
{
	static const struct {
		enum hb_opt o;
		const char *v;
		int ok;
	} cases[] = {
		{ HB_OPT_TARGET, "auto", 1 },
		{ HB_OPT_TARGET, "slurm", 1 },
		{ HB_OPT_TARGET, "KUBERNETES", 1 },
		{ HB_OPT_TARGET, "k8s", 0 },
		{ HB_OPT_TARGET, "", 0 },
		{ HB_OPT_TARGET, "slurm ", 0 },
		{ HB_OPT_DEADLINE, "now+2hours", 1 },
		{ HB_OPT_DEADLINE, "18:00", 1 },
		{ HB_OPT_DEADLINE, "2025-06-30T18:00", 1 },
		{ HB_OPT_DEADLINE, "2025-06-30", 1 },
		{ HB_OPT_DEADLINE, "tomorrow", 1 },
		{ HB_OPT_DEADLINE, "0630", 1 },
		{ HB_OPT_DEADLINE, "garbage", 0 },
		{ HB_OPT_DEADLINE, "", 0 },
		{ HB_OPT_DEADLINE, "2025-13-01", 0 },
		{ HB_OPT_DEADLINE, "now+2hours\n#SBATCH -p x", 0 },
		{ HB_OPT_CHECKPOINT, "/scratch/ckpt", 1 },
		{ HB_OPT_CHECKPOINT, "/", 1 },
		{ HB_OPT_CHECKPOINT, "/a/..b/c", 1 },
		{ HB_OPT_CHECKPOINT, "scratch/ckpt", 0 },
		{ HB_OPT_CHECKPOINT, "/a/../etc", 0 },
		{ HB_OPT_CHECKPOINT, "/a/..", 0 },
		{ HB_OPT_CHECKPOINT, "/a\nb", 0 },
		{ HB_OPT_CHECKPOINT, "", 0 },
		{ HB_OPT_DATA, "/data/in", 1 },
		{ HB_OPT_DATA, "s3://hb-data", 1 },
		{ HB_OPT_DATA, "s3://hb-data/prefix/x", 1 },
		{ HB_OPT_DATA, "s3://a.b-c/x", 1 },
		{ HB_OPT_DATA, "s3://", 0 },
		{ HB_OPT_DATA, "s3:///x", 0 },
		{ HB_OPT_DATA, "s3://ab/x", 0 },
		{ HB_OPT_DATA, "s3://Bad_Bucket/x", 0 },
		{ HB_OPT_DATA, "s3://a..b/x", 0 },
		{ HB_OPT_DATA, "s3://-abc/x", 0 },
		{ HB_OPT_DATA, "s3://abc-/x", 0 },
		{ HB_OPT_DATA, "s3://abc/x\ty", 0 },
		{ HB_OPT_DATA, "data/in", 0 },
		{ HB_OPT_DATA, "", 0 },
		{ HB_OPT_FABRIC, "rdma", 1 },
		{ HB_OPT_FABRIC, "TCP", 1 },
		{ HB_OPT_FABRIC, "auto", 1 },
		{ HB_OPT_FABRIC, "ib", 0 },
		{ HB_OPT_FABRIC, "rdma\n#SBATCH -p x", 0 },
		{ HB_OPT_FABRIC, "", 0 },
	};
	char longv[HB_OPT_VALUE_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_err err = { 0 };
		int rc = hb_opt_check(cases[i].o, cases[i].v, &err);

		if (cases[i].ok != (rc == 0))
			fail_msg("--%s=%s: rc %d (%s)", hb_opt_name(cases[i].o),
				 cases[i].v, rc, err.msg);
		if (rc) {
			char want[64];

			assert_int_equal(rc, HB_EINVAL);
			snprintf(want, sizeof(want),
				 "--%s: ", hb_opt_name(cases[i].o));
			assert_non_null(strstr(err.msg, want));
			/* A value never brings a newline into the message. */
			assert_null(strchr(err.msg, '\n'));
		}
	}
	memset(longv, 'a', sizeof(longv) - 1);
	longv[0] = '/';
	longv[sizeof(longv) - 1] = '\0';
	{
		struct hb_err err = { 0 };

		assert_int_equal(hb_opt_check(HB_OPT_CHECKPOINT, longv, &err),
				 HB_EINVAL);
		assert_non_null(strstr(err.msg, "longer than"));
		longv[sizeof(longv) - 2] = '\0';
		assert_int_equal(hb_opt_check(HB_OPT_CHECKPOINT, longv, NULL),
				 0);
	}
	assert_int_equal(hb_opt_check(HB_OPT_TARGET, NULL, NULL), HB_EINVAL);
	assert_int_equal(hb_opt_check(HB__OPT_COUNT, "x", NULL), HB_EINVAL);
	assert_null(hb_opt_name(HB__OPT_COUNT));
	assert_string_equal(hb_opt_key(HB_OPT_CHECKPOINT), "checkpoint");
	{
		struct hb_err err = { 0 };

		hb_opt_check(HB_OPT_TARGET, "bogus", &err);
		assert_string_equal(err.msg, "--hpcbridge-target: 'bogus' is "
					     "not auto, slurm or kubernetes");
	}
}

static void test_opt_env(void **state)
{
	static const char *const spank[] = {
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target2=no",
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target",
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target=slurm", NULL
	};
	static const char *const env[] = {
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target=auto",
		"SPANK__SLURM_SPANK_OPTION_hpcbridge_hpcbridge_data=/d",
		"_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_deadline=", NULL
	};
	char name[128], small[20];
	char **s, **e;
	uint32_t ns, ne;

	(void)state;
	assert_int_equal(hb_opt_env_name(HB_OPT_TARGET, name, sizeof(name)), 0);
	assert_string_equal(name,
			    "_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target");
	assert_int_equal(hb_opt_env_name(HB_OPT_CHECKPOINT, name, sizeof(name)),
			 0);
	assert_string_equal(
		name, "_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_checkpoint");
	assert_int_equal(hb_opt_env_name(HB_OPT_DATA, small, sizeof(small)),
			 HB_ETOOBIG);

	s = strv(spank, &ns);
	e = strv(env, &ne);
	/* The SPANK environment first, then the environment. */
	assert_string_equal(hb_opt_find(HB_OPT_TARGET, s, ns, e, ne), "slurm");
	assert_string_equal(hb_opt_find(HB_OPT_TARGET, NULL, 0, e, ne), "auto");
	/* The SPANK_ prefix of prolog/epilog environments. */
	assert_string_equal(hb_opt_find(HB_OPT_DATA, s, ns, e, ne), "/d");
	assert_string_equal(hb_opt_find(HB_OPT_DEADLINE, s, ns, e, ne), "");
	assert_null(hb_opt_find(HB_OPT_CHECKPOINT, s, ns, e, ne));
	/* Counts are honoured; a NULL entry ends an array. */
	assert_null(hb_opt_find(HB_OPT_TARGET, s, 2, NULL, 0));
	free(s[1]);
	s[1] = NULL;
	assert_null(hb_opt_find(HB_OPT_TARGET, s, ns, NULL, 0));
	strv_free(s, ns);
	strv_free(e, ne);
}

/* ------------------------------------------------------- config */

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/hb-plugin-conf-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void conf_case(const char *yaml, int rc, const char *socket, int tmo,
		      const char *msg)
{
	struct hb_plugin_conf c;
	struct hb_err err = { 0 };
	char *path = write_tmp(yaml);
	int got = hb_plugin_conf_load(path, &c, &err);

	if (got != rc)
		fail_msg("%s: rc %d, want %d (%s)", yaml, got, rc, err.msg);
	assert_string_equal(c.socket, socket);
	assert_int_equal(c.timeout_ms, tmo);
	if (msg && !strstr(err.msg, msg))
		fail_msg("%s: message '%s' lacks '%s'", yaml, err.msg, msg);
	unlink(path);
	free(path);
}

static void test_conf(void **state)
{
	const char *def = HB_PLUGIN_DEFAULT_SOCKET;
	int dt = HB_PLUGIN_DEFAULT_TIMEOUT_MS;
	struct hb_plugin_conf c;
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_plugin_conf_load("/nonexistent/hb.yaml", &c, &err),
			 HB_ENOENT);
	assert_string_equal(c.socket, def);
	assert_int_equal(c.timeout_ms, 20);
	assert_int_equal(hb_plugin_conf_load("/tmp", &c, NULL), HB_EIO);

	conf_case("", 0, def, dt, NULL);
	conf_case("daemon:\n  socket: /run/x.sock\nplugin:\n  timeout_ms: 50\n",
		  0, "/run/x.sock", 50, NULL);
	/* The daemon's other settings are read (and checked) too. */
	conf_case("kubernetes:\n  namespace: hpc\nplugin:\n  timeout_ms: 5\n",
		  0, def, 5, NULL);
	conf_case("plugin:\n  timeout_ms: 5000\n", 0, def, 5000, NULL);
	conf_case("daemon:\n  socket: run/x.sock\n", HB_EINVAL, def, dt,
		  ":2: daemon.socket: 'run/x.sock' must be an absolute path");
	conf_case("daemon:\n  socket: /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaa\n",
		  HB_EINVAL, def, dt, "daemon.socket");
	/* A bad timeout keeps the default socket too: nothing half-read. */
	conf_case("daemon:\n  socket: /run/x.sock\nplugin:\n  timeout_ms: 0\n",
		  HB_EINVAL, def, dt, ":4: plugin.timeout_ms");
	conf_case("plugin:\n  timeout_ms: 5001\n", HB_EINVAL, def, dt,
		  "plugin.timeout_ms");
	conf_case("plugin:\n  timeout_ms: fast\n", HB_EINVAL, def, dt,
		  "plugin.timeout_ms");
	/* An error anywhere in the file: the daemon would not start with it
	 * either, and the plugin says so and keeps the defaults. */
	conf_case("plugin:\n  timeout_ms: 50\nkubernetes:\n  nope: 1\n",
		  HB_EINVAL, def, dt, ":4: kubernetes.nope");
	conf_case("plugin: [1, 2\n", HB_EINVAL, def, dt, NULL);
}

/* daemon.user, resolved once (in init()) to the uid the server check
 * trusts besides root. */
static void uid_case(const char *yaml, int rc, uid_t want, const char *msg)
{
	struct hb_plugin_conf c;
	struct hb_err err = { 0 };
	char *path = write_tmp(yaml);
	int got = hb_plugin_conf_load(path, &c, &err);

	if (got != rc)
		fail_msg("%s: rc %d, want %d (%s)", yaml, got, rc, err.msg);
	if (c.daemon_uid != want)
		fail_msg("%s: daemon uid %lu, want %lu", yaml,
			 (unsigned long)c.daemon_uid, (unsigned long)want);
	if (msg && !strstr(err.msg, msg))
		fail_msg("%s: message '%s' lacks '%s'", yaml, err.msg, msg);
	unlink(path);
	free(path);
}

static void test_conf_daemon_user(void **state)
{
	struct hb_plugin_conf c;
	struct passwd *pw = getpwnam("nobody");

	(void)state;
	hb_plugin_conf_defaults(&c);
	assert_int_equal(c.daemon_uid, 0);
	uid_case("", 0, 0, NULL);
	uid_case("daemon:\n  user: root\n", 0, 0, NULL);
	uid_case("daemon:\n  user: '4242'\n", 0, 4242, NULL);
	uid_case("daemon:\n  user: 4243\n", HB_EINVAL, 0,
		 "daemon.user: must be a string, not a number (put it in "
		 "quotes)");
	if (pw)
		uid_case("daemon:\n  user: nobody\n", 0, pw->pw_uid, NULL);
	/* An unknown user: an error naming the file and the user, and only
	 * root is trusted (the default). */
	uid_case("daemon:\n  user: no-such-user-hb\n", HB_ENOENT, 0,
		 "daemon.user: no user 'no-such-user-hb'");
	uid_case("daemon:\n  user: 'bad name'\n", HB_EINVAL, 0,
		 "daemon.user");
}

/* ------------------------------------------------------- request */

static void test_wanted(void **state)
{
	static const char *const env[] = { "A=1", "HPCBRIDGE_JOB_ID=hb-7",
					   NULL };
	job_desc_msg_t jd;

	(void)state;
	assert_int_equal(hb_decide_wanted(NULL), 0);
	hb_fix_job_desc(&jd);
	assert_int_equal(hb_decide_wanted(&jd), 0); /* salloc, srun */
	jd.script = strdup("#!/bin/sh\ntrue\n");
	assert_int_equal(hb_decide_wanted(&jd), 1);
	jd.het_job_offset = 1;
	assert_int_equal(hb_decide_wanted(&jd), 0);
	jd.het_job_offset = NO_VAL;
	jd.environment = strv(env, &jd.env_size);
	assert_int_equal(hb_decide_wanted(&jd), 0);
	jd_free(&jd);
}

static const char *jstr(const cJSON *o, const char *path)
{
	const cJSON *v = o;
	char buf[128], *p, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = strtok_r(buf, ".", &save); p && v;
	     p = strtok_r(NULL, ".", &save))
		v = cJSON_GetObjectItemCaseSensitive(v, p);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *path)
{
	const cJSON *v = o;
	char buf[128], *p, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = strtok_r(buf, ".", &save); p && v;
	     p = strtok_r(NULL, ".", &save))
		v = cJSON_GetObjectItemCaseSensitive(v, p);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void test_request(void **state)
{
	job_desc_msg_t jd;
	struct hb_err err = { 0 };
	cJSON *req, *x;
	char *txt;

	(void)state;
	jd_gpu(&jd);
	req = hb_decide_request(&jd, &err);
	assert_non_null(req);
	assert_string_equal(jstr(req, "op"), "decide");
	/* The uid only: a name would take an NSS lookup under slurmctld's
	 * lock; the daemon resolves it. */
	assert_null(cJSON_GetObjectItemCaseSensitive(req, "user"));
	assert_null(jstr(req, "jobspec.user"));
	assert_true(jnum(req, "uid") == 1000);
	assert_string_equal(jstr(req, "account"), "physics");
	assert_string_equal(jstr(req, "partition"), "gpu");
	assert_string_equal(jstr(req, "slurm_job_name"), "train");
	assert_true(jnum(req, "time_limit_min") == 60);
	/* Checked and lower-cased; the relative checkpoint is dropped. */
	assert_string_equal(jstr(req, "target"), "kubernetes");
	assert_string_equal(jstr(req, "options.data"), "s3://hb-data/in");
	assert_null(jstr(req, "options.checkpoint"));
	assert_string_equal(jstr(req, "script"), jd.script);
	x = cJSON_GetObjectItemCaseSensitive(req, "argv");
	assert_int_equal(cJSON_GetArraySize(x), 2);
	assert_string_equal(cJSON_GetArrayItem(x, 1)->valuestring, "x");
	x = cJSON_GetObjectItemCaseSensitive(req, "env");
	assert_int_equal(cJSON_GetArraySize(x), 2);

	/* The jobspec: what Slurm resolved. */
	assert_string_equal(jstr(req, "jobspec.kind"), "jobspec");
	assert_true(jnum(req, "jobspec.nodes_min") == 2);
	assert_true(jnum(req, "jobspec.ntasks") == 8);
	assert_true(jnum(req, "jobspec.cpus_per_task") == 4);
	assert_string_equal(jstr(req, "jobspec.mem.kind"), "per_node");
	assert_true(jnum(req, "jobspec.mem.mb") == 4096);
	assert_string_equal(jstr(req, "jobspec.gpus.scope"), "node");
	assert_string_equal(jstr(req, "jobspec.gpus.type"), "a100");
	assert_true(jnum(req, "jobspec.gpus.count") == 4);
	assert_true(jnum(req, "jobspec.time_limit") == 3600);
	assert_string_equal(jstr(req, "jobspec.constraint"), "ib");
	/* --constraint=ib asks for RDMA, said in words */
	assert_string_equal(jstr(req, "jobspec.fabric"), "rdma");
	assert_string_equal(jstr(req, "jobspec.fabric_why"), "--constraint=ib");
	assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(req, "jobspec"),
		"fabric_inferred"));
	assert_string_equal(jstr(req, "jobspec.array.spec"), "0-15:5,20%2");
	assert_true(jnum(req, "jobspec.array.max_running") == 2);
	x = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(req, "jobspec"),
			"array"),
		"ranges");
	txt = cJSON_PrintUnformatted(x);
	assert_string_equal(txt, "[[0,15,5],[20,20,1]]");
	cJSON_free(txt);
	cJSON_Delete(req);

	/* Unlimited time, memory per CPU, GPUs per task. */
	jd.time_limit = INFINITE;
	jd.pn_min_memory = 2048 | MEM_PER_CPU;
	free(jd.tres_per_node);
	jd.tres_per_node = NULL;
	jd.tres_per_task = strdup("license/x:1,gres/gpu:1");
	free(jd.array_inx);
	jd.array_inx = strdup("1-3,bad");
	req = hb_decide_request(&jd, &err);
	assert_non_null(req);
	assert_true(jnum(req, "time_limit_min") == -1);
	assert_string_equal(jstr(req, "jobspec.time_limit"), "UNLIMITED");
	assert_string_equal(jstr(req, "jobspec.mem.kind"), "per_cpu");
	assert_true(jnum(req, "jobspec.mem.mb") == 2048);
	assert_string_equal(jstr(req, "jobspec.gpus.scope"), "task");
	assert_true(jnum(req, "jobspec.gpus.count") == 1);
	assert_null(jstr(req, "jobspec.gpus.type"));
	assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(req, "jobspec"), "array"));
	cJSON_Delete(req);
	jd_free(&jd);
}

/* The fabric: --hpcbridge-fabric over the script's variables; without
 * it, the variables; a bad value is left out, as sbatch refused it. */
static void test_request_fabric(void **state)
{
	static const char *const spank[][2] = {
		{ "_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_fabric=tcp", "tcp" },
		{ "_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_fabric=ib", NULL },
	};
	job_desc_msg_t jd;
	cJSON *req;

	(void)state;
	hb_fix_job_desc(&jd);
	jd.script = strdup("#!/bin/bash\nexport UCX_NET_DEVICES=mlx5_0:1\n"
			   "srun ./a\n");
	req = hb_decide_request(&jd, NULL);
	assert_string_equal(jstr(req, "jobspec.fabric"), "rdma");
	assert_string_equal(jstr(req, "jobspec.fabric_why"),
			    "UCX_NET_DEVICES=mlx5_0:1 at script:2");
	/* nothing else of the body comes into the plugin's jobspec */
	assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(req, "jobspec"), "env"));
	cJSON_Delete(req);
	for (size_t i = 0; i < sizeof(spank) / sizeof(spank[0]); i++) {
		const char *const env[] = { spank[i][0], NULL };

		jd.spank_job_env = strv(env, &jd.spank_job_env_size);
		req = hb_decide_request(&jd, NULL);
		if (spank[i][1]) {
			assert_string_equal(jstr(req, "jobspec.fabric"),
					    spank[i][1]);
			assert_string_equal(jstr(req, "options.fabric"),
					    spank[i][1]);
			assert_string_equal(jstr(req, "jobspec.fabric_why"),
					    "--hpcbridge-fabric=tcp");
		} else {
			assert_null(jstr(req, "options.fabric"));
			assert_string_equal(jstr(req, "jobspec.fabric"), "rdma");
		}
		cJSON_Delete(req);
		strv_free(jd.spank_job_env, jd.spank_job_env_size);
		jd.spank_job_env = NULL;
		jd.spank_job_env_size = 0;
	}
	jd_free(&jd);
}

static void test_request_caps(void **state)
{
	job_desc_msg_t jd;
	cJSON *req, *env;
	size_t bytes = 0;
	char big[1024];

	(void)state;
	hb_fix_job_desc(&jd);
	jd.script = strdup("#!/bin/sh\ntrue\n");
	jd.env_size = 1000;
	jd.environment = calloc(jd.env_size + 1, sizeof(char *));
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (uint32_t i = 0; i < jd.env_size; i++)
		jd.environment[i] = strdup(big);
	req = hb_decide_request(&jd, NULL);
	assert_non_null(req);
	env = cJSON_GetObjectItemCaseSensitive(req, "env");
	assert_true(cJSON_GetArraySize(env) > 0);
	assert_true(cJSON_GetArraySize(env) < 1000);
	for (int i = 0; i < cJSON_GetArraySize(env); i++)
		bytes += strlen(cJSON_GetArrayItem(env, i)->valuestring);
	assert_true(bytes <= HB_DECIDE_ENV_MAX);
	/* No options at all: no "target", no "options". */
	assert_null(cJSON_GetObjectItemCaseSensitive(req, "target"));
	assert_null(cJSON_GetObjectItemCaseSensitive(req, "options"));
	cJSON_Delete(req);
	jd_free(&jd);
	assert_null(hb_decide_request(NULL, NULL));
}

/* Bytes that are not UTF-8 (a Latin-1 script) still make a request the
 * daemon accepts. */
static void test_request_utf8(void **state)
{
	static const char *const env[] = { "LANG=fr_FR.ISO-8859-1",
					   "MSG=\xe9t\xe9", "OK=\xc3\xa9",
					   NULL };
	static const char *const bad[] = { "\xc0\xaf", "\xed\xa0\x80",
					   "\xf4\x90\x80\x80", "\xe2\x82",
					   NULL };
	job_desc_msg_t jd;
	cJSON *req, *back = NULL;
	char *txt;

	(void)state;
	hb_fix_job_desc(&jd);
	jd.name = strdup("caf\xe9");
	jd.script = strdup("#!/bin/sh\n# r\xe9sum\xe9 \xff\n");
	jd.environment = strv(env, &jd.env_size);
	req = hb_decide_request(&jd, NULL);
	assert_non_null(req);
	txt = cJSON_PrintUnformatted(req);
	assert_non_null(txt);
	assert_int_equal(
		hb_proto_parse(txt, strlen(txt), HB_PROTO_REQUEST, &back, NULL),
		0);
	assert_string_equal(jstr(back, "slurm_job_name"), "caf\xef\xbf\xbd");
	assert_string_equal(jstr(back, "jobspec.name"), "caf\xef\xbf\xbd");
	assert_string_equal(jstr(back, "script"),
			    "#!/bin/sh\n# r\xef\xbf\xbdsum\xef\xbf\xbd "
			    "\xef\xbf\xbd\n");
	/* Valid UTF-8 is kept as it is. */
	assert_string_equal(
		cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(back, "env"), 2)
			->valuestring,
		"OK=\xc3\xa9");
	cJSON_Delete(back);
	cJSON_free(txt);
	cJSON_Delete(req);

	/* Overlong, surrogate, beyond U+10FFFF, truncated: all replaced. */
	for (int i = 0; bad[i]; i++) {
		free(jd.name);
		jd.name = strdup(bad[i]);
		req = hb_decide_request(&jd, NULL);
		assert_non_null(req);
		txt = cJSON_PrintUnformatted(req);
		assert_int_equal(hb_proto_parse(txt, strlen(txt),
						HB_PROTO_REQUEST, &back, NULL),
				 0);
		assert_non_null(
			strstr(jstr(back, "slurm_job_name"), "\xef\xbf\xbd"));
		cJSON_Delete(back);
		cJSON_free(txt);
		cJSON_Delete(req);
	}
	jd_free(&jd);
}

/* The request as text (hb_decide_request_emit(), what the proxy's script
 * and the notice carry), parsed back; NULL if it is not a request. */
static cJSON *request_text(const job_desc_msg_t *jd)
{
	struct hb_decide_job dj;
	struct hb_buf b;
	struct hb_emit *e;
	cJSON *back = NULL;

	assert_int_equal(hb_decide_job_read(jd, &dj, NULL), 0);
	hb_buf_init(&b, 0);
	e = hb_emit_new(HB_EMIT_JSON_COMPACT, &b);
	assert_non_null(e);
	assert_int_equal(hb_decide_request_emit(e, jd, &dj), 0);
	assert_int_equal(hb_emit_done(e), 0);
	if (hb_proto_parse(b.data, b.len, HB_PROTO_REQUEST, &back, NULL))
		back = NULL;
	hb_emit_free(e);
	hb_buf_free(&b);
	hb_decide_job_free(&dj);
	return back;
}

/* The text and the tree say the same, whatever bytes the job carries. */
static void test_request_text_is_tree(void **state)
{
	static const char *const env[] = { "MSG=\xe9t\xe9", "OK=\xc3\xa9",
					   "Q=\"\\\n\t\x01", NULL };
	job_desc_msg_t jd;
	cJSON *tree, *text;

	(void)state;
	for (int k = 0; k < 2; k++) {
		if (k == 0) {
			jd_gpu(&jd);
		} else {
			hb_fix_job_desc(&jd);
			jd.name = strdup("caf\xe9 \xc0\xaf");
			jd.script = strdup("#!/bin/sh\n# r\xe9sum\xe9 \xff\n");
			jd.environment = strv(env, &jd.env_size);
			jd.time_limit = INFINITE;
		}
		tree = hb_decide_request(&jd, NULL);
		text = request_text(&jd);
		assert_non_null(tree);
		assert_non_null(text);
		if (!cJSON_Compare(tree, text, 1)) {
			char *a = cJSON_PrintUnformatted(tree);
			char *b = cJSON_PrintUnformatted(text);

			fail_msg("tree %s\ntext %s", a, b);
		}
		cJSON_Delete(tree);
		cJSON_Delete(text);
		jd_free(&jd);
	}
}

/* What the plugin decides from the job description read once is what
 * the daemon decides from the request it is sent (hb_place_request_read()
 * of the text): the same verdict, cost, reason, explanation and
 * document. */
static void test_decide_read_alike(void **state)
{
	static const char policy[] =
		"version: 1\n"
		"defaults: {prefer: slurm, mem_per_cpu: 1Gi}\n"
		"slurm:\n"
		"  partitions:\n"
		"    batch: {max_nodes: 4, node: {cpus: 32, memory: 128Gi},\n"
		"            rates: {cpu_hour: 1.00}}\n"
		"    gpu: {max_nodes: 4, node: {cpus: 32, memory: 128Gi,\n"
		"          gpus: 4}}\n"
		"kubernetes:\n"
		"  namespace: hpc\n"
		"  node: {cpus: 64, memory: 256Gi, gpus: 8}\n"
		"  rates: {cpu_hour: 0.50, per_job: 0.10}\n"
		"rules:\n"
		"  - {name: physics, account: physics, partition: gpu,\n"
		"     prefer: kubernetes, budget: {amount: 100, period: month}}\n"
		"  - {name: stay, partition: batch, burst: never}\n";
	struct hb_policy pol;
	struct hb_err err = { 0 };
	const int64_t now = 1795248000;

	(void)state;
	if (hb_policy_parse(policy, strlen(policy), "p.yaml", &pol, &err))
		fail_msg("%s", err.msg);
	for (int k = 0; k < 6; k++) {
		struct hb_snapshot s1, s2;
		struct hb_place_out a = { 0 }, b = { 0 };
		struct hb_place_request q;
		struct hb_decide_job dj;
		job_desc_msg_t jd;
		cJSON *text, *j1, *j2;
		int rc1, rc2;

		jd_gpu(&jd);
		if (k != 3) { /* bursts: no RDMA asked for (3: rejected) */
			free(jd.features);
			jd.features = NULL;
			free(jd.tres_per_node);
			jd.tres_per_node = strdup("gres:gpu:4");
		}
		if (k == 1) { /* no options: the policy chooses */
			strv_free(jd.spank_job_env, jd.spank_job_env_size);
			jd.spank_job_env = NULL;
			jd.spank_job_env_size = 0;
		} else if (k == 2) { /* stays; no time limit */
			free(jd.partition);
			jd.partition = strdup("batch");
			free(jd.tres_per_node);
			jd.tres_per_node = NULL;
			jd.time_limit = NO_VAL;
		} else if (k == 4) { /* Latin-1 bytes: charged under the
				      * account the daemon reads */
			free(jd.account);
			jd.account = strdup("physics\xe9");
			free(jd.name);
			jd.name = strdup("caf\xe9");
		} else if (k == 5) { /* 400 bytes, 1200 once mended: too
				      * long for both */
			free(jd.name);
			jd.name = calloc(1, 401);
			assert_non_null(jd.name);
			memset(jd.name, 0xe9, 400);
		}
		hb_snapshot_init(&s1, now);
		hb_snapshot_init(&s2, now);
		assert_int_equal(hb_decide_job_read(&jd, &dj, NULL), 0);
		text = request_text(&jd);
		assert_non_null(text);
		rc1 = hb_place_job(&pol, &s1, &dj.job, now, NULL, &a, &err);
		rc2 = hb_place_request_read(text, dj.user, &q, &err);
		if (!rc2)
			rc2 = hb_place_job(&pol, &s2, &q.job, now, NULL, &b,
					   &err);
		assert_int_equal(rc1, k == 5 ? HB_EINVAL : 0);
		assert_int_equal(rc2, rc1);
		/* the same spend charged, under the same account */
		j1 = hb_snapshot_to_json(&s1);
		j2 = hb_snapshot_to_json(&s2);
		assert_true(cJSON_Compare(j1, j2, 1));
		cJSON_Delete(j1);
		cJSON_Delete(j2);
		if (rc1)
			goto next;
		assert_int_equal(a.target, b.target);
		assert_true(a.cost_micro == b.cost_micro);
		assert_string_equal(a.rule, b.rule);
		assert_string_equal(a.reason, b.reason);
		assert_string_equal(a.explanation, b.explanation);
		assert_string_equal(a.doc_json, b.doc_json);
		/* and the cases differ, so the test can tell */
		if (k < 5 && a.target != (k == 2   ? HB_DECIDE_SLURM
					  : k == 3 ? HB_DECIDE_REJECT
						   : HB_DECIDE_KUBE))
			fail_msg("case %d: %d %s", k, a.target, a.reason);
		if (k == 4)
			assert_true(a.cost_micro > 0);
next:
		hb_place_out_free(&a);
		hb_place_out_free(&b);
		cJSON_Delete(text);
		hb_decide_job_free(&dj);
		hb_snapshot_free(&s1);
		hb_snapshot_free(&s2);
		jd_free(&jd);
	}
	hb_policy_free(&pol);
}

/* ------------------------------------------------------- reply */

static int parse_text(const char *json, struct hb_plugin_decision *d,
		      struct hb_err *err, cJSON **keep)
{
	cJSON *r = cJSON_Parse(json);
	int rc;

	assert_non_null(r);
	rc = hb_plugin_decision_parse(r, d, err);
	*keep = r;
	return rc;
}

#define K8S_OK                                                                 \
	"{\"ok\":true,\"id\":\"hb-000042\",\"target\":\"kubernetes\","         \
	"\"reason\":\"gpu\",\"proxy\":{\"partition\":\"burst\","               \
	"\"time_limit_min\":65,\"cpus\":1,\"mem_mb\":64,"                      \
	"\"script\":\"#!/bin/sh\\nexec hpcbridge shadow hb-000042\\n\","       \
	"\"comment\":\"hpcbridge:hb-000042 kubernetes\"},"                     \
	"\"admin_comment\":\"hpcbridge:hb-000042 target=kubernetes\"}"

static void test_parse(void **state)
{
	static const struct {
		const char *json;
		int rc;
	} bad[] = {
		{ "{}", HB_EPROTO },
		{ "{\"ok\":1}", HB_EPROTO },
		{ "{\"ok\":false,\"error\":{\"code\":\"EPERM\","
		  "\"message\":\"no\"}}",
		  HB_EPERM },
		{ "{\"ok\":false}", HB_EPROTO },
		{ "{\"ok\":false,\"error\":{\"code\":\"OK\"}}", HB_EPROTO },
		{ "{\"ok\":true,\"target\":\"slurm\"}", HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb 1\",\"target\":\"slurm\"}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":7,\"target\":\"slurm\"}", HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\"}", HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"pbs\"}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"slurm\","
		  "\"admin_comment\":\"a\\nb\"}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\"}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\","
		  "\"proxy\":{\"partition\":\"burst\",\"script\":\"echo\"}}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\","
		  "\"proxy\":{\"partition\":\"a b\",\"script\":\"#!/bin/sh\"}}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\","
		  "\"proxy\":{\"partition\":\"b\",\"script\":\"#!/bin/sh\","
		  "\"time_limit_min\":0}}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\","
		  "\"proxy\":{\"partition\":\"b\",\"script\":\"#!/bin/sh\","
		  "\"cpus\":1.5}}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\","
		  "\"proxy\":{\"partition\":\"b\",\"script\":\"#!/bin/sh\","
		  "\"mem_mb\":-1}}",
		  HB_EPROTO },
		{ "{\"ok\":true,\"id\":\"hb-1\",\"target\":\"kubernetes\","
		  "\"proxy\":{\"partition\":\"b\",\"script\":\"#!/bin/sh\","
		  "\"comment\":\"x\\ny\"}}",
		  HB_EPROTO },
		{ "[1]", HB_EPROTO },
	};
	struct hb_plugin_decision d;
	struct hb_err err = { 0 };
	cJSON *r;

	(void)state;
	assert_int_equal(parse_text(K8S_OK, &d, &err, &r), 0);
	assert_int_equal(d.target, HB_PLUGIN_KUBERNETES);
	assert_string_equal(d.id, "hb-000042");
	assert_string_equal(d.partition, "burst");
	assert_int_equal(d.time_limit_min, 65);
	assert_int_equal(d.cpus, 1);
	assert_true(d.mem_mb == 64);
	assert_string_equal(d.reason, "gpu");
	assert_non_null(strstr(d.script, "shadow hb-000042"));
	cJSON_Delete(r);

	/* Defaults: keep the time limit, 1 CPU, 64 MB. */
	assert_int_equal(
		parse_text("{\"ok\":true,\"id\":\"hb-1\",\"target\":"
			   "\"kubernetes\",\"proxy\":{\"partition\":\"b\","
			   "\"script\":\"#!/bin/sh\\n\"}}",
			   &d, &err, &r),
		0);
	assert_int_equal(d.time_limit_min, NO_VAL);
	assert_int_equal(d.cpus, 1);
	assert_true(d.mem_mb == 64);
	assert_null(d.comment);
	cJSON_Delete(r);

	assert_int_equal(parse_text("{\"ok\":true,\"id\":\"hb-1\",\"target\":"
				    "\"slurm\"}",
				    &d, &err, &r),
			 0);
	assert_int_equal(d.target, HB_PLUGIN_SLURM);
	assert_null(d.admin_comment);
	cJSON_Delete(r);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hb_err e = { 0 };
		int rc = parse_text(bad[i].json, &d, &e, &r);

		if (rc != bad[i].rc)
			fail_msg("%s: rc %d, want %d (%s)", bad[i].json, rc,
				 bad[i].rc, e.msg);
		assert_true(e.msg[0] != '\0');
		assert_null(d.id); /* zeroed */
		cJSON_Delete(r);
	}
	{
		struct hb_err e = { 0 };

		parse_text(bad[2].json, &d, &e, &r);
		assert_string_equal(e.msg, "daemon refused: EPERM: no");
		cJSON_Delete(r);
	}
	assert_int_equal(hb_plugin_decision_parse(NULL, &d, NULL), HB_EPROTO);
}

/* ------------------------------------------------------- apply */

static void test_apply_slurm(void **state)
{
	struct hb_plugin_decision d = { .target = HB_PLUGIN_SLURM,
					.id = "hb-9" };
	job_desc_msg_t jd;

	(void)state;
	jd_gpu(&jd);
	assert_int_equal(hb_plugin_decision_apply(&jd, &d, &talloc, NULL), 0);
	assert_string_equal(jd.admin_comment, "hpcbridge:hb-9 target=slurm");
	/* Appended to one already there; nothing else changes. */
	d.admin_comment = "hpcbridge:hb-9 again";
	assert_int_equal(hb_plugin_decision_apply(&jd, &d, &talloc, NULL), 0);
	assert_string_equal(jd.admin_comment, "hpcbridge:hb-9 target=slurm; "
					      "hpcbridge:hb-9 again");
	assert_string_equal(jd.partition, "gpu");
	assert_string_equal(jd.tres_per_node, "gres:gpu:a100:4");
	assert_int_equal(jd.min_nodes, 2);
	jd_free(&jd);
}

static void test_apply_kubernetes(void **state)
{
	struct hb_plugin_decision d;
	struct hb_err err = { 0 };
	job_desc_msg_t jd;
	cJSON *r;

	(void)state;
	assert_int_equal(parse_text(K8S_OK, &d, &err, &r), 0);
	jd_gpu(&jd);
	assert_int_equal(hb_plugin_decision_apply(&jd, &d, &talloc, &err), 0);
	assert_string_equal(jd.partition, "burst");
	assert_string_equal(jd.script,
			    "#!/bin/sh\nexec hpcbridge shadow hb-000042\n");
	assert_string_equal(jd.comment, "hpcbridge:hb-000042 kubernetes; mine");
	assert_string_equal(jd.admin_comment,
			    "hpcbridge:hb-000042 target=kubernetes orig: "
			    "partition=gpu nodes=2 tasks=8 cpus_per_task=4 "
			    "cpus=32 mem=4096M/node "
			    "tres_per_node=gres:gpu:a100:4 time=60");
	assert_int_equal(jd.min_nodes, 1);
	assert_int_equal(jd.max_nodes, 1);
	assert_int_equal(jd.num_tasks, 1);
	assert_int_equal(jd.min_cpus, 1);
	assert_int_equal(jd.max_cpus, 1);
	assert_int_equal(jd.cpus_per_task, NO_VAL16);
	assert_true(jd.pn_min_memory == 64);
	assert_int_equal(jd.time_limit, 65);
	assert_null(jd.tres_per_node);
	assert_null(jd.cpus_per_tres);
	assert_null(jd.features);
	assert_null(jd.req_nodes);
	assert_null(jd.reservation);
	/* Kept: the account is charged, the array still fans out. */
	assert_string_equal(jd.account, "physics");
	assert_string_equal(jd.array_inx, "0-15:5,20%2");
	jd_free(&jd);

	/* No time limit in the reply: the job's own stays. */
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(r, "proxy"), "time_limit_min");
	cJSON_DeleteItemFromObjectCaseSensitive(r, "admin_comment");
	assert_int_equal(hb_plugin_decision_parse(r, &d, &err), 0);
	jd_gpu(&jd);
	assert_int_equal(hb_plugin_decision_apply(&jd, &d, &talloc, &err), 0);
	assert_int_equal(jd.time_limit, 60);
	assert_true(strncmp(jd.admin_comment,
			    "hpcbridge:hb-000042 target=kubernetes orig: ",
			    44) == 0);
	jd_free(&jd);
	cJSON_Delete(r);
}

/* Every allocation that can fail, failing: the job stays as it was. */
static void test_apply_nomem(void **state)
{
	struct hb_plugin_decision d;
	struct hb_err err = { 0 };
	cJSON *r;

	(void)state;
	assert_int_equal(parse_text(K8S_OK, &d, &err, &r), 0);
	for (int n = 0; n < 4; n++) {
		job_desc_msg_t jd, before;

		jd_gpu(&jd);
		before = jd;
		alloc_calls = 0;
		alloc_fail_at = n;
		assert_int_equal(
			hb_plugin_decision_apply(&jd, &d, &talloc, &err),
			HB_ENOMEM);
		alloc_fail_at = -1;
		assert_memory_equal(&jd, &before, sizeof(jd));
		jd_free(&jd);
	}
	{
		struct hb_plugin_decision s = { .target = HB_PLUGIN_SLURM,
						.id = "hb-1" };
		job_desc_msg_t jd, before;

		jd_gpu(&jd);
		before = jd;
		alloc_calls = 0;
		alloc_fail_at = 0;
		assert_int_equal(
			hb_plugin_decision_apply(&jd, &s, &talloc, &err),
			HB_ENOMEM);
		alloc_fail_at = -1;
		assert_memory_equal(&jd, &before, sizeof(jd));
		jd_free(&jd);
	}
	cJSON_Delete(r);
	assert_int_equal(hb_plugin_decision_apply(NULL, &d, &talloc, NULL),
			 HB_EINVAL);
}

static void test_comment_caps(void **state)
{
	struct hb_plugin_decision d = { .target = HB_PLUGIN_SLURM,
					.id = "hb-9" };
	job_desc_msg_t jd;
	char old[HB_COMMENT_MAX + 2], sum[40];

	(void)state;
	hb_fix_job_desc(&jd);
	/* An 'e' with an acute accent (2 bytes) across the cut at 1000. */
	memset(old, 'x', sizeof(old));
	memcpy(old + HB_COMMENT_MAX - 1, "\xc3\xa9", 2);
	old[HB_COMMENT_MAX + 1] = '\0';
	jd.admin_comment = strdup(old);
	assert_int_equal(hb_plugin_decision_apply(&jd, &d, &talloc, NULL), 0);
	assert_int_equal(strlen(jd.admin_comment), HB_COMMENT_MAX - 1);
	assert_true(strncmp(jd.admin_comment, old, HB_COMMENT_MAX - 1) == 0);
	jd_free(&jd);

	/* The summary is cut, not overrun. */
	jd_gpu(&jd);
	assert_int_equal(hb_plugin_decision_summary(&jd, sum, sizeof(sum)),
			 HB_ETOOBIG);
	assert_int_equal(strlen(sum), sizeof(sum) - 1);
	assert_true(strncmp(sum, "orig: partition=gpu nodes=2", 27) == 0);
	jd_free(&jd);
	hb_fix_job_desc(&jd);
	assert_int_equal(hb_plugin_decision_summary(&jd, sum, sizeof(sum)), 0);
	assert_string_equal(sum, "orig:");
	jd_free(&jd);
}

/* The in-lock time histogram: exact below 16 us, within 1/16 above,
 * never above the largest sample. */
static void test_latency(void **state)
{
	struct hb_latency *l = calloc(1, sizeof(*l));
	uint64_t q;

	(void)state;
	assert_non_null(l);
	assert_int_equal(hb_latency_quantile(l, 0.5), 0); /* empty */
	for (uint64_t us = 1; us <= 10; us++)
		hb_latency_add(l, us);
	assert_int_equal(l->n, 10);
	assert_int_equal(hb_latency_quantile(l, 0.5), 5);
	assert_int_equal(hb_latency_quantile(l, 0.9), 9);
	assert_int_equal(hb_latency_quantile(l, 0.99), 10);
	assert_int_equal(hb_latency_quantile(l, 1.0), 10);

	/* 1..10000 us: the true p50 is 5000, p99 9900 */
	hb_latency_reset(l);
	for (uint64_t us = 1; us <= 10000; us++)
		hb_latency_add(l, us);
	q = hb_latency_quantile(l, 0.5);
	assert_true(q >= 5000 && q <= 5000 + 5000 / 16);
	q = hb_latency_quantile(l, 0.99);
	assert_true(q >= 9900 && q <= 10000);
	assert_int_equal(l->max_us, 10000);

	/* one slow outlier in 1000 moves p99 not, max yes */
	hb_latency_reset(l);
	for (int i = 0; i < 999; i++)
		hb_latency_add(l, 400);
	hb_latency_add(l, 250000);
	q = hb_latency_quantile(l, 0.99);
	assert_true(q >= 400 && q <= 400 + 400 / 16);
	assert_int_equal(hb_latency_quantile(l, 1.0), 250000);

	/* past the last bucket: counted, and max exact */
	hb_latency_add(l, UINT64_MAX / 2);
	assert_int_equal(l->n, 1001);
	assert_int_equal(hb_latency_quantile(l, 1.0), UINT64_MAX / 2);
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opt_check),
		cmocka_unit_test(test_opt_env),
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_conf_daemon_user),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_request_fabric),
		cmocka_unit_test(test_request_caps),
		cmocka_unit_test(test_request_utf8),
		cmocka_unit_test(test_request_text_is_tree),
		cmocka_unit_test(test_decide_read_alike),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_apply_slurm),
		cmocka_unit_test(test_apply_kubernetes),
		cmocka_unit_test(test_apply_nomem),
		cmocka_unit_test(test_comment_caps),
		cmocka_unit_test(test_latency),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
