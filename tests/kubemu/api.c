/*
 * api.c - the verbs on resources: get, list, watch, create, update, patch,
 * delete and deletecollection, the status subresource, pod logs, and
 * Status objects for errors.
 *
 * Writes follow the API server's GuaranteedUpdate: read the current
 * version, compute the new object from it outside the store lock
 * (patch, validation, managed fields), then commit only if the version
 * is still the one read; otherwise read again.  A resourceVersion the
 * client gave is a precondition: a stale one is 409 Conflict.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hpcbridge/doc.h"
#include "kubemu.h"

/* The API server's limit on a request body. */
#define MAX_BODY (3u * 1024 * 1024)
/* Retries of a write that lost a race with another writer. */
#define MAX_RETRIES 16
/* Longest fieldManager accepted. */
#define MAX_MANAGER 128

/* ---- Status objects ------------------------------------------------- */

cJSON *km_status_plain(int code, const char *reason, const char *message)
{
	cJSON *st = cJSON_CreateObject();

	if (!st || km_set_str(st, "kind", "Status") ||
	    km_set_str(st, "apiVersion", "v1") ||
	    km_set(st, "metadata", cJSON_CreateObject()) ||
	    km_set_str(st, "status", "Failure") ||
	    km_set_str(st, "message", message) ||
	    km_set_str(st, "reason", reason) || km_set_num(st, "code", code)) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

cJSON *km_status(int code, const char *reason, const char *message,
		 enum km_res r, const char *name)
{
	cJSON *st = km_status_plain(code, reason, message);
	cJSON *d;

	if (!st)
		return NULL;
	d = cJSON_CreateObject();
	if (!d || (name && km_set_str(d, "name", name)) ||
	    (km_res[r].group[0] && km_set_str(d, "group", km_res[r].group)) ||
	    km_set_str(d, "kind", km_res[r].plural)) {
		cJSON_Delete(d);
		return st;
	}
	/* details go before code, as the server orders them. */
	km_del(st, "code");
	cJSON_AddItemToObject(st, "details", d);
	km_set_num(st, "code", code);
	return st;
}

cJSON *km_statusf(int code, const char *reason, enum km_res r, const char *name,
		  const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return km_status(code, reason, msg, r, name);
}

void km_resp_json(struct km_resp *rs, int code, const cJSON *tree)
{
	rs->code = code;
	rs->body = cJSON_PrintUnformatted(tree);
	rs->len = rs->body ? strlen(rs->body) : 0;
	rs->ctype = "application/json";
	if (!rs->body)
		rs->code = 500;
}

void km_resp_status(struct km_resp *rs, cJSON *status)
{
	const cJSON *code = km_get(status, "code");

	if (!status) {
		rs->code = 500;
		rs->body = strdup("{\"kind\":\"Status\",\"apiVersion\":\"v1\","
				  "\"metadata\":{},\"status\":\"Failure\","
				  "\"message\":\"out of memory\",\"reason\":"
				  "\"InternalError\",\"code\":500}");
		rs->len = rs->body ? strlen(rs->body) : 0;
		rs->ctype = "application/json";
		return;
	}
	km_resp_json(rs, cJSON_IsNumber(code) ? code->valueint : 500, status);
	cJSON_Delete(status);
}

/* Reply with a copy of an object's JSON. */
static void resp_obj(struct km_resp *rs, int code, const struct km_obj *o)
{
	rs->body = malloc(o->len + 1);
	if (!rs->body) {
		km_resp_status(rs, NULL);
		return;
	}
	memcpy(rs->body, o->json, o->len + 1);
	rs->len = o->len;
	rs->code = code;
	rs->ctype = "application/json";
}

static void not_found(struct km_resp *rs, enum km_res r, const char *name)
{
	km_resp_status(rs, km_statusf(404, "NotFound", r, name,
				      "%s \"%s\" not found",
				      km_res_qualified(r), name));
}

static void bad_request(struct km_resp *rs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bad_request(struct km_resp *rs, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	km_resp_status(rs, km_status_plain(400, "BadRequest", msg));
}

static void conflict(struct km_resp *rs, enum km_res r, const char *name)
{
	km_resp_status(rs, km_statusf(409, "Conflict", r, name,
				      "Operation cannot be fulfilled on %s "
				      "\"%s\": the object has been modified; "
				      "please apply your changes to the "
				      "latest version and try again",
				      km_res_qualified(r), name));
}

/* ---- request arguments ---------------------------------------------- */

static const char *arg(const struct km_req *rq, const char *key)
{
	const char *v = rq->arg(rq->conn, key);

	return v && *v ? v : NULL;
}

/* strconv.ParseBool: 1 t T TRUE true True and their false forms. */
static int parse_bool(const char *s, int *out)
{
	static const char *const t[] = {
		"1", "t", "T", "TRUE", "true", "True"
	};
	static const char *const f[] = { "0",	  "f",	   "F",
					 "FALSE", "false", "False" };

	for (size_t i = 0; i < 6; i++) {
		if (!strcmp(s, t[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, f[i])) {
			*out = 0;
			return 0;
		}
	}
	return HB_EINVAL;
}

static int bool_arg(const struct km_req *rq, const char *key)
{
	const char *v = arg(rq, key);
	int b = 0;

	return v && !parse_bool(v, &b) && b;
}

static const char *field_manager(const struct km_req *rq, char *buf, size_t cap)
{
	const char *m = arg(rq, "fieldManager");
	const char *ua;
	size_t n;

	if (m)
		return m;
	/* The server's default: the User-Agent up to its first '/'. */
	ua = rq->header(rq->conn, "User-Agent");
	if (!ua || !*ua)
		return "unknown";
	n = strcspn(ua, "/");
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, ua, n);
	buf[n] = '\0';
	return buf;
}

static int field_validation(const struct km_req *rq, struct km_resp *rs,
			    enum km_fv *fv)
{
	const char *v = arg(rq, "fieldValidation");

	*fv = KM_FV_WARN;
	if (!v || !strcmp(v, "Warn"))
		return 0;
	if (!strcmp(v, "Strict")) {
		*fv = KM_FV_STRICT;
		return 0;
	}
	if (!strcmp(v, "Ignore")) {
		*fv = KM_FV_IGNORE;
		return 0;
	}
	bad_request(rs,
		    "fieldValidation: Invalid value: \"%.64s\": "
		    "fieldValidation must be one of \"Ignore\", \"Warn\", or "
		    "\"Strict\"",
		    v);
	return HB_EINVAL;
}

static int dry_run(const struct km_req *rq)
{
	const char *v = arg(rq, "dryRun");

	return v && !strcmp(v, "All");
}

/* ---- bodies --------------------------------------------------------- */

/* Parse the request body (JSON, or YAML when yaml); NULL after replying
 * with 400. */
static cJSON *parse_body(const struct km_req *rq, struct km_resp *rs, int yaml)
{
	cJSON *doc = NULL;
	struct hb_err err = { 0 };

	if (rq->body_len > MAX_BODY) {
		km_resp_status(rs, km_status_plain(413, "RequestEntityTooLarge",
						   "the request body is too "
						   "large"));
		return NULL;
	}
	if (!rq->body_len) {
		bad_request(rs, "the request has no body");
		return NULL;
	}
	if (yaml) {
		if (hb_doc_parse(rq->body, rq->body_len, "body", &doc, &err)) {
			bad_request(rs, "error decoding YAML: %s", err.msg);
			return NULL;
		}
	} else {
		doc = cJSON_ParseWithLength(rq->body, rq->body_len);
		if (!doc) {
			bad_request(rs,
				    "couldn't get version/kind; json parse "
				    "error: invalid JSON near byte %zu",
				    (size_t)(cJSON_GetErrorPtr()
						     ? cJSON_GetErrorPtr() -
							       rq->body
						     : 0));
			return NULL;
		}
	}
	return doc;
}

static int body_is_yaml(const struct km_req *rq)
{
	const char *ct = rq->header(rq->conn, "Content-Type");

	return ct && (!strncasecmp(ct, "application/yaml", 16) ||
		      !strncasecmp(ct, "application/apply-patch+yaml", 28));
}

/* Check apiVersion, kind, name and namespace of a body against the URL.
 * 0, or HB_EINVAL after replying. */
static int check_identity(const struct km_req *rq, struct km_resp *rs,
			  cJSON *obj)
{
	enum km_res r = (enum km_res)rq->res;
	const char *av = km_str(obj, "apiVersion");
	const char *kind = km_str(obj, "kind");
	const char *ns = km_meta_str(obj, "namespace");
	const char *name = km_meta_str(obj, "name");

	if (!cJSON_IsObject(obj)) {
		bad_request(rs, "the body must be a JSON object");
		return HB_EINVAL;
	}
	if (!(km_res[r].flags & KM_CRD) && !kind && !av) {
		/* Built-in kinds decode into a typed object: the URL gives
		 * what the body leaves out. */
		if (km_set_str(obj, "apiVersion", km_res[r].gv) ||
		    km_set_str(obj, "kind", km_res[r].kind)) {
			km_resp_status(rs, NULL);
			return HB_ENOMEM;
		}
		av = km_res[r].gv;
		kind = km_res[r].kind;
	}
	if (!kind) {
		bad_request(rs, "Object 'Kind' is missing in the body");
		return HB_EINVAL;
	}
	if (!av) {
		bad_request(rs, "Object 'apiVersion' is missing in the body");
		return HB_EINVAL;
	}
	if (strcmp(av, km_res[r].gv) || strcmp(kind, km_res[r].kind)) {
		bad_request(rs,
			    "the API version in the data (%.100s) does not "
			    "match the expected API version (%s), or the kind "
			    "(%.100s) is not %s",
			    av, km_res[r].gv, kind, km_res[r].kind);
		return HB_EINVAL;
	}
	if (ns && rq->ns && strcmp(ns, rq->ns)) {
		bad_request(rs, "the namespace of the provided object does "
				"not match the namespace sent on the request");
		return HB_EINVAL;
	}
	if (rq->name && name && strcmp(name, rq->name)) {
		bad_request(rs,
			    "the name of the object (%.253s) does not match "
			    "the name on the URL (%.253s)",
			    name, rq->name);
		return HB_EINVAL;
	}
	return 0;
}

/* ---- authorization -------------------------------------------------- */

static const char *verb_of(const struct km_req *rq)
{
	const char *m = rq->method;

	if (!strcmp(m, "GET"))
		return rq->name					     ? "get"
		       : (arg(rq, "watch") && bool_arg(rq, "watch")) ? "watch"
								     : "list";
	if (!strcmp(m, "POST"))
		return "create";
	if (!strcmp(m, "PUT"))
		return "update";
	if (!strcmp(m, "PATCH"))
		return "patch";
	if (!strcmp(m, "DELETE"))
		return rq->name ? "delete" : "deletecollection";
	return "unknown";
}

/* A token limited to one namespace may act only in it. */
static int authorize(const struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	char res[64], where[300];

	if (!rq->allowed_ns || (rq->ns && !strcmp(rq->ns, rq->allowed_ns)))
		return 0;
	snprintf(res, sizeof(res), "%s%s%s", km_res[r].plural,
		 rq->sub ? "/" : "", rq->sub ? rq->sub : "");
	if (rq->ns)
		snprintf(where, sizeof(where), "in the namespace \"%.253s\"",
			 rq->ns);
	else
		snprintf(where, sizeof(where), "at the cluster scope");
	if (rq->name)
		km_resp_status(rs, km_statusf(403, "Forbidden", r, rq->name,
					      "%s \"%s\" is forbidden: User "
					      "\"%s\" cannot %s resource "
					      "\"%s\" in API group \"%s\" %s",
					      km_res_qualified(r), rq->name,
					      rq->user, verb_of(rq), res,
					      km_res[r].group, where));
	else
		km_resp_status(rs, km_statusf(403, "Forbidden", r, NULL,
					      "%s is forbidden: User \"%s\" "
					      "cannot %s resource \"%s\" in "
					      "API group \"%s\" %s",
					      km_res_qualified(r), rq->user,
					      verb_of(rq), res, km_res[r].group,
					      where));
	return HB_EPERM;
}

/* ---- get and list --------------------------------------------------- */

/* Whether kubectl get asks for a Table (served for pods only). */
static int table_wanted(const struct km_req *rq)
{
	return rq->header && km_table_wanted(rq->header(rq->conn, "Accept"));
}

static void table_reply(struct km_resp *rs, struct km_obj *const *objs,
			size_t n, uint64_t rv, const char *cont, size_t left)
{
	cJSON *t = km_table_pods(objs, n, rv, cont, left);

	if (!t) {
		km_resp_status(rs, NULL);
		return;
	}
	km_resp_json(rs, 200, t);
	cJSON_Delete(t);
}

static void do_get(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	struct km_obj *o = km_store_get(ctx->store, r, rq->ns, rq->name);

	if (!o) {
		not_found(rs, r, rq->name);
		return;
	}
	if (r == KM_POD && table_wanted(rq))
		table_reply(rs, &o, 1, o->rv, NULL, 0);
	else
		resp_obj(rs, 200, o);
	km_obj_unref(o);
}

struct list_filter {
	struct km_selector *labels, *fields;
};

static int list_match(void *arg, const struct km_obj *o)
{
	struct list_filter *f = arg;

	return km_selector_match(f->labels, km_get(km_get(o->tree, "metadata"),
						   "labels")) &&
	       km_fields_match(f->fields, o->tree);
}

/* Continue tokens: URL-safe base64 of {"rv":N,"start":"ns/name"}. */
static char *continue_token(uint64_t rv, const struct km_obj *last)
{
	struct hb_buf raw, b64;
	cJSON *t = cJSON_CreateObject();
	char *json = NULL, *out = NULL;

	hb_buf_init(&raw, 0);
	hb_buf_init(&b64, 0);
	if (!t || km_set_str(t, "v", "meta.k8s.io/v1") ||
	    km_set_num(t, "rv", (double)rv) ||
	    hb_buf_printf(&raw, "%s/%s", last->ns, last->name) ||
	    km_set_str(t, "start", raw.data))
		goto out;
	json = cJSON_PrintUnformatted(t);
	if (!json || hb_buf_base64(&b64, json, strlen(json)))
		goto out;
	for (size_t i = 0; i < b64.len; i++) {
		if (b64.data[i] == '+')
			b64.data[i] = '-';
		else if (b64.data[i] == '/')
			b64.data[i] = '_';
	}
	while (b64.len && b64.data[b64.len - 1] == '=')
		b64.data[--b64.len] = '\0';
	out = hb_buf_steal(&b64);
out:
	cJSON_Delete(t);
	free(json);
	hb_buf_free(&raw);
	hb_buf_free(&b64);
	return out;
}

static int parse_continue(const char *tok, uint64_t *rv, char **start_ns,
			  char **start_name)
{
	struct hb_buf std, raw;
	cJSON *t = NULL;
	const cJSON *v;
	const char *start, *slash;
	int rc = HB_EINVAL;

	hb_buf_init(&std, 64 * 1024);
	hb_buf_init(&raw, 64 * 1024);
	for (const char *p = tok; *p; p++) {
		char c = *p == '-' ? '+' : *p == '_' ? '/' : *p;

		if (hb_buf_putc(&std, c))
			goto out;
	}
	while (std.len % 4) {
		if (hb_buf_putc(&std, '='))
			goto out;
	}
	if (!std.len || hb_buf_unbase64(&raw, std.data, std.len))
		goto out;
	t = cJSON_ParseWithLength(raw.data, raw.len);
	v = km_get(t, "rv");
	start = km_str(t, "start");
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || !start ||
	    !(slash = strchr(start, '/')))
		goto out;
	*rv = (uint64_t)v->valuedouble;
	*start_ns = strndup(start, (size_t)(slash - start));
	*start_name = strdup(slash + 1);
	rc = (*start_ns && *start_name) ? 0 : HB_ENOMEM;
out:
	cJSON_Delete(t);
	hb_buf_free(&std);
	hb_buf_free(&raw);
	return rc;
}

static void gone(struct km_resp *rs, uint64_t rv, uint64_t oldest)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "too old resource version: %llu (%llu)",
		 (unsigned long long)rv, (unsigned long long)oldest);
	km_resp_status(rs, km_status_plain(410, "Expired", msg));
}

/* Parse labelSelector and fieldSelector; 0 or HB_EINVAL after a 400. */
static int parse_selectors(const struct km_req *rq, struct km_resp *rs,
			   struct list_filter *f)
{
	struct hb_err err = { 0 };
	enum km_res r = (enum km_res)rq->res;

	if (km_selector_parse(arg(rq, "labelSelector"), 0, &f->labels, &err)) {
		bad_request(rs, "%s", err.msg);
		return HB_EINVAL;
	}
	if (km_selector_parse(arg(rq, "fieldSelector"), 1, &f->fields, &err) ||
	    km_fields_check(f->fields, r, &err)) {
		bad_request(rs, "%s", err.msg);
		return HB_EINVAL;
	}
	return 0;
}

static void do_list(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	struct list_filter f = { NULL, NULL };
	const char *lim = arg(rq, "limit"), *cont = arg(rq, "continue");
	const char *rvs = arg(rq, "resourceVersion");
	const char *match = arg(rq, "resourceVersionMatch");
	uint64_t limit = 0, crv = 0, rv = 0, want;
	char *start_ns = NULL, *start_name = NULL, *tok = NULL;
	struct km_obj **items = NULL;
	size_t n = 0, left = 0;
	struct hb_buf b;

	hb_buf_init(&b, 0);
	if (parse_selectors(rq, rs, &f))
		goto out;
	if (lim && km_parse_u64(lim, &limit)) {
		bad_request(rs, "limit: Invalid value: \"%.32s\"", lim);
		goto out;
	}
	if (match && !rvs) {
		bad_request(rs, "resourceVersionMatch is forbidden unless "
				"resourceVersion is provided");
		goto out;
	}
	if (rvs && match && !strcmp(match, "Exact") &&
	    !km_parse_u64(rvs, &want) && want < km_store_oldest(ctx->store)) {
		gone(rs, want, km_store_oldest(ctx->store));
		goto out;
	}
	if (cont) {
		if (parse_continue(cont, &crv, &start_ns, &start_name)) {
			bad_request(rs, "continue key is not valid");
			goto out;
		}
		if (crv < km_store_oldest(ctx->store)) {
			km_resp_status(
				rs,
				km_status_plain(410, "Expired",
						"The provided continue "
						"parameter is too old to "
						"display a consistent list "
						"result. You can start a new "
						"list without the continue "
						"parameter."));
			goto out;
		}
	}
	if (km_store_list(ctx->store, r, rq->ns, start_ns, start_name,
			  (f.labels || f.fields) ? list_match : NULL, &f,
			  (size_t)limit, &items, &n, &left, &rv)) {
		km_resp_status(rs, NULL);
		goto out;
	}
	if (left && n) {
		tok = continue_token(cont ? crv : rv, items[n - 1]);
		if (!tok) {
			km_resp_status(rs, NULL);
			goto out;
		}
	}
	if (r == KM_POD && table_wanted(rq)) {
		table_reply(rs, items, n, rv, tok, left);
		goto out;
	}
	hb_buf_printf(&b,
		      "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":"
		      "{\"resourceVersion\":\"%llu\"",
		      km_res[r].gv, km_res[r].list_kind,
		      (unsigned long long)rv);
	if (tok)
		hb_buf_printf(&b,
			      ",\"continue\":\"%s\",\"remainingItemCount\""
			      ":%zu",
			      tok, left);
	hb_buf_puts(&b, "},\"items\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			hb_buf_putc(&b, ',');
		hb_buf_append(&b, items[i]->json, items[i]->len);
	}
	if (hb_buf_puts(&b, "]}")) {
		km_resp_status(rs, NULL);
		goto out;
	}
	rs->code = 200;
	rs->len = b.len;
	rs->body = hb_buf_steal(&b);
	rs->ctype = "application/json";
out:
	for (size_t i = 0; i < n; i++)
		km_obj_unref(items[i]);
	free(items);
	free(tok);
	free(start_ns);
	free(start_name);
	km_selector_free(f.labels);
	km_selector_free(f.fields);
	hb_buf_free(&b);
}

/* ---- watch ---------------------------------------------------------- */

static void do_watch(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	struct km_watch_opts wo = { .res = (enum km_res)rq->res, .ns = rq->ns };
	struct list_filter f = { NULL, NULL };
	const char *rvs = arg(rq, "resourceVersion");
	const char *to = arg(rq, "timeoutSeconds");
	uint64_t tmo = 0;

	if (parse_selectors(rq, rs, &f))
		return;
	if (rq->name) {
		/* GET .../NAME?watch=1: a watch of one object. */
		struct hb_err err = { 0 };
		char sel[600];

		km_selector_free(f.fields);
		snprintf(sel, sizeof(sel), "metadata.name=%s", rq->name);
		if (km_selector_parse(sel, 1, &f.fields, &err)) {
			km_selector_free(f.labels);
			bad_request(rs, "%s", err.msg);
			return;
		}
	}
	if (rvs && strcmp(rvs, "0")) {
		if (km_parse_u64(rvs, &wo.rv)) {
			km_selector_free(f.labels);
			km_selector_free(f.fields);
			bad_request(rs,
				    "resourceVersion: Invalid value: "
				    "\"%.32s\"",
				    rvs);
			return;
		}
		wo.has_rv = 1;
	}
	if (to && km_parse_u64(to, &tmo)) {
		km_selector_free(f.labels);
		km_selector_free(f.fields);
		bad_request(rs, "timeoutSeconds: Invalid value: \"%.32s\"", to);
		return;
	}
	if (!tmo) {
		/* The server's default: min-request-timeout (1800 s)
		 * times a random factor in [1, 2). */
		tmo = (uint64_t)ctx->o->watch_timeout_s +
		      (uint64_t)(rand() % (ctx->o->watch_timeout_s + 1));
	}
	wo.timeout_ms = (int64_t)tmo * 1000;
	wo.bookmarks = bool_arg(rq, "allowWatchBookmarks");
	wo.labels = f.labels;
	wo.fields = f.fields;
	wo.gone = km_faults_take_gone(ctx->faults);
	wo.table = wo.res == KM_POD && table_wanted(rq);
	rs->watch = km_watch_new(ctx, &wo);
	if (!rs->watch) {
		km_resp_status(rs, NULL);
		return;
	}
	rs->code = 200;
	rs->ctype = "application/json";
}

/* ---- writes: shared steps ------------------------------------------- */

/* Whether two objects differ outside metadata and status. */
static int spec_changed(const cJSON *a, const cJSON *b)
{
	const cJSON *x;

	cJSON_ArrayForEach (x, a) {
		if (!strcmp(x->string, "metadata") ||
		    !strcmp(x->string, "status"))
			continue;
		if (!km_equal(x, km_get(b, x->string)))
			return 1;
	}
	cJSON_ArrayForEach (x, b) {
		if (!strcmp(x->string, "metadata") ||
		    !strcmp(x->string, "status"))
			continue;
		if (!km_get(a, x->string))
			return 1;
	}
	return 0;
}

/* Whether two versions are the same object apart from resourceVersion
 * and managed fields: such an update is a no-op. */
static int same_object(const cJSON *a, const cJSON *b)
{
	cJSON *x = cJSON_Duplicate(a, 1), *y = cJSON_Duplicate(b, 1);
	int eq = 0;

	if (x && y) {
		cJSON *mx = km_get(x, "metadata"), *my = km_get(y, "metadata");

		km_del(mx, "resourceVersion");
		km_del(my, "resourceVersion");
		km_del(mx, "managedFields");
		km_del(my, "managedFields");
		eq = km_equal(x, y);
	}
	cJSON_Delete(x);
	cJSON_Delete(y);
	return eq;
}

/* Copy the members the server owns from old into new's metadata. */
static int keep_server_meta(cJSON *nobj, const cJSON *old)
{
	static const char *const keep[] = { "uid",
					    "creationTimestamp",
					    "generation",
					    "deletionTimestamp",
					    "deletionGracePeriodSeconds",
					    "managedFields",
					    "namespace",
					    "name",
					    NULL };
	const cJSON *om = km_get(old, "metadata");
	cJSON *nm = km_obj_at(nobj, "metadata");

	if (!nm)
		return HB_ENOMEM;
	for (size_t i = 0; keep[i]; i++) {
		const cJSON *v = km_get(om, keep[i]);

		km_del(nm, keep[i]);
		if (v && km_set(nm, keep[i], cJSON_Duplicate(v, 1)))
			return HB_ENOMEM;
	}
	return 0;
}

/* Pods: the spec may change only in container images. */
static int pod_spec_ok(const cJSON *old, const cJSON *nobj)
{
	cJSON *a = cJSON_Duplicate(km_get(old, "spec"), 1);
	cJSON *b = cJSON_Duplicate(km_get(nobj, "spec"), 1);
	cJSON *c;
	int ok;

	cJSON_ArrayForEach (c, km_get(a, "containers"))
		km_del(c, "image");
	cJSON_ArrayForEach (c, km_get(b, "containers"))
		km_del(c, "image");
	ok = km_equal(a, b) || (!a && !b);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return ok;
}

/*
 * Turn a proposed new version (nobj, taken) of cur into the version to
 * store: the server's metadata, the status or spec rule of the
 * subresource, generation, validation and managed fields.  *out gets it;
 * returns 0, or HB_EINVAL after replying (nobj freed).
 */
static int prepare_update(struct km_ctx *ctx, struct km_req *rq,
			  struct km_resp *rs, const struct km_obj *cur,
			  cJSON *nobj, const char *manager, enum km_fv fv,
			  int track, cJSON **out)
{
	enum km_res r = (enum km_res)rq->res;
	int has_status = (km_res[r].flags & KM_STATUS) != 0;
	int status_sub = rq->sub && !strcmp(rq->sub, "status");
	cJSON *st = NULL;
	const cJSON *gen;

	*out = NULL;
	if (status_sub) {
		/* Only status changes: the rest is the old object. */
		cJSON *s =
			cJSON_DetachItemFromObjectCaseSensitive(nobj, "status");

		cJSON_Delete(nobj);
		nobj = cJSON_Duplicate(cur->tree, 1);
		if (!nobj) {
			cJSON_Delete(s);
			goto oom;
		}
		km_del(nobj, "status");
		if (s && km_set(nobj, "status", s))
			goto oom_free;
	} else {
		if (keep_server_meta(nobj, cur->tree))
			goto oom_free;
		if (has_status) {
			const cJSON *os = km_get(cur->tree, "status");

			km_del(nobj, "status");
			if (os &&
			    km_set(nobj, "status", cJSON_Duplicate(os, 1)))
				goto oom_free;
		}
		if (r == KM_POD && !pod_spec_ok(cur->tree, nobj)) {
			cJSON_Delete(nobj);
			km_resp_status(rs,
				       km_statusf(422, "Invalid", r, rq->name,
						  "Pod \"%s\" is invalid: "
						  "spec: Forbidden: pod "
						  "updates may not change "
						  "fields other than "
						  "`spec.containers[*].image`",
						  rq->name));
			return HB_EINVAL;
		}
		gen = km_get(km_get(cur->tree, "metadata"), "generation");
		if ((km_res[r].flags & KM_CRD) && cJSON_IsNumber(gen) &&
		    spec_changed(cur->tree, nobj) &&
		    km_set_num(km_get(nobj, "metadata"), "generation",
			       gen->valuedouble + 1))
			goto oom_free;
	}
	if (km_valid_check(ctx->valid, r, nobj, 0, fv, &rs->warnings, &st)) {
		cJSON_Delete(nobj);
		km_resp_status(rs, st);
		return HB_EINVAL;
	}
	if (track && km_track_update(nobj, cur->tree, manager,
				     status_sub ? "status" : NULL, has_status,
				     km_res[r].gv))
		goto oom_free;
	*out = nobj;
	return 0;
oom_free:
	cJSON_Delete(nobj);
oom:
	km_resp_status(rs, NULL);
	return HB_EINVAL;
}

/* After a write: an object being deleted whose last finalizer went is
 * deleted now. */
static void finish_finalizers(struct km_ctx *ctx, enum km_res r,
			      struct km_obj *o)
{
	const cJSON *meta = km_get(o->tree, "metadata");
	const cJSON *fin = km_get(meta, "finalizers");

	if (km_get(meta, "deletionTimestamp") && cJSON_GetArraySize(fin) == 0)
		km_store_delete(ctx->store, r, o->ns, o->name, o->rv, NULL);
}

/* ---- create --------------------------------------------------------- */

/* Stamp what the server sets on a new object; 0 or HB_ENOMEM. */
static int stamp_new(enum km_res r, cJSON *obj, const char *ns)
{
	cJSON *meta = km_obj_at(obj, "metadata");
	char uid[37], ts[32];

	if (!meta)
		return HB_ENOMEM;
	km_uuid(uid);
	km_timestamp(ts, sizeof(ts), 0);
	km_del(meta, "deletionTimestamp");
	km_del(meta, "deletionGracePeriodSeconds");
	km_del(meta, "managedFields");
	km_del(meta, "selfLink");
	if (KM_NO_NS(r))
		km_del(meta, "namespace"); /* cluster-scoped */
	if ((ns && km_set_str(meta, "namespace", ns)) ||
	    km_set_str(meta, "uid", uid) ||
	    km_set_str(meta, "creationTimestamp", ts))
		return HB_ENOMEM;
	if ((km_res[r].flags & KM_CRD) && km_set_num(meta, "generation", 1))
		return HB_ENOMEM;
	if (km_res[r].flags & KM_CRD)
		km_del(obj, "status");
	if (r == KM_POD) {
		cJSON *st = cJSON_CreateObject();

		if (!st || km_set_str(st, "phase", "Pending") ||
		    km_set_str(st, "qosClass", "BestEffort")) {
			cJSON_Delete(st);
			return HB_ENOMEM;
		}
		return km_set(obj, "status", st);
	}
	return 0;
}

/* Name a generateName object; 0, or HB_EINVAL when neither is set. */
static int assign_name(cJSON *obj)
{
	cJSON *meta = km_obj_at(obj, "metadata");
	const char *gen = km_str(meta, "generateName");
	char name[300], sfx[8];

	if (km_str(meta, "name"))
		return 0;
	if (!gen)
		return HB_EINVAL;
	km_rand_suffix(sfx, 5);
	snprintf(name, sizeof(name), "%.58s%s", gen, sfx);
	return km_set_str(meta, "name", name);
}

/* Store a prepared new object and reply 201 (or the conflict). */
static void commit_create(struct km_ctx *ctx, struct km_req *rq,
			  struct km_resp *rs, cJSON *obj)
{
	enum km_res r = (enum km_res)rq->res;
	struct km_obj *o = NULL;
	char name[320];
	cJSON *st;
	int rc;

	/* Validating admission: PodSecurity, for pods. */
	if (r == KM_POD && km_psa_admit(ctx, rq->ns, obj, &rs->warnings, &st)) {
		km_resp_status(rs, st);
		cJSON_Delete(obj);
		return;
	}
	snprintf(name, sizeof(name), "%s", km_meta_str(obj, "name"));
	if (dry_run(rq)) {
		km_resp_json(rs, 201, obj);
		cJSON_Delete(obj);
		return;
	}
	rc = km_store_create(ctx->store, r, obj, &o);
	if (rc == HB_EEXIST) {
		km_resp_status(rs, km_statusf(409, "AlreadyExists", r, name,
					      "%s \"%s\" already exists",
					      km_res_qualified(r), name));
		return;
	}
	if (rc) {
		km_resp_status(rs, NULL);
		return;
	}
	resp_obj(rs, 201, o);
	km_obj_unref(o);
}

static void do_create(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	cJSON *obj, *st = NULL;
	enum km_fv fv;
	char mbuf[MAX_MANAGER + 1];
	const char *manager = field_manager(rq, mbuf, sizeof(mbuf));

	if (field_validation(rq, rs, &fv))
		return;
	if (strlen(manager) > MAX_MANAGER) {
		km_resp_status(rs, km_status_plain(422, "Invalid",
						   "fieldManager: Too long: "
						   "may not be longer than "
						   "128"));
		return;
	}
	obj = parse_body(rq, rs, body_is_yaml(rq));
	if (!obj)
		return;
	if (check_identity(rq, rs, obj))
		goto out;
	if (km_meta_str(obj, "resourceVersion")) {
		bad_request(rs, "resourceVersion should not be set on objects "
				"to be created");
		goto out;
	}
	if (assign_name(obj)) {
		km_resp_status(rs, km_statusf(422, "Invalid", r, NULL,
					      "%s \"\" is invalid: "
					      "metadata.name: Required value: "
					      "name or generateName is "
					      "required",
					      km_res[r].kind));
		goto out;
	}
	if (stamp_new(r, obj, rq->ns))
		goto oom;
	if (km_valid_check(ctx->valid, r, obj, 1, fv, &rs->warnings, &st)) {
		km_resp_status(rs, st);
		goto out;
	}
	km_kueue_webhook(ctx, r, obj);
	if (km_track_update(obj, NULL, manager, NULL,
			    (km_res[r].flags & KM_STATUS) != 0, km_res[r].gv))
		goto oom;
	commit_create(ctx, rq, rs, obj);
	return;
oom:
	km_resp_status(rs, NULL);
out:
	cJSON_Delete(obj);
}

/* ---- update --------------------------------------------------------- */

static void do_update(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	cJSON *body;
	enum km_fv fv;
	char mbuf[MAX_MANAGER + 1];
	const char *manager = field_manager(rq, mbuf, sizeof(mbuf));
	const char *crv;
	uint64_t want = 0;

	if (field_validation(rq, rs, &fv))
		return;
	body = parse_body(rq, rs, body_is_yaml(rq));
	if (!body)
		return;
	if (check_identity(rq, rs, body))
		goto out;
	crv = km_meta_str(body, "resourceVersion");
	if (crv && km_parse_u64(crv, &want)) {
		bad_request(rs, "invalid resourceVersion \"%.32s\"", crv);
		goto out;
	}
	if (!crv && (km_res[r].flags & KM_CRD)) {
		km_resp_status(rs,
			       km_statusf(422, "Invalid", r, rq->name,
					  "%s.%s \"%s\" is invalid: "
					  "metadata.resourceVersion: Invalid "
					  "value: 0x0: must be specified for "
					  "an update",
					  km_res[r].kind, km_res[r].group,
					  rq->name));
		goto out;
	}
	for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
		struct km_obj *cur =
			km_store_get(ctx->store, r, rq->ns, rq->name);
		struct km_obj *o = NULL;
		cJSON *nobj;
		int rc;

		if (!cur) {
			not_found(rs, r, rq->name);
			goto out;
		}
		if (crv && want != cur->rv) {
			km_obj_unref(cur);
			conflict(rs, r, rq->name);
			goto out;
		}
		nobj = cJSON_Duplicate(body, 1);
		if (!nobj) {
			km_obj_unref(cur);
			km_resp_status(rs, NULL);
			goto out;
		}
		if (prepare_update(ctx, rq, rs, cur, nobj, manager, fv, 1,
				   &nobj)) {
			km_obj_unref(cur);
			goto out;
		}
		if (same_object(nobj, cur->tree) || dry_run(rq)) {
			if (dry_run(rq))
				km_resp_json(rs, 200, nobj);
			else
				resp_obj(rs, 200, cur);
			cJSON_Delete(nobj);
			km_obj_unref(cur);
			goto out;
		}
		rc = km_store_update(ctx->store, r, nobj, cur->rv, &o);
		km_obj_unref(cur);
		if (rc == HB_ECONFLICT)
			continue;
		if (rc == HB_ENOENT) {
			not_found(rs, r, rq->name);
			goto out;
		}
		if (rc) {
			km_resp_status(rs, NULL);
			goto out;
		}
		resp_obj(rs, 200, o);
		finish_finalizers(ctx, r, o);
		km_obj_unref(o);
		goto out;
	}
	conflict(rs, r, rq->name);
out:
	cJSON_Delete(body);
}

/* ---- patch ---------------------------------------------------------- */

enum ptype { P_MERGE, P_JSON, P_STRATEGIC, P_APPLY };

static int patch_type(const struct km_req *rq, struct km_resp *rs,
		      enum ptype *t)
{
	const char *ct = rq->header(rq->conn, "Content-Type");
	enum km_res r = (enum km_res)rq->res;

	if (ct && !strncasecmp(ct, "application/merge-patch+json", 28))
		*t = P_MERGE;
	else if (ct && !strncasecmp(ct, "application/json-patch+json", 27))
		*t = P_JSON;
	else if (ct && !strncasecmp(ct, "application/apply-patch+yaml", 28))
		*t = P_APPLY;
	else if (ct &&
		 !strncasecmp(ct, "application/strategic-merge-patch+json",
			      38) &&
		 !(km_res[r].flags & KM_CRD))
		*t = P_STRATEGIC;
	else {
		char msg[512];

		snprintf(msg, sizeof(msg),
			 "the body of the request was in an unknown format - "
			 "accepted media types include: "
			 "application/json-patch+json, "
			 "application/merge-patch+json, "
			 "application/apply-patch+yaml%s",
			 (km_res[r].flags & KM_CRD)
				 ? ""
				 : ", application/strategic-merge-patch+json");
		km_resp_status(
			rs, km_status_plain(415, "UnsupportedMediaType", msg));
		return HB_EINVAL;
	}
	return 0;
}

/* Server-side apply of a missing object: create it. */
static void apply_create(struct km_ctx *ctx, struct km_req *rq,
			 struct km_resp *rs, const cJSON *applied,
			 const char *manager, enum km_fv fv)
{
	enum km_res r = (enum km_res)rq->res;
	struct hb_err err = { 0 };
	cJSON *obj = NULL, *st = NULL;

	if (rq->sub) {
		not_found(rs, r, rq->name);
		return;
	}
	if (km_apply(NULL, applied, manager, NULL,
		     (km_res[r].flags & KM_STATUS) != 0, 1, km_res[r].gv, &obj,
		     &err)) {
		km_resp_status(rs, NULL);
		return;
	}
	{
		/* The managed fields computed by apply survive stamping. */
		cJSON *mf = cJSON_DetachItemFromObjectCaseSensitive(
			km_get(obj, "metadata"), "managedFields");

		if (stamp_new(r, obj, rq->ns) ||
		    (mf &&
		     km_set(km_get(obj, "metadata"), "managedFields", mf))) {
			cJSON_Delete(obj);
			km_resp_status(rs, NULL);
			return;
		}
	}
	if (km_valid_check(ctx->valid, r, obj, 1, fv, &rs->warnings, &st)) {
		cJSON_Delete(obj);
		km_resp_status(rs, st);
		return;
	}
	commit_create(ctx, rq, rs, obj);
}

static void do_patch(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	int has_status = (km_res[r].flags & KM_STATUS) != 0;
	char mbuf[MAX_MANAGER + 1];
	const char *manager;
	cJSON *patch;
	enum ptype t;
	enum km_fv fv;
	int force = bool_arg(rq, "force");

	if (patch_type(rq, rs, &t) || field_validation(rq, rs, &fv))
		return;
	if (t == P_APPLY && !arg(rq, "fieldManager")) {
		bad_request(rs, "PATCH, PUT or POST with apply requires "
				"fieldManager: fieldManager is required for "
				"apply requests");
		return;
	}
	if (t != P_APPLY && arg(rq, "force")) {
		bad_request(rs, "force: Forbidden: may not be specified for "
				"non-apply patch");
		return;
	}
	manager = field_manager(rq, mbuf, sizeof(mbuf));
	patch = parse_body(rq, rs, t == P_APPLY);
	if (!patch)
		return;
	if (t == P_APPLY && check_identity(rq, rs, patch))
		goto out;
	if (t != P_JSON && !cJSON_IsObject(patch)) {
		bad_request(rs, "the patch must be a JSON object");
		goto out;
	}
	for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
		struct km_obj *cur =
			km_store_get(ctx->store, r, rq->ns, rq->name);
		struct km_obj *o = NULL;
		struct hb_err err = { 0 };
		cJSON *nobj = NULL;
		const char *prv;
		uint64_t want;
		int rc;

		if (!cur) {
			if (t == P_APPLY)
				apply_create(ctx, rq, rs, patch, manager, fv);
			else
				not_found(rs, r, rq->name);
			goto out;
		}
		if (t == P_APPLY) {
			rc = km_apply(cur->tree, patch, manager, rq->sub,
				      has_status, force, km_res[r].gv, &nobj,
				      &err);
			if (rc == HB_ECONFLICT) {
				km_resp_status(rs, km_statusf(409, "Conflict",
							      r, rq->name, "%s",
							      err.msg));
				km_obj_unref(cur);
				goto out;
			}
		} else {
			nobj = cJSON_Duplicate(cur->tree, 1);
			rc = nobj ? 0 : HB_ENOMEM;
			if (!rc && t == P_JSON)
				rc = km_json_patch(&nobj, patch, &err);
			else if (!rc && t == P_STRATEGIC)
				rc = km_strategic_patch(
					&nobj, patch, km_openapi_kind_schema(r),
					km_openapi_builtin_defs(), &err);
			else if (!rc)
				rc = km_merge_patch(&nobj, patch);
			if (rc == HB_EINVAL) {
				cJSON_Delete(nobj);
				km_obj_unref(cur);
				km_resp_status(rs,
					       km_status_plain(422, "Invalid",
							       err.msg));
				goto out;
			}
		}
		if (rc) {
			cJSON_Delete(nobj);
			km_obj_unref(cur);
			km_resp_status(rs, NULL);
			goto out;
		}
		/* A resourceVersion in the patch is a precondition. */
		prv = km_meta_str(nobj, "resourceVersion");
		if (prv && (km_parse_u64(prv, &want) || want != cur->rv)) {
			cJSON_Delete(nobj);
			km_obj_unref(cur);
			conflict(rs, r, rq->name);
			goto out;
		}
		if (prepare_update(ctx, rq, rs, cur, nobj, manager, fv,
				   t != P_APPLY, &nobj)) {
			km_obj_unref(cur);
			goto out;
		}
		if (same_object(nobj, cur->tree) || dry_run(rq)) {
			if (dry_run(rq))
				km_resp_json(rs, 200, nobj);
			else
				resp_obj(rs, 200, cur);
			cJSON_Delete(nobj);
			km_obj_unref(cur);
			goto out;
		}
		rc = km_store_update(ctx->store, r, nobj, cur->rv, &o);
		km_obj_unref(cur);
		if (rc == HB_ECONFLICT)
			continue;
		if (rc == HB_ENOENT) {
			not_found(rs, r, rq->name);
			goto out;
		}
		if (rc) {
			km_resp_status(rs, NULL);
			goto out;
		}
		resp_obj(rs, 200, o);
		finish_finalizers(ctx, r, o);
		km_obj_unref(o);
		goto out;
	}
	conflict(rs, r, rq->name);
out:
	cJSON_Delete(patch);
}

/* ---- delete --------------------------------------------------------- */

struct delopts {
	const char *propagation; /* borrowed from args or opts */
	int64_t grace;		 /* -1: unset */
	const char *pre_uid, *pre_rv;
	cJSON *doc;
};

static int parse_delopts(const struct km_req *rq, struct km_resp *rs,
			 struct delopts *d)
{
	const char *g = arg(rq, "gracePeriodSeconds");
	const cJSON *v;
	uint64_t u;

	d->grace = -1;
	d->propagation = arg(rq, "propagationPolicy");
	if (g) {
		if (km_parse_u64(g, &u)) {
			bad_request(rs, "gracePeriodSeconds: Invalid value");
			return HB_EINVAL;
		}
		d->grace = (int64_t)u;
	}
	if (rq->body_len) {
		d->doc = cJSON_ParseWithLength(rq->body, rq->body_len);
		if (!cJSON_IsObject(d->doc)) {
			bad_request(rs, "the DeleteOptions body is not a JSON "
					"object");
			return HB_EINVAL;
		}
		if (!d->propagation)
			d->propagation = km_str(d->doc, "propagationPolicy");
		v = km_get(d->doc, "gracePeriodSeconds");
		if (cJSON_IsNumber(v) && d->grace < 0)
			d->grace = (int64_t)v->valuedouble;
		v = km_get(d->doc, "preconditions");
		d->pre_uid = km_str(v, "uid");
		d->pre_rv = km_str(v, "resourceVersion");
	}
	if (d->propagation && strcmp(d->propagation, "Orphan") &&
	    strcmp(d->propagation, "Background") &&
	    strcmp(d->propagation, "Foreground")) {
		km_resp_status(rs, km_status_plain(422, "Invalid",
						   "propagationPolicy: "
						   "Unsupported value"));
		return HB_EINVAL;
	}
	return 0;
}

/* The reply to a finished deletion: pods give the object, the others a
 * Status with details. */
static void deleted_reply(struct km_resp *rs, enum km_res r,
			  const struct km_obj *o)
{
	cJSON *st, *d;
	const char *uid = km_meta_str(o->tree, "uid");

	if (r == KM_POD) {
		resp_obj(rs, 200, o);
		return;
	}
	st = cJSON_CreateObject();
	d = cJSON_CreateObject();
	if (!st || !d || km_set_str(st, "kind", "Status") ||
	    km_set_str(st, "apiVersion", "v1") ||
	    km_set(st, "metadata", cJSON_CreateObject()) ||
	    km_set_str(st, "status", "Success") ||
	    km_set_str(d, "name", o->name) ||
	    (km_res[r].group[0] && km_set_str(d, "group", km_res[r].group)) ||
	    km_set_str(d, "kind", km_res[r].plural) ||
	    (uid && km_set_str(d, "uid", uid))) {
		cJSON_Delete(st);
		cJSON_Delete(d);
		km_resp_status(rs, NULL);
		return;
	}
	km_set(st, "details", d);
	km_resp_json(rs, 200, st);
	cJSON_Delete(st);
}

/*
 * Delete one object; *reply_obj (may be NULL) gets the version deleted
 * or marked.  Returns 0, or an HTTP-ish outcome after replying when rs is
 * not NULL: HB_ENOENT, HB_ECONFLICT (precondition), HB_ENOMEM.
 */
static int delete_one(struct km_ctx *ctx, enum km_res r, const char *ns,
		      const char *name, const struct delopts *d,
		      struct km_resp *rs, int dry)
{
	for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
		struct km_obj *cur = km_store_get(ctx->store, r, ns, name);
		struct km_obj *o = NULL;
		const cJSON *meta;
		const char *uid, *phase;
		int graceful, foreground, marked, rc;

		if (!cur) {
			if (rs)
				not_found(rs, r, name);
			return HB_ENOENT;
		}
		meta = km_get(cur->tree, "metadata");
		uid = km_str(meta, "uid");
		if ((d->pre_uid && (!uid || strcmp(d->pre_uid, uid))) ||
		    (d->pre_rv &&
		     strcmp(d->pre_rv, km_str(meta, "resourceVersion")))) {
			if (rs)
				km_resp_status(
					rs,
					km_statusf(
						409, "Conflict", r, name,
						"Precondition failed: %s "
						"in precondition: %s, %s "
						"in object meta: %s",
						d->pre_uid ? "UID"
							   : "ResourceVersion",
						d->pre_uid ? d->pre_uid
							   : d->pre_rv,
						d->pre_uid ? "UID"
							   : "ResourceVersion",
						d->pre_uid ? (uid ? uid : "")
							   : km_str(meta,
								    "resourceVe"
								    "rsion")));
			km_obj_unref(cur);
			return HB_ECONFLICT;
		}
		if (dry) {
			if (rs)
				resp_obj(rs, 200, cur);
			km_obj_unref(cur);
			return 0;
		}
		phase = km_str(km_get(cur->tree, "status"), "phase");
		foreground =
			d->propagation && !strcmp(d->propagation, "Foreground");
		graceful = r == KM_POD && d->grace != 0 && phase &&
			   (!strcmp(phase, "Running") ||
			    (!strcmp(phase, "Pending") &&
			     km_str(km_get(cur->tree, "spec"), "nodeName")));
		if (km_get(meta, "deletionTimestamp") && d->grace != 0) {
			/* Already being deleted. */
			if (rs)
				resp_obj(rs, 200, cur);
			km_obj_unref(cur);
			return 0;
		}
		marked = cJSON_GetArraySize(km_get(meta, "finalizers")) ||
			 foreground || graceful;
		if (marked) {
			/* Mark: the finalizers' owners (the controller for
			 * foregroundDeletion, the kubelet for a running
			 * pod) finish the deletion. */
			cJSON *nobj = cJSON_Duplicate(cur->tree, 1);
			cJSON *nm = km_get(nobj, "metadata");
			char ts[32];

			km_timestamp(ts, sizeof(ts), 0);
			if (!nobj || km_set_str(nm, "deletionTimestamp", ts) ||
			    km_set_num(nm, "deletionGracePeriodSeconds",
				       graceful ? (d->grace > 0 ? d->grace : 30)
						: 0)) {
				cJSON_Delete(nobj);
				km_obj_unref(cur);
				if (rs)
					km_resp_status(rs, NULL);
				return HB_ENOMEM;
			}
			if (foreground) {
				cJSON *fin = km_get(nm, "finalizers");

				if (!fin) {
					fin = cJSON_CreateArray();
					km_set(nm, "finalizers", fin);
				}
				cJSON_AddItemToArray(
					fin, cJSON_CreateString(
						     "foregroundDeletion"));
			}
			if ((km_res[r].flags & KM_CRD) &&
			    cJSON_IsNumber(km_get(nm, "generation")))
				km_set_num(
					nm, "generation",
					km_get(nm, "generation")->valuedouble +
						1);
			rc = km_store_update(ctx->store, r, nobj, cur->rv, &o);
		} else {
			if (d->propagation &&
			    !strcmp(d->propagation, "Orphan") && uid)
				km_ctl_orphan(ctx->ctl, uid);
			rc = km_store_delete(ctx->store, r, ns, name, cur->rv,
					     &o);
		}
		km_obj_unref(cur);
		if (rc == HB_ECONFLICT)
			continue;
		if (rc == HB_ENOENT) {
			if (rs)
				not_found(rs, r, name);
			return rc;
		}
		if (rc) {
			if (rs)
				km_resp_status(rs, NULL);
			return rc;
		}
		if (rs && marked)
			resp_obj(rs, 200, o);
		else if (rs)
			deleted_reply(rs, r, o);
		km_obj_unref(o);
		return 0;
	}
	if (rs)
		conflict(rs, r, name);
	return HB_ECONFLICT;
}

static void do_delete(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	struct delopts d = { 0 };

	if (!parse_delopts(rq, rs, &d))
		delete_one(ctx, (enum km_res)rq->res, rq->ns, rq->name, &d, rs,
			   dry_run(rq));
	cJSON_Delete(d.doc);
}

static void do_deletecollection(struct km_ctx *ctx, struct km_req *rq,
				struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	struct list_filter f = { NULL, NULL };
	struct delopts d = { 0 };
	struct km_obj **items = NULL;
	size_t n = 0;
	uint64_t rv;
	struct hb_buf b;

	hb_buf_init(&b, 0);
	if (parse_delopts(rq, rs, &d) || parse_selectors(rq, rs, &f))
		goto out;
	if (km_store_list(ctx->store, r, rq->ns, NULL, NULL,
			  (f.labels || f.fields) ? list_match : NULL, &f, 0,
			  &items, &n, NULL, &rv)) {
		km_resp_status(rs, NULL);
		goto out;
	}
	hb_buf_printf(&b,
		      "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{},"
		      "\"items\":[",
		      km_res[r].gv, km_res[r].list_kind);
	for (size_t i = 0, k = 0; i < n; i++) {
		if (delete_one(ctx, r, items[i]->ns, items[i]->name, &d, NULL,
			       dry_run(rq)))
			continue;
		if (k++)
			hb_buf_putc(&b, ',');
		hb_buf_append(&b, items[i]->json, items[i]->len);
	}
	if (hb_buf_puts(&b, "]}")) {
		km_resp_status(rs, NULL);
		goto out;
	}
	rs->code = 200;
	rs->len = b.len;
	rs->body = hb_buf_steal(&b);
	rs->ctype = "application/json";
out:
	for (size_t i = 0; i < n; i++)
		km_obj_unref(items[i]);
	free(items);
	km_selector_free(f.labels);
	km_selector_free(f.fields);
	cJSON_Delete(d.doc);
	hb_buf_free(&b);
}

/* ---- logs ----------------------------------------------------------- */

static void do_log(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	struct km_obj *pod = km_store_get(ctx->store, KM_POD, rq->ns, rq->name);
	const cJSON *cs, *c, *st;
	const char *want = arg(rq, "container"), *phase;
	const char *tl = arg(rq, "tailLines"), *lb = arg(rq, "limitBytes");
	uint64_t tail = 0, limit = 0;
	const char *cname = NULL, *init = NULL;
	char *path = NULL;
	int n = 0;

	if (!pod) {
		not_found(rs, KM_POD, rq->name);
		return;
	}
	cs = km_get(km_get(pod->tree, "spec"), "containers");
	cJSON_ArrayForEach (c, cs) {
		n++;
		if (want && km_str(c, "name") &&
		    !strcmp(km_str(c, "name"), want))
			cname = want;
	}
	/* An init container's log is its own file. */
	cJSON_ArrayForEach (
		c, km_get(km_get(pod->tree, "spec"), "initContainers")) {
		if (want && !cname && km_str(c, "name") &&
		    !strcmp(km_str(c, "name"), want))
			cname = init = want;
	}
	if (!want && n == 1)
		cname = km_str(cJSON_GetArrayItem(cs, 0), "name");
	if (!want && n > 1) {
		bad_request(rs, "a container name must be specified for pod %s",
			    rq->name);
		goto out;
	}
	if (!cname) {
		bad_request(rs, "container %.253s is not valid for pod %s",
			    want ? want : "", rq->name);
		goto out;
	}
	if (bool_arg(rq, "previous")) {
		bad_request(rs,
			    "previous terminated container \"%s\" in pod "
			    "\"%s\" not found",
			    cname, rq->name);
		goto out;
	}
	if ((tl && km_parse_u64(tl, &tail)) ||
	    (lb && km_parse_u64(lb, &limit))) {
		bad_request(rs, "tailLines and limitBytes must be integers");
		goto out;
	}
	st = km_get(pod->tree, "status");
	phase = km_str(st, "phase");
	path = km_kubelet_log_path(ctx->kubelet, rq->ns, rq->name, init);
	if (!path || !phase || (!init && !strcmp(phase, "Pending"))) {
		bad_request(rs,
			    "container \"%s\" in pod \"%s\" is waiting to "
			    "start: %s",
			    cname, rq->name,
			    !init && cJSON_GetArraySize(
					     km_get(km_get(pod->tree, "spec"),
						    "initContainers"))
				    ? "PodInitializing"
				    : "ContainerCreating");
		goto out;
	}
	rs->log = km_log_open(ctx, rq->ns, rq->name, init, path,
			      bool_arg(rq, "follow"), tl ? tail : UINT64_MAX,
			      limit);
	if (!rs->log) {
		km_resp_status(rs, NULL);
		goto out;
	}
	rs->code = 200;
	rs->ctype = "text/plain";
out:
	free(path);
	km_obj_unref(pod);
}

/* ---- writes by the controllers -------------------------------------- */

int km_internal_create(struct km_ctx *ctx, enum km_res r, cJSON *tree,
		       const char *manager, struct km_obj **out)
{
	cJSON *meta = km_obj_at(tree, "metadata");
	cJSON *st;
	char uid[37], ts[32];

	if (!meta) {
		cJSON_Delete(tree);
		return HB_ENOMEM;
	}
	km_uuid(uid);
	km_timestamp(ts, sizeof(ts), 0);
	/* A status made by the controller survives: detach it while the
	 * managed fields are computed. */
	st = cJSON_DetachItemFromObjectCaseSensitive(tree, "status");
	if (km_set_str(meta, "uid", uid) ||
	    km_set_str(meta, "creationTimestamp", ts) ||
	    ((km_res[r].flags & KM_CRD) && km_set_num(meta, "generation", 1)) ||
	    km_track_update(tree, NULL, manager, NULL,
			    (km_res[r].flags & KM_STATUS) != 0, km_res[r].gv) ||
	    (st && km_set(tree, "status", st))) {
		cJSON_Delete(tree);
		return HB_ENOMEM;
	}
	return km_store_create(ctx->store, r, tree, out);
}

int km_internal_update(struct km_ctx *ctx, enum km_res r, const char *ns,
		       const char *name, const char *manager, const char *sub,
		       km_mutate_fn fn, void *arg, struct km_obj **out)
{
	for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
		struct km_obj *cur = km_store_get(ctx->store, r, ns, name);
		cJSON *nobj;
		int rc;

		if (out)
			*out = NULL;
		if (!cur)
			return HB_ENOENT;
		nobj = cJSON_Duplicate(cur->tree, 1);
		if (!nobj) {
			km_obj_unref(cur);
			return HB_ENOMEM;
		}
		rc = fn(arg, nobj);
		if (rc == 0 && same_object(nobj, cur->tree))
			rc = 1;
		if (rc == 0 &&
		    km_track_update(nobj, cur->tree, manager, sub,
				    (km_res[r].flags & KM_STATUS) != 0,
				    km_res[r].gv))
			rc = HB_ENOMEM;
		if (rc) {
			cJSON_Delete(nobj);
			km_obj_unref(cur);
			return rc > 0 ? 0 : rc;
		}
		rc = km_store_update(ctx->store, r, nobj, cur->rv, out);
		km_obj_unref(cur);
		if (rc != HB_ECONFLICT)
			return rc;
	}
	return HB_ECONFLICT;
}

int km_internal_delete(struct km_ctx *ctx, enum km_res r, const char *ns,
		       const char *name)
{
	return km_store_delete(ctx->store, r, ns, name, 0, NULL);
}

/* ---- dispatch ------------------------------------------------------- */

static void method_not_allowed(struct km_resp *rs)
{
	km_resp_status(rs, km_status_plain(405, "MethodNotAllowed",
					   "the server does not allow this "
					   "method on the requested "
					   "resource"));
}

void km_api_serve(struct km_ctx *ctx, struct km_req *rq, struct km_resp *rs)
{
	enum km_res r = (enum km_res)rq->res;
	const char *m = rq->method;

	if (authorize(rq, rs))
		return;
	if ((km_res[r].flags & KM_CLUSTER) && (strcmp(m, "GET") || rq->sub)) {
		/* Nodes and namespaces are made at start-up and only
		 * read. */
		if (rq->sub)
			km_resp_status(rs, km_status_plain(
						   404, "NotFound",
						   "the server could not find "
						   "the requested resource"));
		else
			method_not_allowed(rs);
		return;
	}
	if (rq->sub) {
		int ok =
			(!strcmp(rq->sub, "status") &&
			 (km_res[r].flags & KM_STATUS)) ||
			(!strcmp(rq->sub, "log") && (km_res[r].flags & KM_LOG));

		if (!ok || !rq->name) {
			km_resp_status(
				rs, km_status_plain(404, "NotFound",
						    "the server could not find "
						    "the requested resource"));
			return;
		}
		if (!strcmp(rq->sub, "log")) {
			if (strcmp(m, "GET"))
				method_not_allowed(rs);
			else
				do_log(ctx, rq, rs);
			return;
		}
	}
	if (!strcmp(m, "GET")) {
		if (bool_arg(rq, "watch"))
			do_watch(ctx, rq, rs);
		else if (rq->name)
			do_get(ctx, rq, rs);
		else
			do_list(ctx, rq, rs);
	} else if (!strcmp(m, "POST") && !rq->name && (rq->ns || KM_NO_NS(r))) {
		do_create(ctx, rq, rs);
	} else if (!strcmp(m, "PUT") && rq->name) {
		do_update(ctx, rq, rs);
	} else if (!strcmp(m, "PATCH") && rq->name) {
		do_patch(ctx, rq, rs);
	} else if (!strcmp(m, "DELETE") && rq->name && !rq->sub) {
		do_delete(ctx, rq, rs);
	} else if (!strcmp(m, "DELETE") && !rq->name &&
		   (rq->ns || KM_NO_NS(r))) {
		do_deletecollection(ctx, rq, rs);
	} else {
		method_not_allowed(rs);
	}
}
