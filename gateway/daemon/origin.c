/*
 * origin.c - Kubernetes-origin MPIJobs (managedBy: hpcbridge.io/gateway),
 * run on Slurm or as a twin MPIJob.  See origin.h and
 * docs/internals/origin.md.
 *
 * Threads: the reflector (hb_kube_reflect on the namespace's MPIJobs)
 * queues events for the loop; the status worker sends the merge patches
 * the loop hands it.  One mutex guards both queues; no network call runs
 * under it.  The index (MPIJob -> gateway job) and the staged patches
 * belong to the loop thread.
 */
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/remote.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/slurmc.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/translate.h"
#include "origin.h"

#define NBUCKETS	 4096
#define RETRY_MS	 1000 /* a status patch after a transient failure */
#define WATCH_RESTART_MS 5000
#define SCRIPT_MAX	 (4u << 20)

/* ------------------------------------------------------------------ */
/* Pure parts                                                          */
/* ------------------------------------------------------------------ */

int hb_origin_managed(const cJSON *mpijob)
{
	const char *m = hb_doc_str(hb_doc_get(mpijob, "spec.runPolicy"),
				  "managedBy");

	return m && !strcmp(m, HB_ORIGIN_MANAGED_BY);
}

void hb_origin_time(int64_t ms, char out[32])
{
	hb_time_rfc3339_format(ms > 0 ? ms / 1000 : 0, out);
}

void hb_origin_job_free(struct hb_origin_job *j)
{
	if (!j)
		return;
	hb_buf_free(&j->script);
	cJSON_Delete(j->jobspec);
	j->jobspec = NULL;
	cJSON_Delete(j->fidelity);
	j->fidelity = NULL;
}

/* A label value of at most n-1 bytes, or NULL (absent, not a string,
 * empty, too long). */
static const char *label(const cJSON *obj, const char *key, size_t n)
{
	const char *v = hb_doc_str(hb_doc_get(obj, "metadata.labels"), key);

	return v && v[0] && strlen(v) < n ? v : NULL;
}

/* Whether origin.namespaces lets namespace ns's MPIJobs run as user (by
 * name: the uid floor is checked once the user is looked up).  On refusal
 * *reason and err say why. */
static int granted(const struct hb_config *cfg, const char *ns,
		   const char *user, const char **reason, struct hb_err *err)
{
	const struct hb_list_map *m;

	if (!cfg || !cfg->norigin_namespaces) {
		*reason = "NamespaceNotMapped";
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "origin.namespaces is not set, so no "
				  "namespace may run managed MPIJobs: an "
				  "administrator maps namespace %s to the "
				  "users it may act for",
				  ns);
	}
	m = hb_list_map_get(cfg->origin_namespaces, cfg->norigin_namespaces,
			    ns);
	if (!m) {
		*reason = "NamespaceNotMapped";
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "namespace %s is not in origin.namespaces: "
				  "its MPIJobs may run as no user",
				  ns);
	}
	if (!hb_list_has(m->values, m->nvalues, user) &&
	    !hb_list_has(m->values, m->nvalues, "*")) {
		*reason = "UserNotGranted";
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "user %s is not granted to namespace %s "
				  "(origin.namespaces.%s lists the users its "
				  "MPIJobs may run as)",
				  user, ns, ns);
	}
	return 0;
}

/* The local zone's offset from UTC at t, seconds east. */
static int32_t utc_offset(time_t t)
{
	struct tm tm;

	return localtime_r(&t, &tm) ? (int32_t)tm.tm_gmtoff : 0;
}

/*
 * Whether Slurm can take every field of spec: each field put onto a
 * request as the Slurm side will (hb_slurmc_from_jobspec), its fate in
 * out->fidelity; a field it cannot submit in out->slurm_refusal.  The
 * pods' image leaves spec first (see origin.h).
 */
static int slurm_fit(struct hb_jobspec *spec, struct hb_origin_job *out,
		     struct hb_err *err)
{
	static const char *const env[] = { "PATH=/usr/bin:/bin", NULL };
	struct hb_slurmc_submit r = { 0 };
	struct hb_err why = { 0 };
	const char *image = NULL;
	struct hb_report rep;
	time_t now = time(NULL);
	int rc = 0;

	if (spec->container && spec->container[0] != '/') {
		image = spec->container;
		spec->container = NULL;
	}
	hb_report_init(&rep, "Slurm");
	r.script = "#!/bin/sh\n";
	r.as_user = true;
	r.uid = out->uid;
	r.gid = out->gid;
	r.env = env;
	if (hb_slurmc_from_jobspec(spec, &r, (int64_t)now, utc_offset(now),
				   &rep, &why)) {
		if (why.code == HB_ENOMEM)
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
		snprintf(out->slurm_refusal, sizeof(out->slurm_refusal), "%s",
			 why.msg[0] ? why.msg : "refused");
	}
	if (image)
		hb_report_fate(&rep, HB_F_CONTAINER, HB_FATE_DROPPED, NULL,
			       "image %s: the pods' runtime; on Slurm the "
			       "job runs on the nodes' own software (Slurm "
			       "runs OCI bundles, not images)",
			       image);
	if (!rc && !(out->fidelity = hb_report_to_json(spec, &rep)))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	hb_report_free(&rep);
	return rc;
}

int hb_origin_prepare(const cJSON *mpijob, const char *ns,
		      const struct hb_config *cfg, struct hb_origin_job *out,
		      struct hb_err *err)
{
	struct hb_jobspec spec;
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	const char *user, *acct, *name;
	uint32_t floor = cfg ? cfg->origin_min_uid : HB_ORIGIN_MIN_UID;
	int rc;

	memset(out, 0, sizeof(*out));
	hb_buf_init(&out->script, SCRIPT_MAX);
	name = hb_doc_str(hb_doc_get(mpijob, "metadata"), "name");
	if (!ns || !ns[0])
		ns = hb_doc_str(hb_doc_get(mpijob, "metadata"), "namespace");
	hb_jobspec_init(&spec, name ? name : "mpijob");
	user = label(mpijob, HB_ORIGIN_LABEL_USER, sizeof(out->user));
	if (!user) {
		out->reason = "MissingUser";
		rc = hb_err_set(err, HB_EPERM, NULL, 0,
				"the MPIJob has no label " HB_ORIGIN_LABEL_USER
				" naming the Slurm user to run it as");
		goto out;
	}
	snprintf(out->user, sizeof(out->user), "%s", user);
	if ((rc = granted(cfg, ns ? ns : "", user, &out->reason, err)))
		goto out;
	rc = getpwnam_r(user, &pw, pwbuf, sizeof(pwbuf), &res);
	if (rc || !res) {
		out->reason = "UnknownUser";
		rc = hb_err_set(err, HB_EPERM, NULL, 0,
				"no such user on the Slurm side: %s "
				"(label " HB_ORIGIN_LABEL_USER ")",
				user);
		goto out;
	}
	if (floor < 1) /* root is never run, whatever the caller says */
		floor = 1;
	if ((uint32_t)pw.pw_uid < floor ||
	    (uint32_t)pw.pw_uid == HB_ORIGIN_OVERFLOW_UID) {
		out->reason = "SystemUser";
		rc = hb_err_set(err, HB_EPERM, NULL, 0,
				"user %s has uid %u, %s: root and system "
				"users never run managed MPIJobs",
				user, (unsigned)pw.pw_uid,
				(uint32_t)pw.pw_uid == HB_ORIGIN_OVERFLOW_UID
					? "the overflow uid (nobody)"
					: "below origin.min_uid");
		goto out;
	}
	out->uid = (uint32_t)pw.pw_uid;
	out->gid = (uint32_t)pw.pw_gid;
	snprintf(out->home, sizeof(out->home), "%s",
		 pw.pw_dir && pw.pw_dir[0] == '/' ? pw.pw_dir : "/");
	acct = label(mpijob, HB_ORIGIN_LABEL_ACCOUNT, sizeof(out->account));
	if (acct)
		snprintf(out->account, sizeof(out->account), "%s", acct);
	out->reason = "InvalidSpec";
	if ((rc = hb_mpijob_parse(mpijob, &spec, err)))
		goto out;
	if (acct && !(spec.account = hb_jobspec_strdup(&spec, acct))) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	if ((rc = slurm_fit(&spec, out, err)))
		goto out;
	if ((rc = hb_sbatch_emit(&spec, &out->script, NULL, err)))
		goto out;
	if (!(out->jobspec = hb_jobspec_to_json(&spec))) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	if ((rc = hb_buf_putc(&out->script, '\0'))) {
		rc = hb_err_set(err, rc, NULL, 0, "the script is too large");
		goto out;
	}
	out->script.len--;
	out->reason = NULL;
out:
	hb_jobspec_free(&spec);
	return rc;
}

static int add_cond(cJSON *conds, const char *type, int status,
		    const char *reason, const char *msg, int64_t at_ms)
{
	cJSON *c = cJSON_CreateObject();
	char t[32];

	if (!c)
		return HB_ENOMEM;
	cJSON_AddItemToArray(conds, c);
	hb_origin_time(at_ms, t);
	if (!cJSON_AddStringToObject(c, "type", type) ||
	    !cJSON_AddStringToObject(c, "status", status ? "True" : "False") ||
	    !cJSON_AddStringToObject(c, "reason", reason) ||
	    !cJSON_AddStringToObject(c, "message", msg) ||
	    !cJSON_AddStringToObject(c, "lastTransitionTime", t) ||
	    !cJSON_AddStringToObject(c, "lastUpdateTime", t))
		return HB_ENOMEM;
	return 0;
}

/* The reasons hb_origin_prepare gives (out->reason). */
static const char *const refusals[] = { "MissingUser", "NamespaceNotMapped",
					"UserNotGranted", "UnknownUser",
					"SystemUser", "InvalidSpec" };

/* If why is "Reason: message" with one of refusals, the reason's length
 * (and the reason in rbuf); else 0. */
static size_t refusal(const char *why, char rbuf[64])
{
	size_t k;

	if (!why)
		return 0;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		k = strlen(refusals[i]);
		if (!strncmp(why, refusals[i], k) && why[k] == ':' &&
		    why[k + 1] == ' ') {
			memcpy(rbuf, why, k + 1);
			rbuf[k] = '\0';
			return k;
		}
	}
	return 0;
}

/* Why a final job ended, as a condition reason and message. */
static void final_words(const struct hb_job_row *r, const char *what,
			const char **reason, char *msg, size_t n, char rbuf[64])
{
	const char *st = hb_job_state_name(r->state);
	const char *why = r->reason && r->reason[0] ? r->reason : NULL;
	size_t k;

	if (r->state == HB_JOB_SUCCEEDED) {
		*reason = "MPIJobSucceeded";
		snprintf(msg, n,
			 "%s successfully completed on Slurm (job %lld, exit "
			 "code 0).",
			 what, (long long)r->slurm_job_id);
	} else if (r->target == HB_TARGET_REJECTED ||
		   r->target == HB_TARGET_KUBERNETES) {
		/* the reason is "Reason: message" (the daemon writes it) */
		int twin = r->target == HB_TARGET_KUBERNETES;

		k = why ? strspn(why, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "abcdefghijklmnopqrstuvwxyz")
			: 0;

		*reason = twin ? "MPIJobFailed" : "Rejected";
		if (k && k < 64 && why[0] >= 'A' && why[0] <= 'Z' &&
		    why[k] == ':' && why[k + 1] == ' ') {
			memcpy(rbuf, why, k);
			rbuf[k] = '\0';
			*reason = rbuf;
			why += k + 2;
		}
		snprintf(msg, n, "%s %s: %s", what,
			 twin ? "did not run in the cluster" : "was not run",
			 why ? why : twin ? st : "refused");
	} else if (r->slurm_job_id < 0 && r->state == HB_JOB_CANCELLED) {
		*reason = "Cancelled";
		snprintf(msg, n, "%s was cancelled before Slurm ran it%s%s",
			 what, why ? ": " : ".", why ? why : "");
	} else if (r->slurm_job_id < 0 && (k = refusal(why, rbuf))) {
		/* refused before Slurm saw it (origin_resume: the user is
		 * no longer granted) */
		*reason = rbuf;
		snprintf(msg, n, "%s was not run: %s", what, why + k + 2);
	} else if (r->slurm_job_id < 0) {
		*reason = "SlurmSubmitFailed";
		snprintf(msg, n, "Slurm refused %s: %s", what,
			 why ? why : "unknown error");
	} else if (r->state == HB_JOB_CANCELLED) {
		*reason = "SlurmJobCancelled";
		snprintf(msg, n, "Slurm job %lld of %s was cancelled%s%s",
			 (long long)r->slurm_job_id, what, why ? ": " : ".",
			 why ? why : "");
	} else if (r->state == HB_JOB_LOST) {
		*reason = "SlurmJobLost";
		snprintf(msg, n, "Slurm job %lld of %s was lost.",
			 (long long)r->slurm_job_id, what);
	} else {
		*reason = "MPIJobFailed";
		snprintf(msg, n,
			 "Slurm job %lld of %s failed with exit code "
			 "%lld.",
			 (long long)r->slurm_job_id, what,
			 (long long)r->exit_code);
	}
}

cJSON *hb_origin_status_doc(const struct hb_job_row *r, int64_t start_ms)
{
	cJSON *doc = cJSON_CreateObject(), *st, *conds, *rs, *l;
	enum hb_job_state state = r->state;
	int final = hb_store_state_terminal(state);
	int running = state == HB_JOB_RUNNING || state == HB_JOB_COMPLETING;
	int64_t end_ms = final ? r->updated_ms : 0;
	char what[400], msg[1024], t[32];
	const char *reason = "";
	char rbuf[64];
	int bad = 0;

	snprintf(what, sizeof(what), "MPIJob %s/%s",
		 r->k8s_namespace ? r->k8s_namespace : "",
		 r->k8s_name ? r->k8s_name : "");
	if (running && start_ms <= 0)
		start_ms = r->updated_ms;
	if (final && start_ms <= 0 && r->slurm_job_id >= 0)
		start_ms = end_ms;
	if (!doc || !(st = cJSON_AddObjectToObject(doc, "status")) ||
	    !(conds = cJSON_AddArrayToObject(st, "conditions")))
		goto fail;
	snprintf(msg, sizeof(msg), "%s is created.", what);
	bad |= add_cond(conds, "Created", 1, "MPIJobCreated", msg,
			r->created_ms);
	if (running) {
		snprintf(msg, sizeof(msg),
			 "%s is running on Slurm as job %lld.", what,
			 (long long)r->slurm_job_id);
		bad |= add_cond(conds, "Running", 1, "MPIJobRunning", msg,
				start_ms);
	} else if (final) {
		final_words(r, what, &reason, msg, sizeof(msg), rbuf);
		if (start_ms > 0)
			bad |= add_cond(conds, "Running", 0, reason, msg,
					end_ms);
		bad |= add_cond(conds,
				state == HB_JOB_SUCCEEDED ? "Succeeded"
							  : "Failed",
				1, reason, msg, end_ms);
	}
	if (start_ms > 0) {
		hb_origin_time(start_ms, t);
		bad |= !cJSON_AddStringToObject(st, "startTime", t);
	}
	if (final) {
		hb_origin_time(end_ms, t);
		bad |= !cJSON_AddStringToObject(st, "completionTime", t);
	}
	if (!(rs = cJSON_AddObjectToObject(st, "replicaStatuses")) ||
	    !(l = cJSON_AddObjectToObject(rs, "Launcher")))
		goto fail;
	bad |= !cJSON_AddNumberToObject(l, "active", running);
	bad |= !cJSON_AddNumberToObject(l, "succeeded",
					state == HB_JOB_SUCCEEDED);
	bad |= !cJSON_AddNumberToObject(l, "failed",
					final && state != HB_JOB_SUCCEEDED &&
						r->slurm_job_id >= 0);
	hb_origin_time(r->updated_ms, t);
	bad |= !cJSON_AddStringToObject(st, "lastReconcileTime", t);
	if (bad)
		goto fail;
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

/* --- the twin ------------------------------------------------------ */

int hb_origin_twin_name(const char *name, const char *uid, uint32_t workers,
			char out[64])
{
	char tag[HB_ORIGIN_TWIN_UID_CHARS + 1], base[HB_DNS_LABEL_MAX + 1];
	struct hb_jobspec spec;
	size_t n = 0, reserve = 8; /* "-worker-" */
	int rc;

	for (; uid && *uid && n < HB_ORIGIN_TWIN_UID_CHARS; uid++)
		if ((*uid >= '0' && *uid <= '9') ||
		    (*uid >= 'a' && *uid <= 'z'))
			tag[n++] = *uid;
		else if (*uid >= 'A' && *uid <= 'Z')
			tag[n++] = (char)(*uid - 'A' + 'a');
	if (n < HB_ORIGIN_TWIN_UID_CHARS)
		return HB_EINVAL;
	tag[n] = '\0';
	for (uint32_t last = workers ? workers - 1 : 0;; last /= 10) {
		reserve++;
		if (last < 10)
			break;
	}
	hb_jobspec_init(&spec, "mpijob");
	spec.name = name;
	rc = hb_k8s_name_reserve(&spec, -1, reserve + 1 + n, base);
	spec.name = NULL;
	hb_jobspec_free(&spec);
	if (rc)
		return rc;
	if (snprintf(out, HB_DNS_LABEL_MAX + 1, "%s-%s", base, tag) >
	    HB_DNS_LABEL_MAX)
		return HB_ERANGE;
	return 0;
}

/* Copy obj[key] into to (absent: nothing); 1 when out of memory. */
static int copy_key(cJSON *to, const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	cJSON *c;

	if (!v)
		return 0;
	if (!(c = cJSON_Duplicate(v, 1)))
		return 1;
	cJSON_AddItemToObject(to, key, c);
	return 0;
}

cJSON *hb_origin_twin_doc(const cJSON *orig, char name[64],
			  struct hb_err *err)
{
	const cJSON *meta = hb_doc_get(orig, "metadata");
	const cJSON *w =
		hb_doc_get(orig, "spec.mpiReplicaSpecs.Worker.replicas");
	const char *oname = hb_doc_str(meta, "name");
	const char *uid = hb_doc_str(meta, "uid");
	cJSON *doc = cJSON_CreateObject(), *m, *l, *refs, *ref, *spec, *rp;
	uint32_t workers = 1;
	int bad = 0;

	if (cJSON_IsNumber(w) && w->valuedouble >= 1 &&
	    w->valuedouble <= 1e6)
		workers = (uint32_t)w->valuedouble;
	if (!oname || !uid ||
	    hb_origin_twin_name(oname, uid, workers, name)) {
		hb_err_set(err, HB_EINVAL, NULL, 0,
			   "the MPIJob has no name or uid to name its twin "
			   "after");
		cJSON_Delete(doc);
		return NULL;
	}
	if (!doc || !(m = cJSON_AddObjectToObject(doc, "metadata")))
		goto nomem;
	bad |= copy_key(doc, orig, "apiVersion");
	bad |= copy_key(doc, orig, "kind");
	bad |= !cJSON_AddStringToObject(m, "name", name);
	bad |= copy_key(m, meta, "namespace");
	bad |= copy_key(m, meta, "labels");
	bad |= copy_key(m, meta, "annotations");
	l = cJSON_GetObjectItemCaseSensitive(m, "labels");
	if (bad || (!l && !(l = cJSON_AddObjectToObject(m, "labels"))))
		goto nomem;
	cJSON_DeleteItemFromObjectCaseSensitive(l, HB_ORIGIN_LABEL_TWIN_OF);
	bad |= !cJSON_AddStringToObject(l, HB_ORIGIN_LABEL_TWIN_OF, uid);
	if (bad || !(refs = cJSON_AddArrayToObject(m, "ownerReferences")) ||
	    !(ref = cJSON_CreateObject()))
		goto nomem;
	cJSON_AddItemToArray(refs, ref);
	bad |= copy_key(ref, orig, "apiVersion");
	bad |= copy_key(ref, orig, "kind");
	bad |= !cJSON_AddStringToObject(ref, "name", oname);
	bad |= !cJSON_AddStringToObject(ref, "uid", uid);
	bad |= !cJSON_AddFalseToObject(ref, "controller");
	bad |= !cJSON_AddFalseToObject(ref, "blockOwnerDeletion");
	bad |= copy_key(doc, orig, "spec");
	if (bad)
		goto nomem;
	spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
	rp = cJSON_GetObjectItemCaseSensitive(spec, "runPolicy");
	cJSON_DeleteItemFromObjectCaseSensitive(rp, "managedBy");
	return doc;
nomem:
	hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	cJSON_Delete(doc);
	return NULL;
}

enum hb_job_state hb_origin_twin_state(const cJSON *twin, char *msg, size_t n)
{
	switch (hb_remote_mpijob_phase(hb_doc_get(twin, "status"), msg, n)) {
	case HB_REMOTE_RUNNING:
		return HB_JOB_RUNNING;
	case HB_REMOTE_SUCCEEDED:
		return HB_JOB_SUCCEEDED;
	case HB_REMOTE_FAILED:
		return HB_JOB_FAILED;
	default:
		return HB_JOB_QUEUED;
	}
}

cJSON *hb_origin_twin_status(const cJSON *twin)
{
	static const char *const keys[] = { "conditions", "startTime",
					    "completionTime",
					    "replicaStatuses",
					    "lastReconcileTime" };
	const cJSON *from = hb_doc_get(twin, "status");
	cJSON *doc = cJSON_CreateObject(), *st;
	int bad = !doc || !(st = cJSON_AddObjectToObject(doc, "status"));

	/* what the twin lacks is removed (null, in a merge patch) */
	for (size_t i = 0; !bad && i < sizeof(keys) / sizeof(keys[0]); i++)
		bad |= cJSON_GetObjectItemCaseSensitive(from, keys[i])
			       ? copy_key(st, from, keys[i])
			       : !cJSON_AddNullToObject(st, keys[i]);
	if (bad) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* ------------------------------------------------------------------ */
/* The module                                                          */
/* ------------------------------------------------------------------ */

struct patch {
	char ns[64], name[256];
	cJSON *doc;
	int64_t not_before;
	struct patch *next;
};

struct ientry {
	char *key; /* "u:UID", "n:NS/NAME", or a twin's "t:NS/NAME" */
	char job_id[32];
	unsigned gen; /* the watch start that last listed it */
	int driven;   /* this process took the job up */
	struct ientry *next;
};

struct hb_kube_origin {
	struct hb_kube *k;
	char *ns;
	int efd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hb_origin_ev *evs, **evs_tail; /* reflector -> loop */
	struct patch *todo;		      /* loop -> worker */
	struct patch *staged;		      /* loop only */
	struct ientry *index[NBUCKETS];	      /* loop only */
	atomic_int stop;
	unsigned gen; /* reflector only: the watch's starts */
	int synced;   /* reflector only: this start's first list is whole */
	pthread_t reflector, worker;
	int started; /* bit 0: reflector, bit 1: worker */
};

int hb_origin_fd(const struct hb_kube_origin *o)
{
	return o->efd;
}

/* --- events: the reflector's side ----------------------------------- */

static void push_event(struct hb_kube_origin *o, struct hb_origin_ev *ev)
{
	uint64_t one = 1;

	pthread_mutex_lock(&o->mu);
	*o->evs_tail = ev;
	o->evs_tail = &ev->next;
	pthread_mutex_unlock(&o->mu);
	while (write(o->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static int on_event(void *ctx, const struct hb_kube_event *kev)
{
	struct hb_kube_origin *o = ctx;
	const cJSON *meta;
	struct hb_origin_ev *ev;
	const char *name, *ns, *uid;
	int deleted = kev->type == HB_KUBE_DELETED, twin;

	if (kev->type == HB_KUBE_BOOKMARK && !kev->object && !o->synced) {
		/* the first whole list of this start of the watch */
		if (!(ev = calloc(1, sizeof(*ev))))
			return 0; /* the next list event tries again */
		o->synced = 1;
		ev->type = HB_ORIGIN_SYNC;
		ev->gen = o->gen;
		snprintf(ev->ns, sizeof(ev->ns), "%s", o->ns);
		push_event(o, ev);
		return 0;
	}
	if (kev->type != HB_KUBE_ADDED && kev->type != HB_KUBE_MODIFIED &&
	    !deleted)
		return 0;
	meta = hb_doc_get(kev->object, "metadata");
	name = hb_doc_str(meta, "name");
	ns = hb_doc_str(meta, "namespace");
	uid = hb_doc_str(meta, "uid");
	if (!name || strlen(name) >= sizeof(ev->name))
		return 0;
	twin = !hb_origin_managed(kev->object) &&
	       hb_doc_str(hb_doc_get(meta, "labels"), HB_ORIGIN_LABEL_TWIN_OF);
	/* A relist's tombstone has no spec: the loop knows whether it was
	 * ours. */
	if (!hb_origin_managed(kev->object) && !twin &&
	    !(deleted && !hb_doc_get(kev->object, "spec")))
		return 0;
	if (hb_doc_get(meta, "deletionTimestamp"))
		deleted = 1;
	if (!(ev = calloc(1, sizeof(*ev))))
		return 0; /* the next relist brings it again */
	ev->type = deleted ? HB_ORIGIN_DELETED : HB_ORIGIN_UPSERT;
	ev->added = kev->type == HB_KUBE_ADDED;
	ev->twin = twin;
	ev->gen = o->gen;
	snprintf(ev->ns, sizeof(ev->ns), "%s", ns ? ns : o->ns);
	snprintf(ev->name, sizeof(ev->name), "%s", name);
	snprintf(ev->uid, sizeof(ev->uid), "%s",
		 uid && strlen(uid) < sizeof(ev->uid) ? uid : "");
	if (!deleted && !(ev->obj = cJSON_Duplicate(kev->object, 1))) {
		free(ev);
		return 0;
	}
	push_event(o, ev);
	return 0;
}

static void *reflect_main(void *arg)
{
	struct hb_kube_origin *o = arg;
	struct hb_kube_reflect_opts ro = { .ns = o->ns };

	while (!atomic_load(&o->stop)) {
		struct hb_err err = { 0 };

		/* a new start lists everything again: its first whole list
		 * shows what went while nobody watched */
		o->gen++;
		o->synced = 0;
		if (!hb_kube_reflect(o->k, &hb_kube_mpijob, &ro, on_event, o,
				     &o->stop, &err) ||
		    atomic_load(&o->stop))
			break;
		hb_log(HB_LOG_ERROR,
		       "the watch on managed MPIJobs stopped: %s; again in "
		       "%d s",
		       err.msg, WATCH_RESTART_MS / 1000);
		hb_metrics_watch_restart("mpijobs", "stopped");
		for (int i = 0;
		     i < WATCH_RESTART_MS / 100 && !atomic_load(&o->stop); i++)
			usleep(100 * 1000);
	}
	return NULL;
}

struct hb_origin_ev *hb_origin_take(struct hb_kube_origin *o)
{
	struct hb_origin_ev *list;
	uint64_t n;

	while (read(o->efd, &n, sizeof(n)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&o->mu);
	list = o->evs;
	o->evs = NULL;
	o->evs_tail = &o->evs;
	pthread_mutex_unlock(&o->mu);
	return list;
}

void hb_origin_ev_free(struct hb_origin_ev *list)
{
	struct hb_origin_ev *n;

	for (; list; list = n) {
		n = list->next;
		cJSON_Delete(list->obj);
		free(list);
	}
}

/* --- status patches: the worker's side ------------------------------ */

/* Under mu: p's MPIJob has a patch in todo. */
static struct patch **find_patch(struct patch **head, const struct patch *p)
{
	for (; *head; head = &(*head)->next)
		if (!strcmp((*head)->ns, p->ns) &&
		    !strcmp((*head)->name, p->name))
			return head;
	return NULL;
}

/* Queue p, replacing an older patch for the same MPIJob (the newest
 * status is the whole truth).  Under mu when locked. */
static void enqueue(struct patch **head, struct patch *p)
{
	struct patch **at = find_patch(head, p), *old;

	if (at) {
		old = *at;
		p->next = old->next;
		*at = p;
		cJSON_Delete(old->doc);
		free(old);
		return;
	}
	p->next = NULL;
	while (*head)
		head = &(*head)->next;
	*head = p;
}

static void *worker_main(void *arg)
{
	struct hb_kube_origin *o = arg;

	pthread_mutex_lock(&o->mu);
	while (!atomic_load(&o->stop)) {
		struct patch **pp, *p = NULL;
		int64_t now = hb_clock_wall_ms(), wait = 200;
		struct hb_err err = { 0 };
		struct timespec ts;
		int rc;

		for (pp = &o->todo; *pp; pp = &(*pp)->next)
			if ((*pp)->not_before <= now) {
				p = *pp;
				*pp = p->next;
				break;
			} else if ((*pp)->not_before - now < wait) {
				wait = (*pp)->not_before - now;
			}
		if (!p) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)wait * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&o->cv, &o->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&o->mu);
		rc = hb_kube_patch_status(o->k, &hb_kube_mpijob, p->ns, p->name,
					  p->doc, NULL, &err);
		if (rc && rc != HB_ENOENT)
			hb_log(hb_kube_retryable(rc) ? HB_LOG_WARN : HB_LOG_ERROR,
			       "status of MPIJob %s/%s: %s%s", p->ns, p->name,
			       err.msg, hb_kube_retryable(rc) ? "; will retry" : "");
		pthread_mutex_lock(&o->mu);
		if (hb_kube_retryable(rc) && !find_patch(&o->todo, p)) {
			p->not_before = hb_clock_wall_ms() + RETRY_MS;
			enqueue(&o->todo, p);
		} else {
			cJSON_Delete(p->doc);
			free(p);
		}
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

int hb_origin_staged(const struct hb_kube_origin *o)
{
	return o && o->staged;
}

void hb_origin_flush(struct hb_kube_origin *o)
{
	struct patch *p, *n;

	if (!o || !o->staged)
		return;
	pthread_mutex_lock(&o->mu);
	for (p = o->staged; p; p = n) {
		n = p->next;
		enqueue(&o->todo, p);
	}
	o->staged = NULL;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

/* --- the index ------------------------------------------------------- */

static unsigned bucket_of(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % NBUCKETS;
}

static int index_key(char *buf, size_t n, const char *uid, const char *ns,
		     const char *name)
{
	int w = uid && uid[0] ? snprintf(buf, n, "u:%s", uid)
			      : snprintf(buf, n, "n:%s/%s", ns ? ns : "",
					 name ? name : "");

	return w < 0 || (size_t)w >= n ? HB_ETOOBIG : 0;
}

static struct ientry *index_get(struct hb_kube_origin *o, const char *key)
{
	struct ientry *e = o->index[bucket_of(key)];

	while (e && strcmp(e->key, key))
		e = e->next;
	return e;
}

static int index_put(struct hb_kube_origin *o, const char *key, const char *id,
		     int driven)
{
	struct ientry *e = index_get(o, key);
	unsigned h;

	if (!e) {
		if (!(e = calloc(1, sizeof(*e))) || !(e->key = strdup(key))) {
			free(e);
			return HB_ENOMEM;
		}
		h = bucket_of(key);
		e->next = o->index[h];
		o->index[h] = e;
	}
	snprintf(e->job_id, sizeof(e->job_id), "%s", id);
	e->driven = driven;
	return 0;
}

const char *hb_origin_index_find(struct hb_kube_origin *o, const char *uid,
				 const char *ns, const char *name)
{
	char key[400];
	struct ientry *e;

	if (index_key(key, sizeof(key), uid, ns, name))
		return NULL;
	e = index_get(o, key);
	return e ? e->job_id : NULL;
}

static int index_add(struct hb_kube_origin *o, const char *uid,
		     const char *ns, const char *name, const char *job_id,
		     int driven)
{
	char key[400];
	int rc = 0;

	if (uid && uid[0] && !index_key(key, sizeof(key), uid, NULL, NULL))
		rc = index_put(o, key, job_id, driven);
	/* the newest MPIJob of a name is the one a tombstone means */
	if (!rc && ns && name && !index_key(key, sizeof(key), NULL, ns, name))
		rc = index_put(o, key, job_id, driven);
	return rc;
}

int hb_origin_index_add(struct hb_kube_origin *o, const char *uid,
			const char *ns, const char *name, const char *job_id)
{
	return index_add(o, uid, ns, name, job_id, 1);
}

static struct ientry *index_entry(struct hb_kube_origin *o, const char *uid,
				  const char *ns, const char *name)
{
	char key[400];

	return index_key(key, sizeof(key), uid, ns, name) ? NULL
							  : index_get(o, key);
}

int hb_origin_index_claim(struct hb_kube_origin *o, const char *uid,
			  const char *ns, const char *name)
{
	struct ientry *e = index_entry(o, uid, ns, name);

	if (!e || e->driven)
		return 0;
	e->driven = 1;
	return 1;
}

void hb_origin_index_seen(struct hb_kube_origin *o, const char *uid,
			  const char *ns, const char *name, unsigned gen)
{
	struct ientry *e = index_entry(o, uid, ns, name);

	if (e)
		e->gen = gen;
}

int hb_origin_index_listed(struct hb_kube_origin *o, const char *uid,
			   const char *ns, const char *name, unsigned gen)
{
	struct ientry *e = index_entry(o, uid, ns, name);

	return e && e->gen == gen;
}

static int twin_key(char *buf, size_t n, const char *ns, const char *name)
{
	int w = snprintf(buf, n, "t:%s/%s", ns, name);

	return w < 0 || (size_t)w >= n ? HB_ETOOBIG : 0;
}

const char *hb_origin_twin_find(struct hb_kube_origin *o, const char *ns,
				const char *name)
{
	char key[400];
	struct ientry *e;

	if (twin_key(key, sizeof(key), ns, name))
		return NULL;
	e = index_get(o, key);
	return e ? e->job_id : NULL;
}

int hb_origin_twin_add(struct hb_kube_origin *o, const char *ns,
		       const char *name, const char *job_id)
{
	char key[400];
	int rc = twin_key(key, sizeof(key), ns, name);

	return rc ? rc : index_put(o, key, job_id, 1);
}

void hb_origin_row_twin(const struct hb_job_row *r, char out[64])
{
	cJSON *src = r->jobspec ? cJSON_Parse(r->jobspec) : NULL;
	const char *t = hb_doc_str(src, "twin");

	snprintf(out, 64, "%s", t && strlen(t) < 64 ? t : "");
	cJSON_Delete(src);
}

const char *hb_origin_ns(const struct hb_kube_origin *o)
{
	return o->ns;
}

static int load_cb(const struct hb_job_row *r, void *arg)
{
	struct hb_kube_origin *o = arg;

	if (r->entry != HB_ENTRY_KUBERNETES || !r->k8s_name)
		return 0;
	/* newest first: an older job of the same name must not take the
	 * name's entry */
	if (r->k8s_uid && r->k8s_uid[0] &&
	    hb_origin_index_find(o, r->k8s_uid, NULL, NULL))
		return 0;
	if (r->target == HB_TARGET_KUBERNETES) {
		char twin[64];
		int rc;

		hb_origin_row_twin(r, twin);
		if (twin[0] && r->k8s_namespace &&
		    (rc = hb_origin_twin_add(o, r->k8s_namespace, twin, r->id)))
			return rc;
	}
	if (!hb_origin_index_find(o, NULL, r->k8s_namespace, r->k8s_name))
		return index_add(o, r->k8s_uid, r->k8s_namespace, r->k8s_name,
				 r->id, 0);
	return r->k8s_uid && r->k8s_uid[0]
		       ? index_add(o, r->k8s_uid, NULL, NULL, r->id, 0)
		       : 0;
}

int hb_origin_load(struct hb_kube_origin *o, struct hb_store *st,
		   struct hb_err *err)
{
	return hb_store_job_list(st, -1, HB_JOB_ANY, 0, load_cb, o, err);
}

/* --- status from the store ------------------------------------------- */

struct start_ctx {
	int64_t at_ms;
};

static int start_cb(const struct hb_event_row *ev, void *arg)
{
	struct start_ctx *sc = arg;

	if (!sc->at_ms && ev->action && !strcmp(ev->action, "slurm-state") &&
	    ev->detail && strstr(ev->detail, "\"to\":\"running\""))
		sc->at_ms = ev->at_ms;
	return 0;
}

void hb_origin_job_changed(struct hb_kube_origin *o, struct hb_store *st,
			   const char *job_id)
{
	struct hb_job_row r = { 0 };
	struct start_ctx sc = { 0 };
	struct hb_err err = { 0 };

	if (!o || hb_store_job_get(st, job_id, &r, &err))
		goto out;
	if (r.entry != HB_ENTRY_KUBERNETES || !r.k8s_name || !r.k8s_namespace)
		goto out;
	if (r.state != HB_JOB_PENDING && r.state != HB_JOB_QUEUED)
		hb_store_event_list(st, r.id, 0, 0, start_cb, &sc, &err);
	hb_origin_stage(o, r.k8s_namespace, r.k8s_name,
			hb_origin_status_doc(&r, sc.at_ms));
out:
	hb_job_row_free(&r);
}

void hb_origin_stage(struct hb_kube_origin *o, const char *ns,
		     const char *name, cJSON *doc)
{
	struct patch *p = doc ? calloc(1, sizeof(*p)) : NULL;

	if (!p) {
		hb_log(HB_LOG_ERROR, "status of MPIJob %s/%s: out of memory",
		       ns, name);
		cJSON_Delete(doc);
		return;
	}
	p->doc = doc;
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	snprintf(p->name, sizeof(p->name), "%s", name);
	enqueue(&o->staged, p);
}

/* --- the twin on the API server (worker threads) --------------------- */

int hb_origin_twin_create(struct hb_kube_origin *o, const cJSON *doc,
			  struct hb_err *err)
{
	const cJSON *meta = hb_doc_get(doc, "metadata");
	const char *ns = hb_doc_str(meta, "namespace");
	const char *name = hb_doc_str(meta, "name");
	const char *want = hb_doc_str(hb_doc_get(meta, "labels"),
				      HB_ORIGIN_LABEL_TWIN_OF);
	const char *have;
	cJSON *got = NULL;
	int rc = hb_kube_create(o->k, &hb_kube_mpijob, ns, doc, NULL, err);

	if (rc != HB_EEXIST)
		return rc;
	memset(err, 0, sizeof(*err));
	if ((rc = hb_kube_get(o->k, &hb_kube_mpijob, ns, name, &got, err)))
		return rc;
	have = hb_doc_str(hb_doc_get(got, "metadata.labels"),
			  HB_ORIGIN_LABEL_TWIN_OF);
	if (!want || !have || strcmp(want, have))
		rc = hb_err_set(err, HB_ECONFLICT, NULL, 0,
				"an MPIJob named %s is already there and is "
				"not this job's twin (label "
				HB_ORIGIN_LABEL_TWIN_OF " %s)",
				name ? name : "", have ? have : "absent");
	cJSON_Delete(got);
	return rc; /* 0: adopted */
}

int hb_origin_twin_delete(struct hb_kube_origin *o, const char *ns,
			  const char *name, struct hb_err *err)
{
	int rc = hb_kube_delete(o->k, &hb_kube_mpijob, ns, name, "Background",
				err);

	if (rc == HB_ENOENT) {
		memset(err, 0, sizeof(*err));
		rc = 0;
	}
	return rc;
}

/* --- life cycle ------------------------------------------------------ */

int hb_origin_new(const struct hb_origin_opts *opts,
		  struct hb_kube_origin **out, struct hb_err *err)
{
	struct hb_kube_config *kc = NULL;
	struct hb_kube_origin *o;
	const char *ns;
	int rc;

	*out = NULL;
	rc = opts->kubeconfig && !strcmp(opts->kubeconfig, "in-cluster")
		     ? hb_kube_config_incluster(NULL, &kc, err)
		     : hb_kube_config_load(opts->kubeconfig, opts->context, &kc,
					   err);
	if (rc)
		return rc;
	if (!(o = calloc(1, sizeof(*o)))) {
		hb_kube_config_free(kc);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	o->evs_tail = &o->evs;
	o->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ns = opts->ns && opts->ns[0] ? opts->ns : hb_kube_config_namespace(kc);
	o->ns = strdup(ns ? ns : "default");
	if (o->efd < 0 || !o->ns) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "eventfd: %s",
				strerror(errno));
		goto fail;
	}
	if ((rc = hb_kube_new(kc, opts->client, &o->k, err)))
		goto fail;
	hb_kube_config_free(kc);
	kc = NULL;
	if (pthread_create(&o->reflector, NULL, reflect_main, o)) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
				"cannot start the MPIJob watch");
		goto fail;
	}
	o->started |= 1;
	if (pthread_create(&o->worker, NULL, worker_main, o)) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
				"cannot start the status worker");
		goto fail;
	}
	o->started |= 2;
	*out = o;
	return 0;
fail:
	hb_kube_config_free(kc);
	hb_origin_free(o);
	return rc;
}

static void patches_free(struct patch *p)
{
	struct patch *n;

	for (; p; p = n) {
		n = p->next;
		cJSON_Delete(p->doc);
		free(p);
	}
}

void hb_origin_free(struct hb_kube_origin *o)
{
	if (!o)
		return;
	atomic_store(&o->stop, 1);
	pthread_mutex_lock(&o->mu);
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	if (o->started & 1)
		pthread_join(o->reflector, NULL);
	if (o->started & 2)
		pthread_join(o->worker, NULL);
	hb_origin_ev_free(o->evs);
	patches_free(o->todo);
	patches_free(o->staged);
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct ientry *e = o->index[i], *n; e; e = n) {
			n = e->next;
			free(e->key);
			free(e);
		}
	hb_kube_free(o->k);
	if (o->efd >= 0)
		close(o->efd);
	pthread_cond_destroy(&o->cv);
	pthread_mutex_destroy(&o->mu);
	free(o->ns);
	free(o);
}
