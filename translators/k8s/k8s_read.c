/*
 * k8s_read.c - reading a manifest back into a jobspec: the reader's
 * checks of types and ranges, the directives it records, metadata,
 * per-node resources, and the job container (image, workingDir, env,
 * and the script from command and args, with Kubernetes' $(VAR)
 * expansion undone).  The annotation carry-over is read back in
 * k8s_restore.c.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/launcher.h"
#include "hpcbridge/units.h"
#include "translators/k8s/k8s_int.h"

unsigned hb_k8s_line_of(const cJSON *n)
{
	int l = n ? hb_doc_line(n) : 0;

	return l > 0 ? (unsigned)l : 0;
}

int hb_k8s_rd_err(struct hb_k8s_reader *rd, const cJSON *n, int code,
		  const char *path, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(rd->err, code, rd->spec->source_name,
			  hb_k8s_line_of(n), "%s: %s", path, msg);
}

/* A short, one-line rendering of a value for directive texts. */
static int render(const cJSON *n, struct hb_buf *b)
{
	if (!n || cJSON_IsNull(n))
		return hb_buf_puts(b, "null");
	if (cJSON_IsBool(n))
		return hb_buf_puts(b, cJSON_IsTrue(n) ? "true" : "false");
	if (cJSON_IsNumber(n)) {
		double d = n->valuedouble;

		if (isfinite(d) && d == floor(d) && fabs(d) < 1e17)
			return hb_buf_printf(b, "%.0f", d);
		return hb_buf_printf(b, "%g", d);
	}
	if (cJSON_IsString(n)) {
		const char *s = n->valuestring;
		size_t len = strlen(s), max = 1024;
		int rc = 0;

		for (size_t i = 0; !rc && i < len && i < max; i++) {
			char ch = s[i];

			if ((unsigned char)ch < 0x20 || ch == 0x7f)
				ch = ' ';
			rc = hb_buf_putc(b, ch);
		}
		if (!rc && len > max)
			rc = hb_buf_puts(b, "...");
		return rc;
	}
	if (cJSON_IsArray(n))
		return hb_buf_printf(b, "[%d items]", cJSON_GetArraySize(n));
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(n, "name"))) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(n, "name");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(n, "value");
		int rc = render(nm, b);

		if (!rc && cJSON_IsString(v))
			rc = hb_buf_putc(b, '=') ? HB_ENOMEM : render(v, b);
		else if (!rc)
			rc = hb_buf_puts(b, " {...}");
		return rc;
	}
	return hb_buf_puts(b, "{...}");
}

int hb_k8s_note(struct hb_k8s_reader *rd, const cJSON *node, const char *path,
		int nfields, const uint8_t *fields, const char *note)
{
	struct hb_origin o = {HB_ORIGIN_MANIFEST, hb_k8s_line_of(node)};
	struct hb_directive *d;
	struct hb_buf b;
	int rc;

	hb_buf_init(&b, 0);
	rc = hb_buf_printf(&b, "%s: ", path);
	if (!rc)
		rc = render(node, &b);
	if (rc) {
		hb_buf_free(&b);
		return RD_OOM(rd);
	}
	d = hb_jobspec_add_directive(rd->spec, HB_DIR_MANIFEST, o, b.data,
				     b.len);
	hb_buf_free(&b);
	if (!d)
		return RD_OOM(rd);
	if (note) {
		d->note = hb_jobspec_strdup(rd->spec, note);
		if (!d->note)
			return RD_OOM(rd);
	}
	for (int i = 0; i < nfields; i++) {
		hb_directive_add_field(d, (enum hb_field)fields[i]);
		hb_jobspec_set_origin(rd->spec, (enum hb_field)fields[i], o);
	}
	return 0;
}

int hb_k8s_set(struct hb_k8s_reader *rd, const cJSON *node, const char *path,
	       enum hb_field f, const char *note)
{
	uint8_t fl = (uint8_t)f;

	return hb_k8s_note(rd, node, path, 1, &fl, note);
}

int hb_k8s_get_int(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, int64_t min, int64_t max, int64_t *out,
		   bool *present)
{
	double d;

	*present = false;
	*out = 0;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsNumber(node))
		return hb_k8s_rd_err(rd, node, HB_EINVAL, path,
				     "must be an integer \u2265 %lld",
				     (long long)min);
	d = node->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min)
		return hb_k8s_rd_err(rd, node, HB_EINVAL, path,
				     "must be an integer \u2265 %lld",
				     (long long)min);
	if (d > (double)max)
		return hb_k8s_rd_err(rd, node, HB_ERANGE, path,
				     "must be at most %lld", (long long)max);
	*out = (int64_t)d;
	*present = true;
	return 0;
}

int hb_k8s_get_str(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, const char **out)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsString(node))
		return hb_k8s_rd_err(rd, node, HB_EINVAL, path,
				     "must be a string");
	*out = node->valuestring;
	return 0;
}

int hb_k8s_get_obj(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, const cJSON **out)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsObject(node))
		return hb_k8s_rd_err(rd, node, HB_EINVAL, path,
				     "must be a mapping");
	*out = node;
	return 0;
}

int hb_k8s_get_arr(struct hb_k8s_reader *rd, const cJSON *node,
		   const char *path, const cJSON **out)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsArray(node))
		return hb_k8s_rd_err(rd, node, HB_EINVAL, path,
				     "must be a list");
	*out = node;
	return 0;
}

const cJSON *hb_k8s_child(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

int hb_k8s_note_unknown(struct hb_k8s_reader *rd, const cJSON *obj,
			const char *path, const char *const *known,
			const char *why)
{
	const cJSON *it;
	char p[320];
	int rc;

	if (!obj || !cJSON_IsObject(obj))
		return 0;
	cJSON_ArrayForEach (it, obj) {
		bool k = false;

		for (size_t i = 0; known && known[i]; i++)
			if (it->string && strcmp(it->string, known[i]) == 0)
				k = true;
		if (k || !it->string)
			continue;
		snprintf(p, sizeof(p), "%s.%s", path, it->string);
		if ((rc = hb_k8s_note(rd, it, p, 0, NULL, why)))
			return rc;
	}
	return 0;
}

int hb_k8s_read_begin(struct hb_k8s_reader *rd, const cJSON *doc,
		      struct hb_jobspec *spec, struct hb_err *err,
		      const char *api_version, const char *kind, uint8_t source)
{
	static const char *const md_known[] = {"name", "namespace", "labels",
					       "annotations", NULL};
	const cJSON *md, *labels, *ann, *it;
	const char *av, *k, *name, *ns;
	int rc;

	memset(rd, 0, sizeof(*rd));
	rd->spec = spec;
	rd->err = err;
	rd->doc = doc;
	spec->source = source;
	if (!doc || !cJSON_IsObject(doc))
		return hb_err_set(err, HB_EINVAL, spec->source_name,
				  hb_k8s_line_of(doc),
				  "not a Kubernetes object (expected a "
				  "mapping with apiVersion and kind)");
	if ((rc = hb_k8s_get_str(rd, hb_k8s_child(doc, "apiVersion"),
				 "apiVersion", &av)) ||
	    (rc = hb_k8s_get_str(rd, hb_k8s_child(doc, "kind"), "kind", &k)))
		return rc;
	if (!k || strcmp(k, kind) != 0)
		return hb_k8s_rd_err(rd, hb_k8s_child(doc, "kind"), HB_EINVAL,
				     "kind", "'%.60s' is not %s",
				     k ? k : "(missing)", kind);
	if (!av || strcmp(av, api_version) != 0)
		return hb_k8s_rd_err(rd, hb_k8s_child(doc, "apiVersion"),
				     HB_EINVAL, "apiVersion",
				     "'%.60s' is not %s", av ? av : "(missing)",
				     api_version);
	if ((rc = hb_k8s_get_obj(rd, hb_k8s_child(doc, "metadata"), "metadata",
				 &md)))
		return rc;
	if ((rc = hb_k8s_get_str(rd, hb_k8s_child(md, "name"), "metadata.name",
				 &name)))
		return rc;
	if (name) {
		spec->name = hb_jobspec_strdup(spec, name);
		if (!spec->name)
			return RD_OOM(rd);
		if ((rc = hb_k8s_set(rd, hb_k8s_child(md, "name"),
				     "metadata.name", HB_F_NAME, NULL)))
			return rc;
	}
	if ((rc = hb_k8s_get_str(rd, hb_k8s_child(md, "namespace"),
				 "metadata.namespace", &ns)))
		return rc;
	if (ns && (rc = hb_k8s_note(rd, hb_k8s_child(md, "namespace"),
				    "metadata.namespace", 0, NULL,
				    "not carried: a Kubernetes namespace")))
		return rc;
	if ((rc = hb_k8s_get_obj(rd, hb_k8s_child(md, "labels"),
				 "metadata.labels", &labels)) ||
	    (rc = hb_k8s_get_obj(rd, hb_k8s_child(md, "annotations"),
				 "metadata.annotations", &ann)))
		return rc;
	cJSON_ArrayForEach (it, labels) {
		char p[320];

		snprintf(p, sizeof(p), "metadata.labels[%s]", it->string);
		if (!cJSON_IsString(it))
			return hb_k8s_rd_err(rd, it, HB_EINVAL, p,
					     "must be a string");
		if (strcmp(it->string, HB_LABEL_MANAGED_BY) == 0 &&
		    strcmp(it->valuestring, HB_MANAGED_BY) == 0)
			rd->ours = true;
		else if (strcmp(it->string, ANN("user")) &&
			 strcmp(it->string, ANN("account")) &&
			 (rc = hb_k8s_note(rd, it, p, 0, NULL,
					   strcmp(it->string, HB_LABEL_QUEUE) ==
						   0
					       ? "not carried: a Kueue "
						 "queue (partitions are "
						 "the site's)"
					       : "not carried: a label")))
			return rc;
	}
	cJSON_ArrayForEach (it, ann) {
		if (!cJSON_IsString(it))
			return hb_k8s_rd_err(
			    rd, it, HB_EINVAL, "metadata.annotations",
			    "%.100s: must be a string", it->string);
	}
	rd->annotations = ann;
	return hb_k8s_note_unknown(rd, md, "metadata", md_known,
				   "not carried: object metadata");
}

/* A quantity (string or number) as text, for the units parsers. */
static int quantity_text(struct hb_k8s_reader *rd, const cJSON *n,
			 const char *path, char out[64])
{
	if (cJSON_IsString(n)) {
		if (strlen(n->valuestring) >= 64)
			return hb_k8s_rd_err(rd, n, HB_EINVAL, path,
					     "not a quantity");
		memcpy(out, n->valuestring, strlen(n->valuestring) + 1);
		return 0;
	}
	if (cJSON_IsNumber(n)) {
		double d = n->valuedouble;

		if (!isfinite(d) || d < 0 || d > 1e18)
			return hb_k8s_rd_err(rd, n, HB_ERANGE, path,
					     "must be a quantity \u2265 0");
		if (d == floor(d))
			snprintf(out, 64, "%.0f", d);
		else
			snprintf(out, 64, "%.9f", d);
		return 0;
	}
	return hb_k8s_rd_err(rd, n, HB_EINVAL, path,
			     "must be a quantity (\"500m\", \"4Gi\", 2)");
}

int hb_k8s_read_resources(struct hb_k8s_reader *rd, const cJSON *res,
			  const char *path, uint32_t tpn)
{
	static const char *const res_known[] = {"limits", "requests", NULL};
	struct hb_jobspec *s = rd->spec;
	const cJSON *lim, *req, *it;
	char p[320], q[64];
	int rc;

	if ((rc = hb_k8s_get_obj(rd, res, path, &res)) || !res)
		return rc;
	snprintf(p, sizeof(p), "%s.limits", path);
	if ((rc = hb_k8s_get_obj(rd, hb_k8s_child(res, "limits"), p, &lim)))
		return rc;
	snprintf(p, sizeof(p), "%s.requests", path);
	if ((rc = hb_k8s_get_obj(rd, hb_k8s_child(res, "requests"), p, &req)))
		return rc;
	if (!tpn)
		tpn = 1;

	/* Each resource: the limit (what the job may use, as Slurm
	 * allocates it), else the request. */
	for (int pass = 0; pass < 2; pass++) {
		const cJSON *from = pass ? req : lim;

		cJSON_ArrayForEach (it, from) {
			const char *key = it->string;
			const char *slash = key ? strrchr(key, '/') : NULL;
			uint64_t v;
			uint8_t fl;

			if (!key)
				continue;
			snprintf(p, sizeof(p), "%s.%s.%s", path,
				 pass ? "requests" : "limits", key);
			if (pass && hb_k8s_child(lim, key)) {
				/* Requests equal to the limit say nothing
				 * more; others are listed. */
				if (!cJSON_Compare(it, hb_k8s_child(lim, key),
						   1) &&
				    (rc = hb_k8s_note(
					     rd, it, p, 0, NULL,
					     "not carried: the limit is used "
					     "(Slurm allocates what a job may "
					     "use; it has no burst)")))
					return rc;
				continue;
			}
			if ((rc = quantity_text(rd, it, p, q)))
				return rc;
			if (strcmp(key, "cpu") == 0) {
				uint64_t cpn, cpt;

				if ((rc = hb_parse_k8s_cpu(q, &v)))
					return hb_k8s_rd_err(
					    rd, it, rc, p,
					    "'%s' is not a CPU "
					    "quantity",
					    q);
				rd->m_cpu_milli = v;
				rd->m_has_cpu = true;
				cpn = (v + 999) / 1000;
				if (!cpn)
					continue;
				cpt = (cpn + tpn - 1) / tpn;
				if (cpt > UINT32_MAX)
					return hb_k8s_rd_err(rd, it, HB_ERANGE,
							     p, "too many CPUs");
				s->cpus_per_task = (uint32_t)cpt;
				if ((rc = hb_k8s_set(
					 rd, it, p, HB_F_CPUS_PER_TASK,
					 v % 1000 || cpn % tpn
					     ? "rounded up to whole "
					       "CPUs per task"
					     : "CPUs per node / tasks "
					       "per node")))
					return rc;
			} else if (strcmp(key, "memory") == 0) {
				if ((rc = hb_parse_k8s_mem(q, &v)))
					return hb_k8s_rd_err(
					    rd, it, rc, p,
					    "'%s' is not a memory "
					    "quantity",
					    q);
				if (!v)
					continue;
				rd->m_mem_mb = v;
				rd->m_has_mem = true;
				s->mem_kind = HB_MEM_PER_NODE;
				s->mem_mb = v;
				if ((rc = hb_k8s_set(rd, it, p, HB_F_MEM,
						     "memory per node")))
					return rc;
			} else if (slash && strcmp(slash + 1, "gpu") == 0) {
				if ((rc = hb_parse_k8s_cpu(q, &v)) ||
				    v % 1000 || v / 1000 > UINT32_MAX)
					return hb_k8s_rd_err(
					    rd, it, rc ? rc : HB_EINVAL, p,
					    "'%s' is not a whole "
					    "number of GPUs",
					    q);
				rd->m_gpus = (uint32_t)(v / 1000);
				if (!rd->m_gpus)
					continue;
				s->gpu_scope = HB_GPU_PER_NODE;
				s->gpus = rd->m_gpus;
				fl = HB_F_GPUS;
				if ((rc = hb_k8s_note(rd, it, p, 1, &fl,
						      "GPUs per node")))
					return rc;
			} else if ((rc = hb_k8s_note(rd, it, p, 0, NULL,
						     "not carried: no sbatch "
						     "equivalent for this "
						     "resource"))) {
				return rc;
			}
		}
	}
	return hb_k8s_note_unknown(rd, res, path, res_known,
				   "not carried: resource claims");
}

static bool shell_safe(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!hb_k8s_is_alnum(s[i]) && !strchr("_@%+=:,./-", s[i]))
			return false;
	return true;
}

static int sq_append(struct hb_buf *b, const char *s, size_t n)
{
	int rc = hb_buf_putc(b, '\'');

	for (size_t i = 0; !rc && i < n; i++)
		rc = s[i] == '\'' ? hb_buf_puts(b, "'\\''")
				  : hb_buf_putc(b, s[i]);
	return rc ? rc : hb_buf_putc(b, '\'');
}

static bool env_defines(const cJSON *env, const char *name, size_t n)
{
	const cJSON *it;

	cJSON_ArrayForEach (it, env) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsString(nm) && strlen(nm->valuestring) == n &&
		    memcmp(nm->valuestring, name, n) == 0)
			return true;
	}
	return false;
}

static bool shell_name(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!hb_k8s_is_alnum(s[i]) && s[i] != '_')
			return false;
	return true;
}

/*
 * What the container really runs, as shell text: Kubernetes turns $$
 * into $ and $(NAME) into NAME's value when the container defines it.
 * word: out gets one shell word (quoted as needed); else raw text for a
 * script, with references written ${NAME}.
 */
static int flush_seg(struct hb_buf *seg, bool word, struct hb_buf *out,
		     bool *any)
{
	int rc;

	if (!seg->len)
		return 0;
	rc = word ? sq_append(out, seg->data, seg->len)
		  : hb_buf_append(out, seg->data, seg->len);
	hb_buf_reset(seg);
	*any = true;
	return rc;
}

static int k8s_expand(const cJSON *env, const char *s, bool word,
		      struct hb_buf *out)
{
	const char *p = s;
	struct hb_buf seg;
	bool any = false;
	int rc = 0;

	if (word && shell_safe(s, strlen(s)))
		return hb_buf_puts(out, s);
	hb_buf_init(&seg, 0);
	while (!rc && *p) {
		const char *close = NULL;
		size_t n = 0;

		if (p[0] == '$' && p[1] == '$') {
			rc = hb_buf_putc(&seg, '$');
			p += 2;
			continue;
		}
		if (p[0] == '$' && p[1] == '(') {
			close = strchr(p + 2, ')');
			n = close ? (size_t)(close - p - 2) : 0;
		}
		if (close && shell_name(p + 2, n) &&
		    env_defines(env, p + 2, n)) {
			if (!(rc = flush_seg(&seg, word, out, &any)))
				rc = hb_buf_printf(out, "%s%.*s%s",
						   word ? "\"${" : "${", (int)n,
						   p + 2, word ? "}\"" : "}");
			any = true;
			p = close + 1;
			continue;
		}
		rc = hb_buf_putc(&seg, *p++);
	}
	if (!rc)
		rc = flush_seg(&seg, word, out, &any);
	if (!rc && word && !any)
		rc = hb_buf_puts(out, "''");
	hb_buf_free(&seg);
	return rc;
}

static bool is_shell(const char *s)
{
	const char *b = strrchr(s, '/');
	static const char *const shells[] = {"sh",  "bash", "dash", "ksh",
					     "zsh", "ash",  NULL};

	b = b ? b + 1 : s;
	for (size_t i = 0; shells[i]; i++)
		if (strcmp(b, shells[i]) == 0)
			return true;
	return false;
}

/* Strings of a command or args list. */
static int str_list(struct hb_k8s_reader *rd, const cJSON *arr,
		    const char *path, const char **v, int max, int *n)
{
	const cJSON *it;
	int i = 0;

	*n = 0;
	cJSON_ArrayForEach (it, arr) {
		char p[320];

		snprintf(p, sizeof(p), "%s[%d]", path, i);
		if (!cJSON_IsString(it))
			return hb_k8s_rd_err(rd, it, HB_EINVAL, p,
					     "must be a string");
		if (i >= max)
			return hb_k8s_rd_err(rd, it, HB_ETOOBIG, path,
					     "more than %d items", max);
		v[i++] = it->valuestring;
	}
	*n = i;
	return 0;
}

#define SCRIPT_MAX (4u * 1024 * 1024)
#define WORDS_MAX  4096

static int set_script(struct hb_k8s_reader *rd, const char *text, size_t len,
		      const cJSON *node, const char *path, const char *note)
{
	struct hb_jobspec *s = rd->spec;
	char *copy;

	if (len > SCRIPT_MAX)
		return hb_k8s_rd_err(rd, node, HB_ETOOBIG, path,
				     "the script is larger than %u bytes",
				     SCRIPT_MAX);
	copy = hb_jobspec_strndup(s, text, len);
	if (!copy)
		return RD_OOM(rd);
	s->script = copy;
	s->script_len = (uint32_t)len;
	s->interpreter = NULL;
	if (!rd->ours && len > 2 && text[0] == '#' && text[1] == '!') {
		const char *p = text + 2, *e;

		while (*p == ' ' || *p == '\t')
			p++;
		e = p;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		if (e > p) {
			s->interpreter =
			    hb_jobspec_strndup(s, p, (size_t)(e - p));
			if (!s->interpreter)
				return RD_OOM(rd);
		}
	}
	return hb_k8s_set(rd, node, path, HB_F_SCRIPT, note);
}

/* The script from command and args. */
static int read_script(struct hb_k8s_reader *rd, const cJSON *c,
		       const char *path)
{
	const cJSON *cmd, *args, *where;
	const char **w = NULL;
	int ncmd = 0, nargs = 0, n, rc;
	struct hb_buf b, t;
	char p[320];
	const char *body;
	size_t blen;

	snprintf(p, sizeof(p), "%s.command", path);
	if ((rc = hb_k8s_get_arr(rd, hb_k8s_child(c, "command"), p, &cmd)))
		return rc;
	snprintf(p, sizeof(p), "%s.args", path);
	if ((rc = hb_k8s_get_arr(rd, hb_k8s_child(c, "args"), p, &args)))
		return rc;
	w = calloc(2 * WORDS_MAX, sizeof(*w));
	if (!w)
		return RD_OOM(rd);
	hb_buf_init(&b, 4 * SCRIPT_MAX);
	hb_buf_init(&t, 4 * SCRIPT_MAX);
	snprintf(p, sizeof(p), "%s.command", path);
	if ((rc = str_list(rd, cmd, p, w, WORDS_MAX, &ncmd)))
		goto out;
	snprintf(p, sizeof(p), "%s.args", path);
	if ((rc = str_list(rd, args, p, w + ncmd, WORDS_MAX, &nargs)))
		goto out;
	n = ncmd + nargs;
	where = nargs ? args : cmd;
	snprintf(p, sizeof(p), "%s.%s", path, nargs ? "args" : "command");
	if (n == 0) {
		rc = hb_k8s_rd_err(
		    rd, c, HB_EUNSUP, path,
		    "no command or args: the image's own entrypoint "
		    "runs, which sbatch cannot express");
		goto out;
	}

	/* A shell with -c and one script: the script itself. */
	if (n == 3 && is_shell(w[0]) && strcmp(w[1], "-c") == 0) {
		if ((rc = k8s_expand(rd->env, w[2], false, &t)))
			goto oom;
		if (hb_launcher_extract(t.data, &body, &blen) == 0) {
			rc = set_script(rd, body, blen, where, p,
					"the original script, from the "
					"launcher script");
			goto out;
		}
		if ((rc = hb_buf_printf(&b, "#!%s%s\n",
					w[0][0] == '/' ? "" : "/bin/", w[0])) ||
		    (rc = hb_buf_append(&b, t.data, t.len)) ||
		    (t.len && t.data[t.len - 1] != '\n' &&
		     (rc = hb_buf_putc(&b, '\n'))))
			goto oom;
		rc = set_script(rd, b.data, b.len, where, p,
				"the shell script the container runs");
		goto out;
	}

	/* Any other command: one shell line, each word quoted. */
	if ((rc = hb_buf_puts(&b, "#!/bin/sh\n")))
		goto oom;
	for (int i = 0; i < n; i++) {
		if ((i && (rc = hb_buf_putc(&b, ' '))) ||
		    (rc = k8s_expand(rd->env, w[i], true, &b)))
			goto oom;
	}
	if ((rc = hb_buf_putc(&b, '\n')))
		goto oom;
	rc = set_script(rd, b.data, b.len, where, p,
			ncmd ? "a script that runs the container's command"
			     : "a script that runs the container's args (the "
			       "image is assumed to have no entrypoint)");
	goto out;
oom:
	rc = rc == HB_ETOOBIG ? hb_k8s_rd_err(rd, c, rc, path,
					      "the script is too "
					      "large")
			      : RD_OOM(rd);
out:
	free(w);
	hb_buf_free(&b);
	hb_buf_free(&t);
	return rc;
}

static int read_env(struct hb_k8s_reader *rd, const cJSON *c, const char *path)
{
	const cJSON *env, *it;
	struct hb_buf v, list;
	char p[320];
	int i = 0, rc;

	snprintf(p, sizeof(p), "%s.env", path);
	if ((rc = hb_k8s_get_arr(rd, hb_k8s_child(c, "env"), p, &env)) || !env)
		return rc;
	rd->env = env;
	hb_buf_init(&v, 0);
	hb_buf_init(&list, 0);
	cJSON_ArrayForEach (it, env) {
		const char *name, *value;

		snprintf(p, sizeof(p), "%s.env[%d]", path, i++);
		if (!cJSON_IsObject(it)) {
			rc = hb_k8s_rd_err(rd, it, HB_EINVAL, p,
					   "must be a mapping");
			break;
		}
		if ((rc = hb_k8s_get_str(rd, hb_k8s_child(it, "name"), p,
					 &name)) ||
		    (rc = hb_k8s_get_str(rd, hb_k8s_child(it, "value"), p,
					 &value)))
			break;
		if (!name || !*name || strchr(name, '=')) {
			rc = hb_k8s_rd_err(
			    rd, it, HB_EINVAL, p,
			    "name must be a non-empty string without "
			    "'='");
			break;
		}
		if (hb_k8s_child(it, "valueFrom")) {
			if ((rc = hb_k8s_note(rd, it, p, 0, NULL,
					      "not carried: valueFrom "
					      "(secrets, ConfigMaps, fields) "
					      "has no sbatch equivalent")))
				break;
			continue;
		}
		hb_buf_reset(&v);
		if ((rc = hb_k8s_unescape(value ? value : "",
					  value ? strlen(value) : 0, &v)) ||
		    (rc = hb_jobspec_add_env(rd->spec, name, v.data))) {
			rc = RD_OOM(rd);
			break;
		}
		if (!list.len)
			rc = hb_buf_printf(&list, "%s.env: ", path);
		if (!rc && list.len < 1024)
			rc = hb_buf_printf(&list, "%s%s=%s",
					   list.data[list.len - 2] == ':' ? ""
									  : " ",
					   name, value ? value : "");
		if (rc) {
			rc = RD_OOM(rd);
			break;
		}
	}
	/* The list is one setting: one directive for all of it. */
	if (!rc && list.len) {
		struct hb_origin o = {HB_ORIGIN_MANIFEST,
				      hb_k8s_line_of(env)};
		struct hb_directive *d = hb_jobspec_add_directive(
		    rd->spec, HB_DIR_MANIFEST, o, list.data,
		    list.len > 1100 ? 1100 : list.len);

		if (!d) {
			rc = RD_OOM(rd);
		} else {
			hb_directive_add_field(d, HB_F_ENV);
			hb_jobspec_set_origin(rd->spec, HB_F_ENV, o);
		}
	}
	hb_buf_free(&v);
	hb_buf_free(&list);
	return rc;
}

int hb_k8s_read_container(struct hb_k8s_reader *rd, const cJSON *c,
			  const char *path)
{
	struct hb_jobspec *s = rd->spec;
	const char *img, *wd;
	char p[320];
	int rc;

	if (!c || !cJSON_IsObject(c))
		return hb_k8s_rd_err(rd, c, HB_EINVAL, path,
				     "must be a mapping");
	snprintf(p, sizeof(p), "%s.image", path);
	if ((rc = hb_k8s_get_str(rd, hb_k8s_child(c, "image"), p, &img)))
		return rc;
	if (img && !rd->ours) {
		s->container = hb_jobspec_strdup(s, img);
		if (!s->container)
			return RD_OOM(rd);
		if ((rc = hb_k8s_set(rd, hb_k8s_child(c, "image"), p,
				     HB_F_CONTAINER, "the image")))
			return rc;
	} else if (img &&
		   (rc = hb_k8s_note(rd, hb_k8s_child(c, "image"), p, 0, NULL,
				     "chosen by the image map; not a job "
				     "setting")))
		return rc;
	snprintf(p, sizeof(p), "%s.workingDir", path);
	if ((rc = hb_k8s_get_str(rd, hb_k8s_child(c, "workingDir"), p, &wd)))
		return rc;
	if (wd) {
		s->chdir = hb_jobspec_strdup(s, wd);
		if (!s->chdir)
			return RD_OOM(rd);
		if ((rc = hb_k8s_set(rd, hb_k8s_child(c, "workingDir"), p,
				     HB_F_CHDIR, NULL)))
			return rc;
	}
	if ((rc = read_env(rd, c, path)))
		return rc;
	return read_script(rd, c, path);
}
