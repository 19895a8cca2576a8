/*
 * hbcall.c - send one JSON request to hpcbridged and print the reply.
 *
 *   hbcall [--timeout MS] SOCKET 'JSON'
 *
 * Prints the reply (one line of JSON) on stdout.  Exit status: 0 when the
 * reply says ok, 1 when it says not ok (the error is on stdout too), 2 for
 * a bad request or usage, 3 when no reply came (the reason on stderr,
 * starting with the error's name: "EUNAVAIL: ...").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/error.h"
#include "hpcbridge/proto.h"

int main(int argc, char **argv)
{
	struct hb_err err = { 0 };
	cJSON *req, *reply = NULL;
	long timeout = 5000;
	char *out, *end;
	int i = 1, rc;

	if (argc >= 3 && !strcmp(argv[1], "--timeout")) {
		errno = 0;
		timeout = strtol(argv[2], &end, 10);
		if (errno || *end || timeout <= 0 || timeout > 600000) {
			fprintf(stderr, "hbcall: bad --timeout\n");
			return 2;
		}
		i = 3;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: hbcall [--timeout MS] SOCKET JSON\n");
		return 2;
	}
	req = cJSON_Parse(argv[i + 1]);
	if (!cJSON_IsObject(req)) {
		fprintf(stderr, "hbcall: the request is not a JSON object\n");
		cJSON_Delete(req);
		return 2;
	}
	rc = hb_proto_call(argv[i], req, (int)timeout, &reply, &err);
	cJSON_Delete(req);
	if (rc) {
		fprintf(stderr, "%s: %s\n",
			hb_errname(rc) ? hb_errname(rc) : "?", err.msg);
		return 3;
	}
	out = cJSON_PrintUnformatted(reply);
	printf("%s\n", out ? out : "null");
	cJSON_free(out);
	rc = hb_proto_reply_status(reply, NULL);
	cJSON_Delete(reply);
	return rc ? 1 : 0;
}
