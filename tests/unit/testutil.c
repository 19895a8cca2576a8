/*
 * testutil.c - helpers shared by the cmocka unit tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/schema.h"
#include "hpcbridge/store.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

char *hb_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n = 0;

	if (!f)
		fail_msg("cannot open %s", path);
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		fail_msg("cannot size %s", path);
	p = malloc((size_t)n + 1);
	assert_non_null(p);
	if (fread(p, 1, (size_t)n, f) != (size_t)n)
		fail_msg("short read on %s", path);
	p[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return p;
}

static char pathbuf[4096];

static const char *join(const char *dir, const char *rel)
{
	int n = snprintf(pathbuf, sizeof(pathbuf), "%s/%s", dir, rel);

	if (n < 0 || (size_t)n >= sizeof(pathbuf))
		fail_msg("path too long: %s/%s", dir, rel);
	return pathbuf;
}

const char *hb_test_src_path(const char *rel)
{
	return join(HB_SOURCE_DIR, rel);
}

const char *hb_test_shared_path(const char *rel)
{
	const char *env = getenv("HB_SHARED_DIR");

	return join(env && *env ? env : HB_SHARED_DIR, rel);
}

struct hb_schema_set *hb_test_load_crds(void)
{
	static const char *const crds[] = {
		"reference/crds/kubeflow.org_mpijobs.yaml",
		"reference/crds/trainer.kubeflow.org_trainjobs.yaml",
		("reference/crds/trainer.kubeflow.org_clustertrainingruntimes."
		 "yaml")
	};
	struct hb_schema_set *set = hb_schema_set_new();
	struct hb_err err = { 0 };

	assert_non_null(set);
	for (size_t i = 0; i < sizeof(crds) / sizeof(crds[0]); i++) {
		size_t len;
		char *buf =
			hb_test_read_file(hb_test_shared_path(crds[i]), &len);

		if (hb_schema_set_add_crd(set, buf, len, crds[i], &err))
			fail_msg("%s", err.msg);
		free(buf);
	}
	return set;
}

void hb_test_assert_valid(const struct hb_schema_set *set, const cJSON *doc)
{
	struct hb_buf v;
	struct hb_err err = { 0 };
	int rc;

	hb_buf_init(&v, 0);
	rc = hb_schema_validate_all(
		set, doc, HB_SCHEMA_CREATE | HB_SCHEMA_RULES, &v, &err);
	if (rc)
		fail_msg("emitted manifest is not valid (%d): %s\n%s", rc,
			 err.msg, v.data ? v.data : "");
	hb_buf_free(&v);
}

uint32_t hb_test_lineno;

void hb_test_dir(struct hb_jobspec *s, int f, const char *text)
{
	struct hb_prov o = { HB_PROV_FILE, ++hb_test_lineno };
	struct hb_directive *d = hb_jobspec_add_directive(s, HB_DIR_SBATCH, o,
							  text, strlen(text));

	assert_non_null(d);
	hb_directive_add_field(d, (enum hb_field)f);
	hb_jobspec_set_prov(s, (enum hb_field)f, o);
}

void hb_test_fabric_why_unplaced(cJSON *j)
{
	cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "fabric_why");
	char *at = cJSON_IsString(w) ? strstr(w->valuestring, " at ") : NULL;

	if (at)
		*at = '\0';
}

cJSON *hb_test_canon(const struct hb_jobspec *s)
{
	cJSON *j = hb_jobspec_to_json(s);

	assert_non_null(j);
	cJSON_DeleteItemFromObject(j, "source");
	cJSON_DeleteItemFromObject(j, "source_name");
	hb_test_fabric_why_unplaced(j);
	return j;
}

static int emit_kind(const struct hb_jobspec *s, const struct hb_config *cfg,
		     int kind, int64_t idx, cJSON **out, struct hb_report *rep,
		     struct hb_err *err)
{
	return kind == HB_SRC_TRAINJOB
		       ? hb_trainjob_emit(s, &cfg->k8s, idx, out, rep, err)
		       : hb_mpijob_emit(s, &cfg->k8s, idx, out, rep, err);
}

static void differs(const char *what, const char *context, const cJSON *a,
		    const cJSON *b)
{
	struct hb_buf x, y;

	hb_buf_init(&x, 0);
	hb_buf_init(&y, 0);
	hb_doc_write_json(a, &x);
	hb_doc_write_json(b, &y);
	fail_msg("%s differs\n--- context\n%s\n--- before\n%s--- after\n%s",
		 what, context ? context : "", x.data, y.data);
}

void hb_test_manifest_round_trip(const struct hb_jobspec *a,
				 const struct hb_config *cfg, int kind,
				 int64_t idx, const struct hb_schema_set *set,
				 const char *context)
{
	const char *name = kind == HB_SRC_TRAINJOB ? "TrainJob" : "MPIJob";
	struct hb_report rep;
	struct hb_err err = { 0 };
	struct hb_jobspec b;
	struct hb_buf yaml;
	cJSON *doc = NULL, *back = NULL, *again = NULL, *want, *got;

	hb_report_init(&rep, name);
	if (emit_kind(a, cfg, kind, idx, &doc, &rep, &err))
		fail_msg("emit: %s\n%s", err.msg, context ? context : "");
	if (set)
		hb_test_assert_valid(set, doc);
	/* Through YAML text, as it travels. */
	hb_buf_init(&yaml, 0);
	assert_int_equal(hb_doc_write_yaml(doc, &yaml), 0);
	assert_int_equal(
		hb_doc_parse(yaml.data, yaml.len, "m.yaml", &back, &err), 0);
	hb_jobspec_init(&b, "m.yaml");
	if ((kind == HB_SRC_TRAINJOB ? hb_trainjob_parse(back, &b, &err)
				     : hb_mpijob_parse(back, &b, &err)))
		fail_msg("parse back: %s\n%s", err.msg, yaml.data);
	assert_int_equal(b.source, kind);
	want = hb_test_canon(a);
	got = hb_test_canon(&b);
	if (!cJSON_Compare(want, got, 1))
		differs(kind == HB_SRC_TRAINJOB ? "TrainJob round trip"
						: "MPIJob round trip",
			context, want, got);
	/* Emitting again from what was read gives the same manifest. */
	if (emit_kind(&b, cfg, kind, idx, &again, &rep, &err))
		fail_msg("emit again: %s\n%s", err.msg, yaml.data);
	if (!cJSON_Compare(doc, again, 1))
		differs("manifest re-emitted", context, doc, again);
	cJSON_Delete(want);
	cJSON_Delete(got);
	cJSON_Delete(doc);
	cJSON_Delete(back);
	cJSON_Delete(again);
	hb_buf_free(&yaml);
	hb_jobspec_free(&b);
	hb_report_free(&rep);
}

int hb_test_store_open(struct hb_test_store *t, const char *name)
{
	struct hb_err err = { 0 };

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/state.db", t->dir);
	if (hb_store_open(t->path, &t->st, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		hb_test_store_close(t);
		return -1;
	}
	return 0;
}

void hb_test_store_close(struct hb_test_store *t)
{
	char p[160];

	hb_store_close(t->st);
	t->st = NULL;
	for (const char *const *s =
		     (const char *const[]){ "", "-wal", "-shm", NULL };
	     *s; s++) {
		snprintf(p, sizeof(p), "%s%s", t->path, *s);
		unlink(p);
	}
	rmdir(t->dir);
}
