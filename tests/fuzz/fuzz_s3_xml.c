/*
 * fuzz_s3_xml.c - the S3 client's XML reader and its five answer parsers
 * (ListObjectsV2, Error, CreateMultipartUpload, CompleteMultipartUpload,
 * ListMultipartUploads)
 * must never crash or leak, and a tree the reader accepts must mean one
 * thing: written back out (text escaped) and read again, it is the same
 * tree, and no text or name holds a byte the reader refuses.  A broken
 * invariant aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/s3_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int write_tree(const struct hb_s3_xml *x, struct hb_buf *b)
{
	if (hb_buf_printf(b, "<%s>", x->name))
		return -1;
	if (x->text) {
		for (const char *p = x->text; *p; p++) {
			const char *e = *p == '&' ? "&amp;" : *p == '<' ? "&lt;"
				      : *p == '\r' ? "&#13;" : NULL;

			if (e ? hb_buf_puts(b, e) : hb_buf_putc(b, *p))
				return -1;
		}
	}
	for (const struct hb_s3_xml *c = x->child; c; c = c->next)
		if (write_tree(c, b))
			return -1;
	return hb_buf_printf(b, "</%s>", x->name) ? -1 : 0;
}

static int same(const struct hb_s3_xml *a, const struct hb_s3_xml *b)
{
	if (strcmp(a->name, b->name) || !a->text != !b->text ||
	    (a->text && strcmp(a->text, b->text)))
		return 0;
	for (a = a->child, b = b->child; a && b; a = a->next, b = b->next)
		if (!same(a, b))
			return 0;
	return !a && !b;
}

static void answers(const char *p, size_t n)
{
	struct hb_s3_page page = { 0 };
	struct hb_s3_uploads ups = { 0 };
	struct hb_err e = { 0 };
	char code[64], msg[128], *id = NULL;

	hb_arena_init(&page.arena, 0);
	if (!hb_s3_parse_list(p, n, &page, &e)) {
		for (size_t i = 0; i < page.n; i++)
			if (!page.v[i].key || !*page.v[i].key)
				abort();
		if (page.truncated && !page.next_token)
			abort();
	}
	hb_s3_page_free(&page);
	memset(&e, 0, sizeof(e));
	hb_arena_init(&ups.arena, 0);
	if (!hb_s3_parse_mpu_list(p, n, &ups, &e)) {
		for (size_t i = 0; i < ups.n; i++)
			if (!*ups.v[i].key || !*ups.v[i].upload_id ||
			    !ups.v[i].initiated)
				abort();
		if (ups.truncated && (!ups.next_key || !*ups.next_key))
			abort();
	}
	hb_arena_free(&ups.arena);
	hb_s3_parse_error(p, n, code, sizeof(code), msg, sizeof(msg));
	memset(&e, 0, sizeof(e));
	if (!hb_s3_parse_mpu_create(p, n, &id, &e) && (!id || !*id))
		abort();
	free(id);
	hb_s3_parse_mpu_complete(p, n, code, sizeof(code), msg, sizeof(msg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_arena a, a2;
	struct hb_s3_xml *x = NULL, *y = NULL;
	struct hb_err e = { 0 };
	struct hb_buf b;

	hb_arena_init(&a, 0);
	hb_arena_init(&a2, 0);
	hb_buf_init(&b, 0);
	if (!hb_s3_xml_parse((const char *)data, size, &a, &x, &e)) {
		if (!x || write_tree(x, &b))
			abort();
		memset(&e, 0, sizeof(e));
		if (hb_s3_xml_parse(b.data, b.len, &a2, &y, &e) ||
		    !same(x, y)) {
			fprintf(stderr, "round trip: %s\n%s\n", e.msg, b.data);
			abort();
		}
	} else if (!e.msg[0]) {
		abort(); /* a refusal always says why */
	}
	answers((const char *)data, size);
	hb_buf_free(&b);
	hb_arena_free(&a);
	hb_arena_free(&a2);
	return 0;
}
