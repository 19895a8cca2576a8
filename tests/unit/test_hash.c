/*
 * test_hash.c - the shared hashes and clocks (translators/base).
 *
 * FNV-1a against the published 64-bit test vectors; SipHash-1-3 for the
 * properties its users rely on: the same key gives the same hash, another
 * key or another length another hash.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/hash.h"
#include "testutil.h"

static void test_fnv1a_vectors(void **state)
{
	(void)state;
	assert_int_equal(hb_fnv1a(HB_FNV1A_INIT, "", 0), 0xcbf29ce484222325ull);
	assert_int_equal(hb_fnv1a(HB_FNV1A_INIT, "a", 1), 0xaf63dc4c8601ec8cull);
	assert_int_equal(hb_fnv1a_str(HB_FNV1A_INIT, "foobar"),
			 0x85944171f73967e8ull);
	/* Extending is the same as hashing the concatenation. */
	assert_int_equal(hb_fnv1a_str(hb_fnv1a_str(HB_FNV1A_INIT, "foo"), "bar"),
			 hb_fnv1a(HB_FNV1A_INIT, "foobar", 6));
	assert_int_equal(hb_fnv1a_str(HB_FNV1A_INIT, NULL), HB_FNV1A_INIT);
	/* A NUL inside the bytes counts. */
	assert_int_not_equal(hb_fnv1a(HB_FNV1A_INIT, "a\0b", 3),
			     hb_fnv1a(HB_FNV1A_INIT, "ab", 2));
}

/* A string with its NUL: what the fingerprints and hb_place_hash() chain. */
static void test_fnv1a_strz(void **state)
{
	uint64_t h = HB_FNV1A_INIT;

	(void)state;
	assert_int_equal(hb_fnv1a_strz(h, "ab"), hb_fnv1a(h, "ab", 3));
	assert_int_equal(hb_fnv1a_strz(h, ""), hb_fnv1a(h, "", 1));
	/* NULL is "" */
	assert_int_equal(hb_fnv1a_strz(h, NULL), hb_fnv1a(h, "", 1));
	assert_int_not_equal(hb_fnv1a_strz(h, NULL), h);
	/* the NUL keeps a run of strings apart */
	assert_int_not_equal(hb_fnv1a_strz(hb_fnv1a_strz(h, "ab"), "c"),
			     hb_fnv1a_strz(hb_fnv1a_strz(h, "a"), "bc"));
	/* FNV-1a 64 of the two bytes "a\0" */
	assert_int_equal(hb_fnv1a_strz(h, "a"), 0x089be207b544f1e4ull);
}

static void test_siphash_keyed(void **state)
{
	struct hb_siphash_key k1 = { 1, 2 }, k2 = { 1, 3 }, r1, r2;
	const char *s = "HB_SOME_ENVIRONMENT_NAME";

	(void)state;
	assert_int_equal(hb_siphash13(&k1, s, strlen(s)),
			 hb_siphash13(&k1, s, strlen(s)));
	assert_int_not_equal(hb_siphash13(&k1, s, strlen(s)),
			     hb_siphash13(&k2, s, strlen(s)));
	assert_int_not_equal(hb_siphash13(&k1, s, 8), hb_siphash13(&k1, s, 9));
	/* Every length across the 8-byte blocks. */
	for (size_t n = 0; n < 24; n++)
		assert_int_not_equal(hb_siphash13(&k1, s, n),
				     hb_siphash13(&k1, s, n + 1));
	hb_siphash_key_new(&r1);
	hb_siphash_key_new(&r2);
	assert_false(r1.k0 == r2.k0 && r1.k1 == r2.k1);
}

static void test_clocks(void **state)
{
	int64_t m0 = hb_clock_mono_ms(), w0 = hb_clock_wall_ms();

	(void)state;
	usleep(20000);
	assert_true(hb_clock_mono_ms() - m0 >= 19);
	/* The wall clock is in milliseconds since 1970: after 2020. */
	assert_true(w0 > 1577836800000ll);
	assert_true(hb_clock_wall_ms() >= w0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_vectors),
		cmocka_unit_test(test_fnv1a_strz),
		cmocka_unit_test(test_siphash_keyed),
		cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
