/*
 * test_s3_xml.c - the XML reader and S3's answers: real response shapes
 * (ListObjectsV2 with and without a continuation token, errors,
 * CreateMultipartUpload, CompleteMultipartUpload and its 200 <Error>),
 * hostile keys handed back exactly ("../x", "/etc/passwd", entities),
 * what is not well-formed refused (&#0;, DTDs, CDATA, bad UTF-8,
 * mismatched tags), and the credentials file.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/s3_int.h"
#include "testutil.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static int parse(const char *doc, struct hb_arena *a, struct hb_s3_xml **x,
		 struct hb_err *e)
{
	memset(e, 0, sizeof(*e));
	return hb_s3_xml_parse(doc, strlen(doc), a, x, e);
}

static void test_reader_basics(void **state)
{
	struct hb_arena a;
	struct hb_s3_xml *x;
	struct hb_err e;

	(void)state;
	hb_arena_init(&a, 0);
	assert_int_equal(parse(DECL "<!-- c --><A" NS " b='1'>\n <B>x &amp; "
			       "&lt;y&gt; &quot;&apos; &#65;&#x42;&#xe9;</B>"
			       "<C/><D></D><?pi x?></A>\n<!-- end -->",
			       &a, &x, &e), 0);
	assert_string_equal(x->name, "A");
	assert_null(x->text);
	assert_string_equal(hb_s3_xml_text(x, "B"),
			    "x & <y> \"' AB\xc3\xa9");
	assert_string_equal(hb_s3_xml_text(x, "C"), "");
	assert_string_equal(hb_s3_xml_text(x, "D"), "");
	assert_null(hb_s3_xml_text(x, "E"));
	/* Blanks are kept as they are; CR LF reads as LF. */
	assert_int_equal(parse("<K>  a\r\nb\r </K>", &a, &x, &e), 0);
	assert_string_equal(x->text, "  a\nb\n ");
	hb_arena_free(&a);
}

static void test_reader_refuses(void **state)
{
	static const char *const bad[] = {
		"",
		"   ",
		"text",
		"<A>",
		"<A></B>",
		"<A><B></A></B>",
		"<A>x</A><B/>",
		"<A>x</A>trailing",
		"<A>&#0;</A>",
		"<A>&#x0;</A>",
		"<A>&#xD800;</A>",
		"<A>&#x110000;</A>",
		"<A>&#99999999999999999999;</A>",
		"<A>&#;</A>",
		"<A>&#x;</A>",
		"<A>&nbsp;</A>",
		"<A>&amp</A>",
		"<A>a & b</A>",
		"<!DOCTYPE A [<!ENTITY e \"x\">]><A>&e;</A>",
		"<A><![CDATA[x]]></A>",
		"<A>\x01</A>",
		"<A>\xc0\xaf</A>",	   /* overlong '/' */
		"<A>\xed\xa0\x80</A>",	   /* a surrogate */
		"<A>\xef\xbf\xbe</A>",	   /* U+FFFE */
		"<A>\xf4\x90\x80\x80</A>", /* past U+10FFFF */
		"<A>\xe1\x88</A>",	   /* cut short */
		"<A>x<B/></A>",		   /* text beside an element */
		"<A b=1/>",
		"<A b='<'/>",
		"<A b='x'c='y'/>",
		"<1A/>",
		"<A><!-- x </A>",
		"<A",
		"<A/",
	};
	struct hb_arena a;
	struct hb_s3_xml *x;
	struct hb_err e;

	(void)state;
	hb_arena_init(&a, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%zu: %s\n", i, bad[i]);
		assert_int_equal(parse(bad[i], &a, &x, &e), HB_EPROTO);
		assert_non_null(strstr(e.msg, "xml: byte "));
	}
	/* An embedded NUL byte is refused too (it is not a Char). */
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_s3_xml_parse("<A>a\0b</A>", 10, &a, &x, &e),
			 HB_EPROTO);
	hb_arena_free(&a);
}

static void test_reader_limits(void **state)
{
	struct hb_arena a;
	struct hb_s3_xml *x;
	struct hb_err e;
	struct hb_buf b;

	(void)state;
	hb_arena_init(&a, 0);
	hb_buf_init(&b, 0);
	for (int i = 0; i < HB_S3_XML_DEPTH + 1; i++)
		assert_int_equal(hb_buf_puts(&b, "<a>"), 0);
	for (int i = 0; i < HB_S3_XML_DEPTH + 1; i++)
		assert_int_equal(hb_buf_puts(&b, "</a>"), 0);
	assert_int_equal(parse(b.data, &a, &x, &e), HB_EPROTO);
	assert_non_null(strstr(e.msg, "too deep"));
	/* One level less is fine. */
	hb_buf_reset(&b);
	for (int i = 0; i < HB_S3_XML_DEPTH; i++)
		assert_int_equal(hb_buf_puts(&b, "<a>"), 0);
	for (int i = 0; i < HB_S3_XML_DEPTH; i++)
		assert_int_equal(hb_buf_puts(&b, "</a>"), 0);
	assert_int_equal(parse(b.data, &a, &x, &e), 0);
	hb_buf_free(&b);
	hb_arena_free(&a);
}

#define LIST_HEAD                                                              \
	DECL "<ListBucketResult" NS "><Name>ckpt</Name><Prefix>job/</Prefix>"
#define ENTRY(k, size)                                                         \
	"<Contents><Key>" k "</Key><LastModified>2026-11-27T10:00:00.000Z"      \
	"</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;"    \
	"</ETag><Size>" size "</Size><StorageClass>STANDARD</StorageClass>"    \
	"</Contents>"

static void test_list(void **state)
{
	static const char page1[] =
		LIST_HEAD "<KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>"
		"<IsTruncated>true</IsTruncated><ContinuationToken>"
		"</ContinuationToken><NextContinuationToken>1ueGcxLPRx1Tr/"
		"XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
		ENTRY("job/0001/manifest.json", "1234")
		ENTRY("../x", "0")
		ENTRY("/etc/passwd", "18446744073709551615")
		"</ListBucketResult>";
	static const char page2[] =
		LIST_HEAD "<KeyCount>1</KeyCount><IsTruncated>false"
		"</IsTruncated>" ENTRY("a &amp; b &lt;c&gt; \xe2\x82\xac &#x1F600;",
				       "7")
		"</ListBucketResult>";
	static const char empty[] =
		LIST_HEAD "<KeyCount>0</KeyCount><IsTruncated>false"
		"</IsTruncated></ListBucketResult>";
	static const char encoded[] =
		LIST_HEAD "<EncodingType>url</EncodingType><IsTruncated>false"
		"</IsTruncated>" ENTRY("p/checkpoints/%1Bx.json", "1")
		ENTRY("a+b%20c%C2%9b", "2") "</ListBucketResult>";
	struct hb_s3_page p = { 0 };
	struct hb_err e = { 0 };

	(void)state;
	hb_arena_init(&p.arena, 0);
	assert_int_equal(hb_s3_parse_list(page1, strlen(page1), &p, &e), 0);
	assert_int_equal(p.n, 3);
	assert_true(p.truncated);
	assert_string_equal(p.next_token,
			    "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	assert_string_equal(p.v[0].key, "job/0001/manifest.json");
	assert_int_equal(p.v[0].size, 1234);
	assert_string_equal(p.v[0].etag, "9b2cf535f27731c974343645a3985328");
	assert_string_equal(p.v[0].last_modified, "2026-11-27T10:00:00.000Z");
	/* Hostile keys come back exactly: confining them is the caller's. */
	assert_string_equal(p.v[1].key, "../x");
	assert_string_equal(p.v[2].key, "/etc/passwd");
	assert_true(p.v[2].size == UINT64_MAX);
	hb_s3_page_free(&p);

	hb_arena_init(&p.arena, 0);
	assert_int_equal(hb_s3_parse_list(page2, strlen(page2), &p, &e), 0);
	assert_int_equal(p.n, 1);
	assert_false(p.truncated);
	assert_null(p.next_token);
	assert_string_equal(p.v[0].key,
			    "a & b <c> \xe2\x82\xac \xf0\x9f\x98\x80");
	hb_s3_page_free(&p);

	hb_arena_init(&p.arena, 0);
	assert_int_equal(hb_s3_parse_list(empty, strlen(empty), &p, &e), 0);
	assert_int_equal(p.n, 0);
	hb_s3_page_free(&p);

	/* EncodingType url: keys decoded, bytes XML cannot carry among
	 * them; '+' is a plus. */
	hb_arena_init(&p.arena, 0);
	assert_int_equal(hb_s3_parse_list(encoded, strlen(encoded), &p, &e),
			 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.v[0].key, "p/checkpoints/\x1bx.json");
	assert_string_equal(p.v[1].key, "a+b c\xc2\x9b");
	hb_s3_page_free(&p);
}

static void test_list_refuses(void **state)
{
	static const char *const bad[] = {
		/* a NUL in a key */
		LIST_HEAD ENTRY("a&#0;b", "1") "</ListBucketResult>",
		/* truncated without a token: the listing would never end */
		LIST_HEAD "<IsTruncated>true</IsTruncated>"
		"</ListBucketResult>",
		LIST_HEAD "<IsTruncated>yes</IsTruncated></ListBucketResult>",
		LIST_HEAD ENTRY("k", "-1") "</ListBucketResult>",
		LIST_HEAD ENTRY("k", "12x") "</ListBucketResult>",
		LIST_HEAD ENTRY("k", "99999999999999999999")
		"</ListBucketResult>",
		LIST_HEAD ENTRY("", "1") "</ListBucketResult>",
		LIST_HEAD "<Contents><Size>1</Size></Contents>"
		"</ListBucketResult>",
		DECL "<Error><Code>NoSuchBucket</Code></Error>",
		LIST_HEAD ENTRY("k", "1"), /* cut short */
		/* URL-encoded keys: a NUL, a bad or short escape */
		LIST_HEAD "<EncodingType>url</EncodingType>" ENTRY("a%00b", "1")
		"</ListBucketResult>",
		LIST_HEAD "<EncodingType>url</EncodingType>" ENTRY("a%zzb", "1")
		"</ListBucketResult>",
		LIST_HEAD "<EncodingType>url</EncodingType>" ENTRY("ab%4", "1")
		"</ListBucketResult>",
	};
	struct hb_s3_page p;
	struct hb_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&p, 0, sizeof(p));
		memset(&e, 0, sizeof(e));
		hb_arena_init(&p.arena, 0);
		print_message("%zu\n", i);
		assert_int_equal(hb_s3_parse_list(bad[i], strlen(bad[i]), &p,
						  &e), HB_EPROTO);
		assert_true(e.msg[0] != '\0');
		hb_s3_page_free(&p);
	}
}

static void test_error_and_mpu(void **state)
{
	static const char err[] =
		DECL "<Error><Code>SignatureDoesNotMatch</Code><Message>The "
		"request signature we calculated does not match the signature "
		"you provided.</Message><RequestId>tx1</RequestId></Error>";
	static const char create[] =
		DECL "<InitiateMultipartUploadResult" NS "><Bucket>b</Bucket>"
		"<Key>k</Key><UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3Zp"
		"ZS5tMnRzIHVwbG9hZA</UploadId></InitiateMultipartUploadResult>";
	static const char done[] =
		DECL "<CompleteMultipartUploadResult" NS "><Location>http://x/"
		"b/k</Location><Bucket>b</Bucket><Key>k</Key><ETag>&quot;3858f6"
		"2230ac3c915f300c664312c11f-9&quot;</ETag>"
		"</CompleteMultipartUploadResult>";
	static const char done_err[] =
		DECL "\n\n\n<Error><Code>InternalError</Code><Message>We "
		"encountered an internal error. Please try again.</Message>"
		"</Error>";
	char code[64], msg[128], *id = NULL;
	struct hb_err e = { 0 };

	(void)state;
	assert_int_equal(hb_s3_parse_error(err, strlen(err), code,
					   sizeof(code), msg, sizeof(msg)), 0);
	assert_string_equal(code, "SignatureDoesNotMatch");
	assert_string_equal(msg, "The request signature we calculated does "
				 "not match the signature you provided.");
	assert_int_equal(hb_s3_parse_error("<html/>", 7, code, sizeof(code),
					   msg, sizeof(msg)), HB_EPROTO);
	assert_int_equal(hb_s3_parse_mpu_create(create, strlen(create), &id,
						&e), 0);
	assert_string_equal(id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3Zp"
				"ZS5tMnRzIHVwbG9hZA");
	free(id);
	assert_int_equal(hb_s3_parse_mpu_create(done, strlen(done), &id, &e),
			 HB_EPROTO);
	assert_null(id);
	assert_int_equal(hb_s3_parse_mpu_complete(done, strlen(done), code,
						  sizeof(code), msg,
						  sizeof(msg)), 0);
	assert_int_equal(hb_s3_parse_mpu_complete(done_err, strlen(done_err),
						  code, sizeof(code), msg,
						  sizeof(msg)), HB_EAGAIN);
	assert_string_equal(code, "InternalError");
	assert_int_equal(hb_s3_parse_mpu_complete("   ", 3, code, sizeof(code),
						  msg, sizeof(msg)),
			 HB_EPROTO);
}

/* ListMultipartUploads, in the shape of AWS's documented example. */
static void test_mpu_list(void **state)
{
	static const char page[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListMultipartUploadsResult "
		"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
		"  <Bucket>bucket</Bucket>\n  <KeyMarker></KeyMarker>\n"
		"  <UploadIdMarker></UploadIdMarker>\n"
		"  <NextKeyMarker>my-movie.m2ts</NextKeyMarker>\n"
		"  <NextUploadIdMarker>YW55IGlkZWEgd2h5</NextUploadIdMarker>\n"
		"  <MaxUploads>2</MaxUploads>\n"
		"  <IsTruncated>true</IsTruncated>\n"
		"  <Upload>\n    <Key>my-divisor</Key>\n"
		"    <UploadId>XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5n</UploadId>\n"
		"    <StorageClass>STANDARD</StorageClass>\n"
		"    <Initiated>2010-11-10T20:48:33.000Z</Initiated>\n"
		"  </Upload>\n"
		"  <Upload>\n    <Key>my-movie.m2ts</Key>\n"
		"    <UploadId>YW55IGlkZWEgd2h5</UploadId>\n"
		"  </Upload>\n"
		"</ListMultipartUploadsResult>\n";
	static const char last[] =
		"<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
		"</ListMultipartUploadsResult>";
	static const char *const bad[] = {
		/* an upload without its id */
		"<ListMultipartUploadsResult><Upload><Key>k</Key></Upload>"
		"</ListMultipartUploadsResult>",
		/* truncated with no marker to go on from */
		"<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
		"</ListMultipartUploadsResult>",
		"<ListMultipartUploadsResult><IsTruncated>yes</IsTruncated>"
		"</ListMultipartUploadsResult>",
		"<ListBucketResult></ListBucketResult>",
	};
	struct hb_s3_uploads p = { 0 };
	struct hb_err e = { 0 };

	(void)state;
	hb_arena_init(&p.arena, 0);
	assert_int_equal(hb_s3_parse_mpu_list(page, strlen(page), &p, &e), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.v[0].key, "my-divisor");
	assert_string_equal(p.v[0].upload_id,
			    "XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5n");
	assert_string_equal(p.v[0].initiated, "2010-11-10T20:48:33.000Z");
	assert_string_equal(p.v[1].initiated, "");
	assert_true(p.truncated);
	assert_string_equal(p.next_key, "my-movie.m2ts");
	assert_string_equal(p.next_upload, "YW55IGlkZWEgd2h5");
	hb_arena_free(&p.arena);
	memset(&p, 0, sizeof(p));
	hb_arena_init(&p.arena, 0);
	assert_int_equal(hb_s3_parse_mpu_list(last, strlen(last), &p, &e), 0);
	assert_int_equal(p.n, 0);
	assert_false(p.truncated);
	hb_arena_free(&p.arena);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&p, 0, sizeof(p));
		memset(&e, 0, sizeof(e));
		hb_arena_init(&p.arena, 0);
		assert_int_equal(hb_s3_parse_mpu_list(bad[i], strlen(bad[i]),
						      &p, &e),
				 HB_EPROTO);
		assert_non_null(strstr(e.msg, i < 3 ? "ListMultipartUploads"
						    : "ListMultipartUploadsResult"));
		hb_arena_free(&p.arena);
	}
}

static void test_creds_file(void **state)
{
	static const char file[] =
		"# comment\n"
		"[default]\n"
		"aws_access_key_id = AKDEFAULT\n"
		"aws_secret_access_key=sdefault\n"
		"\n"
		"[profile ckpt]\r\n"
		"  aws_access_key_id\t=  AK:with:colons  \r\n"
		"; another comment\n"
		"aws_secret_access_key = s/ckpt+==\n"
		"aws_session_token = tok\n"
		"[half]\n"
		"aws_access_key_id = AKHALF\n";
	struct hb_s3_creds c = { 0 };
	struct hb_err e = { 0 };

	(void)state;
	assert_int_equal(hb_s3_creds_parse(file, strlen(file), "creds",
					   "default", &c, &e), 0);
	assert_string_equal(c.access_key, "AKDEFAULT");
	assert_string_equal(c.secret_key, "sdefault");
	assert_null(c.session_token);
	assert_string_equal(c.source, "creds [default]");
	hb_s3_creds_clear(&c);
	assert_int_equal(hb_s3_creds_parse(file, strlen(file), "creds", "ckpt",
					   &c, &e), 0);
	assert_string_equal(c.access_key, "AK:with:colons");
	assert_string_equal(c.secret_key, "s/ckpt+==");
	assert_string_equal(c.session_token, "tok");
	hb_s3_creds_clear(&c);
	assert_int_equal(hb_s3_creds_parse(file, strlen(file), "creds", "half",
					   &c, &e), HB_ENOENT);
	assert_non_null(strstr(e.msg, "lacks"));
	hb_s3_creds_clear(&c);
	memset(&e, 0, sizeof(e));
	assert_int_equal(hb_s3_creds_parse(file, strlen(file), "creds", "none",
					   &c, &e), HB_ENOENT);
	assert_string_equal(e.msg, "creds: no profile [none]");
	hb_s3_creds_clear(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_basics),
		cmocka_unit_test(test_reader_refuses),
		cmocka_unit_test(test_reader_limits),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_list_refuses),
		cmocka_unit_test(test_error_and_mpu),
		cmocka_unit_test(test_mpu_list),
		cmocka_unit_test(test_creds_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
