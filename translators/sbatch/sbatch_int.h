/*
 * sbatch_int.h - what the files of the sbatch reader share: the option
 * ids and table entries, the parser state, and the functions one part
 * calls in another.  Not a public header: the rest of the project uses
 * include/hpcbridge/sbatch.h only.
 */
#ifndef HB_SBATCH_INT_H
#define HB_SBATCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/sbatch.h"

/* Slurm's default MaxArraySize: array indices run from 0 to 1000. */
#define ARRAY_MAX_SIZE 1001

/* ------------------------------------------------------------------ */
/* Characters, as the C locale sees them                               */
/* ------------------------------------------------------------------ */

static inline bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool ieq(const char *a, const char *b)
{
	while (*a && *b && hb_ascii_lower(*a) == hb_ascii_lower(*b)) {
		a++;
		b++;
	}
	return *a == '\0' && *b == '\0';
}

/* Case-insensitive substring (xstrcasestr). */
static inline bool icontains(const char *s, const char *p)
{
	for (; *s; s++)
		if (hb_ascii_iprefix(s, p))
			return true;
	return false;
}

static inline bool all_space(const char *s)
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
bool sb_strtol(const char *s, long *out, const char **end);

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
	O_HB_FABRIC,
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

/* A variable sbatch reads, and the option it sets. */
struct envopt {
	const char *var;
	uint8_t id;
};

/* sbatch_options.c: the tables */
extern const struct envopt sb_envopts[];
extern const size_t sb_nenvopts;
extern const char *const sb_unmapped_note[O__COUNT];

/* sbatch_options.c: what the table says about an option */
bool sb_early_pass(int id);
uint8_t sb_opt_has_arg(int id);
const char *sb_opt_name(int id);
int sb_group(int id);
bool sb_cumulative(int id);
const struct lopt *sb_short_opt(char ch);
const struct lopt *sb_long_opt(const char *name, size_t nlen, bool *ambig);
void sb_long_opt_list(struct hb_buf *b, const char *name, size_t nlen);

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
	struct hb_prov prov;
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

/* sbatch.c: errors, messages, directives */
int sb_fail(struct ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sb_nomem(struct ctx *c);
const char *sb_shown(struct ctx *c, const char *v);
void sb_note(struct ctx *c, uint32_t d, const char *text);
void sb_set_field(struct ctx *c, enum hb_field f, uint32_t d);

static inline struct hb_directive *dir(struct ctx *c, uint32_t d)
{
	return &c->spec->directives[d];
}

/* sbatch_values.c: values, and applying an option to its slot */
int sb_slurm_int(struct ctx *c, const char *opt, const char *v, bool positive,
		 uint64_t *out);
int sb_parse_array(const char *v, uint8_t *bits, uint32_t *limit, bool *any);
bool sb_array_bit(const uint8_t *bits, uint32_t i);
int sb_array_ranges(struct ctx *c, const uint8_t *bits);
const char *sb_mail_string(struct ctx *c, uint32_t bits);
int sb_apply(struct ctx *c, int id, const char *arg);

/* sbatch_resolve.c: from the final slots to the jobspec */
int sb_resolve(struct ctx *c);
int sb_resolve_hpcbridge(struct ctx *c);
void sb_override_notes(struct ctx *c);

#endif
