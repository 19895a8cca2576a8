/*
 * schema_format.c - what schema validation and the rules share: the JSON
 * path of the value being checked, the violation reports, reading values
 * out of an object, and the formats of names (DNS labels and subdomains,
 * qualified names, label values).  Date-times are timefmt.h's.
 * See docs/internals/schema.md.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "translators/k8s/schema_int.h"

static int plain_key(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++) {
		unsigned char ch = (unsigned char)*k;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

/* Append raw text, ending in "..." when it does not fit. */
void hb_schema_path_raw(struct spath *p, const char *s, size_t n)
{
	size_t room = sizeof(p->buf) - 1 - p->len;

	if (p->len >= 3 && !memcmp(p->buf + p->len - 3, "...", 3) &&
	    room < 4)
		return;
	if (n + 4 <= room) {
		memcpy(p->buf + p->len, s, n);
		p->len += n;
	} else {
		size_t keep = room > 3 ? room - 3 : 0;

		memcpy(p->buf + p->len, s, keep);
		p->len += keep;
		memcpy(p->buf + p->len, "...", room - keep < 3 ? room - keep
							      : 3);
		p->len += room - keep < 3 ? room - keep : 3;
	}
	p->buf[p->len] = '\0';
}

/* Push an object key; returns the length to pop back to. */
size_t hb_schema_path_key(struct spath *p, const char *key)
{
	size_t old = p->len;

	if (plain_key(key)) {
		if (p->len)
			hb_schema_path_raw(p, ".", 1);
		hb_schema_path_raw(p, key, strlen(key));
		return old;
	}
	hb_schema_path_raw(p, "[", 1);
	for (; *key; key++) {
		unsigned char ch = (unsigned char)*key;
		char hex[8];

		if (ch < 0x20 || ch == 0x7f || ch == ']' || ch == '\\') {
			snprintf(hex, sizeof(hex), "\\x%02x", ch);
			hb_schema_path_raw(p, hex, 4);
		} else {
			hb_schema_path_raw(p, (const char *)&ch, 1);
		}
	}
	hb_schema_path_raw(p, "]", 1);
	return old;
}

size_t hb_schema_path_index(struct spath *p, size_t idx)
{
	size_t old = p->len;
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "[%zu]", idx);

	hb_schema_path_raw(p, tmp, (size_t)n);
	return old;
}

size_t hb_schema_path_lit(struct spath *p, const char *s)
{
	size_t old = p->len;

	hb_schema_path_raw(p, s, strlen(s));
	return old;
}

void hb_schema_path_pop(struct spath *p, size_t old)
{
	p->len = old;
	p->buf[old] = '\0';
}

/* ------------------------------------------------------------------ */
/* Violations                                                          */

void hb_schema_vctx_init(struct vctx *c, struct hb_buf *out, struct hb_err *err)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->err = err;
}

__attribute__((format(printf, 3, 4)))
void hb_schema_report(struct vctx *c, int kind, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;
	uint64_t h;
	size_t i;

	if (c->prune_only && kind == V_VALUE)
		return;
	if (c->branch) {
		c->count++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	h = hb_fnv1a_str(hb_fnv1a_str(HB_SCHEMA_HASH_SEED, c->path.buf), msg);
	for (i = 0; i < c->nseen; i++)
		if (c->seen[i] == h)
			return;
	if (c->nseen < sizeof(c->seen) / sizeof(c->seen[0]))
		c->seen[c->nseen++] = h;
	c->count++;
	if (c->count == 1)
		hb_err_set(c->err, HB_EINVAL, NULL, 0, "%s: %s",
			   c->path.len ? c->path.buf : "<root>", msg);
	if (c->out && c->listed < HB_SCHEMA_MAX_VIOLATIONS) {
		int rc = hb_buf_printf(c->out, "%s: %s\n",
				       c->path.len ? c->path.buf : "<root>",
				       msg);

		if (rc == HB_ENOMEM)
			c->oom = 1;
		if (!rc)
			c->listed++;
	}
}

/* Finish a run: count what was not listed, set the return code. */
int hb_schema_vctx_finish(struct vctx *c)
{
	if (c->oom)
		return hb_err_set(c->err, HB_ENOMEM, NULL, 0, "out of memory");
	if (!c->count)
		return 0;
	if (c->out && c->count > c->listed)
		hb_buf_printf(c->out, "... and %zu more\n",
			      c->count - c->listed);
	if (c->err && c->err->code == HB_EINVAL && c->count > 1) {
		size_t n = strlen(c->err->msg);

		snprintf(c->err->msg + n, sizeof(c->err->msg) - n,
			 " (and %zu more)", c->count - 1);
	}
	return HB_EINVAL;
}

/* ------------------------------------------------------------------ */
/* Value helpers                                                       */

const cJSON *hb_schema_get(const cJSON *o, const char *key)
{
	if (!o || !cJSON_IsObject(o))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A present, non-null member. */
const cJSON *hb_schema_has(const cJSON *o, const char *key)
{
	const cJSON *v = hb_schema_get(o, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* A whole number in the int64 range (no libm: plain conversions). */
int hb_schema_whole(double d)
{
	return isfinite(d) && d >= -9223372036854775808.0 &&
	       d < 9223372036854775808.0 && (double)(long long)d == d;
}

int hb_schema_is_integral(const cJSON *v)
{
	return cJSON_IsNumber(v) && hb_schema_whole(v->valuedouble);
}

size_t hb_schema_utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Quote s for a message: escaped, cut at QUOTE_MAX bytes. */
const char *hb_schema_quote(const char *s, char *buf, size_t cap)
{
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; s[i] && o + 8 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i >= QUOTE_MAX) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* ------------------------------------------------------------------ */
/* Names: DNS labels and subdomains, qualified names, label values     */

static int lower_alnum(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

int hb_schema_alnum(int ch)
{
	return lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n), folding case if fold. */
static int rfc1123_label(const char *s, size_t n, int fold)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		int ch = (unsigned char)s[i];

		if (fold && ch >= 'A' && ch <= 'Z')
			ch += 'a' - 'A';
		if (!lower_alnum(ch) && !(ch == '-' && i && i + 1 < n))
			return 0;
	}
	return 1;
}

int hb_schema_dns1123_subdomain(const char *s, size_t n, int fold)
{
	size_t start = 0, i;

	if (!n || n > 253)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (!rfc1123_label(s + start, i - start, fold))
				return 0;
			start = i + 1;
		}
	}
	return 1;
}

int hb_schema_dns1123_label(const char *s)
{
	size_t n = strlen(s);

	return n <= 63 && rfc1123_label(s, n, 0);
}

/* [a-z]([-a-z0-9]*[a-z0-9])?, no length limit. */
int hb_schema_dns1035_shape(const char *s)
{
	return *s >= 'a' && *s <= 'z' && rfc1123_label(s, strlen(s), 0);
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n). */
static int name_part(const char *s, size_t n)
{
	size_t i;

	if (!n || !hb_schema_alnum((unsigned char)s[0]) ||
	    !hb_schema_alnum((unsigned char)s[n - 1]))
		return 0;
	for (i = 1; i + 1 < n; i++) {
		int ch = (unsigned char)s[i];

		if (!hb_schema_alnum(ch) && ch != '-' && ch != '_' && ch != '.')
			return 0;
	}
	return 1;
}

/* Why s is not a qualified name (label or annotation key), or NULL. */
const char *hb_schema_qualified_name(const char *s, int fold)
{
	const char *slash = strchr(s, '/');
	const char *name = s;

	if (slash) {
		if (strchr(slash + 1, '/'))
			return "a qualified name must consist of alphanumeric "
			       "characters, '-', '_' or '.', with an optional "
			       "DNS subdomain prefix and '/'";
		if (slash == s)
			return "prefix part must be non-empty";
		if (!hb_schema_dns1123_subdomain(s, (size_t)(slash - s), fold))
			return "prefix part must be a lowercase RFC 1123 "
			       "subdomain of at most 253 characters";
		name = slash + 1;
	}
	if (!*name)
		return "name part must be non-empty";
	if (strlen(name) > 63)
		return "name part must be no more than 63 characters";
	if (!name_part(name, strlen(name)))
		return "name part must consist of alphanumeric characters, "
		       "'-', '_' or '.', and must start and end with an "
		       "alphanumeric character";
	return NULL;
}

const char *hb_schema_label_value(const char *s)
{
	size_t n = strlen(s);

	if (n > 63)
		return "must be no more than 63 characters";
	if (n && !name_part(s, n))
		return "a valid label must be an empty string or consist of "
		       "alphanumeric characters, '-', '_' or '.', and must "
		       "start and end with an alphanumeric character";
	return NULL;
}
