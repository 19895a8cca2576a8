/*
 * schema_int.h - what the files of the schema validator share: the
 * compiled schema tree, the CRDs of a set, the JSON path and violation
 * reports of a run, and the helpers over values and name formats.
 *
 * schema.c loads CRDs and compiles their schemas, schema_validate.c
 * validates objects against them, schema_rules.c holds the native CEL
 * checks and the controllers' rules, schema_format.c the paths, reports,
 * value helpers and formats.  See docs/internals/schema.md.
 */
#ifndef HPCBRIDGE_SCHEMA_INT_H
#define HPCBRIDGE_SCHEMA_INT_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/schema.h"

/* The seed of the validator's FNV-1a hashes (duplicate reports, equal
 * items).  It is not FNV's offset basis (HB_FNV1A_INIT) only because it
 * never was: items are sorted by it, so which duplicate is reported first
 * depends on it. */
#define HB_SCHEMA_HASH_SEED 1469598103934665603ull

/* Longest path kept; longer ones end in "...". */
#define PATH_CAP 512
/* Longest value quoted in a message. */
#define QUOTE_MAX 64

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

/* The native checks of the CEL rules hpcbridge knows (schema_rules.c). */
extern const struct cel_impl hb_schema_cel_impls[];
extern const size_t hb_schema_ncel_impls;

/* ------------------------------------------------------------------ */
/* Paths                                                               */

struct spath {
	size_t len;
	char buf[PATH_CAP];
};

/* Append raw text, ending in "..." when it does not fit. */
void hb_schema_path_raw(struct spath *p, const char *s, size_t n);
/* Push an object key, an array index or literal text; each returns the
 * length to pop back to with hb_schema_path_pop(). */
size_t hb_schema_path_key(struct spath *p, const char *key);
size_t hb_schema_path_index(struct spath *p, size_t idx);
size_t hb_schema_path_lit(struct spath *p, const char *s);
void hb_schema_path_pop(struct spath *p, size_t old);

/* ------------------------------------------------------------------ */
/* Violations                                                          */

enum { V_VALUE, V_FIELD };

struct vctx {
	const struct crd *crd;
	struct spath path;
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

void hb_schema_vctx_init(struct vctx *c, struct hb_buf *out,
			 struct hb_err *err);
/* FNV-1a of s, continuing from h. */
/* A violation (kind V_VALUE or V_FIELD) at c->path. */
void hb_schema_report(struct vctx *c, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Finish a run: count what was not listed, set the return code. */
int hb_schema_vctx_finish(struct vctx *c);

/* The controllers' rules for obj's kind (schema_rules.c); 1 when obj is
 * a kind with rules. */
int hb_schema_run_rules(struct vctx *c, const cJSON *obj);

/* ------------------------------------------------------------------ */
/* Value helpers                                                       */

/* Member key of object o (NULL: none, or o is not an object). */
const cJSON *hb_schema_get(const cJSON *o, const char *key);
/* A present, non-null member. */
const cJSON *hb_schema_has(const cJSON *o, const char *key);
/* A whole number in the int64 range (no libm: plain conversions). */
int hb_schema_whole(double d);
int hb_schema_is_integral(const cJSON *v);
size_t hb_schema_utf8_chars(const char *s);
/* Quote s for a message: escaped, cut at QUOTE_MAX bytes. */
const char *hb_schema_quote(const char *s, char *buf, size_t cap);

/* ------------------------------------------------------------------ */
/* Names: DNS labels and subdomains, qualified names, label values     */

int hb_schema_alnum(int ch);
int hb_schema_dns1123_subdomain(const char *s, size_t n, int fold);
int hb_schema_dns1123_label(const char *s);
/* [a-z]([-a-z0-9]*[a-z0-9])?, no length limit. */
int hb_schema_dns1035_shape(const char *s);
/* Why s is not a qualified name (label or annotation key), or NULL. */
const char *hb_schema_qualified_name(const char *s, int fold);
/* Why s is not a label value, or NULL. */
const char *hb_schema_label_value(const char *s);

#endif
