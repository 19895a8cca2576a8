/*
 * schema.c - schema sets: loading CRDs and compiling their schemas.
 *
 * A CRD's openAPIV3Schema is compiled once into a tree of struct snode
 * (properties sorted for binary search, patterns compiled, CEL rules bound
 * to native checks) held in an arena that belongs to the CRD.  Validation
 * (schema_validate.c) walks an object and the tree side by side, keeping
 * the JSON path of the current value in a fixed buffer, and reports every
 * violation (schema_format.c); the controllers' rules and the native CEL
 * checks are in schema_rules.c.
 * See docs/internals/schema.md.
 */
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/schema.h"
#include "translators/k8s/schema_int.h"

/* Deepest schema accepted. */
#define MAX_SCHEMA_DEPTH 128

/* ------------------------------------------------------------------ */
/* Compiling a schema                                                  */

struct cctx {
	struct crd *crd;
	const char *kw;	     /* keyword being compiled */
	const char *name;    /* file name for errors */
	const char *version; /* version being compiled */
	struct spath path;
	struct hb_err *err;
};

__attribute__((format(printf, 3, 4)))
static int cfail(struct cctx *cc, int code, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(cc->err, code, cc->name, 0, "%s: %s: %s",
			  cc->path.len ? cc->path.buf : "<root>",
			  cc->kw ? cc->kw : "schema", msg);
}

__attribute__((format(printf, 2, 3)))
static int unchecked(struct cctx *cc, const char *fmt, ...)
{
	struct hb_buf *b = &cc->crd->unchecked;
	va_list ap;
	int rc;

	rc = hb_buf_printf(b, "%s %s %s: ", cc->crd->kind, cc->version,
			   cc->path.len ? cc->path.buf : "<root>");
	if (rc)
		return cfail(cc, rc, "%s", hb_strerror(rc));
	va_start(ap, fmt);
	rc = hb_buf_vprintf(b, fmt, ap);
	va_end(ap);
	if (!rc)
		rc = hb_buf_putc(b, '\n');
	return rc ? cfail(cc, rc, "%s", hb_strerror(rc)) : 0;
}

static void *calloc_arena(struct cctx *cc, size_t n, size_t size)
{
	size_t bytes;

	if (size && n > SIZE_MAX / size)
		return NULL;
	bytes = n * size;
	return hb_arena_alloc(&cc->crd->arena, bytes > 0 ? bytes : 1);
}

static int kw_bool(struct cctx *cc, const cJSON *kw, int *out)
{
	if (!cJSON_IsBool(kw))
		return cfail(cc, HB_EINVAL, "must be a boolean");
	*out = cJSON_IsTrue(kw);
	return 0;
}

static int kw_count(struct cctx *cc, const cJSON *kw, long long *out)
{
	if (!hb_schema_is_integral(kw) || kw->valuedouble < 0)
		return cfail(cc, HB_EINVAL, "must be a non-negative integer");
	*out = (long long)kw->valuedouble;
	return 0;
}

static int kw_number(struct cctx *cc, const cJSON *kw, double *out)
{
	if (!cJSON_IsNumber(kw) || !isfinite(kw->valuedouble))
		return cfail(cc, HB_EINVAL, "must be a number");
	*out = kw->valuedouble;
	return 0;
}

static int kw_strings(struct cctx *cc, const cJSON *kw, const char ***out,
		      size_t *n)
{
	const cJSON *it;
	size_t i = 0;

	if (!cJSON_IsArray(kw))
		return cfail(cc, HB_EINVAL, "must be an array of strings");
	*n = (size_t)cJSON_GetArraySize(kw);
	*out = calloc_arena(cc, *n, sizeof(**out));
	if (!*out)
		return cfail(cc, HB_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, kw) {
		if (!cJSON_IsString(it))
			return cfail(cc, HB_EINVAL,
				     "must be an array of strings");
		(*out)[i++] = it->valuestring;
	}
	return 0;
}

static int compile(struct cctx *cc, const cJSON *js, int depth,
		   struct snode **out);

static int prop_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sprop *)a)->name,
		      ((const struct sprop *)b)->name);
}

static int compile_props(struct cctx *cc, const cJSON *kw, int depth,
			 struct snode *n)
{
	const cJSON *it;
	size_t i = 0;
	int rc;

	if (!cJSON_IsObject(kw))
		return cfail(cc, HB_EINVAL, "must be an object");
	n->nprops = (size_t)cJSON_GetArraySize(kw);
	n->props = calloc_arena(cc, n->nprops, sizeof(*n->props));
	if (!n->props)
		return cfail(cc, HB_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, kw) {
		size_t old = hb_schema_path_key(&cc->path, it->string);

		n->props[i].name = it->string;
		rc = compile(cc, it, depth + 1, &n->props[i].node);
		hb_schema_path_pop(&cc->path, old);
		if (rc)
			return rc;
		i++;
	}
	cc->kw = "properties";
	qsort(n->props, n->nprops, sizeof(*n->props), prop_cmp);
	for (i = 1; i < n->nprops; i++)
		if (!strcmp(n->props[i - 1].name, n->props[i].name))
			return cfail(cc, HB_EINVAL, "property %s given twice",
				     n->props[i].name);
	return 0;
}

static int compile_list(struct cctx *cc, const cJSON *kw, int depth,
			struct snode ***out, size_t *n)
{
	const char *name = cc->kw;
	const cJSON *it;
	size_t i = 0;
	int rc;

	if (!cJSON_IsArray(kw) || !cJSON_GetArraySize(kw))
		return cfail(cc, HB_EINVAL,
			     "must be a non-empty array of schemas");
	*n = (size_t)cJSON_GetArraySize(kw);
	*out = calloc_arena(cc, *n, sizeof(**out));
	if (!*out)
		return cfail(cc, HB_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, kw) {
		char seg[48];
		size_t old;

		snprintf(seg, sizeof(seg), "(%s[%zu])", name, i);
		old = hb_schema_path_lit(&cc->path, seg);
		rc = compile(cc, it, depth + 1, &(*out)[i]);
		hb_schema_path_pop(&cc->path, old);
		cc->kw = name;
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

static int compile_pattern(struct cctx *cc, const cJSON *kw, struct snode *n)
{
	struct srx *rx;
	int rc;

	if (!cJSON_IsString(kw))
		return cfail(cc, HB_EINVAL, "must be a string");
	for (rx = cc->crd->rx; rx; rx = rx->next) {
		if (!strcmp(rx->src, kw->valuestring)) {
			n->pattern = rx;
			return 0;
		}
	}
	rx = calloc_arena(cc, 1, sizeof(*rx));
	if (!rx)
		return cfail(cc, HB_ENOMEM, "out of memory");
	rc = regcomp(&rx->re, kw->valuestring, REG_EXTENDED | REG_NOSUB);
	if (rc)
		return unchecked(cc, "pattern '%s' (not a POSIX extended "
				     "regular expression; not checked)",
				 kw->valuestring);
	rx->src = kw->valuestring;
	rx->next = cc->crd->rx;
	cc->crd->rx = rx;
	n->pattern = rx;
	return 0;
}

static int compile_rules(struct cctx *cc, const cJSON *kw, struct snode *n)
{
	const cJSON *it;
	size_t i;

	if (!cJSON_IsArray(kw))
		return cfail(cc, HB_EINVAL, "must be an array of rules");
	n->rules = calloc_arena(cc, (size_t)cJSON_GetArraySize(kw),
				sizeof(*n->rules));
	if (!n->rules)
		return cfail(cc, HB_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, kw) {
		const char *rule = hb_schema_str(it, "rule");
		const char *msg = hb_schema_str(it, "message");
		const struct cel_impl *impl = NULL;
		int rc;

		if (!rule)
			return cfail(cc, HB_EINVAL,
				     "validation rule without a rule");
		for (i = 0; i < hb_schema_ncel_impls; i++)
			if (!strcmp(hb_schema_cel_impls[i].rule, rule))
				impl = &hb_schema_cel_impls[i];
		if (impl && !hb_schema_has(it, "messageExpression") &&
		    !hb_schema_has(it, "fieldPath")) {
			n->rules[n->nrules].impl = impl;
			n->rules[n->nrules].message = msg ? msg : rule;
			n->nrules++;
			continue;
		}
		if (strstr(rule, "oldSelf"))
			rc = unchecked(cc, "rule '%s' (transition rule: needs "
					   "the old object; not checked)",
				       rule);
		else
			rc = unchecked(cc, "rule '%s' (CEL not evaluated; not "
					   "checked)",
				       rule);
		if (rc)
			return rc;
	}
	return 0;
}

static int compile_type(struct cctx *cc, const cJSON *kw, struct snode *n)
{
	static const struct {
		const char *name;
		unsigned bit;
	} types[] = {
		{ "object", T_OBJECT },	  { "array", T_ARRAY },
		{ "string", T_STRING },	  { "integer", T_INTEGER },
		{ "number", T_NUMBER },	  { "boolean", T_BOOLEAN },
	};
	size_t i;

	if (!cJSON_IsString(kw))
		return cfail(cc, HB_EINVAL, "must be a string");
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!strcmp(kw->valuestring, types[i].name)) {
			/* number accepts integers too */
			n->types = types[i].bit == T_NUMBER
					   ? T_NUMBER | T_INTEGER
					   : types[i].bit;
			return 0;
		}
	}
	return cfail(cc, HB_EINVAL, "unknown type '%s'", kw->valuestring);
}

static int compile_format(struct cctx *cc, const cJSON *kw, struct snode *n)
{
	if (!cJSON_IsString(kw))
		return cfail(cc, HB_EINVAL, "must be a string");
	if (!strcmp(kw->valuestring, "int32"))
		n->format = FMT_INT32;
	else if (!strcmp(kw->valuestring, "int64"))
		n->format = FMT_INT64;
	else if (!strcmp(kw->valuestring, "date-time"))
		n->format = FMT_DATETIME;
	else if (strcmp(kw->valuestring, "float") &&
		 strcmp(kw->valuestring, "double"))
		return unchecked(cc, "format '%s' (not checked)",
				 kw->valuestring);
	return 0;
}

/* One keyword of a schema node. */
static int compile_kw(struct cctx *cc, const cJSON *kw, int depth,
		      struct snode *n)
{
	const char *k = kw->string;
	int b = 0, rc = 0;

	if (!strcmp(k, "type"))
		return compile_type(cc, kw, n);
	if (!strcmp(k, "format"))
		return compile_format(cc, kw, n);
	if (!strcmp(k, "properties"))
		return compile_props(cc, kw, depth, n);
	if (!strcmp(k, "items")) {
		size_t old;

		if (!cJSON_IsObject(kw))
			return cfail(cc, HB_EUNSUP,
				     "must be one schema in a CRD");
		old = hb_schema_path_lit(&cc->path, "[*]");
		rc = compile(cc, kw, depth + 1, &n->items);
		hb_schema_path_pop(&cc->path, old);
		return rc;
	}
	if (!strcmp(k, "additionalProperties")) {
		size_t old;

		if (cJSON_IsBool(kw)) {
			if (cJSON_IsTrue(kw))
				n->flags |= F_ADDL_TRUE;
			return 0;
		}
		old = hb_schema_path_key(&cc->path, "*");
		rc = compile(cc, kw, depth + 1, &n->addl);
		hb_schema_path_pop(&cc->path, old);
		return rc;
	}
	if (!strcmp(k, "required"))
		return kw_strings(cc, kw, &n->required, &n->nrequired);
	if (!strcmp(k, "enum")) {
		if (!cJSON_IsArray(kw))
			return cfail(cc, HB_EINVAL, "must be an array");
		n->enumv = kw;
		return 0;
	}
	if (!strcmp(k, "default")) {
		n->defv = kw;
		return 0;
	}
	if (!strcmp(k, "minimum")) {
		n->flags |= F_HAS_MIN;
		return kw_number(cc, kw, &n->minimum);
	}
	if (!strcmp(k, "maximum")) {
		n->flags |= F_HAS_MAX;
		return kw_number(cc, kw, &n->maximum);
	}
	if (!strcmp(k, "multipleOf")) {
		n->flags |= F_HAS_MULT;
		rc = kw_number(cc, kw, &n->multiple_of);
		if (!rc && n->multiple_of <= 0)
			rc = cfail(cc, HB_EINVAL, "must be positive");
		return rc;
	}
	if (!strcmp(k, "minLength"))
		return kw_count(cc, kw, &n->min_len);
	if (!strcmp(k, "maxLength"))
		return kw_count(cc, kw, &n->max_len);
	if (!strcmp(k, "minItems"))
		return kw_count(cc, kw, &n->min_items);
	if (!strcmp(k, "maxItems"))
		return kw_count(cc, kw, &n->max_items);
	if (!strcmp(k, "minProperties"))
		return kw_count(cc, kw, &n->min_props);
	if (!strcmp(k, "maxProperties"))
		return kw_count(cc, kw, &n->max_props);
	if (!strcmp(k, "pattern"))
		return compile_pattern(cc, kw, n);
	if (!strcmp(k, "anyOf"))
		return compile_list(cc, kw, depth, &n->any_of, &n->nany_of);
	if (!strcmp(k, "allOf"))
		return compile_list(cc, kw, depth, &n->all_of, &n->nall_of);
	if (!strcmp(k, "oneOf"))
		return compile_list(cc, kw, depth, &n->one_of, &n->none_of);
	if (!strcmp(k, "not")) {
		size_t old = hb_schema_path_lit(&cc->path, "(not)");

		rc = compile(cc, kw, depth + 1, &n->not_of);
		hb_schema_path_pop(&cc->path, old);
		return rc;
	}
	if (!strcmp(k, "x-kubernetes-validations"))
		return compile_rules(cc, kw, n);
	if (!strcmp(k, "x-kubernetes-list-map-keys"))
		return kw_strings(cc, kw, &n->map_keys, &n->nmap_keys);
	if (!strcmp(k, "x-kubernetes-list-type")) {
		if (cJSON_IsString(kw) && !strcmp(kw->valuestring, "set"))
			n->list_type = LIST_SET;
		else if (cJSON_IsString(kw) && !strcmp(kw->valuestring, "map"))
			n->list_type = LIST_MAP;
		else if (!cJSON_IsString(kw) ||
			 strcmp(kw->valuestring, "atomic"))
			return cfail(cc, HB_EINVAL,
				     "must be atomic, set or map");
		return 0;
	}
	if (!strcmp(k, "x-kubernetes-map-type")) {
		if (!cJSON_IsString(kw) ||
		    (strcmp(kw->valuestring, "atomic") &&
		     strcmp(kw->valuestring, "granular")))
			return cfail(cc, HB_EINVAL,
				     "must be atomic or granular");
		return 0;
	}
	if (!strcmp(k, "nullable") || !strcmp(k, "uniqueItems") ||
	    !strcmp(k, "exclusiveMinimum") ||
	    !strcmp(k, "exclusiveMaximum") ||
	    !strcmp(k, "x-kubernetes-preserve-unknown-fields") ||
	    !strcmp(k, "x-kubernetes-int-or-string") ||
	    !strcmp(k, "x-kubernetes-embedded-resource")) {
		static const struct {
			const char *name;
			unsigned flag;
		} flags[] = {
			{ "nullable", F_NULLABLE },
			{ "uniqueItems", F_UNIQUE },
			{ "exclusiveMinimum", F_EXCL_MIN },
			{ "exclusiveMaximum", F_EXCL_MAX },
			{ "x-kubernetes-preserve-unknown-fields", F_PRESERVE },
			{ "x-kubernetes-int-or-string", F_INT_OR_STRING },
			{ "x-kubernetes-embedded-resource", F_EMBEDDED },
		};
		size_t i;

		rc = kw_bool(cc, kw, &b);
		for (i = 0; !rc && b && i < sizeof(flags) / sizeof(flags[0]);
		     i++)
			if (!strcmp(k, flags[i].name))
				n->flags |= flags[i].flag;
		return rc;
	}
	if (!strcmp(k, "description") || !strcmp(k, "title") ||
	    !strcmp(k, "example") || !strcmp(k, "externalDocs"))
		return 0;
	if (!strcmp(k, "$ref") || !strcmp(k, "definitions") ||
	    !strcmp(k, "dependencies") || !strcmp(k, "patternProperties") ||
	    !strcmp(k, "additionalItems") || !strcmp(k, "id") ||
	    !strcmp(k, "$schema"))
		return cfail(cc, HB_EUNSUP, "%s is not allowed in a CRD schema",
			     k);
	return cfail(cc, HB_EINVAL, "unknown schema keyword '%s'", k);
}

static int compile(struct cctx *cc, const cJSON *js, int depth,
		   struct snode **out)
{
	struct snode *n;
	const cJSON *kw;
	int rc;

	cc->kw = NULL;
	if (depth > MAX_SCHEMA_DEPTH)
		return cfail(cc, HB_ETOOBIG, "nested too deeply");
	if (!cJSON_IsObject(js))
		return cfail(cc, HB_EINVAL, "must be an object");
	n = calloc_arena(cc, 1, sizeof(*n));
	if (!n)
		return cfail(cc, HB_ENOMEM, "out of memory");
	n->min_len = n->max_len = n->min_items = n->max_items = -1;
	n->min_props = n->max_props = -1;
	cJSON_ArrayForEach(kw, js) {
		cc->kw = kw->string;
		rc = compile_kw(cc, kw, depth, n);
		if (rc)
			return rc;
	}
	cc->kw = NULL;
	if (n->list_type == LIST_MAP && !n->nmap_keys)
		return cfail(cc, HB_EINVAL,
			     "x-kubernetes-list-type map needs "
			     "x-kubernetes-list-map-keys");
	*out = n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Loading CRDs                                                        */

static void crd_free(struct crd *crd)
{
	struct srx *rx;

	if (!crd)
		return;
	for (rx = crd->rx; rx; rx = rx->next)
		regfree(&rx->re);
	hb_arena_free(&crd->arena);
	hb_buf_free(&crd->unchecked);
	cJSON_Delete(crd->doc);
	free(crd);
}

struct hb_schema_set *hb_schema_set_new(void)
{
	return calloc(1, sizeof(struct hb_schema_set));
}

void hb_schema_set_free(struct hb_schema_set *set)
{
	size_t i;

	if (!set)
		return;
	for (i = 0; i < set->ncrds; i++)
		crd_free(set->crds[i]);
	free(set->crds);
	free(set);
}

static int load_version(struct cctx *cc, const cJSON *ver,
			struct sversion *sv)
{
	const cJSON *schema;
	const cJSON *subs;
	int rc;

	sv->name = hb_schema_str(ver, "name");
	cc->version = sv->name;
	schema = hb_schema_get(hb_schema_get(ver, "schema"), "openAPIV3Schema");
	if (!schema)
		return cfail(cc, HB_EINVAL, "no schema.openAPIV3Schema");
	sv->api_version = hb_arena_printf(&cc->crd->arena, "%s/%s",
					  cc->crd->group, sv->name);
	if (!sv->api_version)
		return cfail(cc, HB_ENOMEM, "out of memory");
	subs = hb_schema_get(ver, "subresources");
	sv->status_subresource = hb_schema_get(subs, "status") != NULL;
	rc = compile(cc, schema, 0, &sv->root);
	if (!rc && !(sv->root->types & T_OBJECT))
		rc = cfail(cc, HB_EINVAL, "the root must be of type object");
	return rc;
}

static int load_crd(struct crd *crd, const char *name, struct hb_err *err)
{
	const cJSON *doc = crd->doc, *spec, *vers, *ver;
	const char *scope;
	struct cctx cc;
	size_t i = 0;
	int rc;

	memset(&cc, 0, sizeof(cc));
	cc.crd = crd;
	cc.name = name;
	cc.err = err;
	cc.version = "?";
	if (!cJSON_IsObject(doc) || !hb_schema_str(doc, "apiVersion") ||
	    strcmp(hb_schema_str(doc, "apiVersion"),
		   "apiextensions.k8s.io/v1") ||
	    !hb_schema_str(doc, "kind") ||
	    strcmp(hb_schema_str(doc, "kind"), "CustomResourceDefinition"))
		return hb_err_set(err, HB_EINVAL, name, 0,
				  "not an apiextensions.k8s.io/v1 "
				  "CustomResourceDefinition");
	spec = hb_schema_get(doc, "spec");
	crd->group = hb_schema_str(spec, "group");
	crd->kind = hb_schema_str(hb_schema_get(spec, "names"), "kind");
	scope = hb_schema_str(spec, "scope");
	vers = hb_schema_get(spec, "versions");
	if (!crd->group || !*crd->group || !crd->kind || !*crd->kind ||
	    !scope || !cJSON_IsArray(vers) || !cJSON_GetArraySize(vers))
		return hb_err_set(err, HB_EINVAL, name, 0,
				  "spec needs group, names.kind, scope and "
				  "versions");
	if (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))
		return hb_err_set(err, HB_EINVAL, name, 0,
				  "spec.scope: must be Namespaced or Cluster");
	crd->namespaced = !strcmp(scope, "Namespaced");
	crd->versions = hb_arena_alloc(
		&crd->arena,
		(size_t)cJSON_GetArraySize(vers) * sizeof(*crd->versions));
	if (!crd->versions)
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	cJSON_ArrayForEach(ver, vers) {
		if (!hb_schema_str(ver, "name"))
			return hb_err_set(err, HB_EINVAL, name, 0,
					  "spec.versions[%zu]: no name", i);
		i++;
		if (!cJSON_IsTrue(hb_schema_get(ver, "served")))
			continue;
		rc = load_version(&cc, ver, &crd->versions[crd->nversions]);
		if (rc)
			return rc;
		crd->nversions++;
	}
	return 0;
}

int hb_schema_set_add_crd_tree(struct hb_schema_set *set,
			       const struct cJSON *tree, const char *name,
			       struct hb_err *err)
{
	struct crd *crd, **crds;
	size_t i;
	int rc;

	if (!name)
		name = "<crd>";
	crd = calloc(1, sizeof(*crd));
	if (!crd)
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	hb_arena_init(&crd->arena, 0);
	hb_buf_init(&crd->unchecked, 1024 * 1024);
	crd->doc = cJSON_Duplicate(tree, 1);
	if (!crd->doc) {
		crd_free(crd);
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	}
	rc = load_crd(crd, name, err);
	if (rc) {
		crd_free(crd);
		return rc;
	}
	for (i = 0; i < set->ncrds; i++) {
		if (!strcmp(set->crds[i]->group, crd->group) &&
		    !strcmp(set->crds[i]->kind, crd->kind)) {
			crd_free(set->crds[i]);
			set->crds[i] = crd;
			return 0;
		}
	}
	crds = realloc(set->crds, (set->ncrds + 1) * sizeof(*crds));
	if (!crds) {
		crd_free(crd);
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	}
	crds[set->ncrds++] = crd;
	set->crds = crds;
	return 0;
}

int hb_schema_set_add_crd(struct hb_schema_set *set, const char *buf,
			  size_t len, const char *name, struct hb_err *err)
{
	cJSON *doc = NULL;
	int rc;

	if (!name)
		name = "<crd>";
	rc = hb_doc_parse(buf, len, name, &doc, err);
	if (rc)
		return rc;
	rc = hb_schema_set_add_crd_tree(set, doc, name, err);
	cJSON_Delete(doc);
	return rc;
}

int hb_schema_set_unchecked(const struct hb_schema_set *set,
			    struct hb_buf *out)
{
	size_t i;
	int rc;

	for (i = 0; i < set->ncrds; i++) {
		if (!set->crds[i]->unchecked.len)
			continue;
		rc = hb_buf_append(out, set->crds[i]->unchecked.data,
				   set->crds[i]->unchecked.len);
		if (rc)
			return rc;
	}
	return 0;
}
