/*
 * doc.c - YAML and JSON documents as cJSON trees: arena scopes, source
 * lines, lookup, and reading.
 *
 * Reading: libyaml's event parser drives a small tree builder.  Plain
 * scalars are typed by the YAML 1.2 core schema; quoted and block scalars
 * are strings.  Source lines are stashed in fields cJSON leaves unused for
 * the node's type (see hb_doc_line() in doc.h).  JSON goes through a
 * reader of its own that feeds the same builder.  The JSON syntax check
 * is in doc_check.c, the writers in doc_write.c.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "hpcbridge/bytes.h"
#include "hpcbridge/doc.h"
#include "translators/base/doc_int.h"

#define DUP_LINEAR 16		       /* below this many keys, scan */

/* ------------------------------------------------------------------ */
/* Arena scopes                                                        */
/* ------------------------------------------------------------------ */

static __thread struct hb_arena *scope;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void *scope_malloc(size_t n)
{
	return scope ? hb_arena_alloc(scope, n) : malloc(n);
}

static void scope_free(void *p)
{
	if (scope && hb_arena_owns(scope, p))
		return; /* reclaimed with the arena */
	free(p);
}

static void install_hooks(void)
{
	cJSON_Hooks h = { .malloc_fn = scope_malloc, .free_fn = scope_free };

	cJSON_InitHooks(&h);
}

void hb_doc_scope_begin(struct hb_arena *a)
{
	pthread_once(&hooks_once, install_hooks);
	scope = a;
}

void hb_doc_scope_end(void)
{
	scope = NULL;
}

/* ------------------------------------------------------------------ */
/* Source lines                                                        */
/* ------------------------------------------------------------------ */

static int set_line(cJSON *item, unsigned line)
{
	char tmp[16];
	int n;

	if (!cJSON_IsNumber(item)) {
		item->valuedouble = (double)line;
		return 0;
	}
	n = snprintf(tmp, sizeof(tmp), "%u", line);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return 0;
	item->valuestring = cJSON_malloc((size_t)n + 1);
	if (!item->valuestring)
		return HB_ENOMEM;
	memcpy(item->valuestring, tmp, (size_t)n + 1);
	return 0;
}

int hb_doc_line(const cJSON *item)
{
	const char *p;
	long v = 0;

	if (!item)
		return 0;
	if (!cJSON_IsNumber(item)) {
		if (cJSON_IsString(item) || cJSON_IsObject(item) ||
		    cJSON_IsArray(item) || cJSON_IsBool(item) ||
		    cJSON_IsNull(item)) {
			double d = item->valuedouble;

			if (d >= 1 && d <= INT_MAX && d == (double)(int)d)
				return (int)d;
		}
		return 0;
	}
	p = item->valuestring;
	if (!p || !*p)
		return 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > INT_MAX / 10)
			return 0;
		v = v * 10 + (*p - '0');
	}
	return v <= INT_MAX ? (int)v : 0;
}

/* ------------------------------------------------------------------ */
/* Lookup                                                              */
/* ------------------------------------------------------------------ */

cJSON *hb_doc_get(const cJSON *doc, const char *path)
{
	const cJSON *cur = doc;
	const char *p = path;

	if (!doc || !path)
		return NULL;
	if (!*p)
		return (cJSON *)doc;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		const cJSON *c;

		if (!cJSON_IsObject(cur))
			return NULL;
		for (c = cur->child; c; c = c->next)
			if (c->string && strncmp(c->string, p, n) == 0 &&
			    c->string[n] == '\0')
				break;
		if (!c)
			return NULL;
		cur = c;
		if (!dot)
			return (cJSON *)cur;
		p = dot + 1;
	}
}

const char *hb_doc_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ------------------------------------------------------------------ */
/* Scalar typing: the YAML 1.2 core schema                             */
/* ------------------------------------------------------------------ */

static int eq3(const char *s, size_t n, const char *a, const char *b,
	       const char *c)
{
	size_t la = strlen(a);

	if (n != la)
		return 0;
	return !memcmp(s, a, n) || !memcmp(s, b, n) || !memcmp(s, c, n);
}

static int is_null_text(const char *s, size_t n)
{
	return n == 0 || (n == 1 && s[0] == '~') ||
	       eq3(s, n, "null", "Null", "NULL");
}

/* 1 true, 0 false, -1 neither */
static int bool_text(const char *s, size_t n)
{
	if (eq3(s, n, "true", "True", "TRUE"))
		return 1;
	if (eq3(s, n, "false", "False", "FALSE"))
		return 0;
	return -1;
}

enum numkind { NUM_NONE, NUM_INT, NUM_FLOAT };

/*
 * Classify s as a core-schema int or float.  For ints, *mag gets the
 * magnitude (saturated at INT_LIMIT + 1) and *neg the sign.
 */
static enum numkind num_text(const char *s, size_t n, uint64_t *mag, int *neg)
{
	size_t i = 0, digits;
	uint64_t v = 0;
	int d;

	*neg = 0;
	*mag = 0;
	if (n == 0)
		return NUM_NONE;
	if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		int base = s[1] == 'o' ? 8 : 16;

		for (i = 2; i < n; i++) {
			d = hb_doc_hexval((unsigned char)s[i]);
			if (d < 0 || d >= base)
				break;
			if (v <= INT_LIMIT)
				v = v * (unsigned)base + (unsigned)d;
		}
		if (i == n) {
			*mag = v > INT_LIMIT ? INT_LIMIT + 1 : v;
			return NUM_INT;
		}
		return NUM_NONE;
	}
	if (s[0] == '-' || s[0] == '+') {
		*neg = s[0] == '-';
		i = 1;
	}
	/* decimal int */
	for (digits = 0; i + digits < n && hb_doc_is_digit(s[i + digits]);
	     digits++)
		if (v <= INT_LIMIT)
			v = v * 10 + (unsigned)(s[i + digits] - '0');
	if (digits && i + digits == n) {
		*mag = v > INT_LIMIT ? INT_LIMIT + 1 : v;
		return NUM_INT;
	}
	/* float: [-+]? ( . [0-9]+ | [0-9]+ ( . [0-9]* )? ) ( [eE] [-+]? [0-9]+
	 * )? */
	i += digits;
	if (i < n && s[i] == '.') {
		size_t frac = 0;

		i++;
		while (i < n && hb_doc_is_digit(s[i])) {
			i++;
			frac++;
		}
		if (!digits && !frac)
			return NUM_NONE;
	} else if (!digits) {
		return NUM_NONE;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t ed = 0;

		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < n && hb_doc_is_digit(s[i])) {
			i++;
			ed++;
		}
		if (!ed)
			return NUM_NONE;
	}
	return i == n ? NUM_FLOAT : NUM_NONE;
}

/* .inf / .nan in their three spellings; *out gets the value. */
static int special_float(const char *s, size_t n, double *out)
{
	int neg = 0;

	if (eq3(s, n, ".nan", ".NaN", ".NAN")) {
		*out = NAN;
		return 1;
	}
	if (n && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		s++;
		n--;
	}
	if (eq3(s, n, ".inf", ".Inf", ".INF")) {
		*out = neg ? -INFINITY : INFINITY;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tree builder                                                        */
/* ------------------------------------------------------------------ */

struct keyent {
	const cJSON *map;
	const char *key;
	uint32_t hash;
};

struct frame {
	cJSON *node;
	cJSON *tail;
	char *key; /* pending key of a mapping, or NULL */
	unsigned key_line;
	unsigned nkeys;
};

struct builder {
	const char *name;
	const char *buf;
	size_t len;
	struct hb_err *err;
	struct frame st[HB_DOC_MAX_DEPTH + 1];
	int depth; /* number of open containers */
	cJSON *root;
	struct keyent *tab;
	size_t cap, used;
};

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static int tab_grow(struct builder *b)
{
	size_t ncap = b->cap ? b->cap * 2 : 256, i;
	struct keyent *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return HB_ENOMEM;
	for (i = 0; i < b->cap; i++) {
		struct keyent *e = &b->tab[i];
		size_t j;

		if (!e->map)
			continue;
		for (j = e->hash & (ncap - 1); nt[j].map;
		     j = (j + 1) & (ncap - 1))
			;
		nt[j] = *e;
	}
	free(b->tab);
	b->tab = nt;
	b->cap = ncap;
	return 0;
}

/* Insert (map, key); 1 if it was already there, 0 if added, <0 error. */
static int tab_insert(struct builder *b, const cJSON *map, const char *key)
{
	uint32_t h = hash_str(key) ^ (uint32_t)((uintptr_t)map >> 4);
	size_t j;
	int rc;

	if ((b->used + 1) * 2 > b->cap && (rc = tab_grow(b)))
		return rc;
	for (j = h & (b->cap - 1); b->tab[j].map; j = (j + 1) & (b->cap - 1))
		if (b->tab[j].map == map && b->tab[j].hash == h &&
		    !strcmp(b->tab[j].key, key))
			return 1;
	b->tab[j].map = map;
	b->tab[j].key = key;
	b->tab[j].hash = h;
	b->used++;
	return 0;
}

/* Forget every key (a document ended).  A big table is dropped rather
 * than wiped, so many small documents after a big one stay cheap. */
static void tab_clear(struct builder *b)
{
	if (b->used && b->cap > 1024) {
		free(b->tab);
		b->tab = NULL;
		b->cap = 0;
	} else if (b->used) {
		memset(b->tab, 0, b->cap * sizeof(*b->tab));
	}
	b->used = 0;
}

static unsigned line_at(const char *buf, size_t len, size_t off)
{
	unsigned line = 1;
	size_t i;

	if (off > len)
		off = len;
	for (i = 0; i < off; i++)
		if (buf[i] == '\n')
			line++;
	return line;
}

static void builder_reset(struct builder *b)
{
	int i;

	for (i = 0; i < b->depth; i++) {
		cJSON_free(b->st[i].key);
		b->st[i].key = NULL;
	}
	b->depth = 0;
	cJSON_Delete(b->root);
	b->root = NULL;
	tab_clear(b);
}

static int berr(struct builder *b, int code, unsigned line, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));

static int berr(struct builder *b, int code, unsigned line, const char *fmt,
		...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(b->err, code, b->name, line, "%s", msg);
}

/* Is key already in the mapping at frame f?  Adds it if not. */
static int check_dup(struct builder *b, struct frame *f, const char *key,
		     unsigned line)
{
	const cJSON *c;
	int rc;

	if (f->nkeys < DUP_LINEAR) {
		for (c = f->node->child; c; c = c->next)
			if (!strcmp(c->string, key))
				goto dup;
		return 0;
	}
	if (f->nkeys == DUP_LINEAR)
		for (c = f->node->child; c; c = c->next)
			if ((rc = tab_insert(b, f->node, c->string)) < 0)
				return rc;
	rc = tab_insert(b, f->node, key);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return 0;
dup:
	return berr(b, HB_EINVAL, line, "duplicate mapping key \"%s\"", key);
}

/* Attach a fresh node to the open container (or make it the root). */
static int attach(struct builder *b, cJSON *node, unsigned line)
{
	struct frame *f;
	int rc;

	if (!node)
		return HB_ENOMEM;
	f = b->depth ? &b->st[b->depth - 1] : NULL;
	if (f && cJSON_IsObject(f->node))
		line = f->key_line;
	if ((rc = set_line(node, line))) {
		cJSON_Delete(node);
		return rc;
	}
	if (!f) {
		b->root = node;
		return 0;
	}
	if (cJSON_IsObject(f->node)) {
		node->string = f->key;
		f->key = NULL;
		f->nkeys++;
	}
	if (!f->tail) {
		f->node->child = node;
	} else {
		f->tail->next = node;
		node->prev = f->tail;
	}
	f->node->child->prev = node;
	f->tail = node;
	return 0;
}

static const char *short_tag(const char *tag)
{
	static const char pfx[] = "tag:yaml.org,2002:";

	if (tag && !strncmp(tag, pfx, sizeof(pfx) - 1))
		return tag + sizeof(pfx) - 1;
	return NULL;
}

#define NOT_NUMBER 1

/* 0 and *out set, NOT_NUMBER, or a negative error. */
static int make_number(struct builder *b, const char *s, size_t n,
		       unsigned line, cJSON **out, int as_float)
{
	uint64_t mag;
	int neg;
	double d;
	enum numkind k = num_text(s, n, &mag, &neg);

	if (k == NUM_INT && !as_float) {
		if (mag > INT_LIMIT)
			return berr(b, HB_ERANGE, line,
				    "integer %.*s is too large (beyond 2^53 it "
				    "would lose precision; quote it if it is "
				    "a string)",
				    n > 64 ? 64 : (int)n, s);
		d = (double)mag;
		*out = cJSON_CreateNumber(neg ? -d : d);
		return *out ? 0 : HB_ENOMEM;
	}
	if (k == NUM_INT || k == NUM_FLOAT) {
		char tmp[512];
		char *end;

		if (n >= sizeof(tmp))
			return berr(b, HB_ERANGE, line,
				    "number is too long (%zu characters)", n);
		memcpy(tmp, s, n);
		tmp[n] = '\0';
		if (tmp[0] == '0' && (tmp[1] == 'o' || tmp[1] == 'x')) {
			d = (double)mag; /* !!float 0x10 */
		} else {
			errno = 0;
			d = strtod(tmp, &end);
			if (*end)
				return berr(b, HB_EINVAL, line,
					    "malformed number '%s'", tmp);
			if (isinf(d))
				return berr(b, HB_ERANGE, line,
					    "number %s is out of range", tmp);
		}
		*out = cJSON_CreateNumber(d);
		return *out ? 0 : HB_ENOMEM;
	}
	if (special_float(s, n, &d)) {
		*out = cJSON_CreateNumber(d);
		return *out ? 0 : HB_ENOMEM;
	}
	return NOT_NUMBER;
}

/* Build the node for a scalar event (as a value). */
static int scalar_node(struct builder *b, const yaml_event_t *ev, cJSON **out)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	unsigned line = (unsigned)ev->start_mark.line + 1;
	const char *st = short_tag(tag);
	int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	int v, rc;

	*out = NULL;
	if (memchr(s, '\0', n))
		return berr(b, HB_EINVAL, line,
			    "NUL character in a string is not supported");
	if (tag && !strcmp(tag, "!"))
		goto str;
	if (tag && !st)
		goto badtag;
	if (!tag && !plain)
		goto str;
	if (!tag) {
		if (is_null_text(s, n))
			goto null;
		if ((v = bool_text(s, n)) >= 0)
			goto boolean;
		rc = make_number(b, s, n, line, out, 0);
		if (rc != NOT_NUMBER)
			return rc;
		goto str;
	}
	if (!strcmp(st, "str"))
		goto str;
	if (!strcmp(st, "null")) {
		if (is_null_text(s, n))
			goto null;
		return berr(b, HB_EINVAL, line, "'%.*s' is not a valid !!null",
			    n > 64 ? 64 : (int)n, s);
	}
	if (!strcmp(st, "bool")) {
		if ((v = bool_text(s, n)) >= 0)
			goto boolean;
		return berr(b, HB_EINVAL, line, "'%.*s' is not a valid !!bool",
			    n > 64 ? 64 : (int)n, s);
	}
	if (!strcmp(st, "int") || !strcmp(st, "float")) {
		int fl = st[0] == 'f';
		uint64_t mag;
		int neg;

		if (!fl && num_text(s, n, &mag, &neg) != NUM_INT)
			return berr(b, HB_EINVAL, line,
				    "'%.*s' is not a valid !!int",
				    n > 64 ? 64 : (int)n, s);
		rc = make_number(b, s, n, line, out, fl);
		if (rc != NOT_NUMBER)
			return rc;
		return berr(b, HB_EINVAL, line, "'%.*s' is not a valid !!float",
			    n > 64 ? 64 : (int)n, s);
	}
badtag:
	return berr(b, HB_EUNSUP, line, "unsupported YAML tag '%.64s'", tag);
str:
	*out = cJSON_CreateString(s);
	return *out ? 0 : HB_ENOMEM;
null:
	*out = cJSON_CreateNull();
	return *out ? 0 : HB_ENOMEM;
boolean:
	*out = cJSON_CreateBool(v);
	if (*out && v)
		(*out)->valueint = 1;
	return *out ? 0 : HB_ENOMEM;
}

static int collection_tag_ok(struct builder *b, const char *tag,
			     const char *want, unsigned line)
{
	const char *st;

	if (!tag || !strcmp(tag, "!"))
		return 0;
	st = short_tag(tag);
	if (st && !strcmp(st, want))
		return 0;
	return berr(b, HB_EUNSUP, line, "unsupported YAML tag '%.64s'", tag);
}

static int yaml_error(struct builder *b, const yaml_parser_t *p)
{
	unsigned line;

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return berr(b, HB_ENOMEM, 0, "out of memory");
	case YAML_READER_ERROR:
		line = line_at(b->buf, b->len, p->problem_offset);
		return berr(b, HB_EINVAL, line, "%s",
			    p->problem ? p->problem : "unreadable input");
	default:
		line = (unsigned)p->problem_mark.line + 1;
		if (p->context)
			return berr(b, HB_EINVAL, line, "%s %s (line %u)",
				    p->problem ? p->problem : "syntax error",
				    p->context,
				    (unsigned)p->context_mark.line + 1);
		return berr(b, HB_EINVAL, line, "%s",
			    p->problem ? p->problem : "syntax error");
	}
}

/*
 * Handle one event.  *done is set to 1 at the end of a document, 2 at the
 * end of the stream.
 */
static int on_event(struct builder *b, const yaml_event_t *ev, int *done)
{
	unsigned line = (unsigned)ev->start_mark.line + 1;
	struct frame *f = b->depth ? &b->st[b->depth - 1] : NULL;
	int want_key = f && cJSON_IsObject(f->node) && !f->key;
	cJSON *node = NULL;
	int rc;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		*done = 2;
		return 0;
	case YAML_DOCUMENT_END_EVENT:
		*done = 1;
		return 0;
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_START_EVENT:
	case YAML_NO_EVENT:
		return 0;
	case YAML_ALIAS_EVENT:
		return berr(b, HB_EUNSUP, line,
			    "YAML aliases are not supported");
	case YAML_SCALAR_EVENT:
		if (want_key) {
			const char *s = (const char *)ev->data.scalar.value;
			size_t n = ev->data.scalar.length;
			const char *tag = (const char *)ev->data.scalar.tag;
			const char *st = short_tag(tag);

			if (tag && strcmp(tag, "!") &&
			    (!st || strcmp(st, "str")))
				return berr(b, HB_EUNSUP, line,
					    "unsupported YAML tag '%.64s' on "
					    "a mapping key",
					    tag);
			if (memchr(s, '\0', n))
				return berr(b, HB_EINVAL, line,
					    "NUL character in a mapping key "
					    "is not supported");
			f->key = cJSON_malloc(n + 1);
			if (!f->key)
				return HB_ENOMEM;
			memcpy(f->key, s, n + 1);
			f->key_line = line;
			/* the table keeps the copy, which the tree will own */
			return check_dup(b, f, f->key, line);
		}
		if ((rc = scalar_node(b, ev, &node)))
			return rc;
		return attach(b, node, line);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		int map = ev->type == YAML_MAPPING_START_EVENT;
		const char *tag =
		    (const char *)(map ? ev->data.mapping_start.tag
				       : ev->data.sequence_start.tag);

		if (want_key)
			return berr(b, HB_EUNSUP, line,
				    "mapping keys must be scalars");
		if ((rc = collection_tag_ok(b, tag, map ? "map" : "seq", line)))
			return rc;
		if (b->depth >= HB_DOC_MAX_DEPTH)
			return berr(b, HB_ETOOBIG, line,
				    "nesting deeper than %d levels",
				    HB_DOC_MAX_DEPTH);
		node = map ? cJSON_CreateObject() : cJSON_CreateArray();
		if ((rc = attach(b, node, line)))
			return rc;
		f = &b->st[b->depth++];
		f->node = node;
		f->tail = NULL;
		f->key = NULL;
		f->nkeys = 0;
		return 0;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (b->depth > 0) {
			b->depth--;
			cJSON_free(b->st[b->depth].key);
			b->st[b->depth].key = NULL;
		}
		return 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */
/* ------------------------------------------------------------------ */

/*
 * A JSON document goes through its own parser: it is faster than libyaml,
 * reads what YAML cannot (surrogate-pair escapes, keys longer than 1024
 * characters) and keeps the same checks and source lines.
 */
struct jp {
	struct builder *b;
	const char *p, *end;
	unsigned line;
	int syntax; /* the error is a syntax error (YAML may do better) */
};

static int jerr(struct jp *j, const char *what)
{
	j->syntax = 1;
	return berr(j->b, HB_EINVAL, j->line, "JSON: %s", what);
}

static void jws(struct jp *j)
{
	while (j->p < j->end) {
		char c = *j->p;

		if (c == '\n')
			j->line++;
		else if (c != ' ' && c != '\t' && c != '\r')
			return;
		j->p++;
	}
}

static int hex4(const char *p, uint32_t *out)
{
	uint32_t v = 0;
	int i, d;

	for (i = 0; i < 4; i++) {
		if ((d = hb_doc_hexval((unsigned char)p[i])) < 0)
			return -1;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return 0;
}

static size_t utf8_enc(uint32_t c, char *o)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12);
		o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | c >> 18);
	o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

/* A string at j->p (the opening quote); *out is allocated by cJSON. */
static int jstring(struct jp *j, char **out)
{
	const char *s = j->p + 1, *q;
	char *o, *d;
	size_t k;
	uint32_t cp, lo;

	*out = NULL;
	for (q = s; q < j->end && *q != '"'; q++)
		if (*q == '\\' && q + 1 < j->end)
			q++;
	if (q >= j->end)
		return jerr(j, "unterminated string");
	o = d = cJSON_malloc((size_t)(q - s) + 1);
	if (!o)
		return HB_ENOMEM;
	while (s < q) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20) {
			cJSON_free(o);
			return jerr(j, "control character in a string");
		}
		if (c >= 0x80) {
			k = hb_doc_utf8_dec((const unsigned char *)s,
					    (size_t)(q - s), &cp);
			if (!k) {
				cJSON_free(o);
				return jerr(j, "invalid UTF-8 in a string");
			}
			memcpy(d, s, k);
			d += k;
			s += k;
			continue;
		}
		if (c != '\\') {
			*d++ = (char)c;
			s++;
			continue;
		}
		s++;
		switch (*s++) {
		case '"':
			*d++ = '"';
			break;
		case '\\':
			*d++ = '\\';
			break;
		case '/':
			*d++ = '/';
			break;
		case 'b':
			*d++ = '\b';
			break;
		case 'f':
			*d++ = '\f';
			break;
		case 'n':
			*d++ = '\n';
			break;
		case 'r':
			*d++ = '\r';
			break;
		case 't':
			*d++ = '\t';
			break;
		case 'u':
			if (q - s < 4 || hex4(s, &cp))
				goto bad;
			s += 4;
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				goto bad;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (q - s < 6 || s[0] != '\\' || s[1] != 'u' ||
				    hex4(s + 2, &lo) || lo < 0xDC00 ||
				    lo > 0xDFFF)
					goto bad;
				s += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) +
				     (lo - 0xDC00);
			}
			if (cp == 0) {
				cJSON_free(o);
				return berr(j->b, HB_EINVAL, j->line,
					    "NUL character in a string is "
					    "not supported");
			}
			d += utf8_enc(cp, d);
			break;
		default:
			goto bad;
		}
	}
	*d = '\0';
	*out = o;
	j->p = q + 1;
	return 0;
bad:
	cJSON_free(o);
	return jerr(j, "invalid escape in a string");
}

static int jnumber(struct jp *j, cJSON **out)
{
	const char *s = j->p, *p = s;
	int isint = 1;
	char tmp[512];
	size_t n;
	uint64_t mag;
	int neg;
	double d;

	if (p < j->end && *p == '-')
		p++;
	if (p < j->end && *p == '0') {
		p++;
	} else if (p < j->end && hb_doc_is_digit(*p)) {
		while (p < j->end && hb_doc_is_digit(*p))
			p++;
	} else {
		return jerr(j, "invalid value");
	}
	if (p < j->end && *p == '.') {
		isint = 0;
		if (++p >= j->end || !hb_doc_is_digit(*p))
			return jerr(j, "invalid number");
		while (p < j->end && hb_doc_is_digit(*p))
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		isint = 0;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || !hb_doc_is_digit(*p))
			return jerr(j, "invalid number");
		while (p < j->end && hb_doc_is_digit(*p))
			p++;
	}
	n = (size_t)(p - s);
	j->p = p;
	if (isint) {
		num_text(s, n, &mag, &neg);
		if (mag > INT_LIMIT)
			return berr(j->b, HB_ERANGE, j->line,
				    "integer %.*s is too large (beyond 2^53 it "
				    "would lose precision; quote it if it is "
				    "a string)",
				    n > 64 ? 64 : (int)n, s);
		d = (double)mag;
		*out = cJSON_CreateNumber(neg ? -d : d);
		return *out ? 0 : HB_ENOMEM;
	}
	if (n >= sizeof(tmp))
		return berr(j->b, HB_ERANGE, j->line,
			    "number is too long (%zu characters)", n);
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	d = strtod(tmp, NULL);
	if (isinf(d))
		return berr(j->b, HB_ERANGE, j->line,
			    "number %s is out of range", tmp);
	*out = cJSON_CreateNumber(d);
	return *out ? 0 : HB_ENOMEM;
}

static int jword(struct jp *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return 0;
	j->p += n;
	return 1;
}

/* Parse one value and attach it to the open container. */
static int jvalue(struct jp *j)
{
	struct builder *b = j->b;
	unsigned line;
	cJSON *node;
	char *s;
	int rc, obj;

	jws(j);
	line = j->line;
	if (j->p >= j->end)
		return jerr(j, "unexpected end of input");
	switch (*j->p) {
	case '{':
	case '[':
		obj = *j->p == '{';
		if (b->depth >= HB_DOC_MAX_DEPTH)
			return berr(b, HB_ETOOBIG, line,
				    "nesting deeper than %d levels",
				    HB_DOC_MAX_DEPTH);
		node = obj ? cJSON_CreateObject() : cJSON_CreateArray();
		if ((rc = attach(b, node, line)))
			return rc;
		b->st[b->depth].node = node;
		b->st[b->depth].tail = NULL;
		b->st[b->depth].key = NULL;
		b->st[b->depth].nkeys = 0;
		b->depth++;
		j->p++;
		jws(j);
		if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
			j->p++;
			b->depth--;
			return 0;
		}
		for (;;) {
			struct frame *f = &b->st[b->depth - 1];

			if (obj) {
				jws(j);
				if (j->p >= j->end || *j->p != '"')
					return jerr(j, "expected a string key");
				line = j->line;
				if ((rc = jstring(j, &s)))
					return rc;
				f->key = s;
				f->key_line = line;
				if ((rc = check_dup(b, f, s, line)))
					return rc;
				jws(j);
				if (j->p >= j->end || *j->p != ':')
					return jerr(j, "expected ':'");
				j->p++;
			}
			if ((rc = jvalue(j)))
				return rc;
			jws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
				j->p++;
				break;
			}
			return jerr(j, obj ? "expected ',' or '}'"
					   : "expected ',' or ']'");
		}
		b->depth--;
		return 0;
	case '"':
		if ((rc = jstring(j, &s)))
			return rc;
		node = cJSON_CreateNull();
		if (!node) {
			cJSON_free(s);
			return HB_ENOMEM;
		}
		node->type = cJSON_String;
		node->valuestring = s;
		return attach(b, node, line);
	case 't':
		if (!jword(j, "true"))
			return jerr(j, "invalid value");
		node = cJSON_CreateTrue();
		if (node)
			node->valueint = 1;
		return attach(b, node, line);
	case 'f':
		if (!jword(j, "false"))
			return jerr(j, "invalid value");
		return attach(b, cJSON_CreateFalse(), line);
	case 'n':
		if (!jword(j, "null"))
			return jerr(j, "invalid value");
		return attach(b, cJSON_CreateNull(), line);
	default:
		if ((rc = jnumber(j, &node)))
			return rc;
		return attach(b, node, line);
	}
}

/*
 * Parse buf as one JSON value.  Returns 0, a negative error, or 1 when the
 * input is not JSON (a syntax error; the caller may try YAML).
 */
static int parse_json(const char *buf, size_t len, const char *name,
		      cJSON **out, struct hb_err *err)
{
	struct hb_err jerrd = {0};
	struct builder b;
	struct jp j;
	int rc;

	memset(&b, 0, sizeof(b));
	b.name = name;
	b.buf = buf;
	b.len = len;
	b.err = &jerrd;
	j.b = &b;
	j.p = buf;
	j.end = buf + len;
	j.line = 1;
	j.syntax = 0;
	rc = jvalue(&j);
	if (!rc) {
		jws(&j);
		if (j.p < j.end)
			rc = jerr(&j, "unexpected content after the value");
	}
	if (rc) {
		builder_reset(&b);
		free(b.tab);
		if (j.syntax && rc == HB_EINVAL) {
			*err = jerrd; /* kept in case YAML fails too */
			return 1;
		}
		if (err && !err->code)
			*err = jerrd;
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, name, 0, "out of memory");
		return rc;
	}
	*out = b.root;
	b.root = NULL;
	builder_reset(&b);
	free(b.tab);
	return 0;
}

static int looks_json(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '{' || c == '[')
			return 1;
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			return 0;
	}
	return 0;
}

static int check_input(const char *buf, size_t len, const char *name,
		       struct hb_err *err)
{
	const char *z;

	if (len > HB_DOC_MAX)
		return hb_err_set(err, HB_ETOOBIG, name, 0,
				  "input is %zu bytes, more than the %u "
				  "allowed",
				  len, HB_DOC_MAX);
	if (len && !buf)
		return hb_err_set(err, HB_EINVAL, name, 0, "no input");
	z = len ? memchr(buf, '\0', len) : NULL;
	if (z)
		return hb_err_set(err, HB_EINVAL, name,
				  line_at(buf, len, (size_t)(z - buf)),
				  "NUL byte in input");
	return 0;
}

/*
 * Parse buf as a YAML stream.  With stream set, *out is an array of the
 * non-empty documents; otherwise exactly one document (or null).
 */
static int parse_yaml(const char *buf, size_t len, const char *name, int stream,
		      cJSON **out, struct hb_err *err)
{
	struct builder b;
	yaml_parser_t p;
	yaml_event_t ev;
	cJSON *docs = NULL, *single = NULL;
	int done = 0, rc = 0;

	memset(&b, 0, sizeof(b));
	b.name = name;
	b.buf = buf;
	b.len = len;
	b.err = err;
	if (!yaml_parser_initialize(&p))
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	yaml_parser_set_input_string(
	    &p, (const unsigned char *)(buf ? buf : ""), len);
	yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	if (stream && !(docs = cJSON_CreateArray())) {
		rc = HB_ENOMEM;
		goto out;
	}
	while (done != 2) {
		if (!yaml_parser_parse(&p, &ev)) {
			rc = yaml_error(&b, &p);
			goto out;
		}
		done = 0;
		rc = on_event(&b, &ev, &done);
		yaml_event_delete(&ev);
		if (rc)
			goto out;
		if (done != 1)
			continue;
		/* a document ended */
		if (b.root && !cJSON_IsNull(b.root)) {
			if (stream) {
				cJSON_AddItemToArray(docs, b.root);
			} else if (single) {
				rc = berr(&b, HB_EINVAL, hb_doc_line(b.root),
					  "expected one document, found "
					  "several");
				goto out;
			} else {
				single = b.root;
			}
			b.root = NULL;
		}
		builder_reset(&b);
	}
	if (stream) {
		*out = docs;
		docs = NULL;
	} else {
		if (!single && !(single = cJSON_CreateNull())) {
			rc = HB_ENOMEM;
			goto out;
		}
		*out = single;
		single = NULL;
	}
out:
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, name, 0, "out of memory");
	builder_reset(&b);
	free(b.tab);
	cJSON_Delete(docs);
	cJSON_Delete(single);
	yaml_parser_delete(&p);
	return rc;
}

/*
 * JSON first when it looks like JSON; if it is not (say, a YAML flow
 * mapping), YAML, and if YAML fails too the JSON error stands.
 */
static int parse_any(const char *buf, size_t len, const char *name, int stream,
		     cJSON **out, struct hb_err *err)
{
	struct hb_err jerr_saved = {0};
	struct hb_err yerr = {0};
	cJSON *doc = NULL, *arr;
	int rc;

	*out = NULL;
	if ((rc = check_input(buf, len, name, err)))
		return rc;
	if (!looks_json(buf, len))
		return parse_yaml(buf, len, name, stream, out, err);
	rc = parse_json(buf, len, name, &doc, &jerr_saved);
	if (rc < 0) {
		if (err && !err->code)
			*err = jerr_saved;
		return rc;
	}
	if (rc == 1) {
		rc = parse_yaml(buf, len, name, stream, out, &yerr);
		if (rc && err && !err->code)
			*err = jerr_saved;
		return rc;
	}
	if (!stream) {
		*out = doc;
		return 0;
	}
	if (!(arr = cJSON_CreateArray())) {
		cJSON_Delete(doc);
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	}
	if (cJSON_IsNull(doc))
		cJSON_Delete(doc);
	else
		cJSON_AddItemToArray(arr, doc);
	*out = arr;
	return 0;
}

int hb_doc_parse(const char *buf, size_t len, const char *name, cJSON **out,
		 struct hb_err *err)
{
	return parse_any(buf, len, name, 0, out, err);
}

int hb_doc_parse_stream(const char *buf, size_t len, const char *name,
			cJSON **out, struct hb_err *err)
{
	return parse_any(buf, len, name, 1, out, err);
}
