/*
 * s3_xml.c - a small, strict XML reader for S3's answers, and the parsers
 * of the four answers the client reads: <Error>, ListObjectsV2's
 * <ListBucketResult>, <InitiateMultipartUploadResult> and
 * <CompleteMultipartUploadResult>.
 *
 * Only what those documents use: elements, attributes (read and dropped),
 * text with the five named entities and numeric references, comments and
 * processing instructions between elements.  No DTD (so no entity can be
 * declared or expand), no CDATA.  Anything else is refused with the byte
 * where it went wrong: a key S3 lists reaches the caller exactly as the
 * server wrote it, or not at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/s3_int.h"

struct rd {
	const char *p;
	size_t n, i;
	size_t nodes;
	struct hb_arena *a;
	struct hb_err *err;
};

static int fail(struct rd *r, const char *what)
{
	return hb_err_set(r->err, HB_EPROTO, NULL, 0, "xml: byte %zu: %s",
			  r->i, what);
}

static int at(const struct rd *r, const char *s)
{
	size_t k = strlen(s);

	return r->n - r->i >= k && !memcmp(r->p + r->i, s, k);
}

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_blanks(struct rd *r)
{
	while (r->i < r->n && blank(r->p[r->i]))
		r->i++;
}

/* Whether code point c is an XML 1.0 Char. */
static int xml_char(uint32_t c)
{
	return c == 0x9 || c == 0xa || c == 0xd ||
	       (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
	       (c >= 0x10000 && c <= 0x10ffff);
}

/* The length of the valid UTF-8 sequence of an XML Char at p (n bytes
 * left), or 0. */
static size_t utf8_char(const unsigned char *p, size_t n)
{
	uint32_t c;
	size_t k;

	if (p[0] < 0x80)
		return xml_char(p[0]) ? 1 : 0;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		k = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		k = 3;
		c = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		k = 4;
		c = p[0] & 0x07;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t j = 1; j < k; j++) {
		if ((p[j] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[j] & 0x3f);
	}
	/* Overlong forms, surrogates and what lies past U+10FFFF. */
	if ((k == 3 && c < 0x800) || (k == 4 && c < 0x10000))
		return 0;
	return xml_char(c) ? k : 0;
}

static int put_utf8(struct hb_buf *b, uint32_t c)
{
	char u[4];
	size_t k;

	if (c < 0x80) {
		u[0] = (char)c;
		k = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | (c >> 6));
		u[1] = (char)(0x80 | (c & 0x3f));
		k = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | (c >> 12));
		u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		k = 3;
	} else {
		u[0] = (char)(0xf0 | (c >> 18));
		u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		k = 4;
	}
	return hb_buf_append(b, u, k) ? HB_ETOOBIG : 0;
}

/* An entity reference at r->i ('&'), decoded into b. */
static int entity(struct rd *r, struct hb_buf *b)
{
	static const struct {
		const char *name;
		char c;
	} named[] = { { "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' },
		      { "quot;", '"' }, { "apos;", '\'' } };
	uint32_t c = 0;
	size_t j;
	int base = 10, digits = 0;

	r->i++;
	for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++)
		if (at(r, named[k].name)) {
			r->i += strlen(named[k].name);
			return hb_buf_putc(b, named[k].c) ? HB_ETOOBIG : 0;
		}
	if (!at(r, "#"))
		return fail(r, "unknown entity");
	j = r->i + 1;
	if (j < r->n && r->p[j] == 'x') {
		base = 16;
		j++;
	}
	for (; j < r->n && r->p[j] != ';'; j++, digits++) {
		char d = r->p[j];
		int v;

		if (d >= '0' && d <= '9')
			v = d - '0';
		else if (base == 16 && d >= 'a' && d <= 'f')
			v = d - 'a' + 10;
		else if (base == 16 && d >= 'A' && d <= 'F')
			v = d - 'A' + 10;
		else
			return fail(r, "bad character reference");
		if (c > 0x10ffff)
			return fail(r, "character reference out of range");
		c = c * (uint32_t)base + (uint32_t)v;
	}
	if (j >= r->n || !digits)
		return fail(r, "unterminated character reference");
	if (!xml_char(c))
		return fail(r, "character reference to a non-character");
	r->i = j + 1;
	return put_utf8(b, c);
}

/* Text up to the next '<' (or end), decoded into b; *solid is set when
 * anything but blanks was seen. */
static int text(struct rd *r, struct hb_buf *b, int *solid)
{
	while (r->i < r->n && r->p[r->i] != '<') {
		const unsigned char *u = (const unsigned char *)r->p + r->i;
		size_t k;
		int rc;

		if (*u == '&') {
			*solid = 1;
			rc = entity(r, b);
			if (rc)
				return rc;
			continue;
		}
		if (*u == '\r') {
			/* Line ends read as LF (XML 1.0 2.11). */
			r->i += (r->i + 1 < r->n && r->p[r->i + 1] == '\n') ? 2 : 1;
			if (hb_buf_putc(b, '\n'))
				return HB_ETOOBIG;
			continue;
		}
		k = utf8_char(u, r->n - r->i);
		if (!k)
			return fail(r, "invalid character");
		if (!blank((char)*u))
			*solid = 1;
		if (hb_buf_append(b, u, k))
			return HB_ETOOBIG;
		r->i += k;
	}
	return 0;
}

static int name_char(unsigned char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c == ':' || c >= 0x80 ||
	       (!first && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
}

/* A name at r->i; its start and length. */
static int name(struct rd *r, size_t *start, size_t *len)
{
	*start = r->i;
	if (r->i >= r->n || !name_char((unsigned char)r->p[r->i], 1))
		return fail(r, "expected a name");
	while (r->i < r->n && name_char((unsigned char)r->p[r->i], 0))
		r->i++;
	*len = r->i - *start;
	return 0;
}

/* A comment or processing instruction at r->i, skipped; HB_EPROTO for a
 * DTD, CDATA or anything else that starts with "<!". */
static int misc(struct rd *r)
{
	const char *end;
	const char *q;

	if (at(r, "<!--"))
		end = "-->";
	else if (at(r, "<?"))
		end = "?>";
	else
		return fail(r, "DTD, CDATA or declaration not accepted");
	r->i += 2;
	q = memmem(r->p + r->i, r->n - r->i, end, strlen(end));
	if (!q)
		return fail(r, "unterminated comment or instruction");
	r->i = (size_t)(q - r->p) + strlen(end);
	return 0;
}

/* Attributes after an element's name, up to '>' or "/>"; read and
 * dropped.  *empty is set for "/>". */
static int attributes(struct rd *r, int *empty)
{
	struct hb_buf scratch;
	int rc = 0;

	hb_buf_init(&scratch, HB_S3_XML_MAX);
	for (;;) {
		size_t s, l, b = r->i;
		char q;

		skip_blanks(r);
		if (at(r, "/>") || at(r, ">")) {
			*empty = at(r, "/>");
			r->i += *empty ? 2 : 1;
			break;
		}
		if (r->i == b) {
			rc = fail(r, "expected a blank before an attribute");
			break;
		}
		if ((rc = name(r, &s, &l)))
			break;
		skip_blanks(r);
		if (!at(r, "=")) {
			rc = fail(r, "expected '=' after an attribute name");
			break;
		}
		r->i++;
		skip_blanks(r);
		if (r->i >= r->n || (r->p[r->i] != '"' && r->p[r->i] != '\'')) {
			rc = fail(r, "expected a quoted attribute value");
			break;
		}
		q = r->p[r->i++];
		while (!rc && r->i < r->n && r->p[r->i] != q) {
			size_t k = utf8_char((const unsigned char *)r->p + r->i,
					     r->n - r->i);

			if (r->p[r->i] == '<' || !k)
				rc = fail(r, "invalid character in an "
					     "attribute value");
			else if (r->p[r->i] == '&')
				rc = entity(r, &scratch);
			else
				r->i += k;
		}
		if (rc)
			break;
		if (r->i >= r->n) {
			rc = fail(r, "unterminated attribute value");
			break;
		}
		r->i++;
		hb_buf_reset(&scratch);
	}
	hb_buf_free(&scratch);
	return rc;
}

static int element(struct rd *r, int depth, struct hb_s3_xml **out);

/* An element's content after its start tag, through its end tag. */
static int content(struct rd *r, int depth, struct hb_s3_xml *x,
		   size_t ns, size_t nl)
{
	struct hb_s3_xml **tail = &x->child;
	struct hb_buf t;
	int solid = 0, rc = 0;

	hb_buf_init(&t, HB_S3_XML_MAX);
	for (;;) {
		if ((rc = text(r, &t, &solid)))
			break;
		if (r->i >= r->n) {
			rc = fail(r, "unterminated element");
			break;
		}
		if (at(r, "</")) {
			size_t s, l;

			r->i += 2;
			if ((rc = name(r, &s, &l)))
				break;
			if (l != nl || memcmp(r->p + s, r->p + ns, l)) {
				rc = fail(r, "end tag does not match");
				break;
			}
			skip_blanks(r);
			if (!at(r, ">")) {
				rc = fail(r, "expected '>'");
				break;
			}
			r->i++;
			break;
		}
		if (at(r, "<!") || at(r, "<?")) {
			if ((rc = misc(r)))
				break;
			continue;
		}
		if ((rc = element(r, depth + 1, tail)))
			break;
		tail = &(*tail)->next;
	}
	if (!rc && x->child && solid)
		rc = fail(r, "text beside child elements");
	if (!rc && !x->child) {
		x->text = hb_arena_strndup(r->a, t.data ? t.data : "", t.len);
		if (!x->text)
			rc = HB_ENOMEM;
	}
	hb_buf_free(&t);
	return rc == HB_ETOOBIG ? fail(r, "text too long") : rc;
}

static int element(struct rd *r, int depth, struct hb_s3_xml **out)
{
	struct hb_s3_xml *x;
	size_t s, l;
	int empty = 0, rc;

	if (depth > HB_S3_XML_DEPTH)
		return fail(r, "elements nested too deep");
	if (++r->nodes > HB_S3_XML_NODES)
		return fail(r, "too many elements");
	r->i++; /* '<' */
	if ((rc = name(r, &s, &l)))
		return rc;
	x = hb_arena_alloc(r->a, sizeof(*x));
	if (!x || !(x->name = hb_arena_strndup(r->a, r->p + s, l)))
		return HB_ENOMEM;
	*out = x;
	if ((rc = attributes(r, &empty)))
		return rc;
	if (empty) {
		x->text = "";
		return 0;
	}
	return content(r, depth, x, s, l);
}

int hb_s3_xml_parse(const char *p, size_t n, struct hb_arena *a,
		    struct hb_s3_xml **root, struct hb_err *err)
{
	struct rd r = { .p = p, .n = n, .a = a, .err = err };
	int rc;

	*root = NULL;
	if (n > HB_S3_XML_MAX)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "xml: document of %zu bytes is too big", n);
	if (at(&r, "\xef\xbb\xbf"))
		r.i = 3;
	for (;;) {
		skip_blanks(&r);
		if (at(&r, "<!") || at(&r, "<?")) {
			if ((rc = misc(&r)))
				return rc;
			continue;
		}
		break;
	}
	if (!at(&r, "<"))
		return fail(&r, "expected the root element");
	if ((rc = element(&r, 1, root)))
		return rc;
	for (;;) {
		skip_blanks(&r);
		if (r.i >= r.n)
			return 0;
		if (!at(&r, "<!") && !at(&r, "<?"))
			return fail(&r, "content after the root element");
		if ((rc = misc(&r)))
			return rc;
	}
}

const struct hb_s3_xml *hb_s3_xml_child(const struct hb_s3_xml *x,
					const char *nm)
{
	for (x = x ? x->child : NULL; x; x = x->next)
		if (!strcmp(x->name, nm))
			return x;
	return NULL;
}

const char *hb_s3_xml_text(const struct hb_s3_xml *x, const char *nm)
{
	const struct hb_s3_xml *c = hb_s3_xml_child(x, nm);

	return c ? c->text : NULL;
}

/* ------------------------------------------------------------ answers */

static void copy_cut(char *d, size_t n, const char *s)
{
	if (n)
		snprintf(d, n, "%s", s ? s : "");
}

static int read_root(const char *body, size_t n, struct hb_arena *a,
		     struct hb_s3_xml **root, const char *want,
		     struct hb_err *err)
{
	int rc = hb_s3_xml_parse(body, n, a, root, err);

	if (rc)
		return rc;
	if (want && strcmp((*root)->name, want))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "xml: root element is <%.64s>, not <%s>",
				  (*root)->name, want);
	return 0;
}

int hb_s3_parse_error(const char *body, size_t n, char *code, size_t ncode,
		      char *msg, size_t nmsg)
{
	struct hb_err e = { 0 };
	struct hb_arena a;
	struct hb_s3_xml *x;
	int rc;

	hb_arena_init(&a, 0);
	rc = read_root(body, n, &a, &x, "Error", &e);
	if (!rc) {
		copy_cut(code, ncode, hb_s3_xml_text(x, "Code"));
		copy_cut(msg, nmsg, hb_s3_xml_text(x, "Message"));
	}
	hb_arena_free(&a);
	return rc ? HB_EPROTO : 0;
}

/* The ETag without its quotes, in a. */
static const char *unquote(struct hb_arena *a, const char *s)
{
	size_t n = strlen(s);

	if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
		return hb_arena_strndup(a, s + 1, n - 2);
	return s;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return HB_EPROTO;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? HB_EPROTO : 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* A key sent with EncodingType url: "%XX" decoded, '+' kept (S3 encodes
 * a space as %20), into the arena.  NULL for a bad escape or a NUL. */
static const char *url_decoded(struct hb_arena *a, const char *s)
{
	size_t n = strlen(s), k = 0;
	char *out = hb_arena_alloc(a, n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] != '%') {
			out[k++] = s[i];
			continue;
		}
		if (i + 2 >= n)
			return NULL;
		hi = hexval(s[i + 1]);
		lo = hi < 0 ? -1 : hexval(s[i + 2]);
		if (lo < 0 || (hi | lo) == 0)
			return NULL;
		out[k++] = (char)(hi << 4 | lo);
		i += 2;
	}
	out[k] = '\0';
	return out;
}

static int list_entry(struct hb_s3_page *p, const struct hb_s3_xml *c,
		      int url, struct hb_s3_entry *e, struct hb_err *err)
{
	const char *etag = hb_s3_xml_text(c, "ETag");

	e->key = hb_s3_xml_text(c, "Key");
	if (!e->key || !*e->key)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "ListObjectsV2: <Contents> %zu has no <Key>",
				  p->n + 1);
	if (url && !(e->key = url_decoded(&p->arena, e->key)))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "ListObjectsV2: <Contents> %zu: <Key> is "
				  "not URL-encoded text",
				  p->n + 1);
	if (parse_u64(hb_s3_xml_text(c, "Size"), &e->size))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "ListObjectsV2: <Contents> %zu: bad <Size>",
				  p->n + 1);
	e->etag = etag ? unquote(&p->arena, etag) : "";
	e->last_modified = hb_s3_xml_text(c, "LastModified");
	if (!e->last_modified)
		e->last_modified = "";
	return e->etag ? 0 : HB_ENOMEM;
}

/* A listing's <IsTruncated>: absent or "false" 0, "true" 1. */
static int truncated(const struct hb_s3_xml *x, const char *op, int *out,
		     struct hb_err *err)
{
	const char *t = hb_s3_xml_text(x, "IsTruncated");

	if (t && strcmp(t, "true") && strcmp(t, "false"))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "%s: <IsTruncated> is neither true nor false",
				  op);
	*out = t && !strcmp(t, "true");
	return 0;
}

int hb_s3_parse_list(const char *body, size_t n, struct hb_s3_page *p,
		     struct hb_err *err)
{
	struct hb_s3_xml *x;
	const struct hb_s3_xml *c;
	const char *t;
	size_t count = 0;
	int rc;

	rc = read_root(body, n, &p->arena, &x, "ListBucketResult", err);
	if (rc)
		return rc;
	for (c = x->child; c; c = c->next)
		count += !strcmp(c->name, "Contents");
	p->v = hb_arena_alloc(&p->arena, (count ? count : 1) * sizeof(*p->v));
	if (!p->v)
		return HB_ENOMEM;
	t = hb_s3_xml_text(x, "EncodingType");
	for (c = x->child; c; c = c->next) {
		if (strcmp(c->name, "Contents"))
			continue;
		rc = list_entry(p, c, t && !strcmp(t, "url"), &p->v[p->n],
				err);
		if (rc)
			return rc;
		p->n++;
	}
	if ((rc = truncated(x, "ListObjectsV2", &p->truncated, err)))
		return rc;
	p->next_token = hb_s3_xml_text(x, "NextContinuationToken");
	if (p->next_token && !*p->next_token)
		p->next_token = NULL;
	if (p->truncated && !p->next_token)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "ListObjectsV2: truncated without a "
				  "<NextContinuationToken>");
	if (!p->truncated)
		p->next_token = NULL;
	return 0;
}

int hb_s3_parse_mpu_list(const char *body, size_t n, struct hb_s3_uploads *p,
			 struct hb_err *err)
{
	struct hb_s3_xml *x;
	const struct hb_s3_xml *c;
	size_t count = 0;
	int rc;

	rc = read_root(body, n, &p->arena, &x, "ListMultipartUploadsResult",
		       err);
	if (rc)
		return rc;
	for (c = x->child; c; c = c->next)
		count += !strcmp(c->name, "Upload");
	p->v = hb_arena_alloc(&p->arena, (count ? count : 1) * sizeof(*p->v));
	if (!p->v)
		return HB_ENOMEM;
	for (c = x->child; c; c = c->next) {
		struct hb_s3_upload *u = &p->v[p->n];

		if (strcmp(c->name, "Upload"))
			continue;
		u->key = hb_s3_xml_text(c, "Key");
		u->upload_id = hb_s3_xml_text(c, "UploadId");
		u->initiated = hb_s3_xml_text(c, "Initiated");
		if (!u->key || !*u->key || !u->upload_id || !*u->upload_id)
			return hb_err_set(err, HB_EPROTO, NULL, 0,
					  "ListMultipartUploads: <Upload> %zu "
					  "has no <Key> or <UploadId>",
					  p->n + 1);
		if (!u->initiated)
			u->initiated = "";
		p->n++;
	}
	if ((rc = truncated(x, "ListMultipartUploads", &p->truncated, err)))
		return rc;
	p->next_key = hb_s3_xml_text(x, "NextKeyMarker");
	p->next_upload = hb_s3_xml_text(x, "NextUploadIdMarker");
	if (p->truncated && (!p->next_key || !*p->next_key))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "ListMultipartUploads: truncated without a "
				  "<NextKeyMarker>");
	if (!p->next_upload)
		p->next_upload = "";
	return 0;
}

int hb_s3_parse_mpu_create(const char *body, size_t n, char **upload_id,
			   struct hb_err *err)
{
	struct hb_arena a;
	struct hb_s3_xml *x;
	const char *id;
	int rc;

	*upload_id = NULL;
	hb_arena_init(&a, 0);
	rc = read_root(body, n, &a, &x, "InitiateMultipartUploadResult", err);
	if (!rc) {
		id = hb_s3_xml_text(x, "UploadId");
		if (!id || !*id)
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"CreateMultipartUpload: no <UploadId>");
		else if (!(*upload_id = strdup(id)))
			rc = HB_ENOMEM;
	}
	hb_arena_free(&a);
	return rc;
}

int hb_s3_parse_mpu_complete(const char *body, size_t n, char *code,
			     size_t ncode, char *msg, size_t nmsg)
{
	struct hb_err e = { 0 };
	struct hb_arena a;
	struct hb_s3_xml *x;
	int rc;

	hb_arena_init(&a, 0);
	rc = read_root(body, n, &a, &x, NULL, &e);
	if (!rc && !strcmp(x->name, "CompleteMultipartUploadResult")) {
		rc = 0;
	} else if (!rc && !strcmp(x->name, "Error")) {
		copy_cut(code, ncode, hb_s3_xml_text(x, "Code"));
		copy_cut(msg, nmsg, hb_s3_xml_text(x, "Message"));
		rc = HB_EAGAIN;
	} else {
		copy_cut(code, ncode, "");
		copy_cut(msg, nmsg, rc ? e.msg : "unexpected root element");
		rc = HB_EPROTO;
	}
	hb_arena_free(&a);
	return rc;
}
