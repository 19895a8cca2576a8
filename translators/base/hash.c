/*
 * hash.c - SipHash-1-3 and its keys (hash.h; FNV-1a is inline there).
 */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "hpcbridge/hash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                               \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = ROTL(v1, 13);                                             \
		v1 ^= v0;                                                      \
		v0 = ROTL(v0, 32);                                             \
		v2 += v3;                                                      \
		v3 = ROTL(v3, 16);                                             \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = ROTL(v3, 21);                                             \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = ROTL(v1, 17);                                             \
		v1 ^= v2;                                                      \
		v2 = ROTL(v2, 32);                                             \
	} while (0)

uint64_t hb_siphash13(const struct hb_siphash_key *key, const void *p,
		      size_t n)
{
	const unsigned char *s = p;
	uint64_t v0 = key->k0 ^ 0x736f6d6570736575ull;
	uint64_t v1 = key->k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = key->k0 ^ 0x6c7967656e657261ull;
	uint64_t v3 = key->k1 ^ 0x7465646279746573ull;
	uint64_t m, b = (uint64_t)n << 56;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&m, s + i, 8); /* little-endian hosts; any order works */
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i < n; i++, j++)
		b |= (uint64_t)s[i] << (8 * j);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

void hb_siphash_key_new(struct hb_siphash_key *key)
{
	uint64_t k[2];
	struct timespec ts;

	if (getrandom(k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		k[0] = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		       (uint64_t)(uintptr_t)key;
		k[1] = (uint64_t)(uintptr_t)&k ^ 0x9e3779b97f4a7c15ull * k[0];
	}
	key->k0 = k[0];
	key->k1 = k[1];
}
