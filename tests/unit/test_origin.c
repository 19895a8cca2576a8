/*
 * test_origin.c - the pure parts of the Kubernetes-origin module: which
 * MPIJobs are ours, what is submitted for them, and the status document
 * built from a Slurm state (checked against the real MPIJob CRD).
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/schema.h"
#include "gateway/daemon/origin.h"
#include "testutil.h"

static struct hb_schema_set *crds;

static const char base[] =
	"{\"apiVersion\":\"kubeflow.org/v2beta1\",\"kind\":\"MPIJob\","
	"\"metadata\":{\"name\":\"hello\",\"namespace\":\"default\","
	"\"labels\":{\"hpcbridge.io/user\":\"root\","
	"\"hpcbridge.io/account\":\"physics\"}},"
	"\"spec\":{\"slotsPerWorker\":1,\"runPolicy\":{\"managedBy\":"
	"\"hpcbridge.io/gateway\"},\"mpiReplicaSpecs\":{"
	"\"Launcher\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":"
	"[{\"name\":\"l\",\"image\":\"busybox\",\"workingDir\":\"/srv/w\","
	"\"command\":[\"/bin/sh\",\"-c\",\"echo hi; exit 0\"]}]}}},"
	"\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":"
	"[{\"name\":\"w\",\"image\":\"busybox\"}]}}}}}}";

static cJSON *job(void)
{
	cJSON *j = cJSON_Parse(base);

	assert_non_null(j);
	return j;
}

static cJSON *labels(cJSON *j)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"),
				   "labels");
}

static int setup(void **state)
{
	(void)state;
	crds = hb_test_load_crds();
	return crds ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	hb_schema_set_free(crds);
	return 0;
}

static void test_managed(void **state)
{
	cJSON *j = job(), *rp;

	(void)state;
	assert_true(hb_origin_managed(j));
	rp = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "spec"), "runPolicy");
	cJSON_ReplaceItemInObject(rp, "managedBy",
				  cJSON_CreateString("kubeflow.org/"
						     "mpi-operator"));
	assert_false(hb_origin_managed(j));
	cJSON_ReplaceItemInObject(rp, "managedBy", cJSON_CreateNumber(1));
	assert_false(hb_origin_managed(j));
	cJSON_DeleteItemFromObject(rp, "managedBy");
	assert_false(hb_origin_managed(j));
	assert_false(hb_origin_managed(NULL));
	cJSON_Delete(j);
}

/* A configuration from YAML text. */
static void config(struct hb_config *cfg, const char *yaml)
{
	struct hb_err err = { 0 };

	if (hb_config_parse(yaml, strlen(yaml), "test.yaml", cfg, &err))
		fail_msg("config: %s", err.msg);
}

/* Prepare j in namespace ns under cfg; the result, with oj freed and
 * *reason (static) set. */
static int prepare(const cJSON *j, const char *ns, const struct hb_config *cfg,
		   const char **reason, char *msg, size_t n)
{
	struct hb_origin_job oj;
	struct hb_err err = { 0 };
	int rc = hb_origin_prepare(j, ns, cfg, &oj, &err);

	*reason = oj.reason;
	snprintf(msg, n, "%s", err.msg);
	if (!rc) {
		assert_null(oj.reason);
		assert_true(oj.uid > 0);
	}
	hb_origin_job_free(&oj);
	return rc;
}

static void set_user(cJSON *j, const char *user)
{
	cJSON_DeleteItemFromObject(labels(j), "hpcbridge.io/user");
	if (user)
		cJSON_AddStringToObject(labels(j), "hpcbridge.io/user", user);
}

/* The fate (and target) the fidelity report gives field f, "" if none. */
static void fate_of(const cJSON *rep, const char *f, char *out, size_t n)
{
	const cJSON *e, *x;

	snprintf(out, n, "%s", "");
	cJSON_ArrayForEach (e, cJSON_GetObjectItem(rep, "entries"))
		cJSON_ArrayForEach (x, cJSON_GetObjectItem(e, "fields")) {
			const char *t = hb_doc_str(x, "target");

			if (strcmp(hb_doc_str(x, "field"), f))
				continue;
			snprintf(out, n, "%s %s", hb_doc_str(x, "fate"),
				 t ? t : "-");
		}
}

/* What Slurm is asked for every field, before the job is placed: the
 * annotations' QoS, constraint and whole nodes mapped, the pods' image
 * dropped for Slurm (not in the script), and what Slurm cannot take
 * named in slurm_refusal (the job may still run as a twin). */
static void test_prepare_slurm_fields(void **state)
{
	struct passwd *pw = getpwnam("daemon");
	struct hb_origin_job oj;
	struct hb_err err = { 0 };
	struct hb_config cfg;
	char yaml[256], f[128];
	cJSON *j = job(), *ann;

	(void)state;
	assert_non_null(pw);
	snprintf(yaml, sizeof(yaml),
		 "origin:\n  min_uid: %u\n  namespaces:\n"
		 "    default: [daemon]\n",
		 (unsigned)pw->pw_uid);
	config(&cfg, yaml);
	set_user(j, "daemon");
	ann = cJSON_AddObjectToObject(cJSON_GetObjectItem(j, "metadata"),
				      "annotations");
	cJSON_AddStringToObject(ann, "hpcbridge.io/qos", "hbq");
	cJSON_AddStringToObject(ann, "hpcbridge.io/constraint", "ib");
	cJSON_AddStringToObject(ann, "hpcbridge.io/exclusive", "true");
	assert_int_equal(hb_origin_prepare(j, "default", &cfg, &oj, &err), 0);
	assert_string_equal(oj.slurm_refusal, "");
	assert_non_null(strstr(oj.script.data, "#SBATCH --qos=hbq\n"));
	assert_non_null(strstr(oj.script.data, "#SBATCH --constraint=ib\n"));
	assert_non_null(strstr(oj.script.data, "#SBATCH --exclusive\n"));
	assert_null(strstr(oj.script.data, "--container"));
	assert_non_null(oj.fidelity);
	fate_of(oj.fidelity, "qos", f, sizeof(f));
	assert_string_equal(f, "mapped qos");
	fate_of(oj.fidelity, "constraint", f, sizeof(f));
	assert_string_equal(f, "mapped features");
	fate_of(oj.fidelity, "exclusive", f, sizeof(f));
	assert_string_equal(f, "mapped shared (JOB_SHARED_NONE)");
	fate_of(oj.fidelity, "container", f, sizeof(f));
	assert_string_equal(f, "dropped -");
	hb_origin_job_free(&oj);

	cJSON_AddStringToObject(ann, "hpcbridge.io/keep", "oe");
	assert_int_equal(hb_origin_prepare(j, "default", &cfg, &oj, &err), 0);
	if (!strstr(oj.slurm_refusal, "field keep: ") ||
	    !strstr(oj.slurm_refusal, "cannot be submitted to Slurm"))
		fail_msg("refusal: '%s'", oj.slurm_refusal);
	fate_of(oj.fidelity, "keep", f, sizeof(f));
	assert_string_equal(f, "dropped -");
	hb_origin_job_free(&oj);
	hb_config_free(&cfg);
	cJSON_Delete(j);
}

/* The system user "daemon" (uid 1 on Debian) stands for a granted user:
 * the floor is lowered to its uid where it must pass. */
static void test_prepare(void **state)
{
	struct hb_origin_job oj;
	struct hb_err err = { 0 };
	struct hb_config cfg, dflt, empty;
	char yaml[512], msg[HB_ERR_MAX];
	const char *reason;
	struct passwd *pw = getpwnam("daemon");
	cJSON *j = job();

	(void)state;
	assert_non_null(pw);
	assert_true(pw->pw_uid > 0 && pw->pw_uid < 1000);
	snprintf(yaml, sizeof(yaml),
		 "origin:\n"
		 "  min_uid: %u\n"
		 "  namespaces:\n"
		 "    default: [daemon, root, nobody]\n"
		 "    open: ['*']\n"
		 "    closed: []\n",
		 (unsigned)pw->pw_uid);
	config(&cfg, yaml);
	config(&dflt, "origin:\n  namespaces:\n    default: [daemon]\n");
	config(&empty, "");
	assert_int_equal(empty.norigin_namespaces, 0);
	assert_int_equal(empty.origin_min_uid, 1000);

	/* granted: the whole job */
	set_user(j, "daemon");
	assert_int_equal(hb_origin_prepare(j, "default", &cfg, &oj, &err), 0);
	assert_string_equal(oj.user, "daemon");
	assert_string_equal(oj.account, "physics");
	assert_int_equal(oj.uid, pw->pw_uid);
	assert_int_equal(oj.gid, pw->pw_gid);
	assert_null(oj.reason);
	assert_non_null(oj.script.data);
	assert_int_equal(strlen(oj.script.data), oj.script.len);
	assert_non_null(strstr(oj.script.data, "#SBATCH --account=physics\n"));
	assert_non_null(strstr(oj.script.data, "#SBATCH --chdir=/srv/w\n"));
	assert_non_null(strstr(oj.script.data, "#SBATCH --job-name=hello\n"));
	assert_non_null(strstr(oj.script.data, "echo hi; exit 0"));
	hb_origin_job_free(&oj);
	/* no namespace given: the MPIJob's own */
	assert_int_equal(prepare(j, NULL, &cfg, &reason, msg, sizeof(msg)), 0);
	/* "*": any user at the floor */
	assert_int_equal(prepare(j, "open", &cfg, &reason, msg, sizeof(msg)),
			 0);

	/* root, even listed: below the floor, which is never under 1 */
	set_user(j, "root");
	assert_int_equal(prepare(j, "default", &cfg, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "SystemUser");
	assert_non_null(strstr(msg, "uid 0"));
	assert_non_null(strstr(msg, "origin.min_uid"));
	assert_int_equal(prepare(j, "open", &cfg, &reason, msg, sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "SystemUser");
	/* nobody (the overflow uid), even listed and above the floor */
	if (getpwnam("nobody") && getpwnam("nobody")->pw_uid == 65534) {
		set_user(j, "nobody");
		assert_int_equal(prepare(j, "default", &cfg, &reason, msg,
					 sizeof(msg)),
				 HB_EPERM);
		assert_string_equal(reason, "SystemUser");
		assert_non_null(strstr(msg, "nobody"));
	}
	/* a system user under the default floor (1000) */
	set_user(j, "daemon");
	assert_int_equal(prepare(j, "default", &dflt, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "SystemUser");

	/* a user the namespace does not list; an empty list */
	set_user(j, "bin");
	assert_int_equal(prepare(j, "default", &cfg, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "UserNotGranted");
	assert_non_null(strstr(msg, "origin.namespaces.default"));
	set_user(j, "daemon");
	assert_int_equal(prepare(j, "closed", &cfg, &reason, msg, sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "UserNotGranted");
	/* not granted comes before the lookup: no probing of names */
	set_user(j, "no-such-user-hb");
	assert_int_equal(prepare(j, "default", &cfg, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "UserNotGranted");
	/* granted by "*" but unknown */
	assert_int_equal(prepare(j, "open", &cfg, &reason, msg, sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "UnknownUser");
	assert_non_null(strstr(msg, "no-such-user-hb"));

	/* a namespace not mapped; no mapping at all (the default); none */
	set_user(j, "daemon");
	assert_int_equal(prepare(j, "team-x", &cfg, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "NamespaceNotMapped");
	assert_non_null(strstr(msg, "namespace team-x"));
	assert_int_equal(prepare(j, "default", &empty, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "NamespaceNotMapped");
	assert_non_null(strstr(msg, "origin.namespaces is not set"));
	assert_int_equal(prepare(j, "default", NULL, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "NamespaceNotMapped");

	/* no user label: said first */
	set_user(j, NULL);
	assert_int_equal(prepare(j, "team-x", &cfg, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "MissingUser");
	assert_non_null(strstr(msg, "hpcbridge.io/user"));
	/* an empty one is no better */
	set_user(j, "");
	assert_int_equal(prepare(j, "default", &cfg, &reason, msg,
				 sizeof(msg)),
			 HB_EPERM);
	assert_string_equal(reason, "MissingUser");

	/* a spec the translator refuses */
	set_user(j, "daemon");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "spec"),
				   "mpiReplicaSpecs");
	assert_int_not_equal(prepare(j, "default", &cfg, &reason, msg,
				     sizeof(msg)),
			     0);
	assert_string_equal(reason, "InvalidSpec");
	cJSON_Delete(j);
	hb_config_free(&cfg);
	hb_config_free(&dflt);
	hb_config_free(&empty);
}

static void test_time(void **state)
{
	char t[32];

	(void)state;
	hb_origin_time(1767225600123, t); /* 2026-01-01 */
	assert_string_equal(t, "2026-01-01T00:00:00Z");
	hb_origin_time(0, t);
	assert_string_equal(t, "1970-01-01T00:00:00Z");
}

#define T0 1767225600000 /* created */
#define T1 1767225605000 /* started */
#define T2 1767225630000 /* ended */

static struct hb_job_row row(enum hb_job_state state, int64_t slurm_id,
			     int64_t exit_code, const char *reason)
{
	struct hb_job_row r = { 0 };

	r.entry = HB_ENTRY_KUBERNETES;
	r.target = HB_TARGET_SLURM;
	r.state = state;
	r.reason = reason;
	r.slurm_job_id = slurm_id;
	r.exit_code = exit_code;
	r.k8s_namespace = "default";
	r.k8s_name = "hello";
	r.k8s_uid = "u-1";
	r.created_ms = T0;
	r.updated_ms = hb_store_state_terminal(state) ? T2 : T1;
	return r;
}

static const cJSON *st_of(const cJSON *doc)
{
	const cJSON *s = cJSON_GetObjectItem(doc, "status");

	assert_non_null(s);
	return s;
}

static const cJSON *cond(const cJSON *doc, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, cJSON_GetObjectItem(st_of(doc), "conditions"))
		if (!strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type))
			return c;
	return NULL;
}

static const char *s_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int launcher(const cJSON *doc, const char *k)
{
	const cJSON *l = cJSON_GetObjectItem(
		cJSON_GetObjectItem(st_of(doc), "replicaStatuses"), "Launcher");

	assert_non_null(cJSON_GetObjectItem(l, k));
	return cJSON_GetObjectItem(l, k)->valueint;
}

static int nconds(const cJSON *doc)
{
	return cJSON_GetArraySize(
		cJSON_GetObjectItem(st_of(doc), "conditions"));
}

/* The status as the CRD sees it: on the MPIJob (without managedBy, which
 * the operator's own rules would refuse). */
static void assert_crd_valid(const cJSON *doc)
{
	cJSON *j = job();

	cJSON_DeleteItemFromObject(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "spec"),
				    "runPolicy"),
		"managedBy");
	cJSON_AddItemToObject(j, "status", cJSON_Duplicate(st_of(doc), 1));
	hb_test_assert_valid(crds, j);
	cJSON_Delete(j);
}

static void test_status_queued(void **state)
{
	struct hb_job_row r = row(HB_JOB_QUEUED, 42, -1, NULL);
	cJSON *d = hb_origin_status_doc(&r, 0);

	(void)state;
	assert_non_null(d);
	assert_int_equal(nconds(d), 1);
	assert_string_equal(s_of(cond(d, "Created"), "status"), "True");
	assert_string_equal(s_of(cond(d, "Created"), "reason"),
			    "MPIJobCreated");
	assert_string_equal(s_of(cond(d, "Created"), "lastTransitionTime"),
			    "2026-01-01T00:00:00Z");
	assert_null(s_of(st_of(d), "startTime"));
	assert_null(s_of(st_of(d), "completionTime"));
	assert_int_equal(launcher(d, "active"), 0);
	assert_int_equal(launcher(d, "succeeded"), 0);
	assert_int_equal(launcher(d, "failed"), 0);
	assert_crd_valid(d);
	cJSON_Delete(d);
	/* pending (not submitted yet) looks the same */
	r = row(HB_JOB_PENDING, -1, -1, NULL);
	d = hb_origin_status_doc(&r, 0);
	assert_int_equal(nconds(d), 1);
	cJSON_Delete(d);
}

static void test_status_running(void **state)
{
	struct hb_job_row r = row(HB_JOB_RUNNING, 42, -1, NULL);
	cJSON *d = hb_origin_status_doc(&r, 0);

	(void)state;
	assert_non_null(d);
	assert_int_equal(nconds(d), 2);
	assert_string_equal(s_of(cond(d, "Running"), "status"), "True");
	assert_non_null(
		strstr(s_of(cond(d, "Running"), "message"), "Slurm as job 42"));
	/* the row's last change is when it started */
	assert_string_equal(s_of(st_of(d), "startTime"),
			    "2026-01-01T00:00:05Z");
	assert_null(s_of(st_of(d), "completionTime"));
	assert_int_equal(launcher(d, "active"), 1);
	assert_crd_valid(d);
	cJSON_Delete(d);
}

static void test_status_succeeded(void **state)
{
	struct hb_job_row r = row(HB_JOB_SUCCEEDED, 42, 0, NULL);
	cJSON *d = hb_origin_status_doc(&r, T1);

	(void)state;
	assert_non_null(d);
	assert_int_equal(nconds(d), 3);
	assert_string_equal(s_of(cond(d, "Running"), "status"), "False");
	assert_string_equal(s_of(cond(d, "Succeeded"), "status"), "True");
	assert_string_equal(s_of(cond(d, "Succeeded"), "reason"),
			    "MPIJobSucceeded");
	assert_null(cond(d, "Failed"));
	assert_string_equal(s_of(st_of(d), "startTime"),
			    "2026-01-01T00:00:05Z");
	assert_string_equal(s_of(st_of(d), "completionTime"),
			    "2026-01-01T00:00:30Z");
	assert_int_equal(launcher(d, "active"), 0);
	assert_int_equal(launcher(d, "succeeded"), 1);
	assert_int_equal(launcher(d, "failed"), 0);
	assert_crd_valid(d);
	cJSON_Delete(d);
	/* never seen running (a short job between two polls): it started
	 * no later than it ended */
	d = hb_origin_status_doc(&r, 0);
	assert_string_equal(s_of(st_of(d), "startTime"),
			    "2026-01-01T00:00:30Z");
	cJSON_Delete(d);
}

static void test_status_failed(void **state)
{
	struct hb_job_row r = row(HB_JOB_FAILED, 42, 3, NULL);
	cJSON *d = hb_origin_status_doc(&r, T1);

	(void)state;
	assert_non_null(d);
	assert_string_equal(s_of(cond(d, "Failed"), "status"), "True");
	assert_string_equal(s_of(cond(d, "Failed"), "reason"), "MPIJobFailed");
	assert_non_null(
		strstr(s_of(cond(d, "Failed"), "message"), "exit code 3"));
	assert_null(cond(d, "Succeeded"));
	assert_int_equal(launcher(d, "failed"), 1);
	assert_int_equal(launcher(d, "succeeded"), 0);
	assert_crd_valid(d);
	cJSON_Delete(d);

	/* cancelled on Slurm */
	r = row(HB_JOB_CANCELLED, 42, -1, "cancelled by kubernetes");
	d = hb_origin_status_doc(&r, T1);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"),
			    "SlurmJobCancelled");
	assert_crd_valid(d);
	cJSON_Delete(d);

	/* Slurm refused it */
	r = row(HB_JOB_FAILED, -1, -1, "Invalid account");
	d = hb_origin_status_doc(&r, 0);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"),
			    "SlurmSubmitFailed");
	assert_non_null(
		strstr(s_of(cond(d, "Failed"), "message"), "Invalid account"));
	assert_null(cond(d, "Running"));
	assert_null(s_of(st_of(d), "startTime"));
	assert_non_null(s_of(st_of(d), "completionTime"));
	assert_int_equal(launcher(d, "failed"), 0);
	cJSON_Delete(d);
}

static void test_status_rejected(void **state)
{
	struct hb_job_row r = row(HB_JOB_FAILED, -1, -1,
				  "MissingUser: the MPIJob has no label");
	cJSON *d;

	(void)state;
	r.target = HB_TARGET_REJECTED;
	d = hb_origin_status_doc(&r, 0);
	assert_non_null(d);
	assert_int_equal(nconds(d), 2);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"), "MissingUser");
	assert_non_null(strstr(s_of(cond(d, "Failed"), "message"),
			       "the MPIJob has no label"));
	assert_null(strstr(s_of(cond(d, "Failed"), "message"), "MissingUser"));
	assert_crd_valid(d);
	cJSON_Delete(d);
	/* a reason without a code keeps a generic one */
	r.reason = "no: colon code here";
	d = hb_origin_status_doc(&r, 0);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"), "Rejected");
	cJSON_Delete(d);
	/* the placement refused it */
	r.reason = "PlacementRejected: no side can run the job";
	d = hb_origin_status_doc(&r, 0);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"),
			    "PlacementRejected");
	assert_non_null(strstr(s_of(cond(d, "Failed"), "message"),
			       "was not run: no side can run the job"));
	cJSON_Delete(d);
	/* placed on Slurm, then refused before its submit (a restart
	 * found its user no longer granted): the refusal's reason */
	r.target = HB_TARGET_SLURM;
	r.reason = "UserNotGranted: user bob is not granted to namespace x";
	d = hb_origin_status_doc(&r, 0);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"),
			    "UserNotGranted");
	assert_non_null(strstr(s_of(cond(d, "Failed"), "message"),
			       "was not run: user bob is not granted"));
	assert_crd_valid(d);
	cJSON_Delete(d);
	/* Slurm's own refusal stays SlurmSubmitFailed */
	r.reason = "slurm_submit_batch_job as uid 1000: Access/permission "
		   "denied (Slurm error 2002)";
	d = hb_origin_status_doc(&r, 0);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"),
			    "SlurmSubmitFailed");
	cJSON_Delete(d);
}

/* A job placed in the cluster whose twin could not be made, or went. */
static void test_status_twin_failed(void **state)
{
	struct hb_job_row r =
		row(HB_JOB_FAILED, -1, -1, "TwinCreateFailed: forbidden");
	cJSON *d;

	(void)state;
	r.target = HB_TARGET_KUBERNETES;
	d = hb_origin_status_doc(&r, 0);
	assert_non_null(d);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"),
			    "TwinCreateFailed");
	assert_non_null(strstr(s_of(cond(d, "Failed"), "message"),
			       "did not run in the cluster: forbidden"));
	assert_null(strstr(s_of(cond(d, "Failed"), "message"), "Slurm"));
	assert_crd_valid(d);
	cJSON_Delete(d);
	r = row(HB_JOB_CANCELLED, -1, -1, "TwinDeleted: its twin was deleted");
	r.target = HB_TARGET_KUBERNETES;
	d = hb_origin_status_doc(&r, T1);
	assert_string_equal(s_of(cond(d, "Failed"), "reason"), "TwinDeleted");
	assert_string_equal(s_of(cond(d, "Running"), "status"), "False");
	assert_crd_valid(d);
	cJSON_Delete(d);
}

static void test_twin_name(void **state)
{
	char out[64], longname[80];

	(void)state;
	assert_int_equal(hb_origin_twin_name("hello", "4C02F7A6-3a00-4b7f", 2,
					     out),
			 0);
	assert_string_equal(out, "hello-4c02f7a6");
	/* dashes of the uid are skipped, not counted */
	assert_int_equal(hb_origin_twin_name("a", "12-34-56-78-9a", 1, out),
			 0);
	assert_string_equal(out, "a-12345678");
	/* cut so that "<twin>-worker-<N-1>" fits in 63 */
	memset(longname, 'x', 70);
	longname[70] = '\0';
	assert_int_equal(hb_origin_twin_name(longname, "0123456789", 10, out),
			 0);
	assert_int_equal(strlen(out) + strlen("-worker-9"), 63);
	assert_string_equal(out + strlen(out) - 9, "-01234567");
	assert_int_equal(hb_origin_twin_name(longname, "0123456789", 11, out),
			 0);
	assert_int_equal(strlen(out) + strlen("-worker-10"), 63);
	/* the translators' rule: lowercase, '.' to '-', a leading digit */
	assert_int_equal(hb_origin_twin_name("My.Job", "abcdefgh", 1, out), 0);
	assert_string_equal(out, "my-job-abcdefgh");
	assert_int_equal(hb_origin_twin_name("7up", "abcdefgh", 1, out), 0);
	assert_string_equal(out, "job-7up-abcdefgh");
	/* a uid too short to tell twins apart */
	assert_int_equal(hb_origin_twin_name("a", "abc-d", 1, out), HB_EINVAL);
	assert_int_equal(hb_origin_twin_name("a", NULL, 1, out), HB_EINVAL);
}

static cJSON *with_uid(void)
{
	cJSON *j = job();

	cJSON_AddStringToObject(cJSON_GetObjectItem(j, "metadata"), "uid",
				"4c02f7a6-3a00-4b7f-b37d-1d01952d489e");
	return j;
}

static void test_twin_doc(void **state)
{
	struct hb_err err = { 0 };
	cJSON *j = with_uid(), *t, *ref;
	const cJSON *meta;
	char name[64];

	(void)state;
	t = hb_origin_twin_doc(j, name, &err);
	assert_non_null(t);
	assert_string_equal(name, "hello-4c02f7a6");
	meta = cJSON_GetObjectItem(t, "metadata");
	assert_string_equal(s_of(meta, "name"), name);
	assert_string_equal(s_of(meta, "namespace"), "default");
	/* the user's labels, and the link to the original */
	assert_string_equal(s_of(cJSON_GetObjectItem(meta, "labels"),
				 "hpcbridge.io/user"),
			    "root");
	assert_string_equal(s_of(cJSON_GetObjectItem(meta, "labels"),
				 HB_ORIGIN_LABEL_TWIN_OF),
			    "4c02f7a6-3a00-4b7f-b37d-1d01952d489e");
	ref = cJSON_GetArrayItem(cJSON_GetObjectItem(meta, "ownerReferences"),
				 0);
	assert_non_null(ref);
	assert_string_equal(s_of(ref, "kind"), "MPIJob");
	assert_string_equal(s_of(ref, "name"), "hello");
	assert_string_equal(s_of(ref, "uid"),
			    "4c02f7a6-3a00-4b7f-b37d-1d01952d489e");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(ref, "controller")));
	/* not managed: the operator runs it */
	assert_false(hb_origin_managed(t));
	assert_null(cJSON_GetObjectItem(meta, "uid"));
	/* the original is untouched, the spec otherwise the same */
	assert_true(hb_origin_managed(j));
	assert_true(cJSON_Compare(
		cJSON_GetObjectItem(cJSON_GetObjectItem(t, "spec"),
				    "mpiReplicaSpecs"),
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "spec"),
				    "mpiReplicaSpecs"),
		1));
	hb_test_assert_valid(crds, t);
	cJSON_Delete(t);
	/* no uid: no twin */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "metadata"), "uid");
	assert_null(hb_origin_twin_doc(j, name, &err));
	assert_int_equal(err.code, HB_EINVAL);
	cJSON_Delete(j);
}

/* A twin with these conditions (type:status, ...) and times. */
static cJSON *twin_with(const char *conds, int finished)
{
	cJSON *t = job(), *st = cJSON_AddObjectToObject(t, "status");
	cJSON *arr = cJSON_AddArrayToObject(st, "conditions");
	char buf[256], *tok, *next;

	snprintf(buf, sizeof(buf), "%s", conds);
	for (tok = buf; *tok; tok = next) {
		cJSON *c = cJSON_CreateObject();
		char *colon = strchr(tok, ':');

		next = tok + strcspn(tok, ",");
		if (*next)
			*next++ = '\0';
		*colon = '\0';
		cJSON_AddStringToObject(c, "type", tok);
		cJSON_AddStringToObject(c, "status", colon + 1);
		cJSON_AddStringToObject(c, "reason", "R");
		cJSON_AddStringToObject(c, "message", "m");
		cJSON_AddStringToObject(c, "lastTransitionTime",
					"2026-01-01T00:00:00Z");
		cJSON_AddItemToArray(arr, c);
	}
	cJSON_AddStringToObject(st, "startTime", "2026-01-01T00:00:05Z");
	if (finished)
		cJSON_AddStringToObject(st, "completionTime",
					"2026-01-01T00:00:30Z");
	cJSON_AddItemToObject(
		st, "replicaStatuses",
		cJSON_Parse("{\"Launcher\":{\"succeeded\":1},"
			    "\"Worker\":{\"active\":2}}"));
	return t;
}

static void test_twin_state(void **state)
{
	static const struct {
		const char *conds, *want;
	} cases[] = {
		{ "", "queued" },
		{ "Created:True", "queued" },
		{ "Created:True,Running:True", "running" },
		{ "Created:True,Running:False,Succeeded:True", "succeeded" },
		{ "Created:True,Running:False,Failed:True", "failed" },
		{ "Created:True,Suspended:True", "queued" },
		{ "Created:True,Running:True,Succeeded:False", "running" },
	};
	char msg[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *t = twin_with(cases[i].conds, 0);

		assert_string_equal(hb_job_state_name(hb_origin_twin_state(
					    t, msg, sizeof(msg))),
				    cases[i].want);
		cJSON_Delete(t);
	}
	/* no status at all */
	assert_int_equal(hb_origin_twin_state(NULL, msg, sizeof(msg)),
			 HB_JOB_QUEUED);
	/* the deciding condition is named */
	{
		cJSON *t = twin_with("Created:True,Failed:True", 1);

		hb_origin_twin_state(t, msg, sizeof(msg));
		assert_string_equal(msg, "Failed: R: m");
		cJSON_Delete(t);
	}
}

static void test_twin_status(void **state)
{
	cJSON *t = twin_with("Created:True,Running:False,Succeeded:True", 1);
	cJSON *d = hb_origin_twin_status(t);
	const cJSON *st = cJSON_GetObjectItem(t, "status");

	(void)state;
	assert_non_null(d);
	assert_true(cJSON_Compare(cJSON_GetObjectItem(st_of(d), "conditions"),
				  cJSON_GetObjectItem(st, "conditions"), 1));
	assert_string_equal(s_of(st_of(d), "startTime"),
			    "2026-01-01T00:00:05Z");
	assert_string_equal(s_of(st_of(d), "completionTime"),
			    "2026-01-01T00:00:30Z");
	assert_int_equal(launcher(d, "succeeded"), 1);
	assert_non_null(cJSON_GetObjectItem(
		cJSON_GetObjectItem(st_of(d), "replicaStatuses"), "Worker"));
	assert_crd_valid(d);
	cJSON_Delete(d);
	cJSON_Delete(t);
	/* a running twin has no completionTime: the original's goes */
	t = twin_with("Created:True,Running:True", 0);
	d = hb_origin_twin_status(t);
	assert_true(cJSON_IsNull(
		cJSON_GetObjectItem(st_of(d), "completionTime")));
	assert_int_equal(nconds(d), 2);
	cJSON_Delete(d);
	cJSON_Delete(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_managed),
		cmocka_unit_test(test_prepare),
		cmocka_unit_test(test_prepare_slurm_fields),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_status_queued),
		cmocka_unit_test(test_status_running),
		cmocka_unit_test(test_status_succeeded),
		cmocka_unit_test(test_status_failed),
		cmocka_unit_test(test_status_rejected),
		cmocka_unit_test(test_status_twin_failed),
		cmocka_unit_test(test_twin_name),
		cmocka_unit_test(test_twin_doc),
		cmocka_unit_test(test_twin_state),
		cmocka_unit_test(test_twin_status),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
