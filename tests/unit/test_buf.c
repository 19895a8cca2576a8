/*
 * test_buf.c - growable buffers and arenas.
 */
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "testutil.h"

static void test_append_and_cap(void **state)
{
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 10);
	assert_int_equal(hb_buf_puts(&b, "hello"), 0);
	assert_int_equal(hb_buf_printf(&b, "-%d", 42), 0);
	assert_string_equal(b.data, "hello-42");
	/* Past the cap: refused, contents unchanged. */
	assert_int_equal(hb_buf_puts(&b, "xyz"), HB_ETOOBIG);
	assert_string_equal(b.data, "hello-42");
	assert_int_equal(b.len, 8);
	assert_int_equal(hb_buf_printf(&b, "%s", "abc"), HB_ETOOBIG);
	assert_string_equal(b.data, "hello-42");
	assert_int_equal(hb_buf_putc(&b, '!'), 0);
	assert_int_equal(hb_buf_putc(&b, '!'), 0);
	assert_int_equal(hb_buf_putc(&b, '!'), HB_ETOOBIG);
	assert_int_equal(b.len, 10);
	hb_buf_free(&b);
	hb_buf_free(&b); /* twice is harmless */
}

static void test_printf_grows(void **state)
{
	struct hb_buf b;
	char big[3000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_printf(&b, "<%s>", big), 0);
	assert_int_equal(b.len, sizeof(big) + 1);
	assert_int_equal(b.data[0], '<');
	assert_int_equal(b.data[b.len - 1], '>');
	hb_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	char *s = hb_buf_steal(&b);
	assert_string_equal(s, "");
	assert_null(b.data);
	free(s);
}

static void test_arena(void **state)
{
	struct hb_arena a;
	char *p, *q, *big;

	(void)state;
	hb_arena_init(&a, 100000);
	p = hb_arena_strdup(&a, "abc");
	q = hb_arena_printf(&a, "%s-%d", p, 7);
	assert_string_equal(p, "abc");
	assert_string_equal(q, "abc-7");
	assert_int_equal((uintptr_t)hb_arena_alloc(&a, 3) % 16, 0);
	big = hb_arena_alloc(&a, 20000); /* bigger than a chunk */
	assert_non_null(big);
	memset(big, 1, 20000);
	/* Small allocations still fit in the current chunk. */
	assert_non_null(hb_arena_strdup(&a, "more"));
	assert_null(hb_arena_alloc(&a, 200000)); /* past max */
	hb_arena_free(&a);
	/* Rounding up may not carry the total past the cap. */
	hb_arena_init(&a, 100);
	assert_non_null(hb_arena_alloc(&a, 96)); /* 16-byte multiple */
	assert_null(hb_arena_alloc(&a, 1000000));
	assert_null(hb_arena_alloc(&a, 1000));
	assert_null(hb_arena_strdup(&a, NULL));
	hb_arena_free(&a);
	hb_arena_free(&a);
}

static void test_arena_reset(void **state)
{
	struct hb_arena a;
	char *p[64];

	(void)state;
	hb_arena_init(&a, 0);
	for (int round = 0; round < 3; round++) {
		/* Several chunks' worth, then a reset: the memory is kept
		 * and handed out again; old pointers are no longer owned. */
		for (int i = 0; i < 64; i++) {
			p[i] = hb_arena_alloc(&a, 1000);
			assert_non_null(p[i]);
			assert_true(hb_arena_owns(&a, p[i]));
			assert_int_equal(p[i][999], 0); /* zeroed */
			memset(p[i], 'x', 1000);
		}
		/* 1000 bytes each, rounded to 16 unless blocks are exact
		 * (under the sanitizers) */
		assert_in_range(a.total, 64 * 1000, 64 * 1008);
		hb_arena_reset(&a);
		assert_int_equal(a.total, 0);
		assert_false(hb_arena_owns(&a, p[0]));
		assert_false(hb_arena_owns(&a, p[63]));
	}
	hb_arena_reset(&a); /* empty: fine */
	hb_arena_free(&a);
}

static void test_put_u64(void **state)
{
	struct hb_buf b;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_put_u64(&b, 0), 0);
	assert_int_equal(hb_buf_putc(&b, ' '), 0);
	assert_int_equal(hb_buf_put_u64(&b, 42), 0);
	assert_int_equal(hb_buf_putc(&b, ' '), 0);
	assert_int_equal(hb_buf_put_u64(&b, UINT64_MAX), 0);
	assert_string_equal(b.data, "0 42 18446744073709551615");
	hb_buf_free(&b);
	hb_buf_init(&b, 3); /* the cap holds */
	assert_int_equal(hb_buf_put_u64(&b, 1234), HB_ETOOBIG);
	hb_buf_free(&b);
}

static void test_base64(void **state)
{
	static const struct {
		const char *raw, *enc;
	} v[] = {{"", ""},	   {"f", "Zg=="},	{"fo", "Zm8="},
		 {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
		 {"foobar", "Zm9vYmFy"}};
	static const char *const bad[] = {"Zg=",  "Zg==Zg==", "Z===", "Zm9v\n",
					  "Zm!v", "=Zg=",     "Zg=a"};
	unsigned char all[256];
	struct hb_buf b, d;

	(void)state;
	hb_buf_init(&b, 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		hb_buf_reset(&b);
		assert_int_equal(hb_buf_base64(&b, v[i].raw, strlen(v[i].raw)),
				 0);
		assert_string_equal(b.len ? b.data : "", v[i].enc);
		hb_buf_reset(&b);
		assert_int_equal(
		    hb_buf_unbase64(&b, v[i].enc, strlen(v[i].enc)), 0);
		assert_int_equal(b.len, strlen(v[i].raw));
		assert_memory_equal(b.len ? b.data : "", v[i].raw, b.len);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hb_buf_reset(&b);
		assert_int_equal(hb_buf_puts(&b, "keep"), 0);
		assert_int_equal(hb_buf_unbase64(&b, bad[i], strlen(bad[i])),
				 HB_EINVAL);
		assert_string_equal(b.data, "keep");
	}
	/* Every byte value round-trips. */
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	hb_buf_init(&d, 0);
	hb_buf_reset(&b);
	assert_int_equal(hb_buf_base64(&b, all, sizeof(all)), 0);
	assert_int_equal(hb_buf_unbase64(&d, b.data, b.len), 0);
	assert_int_equal(d.len, sizeof(all));
	assert_memory_equal(d.data, all, sizeof(all));
	hb_buf_free(&d);
	hb_buf_free(&b);
}

static void test_errnames(void **state)
{
	(void)state;
	for (int c = 0; c >= -17; c--) {
		const char *n = hb_errname(c);

		assert_non_null(n);
		assert_int_equal(hb_errcode(n), c);
		assert_string_not_equal(hb_strerror(c), "unknown error");
	}
	assert_string_equal(hb_errname(HB_EPERM), "EPERM");
	assert_null(hb_errname(-1000));
	assert_int_equal(hb_errcode("ENOSUCH"), HB_EINVAL);
	assert_int_equal(hb_errcode(NULL), HB_EINVAL);
}

static void test_err(void **state)
{
	struct hb_err err = {0};

	(void)state;
	assert_int_equal(hb_err_set(&err, HB_EINVAL, "job.sh", 7, "bad %s",
				    "time"),
			 HB_EINVAL);
	assert_string_equal(err.msg, "job.sh:7: bad time");
	/* The first error is kept. */
	hb_err_set(&err, HB_ERANGE, "other", 1, "later");
	assert_string_equal(err.msg, "job.sh:7: bad time");
	assert_int_equal(err.code, HB_EINVAL);
	memset(&err, 0, sizeof(err));
	hb_err_set(&err, HB_EIO, "f", 0, "x");
	assert_string_equal(err.msg, "f: x");
	assert_string_equal(hb_strerror(HB_ETOOBIG), "too large");
	assert_string_equal(hb_strerror(12345), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_and_cap),
		cmocka_unit_test(test_printf_grows),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_arena_reset),
		cmocka_unit_test(test_put_u64),
		cmocka_unit_test(test_errnames),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_err),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
