/*
 * fuzz_snapshot.c - hb_snapshot_parse must never crash or leak, must leave
 * nothing behind on error, and whatever it accepts must write back out
 * as a document that reads back to the same document; the engine decides
 * a fixed job against it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/placement.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy[] =
	"defaults: {prefer: cheapest, budget: {amount: 100}}\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch: {node: {cpus: 64, memory: 256Gi}}\n"
	"kubernetes:\n"
	"  queues: {burst: {}}\n"
	"  gpu_types: [h100]\n"
	"  rates: {cpu_hour: 0.01}\n"
	"data:\n"
	"  - {prefix: /lustre/era5, side: slurm, bandwidth: 10Gb/s}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hb_policy pol;
	static int loaded;
	static const char *paths[] = { "/lustre/era5/x" };
	struct hb_snapshot s, s2;
	struct hb_err err = { 0 };
	struct hb_place_input in = { .name = "f",
				     .account = "physics",
				     .partition = "batch",
				     .nodes = 1,
				     .cpus_per_node = 4,
				     .gpus_per_node = 1,
				     .gpu_type = "h100",
				     .time_limit = 7200,
				     .data = paths,
				     .ndata = 1,
				     .requested = -1 };
	struct hb_place_result r;
	struct hb_buf b;
	cJSON *doc, *doc2;
	int rc;

	if (!loaded) {
		if (hb_policy_parse(policy, strlen(policy), "p.yaml", &pol,
				    &err))
			abort();
		loaded = 1;
	}
	rc = hb_snapshot_parse((const char *)data, size, "fuzz.yaml", &s, &err);
	if (rc) {
		if (!err.msg[0] || s.parts || s.queues || s.spend)
			abort();
		return 0;
	}
	in.deadline = s.now + 3 * 3600;
	if (hb_place_decide(&pol, &s, &in, &r))
		abort();
	if (r.target != HB_PLACE_REJECT &&
	    (!r.alt[r.target].can_run || !r.alt[r.target].allowed))
		abort();
	rc = hb_place_commit(&in, &r, &s);
	if (rc && rc != HB_ETOOBIG)
		abort();

	/* write, read back, write again: the same document */
	doc = hb_snapshot_to_json(&s);
	if (!doc)
		abort();
	hb_buf_init(&b, 0);
	if (hb_doc_write_yaml(doc, &b))
		abort();
	if (hb_snapshot_parse(b.data, b.len, "again.yaml", &s2, &err))
		abort();
	doc2 = hb_snapshot_to_json(&s2);
	if (!doc2 || !cJSON_Compare(doc, doc2, 1))
		abort();
	cJSON_Delete(doc);
	cJSON_Delete(doc2);
	hb_buf_free(&b);
	hb_snapshot_free(&s2);
	hb_snapshot_free(&s);
	return 0;
}
