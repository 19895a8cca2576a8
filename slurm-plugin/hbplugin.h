/*
 * hbplugin.h - the logic of the Slurm plugins, kept apart from Slurm's
 * plugin glue so that unit tests can drive it without slurmctld.
 *
 * Private to slurm-plugin/: compiled into job_submit_hpcbridge.so,
 * spank_hpcbridge.so and the unit test test_plugin_logic.  Nothing here
 * calls into Slurm: strings handed to Slurm are made with the allocator
 * the caller passes (struct hb_slurm_alloc), which is slurm_xstrdup and
 * slurm_xfree inside slurmctld and plain malloc/free in the tests.
 */
#ifndef HPCBRIDGE_SLURM_PLUGIN_H
#define HPCBRIDGE_SLURM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/slurm.h>

#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/placement.h"

struct cJSON;

/* ------------------------------------------------------------ latency */

/*
 * The time job_submit spends in slurmctld's job write lock, per decision
 * (latency.c): a log-linear histogram of microseconds, read to within
 * 1/16 of the true value, exactly below 16 us.  Up to 2^40 us; larger
 * samples count in the last bucket (and in max_us, exactly).
 */
#define HB_LATENCY_BUCKETS (16 + 37 * 16)
struct hb_latency {
	uint64_t n, max_us;
	uint64_t buckets[HB_LATENCY_BUCKETS];
};

void hb_latency_reset(struct hb_latency *l);
void hb_latency_add(struct hb_latency *l, uint64_t us);
/* The q-quantile (0.5: the median) in us: the top of the bucket that
 * holds it, never above max_us; 0 when empty. */
uint64_t hb_latency_quantile(const struct hb_latency *l, double q);

/* ------------------------------------------------------------ options */

/* The SPANK options, in the order they are registered. */
enum hb_opt {
	HB_OPT_TARGET,	   /* --hpcbridge-target=auto|slurm|kubernetes */
	HB_OPT_DEADLINE,   /* --hpcbridge-deadline=TIME */
	HB_OPT_CHECKPOINT, /* --hpcbridge-checkpoint=DIR */
	HB_OPT_DATA,	   /* --hpcbridge-data=PATH|s3://bucket/prefix */
	HB_OPT_FABRIC,	   /* --hpcbridge-fabric=rdma|tcp|auto */
	HB__OPT_COUNT
};

/* The SPANK plugin's name: it is part of the variables sbatch forwards. */
#define HB_SPANK_PLUGIN_NAME "hpcbridge"

/* Longest option value accepted (a path). */
#define HB_OPT_VALUE_MAX 4095

/* "hpcbridge-target" etc.; NULL past the last option. */
const char *hb_opt_name(enum hb_opt o);
/* The key in the decide request: "target", "deadline", "checkpoint",
 * "data", "fabric". */
const char *hb_opt_key(enum hb_opt o);
/* One word for --help ("auto|slurm|kubernetes"), and one line of usage. */
const char *hb_opt_arginfo(enum hb_opt o);
const char *hb_opt_usage(enum hb_opt o);

/*
 * Check a value of option o.  0 if valid; HB_EINVAL with a message that
 * names the option and says what is wanted ("--hpcbridge-target: 'x' is
 * not auto, slurm or kubernetes") otherwise.  A NULL value is invalid.
 * Deadlines are checked as the sbatch reader checks them
 * (hb_time_slurm_date_ok()): what Slurm 22.05's parse_time() accepts
 * (now+1hour, 18:00, 2025-06-30T18:00, tomorrow, ...).
 */
int hb_opt_check(enum hb_opt o, const char *value, struct hb_err *err);

/*
 * The environment variable through which sbatch forwards option o:
 * "_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target" (Slurm's
 * _opt_env_name(): prefix, plugin name, '_', option name, every
 * character that is not alphanumeric made '_').  Returns 0, or
 * HB_ETOOBIG if it does not fit in len bytes.
 */
int hb_opt_env_name(enum hb_opt o, char *buf, size_t len);

/*
 * The value of option o as sbatch forwarded it: looked up first in the
 * job's SPANK environment (job_desc->spank_job_env), then in its
 * environment (job_desc->environment; absent under --export=NONE).  Also
 * accepted with the SPANK_ prefix Slurm adds for prolog/epilog.  NULL
 * entries and entries without '=' are skipped.  Returns a pointer into
 * one of the arrays (borrowed), or NULL if not given.
 */
const char *hb_opt_find(enum hb_opt o, char *const *spank_env, uint32_t nspank,
			char *const *env, uint32_t nenv);

/* ------------------------------------------------------------- config */

/* The settings the job_submit plugin reads from hpcbridge.yaml. */
#define HB_PLUGIN_DEFAULT_CONFIG     "/etc/hpcbridge/hpcbridge.yaml"
#define HB_PLUGIN_DEFAULT_SOCKET     "/run/hpcbridge/hpcbridged.sock"
#define HB_PLUGIN_DEFAULT_TIMEOUT_MS 20
#define HB_PLUGIN_DEFAULT_SNAPSHOT   "/run/hpcbridge/placement.snap"
#define HB_PLUGIN_MAX_TIMEOUT_MS     5000
#define HB_PLUGIN_CONFIG_MAX	     (1u << 20)

struct hb_plugin_conf {
	char socket[108]; /* sun_path: at most 107 bytes and a NUL */
	int timeout_ms;	  /* 1..HB_PLUGIN_MAX_TIMEOUT_MS */
	uid_t daemon_uid; /* daemon.user: may serve the socket; 0: root */
	int inproc;	  /* plugin.decide: snapshot */
	char snapshot[4096]; /* plugin.snapshot as in force */
};

/* The defaults: HB_PLUGIN_DEFAULT_SOCKET, HB_PLUGIN_DEFAULT_TIMEOUT_MS,
 * a daemon run by root. */
void hb_plugin_conf_defaults(struct hb_plugin_conf *conf);

/*
 * Read daemon.socket, daemon.user (resolved to a uid here, once, so that
 * job_submit never looks a name up) and plugin.timeout_ms from the
 * hpcbridge.yaml at path, validated in full by hb_config_parse() (at most
 * HB_PLUGIN_CONFIG_MAX bytes).  conf is filled with the defaults first, so
 * it is usable whatever happens.  HB_ENOENT if the file does not exist
 * (the defaults apply); another HB_E* code with err naming the file, line
 * and key if it cannot be read or is not valid (conf then holds the
 * defaults: nothing is half-read).
 */
int hb_plugin_conf_load(const char *path, struct hb_plugin_conf *conf,
			struct hb_err *err);

/* ------------------------------------------------------------- decide */

/* Caps on what one decide request carries. */
#define HB_DECIDE_ENV_MAX  (256u * 1024) /* bytes of environment */
#define HB_DECIDE_ARGV_MAX (64u * 1024)	 /* bytes of script arguments */

/*
 * Should job_submit ask the daemon about this job at all?  No for jobs
 * without a batch script (salloc, srun), heterogeneous job components,
 * and jobs the gateway submitted itself (HPCBRIDGE_JOB_ID in their
 * environment).  Returns 1 or 0.
 */
int hb_decide_wanted(const job_desc_msg_t *jd);

/*
 * jd read once for its decision: the --hpcbridge-* options in its
 * environment (invalid or absent ones left out), the jobspec built from
 * its fields (what Slurm resolved from the script, SBATCH_* variables and
 * command-line options), and the job as the placement engine takes it
 * (hb_place_job(): what hb_place_request_read() reads from the request
 * below, with the uid in digits for the user).  Strings are borrowed
 * from jd.  0, or HB_EINVAL (no jd) / HB_ENOMEM with err and nothing to
 * free; free a job read with hb_decide_job_free().
 */
struct hb_decide_job {
	const char *vals[HB__OPT_COUNT];
	char target[16]; /* vals[HB_OPT_TARGET] in lower case; "": none */
	char user[16];
	struct hb_jobspec spec;
	struct hb_place_job job;
};
int hb_decide_job_read(const job_desc_msg_t *jd, struct hb_decide_job *dj,
		       struct hb_err *err);
void hb_decide_job_free(struct hb_decide_job *dj);

/*
 * The decide request of protocol v1 for jd, read into dj (see
 * docs/internals/plugins.md): uid, account, partition, slurm_job_name,
 * time_limit_min, target, options, script, argv, env and jobspec.  No
 * user name: that would take an NSS lookup under slurmctld's lock; the
 * daemon resolves the uid.  Written with e, so that one writer makes the
 * tree the plugin sends the daemon and the text the proxy's script and
 * the notice carry; a string that is not valid UTF-8 has each bad byte
 * written as U+FFFD in the text (hb_decide_request() mends the tree's).
 * Returns hb_emit's sticky code.
 */
struct hb_emit;
int hb_decide_request_emit(struct hb_emit *e, const job_desc_msg_t *jd,
			   const struct hb_decide_job *dj);

/* The request as a tree, for the socket.  Caller frees with
 * cJSON_Delete(); NULL with err set on failure (ENOMEM). */
struct cJSON *hb_decide_request(const job_desc_msg_t *jd, struct hb_err *err);

enum hb_plugin_target {
	HB_PLUGIN_SLURM = 1,
	HB_PLUGIN_KUBERNETES = 2,
	HB_PLUGIN_REJECTED = 3 /* the policy refuses the job: reason says why */
};

/* The daemon's answer, checked.  Strings are borrowed from the reply. */
struct hb_plugin_decision {
	enum hb_plugin_target target;
	const char *id;		   /* "hb-000042" */
	const char *reason;	   /* may be NULL */
	const char *admin_comment; /* may be NULL */
	/* Kubernetes only: the proxy job. */
	const char *partition;
	const char *script;
	const char *comment;	 /* may be NULL */
	uint32_t time_limit_min; /* NO_VAL: keep the job's own */
	uint32_t cpus;		 /* 1 unless the reply says otherwise */
	uint64_t mem_mb;	 /* per node */
};

/* Longest comment/admin_comment this plugin writes (slurmctld refuses
 * longer ones). */
#define HB_COMMENT_MAX 1000
/* Largest proxy script accepted in a reply. */
#define HB_PROXY_SCRIPT_MAX (64u * 1024)

/*
 * Check a reply and fill d.  0 for {"ok":true} with a well-formed
 * decision; otherwise an HB_E* code with err saying what is wrong:
 * the daemon's own error (code and message) for ok:false, HB_EPROTO for
 * anything malformed (unknown target, a kubernetes answer without a
 * usable proxy, an id that is not a plain token, strings with control
 * characters, numbers out of range).  d is zeroed on error.
 */
int hb_plugin_decision_parse(const struct cJSON *reply,
			     struct hb_plugin_decision *d, struct hb_err *err);

/* How strings given to Slurm are made and freed. */
struct hb_slurm_alloc {
	char *(*strdup)(const char *s); /* NULL: out of memory */
	void (*free)(void **p);		/* frees *p and sets it NULL */
};

/*
 * Apply a decision to jd.  Slurm: admin_comment gets d->admin_comment
 * (appended after "; " to one already there).  Kubernetes: jd becomes the
 * proxy job: partition, script, 1 node, 1 task, d->cpus CPUs, d->mem_mb
 * MB per node, the time limit, no GPUs or other TRES, no node, feature or
 * reservation constraints; comment gets the proxy comment (the user's own
 * follows it), admin_comment the gateway id and the original request's
 * shape (hb_plugin_decision_summary()).
 * All new strings are made before jd is touched: on error (ENOMEM) jd is
 * left exactly as it was.
 */
int hb_plugin_decision_apply(job_desc_msg_t *jd,
			     const struct hb_plugin_decision *d,
			     const struct hb_slurm_alloc *a,
			     struct hb_err *err);

/*
 * The original request's key fields in one line, for the proxy's
 * admin_comment: "orig: partition=gpu nodes=2 tasks=8 cpus_per_task=4
 * mem=4096M/node tres=gres:gpu:4 time=60".  Fields not given are left
 * out.  Writes at most len bytes with a NUL; returns 0 or HB_ETOOBIG
 * (truncated).
 */
int hb_plugin_decision_summary(const job_desc_msg_t *jd, char *buf, size_t len);

/* ------------------------------------------------------------- inproc */

/*
 * Placement inside slurmctld (inproc.c): decisions from the snapshot the
 * daemon publishes, with the daemon's engine, told back by notices.
 */
struct hb_inproc;

struct hb_inproc_stats {
	uint64_t decisions; /* made here */
	uint64_t left;	    /* jobs left on Slurm: no usable snapshot, no
			     * id, allowance spent, or an error */
	uint64_t views;	    /* snapshots taken in */
	uint64_t notices_sent;
	size_t queued;	  /* notices waiting for the daemon */
	size_t queued_bytes; /* their length, against the queue's 64 MiB */
	uint64_t dropped; /* notices given up (the reconciler has them) */
};

struct hb_inproc_result {
	enum hb_plugin_target target;
	char id[32];
	char reason[400];
	char partition[64]; /* the job's, after the decision */
	uint64_t version;   /* of the snapshot decided from */
};

/*
 * Start reading the snapshot at path, believed only when owned by root or
 * daemon_uid.  thread: look for a new one every 20 ms on a thread of its
 * own (0: only when hb_inproc_refresh() is called: tests).  0, or
 * HB_ENOMEM / HB_EINVAL with err.
 */
int hb_inproc_start(const char *path, uid_t daemon_uid, int thread,
		    struct hb_inproc **out, struct hb_err *err);
void hb_inproc_stop(struct hb_inproc *ip); /* NULL is fine */
/* Take in the snapshot at path if it changed, and send the notices that
 * wait.  0, or the reason the file cannot be used (HB_ENOENT: none). */
int hb_inproc_refresh(struct hb_inproc *ip);
/* Send the notices that wait (the thread does, every 20 ms, and
 * hb_inproc_refresh() does): off the mutex, in order, until the socket
 * refuses one.  Returns how many still wait. */
int hb_inproc_flush(struct hb_inproc *ip);
/*
 * Decide for jd at now_ms (Unix ms) and apply the decision to it: Slurm
 * tags it, Kubernetes makes it the proxy (strings from a), a rejection
 * leaves it as it is (the caller refuses the job).  0 with r filled; or
 * an HB_E* code with err saying why the job is left on Slurm untouched
 * (no snapshot, a stale one, no id left, the account's allowance spent,
 * out of memory).  Never blocks on I/O.
 */
int hb_inproc_decide(struct hb_inproc *ip, job_desc_msg_t *jd,
		     const struct hb_slurm_alloc *a, int64_t now_ms,
		     struct hb_inproc_result *r, struct hb_err *err);
void hb_inproc_stats(struct hb_inproc *ip, struct hb_inproc_stats *out);

#endif
