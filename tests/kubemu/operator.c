/*
 * operator.c - the controller thread: an emulated MPI Operator (v2beta1,
 * after kubeflow/mpi-operator's MPIJobController), the garbage collector,
 * and the loop that drives the kubelet.
 *
 * The store hook queues work: an MPIJob that changed, a pod that changed
 * (for the kubelet, and for the MPIJob that controls it), the dependents
 * of a deleted owner.  One thread takes the queue and the timers (pod
 * start-up, simulated runs, deadlines) in order, so the operator and the
 * kubelet need no locks of their own.
 *
 * The operator's sync of an MPIJob follows syncHandler: skip it if
 * spec.runPolicy.managedBy names another controller; apply
 * ValidateMPIJob (a Warning event ValidationError, nothing else); set
 * Created; create the worker pods and the launcher; then compute the
 * status from the pods: Running when the launcher and every worker run,
 * Succeeded or Failed from the launcher, Suspended while
 * spec.runPolicy.suspend is set, with the operator's reasons and
 * messages, and events.  Differences from the real operator (no batch
 * Job, Service or Secret objects; the launcher pod is owned by the
 * MPIJob) are listed in docs/internals/kubemu.md.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hpcbridge/log.h"
#include "kubemu.h"

#define OPERATOR       "mpi-operator"
#define OPERATOR_VALUE "kubeflow.org/mpi-operator"
#define EVENT_SOURCE   "mpi-job-controller"
#define L_OPERATOR     "training.kubeflow.org/operator-name"
#define L_JOB	       "training.kubeflow.org/job-name"
#define L_ROLE	       "training.kubeflow.org/job-role"
#define L_INDEX	       "training.kubeflow.org/replica-index"
#define ANNOT_PREFIX   "kubemu.hpcbridge.io/"
/* The Job controller's default backoffLimit. */
#define DEFAULT_BACKOFF 6

enum wkind { W_MPIJOB, W_POD, W_GC, W_FOREGROUND, W_KUEUE };

struct item {
	enum wkind kind;
	char *ns;
	char *name; /* the uid for W_GC */
};

struct timer {
	int64_t due;
	struct item it;
};

/* What the operator remembers of an MPIJob between syncs. */
struct jobstate {
	char uid[40];
	double warned_gen;	/* generation of the last ValidationError */
	int64_t launcher_start; /* when the launcher "Job" started */
	int deadline_exceeded;
};

struct km_ctl {
	struct km_ctx *ctx;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stop;
	struct item *q;
	size_t qhead, qlen, qcap;
	struct km_map *pending; /* queued keys */
	struct timer *heap;
	size_t nheap, capheap;
	struct km_map *orphans; /* uids whose deletion orphans */
	struct km_map *jobs;	/* ns/name -> struct jobstate */
};

/* ---- queue and timers ----------------------------------------------- */

static void key_of(char *buf, size_t cap, enum wkind k, const char *ns,
		   const char *name)
{
	snprintf(buf, cap, "%d/%s/%s", (int)k, ns, name);
}

/* Queue an item (with ctl->mu held); duplicates are dropped. */
static void enqueue_locked(struct km_ctl *c, enum wkind k, const char *ns,
			   const char *name)
{
	char key[700];
	struct item *it;

	key_of(key, sizeof(key), k, ns, name);
	if (km_map_get(c->pending, key))
		return;
	if (c->qlen == c->qcap) {
		size_t cap = c->qcap ? c->qcap * 2 : 256;
		struct item *nq = malloc(cap * sizeof(*nq));

		if (!nq)
			return;
		for (size_t i = 0; i < c->qlen; i++)
			nq[i] = c->q[(c->qhead + i) % c->qcap];
		free(c->q);
		c->q = nq;
		c->qcap = cap;
		c->qhead = 0;
	}
	it = &c->q[(c->qhead + c->qlen) % c->qcap];
	it->kind = k;
	it->ns = strdup(ns);
	it->name = strdup(name);
	if (!it->ns || !it->name ||
	    km_map_put(c->pending, key, (void *)1, NULL)) {
		free(it->ns);
		free(it->name);
		return;
	}
	c->qlen++;
	pthread_cond_signal(&c->cond);
}

static void heap_swap(struct timer *a, struct timer *b)
{
	struct timer t = *a;

	*a = *b;
	*b = t;
}

/* Call item again at due (km_now_ms() time). */
static void schedule(struct km_ctl *c, int64_t due, enum wkind k,
		     const char *ns, const char *name)
{
	struct timer *t;
	size_t i;

	pthread_mutex_lock(&c->mu);
	if (c->nheap == c->capheap) {
		size_t cap = c->capheap ? c->capheap * 2 : 64;
		struct timer *nh = realloc(c->heap, cap * sizeof(*nh));

		if (!nh) {
			pthread_mutex_unlock(&c->mu);
			return;
		}
		c->heap = nh;
		c->capheap = cap;
	}
	t = &c->heap[c->nheap];
	t->due = due;
	t->it.kind = k;
	t->it.ns = strdup(ns);
	t->it.name = strdup(name);
	if (!t->it.ns || !t->it.name) {
		free(t->it.ns);
		free(t->it.name);
		pthread_mutex_unlock(&c->mu);
		return;
	}
	i = c->nheap++;
	while (i && c->heap[(i - 1) / 2].due > c->heap[i].due) {
		heap_swap(&c->heap[(i - 1) / 2], &c->heap[i]);
		i = (i - 1) / 2;
	}
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

/* Move due timers to the queue (with ctl->mu held). */
static void fire_timers_locked(struct km_ctl *c, int64_t now)
{
	while (c->nheap && c->heap[0].due <= now) {
		struct timer t = c->heap[0];
		size_t i = 0;

		c->heap[0] = c->heap[--c->nheap];
		for (;;) {
			size_t l = 2 * i + 1, r = l + 1, m = i;

			if (l < c->nheap && c->heap[l].due < c->heap[m].due)
				m = l;
			if (r < c->nheap && c->heap[r].due < c->heap[m].due)
				m = r;
			if (m == i)
				break;
			heap_swap(&c->heap[i], &c->heap[m]);
			i = m;
		}
		enqueue_locked(c, t.it.kind, t.it.ns, t.it.name);
		free(t.it.ns);
		free(t.it.name);
	}
}

/* ---- the store hook ------------------------------------------------- */

/* The name of the MPIJob that controls an object, or NULL. */
static const char *controller_job(const cJSON *obj)
{
	const cJSON *ref;

	cJSON_ArrayForEach (
		ref, km_get(km_get(obj, "metadata"), "ownerReferences")) {
		const char *kind = km_str(ref, "kind");

		if (kind && !strcmp(kind, "MPIJob") &&
		    cJSON_IsTrue(km_get(ref, "controller")))
			return km_str(ref, "name");
	}
	return NULL;
}

void km_ctl_hook(void *arg, const struct km_event *ev)
{
	struct km_ctl *c = arg;
	const struct km_obj *o = ev->obj;
	const cJSON *meta = km_get(o->tree, "metadata");
	const char *uid = km_str(meta, "uid");
	const char *job;

	pthread_mutex_lock(&c->mu);
	switch (o->res) {
	case KM_RFLAVOR:
	case KM_CQUEUE:
	case KM_LQUEUE:
	case KM_WPRIORITY:
	case KM_WORKLOAD:
		if (!c->ctx->o->no_kueue)
			enqueue_locked(c, W_KUEUE, "", "kueue");
		break;
	case KM_MPIJOB:
	case KM_TRAINJOB:
		if (o->res == KM_MPIJOB && !c->ctx->o->no_kueue &&
		    km_kueue_queued(ev))
			enqueue_locked(c, W_KUEUE, "", "kueue");
		if (o->res == KM_MPIJOB && !c->ctx->o->no_operator)
			enqueue_locked(c, W_MPIJOB, o->ns, o->name);
		if (ev->type == KM_DELETED && uid)
			enqueue_locked(c, W_GC, o->ns, uid);
		else if (km_get(meta, "deletionTimestamp")) {
			char key[600];

			snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
			enqueue_locked(c, W_FOREGROUND,
				       o->res == KM_MPIJOB ? "m" : "t", key);
		}
		break;
	case KM_POD:
		enqueue_locked(c, W_POD, o->ns, o->name);
		job = controller_job(o->tree);
		if (job && !c->ctx->o->no_operator)
			enqueue_locked(c, W_MPIJOB, o->ns, job);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&c->mu);
}

void km_ctl_orphan(struct km_ctl *c, const char *uid)
{
	pthread_mutex_lock(&c->mu);
	km_map_put(c->orphans, uid, (void *)1, NULL);
	pthread_mutex_unlock(&c->mu);
}

/* ---- events --------------------------------------------------------- */

/* Record a core/v1 Event about an object, as the operator's recorder. */
static void record(struct km_ctx *ctx, const cJSON *obj, const char *type,
		   const char *reason, const char *msg)
{
	km_event_record(ctx, obj, type, reason, msg, EVENT_SOURCE);
}

/* ---- conditions (mpi_job_controller_status.go) ---------------------- */

/* setCondition: returns 1 when the conditions changed. */
static int set_cond(cJSON *status, const char *type, int on, const char *reason,
		    const char *msg)
{
	const char *st = on ? "True" : "False";
	cJSON *cur = km_cond_find(status, type), *conds, *n, *c, *next;
	char ts[32], ltt[32];
	int terminal = !strcmp(type, "Failed") || !strcmp(type, "Succeeded");

	if (cur && km_str(cur, "status") &&
	    !strcmp(km_str(cur, "status"), st) && km_str(cur, "reason") &&
	    !strcmp(km_str(cur, "reason"), reason))
		return 0;
	km_timestamp(ts, sizeof(ts), 0);
	snprintf(ltt, sizeof(ltt), "%s", ts);
	if (cur && km_str(cur, "status") &&
	    !strcmp(km_str(cur, "status"), st) &&
	    km_str(cur, "lastTransitionTime"))
		snprintf(ltt, sizeof(ltt), "%s",
			 km_str(cur, "lastTransitionTime"));
	conds = km_get(status, "conditions");
	if (!cJSON_IsArray(conds)) {
		conds = cJSON_CreateArray();
		if (km_set(status, "conditions", conds))
			return 0;
	}
	/* filterOutCondition */
	for (c = conds->child; c; c = next) {
		const char *t = km_str(c, "type");

		next = c->next;
		if (!t)
			continue;
		if (!strcmp(t, type) ||
		    (!strcmp(type, "Restarting") && !strcmp(t, "Running")) ||
		    (!strcmp(type, "Running") && !strcmp(t, "Restarting"))) {
			cJSON_Delete(cJSON_DetachItemViaPointer(conds, c));
			continue;
		}
		if (terminal && (!strcmp(t, "Running") || !strcmp(t, "Failed")))
			km_set_str(c, "status", "False");
	}
	n = cJSON_CreateObject();
	if (!n || km_set_str(n, "type", type) || km_set_str(n, "status", st) ||
	    km_set_str(n, "lastUpdateTime", ts) ||
	    km_set_str(n, "lastTransitionTime", ltt) ||
	    km_set_str(n, "reason", reason) || km_set_str(n, "message", msg)) {
		cJSON_Delete(n);
		return 0;
	}
	cJSON_AddItemToArray(conds, n);
	return 1;
}

/* ---- pods of a job -------------------------------------------------- */

struct jobpods {
	struct km_obj **v;
	size_t n;
};

static int owned_by(const struct km_obj *o, const char *uid)
{
	const cJSON *ref;

	cJSON_ArrayForEach (
		ref, km_get(km_get(o->tree, "metadata"), "ownerReferences")) {
		const char *u = km_str(ref, "uid");

		if (u && !strcmp(u, uid))
			return 1;
	}
	return 0;
}

struct owner_filter {
	const char *uid;
};

static int owner_match(void *arg, const struct km_obj *o)
{
	return owned_by(o, ((struct owner_filter *)arg)->uid);
}

static void jobpods_free(struct jobpods *p)
{
	for (size_t i = 0; i < p->n; i++)
		km_obj_unref(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

static const char *phase_of(const struct km_obj *pod)
{
	const char *p = km_str(km_get(pod->tree, "status"), "phase");

	return p ? p : "Pending";
}

/* The restarts the Job controller counts for an active pod whose
 * restartPolicy is OnFailure: every init and main container's. */
static int restarts_on_failure(const cJSON *pod)
{
	static const char *const lists[] = { "initContainerStatuses",
					     "containerStatuses" };
	const char *rp = km_str(km_get(pod, "spec"), "restartPolicy");
	const cJSON *s;
	int n = 0;

	if (!rp || strcmp(rp, "OnFailure"))
		return 0;
	for (size_t i = 0; i < 2; i++) {
		cJSON_ArrayForEach (s,
				    km_get(km_get(pod, "status"), lists[i])) {
			const cJSON *rc = km_get(s, "restartCount");

			n += cJSON_IsNumber(rc) ? rc->valueint : 0;
		}
	}
	return n;
}

static const char *role_of(const struct km_obj *pod)
{
	return km_str(km_get(km_get(pod->tree, "metadata"), "labels"), L_ROLE);
}

static int pod_ready(const struct km_obj *pod)
{
	const cJSON *c;

	cJSON_ArrayForEach (c,
			    km_get(km_get(pod->tree, "status"), "conditions")) {
		const char *t = km_str(c, "type"), *s = km_str(c, "status");

		if (t && s && !strcmp(t, "Ready") && !strcmp(s, "True"))
			return 1;
	}
	return 0;
}

/* ---- building pods -------------------------------------------------- */

static void add_env(cJSON *container, const char *name, const char *value)
{
	cJSON *env = km_get(container, "env"), *e;

	if (!cJSON_IsArray(env)) {
		env = cJSON_CreateArray();
		if (km_set(container, "env", env))
			return;
	}
	e = cJSON_CreateObject();
	if (!e || km_set_str(e, "name", name) ||
	    km_set_str(e, "value", value)) {
		cJSON_Delete(e);
		return;
	}
	cJSON_AddItemToArray(env, e);
}

static cJSON *array_at(cJSON *o, const char *key)
{
	cJSON *a = km_get(o, key);

	if (cJSON_IsArray(a))
		return a;
	a = cJSON_CreateArray();
	return km_set(o, key, a) ? NULL : a;
}

/* Add volume name (kind: src, taken) mounted at path in the container. */
static void add_volume(cJSON *podspec, cJSON *container, const char *name,
		       const char *kind, cJSON *src, const char *path)
{
	cJSON *vols = array_at(podspec, "volumes");
	cJSON *mounts = array_at(container, "volumeMounts");
	cJSON *v = cJSON_CreateObject(), *m = cJSON_CreateObject();

	if (!vols || !mounts || !v || !m || km_set_str(v, "name", name) ||
	    km_set(v, kind, src) || km_set_str(m, "name", name) ||
	    km_set_str(m, "mountPath", path)) {
		cJSON_Delete(v);
		cJSON_Delete(m);
		return;
	}
	cJSON_AddItemToArray(vols, v);
	cJSON_AddItemToArray(mounts, m);
}

cJSON *km_owner_refs(const cJSON *job)
{
	cJSON *refs = cJSON_CreateArray(), *ref = cJSON_CreateObject();

	if (!refs || !ref ||
	    km_set_str(ref, "apiVersion", "kubeflow.org/v2beta1") ||
	    km_set_str(ref, "kind", "MPIJob") ||
	    km_set_str(ref, "name", km_meta_str(job, "name")) ||
	    km_set_str(ref, "uid", km_meta_str(job, "uid")) ||
	    km_set(ref, "controller", cJSON_CreateTrue()) ||
	    km_set(ref, "blockOwnerDeletion", cJSON_CreateTrue())) {
		cJSON_Delete(refs);
		cJSON_Delete(ref);
		return NULL;
	}
	cJSON_AddItemToArray(refs, ref);
	return refs;
}

/* An object of the template's metadata member key (labels,
 * annotations), copied; {} when there is none. */
static cJSON *tmpl_map(const cJSON *tmpl, const char *key)
{
	cJSON *m = cJSON_Duplicate(km_get(km_get(tmpl, "metadata"), key), 1);

	if (cJSON_IsObject(m))
		return m;
	cJSON_Delete(m);
	return cJSON_CreateObject();
}

/* The launcher's environment, as newLauncherPodTemplate sets it. */
static void launcher_env(cJSON *c0, const cJSON *spec, const char *slots)
{
	const char *impl = km_str(spec, "mpiImplementation");

	add_env(c0, "K_MPI_JOB_ROLE", "launcher");
	if (!impl || !strcmp(impl, "OpenMPI")) {
		add_env(c0, "OMPI_MCA_orte_keep_fqdn_hostnames", "true");
		add_env(c0, "OMPI_MCA_orte_default_hostfile",
			"/etc/mpi/hostfile");
		add_env(c0, "OMPI_MCA_plm_rsh_args",
			"-o ConnectionAttempts=10");
		add_env(c0, "OMPI_MCA_orte_set_default_slots", slots);
	} else if (!strcmp(impl, "Intel")) {
		add_env(c0, "I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile");
		add_env(c0, "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS",
			"-o ConnectionAttempts=10");
		add_env(c0, "I_MPI_PERHOST", slots);
	} else {
		add_env(c0, "HYDRA_HOST_FILE", "/etc/mpi/hostfile");
		add_env(c0, "HYDRA_LAUNCH_EXTRA_ARGS",
			"-o ConnectionAttempts=10");
	}
	if (!cJSON_IsTrue(km_get(spec, "runLauncherAsWorker"))) {
		add_env(c0, "NVIDIA_VISIBLE_DEVICES", "");
		add_env(c0, "NVIDIA_DRIVER_CAPABILITIES", "");
	}
}

/*
 * A pod of the job from replica spec rtype: a worker (index >= 0, named
 * <job>-worker-<index>) or the launcher (index -1, given name).
 */
static cJSON *new_pod(const cJSON *job, const char *rtype, const char *name,
		      int index)
{
	const cJSON *spec = km_get(job, "spec");
	const cJSON *rs = km_get(km_get(spec, "mpiReplicaSpecs"), rtype);
	const cJSON *tmpl = km_get(rs, "template");
	const char *jname = km_meta_str(job, "name");
	const char *rp = km_str(rs, "restartPolicy");
	const char *ssh = km_str(spec, "sshAuthMountPath");
	const cJSON *spw = km_get(spec, "slotsPerWorker");
	const cJSON *ann;
	cJSON *pod = cJSON_CreateObject(), *meta, *labels, *annots, *ps, *c0;
	cJSON *st, *src;
	char buf[400], slots[16];

	if (!pod || !(meta = km_obj_at(pod, "metadata")))
		goto fail;
	km_set_str(pod, "apiVersion", "v1");
	km_set_str(pod, "kind", "Pod");
	km_set_str(meta, "name", name);
	km_set_str(meta, "namespace", km_meta_str(job, "namespace"));
	labels = tmpl_map(tmpl, "labels");
	if (!labels || km_set(meta, "labels", labels))
		goto fail;
	km_set_str(labels, L_OPERATOR, OPERATOR);
	km_set_str(labels, L_JOB, jname);
	km_set_str(labels, L_ROLE, index >= 0 ? "worker" : "launcher");
	if (index >= 0) {
		snprintf(buf, sizeof(buf), "%d", index);
		km_set_str(labels, L_INDEX, buf);
	} else {
		/* What the Job controller puts on its pods. */
		snprintf(buf, sizeof(buf), "%s-launcher", jname);
		km_set_str(labels, "batch.kubernetes.io/job-name", buf);
		km_set_str(labels, "job-name", buf);
	}
	annots = tmpl_map(tmpl, "annotations");
	/* The emulator's own knobs, from the MPIJob's annotations. */
	cJSON_ArrayForEach (ann,
			    km_get(km_get(job, "metadata"), "annotations")) {
		if (annots && cJSON_IsString(ann) &&
		    !strncmp(ann->string, ANNOT_PREFIX, strlen(ANNOT_PREFIX)))
			km_set_str(annots, ann->string, ann->valuestring);
	}
	if (annots && cJSON_GetArraySize(annots))
		km_set(meta, "annotations", annots);
	else
		cJSON_Delete(annots);
	if (km_set(meta, "ownerReferences", km_owner_refs(job)))
		goto fail;

	ps = cJSON_Duplicate(km_get(tmpl, "spec"), 1);
	if (!cJSON_IsObject(ps)) {
		cJSON_Delete(ps);
		ps = cJSON_CreateObject();
	}
	if (!ps || km_set(pod, "spec", ps))
		goto fail;
	snprintf(buf, sizeof(buf), "%s%s", index >= 0 ? name : jname,
		 index >= 0 ? "" : "-launcher");
	km_set_str(ps, "hostname", buf);
	km_set_str(ps, "subdomain", jname);
	/* setRestartPolicy, with SetDefaults_MPIJob's defaults. */
	if (!rp)
		rp = index >= 0 ? "Never" : "OnFailure";
	km_set_str(ps, "restartPolicy", strcmp(rp, "ExitCode") ? rp : "Never");
	snprintf(slots, sizeof(slots), "%d",
		 cJSON_IsNumber(spw) ? spw->valueint : 1);
	c0 = cJSON_GetArrayItem(km_get(ps, "containers"), 0);
	if (c0 && index >= 0) {
		if (!km_get(c0, "command") && !km_get(c0, "args")) {
			cJSON *cmd = cJSON_CreateArray();

			cJSON_AddItemToArray(
				cmd, cJSON_CreateString("/usr/sbin/sshd"));
			cJSON_AddItemToArray(cmd, cJSON_CreateString("-De"));
			km_set(c0, "command", cmd);
		}
		add_env(c0, "K_MPI_JOB_ROLE", "worker");
	} else if (c0) {
		launcher_env(c0, spec, slots);
		src = cJSON_CreateObject();
		snprintf(buf, sizeof(buf), "%s-config", jname);
		km_set_str(src, "name", buf);
		add_volume(ps, c0, "mpi-job-config", "configMap", src,
			   "/etc/mpi");
	}
	if (c0) {
		src = cJSON_CreateObject();
		snprintf(buf, sizeof(buf), "%s-ssh", jname);
		km_set_str(src, "secretName", buf);
		add_volume(ps, c0, "ssh-auth", "secret", src,
			   ssh ? ssh : "/root/.ssh");
	}
	st = cJSON_CreateObject();
	if (!st || km_set_str(st, "phase", "Pending") ||
	    km_set_str(st, "qosClass", "BestEffort") ||
	    km_set(pod, "status", st))
		goto fail;
	return pod;
fail:
	cJSON_Delete(pod);
	return NULL;
}

/* Create a pod of job through admission: a pod that PodSecurity refuses
 * is not made, and the job gets the operator's Warning event. */
static void create_pod(struct km_ctx *ctx, const cJSON *job, cJSON *pod,
		       const char *role)
{
	cJSON *st = NULL;
	char msg[8192];

	if (pod &&
	    km_psa_admit(ctx, km_meta_str(pod, "namespace"), pod, NULL, &st)) {
		snprintf(msg, sizeof(msg), "%s pod created failed: %s", role,
			 km_str(st, "message") ?: "forbidden");
		record(ctx, job, "Warning", "MPIJobFailed", msg);
		cJSON_Delete(st);
		cJSON_Delete(pod);
		return;
	}
	km_internal_create(ctx, KM_POD, pod, OPERATOR, NULL);
}

struct cm_data {
	const char *hostfile, *discover;
};

static int set_cm_data(void *arg, cJSON *cm)
{
	struct cm_data *d = arg;
	cJSON *data = km_obj_at(cm, "data");

	if (!data || km_set_str(data, "hostfile", d->hostfile) ||
	    km_set_str(data, "discover_hosts.sh", d->discover))
		return HB_ENOMEM;
	return 0;
}

/* The <job>-config ConfigMap (hostfile, discover_hosts.sh), as the
 * operator keeps it; the launcher mounts it at /etc/mpi. */
static void ensure_config(struct km_ctx *ctx, const cJSON *job, int workers,
			  const struct jobpods *pods)
{
	const char *jname = km_meta_str(job, "name");
	const char *ns = km_meta_str(job, "namespace");
	const char *impl = km_str(km_get(job, "spec"), "mpiImplementation");
	const cJSON *spw = km_get(km_get(job, "spec"), "slotsPerWorker");
	int slots = cJSON_IsNumber(spw) ? spw->valueint : 1;
	struct hb_buf host, disc;
	struct cm_data d;
	char cname[300];

	hb_buf_init(&host, 0);
	hb_buf_init(&disc, 0);
	hb_buf_puts(&host, "");
	for (int i = 0; i < workers; i++) {
		if (!impl || !strcmp(impl, "OpenMPI"))
			hb_buf_printf(&host,
				      "%s-worker-%d.%s.%s.svc slots=%d\n",
				      jname, i, jname, ns, slots);
		else
			hb_buf_printf(&host, "%s-worker-%d.%s.%s.svc:%d\n",
				      jname, i, jname, ns, slots);
	}
	hb_buf_puts(&disc, "#!/bin/sh\n");
	for (size_t i = 0; i < pods->n; i++) {
		const char *role = role_of(pods->v[i]);

		if (role && !strcmp(role, "worker") &&
		    !strcmp(phase_of(pods->v[i]), "Running"))
			hb_buf_printf(&disc, "echo %s.%s.%s.svc\n",
				      pods->v[i]->name, jname, ns);
	}
	d.hostfile = host.data ? host.data : "";
	d.discover = disc.data ? disc.data : "";
	snprintf(cname, sizeof(cname), "%s-config", jname);
	if (km_internal_update(ctx, KM_CONFIGMAP, ns, cname, OPERATOR, NULL,
			       set_cm_data, &d, NULL) == HB_ENOENT) {
		cJSON *cm = cJSON_CreateObject();
		cJSON *meta = km_obj_at(cm, "metadata");

		if (meta && !km_set_str(cm, "apiVersion", "v1") &&
		    !km_set_str(cm, "kind", "ConfigMap") &&
		    !km_set_str(meta, "name", cname) &&
		    !km_set_str(meta, "namespace", ns) &&
		    !km_set_str(km_obj_at(meta, "labels"), "app", jname) &&
		    !km_set(meta, "ownerReferences", km_owner_refs(job)) &&
		    !set_cm_data(&d, cm))
			km_internal_create(ctx, KM_CONFIGMAP, cm, OPERATOR,
					   NULL);
		else
			cJSON_Delete(cm);
	}
	hb_buf_free(&host);
	hb_buf_free(&disc);
}

/* ---- the sync ------------------------------------------------------- */

static void jobstate_free(void *p)
{
	free(p);
}

static struct jobstate *jobstate_of(struct km_ctl *c, const char *key,
				    const char *uid)
{
	struct jobstate *js = km_map_get(c->jobs, key);

	if (js && strcmp(js->uid, uid)) {
		/* A new MPIJob with the same name. */
		km_map_del(c->jobs, key);
		free(js);
		js = NULL;
	}
	if (!js) {
		js = calloc(1, sizeof(*js));
		if (!js)
			return NULL;
		snprintf(js->uid, sizeof(js->uid), "%s", uid);
		js->warned_gen = -1;
		if (km_map_put(c->jobs, key, js, NULL)) {
			free(js);
			return NULL;
		}
	}
	return js;
}

/* The replicas of a replica type, with the operator's defaults: 1
 * launcher, 0 workers. */
static int replicas_of(const cJSON *spec, const char *rtype)
{
	const cJSON *r = km_get(km_get(km_get(spec, "mpiReplicaSpecs"), rtype),
				"replicas");

	if (cJSON_IsNumber(r))
		return r->valueint;
	return strcmp(rtype, "Launcher") ? 0 : 1;
}

/* Delete worker pods as cleanUpWorkerPods does (pending and running
 * ones only, with cleanPodPolicy Running). */
static void cleanup_workers(struct km_ctx *ctx, const char *policy,
			    const struct jobpods *pods)
{
	for (size_t i = 0; i < pods->n; i++) {
		const char *role = role_of(pods->v[i]);
		const char *ph = phase_of(pods->v[i]);

		if (!role || strcmp(role, "worker"))
			continue;
		if (policy && !strcmp(policy, "Running") &&
		    strcmp(ph, "Running") && strcmp(ph, "Pending"))
			continue;
		km_internal_delete(ctx, KM_POD, pods->v[i]->ns,
				   pods->v[i]->name);
	}
}

static cJSON *replica_status(cJSON *status, const char *rtype)
{
	cJSON *rs = km_obj_at(status, "replicaStatuses");
	cJSON *r = cJSON_CreateObject();

	if (!rs || !r || km_set(rs, rtype, r))
		return NULL;
	return r;
}

static void set_count(cJSON *rs, const char *key, int n)
{
	if (rs && n)
		km_set_num(rs, key, n);
	else if (rs)
		km_del(rs, key);
}

struct status_write {
	cJSON *status;
};

static int put_status(void *arg, cJSON *obj)
{
	struct status_write *w = arg;

	return km_set(obj, "status", cJSON_Duplicate(w->status, 1));
}

static void sync_mpijob(struct km_ctl *c, const char *ns, const char *name)
{
	struct km_ctx *ctx = c->ctx;
	struct km_obj *obj = km_store_get(ctx->store, KM_MPIJOB, ns, name);
	const cJSON *job, *spec, *rp, *meta, *gen;
	cJSON *status = NULL, *old_status = NULL;
	struct jobpods pods = { NULL, 0 };
	struct owner_filter of;
	struct jobstate *js;
	struct hb_buf msg;
	const char *managed, *uid, *policy, *lcp;
	char key[600], text[1200];
	uint64_t rv;
	int suspended, workers, backoff, failed = 0, succeeded = 0;
	int running_launchers = 0, running_workers = 0, evicted = 0;
	int worker_failed = 0, worker_succeeded = 0, nworkers = 0;
	int job_done, job_failed, restarts = 0, past_restarts;
	const struct km_obj *last_failed = NULL, *done_launcher = NULL;
	const struct km_obj *active_launcher = NULL;
	int64_t now = km_now_ms();

	hb_buf_init(&msg, 64 * 1024);
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if (!obj) {
		/* Gone: forget it. */
		free(km_map_del(c->jobs, key));
		goto out;
	}
	job = obj->tree;
	spec = km_get(job, "spec");
	rp = km_get(spec, "runPolicy");
	meta = km_get(job, "metadata");
	uid = km_str(meta, "uid");
	managed = km_str(rp, "managedBy");
	if (managed && strcmp(managed, OPERATOR_VALUE))
		goto out; /* another controller's job */
	if (km_get(meta, "deletionTimestamp") || !uid)
		goto out;
	js = jobstate_of(c, key, uid);
	if (!js)
		goto out;
	if (km_valid_mpijob_rules(job, &msg) == HB_EINVAL) {
		gen = km_get(meta, "generation");
		if (cJSON_IsNumber(gen) && gen->valuedouble != js->warned_gen) {
			js->warned_gen = gen->valuedouble;
			if (msg.len > 1024) {
				msg.len = 1021;
				hb_buf_puts(&msg, "...");
			}
			record(ctx, job, "Warning", "ValidationError",
			       msg.data);
		}
		goto out;
	}
	status = cJSON_Duplicate(km_get(job, "status"), 1);
	if (!cJSON_IsObject(status)) {
		cJSON_Delete(status);
		status = cJSON_CreateObject();
	}
	old_status = cJSON_Duplicate(status, 1);
	if (!status || !old_status)
		goto out;
	if (!cJSON_GetArraySize(km_get(status, "conditions"))) {
		snprintf(text, sizeof(text), "MPIJob %s/%s is created.", ns,
			 name);
		set_cond(status, "Created", 1, "MPIJobCreated", text);
		record(ctx, job, "Normal", "MPIJobCreated", text);
	}
	policy = km_str(rp, "cleanPodPolicy");
	if (!policy)
		policy = "None";
	of.uid = uid;
	if (km_store_list(ctx->store, KM_POD, ns, NULL, NULL, owner_match, &of,
			  0, &pods.v, &pods.n, NULL, &rv))
		goto out;
	if ((km_cond_true(status, "Succeeded") ||
	     km_cond_true(status, "Failed")) &&
	    km_get(status, "completionTime")) {
		if (!strcmp(policy, "All") || !strcmp(policy, "Running")) {
			cleanup_workers(ctx, policy, &pods);
			set_count(replica_status(status, "Worker"), "active",
				  0);
		}
		goto write;
	}
	suspended = cJSON_IsTrue(km_get(rp, "suspend"));
	if (!km_get(status, "startTime") && !suspended) {
		char ts[32];

		km_timestamp(ts, sizeof(ts), 0);
		km_set_str(status, "startTime", ts);
	}
	/* The launcher "Job": its pods, failures and outcome. */
	for (size_t i = 0; i < pods.n; i++) {
		const char *role = role_of(pods.v[i]);
		const char *ph = phase_of(pods.v[i]);

		if (!role || strcmp(role, "launcher"))
			continue;
		if (!strcmp(ph, "Failed")) {
			failed++;
			last_failed = pods.v[i];
		} else if (!strcmp(ph, "Succeeded")) {
			succeeded++;
			done_launcher = pods.v[i];
		} else {
			active_launcher = pods.v[i];
			if (!strcmp(ph, "Running"))
				running_launchers++;
			restarts += restarts_on_failure(pods.v[i]->tree);
		}
	}
	{
		const cJSON *bl = km_get(rp, "backoffLimit");

		backoff = cJSON_IsNumber(bl) ? bl->valueint : DEFAULT_BACKOFF;
	}
	{
		const cJSON *ads = km_get(rp, "activeDeadlineSeconds");

		if (cJSON_IsNumber(ads) && js->launcher_start && !succeeded &&
		    now >= js->launcher_start +
				    (int64_t)(ads->valuedouble * 1000))
			js->deadline_exceeded = 1;
		else if (cJSON_IsNumber(ads) && js->launcher_start &&
			 !succeeded)
			schedule(c,
				 js->launcher_start +
					 (int64_t)(ads->valuedouble * 1000),
				 W_MPIJOB, ns, name);
	}
	/* pastBackoffLimitOnFailure: with OnFailure the kubelet restarts
	 * containers in place, and the Job counts their restarts. */
	past_restarts = backoff ? restarts >= backoff : restarts > 0;
	job_failed = js->deadline_exceeded || failed > backoff || past_restarts;
	job_done = succeeded > 0 || job_failed;
	workers = replicas_of(spec, "Worker");
	if (job_done && (js->deadline_exceeded || past_restarts) &&
	    active_launcher) {
		/* The Job controller ends the active pods. */
		km_internal_delete(ctx, KM_POD, ns, active_launcher->name);
		active_launcher = NULL;
		running_launchers = 0;
	}
	if (!job_done) {
		ensure_config(ctx, job, workers, &pods);
		if (!suspended) {
			/* Workers: create the missing, remove the extra. */
			for (int i = 0; i < workers; i++) {
				char wname[400];
				struct km_obj *w;

				snprintf(wname, sizeof(wname), "%s-worker-%d",
					 name, i);
				w = km_store_get(ctx->store, KM_POD, ns, wname);
				if (w) {
					km_obj_unref(w);
					continue;
				}
				create_pod(ctx, job,
					   new_pod(job, "Worker", wname, i),
					   "worker");
			}
			for (size_t i = 0; i < pods.n; i++) {
				const char *idx =
					km_str(km_get(km_get(pods.v[i]->tree,
							     "metadata"),
						      "labels"),
					       L_INDEX);
				uint64_t ix;

				if (idx && !km_parse_u64(idx, &ix) &&
				    ix >= (uint64_t)workers)
					km_internal_delete(ctx, KM_POD, ns,
							   pods.v[i]->name);
			}
		}
		lcp = km_str(spec, "launcherCreationPolicy");
		if (!suspended && !active_launcher) {
			int ready = 0;

			for (size_t i = 0; i < pods.n; i++) {
				const char *role = role_of(pods.v[i]);

				if (role && !strcmp(role, "worker") &&
				    pod_ready(pods.v[i]))
					ready++;
			}
			if (!lcp || strcmp(lcp, "WaitForWorkersReady") ||
			    ready >= workers) {
				char lname[400], sfx[8];

				km_rand_suffix(sfx, 5);
				snprintf(lname, sizeof(lname), "%s-launcher-%s",
					 name, sfx);
				if (!js->launcher_start)
					js->launcher_start = now;
				create_pod(ctx, job,
					   new_pod(job, "Launcher", lname, -1),
					   "launcher");
			}
		}
		if (suspended && active_launcher) {
			/* A suspended Job ends its active pods. */
			km_internal_delete(ctx, KM_POD, ns,
					   active_launcher->name);
			running_launchers = 0;
			js->launcher_start = 0;
		}
	}
	if (suspended)
		cleanup_workers(ctx, "All", &pods);
	/* updateMPIJobStatus */
	if (suspended) {
		if (set_cond(status, "Suspended", 1, "MPIJobSuspended",
			     "MPIJob suspended"))
			record(ctx, job, "Normal", "MPIJobSuspended",
			       "MPIJob suspended");
	} else if (km_cond_find(status, "Suspended")) {
		if (set_cond(status, "Suspended", 0, "MPIJobResumed",
			     "MPIJob resumed")) {
			char ts[32];

			record(ctx, job, "Normal", "MPIJobResumed",
			       "MPIJob resumed");
			km_timestamp(ts, sizeof(ts), 0);
			km_set_str(status, "startTime", ts);
		}
	}
	if (failed || succeeded || active_launcher || js->launcher_start) {
		cJSON *ls = replica_status(status, "Launcher");

		set_count(ls, "failed", failed);
		if (succeeded) {
			const char *fin = NULL;
			const cJSON *cs = cJSON_GetArrayItem(
				km_get(km_get(done_launcher->tree, "status"),
				       "containerStatuses"),
				0);

			fin = km_str(km_get(km_get(cs, "state"), "terminated"),
				     "finishedAt");
			set_count(ls, "succeeded", 1);
			snprintf(text, sizeof(text),
				 "MPIJob %s/%s successfully completed.", ns,
				 name);
			if (!km_get(status, "completionTime")) {
				char ts[32];

				km_timestamp(ts, sizeof(ts), 0);
				km_set_str(status, "completionTime",
					   fin ? fin : ts);
			}
			if (set_cond(status, "Succeeded", 1, "MPIJobSucceeded",
				     text))
				record(ctx, job, "Normal", "MPIJobSucceeded",
				       text);
		} else if (job_failed) {
			char reason[128];

			if (js->deadline_exceeded) {
				snprintf(reason, sizeof(reason),
					 "DeadlineExceeded");
				snprintf(text, sizeof(text),
					 "Job was active longer than "
					 "specified deadline");
			} else if (!last_failed) {
				/* Restarts in place: no failed pod to name. */
				snprintf(reason, sizeof(reason),
					 "BackoffLimitExceeded");
				snprintf(text, sizeof(text),
					 "Job has reached the specified "
					 "backoff limit");
			} else {
				const cJSON *pst =
					km_get(last_failed->tree, "status");
				const char *pr = km_str(pst, "reason");
				const char *pm = km_str(pst, "message");

				/* updateMPIJobFailedStatus */
				snprintf(reason, sizeof(reason),
					 "BackoffLimitExceeded/%s",
					 pr ? pr : "");
				snprintf(text, sizeof(text),
					 "Job has reached the specified "
					 "backoff limit: %s",
					 pm ? pm : "");
			}
			if (!km_get(status, "completionTime")) {
				char ts[32];

				km_timestamp(ts, sizeof(ts), 0);
				km_set_str(status, "completionTime", ts);
			}
			if (set_cond(status, "Failed", 1, reason, text))
				record(ctx, job, "Warning", reason, text);
		} else {
			set_count(ls, "active", running_launchers);
		}
	}
	{
		cJSON *ws = replica_status(status, "Worker");

		for (size_t i = 0; i < pods.n; i++) {
			const char *role = role_of(pods.v[i]);
			const char *ph = phase_of(pods.v[i]);

			if (!role || strcmp(role, "worker"))
				continue;
			/* Pods this sync deleted are gone from the list the
			 * real operator reads; count what is still there. */
			if (suspended)
				continue;
			nworkers++;
			if (!strcmp(ph, "Failed")) {
				const char *why = km_str(
					km_get(pods.v[i]->tree, "status"),
					"reason");

				worker_failed++;
				if (why && !strcmp(why, "Evicted"))
					evicted++;
			} else if (!strcmp(ph, "Succeeded")) {
				worker_succeeded++;
			} else if (!strcmp(ph, "Running")) {
				running_workers++;
			}
		}
		set_count(ws, "active", running_workers);
		set_count(ws, "succeeded", worker_succeeded);
		set_count(ws, "failed", worker_failed);
	}
	if (evicted) {
		snprintf(text, sizeof(text), "%d/%d workers are evicted",
			 evicted, nworkers);
		if (set_cond(status, "Failed", 1, "MPIJobEvicted", text))
			record(ctx, job, "Warning", "MPIJobEvicted", text);
	}
	if (suspended) {
		snprintf(text, sizeof(text), "MPIJob %s/%s is suspended.", ns,
			 name);
		set_cond(status, "Running", 0, "MPIJobSuspended", text);
	} else if (running_launchers >= 1 && running_workers == workers &&
		   !job_done) {
		snprintf(text, sizeof(text), "MPIJob %s/%s is running.", ns,
			 name);
		if (set_cond(status, "Running", 1, "MPIJobRunning", text)) {
			snprintf(text, sizeof(text), "MPIJob %s/%s is running",
				 ns, name);
			record(ctx, job, "Normal", "MPIJobRunning", text);
		}
	}
write:
	if (!km_equal(status, old_status)) {
		struct status_write w = { status };

		km_internal_update(ctx, KM_MPIJOB, ns, name, OPERATOR, "status",
				   put_status, &w, NULL);
	}
out:
	jobpods_free(&pods);
	cJSON_Delete(status);
	cJSON_Delete(old_status);
	hb_buf_free(&msg);
	km_obj_unref(obj);
}

/* ---- garbage collection --------------------------------------------- */

/* Delete every pod and ConfigMap in ns owned by uid; the count left. */
static size_t collect(struct km_ctx *ctx, const char *ns, const char *uid)
{
	static const enum km_res deps[] = { KM_POD, KM_CONFIGMAP };
	struct owner_filter of = { uid };
	size_t left = 0;

	for (size_t d = 0; d < sizeof(deps) / sizeof(deps[0]); d++) {
		struct km_obj **v = NULL;
		size_t n = 0;
		uint64_t rv;

		if (km_store_list(ctx->store, deps[d], ns, NULL, NULL,
				  owner_match, &of, 0, &v, &n, NULL, &rv))
			continue;
		for (size_t i = 0; i < n; i++) {
			int rc = km_internal_delete(ctx, deps[d], ns,
						    v[i]->name);

			if (rc && rc != HB_ENOENT)
				left++;
			km_obj_unref(v[i]);
		}
		free(v);
	}
	return left;
}

static void gc(struct km_ctl *c, const char *ns, const char *uid)
{
	int orphan;

	pthread_mutex_lock(&c->mu);
	orphan = km_map_del(c->orphans, uid) != NULL;
	pthread_mutex_unlock(&c->mu);
	if (!orphan)
		collect(c->ctx, ns, uid);
}

static int drop_foreground(void *arg, cJSON *obj)
{
	cJSON *fin = km_get(km_get(obj, "metadata"), "finalizers"), *f;

	(void)arg;
	cJSON_ArrayForEach (f, fin) {
		if (cJSON_IsString(f) &&
		    !strcmp(f->valuestring, "foregroundDeletion")) {
			cJSON_Delete(cJSON_DetachItemViaPointer(fin, f));
			if (!cJSON_GetArraySize(fin))
				km_del(km_get(obj, "metadata"), "finalizers");
			return 0;
		}
	}
	return 1;
}

static int has_finalizer(const cJSON *meta, const char *name)
{
	const cJSON *f;

	cJSON_ArrayForEach (f, km_get(meta, "finalizers")) {
		if (cJSON_IsString(f) && !strcmp(f->valuestring, name))
			return 1;
	}
	return 0;
}

/* An owner being deleted in the foreground: dependents first, then the
 * finalizer, then the owner. */
static void foreground(struct km_ctl *c, const char *which, const char *key)
{
	enum km_res r = which[0] == 'm' ? KM_MPIJOB : KM_TRAINJOB;
	const char *slash = strchr(key, '/');
	char ns[300];
	struct km_obj *o, *after = NULL;
	const cJSON *meta, *fin;

	if (!slash || (size_t)(slash - key) >= sizeof(ns))
		return;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	o = km_store_get(c->ctx->store, r, ns, slash + 1);
	if (!o)
		return;
	meta = km_get(o->tree, "metadata");
	if (km_get(meta, "deletionTimestamp") && km_str(meta, "uid") &&
	    has_finalizer(meta, "foregroundDeletion")) {
		if (collect(c->ctx, ns, km_str(meta, "uid")) == 0)
			km_internal_update(c->ctx, r, ns, slash + 1,
					   "garbage-collector", NULL,
					   drop_foreground, NULL, &after);
		if (after) {
			fin = km_get(km_get(after->tree, "metadata"),
				     "finalizers");
			if (!cJSON_GetArraySize(fin))
				km_store_delete(c->ctx->store, r, ns, slash + 1,
						after->rv, NULL);
			km_obj_unref(after);
		}
	}
	km_obj_unref(o);
}

/* ---- eviction ------------------------------------------------------- */

static int evict_pod(void *arg, cJSON *pod)
{
	cJSON *st = km_obj_at(pod, "status");

	(void)arg;
	if (!st || km_set_str(st, "phase", "Failed") ||
	    km_set_str(st, "reason", "Evicted") ||
	    km_set_str(st, "message", "The node was low on resource: memory. "))
		return HB_ENOMEM;
	km_del(st, "conditions");
	return 0;
}

int km_ctl_evict(struct km_ctl *c, const char *ns, const char *name)
{
	return km_internal_update(c->ctx, KM_POD, ns, name, "kubelet", "status",
				  evict_pod, NULL, NULL);
}

/* ---- the thread ----------------------------------------------------- */

static void process(struct km_ctl *c, struct item *it)
{
	int64_t next = 0;

	switch (it->kind) {
	case W_MPIJOB:
		sync_mpijob(c, it->ns, it->name);
		break;
	case W_POD:
		km_kubelet_sync(c->ctx->kubelet, it->ns, it->name, &next);
		if (next)
			schedule(c, next, W_POD, it->ns, it->name);
		break;
	case W_GC:
		gc(c, it->ns, it->name);
		break;
	case W_FOREGROUND:
		foreground(c, it->ns, it->name);
		break;
	case W_KUEUE:
		km_kueue_sync(c->ctx);
		break;
	}
}

static void *run(void *arg)
{
	struct km_ctl *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct item it;
		char key[700];
		int64_t now = km_now_ms(), wait;
		struct timespec ts;

		fire_timers_locked(c, now);
		if (c->qlen) {
			it = c->q[c->qhead];
			c->qhead = (c->qhead + 1) % c->qcap;
			c->qlen--;
			key_of(key, sizeof(key), it.kind, it.ns, it.name);
			km_map_del(c->pending, key);
			pthread_mutex_unlock(&c->mu);
			process(c, &it);
			free(it.ns);
			free(it.name);
			km_kubelet_reap(c->ctx->kubelet);
			pthread_mutex_lock(&c->mu);
			continue;
		}
		wait = km_kubelet_busy(c->ctx->kubelet) ? 50 : 1000;
		if (c->nheap && c->heap[0].due - now < wait)
			wait = c->heap[0].due - now;
		if (wait > 0) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += wait / 1000;
			ts.tv_nsec += (wait % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&c->cond, &c->mu, &ts);
		}
		pthread_mutex_unlock(&c->mu);
		km_kubelet_reap(c->ctx->kubelet);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

struct km_ctl *km_ctl_new(struct km_ctx *ctx)
{
	struct km_ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ctx = ctx;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->pending = km_map_new();
	c->orphans = km_map_new();
	c->jobs = km_map_new();
	if (!c->pending || !c->orphans || !c->jobs) {
		km_ctl_free(c);
		return NULL;
	}
	return c;
}

int km_ctl_start(struct km_ctl *c)
{
	if (pthread_create(&c->th, NULL, run, c))
		return HB_EIO;
	c->started = 1;
	return 0;
}

void km_ctl_free(struct km_ctl *c)
{
	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->th, NULL);
	}
	for (size_t i = 0; i < c->qlen; i++) {
		free(c->q[(c->qhead + i) % c->qcap].ns);
		free(c->q[(c->qhead + i) % c->qcap].name);
	}
	free(c->q);
	for (size_t i = 0; i < c->nheap; i++) {
		free(c->heap[i].it.ns);
		free(c->heap[i].it.name);
	}
	free(c->heap);
	km_map_free(c->pending, NULL);
	km_map_free(c->orphans, NULL);
	km_map_free(c->jobs, jobstate_free);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cond);
	free(c);
}
