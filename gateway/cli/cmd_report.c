/*
 * cmd_report.c - hpcbridge report: chargeback reports from the ledger.
 *
 * Reads the store file directly, read-only (SQLITE_OPEN_READONLY: nothing
 * is created, migrated or written), from --state or the configuration's
 * daemon.state; so root, or whoever can read that file, runs it.  The
 * sums are the store's integer sums (hb_store_report()); numbers are
 * formatted only here, with integer arithmetic.
 */
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/ratecard.h"
#include "hpcbridge/store.h"
#include "hpcbridge/timefmt.h"
#include "report.h"

#define SYSTEM_CONFIG "/etc/hpcbridge/hpcbridge.yaml"

#define CORE_H HB_REPORT_CORE_H
#define MEM_H  HB_REPORT_MEM_H
#define HOUR   HB_REPORT_HOUR
#define MICRO  HB_REPORT_MICRO

static const char usage[] =
	"usage: hpcbridge report [--from DATE] [--to DATE] [--by KEY | "
	"--pilot]\n"
	"                        [--format table|csv|json|html]\n"
	"                        [--state PATH | --config FILE]\n"
	"                        [--ratecard FILE]\n"
	"       hpcbridge report --reconcile [--from DATE] [--to DATE] ...\n"
	"\n"
	"Sum the cost ledger's entries whose period ends in [--from, --to),\n"
	"one line per KEY (default account):\n" HB_LEDGER_BYS ".\n"
	"--pilot: the migration pilot's and control group's terminal jobs\n"
	"that ended in the window, per side: jobs, success rate, median\n"
	"queue wait and run time, cost per core-hour.\n"
	"--ratecard (else the configuration's chargeback.ratecard): when the\n"
	"card has idle_cost and capacity, an idle column spreads the\n"
	"capacity's cost not charged to jobs over the lines.\n"
	"DATE: YYYY-MM, YYYY-MM-DD (UTC midnight) or an RFC 3339 time;\n"
	"default from the first entry to the last.  The store is opened\n"
	"read-only: --state, else daemon.state of --config,\n"
	"$HPCBRIDGE_CONFIG or " SYSTEM_CONFIG ".\n"
	"--reconcile: compare the Slurm side with slurmdbd, job by job\n"
	"(exit 0 same, 1 differences, 2 error).\n";

#define F_TABLE HB_RF_TABLE
#define F_CSV	HB_RF_CSV
#define F_HTML	HB_RF_HTML

struct opts {
	const char *state, *config, *ratecard;
	int64_t from_ms, to_ms;
	int by, by_given, pilot;
	enum hb_report_fmt fmt;
	int reconcile; /* --reconcile: cmd_reconcile.c */
};

/* report.h */
const char *hb_report_fixed(int64_t v, int64_t div, int dec, char out[48])
{
	uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v, p = 1, q, r;

	for (int i = 0; i < dec; i++)
		p *= 10;
	/* a * p / div without overflow: whole part and remainder apart */
	q = a / (uint64_t)div;
	r = a % (uint64_t)div;
	{
		unsigned __int128 f = (unsigned __int128)r * p;
		uint64_t frac = (uint64_t)(f / (uint64_t)div);

		if ((f % (uint64_t)div) * 2 >= (uint64_t)div)
			frac++;
		if (frac == p) {
			q++;
			frac = 0;
		}
		if (dec)
			snprintf(out, 48, "%s%" PRIu64 ".%0*" PRIu64,
				 v < 0 && (q || frac) ? "-" : "", q, dec, frac);
		else
			snprintf(out, 48, "%s%" PRIu64, v < 0 && q ? "-" : "",
				 q);
	}
	return out;
}

/* DATE as ms since the epoch: YYYY-MM, YYYY-MM-DD or RFC 3339. */
static int parse_date(const char *s, int64_t *ms)
{
	char buf[40];
	int64_t t;
	size_t n = strlen(s);

	if (n == 7 && s[4] == '-')
		snprintf(buf, sizeof(buf), "%s-01T00:00:00Z", s);
	else if (n == 10 && s[4] == '-' && s[7] == '-')
		snprintf(buf, sizeof(buf), "%sT00:00:00Z", s);
	else if (n < sizeof(buf))
		snprintf(buf, sizeof(buf), "%s", s);
	else
		return HB_EINVAL;
	if (hb_time_rfc3339_parse_flags(buf, HB_TIME_STRICT, &t))
		return HB_EINVAL;
	*ms = t * 1000;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "by", required_argument, NULL, 'b' },
		{ "pilot", no_argument, NULL, 'p' },
		{ "format", required_argument, NULL, 'F' },
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "ratecard", required_argument, NULL, 'r' },
		{ "reconcile", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const fmts[] = { "table", "csv", "json", "html" };
	int opt, i;

	memset(o, 0, sizeof(*o));
	o->to_ms = INT64_MAX;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case 't':
			if (parse_date(optarg,
				       opt == 'f' ? &o->from_ms : &o->to_ms)) {
				fprintf(stderr,
					"hpcbridge report: --%s: '%s' is not "
					"YYYY-MM, YYYY-MM-DD or an RFC 3339 "
					"time\n",
					opt == 'f' ? "from" : "to", optarg);
				return HB_EXIT_USAGE;
			}
			break;
		case 'b':
			if ((o->by = hb_ledger_by_parse(optarg)) < 0) {
				fprintf(stderr,
					"hpcbridge report: --by: '%s' is none "
					"of " HB_LEDGER_BYS "\n",
					optarg);
				return HB_EXIT_USAGE;
			}
			o->by_given = 1;
			break;
		case 'p':
			o->pilot = 1;
			break;
		case 'F':
			for (i = 0; i < 4 && strcmp(fmts[i], optarg); i++)
				;
			if (i == 4) {
				fprintf(stderr,
					"hpcbridge report: --format: '%s' is "
					"none of table, csv, json, html\n",
					optarg);
				return HB_EXIT_USAGE;
			}
			o->fmt = (enum hb_report_fmt)i;
			break;
		case 's':
			o->state = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'r':
			o->ratecard = optarg;
			break;
		case 'R':
			o->reconcile = 1;
			break;
		case 'h':
			printf("%s", usage);
			return -1;
		default:
			fprintf(stderr, "%s", usage);
			return HB_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr,
			"hpcbridge report: unexpected argument '%s'\n%s",
			argv[optind], usage);
		return HB_EXIT_USAGE;
	}
	if (o->state && o->config) {
		fprintf(stderr, "hpcbridge report: --state and --config: give "
				"one or the other\n");
		return HB_EXIT_USAGE;
	}
	if (o->pilot && o->by_given) {
		fprintf(stderr, "hpcbridge report: --pilot and --by: give one "
				"or the other\n");
		return HB_EXIT_USAGE;
	}
	if (o->to_ms <= o->from_ms) {
		fprintf(stderr, "hpcbridge report: --to: not after --from\n");
		return HB_EXIT_USAGE;
	}
	return 0;
}

/* --- table --------------------------------------------------------------- */

/* Line i's idle micro-units (SIZE_MAX: the total's), NULL without the
 * column. */
static const int64_t *idle_of(const struct hb_report_idle *id, size_t i)
{
	if (!id || !id->on)
		return NULL;
	return i == SIZE_MAX ? &id->total_micros : &id->lines[i];
}

static void table_row(const struct hb_ledger_report *r,
		      const struct hb_ledger_line *l, const char *key,
		      const int64_t *idle)
{
	char a[48];

	printf("%-16s %7" PRId64 " %12s", key, l->jobs,
	       hb_report_fixed(l->cpu_mcore_s, CORE_H, 2, a));
	for (size_t t = 0; t < r->n_types; t++)
		printf(" %12s", hb_report_fixed(l->gpu_s[t], HOUR, 2, a));
	printf(" %12s", hb_report_fixed(l->mem_mib_s, MEM_H, 2, a));
	printf(" %10s", hb_report_fixed(l->node_s, HOUR, 2, a));
	printf(" %10s",
	       hb_report_fixed(l->egress_bytes, INT64_C(1) << 30, 2, a));
	printf(" %12s", HB_REPORT_GB_MONTHS(l->storage_mib_s, 2, a));
	printf(" %18s", hb_report_fixed(l->amount_micros, MICRO, 6, a));
	if (idle)
		printf(" %18s", hb_report_fixed(*idle, MICRO, 6, a));
	printf("  %s\n", l->rate_versions);
}

static void print_table(const struct hb_ledger_report *r,
			const struct hb_report_idle *id)
{
	char gpu[80], key[16];
	size_t i;

	for (i = 0; hb_ledger_by_name(r->by)[i] && i < sizeof(key) - 1; i++)
		key[i] = (char)toupper(
			(unsigned char)hb_ledger_by_name(r->by)[i]);
	key[i] = 0;
	printf("%-16s %7s %12s", key, "JOBS", "CORE-H");
	for (size_t t = 0; t < r->n_types; t++) {
		snprintf(gpu, sizeof(gpu), "GPU-H %s", r->types[t]);
		printf(" %12s", gpu);
	}
	printf(" %12s %10s %10s %12s %18s", "MEM-GB-H", "NODE-H", "EGRESS-GB",
	       "STORE-GB-MO", "AMOUNT");
	if (idle_of(id, SIZE_MAX))
		printf(" %18s", "IDLE");
	printf("  %s\n", "RATE CARDS");
	for (i = 0; i < r->n_lines; i++)
		table_row(r, &r->lines[i],
			  r->lines[i].key ? r->lines[i].key : "-",
			  idle_of(id, i));
	table_row(r, &r->total, "TOTAL", idle_of(id, SIZE_MAX));
}

/* --- CSV (RFC 4180) --------------------------------------------------------
 */

/* One field: quoted when it holds a comma, quote, CR or LF, quotes
 * doubled; text a spreadsheet would take for a formula (=, +, -, @, tab,
 * CR first) gets a leading apostrophe, as OWASP advises. */
static void csv_text(const char *s, int first)
{
	int formula = s && strchr("=+-@\t\r", *s) && *s;
	int quote = s && (formula || strpbrk(s, ",\"\r\n"));

	if (!first)
		putchar(',');
	if (!s)
		return;
	if (quote)
		putchar('"');
	if (formula)
		putchar('\'');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	if (quote)
		putchar('"');
}

static void print_csv(const struct hb_ledger_report *r,
		      const struct hb_report_idle *id)
{
	char a[48];

	csv_text(hb_ledger_by_name(r->by), 1);
	printf(",jobs,entries,core_hours");
	for (size_t t = 0; t < r->n_types; t++) {
		snprintf(a, sizeof(a), "gpu_hours_%s", r->types[t]);
		csv_text(a, 0);
	}
	printf(",mem_gb_hours,node_hours,egress_bytes,storage_gb_months,amount,"
	       "amount_micros%s,rate_versions\r\n",
	       idle_of(id, SIZE_MAX) ? ",idle,idle_micros" : "");
	for (size_t i = 0; i < r->n_lines; i++) {
		const struct hb_ledger_line *l = &r->lines[i];

		csv_text(l->key, 1);
		printf(",%" PRId64 ",%" PRId64 ",%s", l->jobs, l->entries,
		       hb_report_fixed(l->cpu_mcore_s, CORE_H, 6, a));
		for (size_t t = 0; t < r->n_types; t++)
			printf(",%s", hb_report_fixed(l->gpu_s[t], HOUR, 6, a));
		printf(",%s", hb_report_fixed(l->mem_mib_s, MEM_H, 6, a));
		printf(",%s,%" PRId64, hb_report_fixed(l->node_s, HOUR, 6, a),
		       l->egress_bytes);
		printf(",%s", HB_REPORT_GB_MONTHS(l->storage_mib_s, 6, a));
		printf(",%s,%" PRId64,
		       hb_report_fixed(l->amount_micros, MICRO, 6, a),
		       l->amount_micros);
		if (idle_of(id, i))
			printf(",%s,%" PRId64,
			       hb_report_fixed(*idle_of(id, i), MICRO, 6, a),
			       *idle_of(id, i));
		csv_text(l->rate_versions, 0);
		printf("\r\n");
	}
}

/* --- JSON ---------------------------------------------------------------- */

/* n exactly, as a raw JSON number (cJSON's numbers are doubles). */
static void add_int(cJSON *o, const char *k, int64_t n)
{
	char a[24];

	snprintf(a, sizeof(a), "%" PRId64, n);
	cJSON_AddRawToObject(o, k, a);
}

static void add_fixed(cJSON *o, const char *k, int64_t v, int64_t div)
{
	char a[48];

	cJSON_AddRawToObject(o, k, hb_report_fixed(v, div, 6, a));
}

static cJSON *json_line(const struct hb_ledger_report *r,
			const struct hb_ledger_line *l, int total,
			const int64_t *idle)
{
	cJSON *o = cJSON_CreateObject(), *g;
	char a[48];

	if (!total)
		cJSON_AddItemToObject(o, "key",
				      l->key ? cJSON_CreateString(l->key)
					     : cJSON_CreateNull());
	add_int(o, "jobs", l->jobs);
	add_int(o, "entries", l->entries);
	add_fixed(o, "core_hours", l->cpu_mcore_s, CORE_H);
	g = cJSON_AddObjectToObject(o, "gpu_hours");
	for (size_t t = 0; g && t < r->n_types; t++)
		add_fixed(g, r->types[t], l->gpu_s[t], HOUR);
	add_fixed(o, "mem_gb_hours", l->mem_mib_s, MEM_H);
	add_fixed(o, "node_hours", l->node_s, HOUR);
	add_int(o, "egress_bytes", l->egress_bytes);
	add_int(o, "storage_mib_s", l->storage_mib_s);
	cJSON_AddRawToObject(o, "storage_gb_months",
			     HB_REPORT_GB_MONTHS(l->storage_mib_s, 6, a));
	/* a string: exact whatever the reader's numbers are */
	cJSON_AddStringToObject(o, "amount",
				hb_report_fixed(l->amount_micros, MICRO, 6, a));
	add_int(o, "amount_micros", l->amount_micros);
	if (idle) {
		cJSON_AddStringToObject(o, "idle",
					hb_report_fixed(*idle, MICRO, 6, a));
		add_int(o, "idle_micros", *idle);
	}
	cJSON_AddStringToObject(o, "rate_versions", l->rate_versions);
	return o;
}

/* report.h */
cJSON *hb_report_json_new(const char *by, int64_t from_ms, int64_t to_ms)
{
	cJSON *o = cJSON_CreateObject();
	char from[32], to[32];

	hb_time_rfc3339_format(from_ms / 1000, from);
	hb_time_rfc3339_format(to_ms / 1000, to);
	if (by)
		cJSON_AddStringToObject(o, "by", by);
	cJSON_AddStringToObject(o, "from", from);
	if (to_ms == INT64_MAX)
		cJSON_AddNullToObject(o, "to");
	else
		cJSON_AddStringToObject(o, "to", to);
	return o;
}

/* report.h */
int hb_report_json_out(cJSON *o)
{
	char *text = cJSON_Print(o);

	cJSON_Delete(o);
	if (!text)
		return HB_ENOMEM;
	printf("%s\n", text);
	free(text);
	return 0;
}

static int print_json(const struct hb_ledger_report *r,
		      const struct hb_report_idle *id)
{
	cJSON *o = hb_report_json_new(hb_ledger_by_name(r->by), r->from_ms,
				      r->to_ms),
	      *lines;

	lines = cJSON_AddArrayToObject(o, "lines");
	for (size_t i = 0; lines && i < r->n_lines; i++)
		cJSON_AddItemToArray(
			lines, json_line(r, &r->lines[i], 0, idle_of(id, i)));
	cJSON_AddItemToObject(
		o, "total", json_line(r, &r->total, 1, idle_of(id, SIZE_MAX)));
	return hb_report_json_out(o);
}

/* The store's path: --state, else daemon.state of the configuration. */
static int state_path(const struct opts *o, struct hb_config *cfg,
		      const char **path, struct hb_err *err)
{
	const char *config = o->config;

	if (o->state) {
		*path = o->state;
		return 0;
	}
	if (!config)
		config = getenv("HPCBRIDGE_CONFIG");
	if (!config && access(SYSTEM_CONFIG, R_OK) == 0)
		config = SYSTEM_CONFIG;
	int rc = hb_cli_load_config(config, cfg, err);

	*path = cfg->daemon_state;
	return rc;
}

/* The report o asks for, read from st, on standard output. */
static int write_report(struct hb_store *st, const struct opts *o,
			const struct hb_ratecard *card, struct hb_err *err)
{
	struct hb_ledger_report *r = NULL;
	struct hb_report_idle id = { 0 };
	struct hb_pilot_report p;
	int rc;

	if (o->pilot) {
		rc = hb_store_pilot_report(st, o->from_ms, o->to_ms, &p, err);
		return rc ? rc : hb_report_pilot(&p, o->fmt);
	}
	rc = hb_store_report(st, (enum hb_ledger_by)o->by, o->from_ms, o->to_ms,
			     &r, err);
	/* a card from the configuration only where the window has ends */
	if (!rc && card &&
	    (o->ratecard || (o->from_ms > 0 && o->to_ms != INT64_MAX)))
		rc = hb_report_idle(st, r, card, &id, err);
	if (!rc && o->fmt == F_TABLE)
		print_table(r, &id);
	else if (!rc && o->fmt == F_CSV)
		print_csv(r, &id);
	else if (!rc && o->fmt == F_HTML)
		rc = hb_report_html(stdout, st, r, &id, err);
	else if (!rc)
		rc = print_json(r, &id);
	free(id.lines);
	hb_ledger_report_free(r);
	return rc;
}

/* The rate card, for the idle column: --ratecard, else the
 * configuration's chargeback.ratecard.  That one is the daemon's: the
 * report goes on without the idle column when it cannot be read. */
static int load_card(const struct opts *o, const struct hb_config *cfg,
		     struct hb_ratecard *card, struct hb_err *err)
{
	const char *path = o->ratecard ? o->ratecard : cfg->chargeback_ratecard;
	int rc = path && *path ? hb_ratecard_load(path, card, err) : 0;

	if (!rc || o->ratecard)
		return rc;
	fprintf(stderr, "hpcbridge report: %s: no idle column\n", err->msg);
	memset(err, 0, sizeof(*err));
	return 0;
}

int hb_cmd_report(int argc, char **argv)
{
	struct hb_config cfg = { 0 };
	struct hb_err err = { 0 };
	struct hb_store *st = NULL;
	struct hb_ratecard card = { 0 };
	struct opts o;
	const char *path = NULL;
	int rc = parse_opts(argc, argv, &o);

	if (rc)
		return rc < 0 ? HB_EXIT_OK : rc;
	rc = state_path(&o, &cfg, &path, &err);
	if (o.reconcile) { /* cmd_reconcile.c; its errors exit 2 */
		if (!rc && o.fmt == F_HTML)
			rc = hb_err_set(&err, HB_EINVAL, NULL, 0,
					"--reconcile: --format html: table, "
					"csv or json");
		if (rc)
			fprintf(stderr, "hpcbridge report: %s\n", err.msg);
		rc = rc ? 2 : hb_cli_reconcile(path, o.from_ms, o.to_ms, o.fmt);
		hb_config_free(&cfg);
		return rc;
	}
	if (!rc && (!path || !*path))
		rc = hb_err_set(&err, HB_EINVAL, o.config, 0,
				"daemon.state: empty");
	if (!rc)
		rc = hb_store_open_readonly(path, &st, &err);
	if (!rc && !o.pilot)
		rc = load_card(&o, &cfg, &card, &err);
	if (!rc)
		rc = write_report(st, &o, card.source_name ? &card : NULL,
				  &err);
	if (rc) {
		fprintf(stderr, "hpcbridge report: %s\n",
			err.msg[0] ? err.msg : hb_strerror(rc));
		rc = HB_EXIT_INPUT;
	}
	if (!rc && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr,
			"hpcbridge report: writing the report failed\n");
		rc = HB_EXIT_INPUT;
	}
	hb_ratecard_free(&card);
	hb_store_close(st);
	hb_config_free(&cfg);
	return rc;
}
