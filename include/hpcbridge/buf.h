/*
 * buf.h - growable byte buffers with a hard maximum size, and arenas.
 *
 * struct hb_buf owns its bytes and always keeps them NUL-terminated, so
 * b->data can be used as a C string.  Every append fails with HB_ETOOBIG
 * rather than growing past b->max, and with HB_ENOMEM if malloc fails; a
 * failed append leaves the buffer as it was.
 *
 * struct hb_arena hands out memory that is freed all at once.  A jobspec
 * keeps every string it holds in one arena, so freeing a job is one call
 * and parsing one does few mallocs.
 */
#ifndef HPCBRIDGE_BUF_H
#define HPCBRIDGE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct hb_buf {
	char *data;  /* NUL-terminated; NULL until the first append */
	size_t len;  /* bytes used, not counting the NUL */
	size_t cap;  /* bytes allocated */
	size_t max;  /* hard cap on len; 0 means HB_BUF_DEFAULT_MAX */
};

#define HB_BUF_DEFAULT_MAX (64u * 1024 * 1024)

/* Initialise an empty buffer that may grow to max bytes (0: default). */
void hb_buf_init(struct hb_buf *b, size_t max);
/* Release the bytes; the buffer is empty and reusable afterwards. */
void hb_buf_free(struct hb_buf *b);
/* Forget the contents but keep the allocation. */
void hb_buf_reset(struct hb_buf *b);
/* Take ownership of the bytes (caller frees with free()); b becomes empty.
 * Returns an empty allocated string for an empty buffer, NULL on ENOMEM. */
char *hb_buf_steal(struct hb_buf *b);

/* Make room for n more bytes (and the NUL) so that appends up to them do
 * not reallocate; HB_ETOOBIG past max, HB_ENOMEM.  Contents unchanged. */
int hb_buf_reserve(struct hb_buf *b, size_t n);
int hb_buf_append(struct hb_buf *b, const void *p, size_t n);
int hb_buf_puts(struct hb_buf *b, const char *s);
int hb_buf_putc(struct hb_buf *b, char c);
/* Append v in decimal (no printf: it is on hot paths). */
int hb_buf_put_u64(struct hb_buf *b, uint64_t v);
int hb_buf_printf(struct hb_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int hb_buf_vprintf(struct hb_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Append the standard base64 (RFC 4648, padded) of n bytes of p. */
int hb_buf_base64(struct hb_buf *b, const void *p, size_t n);
/* Append the bytes that base64 text s (n chars) encodes: padded, no
 * whitespace; HB_EINVAL for anything else (b is then left as it was). */
int hb_buf_unbase64(struct hb_buf *b, const char *s, size_t n);

struct hb_arena_chunk;
struct hb_arena {
	struct hb_arena_chunk *head;
	struct hb_arena_chunk *spare; /* chunks kept by hb_arena_reset */
	size_t total;  /* bytes handed out so far */
	size_t max;    /* cap on total; 0 means HB_BUF_DEFAULT_MAX */
};

void hb_arena_init(struct hb_arena *a, size_t max);
/* Free every allocation made from the arena. */
void hb_arena_free(struct hb_arena *a);
/* Forget every allocation but keep the memory: the chunks become one
 * chunk of their total size, so an arena reset between jobs of similar
 * size stops calling malloc, and holds one chunk. */
void hb_arena_reset(struct hb_arena *a);
/* Whether p points into memory a handed out and has not reset. */
int hb_arena_owns(const struct hb_arena *a, const void *p);
/* Zeroed, 16-byte-aligned memory; NULL when out of memory or past max. */
void *hb_arena_alloc(struct hb_arena *a, size_t n);
/* Copy n bytes of s and NUL-terminate. */
char *hb_arena_strndup(struct hb_arena *a, const char *s, size_t n);
char *hb_arena_strdup(struct hb_arena *a, const char *s);
char *hb_arena_printf(struct hb_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
