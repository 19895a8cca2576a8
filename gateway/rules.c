/*
 * rules.c - the interim placement rules.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/rules.h"

int64_t hb_rules_time_limit(int64_t minutes)
{
	/* 0: sbatch --time=0 (no limit); >= NO_VAL (0xfffffffe) and
	 * INFINITE (0xffffffff): Slurm's markers for none */
	if (minutes <= 0 || minutes > HB_RULES_MAX_LIMIT)
		return HB_RULES_NO_LIMIT;
	return minutes;
}

static int is_target(const char *s)
{
	return !strcmp(s, "slurm") || !strcmp(s, "kubernetes");
}

/* The static spelling of a target, so decisions never borrow input. */
static const char *target_const(const char *s)
{
	return !strcmp(s, "kubernetes") ? "kubernetes" : "slurm";
}

int hb_rules_decide(const struct hb_config *cfg,
		    const struct hb_rules_input *in, struct hb_decision *out,
		    struct hb_err *err)
{
	const char *opt = in->target, *part = in->partition, *mapped;
	int64_t lim;

	memset(out, 0, sizeof(*out));
	if (opt && *opt && strcmp(opt, "auto") && !is_target(opt))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "target: '%.60s' is not auto, slurm or "
				  "kubernetes",
				  opt);
	if (part && !*part)
		part = NULL;
	mapped = part ? hb_kv_get(cfg->placement_partitions,
				  cfg->nplacement_partitions, part)
		      : NULL;
	if (opt && is_target(opt)) {
		out->target = target_const(opt);
		out->rule = "option";
		snprintf(out->reason, sizeof(out->reason),
			 "the job asks for %s (--hpcbridge-target)",
			 out->target);
	} else if (mapped) {
		out->target = target_const(mapped);
		out->rule = "partition";
		snprintf(out->reason, sizeof(out->reason),
			 "partition %.100s maps to %s", part, out->target);
	} else {
		out->target = target_const(
			cfg->default_target ? cfg->default_target : "slurm");
		out->rule = "default";
		if (part)
			snprintf(out->reason, sizeof(out->reason),
				 "partition %.100s is not mapped; the default "
				 "target is %s",
				 part, out->target);
		else
			snprintf(out->reason, sizeof(out->reason),
				 "no partition given; the default target is "
				 "%s",
				 out->target);
	}
	out->proxy_time_limit_min = HB_RULES_NO_LIMIT;
	if (strcmp(out->target, "kubernetes"))
		return 0;
	out->proxy_partition = cfg->burst_partition;
	out->proxy_cpus = 1;
	out->proxy_mem_mb = cfg->proxy_mem_mb;
	lim = hb_rules_time_limit(in->time_limit_min);
	if (lim != HB_RULES_NO_LIMIT) {
		lim += cfg->proxy_grace_min;
		if (lim > HB_RULES_MAX_LIMIT)
			lim = HB_RULES_MAX_LIMIT;
	}
	out->proxy_time_limit_min = lim;
	return 0;
}

/* Append s single-quoted for sh at buf[*n]; false if it does not fit. */
static bool put_quoted(char *buf, size_t size, size_t *n, const char *s)
{
	const char *q = "'\\''";

	if (*n + 1 >= size)
		return false;
	buf[(*n)++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			size_t k = strlen(q);

			if (*n + k >= size)
				return false;
			memcpy(buf + *n, q, k);
			*n += k;
		} else {
			if (*n + 1 >= size)
				return false;
			buf[(*n)++] = *s;
		}
	}
	if (*n + 1 >= size)
		return false;
	buf[(*n)++] = '\'';
	buf[*n] = '\0';
	return true;
}

int hb_rules_proxy_script(const struct hb_config *cfg, const char *id,
			  char *buf, size_t size)
{
	size_t n;
	int k = snprintf(buf, size, "#!/bin/sh\nexec ");

	if (k < 0 || (size_t)k >= size)
		return HB_ETOOBIG;
	n = (size_t)k;
	if (!put_quoted(buf, size, &n, cfg->shadow_command))
		return HB_ETOOBIG;
	k = snprintf(buf + n, size - n, " shadow --socket ");
	if (k < 0 || (size_t)k >= size - n)
		return HB_ETOOBIG;
	n += (size_t)k;
	if (!put_quoted(buf, size, &n, cfg->daemon_socket))
		return HB_ETOOBIG;
	k = snprintf(buf + n, size - n, " %s\n", id);
	if (k < 0 || (size_t)k >= size - n)
		return HB_ETOOBIG;
	return 0;
}
