/*
 * fuzz_doc.c - hb_doc_parse must never crash, and whatever it accepts must
 * survive both writers: write YAML and JSON, read each back, and get the
 * same tree.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Exact equality: same types, same keys in the same order, byte-equal
 * strings, equal numbers (NaN equal to NaN). */
static int same(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if ((a->type & 0xFF) != (b->type & 0xFF))
		return 0;
	if ((a->string == NULL) != (b->string == NULL))
		return 0;
	if (a->string && strcmp(a->string, b->string))
		return 0;
	switch (a->type & 0xFF) {
	case cJSON_Number:
		if (isnan(a->valuedouble))
			return isnan(b->valuedouble);
		return a->valuedouble == b->valuedouble;
	case cJSON_String:
		return !strcmp(a->valuestring, b->valuestring);
	case cJSON_Array:
	case cJSON_Object:
		for (x = a->child, y = b->child; x && y;
		     x = x->next, y = y->next)
			if (!same(x, y))
				return 0;
		return !x && !y;
	default:
		return 1;
	}
}

static int has_nonfinite(const cJSON *a)
{
	const cJSON *c;

	if (cJSON_IsNumber(a))
		return !isfinite(a->valuedouble);
	for (c = a->child; c; c = c->next)
		if (has_nonfinite(c))
			return 1;
	return 0;
}

static void check(const cJSON *doc, const struct hb_buf *b, const char *what)
{
	struct hb_err err = {0};
	cJSON *back = NULL;

	if (hb_doc_parse(b->data, b->len, what, &back, &err)) {
		fprintf(stderr, "%s output does not parse: %s\n---\n%s---\n",
			what, err.msg, b->data);
		abort();
	}
	if (!same(doc, back)) {
		fprintf(stderr, "%s round trip differs\n---\n%s---\n", what,
			b->data);
		abort();
	}
	cJSON_Delete(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_err err = {0};
	struct hb_buf b;
	cJSON *doc = NULL;
	int rc;

	if (hb_doc_parse((const char *)data, size, "fuzz", &doc, &err)) {
		if (!err.msg[0])
			abort(); /* every error must say something */
		return 0;
	}
	hb_buf_init(&b, 0);
	if (hb_doc_write_yaml(doc, &b))
		abort();
	check(doc, &b, "yaml");
	hb_buf_reset(&b);
	rc = hb_doc_write_json(doc, &b);
	if (rc == 0)
		check(doc, &b, "json");
	else if (!(rc == HB_EUNSUP && has_nonfinite(doc)))
		abort();
	hb_buf_free(&b);
	cJSON_Delete(doc);

	/* the stream reader too */
	if (hb_doc_parse_stream((const char *)data, size, "fuzz", &doc, &err) ==
	    0)
		cJSON_Delete(doc);
	return 0;
}
