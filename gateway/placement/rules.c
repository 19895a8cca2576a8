/*
 * rules.c - the proxy job of a burst job (rules.h).
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

int hb_rules_target_valid(const char *t)
{
	return !t || !*t || !strcmp(t, "auto") || !strcmp(t, "slurm") ||
	       !strcmp(t, "kubernetes");
}

void hb_rules_proxy(const struct hb_config *cfg, int64_t time_limit_min,
		    struct hb_proxy *out)
{
	int64_t lim = hb_rules_time_limit(time_limit_min);

	out->partition = cfg->burst_partition;
	out->cpus = 1;
	out->mem_mb = cfg->proxy_mem_mb;
	if (lim != HB_RULES_NO_LIMIT) {
		lim += cfg->proxy_grace_min;
		if (lim > HB_RULES_MAX_LIMIT)
			lim = HB_RULES_MAX_LIMIT;
	}
	out->time_limit_min = lim;
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
