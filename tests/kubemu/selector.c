/*
 * selector.c - label selectors and field selectors, as the API server
 * parses them (k8s.io/apimachinery/pkg/labels and .../fields).
 *
 * Label selectors: requirements separated by commas, each one of
 *   key            key exists
 *   !key           key does not exist
 *   key=v key==v   equals (a missing key does not match)
 *   key!=v         differs (a missing key matches)
 *   key in (a,b)   one of
 *   key notin (a,b) none of (a missing key matches)
 *   key>n key<n    integer comparison
 * Keys are qualified names ([prefix/]name), values label values.
 *
 * Field selectors: key=v, key==v and key!=v separated by commas, with
 * backslash escapes for ',', '=', '!' and '\' in values.  A key is a dotted
 * path into the object; which paths a resource supports is checked by
 * km_fields_check(), as the server rejects the others.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubemu.h"

/* Room for a selector's pieces: input is capped well below this. */
#define SEL_MAX_LEN    (64u * 1024)
#define SEL_MAX_VALUES 256

enum op {
	OP_EXISTS,
	OP_NOT_EXISTS,
	OP_EQ,
	OP_NE,
	OP_IN,
	OP_NOTIN,
	OP_GT,
	OP_LT
};

struct req {
	char *key;
	enum op op;
	char **vals;
	size_t nvals;
};

struct km_selector {
	struct req *reqs;
	size_t n;
};

void km_selector_free(struct km_selector *sel)
{
	if (!sel)
		return;
	for (size_t i = 0; i < sel->n; i++) {
		free(sel->reqs[i].key);
		for (size_t j = 0; j < sel->reqs[i].nvals; j++)
			free(sel->reqs[i].vals[j]);
		free(sel->reqs[i].vals);
	}
	free(sel->reqs);
	free(sel);
}

static int alnum(int c)
{
	return isascii(c) && isalnum(c);
}

/* A label value or the name part of a key: at most 63 characters of
 * [A-Za-z0-9-_.], starting and ending alphanumeric (empty allowed for
 * values only). */
static int name_ok(const char *s, size_t n, int empty_ok)
{
	if (n == 0)
		return empty_ok;
	if (n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	}
	return 1;
}

/* A DNS-1123 subdomain (the prefix of a key). */
static int subdomain_ok(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (i == start || i - start > 63 || !alnum(s[start]) ||
		    !alnum(s[i - 1]))
			return 0;
		for (size_t j = start; j < i; j++) {
			if (!(isascii(s[j]) &&
			      (islower(s[j]) || isdigit(s[j]))) &&
			    s[j] != '-')
				return 0;
		}
		start = i + 1;
	}
	return 1;
}

static int key_ok(const char *k)
{
	const char *slash = strchr(k, '/');

	if (!slash)
		return name_ok(k, strlen(k), 0);
	return subdomain_ok(k, (size_t)(slash - k)) &&
	       name_ok(slash + 1, strlen(slash + 1), 0);
}

struct lex {
	const char *s;
	size_t i;
	int field;
	struct hb_err *err;
};

static void skip_ws(struct lex *x)
{
	while (x->s[x->i] == ' ' || x->s[x->i] == '\t')
		x->i++;
}

/* A bare word: up to a space or an operator character. */
static char *word(struct lex *x)
{
	size_t st = x->i;

	while (x->s[x->i] && !strchr(" \t,=!()<>", x->s[x->i]))
		x->i++;
	return strndup(x->s + st, x->i - st);
}

/* A field selector value: up to an unescaped ',', with escapes. */
static char *field_value(struct lex *x)
{
	struct hb_buf b;
	char *out;

	hb_buf_init(&b, SEL_MAX_LEN);
	while (x->s[x->i] && x->s[x->i] != ',') {
		char c = x->s[x->i++];

		if (c == '\\') {
			c = x->s[x->i];
			if (!c || !strchr(",=!\\", c)) {
				hb_err_set(x->err, HB_EINVAL, NULL, 0,
					   "invalid field selector: invalid "
					   "escape sequence");
				hb_buf_free(&b);
				return NULL;
			}
			x->i++;
		} else if (c == '=' || c == '!') {
			hb_err_set(x->err, HB_EINVAL, NULL, 0,
				   "invalid field selector: unescaped '%c' "
				   "in a value",
				   c);
			hb_buf_free(&b);
			return NULL;
		}
		if (hb_buf_putc(&b, c)) {
			hb_buf_free(&b);
			return NULL;
		}
	}
	out = hb_buf_steal(&b);
	hb_buf_free(&b);
	return out;
}

static int add_val(struct lex *x, struct req *r, char *v)
{
	char **nv;

	if (!v)
		return HB_ENOMEM;
	if (r->nvals == SEL_MAX_VALUES) {
		free(v);
		return hb_err_set(x->err, HB_ETOOBIG, NULL, 0,
				  "unable to parse requirement: more than %d "
				  "values at offset %zu",
				  SEL_MAX_VALUES, x->i);
	}
	nv = realloc(r->vals, (r->nvals + 1) * sizeof(*nv));
	if (!nv) {
		free(v);
		return HB_ENOMEM;
	}
	r->vals = nv;
	r->vals[r->nvals++] = v;
	return 0;
}

static int bad(struct lex *x, const char *what)
{
	return hb_err_set(x->err, HB_EINVAL, NULL, 0,
			  "unable to parse requirement: %s at offset %zu in "
			  "\"%.64s\"",
			  what, x->i, x->s);
}

/* One requirement into r (zeroed by the caller). */
static int parse_req(struct lex *x, struct req *r)
{
	int rc;

	skip_ws(x);
	if (!x->field && x->s[x->i] == '!') {
		x->i++;
		skip_ws(x);
		r->op = OP_NOT_EXISTS;
		if (!(r->key = word(x)))
			return HB_ENOMEM;
		if (!key_ok(r->key))
			return bad(x, "invalid label key");
		skip_ws(x);
		return 0;
	}
	if (!(r->key = word(x)))
		return HB_ENOMEM;
	if (!*r->key)
		return bad(x, "missing key");
	if (!x->field && !key_ok(r->key))
		return bad(x, "invalid label key");
	skip_ws(x);
	switch (x->s[x->i]) {
	case '\0':
	case ',':
		if (x->field)
			return bad(x, "field selectors need an operator");
		r->op = OP_EXISTS;
		return 0;
	case '=':
		x->i += x->s[x->i + 1] == '=' ? 2 : 1;
		r->op = OP_EQ;
		break;
	case '!':
		if (x->s[x->i + 1] != '=')
			return bad(x, "expected '!='");
		x->i += 2;
		r->op = OP_NE;
		break;
	case '>':
	case '<':
		if (x->field)
			return bad(x, "unsupported operator");
		r->op = x->s[x->i] == '>' ? OP_GT : OP_LT;
		x->i++;
		break;
	default:
		if (x->field)
			return bad(x, "expected an operator");
		if (!strncmp(x->s + x->i, "in", 2) &&
		    strchr(" \t(", x->s[x->i + 2])) {
			r->op = OP_IN;
			x->i += 2;
		} else if (!strncmp(x->s + x->i, "notin", 5) &&
			   strchr(" \t(", x->s[x->i + 5])) {
			r->op = OP_NOTIN;
			x->i += 5;
		} else {
			return bad(x, "expected an operator");
		}
		skip_ws(x);
		if (x->s[x->i] != '(')
			return bad(x, "expected '('");
		x->i++;
		for (;;) {
			char *v;

			skip_ws(x);
			if (!(v = word(x)))
				return HB_ENOMEM;
			if (!name_ok(v, strlen(v), 1)) {
				free(v);
				return bad(x, "invalid label value");
			}
			if ((rc = add_val(x, r, v)))
				return rc;
			skip_ws(x);
			if (x->s[x->i] == ',') {
				x->i++;
				continue;
			}
			if (x->s[x->i] == ')') {
				x->i++;
				break;
			}
			return bad(x, "expected ',' or ')'");
		}
		skip_ws(x);
		return 0;
	}
	if (x->field) {
		char *v = field_value(x);

		if (!v)
			return x->err->code ? x->err->code : HB_ENOMEM;
		return add_val(x, r, v);
	}
	skip_ws(x);
	{
		char *v = word(x);

		if (!v)
			return HB_ENOMEM;
		if (!name_ok(v, strlen(v), 1)) {
			free(v);
			return bad(x, "invalid label value");
		}
		if (r->op == OP_GT || r->op == OP_LT) {
			char *end;

			errno = 0;
			(void)strtoll(v, &end, 10);
			if (!*v || *end || errno) {
				free(v);
				return bad(x, "the value of > and < must be "
					      "an integer");
			}
		}
		if ((rc = add_val(x, r, v)))
			return rc;
	}
	skip_ws(x);
	return 0;
}

int km_selector_parse(const char *s, int field, struct km_selector **out,
		      struct hb_err *err)
{
	struct km_selector *sel;
	struct lex x = { s, 0, field, err };
	int rc;

	*out = NULL;
	if (!s)
		return 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return 0;
	if (strlen(s) > SEL_MAX_LEN)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "selector too long");
	x.s = s;
	sel = calloc(1, sizeof(*sel));
	if (!sel)
		return HB_ENOMEM;
	for (;;) {
		struct req *nr = realloc(sel->reqs, (sel->n + 1) * sizeof(*nr));

		if (!nr) {
			rc = HB_ENOMEM;
			goto fail;
		}
		sel->reqs = nr;
		memset(&sel->reqs[sel->n], 0, sizeof(*nr));
		sel->n++;
		if ((rc = parse_req(&x, &sel->reqs[sel->n - 1])))
			goto fail;
		if (!s[x.i])
			break;
		if (s[x.i] != ',') {
			rc = bad(&x, "expected ','");
			goto fail;
		}
		x.i++;
	}
	*out = sel;
	return 0;
fail:
	km_selector_free(sel);
	return rc;
}

static int has_val(const struct req *r, const char *v)
{
	for (size_t i = 0; i < r->nvals; i++) {
		if (!strcmp(r->vals[i], v))
			return 1;
	}
	return 0;
}

static int req_match(const struct req *r, const char *v)
{
	char *end;
	long long a, b;

	switch (r->op) {
	case OP_EXISTS:
		return v != NULL;
	case OP_NOT_EXISTS:
		return v == NULL;
	case OP_EQ:
	case OP_IN:
		return v && has_val(r, v);
	case OP_NE:
	case OP_NOTIN:
		return !v || !has_val(r, v);
	case OP_GT:
	case OP_LT:
		if (!v)
			return 0;
		errno = 0;
		a = strtoll(v, &end, 10);
		if (!*v || *end || errno)
			return 0;
		b = strtoll(r->vals[0], NULL, 10);
		return r->op == OP_GT ? a > b : a < b;
	}
	return 0;
}

int km_selector_match(const struct km_selector *sel, const cJSON *labels)
{
	if (!sel)
		return 1;
	for (size_t i = 0; i < sel->n; i++) {
		if (!req_match(&sel->reqs[i], km_str(labels, sel->reqs[i].key)))
			return 0;
	}
	return 1;
}

/* The value at a dotted path as text (numbers and booleans too). */
static const char *path_text(const cJSON *obj, const char *path, char *buf,
			     size_t cap)
{
	const cJSON *v = obj;
	const char *p = path;

	while (v && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		char key[256];

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		v = km_get(v, key);
		p += n + (dot ? 1 : 0);
	}
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? "true" : "false";
	if (cJSON_IsNumber(v)) {
		snprintf(buf, cap, "%.0f", v->valuedouble);
		return buf;
	}
	return NULL;
}

int km_fields_match(const struct km_selector *sel, const cJSON *obj)
{
	char buf[32];

	if (!sel)
		return 1;
	for (size_t i = 0; i < sel->n; i++) {
		const struct req *r = &sel->reqs[i];
		const char *v = path_text(obj, r->key, buf, sizeof(buf));

		/* A missing field reads as "", as the server's field sets
		 * give every supported field a value. */
		if (!v)
			v = "";
		if (!req_match(r, v))
			return 0;
	}
	return 1;
}

int km_fields_check(const struct km_selector *sel, enum km_res r,
		    struct hb_err *err)
{
	static const char *const common[] = { "metadata.name",
					      "metadata.namespace", NULL };
	static const char *const pods[] = { "spec.nodeName",
					    "spec.restartPolicy",
					    "spec.schedulerName",
					    "spec.serviceAccountName",
					    "spec.hostNetwork",
					    "status.phase",
					    "status.podIP",
					    "status.nominatedNodeName",
					    NULL };
	static const char *const events[] = { "involvedObject.kind",
					      "involvedObject.namespace",
					      "involvedObject.name",
					      "involvedObject.uid",
					      "involvedObject.apiVersion",
					      "involvedObject.resourceVersion",
					      "involvedObject.fieldPath",
					      "reason",
					      "reportingComponent",
					      "source",
					      "type",
					      NULL };
	static const char *const nodes[] = { "spec.unschedulable", NULL };
	static const char *const secrets[] = { "type", NULL };
	const char *const *extra = r == KM_POD	    ? pods
				   : r == KM_EVENT  ? events
				   : r == KM_NODE   ? nodes
				   : r == KM_SECRET ? secrets
						    : NULL;

	if (!sel)
		return 0;
	for (size_t i = 0; i < sel->n; i++) {
		const char *k = sel->reqs[i].key;
		int ok = 0;

		for (size_t j = 0; common[j] && !ok; j++)
			ok = !strcmp(k, common[j]);
		for (size_t j = 0; extra && extra[j] && !ok; j++)
			ok = !strcmp(k, extra[j]);
		if (!ok)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "field label not supported: %s", k);
	}
	return 0;
}
