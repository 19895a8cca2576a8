/*
 * report.h - what the report command's writers share (cmd_report.c, the
 * table, CSV and JSON; report_html.c, the HTML page): the units the
 * stored integers are divided into, and the exact formatter.
 */
#ifndef HPCBRIDGE_CLI_REPORT_H
#define HPCBRIDGE_CLI_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "hpcbridge/error.h"

struct hb_store;
struct hb_ledger_report;

/* Divisors from the stored units to the reported ones: core-hours, GiB-
 * hours (a GB here is 2^30 bytes, as Slurm's and Kubernetes' G/Gi),
 * GPU- and node-hours, the currency unit. */
#define HB_REPORT_CORE_H INT64_C(3600000)
#define HB_REPORT_MEM_H	 INT64_C(3686400)
#define HB_REPORT_HOUR	 INT64_C(3600)
#define HB_REPORT_MICRO	 INT64_C(1000000)
/* Checkpoint storage: GB-months (10^9 bytes for 30 days) are MiB-seconds
 * x 2^20 / (10^9 x 2,592,000): 8 x MiB-seconds over this, exactly. */
#define HB_REPORT_GB_MONTH_8 INT64_C(19775390625)
/* GB-months of MiB-seconds m, with dec decimals, into out (48 bytes). */
#define HB_REPORT_GB_MONTHS(m, dec, out)                                       \
	hb_report_fixed((m) * 8, HB_REPORT_GB_MONTH_8, (dec), (out))

/* v / div with dec decimals, rounded half away from zero, exactly (no
 * floating point); returns out. */
const char *hb_report_fixed(int64_t v, int64_t div, int dec, char out[48]);

/* A JSON report's object with its window: "by" (unless NULL), "from"
 * and "to" (null without an end), RFC 3339. */
struct cJSON;
struct cJSON *hb_report_json_new(const char *by, int64_t from_ms,
				 int64_t to_ms);
/* Print o as JSON on standard output and delete it; 0 or HB_ENOMEM. */
int hb_report_json_out(struct cJSON *o);

/* The formats, in the order --format lists them. */
enum hb_report_fmt { HB_RF_TABLE, HB_RF_CSV, HB_RF_JSON, HB_RF_HTML };

struct hb_pilot_report;
/* Print the pilot report p on standard output in fmt (report_pilot.c);
 * 0 or HB_ENOMEM. */
int hb_report_pilot(const struct hb_pilot_report *p, enum hb_report_fmt fmt);
/* The pilot report as one self-contained HTML page to f (report_html.c):
 * a chart of the cost per core-hour, the table. */
int hb_report_pilot_html(FILE *f, const struct hb_pilot_report *p);

/* The idle column (report_idle.c): on 0 when the card asks for none. */
struct hb_report_idle {
	int on;
	int64_t idle_micros;  /* the window's idle cost, all sides */
	int64_t *lines;	      /* per report line; caller frees */
	int64_t total_micros; /* their sum: idle_micros, unless no line
			       * could take any */
};
struct hb_ratecard;
/*
 * The idle column of r: per side with a capacity in card, its cost over
 * r's window (which must have both ends) less the side's ledger amount
 * in it (0 if more), spread over r's lines by card->idle_cost.
 */
int hb_report_idle(struct hb_store *st, const struct hb_ledger_report *r,
		   const struct hb_ratecard *card, struct hb_report_idle *out,
		   struct hb_err *err);

/*
 * Write r as one self-contained HTML page to f: its table, and charts of
 * the window read from st (spend by account over time, by side, the top
 * users), inline SVG and CSS, every stored string escaped.
 */
int hb_report_html(FILE *f, struct hb_store *st,
		   const struct hb_ledger_report *r,
		   const struct hb_report_idle *idle, struct hb_err *err);

#endif
