/*
 * k8s_select.c - the plan's steps that place the worker pods: Slurm
 * constraints and the GPU type through the configured selector maps
 * into the nodeSelector or a required node affinity, and --exclusive as
 * a pod anti-affinity.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "translators/k8s/k8s_int.h"

static const struct hb_selector_map *sel_get(const struct hb_selector_map *m,
					     uint32_t n, const char *key,
					     size_t klen)
{
	for (uint32_t i = 0; i < n; i++)
		if (m[i].key && strlen(m[i].key) == klen &&
		    memcmp(m[i].key, key, klen) == 0)
			return &m[i];
	return NULL;
}

static const char *kv_find(const struct hb_k8s_kvs *kv, const char *key)
{
	for (uint32_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->v[i].key, key))
			return kv->v[i].value;
	return NULL;
}

/* Merge labels into the nodeSelector; a clash keeps the first value. */
static int merge_selector(struct hb_k8s_ctx *c, const struct hb_selector_map *m,
			  const char *what)
{
	c->plan->has_node_selector = true;
	for (uint32_t i = 0; i < m->nlabels; i++) {
		const struct hb_kv *l = &m->labels[i];
		const char *old;

		if (!l->key || !l->value)
			continue;
		old = kv_find(&c->plan->node_selector, l->key);
		if (old) {
			if (strcmp(old, l->value))
				hb_report_warn(c->rep,
					       "nodeSelector %s: %s wants '%s' "
					       "but '%s' was set first; kept "
					       "'%s'",
					       l->key, what, l->value, old,
					       old);
			continue;
		}
		if (hb_k8s_kv_set(c->plan, &c->plan->node_selector, l->key,
				  l->value))
			return OOM(c);
	}
	return 0;
}

/* One nodeSelectorTerm per mapped alternative of an OR group. */
static int or_group(struct hb_k8s_ctx *c, const char *s, size_t n,
		    struct hb_buf *unmapped, uint32_t *nmapped)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	cJSON *terms = NULL, *aff;
	const char *p = s, *end = s + n;

	while (p <= end) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		const char *e = bar ? bar : end;
		const struct hb_selector_map *m;
		cJSON *term, *exprs;

		m = sel_get(cfg->constraint_selectors,
			    cfg->nconstraint_selectors, p, (size_t)(e - p));
		if (!m || !m->nlabels) {
			if (hb_buf_printf(unmapped, "%s%.*s",
					  unmapped->len ? ", " : "",
					  (int)(e - p), p))
				return OOM(c);
		} else {
			if (!terms) {
				if (!c->plan->affinity)
					c->plan->affinity =
					    cJSON_CreateObject();
				aff = c->plan->affinity;
				if (!aff)
					return OOM(c);
				aff = cJSON_AddObjectToObject(aff,
							      "nodeAffinity");
				aff = aff ? cJSON_AddObjectToObject(
						aff, "requiredDuringScheduling"
						     "IgnoredDuringExecution")
					  : NULL;
				terms = aff ? cJSON_AddArrayToObject(
						  aff, "nodeSelectorTerms")
					    : NULL;
				if (!terms)
					return OOM(c);
			}
			term = cJSON_CreateObject();
			if (!term)
				return OOM(c);
			cJSON_AddItemToArray(terms, term);
			exprs =
			    cJSON_AddArrayToObject(term, "matchExpressions");
			if (!exprs)
				return OOM(c);
			for (uint32_t i = 0; i < m->nlabels; i++) {
				cJSON *x = cJSON_CreateObject(), *vals;

				if (!x)
					return OOM(c);
				cJSON_AddItemToArray(exprs, x);
				if (!cJSON_AddStringToObject(
					x, "key", m->labels[i].key) ||
				    !cJSON_AddStringToObject(x, "operator",
							     "In") ||
				    !(vals =
					  cJSON_AddArrayToObject(x, "values")))
					return OOM(c);
				cJSON_AddItemToArray(
				    vals,
				    cJSON_CreateString(m->labels[i].value));
				if (cJSON_GetArraySize(vals) != 1)
					return OOM(c);
			}
			(*nmapped)++;
		}
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

/*
 * Slurm constraints: "a&b", "a,b" (all of them) map each feature through
 * constraint_selectors into the nodeSelector; one "[a|b]" or "a|b" group
 * becomes a required node affinity, one term per alternative.  Counts
 * ("a*2"), parentheses and anything else are reported.
 */
int hb_k8s_plan_constraint(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_k8s_opts *cfg = c->cfg;
	const char *str = s->constraint;
	struct hb_buf unmapped;
	uint32_t nmapped = 0, ngroups = 0;
	bool top_or = false, top_and = false;
	int depth = 0, rc = 0;
	size_t len;

	if (!str)
		return 0;
	len = strlen(str);
	hb_buf_init(&unmapped, 0);
	for (size_t i = 0; i < len; i++) {
		if (str[i] == '[')
			depth++;
		else if (str[i] == ']')
			depth--;
		else if (depth == 0 && str[i] == '|')
			top_or = true;
		else if (depth == 0 && (str[i] == '&' || str[i] == ','))
			top_and = true;
	}
	if (depth || strpbrk(str, "()") || (top_or && top_and) || !len) {
		rc = hb_buf_printf(&unmapped, "%s", str);
	} else if (top_or) {
		if (strpbrk(str, "[]*:"))
			rc = hb_buf_printf(&unmapped, "%s", str);
		else
			rc = or_group(c, str, len, &unmapped, &nmapped);
	} else {
		const char *p = str, *end = str + len;

		while (!rc && p < end) {
			const char *e = p;
			size_t n;

			depth = 0;
			while (e < end && (depth || (*e != '&' && *e != ','))) {
				if (*e == '[')
					depth++;
				else if (*e == ']')
					depth--;
				e++;
			}
			n = (size_t)(e - p);
			if (n >= 2 && p[0] == '[' && p[n - 1] == ']' &&
			    !memchr(p + 1, '[', n - 2) &&
			    !memchr(p + 1, '*', n - 2) &&
			    !memchr(p + 1, ':', n - 2) &&
			    !memchr(p + 1, '&', n - 2) &&
			    !memchr(p + 1, ',', n - 2) && ngroups == 0) {
				ngroups++;
				rc = or_group(c, p + 1, n - 2, &unmapped,
					      &nmapped);
			} else {
				const struct hb_selector_map *m = NULL;

				if (n && !memchr(p, '[', n) &&
				    !memchr(p, '*', n) && !memchr(p, '|', n))
					m = sel_get(cfg->constraint_selectors,
						    cfg->nconstraint_selectors,
						    p, n);
				if (m && m->nlabels) {
					char what[96];

					snprintf(what, sizeof(what),
						 "constraint %.*s", (int)n, p);
					rc = merge_selector(c, m, what);
					nmapped++;
				} else if (n) {
					rc = hb_buf_printf(&unmapped, "%s%.*s",
							   unmapped.len ? ", "
									: "",
							   (int)n, p);
				}
			}
			p = e < end ? e + 1 : end;
		}
	}
	if (rc) {
		hb_buf_free(&unmapped);
		return OOM(c);
	}
	rc = annotate(c, "constraint", str);
	if (!rc) {
		if (!unmapped.len)
			hb_report_fate(c->rep, HB_F_CONSTRAINT, HB_FATE_MAPPED,
				       c->paths->selector,
				       "through constraint_selectors");
		else if (nmapped)
			hb_report_fate(c->rep, HB_F_CONSTRAINT, HB_FATE_PARTIAL,
				       c->paths->selector,
				       "not mapped: %.200s (no "
				       "constraint_selectors entry, or a form "
				       "a nodeSelector cannot express); kept "
				       "in annotation " ANN("constraint"),
				       unmapped.data);
		else
			hb_report_fate(
			    c->rep, HB_F_CONSTRAINT, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("constraint") "]",
			    "not mapped: %.200s (no "
			    "constraint_selectors entry, or a form "
			    "a nodeSelector cannot express); no "
			    "Kubernetes equivalent; kept in "
			    "annotation " ANN("constraint"),
			    unmapped.data);
	}
	hb_buf_free(&unmapped);
	return rc;
}

int hb_k8s_plan_gpu_type(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_selector_map *m;
	char what[96];
	int rc;

	if (!s->gpu_type)
		return 0;
	if ((rc = annotate(c, "gpu-type", s->gpu_type)))
		return rc;
	m = sel_get(c->cfg->gpu_type_selectors, c->cfg->ngpu_type_selectors,
		    s->gpu_type, strlen(s->gpu_type));
	if (!m || !m->nlabels) {
		if (s->gpu_scope == HB_GPU_NONE)
			hb_report_fate(
			    c->rep, HB_F_GPUS, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("gpu-type") "]",
			    "GPU type %.60s has no "
			    "gpu_type_selectors entry; kept in "
			    "annotation " ANN("gpu-type"),
			    s->gpu_type);
		else
			hb_report_fate(
			    c->rep, HB_F_GPUS, HB_FATE_PARTIAL,
			    c->rep->fate[HB_F_GPUS].target,
			    "%s; GPU type %.60s has no "
			    "gpu_type_selectors entry: any GPU "
			    "model; kept in annotation " ANN("gpu-type"),
			    c->rep->fate[HB_F_GPUS].note
				? c->rep->fate[HB_F_GPUS].note
				: "GPUs",
			    s->gpu_type);
		return 0;
	}
	snprintf(what, sizeof(what), "GPU type %.60s", s->gpu_type);
	if ((rc = merge_selector(c, m, what)))
		return rc;
	if (c->rep->fate[HB_F_GPUS].kind != HB_FATE_PARTIAL)
		hb_report_fate(
		    c->rep, HB_F_GPUS, HB_FATE_MAPPED,
		    c->rep->fate[HB_F_GPUS].target, "%s; type %.60s -> %s",
		    c->rep->fate[HB_F_GPUS].note ? c->rep->fate[HB_F_GPUS].note
						 : "GPUs",
		    s->gpu_type, c->paths->selector);
	return 0;
}

static cJSON *hostname_term(void)
{
	cJSON *t = cJSON_CreateObject();

	if (t && !cJSON_AddObjectToObject(t, "labelSelector")) {
		cJSON_Delete(t);
		return NULL;
	}
	if (t && !cJSON_AddStringToObject(t, "topologyKey",
					  "kubernetes.io/hostname")) {
		cJSON_Delete(t);
		return NULL;
	}
	return t;
}

/* --exclusive: one worker per node, and no other hpcbridge job's pods
 * beside it. */
int hb_k8s_plan_exclusive(struct hb_k8s_ctx *c, const char *role)
{
	cJSON *anti, *req, *t, *sel, *ml, *exprs, *x, *vals;

	if (!c->spec->exclusive) {
		if (hb_k8s_is_set(c->spec, HB_F_EXCLUSIVE))
			hb_report_fate(c->rep, HB_F_EXCLUSIVE, HB_FATE_MAPPED,
				       NULL, "not exclusive");
		return 0;
	}
	if (!c->plan->affinity)
		c->plan->affinity = cJSON_CreateObject();
	if (!c->plan->affinity)
		return OOM(c);
	anti = cJSON_AddObjectToObject(c->plan->affinity, "podAntiAffinity");
	req = anti ? cJSON_AddArrayToObject(
			 anti, "requiredDuringSchedulingIgnoredDuring"
			       "Execution")
		   : NULL;
	if (!req)
		return OOM(c);
	/* This job's other workers. */
	if (!(t = hostname_term()))
		return OOM(c);
	cJSON_AddItemToArray(req, t);
	sel = cJSON_GetObjectItemCaseSensitive(t, "labelSelector");
	ml = cJSON_AddObjectToObject(sel, "matchLabels");
	if (!ml || !cJSON_AddStringToObject(ml, HB_LABEL_JOB, c->plan->name) ||
	    !cJSON_AddStringToObject(ml, HB_LABEL_ROLE, role))
		return OOM(c);
	/* Any other hpcbridge job's pods. */
	if (!(t = hostname_term()))
		return OOM(c);
	cJSON_AddItemToArray(req, t);
	sel = cJSON_GetObjectItemCaseSensitive(t, "labelSelector");
	exprs = cJSON_AddArrayToObject(sel, "matchExpressions");
	if (!exprs)
		return OOM(c);
	x = cJSON_CreateObject();
	if (!x)
		return OOM(c);
	cJSON_AddItemToArray(exprs, x);
	if (!cJSON_AddStringToObject(x, "key", HB_LABEL_JOB) ||
	    !cJSON_AddStringToObject(x, "operator", "Exists"))
		return OOM(c);
	x = cJSON_CreateObject();
	if (!x)
		return OOM(c);
	cJSON_AddItemToArray(exprs, x);
	if (!cJSON_AddStringToObject(x, "key", HB_LABEL_JOB) ||
	    !cJSON_AddStringToObject(x, "operator", "NotIn") ||
	    !(vals = cJSON_AddArrayToObject(x, "values")))
		return OOM(c);
	cJSON_AddItemToArray(vals, cJSON_CreateString(c->plan->name));
	if (cJSON_GetArraySize(vals) != 1)
		return OOM(c);
	hb_report_fate(c->rep, HB_F_EXCLUSIVE, HB_FATE_PARTIAL,
		       hb_k8s_at(c, c->paths->affinity, "podAntiAffinity"),
		       "one worker per node and no other hpcbridge job's pods "
		       "beside it; other workloads may still share the node; "
		       "kept in annotation " ANN("exclusive"));
	return annotate(c, "exclusive", "true");
}
