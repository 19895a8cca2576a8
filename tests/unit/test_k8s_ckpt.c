/*
 * test_k8s_ckpt.c - checkpoints brought from S3 into a burst job's pods:
 * the checkpoints: settings and their errors (file:line), the job's key
 * under checkpoints.url, the MPIJob's HPCBRIDGE_CKPT_* variables, the
 * init container (command, restricted securityContext, credentials only
 * from a Secret, the checkpoint volume), a directory on a site volume
 * (the launcher alone pulls), the config default, what stops the wiring
 * (no uid, a relative directory), what is refused (a parent of /, '..',
 * a read-only volume), the round trip, and that without
 * checkpoints.url the manifest is exactly what it was.  Every manifest is
 * validated against the real MPI Operator CRD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/schema.h"
#include "testutil.h"

static struct hb_schema_set *schemas;

static int load_schemas(void **state)
{
	(void)state;
	schemas = hb_test_load_crds();
	return 0;
}

static int free_schemas(void **state)
{
	(void)state;
	hb_schema_set_free(schemas);
	return 0;
}

/* ---------------------------------------------------------------- */
/* Configuration                                                    */
/* ---------------------------------------------------------------- */

static void test_config_keys(void **state)
{
	static const char text[] =
	    "checkpoints:\n"
	    "  url: s3://hpcbridge-ckpt/site/jobs\n"
	    "  endpoint: http://127.0.0.1:9000\n"
	    "  region: eu-west-1\n"
	    "  secret: hpcbridge-s3\n"
	    "  image: ghcr.io/site/hpcbridge:1.0\n"
	    "  default_dir: /scratch/ckpt\n";
	struct hb_config cfg;
	struct hb_err err = {0};

	(void)state;
	assert_int_equal(hb_config_defaults(&cfg), 0);
	assert_null(cfg.k8s.ckpt_url);
	assert_null(cfg.k8s.ckpt_endpoint);
	assert_null(cfg.k8s.ckpt_region);
	assert_null(cfg.k8s.ckpt_secret);
	assert_null(cfg.k8s.ckpt_image);
	assert_null(cfg.k8s.ckpt_default_dir);
	hb_config_free(&cfg);
	if (hb_config_parse(text, strlen(text), "hb.yaml", &cfg, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.k8s.ckpt_url, "s3://hpcbridge-ckpt/site/jobs");
	assert_string_equal(cfg.k8s.ckpt_endpoint, "http://127.0.0.1:9000");
	assert_string_equal(cfg.k8s.ckpt_region, "eu-west-1");
	assert_string_equal(cfg.k8s.ckpt_secret, "hpcbridge-s3");
	assert_string_equal(cfg.k8s.ckpt_image, "ghcr.io/site/hpcbridge:1.0");
	assert_string_equal(cfg.k8s.ckpt_default_dir, "/scratch/ckpt");
	hb_config_free(&cfg);
}

static void test_config_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
	    {"checkpoints:\n  url: hpcbridge-ckpt\n",
	     "hb.yaml:2: checkpoints.url: 'hpcbridge-ckpt' must be "
	     "s3://BUCKET[/PREFIX]: a bucket of 3 to 63 characters of a-z, "
	     "0-9, '.' and '-', and a prefix of at most 400 characters "
	     "without spaces, empty, '.' or '..' components"},
	    {"checkpoints:\n  url: s3://Ckpt\n", "hb.yaml:2: checkpoints.url"},
	    {"checkpoints:\n  url: s3://ab\n", "hb.yaml:2: checkpoints.url"},
	    {"checkpoints:\n  url: s3://ckpt/a/../b\n",
	     "hb.yaml:2: checkpoints.url"},
	    {"checkpoints:\n  url: s3://ckpt/a//b\n",
	     "hb.yaml:2: checkpoints.url"},
	    {"checkpoints:\n  url: s3://ckpt/a/\n",
	     "hb.yaml:2: checkpoints.url"},
	    {"checkpoints:\n  url: 42\n",
	     "hb.yaml:2: checkpoints.url: must be a string, not a number "
	     "(put it in quotes)"},
	    {"checkpoints:\n  endpoint: ftp://s3.example.org\n",
	     "hb.yaml:2: checkpoints.endpoint: 'ftp://s3.example.org' must "
	     "be http://HOST[:PORT] or https://HOST[:PORT], without spaces "
	     "or credentials"},
	    {"checkpoints:\n  endpoint: http://key:secret@s3.example.org\n",
	     "hb.yaml:2: checkpoints.endpoint"},
	    {"checkpoints:\n  endpoint: https://\n",
	     "hb.yaml:2: checkpoints.endpoint"},
	    {"checkpoints:\n  secret: S3_Keys\n",
	     "hb.yaml:2: checkpoints.secret: 'S3_Keys' must be a DNS-1123 "
	     "subdomain (a-z, 0-9, '-' and '.', at most 253 characters)"},
	    {"checkpoints:\n  image: \"-bad image\"\n",
	     "hb.yaml:2: checkpoints.image"},
	    {"checkpoints:\n  default_dir: ckpt\n",
	     "hb.yaml:2: checkpoints.default_dir: 'ckpt' must be an absolute "
	     "path without whitespace"},
	    {"checkpoints:\n  default_dir: /scratch/../ckpt\n",
	     "hb.yaml:2: checkpoints.default_dir: '/scratch/../ckpt' must be "
	     "written plainly: no '.', '..', '//' or trailing '/'"},
	    {"checkpoints:\n\n  bucket: ckpt\n",
	     "hb.yaml:3: checkpoints.bucket: unknown key"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hb_config cfg;
		struct hb_err err = {0};

		if (!hb_config_parse(bad[i].text, strlen(bad[i].text),
				     "hb.yaml", &cfg, &err))
			fail_msg("accepted: %s", bad[i].text);
		if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)))
			fail_msg("got  '%s'\nwant '%s...'", err.msg,
				 bad[i].msg);
		assert_null(cfg.priv);
	}
}

/* ---------------------------------------------------------------- */
/* The job's key                                                    */
/* ---------------------------------------------------------------- */

static void test_key(void **state)
{
	char a[HB_K8S_CKPT_KEY_MAX], b[HB_K8S_CKPT_KEY_MAX];

	(void)state;
	assert_int_equal(hb_k8s_ckpt_key(1234, "/scratch/alice/ckpt", a), 0);
	assert_int_equal(strncmp(a, "1234/ckpt-", 10), 0);
	assert_int_equal(strlen(a), 10 + 16);
	/* the same directory written otherwise: the same key */
	assert_int_equal(hb_k8s_ckpt_key(1234, "/scratch//alice/./ckpt/", b),
			 0);
	assert_string_equal(a, b);
	/* another directory of the same name, another user: other keys */
	assert_int_equal(hb_k8s_ckpt_key(1234, "/scratch/bob/ckpt", b), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(hb_k8s_ckpt_key(1235, "/scratch/alice/ckpt", b), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(strncmp(b, "1235/ckpt-", 10), 0);
	/* the name keeps only what an S3 key and a path agree on */
	assert_int_equal(hb_k8s_ckpt_key(7, "/x/my run$(id) #2", b), 0);
	assert_int_equal(strncmp(b, "7/myrunid2-", 11), 0);
	assert_int_equal(hb_k8s_ckpt_key(7, "/x/$$$", b), 0);
	assert_int_equal(strncmp(b, "7/ckpt-", 7), 0);
	assert_int_equal(hb_k8s_ckpt_key(7, "ckpt", b), HB_EINVAL);
	assert_int_equal(hb_k8s_ckpt_key(7, "/a/../ckpt", b), HB_EINVAL);
	assert_int_equal(hb_k8s_ckpt_key(-1, "/a/ckpt", b), HB_EINVAL);
	assert_int_equal(hb_k8s_ckpt_key(7, NULL, b), HB_EINVAL);
}

/* ---------------------------------------------------------------- */
/* The MPIJob                                                       */
/* ---------------------------------------------------------------- */

static struct hb_k8s_volume vols[] = {
    {.path = "/scratch", .pvc = "scratch"},
};

static void config(struct hb_k8s_opts *o, bool s3)
{
	memset(o, 0, sizeof(*o));
	o->namespace = "hpc";
	o->default_image = "docker.io/library/ubuntu:22.04";
	o->default_mpi = "OpenMPI";
	o->launcher_cpus = 1;
	o->launcher_mem_mb = 512;
	o->max_array_jobs = 10;
	if (!s3)
		return;
	o->ckpt_url = "s3://hpcbridge-ckpt/jobs";
	o->ckpt_endpoint = "http://minio.storage:9000";
	o->ckpt_region = "us-east-1";
	o->ckpt_secret = "hpcbridge-s3";
	o->ckpt_image = "ghcr.io/site/hpcbridge:1.0";
}

static void new_spec(struct hb_jobspec *s, const char *dir, bool identity)
{
	static const char body[] = "#!/bin/bash\nmpirun ./app\n";
	static const uint32_t groups[] = {1234};
	struct hb_err err = {0};

	hb_jobspec_init(s, "job.sh");
	s->source = HB_SRC_SBATCH;
	hb_test_lineno = 0;
	s->script = hb_jobspec_strdup(s, body);
	s->script_len = (uint32_t)strlen(body);
	s->interpreter = hb_jobspec_strdup(s, "/bin/bash");
	hb_test_dir(s, HB_F_SCRIPT, "(script)");
	HB_TEST_SET_STR(s, name, HB_F_NAME, "train");
	HB_TEST_SET_NUM(s, nodes_min, HB_F_NODES, 2);
	if (dir) {
		s->checkpoint_dir = hb_jobspec_strdup(s, dir);
		hb_test_dir(s, HB_F_CHECKPOINT, "--hpcbridge-checkpoint");
	}
	if (identity)
		assert_int_equal(
		    hb_jobspec_set_identity(s, 1234, 1234, groups, 1), 0);
	assert_int_equal(hb_jobspec_scan_body(s, &err), 0);
}

static cJSON *emit(const struct hb_jobspec *s, const struct hb_k8s_opts *o,
		   struct hb_report *rep)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;

	hb_report_init(rep, "MPIJob");
	if (hb_mpijob_emit(s, o, -1, &doc, rep, &err))
		fail_msg("emit: %s", err.msg);
	assert_non_null(doc);
	hb_test_assert_valid(schemas, doc);
	return doc;
}

static const cJSON *pod(const cJSON *doc, const char *replica)
{
	char p[128];

	snprintf(p, sizeof(p), "spec.mpiReplicaSpecs.%s.template.spec",
		 replica);
	return hb_doc_get(doc, p);
}

static const cJSON *member(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* The member of array arr whose "name" is name (NULL: none). */
static const cJSON *named(const cJSON *arr, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach (it, arr) {
		const char *v = cJSON_GetStringValue(member(it, "name"));

		if (v && !strcmp(v, name))
			return it;
	}
	return NULL;
}

/* metadata.annotations[key] */
static const char *annotation(const cJSON *doc, const char *key)
{
	return cJSON_GetStringValue(
	    member(hb_doc_get(doc, "metadata.annotations"), key));
}

static const char *env_value(const cJSON *container, const char *name)
{
	return cJSON_GetStringValue(
	    member(named(member(container, "env"), name), "value"));
}

static bool report_warns(const struct hb_report *rep, const char *what)
{
	for (uint32_t i = 0; i < rep->nwarnings; i++)
		if (strstr(rep->warnings[i], what))
			return true;
	return false;
}

/* The init container of a pod carries what the brief of the step says:
 * its command, the location, the credentials by reference only, the
 * container's securityContext and the mounts of the directory. */
static void check_init(const cJSON *ps, const char *url, const char *dir)
{
	const cJSON *ic = member(ps, "initContainers"), *c, *e;
	const cJSON *main_c = cJSON_GetArrayItem(member(ps, "containers"), 0);
	static const char *const cmd[] = {
	    "hpcbridge", "ckpt",      "pull", NULL, NULL, "--if-exists",
	    "--progress", "json"};
	int i = 0;

	assert_int_equal(cJSON_GetArraySize(ic), 1);
	c = cJSON_GetArrayItem(ic, 0);
	assert_string_equal(cJSON_GetStringValue(member(c, "name")),
			    "hpcbridge-ckpt");
	assert_string_equal(cJSON_GetStringValue(member(c, "image")),
			    "ghcr.io/site/hpcbridge:1.0");
	assert_int_equal(cJSON_GetArraySize(member(c, "command")), 8);
	cJSON_ArrayForEach (e, member(c, "command")) {
		const char *want = i == 3 ? url : i == 4 ? dir : cmd[i];

		assert_string_equal(cJSON_GetStringValue(e), want);
		i++;
	}
	assert_string_equal(env_value(c, "HPCBRIDGE_CKPT_URL"), url);
	assert_string_equal(env_value(c, "HPCBRIDGE_CKPT_DIR"), dir);
	assert_string_equal(env_value(c, "AWS_ENDPOINT_URL"),
			    "http://minio.storage:9000");
	assert_string_equal(env_value(c, "AWS_DEFAULT_REGION"), "us-east-1");
	for (i = 0; i < 2; i++) {
		const char *k = i ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID";
		const cJSON *v = named(member(c, "env"), k);

		assert_non_null(v);
		assert_null(member(v, "value")); /* never a literal */
		assert_string_equal(
		    cJSON_GetStringValue(hb_doc_get(v, "valueFrom.secretKeyRef."
						       "name")),
		    "hpcbridge-s3");
		assert_string_equal(
		    cJSON_GetStringValue(
			hb_doc_get(v, "valueFrom.secretKeyRef.key")),
		    k);
	}
	/* restricted: as the job's own container */
	assert_true(cJSON_Compare(member(c, "securityContext"),
				  member(main_c, "securityContext"), 1));
	assert_true(cJSON_IsFalse(
	    hb_doc_get(c, "securityContext.allowPrivilegeEscalation")));
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(
		hb_doc_get(c, "securityContext.capabilities.drop"), 0)),
	    "ALL");
	assert_true(cJSON_IsTrue(hb_doc_get(ps, "securityContext.runAsNonRoot")));
	assert_string_equal(cJSON_GetStringValue(hb_doc_get(
				ps, "securityContext.seccompProfile.type")),
			    "RuntimeDefault");
	/* the main container's variables */
	assert_string_equal(env_value(main_c, "HPCBRIDGE_CKPT_URL"), url);
	assert_string_equal(env_value(main_c, "HPCBRIDGE_CKPT_DIR"), dir);
}

static void test_pulled_into_emptydir(void **state)
{
	struct hb_k8s_opts o;
	struct hb_jobspec s;
	struct hb_report rep;
	char key[HB_K8S_CKPT_KEY_MAX], url[256];
	cJSON *doc;
	char *text;

	(void)state;
	config(&o, true);
	new_spec(&s, "/home/alice/run/ckpt", true);
	assert_int_equal(hb_k8s_ckpt_key(1234, "/home/alice/run/ckpt", key),
			 0);
	snprintf(url, sizeof(url), "s3://hpcbridge-ckpt/jobs/%s", key);
	doc = emit(&s, &o, &rep);
	for (int r = 0; r < 2; r++) {
		const cJSON *ps = pod(doc, r ? "Worker" : "Launcher");
		const cJSON *ic = cJSON_GetArrayItem(
		    member(ps, "initContainers"), 0);
		const cJSON *mc =
		    cJSON_GetArrayItem(member(ps, "containers"), 0);
		const cJSON *m;

		check_init(ps, url, "/home/alice/run/ckpt");
		/* one emptyDir on the directory's parent, in both */
		assert_non_null(hb_doc_get(
		    named(member(ps, "volumes"), "hpcbridge-ckpt"),
		    "emptyDir"));
		m = named(member(ic, "volumeMounts"), "hpcbridge-ckpt");
		assert_string_equal(
		    cJSON_GetStringValue(member(m, "mountPath")),
		    "/home/alice/run");
		assert_true(cJSON_Compare(
		    m, named(member(mc, "volumeMounts"), "hpcbridge-ckpt"), 1));
	}
	assert_int_equal(rep.fate[HB_F_CHECKPOINT].kind, HB_FATE_MAPPED);
	assert_non_null(strstr(rep.fate[HB_F_CHECKPOINT].target,
			       "initContainers"));
	/* the directory is still kept for the gateway */
	assert_string_equal(annotation(doc, "hpcbridge.io/checkpoint-dir"),
			    "/home/alice/run/ckpt");
	text = cJSON_PrintUnformatted(doc);
	assert_null(strstr(text, "\"AWS_SECRET_ACCESS_KEY\",\"value\""));
	cJSON_free(text);
	hb_report_free(&rep);
	cJSON_Delete(doc);

	/* no checkpoints.image: the job's own image */
	o.ckpt_image = NULL;
	doc = emit(&s, &o, &rep);
	assert_string_equal(
	    cJSON_GetStringValue(member(
		cJSON_GetArrayItem(member(pod(doc, "Worker"), "initContainers"),
				   0),
		"image")),
	    "docker.io/library/ubuntu:22.04");
	hb_report_free(&rep);
	cJSON_Delete(doc);
	hb_jobspec_free(&s);
}

static void test_site_volume(void **state)
{
	struct hb_k8s_opts o;
	struct hb_jobspec s;
	struct hb_report rep;
	const cJSON *ps, *ic;
	cJSON *doc;

	(void)state;
	config(&o, true);
	o.volumes = vols;
	o.nvolumes = 1;
	new_spec(&s, "/scratch/alice/ckpt", true);
	doc = emit(&s, &o, &rep);
	ps = pod(doc, "Launcher");
	ic = cJSON_GetArrayItem(member(ps, "initContainers"), 0);
	assert_non_null(ic);
	/* the site volume, as the job's container mounts it; no emptyDir */
	assert_true(cJSON_Compare(
	    member(ic, "volumeMounts"),
	    member(cJSON_GetArrayItem(member(ps, "containers"), 0),
		   "volumeMounts"),
	    1));
	assert_string_equal(
	    cJSON_GetStringValue(member(
		cJSON_GetArrayItem(member(ic, "volumeMounts"), 0), "mountPath")),
	    "/scratch");
	assert_null(named(member(ps, "volumes"), "hpcbridge-ckpt"));
	/* the workers see what the launcher pulled, and pull nothing */
	ps = pod(doc, "Worker");
	assert_null(member(ps, "initContainers"));
	assert_null(named(member(ps, "volumes"), "hpcbridge-ckpt"));
	assert_non_null(env_value(cJSON_GetArrayItem(member(ps, "containers"),
						     0),
				  "HPCBRIDGE_CKPT_URL"));
	hb_report_free(&rep);
	cJSON_Delete(doc);
	hb_jobspec_free(&s);
}

static void test_default_and_relative(void **state)
{
	struct hb_k8s_opts o;
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	config(&o, true);
	/* the config's default, for a job that names none: pulled, but
	 * not kept as the job's own */
	o.ckpt_default_dir = "/ckpt/default";
	new_spec(&s, NULL, true);
	doc = emit(&s, &o, &rep);
	assert_string_equal(
	    env_value(cJSON_GetArrayItem(
			  member(pod(doc, "Launcher"), "containers"), 0),
		      "HPCBRIDGE_CKPT_DIR"),
	    "/ckpt/default");
	assert_null(annotation(doc, "hpcbridge.io/checkpoint-dir"));
	hb_report_free(&rep);
	cJSON_Delete(doc);
	hb_jobspec_free(&s);

	/* relative: under an absolute --chdir */
	o.ckpt_default_dir = NULL;
	new_spec(&s, "ckpt", true);
	HB_TEST_SET_STR(&s, chdir, HB_F_CHDIR, "/home/alice/run");
	doc = emit(&s, &o, &rep);
	assert_string_equal(
	    env_value(cJSON_GetArrayItem(
			  member(pod(doc, "Worker"), "containers"), 0),
		      "HPCBRIDGE_CKPT_DIR"),
	    "/home/alice/run/ckpt");
	hb_report_free(&rep);
	cJSON_Delete(doc);
	hb_jobspec_free(&s);

	/* relative with nothing to resolve it against: said, not pulled */
	new_spec(&s, "ckpt", true);
	doc = emit(&s, &o, &rep);
	assert_null(member(pod(doc, "Launcher"), "initContainers"));
	assert_true(report_warns(&rep, "is relative"));
	assert_int_equal(rep.fate[HB_F_CHECKPOINT].kind, HB_FATE_CARRIED);
	hb_report_free(&rep);
	cJSON_Delete(doc);
	hb_jobspec_free(&s);

	/* no uid yet (a translation outside the gateway): said, not
	 * pulled */
	new_spec(&s, "/ckpt/run", false);
	doc = emit(&s, &o, &rep);
	assert_null(member(pod(doc, "Launcher"), "initContainers"));
	assert_true(report_warns(&rep, "when the job bursts"));
	hb_report_free(&rep);
	cJSON_Delete(doc);
	hb_jobspec_free(&s);
}

/* The directory the daemon mirrors is the one the pods get: the same
 * function decides it for both. */
static void test_dir_shared(void **state)
{
	struct hb_k8s_opts o = { 0 };
	struct hb_jobspec s;
	char out[HB_K8S_CKPT_DIR_MAX];

	(void)state;
	hb_jobspec_init(&s, "job.sh");
	assert_int_equal(hb_k8s_ckpt_dir(&o, &s, out), 1);
	o.ckpt_default_dir = "/ckpt/default";
	assert_int_equal(hb_k8s_ckpt_dir(&o, &s, out), 0);
	assert_string_equal(out, "/ckpt/default");
	s.checkpoint_dir = "run/./ck/";
	assert_int_equal(hb_k8s_ckpt_dir(&o, &s, out), 2);
	s.chdir = "/home/u//work";
	assert_int_equal(hb_k8s_ckpt_dir(&o, &s, out), 0);
	assert_string_equal(out, "/home/u/work/run/ck");
	s.checkpoint_dir = "/a/../b";
	assert_int_equal(hb_k8s_ckpt_dir(&o, &s, out), HB_EINVAL);
	assert_string_equal(out, "/a/../b");
	s.checkpoint_dir = "//";
	assert_int_equal(hb_k8s_ckpt_dir(&o, &s, out), HB_ERANGE);
	s.checkpoint_dir = NULL;
	s.chdir = NULL;
	hb_jobspec_free(&s);
}

static void test_bad_dirs(void **state)
{
	static struct hb_k8s_volume ro[] = {
	    {.path = "/apps", .pvc = "apps", .read_only = true},
	};
	static const char *const dirs[] = {"/ckpt", "/a/../ckpt", "/",
					   "/apps/ckpt"};
	struct hb_k8s_opts o;

	(void)state;
	config(&o, true);
	o.volumes = ro;
	o.nvolumes = 1;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct hb_jobspec s;
		struct hb_report rep;
		struct hb_err err = {0};
		cJSON *doc = NULL;

		new_spec(&s, dirs[i], true);
		hb_report_init(&rep, "MPIJob");
		assert_int_equal(hb_mpijob_emit(&s, &o, -1, &doc, &rep, &err),
				 HB_EINVAL);
		assert_null(doc);
		assert_non_null(strstr(err.msg, "checkpoint directory"));
		hb_report_free(&rep);
		hb_jobspec_free(&s);
	}
}

/* Without checkpoints.url, nothing changes: the other checkpoints:
 * settings alone write nothing, and the fate is what it was. */
static void test_without_config(void **state)
{
	struct hb_k8s_opts plain, partial;
	struct hb_jobspec s;
	struct hb_report rep, rep2;
	cJSON *a, *b;

	(void)state;
	config(&plain, false);
	config(&partial, true);
	partial.ckpt_url = NULL;
	partial.ckpt_default_dir = "/ckpt/default";
	new_spec(&s, "/home/alice/run/ckpt", true);
	a = emit(&s, &plain, &rep);
	b = emit(&s, &partial, &rep2);
	assert_true(cJSON_Compare(a, b, 1));
	assert_null(member(pod(a, "Launcher"), "initContainers"));
	assert_null(env_value(
	    cJSON_GetArrayItem(member(pod(a, "Launcher"), "containers"), 0),
	    "HPCBRIDGE_CKPT_URL"));
	assert_int_equal(rep.fate[HB_F_CHECKPOINT].kind, HB_FATE_CARRIED);
	assert_non_null(strstr(rep.fate[HB_F_CHECKPOINT].note,
			       "with no checkpoints.url"));
	hb_report_free(&rep);
	hb_report_free(&rep2);
	cJSON_Delete(a);
	cJSON_Delete(b);
	hb_jobspec_free(&s);
}

/*
 * Read back, the manifest gives the job (the gateway's variables and
 * init container are not the job's); emitting what was read, with the
 * identity the daemon sets again when the job bursts (a manifest does not
 * carry it), gives the same manifest.
 */
static void round_trip(const struct hb_jobspec *a,
		       const struct hb_k8s_opts *o)
{
	static const uint32_t groups[] = {1234};
	struct hb_report rep;
	struct hb_err err = {0};
	struct hb_jobspec b;
	struct hb_buf yaml;
	cJSON *doc, *back = NULL, *again, *want, *got;

	doc = emit(a, o, &rep);
	hb_report_free(&rep);
	hb_buf_init(&yaml, 0);
	assert_int_equal(hb_doc_write_yaml(doc, &yaml), 0);
	assert_int_equal(
	    hb_doc_parse(yaml.data, yaml.len, "m.yaml", &back, &err), 0);
	hb_jobspec_init(&b, "m.yaml");
	if (hb_mpijob_parse(back, &b, &err))
		fail_msg("parse back: %s\n%s", err.msg, yaml.data);
	want = hb_test_canon(a);
	got = hb_test_canon(&b);
	assert_true(cJSON_Compare(want, got, 1));
	for (uint32_t i = 0; i < b.nenv; i++)
		assert_null(strstr(b.env[i].name, "HPCBRIDGE_CKPT"));
	assert_int_equal(hb_jobspec_set_identity(&b, 1234, 1234, groups, 1),
			 0);
	again = emit(&b, o, &rep);
	assert_true(cJSON_Compare(doc, again, 1));
	hb_report_free(&rep);
	cJSON_Delete(want);
	cJSON_Delete(got);
	cJSON_Delete(doc);
	cJSON_Delete(back);
	cJSON_Delete(again);
	hb_buf_free(&yaml);
	hb_jobspec_free(&b);
}

static void test_round_trip(void **state)
{
	struct hb_k8s_opts o;
	struct hb_jobspec s;

	(void)state;
	config(&o, true);
	new_spec(&s, "/home/alice/run/ckpt", true);
	round_trip(&s, &o);
	hb_jobspec_free(&s);
	o.volumes = vols;
	o.nvolumes = 1;
	new_spec(&s, "/scratch/alice/ckpt", true);
	HB_TEST_SET_STR(&s, chdir, HB_F_CHDIR, "/scratch/alice");
	round_trip(&s, &o);
	hb_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_keys),
	    cmocka_unit_test(test_config_errors),
	    cmocka_unit_test(test_key),
	    cmocka_unit_test(test_pulled_into_emptydir),
	    cmocka_unit_test(test_site_volume),
	    cmocka_unit_test(test_default_and_relative),
	    cmocka_unit_test(test_dir_shared),
	    cmocka_unit_test(test_bad_dirs),
	    cmocka_unit_test(test_without_config),
	    cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, load_schemas, free_schemas);
}
