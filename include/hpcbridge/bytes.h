/*
 * bytes.h - sixteen bytes at a time: which bytes of a block belong to a
 * class (a given byte, control bytes, non-ASCII).
 *
 * The scanners that walk long text (a job script through the writers,
 * the $-escaping, the literal blocks) skip the blocks where nothing
 * matches and stop at the first byte that does.  On x86-64 a block is one
 * SSE2 register; elsewhere the same operations run byte by byte, with the
 * same results.
 *
 * A vector holds a block, or a per-byte truth value (0x00 or 0xff) once
 * compared; hb_v16_mask() turns the latter into one bit per byte, bit i
 * for byte i.  Loads are unaligned; the caller makes sure 16 bytes are
 * readable.
 */
#ifndef HPCBRIDGE_BYTES_H
#define HPCBRIDGE_BYTES_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>

typedef __m128i hb_v16;

static inline hb_v16 hb_v16_load(const void *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* Bytes equal to c. */
static inline hb_v16 hb_v16_eq(hb_v16 x, unsigned char c)
{
	return _mm_cmpeq_epi8(x, _mm_set1_epi8((char)c));
}

/* Control bytes (below 0x20), DEL and every byte from 0x80 up. */
static inline hb_v16 hb_v16_ctl(hb_v16 x)
{
	return _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
			    hb_v16_eq(x, 0x7f));
}

/* Bytes from lo to hi, both included. */
static inline hb_v16 hb_v16_range(hb_v16 x, unsigned char lo, unsigned char hi)
{
	/* x - lo wraps below lo; in range when it is at most hi - lo. */
	hb_v16 d = _mm_sub_epi8(x, _mm_set1_epi8((char)lo));

	return _mm_cmpeq_epi8(_mm_subs_epu8(d, _mm_set1_epi8((char)(hi - lo))),
			      _mm_setzero_si128());
}

/* ASCII letters, either case. */
static inline hb_v16 hb_v16_alpha(hb_v16 x)
{
	return hb_v16_range(_mm_or_si128(x, _mm_set1_epi8(0x20)), 'a', 'z');
}

static inline hb_v16 hb_v16_or(hb_v16 a, hb_v16 b)
{
	return _mm_or_si128(a, b);
}

/* a without b. */
static inline hb_v16 hb_v16_andnot(hb_v16 a, hb_v16 b)
{
	return _mm_andnot_si128(b, a);
}

static inline unsigned hb_v16_mask(hb_v16 m)
{
	return (unsigned)_mm_movemask_epi8(m);
}

#else /* the same, byte by byte */

typedef struct {
	unsigned char b[16];
} hb_v16;

static inline hb_v16 hb_v16_load(const void *p)
{
	hb_v16 v;

	memcpy(v.b, p, 16);
	return v;
}

static inline hb_v16 hb_v16_eq(hb_v16 x, unsigned char c)
{
	for (int i = 0; i < 16; i++)
		x.b[i] = x.b[i] == c ? 0xff : 0;
	return x;
}

static inline hb_v16 hb_v16_ctl(hb_v16 x)
{
	for (int i = 0; i < 16; i++)
		x.b[i] = x.b[i] < 0x20 || x.b[i] >= 0x7f ? 0xff : 0;
	return x;
}

static inline hb_v16 hb_v16_range(hb_v16 x, unsigned char lo, unsigned char hi)
{
	for (int i = 0; i < 16; i++)
		x.b[i] = x.b[i] >= lo && x.b[i] <= hi ? 0xff : 0;
	return x;
}

static inline hb_v16 hb_v16_alpha(hb_v16 x)
{
	for (int i = 0; i < 16; i++)
		x.b[i] = (x.b[i] >= 'a' && x.b[i] <= 'z') ||
				 (x.b[i] >= 'A' && x.b[i] <= 'Z')
			 ? 0xff
			 : 0;
	return x;
}

static inline hb_v16 hb_v16_or(hb_v16 a, hb_v16 b)
{
	for (int i = 0; i < 16; i++)
		a.b[i] |= b.b[i];
	return a;
}

static inline hb_v16 hb_v16_andnot(hb_v16 a, hb_v16 b)
{
	for (int i = 0; i < 16; i++)
		a.b[i] &= (unsigned char)~b.b[i];
	return a;
}

static inline unsigned hb_v16_mask(hb_v16 m)
{
	unsigned r = 0;

	for (int i = 0; i < 16; i++)
		r |= (unsigned)(m.b[i] >> 7) << i;
	return r;
}

#endif

/* The index of the lowest set bit of a non-zero mask. */
static inline unsigned hb_v16_first(unsigned m)
{
#if defined(__GNUC__) || defined(__clang__)
	return (unsigned)__builtin_ctz(m);
#else
	unsigned i = 0;

	while (!(m & 1u)) {
		m >>= 1;
		i++;
	}
	return i;
#endif
}

/*
 * Copy n bytes from s to o, which do not overlap: short runs inline, as
 * two overlapping fixed-size moves, the rest through memcpy().  The
 * writers copy many short keys and values; a call per copy costs more
 * than the copy.
 */
static inline void hb_copy(void *o, const void *s, size_t n)
{
	unsigned char *d = o;
	const unsigned char *p = s;

	if (n > 16) {
		memcpy(d, p, n);
	} else if (n >= 8) {
		memcpy(d, p, 8);
		memcpy(d + n - 8, p + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, p, 4);
		memcpy(d + n - 4, p + n - 4, 4);
	} else if (n) {
		d[0] = p[0];
		d[n / 2] = p[n / 2];
		d[n - 1] = p[n - 1];
	}
}

/*
 * The n bytes at p, n below 16, as a block padded with zero bytes (which
 * the caller masks off: (1u << n) - 1 keeps the real ones).  Nothing past
 * p + n is read.
 */
static inline hb_v16 hb_v16_load_tail(const void *p, size_t n)
{
	unsigned char pad[16] = {0};

	hb_copy(pad, p, n);
	return hb_v16_load(pad);
}

#endif /* HPCBRIDGE_BYTES_H */
