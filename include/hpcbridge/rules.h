/*
 * rules.h - the interim placement rules: where a job submitted to Slurm
 * runs, until cost, deadline and data-locality policies arrive.
 *
 * In order:
 *   1. an explicit target from the job (sbatch --hpcbridge-target=slurm or
 *      kubernetes); "auto", "" or none defers to the next rules;
 *   2. the job's partition in placement.partitions;
 *   3. placement.default_target.
 * A job sent to Kubernetes becomes a proxy job on Slurm, shaped by the
 * slurm.* settings: the burst partition, 1 CPU, slurm.proxy_mem_mb, the
 * job's own time limit plus slurm.proxy_grace_min, and a script that runs
 * "hpcbridge shadow ID".
 *
 * Pure: no I/O, no allocation; the same input and configuration always
 * give the same decision.
 */
#ifndef HPCBRIDGE_RULES_H
#define HPCBRIDGE_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/config.h"
#include "hpcbridge/error.h"

/* A time limit that means "none": Slurm's NO_VAL and INFINITE (as
 * uint32), 0 (sbatch --time=0) or any negative value. */
#define HB_RULES_NO_LIMIT (-1)
/* The largest time limit, in minutes, a proxy can be given (one below
 * Slurm's NO_VAL). */
#define HB_RULES_MAX_LIMIT 0xfffffffdLL

struct hb_rules_input {
	const char *partition;	/* NULL or "": the cluster's default */
	const char *target;	/* "auto", "slurm", "kubernetes", "" or NULL */
	int64_t time_limit_min; /* HB_RULES_NO_LIMIT when none */
};

struct hb_decision {
	const char *target; /* "slurm" or "kubernetes" (static) */
	const char *rule;   /* "option", "partition" or "default" (static) */
	char reason[256];   /* "partition gpu maps to kubernetes" */
	/* The proxy job, when target is kubernetes.  proxy_partition is
	 * borrowed from the configuration. */
	const char *proxy_partition;
	int64_t proxy_time_limit_min; /* HB_RULES_NO_LIMIT: none */
	uint32_t proxy_cpus;
	uint32_t proxy_mem_mb;
};

/*
 * Decide for in under cfg.  HB_EINVAL (err names the value) for a target
 * that is none of the accepted words.  out is filled on success.
 */
int hb_rules_decide(const struct hb_config *cfg,
		    const struct hb_rules_input *in, struct hb_decision *out,
		    struct hb_err *err);

/* A job's time limit as it should be read: values that mean "none"
 * become HB_RULES_NO_LIMIT. */
int64_t hb_rules_time_limit(int64_t minutes);

/* The proxy's script for job id into buf: "#!/bin/sh\nexec
 * 'SHADOW_COMMAND' shadow --socket 'SOCKET' ID\n" with slurm.shadow_command
 * and daemon.socket, quoted for sh; HB_ETOOBIG if it does not fit. */
int hb_rules_proxy_script(const struct hb_config *cfg, const char *id,
			  char *buf, size_t size);

#endif
