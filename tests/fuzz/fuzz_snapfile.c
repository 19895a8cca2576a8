/*
 * fuzz_snapfile.c - hb_snapfile_parse must never read outside the image
 * or crash, must name what it refuses, and what it accepts must be a
 * body inside the image followed by its NUL, with a meta that
 * hb_snapfile_write would also accept.  An image whose checksum is
 * resealed is fed too, so the fields behind the checksum are reached.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/hash.h"
#include "hpcbridge/snapfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *img, size_t size)
{
	struct hb_snapfile_meta m;
	struct hb_err err = { 0 };
	const char *body = NULL;
	size_t blen = 0;
	int rc = hb_snapfile_parse(img, size, &m, &body, &blen, &err);

	if (rc) {
		if (rc != HB_EPROTO || !err.msg[0] || body)
			abort();
		return;
	}
	if (body != (const char *)img + HB_SNAPFILE_HEADER ||
	    blen != size - HB_SNAPFILE_HEADER - 1 || body[blen] || !m.version ||
	    m.max_age_ms <= 0 || m.lease_lo > m.lease_hi ||
	    !m.lease_lo != !m.lease_hi)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_siphash_key key = { HB_SNAPFILE_KEY0, HB_SNAPFILE_KEY1 };
	uint8_t *copy;
	uint64_t sum;

	/* exactly size bytes on the heap, so ASan sees any read past it */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	check(copy, size);
	if (size > 16) {
		sum = hb_siphash13(&key, copy + 16, size - 17);
		for (int i = 0; i < 8; i++)
			copy[8 + i] = (uint8_t)(sum >> (8 * i));
		check(copy, size);
	}
	free(copy);
	return 0;
}
