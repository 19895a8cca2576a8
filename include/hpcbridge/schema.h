/*
 * schema.h - validating objects against CustomResourceDefinition schemas.
 *
 * Loads the openAPIV3Schema of each version of a CRD and checks objects
 * against it as the API server does with fieldValidation=Strict: types,
 * required, enum, format int32/int64, minimum/maximum, min/maxLength,
 * pattern-free string checks, min/maxItems, additionalProperties,
 * x-kubernetes-preserve-unknown-fields and x-kubernetes-int-or-string;
 * a field the schema does not declare is an error.  metadata is checked
 * as ObjectMeta: name/generateName as DNS subdomains, labels and
 * annotations as string maps with valid keys.
 */
#ifndef HPCBRIDGE_SCHEMA_H
#define HPCBRIDGE_SCHEMA_H

#include <stddef.h>

#include "hpcbridge/error.h"

struct cJSON;
struct hb_schema_set;

struct hb_schema_set *hb_schema_set_new(void);
void hb_schema_set_free(struct hb_schema_set *set);

/* Add the CRD (YAML or JSON text) to set.  Errors name the file. */
int hb_schema_set_add_crd(struct hb_schema_set *set, const char *buf,
			  size_t len, const char *name, struct hb_err *err);

/*
 * Validate obj (apiVersion and kind pick the schema).  Every violation is
 * appended to err as "PATH: message"; the first one is the detail.
 * Returns HB_ENOENT for an apiVersion/kind the set does not know,
 * HB_EINVAL for an invalid object.
 */
int hb_schema_validate(const struct hb_schema_set *set,
		       const struct cJSON *obj, struct hb_err *err);

#endif
