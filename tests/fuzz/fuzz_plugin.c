/*
 * fuzz_plugin.c - what the Slurm plugins read from others.
 *
 * Input "O" + one byte + value: a --hpcbridge-* value as a user types it
 * (the byte picks the option).  hb_opt_check never crashes, explains
 * every refusal, and what it accepts is what the option promises.
 *
 * Input "J" + bytes: a job description whose name, account, script and
 * environment (split at NUL bytes, in that order) are the bytes, as a
 * user's sbatch sends them.  The decide request written as text (what
 * the proxy's script and the notice carry) parses as a request and says
 * what the tree the socket path sends says.
 *
 * Any other input: the bytes of a reply payload from the daemon.  Whatever
 * hb_proto_parse and hb_plugin_decision_parse accept is applied to a job_desc,
 * which then holds exactly what the decision says, with comments within
 * HB_COMMENT_MAX and nothing leaked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "slurm-plugin/hbplugin.h"
#include "hpcbridge/buf.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *f_strdup(const char *s)
{
	return strdup(s);
}

static void f_free(void **p)
{
	free(*p);
	*p = NULL;
}

static const struct hb_slurm_alloc alloc = { f_strdup, f_free };

static void check_option(const uint8_t *data, size_t size)
{
	enum hb_opt o = (enum hb_opt)(data[1] % HB__OPT_COUNT);
	struct hb_err err = { 0 };
	char *v = malloc(size - 1);
	int rc;

	if (!v)
		return;
	memcpy(v, data + 2, size - 2);
	v[size - 2] = '\0';
	rc = hb_opt_check(o, v, &err);
	if (rc) {
		if (rc != HB_EINVAL && rc != HB_ENOMEM)
			abort();
		if (!err.msg[0] || strchr(err.msg, '\n'))
			abort();
	} else {
		for (const char *p = v; *p; p++)
			if ((unsigned char)*p < 0x20)
				abort();
		if (o == HB_OPT_CHECKPOINT && v[0] != '/')
			abort();
		if (o == HB_OPT_DATA && v[0] != '/' && strncmp(v, "s3://", 5))
			abort();
		if (o == HB_OPT_TARGET && strcasecmp(v, "auto") &&
		    strcasecmp(v, "slurm") && strcasecmp(v, "kubernetes"))
			abort();
	}
	free(v);
}

static void check_reply(const uint8_t *data, size_t size)
{
	struct hb_err err = { 0 };
	struct hb_plugin_decision d;
	job_desc_msg_t jd;
	cJSON *reply = NULL;

	if (hb_proto_parse((const char *)data, size, HB_PROTO_REPLY, &reply,
			   &err))
		return;
	if (hb_plugin_decision_parse(reply, &d, &err)) {
		if (!err.msg[0] || d.id)
			abort();
		cJSON_Delete(reply);
		return;
	}
	memset(&jd, 0, sizeof(jd));
	jd.het_job_offset = NO_VAL;
	jd.min_nodes = jd.max_nodes = 4;
	jd.time_limit = 30;
	jd.pn_min_memory = NO_VAL64;
	jd.partition = strdup("gpu");
	jd.script = strdup("#!/bin/sh\nsrun ./a.out\n");
	jd.comment = strdup("user comment");
	jd.tres_per_node = strdup("gres:gpu:4");
	if (hb_plugin_decision_apply(&jd, &d, &alloc, &err) == 0) {
		if (!jd.admin_comment ||
		    strlen(jd.admin_comment) > HB_COMMENT_MAX)
			abort();
		if (d.target == HB_PLUGIN_KUBERNETES &&
		    (strcmp(jd.partition, d.partition) ||
		     strcmp(jd.script, d.script) || jd.min_nodes != 1 ||
		     jd.tres_per_node || jd.min_cpus != d.cpus ||
		     strlen(jd.comment) > HB_COMMENT_MAX))
			abort();
		if (d.target == HB_PLUGIN_SLURM &&
		    (strcmp(jd.partition, "gpu") || jd.min_nodes != 4))
			abort();
	}
	free(jd.partition);
	free(jd.script);
	free(jd.comment);
	free(jd.admin_comment);
	free(jd.tres_per_node);
	cJSON_Delete(reply);
}

/* The next NUL-ended piece of [*p, end) as a string (malloc). */
static char *piece(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
	size_t n = z ? (size_t)(z - *p) : (size_t)(end - *p);
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, *p, n);
		s[n] = '\0';
	}
	*p += n + (z != NULL);
	return s;
}

static void check_request(const uint8_t *data, size_t size)
{
	const uint8_t *p = data + 1, *end = data + size;
	char *env[8] = { 0 };
	struct hb_decide_job dj;
	struct hb_emit *e;
	struct hb_buf b;
	job_desc_msg_t jd;
	cJSON *tree, *text = NULL;
	uint32_t n = 0;

	memset(&jd, 0, sizeof(jd));
	jd.het_job_offset = NO_VAL;
	jd.min_nodes = jd.max_nodes = jd.num_tasks = NO_VAL;
	jd.time_limit = jd.time_min = NO_VAL;
	jd.cpus_per_task = jd.ntasks_per_node = NO_VAL16;
	jd.pn_min_memory = NO_VAL64;
	jd.shared = jd.requeue = NO_VAL16;
	jd.user_id = 1000;
	jd.name = piece(&p, end);
	jd.account = piece(&p, end);
	jd.script = piece(&p, end);
	while (p < end && n < 7)
		env[n++] = piece(&p, end);
	jd.environment = env;
	jd.env_size = n;
	tree = hb_decide_request(&jd, NULL);
	if (tree && hb_decide_job_read(&jd, &dj, NULL) == 0) {
		hb_buf_init(&b, 0);
		e = hb_emit_new(HB_EMIT_JSON_COMPACT, &b);
		if (e && !hb_decide_request_emit(e, &jd, &dj) &&
		    !hb_emit_done(e)) {
			/* valid UTF-8, a request, the tree's twin */
			if (hb_proto_parse(b.data, b.len, HB_PROTO_REQUEST,
					   &text, NULL) ||
			    !cJSON_Compare(tree, text, 1))
				abort();
		}
		cJSON_Delete(text);
		hb_emit_free(e);
		hb_buf_free(&b);
		hb_decide_job_free(&dj);
	}
	cJSON_Delete(tree);
	free(jd.name);
	free(jd.account);
	free(jd.script);
	for (uint32_t i = 0; i < n; i++)
		free(env[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 2 && data[0] == 'O')
		check_option(data, size);
	else if (size >= 1 && data[0] == 'J')
		check_request(data, size);
	else
		check_reply(data, size);
	return 0;
}
