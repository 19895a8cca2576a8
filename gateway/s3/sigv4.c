/*
 * sigv4.c - AWS Signature Version 4 as a pure function: a request's
 * parts in, its canonical request, string to sign, signature and
 * Authorization header out.  No clock, no I/O: the client passes the
 * date, and the unit tests pass AWS's published examples.
 *
 * The steps (docs/internals/s3.md):
 *   canonical request = METHOD \n encoded path \n sorted query \n
 *                       lower-cased trimmed headers \n \n signed names \n
 *                       payload hash
 *   string to sign    = AWS4-HMAC-SHA256 \n date \n scope \n
 *                       hex(sha256(canonical request))
 *   signing key       = HMAC chain over "AWS4"+secret: date, region,
 *                       service, "aws4_request"
 *   signature         = hex(HMAC(signing key, string to sign))
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "gateway/s3/s3_int.h"

void hb_s3_sha256(const void *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

void hb_s3_hex(const unsigned char *p, size_t n, char *hex)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = d[p[i] >> 4];
		hex[2 * i + 1] = d[p[i] & 15];
	}
	hex[2 * n] = '\0';
}

static void hmac(const void *key, size_t klen, const char *msg, size_t n,
		 unsigned char out[32])
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, n, out,
	     &len);
}

void hb_s3_amz_date(int64_t t, char out[17])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	if (strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		memcpy(out, "19700101T000000Z", 17);
}

int hb_s3_signing_key(const char *secret, const char *date,
		      const char *region, const char *service,
		      unsigned char key[32])
{
	size_t n = strlen(secret);
	char *k = malloc(n + 5);

	if (!k)
		return HB_ENOMEM;
	memcpy(k, "AWS4", 4);
	memcpy(k + 4, secret, n + 1);
	hmac(k, n + 4, date, strlen(date), key);
	explicit_bzero(k, n + 5);
	free(k);
	hmac(key, 32, region, strlen(region), key);
	hmac(key, 32, service, strlen(service), key);
	hmac(key, 32, "aws4_request", 12, key);
	return 0;
}

static int unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

int hb_s3_uri_encode(struct hb_buf *b, const char *s, size_t n,
		     int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && (unreserved((unsigned char)s[j]) ||
				 (keep_slash && s[j] == '/')))
			j++;
		if (j > i && hb_buf_append(b, s + i, j - i))
			return HB_ENOMEM;
		if (j < n) {
			unsigned char c = (unsigned char)s[j];
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			if (hb_buf_append(b, e, 3))
				return HB_ENOMEM;
			j++;
		}
		i = j;
	}
	return 0;
}

/* A query parameter or a header once encoded/lower-cased, for sorting. */
struct item {
	char *name;
	char *value;
	size_t order; /* given order: duplicates keep it */
};

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->value && y->value) {
		/* Query parameters of one name sort by value. */
		c = strcmp(x->value, y->value);
		if (c)
			return c;
	}
	return x->order < y->order ? -1 : x->order > y->order;
}

static void items_free(struct item *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

static char *encode_dup(const char *s)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	if (hb_s3_uri_encode(&b, s, strlen(s), 0) || hb_buf_putc(&b, '\0')) {
		hb_buf_free(&b);
		return NULL;
	}
	return hb_buf_steal(&b);
}

static int canonical_query(const struct hb_s3_sigreq *r, struct hb_buf *q)
{
	struct item *v;
	int rc = 0;

	if (!r->nquery)
		return 0;
	v = calloc(r->nquery, sizeof(*v));
	if (!v)
		return HB_ENOMEM;
	for (size_t i = 0; i < r->nquery; i++) {
		v[i].order = i;
		v[i].name = encode_dup(r->query[i].name);
		v[i].value = encode_dup(r->query[i].value ? r->query[i].value
							  : "");
		if (!v[i].name || !v[i].value) {
			rc = HB_ENOMEM;
			goto out;
		}
	}
	qsort(v, r->nquery, sizeof(*v), item_cmp);
	for (size_t i = 0; i < r->nquery && !rc; i++)
		if ((i && hb_buf_putc(q, '&')) || hb_buf_puts(q, v[i].name) ||
		    hb_buf_putc(q, '=') || hb_buf_puts(q, v[i].value))
			rc = HB_ENOMEM;
out:
	items_free(v, r->nquery);
	return rc;
}

static int token_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f && !strchr("()<>@,;:\\\"/[]?={}", c);
}

/* The name lower-cased; NULL when it is not an HTTP token. */
static char *header_name(const char *s)
{
	size_t n = strlen(s);
	char *d;

	if (!n)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!token_char((unsigned char)s[i]))
			return NULL;
	d = malloc(n + 1);
	if (!d)
		return NULL;
	for (size_t i = 0; i <= n; i++)
		d[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : s[i];
	return d;
}

/* Append a header value trimmed, with inner runs of blanks as one
 * space.  HB_EINVAL for a line break or another control byte. */
static int put_value(struct hb_buf *b, const char *s)
{
	int blank = 0, any = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == ' ' || c == '\t') {
			blank = any;
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			return HB_EINVAL;
		if ((blank && hb_buf_putc(b, ' ')) || hb_buf_putc(b, (char)c))
			return HB_ENOMEM;
		blank = 0;
		any = 1;
	}
	return 0;
}

static int canonical_headers(const struct hb_s3_sigreq *r, struct hb_buf *c,
			     struct hb_buf *names)
{
	struct item *v = calloc(r->nheaders ? r->nheaders : 1, sizeof(*v));
	int rc = 0;

	if (!v)
		return HB_ENOMEM;
	for (size_t i = 0; i < r->nheaders; i++) {
		v[i].order = i;
		v[i].name = header_name(r->headers[i].name);
		if (!v[i].name || !r->headers[i].value) {
			rc = HB_EINVAL;
			goto out;
		}
	}
	/* value stays NULL: one name's values keep their given order. */
	qsort(v, r->nheaders, sizeof(*v), item_cmp);
	for (size_t i = 0; i < r->nheaders && !rc; i++) {
		const char *val = r->headers[v[i].order].value;

		if (i && !strcmp(v[i].name, v[i - 1].name)) {
			if (c->len && c->data[c->len - 1] == '\n')
				c->data[--c->len] = '\0';
			rc = hb_buf_putc(c, ',') ? HB_ENOMEM : put_value(c, val);
		} else {
			if ((i && hb_buf_putc(names, ';')) ||
			    hb_buf_puts(names, v[i].name) ||
			    hb_buf_puts(c, v[i].name) || hb_buf_putc(c, ':'))
				rc = HB_ENOMEM;
			else
				rc = put_value(c, val);
		}
		if (!rc && hb_buf_putc(c, '\n'))
			rc = HB_ENOMEM;
	}
out:
	items_free(v, r->nheaders);
	return rc;
}

void hb_s3_sig_free(struct hb_s3_sig *sig)
{
	hb_buf_free(&sig->creq);
	hb_buf_free(&sig->sts);
	hb_buf_free(&sig->query);
	hb_buf_free(&sig->path);
	hb_buf_free(&sig->auth);
}

/* The canonical request into out->creq (and the encoded path and query
 * into their buffers); the signed header names into names. */
static int build_creq(const struct hb_s3_sigreq *r, struct hb_s3_sig *out,
		      struct hb_buf *names)
{
	int rc;

	rc = hb_s3_uri_encode(&out->path, r->path, strlen(r->path), 1);
	if (!rc && !out->path.len)
		rc = hb_buf_putc(&out->path, '/') ? HB_ENOMEM : 0;
	if (!rc)
		rc = canonical_query(r, &out->query);
	if (!rc && (hb_buf_puts(&out->creq, r->method) ||
		    hb_buf_putc(&out->creq, '\n') ||
		    hb_buf_append(&out->creq, out->path.data, out->path.len) ||
		    hb_buf_putc(&out->creq, '\n') ||
		    hb_buf_append(&out->creq, out->query.data ? out->query.data
							      : "",
				  out->query.len) ||
		    hb_buf_putc(&out->creq, '\n')))
		rc = HB_ENOMEM;
	if (!rc)
		rc = canonical_headers(r, &out->creq, names);
	if (!rc && (hb_buf_putc(&out->creq, '\n') ||
		    hb_buf_append(&out->creq, names->data, names->len) ||
		    hb_buf_putc(&out->creq, '\n') ||
		    hb_buf_puts(&out->creq, r->payload_hash)))
		rc = HB_ENOMEM;
	return rc;
}

int hb_s3_sign(const struct hb_s3_sigreq *r, struct hb_s3_sig *out)
{
	struct hb_buf names;
	unsigned char h[32], key[32];
	char hex[65], date[9];
	int rc;

	if (!r->method || !r->path || !r->payload_hash || !r->amz_date ||
	    strlen(r->amz_date) != 16 || !r->region || !r->service ||
	    !r->access_key || !r->secret_key || (r->nquery && !r->query) ||
	    (r->nheaders && !r->headers))
		return HB_EINVAL;
	memcpy(date, r->amz_date, 8);
	date[8] = '\0';
	hb_buf_init(&names, 0);
	rc = build_creq(r, out, &names);
	if (rc)
		goto out;
	hb_s3_sha256(out->creq.data, out->creq.len, h);
	hb_s3_hex(h, 32, hex);
	if (hb_buf_printf(&out->sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/"
			  "aws4_request\n%s", r->amz_date, date, r->region,
			  r->service, hex)) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = hb_s3_signing_key(r->secret_key, date, r->region, r->service,
			       key);
	if (rc)
		goto out;
	hmac(key, 32, out->sts.data, out->sts.len, h);
	explicit_bzero(key, sizeof(key));
	hb_s3_hex(h, 32, out->signature);
	if (hb_buf_printf(&out->auth, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/"
			  "%s/aws4_request, SignedHeaders=%s, Signature=%s",
			  r->access_key, date, r->region, r->service,
			  names.data ? names.data : "", out->signature))
		rc = HB_ENOMEM;
out:
	hb_buf_free(&names);
	return rc;
}
