/*
 * fuzz_jobspec.c - the jobspec JSON reader (the daemon's stored form):
 * anything it accepts must write back to JSON that reads back the same.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "hpcbridge/translate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_jobspec a, b;
	struct hb_err err = {0};
	cJSON *in = cJSON_ParseWithLength((const char *)data, size);
	cJSON *ja, *jb;

	if (!in)
		return 0;
	hb_jobspec_init(&a, "fuzz.json");
	if (hb_jobspec_from_json(in, &a, &err) == 0) {
		ja = hb_jobspec_to_json(&a);
		hb_jobspec_init(&b, "fuzz.json");
		if (!ja || hb_jobspec_from_json(ja, &b, &err) != 0)
			abort();
		jb = hb_jobspec_to_json(&b);
		if (!jb || !cJSON_Compare(ja, jb, 1))
			abort();
		cJSON_Delete(ja);
		cJSON_Delete(jb);
		hb_jobspec_free(&b);
	} else if (!err.msg[0]) {
		abort();
	}
	cJSON_Delete(in);
	hb_jobspec_free(&a);
	return 0;
}
