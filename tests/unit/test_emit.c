/*
 * test_emit.c - the streaming writer: for every document, the events of
 * its tree written as JSON and YAML must be byte for byte what the tree
 * writers write (or the same error, with the buffer left as it was), and
 * the tree back end must build an equal tree.  Documents: the project's
 * manifests, configurations and fuzz seeds, hand-made odd ones, and
 * seeded random trees of odd strings, numbers and empty containers.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/error.h"
#include "testutil.h"

/* Write doc both ways in fmt after a prefix; they must agree. */
static void same_as_tree_writer(const cJSON *doc, enum hb_emit_format fmt,
				const char *what)
{
	struct hb_buf a, b;
	struct hb_emit *e;
	int ra, rb;

	hb_buf_init(&a, 0);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_puts(&a, "prefix\n"), 0);
	assert_int_equal(hb_buf_puts(&b, "prefix\n"), 0);
	ra = fmt == HB_EMIT_JSON	    ? hb_doc_write_json(doc, &a)
	     : fmt == HB_EMIT_JSON_COMPACT ? hb_doc_write_json_compact(doc, &a)
					   : hb_doc_write_yaml(doc, &a);
	e = hb_emit_new(fmt, &b);
	assert_non_null(e);
	hb_emit_tree(e, NULL, doc);
	rb = hb_emit_done(e);
	if (ra != rb || a.len != b.len || memcmp(a.data, b.data, a.len))
		fail_msg("%s (%s): tree writer %d:\n%s\nstreaming %d:\n%s",
			 what,
			 fmt == HB_EMIT_JSON	       ? "json"
			 : fmt == HB_EMIT_JSON_COMPACT ? "compact json"
						       : "yaml",
			 ra,
			 a.data, rb, b.data);
	/* The writer takes a second document after the first. */
	if (!rb) {
		size_t one = b.len;

		hb_emit_tree(e, NULL, doc);
		assert_int_equal(hb_emit_done(e), 0);
		assert_int_equal(b.len - one, one - strlen("prefix\n"));
		assert_memory_equal(b.data + one, b.data + strlen("prefix\n"),
				    one - strlen("prefix\n"));
	}
	hb_emit_free(e);
	hb_buf_free(&a);
	hb_buf_free(&b);
}

static void same_tree(const cJSON *doc, const char *what)
{
	struct hb_emit *e = hb_emit_new(HB_EMIT_TREE, NULL);
	cJSON *t = NULL;
	int rc;

	assert_non_null(e);
	hb_emit_tree(e, NULL, doc);
	rc = hb_emit_done(e);
	if (!rc)
		assert_int_equal(hb_emit_take(e, &t), 0);
	hb_emit_free(e);
	if (rc) {
		/* Only what no writer takes fails here too. */
		struct hb_buf b;

		hb_buf_init(&b, 0);
		assert_int_not_equal(hb_doc_write_json(doc, &b), 0);
		assert_null(t);
		hb_buf_free(&b);
		return;
	}
	/* Equal, in the same order (YAML text, as NaN is not equal to
	 * itself for cJSON_Compare) */
	{
		struct hb_buf a, b;

		hb_buf_init(&a, 0);
		hb_buf_init(&b, 0);
		assert_int_equal(hb_doc_write_yaml(doc, &a), 0);
		assert_int_equal(hb_doc_write_yaml(t, &b), 0);
		if (strcmp(a.data, b.data))
			fail_msg("%s: the tree back end built another tree",
				 what);
		hb_buf_free(&a);
		hb_buf_free(&b);
	}
	cJSON_Delete(t);
}

static void check_doc(const cJSON *doc, const char *what)
{
	same_as_tree_writer(doc, HB_EMIT_JSON, what);
	same_as_tree_writer(doc, HB_EMIT_JSON_COMPACT, what);
	same_as_tree_writer(doc, HB_EMIT_YAML, what);
	same_tree(doc, what);
}

/* ---- the project's own documents ---- */

static void check_dir(const char *rel, int *count)
{
	const char *dir = hb_test_src_path(rel);
	char dpath[1024];
	DIR *d;
	struct dirent *de;

	snprintf(dpath, sizeof(dpath), "%s", dir);
	d = opendir(dpath);
	if (!d)
		fail_msg("cannot open %s", dpath);
	while ((de = readdir(d))) {
		char path[2048];
		size_t len;
		char *text;
		cJSON *doc = NULL;
		struct hb_err err = { 0 };
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dpath, de->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		text = hb_test_read_file(path, &len);
		if (hb_doc_parse_stream(text, len, path, &doc, &err) == 0) {
			const cJSON *c;

			check_doc(doc, path);
			cJSON_ArrayForEach (c, doc)
				check_doc(c, path);
			(*count)++;
		}
		cJSON_Delete(doc);
		free(text);
	}
	closedir(d);
}

static void test_project_documents(void **state)
{
	static const char *const dirs[] = {
		"examples/manifests",
		"tests/golden",
		"tests/fuzz/corpus/doc",
		"tests/fuzz/corpus/manifest",
		"tests/fuzz/corpus/schema",
		"tests/fuzz/corpus/config",
		"tests/fuzz/corpus/snapshot",
		"config",
		"config/policies",
	};
	int count = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		check_dir(dirs[i], &count);
	assert_true(count >= 30);
}

/* ---- odd strings and shapes ---- */

static const char *const odd[] = {
	"",
	" ",
	"plain",
	"with space",
	" lead",
	"trail ",
	"a: b",
	"a:b",
	"end:",
	"x #y",
	"x#y",
	"#lead",
	"- item",
	"-",
	"-x",
	"--x",
	"---",
	"...",
	"? q",
	"!tag",
	"&anchor",
	"*alias",
	"|",
	">",
	"'sq'",
	"\"dq\"",
	"%pct",
	"@at",
	"`bt",
	"{a}",
	"[a]",
	",c",
	"yes",
	"No",
	"on",
	"OFF",
	"true",
	"False",
	"null",
	"~",
	"<<",
	"=",
	"1",
	"-1",
	"+1",
	"0x1F",
	"0o17",
	"0b101",
	"1_000",
	"1.5e3",
	".5",
	"1:30",
	"2024-01-01",
	".inf",
	"-.inf",
	".NaN",
	"12abc",
	"abc12",
	"line\nline",
	"line\n",
	"line\n\n",
	"line\n\n\n",
	"\nlead newline",
	"\n\n",
	"\n",
	" indented\nblock",
	"\tindented\nblock",
	"tab\there",
	"cr\rhere",
	"nl and cr\r\nhere",
	"quote \" and \\ backslash",
	"ctrl \x01\x02\x1f end",
	"del \x7f end",
	"bell\a bs\b ff\f vt\v",
	"caf\xc3\xa9",
	"\xe2\x82\xac euro",
	"\xf0\x9f\x98\x80 emoji",
	"c1 \xc2\x85 nel",
	"c1 \xc2\x9f",
	"ls \xe2\x80\xa8 ps \xe2\x80\xa9",
	"bom \xef\xbb\xbf",
	"nonchar \xef\xbf\xbe \xef\xbf\xbf",
	"bad \xff byte",
	"bad \xc3 truncated",
	"overlong \xc0\xaf",
	"surrogate \xed\xa0\x80",
	"too big \xf4\x90\x80\x80",
	"trunc4 \xf0\x9f\x98",
	"$(VAR) $$x ${y}",
	"multi\nline with: colon\nand # hash\n",
	"a long string that goes on and on, with commas, colons: and "
	"more text so that it crosses several eight-byte words of the "
	"scanner \"quoted\" here and a \\ there and done",
};

static cJSON *odd_object(void)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
	char longkey[1200];

	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		cJSON_AddItemToObject(o, odd[i], cJSON_CreateString(odd[i]));
		cJSON_AddItemToArray(a, cJSON_CreateString(odd[i]));
	}
	cJSON_AddItemToObject(o, "all", a);
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	longkey[170] = '\0'; /* past 160: "? key" */
	cJSON_AddStringToObject(o, longkey, "v");
	longkey[170] = 'k'; /* past 1000: quoted */
	cJSON_AddItemToObject(o, longkey, cJSON_CreateObject());
	longkey[100] = ' ';
	cJSON_AddItemToObject(o, longkey, cJSON_CreateArray());
	return o;
}

static void test_odd_strings(void **state)
{
	cJSON *o = odd_object();

	(void)state;
	check_doc(o, "odd strings");
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		cJSON *s = cJSON_CreateString(odd[i]);

		check_doc(s, odd[i]); /* a root scalar */
		cJSON_Delete(s);
	}
	cJSON_Delete(o);
}

static void test_shapes(void **state)
{
	static const char *const texts[] = {
		"{}",
		"[]",
		"null",
		"true",
		"false",
		"0",
		"-0.5",
		"[[], {}, [[]], [{}], {\"a\": []}, {\"a\": {}}]",
		"{\"a\": [[1, [2, []]], {\"b\": {\"c\": []}}], \"d\": {}}",
		"[[[\"x\"]], [{\"k\": [\"v\", {}]}]]",
		"{\"seq\": [{\"a\": 1, \"b\": [1, 2]}, [3, [4]], "
		"\"s\\nt\\n\"]}",
		"{\"n\": [1e300, -1e-300, 0.1, 123456789.125, "
		"9007199254740993]}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cJSON *d = cJSON_Parse(texts[i]);

		assert_non_null(d);
		check_doc(d, texts[i]);
		cJSON_Delete(d);
	}
	/* NaN and infinities: YAML writes them, JSON refuses */
	{
		cJSON *d = cJSON_CreateArray();

		cJSON_AddItemToArray(d, cJSON_CreateNumber(NAN));
		cJSON_AddItemToArray(d, cJSON_CreateNumber(INFINITY));
		cJSON_AddItemToArray(d, cJSON_CreateNumber(-INFINITY));
		check_doc(d, "nan and inf");
		cJSON_Delete(d);
		d = cJSON_CreateObject();
		cJSON_AddItemToObject(d, "raw", cJSON_CreateRaw("1"));
		check_doc(d, "raw");
		cJSON_Delete(d);
	}
}

/* Nesting right at, and past, the limit, both kinds of container. */
static void test_depth(void **state)
{
	(void)state;
	for (int depth = HB_DOC_MAX_DEPTH - 2; depth <= HB_DOC_MAX_DEPTH + 3;
	     depth++) {
		for (int kind = 0; kind < 4; kind++) {
			cJSON *root = kind & 1 ? cJSON_CreateObject()
					       : cJSON_CreateArray();
			cJSON *cur = root;
			char what[64];

			for (int i = 1; i < depth; i++) {
				cJSON *n = (i + kind) & 1 ? cJSON_CreateObject()
							  : cJSON_CreateArray();

				if (cJSON_IsObject(cur))
					cJSON_AddItemToObject(cur, "k", n);
				else
					cJSON_AddItemToArray(cur, n);
				cur = n;
			}
			/* the innermost one empty, or with a scalar */
			if (kind & 2) {
				if (cJSON_IsObject(cur))
					cJSON_AddStringToObject(cur, "k", "v");
				else
					cJSON_AddItemToArray(
						cur, cJSON_CreateString("v"));
			}
			snprintf(what, sizeof(what), "depth %d kind %d", depth,
				 kind);
			check_doc(root, what);
			cJSON_Delete(root);
		}
	}
}

/* ---- random trees ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static cJSON *random_value(int depth)
{
	uint32_t k = rnd(depth > 6 ? 6 : 10);
	cJSON *v;

	switch (k) {
	case 0:
		return cJSON_CreateNull();
	case 1:
		return cJSON_CreateBool(rnd(2));
	case 2: {
		static const double nums[] = { 0,    1,	  -1,	2.5, 1e21,
					       1e-7, 3e9, -0.0, 100, 0.1 };

		return cJSON_CreateNumber(nums[rnd(10)]);
	}
	case 3:
	case 4:
	case 5:
		return cJSON_CreateString(
			odd[rnd(sizeof(odd) / sizeof(odd[0]))]);
	case 6:
	case 7:
		v = cJSON_CreateArray();
		for (uint32_t i = 0, n = rnd(4); i < n; i++)
			cJSON_AddItemToArray(v, random_value(depth + 1));
		return v;
	default:
		v = cJSON_CreateObject();
		for (uint32_t i = 0, n = rnd(5); i < n; i++)
			cJSON_AddItemToObject(
				v, odd[rnd(sizeof(odd) / sizeof(odd[0]))],
				random_value(depth + 1));
		return v;
	}
}

static void test_random_trees(void **state)
{
	(void)state;
	for (int i = 0; i < 3000; i++) {
		cJSON *d = random_value(0);
		char what[32];

		snprintf(what, sizeof(what), "random tree %d", i);
		check_doc(d, what);
		cJSON_Delete(d);
	}
}

/* ---- events by hand, and misuse ---- */

static void test_events(void **state)
{
	struct hb_buf b;
	struct hb_emit *e;
	cJSON *t = NULL;

	(void)state;
	hb_buf_init(&b, 0);
	e = hb_emit_new(HB_EMIT_YAML, &b);
	hb_emit_obj(e, NULL);
	hb_emit_str(e, "name", "x");
	hb_emit_arr(e, "list");
	hb_emit_num(e, NULL, 3);
	hb_emit_obj(e, NULL);
	hb_emit_bool(e, "on", 1);
	hb_emit_null(e, "off");
	hb_emit_end(e);
	hb_emit_end(e);
	hb_emit_obj(e, "empty");
	hb_emit_end(e);
	hb_emit_strn(e, "script", "echo $$x\nexit 0\nignored", 16);
	hb_emit_end(e);
	assert_int_equal(hb_emit_done(e), 0);
	assert_string_equal(b.data, "name: x\n"
				    "list:\n"
				    "- 3\n"
				    "- \"on\": true\n"
				    "  \"off\": null\n"
				    "empty: {}\n"
				    "script: |\n"
				    "  echo $$x\n"
				    "  exit 0\n");
	hb_emit_free(e);

	/* misuse: nothing, two roots, one left open, a close too many;
	 * the buffer is left as it was */
	hb_buf_reset(&b);
	hb_buf_puts(&b, "keep");
	e = hb_emit_new(HB_EMIT_JSON, &b);
	assert_int_equal(hb_emit_done(e), HB_EINVAL);
	hb_emit_str(e, NULL, "a");
	assert_int_equal(hb_emit_str(e, NULL, "b"), HB_EINVAL);
	assert_int_equal(hb_emit_done(e), HB_EINVAL);
	hb_emit_obj(e, NULL);
	assert_int_equal(hb_emit_done(e), HB_EINVAL);
	assert_int_equal(hb_emit_end(e), HB_EINVAL);
	assert_int_equal(hb_emit_done(e), HB_EINVAL);
	assert_string_equal(b.data, "keep");
	/* and still works afterwards */
	hb_emit_arr(e, NULL);
	hb_emit_end(e);
	assert_int_equal(hb_emit_done(e), 0);
	assert_string_equal(b.data, "keep[]\n");
	hb_emit_free(e);

	/* a buffer cap: error, buffer as it was */
	hb_buf_free(&b);
	hb_buf_init(&b, 8);
	e = hb_emit_new(HB_EMIT_JSON, &b);
	hb_emit_str(e, NULL, "more than eight bytes");
	assert_int_equal(hb_emit_done(e), HB_ETOOBIG);
	assert_int_equal(b.len, 0);
	hb_emit_free(e);
	hb_buf_free(&b);

	/* the tree back end */
	e = hb_emit_new(HB_EMIT_TREE, NULL);
	hb_emit_obj(e, NULL);
	hb_emit_strn(e, "s", "abcdef", 3);
	hb_emit_arr(e, "a");
	hb_emit_end(e);
	hb_emit_end(e);
	assert_int_equal(hb_emit_done(e), 0);
	assert_int_equal(hb_emit_take(e, &t), 0);
	assert_string_equal(hb_doc_str(t, "s"), "abc");
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(t, "a")));
	cJSON_Delete(t);
	/* an unfinished tree is freed, not handed out */
	hb_emit_obj(e, NULL);
	assert_int_equal(hb_emit_done(e), HB_EINVAL);
	assert_int_equal(hb_emit_take(e, &t), HB_EINVAL);
	assert_null(t);
	/* a tree not taken is freed with the writer */
	hb_emit_arr(e, NULL);
	hb_emit_end(e);
	assert_int_equal(hb_emit_done(e), 0);
	hb_emit_free(e);
	hb_emit_free(NULL);
	assert_null(hb_emit_new(HB_EMIT_JSON, NULL));
}

/* ---- YAML string styles against a byte-at-a-time reference ---- */

/*
 * The rules of doc.c's string_style() for values, one byte at a time as
 * first written, as an oracle for the word-at-a-time scanner: 'p' plain,
 * 'q' double-quoted, 'l' literal block.  The writer's choice is read off
 * its output.
 */
static int ref_utf8(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0];
	size_t len, i;

	if (c >= 0xC2 && c <= 0xDF)
		len = 2, c &= 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, c &= 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, c &= 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return (int)len;
}

static char ref_style(const unsigned char *s, size_t n)
{
	int nl = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t cp;
		int k;

		if (s[i] == '\n') {
			nl = 1;
			continue;
		}
		if (s[i] == '\t' || (s[i] >= 0x20 && s[i] < 0x7f))
			continue;
		if (s[i] < 0x80)
			return 'q';
		k = ref_utf8(s + i, n - i, &cp);
		if (!k || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 ||
		    cp == 0x2029 || cp == 0xFEFF || cp == 0xFFFE ||
		    cp == 0xFFFF)
			return 'q';
		i += (size_t)k - 1;
	}
	if (!nl)
		return 0; /* plain or quoted: decided by the indicators */
	for (i = 0; i < n && s[i] == '\n'; i++)
		;
	return i == n || s[i] == ' ' || s[i] == '\t' ? 'q' : 'l';
}

static void test_yaml_styles(void **state)
{
	static const char alphabet[] = "ab :#\n\t-'\"\\\x01\x7f\xc3\xa9\xff.";
	struct hb_buf b;
	struct hb_emit *e;

	(void)state;
	hb_buf_init(&b, 0);
	e = hb_emit_new(HB_EMIT_YAML, &b);
	for (int i = 0; i < 20000; i++) {
		unsigned char str[48];
		size_t n = 1 + rnd(sizeof(str) - 1);
		char want, got;

		for (size_t k = 0; k < n; k++)
			str[k] = (unsigned char)
				alphabet[rnd(sizeof(alphabet) - 1)];
		/* a leading line with no indicator, half of the time */
		if (rnd(2))
			str[0] = 'x';
		hb_buf_reset(&b);
		hb_emit_strn(e, NULL, (const char *)str, n);
		assert_int_equal(hb_emit_done(e), 0);
		want = ref_style(str, n);
		got = b.data[0] == '"' ? 'q' : b.data[0] == '|' ? 'l' : 'p';
		if (want == 'q' || want == 'l') {
			if (got != want)
				fail_msg("string %d (%zu bytes): style %c, "
					 "want %c:\n%s",
					 i, n, got, want, b.data);
		} else if (got == 'l') {
			fail_msg("string %d: literal without a newline", i);
		}
	}
	hb_emit_free(e);
	hb_buf_free(&b);
}

/* ---- JSON escapes and literal blocks against simple references ---- */

/* RFC 8259 escaping as doc.h describes it, one code point at a time. */
static void ref_json(const unsigned char *s, size_t n, struct hb_buf *b)
{
	hb_buf_putc(b, '"');
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int k = s[i] < 0x80 ? 1 : ref_utf8(s + i, n - i, &cp);

		if (s[i] < 0x80)
			cp = s[i];
		if (!k) {
			hb_buf_puts(b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			hb_buf_printf(b, "\\%c", (char)cp);
		else if (cp == '\n')
			hb_buf_puts(b, "\\n");
		else if (cp == '\t')
			hb_buf_puts(b, "\\t");
		else if (cp == '\r')
			hb_buf_puts(b, "\\r");
		else if (cp == '\b')
			hb_buf_puts(b, "\\b");
		else if (cp == '\f')
			hb_buf_puts(b, "\\f");
		else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
			 cp == 0x2028 || cp == 0x2029 || cp == 0xfeff ||
			 cp == 0xfffe || cp == 0xffff)
			hb_buf_printf(b, "\\u%04x", cp);
		else
			hb_buf_append(b, s + i, (size_t)k);
		i += (size_t)k;
	}
	hb_buf_putc(b, '"');
}

/* "k: |..." for a string that takes a literal block, as doc.h says. */
static void ref_literal(const char *s, size_t n, struct hb_buf *b)
{
	size_t core = n, start, i;

	while (core && s[core - 1] == '\n')
		core--;
	hb_buf_puts(b, n - core == 0   ? "k: |-\n"
		       : n - core == 1 ? "k: |\n"
				       : "k: |+\n");
	for (start = 0; start <= core; start = i + 1) {
		for (i = start; i < core && s[i] != '\n'; i++)
			;
		if (i > start)
			hb_buf_puts(b, "  ");
		hb_buf_append(b, s + start, i - start);
		hb_buf_putc(b, '\n');
	}
	for (i = 1; i < n - core; i++)
		hb_buf_putc(b, '\n');
}

static void test_escapes_and_blocks(void **state)
{
	static const char *const pieces[] = {
		"a",
		"bcdefgh",
		" ",
		"\n",
		"\t",
		"\"",
		"\\",
		"$",
		":",
		"#",
		"\x01",
		"\r",
		"\x7f",
		"\xc3\xa9",
		"\xe2\x80\xa8",
		"\xff",
		"\xef\xbb\xbf",
		"0123456789abcdef",
	};
	struct hb_buf got, want;
	struct hb_emit *j, *y;

	(void)state;
	hb_buf_init(&got, 0);
	hb_buf_init(&want, 0);
	j = hb_emit_new(HB_EMIT_JSON, &got);
	y = hb_emit_new(HB_EMIT_YAML, &got);
	for (int i = 0; i < 20000; i++) {
		char str[256];
		size_t n = 0, npieces = rnd(24);
		/* most strings from the escapes both formats share */
		uint32_t kinds = rnd(3) ? 10 : sizeof(pieces) / sizeof(*pieces);

		for (size_t k = 0; k < npieces; k++) {
			const char *pc = pieces[rnd(kinds)];
			size_t l = strlen(pc);

			if (n + l >= sizeof(str))
				break;
			memcpy(str + n, pc, l);
			n += l;
		}
		hb_buf_reset(&got);
		hb_buf_reset(&want);
		hb_emit_strn(j, NULL, str, n);
		assert_int_equal(hb_emit_done(j), 0);
		ref_json((const unsigned char *)str, n, &want);
		hb_buf_putc(&want, '\n');
		if (strcmp(got.data, want.data))
			fail_msg("json %d:\n%s\nwant\n%s", i, got.data,
				 want.data);

		/* a literal block: a first line of plain text, then lines */
		if (n && str[0] != ' ' && str[0] != '\t' && str[0] != '\n' &&
		    memchr(str, '\n', n)) {
			int lit = 1;

			for (size_t k = 0; k < n; k++)
				if ((unsigned char)str[k] < 0x20 &&
				    str[k] != '\n' && str[k] != '\t')
					lit = 0;
				else if ((unsigned char)str[k] >= 0x7f)
					lit = 0;
			if (!lit)
				continue;
			hb_buf_reset(&got);
			hb_buf_reset(&want);
			hb_emit_obj(y, NULL);
			hb_emit_strn(y, "k", str, n);
			hb_emit_end(y);
			assert_int_equal(hb_emit_done(y), 0);
			ref_literal(str, n, &want);
			if (strcmp(got.data, want.data))
				fail_msg("yaml %d:\n%s\nwant\n%s", i, got.data,
					 want.data);
		}
	}
	hb_emit_free(j);
	hb_emit_free(y);
	hb_buf_free(&got);
	hb_buf_free(&want);
}

/* A member appended to a written object: after the others, alone in an
 * empty one, and refused after something that is no object. */
static void test_append_member(void **state)
{
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_puts(&b, "{\"a\":1}"), 0);
	assert_int_equal(hb_doc_append_member(&b, "req", "{\"x\":[2]}", 9), 0);
	assert_string_equal(b.data, "{\"a\":1,\"req\":{\"x\":[2]}}");
	hb_buf_reset(&b);
	assert_int_equal(hb_buf_puts(&b, "{}"), 0);
	assert_int_equal(hb_doc_append_member(&b, "k", "null", 4), 0);
	assert_string_equal(b.data, "{\"k\":null}");
	hb_buf_reset(&b);
	assert_int_equal(hb_doc_append_member(&b, "k", "1", 1), HB_EINVAL);
	assert_int_equal(hb_buf_puts(&b, "[1]"), 0);
	assert_int_equal(hb_doc_append_member(&b, "k", "1", 1), HB_EINVAL);
	assert_string_equal(b.data, "[1]");
	hb_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_project_documents),
		cmocka_unit_test(test_odd_strings),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_random_trees),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_yaml_styles),
		cmocka_unit_test(test_escapes_and_blocks),
		cmocka_unit_test(test_append_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
