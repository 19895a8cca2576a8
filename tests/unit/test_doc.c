/*
 * test_doc.c - YAML/JSON documents: core-schema typing, strict rejections
 * with their lines, source lines of nodes, both writers and round trips,
 * the JSON syntax check, and the real CRDs and examples.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "testutil.h"

static cJSON *parse_ok(const char *text)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;
	int rc = hb_doc_parse(text, strlen(text), "t.yaml", &doc, &err);

	if (rc)
		fail_msg("parse failed (%d): %s\n%s", rc, err.msg, text);
	assert_non_null(doc);
	return doc;
}

/* Parse must fail with code and exactly this message. */
static void parse_fails(const char *text, int code, const char *msg)
{
	struct hb_err err = {0};
	cJSON *doc = NULL;
	int rc = hb_doc_parse(text, strlen(text), "t.yaml", &doc, &err);

	if (rc == 0)
		fail_msg("parse of %s should fail", text);
	assert_null(doc);
	assert_int_equal(rc, code);
	if (strstr(err.msg, msg) != err.msg)
		fail_msg("got '%s', want '%s...'", err.msg, msg);
}

/* ---- core schema typing ---- */

enum kind { K_NULL, K_TRUE, K_FALSE, K_NUM, K_STR };

static const struct {
	const char *text;
	enum kind kind;
	double num;
} typing[] = {
    {"", K_NULL, 0},
    {"~", K_NULL, 0},
    {"null", K_NULL, 0},
    {"Null", K_NULL, 0},
    {"NULL", K_NULL, 0},
    {"nULL", K_STR, 0},
    {"true", K_TRUE, 0},
    {"True", K_TRUE, 0},
    {"TRUE", K_TRUE, 0},
    {"false", K_FALSE, 0},
    {"False", K_FALSE, 0},
    {"FALSE", K_FALSE, 0},
    {"tRue", K_STR, 0},
    {"yes", K_STR, 0},
    {"no", K_STR, 0},
    {"on", K_STR, 0},
    {"off", K_STR, 0},
    {"y", K_STR, 0},
    {"0", K_NUM, 0},
    {"-0", K_NUM, 0},
    {"42", K_NUM, 42},
    {"+42", K_NUM, 42},
    {"-17", K_NUM, -17},
    {"007", K_NUM, 7},
    {"0o17", K_NUM, 15},
    {"0x1F", K_NUM, 31},
    {"0xff", K_NUM, 255},
    {"0o8", K_STR, 0},
    {"0xg", K_STR, 0},
    {"-0x1F", K_STR, 0},
    {"0b101", K_STR, 0},
    {"1_000", K_STR, 0},
    {"9007199254740992", K_NUM, 9007199254740992.0},
    {"-9007199254740992", K_NUM, -9007199254740992.0},
    {"1.5", K_NUM, 1.5},
    {"-1.5", K_NUM, -1.5},
    {"1.", K_NUM, 1},
    {".5", K_NUM, 0.5},
    {"+.5", K_NUM, 0.5},
    {"1e3", K_NUM, 1000},
    {"1E-2", K_NUM, 0.01},
    {"2.5e+2", K_NUM, 250},
    {"1e", K_STR, 0},
    {".", K_STR, 0},
    {"1.2.3", K_STR, 0},
    {"12:30", K_STR, 0},
    {"2024-01-01", K_STR, 0},
    {"4Gi", K_STR, 0},
    {"500m", K_STR, 0},
    {"0x", K_STR, 0},
    {"abc", K_STR, 0},
};

static void test_core_schema(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(typing) / sizeof(typing[0]); i++) {
		char text[128];
		cJSON *doc, *v;

		snprintf(text, sizeof(text), "v: %s\n", typing[i].text);
		doc = parse_ok(text);
		v = cJSON_GetObjectItemCaseSensitive(doc, "v");
		assert_non_null(v);
		switch (typing[i].kind) {
		case K_NULL:
			if (!cJSON_IsNull(v))
				fail_msg("'%s' should be null", typing[i].text);
			break;
		case K_TRUE:
			if (!cJSON_IsTrue(v))
				fail_msg("'%s' should be true", typing[i].text);
			break;
		case K_FALSE:
			if (!cJSON_IsFalse(v))
				fail_msg("'%s' should be false",
					 typing[i].text);
			break;
		case K_NUM:
			if (!cJSON_IsNumber(v) ||
			    v->valuedouble != typing[i].num)
				fail_msg("'%s' should be the number %g",
					 typing[i].text, typing[i].num);
			break;
		case K_STR:
			if (!cJSON_IsString(v) ||
			    strcmp(v->valuestring, typing[i].text))
				fail_msg("'%s' should be a string",
					 typing[i].text);
			break;
		}
		cJSON_Delete(doc);
	}
}

static void test_special_floats(void **state)
{
	cJSON *doc = parse_ok("[.inf, -.Inf, +.INF, .nan, .NaN, .NAN, .iNf]");
	cJSON *a = doc->child;

	(void)state;
	assert_true(isinf(a->valuedouble) && a->valuedouble > 0);
	a = a->next;
	assert_true(isinf(a->valuedouble) && a->valuedouble < 0);
	a = a->next;
	assert_true(isinf(a->valuedouble) && a->valuedouble > 0);
	a = a->next;
	assert_true(isnan(a->valuedouble));
	a = a->next;
	assert_true(isnan(a->valuedouble));
	a = a->next;
	assert_true(isnan(a->valuedouble));
	a = a->next;
	assert_true(cJSON_IsString(a));
	cJSON_Delete(doc);
}

static void test_quoted_block_tags(void **state)
{
	cJSON *doc = parse_ok("a: \"12\"\n"
			      "b: 'true'\n"
			      "c: |\n  1\n"
			      "d: >-\n  x\n  y\n"
			      "e: !!str 12\n"
			      "f: !!int \"12\"\n"
			      "g: !!float 3\n"
			      "h: !!bool \"false\"\n"
			      "i: !!null ''\n"
			      "j: ! 12\n"
			      "k: !!map {x: 1}\n"
			      "l: !!seq [1]\n"
			      "m: &anchor plain\n"
			      "n: 0x10\n");

	(void)state;
	assert_string_equal(hb_doc_get(doc, "a")->valuestring, "12");
	assert_string_equal(hb_doc_get(doc, "b")->valuestring, "true");
	assert_string_equal(hb_doc_get(doc, "c")->valuestring, "1\n");
	assert_string_equal(hb_doc_get(doc, "d")->valuestring, "x y");
	assert_string_equal(hb_doc_get(doc, "e")->valuestring, "12");
	assert_true(cJSON_IsNumber(hb_doc_get(doc, "f")));
	assert_true(hb_doc_get(doc, "f")->valuedouble == 12);
	assert_true(hb_doc_get(doc, "g")->valuedouble == 3);
	assert_true(cJSON_IsFalse(hb_doc_get(doc, "h")));
	assert_true(cJSON_IsNull(hb_doc_get(doc, "i")));
	assert_string_equal(hb_doc_get(doc, "j")->valuestring, "12");
	assert_true(hb_doc_get(doc, "k.x")->valuedouble == 1);
	assert_true(cJSON_IsArray(hb_doc_get(doc, "l")));
	assert_string_equal(hb_doc_get(doc, "m")->valuestring, "plain");
	assert_true(hb_doc_get(doc, "n")->valuedouble == 16);
	cJSON_Delete(doc);
}

/* ---- rejections, each with its line ---- */

static void test_rejections(void **state)
{
	char *deep;
	size_t i;

	(void)state;
	parse_fails("a: &x 1\nb: *x\n", HB_EUNSUP,
		    "t.yaml:2: YAML aliases are not supported");
	parse_fails("a: 1\nb: 2\na: 3\n", HB_EINVAL,
		    "t.yaml:3: duplicate mapping key \"a\"");
	parse_fails("x:\n  - {k: 1, k: 2}\n", HB_EINVAL,
		    "t.yaml:2: duplicate mapping key \"k\"");
	parse_fails("{\"a\": 1,\n \"b\": 2,\n \"a\": 3}", HB_EINVAL,
		    "t.yaml:3: duplicate mapping key \"a\"");
	parse_fails("a: 1\n? [x]\n: 2\n", HB_EUNSUP,
		    "t.yaml:2: mapping keys must be scalars");
	parse_fails("a: 1\n{b: 1}: 2\n", HB_EUNSUP,
		    "t.yaml:2: mapping keys must be scalars");
	parse_fails("a: 1\nb: !foo x\n", HB_EUNSUP,
		    "t.yaml:2: unsupported YAML tag '!foo'");
	parse_fails("a: !!binary aGk=\n", HB_EUNSUP,
		    "t.yaml:1: unsupported YAML tag "
		    "'tag:yaml.org,2002:binary'");
	parse_fails("a: !!int 1.5\n", HB_EINVAL,
		    "t.yaml:1: '1.5' is not a valid !!int");
	parse_fails("a: !!bool yes\n", HB_EINVAL,
		    "t.yaml:1: 'yes' is not a valid !!bool");
	parse_fails("a: !!map [1]\n", HB_EUNSUP,
		    "t.yaml:1: unsupported YAML tag");
	parse_fails("n: 1\nbig: 9007199254740993\n", HB_ERANGE,
		    "t.yaml:2: integer 9007199254740993 is too large");
	parse_fails("n: -9007199254740993\n", HB_ERANGE,
		    "t.yaml:1: integer -9007199254740993 is too large");
	parse_fails("n: 0x20000000000001\n", HB_ERANGE,
		    "t.yaml:1: integer 0x20000000000001 is too large");
	parse_fails("{\n\"n\": 18446744073709551617}", HB_ERANGE,
		    "t.yaml:2: integer 18446744073709551617 is too large");
	parse_fails("f: 1e400\n", HB_ERANGE,
		    "t.yaml:1: number 1e400 is out of range");
	parse_fails("a: 1\n---\nb: 2\n", HB_EINVAL,
		    "t.yaml:3: expected one document, found several");
	parse_fails("a: 1\nb: \"x\\0y\"\n", HB_EINVAL,
		    "t.yaml:2: NUL character in a string");
	parse_fails("{\"a\":\n \"x\\u0000\"}", HB_EINVAL,
		    "t.yaml:2: NUL character in a string");
	parse_fails("a: 1\n b: 2\n", HB_EINVAL, "t.yaml:2: ");
	parse_fails("a: [1, 2\nb: 3\n", HB_EINVAL, "t.yaml:");
	parse_fails("{\"a\": 1,\n\n \"b\" 2}", HB_EINVAL,
		    "t.yaml:3: JSON: expected ':'");
	parse_fails("a: \"\xff\"\n", HB_EINVAL, "t.yaml:1: invalid");
	parse_fails("a: \tb\n\tc: 1\n", HB_EINVAL, "t.yaml:2: ");

	/* a NUL byte in the input */
	{
		struct hb_err err = {0};
		cJSON *doc = NULL;
		const char text[] = "a: 1\nb: x\0y\n";

		assert_int_equal(
		    hb_doc_parse(text, sizeof(text) - 1, "t.yaml", &doc, &err),
		    HB_EINVAL);
		assert_string_equal(err.msg, "t.yaml:2: NUL byte in input");
		assert_null(doc);
	}
	/* too big */
	{
		struct hb_err err = {0};
		cJSON *doc = NULL;
		size_t n = HB_DOC_MAX + 1;
		char *big = malloc(n);

		assert_non_null(big);
		memset(big, ' ', n);
		assert_int_equal(hb_doc_parse(big, n, "t.yaml", &doc, &err),
				 HB_ETOOBIG);
		assert_non_null(strstr(err.msg, "t.yaml: input is"));
		free(big);
	}
	/* too deep, both in YAML flow, YAML block and JSON */
	deep = malloc(4 * (HB_DOC_MAX_DEPTH + 2) + 16);
	assert_non_null(deep);
	for (i = 0; i <= HB_DOC_MAX_DEPTH; i++)
		deep[i] = '[';
	deep[i] = '\0';
	parse_fails(deep, HB_ETOOBIG, "t.yaml:1: nesting deeper than 64");
	for (i = 0; i < HB_DOC_MAX_DEPTH; i++)
		deep[i] = '[';
	for (; i < 2 * HB_DOC_MAX_DEPTH; i++)
		deep[i] = ']';
	deep[i] = '\0';
	{
		cJSON *ok = parse_ok(deep); /* exactly 64 is fine */

		cJSON_Delete(ok);
	}
	{
		size_t o = 0;

		for (i = 0; i <= HB_DOC_MAX_DEPTH; i++) {
			deep[o++] = '-';
			deep[o++] = ' ';
		}
		deep[o++] = 'x';
		deep[o] = '\0';
		parse_fails(deep, HB_ETOOBIG, "t.yaml:1: nesting deeper");
	}
	free(deep);
}

/* Many keys use the hash table; a duplicate among them is still found. */
static void test_many_keys(void **state)
{
	struct hb_buf b;
	unsigned i;

	(void)state;
	hb_buf_init(&b, 0);
	for (i = 0; i < 500; i++)
		assert_int_equal(hb_buf_printf(&b, "k%u: %u\n", i, i), 0);
	{
		cJSON *doc = parse_ok(b.data);

		assert_int_equal(cJSON_GetArraySize(doc), 500);
		assert_true(hb_doc_get(doc, "k499")->valuedouble == 499);
		cJSON_Delete(doc);
	}
	assert_int_equal(hb_buf_puts(&b, "k250: again\n"), 0);
	parse_fails(b.data, HB_EINVAL,
		    "t.yaml:501: duplicate mapping key \"k250\"");
	hb_buf_free(&b);
}

/* ---- lines ---- */

static void test_lines(void **state)
{
	cJSON *doc = parse_ok("# comment\n"
			      "apiVersion: v1\n"
			      "spec:\n"
			      "  replicas: 3\n"
			      "  flag: true\n"
			      "  none: null\n"
			      "  list:\n"
			      "  - a\n"
			      "  - x: 1.5\n"
			      "    y: [1, 2]\n"
			      "  text: |\n"
			      "    hi\n");
	cJSON *list;

	(void)state;
	assert_int_equal(hb_doc_line(doc), 2);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "apiVersion")), 2);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "spec")), 3);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "spec.replicas")), 4);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "spec.flag")), 5);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "spec.none")), 6);
	list = hb_doc_get(doc, "spec.list");
	assert_int_equal(hb_doc_line(list), 7);
	assert_int_equal(hb_doc_line(cJSON_GetArrayItem(list, 0)), 8);
	assert_int_equal(hb_doc_line(cJSON_GetArrayItem(list, 1)), 9);
	assert_int_equal(
	    hb_doc_line(hb_doc_get(cJSON_GetArrayItem(list, 1), "y")), 10);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "spec.text")), 11);
	/* the line does not disturb the values */
	assert_int_equal(hb_doc_get(doc, "spec.replicas")->valueint, 3);
	assert_true(
	    hb_doc_get(doc, "spec.list")->child->next->child->valuedouble ==
	    1.5);
	/* it survives cJSON_Duplicate, and a copy still compares equal */
	{
		cJSON *dup = cJSON_Duplicate(doc, 1);

		assert_int_equal(hb_doc_line(hb_doc_get(dup, "spec.replicas")),
				 4);
		assert_true(cJSON_Compare(doc, dup, 1));
		cJSON_Delete(dup);
	}
	/* nodes built in code have no line */
	{
		cJSON *n = cJSON_CreateNumber(5), *s = cJSON_CreateString("x");

		assert_int_equal(hb_doc_line(n), 0);
		assert_int_equal(hb_doc_line(s), 0);
		assert_int_equal(hb_doc_line(NULL), 0);
		cJSON_Delete(n);
		cJSON_Delete(s);
	}
	cJSON_Delete(doc);

	doc = parse_ok("{\n  \"a\": {\n    \"b\": [\n      1,\n      \"s\"\n"
		       "    ]\n  }\n}\n");
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "a")), 2);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "a.b")), 3);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "a.b")->child), 4);
	assert_int_equal(hb_doc_line(hb_doc_get(doc, "a.b")->child->next), 5);
	cJSON_Delete(doc);
}

static void test_get(void **state)
{
	cJSON *doc = parse_ok("a:\n  b:\n    c: 1\n  l: [1]\n");

	(void)state;
	assert_ptr_equal(hb_doc_get(doc, ""), doc);
	assert_true(hb_doc_get(doc, "a.b.c")->valuedouble == 1);
	assert_true(cJSON_IsObject(hb_doc_get(doc, "a.b")));
	assert_null(hb_doc_get(doc, "a.b.c.d"));
	assert_null(hb_doc_get(doc, "a.x"));
	assert_null(hb_doc_get(doc, "a.l.0"));
	assert_null(hb_doc_get(doc, "A"));
	assert_null(hb_doc_get(doc, "a."));
	assert_null(hb_doc_get(NULL, "a"));
	cJSON_Delete(doc);

	/* hb_doc_str: a whole key, dots and all; strings only */
	doc = parse_ok("labels: {hpcbridge.io/user: alice, n: 3}\nx: y\n");
	assert_string_equal(
		hb_doc_str(hb_doc_get(doc, "labels"), "hpcbridge.io/user"),
		"alice");
	assert_string_equal(hb_doc_str(doc, "x"), "y");
	assert_null(hb_doc_str(hb_doc_get(doc, "labels"), "n"));
	assert_null(hb_doc_str(doc, "labels"));
	assert_null(hb_doc_str(doc, "missing"));
	assert_null(hb_doc_str(NULL, "x"));
	cJSON_Delete(doc);
}

/* ---- JSON input ---- */

static void test_json_input(void **state)
{
	cJSON *doc = parse_ok("  {\"a\": \"\\ud83d\\ude00 \\u00e9\\/\\t\","
			      " \"b\": [1, -2.5e2, true, false, null, {}],"
			      " \"c\": 0}");

	(void)state;
	assert_string_equal(hb_doc_get(doc, "a")->valuestring,
			    "\xf0\x9f\x98\x80 \xc3\xa9/\t");
	assert_true(hb_doc_get(doc, "b")->child->next->valuedouble == -250);
	cJSON_Delete(doc);
	/* a YAML flow mapping that is not JSON still parses */
	doc = parse_ok("{a: 1, b: [x, y]}");
	assert_string_equal(hb_doc_get(doc, "b")->child->valuestring, "x");
	cJSON_Delete(doc);
	parse_fails("{\"a\": \"\\ud800\"}", HB_EINVAL, "t.yaml:1: JSON: ");
	parse_fails("{\"a\" 1}", HB_EINVAL, "t.yaml:1: JSON: ");
	/* not JSON but fine YAML */
	doc = parse_ok("{\"a\": 01}");
	assert_true(hb_doc_get(doc, "a")->valuedouble == 1);
	cJSON_Delete(doc);
	parse_fails("[1, 2] x", HB_EINVAL, "t.yaml:1: JSON: ");
}

/* ---- streams and empty documents ---- */

static void test_streams(void **state)
{
	struct hb_err err = {0};
	const char *text = "---\na: 1\n---\n---\n- x\n...\n--- 3\n";
	cJSON *docs = NULL, *one = NULL;
	struct hb_buf b;

	(void)state;
	assert_int_equal(
	    hb_doc_parse_stream(text, strlen(text), "s.yaml", &docs, &err), 0);
	assert_int_equal(cJSON_GetArraySize(docs), 3);
	assert_int_equal(hb_doc_line(cJSON_GetArrayItem(docs, 1)), 5);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_yaml_stream(docs, &b), 0);
	assert_string_equal(b.data, "---\na: 1\n---\n- x\n---\n3\n");
	{
		cJSON *back = NULL;

		assert_int_equal(
		    hb_doc_parse_stream(b.data, b.len, "s", &back, &err), 0);
		assert_true(cJSON_Compare(docs, back, 1));
		cJSON_Delete(back);
	}
	hb_buf_free(&b);
	cJSON_Delete(docs);

	/* empty input: a null document, and an empty stream */
	assert_int_equal(hb_doc_parse("", 0, "e", &one, &err), 0);
	assert_true(cJSON_IsNull(one));
	cJSON_Delete(one);
	assert_int_equal(hb_doc_parse("# only\n---\n", 11, "e", &one, &err), 0);
	assert_true(cJSON_IsNull(one));
	cJSON_Delete(one);
	assert_int_equal(hb_doc_parse_stream("", 0, "e", &docs, &err), 0);
	assert_int_equal(cJSON_GetArraySize(docs), 0);
	cJSON_Delete(docs);
	/* a JSON document as a stream */
	assert_int_equal(hb_doc_parse_stream("{\"a\": 1}", 8, "e", &docs, &err),
			 0);
	assert_int_equal(cJSON_GetArraySize(docs), 1);
	cJSON_Delete(docs);
	/* one real document among empty ones is fine for hb_doc_parse */
	one = parse_ok("---\n---\nkind: Pod\n---\n");
	assert_string_equal(hb_doc_get(one, "kind")->valuestring, "Pod");
	cJSON_Delete(one);
}

/* ---- writers ---- */

static char *yaml_of(const cJSON *doc)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_yaml(doc, &b), 0);
	return hb_buf_steal(&b);
}

static char *json_of(const cJSON *doc)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_json(doc, &b), 0);
	return hb_buf_steal(&b);
}

/*
 * Exact equality: same types, keys in the same order, byte-equal strings,
 * equal numbers.  cJSON_Compare agrees on these trees, but it compares
 * every object twice per level, which is exponential on a deep CRD.
 */
static int same(const cJSON *a, const cJSON *b, int root)
{
	const cJSON *x, *y;

	if ((a->type & 0xFF) != (b->type & 0xFF))
		return 0;
	if (!root && ((a->string == NULL) != (b->string == NULL) ||
		      (a->string && strcmp(a->string, b->string))))
		return 0;
	switch (a->type & 0xFF) {
	case cJSON_Number:
		return a->valuedouble == b->valuedouble;
	case cJSON_String:
		return !strcmp(a->valuestring, b->valuestring);
	case cJSON_Array:
	case cJSON_Object:
		for (x = a->child, y = b->child; x && y;
		     x = x->next, y = y->next)
			if (!same(x, y, 0))
				return 0;
		return !x && !y;
	default:
		return 1;
	}
}

static int small(const cJSON *a, int depth)
{
	const cJSON *c;

	if (depth > 8)
		return 0;
	for (c = a->child; c; c = c->next)
		if (!small(c, depth + 1))
			return 0;
	return 1;
}

static int equal(const cJSON *a, const cJSON *b)
{
	if (!same(a, b, 1))
		return 0;
	return !small(a, 0) || cJSON_Compare(a, b, 1);
}

/* JSON text with the whitespace outside strings removed. */
static char *squeeze(const char *j)
{
	char *out = malloc(strlen(j) + 1), *o = out;
	int in_str = 0;

	assert_non_null(out);
	for (; *j; j++) {
		if (in_str) {
			*o++ = *j;
			if (*j == '\\' && j[1])
				*o++ = *++j;
			else if (*j == '"')
				in_str = 0;
			continue;
		}
		if (*j == '"')
			in_str = 1;
		if (*j != ' ' && *j != '\n')
			*o++ = *j;
	}
	*o = '\0';
	return out;
}

/* The compact writer: the pretty text without its whitespace, and
 * nothing else. */
static void check_compact(const cJSON *doc, const char *pretty)
{
	struct hb_buf b;
	char *want = squeeze(pretty);

	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_json_compact(doc, &b), 0);
	if (strcmp(b.data, want))
		fail_msg("compact JSON differs:\n%s\nwant\n%s", b.data, want);
	hb_buf_free(&b);
	free(want);
}

static void roundtrip(const cJSON *doc)
{
	struct hb_err err = {0};
	char *y = yaml_of(doc), *j = json_of(doc);
	cJSON *back = NULL;

	check_compact(doc, j);

	if (hb_doc_parse(y, strlen(y), "y", &back, &err))
		fail_msg("YAML output does not parse: %s\n%s", err.msg, y);
	if (!equal(doc, back))
		fail_msg("YAML round trip differs:\n%s", y);
	cJSON_Delete(back);
	if (hb_doc_parse(j, strlen(j), "j", &back, &err))
		fail_msg("JSON output does not parse: %s\n%s", err.msg, j);
	if (!equal(doc, back))
		fail_msg("JSON round trip differs:\n%s", j);
	cJSON_Delete(back);
	free(y);
	free(j);
}

static const char *const tricky[] = {
    "",
    " ",
    "yes",
    "no",
    "on",
    "off",
    "Yes",
    "NO",
    "y",
    "n",
    "true",
    "False",
    "null",
    "Null",
    "~",
    "1e3",
    "0x1F",
    "0o17",
    "0b11",
    "1_000",
    "12",
    "-1",
    "+1",
    "1.5",
    ".5",
    "1.",
    ".inf",
    "-.inf",
    ".nan",
    "1:20",
    "2024-01-01",
    "- x",
    "-x",
    "--mpi=pmix",
    "-np",
    "-",
    "--",
    "---",
    "...",
    "---x",
    "a: b",
    "a:b",
    "a:",
    ":a",
    "#x",
    "a #b",
    "a#b",
    "? x",
    "?x",
    ",x",
    "[x]",
    "{x}",
    "&x",
    "*x",
    "!x",
    "|x",
    ">x",
    "'x",
    "\"x",
    "%x",
    "@x",
    "`x",
    " lead",
    "trail ",
    "a\tb",
    "tab\t",
    "cr\rx",
    "<<",
    "=",
    "multi\nline",
    "multi\nline\n",
    "multi\nline\n\n",
    "multi\nline\n\n\n",
    "\nleading newline",
    "\n",
    "\n\n",
    "  indented\nfirst",
    "x\n  more indented\n",
    "x\n\n  y",
    "x\n  \n",
    "x\n \n y",
    "a\n\tb\n",
    "\tfirst tab\nx",
    "x\n  ",
    "x\r\ny",
    "ctrl\x01\x7f",
    "\xc2\x85next line",
    "line\xe2\x80\xa8sep",
    "bom\xef\xbb\xbf",
    "\xef\xbf\xbe",
    "caf\xc3\xa9",
    "\xe6\x97\xa5\xe6\x9c\xac",
    "emoji \xf0\x9f\x98\x80",
    "quote \" and back \\ slash",
    "key: value\n- item\n# comment\n",
    "%YAML 1.2",
    "!!str x",
    "a\n---\nb",
    "a\n...\nb",
    "nbsp\xc2\xa0",
    "  ",
    "x  y",
    "mpioperator/openmpi:latest",
    "http://x/y?z#w",
    "4Gi",
    "500m",
};

static void test_roundtrip_tricky_strings(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		cJSON *doc = cJSON_CreateObject();
		cJSON *arr = cJSON_CreateArray();
		cJSON *m = cJSON_CreateObject();

		/* as a value, a key, a sequence item, a root */
		cJSON_AddStringToObject(doc, "v", tricky[i]);
		cJSON_AddStringToObject(doc, tricky[i], "k");
		cJSON_AddItemToArray(arr, cJSON_CreateString(tricky[i]));
		cJSON_AddItemToObject(m, "in", cJSON_CreateString(tricky[i]));
		cJSON_AddItemToArray(arr, m);
		cJSON_AddItemToObject(doc, "arr", arr);
		roundtrip(doc);
		roundtrip(cJSON_GetObjectItemCaseSensitive(doc, "v"));
		cJSON_Delete(doc);
	}
}

static void test_roundtrip_numbers_and_shapes(void **state)
{
	static const double nums[] = {
	    0,
	    1,
	    -1,
	    42,
	    1.5,
	    -0.25,
	    1e-7,
	    1e300,
	    -1e300,
	    0.1,
	    1.0 / 3,
	    9007199254740992.0,
	    9007199254740994.0,
	    1e16,
	    123456789.125,
	    5e-324,
	    1.7976931348623157e308,
	    4294967296.0,
	};
	cJSON *doc = cJSON_CreateObject(), *arr = cJSON_CreateArray();
	char *y;
	size_t i;
	char longkey[1500];

	(void)state;
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(nums[i]));
	cJSON_AddItemToObject(doc, "nums", arr);
	cJSON_AddItemToObject(doc, "emptymap", cJSON_CreateObject());
	cJSON_AddItemToObject(doc, "emptylist", cJSON_CreateArray());
	cJSON_AddTrueToObject(doc, "t");
	cJSON_AddFalseToObject(doc, "f");
	cJSON_AddNullToObject(doc, "n");
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, cJSON_CreateArray());
	cJSON_AddItemToArray(arr, cJSON_CreateObject());
	cJSON_AddItemToArray(arr, cJSON_CreateArray());
	cJSON_AddItemToArray(cJSON_GetArrayItem(arr, 2),
			     cJSON_CreateString("nested"));
	cJSON_AddItemToArray(cJSON_GetArrayItem(arr, 2),
			     cJSON_CreateString("multi\nline"));
	cJSON_AddItemToObject(doc, "seqs", arr);
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	cJSON_AddStringToObject(doc, longkey, "plain long key");
	longkey[5] = ':';
	longkey[6] = ' ';
	cJSON_AddItemToObject(
	    doc, longkey,
	    cJSON_CreateStringArray((const char *const[]){"a"}, 1));
	roundtrip(doc);
	y = yaml_of(doc);
	assert_non_null(strstr(y, "\n- 9007199254740994.0\n"));
	assert_non_null(strstr(y, "\n- 0.1\n"));
	assert_non_null(strstr(y, "emptymap: {}\nemptylist: []\n"));
	assert_non_null(strstr(y, "\n? \"kkkkk: "));
	free(y);
	cJSON_Delete(doc);
}

/* Integers, strings and literals come out as cJSON_PrintUnformatted()
 * lays them out. */
static void test_json_compact(void **state)
{
	cJSON *doc = parse_ok("{\"a\": [1, -2, 4294967296, {}, []],"
			      " \"b\": {\"c\": \"x y\\\"z\", \"d\": null,"
			      " \"e\": true, \"f\": false}, \"g\": \"\"}");
	char *ref = cJSON_PrintUnformatted(doc);
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_json_compact(doc, &b), 0);
	assert_string_equal(b.data, ref);
	assert_int_equal(hb_doc_write_json_compact(NULL, &b), HB_EINVAL);
	hb_buf_free(&b);
	/* past the buffer's cap: an error, and the buffer as it was */
	hb_buf_init(&b, 16);
	assert_int_equal(hb_buf_puts(&b, "kept"), 0);
	assert_int_equal(hb_doc_write_json_compact(doc, &b), HB_ETOOBIG);
	assert_string_equal(b.data, "kept");
	hb_buf_free(&b);
	cJSON_free(ref);
	cJSON_Delete(doc);
}

static void test_yaml_golden(void **state)
{
	cJSON *doc = parse_ok("{\"apiVersion\": \"kubeflow.org/v2beta1\","
			      " \"metadata\": {\"name\": \"pi\","
			      "  \"labels\": {\"kueue.x-k8s.io/queue-name\": "
			      "\"q\"}},"
			      " \"spec\": {\"slotsPerWorker\": 4,"
			      "  \"containers\": [{\"name\": \"w\","
			      "   \"args\": [\"-np\", \"8\", \"true\"],"
			      "   \"script\": \"line1\\nline2\\n\","
			      "   \"strip\": \"a\\nb\","
			      "   \"keep\": \"a\\n\\n\"},"
			      "   [1, [2, {\"x\": null}]], {}, []],"
			      "  \"env\": {}}}");
	const char *want = "apiVersion: kubeflow.org/v2beta1\n"
			   "metadata:\n"
			   "  name: pi\n"
			   "  labels:\n"
			   "    kueue.x-k8s.io/queue-name: q\n"
			   "spec:\n"
			   "  slotsPerWorker: 4\n"
			   "  containers:\n"
			   "  - name: w\n"
			   "    args:\n"
			   "    - -np\n"
			   "    - \"8\"\n"
			   "    - \"true\"\n"
			   "    script: |\n"
			   "      line1\n"
			   "      line2\n"
			   "    strip: |-\n"
			   "      a\n"
			   "      b\n"
			   "    keep: |+\n"
			   "      a\n"
			   "\n"
			   "  - - 1\n"
			   "    - - 2\n"
			   "      - x: null\n"
			   "  - {}\n"
			   "  - []\n"
			   "  env: {}\n";
	const char *want_json = "{\n"
				"  \"apiVersion\": \"kubeflow.org/v2beta1\",\n"
				"  \"metadata\": {\n"
				"    \"name\": \"pi\",\n"
				"    \"labels\": {\n"
				"      \"kueue.x-k8s.io/queue-name\": \"q\"\n"
				"    }\n"
				"  },\n"
				"  \"spec\": {\n"
				"    \"slotsPerWorker\": 4,\n"
				"    \"containers\": [\n"
				"      {\n"
				"        \"name\": \"w\",\n"
				"        \"args\": [\n"
				"          \"-np\",\n"
				"          \"8\",\n"
				"          \"true\"\n"
				"        ],\n"
				"        \"script\": \"line1\\nline2\\n\",\n"
				"        \"strip\": \"a\\nb\",\n"
				"        \"keep\": \"a\\n\\n\"\n"
				"      },\n"
				"      [\n"
				"        1,\n"
				"        [\n"
				"          2,\n"
				"          {\n"
				"            \"x\": null\n"
				"          }\n"
				"        ]\n"
				"      ],\n"
				"      {},\n"
				"      []\n"
				"    ],\n"
				"    \"env\": {}\n"
				"  }\n"
				"}\n";
	char *y = yaml_of(doc), *j = json_of(doc);

	(void)state;
	assert_string_equal(y, want);
	assert_string_equal(j, want_json);
	roundtrip(doc);
	free(y);
	free(j);
	cJSON_Delete(doc);
}

static void test_json_escapes(void **state)
{
	cJSON *s = cJSON_CreateString("q\" b\\ \b\f\n\r\t \x01\x1f\x7f "
				      "\xc2\x80 \xe2\x80\xa8 \xc3\xa9 \xff x");
	char *j = json_of(s);
	char *y = yaml_of(s);

	(void)state;
	assert_string_equal(j, "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f"
			       "\\u007f \\u0080 \\u2028 \xc3\xa9 \xef\xbf\xbd"
			       " x\"\n");
	assert_string_equal(y, "\"q\\\" b\\\\ \\x08\\x0c\\n\\r\\t \\x01\\x1f"
			       "\\x7f \\x80 \\L \xc3\xa9 \xef\xbf\xbd x\"\n");
	free(j);
	free(y);
	cJSON_Delete(s);
}

/* Every special byte at every offset around the 8-byte fast path. */
static void test_json_escapes_offsets(void **state)
{
	static const struct {
		const char *in, *out;
	} sp[] = {{"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"},
		  {"\x01", "\\u0001"}, {"\x7f", "\\u007f"},
		  {"\xc3\xa9", "\xc3\xa9"}, {"\xff", "\xef\xbf\xbd"}};
	char in[64], want[96];

	(void)state;
	for (size_t k = 0; k < sizeof(sp) / sizeof(sp[0]); k++)
		for (int pre = 0; pre < 20; pre++) {
			int post = 19 - pre;
			cJSON *s;
			char *j;

			snprintf(in, sizeof(in), "%.*s%s%.*s", pre,
				 "aaaaaaaaaaaaaaaaaaaa", sp[k].in, post,
				 "bbbbbbbbbbbbbbbbbbbb");
			snprintf(want, sizeof(want), "\"%.*s%s%.*s\"\n", pre,
				 "aaaaaaaaaaaaaaaaaaaa", sp[k].out, post,
				 "bbbbbbbbbbbbbbbbbbbb");
			s = cJSON_CreateString(in);
			j = json_of(s);
			assert_string_equal(j, want);
			free(j);
			cJSON_Delete(s);
		}
}

/* Many escapes in one sixteen-byte block, and across blocks: strings of
 * plain letters, quotes, backslashes, newlines and tabs, against a
 * byte-by-byte escaper. */
static void test_json_escapes_dense(void **state)
{
	static const char alpha[] = "ab\"\\\n\t";
	char in[80], want[200];
	uint32_t seed = 7;

	(void)state;
	for (int round = 0; round < 5000; round++) {
		size_t n, o = 0;
		cJSON *s;
		char *j;

		seed = seed * 1103515245u + 12345u;
		n = (seed >> 16) % (sizeof(in) - 1);
		want[o++] = '"';
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			in[i] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
			if (in[i] == '\n' || in[i] == '\t') {
				want[o++] = '\\';
				want[o++] = in[i] == '\n' ? 'n' : 't';
			} else {
				if (in[i] == '"' || in[i] == '\\')
					want[o++] = '\\';
				want[o++] = in[i];
			}
		}
		in[n] = '\0';
		memcpy(want + o, "\"\n", 3);
		s = cJSON_CreateString(in);
		j = json_of(s);
		assert_string_equal(j, want);
		free(j);
		cJSON_Delete(s);
	}
}

/* Trees made in a scope come from its arena and write as any other. */
static void test_scope(void **state)
{
	struct hb_arena a;
	cJSON *before = cJSON_CreateObject(), *in;
	char *j1, *j2;

	(void)state;
	cJSON_AddStringToObject(before, "k", "made before the scope");
	hb_arena_init(&a, 0);
	hb_doc_scope_begin(&a);
	in = cJSON_CreateObject();
	assert_non_null(in);
	assert_true(hb_arena_owns(&a, in));
	assert_non_null(cJSON_AddStringToObject(in, "k",
						"made before the scope"));
	assert_true(hb_arena_owns(&a, cJSON_GetObjectItem(in, "k")));
	assert_false(hb_arena_owns(&a, before));
	j1 = json_of(in);
	j2 = json_of(before);
	assert_string_equal(j1, j2);
	/* A tree from outside the scope is freed for real inside it (a
	 * leak or a bad free would show under the sanitizers). */
	cJSON_Delete(before);
	cJSON_Delete(in);
	hb_doc_scope_end();
	hb_arena_reset(&a);
	assert_false(hb_arena_owns(&a, in));
	/* Outside a scope, nodes come from malloc again. */
	before = cJSON_CreateObject();
	assert_false(hb_arena_owns(&a, before));
	cJSON_Delete(before);
	hb_arena_free(&a);
	free(j1);
	free(j2);
}

static void test_writer_errors(void **state)
{
	cJSON *doc = cJSON_CreateObject();
	struct hb_buf b;
	cJSON *deep, *cur;
	int i;

	(void)state;
	cJSON_AddNumberToObject(doc, "v", NAN);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_puts(&b, "keep"), 0);
	/* JSON has no NaN: error, and the buffer is left as it was */
	assert_int_equal(hb_doc_write_json(doc, &b), HB_EUNSUP);
	assert_string_equal(b.data, "keep");
	assert_int_equal(b.len, 4);
	/* YAML has .nan */
	assert_int_equal(hb_doc_write_yaml(doc, &b), 0);
	assert_string_equal(b.data, "keepv: .nan\n");
	hb_buf_free(&b);
	cJSON_Delete(doc);

	/* a buffer cap is honoured */
	doc = parse_ok("a: abcdefghijabcdefghijabcdefghijabcdefghij\n");
	hb_buf_init(&b, 16);
	assert_int_equal(hb_doc_write_yaml(doc, &b), HB_ETOOBIG);
	assert_int_equal(b.len, 0);
	assert_int_equal(hb_doc_write_json(doc, &b), HB_ETOOBIG);
	assert_int_equal(b.len, 0);
	hb_buf_free(&b);
	cJSON_Delete(doc);

	/* deeper than a reader would take back */
	deep = cJSON_CreateArray();
	for (cur = deep, i = 0; i < HB_DOC_MAX_DEPTH + 5; i++) {
		cJSON *n = cJSON_CreateArray();

		cJSON_AddItemToArray(cur, n);
		cur = n;
	}
	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_yaml(deep, &b), HB_ETOOBIG);
	assert_int_equal(hb_doc_write_json(deep, &b), HB_ETOOBIG);
	assert_int_equal(b.len, 0);
	hb_buf_free(&b);
	cJSON_Delete(deep);
}

/* ---- hb_json_check ---- */

#define JT(lit) lit, sizeof(lit) - 1

/* why NULL: valid.  Texts are byte strings: a NUL among them counts. */
static const struct {
	const char *text;
	size_t len;
	const char *why;
	size_t at;
} jcases[] = {
    /* valid */
    {JT("{}"), NULL, 0},
    {JT("[]"), NULL, 0},
    {JT(" \t\r\n[ \t\r\n]\r\n"), NULL, 0},
    {JT("0"), NULL, 0},
    {JT("-0"), NULL, 0},
    {JT("-0.0e+0"), NULL, 0},
    {JT("1E5"), NULL, 0},
    {JT("1e-5"), NULL, 0},
    {JT("-123.456E+789"), NULL, 0},
    {JT("true"), NULL, 0},
    {JT("false"), NULL, 0},
    {JT("null"), NULL, 0},
    {JT("\"\""), NULL, 0},
    {JT("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u0041 \\uFFFF\""),
     NULL, 0},
    {JT("\"\\ud83d\\ude00\""), NULL, 0},
    {JT("\"\\uD83D\\uDE00x\\udbff\\udfff\""), NULL, 0},
    {JT("\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\""),
     NULL, 0},
    {JT("\"del \x7f\""), NULL, 0},
    {JT("[1,[2,{\"a\":[],\"b\":{}}],\"c\",true,false,null,-1.5e3]"), NULL,
     0},
    {JT("{\"k\" : \"v\" , \"l\" : [ 1 , 2 ] }"), NULL, 0},
    /* what the reader refuses for its own reasons is syntax all the same */
    {JT("\"\\u0000\""), NULL, 0},
    {JT("{\"a\":1,\"a\":2}"), NULL, 0},
    {JT("[12345678901234567890, 1e400]"), NULL, 0},

    /* nothing */
    {JT(""), "unexpected end of input", 0},
    {JT("  \t\r\n"), "unexpected end of input", 5},
    /* strings */
    {JT("\"abc"), "unterminated string", 0},
    {JT("[\"abc"), "unterminated string", 1},
    {JT("\"\\"), "unterminated string", 0},
    {JT("\"\\\""), "unterminated string", 0},
    {JT("\"a\x01" "b\""), "control character in a string", 2},
    {JT("\"a\nb\""), "control character in a string", 2},
    {JT("\"a\tb\""), "control character in a string", 2},
    {JT("\"\x1f"), "control character in a string", 1},
    /* NUL, wherever it is */
    {JT("\"a\0b\""), "control character in a string", 2},
    {JT("\0"), "invalid value", 0},
    {JT("[1,\0]"), "invalid value", 3},
    {JT("1\0"), "unexpected content after the value", 1},
    {JT("{\"a\":1}\0"), "unexpected content after the value", 7},
    {JT("{\"a\0\":1}"), "control character in a string", 3},
    /* UTF-8: overlong, surrogates, beyond U+10FFFF, stray, truncated */
    {JT("\"\xc0\xaf\""), "invalid UTF-8 in a string", 1},
    {JT("\"\xc1\xbf\""), "invalid UTF-8 in a string", 1},
    {JT("\"ab\xe0\x80\xaf\""), "invalid UTF-8 in a string", 3},
    {JT("\"\xf0\x82\x82\xac\""), "invalid UTF-8 in a string", 1},
    {JT("\"\xed\xa0\x80\""), "invalid UTF-8 in a string", 1},
    {JT("\"\xf4\x90\x80\x80\""), "invalid UTF-8 in a string", 1},
    {JT("\"\xf5\x80\x80\x80\""), "invalid UTF-8 in a string", 1},
    {JT("\"a\x80\""), "invalid UTF-8 in a string", 2},
    {JT("\"\xff\""), "invalid UTF-8 in a string", 1},
    {JT("\"\xc3\""), "invalid UTF-8 in a string", 1},
    {JT("\"\xc3"), "invalid UTF-8 in a string", 1},
    {JT("\"\xe6\x97"), "invalid UTF-8 in a string", 1},
    {JT("\"\xf0\x9f\x98"), "invalid UTF-8 in a string", 1},
    /* escapes */
    {JT("\"\\x\""), "invalid escape in a string", 1},
    {JT("\"ab\\'\""), "invalid escape in a string", 3},
    {JT("\"\\U0041\""), "invalid escape in a string", 1},
    {JT("\"\\u12g4\""), "invalid escape in a string", 1},
    {JT("\"\\u12\""), "invalid escape in a string", 1},
    {JT("\"\\u12"), "unterminated string", 0},
    {JT("\"\\\x01\""), "invalid escape in a string", 1},
    /* lone and mis-ordered surrogates */
    {JT("\"\\ud800\""), "lone surrogate in a string", 1},
    {JT("\"\\udc00\""), "lone surrogate in a string", 1},
    {JT("\"\\ude00\\ud83d\""), "lone surrogate in a string", 1},
    {JT("\"\\ud83d\\ud83d\""), "lone surrogate in a string", 1},
    {JT("\"\\ud83d\\u00e9\""), "lone surrogate in a string", 1},
    {JT("\"\\ud83d\\ue000\""), "lone surrogate in a string", 1},
    {JT("\"ab\\ud83dx\""), "lone surrogate in a string", 3},
    {JT("\"\\ud83d\\n\""), "lone surrogate in a string", 1},
    {JT("\"\\ud83d\\uzzzz\""), "invalid escape in a string", 7},
    {JT("\"\\ud83d"), "unterminated string", 0},
    {JT("\"\\ud83d\\"), "unterminated string", 0},
    {JT("\"\\ud83d\\ude0"), "unterminated string", 0},
    /* numbers */
    {JT("01"), "invalid number", 0},
    {JT("-01"), "invalid number", 0},
    {JT("[00]"), "invalid number", 1},
    {JT("1."), "invalid number", 0},
    {JT("1.e5"), "invalid number", 0},
    {JT(".5"), "invalid number", 0},
    {JT("[1, .5]"), "invalid number", 4},
    {JT("1e"), "invalid number", 0},
    {JT("1e+"), "invalid number", 0},
    {JT("1E-x"), "invalid number", 0},
    {JT("+1"), "invalid number", 0},
    {JT("-"), "invalid number", 0},
    {JT("- 1"), "invalid number", 0},
    {JT("-a"), "invalid number", 0},
    {JT("0x10"), "unexpected content after the value", 1},
    {JT("1.5.3"), "unexpected content after the value", 3},
    {JT("Infinity"), "invalid value", 0},
    {JT("NaN"), "invalid value", 0},
    /* literals */
    {JT("tru"), "invalid value", 0},
    {JT("True"), "invalid value", 0},
    {JT("[nul]"), "invalid value", 1},
    {JT("nulll"), "unexpected content after the value", 4},
    {JT("[truefalse]"), "expected ',' or ']'", 5},
    /* structure */
    {JT("[1,2,]"), "trailing comma", 4},
    {JT("{\"a\":1,}"), "trailing comma", 6},
    {JT("[1 , \n]"), "trailing comma", 3},
    {JT("[,1]"), "invalid value", 1},
    {JT("[1 2]"), "expected ',' or ']'", 3},
    {JT("[1}"), "expected ',' or ']'", 2},
    {JT("{\"a\":1 \"b\":2}"), "expected ',' or '}'", 7},
    {JT("{\"a\":1]"), "expected ',' or '}'", 6},
    {JT("{\"a\" 1}"), "expected ':'", 5},
    {JT("{a:1}"), "expected a string key", 1},
    {JT("{\"a\":1,2:3}"), "expected a string key", 7},
    {JT("{\"a\":}"), "invalid value", 5},
    {JT("]"), "invalid value", 0},
    {JT("'a'"), "invalid value", 0},
    {JT("\xef\xbb\xbf{}"), "invalid value", 0},
    {JT("\f1"), "invalid value", 0},
    {JT("["), "unexpected end of input", 1},
    {JT("{"), "unexpected end of input", 1},
    {JT("[1,2"), "unexpected end of input", 4},
    {JT("[1,"), "unexpected end of input", 3},
    {JT("{\"a\""), "unexpected end of input", 4},
    {JT("{\"a\": "), "unexpected end of input", 6},
    {JT("{\"a\":1 "), "unexpected end of input", 7},
    /* trailing garbage */
    {JT("1 2"), "unexpected content after the value", 2},
    {JT("{} x"), "unexpected content after the value", 3},
    {JT("[]]"), "unexpected content after the value", 2},
    {JT("{}\n{}"), "unexpected content after the value", 3},
};

static void jcheck(const char *text, size_t len, const char *want,
		   size_t want_at)
{
	size_t at = (size_t)-1;
	const char *why = hb_json_check(text, len, &at);

	if (!want && why)
		fail_msg("'%.*s' refused: %s at %zu", (int)len, text, why, at);
	if (want && !why)
		fail_msg("'%.*s' accepted, want %s at %zu", (int)len, text,
			 want, want_at);
	if (want && (strcmp(why, want) || at != want_at))
		fail_msg("'%.*s': %s at %zu, want %s at %zu", (int)len, text,
			 why, at, want, want_at);
	/* the offset is optional */
	assert_true(hb_json_check(text, len, NULL) == why);
}

static void test_json_check(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(jcases) / sizeof(jcases[0]); i++)
		jcheck(jcases[i].text, jcases[i].len, jcases[i].why,
		       jcases[i].at);
	jcheck(NULL, 0, "unexpected end of input", 0);
	jcheck(NULL, 3, "no input", 0);
	/* only the n bytes count */
	jcheck("[1]]", 3, NULL, 0);
	jcheck("\"abc\"", 4, "unterminated string", 0);
}

/* hb_utf8_span: the valid prefix, stopping at the first bad byte. */
static void test_utf8_span(void **state)
{
	(void)state;
	assert_int_equal(hb_utf8_span("", 0), 0);
	assert_int_equal(hb_utf8_span("abc", 3), 3);
	assert_int_equal(hb_utf8_span("caf\xc3\xa9", 5), 5);
	assert_int_equal(hb_utf8_span("# caf\xe9\n", 7), 5); /* Latin-1 */
	assert_int_equal(hb_utf8_span("ab\xc3", 3), 2); /* truncated */
	assert_int_equal(hb_utf8_span("a\xed\xa0\x80", 4), 1); /* surrogate */
	assert_int_equal(hb_utf8_span("a\0b", 3), 3); /* NUL is valid */
	assert_int_equal(hb_utf8_span("\xe9" "abc", 4), 0); /* at the start */
	assert_int_equal(hb_utf8_span("ab" "\xe9", 2), 2); /* n bounds it */
}

/* Nesting: HB_DOC_MAX_DEPTH levels are fine, one more is not, in arrays
 * and objects alike. */
static void test_json_check_depth(void **state)
{
	char buf[8 * (HB_DOC_MAX_DEPTH + 1) + 8];
	size_t n;
	int d, k;

	(void)state;
	for (d = HB_DOC_MAX_DEPTH; d <= HB_DOC_MAX_DEPTH + 1; d++) {
		const char *want = d > HB_DOC_MAX_DEPTH
					   ? "nesting deeper than 64 levels"
					   : NULL;

		n = 0;
		for (k = 0; k < d; k++)
			buf[n++] = '[';
		for (k = 0; k < d; k++)
			buf[n++] = ']';
		jcheck(buf, n, want, HB_DOC_MAX_DEPTH);
		n = 0;
		for (k = 0; k < d; k++) {
			memcpy(buf + n, "{\"a\":", 5);
			n += 5;
		}
		buf[n++] = '1';
		for (k = 0; k < d; k++)
			buf[n++] = '}';
		jcheck(buf, n, want, 5 * HB_DOC_MAX_DEPTH);
		/* the reader agrees */
		{
			struct hb_err err = {0};
			cJSON *doc = NULL;
			int rc = hb_doc_parse(buf, n, "t", &doc, &err);

			assert_int_equal(rc, want ? HB_ETOOBIG : 0);
			cJSON_Delete(doc);
		}
	}
	/* closing and opening again does not add up */
	n = 0;
	for (k = 0; k < 2 * HB_DOC_MAX_DEPTH; k++) {
		memcpy(buf + n, "[]", 2);
		n += 2;
	}
	jcheck(buf, n > 40 ? 40 : n, "unexpected content after the value", 2);
	buf[0] = '[';
	memcpy(buf + 1, "[[[]],[[]]]", 11);
	jcheck(buf, 12, "unexpected end of input", 12);
}

/*
 * Long strings: a 10 KB string of every escape, valid; the same with one
 * escape spoiled near its end; and a bad byte at every offset of a run of
 * plain bytes, across the sixteen-byte blocks of the fast path.
 */
static void test_json_check_long(void **state)
{
	static const char unit[] = "\\n\\\"\\\\\\t\\/\\b\\f\\r\\u00e9"
				   "\\ud83d\\ude00 a \xc3\xa9 \xf0\x9f\x98\x80";
	static const struct {
		const char *bad;
		size_t len;
		const char *why;
		int off; /* where the problem is, from the bad bytes */
	} bad[] = {
	    {JT("\x01"), "control character in a string", 0},
	    {JT("\x1f"), "control character in a string", 0},
	    {JT("\0"), "control character in a string", 0},
	    {JT("\x80"), "invalid UTF-8 in a string", 0},
	    {JT("\xc0\xaf"), "invalid UTF-8 in a string", 0},
	    {JT("\\q"), "invalid escape in a string", 0},
	    {JT("\\udc00"), "lone surrogate in a string", 0},
	    {JT("\\ud800x"), "lone surrogate in a string", 0},
	};
	size_t cap = 12000, n, i, k;
	char *buf = malloc(cap);

	(void)state;
	assert_non_null(buf);
	n = 0;
	buf[n++] = '[';
	buf[n++] = '"';
	while (n < 10 * 1024)
		for (i = 0; i + 1 < sizeof(unit); i++)
			buf[n++] = unit[i];
	buf[n++] = '"';
	buf[n++] = ']';
	jcheck(buf, n, NULL, 0);
	jcheck(buf, n - 1, "unexpected end of input", n - 1);
	jcheck(buf, n - 2, "unterminated string", 1);
	/* spoil the last "\\/" */
	for (i = n - 1; memcmp(buf + i, "\\/", 2); i--)
		;
	buf[i + 1] = 'v';
	jcheck(buf, n, "invalid escape in a string", i);

	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		for (i = 0; i < 40; i++) {
			n = 0;
			buf[n++] = '"';
			memset(buf + n, 'a', i);
			n += i;
			memcpy(buf + n, bad[k].bad, bad[k].len);
			n += bad[k].len;
			memset(buf + n, 'b', 40 - i);
			n += 40 - i;
			buf[n++] = '"';
			jcheck(buf, n, bad[k].why, 1 + i + (size_t)bad[k].off);
			/* and as the last bytes of the input */
			jcheck(buf, 1 + i + bad[k].len, bad[k].why,
			       1 + i + (size_t)bad[k].off);
		}
	/* an escaped quote or backslash at every offset does not end it */
	for (i = 0; i < 40; i++) {
		n = 0;
		buf[n++] = '"';
		memset(buf + n, 'a', i);
		n += i;
		memcpy(buf + n, i % 2 ? "\\\"" : "\\\\", 2);
		n += 2;
		memset(buf + n, 'b', 40 - i);
		n += 40 - i;
		jcheck(buf, n, "unterminated string", 0);
		buf[n++] = '"';
		jcheck(buf, n, NULL, 0);
	}
	free(buf);
}

static void json_check_writes(const cJSON *doc)
{
	struct hb_buf b;
	const char *why;
	size_t at = 0;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_doc_write_json(doc, &b), 0);
	if ((why = hb_json_check(b.data, b.len, &at)))
		fail_msg("pretty JSON refused: %s at %zu\n%s", why, at, b.data);
	hb_buf_reset(&b);
	assert_int_equal(hb_doc_write_json_compact(doc, &b), 0);
	if ((why = hb_json_check(b.data, b.len, &at)))
		fail_msg("compact JSON refused: %s at %zu\n%s", why, at,
			 b.data);
	hb_buf_free(&b);
}

/* Whatever the writers write, the check takes: strings of every byte
 * (escaped, or U+FFFD when not UTF-8), numbers, shapes, depth. */
static void test_json_check_writers(void **state)
{
	char all[256], one[2] = {0, 0}, key[40];
	cJSON *doc, *arr, *cur;
	size_t i;
	int d;

	(void)state;
	for (i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "all", all);
	cJSON_AddStringToObject(doc, all, "as a key");
	arr = cJSON_AddArrayToObject(doc, "each");
	for (i = 1; i < 256; i++) {
		one[0] = (char)i;
		cJSON_AddItemToArray(arr, cJSON_CreateString(one));
		snprintf(key, sizeof(key), "k%c%c\xc3\xa9%c", (char)i, (char)i,
			 (char)(i ^ 0x80));
		cJSON_AddStringToObject(doc, key, one);
	}
	for (i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(tricky[i]));
	arr = cJSON_AddArrayToObject(doc, "nums");
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(0));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(-0.0));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(-1.5e-300));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(1.7976931348623157e308));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(5e-324));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(9007199254740993.0));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(1.0 / 3));
	cJSON_AddItemToObject(doc, "o", cJSON_CreateObject());
	cJSON_AddItemToObject(doc, "a", cJSON_CreateArray());
	cJSON_AddTrueToObject(doc, "t");
	cJSON_AddFalseToObject(doc, "f");
	cJSON_AddNullToObject(doc, "n");
	json_check_writes(doc);
	for (cur = doc->child; cur; cur = cur->next)
		json_check_writes(cur);
	cJSON_Delete(doc);

	/* as deep as the writers go */
	doc = cJSON_CreateArray();
	for (cur = doc, d = 1; d < HB_DOC_MAX_DEPTH; d++) {
		cJSON *n = d % 2 ? cJSON_CreateObject() : cJSON_CreateArray();

		if (cJSON_IsArray(cur))
			cJSON_AddItemToArray(cur, n);
		else
			cJSON_AddItemToObject(cur, "k", n);
		cur = n;
	}
	cJSON_AddItemToObject(cur, "leaf", cJSON_CreateString("x\n"));
	json_check_writes(doc);
	cJSON_Delete(doc);

	/* the real manifests */
	for (i = 0; i < 2; i++) {
		static const char *const files[] = {
		    "reference/examples/mpijob-pi-openmpi.yaml",
		    "reference/crds/kubeflow.org_mpijobs.yaml",
		};
		struct hb_err err = {0};
		size_t len;
		char *text = hb_test_read_file(
		    hb_test_shared_path(files[i]), &len);

		doc = NULL;
		assert_int_equal(hb_doc_parse(text, len, "f", &doc, &err), 0);
		json_check_writes(doc);
		cJSON_Delete(doc);
		free(text);
	}
}

/* ---- the real CRDs and examples ---- */

static void parse_file(const char *path, int stream)
{
	struct hb_err err = {0};
	size_t len;
	char *text = hb_test_read_file(path, &len);
	cJSON *doc = NULL;
	int rc = stream ? hb_doc_parse_stream(text, len, path, &doc, &err)
			: hb_doc_parse(text, len, path, &doc, &err);

	if (rc)
		fail_msg("%s: %s", path, err.msg);
	if (!stream) {
		assert_non_null(hb_doc_get(doc, "kind"));
		assert_non_null(hb_doc_get(doc, "apiVersion"));
		roundtrip(doc);
	}
	cJSON_Delete(doc);
	free(text);
}

static void test_reference_files(void **state)
{
	static const char *const files[] = {
	    "reference/crds/kubeflow.org_mpijobs.yaml",
	    "reference/crds/trainer.kubeflow.org_trainjobs.yaml",
	    ("reference/crds/"
	     "trainer.kubeflow.org_clustertrainingruntimes.yaml"),
	    "reference/examples/clustertrainingruntime-mpi-distributed.yaml",
	    "reference/examples/mpijob-pi-intel.yaml",
	    "reference/examples/mpijob-pi-openmpi.yaml",
	    "reference/examples/trainjob-kueue.yaml",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		parse_file(hb_test_shared_path(files[i]), 0);
		parse_file(hb_test_shared_path(files[i]), 1);
	}
	/* something concrete from the MPIJob CRD */
	{
		struct hb_err err = {0};
		size_t len;
		char *text =
		    hb_test_read_file(hb_test_shared_path(files[0]), &len);
		cJSON *doc = NULL;

		assert_int_equal(hb_doc_parse(text, len, "crd", &doc, &err), 0);
		assert_string_equal(
		    hb_doc_get(doc, "spec.names.kind")->valuestring, "MPIJob");
		assert_true(hb_doc_line(hb_doc_get(doc, "spec.names.kind")) >
			    1);
		cJSON_Delete(doc);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_core_schema),
	    cmocka_unit_test(test_special_floats),
	    cmocka_unit_test(test_quoted_block_tags),
	    cmocka_unit_test(test_rejections),
	    cmocka_unit_test(test_many_keys),
	    cmocka_unit_test(test_lines),
	    cmocka_unit_test(test_get),
	    cmocka_unit_test(test_json_input),
	    cmocka_unit_test(test_streams),
	    cmocka_unit_test(test_roundtrip_tricky_strings),
	    cmocka_unit_test(test_roundtrip_numbers_and_shapes),
	    cmocka_unit_test(test_json_compact),
	    cmocka_unit_test(test_yaml_golden),
	    cmocka_unit_test(test_json_escapes),
	    cmocka_unit_test(test_json_escapes_offsets),
	    cmocka_unit_test(test_json_escapes_dense),
	    cmocka_unit_test(test_scope),
	    cmocka_unit_test(test_writer_errors),
	    cmocka_unit_test(test_reference_files),
	    cmocka_unit_test(test_json_check),
	    cmocka_unit_test(test_utf8_span),
	    cmocka_unit_test(test_json_check_depth),
	    cmocka_unit_test(test_json_check_long),
	    cmocka_unit_test(test_json_check_writers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
