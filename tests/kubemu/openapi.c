/*
 * openapi.c - /openapi/v2 and /openapi/v3: the OpenAPI documents of every
 * resource served, as kubectl reads them for explain, for deciding that
 * the server validates fields itself (fieldValidation on each PATCH) and
 * for building strategic merge patches.
 *
 * The built-in kinds' definitions (Pod, ConfigMap, Secret, Namespace,
 * Node, Event, Lease and every type they reach) are compiled in from
 * openapi_builtin.json, which gen_openapi_builtin.py writes.  A custom
 * resource's definition is made from its CRD as the apiextensions server
 * makes it: named by the reversed group ("org.kubeflow.v2beta1.MPIJob"),
 * the openAPIV3Schema with metadata a reference to ObjectMeta, the
 * x-kubernetes-group-version-kind extension, and a List definition beside
 * it.  A kind with neither gets a schema that keeps every field.
 *
 * Everything is built in the v2 form ("#/definitions/" references with
 * their description beside them); the v3 documents rewrite references to
 * "#/components/schemas/" and wrap those with siblings in allOf, as the
 * server does.  The documents are made once (the CRDs do not change
 * while the emulator runs) and answered as JSON; a client that accepts
 * only protobuf gets 406.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/hash.h"
#include "hpcbridge/log.h"
#include "kubemu.h"

#define V2_REF "#/definitions/"
#define V3_REF "#/components/schemas/"
#define META "io.k8s.apimachinery.pkg.apis.meta.v1."
#define KUBE_VERSION "v1.29.0"
#define NAME_MAX_LEN 256

/* Written by the build from openapi_builtin.json. */
extern const unsigned char km_openapi_builtin_json[];
extern const size_t km_openapi_builtin_json_len;

static const char meta_doc[] =
	"Standard object's metadata. More info: https://git.k8s.io/community/"
	"contributors/devel/sig-architecture/api-conventions.md#metadata";
static const char list_meta_doc[] =
	"Standard list metadata. More info: https://git.k8s.io/community/"
	"contributors/devel/sig-architecture/api-conventions.md#metadata";
static const char api_version_doc[] =
	"APIVersion defines the versioned schema of this representation of "
	"an object. Servers should convert recognized schemas to the latest "
	"internal value, and may reject unrecognized values. More info: "
	"https://git.k8s.io/community/contributors/devel/sig-architecture/"
	"api-conventions.md#resources";
static const char kind_doc[] =
	"Kind is a string value representing the REST resource this object "
	"represents. Servers may infer this from the endpoint the client "
	"submits requests to. Cannot be updated. In CamelCase. More info: "
	"https://git.k8s.io/community/contributors/devel/sig-architecture/"
	"api-conventions.md#types-kinds";

/* ---- the built-in definitions --------------------------------------- */

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static cJSON *builtin;

static void load_builtin(void)
{
	cJSON *doc = cJSON_ParseWithLength(
		(const char *)km_openapi_builtin_json,
		km_openapi_builtin_json_len);

	builtin = cJSON_DetachItemFromObjectCaseSensitive(doc, "definitions");
	cJSON_Delete(doc);
	if (!builtin)
		hb_log(HB_LOG_WARN, "openapi: the built-in definitions do not "
				    "parse; built-in kinds keep every field");
}

const cJSON *km_openapi_builtin_defs(void)
{
	pthread_once(&builtin_once, load_builtin);
	return builtin;
}

/* Whether def carries x-kubernetes-group-version-kind group/version/kind. */
static int has_gvk(const cJSON *def, const char *g, const char *v,
		   const char *k)
{
	const cJSON *e;

	cJSON_ArrayForEach (e, km_get(def, "x-kubernetes-group-version-kind")) {
		const char *eg = km_str(e, "group"), *ev = km_str(e, "version"),
			   *ek = km_str(e, "kind");

		if (eg && ev && ek && !strcmp(eg, g) && !strcmp(ev, v) &&
		    !strcmp(ek, k))
			return 1;
	}
	return 0;
}

/* The built-in definition of kind in group/version, or NULL. */
static const cJSON *builtin_find(const char *g, const char *v, const char *k)
{
	const cJSON *d;

	cJSON_ArrayForEach (d, km_openapi_builtin_defs()) {
		if (has_gvk(d, g, v, k))
			return d;
	}
	return NULL;
}

const cJSON *km_openapi_kind_schema(enum km_res r)
{
	if (km_res[r].flags & KM_CRD)
		return NULL;
	return builtin_find(km_res[r].group, km_res[r].version,
			    km_res[r].kind);
}

/* ---- custom resources ----------------------------------------------- */

/* "kubeflow.org" -> "org.kubeflow", "" -> "io.k8s.api.core". */
static void reversed_group(const char *g, char *out, size_t cap)
{
	const char *end = g + strlen(g);
	size_t o = 0;

	if (!*g) {
		snprintf(out, cap, "io.k8s.api.core");
		return;
	}
	out[0] = '\0';
	while (end > g) {
		const char *dot = end;
		int n;

		while (dot > g && dot[-1] != '.')
			dot--;
		n = snprintf(out + o, cap - o, "%s%.*s", o ? "." : "",
			     (int)(end - dot), dot);
		if (n < 0 || (size_t)n >= cap - o)
			return;
		o += (size_t)n;
		end = dot > g ? dot - 1 : g;
	}
}

/* The definition name of resource r's kind (list: its List kind). */
static void def_name(enum km_res r, int list, char *out, size_t cap)
{
	const struct km_resinfo *ri = &km_res[r];
	const cJSON *b = builtin_find(ri->group, ri->version,
				      list ? ri->list_kind : ri->kind);
	char rg[NAME_MAX_LEN];

	if (b && b->string) {
		snprintf(out, cap, "%s", b->string);
		return;
	}
	reversed_group(ri->group, rg, sizeof(rg));
	/* Names come from the resource table: they fit. */
	if (snprintf(out, cap, "%s.%s.%s", rg, ri->version,
		     list ? ri->list_kind : ri->kind) >= (int)cap)
		out[cap - 1] = '\0';
}

static cJSON *ref_to(const char *name, const char *desc)
{
	cJSON *o = cJSON_CreateObject();
	char ref[NAME_MAX_LEN + 32];

	snprintf(ref, sizeof(ref), V2_REF "%s", name);
	if (!o || km_set_str(o, "$ref", ref) ||
	    (desc && km_set_str(o, "description", desc))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *string_prop(const char *desc)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || km_set_str(o, "type", "string") ||
	    km_set_str(o, "description", desc)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* {"group", "kind", "version"}: kind k of group g, version v. */
static cJSON *gvk_obj(const char *g, const char *v, const char *k)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || km_set_str(o, "group", g) || km_set_str(o, "kind", k) ||
	    km_set_str(o, "version", v)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A definition's x-kubernetes-group-version-kind: a list of one. */
static cJSON *gvk_ext(const char *g, const char *v, const char *k)
{
	cJSON *arr = cJSON_CreateArray(), *e = gvk_obj(g, v, k);

	if (!arr || !e || !cJSON_AddItemToArray(arr, e)) {
		cJSON_Delete(arr);
		cJSON_Delete(e);
		return NULL;
	}
	return arr;
}

/* apiVersion, kind and metadata (a reference to meta), as every kind
 * has them (the schema's own descriptions of the first two are kept),
 * and the kind's x-kubernetes-group-version-kind. */
static int common_props(cJSON *def, const char *meta, const char *mdoc,
			const struct km_resinfo *ri, const char *kind)
{
	cJSON *props = km_obj_at(def, "properties");

	if (!props)
		return HB_ENOMEM;
	if (!km_get(props, "apiVersion") &&
	    km_set(props, "apiVersion", string_prop(api_version_doc)))
		return HB_ENOMEM;
	if (!km_get(props, "kind") &&
	    km_set(props, "kind", string_prop(kind_doc)))
		return HB_ENOMEM;
	if (km_set(props, "metadata", ref_to(meta, mdoc)) ||
	    km_set(def, "x-kubernetes-group-version-kind",
		   gvk_ext(ri->group, ri->version, kind)))
		return HB_ENOMEM;
	if (!km_get(def, "type"))
		return km_set_str(def, "type", "object");
	return 0;
}

/* The definition of resource r from its CRD schema (NULL: none loaded,
 * a schema that keeps every field). */
static cJSON *kind_def(enum km_res r, const cJSON *schema)
{
	const struct km_resinfo *ri = &km_res[r];
	cJSON *def = schema ? cJSON_Duplicate(schema, 1) : cJSON_CreateObject();

	if (!def)
		return NULL;
	if (!schema &&
	    km_set(def, "x-kubernetes-preserve-unknown-fields",
		   cJSON_CreateTrue()))
		goto fail;
	if (common_props(def, META "ObjectMeta", meta_doc, ri, ri->kind))
		goto fail;
	return def;
fail:
	cJSON_Delete(def);
	return NULL;
}

static cJSON *list_def(enum km_res r, const char *item_name)
{
	const struct km_resinfo *ri = &km_res[r];
	cJSON *def = cJSON_CreateObject();
	cJSON *items = km_obj_at(km_obj_at(def, "properties"), "items");
	cJSON *req = def ? cJSON_AddArrayToObject(def, "required") : NULL;
	char desc[NAME_MAX_LEN + 64];

	if (!items || !req)
		goto fail;
	snprintf(desc, sizeof(desc), "%s is a list of %s", ri->list_kind,
		 ri->kind);
	if (km_set_str(def, "description", desc) ||
	    km_set_str(items, "type", "array") ||
	    !cJSON_AddItemToArray(req, cJSON_CreateString("items")))
		goto fail;
	snprintf(desc, sizeof(desc),
		 "List of %s. More info: https://git.k8s.io/community/"
		 "contributors/devel/api-conventions.md",
		 ri->plural);
	if (km_set_str(items, "description", desc) ||
	    km_set(items, "items", ref_to(item_name, NULL)) ||
	    common_props(def, META "ListMeta", list_meta_doc, ri,
			 ri->list_kind))
		goto fail;
	return def;
fail:
	cJSON_Delete(def);
	return NULL;
}

/* Every definition: the built-in ones, then one (and its List) for each
 * resource they lack. */
static cJSON *all_defs(struct km_ctx *ctx)
{
	const cJSON *b = km_openapi_builtin_defs();
	cJSON *defs = b ? cJSON_Duplicate(b, 1) : cJSON_CreateObject();

	if (!defs)
		return NULL;
	if (!km_get(defs, META "Patch")) {
		cJSON *p = cJSON_CreateObject();

		if (!p || km_set_str(p, "type", "object") ||
		    km_set_str(p, "description",
			       "Patch is provided to give a concrete name "
			       "and type to the Kubernetes PATCH request "
			       "body.") ||
		    km_set(defs, META "Patch", p))
			goto fail;
	}
	for (int r = 0; r < KM_NRES; r++) {
		char name[NAME_MAX_LEN], lname[NAME_MAX_LEN];
		const cJSON *schema = NULL;

		def_name(r, 0, name, sizeof(name));
		def_name(r, 1, lname, sizeof(lname));
		if (km_res[r].flags & KM_CRD)
			schema = km_valid_schema(ctx->valid, r);
		if (!km_get(defs, name) &&
		    km_set(defs, name, kind_def(r, schema)))
			goto fail;
		if (!km_get(defs, lname) &&
		    km_set(defs, lname, list_def(r, name)))
			goto fail;
	}
	return defs;
fail:
	cJSON_Delete(defs);
	return NULL;
}

/* ---- paths ---------------------------------------------------------- */

/* What one operation takes and answers. */
enum op_kind { OP_LIST, OP_CREATE, OP_READ, OP_REPLACE, OP_PATCH,
	       OP_DELETE, OP_DELETECOLL, OP_LOG };

struct op_spec {
	const char *method; /* "get", "post", ... */
	const char *verb;   /* operationId prefix */
	const char *action; /* x-kubernetes-action */
	const char *const *query;
	int body;	    /* takes the object (or a patch) */
	int list;	    /* answers the List kind */
};

static const char *const q_list[] = {
	"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector",
	"limit", "resourceVersion", "resourceVersionMatch", "timeoutSeconds",
	"watch", NULL
};
static const char *const q_write[] = { "dryRun", "fieldManager",
				       "fieldValidation", NULL };
static const char *const q_patch[] = { "dryRun", "fieldManager",
				       "fieldValidation", "force", NULL };
static const char *const q_delete[] = { "dryRun", "gracePeriodSeconds",
					"propagationPolicy", NULL };
static const char *const q_log[] = { "container", "follow", "limitBytes",
				     "previous", "sinceSeconds", "tailLines",
				     "timestamps", NULL };
static const char *const q_none[] = { NULL };

static const struct op_spec ops[] = {
	[OP_LIST] = { "get", "list", "list", q_list, 0, 1 },
	[OP_CREATE] = { "post", "create", "post", q_write, 1, 0 },
	[OP_READ] = { "get", "read", "get", q_none, 0, 0 },
	[OP_REPLACE] = { "put", "replace", "put", q_write, 1, 0 },
	[OP_PATCH] = { "patch", "patch", "patch", q_patch, 1, 0 },
	[OP_DELETE] = { "delete", "delete", "delete", q_delete, 0, 0 },
	[OP_DELETECOLL] = { "delete", "deletecollection", "deletecollection",
			    q_delete, 0, 0 },
	[OP_LOG] = { "get", "read", "get", q_log, 0, 0 },
};

/* A query or path parameter, in the v2 form (the type beside it). */
static cJSON *param(const char *name, const char *in, const char *desc,
		    int v3)
{
	cJSON *p = cJSON_CreateObject();
	cJSON *ty = v3 ? km_obj_at(p, "schema") : p;
	int boolean = !strcmp(name, "watch") || !strcmp(name, "follow") ||
		      !strcmp(name, "force") || !strcmp(name, "previous") ||
		      !strcmp(name, "timestamps") ||
		      !strcmp(name, "allowWatchBookmarks");
	int integer = strstr(name, "Seconds") || !strcmp(name, "limit") ||
		      !strcmp(name, "limitBytes") || !strcmp(name, "tailLines");

	if (!p || km_set_str(p, "name", name) || km_set_str(p, "in", in) ||
	    km_set_str(p, "description", desc ? desc : name) ||
	    km_set_str(ty, "type",
		       boolean ? "boolean" : integer ? "integer" : "string") ||
	    km_set(ty, "uniqueItems", cJSON_CreateTrue()) ||
	    (!strcmp(in, "path") && km_set(p, "required", cJSON_CreateTrue()))) {
		cJSON_Delete(p);
		return NULL;
	}
	return p;
}

static const char *param_doc(const char *name)
{
	if (!strcmp(name, "fieldValidation"))
		return "fieldValidation instructs the server on how to handle "
		       "objects in the request (POST/PUT/PATCH) containing "
		       "unknown or duplicate fields. Valid values are: - "
		       "Ignore, - Warn, - Strict (the default in v1.25+).";
	if (!strcmp(name, "fieldManager"))
		return "fieldManager is a name associated with the actor or "
		       "entity that is making these changes.";
	if (!strcmp(name, "dryRun"))
		return "When present, indicates that modifications should not "
		       "be persisted.";
	return NULL;
}

/* "kubeflow.org" -> "KubeflowOrg", "coordination.k8s.io" ->
 * "Coordination", "" -> "Core"; then the version, "V2beta1". */
static void id_part(const struct km_resinfo *ri, char *out, size_t cap)
{
	size_t o = 0, n = strlen(ri->group);
	int up = 1;

	if (n > 7 && !strcmp(ri->group + n - 7, ".k8s.io"))
		n -= 7;
	if (!n)
		o = (size_t)snprintf(out, cap, "Core");
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		char c = ri->group[i];

		if (c == '.' || c == '-') {
			up = 1;
			continue;
		}
		out[o++] = up && c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
		up = 0;
	}
	out[o < cap ? o : cap - 1] = '\0';
	if (o + 1 < cap)
		snprintf(out + o, cap - o, "%c%s", ri->version[0] - 32,
			 ri->version + 1);
}

/* One operation on resource r (v2 form; v3 converts it). */
static cJSON *operation(enum km_res r, enum op_kind k, int ns, int all_ns,
			const char *suffix, int v3)
{
	const struct km_resinfo *ri = &km_res[r];
	const struct op_spec *sp = &ops[k];
	cJSON *op = cJSON_CreateObject(), *ps, *resp;
	char id[NAME_MAX_LEN], part[96], name[NAME_MAX_LEN];

	if (!op)
		return NULL;
	id_part(ri, part, sizeof(part));
	snprintf(id, sizeof(id), "%s%s%s%s%s%s", sp->verb, part,
		 ns && !all_ns ? "Namespaced" : "", ri->kind,
		 suffix ? suffix : "", all_ns ? "ForAllNamespaces" : "");
	def_name(r, sp->list, name, sizeof(name));
	km_set_str(op, "operationId", id);
	km_set_str(op, "description", id);
	ps = cJSON_AddArrayToObject(op, "parameters");
	for (const char *const *q = sp->query; ps && *q; q++)
		cJSON_AddItemToArray(ps, param(*q, "query", param_doc(*q), v3));
	if (sp->body && ps && !v3) {
		cJSON *b = param("body", "body", NULL, 0);

		km_del(b, "type");
		km_del(b, "uniqueItems");
		km_set(b, "required", cJSON_CreateTrue());
		km_set(b, "schema", ref_to(k == OP_PATCH ? META "Patch" : name,
					   NULL));
		cJSON_AddItemToArray(ps, b);
	}
	if (sp->body && v3) {
		static const char *const patch_types[] = {
			"application/apply-patch+yaml",
			"application/json-patch+json",
			"application/merge-patch+json",
			"application/strategic-merge-patch+json", NULL
		};
		cJSON *content = km_obj_at(km_obj_at(op, "requestBody"),
					   "content");

		for (int i = 0; k == OP_PATCH && patch_types[i]; i++) {
			/* Custom resources take no strategic merge patch. */
			if (strstr(patch_types[i], "strategic") &&
			    (ri->flags & KM_CRD))
				break;
			km_set(km_obj_at(content, patch_types[i]), "schema",
			       ref_to(META "Patch", NULL));
		}
		if (k != OP_PATCH)
			km_set(km_obj_at(content, "*/*"), "schema",
			       ref_to(name, NULL));
		km_set(km_get(op, "requestBody"), "required",
		       cJSON_CreateTrue());
	}
	resp = km_obj_at(km_obj_at(op, "responses"), "200");
	km_set_str(resp, "description", "OK");
	if (v3)
		resp = km_obj_at(km_obj_at(resp, "content"),
				 k == OP_LOG ? "text/plain" : "application/json");
	if (k == OP_LOG)
		km_set_str(km_obj_at(resp, "schema"), "type", "string");
	else
		km_set(resp, "schema", ref_to(name, NULL));
	km_set_str(op, "x-kubernetes-action", sp->action);
	if (km_set(op, "x-kubernetes-group-version-kind",
		   gvk_obj(ri->group, ri->version, ri->kind))) {
		cJSON_Delete(op);
		return NULL;
	}
	return op;
}

/* Whether objects of r have no namespace.  A table that also holds
 * writable cluster-scoped kinds defines KM_NO_NS for the question. */
static int cluster_scoped(enum km_res r)
{
#ifdef KM_NO_NS
	return KM_NO_NS(r);
#else
	return (km_res[r].flags & KM_CLUSTER) != 0;
#endif
}

/* The paths of resource r into paths. */
static int add_paths(cJSON *paths, enum km_res r, int v3)
{
	const struct km_resinfo *ri = &km_res[r];
	int ns = !cluster_scoped(r);
	char base[NAME_MAX_LEN], p[NAME_MAX_LEN * 2];
	struct {
		const char *suffix; /* after the collection path */
		enum op_kind ops[4];
		int n, all_ns;
		unsigned need; /* a flag r must have */
		const char *id;
	} shapes[] = {
		{ "", { OP_LIST, OP_CREATE, OP_DELETECOLL }, 3, 0, 0, NULL },
		{ "/{name}", { OP_READ, OP_REPLACE, OP_PATCH, OP_DELETE },
		  4, 0, 0, NULL },
		{ "/{name}/status", { OP_READ, OP_REPLACE, OP_PATCH }, 3, 0,
		  KM_STATUS, "Status" },
		{ "/{name}/log", { OP_LOG }, 1, 0, KM_LOG, "Log" },
		{ "", { OP_LIST }, 1, 1, 0, NULL },
	};

	if (ri->group[0])
		snprintf(base, sizeof(base), "/apis/%s/%s", ri->group,
			 ri->version);
	else
		snprintf(base, sizeof(base), "/api/%s", ri->version);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		cJSON *item, *ps;

		if (shapes[s].need && !(ri->flags & shapes[s].need))
			continue;
		if (shapes[s].all_ns && !ns)
			continue;
		snprintf(p, sizeof(p), "%s%s/%s%s", base,
			 ns && !shapes[s].all_ns ? "/namespaces/{namespace}"
						 : "",
			 ri->plural, shapes[s].suffix);
		item = km_obj_at(paths, p);
		ps = item ? cJSON_AddArrayToObject(item, "parameters") : NULL;
		if (!ps)
			return HB_ENOMEM;
		if (strstr(p, "{name}"))
			cJSON_AddItemToArray(ps, param("name", "path",
						       "name of the object",
						       v3));
		if (strstr(p, "{namespace}"))
			cJSON_AddItemToArray(
				ps, param("namespace", "path",
					  "object name and auth scope, such "
					  "as for teams and projects", v3));
		cJSON_AddItemToArray(ps, param("pretty", "query",
					       "If 'true', then the output is "
					       "pretty printed.", v3));
		for (int i = 0; i < shapes[s].n; i++) {
			enum op_kind k = shapes[s].ops[i];

			if (km_set(item, ops[k].method,
				   operation(r, k, ns, shapes[s].all_ns,
					     shapes[s].id, v3)))
				return HB_ENOMEM;
		}
	}
	return 0;
}

/* ---- documents ------------------------------------------------------ */

/* Copy into out every definition that node refers to, and what those
 * refer to. */
static int closure(const cJSON *node, const cJSON *defs, cJSON *out,
		   int depth)
{
	const cJSON *c;
	const char *ref = km_str(node, "$ref");

	if (depth > 200)
		return 0;
	if (ref && !strncmp(ref, V2_REF, strlen(V2_REF))) {
		const char *name = ref + strlen(V2_REF);
		const cJSON *d = km_get(defs, name);

		if (d && !km_get(out, name)) {
			if (km_set(out, name, cJSON_Duplicate(d, 1)))
				return HB_ENOMEM;
			if (closure(d, defs, out, depth + 1))
				return HB_ENOMEM;
		}
	}
	cJSON_ArrayForEach (c, node) {
		if ((cJSON_IsObject(c) || cJSON_IsArray(c)) &&
		    closure(c, defs, out, depth + 1))
			return HB_ENOMEM;
	}
	return 0;
}

/* Rewrite v2 references into v3 ones: the prefix, and a reference with
 * members beside it goes into allOf. */
static int to_v3(cJSON *node, int depth)
{
	cJSON *c, *ref = km_get(node, "$ref");

	if (depth > 200)
		return 0;
	if (cJSON_IsString(ref) &&
	    !strncmp(ref->valuestring, V2_REF, strlen(V2_REF))) {
		char buf[NAME_MAX_LEN + 32];

		snprintf(buf, sizeof(buf), V3_REF "%s",
			 ref->valuestring + strlen(V2_REF));
		if (km_set_str(node, "$ref", buf))
			return HB_ENOMEM;
		if (cJSON_GetArraySize(node) > 1) {
			cJSON *all = cJSON_AddArrayToObject(node, "allOf");
			cJSON *one = cJSON_CreateObject();

			ref = cJSON_DetachItemFromObjectCaseSensitive(node,
								      "$ref");
			if (!all || !one || !cJSON_AddItemToObject(one, "$ref",
								   ref)) {
				cJSON_Delete(one);
				cJSON_Delete(ref);
				return HB_ENOMEM;
			}
			cJSON_AddItemToArray(all, one);
		}
		return 0;
	}
	cJSON_ArrayForEach (c, node) {
		if ((cJSON_IsObject(c) || cJSON_IsArray(c)) &&
		    to_v3(c, depth + 1))
			return HB_ENOMEM;
	}
	return 0;
}

static int in_gv(enum km_res r, const char *group, const char *version)
{
	return !strcmp(km_res[r].group, group) &&
	       !strcmp(km_res[r].version, version);
}

/* The v3 document of group/version, or with group NULL the v2 document
 * of everything. */
static cJSON *document(const cJSON *defs, const char *group,
		       const char *version)
{
	int v3 = group != NULL;
	cJSON *doc = cJSON_CreateObject(), *info = cJSON_CreateObject();
	cJSON *paths = cJSON_CreateObject(), *schemas = cJSON_CreateObject();
	cJSON *sec = cJSON_CreateObject();

	if (!doc || km_set(doc, v3 ? "openapi" : "swagger",
			   cJSON_CreateString(v3 ? "3.0.0" : "2.0")) ||
	    km_set(doc, "info", info) || km_set(doc, "paths", paths)) {
		cJSON_Delete(doc);
		cJSON_Delete(schemas);
		cJSON_Delete(sec);
		return NULL;
	}
	if (km_set(v3 ? km_obj_at(doc, "components") : doc,
		   v3 ? "schemas" : "definitions", schemas) ||
	    km_set(v3 ? km_get(doc, "components") : doc,
		   v3 ? "securitySchemes" : "securityDefinitions", sec))
		goto fail;
	if (km_set_str(info, "title", "Kubernetes") ||
	    km_set_str(info, "version", KUBE_VERSION))
		goto fail;
	sec = km_obj_at(sec, "BearerToken");
	if (km_set_str(sec, "type", "apiKey") ||
	    km_set_str(sec, "name", "authorization") ||
	    km_set_str(sec, "in", "header") ||
	    km_set_str(sec, "description", "Bearer Token authentication"))
		goto fail;
	for (int r = 0; r < KM_NRES; r++) {
		if (v3 && !in_gv(r, group, version))
			continue;
		if (add_paths(paths, r, v3))
			goto fail;
	}
	if (v3) {
		/* Status answers the failures of every operation. */
		cJSON *st = ref_to(META "Status", NULL);
		int rc = !st || closure(paths, defs, schemas, 0) ||
			 closure(st, defs, schemas, 0);

		cJSON_Delete(st);
		if (rc || to_v3(doc, 0))
			goto fail;
	} else if (km_set(doc, "definitions", cJSON_Duplicate(defs, 1))) {
		goto fail;
	}
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

/* ---- serving -------------------------------------------------------- */

struct served {
	char key[NAME_MAX_LEN]; /* "api/v1", "apis/kubeflow.org/v2beta1" */
	char *json;
	size_t len;
};

/* The documents, made on the first request. */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const struct km_valid *valid; /* the CRDs they were made from */
	int built;
	struct served gv[KM_NRES], v2, index;
	size_t ngv;
} cache;

static void cache_clear(void)
{
	for (size_t i = 0; i < cache.ngv; i++)
		free(cache.gv[i].json);
	free(cache.v2.json);
	free(cache.index.json);
	memset(&cache, 0, sizeof(cache));
}

static int keep(struct served *s, cJSON *doc)
{
	s->json = doc ? cJSON_PrintUnformatted(doc) : NULL;
	cJSON_Delete(doc);
	s->len = s->json ? strlen(s->json) : 0;
	return s->json ? 0 : HB_ENOMEM;
}

static int build(struct km_ctx *ctx)
{
	cJSON *defs = all_defs(ctx), *index = cJSON_CreateObject();
	cJSON *paths = cJSON_AddObjectToObject(index, "paths");
	int rc = HB_ENOMEM;

	if (!defs || !paths || keep(&cache.v2, document(defs, NULL, NULL)))
		goto out;
	for (int r = 0; r < KM_NRES; r++) {
		const struct km_resinfo *ri = &km_res[r];
		struct served *s = &cache.gv[cache.ngv];
		char url[NAME_MAX_LEN * 2];
		size_t i;

		snprintf(s->key, sizeof(s->key), "%s%s/%s",
			 ri->group[0] ? "apis/" : "api", ri->group,
			 ri->version);
		for (i = 0; i < cache.ngv; i++) {
			if (!strcmp(cache.gv[i].key, s->key))
				break;
		}
		if (i < cache.ngv)
			continue;
		if (keep(s, document(defs, ri->group, ri->version)))
			goto out;
		cache.ngv++;
		/* The hash makes the URL change when the document does, so
		 * that clients may cache by URL. */
		snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%016" PRIX64,
			 s->key, hb_fnv1a(HB_FNV1A_INIT, s->json, s->len));
		if (km_set_str(km_obj_at(paths, s->key), "serverRelativeURL",
			       url))
			goto out;
	}
	rc = keep(&cache.index, index);
	index = NULL;
	cache.valid = ctx->valid;
	cache.built = !rc;
out:
	cJSON_Delete(defs);
	cJSON_Delete(index);
	return rc;
}

/* Whether an Accept header admits JSON (none admits anything). */
static int accepts_json(const char *accept)
{
	return !accept || !*accept || strstr(accept, "application/json") ||
	       strstr(accept, "*/*") || strstr(accept, "application/*");
}

int km_openapi_serve(struct km_ctx *ctx, const char *path, const char *accept,
		     struct km_resp *rs)
{
	const struct served *s = NULL;
	int built;

	if (strcmp(path, "/openapi/v2") && strcmp(path, "/openapi/v3") &&
	    strncmp(path, "/openapi/v3/", 12))
		return HB_ENOENT;
	if (!accepts_json(accept)) {
		km_resp_status(rs, km_status_plain(406, "NotAcceptable",
						   "only application/json is "
						   "served for OpenAPI "
						   "documents"));
		return 0;
	}
	pthread_mutex_lock(&cache_mu);
	if (cache.built && cache.valid != ctx->valid)
		cache_clear();
	if (!cache.built && build(ctx))
		cache_clear();
	built = cache.built;
	if (built && !strcmp(path, "/openapi/v2"))
		s = &cache.v2;
	else if (built && !strcmp(path, "/openapi/v3"))
		s = &cache.index;
	for (size_t i = 0; built && !s && i < cache.ngv; i++) {
		if (!strcmp(path + 12, cache.gv[i].key))
			s = &cache.gv[i];
	}
	if (s) {
		rs->body = malloc(s->len + 1);
		if (rs->body) {
			memcpy(rs->body, s->json, s->len + 1);
			rs->len = s->len;
			rs->code = 200;
			rs->ctype = "application/json";
		}
	}
	pthread_mutex_unlock(&cache_mu);
	if (s && !rs->body)
		km_resp_status(rs, NULL);
	else if (!s && !built)
		km_resp_status(rs, km_status_plain(500, "InternalError",
						   "cannot build the OpenAPI "
						   "documents"));
	else if (!s)
		km_resp_status(rs, km_status_plain(404, "NotFound",
						   "the server could not find "
						   "the requested resource"));
	return 0;
}
