/*
 * fuzz_policy.c - hb_policy_parse must never crash or leak, must leave
 * nothing behind on error, and whatever it accepts must be usable: every
 * lookup answers, policy check describes it, and the engine decides a
 * few fixed jobs with it (a decision that lands on a side that can run
 * the job and may take it), explains them and writes their documents
 * (the compact text the daemon stores equal to the tree's).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/placement.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const paths[] = { "/lustre/era5/x", "s3://datasets/y",
				     "/home/u" };

static void decide(const struct hb_policy *pol, const struct hb_snapshot *s,
		   const char *account, const char *partition, const char *gpu,
		   uint32_t gpus, int64_t deadline)
{
	struct hb_place_input in = {
		.name = "fuzz",
		.user = "u",
		.account = account,
		.partition = partition,
		.source_name = "fuzz.sh",
		.nodes = 2,
		.cpus_per_node = 16,
		.gpus_per_node = gpus,
		.gpu_type = gpu,
		.time_limit = 3600,
		.deadline = deadline,
		.data = paths,
		.ndata = 3,
		.requested = -1,
	};
	struct hb_place_result r;
	struct hb_buf b, t, c;
	struct hb_emit *e;
	cJSON *doc;

	if (hb_place_decide(pol, s, &in, &r))
		abort();
	if (r.target != HB_PLACE_REJECT &&
	    (!r.alt[r.target].can_run || !r.alt[r.target].allowed))
		abort();
	if (!r.rule || r.nfactors > HB_PLACE_MAX_FACTORS)
		abort();
	hb_buf_init(&b, 0);
	if (hb_place_explain(pol, &in, &r, &b) || !b.len)
		abort();
	doc = hb_place_to_json(pol, &in, &r);
	if (!doc)
		abort();
	/* the stored text is the tree's text, byte for byte */
	hb_buf_init(&t, 0);
	hb_buf_init(&c, 0);
	e = hb_emit_new(HB_EMIT_JSON_COMPACT, &c);
	if (!e || hb_doc_write_json_compact(doc, &t) ||
	    hb_place_emit(e, NULL, pol, &in, &r, b.data) || hb_emit_done(e) ||
	    t.len != c.len || memcmp(t.data, c.data, t.len))
		abort();
	hb_emit_free(e);
	hb_buf_free(&t);
	hb_buf_free(&c);
	hb_buf_free(&b);
	cJSON_Delete(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_policy pol;
	struct hb_snapshot snap;
	struct hb_err err = { 0 };
	struct hb_buf b;
	int rc;

	rc = hb_policy_parse((const char *)data, size, "fuzz.yaml", &pol, &err);
	if (rc) {
		if (!err.msg[0] || pol.partitions || pol.source_name)
			abort();
		return 0;
	}
	if (!pol.currency_symbol || !pol.source_name ||
	    (pol.kube_enabled && !pol.nqueues))
		abort();
	hb_buf_init(&b, 0);
	if (hb_policy_describe(&pol, &b))
		abort();
	hb_buf_free(&b);
	hb_snapshot_init(&snap, 1795248000);
	hb_snapshot_set_partition(&snap, "batch", 3600, 4, 0);
	hb_snapshot_set_queue(&snap, "burst", 600, 0, 64, 1 << 20);
	hb_snapshot_set_spend(&snap, "physics", HB_PERIOD_MONTH, HB_SIDE_KUBE,
			      1000000000);
	decide(&pol, &snap, NULL, NULL, NULL, 0, 0);
	decide(&pol, &snap, "physics", "gpu", "h100", 4, 1795248000 + 7200);
	decide(&pol, &snap, "medical", "batch", "1g.10gb", 1,
	       1795248000 + 86400);
	for (uint32_t i = 0; i < pol.npartitions; i++)
		decide(&pol, &snap, NULL, pol.partitions[i].name, NULL, 0,
		       1795248000 + 36000);
	for (uint32_t i = 0; i < pol.nrules && i < 8; i++)
		decide(&pol, &snap, pol.rules[i].account,
		       pol.rules[i].partition, "a100", 2, 1795248000 + 36000);
	hb_snapshot_free(&snap);
	hb_policy_free(&pol);
	return 0;
}
