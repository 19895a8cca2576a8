/*
 * podstatus.c - the kubelet's writes of a pod's status: its phase, its
 * conditions and the state of each init and main container (waiting,
 * running, terminated), worded as the real kubelet words them.
 *
 * Each writer is a km_mutate_fn for km_internal_update(), with a struct
 * km_podst saying what happened.  Container statuses are made for every
 * container the first time (waiting: PodInitializing while init
 * containers are due, else ContainerCreating) and then changed one at a
 * time; the conditions are computed from them: Initialized is False
 * (ContainersNotInitialized, "containers with incomplete status: [...]")
 * while an init container has not terminated with 0.
 */
#include <stdio.h>
#include <string.h>

#include "kubemu.h"

#define NODE "kubemu-node"

static cJSON *condition(const char *type, const char *status,
			const char *reason, const char *msg, const char *ts)
{
	cJSON *c = cJSON_CreateObject();

	if (!c || km_set_str(c, "type", type) ||
	    km_set_str(c, "status", status) ||
	    km_set(c, "lastProbeTime", cJSON_CreateNull()) ||
	    km_set_str(c, "lastTransitionTime", ts) ||
	    (reason && km_set_str(c, "reason", reason)) ||
	    (msg && km_set_str(c, "message", msg))) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

/* Whether status entry s is terminated with exit code 0. */
static int completed(const cJSON *s)
{
	const cJSON *t = km_get(km_get(s, "state"), "terminated");
	const cJSON *code = km_get(t, "exitCode");

	return t && cJSON_IsNumber(code) && code->valueint == 0;
}

/* "[a b]": the names of the containers of spec list key (only the init
 * containers whose status is not completed, when statuses is given). */
static void names(const cJSON *spec, const char *key, const cJSON *statuses,
		  char *buf, size_t cap)
{
	const cJSON *c;
	size_t n = 1;
	int i = 0;

	snprintf(buf, cap, "[");
	cJSON_ArrayForEach (c, km_get(spec, key)) {
		const cJSON *s = cJSON_GetArrayItem(statuses, i++);

		if (statuses && completed(s))
			continue;
		n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s",
				      n > 1 ? " " : "",
				      km_str(c, "name") ?: "");
		if (n >= cap)
			return;
	}
	snprintf(buf + n, cap - n, "]");
}

/*
 * The conditions: Initialized from the init containers' statuses; Ready
 * and ContainersReady True when ready, else False with why
 * (ContainersNotReady, naming the containers; PodCompleted).
 */
static int set_conditions(cJSON *pod, cJSON *st, int ready, const char *why,
			  const char *ts)
{
	const cJSON *spec = km_get(pod, "spec");
	cJSON *conds = cJSON_CreateArray();
	const char *r = ready ? "True" : "False";
	char inc[1024] = "[]", unready[1024];
	const char *msg = NULL;

	if (!conds)
		return HB_ENOMEM;
	if (cJSON_GetArraySize(km_get(spec, "initContainers")))
		names(spec, "initContainers",
		      km_get(st, "initContainerStatuses"), inc, sizeof(inc));
	if (!ready && why && !strcmp(why, "ContainersNotReady")) {
		char names_[1000];

		names(spec, "containers", NULL, names_, sizeof(names_));
		snprintf(unready, sizeof(unready),
			 "containers with unready status: %.990s", names_);
		msg = unready;
	}
	if (strcmp(inc, "[]")) {
		char m[1100];

		snprintf(m, sizeof(m),
			 "containers with incomplete status: %.1000s", inc);
		cJSON_AddItemToArray(
			conds, condition("Initialized", "False",
					 "ContainersNotInitialized", m, ts));
	} else {
		cJSON_AddItemToArray(conds, condition("Initialized", "True",
						      NULL, NULL, ts));
	}
	cJSON_AddItemToArray(
		conds, condition("Ready", r, ready ? NULL : why, msg, ts));
	cJSON_AddItemToArray(conds, condition("ContainersReady", r,
					      ready ? NULL : why, msg, ts));
	cJSON_AddItemToArray(conds,
			     condition("PodScheduled", "True", NULL, NULL, ts));
	return km_set(st, "conditions", conds);
}

/* A status entry for container c, waiting with reason. */
static cJSON *waiting_entry(const cJSON *c, const char *reason)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *w = km_obj_at(km_obj_at(s, "state"), "waiting");

	/* Members are made in place: a failure frees them with s. */
	if (!w || km_set_str(w, "reason", reason) ||
	    km_set_str(s, "name", km_str(c, "name") ?: "") ||
	    km_set(s, "lastState", cJSON_CreateObject()) ||
	    km_set(s, "ready", cJSON_CreateFalse()) ||
	    km_set_num(s, "restartCount", 0) ||
	    km_set_str(s, "image", km_str(c, "image") ?: "") ||
	    km_set_str(s, "imageID", "") ||
	    km_set(s, "started", cJSON_CreateFalse())) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

/* status.key with one entry per container of spec list skey, made
 * waiting with reason unless it already has them. */
static cJSON *statuses(cJSON *pod, cJSON *st, const char *key, const char *skey,
		       const char *reason)
{
	const cJSON *cs = km_get(km_get(pod, "spec"), skey), *c;
	cJSON *arr = km_get(st, key);

	if (cJSON_IsArray(arr) &&
	    cJSON_GetArraySize(arr) == cJSON_GetArraySize(cs))
		return arr;
	arr = cJSON_CreateArray();
	if (!arr || km_set(st, key, arr))
		return NULL;
	cJSON_ArrayForEach (c, cs) {
		cJSON *s = waiting_entry(c, reason);

		if (!s)
			return NULL;
		cJSON_AddItemToArray(arr, s);
	}
	return arr;
}

/* Both lists of statuses, made if missing. */
static int ensure(cJSON *pod, cJSON *st)
{
	int ninit = cJSON_GetArraySize(
		km_get(km_get(pod, "spec"), "initContainers"));

	if (ninit && !statuses(pod, st, "initContainerStatuses",
			       "initContainers", "PodInitializing"))
		return HB_ENOMEM;
	if (!statuses(pod, st, "containerStatuses", "containers",
		      ninit ? "PodInitializing" : "ContainerCreating"))
		return HB_ENOMEM;
	return 0;
}

static int set_running(cJSON *s, const char *cid, int ready, const char *ts)
{
	cJSON *run;

	km_del(s, "state");
	run = km_obj_at(km_obj_at(s, "state"), "running");
	if (!run || km_set_str(run, "startedAt", ts) ||
	    km_set(s, "ready", cJSON_CreateBool(ready)) ||
	    km_set_str(s, "containerID", cid) ||
	    km_set(s, "started", cJSON_CreateTrue()))
		return HB_ENOMEM;
	return 0;
}

/* state.waiting of status entry s, in place of its state; NULL on
 * ENOMEM. */
static cJSON *set_waiting(cJSON *s, const char *reason, const char *message)
{
	cJSON *w;

	km_del(s, "state");
	w = km_obj_at(km_obj_at(s, "state"), "waiting");
	if (!w || km_set_str(w, "reason", reason) ||
	    (message && km_set_str(w, "message", message)))
		return NULL;
	return w;
}

static int set_terminated(cJSON *s, int code, const char *reason,
			  const char *message, const char *ts)
{
	cJSON *state = km_obj_at(s, "state"), *t = cJSON_CreateObject();
	const char *started = km_str(km_get(state, "running"), "startedAt");
	const char *cid = km_str(s, "containerID");

	if (!state || !t || km_set_num(t, "exitCode", code) ||
	    km_set_str(t, "reason", reason) ||
	    (message && km_set_str(t, "message", message)) ||
	    km_set_str(t, "startedAt", started ? started : ts) ||
	    km_set_str(t, "finishedAt", ts) ||
	    (cid && km_set_str(t, "containerID", cid))) {
		cJSON_Delete(t);
		return HB_ENOMEM;
	}
	km_del(state, "running");
	km_del(state, "waiting");
	if (km_set(state, "terminated", t) ||
	    km_set(s, "started", cJSON_CreateFalse()))
		return HB_ENOMEM;
	return 0;
}

/* Where the pod runs: the node (spec, when the scheduler has not set
 * one), the IPs and the start time. */
static int placed(cJSON *pod, cJSON *st, const char *ts)
{
	cJSON *spec = km_obj_at(pod, "spec"), *ips, *ip;

	if (!spec ||
	    (!km_str(spec, "nodeName") && km_set_str(spec, "nodeName", NODE)))
		return HB_ENOMEM;
	ips = cJSON_CreateArray();
	ip = cJSON_CreateObject();
	if (!ips || !ip || km_set_str(ip, "ip", "127.0.0.1")) {
		cJSON_Delete(ips);
		cJSON_Delete(ip);
		return HB_ENOMEM;
	}
	cJSON_AddItemToArray(ips, ip);
	if (km_set_str(st, "hostIP", "127.0.0.1") ||
	    km_set_str(st, "podIP", "127.0.0.1") || km_set(st, "podIPs", ips) ||
	    (!km_str(st, "startTime") && km_set_str(st, "startTime", ts)))
		return HB_ENOMEM;
	return 0;
}

int km_podst_running(void *arg, cJSON *pod)
{
	const struct km_podst *a = arg;
	cJSON *st = km_obj_at(pod, "status"), *s;
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	if (!st || placed(pod, st, ts))
		return HB_ENOMEM;
	/* The main containers start afresh; init containers that did not
	 * run (simulated pods) are taken to have succeeded at once. */
	km_del(st, "containerStatuses");
	if (ensure(pod, st))
		return HB_ENOMEM;
	cJSON_ArrayForEach (s, km_get(st, "initContainerStatuses")) {
		if (completed(s))
			continue;
		if (km_set(s, "ready", cJSON_CreateTrue()) ||
		    set_terminated(s, 0, "Completed", NULL, ts))
			return HB_ENOMEM;
	}
	cJSON_ArrayForEach (s, km_get(st, "containerStatuses")) {
		if (set_running(s, a->cid, 1, ts))
			return HB_ENOMEM;
	}
	if (km_set_str(st, "phase", "Running") ||
	    set_conditions(pod, st, 1, NULL, ts))
		return HB_ENOMEM;
	return 0;
}

int km_podst_ended(void *arg, cJSON *pod)
{
	const struct km_podst *a = arg;
	cJSON *st = km_obj_at(pod, "status"), *s;
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	if (!st)
		return HB_ENOMEM;
	cJSON_ArrayForEach (s, km_get(st, "containerStatuses")) {
		if (set_terminated(s, a->code, a->reason, a->message, ts) ||
		    km_set(s, "ready", cJSON_CreateFalse()))
			return HB_ENOMEM;
	}
	if (km_set_str(st, "phase", a->code ? "Failed" : "Succeeded") ||
	    set_conditions(pod, st, 0, "PodCompleted", ts))
		return HB_ENOMEM;
	return 0;
}

/* The status entry of init container index, the lists made if missing;
 * NULL on ENOMEM. */
static cJSON *init_entry(cJSON *pod, cJSON *st, int index)
{
	if (ensure(pod, st))
		return NULL;
	return cJSON_GetArrayItem(km_get(st, "initContainerStatuses"), index);
}

int km_podst_init_running(void *arg, cJSON *pod)
{
	const struct km_podst *a = arg;
	cJSON *st = km_obj_at(pod, "status");
	cJSON *s;
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	if (!st || placed(pod, st, ts))
		return HB_ENOMEM;
	s = init_entry(pod, st, a->index);
	if (!s || set_running(s, a->cid, 0, ts) ||
	    km_set_str(st, "phase", "Pending") ||
	    set_conditions(pod, st, 0, "ContainersNotReady", ts))
		return HB_ENOMEM;
	return 0;
}

int km_podst_init_ended(void *arg, cJSON *pod)
{
	const struct km_podst *a = arg;
	cJSON *st = km_obj_at(pod, "status");
	cJSON *s;
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	s = st ? init_entry(pod, st, a->index) : NULL;
	if (!s || set_terminated(s, a->code, a->reason, a->message, ts) ||
	    km_set(s, "ready", cJSON_CreateBool(a->code == 0)))
		return HB_ENOMEM;
	if (a->restart) {
		/* Restarted after a back-off: what ended is lastState. */
		const cJSON *rc = km_get(s, "restartCount");
		int n = cJSON_IsNumber(rc) ? rc->valueint : 0;
		cJSON *t = cJSON_DetachItemFromObjectCaseSensitive(
			km_get(s, "state"), "terminated");

		km_del(s, "lastState");
		if (!t || km_set(km_obj_at(s, "lastState"), "terminated", t) ||
		    !set_waiting(s, "CrashLoopBackOff", a->message) ||
		    km_set_num(s, "restartCount", n + 1))
			return HB_ENOMEM;
	}
	if (km_set_str(st, "phase", a->fail ? "Failed" : "Pending") ||
	    set_conditions(pod, st, 0,
			   a->fail ? "PodCompleted" : "ContainersNotReady", ts))
		return HB_ENOMEM;
	return 0;
}

int km_podst_waiting(void *arg, cJSON *pod)
{
	const struct km_podst *a = arg;
	cJSON *st = km_obj_at(pod, "status"), *s = NULL;
	const cJSON *w;
	static const char *const lists[] = { "initContainerStatuses",
					     "containerStatuses" };
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	if (!st || ensure(pod, st))
		return HB_ENOMEM;
	for (size_t i = 0; i < 2 && !s; i++) {
		cJSON *c;

		cJSON_ArrayForEach (c, km_get(st, lists[i])) {
			if (km_str(c, "name") &&
			    !strcmp(km_str(c, "name"), a->container)) {
				s = c;
				break;
			}
		}
	}
	if (!s)
		return 1;
	w = km_get(km_get(s, "state"), "waiting");
	if (km_str(w, "reason") && !strcmp(km_str(w, "reason"), a->reason) &&
	    km_str(w, "message") && a->message &&
	    !strcmp(km_str(w, "message"), a->message))
		return 1; /* said already */
	if (!set_waiting(s, a->reason, a->message) ||
	    km_set(s, "ready", cJSON_CreateFalse()) ||
	    km_set(s, "started", cJSON_CreateFalse()) ||
	    km_set_str(st, "phase", "Pending") ||
	    set_conditions(pod, st, 0, "ContainersNotReady", ts))
		return HB_ENOMEM;
	return 0;
}

int km_podst_unschedulable(void *arg, cJSON *pod)
{
	cJSON *st = km_obj_at(pod, "status"), *conds, *c;
	const cJSON *old = cJSON_GetArrayItem(km_get(st, "conditions"), 0);
	const char *msg = arg;
	char ts[32];

	if (!st)
		return HB_ENOMEM;
	if (km_str(old, "reason") &&
	    !strcmp(km_str(old, "reason"), "Unschedulable") &&
	    km_str(old, "message") && !strcmp(km_str(old, "message"), msg))
		return 1; /* said already */
	km_timestamp(ts, sizeof(ts), 0);
	conds = cJSON_CreateArray();
	c = condition("PodScheduled", "False", "Unschedulable", msg, ts);
	if (!conds || !c) {
		cJSON_Delete(conds);
		cJSON_Delete(c);
		return HB_ENOMEM;
	}
	cJSON_AddItemToArray(conds, c);
	return km_set(st, "conditions", conds);
}
