/*
 * rules.h - the proxy job: what a job sent to Kubernetes becomes on
 * Slurm, shaped by the slurm.* settings: the burst partition, 1 CPU,
 * slurm.proxy_mem_mb, the job's own time limit plus
 * slurm.proxy_grace_min, and a script that runs "hpcbridge shadow ID".
 * Where a job runs is decided by the placement engine (placement.h,
 * gateway/placement/decider.h).
 *
 * Pure: no I/O, no allocation.
 */
#ifndef HPCBRIDGE_RULES_H
#define HPCBRIDGE_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/error.h"

/* A time limit that means "none": Slurm's NO_VAL and INFINITE (as
 * uint32), 0 (sbatch --time=0) or any negative value. */
#define HB_RULES_NO_LIMIT (-1)
/* The largest time limit, in minutes, a proxy can be given (one below
 * Slurm's NO_VAL). */
#define HB_RULES_MAX_LIMIT 0xfffffffdLL

/* A burst job's proxy.  partition is borrowed from the configuration. */
struct hb_proxy {
	const char *partition;
	int64_t time_limit_min; /* HB_RULES_NO_LIMIT: none */
	uint32_t cpus;
	uint32_t mem_mb;
};

/* The proxy of a job whose time limit is time_limit_min (read with
 * hb_rules_time_limit()). */
void hb_rules_proxy(const struct hb_config *cfg, int64_t time_limit_min,
		    struct hb_proxy *out);

/* Whether a --hpcbridge-target value is one of auto, slurm, kubernetes
 * (NULL and "" mean auto). */
int hb_rules_target_valid(const char *target);

/* A job's time limit as it should be read: values that mean "none"
 * become HB_RULES_NO_LIMIT. */
int64_t hb_rules_time_limit(int64_t minutes);

/* The proxy's script for job id into buf: "#!/bin/sh\nexec
 * 'SHADOW_COMMAND' shadow --socket 'SOCKET' ID\n" with slurm.shadow_command
 * and daemon.socket, quoted for sh; HB_ETOOBIG if it does not fit. */
int hb_rules_proxy_script(const struct hb_config *cfg, const char *id,
			  char *buf, size_t size);

/*
 * A proxy decided in slurmctld carries the job as it was asked for (the
 * decide request: script, options, environment, what Slurm resolved),
 * so that Slurm's own record of the proxy holds everything needed to run
 * the job should the daemon never hear of the decision.  It is one
 * comment line after the exec line, never read by the shell:
 *   "# hpcbridge-request v1 BASE64\n"
 * hb_rules_proxy_payload() appends it to script; hb_rules_proxy_request()
 * finds it in a proxy's script (len bytes) and appends the request's
 * JSON text to out: 0, HB_ENOENT when there is none, HB_EINVAL when it
 * does not decode, HB_ENOMEM / HB_ETOOBIG from the buffer.
 */
#define HB_RULES_PAYLOAD_MARK "# hpcbridge-request v1 "
int hb_rules_proxy_payload(struct hb_buf *script, const char *json,
			   size_t len);
int hb_rules_proxy_request(const char *script, size_t len, struct hb_buf *out);

#endif
