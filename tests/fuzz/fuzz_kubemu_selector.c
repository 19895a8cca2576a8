/*
 * fuzz_kubemu_selector.c - the emulator's label and field selector parser
 * (tests/kubemu/selector.c) over untrusted query strings.  The first byte
 * picks the grammar (even: labels, odd: fields); the rest is the selector.
 * Nothing may crash or leak; a parse error must come with a message; an
 * accepted selector must match or not match a few fixed objects without
 * trouble, and the empty selector must match everything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The emulator is a program, not a library: take its sources. */
#include "../kubemu/selector.c"
#include "../kubemu/util.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cJSON *objects;

static void setup(void)
{
	static const char *const docs =
		"[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
		"\"labels\":{\"app\":\"web\",\"tier\":\"front\",\"n\":\"7\","
		"\"example.com/x\":\"\"}},\"status\":{\"phase\":\"Running\"}},"
		"{\"metadata\":{\"name\":\"b\",\"labels\":{}},\"spec\":"
		"{\"nodeName\":3}},{\"metadata\":{\"name\":\"c\"}}]";

	objects = cJSON_Parse(docs);
	if (!objects)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_selector *sel = NULL;
	struct hb_err err = { 0 };
	const cJSON *o;
	char *s;
	int field, rc;

	if (!objects)
		setup();
	if (size == 0 || size > 4096)
		return 0;
	field = data[0] & 1;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	rc = km_selector_parse(s, field, &sel, &err);
	if (rc) {
		if (sel || !err.msg[0])
			abort();
		free(s);
		return 0;
	}
	cJSON_ArrayForEach (o, objects) {
		const cJSON *labels = km_get(km_get(o, "metadata"), "labels");

		if (!sel && (!km_selector_match(sel, labels) ||
			     !km_fields_match(sel, o)))
			abort();
		if (field) {
			(void)km_fields_match(sel, o);
			(void)km_fields_check(sel, KM_POD, &err);
		} else {
			(void)km_selector_match(sel, labels);
		}
	}
	km_selector_free(sel);
	free(s);
	return 0;
}
