/*
 * fuzz_ratecard.c - hb_ratecard_parse must never crash or leak, must
 * leave nothing behind on error, and whatever card it accepts must price
 * a few fixed usages: no overflow, one entry per rate period, entries
 * that follow one another without a gap, and resource-seconds that add
 * up to the whole job.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/ratecard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct hb_ratecard *card, const struct hb_usage *u)
{
	struct hb_charge c[HB_RATE_MAX_VERSIONS];
	struct hb_err err = { 0 };
	uint64_t cpu = 0, mem = 0, node = 0, gpu = 0;
	unsigned __int128 sum = 0;
	uint32_t n = 0;
	int rc = hb_rate_price(card, u, c, HB_RATE_MAX_VERSIONS, &n, &err);

	if (rc == HB_ENOENT ||
	    (rc == HB_EINVAL && u->end - u->start > HB_USAGE_MAX_SECONDS)) {
		if (!err.msg[0])
			abort();
		return;
	}
	if (rc || !n || n > card->nversions || c[0].start != u->start ||
	    c[n - 1].end != u->end)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		if (c[i].amount < 0 || c[i].end < c[i].start || !c[i].version ||
		    !c[i].rate_class || (i && c[i].start != c[i - 1].end))
			abort();
		if (i &&
		    c[i].start != hb_ratecard_at(card, c[i].start)->effective)
			abort(); /* split only at a rate change */
		cpu += c[i].cpu_s;
		mem += c[i].mem_mib_s;
		node += c[i].node_s;
		gpu += c[i].gpu_s[0];
		sum += (uint64_t)c[i].amount;
	}
	if (cpu != (uint64_t)u->cpus * (uint64_t)(u->end - u->start) ||
	    node != (uint64_t)u->nodes * (uint64_t)(u->end - u->start) ||
	    mem != (u->mem_bytes >> 20) * (uint64_t)(u->end - u->start) ||
	    gpu != (uint64_t)u->gpus[0].count * (uint64_t)(u->end - u->start))
		abort();
	if (sum > INT64_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_ratecard card;
	struct hb_err err = { 0 };
	struct hb_usage u = {
		.account = "a",
		.cpus = 1,
		.mem_bytes = 1ull << 30,
		.gpus = { { "h100", 1 }, { NULL, 1 } },
		.ngpus = 2,
		.nodes = 1,
	};
	int64_t first, last, a;

	if (hb_ratecard_parse((const char *)data, size, "fuzz.yaml", &card,
			      &err)) {
		if (!err.msg[0] || card.arena.head || card.versions)
			abort();
		return 0;
	}
	if (!card.nversions || !card.currency || !card.currency_symbol)
		abort();
	for (uint32_t i = 1; i < card.nversions; i++)
		if (card.versions[i].effective <=
		    card.versions[i - 1].effective)
			abort();
	first = card.versions[0].effective;
	last = card.versions[card.nversions - 1].effective;
	for (int side = 0; side < HB_RATE_NSIDES; side++) {
		u.side = (enum hb_rate_side)side;
		/* every period, at the smallest usage */
		u.rate_class = NULL;
		u.exclusive = side == HB_RATE_SLURM;
		u.start = first;
		u.end = last + 86400;
		check(&card, &u);
		/* one hour of a larger job in each class of the first version
		 */
		for (uint32_t k = 0; k < card.versions[0].nclasses[side]; k++) {
			u.rate_class = card.versions[0].classes[side][k].name;
			u.cpus = 128;
			u.nodes = 2;
			u.start = first;
			u.end = first + 3600;
			check(&card, &u);
			u.cpus = 1;
			u.nodes = 1;
		}
		/* nothing before the first version */
		u.start = u.end = first - 1;
		check(&card, &u);
		if (hb_rate_price_egress(&card, u.side, NULL, last, 1ull << 40,
					 &a, NULL, &err) == 0 &&
		    a < 0)
			abort();
		if (hb_rate_price_storage(&card, u.side, NULL, last, 1ull << 40,
					  2592000, &a, NULL, &err) == 0 &&
		    a < 0)
			abort();
	}
	hb_ratecard_free(&card);
	return 0;
}
