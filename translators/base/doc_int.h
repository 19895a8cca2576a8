/*
 * doc_int.h - what the files of the document library (doc.c, doc_check.c,
 * doc_write.c) share: the integer limit of numbers and the byte-level
 * helpers of the readers and writers, inline as they are on hot paths.
 */
#ifndef HPCBRIDGE_DOC_INT_H
#define HPCBRIDGE_DOC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/bytes.h"

#define INT_LIMIT 9007199254740992ull /* 2^53 */

static inline int hb_doc_is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline int hb_doc_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode one UTF-8 sequence at s (n bytes left).  Returns its length and
 * the code point in *cp, or 0 if the bytes are not valid UTF-8 (overlong,
 * surrogate, beyond U+10FFFF or truncated).
 */
static inline size_t hb_doc_utf8_dec(const unsigned char *s, size_t n,
				     uint32_t *cp)
{
	uint32_t c = s[0];
	size_t len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		c &= 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		c &= 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

/*
 * The bytes of block x that need care in a JSON or
 * double-quoted string (a control byte, '"', '\\', DEL or non-ASCII):
 * bit i for byte i.  0: all sixteen are plain.
 */
static inline unsigned hb_doc_care16(hb_v16 x)
{
	return hb_v16_mask(hb_v16_or(
		hb_v16_ctl(x), hb_v16_or(hb_v16_eq(x, '"'), hb_v16_eq(x, '\\'))));
}

#endif
