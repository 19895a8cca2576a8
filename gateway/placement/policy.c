/*
 * policy.c - reading placement policies, and the lookups the engine
 * makes in them.  The document reader (docread.c) checks every key and
 * value; this file knows what a policy holds.  hb_policy_describe() is
 * in policy_describe.c.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "gateway/placement/docread.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/units.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* ---- the policy ------------------------------------------------------- */

static const char *const rate_keys[] = { "cpu_hour", "mem_gb_hour",
					 "gpu_hour", "shard_hour",
					 "per_job",  NULL };

static int get_rates(struct hb_rd *r, const cJSON *obj, const char *path,
		     struct hb_rates *out)
{
	const cJSON *it = hb_rd_member(obj, "rates"), *g, *e;
	char p[HB_RD_PATH_MAX], pg[HB_RD_PATH_MAX], pe[HB_RD_PATH_MAX];
	int rc, n;

	if (!it)
		return 0;
	hb_rd_join(p, path, "rates");
	if ((rc = hb_rd_mapping(r, it, p, rate_keys)))
		return rc;
	out->line = (uint32_t)hb_doc_line(it);
	if ((rc = hb_rd_get_money(r, it, p, "cpu_hour", &out->cpu_hour)) ||
	    (rc = hb_rd_get_money(r, it, p, "mem_gb_hour",
				  &out->mem_gb_hour)) ||
	    (rc = hb_rd_get_money(r, it, p, "shard_hour", &out->shard_hour)) ||
	    (rc = hb_rd_get_money(r, it, p, "per_job", &out->per_job)))
		return rc;
	g = hb_rd_member(it, "gpu_hour");
	if (!g)
		return 0;
	if (!cJSON_IsObject(g))
		return hb_rd_get_money(r, it, p, "gpu_hour", &out->gpu_hour);
	/* per type; "default" for the others */
	hb_rd_join(pg, p, "gpu_hour");
	n = cJSON_GetArraySize(g);
	if (n > HB_POLICY_MAX_ITEMS)
		return hb_rd_fail(r, g, pg, "more than %d entries",
				  HB_POLICY_MAX_ITEMS);
	out->gpu = hb_arena_alloc(r->a, sizeof(*out->gpu) * (size_t)(n + 1));
	out->ngpu = 0;
	if (!out->gpu)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, g) {
		struct hb_gpu_rate *gr = &out->gpu[out->ngpu];

		hb_rd_join(pe, pg, e->string);
		if (!strcmp(e->string, "default")) {
			rc = hb_rd_get_money(r, g, pg, "default",
					     &out->gpu_hour);
			if (rc)
				return rc;
			continue;
		}
		if ((rc = hb_rd_gpu_name(r, e, pe, e->string, &gr->type)) ||
		    (rc = hb_rd_get_money(r, g, pg, e->string, &gr->per_hour)))
			return rc;
		out->ngpu++;
	}
	return 0;
}

static const char *const node_keys[] = { "cpus", "memory", "gpus", NULL };

/* Capability keys, read into cap; path names the section. */
static int get_cap(struct hb_rd *r, const cJSON *obj, const char *path,
		   struct hb_capability *cap)
{
	const cJSON *node = hb_rd_member(obj, "node");
	char p[HB_RD_PATH_MAX];
	int rc;

	if ((rc = hb_rd_get_u32(r, obj, path, "max_nodes", 1000000,
				&cap->max_nodes)) ||
	    (rc = hb_rd_get_names(r, obj, path, "gpu_types", true,
				  &cap->gpu_types, &cap->ngpu_types)) ||
	    (rc = hb_rd_get_names(r, obj, path, "mig", true, &cap->mig,
				  &cap->nmig)) ||
	    (rc = hb_rd_get_bool(r, obj, path, "shards", &cap->shards)) ||
	    (rc = hb_rd_get_bool(r, obj, path, "rdma", &cap->rdma)))
		return rc;
	for (uint32_t i = 0; i < cap->nmig; i++)
		if (strcmp(cap->mig[i], HB_GPU_ANY) &&
		    !hb_gpu_is_mig(cap->mig[i]))
			return hb_rd_fail(
				r, hb_rd_member(obj, "mig"),
				hb_rd_join(p, path, "mig"),
				"'%s' is not a MIG profile (like 1g.10gb)",
				cap->mig[i]);
	if (!node)
		return 0;
	hb_rd_join(p, path, "node");
	if ((rc = hb_rd_mapping(r, node, p, node_keys)) ||
	    (rc = hb_rd_get_u32(r, node, p, "cpus", 1000000,
				&cap->node_cpus)) ||
	    (rc = hb_rd_get_mem_mb(r, node, p, "memory", &cap->node_mem_mb)) ||
	    (rc = hb_rd_get_u32(r, node, p, "gpus", 1024, &cap->node_gpus)))
		return rc;
	return 0;
}

static const char *const prefer_words[] = { "slurm", "kubernetes", "cheapest",
					    "earliest", NULL };
static const char *const fallback_words[] = { "earliest", "reject", NULL };
static const char *const burst_words[] = { "never", "allowed", NULL };
static const char *const side_words[] = { "slurm", "kubernetes", NULL };
static const char *const budget_keys[] = { "amount", "period", "sides", NULL };

#define RULE_KEYS                                                              \
	"burst", "prefer", "fallback", "honour_target", "budget",              \
		"max_premium", "keep_with_data_over", "max_staging_slack",     \
		"pilot"

static int get_rule_settings(struct hb_rd *r, const cJSON *obj,
			     const char *path, struct hb_rule *rule)
{
	const cJSON *it, *b;
	char p[HB_RD_PATH_MAX], pb[HB_RD_PATH_MAX];
	uint8_t w;
	int rc;

	it = hb_rd_member(obj, "burst");
	if (it && cJSON_IsBool(it)) {
		rule->burst = cJSON_IsTrue(it);
	} else if (it) {
		w = rule->burst;
		if ((rc = hb_rd_get_word(r, obj, path, "burst", burst_words,
					 &w)))
			return rc;
		rule->burst = w == 1;
	}
	if ((rc = hb_rd_get_word(r, obj, path, "prefer", prefer_words,
				 &rule->prefer)) ||
	    (rc = hb_rd_get_word(r, obj, path, "fallback", fallback_words,
				 &rule->fallback)) ||
	    (rc = hb_rd_get_bool(r, obj, path, "honour_target",
				 &rule->honour_target)) ||
	    (rc = hb_rd_get_size(r, obj, path, "keep_with_data_over",
				 &rule->keep_with_data_over)) ||
	    (rc = hb_rd_get_percent(r, obj, path, "max_staging_slack", 10000,
				    &rule->staging_slack_bp)) ||
	    (rc = hb_rd_get_percent(r, obj, path, "pilot", 10000,
				    &rule->pilot_bp)))
		return rc;

	it = hb_rd_member(obj, "max_premium");
	if (it) {
		char t[64];
		const char *s = hb_rd_scalar(it, t, sizeof(t));

		if (s && strchr(s, '%')) {
			rule->premium_abs = HB_UNSET;
			rc = hb_rd_get_percent(r, obj, path, "max_premium",
					       10000000, &rule->premium_bp);
		} else {
			rule->premium_bp = HB_UNSET;
			rc = hb_rd_get_money(r, obj, path, "max_premium",
					     &rule->premium_abs);
		}
		if (rc)
			return rc;
	} else if (cJSON_GetObjectItemCaseSensitive(obj, "max_premium")) {
		/* max_premium: null lifts an inherited limit */
		rule->premium_abs = rule->premium_bp = HB_UNSET;
	}

	b = cJSON_GetObjectItemCaseSensitive(obj, "budget");
	if (b && cJSON_IsNull(b)) { /* lifts an inherited budget */
		rule->budget = HB_UNSET;
	} else if (b) {
		const cJSON *sides;

		hb_rd_join(pb, path, "budget");
		if ((rc = hb_rd_mapping(r, b, pb, budget_keys)))
			return rc;
		if (!hb_rd_member(b, "amount"))
			return hb_rd_fail(r, b, pb, "amount is required");
		rule->budget_period = HB_PERIOD_MONTH;
		rule->budget_sides = 1u << HB_SIDE_SLURM | 1u << HB_SIDE_KUBE;
		if ((rc = hb_rd_get_money(r, b, pb, "amount", &rule->budget)))
			return rc;
		if ((rc = hb_rd_get_word(r, b, pb, "period", hb_period_names,
					 &rule->budget_period)))
			return rc;
		sides = hb_rd_member(b, "sides");
		if (sides) {
			const cJSON *e;
			char pe[HB_RD_PATH_MAX + 16];
			uint32_t i = 0;

			hb_rd_join(p, pb, "sides");
			if (!cJSON_IsArray(sides) || !cJSON_GetArraySize(sides))
				return hb_rd_fail(r, sides, p,
						  "expected a list of sides "
						  "(slurm, kubernetes)");
			rule->budget_sides = 0;
			cJSON_ArrayForEach (e, sides) {
				uint8_t s;

				snprintf(pe, sizeof(pe), "%s[%u]", p, i++);
				if (!cJSON_IsString(e))
					return hb_rd_fail(r, e, pe,
							  "expected slurm or "
							  "kubernetes, not %s",
							  hb_rd_type_name(e));
				for (s = 0; side_words[s]; s++)
					if (!strcmp(e->valuestring,
						    side_words[s]))
						break;
				if (!side_words[s])
					return hb_rd_fail(
						r, e, pe,
						"'%.40s' is not slurm or "
						"kubernetes",
						e->valuestring);
				rule->budget_sides |= (uint8_t)(1u << s);
			}
		}
	}
	return 0;
}

static const char *const top_keys[] = {
	"version", "currency",	      "defaults", "slurm", "kubernetes",
	"data",	   "gpu_equivalence", "rules",	  NULL
};
static const char *const defaults_keys[] = {
	"time_limit",	 "mem_per_cpu",
	"rdma_features", "multinode_mpi_needs_rdma",
	RULE_KEYS,	 NULL
};
static const char *const slurm_keys[] = { "default_partition", "default_wait",
					  "rates", "partitions", NULL };
static const char *const part_keys[] = { "max_nodes",
					 "node",
					 "gpu_types",
					 "mig",
					 "shards",
					 "rdma",
					 "rates",
					 "default_deadline",
					 "default_time_limit",
					 NULL };
static const char *const kube_keys[] = {
	"namespace", "default_queue", "queues", "max_nodes", "node",
	"gpu_types", "mig",	      "shards", "rdma",	     "rates",
	"startup",   "default_wait",  NULL
};
static const char *const queue_keys[] = { "accounts", "partitions", NULL };
static const char *const data_keys[] = {
	"prefix", "side", "size", "egress_per_gb", "bandwidth", "movable", NULL
};
static const char *const rule_keys[] = { "name", "account", "partition",
					 RULE_KEYS, NULL };

static const char *currency_symbol(const char *code)
{
	static const struct {
		const char *code, *sym;
	} syms[] = { { "USD", "$" },
		     { "EUR", "\xe2\x82\xac" },
		     { "GBP", "\xc2\xa3" },
		     { "JPY", "\xc2\xa5" } };

	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!strcmp(code, syms[i].code))
			return syms[i].sym;
	return NULL;
}

static int read_slurm(struct hb_rd *r, const cJSON *sl, struct hb_policy *pol)
{
	const cJSON *parts, *e;
	char pp[HB_RD_PATH_MAX];
	int rc, n;

	if ((rc = hb_rd_mapping(r, sl, "slurm", slurm_keys)) ||
	    (rc = hb_rd_get_duration(r, sl, "slurm", "default_wait",
				     &pol->slurm_default_wait)) ||
	    (rc = get_rates(r, sl, "slurm", &pol->slurm_rates)))
		return rc;
	parts = hb_rd_member(sl, "partitions");
	if (parts) {
		if ((rc = hb_rd_mapping(r, parts, "slurm.partitions", NULL)))
			return rc;
		n = cJSON_GetArraySize(parts);
		if (n > HB_POLICY_MAX_ITEMS)
			return hb_rd_fail(r, parts, "slurm.partitions",
					  "more than %d partitions",
					  HB_POLICY_MAX_ITEMS);
		pol->partitions =
			hb_arena_alloc(&pol->arena, sizeof(*pol->partitions) *
							    (size_t)(n + 1));
		if (!pol->partitions)
			return HB_ENOMEM;
	}
	cJSON_ArrayForEach (e, parts) {
		struct hb_partition *pt = &pol->partitions[pol->npartitions];

		hb_rd_join(pp, "slurm.partitions", e->string);
		if (!hb_rd_name_ok(e->string))
			return hb_rd_fail(r, e, pp, "not a partition name");
		pt->name = hb_arena_strdup(&pol->arena, e->string);
		if (!pt->name)
			return HB_ENOMEM;
		pt->line = (uint32_t)hb_doc_line(e);
		pt->rates = pol->slurm_rates;
		if (cJSON_IsNull(e)) { /* a partition with nothing to say */
			pol->npartitions++;
			continue;
		}
		if ((rc = hb_rd_mapping(r, e, pp, part_keys)) ||
		    (rc = get_cap(r, e, pp, &pt->cap)) ||
		    (rc = get_rates(r, e, pp, &pt->rates)) ||
		    (rc = hb_rd_get_duration(r, e, pp, "default_deadline",
					     &pt->default_deadline)) ||
		    (rc = hb_rd_get_duration(r, e, pp, "default_time_limit",
					     &pt->default_time_limit)))
			return rc;
		pol->npartitions++;
	}
	e = hb_rd_member(sl, "default_partition");
	if (e) {
		if ((rc = hb_rd_get_name(r, e, "slurm.default_partition",
					 &pol->default_partition)))
			return rc;
		if (pol->npartitions &&
		    !hb_policy_partition(pol, pol->default_partition))
			return hb_rd_fail(r, e, "slurm.default_partition",
					  "'%s' is not in slurm.partitions",
					  pol->default_partition);
	} else if (pol->npartitions) {
		pol->default_partition = pol->partitions[0].name;
	}
	return 0;
}

static int read_kube(struct hb_rd *r, const cJSON *k, struct hb_policy *pol)
{
	const cJSON *qs, *e;
	char pq[HB_RD_PATH_MAX];
	int rc, n;

	pol->kube_enabled = true;
	pol->namespace = "default";
	if (cJSON_IsNull(k))
		goto queues;
	if ((rc = hb_rd_mapping(r, k, "kubernetes", kube_keys)) ||
	    (rc = get_cap(r, k, "kubernetes", &pol->kube_cap)) ||
	    (rc = get_rates(r, k, "kubernetes", &pol->kube_rates)) ||
	    (rc = hb_rd_get_duration(r, k, "kubernetes", "startup",
				     &pol->kube_startup)) ||
	    (rc = hb_rd_get_duration(r, k, "kubernetes", "default_wait",
				     &pol->kube_default_wait)))
		return rc;
	e = hb_rd_member(k, "namespace");
	if (e && (rc = hb_rd_get_name(r, e, "kubernetes.namespace",
				      &pol->namespace)))
		return rc;
	qs = hb_rd_member(k, "queues");
	if (qs) {
		if ((rc = hb_rd_mapping(r, qs, "kubernetes.queues", NULL)))
			return rc;
		n = cJSON_GetArraySize(qs);
		if (n > HB_POLICY_MAX_ITEMS)
			return hb_rd_fail(r, qs, "kubernetes.queues",
					  "more than %d queues",
					  HB_POLICY_MAX_ITEMS);
		pol->queues = hb_arena_alloc(
			&pol->arena, sizeof(*pol->queues) * (size_t)(n + 1));
		if (!pol->queues)
			return HB_ENOMEM;
	}
	cJSON_ArrayForEach (e, qs) {
		struct hb_kqueue *q = &pol->queues[pol->nqueues];

		hb_rd_join(pq, "kubernetes.queues", e->string);
		if (!hb_rd_name_ok(e->string))
			return hb_rd_fail(r, e, pq, "not a queue name");
		q->name = hb_arena_strdup(&pol->arena, e->string);
		if (!q->name)
			return HB_ENOMEM;
		q->line = (uint32_t)hb_doc_line(e);
		if (!cJSON_IsNull(e) &&
		    ((rc = hb_rd_mapping(r, e, pq, queue_keys)) ||
		     (rc = hb_rd_get_names(r, e, pq, "accounts", false,
					   &q->accounts, &q->naccounts)) ||
		     (rc = hb_rd_get_names(r, e, pq, "partitions", false,
					   &q->partitions, &q->npartitions))))
			return rc;
		pol->nqueues++;
	}
	e = hb_rd_member(k, "default_queue");
	if (e) {
		if ((rc = hb_rd_get_name(r, e, "kubernetes.default_queue",
					 &pol->default_queue)))
			return rc;
		for (n = 0; n < (int)pol->nqueues; n++)
			if (!strcmp(pol->queues[n].name, pol->default_queue))
				break;
		if (n == (int)pol->nqueues)
			return hb_rd_fail(r, e, "kubernetes.default_queue",
					  "'%s' is not in kubernetes.queues",
					  pol->default_queue);
	}
queues:
	if (!pol->nqueues) {
		pol->queues = hb_arena_alloc(&pol->arena, sizeof(*pol->queues));
		if (!pol->queues)
			return HB_ENOMEM;
		pol->queues[0].name = pol->namespace;
		pol->nqueues = 1;
	}
	return 0;
}

static int read_data(struct hb_rd *r, const cJSON *d, struct hb_policy *pol)
{
	const cJSON *e;
	char pe[HB_RD_PATH_MAX];
	int rc, n;

	if (!cJSON_IsArray(d))
		return hb_rd_fail(r, d, "data",
				  "expected a list of locations, not %s",
				  hb_rd_type_name(d));
	n = cJSON_GetArraySize(d);
	if (n > HB_POLICY_MAX_ITEMS)
		return hb_rd_fail(r, d, "data", "more than %d locations",
				  HB_POLICY_MAX_ITEMS);
	pol->data = hb_arena_alloc(&pol->arena,
				   sizeof(*pol->data) * (size_t)(n + 1));
	if (!pol->data)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, d) {
		struct hb_data_loc *l = &pol->data[pol->ndata];
		char pk[HB_RD_PATH_MAX];
		const cJSON *pre, *sz;
		char *pfx;
		size_t len;
		uint8_t side = 0;

		snprintf(pe, sizeof(pe), "data[%u]", pol->ndata);
		if ((rc = hb_rd_mapping(r, e, pe, data_keys)))
			return rc;
		pre = hb_rd_member(e, "prefix");
		if (!pre)
			return hb_rd_fail(r, e, pe, "prefix is required");
		if (!cJSON_IsString(pre) ||
		    (pre->valuestring[0] != '/' &&
		     !strstr(pre->valuestring, "://")) ||
		    strlen(pre->valuestring) > 1024)
			return hb_rd_fail(r, pre, hb_rd_join(pk, pe, "prefix"),
					  "expected an absolute path or a URL "
					  "prefix like s3://bucket/dir");
		for (const char *c = pre->valuestring; *c; c++)
			if ((unsigned char)*c < ' ' || *c == 0x7f)
				return hb_rd_fail(
					r, pre, hb_rd_join(pk, pe, "prefix"),
					"control character in prefix");
		pfx = hb_arena_strdup(&pol->arena, pre->valuestring);
		if (!pfx)
			return HB_ENOMEM;
		len = strlen(pfx);
		while (len > 1 && pfx[len - 1] == '/')
			pfx[--len] = '\0';
		l->prefix = pfx;
		l->prefix_len = (uint32_t)len;
		l->line = (uint32_t)hb_doc_line(e);
		l->movable = true;
		if (!hb_rd_member(e, "side"))
			return hb_rd_fail(r, e, pe,
					  "side is required (slurm or "
					  "kubernetes)");
		if ((rc = hb_rd_get_word(r, e, pe, "side", side_words,
					 &side)) ||
		    (rc = hb_rd_get_bool(r, e, pe, "movable", &l->movable)) ||
		    (rc = hb_rd_get_money(r, e, pe, "egress_per_gb",
					  &l->egress_per_gb)))
			return rc;
		l->side = side;
		sz = hb_rd_member(e, "size");
		if (sz) {
			if ((rc = hb_rd_get_size(r, e, pe, "size", &l->size)))
				return rc;
			l->size_known = true;
		}
		if (hb_rd_member(e, "bandwidth")) {
			const cJSON *bw = hb_rd_member(e, "bandwidth");
			char b[64], p2[HB_RD_PATH_MAX];
			const char *t = hb_rd_scalar(bw, b, sizeof(b));

			if (!t || (rc = hb_parse_bandwidth(t, &l->bandwidth)))
				return hb_rd_fail(
					r, bw, hb_rd_join(p2, pe, "bandwidth"),
					"expected a bandwidth like "
					"10Gb/s or 1.25GB/s");
		} else if (l->movable) {
			return hb_rd_fail(r, e, pe,
					  "bandwidth is required to stage it "
					  "(or movable: false)");
		}
		for (uint32_t i = 0; i < pol->ndata; i++)
			if (!strcmp(pol->data[i].prefix, l->prefix))
				return hb_rd_fail(r, e, pe,
						  "prefix %s is also data[%u]",
						  l->prefix, i);
		pol->ndata++;
	}
	return 0;
}

static int read_equiv(struct hb_rd *r, const cJSON *g, struct hb_policy *pol)
{
	const cJSON *e;
	char pe[HB_RD_PATH_MAX];
	int rc, n;

	if ((rc = hb_rd_mapping(r, g, "gpu_equivalence", NULL)))
		return rc;
	n = cJSON_GetArraySize(g);
	if (n > HB_POLICY_MAX_ITEMS)
		return hb_rd_fail(r, g, "gpu_equivalence",
				  "more than %d entries", HB_POLICY_MAX_ITEMS);
	pol->equiv = hb_arena_alloc(&pol->arena,
				    sizeof(*pol->equiv) * (size_t)(n + 1));
	if (!pol->equiv)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, g) {
		struct hb_gpu_equiv *q = &pol->equiv[pol->nequiv];

		hb_rd_join(pe, "gpu_equivalence", e->string);
		if ((rc = hb_rd_gpu_name(r, e, pe, e->string, &q->type)) ||
		    (rc = hb_rd_get_names(r, g, "gpu_equivalence", e->string,
					  true, &q->runs_on, &q->n)))
			return rc;
		for (uint32_t i = 0; i < pol->nequiv; i++)
			if (!strcmp(pol->equiv[i].type, q->type))
				return hb_rd_fail(r, e, pe,
						  "'%s' is given twice",
						  q->type);
		pol->nequiv++;
	}
	return 0;
}

static void rule_defaults(struct hb_rule *d)
{
	memset(d, 0, sizeof(*d));
	d->name = "defaults";
	d->burst = true;
	d->honour_target = true;
	d->prefer = HB_PREFER_SLURM;
	d->fallback = HB_FALLBACK_EARLIEST;
	d->budget = HB_UNSET;
	d->budget_period = HB_PERIOD_MONTH;
	d->budget_sides = 1u << HB_SIDE_SLURM | 1u << HB_SIDE_KUBE;
	d->premium_bp = HB_UNSET;
	d->premium_abs = HB_UNSET;
	d->staging_slack_bp = HB_UNSET;
}

static int read_rules(struct hb_rd *r, const cJSON *rules,
		      struct hb_policy *pol)
{
	const cJSON *e, *it;
	char pe[HB_RD_PATH_MAX], pn[HB_RD_PATH_MAX];
	int rc, n;

	if (!cJSON_IsArray(rules))
		return hb_rd_fail(r, rules, "rules",
				  "expected a list of rules, not %s",
				  hb_rd_type_name(rules));
	n = cJSON_GetArraySize(rules);
	if (n > HB_POLICY_MAX_ITEMS)
		return hb_rd_fail(r, rules, "rules", "more than %d rules",
				  HB_POLICY_MAX_ITEMS);
	pol->rules = hb_arena_alloc(&pol->arena,
				    sizeof(*pol->rules) * (size_t)(n + 1));
	if (!pol->rules)
		return HB_ENOMEM;
	cJSON_ArrayForEach (e, rules) {
		struct hb_rule *ru = &pol->rules[pol->nrules];

		snprintf(pe, sizeof(pe), "rules[%u]", pol->nrules);
		if ((rc = hb_rd_mapping(r, e, pe, rule_keys)))
			return rc;
		*ru = pol->defaults;
		ru->line = (uint32_t)hb_doc_line(e);
		ru->index = pol->nrules + 1;
		it = hb_rd_member(e, "name");
		if (it) {
			if ((rc = hb_rd_get_name(r, it,
						 hb_rd_join(pn, pe, "name"),
						 &ru->name)))
				return rc;
		} else {
			ru->name = hb_arena_strdup(&pol->arena, pe);
			if (!ru->name)
				return HB_ENOMEM;
		}
		it = hb_rd_member(e, "account");
		if (it &&
		    (rc = hb_rd_get_name(r, it, hb_rd_join(pn, pe, "account"),
					 &ru->account)))
			return rc;
		it = hb_rd_member(e, "partition");
		if (it &&
		    (rc = hb_rd_get_name(r, it, hb_rd_join(pn, pe, "partition"),
					 &ru->partition)))
			return rc;
		if (ru->account && !strcmp(ru->account, "*"))
			ru->account = NULL;
		if (ru->partition && !strcmp(ru->partition, "*"))
			ru->partition = NULL;
		if ((rc = get_rule_settings(r, e, pe, ru)))
			return rc;
		pol->nrules++;
	}
	return 0;
}

static int read_policy(struct hb_rd *r, const cJSON *doc, struct hb_policy *pol)
{
	const cJSON *it;
	uint64_t version = 1;
	int rc;

	if (cJSON_IsNull(doc))
		return hb_rd_fail(r, doc, "", "the policy is empty");
	if ((rc = hb_rd_mapping(r, doc, "", top_keys)) ||
	    (rc = hb_rd_get_uint(r, doc, "", "version", 1000, &version)))
		return rc;
	if (version != 1)
		return hb_rd_fail(r, hb_rd_member(doc, "version"), "version",
				  "only version 1 is known");
	pol->currency = "USD";
	it = hb_rd_member(doc, "currency");
	if (it && (rc = hb_rd_get_name(r, it, "currency", &pol->currency)))
		return rc;
	if (strlen(pol->currency) > 8)
		return hb_rd_fail(r, it, "currency",
				  "expected a code like USD");
	pol->currency_symbol = currency_symbol(pol->currency);
	if (!pol->currency_symbol)
		pol->currency_symbol =
			hb_arena_printf(&pol->arena, "%s ", pol->currency);
	if (!pol->currency_symbol)
		return HB_ENOMEM;

	pol->default_time_limit = 3600;
	pol->default_mem_per_cpu_mb = 1024;
	pol->slurm_default_wait = 3600;
	pol->kube_default_wait = 3600;
	pol->kube_startup = 120;
	rule_defaults(&pol->defaults);
	it = hb_rd_member(doc, "defaults");
	if (it) {
		if ((rc = hb_rd_mapping(r, it, "defaults", defaults_keys)) ||
		    (rc = hb_rd_get_duration(r, it, "defaults", "time_limit",
					     &pol->default_time_limit)) ||
		    (rc = hb_rd_get_mem_mb(r, it, "defaults", "mem_per_cpu",
					   &pol->default_mem_per_cpu_mb)) ||
		    (rc = hb_rd_get_names(r, it, "defaults", "rdma_features",
					  false, &pol->rdma_features,
					  &pol->nrdma_features)) ||
		    (rc = hb_rd_get_bool(r, it, "defaults",
					 "multinode_mpi_needs_rdma",
					 &pol->multinode_mpi_needs_rdma)) ||
		    (rc = get_rule_settings(r, it, "defaults", &pol->defaults)))
			return rc;
		if (!pol->default_time_limit)
			return hb_rd_fail(r, hb_rd_member(it, "time_limit"),
					  "defaults.time_limit",
					  "must be more than 0");
	}
	it = hb_rd_member(doc, "slurm");
	if (it && (rc = read_slurm(r, it, pol)))
		return rc;
	it = cJSON_GetObjectItemCaseSensitive(doc, "kubernetes");
	if (it && (rc = read_kube(r, it, pol)))
		return rc;
	it = hb_rd_member(doc, "data");
	if (it && (rc = read_data(r, it, pol)))
		return rc;
	it = hb_rd_member(doc, "gpu_equivalence");
	if (it && (rc = read_equiv(r, it, pol)))
		return rc;
	it = hb_rd_member(doc, "rules");
	if (it && (rc = read_rules(r, it, pol)))
		return rc;
	return 0;
}

int hb_policy_parse(const char *buf, size_t len, const char *name,
		    struct hb_policy *pol, struct hb_err *err)
{
	struct hb_rd r = { .file = name, .err = err, .a = &pol->arena };
	cJSON *doc = NULL;
	int rc;

	memset(pol, 0, sizeof(*pol));
	hb_arena_init(&pol->arena, 16u * 1024 * 1024);
	rc = hb_doc_parse(buf, len, name, &doc, err);
	if (rc)
		goto out;
	pol->source_name = hb_arena_strdup(&pol->arena, name ? name : "-");
	if (!pol->source_name) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = read_policy(&r, doc, pol);
out:
	cJSON_Delete(doc);
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, name, 0, "out of memory");
		hb_policy_free(pol);
	}
	return rc;
}

void hb_policy_free(struct hb_policy *pol)
{
	if (!pol)
		return;
	hb_arena_free(&pol->arena);
	memset(pol, 0, sizeof(*pol));
}

/* ---- lookups ---------------------------------------------------------- */

const struct hb_partition *hb_policy_partition(const struct hb_policy *pol,
					       const char *name)
{
	if (!name)
		return NULL;
	for (uint32_t i = 0; i < pol->npartitions; i++)
		if (!strcmp(pol->partitions[i].name, name))
			return &pol->partitions[i];
	return NULL;
}

/*
 * Account names compare ASCII case-insensitively: Slurm stores every
 * account in lower case (sacctmgr creates them so, slurmctld lowercases
 * the job's), so a policy naming "Chem" means the account Slurm calls
 * "chem".  Partition names are case-sensitive in Slurm and stay exact.
 */
static int account_cmp(const char *a, const char *b)
{
	while (*a && hb_ascii_lower(*a) == hb_ascii_lower(*b)) {
		a++;
		b++;
	}
	return (unsigned char)hb_ascii_lower(*a) -
	       (unsigned char)hb_ascii_lower(*b);
}

static bool listed(const char *const *v, uint32_t n, const char *s,
		   int (*cmp)(const char *, const char *))
{
	if (!n)
		return true; /* no list: any */
	if (!s)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!cmp(v[i], s))
			return true;
	return false;
}

const struct hb_kqueue *hb_policy_queue(const struct hb_policy *pol,
					const char *account,
					const char *partition)
{
	const struct hb_kqueue *def = NULL;

	if (!pol->kube_enabled || !pol->nqueues)
		return NULL;
	for (uint32_t i = 0; i < pol->nqueues; i++) {
		const struct hb_kqueue *q = &pol->queues[i];

		if (listed(q->accounts, q->naccounts, account, account_cmp) &&
		    listed(q->partitions, q->npartitions, partition, strcmp))
			return q;
		if (pol->default_queue && !strcmp(q->name, pol->default_queue))
			def = q;
	}
	return def ? def : &pol->queues[0];
}

const struct hb_rule *hb_policy_rule(const struct hb_policy *pol,
				     const char *account, const char *partition)
{
	for (uint32_t i = 0; i < pol->nrules; i++) {
		const struct hb_rule *ru = &pol->rules[i];

		if (ru->account &&
		    (!account || account_cmp(ru->account, account)))
			continue;
		if (ru->partition &&
		    (!partition || strcmp(ru->partition, partition)))
			continue;
		return ru;
	}
	return &pol->defaults;
}

const struct hb_data_loc *hb_policy_data(const struct hb_policy *pol,
					 const char *path)
{
	const struct hb_data_loc *best = NULL;

	for (uint32_t i = 0; i < pol->ndata; i++) {
		const struct hb_data_loc *l = &pol->data[i];
		char next;

		if (strncmp(path, l->prefix, l->prefix_len))
			continue;
		next = path[l->prefix_len];
		/* "/" as a prefix, or a whole path component */
		if (next && next != '/' && l->prefix[l->prefix_len - 1] != '/')
			continue;
		if (!best || l->prefix_len > best->prefix_len)
			best = l;
	}
	return best;
}

/* The MIG profile inside t ("nvidia_a100_1g.10gb" -> "1g.10gb"), or
 * NULL. */
static const char *mig_profile(const char *t)
{
	for (const char *p = t; *p; p++) {
		const char *q = p;

		if (!is_digit(*q) || (p > t && is_digit(p[-1])))
			continue;
		while (is_digit(*q))
			q++;
		if ((*q != 'g' && *q != 'G') || q[1] != '.' || !is_digit(q[2]))
			continue;
		q += 2;
		while (is_digit(*q))
			q++;
		if ((q[0] == 'g' || q[0] == 'G') &&
		    (q[1] == 'b' || q[1] == 'B') && !q[2])
			return p;
	}
	return NULL;
}

bool hb_gpu_is_mig(const char *t)
{
	return t && mig_profile(t);
}

bool hb_policy_gpu_ok(const struct hb_policy *pol, const char *want,
		      const char *have)
{
	const char *mw, *mh;

	if (!want || !strcmp(have, HB_GPU_ANY))
		return true;
	if (!strcasecmp(want, have))
		return true;
	mw = mig_profile(want);
	mh = mig_profile(have);
	if (mw || mh)
		return mw && mh && !strcasecmp(mw, mh);
	for (uint32_t i = 0; i < pol->nequiv; i++) {
		const struct hb_gpu_equiv *q = &pol->equiv[i];

		if (strcasecmp(q->type, want))
			continue;
		for (uint32_t j = 0; j < q->n; j++)
			if (!strcasecmp(q->runs_on[j], have))
				return true;
		return false;
	}
	return false;
}
