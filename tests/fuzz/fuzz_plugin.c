/*
 * fuzz_plugin.c - what the Slurm plugins read from others.
 *
 * Input "O" + one byte + value: a --hpcbridge-* value as a user types it
 * (the byte picks the option).  hb_opt_check never crashes, explains
 * every refusal, and what it accepts is what the option promises.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 2 && data[0] == 'O')
		check_option(data, size);
	else
		check_reply(data, size);
	return 0;
}
