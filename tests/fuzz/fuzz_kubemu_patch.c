/*
 * fuzz_kubemu_patch.c - the emulator's patch code (tests/kubemu/patch.c)
 * over untrusted bodies: the input is an object and a patch, separated by
 * a NUL byte, both JSON.  The patch is applied as a merge patch, as a JSON
 * patch when it is an array, and as a server-side apply configuration
 * (against the object, and creating), and the managed fields of each
 * change are tracked.  Nothing may crash or leak; a JSON patch that fails
 * must say why; what merge and apply produce must be objects.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The emulator is a program, not a library: take its sources. */
#include "../kubemu/patch.c"
#include "../kubemu/util.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	cJSON *doc, *patch, *x = NULL, *out = NULL;
	struct hb_err err = { 0 };
	int force;

	if (!nul || size > 65536)
		return 0;
	doc = cJSON_ParseWithLength((const char *)data, (size_t)(nul - data));
	patch = cJSON_ParseWithLength((const char *)nul + 1,
				      size - (size_t)(nul - data) - 1);
	if (!cJSON_IsObject(doc) || !patch)
		goto out;
	force = (int)(size & 1);

	/* merge patch */
	x = cJSON_Duplicate(doc, 1);
	if (km_merge_patch(&x, patch) == 0) {
		cJSON *fs = km_fields_diff(doc, x);

		cJSON_Delete(fs);
		if (cJSON_IsObject(x)) {
			km_track_update(x, doc, "fuzz", NULL, 1, "v1");
			km_track_update(x, doc, "fuzz", "status", 1, "v1");
		}
	}
	cJSON_Delete(x);

	/* JSON patch */
	if (cJSON_IsArray(patch)) {
		x = cJSON_Duplicate(doc, 1);
		if (km_json_patch(&x, patch, &err) && !err.msg[0])
			abort();
		cJSON_Delete(x);
	}

	/* server-side apply, over doc and as a create */
	if (cJSON_IsObject(patch)) {
		if (km_apply(doc, patch, "fuzz", NULL, 1, force, "v1", &out,
			     &err) == 0) {
			if (!cJSON_IsObject(out))
				abort();
			/* a second manager applies the same */
			cJSON *again = NULL;

			km_apply(out, patch, "other", "status", 1, !force, "v1",
				 &again, &err);
			cJSON_Delete(again);
		}
		cJSON_Delete(out);
		out = NULL;
		if (km_apply(NULL, patch, "fuzz", NULL, 0, 0, "v1", &out,
			     &err) == 0 &&
		    !cJSON_IsObject(out))
			abort();
		cJSON_Delete(out);
	}
	x = km_fields_of(doc);
	cJSON_Delete(x);
out:
	cJSON_Delete(doc);
	cJSON_Delete(patch);
	return 0;
}
