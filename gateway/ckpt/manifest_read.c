/*
 * manifest_read.c - reading a checkpoint manifest: a JSON reader made for
 * this one document, strict and total.  It knows the schema, so it
 * refuses an unknown key, a repeated key, a wrong type or a value out of
 * bounds the moment it meets one, with the field's name and line, and
 * builds the manifest without a tree in between (a manifest of a million
 * files costs one pass).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/timefmt.h"

#include "ckpt_int.h"

/* The latest instant a manifest may carry: 9999-12-31T23:59:59Z. */
#define CREATED_MAX 253402300799ll

struct rd {
	const char *s;
	size_t n, i;
	const char *name;
	struct hb_err *err;
	char field[48];     /* "files[123456].sha256" */
	struct hb_buf str;  /* the last string read, decoded */
	struct hb_ckpt_manifest *m;
};

static unsigned line_at(const struct rd *r, size_t at)
{
	unsigned line = 1;

	for (size_t i = 0; i < at && i < r->n; i++)
		line += r->s[i] == '\n';
	return line;
}

/* "NAME:LINE: FIELD: why" at the current position. */
__attribute__((format(printf, 3, 4)))
static int fail(struct rd *r, int code, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return hb_err_set(r->err, code, r->name, line_at(r, r->i), "%s: %s",
			  r->field[0] ? r->field : "manifest", why);
}

static void ws(struct rd *r)
{
	while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' ||
			       r->s[r->i] == '\n' || r->s[r->i] == '\r'))
		r->i++;
}

/* Skip blanks, then the byte c, or fail saying what was expected. */
static int expect(struct rd *r, char c, const char *what)
{
	ws(r);
	if (r->i < r->n && r->s[r->i] == c) {
		r->i++;
		return 0;
	}
	return fail(r, HB_EINVAL, "expected %s", what);
}

/* What the value at the current position is, for "must be" messages. */
static const char *type_here(const struct rd *r)
{
	if (r->i >= r->n)
		return "the end of the input";
	switch (r->s[r->i]) {
	case '"':
		return "a string";
	case '{':
		return "an object";
	case '[':
		return "a list";
	case 't':
	case 'f':
		return "a boolean";
	case 'n':
		return "null";
	default:
		return "a number";
	}
}

/* The value of a hex digit; lower case only unless upper. */
static int hexval(char c, int upper)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (upper && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(struct rd *r, uint32_t *out)
{
	uint32_t v = 0;

	if (r->n - r->i < 4)
		return fail(r, HB_EINVAL, "truncated \\u escape");
	for (int k = 0; k < 4; k++) {
		int d = hexval(r->s[r->i++], 1);

		if (d < 0)
			return fail(r, HB_EINVAL, "invalid \\u escape");
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return 0;
}

/* The code point of a \u escape (r->i just past the 'u'), a surrogate
 * pair read whole. */
static int uescape(struct rd *r, uint32_t *cp)
{
	uint32_t hi = 0, lo = 0;
	int rc = hex4(r, &hi);

	if (rc)
		return rc;
	if (hi >= 0xDC00 && hi <= 0xDFFF)
		return fail(r, HB_EINVAL, "lone surrogate in a string");
	if (hi < 0xD800 || hi > 0xDBFF) {
		*cp = hi;
		return 0;
	}
	if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
		return fail(r, HB_EINVAL, "lone surrogate in a string");
	r->i += 2;
	rc = hex4(r, &lo);
	if (rc)
		return rc;
	if (lo < 0xDC00 || lo > 0xDFFF)
		return fail(r, HB_EINVAL, "lone surrogate in a string");
	*cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
	return 0;
}

static int put_utf8(struct hb_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return hb_buf_append(b, u, n);
}

static int escape(struct rd *r)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *p;
	uint32_t cp = 0;
	int rc;

	if (r->i >= r->n)
		return fail(r, HB_EINVAL, "unterminated string");
	p = strchr(from, r->s[r->i]);
	if (p && *p) {
		r->i++;
		return hb_buf_putc(&r->str, to[p - from]);
	}
	if (r->s[r->i++] != 'u')
		return fail(r, HB_EINVAL, "invalid escape in a string");
	rc = uescape(r, &cp);
	if (rc)
		return rc;
	if (cp == 0)
		return fail(r, HB_EINVAL, "NUL character in a string");
	return put_utf8(&r->str, cp);
}

/* A string of at most max decoded bytes into r->str. */
static int string(struct rd *r, size_t max)
{
	int rc = 0;

	ws(r);
	if (r->i >= r->n || r->s[r->i] != '"')
		return fail(r, HB_EINVAL, "must be a string, not %s",
			    type_here(r));
	r->i++;
	hb_buf_reset(&r->str);
	while (!rc) {
		unsigned char c;
		size_t k;

		if (r->i >= r->n)
			return fail(r, HB_EINVAL, "unterminated string");
		c = (unsigned char)r->s[r->i];
		if (c == '"') {
			r->i++;
			break;
		}
		if (c < 0x20)
			return fail(r, HB_EINVAL,
				    "control character in a string");
		if (c == '\\') {
			r->i++;
			rc = escape(r);
		} else {
			const unsigned char *u =
				(const unsigned char *)r->s + r->i;

			k = c < 0x80 ? 1 : hb_utf8_dec(u, r->n - r->i, NULL);
			if (!k)
				return fail(r, HB_EINVAL,
					    "invalid UTF-8 in a string");
			rc = hb_buf_append(&r->str, r->s + r->i, k);
			r->i += k;
		}
		if (!rc && r->str.len > max)
			return fail(r, HB_EINVAL, "longer than %zu bytes", max);
	}
	if (rc)
		return fail(r, rc, "out of memory");
	if (!r->str.data && hb_buf_puts(&r->str, ""))
		return fail(r, HB_ENOMEM, "out of memory");
	return 0;
}

/* A whole number written as plain digits, at most max. */
static int number(struct rd *r, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t start;

	ws(r);
	if (r->i < r->n && r->s[r->i] == '-')
		return fail(r, HB_ERANGE, "must not be negative");
	start = r->i;
	while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
		unsigned d = (unsigned)(r->s[r->i] - '0');

		if (v > (max - d) / 10)
			return fail(r, HB_ERANGE, "more than %llu",
				    (unsigned long long)max);
		v = v * 10 + d;
		r->i++;
	}
	if (r->i == start)
		return fail(r, HB_EINVAL, "must be a number, not %s",
			    type_here(r));
	if (r->i - start > 1 && r->s[start] == '0')
		return fail(r, HB_EINVAL, "leading zero in a number");
	if (r->i < r->n && (r->s[r->i] == '.' || r->s[r->i] == 'e' ||
			    r->s[r->i] == 'E'))
		return fail(r, HB_EINVAL, "must be a whole number in digits");
	*out = v;
	return 0;
}

/*
 * The members of an object, one at a time: 1 with the key in r->str and
 * r->i at its value, 0 at the closing brace, or an error.  *first starts
 * at 1; ctx names the object for errors in its keys.  Known keys are
 * short, so a key past 32 bytes is refused as it is read.
 */
static int member(struct rd *r, int *first, const char *ctx)
{
	int rc;

	snprintf(r->field, sizeof(r->field), "%s", ctx);
	ws(r);
	if (r->i < r->n && r->s[r->i] == '}') {
		r->i++;
		return 0;
	}
	if (!*first) {
		rc = expect(r, ',', "',' or '}'");
		if (rc)
			return rc;
		ws(r);
		if (r->i < r->n && r->s[r->i] == '}')
			return fail(r, HB_EINVAL, "trailing comma");
	}
	*first = 0;
	rc = string(r, 32);
	if (rc)
		return rc;
	rc = expect(r, ':', "':'");
	return rc ? rc : 1;
}

/* Record key k (index into keys) as seen, refusing one seen before and
 * one unknown.  Returns the index, or an error. */
static int which(struct rd *r, const char *const *keys, unsigned *seen,
		 const char *prefix)
{
	for (int k = 0; keys[k]; k++) {
		if (strcmp(r->str.data, keys[k]))
			continue;
		snprintf(r->field, sizeof(r->field), "%s%s", prefix, keys[k]);
		if (*seen & 1u << k)
			return fail(r, HB_EINVAL, "given twice");
		*seen |= 1u << k;
		return k;
	}
	return fail(r, HB_EINVAL, "unknown key \"%.32s\"", r->str.data);
}

/* Name the first key of keys that is not in seen as required. */
static int required(struct rd *r, const char *const *keys, unsigned seen,
		    const char *prefix)
{
	for (int k = 0; keys[k]; k++)
		if (!(seen & 1u << k)) {
			snprintf(r->field, sizeof(r->field), "%s%s", prefix,
				 keys[k]);
			return fail(r, HB_EINVAL, "required");
		}
	return 0;
}

static int digest(struct rd *r, uint8_t out[32])
{
	int rc = string(r, 128);

	if (rc)
		return rc;
	if (r->str.len != 64)
		return fail(r, HB_EINVAL, "must be 64 lowercase hex digits");
	for (int i = 0; i < 64; i++) {
		int d = hexval(r->str.data[i], 0);

		if (d < 0)
			return fail(r, HB_EINVAL,
				    "must be 64 lowercase hex digits");
		if (i % 2)
			out[i / 2] |= (uint8_t)d;
		else
			out[i / 2] = (uint8_t)(d << 4);
	}
	return 0;
}

/* "0" then three octal digits: the permission bits. */
static int mode(struct rd *r, uint32_t *out)
{
	const char *s;
	int rc = string(r, 4);

	if (rc)
		return rc;
	s = r->str.data;
	if (r->str.len != 4 || s[0] != '0')
		return fail(r, HB_EINVAL, "must be \"0\" and three octal "
			    "digits (\"0644\")");
	*out = 0;
	for (int i = 1; i < 4; i++) {
		if (s[i] < '0' || s[i] > '7')
			return fail(r, HB_EINVAL, "must be \"0\" and three "
				    "octal digits (\"0644\")");
		*out = *out << 3 | (uint32_t)(s[i] - '0');
	}
	return 0;
}

/* The path just read, checked; errors get the name and line. */
static int path_ok(struct rd *r)
{
	struct hb_err e = {0};
	int rc = hb_ckpt_path_check(r->str.data, r->str.len, r->field, &e);

	return rc ? hb_err_set(r->err, rc, r->name, line_at(r, r->i), "%s",
			       e.msg)
		  : 0;
}

static int file_entry(struct rd *r, size_t idx)
{
	static const char *const keys[] = {"path", "size", "mode", "sha256",
					   NULL};
	char prefix[32], obj[32], *path = NULL;
	uint8_t sha[32] = {0};
	uint64_t size = 0;
	uint32_t md = 0;
	unsigned seen = 0;
	int first = 1, rc, k;

	snprintf(prefix, sizeof(prefix), "files[%zu].", idx);
	snprintf(obj, sizeof(obj), "files[%zu]", idx);
	snprintf(r->field, sizeof(r->field), "%s", obj);
	ws(r);
	if (r->i >= r->n || r->s[r->i] != '{')
		return fail(r, HB_EINVAL, "must be an object, not %s",
			    type_here(r));
	r->i++;
	while ((rc = member(r, &first, obj)) == 1) {
		k = which(r, keys, &seen, prefix);
		if (k < 0)
			return k;
		if (k == 0) {
			rc = string(r, HB_CKPT_PATH_MAX);
			if (!rc)
				rc = path_ok(r);
			if (!rc) {
				path = hb_arena_strndup(&r->m->arena,
							r->str.data,
							r->str.len);
				rc = path ? 0 : fail(r, HB_ENOMEM,
						     "out of memory");
			}
		} else if (k == 1) {
			rc = number(r, HB_CKPT_MAX_TOTAL, &size);
		} else if (k == 2) {
			rc = mode(r, &md);
		} else {
			rc = digest(r, sha);
		}
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	rc = required(r, keys, seen, prefix);
	if (rc)
		return rc;
	snprintf(r->field, sizeof(r->field), "files[%zu]", idx);
	rc = hb_ckpt_manifest_add(r->m, path, size, md, sha, NULL);
	return rc ? fail(r, rc, "cannot add: %s", hb_strerror(rc)) : 0;
}

static int files(struct rd *r)
{
	size_t idx = 0;
	int rc;

	ws(r);
	if (r->i >= r->n || r->s[r->i] != '[')
		return fail(r, HB_EINVAL, "must be a list, not %s",
			    type_here(r));
	r->i++;
	ws(r);
	if (r->i < r->n && r->s[r->i] == ']') {
		r->i++;
		return 0;
	}
	for (;; idx++) {
		if (idx >= HB_CKPT_MAX_FILES)
			return fail(r, HB_ETOOBIG, "more than %u files",
				    HB_CKPT_MAX_FILES);
		rc = file_entry(r, idx);
		if (rc)
			return rc;
		snprintf(r->field, sizeof(r->field), "files");
		ws(r);
		if (r->i < r->n && r->s[r->i] == ']') {
			r->i++;
			return 0;
		}
		rc = expect(r, ',', "',' or ']'");
		if (rc)
			return rc;
		ws(r);
		if (r->i < r->n && r->s[r->i] == ']')
			return fail(r, HB_EINVAL, "trailing comma");
	}
}

static int top_value(struct rd *r, int k)
{
	int64_t t;
	int rc;

	switch (k) {
	case 0: /* format */
		rc = string(r, 64);
		if (!rc && strcmp(r->str.data, HB_CKPT_FORMAT))
			rc = fail(r, HB_EUNSUP, "\"%s\" is not %s",
				  r->str.data, HB_CKPT_FORMAT);
		return rc;
	case 1: /* created */
		rc = string(r, 64);
		if (rc)
			return rc;
		if (hb_time_rfc3339_parse_flags(r->str.data, HB_TIME_STRICT,
						&t) ||
		    t < 0 || t > CREATED_MAX)
			return fail(r, HB_EINVAL, "must be an RFC 3339 time "
				    "from 1970 to 9999 (\"%.40s\")",
				    r->str.data);
		r->m->created = t;
		return 0;
	case 2: /* job */
		rc = string(r, HB_CKPT_JOB_MAX);
		if (!rc && hb_ckpt_manifest_set_job(r->m, r->str.data, NULL))
			rc = fail(r, HB_EINVAL, "must be 1 to %u bytes of "
				  "printable UTF-8", HB_CKPT_JOB_MAX);
		return rc;
	default:
		return files(r);
	}
}

static int document(struct rd *r)
{
	static const char *const keys[] = {"format", "created", "job", "files",
					   NULL};
	unsigned seen = 0;
	int first = 1, rc, k;

	rc = expect(r, '{', "a JSON object");
	while (!rc && (rc = member(r, &first, "")) == 1) {
		k = which(r, keys, &seen, "");
		rc = k < 0 ? k : top_value(r, k);
	}
	if (rc)
		return rc;
	r->field[0] = '\0';
	rc = required(r, keys, seen, "");
	if (rc)
		return rc;
	r->field[0] = '\0';
	ws(r);
	if (r->i != r->n)
		return fail(r, HB_EINVAL,
			    "unexpected content after the object");
	{
		struct hb_err e = {0};

		rc = hb_ckpt_manifest_seal(r->m, &e);
		return rc ? hb_err_set(r->err, rc, r->name, 0, "%s", e.msg)
			  : 0;
	}
}

int hb_ckpt_manifest_parse(const char *buf, size_t len, const char *name,
			   struct hb_ckpt_manifest **out, struct hb_err *err)
{
	struct hb_err local = {0};
	struct rd r = {.s = buf, .n = len, .name = name ? name : "manifest",
		       .err = err ? err : &local};
	int rc;

	*out = NULL;
	if (len > HB_CKPT_MANIFEST_MAX)
		return hb_err_set(r.err, HB_ETOOBIG, r.name, 0,
				  "larger than %u bytes", HB_CKPT_MANIFEST_MAX);
	r.m = hb_ckpt_manifest_new();
	if (!r.m)
		return hb_err_set(r.err, HB_ENOMEM, r.name, 0, "out of memory");
	hb_buf_init(&r.str, HB_CKPT_PATH_MAX + 8);
	rc = document(&r);
	hb_buf_free(&r.str);
	if (rc) {
		hb_ckpt_manifest_free(r.m);
		return rc;
	}
	*out = r.m;
	return 0;
}
