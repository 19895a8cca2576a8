/*
 * test_k8s_pod.c - the MPIJob as a cluster that enforces Pod Security
 * "restricted" runs it: the pods' and containers' securityContext from
 * the job's identity, root refused, the site volumes and the check that
 * the job's files lie on them, the allow-list of user-chosen images,
 * Kueue's priority class and suspend, gang scheduling, and the launcher's
 * ssh port.  Every manifest is validated against the real CRD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/schema.h"
#include "hpcbridge/trainjob.h"
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

static struct hb_k8s_volume vols[] = {
	{ .path = "/scratch", .pvc = "scratch" },
	{ .path = "/projects",
	  .nfs_server = "nfs.example.org",
	  .nfs_path = "/export/projects",
	  .read_only = true },
};
static struct hb_kv containers[] = { { "lammps", "ghcr.io/site/lammps:2" } };
static const char *allowed[] = { "ghcr.io/site/*", "docker.io/library/*" };
static struct hb_kv queues[] = { { "gpu", "gpu-queue" } };
static struct hb_kv prio[] = { { "high", "hpc-high" } };
static struct hb_kv pod_prio[] = { { "high", "high-priority" } };

static void config(struct hb_k8s_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->namespace = "hpc";
	o->default_image = "docker.io/library/ubuntu:22.04";
	o->default_mpi = "OpenMPI";
	o->launcher_cpus = 1;
	o->launcher_mem_mb = 512;
	o->max_array_jobs = 10;
	o->container_images = containers;
	o->ncontainer_images = 1;
}

static void new_spec(struct hb_jobspec *s)
{
	static const char body[] = "#!/bin/bash\nmpirun ./app\n";
	struct hb_err err = { 0 };

	hb_jobspec_init(s, "job.sh");
	s->source = HB_SRC_SBATCH;
	hb_test_lineno = 0;
	s->script = hb_jobspec_strdup(s, body);
	s->script_len = (uint32_t)strlen(body);
	s->interpreter = hb_jobspec_strdup(s, "/bin/bash");
	hb_test_dir(s, HB_F_SCRIPT, "(script)");
	assert_int_equal(hb_jobspec_scan_body(s, &err), 0);
}

static cJSON *emit(const struct hb_jobspec *s, const struct hb_k8s_opts *o,
		   struct hb_report *rep)
{
	struct hb_err err = { 0 };
	cJSON *doc = NULL;

	hb_report_init(rep, "MPIJob");
	if (hb_mpijob_emit(s, o, -1, &doc, rep, &err))
		fail_msg("emit: %s", err.msg);
	assert_non_null(doc);
	hb_test_assert_valid(schemas, doc);
	return doc;
}

/* The error the emitter gives, and that it gives no manifest. */
static int emit_err(const struct hb_jobspec *s, const struct hb_k8s_opts *o,
		    struct hb_err *err)
{
	struct hb_report rep;
	cJSON *doc = NULL;
	int rc;

	memset(err, 0, sizeof(*err));
	hb_report_init(&rep, "MPIJob");
	rc = hb_mpijob_emit(s, o, -1, &doc, &rep, err);
	assert_null(doc);
	hb_report_free(&rep);
	return rc;
}

static const cJSON *pod(const cJSON *doc, const char *replica)
{
	char p[128];

	snprintf(p, sizeof(p), "spec.mpiReplicaSpecs.%s.template.spec",
		 replica);
	return hb_doc_get(doc, p);
}

static const cJSON *container(const cJSON *doc, const char *replica)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
					  pod(doc, replica), "containers"),
				  0);
}

static const cJSON *at(const cJSON *o, const char *path)
{
	return hb_doc_get(o, path);
}

/* The member of array arr whose key is value (NULL: none). */
static const cJSON *item_with(const cJSON *arr, const char *key,
			      const char *value)
{
	const cJSON *it;

	cJSON_ArrayForEach (it, arr) {
		const char *v = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, key));

		if (v && !strcmp(v, value))
			return it;
	}
	return NULL;
}

static const char *env_of(const cJSON *c, const char *name)
{
	return cJSON_GetStringValue(
		at(item_with(at(c, "env"), "name", name), "value"));
}

/* A message must hold want. */
static void has(const char *msg, const char *want)
{
	if (!strstr(msg, want))
		fail_msg("'%s' does not hold '%s'", msg, want);
}

/* ---------------------------------------------------------------- */
/* Identity                                                         */
/* ---------------------------------------------------------------- */

static void check_container_security(const cJSON *c)
{
	const cJSON *sc =
		cJSON_GetObjectItemCaseSensitive(c, "securityContext");
	const cJSON *drop = at(sc, "capabilities.drop");

	assert_true(cJSON_IsFalse(at(sc, "allowPrivilegeEscalation")));
	assert_true(cJSON_IsTrue(at(sc, "runAsNonRoot")));
	assert_int_equal(cJSON_GetArraySize(drop), 1);
	assert_string_equal(cJSON_GetArrayItem(drop, 0)->valuestring, "ALL");
}

static void test_identity(void **state)
{
	static const uint32_t groups[] = { 3000, 1001, 2000, 1001, 3000 };
	static const char *const replicas[] = { "Launcher", "Worker" };
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	config(&o);
	new_spec(&s);
	HB_TEST_SET_STR(&s, user, HB_F_USER, "alice");
	assert_int_equal(hb_jobspec_set_identity(&s, 1234, 1001, groups, 5), 0);
	/* Sorted, duplicates dropped. */
	assert_int_equal(s.nrun_groups, 3);
	assert_int_equal(s.run_groups[0], 1001);
	assert_int_equal(s.run_groups[2], 3000);
	doc = emit(&s, &o, &rep);
	for (int i = 0; i < 2; i++) {
		const cJSON *sc = cJSON_GetObjectItemCaseSensitive(
			pod(doc, replicas[i]), "securityContext");
		const cJSON *sg = at(sc, "supplementalGroups");

		assert_int_equal(at(sc, "runAsUser")->valuedouble, 1234);
		assert_int_equal(at(sc, "runAsGroup")->valuedouble, 1001);
		assert_int_equal(cJSON_GetArraySize(sg), 3);
		assert_int_equal(cJSON_GetArrayItem(sg, 0)->valuedouble, 1001);
		assert_int_equal(cJSON_GetArrayItem(sg, 1)->valuedouble, 2000);
		assert_int_equal(cJSON_GetArrayItem(sg, 2)->valuedouble, 3000);
		assert_true(cJSON_IsTrue(at(sc, "runAsNonRoot")));
		assert_string_equal(
			cJSON_GetStringValue(at(sc, "seccompProfile.type")),
			"RuntimeDefault");
		/* fs_group none: no fsGroup. */
		assert_null(at(sc, "fsGroup"));
		check_container_security(container(doc, replicas[i]));
	}
	assert_int_equal(rep.fate[HB_F_USER].kind, HB_FATE_MAPPED);
	has(rep.fate[HB_F_USER].target, "securityContext.runAsUser");
	has(rep.fate[HB_F_USER].note, "uid 1234");
	assert_int_equal(rep.nwarnings, 0);
	cJSON_Delete(doc);
	hb_report_free(&rep);

	/* fsGroup: the primary group, or a configured one. */
	o.fs_group = HB_FS_GROUP_PRIMARY;
	doc = emit(&s, &o, &rep);
	assert_int_equal(
		at(pod(doc, "Worker"), "securityContext.fsGroup")->valuedouble,
		1001);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	o.fs_group = HB_FS_GROUP_GID;
	o.fs_group_gid = 4242;
	doc = emit(&s, &o, &rep);
	assert_int_equal(at(pod(doc, "Launcher"), "securityContext.fsGroup")
				 ->valuedouble,
			 4242);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_identity_unknown(void **state)
{
	struct hb_buf text;
	char *line, *eol;
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_report rep;
	const cJSON *sc;
	cJSON *doc;

	(void)state;
	config(&o);
	o.fs_group = HB_FS_GROUP_PRIMARY;
	new_spec(&s);
	HB_TEST_SET_STR(&s, user, HB_F_USER, "alice");
	assert_int_equal(s.run_uid, -1);
	assert_int_equal(s.run_gid, -1);
	doc = emit(&s, &o, &rep);
	sc = at(pod(doc, "Worker"), "securityContext");
	/* No identity yet: still non-root and confined. */
	assert_null(at(sc, "runAsUser"));
	assert_null(at(sc, "runAsGroup"));
	assert_null(at(sc, "supplementalGroups"));
	assert_null(at(sc, "fsGroup"));
	assert_true(cJSON_IsTrue(at(sc, "runAsNonRoot")));
	check_container_security(container(doc, "Worker"));
	/* Not "mapped": it is filled in when the job bursts. */
	assert_int_equal(rep.fate[HB_F_USER].kind, HB_FATE_CARRIED);
	has(rep.fate[HB_F_USER].note, "when the job bursts");
	assert_int_equal(rep.nwarnings, 1);
	has(rep.warnings[0], "filled in when the job bursts");
	/* The printed report says so, and nowhere that the user is
	 * mapped. */
	hb_buf_init(&text, 0);
	assert_int_equal(hb_report_write_text(&s, &rep, &text), 0);
	line = strstr(text.data, "user=alice\n    user ");
	assert_non_null(line);
	line = strchr(line, '\n') + 1;
	eol = strchr(line, '\n');
	assert_non_null(eol);
	*eol = '\0';
	has(line, "carried");
	assert_null(strstr(line, "mapped"));
	*eol = '\n';
	has(text.data, "filled in when the job bursts");
	hb_buf_free(&text);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

static void test_root_refused(void **state)
{
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_err err;

	(void)state;
	config(&o);
	new_spec(&s);
	assert_int_equal(hb_jobspec_set_identity(&s, 0, 0, NULL, 0), 0);
	assert_int_equal(emit_err(&s, &o, &err), HB_EINVAL);
	has(err.msg, "the job runs as root");
	has(err.msg, "never run on the cluster");
	/* Out-of-range ids are refused and leave the identity alone. */
	assert_int_equal(hb_jobspec_set_identity(&s, -2, 5, NULL, 0),
			 HB_EINVAL);
	assert_int_equal(hb_jobspec_set_identity(&s, 5, 4294967295LL, NULL, 0),
			 HB_EINVAL);
	assert_int_equal(s.run_uid, 0);
	hb_jobspec_free(&s);
}

/* ---------------------------------------------------------------- */
/* Files                                                            */
/* ---------------------------------------------------------------- */

static const char *mount_of(const cJSON *c, const char *path)
{
	return cJSON_GetStringValue(at(
		item_with(at(c, "volumeMounts"), "mountPath", path), "name"));
}

static const cJSON *volume(const cJSON *ps, const char *name)
{
	return item_with(at(ps, "volumes"), "name", name);
}

static void test_volumes(void **state)
{
	static const char *const replicas[] = { "Launcher", "Worker" };
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_report rep;
	cJSON *doc;
	char first[64];

	(void)state;
	config(&o);
	o.volumes = vols;
	o.nvolumes = 2;
	new_spec(&s);
	HB_TEST_SET_STR(&s, chdir, HB_F_CHDIR, "/scratch/u/run");
	HB_TEST_SET_STR(&s, output, HB_F_OUTPUT, "/projects/p1/%x-%j.out");
	doc = emit(&s, &o, &rep);
	for (int i = 0; i < 2; i++) {
		const cJSON *c = container(doc, replicas[i]);
		const cJSON *ps = pod(doc, replicas[i]);
		const char *sn = mount_of(c, "/scratch");
		const char *pn = mount_of(c, "/projects");
		const cJSON *v;

		assert_non_null(sn);
		assert_non_null(pn);
		assert_string_not_equal(sn, pn);
		v = volume(ps, sn);
		assert_non_null(v);
		assert_string_equal(
			cJSON_GetStringValue(
				at(v, "persistentVolumeClaim.claimName")),
			"scratch");
		v = volume(ps, pn);
		assert_non_null(v);
		assert_string_equal(cJSON_GetStringValue(at(v, "nfs.server")),
				    "nfs.example.org");
		assert_string_equal(cJSON_GetStringValue(at(v, "nfs.path")),
				    "/export/projects");
		assert_true(cJSON_IsTrue(at(v, "nfs.readOnly")));
		/* Stable names: the same in both pods and on every run. */
		if (i == 0)
			snprintf(first, sizeof(first), "%s", sn);
		else
			assert_string_equal(first, sn);
	}
	assert_int_equal(strncmp(first, "site-scratch-", 13), 0);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* hb_k8s_paths_check() on a jobspec with these paths and workdir: 0, or
 * the error's message. */
static int check(const char *chdir, const char *output, const char *error,
		 const char *input, const char *workdir, struct hb_err *err)
{
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	int rc;

	config(&o);
	o.volumes = vols;
	o.nvolumes = 2;
	hb_jobspec_init(&s, "job.sh");
	s.chdir = chdir ? hb_jobspec_strdup(&s, chdir) : NULL;
	s.output = output ? hb_jobspec_strdup(&s, output) : NULL;
	s.error = error ? hb_jobspec_strdup(&s, error) : NULL;
	s.input = input ? hb_jobspec_strdup(&s, input) : NULL;
	memset(err, 0, sizeof(*err));
	rc = hb_k8s_paths_check(&o, &s, workdir, err);
	hb_jobspec_free(&s);
	return rc;
}

static void test_paths_check(void **state)
{
	struct hb_err err;
	struct hb_jobspec s;
	struct hb_k8s_opts o;

	(void)state;
	/* On the volumes, patterns in the file name, /dev/null. */
	assert_int_equal(check(NULL, "slurm-%j.out", "%x-%A_%a.err",
			       "/projects/in/data.txt", "/scratch/u", &err),
			 0);
	/* --chdir is the working directory: the submit directory does
	 * not matter then, and relative paths are taken from --chdir. */
	assert_int_equal(check("/projects/p1", "out/%j.log", "/dev/null", NULL,
			       "/home/u", &err),
			 0);
	assert_int_equal(check("/home/u/run", "/scratch/x.out", NULL, NULL,
			       "/scratch", &err),
			 HB_EINVAL);
	has(err.msg, "--chdir /home/u/run is not on a volume");
	assert_int_equal(
		check("/projects/p1", "../x.out", NULL, NULL, "/scratch", &err),
		HB_EINVAL);
	has(err.msg, "--output /projects/p1/../x.out");
	/* Without one, the submit directory is checked. */
	assert_int_equal(
		check(NULL, "/scratch/x.out", NULL, NULL, "/home/u", &err),
		HB_EINVAL);
	assert_string_equal(err.msg,
			    "the working directory /home/u is not on a volume "
			    "the cluster mounts (mapped: /scratch, /projects)");
	assert_int_equal(
		check("/scratch/./a//b/", NULL, NULL, NULL, NULL, &err), 0);
	/* Off a volume: the option and the whole path named. */
	assert_int_equal(
		check(NULL, "/home/u/x.out", NULL, NULL, "/scratch", &err),
		HB_EINVAL);
	assert_string_equal(err.msg,
			    "--output /home/u/x.out is not on a volume the "
			    "cluster mounts (mapped: /scratch, /projects)");
	/* A relative --output against the working directory. */
	assert_int_equal(check(NULL, "x.out", NULL, NULL, "/home/u", &err),
			 HB_EINVAL);
	has(err.msg, "the working directory /home/u is not");
	assert_int_equal(check("/home/u", "logs/x.out", NULL, NULL, NULL, &err),
			 HB_EINVAL);
	has(err.msg, "--chdir /home/u is not on a volume");
	assert_int_equal(check("run", "x.out", NULL, NULL, "/scratch/u", &err),
			 0);
	assert_int_equal(check(NULL, NULL, "e/%j.err", NULL, NULL, &err), 0);
	/* A component prefix, not a string prefix. */
	assert_int_equal(check("/scratchy", NULL, NULL, NULL, NULL, &err),
			 HB_EINVAL);
	has(err.msg, "--chdir /scratchy is not on a volume");
	assert_int_equal(
		check(NULL, NULL, "/projectsX/e.err", NULL, NULL, &err),
		HB_EINVAL);
	has(err.msg, "--error /projectsX/e.err is not on a volume");
	assert_int_equal(check(NULL, NULL, NULL, "/etc/passwd", NULL, &err),
			 HB_EINVAL);
	has(err.msg, "--input /etc/passwd is not on a volume");
	/* No ".." games. */
	assert_int_equal(
		check(NULL, "/scratch/../etc/x.out", NULL, NULL, NULL, &err),
		HB_EINVAL);
	has(err.msg, "--output /scratch/../etc/x.out: a path with a '..'");
	assert_int_equal(check(NULL, "../x.out", NULL, NULL, "/scratch", &err),
			 HB_EINVAL);
	has(err.msg, "--output /scratch/../x.out");
	assert_int_equal(check("/scratch/a/..", NULL, NULL, NULL, NULL, &err),
			 HB_EINVAL);
	has(err.msg, "--chdir /scratch/a/..");

	/* No volumes configured: everything passes. */
	config(&o);
	hb_jobspec_init(&s, "job.sh");
	s.output = hb_jobspec_strdup(&s, "/home/u/x.out");
	assert_int_equal(hb_k8s_paths_check(&o, &s, "/home/u", &err), 0);
	hb_jobspec_free(&s);
}

/* The emitter checks too: a translated job never loses its files. */
static void test_emit_checks_paths(void **state)
{
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_err err;

	(void)state;
	config(&o);
	o.volumes = vols;
	o.nvolumes = 2;
	new_spec(&s);
	HB_TEST_SET_STR(&s, output, HB_F_OUTPUT, "/home/u/x.out");
	assert_int_equal(emit_err(&s, &o, &err), HB_EINVAL);
	assert_string_equal(err.msg,
			    "job.sh: --output /home/u/x.out is not on a volume "
			    "the cluster mounts (mapped: /scratch, "
			    "/projects)");
	hb_jobspec_free(&s);
}

/* ---------------------------------------------------------------- */
/* Images                                                           */
/* ---------------------------------------------------------------- */

static void test_allowed_images(void **state)
{
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_report rep;
	struct hb_err err;
	cJSON *doc;

	(void)state;
	config(&o);
	o.allowed_images = allowed;
	o.nallowed_images = 2;
	/* A user's image outside the list. */
	new_spec(&s);
	HB_TEST_SET_STR(&s, container, HB_F_CONTAINER, "evil.io/miner:1");
	assert_int_equal(emit_err(&s, &o, &err), HB_EINVAL);
	has(err.msg, "--container image 'evil.io/miner:1' is not one the site "
		     "allows");
	hb_jobspec_free(&s);
	/* On the list. */
	new_spec(&s);
	HB_TEST_SET_STR(&s, container, HB_F_CONTAINER,
			"ghcr.io/site/gromacs:4");
	doc = emit(&s, &o, &rep);
	assert_string_equal(
		cJSON_GetStringValue(at(container(doc, "Worker"), "image")),
		"ghcr.io/site/gromacs:4");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
	/* A key of the site's map: trusted, though its image is not on the
	 * list. */
	new_spec(&s);
	HB_TEST_SET_STR(&s, container, HB_F_CONTAINER, "lammps");
	o.allowed_images = allowed + 1;
	o.nallowed_images = 1;
	doc = emit(&s, &o, &rep);
	assert_string_equal(
		cJSON_GetStringValue(at(container(doc, "Launcher"), "image")),
		"ghcr.io/site/lammps:2");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* ---------------------------------------------------------------- */
/* Kueue and gang scheduling                                        */
/* ---------------------------------------------------------------- */

static void test_kueue(void **state)
{
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	config(&o);
	o.partition_queues = queues;
	o.npartition_queues = 1;
	o.priority_classes = prio;
	o.npriority_classes = 1;
	o.default_priority_class = "hpc-normal";
	o.pod_priority_classes = pod_prio;
	o.npod_priority_classes = 1;
	new_spec(&s);
	HB_TEST_SET_STR(&s, partition, HB_F_PARTITION, "gpu");
	HB_TEST_SET_STR(&s, qos, HB_F_QOS, "high");
	HB_TEST_SET_NUM(&s, nodes_min, HB_F_NODES, 3);
	doc = emit(&s, &o, &rep);
	assert_string_equal(
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
			at(doc, "metadata.labels"),
			"kueue.x-k8s.io/priority-class")),
		"hpc-high");
	assert_int_equal(rep.fate[HB_F_QOS].kind, HB_FATE_MAPPED);
	/* Kueue admits it by unsuspending it. */
	assert_true(cJSON_IsTrue(at(doc, "spec.runPolicy.suspend")));
	/* No gang scheduling asked for. */
	assert_null(at(doc, "spec.runPolicy.schedulingPolicy"));
	cJSON_Delete(doc);
	hb_report_free(&rep);

	o.gang_scheduling = true;
	doc = emit(&s, &o, &rep);
	assert_int_equal(at(doc, "spec.runPolicy.schedulingPolicy.minAvailable")
				 ->valuedouble,
			 4);
	assert_string_equal(
		cJSON_GetStringValue(
			at(doc, "spec.runPolicy.schedulingPolicy.queue")),
		"gpu-queue");
	assert_string_equal(
		cJSON_GetStringValue(at(
			doc, "spec.runPolicy.schedulingPolicy.priorityClass")),
		"high-priority");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* A QoS with no entry gets the default class, and stays carried;
	 * no queue: not suspended. */
	new_spec(&s);
	HB_TEST_SET_STR(&s, qos, HB_F_QOS, "normal");
	doc = emit(&s, &o, &rep);
	assert_string_equal(
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
			at(doc, "metadata.labels"),
			"kueue.x-k8s.io/priority-class")),
		"hpc-normal");
	assert_int_equal(rep.fate[HB_F_QOS].kind, HB_FATE_CARRIED);
	assert_null(at(doc, "spec.runPolicy.suspend"));
	assert_null(at(doc, "spec.runPolicy.schedulingPolicy.queue"));
	assert_null(at(doc, "spec.runPolicy.schedulingPolicy.priorityClass"));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* ---------------------------------------------------------------- */
/* ssh                                                              */
/* ---------------------------------------------------------------- */

static void test_ssh(void **state)
{
	struct hb_jobspec s, back;
	struct hb_k8s_opts o;
	struct hb_report rep;
	struct hb_err err = { 0 };
	const char *args;
	cJSON *doc;

	(void)state;
	config(&o);
	o.ssh_port = 2022;
	o.ssh_auth_mount_path = "/etc/keys";
	new_spec(&s);
	doc = emit(&s, &o, &rep);
	assert_string_equal(
		cJSON_GetStringValue(at(doc, "spec.sshAuthMountPath")),
		"/etc/keys");
	args = env_of(container(doc, "Launcher"), "HPCBRIDGE_SSH_ARGS");
	assert_non_null(args);
	has(args, "-p 2022 -i /etc/keys/id_rsa");
	/* Not on the workers: they serve, not connect. */
	assert_null(env_of(container(doc, "Worker"), "HPCBRIDGE_SSH_ARGS"));
	args = cJSON_GetStringValue(
		cJSON_GetArrayItem(at(container(doc, "Worker"), "args"), 0));
	has(args, "'Port 2022'");
	has(args, "'HostKey /etc/keys/id_rsa'");
	/* Read back, the launcher's ssh line is not the job's env. */
	hb_jobspec_init(&back, "back.yaml");
	assert_int_equal(hb_mpijob_parse(doc, &back, &err), 0);
	for (uint32_t i = 0; i < back.nenv; i++)
		assert_string_not_equal(back.env[i].name, "HPCBRIDGE_SSH_ARGS");
	hb_jobspec_free(&back);
	cJSON_Delete(doc);
	hb_report_free(&rep);

	/* Defaults: port 2222, keys outside any home. */
	config(&o);
	doc = emit(&s, &o, &rep);
	assert_string_equal(
		cJSON_GetStringValue(at(doc, "spec.sshAuthMountPath")),
		"/etc/hpcbridge/ssh");
	has(env_of(container(doc, "Launcher"), "HPCBRIDGE_SSH_ARGS"),
	    "-p 2222 ");
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* It round-trips: the volumes, the securityContext, Kueue's fields and
 * the ssh line are the site's, not the job's, and do not come back as
 * the job's.  (The identity is never read back: a manifest does not say
 * who a job runs as; the daemon does.) */
/* OpenShift: the SCC the pods ask for, and the uid range text. */
static void test_openshift(void **state)
{
	struct hb_k8s_opts o;
	struct hb_jobspec s;
	struct hb_report rep;
	cJSON *doc;

	(void)state;
	config(&o);
	new_spec(&s);
	doc = emit(&s, &o, &rep);
	assert_null(hb_doc_get(doc, "spec.mpiReplicaSpecs.Launcher.template."
				    "metadata.annotations"));
	cJSON_Delete(doc);
	hb_report_free(&rep);
	o.openshift_scc = "hpcbridge-users";
	doc = emit(&s, &o, &rep);
	for (int i = 0; i < 2; i++) {
		char p[160];

		snprintf(p, sizeof(p),
			 "spec.mpiReplicaSpecs.%s.template.metadata."
			 "annotations",
			 i ? "Worker" : "Launcher");
		assert_string_equal(
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				hb_doc_get(doc, p), "openshift.io/required-scc")),
			"hpcbridge-users");
	}
	cJSON_Delete(doc);
	hb_report_free(&rep);
	hb_jobspec_free(&s);

	/* START/SIZE holds START .. START+SIZE-1; START-END holds END */
	assert_int_equal(hb_k8s_uid_in_range("1000660000/10000", 1000660000), 1);
	assert_int_equal(hb_k8s_uid_in_range("1000660000/10000", 1000669999), 1);
	assert_int_equal(hb_k8s_uid_in_range("1000660000/10000", 1000670000), 0);
	assert_int_equal(hb_k8s_uid_in_range("1000660000/10000", 1205), 0);
	assert_int_equal(hb_k8s_uid_in_range("1000-60000,70000/10", 60000), 1);
	assert_int_equal(hb_k8s_uid_in_range("1000-60000,70000/10", 70009), 1);
	assert_int_equal(hb_k8s_uid_in_range("1000-60000,70000/10", 70010), 0);
	assert_int_equal(hb_k8s_uid_in_range("1000-60000,70000/10", 999), 0);
	/* not ranges */
	assert_int_equal(hb_k8s_uid_in_range(NULL, 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("", 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("1000", 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("1000/", 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("x/10", 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("5-1", 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("1/10,", 1), -1);
	assert_int_equal(hb_k8s_uid_in_range("1/10 ", 1), -1);
}

static void test_round_trip(void **state)
{
	struct hb_jobspec s;
	struct hb_config cfg;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	config(&cfg.k8s);
	cfg.k8s.volumes = vols;
	cfg.k8s.nvolumes = 2;
	cfg.k8s.partition_queues = queues;
	cfg.k8s.npartition_queues = 1;
	cfg.k8s.priority_classes = prio;
	cfg.k8s.npriority_classes = 1;
	cfg.k8s.gang_scheduling = true;
	new_spec(&s);
	HB_TEST_SET_STR(&s, partition, HB_F_PARTITION, "gpu");
	HB_TEST_SET_STR(&s, qos, HB_F_QOS, "high");
	HB_TEST_SET_STR(&s, chdir, HB_F_CHDIR, "/scratch/run");
	hb_test_manifest_round_trip(&s, &cfg, HB_SRC_MPIJOB, -1, schemas,
				    "volumes and Kueue");
	hb_jobspec_free(&s);
}

/* Where cheap, the TrainJob too: its pods run as the user (the runtime
 * owns the containers), a queued one starts suspended, root is refused,
 * and the volumes it cannot mount are reported, not claimed. */
static void test_trainjob(void **state)
{
	static const uint32_t groups[] = { 700 };
	struct hb_jobspec s;
	struct hb_k8s_opts o;
	struct hb_report rep;
	struct hb_err err = { 0 };
	const cJSON *p, *sc;
	cJSON *doc = NULL;

	(void)state;
	config(&o);
	o.trainjob_runtime = "mpi-distributed";
	o.default_queue = "batch";
	o.volumes = vols;
	o.nvolumes = 2;
	new_spec(&s);
	HB_TEST_SET_STR(&s, user, HB_F_USER, "alice");
	assert_int_equal(hb_jobspec_set_identity(&s, 1500, 700, groups, 1), 0);
	hb_report_init(&rep, "TrainJob");
	if (hb_trainjob_emit(&s, &o, -1, &doc, &rep, &err))
		fail_msg("emit: %s", err.msg);
	hb_test_assert_valid(schemas, doc);
	assert_true(cJSON_IsTrue(at(doc, "spec.suspend")));
	p = at(doc, "spec.runtimePatches");
	p = at(cJSON_GetArrayItem(p, 0), "trainingRuntimeSpec.template.spec."
					 "replicatedJobs");
	assert_int_equal(cJSON_GetArraySize(p), 2);
	for (int i = 0; i < 2; i++) {
		sc = at(cJSON_GetArrayItem(p, i),
			"template.spec.template.spec.securityContext");
		assert_int_equal(at(sc, "runAsUser")->valuedouble, 1500);
		assert_int_equal(at(sc, "runAsGroup")->valuedouble, 700);
		assert_true(cJSON_IsTrue(at(sc, "runAsNonRoot")));
	}
	assert_int_equal(rep.fate[HB_F_USER].kind, HB_FATE_MAPPED);
	assert_int_equal(rep.nwarnings, 1);
	has(rep.warnings[0], "site volumes are not mounted in a TrainJob");
	cJSON_Delete(doc);
	hb_report_free(&rep);

	assert_int_equal(hb_jobspec_set_identity(&s, 0, 0, NULL, 0), 0);
	doc = NULL;
	hb_report_init(&rep, "TrainJob");
	assert_int_equal(hb_trainjob_emit(&s, &o, -1, &doc, &rep, &err),
			 HB_EINVAL);
	assert_null(doc);
	has(err.msg, "runs as root");
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_identity_unknown),
		cmocka_unit_test(test_root_refused),
		cmocka_unit_test(test_volumes),
		cmocka_unit_test(test_paths_check),
		cmocka_unit_test(test_emit_checks_paths),
		cmocka_unit_test(test_allowed_images),
		cmocka_unit_test(test_kueue),
		cmocka_unit_test(test_ssh),
		cmocka_unit_test(test_openshift),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_trainjob),
	};
	return cmocka_run_group_tests(tests, load_schemas, free_schemas);
}
