/*
 * store.c - the emulator's etcd: objects, one resourceVersion, and the
 * window of recent events that watches read.
 *
 * Each resource has a table: an array of the current versions sorted by
 * (namespace, name), searched by bisection.  Every write takes the next
 * resourceVersion, publishes a new immutable struct km_obj (tree and its
 * JSON, serialised once) and appends one event to a ring of the last
 * `window` events.  Since every version is an event, the ring covers the
 * versions (rv - count, rv] exactly: a watch may resume from any version
 * not older than that, and gets 410 Gone otherwise.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubemu.h"

/* Versions start here, so that "0" (any version) is never a real one. */
#define FIRST_RV 100

struct table {
	struct km_obj **v;
	size_t n, cap;
};

struct km_store {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	uint64_t rv;
	unsigned kicks;
	struct table t[KM_NRES];
	struct km_event *ring;
	size_t window, head, count; /* head: index of the oldest */
	km_store_hook_fn hook;
	void *hook_arg;
};

struct km_obj *km_obj_ref(struct km_obj *o)
{
	if (o)
		atomic_fetch_add(&o->refs, 1);
	return o;
}

void km_obj_unref(struct km_obj *o)
{
	if (!o || atomic_fetch_sub(&o->refs, 1) != 1)
		return;
	cJSON_Delete(o->tree);
	free(o->json);
	km_obj_unref(o->base);
	free(o);
}

void km_event_release(struct km_event *ev)
{
	km_obj_unref(ev->obj);
	km_obj_unref(ev->prev);
	ev->obj = ev->prev = NULL;
}

struct km_store *km_store_new(size_t window)
{
	struct km_store *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return NULL;
	if (window < 16)
		window = 16;
	s->ring = calloc(window, sizeof(*s->ring));
	if (!s->ring) {
		free(s);
		return NULL;
	}
	s->window = window;
	s->rv = FIRST_RV;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	return s;
}

void km_store_free(struct km_store *s)
{
	if (!s)
		return;
	for (int r = 0; r < KM_NRES; r++) {
		for (size_t i = 0; i < s->t[r].n; i++)
			km_obj_unref(s->t[r].v[i]);
		free(s->t[r].v);
	}
	for (size_t i = 0; i < s->count; i++)
		km_event_release(&s->ring[(s->head + i) % s->window]);
	free(s->ring);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	free(s);
}

void km_store_set_hook(struct km_store *s, km_store_hook_fn fn, void *arg)
{
	pthread_mutex_lock(&s->mu);
	s->hook = fn;
	s->hook_arg = arg;
	pthread_mutex_unlock(&s->mu);
}

uint64_t km_store_rv(struct km_store *s)
{
	uint64_t rv;

	pthread_mutex_lock(&s->mu);
	rv = s->rv;
	pthread_mutex_unlock(&s->mu);
	return rv;
}

/* The oldest version a watch may resume from: the one before the oldest
 * event in the ring. */
static uint64_t oldest_locked(const struct km_store *s)
{
	return s->rv - s->count;
}

uint64_t km_store_oldest(struct km_store *s)
{
	uint64_t rv;

	pthread_mutex_lock(&s->mu);
	rv = oldest_locked(s);
	pthread_mutex_unlock(&s->mu);
	return rv;
}

static int key_cmp(const char *ns1, const char *n1, const char *ns2,
		   const char *n2)
{
	int c = strcmp(ns1, ns2);

	return c ? c : strcmp(n1, n2);
}

/* The index of (ns, name) in t, or where it would go; *found tells. */
static size_t table_find(const struct table *t, const char *ns,
			 const char *name, int *found)
{
	size_t lo = 0, hi = t->n;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(t->v[mid]->ns, t->v[mid]->name, ns, name);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int table_insert(struct table *t, size_t at, struct km_obj *o)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct km_obj **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return HB_ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof(*t->v));
	t->v[at] = o;
	t->n++;
	return 0;
}

static void table_remove(struct table *t, size_t at)
{
	memmove(&t->v[at], &t->v[at + 1], (t->n - at - 1) * sizeof(*t->v));
	t->n--;
}

/*
 * Make a version of tree (taken) at resourceVersion rv: stamp the version
 * into metadata and serialise.  NULL on ENOMEM (tree freed).
 */
static struct km_obj *obj_make(enum km_res r, cJSON *tree, uint64_t rv)
{
	struct km_obj *o = calloc(1, sizeof(*o));
	cJSON *meta = km_obj_at(tree, "metadata");
	char num[24];

	if (!o || !meta)
		goto fail;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)rv);
	if (km_set_str(meta, "resourceVersion", num))
		goto fail;
	o->json = cJSON_PrintUnformatted(tree);
	if (!o->json)
		goto fail;
	o->len = strlen(o->json);
	atomic_init(&o->refs, 1);
	o->res = r;
	o->rv = rv;
	o->tree = tree;
	o->ns = km_str(meta, "namespace");
	if (!o->ns)
		o->ns = "";
	o->name = km_str(meta, "name");
	if (!o->name)
		o->name = "";
	return o;
fail:
	free(o);
	cJSON_Delete(tree);
	return NULL;
}

/* Append an event (taking the references) and tell the hook and the
 * waiters.  Called with the lock held, after s->rv was bumped. */
static void emit_locked(struct km_store *s, enum km_evtype type,
			struct km_obj *obj, struct km_obj *prev)
{
	struct km_event *ev;

	if (s->count == s->window) {
		km_event_release(&s->ring[s->head]);
		s->head = (s->head + 1) % s->window;
		s->count--;
	}
	ev = &s->ring[(s->head + s->count) % s->window];
	ev->rv = obj->rv;
	ev->type = type;
	ev->obj = obj;
	ev->prev = prev;
	s->count++;
	if (s->hook)
		s->hook(s->hook_arg, ev);
	pthread_cond_broadcast(&s->cond);
}

int km_store_create(struct km_store *s, enum km_res r, cJSON *tree,
		    struct km_obj **out)
{
	const char *ns = km_meta_str(tree, "namespace");
	const char *name = km_meta_str(tree, "name");
	struct km_obj *o;
	size_t at;
	int found, rc;

	if (!name) {
		cJSON_Delete(tree);
		return HB_EINVAL;
	}
	pthread_mutex_lock(&s->mu);
	at = table_find(&s->t[r], ns ? ns : "", name, &found);
	if (found) {
		pthread_mutex_unlock(&s->mu);
		cJSON_Delete(tree);
		return HB_EEXIST;
	}
	o = obj_make(r, tree, s->rv + 1);
	if (!o) {
		pthread_mutex_unlock(&s->mu);
		return HB_ENOMEM;
	}
	if ((rc = table_insert(&s->t[r], at, o))) {
		pthread_mutex_unlock(&s->mu);
		km_obj_unref(o);
		return rc;
	}
	s->rv++;
	/* The table holds one reference, the event another. */
	emit_locked(s, KM_ADDED, km_obj_ref(o), NULL);
	if (out)
		*out = km_obj_ref(o);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int km_store_update(struct km_store *s, enum km_res r, cJSON *tree,
		    uint64_t base_rv, struct km_obj **out)
{
	const char *ns = km_meta_str(tree, "namespace");
	const char *name = km_meta_str(tree, "name");
	struct km_obj *o, *old;
	size_t at;
	int found;

	if (!name) {
		cJSON_Delete(tree);
		return HB_EINVAL;
	}
	pthread_mutex_lock(&s->mu);
	at = table_find(&s->t[r], ns ? ns : "", name, &found);
	if (!found) {
		pthread_mutex_unlock(&s->mu);
		cJSON_Delete(tree);
		return HB_ENOENT;
	}
	old = s->t[r].v[at];
	if (old->rv != base_rv) {
		pthread_mutex_unlock(&s->mu);
		cJSON_Delete(tree);
		return HB_ECONFLICT;
	}
	o = obj_make(r, tree, s->rv + 1);
	if (!o) {
		pthread_mutex_unlock(&s->mu);
		return HB_ENOMEM;
	}
	s->rv++;
	/* The table's reference to old moves to the event. */
	s->t[r].v[at] = o;
	emit_locked(s, KM_MODIFIED, km_obj_ref(o), old);
	if (out)
		*out = km_obj_ref(o);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/*
 * A tree for the last version of a deleted object: its own metadata (the
 * version changes) and references to the other members of old, which the
 * new version keeps alive through its base.
 */
static cJSON *share_tree(const cJSON *old)
{
	cJSON *t = cJSON_CreateObject();
	cJSON *m;

	if (!t)
		return NULL;
	cJSON_ArrayForEach (m, old) {
		int ok;

		if (!strcmp(m->string, "metadata"))
			ok = cJSON_AddItemToObject(t, m->string,
						   cJSON_Duplicate(m, 1));
		else
			ok = cJSON_AddItemReferenceToObject(t, m->string, m);
		if (!ok) {
			cJSON_Delete(t);
			return NULL;
		}
	}
	return t;
}

int km_store_delete(struct km_store *s, enum km_res r, const char *ns,
		    const char *name, uint64_t base_rv, struct km_obj **out)
{
	struct km_obj *o, *old;
	cJSON *tree;
	size_t at;
	int found;

	pthread_mutex_lock(&s->mu);
	at = table_find(&s->t[r], ns ? ns : "", name, &found);
	if (!found) {
		pthread_mutex_unlock(&s->mu);
		return HB_ENOENT;
	}
	old = s->t[r].v[at];
	if (base_rv && old->rv != base_rv) {
		pthread_mutex_unlock(&s->mu);
		return HB_ECONFLICT;
	}
	tree = share_tree(old->tree);
	o = tree ? obj_make(r, tree, s->rv + 1) : NULL;
	if (!o) {
		pthread_mutex_unlock(&s->mu);
		return HB_ENOMEM;
	}
	/* Its members other than metadata are old's. */
	o->base = km_obj_ref(old);
	s->rv++;
	table_remove(&s->t[r], at);
	emit_locked(s, KM_DELETED, km_obj_ref(o), old);
	if (out)
		*out = km_obj_ref(o);
	km_obj_unref(o);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

struct km_obj *km_store_get(struct km_store *s, enum km_res r, const char *ns,
			    const char *name)
{
	struct km_obj *o = NULL;
	size_t at;
	int found;

	pthread_mutex_lock(&s->mu);
	at = table_find(&s->t[r], ns ? ns : "", name, &found);
	if (found)
		o = km_obj_ref(s->t[r].v[at]);
	pthread_mutex_unlock(&s->mu);
	return o;
}

int km_store_list(struct km_store *s, enum km_res r, const char *ns,
		  const char *after_ns, const char *after_name,
		  km_match_fn match, void *arg, size_t limit,
		  struct km_obj ***out, size_t *n, size_t *remaining,
		  uint64_t *rv)
{
	const struct table *t = &s->t[r];
	struct km_obj **v = NULL;
	size_t i, cap = 0, cnt = 0, left = 0;
	int found;

	pthread_mutex_lock(&s->mu);
	if (after_name) {
		i = table_find(t, after_ns ? after_ns : "", after_name, &found);
		if (found)
			i++;
	} else if (ns) {
		i = table_find(t, ns, "", &found);
	} else {
		i = 0;
	}
	for (; i < t->n; i++) {
		struct km_obj *o = t->v[i];

		if (ns && strcmp(o->ns, ns)) {
			if (strcmp(o->ns, ns) > 0)
				break;
			continue;
		}
		if (match && !match(arg, o))
			continue;
		if (limit && cnt == limit) {
			left++;
			continue;
		}
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct km_obj **nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				pthread_mutex_unlock(&s->mu);
				for (size_t j = 0; j < cnt; j++)
					km_obj_unref(v[j]);
				free(v);
				return HB_ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[cnt++] = km_obj_ref(o);
	}
	*rv = s->rv;
	pthread_mutex_unlock(&s->mu);
	*out = v;
	*n = cnt;
	if (remaining)
		*remaining = left;
	return 0;
}

int km_store_events(struct km_store *s, enum km_res r, uint64_t after,
		    struct km_event *ev, size_t max, uint64_t *scanned)
{
	size_t got = 0;
	uint64_t v;

	pthread_mutex_lock(&s->mu);
	if (after < oldest_locked(s)) {
		pthread_mutex_unlock(&s->mu);
		return HB_ERANGE;
	}
	if (after > s->rv)
		after = s->rv;
	for (v = after + 1; v <= s->rv && got < max; v++) {
		size_t idx = s->head + (size_t)(v - oldest_locked(s) - 1);
		const struct km_event *e = &s->ring[idx % s->window];

		if (e->obj->res != r)
			continue;
		ev[got] = *e;
		km_obj_ref(ev[got].obj);
		km_obj_ref(ev[got].prev);
		got++;
	}
	*scanned = v - 1;
	pthread_mutex_unlock(&s->mu);
	return (int)got;
}

unsigned km_store_wait(struct km_store *s, uint64_t after, int64_t deadline)
{
	unsigned kicks;
	struct timespec ts;

	pthread_mutex_lock(&s->mu);
	kicks = s->kicks;
	while (s->rv <= after && s->kicks == kicks) {
		int64_t now = km_now_ms();

		if (now >= deadline)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (deadline - now) / 1000;
		ts.tv_nsec += ((deadline - now) % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&s->cond, &s->mu, &ts) == ETIMEDOUT)
			break;
	}
	kicks = s->kicks;
	pthread_mutex_unlock(&s->mu);
	return kicks;
}

void km_store_kick(struct km_store *s)
{
	pthread_mutex_lock(&s->mu);
	s->kicks++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

unsigned km_store_kicks(struct km_store *s)
{
	unsigned k;

	pthread_mutex_lock(&s->mu);
	k = s->kicks;
	pthread_mutex_unlock(&s->mu);
	return k;
}

void km_store_stats(struct km_store *s, size_t counts[KM_NRES], uint64_t *rv,
		    size_t *events)
{
	pthread_mutex_lock(&s->mu);
	for (int r = 0; r < KM_NRES; r++)
		counts[r] = s->t[r].n;
	*rv = s->rv;
	*events = s->count;
	pthread_mutex_unlock(&s->mu);
}
