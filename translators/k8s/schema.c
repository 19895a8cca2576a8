/*
 * schema.c - strict validation of objects against CRD schemas, and the
 * controllers' own rules for MPIJob, TrainJob and training runtimes.
 *
 * A CRD's openAPIV3Schema is compiled once into a tree of struct snode
 * (properties sorted for binary search, patterns compiled, CEL rules bound
 * to native checks) held in an arena that belongs to the CRD.  Validation
 * walks an object and the tree side by side, keeping the JSON path of the
 * current value in a fixed buffer, and reports every violation.
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

/* Longest path kept; longer ones end in "...". */
#define PATH_CAP 512
/* Deepest schema accepted. */
#define MAX_SCHEMA_DEPTH 128
/* Longest value quoted in a message. */
#define QUOTE_MAX 64
/* The API server's budget for all annotations of an object. */
#define ANNOTATIONS_MAX (256u * 1024)

enum {
	T_OBJECT = 1u << 0,
	T_ARRAY = 1u << 1,
	T_STRING = 1u << 2,
	T_INTEGER = 1u << 3,
	T_NUMBER = 1u << 4,
	T_BOOLEAN = 1u << 5
};

enum {
	F_NULLABLE = 1u << 0,
	F_PRESERVE = 1u << 1,
	F_INT_OR_STRING = 1u << 2,
	F_EMBEDDED = 1u << 3,
	F_ADDL_TRUE = 1u << 4,
	F_HAS_MIN = 1u << 5,
	F_HAS_MAX = 1u << 6,
	F_EXCL_MIN = 1u << 7,
	F_EXCL_MAX = 1u << 8,
	F_HAS_MULT = 1u << 9,
	F_UNIQUE = 1u << 10
};

enum { FMT_NONE, FMT_INT32, FMT_INT64, FMT_DATETIME };
enum { LIST_ATOMIC, LIST_SET, LIST_MAP };

struct vctx;
struct snode;

/* A CEL rule we evaluate natively: returns 1 when self satisfies it. */
struct cel_impl {
	const char *rule;
	int (*holds)(const cJSON *self);
};

struct srule {
	const struct cel_impl *impl;
	const char *message;
};

struct sprop {
	const char *name;
	struct snode *node;
};

struct srx {
	const char *src;
	regex_t re;
	struct srx *next;
};

struct snode {
	unsigned types;
	unsigned flags;
	int format;
	int list_type;
	double minimum, maximum, multiple_of;
	long long min_len, max_len, min_items, max_items, min_props,
		max_props; /* -1: unset */
	const struct srx *pattern;
	const cJSON *enumv;
	const cJSON *defv;
	struct sprop *props;
	size_t nprops;
	const char **required;
	size_t nrequired;
	struct snode *addl;
	struct snode *items;
	struct snode **any_of, **all_of, **one_of;
	size_t nany_of, nall_of, none_of;
	struct snode *not_of;
	const char **map_keys;
	size_t nmap_keys;
	struct srule *rules;
	size_t nrules;
};

struct sversion {
	const char *name;
	char *api_version; /* group/version, in the arena */
	struct snode *root;
	int status_subresource;
};

struct crd {
	cJSON *doc;
	struct hb_arena arena;
	const char *group;
	const char *kind;
	int namespaced;
	struct sversion *versions;
	size_t nversions;
	struct srx *rx;
	struct hb_buf unchecked;
};

struct hb_schema_set {
	struct crd **crds;
	size_t ncrds;
};

/* ------------------------------------------------------------------ */
/* Paths                                                               */

struct path {
	size_t len;
	char buf[PATH_CAP];
};

static int plain_key(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++) {
		unsigned char ch = (unsigned char)*k;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

/* Append raw text, ending in "..." when it does not fit. */
static void path_raw(struct path *p, const char *s, size_t n)
{
	size_t room = sizeof(p->buf) - 1 - p->len;

	if (p->len >= 3 && !memcmp(p->buf + p->len - 3, "...", 3) &&
	    room < 4)
		return;
	if (n + 4 <= room) {
		memcpy(p->buf + p->len, s, n);
		p->len += n;
	} else {
		size_t keep = room > 3 ? room - 3 : 0;

		memcpy(p->buf + p->len, s, keep);
		p->len += keep;
		memcpy(p->buf + p->len, "...", room - keep < 3 ? room - keep
							      : 3);
		p->len += room - keep < 3 ? room - keep : 3;
	}
	p->buf[p->len] = '\0';
}

/* Push an object key; returns the length to pop back to. */
static size_t path_key(struct path *p, const char *key)
{
	size_t old = p->len;

	if (plain_key(key)) {
		if (p->len)
			path_raw(p, ".", 1);
		path_raw(p, key, strlen(key));
		return old;
	}
	path_raw(p, "[", 1);
	for (; *key; key++) {
		unsigned char ch = (unsigned char)*key;
		char hex[8];

		if (ch < 0x20 || ch == 0x7f || ch == ']' || ch == '\\') {
			snprintf(hex, sizeof(hex), "\\x%02x", ch);
			path_raw(p, hex, 4);
		} else {
			path_raw(p, (const char *)&ch, 1);
		}
	}
	path_raw(p, "]", 1);
	return old;
}

static size_t path_index(struct path *p, size_t idx)
{
	size_t old = p->len;
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "[%zu]", idx);

	path_raw(p, tmp, (size_t)n);
	return old;
}

static size_t path_lit(struct path *p, const char *s)
{
	size_t old = p->len;

	path_raw(p, s, strlen(s));
	return old;
}

static void path_pop(struct path *p, size_t old)
{
	p->len = old;
	p->buf[old] = '\0';
}

/* ------------------------------------------------------------------ */
/* Violations                                                          */

enum { V_VALUE, V_FIELD };

struct vctx {
	const struct crd *crd;
	struct path path;
	struct hb_buf *out;
	struct hb_err *err;
	size_t count;
	size_t listed;
	int prune_only; /* report unknown/duplicate fields only */
	int branch;	/* inside anyOf/allOf/oneOf/not: no field checks */
	int oom;
	size_t nseen;
	uint64_t seen[64]; /* hashes of the first violations, to drop
			    * repeats (the schema and a rule may agree) */
};

static void vctx_init(struct vctx *c, struct hb_buf *out,
		      struct hb_err *err)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->err = err;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

__attribute__((format(printf, 3, 4)))
static void report(struct vctx *c, int kind, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;
	uint64_t h;
	size_t i;

	if (c->prune_only && kind == V_VALUE)
		return;
	if (c->branch) {
		c->count++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	h = fnv(fnv(1469598103934665603ull, c->path.buf), msg);
	for (i = 0; i < c->nseen; i++)
		if (c->seen[i] == h)
			return;
	if (c->nseen < sizeof(c->seen) / sizeof(c->seen[0]))
		c->seen[c->nseen++] = h;
	c->count++;
	if (c->count == 1)
		hb_err_set(c->err, HB_EINVAL, NULL, 0, "%s: %s",
			   c->path.len ? c->path.buf : "<root>", msg);
	if (c->out && c->listed < HB_SCHEMA_MAX_VIOLATIONS) {
		int rc = hb_buf_printf(c->out, "%s: %s\n",
				       c->path.len ? c->path.buf : "<root>",
				       msg);

		if (rc == HB_ENOMEM)
			c->oom = 1;
		if (!rc)
			c->listed++;
	}
}

/* Finish a run: count what was not listed, set the return code. */
static int vctx_finish(struct vctx *c)
{
	if (c->oom)
		return hb_err_set(c->err, HB_ENOMEM, NULL, 0, "out of memory");
	if (!c->count)
		return 0;
	if (c->out && c->count > c->listed)
		hb_buf_printf(c->out, "... and %zu more\n",
			      c->count - c->listed);
	if (c->err && c->err->code == HB_EINVAL && c->count > 1) {
		size_t n = strlen(c->err->msg);

		snprintf(c->err->msg + n, sizeof(c->err->msg) - n,
			 " (and %zu more)", c->count - 1);
	}
	return HB_EINVAL;
}

/* ------------------------------------------------------------------ */
/* Value helpers                                                       */

static const cJSON *get(const cJSON *o, const char *key)
{
	if (!o || !cJSON_IsObject(o))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A present, non-null member. */
static const cJSON *has(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A whole number in the int64 range (no libm: plain conversions). */
static int whole(double d)
{
	return isfinite(d) && d >= -9223372036854775808.0 &&
	       d < 9223372036854775808.0 && (double)(long long)d == d;
}

static int is_integral(const cJSON *v)
{
	return cJSON_IsNumber(v) && whole(v->valuedouble);
}

/* 1 and *out when o.key is an integer. */
static int get_int(const cJSON *o, const char *key, long long *out)
{
	const cJSON *v = get(o, key);

	if (!is_integral(v))
		return 0;
	*out = (long long)v->valuedouble;
	return 1;
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Quote s for a message: escaped, cut at QUOTE_MAX bytes. */
static const char *quote(const char *s, char *buf, size_t cap)
{
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; s[i] && o + 8 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i >= QUOTE_MAX) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

static const char *fmt_number(double d, char *buf, size_t cap)
{
	if (whole(d) && d > -1e18 && d < 1e18)
		snprintf(buf, cap, "%lld", (long long)d);
	else
		snprintf(buf, cap, "%.17g", d);
	return buf;
}

/* Describe a value for a message. */
static const char *fmt_value(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v))
		return quote(v->valuestring, buf, cap);
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
		return is_integral(v) ? T_NUMBER | T_INTEGER : T_NUMBER;
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
/* Names: DNS labels and subdomains, qualified names, label values     */

static int lower_alnum(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static int alnum(int ch)
{
	return lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n), folding case if fold. */
static int rfc1123_label(const char *s, size_t n, int fold)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		int ch = (unsigned char)s[i];

		if (fold && ch >= 'A' && ch <= 'Z')
			ch += 'a' - 'A';
		if (!lower_alnum(ch) && !(ch == '-' && i && i + 1 < n))
			return 0;
	}
	return 1;
}

static int dns1123_subdomain(const char *s, size_t n, int fold)
{
	size_t start = 0, i;

	if (!n || n > 253)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (!rfc1123_label(s + start, i - start, fold))
				return 0;
			start = i + 1;
		}
	}
	return 1;
}

static int dns1123_label(const char *s)
{
	size_t n = strlen(s);

	return n <= 63 && rfc1123_label(s, n, 0);
}

/* [a-z]([-a-z0-9]*[a-z0-9])?, no length limit. */
static int dns1035_shape(const char *s)
{
	return *s >= 'a' && *s <= 'z' && rfc1123_label(s, strlen(s), 0);
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n). */
static int name_part(const char *s, size_t n)
{
	size_t i;

	if (!n || !alnum((unsigned char)s[0]) ||
	    !alnum((unsigned char)s[n - 1]))
		return 0;
	for (i = 1; i + 1 < n; i++) {
		int ch = (unsigned char)s[i];

		if (!alnum(ch) && ch != '-' && ch != '_' && ch != '.')
			return 0;
	}
	return 1;
}

/* Why s is not a qualified name (label or annotation key), or NULL. */
static const char *qualified_name(const char *s, int fold)
{
	const char *slash = strchr(s, '/');
	const char *name = s;

	if (slash) {
		if (strchr(slash + 1, '/'))
			return "a qualified name must consist of alphanumeric "
			       "characters, '-', '_' or '.', with an optional "
			       "DNS subdomain prefix and '/'";
		if (slash == s)
			return "prefix part must be non-empty";
		if (!dns1123_subdomain(s, (size_t)(slash - s), fold))
			return "prefix part must be a lowercase RFC 1123 "
			       "subdomain of at most 253 characters";
		name = slash + 1;
	}
	if (!*name)
		return "name part must be non-empty";
	if (strlen(name) > 63)
		return "name part must be no more than 63 characters";
	if (!name_part(name, strlen(name)))
		return "name part must consist of alphanumeric characters, "
		       "'-', '_' or '.', and must start and end with an "
		       "alphanumeric character";
	return NULL;
}

static const char *label_value(const char *s)
{
	size_t n = strlen(s);

	if (n > 63)
		return "must be no more than 63 characters";
	if (n && !name_part(s, n))
		return "a valid label must be an empty string or consist of "
		       "alphanumeric characters, '-', '_' or '.', and must "
		       "start and end with an alphanumeric character";
	return NULL;
}

static int digits(const char *s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int num(const char *s, int n)
{
	int v = 0, i;

	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* RFC 3339 date-time: 2006-01-02T15:04:05[.frac](Z|+07:00). */
static int rfc3339(const char *s)
{
	size_t n = strlen(s), i = 19;

	if (n < 20 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) ||
	    s[7] != '-' || !digits(s + 8, 2) ||
	    (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2) ||
	    s[13] != ':' || !digits(s + 14, 2) || s[16] != ':' ||
	    !digits(s + 17, 2))
		return 0;
	if (num(s + 5, 2) < 1 || num(s + 5, 2) > 12 || num(s + 8, 2) < 1 ||
	    num(s + 8, 2) > 31 || num(s + 11, 2) > 23 ||
	    num(s + 14, 2) > 59 || num(s + 17, 2) > 60)
		return 0;
	if (s[i] == '.') {
		size_t f = ++i;

		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f)
			return 0;
	}
	if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n)
		return 1;
	return (s[i] == '+' || s[i] == '-') && i + 6 == n &&
	       digits(s + i + 1, 2) && s[i + 3] == ':' &&
	       digits(s + i + 4, 2) && num(s + i + 1, 2) <= 23 &&
	       num(s + i + 4, 2) <= 59;
}

/* ------------------------------------------------------------------ */
/* CEL rules of the reference CRDs, evaluated natively                 */

/* The name the object will have: name, or generateName plus a suffix. */
static const char *object_name(const cJSON *obj, char *buf, size_t cap)
{
	const cJSON *meta = get(obj, "metadata");
	const char *name = str(meta, "name");
	const char *gen = str(meta, "generateName");

	if (name && *name)
		return name;
	if (gen && *gen) {
		snprintf(buf, cap, "%sxxxxx", gen);
		return buf;
	}
	return NULL;
}

static int cel_name_rfc1035(const cJSON *self)
{
	char buf[320];
	const char *name = object_name(self, buf, sizeof(buf));

	return !name || dns1035_shape(name);
}

static int cel_name_len63(const cJSON *self)
{
	char buf[320];
	const char *name = object_name(self, buf, sizeof(buf));

	return !name || utf8_chars(name) <= 63;
}

static int cel_storage_uri(const cJSON *self)
{
	const char *s, *p;

	if (!cJSON_IsString(self))
		return 1;
	s = self->valuestring;
	if (!*s)
		return 1;
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return 0;
	for (p = s + 1; alnum((unsigned char)*p) || *p == '+' || *p == '.' ||
			*p == '-';
	     p++)
		;
	return !strncmp(p, "://", 3) && p[3] && !strchr(p + 3, '\n');
}

static int cel_trainjob_managed_by(const cJSON *self)
{
	return !cJSON_IsString(self) ||
	       !strcmp(self->valuestring,
		       "trainer.kubeflow.org/trainjob-controller") ||
	       !strcmp(self->valuestring, "kueue.x-k8s.io/multikueue");
}

static int cel_has_last_updated(const cJSON *self)
{
	return has(self, "lastUpdatedTime") != NULL;
}

static int cel_one_policy(const cJSON *self)
{
	static const char *const names[] = { "torch", "mpi", "jax", "xgboost",
					     "flux" };
	size_t i, n = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (has(self, names[i]))
			n++;
	return n <= 1;
}

static int cel_at_least_one(const cJSON *self)
{
	return !cJSON_IsNumber(self) || self->valuedouble >= 1;
}

static int cel_no_node_container(const cJSON *self)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, self)
		if (cJSON_IsString(c) && !strcmp(c->valuestring, "node"))
			return 0;
	return 1;
}

static int cel_startup_order(const cJSON *self)
{
	const char *order = str(has(self, "startupPolicy"),
				"startupPolicyOrder");
	const cJSON *rj;

	if (!order || strcmp(order, "InOrder"))
		return 1;
	cJSON_ArrayForEach(rj, has(self, "replicatedJobs"))
		if (has(rj, "dependsOn"))
			return 0;
	return 1;
}

static int cel_claim_namespace(const cJSON *self)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, has(self, "templates")) {
		const char *ns = str(has(t, "metadata"), "namespace");

		if (ns && *ns)
			return 0;
	}
	return 1;
}

static const struct cel_impl cel_impls[] = {
	{ "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
	  cel_name_rfc1035 },
	{ "size(self.metadata.name) <= 63", cel_name_len63 },
	{ "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
	  cel_storage_uri },
	{ "self in ['trainer.kubeflow.org/trainjob-controller', "
	  "'kueue.x-k8s.io/multikueue']",
	  cel_trainjob_managed_by },
	{ "has(self.lastUpdatedTime)", cel_has_last_updated },
	{ "[has(self.torch), has(self.mpi), has(self.jax), "
	  "has(self.xgboost),has(self.flux)].filter(x, x).size() <= 1",
	  cel_one_policy },
	{ "self >= 1", cel_at_least_one },
	{ "!self.exists(c, c == 'node')", cel_no_node_container },
	{ "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder "
	  "== 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))",
	  cel_startup_order },
	{ "self.templates.all(t, !has(t.metadata.namespace) || "
	  "size(t.metadata.namespace) == 0)",
	  cel_claim_namespace },
};

/* ------------------------------------------------------------------ */
/* Compiling a schema                                                  */

struct cctx {
	struct crd *crd;
	const char *kw;	     /* keyword being compiled */
	const char *name;    /* file name for errors */
	const char *version; /* version being compiled */
	struct path path;
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
	if (!is_integral(kw) || kw->valuedouble < 0)
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
		size_t old = path_key(&cc->path, it->string);

		n->props[i].name = it->string;
		rc = compile(cc, it, depth + 1, &n->props[i].node);
		path_pop(&cc->path, old);
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
		old = path_lit(&cc->path, seg);
		rc = compile(cc, it, depth + 1, &(*out)[i]);
		path_pop(&cc->path, old);
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
		const char *rule = str(it, "rule");
		const char *msg = str(it, "message");
		const struct cel_impl *impl = NULL;
		int rc;

		if (!rule)
			return cfail(cc, HB_EINVAL,
				     "validation rule without a rule");
		for (i = 0; i < sizeof(cel_impls) / sizeof(cel_impls[0]); i++)
			if (!strcmp(cel_impls[i].rule, rule))
				impl = &cel_impls[i];
		if (impl && !has(it, "messageExpression") &&
		    !has(it, "fieldPath")) {
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
		old = path_lit(&cc->path, "[*]");
		rc = compile(cc, kw, depth + 1, &n->items);
		path_pop(&cc->path, old);
		return rc;
	}
	if (!strcmp(k, "additionalProperties")) {
		size_t old;

		if (cJSON_IsBool(kw)) {
			if (cJSON_IsTrue(kw))
				n->flags |= F_ADDL_TRUE;
			return 0;
		}
		old = path_key(&cc->path, "*");
		rc = compile(cc, kw, depth + 1, &n->addl);
		path_pop(&cc->path, old);
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
		size_t old = path_lit(&cc->path, "(not)");

		rc = compile(cc, kw, depth + 1, &n->not_of);
		path_pop(&cc->path, old);
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
					size_t old = path_key(&c->path,
							      a->string);

					report(c, V_FIELD, "duplicate field");
					path_pop(&c->path, old);
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
			size_t old = path_key(&c->path, v[i]->string);

			report(c, V_FIELD, "duplicate field");
			path_pop(&c->path, old);
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
			old = path_key(&c->path, m->string);
			if (!strcmp(m->string, "metadata"))
				validate_objectmeta(c, m, 0);
			else if (!cJSON_IsString(m))
				report(c, V_VALUE, "must be of type string");
			path_pop(&c->path, old);
			count++;
			continue;
		}
		if (!p) {
			if (!(n->flags & (F_ADDL_TRUE | F_PRESERVE)) &&
			    !c->branch) {
				old = path_key(&c->path, m->string);
				report(c, V_FIELD, "unknown field");
				path_pop(&c->path, old);
			}
			count++;
			continue;
		}
		if (pruned(p, m))
			continue;
		count++;
		old = path_key(&c->path, m->string);
		validate_node(c, p, m);
		path_pop(&c->path, old);
	}
	for (i = 0; i < n->nrequired; i++) {
		const struct snode *p = prop_find(n, n->required[i]);

		m = get(v, n->required[i]);
		if (m && !pruned(p, m))
			continue;
		if (p && p->defv)
			continue; /* defaulted */
		{
			size_t old = path_key(&c->path, n->required[i]);

			report(c, V_VALUE, "Required value");
			path_pop(&c->path, old);
		}
	}
	if ((n->flags & F_EMBEDDED) && !c->branch) {
		static const char *const tm[] = { "apiVersion", "kind" };

		for (i = 0; i < 2; i++) {
			if (!has(v, tm[i])) {
				size_t old = path_key(&c->path, tm[i]);

				report(c, V_VALUE, "Required value");
				path_pop(&c->path, old);
			}
		}
	}
	if (n->min_props >= 0 && count < n->min_props)
		report(c, V_VALUE,
		       "must have at least %lld properties, not %lld",
		       n->min_props, count);
	if (n->max_props >= 0 && count > n->max_props)
		report(c, V_VALUE,
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
	return fnv(1469598103934665603ull, s);
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
	const cJSON *k = has(item, n->map_keys[i]);
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
			size_t old = path_index(&c->path, i);

			describe_entry(n, it, map, desc, sizeof(desc));
			report(c, V_VALUE, "Duplicate value: %s", desc);
			path_pop(&c->path, old);
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
		report(c, V_VALUE, "must have at least %lld items, not %lld",
		       n->min_items, cnt);
	if (n->max_items >= 0 && cnt > n->max_items)
		report(c, V_VALUE,
		       "Too many: %lld: must have at most %lld items", cnt,
		       n->max_items);
	if (n->items) {
		cJSON_ArrayForEach(it, v) {
			size_t old = path_index(&c->path, i++);

			validate_node(c, n->items, it);
			path_pop(&c->path, old);
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
		long long len = (long long)utf8_chars(s);

		if (n->min_len >= 0 && len < n->min_len)
			report(c, V_VALUE,
			       "Invalid value: %s: must be at least %lld "
			       "characters long",
			       quote(s, q, sizeof(q)), n->min_len);
		if (n->max_len >= 0 && len > n->max_len)
			report(c, V_VALUE,
			       "Too long: %lld characters: must be at most "
			       "%lld characters long",
			       len, n->max_len);
	}
	if (n->pattern && regexec(&n->pattern->re, s, 0, NULL, 0))
		report(c, V_VALUE, "Invalid value: %s: must match '%s'",
		       quote(s, q, sizeof(q)), n->pattern->src);
	if (n->format == FMT_DATETIME && !rfc3339(s))
		report(c, V_VALUE,
		       "Invalid value: %s: must be a date-time (RFC 3339)",
		       quote(s, q, sizeof(q)));
}

static void validate_number(struct vctx *c, const struct snode *n,
			    const cJSON *v, unsigned t)
{
	double d = v->valuedouble;
	char a[64], b[64];

	if (n->format == FMT_INT32 && (t & T_INTEGER) &&
	    (d < -2147483648.0 || d > 2147483647.0))
		report(c, V_VALUE, "Invalid value: %s: must fit in int32",
		       fmt_number(d, a, sizeof(a)));
	if ((n->flags & F_HAS_MIN) &&
	    ((n->flags & F_EXCL_MIN) ? d <= n->minimum : d < n->minimum))
		report(c, V_VALUE,
		       "Invalid value: %s: must be greater than %s%s",
		       fmt_number(d, a, sizeof(a)),
		       (n->flags & F_EXCL_MIN) ? "" : "or equal to ",
		       fmt_number(n->minimum, b, sizeof(b)));
	if ((n->flags & F_HAS_MAX) &&
	    ((n->flags & F_EXCL_MAX) ? d >= n->maximum : d > n->maximum))
		report(c, V_VALUE, "Invalid value: %s: must be less than %s%s",
		       fmt_number(d, a, sizeof(a)),
		       (n->flags & F_EXCL_MAX) ? "" : "or equal to ",
		       fmt_number(n->maximum, b, sizeof(b)));
	if (n->flags & F_HAS_MULT) {
		double q = d / n->multiple_of, r = 0;

		/* q - round(q); past 2^53 every double is a whole number */
		if (isfinite(q) && q > -9e15 && q < 9e15)
			r = q - (double)(long long)(q + (q < 0 ? -0.5 : 0.5));
		if (!isfinite(q) || r > 1e-9 || r < -1e-9)
			report(c, V_VALUE,
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
	report(c, V_VALUE, "Unsupported value: %s: supported values: %s",
	       fmt_value(v, got, sizeof(got)), want);
}

/* Violations of v against n alone, nothing reported. */
static size_t probe(const struct vctx *c, const struct snode *n,
		    const cJSON *v)
{
	struct vctx p;

	vctx_init(&p, NULL, NULL);
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
			report(c, V_VALUE,
			       "must match at least one schema in anyOf");
	}
	for (i = 0; i < n->nall_of; i++)
		if (probe(c, n->all_of[i], v))
			report(c, V_VALUE,
			       "must match schema %zu of allOf", i);
	if (n->none_of) {
		for (i = 0, ok = 0; i < n->none_of; i++)
			ok += !probe(c, n->one_of[i], v);
		if (ok != 1)
			report(c, V_VALUE,
			       "must match exactly one schema in oneOf, "
			       "not %zu",
			       ok);
	}
	if (n->not_of && !probe(c, n->not_of, v))
		report(c, V_VALUE, "must not match the schema in not");
}

static void validate_node(struct vctx *c, const struct snode *n,
			  const cJSON *v)
{
	unsigned t = value_types(v), want = n->types;
	char tn[64];
	size_t i;

	if (cJSON_IsNull(v)) {
		if (!(n->flags & F_NULLABLE))
			report(c, V_VALUE, "must be of type %s",
			       want ? type_names(want, tn, sizeof(tn))
				    : "non-null");
		return;
	}
	if (n->flags & F_INT_OR_STRING)
		want = T_INTEGER | T_STRING;
	if (want && !(t & want)) {
		report(c, V_VALUE, "must be of type %s",
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
			report(c, V_VALUE, "%s", n->rules[i].message);
}

/* ---- ObjectMeta ---- */

static void meta_type(struct vctx *c, const cJSON *v, unsigned want)
{
	char tn[64];

	if (!(value_types(v) & want))
		report(c, V_VALUE, "must be of type %s",
		       type_names(want, tn, sizeof(tn)));
}

static void meta_map(struct vctx *c, const cJSON *m, int labels)
{
	const cJSON *it;
	size_t total = 0;
	char q[QUOTE_MAX * 2 + 16];

	if (!cJSON_IsObject(m)) {
		report(c, V_VALUE, "must be of type object");
		return;
	}
	check_dup_keys(c, m);
	cJSON_ArrayForEach(it, m) {
		size_t old = path_key(&c->path, it->string);
		const char *why = qualified_name(it->string, !labels);
		const char *val = cJSON_IsString(it) ? it->valuestring : "";

		if (why)
			report(c, V_VALUE, "Invalid value: %s: %s",
			       quote(it->string, q, sizeof(q)), why);
		if (!cJSON_IsString(it) && !cJSON_IsNull(it))
			report(c, V_VALUE, "must be of type string");
		else if (labels && (why = label_value(val)))
			report(c, V_VALUE, "Invalid value: %s: %s",
			       quote(val, q, sizeof(q)), why);
		total += strlen(it->string) + strlen(val);
		path_pop(&c->path, old);
	}
	if (!labels && total > ANNOTATIONS_MAX)
		report(c, V_VALUE,
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
		ok = dns1123_subdomain(masked, n, 0);
	} else {
		ok = dns1123_subdomain(s, n, 0);
	}
	if (!ok)
		report(c, V_VALUE,
		       "Invalid value: %s: a lowercase RFC 1123 subdomain must "
		       "consist of lower case alphanumeric characters, '-' or "
		       "'.', must start and end with an alphanumeric character "
		       "and be at most 253 characters",
		       quote(s, q, sizeof(q)));
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
		report(c, V_VALUE, "must be of type array");
		return;
	}
	cJSON_ArrayForEach(it, arr) {
		size_t old = path_index(&c->path, i++);

		if (!cJSON_IsObject(it)) {
			report(c, V_VALUE, "must be of type object");
			path_pop(&c->path, old);
			continue;
		}
		check_dup_keys(c, it);
		cJSON_ArrayForEach(m, it) {
			size_t o2 = path_key(&c->path, m->string);

			for (j = 0; j < nf; j++)
				if (!strcmp(f[j].name, m->string))
					break;
			if (j == nf)
				report(c, V_FIELD, "unknown field");
			else if (!cJSON_IsNull(m))
				meta_type(c, m, f[j].type);
			if (j < nf && f[j].type == T_STRING &&
			    cJSON_IsString(m) && !strcmp(m->string, "time") &&
			    !rfc3339(m->valuestring))
				report(c, V_VALUE,
				       "must be a date-time (RFC 3339)");
			path_pop(&c->path, o2);
		}
		for (j = 0; j < nf; j++) {
			const char *s = str(it, f[j].name);

			if (f[j].required && (!s || !*s)) {
				size_t o2 = path_key(&c->path, f[j].name);

				report(c, V_VALUE, "Required value");
				path_pop(&c->path, o2);
			}
		}
		if (controllers && cJSON_IsTrue(get(it, "controller")))
			(*controllers)++;
		path_pop(&c->path, old);
	}
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
		report(c, V_VALUE, "must be of type object");
		return;
	}
	check_dup_keys(c, m);
	cJSON_ArrayForEach(it, m) {
		const char *k = it->string;
		size_t old = path_key(&c->path, k);

		if (cJSON_IsNull(it)) {
			path_pop(&c->path, old);
			continue;
		}
		if (!strcmp(k, "name") || !strcmp(k, "generateName") ||
		    !strcmp(k, "namespace") || !strcmp(k, "uid") ||
		    !strcmp(k, "resourceVersion") || !strcmp(k, "selfLink")) {
			meta_type(c, it, T_STRING);
		} else if (!strcmp(k, "generation") ||
			   !strcmp(k, "deletionGracePeriodSeconds")) {
			meta_type(c, it, T_INTEGER);
			if (!strcmp(k, "generation") && is_integral(it) &&
			    it->valuedouble < 0)
				report(c, V_VALUE,
				       "Invalid value: %s: must be greater "
				       "than or equal to 0",
				       fmt_number(it->valuedouble, q,
						  sizeof(q)));
		} else if (!strcmp(k, "creationTimestamp") ||
			   !strcmp(k, "deletionTimestamp")) {
			meta_type(c, it, T_STRING);
			if (cJSON_IsString(it) && !rfc3339(it->valuestring))
				report(c, V_VALUE,
				       "Invalid value: %s: must be a date-time "
				       "(RFC 3339)",
				       quote(it->valuestring, q, sizeof(q)));
		} else if (!strcmp(k, "labels") ||
			   !strcmp(k, "annotations")) {
			meta_map(c, it, !strcmp(k, "labels"));
		} else if (!strcmp(k, "finalizers")) {
			const cJSON *f, *arr = cJSON_IsArray(it) ? it : NULL;
			size_t i = 0;
			int orphan = 0, fg = 0;

			if (!arr)
				report(c, V_VALUE, "must be of type array");
			cJSON_ArrayForEach(f, arr) {
				size_t o2 = path_index(&c->path, i++);
				const char *why;

				if (!cJSON_IsString(f)) {
					report(c, V_VALUE,
					       "must be of type string");
				} else if ((why = qualified_name(
						    f->valuestring, 0))) {
					report(c, V_VALUE,
					       "Invalid value: %s: %s",
					       quote(f->valuestring, q,
						     sizeof(q)),
					       why);
				} else {
					orphan |= !strcmp(f->valuestring,
							  "orphan");
					fg |= !strcmp(f->valuestring,
						      "foregroundDeletion");
				}
				path_pop(&c->path, o2);
			}
			if (orphan && fg)
				report(c, V_VALUE,
				       "'orphan' and 'foregroundDeletion' "
				       "cannot both be set");
		} else if (!strcmp(k, "ownerReferences")) {
			meta_objects(c, it, owner_fields,
				     sizeof(owner_fields) /
					     sizeof(owner_fields[0]),
				     &controllers);
			if (controllers > 1)
				report(c, V_VALUE,
				       "Only one reference can have Controller "
				       "set to true");
		} else if (!strcmp(k, "managedFields")) {
			meta_objects(c, it, managed_fields,
				     sizeof(managed_fields) /
					     sizeof(managed_fields[0]),
				     NULL);
		} else {
			report(c, V_FIELD, "unknown field");
		}
		path_pop(&c->path, old);
	}
	name = str(m, "name");
	gen = str(m, "generateName");
	if (name && *name) {
		size_t old = path_key(&c->path, "name");

		meta_name(c, name, 0);
		path_pop(&c->path, old);
	}
	if (gen && *gen) {
		size_t old = path_key(&c->path, "generateName");

		meta_name(c, gen, 1);
		path_pop(&c->path, old);
	}
	if (top && !(name && *name) && !(gen && *gen)) {
		size_t old = path_key(&c->path, "name");

		report(c, V_VALUE,
		       "Required value: name or generateName is required");
		path_pop(&c->path, old);
	}
	name = str(m, "namespace");
	if (top && name && *name) {
		size_t old = path_key(&c->path, "namespace");

		if (c->crd && !c->crd->namespaced)
			report(c, V_VALUE, "Forbidden: not allowed on this "
					   "type");
		else if (!dns1123_label(name))
			report(c, V_VALUE,
			       "Invalid value: %s: a lowercase RFC 1123 label "
			       "of at most 63 characters",
			       quote(name, q, sizeof(q)));
		path_pop(&c->path, old);
	}
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

	sv->name = str(ver, "name");
	cc->version = sv->name;
	schema = get(get(ver, "schema"), "openAPIV3Schema");
	if (!schema)
		return cfail(cc, HB_EINVAL, "no schema.openAPIV3Schema");
	sv->api_version = hb_arena_printf(&cc->crd->arena, "%s/%s",
					  cc->crd->group, sv->name);
	if (!sv->api_version)
		return cfail(cc, HB_ENOMEM, "out of memory");
	subs = get(ver, "subresources");
	sv->status_subresource = get(subs, "status") != NULL;
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
	if (!cJSON_IsObject(doc) ||
	    !str(doc, "apiVersion") ||
	    strcmp(str(doc, "apiVersion"), "apiextensions.k8s.io/v1") ||
	    !str(doc, "kind") ||
	    strcmp(str(doc, "kind"), "CustomResourceDefinition"))
		return hb_err_set(err, HB_EINVAL, name, 0,
				  "not an apiextensions.k8s.io/v1 "
				  "CustomResourceDefinition");
	spec = get(doc, "spec");
	crd->group = str(spec, "group");
	crd->kind = str(get(spec, "names"), "kind");
	scope = str(spec, "scope");
	vers = get(spec, "versions");
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
		if (!str(ver, "name"))
			return hb_err_set(err, HB_EINVAL, name, 0,
					  "spec.versions[%zu]: no name", i);
		i++;
		if (!cJSON_IsTrue(get(ver, "served")))
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

static int run_rules(struct vctx *c, const cJSON *obj);

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
		size_t old = path_key(&c->path, m->string);

		if (!strcmp(m->string, "metadata")) {
			if (!cJSON_IsNull(m))
				validate_objectmeta(c, m, 1);
		} else if (!p) {
			if (strcmp(m->string, "apiVersion") &&
			    strcmp(m->string, "kind") &&
			    !(root->flags & (F_ADDL_TRUE | F_PRESERVE)))
				report(c, V_FIELD, "unknown field");
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
		path_pop(&c->path, old);
	}
	for (i = 0; i < root->nrequired; i++) {
		const struct snode *p = prop_find(root, root->required[i]);

		m = get(obj, root->required[i]);
		if ((m && !pruned(p, m)) || (p && p->defv))
			continue;
		if (create && ver->status_subresource &&
		    !strcmp(root->required[i], "status"))
			continue;
		{
			size_t old = path_key(&c->path, root->required[i]);

			report(c, V_VALUE, "Required value");
			path_pop(&c->path, old);
		}
	}
	if (!has(obj, "metadata")) {
		size_t old = path_lit(&c->path, "metadata.name");

		report(c, V_VALUE,
		       "Required value: name or generateName is required");
		path_pop(&c->path, old);
	}
	for (i = 0; i < root->nrules; i++)
		if (!root->rules[i].impl->holds(obj))
			report(c, V_VALUE, "%s", root->rules[i].message);
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
	api_version = str(obj, "apiVersion");
	kind = str(obj, "kind");
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
	vctx_init(&c, violations, err);
	c.crd = crd;
	validate_root(&c, ver, obj, flags & HB_SCHEMA_CREATE);
	if (flags & HB_SCHEMA_RULES)
		run_rules(&c, obj);
	return vctx_finish(&c);
}

int hb_schema_validate(const struct hb_schema_set *set,
		       const struct cJSON *obj, struct hb_err *err)
{
	return hb_schema_validate_all(set, obj, 0, NULL, err);
}

/* ------------------------------------------------------------------ */
/* Controller rules                                                    */

__attribute__((format(printf, 3, 4)))
static void report_at(struct vctx *c, const char *rel, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	size_t old = c->path.len;
	va_list ap;

	if (rel && *rel) {
		if (c->path.len)
			path_raw(&c->path, ".", 1);
		path_raw(&c->path, rel, strlen(rel));
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(c, V_VALUE, "%s", msg);
	path_pop(&c->path, old);
}

static int in_list(const char *s, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

static const char *join_quoted(const char *const *list, size_t n, char *buf,
			       size_t cap)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\"",
				      i ? ", " : "", list[i]);
	return buf;
}

/* A string member with a default; NULL when it has another type. */
static const char *str_default(const cJSON *o, const char *key,
			       const char *def)
{
	const cJSON *v = has(o, key);

	if (!v)
		return def;
	if (!cJSON_IsString(v))
		return NULL;
	return *v->valuestring ? v->valuestring : def;
}

static void check_one_of(struct vctx *c, const char *rel, const char *val,
			 const char *const *list, size_t n)
{
	char want[256], q[QUOTE_MAX * 2 + 16];

	if (val && !in_list(val, list, n))
		report_at(c, rel, "Unsupported value: %s: supported values: %s",
			  quote(val, q, sizeof(q)),
			  join_quoted(list, n, want, sizeof(want)));
}

static void check_nonneg(struct vctx *c, const cJSON *o, const char *key,
			 const char *rel)
{
	long long v;

	if (get_int(o, key, &v) && v < 0)
		report_at(c, rel,
			  "Invalid value: %lld: must be greater than or equal "
			  "to 0",
			  v);
}

static const char *const restart_policies[] = { "Never", "OnFailure" };

static void mpi_replica(struct vctx *c, const cJSON *spec, const char *type,
			const char *def_policy, long long def_replicas,
			int launcher)
{
	size_t old = path_key(&c->path, type);
	const cJSON *containers;
	long long replicas = def_replicas;
	int typed = 1;

	if (!cJSON_IsObject(spec)) {
		path_pop(&c->path, old);
		return; /* a schema error */
	}
	if (has(spec, "replicas") && !get_int(spec, "replicas", &replicas))
		typed = 0; /* the schema reports it */
	check_one_of(c, "restartPolicy",
		     str_default(spec, "restartPolicy", def_policy),
		     restart_policies, 2);
	containers = get(get(get(spec, "template"), "spec"), "containers");
	if (!cJSON_IsArray(containers) || !cJSON_GetArraySize(containers))
		report_at(c, "template.spec.containers",
			  "Required value: must define at least one container");
	if (typed && launcher && replicas != 1)
		report_at(c, "replicas", "Invalid value: %lld: must be 1",
			  replicas);
	if (typed && !launcher && replicas <= 0)
		report_at(c, "replicas",
			  "Invalid value: %lld: must be greater than or equal "
			  "to 1",
			  replicas);
	path_pop(&c->path, old);
}

static void rules_mpijob(struct vctx *c, const cJSON *obj)
{
	static const char *const clean[] = { "None", "Running", "All" };
	static const char *const impls[] = { "OpenMPI", "Intel", "MPICH" };
	static const char *const managers[] = {
		"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"
	};
	const cJSON *spec = get(obj, "spec");
	const cJSON *specs = has(spec, "mpiReplicaSpecs");
	const cJSON *worker = has(specs, "Worker"), *rp, *m;
	char gen[320], host[96], suffix[40], q[QUOTE_MAX * 2 + 16];
	const char *name = object_name(obj, gen, sizeof(gen));
	long long replicas = 1, r;
	size_t old;
	int n;

	if (!name)
		name = "";
	if (worker && get_int(worker, "replicas", &r) && r > 0)
		replicas = r;
	/* the operator names the last worker <name>-worker-<replicas-1> */
	n = snprintf(suffix, sizeof(suffix), "-worker-%lld", replicas - 1);
	if (strlen(name) + (size_t)n > 63) {
		report_at(c, "metadata.name",
			  "Invalid value: %s: will not be able to create pod "
			  "and service with invalid DNS label \"%.63s%s%s\": "
			  "must be no more than 63 characters",
			  quote(name, q, sizeof(q)), name,
			  strlen(name) > 63 ? "..." : "", suffix);
	} else {
		snprintf(host, sizeof(host), "%s%s", name, suffix);
		if (!dns1035_shape(host))
			report_at(c, "metadata.name",
				  "Invalid value: %s: will not be able to "
				  "create pod and service with invalid DNS "
				  "label \"%s\": a DNS-1035 label must consist "
				  "of lower case alphanumeric characters or "
				  "'-', start with an alphabetic character, "
				  "and end with an alphanumeric character",
				  quote(name, q, sizeof(q)), host);
	}

	old = path_lit(&c->path, "spec");
	if (!cJSON_IsObject(specs)) {
		report_at(c, "mpiReplicaSpecs",
			  "Required value: must have replica specs");
	} else {
		size_t o2 = path_key(&c->path, "mpiReplicaSpecs");

		if (!has(specs, "Launcher"))
			report_at(c, "Launcher",
				  "Required value: must have Launcher replica "
				  "spec");
		else
			mpi_replica(c, get(specs, "Launcher"), "Launcher",
				    "OnFailure", 1, 1);
		if (worker)
			mpi_replica(c, worker, "Worker", "Never", 0, 0);
		cJSON_ArrayForEach(m, specs) {
			size_t o3;

			if (!strcmp(m->string, "Launcher") ||
			    !strcmp(m->string, "Worker"))
				continue;
			o3 = path_key(&c->path, m->string);
			report(c, V_VALUE,
			       "Unsupported value: not a replica type the MPI "
			       "Operator runs (Launcher, Worker); it would be "
			       "ignored");
			path_pop(&c->path, o3);
		}
		path_pop(&c->path, o2);
	}
	check_nonneg(c, spec, "slotsPerWorker", "slotsPerWorker");
	rp = has(spec, "runPolicy");
	check_one_of(c, "runPolicy.cleanPodPolicy",
		     str_default(rp, "cleanPodPolicy", "None"), clean, 3);
	check_nonneg(c, rp, "ttlSecondsAfterFinished",
		     "runPolicy.ttlSecondsAfterFinished");
	check_nonneg(c, rp, "activeDeadlineSeconds",
		     "runPolicy.activeDeadlineSeconds");
	check_nonneg(c, rp, "backoffLimit", "runPolicy.backoffLimit");
	if (has(rp, "managedBy"))
		check_one_of(c, "runPolicy.managedBy", str(rp, "managedBy"),
			     managers, 2);
	check_one_of(c, "mpiImplementation",
		     str_default(spec, "mpiImplementation", "OpenMPI"), impls,
		     3);
	path_pop(&c->path, old);
}

static void rules_trainjob(struct vctx *c, const cJSON *obj)
{
	const cJSON *spec = get(obj, "spec");
	const cJSON *ref = has(spec, "runtimeRef");
	const cJSON *trainer = has(spec, "trainer");
	const char *group =
		str_default(ref, "apiGroup", "trainer.kubeflow.org");
	const char *kind = str_default(ref, "kind", "ClusterTrainingRuntime");
	long long v;
	size_t old = path_lit(&c->path, "spec");

	if (!ref)
		report_at(c, "runtimeRef", "Required value");
	else if (group && kind &&
		 (strcmp(group, "trainer.kubeflow.org") ||
		  (strcmp(kind, "ClusterTrainingRuntime") &&
		   strcmp(kind, "TrainingRuntime"))))
		report_at(c, "runtimeRef",
			  "Invalid value: unsupported runtime: %.100s.%.100s",
			  kind, group);
	if (get_int(trainer, "numNodes", &v) && v < 1)
		report_at(c, "trainer.numNodes",
			  "Invalid value: %lld: must be greater than or equal "
			  "to 1",
			  v);
	if (get_int(trainer, "numProcPerNode", &v) && v < 1)
		report_at(c, "trainer.numProcPerNode",
			  "Invalid value: %lld: must be greater than or equal "
			  "to 1",
			  v);
	path_pop(&c->path, old);
}

#define ANCESTOR_LABEL "trainer.kubeflow.org/trainjob-ancestor-step"

static const char *ancestor_container(const char *ancestor)
{
	if (!strcmp(ancestor, "trainer"))
		return "node";
	if (!strcmp(ancestor, "model-initializer"))
		return "model-initializer";
	if (!strcmp(ancestor, "dataset-initializer"))
		return "dataset-initializer";
	return NULL;
}

static void rules_runtime(struct vctx *c, const cJSON *obj)
{
	const cJSON *rjobs = get(get(get(get(obj, "spec"), "template"), "spec"),
				 "replicatedJobs");
	const cJSON *rj;
	size_t i = 0;

	if (!cJSON_IsArray(rjobs))
		return;
	cJSON_ArrayForEach(rj, rjobs) {
		const cJSON *tmpl = get(rj, "template");
		const char *anc = str(get(get(tmpl, "metadata"), "labels"),
				      ANCESTOR_LABEL);
		const cJSON *pod = get(get(get(tmpl, "spec"), "template"),
				       "spec");
		const char *want = anc ? ancestor_container(anc) : NULL;
		const char *prio = str(pod, "priorityClassName");
		char base[96];
		size_t old;
		long long replicas = 1;

		snprintf(base, sizeof(base),
			 "spec.template.spec.replicatedJobs[%zu]", i++);
		old = path_lit(&c->path, base);
		if (want) {
			const cJSON *ct;
			int found = 0;

			if (has(rj, "replicas") &&
			    !get_int(rj, "replicas", &replicas))
				replicas = 1;
			if (replicas != 1)
				report_at(c, "replicas",
					  "Invalid value: %lld: always must be "
					  "1",
					  replicas);
			cJSON_ArrayForEach(ct, get(pod, "containers"))
				if (str(ct, "name") &&
				    !strcmp(str(ct, "name"), want))
					found = 1;
			if (!found)
				report_at(c, "template.spec.template.spec."
					     "containers",
					  "Invalid value: must contain the "
					  "required container for the "
					  "ancestor: %s",
					  anc);
		}
		if (prio && *prio && !(anc && !strcmp(anc, "trainer")))
			report_at(c, "template.spec.template.spec."
				     "priorityClassName",
				  "Invalid value: must not be set on this "
				  "replicatedJob: only the replicatedJob "
				  "labelled with the \"trainer\" ancestor may "
				  "set it");
		path_pop(&c->path, old);
	}
}

/* Dispatch on kind; 1 when obj is a kind with rules. */
static int run_rules(struct vctx *c, const cJSON *obj)
{
	const char *av = str(obj, "apiVersion"), *kind = str(obj, "kind");

	if (!av || !kind)
		return 0;
	if (!strcmp(av, "kubeflow.org/v2beta1") && !strcmp(kind, "MPIJob")) {
		rules_mpijob(c, obj);
		return 1;
	}
	if (strcmp(av, "trainer.kubeflow.org/v1alpha1"))
		return 0;
	if (!strcmp(kind, "TrainJob")) {
		rules_trainjob(c, obj);
		return 1;
	}
	if (!strcmp(kind, "ClusterTrainingRuntime") ||
	    !strcmp(kind, "TrainingRuntime")) {
		rules_runtime(c, obj);
		return 1;
	}
	return 0;
}

int hb_schema_check_rules(const struct cJSON *obj, struct hb_buf *violations,
			  struct hb_err *err)
{
	const char *kind = str(obj, "kind"), *av = str(obj, "apiVersion");
	struct vctx c;

	vctx_init(&c, violations, err);
	if (!cJSON_IsObject(obj))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "<root>: must be of type object");
	if (!run_rules(&c, obj))
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "no controller rules for kind %.100s in "
				  "%.100s",
				  kind ? kind : "?", av ? av : "?");
	return vctx_finish(&c);
}

int hb_schema_check_trainjob_runtime(const struct cJSON *trainjob,
				     const struct cJSON *runtime,
				     struct hb_buf *violations,
				     struct hb_err *err)
{
	const char *rkind = str(runtime, "kind");
	const cJSON *spec = get(trainjob, "spec");
	const cJSON *ref = has(spec, "runtimeRef");
	const cJSON *mpi = has(has(get(runtime, "spec"), "mlPolicy"), "mpi");
	const char *kind, *name, *rname, *ns, *rns;
	char q[QUOTE_MAX * 2 + 16];
	long long nodes = 1;
	struct vctx c;

	if (!cJSON_IsObject(runtime) || !rkind ||
	    !str(runtime, "apiVersion") ||
	    strcmp(str(runtime, "apiVersion"),
		   "trainer.kubeflow.org/v1alpha1") ||
	    (strcmp(rkind, "ClusterTrainingRuntime") &&
	     strcmp(rkind, "TrainingRuntime")))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "the runtime is not a trainer.kubeflow.org/"
				  "v1alpha1 TrainingRuntime or "
				  "ClusterTrainingRuntime");
	vctx_init(&c, violations, err);
	kind = str_default(ref, "kind", "ClusterTrainingRuntime");
	name = str(ref, "name");
	rname = str(get(runtime, "metadata"), "name");
	ns = str(get(trainjob, "metadata"), "namespace");
	rns = str(get(runtime, "metadata"), "namespace");
	if (!kind || !name || !rname || strcmp(kind, rkind) ||
	    strcmp(name, rname) ||
	    (!strcmp(rkind, "TrainingRuntime") && ns && rns &&
	     strcmp(ns, rns)))
		report_at(&c, "spec.runtimeRef",
			  "Invalid value: %s %s not found: specified %s must "
			  "be created before the TrainJob is created",
			  kind ? kind : "runtime",
			  quote(name ? name : "", q, sizeof(q)),
			  kind ? kind : "runtime");
	get_int(has(spec, "trainer"), "numNodes", &nodes);
	if (mpi && nodes >= 2 && cJSON_IsTrue(get(mpi, "runLauncherAsNode"))) {
		const cJSON *rj;
		int launcher = 0, node = 0;

		cJSON_ArrayForEach(rj, get(get(get(get(runtime, "spec"),
						       "template"),
					       "spec"),
					   "replicatedJobs")) {
			const char *n = str(rj, "name");

			launcher |= n && !strcmp(n, "launcher");
			node |= n && !strcmp(n, "node");
		}
		if (!launcher || !node)
			report_at(&c, "spec.trainer.numNodes",
				  "Invalid value: %lld: must have 1 when MPI "
				  "trainingRuntime with enabled "
				  "runLauncherAsNode does not have either "
				  "launcher and node",
				  nodes);
	}
	return vctx_finish(&c);
}
