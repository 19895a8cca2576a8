/*
 * fuzz_emit.c - the streaming writer against the tree writers.  Any
 * input that reads as a document must write the same JSON and YAML bytes
 * (or fail the same way) through hb_emit_tree() as through
 * hb_doc_write_json/yaml(), and the tree back end must rebuild it.  Any
 * input that reads as a job must give the same MPIJob and TrainJob text
 * written straight (hb_*_write, a report without notes, as the CLI) as
 * built as a tree and then written (hb_*_emit, a full report), with the
 * same fidelity counts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hb_config cfg;
static int cfg_ready;

static void same(const struct hb_buf *a, int ra, const struct hb_buf *b,
		 int rb)
{
	if (ra != rb || a->len != b->len ||
	    (a->len && memcmp(a->data, b->data, a->len)))
		abort();
}

static void writers(const cJSON *doc)
{
	static const enum hb_emit_format fmts[] = { HB_EMIT_JSON, HB_EMIT_YAML,
						    HB_EMIT_JSON_COMPACT };

	for (int f = 0; f < 3; f++) {
		struct hb_buf a, b;
		struct hb_emit *e;
		int ra, rb;

		hb_buf_init(&a, 0);
		hb_buf_init(&b, 0);
		ra = f == 0   ? hb_doc_write_json(doc, &a)
		     : f == 1 ? hb_doc_write_yaml(doc, &a)
			      : hb_doc_write_json_compact(doc, &a);
		e = hb_emit_new(fmts[f], &b);
		if (!e)
			abort();
		hb_emit_tree(e, NULL, doc);
		rb = hb_emit_done(e);
		same(&a, ra, &b, rb);
		hb_emit_free(e);
		hb_buf_free(&a);
		hb_buf_free(&b);
	}
}

typedef int (*emit_fn)(const struct hb_jobspec *, const struct hb_k8s_opts *,
		       int64_t, cJSON **, struct hb_report *,
		       struct hb_err *);
typedef int (*write_fn)(const struct hb_jobspec *, const struct hb_k8s_opts *,
			int64_t, struct hb_emit *, struct hb_report *,
			struct hb_err *);

static void manifest(const struct hb_jobspec *spec, int64_t index,
		     const char *kind, emit_fn emit, write_fn wr)
{
	for (int f = 0; f < 2; f++) {
		struct hb_report full, bare;
		struct hb_err e1 = {0}, e2 = {0};
		struct hb_buf a, b;
		struct hb_emit *w;
		cJSON *doc = NULL;
		unsigned c1[HB__FATE_COUNT], c2[HB__FATE_COUNT];
		int ra, rb;

		hb_report_init(&full, kind);
		hb_report_init(&bare, kind);
		bare.no_notes = true;
		hb_buf_init(&a, 0);
		hb_buf_init(&b, 0);
		ra = emit(spec, &cfg.k8s, index, &doc, &full, &e1);
		if (!ra)
			ra = f ? hb_doc_write_yaml(doc, &a)
			       : hb_doc_write_json(doc, &a);
		w = hb_emit_new(f ? HB_EMIT_YAML : HB_EMIT_JSON, &b);
		if (!w)
			abort();
		rb = wr(spec, &cfg.k8s, index, w, &bare, &e2);
		same(&a, ra, &b, rb);
		if (!ra) {
			hb_report_counts(spec, &full, c1);
			hb_report_counts(spec, &bare, c2);
			if (memcmp(c1, c2, sizeof(c1)) || bare.nwarnings !=
							       full.nwarnings)
				abort();
		}
		hb_emit_free(w);
		cJSON_Delete(doc);
		hb_buf_free(&a);
		hb_buf_free(&b);
		hb_report_free(&full);
		hb_report_free(&bare);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_jobspec spec;
	struct hb_err err = {0};
	cJSON *doc = NULL;

	if (!cfg_ready) {
		if (hb_config_defaults(&cfg))
			abort();
		cfg_ready = 1;
	}
	if (hb_doc_parse((const char *)data, size, "fuzz", &doc, &err) == 0) {
		struct hb_emit *t = hb_emit_new(HB_EMIT_TREE, NULL);
		cJSON *back = NULL;

		writers(doc);
		if (!t)
			abort();
		hb_emit_tree(t, NULL, doc);
		if (hb_emit_done(t) == 0) {
			/* equal trees write equal YAML (NaN included) */
			struct hb_buf a, b;

			if (hb_emit_take(t, &back))
				abort();
			hb_buf_init(&a, 0);
			hb_buf_init(&b, 0);
			same(&a, hb_doc_write_yaml(doc, &a), &b,
			     hb_doc_write_yaml(back, &b));
			hb_buf_free(&a);
			hb_buf_free(&b);
			cJSON_Delete(back);
		}
		hb_emit_free(t);
		cJSON_Delete(doc);
	}
	memset(&err, 0, sizeof(err));
	hb_jobspec_init(&spec, "fuzz");
	if (hb_parse_any((const char *)data, size, "fuzz", NULL, &spec,
			 &err) == 0) {
		uint64_t n = hb_jobspec_array_count(&spec);

		manifest(&spec, -1, "MPIJob", hb_mpijob_emit, hb_mpijob_write);
		manifest(&spec, -1, "TrainJob", hb_trainjob_emit,
			 hb_trainjob_write);
		if (n)
			manifest(&spec, hb_jobspec_array_index(&spec, n - 1),
				 "MPIJob", hb_mpijob_emit, hb_mpijob_write);
	}
	hb_jobspec_free(&spec);
	return 0;
}
