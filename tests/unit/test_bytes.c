/*
 * test_bytes.c - the sixteen-byte masks against a byte-by-byte reference.
 *
 * CMake builds this file twice: as it is (SSE2 on x86-64) and with
 * __SSE2__ undefined (test_bytes_portable), so both implementations are
 * held to the same answers.
 */
#include "testutil.h"

#include "hpcbridge/bytes.h"

static unsigned ref_mask(const unsigned char *b, int (*in)(unsigned char))
{
	unsigned m = 0;

	for (int i = 0; i < 16; i++)
		if (in(b[i]))
			m |= 1u << i;
	return m;
}

static int is_dollar(unsigned char c)
{
	return c == '$';
}

static int is_ctl(unsigned char c)
{
	return c < 0x20 || c >= 0x7f;
}

static int is_quote_care(unsigned char c)
{
	return is_ctl(c) || c == '"' || c == '\\';
}

static int is_rare(unsigned char c)
{
	return is_ctl(c) && c != '\n' && c != '\t';
}

static int is_key_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' ||
	       c == '-';
}

static int is_high_range(unsigned char c)
{
	return c >= 0xc2 && c <= 0xf4;
}

/* The combinations the writers use, on one block. */
static void check_block(const unsigned char *b)
{
	hb_v16 x = hb_v16_load(b);
	unsigned care = hb_v16_mask(hb_v16_or(
		hb_v16_ctl(x),
		hb_v16_or(hb_v16_eq(x, '"'), hb_v16_eq(x, '\\'))));
	unsigned rare = hb_v16_mask(hb_v16_andnot(
		hb_v16_ctl(x),
		hb_v16_or(hb_v16_eq(x, '\n'), hb_v16_eq(x, '\t'))));

	unsigned key = hb_v16_mask(hb_v16_or(
		hb_v16_or(hb_v16_alpha(x), hb_v16_range(x, '-', '9')),
		hb_v16_eq(x, '_')));

	assert_int_equal(key, ref_mask(b, is_key_byte));
	assert_int_equal(hb_v16_mask(hb_v16_range(x, 0xc2, 0xf4)),
			 ref_mask(b, is_high_range));
	assert_int_equal(hb_v16_mask(hb_v16_eq(x, '$')), ref_mask(b, is_dollar));
	assert_int_equal(hb_v16_mask(hb_v16_ctl(x)), ref_mask(b, is_ctl));
	assert_int_equal(care, ref_mask(b, is_quote_care));
	assert_int_equal(rare, ref_mask(b, is_rare));
	if (care)
		assert_true(is_quote_care(b[hb_v16_first(care)]));
}

/* Every byte value at every position of a block of plain letters. */
static void test_every_byte_everywhere(void **state)
{
	unsigned char b[17] = "abcdefghijklmnop";

	(void)state;
	for (int pos = 0; pos < 16; pos++) {
		for (int v = 0; v < 256; v++) {
			b[pos] = (unsigned char)v;
			check_block(b);
			if (is_ctl((unsigned char)v))
				assert_int_equal(
					hb_v16_first(hb_v16_mask(hb_v16_ctl(
						hb_v16_load(b)))),
					pos);
		}
		b[pos] = (unsigned char)('a' + pos);
	}
}

/* Random blocks, from an unaligned address. */
static void test_random_blocks(void **state)
{
	unsigned char buf[64];
	uint32_t seed = 12345;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (unsigned char)(seed >> 16);
		}
		check_block(buf + 1 + round % 40);
	}
}

static void test_first(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 16; i++) {
		assert_int_equal(hb_v16_first(1u << i), i);
		assert_int_equal(hb_v16_first((1u << i) | 0x8000u), i);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_byte_everywhere),
		cmocka_unit_test(test_random_blocks),
		cmocka_unit_test(test_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
