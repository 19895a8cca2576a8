/*
 * spank_hpcbridge.c - the SPANK plugin: sbatch options for hpcbridge.
 *
 *   --hpcbridge-target=auto|slurm|kubernetes
 *   --hpcbridge-deadline=TIME
 *   --hpcbridge-checkpoint=DIR
 *   --hpcbridge-data=PATH|s3://bucket/prefix
 *   --hpcbridge-fabric=rdma|tcp|auto
 *
 * The options are registered with spank_option_register() in
 * slurm_spank_init (sbatch 22.05 ignores a static spank_options table), so
 * they work on the command line and in #SBATCH lines of unchanged scripts.
 * Each value is checked when it is read; a bad one makes the callback fail,
 * and sbatch stops with our message and Slurm's "Invalid --OPTION argument".
 *
 * sbatch forwards the values to slurmctld in the job's SPANK environment
 * as _SLURM_SPANK_OPTION_hpcbridge_<option>=VALUE, where
 * job_submit/hpcbridge reads them.  The plugin does nothing else, in any
 * context: it only registers the options where an option table exists
 * (sbatch/salloc, srun, slurmstepd), so the remote side knows them too.
 */
#include <slurm/spank.h>

#include "hbplugin.h"

#define EXPORT __attribute__((visibility("default")))

/* What SPANK_PLUGIN(hpcbridge, 1) defines, with default visibility: the
 * name is part of the variables sbatch forwards (HB_SPANK_PLUGIN_NAME). */
EXPORT extern const char plugin_name[];
EXPORT extern const char plugin_type[];
EXPORT extern const unsigned int plugin_version;
EXPORT extern const unsigned int spank_plugin_version;
const char plugin_name[] = HB_SPANK_PLUGIN_NAME;
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
const unsigned int spank_plugin_version = 1;

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av);

static int check_cb(int val, const char *arg, int remote)
{
	struct hb_err err = { 0 };

	if (hb_opt_check((enum hb_opt)val, arg, &err) == 0)
		return 0;
	/* In sbatch this prints "sbatch: error: hpcbridge: ..." and sbatch
	 * exits; on the remote side the value was checked already. */
	if (!remote)
		slurm_error("hpcbridge: %s", err.msg);
	return -1;
}

static struct spank_option options[HB__OPT_COUNT];

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	(void)ac;
	(void)av;
	if (ctx != S_CTX_ALLOCATOR && ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE)
		return 0;
	for (int i = 0; i < HB__OPT_COUNT; i++) {
		spank_err_t rc;

		options[i].name = (char *)hb_opt_name((enum hb_opt)i);
		options[i].arginfo = (char *)hb_opt_arginfo((enum hb_opt)i);
		options[i].usage = (char *)hb_opt_usage((enum hb_opt)i);
		options[i].has_arg = 1;
		options[i].val = i;
		options[i].cb = check_cb;
		rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS)
			slurm_error("hpcbridge: cannot register --%s: %s",
				    options[i].name, spank_strerror(rc));
	}
	return 0;
}
