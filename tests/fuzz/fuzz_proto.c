/*
 * fuzz_proto.c - the daemon's reading path over untrusted bytes: split the
 * input into frames with hb_proto_peek and parse each payload as a request
 * and as a reply.  Nothing may crash or leak; an accepted frame must lie
 * within the input; an accepted payload must be an object with the field
 * its kind requires, and must print and parse back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *payload, size_t plen, enum hb_proto_kind kind)
{
	struct hb_err err = { 0 };
	cJSON *doc = NULL, *again;
	char *s;
	int rc;

	rc = hb_proto_parse(payload, plen, kind, &doc, &err);
	if (rc) {
		if (doc || !err.msg[0] || (rc != HB_EPROTO && rc != HB_ENOMEM))
			abort();
		return;
	}
	if (!cJSON_IsObject(doc))
		abort();
	if (kind == HB_PROTO_REQUEST &&
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "op")))
		abort();
	if (kind == HB_PROTO_REPLY &&
	    !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(doc, "ok")))
		abort();
	/* what is accepted prints as JSON that is accepted again */
	s = cJSON_PrintUnformatted(doc);
	if (!s)
		abort();
	again = NULL;
	if (hb_proto_parse(s, strlen(s), kind, &again, NULL) || !again)
		abort();
	cJSON_Delete(again);
	cJSON_free(s);
	cJSON_Delete(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum hb_proto_kind kind;
	const char *payload;
	size_t plen, flen, off = 0;
	int rc;

	/* the payload alone, as both kinds */
	check((const char *)data, size, HB_PROTO_REQUEST);
	check((const char *)data, size, HB_PROTO_REPLY);

	/* as a stream of frames, with a small cap so ETOOBIG is reached */
	while (off < size) {
		struct hb_err err = { 0 };

		rc = hb_proto_peek(data + off, size - off, 4096, &kind,
				   &payload, &plen, &flen, &err);
		if (rc == HB_EAGAIN)
			break;
		if (rc) {
			if ((rc != HB_EPROTO && rc != HB_ETOOBIG) ||
			    !err.msg[0])
				abort();
			break;
		}
		if (flen != HB_PROTO_HDR + plen || flen > size - off ||
		    payload != (const char *)data + off + HB_PROTO_HDR ||
		    plen > 4096 ||
		    (kind != HB_PROTO_REQUEST && kind != HB_PROTO_REPLY))
			abort();
		check(payload, plen, kind);
		off += flen;
	}
	return 0;
}
