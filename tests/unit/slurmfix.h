/*
 * slurmfix.h - what the plugin's tests and bench_inproc share, in plain C
 * (no cmocka): a job description as Slurm leaves it before filling it in,
 * and a placement snapshot published as hpcbridged publishes one.
 */
#ifndef HB_SLURMFIX_H
#define HB_SLURMFIX_H

#include <stdint.h>

#include "slurm-plugin/hbplugin.h"

struct hb_err;
struct hb_snapshot;
struct hb_snapfile_meta;

/* jd zeroed, with the "not set" values slurm_init_job_desc_msg() leaves
 * in the fields the plugin reads, and uid 1000. */
void hb_fix_job_desc(job_desc_msg_t *jd);

/* What a published snapshot says besides its header (publish.c's body). */
struct hb_fix_body {
	const char *policy;	   /* the policy's YAML */
	const char *config;	   /* the configuration's YAML */
	const struct hb_snapshot *state; /* NULL: an empty one */
	const char *daemon_socket, *notice_socket;
	int64_t allowance, noticed;
	const char *owner; /* the lease's ("": nobody's) */
};

/* Publish a snapshot at path (mode 0600) with header m and body b.  0,
 * or an HB_E* code with err. */
int hb_fix_publish(const char *path, const struct hb_snapfile_meta *m,
		   const struct hb_fix_body *b, struct hb_err *err);

#endif
