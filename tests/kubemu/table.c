/*
 * table.c - pods as a meta.k8s.io/v1 Table, the server-side printing that
 * kubectl get asks for (Accept: application/json;as=Table;...): the
 * columns and cells of the API server's pod printer (printPod in
 * pkg/printers/internalversion), so that kubectl shows READY, STATUS
 * (Init:0/2, Init:Error, PodInitializing, CreateContainerConfigError,
 * Completed, Terminating, ...), RESTARTS and AGE as with a cluster.
 * Other resources are answered as JSON, and kubectl prints them itself.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hpcbridge/timefmt.h"
#include "kubemu.h"

int km_table_wanted(const char *accept)
{
	return accept && strstr(accept, "as=Table") &&
	       strstr(accept, "g=meta.k8s.io");
}

/* duration.HumanDuration of the time since an RFC 3339 timestamp. */
static void since(const char *ts, char *out, size_t cap)
{
	int64_t t, d, m, h;

	if (!ts || hb_time_rfc3339_parse(ts, &t)) {
		snprintf(out, cap, "<unknown>");
		return;
	}
	d = (int64_t)time(NULL) - t;
	m = d / 60;
	h = d / 3600;
	if (d < -1)
		snprintf(out, cap, "<invalid>");
	else if (d < 0)
		snprintf(out, cap, "0s");
	else if (d < 120)
		snprintf(out, cap, "%llds", (long long)d);
	else if (m < 10 && d % 60)
		snprintf(out, cap, "%lldm%llds", (long long)m,
			 (long long)(d % 60));
	else if (m < 180)
		snprintf(out, cap, "%lldm", (long long)m);
	else if (h < 8 && m % 60)
		snprintf(out, cap, "%lldh%lldm", (long long)h,
			 (long long)(m % 60));
	else if (h < 48)
		snprintf(out, cap, "%lldh", (long long)h);
	else if (h < 24 * 8 && h % 24)
		snprintf(out, cap, "%lldd%lldh", (long long)(h / 24),
			 (long long)(h % 24));
	else
		snprintf(out, cap, "%lldd", (long long)(h / 24));
}

static const cJSON *state_of(const cJSON *s, const char *which)
{
	return km_get(km_get(s, "state"), which);
}

/* The "Init:..." status while init containers are not all done (1), as
 * printPod words it; 0 when they are. */
static int init_status(const cJSON *pod, char *reason, size_t cap)
{
	const cJSON *ics =
		km_get(km_get(pod, "status"), "initContainerStatuses");
	int ninit = cJSON_GetArraySize(
		km_get(km_get(pod, "spec"), "initContainers"));
	const cJSON *s;
	int i = 0;

	cJSON_ArrayForEach (s, ics) {
		const cJSON *t = state_of(s, "terminated");
		const cJSON *w = state_of(s, "waiting");
		const cJSON *code = km_get(t, "exitCode");

		if (t && cJSON_IsNumber(code) && code->valueint == 0) {
			i++;
			continue;
		}
		if (t && km_str(t, "reason") && *km_str(t, "reason"))
			snprintf(reason, cap, "Init:%s", km_str(t, "reason"));
		else if (t)
			snprintf(reason, cap, "Init:ExitCode:%d",
				 cJSON_IsNumber(code) ? code->valueint : 0);
		else if (km_str(w, "reason") && *km_str(w, "reason") &&
			 strcmp(km_str(w, "reason"), "PodInitializing"))
			snprintf(reason, cap, "Init:%s", km_str(w, "reason"));
		else
			snprintf(reason, cap, "Init:%d/%d", i, ninit);
		return 1;
	}
	return 0;
}

/* One row: NAME READY STATUS RESTARTS AGE IP NODE NOMINATED READINESS. */
static cJSON *pod_row(const cJSON *pod)
{
	const cJSON *st = km_get(pod, "status"), *spec = km_get(pod, "spec");
	const cJSON *meta = km_get(pod, "metadata"), *s, *o;
	const char *phase = km_str(st, "phase") ?: "";
	const char *last = NULL;
	char reason[300], ready[32], restarts[80], age[32], ago[32];
	int nready = 0, nrestarts = 0, running = 0, initializing;
	cJSON *row = cJSON_CreateObject(), *cells, *obj;

	snprintf(reason, sizeof(reason), "%s", km_str(st, "reason") ?: phase);
	cJSON_ArrayForEach (s, km_get(st, "initContainerStatuses")) {
		const cJSON *rc = km_get(s, "restartCount");

		nrestarts += cJSON_IsNumber(rc) ? rc->valueint : 0;
		if (km_get(km_get(s, "lastState"), "terminated"))
			last = km_str(
				km_get(km_get(s, "lastState"), "terminated"),
				"finishedAt");
	}
	initializing = init_status(pod, reason, sizeof(reason));
	if (!initializing || km_cond_true(st, "Initialized")) {
		int n = cJSON_GetArraySize(km_get(st, "containerStatuses"));

		nrestarts = 0;
		last = NULL;
		for (int i = n - 1; i >= 0; i--) {
			const cJSON *c = cJSON_GetArrayItem(
				km_get(st, "containerStatuses"), i);
			const cJSON *w = state_of(c, "waiting");
			const cJSON *t = state_of(c, "terminated");
			const cJSON *rc = km_get(c, "restartCount");

			nrestarts += cJSON_IsNumber(rc) ? rc->valueint : 0;
			if (km_get(km_get(c, "lastState"), "terminated"))
				last = km_str(km_get(km_get(c, "lastState"),
						     "terminated"),
					      "finishedAt");
			if (km_str(w, "reason") && *km_str(w, "reason"))
				snprintf(reason, sizeof(reason), "%s",
					 km_str(w, "reason"));
			else if (km_str(t, "reason") && *km_str(t, "reason"))
				snprintf(reason, sizeof(reason), "%s",
					 km_str(t, "reason"));
			else if (t)
				snprintf(reason, sizeof(reason), "ExitCode:%d",
					 km_get(t, "exitCode")
						 ? km_get(t, "exitCode")
							   ->valueint
						 : 0);
			else if (cJSON_IsTrue(km_get(c, "ready")) &&
				 state_of(c, "running")) {
				running = 1;
				nready++;
			}
		}
		if (!strcmp(reason, "Completed") && running)
			snprintf(reason, sizeof(reason), "%s",
				 km_cond_true(st, "Ready") ? "Running"
							   : "NotReady");
	}
	if (km_get(meta, "deletionTimestamp") && strcmp(phase, "Succeeded") &&
	    strcmp(phase, "Failed"))
		snprintf(reason, sizeof(reason), "Terminating");
	snprintf(ready, sizeof(ready), "%d/%d", nready,
		 cJSON_GetArraySize(km_get(spec, "containers")));
	since(last, ago, sizeof(ago));
	if (nrestarts && last)
		snprintf(restarts, sizeof(restarts), "%d (%s ago)", nrestarts,
			 ago);
	else
		snprintf(restarts, sizeof(restarts), "%d", nrestarts);
	since(km_str(meta, "creationTimestamp"), age, sizeof(age));
	cells = cJSON_CreateArray();
	if (!row || !cells || km_set(row, "cells", cells)) {
		cJSON_Delete(row);
		return NULL;
	}
	{
		const char *ip = km_str(
			cJSON_GetArrayItem(km_get(st, "podIPs"), 0), "ip");
		const char *v[] = { km_str(meta, "name") ?: "",
				    ready,
				    reason,
				    restarts,
				    age,
				    ip ?: "<none>",
				    km_str(spec, "nodeName") ?: "<none>",
				    km_str(st, "nominatedNodeName") ?: "<none>",
				    "<none>" };

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			cJSON_AddItemToArray(cells, cJSON_CreateString(v[i]));
	}
	/* includeObject=Metadata, the default. */
	obj = km_obj_at(row, "object");
	o = km_get(pod, "metadata");
	if (!obj || km_set_str(obj, "kind", "PartialObjectMetadata") ||
	    km_set_str(obj, "apiVersion", "meta.k8s.io/v1") ||
	    km_set(obj, "metadata", cJSON_Duplicate(o, 1))) {
		cJSON_Delete(row);
		return NULL;
	}
	return row;
}

static int column(cJSON *cols, const char *name, const char *format,
		  int priority, const char *desc)
{
	cJSON *c = cJSON_CreateObject();

	if (!c || !cJSON_AddItemToArray(cols, c)) {
		cJSON_Delete(c);
		return HB_ENOMEM;
	}
	if (km_set_str(c, "name", name) || km_set_str(c, "type", "string") ||
	    km_set_str(c, "format", format) ||
	    km_set_str(c, "description", desc) ||
	    km_set_num(c, "priority", priority))
		return HB_ENOMEM;
	return 0;
}

cJSON *km_table_pods(struct km_obj *const *pods, size_t n, uint64_t rv,
		     const char *cont, size_t left)
{
	cJSON *t = cJSON_CreateObject(), *meta, *cols, *rows;
	char buf[32];

	meta = km_obj_at(t, "metadata");
	cols = cJSON_CreateArray();
	if (!meta || km_set(t, "columnDefinitions", cols))
		goto fail;
	rows = cJSON_CreateArray();
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)rv);
	if (km_set_str(t, "kind", "Table") ||
	    km_set_str(t, "apiVersion", "meta.k8s.io/v1") ||
	    km_set_str(meta, "resourceVersion", buf) ||
	    (cont && (km_set_str(meta, "continue", cont) ||
		      km_set_num(meta, "remainingItemCount", (double)left))) ||
	    km_set(t, "rows", rows) ||
	    column(cols, "Name", "name", 0,
		   "Name must be unique within a namespace.") ||
	    column(cols, "Ready", "", 0,
		   "The aggregate readiness state of this pod for accepting "
		   "traffic.") ||
	    column(cols, "Status", "", 0,
		   "The aggregate status of the containers in this pod.") ||
	    column(cols, "Restarts", "", 0,
		   "The number of times the containers in this pod have been "
		   "restarted and when the last container in this pod has "
		   "restarted.") ||
	    column(cols, "Age", "", 0,
		   "CreationTimestamp is a timestamp representing the server "
		   "time when this object was created.") ||
	    column(cols, "IP", "", 1,
		   "IP address allocated to the pod. Routable at least within "
		   "the cluster. Empty if not yet allocated.") ||
	    column(cols, "Node", "", 1,
		   "NodeName is a request to schedule this pod onto a specific "
		   "node.") ||
	    column(cols, "Nominated Node", "", 1,
		   "nominatedNodeName is set only when this pod preempts other "
		   "pods on the node.") ||
	    column(cols, "Readiness Gates", "", 1,
		   "If specified, all readiness gates will be evaluated for "
		   "pod readiness."))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		cJSON *row = pod_row(pods[i]->tree);

		if (!row || !cJSON_AddItemToArray(rows, row)) {
			cJSON_Delete(row);
			goto fail;
		}
	}
	return t;
fail:
	cJSON_Delete(t);
	return NULL;
}
