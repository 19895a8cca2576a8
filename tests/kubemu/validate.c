/*
 * validate.c - what the API server checks before it stores an object.
 *
 * Custom resources (MPIJob, TrainJob) are checked against the real CRD
 * schemas with the project's validator (hpcbridge/schema.h), in the
 * server's order: unknown and duplicate fields are decoding problems
 * (dropped with a warning, or 400 BadRequest under fieldValidation=Strict),
 * the schema's defaults are applied, and what still violates the schema is
 * 422 Invalid with one cause per violation.  TrainJobs also get the Trainer
 * webhook's rules, which run at admission.  The MPI Operator's rules are
 * not admission: the operator applies them when it syncs
 * (km_valid_mpijob_rules).
 *
 * Built-in kinds get the checks the server makes that matter here: valid
 * names, containers in pods, string data in ConfigMaps.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/schema.h"
#include "kubemu.h"

#define MAX_CRD_FILE (8u * 1024 * 1024)

struct version_schema {
	char *group, *kind, *version;
	cJSON *schema; /* openAPIV3Schema */
};

struct km_valid {
	struct hb_schema_set *set;
	struct version_schema *vs;
	size_t nvs;
};

void km_valid_free(struct km_valid *v)
{
	if (!v)
		return;
	hb_schema_set_free(v->set);
	for (size_t i = 0; i < v->nvs; i++) {
		free(v->vs[i].group);
		free(v->vs[i].kind);
		free(v->vs[i].version);
		cJSON_Delete(v->vs[i].schema);
	}
	free(v->vs);
	free(v);
}

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct hb_buf b;
	char chunk[65536];
	size_t n;
	int rc = 0;

	if (!f)
		return HB_EIO;
	hb_buf_init(&b, MAX_CRD_FILE);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if ((rc = hb_buf_append(&b, chunk, n)))
			break;
	}
	if (!rc && ferror(f))
		rc = HB_EIO;
	fclose(f);
	if (rc) {
		hb_buf_free(&b);
		return rc;
	}
	*len = b.len;
	*buf = hb_buf_steal(&b);
	hb_buf_free(&b);
	return *buf ? 0 : HB_ENOMEM;
}

/* Keep each served version's schema of a CRD, for defaulting. */
static int keep_schemas(struct km_valid *v, const cJSON *crd)
{
	const cJSON *spec = km_get(crd, "spec");
	const char *group = km_str(spec, "group");
	const char *kind = km_str(km_get(spec, "names"), "kind");
	const cJSON *ver;

	if (!group || !kind)
		return HB_EINVAL;
	cJSON_ArrayForEach (ver, km_get(spec, "versions")) {
		const cJSON *sch =
			km_get(km_get(ver, "schema"), "openAPIV3Schema");
		struct version_schema *nv;

		if (!km_str(ver, "name") || !sch)
			continue;
		nv = realloc(v->vs, (v->nvs + 1) * sizeof(*nv));
		if (!nv)
			return HB_ENOMEM;
		v->vs = nv;
		nv = &v->vs[v->nvs];
		nv->group = strdup(group);
		nv->kind = strdup(kind);
		nv->version = strdup(km_str(ver, "name"));
		nv->schema = cJSON_Duplicate(sch, 1);
		v->nvs++;
		if (!nv->group || !nv->kind || !nv->version || !nv->schema)
			return HB_ENOMEM;
	}
	return 0;
}

static int is_crd_file(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && ((n > 5 && !strcmp(name + n - 5, ".yaml")) ||
				  (n > 4 && !strcmp(name + n - 4, ".yml")) ||
				  (n > 5 && !strcmp(name + n - 5, ".json")));
}

struct km_valid *km_valid_new(const char *dir, struct hb_err *err)
{
	struct km_valid *v = calloc(1, sizeof(*v));
	DIR *d = NULL;
	struct dirent *de;
	char path[4096];

	if (!v || !(v->set = hb_schema_set_new())) {
		hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto fail;
	}
	if (!dir)
		return v;
	d = opendir(dir);
	if (!d) {
		hb_err_set(err, HB_EIO, dir, 0, "%s", strerror(errno));
		goto fail;
	}
	while ((de = readdir(d))) {
		char *buf = NULL;
		size_t len;
		cJSON *doc = NULL;
		const char *kind;
		int rc;

		if (!is_crd_file(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path))
			continue;
		if (read_file(path, &buf, &len)) {
			hb_err_set(err, HB_EIO, path, 0, "cannot read");
			goto fail;
		}
		rc = hb_doc_parse(buf, len, path, &doc, err);
		free(buf);
		if (rc)
			goto fail;
		kind = km_str(doc, "kind");
		if (!kind || strcmp(kind, "CustomResourceDefinition")) {
			cJSON_Delete(doc);
			continue;
		}
		rc = hb_schema_set_add_crd_tree(v->set, doc, path, err);
		if (!rc && keep_schemas(v, doc))
			rc = hb_err_set(err, HB_EINVAL, path, 0,
					"a CRD without group or kind");
		cJSON_Delete(doc);
		if (rc)
			goto fail;
	}
	closedir(d);
	return v;
fail:
	if (d)
		closedir(d);
	km_valid_free(v);
	return NULL;
}

/* ---- defaults ------------------------------------------------------- */

static int apply_defaults(const cJSON *schema, cJSON *value, int depth)
{
	const cJSON *props = km_get(schema, "properties");
	const cJSON *addl = km_get(schema, "additionalProperties");
	const cJSON *p;
	cJSON *m;

	if (depth > 64)
		return 0;
	if (cJSON_IsArray(value)) {
		const cJSON *items = km_get(schema, "items");

		if (!cJSON_IsObject(items))
			return 0;
		cJSON_ArrayForEach (m, value) {
			if (apply_defaults(items, m, depth + 1))
				return HB_ENOMEM;
		}
		return 0;
	}
	if (!cJSON_IsObject(value))
		return 0;
	cJSON_ArrayForEach (p, props) {
		const cJSON *def = km_get(p, "default");

		/* metadata is ObjectMeta, whatever the schema says. */
		if (depth == 0 && !strcmp(p->string, "metadata"))
			continue;
		m = km_get(value, p->string);
		if (!m && def) {
			if (km_set(value, p->string, cJSON_Duplicate(def, 1)))
				return HB_ENOMEM;
			m = km_get(value, p->string);
		}
		if (m && apply_defaults(p, m, depth + 1))
			return HB_ENOMEM;
	}
	if (cJSON_IsObject(addl)) {
		cJSON_ArrayForEach (m, value) {
			if (km_get(props, m->string))
				continue;
			if (apply_defaults(addl, m, depth + 1))
				return HB_ENOMEM;
		}
	}
	return 0;
}

static const cJSON *schema_for(const struct km_valid *v, enum km_res r)
{
	for (size_t i = 0; i < v->nvs; i++) {
		if (!strcmp(v->vs[i].group, km_res[r].group) &&
		    !strcmp(v->vs[i].kind, km_res[r].kind) &&
		    !strcmp(v->vs[i].version, km_res[r].version))
			return v->vs[i].schema;
	}
	return NULL;
}

const cJSON *km_valid_schema(const struct km_valid *v, enum km_res r)
{
	return v ? schema_for(v, r) : NULL;
}

/* ---- pruning -------------------------------------------------------- */

/*
 * Remove what a violation path names: "a.b[0].c", "metadata.labels[k/x]"
 * (a bracket after an array is an index, after an object a key, with
 * \xNN escapes).  With keep_last, only the earlier members of a duplicated
 * key go (the server keeps the last one).
 */
static void prune_path(cJSON *obj, const char *path, int keep_last)
{
	cJSON *cur = obj, *parent = NULL;
	char key[512];
	const char *p = path;

	key[0] = '\0';
	while (*p && cur) {
		size_t n = 0;

		if (*p == '.')
			p++;
		if (*p == '[') {
			p++;
			while (*p && *p != ']' && n + 1 < sizeof(key)) {
				if (p[0] == '\\' && p[1] == 'x' && p[2] &&
				    p[3]) {
					char hex[3] = { p[2], p[3], 0 };

					key[n++] = (char)strtol(hex, NULL, 16);
					p += 4;
				} else {
					key[n++] = *p++;
				}
			}
			if (*p == ']')
				p++;
		} else {
			while (*p && *p != '.' && *p != '[' &&
			       n + 1 < sizeof(key))
				key[n++] = *p++;
		}
		key[n] = '\0';
		parent = cur;
		if (cJSON_IsArray(cur)) {
			uint64_t idx;

			if (km_parse_u64(key, &idx) ||
			    idx >= (uint64_t)cJSON_GetArraySize(cur))
				return;
			cur = cJSON_GetArrayItem(cur, (int)idx);
		} else {
			cur = km_get(cur, key);
		}
	}
	if (!cur || !parent || !cJSON_IsObject(parent))
		return;
	if (!keep_last) {
		while (km_get(parent, key))
			km_del(parent, key);
		return;
	}
	/* Drop every member named key but the last. */
	for (;;) {
		cJSON *first = NULL, *c;
		int count = 0;

		cJSON_ArrayForEach (c, parent) {
			if (c->string && !strcmp(c->string, key)) {
				if (!first)
					first = c;
				count++;
			}
		}
		if (count < 2)
			return;
		cJSON_Delete(cJSON_DetachItemViaPointer(parent, first));
	}
}

/* ---- checks --------------------------------------------------------- */

static int lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A DNS-1123 subdomain; a label when label is set. */
int km_dns_name(const char *s, int label)
{
	size_t n = strlen(s), start = 0;

	if (n == 0 || n > (label ? 63u : 253u))
		return 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (label && i < n)
			return 0;
		if (i == start || i - start > 63 || !lower_alnum(s[start]) ||
		    !lower_alnum(s[i - 1]))
			return 0;
		for (size_t j = start; j < i; j++) {
			if (!lower_alnum(s[j]) && s[j] != '-')
				return 0;
		}
		start = i + 1;
	}
	return 1;
}

void km_cause(struct km_causes *c, const char *field, const char *fmt, ...)
{
	char m[1024];
	va_list ap;
	cJSON *o;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	o = cJSON_CreateObject();
	if (o && !km_set_str(o, "reason", "FieldValueInvalid") &&
	    !km_set_str(o, "message", m) && !km_set_str(o, "field", field))
		cJSON_AddItemToArray(c->arr, o);
	else
		cJSON_Delete(o);
	hb_buf_printf(&c->msg, "%s%s: %s", c->n ? ", " : "", field, m);
	c->n++;
}

void km_cause_dns(struct km_causes *c, const char *field, const char *v,
		  int label)
{
	if (!v)
		km_cause(c, field, "Required value");
	else if (label && !km_dns_name(v, 1))
		km_cause(c, field,
			 "Invalid value: \"%.64s\": a lowercase RFC 1123 label "
			 "must consist of lower case alphanumeric characters "
			 "or '-'",
			 v);
	else if (!label && !km_dns_name(v, 0))
		km_cause(c, field,
			 "Invalid value: \"%.253s\": a lowercase RFC 1123 "
			 "subdomain must consist of lower case alphanumeric "
			 "characters, '-' or '.', and must start and end with "
			 "an alphanumeric character",
			 v);
}

static void check_builtin(enum km_res r, const cJSON *obj, struct km_causes *c)
{
	const cJSON *spec = km_get(obj, "spec");
	const cJSON *x;
	int i = 0;

	switch (r) {
	case KM_POD: {
		const cJSON *cs = km_get(spec, "containers");

		if (!cJSON_IsArray(cs) || cJSON_GetArraySize(cs) == 0) {
			km_cause(c, "spec.containers", "Required value");
			break;
		}
		cJSON_ArrayForEach (x, cs) {
			char f[64];
			const char *n = km_str(x, "name");

			snprintf(f, sizeof(f), "spec.containers[%d].name", i);
			km_cause_dns(c, f, n, 1);
			snprintf(f, sizeof(f), "spec.containers[%d].image", i);
			if (!km_str(x, "image"))
				km_cause(c, f, "Required value");
			i++;
		}
		km_dra_check_pod(obj, c);
		break;
	}
	case KM_CONFIGMAP:
		cJSON_ArrayForEach (x, km_get(obj, "data")) {
			if (!cJSON_IsString(x)) {
				char f[300];

				snprintf(f, sizeof(f), "data[%.250s]",
					 x->string);
				km_cause(c, f, "must be of type string");
			}
		}
		break;
	case KM_EVENT:
		if (!cJSON_IsObject(km_get(obj, "involvedObject")))
			km_cause(c, "involvedObject", "Required value");
		break;
	case KM_RCTEMPLATE:
	case KM_DEVCLASS:
	case KM_RSLICE:
		km_dra_check(r, obj, c);
		break;
	case KM_LEASE:
		x = km_get(spec, "leaseDurationSeconds");
		if (x && !cJSON_IsNumber(x))
			km_cause(c, "spec.leaseDurationSeconds",
			      "must be of type integer");
		x = km_get(spec, "holderIdentity");
		if (x && !cJSON_IsString(x) && !cJSON_IsNull(x))
			km_cause(c, "spec.holderIdentity",
			      "must be of type string");
		break;
	default:
		break;
	}
}

/* A Secret's data key: [-._a-zA-Z0-9]+, not "." or "..". */
static int secret_key_ok(const char *k)
{
	if (!*k || !strcmp(k, ".") || !strcmp(k, "..") || strlen(k) > 253)
		return 0;
	return strspn(k, "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
			 "WXYZ0123456789") == strlen(k);
}

/*
 * A Secret as the API server's conversion makes it: stringData merged
 * into data (base64, as data is stored and served; stringData wins),
 * then dropped; type Opaque by default.  Values of data that are not
 * base64 and keys that are not valid are causes of a 422.
 */
static int secret_normalize(cJSON *obj, struct km_causes *c)
{
	cJSON *sd = km_get(obj, "stringData"), *data, *x;
	struct hb_buf b;
	char f[300];

	if (!km_get(obj, "type") && km_set_str(obj, "type", "Opaque"))
		return HB_ENOMEM;
	data = km_get(obj, "data");
	if (cJSON_GetArraySize(sd) && !cJSON_IsObject(data)) {
		data = km_obj_at(obj, "data");
		if (!data)
			return HB_ENOMEM;
	}
	hb_buf_init(&b, 4 * 1024 * 1024);
	cJSON_ArrayForEach (x, sd) {
		if (!cJSON_IsString(x))
			continue;
		b.len = 0;
		if (hb_buf_base64(&b, x->valuestring, strlen(x->valuestring)) ||
		    hb_buf_putc(&b, '\0') ||
		    km_set_str(data, x->string, b.data)) {
			hb_buf_free(&b);
			return HB_ENOMEM;
		}
	}
	km_del(obj, "stringData");
	cJSON_ArrayForEach (x, data) {
		snprintf(f, sizeof(f), "data[%.250s]", x->string);
		b.len = 0;
		if (!secret_key_ok(x->string))
			km_cause(c, f,
			      "Invalid value: \"%.250s\": a valid config key "
			      "must consist of alphanumeric characters, '-', "
			      "'_' or '.'",
			      x->string);
		else if (!cJSON_IsString(x) ||
			 hb_buf_unbase64(&b, x->valuestring,
					 strlen(x->valuestring)))
			km_cause(c, f, "Invalid value: illegal base64 data");
	}
	hb_buf_free(&b);
	return 0;
}

static cJSON *invalid_status(enum km_res r, const cJSON *obj, struct km_causes *c)
{
	const char *name = km_meta_str(obj, "name");
	char *msg = NULL;
	cJSON *st;
	struct hb_buf b;

	hb_buf_init(&b, 256 * 1024);
	if (km_res[r].group[0])
		hb_buf_printf(&b, "%s.%s", km_res[r].kind, km_res[r].group);
	else
		hb_buf_puts(&b, km_res[r].kind);
	hb_buf_printf(&b, " \"%s\" is invalid: %s%s%s", name ? name : "",
		      c->n > 1 ? "[" : "", c->msg.data ? c->msg.data : "",
		      c->n > 1 ? "]" : "");
	msg = b.data ? b.data : "invalid";
	st = km_status(422, "Invalid", msg, r, name);
	if (st) {
		cJSON *d = km_obj_at(st, "details");

		if (d)
			km_set(d, "causes", c->arr);
		else
			cJSON_Delete(c->arr);
		c->arr = NULL;
	}
	hb_buf_free(&b);
	return st;
}

int km_valid_check(struct km_valid *v, enum km_res r, cJSON *obj, int create,
		   enum km_fv fv, struct hb_buf *warnings, cJSON **status)
{
	struct km_causes c = { .n = 0 };
	struct hb_buf viol, dec;
	struct hb_err err = { 0 };
	const char *name = km_meta_str(obj, "name");
	const char *ns = km_meta_str(obj, "namespace");
	const cJSON *schema;
	char *line, *next;
	int rc = 0, ndec = 0;

	*status = NULL;
	hb_buf_init(&viol, 0);
	hb_buf_init(&dec, 256 * 1024);
	hb_buf_init(&c.msg, 256 * 1024);
	c.arr = cJSON_CreateArray();
	if (!c.arr) {
		rc = HB_ENOMEM;
		goto out;
	}
	if (!(km_res[r].flags & KM_CRD)) {
		if (!name)
			km_cause(&c, "metadata.name",
			      "Required value: name or generateName is "
			      "required");
		else if (!km_dns_name(name, 0))
			km_cause(&c, "metadata.name",
			      "Invalid value: \"%.253s\": a lowercase RFC "
			      "1123 subdomain must consist of lower case "
			      "alphanumeric characters, '-' or '.', and must "
			      "start and end with an alphanumeric character",
			      name);
		if (ns && !km_dns_name(ns, 1))
			km_cause(&c, "metadata.namespace",
			      "Invalid value: \"%.63s\"", ns);
		if (r == KM_SECRET && secret_normalize(obj, &c)) {
			rc = HB_ENOMEM;
			goto out;
		}
		check_builtin(r, obj, &c);
		goto verdict;
	}
	schema = schema_for(v, r);
	if (schema && apply_defaults(schema, obj, 0)) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = hb_schema_validate_all(v->set, obj, create ? HB_SCHEMA_CREATE : 0,
				    &viol, &err);
	if (rc == HB_ENOENT) {
		/* No CRD loaded for this kind: nothing to check against. */
		rc = 0;
		goto verdict;
	}
	if (rc == HB_ENOMEM)
		goto out;
	rc = 0;
	if (r == KM_TRAINJOB) {
		/* The Trainer's validating webhook. */
		struct hb_err e2 = { 0 };

		if (hb_schema_check_rules(obj, &viol, &e2) == HB_ENOMEM) {
			rc = HB_ENOMEM;
			goto out;
		}
	}
	for (line = viol.data; line && *line; line = next) {
		char *colon;
		const char *msg;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		colon = strstr(line, ": ");
		if (!colon)
			continue;
		*colon = '\0';
		msg = colon + 2;
		if (!strcmp(msg, "unknown field") ||
		    !strcmp(msg, "duplicate field")) {
			hb_buf_printf(&dec, "%s%s \"%s\"", ndec ? ", " : "",
				      msg, line);
			ndec++;
			if (fv == KM_FV_WARN && warnings)
				hb_buf_printf(warnings, "%s \"%s\"\n", msg,
					      line);
			if (fv != KM_FV_STRICT)
				prune_path(obj, line,
					   !strcmp(msg, "duplicate field"));
			continue;
		}
		km_cause(&c, line, "%s", msg);
	}
	if (ndec && fv == KM_FV_STRICT) {
		*status = km_statusf(400, "BadRequest", r, NULL,
				     "%s in version \"%s\" cannot be handled "
				     "as a %s: strict decoding error: %s",
				     km_res[r].kind, km_res[r].version,
				     km_res[r].kind, dec.data);
		rc = HB_EINVAL;
		goto out;
	}
verdict:
	if (c.n) {
		*status = invalid_status(r, obj, &c);
		rc = HB_EINVAL;
	}
out:
	if (rc == HB_ENOMEM && !*status)
		*status =
			km_status_plain(500, "InternalError", "out of memory");
	cJSON_Delete(c.arr);
	hb_buf_free(&c.msg);
	hb_buf_free(&viol);
	hb_buf_free(&dec);
	return rc;
}

int km_valid_mpijob_rules(const cJSON *mpijob, struct hb_buf *msg)
{
	struct hb_buf viol;
	struct hb_err err = { 0 };
	int rc, n = 0;
	char *line, *next;

	hb_buf_init(&viol, 0);
	rc = hb_schema_check_rules(mpijob, &viol, &err);
	if (rc != HB_EINVAL) {
		hb_buf_free(&viol);
		return rc == HB_ENOMEM ? HB_ENOMEM : 0;
	}
	hb_buf_puts(msg, "Found validation errors: ");
	for (line = viol.data; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		hb_buf_printf(msg, "%s%s", n++ ? ", " : "", line);
	}
	hb_buf_free(&viol);
	return HB_EINVAL;
}
