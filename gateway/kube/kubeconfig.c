/*
 * kubeconfig.c - where the Kubernetes client's configuration comes from:
 * kubeconfig files (merged as kubectl merges them), the in-cluster service
 * account, and the credentials that change under a running client (token
 * files, exec credential plugins).
 *
 * Merging follows client-go's loader: files in order; a cluster, user or
 * context is taken whole from the first file that names it; the first
 * current-context set wins.  Fields are read with their types checked, and
 * an error names the file, the line and the field
 * ("a.yaml:12: users[0].user.tokenFile: ...").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/file.h"
#include "kube_int.h"

extern char **environ;

#define SA_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"
/* Most clusters, users or contexts across the files. */
#define ENTRIES_MAX 10000
/* Longest file list in $KUBECONFIG. */
#define PATHS_MAX    64
#define EXEC_V1	     "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* The tests' name for the monotonic clock; the code calls
 * hb_clock_mono_ms() itself. */
int64_t hb_kube_now_ms(void)
{
	return hb_clock_mono_ms();
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ------------------------------------------------------------- time */

static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

int hb_kube_parse_time(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	const char *p = s;
	time_t t;

	if (!s || digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
	    *p++ != '-' || digits(&p, 2, &d) ||
	    (*p != 'T' && *p != 't' && *p != ' '))
		return HB_EINVAL;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
	    *p++ != ':' || digits(&p, 2, &sec))
		return HB_EINVAL;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return HB_EINVAL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) ||
		    oh > 23 || om > 59)
			return HB_EINVAL;
	} else {
		return HB_EINVAL;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    sec > 60)
		return HB_EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	*out = (int64_t)t - sign * (oh * 3600 + om * 60);
	return 0;
}

/* ------------------------------------------------------- the config */

static void exec_free(struct hb_kube_exec *x)
{
	if (!x)
		return;
	for (char **a = x->argv; a && *a; a++)
		free(*a);
	for (char **e = x->env; e && *e; e++)
		free(*e);
	free(x->argv);
	free(x->env);
	free(x->api_version);
	free(x->what);
	free(x);
}

void hb_kube_blob_free(struct hb_kube_blob *b)
{
	if (b->data)
		explicit_bzero(b->data, b->len);
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

int hb_kube_blob_dup(const struct hb_kube_blob *from, struct hb_kube_blob *to)
{
	if (!from->data)
		return 0;
	to->data = malloc(from->len + 1);
	if (!to->data)
		return HB_ENOMEM;
	memcpy(to->data, from->data, from->len);
	to->data[from->len] = '\0';
	to->len = from->len;
	return 0;
}

static void str_wipe(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

void hb_kube_config_free(struct hb_kube_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->source);
	free(cfg->server);
	free(cfg->ns);
	free(cfg->tls_server_name);
	free(cfg->proxy_url);
	hb_kube_blob_free(&cfg->ca);
	hb_kube_blob_free(&cfg->cert);
	hb_kube_blob_free(&cfg->key);
	str_wipe(cfg->token);
	free(cfg->token_file);
	free(cfg->username);
	str_wipe(cfg->password);
	exec_free(cfg->exec);
	free(cfg);
}

const char *hb_kube_config_server(const struct hb_kube_config *cfg)
{
	return cfg->server;
}

const char *hb_kube_config_namespace(const struct hb_kube_config *cfg)
{
	return cfg->ns;
}

/* ----------------------------------------------------- field access */

/* Where a field lives: the file and the path of its parent object. */
struct where {
	const char *file;
	const char *dir; /* the file's directory, for relative paths */
	char path[96];
	unsigned flags;
	struct hb_err *err;
};

static int fail_at(const struct where *w, const cJSON *item, int code,
		   const char *key, const char *what)
{
	return hb_err_set(w->err, code, w->file,
			  item ? (unsigned)hb_doc_line(item) : 0, "%s%s%s: %s",
			  w->path, w->path[0] && key ? "." : "", key ? key : "",
			  what);
}

/* A getter's "KEY: why" put at w: "FILE:LINE: PATH.KEY: why". */
static int fail_get(const struct where *w, const cJSON *obj, const char *key,
		    int code, const struct hb_err *e)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return hb_err_set(w->err, code, w->file,
			  it ? (unsigned)hb_doc_line(it) : 0, "%s%s%s", w->path,
			  w->path[0] ? "." : "", e->msg);
}

/* An optional string; *out NULL when absent or null. */
static int get_str(const struct where *w, const cJSON *obj, const char *key,
		   const char **out)
{
	struct hb_err e = { 0 };
	int rc;

	*out = NULL;
	rc = hb_doc_get_str(obj, key, SIZE_MAX, 0, out, &e);
	return rc ? fail_get(w, obj, key, rc, &e) : 0;
}

static int get_bool(const struct where *w, const cJSON *obj, const char *key,
		    int *out)
{
	struct hb_err e = { 0 };
	int rc;

	*out = 0;
	rc = hb_doc_get_bool(obj, key, 0, out, &e);
	return rc ? fail_get(w, obj, key, rc, &e) : 0;
}

static int sub_where(const struct where *w, struct where *sub, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));
static int sub_where(const struct where *w, struct where *sub, const char *fmt,
		     ...)
{
	va_list ap;
	int n;

	*sub = *w;
	va_start(ap, fmt);
	n = vsnprintf(sub->path, sizeof(sub->path), fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= sizeof(sub->path) ? HB_ETOOBIG : 0;
}

/* A path as the file gives it, made relative to the file's directory. */
static int resolve(const struct where *w, const char *path, char **out)
{
	struct hb_buf b;
	int rc;

	if (path[0] == '/' || !w->dir) {
		*out = strdup(path);
		return *out ? 0 : HB_ENOMEM;
	}
	hb_buf_init(&b, PATH_MAX);
	rc = hb_buf_printf(&b, "%s/%s", w->dir, path);
	if (rc) {
		hb_buf_free(&b);
		return hb_err_set(w->err, rc, w->file, 0, "%s: path too long",
				  path);
	}
	*out = hb_buf_steal(&b);
	return *out ? 0 : HB_ENOMEM;
}

/* The -data form (base64, whitespace allowed) or the file form of PEM
 * bytes; data wins. */
static int get_pem(const struct where *w, const cJSON *obj,
		   const char *file_key, const char *data_key,
		   struct hb_kube_blob *out)
{
	const char *file, *data;
	struct hb_buf b, clean;
	int rc;

	if ((rc = get_str(w, obj, file_key, &file)) ||
	    (rc = get_str(w, obj, data_key, &data)))
		return rc;
	hb_buf_init(&b, HB_KUBE_FILE_MAX);
	hb_buf_init(&clean, HB_KUBE_FILE_MAX * 2);
	if (data && *data) {
		for (const char *p = data; *p; p++) {
			if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
				continue;
			if ((rc = hb_buf_putc(&clean, *p)))
				break;
		}
		if (!rc)
			rc = hb_buf_unbase64(&b, clean.data ? clean.data : "",
					     clean.len);
		if (rc) {
			fail_at(w,
				cJSON_GetObjectItemCaseSensitive(obj, data_key),
				rc, data_key,
				rc == HB_EINVAL ? "not base64" : "too large");
			goto out;
		}
	} else if (file && *file) {
		char *path = NULL;
		char what[160];

		if ((rc = resolve(w, file, &path)))
			goto out;
		snprintf(what, sizeof(what), "%s: %s%s%s", w->file, w->path,
			 w->path[0] ? "." : "", file_key);
		if (!(w->flags & HB_KUBE_NO_FILES))
			rc = hb_file_read(path, HB_KUBE_FILE_MAX, what, &b,
					       w->err);
		free(path);
		if (rc)
			goto out;
	} else {
		goto out;
	}
	out->len = b.len;
	out->data = hb_buf_steal(&b);
	if (!out->data)
		rc = HB_ENOMEM;
out:
	hb_buf_free(&b);
	hb_buf_free(&clean);
	return rc;
}

/* ---------------------------------------------------------- merging */

struct ent {
	const char *name;
	const cJSON *body; /* the cluster, user or context object */
	const char *file;
	const char *dir;
	int idx;
};

struct section {
	const char *key;  /* "clusters" */
	const char *body; /* "cluster" */
	struct ent *v;
	size_t n, cap;
};

struct merged {
	struct section sec[3]; /* clusters, users, contexts */
	const char *current;
	cJSON **docs;
	char **dirs;
	size_t ndocs;
};

static const struct ent *find(const struct section *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

static int merge_section(struct section *s, const cJSON *doc,
			 const struct where *w)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, s->key);
	const cJSON *it;
	int idx = 0;

	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return fail_at(w, arr, HB_EINVAL, s->key, "must be a list");
	cJSON_ArrayForEach (it, arr) {
		struct where sw;
		const char *name;
		const cJSON *body;
		int rc;

		sub_where(w, &sw, "%s[%d]", s->key, idx);
		if (!cJSON_IsObject(it))
			return fail_at(&sw, it, HB_EINVAL, NULL,
				       "must be a mapping");
		if ((rc = get_str(&sw, it, "name", &name)))
			return rc;
		if (!name || !*name)
			return fail_at(&sw, it, HB_EINVAL, "name",
				       "missing or empty");
		body = cJSON_GetObjectItemCaseSensitive(it, s->body);
		if (body && !cJSON_IsObject(body) && !cJSON_IsNull(body))
			return fail_at(&sw, body, HB_EINVAL, s->body,
				       "must be a mapping");
		if (find(s, name)) {
			idx++;
			continue; /* the first file to name it wins */
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 8;
			struct ent *v;

			if (cap > ENTRIES_MAX)
				return hb_err_set(w->err, HB_ETOOBIG, w->file,
						  0, "more than %d %s",
						  ENTRIES_MAX, s->key);
			v = realloc(s->v, cap * sizeof(*v));
			if (!v)
				return HB_ENOMEM;
			s->v = v;
			s->cap = cap;
		}
		s->v[s->n++] =
			(struct ent){ .name = name,
				      .body = cJSON_IsObject(body) ? body
								   : NULL,
				      .file = w->file,
				      .dir = w->dir,
				      .idx = idx };
		idx++;
	}
	return 0;
}

static int merge_doc(struct merged *m, const cJSON *doc, const char *file,
		     const char *dir, unsigned flags, struct hb_err *err)
{
	struct where w = {
		.file = file, .dir = dir, .flags = flags, .err = err
	};
	const char *cur;
	int rc;

	if (cJSON_IsNull(doc))
		return 0; /* an empty file */
	if (!cJSON_IsObject(doc))
		return hb_err_set(err, HB_EINVAL, file, 0,
				  "a kubeconfig must be a mapping");
	for (int i = 0; i < 3; i++)
		if ((rc = merge_section(&m->sec[i], doc, &w)))
			return rc;
	if ((rc = get_str(&w, doc, "current-context", &cur)))
		return rc;
	if (!m->current && cur && *cur)
		m->current = cur;
	return 0;
}

static void merged_free(struct merged *m)
{
	for (int i = 0; i < 3; i++)
		free(m->sec[i].v);
	for (size_t i = 0; i < m->ndocs; i++) {
		cJSON_Delete(m->docs[i]);
		free(m->dirs[i]);
	}
	free(m->docs);
	free(m->dirs);
}

static char *dir_of(const char *name)
{
	const char *slash = strrchr(name, '/');

	if (!slash)
		return strdup(".");
	if (slash == name)
		return strdup("/");
	return strndup(name, (size_t)(slash - name));
}

/* ----------------------------------------------------- the pieces */

static int load_cluster(struct hb_kube_config *c, const struct ent *e,
			unsigned flags, struct hb_err *err)
{
	struct where w = {
		.file = e->file, .dir = e->dir, .flags = flags, .err = err
	};
	const char *server, *tsn, *proxy;
	int rc, insecure;

	snprintf(w.path, sizeof(w.path), "clusters[%d].cluster", e->idx);
	if (!e->body)
		return fail_at(&w, NULL, HB_EINVAL, NULL, "missing");
	if ((rc = get_str(&w, e->body, "server", &server)) ||
	    (rc = get_str(&w, e->body, "tls-server-name", &tsn)) ||
	    (rc = get_str(&w, e->body, "proxy-url", &proxy)) ||
	    (rc = get_bool(&w, e->body, "insecure-skip-tls-verify", &insecure)))
		return rc;
	if (!server || !*server)
		return fail_at(&w, e->body, HB_EINVAL, "server",
			       "missing or empty");
	if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
		return fail_at(
			&w, cJSON_GetObjectItemCaseSensitive(e->body, "server"),
			HB_EINVAL, "server", "not an http:// or https:// URL");
	if ((rc = get_pem(&w, e->body, "certificate-authority",
			  "certificate-authority-data", &c->ca)))
		return rc;
	if (insecure && c->ca.data)
		return fail_at(&w, e->body, HB_ECONFLICT,
			       "insecure-skip-tls-verify",
			       "a certificate authority and "
			       "insecure-skip-tls-verify together are not "
			       "allowed");
	c->insecure = insecure;
	c->server = strdup(server);
	if (!c->server)
		return HB_ENOMEM;
	for (size_t n = strlen(c->server); n > 8 && c->server[n - 1] == '/';)
		c->server[--n] = '\0';
	if ((tsn && *tsn && !(c->tls_server_name = strdup(tsn))) ||
	    (proxy && *proxy && !(c->proxy_url = strdup(proxy))))
		return HB_ENOMEM;
	return 0;
}

/* A list of strings as a NULL-terminated vector after first (owned,
 * freed here on failure). */
static int str_list(const struct where *w, const cJSON *obj, const char *key,
		    char ***out, char *first)
{
	size_t extra = 1;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
	const cJSON *it;
	size_t n = 0;
	int i = 0;

	if (arr && !cJSON_IsNull(arr) && !cJSON_IsArray(arr)) {
		free(first);
		return fail_at(w, arr, HB_EINVAL, key, "must be a list");
	}
	n = arr && cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
	*out = calloc(n + extra + 1, sizeof(char *));
	if (!*out) {
		free(first);
		return HB_ENOMEM;
	}
	(*out)[0] = first;
	if (!n)
		return 0;
	cJSON_ArrayForEach (it, arr) {
		if (!cJSON_IsString(it)) {
			struct where sw;

			sub_where(w, &sw, "%s.%s[%d]", w->path, key, i);
			return fail_at(&sw, it, HB_EINVAL, NULL,
				       "must be a string");
		}
		if (!((*out)[extra + (size_t)i] = strdup(it->valuestring)))
			return HB_ENOMEM;
		i++;
	}
	return 0;
}

static int load_exec(struct hb_kube_config *c, const struct where *uw,
		     const cJSON *ex)
{
	struct where w;
	const char *cmd, *api, *mode, *hint;
	char *cmd0 = NULL;
	const cJSON *env, *it;
	struct hb_kube_exec *x;
	int rc, i = 0;
	size_t n;

	sub_where(uw, &w, "%s.exec", uw->path);
	if (!cJSON_IsObject(ex))
		return fail_at(&w, ex, HB_EINVAL, NULL, "must be a mapping");
	if ((rc = get_str(&w, ex, "command", &cmd)) ||
	    (rc = get_str(&w, ex, "apiVersion", &api)) ||
	    (rc = get_str(&w, ex, "interactiveMode", &mode)) ||
	    (rc = get_str(&w, ex, "installHint", &hint)))
		return rc;
	if (!cmd || !*cmd)
		return fail_at(&w, ex, HB_EINVAL, "command",
			       "missing or empty");
	if (!api || (strcmp(api, EXEC_V1) && strcmp(api, EXEC_V1BETA1)))
		return fail_at(&w, ex, HB_EUNSUP, "apiVersion",
			       "must be " EXEC_V1 " or " EXEC_V1BETA1);
	if (!strcmp(api, EXEC_V1) && !mode)
		return fail_at(&w, ex, HB_EINVAL, "interactiveMode",
			       "required with " EXEC_V1);
	if (mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable") &&
	    strcmp(mode, "Always"))
		return fail_at(&w, ex, HB_EINVAL, "interactiveMode",
			       "must be Never, IfAvailable or Always");
	if (mode && !strcmp(mode, "Always"))
		return fail_at(&w, ex, HB_EUNSUP, "interactiveMode",
			       "Always needs a terminal, and there is none");
	x = calloc(1, sizeof(*x));
	if (!x)
		return HB_ENOMEM;
	c->exec = x;
	if (!(x->api_version = strdup(api)))
		return HB_ENOMEM;
	/* A relative command with a '/' is relative to the file. */
	if (strchr(cmd, '/')) {
		if ((rc = resolve(&w, cmd, &cmd0)))
			return rc;
	} else if (!(cmd0 = strdup(cmd))) {
		return HB_ENOMEM;
	}
	if ((rc = str_list(&w, ex, "args", &x->argv, cmd0)))
		return rc;
	if ((rc = get_bool(&w, ex, "provideClusterInfo", &x->cluster_info)))
		return rc;
	env = cJSON_GetObjectItemCaseSensitive(ex, "env");
	if (env && !cJSON_IsNull(env) && !cJSON_IsArray(env))
		return fail_at(&w, env, HB_EINVAL, "env", "must be a list");
	n = cJSON_IsArray(env) ? (size_t)cJSON_GetArraySize(env) : 0;
	if (!(x->env = calloc(n + 1, sizeof(char *))))
		return HB_ENOMEM;
	if (n) {
		cJSON_ArrayForEach (it, env) {
			struct where ew;
			const char *name, *value;
			struct hb_buf b;

			sub_where(&w, &ew, "%s.env[%d]", w.path, i);
			if (!cJSON_IsObject(it))
				return fail_at(&ew, it, HB_EINVAL, NULL,
					       "must be a mapping");
			if ((rc = get_str(&ew, it, "name", &name)) ||
			    (rc = get_str(&ew, it, "value", &value)))
				return rc;
			if (!name || !*name || strchr(name, '='))
				return fail_at(&ew, it, HB_EINVAL, "name",
					       "missing, empty or with '='");
			hb_buf_init(&b, 0);
			if ((rc = hb_buf_printf(&b, "%s=%s", name,
						value ? value : ""))) {
				hb_buf_free(&b);
				return rc;
			}
			if (!(x->env[i++] = hb_buf_steal(&b)))
				return HB_ENOMEM;
		}
	}
	{
		char what[160];

		snprintf(what, sizeof(what), "%s: %s", w.file, w.path);
		if (hint && *hint) {
			size_t l = strlen(what);

			snprintf(what + l, sizeof(what) - l, " (%.80s)", hint);
		}
		if (!(x->what = strdup(what)))
			return HB_ENOMEM;
	}
	return 0;
}

static int load_user(struct hb_kube_config *c, const struct ent *e,
		     unsigned flags, struct hb_err *err)
{
	struct where w = {
		.file = e->file, .dir = e->dir, .flags = flags, .err = err
	};
	const char *token, *tfile, *user, *pass, *as;
	const cJSON *ex, *ap;
	int rc;

	snprintf(w.path, sizeof(w.path), "users[%d].user", e->idx);
	if (!e->body)
		return 0; /* a user with no credentials */
	if ((rc = get_str(&w, e->body, "token", &token)) ||
	    (rc = get_str(&w, e->body, "tokenFile", &tfile)) ||
	    (rc = get_str(&w, e->body, "username", &user)) ||
	    (rc = get_str(&w, e->body, "password", &pass)) ||
	    (rc = get_str(&w, e->body, "as", &as)))
		return rc;
	ap = cJSON_GetObjectItemCaseSensitive(e->body, "auth-provider");
	if (ap && !cJSON_IsNull(ap))
		return fail_at(&w, ap, HB_EUNSUP, "auth-provider",
			       "not supported (use an exec plugin)");
	if (as && *as)
		return fail_at(&w, e->body, HB_EUNSUP, "as",
			       "impersonation is not supported");
	if ((rc = get_pem(&w, e->body, "client-certificate",
			  "client-certificate-data", &c->cert)) ||
	    (rc = get_pem(&w, e->body, "client-key", "client-key-data",
			  &c->key)))
		return rc;
	if (!c->cert.data != !c->key.data && !(flags & HB_KUBE_NO_FILES))
		return fail_at(&w, e->body, HB_EINVAL,
			       c->cert.data ? "client-key"
					    : "client-certificate",
			       "a client certificate needs its key, and a key "
			       "its certificate");
	if (((token && *token) || (tfile && *tfile)) &&
	    ((user && *user) || (pass && *pass)))
		return fail_at(&w, e->body, HB_ECONFLICT, "username",
			       "a bearer token and a username/password "
			       "together are not allowed");
	if (token && *token && !(c->token = strdup(token)))
		return HB_ENOMEM;
	if ((user && *user && !(c->username = strdup(user))) ||
	    (pass && *pass && !(c->password = strdup(pass))))
		return HB_ENOMEM;
	if (tfile && *tfile) {
		struct hb_buf b;
		char what[160];

		if ((rc = resolve(&w, tfile, &c->token_file)))
			return rc;
		snprintf(what, sizeof(what), "%s: %s.tokenFile", w.file,
			 w.path);
		hb_buf_init(&b, HB_KUBE_FILE_MAX);
		if (!(flags & HB_KUBE_NO_FILES))
			rc = hb_file_read(c->token_file, HB_KUBE_FILE_MAX,
					       what, &b, err);
		if (b.data)
			explicit_bzero(b.data, b.len);
		hb_buf_free(&b);
		if (rc)
			return rc;
	}
	ex = cJSON_GetObjectItemCaseSensitive(e->body, "exec");
	if (ex && !cJSON_IsNull(ex))
		return load_exec(c, &w, ex);
	return 0;
}

int hb_kube_config_parse(const struct hb_kube_src *srcs, size_t n,
			 const char *context, unsigned flags,
			 struct hb_kube_config **out, struct hb_err *err)
{
	struct merged m = { .sec = { { .key = "clusters", .body = "cluster" },
				     { .key = "users", .body = "user" },
				     { .key = "contexts",
				       .body = "context" } } };
	struct hb_kube_config *c = NULL;
	const struct ent *ctx, *cl, *us = NULL;
	const char *cname, *uname, *ns;
	struct where w = { .flags = flags, .err = err };
	int rc = 0;

	*out = NULL;
	m.docs = calloc(n ? n : 1, sizeof(*m.docs));
	m.dirs = calloc(n ? n : 1, sizeof(*m.dirs));
	if (!m.docs || !m.dirs) {
		rc = HB_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rc = hb_doc_parse(srcs[i].text, srcs[i].len, srcs[i].name,
				  &m.docs[i], err);
		if (rc)
			goto out;
		m.ndocs = i + 1;
		if (!(m.dirs[i] = dir_of(srcs[i].name))) {
			rc = HB_ENOMEM;
			goto out;
		}
		rc = merge_doc(&m, m.docs[i], srcs[i].name, m.dirs[i], flags,
			       err);
		if (rc)
			goto out;
	}
	if (!context || !*context)
		context = m.current;
	if (!context) {
		rc = hb_err_set(err, HB_ENOENT, n ? srcs[0].name : NULL, 0,
				"current-context is not set and no context "
				"was asked for");
		goto out;
	}
	ctx = find(&m.sec[2], context);
	if (!ctx) {
		rc = hb_err_set(err, HB_ENOENT, n ? srcs[0].name : NULL, 0,
				"context \"%s\" not found", context);
		goto out;
	}
	w.file = ctx->file;
	w.dir = ctx->dir;
	snprintf(w.path, sizeof(w.path), "contexts[%d].context", ctx->idx);
	if (!ctx->body) {
		rc = fail_at(&w, NULL, HB_EINVAL, NULL, "missing");
		goto out;
	}
	if ((rc = get_str(&w, ctx->body, "cluster", &cname)) ||
	    (rc = get_str(&w, ctx->body, "user", &uname)) ||
	    (rc = get_str(&w, ctx->body, "namespace", &ns)))
		goto out;
	if (!cname || !*cname) {
		rc = fail_at(&w, ctx->body, HB_EINVAL, "cluster",
			     "missing or empty");
		goto out;
	}
	if (!(cl = find(&m.sec[0], cname))) {
		rc = fail_at(
			&w,
			cJSON_GetObjectItemCaseSensitive(ctx->body, "cluster"),
			HB_ENOENT, "cluster", "no such cluster");
		goto out;
	}
	if (uname && *uname && !(us = find(&m.sec[1], uname))) {
		rc = fail_at(
			&w, cJSON_GetObjectItemCaseSensitive(ctx->body, "user"),
			HB_ENOENT, "user", "no such user");
		goto out;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		rc = HB_ENOMEM;
		goto out;
	}
	if ((rc = load_cluster(c, cl, flags, err)) ||
	    (us && (rc = load_user(c, us, flags, err))))
		goto out;
	c->ns = strdup(ns && *ns ? ns : "default");
	{
		struct hb_buf b;

		hb_buf_init(&b, 0);
		rc = hb_buf_printf(&b, "%s (context %s)", ctx->file, context);
		c->source = hb_buf_steal(&b);
	}
	if (rc || !c->ns || !c->source)
		rc = rc ? rc : HB_ENOMEM;
out:
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	if (rc)
		hb_kube_config_free(c);
	else
		*out = c;
	merged_free(&m);
	return rc;
}

int hb_kube_config_load(const char *paths, const char *context,
			struct hb_kube_config **out, struct hb_err *err)
{
	struct hb_kube_src srcs[PATHS_MAX];
	struct hb_buf bufs[PATHS_MAX];
	char *list = NULL, *next, *names[PATHS_MAX];
	size_t n = 0;
	int rc = 0;

	*out = NULL;
	if (!paths || !*paths)
		paths = getenv("KUBECONFIG");
	if (paths && *paths) {
		list = strdup(paths);
	} else {
		const char *home = getenv("HOME");
		struct hb_buf b;

		if (!home || !*home)
			return hb_err_set(err, HB_ENOENT, NULL, 0,
					  "no kubeconfig: $KUBECONFIG and "
					  "$HOME are unset");
		hb_buf_init(&b, PATH_MAX);
		if ((rc = hb_buf_printf(&b, "%s/.kube/config", home))) {
			hb_buf_free(&b);
			return hb_err_set(err, rc, NULL, 0,
					  "$HOME is too long");
		}
		list = hb_buf_steal(&b);
	}
	if (!list)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (char *p = list; p; p = next) {
		int dup = !*p;
		struct hb_err e = { 0 };

		next = strchr(p, ':');
		if (next)
			*next++ = '\0';
		for (size_t i = 0; i < n; i++)
			dup |= !strcmp(names[i], p);
		if (dup)
			continue;
		if (n == PATHS_MAX) {
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"more than %d kubeconfig files",
					PATHS_MAX);
			goto out;
		}
		hb_buf_init(&bufs[n], HB_DOC_MAX);
		rc = hb_file_read(p, HB_DOC_MAX, NULL, &bufs[n], &e);
		if (rc == HB_ENOENT) {
			hb_buf_free(&bufs[n]);
			rc = 0;
			continue; /* missing files are skipped */
		}
		if (rc) {
			hb_buf_free(&bufs[n]);
			hb_err_set(err, rc, NULL, 0, "%s", e.msg);
			goto out;
		}
		names[n] = p;
		srcs[n] = (struct hb_kube_src){ .name = p,
						.text = bufs[n].data
								? bufs[n].data
								: "",
						.len = bufs[n].len };
		n++;
	}
	if (!n) {
		rc = hb_err_set(err, HB_ENOENT, NULL, 0,
				"no kubeconfig file found in \"%s\"",
				paths && *paths ? paths : "~/.kube/config");
		goto out;
	}
	rc = hb_kube_config_parse(srcs, n, context, 0, out, err);
out:
	for (size_t i = 0; i < n; i++)
		hb_buf_free(&bufs[i]);
	free(list);
	return rc;
}

/* ------------------------------------------------------- in-cluster */

static int read_trimmed(const char *path, const char *what, char **out,
			struct hb_err *err)
{
	struct hb_buf b;
	int rc;

	hb_buf_init(&b, HB_KUBE_FILE_MAX);
	rc = hb_file_read(path, HB_KUBE_FILE_MAX, what, &b, err);
	if (rc) {
		hb_buf_free(&b);
		return rc;
	}
	while (b.len && strchr(" \t\r\n", b.data[b.len - 1]))
		b.data[--b.len] = '\0';
	*out = hb_buf_steal(&b);
	return *out ? 0 : HB_ENOMEM;
}

int hb_kube_config_incluster(const char *root, struct hb_kube_config **out,
			     struct hb_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct hb_kube_config *c;
	struct hb_buf b;
	char path[PATH_MAX];
	char *tok = NULL;
	int rc = 0;

	*out = NULL;
	if (!host || !*host || !port || !*port)
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "not in a cluster: KUBERNETES_SERVICE_HOST "
				  "or KUBERNETES_SERVICE_PORT is unset");
	if (!root)
		root = SA_ROOT;
	if (!(c = calloc(1, sizeof(*c))))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	hb_buf_init(&b, 0);
	/* An IPv6 address goes in brackets. */
	if ((rc = hb_buf_printf(&b,
				strchr(host, ':') ? "https://[%s]:%s"
						  : "https://%s:%s",
				host, port)))
		goto out;
	c->server = hb_buf_steal(&b);
	c->source = strdup("in-cluster");
	snprintf(path, sizeof(path), "%s/token", root);
	if (!(c->token_file = strdup(path)) || !c->server || !c->source) {
		rc = HB_ENOMEM;
		goto out;
	}
	if ((rc = read_trimmed(path, "service account token", &tok, err)))
		goto out;
	snprintf(path, sizeof(path), "%s/ca.crt", root);
	hb_buf_init(&b, HB_KUBE_FILE_MAX);
	if ((rc = hb_file_read(path, HB_KUBE_FILE_MAX,
				    "service account CA", &b, err)))
		goto out;
	c->ca.len = b.len;
	if (!(c->ca.data = hb_buf_steal(&b))) {
		rc = HB_ENOMEM;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/namespace", root);
	{
		struct hb_err e = { 0 };

		if (read_trimmed(path, NULL, &c->ns, &e) || !c->ns || !*c->ns) {
			free(c->ns);
			c->ns = strdup("default");
		}
	}
	if (!c->ns)
		rc = HB_ENOMEM;
out:
	str_wipe(tok);
	hb_buf_free(&b);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	if (rc)
		hb_kube_config_free(c);
	else
		*out = c;
	return rc;
}

/* ------------------------------------------------------ credentials */

struct hb_kube_auth {
	pthread_mutex_t mu;
	char *token;	  /* static token */
	char *token_file; /* NULL: none */
	char *username, *password;
	/* The token file as last read. */
	char *file_token;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	/* The exec plugin and what it gave last. */
	struct hb_kube_exec *exec;
	char *exec_info; /* KUBERNETES_EXEC_INFO */
	int have_exec;
	char *exec_token;
	struct hb_kube_blob exec_cert, exec_key;
	int64_t exec_expiry; /* seconds since the epoch, 0: never */
	unsigned exec_runs;
};

static int token_file_check(struct hb_kube_auth *a, int refresh,
			    struct hb_err *err);

static char **strv_dup(char **v)
{
	size_t n = 0;
	char **o;

	while (v && v[n])
		n++;
	o = calloc(n + 1, sizeof(*o));
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(o[i] = strdup(v[i]))) {
			for (size_t j = 0; j < i; j++)
				free(o[j]);
			free(o);
			return NULL;
		}
	return o;
}

static char *exec_info(const struct hb_kube_config *cfg)
{
	cJSON *root = cJSON_CreateObject(), *spec, *cl;
	char *s = NULL;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "kind", "ExecCredential");
	cJSON_AddStringToObject(root, "apiVersion", cfg->exec->api_version);
	spec = cJSON_AddObjectToObject(root, "spec");
	if (!spec)
		goto out;
	cJSON_AddBoolToObject(spec, "interactive", 0);
	if (cfg->exec->cluster_info) {
		cl = cJSON_AddObjectToObject(spec, "cluster");
		if (!cl)
			goto out;
		cJSON_AddStringToObject(cl, "server", cfg->server);
		if (cfg->tls_server_name)
			cJSON_AddStringToObject(cl, "tls-server-name",
						cfg->tls_server_name);
		if (cfg->insecure)
			cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify",
					      1);
		if (cfg->proxy_url)
			cJSON_AddStringToObject(cl, "proxy-url",
						cfg->proxy_url);
		if (cfg->ca.data) {
			struct hb_buf b;

			hb_buf_init(&b, 0);
			if (hb_buf_base64(&b, cfg->ca.data, cfg->ca.len)) {
				hb_buf_free(&b);
				goto out;
			}
			cJSON_AddStringToObject(cl,
						"certificate-authority-data",
						b.data ? b.data : "");
			hb_buf_free(&b);
		}
	}
	s = cJSON_PrintUnformatted(root);
out:
	cJSON_Delete(root);
	return s;
}

int hb_kube_auth_new(const struct hb_kube_config *cfg,
		     struct hb_kube_auth **out)
{
	struct hb_kube_auth *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return HB_ENOMEM;
	pthread_mutex_init(&a->mu, NULL);
	if ((cfg->token && !(a->token = strdup(cfg->token))) ||
	    (cfg->token_file && !(a->token_file = strdup(cfg->token_file))) ||
	    (cfg->username && !(a->username = strdup(cfg->username))) ||
	    (cfg->password && !(a->password = strdup(cfg->password))))
		goto nomem;
	if (cfg->exec) {
		a->exec = calloc(1, sizeof(*a->exec));
		if (!a->exec ||
		    !(a->exec->api_version = strdup(cfg->exec->api_version)) ||
		    !(a->exec->argv = strv_dup(cfg->exec->argv)) ||
		    !(a->exec->env = strv_dup(cfg->exec->env)) ||
		    !(a->exec->what = xstrdup(cfg->exec->what)) ||
		    !(a->exec_info = exec_info(cfg)))
			goto nomem;
		a->exec->cluster_info = cfg->exec->cluster_info;
	}
	if (a->token_file) {
		/* Read now, as client-go does; a failure shows at first use. */
		struct hb_err e = { 0 };

		token_file_check(a, 1, &e);
	}
	*out = a;
	return 0;
nomem:
	hb_kube_auth_free(a);
	return HB_ENOMEM;
}

void hb_kube_auth_free(struct hb_kube_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	str_wipe(a->token);
	free(a->token_file);
	free(a->username);
	str_wipe(a->password);
	str_wipe(a->file_token);
	exec_free(a->exec);
	free(a->exec_info);
	str_wipe(a->exec_token);
	hb_kube_blob_free(&a->exec_cert);
	hb_kube_blob_free(&a->exec_key);
	free(a);
}

unsigned hb_kube_auth_exec_runs(struct hb_kube_auth *a)
{
	unsigned n;

	pthread_mutex_lock(&a->mu);
	n = a->exec_runs;
	pthread_mutex_unlock(&a->mu);
	return n;
}

void hb_kube_creds_clear(struct hb_kube_creds *c)
{
	str_wipe(c->token);
	free(c->username);
	str_wipe(c->password);
	hb_kube_blob_free(&c->cert);
	hb_kube_blob_free(&c->key);
	memset(c, 0, sizeof(*c));
}

/* Re-read the token file when it changed (or refresh); keep the last
 * good value when it cannot be read. */
static int token_file_check(struct hb_kube_auth *a, int refresh,
			    struct hb_err *err)
{
	struct stat st;
	char *tok = NULL;
	struct hb_err e = { 0 };
	int rc;

	if (stat(a->token_file, &st)) {
		if (a->file_token)
			return 0;
		return hb_err_set(err, HB_EPERM, NULL, 0, "token file %s: %s",
				  a->token_file, strerror(errno));
	}
	if (!refresh && a->file_token && st.st_dev == a->dev &&
	    st.st_ino == a->ino && st.st_size == a->size &&
	    st.st_mtim.tv_sec == a->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == a->mtime.tv_nsec)
		return 0;
	rc = read_trimmed(a->token_file, "token file", &tok, &e);
	if (rc || !tok || !*tok) {
		str_wipe(tok);
		if (a->file_token)
			return 0; /* keep the last good one */
		return hb_err_set(err, HB_EPERM, NULL, 0, "%s",
				  rc ? e.msg : "token file is empty");
	}
	str_wipe(a->file_token);
	a->file_token = tok;
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	a->size = st.st_size;
	a->mtime = st.st_mtim;
	return 0;
}

/* One run of an exec plugin: what exec_spawn() sets up and tears down. */
struct exec_run {
	char **envp;
	struct hb_buf info; /* "KUBERNETES_EXEC_INFO=..." */
	posix_spawn_file_actions_t fa;
	int fa_ok;
	int po[2], pe[2]; /* its stdout and stderr */
	pid_t pid;
	int status;
};

/* The plugin's environment into run->envp: ours, then its env, then
 * KUBERNETES_EXEC_INFO. */
static int exec_env(const struct hb_kube_auth *a, struct exec_run *run)
{
	const struct hb_kube_exec *x = a->exec;
	size_t n = 0, k = 0;
	int rc;

	for (char **e = environ; e && *e; e++)
		n++;
	for (char **e = x->env; e && *e; e++)
		n++;
	run->envp = calloc(n + 2, sizeof(*run->envp));
	if (!run->envp)
		return HB_ENOMEM;
	/* The parent's environment, without what the plugin's env sets. */
	for (char **e = environ; e && *e; e++) {
		size_t l = strcspn(*e, "=");
		int over = !strncmp(*e, "KUBERNETES_EXEC_INFO=", 21);

		for (char **o = x->env; !over && o && *o; o++)
			over = !strncmp(*e, *o, l) && (*o)[l] == '=';
		if (!over)
			run->envp[k++] = *e;
	}
	for (char **e = x->env; e && *e; e++)
		run->envp[k++] = *e;
	if ((rc = hb_buf_printf(&run->info, "KUBERNETES_EXEC_INFO=%s",
				a->exec_info)))
		return rc;
	run->envp[k++] = run->info.data;
	return 0;
}

/* Start the plugin: stdin /dev/null, stdout and stderr into pipes whose
 * read ends run keeps. */
static int exec_start(struct hb_kube_auth *a, struct exec_run *run,
		      struct hb_err *err)
{
	const struct hb_kube_exec *x = a->exec;
	int rc;

	if (pipe2(run->po, O_CLOEXEC) || pipe2(run->pe, O_CLOEXEC))
		return hb_err_set(err, HB_EIO, NULL, 0, "%s: pipe: %s", x->what,
				  strerror(errno));
	if (posix_spawn_file_actions_init(&run->fa))
		return HB_ENOMEM;
	run->fa_ok = 1;
	posix_spawn_file_actions_addopen(&run->fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&run->fa, run->po[1], 1);
	posix_spawn_file_actions_adddup2(&run->fa, run->pe[1], 2);
	rc = strchr(x->argv[0], '/')
		     ? posix_spawn(&run->pid, x->argv[0], &run->fa, NULL,
				   x->argv, run->envp)
		     : posix_spawnp(&run->pid, x->argv[0], &run->fa, NULL,
				    x->argv, run->envp);
	if (rc) {
		int e = rc;

		run->pid = -1;
		return hb_err_set(err, e == ENOENT ? HB_ENOENT : HB_EPERM, NULL,
				  0, "%s: cannot run %s: %s", x->what,
				  x->argv[0], strerror(e));
	}
	close(run->po[1]);
	close(run->pe[1]);
	run->po[1] = run->pe[1] = -1;
	a->exec_runs++;
	return 0;
}

/* Read the plugin's stdout into out and the start of its stderr into
 * errbuf until it closes both, or the deadline passes. */
static int exec_read(const struct hb_kube_auth *a, struct exec_run *run,
		     int64_t deadline, struct hb_buf *out,
		     struct hb_buf *errbuf, struct hb_err *err)
{
	const struct hb_kube_exec *x = a->exec;
	int *po = run->po, *pe = run->pe;

	while (po[0] >= 0 || pe[0] >= 0) {
		struct pollfd pf[2] = { { .fd = po[0], .events = POLLIN },
					{ .fd = pe[0], .events = POLLIN } };
		int64_t left = deadline - hb_clock_mono_ms();
		char tmp[4096];

		if (left <= 0)
			return hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
					  "%s: %s did not finish in time",
					  x->what, x->argv[0]);
		if (poll(pf, 2, left > 1000 ? 1000 : (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return hb_err_set(err, HB_EIO, NULL, 0, "%s: poll: %s",
					  x->what, strerror(errno));
		}
		for (int i = 0; i < 2; i++) {
			ssize_t r;
			int *fd = i ? &pe[0] : &po[0];

			if (*fd < 0 || !pf[i].revents)
				continue;
			r = read(*fd, tmp, sizeof(tmp));
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (i == 0 && hb_buf_append(out, tmp, (size_t)r))
				return hb_err_set(err, HB_ETOOBIG, NULL, 0,
						  "%s: %s wrote more than %u "
						  "bytes",
						  x->what, x->argv[0],
						  HB_KUBE_EXEC_OUT_MAX);
			if (i == 1 && errbuf->len < 4096)
				hb_buf_append(errbuf, tmp,
					      (size_t)r < 4096 - errbuf->len
						      ? (size_t)r
						      : 4096 - errbuf->len);
		}
	}
	return 0;
}

/* Both pipes closed: wait for the exit, until the deadline; then its
 * status is an error unless it exited 0. */
static int exec_wait(const struct hb_kube_auth *a, struct exec_run *run,
		     int64_t deadline, const struct hb_buf *errbuf,
		     struct hb_err *err)
{
	const struct hb_kube_exec *x = a->exec;
	int status;

	for (;;) {
		pid_t w = waitpid(run->pid, &run->status, WNOHANG);

		if (w == run->pid) {
			run->pid = -1;
			break;
		}
		if (w < 0 && errno != EINTR) {
			run->pid = -1;
			return hb_err_set(err, HB_EIO, NULL, 0,
					  "%s: waitpid: %s", x->what,
					  strerror(errno));
		}
		if (hb_clock_mono_ms() >= deadline)
			return hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
					  "%s: %s did not exit in time",
					  x->what, x->argv[0]);
		usleep(5000);
	}
	status = run->status;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		size_t l = strcspn(errbuf->data ? errbuf->data : "", "\n");

		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: %s failed (%s %d)%s%.*s", x->what,
				  x->argv[0],
				  WIFEXITED(status) ? "exit" : "signal",
				  WIFEXITED(status) ? WEXITSTATUS(status)
						    : WTERMSIG(status),
				  l ? ": " : "", (int)(l > 200 ? 200 : l),
				  errbuf->data ? errbuf->data : "");
	}
	return 0;
}

/* Kill the plugin if it still runs, reap it, and release the run. */
static void exec_end(struct exec_run *run)
{
	if (run->pid > 0) {
		kill(run->pid, SIGKILL);
		while (waitpid(run->pid, &run->status, 0) < 0 && errno == EINTR)
			;
	}
	if (run->fa_ok)
		posix_spawn_file_actions_destroy(&run->fa);
	for (int i = 0; i < 2; i++) {
		if (run->po[i] >= 0)
			close(run->po[i]);
		if (run->pe[i] >= 0)
			close(run->pe[i]);
	}
	free(run->envp);
	hb_buf_free(&run->info);
}

/* Run the plugin; out gets its stdout, errbuf the start of its stderr. */
static int exec_spawn(struct hb_kube_auth *a, int64_t deadline,
		      struct hb_buf *out, struct hb_buf *errbuf,
		      struct hb_err *err)
{
	struct exec_run run = { .po = { -1, -1 }, .pe = { -1, -1 }, .pid = -1 };
	int rc;

	hb_buf_init(&run.info, 0);
	if (!(rc = exec_env(a, &run)) && !(rc = exec_start(a, &run, err)) &&
	    !(rc = exec_read(a, &run, deadline, out, errbuf, err)))
		rc = exec_wait(a, &run, deadline, errbuf, err);
	exec_end(&run);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	return rc;
}

static int exec_pem(const cJSON *status, const char *key,
		    struct hb_kube_blob *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(status, key);

	if (!it || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsString(it))
		return HB_EPROTO;
	if (!*it->valuestring)
		return 0;
	out->len = strlen(it->valuestring);
	out->data = strdup(it->valuestring);
	return out->data ? 0 : HB_ENOMEM;
}

/* Run the plugin and keep what it gave. */
static int exec_refresh(struct hb_kube_auth *a, int64_t deadline,
			struct hb_err *err)
{
	const struct hb_kube_exec *x = a->exec;
	struct hb_buf out, eb;
	cJSON *doc = NULL;
	const cJSON *st, *kind, *api, *tok, *exp;
	struct hb_kube_blob cert = { 0 }, key = { 0 };
	int64_t expiry = 0;
	int rc;

	hb_buf_init(&out, HB_KUBE_EXEC_OUT_MAX);
	hb_buf_init(&eb, 8192);
	if ((rc = exec_spawn(a, deadline, &out, &eb, err)))
		goto out;
	doc = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
	if (!cJSON_IsObject(doc)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: %s did not print an ExecCredential "
				"(JSON)",
				x->what, x->argv[0]);
		goto out;
	}
	kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
	api = cJSON_GetObjectItemCaseSensitive(doc, "apiVersion");
	st = cJSON_GetObjectItemCaseSensitive(doc, "status");
	if (!cJSON_IsString(kind) ||
	    strcmp(kind->valuestring, "ExecCredential") ||
	    !cJSON_IsString(api) || strcmp(api->valuestring, x->api_version)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: %s printed no ExecCredential of "
				"apiVersion %s",
				x->what, x->argv[0], x->api_version);
		goto out;
	}
	if (!cJSON_IsObject(st)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: ExecCredential.status: missing", x->what);
		goto out;
	}
	tok = cJSON_GetObjectItemCaseSensitive(st, "token");
	exp = cJSON_GetObjectItemCaseSensitive(st, "expirationTimestamp");
	if ((tok && !cJSON_IsString(tok) && !cJSON_IsNull(tok)) ||
	    exec_pem(st, "clientCertificateData", &cert) ||
	    exec_pem(st, "clientKeyData", &key)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: ExecCredential.status: token, "
				"clientCertificateData and clientKeyData "
				"must be strings",
				x->what);
		goto out;
	}
	if (!cert.data != !key.data) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: ExecCredential.status: "
				"clientCertificateData and clientKeyData go "
				"together",
				x->what);
		goto out;
	}
	if (!cert.data && !(cJSON_IsString(tok) && *tok->valuestring)) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: ExecCredential.status: neither a token "
				"nor a client certificate",
				x->what);
		goto out;
	}
	if (exp && !cJSON_IsNull(exp) &&
	    (!cJSON_IsString(exp) ||
	     hb_kube_parse_time(exp->valuestring, &expiry))) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"%s: ExecCredential.status."
				"expirationTimestamp: not an RFC 3339 time",
				x->what);
		goto out;
	}
	str_wipe(a->exec_token);
	a->exec_token = NULL;
	if (cJSON_IsString(tok) && *tok->valuestring &&
	    !(a->exec_token = strdup(tok->valuestring))) {
		rc = HB_ENOMEM;
		goto out;
	}
	hb_kube_blob_free(&a->exec_cert);
	hb_kube_blob_free(&a->exec_key);
	a->exec_cert = cert;
	a->exec_key = key;
	cert.data = key.data = NULL;
	a->exec_expiry = expiry;
	a->have_exec = 1;
out:
	if (doc) {
		/* The token was in there. */
		const cJSON *s =
			cJSON_GetObjectItemCaseSensitive(doc, "status");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "token");

		if (cJSON_IsString(t))
			explicit_bzero(t->valuestring, strlen(t->valuestring));
	}
	cJSON_Delete(doc);
	hb_kube_blob_free(&cert);
	hb_kube_blob_free(&key);
	if (out.data)
		explicit_bzero(out.data, out.len);
	hb_buf_free(&out);
	hb_buf_free(&eb);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	return rc;
}

int hb_kube_auth_get(struct hb_kube_auth *a, int refresh, int64_t deadline_ms,
		     struct hb_kube_creds *out, struct hb_err *err)
{
	const char *tok;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!deadline_ms)
		deadline_ms = hb_clock_mono_ms() + HB_KUBE_EXEC_TIMEOUT_MS;
	pthread_mutex_lock(&a->mu);
	tok = a->token;
	if (a->token_file) {
		rc = token_file_check(a, refresh, err);
		if (rc)
			goto out;
		if (a->file_token)
			tok = a->file_token;
	}
	if (a->exec) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		if (refresh || !a->have_exec ||
		    (a->exec_expiry && now.tv_sec >= a->exec_expiry)) {
			rc = exec_refresh(a, deadline_ms, err);
			if (rc)
				goto out;
		}
		if (a->exec_token)
			tok = a->exec_token;
		if ((rc = hb_kube_blob_dup(&a->exec_cert, &out->cert)) ||
		    (rc = hb_kube_blob_dup(&a->exec_key, &out->key)))
			goto out;
	}
	if ((tok && !(out->token = strdup(tok))) ||
	    (a->username && !(out->username = strdup(a->username))) ||
	    (a->password && !(out->password = strdup(a->password))))
		rc = HB_ENOMEM;
out:
	pthread_mutex_unlock(&a->mu);
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, NULL, 0, "out of memory");
		hb_kube_creds_clear(out);
	}
	return rc;
}
