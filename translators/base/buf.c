/*
 * buf.c - growable buffers with a hard cap, and arenas.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/bytes.h"
#include "hpcbridge/error.h"

void hb_buf_init(struct hb_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max ? max : HB_BUF_DEFAULT_MAX;
}

void hb_buf_free(struct hb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void hb_buf_reset(struct hb_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *hb_buf_steal(struct hb_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

/* Make room for n more bytes plus the NUL. */
static int reserve(struct hb_buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (!b->max)
		b->max = HB_BUF_DEFAULT_MAX;
	if (n > b->max - b->len)
		return HB_ETOOBIG;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	p = realloc(b->data, cap);
	if (!p)
		return HB_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int hb_buf_reserve(struct hb_buf *b, size_t n)
{
	return reserve(b, n);
}

int hb_buf_append(struct hb_buf *b, const void *p, size_t n)
{
	int rc = reserve(b, n);

	if (rc)
		return rc;
	hb_copy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int hb_buf_puts(struct hb_buf *b, const char *s)
{
	return hb_buf_append(b, s, strlen(s));
}

int hb_buf_putc(struct hb_buf *b, char c)
{
	return hb_buf_append(b, &c, 1);
}

int hb_buf_put_u64(struct hb_buf *b, uint64_t v)
{
	char t[20], *p = t + sizeof(t);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return hb_buf_append(b, p, (size_t)(t + sizeof(t) - p));
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int hb_buf_base64(struct hb_buf *b, const void *p, size_t n)
{
	const unsigned char *u = p;
	size_t out = (n + 2) / 3 * 4, i;
	char *d;
	int rc;

	if (n > SIZE_MAX / 2 || (rc = reserve(b, out)))
		return n > SIZE_MAX / 2 ? HB_ETOOBIG : rc;
	d = b->data + b->len;
	for (i = 0; i + 2 < n; i += 3) {
		*d++ = b64[u[i] >> 2];
		*d++ = b64[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
		*d++ = b64[((u[i + 1] & 15) << 2) | (u[i + 2] >> 6)];
		*d++ = b64[u[i + 2] & 63];
	}
	if (i < n) {
		*d++ = b64[u[i] >> 2];
		if (i + 1 < n) {
			*d++ = b64[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
			*d++ = b64[(u[i + 1] & 15) << 2];
		} else {
			*d++ = b64[(u[i] & 3) << 4];
			*d++ = '=';
		}
		*d++ = '=';
	}
	b->len += out;
	b->data[b->len] = '\0';
	return 0;
}

static int b64_value(char c)
{
	const char *p = c ? memchr(b64, c, 64) : NULL;

	return p ? (int)(p - b64) : -1;
}

int hb_buf_unbase64(struct hb_buf *b, const char *s, size_t n)
{
	size_t start = b->len, i;
	int rc;

	if (n % 4)
		return HB_EINVAL;
	if ((rc = reserve(b, n / 4 * 3)))
		return rc;
	for (i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		unsigned char *d;

		for (int k = 0; k < 4; k++) {
			v[k] = b64_value(s[i + k]);
			if (v[k] < 0) {
				/* '=' only as the last one or two */
				if (s[i + k] != '=' || i + 4 != n || k < 2 ||
				    (k == 2 && s[i + 3] != '='))
					goto bad;
				v[k] = 0;
				pad++;
			}
		}
		d = (unsigned char *)b->data + b->len;
		d[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		d[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		d[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
		b->len += 3 - (size_t)pad;
	}
	b->data[b->len] = '\0';
	return 0;
bad:
	b->len = start;
	b->data[b->len] = '\0';
	return HB_EINVAL;
}

int hb_buf_vprintf(struct hb_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	size_t avail;
	int n, rc;

	if ((rc = reserve(b, 0)))
		return rc;
	avail = b->cap - b->len;
	va_copy(ap2, ap);
	n = vsnprintf(b->data + b->len, avail, fmt, ap2);
	va_end(ap2);
	if (n < 0) {
		b->data[b->len] = '\0';
		return HB_EINVAL;
	}
	if ((size_t)n >= avail) {
		if ((rc = reserve(b, (size_t)n))) {
			b->data[b->len] = '\0';
			return rc;
		}
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	}
	b->len += (size_t)n;
	return 0;
}

int hb_buf_printf(struct hb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = hb_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

/* Arena: a list of chunks, newest first; allocations are bump-pointer. */
struct hb_arena_chunk {
	struct hb_arena_chunk *next;
	size_t used, size;
	_Alignas(16) unsigned char mem[];
};

#define ARENA_CHUNK 8192

/*
 * Under AddressSanitizer each allocation gets its own exactly-sized block,
 * so a write one byte past an arena string or array is caught instead of
 * landing silently in the chunk's free space.
 */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_EXACT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_EXACT 1
#endif
#endif
#ifndef ARENA_EXACT
#define ARENA_EXACT 0
#endif

void hb_arena_init(struct hb_arena *a, size_t max)
{
	a->head = NULL;
	a->spare = NULL;
	a->total = 0;
	a->max = max ? max : HB_BUF_DEFAULT_MAX;
}

void hb_arena_free(struct hb_arena *a)
{
	struct hb_arena_chunk *c = a->head, *next;

	while (c) {
		next = c->next;
		free(c);
		c = next;
		if (!c) {
			c = a->spare;
			a->spare = NULL;
		}
	}
	a->head = NULL;
	a->total = 0;
}

void hb_arena_reset(struct hb_arena *a)
{
	struct hb_arena_chunk *c = a->head;
	size_t size = 0;

	if (ARENA_EXACT || !c) { /* exact blocks: nothing to reuse */
		hb_arena_free(a);
		return;
	}
	if (!c->next && !a->spare) {
		c->used = 0;
		a->total = 0;
		return;
	}
	/* Several chunks: replace them with one that holds them all, so the
	 * next round of the same size needs no malloc and one chunk. */
	for (c = a->head; c; c = c->next)
		size += c->size;
	for (c = a->spare; c; c = c->next)
		size += c->size;
	hb_arena_free(a);
	if (size > a->max)
		size = a->max;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return; /* the next allocation will try again */
	c->next = NULL;
	c->used = 0;
	c->size = size;
	a->spare = c;
}

int hb_arena_owns(const struct hb_arena *a, const void *p)
{
	const unsigned char *u = p;

	for (const struct hb_arena_chunk *c = a->head; c; c = c->next)
		if (u >= c->mem && u < c->mem + c->used)
			return 1;
	return 0;
}

/* n bytes of the arena, as they were left (hb_arena_alloc zeroes them). */
static void *take(struct hb_arena *a, size_t n)
{
	struct hb_arena_chunk *c = a->head;
	size_t sz, off;

	if (!a->max)
		a->max = HB_BUF_DEFAULT_MAX;
	if (n == 0)
		n = 1;
	if (a->total >= a->max || n > a->max - a->total)
		return NULL;
	if (ARENA_EXACT) {
		c = malloc(sizeof(*c) + n);
		if (!c)
			return NULL;
		c->used = c->size = n;
		c->next = a->head;
		a->head = c;
		a->total += n;
		return c->mem;
	}
	n = (n + 15) & ~(size_t)15;
	if (n > a->max - a->total) /* the rounding must fit the cap too */
		return NULL;
	if ((!c || c->size - c->used < n) && a->spare &&
	    a->spare->size >= n) {
		/* A chunk kept by hb_arena_reset; a spare too small for n is
		 * left for smaller requests. */
		c = a->spare;
		a->spare = c->next;
		c->next = a->head;
		a->head = c;
	}
	if (!c || c->size - c->used < n) {
		sz = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = sz;
		if (a->head && n > ARENA_CHUNK) {
			/* A big block goes behind the current chunk so the
			 * current chunk's free space stays usable. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	off = c->used;
	c->used += n;
	a->total += n;
	return c->mem + off;
}

void *hb_arena_alloc(struct hb_arena *a, size_t n)
{
	void *p = take(a, n);

	if (p)
		memset(p, 0, n);
	return p;
}

char *hb_arena_strndup(struct hb_arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		return NULL;
	p = take(a, n + 1);
	if (!p)
		return NULL;
	hb_copy(p, s, n);
	p[n] = '\0';
	return p;
}

char *hb_arena_strdup(struct hb_arena *a, const char *s)
{
	return s ? hb_arena_strndup(a, s, strlen(s)) : NULL;
}

char *hb_arena_printf(struct hb_arena *a, const char *fmt, ...)
{
	va_list ap;
	char small[256], *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = hb_arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	if ((size_t)n < sizeof(small)) {
		memcpy(p, small, (size_t)n + 1);
	} else {
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	return p;
}
