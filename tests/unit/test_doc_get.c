/*
 * test_doc_get.c - the typed getters of doc.h (translators/base/doc_get.c):
 * every type's good values, bounds and messages, absent and null, the
 * flags, and that *out is left alone unless the member is good.
 */
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "testutil.h"

static cJSON *doc;

static int setup(void **state)
{
	(void)state;
	doc = cJSON_Parse(
		"{\"s\":\"abc\",\"empty\":\"\",\"nul\":null,\"n\":7,"
		"\"neg\":-3,\"frac\":1.5,\"big\":9223372036854775808,"
		"\"huge\":18446744073709551616,\"t\":true,\"f\":false,"
		"\"v\":[\"a\",\"b\"],\"vbad\":[\"a\",1],\"ve\":[],"
		"\"o\":{\"k\":1},\"a\":[1],\"tab\":\"a\\tb\",\"nl\":\"a\\nb\","
		"\"cr\":\"a\\rb\",\"del\":\"a\\u007fb\"}");
	return doc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	cJSON_Delete(doc);
	return 0;
}

/* Assert rc is HB_EINVAL with message msg, and reset err. */
static void bad(int rc, struct hb_err *err, const char *msg)
{
	assert_int_equal(rc, HB_EINVAL);
	assert_int_equal(err->code, HB_EINVAL);
	assert_string_equal(err->msg, msg);
	memset(err, 0, sizeof(*err));
}

static void test_str(void **state)
{
	struct hb_err err = { 0 };
	const char *s = "dflt";

	(void)state;
	assert_int_equal(hb_doc_get_str(doc, "s", 3, 0, &s, &err), 0);
	assert_string_equal(s, "abc");
	/* absent and null are fine and leave *out alone */
	s = "dflt";
	assert_int_equal(hb_doc_get_str(doc, "missing", 8, 0, &s, &err), 0);
	assert_int_equal(hb_doc_get_str(doc, "nul", 8, 0, &s, &err), 0);
	assert_string_equal(s, "dflt");
	assert_int_equal(err.code, 0);
	/* "" passes unless it must not be empty */
	assert_int_equal(hb_doc_get_str(doc, "empty", 8, 0, &s, &err), 0);
	assert_string_equal(s, "");
	s = "dflt";
	bad(hb_doc_get_str(doc, "missing", 8, HB_DOC_REQUIRED, &s, &err), &err,
	    "missing: required");
	bad(hb_doc_get_str(doc, "nul", 8, HB_DOC_REQUIRED, &s, &err), &err,
	    "nul: required");
	bad(hb_doc_get_str(doc, "n", 8, 0, &s, &err), &err,
	    "n: must be a string");
	bad(hb_doc_get_str(doc, "s", 2, 0, &s, &err), &err,
	    "s: longer than 2 bytes");
	bad(hb_doc_get_str(doc, "empty", 8, HB_DOC_NONEMPTY, &s, &err), &err,
	    "empty: must not be empty");
	assert_string_equal(s, "dflt");
	/* a NULL err still gives the code */
	assert_int_equal(hb_doc_get_str(doc, "n", 8, 0, &s, NULL), HB_EINVAL);
	/* the first error is kept */
	hb_doc_get_str(doc, "n", 8, 0, &s, &err);
	hb_doc_get_str(doc, "s", 1, 0, &s, &err);
	bad(err.code, &err, "n: must be a string");
}

static void test_str_controls(void **state)
{
	struct hb_err err = { 0 };
	const char *s = NULL;

	(void)state;
	/* without a flag any character passes */
	assert_int_equal(hb_doc_get_str(doc, "cr", 8, 0, &s, &err), 0);
	assert_string_equal(s, "a\rb");
	bad(hb_doc_get_str(doc, "tab", 8, HB_DOC_ONELINE, &s, &err), &err,
	    "tab: must not hold control characters");
	bad(hb_doc_get_str(doc, "nl", 8, HB_DOC_ONELINE, &s, &err), &err,
	    "nl: must not hold control characters");
	bad(hb_doc_get_str(doc, "del", 8, HB_DOC_ONELINE, &s, &err), &err,
	    "del: must not hold control characters");
	assert_int_equal(hb_doc_get_str(doc, "s", 8, HB_DOC_ONELINE, &s, &err),
			 0);
	/* several lines: newline and tab pass, nothing else does */
	assert_int_equal(hb_doc_get_str(doc, "nl", 8, HB_DOC_LINES, &s, &err),
			 0);
	assert_string_equal(s, "a\nb");
	assert_int_equal(hb_doc_get_str(doc, "tab", 8, HB_DOC_LINES, &s, &err),
			 0);
	bad(hb_doc_get_str(doc, "cr", 8, HB_DOC_LINES, &s, &err), &err,
	    "cr: must not hold control characters");
	bad(hb_doc_get_str(doc, "del", 8, HB_DOC_LINES, &s, &err), &err,
	    "del: must not hold control characters");
}

static void test_i64(void **state)
{
	struct hb_err err = { 0 };
	int64_t v = 42;

	(void)state;
	assert_int_equal(hb_doc_get_i64(doc, "n", 1, 10, 0, &v, &err), 0);
	assert_int_equal(v, 7);
	assert_int_equal(hb_doc_get_i64(doc, "neg", -3, 0, 0, &v, &err), 0);
	assert_int_equal(v, -3);
	v = 42;
	assert_int_equal(hb_doc_get_i64(doc, "missing", 1, 10, 0, &v, &err), 0);
	assert_int_equal(hb_doc_get_i64(doc, "nul", 1, 10, 0, &v, &err), 0);
	assert_int_equal(v, 42);
	bad(hb_doc_get_i64(doc, "missing", 1, 10, HB_DOC_REQUIRED, &v, &err),
	    &err, "missing: required");
	bad(hb_doc_get_i64(doc, "s", 1, 10, 0, &v, &err), &err,
	    "s: must be an integer");
	bad(hb_doc_get_i64(doc, "n", 8, 10, 0, &v, &err), &err,
	    "n: must be an integer from 8 to 10");
	bad(hb_doc_get_i64(doc, "neg", 0, 10, 0, &v, &err), &err,
	    "neg: must be an integer from 0 to 10");
	bad(hb_doc_get_i64(doc, "frac", 0, 10, 0, &v, &err), &err,
	    "frac: must be an integer from 0 to 10");
	/* 2^63 equals (double)INT64_MAX but is no int64_t */
	bad(hb_doc_get_i64(doc, "big", INT64_MIN, INT64_MAX, 0, &v, &err), &err,
	    "big: must be an integer from -9223372036854775808 to "
	    "9223372036854775807");
	assert_int_equal(v, 42);
}

static void test_u64(void **state)
{
	struct hb_err err = { 0 };
	uint64_t v = 42;
	cJSON *o = cJSON_CreateObject();

	(void)state;
	assert_int_equal(hb_doc_get_u64(doc, "n", 1, 10, 0, &v, &err), 0);
	assert_int_equal(v, 7);
	/* 2^63 is a uint64_t */
	assert_int_equal(hb_doc_get_u64(doc, "big", 0, UINT64_MAX, 0, &v, &err),
			 0);
	assert_true(v == 9223372036854775808ull);
	v = 42;
	assert_int_equal(hb_doc_get_u64(doc, "nul", 1, 10, 0, &v, &err), 0);
	assert_int_equal(v, 42);
	bad(hb_doc_get_u64(doc, "nul", 1, 10, HB_DOC_REQUIRED, &v, &err), &err,
	    "nul: required");
	bad(hb_doc_get_u64(doc, "t", 1, 10, 0, &v, &err), &err,
	    "t: must be an integer");
	bad(hb_doc_get_u64(doc, "neg", 0, 10, 0, &v, &err), &err,
	    "neg: must be an integer from 0 to 10");
	bad(hb_doc_get_u64(doc, "frac", 1, 10, 0, &v, &err), &err,
	    "frac: must be an integer from 1 to 10");
	/* 2^64 equals (double)UINT64_MAX but is no uint64_t */
	bad(hb_doc_get_u64(doc, "huge", 0, UINT64_MAX, 0, &v, &err), &err,
	    "huge: must be an integer from 0 to 18446744073709551615");
	assert_int_equal(v, 42);
	/* the largest whole double below 2^64 passes */
	assert_non_null(
		cJSON_AddNumberToObject(o, "x", 18446744073709549568.0));
	assert_int_equal(hb_doc_get_u64(o, "x", 0, UINT64_MAX, 0, &v, &err), 0);
	assert_true(v == 18446744073709549568ull);
	cJSON_Delete(o);
}

static void test_bool_strv_obj(void **state)
{
	struct hb_err err = { 0 };
	const cJSON *c = NULL;
	int b = 5;

	(void)state;
	assert_int_equal(hb_doc_get_bool(doc, "t", 0, &b, &err), 0);
	assert_int_equal(b, 1);
	assert_int_equal(hb_doc_get_bool(doc, "f", 0, &b, &err), 0);
	assert_int_equal(b, 0);
	b = 5;
	assert_int_equal(hb_doc_get_bool(doc, "nul", 0, &b, &err), 0);
	assert_int_equal(b, 5);
	bad(hb_doc_get_bool(doc, "n", 0, &b, &err), &err,
	    "n: must be true or false");
	bad(hb_doc_get_bool(doc, "missing", HB_DOC_REQUIRED, &b, &err), &err,
	    "missing: required");
	assert_int_equal(b, 5);

	assert_int_equal(hb_doc_get_strv(doc, "v", 0, &c, &err), 0);
	assert_int_equal(cJSON_GetArraySize(c), 2);
	c = NULL;
	assert_int_equal(hb_doc_get_strv(doc, "ve", 0, &c, &err), 0);
	assert_non_null(c);
	c = NULL;
	assert_int_equal(hb_doc_get_strv(doc, "nul", 0, &c, &err), 0);
	assert_null(c);
	bad(hb_doc_get_strv(doc, "vbad", 0, &c, &err), &err,
	    "vbad: must be a list of strings");
	bad(hb_doc_get_strv(doc, "s", 0, &c, &err), &err,
	    "s: must be a list of strings");
	assert_null(c);

	assert_int_equal(hb_doc_get_obj(doc, "o", 0, &c, &err), 0);
	assert_ptr_equal(c, cJSON_GetObjectItemCaseSensitive(doc, "o"));
	c = NULL;
	assert_int_equal(hb_doc_get_obj(doc, "missing", 0, &c, &err), 0);
	assert_null(c);
	bad(hb_doc_get_obj(doc, "a", 0, &c, &err), &err,
	    "a: must be an object");
	bad(hb_doc_get_obj(doc, "nul", HB_DOC_REQUIRED, &c, &err), &err,
	    "nul: required");
	assert_null(c);
}

/* Anything but an object has no members: absent, or required. */
static void test_not_an_object(void **state)
{
	struct hb_err err = { 0 };
	const char *s = "dflt";
	cJSON *arr = cJSON_Parse("[\"s\"]");
	int64_t v = 1;

	(void)state;
	assert_int_equal(hb_doc_get_str(NULL, "s", 8, 0, &s, &err), 0);
	assert_int_equal(hb_doc_get_str(arr, "s", 8, 0, &s, &err), 0);
	assert_int_equal(
		hb_doc_get_str(cJSON_GetObjectItemCaseSensitive(doc, "s"), "s",
			       8, 0, &s, &err),
		0);
	assert_int_equal(hb_doc_get_i64(arr, "n", 0, 9, 0, &v, &err), 0);
	assert_string_equal(s, "dflt");
	assert_int_equal(v, 1);
	bad(hb_doc_get_str(NULL, "s", 8, HB_DOC_REQUIRED, &s, &err), &err,
	    "s: required");
	cJSON_Delete(arr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_str),
		cmocka_unit_test(test_str_controls),
		cmocka_unit_test(test_i64),
		cmocka_unit_test(test_u64),
		cmocka_unit_test(test_bool_strv_obj),
		cmocka_unit_test(test_not_an_object),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
