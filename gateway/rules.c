/*
 * rules.c - the interim placement rules.
 */
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

int hb_rules_proxy_script(const char *id, char *buf, size_t size)
{
	int n = snprintf(buf, size, "#!/bin/sh\nexec hpcbridge shadow %s\n",
			 id);

	if (n < 0 || (size_t)n >= size)
		return HB_ETOOBIG;
	return 0;
}
