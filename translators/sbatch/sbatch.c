/*
 * sbatch.c - read an sbatch script exactly as Slurm 22.05's sbatch reads
 * it (src/sbatch/sbatch.c, src/sbatch/opt.c, src/common/slurm_opt.c):
 *
 *  - the script must start with "#!", may not contain NUL bytes or DOS
 *    line breaks (we also refuse other control bytes);
 *  - "#SBATCH" (or "#SLURM") at column 0 starts a directive; scanning stops
 *    at the first line that is neither blank nor a comment;
 *  - each directive line is split like get_argument(): white space
 *    separates, quotes group, a backslash escapes, an unquoted '#' ends
 *    the line, and an empty argument ends the line;
 *  - the arguments of all lines form one argv that getopt_long() reads
 *    with sbatch's option table (so an option's value may sit on the next
 *    line, long options may be abbreviated, short options clustered);
 *  - then the SBATCH_* environment variables, then the command line, each
 *    overriding the one before option by option;
 *  - then the checks sbatch makes at the end (memory options, node and
 *    task counts).
 *
 * Every option read becomes a directive in the jobspec; those that map to
 * a field set it, the others carry a note saying what they were.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/sbatch.h"
#include "hpcbridge/units.h"

/* Slurm's default MaxArraySize: array indices run from 0 to 1000. */
#define ARRAY_MAX_SIZE 1001
/* Largest node list we expand to count its nodes. */
#define HOSTLIST_MAX 16384

/* ------------------------------------------------------------------ */
/* Characters, as the C locale sees them                               */
/* ------------------------------------------------------------------ */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool ieq(const char *a, const char *b)
{
	while (*a && *b && lower(*a) == lower(*b)) {
		a++;
		b++;
	}
	return *a == '\0' && *b == '\0';
}

/* s starts with p, case-insensitively (xstrncasecmp(s, p, strlen(p))). */
static bool iprefix(const char *s, const char *p)
{
	while (*p) {
		if (lower(*s) != lower(*p))
			return false;
		s++;
		p++;
	}
	return true;
}

/* Case-insensitive substring (xstrcasestr). */
static bool icontains(const char *s, const char *p)
{
	for (; *s; s++)
		if (iprefix(s, p))
			return true;
	return false;
}

static bool all_space(const char *s)
{
	while (*s)
		if (!is_space(*s++))
			return false;
	return true;
}

/*
 * strtol(s, &end, 10) without undefined behaviour: leading white space, a
 * sign, digits.  *end is s when there are no digits.  Returns true on
 * overflow (the value is then clamped).
 */
static bool c_strtol(const char *s, long *out, const char **end)
{
	const char *p = s;
	bool neg = false, ovf = false;
	unsigned long v = 0, lim;

	while (is_space(*p))
		p++;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	lim = neg ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
	if (!is_digit(*p)) {
		*out = 0;
		*end = s;
		return false;
	}
	for (; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (ovf || v > (lim - d) / 10)
			ovf = true;
		else
			v = v * 10 + d;
	}
	*end = p;
	if (ovf)
		*out = neg ? LONG_MIN : LONG_MAX;
	else if (neg)
		*out = v == (unsigned long)LONG_MAX + 1 ? LONG_MIN : -(long)v;
	else
		*out = (long)v;
	return ovf;
}

/* ------------------------------------------------------------------ */
/* The option table                                                    */
/* ------------------------------------------------------------------ */

enum oid {
	O_ACCOUNT,
	O_ACCTG_FREQ,
	O_ARRAY,
	O_BATCH,
	O_BEGIN,
	O_BB,
	O_BBF,
	O_CLUSTER_CONSTRAINT,
	O_CHDIR,
	O_CLUSTER,
	O_CLUSTERS,
	O_COMMENT,
	O_CONTAINER,
	O_CONTEXT,
	O_CONTIGUOUS,
	O_CONSTRAINT,
	O_CORE_SPEC,
	O_CORES_PER_SOCKET,
	O_CPU_FREQ,
	O_CPUS_PER_GPU,
	O_CPUS_PER_TASK,
	O_DEADLINE,
	O_DELAY_BOOT,
	O_DEPENDENCY,
	O_DISTRIBUTION,
	O_ERROR,
	O_EXCLUDE,
	O_EXCLUSIVE,
	O_EXPORT,
	O_EXPORT_FILE,
	O_EXTRA_NODE_INFO,
	O_GET_USER_ENV,
	O_GID,
	O_GPU_BIND,
	O_GPU_FREQ,
	O_GPUS,
	O_GPUS_PER_NODE,
	O_GPUS_PER_SOCKET,
	O_GPUS_PER_TASK,
	O_GRES,
	O_GRES_FLAGS,
	O_HELP,
	O_HINT,
	O_HOLD,
	O_IGNORE_PBS,
	O_INPUT,
	O_JOB_NAME,
	O_KILL_ON_INVALID_DEP,
	O_LICENSES,
	O_MAIL_TYPE,
	O_MAIL_USER,
	O_MCS_LABEL,
	O_MEM,
	O_MEM_BIND,
	O_MEM_PER_CPU,
	O_MEM_PER_GPU,
	O_MINCPUS,
	O_NETWORK,
	O_NICE,
	O_NO_KILL,
	O_NO_REQUEUE,
	O_NODEFILE,
	O_NODELIST,
	O_NODES,
	O_NTASKS,
	O_NTASKS_PER_CORE,
	O_NTASKS_PER_GPU,
	O_NTASKS_PER_NODE,
	O_NTASKS_PER_SOCKET,
	O_NTASKS_PER_TRES,
	O_OPEN_MODE,
	O_OUTPUT,
	O_OVERCOMMIT,
	O_OVERSUBSCRIBE,
	O_PARSABLE,
	O_PARTITION,
	O_POWER,
	O_PREFER,
	O_PRIORITY,
	O_PROFILE,
	O_PROPAGATE,
	O_QOS,
	O_QUIET,
	O_REBOOT,
	O_REQUEUE,
	O_RESERVATION,
	O_SIGNAL,
	O_SOCKETS_PER_NODE,
	O_SPREAD_JOB,
	O_SWITCHES,
	O_TEST_ONLY,
	O_THREAD_SPEC,
	O_THREADS_PER_CORE,
	O_TIME,
	O_TIME_MIN,
	O_TMP,
	O_UID,
	O_USE_MIN_NODES,
	O_VERBOSE,
	O_VERSION,
	O_USAGE,
	O_WAIT,
	O_WAIT_ALL_NODES,
	O_WCKEY,
	O_WRAP,
	/* only as environment variables */
	O_SWITCH_REQ,
	O_SWITCH_WAIT,
	/* the project's own SPANK options */
	O_HB_TARGET,
	O_HB_DEADLINE,
	O_HB_CHECKPOINT,
	O_HB_DATA,
	O__COUNT
};

enum { NO_ARG, REQ_ARG, OPT_ARG };

struct lopt {
	const char *name;
	uint8_t len; /* strlen(name) */
	uint8_t has_arg;
	uint8_t id;
	char shortc;
};

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
static const struct envopt {
	const char *var;
	uint8_t id;
} envopts[] = {
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

#define NENVOPTS (sizeof(envopts) / sizeof(envopts[0]))

/* What an option with no jobspec field is, for the fidelity report. */
static const char *const unmapped_note[O__COUNT] = {
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
    [O_NTASKS_PER_GPU] = "tasks per GPU; no jobspec field",
    [O_NTASKS_PER_SOCKET] = "tasks per socket; no jobspec field",
    [O_NTASKS_PER_TRES] = "tasks per GPU; no jobspec field",
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
static bool early_pass(int id)
{
	return id == O_HELP || id == O_QUIET || id == O_VERBOSE ||
	       id == O_VERSION || id == O_USAGE || id == O_WRAP;
}

static uint8_t opt_has_arg(int id)
{
	for (size_t i = 0; i < NLOPTS; i++)
		if (lopts[i].id == id)
			return lopts[i].has_arg;
	return REQ_ARG; /* env-only options take a value */
}

static const char *opt_name(int id)
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
static int group(int id)
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
static bool cumulative(int id)
{
	return id == O_MAIL_TYPE || id == O_HB_DATA || id == O_VERBOSE ||
	       id == O_QUIET;
}

/* ------------------------------------------------------------------ */
/* Parser state                                                        */
/* ------------------------------------------------------------------ */

#define NO_DIR UINT32_MAX
/* dirinfo flag: the directive set no value (ignored, reset, #PBS...) */
#define DI_NOVALUE 0x8000u

struct slot {
	bool set, by_env;
	uint32_t dir;	   /* directive that set the value, or NO_DIR */
	uint32_t reset_by; /* directive that reset it, or NO_DIR */
	const char *val;   /* the argument, in the arena (NULL: none) */
	uint64_t a, b;	   /* parsed numbers */
	const char *t;	   /* parsed string (GPU type, ...) */
};

struct ctx {
	struct hb_jobspec *spec;
	struct hb_err *err;
	const char *name;
	/* where the option being applied came from */
	struct hb_origin origin;
	const char *where;
	uint32_t where_line;
	uint32_t cur; /* its directive */

	struct slot slot[O__COUNT];
	uint16_t *dinfo; /* per directive: option id | DI_NOVALUE */
	uint32_t ndinfo;
	uint32_t mail_bits;
	bool ignore_pbs;
	/* sockets per node, cores per socket, threads per core: -1 unset */
	long topo[3];
	uint32_t topo_dir;
	bool extra_set;	    /* -B given */
	struct hb_buf text; /* scratch for directive texts */
};

static int fail(struct ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct ctx *c, int code, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hb_err_set(c->err, code, c->where, c->where_line, "%s", msg);
}

static int nomem(struct ctx *c)
{
	return fail(c, HB_ENOMEM, "out of memory");
}

/* Values are quoted in messages; keep them short and printable. */
static const char *shown(struct ctx *c, const char *v)
{
	char buf[80];
	size_t i, n = 0;

	if (!v)
		return "";
	for (i = 0; v[i] && n < sizeof(buf) - 4; i++)
		buf[n++] = (unsigned char)v[i] < 0x20 ? '?' : v[i];
	if (v[i]) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return hb_arena_strdup(&c->spec->arena, buf);
}

static struct hb_directive *dir(struct ctx *c, uint32_t d)
{
	return &c->spec->directives[d];
}

static int add_dir(struct ctx *c, int id, uint16_t flags, const char *text,
		   size_t len, uint8_t kind)
{
	struct hb_directive *d;
	uint32_t idx = c->spec->ndirectives;

	d = hb_jobspec_add_directive(c->spec, kind, c->origin, text, len);
	if (!d)
		return nomem(c);
	if (idx >= c->ndinfo) {
		uint32_t n = c->ndinfo ? c->ndinfo * 2 : 32;
		uint16_t *p;

		if (n <= idx)
			n = idx + 1;
		p = realloc(c->dinfo, (size_t)n * sizeof(*p));
		if (!p)
			return nomem(c);
		c->dinfo = p;
		c->ndinfo = n;
	}
	c->dinfo[idx] = (uint16_t)(id | flags);
	c->cur = idx;
	return 0;
}

/* Add a remark to directive d (after any it already has). */
static void note(struct ctx *c, uint32_t d, const char *text)
{
	struct hb_directive *x = dir(c, d);
	const char *both;

	if (!text)
		return;
	if (!x->note || strcmp(x->note, text) == 0) {
		x->note = text;
		return;
	}
	both = hb_arena_printf(&c->spec->arena, "%s; %s", x->note, text);
	x->note = both ? both : text;
}

static const char *where_text(struct ctx *c, uint32_t d)
{
	const struct hb_directive *x = dir(c, d);

	switch (x->origin.kind) {
	case HB_ORIGIN_FILE:
		return hb_arena_printf(&c->spec->arena, "'%s' at line %u",
				       x->text, x->origin.line);
	case HB_ORIGIN_ENV:
		return hb_arena_printf(&c->spec->arena, "%s", x->text);
	default:
		return hb_arena_printf(&c->spec->arena,
				       "'%s' on the command line", x->text);
	}
}

/* The field f now comes from directive d. */
static void set_field(struct ctx *c, enum hb_field f, uint32_t d)
{
	hb_jobspec_set_origin(c->spec, f, dir(c, d)->origin);
	hb_directive_add_field(dir(c, d), f);
}

/* Record that the current directive set slot g's value. */
static void store(struct ctx *c, int id, const char *val)
{
	struct slot *s = &c->slot[group(id)];

	s->set = true;
	s->by_env = c->origin.kind == HB_ORIGIN_ENV;
	s->dir = c->cur;
	s->reset_by = NO_DIR;
	s->val = val;
}

/* ------------------------------------------------------------------ */
/* Value parsers, as Slurm's                                           */
/* ------------------------------------------------------------------ */

/* parse_int(): a decimal int; positive also refuses 0. */
static int slurm_int(struct ctx *c, const char *opt, const char *v,
		     bool positive, uint64_t *out)
{
	const char *end;
	long n;
	bool ovf = c_strtol(v, &n, &end);

	if (*end != '\0' || end == v || n < 0 || (positive && n == 0))
		return fail(c, HB_EINVAL, "invalid numeric value '%s' for --%s",
			    shown(c, v), opt);
	if (ovf || n > INT_MAX)
		return fail(c, HB_ERANGE,
			    "numeric value '%s' for --%s is too large",
			    shown(c, v), opt);
	*out = (uint64_t)n;
	return 0;
}

/* _str_to_nodes(): a count with an optional k or m multiplier. */
static int str_to_nodes(const char *s, long *n, const char **left)
{
	const char *end;
	bool ovf = c_strtol(s, n, &end);

	if (end == s) {
		*left = s;
		*n = -1;
		return 0;
	}
	if (*end == 'k' || *end == 'K') {
		if (*n > INT_MAX / 1024 || *n < -(INT_MAX / 1024))
			ovf = true;
		else
			*n *= 1024;
		end++;
	}
	if (*end == 'm' || *end == 'M') {
		if (ovf || *n > INT_MAX / (1024 * 1024) ||
		    *n < -(INT_MAX / (1024 * 1024)))
			ovf = true;
		else
			*n *= 1024 * 1024;
		end++;
	}
	*left = end;
	return ovf || *n > INT_MAX ? HB_ERANGE : 0;
}

/* verify_node_count(): "N" or "MIN-MAX". */
static int node_count(struct ctx *c, const char *v, uint64_t *min,
		      uint64_t *max)
{
	const char *dash = strchr(v, '-'), *left;
	long lo, hi;
	int rc;

	if (dash) {
		char *lo_s =
		    hb_arena_strndup(&c->spec->arena, v, (size_t)(dash - v));

		if (!lo_s)
			return nomem(c);
		rc = str_to_nodes(lo_s, &lo, &left);
		if (rc)
			goto range;
		if (!all_space(left))
			goto bad;
		if (lo < 0)
			lo = 1;
		rc = str_to_nodes(dash + 1, &hi, &left);
		if (rc)
			goto range;
		if (!all_space(left))
			goto bad;
	} else {
		rc = str_to_nodes(v, &lo, &left);
		if (rc)
			goto range;
		if (!all_space(left) || lo < 0)
			goto bad;
		hi = lo;
	}
	if (hi != 0 && hi < lo)
		return fail(c, HB_EINVAL,
			    "invalid --nodes '%s': maximum node count %ld is "
			    "less than minimum node count %ld",
			    shown(c, v), hi, lo);
	*min = (uint64_t)lo;
	*max = (uint64_t)hi;
	return 0;
bad:
	return fail(c, HB_EINVAL,
		    "invalid --nodes: '%s' is not a valid node "
		    "count",
		    shown(c, v));
range:
	return fail(c, HB_ERANGE,
		    "invalid --nodes: node count '%s' is too "
		    "large",
		    shown(c, v));
}

/* sig_name2num() */
static long sig_num(const char *s)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = {
	    {"HUP", 1},	  {"INT", 2},	{"QUIT", 3},  {"ABRT", 6},
	    {"KILL", 9},  {"ALRM", 14}, {"TERM", 15}, {"USR1", 10},
	    {"USR2", 12}, {"URG", 23},	{"CONT", 18}, {"STOP", 19},
	    {"TSTP", 20}, {"TTIN", 21}, {"TTOU", 22}, {"XCPU", 24},
	};
	const char *end;
	long n;
	bool ovf = c_strtol(s, &n, &end);

	if (end != s)
		return (!ovf && all_space(end)) ? n : 0;
	while (is_space(*s))
		s++;
	if (iprefix(s, "SIG"))
		s += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		size_t n2 = strlen(sigs[i].name);

		if (iprefix(s, sigs[i].name) && all_space(s + n2))
			return sigs[i].num;
	}
	return 0;
}

/* get_signal_opts(), as sbatch runs it: [R][B][R][:]sig[@secs]. */
static bool signal_ok(struct ctx *c, const char *v)
{
	const char *at;
	char *name;
	long n;
	const char *end;
	bool ovf;

	if (lower(*v) == 'r')
		v++;
	if (lower(*v) == 'b')
		v++;
	if (lower(*v) == 'r')
		v++;
	if (*v == ':')
		v++;
	at = strchr(v, '@');
	name = hb_arena_strndup(&c->spec->arena, v,
				at ? (size_t)(at - v) : strlen(v));
	if (!name)
		return false;
	n = sig_num(name);
	if (n < 1 || n > 0xffff)
		return false;
	if (!at)
		return true;
	ovf = c_strtol(at + 1, &n, &end);
	if (ovf || n < 0 || n > 0xffff)
		return false;
	return *end == '\0';
}

/* parse_mail_type(): a bit set; NONE gives 0, nothing valid is -1. */
enum {
	M_ARRAY_TASKS = 1 << 0,
	M_INVALID_DEPEND = 1 << 1,
	M_BEGIN = 1 << 2,
	M_END = 1 << 3,
	M_FAIL = 1 << 4,
	M_REQUEUE = 1 << 5,
	M_STAGE_OUT = 1 << 6,
	M_TIME50 = 1 << 7,
	M_TIME80 = 1 << 8,
	M_TIME90 = 1 << 9,
	M_TIME100 = 1 << 10,
};

static const struct {
	const char *name;
	uint32_t bits;
} mail_names[] = {
    /* print_mail_type() order */
    {"ARRAY_TASKS", M_ARRAY_TASKS},
    {"INVALID_DEPEND", M_INVALID_DEPEND},
    {"BEGIN", M_BEGIN},
    {"END", M_END},
    {"FAIL", M_FAIL},
    {"REQUEUE", M_REQUEUE},
    {"STAGE_OUT", M_STAGE_OUT},
    {"TIME_LIMIT_50", M_TIME50},
    {"TIME_LIMIT_80", M_TIME80},
    {"TIME_LIMIT_90", M_TIME90},
    {"TIME_LIMIT", M_TIME100},
};

static long mail_type(const char *v)
{
	uint32_t bits = 0;
	bool none = false;
	const char *p = v;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char tok[32];

		if (n && n < sizeof(tok)) {
			memcpy(tok, p, n);
			tok[n] = '\0';
			if (ieq(tok, "NONE")) {
				bits = 0;
				none = true;
				break;
			} else if (ieq(tok, "ALL")) {
				bits |= M_INVALID_DEPEND | M_BEGIN | M_END |
					M_FAIL | M_REQUEUE | M_STAGE_OUT;
			} else {
				for (size_t i = 0;
				     i <
				     sizeof(mail_names) / sizeof(mail_names[0]);
				     i++)
					if (ieq(tok, mail_names[i].name))
						bits |= mail_names[i].bits;
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (!bits && !none)
		return -1;
	return bits;
}

static const char *mail_string(struct ctx *c, uint32_t bits)
{
	char buf[256];
	size_t n = 0;

	if (!bits)
		return "NONE";
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(mail_names) / sizeof(mail_names[0]);
	     i++) {
		if (!(bits & mail_names[i].bits))
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
				      n ? "," : "", mail_names[i].name);
	}
	return hb_arena_strdup(&c->spec->arena, buf);
}

/*
 * parse_time() from src/common/parse_time.c, as a check: does Slurm read
 * a date or time from s?  Forms: today, tomorrow, midnight, noon, fika,
 * teatime, now[{+|-}N[units]], HH:MM[:SS] [AM|PM], MMDD[YY], MM/DD[/YY],
 * MM.DD[.YY], YYYY-MM-DD[THH:MM[:SS]], uts<epoch>.
 */
static char at(const char *s, size_t len, size_t i)
{
	return i < len ? s[i] : '\0';
}

static bool pt_delta(const char *s, size_t len, size_t *pos)
{
	static const char *const units[] = {
	    "seconds", "second", "minutes", "minute", "hours",
	    "hour",    "days",	 "day",	    "weeks",  "week"};
	size_t off;
	int ndig = 0;

	for (off = *pos + 1; at(s, len, off) != '\0' && s[off] != '\n'; off++) {
		size_t u;

		if (is_space(s[off]))
			continue;
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (iprefix(s + off, units[u]))
				break;
		if (u < sizeof(units) / sizeof(units[0])) {
			off += strlen(units[u]);
			break;
		}
		if (is_digit(s[off])) {
			if (++ndig > 12) /* Slurm's long would overflow */
				return false;
			continue;
		}
		return false;
	}
	if (!ndig)
		return false;
	*pos = off - 1;
	return true;
}

static bool pt_time(const char *s, size_t len, size_t *pos)
{
	size_t off = *pos;
	int hr, min, sec;

	if (!is_digit(at(s, len, off)))
		return false;
	hr = s[off++] - '0';
	if (at(s, len, off) != ':') {
		if (!is_digit(at(s, len, off)))
			return false;
		hr = hr * 10 + s[off++] - '0';
	}
	if (hr > 23 || at(s, len, off) != ':')
		return false;
	off++;
	if (!is_digit(at(s, len, off)) || !is_digit(at(s, len, off + 1)))
		return false;
	min = (s[off] - '0') * 10 + s[off + 1] - '0';
	off += 2;
	if (min > 59)
		return false;
	if (at(s, len, off) == ':') {
		off++;
		if (!is_digit(at(s, len, off)) ||
		    !is_digit(at(s, len, off + 1)))
			return false;
		sec = (s[off] - '0') * 10 + s[off + 1] - '0';
		off += 2;
		if (sec > 59)
			return false;
	}
	while (is_space(at(s, len, off)))
		off++;
	if (off < len && iprefix(s + off, "pm")) {
		hr += 12;
		if (hr > 24)
			return false;
		off += 2;
	} else if (off < len && iprefix(s + off, "am")) {
		if (hr > 12)
			return false;
		off += 2;
	}
	*pos = off - 1;
	return true;
}

static bool pt_date(const char *s, size_t len, size_t *pos)
{
	size_t off = *pos;
	int mon, day;

	if (len >= off + 7 && at(s, len, off + 4) == '-' &&
	    at(s, len, off + 7) == '-') {
		for (int i = 0; i < 4; i++)
			if (!is_digit(s[off++]))
				return false;
		off++;
		mon = at(s, len, off) - '0';
		off++;
		if (is_digit(at(s, len, off)))
			mon = mon * 10 + s[off++] - '0';
		if (mon < 1 || mon > 12)
			return false;
		off++;
		if (!is_digit(at(s, len, off)))
			return false;
		day = s[off++] - '0';
		if (is_digit(at(s, len, off)))
			day = day * 10 + s[off++] - '0';
		if (day < 1 || day > 31)
			return false;
		*pos = off - 1;
		return true;
	}
	mon = at(s, len, off) - '0';
	off++;
	if (is_digit(at(s, len, off)))
		mon = mon * 10 + s[off++] - '0';
	if (mon < 1 || mon > 12)
		return false;
	if (at(s, len, off) == '.' || at(s, len, off) == '/')
		off++;
	if (!is_digit(at(s, len, off)))
		return false;
	day = s[off++] - '0';
	if (is_digit(at(s, len, off)))
		day = day * 10 + s[off++] - '0';
	if (day < 1 || day > 31)
		return false;
	if (at(s, len, off) == '.' || at(s, len, off) == '/')
		off++;
	if (is_digit(at(s, len, off))) {
		off++;
		if (!is_digit(at(s, len, off)))
			return false;
		off++;
	}
	*pos = off - 1;
	return true;
}

static bool slurm_date_ok(const char *s)
{
	size_t len = strlen(s), pos;
	bool have = false;

	if (iprefix(s, "uts")) {
		const char *end;
		long n;
		bool ovf = c_strtol(s + 3, &n, &end);

		return !ovf && n >= 1000000 && end != s + 3 && *end == '\0';
	}
	for (pos = 0; pos < len && s[pos] != '\n'; pos++) {
		char ch = s[pos];

		if (ch == ' ' || ch == '\t' || ch == '-' || ch == 'T')
			continue;
		if (iprefix(s + pos, "today")) {
			have = true;
			pos += 4;
		} else if (iprefix(s + pos, "tomorrow") ||
			   iprefix(s + pos, "midnight")) {
			have = true;
			pos += 7;
		} else if (iprefix(s + pos, "noon") ||
			   iprefix(s + pos, "fika")) {
			have = true;
			pos += 3;
		} else if (iprefix(s + pos, "teatime")) {
			have = true;
			pos += 6;
		} else if (iprefix(s + pos, "now")) {
			size_t i;

			for (i = pos + 3;; i++) {
				char x = at(s, len, i);

				if (x == '+' || x == '-') {
					/* Slurm adds the absolute index */
					pos += i;
					if (pos >= len ||
					    !pt_delta(s, len, &pos))
						return false;
					break;
				}
				if (x == ' ' || x == '\t')
					continue;
				if (x == '\0' || x == '\n') {
					pos += i - 1;
					break;
				}
				return false;
			}
			have = true;
		} else if (!is_digit(ch)) {
			return false;
		} else if (at(s, len, pos + 1) == ':' ||
			   (pos + 1 < len && at(s, len, pos + 2) == ':')) {
			if (!pt_time(s, len, &pos))
				return false;
			have = true;
		} else {
			if (!pt_date(s, len, &pos))
				return false;
			have = true;
		}
	}
	return have;
}

/* _is_valid_number() of gres.c: a count with an optional unit suffix. */
static int gres_count(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		uint64_t mult;
	} sfx[] = {
	    {"", 1},
	    {"k", 1024},
	    {"kib", 1024},
	    {"kb", 1000},
	    {"m", 1024 * 1024},
	    {"mib", 1024 * 1024},
	    {"mb", 1000 * 1000},
	    {"g", 1024ull * 1024 * 1024},
	    {"gib", 1024ull * 1024 * 1024},
	    {"gb", 1000ull * 1000 * 1000},
	    {"t", 1024ull * 1024 * 1024 * 1024},
	    {"tib", 1024ull * 1024 * 1024 * 1024},
	    {"tb", 1000ull * 1000 * 1000 * 1000},
	    {"p", 1024ull * 1024 * 1024 * 1024 * 1024},
	    {"pib", 1024ull * 1024 * 1024 * 1024 * 1024},
	    {"pb", 1000ull * 1000 * 1000 * 1000 * 1000},
	};
	const char *p = s;
	uint64_t v = 0;
	bool ovf = false;

	while (is_space(*p))
		p++;
	if (*p == '+')
		p++;
	for (; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			ovf = true;
		else
			v = v * 10 + d;
	}
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (!ieq(p, sfx[i].sfx))
			continue;
		if (ovf || (v && sfx[i].mult > UINT64_MAX / v))
			return HB_ERANGE;
		*out = v * sfx[i].mult;
		return 0;
	}
	return HB_EINVAL;
}

/* GPUs asked for by a --gres or --gpus* value. */
struct gpu_req {
	uint64_t count;
	const char *type; /* NULL: untyped, or several types */
	bool multi_type;
	bool typed, untyped; /* items with and without a type */
	const char *other;   /* non-GPU GRES, comma separated, or NULL */
};

/*
 * One item "name[:type][:count]" as _get_next_gres() reads it.  Returns 0
 * and sets the type and count, or an error code.
 */
static int gres_item(struct ctx *c, char *item, char **type, uint64_t *count)
{
	char *sep = strchr(item, ':'), *sep2 = NULL;
	int rc;

	*type = NULL;
	*count = 1;
	if (sep) {
		*sep++ = '\0';
		sep2 = strchr(sep, ':');
		if (sep2)
			*sep2++ = '\0';
	}
	if (sep2) {
		if (!*sep || !*sep2)
			return HB_EINVAL;
		*type = sep;
		return gres_count(sep2, count);
	}
	if (sep) {
		if (!*sep)
			return HB_EINVAL;
		rc = gres_count(sep, count);
		if (rc == HB_EINVAL) {
			*type = sep;
			*count = 1;
			rc = 0;
		}
		return rc;
	}
	(void)c;
	return 0;
}

/* Parse a GRES list (gres: "gpu:a100:2,license:1") or a --gpus* value
 * (gpu_only: "[type:]count,..."). */
static int parse_gpus(struct ctx *c, const char *opt, const char *v,
		      bool gpu_only, struct gpu_req *g)
{
	char *copy = hb_arena_strdup(&c->spec->arena, v), *p, *item;
	struct hb_buf other;
	int rc = 0;

	memset(g, 0, sizeof(*g));
	if (!copy)
		return nomem(c);
	if (!gpu_only && ieq(v, "none"))
		return 0;
	hb_buf_init(&other, 0);
	for (p = copy; p && *p; p = item) {
		char *comma = strchr(p, ','), *type, *name = p;
		const char *orig;
		uint64_t n;

		item = comma ? comma + 1 : NULL;
		if (comma)
			*comma = '\0';
		if (!*p)
			continue;
		orig = hb_arena_strdup(&c->spec->arena, p);
		if (!orig) {
			rc = nomem(c);
			break;
		}
		if (gpu_only) {
			char *full =
			    hb_arena_printf(&c->spec->arena, "gpu:%s", p);

			if (!full) {
				rc = nomem(c);
				break;
			}
			name = full;
		} else if (strncmp(name, "gres:", 5) == 0) {
			name += 5;
		}
		rc = gres_item(c, name, &type, &n);
		if (rc) {
			rc = fail(c, rc, "invalid --%s specification '%s'", opt,
				  shown(c, v));
			break;
		}
		if (n == 0)
			continue;
		if (strcmp(name, "gpu") != 0) {
			if (hb_buf_printf(&other, "%s%s", other.len ? "," : "",
					  orig)) {
				rc = nomem(c);
				break;
			}
			continue;
		}
		if (n > UINT32_MAX || g->count + n > UINT32_MAX) {
			rc = fail(c, HB_ERANGE,
				  "--%s: GPU count in '%s' is "
				  "too large",
				  opt, shown(c, v));
			break;
		}
		if (type) {
			/* a GRES type is a plain name, as gres.conf has it */
			for (const char *t = type; *t; t++) {
				unsigned char ch = (unsigned char)*t;

				if (ch <= ' ' || ch == 0x7f || ch == '=' ||
				    ch == '"' || ch == '\'' || ch == '\\') {
					rc = fail(c, HB_EINVAL,
						  "--%s: invalid GPU type in "
						  "'%s'",
						  opt, shown(c, v));
					break;
				}
			}
			if (rc)
				break;
		}
		if (g->count && (!type || !g->type || strcmp(type, g->type)))
			g->multi_type = true;
		if (type)
			g->typed = true;
		else
			g->untyped = true;
		g->type = type ? hb_arena_strdup(&c->spec->arena, type) : NULL;
		if (type && !g->type) {
			rc = nomem(c);
			break;
		}
		g->count += n;
	}
	if (!rc && other.len) {
		g->other = hb_arena_strdup(&c->spec->arena, other.data);
		if (!g->other)
			rc = nomem(c);
	}
	if (g->multi_type)
		g->type = NULL;
	hb_buf_free(&other);
	return rc;
}

/* _valid_array_inx() / _parse_array_tok() of slurmctld, into a bitmap. */
static int parse_array(const char *v, uint8_t *bits, uint32_t *limit, bool *any)
{
	const char *p = v, *pct;
	long first, last, step;
	const char *end;

	*any = false;
	*limit = 0;
	while (*p) {
		const char *tok_end = strchr(p, ',');
		size_t n = tok_end ? (size_t)(tok_end - p) : strlen(p);
		char tok[64];
		const char *t = tok;

		if (n == 0) {
			p++;
			continue;
		}
		/* longer tokens cannot be valid: digits stay under 64 */
		if (n >= sizeof(tok))
			return HB_EINVAL;
		memcpy(tok, p, n);
		tok[n] = '\0';
		p += n;
		if (*p == ',')
			p++;

		step = 1;
		if (*t == '[')
			t++;
		c_strtol(t, &first, &end);
		if (*end == ']')
			end++;
		if (first < 0)
			return HB_EINVAL;
		if (*end == '-') {
			c_strtol(end + 1, &last, &end);
			if (*end == ']')
				end++;
			if (*end == ':') {
				c_strtol(end + 1, &step, &end);
				if (*end == ']')
					end++;
				if (*end != '\0' && *end != '%')
					return HB_EINVAL;
				if (step <= 0 || step >= ARRAY_MAX_SIZE)
					return HB_EINVAL;
			} else if (*end != '\0' && *end != '%') {
				return HB_EINVAL;
			}
			if (last < first)
				return HB_EINVAL;
		} else if (*end != '\0' && *end != '%') {
			return HB_EINVAL;
		} else {
			last = first;
		}
		if (last >= ARRAY_MAX_SIZE)
			return HB_ERANGE;
		for (long i = first; i <= last; i += step)
			bits[i / 8] |= (uint8_t)(1u << (i % 8));
		*any = true;
	}
	pct = strchr(v, '%');
	if (pct) {
		long lim;
		bool ovf = c_strtol(pct + 1, &lim, &end);

		if (ovf || lim > INT_MAX)
			return HB_ERANGE;
		if (lim > 0)
			*limit = (uint32_t)lim;
	}
	return 0;
}

static bool bit(const uint8_t *bits, uint32_t i)
{
	return i < ARRAY_MAX_SIZE && (bits[i / 8] >> (i % 8)) & 1;
}

/*
 * The indices as sorted, disjoint ranges: runs of consecutive indices,
 * and runs of three or more with a common step.
 */
static int array_ranges(struct ctx *c, const uint8_t *bits)
{
	uint32_t idx[ARRAY_MAX_SIZE], n = 0, nr = 0, i = 0;
	struct hb_range *r;

	for (uint32_t byte = 0; byte < (ARRAY_MAX_SIZE + 7) / 8; byte++) {
		if (!bits[byte])
			continue;
		for (uint32_t k = byte * 8; k < byte * 8 + 8; k++)
			if (bit(bits, k))
				idx[n++] = k;
	}
	r = hb_arena_alloc(&c->spec->arena, (size_t)(n ? n : 1) * sizeof(*r));
	if (!r)
		return nomem(c);
	while (i < n) {
		uint32_t j = i + 1, step = 1;

		if (j < n) {
			step = idx[j] - idx[i];
			while (j + 1 < n && idx[j + 1] - idx[j] == step)
				j++;
			/* a stride needs three members to be worth it */
			if (step != 1 && j - i < 2)
				j = i;
		} else {
			j = i;
		}
		if (j == i)
			step = 1;
		r[nr].start = idx[i];
		r[nr].end = idx[j];
		r[nr].step = step;
		nr++;
		i = j + 1;
	}
	c->spec->array_ranges = r;
	c->spec->narray_ranges = nr;
	return 0;
}

/* _parse_dist_base() / _parse_plane_dist() of proc_args.c. */
static bool dist_ok(const char *v)
{
	static const char *const bases[] = {"cyclic",
					    "block",
					    "arbitrary",
					    "hostfile",
					    "cyclic:cyclic",
					    "cyclic:block",
					    "block:block",
					    "block:cyclic",
					    "block:fcyclic",
					    "cyclic:fcyclic",
					    "cyclic:cyclic:cyclic",
					    "cyclic:cyclic:block",
					    "cyclic:cyclic:fcyclic",
					    "cyclic:block:cyclic",
					    "cyclic:block:block",
					    "cyclic:block:fcyclic",
					    "cyclic:fcyclic:cyclic",
					    "cyclic:fcyclic:block",
					    "cyclic:fcyclic:fcyclic",
					    "block:cyclic:cyclic",
					    "block:cyclic:block",
					    "block:cyclic:fcyclic",
					    "block:block:cyclic",
					    "block:block:block",
					    "block:block:fcyclic",
					    "block:fcyclic:cyclic",
					    "block:fcyclic:block",
					    "block:fcyclic:fcyclic"};
	char base[128], out[128];
	const char *comma, *flag = NULL, *sock = NULL;
	size_t n, o = 0;
	int lvl = 0;
	bool known = false;

	if (iprefix(v, "plane")) {
		const char *eq = strchr(v, '='), *end;
		long sz;
		bool ovf;

		if (!eq)
			return false; /* no SLURM_DIST_PLANESIZE here */
		ovf = c_strtol(eq + 1, &sz, &end);
		return !ovf && end != eq + 1 && *end == '\0' && sz > 0 &&
		       sz <= INT_MAX;
	}
	if (!*v || *v == ',')
		return false;
	comma = strchr(v, ',');
	n = comma ? (size_t)(comma - v) : strlen(v);
	if (comma)
		flag = comma + 1;
	if (n >= sizeof(base))
		return false;
	memcpy(base, v, n);
	base[n] = '\0';
	out[0] = '\0';
	for (char *tok = base, *next; tok; tok = next) {
		const char *w;

		next = strchr(tok, ':');
		if (next)
			*next++ = '\0';
		if (!*tok)
			continue; /* strtok_r skips empty fields */
		if (lvl > 2)
			return false;
		if (strcmp(tok, "*") == 0)
			w = lvl == 0   ? "block"
			    : lvl == 1 ? "cyclic"
				       : (sock ? sock : "");
		else
			w = tok;
		if (lvl == 1)
			sock = w;
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s",
				      lvl ? ":" : "", w);
		if (o >= sizeof(out))
			return false;
		lvl++;
	}
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (ieq(out, bases[i]))
			known = true;
	if (!known && !ieq(out, "pack") && !ieq(out, "nopack"))
		return false;
	if (flag && *flag && !ieq(flag, "pack") && !ieq(flag, "nopack"))
		return false;
	return true;
}

/* verify_hint() */
static bool hint_ok(const char *v)
{
	const char *p = v;

	while (1) {
		const char *e = p;
		char tok[32];
		size_t n;

		/* a ',' not followed by a digit separates */
		while (*e && !(*e == ';' || (*e == ',' && !is_digit(e[1]))))
			e++;
		n = (size_t)(e - p);
		if (n >= sizeof(tok))
			return false;
		memcpy(tok, p, n);
		tok[n] = '\0';
		if (!ieq(tok, "compute_bound") && !ieq(tok, "memory_bound") &&
		    !ieq(tok, "multithread") && !ieq(tok, "nomultithread"))
			return false;
		if (!*e)
			return true;
		p = e + 1;
	}
}

/* validate_acctg_freq(): "N" or "type=N", comma separated. */
static bool acctg_freq_ok(const char *v)
{
	static const char *const types[] = {
	    "task=", "energy=", "network=", "filesystem="};
	const char *p = v;

	while (*p) {
		const char *e = strchr(p, ','), *num = p, *end;
		size_t n = e ? (size_t)(e - p) : strlen(p);
		long x;

		if (n) {
			for (size_t i = 0; i < 4; i++)
				if (iprefix(p, types[i]))
					num = p + strlen(types[i]);
			if (c_strtol(num, &x, &end) || end == num ||
			    end != p + n || x < 0)
				return false;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return true;
}

/* parse_rlimits(): ALL, NONE or resource limit names. */
static bool rlimits_ok(const char *v)
{
	static const char *const names[] = {
	    "ALL",   "NONE",	"AS",	  "CORE",  "CPU", "DATA",
	    "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK"};
	const char *p = v;

	while (1) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		bool ok = false;

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i]) == n && iprefix(p, names[i]))
				ok = true;
		if (!ok)
			return false;
		if (!e)
			return true;
		p = e + 1;
	}
}

/* get_resource_arg_range(): "", "*", N or N-M (k/m suffixes); the minimum,
 * or -1 for "any". */
static bool resource_range(const char *v, long *min)
{
	const char *end;
	long n;

	if (*v == '\0' || *v == '*') {
		*min = -1;
		return true;
	}
	if (c_strtol(v, &n, &end))
		return false;
	if (lower(*end) == 'k' || lower(*end) == 'm') {
		long m = lower(*end) == 'k' ? 1024 : 1048576;

		if (n < 0 || n > INT_MAX / m)
			return false;
		n *= m;
		end++;
	}
	if ((*end != '\0' && *end != '-') || n < 0 || n > INT_MAX)
		return false;
	*min = n;
	if (*end == '\0')
		return true;
	{
		const char *p = end + 1;
		long hi;

		if (c_strtol(p, &hi, &end))
			return false;
		if (lower(*end) == 'k' || lower(*end) == 'm') {
			long m = lower(*end) == 'k' ? 1024 : 1048576;

			if (hi < 0 || hi > INT_MAX / m)
				return false;
			hi *= m;
			end++;
		}
		if ((*end != '\0' && *end != '-') || hi <= 0 || hi > INT_MAX)
			return false;
		if (*min == 1 && hi == INT_MAX)
			*min = -1;
	}
	return true;
}

/* verify_socket_core_thread_count(): -B S[:C[:T]]. */
static bool extra_node_info(const char *v, long out[3])
{
	char buf[3][48];
	const char *p = v;
	int j;

	memset(buf, 0, sizeof(buf));
	for (j = 0; j < 3; j++) {
		for (int i = 0; i < 47 && *p && *p != ':'; i++)
			buf[j][i] = *p++;
		while (*p && *p != ':')
			p++; /* Slurm keeps 47 bytes of each */
		if (!*p)
			break;
		p++;
	}
	for (j = 0; j < 3; j++)
		if (!resource_range(buf[j], &out[j]))
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Applying one option                                                 */
/* ------------------------------------------------------------------ */

static int bad_value(struct ctx *c, int id, const char *v)
{
	return fail(c, HB_EINVAL, "invalid --%s specification '%s'",
		    opt_name(id), shown(c, v));
}

static int apply_time(struct ctx *c, int id, const char *v)
{
	uint64_t s;
	int rc = hb_parse_slurm_time(v, &s);

	if (rc == HB_ERANGE)
		return fail(c, rc, "--%s: time '%s' is too large", opt_name(id),
			    shown(c, v));
	if (rc)
		return bad_value(c, id, v);
	if (s == 0) /* sbatch: a zero limit means no limit */
		s = HB_TIME_UNLIMITED;
	store(c, id, v);
	c->slot[id].a = s;
	return 0;
}

static int apply_size(struct ctx *c, int id, const char *v)
{
	uint64_t mb;
	int rc = hb_parse_slurm_size(v, &mb);

	if (rc == HB_ERANGE)
		return fail(c, rc, "--%s: size '%s' is too large", opt_name(id),
			    shown(c, v));
	if (rc)
		return bad_value(c, id, v);
	store(c, id, v);
	c->slot[id].a = mb;
	return 0;
}

static int apply_int(struct ctx *c, int id, const char *v, bool positive)
{
	uint64_t n = 0;
	int rc = slurm_int(c, opt_name(id), v, positive, &n);

	if (rc)
		return rc;
	store(c, id, v);
	c->slot[group(id)].a = n;
	return 0;
}

static int apply_gpus(struct ctx *c, int id, const char *v)
{
	struct gpu_req g;
	int rc;

	if (id == O_GRES && (ieq(v, "help") || ieq(v, "list")))
		return fail(c, HB_EINVAL,
			    "--gres=%s lists GRES and submits no "
			    "job",
			    shown(c, v));
	rc = parse_gpus(c, opt_name(id), v, id != O_GRES, &g);
	if (rc)
		return rc;
	store(c, id, v);
	c->slot[id].a = g.count;
	c->slot[id].b = (uint64_t)g.multi_type | (uint64_t)g.typed << 1 |
			(uint64_t)g.untyped << 2;
	c->slot[id].t = g.type;
	if (g.other) {
		const char *n = hb_arena_printf(
		    &c->spec->arena, "non-GPU GRES dropped: %s", g.other);
		if (!n)
			return nomem(c);
		note(c, c->cur, n);
	}
	return 0;
}

static int apply_hb_data(struct ctx *c, const char *v)
{
	if (!*v)
		return bad_value(c, O_HB_DATA, v);
	if (strncmp(v, "s3://", 5) == 0 && (v[5] == '\0' || v[5] == '/'))
		return fail(c, HB_EINVAL,
			    "--hpcbridge-data: '%s' names no "
			    "bucket",
			    shown(c, v));
	store(c, O_HB_DATA, v);
	if (hb_jobspec_add_data(c->spec, v))
		return nomem(c);
	set_field(c, HB_F_DATA, c->cur);
	return 0;
}

/* Apply option id with argument arg (NULL: none) from the current source. */
static int apply(struct ctx *c, int id, const char *arg)
{
	const char *v = arg ? arg : "";
	long n;
	const char *end;
	uint64_t x = 0, y = 0;
	int rc;

	switch (id) {
	/* strings that map to a field, or that need no checking */
	case O_ACCOUNT:
	case O_BATCH:
	case O_BB:
	case O_BBF:
	case O_CLUSTER_CONSTRAINT:
	case O_CLUSTER:
	case O_CLUSTERS:
	case O_COMMENT:
	case O_CONTAINER:
	case O_CONTEXT:
	case O_CONSTRAINT:
	case O_DEPENDENCY:
	case O_EXCLUDE:
	case O_EXPORT:
	case O_EXPORT_FILE:
	case O_GPU_BIND:
	case O_GPU_FREQ:
	case O_JOB_NAME:
	case O_LICENSES:
	case O_MAIL_USER:
	case O_MCS_LABEL:
	case O_MEM_BIND:
	case O_NETWORK:
	case O_NODEFILE:
	case O_NODELIST:
	case O_PARTITION:
	case O_POWER:
	case O_PREFER:
	case O_QOS:
	case O_RESERVATION:
	case O_WCKEY:
	case O_CHDIR:
	case O_ERROR:
	case O_INPUT:
	case O_OUTPUT:
	case O_GID:
	case O_UID:
	case O_CPU_FREQ:
		if ((id == O_UID || id == O_GID) && !*v)
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_CONTIGUOUS:
	case O_HOLD:
	case O_OVERCOMMIT:
	case O_PARSABLE:
	case O_REBOOT:
	case O_SPREAD_JOB:
	case O_TEST_ONLY:
	case O_USE_MIN_NODES:
	case O_WAIT:
		store(c, id, NULL);
		return 0;
	case O_IGNORE_PBS:
		store(c, id, NULL);
		if (c->origin.kind == HB_ORIGIN_FILE)
			c->ignore_pbs = true;
		return 0;
	case O_VERBOSE:
	case O_QUIET:
		store(c, id, arg);
		return 0;
	case O_ARRAY: {
		uint8_t bits[(ARRAY_MAX_SIZE + 7) / 8] = {0};
		uint32_t lim;
		bool any;

		rc = parse_array(v, bits, &lim, &any);
		if (rc == HB_ERANGE)
			return fail(c, rc,
				    "invalid --array specification "
				    "'%s': indices run from 0 to %d",
				    shown(c, v), ARRAY_MAX_SIZE - 1);
		if (rc)
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	}
	case O_BEGIN:
	case O_DEADLINE:
	case O_HB_DEADLINE:
		if (!slurm_date_ok(v))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_CORE_SPEC:
		return apply_int(c, id, v, false);
	case O_CPUS_PER_GPU:
	case O_CPUS_PER_TASK:
	case O_MINCPUS:
	case O_NTASKS:
	case O_NTASKS_PER_CORE:
	case O_NTASKS_PER_GPU:
	case O_NTASKS_PER_NODE:
	case O_NTASKS_PER_SOCKET:
	case O_NTASKS_PER_TRES:
	case O_THREAD_SPEC:
	case O_SWITCH_REQ:
		return apply_int(c, id, v, true);
	case O_ACCTG_FREQ:
		if (!acctg_freq_ok(v))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_DELAY_BOOT:
		if (hb_parse_slurm_time(v, &x))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_DISTRIBUTION:
		if (!dist_ok(v))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_EXCLUSIVE:
		if (!arg || ieq(arg, "exclusive"))
			x = 0;
		else if (ieq(arg, "oversubscribe"))
			x = 1;
		else if (ieq(arg, "user"))
			x = 2;
		else if (ieq(arg, "mcs"))
			x = 3;
		else
			return bad_value(c, id, v);
		store(c, id, arg);
		c->slot[O_EXCLUSIVE].a = x;
		return 0;
	case O_OVERSUBSCRIBE:
		store(c, id, NULL);
		c->slot[O_EXCLUSIVE].a = 1;
		return 0;
	case O_EXTRA_NODE_INFO: {
		long t[3];

		if (!extra_node_info(v, t))
			return bad_value(c, id, v);
		store(c, id, arg);
		memcpy(c->topo, t, sizeof(t));
		c->topo_dir = c->cur;
		c->extra_set = true;
		return 0;
	}
	case O_SOCKETS_PER_NODE:
	case O_CORES_PER_SOCKET:
	case O_THREADS_PER_CORE:
		rc = apply_int(c, id, v, true);
		if (rc)
			return rc;
		c->topo[id == O_SOCKETS_PER_NODE   ? 0
			: id == O_CORES_PER_SOCKET ? 1
						   : 2] = (long)c->slot[id].a;
		c->topo_dir = c->cur;
		return 0;
	case O_GET_USER_ENV:
		if (arg) {
			c_strtol(arg, &n, &end);
			if (*end && lower(*end) != 's' && lower(*end) != 'l')
				return bad_value(c, id, v);
		}
		store(c, id, arg);
		return 0;
	case O_GPUS:
	case O_GPUS_PER_NODE:
	case O_GPUS_PER_SOCKET:
	case O_GPUS_PER_TASK:
	case O_GRES:
		return apply_gpus(c, id, v);
	case O_GRES_FLAGS:
		if (!ieq(v, "disable-binding") && !ieq(v, "enforce-binding"))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_HINT:
		if (!hint_ok(v))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_KILL_ON_INVALID_DEP:
		if (!ieq(v, "yes") && !ieq(v, "no"))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_MAIL_TYPE:
		n = mail_type(v);
		if (n < 0)
			return bad_value(c, id, v);
		store(c, id, arg);
		c->mail_bits |= (uint32_t)n;
		return 0;
	case O_MEM:
	case O_MEM_PER_CPU:
	case O_MEM_PER_GPU:
	case O_TMP:
		return apply_size(c, id, v);
	case O_NICE:
		if (arg) {
			bool ovf = c_strtol(arg, &n, &end);

			if (ovf || n > 2147483645L || n < -2147483645L)
				return fail(c, HB_ERANGE,
					    "invalid --nice value '%s': out of "
					    "range (+/- 2147483645)",
					    shown(c, v));
		}
		store(c, id, arg);
		return 0;
	case O_NO_KILL:
		if (arg && !ieq(arg, "set") && !ieq(arg, "off") &&
		    !ieq(arg, "no"))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_NODES:
		rc = node_count(c, v, &x, &y);
		if (rc)
			return rc;
		if (x == 0)
			return fail(c, HB_EUNSUP,
				    "--nodes '%s': a job with no "
				    "nodes is not supported",
				    shown(c, v));
		store(c, id, arg);
		c->slot[id].a = x;
		c->slot[id].b = y;
		return 0;
	case O_OPEN_MODE:
		if (lower(*v) != 'a' && lower(*v) != 't')
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_PRIORITY:
		if (!ieq(v, "TOP")) {
			bool ovf = c_strtol(v, &n, &end);

			if (n < 0)
				return fail(c, HB_EINVAL,
					    "--priority '%s': priority must be "
					    ">= 0",
					    shown(c, v));
			if (ovf || n >= 0xfffffffeL)
				return fail(c, HB_ERANGE,
					    "--priority '%s': priority must be "
					    "< 4294967294",
					    shown(c, v));
		}
		store(c, id, arg);
		return 0;
	case O_PROFILE:
		if (!icontains(v, "none") && !icontains(v, "all") &&
		    !icontains(v, "energy") && !icontains(v, "task") &&
		    !icontains(v, "lustre") && !icontains(v, "network"))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_REQUEUE:
		store(c, id, NULL);
		c->slot[O_REQUEUE].a = 1;
		return 0;
	case O_NO_REQUEUE:
		store(c, id, NULL);
		c->slot[O_REQUEUE].a = 0;
		return 0;
	case O_SIGNAL:
		if (!signal_ok(c, v))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_SWITCHES: {
		const char *atp = strchr(v, '@');
		char *cnt = hb_arena_strndup(
		    &c->spec->arena, v, atp ? (size_t)(atp - v) : strlen(v));

		if (!cnt)
			return nomem(c);
		rc = slurm_int(c, "switches", cnt, true, &x);
		if (rc)
			return rc;
		store(c, id, arg);
		return 0;
	}
	case O_SWITCH_WAIT:
		store(c, id, arg);
		return 0;
	case O_TIME:
	case O_TIME_MIN:
		return apply_time(c, id, v);
	case O_WAIT_ALL_NODES:
		rc = slurm_int(c, "wait-all-nodes", v, false, &x);
		if (rc)
			return rc;
		if ((x & 0xffff) > 1)
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_PROPAGATE:
		if (arg && !rlimits_ok(arg))
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_HB_TARGET:
		if (!ieq(v, "auto") && !ieq(v, "slurm") &&
		    !ieq(v, "kubernetes"))
			return fail(c, HB_EINVAL,
				    "invalid --hpcbridge-target "
				    "'%s': want auto, slurm or kubernetes",
				    shown(c, v));
		store(c, id, arg);
		return 0;
	case O_HB_CHECKPOINT:
		if (!*v)
			return bad_value(c, id, v);
		store(c, id, arg);
		return 0;
	case O_HB_DATA:
		return apply_hb_data(c, v);
	}
	return fail(c, HB_EINVAL, "unhandled option --%s", opt_name(id));
}

/* Reset option id (an environment variable set a flag to "no"). */
static void reset(struct ctx *c, int id)
{
	struct slot *s = &c->slot[group(id)];

	s->set = false;
	s->by_env = false;
	s->dir = NO_DIR;
	s->reset_by = c->cur;
	s->val = NULL;
	if (id == O_IGNORE_PBS)
		c->ignore_pbs = false;
}

/*
 * An option as read from the script or the command line: early-pass
 * options are skipped as sbatch's second pass skips them, the others
 * applied.  text/len: the directive as written.
 */
static int option(struct ctx *c, int id, const char *arg, const char *text,
		  size_t len)
{
	int rc;
	const char *copy = arg;

	if (arg && c->origin.kind != HB_ORIGIN_FILE) {
		copy = hb_jobspec_strdup(c->spec, arg);
		if (!copy)
			return nomem(c);
	}
	if (early_pass(id)) {
		rc = add_dir(c, id, DI_NOVALUE, text, len, HB_DIR_SBATCH);
		if (rc)
			return rc;
		note(c, c->cur, unmapped_note[id]);
		if (c->origin.kind == HB_ORIGIN_CLI && id != O_VERBOSE &&
		    id != O_QUIET)
			return fail(c, HB_EINVAL,
				    "--%s makes sbatch %s, not "
				    "submit this script",
				    opt_name(id),
				    id == O_WRAP ? "submit its own command"
						 : "print and exit");
		return 0;
	}
	rc = add_dir(c, id, 0, text, len, HB_DIR_SBATCH);
	if (rc)
		return rc;
	if (unmapped_note[id])
		note(c, c->cur, unmapped_note[id]);
	return apply(c, id, copy);
}

/* ------------------------------------------------------------------ */
/* getopt_long(), with sbatch's "+" option string                      */
/* ------------------------------------------------------------------ */

struct tok {
	const char *val;
	const char *raw;
	uint32_t rawlen;
	uint32_t line;
};

struct toks {
	struct tok *v;
	size_t n, cap;
};

static int push_tok(struct toks *t, const struct tok *x)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 32;
		struct tok *p = realloc(t->v, cap * sizeof(*p));

		if (!p)
			return HB_ENOMEM;
		t->v = p;
		t->cap = cap;
	}
	t->v[t->n++] = *x;
	return 0;
}

static void set_where(struct ctx *c, const struct tok *t)
{
	c->origin.line = t->line;
	c->where_line = t->line;
}

/* text: raw of t, plus " " and raw of u when the value is separate. */
static int join_text(struct ctx *c, const struct tok *t, const struct tok *u,
		     const char *prefix, size_t plen)
{
	int rc;

	hb_buf_reset(&c->text);
	if (prefix)
		rc = hb_buf_append(&c->text, prefix, plen);
	else
		rc = hb_buf_append(&c->text, t->raw, t->rawlen);
	if (!rc && u) {
		rc = hb_buf_putc(&c->text, ' ');
		if (!rc)
			rc = hb_buf_append(&c->text, u->raw, u->rawlen);
	}
	return rc ? nomem(c) : 0;
}

static int long_option(struct ctx *c, struct toks *ts, size_t *i)
{
	const struct tok *t = &ts->v[*i], *u = NULL;
	const char *name = t->val + 2, *eq = strchr(name, '=');
	size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
	const struct lopt *found = NULL;
	bool ambig = false;
	const char *arg = NULL;
	int rc;

	found = lopt_exact(name, nlen);
	if (!found) {
		for (size_t k = 0; k < NLOPTS; k++) {
			if (lopts[k].len < nlen ||
			    memcmp(lopts[k].name, name, nlen) != 0)
				continue;
			if (!found)
				found = &lopts[k];
			else if (found->id != lopts[k].id ||
				 found->has_arg != lopts[k].has_arg)
				ambig = true;
		}
	}
	set_where(c, t);
	if (ambig) {
		struct hb_buf b;

		hb_buf_init(&b, 0);
		for (size_t k = 0; k < NLOPTS; k++)
			if (strncmp(lopts[k].name, name, nlen) == 0)
				hb_buf_printf(&b, " '--%s'", lopts[k].name);
		rc = fail(c, HB_EINVAL,
			  "option '%s' is ambiguous; possibilities:%s",
			  shown(c, t->val), b.data ? b.data : "");
		hb_buf_free(&b);
		return rc;
	}
	if (!found)
		return fail(c, HB_EINVAL, "unrecognized option '%s'",
			    shown(c, t->val));
	if (eq) {
		if (found->has_arg == NO_ARG)
			return fail(c, HB_EINVAL,
				    "option '--%s' doesn't allow an argument",
				    found->name);
		arg = eq + 1;
	} else if (found->has_arg == REQ_ARG) {
		if (*i + 1 >= ts->n)
			return fail(c, HB_EINVAL,
				    "option '--%s' requires an argument",
				    found->name);
		u = &ts->v[++*i];
		arg = u->val;
	}
	rc = join_text(c, t, u, NULL, 0);
	if (rc)
		return rc;
	rc = option(c, found->id, arg, c->text.data, c->text.len);
	(*i)++;
	return rc;
}

static const struct lopt *short_opt(char ch)
{
	for (size_t k = 0; k < NLOPTS; k++)
		if (lopts[k].shortc && lopts[k].shortc == ch)
			return &lopts[k];
	return NULL;
}

static int short_options(struct ctx *c, struct toks *ts, size_t *i)
{
	const struct tok *t = &ts->v[*i];
	const char *p = t->val + 1;
	size_t ti = *i;
	int rc;

	set_where(c, t);
	while (*p) {
		const struct lopt *o = short_opt(*p);
		const struct tok *u = NULL;
		const char *arg = NULL, *start = p;
		bool whole;

		if (!o)
			return fail(c, HB_EINVAL, "invalid option -- '%c'",
				    (unsigned char)*p < 0x20 ? '?' : *p);
		p++;
		if (o->has_arg == REQ_ARG) {
			if (*p) {
				arg = p;
			} else if (*i + 1 < ts->n) {
				u = &ts->v[++*i];
				arg = u->val;
			} else {
				return fail(c, HB_EINVAL,
					    "option requires an "
					    "argument -- '%c'",
					    o->shortc);
			}
			p += strlen(p);
		} else if (o->has_arg == OPT_ARG && *p) {
			arg = p;
			p += strlen(p);
		}
		whole = start == t->val + 1 && *p == '\0';
		if (whole) {
			rc = join_text(c, t, u, NULL, 0);
		} else {
			char pre[2] = {'-', o->shortc};

			rc = join_text(c, t, u, pre, 2);
			if (!rc && arg && !u)
				rc = hb_buf_puts(&c->text, arg) ? nomem(c) : 0;
		}
		if (rc)
			return rc;
		rc = option(c, o->id, arg, c->text.data, c->text.len);
		if (rc)
			return rc;
		set_where(c, &ts->v[ti]);
	}
	(*i)++;
	return 0;
}

/* Read every option in ts; a non-option argument is an error. */
static int getopt_all(struct ctx *c, struct toks *ts)
{
	size_t i = 0;
	int rc;

	while (i < ts->n) {
		const struct tok *t = &ts->v[i];
		const char *a = t->val;

		if (a[0] != '-' || a[1] == '\0') {
			set_where(c, t);
			if (c->origin.kind == HB_ORIGIN_FILE)
				return fail(c, HB_EINVAL,
					    "invalid directive found in batch "
					    "script: %s",
					    shown(c, a));
			return fail(c, HB_EINVAL,
				    "unexpected argument '%s' (only sbatch "
				    "options are expected)",
				    shown(c, a));
		}
		if (strcmp(a, "--") == 0) {
			if (i + 1 < ts->n) {
				set_where(c, &ts->v[i + 1]);
				return fail(c, HB_EINVAL,
					    "invalid directive found in batch "
					    "script: %s",
					    shown(c, ts->v[i + 1].val));
			}
			return 0;
		}
		rc = a[1] == '-' ? long_option(c, ts, &i)
				 : short_options(c, ts, &i);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The script header                                                   */
/* ------------------------------------------------------------------ */

/* "hetjob"/"packjob" at p, followed by white space or the line's end. */
static bool het_word(const char *p, const char *e)
{
	if (e - p >= 7 && iprefix(p, "packjob") &&
	    (p + 7 == e || is_space(p[7])))
		return true;
	return e - p >= 6 && iprefix(p, "hetjob") &&
	       (p + 6 == e || is_space(p[6]));
}

/*
 * get_argument(): the next argument of a directive line [*pp, e).
 * Returns 1 and fills *t, 0 at the end of the line's arguments, or an
 * error.  scratch holds at least e - *pp bytes.
 */
static int get_argument(struct ctx *c, const char **pp, const char *e,
			char *scratch, struct tok *t)
{
	const char *p = *pp, *start;
	bool esc = false, quoted = false;
	char q = 0;
	size_t n = 0;

	while (p < e && is_space(*p))
		p++;
	if (het_word(p, e))
		return 0; /* sbatch blanks the word, ending the line */
	if (p < e && *p == ':')
		return fail(c, HB_EINVAL, "unexpected ':' in #SBATCH line");
	if (p == e)
		return 0;
	start = p;
	/* The usual argument has no quote, backslash or '#': it is taken as
	 * it is written. */
	{
		static const unsigned char stop[256] = {
			[' '] = 1,  ['\t'] = 1, ['\n'] = 1, ['\v'] = 1,
			['\f'] = 1, ['\r'] = 1, ['\\'] = 1, ['"'] = 1,
			['\''] = 1, ['#'] = 1,
		};
		const char *r = p;

		while (r < e && !stop[(unsigned char)*r])
			r++;
		if (r == e || is_space(*r)) {
			t->val = hb_jobspec_strndup(c->spec, p, (size_t)(r - p));
			if (!t->val)
				return nomem(c);
			*pp = r;
			t->raw = start;
			t->rawlen = (uint32_t)(r - start);
			return 1;
		}
	}
	while (p < e && (quoted || !is_space(*p))) {
		if (esc) {
			esc = false;
		} else if (*p == '\\') {
			esc = true;
			p++;
			continue;
		} else if (quoted) {
			if (*p == q) {
				quoted = false;
				p++;
				continue;
			}
		} else if (*p == '"' || *p == '\'') {
			quoted = true;
			q = *p++;
			continue;
		} else if (*p == '#') {
			break;
		}
		scratch[n++] = *p++;
	}
	if (quoted)
		return fail(c, HB_EINVAL, "unmatched %c in #SBATCH line", q);
	*pp = p;
	if (n == 0)
		return 0; /* an empty argument ends the line, as in sbatch */
	t->val = hb_jobspec_strndup(c->spec, scratch, n);
	if (!t->val)
		return nomem(c);
	t->raw = start;
	t->rawlen = (uint32_t)(p - start);
	return 1;
}

/* A line that stops sbatch's scan: anything but blanks and comments. */
static bool is_command(const char *p, const char *e)
{
	for (; p < e; p++) {
		if (is_space(*p))
			continue;
		return *p != '#';
	}
	return false;
}

static int read_header(struct ctx *c, struct toks *ts)
{
	const char *s = c->spec->script, *end = s + c->spec->script_len;
	char *scratch = malloc((size_t)c->spec->script_len + 1);
	uint32_t line = 0;
	int rc = 0;

	if (!scratch)
		return nomem(c);
	c->origin.kind = HB_ORIGIN_FILE;
	c->where = c->name;
	for (const char *p = s; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q;

		line++;
		c->where_line = line;
		if (le - p >= 7 && memcmp(p, "#SBATCH", 7) == 0) {
			q = p + 7;
		} else if (le - p >= 6 && memcmp(p, "#SLURM", 6) == 0) {
			q = p + 6;
		} else {
			if (is_command(p, le))
				break;
			p = nl ? nl + 1 : end;
			continue;
		}
		while (q < le && is_space(*q))
			q++;
		if (het_word(q, le)) {
			rc = fail(c, HB_EUNSUP,
				  "heterogeneous job components "
				  "(#SBATCH hetjob) are not supported");
			break;
		}
		for (;;) {
			struct tok t;

			rc = get_argument(c, &q, le, scratch, &t);
			if (rc <= 0)
				break;
			t.line = line;
			if (push_tok(ts, &t)) {
				rc = nomem(c);
				break;
			}
		}
		if (rc < 0)
			break;
		rc = 0;
		p = nl ? nl + 1 : end;
	}
	free(scratch);
	return rc;
}

/*
 * sbatch also translates #BSUB or #PBS lines (the first kind it finds,
 * anywhere in the first 100 non-comment lines) unless --ignore-pbs.  We
 * do not: record each such line so that the report shows it.
 */
static int wrapper_lines(struct ctx *c)
{
	static const char *const magic[] = {"#BSUB", "#PBS"};
	const char *s = c->spec->script, *end = s + c->spec->script_len;

	/* the first line is "#!...", so such a line follows a newline */
	if (!strstr(s, "\n#BSUB") && !strstr(s, "\n#PBS"))
		return 0;

	for (int m = 0; m < 2; m++) {
		size_t ml = strlen(magic[m]);
		uint32_t line = 0, noncomment = 0;
		bool found = false;

		for (const char *p = s; p < end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *le = nl ? nl : end;

			line++;
			if ((size_t)(le - p) >= ml &&
			    memcmp(p, magic[m], ml) == 0) {
				int rc;

				found = true;
				c->origin.kind = HB_ORIGIN_FILE;
				c->origin.line = line;
				rc = add_dir(c, 0, DI_NOVALUE, p,
					     (size_t)(le - p),
					     m ? HB_DIR_PBS : HB_DIR_SBATCH);
				if (rc)
					return rc;
				note(c, c->cur,
				     c->ignore_pbs
					 ? "ignored, as sbatch does with "
					   "--ignore-pbs"
					 : "sbatch would translate this "
					   "line itself; not read");
			} else if (*p != '#') {
				if (++noncomment > 100)
					break;
			}
			p = nl ? nl + 1 : end;
		}
		if (found)
			break;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Environment and command line                                        */
/* ------------------------------------------------------------------ */

static const char *env_get(const char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* One variable, as slurm_process_option(set_by_env = true) takes it. */
static int env_option(struct ctx *c, const char *var, int id, const char *val)
{
	uint8_t has = opt_has_arg(id);
	const char *arg = val;
	bool set = true;
	char *text;
	int rc;

	c->origin.kind = HB_ORIGIN_ENV;
	c->origin.line = 0;
	c->where = var;
	c->where_line = 0;
	text = hb_arena_printf(&c->spec->arena, "%s=%s", var, val);
	if (!text)
		return nomem(c);
	if (has == NO_ARG) {
		const char *end;
		long n;

		if (*val == '\0' || ieq(val, "yes"))
			set = true;
		else
			set = !c_strtol(val, &n, &end) && end != val &&
			      *end == '\0' && n != 0;
		arg = id == O_VERBOSE ? val : NULL;
	} else if (has == OPT_ARG && *val == '\0') {
		arg = NULL;
	}
	if (!set) {
		rc = add_dir(c, id, DI_NOVALUE, text, strlen(text),
			     HB_DIR_SBATCH);
		if (rc)
			return rc;
		reset(c, id);
		note(c, c->cur,
		     hb_arena_printf(&c->spec->arena, "resets --%s",
				     opt_name(id)));
		return 0;
	}
	rc = add_dir(c, id, 0, text, strlen(text), HB_DIR_SBATCH);
	if (rc)
		return rc;
	if (unmapped_note[id])
		note(c, c->cur, unmapped_note[id]);
	if (id == O_VERBOSE) {
		uint64_t x;

		rc = slurm_int(c, "verbose", val, false, &x);
		if (rc)
			return rc;
	}
	if (arg) {
		arg = hb_jobspec_strdup(c->spec, arg);
		if (!arg)
			return nomem(c);
	}
	return apply(c, id, arg);
}

static int read_env(struct ctx *c, const char *const *envp)
{
	const char *v;
	int rc;

	if (!envp)
		return 0;
	for (size_t k = 0; k < NENVOPTS; k++) {
		v = env_get(envp, envopts[k].var);
		if (v && (rc = env_option(c, envopts[k].var, envopts[k].id, v)))
			return rc;
	}
	return 0;
}

static int read_argv(struct ctx *c, const struct hb_sbatch_opts *o)
{
	struct toks ts = {0};
	int rc = 0;

	if (!o->argv || o->argc <= 0)
		return 0;
	for (int i = 0; i < o->argc; i++) {
		struct tok t;

		if (!o->argv[i]) {
			c->where = "command line";
			c->where_line = (uint32_t)i + 1;
			rc = fail(c, HB_EINVAL, "argument %d is NULL", i + 1);
			goto out;
		}
		t.val = o->argv[i];
		t.raw = o->argv[i];
		t.rawlen = (uint32_t)strlen(o->argv[i]);
		t.line = (uint32_t)i + 1;
		if (push_tok(&ts, &t)) {
			rc = nomem(c);
			goto out;
		}
	}
	c->origin.kind = HB_ORIGIN_CLI;
	c->where = "command line";
	rc = getopt_all(c, &ts);
out:
	free(ts.v);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Node lists                                                          */
/* ------------------------------------------------------------------ */

struct names {
	char **v;
	size_t n;
	bool over;
};

/* Expand one host expression with bracket groups into names. */
static int expand_host(struct hb_arena *a, const char *h, size_t hl,
		       struct names *out)
{
	const char *lb = memchr(h, '[', hl), *rb;
	char buf[256];

	if (!lb) {
		if (memchr(h, ']', hl) || hl >= sizeof(buf))
			return HB_EINVAL;
		if (out->n >= HOSTLIST_MAX) {
			out->over = true;
			return 0;
		}
		out->v[out->n] = hb_arena_strndup(a, h, hl);
		if (!out->v[out->n])
			return HB_ENOMEM;
		out->n++;
		return 0;
	}
	rb = memchr(lb, ']', hl - (size_t)(lb - h));
	if (!rb || rb == lb + 1)
		return HB_EINVAL;
	for (const char *r = lb + 1; r < rb;) {
		const char *re = memchr(r, ',', (size_t)(rb - r));
		const char *dash, *q;
		unsigned long lo, hi;
		int width;

		if (!re)
			re = rb;
		dash = memchr(r, '-', (size_t)(re - r));
		if (r == re || dash == r || dash == re - 1)
			return HB_EINVAL;
		for (q = r; q < re; q++)
			if (!is_digit(*q) && q != dash)
				return HB_EINVAL;
		width = (int)((dash ? dash : re) - r);
		if (width > 9 || (dash && re - dash - 1 > 9))
			return HB_EINVAL;
		lo = strtoul(r, NULL, 10);
		hi = dash ? strtoul(dash + 1, NULL, 10) : lo;
		if (hi < lo)
			return HB_EINVAL;
		for (unsigned long k = lo; k <= hi; k++) {
			int n = snprintf(
			    buf, sizeof(buf), "%.*s%0*lu%.*s", (int)(lb - h), h,
			    width, k, (int)(hl - (size_t)(rb + 1 - h)), rb + 1);
			int rc;

			if (n < 0 || (size_t)n >= sizeof(buf))
				return HB_EINVAL;
			rc = expand_host(a, buf, (size_t)n, out);
			if (rc)
				return rc;
			if (out->over)
				return 0;
		}
		r = re < rb ? re + 1 : rb;
	}
	return 0;
}

/* Host names in hostlist order: by prefix, then by numeric suffix. */
static int cmp_host(const void *pa, const void *pb)
{
	const char *a = *(char *const *)pa, *b = *(char *const *)pb;
	size_t la = strlen(a), lb = strlen(b), da = la, db = lb;
	int r;

	while (da > 0 && is_digit(a[da - 1]))
		da--;
	while (db > 0 && is_digit(b[db - 1]))
		db--;
	r = strncmp(a, b, da < db ? da : db);
	if (r || da != db)
		return r ? r : (da < db ? -1 : 1);
	/* same prefix: compare the numbers, then their widths */
	{
		const char *x = a + da, *y = b + db;

		while (*x == '0' && x[1])
			x++;
		while (*y == '0' && y[1])
			y++;
		if (strlen(x) != strlen(y))
			return strlen(x) < strlen(y) ? -1 : 1;
		r = strcmp(x, y);
		if (r)
			return r;
	}
	return strcmp(a, b);
}

/*
 * How many distinct nodes a node list names (hostlist_create +
 * hostlist_uniq).  Returns 0 and *count, or HB_EINVAL when the list is a
 * file name or not understood.
 */
static int count_nodes(struct ctx *c, const char *list, uint64_t *count,
		       uint64_t keep, const char **kept)
{
	struct hb_arena a;
	struct names nm = {0};
	const char *p = list;
	int rc = 0;

	if (strchr(list, '/'))
		return HB_EINVAL;
	hb_arena_init(&a, 0);
	nm.v = malloc(HOSTLIST_MAX * sizeof(*nm.v));
	if (!nm.v) {
		hb_arena_free(&a);
		return nomem(c);
	}
	while (*p && !rc && !nm.over) {
		const char *e = p;
		int depth = 0;

		while (*e && (depth || (*e != ',' && !is_space(*e)))) {
			if (*e == '[')
				depth++;
			else if (*e == ']' && depth)
				depth--;
			e++;
		}
		if (e > p)
			rc = expand_host(&a, p, (size_t)(e - p), &nm);
		p = *e ? e + 1 : e;
	}
	if (!rc && (nm.over || nm.n == 0))
		rc = HB_EINVAL;
	if (!rc) {
		size_t u = 0;

		qsort(nm.v, nm.n, sizeof(*nm.v), cmp_host);
		for (size_t i = 0; i < nm.n; i++)
			if (i == 0 || strcmp(nm.v[i], nm.v[i - 1]))
				nm.v[u++] = nm.v[i];
		*count = u;
		/* the first keep nodes, as hostlist_pop() leaves them */
		if (kept && keep && keep < u) {
			struct hb_buf b;

			hb_buf_init(&b, 0);
			for (size_t i = 0; i < keep && !rc; i++)
				if (hb_buf_printf(&b, "%s%s", i ? "," : "",
						  nm.v[i]))
					rc = HB_ENOMEM;
			if (!rc) {
				*kept = hb_jobspec_strdup(c->spec, b.data);
				if (!*kept)
					rc = HB_ENOMEM;
			}
			hb_buf_free(&b);
		}
	}
	free(nm.v);
	hb_arena_free(&a);
	return rc == HB_ENOMEM ? nomem(c) : rc;
}

/* ------------------------------------------------------------------ */
/* Resolution: from option state to jobspec fields                     */
/* ------------------------------------------------------------------ */

static const struct str_map {
	uint8_t id;
	uint8_t field;
	size_t off;
} str_map[] = {
    {O_JOB_NAME, HB_F_NAME, offsetof(struct hb_jobspec, name)},
    {O_UID, HB_F_USER, offsetof(struct hb_jobspec, user)},
    {O_ACCOUNT, HB_F_ACCOUNT, offsetof(struct hb_jobspec, account)},
    {O_PARTITION, HB_F_PARTITION, offsetof(struct hb_jobspec, partition)},
    {O_QOS, HB_F_QOS, offsetof(struct hb_jobspec, qos)},
    {O_COMMENT, HB_F_COMMENT, offsetof(struct hb_jobspec, comment)},
    {O_LICENSES, HB_F_LICENSES, offsetof(struct hb_jobspec, licenses)},
    {O_CONSTRAINT, HB_F_CONSTRAINT, offsetof(struct hb_jobspec, constraint)},
    {O_EXCLUDE, HB_F_EXCLUDE, offsetof(struct hb_jobspec, exclude)},
    {O_BEGIN, HB_F_BEGIN, offsetof(struct hb_jobspec, begin)},
    {O_DEADLINE, HB_F_DEADLINE, offsetof(struct hb_jobspec, deadline)},
    {O_SIGNAL, HB_F_SIGNAL, offsetof(struct hb_jobspec, signal)},
    {O_OUTPUT, HB_F_OUTPUT, offsetof(struct hb_jobspec, output)},
    {O_ERROR, HB_F_ERROR, offsetof(struct hb_jobspec, error)},
    {O_INPUT, HB_F_INPUT, offsetof(struct hb_jobspec, input)},
    {O_CHDIR, HB_F_CHDIR, offsetof(struct hb_jobspec, chdir)},
    {O_DEPENDENCY, HB_F_DEPENDENCY, offsetof(struct hb_jobspec, dependency)},
    {O_MAIL_USER, HB_F_MAIL_USER, offsetof(struct hb_jobspec, mail_user)},
    {O_CONTAINER, HB_F_CONTAINER, offsetof(struct hb_jobspec, container)},
    {O_EXPORT, HB_F_EXPORT, offsetof(struct hb_jobspec, export_spec)},
    {O_HB_CHECKPOINT, HB_F_CHECKPOINT,
     offsetof(struct hb_jobspec, checkpoint_dir)},
};

/* _validate_memory_options() */
static int resolve_mem(struct ctx *c)
{
	static const int ids[3] = {O_MEM, O_MEM_PER_CPU, O_MEM_PER_GPU};
	static const uint8_t kinds[3] = {HB_MEM_PER_NODE, HB_MEM_PER_CPU,
					 HB_MEM_PER_GPU};
	int ncli = 0, nenv = 0, cli = -1, last = -1;

	for (int k = 0; k < 3; k++) {
		const struct slot *s = &c->slot[ids[k]];

		if (!s->set)
			continue;
		if (s->by_env) {
			nenv++;
		} else {
			ncli++;
			cli = k;
		}
		if (last < 0 || s->dir > c->slot[ids[last]].dir)
			last = k;
	}
	if (ncli > 1) {
		const struct hb_directive *d = dir(c, c->slot[ids[last]].dir);

		c->origin = d->origin;
		c->where =
		    d->origin.kind == HB_ORIGIN_FILE ? c->name : "command line";
		c->where_line = d->origin.line;
		return fail(c, HB_ECONFLICT,
			    "--mem, --mem-per-cpu, and "
			    "--mem-per-gpu are mutually exclusive.");
	}
	if (ncli == 1) {
		for (int k = 0; k < 3; k++) {
			struct slot *s = &c->slot[ids[k]];

			if (k == cli || !s->set)
				continue;
			s->set = false;
			s->reset_by = c->slot[ids[cli]].dir;
			s->dir = NO_DIR;
		}
	} else if (nenv > 1) {
		const struct hb_directive *d = dir(c, c->slot[ids[last]].dir);

		c->where = d->text;
		c->where_line = 0;
		return fail(c, HB_ECONFLICT,
			    "SBATCH_MEM_PER_NODE, "
			    "SBATCH_MEM_PER_CPU and SBATCH_MEM_PER_GPU are "
			    "mutually exclusive");
	}
	for (int k = 0; k < 3; k++) {
		const struct slot *s = &c->slot[ids[k]];

		if (!s->set)
			continue;
		c->spec->mem_kind = kinds[k];
		c->spec->mem_mb = s->a;
		set_field(c, HB_F_MEM, s->dir);
	}
	return 0;
}

#define UNSET UINT64_MAX

static int gres_fail(struct ctx *c, uint32_t d, int code, const char *msg)
{
	const struct hb_directive *x = dir(c, d);

	c->where = x->origin.kind == HB_ORIGIN_FILE  ? c->name
		   : x->origin.kind == HB_ORIGIN_CLI ? "command line"
						     : x->text;
	c->where_line = x->origin.kind == HB_ORIGIN_ENV ? 0 : x->origin.line;
	return fail(c, code, "%s", msg);
}

static void derive(struct ctx *c, enum hb_field f, uint32_t d, const char *what,
		   uint64_t v)
{
	hb_jobspec_set_origin(c->spec, f,
			      (struct hb_origin){HB_ORIGIN_DERIVED, 0});
	hb_directive_add_field(dir(c, d), f);
	note(c, d,
	     hb_arena_printf(&c->spec->arena,
			     "sbatch derives %s %llu "
			     "from it",
			     what, (unsigned long long)v));
}

/*
 * The GPU checks sbatch makes before it submits (gres_job_state_validate
 * and _test_gres_cnt in src/common/gres.c), and the counts they imply.
 */
static int validate_gpus(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *job = &c->slot[O_GPUS];
	const struct slot *gres = &c->slot[O_GRES];
	const struct slot *pnode = &c->slot[O_GPUS_PER_NODE];
	const struct slot *task = &c->slot[O_GPUS_PER_TASK];
	const struct slot *sock = &c->slot[O_GPUS_PER_SOCKET];
	const struct slot *cpg = &c->slot[O_CPUS_PER_GPU];
	bool nodes_set = hb_jobspec_has(sp, HB_F_NODES);
	uint64_t gpj = job->set ? job->a : 0, gpt = task->set ? task->a : 0;
	uint64_t gpn = gres->set && gres->a ? gres->a
		       : pnode->set	    ? pnode->a
					    : 0;
	uint64_t min = nodes_set ? sp->nodes_min : UNSET;
	uint64_t max = nodes_set && sp->nodes_max ? sp->nodes_max : UNSET;
	uint64_t tpn = sp->ntasks_per_node ? sp->ntasks_per_node : UNSET;
	uint64_t cpt = sp->cpus_per_task ? sp->cpus_per_task : UNSET;
	uint64_t ntasks = UNSET, omin = nodes_set ? sp->nodes_min : 1;
	uint64_t omax = nodes_set ? sp->nodes_max : 0;
	bool any = gpj || gpt || gpn || (sock->set && sock->a);
	bool ntasks_given = sp->ntasks != 0;

	if (c->slot[O_MEM_PER_GPU].set && !any)
		return gres_fail(c, c->slot[O_MEM_PER_GPU].dir, HB_EINVAL,
				 "requested memory per GPU but did not "
				 "request any GPU");
	if (!gpj && !gpt && !gpn)
		return 0;
	{
		static const int ids[] = {O_GRES, O_GPUS, O_GPUS_PER_NODE,
					  O_GPUS_PER_TASK, O_GPUS_PER_SOCKET};
		bool typed = false, untyped = false;
		uint32_t last = 0;

		for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
			const struct slot *g = &c->slot[ids[k]];

			if (!g->set || !g->a)
				continue;
			typed |= (g->b >> 1) & 1;
			untyped |= (g->b >> 2) & 1;
			if (g->dir > last || last == 0)
				last = g->dir;
		}
		if (typed && untyped)
			return gres_fail(c, last, HB_EINVAL,
					 "invalid GRES specification (GPUs "
					 "with and without type "
					 "identification)");
	}
	/* the task count sbatch sends */
	if (sp->ntasks)
		ntasks = sp->ntasks;
	else if (sp->ntasks_per_node && (omax == 0 || omin == omax))
		ntasks = omin * sp->ntasks_per_node;
	if (gpt && ntasks == UNSET && min != UNSET && min == max) {
		if (tpn != UNSET)
			ntasks = min * tpn;
		else if (cpt == UNSET)
			ntasks = min;
	}
	/* _test_gres_cnt(), in its order */
	{
		uint64_t gps = sock->set ? sock->a : 0;
		uint32_t d = job->set	  ? job->dir
			     : task->set  ? task->dir
			     : pnode->set ? pnode->dir
					  : gres->dir;

		if (gpj && ((gpn && gpn > gpj) || (gpt && gpt > gpj) ||
			    (gps && gps > gpj)))
			return gres_fail(c, d, HB_EINVAL,
					 "failed to ensure --gpus >= "
					 "--gres=gpu/--gpus-per-node >= "
					 "--gpus-per-socket");
		if (gpn && ((gpt && gpt > gpn) || (gps && gps > gpn)))
			return gres_fail(c, d, HB_EINVAL,
					 "failed to ensure --gpus >= "
					 "--gpus-per-task");
		if (gps && c->topo[0] < 0)
			return gres_fail(c, sock->dir, HB_EINVAL,
					 "--gpus-per-socket option requires "
					 "--sockets-per-node specification");
	}
	if (cpg->set && cpt != UNSET)
		return gres_fail(c, cpg->dir, HB_ECONFLICT,
				 "--cpus-per-gpu is mutually exclusive with "
				 "--cpus-per-task");
	if (gpj && gpn) {
		uint64_t req;

		if (gpj % gpn)
			return gres_fail(c, job->dir, HB_EINVAL,
					 "--gpus is not multiple of "
					 "--gres=gpu/--gpus-per-node");
		req = gpj / gpn;
		if ((min != UNSET && req < min) || (max != UNSET && req > max))
			return gres_fail(c, job->dir, HB_EINVAL,
					 "based on --gpus and GPUs per node, "
					 "the required node count is outside "
					 "the job's node range");
		min = max = req;
		if (req <= UINT32_MAX) {
			sp->nodes_min = sp->nodes_max = (uint32_t)req;
			derive(c, HB_F_NODES, job->dir, "nodes", req);
		}
	}
	if (gpt) {
		if (gpj) {
			if (gpj % gpt)
				return gres_fail(c, task->dir, HB_EINVAL,
						 "--gpus not multiple of "
						 "--gpus-per-task");
			if (ntasks == UNSET)
				ntasks = gpj / gpt;
			else if (ntasks != gpj / gpt)
				return gres_fail(c, task->dir, HB_ECONFLICT,
						 "based on --gpus and "
						 "--gpus-per-task the number "
						 "of requested tasks differs "
						 "from -n/--ntasks");
		} else if (ntasks == UNSET) {
			return gres_fail(c, task->dir, HB_EINVAL,
					 "--gpus-per-task used without either "
					 "--gpus or -n/--ntasks is not "
					 "allowed");
		}
	}
	if (gpn && gpt) {
		if (gpn % gpt)
			return gres_fail(c, task->dir, HB_EINVAL,
					 "GPUs per node not multiple of "
					 "--gpus-per-task");
		if (tpn == UNSET) {
			sp->ntasks_per_node = (uint32_t)(gpn / gpt);
			derive(c, HB_F_NTASKS_PER_NODE, task->dir,
			       "tasks per node", gpn / gpt);
		} else if (tpn != gpn / gpt) {
			return gres_fail(c, task->dir, HB_ECONFLICT,
					 "based on GPUs per node and "
					 "--gpus-per-task the number of tasks "
					 "per node differs from "
					 "--ntasks-per-node");
		}
	}
	if (cpg->set && gpt && cpt == UNSET) {
		if (cpg->a * gpt > INT_MAX)
			return gres_fail(c, cpg->dir, HB_ERANGE,
					 "CPUs per task from --cpus-per-gpu "
					 "and --gpus-per-task are too many");
		sp->cpus_per_task = (uint32_t)(cpg->a * gpt);
		derive(c, HB_F_CPUS_PER_TASK, cpg->dir, "CPUs per task",
		       sp->cpus_per_task);
	}
	if (gpj) {
		if (min != UNSET && gpj < min)
			return gres_fail(c, job->dir, HB_EINVAL, "--gpus < -N");
		if (max != UNSET && gpj < max) {
			sp->nodes_max = (uint32_t)gpj;
			note(c, job->dir,
			     hb_arena_printf(&sp->arena,
					     "sbatch lowers the "
					     "node maximum to "
					     "%llu",
					     (unsigned long long)gpj));
		}
	}
	if (!ntasks_given && ntasks != UNSET && ntasks <= INT_MAX && gpt) {
		sp->ntasks = (uint32_t)ntasks;
		derive(c, HB_F_NTASKS, task->dir, "tasks", ntasks);
	}
	return 0;
}

/* One GPU request wins the jobspec's single GPU field. */
static void resolve_gpus(struct ctx *c)
{
	static const struct {
		int id;
		uint8_t scope;
	} order[] = {
	    {O_GPUS_PER_NODE, HB_GPU_PER_NODE},
	    {O_GRES, HB_GPU_PER_NODE},
	    {O_GPUS_PER_TASK, HB_GPU_PER_TASK},
	    {O_GPUS, HB_GPU_PER_JOB},
	};
	int win = -1;

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		const struct slot *s = &c->slot[order[k].id];

		if (!s->set || s->a == 0)
			continue;
		if (win < 0) {
			win = (int)k;
			c->spec->gpu_scope = order[k].scope;
			c->spec->gpus = (uint32_t)s->a;
			c->spec->gpu_type = s->t;
			set_field(c, HB_F_GPUS, s->dir);
			if (s->b & 1)
				note(c, s->dir,
				     "several GPU types: kept as "
				     "an untyped GPU count");
			continue;
		}
		note(c, s->dir,
		     hb_arena_printf(&c->spec->arena,
				     "not carried: the job's GPUs "
				     "are taken from --%s",
				     opt_name(order[win].id)));
	}
	if (c->slot[O_GPUS_PER_SOCKET].set && c->slot[O_GPUS_PER_SOCKET].a)
		note(c, c->slot[O_GPUS_PER_SOCKET].dir,
		     "GPUs per socket; no jobspec field");
}

static int resolve_array(struct ctx *c)
{
	const struct slot *s = &c->slot[O_ARRAY];
	uint8_t bits[(ARRAY_MAX_SIZE + 7) / 8] = {0};
	uint32_t lim;
	bool any;

	if (!s->set)
		return 0;
	if (parse_array(s->val, bits, &lim, &any) || !any) {
		note(c, s->dir, "names no array index: not an array job");
		return 0;
	}
	c->spec->array = s->val;
	c->spec->array_max_running = lim;
	set_field(c, HB_F_ARRAY, s->dir);
	return array_ranges(c, bits);
}

/* --export pairs NAME=VALUE become job environment (find_quote_token). */
static int resolve_export(struct ctx *c)
{
	const struct slot *s = &c->slot[O_EXPORT];
	const char *p;
	bool any = false;

	if (!s->set || !s->val)
		return 0;
	if (ieq(s->val, "ALL") || ieq(s->val, "NONE"))
		return 0;
	p = s->val;
	while (*p) {
		const char *start = p, *eq;
		int sq = 0, dq = 0;
		size_t n;
		char *tok;
		int rc;

		while (*p && (sq || dq || *p != ',')) {
			if (*p == '\'')
				sq = !sq;
			else if (*p == '"')
				dq = !dq;
			p++;
		}
		n = (size_t)(p - start);
		if (*p == ',')
			p++;
		if (n >= 2 && ((start[0] == '\'' && start[n - 1] == '\'') ||
			       (start[0] == '"' && start[n - 1] == '"'))) {
			start++;
			n -= 2;
		}
		if (n == 0)
			continue;
		tok = hb_jobspec_strndup(c->spec, start, n);
		if (!tok)
			return nomem(c);
		if (ieq(tok, "ALL") || ieq(tok, "NONE"))
			continue;
		eq = strchr(tok, '=');
		if (eq == tok)
			continue;
		if (eq)
			tok[eq - tok] = '\0';
		rc = hb_jobspec_add_env(c->spec, tok, eq ? eq + 1 : NULL);
		if (rc)
			return nomem(c);
		any = true;
	}
	if (any)
		set_field(c, HB_F_ENV, s->dir);
	return 0;
}

/* The checks and adjustments of sbatch's _opt_verify() that change
 * what the job asks for. */
/*
 * validate_hint_option() and verify_hint(): --hint wins over, or yields
 * to, the node topology options, and sets some of them itself.
 */
static void resolve_hint(struct ctx *c)
{
	static const int topo_ids[] = {O_NTASKS_PER_CORE, O_THREADS_PER_CORE,
				       O_EXTRA_NODE_INFO};
	const struct slot *h = &c->slot[O_HINT];
	bool cli = false, env = false;
	const char *p;

	if (!h->set || !h->val)
		return;
	for (size_t k = 0; k < sizeof(topo_ids) / sizeof(topo_ids[0]); k++) {
		const struct slot *t = &c->slot[topo_ids[k]];

		if (t->set && !t->by_env)
			cli = true;
		else if (t->set)
			env = true;
	}
	if (cli || (h->by_env && env)) {
		note(c, h->dir,
		     "ignored: sbatch drops --hint when "
		     "--ntasks-per-core, --threads-per-core or -B "
		     "is given");
		return;
	}
	if (!h->by_env) {
		/* the hint replaces any topology request */
		c->topo[0] = c->topo[1] = c->topo[2] = -1;
		c->extra_set = false;
	}
	for (p = h->val; *p;) {
		const char *e = p;
		char tok[32];
		size_t n;

		while (*e && !(*e == ';' || (*e == ',' && !is_digit(e[1]))))
			e++;
		n = (size_t)(e - p);
		if (n < sizeof(tok)) {
			memcpy(tok, p, n);
			tok[n] = '\0';
			if (ieq(tok, "compute_bound")) {
				c->topo[0] = c->topo[1] = -1;
				c->topo[2] = 1;
			} else if (ieq(tok, "memory_bound")) {
				c->topo[1] = c->topo[2] = 1;
			} else if (ieq(tok, "multithread")) {
				c->topo[2] = -1;
			} else if (ieq(tok, "nomultithread")) {
				c->topo[2] = 1;
			}
		}
		p = *e ? e + 1 : e;
	}
	c->topo_dir = h->dir;
}

static int resolve_counts(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	struct slot *nodes = &c->slot[O_NODES];
	const struct slot *nl = &c->slot[O_NODELIST];
	const struct slot *nt = &c->slot[O_NTASKS];
	bool nodes_set = nodes->set, ntasks_set = nt->set;
	uint64_t min = nodes->set ? nodes->a : 1;
	uint64_t max = nodes->set ? nodes->b : 0;
	uint32_t nodes_dir = nodes->set ? nodes->dir : NO_DIR;

	resolve_hint(c);
	if (nl->set && nl->dir != NO_DIR && c->dinfo[nl->dir] == O_NODELIST) {
		uint64_t cnt;
		int rc = count_nodes(c, nl->val, &cnt, 0, NULL);

		if (rc == HB_ENOMEM)
			return rc;
		if (rc == 0) {
			if (!nodes_set || cnt > min) {
				min = cnt;
				nodes_dir = nl->dir;
			}
			nodes_set = true;
		} else {
			note(c, nl->dir,
			     "node list not expanded: the node "
			     "count is not derived from it");
		}
	}
	if (max && min > max)
		return fail(c, HB_EINVAL,
			    "invalid number of nodes (-N "
			    "%llu-%llu)",
			    (unsigned long long)min, (unsigned long long)max);
	if (nodes_set && ntasks_set && max > nt->a)
		max = nt->a;
	if (nodes_set && ntasks_set && nt->a < min) {
		const char *kept = NULL;
		uint64_t cnt;

		min = max = nt->a;
		/* sbatch drops the node list's last nodes to match */
		if (sp->nodelist &&
		    count_nodes(c, sp->nodelist, &cnt, min, &kept) == HB_ENOMEM)
			return HB_ENOMEM;
		if (kept) {
			sp->nodelist = kept;
			note(c, nl->dir,
			     hb_arena_printf(&sp->arena,
					     "sbatch keeps only the "
					     "first %llu nodes: %s",
					     (unsigned long long)min, kept));
		}
		note(c, nodes_dir,
		     hb_arena_printf(&sp->arena,
				     "sbatch sets the node count "
				     "to %llu: only %llu tasks",
				     (unsigned long long)min,
				     (unsigned long long)nt->a));
		if (nt->dir != NO_DIR)
			hb_directive_add_field(dir(c, nt->dir), HB_F_NODES);
	}
	/* --ntasks-per-node implies the task count first */
	if (c->slot[O_NTASKS_PER_NODE].set && !ntasks_set &&
	    (max == 0 || min == max))
		ntasks_set = true;
	/* "1 proc / min_[socket * core * thread] default" */
	if ((nodes_set || c->extra_set) && (min == max || max == 0) &&
	    !ntasks_set &&
	    (c->topo[0] > 0 || c->topo[1] > 0 || c->topo[2] > 0)) {
		uint64_t n = min ? min : 1;

		for (int k = 0; k < 3; k++) {
			if (c->topo[k] < 0)
				continue;
			if (c->topo[k] && n > INT_MAX / (uint64_t)c->topo[k])
				n = (uint64_t)INT_MAX + 1; /* refused below */
			else
				n *= (uint64_t)c->topo[k];
		}
		if (n == 0 || n > INT_MAX)
			return fail(c, HB_EUNSUP,
				    "the task count sbatch "
				    "derives from the node topology request "
				    "(%llu) is not supported",
				    (unsigned long long)n);
		sp->ntasks = (uint32_t)n;
		hb_jobspec_set_origin(sp, HB_F_NTASKS,
				      (struct hb_origin){HB_ORIGIN_DERIVED, 0});
		hb_directive_add_field(dir(c, c->topo_dir), HB_F_NTASKS);
		note(c, c->topo_dir,
		     hb_arena_printf(&sp->arena,
				     "sbatch derives %llu "
				     "tasks from it",
				     (unsigned long long)n));
	}
	if (nodes_set && nodes_dir != NO_DIR) {
		if (min > UINT32_MAX || max > UINT32_MAX)
			return fail(c, HB_ERANGE, "node count too large");
		sp->nodes_min = (uint32_t)min;
		sp->nodes_max = (uint32_t)max;
		set_field(c, HB_F_NODES, nodes_dir);
	}
	return 0;
}

static int resolve(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *s;
	int rc;

	rc = resolve_mem(c);
	if (rc)
		return rc;
	for (size_t k = 0; k < sizeof(str_map) / sizeof(str_map[0]); k++) {
		s = &c->slot[str_map[k].id];
		if (!s->set || !s->val)
			continue;
		*(const char **)((char *)sp + str_map[k].off) = s->val;
		set_field(c, str_map[k].field, s->dir);
	}
	s = &c->slot[O_NODELIST];
	if (s->set && s->dir != NO_DIR && c->dinfo[s->dir] == O_NODELIST) {
		sp->nodelist = s->val;
		set_field(c, HB_F_NODELIST, s->dir);
	}
	rc = resolve_counts(c);
	if (rc)
		return rc;
	s = &c->slot[O_NTASKS];
	if (s->set) {
		sp->ntasks = (uint32_t)s->a;
		set_field(c, HB_F_NTASKS, s->dir);
	}
	s = &c->slot[O_NTASKS_PER_NODE];
	if (s->set) {
		sp->ntasks_per_node = (uint32_t)s->a;
		set_field(c, HB_F_NTASKS_PER_NODE, s->dir);
	}
	s = &c->slot[O_CPUS_PER_TASK];
	if (s->set) {
		sp->cpus_per_task = (uint32_t)s->a;
		set_field(c, HB_F_CPUS_PER_TASK, s->dir);
	}
	rc = validate_gpus(c);
	if (rc)
		return rc;
	resolve_gpus(c);
	s = &c->slot[O_EXCLUSIVE];
	if (s->set) {
		if (s->a <= 1) {
			sp->exclusive = s->a == 0;
			set_field(c, HB_F_EXCLUSIVE, s->dir);
		} else {
			note(c, s->dir,
			     s->a == 2 ? "nodes shared only with the "
					 "user's jobs; no jobspec field"
				       : "nodes shared only within the "
					 "MCS label; no jobspec field");
		}
	}
	s = &c->slot[O_TIME];
	if (s->set) {
		sp->time_limit = s->a;
		set_field(c, HB_F_TIME_LIMIT, s->dir);
	}
	s = &c->slot[O_TIME_MIN];
	if (s->set) {
		sp->time_min = s->a;
		set_field(c, HB_F_TIME_MIN, s->dir);
		if (c->slot[O_TIME].set && sp->time_min > sp->time_limit)
			return gres_fail(c, s->dir, HB_EINVAL,
					 "invalid --time-min specification "
					 "(exceeds the job's time limit)");
	}
	rc = resolve_array(c);
	if (rc)
		return rc;
	if (c->slot[O_MAIL_TYPE].set) {
		sp->mail_type = mail_string(c, c->mail_bits);
		if (!sp->mail_type)
			return nomem(c);
		for (uint32_t d = 0; d < sp->ndirectives; d++)
			if (c->dinfo[d] == O_MAIL_TYPE)
				set_field(c, HB_F_MAIL_TYPE, d);
	}
	s = &c->slot[O_REQUEUE];
	if (s->set) {
		sp->requeue = (int8_t)s->a;
		set_field(c, HB_F_REQUEUE, s->dir);
	}
	return resolve_export(c);
}

/* --hpcbridge-data values, deadline and target. */
static int resolve_hpcbridge(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *s;

	s = &c->slot[O_HB_DEADLINE];
	if (s->set) {
		if (!c->slot[O_DEADLINE].set) {
			sp->deadline = s->val;
			set_field(c, HB_F_DEADLINE, s->dir);
			note(c, s->dir, "the job's deadline for placement");
		} else {
			note(c, s->dir, "not used: --deadline is given");
		}
	}
	s = &c->slot[O_HB_TARGET];
	if (s->set)
		note(c, s->dir,
		     hb_arena_printf(&sp->arena, "placement target: %s",
				     s->val));
	return 0;
}

/* Notes for directives whose value did not survive. */
static void override_notes(struct ctx *c)
{
	for (uint32_t d = 0; d < c->spec->ndirectives; d++) {
		uint16_t info = c->dinfo[d];
		int id = info & ~DI_NOVALUE;
		const struct slot *s = &c->slot[group(id)];
		uint32_t by;

		if ((info & DI_NOVALUE) || cumulative(id))
			continue;
		if (s->dir == d)
			continue;
		by = s->dir != NO_DIR ? s->dir : s->reset_by;
		if (by == NO_DIR || by == d)
			continue;
		note(c, d,
		     hb_arena_printf(&c->spec->arena, "overridden by %s",
				     where_text(c, by)));
		/* Replaced by another directive: it named the same fields as
		 * the winner, and the report shows it overridden.  Reset to
		 * nothing: it set nothing. */
		if (s->dir == NO_DIR) {
			dir(c, d)->nfields = 0;
			continue;
		}
		for (uint8_t k = 0; k < dir(c, by)->nfields; k++)
			hb_directive_add_field(dir(c, d),
					       dir(c, by)->fields[k]);
	}
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */

typedef unsigned char v16 __attribute__((vector_size(16)));

/* The checks sbatch makes on the whole script before reading it. */
static int check_script(struct ctx *c, const char *buf, size_t len)
{
	uint32_t line = 1, nul = 0, dos = 0, ctl = 0;
	bool blank = true;

	c->where = c->name;
	c->where_line = 0;
	if (len == 0)
		return fail(c, HB_EINVAL, "batch script is empty");
	if (len > HB_SCRIPT_MAX)
		return fail(c, HB_ETOOBIG,
			    "batch script is larger than %u "
			    "bytes",
			    HB_SCRIPT_MAX);
	{
		/* fast path: no byte below 0x20 but tab and newline, no DEL */
		static const uint8_t bad_byte[256] = {
		    1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1,	    1,
		    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, [0x7f] = 1};
		const unsigned char *u = (const unsigned char *)buf;
		unsigned bad = 0;
		size_t i = 0;
		v16 acc = {0};

		/* sixteen bytes at a time with the compiler's vectors */
		for (; i + 16 <= len; i += 16) {
			v16 x;

			memcpy(&x, u + i, 16);
			acc |= (v16)((x < 0x20) & (x != '\t') & (x != '\n')) |
			       (v16)(x == 0x7f);
		}
		for (int k = 0; k < 16; k++)
			bad |= acc[k];
		for (; i < len; i++)
			bad |= bad_byte[u[i]];
		for (i = 0; i < len && blank; i++)
			if (!is_space(buf[i]))
				blank = false;
		if (!bad)
			goto checked;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n') {
			line++;
			continue;
		}
		if (ch == '\0') {
			if (!nul)
				nul = line;
		} else if (ch == '\r' && i + 1 < len && buf[i + 1] == '\n') {
			if (!dos)
				dos = line;
		} else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			if (!ctl)
				ctl = line;
		}
	}
checked:
	if (blank)
		return fail(c, HB_EINVAL,
			    "batch script contains only white "
			    "space");
	if (len < 2 || buf[0] != '#' || buf[1] != '!') {
		c->where_line = 1;
		return fail(c, HB_EINVAL,
			    "this does not look like a batch "
			    "script: the first line must start with #! "
			    "followed by the path to an interpreter");
	}
	if (nul) {
		c->where_line = nul;
		return fail(c, HB_EINVAL,
			    "batch script contains a NUL "
			    "character");
	}
	if (dos) {
		c->where_line = dos;
		return fail(c, HB_EINVAL,
			    "batch script contains DOS line "
			    "breaks (\\r\\n) instead of UNIX line breaks "
			    "(\\n)");
	}
	if (ctl) {
		c->where_line = ctl;
		return fail(c, HB_EINVAL,
			    "batch script contains a control "
			    "character");
	}
	return 0;
}

static int set_interpreter(struct ctx *c)
{
	const char *s = c->spec->script + 2, *e = s;

	while (*e && *e != '\n')
		e++;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e == s)
		return 0;
	c->spec->interpreter = hb_jobspec_strndup(c->spec, s, (size_t)(e - s));
	return c->spec->interpreter ? 0 : nomem(c);
}

int hb_sbatch_parse(const char *buf, size_t len, const char *name,
		    const struct hb_sbatch_opts *opts, struct hb_jobspec *spec,
		    struct hb_err *err)
{
	struct ctx *c = calloc(1, sizeof(*c));
	struct toks ts = {0};
	char *copy;
	int rc;

	if (!c)
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	c->spec = spec;
	c->err = err;
	c->name = name ? name : spec->source_name ? spec->source_name : "-";
	c->where = c->name;
	for (int k = 0; k < O__COUNT; k++) {
		c->slot[k].dir = NO_DIR;
		c->slot[k].reset_by = NO_DIR;
	}
	c->topo[0] = c->topo[1] = c->topo[2] = -1;
	hb_buf_init(&c->text, 0);
	spec->source = HB_SRC_SBATCH;

	rc = check_script(c, buf ? buf : "", buf ? len : 0);
	if (rc)
		goto out;
	copy = hb_jobspec_strndup(spec, buf, len);
	if (!copy) {
		rc = nomem(c);
		goto out;
	}
	spec->script = copy;
	spec->script_len = (uint32_t)len;
	hb_jobspec_set_origin(spec, HB_F_SCRIPT,
			      (struct hb_origin){HB_ORIGIN_FILE, 1});
	rc = set_interpreter(c);
	if (rc)
		goto out;

	/* 1. #SBATCH lines: all arguments, then one getopt pass */
	rc = read_header(c, &ts);
	if (rc)
		goto out;
	c->origin.kind = HB_ORIGIN_FILE;
	c->where = c->name;
	rc = getopt_all(c, &ts);
	if (rc)
		goto out;
	/* 1b. #BSUB/#PBS lines, which sbatch reads after #SBATCH */
	if (opts && env_get(opts->envp, "SBATCH_IGNORE_PBS")) {
		const char *v = env_get(opts->envp, "SBATCH_IGNORE_PBS");
		const char *end;
		long n;

		if (!*v || ieq(v, "yes") ||
		    (!c_strtol(v, &n, &end) && end != v && !*end && n))
			c->ignore_pbs = true;
	}
	rc = wrapper_lines(c);
	if (rc)
		goto out;
	/* 2. SBATCH_* variables, 3. the command line */
	if (opts) {
		rc = read_env(c, opts->envp);
		if (!rc)
			rc = read_argv(c, opts);
		if (rc)
			goto out;
	}
	/* 4. what sbatch checks and derives at the end */
	rc = resolve(c);
	if (!rc)
		rc = resolve_hpcbridge(c);
	if (rc)
		goto out;
	override_notes(c);
	rc = hb_jobspec_scan_body(spec, err);
out:
	free(ts.v);
	free(c->dinfo);
	hb_buf_free(&c->text);
	free(c);
	return rc;
}

int hb_sbatch_detect(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	if (!buf)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le - p >= 7 && memcmp(p, "#SBATCH", 7) == 0)
			return 1;
		if (is_command(p, le))
			return 0;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int hb_sbatch_array_has(const char *array_spec, uint32_t task)
{
	uint8_t bits[(ARRAY_MAX_SIZE + 7) / 8] = {0};
	uint32_t lim;
	bool any;

	if (!array_spec || task >= ARRAY_MAX_SIZE ||
	    parse_array(array_spec, bits, &lim, &any) || !any)
		return 0;
	return bit(bits, task);
}
