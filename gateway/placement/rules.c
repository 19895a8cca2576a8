/*
 * rules.c - the proxy job of a burst job, and the request it carries
 * when slurmctld decided (rules.h).
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

int hb_rules_proxy_payload(struct hb_buf *script, const char *json,
			   size_t len)
{
	int rc;

	if ((rc = hb_buf_puts(script, HB_RULES_PAYLOAD_MARK)) ||
	    (rc = hb_buf_base64(script, json, len)))
		return rc;
	return hb_buf_putc(script, '\n');
}

int hb_rules_proxy_request(const char *script, size_t len, struct hb_buf *out)
{
	static const char mark[] = "\n" HB_RULES_PAYLOAD_MARK;
	const char *p = script, *end = script + len, *nl;

	/* the first line that says so */
	p = memmem(p, len, mark, sizeof(mark) - 1);
	if (!p)
		return HB_ENOENT;
	p += sizeof(mark) - 1;
	nl = memchr(p, '\n', (size_t)(end - p));
	return hb_buf_unbase64(out, p, (size_t)((nl ? nl : end) - p));
}
