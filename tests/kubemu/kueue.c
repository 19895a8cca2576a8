/*
 * kueue.c - an emulated Kueue (kueue.x-k8s.io/v1beta1): the MPIJob
 * integration (webhook default, Workload per job, start and stop of the
 * job), quota reservation and admission in ClusterQueues, preemption
 * within a ClusterQueue, queue status counts, and the visibility API's
 * pending workloads.
 *
 * One pass (km_kueue_sync) runs on the controller thread whenever an
 * MPIJob or a Kueue object changes: it brings every Workload in line with
 * its job, then, per ClusterQueue, admits pending workloads in order
 * (priority, then creation) while their requests fit the nominal quota
 * left by the admitted ones, evicting lower-priority workloads when the
 * preemption policy allows.  Everything is recomputed from the store, so
 * the pass holds no state and the visibility API (on server threads)
 * computes the same order.  What is not emulated is listed in
 * docs/emulator.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "kubemu.h"

#define MANAGER	      "kueue-manager"
#define L_QUEUE	      "kueue.x-k8s.io/queue-name"
#define L_PRIO	      "kueue.x-k8s.io/priority-class"
#define L_JOB_UID     "kueue.x-k8s.io/job-uid"
#define WPC_SOURCE    "kueue.x-k8s.io/workloadpriorityclass"
#define VIS_PREFIX    "/apis/visibility.kueue.x-k8s.io/v1beta1/"
#define MAX_CELLS     64 /* (flavor, resource) pairs of a ClusterQueue */
#define MAX_RES	      16 /* resources one workload asks for */
#define DEFAULT_LIMIT 1000

/* ---- small helpers -------------------------------------------------- */

static const char *label(const cJSON *obj, const char *key)
{
	return km_str(km_get(km_get(obj, "metadata"), "labels"), key);
}

static const cJSON *find_cond(const cJSON *obj, const char *type)
{
	return km_cond_find(km_get(obj, "status"), type);
}

static int cond_true(const cJSON *obj, const char *type)
{
	return km_cond_true(km_get(obj, "status"), type);
}

/* meta.SetStatusCondition on status.conditions: the transition time
 * changes only with the status.  1 when something changed. */
static int set_cond(cJSON *obj, const char *type, int on, const char *reason,
		    const char *msg)
{
	cJSON *st = km_obj_at(obj, "status"), *conds, *c = NULL;
	const cJSON *gen = km_get(km_get(obj, "metadata"), "generation");
	const char *s = on ? "True" : "False";
	char ts[32];

	if (!st)
		return 0;
	conds = km_get(st, "conditions");
	if (!cJSON_IsArray(conds)) {
		conds = cJSON_CreateArray();
		if (km_set(st, "conditions", conds))
			return 0;
	}
	cJSON_ArrayForEach (c, conds) {
		const char *t = km_str(c, "type");

		if (t && !strcmp(t, type))
			break;
	}
	if (c && !strcmp(km_str(c, "status") ? km_str(c, "status") : "", s) &&
	    !strcmp(km_str(c, "reason") ? km_str(c, "reason") : "", reason) &&
	    !strcmp(km_str(c, "message") ? km_str(c, "message") : "", msg))
		return 0;
	if (!c) {
		c = cJSON_CreateObject();
		if (!c)
			return 0;
		cJSON_AddItemToArray(conds, c);
		km_set_str(c, "type", type);
	}
	if (!km_str(c, "status") || strcmp(km_str(c, "status"), s)) {
		km_timestamp(ts, sizeof(ts), 0);
		km_set_str(c, "lastTransitionTime", ts);
	}
	km_set_str(c, "status", s);
	km_set_str(c, "reason", reason);
	km_set_str(c, "message", msg);
	if (cJSON_IsNumber(gen))
		km_set_num(c, "observedGeneration", gen->valuedouble);
	return 1;
}

/* The same as a Kubernetes quantity, in its shortest exact form. */
static void fmt_qty(const char *key, uint64_t v, char out[32])
{
	static const char *const suf[] = { "Ki", "Mi", "Gi", "Ti" };
	int k = -1;

	if (!km_qty_is_bytes(key)) {
		if (v % 1000)
			snprintf(out, 32, "%llum", (unsigned long long)v);
		else
			snprintf(out, 32, "%llu", (unsigned long long)v / 1000);
		return;
	}
	while (v && k < 3 && v % 1024 == 0) {
		v /= 1024;
		k++;
	}
	snprintf(out, 32, "%llu%s", (unsigned long long)v,
		 k >= 0 ? suf[k] : "");
}

/* A JSON value quota reads: a string or a number. */
static uint64_t qty_json(const char *key, const cJSON *v)
{
	char buf[32];

	if (cJSON_IsNumber(v)) {
		snprintf(buf, sizeof(buf), "%.0f", v->valuedouble);
		return km_qty(key, buf);
	}
	return cJSON_IsString(v) ? km_qty(key, v->valuestring) : 0;
}

/* ---- workloads as one pass sees them -------------------------------- */

struct req {
	char name[64];
	uint64_t v;
};

struct wl {
	struct km_obj *o;
	const char *queue;   /* spec.queueName */
	const char *cq;	     /* the ClusterQueue its LocalQueue names */
	const char *created; /* creationTimestamp */
	double prio;
	int reserved; /* QuotaReserved True */
	int finished;
	struct req req[MAX_RES];
	size_t nreq;
};

/* Add v of resource name to the list (at most MAX_RES names). */
static void req_add(struct req *r, size_t *n, const char *name, uint64_t v)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp(r[i].name, name))
			break;
	if (i == *n) {
		if (i == MAX_RES)
			return;
		snprintf(r[i].name, sizeof(r[i].name), "%s", name);
		r[i].v = 0;
		(*n)++;
	}
	r[i].v += v;
}

/* What one pod set asks for in all: count times the sum over the
 * template's containers of each request (the limit when no request). */
static void podset_requests(const cJSON *ps, struct req *r, size_t *n)
{
	const cJSON *cnt = km_get(ps, "count"), *c, *q;
	uint64_t count = cJSON_IsNumber(cnt) ? (uint64_t)cnt->valueint : 1;

	cJSON_ArrayForEach (c, km_get(km_get(km_get(ps, "template"), "spec"),
				      "containers")) {
		const cJSON *res = km_get(c, "resources");
		const cJSON *reqs = km_get(res, "requests");

		cJSON_ArrayForEach (q, reqs)
			req_add(r, n, q->string,
				count * qty_json(q->string, q));
		cJSON_ArrayForEach (q, km_get(res, "limits"))
			if (!km_get(reqs, q->string))
				req_add(r, n, q->string,
					count * qty_json(q->string, q));
	}
}

/* The total each resource the workload's pod sets ask for. */
static void wl_requests(struct wl *w)
{
	const cJSON *ps;

	w->nreq = 0;
	cJSON_ArrayForEach (ps, km_get(km_get(w->o->tree, "spec"), "podSets"))
		podset_requests(ps, w->req, &w->nreq);
}

static int wl_cmp(const void *a, const void *b)
{
	const struct wl *x = *(struct wl *const *)a;
	const struct wl *y = *(struct wl *const *)b;
	int c;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	c = strcmp(x->created ? x->created : "", y->created ? y->created : "");
	if (c)
		return c;
	c = strcmp(x->o->ns, y->o->ns);
	return c ? c : strcmp(x->o->name, y->o->name);
}

struct world {
	struct km_obj **wv, **lqv, **cqv;
	size_t nw, nlq, ncq;
	struct wl *w;
};

static void world_free(struct world *wd)
{
	struct km_obj **vs[3] = { wd->wv, wd->lqv, wd->cqv };
	size_t ns[3] = { wd->nw, wd->nlq, wd->ncq };

	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < ns[k]; i++)
			km_obj_unref(vs[k][i]);
		free(vs[k]);
	}
	free(wd->w);
	memset(wd, 0, sizeof(*wd));
}

static struct km_obj *find_obj(struct km_obj **v, size_t n, const char *ns,
			       const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i]->ns, ns ? ns : "") &&
		    !strcmp(v[i]->name, name))
			return v[i];
	return NULL;
}

/* Read workloads, LocalQueues and ClusterQueues; 0 or an HB_E*. */
static int world_load(struct km_ctx *ctx, struct world *wd)
{
	uint64_t rv;

	memset(wd, 0, sizeof(*wd));
	if (km_store_list(ctx->store, KM_WORKLOAD, NULL, NULL, NULL, NULL, NULL,
			  0, &wd->wv, &wd->nw, NULL, &rv) ||
	    km_store_list(ctx->store, KM_LQUEUE, NULL, NULL, NULL, NULL, NULL,
			  0, &wd->lqv, &wd->nlq, NULL, &rv) ||
	    km_store_list(ctx->store, KM_CQUEUE, NULL, NULL, NULL, NULL, NULL,
			  0, &wd->cqv, &wd->ncq, NULL, &rv))
		goto fail;
	wd->w = calloc(wd->nw ? wd->nw : 1, sizeof(*wd->w));
	if (!wd->w)
		goto fail;
	for (size_t i = 0; i < wd->nw; i++) {
		struct wl *w = &wd->w[i];
		const cJSON *spec = km_get(wd->wv[i]->tree, "spec");
		const cJSON *p = km_get(spec, "priority");
		struct km_obj *lq;

		w->o = wd->wv[i];
		w->queue = km_str(spec, "queueName");
		w->created = km_meta_str(w->o->tree, "creationTimestamp");
		w->prio = cJSON_IsNumber(p) ? p->valuedouble : 0;
		w->reserved = cond_true(w->o->tree, "QuotaReserved");
		w->finished = cond_true(w->o->tree, "Finished");
		lq = w->queue ? find_obj(wd->lqv, wd->nlq, w->o->ns, w->queue)
			      : NULL;
		w->cq = lq ? km_str(km_get(lq->tree, "spec"), "clusterQueue")
			   : NULL;
		if (w->reserved)
			w->cq = km_str(km_get(km_get(w->o->tree, "status"),
					      "admission"),
				       "clusterQueue");
		wl_requests(w);
	}
	return 0;
fail:
	world_free(wd);
	return HB_ENOMEM;
}

static int wl_pending(const struct wl *w)
{
	const cJSON *a = km_get(km_get(w->o->tree, "spec"), "active");

	return !w->reserved && !w->finished && !cJSON_IsFalse(a);
}

/* The pending workloads of ClusterQueue cq in queue order (an array the
 * caller frees); *n gets the count. */
static struct wl **cq_pending(struct world *wd, const char *cq, size_t *n)
{
	struct wl **v = malloc((wd->nw ? wd->nw : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < wd->nw; i++)
		if (wl_pending(&wd->w[i]) && wd->w[i].cq &&
		    !strcmp(wd->w[i].cq, cq))
			v[(*n)++] = &wd->w[i];
	qsort(v, *n, sizeof(*v), wl_cmp);
	return v;
}

/* ---- ClusterQueue quota --------------------------------------------- */

struct cell {
	const char *flavor, *res;
	int group;
	uint64_t nominal, used;
};

struct quota {
	struct cell c[MAX_CELLS];
	size_t n;
};

static void quota_load(const cJSON *cq, struct quota *q)
{
	const cJSON *rg, *fl, *r;
	int g = 0;

	q->n = 0;
	cJSON_ArrayForEach (rg, km_get(km_get(cq, "spec"), "resourceGroups")) {
		cJSON_ArrayForEach (fl, km_get(rg, "flavors")) {
			cJSON_ArrayForEach (r, km_get(fl, "resources")) {
				struct cell *c = &q->c[q->n];

				if (q->n == MAX_CELLS || !km_str(fl, "name") ||
				    !km_str(r, "name"))
					continue;
				c->flavor = km_str(fl, "name");
				c->res = km_str(r, "name");
				c->group = g;
				c->nominal = qty_json(
					c->res, km_get(r, "nominalQuota"));
				c->used = 0;
				q->n++;
			}
		}
		g++;
	}
}

static struct cell *quota_cell(struct quota *q, const char *flavor,
			       const char *res)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->c[i].flavor, flavor) &&
		    !strcmp(q->c[i].res, res))
			return &q->c[i];
	return NULL;
}

/* Add (sign 1) or take back (-1) what an admitted workload uses, from
 * its status.admission. */
static void quota_charge(struct quota *q, const struct wl *w, int sign)
{
	const cJSON *psa, *u;

	cJSON_ArrayForEach (
		psa, km_get(km_get(km_get(w->o->tree, "status"), "admission"),
			    "podSetAssignments")) {
		cJSON_ArrayForEach (u, km_get(psa, "resourceUsage")) {
			const char *fl =
				km_str(km_get(psa, "flavors"), u->string);
			struct cell *c =
				fl ? quota_cell(q, fl, u->string) : NULL;
			uint64_t v = qty_json(u->string, u);

			if (!c)
				continue;
			if (sign > 0)
				c->used += v;
			else
				c->used = c->used > v ? c->used - v : 0;
		}
	}
}

static const char *first_podset(const struct wl *w)
{
	const char *n = km_str(
		cJSON_GetArrayItem(
			km_get(km_get(w->o->tree, "spec"), "podSets"), 0),
		"name");

	return n ? n : "main";
}

/*
 * Assign flavors: for each resource group the workload uses, the first
 * flavor in which every resource it asks of the group fits.  flv[i] gets
 * the flavor of w->req[i].  0 when all fit; otherwise HB_EAGAIN with why
 * set (HB_EINVAL when a resource is not in the ClusterQueue at all).
 */
static int quota_fit(struct quota *q, const struct wl *w,
		     const char *flv[MAX_RES], char *why, size_t wcap)
{
	for (size_t i = 0; i < w->nreq; i++)
		flv[i] = NULL;
	for (size_t i = 0; i < w->nreq; i++) {
		int group = -1;
		const char *last = NULL;

		if (flv[i] || !w->req[i].v)
			continue;
		for (size_t k = 0; k < q->n; k++)
			if (!strcmp(q->c[k].res, w->req[i].name)) {
				group = q->c[k].group;
				break;
			}
		if (group < 0) {
			snprintf(why, wcap,
				 "resource %s unavailable in ClusterQueue",
				 w->req[i].name);
			return HB_EINVAL;
		}
		snprintf(why, wcap,
			 "couldn't assign flavors to pod set %s: no flavor "
			 "has %s",
			 first_podset(w), w->req[i].name);
		for (size_t k = 0; k < q->n && !flv[i]; k++) {
			const char *f = q->c[k].flavor;
			int ok = 1;

			if (q->c[k].group != group ||
			    (last && !strcmp(last, f)))
				continue;
			last = f;
			for (size_t j = 0; j < w->nreq && ok; j++) {
				struct cell *c =
					quota_cell(q, f, w->req[j].name);

				if (!w->req[j].v || (c && c->group != group))
					continue;
				if (!c && j == i)
					ok = 0;
				else if (c &&
					 c->used + w->req[j].v > c->nominal) {
					uint64_t more = c->used + w->req[j].v -
							c->nominal;
					char m[32];

					fmt_qty(c->res, more, m);
					snprintf(why, wcap,
						 "couldn't assign flavors to "
						 "pod set %s: insufficient "
						 "unused quota for %s in "
						 "flavor %s, %s more needed",
						 first_podset(w), c->res, f, m);
					ok = 0;
				}
			}
			if (!ok)
				continue;
			for (size_t j = 0; j < w->nreq; j++) {
				struct cell *c =
					quota_cell(q, f, w->req[j].name);

				if (c && c->group == group && w->req[j].v)
					flv[j] = f;
			}
		}
		if (!flv[i])
			return HB_EAGAIN;
	}
	return 0;
}

/* ---- Workload status writes ----------------------------------------- */

/* status.admission for w with the flavors quota_fit chose. */
static cJSON *admission_of(const struct wl *w, const char *cq,
			   const char *flv[MAX_RES])
{
	cJSON *adm = cJSON_CreateObject(), *psas = cJSON_CreateArray();
	const cJSON *ps;

	if (!adm || !psas || km_set_str(adm, "clusterQueue", cq) ||
	    km_set(adm, "podSetAssignments", psas)) {
		cJSON_Delete(adm);
		return NULL;
	}
	cJSON_ArrayForEach (ps, km_get(km_get(w->o->tree, "spec"), "podSets")) {
		cJSON *psa = cJSON_CreateObject(), *fl, *use;
		const cJSON *cnt = km_get(ps, "count");
		struct req r[MAX_RES];
		size_t n = 0;

		if (!psa)
			continue;
		cJSON_AddItemToArray(psas, psa);
		km_set_str(psa, "name", km_str(ps, "name"));
		fl = km_obj_at(psa, "flavors");
		use = km_obj_at(psa, "resourceUsage");
		podset_requests(ps, r, &n);
		for (size_t i = 0; i < n && fl && use; i++) {
			char q[32];

			for (size_t k = 0; k < w->nreq; k++)
				if (flv[k] &&
				    !strcmp(w->req[k].name, r[i].name))
					km_set_str(fl, r[i].name, flv[k]);
			fmt_qty(r[i].name, r[i].v, q);
			km_set_str(use, r[i].name, q);
		}
		km_set_num(psa, "count",
			   cJSON_IsNumber(cnt) ? cnt->valueint : 1);
	}
	return adm;
}

enum wl_change { WC_PENDING, WC_ADMIT, WC_EVICT, WC_FINISH };

struct wl_write {
	enum wl_change what;
	const char *reason, *msg;
	cJSON *admission; /* WC_ADMIT: taken by the first try's copy */
};

/* Drop the reservation (workload.UnsetQuotaReservationWithCondition). */
static int unreserve(cJSON *obj, const char *reason, const char *msg)
{
	int ch = set_cond(obj, "QuotaReserved", 0, reason, msg);

	if (km_get(km_get(obj, "status"), "admission")) {
		km_del(km_get(obj, "status"), "admission");
		ch = 1;
	}
	if (find_cond(obj, "Admitted") && cond_true(obj, "Admitted"))
		ch |= set_cond(obj, "Admitted", 0, "NoReservation",
			       "The workload has no reservation");
	return ch;
}

static int wl_mutate(void *arg, cJSON *obj)
{
	struct wl_write *ww = arg;
	char msg[400];
	int ch = 0;

	if (cond_true(obj, "Finished") && ww->what != WC_FINISH)
		return 1;
	switch (ww->what) {
	case WC_PENDING:
		if (cond_true(obj, "QuotaReserved"))
			return 1;
		ch = set_cond(obj, "QuotaReserved", 0, ww->reason, ww->msg);
		break;
	case WC_ADMIT:
		if (km_set(km_obj_at(obj, "status"), "admission",
			   cJSON_Duplicate(ww->admission, 1)))
			return HB_ENOMEM;
		snprintf(msg, sizeof(msg), "Quota reserved in ClusterQueue %s",
			 km_str(ww->admission, "clusterQueue"));
		set_cond(obj, "QuotaReserved", 1, "QuotaReserved", msg);
		set_cond(obj, "Admitted", 1, "Admitted",
			 "The workload is admitted");
		/* A readmitted workload is no longer evicted. */
		if (cond_true(obj, "Evicted"))
			set_cond(obj, "Evicted", 0, "QuotaReserved",
				 "Previously: Preempted");
		if (cond_true(obj, "Preempted"))
			set_cond(obj, "Preempted", 0, "QuotaReserved",
				 "Previously: InClusterQueue");
		ch = 1;
		break;
	case WC_EVICT:
		set_cond(obj, "Evicted", 1, "Preempted", ww->msg);
		set_cond(obj, "Preempted", 1, "InClusterQueue", ww->msg);
		unreserve(obj, "Pending", ww->msg);
		ch = 1;
		break;
	case WC_FINISH:
		ch = set_cond(obj, "Finished", 1, ww->reason, ww->msg);
		break;
	}
	return ch ? 0 : 1;
}

static void wl_write(struct km_ctx *ctx, const struct wl *w,
		     struct wl_write *ww)
{
	km_internal_update(ctx, KM_WORKLOAD, w->o->ns, w->o->name, MANAGER,
			   "status", wl_mutate, ww, NULL);
}

/* ---- admission and preemption --------------------------------------- */

static const char *reserved_at(const struct wl *w)
{
	const char *t = km_str(find_cond(w->o->tree, "QuotaReserved"),
			       "lastTransitionTime");

	return t ? t : "";
}

/* Preemption candidates first: lowest priority, then the most recently
 * admitted. */
static int victim_cmp(const void *a, const void *b)
{
	const struct wl *x = *(struct wl *const *)a;
	const struct wl *y = *(struct wl *const *)b;
	int c;

	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	c = strcmp(reserved_at(y), reserved_at(x));
	return c ? c : -wl_cmp(a, b);
}

static int can_preempt(const char *policy, const struct wl *p,
		       const struct wl *v)
{
	if (!strcmp(policy, "LowerPriority"))
		return v->prio < p->prio;
	if (!strcmp(policy, "LowerOrNewerEqualPriority"))
		return v->prio < p->prio ||
		       (v->prio == p->prio && wl_cmp(&p, &v) < 0);
	return 0;
}

/*
 * Find the admitted workloads of cq whose eviction lets w fit, as the
 * preemptor does within a ClusterQueue: take candidates in order until w
 * fits, then give back those not needed (last taken first).  Evicts them
 * and returns 0 with flv set; HB_EAGAIN (quota unchanged) when no set of
 * candidates is enough.
 */
static int preempt(struct km_ctx *ctx, struct world *wd, struct quota *q,
		   struct wl *w, const char *cq, const char *policy,
		   const char *flv[MAX_RES])
{
	struct wl **v = malloc((wd->nw ? wd->nw : 1) * sizeof(*v));
	size_t n = 0, taken = 0;
	char why[400];
	int rc = HB_EAGAIN;

	if (!v)
		return HB_ENOMEM;
	for (size_t i = 0; i < wd->nw; i++) {
		struct wl *c = &wd->w[i];

		if (c->reserved && !c->finished && c->cq &&
		    !strcmp(c->cq, cq) && can_preempt(policy, w, c))
			v[n++] = c;
	}
	qsort(v, n, sizeof(*v), victim_cmp);
	while (taken < n) {
		quota_charge(q, v[taken++], -1);
		if (!quota_fit(q, w, flv, why, sizeof(why))) {
			rc = 0;
			break;
		}
	}
	if (rc) {
		while (taken)
			quota_charge(q, v[--taken], 1);
		goto out;
	}
	for (size_t i = taken - 1; i-- > 0;) {
		quota_charge(q, v[i], 1);
		if (!quota_fit(q, w, flv, why, sizeof(why)))
			v[i] = NULL; /* not needed */
		else
			quota_charge(q, v[i], -1);
	}
	snprintf(why, sizeof(why),
		 "Preempted to accommodate a workload (UID: %s, JobUID: %s) "
		 "due to prioritization in the ClusterQueue",
		 km_meta_str(w->o->tree, "uid"),
		 label(w->o->tree, L_JOB_UID) ? label(w->o->tree, L_JOB_UID)
					      : "UNKNOWN");
	for (size_t i = 0; i < taken; i++) {
		struct wl_write ww = { WC_EVICT, "Preempted", why, NULL };

		if (!v[i])
			continue;
		wl_write(ctx, v[i], &ww);
		v[i]->reserved = 0;
	}
	quota_fit(q, w, flv, why, sizeof(why));
out:
	free(v);
	return rc;
}

/* Whether every flavor cq names exists; why says which does not. */
static int cq_active(struct km_ctx *ctx, const cJSON *cq, char *why, size_t cap)
{
	const cJSON *rg, *fl;

	cJSON_ArrayForEach (rg, km_get(km_get(cq, "spec"), "resourceGroups"))
		cJSON_ArrayForEach (fl, km_get(rg, "flavors")) {
			const char *n = km_str(fl, "name");
			struct km_obj *o = n ? km_store_get(ctx->store,
							    KM_RFLAVOR, NULL, n)
					     : NULL;

			if (!o) {
				snprintf(why, cap,
					 "Can't admit new workloads: "
					 "references missing "
					 "ResourceFlavor(s): [%s]",
					 n ? n : "");
				return 0;
			}
			km_obj_unref(o);
		}
	return 1;
}

/* One scheduling cycle of a ClusterQueue. */
static void admit_cq(struct km_ctx *ctx, struct world *wd,
		     const struct km_obj *cqo)
{
	const cJSON *spec = km_get(cqo->tree, "spec");
	const char *strategy = km_str(spec, "queueingStrategy");
	const char *policy =
		km_str(km_get(spec, "preemption"), "withinClusterQueue");
	int strict = strategy && !strcmp(strategy, "StrictFIFO");
	int active, blocked = 0;
	struct quota *q = calloc(1, sizeof(*q));
	struct wl **pend = NULL;
	size_t n = 0;
	char why[400], msg[400];

	if (!q)
		return;
	quota_load(cqo->tree, q);
	for (size_t i = 0; i < wd->nw; i++)
		if (wd->w[i].reserved && !wd->w[i].finished && wd->w[i].cq &&
		    !strcmp(wd->w[i].cq, cqo->name))
			quota_charge(q, &wd->w[i], 1);
	pend = cq_pending(wd, cqo->name, &n);
	active = cq_active(ctx, cqo->tree, why, sizeof(why));
	for (size_t i = 0; pend && i < n; i++) {
		struct wl *w = pend[i];
		struct wl_write ww = { WC_PENDING, "Pending", why, NULL };
		const char *flv[MAX_RES];
		int rc;

		if (!active) {
			snprintf(msg, sizeof(msg),
				 "ClusterQueue %s is inactive", cqo->name);
			ww.reason = "Inadmissible";
			ww.msg = msg;
			wl_write(ctx, w, &ww);
			continue;
		}
		if (blocked) {
			snprintf(why, sizeof(why),
				 "Workload waits for the head of the "
				 "StrictFIFO ClusterQueue %s",
				 cqo->name);
			wl_write(ctx, w, &ww);
			continue;
		}
		rc = quota_fit(q, w, flv, why, sizeof(why));
		if (rc == HB_EAGAIN && policy)
			rc = preempt(ctx, wd, q, w, cqo->name, policy, flv);
		if (rc) {
			if (rc != HB_EINVAL && rc != HB_EAGAIN)
				snprintf(why, sizeof(why),
					 "insufficient quota");
			wl_write(ctx, w, &ww);
			blocked = strict;
			continue;
		}
		ww.what = WC_ADMIT;
		ww.admission = admission_of(w, cqo->name, flv);
		if (ww.admission) {
			for (size_t j = 0; j < w->nreq; j++) {
				struct cell *c =
					flv[j] ? quota_cell(q, flv[j],
							    w->req[j].name)
					       : NULL;

				if (c)
					c->used += w->req[j].v;
			}
			wl_write(ctx, w, &ww);
			cJSON_Delete(ww.admission);
			w->reserved = 1;
		}
	}
	free(pend);
	free(q);
}

/* Workloads whose LocalQueue or ClusterQueue is missing. */
static void mark_inadmissible(struct km_ctx *ctx, struct world *wd)
{
	char msg[400];

	for (size_t i = 0; i < wd->nw; i++) {
		struct wl *w = &wd->w[i];
		struct wl_write ww = { WC_PENDING, "Inadmissible", msg, NULL };

		if (!wl_pending(w))
			continue;
		if (!w->queue ||
		    !find_obj(wd->lqv, wd->nlq, w->o->ns, w->queue))
			snprintf(msg, sizeof(msg),
				 "LocalQueue %s doesn't exist",
				 w->queue ? w->queue : "");
		else if (!w->cq || !find_obj(wd->cqv, wd->ncq, NULL, w->cq))
			snprintf(msg, sizeof(msg),
				 "ClusterQueue %s doesn't exist",
				 w->cq ? w->cq : "");
		else
			continue;
		wl_write(ctx, w, &ww);
	}
}

/* ---- the MPIJob integration ----------------------------------------- */

/* Replica types and the pod sets they become. */
static const char *const rtypes[] = { "Launcher", "Worker" };
static const char *const podset_names[] = { "launcher", "worker" };

/* GetWorkloadNameForOwnerWithGVK: "mpijob-<name>-<5 hex of a SHA-1 of
 * kind, group, name and uid>". */
static void workload_name(const cJSON *job, char *out, size_t cap)
{
	const char *name = km_meta_str(job, "name");
	const char *uid = km_meta_str(job, "uid");
	unsigned char md[SHA_DIGEST_LENGTH];
	struct hb_buf b;

	hb_buf_init(&b, 0);
	hb_buf_printf(&b, "MPIJob\nkubeflow.org\n%s\n%s", name ? name : "",
		      uid ? uid : "");
	SHA1((const unsigned char *)(b.data ? b.data : ""), b.len, md);
	hb_buf_free(&b);
	snprintf(out, cap, "mpijob-%.247s-%02x%02x%x", name ? name : "", md[0],
		 md[1], md[2] >> 4);
}

/* The pod sets of an MPIJob: launcher, then workers (when any). */
static cJSON *podsets_of(const cJSON *job)
{
	const cJSON *specs = km_get(km_get(job, "spec"), "mpiReplicaSpecs");
	cJSON *sets = cJSON_CreateArray();

	for (int i = 0; sets && i < 2; i++) {
		const cJSON *rs = km_get(specs, rtypes[i]);
		const cJSON *rep = km_get(rs, "replicas");
		int count = cJSON_IsNumber(rep) ? rep->valueint : !i;
		cJSON *ps;

		if (!rs || count <= 0)
			continue;
		ps = cJSON_CreateObject();
		if (!ps || km_set_str(ps, "name", podset_names[i]) ||
		    km_set_num(ps, "count", count) ||
		    km_set(ps, "template",
			   cJSON_Duplicate(km_get(rs, "template"), 1))) {
			cJSON_Delete(ps);
			continue;
		}
		cJSON_AddItemToArray(sets, ps);
	}
	return sets;
}

static void create_workload(struct km_ctx *ctx, const cJSON *job,
			    const char *wname, const char *queue)
{
	const char *pc = label(job, L_PRIO);
	struct km_obj *wpc =
		pc ? km_store_get(ctx->store, KM_WPRIORITY, NULL, pc) : NULL;
	cJSON *w = cJSON_CreateObject(), *meta, *spec;
	const cJSON *val = wpc ? km_get(wpc->tree, "value") : NULL;

	meta = km_obj_at(w, "metadata");
	spec = km_obj_at(w, "spec");
	if (!meta || !spec ||
	    km_set_str(w, "apiVersion", km_res[KM_WORKLOAD].gv) ||
	    km_set_str(w, "kind", "Workload") ||
	    km_set_str(meta, "name", wname) ||
	    km_set_str(meta, "namespace", km_meta_str(job, "namespace")) ||
	    km_set_str(km_obj_at(meta, "labels"), L_JOB_UID,
		       km_meta_str(job, "uid")) ||
	    km_set(meta, "ownerReferences", km_owner_refs(job)) ||
	    km_set(spec, "active", cJSON_CreateTrue()) ||
	    km_set(spec, "podSets", podsets_of(job)) ||
	    km_set_str(spec, "queueName", queue) ||
	    km_set_num(spec, "priority",
		       cJSON_IsNumber(val) ? val->valuedouble : 0))
		goto out;
	if (wpc && (km_set_str(spec, "priorityClassName", pc) ||
		    km_set_str(spec, "priorityClassSource", WPC_SOURCE)))
		goto out;
	km_internal_create(ctx, KM_WORKLOAD, w, MANAGER, NULL);
	w = NULL;
out:
	cJSON_Delete(w);
	km_obj_unref(wpc);
}

/* What starting or stopping a job writes: suspend, and per replica type
 * the pod template's nodeSelector (NULL: none). */
struct run_change {
	int suspend;
	cJSON *sel[2]; /* Launcher, Worker */
};

/* Start (RunWithPodSetsInfo: the flavors' nodeLabels join each pod
 * set's nodeSelector) or stop (RestorePodSetsInfo: the nodeSelector the
 * Workload recorded) a job. */
static int set_run(void *arg, cJSON *job)
{
	struct run_change *rc = arg;
	cJSON *spec = km_obj_at(job, "spec");
	cJSON *rp = km_obj_at(spec, "runPolicy");

	if (!rp)
		return HB_ENOMEM;
	if (km_set(rp, "suspend", cJSON_CreateBool(rc->suspend)))
		return HB_ENOMEM;
	for (int i = 0; i < 2; i++) {
		cJSON *ps =
			km_get(km_get(km_get(km_get(spec, "mpiReplicaSpecs"),
					     rtypes[i]),
				      "template"),
			       "spec");

		if (!cJSON_IsObject(ps))
			continue;
		if (!rc->sel[i])
			km_del(ps, "nodeSelector");
		else if (km_set(ps, "nodeSelector",
				cJSON_Duplicate(rc->sel[i], 1)))
			return HB_ENOMEM;
	}
	return 0;
}

/* The nodeSelector pod set name gets when the job starts (flavors set)
 * or stops: the Workload's recorded one, plus the nodeLabels of the
 * flavors admission gave it.  NULL when empty. */
static cJSON *selector_of(struct km_ctx *ctx, const cJSON *wl, const char *name,
			  int start)
{
	const cJSON *ps, *psa, *f, *l;
	cJSON *sel = NULL;

	cJSON_ArrayForEach (ps, km_get(km_get(wl, "spec"), "podSets"))
		if (km_str(ps, "name") && !strcmp(km_str(ps, "name"), name))
			sel = cJSON_Duplicate(
				km_get(km_get(km_get(ps, "template"), "spec"),
				       "nodeSelector"),
				1);
	if (!sel)
		sel = cJSON_CreateObject();
	cJSON_ArrayForEach (psa,
			    km_get(km_get(km_get(wl, "status"), "admission"),
				   "podSetAssignments")) {
		if (!start || !km_str(psa, "name") ||
		    strcmp(km_str(psa, "name"), name))
			continue;
		cJSON_ArrayForEach (f, km_get(psa, "flavors")) {
			struct km_obj *rf =
				cJSON_IsString(f)
					? km_store_get(ctx->store, KM_RFLAVOR,
						       NULL, f->valuestring)
					: NULL;

			cJSON_ArrayForEach (
				l, km_get(km_get(rf ? rf->tree : NULL, "spec"),
					  "nodeLabels"))
				if (sel && cJSON_IsString(l))
					km_set_str(sel, l->string,
						   l->valuestring);
			km_obj_unref(rf);
		}
	}
	if (sel && !cJSON_GetArraySize(sel)) {
		cJSON_Delete(sel);
		sel = NULL;
	}
	return sel;
}

static void start_stop(struct km_ctx *ctx, const struct km_obj *job,
		       const cJSON *wl, int start)
{
	struct run_change rc = { !start, { NULL, NULL } };

	for (int i = 0; i < 2; i++)
		rc.sel[i] = selector_of(ctx, wl, podset_names[i], start);
	km_internal_update(ctx, KM_MPIJOB, job->ns, job->name, MANAGER, NULL,
			   set_run, &rc, NULL);
	cJSON_Delete(rc.sel[0]);
	cJSON_Delete(rc.sel[1]);
}

/* The job side of the reconciler: a Workload for each queued job, the
 * Finished condition, and the job suspended unless admitted. */
static void sync_job(struct km_ctx *ctx, struct world *wd,
		     const struct km_obj *job)
{
	const cJSON *st = km_get(job->tree, "status");
	const char *queue = label(job->tree, L_QUEUE);
	const cJSON *sc = NULL, *fc = NULL, *c;
	struct wl *w = NULL;
	char wname[300];
	int admitted, suspended;

	if (!queue ||
	    km_get(km_get(job->tree, "metadata"), "deletionTimestamp"))
		return;
	cJSON_ArrayForEach (c, km_get(st, "conditions")) {
		const char *t = km_str(c, "type"), *s = km_str(c, "status");

		if (t && s && !strcmp(s, "True") && !strcmp(t, "Succeeded"))
			sc = c;
		if (t && s && !strcmp(s, "True") && !strcmp(t, "Failed"))
			fc = c;
	}
	workload_name(job->tree, wname, sizeof(wname));
	for (size_t i = 0; i < wd->nw; i++)
		if (!strcmp(wd->w[i].o->ns, job->ns) &&
		    !strcmp(wd->w[i].o->name, wname))
			w = &wd->w[i];
	if (!w) {
		if (!sc && !fc)
			create_workload(ctx, job->tree, wname, queue);
		return;
	}
	if (sc || fc) {
		struct wl_write ww = { WC_FINISH, sc ? "Succeeded" : "Failed",
				       km_str(sc ? sc : fc, "message"), NULL };

		if (!ww.msg)
			ww.msg = "";
		if (!w->finished)
			wl_write(ctx, w, &ww);
		return;
	}
	admitted = w->reserved && cond_true(w->o->tree, "Admitted");
	suspended = cJSON_IsTrue(km_get(
		km_get(km_get(job->tree, "spec"), "runPolicy"), "suspend"));
	if (admitted != !suspended)
		start_stop(ctx, job, w->o->tree, admitted);
}

/* Workloads of MPIJobs that are gone (the garbage collector's part). */
static void collect_workloads(struct km_ctx *ctx, struct world *wd)
{
	for (size_t i = 0; i < wd->nw; i++) {
		const struct km_obj *o = wd->w[i].o;
		const cJSON *ref = cJSON_GetArrayItem(
			km_get(km_get(o->tree, "metadata"), "ownerReferences"),
			0);
		const char *kind = km_str(ref, "kind"),
			   *uid = km_str(ref, "uid");
		struct km_obj *job;

		if (!kind || strcmp(kind, "MPIJob") || !km_str(ref, "name"))
			continue;
		job = km_store_get(ctx->store, KM_MPIJOB, o->ns,
				   km_str(ref, "name"));
		if (!job ||
		    (uid && strcmp(uid, km_meta_str(job->tree, "uid")
						? km_meta_str(job->tree, "uid")
						: "")))
			km_internal_delete(ctx, KM_WORKLOAD, o->ns, o->name);
		km_obj_unref(job);
	}
}

/* ---- queue status --------------------------------------------------- */

struct counts {
	int pending, reserving, admitted;
};

struct queue_write {
	struct counts n;
	int active;
	const char *reason, *msg;
	cJSON *flavors; /* ClusterQueue: flavorsReservation (not taken) */
};

static int queue_mutate(void *arg, cJSON *obj)
{
	struct queue_write *qw = arg;
	cJSON *st = km_obj_at(obj, "status"), *old;
	int same;

	if (!st)
		return HB_ENOMEM;
	old = cJSON_Duplicate(st, 1);
	km_set_num(st, "pendingWorkloads", qw->n.pending);
	km_set_num(st, "reservingWorkloads", qw->n.reserving);
	km_set_num(st, "admittedWorkloads", qw->n.admitted);
	if (qw->flavors) {
		km_set(st, "flavorsReservation",
		       cJSON_Duplicate(qw->flavors, 1));
		km_set(st, "flavorsUsage", cJSON_Duplicate(qw->flavors, 1));
	}
	set_cond(obj, "Active", qw->active, qw->reason, qw->msg);
	same = km_equal(old, km_get(obj, "status"));
	cJSON_Delete(old);
	return same ? 1 : 0;
}

static struct counts count_of(struct world *wd, const char *cq, const char *ns,
			      const char *lq)
{
	struct counts n = { 0, 0, 0 };

	for (size_t i = 0; i < wd->nw; i++) {
		const struct wl *w = &wd->w[i];

		if (lq ? (!w->queue || strcmp(w->o->ns, ns ? ns : "") ||
			  strcmp(w->queue, lq))
		       : (!w->cq || strcmp(w->cq, cq ? cq : "")))
			continue;
		if (wl_pending(w))
			n.pending++;
		else if (w->reserved && !w->finished) {
			n.reserving++;
			n.admitted += cond_true(w->o->tree, "Admitted");
		}
	}
	return n;
}

/* flavorsReservation: each flavor's resources and what is reserved. */
static cJSON *flavors_status(struct world *wd, const struct km_obj *cqo)
{
	struct quota *q = calloc(1, sizeof(*q));
	cJSON *out = cJSON_CreateArray(), *fl = NULL;
	const char *last = NULL;

	if (!q || !out) {
		free(q);
		cJSON_Delete(out);
		return NULL;
	}
	quota_load(cqo->tree, q);
	for (size_t i = 0; i < wd->nw; i++)
		if (wd->w[i].reserved && !wd->w[i].finished && wd->w[i].cq &&
		    !strcmp(wd->w[i].cq, cqo->name))
			quota_charge(q, &wd->w[i], 1);
	for (size_t i = 0; i < q->n; i++) {
		cJSON *r = cJSON_CreateObject();
		char t[32];

		if (!last || strcmp(last, q->c[i].flavor)) {
			fl = cJSON_CreateObject();
			cJSON_AddItemToArray(out, fl);
			km_set_str(fl, "name", q->c[i].flavor);
			km_set(fl, "resources", cJSON_CreateArray());
			last = q->c[i].flavor;
		}
		fmt_qty(q->c[i].res, q->c[i].used, t);
		if (!r || km_set_str(r, "name", q->c[i].res) ||
		    km_set_str(r, "total", t) ||
		    km_set_str(r, "borrowed", "0")) {
			cJSON_Delete(r);
			continue;
		}
		cJSON_AddItemToArray(km_get(fl, "resources"), r);
	}
	free(q);
	return out;
}

static void queue_status(struct km_ctx *ctx, struct world *wd)
{
	char why[400];

	for (size_t i = 0; i < wd->ncq; i++) {
		const struct km_obj *cqo = wd->cqv[i];
		struct queue_write qw = { count_of(wd, cqo->name, NULL, NULL),
					  1, "Ready", "Can admit new workloads",
					  flavors_status(wd, cqo) };

		if (!cq_active(ctx, cqo->tree, why, sizeof(why))) {
			qw.active = 0;
			qw.reason = "FlavorNotFound";
			qw.msg = why;
		}
		km_internal_update(ctx, KM_CQUEUE, NULL, cqo->name, MANAGER,
				   "status", queue_mutate, &qw, NULL);
		cJSON_Delete(qw.flavors);
	}
	for (size_t i = 0; i < wd->nlq; i++) {
		const struct km_obj *lq = wd->lqv[i];
		const char *cq =
			km_str(km_get(lq->tree, "spec"), "clusterQueue");
		struct queue_write qw = { count_of(wd, NULL, lq->ns, lq->name),
					  1, "Ready",
					  "Can submit new workloads to "
					  "localQueue",
					  NULL };

		if (!cq || !find_obj(wd->cqv, wd->ncq, NULL, cq)) {
			qw.active = 0;
			qw.reason = "ClusterQueueDoesNotExist";
			qw.msg = "Can't submit new workloads to clusterQueue";
		}
		km_internal_update(ctx, KM_LQUEUE, lq->ns, lq->name, MANAGER,
				   "status", queue_mutate, &qw, NULL);
	}
}

/* ---- entry points --------------------------------------------------- */

static int queued_job(void *arg, const struct km_obj *o)
{
	(void)arg;
	return label(o->tree, L_QUEUE) != NULL;
}

void km_kueue_sync(struct km_ctx *ctx)
{
	struct km_obj **jobs = NULL;
	struct world wd;
	size_t nj = 0;
	uint64_t rv;

	if (world_load(ctx, &wd))
		return;
	if (!km_store_list(ctx->store, KM_MPIJOB, NULL, NULL, NULL, queued_job,
			   NULL, 0, &jobs, &nj, NULL, &rv)) {
		for (size_t i = 0; i < nj; i++) {
			sync_job(ctx, &wd, jobs[i]);
			km_obj_unref(jobs[i]);
		}
		free(jobs);
	}
	collect_workloads(ctx, &wd);
	mark_inadmissible(ctx, &wd);
	for (size_t i = 0; i < wd.ncq; i++)
		admit_cq(ctx, &wd, wd.cqv[i]);
	queue_status(ctx, &wd);
	world_free(&wd);
}

int km_kueue_queued(const struct km_event *ev)
{
	return label(ev->obj->tree, L_QUEUE) ||
	       (ev->prev && label(ev->prev->tree, L_QUEUE));
}

void km_kueue_webhook(struct km_ctx *ctx, enum km_res r, cJSON *obj)
{
	cJSON *rp;

	if (r != KM_MPIJOB || ctx->o->no_kueue || !label(obj, L_QUEUE))
		return;
	rp = km_obj_at(km_obj_at(obj, "spec"), "runPolicy");
	if (rp)
		km_set(rp, "suspend", cJSON_CreateTrue());
}

/* ---- the visibility API --------------------------------------------- */

/* A query argument as a count; def when absent, -1 when malformed. */
static long count_arg(const char *s, long def)
{
	uint64_t v;

	if (!s)
		return def;
	if (km_parse_u64(s, &v) || v > 1000000)
		return -1;
	return (long)v;
}

static cJSON *pending_item(const struct wl *w, int pos_cq, int pos_lq)
{
	const cJSON *om = km_get(w->o->tree, "metadata");
	cJSON *it = cJSON_CreateObject(), *m = km_obj_at(it, "metadata");

	if (!m || km_set_str(m, "name", w->o->name) ||
	    km_set_str(m, "namespace", w->o->ns) ||
	    km_set_str(m, "creationTimestamp", w->created ? w->created : "") ||
	    km_set(m, "ownerReferences",
		   cJSON_Duplicate(km_get(om, "ownerReferences"), 1)) ||
	    km_set_num(it, "priority", w->prio) ||
	    km_set_str(it, "localQueueName", w->queue ? w->queue : "") ||
	    km_set_num(it, "positionInClusterQueue", pos_cq) ||
	    km_set_num(it, "positionInLocalQueue", pos_lq)) {
		cJSON_Delete(it);
		return NULL;
	}
	return it;
}

/* The PendingWorkloadsSummary of cq, only LocalQueue ns/lq's when lq is
 * set, items offset to offset+limit. */
static cJSON *summary(struct world *wd, const char *cq, const char *ns,
		      const char *lq, long offset, long limit)
{
	cJSON *doc = cJSON_CreateObject(), *items = cJSON_CreateArray();
	struct wl **v;
	size_t n = 0;
	long seen = 0;

	if (!doc || !items ||
	    km_set_str(doc, "kind", "PendingWorkloadsSummary") ||
	    km_set_str(doc, "apiVersion",
		       "visibility.kueue.x-k8s.io/v1beta1") ||
	    !km_obj_at(doc, "metadata") || km_set(doc, "items", items)) {
		cJSON_Delete(doc);
		return NULL;
	}
	km_set(km_get(doc, "metadata"), "creationTimestamp",
	       cJSON_CreateNull());
	v = cq ? cq_pending(wd, cq, &n) : NULL;
	for (size_t i = 0; i < n; i++) {
		int pos_lq = 0;
		cJSON *it;

		for (size_t j = 0; j < i; j++)
			pos_lq += !strcmp(v[j]->o->ns, v[i]->o->ns) &&
				  !strcmp(v[j]->queue, v[i]->queue);
		if (lq && (strcmp(v[i]->o->ns, ns) || strcmp(v[i]->queue, lq)))
			continue;
		if (seen++ < offset || cJSON_GetArraySize(items) >= limit)
			continue;
		it = pending_item(v[i], (int)i, pos_lq);
		if (it)
			cJSON_AddItemToArray(items, it);
	}
	free(v);
	return doc;
}

int km_kueue_visibility(struct km_ctx *ctx, const char *method,
			const char *path, const char *limit_s,
			const char *offset_s, struct km_resp *rs)
{
	char a[256], b[256], c[256], d[256], e[256], tail[8];
	const char *rest = path + strlen(VIS_PREFIX);
	const char *cq = NULL, *ns = NULL, *lq = NULL;
	long limit = count_arg(limit_s, DEFAULT_LIMIT);
	long offset = count_arg(offset_s, 0);
	struct km_obj *o = NULL;
	struct world wd;
	cJSON *doc;

	if (strncmp(path, VIS_PREFIX, strlen(VIS_PREFIX)))
		return HB_ENOENT;
	if (sscanf(rest, "clusterqueues/%255[^/]/%255[^/]%7s", a, b, tail) ==
		    2 &&
	    !strcmp(b, "pendingworkloads")) {
		cq = a;
		o = km_store_get(ctx->store, KM_CQUEUE, NULL, cq);
	} else if (sscanf(rest,
			  "namespaces/%255[^/]/%255[^/]/%255[^/]/%255[^/]%7s",
			  c, d, e, b, tail) == 4 &&
		   !strcmp(d, "localqueues") &&
		   !strcmp(b, "pendingworkloads")) {
		ns = c;
		lq = e;
		o = km_store_get(ctx->store, KM_LQUEUE, ns, lq);
		if (o)
			cq = km_str(km_get(o->tree, "spec"), "clusterQueue");
	} else {
		km_resp_status(rs, km_status_plain(404, "NotFound",
						   "the server could not find "
						   "the requested resource"));
		return 0;
	}
	if (strcmp(method, "GET")) {
		km_resp_status(rs, km_status_plain(405, "MethodNotAllowed",
						   "the server does not allow "
						   "this method on the "
						   "requested resource"));
	} else if (!o) {
		km_resp_status(
			rs,
			km_statusf(404, "NotFound", lq ? KM_LQUEUE : KM_CQUEUE,
				   lq ? lq : cq, "%s \"%s\" not found",
				   km_res_qualified(lq ? KM_LQUEUE : KM_CQUEUE),
				   lq ? lq : cq));
	} else if (limit < 0 || offset < 0) {
		km_resp_status(rs, km_status_plain(400, "BadRequest",
						   "limit and offset must be "
						   "non-negative integers"));
	} else if (world_load(ctx, &wd)) {
		km_resp_status(rs, NULL);
	} else {
		doc = summary(&wd, cq, ns, lq, offset, limit);
		if (doc)
			km_resp_json(rs, 200, doc);
		else
			km_resp_status(rs, NULL);
		cJSON_Delete(doc);
		world_free(&wd);
	}
	km_obj_unref(o);
	return 0;
}
