/*
 * slurmc_tres.c - a job's allocated TRES from Slurm's text: the CPUs,
 * memory, nodes and GPUs by type that hb_slurmc_parse_tres() reads from
 * job_info_t's tres_alloc_str ("cpu=4,mem=2000M,node=1,billing=4,
 * gres/gpu=1,gres/gpu:a100=1") or from slurmdbd's job record, which
 * keeps TRES by id ("1=4,2=2000,4=1,5=4,1001=1"), and the GPUs a job
 * holds per node from gres_detail_str where the TRES name none.  No
 * libslurm calls here: pure functions the unit test drives.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/slurm/slurmc_int.h"
#include "hpcbridge/slurmc.h"

/* Slurm's fixed TRES ids (src/common/slurmdb_defs.h, tres_types_t):
 * 1 cpu, 2 mem (MB), 3 energy, 4 node, 5 billing, ...; GRES, licenses
 * and burst buffers get ids from 1001 on, per database. */
#define TRES_ID_CPU  1
#define TRES_ID_MEM  2
#define TRES_ID_NODE 4

#define GPU_NAME "gres/gpu"

enum what { W_IGNORE, W_CPU, W_MEM, W_NODE, W_GPU };

/*
 * A count with an optional fraction and a unit suffix of Slurm's
 * convert_num_unit() (K, M, G, T, P: powers of 1024), scaled so that
 * the result is in units of 1024^base_pow bytes (base_pow 2: MiB) and
 * rounded up (a fraction of a MiB is charged as one).  unit false: no
 * suffix and no fraction allowed (a plain count).
 */
static int parse_amount(const char *s, size_t n, int base_pow, bool unit,
			uint64_t *out)
{
	static const char units[] = "KMGTP";
	char buf[40], *end;
	unsigned long long whole, frac = 0, fdiv = 1;
	int pow = base_pow;

	if (n == 0 || n >= sizeof(buf) || s[0] < '0' || s[0] > '9')
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	whole = strtoull(buf, &end, 10);
	if (errno)
		return -1;
	if (unit && *end == '.') {
		for (end++; *end >= '0' && *end <= '9'; end++) {
			if (fdiv >= 1000000000ULL)
				continue; /* finer than we keep */
			frac = frac * 10 + (unsigned)(*end - '0');
			fdiv *= 10;
		}
	}
	if (unit && *end) {
		const char *u = strchr(units, *end);

		if (!u || end[1])
			return -1;
		pow = (int)(u - units) + 1;
	} else if (*end) {
		return -1;
	}
	/* scale by 1024^(pow - base_pow); smaller units divide, rounding
	 * up */
	{
		unsigned __int128 v = (unsigned __int128)whole * fdiv + frac;
		unsigned __int128 div = fdiv;

		for (; pow > base_pow; pow--)
			v *= 1024;
		for (; pow < base_pow; pow++)
			div *= 1024;
		v = (v + div - 1) / div;
		if (v > UINT64_MAX)
			return -1;
		*out = (uint64_t)v;
	}
	return 0;
}

/* What an item's name is, and for a GPU its type (may be ""). */
static enum what classify(const char *name, size_t n, const char **type,
			  size_t *type_len)
{
	static const struct {
		const char *name;
		enum what w;
	} names[] = { { "cpu", W_CPU }, { "mem", W_MEM }, { "node", W_NODE } };
	size_t gl = sizeof(GPU_NAME) - 1;
	unsigned long id;
	char *end;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == n &&
		    !memcmp(names[i].name, name, n))
			return names[i].w;
	if (n >= gl && !memcmp(name, GPU_NAME, gl) &&
	    (n == gl || name[gl] == ':')) {
		*type = n == gl ? "" : name + gl + 1;
		*type_len = n == gl ? 0 : n - gl - 1;
		return W_GPU;
	}
	if (name[0] >= '1' && name[0] <= '9') {
		id = strtoul(name, &end, 10);
		if (end == name + n) {
			if (id == TRES_ID_CPU)
				return W_CPU;
			if (id == TRES_ID_MEM)
				return W_MEM;
			if (id == TRES_ID_NODE)
				return W_NODE;
		}
	}
	return W_IGNORE;
}

static int add_gpu(struct hb_slurmc_tres *t, const char *item, size_t il,
		   const char *type, size_t tl, uint64_t count,
		   struct hb_err *err)
{
	uint32_t i;

	if (tl >= sizeof(t->gpu[0].type))
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "tres: '%.*s': GPU type longer than %zu "
				  "bytes",
				  (int)il, item, sizeof(t->gpu[0].type) - 1);
	for (i = 0; i < t->ngpu; i++)
		if (strlen(t->gpu[i].type) == tl &&
		    !memcmp(t->gpu[i].type, type, tl))
			break;
	if (i == HB_SLURMC_GPU_TYPES)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "tres: '%.*s': more than %d GPU types",
				  (int)il, item, HB_SLURMC_GPU_TYPES);
	if (i == t->ngpu) {
		memcpy(t->gpu[i].type, type, tl);
		t->gpu[i].type[tl] = '\0';
		t->gpu[i].count = 0;
		t->ngpu++;
	}
	if (count > UINT32_MAX - t->gpu[i].count)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "tres: '%.*s': count out of range", (int)il,
				  item);
	t->gpu[i].count += (uint32_t)count;
	return 0;
}

/* Slurm lists gres/gpu (every GPU) beside gres/gpu:TYPE (those of each
 * type): keep the typed ones, and an untyped entry only for GPUs that
 * no type accounts for. */
static void fold_untyped(struct hb_slurmc_tres *t)
{
	uint64_t typed = 0;
	uint32_t u = t->ngpu, i;

	for (i = 0; i < t->ngpu; i++) {
		if (t->gpu[i].type[0])
			typed += t->gpu[i].count;
		else
			u = i;
	}
	if (u == t->ngpu || !typed)
		return;
	if (t->gpu[u].count > typed) {
		t->gpu[u].count -= (uint32_t)typed;
		return;
	}
	memmove(&t->gpu[u], &t->gpu[u + 1],
		(t->ngpu - u - 1) * sizeof(t->gpu[0]));
	t->ngpu--;
	memset(&t->gpu[t->ngpu], 0, sizeof(t->gpu[0]));
}

int hb_slurmc_parse_tres(const char *s, struct hb_slurmc_tres *out,
			 struct hb_err *err)
{
	struct hb_slurmc_tres t;
	const char *p = s ? s : "";
	int rc;

	memset(&t, 0, sizeof(t));
	while (*p) {
		size_t il = strcspn(p, ","), nl;
		const char *eq = memchr(p, '=', il), *type = NULL, *v;
		size_t tl = 0, vl;
		uint64_t val = 0;
		enum what w;

		if (il == 0)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "tres: empty item at offset %zu",
					  (size_t)(p - s));
		if (!eq || eq == p)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "tres: '%.*s': not NAME=VALUE",
					  (int)il, p);
		nl = (size_t)(eq - p);
		v = eq + 1;
		vl = il - nl - 1;
		w = classify(p, nl, &type, &tl);
		if (w != W_IGNORE && parse_amount(v, vl, 2, w == W_MEM, &val))
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "tres: %.*s: '%.*s' is not %s",
					  (int)nl, p, (int)vl, v,
					  w == W_MEM ? "an amount of memory "
						       "(number, unit K, M, "
						       "G, T or P)"
						     : "a count");
		if (w == W_IGNORE && vl == 0)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "tres: %.*s: empty value", (int)nl,
					  p);
		if ((w == W_CPU || w == W_NODE) && val > UINT32_MAX)
			return hb_err_set(err, HB_ERANGE, NULL, 0,
					  "tres: %.*s: %" PRIu64
					  " out of range",
					  (int)nl, p, val);
		switch (w) {
		case W_CPU:
			t.cpus = (uint32_t)val;
			break;
		case W_NODE:
			t.nodes = (uint32_t)val;
			break;
		case W_MEM:
			t.mem_mib = val;
			break;
		case W_GPU:
			if ((rc = add_gpu(&t, p, il, type, tl, val, err)))
				return rc;
			break;
		case W_IGNORE:
			break;
		}
		p += il;
		if (*p == ',' && !*++p)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "tres: trailing comma");
	}
	fold_untyped(&t);
	*out = t;
	return 0;
}

/*
 * One item of a gres_detail_str: "gpu:a100:1(IDX:0)", "gpu:2(IDX:0-1)",
 * "gpu:a100(CNT:1)" (a GRES without files); anything not gpu is
 * skipped.  The text before the parenthesis is NAME[:TYPE][:COUNT].
 */
static int detail_item(struct hb_slurmc_tres *t, const char *s, size_t n,
		       struct hb_err *err)
{
	const char *paren = memchr(s, '(', n), *c1, *c2, *num = NULL;
	size_t head = paren ? (size_t)(paren - s) : n, tl = 0, nl = 0;
	const char *type = "";
	uint64_t count;

	if (head < 3 || memcmp(s, "gpu", 3) || (head > 3 && s[3] != ':'))
		return 0;
	c1 = head > 3 ? s + 4 : NULL;
	c2 = c1 ? memchr(c1, ':', head - 4) : NULL;
	if (c2) { /* gpu:TYPE:COUNT */
		type = c1;
		tl = (size_t)(c2 - c1);
		num = c2 + 1;
		nl = head - (size_t)(num - s);
	} else if (c1 && *c1 >= '0' && *c1 <= '9') { /* gpu:COUNT */
		num = c1;
		nl = head - 4;
	} else if (c1) { /* gpu:TYPE(CNT:n) */
		type = c1;
		tl = head - 4;
	}
	if (!num && paren && n - head > 5 && !memcmp(paren, "(CNT:", 5)) {
		num = paren + 5;
		nl = strcspn(num, ")");
	}
	if (!num || parse_amount(num, nl, 0, false, &count))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "gres detail: '%.*s': no GPU count", (int)n,
				  s);
	return add_gpu(t, s, n, type, tl, count, err);
}

int hb_slurmc_tres_add_gres_detail(struct hb_slurmc_tres *t, const char *detail,
				   struct hb_err *err)
{
	const char *p = detail ? detail : "", *start = p;
	int depth = 0, rc;

	/* items are comma-separated; an index list inside the parentheses
	 * has commas of its own ("IDX:0,2") */
	for (;; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth)
			depth--;
		if ((*p == ',' && !depth) || !*p) {
			if (p > start &&
			    (rc = detail_item(t, start, (size_t)(p - start),
					      err)))
				return rc;
			if (!*p)
				return 0;
			start = p + 1;
		}
	}
}
