/*
 * doc_get.c - typed, bounds-checked members of an object (doc.h): the
 * one set of getters requests, replies and files are read with, so a
 * field that is wrong reads the same wherever it is.
 */
#include <inttypes.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"

/* Member key of obj, NULL when it is absent or null; 0, or "KEY:
 * required" when flags want it. */
static int member(const cJSON *obj, const char *key, unsigned flags,
		  const cJSON **v, struct hb_err *err)
{
	*v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsNull(*v))
		*v = NULL;
	if (!*v && (flags & HB_DOC_REQUIRED))
		return hb_err_set(err, HB_EINVAL, NULL, 0, "%s: required", key);
	return 0;
}

/* Whether s holds a control character that flags refuse. */
static int controls(const char *s, unsigned flags)
{
	int lines = !!(flags & HB_DOC_LINES);

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && !(lines && (c == '\n' || c == '\t'))) ||
		    c == 0x7f)
			return 1;
	}
	return 0;
}

int hb_doc_get_str(const cJSON *obj, const char *key, size_t max,
		   unsigned flags, const char **out, struct hb_err *err)
{
	const cJSON *v;
	int rc = member(obj, key, flags, &v, err);

	if (rc || !v)
		return rc;
	if (!cJSON_IsString(v))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be a string", key);
	if (strlen(v->valuestring) > max)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: longer than %zu bytes", key, max);
	if ((flags & HB_DOC_NONEMPTY) && !v->valuestring[0])
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must not be empty", key);
	if ((flags & (HB_DOC_ONELINE | HB_DOC_LINES)) &&
	    controls(v->valuestring, flags))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must not hold control characters", key);
	*out = v->valuestring;
	return 0;
}

/* A number member as a double, for the integer getters below: 1 when
 * absent (nothing to read), 0 with *x, or the error. */
static int number(const cJSON *obj, const char *key, unsigned flags, double *x,
		  struct hb_err *err)
{
	const cJSON *v;
	int rc = member(obj, key, flags, &v, err);

	if (rc)
		return rc;
	if (!v)
		return 1;
	if (!cJSON_IsNumber(v))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be an integer", key);
	*x = v->valuedouble;
	return 0;
}

int hb_doc_get_i64(const cJSON *obj, const char *key, int64_t min, int64_t max,
		   unsigned flags, int64_t *out, struct hb_err *err)
{
	double x = 0; /* set when number() returns 0 */
	int rc = number(obj, key, flags, &x, err);

	if (rc)
		return rc > 0 ? 0 : rc;
	/* 2^63 is (double)INT64_MAX, but not an int64_t: test it before
	 * the cast, which would be undefined. */
	if (!(x >= (double)min && x <= (double)max) ||
	    x >= 9223372036854775808.0 || x != (double)(int64_t)x)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be an integer from %" PRId64
				  " to %" PRId64,
				  key, min, max);
	*out = (int64_t)x;
	return 0;
}

int hb_doc_get_u64(const cJSON *obj, const char *key, uint64_t min,
		   uint64_t max, unsigned flags, uint64_t *out,
		   struct hb_err *err)
{
	double x = 0; /* set when number() returns 0 */
	int rc = number(obj, key, flags, &x, err);

	if (rc)
		return rc > 0 ? 0 : rc;
	/* 2^64, likewise (double)UINT64_MAX but no uint64_t */
	if (!(x >= (double)min && x <= (double)max) ||
	    x >= 18446744073709551616.0 || x != (double)(uint64_t)x)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be an integer from %" PRIu64
				  " to %" PRIu64,
				  key, min, max);
	*out = (uint64_t)x;
	return 0;
}

int hb_doc_get_bool(const cJSON *obj, const char *key, unsigned flags, int *out,
		    struct hb_err *err)
{
	const cJSON *v;
	int rc = member(obj, key, flags, &v, err);

	if (rc || !v)
		return rc;
	if (!cJSON_IsBool(v))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be true or false", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

int hb_doc_get_strv(const cJSON *obj, const char *key, unsigned flags,
		    const cJSON **out, struct hb_err *err)
{
	const cJSON *v, *c;
	int rc = member(obj, key, flags, &v, err);

	if (rc || !v)
		return rc;
	if (!cJSON_IsArray(v))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be a list of strings", key);
	cJSON_ArrayForEach (c, v)
		if (!cJSON_IsString(c))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "%s: must be a list of strings", key);
	*out = v;
	return 0;
}

int hb_doc_get_obj(const cJSON *obj, const char *key, unsigned flags,
		   const cJSON **out, struct hb_err *err)
{
	const cJSON *v;
	int rc = member(obj, key, flags, &v, err);

	if (rc || !v)
		return rc;
	if (!cJSON_IsObject(v))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: must be an object", key);
	*out = v;
	return 0;
}

const char *hb_doc_type_name(const cJSON *it)
{
	if (cJSON_IsString(it))
		return "a string";
	if (cJSON_IsNumber(it))
		return "a number";
	if (cJSON_IsBool(it))
		return "a boolean";
	if (cJSON_IsNull(it))
		return "null";
	if (cJSON_IsArray(it))
		return "a list";
	return "a mapping";
}
