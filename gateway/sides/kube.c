/*
 * sides/kube.c - the Kubernetes backend (remote.backend: kubernetes): a
 * burst job runs as an MPIJob.
 *
 * start translates the job's script into an MPIJob named after the gateway
 * id (so a retry, or a restart, finds the same object), labelled with the
 * id, the user and the account, and queues its creation.  Nothing here
 * blocks the caller on the network: worker threads create and delete the
 * objects, read launcher logs and exit codes; one reflector thread lists
 * and watches every MPIJob that carries the gateway-id label and keeps a
 * table of their phases.  status and log answer from that table.
 *
 * A job's phase follows its MPIJob's conditions (Succeeded, Failed,
 * Suspended, Running, else pending).  It is reported final only once the
 * launcher's exit code and its last log are read, so a reader that sees the
 * end has seen everything.  An MPIJob deleted by someone else ends its job
 * as cancelled.
 *
 * Locking: one mutex guards the table, the work queue and every job's
 * fields; the network calls run without it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/remote.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/translate.h"

#define NBUCKETS     16384
#define RETRY_MS     1000  /* after a transient failure */
#define WATCH_RESTART_MS 5000 /* after the watch stopped on an error */
#define LOG_KEEP     65536 /* read bytes kept behind the reader */
#define LABEL_ID     "hpcbridge.io/gateway-id"
#define LABEL_USER   "hpcbridge.io/user"
#define LABEL_ACCT   "hpcbridge.io/account"
#define L_JOB_NAME   "training.kubeflow.org/job-name"
#define L_JOB_ROLE   "training.kubeflow.org/job-role"

enum work {
	W_CREATE = 1 << 0,
	W_DELETE = 1 << 1,
	W_FINISH = 1 << 2, /* read the exit code and the last log */
	W_LOG = 1 << 3
};

struct kjob {
	char id[HB_REMOTE_ID_MAX + 1];
	struct kjob *hnext; /* hash chain */
	struct kjob *qnext; /* work queue */
	/* what the cluster says */
	enum hb_remote_phase seen; /* from the MPIJob's conditions */
	int64_t start_ms, end_ms;
	char message[256];
	int present; /* the MPIJob exists (as far as we know) */
	unsigned gen; /* the watch generation that last saw it */
	/* what we report */
	enum hb_remote_phase phase;
	int exit_code;
	int cancelled; /* we deleted it */
	/* work */
	unsigned want;
	int queued, busy;
	int64_t not_before;
	cJSON *manifest; /* to create; NULL once created */
	/* Its RDMA NIC's ResourceClaimTemplate, applied before it (NULL:
	 * none, or applied); has_claim: the job has one to delete. */
	cJSON *claim;
	int has_claim;
	char claim_api[40]; /* its apiVersion, to delete it */
	/* the launcher's log: bytes [log_base, log_base + log.len) */
	struct hb_buf log;
	uint64_t log_base;
	int64_t log_at; /* when it was last read from the cluster */
	char pod[256];	/* the launcher pod, once known */
};

struct kube_be {
	struct hb_remote be; /* first */
	struct hb_kube *k;
	char *ns, *field_manager;
	int log_refresh_ms;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct kjob *buckets[NBUCKETS];
	size_t njobs;
	struct kjob *qhead, **qtail;
	int synced; /* the reflector's view is whole */
	unsigned gen;  /* bumped each time the watch starts over */
	int sweep;     /* at the next whole view, what was not seen is gone */
	cJSON *runtime_cm; /* the launcher runtime to apply, or NULL */
	int runtime_done;
	atomic_int stop;
	pthread_t reflector, *workers;
	unsigned nworkers, started;
};

static unsigned bucket_of(const char *id)
{
	uint32_t h = 2166136261u;

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h % NBUCKETS;
}

/* Under mu. */
static struct kjob *find(struct kube_be *b, const char *id)
{
	struct kjob *j = b->buckets[bucket_of(id)];

	while (j && strcmp(j->id, id))
		j = j->hnext;
	return j;
}

/* Under mu.  NULL when out of memory. */
static struct kjob *find_or_add(struct kube_be *b, const char *id)
{
	struct kjob *j = find(b, id);
	unsigned h;

	if (j)
		return j;
	if (!(j = calloc(1, sizeof(*j))))
		return NULL;
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->phase = j->seen = HB_REMOTE_PENDING;
	j->exit_code = -1;
	hb_buf_init(&j->log, 0);
	h = bucket_of(id);
	j->hnext = b->buckets[h];
	b->buckets[h] = j;
	b->njobs++;
	return j;
}

/* Under mu: ask for work on j. */
static void want(struct kube_be *b, struct kjob *j, unsigned w)
{
	j->want |= w;
	if (!j->queued && !j->busy) {
		j->queued = 1;
		j->qnext = NULL;
		*b->qtail = j;
		b->qtail = &j->qnext;
		pthread_cond_signal(&b->cv);
	}
}

/* Under mu: the first queued job whose time has come, taken off the queue;
 * NULL (and *wait_ms, the time to the next one, or -1) when none. */
static struct kjob *take(struct kube_be *b, int64_t now, int64_t *wait_ms)
{
	struct kjob **p = &b->qhead, *j;

	*wait_ms = -1;
	for (; (j = *p); p = &j->qnext) {
		if (j->not_before <= now) {
			*p = j->qnext;
			if (b->qtail == &j->qnext)
				b->qtail = p;
			j->queued = 0;
			return j;
		}
		if (*wait_ms < 0 || j->not_before - now < *wait_ms)
			*wait_ms = j->not_before - now;
	}
	return NULL;
}

/* --- reading the cluster's objects ----------------------------------- */

/* RFC 3339 ("2026-11-21T10:00:00Z", with an optional fraction and
 * offset, read as strptime() reads it) to ms since the epoch; 0 when
 * absent, malformed or before 1970. */
static int64_t time_ms(const char *s)
{
	int64_t t;

	if (!s || hb_time_rfc3339_parse_flags(s, HB_TIME_LENIENT, &t) || t < 0)
		return 0;
	return t * 1000;
}

/* Whether an MPIJob's status says it ran: a startTime, which the MPI
 * Operator sets when the job first runs unsuspended, and again when it is
 * resumed.  (Its Running condition is no sign: the operator sets it False,
 * reason MPIJobSuspended, on a job created suspended too.) */
static int started(const cJSON *status)
{
	return hb_doc_str(status, "startTime") != NULL;
}

enum hb_remote_phase hb_remote_mpijob_phase(const cJSON *status, char *msg,
					    size_t size)
{
	static const struct {
		const char *type;
		enum hb_remote_phase phase;
	} order[] = { { "Succeeded", HB_REMOTE_SUCCEEDED },
		      { "Failed", HB_REMOTE_FAILED },
		      { "Suspended", HB_REMOTE_PENDING },
		      { "Running", HB_REMOTE_RUNNING } };
	const cJSON *conds = hb_doc_get(status, "conditions"), *c;

	msg[0] = '\0';
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		cJSON_ArrayForEach (c, conds) {
			const char *t = hb_doc_str(c, "type");
			const char *s = hb_doc_str(c, "status");
			const char *r = hb_doc_str(c, "reason");
			const char *m = hb_doc_str(c, "message");

			if (!t || !s || strcmp(t, order[i].type) ||
			    strcmp(s, "True"))
				continue;
			snprintf(msg, size, "%s%s%s%s%s", t, r ? ": " : "",
				 r ? r : "", m ? ": " : "", m ? m : "");
			if (order[i].phase == HB_REMOTE_PENDING &&
			    started(status))
				return HB_REMOTE_SUSPENDED;
			return order[i].phase;
		}
	return HB_REMOTE_PENDING;
}

/* Under mu: what an ADDED or MODIFIED MPIJob says about its job. */
static void observe(struct kube_be *b, struct kjob *j, const cJSON *obj)
{
	const cJSON *st = hb_doc_get(obj, "status");
	enum hb_remote_phase p;

	j->present = 1;
	p = hb_remote_mpijob_phase(st, j->message, sizeof(j->message));
	j->start_ms = time_ms(hb_doc_str(st, "startTime"));
	j->end_ms = time_ms(hb_doc_str(st, "completionTime"));
	if (hb_remote_phase_done(j->phase))
		return; /* reported final: it stays so */
	/* Some controllers clear startTime on suspension: what we saw
	 * running and is suspended again was preempted all the same. */
	if (p == HB_REMOTE_PENDING && !strncmp(j->message, "Suspended", 9) &&
	    (j->phase == HB_REMOTE_RUNNING || j->phase == HB_REMOTE_SUSPENDED))
		p = HB_REMOTE_SUSPENDED;
	j->seen = p;
	if (hb_remote_phase_done(p))
		want(b, j, W_FINISH); /* reported once the exit code is read */
	else
		j->phase = p;
}

/* Under mu: j's MPIJob is gone.  Unless it had ended, the job is
 * cancelled: by us, or by someone deleting it in the cluster. */
static void gone(struct kjob *j)
{
	j->present = 0;
	if (hb_remote_phase_done(j->phase) || hb_remote_phase_done(j->seen))
		return;
	j->phase = j->seen = HB_REMOTE_CANCELLED;
	if (!j->end_ms)
		j->end_ms = hb_clock_wall_ms();
	if (!j->cancelled)
		snprintf(j->message, sizeof(j->message),
			 "the MPIJob was deleted in the cluster");
}

/* Under mu, when a new watch has its whole view: the MPIJobs it did not
 * list went while no watch ran. */
static void sweep(struct kube_be *b)
{
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct kjob *j = b->buckets[i]; j; j = j->hnext)
			if (j->present && j->gen != b->gen && !j->manifest)
				gone(j);
}

static int on_event(void *ctx, const struct hb_kube_event *ev)
{
	struct kube_be *b = ctx;
	const cJSON *meta;
	const char *name;
	struct kjob *j;

	if (ev->type == HB_KUBE_BOOKMARK || ev->type == HB_KUBE_ERROR) {
		if (ev->type == HB_KUBE_BOOKMARK && !ev->object) {
			pthread_mutex_lock(&b->mu);
			b->synced = 1;
			if (b->sweep)
				sweep(b);
			b->sweep = 0;
			pthread_mutex_unlock(&b->mu);
		}
		return 0;
	}
	meta = hb_doc_get(ev->object, "metadata");
	name = hb_doc_str(meta, "name");
	if (!name || !hb_remote_id_valid(name))
		return 0;
	pthread_mutex_lock(&b->mu);
	j = ev->type == HB_KUBE_DELETED ? find(b, name)
					 : find_or_add(b, name);
	if (j && ev->type == HB_KUBE_DELETED) {
		gone(j);
	} else if (j) {
		j->gen = b->gen;
		observe(b, j, ev->object);
	}
	pthread_mutex_unlock(&b->mu);
	return 0;
}

/* The watch, started over after an error it does not retry itself (a
 * permission refused, say), with what vanished meanwhile swept. */
static void *reflect_main(void *arg)
{
	struct kube_be *b = arg;
	struct hb_kube_reflect_opts o = { .ns = b->ns, .selector = LABEL_ID };

	while (!atomic_load(&b->stop)) {
		struct hb_err err = { 0 };

		if (!hb_kube_reflect(b->k, &hb_kube_mpijob, &o, on_event, b,
				     &b->stop, &err) ||
		    atomic_load(&b->stop))
			break;
		hb_log(HB_LOG_ERROR, "the MPIJob watch stopped: %s; again in "
				     "%d s",
		       err.msg, WATCH_RESTART_MS / 1000);
		hb_metrics_watch_restart("mpijobs", "stopped");
		for (int i = 0; i < WATCH_RESTART_MS / 100 &&
				!atomic_load(&b->stop);
		     i++)
			usleep(100 * 1000);
		pthread_mutex_lock(&b->mu);
		b->gen++;
		b->sweep = 1;
		pthread_mutex_unlock(&b->mu);
	}
	return NULL;
}

/* --- the workers ------------------------------------------------------ */

/* Apply the launcher runtime's ConfigMap, once. */
static int ensure_runtime(struct kube_be *b, struct hb_err *err)
{
	int rc;

	pthread_mutex_lock(&b->mu);
	rc = !b->runtime_cm || b->runtime_done;
	pthread_mutex_unlock(&b->mu);
	if (rc)
		return 0;
	static const struct hb_kube_res configmap = { "", "v1", "configmaps",
						      "ConfigMap" };
	rc = hb_kube_apply(b->k, &configmap, b->ns, b->runtime_cm,
			   b->field_manager, 1, 0, NULL, err);
	if (!rc) {
		pthread_mutex_lock(&b->mu);
		b->runtime_done = 1;
		pthread_mutex_unlock(&b->mu);
	}
	return rc;
}

/* Create the MPIJob, or adopt the one already there if it is this job's. */
/* The resource a ResourceClaimTemplate is served as, from its
 * apiVersion ("resource.k8s.io/v1"). */
static struct hb_kube_res claim_res(const char *api)
{
	const char *v = api ? strchr(api, '/') : NULL;

	return (struct hb_kube_res){"resource.k8s.io", v ? v + 1 : "v1",
				    "resourceclaimtemplates",
				    "ResourceClaimTemplate"};
}

static int do_create(struct kube_be *b, const char *id, cJSON *manifest,
		     const cJSON *claim, struct hb_err *err)
{
	cJSON *have = NULL;
	const char *owner;
	int rc;

	if ((rc = ensure_runtime(b, err)))
		return rc;
	/* Before the MPIJob: pods made before their template may never get
	 * their claim. */
	if (claim) {
		struct hb_kube_res r =
		    claim_res(hb_doc_str(claim, "apiVersion"));

		if ((rc = hb_kube_apply(b->k, &r, b->ns, claim,
					b->field_manager, 1, 0, NULL, err)))
			return rc;
	}
	rc = hb_kube_create(b->k, &hb_kube_mpijob, b->ns, manifest, NULL, err);
	if (rc != HB_EEXIST)
		return rc;
	memset(err, 0, sizeof(*err));
	if ((rc = hb_kube_get(b->k, &hb_kube_mpijob, b->ns, id, &have, err)))
		return rc;
	owner = hb_doc_str(hb_doc_get(have, "metadata.labels"), LABEL_ID);
	rc = owner && !strcmp(owner, id)
		     ? 0
		     : hb_err_set(err, HB_ECONFLICT, NULL, 0,
				  "an MPIJob named %s already exists in %s "
				  "and is not this job's",
				  id, b->ns);
	cJSON_Delete(have);
	return rc;
}

/* The newest launcher pod of job id: its name into pod, its exit code
 * (when it ended) into *code.  HB_ENOENT when there is none. */
static int find_launcher(struct kube_be *b, const char *id, char *pod,
			 size_t size, int *code, struct hb_err *err)
{
	char sel[160];
	cJSON *items = NULL, *it, *best = NULL;
	const cJSON *cs, *term, *ec;
	int rc;

	snprintf(sel, sizeof(sel), "%s=%s,%s=launcher", L_JOB_NAME, id,
		 L_JOB_ROLE);
	if ((rc = hb_kube_list_all(b->k, &hb_kube_pod, b->ns, sel, 0, &items,
				   NULL, err)))
		return rc;
	cJSON_ArrayForEach (it, items) {
		const char *t = hb_doc_str(hb_doc_get(it, "metadata"),
					  "creationTimestamp");
		const char *bt = best ? hb_doc_str(hb_doc_get(best, "metadata"),
						  "creationTimestamp")
				      : NULL;

		if (!best || (t && (!bt || strcmp(t, bt) >= 0)))
			best = it;
	}
	*code = -1;
	if (!best) {
		cJSON_Delete(items);
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "no launcher pod for %s", id);
	}
	snprintf(pod, size, "%s",
		 hb_doc_str(hb_doc_get(best, "metadata"), "name") ?: "");
	cs = cJSON_GetArrayItem(
		hb_doc_get(best, "status.containerStatuses"), 0);
	term = hb_doc_get(cs, "state.terminated");
	ec = hb_doc_get(term, "exitCode");
	if (cJSON_IsNumber(ec))
		*code = ec->valueint;
	cJSON_Delete(items);
	return 0;
}

/* Read the launcher's whole log into j->log (the part from log_base). */
static int read_log(struct kube_be *b, struct kjob *j, const char *pod,
		    struct hb_err *err)
{
	struct hb_buf all;
	int rc;

	hb_buf_init(&all, 0);
	rc = hb_kube_log(b->k, b->ns, pod, NULL, 0, &all, err);
	pthread_mutex_lock(&b->mu);
	if (!rc && all.len >= j->log_base + j->log.len) {
		j->log.len = 0;
		rc = hb_buf_append(&j->log, all.data + j->log_base,
				all.len - (size_t)j->log_base);
	}
	j->log_at = hb_clock_wall_ms();
	pthread_mutex_unlock(&b->mu);
	hb_buf_free(&all);
	return rc;
}

/* One round of work on j, taken off the queue (j->busy set). */
static void work(struct kube_be *b, struct kjob *j)
{
	struct hb_err err = { 0 };
	unsigned w;
	cJSON *manifest, *claim;
	char pod[256], claim_api[40] = "";
	int rc = 0, code = -1, retry = 0;

	pthread_mutex_lock(&b->mu);
	w = j->want;
	j->want = 0;
	manifest = (w & W_CREATE) && !j->cancelled ? j->manifest : NULL;
	claim = j->claim;
	if (j->has_claim)
		snprintf(claim_api, sizeof(claim_api), "%s", j->claim_api);
	snprintf(pod, sizeof(pod), "%s", j->pod);
	pthread_mutex_unlock(&b->mu);

	if (manifest) {
		rc = do_create(b, j->id, manifest, claim, &err);
		pthread_mutex_lock(&b->mu);
		if (!rc) {
			cJSON_Delete(j->manifest);
			j->manifest = NULL;
			cJSON_Delete(j->claim);
			j->claim = NULL;
			j->present = 1;
		} else if (hb_kube_retryable(rc)) {
			j->want |= W_CREATE;
			retry = 1;
		} else if (!hb_remote_phase_done(j->phase)) {
			j->phase = j->seen = HB_REMOTE_FAILED;
			j->end_ms = hb_clock_wall_ms();
			snprintf(j->message, sizeof(j->message),
				 "the cluster refused the MPIJob: %.200s",
				 err.msg);
		}
		pthread_mutex_unlock(&b->mu);
	}
	if (w & W_DELETE) {
		memset(&err, 0, sizeof(err));
		rc = hb_kube_delete(b->k, &hb_kube_mpijob, b->ns, j->id,
				    "Background", &err);
		if (claim_api[0]) { /* its template goes with it */
			struct hb_err e2 = {0};
			struct hb_kube_res r = claim_res(claim_api);
			char name[HB_REMOTE_ID_MAX + 8];

			snprintf(name, sizeof(name), "%s-rdma", j->id);
			hb_kube_delete(b->k, &r, b->ns, name, "Background", &e2);
		}
		if (rc && rc != HB_ENOENT && hb_kube_retryable(rc)) {
			pthread_mutex_lock(&b->mu);
			j->want |= W_DELETE;
			retry = 1;
			pthread_mutex_unlock(&b->mu);
		}
	}
	if (w & (W_FINISH | W_LOG)) {
		memset(&err, 0, sizeof(err));
		rc = find_launcher(b, j->id, pod, sizeof(pod), &code, &err);
		if (!rc) {
			pthread_mutex_lock(&b->mu);
			snprintf(j->pod, sizeof(j->pod), "%s", pod);
			pthread_mutex_unlock(&b->mu);
			rc = read_log(b, j, pod, &err);
		}
		pthread_mutex_lock(&b->mu);
		if ((w & W_FINISH) && hb_kube_retryable(rc)) {
			j->want |= W_FINISH;
			retry = 1;
		} else if ((w & W_FINISH) &&
			   !hb_remote_phase_done(j->phase)) {
			/* With no launcher pod left, a success still says
			 * the launcher ended with 0. */
			j->exit_code = code >= 0			 ? code
				       : j->seen == HB_REMOTE_SUCCEEDED ? 0
									 : -1;
			j->phase = j->seen;
			if (!j->end_ms)
				j->end_ms = hb_clock_wall_ms();
		}
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_lock(&b->mu);
	j->busy = 0;
	if (retry)
		j->not_before = hb_clock_wall_ms() + RETRY_MS;
	if (j->want)
		want(b, j, 0);
	pthread_mutex_unlock(&b->mu);
	if (retry)
		hb_log(HB_LOG_WARN, "%s: will retry: %s", j->id, err.msg);
}

static void *worker_main(void *arg)
{
	struct kube_be *b = arg;
	struct kjob *j;
	int64_t wait_ms;

	pthread_mutex_lock(&b->mu);
	while (!atomic_load(&b->stop)) {
		j = take(b, hb_clock_wall_ms(), &wait_ms);
		if (!j) {
			struct timespec ts;

			if (wait_ms < 0 || wait_ms > 200)
				wait_ms = 200;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)wait_ms * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		j->busy = 1;
		pthread_mutex_unlock(&b->mu);
		work(b, j);
		pthread_mutex_lock(&b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* --- the operations --------------------------------------------------- */

/* Label values: at most 63 of [A-Za-z0-9._-], starting and ending with an
 * alphanumeric; anything else becomes '_' (and the ends are trimmed). */
static void label_value(const char *in, char out[64])
{
	size_t n = 0;

	for (; in && *in && n < 63; in++) {
		char c = *in;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '-' ||
			 c == '_';

		if (n == 0 && !(ok && c != '.' && c != '-' && c != '_'))
			continue;
		out[n++] = ok ? c : '_';
	}
	while (n && (out[n - 1] == '.' || out[n - 1] == '-' ||
		     out[n - 1] == '_'))
		n--;
	out[n] = '\0';
}

static int set_label(cJSON *labels, const char *key, const char *value)
{
	char v[64];

	label_value(value, v);
	if (!v[0])
		return 0;
	cJSON_DeleteItemFromObjectCaseSensitive(labels, key);
	return cJSON_AddStringToObject(labels, key, v) ? 0 : HB_ENOMEM;
}

/* The variables the gateway gives a job (from job->env) that its
 * launcher gets too. */
static const char *const passed_env[] = { "HPCBRIDGE_JOB_ID=",
					  "HPCBRIDGE_SLURM_JOB_ID=",
					  "HPCBRIDGE_SLURM_ARRAY_JOB_ID=",
					  "SLURM_ARRAY_TASK_ID=", NULL };

/* Add the passed variables of env to the environment of the launcher's
 * first container. */
static int launcher_env(cJSON *doc, const char *const *env)
{
	cJSON *c = hb_doc_get(
		doc, "spec.mpiReplicaSpecs.Launcher.template.spec.containers");
	cJSON *list, *e;

	if (!(c = cJSON_GetArrayItem(c, 0)))
		return 0;
	for (; env && *env; env++)
		for (size_t i = 0; passed_env[i]; i++) {
			size_t n = strlen(passed_env[i]);
			char name[32];

			if (strncmp(*env, passed_env[i], n))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)n - 1,
				 passed_env[i]);
			list = cJSON_GetObjectItemCaseSensitive(c, "env");
			if (!list && !(list = cJSON_AddArrayToObject(c, "env")))
				return HB_ENOMEM;
			if (!(e = cJSON_CreateObject()))
				return HB_ENOMEM;
			cJSON_AddItemToArray(list, e);
			if (!cJSON_AddStringToObject(e, "name", name) ||
			    !cJSON_AddStringToObject(e, "value", *env + n))
				return HB_ENOMEM;
		}
	return 0;
}

/* The MPIJob for job, named after its id: built from the job as it was
 * decided (the daemon reads it from the store, with the user's
 * identity), never from the script again. */
static int build(struct kube_be *b, const struct hb_remote_job *job,
		 cJSON **out, cJSON **claim, struct hb_err *err)
{
	struct hb_report rep;
	cJSON *doc = NULL, *meta, *labels;
	int rc;

	*out = NULL;
	if (!job->spec)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "kubernetes backend: job %s has no decided "
				  "jobspec",
				  job->id);
	hb_report_init(&rep, "MPIJob");
	rc = hb_mpijob_emit(job->spec, &job->cfg->k8s, job->array_task, &doc,
			    &rep, err);
	if (rc)
		goto out;
	meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
	labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	if (!labels && meta)
		labels = cJSON_AddObjectToObject(meta, "labels");
	if (!meta || !labels) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "name");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "namespace");
	if (!cJSON_AddStringToObject(meta, "name", job->id) ||
	    !cJSON_AddStringToObject(meta, "namespace", b->ns) ||
	    set_label(labels, LABEL_ID, job->id) ||
	    set_label(labels, LABEL_USER, job->user) ||
	    set_label(labels, LABEL_ACCT, job->account) ||
	    launcher_env(doc, job->env)) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	/* Named after the job's id, as the MPIJob now is. */
	if ((rc = hb_k8s_claim_template(doc, &job->cfg->k8s, claim, err)))
		goto out;
	*out = doc;
	doc = NULL;
out:
	cJSON_Delete(doc);
	hb_report_free(&rep);
	return rc;
}

static int kube_start(struct hb_remote *be, const struct hb_remote_job *job,
		      struct hb_err *err)
{
	struct kube_be *b = (struct kube_be *)be;
	cJSON *doc = NULL, *cm = NULL, *claim = NULL;
	const char *api;
	struct kjob *j;
	int rc;

	if (!hb_remote_id_valid(job->id))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "kubernetes backend: bad job id '%.80s'",
				  job->id ? job->id : "");
	if (!job->cfg)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "kubernetes backend: no translation "
				  "settings");
	pthread_mutex_lock(&b->mu);
	j = find(b, job->id);
	pthread_mutex_unlock(&b->mu);
	if (j)
		return 0; /* known: adopted, whatever state it is in */
	if ((rc = build(b, job, &doc, &claim, err)))
		return rc;
	if (job->cfg->k8s.launcher_runtime &&
	    !strcmp(job->cfg->k8s.launcher_runtime, "configmap") &&
	    (rc = hb_k8s_runtime_configmap(&job->cfg->k8s, &cm, err))) {
		cJSON_Delete(doc);
		cJSON_Delete(claim);
		return rc;
	}
	/* The runtime goes where the MPIJobs go. */
	if (cm) {
		cJSON *m = cJSON_GetObjectItemCaseSensitive(cm, "metadata");

		cJSON_DeleteItemFromObjectCaseSensitive(m, "namespace");
		if (!m || !cJSON_AddStringToObject(m, "namespace", b->ns)) {
			cJSON_Delete(doc);
			cJSON_Delete(claim);
			cJSON_Delete(cm);
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		}
	}
	pthread_mutex_lock(&b->mu);
	if (cm && !b->runtime_cm) {
		b->runtime_cm = cm;
		cm = NULL;
	}
	j = find(b, job->id);
	if (!j && (j = find_or_add(b, job->id))) {
		j->manifest = doc;
		j->claim = claim;
		j->has_claim = claim != NULL;
		api = claim ? hb_doc_str(claim, "apiVersion") : NULL;
		snprintf(j->claim_api, sizeof(j->claim_api), "%s",
			 api ? api : "");
		doc = claim = NULL;
		want(b, j, W_CREATE);
	}
	pthread_mutex_unlock(&b->mu);
	cJSON_Delete(doc);
	cJSON_Delete(claim);
	cJSON_Delete(cm);
	return j ? 0 : hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
}

/* Under mu: a running job's log is read again once it is older than the
 * refresh period. */
static void refresh_log(struct kube_be *b, struct kjob *j)
{
	if (j->phase == HB_REMOTE_RUNNING &&
	    hb_clock_wall_ms() - j->log_at >= b->log_refresh_ms)
		want(b, j, W_LOG);
}

static int kube_status(struct hb_remote *be, const char *id,
		       struct hb_remote_status *out, struct hb_err *err)
{
	struct kube_be *b = (struct kube_be *)be;
	struct kjob *j;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	pthread_mutex_lock(&b->mu);
	j = hb_remote_id_valid(id) ? find(b, id) : NULL;
	if (j) {
		out->phase = j->phase;
		out->exit_code = hb_remote_phase_done(j->phase) ? j->exit_code
								: -1;
		out->start_ms = j->start_ms;
		out->end_ms = hb_remote_phase_done(j->phase) ? j->end_ms : 0;
		snprintf(out->message, sizeof(out->message), "%s",
			 j->message);
		refresh_log(b, j);
	} else if (!b->synced && hb_remote_id_valid(id)) {
		/* Not seen yet: the watch has not caught up. */
		out->phase = HB_REMOTE_PENDING;
		snprintf(out->message, sizeof(out->message),
			 "waiting for the cluster's view");
	} else {
		rc = hb_err_set(err, HB_ENOENT, NULL, 0,
				"no MPIJob for %.80s", id ? id : "");
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

static int kube_log(struct hb_remote *be, const char *id, uint64_t offset,
		    size_t max, struct hb_buf *out, struct hb_err *err)
{
	struct kube_be *b = (struct kube_be *)be;
	struct kjob *j;
	uint64_t end;
	size_t n;
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	j = hb_remote_id_valid(id) ? find(b, id) : NULL;
	if (!j) {
		pthread_mutex_unlock(&b->mu);
		return b->synced ? hb_err_set(err, HB_ENOENT, NULL, 0,
					      "no MPIJob for %.80s",
					      id ? id : "")
				 : 0;
	}
	end = j->log_base + j->log.len;
	if (offset < j->log_base) {
		rc = hb_err_set(err, HB_ERANGE, NULL, 0,
				"%s: log bytes before %llu are gone", id,
				(unsigned long long)j->log_base);
	} else if (offset < end) {
		n = (size_t)(end - offset) < max ? (size_t)(end - offset)
						 : max;
		rc = hb_buf_append(out, j->log.data + (offset - j->log_base), n);
		/* The reader never goes back far: drop what it has read. */
		if (!rc && offset - j->log_base > LOG_KEEP) {
			size_t drop = (size_t)(offset - j->log_base) -
				      LOG_KEEP;

			memmove(j->log.data, j->log.data + drop,
				j->log.len - drop);
			j->log.len -= drop;
			j->log_base += drop;
		}
	}
	refresh_log(b, j);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

static int kube_cancel(struct hb_remote *be, const char *id,
		       struct hb_err *err)
{
	struct kube_be *b = (struct kube_be *)be;
	struct kjob *j;

	if (!hb_remote_id_valid(id))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "kubernetes backend: bad job id '%.80s'",
				  id ? id : "");
	pthread_mutex_lock(&b->mu);
	j = b->synced ? find(b, id) : find_or_add(b, id);
	if (!j) {
		pthread_mutex_unlock(&b->mu);
		return b->synced ? hb_err_set(err, HB_ENOENT, NULL, 0,
					      "no MPIJob for %s", id)
				 : hb_err_set(err, HB_ENOMEM, NULL, 0,
					      "out of memory");
	}
	if (!hb_remote_phase_done(j->phase)) {
		j->cancelled = 1;
		j->phase = j->seen = HB_REMOTE_CANCELLED;
		j->end_ms = hb_clock_wall_ms();
		snprintf(j->message, sizeof(j->message), "cancelled");
		want(b, j, W_DELETE);
	}
	pthread_mutex_unlock(&b->mu);
	return 0;
}

/* Pods that hold resources: every namespace's, not yet ended. */
#define LIVE_PODS "status.phase!=Succeeded,status.phase!=Failed"
#define CAP_PAGE  500

/*
 * The wait in opts->kueue_queue from Kueue's visibility API, into out's
 * queue_* fields.  Never an error: without the API (404: Kueue serves no
 * visibility API, or no such queue) or when it fails, queue_note says so
 * and the policy's default wait stands.  Slots are this backend's MPIJobs
 * running now (admitted), a lower bound of the queue's.
 */
static void kube_queue(struct kube_be *b, const struct hb_kcap_opts *o,
		       struct hb_kcap *out)
{
	struct hb_kueue_pending pw;
	struct hb_err e = { 0 };
	cJSON *sum = NULL;
	uint32_t running = 0;
	int rc;

	rc = hb_kube_pending_workloads(b->k, o->ns, o->kueue_queue,
				       o->kueue_cluster, 0, &sum, &e);
	if (!rc)
		rc = hb_kueue_pending(sum, 0, &pw, &e);
	cJSON_Delete(sum);
	if (rc) {
		snprintf(out->queue_note, sizeof(out->queue_note),
			 "Kueue %s %.63s: %.120s; the policy's default wait "
			 "stands",
			 o->kueue_cluster ? "ClusterQueue" : "LocalQueue",
			 o->kueue_queue,
			 rc == HB_ENOENT
				 ? "not found (404: no visibility API, or no "
				   "such queue)"
				 : (e.msg[0] ? e.msg : hb_strerror(rc)));
		return;
	}
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct kjob *j = b->buckets[i]; j; j = j->hnext)
			running += j->phase == HB_REMOTE_RUNNING;
	pthread_mutex_unlock(&b->mu);
	out->queue_known = 1;
	out->queue_ahead = pw.ahead;
	out->queue_admitted = running;
	snprintf(out->queue_note, sizeof(out->queue_note),
		 "Kueue %s %.63s: %u workloads pending (%u MPIJobs)",
		 o->kueue_cluster ? "ClusterQueue" : "LocalQueue",
		 o->kueue_queue, pw.items, pw.burst);
}

static int kube_capacity(struct hb_remote *be, const struct hb_kcap_opts *o,
			 struct hb_kcap *out, struct hb_err *err)
{
	struct kube_be *b = (struct kube_be *)be;
	struct hb_kcap_opts opts = *o;
	cJSON *nodes = NULL, *pods = NULL;
	int rc;

	if (!opts.ns)
		opts.ns = b->ns;
	if (!(rc = hb_kube_list_cluster(b->k, &hb_kube_node, NULL, NULL,
					CAP_PAGE, &nodes, err)) &&
	    !(rc = hb_kube_list_cluster(b->k, &hb_kube_pod, NULL, LIVE_PODS,
					CAP_PAGE, &pods, err)))
		rc = hb_kube_capacity(nodes, pods, &opts, out, err);
	if (!rc && opts.kueue_queue)
		kube_queue(b, &opts, out);
	cJSON_Delete(nodes);
	cJSON_Delete(pods);
	return rc;
}

static void kube_free(struct hb_remote *be)
{
	struct kube_be *b = (struct kube_be *)be;

	atomic_store(&b->stop, 1);
	pthread_mutex_lock(&b->mu);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	if (b->started & 1)
		pthread_join(b->reflector, NULL);
	for (unsigned i = 0; i < b->nworkers; i++)
		pthread_join(b->workers[i], NULL);
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct kjob *j = b->buckets[i], *n; j; j = n) {
			n = j->hnext;
			cJSON_Delete(j->manifest);
			cJSON_Delete(j->claim);
			hb_buf_free(&j->log);
			free(j);
		}
	cJSON_Delete(b->runtime_cm);
	hb_kube_free(b->k);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b->workers);
	free(b->ns);
	free(b->field_manager);
	free(b);
}

static const struct hb_remote_ops kube_ops = {
	.name = "kubernetes",
	.start = kube_start,
	.status = kube_status,
	.log = kube_log,
	.cancel = kube_cancel,
	.capacity = kube_capacity,
	.free = kube_free,
};

int hb_remote_kube_new(const struct hb_remote_kube_opts *o,
			struct hb_remote **out, struct hb_err *err)
{
	struct hb_kube_config *kc = NULL;
	struct kube_be *b;
	const char *ns;
	unsigned nw = o->workers ? o->workers : 4;
	int rc;

	*out = NULL;
	rc = o->kubeconfig && !strcmp(o->kubeconfig, "in-cluster")
		     ? hb_kube_config_incluster(NULL, &kc, err)
		     : hb_kube_config_load(o->kubeconfig, o->context, &kc,
					   err);
	if (rc)
		return rc;
	b = calloc(1, sizeof(*b));
	if (!b) {
		hb_kube_config_free(kc);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	b->be.ops = &kube_ops;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->qtail = &b->qhead;
	b->log_refresh_ms = o->log_refresh_ms > 0 ? o->log_refresh_ms : 1000;
	ns = o->ns && o->ns[0] ? o->ns : hb_kube_config_namespace(kc);
	b->ns = strdup(ns ? ns : "default");
	b->field_manager = strdup(o->field_manager ? o->field_manager
						   : "hpcbridge");
	b->workers = calloc(nw, sizeof(*b->workers));
	if (!b->ns || !b->field_manager || !b->workers) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto fail;
	}
	if ((rc = hb_kube_new(kc, o->client, &b->k, err)))
		goto fail;
	hb_kube_config_free(kc);
	kc = NULL;
	if (pthread_create(&b->reflector, NULL, reflect_main, b)) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
				"cannot start the watch thread");
		goto fail;
	}
	b->started = 1;
	for (; b->nworkers < nw; b->nworkers++)
		if (pthread_create(&b->workers[b->nworkers], NULL,
				   worker_main, b)) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"cannot start the workers");
			goto fail;
		}
	*out = &b->be;
	return 0;
fail:
	hb_kube_config_free(kc);
	kube_free(&b->be);
	return rc;
}
