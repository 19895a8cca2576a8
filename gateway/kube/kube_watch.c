/*
 * kube_watch.c - watches: the stream decoder, and the reflector that keeps
 * a whole view of a kind of object across dropped streams and expired
 * versions.
 *
 * The decoder keeps the bytes of unread lines in one buffer, each line
 * behind a one-byte tag: 'L' for a line, 'X' for a line that was longer
 * than allowed and was dropped (it is reported in its place, and its bytes
 * are never kept).  So memory stays bounded by max_line plus what the
 * caller fed and did not read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"
#include "kube_int.h"

/* ---------------------------------------------------------- events */

void hb_kube_event_clear(struct hb_kube_event *ev)
{
	if (!ev)
		return;
	cJSON_Delete(ev->object);
	memset(ev, 0, sizeof(*ev));
}

static const struct {
	const char *name;
	enum hb_kube_ev_type type;
} ev_types[] = {
	{ "ADDED", HB_KUBE_ADDED },	{ "MODIFIED", HB_KUBE_MODIFIED },
	{ "DELETED", HB_KUBE_DELETED }, { "BOOKMARK", HB_KUBE_BOOKMARK },
	{ "ERROR", HB_KUBE_ERROR },
};

int hb_kube_event_decode(const char *line, size_t len, struct hb_kube_event *ev,
			 struct hb_err *err)
{
	const char *end = NULL;
	cJSON *doc, *obj;
	const cJSON *type, *md, *rv, *code;
	size_t i;
	int rc = 0;

	memset(ev, 0, sizeof(*ev));
	doc = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (doc && end)
		for (; end < line + len; end++)
			if (!strchr(" \t\r\n", *end)) {
				cJSON_Delete(doc);
				return hb_err_set(err, HB_EPROTO, NULL, 0,
						  "watch event: bytes after "
						  "the JSON object");
			}
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "watch event: not a JSON object");
	}
	type = cJSON_GetObjectItemCaseSensitive(doc, "type");
	if (!cJSON_IsString(type)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"watch event: type: missing or not a string");
		goto out;
	}
	for (i = 0; i < sizeof(ev_types) / sizeof(ev_types[0]); i++)
		if (!strcmp(type->valuestring, ev_types[i].name))
			break;
	if (i == sizeof(ev_types) / sizeof(ev_types[0])) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"watch event: unknown type \"%.32s\"",
				type->valuestring);
		goto out;
	}
	obj = cJSON_GetObjectItemCaseSensitive(doc, "object");
	if (!cJSON_IsObject(obj)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"watch event: object: missing or not an "
				"object");
		goto out;
	}
	ev->type = ev_types[i].type;
	if (ev->type == HB_KUBE_ERROR) {
		code = cJSON_GetObjectItemCaseSensitive(obj, "code");
		if (cJSON_IsNumber(code) && code->valuedouble >= 0 &&
		    code->valuedouble < 1000)
			ev->code = (int)code->valuedouble;
	} else {
		md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
		if (md && !cJSON_IsObject(md)) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"watch event: object.metadata: not "
					"an object");
			goto out;
		}
		rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
		if (rv && !cJSON_IsString(rv)) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"watch event: resourceVersion: not a "
					"string");
			goto out;
		}
		if (rv && strlen(rv->valuestring) >= sizeof(ev->rv)) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"watch event: resourceVersion: longer "
					"than %zu characters",
					sizeof(ev->rv) - 1);
			goto out;
		}
		if (rv)
			snprintf(ev->rv, sizeof(ev->rv), "%s", rv->valuestring);
	}
	ev->object = cJSON_DetachItemViaPointer(doc, obj);
out:
	if (rc)
		memset(ev, 0, sizeof(*ev));
	cJSON_Delete(doc);
	return rc;
}

/* --------------------------------------------------------- decoder */

struct hb_kube_decoder {
	struct hb_buf buf;
	size_t start;	 /* first unread byte (a tag) */
	size_t line_at;	 /* the tag of the line being filled */
	size_t complete; /* complete lines after start */
	size_t max_line;
	int in_line;  /* a line is being filled */
	int skipping; /* dropping an overlong line's bytes until '\n' */
};

int hb_kube_decoder_new(size_t max_line, struct hb_kube_decoder **out)
{
	struct hb_kube_decoder *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return HB_ENOMEM;
	d->max_line = max_line ? max_line : HB_KUBE_WATCH_LINE_MAX;
	hb_buf_init(&d->buf, d->max_line > HB_BUF_DEFAULT_MAX / 2
				     ? d->max_line * 2
				     : HB_BUF_DEFAULT_MAX);
	*out = d;
	return 0;
}

void hb_kube_decoder_free(struct hb_kube_decoder *d)
{
	if (!d)
		return;
	hb_buf_free(&d->buf);
	free(d);
}

static void truncate_to(struct hb_buf *b, size_t len)
{
	b->len = len;
	if (b->data)
		b->data[len] = '\0';
}

int hb_kube_decoder_feed(struct hb_kube_decoder *d, const char *data,
			 size_t len)
{
	int rc;

	/* Drop what was read. */
	if (d->start) {
		memmove(d->buf.data, d->buf.data + d->start,
			d->buf.len - d->start);
		truncate_to(&d->buf, d->buf.len - d->start);
		if (d->in_line)
			d->line_at -= d->start;
		d->start = 0;
	}
	while (len) {
		const char *nl;
		size_t n, cur;

		if (d->skipping) {
			nl = memchr(data, '\n', len);
			if (!nl)
				return 0;
			d->skipping = 0;
			len -= (size_t)(nl - data) + 1;
			data = nl + 1;
			continue;
		}
		if (!d->in_line) {
			if ((rc = hb_buf_putc(&d->buf, 'L')))
				return rc;
			d->line_at = d->buf.len - 1;
			d->in_line = 1;
		}
		nl = memchr(data, '\n', len);
		n = nl ? (size_t)(nl - data) : len;
		cur = d->buf.len - d->line_at - 1;
		if (n > d->max_line || cur + n > d->max_line) {
			/* Too long: keep only its tag, as 'X'. */
			truncate_to(&d->buf, d->line_at);
			if ((rc = hb_buf_append(&d->buf, "X\n", 2)))
				return rc;
			d->in_line = 0;
			d->complete++;
			if (!nl) {
				d->skipping = 1;
				return 0;
			}
			len -= n + 1;
			data += n + 1;
			continue;
		}
		if ((rc = hb_buf_append(&d->buf, data, n)))
			return rc;
		if (!nl)
			return 0;
		if ((rc = hb_buf_putc(&d->buf, '\n')))
			return rc;
		d->in_line = 0;
		d->complete++;
		len -= n + 1;
		data += n + 1;
	}
	return 0;
}

int hb_kube_decoder_next(struct hb_kube_decoder *d, struct hb_kube_event *ev,
			 struct hb_err *err)
{
	memset(ev, 0, sizeof(*ev));
	while (d->complete) {
		char *p = d->buf.data + d->start;
		char *nl = memchr(p, '\n', d->buf.len - d->start);
		size_t n;

		/* complete > 0 means a '\n' is there. */
		if (!nl)
			return HB_EPROTO;
		d->complete--;
		d->start = (size_t)(nl - d->buf.data) + 1;
		if (*p == 'X')
			return hb_err_set(err, HB_ETOOBIG, NULL, 0,
					  "watch event: a line longer than "
					  "%zu bytes",
					  d->max_line);
		p++;
		n = (size_t)(nl - p);
		while (n && strchr(" \t\r", p[n - 1]))
			n--;
		while (n && strchr(" \t\r", *p)) {
			p++;
			n--;
		}
		if (!n)
			continue; /* a blank line */
		return hb_kube_event_decode(p, n, ev, err);
	}
	return HB_EAGAIN;
}

/* ----------------------------------------------------- known objects */

struct slot {
	char *key; /* NULL: empty; TOMB: deleted */
	char rv[32];
	unsigned gen;
};

static char tomb_mark;
#define TOMB (&tomb_mark)

struct hb_kube_known {
	struct slot *v;
	size_t cap, used, tombs;
};

struct hb_kube_known *hb_kube_known_new(void)
{
	return calloc(1, sizeof(struct hb_kube_known));
}

void hb_kube_known_free(struct hb_kube_known *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i].key && m->v[i].key != TOMB)
			free(m->v[i].key);
	free(m->v);
	free(m);
}

/*
 * The slot a key starts probing at.  The seed is 1469598103934665603, not
 * FNV's offset basis (HB_FNV1A_INIT, 14695981039346656037): a relist
 * delivers the objects it no longer finds in slot order, so the seed
 * decides the order of those DELETED events and stays as it was.
 */
static size_t home(const char *key, size_t cap)
{
	return hb_fnv1a_str(1469598103934665603ull, key) & (cap - 1);
}

static struct slot *lookup(const struct hb_kube_known *m, const char *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = home(key, m->cap), n = 0; n < m->cap;
	     i = (i + 1) & (m->cap - 1), n++) {
		struct slot *s = &m->v[i];

		if (!s->key)
			return NULL;
		if (s->key != TOMB && !strcmp(s->key, key))
			return s;
	}
	return NULL;
}

static int grow(struct hb_kube_known *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct slot *v, *old = m->v;

	/* Only tombstones make it full: rehash at the same size. */
	if (m->used * 2 < m->cap)
		cap = m->cap;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return HB_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!old[i].key || old[i].key == TOMB)
			continue;
		for (j = home(old[i].key, cap); v[j].key;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = old[i];
	}
	free(old);
	m->v = v;
	m->cap = cap;
	m->tombs = 0;
	return 0;
}

const char *hb_kube_known_get(const struct hb_kube_known *m, const char *key)
{
	const struct slot *s = lookup(m, key);

	return s ? s->rv : NULL;
}

static struct slot *put(struct hb_kube_known *m, const char *key,
			const char *rv)
{
	struct slot *s = lookup(m, key);
	size_t i;

	if (!s) {
		if ((m->used + m->tombs + 1) * 10 > m->cap * 7 && grow(m))
			return NULL;
		for (i = home(key, m->cap); m->v[i].key && m->v[i].key != TOMB;
		     i = (i + 1) & (m->cap - 1))
			;
		s = &m->v[i];
		if (s->key == TOMB)
			m->tombs--;
		s->key = strdup(key);
		if (!s->key) {
			s->key = NULL;
			return NULL;
		}
		s->gen = 0;
		m->used++;
	}
	snprintf(s->rv, sizeof(s->rv), "%s", rv ? rv : "");
	return s;
}

int hb_kube_known_put(struct hb_kube_known *m, const char *key, const char *rv)
{
	return put(m, key, rv) ? 0 : HB_ENOMEM;
}

int hb_kube_known_del(struct hb_kube_known *m, const char *key)
{
	struct slot *s = lookup(m, key);

	if (!s)
		return HB_ENOENT;
	free(s->key);
	s->key = TOMB;
	m->used--;
	m->tombs++;
	return 0;
}

size_t hb_kube_known_count(const struct hb_kube_known *m)
{
	return m->used;
}

int hb_kube_known_apply(struct hb_kube_known *m, const char *key,
			enum hb_kube_ev_type type, const char *rv, int *deliver)
{
	const char *old = hb_kube_known_get(m, key);

	*deliver = -1;
	switch (type) {
	case HB_KUBE_ADDED:
	case HB_KUBE_MODIFIED:
		if (old && !strcmp(old, rv ? rv : ""))
			return 0;
		*deliver = old ? HB_KUBE_MODIFIED : HB_KUBE_ADDED;
		if (hb_kube_known_put(m, key, rv)) {
			*deliver = -1;
			return HB_ENOMEM;
		}
		return 0;
	case HB_KUBE_DELETED:
		if (old) {
			hb_kube_known_del(m, key);
			*deliver = HB_KUBE_DELETED;
		}
		return 0;
	default:
		return 0;
	}
}

int hb_kube_obj_key(const cJSON *obj, struct hb_buf *key)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");

	hb_buf_reset(key);
	if (!cJSON_IsString(name) || !*name->valuestring)
		return HB_EPROTO;
	if (hb_buf_printf(key, "%s/%s",
			  cJSON_IsString(ns) ? ns->valuestring : "",
			  name->valuestring))
		return HB_ENOMEM;
	return 0;
}

/* -------------------------------------------------------- reflector */

/* The watch's own fn return: end this stream, see r's flags. */
#define END_STREAM 1

struct refl {
	struct hb_kube *k;
	const struct hb_kube_res *res;
	const struct hb_kube_reflect_opts *o;
	hb_kube_event_fn fn;
	void *ctx;
	struct hb_kube_known *known;
	struct hb_kube_decoder *dec;
	struct hb_buf key;
	char rv[32];
	unsigned gen;
	int fn_rc;  /* fn said stop */
	int gone;   /* an ERROR event with 410 */
	int bad;    /* an undecodable event */
	int werr;   /* another ERROR event's code */
	int events; /* events in this stream */
};

static int deliver(struct refl *r, enum hb_kube_ev_type type, cJSON *obj,
		   const char *rv)
{
	struct hb_kube_event ev = { .type = type, .object = obj };
	int rc;

	snprintf(ev.rv, sizeof(ev.rv), "%s", rv ? rv : "");
	rc = r->fn(r->ctx, &ev);
	if (rc)
		r->fn_rc = rc;
	return rc;
}

static const char *obj_rv(const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *rv =
		cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");

	return cJSON_IsString(rv) && strlen(rv->valuestring) < 32
		       ? rv->valuestring
		       : "";
}

/* What a DELETED for a vanished object carries: its kind, name,
 * namespace and the last version seen. */
static cJSON *tombstone(const struct hb_kube_res *res, const char *key,
			const char *rv)
{
	const char *slash = strchr(key, '/');
	cJSON *o = cJSON_CreateObject(), *md;
	char api[128];

	if (!o || !slash)
		goto fail;
	if (res->group && *res->group)
		snprintf(api, sizeof(api), "%s/%s", res->group, res->version);
	else
		snprintf(api, sizeof(api), "%s", res->version);
	if (!cJSON_AddStringToObject(o, "apiVersion", api) ||
	    !cJSON_AddStringToObject(o, "kind", res->kind ? res->kind : "") ||
	    !(md = cJSON_AddObjectToObject(o, "metadata")) ||
	    !cJSON_AddStringToObject(md, "name", slash + 1) ||
	    !cJSON_AddStringToObject(md, "resourceVersion", rv))
		goto fail;
	if (slash > key) {
		char *ns = strndup(key, (size_t)(slash - key));
		int bad = !ns || !cJSON_AddStringToObject(md, "namespace", ns);

		free(ns);
		if (bad)
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static int relist(struct refl *r, struct hb_err *err)
{
	cJSON *items = NULL, *it;
	char rv[32];
	size_t ndel = 0, nadd = 0, nmod = 0;
	char **gone = NULL;
	int rc;

	rc = hb_kube_list_every(
		r->k, r->res, r->o->ns, !r->o->ns, r->o->selector,
		r->o->page > 0 ? r->o->page : 500, &items, rv, err);
	if (rc)
		return rc;
	r->gen++;
	cJSON_ArrayForEach (it, items) {
		const char *irv = obj_rv(it);
		struct slot *s;
		int t;

		if (hb_kube_obj_key(it, &r->key)) {
			hb_log(HB_LOG_WARN,
			       "kube: %s: a listed object without a name",
			       r->res->plural);
			continue;
		}
		if (hb_kube_known_apply(r->known, r->key.data, HB_KUBE_ADDED,
					irv, &t)) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		s = lookup(r->known, r->key.data);
		if (s)
			s->gen = r->gen;
		if (t < 0)
			continue;
		t == HB_KUBE_ADDED ? nadd++ : nmod++;
		if (deliver(r, (enum hb_kube_ev_type)t, it, irv)) {
			rc = r->fn_rc;
			goto out;
		}
	}
	/* What the list no longer has was deleted meanwhile. */
	gone = calloc(r->known->used + 1, sizeof(*gone));
	if (!gone) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < r->known->cap; i++) {
		struct slot *s = &r->known->v[i];

		if (s->key && s->key != TOMB && s->gen != r->gen)
			gone[ndel++] = s->key;
	}
	for (size_t i = 0; i < ndel; i++) {
		const char *last = hb_kube_known_get(r->known, gone[i]);
		cJSON *t = tombstone(r->res, gone[i], last ? last : "");
		char lrv[32];

		if (!t) {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
			goto out;
		}
		snprintf(lrv, sizeof(lrv), "%s", last ? last : "");
		/* gone[i] is the slot's key: free it through the map. */
		hb_kube_known_del(r->known, gone[i]);
		rc = deliver(r, HB_KUBE_DELETED, t, lrv);
		cJSON_Delete(t);
		if (rc)
			goto out;
	}
	snprintf(r->rv, sizeof(r->rv), "%s", rv);
	hb_log(HB_LOG_INFO,
	       "kube: %s: listed at version %s: %zu added, %zu modified, "
	       "%zu deleted, %zu known",
	       r->res->plural, rv[0] ? rv : "(none)", nadd, nmod, ndel,
	       r->known->used);
	rc = deliver(r, HB_KUBE_BOOKMARK, NULL, rv);
out:
	free(gone);
	cJSON_Delete(items);
	return rc;
}

static int on_watch_data(void *u, const char *data, size_t len)
{
	struct refl *r = u;
	struct hb_kube_event ev;
	int rc;

	if (hb_kube_decoder_feed(r->dec, data, len)) {
		r->bad = 1;
		return END_STREAM;
	}
	for (;;) {
		struct hb_err e = { 0 };
		int t;

		rc = hb_kube_decoder_next(r->dec, &ev, &e);
		if (rc == HB_EAGAIN)
			return 0;
		if (rc) {
			hb_log(HB_LOG_WARN, "kube: %s: watch: %s",
			       r->res->plural, e.msg);
			r->bad = 1;
			return END_STREAM;
		}
		r->events++;
		switch (ev.type) {
		case HB_KUBE_ERROR:
			if (ev.code == 410)
				r->gone = 1;
			else
				r->werr = ev.code ? ev.code : -1;
			hb_kube_event_clear(&ev);
			return END_STREAM;
		case HB_KUBE_BOOKMARK:
			if (ev.rv[0])
				memcpy(r->rv, ev.rv, sizeof(r->rv));
			break;
		default:
			if (hb_kube_obj_key(ev.object, &r->key)) {
				hb_log(HB_LOG_WARN,
				       "kube: %s: watch: an object without "
				       "a name",
				       r->res->plural);
				r->bad = 1;
				hb_kube_event_clear(&ev);
				return END_STREAM;
			}
			if (hb_kube_known_apply(r->known, r->key.data, ev.type,
						ev.rv, &t)) {
				r->bad = 1;
				hb_kube_event_clear(&ev);
				return END_STREAM;
			}
			if (ev.rv[0])
				memcpy(r->rv, ev.rv, sizeof(r->rv));
			if (t >= 0 && deliver(r, (enum hb_kube_ev_type)t,
					      ev.object, ev.rv)) {
				hb_kube_event_clear(&ev);
				return END_STREAM;
			}
		}
		hb_kube_event_clear(&ev);
	}
}

static int watch_once(struct refl *r, const atomic_int *stop, int *stopped,
		      struct hb_err *err)
{
	struct hb_kube_stream st = { 0 };
	struct hb_buf p;
	char n[24];
	int rc, wt = r->o->watch_timeout_s > 0 ? r->o->watch_timeout_s : 300;

	hb_buf_init(&p, 0);
	hb_kube_decoder_free(r->dec);
	r->dec = NULL;
	r->gone = r->bad = r->werr = r->events = 0;
	snprintf(n, sizeof(n), "%d", wt);
	if (hb_kube_decoder_new(HB_KUBE_WATCH_LINE_MAX, &r->dec) ||
	    hb_kube_path(r->res, r->o->ns, NULL, NULL, &p) ||
	    hb_kube_query(&p, "watch", "1") ||
	    hb_kube_query(&p, "allowWatchBookmarks", "true") ||
	    (r->rv[0] && hb_kube_query(&p, "resourceVersion", r->rv)) ||
	    hb_kube_query(&p, "timeoutSeconds", n) ||
	    (r->o->selector && *r->o->selector &&
	     hb_kube_query(&p, "labelSelector", r->o->selector))) {
		hb_buf_free(&p);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	st.path = p.data;
	st.fn = on_watch_data;
	st.ctx = r;
	st.stop = stop;
	st.poll_ms = r->o->poll_ms > 0 ? r->o->poll_ms : 200;
	/* The server ends it at timeoutSeconds; this is for a silent peer. */
	st.timeout_ms = (wt + 30) * 1000;
	rc = hb_kube_stream_get(r->k, &st, err);
	*stopped = st.stopped;
	hb_buf_free(&p);
	return rc == END_STREAM ? 0 : rc;
}

static int permanent(int rc)
{
	return rc == HB_EPERM || rc == HB_EINVAL || rc == HB_ENOENT ||
	       rc == HB_EUNSUP || rc == HB_ENOMEM || rc == HB_ETOOBIG;
}

/* Back off after a failure; 1 if *stop came meanwhile. */
static int pause_for(const struct refl *r, int fails, const atomic_int *stop)
{
	const struct hb_kube_opts *o = hb_kube_opts_of(r->k);
	long ms = hb_kube_backoff_ms(fails, o->backoff_ms, o->backoff_cap_ms,
				     -1, hb_kube_random());
	int poll = r->o->poll_ms > 0 ? r->o->poll_ms : 200;

	while (ms > 0) {
		long step = ms < poll ? ms : poll;
		struct timespec ts = { step / 1000, (step % 1000) * 1000000 };

		if (atomic_load(stop))
			return 1;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		ms -= step;
	}
	return atomic_load(stop) != 0;
}

int hb_kube_reflect(struct hb_kube *k, const struct hb_kube_res *res,
		    const struct hb_kube_reflect_opts *opts,
		    hb_kube_event_fn fn, void *ctx, const atomic_int *stop,
		    struct hb_err *err)
{
	struct hb_kube_reflect_opts none = { 0 };
	struct refl r = { .k = k,
			  .res = res,
			  .o = opts ? opts : &none,
			  .fn = fn,
			  .ctx = ctx };
	int need_list = 1, fails = 0, rc = 0;
	static const atomic_int never;

	if (!fn || !res)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "reflect: no callback or resource");
	if (!stop)
		stop = &never;
	r.known = hb_kube_known_new();
	hb_buf_init(&r.key, 0);
	if (!r.known)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	while (!atomic_load(stop)) {
		struct hb_err e = { 0 };
		int stopped = 0;
		int64_t t0;

		if (need_list) {
			rc = relist(&r, &e);
			if (r.fn_rc) {
				rc = r.fn_rc;
				break;
			}
			if (rc) {
				if (permanent(rc)) {
					if (err && !err->code)
						*err = e;
					break;
				}
				hb_log(HB_LOG_WARN,
				       "kube: %s: list failed, again later: %s",
				       res->plural, e.msg);
				hb_metrics_watch_restart(res->plural, "list_failed");
				rc = 0;
				if (pause_for(&r, ++fails, stop))
					break;
				continue;
			}
			need_list = 0;
			fails = 0;
		}
		t0 = hb_clock_mono_ms();
		rc = watch_once(&r, stop, &stopped, &e);
		if (r.fn_rc) {
			rc = r.fn_rc;
			break;
		}
		if (stopped) {
			rc = 0;
			break;
		}
		if (r.gone || rc == HB_ESTATE) {
			hb_log(HB_LOG_INFO,
			       "kube: %s: version %s is gone (410), listing "
			       "again",
			       res->plural, r.rv);
			hb_metrics_watch_restart(res->plural, "gone");
			need_list = 1;
			rc = 0;
			continue;
		}
		if (r.bad) {
			hb_log(HB_LOG_WARN,
			       "kube: %s: a bad watch event, listing again",
			       res->plural);
			hb_metrics_watch_restart(res->plural, "bad_event");
			need_list = 1;
			rc = 0;
			if (pause_for(&r, ++fails, stop))
				break;
			continue;
		}
		if (rc && permanent(rc)) {
			if (err && !err->code)
				*err = e;
			break;
		}
		if (!rc && !r.werr &&
		    (r.events || hb_clock_mono_ms() - t0 >= 1000)) {
			/* The server ended it (timeoutSeconds): go on. */
			fails = 0;
			hb_log(HB_LOG_DEBUG,
			       "kube: %s: watch ended, resuming from %s",
			       res->plural, r.rv);
			continue;
		}
		if (r.werr)
			hb_log(HB_LOG_WARN,
			       "kube: %s: watch: ERROR event, code %d",
			       res->plural, r.werr);
		else if (rc)
			hb_log(HB_LOG_INFO,
			       "kube: %s: watch broke (%s), resuming from %s",
			       res->plural, e.msg, r.rv);
		hb_metrics_watch_restart(res->plural, "broken");
		rc = 0;
		if (r.events)
			fails = 0;
		if (pause_for(&r, ++fails, stop))
			break;
		hb_log(HB_LOG_INFO, "kube: %s: watch resumed from version %s",
		       res->plural, r.rv);
	}
	hb_kube_decoder_free(r.dec);
	hb_kube_known_free(r.known);
	hb_buf_free(&r.key);
	return rc;
}
