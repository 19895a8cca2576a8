/*
 * fuzz_schema.c - the schema validator and the controller rules must never
 * crash on any document, and a CRD from anywhere must either load or fail
 * with an error that names it.
 *
 * The reference CRDs are loaded once, from $HB_SHARED_DIR or the shared/
 * folder next to the source tree.  Each input is parsed as a document;
 * it is validated with every flag combination, run through the rules, and
 * if it is a CRD, loaded into a fresh set that then validates it again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/schema.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hb_schema_set *set;

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		p = malloc((size_t)n + 1);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		}
		if (p)
			*len = (size_t)n;
	}
	fclose(f);
	return p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const crds[] = {
	    "kubeflow.org_mpijobs.yaml",
	    "trainer.kubeflow.org_trainjobs.yaml",
	    "trainer.kubeflow.org_clustertrainingruntimes.yaml",
	};
	const char *env = getenv("HB_SHARED_DIR");
	char dir[4096], path[4200];
	size_t i;

	(void)argc;
	(void)argv;
	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
	} else {
		/* this file is <src>/tests/fuzz/fuzz_schema.c */
		const char *tail = strstr(__FILE__, "tests/fuzz/fuzz_schema.c");
		int n = tail ? (int)(tail - __FILE__) : 0;

		snprintf(dir, sizeof(dir), "%.*s../shared", n, __FILE__);
	}
	set = hb_schema_set_new();
	if (!set)
		abort();
	for (i = 0; i < sizeof(crds) / sizeof(crds[0]); i++) {
		struct hb_err err = {0};
		size_t len = 0;
		char *buf;

		snprintf(path, sizeof(path), "%s/reference/crds/%s", dir,
			 crds[i]);
		buf = read_file(path, &len);
		if (!buf || hb_schema_set_add_crd(set, buf, len, path, &err)) {
			fprintf(stderr, "fuzz_schema: cannot load %s: %s\n",
				path, err.msg);
			abort();
		}
		free(buf);
	}
	return 0;
}

static void check_err(int rc, const struct hb_err *err)
{
	/* every failure explains itself */
	if (rc && rc != HB_ENOMEM && !err->msg[0])
		abort();
	if (!rc && err->code)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned flags[] = {0, HB_SCHEMA_CREATE, HB_SCHEMA_RULES,
					 HB_SCHEMA_CREATE | HB_SCHEMA_RULES};
	struct hb_err err;
	struct hb_buf out;
	cJSON *doc = NULL;
	const char *kind;
	size_t i;
	int rc;

	memset(&err, 0, sizeof(err));
	if (hb_doc_parse((const char *)data, size, "fuzz", &doc, &err))
		return 0;
	hb_buf_init(&out, 1024 * 1024);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		memset(&err, 0, sizeof(err));
		hb_buf_reset(&out);
		rc = hb_schema_validate_all(set, doc, flags[i], &out, &err);
		check_err(rc, &err);
		/* a valid object lists no violations */
		if (rc == 0 && out.len)
			abort();
	}
	memset(&err, 0, sizeof(err));
	check_err(hb_schema_check_rules(doc, NULL, &err), &err);
	memset(&err, 0, sizeof(err));
	check_err(hb_schema_check_trainjob_runtime(doc, doc, NULL, &err), &err);

	kind = cJSON_IsObject(doc) &&
		       cJSON_IsString(cJSON_GetObjectItem(doc, "kind"))
		   ? cJSON_GetObjectItem(doc, "kind")->valuestring
		   : "";
	if (!strcmp(kind, "CustomResourceDefinition")) {
		struct hb_schema_set *own = hb_schema_set_new();

		if (!own)
			abort();
		memset(&err, 0, sizeof(err));
		rc = hb_schema_set_add_crd_tree(own, doc, "fuzz", &err);
		check_err(rc, &err);
		if (rc && strncmp(err.msg, "fuzz", 4) && rc != HB_ENOMEM)
			abort();
		memset(&err, 0, sizeof(err));
		hb_buf_reset(&out);
		hb_schema_set_unchecked(own, &out);
		check_err(hb_schema_validate_all(own, doc, HB_SCHEMA_RULES,
						 NULL, &err),
			  &err);
		hb_schema_set_free(own);
	}
	hb_buf_free(&out);
	cJSON_Delete(doc);
	return 0;
}
