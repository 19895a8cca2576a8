/*
 * fuzz_kube_watch.c - the watch-stream decoder (hb_kube_decoder_*,
 * hb_kube_event_decode) and the reflector's bookkeeping must never crash
 * or leak, and must not depend on how the bytes are split: the stream fed
 * whole and fed in pieces gives the same events and errors, in order.
 *
 * Input: byte 0 picks the longest line (16 to 4096 bytes), byte 1 seeds
 * the piece sizes, the rest is the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/kube/kube_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 4096

struct outcome {
	int rc;
	int type;
	char rv[32];
	int code;
};

/* Take every event buffered; check each; record it. */
static size_t drain(struct hb_kube_decoder *d, struct hb_kube_known *m,
		    struct outcome *out, size_t n)
{
	struct hb_buf key;

	hb_buf_init(&key, 0);
	for (;;) {
		struct hb_kube_event ev;
		struct hb_err err = { 0 };
		int rc = hb_kube_decoder_next(d, &ev, &err);
		int t;

		if (rc == HB_EAGAIN)
			break;
		if (rc) {
			/* An error says why, and leaves no object. */
			if (!err.msg[0] || ev.object ||
			    (rc != HB_EPROTO && rc != HB_ETOOBIG))
				abort();
		} else {
			if (!ev.object || (unsigned)ev.type > HB_KUBE_ERROR ||
			    strnlen(ev.rv, sizeof(ev.rv)) >= sizeof(ev.rv))
				abort();
			if (ev.type != HB_KUBE_ERROR &&
			    ev.type != HB_KUBE_BOOKMARK &&
			    !hb_kube_obj_key(ev.object, &key)) {
				if (hb_kube_known_apply(m, key.data, ev.type,
							ev.rv, &t))
					abort();
				if (t != -1 && t != HB_KUBE_ADDED &&
				    t != HB_KUBE_MODIFIED &&
				    t != HB_KUBE_DELETED)
					abort();
			}
		}
		if (n < MAX_EVENTS) {
			out[n].rc = rc;
			out[n].type = rc ? -1 : (int)ev.type;
			out[n].code = ev.code;
			memcpy(out[n].rv, ev.rv, sizeof(ev.rv));
			n++;
		}
		hb_kube_event_clear(&ev);
	}
	hb_buf_free(&key);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome a[MAX_EVENTS], b[MAX_EVENTS];
	struct hb_kube_decoder *d;
	struct hb_kube_known *m;
	struct hb_kube_event ev;
	struct hb_err err = { 0 };
	size_t max_line, na = 0, nb = 0, off;
	uint32_t seed;
	const char *s;

	if (size < 2)
		return 0;
	max_line = 16 + (size_t)data[0] * 16;
	seed = data[1] | 1u;
	s = (const char *)data + 2;
	size -= 2;

	/* One line, decoded directly. */
	if (!hb_kube_event_decode(s, size, &ev, &err)) {
		if (!ev.object)
			abort();
	} else if (!err.msg[0] || ev.object) {
		abort();
	}
	hb_kube_event_clear(&ev);

	/* Whole. */
	m = hb_kube_known_new();
	if (hb_kube_decoder_new(max_line, &d) || !m)
		abort();
	if (hb_kube_decoder_feed(d, s, size))
		abort();
	na = drain(d, m, a, 0);
	hb_kube_decoder_free(d);
	hb_kube_known_free(m);

	/* In pieces of 1 to 64 bytes, drained after each. */
	m = hb_kube_known_new();
	if (hb_kube_decoder_new(max_line, &d) || !m)
		abort();
	for (off = 0; off < size;) {
		size_t n;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 64;
		if (n > size - off)
			n = size - off;
		if (hb_kube_decoder_feed(d, s + off, n))
			abort();
		off += n;
		nb = drain(d, m, b, nb);
	}
	hb_kube_decoder_free(d);
	hb_kube_known_free(m);

	if (na != nb)
		abort();
	for (size_t i = 0; i < na; i++)
		if (a[i].rc != b[i].rc || a[i].type != b[i].type ||
		    a[i].code != b[i].code || strcmp(a[i].rv, b[i].rv))
			abort();
	return 0;
}
