/*
 * report_idle.c - the report's idle column: what the capacity the rate
 * card names (capacity:) cost over the window, less what the jobs on that
 * side were charged in it, spread over the report's lines as the card's
 * idle_cost says (hb_idle_allocate(): proportional to their amounts, or
 * evenly over the lines that were charged), so that the column adds up to
 * the idle cost exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/ratecard.h"
#include "hpcbridge/store.h"
#include "report.h"

static const char *const side_keys[HB_RATE_NSIDES] = { "slurm", "kubernetes" };

/* The idle cost of side over r's window: its capacity's cost less the
 * side's ledger amount, 0 if the jobs cost more. */
static int side_idle(const struct hb_ratecard *card, enum hb_rate_side side,
		     const struct hb_ledger_report *by_side, int64_t *idle,
		     struct hb_err *err)
{
	int64_t cap, used = 0;
	int rc = hb_ratecard_capacity_cost(card, side, by_side->from_ms / 1000,
					   by_side->to_ms / 1000, &cap, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < by_side->n_lines; i++)
		if (by_side->lines[i].key &&
		    !strcmp(by_side->lines[i].key, side_keys[side]))
			used = by_side->lines[i].amount_micros;
	*idle = cap > used ? cap - used : 0;
	return 0;
}

int hb_report_idle(struct hb_store *st, const struct hb_ledger_report *r,
		   const struct hb_ratecard *card, struct hb_report_idle *out,
		   struct hb_err *err)
{
	struct hb_ledger_report *sides = NULL;
	int64_t *w = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (card->idle_cost == HB_IDLE_NONE ||
	    (!card->capacity[HB_RATE_SLURM] && !card->capacity[HB_RATE_KUBE]))
		return 0;
	if (r->from_ms <= 0 || r->to_ms == INT64_MAX)
		return hb_err_set(err, HB_EINVAL, card->source_name, 0,
				  "idle_cost: the idle column needs a window: "
				  "give --from and --to");
	rc = hb_store_report(st, HB_BY_SIDE, r->from_ms, r->to_ms, &sides, err);
	for (int s = 0; !rc && s < HB_RATE_NSIDES; s++) {
		int64_t idle = 0;

		if (!card->capacity[s])
			continue;
		rc = side_idle(card, (enum hb_rate_side)s, sides, &idle, err);
		if (!rc && __builtin_add_overflow(out->idle_micros, idle,
						  &out->idle_micros))
			rc = hb_err_set(err, HB_ERANGE, card->source_name, 0,
					"idle_cost: the idle cost overflows");
	}
	hb_ledger_report_free(sides);
	out->lines = calloc(r->n_lines + 1, sizeof(*out->lines));
	w = calloc(r->n_lines + 1, sizeof(*w));
	if (!rc && (!out->lines || !w))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (size_t i = 0; !rc && i < r->n_lines; i++)
		w[i] = r->lines[i].amount_micros;
	if (!rc)
		rc = hb_idle_allocate(card->idle_cost, out->idle_micros, w,
				      r->n_lines, out->lines);
	for (size_t i = 0; !rc && i < r->n_lines; i++)
		out->total_micros += out->lines[i];
	free(w);
	if (rc) {
		free(out->lines);
		memset(out, 0, sizeof(*out));
		return rc;
	}
	out->on = 1;
	return 0;
}
