/*
 * patch.c - merge patches (RFC 7386), strategic merge patches (lists of
 * built-in kinds merged by the key their OpenAPI schema names, and the
 * $patch, $retainKeys, $setElementOrder and $deleteFromPrimitiveList
 * directives), JSON patches (RFC 6902), and the managed fields of
 * server-side apply.
 *
 * A field set is kept in its wire form, fieldsV1: an object whose keys are
 * "f:NAME" and whose values are field sets of the member; an empty object
 * is a leaf (the whole value is owned).  Lists are atomic: a list is one
 * leaf, as for x-kubernetes-list-type: atomic (the real server also knows
 * map and set lists; see docs/internals/kubemu.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubemu.h"

#define MAX_DEPTH 64

/* ---- merge patch ---------------------------------------------------- */

static cJSON *merge(cJSON *target, const cJSON *patch)
{
	const cJSON *p;

	if (!cJSON_IsObject(patch)) {
		cJSON_Delete(target);
		return cJSON_Duplicate(patch, 1);
	}
	if (!cJSON_IsObject(target)) {
		cJSON_Delete(target);
		target = cJSON_CreateObject();
		if (!target)
			return NULL;
	}
	cJSON_ArrayForEach (p, patch) {
		cJSON *cur, *res;

		if (cJSON_IsNull(p)) {
			km_del(target, p->string);
			continue;
		}
		cur = cJSON_DetachItemFromObjectCaseSensitive(target,
							      p->string);
		res = merge(cur, p);
		if (!res || !cJSON_AddItemToObject(target, p->string, res)) {
			cJSON_Delete(res);
			cJSON_Delete(target);
			return NULL;
		}
	}
	return target;
}

int km_merge_patch(cJSON **doc, const cJSON *patch)
{
	cJSON *r = merge(*doc, patch);

	*doc = r;
	return r ? 0 : HB_ENOMEM;
}

/* ---- strategic merge patch ------------------------------------------ */

#define SET_ORDER "$setElementOrder/"
#define DEL_PRIM "$deleteFromPrimitiveList/"

/* What a patch is applied with: the definitions its schema refers to
 * ("#/definitions/NAME"), and where errors go. */
struct smp {
	const cJSON *defs;
	struct hb_err *err;
};

/* schema with its reference followed. */
static const cJSON *resolve(const struct smp *x, const cJSON *schema)
{
	const char *ref = km_str(schema, "$ref");

	if (ref && !strncmp(ref, "#/definitions/", 14))
		return km_get(x->defs, ref + 14);
	return schema;
}

/* The schema of member key of an object of schema s (NULL: unknown). */
static const cJSON *member_schema(const cJSON *s, const char *key)
{
	const cJSON *p = km_get(km_get(s, "properties"), key);

	return p ? p : km_get(s, "additionalProperties");
}

static int smp_map(const struct smp *x, cJSON *target, const cJSON *patch,
		   const cJSON *schema, int depth, int *deleted);

/* The element of list whose member key equals that of el, or NULL. */
static cJSON *find_by_key(cJSON *list, const char *key, const cJSON *el)
{
	const cJSON *want = km_get(el, key);
	cJSON *c;

	cJSON_ArrayForEach (c, list) {
		if (want && km_equal(km_get(c, key), want))
			return c;
	}
	return NULL;
}

/* Merge patch list p into target list t (items of schema items) by key,
 * or as a set of primitives when key is NULL. */
static int smp_list(const struct smp *x, cJSON *t, const cJSON *p,
		    const cJSON *items, const char *key, int depth)
{
	struct hb_err *err = x->err;
	const cJSON *pe;

	cJSON_ArrayForEach (pe, p) {
		const char *directive = km_str(pe, "$patch");
		cJSON *cur, *add;
		int gone = 0;

		if (!key) {
			cJSON_ArrayForEach (cur, t) {
				if (km_equal(cur, pe))
					break;
			}
			if (!cur && !cJSON_AddItemToArray(
					    t, cJSON_Duplicate(pe, 1)))
				return HB_ENOMEM;
			continue;
		}
		if (!cJSON_IsObject(pe))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "a list merged by %s holds a "
					  "non-object",
					  key);
		cur = find_by_key(t, key, pe);
		if (directive && !strcmp(directive, "delete")) {
			if (cur)
				cJSON_Delete(cJSON_DetachItemViaPointer(t, cur));
			continue;
		}
		if (cur) {
			if (smp_map(x, cur, pe, items, depth + 1, &gone))
				return err->code;
			continue;
		}
		add = cJSON_CreateObject();
		if (!add || !cJSON_AddItemToArray(t, add)) {
			cJSON_Delete(add);
			return HB_ENOMEM;
		}
		if (smp_map(x, add, pe, items, depth + 1, &gone))
			return err->code;
	}
	return 0;
}

/* Whether list p asks for the whole list to be replaced (an element
 * {"$patch": "replace"}); *out gets p without that element. */
static int list_replace(const cJSON *p, cJSON **out)
{
	const cJSON *e;
	int found = 0;

	cJSON_ArrayForEach (e, p) {
		const char *d = km_str(e, "$patch");

		found |= d && !strcmp(d, "replace");
	}
	if (!found)
		return 0;
	*out = cJSON_CreateArray();
	cJSON_ArrayForEach (e, p) {
		if (*out && !km_str(e, "$patch"))
			cJSON_AddItemToArray(*out, cJSON_Duplicate(e, 1));
	}
	return 1;
}

/* Order list t as order says (by key, or by value when key is NULL):
 * the elements named there first in that order, then the others. */
static void set_order(cJSON *t, const cJSON *order, const char *key)
{
	const cJSON *o;
	int at = 0;

	cJSON_ArrayForEach (o, order) {
		cJSON *c;

		cJSON_ArrayForEach (c, t) {
			if (key ? km_equal(km_get(c, key), km_get(o, key))
				: km_equal(c, o))
				break;
		}
		if (!c)
			continue;
		c = cJSON_DetachItemViaPointer(t, c);
		if (!cJSON_InsertItemInArray(t, at, c))
			cJSON_AddItemToArray(t, c);
		at++;
	}
}

/* The list member field of target, after directive d (a
 * $deleteFromPrimitiveList or $setElementOrder) of value v. */
static void list_directive(cJSON *target, const char *d, const cJSON *v,
			   const cJSON *schema)
{
	int del = !strncmp(d, DEL_PRIM, strlen(DEL_PRIM));
	const char *field = d + strlen(del ? DEL_PRIM : SET_ORDER);
	cJSON *t = km_get(target, field), *c, *next;

	if (!cJSON_IsArray(t))
		return;
	if (!del) {
		set_order(t, v,
			  km_str(member_schema(schema, field),
				 "x-kubernetes-patch-merge-key"));
		return;
	}
	for (c = t->child; c; c = next) {
		const cJSON *x;

		next = c->next;
		cJSON_ArrayForEach (x, v) {
			if (km_equal(c, x)) {
				cJSON_Delete(cJSON_DetachItemViaPointer(t, c));
				break;
			}
		}
	}
}

/* The $retainKeys directive: drop the members of target not listed. */
static void retain_keys(cJSON *target, const cJSON *keys)
{
	cJSON *c, *next;

	for (c = target->child; c; c = next) {
		const cJSON *k;
		int keep = 0;

		next = c->next;
		cJSON_ArrayForEach (k, keys)
			keep |= cJSON_IsString(k) &&
				!strcmp(k->valuestring, c->string);
		if (!keep)
			cJSON_Delete(cJSON_DetachItemViaPointer(target, c));
	}
}

/* One member of an object patch: key's value v into target. */
static int smp_member(const struct smp *x, cJSON *target, const char *key,
		      const cJSON *v, const cJSON *schema, int depth)
{
	struct hb_err *err = x->err;
	const cJSON *ms = member_schema(schema, key);
	const cJSON *rs = resolve(x, ms);
	cJSON *cur = km_get(target, key), *repl = NULL;
	const char *strategy = km_str(ms, "x-kubernetes-patch-strategy");

	if (cJSON_IsNull(v)) {
		km_del(target, key);
		return 0;
	}
	if (cJSON_IsObject(v)) {
		int gone = 0;

		if (!cJSON_IsObject(cur)) {
			if (km_set(target, key, cJSON_CreateObject()))
				return HB_ENOMEM;
			cur = km_get(target, key);
		}
		if (smp_map(x, cur, v, rs, depth + 1, &gone))
			return err->code;
		if (gone)
			km_del(target, key);
		return 0;
	}
	if (cJSON_IsArray(v) && list_replace(v, &repl))
		return km_set(target, key, repl);
	if (cJSON_IsArray(v) && strategy && strstr(strategy, "merge") &&
	    cJSON_IsArray(cur))
		return smp_list(x, cur, v, resolve(x, km_get(rs, "items")),
				km_str(ms, "x-kubernetes-patch-merge-key"),
				depth);
	return km_set(target, key, cJSON_Duplicate(v, 1));
}

/* Merge object patch into target (an object); *deleted is set when the
 * patch says "$patch": "delete". */
static int smp_map(const struct smp *x, cJSON *target, const cJSON *patch,
		   const cJSON *schema, int depth, int *deleted)
{
	struct hb_err *err = x->err;
	const char *directive = km_str(patch, "$patch");
	const cJSON *v;
	int rc;

	if (depth > MAX_DEPTH)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "the patch nests too deeply");
	if (directive && !strcmp(directive, "delete")) {
		*deleted = 1;
		return 0;
	}
	if (directive && !strcmp(directive, "replace")) {
		while (target->child)
			cJSON_Delete(cJSON_DetachItemViaPointer(
				target, target->child));
	} else if (directive && strcmp(directive, "merge")) {
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "Unknown patch type: %s", directive);
	}
	if (cJSON_IsArray(km_get(patch, "$retainKeys")))
		retain_keys(target, km_get(patch, "$retainKeys"));
	cJSON_ArrayForEach (v, patch) {
		const char *k = v->string;

		if (!strcmp(k, "$patch") || !strcmp(k, "$retainKeys") ||
		    !strncmp(k, SET_ORDER, strlen(SET_ORDER)) ||
		    !strncmp(k, DEL_PRIM, strlen(DEL_PRIM)))
			continue;
		if ((rc = smp_member(x, target, k, v, schema, depth)))
			return rc == HB_ENOMEM ? hb_err_set(err, HB_ENOMEM,
							    NULL, 0,
							    "out of memory")
					       : rc;
	}
	/* Deletions and order apply to the merged lists. */
	cJSON_ArrayForEach (v, patch) {
		if (!strncmp(v->string, SET_ORDER, strlen(SET_ORDER)) ||
		    !strncmp(v->string, DEL_PRIM, strlen(DEL_PRIM)))
			list_directive(target, v->string, v, schema);
	}
	return 0;
}

int km_strategic_patch(cJSON **doc, const cJSON *patch, const cJSON *schema,
		       const cJSON *defs, struct hb_err *err)
{
	struct smp x = { defs, err };
	int gone = 0;

	if (!cJSON_IsObject(*doc) || !cJSON_IsObject(patch))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "a strategic merge patch must be an object");
	if (smp_map(&x, *doc, patch, schema, 0, &gone))
		return err->code;
	if (gone)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "the patch deletes the whole object");
	return 0;
}

/* ---- JSON patch ----------------------------------------------------- */

/* Split a JSON pointer into unescaped tokens in buf (NUL-separated);
 * *n gets the count.  HB_EINVAL for a pointer not starting with '/'. */
static int pointer_split(const char *ptr, char *buf, size_t cap,
			 const char **tok, size_t max, size_t *n)
{
	size_t o = 0;

	*n = 0;
	if (!*ptr)
		return 0;
	if (*ptr != '/')
		return HB_EINVAL;
	while (*ptr == '/') {
		ptr++;
		if (*n == max)
			return HB_ETOOBIG;
		tok[(*n)++] = buf + o;
		while (*ptr && *ptr != '/') {
			char c = *ptr++;

			if (c == '~') {
				if (*ptr == '0')
					c = '~';
				else if (*ptr == '1')
					c = '/';
				else
					return HB_EINVAL;
				ptr++;
			}
			if (o + 2 > cap)
				return HB_ETOOBIG;
			buf[o++] = c;
		}
		buf[o++] = '\0';
	}
	return 0;
}

static int array_index(const char *t, int size, int append_ok, int *out)
{
	char *end;
	long v;

	if (append_ok && !strcmp(t, "-")) {
		*out = size;
		return 0;
	}
	if (!*t || (t[0] == '0' && t[1]) || *t < '0' || *t > '9')
		return HB_EINVAL;
	v = strtol(t, &end, 10);
	if (*end || v > size - (append_ok ? 0 : 1))
		return HB_EINVAL;
	*out = (int)v;
	return 0;
}

/* The value at tokens [0, n) of doc, or NULL. */
static cJSON *walk(cJSON *doc, const char **tok, size_t n)
{
	for (size_t i = 0; i < n && doc; i++) {
		if (cJSON_IsObject(doc)) {
			doc = km_get(doc, tok[i]);
		} else if (cJSON_IsArray(doc)) {
			int idx;

			if (array_index(tok[i], cJSON_GetArraySize(doc), 0,
					&idx))
				return NULL;
			doc = cJSON_GetArrayItem(doc, idx);
		} else {
			return NULL;
		}
	}
	return doc;
}

/* Remove and return the value at the pointer (NULL if none). */
static cJSON *detach(cJSON **doc, const char **tok, size_t n)
{
	cJSON *parent, *r;
	int idx;

	if (n == 0) {
		r = *doc;
		*doc = NULL;
		return r;
	}
	parent = walk(*doc, tok, n - 1);
	if (cJSON_IsObject(parent))
		return cJSON_DetachItemFromObjectCaseSensitive(parent,
							       tok[n - 1]);
	if (cJSON_IsArray(parent) &&
	    !array_index(tok[n - 1], cJSON_GetArraySize(parent), 0, &idx))
		return cJSON_DetachItemFromArray(parent, idx);
	return NULL;
}

/* Add value (taken) at the pointer, as the "add" operation does. */
static int add_at(cJSON **doc, const char **tok, size_t n, cJSON *value)
{
	cJSON *parent;
	int idx;

	if (n == 0) {
		cJSON_Delete(*doc);
		*doc = value;
		return 0;
	}
	parent = walk(*doc, tok, n - 1);
	if (cJSON_IsObject(parent)) {
		if (km_set(parent, tok[n - 1], value))
			return HB_ENOMEM;
		return 0;
	}
	if (cJSON_IsArray(parent) &&
	    !array_index(tok[n - 1], cJSON_GetArraySize(parent), 1, &idx)) {
		if (idx == cJSON_GetArraySize(parent)) {
			if (!cJSON_AddItemToArray(parent, value))
				goto fail;
		} else if (!cJSON_InsertItemInArray(parent, idx, value)) {
			goto fail;
		}
		return 0;
	}
fail:
	cJSON_Delete(value);
	return HB_EINVAL;
}

int km_json_patch(cJSON **doc, const cJSON *ops, struct hb_err *err)
{
	const cJSON *op;
	char buf[2][4096];
	const char *tok[2][MAX_DEPTH];
	size_t n[2];
	int i = 0;

	if (!cJSON_IsArray(ops))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "a JSON patch must be an array of "
				  "operations");
	cJSON_ArrayForEach (op, ops) {
		const char *name = km_str(op, "op");
		const char *path = km_str(op, "path");
		const char *from = km_str(op, "from");
		const cJSON *value = km_get(op, "value");
		cJSON *v;

		if (!name || !path)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "operation %d: op and path are "
					  "required",
					  i);
		if (pointer_split(path, buf[0], sizeof(buf[0]), tok[0],
				  MAX_DEPTH, &n[0]))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "operation %d: bad path \"%s\"", i,
					  path);
		if (!strcmp(name, "add") || !strcmp(name, "replace") ||
		    !strcmp(name, "test")) {
			if (!value)
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "operation %d: missing "
						  "value",
						  i);
		}
		if (!strcmp(name, "test")) {
			v = walk(*doc, tok[0], n[0]);
			if (!v || !km_equal(v, value))
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "testing value %s failed",
						  path);
		} else if (!strcmp(name, "remove") ||
			   !strcmp(name, "replace")) {
			v = detach(doc, tok[0], n[0]);
			if (!v)
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "%s operation does not "
						  "apply: doc is missing path: "
						  "\"%s\"",
						  name, path);
			cJSON_Delete(v);
			if (!strcmp(name, "replace") &&
			    add_at(doc, tok[0], n[0],
				   cJSON_Duplicate(value, 1)))
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "replace operation does "
						  "not apply: \"%s\"",
						  path);
		} else if (!strcmp(name, "add")) {
			if (add_at(doc, tok[0], n[0],
				   cJSON_Duplicate(value, 1)))
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "add operation does not "
						  "apply: doc is missing path: "
						  "\"%s\"",
						  path);
		} else if (!strcmp(name, "move") || !strcmp(name, "copy")) {
			if (!from || pointer_split(from, buf[1], sizeof(buf[1]),
						   tok[1], MAX_DEPTH, &n[1]))
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "operation %d: bad from", i);
			if (!strcmp(name, "move"))
				v = detach(doc, tok[1], n[1]);
			else
				v = cJSON_Duplicate(walk(*doc, tok[1], n[1]),
						    1);
			if (!v || add_at(doc, tok[0], n[0], v))
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "%s operation does not "
						  "apply: \"%s\"",
						  name, from);
		} else {
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "Unexpected kind: %s", name);
		}
		if (!*doc)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "the patch removed the whole "
					  "object");
		i++;
	}
	return 0;
}

/* ---- field sets ----------------------------------------------------- */

cJSON *km_fields_of(const cJSON *v)
{
	cJSON *fs = cJSON_CreateObject();
	const cJSON *c;
	char key[320];

	if (!fs || !cJSON_IsObject(v))
		return fs;
	cJSON_ArrayForEach (c, v) {
		cJSON *sub;

		if (cJSON_IsNull(c))
			continue;
		snprintf(key, sizeof(key), "f:%s", c->string);
		sub = km_fields_of(c);
		if (!sub || !cJSON_AddItemToObject(fs, key, sub)) {
			cJSON_Delete(sub);
			cJSON_Delete(fs);
			return NULL;
		}
	}
	return fs;
}

/* Add the leaves where a and b differ (as seen from b; a member only a
 * has counts too) into fs. */
static int diff_into(cJSON *fs, const cJSON *a, const cJSON *b, int depth)
{
	const cJSON *c;
	char key[320];

	if (depth > MAX_DEPTH)
		return 0;
	cJSON_ArrayForEach (c, b) {
		const cJSON *o = km_get(a, c->string);
		cJSON *sub;

		if (o && km_equal(o, c))
			continue;
		snprintf(key, sizeof(key), "f:%s", c->string);
		if (cJSON_IsObject(c) && cJSON_IsObject(o) &&
		    cJSON_GetArraySize(c)) {
			sub = cJSON_CreateObject();
			if (!sub || diff_into(sub, o, c, depth + 1) ||
			    !cJSON_AddItemToObject(fs, key, sub)) {
				cJSON_Delete(sub);
				return HB_ENOMEM;
			}
		} else if (!cJSON_IsNull(c)) {
			sub = km_fields_of(c);
			if (!sub || !cJSON_AddItemToObject(fs, key, sub)) {
				cJSON_Delete(sub);
				return HB_ENOMEM;
			}
		}
	}
	return 0;
}

cJSON *km_fields_diff(const cJSON *a, const cJSON *b)
{
	cJSON *fs = cJSON_CreateObject();

	if (fs && diff_into(fs, a, b, 0)) {
		cJSON_Delete(fs);
		return NULL;
	}
	return fs;
}

/* dst |= src. */
static int fs_union(cJSON *dst, const cJSON *src)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, src) {
		cJSON *d = km_get(dst, c->string);

		if (!d) {
			if (km_set(dst, c->string, cJSON_Duplicate(c, 1)))
				return HB_ENOMEM;
		} else if (cJSON_GetArraySize(d) == 0) {
			/* dst owns the whole value already. */
		} else if (cJSON_GetArraySize(c) == 0) {
			if (km_set(dst, c->string, cJSON_CreateObject()))
				return HB_ENOMEM;
		} else if (fs_union(d, c)) {
			return HB_ENOMEM;
		}
	}
	return 0;
}

/* dst -= src: a leaf of src removes the whole member from dst. */
static void fs_minus(cJSON *dst, const cJSON *src)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, src) {
		cJSON *d = km_get(dst, c->string);

		if (!d)
			continue;
		if (cJSON_GetArraySize(c) == 0) {
			km_del(dst, c->string);
		} else if (cJSON_GetArraySize(d) > 0) {
			fs_minus(d, c);
			if (cJSON_GetArraySize(d) == 0)
				km_del(dst, c->string);
		}
	}
}

/* Keep only the members of fs that exist in v. */
static void fs_prune(cJSON *fs, const cJSON *v)
{
	cJSON *c = fs ? fs->child : NULL;

	while (c) {
		cJSON *next = c->next;
		const cJSON *m =
			cJSON_IsObject(v) && !strncmp(c->string, "f:", 2)
				? km_get(v, c->string + 2)
				: NULL;

		if (!m || cJSON_IsNull(m)) {
			cJSON_Delete(cJSON_DetachItemViaPointer(fs, c));
		} else if (cJSON_GetArraySize(c) > 0) {
			fs_prune(c, m);
			if (cJSON_GetArraySize(c) == 0)
				cJSON_Delete(cJSON_DetachItemViaPointer(fs, c));
		}
		c = next;
	}
}

/* The part of an object that field ownership covers. */
static cJSON *owned_view(const cJSON *obj, const char *sub, int has_status)
{
	static const char *const meta_skip[] = { "name",
						 "namespace",
						 "uid",
						 "resourceVersion",
						 "generation",
						 "creationTimestamp",
						 "managedFields",
						 "deletionTimestamp",
						 "selfLink",
						 "deletionGracePeriodSeconds",
						 NULL };
	cJSON *v = cJSON_Duplicate(obj, 1);
	cJSON *meta;

	if (!v)
		return NULL;
	if (sub && !strcmp(sub, "status")) {
		cJSON *st =
			cJSON_DetachItemFromObjectCaseSensitive(v, "status");
		cJSON_Delete(v);
		v = cJSON_CreateObject();
		if (v && st && !cJSON_AddItemToObject(v, "status", st))
			cJSON_Delete(st);
		return v;
	}
	km_del(v, "apiVersion");
	km_del(v, "kind");
	if (has_status)
		km_del(v, "status");
	meta = km_get(v, "metadata");
	for (size_t i = 0; meta && meta_skip[i]; i++)
		km_del(meta, meta_skip[i]);
	if (meta && cJSON_GetArraySize(meta) == 0)
		km_del(v, "metadata");
	return v;
}

/* km_fields_of(owned_view(obj, ...)) without copying obj. */
static cJSON *fields_of_view(const cJSON *obj, const char *sub, int has_status)
{
	static const char *const meta_skip[] = { "name",
						 "namespace",
						 "uid",
						 "resourceVersion",
						 "generation",
						 "creationTimestamp",
						 "managedFields",
						 "deletionTimestamp",
						 "selfLink",
						 "deletionGracePeriodSeconds",
						 NULL };
	int status_sub = sub && !strcmp(sub, "status");
	cJSON *fs = cJSON_CreateObject();
	const cJSON *c, *m;
	char key[320];

	if (!fs)
		return NULL;
	cJSON_ArrayForEach (c, obj) {
		cJSON *sub_fs;

		if (cJSON_IsNull(c))
			continue;
		if (status_sub ? strcmp(c->string, "status")
			       : (!strcmp(c->string, "apiVersion") ||
				  !strcmp(c->string, "kind") ||
				  (has_status && !strcmp(c->string, "status"))))
			continue;
		if (!status_sub && !strcmp(c->string, "metadata")) {
			sub_fs = cJSON_CreateObject();
			cJSON_ArrayForEach (m, c) {
				size_t i;
				cJSON *f;

				for (i = 0; meta_skip[i]; i++) {
					if (!strcmp(m->string, meta_skip[i]))
						break;
				}
				if (meta_skip[i] || cJSON_IsNull(m))
					continue;
				snprintf(key, sizeof(key), "f:%s", m->string);
				f = km_fields_of(m);
				if (!f || !sub_fs ||
				    !cJSON_AddItemToObject(sub_fs, key, f)) {
					cJSON_Delete(f);
					cJSON_Delete(sub_fs);
					cJSON_Delete(fs);
					return NULL;
				}
			}
			if (sub_fs && !cJSON_GetArraySize(sub_fs)) {
				cJSON_Delete(sub_fs);
				continue;
			}
		} else {
			sub_fs = km_fields_of(c);
		}
		snprintf(key, sizeof(key), "f:%s", c->string);
		if (!sub_fs || !cJSON_AddItemToObject(fs, key, sub_fs)) {
			cJSON_Delete(sub_fs);
			cJSON_Delete(fs);
			return NULL;
		}
	}
	return fs;
}

static const char *entry_sub(const cJSON *e)
{
	const char *s = km_str(e, "subresource");

	return s ? s : "";
}

static int same_sub(const cJSON *e, const char *sub)
{
	return !strcmp(entry_sub(e), sub ? sub : "");
}

static cJSON *new_entry(const char *manager, const char *op, const char *sub,
			const char *api_version, cJSON *fs)
{
	cJSON *e = cJSON_CreateObject();
	char ts[32];

	km_timestamp(ts, sizeof(ts), 0);
	if (!e || km_set_str(e, "manager", manager) ||
	    km_set_str(e, "operation", op) ||
	    km_set_str(e, "apiVersion", api_version) ||
	    km_set_str(e, "time", ts) ||
	    km_set_str(e, "fieldsType", "FieldsV1") ||
	    km_set(e, "fieldsV1", fs) ||
	    (sub && *sub && km_set_str(e, "subresource", sub))) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

/* Put the managed fields list mf (taken) into obj, or drop the member
 * when mf is empty. */
static int set_managed(cJSON *obj, cJSON *mf)
{
	cJSON *meta = km_obj_at(obj, "metadata");

	if (!meta) {
		cJSON_Delete(mf);
		return HB_ENOMEM;
	}
	if (cJSON_GetArraySize(mf) == 0) {
		cJSON_Delete(mf);
		km_del(meta, "managedFields");
		return 0;
	}
	return km_set(meta, "managedFields", mf);
}

/*
 * Rebuild the managed fields from old's list: every entry other than
 * (manager, op, sub) loses `taken` and whatever no longer exists in view;
 * the entry (manager, op, sub) gets own (taken) added to what it had
 * (when keep_own) or instead of it.
 */
static cJSON *rebuild(const cJSON *old_mf, const char *manager, const char *op,
		      const char *sub, const cJSON *taken, cJSON *own,
		      int keep_own, const cJSON *view, const char *api_version)
{
	cJSON *mf = cJSON_CreateArray();
	const cJSON *e;
	int placed = 0;

	if (!mf)
		goto fail;
	cJSON_ArrayForEach (e, old_mf) {
		const char *m = km_str(e, "manager");
		const char *o = km_str(e, "operation");
		cJSON *ne, *fs;
		int mine = m && o && !strcmp(m, manager) && !strcmp(o, op) &&
			   same_sub(e, sub);

		if (!m || !o)
			continue;
		ne = cJSON_Duplicate(e, 1);
		if (!ne)
			goto fail;
		fs = km_get(ne, "fieldsV1");
		if (!cJSON_IsObject(fs)) {
			fs = cJSON_CreateObject();
			if (km_set(ne, "fieldsV1", fs)) {
				cJSON_Delete(ne);
				goto fail;
			}
		}
		if (mine) {
			placed = 1;
			if (!keep_own) {
				cJSON_Delete(ne);
				ne = new_entry(manager, op, sub, api_version,
					       own);
				own = NULL;
				if (!ne)
					goto fail;
			} else {
				if (fs_union(fs, own)) {
					cJSON_Delete(ne);
					goto fail;
				}
				fs_prune(fs, view);
				cJSON_Delete(own);
				own = NULL;
				{
					char ts[32];

					km_timestamp(ts, sizeof(ts), 0);
					km_set_str(ne, "time", ts);
				}
			}
		} else if (same_sub(e, sub)) {
			fs_minus(fs, taken);
			fs_prune(fs, view);
		}
		if (cJSON_GetArraySize(km_get(ne, "fieldsV1")) == 0) {
			cJSON_Delete(ne);
			continue;
		}
		cJSON_AddItemToArray(mf, ne);
	}
	if (!placed && own && cJSON_GetArraySize(own)) {
		cJSON *ne = new_entry(manager, op, sub, api_version, own);

		own = NULL;
		if (!ne)
			goto fail;
		cJSON_AddItemToArray(mf, ne);
	}
	cJSON_Delete(own);
	return mf;
fail:
	cJSON_Delete(own);
	cJSON_Delete(mf);
	return NULL;
}

static int track_change(cJSON *new_obj, const cJSON *old_obj,
			const char *manager, const char *sub, int has_status,
			const char *api_version)
{
	cJSON *nv = owned_view(new_obj, sub, has_status);
	cJSON *ov = old_obj ? owned_view(old_obj, sub, has_status) : NULL;
	cJSON *changed = NULL, *mf = NULL;
	const cJSON *old_mf =
		old_obj ? km_get(km_get(old_obj, "metadata"), "managedFields")
			: NULL;
	int rc = HB_ENOMEM;

	if (!nv || (old_obj && !ov))
		goto out;
	changed = ov ? km_fields_diff(ov, nv) : km_fields_of(nv);
	if (!changed)
		goto out;
	mf = rebuild(old_mf, manager, "Update", sub, changed,
		     cJSON_Duplicate(changed, 1), 1, nv, api_version);
	if (!mf)
		goto out;
	rc = set_managed(new_obj, mf);
out:
	cJSON_Delete(nv);
	cJSON_Delete(ov);
	cJSON_Delete(changed);
	return rc;
}

int km_track_update(cJSON *new_obj, const cJSON *old_obj, const char *manager,
		    const char *sub, int has_status, const char *api_version)
{
	if (!old_obj) {
		/* A new object: its manager owns everything in it. */
		cJSON *fs = fields_of_view(new_obj, sub, has_status);
		cJSON *mf = cJSON_CreateArray(), *e;

		if (!fs || !mf) {
			cJSON_Delete(fs);
			cJSON_Delete(mf);
			return HB_ENOMEM;
		}
		if (cJSON_GetArraySize(fs)) {
			e = new_entry(manager, "Update", sub, api_version, fs);
			if (!e) {
				cJSON_Delete(mf);
				return HB_ENOMEM;
			}
			cJSON_AddItemToArray(mf, e);
		} else {
			cJSON_Delete(fs);
		}
		return set_managed(new_obj, mf);
	}
	return track_change(new_obj, old_obj, manager, sub, has_status,
			    api_version);
}

/* ---- apply ---------------------------------------------------------- */

struct conflicts {
	struct hb_buf msg;
	int n;
	cJSON *taken; /* leaves to take from other managers (force) */
};

static int path_text(char *buf, size_t cap, const char **path, int depth)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < depth && o < cap; i++) {
		int w = snprintf(buf + o, cap - o, ".%s", path[i]);

		if (w < 0)
			return HB_EINVAL;
		o += (size_t)w;
	}
	return 0;
}

/* Record conflicts between another manager's set `theirs` and the
 * applied set `mine` where live and applied values differ. */
static void find_conflicts(struct conflicts *cf, const char *who,
			   const cJSON *theirs, const cJSON *mine,
			   const cJSON *live, const cJSON *applied,
			   const char **path, int depth)
{
	const cJSON *c;

	if (depth >= MAX_DEPTH)
		return;
	cJSON_ArrayForEach (c, mine) {
		const cJSON *t = km_get(theirs, c->string);
		const char *name = c->string + 2;
		const cJSON *lv = km_get(live, name);
		const cJSON *av = km_get(applied, name);

		if (!t || strncmp(c->string, "f:", 2))
			continue;
		path[depth] = name;
		if (cJSON_GetArraySize(c) && cJSON_GetArraySize(t)) {
			find_conflicts(cf, who, t, c, lv, av, path, depth + 1);
			continue;
		}
		if (lv && av && km_equal(lv, av))
			continue;
		{
			char p[512];

			path_text(p, sizeof(p), path, depth + 1);
			hb_buf_printf(&cf->msg, "%sconflict with \"%s\": %s",
				      cf->n ? ", " : "", who, p);
			cf->n++;
		}
	}
}

/* Delete from obj the leaves of `gone` (a field set). */
static void remove_fields(cJSON *obj, const cJSON *gone, int depth)
{
	const cJSON *c;

	if (!cJSON_IsObject(obj) || depth > MAX_DEPTH)
		return;
	cJSON_ArrayForEach (c, gone) {
		const char *name;

		if (strncmp(c->string, "f:", 2))
			continue;
		name = c->string + 2;
		if (cJSON_GetArraySize(c) == 0)
			km_del(obj, name);
		else
			remove_fields(km_get(obj, name), c, depth + 1);
	}
}

int km_apply(const cJSON *live, const cJSON *applied, const char *manager,
	     const char *sub, int has_status, int force,
	     const char *api_version, cJSON **out, struct hb_err *err)
{
	cJSON *av = owned_view(applied, sub, has_status);
	cJSON *mine = NULL, *prev = NULL, *merged = NULL, *mf = NULL;
	cJSON *others = NULL, *gone = NULL, *lv = NULL;
	const cJSON *old_mf =
		live ? km_get(km_get(live, "metadata"), "managedFields") : NULL;
	const cJSON *e;
	struct conflicts cf = { .n = 0 };
	int rc = HB_ENOMEM;

	hb_buf_init(&cf.msg, 64 * 1024);
	*out = NULL;
	if (!av || !(mine = km_fields_of(av)) ||
	    !(prev = cJSON_CreateObject()) || !(others = cJSON_CreateObject()))
		goto out;
	if (live && !(lv = owned_view(live, sub, has_status)))
		goto out;
	/* What this manager applied before, what the others own. */
	cJSON_ArrayForEach (e, old_mf) {
		const char *m = km_str(e, "manager");
		const char *o = km_str(e, "operation");
		const cJSON *fs = km_get(e, "fieldsV1");
		const char *path[MAX_DEPTH];

		if (!m || !o || !same_sub(e, sub) || !cJSON_IsObject(fs))
			continue;
		if (!strcmp(m, manager) && !strcmp(o, "Apply")) {
			if (fs_union(prev, fs))
				goto out;
			continue;
		}
		if (!strcmp(m, manager))
			continue;
		find_conflicts(&cf, m, fs, mine, lv, av, path, 0);
		if (fs_union(others, fs))
			goto out;
	}
	if (cf.n && !force) {
		rc = hb_err_set(err, HB_ECONFLICT, NULL, 0,
				"Apply failed with %d conflict%s: %s", cf.n,
				cf.n == 1 ? "" : "s", cf.msg.data);
		goto out;
	}
	/* Merge what was applied into the live object. */
	if (live) {
		merged = cJSON_Duplicate(live, 1);
		if (!merged || km_merge_patch(&merged, av))
			goto out;
	} else {
		merged = cJSON_Duplicate(applied, 1);
		if (!merged)
			goto out;
		if (has_status && !(sub && !strcmp(sub, "status")))
			km_del(merged, "status");
	}
	/* Fields this manager stopped applying, that nobody else owns. */
	if (!(gone = cJSON_Duplicate(prev, 1)))
		goto out;
	fs_minus(gone, mine);
	fs_minus(gone, others);
	remove_fields(merged, gone, 0);
	{
		cJSON *nv = owned_view(merged, sub, has_status);

		if (!nv)
			goto out;
		/* With force, the applier takes every field it applied. */
		mf = rebuild(old_mf, manager, "Apply", sub, force ? mine : NULL,
			     cJSON_Duplicate(mine, 1), 0, nv, api_version);
		cJSON_Delete(nv);
	}
	if (!mf)
		goto out;
	rc = set_managed(merged, mf);
	if (rc)
		goto out;
	*out = merged;
	merged = NULL;
out:
	hb_buf_free(&cf.msg);
	cJSON_Delete(av);
	cJSON_Delete(mine);
	cJSON_Delete(prev);
	cJSON_Delete(others);
	cJSON_Delete(gone);
	cJSON_Delete(lv);
	cJSON_Delete(merged);
	return rc;
}
