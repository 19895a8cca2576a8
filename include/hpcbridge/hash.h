/*
 * hash.h - the project's two hashes.
 *
 * FNV-1a (64 bits) where the input is ours or the result must be the same
 * in every process and on every run: pilot buckets, content digests,
 * tables keyed by names the cluster gives us.  SipHash-1-3 under a random
 * key where a user chooses the keys of a table (environment names in a
 * script), so no one can make every key land in one chain.
 */
#ifndef HPCBRIDGE_HASH_H
#define HPCBRIDGE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a offset basis: the hash of nothing. */
#define HB_FNV1A_INIT 0xcbf29ce484222325ull

/* Extend h (HB_FNV1A_INIT to start) with n bytes at p. */
static inline uint64_t hb_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* Extend h with the bytes of s before its NUL (NULL: none). */
static inline uint64_t hb_fnv1a_str(uint64_t h, const char *s)
{
	if (s)
		for (; *s; s++) {
			h ^= (unsigned char)*s;
			h *= 1099511628211ull;
		}
	return h;
}

/* Extend h with the bytes of s and its NUL (NULL hashes as ""), so that
 * a run of strings cannot be read another way: "ab","c" is not "a","bc". */
static inline uint64_t hb_fnv1a_strz(uint64_t h, const char *s)
{
	return hb_fnv1a_str(h, s) * 1099511628211ull; /* the NUL: h ^ 0 = h */
}

/* A SipHash key, drawn from getrandom() (the clock and addresses stand
 * in before the kernel's pool is ready, early in boot). */
struct hb_siphash_key {
	uint64_t k0, k1;
};
void hb_siphash_key_new(struct hb_siphash_key *key);

/* SipHash-1-3 of n bytes at p under key. */
uint64_t hb_siphash13(const struct hb_siphash_key *key, const void *p,
		      size_t n);

#endif
