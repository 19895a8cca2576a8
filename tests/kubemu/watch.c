/*
 * watch.c - watch streams: newline-delimited JSON events over a chunked
 * response, as the API server sends them.
 *
 *   {"type":"ADDED","object":{...}}
 *   {"type":"BOOKMARK","object":{"kind":"MPIJob","apiVersion":...,
 *    "metadata":{"resourceVersion":"123"}}}
 *   {"type":"ERROR","object":{"kind":"Status",...,"code":410}}
 *
 * A watch without a resourceVersion (or with "0") starts with synthetic
 * ADDED events for what exists, then follows changes.  One from version N
 * gets every change after N, or one ERROR event with 410 Expired when N
 * is older than the store's window.  With a selector, an object that
 * stops matching is sent as DELETED and one that starts matching as
 * ADDED, as the server's watch cache does.  Bookmarks come every
 * --bookmark-interval when asked for.  The stream ends cleanly at
 * timeoutSeconds, and is cut without its last chunk when the faults
 * endpoint drops watches (the client sees a broken connection).
 *
 * The reader runs on the connection's own thread (libmicrohttpd's
 * thread-per-connection mode), so it blocks on the store's condition
 * variable between events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "kubemu.h"

/* Events taken from the store at a time. */
#define BATCH 64
/* Longest wait before the reader looks around (stop, drops). */
#define TICK_MS 1000

enum wstate { W_RUN, W_END, W_ABORT };

struct km_watch {
	struct km_ctx *ctx;
	enum km_res res;
	char *ns;
	struct km_selector *labels, *fields;
	uint64_t cursor;
	int bookmarks;
	int64_t deadline;
	int64_t next_bookmark;
	unsigned drop_gen;
	enum wstate state;
	int table; /* pods as Tables (kubectl get -w) */
	/* Synthetic ADDED events still to send. */
	struct km_obj **initial;
	size_t ninitial, next_initial;
	/* Bytes encoded and not yet handed to the connection. */
	struct hb_buf out;
	size_t off;
};

static int matches(const struct km_watch *w, const struct km_obj *o)
{
	if (!o)
		return 0;
	if (w->ns && strcmp(o->ns, w->ns))
		return 0;
	return km_selector_match(w->labels, km_get(km_get(o->tree, "metadata"),
						   "labels")) &&
	       km_fields_match(w->fields, o->tree);
}

static int list_filter(void *arg, const struct km_obj *o)
{
	return matches(arg, o);
}

static int encode(struct km_watch *w, const char *type, const char *obj,
		  size_t len)
{
	if (hb_buf_puts(&w->out, "{\"type\":\"") ||
	    hb_buf_puts(&w->out, type) ||
	    hb_buf_puts(&w->out, "\",\"object\":") ||
	    hb_buf_append(&w->out, obj, len) || hb_buf_puts(&w->out, "}\n"))
		return HB_ENOMEM;
	return 0;
}

/* An event of object o: its JSON, or for a Table watch of pods a Table
 * of its row (the columns in each, which kubectl takes). */
static int encode_obj(struct km_watch *w, const char *type, struct km_obj *o)
{
	cJSON *t;
	char *txt;
	int rc;

	if (!w->table || o->res != KM_POD)
		return encode(w, type, o->json, o->len);
	t = km_table_pods(&o, 1, o->rv, NULL, 0);
	txt = t ? cJSON_PrintUnformatted(t) : NULL;
	rc = txt ? encode(w, type, txt, strlen(txt)) : HB_ENOMEM;
	free(txt);
	cJSON_Delete(t);
	return rc;
}

static void encode_error(struct km_watch *w, int code, const char *reason,
			 const char *msg)
{
	cJSON *st = km_status_plain(code, reason, msg);
	char *txt = st ? cJSON_PrintUnformatted(st) : NULL;

	if (txt)
		encode(w, "ERROR", txt, strlen(txt));
	free(txt);
	cJSON_Delete(st);
	w->state = W_END;
}

static void encode_bookmark(struct km_watch *w)
{
	char obj[256];
	int n = snprintf(obj, sizeof(obj),
			 "{\"kind\":\"%s\",\"apiVersion\":\"%s\","
			 "\"metadata\":{\"resourceVersion\":\"%llu\","
			 "\"creationTimestamp\":null}}",
			 km_res[w->res].kind, km_res[w->res].gv,
			 (unsigned long long)w->cursor);

	encode(w, "BOOKMARK", obj, (size_t)n);
}

struct km_watch *km_watch_new(struct km_ctx *ctx, struct km_watch_opts *o)
{
	struct km_watch *w = calloc(1, sizeof(*w));
	int64_t now = km_now_ms();

	if (!w) {
		km_selector_free(o->labels);
		km_selector_free(o->fields);
		return NULL;
	}
	w->ctx = ctx;
	w->res = o->res;
	w->labels = o->labels;
	w->fields = o->fields;
	w->bookmarks = o->bookmarks;
	w->table = o->table;
	w->deadline = now + o->timeout_ms;
	w->next_bookmark = now + ctx->o->bookmark_ms;
	w->drop_gen = atomic_load(&ctx->drop_gen);
	hb_buf_init(&w->out, 0);
	if (o->ns && !(w->ns = strdup(o->ns)))
		goto fail;
	if (o->gone) {
		encode_error(w, 410, "Expired",
			     "too old resource version: injected by the "
			     "faults endpoint");
		return w;
	}
	if (o->has_rv) {
		uint64_t oldest = km_store_oldest(ctx->store);

		w->cursor = o->rv;
		if (o->rv < oldest) {
			char msg[96];

			snprintf(msg, sizeof(msg),
				 "too old resource version: %llu (%llu)",
				 (unsigned long long)o->rv,
				 (unsigned long long)oldest);
			encode_error(w, 410, "Expired", msg);
		}
		return w;
	}
	/* No version: the current state first, then changes. */
	if (km_store_list(ctx->store, w->res, w->ns, NULL, NULL, list_filter, w,
			  0, &w->initial, &w->ninitial, NULL, &w->cursor))
		goto fail;
	return w;
fail:
	km_watch_free(w);
	return NULL;
}

void km_watch_free(void *cls)
{
	struct km_watch *w = cls;

	if (!w)
		return;
	for (size_t i = w->next_initial; i < w->ninitial; i++)
		km_obj_unref(w->initial[i]);
	free(w->initial);
	km_selector_free(w->labels);
	km_selector_free(w->fields);
	free(w->ns);
	hb_buf_free(&w->out);
	free(w);
}

/* Encode the events after the cursor; 0 when there were none. */
static int pump(struct km_watch *w)
{
	struct km_event ev[BATCH];
	uint64_t scanned;
	int n, sent = 0;

	n = km_store_events(w->ctx->store, w->res, w->cursor, ev, BATCH,
			    &scanned);
	if (n == HB_ERANGE) {
		char msg[96];

		snprintf(msg, sizeof(msg),
			 "too old resource version: %llu (%llu)",
			 (unsigned long long)w->cursor,
			 (unsigned long long)km_store_oldest(w->ctx->store));
		encode_error(w, 410, "Expired", msg);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int now = matches(w, ev[i].obj);
		int before = matches(w, ev[i].prev);
		const char *type = NULL;

		switch (ev[i].type) {
		case KM_ADDED:
			type = now ? "ADDED" : NULL;
			break;
		case KM_MODIFIED:
			type = now && before ? "MODIFIED"
			       : now	     ? "ADDED"
			       : before	     ? "DELETED"
					     : NULL;
			break;
		case KM_DELETED:
			type = before || now ? "DELETED" : NULL;
			break;
		}
		if (type) {
			encode_obj(w, type, ev[i].obj);
			sent++;
		}
		km_event_release(&ev[i]);
	}
	w->cursor = scanned;
	return sent || n > 0;
}

ssize_t km_watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct km_watch *w = cls;

	(void)pos;
	for (;;) {
		int64_t now, wake;

		if (w->off < w->out.len) {
			size_t n = w->out.len - w->off;

			if (n > max)
				n = max;
			memcpy(buf, w->out.data + w->off, n);
			w->off += n;
			if (w->off == w->out.len) {
				hb_buf_reset(&w->out);
				w->off = 0;
			}
			return (ssize_t)n;
		}
		if (w->state == W_END)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (w->state == W_ABORT ||
		    atomic_load(&w->ctx->drop_gen) != w->drop_gen ||
		    atomic_load(&w->ctx->stopping))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (w->next_initial < w->ninitial) {
			while (w->next_initial < w->ninitial &&
			       w->out.len < 256 * 1024) {
				struct km_obj *o = w->initial[w->next_initial];

				encode_obj(w, "ADDED", o);
				km_obj_unref(o);
				w->initial[w->next_initial++] = NULL;
			}
			continue;
		}
		if (pump(w))
			continue;
		now = km_now_ms();
		if (now >= w->deadline) {
			w->state = W_END;
			continue;
		}
		if (w->bookmarks && now >= w->next_bookmark) {
			encode_bookmark(w);
			w->next_bookmark = now + w->ctx->o->bookmark_ms;
			continue;
		}
		wake = now + TICK_MS;
		if (wake > w->deadline)
			wake = w->deadline;
		if (w->bookmarks && wake > w->next_bookmark)
			wake = w->next_bookmark;
		km_store_wait(w->ctx->store, w->cursor, wake);
	}
}
