/*
 * doc_check.c - the JSON syntax check (hb_json_check()): the grammar of
 * the JSON reader, walked without building a tree.
 */
#include <stdint.h>
#include <string.h>

#include "hpcbridge/bytes.h"
#include "hpcbridge/doc.h"
#include "translators/base/doc_int.h"

/* ------------------------------------------------------------------ */
/* JSON syntax check                                                   */
/* ------------------------------------------------------------------ */

/*
 * hb_json_check() walks the grammar of the reader in doc.c (jvalue(),
 * jstring(), jnumber()) without building anything: one pass, a stack of
 * the closers of the open containers instead of recursion, no allocation.
 * Stored documents are mostly string bytes (a job script escaped in a
 * string), so strings are skipped sixteen bytes at a time up to the next
 * byte that needs a look, as the writers find what they escape.  What the
 * reader refuses for its own reasons rather than JSON's (duplicate keys,
 * \u0000, integers beyond 2^53, numbers too long or out of range) is
 * accepted here.
 */

#define JC_STR_(x) #x
#define JC_STR(x)  JC_STR_(x)

/* As the reader words it. */
static const char jc_too_deep[] =
	"nesting deeper than " JC_STR(HB_DOC_MAX_DEPTH) " levels";

/* After a backslash: 1 a one-letter escape, 2 \u, 0 anything else. */
static const unsigned char jc_esc[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1,
    ['n'] = 1, ['r'] = 1,  ['t'] = 1, ['u'] = 2,
};

struct jc {
	const char *why; /* the first problem */
	const unsigned char *at;
};

static const unsigned char *jc_fail(struct jc *c, const unsigned char *at,
				    const char *why)
{
	c->why = why;
	c->at = at;
	return NULL;
}

static inline int jc_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The four hex digits at p: 0 and *u, 1 when one is not a hex digit, 2
 * when the input ends first. */
static int jc_hex4(const unsigned char *p, const unsigned char *end,
		   uint32_t *u)
{
	uint32_t v = 0;
	int i, d;

	for (i = 0; i < 4; i++) {
		if (p + i == end)
			return 2;
		if ((d = hb_doc_hexval(p[i])) < 0)
			return 1;
		v = v << 4 | (uint32_t)d;
	}
	*u = v;
	return 0;
}

/*
 * The string whose opening quote is at p: the byte after its closing
 * quote, or NULL with the problem in c.  A string the input ends inside
 * is "unterminated" at its opening quote, unless a problem comes first.
 * Inlined into both its callers (keys and values), which keeps the
 * block scan's constants in registers: a call per string cost a tenth
 * more instructions on a typical document.
 */
static inline __attribute__((always_inline)) const unsigned char *
jc_string(struct jc *c, const unsigned char *p, const unsigned char *end)
{
	const unsigned char *open = p++, *esc;
	uint32_t u, lo;
	size_t k;
	int rc;

	for (;;) {
		while (end - p >= 16) {
			unsigned m = hb_doc_care16(hb_v16_load(p));

			if (m) {
				p += hb_v16_first(m);
				goto look;
			}
			p += 16;
		}
		if (p == end)
			return jc_fail(c, open, "unterminated string");
	look:
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			if (end - p < 2)
				return jc_fail(c, open, "unterminated string");
			if (jc_esc[p[1]] == 1) {
				p += 2;
				continue;
			}
			if (!jc_esc[p[1]])
				goto bad_escape;
			esc = p;
			if ((rc = jc_hex4(p + 2, end, &u)))
				goto bad_hex;
			p += 6;
			if (u >= 0xDC00 && u <= 0xDFFF)
				return jc_fail(c, esc,
					       "lone surrogate in a string");
			if (u < 0xD800 || u > 0xDBFF)
				continue;
			/* a high surrogate: its low half must follow */
			if (p == end || (*p == '\\' && end - p < 2))
				return jc_fail(c, open, "unterminated string");
			if (p[0] != '\\' || p[1] != 'u')
				return jc_fail(c, esc,
					       "lone surrogate in a string");
			if ((rc = jc_hex4(p + 2, end, &lo)))
				goto bad_hex;
			if (lo < 0xDC00 || lo > 0xDFFF)
				return jc_fail(c, esc,
					       "lone surrogate in a string");
			p += 6;
			continue;
		}
		if (*p < 0x20)
			return jc_fail(c, p, "control character in a string");
		if (*p < 0x80) { /* DEL, or a byte of the last block */
			p++;
			continue;
		}
		if (!(k = hb_doc_utf8_dec(p, (size_t)(end - p), &u)))
			return jc_fail(c, p, "invalid UTF-8 in a string");
		p += k;
	}
bad_hex:
	if (rc == 2)
		return jc_fail(c, open, "unterminated string");
bad_escape:
	return jc_fail(c, p, "invalid escape in a string");
}

/* The number at p (a '-' or a digit): the byte after it, or NULL.  RFC
 * 8259: no leading zero, digits on both sides of a '.', and an exponent
 * has digits.  Problems are reported where the number starts. */
static const unsigned char *jc_number(struct jc *c, const unsigned char *p,
				      const unsigned char *end)
{
	const unsigned char *s = p;

	if (*p == '-')
		p++;
	if (p == end || !hb_doc_is_digit(*p))
		goto bad;
	if (*p == '0') {
		if (++p < end && hb_doc_is_digit(*p))
			goto bad;
	} else {
		while (++p < end && hb_doc_is_digit(*p))
			;
	}
	if (p < end && *p == '.') {
		if (++p == end || !hb_doc_is_digit(*p))
			goto bad;
		while (++p < end && hb_doc_is_digit(*p))
			;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !hb_doc_is_digit(*p))
			goto bad;
		while (++p < end && hb_doc_is_digit(*p))
			;
	}
	return p;
bad:
	return jc_fail(c, s, "invalid number");
}

const char *hb_json_check(const char *s, size_t n, size_t *at)
{
	const unsigned char *p = (const unsigned char *)s, *end, *comma;
	unsigned char close[HB_DOC_MAX_DEPTH]; /* '}' or ']' per open level */
	struct jc c = {NULL, NULL};
	int depth = 0;

	if (!s) {
		if (at)
			*at = 0;
		return n ? "no input" : "unexpected end of input";
	}
	end = p + n;
value:
	while (p < end && jc_ws(*p))
		p++;
value_here: /* the blanks are behind p */
	if (p == end)
		goto eof;
	switch (*p) {
	case '{':
	case '[':
		if (depth == HB_DOC_MAX_DEPTH) {
			jc_fail(&c, p, jc_too_deep);
			goto out;
		}
		close[depth++] = *p == '{' ? '}' : ']';
		p++;
		while (p < end && jc_ws(*p))
			p++;
		if (p < end && *p == close[depth - 1]) {
			p++;
			depth--;
			goto next;
		}
		if (close[depth - 1] == '}')
			goto key_here;
		goto value_here;
	case '"':
		if (!(p = jc_string(&c, p, end)))
			goto out;
		goto next;
	case 't':
		if (end - p < 4 || memcmp(p, "true", 4))
			goto bad_value;
		p += 4;
		goto next;
	case 'f':
		if (end - p < 5 || memcmp(p, "false", 5))
			goto bad_value;
		p += 5;
		goto next;
	case 'n':
		if (end - p < 4 || memcmp(p, "null", 4))
			goto bad_value;
		p += 4;
		goto next;
	case '-':
	case '0' ... '9':
		if (!(p = jc_number(&c, p, end)))
			goto out;
		goto next;
	case '+':
	case '.':
		jc_fail(&c, p, "invalid number");
		goto out;
	default:
		goto bad_value;
	}
key_here:
	/* after '{' or ',' and the blanks after them */
	if (p == end)
		goto eof;
	if (*p != '"') {
		jc_fail(&c, p, "expected a string key");
		goto out;
	}
	if (!(p = jc_string(&c, p, end)))
		goto out;
	while (p < end && jc_ws(*p))
		p++;
	if (p == end)
		goto eof;
	if (*p != ':') {
		jc_fail(&c, p, "expected ':'");
		goto out;
	}
	p++;
	goto value;
next:
	/* after a value */
	while (p < end && jc_ws(*p))
		p++;
	if (!depth) {
		if (p == end)
			return NULL;
		jc_fail(&c, p, "unexpected content after the value");
		goto out;
	}
	if (p == end)
		goto eof;
	if (*p == ',') {
		comma = p++;
		while (p < end && jc_ws(*p))
			p++;
		if (p < end && *p == close[depth - 1]) {
			jc_fail(&c, comma, "trailing comma");
			goto out;
		}
		if (close[depth - 1] == '}')
			goto key_here;
		goto value_here;
	}
	if (*p == close[depth - 1]) {
		p++;
		depth--;
		goto next;
	}
	jc_fail(&c, p,
		close[depth - 1] == '}' ? "expected ',' or '}'"
					: "expected ',' or ']'");
	goto out;
bad_value:
	jc_fail(&c, p, "invalid value");
	goto out;
eof:
	jc_fail(&c, end, "unexpected end of input");
out:
	if (at)
		*at = (size_t)(c.at - (const unsigned char *)s);
	return c.why;
}
