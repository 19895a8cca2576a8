/*
 * ratecard.c - reading rate cards.  Every mapping is checked against the
 * keys it may hold and every rate is read exactly into micro-units, so a
 * misspelt key or a rate that would round is an error at load, never a
 * wrong charge later.  Every message reads "FILE:LINE: key.path: what is
 * wrong".
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/file.h"
#include "hpcbridge/ratecard.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/units.h"

/* A card being read. */
struct rd {
	const char *file;
	struct hb_err *err;
	struct hb_arena *a;
};

#define PATH_MAX_ 192

static int fail(struct rd *r, const cJSON *at, const char *path,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(struct rd *r, const cJSON *at, const char *path,
		const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(r->err, HB_EINVAL, r->file,
			  at ? (unsigned)hb_doc_line(at) : 0, "%s%s%s", path,
			  *path ? ": " : "", msg);
}

/* path + "." + key into buf (PATH_MAX_ bytes). */
static const char *join(char *buf, const char *path, const char *key)
{
	int n = snprintf(buf, PATH_MAX_, "%s%s%s", path, *path ? "." : "", key);

	if (n < 0 || n >= PATH_MAX_)
		memcpy(buf + PATH_MAX_ - 4, "...", 4);
	return buf;
}

/* obj is a mapping of at most max members, each named in keys (NULL:
 * any name). */
static int mapping(struct rd *r, const cJSON *obj, const char *path,
		   const char *const *keys, int max)
{
	const cJSON *it;
	char p[PATH_MAX_];

	if (!cJSON_IsObject(obj))
		return fail(r, obj, path, "expected a mapping, not %s",
			    hb_doc_type_name(obj));
	if (cJSON_GetArraySize(obj) > max)
		return fail(r, obj, path, "more than %d entries", max);
	cJSON_ArrayForEach (it, obj) {
		size_t i;

		for (i = 0; keys && keys[i]; i++)
			if (!strcmp(it->string, keys[i]))
				break;
		if (keys && !keys[i])
			return fail(r, it, join(p, path, it->string),
				    "unknown key");
	}
	return 0;
}

/* A scalar's text: strings as they are, numbers written back exactly
 * enough for six decimals; NULL for anything else. */
static const char *scalar(const cJSON *it, char *buf, size_t size)
{
	double v;

	if (cJSON_IsString(it))
		return it->valuestring;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return NULL;
	v = it->valuedouble;
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.15g", v);
	return buf;
}

/* A rate: a decimal, at most 6 decimals, not negative, into micro-units. */
static int get_money(struct rd *r, const cJSON *it, const char *path,
		     int64_t *out)
{
	char b[64], d[400];
	const char *t = scalar(it, b, sizeof(b)), *digits = t;
	uint64_t v;
	int rc;

	if (!t)
		return fail(r, it, path, "expected an amount like 0.25, not %s",
			    hb_doc_type_name(it));
	if (t[0] == '-')
		return fail(r, it, path, "'%.40s' is negative", t);
	/* A YAML number is a double: written with six decimals, it must
	 * read back as the same double, or it had more than six. */
	if (cJSON_IsNumber(it)) {
		snprintf(d, sizeof(d), "%.6f", it->valuedouble);
		digits = strtod(d, NULL) == it->valuedouble ? d : "x";
	}
	rc = hb_parse_decimal(digits, 6, (uint64_t)HB_RATE_MAX, &v);
	if (rc == HB_ERANGE)
		return fail(r, it, path, "'%.40s' is more than %lld", t,
			    HB_RATE_MAX / 1000000);
	if (rc)
		return fail(r, it, path,
			    "'%.40s' is not an amount (digits, at most 6 "
			    "decimals)",
			    t);
	*out = (int64_t)v;
	return 0;
}

/* A name: 1-128 printable characters, no whitespace; copied. */
static int get_name(struct rd *r, const cJSON *at, const char *path,
		    const char *s, bool lower, const char **out)
{
	size_t n = strlen(s);
	char *c;

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			n = 0;
	if (!n || n > 128)
		return fail(r, at, path,
			    "'%.60s' is not a name (1 to 128 characters, no "
			    "spaces or control characters)",
			    s);
	c = hb_arena_strdup(r->a, s);
	if (!c)
		return HB_ENOMEM;
	for (size_t i = 0; lower && i < n; i++)
		c[i] = hb_ascii_lower(c[i]);
	*out = c;
	return 0;
}

/* ---- rates ------------------------------------------------------------ */

static const char *const rate_keys[] = {
	"cpu_hour",	    "memory_gb_hour", "gpu_hour", "exclusive_node_hour",
	"storage_gb_month", "egress_gb",      NULL
};

static int get_gpu(struct rd *r, const cJSON *g, const char *path,
		   struct hb_rate *out)
{
	const cJSON *e, *def;
	char p[PATH_MAX_];
	int rc;

	if (!cJSON_IsObject(g))
		return get_money(r, g, path, &out->gpu_default);
	if ((rc = mapping(r, g, path, NULL, HB_RATE_MAX_GPUS)))
		return rc;
	def = cJSON_GetObjectItemCaseSensitive(g, HB_RATE_DEFAULT);
	if (!def)
		return fail(r, g, path, "no 'default' rate for other types");
	out->gpu = hb_arena_alloc(r->a, sizeof(*out->gpu) *
						(size_t)cJSON_GetArraySize(g));
	if (!out->gpu)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, g) {
		struct hb_rate_gpu *gr = &out->gpu[out->ngpu];

		join(p, path, e->string);
		if (e == def) {
			if ((rc = get_money(r, e, p, &out->gpu_default)))
				return rc;
			continue;
		}
		if ((rc = get_name(r, e, p, e->string, true, &gr->type)) ||
		    (rc = get_money(r, e, p, &gr->per_hour)))
			return rc;
		for (uint32_t i = 0; i < out->ngpu; i++)
			if (!strcmp(out->gpu[i].type, gr->type))
				return fail(r, e, p, "type '%s' is given twice",
					    gr->type);
		out->ngpu++;
	}
	return 0;
}

static int get_rate(struct rd *r, const cJSON *obj, const char *path,
		    struct hb_rate *out)
{
	static const size_t off[] = {
		offsetof(struct hb_rate, cpu_hour),
		offsetof(struct hb_rate, memory_gb_hour),
		0,
		offsetof(struct hb_rate, exclusive_node_hour),
		offsetof(struct hb_rate, storage_gb_month),
		offsetof(struct hb_rate, egress_gb),
	};
	char p[PATH_MAX_];
	const cJSON *it;
	int rc;

	if ((rc = mapping(r, obj, path, rate_keys, 16)))
		return rc;
	out->line = (uint32_t)hb_doc_line(obj);
	for (size_t i = 0; rate_keys[i]; i++) {
		it = cJSON_GetObjectItemCaseSensitive(obj, rate_keys[i]);
		if (!it)
			continue;
		join(p, path, rate_keys[i]);
		if (i == 2)
			rc = get_gpu(r, it, p, out);
		else
			rc = get_money(r, it, p,
				       (int64_t *)((char *)out + off[i]));
		if (rc)
			return rc;
		if (i == 3)
			out->has_exclusive = true;
	}
	return 0;
}

/* One side of a version: class name -> rates, with a "default". */
static int get_side(struct rd *r, const cJSON *obj, const char *path,
		    struct hb_rate **out, uint32_t *nout)
{
	const cJSON *it;
	struct hb_rate *v;
	char p[PATH_MAX_];
	uint32_t n = 0;
	int rc;

	if ((rc = mapping(r, obj, path, NULL, HB_RATE_MAX_CLASSES)))
		return rc;
	if (!cJSON_GetObjectItemCaseSensitive(obj, HB_RATE_DEFAULT))
		return fail(r, obj, path, "no 'default' class");
	v = hb_arena_alloc(r->a, sizeof(*v) * (size_t)cJSON_GetArraySize(obj));
	if (!v)
		return HB_ENOMEM;
	cJSON_ArrayForEach (it, obj) {
		join(p, path, it->string);
		if ((rc = get_name(r, it, p, it->string, false, &v[n].name)) ||
		    (rc = get_rate(r, it, p, &v[n])))
			return rc;
		n++;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* ---- versions --------------------------------------------------------- */

static const char *const side_keys[HB_RATE_NSIDES + 1] = { "slurm",
							   "kubernetes", NULL };

static const char *const version_keys[] = { "version", "effective", "slurm",
					    "kubernetes", NULL };

static int get_version(struct rd *r, const cJSON *obj, const char *path,
		       struct hb_rate_version *v)
{
	const cJSON *it;
	char p[PATH_MAX_], b[64];
	const char *t;
	int rc, sides = 0;

	if ((rc = mapping(r, obj, path, version_keys, 8)))
		return rc;
	v->line = (uint32_t)hb_doc_line(obj);
	it = cJSON_GetObjectItemCaseSensitive(obj, "version");
	join(p, path, "version");
	if (!it || cJSON_IsNull(it))
		return fail(r, obj, p, "required");
	t = cJSON_IsBool(it) ? NULL : scalar(it, b, sizeof(b));
	if (!t)
		return fail(r, it, p, "expected a string or a number, not %s",
			    hb_doc_type_name(it));
	if ((rc = get_name(r, it, p, t, false, &v->version)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(obj, "effective");
	join(p, path, "effective");
	if (!it || cJSON_IsNull(it))
		return fail(r, obj, p, "required");
	if (!cJSON_IsString(it) ||
	    hb_parse_instant(it->valuestring, &v->effective))
		return fail(r, it, p,
			    "expected an instant like 2026-01-01 or "
			    "2026-01-01T00:00:00Z");
	for (int s = 0; s < HB_RATE_NSIDES; s++) {
		it = cJSON_GetObjectItemCaseSensitive(obj, side_keys[s]);
		if (!it || cJSON_IsNull(it))
			continue;
		sides++;
		if ((rc = get_side(r, it, join(p, path, side_keys[s]),
				   &v->classes[s], &v->nclasses[s])))
			return rc;
	}
	if (!sides)
		return fail(r, obj, path,
			    "prices neither slurm nor kubernetes");
	return 0;
}

static int by_effective(const void *a, const void *b)
{
	const struct hb_rate_version *x = a, *y = b;

	return (x->effective > y->effective) - (x->effective < y->effective);
}

static int get_versions(struct rd *r, const cJSON *list,
			struct hb_ratecard *card)
{
	const cJSON *it;
	char p[PATH_MAX_];
	uint32_t n = 0;
	int rc, count;

	if (!cJSON_IsArray(list))
		return fail(r, list, "versions", "expected a list, not %s",
			    hb_doc_type_name(list));
	count = cJSON_GetArraySize(list);
	if (!count)
		return fail(r, list, "versions", "no version");
	if (count > HB_RATE_MAX_VERSIONS)
		return fail(r, list, "versions", "more than %d versions",
			    HB_RATE_MAX_VERSIONS);
	card->versions =
		hb_arena_alloc(r->a, sizeof(*card->versions) * (size_t)count);
	if (!card->versions)
		return HB_ENOMEM;
	cJSON_ArrayForEach (it, list) {
		struct hb_rate_version *v = &card->versions[n];

		snprintf(p, sizeof(p), "versions[%u]", n);
		if ((rc = get_version(r, it, p, v)))
			return rc;
		for (uint32_t j = 0; j < n; j++) {
			const struct hb_rate_version *w = &card->versions[j];

			if (!strcmp(w->version, v->version))
				return fail(r, it, p,
					    "version '%s' is given twice "
					    "(line %u)",
					    v->version, w->line);
			if (w->effective == v->effective)
				return fail(r, it, p,
					    "effective at the same instant as "
					    "version '%s' (line %u)",
					    w->version, w->line);
		}
		n++;
	}
	card->nversions = n;
	qsort(card->versions, n, sizeof(*card->versions), by_effective);
	return 0;
}

/* ---- the card --------------------------------------------------------- */

static const char *const top_keys[] = { "currency", "idle_cost", "capacity",
					"versions", NULL };
static const char *const currency_keys[] = { "code", "symbol", NULL };
static const char *const idle_words[] = { "none", "proportional", "even",
					  NULL };

static int get_currency(struct rd *r, const cJSON *it, struct hb_ratecard *card)
{
	const cJSON *c, *s;
	int rc;

	if ((rc = mapping(r, it, "currency", currency_keys, 4)))
		return rc;
	c = cJSON_GetObjectItemCaseSensitive(it, "code");
	s = cJSON_GetObjectItemCaseSensitive(it, "symbol");
	if (!cJSON_IsString(c) || strlen(c->valuestring) != 3 ||
	    !isupper((unsigned char)c->valuestring[0]) ||
	    !isupper((unsigned char)c->valuestring[1]) ||
	    !isupper((unsigned char)c->valuestring[2]))
		return fail(r, c ? c : it, "currency.code",
			    "expected an ISO 4217 code like EUR");
	card->currency = hb_arena_strdup(r->a, c->valuestring);
	if (!card->currency)
		return HB_ENOMEM;
	card->currency_symbol = card->currency;
	if (s && !cJSON_IsNull(s)) {
		if (!cJSON_IsString(s) || !*s->valuestring ||
		    strlen(s->valuestring) > 8)
			return fail(r, s, "currency.symbol",
				    "expected 1 to 8 bytes of text");
		card->currency_symbol = hb_arena_strdup(r->a, s->valuestring);
		if (!card->currency_symbol)
			return HB_ENOMEM;
	}
	return 0;
}

/* ---- capacity, for idle cost ------------------------------------------ */

static const char *const capacity_keys[] = { "cpus", "memory_gb", "gpus",
					     NULL };

/* A whole number 0..max. */
static int get_count(struct rd *r, const cJSON *it, const char *path,
		     uint64_t max, uint64_t *out)
{
	char b[64];
	const char *t = scalar(it, b, sizeof(b));

	if (!t || hb_parse_u64(t, max, out))
		return fail(r, it, path,
			    "expected a whole number from 0 to %llu",
			    (unsigned long long)max);
	return 0;
}

static int get_capacity_gpus(struct rd *r, const cJSON *g, const char *path,
			     struct hb_rate_capacity *c)
{
	const cJSON *e;
	char p[PATH_MAX_];
	uint64_t n;
	int rc;

	if ((rc = mapping(r, g, path, NULL, HB_USAGE_MAX_GPU_TYPES)))
		return rc;
	cJSON_ArrayForEach (e, g) {
		struct hb_usage_gpu *u = &c->gpus[c->ngpus];

		join(p, path, e->string);
		if ((rc = get_name(r, e, p, e->string, true, &u->type)) ||
		    (rc = get_count(r, e, p, HB_USAGE_MAX_GPU, &n)))
			return rc;
		u->count = (uint32_t)n;
		c->ngpus++;
	}
	return 0;
}

static int get_capacity_side(struct rd *r, const cJSON *obj, const char *path,
			     struct hb_rate_capacity **out)
{
	struct hb_rate_capacity *c;
	const cJSON *it;
	char p[PATH_MAX_];
	uint64_t n;
	int rc;

	if ((rc = mapping(r, obj, path, capacity_keys, 4)))
		return rc;
	if (!(c = hb_arena_alloc(r->a, sizeof(*c))))
		return HB_ENOMEM;
	memset(c, 0, sizeof(*c));
	c->line = (uint32_t)hb_doc_line(obj);
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "cpus"))) {
		rc = get_count(r, it, join(p, path, "cpus"), HB_USAGE_MAX_CPUS,
			       &n);
		c->cpus = (uint32_t)n;
	}
	if (!rc && (it = cJSON_GetObjectItemCaseSensitive(obj, "memory_gb"))) {
		rc = get_count(r, it, join(p, path, "memory_gb"),
			       HB_USAGE_MAX_MEM >> 30, &n);
		c->mem_bytes = n << 30;
	}
	if (!rc && (it = cJSON_GetObjectItemCaseSensitive(obj, "gpus")))
		rc = get_capacity_gpus(r, it, join(p, path, "gpus"), c);
	*out = c;
	return rc;
}

/* capacity: {slurm: {...}, kubernetes: {...}}, either optional. */
static int get_capacity(struct rd *r, const cJSON *obj,
			struct hb_ratecard *card)
{
	const cJSON *it;
	char p[PATH_MAX_];
	int rc;

	if ((rc = mapping(r, obj, "capacity", side_keys, HB_RATE_NSIDES)))
		return rc;
	for (int s = 0; s < HB_RATE_NSIDES; s++) {
		it = cJSON_GetObjectItemCaseSensitive(obj, side_keys[s]);
		if (it && !cJSON_IsNull(it) &&
		    (rc = get_capacity_side(r, it,
					    join(p, "capacity", side_keys[s]),
					    &card->capacity[s])))
			return rc;
	}
	return 0;
}

static int read_card(struct rd *r, const cJSON *doc, struct hb_ratecard *card)
{
	const cJSON *it;
	int rc;

	if (cJSON_IsNull(doc))
		return fail(r, doc, "", "the rate card is empty");
	if ((rc = mapping(r, doc, "", top_keys, 8)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(doc, "currency");
	if (!it || cJSON_IsNull(it))
		return fail(r, doc, "currency", "required");
	if ((rc = get_currency(r, it, card)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(doc, "idle_cost");
	if (it && !cJSON_IsNull(it)) {
		int i;

		for (i = 0; cJSON_IsString(it) && idle_words[i]; i++)
			if (!strcmp(it->valuestring, idle_words[i]))
				break;
		if (!cJSON_IsString(it) || !idle_words[i])
			return fail(r, it, "idle_cost",
				    "expected none, proportional or even");
		card->idle_cost = (enum hb_idle_cost)i;
	}
	it = cJSON_GetObjectItemCaseSensitive(doc, "capacity");
	if (it && !cJSON_IsNull(it) && (rc = get_capacity(r, it, card)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(doc, "versions");
	if (!it || cJSON_IsNull(it))
		return fail(r, doc, "versions", "required");
	return get_versions(r, it, card);
}

int hb_ratecard_parse(const char *buf, size_t len, const char *name,
		      struct hb_ratecard *card, struct hb_err *err)
{
	struct rd r = { .file = name ? name : "-",
			.err = err,
			.a = &card->arena };
	cJSON *doc = NULL;
	int rc;

	memset(card, 0, sizeof(*card));
	hb_arena_init(&card->arena, 4u * 1024 * 1024);
	rc = hb_doc_parse(buf, len, r.file, &doc, err);
	if (rc)
		goto out;
	card->source_name = hb_arena_strdup(&card->arena, r.file);
	rc = card->source_name ? read_card(&r, doc, card) : HB_ENOMEM;
out:
	cJSON_Delete(doc);
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, r.file, 0, "out of memory");
		hb_ratecard_free(card);
	}
	return rc;
}

int hb_ratecard_load(const char *path, struct hb_ratecard *card,
		     struct hb_err *err)
{
	struct hb_buf b;
	int rc;

	memset(card, 0, sizeof(*card));
	hb_buf_init(&b, HB_CONFIG_FILE_MAX);
	rc = hb_file_read(path, HB_CONFIG_FILE_MAX, "rate card", &b, err);
	if (!rc)
		rc = hb_ratecard_parse(b.data ? b.data : "", b.len, path, card,
				       err);
	hb_buf_free(&b);
	return rc;
}

void hb_ratecard_free(struct hb_ratecard *card)
{
	if (!card)
		return;
	hb_arena_free(&card->arena);
	memset(card, 0, sizeof(*card));
}

/* ---- idle cost --------------------------------------------------------- */

int hb_ratecard_capacity_cost(const struct hb_ratecard *card,
			      enum hb_rate_side side, int64_t from, int64_t to,
			      int64_t *amount, struct hb_err *err)
{
	const struct hb_rate_capacity *c =
		(int)side >= 0 && side < HB_RATE_NSIDES ? card->capacity[side]
							: NULL;
	struct hb_usage u = { .side = side, .start = from, .end = to };
	struct hb_charge *ch;
	uint32_t n = 0;
	int rc;

	*amount = 0;
	if (!c)
		return hb_err_set(err, HB_ENOENT, card->source_name, 0,
				  "capacity: no capacity for %s",
				  side == HB_RATE_KUBE ? "kubernetes"
						       : "slurm");
	u.cpus = c->cpus;
	u.mem_bytes = c->mem_bytes;
	u.ngpus = c->ngpus;
	memcpy(u.gpus, c->gpus, sizeof(u.gpus));
	/* one entry per version at most, and one more for the first */
	if (!(ch = calloc(card->nversions + 1, sizeof(*ch))))
		return hb_err_set(err, HB_ENOMEM, card->source_name, 0,
				  "out of memory");
	rc = hb_rate_price(card, &u, ch, card->nversions + 1, &n, err);
	for (uint32_t i = 0; !rc && i < n; i++)
		if (__builtin_add_overflow(*amount, ch[i].amount, amount))
			rc = hb_err_set(err, HB_ERANGE, card->source_name,
					c->line, "capacity: cost overflows");
	free(ch);
	return rc;
}

/* A line's remainder, for the largest-remainder rule. */
struct rem {
	unsigned __int128 r;
	size_t i;
};

static int by_remainder(const void *a, const void *b)
{
	const struct rem *x = a, *y = b;

	if (x->r != y->r)
		return x->r > y->r ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

int hb_idle_allocate(enum hb_idle_cost how, int64_t idle,
		     const int64_t *weights, size_t n, int64_t *out)
{
	unsigned __int128 sum = 0;
	size_t m = 0, k = 0;
	int64_t left = idle;
	struct rem *rem;

	if (idle < 0)
		return HB_EINVAL;
	memset(out, 0, n * sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (weights[i] > 0) {
			sum += (uint64_t)(how == HB_IDLE_EVEN ? 1 : weights[i]);
			m++;
		}
	if (how == HB_IDLE_NONE || !m || !idle)
		return 0;
	if (!(rem = calloc(m, sizeof(*rem))))
		return HB_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned __int128 w, p;

		if (weights[i] <= 0)
			continue;
		w = how == HB_IDLE_EVEN ? 1 : (uint64_t)weights[i];
		p = (unsigned __int128)(uint64_t)idle * w;
		out[i] = (int64_t)(p / sum);
		left -= out[i];
		rem[k++] = (struct rem){ p % sum, i };
	}
	/* left < m: one micro-unit each to the largest remainders (EVEN:
	 * all equal, so the first lines) */
	qsort(rem, m, sizeof(*rem), by_remainder);
	for (size_t j = 0; left > 0; j++, left--)
		out[rem[j].i]++;
	free(rem);
	return 0;
}
