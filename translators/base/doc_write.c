/*
 * doc_write.c - writing cJSON trees as JSON and YAML, and the streaming
 * writer (hb_emit_*()) that produces the same bytes from events, or a
 * tree.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/bytes.h"
#include "hpcbridge/doc.h"
#include "translators/base/doc_int.h"

/* ------------------------------------------------------------------ */
/* Writers                                                             */
/* ------------------------------------------------------------------ */

struct wr {
	struct hb_buf *b;
	int rc;
	int compact; /* JSON with no whitespace */
};

static const char spaces[] =
    "                                                                "
    "                                                                "
    "                                                                "
    "                                                                ";

/*
 * Append n bytes.  The fast path copies straight into spare capacity and
 * leaves the terminating NUL to finish(); hb_buf_append() grows the
 * buffer (and enforces its cap) when there is no room.
 */
static inline void put(struct wr *w, const char *s, size_t n)
{
	struct hb_buf *b = w->b;

	if (n < b->cap - b->len && n <= b->max - b->len && !w->rc) {
		hb_copy(b->data + b->len, s, n);
		b->len += n;
		return;
	}
	if (!w->rc && n)
		w->rc = hb_buf_append(b, s, n);
}

#define PUTS(w, lit) put((w), (lit), sizeof(lit) - 1)

/*
 * The fast paths write straight into the buffer: room(w, n) is where n
 * bytes (and the NUL) fit at the end of the output, growing it if need
 * be, or NULL when they cannot (an error is pending, or the cap is near):
 * the caller then takes the slow path, which meets the same error.
 * Filled bytes are counted with used().
 */
static inline char *room(struct wr *w, size_t n)
{
	struct hb_buf *b = w->b;

	if (w->rc || n > b->max - b->len ||
	    (n >= b->cap - b->len && hb_buf_reserve(b, n)))
		return NULL;
	return b->data + b->len;
}

static inline void used(struct wr *w, const char *end)
{
	w->b->len = (size_t)(end - w->b->data);
}

static void putc1(struct wr *w, char c)
{
	put(w, &c, 1);
}

static inline void indent(struct wr *w, int n)
{
	if (n > 0 && n < (int)sizeof(spaces)) {
		put(w, spaces, (size_t)n);
		return;
	}
	while (n > 0) {
		int k =
		    n < (int)sizeof(spaces) - 1 ? n : (int)sizeof(spaces) - 1;

		put(w, spaces, (size_t)k);
		n -= k;
	}
}

size_t hb_utf8_dec(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;

	return n ? hb_doc_utf8_dec(s, n, cp ? cp : &c) : 0;
}

size_t hb_utf8_span(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n && (k = hb_utf8_dec(u + i, n - i, NULL)))
		i += k;
	return i;
}

/*
 * A code point that must be escaped in output: C0/C1 controls, DEL, the
 * Unicode line and paragraph separators, the BOM and the non-characters
 * U+FFFE/U+FFFF (YAML readers reject or reinterpret them when raw).
 */
static int cp_special(uint32_t c)
{
	return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 ||
	       c == 0x2029 || c == 0xFEFF || c == 0xFFFE || c == 0xFFFF;
}

/*
 * Byte classes for the string scanners: B_PLAIN and B_INDICATOR bytes are
 * copied as they are into JSON and double-quoted YAML; B_INDICATOR bytes
 * matter to plain YAML scalars; B_QUOTE bytes are escaped in quotes;
 * B_OTHER is a control byte, DEL or part of a UTF-8 sequence.
 */
enum { B_PLAIN, B_INDICATOR, B_QUOTE, B_OTHER };

static const unsigned char bclass[256] = {
    [0 ... 0x1f] = B_OTHER,    [0x20 ... 0x21] = B_PLAIN,
    ['"'] = B_QUOTE,	       ['#'] = B_INDICATOR,
    [0x24 ... 0x39] = B_PLAIN, [':'] = B_INDICATOR,
    [0x3b ... 0x5b] = B_PLAIN, ['\\'] = B_QUOTE,
    [0x5d ... 0x7e] = B_PLAIN, [0x7f ... 0xff] = B_OTHER,
};

static const char hexdig[] = "0123456789abcdef";

static void put_u4(struct wr *w, uint32_t c)
{
	char t[6] = {'\\',
		     'u',
		     hexdig[(c >> 12) & 15],
		     hexdig[(c >> 8) & 15],
		     hexdig[(c >> 4) & 15],
		     hexdig[c & 15]};

	put(w, t, sizeof(t));
}

/* The JSON escape of code point cp (a control, '"', '\\' or special). */
static void json_escape(struct wr *w, uint32_t cp)
{
	switch (cp) {
	case '"':
		PUTS(w, "\\\"");
		break;
	case '\\':
		PUTS(w, "\\\\");
		break;
	case '\b':
		PUTS(w, "\\b");
		break;
	case '\f':
		PUTS(w, "\\f");
		break;
	case '\n':
		PUTS(w, "\\n");
		break;
	case '\r':
		PUTS(w, "\\r");
		break;
	case '\t':
		PUTS(w, "\\t");
		break;
	default:
		put_u4(w, cp);
		break;
	}
}

/*
 * quoted() for a string whose only bytes that need care are the escapes
 * JSON and YAML share (newline, tab, '"', '\\'), written straight into the
 * buffer.  Returns 0, having written nothing, for anything else (other
 * controls, DEL, non-ASCII) or when there is no room.
 */
static int quoted_fast(struct wr *w, const char *str, size_t n)
{
	const unsigned char *p = (const unsigned char *)str, *end = p + n;
	char *o = n <= SIZE_MAX / 4 ? room(w, 2 * n + 2 + 16) : NULL;

	if (!o)
		return 0;
	*o++ = '"';
	while (p < end) {
		unsigned char c;

		if (end - p >= 16) {
			unsigned m = hb_doc_care16(hb_v16_load(p));

			memcpy(o, p, 16); /* room has 16 bytes to spare */
			if (!m) {
				o += 16;
				p += 16;
				continue;
			}
			o += hb_v16_first(m);
			p += hb_v16_first(m);
		} else if (bclass[*p] <= B_INDICATOR) {
			*o++ = (char)*p++;
			continue;
		}
		c = *p++;
		*o++ = '\\';
		if (c == '\n')
			*o++ = 'n';
		else if (c == '\t')
			*o++ = 't';
		else if (c == '"' || c == '\\')
			*o++ = (char)c;
		else
			return 0;
	}
	*o++ = '"';
	used(w, o);
	return 1;
}

/*
 * Write n bytes of str double-quoted: plain bytes and valid UTF-8 as they
 * are, '"', '\\' and special code points through escape(), an invalid
 * byte as U+FFFD.  JSON strings and YAML double-quoted scalars differ
 * only in their escapes.
 */
static void quoted(struct wr *w, const char *str, size_t n,
		   void (*escape)(struct wr *, uint32_t))
{
	const unsigned char *s = (const unsigned char *)str;
	const unsigned char *end = s + n, *run = s;
	uint32_t cp;
	size_t k;

	if (n >= 16 && quoted_fast(w, str, n))
		return;
	if (n < 16) {
		/* Most strings are short keys and words with nothing to
		 * escape: one pass over the bytes, one copy. */
		char *o = room(w, n + 2);
		size_t i = 0;

		while (o && i < n && bclass[s[i]] <= B_INDICATOR)
			i++;
		if (o && i == n) {
			o[0] = '"';
			memcpy(o + 1, str, n);
			o[n + 1] = '"';
			used(w, o + n + 2);
			return;
		}
	}
	putc1(w, '"');
	while (s < end) {
		unsigned char c;

		while (end - s >= 16) {
			unsigned m = hb_doc_care16(hb_v16_load(s));

			if (m) {
				s += hb_v16_first(m);
				break;
			}
			s += 16;
		}
		if (s == end)
			break;
		c = *s;
		if (bclass[c] <= B_INDICATOR) {
			s++;
			continue;
		}
		/* The escapes JSON and YAML write alike. */
		if (c == '\n' || c == '"' || c == '\\' || c == '\t') {
			char t[2] = { '\\', c == '\n'	? 'n'
					    : c == '\t' ? 't'
							: (char)c };

			put(w, (const char *)run, (size_t)(s - run));
			put(w, t, 2);
			run = ++s;
			continue;
		}
		k = c < 0x80 ? 1 : hb_doc_utf8_dec(s, (size_t)(end - s), &cp);
		if (c < 0x80)
			cp = c;
		if (k && !cp_special(cp) && c != '"' && c != '\\') {
			s += k;
			continue;
		}
		put(w, (const char *)run, (size_t)(s - run));
		if (!k) {
			PUTS(w, "\xef\xbf\xbd"); /* U+FFFD for a bad byte */
			k = 1;
		} else {
			escape(w, cp);
		}
		s += k;
		run = s;
	}
	put(w, (const char *)run, (size_t)(s - run));
	putc1(w, '"');
}

static void json_string(struct wr *w, const char *str)
{
	if (!str)
		str = "";
	quoted(w, str, strlen(str), json_escape);
}

/* Integer text of v (|v| <= 2^53); returns its length. */
static size_t fmt_int(double d, char *out)
{
	char tmp[24];
	size_t i = sizeof(tmp), n = 0;
	uint64_t v;
	int neg = d < 0;

	v = (uint64_t)(neg ? -d : d);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		out[n++] = '-';
	hb_copy(out + n, tmp + i, sizeof(tmp) - i);
	return n + sizeof(tmp) - i;
}

/*
 * Number text that reads back as the same double: integers as integers,
 * other values in the shortest of %.15g/%.16g/%.17g that round-trips,
 * always with a '.' or an exponent so it reads back as a float.
 * Returns the length, or 0 for NaN and infinities.
 */
static size_t fmt_number(double d, char out[40])
{
	int prec, n = 0;

	if (isnan(d) || isinf(d))
		return 0;
	if (d == trunc(d) && fabs(d) <= (double)INT_LIMIT)
		return fmt_int(d, out);
	for (prec = 15; prec <= 17; prec++) {
		n = snprintf(out, 40, "%.*g", prec, d);
		if (n <= 0 || n >= 36)
			return 0;
		if (strtod(out, NULL) == d)
			break;
	}
	if (!strpbrk(out, ".e")) {
		out[n++] = '.';
		out[n++] = '0';
		out[n] = '\0';
	}
	return (size_t)n;
}

static void json_value(struct wr *w, const cJSON *v, int depth)
{
	const cJSON *c;
	char num[40];
	size_t n;

	if (w->rc)
		return;
	if (depth > HB_DOC_MAX_DEPTH) {
		w->rc = HB_ETOOBIG;
		return;
	}
	switch (v->type & 0xFF) {
	case cJSON_False:
		PUTS(w, "false");
		return;
	case cJSON_True:
		PUTS(w, "true");
		return;
	case cJSON_NULL:
		PUTS(w, "null");
		return;
	case cJSON_Number:
		n = fmt_number(v->valuedouble, num);
		if (!n) {
			w->rc = HB_EUNSUP; /* JSON has no NaN or infinity */
			return;
		}
		put(w, num, n);
		return;
	case cJSON_String:
		json_string(w, v->valuestring);
		return;
	case cJSON_Array:
	case cJSON_Object: {
		int obj = (v->type & 0xFF) == cJSON_Object;

		if (!v->child) {
			if (obj)
				PUTS(w, "{}");
			else
				PUTS(w, "[]");
			return;
		}
		putc1(w, obj ? '{' : '[');
		for (c = v->child; c && !w->rc; c = c->next) {
			if (!w->compact) {
				putc1(w, '\n');
				indent(w, 2 * (depth + 1));
			}
			if (obj) {
				json_string(w, c->string);
				if (w->compact)
					putc1(w, ':');
				else
					PUTS(w, ": ");
			}
			json_value(w, c, depth + 1);
			if (c->next)
				putc1(w, ',');
		}
		if (!w->compact) {
			putc1(w, '\n');
			indent(w, 2 * depth);
		}
		putc1(w, obj ? '}' : ']');
		return;
	}
	default:
		w->rc = HB_EUNSUP; /* cJSON_Raw or invalid */
		return;
	}
}

static int finish(struct wr *w, size_t start)
{
	if (w->rc && w->b->data)
		w->b->len = start;
	if (w->b->data)
		w->b->data[w->b->len] = '\0';
	return w->rc;
}

static int write_json(const cJSON *doc, struct hb_buf *out, int compact)
{
	struct wr w = {out, 0, compact};
	size_t start = out->len;

	if (!doc)
		return HB_EINVAL;
	json_value(&w, doc, 0);
	if (!compact)
		putc1(&w, '\n');
	return finish(&w, start);
}

int hb_doc_write_json(const cJSON *doc, struct hb_buf *out)
{
	return write_json(doc, out, 0);
}

int hb_doc_write_json_compact(const cJSON *doc, struct hb_buf *out)
{
	return write_json(doc, out, 1);
}

/* -- YAML ----------------------------------------------------------- */

/*
 * Whether s (n bytes, n <= 5) is, ignoring ASCII case, one of the words
 * YAML reads as a boolean, null, infinity, not-a-number or merge key.
 */
static int typed_word(const char *s, size_t n)
{
	char l[5];

	if (n > sizeof(l))
		return 0;

	for (size_t i = 0; i < n; i++)
		l[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a'
							 : s[i]);
#define IS(w) (!memcmp(l, w, sizeof(w) - 1))
	switch (n) {
	case 1:
		return l[0] == 'y' || l[0] == 'n' || l[0] == '~' || l[0] == '=';
	case 2:
		return IS("no") || IS("on") || IS("<<");
	case 3:
		return IS("yes") || IS("off");
	case 4:
		return IS("true") || IS("null") || IS(".inf") || IS(".nan");
	case 5:
		return IS("false") || IS("-.inf") || IS("+.inf");
	}
#undef IS
	return 0;
}

/*
 * Would this plain text read back as something other than a string, in
 * YAML 1.2 (core schema) or YAML 1.1 (which kubectl and most tools still
 * speak: yes/no/on/off, 0b/octal/sexagesimal numbers, dates)?
 */
static int looks_typed(const char *s, size_t n)
{
	/* What a number, date or time may hold besides digits and hex
	 * letters (as strchr() would see them, the NUL included). */
	static const unsigned char num_extra[256] = {
		[0] = 1,   ['x'] = 1, ['X'] = 1, ['o'] = 1,
		['O'] = 1, ['b'] = 1, ['B'] = 1, ['_'] = 1,
		['.'] = 1, [':'] = 1, ['+'] = 1, ['-'] = 1,
	};
	size_t i;

	if (n <= 5 && typed_word(s, n))
		return 1;
	i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
	if (i >= n || !(hb_doc_is_digit(s[i]) || s[i] == '.'))
		return 0;
	/* a digit or '.' first: quote unless it holds a character no
	 * number, date or time could */
	for (; i < n; i++) {
		char c = s[i];

		if (!(hb_doc_is_digit(c) ||
		      hb_doc_hexval((unsigned char)c) >= 0 ||
		      num_extra[(unsigned char)c]))
			return 0;
	}
	return 1;
}

enum sstyle { S_PLAIN, S_DQUOTE, S_LITERAL };

/* Characters a plain scalar may not start with. */
static const unsigned char lead_indicator[256] = {
    ['?'] = 1, [':'] = 1,  [','] = 1, ['['] = 1, [']'] = 1, ['{'] = 1,
    ['}'] = 1, ['#'] = 1,  ['&'] = 1, ['*'] = 1, ['!'] = 1, ['|'] = 1,
    ['>'] = 1, ['\''] = 1, ['"'] = 1, ['%'] = 1, ['@'] = 1, ['`'] = 1,
};

/* As hb_doc_care16(), for what string_style() looks at: control bytes, DEL,
 * non-ASCII, ':' and '#'. */
static inline unsigned yaml_care16(hb_v16 x)
{
	return hb_v16_mask(hb_v16_or(
		hb_v16_ctl(x), hb_v16_or(hb_v16_eq(x, ':'), hb_v16_eq(x, '#'))));
}

/* As yaml_care16(), once a string is known to be neither plain nor free
 * of newlines: only what forces double quotes is left to find (control
 * bytes other than newline and tab, DEL, non-ASCII). */
static inline unsigned rare16(hb_v16 x)
{
	return hb_v16_mask(hb_v16_andnot(
		hb_v16_ctl(x), hb_v16_or(hb_v16_eq(x, '\n'), hb_v16_eq(x, '\t'))));
}

/* How a string must be written (keys never use literal blocks). */
static enum sstyle string_style(const char *str, size_t n, int key)
{
	const unsigned char *s = (const unsigned char *)str;
	int plain = 1, literal = 1, nl = 0;
	size_t i, k, done = 0;
	uint32_t cp;

	if (n == 0)
		return S_DQUOTE;
	if (s[0] == ' ' || s[n - 1] == ' ')
		plain = 0;
	else if (lead_indicator[s[0]])
		plain = 0;
	else if (s[0] == '-' &&
		 (n == 1 || !((s[1] >= 'a' && s[1] <= 'z') ||
			      (s[1] >= 'A' && s[1] <= 'Z') || s[1] == '-')))
		plain = 0;
	else if (n >= 3 && (!memcmp(s, "---", 3) || !memcmp(s, "...", 3)))
		plain = 0;
	else if (s[n - 1] == ':')
		plain = 0;
	/* Sixteen bytes at a time (the last few padded to a block),
	 * visiting only the bytes that matter.  done: bytes
	 * before it belong to a character already read. */
	for (i = 0; i < n; i += 16) {
		size_t left = n - i;
		hb_v16 x = left >= 16 ? hb_v16_load(s + i)
				      : hb_v16_load_tail(s + i, left);
		unsigned m = !plain && nl ? rare16(x) : yaml_care16(x);

		if (left < 16)
			m &= (1u << left) - 1;
		for (; m; m &= m - 1) {
			size_t at = i + hb_v16_first(m);
			unsigned char c = s[at];

			if (at < done)
				continue;
			if (c == ':') {
				if (at + 1 < n && s[at + 1] == ' ')
					plain = 0;
			} else if (c == '#') {
				if (at > 0 && s[at - 1] == ' ')
					plain = 0;
			} else if (c == '\n') {
				plain = 0;
				nl = 1;
			} else if (c == '\t') {
				/* Content may hold tabs after a block's
				 * indentation; a plain scalar may not. */
				plain = 0;
			} else if (c < 0x80) {
				return S_DQUOTE; /* CR, other controls, DEL */
			} else {
				k = hb_doc_utf8_dec(s + at, n - at, &cp);
				if (!k || cp_special(cp))
					return S_DQUOTE;
				done = at + k;
			}
		}
	}
	if (plain && !looks_typed(str, n))
		return key && n > 1000 ? S_DQUOTE : S_PLAIN;
	if (!nl || key)
		return S_DQUOTE;
	/* a literal block: the first non-empty line sets the indentation,
	 * so it may not start with a space or tab; and there must be one */
	for (i = 0; i < n && s[i] == '\n'; i++)
		;
	if (i == n || s[i] == ' ' || s[i] == '\t')
		literal = 0;
	return literal ? S_LITERAL : S_DQUOTE;
}

/* The YAML double-quoted escape of code point cp. */
static void yaml_escape(struct wr *w, uint32_t cp)
{
	char t[4];

	switch (cp) {
	case '"':
		PUTS(w, "\\\"");
		break;
	case '\\':
		PUTS(w, "\\\\");
		break;
	case '\t':
		PUTS(w, "\\t");
		break;
	case '\n':
		PUTS(w, "\\n");
		break;
	case '\r':
		PUTS(w, "\\r");
		break;
	case 0x85:
		PUTS(w, "\\N");
		break;
	case 0x2028:
		PUTS(w, "\\L");
		break;
	case 0x2029:
		PUTS(w, "\\P");
		break;
	default:
		if (cp < 0x100) {
			t[0] = '\\';
			t[1] = 'x';
			t[2] = hexdig[cp >> 4];
			t[3] = hexdig[cp & 15];
			put(w, t, 4);
		} else {
			put_u4(w, cp);
		}
		break;
	}
}

static void yaml_dquote(struct wr *w, const char *str, size_t n)
{
	quoted(w, str, n, yaml_escape);
}

/*
 * The lines of a literal block's first core bytes, each non-empty one
 * indented by ind, each ended by a newline, written at o (which has room
 * for them and 16 bytes to spare).  Returns the end.
 */
static char *literal_lines(char *o, const char *s, size_t core, size_t ind)
{
	const char *p = s, *end = s + core;

	if (p < end && *p != '\n') {
		hb_copy(o, spaces, ind);
		o += ind;
	}
	while (p < end) {
		if (end - p >= 16) {
			unsigned m =
				hb_v16_mask(hb_v16_eq(hb_v16_load(p), '\n'));

			memcpy(o, p, 16);
			if (!m) {
				o += 16;
				p += 16;
				continue;
			}
			o += hb_v16_first(m);
			p += hb_v16_first(m);
		} else {
			const char *nl = memchr(p, '\n', (size_t)(end - p));

			if (!nl) {
				hb_copy(o, p, (size_t)(end - p));
				o += end - p;
				break;
			}
			hb_copy(o, p, (size_t)(nl - p));
			o += nl - p;
			p = nl;
		}
		*o++ = '\n'; /* *p is the newline */
		p++;
		if (p < end && *p != '\n') {
			hb_copy(o, spaces, ind);
			o += ind;
		}
	}
	*o++ = '\n';
	return o;
}

static void yaml_literal(struct wr *w, const char *s, size_t n, int ind)
{
	size_t core = n, trail, i, start;
	char *o;

	while (core > 0 && s[core - 1] == '\n')
		core--;
	trail = n - core;
	if (trail == 0)
		PUTS(w, "|-\n");
	else if (trail == 1)
		PUTS(w, "|\n");
	else
		PUTS(w, "|+\n");
	if (ind >= 0 && ind <= 64 && core <= SIZE_MAX / 128 &&
	    (o = room(w, core + 1 + (core + 1) * (size_t)ind + trail + 16))) {
		o = literal_lines(o, s, core, (size_t)ind);
		for (i = 1; i < trail; i++)
			*o++ = '\n';
		used(w, o);
		return;
	}
	for (start = 0; start <= core; start = i + 1) {
		const char *nl = memchr(s + start, '\n', core - start);

		i = nl ? (size_t)(nl - s) : core;
		if (i > start)
			indent(w, ind);
		put(w, s + start, i - start);
		putc1(w, '\n');
	}
	for (i = 1; i < trail; i++)
		putc1(w, '\n');
}

/* A scalar and its newline.  ind: column for literal block content. */
static void yaml_scalar(struct wr *w, const cJSON *v, int ind)
{
	char num[40];
	size_t n;

	switch (v->type & 0xFF) {
	case cJSON_False:
		PUTS(w, "false\n");
		return;
	case cJSON_True:
		PUTS(w, "true\n");
		return;
	case cJSON_NULL:
		PUTS(w, "null\n");
		return;
	case cJSON_Number:
		n = fmt_number(v->valuedouble, num);
		if (n)
			put(w, num, n);
		else if (isnan(v->valuedouble))
			PUTS(w, ".nan");
		else if (v->valuedouble < 0)
			PUTS(w, "-.inf");
		else
			PUTS(w, ".inf");
		putc1(w, '\n');
		return;
	case cJSON_String: {
		const char *s = v->valuestring ? v->valuestring : "";

		n = strlen(s);
		switch (string_style(s, n, 0)) {
		case S_PLAIN:
			put(w, s, n);
			break;
		case S_DQUOTE:
			yaml_dquote(w, s, n);
			break;
		case S_LITERAL:
			yaml_literal(w, s, n, ind);
			return;
		}
		putc1(w, '\n');
		return;
	}
	case cJSON_Object:
		PUTS(w, "{}\n");
		return;
	case cJSON_Array:
		PUTS(w, "[]\n");
		return;
	default:
		w->rc = HB_EUNSUP;
		return;
	}
}

static void yaml_seq(struct wr *w, const cJSON *v, int ind, int inl, int depth);
static void yaml_map(struct wr *w, const cJSON *v, int ind, int inl, int depth);

static int nonempty(const cJSON *v, int type)
{
	return (v->type & 0xFF) == type && v->child;
}

/* What follows "key:" at column ind: the value and its newline(s). */
static void yaml_member_value(struct wr *w, const cJSON *v, int ind, int depth)
{
	if (nonempty(v, cJSON_Object)) {
		putc1(w, '\n');
		yaml_map(w, v, ind + 2, 0, depth + 1);
	} else if (nonempty(v, cJSON_Array)) {
		putc1(w, '\n');
		yaml_seq(w, v, ind, 0, depth + 1); /* kubectl style */
	} else {
		putc1(w, ' ');
		yaml_scalar(w, v, ind + 2);
	}
}

/*
 * A mapping at column ind.  inl: the first key goes right here (after
 * "- "), the others get indented.
 */
static void yaml_map(struct wr *w, const cJSON *v, int ind, int inl, int depth)
{
	const cJSON *c;

	if (depth > HB_DOC_MAX_DEPTH) {
		w->rc = HB_ETOOBIG;
		return;
	}
	for (c = v->child; c && !w->rc; c = c->next) {
		const char *k = c->string ? c->string : "";
		size_t n = strlen(k);
		enum sstyle st = string_style(k, n, 1);

		if (c != v->child || !inl)
			indent(w, ind);
		if (st == S_PLAIN) {
			put(w, k, n);
			putc1(w, ':');
		} else if (n <= 160) {
			yaml_dquote(w, k, n);
			putc1(w, ':');
		} else {
			/* too long for a simple key: "? key" / ": value" */
			PUTS(w, "? ");
			yaml_dquote(w, k, n);
			putc1(w, '\n');
			indent(w, ind);
			putc1(w, ':');
		}
		yaml_member_value(w, c, ind, depth);
	}
}

/* A sequence at column ind; inl as for yaml_map. */
static void yaml_seq(struct wr *w, const cJSON *v, int ind, int inl, int depth)
{
	const cJSON *c;

	if (depth > HB_DOC_MAX_DEPTH) {
		w->rc = HB_ETOOBIG;
		return;
	}
	for (c = v->child; c && !w->rc; c = c->next) {
		if (c != v->child || !inl)
			indent(w, ind);
		PUTS(w, "- ");
		if (nonempty(c, cJSON_Object))
			yaml_map(w, c, ind + 2, 1, depth + 1);
		else if (nonempty(c, cJSON_Array))
			yaml_seq(w, c, ind + 2, 1, depth + 1);
		else
			yaml_scalar(w, c, ind + 2);
	}
}

static void yaml_root(struct wr *w, const cJSON *doc)
{
	if (nonempty(doc, cJSON_Object))
		yaml_map(w, doc, 0, 0, 1);
	else if (nonempty(doc, cJSON_Array))
		yaml_seq(w, doc, 0, 0, 1);
	else
		yaml_scalar(w, doc, 2);
}

int hb_doc_write_yaml(const cJSON *doc, struct hb_buf *out)
{
	struct wr w = {out, 0};
	size_t start = out->len;

	if (!doc)
		return HB_EINVAL;
	yaml_root(&w, doc);
	return finish(&w, start);
}

int hb_doc_write_yaml_stream(const cJSON *docs, struct hb_buf *out)
{
	struct wr w = {out, 0};
	size_t start = out->len;
	const cJSON *c;

	if (!cJSON_IsArray(docs))
		return HB_EINVAL;
	for (c = docs->child; c && !w.rc; c = c->next) {
		PUTS(&w, "---\n");
		yaml_root(&w, c);
	}
	return finish(&w, start);
}

/* ------------------------------------------------------------------ */
/* The streaming writer                                                */
/* ------------------------------------------------------------------ */

/*
 * Each back end reproduces its tree writer above byte for byte: what the
 * tree writers decide by looking at a node's children (whether a
 * container is empty, whether a member is the first) is decided here when
 * the first child arrives or the container ends.
 */

/* Where a container sits in its parent (YAML). */
enum { AT_ROOT, AT_MEMBER, AT_ITEM };

#define FRAMES (HB_DOC_MAX_DEPTH + 2)

struct efr {
	cJSON *node; /* tree back end: the container */
	uint32_t n;  /* children so far */
	uint8_t obj; /* an object (else an array) */
	uint8_t at;  /* AT_* */
	uint8_t inl; /* YAML: first key or item right after "- " */
	int ind;     /* YAML: column of the children */
};

struct hb_emit {
	enum hb_emit_format fmt;
	struct wr w;	  /* JSON and YAML: the output and the sticky code */
	size_t start;	  /* out->len at the document's first event */
	int depth;	  /* open containers */
	int began, ended; /* the root value began, and is complete */
	cJSON *root;	  /* tree back end: the document being built */
	cJSON *tree;	  /* and the last one ended */
	struct efr st[FRAMES];
};

static struct hb_buf no_buf;

struct hb_emit *hb_emit_new(enum hb_emit_format fmt, struct hb_buf *out)
{
	struct hb_emit *e;

	if (fmt != HB_EMIT_JSON && fmt != HB_EMIT_JSON_COMPACT &&
	    fmt != HB_EMIT_YAML && fmt != HB_EMIT_TREE)
		return NULL;
	if (fmt != HB_EMIT_TREE && !out)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->fmt = fmt;
	e->w.b = out ? out : &no_buf;
	return e;
}

void hb_emit_free(struct hb_emit *e)
{
	if (!e)
		return;
	cJSON_Delete(e->root);
	cJSON_Delete(e->tree);
	free(e);
}

int hb_emit_status(const struct hb_emit *e)
{
	return e ? e->w.rc : HB_EINVAL;
}

static void fail(struct hb_emit *e, int code)
{
	if (!e->w.rc)
		e->w.rc = code;
}

/* The frame of the innermost open container, or NULL at the root. */
static struct efr *top(struct hb_emit *e)
{
	return e->depth ? &e->st[e->depth - 1] : NULL;
}

/* Whether a key (or short string) of n bytes is written as it is between
 * JSON quotes: no byte that needs care. */
static inline int json_plain(const char *k, size_t n)
{
	const unsigned char *s = (const unsigned char *)k;
	size_t i = 0;

	for (; n - i >= 16; i += 16)
		if (hb_doc_care16(hb_v16_load(s + i)))
			return 0;
	return i == n || !(hb_doc_care16(hb_v16_load_tail(s + i, n - i)) &
			   ((1u << (n - i)) - 1));
}

/*
 * The separator, indentation and plain key of a JSON value in one piece,
 * followed by v (vn bytes, already known to need no escape, between
 * quotes) when v is not NULL.  Returns 0 when it is not that simple, and
 * nothing is written.
 */
static int json_fast(struct hb_emit *e, struct efr *p, const char *key,
		     size_t kl, const char *v, size_t vn)
{
	int compact = e->fmt == HB_EMIT_JSON_COMPACT;
	size_t ind = compact ? 0 : 2 * (size_t)e->depth;
	char *o;

	if (!p || ind > 64 || e->depth > HB_DOC_MAX_DEPTH)
		return 0;
	o = room(&e->w, 2 + ind + (p->obj ? kl + 4 : 0) + (v ? vn + 2 : 0));
	if (!o)
		return 0;
	*o++ = p->n ? ',' : p->obj ? '{' : '[';
	if (!compact) {
		*o++ = '\n';
		hb_copy(o, spaces, ind);
		o += ind;
	}
	if (p->obj) {
		*o++ = '"';
		hb_copy(o, key, kl);
		o += kl;
		memcpy(o, "\": ", 3);
		o += compact ? 2 : 3;
	}
	if (v) {
		*o++ = '"';
		hb_copy(o, v, vn);
		o += vn;
		*o++ = '"';
	}
	used(&e->w, o);
	return 1;
}

/* The key of a JSON member, if it is a short plain one: its length, or
 * (size_t)-1. */
static size_t json_simple_key(const struct efr *p, const char **key)
{
	size_t kl;

	if (!p || !p->obj)
		return 0;
	if (!*key)
		*key = "";
	kl = strlen(*key);
	return kl <= 64 && json_plain(*key, kl) ? kl : (size_t)-1;
}

/* What comes before a value in its parent p (NULL: the root): the
 * separator, the indentation and the key. */
static void json_pre(struct hb_emit *e, struct efr *p, const char *key)
{
	struct wr *w = &e->w;
	size_t kl, ind = 2 * (size_t)e->depth;

	if (!p)
		return;
	kl = json_simple_key(p, &key);
	if (kl != (size_t)-1 && json_fast(e, p, key, kl, NULL, 0)) {
		/* the usual case, in one piece */
	} else {
		if (p->obj) {
			if (!key)
				key = "";
			kl = strlen(key);
		}
		int compact = e->fmt == HB_EMIT_JSON_COMPACT;

		if (p->n == 0)
			put(w, p->obj ? "{\n" : "[\n", compact ? 1 : 2);
		else
			put(w, ",\n", compact ? 1 : 2);
		if (!compact)
			indent(w, (int)ind);
		if (p->obj) {
			quoted(w, key, kl, json_escape);
			put(w, ": ", compact ? 1 : 2);
		}
	}
	if (e->depth > HB_DOC_MAX_DEPTH)
		fail(e, HB_ETOOBIG);
}

/* A container's first child: what its parent left for later. */
static void yaml_open(struct hb_emit *e, struct efr *f)
{
	if (f->at == AT_MEMBER)
		putc1(&e->w, '\n');
	if (e->depth > HB_DOC_MAX_DEPTH) /* depth == the frame's level */
		fail(e, HB_ETOOBIG);
}

/*
 * The length of a key string_style() would write plain, seen without it:
 * a letter, then letters, digits and "_./-", at most 64 bytes, and not a
 * word YAML reads as something else.  0 when it is not that simple.
 */
static size_t simple_key(const char *k)
{
	size_t n = strlen(k);

	if (!n || n > 64 ||
	    !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z')))
		return 0;
	for (size_t i = 0; i < n; i += 16) {
		size_t left = n - i;
		hb_v16 x = left >= 16 ? hb_v16_load(k + i)
				      : hb_v16_load_tail(k + i, left);
		unsigned want = left >= 16 ? 0xffffu : (1u << left) - 1;
		unsigned ok = hb_v16_mask(hb_v16_or(
			hb_v16_or(hb_v16_alpha(x), hb_v16_range(x, '-', '9')),
			hb_v16_eq(x, '_')));

		if ((ok & want) != want)
			return 0;
	}
	/* letter first: only the short words can look typed */
	return n > 5 || !typed_word(k, n) ? n : 0;
}

/* The key of a mapping member, and the ':' after it (yaml_map). */
static void yaml_key(struct wr *w, const char *k, int ind)
{
	size_t n;
	enum sstyle st;

	if (!k)
		k = "";
	n = strlen(k);
	st = string_style(k, n, 1);
	if (st == S_PLAIN) {
		put(w, k, n);
		putc1(w, ':');
	} else if (n <= 160) {
		yaml_dquote(w, k, n);
		putc1(w, ':');
	} else {
		PUTS(w, "? ");
		yaml_dquote(w, k, n);
		putc1(w, '\n');
		indent(w, ind);
		putc1(w, ':');
	}
}

/*
 * What comes before a value: indentation, and the key and ':' or "- ".
 * scalar: a scalar follows on this line (a space after the ':').  When
 * plain is not NULL it is that scalar, to be written plain with its
 * newline: done here when the key is simple (returns -1), else left to
 * the caller.  Returns the column for a literal block's lines.
 */
static int yaml_pre(struct hb_emit *e, struct efr *p, const char *key,
		    int scalar, const char *plain, size_t pn)
{
	struct wr *w = &e->w;
	size_t ind, kl;
	char *o;

	if (!p)
		return 2;
	if (p->n == 0)
		yaml_open(e, p);
	ind = p->n != 0 || !p->inl ? (size_t)p->ind : 0;
	if (p->obj && key && ind <= 64 && (kl = simple_key(key)) &&
	    (o = room(w, ind + kl + 2 + (plain ? pn + 1 : 0)))) {
		/* The usual case in one piece. */
		hb_copy(o, spaces, ind);
		o += ind;
		hb_copy(o, key, kl);
		o += kl;
		*o++ = ':';
		if (scalar)
			*o++ = ' ';
		if (plain) {
			hb_copy(o, plain, pn);
			o += pn;
			*o++ = '\n';
		}
		used(w, o);
		return plain ? -1 : p->ind + 2;
	}
	indent(w, (int)ind);
	if (p->obj) {
		yaml_key(w, key, p->ind);
		if (scalar)
			putc1(w, ' ');
	} else {
		PUTS(w, "- ");
	}
	return p->ind + 2;
}

/* Common to every value: returns the parent frame, or NULL with *ok 0
 * when the value cannot be written. */
static struct efr *value_begin(struct hb_emit *e, int *ok)
{
	struct efr *p = top(e);

	*ok = 0;
	if (e->ended || (!p && e->began)) {
		fail(e, HB_EINVAL); /* a second root value */
		return NULL;
	}
	if (!e->began)
		e->start = e->w.b->len; /* what an error rolls back to */
	e->began = 1;
	if (!p)
		e->ended = 1; /* a root scalar; a container clears it */
	if (e->w.rc)
		return NULL;
	*ok = 1;
	return p;
}

static void tree_add(struct hb_emit *e, struct efr *p, const char *key,
		     cJSON *node)
{
	if (!node) {
		fail(e, HB_ENOMEM);
		return;
	}
	if (e->fmt == HB_EMIT_TREE && e->depth > HB_DOC_MAX_DEPTH) {
		cJSON_Delete(node);
		fail(e, HB_ETOOBIG);
		return;
	}
	if (!p) {
		e->root = node;
		return;
	}
	if (p->obj ? !cJSON_AddItemToObject(p->node, key ? key : "", node)
		   : !cJSON_AddItemToArray(p->node, node)) {
		cJSON_Delete(node);
		fail(e, HB_ENOMEM);
	}
}

static int container(struct hb_emit *e, const char *key, int obj)
{
	int ok;
	struct efr *p = value_begin(e, &ok), *f;

	if (!p)
		e->ended = 0;
	if (ok) {
		cJSON *node = NULL;

		switch (e->fmt) {
		case HB_EMIT_JSON:
		case HB_EMIT_JSON_COMPACT:
			json_pre(e, p, key);
			break;
		case HB_EMIT_YAML:
			yaml_pre(e, p, key, 0, NULL, 0);
			break;
		case HB_EMIT_TREE:
			node = obj ? cJSON_CreateObject() : cJSON_CreateArray();
			tree_add(e, p, key, node);
			break;
		}
		if (p)
			p->n++;
		if (!e->w.rc && e->depth < FRAMES) {
			f = &e->st[e->depth];
			memset(f, 0, sizeof(*f));
			f->obj = (uint8_t)obj;
			f->node = node;
			if (!p) {
				f->at = AT_ROOT;
			} else if (p->obj) {
				f->at = AT_MEMBER;
				f->ind = obj ? p->ind + 2 : p->ind;
			} else {
				f->at = AT_ITEM;
				f->ind = p->ind + 2;
				f->inl = 1;
			}
		} else {
			fail(e, HB_ETOOBIG);
		}
	}
	e->depth++;
	return e->w.rc;
}

int hb_emit_obj(struct hb_emit *e, const char *key)
{
	return container(e, key, 1);
}

int hb_emit_arr(struct hb_emit *e, const char *key)
{
	return container(e, key, 0);
}

int hb_emit_end(struct hb_emit *e)
{
	struct efr *f;

	if (e->depth == 0) {
		fail(e, HB_EINVAL);
		return e->w.rc;
	}
	e->depth--;
	if (e->depth == 0)
		e->ended = 1;
	if (e->w.rc)
		return e->w.rc;
	f = &e->st[e->depth];
	switch (e->fmt) {
	case HB_EMIT_JSON_COMPACT:
		if (f->n)
			putc1(&e->w, f->obj ? '}' : ']');
		else
			put(&e->w, f->obj ? "{}" : "[]", 2);
		break;
	case HB_EMIT_JSON: {
		size_t ind = 2 * (size_t)e->depth;
		char *o;

		if (!f->n) {
			put(&e->w, f->obj ? "{}" : "[]", 2);
		} else if (ind <= 64 && (o = room(&e->w, ind + 2))) {
			*o++ = '\n';
			hb_copy(o, spaces, ind);
			o += ind;
			*o++ = f->obj ? '}' : ']';
			used(&e->w, o);
		} else {
			putc1(&e->w, '\n');
			indent(&e->w, (int)ind);
			putc1(&e->w, f->obj ? '}' : ']');
		}
		break;
	}
	case HB_EMIT_YAML:
		if (f->n)
			break;
		if (f->at == AT_MEMBER)
			putc1(&e->w, ' ');
		put(&e->w, f->obj ? "{}\n" : "[]\n", 3);
		break;
	case HB_EMIT_TREE:
		break;
	}
	return e->w.rc;
}

/* A string of n bytes (no NUL among them). */
int hb_emit_strn(struct hb_emit *e, const char *key, const char *s, size_t n)
{
	int ok, ind;
	enum sstyle style;
	struct efr *p = value_begin(e, &ok);
	cJSON *node;

	if (!ok)
		return e->w.rc;
	if (!s) {
		s = "";
		n = 0;
	}
	switch (e->fmt) {
	case HB_EMIT_JSON:
	case HB_EMIT_JSON_COMPACT: {
		size_t kl = json_simple_key(p, &key);

		if (kl != (size_t)-1 && n <= 256 && json_plain(s, n) &&
		    json_fast(e, p, key, kl, s, n))
			break;
		json_pre(e, p, key);
		quoted(&e->w, s, n, json_escape);
		break;
	}
	case HB_EMIT_YAML:
		style = string_style(s, n, 0);
		ind = yaml_pre(e, p, key, 1, style == S_PLAIN ? s : NULL, n);
		if (ind < 0)
			break;
		switch (style) {
		case S_PLAIN:
			put(&e->w, s, n);
			break;
		case S_DQUOTE:
			yaml_dquote(&e->w, s, n);
			break;
		case S_LITERAL:
			yaml_literal(&e->w, s, n, ind);
			goto counted;
		}
		putc1(&e->w, '\n');
		break;
	case HB_EMIT_TREE:
		node = cJSON_CreateString("");
		if (node && n) {
			char *v = cJSON_malloc(n + 1);

			if (!v) {
				cJSON_Delete(node);
				node = NULL;
			} else {
				memcpy(v, s, n);
				v[n] = '\0';
				cJSON_free(node->valuestring);
				node->valuestring = v;
			}
		}
		tree_add(e, p, key, node);
		break;
	}
counted:
	if (p)
		p->n++;
	return e->w.rc;
}

int hb_emit_str(struct hb_emit *e, const char *key, const char *s)
{
	return hb_emit_strn(e, key, s, s ? strlen(s) : 0);
}

int hb_emit_str_or_null(struct hb_emit *e, const char *key, const char *s)
{
	return s ? hb_emit_str(e, key, s) : hb_emit_null(e, key);
}

/* A scalar written as it is: "true", "false", "null" or a number. */
static int word(struct hb_emit *e, const char *key, const char *text, size_t n,
		cJSON *node)
{
	int ok;
	struct efr *p = value_begin(e, &ok);

	if (!ok) {
		cJSON_Delete(node);
		return e->w.rc;
	}
	switch (e->fmt) {
	case HB_EMIT_JSON:
	case HB_EMIT_JSON_COMPACT:
		json_pre(e, p, key);
		if (!n)
			fail(e, HB_EUNSUP); /* JSON has no NaN or infinity */
		else
			put(&e->w, text, n);
		break;
	case HB_EMIT_YAML:
		yaml_pre(e, p, key, 1, NULL, 0);
		put(&e->w, text, n);
		putc1(&e->w, '\n');
		break;
	case HB_EMIT_TREE:
		tree_add(e, p, key, node);
		node = NULL;
		break;
	}
	cJSON_Delete(node);
	if (p)
		p->n++;
	return e->w.rc;
}

int hb_emit_num(struct hb_emit *e, const char *key, double v)
{
	char num[40];
	size_t n = fmt_number(v, num);
	cJSON *node = e->fmt == HB_EMIT_TREE ? cJSON_CreateNumber(v) : NULL;

	if (!n && e->fmt == HB_EMIT_YAML) {
		const char *t = isnan(v) ? ".nan" : v < 0 ? "-.inf" : ".inf";

		n = strlen(t);
		memcpy(num, t, n);
	}
	return word(e, key, num, n, node);
}

int hb_emit_bool(struct hb_emit *e, const char *key, int v)
{
	cJSON *node = e->fmt == HB_EMIT_TREE ? cJSON_CreateBool(v) : NULL;

	return v ? word(e, key, "true", 4, node)
		 : word(e, key, "false", 5, node);
}

int hb_emit_null(struct hb_emit *e, const char *key)
{
	cJSON *node = e->fmt == HB_EMIT_TREE ? cJSON_CreateNull() : NULL;

	return word(e, key, "null", 4, node);
}

int hb_emit_tree(struct hb_emit *e, const char *key, const cJSON *v)
{
	const cJSON *c;

	if (!v) {
		fail(e, HB_EINVAL);
		return e->w.rc;
	}
	switch (v->type & 0xFF) {
	case cJSON_False:
		return hb_emit_bool(e, key, 0);
	case cJSON_True:
		return hb_emit_bool(e, key, 1);
	case cJSON_NULL:
		return hb_emit_null(e, key);
	case cJSON_Number:
		return hb_emit_num(e, key, v->valuedouble);
	case cJSON_String:
		return hb_emit_str(e, key, v->valuestring);
	case cJSON_Array:
	case cJSON_Object:
		container(e, key, (v->type & 0xFF) == cJSON_Object);
		for (c = v->child; c && !e->w.rc; c = c->next)
			hb_emit_tree(e, c->string ? c->string : "", c);
		return hb_emit_end(e);
	default:
		/* cJSON_Raw or invalid, as the tree writers refuse them */
		fail(e, HB_EUNSUP);
		return e->w.rc;
	}
}

int hb_emit_done(struct hb_emit *e)
{
	int rc;

	if (!e)
		return HB_EINVAL;
	if (!e->began)
		e->start = e->w.b->len;
	if (!e->w.rc && (e->depth || !e->ended))
		fail(e, HB_EINVAL); /* no value, or one left open */
	if (e->fmt == HB_EMIT_JSON)
		putc1(&e->w, '\n');
	rc = e->fmt == HB_EMIT_TREE ? e->w.rc : finish(&e->w, e->start);
	cJSON_Delete(e->tree);
	e->tree = NULL;
	if (!rc)
		e->tree = e->root;
	else
		cJSON_Delete(e->root);
	e->root = NULL;
	e->w.rc = 0;
	e->depth = e->began = e->ended = 0;
	return rc;
}

int hb_doc_append_member(struct hb_buf *out, const char *key,
			 const char *json, size_t len)
{
	int rc;

	if (!out->len || out->data[out->len - 1] != '}')
		return HB_EINVAL;
	/* the closing brace makes way for the last member */
	out->data[--out->len] = '\0';
	if (out->len && out->data[out->len - 1] != '{' &&
	    (rc = hb_buf_putc(out, ',')))
		return rc;
	if ((rc = hb_buf_putc(out, '"')) || (rc = hb_buf_puts(out, key)) ||
	    (rc = hb_buf_puts(out, "\":")) ||
	    (rc = hb_buf_append(out, json, len)))
		return rc;
	return hb_buf_putc(out, '}');
}

int hb_emit_take(struct hb_emit *e, cJSON **tree)
{
	*tree = e ? e->tree : NULL;
	if (!*tree)
		return HB_EINVAL;
	e->tree = NULL;
	return 0;
}
