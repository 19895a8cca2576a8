/*
 * fidelity.c - the report of what became of every directive.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/fidelity.h"

void hb_report_init(struct hb_report *r, const char *target_kind)
{
	memset(r, 0, sizeof(*r));
	hb_arena_init(&r->arena, 0);
	r->target_kind = target_kind;
}

void hb_report_free(struct hb_report *r)
{
	hb_arena_free(&r->arena);
	memset(r, 0, sizeof(*r));
}

const char *hb_fate_name(enum hb_fate_kind k)
{
	switch (k) {
	case HB_FATE_MAPPED:
		return "mapped";
	case HB_FATE_CARRIED:
		return "carried";
	case HB_FATE_PARTIAL:
		return "partial";
	case HB_FATE_DROPPED:
		return "dropped";
	case HB_FATE_OVERRIDDEN:
		return "overridden";
	case HB_FATE_NONE:
	case HB__FATE_COUNT:
		break;
	}
	return "dropped";
}

void hb_report_fate(struct hb_report *r, enum hb_field f,
		    enum hb_fate_kind kind, const char *target,
		    const char *note_fmt, ...)
{
	char note[512];
	va_list ap;

	if ((unsigned)f >= HB__F_COUNT)
		return;
	r->fate[f].kind = (uint8_t)kind;
	r->fate[f].target = hb_arena_strdup(&r->arena, target);
	r->fate[f].note = NULL;
	if (note_fmt && !r->no_notes) {
		va_start(ap, note_fmt);
		vsnprintf(note, sizeof(note), note_fmt, ap);
		va_end(ap);
		r->fate[f].note = hb_arena_strdup(&r->arena, note);
	}
}

void hb_report_warn(struct hb_report *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	const char **arr;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Each array element repeats its job's remarks: keep one. */
	for (uint32_t i = 0; i < r->nwarnings; i++)
		if (!strcmp(r->warnings[i], msg))
			return;
	if (r->nwarnings == r->capwarnings) {
		uint32_t cap = r->capwarnings ? r->capwarnings * 2 : 8;

		arr = hb_arena_alloc(&r->arena, cap * sizeof(*arr));
		if (!arr)
			return;
		if (r->nwarnings)
			memcpy(arr, r->warnings, r->nwarnings * sizeof(*arr));
		r->warnings = arr;
		r->capwarnings = cap;
	}
	r->warnings[r->nwarnings] = hb_arena_strdup(&r->arena, msg);
	if (r->warnings[r->nwarnings])
		r->nwarnings++;
}

static const char *prov_kind_name(uint8_t k)
{
	switch (k) {
	case HB_PROV_FILE:
		return "file";
	case HB_PROV_ENV:
		return "env";
	case HB_PROV_CLI:
		return "cli";
	case HB_PROV_MANIFEST:
		return "manifest";
	case HB_PROV_DERIVED:
		return "derived";
	}
	return "none";
}

/*
 * The fate of field f as the emitter recorded it.  The fabric reaches
 * placement whatever the target, so an emitter that records nothing for
 * it leaves it carried there, with what said so.
 */
static const struct hb_fate *fate_of(const struct hb_jobspec *spec,
				     const struct hb_report *r, int f,
				     struct hb_fate *tmp)
{
	static const char *const to[] = { "placement (fabric auto)",
					  "placement (fabric tcp)",
					  "placement (fabric rdma)" };

	if (f != HB_F_FABRIC || r->fate[f].kind != HB_FATE_NONE ||
	    spec->fabric >= sizeof(to) / sizeof(to[0]))
		return &r->fate[f];
	tmp->kind = HB_FATE_CARRIED;
	tmp->target = to[spec->fabric];
	tmp->note = r->no_notes ? NULL : spec->fabric_why;
	return tmp;
}

/* Room for any path (PATH_MAX) and ":LINE". */
#define WHERE_MAX 4128

/* "job.sh:5", "env", "argv[3]", "job.yaml" */
static void where(const struct hb_jobspec *spec, struct hb_prov o, char *buf,
		  size_t n)
{
	switch (o.kind) {
	case HB_PROV_FILE:
	case HB_PROV_MANIFEST:
		if (o.line)
			snprintf(buf, n, "%s:%u", spec->source_name, o.line);
		else
			snprintf(buf, n, "%s", spec->source_name);
		break;
	case HB_PROV_ENV:
		snprintf(buf, n, "environment");
		break;
	case HB_PROV_CLI:
		snprintf(buf, n, "argv[%u]", o.line);
		break;
	default:
		snprintf(buf, n, "%s", prov_kind_name(o.kind));
	}
}

static int same_prov(struct hb_prov a, struct hb_prov b)
{
	return a.kind == b.kind && a.line == b.line;
}

/*
 * The fate of field f as set by directive d: overridden when a later
 * directive set the field again, otherwise the emitter's recorded fate,
 * and "dropped: no mapping" when the emitter recorded none.
 */
struct verdict {
	enum hb_fate_kind kind;
	const char *target;
	const char *note;
	char buf[WHERE_MAX + 16];
};

/* Fields whose repeated directives add to one another (variables, data
 * inputs, mail events) instead of the last one winning. */
static int accumulates(enum hb_field f)
{
	return f == HB_F_ENV || f == HB_F_DATA || f == HB_F_MAIL_TYPE;
}

/* A later directive replaced the value directive d gave field f.  Not
 * when the final value was derived from several directives, nor for
 * fields whose directives add up rather than replace each other. */
static int overridden(const struct hb_jobspec *spec,
		      const struct hb_directive *d, enum hb_field f)
{
	struct hb_prov final = spec->prov[f];

	return final.kind != HB_PROV_NONE &&
	       final.kind != HB_PROV_DERIVED &&
	       !same_prov(final, d->prov) && d->kind != HB_DIR_SCRIPT &&
	       !accumulates(f);
}

/* The kind of judge()'s verdict, without its words. */
static enum hb_fate_kind verdict_kind(const struct hb_jobspec *spec,
				      const struct hb_report *r,
				      const struct hb_directive *d,
				      enum hb_field f)
{
	struct hb_fate tmp;
	const struct hb_fate *fate = fate_of(spec, r, f, &tmp);

	if (overridden(spec, d, f))
		return HB_FATE_OVERRIDDEN;
	if (fate->kind == HB_FATE_NONE)
		return HB_FATE_DROPPED;
	return (enum hb_fate_kind)fate->kind;
}

static void judge(const struct hb_jobspec *spec, const struct hb_report *r,
		  const struct hb_directive *d, enum hb_field f,
		  struct verdict *v)
{
	struct hb_fate tmp;
	const struct hb_fate *fate = fate_of(spec, r, f, &tmp);

	v->kind = verdict_kind(spec, r, d, f);
	v->target = NULL;
	v->note = NULL;
	v->buf[0] = '\0';
	if (v->kind == HB_FATE_OVERRIDDEN) {
		char w[WHERE_MAX];

		where(spec, spec->prov[f], w, sizeof(w));
		snprintf(v->buf, sizeof(v->buf), "by %s", w);
		v->kind = HB_FATE_OVERRIDDEN;
		/* The reader's own remark names the winner best. */
		v->note = d->note ? d->note : v->buf;
		return;
	}
	if (fate->kind == HB_FATE_NONE) {
		snprintf(v->buf, sizeof(v->buf), "no %s equivalent",
			 r->target_kind ? r->target_kind : "target");
		v->note = v->buf;
		return;
	}
	v->target = fate->target;
	v->note = fate->note;
}

/* Which fields some directive set: set[f] is 1 for them. */
static void set_by_directives(const struct hb_jobspec *spec,
			      unsigned char set[HB__F_COUNT])
{
	memset(set, 0, HB__F_COUNT);
	for (uint32_t i = 0; i < spec->ndirectives; i++) {
		const struct hb_directive *d = &spec->directives[i];

		for (uint8_t k = 0; k < d->nfields; k++)
			if (d->fields[k] < HB__F_COUNT)
				set[d->fields[k]] = 1;
	}
}

/*
 * One line of the report: a field of a directive (or, for a field no
 * directive set, the field alone).  first is set on a directive's first
 * entry, so writers can print the directive once.
 */
struct entry {
	struct hb_prov prov;
	const char *text; /* the directive, or NULL for a bare field */
	const char *dnote;
	int first;
	const char *field;
	struct verdict v;
};

typedef int (*entry_fn)(void *ctx, const struct hb_jobspec *spec,
			const struct entry *e);

static int walk(const struct hb_jobspec *spec, const struct hb_report *r,
		entry_fn fn, void *ctx)
{
	struct entry e;
	unsigned char set[HB__F_COUNT];
	int rc = 0;

	set_by_directives(spec, set);
	for (uint32_t i = 0; !rc && i < spec->ndirectives; i++) {
		const struct hb_directive *d = &spec->directives[i];

		memset(&e, 0, sizeof(e));
		e.prov = d->prov;
		e.text = d->text;
		e.dnote = d->note;
		e.first = 1;
		if (d->nfields == 0) {
			e.field = "-";
			e.v.kind = HB_FATE_DROPPED;
			e.v.note = d->note ? d->note : "no equivalent";
			rc = fn(ctx, spec, &e);
			continue;
		}
		for (uint8_t k = 0; !rc && k < d->nfields; k++) {
			enum hb_field f = (enum hb_field)d->fields[k];

			judge(spec, r, d, f, &e.v);
			e.field = hb_field_name(f);
			rc = fn(ctx, spec, &e);
			e.first = 0;
		}
	}
	/* Fields set by no directive: derived values, manifest defaults. */
	for (int f = 0; !rc && f < HB__F_COUNT; f++) {
		struct hb_fate tmp;
		const struct hb_fate *fate = fate_of(spec, r, f, &tmp);

		if (!hb_jobspec_has(spec, (enum hb_field)f) || set[f])
			continue;
		memset(&e, 0, sizeof(e));
		e.prov = spec->prov[f];
		e.first = 1;
		e.field = hb_field_name((enum hb_field)f);
		e.v.kind = fate->kind ? (enum hb_fate_kind)fate->kind
				      : HB_FATE_DROPPED;
		e.v.target = fate->target;
		e.v.note = fate->note ? fate->note
				      : (fate->kind ? NULL : "no equivalent");
		rc = fn(ctx, spec, &e);
	}
	return rc;
}

/* The kinds walk() gives its entries, counted without their words (the
 * CLI's summary counts every job's report). */
void hb_report_counts(const struct hb_jobspec *spec, const struct hb_report *r,
		      unsigned counts[HB__FATE_COUNT])
{
	unsigned char set[HB__F_COUNT];

	memset(counts, 0, HB__FATE_COUNT * sizeof(*counts));
	set_by_directives(spec, set);
	for (uint32_t i = 0; i < spec->ndirectives; i++) {
		const struct hb_directive *d = &spec->directives[i];

		if (d->nfields == 0)
			counts[HB_FATE_DROPPED]++;
		for (uint8_t k = 0; k < d->nfields; k++) {
			enum hb_fate_kind v = verdict_kind(
				spec, r, d, (enum hb_field)d->fields[k]);

			counts[v < HB__FATE_COUNT ? v : HB_FATE_DROPPED]++;
		}
	}
	for (int f = 0; f < HB__F_COUNT; f++) {
		struct hb_fate tmp;
		unsigned k = fate_of(spec, r, f, &tmp)->kind;

		if (!hb_jobspec_has(spec, (enum hb_field)f) || set[f])
			continue;
		counts[k && k < HB__FATE_COUNT ? k : HB_FATE_DROPPED]++;
	}
}

struct text_ctx {
	struct hb_buf *out;
	unsigned counts[HB__FATE_COUNT];
};

static int text_entry(void *ctx, const struct hb_jobspec *spec,
		      const struct entry *e)
{
	struct text_ctx *t = ctx;
	char w[WHERE_MAX];
	int rc = 0;

	if (e->first) {
		where(spec, e->prov, w, sizeof(w));
		if (e->text)
			rc = hb_buf_printf(t->out, "%-14s %s", w, e->text);
		else
			rc = hb_buf_printf(t->out, "%-14s (%s)", w, e->field);
		/* The reader's own remark, once, when the fields below do
		 * not already carry it as their reason. */
		if (!rc && e->dnote && e->v.note != e->dnote)
			rc = hb_buf_printf(t->out, "  [%s]", e->dnote);
		if (!rc)
			rc = hb_buf_putc(t->out, '\n');
	}
	t->counts[e->v.kind < HB__FATE_COUNT ? e->v.kind : HB_FATE_DROPPED]++;
	if (!rc)
		rc = hb_buf_printf(t->out, "    %-16s %-8s", e->field,
				   hb_fate_name(e->v.kind));
	if (!rc && e->v.target)
		rc = hb_buf_printf(t->out, " %s", e->v.target);
	if (!rc && e->v.note)
		rc = hb_buf_printf(t->out, " (%s)", e->v.note);
	if (!rc)
		rc = hb_buf_putc(t->out, '\n');
	return rc;
}

/* Warnings the jobspec itself gives (hb_mpi_warnings()), after the
 * emitter's, each once. */
struct spec_warn {
	const struct hb_report *r;
	int (*put)(void *ctx, const char *msg);
	void *ctx;
};

static int spec_warn_one(void *ctx, const char *msg)
{
	struct spec_warn *w = ctx;

	for (uint32_t i = 0; i < w->r->nwarnings; i++)
		if (!strcmp(w->r->warnings[i], msg))
			return 0;
	return w->put(w->ctx, msg);
}

static int text_warn(void *ctx, const char *msg)
{
	return hb_buf_printf(ctx, "warning: %s\n", msg);
}

static int json_warn(void *ctx, const char *msg)
{
	cJSON *s = cJSON_CreateString(msg);

	if (!s || !cJSON_AddItemToArray(ctx, s)) {
		cJSON_Delete(s);
		return HB_ENOMEM;
	}
	return 0;
}

int hb_report_write_text(const struct hb_jobspec *spec,
			 const struct hb_report *r, struct hb_buf *out)
{
	struct spec_warn sw = { r, text_warn, out };
	struct text_ctx t = { .out = out };
	int rc;

	rc = hb_buf_printf(out, "# fidelity: %s -> %s\n", spec->source_name,
			   r->target_kind ? r->target_kind : "?");
	if (!rc)
		rc = walk(spec, r, text_entry, &t);
	for (uint32_t i = 0; !rc && i < r->nwarnings; i++)
		rc = hb_buf_printf(out, "warning: %s\n", r->warnings[i]);
	if (!rc)
		rc = hb_mpi_warnings(spec, spec_warn_one, &sw);
	if (!rc)
		rc = hb_buf_printf(
			out,
			"# %u mapped, %u partial, %u carried, "
			"%u dropped, %u overridden\n",
			t.counts[HB_FATE_MAPPED], t.counts[HB_FATE_PARTIAL],
			t.counts[HB_FATE_CARRIED], t.counts[HB_FATE_DROPPED],
			t.counts[HB_FATE_OVERRIDDEN]);
	return rc;
}

struct json_ctx {
	cJSON *entries;
	cJSON *fields; /* of the current directive */
};

static int json_entry(void *ctx, const struct hb_jobspec *spec,
		      const struct entry *e)
{
	struct json_ctx *j = ctx;
	cJSON *o, *f;

	(void)spec;
	if (e->first) {
		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(j->entries, o))
			return HB_ENOMEM;
		cJSON_AddStringToObject(o, "origin",
					prov_kind_name(e->prov.kind));
		cJSON_AddNumberToObject(o, "line", e->prov.line);
		if (e->text)
			cJSON_AddStringToObject(o, "text", e->text);
		if (e->dnote)
			cJSON_AddStringToObject(o, "note", e->dnote);
		j->fields = cJSON_AddArrayToObject(o, "fields");
		if (!j->fields)
			return HB_ENOMEM;
	}
	f = cJSON_CreateObject();
	if (!f || !cJSON_AddItemToArray(j->fields, f))
		return HB_ENOMEM;
	cJSON_AddStringToObject(f, "field", e->field);
	cJSON_AddStringToObject(f, "fate", hb_fate_name(e->v.kind));
	if (e->v.target)
		cJSON_AddStringToObject(f, "target", e->v.target);
	if (e->v.note)
		cJSON_AddStringToObject(f, "note", e->v.note);
	return 0;
}

cJSON *hb_report_to_json(const struct hb_jobspec *spec,
			 const struct hb_report *r)
{
	struct json_ctx j = { 0 };
	cJSON *root = cJSON_CreateObject(), *warns;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "source", spec->source_name);
	cJSON_AddStringToObject(root, "target",
				r->target_kind ? r->target_kind : "");
	j.entries = cJSON_AddArrayToObject(root, "entries");
	warns = cJSON_AddArrayToObject(root, "warnings");
	if (!j.entries || !warns || walk(spec, r, json_entry, &j)) {
		cJSON_Delete(root);
		return NULL;
	}
	for (uint32_t i = 0; i < r->nwarnings; i++)
		cJSON_AddItemToArray(warns, cJSON_CreateString(r->warnings[i]));
	{
		struct spec_warn sw = { r, json_warn, warns };

		if (hb_mpi_warnings(spec, spec_warn_one, &sw)) {
			cJSON_Delete(root);
			return NULL;
		}
	}
	return root;
}
