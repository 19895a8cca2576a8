/*
 * test_mirror_url.c - mirror.h's locations and checkpoint IDs: what
 * parses, what is refused (hostile prefixes among them), and the option
 * checks every call makes before it sends anything.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/mirror.h"
#include "testutil.h"

static void parses(const char *url, const char *bucket, const char *prefix)
{
	struct hb_mirror_url u;
	struct hb_err err = { 0 };
	int rc = hb_mirror_url_parse(url, &u, &err);

	if (rc)
		fail_msg("%s: %s", url, err.msg);
	assert_string_equal(u.bucket, bucket);
	assert_string_equal(u.prefix, prefix);
}

static void refused(const char *url, const char *msg)
{
	struct hb_mirror_url u;
	struct hb_err err = { 0 };
	int rc = hb_mirror_url_parse(url, &u, &err);

	if (rc != HB_EINVAL || !strstr(err.msg, msg))
		fail_msg("%s: got %d \"%s\", want EINVAL \"%s\"", url, rc,
			 err.msg, msg);
}

static void test_url_good(void **state)
{
	(void)state;
	parses("s3://bucket", "bucket", "");
	parses("s3://bucket/", "bucket", "");
	parses("s3://my-bucket.1/run", "my-bucket.1", "run");
	parses("s3://abc/run/42/", "abc", "run/42");
	parses("s3://abc/a b/é", "abc", "a b/é");
	parses("s3://abc/..x/x..", "abc", "..x/x..");
}

static void test_url_bad(void **state)
{
	char long_prefix[HB_MIRROR_PREFIX_MAX + 16];
	char url[HB_MIRROR_PREFIX_MAX + 32];

	(void)state;
	refused("bucket/run", "not an s3://BUCKET/PREFIX");
	refused("S3://bucket/run", "not an s3://BUCKET/PREFIX");
	refused("s3:/bucket", "not an s3://BUCKET/PREFIX");
	refused("", "not an s3://BUCKET/PREFIX");
	refused("s3://", "bucket");
	refused("s3://ab", "bucket");
	refused("s3://Bucket/run", "bucket");
	refused("s3://-bucket/run", "bucket");
	refused("s3://bucket-/run", "bucket");
	refused("s3://bu..cket/run", "bucket");
	refused("s3://bu_cket/run", "bucket");
	refused("s3://a234567890123456789012345678901234567890123456789012345"
		"678901234/x", "bucket");
	/* Prefixes that would climb, be absolute or hold control bytes. */
	refused("s3://bucket/../run", "prefix");
	refused("s3://bucket/run/../../x", "prefix");
	refused("s3://bucket/run/./x", "prefix");
	refused("s3://bucket//run", "prefix");
	refused("s3://bucket/run//x", "prefix");
	refused("s3://bucket/run//", "prefix");
	refused("s3://bucket/run\n", "prefix");
	refused("s3://bucket/r\x7fun", "prefix");
	refused("s3://bucket/r\xc2\x85un", "prefix");
	refused("s3://bucket/\xff", "prefix");
	memset(long_prefix, 'p', HB_MIRROR_PREFIX_MAX + 1);
	long_prefix[HB_MIRROR_PREFIX_MAX + 1] = '\0';
	snprintf(url, sizeof(url), "s3://bucket/%s", long_prefix);
	refused(url, "longer than");
	/* One byte less fits: components are at most 255 bytes, so split. */
	for (size_t i = 200; i < HB_MIRROR_PREFIX_MAX; i += 200)
		long_prefix[i] = '/';
	long_prefix[HB_MIRROR_PREFIX_MAX] = '\0';
	snprintf(url, sizeof(url), "s3://bucket/%s", long_prefix);
	parses(url, "bucket", long_prefix);
	assert_int_equal(hb_mirror_url_parse(NULL, &(struct hb_mirror_url){0},
					     &(struct hb_err){0}), HB_EINVAL);
}

static void test_id(void **state)
{
	static const char *good[] = {
		"20261127T180000Z-0123abcd",
		"99991231T235959Z-ffffffff",
		"00000000T000000Z-00000000",
	};
	static const char *bad[] = {
		"",
		"20261127T180000Z-0123abc",
		"20261127T180000Z-0123abcde",
		"20261127T180000Z-0123ABCD",
		"20261127t180000Z-0123abcd",
		"20261127T180000z-0123abcd",
		"20261127T180000Z_0123abcd",
		"2026112xT180000Z-0123abcd",
		"20261127T18000Z-00123abcd",
		"../../../etc/passwd-xxxxx",
		"20261127T180000Z-0123abc/",
		"20261127T180000Z-0123abc.",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		if (!hb_mirror_id_valid(good[i], strlen(good[i])))
			fail_msg("%s refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (hb_mirror_id_valid(bad[i], strlen(bad[i])))
			fail_msg("%s accepted", bad[i]);
	/* The length given is what counts: no reading past it, and a NUL
	 * inside is not a digit. */
	assert_false(hb_mirror_id_valid("20261127T180000Z-0123abcd", 24));
	assert_false(hb_mirror_id_valid("20261127T180000Z-0123abc\0", 25));
	assert_int_equal(strlen("20261127T180000Z-0123abcd"), HB_MIRROR_ID_LEN);
}

/* Options are checked before anything is sent: the endpoint here has no
 * server, so reaching it would fail differently. */
static void test_opts_checked(void **state)
{
	struct hb_s3_opts so = { .endpoint = "http://127.0.0.1:9",
				 .region = "us-east-1",
				 .access_key = "AKIDEXAMPLE",
				 .secret_key = "secret", .retries = -1 };
	struct hb_mirror_opts o = { 0 };
	struct hb_mirror_stats st;
	struct hb_s3 *s3 = NULL;
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_s3_new(&so, &s3, &err), 0);
	o.jobs = 65;
	assert_int_equal(hb_mirror_verify(s3, "s3://bucket/run", &o, &st,
					  &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "jobs"));
	o = (struct hb_mirror_opts){ .part_size = 1024 * 1024 };
	err = (struct hb_err){ 0 };
	assert_int_equal(hb_mirror_push(s3, "s3://bucket/run", "/nonexistent",
					&o, &st, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "part size"));
	assert_int_equal(st.sent_files, 0);
	o = (struct hb_mirror_opts){ .checkpoint = "../../x" };
	err = (struct hb_err){ 0 };
	assert_int_equal(hb_mirror_pull(s3, "s3://bucket/run", "/nonexistent",
					&o, &st, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "checkpoint"));
	err = (struct hb_err){ 0 };
	assert_int_equal(hb_mirror_retain(s3, "s3://bucket/../x", 2, NULL,
					  &st, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "prefix"));
	err = (struct hb_err){ 0 };
	assert_int_equal(hb_mirror_list(NULL, "s3://bucket/run", NULL, NULL,
					NULL, &err), HB_EINVAL);
	hb_s3_free(s3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_good),
		cmocka_unit_test(test_url_bad),
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_opts_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
