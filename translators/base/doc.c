/*
 * doc.c - YAML and JSON documents as cJSON trees.
 *
 * Reading: libyaml's event parser drives a small tree builder.  Plain
 * scalars are typed by the YAML 1.2 core schema; quoted and block scalars
 * are strings.  Source lines are stashed in fields cJSON leaves unused for
 * the node's type (see hb_doc_line() in doc.h).
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

#define INT_LIMIT  9007199254740992ull /* 2^53 */
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

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

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
			d = hexval((unsigned char)s[i]);
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
	for (digits = 0; i + digits < n && is_digit(s[i + digits]); digits++)
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
		while (i < n && is_digit(s[i])) {
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
		while (i < n && is_digit(s[i])) {
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
		if ((d = hexval((unsigned char)p[i])) < 0)
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

static size_t utf8_dec(const unsigned char *s, size_t n, uint32_t *cp);

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
			k = utf8_dec((const unsigned char *)s, (size_t)(q - s),
				     &cp);
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
	} else if (p < j->end && is_digit(*p)) {
		while (p < j->end && is_digit(*p))
			p++;
	} else {
		return jerr(j, "invalid value");
	}
	if (p < j->end && *p == '.') {
		isint = 0;
		if (++p >= j->end || !is_digit(*p))
			return jerr(j, "invalid number");
		while (p < j->end && is_digit(*p))
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		isint = 0;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || !is_digit(*p))
			return jerr(j, "invalid number");
		while (p < j->end && is_digit(*p))
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

/* ------------------------------------------------------------------ */
/* JSON syntax check                                                   */
/* ------------------------------------------------------------------ */

/*
 * hb_json_check() walks the grammar of the reader above (jvalue(),
 * jstring(), jnumber()) without building anything: one pass, a stack of
 * the closers of the open containers instead of recursion, no allocation.
 * Stored documents are mostly string bytes (a job script escaped in a
 * string), so strings are skipped sixteen bytes at a time up to the next
 * byte that needs a look, as the writers find what they escape.  What the
 * reader refuses for its own reasons rather than JSON's (duplicate keys,
 * \u0000, integers beyond 2^53, numbers too long or out of range) is
 * accepted here.
 */

#define JC_STR_(x) #x
#define JC_STR(x)  JC_STR_(x)

/* As the reader words it. */
static const char jc_too_deep[] =
	"nesting deeper than " JC_STR(HB_DOC_MAX_DEPTH) " levels";

/* Defined with the writers: '"', '\\', control bytes, DEL, non-ASCII. */
static inline unsigned care16(hb_v16 x);

/* After a backslash: 1 a one-letter escape, 2 \u, 0 anything else. */
static const unsigned char jc_esc[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1,
    ['n'] = 1, ['r'] = 1,  ['t'] = 1, ['u'] = 2,
};

struct jc {
	const char *why; /* the first problem */
	const unsigned char *at;
};

static const unsigned char *jc_fail(struct jc *c, const unsigned char *at,
				    const char *why)
{
	c->why = why;
	c->at = at;
	return NULL;
}

static inline int jc_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The four hex digits at p: 0 and *u, 1 when one is not a hex digit, 2
 * when the input ends first. */
static int jc_hex4(const unsigned char *p, const unsigned char *end,
		   uint32_t *u)
{
	uint32_t v = 0;
	int i, d;

	for (i = 0; i < 4; i++) {
		if (p + i == end)
			return 2;
		if ((d = hexval(p[i])) < 0)
			return 1;
		v = v << 4 | (uint32_t)d;
	}
	*u = v;
	return 0;
}

/*
 * The string whose opening quote is at p: the byte after its closing
 * quote, or NULL with the problem in c.  A string the input ends inside
 * is "unterminated" at its opening quote, unless a problem comes first.
 * Inlined into both its callers (keys and values), which keeps the
 * block scan's constants in registers: a call per string cost a tenth
 * more instructions on a typical document.
 */
static inline __attribute__((always_inline)) const unsigned char *
jc_string(struct jc *c, const unsigned char *p, const unsigned char *end)
{
	const unsigned char *open = p++, *esc;
	uint32_t u, lo;
	size_t k;
	int rc;

	for (;;) {
		while (end - p >= 16) {
			unsigned m = care16(hb_v16_load(p));

			if (m) {
				p += hb_v16_first(m);
				goto look;
			}
			p += 16;
		}
		if (p == end)
			return jc_fail(c, open, "unterminated string");
	look:
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			if (end - p < 2)
				return jc_fail(c, open, "unterminated string");
			if (jc_esc[p[1]] == 1) {
				p += 2;
				continue;
			}
			if (!jc_esc[p[1]])
				goto bad_escape;
			esc = p;
			if ((rc = jc_hex4(p + 2, end, &u)))
				goto bad_hex;
			p += 6;
			if (u >= 0xDC00 && u <= 0xDFFF)
				return jc_fail(c, esc,
					       "lone surrogate in a string");
			if (u < 0xD800 || u > 0xDBFF)
				continue;
			/* a high surrogate: its low half must follow */
			if (p == end || (*p == '\\' && end - p < 2))
				return jc_fail(c, open, "unterminated string");
			if (p[0] != '\\' || p[1] != 'u')
				return jc_fail(c, esc,
					       "lone surrogate in a string");
			if ((rc = jc_hex4(p + 2, end, &lo)))
				goto bad_hex;
			if (lo < 0xDC00 || lo > 0xDFFF)
				return jc_fail(c, esc,
					       "lone surrogate in a string");
			p += 6;
			continue;
		}
		if (*p < 0x20)
			return jc_fail(c, p, "control character in a string");
		if (*p < 0x80) { /* DEL, or a byte of the last block */
			p++;
			continue;
		}
		if (!(k = utf8_dec(p, (size_t)(end - p), &u)))
			return jc_fail(c, p, "invalid UTF-8 in a string");
		p += k;
	}
bad_hex:
	if (rc == 2)
		return jc_fail(c, open, "unterminated string");
bad_escape:
	return jc_fail(c, p, "invalid escape in a string");
}

/* The number at p (a '-' or a digit): the byte after it, or NULL.  RFC
 * 8259: no leading zero, digits on both sides of a '.', and an exponent
 * has digits.  Problems are reported where the number starts. */
static const unsigned char *jc_number(struct jc *c, const unsigned char *p,
				      const unsigned char *end)
{
	const unsigned char *s = p;

	if (*p == '-')
		p++;
	if (p == end || !is_digit(*p))
		goto bad;
	if (*p == '0') {
		if (++p < end && is_digit(*p))
			goto bad;
	} else {
		while (++p < end && is_digit(*p))
			;
	}
	if (p < end && *p == '.') {
		if (++p == end || !is_digit(*p))
			goto bad;
		while (++p < end && is_digit(*p))
			;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit(*p))
			goto bad;
		while (++p < end && is_digit(*p))
			;
	}
	return p;
bad:
	return jc_fail(c, s, "invalid number");
}

const char *hb_json_check(const char *s, size_t n, size_t *at)
{
	const unsigned char *p = (const unsigned char *)s, *end, *comma;
	unsigned char close[HB_DOC_MAX_DEPTH]; /* '}' or ']' per open level */
	struct jc c = {NULL, NULL};
	int depth = 0;

	if (!s) {
		if (at)
			*at = 0;
		return n ? "no input" : "unexpected end of input";
	}
	end = p + n;
value:
	while (p < end && jc_ws(*p))
		p++;
value_here: /* the blanks are behind p */
	if (p == end)
		goto eof;
	switch (*p) {
	case '{':
	case '[':
		if (depth == HB_DOC_MAX_DEPTH) {
			jc_fail(&c, p, jc_too_deep);
			goto out;
		}
		close[depth++] = *p == '{' ? '}' : ']';
		p++;
		while (p < end && jc_ws(*p))
			p++;
		if (p < end && *p == close[depth - 1]) {
			p++;
			depth--;
			goto next;
		}
		if (close[depth - 1] == '}')
			goto key_here;
		goto value_here;
	case '"':
		if (!(p = jc_string(&c, p, end)))
			goto out;
		goto next;
	case 't':
		if (end - p < 4 || memcmp(p, "true", 4))
			goto bad_value;
		p += 4;
		goto next;
	case 'f':
		if (end - p < 5 || memcmp(p, "false", 5))
			goto bad_value;
		p += 5;
		goto next;
	case 'n':
		if (end - p < 4 || memcmp(p, "null", 4))
			goto bad_value;
		p += 4;
		goto next;
	case '-':
	case '0' ... '9':
		if (!(p = jc_number(&c, p, end)))
			goto out;
		goto next;
	case '+':
	case '.':
		jc_fail(&c, p, "invalid number");
		goto out;
	default:
		goto bad_value;
	}
key_here:
	/* after '{' or ',' and the blanks after them */
	if (p == end)
		goto eof;
	if (*p != '"') {
		jc_fail(&c, p, "expected a string key");
		goto out;
	}
	if (!(p = jc_string(&c, p, end)))
		goto out;
	while (p < end && jc_ws(*p))
		p++;
	if (p == end)
		goto eof;
	if (*p != ':') {
		jc_fail(&c, p, "expected ':'");
		goto out;
	}
	p++;
	goto value;
next:
	/* after a value */
	while (p < end && jc_ws(*p))
		p++;
	if (!depth) {
		if (p == end)
			return NULL;
		jc_fail(&c, p, "unexpected content after the value");
		goto out;
	}
	if (p == end)
		goto eof;
	if (*p == ',') {
		comma = p++;
		while (p < end && jc_ws(*p))
			p++;
		if (p < end && *p == close[depth - 1]) {
			jc_fail(&c, comma, "trailing comma");
			goto out;
		}
		if (close[depth - 1] == '}')
			goto key_here;
		goto value_here;
	}
	if (*p == close[depth - 1]) {
		p++;
		depth--;
		goto next;
	}
	jc_fail(&c, p,
		close[depth - 1] == '}' ? "expected ',' or '}'"
					: "expected ',' or ']'");
	goto out;
bad_value:
	jc_fail(&c, p, "invalid value");
	goto out;
eof:
	jc_fail(&c, end, "unexpected end of input");
out:
	if (at)
		*at = (size_t)(c.at - (const unsigned char *)s);
	return c.why;
}

/* ------------------------------------------------------------------ */
/* Writers                                                             */
/* ------------------------------------------------------------------ */

struct wr {
	struct hb_buf *b;
	int rc;
	int compact; /* JSON with no whitespace */
};

static const char spaces[] =
    "                                                                "
    "                                                                "
    "                                                                "
    "                                                                ";

/*
 * Append n bytes.  The fast path copies straight into spare capacity and
 * leaves the terminating NUL to finish(); hb_buf_append() grows the
 * buffer (and enforces its cap) when there is no room.
 */
static inline void put(struct wr *w, const char *s, size_t n)
{
	struct hb_buf *b = w->b;

	if (n < b->cap - b->len && n <= b->max - b->len && !w->rc) {
		hb_copy(b->data + b->len, s, n);
		b->len += n;
		return;
	}
	if (!w->rc && n)
		w->rc = hb_buf_append(b, s, n);
}

#define PUTS(w, lit) put((w), (lit), sizeof(lit) - 1)

/*
 * The fast paths write straight into the buffer: room(w, n) is where n
 * bytes (and the NUL) fit at the end of the output, growing it if need
 * be, or NULL when they cannot (an error is pending, or the cap is near):
 * the caller then takes the slow path, which meets the same error.
 * Filled bytes are counted with used().
 */
static inline char *room(struct wr *w, size_t n)
{
	struct hb_buf *b = w->b;

	if (w->rc || n > b->max - b->len ||
	    (n >= b->cap - b->len && hb_buf_reserve(b, n)))
		return NULL;
	return b->data + b->len;
}

static inline void used(struct wr *w, const char *end)
{
	w->b->len = (size_t)(end - w->b->data);
}

static void putc1(struct wr *w, char c)
{
	put(w, &c, 1);
}

static inline void indent(struct wr *w, int n)
{
	if (n > 0 && n < (int)sizeof(spaces)) {
		put(w, spaces, (size_t)n);
		return;
	}
	while (n > 0) {
		int k =
		    n < (int)sizeof(spaces) - 1 ? n : (int)sizeof(spaces) - 1;

		put(w, spaces, (size_t)k);
		n -= k;
	}
}

/*
 * Decode one UTF-8 sequence at s (n bytes left).  Returns its length and
 * the code point in *cp, or 0 if the bytes are not valid UTF-8 (overlong,
 * surrogate, beyond U+10FFFF or truncated).
 */
static size_t utf8_dec(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0];
	size_t len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		c &= 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		c &= 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

size_t hb_utf8_dec(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;

	return n ? utf8_dec(s, n, cp ? cp : &c) : 0;
}

size_t hb_utf8_span(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n && (k = hb_utf8_dec(u + i, n - i, NULL)))
		i += k;
	return i;
}

/*
 * A code point that must be escaped in output: C0/C1 controls, DEL, the
 * Unicode line and paragraph separators, the BOM and the non-characters
 * U+FFFE/U+FFFF (YAML readers reject or reinterpret them when raw).
 */
static int cp_special(uint32_t c)
{
	return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 ||
	       c == 0x2029 || c == 0xFEFF || c == 0xFFFE || c == 0xFFFF;
}

/*
 * Byte classes for the string scanners: B_PLAIN and B_INDICATOR bytes are
 * copied as they are into JSON and double-quoted YAML; B_INDICATOR bytes
 * matter to plain YAML scalars; B_QUOTE bytes are escaped in quotes;
 * B_OTHER is a control byte, DEL or part of a UTF-8 sequence.
 */
enum { B_PLAIN, B_INDICATOR, B_QUOTE, B_OTHER };

static const unsigned char bclass[256] = {
    [0 ... 0x1f] = B_OTHER,    [0x20 ... 0x21] = B_PLAIN,
    ['"'] = B_QUOTE,	       ['#'] = B_INDICATOR,
    [0x24 ... 0x39] = B_PLAIN, [':'] = B_INDICATOR,
    [0x3b ... 0x5b] = B_PLAIN, ['\\'] = B_QUOTE,
    [0x5d ... 0x7e] = B_PLAIN, [0x7f ... 0xff] = B_OTHER,
};

static const char hexdig[] = "0123456789abcdef";

static void put_u4(struct wr *w, uint32_t c)
{
	char t[6] = {'\\',
		     'u',
		     hexdig[(c >> 12) & 15],
		     hexdig[(c >> 8) & 15],
		     hexdig[(c >> 4) & 15],
		     hexdig[c & 15]};

	put(w, t, sizeof(t));
}

/*
 * The bytes of block x that need care in a JSON or
 * double-quoted string (a control byte, '"', '\\', DEL or non-ASCII):
 * bit i for byte i.  0: all sixteen are plain.
 */
static inline unsigned care16(hb_v16 x)
{
	return hb_v16_mask(hb_v16_or(
		hb_v16_ctl(x), hb_v16_or(hb_v16_eq(x, '"'), hb_v16_eq(x, '\\'))));
}

/* The JSON escape of code point cp (a control, '"', '\\' or special). */
static void json_escape(struct wr *w, uint32_t cp)
{
	switch (cp) {
	case '"':
		PUTS(w, "\\\"");
		break;
	case '\\':
		PUTS(w, "\\\\");
		break;
	case '\b':
		PUTS(w, "\\b");
		break;
	case '\f':
		PUTS(w, "\\f");
		break;
	case '\n':
		PUTS(w, "\\n");
		break;
	case '\r':
		PUTS(w, "\\r");
		break;
	case '\t':
		PUTS(w, "\\t");
		break;
	default:
		put_u4(w, cp);
		break;
	}
}

/*
 * quoted() for a string whose only bytes that need care are the escapes
 * JSON and YAML share (newline, tab, '"', '\\'), written straight into the
 * buffer.  Returns 0, having written nothing, for anything else (other
 * controls, DEL, non-ASCII) or when there is no room.
 */
static int quoted_fast(struct wr *w, const char *str, size_t n)
{
	const unsigned char *p = (const unsigned char *)str, *end = p + n;
	char *o = n <= SIZE_MAX / 4 ? room(w, 2 * n + 2 + 16) : NULL;

	if (!o)
		return 0;
	*o++ = '"';
	while (p < end) {
		unsigned char c;

		if (end - p >= 16) {
			unsigned m = care16(hb_v16_load(p));

			memcpy(o, p, 16); /* room has 16 bytes to spare */
			if (!m) {
				o += 16;
				p += 16;
				continue;
			}
			o += hb_v16_first(m);
			p += hb_v16_first(m);
		} else if (bclass[*p] <= B_INDICATOR) {
			*o++ = (char)*p++;
			continue;
		}
		c = *p++;
		*o++ = '\\';
		if (c == '\n')
			*o++ = 'n';
		else if (c == '\t')
			*o++ = 't';
		else if (c == '"' || c == '\\')
			*o++ = (char)c;
		else
			return 0;
	}
	*o++ = '"';
	used(w, o);
	return 1;
}

/*
 * Write n bytes of str double-quoted: plain bytes and valid UTF-8 as they
 * are, '"', '\\' and special code points through escape(), an invalid
 * byte as U+FFFD.  JSON strings and YAML double-quoted scalars differ
 * only in their escapes.
 */
static void quoted(struct wr *w, const char *str, size_t n,
		   void (*escape)(struct wr *, uint32_t))
{
	const unsigned char *s = (const unsigned char *)str;
	const unsigned char *end = s + n, *run = s;
	uint32_t cp;
	size_t k;

	if (n >= 16 && quoted_fast(w, str, n))
		return;
	if (n < 16) {
		/* Most strings are short keys and words with nothing to
		 * escape: one pass over the bytes, one copy. */
		char *o = room(w, n + 2);
		size_t i = 0;

		while (o && i < n && bclass[s[i]] <= B_INDICATOR)
			i++;
		if (o && i == n) {
			o[0] = '"';
			memcpy(o + 1, str, n);
			o[n + 1] = '"';
			used(w, o + n + 2);
			return;
		}
	}
	putc1(w, '"');
	while (s < end) {
		unsigned char c;

		while (end - s >= 16) {
			unsigned m = care16(hb_v16_load(s));

			if (m) {
				s += hb_v16_first(m);
				break;
			}
			s += 16;
		}
		if (s == end)
			break;
		c = *s;
		if (bclass[c] <= B_INDICATOR) {
			s++;
			continue;
		}
		/* The escapes JSON and YAML write alike. */
		if (c == '\n' || c == '"' || c == '\\' || c == '\t') {
			char t[2] = { '\\', c == '\n'	? 'n'
					    : c == '\t' ? 't'
							: (char)c };

			put(w, (const char *)run, (size_t)(s - run));
			put(w, t, 2);
			run = ++s;
			continue;
		}
		k = c < 0x80 ? 1 : utf8_dec(s, (size_t)(end - s), &cp);
		if (c < 0x80)
			cp = c;
		if (k && !cp_special(cp) && c != '"' && c != '\\') {
			s += k;
			continue;
		}
		put(w, (const char *)run, (size_t)(s - run));
		if (!k) {
			PUTS(w, "\xef\xbf\xbd"); /* U+FFFD for a bad byte */
			k = 1;
		} else {
			escape(w, cp);
		}
		s += k;
		run = s;
	}
	put(w, (const char *)run, (size_t)(s - run));
	putc1(w, '"');
}

static void json_string(struct wr *w, const char *str)
{
	if (!str)
		str = "";
	quoted(w, str, strlen(str), json_escape);
}

/* Integer text of v (|v| <= 2^53); returns its length. */
static size_t fmt_int(double d, char *out)
{
	char tmp[24];
	size_t i = sizeof(tmp), n = 0;
	uint64_t v;
	int neg = d < 0;

	v = (uint64_t)(neg ? -d : d);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		out[n++] = '-';
	hb_copy(out + n, tmp + i, sizeof(tmp) - i);
	return n + sizeof(tmp) - i;
}

/*
 * Number text that reads back as the same double: integers as integers,
 * other values in the shortest of %.15g/%.16g/%.17g that round-trips,
 * always with a '.' or an exponent so it reads back as a float.
 * Returns the length, or 0 for NaN and infinities.
 */
static size_t fmt_number(double d, char out[40])
{
	int prec, n = 0;

	if (isnan(d) || isinf(d))
		return 0;
	if (d == trunc(d) && fabs(d) <= (double)INT_LIMIT)
		return fmt_int(d, out);
	for (prec = 15; prec <= 17; prec++) {
		n = snprintf(out, 40, "%.*g", prec, d);
		if (n <= 0 || n >= 36)
			return 0;
		if (strtod(out, NULL) == d)
			break;
	}
	if (!strpbrk(out, ".e")) {
		out[n++] = '.';
		out[n++] = '0';
		out[n] = '\0';
	}
	return (size_t)n;
}

static void json_value(struct wr *w, const cJSON *v, int depth)
{
	const cJSON *c;
	char num[40];
	size_t n;

	if (w->rc)
		return;
	if (depth > HB_DOC_MAX_DEPTH) {
		w->rc = HB_ETOOBIG;
		return;
	}
	switch (v->type & 0xFF) {
	case cJSON_False:
		PUTS(w, "false");
		return;
	case cJSON_True:
		PUTS(w, "true");
		return;
	case cJSON_NULL:
		PUTS(w, "null");
		return;
	case cJSON_Number:
		n = fmt_number(v->valuedouble, num);
		if (!n) {
			w->rc = HB_EUNSUP; /* JSON has no NaN or infinity */
			return;
		}
		put(w, num, n);
		return;
	case cJSON_String:
		json_string(w, v->valuestring);
		return;
	case cJSON_Array:
	case cJSON_Object: {
		int obj = (v->type & 0xFF) == cJSON_Object;

		if (!v->child) {
			if (obj)
				PUTS(w, "{}");
			else
				PUTS(w, "[]");
			return;
		}
		putc1(w, obj ? '{' : '[');
		for (c = v->child; c && !w->rc; c = c->next) {
			if (!w->compact) {
				putc1(w, '\n');
				indent(w, 2 * (depth + 1));
			}
			if (obj) {
				json_string(w, c->string);
				if (w->compact)
					putc1(w, ':');
				else
					PUTS(w, ": ");
			}
			json_value(w, c, depth + 1);
			if (c->next)
				putc1(w, ',');
		}
		if (!w->compact) {
			putc1(w, '\n');
			indent(w, 2 * depth);
		}
		putc1(w, obj ? '}' : ']');
		return;
	}
	default:
		w->rc = HB_EUNSUP; /* cJSON_Raw or invalid */
		return;
	}
}

static int finish(struct wr *w, size_t start)
{
	if (w->rc && w->b->data)
		w->b->len = start;
	if (w->b->data)
		w->b->data[w->b->len] = '\0';
	return w->rc;
}

static int write_json(const cJSON *doc, struct hb_buf *out, int compact)
{
	struct wr w = {out, 0, compact};
	size_t start = out->len;

	if (!doc)
		return HB_EINVAL;
	json_value(&w, doc, 0);
	if (!compact)
		putc1(&w, '\n');
	return finish(&w, start);
}

int hb_doc_write_json(const cJSON *doc, struct hb_buf *out)
{
	return write_json(doc, out, 0);
}

int hb_doc_write_json_compact(const cJSON *doc, struct hb_buf *out)
{
	return write_json(doc, out, 1);
}

/* -- YAML ----------------------------------------------------------- */

/*
 * Whether s (n bytes, n <= 5) is, ignoring ASCII case, one of the words
 * YAML reads as a boolean, null, infinity, not-a-number or merge key.
 */
static int typed_word(const char *s, size_t n)
{
	char l[5];

	if (n > sizeof(l))
		return 0;

	for (size_t i = 0; i < n; i++)
		l[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a'
							 : s[i]);
#define IS(w) (!memcmp(l, w, sizeof(w) - 1))
	switch (n) {
	case 1:
		return l[0] == 'y' || l[0] == 'n' || l[0] == '~' || l[0] == '=';
	case 2:
		return IS("no") || IS("on") || IS("<<");
	case 3:
		return IS("yes") || IS("off");
	case 4:
		return IS("true") || IS("null") || IS(".inf") || IS(".nan");
	case 5:
		return IS("false") || IS("-.inf") || IS("+.inf");
	}
#undef IS
	return 0;
}

/*
 * Would this plain text read back as something other than a string, in
 * YAML 1.2 (core schema) or YAML 1.1 (which kubectl and most tools still
 * speak: yes/no/on/off, 0b/octal/sexagesimal numbers, dates)?
 */
static int looks_typed(const char *s, size_t n)
{
	/* What a number, date or time may hold besides digits and hex
	 * letters (as strchr() would see them, the NUL included). */
	static const unsigned char num_extra[256] = {
		[0] = 1,   ['x'] = 1, ['X'] = 1, ['o'] = 1,
		['O'] = 1, ['b'] = 1, ['B'] = 1, ['_'] = 1,
		['.'] = 1, [':'] = 1, ['+'] = 1, ['-'] = 1,
	};
	size_t i;

	if (n <= 5 && typed_word(s, n))
		return 1;
	i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
	if (i >= n || !(is_digit(s[i]) || s[i] == '.'))
		return 0;
	/* a digit or '.' first: quote unless it holds a character no
	 * number, date or time could */
	for (; i < n; i++) {
		char c = s[i];

		if (!(is_digit(c) || hexval((unsigned char)c) >= 0 ||
		      num_extra[(unsigned char)c]))
			return 0;
	}
	return 1;
}

enum sstyle { S_PLAIN, S_DQUOTE, S_LITERAL };

/* Characters a plain scalar may not start with. */
static const unsigned char lead_indicator[256] = {
    ['?'] = 1, [':'] = 1,  [','] = 1, ['['] = 1, [']'] = 1, ['{'] = 1,
    ['}'] = 1, ['#'] = 1,  ['&'] = 1, ['*'] = 1, ['!'] = 1, ['|'] = 1,
    ['>'] = 1, ['\''] = 1, ['"'] = 1, ['%'] = 1, ['@'] = 1, ['`'] = 1,
};

/* As care16(), for what string_style() looks at: control bytes, DEL,
 * non-ASCII, ':' and '#'. */
static inline unsigned yaml_care16(hb_v16 x)
{
	return hb_v16_mask(hb_v16_or(
		hb_v16_ctl(x), hb_v16_or(hb_v16_eq(x, ':'), hb_v16_eq(x, '#'))));
}

/* As yaml_care16(), once a string is known to be neither plain nor free
 * of newlines: only what forces double quotes is left to find (control
 * bytes other than newline and tab, DEL, non-ASCII). */
static inline unsigned rare16(hb_v16 x)
{
	return hb_v16_mask(hb_v16_andnot(
		hb_v16_ctl(x), hb_v16_or(hb_v16_eq(x, '\n'), hb_v16_eq(x, '\t'))));
}

/* How a string must be written (keys never use literal blocks). */
static enum sstyle string_style(const char *str, size_t n, int key)
{
	const unsigned char *s = (const unsigned char *)str;
	int plain = 1, literal = 1, nl = 0;
	size_t i, k, done = 0;
	uint32_t cp;

	if (n == 0)
		return S_DQUOTE;
	if (s[0] == ' ' || s[n - 1] == ' ')
		plain = 0;
	else if (lead_indicator[s[0]])
		plain = 0;
	else if (s[0] == '-' &&
		 (n == 1 || !((s[1] >= 'a' && s[1] <= 'z') ||
			      (s[1] >= 'A' && s[1] <= 'Z') || s[1] == '-')))
		plain = 0;
	else if (n >= 3 && (!memcmp(s, "---", 3) || !memcmp(s, "...", 3)))
		plain = 0;
	else if (s[n - 1] == ':')
		plain = 0;
	/* Sixteen bytes at a time (the last few padded to a block),
	 * visiting only the bytes that matter.  done: bytes
	 * before it belong to a character already read. */
	for (i = 0; i < n; i += 16) {
		size_t left = n - i;
		hb_v16 x = left >= 16 ? hb_v16_load(s + i)
				      : hb_v16_load_tail(s + i, left);
		unsigned m = !plain && nl ? rare16(x) : yaml_care16(x);

		if (left < 16)
			m &= (1u << left) - 1;
		for (; m; m &= m - 1) {
			size_t at = i + hb_v16_first(m);
			unsigned char c = s[at];

			if (at < done)
				continue;
			if (c == ':') {
				if (at + 1 < n && s[at + 1] == ' ')
					plain = 0;
			} else if (c == '#') {
				if (at > 0 && s[at - 1] == ' ')
					plain = 0;
			} else if (c == '\n') {
				plain = 0;
				nl = 1;
			} else if (c == '\t') {
				/* Content may hold tabs after a block's
				 * indentation; a plain scalar may not. */
				plain = 0;
			} else if (c < 0x80) {
				return S_DQUOTE; /* CR, other controls, DEL */
			} else {
				k = utf8_dec(s + at, n - at, &cp);
				if (!k || cp_special(cp))
					return S_DQUOTE;
				done = at + k;
			}
		}
	}
	if (plain && !looks_typed(str, n))
		return key && n > 1000 ? S_DQUOTE : S_PLAIN;
	if (!nl || key)
		return S_DQUOTE;
	/* a literal block: the first non-empty line sets the indentation,
	 * so it may not start with a space or tab; and there must be one */
	for (i = 0; i < n && s[i] == '\n'; i++)
		;
	if (i == n || s[i] == ' ' || s[i] == '\t')
		literal = 0;
	return literal ? S_LITERAL : S_DQUOTE;
}

/* The YAML double-quoted escape of code point cp. */
static void yaml_escape(struct wr *w, uint32_t cp)
{
	char t[4];

	switch (cp) {
	case '"':
		PUTS(w, "\\\"");
		break;
	case '\\':
		PUTS(w, "\\\\");
		break;
	case '\t':
		PUTS(w, "\\t");
		break;
	case '\n':
		PUTS(w, "\\n");
		break;
	case '\r':
		PUTS(w, "\\r");
		break;
	case 0x85:
		PUTS(w, "\\N");
		break;
	case 0x2028:
		PUTS(w, "\\L");
		break;
	case 0x2029:
		PUTS(w, "\\P");
		break;
	default:
		if (cp < 0x100) {
			t[0] = '\\';
			t[1] = 'x';
			t[2] = hexdig[cp >> 4];
			t[3] = hexdig[cp & 15];
			put(w, t, 4);
		} else {
			put_u4(w, cp);
		}
		break;
	}
}

static void yaml_dquote(struct wr *w, const char *str, size_t n)
{
	quoted(w, str, n, yaml_escape);
}

/*
 * The lines of a literal block's first core bytes, each non-empty one
 * indented by ind, each ended by a newline, written at o (which has room
 * for them and 16 bytes to spare).  Returns the end.
 */
static char *literal_lines(char *o, const char *s, size_t core, size_t ind)
{
	const char *p = s, *end = s + core;

	if (p < end && *p != '\n') {
		hb_copy(o, spaces, ind);
		o += ind;
	}
	while (p < end) {
		if (end - p >= 16) {
			unsigned m =
				hb_v16_mask(hb_v16_eq(hb_v16_load(p), '\n'));

			memcpy(o, p, 16);
			if (!m) {
				o += 16;
				p += 16;
				continue;
			}
			o += hb_v16_first(m);
			p += hb_v16_first(m);
		} else {
			const char *nl = memchr(p, '\n', (size_t)(end - p));

			if (!nl) {
				hb_copy(o, p, (size_t)(end - p));
				o += end - p;
				break;
			}
			hb_copy(o, p, (size_t)(nl - p));
			o += nl - p;
			p = nl;
		}
		*o++ = '\n'; /* *p is the newline */
		p++;
		if (p < end && *p != '\n') {
			hb_copy(o, spaces, ind);
			o += ind;
		}
	}
	*o++ = '\n';
	return o;
}

static void yaml_literal(struct wr *w, const char *s, size_t n, int ind)
{
	size_t core = n, trail, i, start;
	char *o;

	while (core > 0 && s[core - 1] == '\n')
		core--;
	trail = n - core;
	if (trail == 0)
		PUTS(w, "|-\n");
	else if (trail == 1)
		PUTS(w, "|\n");
	else
		PUTS(w, "|+\n");
	if (ind >= 0 && ind <= 64 && core <= SIZE_MAX / 128 &&
	    (o = room(w, core + 1 + (core + 1) * (size_t)ind + trail + 16))) {
		o = literal_lines(o, s, core, (size_t)ind);
		for (i = 1; i < trail; i++)
			*o++ = '\n';
		used(w, o);
		return;
	}
	for (start = 0; start <= core; start = i + 1) {
		const char *nl = memchr(s + start, '\n', core - start);

		i = nl ? (size_t)(nl - s) : core;
		if (i > start)
			indent(w, ind);
		put(w, s + start, i - start);
		putc1(w, '\n');
	}
	for (i = 1; i < trail; i++)
		putc1(w, '\n');
}

/* A scalar and its newline.  ind: column for literal block content. */
static void yaml_scalar(struct wr *w, const cJSON *v, int ind)
{
	char num[40];
	size_t n;

	switch (v->type & 0xFF) {
	case cJSON_False:
		PUTS(w, "false\n");
		return;
	case cJSON_True:
		PUTS(w, "true\n");
		return;
	case cJSON_NULL:
		PUTS(w, "null\n");
		return;
	case cJSON_Number:
		n = fmt_number(v->valuedouble, num);
		if (n)
			put(w, num, n);
		else if (isnan(v->valuedouble))
			PUTS(w, ".nan");
		else if (v->valuedouble < 0)
			PUTS(w, "-.inf");
		else
			PUTS(w, ".inf");
		putc1(w, '\n');
		return;
	case cJSON_String: {
		const char *s = v->valuestring ? v->valuestring : "";

		n = strlen(s);
		switch (string_style(s, n, 0)) {
		case S_PLAIN:
			put(w, s, n);
			break;
		case S_DQUOTE:
			yaml_dquote(w, s, n);
			break;
		case S_LITERAL:
			yaml_literal(w, s, n, ind);
			return;
		}
		putc1(w, '\n');
		return;
	}
	case cJSON_Object:
		PUTS(w, "{}\n");
		return;
	case cJSON_Array:
		PUTS(w, "[]\n");
		return;
	default:
		w->rc = HB_EUNSUP;
		return;
	}
}

static void yaml_seq(struct wr *w, const cJSON *v, int ind, int inl, int depth);
static void yaml_map(struct wr *w, const cJSON *v, int ind, int inl, int depth);

static int nonempty(const cJSON *v, int type)
{
	return (v->type & 0xFF) == type && v->child;
}

/* What follows "key:" at column ind: the value and its newline(s). */
static void yaml_member_value(struct wr *w, const cJSON *v, int ind, int depth)
{
	if (nonempty(v, cJSON_Object)) {
		putc1(w, '\n');
		yaml_map(w, v, ind + 2, 0, depth + 1);
	} else if (nonempty(v, cJSON_Array)) {
		putc1(w, '\n');
		yaml_seq(w, v, ind, 0, depth + 1); /* kubectl style */
	} else {
		putc1(w, ' ');
		yaml_scalar(w, v, ind + 2);
	}
}

/*
 * A mapping at column ind.  inl: the first key goes right here (after
 * "- "), the others get indented.
 */
static void yaml_map(struct wr *w, const cJSON *v, int ind, int inl, int depth)
{
	const cJSON *c;

	if (depth > HB_DOC_MAX_DEPTH) {
		w->rc = HB_ETOOBIG;
		return;
	}
	for (c = v->child; c && !w->rc; c = c->next) {
		const char *k = c->string ? c->string : "";
		size_t n = strlen(k);
		enum sstyle st = string_style(k, n, 1);

		if (c != v->child || !inl)
			indent(w, ind);
		if (st == S_PLAIN) {
			put(w, k, n);
			putc1(w, ':');
		} else if (n <= 160) {
			yaml_dquote(w, k, n);
			putc1(w, ':');
		} else {
			/* too long for a simple key: "? key" / ": value" */
			PUTS(w, "? ");
			yaml_dquote(w, k, n);
			putc1(w, '\n');
			indent(w, ind);
			putc1(w, ':');
		}
		yaml_member_value(w, c, ind, depth);
	}
}

/* A sequence at column ind; inl as for yaml_map. */
static void yaml_seq(struct wr *w, const cJSON *v, int ind, int inl, int depth)
{
	const cJSON *c;

	if (depth > HB_DOC_MAX_DEPTH) {
		w->rc = HB_ETOOBIG;
		return;
	}
	for (c = v->child; c && !w->rc; c = c->next) {
		if (c != v->child || !inl)
			indent(w, ind);
		PUTS(w, "- ");
		if (nonempty(c, cJSON_Object))
			yaml_map(w, c, ind + 2, 1, depth + 1);
		else if (nonempty(c, cJSON_Array))
			yaml_seq(w, c, ind + 2, 1, depth + 1);
		else
			yaml_scalar(w, c, ind + 2);
	}
}

static void yaml_root(struct wr *w, const cJSON *doc)
{
	if (nonempty(doc, cJSON_Object))
		yaml_map(w, doc, 0, 0, 1);
	else if (nonempty(doc, cJSON_Array))
		yaml_seq(w, doc, 0, 0, 1);
	else
		yaml_scalar(w, doc, 2);
}

int hb_doc_write_yaml(const cJSON *doc, struct hb_buf *out)
{
	struct wr w = {out, 0};
	size_t start = out->len;

	if (!doc)
		return HB_EINVAL;
	yaml_root(&w, doc);
	return finish(&w, start);
}

int hb_doc_write_yaml_stream(const cJSON *docs, struct hb_buf *out)
{
	struct wr w = {out, 0};
	size_t start = out->len;
	const cJSON *c;

	if (!cJSON_IsArray(docs))
		return HB_EINVAL;
	for (c = docs->child; c && !w.rc; c = c->next) {
		PUTS(&w, "---\n");
		yaml_root(&w, c);
	}
	return finish(&w, start);
}

/* ------------------------------------------------------------------ */
/* The streaming writer                                                */
/* ------------------------------------------------------------------ */

/*
 * Each back end reproduces its tree writer above byte for byte: what the
 * tree writers decide by looking at a node's children (whether a
 * container is empty, whether a member is the first) is decided here when
 * the first child arrives or the container ends.
 */

/* Where a container sits in its parent (YAML). */
enum { AT_ROOT, AT_MEMBER, AT_ITEM };

#define FRAMES (HB_DOC_MAX_DEPTH + 2)

struct efr {
	cJSON *node; /* tree back end: the container */
	uint32_t n;  /* children so far */
	uint8_t obj; /* an object (else an array) */
	uint8_t at;  /* AT_* */
	uint8_t inl; /* YAML: first key or item right after "- " */
	int ind;     /* YAML: column of the children */
};

struct hb_emit {
	enum hb_emit_format fmt;
	struct wr w;	  /* JSON and YAML: the output and the sticky code */
	size_t start;	  /* out->len at the document's first event */
	int depth;	  /* open containers */
	int began, ended; /* the root value began, and is complete */
	cJSON *root;	  /* tree back end: the document being built */
	cJSON *tree;	  /* and the last one ended */
	struct efr st[FRAMES];
};

static struct hb_buf no_buf;

struct hb_emit *hb_emit_new(enum hb_emit_format fmt, struct hb_buf *out)
{
	struct hb_emit *e;

	if (fmt != HB_EMIT_JSON && fmt != HB_EMIT_JSON_COMPACT &&
	    fmt != HB_EMIT_YAML && fmt != HB_EMIT_TREE)
		return NULL;
	if (fmt != HB_EMIT_TREE && !out)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->fmt = fmt;
	e->w.b = out ? out : &no_buf;
	return e;
}

void hb_emit_free(struct hb_emit *e)
{
	if (!e)
		return;
	cJSON_Delete(e->root);
	cJSON_Delete(e->tree);
	free(e);
}

int hb_emit_status(const struct hb_emit *e)
{
	return e ? e->w.rc : HB_EINVAL;
}

static void fail(struct hb_emit *e, int code)
{
	if (!e->w.rc)
		e->w.rc = code;
}

/* The frame of the innermost open container, or NULL at the root. */
static struct efr *top(struct hb_emit *e)
{
	return e->depth ? &e->st[e->depth - 1] : NULL;
}

/* Whether a key (or short string) of n bytes is written as it is between
 * JSON quotes: no byte that needs care. */
static inline int json_plain(const char *k, size_t n)
{
	const unsigned char *s = (const unsigned char *)k;
	size_t i = 0;

	for (; n - i >= 16; i += 16)
		if (care16(hb_v16_load(s + i)))
			return 0;
	return i == n ||
	       !(care16(hb_v16_load_tail(s + i, n - i)) & ((1u << (n - i)) - 1));
}

/*
 * The separator, indentation and plain key of a JSON value in one piece,
 * followed by v (vn bytes, already known to need no escape, between
 * quotes) when v is not NULL.  Returns 0 when it is not that simple, and
 * nothing is written.
 */
static int json_fast(struct hb_emit *e, struct efr *p, const char *key,
		     size_t kl, const char *v, size_t vn)
{
	int compact = e->fmt == HB_EMIT_JSON_COMPACT;
	size_t ind = compact ? 0 : 2 * (size_t)e->depth;
	char *o;

	if (!p || ind > 64 || e->depth > HB_DOC_MAX_DEPTH)
		return 0;
	o = room(&e->w, 2 + ind + (p->obj ? kl + 4 : 0) + (v ? vn + 2 : 0));
	if (!o)
		return 0;
	*o++ = p->n ? ',' : p->obj ? '{' : '[';
	if (!compact) {
		*o++ = '\n';
		hb_copy(o, spaces, ind);
		o += ind;
	}
	if (p->obj) {
		*o++ = '"';
		hb_copy(o, key, kl);
		o += kl;
		memcpy(o, "\": ", 3);
		o += compact ? 2 : 3;
	}
	if (v) {
		*o++ = '"';
		hb_copy(o, v, vn);
		o += vn;
		*o++ = '"';
	}
	used(&e->w, o);
	return 1;
}

/* The key of a JSON member, if it is a short plain one: its length, or
 * (size_t)-1. */
static size_t json_simple_key(const struct efr *p, const char **key)
{
	size_t kl;

	if (!p || !p->obj)
		return 0;
	if (!*key)
		*key = "";
	kl = strlen(*key);
	return kl <= 64 && json_plain(*key, kl) ? kl : (size_t)-1;
}

/* What comes before a value in its parent p (NULL: the root): the
 * separator, the indentation and the key. */
static void json_pre(struct hb_emit *e, struct efr *p, const char *key)
{
	struct wr *w = &e->w;
	size_t kl, ind = 2 * (size_t)e->depth;

	if (!p)
		return;
	kl = json_simple_key(p, &key);
	if (kl != (size_t)-1 && json_fast(e, p, key, kl, NULL, 0)) {
		/* the usual case, in one piece */
	} else {
		if (p->obj) {
			if (!key)
				key = "";
			kl = strlen(key);
		}
		int compact = e->fmt == HB_EMIT_JSON_COMPACT;

		if (p->n == 0)
			put(w, p->obj ? "{\n" : "[\n", compact ? 1 : 2);
		else
			put(w, ",\n", compact ? 1 : 2);
		if (!compact)
			indent(w, (int)ind);
		if (p->obj) {
			quoted(w, key, kl, json_escape);
			put(w, ": ", compact ? 1 : 2);
		}
	}
	if (e->depth > HB_DOC_MAX_DEPTH)
		fail(e, HB_ETOOBIG);
}

/* A container's first child: what its parent left for later. */
static void yaml_open(struct hb_emit *e, struct efr *f)
{
	if (f->at == AT_MEMBER)
		putc1(&e->w, '\n');
	if (e->depth > HB_DOC_MAX_DEPTH) /* depth == the frame's level */
		fail(e, HB_ETOOBIG);
}

/*
 * The length of a key string_style() would write plain, seen without it:
 * a letter, then letters, digits and "_./-", at most 64 bytes, and not a
 * word YAML reads as something else.  0 when it is not that simple.
 */
static size_t simple_key(const char *k)
{
	size_t n = strlen(k);

	if (!n || n > 64 ||
	    !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z')))
		return 0;
	for (size_t i = 0; i < n; i += 16) {
		size_t left = n - i;
		hb_v16 x = left >= 16 ? hb_v16_load(k + i)
				      : hb_v16_load_tail(k + i, left);
		unsigned want = left >= 16 ? 0xffffu : (1u << left) - 1;
		unsigned ok = hb_v16_mask(hb_v16_or(
			hb_v16_or(hb_v16_alpha(x), hb_v16_range(x, '-', '9')),
			hb_v16_eq(x, '_')));

		if ((ok & want) != want)
			return 0;
	}
	/* letter first: only the short words can look typed */
	return n > 5 || !typed_word(k, n) ? n : 0;
}

/* The key of a mapping member, and the ':' after it (yaml_map). */
static void yaml_key(struct wr *w, const char *k, int ind)
{
	size_t n;
	enum sstyle st;

	if (!k)
		k = "";
	n = strlen(k);
	st = string_style(k, n, 1);
	if (st == S_PLAIN) {
		put(w, k, n);
		putc1(w, ':');
	} else if (n <= 160) {
		yaml_dquote(w, k, n);
		putc1(w, ':');
	} else {
		PUTS(w, "? ");
		yaml_dquote(w, k, n);
		putc1(w, '\n');
		indent(w, ind);
		putc1(w, ':');
	}
}

/*
 * What comes before a value: indentation, and the key and ':' or "- ".
 * scalar: a scalar follows on this line (a space after the ':').  When
 * plain is not NULL it is that scalar, to be written plain with its
 * newline: done here when the key is simple (returns -1), else left to
 * the caller.  Returns the column for a literal block's lines.
 */
static int yaml_pre(struct hb_emit *e, struct efr *p, const char *key,
		    int scalar, const char *plain, size_t pn)
{
	struct wr *w = &e->w;
	size_t ind, kl;
	char *o;

	if (!p)
		return 2;
	if (p->n == 0)
		yaml_open(e, p);
	ind = p->n != 0 || !p->inl ? (size_t)p->ind : 0;
	if (p->obj && key && ind <= 64 && (kl = simple_key(key)) &&
	    (o = room(w, ind + kl + 2 + (plain ? pn + 1 : 0)))) {
		/* The usual case in one piece. */
		hb_copy(o, spaces, ind);
		o += ind;
		hb_copy(o, key, kl);
		o += kl;
		*o++ = ':';
		if (scalar)
			*o++ = ' ';
		if (plain) {
			hb_copy(o, plain, pn);
			o += pn;
			*o++ = '\n';
		}
		used(w, o);
		return plain ? -1 : p->ind + 2;
	}
	indent(w, (int)ind);
	if (p->obj) {
		yaml_key(w, key, p->ind);
		if (scalar)
			putc1(w, ' ');
	} else {
		PUTS(w, "- ");
	}
	return p->ind + 2;
}

/* Common to every value: returns the parent frame, or NULL with *ok 0
 * when the value cannot be written. */
static struct efr *value_begin(struct hb_emit *e, int *ok)
{
	struct efr *p = top(e);

	*ok = 0;
	if (e->ended || (!p && e->began)) {
		fail(e, HB_EINVAL); /* a second root value */
		return NULL;
	}
	if (!e->began)
		e->start = e->w.b->len; /* what an error rolls back to */
	e->began = 1;
	if (!p)
		e->ended = 1; /* a root scalar; a container clears it */
	if (e->w.rc)
		return NULL;
	*ok = 1;
	return p;
}

static void tree_add(struct hb_emit *e, struct efr *p, const char *key,
		     cJSON *node)
{
	if (!node) {
		fail(e, HB_ENOMEM);
		return;
	}
	if (e->fmt == HB_EMIT_TREE && e->depth > HB_DOC_MAX_DEPTH) {
		cJSON_Delete(node);
		fail(e, HB_ETOOBIG);
		return;
	}
	if (!p) {
		e->root = node;
		return;
	}
	if (p->obj ? !cJSON_AddItemToObject(p->node, key ? key : "", node)
		   : !cJSON_AddItemToArray(p->node, node)) {
		cJSON_Delete(node);
		fail(e, HB_ENOMEM);
	}
}

static int container(struct hb_emit *e, const char *key, int obj)
{
	int ok;
	struct efr *p = value_begin(e, &ok), *f;

	if (!p)
		e->ended = 0;
	if (ok) {
		cJSON *node = NULL;

		switch (e->fmt) {
		case HB_EMIT_JSON:
		case HB_EMIT_JSON_COMPACT:
			json_pre(e, p, key);
			break;
		case HB_EMIT_YAML:
			yaml_pre(e, p, key, 0, NULL, 0);
			break;
		case HB_EMIT_TREE:
			node = obj ? cJSON_CreateObject() : cJSON_CreateArray();
			tree_add(e, p, key, node);
			break;
		}
		if (p)
			p->n++;
		if (!e->w.rc && e->depth < FRAMES) {
			f = &e->st[e->depth];
			memset(f, 0, sizeof(*f));
			f->obj = (uint8_t)obj;
			f->node = node;
			if (!p) {
				f->at = AT_ROOT;
			} else if (p->obj) {
				f->at = AT_MEMBER;
				f->ind = obj ? p->ind + 2 : p->ind;
			} else {
				f->at = AT_ITEM;
				f->ind = p->ind + 2;
				f->inl = 1;
			}
		} else {
			fail(e, HB_ETOOBIG);
		}
	}
	e->depth++;
	return e->w.rc;
}

int hb_emit_obj(struct hb_emit *e, const char *key)
{
	return container(e, key, 1);
}

int hb_emit_arr(struct hb_emit *e, const char *key)
{
	return container(e, key, 0);
}

int hb_emit_end(struct hb_emit *e)
{
	struct efr *f;

	if (e->depth == 0) {
		fail(e, HB_EINVAL);
		return e->w.rc;
	}
	e->depth--;
	if (e->depth == 0)
		e->ended = 1;
	if (e->w.rc)
		return e->w.rc;
	f = &e->st[e->depth];
	switch (e->fmt) {
	case HB_EMIT_JSON_COMPACT:
		if (f->n)
			putc1(&e->w, f->obj ? '}' : ']');
		else
			put(&e->w, f->obj ? "{}" : "[]", 2);
		break;
	case HB_EMIT_JSON: {
		size_t ind = 2 * (size_t)e->depth;
		char *o;

		if (!f->n) {
			put(&e->w, f->obj ? "{}" : "[]", 2);
		} else if (ind <= 64 && (o = room(&e->w, ind + 2))) {
			*o++ = '\n';
			hb_copy(o, spaces, ind);
			o += ind;
			*o++ = f->obj ? '}' : ']';
			used(&e->w, o);
		} else {
			putc1(&e->w, '\n');
			indent(&e->w, (int)ind);
			putc1(&e->w, f->obj ? '}' : ']');
		}
		break;
	}
	case HB_EMIT_YAML:
		if (f->n)
			break;
		if (f->at == AT_MEMBER)
			putc1(&e->w, ' ');
		put(&e->w, f->obj ? "{}\n" : "[]\n", 3);
		break;
	case HB_EMIT_TREE:
		break;
	}
	return e->w.rc;
}

/* A string of n bytes (no NUL among them). */
int hb_emit_strn(struct hb_emit *e, const char *key, const char *s, size_t n)
{
	int ok, ind;
	enum sstyle style;
	struct efr *p = value_begin(e, &ok);
	cJSON *node;

	if (!ok)
		return e->w.rc;
	if (!s) {
		s = "";
		n = 0;
	}
	switch (e->fmt) {
	case HB_EMIT_JSON:
	case HB_EMIT_JSON_COMPACT: {
		size_t kl = json_simple_key(p, &key);

		if (kl != (size_t)-1 && n <= 256 && json_plain(s, n) &&
		    json_fast(e, p, key, kl, s, n))
			break;
		json_pre(e, p, key);
		quoted(&e->w, s, n, json_escape);
		break;
	}
	case HB_EMIT_YAML:
		style = string_style(s, n, 0);
		ind = yaml_pre(e, p, key, 1, style == S_PLAIN ? s : NULL, n);
		if (ind < 0)
			break;
		switch (style) {
		case S_PLAIN:
			put(&e->w, s, n);
			break;
		case S_DQUOTE:
			yaml_dquote(&e->w, s, n);
			break;
		case S_LITERAL:
			yaml_literal(&e->w, s, n, ind);
			goto counted;
		}
		putc1(&e->w, '\n');
		break;
	case HB_EMIT_TREE:
		node = cJSON_CreateString("");
		if (node && n) {
			char *v = cJSON_malloc(n + 1);

			if (!v) {
				cJSON_Delete(node);
				node = NULL;
			} else {
				memcpy(v, s, n);
				v[n] = '\0';
				cJSON_free(node->valuestring);
				node->valuestring = v;
			}
		}
		tree_add(e, p, key, node);
		break;
	}
counted:
	if (p)
		p->n++;
	return e->w.rc;
}

int hb_emit_str(struct hb_emit *e, const char *key, const char *s)
{
	return hb_emit_strn(e, key, s, s ? strlen(s) : 0);
}

int hb_emit_str_or_null(struct hb_emit *e, const char *key, const char *s)
{
	return s ? hb_emit_str(e, key, s) : hb_emit_null(e, key);
}

/* A scalar written as it is: "true", "false", "null" or a number. */
static int word(struct hb_emit *e, const char *key, const char *text, size_t n,
		cJSON *node)
{
	int ok;
	struct efr *p = value_begin(e, &ok);

	if (!ok) {
		cJSON_Delete(node);
		return e->w.rc;
	}
	switch (e->fmt) {
	case HB_EMIT_JSON:
	case HB_EMIT_JSON_COMPACT:
		json_pre(e, p, key);
		if (!n)
			fail(e, HB_EUNSUP); /* JSON has no NaN or infinity */
		else
			put(&e->w, text, n);
		break;
	case HB_EMIT_YAML:
		yaml_pre(e, p, key, 1, NULL, 0);
		put(&e->w, text, n);
		putc1(&e->w, '\n');
		break;
	case HB_EMIT_TREE:
		tree_add(e, p, key, node);
		node = NULL;
		break;
	}
	cJSON_Delete(node);
	if (p)
		p->n++;
	return e->w.rc;
}

int hb_emit_num(struct hb_emit *e, const char *key, double v)
{
	char num[40];
	size_t n = fmt_number(v, num);
	cJSON *node = e->fmt == HB_EMIT_TREE ? cJSON_CreateNumber(v) : NULL;

	if (!n && e->fmt == HB_EMIT_YAML) {
		const char *t = isnan(v) ? ".nan" : v < 0 ? "-.inf" : ".inf";

		n = strlen(t);
		memcpy(num, t, n);
	}
	return word(e, key, num, n, node);
}

int hb_emit_bool(struct hb_emit *e, const char *key, int v)
{
	cJSON *node = e->fmt == HB_EMIT_TREE ? cJSON_CreateBool(v) : NULL;

	return v ? word(e, key, "true", 4, node)
		 : word(e, key, "false", 5, node);
}

int hb_emit_null(struct hb_emit *e, const char *key)
{
	cJSON *node = e->fmt == HB_EMIT_TREE ? cJSON_CreateNull() : NULL;

	return word(e, key, "null", 4, node);
}

int hb_emit_tree(struct hb_emit *e, const char *key, const cJSON *v)
{
	const cJSON *c;

	if (!v) {
		fail(e, HB_EINVAL);
		return e->w.rc;
	}
	switch (v->type & 0xFF) {
	case cJSON_False:
		return hb_emit_bool(e, key, 0);
	case cJSON_True:
		return hb_emit_bool(e, key, 1);
	case cJSON_NULL:
		return hb_emit_null(e, key);
	case cJSON_Number:
		return hb_emit_num(e, key, v->valuedouble);
	case cJSON_String:
		return hb_emit_str(e, key, v->valuestring);
	case cJSON_Array:
	case cJSON_Object:
		container(e, key, (v->type & 0xFF) == cJSON_Object);
		for (c = v->child; c && !e->w.rc; c = c->next)
			hb_emit_tree(e, c->string ? c->string : "", c);
		return hb_emit_end(e);
	default:
		/* cJSON_Raw or invalid, as the tree writers refuse them */
		fail(e, HB_EUNSUP);
		return e->w.rc;
	}
}

int hb_emit_done(struct hb_emit *e)
{
	int rc;

	if (!e)
		return HB_EINVAL;
	if (!e->began)
		e->start = e->w.b->len;
	if (!e->w.rc && (e->depth || !e->ended))
		fail(e, HB_EINVAL); /* no value, or one left open */
	if (e->fmt == HB_EMIT_JSON)
		putc1(&e->w, '\n');
	rc = e->fmt == HB_EMIT_TREE ? e->w.rc : finish(&e->w, e->start);
	cJSON_Delete(e->tree);
	e->tree = NULL;
	if (!rc)
		e->tree = e->root;
	else
		cJSON_Delete(e->root);
	e->root = NULL;
	e->w.rc = 0;
	e->depth = e->began = e->ended = 0;
	return rc;
}

int hb_emit_take(struct hb_emit *e, cJSON **tree)
{
	*tree = e ? e->tree : NULL;
	if (!*tree)
		return HB_EINVAL;
	e->tree = NULL;
	return 0;
}
