/*
 * fuzz_translate.c - any input, end to end: detection, whichever parser
 * the input calls for, then every emitter and writer on what was read.
 * Emitters see jobspecs no hand-written test would build.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hb_config cfg;
static int cfg_ready;

static void emit_all(const struct hb_jobspec *spec, int64_t index)
{
	struct hb_report rep;
	struct hb_err err = {0};
	struct hb_buf out;
	cJSON *doc = NULL;

	hb_buf_init(&out, 0);
	hb_report_init(&rep, "MPIJob");
	if (hb_mpijob_emit(spec, &cfg.k8s, index, &doc, &rep, &err) == 0) {
		hb_doc_write_yaml(doc, &out);
		hb_doc_write_json(doc, &out);
	}
	cJSON_Delete(doc);
	doc = NULL;
	hb_report_write_text(spec, &rep, &out);
	cJSON_Delete(hb_report_to_json(spec, &rep));
	hb_report_free(&rep);

	hb_report_init(&rep, "TrainJob");
	if (hb_trainjob_emit(spec, &cfg.k8s, index, &doc, &rep, &err) == 0)
		hb_doc_write_yaml(doc, &out);
	cJSON_Delete(doc);
	hb_report_free(&rep);

	hb_report_init(&rep, "sbatch");
	hb_buf_reset(&out);
	hb_sbatch_emit(spec, &out, &rep, &err);
	hb_report_free(&rep);
	hb_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hb_arena trees;
	struct hb_jobspec spec;
	struct hb_err err = {0};
	/* Odd sizes build their trees in an arena scope, as the CLI does;
	 * even sizes with malloc, as the daemon does. */
	int scoped = size & 1;
	cJSON *j;

	if (!cfg_ready) {
		if (hb_config_defaults(&cfg))
			abort();
		cfg_ready = 1;
	}
	if (scoped)
		hb_doc_scope_begin(&trees);
	hb_jobspec_init(&spec, "fuzz");
	if (hb_parse_any((const char *)data, size, "fuzz", NULL, &spec,
			 &err) == 0) {
		uint64_t n = hb_jobspec_array_count(&spec);

		emit_all(&spec, -1);
		if (n)
			emit_all(&spec, hb_jobspec_array_index(&spec, n - 1));
		j = hb_jobspec_to_json(&spec);
		if (!j)
			abort();
		cJSON_Delete(j);
	} else if (!err.msg[0]) {
		abort(); /* every failure must say why */
	}
	hb_jobspec_free(&spec);
	if (scoped) {
		hb_doc_scope_end();
		hb_arena_reset(&trees);
	}
	return 0;
}
