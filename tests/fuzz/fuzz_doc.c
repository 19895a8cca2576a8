/*
 * fuzz_doc.c - hb_doc_parse must never crash, and whatever it accepts must
 * survive both writers: write YAML and JSON, read each back, and get the
 * same tree.  hb_json_check must take exactly what the JSON reader takes,
 * but for what the reader refuses for its own reasons (duplicate keys,
 * \u0000, numbers beyond its range), and whatever the writers write.
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

static int valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], cp, len, k;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			len = 2, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			len = 3, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			len = 4, cp = c & 0x07;
		else
			return 0;
		if (n - i < len)
			return 0;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		i += len;
	}
	return 1;
}

/*
 * The writers on a tree built in code from the raw bytes, as emitters
 * build them from scripts: the bytes (up to a NUL) as a value, a key, a
 * sequence item and a root.  The output must always read back; it must
 * read back equal when the bytes are valid UTF-8 (invalid bytes become
 * U+FFFD).
 */
static void strings(const uint8_t *data, size_t size)
{
	struct hb_err err = {0};
	struct hb_buf b;
	char *s = malloc(size + 1);
	cJSON *doc, *arr, *back = NULL;
	int pass, exact;

	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	exact = valid_utf8((const unsigned char *)s, strlen(s));
	doc = cJSON_CreateObject();
	arr = cJSON_CreateArray();
	cJSON_AddStringToObject(doc, "v", s);
	cJSON_AddItemToArray(arr, cJSON_CreateString(s));
	cJSON_AddItemToArray(arr, cJSON_CreateString("after"));
	cJSON_AddItemToObject(doc, strcmp(s, "v") ? s : "w", arr);
	hb_buf_init(&b, 0);
	for (pass = 0; pass < 4; pass++) {
		const cJSON *t = pass < 2 ? doc : doc->child;
		int rc;

		hb_buf_reset(&b);
		rc = pass % 2 ? hb_doc_write_json(t, &b)
			      : hb_doc_write_yaml(t, &b);
		if (rc)
			abort();
		if (pass % 2 && hb_json_check(b.data, b.len, NULL))
			__builtin_trap(); /* the writer's JSON is JSON */
		memset(&err, 0, sizeof(err));
		if (hb_doc_parse(b.data, b.len, "strings", &back, &err)) {
			fprintf(stderr,
				"output does not parse: %s\n---\n%s---\n",
				err.msg, b.data);
			abort();
		}
		if (exact && !cJSON_Compare(t, back, 1) &&
		    !(pass >= 2 && cJSON_IsString(back) &&
		      !strcmp(back->valuestring, t->valuestring))) {
			fprintf(stderr,
				"strings round trip differs\n---\n%s---\n",
				b.data);
			abort();
		}
		cJSON_Delete(back);
		back = NULL;
	}
	hb_buf_free(&b);
	cJSON_Delete(doc);
	free(s);
}

/* As doc.c's looks_json(): the first non-blank byte is '{' or '['. */
static int looks_json(const uint8_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '{' || s[i] == '[')
			return 1;
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	}
	return 0;
}

/* Sixteen digits in a row (2^53 has sixteen), or an exponent: the only
 * ways to a number the reader refuses as out of its range. */
static int big_number(const char *s, size_t n)
{
	size_t i, run = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == 'e' || s[i] == 'E')
			return 1;
		run = s[i] >= '0' && s[i] <= '9' ? run + 1 : 0;
		if (run >= 16)
			return 1;
	}
	return 0;
}

static int has_u0000(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i + 5 <= n; i++)
		if (!memcmp(s + i, "u0000", 5))
			return 1;
	return 0;
}

/*
 * hb_json_check() against the JSON reader, both ways.  The reader is
 * reached through hb_doc_parse() with a tab before the text: JSON takes a
 * tab as a blank, but YAML refuses one that starts a document, so the
 * YAML fallback cannot take what the JSON reader refused (checked once,
 * on the first input).  A text whose first non-blank byte is not '{' or
 * '[' would never reach the JSON reader, so it goes in as the one element
 * of an array.
 */
static void json_check(const uint8_t *data, size_t size)
{
	struct hb_err err = {0};
	const char *why, *twhy;
	cJSON *doc = NULL;
	size_t n, at = 0, tat = 0;
	char *t = malloc(size + 3);
	int rc, wrap = !looks_json(data, size);

	if (!t)
		return;
	why = hb_json_check((const char *)data, size, &at);
	if (why && (at > size || (!strcmp(why, "unexpected end of input") &&
				  at != size)))
		__builtin_trap();
	t[0] = '\t';
	if (wrap)
		t[1] = '[';
	memcpy(t + 1 + wrap, data, size);
	if (wrap)
		t[size + 2] = ']';
	n = size + 1 + 2 * (size_t)wrap;
	twhy = hb_json_check(t, n, &tat);
	/* a blank before the text moves the problem by one byte */
	if (!wrap && (!why != !twhy ||
		      (why && (strcmp(why, twhy) || tat != at + 1))))
		__builtin_trap();
	rc = hb_doc_parse(t, n, "fuzz", &doc, &err);
	cJSON_Delete(doc);
	if (!rc && twhy) {
		fprintf(stderr, "the reader takes what the check refuses "
				"(%s at %zu)\n", twhy, tat);
		__builtin_trap();
	}
	if (rc && !twhy && !(rc == HB_ERANGE && big_number(t, n)) &&
	    !(rc == HB_EINVAL && strstr(err.msg, "duplicate mapping key")) &&
	    !(rc == HB_EINVAL && has_u0000(t, n) &&
	      strstr(err.msg, "NUL character in a string"))) {
		fprintf(stderr, "the check takes what the reader refuses: %s\n",
			err.msg);
		__builtin_trap();
	}
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_err err = {0};
	struct hb_buf b;
	cJSON *doc = NULL;
	static int once;
	int rc;

	if (!once) {
		/* YAML must refuse what json_check() feeds the reader */
		static const char flow[] = "\t{a: 1}";

		if (hb_doc_parse(flow, sizeof(flow) - 1, "t", &doc, &err) !=
		    HB_EINVAL)
			__builtin_trap();
		memset(&err, 0, sizeof(err));
		once = 1;
	}
	if (size <= 4096)
		strings(data, size);
	json_check(data, size);
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
	if (rc == 0 && hb_json_check(b.data, b.len, NULL))
		__builtin_trap();
	if (rc == 0)
		check(doc, &b, "json");
	else if (!(rc == HB_EUNSUP && has_nonfinite(doc)))
		abort();
	hb_buf_reset(&b);
	if (hb_doc_write_json_compact(doc, &b) == 0 &&
	    hb_json_check(b.data, b.len, NULL))
		__builtin_trap();
	hb_buf_free(&b);
	cJSON_Delete(doc);

	/* the stream reader too */
	if (hb_doc_parse_stream((const char *)data, size, "fuzz", &doc, &err) ==
	    0)
		cJSON_Delete(doc);
	return 0;
}
