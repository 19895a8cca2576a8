/*
 * report_pilot.c - hpcbridge report --pilot: the migration pilot's groups
 * (pilot, control) side by side, per side, as hb_store_pilot_report()
 * reads them: jobs, success rate, median queue wait and run time, cost
 * per core-hour.  Table, CSV and JSON here; HTML in report_html.c.
 *
 * Figures are integers from the store, formatted exactly
 * (hb_report_fixed()); a figure that does not exist (a median of no
 * jobs, a rate without core-hours) is "-" in the table, an empty CSV
 * field and null in JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "hpcbridge/store.h"
#include "report.h"

static const char *const side_names[2] = { "slurm", "kubernetes" };

/* The cells in order: pilot then control, Slurm then Kubernetes; the
 * loop's body sees g (the group), sd (the side) and c (the cell). */
#define N_CELLS (2 * HB__PILOT_COUNT)
#define CELL(p, i, g, sd, c)                                                   \
	int g = (i) / 2, sd = (i) % 2;                                         \
	const struct hb_pilot_cell *c = &(p)->cell[g][sd]

/* ms as [D-]HH:MM:SS (Slurm's elapsed form), rounded to the second. */
static const char *elapsed(int64_t ms, char out[48])
{
	int64_t s = (ms + 500) / 1000;

	if (ms < 0)
		return "-";
	if (s >= 86400)
		snprintf(out, 48,
			 "%" PRId64 "-%02" PRId64 ":%02" PRId64 ":%02" PRId64,
			 s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
	else
		snprintf(out, 48, "%02" PRId64 ":%02" PRId64 ":%02" PRId64,
			 s / 3600, s / 60 % 60, s % 60);
	return out;
}

static void table(const struct hb_pilot_report *p)
{
	char a[48], b[48], w[48], r[48], k[48];

	printf("%-8s %-10s %6s %9s %8s %12s %12s %10s %16s %12s\n", "GROUP",
	       "SIDE", "JOBS", "SUCCEEDED", "SUCCESS", "MEDIAN WAIT",
	       "MEDIAN RUN", "CORE-H", "AMOUNT", "PER CORE-H");
	for (int i = 0; i < N_CELLS; i++) {
		CELL(p, i, g, s, c);

		printf("%-8s %-10s %6" PRId64 " %9" PRId64,
		       hb_pilot_group_name((enum hb_pilot_group)g),
		       side_names[s], c->jobs, c->succeeded);
		if (c->jobs)
			printf(" %7s%%", hb_report_fixed(c->succeeded * 100,
							 c->jobs, 1, a));
		else
			printf(" %8s", "-");
		printf(" %12s %12s %10s %16s %12s\n",
		       elapsed(c->wait_median_ms, w),
		       elapsed(c->run_median_ms, r),
		       hb_report_fixed(c->cpu_mcore_s, HB_REPORT_CORE_H, 2, k),
		       hb_report_fixed(c->amount_micros, HB_REPORT_MICRO, 6, a),
		       c->per_core_h_micros < 0
			       ? "-"
			       : hb_report_fixed(c->per_core_h_micros,
						 HB_REPORT_MICRO, 6, b));
	}
}

/* v / div with dec decimals, or nothing when v < 0 (none). */
static void csv_opt(int64_t v, int64_t div, int dec)
{
	char a[48];

	printf(",%s", v < 0 ? "" : hb_report_fixed(v, div, dec, a));
}

static void csv(const struct hb_pilot_report *p)
{
	char a[48];

	printf("group,side,jobs,succeeded,success_rate,median_wait_s,"
	       "median_runtime_s,core_hours,amount,amount_micros,"
	       "cost_per_core_hour\r\n");
	for (int i = 0; i < N_CELLS; i++) {
		CELL(p, i, g, s, c);

		printf("%s,%s,%" PRId64 ",%" PRId64,
		       hb_pilot_group_name((enum hb_pilot_group)g),
		       side_names[s], c->jobs, c->succeeded);
		if (c->jobs)
			printf(",%s",
			       hb_report_fixed(c->succeeded, c->jobs, 6, a));
		else
			printf(",");
		csv_opt(c->wait_median_ms, 1000, 3);
		csv_opt(c->run_median_ms, 1000, 3);
		printf(",%s",
		       hb_report_fixed(c->cpu_mcore_s, HB_REPORT_CORE_H, 6, a));
		printf(",%s,%" PRId64,
		       hb_report_fixed(c->amount_micros, HB_REPORT_MICRO, 6, a),
		       c->amount_micros);
		csv_opt(c->per_core_h_micros, HB_REPORT_MICRO, 6);
		printf("\r\n");
	}
}

/* k: n as an exact JSON number, or null when n < 0 and opt. */
static void put_int(cJSON *o, const char *k, int64_t n, int opt)
{
	char a[24];

	if (opt && n < 0) {
		cJSON_AddNullToObject(o, k);
		return;
	}
	snprintf(a, sizeof(a), "%" PRId64, n);
	cJSON_AddRawToObject(o, k, a);
}

/* k: v / div with 6 decimals as a string (exact whatever the reader's
 * numbers are), or null when v < 0 and opt. */
static void put_fixed(cJSON *o, const char *k, int64_t v, int64_t div, int opt)
{
	char a[48];

	if (opt && (v < 0 || div <= 0))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddStringToObject(o, k, hb_report_fixed(v, div, 6, a));
}

static int json(const struct hb_pilot_report *p)
{
	cJSON *o = hb_report_json_new(NULL, p->from_ms, p->to_ms), *cells;

	cells = cJSON_AddArrayToObject(o, "groups");
	for (int i = 0; i < N_CELLS; i++) {
		CELL(p, i, g, s, c);

		cJSON *l = cJSON_CreateObject();

		cJSON_AddStringToObject(
			l, "group",
			hb_pilot_group_name((enum hb_pilot_group)g));
		cJSON_AddStringToObject(l, "side", side_names[s]);
		put_int(l, "jobs", c->jobs, 0);
		put_int(l, "succeeded", c->succeeded, 0);
		put_fixed(l, "success_rate", c->jobs ? c->succeeded : -1,
			  c->jobs, 1);
		put_int(l, "median_wait_ms", c->wait_median_ms, 1);
		put_int(l, "median_runtime_ms", c->run_median_ms, 1);
		put_fixed(l, "core_hours", c->cpu_mcore_s, HB_REPORT_CORE_H, 0);
		put_fixed(l, "amount", c->amount_micros, HB_REPORT_MICRO, 0);
		put_int(l, "amount_micros", c->amount_micros, 0);
		put_fixed(l, "cost_per_core_hour", c->per_core_h_micros,
			  HB_REPORT_MICRO, 1);
		if (!cells || !cJSON_AddItemToArray(cells, l))
			cJSON_Delete(l);
	}
	return hb_report_json_out(o);
}

int hb_report_pilot(const struct hb_pilot_report *p, enum hb_report_fmt fmt)
{
	switch (fmt) {
	case HB_RF_TABLE:
		table(p);
		return 0;
	case HB_RF_CSV:
		csv(p);
		return 0;
	case HB_RF_JSON:
		return json(p);
	default:
		return hb_report_pilot_html(stdout, p);
	}
}
