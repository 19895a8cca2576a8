/*
 * schema_validate.c - validating an object against the compiled schema
 * tree: types, formats, bounds, patterns, enums, lists, combinators and
 * the CEL rules bound to native checks, metadata as ObjectMeta, and the
 * root as the API server sees it on create.
 * See docs/internals/schema.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/timefmt.h"
#include "translators/k8s/schema_int.h"

/* The API server's budget for all annotations of an object. */
#define ANNOTATIONS_MAX (256u * 1024)

static const char *fmt_number(double d, char *buf, size_t cap)
{
	if (hb_schema_whole(d) && d > -1e18 && d < 1e18)
		snprintf(buf, cap, "%lld", (long long)d);
	else
		snprintf(buf, cap, "%.17g", d);
	return buf;
}

/* Describe a value for a message. */
static const char *fmt_value(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v))
		return hb_schema_quote(v->valuestring, buf, cap);
	if (cJSON_IsNumber(v))
		return fmt_number(v->valuedouble, buf, cap);
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? "true" : "false";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "array";
	return "object";
}

static unsigned value_types(const cJSON *v)
{
	if (cJSON_IsObject(v))
		return T_OBJECT;
	if (cJSON_IsArray(v))
		return T_ARRAY;
	if (cJSON_IsString(v))
		return T_STRING;
	if (cJSON_IsBool(v))
		return T_BOOLEAN;
	if (cJSON_IsNumber(v))
		return hb_schema_is_integral(v) ? T_NUMBER | T_INTEGER
						: T_NUMBER;
	return 0;
}

static const char *type_names(unsigned t, char *buf, size_t cap)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{ T_OBJECT, "object" },	  { T_ARRAY, "array" },
		{ T_STRING, "string" },	  { T_INTEGER, "integer" },
		{ T_NUMBER, "number" },	  { T_BOOLEAN, "boolean" },
	};
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(t & names[i].bit))
			continue;
		o += (size_t)snprintf(buf + o, cap - o, "%s%s",
				      o ? " or " : "", names[i].name);
		if (o >= cap)
			break;
	}
	return buf;
}

/* ------------------------------------------------------------------ */
/* Validation                                                          */

static void validate_node(struct vctx *c, const struct snode *n,
			  const cJSON *v);

static const struct snode *prop_find(const struct snode *n, const char *k)
{
	size_t lo = 0, hi = n->nprops;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(k, n->props[mid].name);

		if (!d)
			return n->props[mid].node;
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int key_ptr_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a;
	const cJSON *y = *(const cJSON *const *)b;
	int d = strcmp(x->string, y->string);

	if (d)
		return d;
	return x < y ? -1 : x > y;
}

/* Report every member whose key an earlier member already used. */
static void check_dup_keys(struct vctx *c, const cJSON *obj)
{
	const cJSON *a, *b, **v;
	size_t n = 0, i;

	cJSON_ArrayForEach(a, obj)
		n++;
	if (n < 2)
		return;
	if (n <= 16) {
		for (a = obj->child; a; a = a->next) {
			for (b = obj->child; b != a; b = b->next) {
				if (!strcmp(a->string, b->string)) {
					size_t old = hb_schema_path_key(
						&c->path, a->string);

					hb_schema_report(c, V_FIELD,
							 "duplicate field");
					hb_schema_path_pop(&c->path, old);
					break;
				}
			}
		}
		return;
	}
	v = malloc(n * sizeof(*v));
	if (!v) {
		c->oom = 1;
		return;
	}
	i = 0;
	cJSON_ArrayForEach(a, obj)
		v[i++] = a;
	/* Sorted by key, then by address: cJSON allocates each member
	 * separately, so address order is arbitrary but stable. */
	qsort(v, n, sizeof(*v), key_ptr_cmp);
	for (i = 1; i < n; i++) {
		if (!strcmp(v[i - 1]->string, v[i]->string)) {
			size_t old = hb_schema_path_key(&c->path, v[i]->string);

			hb_schema_report(c, V_FIELD, "duplicate field");
			hb_schema_path_pop(&c->path, old);
		}
	}
	free(v);
}

static void validate_objectmeta(struct vctx *c, const cJSON *m, int top);

/* A member the server would prune: null where null is not allowed. */
static int pruned(const struct snode *n, const cJSON *v)
{
	return cJSON_IsNull(v) && !(n && (n->flags & F_NULLABLE));
}

static void validate_object(struct vctx *c, const struct snode *n,
			    const cJSON *v)
{
	const cJSON *m;
	long long count = 0;
	size_t i;

	if (!c->branch)
		check_dup_keys(c, v);
	cJSON_ArrayForEach(m, v) {
		const struct snode *p = prop_find(n, m->string);
		size_t old;

		if (!p)
			p = n->addl;
		/* an embedded object's metadata is ObjectMeta, whatever its
		 * schema says; apiVersion and kind are implied */
		if ((n->flags & F_EMBEDDED) && !cJSON_IsNull(m) &&
		    (!strcmp(m->string, "metadata") ||
		     (!p && (!strcmp(m->string, "apiVersion") ||
			     !strcmp(m->string, "kind"))))) {
			old = hb_schema_path_key(&c->path, m->string);
			if (!strcmp(m->string, "metadata"))
				validate_objectmeta(c, m, 0);
			else if (!cJSON_IsString(m))
				hb_schema_report(c, V_VALUE,
						 "must be of type string");
			hb_schema_path_pop(&c->path, old);
			count++;
			continue;
		}
		if (!p) {
			if (!(n->flags & (F_ADDL_TRUE | F_PRESERVE)) &&
			    !c->branch) {
				old = hb_schema_path_key(&c->path, m->string);
				hb_schema_report(c, V_FIELD, "unknown field");
				hb_schema_path_pop(&c->path, old);
			}
			count++;
			continue;
		}
		if (pruned(p, m))
			continue;
		count++;
		old = hb_schema_path_key(&c->path, m->string);
		validate_node(c, p, m);
		hb_schema_path_pop(&c->path, old);
	}
	for (i = 0; i < n->nrequired; i++) {
		const struct snode *p = prop_find(n, n->required[i]);

		m = hb_schema_get(v, n->required[i]);
		if (m && !pruned(p, m))
			continue;
		if (p && p->defv)
			continue; /* defaulted */
		{
			size_t old =
				hb_schema_path_key(&c->path, n->required[i]);

			hb_schema_report(c, V_VALUE, "Required value");
			hb_schema_path_pop(&c->path, old);
		}
	}
	if ((n->flags & F_EMBEDDED) && !c->branch) {
		static const char *const tm[] = { "apiVersion", "kind" };

		for (i = 0; i < 2; i++) {
			if (!hb_schema_has(v, tm[i])) {
				size_t old =
					hb_schema_path_key(&c->path, tm[i]);

				hb_schema_report(c, V_VALUE, "Required value");
				hb_schema_path_pop(&c->path, old);
			}
		}
	}
	if (n->min_props >= 0 && count < n->min_props)
		hb_schema_report(c, V_VALUE,
				 "must have at least %lld properties, not %lld",
				 n->min_props, count);
	if (n->max_props >= 0 && count > n->max_props)
		hb_schema_report(c, V_VALUE,
				 "must have at most %lld properties, not %lld",
				 n->max_props, count);
}

/* ---- list-type set and map ---- */

static uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t hash_str(const char *s)
{
	return hb_fnv1a_str(HB_SCHEMA_HASH_SEED, s);
}

/* A hash that equal values (cJSON_Compare) share. */
static uint64_t hash_value(const cJSON *v, int depth)
{
	const cJSON *it;
	uint64_t h = (uint64_t)(v->type & 0xff), acc = 0;

	if (depth > 16)
		return h;
	if (cJSON_IsString(v))
		return mix(h, hash_str(v->valuestring));
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble == 0 ? 0 : v->valuedouble;
		uint64_t bits;

		memcpy(&bits, &d, sizeof(bits));
		return mix(h, bits);
	}
	if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(it, v)
			h = mix(h, hash_value(it, depth + 1));
		return h;
	}
	if (cJSON_IsObject(v)) {
		/* member order does not matter */
		cJSON_ArrayForEach(it, v)
			acc += mix(hash_str(it->string),
				   hash_value(it, depth + 1));
		return mix(h, acc);
	}
	return h;
}

/* The value of map key i of item, or its schema default. */
static const cJSON *map_key(const struct snode *n, const cJSON *item,
			    size_t i)
{
	const cJSON *k = hb_schema_has(item, n->map_keys[i]);
	const struct snode *p;

	if (k)
		return k;
	p = n->items ? prop_find(n->items, n->map_keys[i]) : NULL;
	return p ? p->defv : NULL;
}

static int same_entry(const struct snode *n, const cJSON *a, const cJSON *b,
		      int map)
{
	size_t i;

	if (!map)
		return cJSON_Compare(a, b, 1);
	for (i = 0; i < n->nmap_keys; i++) {
		const cJSON *x = map_key(n, a, i), *y = map_key(n, b, i);

		if (!x != !y || (x && !cJSON_Compare(x, y, 1)))
			return 0;
	}
	return 1;
}

struct lent {
	uint64_t h;
	size_t idx;
	const cJSON *item;
};

static int lent_cmp(const void *a, const void *b)
{
	const struct lent *x = a, *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void describe_entry(const struct snode *n, const cJSON *item,
			   int map, char *buf, size_t cap)
{
	char val[QUOTE_MAX * 2 + 16];
	size_t i, o = 0;

	if (!map) {
		snprintf(buf, cap, "%s", fmt_value(item, val, sizeof(val)));
		return;
	}
	buf[0] = '\0';
	for (i = 0; i < n->nmap_keys && o < cap; i++) {
		const cJSON *k = map_key(n, item, i);

		o += (size_t)snprintf(buf + o, cap - o, "%s%s=%s",
				      i ? ", " : "", n->map_keys[i],
				      k ? fmt_value(k, val, sizeof(val))
					: "<missing>");
	}
}

static void check_list_unique(struct vctx *c, const struct snode *n,
			      const cJSON *arr, int map)
{
	const cJSON *it;
	struct lent *v;
	char *dup;
	size_t cnt = 0, i, j, k;

	cJSON_ArrayForEach(it, arr)
		cnt++;
	if (cnt < 2)
		return;
	v = malloc(cnt * sizeof(*v));
	dup = calloc(cnt, 1);
	if (!v || !dup) {
		free(v);
		free(dup);
		c->oom = 1;
		return;
	}
	k = 0;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if (map && !cJSON_IsObject(it)) {
			i++;
			continue; /* already a type error */
		}
		v[k].idx = i++;
		v[k].item = it;
		if (map) {
			uint64_t h = 7;

			for (j = 0; j < n->nmap_keys; j++) {
				const cJSON *kv = map_key(n, it, j);

				h = mix(h, kv ? hash_value(kv, 0) : 0);
			}
			v[k].h = h;
		} else {
			v[k].h = hash_value(it, 0);
		}
		k++;
	}
	qsort(v, k, sizeof(*v), lent_cmp);
	for (i = 0; i < k; i = j) {
		for (j = i + 1; j < k && v[j].h == v[i].h; j++)
			;
		/* v[i..j) share a hash: mark each later duplicate */
		{
			size_t a, b;

			for (b = i + 1; b < j; b++)
				for (a = i; a < b; a++)
					if (!dup[v[a].idx] &&
					    same_entry(n, v[a].item,
						       v[b].item, map)) {
						dup[v[b].idx] = 1;
						break;
					}
		}
	}
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if (dup[i]) {
			char desc[256];
			size_t old = hb_schema_path_index(&c->path, i);

			describe_entry(n, it, map, desc, sizeof(desc));
			hb_schema_report(c, V_VALUE, "Duplicate value: %s",
					 desc);
			hb_schema_path_pop(&c->path, old);
		}
		i++;
	}
	free(v);
	free(dup);
}

static void validate_array(struct vctx *c, const struct snode *n,
			   const cJSON *v)
{
	const cJSON *it;
	long long cnt = 0;
	size_t i = 0;

	cJSON_ArrayForEach(it, v)
		cnt++;
	if (n->min_items >= 0 && cnt < n->min_items)
		hb_schema_report(c, V_VALUE,
				 "must have at least %lld items, not %lld",
				 n->min_items, cnt);
	if (n->max_items >= 0 && cnt > n->max_items)
		hb_schema_report(c, V_VALUE,
				 "Too many: %lld: must have at most %lld items",
				 cnt, n->max_items);
	if (n->items) {
		cJSON_ArrayForEach(it, v) {
			size_t old = hb_schema_path_index(&c->path, i++);

			validate_node(c, n->items, it);
			hb_schema_path_pop(&c->path, old);
		}
	}
	if (n->list_type == LIST_SET || (n->flags & F_UNIQUE))
		check_list_unique(c, n, v, 0);
	else if (n->list_type == LIST_MAP)
		check_list_unique(c, n, v, 1);
}

static void validate_string(struct vctx *c, const struct snode *n,
			    const cJSON *v)
{
	const char *s = v->valuestring;
	char q[QUOTE_MAX * 2 + 16];

	if (n->min_len >= 0 || n->max_len >= 0) {
		long long len = (long long)hb_schema_utf8_chars(s);

		if (n->min_len >= 0 && len < n->min_len)
			hb_schema_report(
				c, V_VALUE,
				"Invalid value: %s: must be at least %lld "
				"characters long",
				hb_schema_quote(s, q, sizeof(q)), n->min_len);
		if (n->max_len >= 0 && len > n->max_len)
			hb_schema_report(
				c, V_VALUE,
				"Too long: %lld characters: must be at most "
				"%lld characters long",
				len, n->max_len);
	}
	if (n->pattern && regexec(&n->pattern->re, s, 0, NULL, 0))
		hb_schema_report(
			c, V_VALUE, "Invalid value: %s: must match '%s'",
			hb_schema_quote(s, q, sizeof(q)), n->pattern->src);
	if (n->format == FMT_DATETIME &&
	    hb_time_rfc3339_parse_flags(s, HB_TIME_STRICT, NULL))
		hb_schema_report(
			c, V_VALUE,
			"Invalid value: %s: must be a date-time (RFC 3339)",
			hb_schema_quote(s, q, sizeof(q)));
}

static void validate_number(struct vctx *c, const struct snode *n,
			    const cJSON *v, unsigned t)
{
	double d = v->valuedouble;
	char a[64], b[64];

	if (n->format == FMT_INT32 && (t & T_INTEGER) &&
	    (d < -2147483648.0 || d > 2147483647.0))
		hb_schema_report(c, V_VALUE,
				 "Invalid value: %s: must fit in int32",
				 fmt_number(d, a, sizeof(a)));
	if ((n->flags & F_HAS_MIN) &&
	    ((n->flags & F_EXCL_MIN) ? d <= n->minimum : d < n->minimum))
		hb_schema_report(c, V_VALUE,
				 "Invalid value: %s: must be greater than %s%s",
				 fmt_number(d, a, sizeof(a)),
				 (n->flags & F_EXCL_MIN) ? "" : "or equal to ",
				 fmt_number(n->minimum, b, sizeof(b)));
	if ((n->flags & F_HAS_MAX) &&
	    ((n->flags & F_EXCL_MAX) ? d >= n->maximum : d > n->maximum))
		hb_schema_report(c, V_VALUE,
				 "Invalid value: %s: must be less than %s%s",
				 fmt_number(d, a, sizeof(a)),
				 (n->flags & F_EXCL_MAX) ? "" : "or equal to ",
				 fmt_number(n->maximum, b, sizeof(b)));
	if (n->flags & F_HAS_MULT) {
		double q = d / n->multiple_of, r = 0;

		/* q - round(q); past 2^53 every double is a whole number */
		if (isfinite(q) && q > -9e15 && q < 9e15)
			r = q - (double)(long long)(q + (q < 0 ? -0.5 : 0.5));
		if (!isfinite(q) || r > 1e-9 || r < -1e-9)
			hb_schema_report(
				c, V_VALUE,
				"Invalid value: %s: must be a multiple of %s",
				fmt_number(d, a, sizeof(a)),
				fmt_number(n->multiple_of, b, sizeof(b)));
	}
}

static void validate_enum(struct vctx *c, const struct snode *n,
			  const cJSON *v)
{
	const cJSON *e;
	char want[256], q[QUOTE_MAX * 2 + 16], got[QUOTE_MAX * 2 + 16];
	size_t o = 0;

	cJSON_ArrayForEach(e, n->enumv)
		if (cJSON_Compare(e, v, 1))
			return;
	want[0] = '\0';
	cJSON_ArrayForEach(e, n->enumv) {
		if (o + 4 >= sizeof(want))
			break;
		o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%s",
				      o ? ", " : "",
				      fmt_value(e, q, sizeof(q)));
	}
	hb_schema_report(c, V_VALUE,
			 "Unsupported value: %s: supported values: %s",
			 fmt_value(v, got, sizeof(got)), want);
}

/* Violations of v against n alone, nothing reported. */
static size_t probe(const struct vctx *c, const struct snode *n,
		    const cJSON *v)
{
	struct vctx p;

	hb_schema_vctx_init(&p, NULL, NULL);
	p.crd = c->crd;
	p.branch = 1;
	validate_node(&p, n, v);
	return p.count;
}

static void validate_combinators(struct vctx *c, const struct snode *n,
				 const cJSON *v)
{
	size_t i, ok;

	if (n->nany_of) {
		for (i = 0, ok = 0; i < n->nany_of && !ok; i++)
			ok = !probe(c, n->any_of[i], v);
		if (!ok)
			hb_schema_report(
				c, V_VALUE,
				"must match at least one schema in anyOf");
	}
	for (i = 0; i < n->nall_of; i++)
		if (probe(c, n->all_of[i], v))
			hb_schema_report(c, V_VALUE,
					 "must match schema %zu of allOf", i);
	if (n->none_of) {
		for (i = 0, ok = 0; i < n->none_of; i++)
			ok += !probe(c, n->one_of[i], v);
		if (ok != 1)
			hb_schema_report(
				c, V_VALUE,
				"must match exactly one schema in oneOf, "
				"not %zu",
				ok);
	}
	if (n->not_of && !probe(c, n->not_of, v))
		hb_schema_report(c, V_VALUE,
				 "must not match the schema in not");
}

static void validate_node(struct vctx *c, const struct snode *n,
			  const cJSON *v)
{
	unsigned t = value_types(v), want = n->types;
	char tn[64];
	size_t i;

	if (cJSON_IsNull(v)) {
		if (!(n->flags & F_NULLABLE))
			hb_schema_report(c, V_VALUE, "must be of type %s",
					 want ? type_names(want, tn, sizeof(tn))
					      : "non-null");
		return;
	}
	if (n->flags & F_INT_OR_STRING)
		want = T_INTEGER | T_STRING;
	if (want && !(t & want)) {
		hb_schema_report(c, V_VALUE, "must be of type %s",
				 type_names(want, tn, sizeof(tn)));
		return;
	}
	if (t & T_OBJECT)
		validate_object(c, n, v);
	else if (t & T_ARRAY)
		validate_array(c, n, v);
	else if (t & T_STRING)
		validate_string(c, n, v);
	else if (t & T_NUMBER)
		validate_number(c, n, v, t);
	if (n->enumv)
		validate_enum(c, n, v);
	validate_combinators(c, n, v);
	for (i = 0; i < n->nrules; i++)
		if (!n->rules[i].impl->holds(v))
			hb_schema_report(c, V_VALUE, "%s", n->rules[i].message);
}

/* ---- ObjectMeta ---- */

static void meta_type(struct vctx *c, const cJSON *v, unsigned want)
{
	char tn[64];

	if (!(value_types(v) & want))
		hb_schema_report(c, V_VALUE, "must be of type %s",
				 type_names(want, tn, sizeof(tn)));
}

static void meta_map(struct vctx *c, const cJSON *m, int labels)
{
	const cJSON *it;
	size_t total = 0;
	char q[QUOTE_MAX * 2 + 16];

	if (!cJSON_IsObject(m)) {
		hb_schema_report(c, V_VALUE, "must be of type object");
		return;
	}
	check_dup_keys(c, m);
	cJSON_ArrayForEach(it, m) {
		size_t old = hb_schema_path_key(&c->path, it->string);
		const char *why = hb_schema_qualified_name(it->string, !labels);
		const char *val = cJSON_IsString(it) ? it->valuestring : "";

		if (why)
			hb_schema_report(
				c, V_VALUE, "Invalid value: %s: %s",
				hb_schema_quote(it->string, q, sizeof(q)), why);
		if (!cJSON_IsString(it) && !cJSON_IsNull(it))
			hb_schema_report(c, V_VALUE, "must be of type string");
		else if (labels && (why = hb_schema_label_value(val)))
			hb_schema_report(c, V_VALUE, "Invalid value: %s: %s",
					 hb_schema_quote(val, q, sizeof(q)),
					 why);
		total += strlen(it->string) + strlen(val);
		hb_schema_path_pop(&c->path, old);
	}
	if (!labels && total > ANNOTATIONS_MAX)
		hb_schema_report(
			c, V_VALUE,
			"Too long: %zu bytes: annotations may have at most %u "
			"bytes in total",
			total, ANNOTATIONS_MAX);
}

static void meta_name(struct vctx *c, const char *s, int prefix)
{
	char q[QUOTE_MAX * 2 + 16], masked[256];
	size_t n = strlen(s);
	int ok;

	/* generateName may end in '-': the server masks it, as it appends
	 * random characters there */
	if (prefix && n > 1 && n <= 253 && s[n - 1] == '-') {
		memcpy(masked, s, n - 1);
		masked[n - 1] = 'a';
		ok = hb_schema_dns1123_subdomain(masked, n, 0);
	} else {
		ok = hb_schema_dns1123_subdomain(s, n, 0);
	}
	if (!ok)
		hb_schema_report(
			c, V_VALUE,
			"Invalid value: %s: a lowercase RFC 1123 subdomain "
			"must consist of lower case alphanumeric characters, "
			"'-' or '.', must start and end with an alphanumeric "
			"character and be at most 253 characters",
			hb_schema_quote(s, q, sizeof(q)));
}

/* An array of objects with the given string/bool/object members. */
struct mfield {
	const char *name;
	unsigned type;
	int required;
};

static void meta_objects(struct vctx *c, const cJSON *arr,
			 const struct mfield *f, size_t nf, int *controllers)
{
	const cJSON *it, *m;
	size_t i = 0, j;

	if (!cJSON_IsArray(arr)) {
		hb_schema_report(c, V_VALUE, "must be of type array");
		return;
	}
	cJSON_ArrayForEach(it, arr) {
		size_t old = hb_schema_path_index(&c->path, i++);

		if (!cJSON_IsObject(it)) {
			hb_schema_report(c, V_VALUE, "must be of type object");
			hb_schema_path_pop(&c->path, old);
			continue;
		}
		check_dup_keys(c, it);
		cJSON_ArrayForEach(m, it) {
			size_t o2 = hb_schema_path_key(&c->path, m->string);

			for (j = 0; j < nf; j++)
				if (!strcmp(f[j].name, m->string))
					break;
			if (j == nf)
				hb_schema_report(c, V_FIELD, "unknown field");
			else if (!cJSON_IsNull(m))
				meta_type(c, m, f[j].type);
			if (j < nf && f[j].type == T_STRING &&
			    cJSON_IsString(m) && !strcmp(m->string, "time") &&
			    hb_time_rfc3339_parse_flags(m->valuestring,
							HB_TIME_STRICT, NULL))
				hb_schema_report(
					c, V_VALUE,
					"must be a date-time (RFC 3339)");
			hb_schema_path_pop(&c->path, o2);
		}
		for (j = 0; j < nf; j++) {
			const char *s = hb_doc_str(it, f[j].name);

			if (f[j].required && (!s || !*s)) {
				size_t o2 =
					hb_schema_path_key(&c->path, f[j].name);

				hb_schema_report(c, V_VALUE, "Required value");
				hb_schema_path_pop(&c->path, o2);
			}
		}
		if (controllers &&
		    cJSON_IsTrue(hb_schema_get(it, "controller")))
			(*controllers)++;
		hb_schema_path_pop(&c->path, old);
	}
}

/* metadata.finalizers: qualified names, not both orphan and
 * foregroundDeletion. */
static void meta_finalizers(struct vctx *c, const cJSON *it)
{
	const cJSON *f, *arr = cJSON_IsArray(it) ? it : NULL;
	char q[QUOTE_MAX * 2 + 16];
	size_t i = 0;
	int orphan = 0, fg = 0;

	if (!arr)
		hb_schema_report(c, V_VALUE, "must be of type array");
	cJSON_ArrayForEach(f, arr) {
		size_t o2 = hb_schema_path_index(&c->path, i++);
		const char *why;

		if (!cJSON_IsString(f)) {
			hb_schema_report(c, V_VALUE, "must be of type string");
		} else if ((why = hb_schema_qualified_name(f->valuestring,
							   0))) {
			hb_schema_report(c, V_VALUE, "Invalid value: %s: %s",
					 hb_schema_quote(f->valuestring, q,
							 sizeof(q)),
					 why);
		} else {
			orphan |= !strcmp(f->valuestring, "orphan");
			fg |= !strcmp(f->valuestring, "foregroundDeletion");
		}
		hb_schema_path_pop(&c->path, o2);
	}
	if (orphan && fg)
		hb_schema_report(c, V_VALUE,
				 "'orphan' and 'foregroundDeletion' cannot "
				 "both be set");
}

static void validate_objectmeta(struct vctx *c, const cJSON *m, int top)
{
	static const struct mfield owner_fields[] = {
		{ "apiVersion", T_STRING, 1 }, { "kind", T_STRING, 1 },
		{ "name", T_STRING, 1 },       { "uid", T_STRING, 1 },
		{ "controller", T_BOOLEAN, 0 },
		{ "blockOwnerDeletion", T_BOOLEAN, 0 },
	};
	static const struct mfield managed_fields[] = {
		{ "manager", T_STRING, 0 },    { "operation", T_STRING, 0 },
		{ "apiVersion", T_STRING, 0 }, { "time", T_STRING, 0 },
		{ "fieldsType", T_STRING, 0 }, { "fieldsV1", T_OBJECT, 0 },
		{ "subresource", T_STRING, 0 },
	};
	const cJSON *it;
	const char *name, *gen;
	char q[QUOTE_MAX * 2 + 16];
	int controllers = 0;

	if (!cJSON_IsObject(m)) {
		hb_schema_report(c, V_VALUE, "must be of type object");
		return;
	}
	check_dup_keys(c, m);
	cJSON_ArrayForEach(it, m) {
		const char *k = it->string;
		size_t old = hb_schema_path_key(&c->path, k);

		if (cJSON_IsNull(it)) {
			hb_schema_path_pop(&c->path, old);
			continue;
		}
		if (!strcmp(k, "name") || !strcmp(k, "generateName") ||
		    !strcmp(k, "namespace") || !strcmp(k, "uid") ||
		    !strcmp(k, "resourceVersion") || !strcmp(k, "selfLink")) {
			meta_type(c, it, T_STRING);
		} else if (!strcmp(k, "generation") ||
			   !strcmp(k, "deletionGracePeriodSeconds")) {
			meta_type(c, it, T_INTEGER);
			if (!strcmp(k, "generation") &&
			    hb_schema_is_integral(it) && it->valuedouble < 0)
				hb_schema_report(c, V_VALUE,
						 "Invalid value: %s: must be "
						 "greater than or equal to 0",
						 fmt_number(it->valuedouble, q,
							    sizeof(q)));
		} else if (!strcmp(k, "creationTimestamp") ||
			   !strcmp(k, "deletionTimestamp")) {
			meta_type(c, it, T_STRING);
			if (cJSON_IsString(it) &&
			    hb_time_rfc3339_parse_flags(it->valuestring,
							HB_TIME_STRICT, NULL))
				hb_schema_report(
					c, V_VALUE,
					"Invalid value: %s: must be a "
					"date-time (RFC 3339)",
					hb_schema_quote(it->valuestring, q,
							sizeof(q)));
		} else if (!strcmp(k, "labels") ||
			   !strcmp(k, "annotations")) {
			meta_map(c, it, !strcmp(k, "labels"));
		} else if (!strcmp(k, "finalizers")) {
			meta_finalizers(c, it);
		} else if (!strcmp(k, "ownerReferences")) {
			meta_objects(c, it, owner_fields,
				     sizeof(owner_fields) /
					     sizeof(owner_fields[0]),
				     &controllers);
			if (controllers > 1)
				hb_schema_report(c, V_VALUE,
						 "Only one reference can have "
						 "Controller set to true");
		} else if (!strcmp(k, "managedFields")) {
			meta_objects(c, it, managed_fields,
				     sizeof(managed_fields) /
					     sizeof(managed_fields[0]),
				     NULL);
		} else {
			hb_schema_report(c, V_FIELD, "unknown field");
		}
		hb_schema_path_pop(&c->path, old);
	}
	name = hb_doc_str(m, "name");
	gen = hb_doc_str(m, "generateName");
	if (name && *name) {
		size_t old = hb_schema_path_key(&c->path, "name");

		meta_name(c, name, 0);
		hb_schema_path_pop(&c->path, old);
	}
	if (gen && *gen) {
		size_t old = hb_schema_path_key(&c->path, "generateName");

		meta_name(c, gen, 1);
		hb_schema_path_pop(&c->path, old);
	}
	if (top && !(name && *name) && !(gen && *gen)) {
		size_t old = hb_schema_path_key(&c->path, "name");

		hb_schema_report(c, V_VALUE, "Required value: name or "
				 "generateName is required");
		hb_schema_path_pop(&c->path, old);
	}
	name = hb_doc_str(m, "namespace");
	if (top && name && *name) {
		size_t old = hb_schema_path_key(&c->path, "namespace");

		if (c->crd && !c->crd->namespaced)
			hb_schema_report(c, V_VALUE,
					 "Forbidden: not allowed on this type");
		else if (!hb_schema_dns1123_label(name))
			hb_schema_report(c, V_VALUE,
					 "Invalid value: %s: a lowercase RFC "
					 "1123 label of at most 63 characters",
					 hb_schema_quote(name, q, sizeof(q)));
		hb_schema_path_pop(&c->path, old);
	}
}

/* ------------------------------------------------------------------ */
/* Validating objects                                                  */

static const struct sversion *find_version(const struct hb_schema_set *set,
					   const char *api_version,
					   const char *kind,
					   const struct crd **crd)
{
	size_t i, j;

	for (i = 0; i < set->ncrds; i++) {
		if (strcmp(set->crds[i]->kind, kind))
			continue;
		for (j = 0; j < set->crds[i]->nversions; j++) {
			if (!strcmp(set->crds[i]->versions[j].api_version,
				    api_version)) {
				*crd = set->crds[i];
				return &set->crds[i]->versions[j];
			}
		}
	}
	return NULL;
}

/*
 * The root: apiVersion and kind were matched already, metadata is
 * ObjectMeta whatever the schema says, and on create a status behind a
 * status subresource is only pruned.
 */
static void validate_root(struct vctx *c, const struct sversion *ver,
			  const cJSON *obj, int create)
{
	const struct snode *root = ver->root;
	const cJSON *m;
	size_t i;

	check_dup_keys(c, obj);
	cJSON_ArrayForEach(m, obj) {
		const struct snode *p = prop_find(root, m->string);
		size_t old = hb_schema_path_key(&c->path, m->string);

		if (!strcmp(m->string, "metadata")) {
			if (!cJSON_IsNull(m))
				validate_objectmeta(c, m, 1);
		} else if (!p) {
			if (strcmp(m->string, "apiVersion") &&
			    strcmp(m->string, "kind") &&
			    !(root->flags & (F_ADDL_TRUE | F_PRESERVE)))
				hb_schema_report(c, V_FIELD, "unknown field");
		} else if (pruned(p, m)) {
			/* dropped */
		} else if (create && ver->status_subresource &&
			   !strcmp(m->string, "status")) {
			c->prune_only = 1;
			validate_node(c, p, m);
			c->prune_only = 0;
		} else {
			validate_node(c, p, m);
		}
		hb_schema_path_pop(&c->path, old);
	}
	for (i = 0; i < root->nrequired; i++) {
		const struct snode *p = prop_find(root, root->required[i]);

		m = hb_schema_get(obj, root->required[i]);
		if ((m && !pruned(p, m)) || (p && p->defv))
			continue;
		if (create && ver->status_subresource &&
		    !strcmp(root->required[i], "status"))
			continue;
		{
			size_t old =
				hb_schema_path_key(&c->path, root->required[i]);

			hb_schema_report(c, V_VALUE, "Required value");
			hb_schema_path_pop(&c->path, old);
		}
	}
	if (!hb_schema_has(obj, "metadata")) {
		size_t old = hb_schema_path_lit(&c->path, "metadata.name");

		hb_schema_report(
			c, V_VALUE,
			"Required value: name or generateName is required");
		hb_schema_path_pop(&c->path, old);
	}
	for (i = 0; i < root->nrules; i++)
		if (!root->rules[i].impl->holds(obj))
			hb_schema_report(c, V_VALUE, "%s",
					 root->rules[i].message);
}

int hb_schema_validate_all(const struct hb_schema_set *set,
			   const struct cJSON *obj, unsigned flags,
			   struct hb_buf *violations, struct hb_err *err)
{
	const struct sversion *ver;
	const struct crd *crd = NULL;
	const char *api_version, *kind;
	struct vctx c;

	if (!cJSON_IsObject(obj))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "<root>: must be of type object");
	api_version = hb_doc_str(obj, "apiVersion");
	kind = hb_doc_str(obj, "kind");
	if (!api_version || !*api_version || !kind || !*kind)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: Required value",
				  api_version && *api_version ? "kind"
							      : "apiVersion");
	ver = find_version(set, api_version, kind, &crd);
	if (!ver)
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "no schema for kind %.100s in %.100s", kind,
				  api_version);
	hb_schema_vctx_init(&c, violations, err);
	c.crd = crd;
	validate_root(&c, ver, obj, flags & HB_SCHEMA_CREATE);
	if (flags & HB_SCHEMA_RULES)
		hb_schema_run_rules(&c, obj);
	return hb_schema_vctx_finish(&c);
}

int hb_schema_validate(const struct hb_schema_set *set,
		       const struct cJSON *obj, struct hb_err *err)
{
	return hb_schema_validate_all(set, obj, 0, NULL, err);
}
