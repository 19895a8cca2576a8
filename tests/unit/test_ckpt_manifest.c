/*
 * test_ckpt_manifest.c - ckpt.h's manifest: what reads, what is refused
 * and with which field named, the order and bytes of what is written,
 * and paths as the checker sees them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/ckpt.h"
#include "testutil.h"

#define SHA_A "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define SHA_B "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"

#define HEAD "{\"format\": \"hpcbridge-checkpoint/1\", " \
	     "\"created\": \"2026-11-27T18:00:00Z\", \"job\": \"42\", "

static struct hb_ckpt_manifest *parse_ok(const char *text)
{
	struct hb_ckpt_manifest *m = NULL;
	struct hb_err err = {0};
	int rc = hb_ckpt_manifest_parse(text, strlen(text), "m.json", &m,
					&err);

	if (rc)
		fail_msg("%s: %s", text, err.msg);
	return m;
}

static void refused(const char *text, int code, const char *msg)
{
	struct hb_ckpt_manifest *m = (void *)1;
	struct hb_err err = {0};
	int rc = hb_ckpt_manifest_parse(text, strlen(text), "m.json", &m,
					&err);

	if (rc != code || !strstr(err.msg, msg))
		fail_msg("%s\n  got %d \"%s\", want %d \"%s\"", text, rc,
			 err.msg, code, msg);
	assert_null(m);
}

static void test_reads(void **state)
{
	struct hb_ckpt_manifest *m;

	(void)state;
	m = parse_ok(HEAD "\"files\": [{\"path\": \"b/x\", \"size\": 3, "
		     "\"mode\": \"0644\", \"sha256\": \"" SHA_A "\"}, "
		     "{\"sha256\": \"" SHA_B "\", \"mode\": \"0600\", "
		     "\"size\": 0, \"path\": \"a\"}]}");
	assert_int_equal(m->nfiles, 2);
	assert_string_equal(m->files[0].path, "a"); /* sorted */
	assert_string_equal(m->files[1].path, "b/x");
	assert_int_equal(m->files[1].size, 3);
	assert_int_equal(m->files[1].mode, 0644);
	assert_int_equal(m->files[0].mode, 0600);
	assert_int_equal(m->files[1].sha256[0], 0x9f);
	assert_int_equal(m->total, 3);
	assert_string_equal(m->job, "42");
	assert_int_equal(m->created, 1795802400);
	assert_non_null(hb_ckpt_manifest_find(m, "b/x"));
	assert_null(hb_ckpt_manifest_find(m, "b"));
	hb_ckpt_manifest_free(m);

	/* Escapes decode; an empty list is a checkpoint of nothing. */
	m = parse_ok(HEAD "\"files\": [{\"path\": \"d\\u00e9j\\u00e0/\\ud83d"
		     "\\ude00\\\"q\", \"size\": 1, \"mode\": \"0755\", "
		     "\"sha256\": \"" SHA_A "\"}]}");
	assert_string_equal(m->files[0].path, "d\xc3\xa9j\xc3\xa0/"
					      "\xf0\x9f\x98\x80\"q");
	hb_ckpt_manifest_free(m);
	m = parse_ok(HEAD "\"files\": []}");
	assert_int_equal(m->nfiles, 0);
	hb_ckpt_manifest_free(m);
}

static void test_refused(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *msg;
	} cases[] = {
		{"", HB_EINVAL, "expected a JSON object"},
		{"[]", HB_EINVAL, "expected a JSON object"},
		{HEAD "\"files\": []", HB_EINVAL, "expected ',' or '}'"},
		{HEAD "\"files\": []} x", HB_EINVAL, "unexpected content"},
		{HEAD "\"files\": [],}", HB_EINVAL, "manifest: trailing comma"},
		{HEAD "\"files\": [{\"path\": \"a\", \"size\": 1, \"mode\": "
		 "\"0644\", \"sha256\": \"" SHA_A "\"},]}", HB_EINVAL,
		 "files: trailing comma"},
		{HEAD "\"files\": [], \"extra\": 1}", HB_EINVAL,
		 "unknown key \"extra\""},
		{HEAD "\"files\": [], \"job\": \"43\"}", HB_EINVAL,
		 "m.json:1: job: given twice"},
		{"{\"format\": \"hpcbridge-checkpoint/2\"}", HB_EUNSUP,
		 "format: \"hpcbridge-checkpoint/2\" is not"},
		{"{\"format\": \"hpcbridge-checkpoint/1\", \"files\": []}",
		 HB_EINVAL, "created: required"},
		{"{\"format\": \"hpcbridge-checkpoint/1\", \"created\": "
		 "\"yesterday\"}", HB_EINVAL, "created: must be an RFC 3339"},
		{"{\"format\": \"hpcbridge-checkpoint/1\", \"created\": "
		 "\"1960-01-01T00:00:00Z\"}", HB_EINVAL, "from 1970 to 9999"},
		{"{\"format\": \"hpcbridge-checkpoint/1\", \"job\": \"\"}",
		 HB_EINVAL, "job: must be 1 to 256 bytes"},
		{"{\"format\": \"hpcbridge-checkpoint/1\", \"job\": \"a\\nb\"}",
		 HB_EINVAL, "job: must be 1 to 256 bytes"},
		{"{\"format\": 1}", HB_EINVAL, "format: must be a string, not a "
		 "number"},
		{HEAD "\"files\": {}}", HB_EINVAL, "files: must be a list"},
		{HEAD "\"files\": [1]}", HB_EINVAL, "files[0]: must be an object"},
		{HEAD "\"files\": [{\"path\": \"a\", \"size\": 1, \"mode\": "
		 "\"0644\"}]}", HB_EINVAL, "files[0].sha256: required"},
		{HEAD "\"files\": [{\"path\": \"a\", \"size\": 1, \"mode\": "
		 "\"0644\", \"sha256\": \"" SHA_A "\", \"mtime\": 3}]}",
		 HB_EINVAL, "files[0]: unknown key \"mtime\""},
		/* Paths. */
		{HEAD "\"files\": [{\"path\": \"/etc/shadow\"}]}", HB_EINVAL,
		 "files[0].path: absolute path"},
		{HEAD "\"files\": [{\"path\": \"a/../../etc\"}]}", HB_EINVAL,
		 "files[0].path: \"..\" component"},
		{HEAD "\"files\": [{\"path\": \"..\"}]}", HB_EINVAL,
		 "\"..\" component"},
		{HEAD "\"files\": [{\"path\": \"a/./b\"}]}", HB_EINVAL,
		 "\".\" component"},
		{HEAD "\"files\": [{\"path\": \"a//b\"}]}", HB_EINVAL,
		 "empty component"},
		{HEAD "\"files\": [{\"path\": \"a/\"}]}", HB_EINVAL,
		 "empty component"},
		{HEAD "\"files\": [{\"path\": \"\"}]}", HB_EINVAL,
		 "files[0].path: empty"},
		{HEAD "\"files\": [{\"path\": \"a\\u0000b\"}]}", HB_EINVAL,
		 "NUL character"},
		{HEAD "\"files\": [{\"path\": \"a\\nb\"}]}", HB_EINVAL,
		 "control character"},
		{HEAD "\"files\": [{\"path\": \"a\\u0085b\"}]}", HB_EINVAL,
		 "control character"},
		{HEAD "\"files\": [{\"path\": \"a\\u007fb\"}]}", HB_EINVAL,
		 "control character"},
		{HEAD "\"files\": [{\"path\": \"a\tb\"}]}", HB_EINVAL,
		 "control character in a string"},
		{HEAD "\"files\": [{\"path\": \"\xc0\xaf\"}]}", HB_EINVAL,
		 "invalid UTF-8"},
		{HEAD "\"files\": [{\"path\": \"\\ud800\"}]}", HB_EINVAL,
		 "lone surrogate"},
		{HEAD "\"files\": [{\"path\": \"a\\x\"}]}", HB_EINVAL,
		 "invalid escape"},
		/* Numbers, modes, digests. */
		{HEAD "\"files\": [{\"size\": -1}]}", HB_ERANGE,
		 "files[0].size: must not be negative"},
		{HEAD "\"files\": [{\"size\": 1.5}]}", HB_EINVAL,
		 "files[0].size: must be a whole number"},
		{HEAD "\"files\": [{\"size\": 1e3}]}", HB_EINVAL,
		 "must be a whole number"},
		{HEAD "\"files\": [{\"size\": 012}]}", HB_EINVAL,
		 "leading zero"},
		{HEAD "\"files\": [{\"size\": 99999999999999999999999}]}",
		 HB_ERANGE, "files[0].size: more than 1125899906842624"},
		{HEAD "\"files\": [{\"size\": \"1\"}]}", HB_EINVAL,
		 "files[0].size: must be a number, not a string"},
		{HEAD "\"files\": [{\"mode\": 420}]}", HB_EINVAL,
		 "files[0].mode: must be a string"},
		{HEAD "\"files\": [{\"mode\": \"4755\"}]}", HB_EINVAL,
		 "files[0].mode: must be \"0\" and three octal"},
		{HEAD "\"files\": [{\"mode\": \"0648\"}]}", HB_EINVAL,
		 "three octal"},
		{HEAD "\"files\": [{\"sha256\": \"" SHA_A "0\"}]}", HB_EINVAL,
		 "files[0].sha256: must be 64 lowercase hex"},
		{HEAD "\"files\": [{\"sha256\": \"9F86d081884c7d659a2feaa0c55ad0"
		 "15a3bf4f1b2b0b822cd15d6c15b0f00a08\"}]}", HB_EINVAL,
		 "must be 64 lowercase hex"},
		/* The set. */
		{HEAD "\"files\": [{\"path\": \"a\", \"size\": 1, \"mode\": "
		 "\"0644\", \"sha256\": \"" SHA_A "\"}, {\"path\": \"a\", "
		 "\"size\": 1, \"mode\": \"0644\", \"sha256\": \"" SHA_A "\"}]}",
		 HB_EINVAL, "files: \"a\" listed twice"},
		{HEAD "\"files\": [{\"path\": \"Model.pt\", \"size\": 1, "
		 "\"mode\": \"0644\", \"sha256\": \"" SHA_A "\"}, {\"path\": "
		 "\"model.pt\", \"size\": 1, \"mode\": \"0644\", \"sha256\": \""
		 SHA_A "\"}]}", HB_EINVAL, "differ only in case"},
		{HEAD "\"files\": [{\"path\": \"a\", \"size\": 1, \"mode\": "
		 "\"0644\", \"sha256\": \"" SHA_A "\"}, {\"path\": \"a-b\", "
		 "\"size\": 1, \"mode\": \"0644\", \"sha256\": \"" SHA_A "\"}, "
		 "{\"path\": \"A/b\", \"size\": 1, \"mode\": \"0644\", "
		 "\"sha256\": \"" SHA_A "\"}]}",
		 HB_EINVAL, "\"A/b\" lies under the file \"a\""},
		{HEAD "\"files\": [{\"path\": \"a\", \"size\": 1125899906842624, "
		 "\"mode\": \"0644\", \"sha256\": \"" SHA_A "\"}, {\"path\": \"b\", "
		 "\"size\": 1, \"mode\": \"0644\", \"sha256\": \"" SHA_A "\"}]}",
		 HB_ETOOBIG, "more than 1125899906842624 bytes in all"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		refused(cases[i].text, cases[i].code, cases[i].msg);
}

static void test_line_and_index(void **state)
{
	const char *text =
		"{\n  \"format\": \"hpcbridge-checkpoint/1\",\n"
		"  \"created\": \"2026-11-27T18:00:00Z\",\n  \"job\": \"j\",\n"
		"  \"files\": [\n"
		"    {\"path\": \"a\", \"size\": 1, \"mode\": \"0644\", "
		"\"sha256\": \"" SHA_A "\"},\n"
		"    {\"path\": \"b\", \"size\": 1, \"mode\": \"0644\", "
		"\"sha256\": \"" SHA_A "\"},\n"
		"    {\"path\": \"c\", \"size\": 1, \"mode\": \"0644\", "
		"\"sha256\": \"" SHA_A "\"},\n"
		"    {\"path\": \"x/../../y\", \"size\": 1}\n  ]\n}\n";

	(void)state;
	refused(text, HB_EINVAL, "m.json:9: files[3].path: \"..\" component");
}

static void test_caps(void **state)
{
	struct hb_ckpt_manifest *m = hb_ckpt_manifest_new();
	uint8_t sha[32] = {0};
	struct hb_err err = {0};
	char path[HB_CKPT_PATH_MAX + 2];

	(void)state;
	memset(path, 'a', sizeof(path));
	path[HB_CKPT_PATH_MAX + 1] = '\0';
	for (size_t i = 1; i < sizeof(path); i += 200)
		path[i] = '/';
	assert_int_equal(hb_ckpt_manifest_add(m, path, 1, 0644, sha, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "longer than 4095"));
	memset(&err, 0, sizeof(err));
	memset(path, 'a', 300);
	path[300] = '\0';
	assert_int_equal(hb_ckpt_manifest_add(m, path, 1, 0644, sha, &err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "component longer than 255"));
	assert_int_equal(hb_ckpt_manifest_add(m, "a", 1, 04755, sha, NULL),
			 HB_ERANGE);
	assert_int_equal(hb_ckpt_manifest_add(m, "a", HB_CKPT_MAX_TOTAL + 1,
					      0644, sha, NULL), HB_ERANGE);
	assert_int_equal(m->nfiles, 0);
	hb_ckpt_manifest_free(m);
	hb_ckpt_manifest_free(NULL);
}

/* The same files added in any order write the same bytes, which read
 * back to the same manifest and write again the same. */
static void test_write_deterministic(void **state)
{
	static const char *paths[] = {"b", "a-b", "a/z", "a/b/c", "Z", "é/x",
				      "q\"uote", "back\\slash"};
	const size_t n = sizeof(paths) / sizeof(paths[0]);
	struct hb_buf one, two, three;
	struct hb_ckpt_manifest *m1, *m2, *back;
	struct hb_err err = {0};
	uint8_t sha[32];

	(void)state;
	hb_buf_init(&one, 0);
	hb_buf_init(&two, 0);
	hb_buf_init(&three, 0);
	m1 = hb_ckpt_manifest_new();
	m2 = hb_ckpt_manifest_new();
	for (size_t i = 0; i < n; i++) {
		memset(sha, (int)i, sizeof(sha));
		assert_int_equal(hb_ckpt_manifest_add(m1, paths[i], i, 0640,
						      sha, &err), 0);
		memset(sha, (int)(n - 1 - i), sizeof(sha));
		assert_int_equal(hb_ckpt_manifest_add(m2, paths[n - 1 - i],
						      n - 1 - i, 0640, sha,
						      &err), 0);
	}
	m1->created = m2->created = 1795802400;
	assert_int_equal(hb_ckpt_manifest_set_job(m1, "default/train-7", &err),
			 0);
	assert_int_equal(hb_ckpt_manifest_set_job(m2, "default/train-7", &err),
			 0);
	assert_int_equal(hb_ckpt_manifest_seal(m1, &err), 0);
	assert_int_equal(hb_ckpt_manifest_seal(m2, &err), 0);
	assert_int_equal(hb_ckpt_manifest_write(m1, &one), 0);
	assert_int_equal(hb_ckpt_manifest_write(m2, &two), 0);
	assert_string_equal(one.data, two.data);
	/* Component order: a directory's files together. */
	assert_string_equal(m1->files[0].path, "Z");
	assert_string_equal(m1->files[1].path, "a/b/c");
	assert_string_equal(m1->files[2].path, "a/z");
	assert_string_equal(m1->files[3].path, "a-b");
	assert_non_null(strstr(one.data, "\"q\\\"uote\""));
	assert_non_null(strstr(one.data, "\"back\\\\slash\""));
	assert_non_null(strstr(one.data, "\"created\": \"2026-11-27T18:00:00Z\""));
	assert_int_equal(hb_ckpt_manifest_parse(one.data, one.len, "one", &back,
						&err), 0);
	assert_int_equal(hb_ckpt_manifest_write(back, &three), 0);
	assert_string_equal(one.data, three.data);
	hb_ckpt_manifest_free(back);
	hb_ckpt_manifest_free(m1);
	hb_ckpt_manifest_free(m2);
	hb_buf_free(&one);
	hb_buf_free(&two);
	hb_buf_free(&three);
}

static void test_write_cap(void **state)
{
	struct hb_ckpt_manifest *m = hb_ckpt_manifest_new();
	uint8_t sha[32] = {1};
	struct hb_buf b;

	(void)state;
	assert_int_equal(hb_ckpt_manifest_add(m, "x", 1, 0644, sha, NULL), 0);
	hb_buf_init(&b, 64);
	assert_int_equal(hb_buf_puts(&b, "kept"), 0);
	assert_int_equal(hb_ckpt_manifest_write(m, &b), HB_ETOOBIG);
	assert_string_equal(b.data, "kept");
	hb_buf_free(&b);
	hb_ckpt_manifest_free(m);
}

static void test_path_check(void **state)
{
	static const char *good[] = {"a", "a/b", ".hidden", "..x", "x..",
				     "a b", "tab-free/ü", "...", "a\\b"};
	static const char *bad[] = {"", "/a", "a/", "a//b", ".", "./a",
				    "a/.", "..", "a/../b", "a\x01", "\x7f",
				    "\xff", "a\xc2\x9f"};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(hb_ckpt_path_check(good[i], strlen(good[i]),
						    NULL, NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hb_ckpt_path_check(bad[i], strlen(bad[i]), NULL, NULL) !=
		    HB_EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	/* A NUL inside the given length is refused too. */
	assert_int_equal(hb_ckpt_path_check("a\0b", 3, NULL, NULL), HB_EINVAL);
	assert_true(hb_ckpt_path_cmp("a", "a/b") < 0);
	assert_true(hb_ckpt_path_cmp("a/b", "a-b") < 0);
	assert_true(hb_ckpt_path_cmp("a/b", "a/b") == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_line_and_index),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_write_deterministic),
		cmocka_unit_test(test_write_cap),
		cmocka_unit_test(test_path_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
