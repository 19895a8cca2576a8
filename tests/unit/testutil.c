/*
 * testutil.c - helpers shared by the cmocka unit tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/jobspec.h"
#include "hpcbridge/schema.h"
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
	     "yaml")};
	struct hb_schema_set *set = hb_schema_set_new();
	struct hb_err err = {0};

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
	struct hb_err err = {0};
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
	struct hb_origin o = {HB_ORIGIN_FILE, ++hb_test_lineno};
	struct hb_directive *d =
	    hb_jobspec_add_directive(s, HB_DIR_SBATCH, o, text, strlen(text));

	assert_non_null(d);
	hb_directive_add_field(d, (enum hb_field)f);
	hb_jobspec_set_origin(s, (enum hb_field)f, o);
}
