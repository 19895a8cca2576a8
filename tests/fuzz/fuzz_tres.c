/*
 * fuzz_tres.c - hb_slurmc_parse_tres (Slurm's TRES text, from slurmctld
 * and slurmdbd) must never crash, must leave its output as it was on
 * error and say which item is wrong, and what it accepts must hold
 * together: GPU types unique, NUL-terminated and within the bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/slurmc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_slurmc_tres t, before;
	struct hb_err err = { 0 };
	char *s = malloc(size + 1);
	int rc;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&t, 0x5a, sizeof(t));
	before = t;
	rc = hb_slurmc_parse_tres(s, &t, &err);
	if (rc) {
		if (!err.msg[0] || memcmp(&t, &before, sizeof(t)))
			abort();
	} else {
		if (t.ngpu > HB_SLURMC_GPU_TYPES)
			abort();
		for (uint32_t i = 0; i < t.ngpu; i++) {
			if (!memchr(t.gpu[i].type, '\0', sizeof(t.gpu[i].type)))
				abort();
			for (uint32_t k = 0; k < i; k++)
				if (!strcmp(t.gpu[i].type, t.gpu[k].type))
					abort();
		}
	}
	free(s);
	return 0;
}
