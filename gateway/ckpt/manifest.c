/*
 * manifest.c - the checkpoint manifest in memory: building one, checking
 * its paths one by one and as a set, and writing it out deterministically.
 * Reading one is manifest_read.c.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/timefmt.h"

#include "ckpt_int.h"

struct hb_ckpt_manifest *hb_ckpt_manifest_new(void)
{
	struct hb_ckpt_manifest *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	/* The arena holds the paths: at most HB_CKPT_MAX_FILES of them. */
	hb_arena_init(&m->arena, (size_t)HB_CKPT_MAX_FILES *
					 (HB_CKPT_PATH_MAX + 1) / 8);
	m->job = "";
	return m;
}

void hb_ckpt_manifest_free(struct hb_ckpt_manifest *m)
{
	if (!m)
		return;
	hb_arena_free(&m->arena);
	free(m->files);
	free(m);
}

/* Whether code point cp may stand in a path or a job id: no C0 or C1
 * control character, no DEL. */
static int printable(uint32_t cp)
{
	return cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f);
}

/* The first bad character of s (n bytes): NULL when all are valid UTF-8
 * and printable, else a description. */
static const char *bad_text(const char *s, size_t n, size_t *at)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;
	uint32_t cp;

	while (i < n) {
		if (u[i] >= 0x20 && u[i] < 0x7f) {
			i++;
			continue;
		}
		k = hb_utf8_dec(u + i, n - i, &cp);
		*at = i;
		if (!k)
			return "invalid UTF-8";
		if (!printable(cp))
			return cp ? "control character" : "NUL character";
		i += k;
	}
	return NULL;
}

int hb_ckpt_path_check(const char *path, size_t n, const char *what,
		       struct hb_err *err)
{
	size_t start = 0, at = 0;
	const char *why;

	if (!what)
		what = "path";
	if (n == 0)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "%s: empty", what);
	if (n > HB_CKPT_PATH_MAX)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: longer than %u bytes", what,
				  HB_CKPT_PATH_MAX);
	if (path[0] == '/')
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: absolute path \"%.64s\"", what, path);
	why = bad_text(path, n, &at);
	if (why)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: %s at byte %zu", what, why, at);
	for (size_t i = 0; i <= n; i++) {
		size_t len;

		if (i < n && path[i] != '/')
			continue;
		len = i - start;
		if (len == 0)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "%s: empty component at byte %zu",
					  what, i);
		if (len > HB_CKPT_NAME_MAX)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "%s: component longer than %u bytes",
					  what, HB_CKPT_NAME_MAX);
		if (path[start] == '.' &&
		    (len == 1 || (len == 2 && path[start + 1] == '.')))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "%s: \"%.*s\" component", what,
					  (int)len, path + start);
		start = i + 1;
	}
	return 0;
}

int hb_ckpt_manifest_set_job(struct hb_ckpt_manifest *m, const char *job,
			     struct hb_err *err)
{
	size_t n = strlen(job), at = 0;
	const char *why;
	char *copy;

	if (n == 0)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "job: empty");
	if (n > HB_CKPT_JOB_MAX)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "job: longer than %u bytes", HB_CKPT_JOB_MAX);
	why = bad_text(job, n, &at);
	if (why)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "job: %s at byte %zu", why, at);
	copy = hb_arena_strndup(&m->arena, job, n);
	if (!copy)
		return hb_err_set(err, HB_ENOMEM, NULL, 0,
				  "job: out of memory");
	m->job = copy;
	return 0;
}

int hb_ckpt_manifest_add(struct hb_ckpt_manifest *m, const char *path,
			 uint64_t size, uint32_t mode,
			 const uint8_t sha256[32], struct hb_err *err)
{
	size_t n = strlen(path);
	struct hb_ckpt_file *f;
	char *copy;
	int rc;

	rc = hb_ckpt_path_check(path, n, "path", err);
	if (rc)
		return rc;
	if (mode > 0777)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "%s: mode %o past 0777", path, mode);
	if (size > HB_CKPT_MAX_TOTAL)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "%s: size past %llu bytes", path,
				  (unsigned long long)HB_CKPT_MAX_TOTAL);
	if (m->nfiles >= HB_CKPT_MAX_FILES)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "files: more than %u", HB_CKPT_MAX_FILES);
	if (m->nfiles == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		void *p = realloc(m->files, cap * sizeof(*m->files));

		if (!p)
			return hb_err_set(err, HB_ENOMEM, NULL, 0,
					  "files: out of memory");
		m->files = p;
		m->cap = cap;
	}
	copy = hb_arena_strndup(&m->arena, path, n);
	if (!copy)
		return hb_err_set(err, HB_ENOMEM, NULL, 0,
				  "files: out of memory");
	f = &m->files[m->nfiles++];
	f->path = copy;
	f->size = size;
	f->mode = mode;
	memcpy(f->sha256, sha256, 32);
	return 0;
}

/* A byte's rank in path order: NUL first, then '/', then the rest. */
static inline int rank(unsigned char c, int fold)
{
	if (c == '/')
		return 1;
	if (fold && c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	return c ? c + 1 : 0;
}

static int path_cmp(const char *a, const char *b, int fold)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;

	for (;; x++, y++) {
		int d = rank(*x, fold) - rank(*y, fold);

		if (d || !*x)
			return d;
	}
}

int hb_ckpt_path_cmp(const char *a, const char *b)
{
	return path_cmp(a, b, 0);
}

static int file_cmp(const void *a, const void *b)
{
	return path_cmp(((const struct hb_ckpt_file *)a)->path,
			((const struct hb_ckpt_file *)b)->path, 0);
}

static int fold_cmp(const void *a, const void *b)
{
	const struct hb_ckpt_file *x = *(const struct hb_ckpt_file *const *)a;
	const struct hb_ckpt_file *y = *(const struct hb_ckpt_file *const *)b;
	int d = path_cmp(x->path, y->path, 1);

	return d ? d : path_cmp(x->path, y->path, 0);
}

/* Whether b lies under a (folding case when fold): "a/..." */
static int under(const char *a, const char *b, int fold)
{
	size_t n = strlen(a);

	if (fold ? strncasecmp(a, b, n) : strncmp(a, b, n))
		return 0;
	return b[n] == '/';
}

/* Two neighbours in case-folded order: the same, the same but for case,
 * or one under the other. */
static int check_pair(const char *a, const char *b, struct hb_err *err)
{
	if (!strcmp(a, b))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "files: \"%.200s\" listed twice", a);
	if (!path_cmp(a, b, 1))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "files: \"%.200s\" and \"%.200s\" differ "
				  "only in case", a, b);
	if (under(a, b, 1))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "files: \"%.200s\" lies under the file "
				  "\"%.200s\"", b, a);
	return 0;
}

int hb_ckpt_manifest_seal(struct hb_ckpt_manifest *m, struct hb_err *err)
{
	const struct hb_ckpt_file **idx;
	uint64_t total = 0;
	int rc = 0;

	if (m->nfiles > 1)
		qsort(m->files, m->nfiles, sizeof(*m->files), file_cmp);
	for (size_t i = 0; i < m->nfiles; i++) {
		if (m->files[i].size > HB_CKPT_MAX_TOTAL - total)
			return hb_err_set(
				err, HB_ETOOBIG, NULL, 0,
				"files: more than %llu bytes in all",
				(unsigned long long)HB_CKPT_MAX_TOTAL);
		total += m->files[i].size;
	}
	m->total = total;
	if (m->nfiles < 2)
		return 0;
	/* Case-folded order puts "A" beside "a" and "A" beside "a/b". */
	idx = malloc(m->nfiles * sizeof(*idx));
	if (!idx)
		return hb_err_set(err, HB_ENOMEM, NULL, 0,
				  "files: out of memory");
	for (size_t i = 0; i < m->nfiles; i++)
		idx[i] = &m->files[i];
	qsort(idx, m->nfiles, sizeof(*idx), fold_cmp);
	for (size_t i = 0; !rc && i + 1 < m->nfiles; i++)
		rc = check_pair(idx[i]->path, idx[i + 1]->path, err);
	free(idx);
	return rc;
}

size_t ckpt_lower_bound(const struct hb_ckpt_manifest *m, const char *path)
{
	size_t lo = 0, hi = m->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (path_cmp(m->files[mid].path, path, 0) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct hb_ckpt_file *hb_ckpt_manifest_find(
	const struct hb_ckpt_manifest *m, const char *path)
{
	size_t i = ckpt_lower_bound(m, path);

	if (i < m->nfiles && !strcmp(m->files[i].path, path))
		return &m->files[i];
	return NULL;
}

void hb_ckpt_hex(const uint8_t d[32], char out[65])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = '\0';
}

/* s as a JSON string: checked text needs only '"' and '\\' escaped. */
static int put_str(struct hb_buf *b, const char *s)
{
	int rc = hb_buf_putc(b, '"');

	while (!rc && *s) {
		size_t n = strcspn(s, "\"\\");

		rc = hb_buf_append(b, s, n);
		s += n;
		if (!rc && *s) {
			char esc[2] = {'\\', *s++};

			rc = hb_buf_append(b, esc, 2);
		}
	}
	return rc ? rc : hb_buf_putc(b, '"');
}

static int put_file(struct hb_buf *b, const struct hb_ckpt_file *f,
		    int last)
{
	char hex[65];
	int rc;

	hb_ckpt_hex(f->sha256, hex);
	rc = hb_buf_puts(b, "    {\"path\": ");
	if (!rc)
		rc = put_str(b, f->path);
	if (!rc)
		rc = hb_buf_puts(b, ", \"size\": ");
	if (!rc)
		rc = hb_buf_put_u64(b, f->size);
	if (!rc)
		rc = hb_buf_printf(b, ", \"mode\": \"%04o\", "
				   "\"sha256\": \"%s\"}%s\n",
				   (unsigned)f->mode, hex, last ? "" : ",");
	return rc;
}

int hb_ckpt_manifest_write(const struct hb_ckpt_manifest *m,
			   struct hb_buf *out)
{
	size_t was = out->len;
	char when[32];
	int rc;

	hb_time_rfc3339_format(m->created, when);
	rc = hb_buf_printf(out, "{\n  \"format\": \"%s\",\n  \"created\": "
			   "\"%s\",\n  \"job\": ", HB_CKPT_FORMAT, when);
	if (!rc)
		rc = put_str(out, m->job);
	if (!rc)
		rc = hb_buf_puts(out, m->nfiles ? ",\n  \"files\": [\n"
						: ",\n  \"files\": []\n}\n");
	for (size_t i = 0; !rc && i < m->nfiles; i++)
		rc = put_file(out, &m->files[i], i + 1 == m->nfiles);
	if (!rc && m->nfiles)
		rc = hb_buf_puts(out, "  ]\n}\n");
	if (!rc && out->len - was > HB_CKPT_MANIFEST_MAX)
		rc = HB_ETOOBIG;
	if (rc) {
		out->len = was;
		if (out->data)
			out->data[was] = '\0';
	}
	return rc;
}
