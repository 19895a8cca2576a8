/*
 * docread.c - reading policy and snapshot documents.
 *
 * Documents come from hb_doc_parse() as cJSON trees whose nodes know
 * their source line.  Every mapping is checked against the keys it may
 * hold, so a misspelt key is an error, not a silently ignored setting.
 * Every message reads "FILE:LINE: key.path: what is wrong".
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gateway/placement/docread.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/units.h"

static int failv(struct hb_rd *r, int code, const cJSON *at, const char *path,
		 const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
static int failv(struct hb_rd *r, int code, const cJSON *at, const char *path,
		 const char *fmt, va_list ap)
{
	char msg[HB_ERR_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return hb_err_set(r->err, code, r->file,
			  at ? (unsigned)hb_doc_line(at) : 0, "%s%s%s",
			  path ? path : "", path && *path ? ": " : "", msg);
}

int hb_rd_fail(struct hb_rd *r, const cJSON *at, const char *path,
	       const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = failv(r, HB_EINVAL, at, path, fmt, ap);
	va_end(ap);
	return rc;
}

/* path + "." + key into buf; a path too long for messages ends in
 * "...". */
const char *hb_rd_join(char *buf, const char *path, const char *key)
{
	int n = snprintf(buf, HB_RD_PATH_MAX, "%s%s%s", path, *path ? "." : "",
			 key);

	if (n < 0 || n >= HB_RD_PATH_MAX)
		memcpy(buf + HB_RD_PATH_MAX - 4, "...", 4);
	return buf;
}

const char *hb_rd_type_name(const cJSON *it)
{
	return hb_doc_type_name(it);
}

/* obj must be a mapping holding only keys from allowed (NULL-ended). */
int hb_rd_mapping(struct hb_rd *r, const cJSON *obj, const char *path,
		  const char *const *allowed)
{
	const cJSON *it;

	if (!cJSON_IsObject(obj))
		return hb_rd_fail(r, obj, path, "expected a mapping, not %s",
				  hb_rd_type_name(obj));
	cJSON_ArrayForEach (it, obj) {
		size_t i;
		char p[HB_RD_PATH_MAX];

		if (!allowed)
			continue;
		for (i = 0; allowed[i]; i++)
			if (!strcmp(it->string, allowed[i]))
				break;
		if (!allowed[i]) {
			char known[200];
			size_t n = 0;

			known[0] = '\0';
			for (i = 0; allowed[i] && n < sizeof(known); i++)
				n += (size_t)snprintf(
					known + n, sizeof(known) - n, "%s%s",
					i ? ", " : "", allowed[i]);
			return hb_rd_fail(
				r, it, hb_rd_join(p, path, it->string),
				"unknown key (known here: %s)", known);
		}
	}
	return 0;
}

/* The member key of obj, or NULL when absent or null. */
const cJSON *hb_rd_member(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return it && !cJSON_IsNull(it) ? it : NULL;
}

/* A scalar's text: strings as they are, numbers written back; NULL for
 * anything else. */
const char *hb_rd_scalar(const cJSON *it, char *buf, size_t size)
{
	double v;

	if (cJSON_IsString(it))
		return it->valuestring;
	if (!cJSON_IsNumber(it))
		return NULL;
	v = it->valuedouble;
	if (!isfinite(v))
		return NULL;
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.15g", v);
	return buf;
}

static const char *why(int rc)
{
	return rc == HB_ERANGE ? "too large" : "malformed";
}

/* A name: 1-128 printable characters, no whitespace. */
int hb_rd_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];

		if (c <= ' ' || c == 0x7f || n >= 128)
			return 0;
	}
	return n > 0;
}

int hb_rd_get_name(struct hb_rd *r, const cJSON *it, const char *path,
		   const char **out)
{
	if (!cJSON_IsString(it))
		return hb_rd_fail(r, it, path, "expected a name, not %s",
				  hb_rd_type_name(it));
	if (!hb_rd_name_ok(it->valuestring))
		return hb_rd_fail(
			r, it, path,
			"'%.60s' is not a name (1 to 128 characters, no "
			"spaces or control characters)",
			it->valuestring);
	*out = hb_arena_strdup(r->a, it->valuestring);
	return *out ? 0 : HB_ENOMEM;
}

/* A GPU type or MIG profile: lower-cased copy of [A-Za-z0-9._-]{1,64}. */
int hb_rd_gpu_name(struct hb_rd *r, const cJSON *at, const char *path,
		   const char *s, const char **out)
{
	size_t n = strlen(s);
	char *c;

	if (!strcmp(s, HB_GPU_ANY)) { /* any type at all */
		*out = HB_GPU_ANY;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			n = 0;
	if (!n || n > 64)
		return hb_rd_fail(r, at, path,
				  "'%.60s' is not a GPU type (letters, digits, "
				  "'.', '_' and '-')",
				  s);
	c = hb_arena_strdup(r->a, s);
	if (!c)
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++)
		c[i] = (char)tolower((unsigned char)c[i]);
	*out = c;
	return 0;
}

int hb_rd_get_bool(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, bool *out)
{
	const cJSON *it = hb_rd_member(obj, key);
	char p[HB_RD_PATH_MAX];

	if (!it)
		return 0;
	if (!cJSON_IsBool(it))
		return hb_rd_fail(r, it, hb_rd_join(p, path, key),
				  "expected true or false, not %s",
				  hb_rd_type_name(it));
	*out = cJSON_IsTrue(it);
	return 0;
}

int hb_rd_get_uint(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, uint64_t max, uint64_t *out)
{
	const cJSON *it = hb_rd_member(obj, key);
	char p[HB_RD_PATH_MAX], b[64];
	const char *t;
	uint64_t v = 0;

	if (!it)
		return 0;
	t = hb_rd_scalar(it, b, sizeof(b));
	if (!t || hb_parse_u64(t, max, &v))
		return hb_rd_fail(r, it, hb_rd_join(p, path, key),
				  "expected a whole number from 0 to %llu",
				  (unsigned long long)max);
	*out = v;
	return 0;
}

int hb_rd_get_u32(struct hb_rd *r, const cJSON *obj, const char *path,
		  const char *key, uint32_t max, uint32_t *out)
{
	uint64_t v = *out;
	int rc = hb_rd_get_uint(r, obj, path, key, max, &v);

	*out = (uint32_t)v;
	return rc;
}

/* A scalar read by a value parser (units.h style), with the words of its
 * errors. */
struct scalar_kind {
	const char *what; /* "an amount like 0.25" */
	const char *noun; /* "amount" */
	const char *hint; /* how a good one looks */
	int (*parse)(const char *s, void *out);
};

static int parse_money(const char *s, void *out)
{
	return hb_parse_money(s, out);
}

static int parse_duration(const char *s, void *out)
{
	return hb_parse_duration(s, out);
}

static int parse_size(const char *s, void *out)
{
	return hb_parse_size(s, out);
}

static const struct scalar_kind k_money = {
	"an amount like 0.25", "amount",
	"(digits, at most 6 decimals, not negative)", parse_money
};
static const struct scalar_kind k_duration = {
	"a duration like 6h10m", "duration",
	"(like 90s, 11m, 6h10m, 1d12h; a bare number is seconds)",
	parse_duration
};
static const struct scalar_kind k_size = {
	"a size like 800G", "size",
	"(like 800G, 1.5TB, 512Mi; a bare number is bytes)", parse_size
};

static int get_scalar(struct hb_rd *r, const cJSON *obj, const char *path,
		      const char *key, const struct scalar_kind *k, void *out)
{
	const cJSON *it = hb_rd_member(obj, key);
	char p[HB_RD_PATH_MAX], b[64];
	const char *t;
	int rc;

	if (!it)
		return 0;
	t = hb_rd_scalar(it, b, sizeof(b));
	if (!t)
		return hb_rd_fail(r, it, hb_rd_join(p, path, key),
				  "expected %s, not %s", k->what,
				  hb_rd_type_name(it));
	if ((rc = k->parse(t, out)))
		return hb_rd_fail(r, it, hb_rd_join(p, path, key),
				  "%s '%.40s' is %s %s", k->noun, t, why(rc),
				  k->hint);
	return 0;
}

int hb_rd_get_money(struct hb_rd *r, const cJSON *obj, const char *path,
		    const char *key, hb_money *out)
{
	return get_scalar(r, obj, path, key, &k_money, out);
}

int hb_rd_get_duration(struct hb_rd *r, const cJSON *obj, const char *path,
		       const char *key, int64_t *out)
{
	return get_scalar(r, obj, path, key, &k_duration, out);
}

int hb_rd_get_size(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, uint64_t *out)
{
	return get_scalar(r, obj, path, key, &k_size, out);
}

int hb_rd_get_mem_mb(struct hb_rd *r, const cJSON *obj, const char *path,
		     const char *key, uint64_t *out)
{
	uint64_t bytes = (uint64_t)-1;
	int rc = hb_rd_get_size(r, obj, path, key, &bytes);

	if (!rc && bytes != (uint64_t)-1)
		*out = (bytes + 1048575) / 1048576;
	return rc;
}

/* A percentage: "20%" or a number of percent. */
int hb_rd_get_percent(struct hb_rd *r, const cJSON *obj, const char *path,
		      const char *key, int32_t max_bp, int32_t *out)
{
	const cJSON *it = hb_rd_member(obj, key);
	char p[HB_RD_PATH_MAX], b[64];
	const char *t;
	int32_t v;
	int rc;

	if (!it)
		return 0;
	t = hb_rd_scalar(it, b, sizeof(b));
	if (t && cJSON_IsNumber(it)) {
		size_t n = strlen(b); /* b holds the number */

		if (n + 2 > sizeof(b))
			t = NULL;
		else
			memcpy(b + n, "%", 2);
	}
	if (!t)
		return hb_rd_fail(r, it, hb_rd_join(p, path, key),
				  "expected a percentage like 20%%, not %s",
				  hb_rd_type_name(it));
	rc = hb_parse_percent(t, &v);
	if (!rc && v > max_bp)
		rc = HB_ERANGE;
	if (rc)
		return hb_rd_fail(
			r, it, hb_rd_join(p, path, key),
			"percentage '%.40s' is %s (0%% to %d%%, at most "
			"2 decimals)",
			t, why(rc), max_bp / 100);
	*out = v;
	return 0;
}

/* One of words[] (NULL-ended); *out is its index. */
int hb_rd_get_word(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, const char *const *words, uint8_t *out)
{
	const cJSON *it = hb_rd_member(obj, key);
	char p[HB_RD_PATH_MAX], list[160];
	size_t n = 0;

	if (!it)
		return 0;
	for (uint8_t i = 0; cJSON_IsString(it) && words[i]; i++)
		if (!strcmp(it->valuestring, words[i])) {
			*out = i;
			return 0;
		}
	list[0] = '\0';
	for (size_t i = 0; words[i] && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      i ? ", " : "", words[i]);
	if (cJSON_IsString(it))
		return hb_rd_fail(r, it, hb_rd_join(p, path, key),
				  "'%.40s' is not one of: %s", it->valuestring,
				  list);
	return hb_rd_fail(r, it, hb_rd_join(p, path, key),
			  "expected one of: %s, not %s", list,
			  hb_rd_type_name(it));
}

/* A list of names (or GPU types when gpu is set). */
int hb_rd_get_names(struct hb_rd *r, const cJSON *obj, const char *path,
		    const char *key, bool gpu, const char ***out,
		    uint32_t *nout)
{
	const cJSON *it = hb_rd_member(obj, key), *e;
	char p[HB_RD_PATH_MAX], pe[HB_RD_PATH_MAX + 16];
	const char **v;
	uint32_t n = 0;
	int rc, count;

	if (!it)
		return 0;
	hb_rd_join(p, path, key);
	if (cJSON_IsString(it)) { /* one name alone */
		count = 1;
	} else if (!cJSON_IsArray(it)) {
		return hb_rd_fail(r, it, p, "expected a list of names, not %s",
				  hb_rd_type_name(it));
	} else {
		count = cJSON_GetArraySize(it);
	}
	if (count > HB_POLICY_MAX_ITEMS)
		return hb_rd_fail(r, it, p, "more than %d entries",
				  HB_POLICY_MAX_ITEMS);
	v = hb_arena_alloc(r->a, sizeof(*v) * (size_t)(count + 1));
	if (!v)
		return HB_ENOMEM;
	if (cJSON_IsString(it)) {
		rc = gpu ? hb_rd_gpu_name(r, it, p, it->valuestring, &v[0])
			 : hb_rd_get_name(r, it, p, &v[0]);
		if (rc)
			return rc;
		n = 1;
	} else {
		cJSON_ArrayForEach (e, it) {
			snprintf(pe, sizeof(pe), "%s[%u]", p, n);
			if (gpu && cJSON_IsString(e))
				rc = hb_rd_gpu_name(r, e, pe, e->valuestring,
						    &v[n]);
			else
				rc = hb_rd_get_name(r, e, pe, &v[n]);
			if (rc)
				return rc;
			for (uint32_t j = 0; j < n; j++)
				if (!strcmp(v[j], v[n]))
					return hb_rd_fail(
						r, e, pe,
						"'%s' is listed twice", v[n]);
			n++;
		}
	}
	*out = v;
	*nout = n;
	return 0;
}
