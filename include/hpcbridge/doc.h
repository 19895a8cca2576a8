/*
 * doc.h - YAML and JSON documents as cJSON trees.
 *
 * Manifests and configuration are read into cJSON whether they were written
 * in YAML or JSON, and emitters build cJSON trees that are written out as
 * either.  YAML support is the subset Kubernetes manifests use: block and
 * flow collections, plain/quoted/literal/folded scalars, multi-document
 * streams, YAML 1.2 core-schema scalars (no anchors across documents, no
 * custom tags).
 */
#ifndef HPCBRIDGE_DOC_H
#define HPCBRIDGE_DOC_H

#include <stddef.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

struct cJSON;

/* Largest document accepted. */
#define HB_DOC_MAX (4u * 1024 * 1024)
/* Deepest nesting accepted. */
#define HB_DOC_MAX_DEPTH 64

/*
 * Parse one document (YAML or JSON; JSON is YAML) of len bytes named name.
 * A stream of several documents is HB_EINVAL unless it holds exactly one
 * non-empty document.  Caller frees *out with cJSON_Delete().
 * Errors read "NAME:LINE: message".
 */
int hb_doc_parse(const char *buf, size_t len, const char *name,
		 struct cJSON **out, struct hb_err *err);

/* Parse a stream of YAML documents; *out is a cJSON array of them. */
int hb_doc_parse_stream(const char *buf, size_t len, const char *name,
			struct cJSON **out, struct hb_err *err);

/* Append doc as pretty JSON (2-space indent) with a trailing newline. */
int hb_doc_write_json(const struct cJSON *doc, struct hb_buf *out);

/*
 * Append doc as block YAML.  Strings are quoted whenever a plain scalar
 * would read back as anything else (numbers, booleans, null, leading
 * indicators, ": ", " #"); multi-line strings use literal blocks "|".
 * Reading the output back with hb_doc_parse() gives an equal tree.
 */
int hb_doc_write_yaml(const struct cJSON *doc, struct hb_buf *out);

/* Follow a dotted path ("spec.mpiReplicaSpecs.Worker") through objects;
 * NULL if any step is missing. */
struct cJSON *hb_doc_get(const struct cJSON *doc, const char *path);

#endif
