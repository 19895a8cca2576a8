/*
 * report_html.c - hpcbridge report --format html: one self-contained page
 * for finance.  Inline CSS and inline SVG, no script and no outside URL,
 * so it opens from a mail attachment or a file share as it is, and prints.
 *
 * The page holds the report's table (the same lines and total as the
 * other formats) and three charts of the same window: spend by account
 * per day or month (hb_store_report_series()), the split between on-prem
 * (Slurm) and the cluster (Kubernetes), and the ten users who spent most.
 * Every bar carries a data-account, data-side or data-user attribute and
 * a <title> with its exact amount.  Every string from the store (account
 * and user names are the users' own) goes through esc().  Amounts are
 * printed from micro-units by hb_report_fixed(); floating point only
 * places the shapes.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/store.h"
#include "hpcbridge/timefmt.h"
#include "report.h"

#define MICRO HB_REPORT_MICRO

/* Tableau 10: told apart by most readers, the colour-blind too. */
static const char *const palette[] = { "#4e79a7", "#f28e2b", "#e15759",
				       "#76b7b2", "#59a14f", "#edc948",
				       "#b07aa1", "#ff9da7", "#9c755f",
				       "#bab0ac" };
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))
#define TOP_USERS 10

static const char style[] =
	"body{font:14px/1.45 'DejaVu Sans',Helvetica,Arial,sans-serif;"
	"color:#1f2933;background:#fff;margin:0}"
	"main{max-width:1120px;margin:0 auto;padding:24px 32px}"
	"h1{font-size:24px;margin:0 0 4px}"
	"h2{font-size:16px;margin:28px 0 8px;color:#323f4b}"
	".sub{color:#616e7c;margin:0 0 20px}"
	".tiles{display:flex;gap:16px;margin:0 0 8px}"
	".tile{flex:1;border:1px solid #d9e2ec;border-radius:6px;"
	"padding:10px 14px}"
	".tile b{display:block;font-size:20px;color:#102a43}"
	".tile span{color:#616e7c;font-size:12px;text-transform:uppercase}"
	".row{display:flex;gap:32px}.row section{flex:1;min-width:0}"
	"svg{display:block;width:100%;height:auto}"
	"svg text{font:12px 'DejaVu Sans',Helvetica,Arial,sans-serif;"
	"fill:#3e4c59}"
	"svg .axis{font-weight:bold}svg .grid{stroke:#e4e7eb}"
	"table{border-collapse:collapse;width:100%;font-size:13px}"
	"th,td{padding:5px 8px;border-bottom:1px solid #e4e7eb;"
	"text-align:right;white-space:nowrap}"
	"th:first-child,td:first-child{text-align:left;white-space:normal;"
	"word-break:break-all}"
	"thead th{background:#f0f4f8;color:#323f4b}"
	"tbody tr:nth-child(even){background:#f8fafc}"
	"tfoot td{font-weight:bold;border-top:2px solid #9aa5b1}"
	".none{color:#9aa5b1;font-style:italic}"
	"footer{color:#7b8794;font-size:12px;margin-top:24px}"
	".half{max-width:540px}"
	"#pilot td:nth-child(2),#pilot th:nth-child(2){text-align:left}"
	"@media print{main{padding:0}}";

/* s as HTML text or attribute value: markup characters as entities,
 * control characters as U+FFFD; NULL as nothing. */
static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				fputs("&#xfffd;", f);
			else
				fputc(c, f);
		}
	}
}

/* esc() of at most max characters of s (UTF-8 sequences kept whole),
 * with an ellipsis when cut: for labels beside a chart. */
static void esc_short(FILE *f, const char *s, size_t max)
{
	size_t n = 0, i;
	char *cut;

	for (i = 0; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && n++ == max)
			break;
	if (!s[i]) {
		esc(f, s);
		return;
	}
	if ((cut = strndup(s, i))) {
		esc(f, cut);
		fputs("\xe2\x80\xa6", f);
	}
	free(cut);
}

/* What a missing key reads as. */
static const char *key_or(const char *k, const char *none)
{
	return k ? k : none;
}

static const char *amount(int64_t micros, char out[48])
{
	return hb_report_fixed(micros, MICRO, 6, out);
}

/* A round step (1, 2 or 5 times a power of ten micro-units) that cuts
 * [0, max] into at most 6 parts. */
static int64_t nice_step(int64_t max)
{
	static const int m[] = { 1, 2, 5 };
	int64_t p = 1;

	for (;;) {
		for (int i = 0; i < 3; i++)
			if (max <= p * m[i] * 6)
				return p * m[i];
		if (p > INT64_MAX / 100)
			return p * 10;
		p *= 10;
	}
}

/* --- spend by account over time (stacked bars) --------------------------- */

#define TW 1100 /* the chart's box: width, height, margins */
#define TH 360
#define TL 96
#define TR 220
#define TT 16
#define TB 56

/* The y axis: gridlines and round amounts up to top. */
static void y_axis(FILE *f, int64_t top, int64_t step)
{
	char a[48];
	int dec = step % 10000 ? 6 : 2;

	/* top >= step: it is max (>= 1) rounded up to one */
	for (int64_t v = 0;; v += step) {
		double y = TH - TB - (double)v / (double)top * (TH - TB - TT);

		fprintf(f,
			"<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" "
			"y2=\"%.1f\"/><text x=\"%d\" y=\"%.1f\" "
			"text-anchor=\"end\">%s</text>\n",
			TL, TW - TR, y, y, TL - 8, y + 4,
			hb_report_fixed(v, MICRO, dec, a));
		if (v > top - step)
			break;
	}
	fprintf(f,
		"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" "
		"stroke=\"#52606d\"/>\n"
		"<text class=\"axis\" transform=\"translate(18 %d) "
		"rotate(-90)\" text-anchor=\"middle\">Amount</text>\n",
		TL, TW - TR, TH - TB, TH - TB, (TH - TB + TT) / 2);
}

/* The legend, right of the plot: one swatch per account. */
static void legend(FILE *f, const struct hb_ledger_series *s)
{
	size_t rows = (TH - TT) / 20;

	for (size_t k = 0; k < s->n_keys && k < rows; k++) {
		int y = TT + 20 * (int)k;

		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
			"fill=\"%s\"/><text x=\"%d\" y=\"%d\">",
			TW - TR + 16, y, palette[k % N_PALETTE], TW - TR + 34,
			y + 10);
		esc_short(f, key_or(s->keys[k], "(no account)"), 22);
		fputs("</text>\n", f);
	}
	if (s->n_keys > rows)
		fprintf(f, "<text x=\"%d\" y=\"%d\">and %zu more</text>\n",
			TW - TR + 16, TH - 4, s->n_keys - rows);
}

/* The bars of bucket b, stacked from the axis up: one per account with
 * entries in it (a negative sum, after reversals, is drawn flat). */
static void stack(FILE *f, const struct hb_ledger_series *s, size_t b, double x,
		  double w, int64_t top)
{
	double y = TH - TB, scale = (double)(TH - TB - TT) / (double)top;
	char a[48];

	for (size_t k = 0; k < s->n_keys; k++) {
		int64_t v = s->amount_micros[k * s->n_buckets + b];
		double h = v > 0 ? (double)v * scale : 0;

		if (!s->has[k * s->n_buckets + b])
			continue;
		y -= h;
		fputs("<rect data-account=\"", f);
		esc(f, key_or(s->keys[k], ""));
		fprintf(f,
			"\" data-bucket=\"%s\" data-micros=\"%" PRId64 "\" "
			"x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
			"fill=\"%s\"><title>",
			s->buckets[b], v, x, y, w, h, palette[k % N_PALETTE]);
		esc(f, key_or(s->keys[k], "(no account)"));
		fprintf(f, ", %s: %s</title></rect>\n", s->buckets[b],
			amount(v, a));
	}
}

static void time_chart(FILE *f, const struct hb_ledger_series *s)
{
	double slot = (double)(TW - TL - TR) / (double)s->n_buckets;
	int64_t max = 1, step, top;
	/* a label every `every` buckets, so that they do not overlap */
	size_t every = (size_t)(70.0 / slot) + 1;

	for (size_t b = 0; b < s->n_buckets; b++) {
		int64_t sum = 0;

		for (size_t k = 0; k < s->n_keys; k++)
			if (s->amount_micros[k * s->n_buckets + b] > 0)
				sum += s->amount_micros[k * s->n_buckets + b];
		max = sum > max ? sum : max;
	}
	step = nice_step(max);
	/* max rounded up to a step, without passing INT64_MAX */
	top = max / step * step;
	if (top < max)
		top = top > INT64_MAX - step ? INT64_MAX : top + step;
	fprintf(f,
		"<svg id=\"spend-by-account\" viewBox=\"0 0 %d %d\" "
		"role=\"img\" aria-label=\"Spend by account per %s\">\n",
		TW, TH, s->step == HB_STEP_DAY ? "day" : "month");
	y_axis(f, top, step);
	for (size_t b = 0; b < s->n_buckets; b++) {
		double x = TL + slot * (double)b;

		double w = slot * 0.7 < 90 ? slot * 0.7 : 90;

		stack(f, s, b, x + (slot - w) / 2, w, top);
		if (b % every == 0)
			fprintf(f,
				"<text x=\"%.1f\" y=\"%d\" "
				"text-anchor=\"middle\">%s</text>\n",
				x + slot / 2, TH - TB + 18,
				s->buckets[b] +
					(s->step == HB_STEP_DAY ? 5 : 0));
	}
	fprintf(f,
		"<text class=\"axis\" x=\"%d\" y=\"%d\" "
		"text-anchor=\"middle\">%s (UTC)</text>\n",
		(TW - TR + TL) / 2, TH - 10,
		s->step == HB_STEP_DAY ? "Day" : "Month");
	legend(f, s);
	fputs("</svg>\n", f);
}

/* --- horizontal bars: the sides, the top users --------------------------- */

struct bar {
	const char *key, *label;
	int64_t micros;
};

#define HW 540
#define HL 180 /* the labels' column */
#define HR 160 /* the amounts' column */

/* Percent of total with one decimal, exactly, for total > 0. */
static void percent(FILE *f, int64_t v, int64_t total)
{
	__int128 pm = ((__int128)v * 2000 + total) / (2 * (__int128)total);

	fprintf(f, " (%s%" PRId64 ".%" PRId64 "%%)", pm < 0 ? "-" : "",
		(int64_t)(pm < 0 ? -pm : pm) / 10,
		(int64_t)(pm < 0 ? -pm : pm) % 10);
}

/* One bar per item, longest for the largest amount; attr names what the
 * data- attribute says (side, user). */
static void hbar_chart(FILE *f, const char *id, const char *attr,
		       const struct bar *b, size_t n, int64_t total)
{
	int64_t max = 1;
	char a[48];

	for (size_t i = 0; i < n; i++)
		max = b[i].micros > max ? b[i].micros : max;
	fprintf(f,
		"<svg id=\"%s\" viewBox=\"0 0 %d %zu\" role=\"img\" "
		"aria-label=\"%s\">\n",
		id, HW, 30 * n + 12, id);
	for (size_t i = 0; i < n; i++) {
		double w = b[i].micros > 0 ? (double)b[i].micros / (double)max *
						     (HW - HL - HR)
					   : 0;
		int y = 6 + 30 * (int)i;

		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">",
			HL - 8, y + 15);
		esc_short(f, b[i].label, 22);
		fprintf(f, "</text>\n<rect data-%s=\"", attr);
		esc(f, b[i].key);
		fprintf(f,
			"\" data-micros=\"%" PRId64 "\" x=\"%d\" y=\"%d\" "
			"width=\"%.2f\" height=\"20\" fill=\"%s\"><title>",
			b[i].micros, HL, y, w, palette[i % N_PALETTE]);
		esc(f, b[i].label);
		fprintf(f, ": %s</title></rect>\n", amount(b[i].micros, a));
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s", HW - HR + 8, y + 15,
			amount(b[i].micros, a));
		if (total > 0)
			percent(f, b[i].micros, total);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}

static const char *side_label(const char *side)
{
	if (side && !strcmp(side, "slurm"))
		return "On-prem (Slurm)";
	if (side && !strcmp(side, "kubernetes"))
		return "Cluster (Kubernetes)";
	return key_or(side, "(no side)");
}

static int by_amount(const void *pa, const void *pb)
{
	const struct bar *a = pa, *b = pb;

	if (a->micros != b->micros)
		return a->micros > b->micros ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* The lines of a report of the window by `by`, as bars; sorted by
 * amount when top, and at most top of them. */
static int bars_by(struct hb_store *st, const struct hb_ledger_report *r,
		   enum hb_ledger_by by, size_t top, struct bar **out,
		   size_t *n, struct hb_ledger_report **keep,
		   struct hb_err *err)
{
	int rc = hb_store_report(st, by, r->from_ms, r->to_ms, keep, err);
	struct hb_ledger_report *l = *keep;

	if (rc)
		return rc;
	if (!(*out = calloc(l->n_lines + 1, sizeof(**out))))
		return hb_err_set(err, HB_ENOMEM, NULL, 0,
				  "report: out of memory");
	for (size_t i = 0; i < l->n_lines; i++) {
		(*out)[i].key = key_or(l->lines[i].key, "");
		(*out)[i].label =
			by == HB_BY_SIDE ? side_label(l->lines[i].key)
					 : key_or(l->lines[i].key, "(no user)");
		(*out)[i].micros = l->lines[i].amount_micros;
	}
	*n = l->n_lines;
	if (top) {
		qsort(*out, *n, sizeof(**out), by_amount);
		*n = *n < top ? *n : top;
	}
	return 0;
}

/* --- the table ----------------------------------------------------------- */

static void cell(FILE *f, const char *tag, const char *text)
{
	fprintf(f, "<%s>", tag);
	esc(f, text);
	fprintf(f, "</%s>", tag);
}

static void table_line(FILE *f, const struct hb_ledger_report *r,
		       const struct hb_ledger_line *l, const char *key,
		       const char *tag, const int64_t *idle)
{
	char a[48];

	fputs("<tr>", f);
	if (key)
		cell(f, tag, key);
	else
		fprintf(f, "<%s class=\"none\">none</%s>", tag, tag);
	fprintf(f, "<%s>%" PRId64 "</%s>", tag, l->jobs, tag);
	cell(f, tag, hb_report_fixed(l->cpu_mcore_s, HB_REPORT_CORE_H, 2, a));
	for (size_t t = 0; t < r->n_types; t++)
		cell(f, tag,
		     hb_report_fixed(l->gpu_s[t], HB_REPORT_HOUR, 2, a));
	cell(f, tag, hb_report_fixed(l->mem_mib_s, HB_REPORT_MEM_H, 2, a));
	cell(f, tag, hb_report_fixed(l->node_s, HB_REPORT_HOUR, 2, a));
	cell(f, tag, hb_report_fixed(l->egress_bytes, INT64_C(1) << 30, 2, a));
	cell(f, tag, HB_REPORT_GB_MONTHS(l->storage_mib_s, 2, a));
	cell(f, tag, amount(l->amount_micros, a));
	if (idle)
		cell(f, tag, amount(*idle, a));
	cell(f, tag, l->rate_versions);
	fputs("</tr>\n", f);
}

static void table(FILE *f, const struct hb_ledger_report *r,
		  const struct hb_report_idle *id)
{
	const char *by = hb_ledger_by_name(r->by);

	fprintf(f,
		"<table id=\"lines\">\n<thead><tr><th>%c%s</th>"
		"<th>Jobs</th><th>Core-h</th>",
		toupper((unsigned char)by[0]), by + 1);
	for (size_t t = 0; t < r->n_types; t++) {
		fputs("<th>GPU-h ", f);
		esc(f, r->types[t]);
		fputs("</th>", f);
	}
	fprintf(f,
		"<th>Mem GB-h</th><th>Node-h</th><th>Egress GB</th>"
		"<th>Storage GB-months</th><th>Amount</th>%s<th>Rate cards</th></tr></thead>\n<tbody>\n",
		id->on ? "<th>Idle</th>" : "");
	for (size_t i = 0; i < r->n_lines; i++)
		table_line(f, r, &r->lines[i], r->lines[i].key, "td",
			   id->on ? &id->lines[i] : NULL);
	fputs("</tbody>\n<tfoot>\n", f);
	table_line(f, r, &r->total, "Total", "td",
		   id->on ? &id->total_micros : NULL);
	fputs("</tfoot>\n</table>\n", f);
}

/* --- the page ------------------------------------------------------------ */

/* An instant as its day when it is midnight UTC, else RFC 3339. */
static void day_or_time(int64_t ms, char out[32])
{
	hb_time_rfc3339_format(ms / 1000, out);
	if (ms % (INT64_C(86400) * 1000) == 0)
		out[10] = 0;
}

/* The page up to its subtitle's end: the title, the window (from and to
 * as given, else first and last), what the page holds. */
static void page_open(FILE *f, const char *h1, int64_t from_ms, int64_t to_ms,
		      const char *first, const char *last, const char *what,
		      const char *holds)
{
	char from[32], to[32];

	snprintf(from, sizeof(from), "%s", first);
	snprintf(to, sizeof(to), "%s", last);
	if (from_ms > 0)
		day_or_time(from_ms, from);
	if (to_ms != INT64_MAX)
		day_or_time(to_ms, to);
	fprintf(f,
		"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		"<meta charset=\"utf-8\">\n<title>%s, %s to %s</title>\n"
		"<style>%s</style>\n</head>\n<body>\n<main>\n<h1>%s</h1>\n"
		"<p class=\"sub\">%s from %s %s %s (UTC); %s.</p>\n",
		h1, from, to, style, h1, what, from,
		to_ms != INT64_MAX ? "up to, not including," : "to", to, holds);
}

static void head(FILE *f, const struct hb_ledger_report *r,
		 const struct hb_ledger_series *s)
{
	char holds[64], a[48];
	int64_t gpu = 0;

	for (size_t t = 0; t < r->n_types; t++)
		gpu += r->total.gpu_s[t];
	snprintf(holds, sizeof(holds), "lines by %s", hb_ledger_by_name(r->by));
	/* the first and last entries' days or months */
	page_open(f, "Chargeback report", r->from_ms, r->to_ms,
		  s->n_buckets ? s->buckets[0] : "the first entry",
		  s->n_buckets ? s->buckets[s->n_buckets - 1]
			       : "the last entry",
		  "Ledger entries whose period ends", holds);
	fputs("<div class=\"tiles\">\n", f);
	fprintf(f,
		"<div class=\"tile\"><b id=\"total\">%s</b>"
		"<span>Total amount</span></div>\n",
		amount(r->total.amount_micros, a));
	fprintf(f,
		"<div class=\"tile\"><b>%" PRId64 "</b><span>Jobs</span>"
		"</div>\n",
		r->total.jobs);
	fprintf(f,
		"<div class=\"tile\"><b>%s</b><span>Core-hours</span>"
		"</div>\n",
		hb_report_fixed(r->total.cpu_mcore_s, HB_REPORT_CORE_H, 2, a));
	fprintf(f,
		"<div class=\"tile\"><b>%s</b><span>GPU-hours</span>"
		"</div>\n</div>\n",
		hb_report_fixed(gpu, HB_REPORT_HOUR, 2, a));
}

static int charts(FILE *f, struct hb_store *st,
		  const struct hb_ledger_report *r,
		  const struct hb_ledger_series *s, struct hb_err *err)
{
	struct hb_ledger_report *sides = NULL, *users = NULL;
	struct bar *sb = NULL, *ub = NULL;
	size_t ns = 0, nu = 0;
	int rc;

	fprintf(f, "<section>\n<h2>Spend by account, per %s</h2>\n",
		s->step == HB_STEP_DAY ? "day" : "month");
	if (s->n_buckets)
		time_chart(f, s);
	else
		fputs("<p class=\"none\">No ledger entries in this window."
		      "</p>\n",
		      f);
	fputs("</section>\n", f);
	rc = bars_by(st, r, HB_BY_SIDE, SIZE_MAX, &sb, &ns, &sides, err);
	if (!rc)
		rc = bars_by(st, r, HB_BY_USER, TOP_USERS, &ub, &nu, &users,
			     err);
	if (!rc) {
		fputs("<div class=\"row\">\n<section>\n<h2>On-prem and "
		      "cluster</h2>\n",
		      f);
		hbar_chart(f, "spend-by-side", "side", sb, ns,
			   r->total.amount_micros);
		fprintf(f,
			"</section>\n<section>\n<h2>Top %d users by "
			"spend</h2>\n",
			TOP_USERS);
		hbar_chart(f, "top-users", "user", ub, nu,
			   r->total.amount_micros);
		fputs("</section>\n</div>\n", f);
	}
	free(sb);
	free(ub);
	hb_ledger_report_free(sides);
	hb_ledger_report_free(users);
	return rc;
}

int hb_report_html(FILE *f, struct hb_store *st,
		   const struct hb_ledger_report *r,
		   const struct hb_report_idle *idle, struct hb_err *err)
{
	struct hb_ledger_series *s = NULL;
	int rc = hb_store_report_series(st, HB_BY_ACCOUNT, HB_STEP_AUTO,
					r->from_ms, r->to_ms, &s, err);

	if (rc)
		return rc;
	head(f, r, s);
	rc = charts(f, st, r, s, err);
	if (!rc) {
		fputs("<h2>Lines</h2>\n", f);
		table(f, r, idle);
		fputs("<footer>Amounts are sums of the ledger's entries in "
		      "micro-units of the rate card's currency, printed "
		      "exactly; the lines add up to the total. Produced by "
		      "hpcbridge report.</footer>\n</main>\n</body>\n</html>\n",
		      f);
	}
	hb_ledger_series_free(s);
	return rc;
}

/* --- the pilot report ---------------------------------------------------- */

static const char *const side_title[2] = { "On-prem (Slurm)",
					   "Cluster (Kubernetes)" };

static void pilot_row(FILE *f, const struct hb_pilot_report *p, int g, int sd)
{
	const struct hb_pilot_cell *c = &p->cell[g][sd];
	char a[48];

	fprintf(f,
		"<tr><td>%s</td><td>%s</td><td>%" PRId64 "</td><td>%" PRId64
		"</td><td>%s%s</td>",
		hb_pilot_group_name((enum hb_pilot_group)g), side_title[sd],
		c->jobs, c->succeeded,
		c->jobs ? hb_report_fixed(c->succeeded * 100, c->jobs, 1, a)
			: "-",
		c->jobs ? "%" : "");
	fprintf(f, "<td>%s</td>",
		c->wait_median_ms < 0
			? "-"
			: hb_report_fixed(c->wait_median_ms, 1000, 0, a));
	fprintf(f, "<td>%s</td>",
		c->run_median_ms < 0
			? "-"
			: hb_report_fixed(c->run_median_ms, 1000, 0, a));
	fprintf(f, "<td>%s</td>",
		hb_report_fixed(c->cpu_mcore_s, HB_REPORT_CORE_H, 2, a));
	fprintf(f, "<td>%s</td>", amount(c->amount_micros, a));
	fprintf(f, "<td>%s</td></tr>\n",
		c->per_core_h_micros < 0 ? "-"
					 : amount(c->per_core_h_micros, a));
}

int hb_report_pilot_html(FILE *f, const struct hb_pilot_report *p)
{
	struct bar b[2 * HB__PILOT_COUNT];
	char labels[2 * HB__PILOT_COUNT][64];
	size_t n = 0;

	page_open(f, "Migration pilot", p->from_ms, p->to_ms, "the beginning",
		  "now",
		  "Terminal jobs of the pilot and control groups that "
		  "ended",
		  "per side");
	fputs("<section class=\"half\">\n<h2>Cost per core-hour</h2>\n", f);
	for (int g = 0; g < HB__PILOT_COUNT; g++)
		for (int sd = 0; sd < 2; sd++) {
			const struct hb_pilot_cell *c = &p->cell[g][sd];

			if (c->per_core_h_micros < 0)
				continue;
			snprintf(labels[n], sizeof(labels[n]), "%s, %s",
				 hb_pilot_group_name((enum hb_pilot_group)g),
				 sd ? "cluster" : "on-prem");
			b[n] = (struct bar){ labels[n], labels[n],
					     c->per_core_h_micros };
			n++;
		}
	hbar_chart(f, "cost-per-core-hour", "group", b, n, 0);
	fputs("</section>\n<h2>Groups</h2>\n<table id=\"pilot\">\n<thead>"
	      "<tr><th>Group</th><th>Side</th><th>Jobs</th><th>Succeeded"
	      "</th><th>Success</th><th>Median wait (s)</th><th>Median run "
	      "(s)</th><th>Core-h</th><th>Amount</th><th>Per core-h</th>"
	      "</tr></thead>\n<tbody>\n",
	      f);
	for (int g = 0; g < HB__PILOT_COUNT; g++)
		for (int sd = 0; sd < 2; sd++)
			pilot_row(f, p, g, sd);
	fputs("</tbody>\n</table>\n<footer>Success: succeeded of terminal "
	      "jobs. Wait: from submission to start; run: from start to end; "
	      "medians over the jobs that have the times. Cost: the jobs' "
	      "ledger entries over their core-hours. Produced by hpcbridge "
	      "report --pilot.</footer>\n</main>\n</body>\n</html>\n",
	      f);
	return 0;
}
