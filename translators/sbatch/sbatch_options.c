/*
 * sbatch_options.c - sbatch's option table: every long and short name with
 * the kind of argument it takes (common_options[] of Slurm 22.05's
 * src/common/slurm_opt.c), the SBATCH_* variables (env_vars[] of
 * src/sbatch/opt.c), and what the table says about each option: its name,
 * its slot, the note the report shows when it has no jobspec field.
 */
#include <pthread.h>
#include <string.h>

#include "sbatch_int.h"

#define LO(name, has, id, c)                                                   \
	{                                                                      \
		name, sizeof(name) - 1, has, id, c                             \
	}

/* In Slurm's order (common_options[]), then the SPANK options. */
static const struct lopt lopts[] = {
    LO("account", REQ_ARG, O_ACCOUNT, 'A'),
    LO("acctg-freq", REQ_ARG, O_ACCTG_FREQ, 0),
    LO("array", REQ_ARG, O_ARRAY, 'a'),
    LO("batch", REQ_ARG, O_BATCH, 0),
    LO("begin", REQ_ARG, O_BEGIN, 'b'),
    LO("bb", REQ_ARG, O_BB, 0),
    LO("bbf", REQ_ARG, O_BBF, 0),
    LO("cluster-constraint", REQ_ARG, O_CLUSTER_CONSTRAINT, 0),
    LO("chdir", REQ_ARG, O_CHDIR, 'D'),
    LO("cluster", REQ_ARG, O_CLUSTER, 0),
    LO("clusters", REQ_ARG, O_CLUSTERS, 'M'),
    LO("comment", REQ_ARG, O_COMMENT, 0),
    LO("container", REQ_ARG, O_CONTAINER, 0),
    LO("context", REQ_ARG, O_CONTEXT, 0),
    LO("contiguous", NO_ARG, O_CONTIGUOUS, 0),
    LO("constraint", REQ_ARG, O_CONSTRAINT, 'C'),
    LO("core-spec", REQ_ARG, O_CORE_SPEC, 'S'),
    LO("cores-per-socket", REQ_ARG, O_CORES_PER_SOCKET, 0),
    LO("cpu-freq", REQ_ARG, O_CPU_FREQ, 0),
    LO("cpus-per-gpu", REQ_ARG, O_CPUS_PER_GPU, 0),
    LO("cpus-per-task", REQ_ARG, O_CPUS_PER_TASK, 'c'),
    LO("deadline", REQ_ARG, O_DEADLINE, 0),
    LO("delay-boot", REQ_ARG, O_DELAY_BOOT, 0),
    LO("dependency", REQ_ARG, O_DEPENDENCY, 'd'),
    LO("distribution", REQ_ARG, O_DISTRIBUTION, 'm'),
    LO("error", REQ_ARG, O_ERROR, 'e'),
    LO("exclude", REQ_ARG, O_EXCLUDE, 'x'),
    LO("exclusive", OPT_ARG, O_EXCLUSIVE, 0),
    LO("export", REQ_ARG, O_EXPORT, 0),
    LO("export-file", REQ_ARG, O_EXPORT_FILE, 0),
    LO("extra-node-info", REQ_ARG, O_EXTRA_NODE_INFO, 'B'),
    LO("get-user-env", OPT_ARG, O_GET_USER_ENV, 0),
    LO("gid", REQ_ARG, O_GID, 0),
    LO("gpu-bind", REQ_ARG, O_GPU_BIND, 0),
    LO("gpu-freq", REQ_ARG, O_GPU_FREQ, 0),
    LO("gpus", REQ_ARG, O_GPUS, 'G'),
    LO("gpus-per-node", REQ_ARG, O_GPUS_PER_NODE, 0),
    LO("gpus-per-socket", REQ_ARG, O_GPUS_PER_SOCKET, 0),
    LO("gpus-per-task", REQ_ARG, O_GPUS_PER_TASK, 0),
    LO("gres", REQ_ARG, O_GRES, 0),
    LO("gres-flags", REQ_ARG, O_GRES_FLAGS, 0),
    LO("help", NO_ARG, O_HELP, 'h'),
    LO("hint", REQ_ARG, O_HINT, 0),
    LO("hold", NO_ARG, O_HOLD, 'H'),
    LO("ignore-pbs", NO_ARG, O_IGNORE_PBS, 0),
    LO("input", REQ_ARG, O_INPUT, 'i'),
    LO("job-name", REQ_ARG, O_JOB_NAME, 'J'),
    LO("kill-on-invalid-dep", REQ_ARG, O_KILL_ON_INVALID_DEP, 0),
    LO("licenses", REQ_ARG, O_LICENSES, 'L'),
    LO("mail-type", REQ_ARG, O_MAIL_TYPE, 0),
    LO("mail-user", REQ_ARG, O_MAIL_USER, 0),
    LO("mcs-label", REQ_ARG, O_MCS_LABEL, 0),
    LO("mem", REQ_ARG, O_MEM, 0),
    LO("mem-bind", REQ_ARG, O_MEM_BIND, 0),
    LO("mem-per-cpu", REQ_ARG, O_MEM_PER_CPU, 0),
    LO("mem-per-gpu", REQ_ARG, O_MEM_PER_GPU, 0),
    LO("mincpus", REQ_ARG, O_MINCPUS, 0),
    LO("network", REQ_ARG, O_NETWORK, 0),
    LO("nice", OPT_ARG, O_NICE, 0),
    LO("no-kill", OPT_ARG, O_NO_KILL, 'k'),
    LO("no-requeue", NO_ARG, O_NO_REQUEUE, 0),
    LO("nodefile", REQ_ARG, O_NODEFILE, 'F'),
    LO("nodelist", REQ_ARG, O_NODELIST, 'w'),
    LO("nodes", REQ_ARG, O_NODES, 'N'),
    LO("ntasks", REQ_ARG, O_NTASKS, 'n'),
    LO("ntasks-per-core", REQ_ARG, O_NTASKS_PER_CORE, 0),
    LO("ntasks-per-gpu", REQ_ARG, O_NTASKS_PER_GPU, 0),
    LO("ntasks-per-node", REQ_ARG, O_NTASKS_PER_NODE, 0),
    LO("ntasks-per-socket", REQ_ARG, O_NTASKS_PER_SOCKET, 0),
    LO("ntasks-per-tres", REQ_ARG, O_NTASKS_PER_TRES, 0),
    LO("open-mode", REQ_ARG, O_OPEN_MODE, 0),
    LO("output", REQ_ARG, O_OUTPUT, 'o'),
    LO("overcommit", NO_ARG, O_OVERCOMMIT, 'O'),
    LO("oversubscribe", NO_ARG, O_OVERSUBSCRIBE, 's'),
    LO("parsable", NO_ARG, O_PARSABLE, 0),
    LO("partition", REQ_ARG, O_PARTITION, 'p'),
    LO("power", REQ_ARG, O_POWER, 0),
    LO("prefer", REQ_ARG, O_PREFER, 0),
    LO("priority", REQ_ARG, O_PRIORITY, 0),
    LO("profile", REQ_ARG, O_PROFILE, 0),
    LO("propagate", OPT_ARG, O_PROPAGATE, 0),
    LO("qos", REQ_ARG, O_QOS, 'q'),
    LO("quiet", NO_ARG, O_QUIET, 'Q'),
    LO("reboot", NO_ARG, O_REBOOT, 0),
    LO("requeue", NO_ARG, O_REQUEUE, 0),
    LO("reservation", REQ_ARG, O_RESERVATION, 0),
    LO("signal", REQ_ARG, O_SIGNAL, 0),
    LO("sockets-per-node", REQ_ARG, O_SOCKETS_PER_NODE, 0),
    LO("spread-job", NO_ARG, O_SPREAD_JOB, 0),
    LO("switches", REQ_ARG, O_SWITCHES, 0),
    LO("tasks-per-node", REQ_ARG, O_NTASKS_PER_NODE, 0),
    LO("test-only", NO_ARG, O_TEST_ONLY, 0),
    LO("thread-spec", REQ_ARG, O_THREAD_SPEC, 0),
    LO("threads-per-core", REQ_ARG, O_THREADS_PER_CORE, 0),
    LO("time", REQ_ARG, O_TIME, 't'),
    LO("time-min", REQ_ARG, O_TIME_MIN, 0),
    LO("tmp", REQ_ARG, O_TMP, 0),
    LO("uid", REQ_ARG, O_UID, 0),
    LO("use-min-nodes", NO_ARG, O_USE_MIN_NODES, 0),
    LO("verbose", NO_ARG, O_VERBOSE, 'v'),
    LO("version", NO_ARG, O_VERSION, 'V'),
    LO("usage", NO_ARG, O_USAGE, 0),
    LO("wait", NO_ARG, O_WAIT, 'W'),
    LO("wait-all-nodes", REQ_ARG, O_WAIT_ALL_NODES, 0),
    LO("wckey", REQ_ARG, O_WCKEY, 0),
    LO("wrap", REQ_ARG, O_WRAP, 0),
    LO("hpcbridge-target", REQ_ARG, O_HB_TARGET, 0),
    LO("hpcbridge-deadline", REQ_ARG, O_HB_DEADLINE, 0),
    LO("hpcbridge-checkpoint", REQ_ARG, O_HB_CHECKPOINT, 0),
    LO("hpcbridge-data", REQ_ARG, O_HB_DATA, 0),
    LO("hpcbridge-fabric", REQ_ARG, O_HB_FABRIC, 0),
};

#define NLOPTS (sizeof(lopts) / sizeof(lopts[0]))

/*
 * An index of the long options by exact name: open addressing over
 * LOPT_SLOTS slots, each lopts[] index + 1 (0: empty).  Built once.
 */
#define LOPT_SLOTS 512
static uint16_t lopt_slot[LOPT_SLOTS];
static pthread_once_t lopt_once = PTHREAD_ONCE_INIT;

/* From the length and three letters: no two options collide much. */
static unsigned lopt_hash(const char *name, size_t n)
{
	unsigned h = (unsigned)n * 97u;

	if (n)
		h += (unsigned char)name[0] * 31u +
		     (unsigned char)name[n / 2] * 7u +
		     (unsigned char)name[n - 1];
	return h & (LOPT_SLOTS - 1);
}

static void lopt_index(void)
{
	for (size_t k = 0; k < NLOPTS; k++) {
		unsigned h = lopt_hash(lopts[k].name, lopts[k].len);

		while (lopt_slot[h])
			h = (h + 1) & (LOPT_SLOTS - 1);
		lopt_slot[h] = (uint16_t)(k + 1);
	}
}

/* The long option spelled exactly name (n bytes), or NULL. */
static const struct lopt *lopt_exact(const char *name, size_t n)
{
	unsigned h = lopt_hash(name, n);

	pthread_once(&lopt_once, lopt_index);
	for (; lopt_slot[h]; h = (h + 1) & (LOPT_SLOTS - 1)) {
		const struct lopt *o = &lopts[lopt_slot[h] - 1];

		if (o->len == n && memcmp(o->name, name, n) == 0)
			return o;
	}
	return NULL;
}

/* The variables sbatch 22.05 reads (src/sbatch/opt.c env_vars[]). */
const struct envopt sb_envopts[] = {
    {"SBATCH_IGNORE_PBS", O_IGNORE_PBS},
    {"SBATCH_ACCOUNT", O_ACCOUNT},
    {"SBATCH_ARRAY_INX", O_ARRAY},
    {"SBATCH_ACCTG_FREQ", O_ACCTG_FREQ},
    {"SBATCH_BATCH", O_BATCH},
    {"SBATCH_BURST_BUFFER", O_BB},
    {"SBATCH_CLUSTER_CONSTRAINT", O_CLUSTER_CONSTRAINT},
    {"SBATCH_CLUSTERS", O_CLUSTERS},
    {"SLURM_CLUSTERS", O_CLUSTERS},
    {"SBATCH_CONTAINER", O_CONTAINER},
    {"SBATCH_CONSTRAINT", O_CONSTRAINT},
    {"SBATCH_CORE_SPEC", O_CORE_SPEC},
    {"SBATCH_CPU_FREQ_REQ", O_CPU_FREQ},
    {"SBATCH_CPUS_PER_GPU", O_CPUS_PER_GPU},
    {"SBATCH_DEBUG", O_VERBOSE},
    {"SBATCH_DELAY_BOOT", O_DELAY_BOOT},
    {"SBATCH_DISTRIBUTION", O_DISTRIBUTION},
    {"SBATCH_EXCLUSIVE", O_EXCLUSIVE},
    {"SBATCH_EXPORT", O_EXPORT},
    {"SBATCH_GET_USER_ENV", O_GET_USER_ENV},
    {"SBATCH_GRES", O_GRES},
    {"SBATCH_GRES_FLAGS", O_GRES_FLAGS},
    {"SBATCH_GPUS", O_GPUS},
    {"SBATCH_GPU_BIND", O_GPU_BIND},
    {"SBATCH_GPU_FREQ", O_GPU_FREQ},
    {"SBATCH_GPUS_PER_NODE", O_GPUS_PER_NODE},
    {"SBATCH_GPUS_PER_SOCKET", O_GPUS_PER_SOCKET},
    {"SBATCH_GPUS_PER_TASK", O_GPUS_PER_TASK},
    {"SLURM_HINT", O_HINT},
    {"SBATCH_HINT", O_HINT},
    {"SBATCH_JOB_NAME", O_JOB_NAME},
    {"SBATCH_MEM_BIND", O_MEM_BIND},
    {"SBATCH_MEM_PER_CPU", O_MEM_PER_CPU},
    {"SBATCH_MEM_PER_GPU", O_MEM_PER_GPU},
    {"SBATCH_MEM_PER_NODE", O_MEM},
    {"SBATCH_NETWORK", O_NETWORK},
    {"SBATCH_NO_KILL", O_NO_KILL},
    {"SBATCH_NO_REQUEUE", O_NO_REQUEUE},
    {"SBATCH_OPEN_MODE", O_OPEN_MODE},
    {"SBATCH_OVERCOMMIT", O_OVERCOMMIT},
    {"SBATCH_PARTITION", O_PARTITION},
    {"SBATCH_POWER", O_POWER},
    {"SBATCH_PROFILE", O_PROFILE},
    {"SBATCH_QOS", O_QOS},
    {"SBATCH_REQ_SWITCH", O_SWITCH_REQ},
    {"SBATCH_REQUEUE", O_REQUEUE},
    {"SBATCH_RESERVATION", O_RESERVATION},
    {"SBATCH_SIGNAL", O_SIGNAL},
    {"SBATCH_SPREAD_JOB", O_SPREAD_JOB},
    {"SBATCH_THREAD_SPEC", O_THREAD_SPEC},
    {"SBATCH_THREADS_PER_CORE", O_THREADS_PER_CORE},
    {"SBATCH_TIMELIMIT", O_TIME},
    {"SBATCH_USE_MIN_NODES", O_USE_MIN_NODES},
    {"SBATCH_WAIT", O_WAIT},
    {"SBATCH_WAIT_ALL_NODES", O_WAIT_ALL_NODES},
    {"SBATCH_WAIT4SWITCH", O_SWITCH_WAIT},
    {"SBATCH_WCKEY", O_WCKEY},
    {"SBATCH_ERROR", O_ERROR},
    {"SBATCH_INPUT", O_INPUT},
    {"SBATCH_OUTPUT", O_OUTPUT},
};

const size_t sb_nenvopts = sizeof(sb_envopts) / sizeof(sb_envopts[0]);

/* What an option with no jobspec field is, for the fidelity report. */
const char *const sb_unmapped_note[O__COUNT] = {
    [O_ACCTG_FREQ] = "accounting sampling interval; no jobspec field",
    [O_BATCH] = "batch host features; no jobspec field",
    [O_BB] = "burst buffer request; no jobspec field",
    [O_BBF] = "burst buffer file, read by sbatch on the submit host",
    [O_CLUSTER_CONSTRAINT] = "federation cluster features; no jobspec "
			     "field",
    [O_CLUSTER] = "cluster selection; no jobspec field",
    [O_CLUSTERS] = "cluster selection; no jobspec field",
    [O_CONTEXT] = "SELinux context; no jobspec field",
    [O_CONTIGUOUS] = "contiguous nodes; no jobspec field",
    [O_CORE_SPEC] = "specialized cores; no jobspec field",
    [O_CORES_PER_SOCKET] = "node topology request; no jobspec field",
    [O_CPU_FREQ] = "CPU frequency; no jobspec field",
    [O_CPUS_PER_GPU] = "CPUs per GPU; no jobspec field",
    [O_DELAY_BOOT] = "node reboot delay; no jobspec field",
    [O_DISTRIBUTION] = "task distribution; no jobspec field",
    [O_EXPORT_FILE] = "environment file, read by sbatch on the submit "
		      "host",
    [O_EXTRA_NODE_INFO] = "node topology request; no jobspec field",
    [O_GET_USER_ENV] = "login environment; no jobspec field",
    [O_GID] = "group to run as; no jobspec field",
    [O_GPU_BIND] = "GPU binding; no jobspec field",
    [O_GPU_FREQ] = "GPU frequency; no jobspec field",
    [O_GPUS_PER_SOCKET] = "GPUs per socket; no jobspec field",
    [O_GRES_FLAGS] = "GRES binding policy; no jobspec field",
    [O_HELP] = "sbatch reads --help only on its own command line; "
	       "ignored here",
    [O_HINT] = "task placement hint; no jobspec field",
    [O_HOLD] = "submit held; no jobspec field",
    [O_IGNORE_PBS] = "makes sbatch ignore #PBS/#BSUB lines",
    [O_KILL_ON_INVALID_DEP] = "dependency failure policy; no jobspec "
			      "field",
    [O_MCS_LABEL] = "MCS label; no jobspec field",
    [O_MEM_BIND] = "memory binding; no jobspec field",
    [O_MINCPUS] = "minimum CPUs per node; no jobspec field",
    [O_NETWORK] = "network request; no jobspec field",
    [O_NICE] = "scheduling nice value; no jobspec field",
    [O_NO_KILL] = "keep running on node failure; no jobspec field",
    [O_NODEFILE] = "node list file, read by sbatch on the submit host",
    [O_NTASKS_PER_CORE] = "tasks per core; no jobspec field",
    [O_NTASKS_PER_GPU] = "tasks per GPU",
    [O_NTASKS_PER_SOCKET] = "tasks per socket; no jobspec field",
    [O_NTASKS_PER_TRES] = "tasks per GPU (--ntasks-per-gpu)",
    [O_OPEN_MODE] = "output file open mode; no jobspec field",
    [O_OVERCOMMIT] = "overcommit CPUs; no jobspec field",
    [O_PARSABLE] = "sbatch output format; no effect on the job",
    [O_POWER] = "power management; no jobspec field",
    [O_PREFER] = "preferred node features; no jobspec field",
    [O_PRIORITY] = "job priority; no jobspec field",
    [O_PROFILE] = "profiling; no jobspec field",
    [O_PROPAGATE] = "resource limits to propagate; no jobspec field",
    [O_QUIET] = "sbatch output verbosity; no effect on the job",
    [O_REBOOT] = "reboot nodes first; no jobspec field",
    [O_RESERVATION] = "reservation; no jobspec field",
    [O_SOCKETS_PER_NODE] = "node topology request; no jobspec field",
    [O_SPREAD_JOB] = "spread over nodes; no jobspec field",
    [O_SWITCHES] = "network switch count; no jobspec field",
    [O_TEST_ONLY] = "sbatch --test-only submits nothing",
    [O_THREAD_SPEC] = "specialized threads; no jobspec field",
    [O_THREADS_PER_CORE] = "threads per core; no jobspec field",
    [O_TMP] = "temporary disk space; no jobspec field",
    [O_USE_MIN_NODES] = "prefer the minimum node count; no jobspec field",
    [O_VERBOSE] = "sbatch output verbosity; no effect on the job",
    [O_VERSION] = "sbatch reads --version only on its own command line; "
		  "ignored here",
    [O_USAGE] = "sbatch reads --usage only on its own command line; "
		"ignored here",
    [O_WAIT] = "sbatch waits for the job; no effect on the job",
    [O_WAIT_ALL_NODES] = "wait for all nodes to boot; no jobspec field",
    [O_WCKEY] = "workload characterization key; no jobspec field",
    [O_WRAP] = "sbatch reads --wrap only on its own command line; "
	       "ignored here",
    [O_SWITCH_REQ] = "network switch count; no jobspec field",
    [O_SWITCH_WAIT] = "network switch wait; no jobspec field",
};

/* Options sbatch reads in its first pass only (sbatch_early_pass). */
bool sb_early_pass(int id)
{
	return id == O_HELP || id == O_QUIET || id == O_VERBOSE ||
	       id == O_VERSION || id == O_USAGE || id == O_WRAP;
}

uint8_t sb_opt_has_arg(int id)
{
	for (size_t i = 0; i < NLOPTS; i++)
		if (lopts[i].id == id)
			return lopts[i].has_arg;
	return REQ_ARG; /* env-only options take a value */
}

const char *sb_opt_name(int id)
{
	switch (id) {
	case O_SWITCH_REQ:
		return "switches";
	case O_SWITCH_WAIT:
		return "switches (wait)";
	}
	for (size_t i = 0; i < NLOPTS; i++)
		if (lopts[i].id == id)
			return lopts[i].name;
	return "?";
}

/* Options that write the same value share one slot. */
int sb_group(int id)
{
	switch (id) {
	case O_OVERSUBSCRIBE:
		return O_EXCLUSIVE;
	case O_NO_REQUEUE:
		return O_REQUEUE;
	case O_NODEFILE:
		return O_NODELIST;
	case O_CLUSTER:
		return O_CLUSTERS;
	case O_SWITCH_REQ:
		return O_SWITCHES;
	}
	return id;
}

/* Options whose every occurrence contributes (none overrides another). */
bool sb_cumulative(int id)
{
	return id == O_MAIL_TYPE || id == O_HB_DATA || id == O_VERBOSE ||
	       id == O_QUIET;
}

const struct lopt *sb_short_opt(char ch)
{
	for (size_t k = 0; k < NLOPTS; k++)
		if (lopts[k].shortc && lopts[k].shortc == ch)
			return &lopts[k];
	return NULL;
}

/*
 * The long option name (nlen bytes) abbreviates, as getopt_long() finds
 * it: an exact match wins, else the first option it is a prefix of.
 * *ambig: it is a prefix of options that differ.  NULL when none.
 */
const struct lopt *sb_long_opt(const char *name, size_t nlen, bool *ambig)
{
	const struct lopt *found = lopt_exact(name, nlen);

	*ambig = false;
	if (found)
		return found;
	for (size_t k = 0; k < NLOPTS; k++) {
		if (lopts[k].len < nlen ||
		    memcmp(lopts[k].name, name, nlen) != 0)
			continue;
		if (!found)
			found = &lopts[k];
		else if (found->id != lopts[k].id ||
			 found->has_arg != lopts[k].has_arg)
			*ambig = true;
	}
	return found;
}

/* " '--NAME'" for every long option name (nlen bytes) abbreviates. */
void sb_long_opt_list(struct hb_buf *b, const char *name, size_t nlen)
{
	for (size_t k = 0; k < NLOPTS; k++)
		if (strncmp(lopts[k].name, name, nlen) == 0)
			hb_buf_printf(b, " '--%s'", lopts[k].name);
}
