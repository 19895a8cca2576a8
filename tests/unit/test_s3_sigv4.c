/*
 * test_s3_sigv4.c - the SigV4 signer against AWS's published examples:
 * six of the aws-sig-v4-test-suite requests (service "service", the
 * AKIDEXAMPLE key, 20150830T123600Z) and the four worked S3 examples of
 * the S3 API reference (examplebucket, AKIAIOSFODNN7EXAMPLE,
 * 20130524T000000Z).  Each checks the canonical request, the string to
 * sign and the signature; then the signing key, the URI encoding and the
 * refusals.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/s3_int.h"
#include "testutil.h"

#define SUITE_AK "AKIDEXAMPLE"
#define SUITE_SK "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_DATE "20150830T123600Z"
#define S3_AK "AKIAIOSFODNN7EXAMPLE"
#define S3_SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_DATE "20130524T000000Z"
#define EMPTY HB_S3_EMPTY_SHA256

struct vector {
	const char *name;
	struct hb_s3_sigreq r;
	const char *creq; /* NULL: not published with the example */
	const char *sts;
	const char *sig;
};

static const struct hb_s3_kv suite_hdrs[] = {
	{ "Host", "example.amazonaws.com" },
	{ "X-Amz-Date", SUITE_DATE },
};
static const struct hb_s3_kv order_query[] = {
	{ "Param2", "value2" },
	{ "Param1", "value1" },
};
static const struct hb_s3_kv trim_hdrs[] = {
	{ "Host", "example.amazonaws.com" },
	{ "My-Header1", " value1" },
	{ "My-Header2", " \"a   b   c\"" },
	{ "X-Amz-Date", SUITE_DATE },
};
static const struct hb_s3_kv form_hdrs[] = {
	{ "Content-Type", "application/x-www-form-urlencoded" },
	{ "Host", "example.amazonaws.com" },
	{ "X-Amz-Date", SUITE_DATE },
};
static const struct hb_s3_kv get_obj_hdrs[] = {
	{ "Host", "examplebucket.s3.amazonaws.com" },
	{ "Range", "bytes=0-9" },
	{ "x-amz-content-sha256", EMPTY },
	{ "x-amz-date", S3_DATE },
};
#define PUT_SHA "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
static const struct hb_s3_kv put_obj_hdrs[] = {
	{ "Host", "examplebucket.s3.amazonaws.com" },
	{ "Date", "Fri, 24 May 2013 00:00:00 GMT" },
	{ "x-amz-date", S3_DATE },
	{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
	{ "x-amz-content-sha256", PUT_SHA },
};
static const struct hb_s3_kv bucket_hdrs[] = {
	{ "Host", "examplebucket.s3.amazonaws.com" },
	{ "x-amz-date", S3_DATE },
	{ "x-amz-content-sha256", EMPTY },
};
static const struct hb_s3_kv lifecycle_query[] = { { "lifecycle", "" } };
static const struct hb_s3_kv list_query[] = {
	{ "prefix", "J" },
	{ "max-keys", "2" },
};

#define SUITE(m, p, q, nq, h, nh, hash)                                        \
	{ .method = m, .path = p, .query = q, .nquery = nq, .headers = h,      \
	  .nheaders = nh, .payload_hash = hash, .amz_date = SUITE_DATE,        \
	  .region = "us-east-1", .service = "service",                         \
	  .access_key = SUITE_AK, .secret_key = SUITE_SK }
#define S3(m, p, q, nq, h, nh, hash)                                           \
	{ .method = m, .path = p, .query = q, .nquery = nq, .headers = h,      \
	  .nheaders = nh, .payload_hash = hash, .amz_date = S3_DATE,           \
	  .region = "us-east-1", .service = "s3", .access_key = S3_AK,         \
	  .secret_key = S3_SK }
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct vector vectors[] = {
	{ "get-vanilla",
	  SUITE("GET", "/", NULL, 0, suite_hdrs, 2, EMPTY),
	  "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n"
	  "\nhost;x-amz-date\n" EMPTY,
	  "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/"
	  "aws4_request\n"
	  "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
	{ "get-vanilla-query-order-key-case",
	  SUITE("GET", "/", order_query, 2, suite_hdrs, 2, EMPTY),
	  "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\n"
	  "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY,
	  NULL,
	  "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
	{ "post-vanilla",
	  SUITE("POST", "/", NULL, 0, suite_hdrs, 2, EMPTY),
	  "POST\n/\n\nhost:example.amazonaws.com\n"
	  "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY,
	  NULL,
	  "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
	{ "get-utf8",
	  SUITE("GET", "/\xe1\x88\xb4", NULL, 0, suite_hdrs, 2, EMPTY),
	  "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\n"
	  "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY,
	  NULL,
	  "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85" },
	{ "get-header-value-trim",
	  SUITE("GET", "/", NULL, 0, trim_hdrs, 4, EMPTY),
	  "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\n"
	  "my-header2:\"a b c\"\nx-amz-date:20150830T123600Z\n\n"
	  "host;my-header1;my-header2;x-amz-date\n" EMPTY,
	  NULL,
	  "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
	{ "post-x-www-form-urlencoded",
	  SUITE("POST", "/", NULL, 0, form_hdrs, 3,
		"9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"),
	  "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\n"
	  "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
	  "content-type;host;x-amz-date\n"
	  "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
	  NULL,
	  "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a" },
	{ "S3 GET Object",
	  S3("GET", "/test.txt", NULL, 0, get_obj_hdrs, 4, EMPTY),
	  "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
	  "range:bytes=0-9\nx-amz-content-sha256:" EMPTY "\n"
	  "x-amz-date:20130524T000000Z\n\n"
	  "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY,
	  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/"
	  "aws4_request\n"
	  "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
	  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41" },
	{ "S3 PUT Object",
	  S3("PUT", "/test$file.text", NULL, 0, put_obj_hdrs, 5, PUT_SHA),
	  "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\n"
	  "host:examplebucket.s3.amazonaws.com\n"
	  "x-amz-content-sha256:" PUT_SHA "\nx-amz-date:20130524T000000Z\n"
	  "x-amz-storage-class:REDUCED_REDUNDANCY\n\n"
	  "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
	  PUT_SHA,
	  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/"
	  "aws4_request\n"
	  "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
	  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd" },
	{ "S3 GET Bucket Lifecycle",
	  S3("GET", "/", lifecycle_query, 1, bucket_hdrs, 3, EMPTY),
	  "GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\n"
	  "x-amz-content-sha256:" EMPTY "\nx-amz-date:20130524T000000Z\n\n"
	  "host;x-amz-content-sha256;x-amz-date\n" EMPTY,
	  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/"
	  "aws4_request\n"
	  "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
	  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543" },
	{ "S3 Get Bucket (List Objects)",
	  S3("GET", "/", list_query, 2, bucket_hdrs, 3, EMPTY),
	  "GET\n/\nmax-keys=2&prefix=J\nhost:examplebucket.s3.amazonaws.com\n"
	  "x-amz-content-sha256:" EMPTY "\nx-amz-date:20130524T000000Z\n\n"
	  "host;x-amz-content-sha256;x-amz-date\n" EMPTY,
	  "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/"
	  "aws4_request\n"
	  "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
	  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7" },
};

static void test_published_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(vectors); i++) {
		const struct vector *v = &vectors[i];
		struct hb_s3_sig sig = { 0 };

		print_message("%s\n", v->name);
		assert_int_equal(hb_s3_sign(&v->r, &sig), 0);
		if (v->creq)
			assert_string_equal(sig.creq.data, v->creq);
		if (v->sts)
			assert_string_equal(sig.sts.data, v->sts);
		assert_string_equal(sig.signature, v->sig);
		hb_s3_sig_free(&sig);
	}
}

/* The whole Authorization header of get-vanilla, as the suite gives it. */
static void test_authorization_header(void **state)
{
	struct hb_s3_sig sig = { 0 };

	(void)state;
	assert_int_equal(hb_s3_sign(&vectors[0].r, &sig), 0);
	assert_string_equal(sig.auth.data,
		"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
		"service/aws4_request, SignedHeaders=host;x-amz-date, "
		"Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8a"
		"ae1d763fbf31");
	assert_string_equal(sig.path.data, "/");
	assert_int_equal(sig.query.len, 0);
	hb_s3_sig_free(&sig);
}

/* AWS's signing-key example (IAM, us-east-1, 20120215). */
static void test_signing_key(void **state)
{
	unsigned char k[32];
	char hex[65];

	(void)state;
	assert_int_equal(hb_s3_signing_key(SUITE_SK, "20120215", "us-east-1",
					   "iam", k), 0);
	hb_s3_hex(k, 32, hex);
	assert_string_equal(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a0"
				 "00a1a9e090d414db404d");
	assert_int_equal(hb_s3_signing_key(SUITE_SK, "20150830", "us-east-1",
					   "service", k), 0);
	hb_s3_hex(k, 32, hex);
	assert_string_equal(hex, "938127b5336810ddb6a5d6af445fcac9e371f9ed418e"
				 "d386b022aed82901be75");
}

static void test_uri_encode(void **state)
{
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_s3_uri_encode(&b, "a b/c~d+e=f&../\xff", 16, 1),
			 0);
	assert_string_equal(b.data, "a%20b/c~d%2Be%3Df%26../%FF");
	hb_buf_reset(&b);
	assert_int_equal(hb_s3_uri_encode(&b, "x/y", 3, 0), 0);
	assert_string_equal(b.data, "x%2Fy");
	hb_buf_free(&b);
}

/* Query values are encoded once, '=' and '&' included, and the query the
 * client sends is the one it signed; "uploads" is written "uploads=". */
static void test_query_and_path(void **state)
{
	static const struct hb_s3_kv q[] = {
		{ "uploads", "" },
		{ "prefix", "a b&c=d/" },
		{ "continuation-token", "1/+x==" },
	};
	struct hb_s3_sigreq r = S3("POST", "/bucket/k ey/../x", q, 3,
				   bucket_hdrs, 3, EMPTY);
	struct hb_s3_sig sig = { 0 };

	(void)state;
	assert_int_equal(hb_s3_sign(&r, &sig), 0);
	assert_string_equal(sig.query.data,
			    "continuation-token=1%2F%2Bx%3D%3D&"
			    "prefix=a%20b%26c%3Dd%2F&uploads=");
	assert_string_equal(sig.path.data, "/bucket/k%20ey/../x");
	assert_non_null(strstr(sig.creq.data, "\n/bucket/k%20ey/../x\n"));
	hb_s3_sig_free(&sig);
}

/* A name given twice signs its values joined, in the order given
 * (get-header-key-duplicate's rule). */
static void test_duplicate_header(void **state)
{
	static const struct hb_s3_kv h[] = {
		{ "Host", "example.amazonaws.com" },
		{ "My-Header1", "value2" },
		{ "My-Header1", "value2" },
		{ "My-Header1", "value1" },
		{ "X-Amz-Date", SUITE_DATE },
	};
	struct hb_s3_sigreq r = SUITE("GET", "/", NULL, 0, h, 5, EMPTY);
	struct hb_s3_sig sig = { 0 };

	(void)state;
	assert_int_equal(hb_s3_sign(&r, &sig), 0);
	assert_non_null(strstr(sig.creq.data,
			       "\nmy-header1:value2,value2,value1\n"));
	assert_non_null(strstr(sig.creq.data,
			       "\nhost;my-header1;x-amz-date\n"));
	hb_s3_sig_free(&sig);
}

static void test_refusals(void **state)
{
	static const struct hb_s3_kv bad_name[] = { { "Bad Name", "x" } };
	static const struct hb_s3_kv bad_value[] = { { "X-A", "a\r\nb: c" } };
	struct hb_s3_sigreq r = SUITE("GET", "/", NULL, 0, bad_name, 1, EMPTY);
	struct hb_s3_sig sig = { 0 };

	(void)state;
	assert_int_equal(hb_s3_sign(&r, &sig), HB_EINVAL);
	hb_s3_sig_free(&sig);
	r.headers = bad_value;
	assert_int_equal(hb_s3_sign(&r, &sig), HB_EINVAL);
	hb_s3_sig_free(&sig);
	r.headers = suite_hdrs;
	r.amz_date = "2015";
	assert_int_equal(hb_s3_sign(&r, &sig), HB_EINVAL);
	hb_s3_sig_free(&sig);
}

static void test_amz_date(void **state)
{
	char d[17];

	(void)state;
	hb_s3_amz_date(1440938160, d);
	assert_string_equal(d, SUITE_DATE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_published_vectors),
		cmocka_unit_test(test_authorization_header),
		cmocka_unit_test(test_signing_key),
		cmocka_unit_test(test_uri_encode),
		cmocka_unit_test(test_query_and_path),
		cmocka_unit_test(test_duplicate_header),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_amz_date),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
