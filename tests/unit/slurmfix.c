/*
 * slurmfix.c - see slurmfix.h.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/error.h"
#include "hpcbridge/snapfile.h"
#include "hpcbridge/snapshot.h"
#include "slurmfix.h"

void hb_fix_job_desc(job_desc_msg_t *jd)
{
	memset(jd, 0, sizeof(*jd));
	jd->het_job_offset = NO_VAL;
	jd->min_nodes = jd->max_nodes = NO_VAL;
	jd->num_tasks = NO_VAL;
	jd->min_cpus = jd->max_cpus = NO_VAL;
	jd->time_limit = jd->time_min = NO_VAL;
	jd->cpus_per_task = jd->ntasks_per_node = NO_VAL16;
	jd->pn_min_cpus = NO_VAL16;
	jd->pn_min_memory = NO_VAL64;
	jd->pn_min_tmp_disk = NO_VAL;
	jd->shared = NO_VAL16;
	jd->requeue = NO_VAL16;
	jd->user_id = 1000;
}

int hb_fix_publish(const char *path, const struct hb_snapfile_meta *m,
		   const struct hb_fix_body *fb, struct hb_err *err)
{
	struct hb_snapshot empty;
	cJSON *b = cJSON_CreateObject(), *state;
	char *text = NULL;
	int rc = HB_ENOMEM;

	hb_snapshot_init(&empty, m->written_ms / 1000);
	state = hb_snapshot_to_json(fb->state ? fb->state : &empty);
	if (b && state && cJSON_AddNumberToObject(b, "format", 1) &&
	    cJSON_AddStringToObject(b, "policy_name", "test.yaml") &&
	    cJSON_AddStringToObject(b, "policy", fb->policy) &&
	    cJSON_AddItemToObject(b, "state", state) &&
	    (state = NULL, cJSON_AddStringToObject(b, "note", "")) &&
	    cJSON_AddStringToObject(b, "config", fb->config) &&
	    cJSON_AddStringToObject(b, "config_name", "hpcbridge.yaml") &&
	    cJSON_AddStringToObject(b, "daemon_socket", fb->daemon_socket) &&
	    cJSON_AddStringToObject(b, "notice_socket", fb->notice_socket) &&
	    cJSON_AddNumberToObject(b, "allowance", (double)fb->allowance) &&
	    cJSON_AddNumberToObject(b, "noticed", (double)fb->noticed) &&
	    cJSON_AddStringToObject(b, "lease_owner", fb->owner) &&
	    (text = cJSON_PrintUnformatted(b)))
		rc = hb_snapfile_write(path, m, text, strlen(text), 0600,
				       (gid_t)-1, err);
	else
		hb_err_set(err, rc, NULL, 0, "out of memory");
	free(text);
	cJSON_Delete(state);
	cJSON_Delete(b);
	hb_snapshot_free(&empty);
	return rc;
}
