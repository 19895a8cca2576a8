/*
 * slurmc.h - the gateway's Slurm client, over libslurm 22.05.
 *
 * One opaque handle talks to one Slurm controller through the process's
 * libslurm.  Every call returns 0 or a negative HB_E* code; Slurm's own
 * codes never leave this module.  A refusal by Slurm is HB_ESLURM with
 * slurm_strerror()'s text in err, except for these, which callers act on:
 *
 *   HB_ENOENT     no such job (ESLURM_INVALID_JOB_ID), no such partition
 *   HB_EPERM      access denied, or a user/group the caller may not use
 *   HB_ESTATE     not possible in the job's state (finished, pending, ...)
 *   HB_EUNAVAIL   slurmctld unreachable (connection, send or receive error)
 *   HB_ETIMEDOUT  slurmctld did not answer in time
 *   HB_ETOOBIG    a string over Slurm's length limit (a comment of 3000
 *                 bytes was refused; "Pathname ... too long")
 *
 * No Slurm structure escapes: everything libslurm allocates is freed with
 * its own free function before the call returns.  Strings handed to
 * callbacks are borrowed until the callback returns.
 *
 * libslurm holds one configuration per process, so every open handle must
 * name the same slurm.conf (HB_ECONFLICT otherwise).  A handle is not safe
 * for concurrent use; give each thread its own, or lock around it.
 * Callbacks must not call into the handle that called them.
 *
 * docs/internals/slurmc.md has the details.
 */
#ifndef HPCBRIDGE_SLURMC_H
#define HPCBRIDGE_SLURMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

struct hb_slurmc;

/* A time limit (minutes) or count with no limit. */
#define HB_SLURMC_INFINITE UINT32_MAX

/*
 * Open a client on slurm_conf (NULL: $SLURM_CONF, else Slurm's default
 * /etc/slurm/slurm.conf).  Never ends the process: libslurm calls exit()
 * on a missing or malformed configuration, so the file is checked first,
 * and the first open in a process loads it in a child process before
 * loading it here.  No controller is contacted.
 *
 * Errors: HB_ENOENT (no such file), HB_EINVAL (not a regular readable
 * file, or libslurm refuses it: err has libslurm's message), HB_ECONFLICT
 * (another handle uses another slurm.conf), HB_ENOMEM.
 * *out is set only on success; close it with hb_slurmc_close().
 */
int hb_slurmc_open(const char *slurm_conf, struct hb_slurmc **out,
		   struct hb_err *err);
/* Close a handle; the last one releases libslurm.  NULL is a no-op. */
void hb_slurmc_close(struct hb_slurmc *c);

/* The slurm.conf a handle uses (borrowed until close). */
const char *hb_slurmc_conf(const struct hb_slurmc *c);

/* ------------------------------------------------------------ submission */

/*
 * A batch job.  Zero-initialise, then set what you need: a zero or NULL
 * member means Slurm's default.  Strings are borrowed for the call.
 */
struct hb_slurmc_submit {
	const char *script;    /* required: the script text, "#!..." */
	const char *name;      /* job name */
	const char *partition; /* partition (comma list allowed) */
	const char *account;
	bool as_user; /* submit as uid/gid, else as the caller's uid
		       * and gid; when uid is not the caller's (root
		       * only), hb_slurmc_submit authenticates the
		       * RPC as uid too (see there) */
	uint32_t uid, gid;
	const char *work_dir; /* default: the caller's working directory */
	/* "NAME=value" strings, NULL-terminated; NULL: only PATH (Slurm
	 * refuses a batch job without an environment) */
	const char *const *env;
	uint32_t time_limit; /* minutes; HB_SLURMC_INFINITE: no limit */
	uint32_t nodes;	     /* exactly this many nodes */
	uint32_t ntasks;
	uint16_t ntasks_per_node;
	uint16_t cpus_per_task;
	uint64_t mem_per_node_mb; /* at most one of these two */
	uint64_t mem_per_cpu_mb;
	/* sbatch --gres syntax, "gpu:a100:2[,...]"; "gres:" is prepended to
	 * each item that lacks it, as sbatch does */
	const char *gres;
	const char *output; /* stdout path (Slurm patterns such as %j) */
	const char *error;  /* stderr path */
	const char *comment;
	const char *admin_comment; /* set right after submission (Slurm takes
				    * it from SlurmUser/root only) */
	bool hold;		   /* submit held (priority 0) */

	/* The rest of what a jobspec can say (hb_slurmc_from_jobspec()). */
	uint32_t nodes_max;	  /* up to this many nodes (0: nodes) */
	bool mem_whole_node;	  /* --mem=0: all of each node's memory */
	uint64_t mem_per_gpu_mb;  /* --mem-per-gpu (not with the two above) */
	const char *gres_per_job;  /* --gpus: gres syntax, as gres */
	const char *gres_per_task; /* --gpus-per-task: gres syntax */
	const char *qos;
	const char *constraint; /* --constraint (Slurm's features) */
	const char *licenses;
	const char *nodelist; /* --nodelist */
	const char *exclude;  /* --exclude */
	bool exclusive;	      /* whole nodes (OverSubscribe=NO) */
	uint32_t time_min;    /* minutes; 0: not given */
	uint64_t begin_time;  /* seconds since the epoch; 0: now */
	uint64_t deadline;    /* seconds since the epoch; 0: none */
	const char *signal;   /* --signal: [{R|B}:]SIG[@seconds] */
	const char *input;    /* stdin path */
	const char *array;    /* --array: "0-15:2,20%4" */
	const char *dependency;
	const char *mail_type; /* --mail-type: "BEGIN,END,..." */
	const char *mail_user;
	uint16_t requeue;	/* HB_SLURMC_REQUEUE_*; 0: Slurm's default */
	const char *container; /* an OCI bundle (an absolute path) */
};

#define HB_SLURMC_REQUEUE_NO  1
#define HB_SLURMC_REQUEUE_YES 2

/*
 * Check a request without Slurm: script present and starting with "#!",
 * environment entries "NAME=value", counts Slurm can carry, one memory
 * kind.  HB_EINVAL, HB_ERANGE or HB_ECONFLICT with a message naming the
 * member.  hb_slurmc_submit() and hb_slurmc_will_run() call it first.
 */
int hb_slurmc_submit_check(const struct hb_slurmc_submit *req,
			   struct hb_err *err);

/* sbatch --gres text to Slurm's tres_per_node form ("gpu:2,mps:10" ->
 * "gres:gpu:2,gres:mps:10") appended to out.  HB_EINVAL for an empty
 * item; out is left as it was on error. */
int hb_slurmc_gres_to_tres(const char *gres, struct hb_buf *out);

struct hb_jobspec;
struct hb_report;

/*
 * Fill req from everything spec says (slurmc_spec.c), field by field from
 * one table with a row per enum hb_field: each field set in spec is
 * carried to its job_desc_msg_t member, or the job is refused with
 * HB_EINVAL (or HB_ERANGE for a count out of Slurm's range) and a message
 * naming the field ("origin: field X: ... cannot be submitted to Slurm").
 * Nothing is left out silently.
 *
 * Set req->script, as_user, uid, gid, and req->env (the environment the
 * job would get, "NAME=value" strings: --export and the job's own
 * variables are applied to it) before the call; work_dir and name are
 * set when spec gives them.  Strings and the new environment live in
 * spec's arena (borrowed until hb_jobspec_free(spec)).  now is the
 * clock for --begin/--deadline ("now+1hour"), utc_offset the local
 * zone's (seconds east of UTC).  rep, when not NULL, gets each set
 * field's fate (mapped, partial, or, on refusal, dropped with the
 * reason; target_kind "Slurm").
 */
int hb_slurmc_from_jobspec(struct hb_jobspec *spec,
			   struct hb_slurmc_submit *req, int64_t now,
			   int32_t utc_offset, struct hb_report *rep,
			   struct hb_err *err);

/* The job_desc_msg_t member(s) that carry jobspec field f (an enum
 * hb_field), "refused" for a field Slurm cannot take, NULL for a value
 * that is not a field (the unit test walks every field). */
const char *hb_slurmc_field_target(int f);

/*
 * Submit a batch job (slurm_submit_batch_job); *job_id gets its id.
 *
 * as_user for a uid other than the caller's: the RPC is made by a child
 * process that has become that user (setgroups to the user's groups from
 * getgrouplist, then setgid, setuid; no core file, not dumpable, only
 * stdin, stdout and stderr open) and then re-executes the calling program
 * (/proc/self/exe HB_SLURMC_CHILD_ARG, with only SLURM_CONF and the
 * sanitizer options in its environment), so that no libslurm call is made
 * in a process forked from a threaded one.  That program must call
 * hb_slurmc_child_main() first thing in main().  It reads the request as
 * JSON on stdin and submits it, so munge authenticates the RPC as the user
 * and Slurm checks RootOnly, AllowGroups, associations, limits and
 * job_submit policies (submit_uid) as for the user's own sbatch.  The
 * child sends the job id or Slurm's error back on its stdout and is
 * reaped here; one that is stopped is killed at once, one that runs over
 * 60 s is killed (HB_ETIMEDOUT).  The job id it answers is accepted only
 * when Slurm shows that job as uid's (HB_EPERM otherwise: the user could
 * have taken the child over).  Blocks: call it from a worker thread.
 * Dropping privileges failing (the caller is not root) is HB_EPERM.
 *
 * admin_comment is then set by this process (root), by job id.  When
 * Slurm refuses to set it after the job was queued, the job stays
 * queued, *job_id is set, and the error is returned (the caller can
 * cancel).
 */
int hb_slurmc_submit(struct hb_slurmc *c, const struct hb_slurmc_submit *req,
		     uint32_t *job_id, struct hb_err *err);

/* The one argument with which hb_slurmc_submit() runs the program again
 * for a submission as another user. */
#define HB_SLURMC_CHILD_ARG "--hb-slurm-submit-child"

/*
 * Call first thing in main() of every program that submits as another
 * user (hb_slurmc_submit() with as_user): -1 when argv is not
 * { any, HB_SLURMC_CHILD_ARG }; otherwise this process is that child:
 * it refuses to run unless its real and effective uid and gid are the
 * request's, reads the request (JSON, at most 32 MiB) on stdin, loads
 * $SLURM_CONF, submits, writes the answer on stdout and ends with
 * _exit() (no atexit handler, no leak check): it does not return.
 */
int hb_slurmc_child_main(int argc, char **argv);

/*
 * When and where a job like req would start if submitted now
 * (slurm_job_will_run2); hold is ignored.  *start gets the expected start
 * time; nodes (may be NULL when nodes_size is 0) gets the node list,
 * NUL-terminated.  A job that can never run there is HB_ESLURM (Slurm's
 * reason in err).  HB_ETOOBIG when the node list does not fit (*start is
 * still set, nodes holds a truncated list).
 */
int hb_slurmc_will_run(struct hb_slurmc *c, const struct hb_slurmc_submit *req,
		       time_t *start, char *nodes, size_t nodes_size,
		       struct hb_err *err);

/* ------------------------------------------------------------------ jobs */

enum hb_slurmc_state {
	HB_SLURMC_PENDING,
	HB_SLURMC_RUNNING,
	HB_SLURMC_SUSPENDED,
	HB_SLURMC_COMPLETE,
	HB_SLURMC_CANCELLED,
	HB_SLURMC_FAILED,
	HB_SLURMC_TIMEOUT,
	HB_SLURMC_NODE_FAIL,
	HB_SLURMC_PREEMPTED,
	HB_SLURMC_BOOT_FAIL,
	HB_SLURMC_DEADLINE,
	HB_SLURMC_OOM,
	HB_SLURMC_UNKNOWN /* a state this build does not know */
};

/* "PENDING", "RUNNING", ... as squeue -o %T prints them; "UNKNOWN" for
 * anything else.  Never NULL. */
const char *hb_slurmc_state_name(enum hb_slurmc_state st);
/* True for every state a job does not leave (COMPLETE and the failures);
 * false for PENDING, RUNNING, SUSPENDED and UNKNOWN. */
bool hb_slurmc_state_final(enum hb_slurmc_state st);
/* Slurm's job_state word (enum job_states | JOB_* flags) to our state;
 * *completing (may be NULL) gets the JOB_COMPLETING flag. */
enum hb_slurmc_state hb_slurmc_state_from_slurm(uint32_t job_state,
						bool *completing);
/* A wait() status as Slurm keeps it in exit_code: *code gets
 * WEXITSTATUS (0 when signalled), *sig WTERMSIG (0 when it exited). */
void hb_slurmc_decode_exit(uint32_t status, int *code, int *sig);

/* GPU types a job's allocation keeps (more is HB_ERANGE). */
#define HB_SLURMC_GPU_TYPES 8

/* GPUs of one type; type "" for GPUs Slurm gives no type. */
struct hb_slurmc_gpu {
	char type[32];
	uint32_t count;
};

/* What a job was allocated, as Slurm's TRES text says it. */
struct hb_slurmc_tres {
	uint32_t cpus;
	uint64_t mem_mib; /* Slurm's "M" is 2^20 bytes */
	uint32_t nodes;
	struct hb_slurmc_gpu gpu[HB_SLURMC_GPU_TYPES];
	uint32_t ngpu;
};

/*
 * Read a TRES string into *out (zeroed first; left as it was on error):
 * either names ("cpu=4,mem=2000M,node=1,billing=4,gres/gpu=1,
 * gres/gpu:a100=1", job_info_t's tres_alloc_str) or slurmdbd's ids
 * ("1=4,2=2000,4=1,5=4": 1 cpu, 2 mem in MB, 4 node).  Memory takes
 * Slurm's units K, M (the default), G, T, P (powers of 1024) and a
 * fraction, rounded up to a whole MiB.  When typed GPUs (gres/gpu:TYPE)
 * appear beside the untyped total (gres/gpu), the typed ones count and
 * the untyped entry keeps only GPUs no type accounts for.  Other TRES
 * (billing, energy, licenses, GRES ids of slurmdbd) are skipped.  NULL
 * or "" is all zeros.  HB_EINVAL (an item not NAME=VALUE, a value that is
 * not a count or amount), HB_ERANGE (a count over 32 bits, more than
 * HB_SLURMC_GPU_TYPES types), HB_ETOOBIG (a type of 32 bytes or more),
 * with err naming the item.
 */
int hb_slurmc_parse_tres(const char *s, struct hb_slurmc_tres *out,
			 struct hb_err *err);

struct hb_slurmc_job {
	uint32_t job_id;
	enum hb_slurmc_state state;
	bool completing; /* ended, epilog still running */
	bool held;	 /* pending with priority 0 */
	bool removed;	 /* poll only: the job left slurmctld's table
			  * (MinJobAge passed); only job_id is set */
	int exit_code;	 /* final states: WEXITSTATUS; else -1 */
	int exit_signal; /* final states: WTERMSIG or 0; else 0 */
	uint32_t user_id;
	time_t submit_time;
	time_t start_time; /* actual, or expected while pending (0:
			    * unknown) */
	time_t end_time;   /* actual, or expected while running */
	const char *name;
	const char *partition;
	const char *nodes;   /* allocated nodes ("" while pending) */
	const char *comment; /* "" when unset, as are the others */
	const char *admin_comment;
	const char *account; /* "" when Slurm gives none */
	/* Its time limit in minutes; -1: none (Slurm's NO_VAL or
	 * INFINITE) */
	int64_t time_limit_min;
	/* why it is pending or ended: Slurm's state_desc when it has one,
	 * else its reason name ("None", "Priority", "JobHeldUser", ...) */
	const char *reason;
	/* What it was allocated (tres_alloc_str; while it is pending, or
	 * when Slurm gives no string, the CPUs and nodes it asks for, and
	 * no memory or GPUs) */
	uint32_t alloc_cpus;
	uint64_t alloc_mem_mib;
	uint32_t alloc_nodes;
	bool exclusive; /* whole nodes (OverSubscribe=NO) */
	struct hb_slurmc_gpu alloc_gpu[HB_SLURMC_GPU_TYPES];
	uint32_t alloc_ngpu;
	/* Seconds it spent suspended before its last resume (while it is
	 * suspended: before its last suspend), so that end - start -
	 * suspended_s is its run time, as sacct's Elapsed */
	int64_t suspended_s;
	struct hb_arena mem; /* hb_slurmc_job() only: owns the strings */
};

/* Called for each job; a non-zero return stops and is returned. */
typedef int (*hb_slurmc_job_cb)(const struct hb_slurmc_job *job, void *arg);

/*
 * Incremental polling.  The handle keeps the time stamp of the last job
 * table it saw and a fingerprint of each job's reported fields.  A poll
 * asks slurmctld for the table only if it changed since then
 * (slurm_load_jobs(update_time)): when Slurm answers "no change", the poll
 * returns 0 at once and calls nothing.  Otherwise cb is called for each
 * job that is new or whose state, exit, times, nodes, comments, hold or
 * reason changed, then once for each job that left the table (removed).
 * The first poll (and the first after hb_slurmc_poll_reset()) reports
 * every job.  cb may be NULL: the poll then only takes the table, so
 * that later polls report changes from now on.
 *
 * When cb returns non-zero the poll stops, returns that value, and the
 * handle forgets this poll: the next one reports every change again,
 * including those already reported (at-least-once).
 */
int hb_slurmc_poll(struct hb_slurmc *c, hb_slurmc_job_cb cb, void *arg,
		   struct hb_err *err);
/* Forget the time stamp and fingerprints: the next poll reports all. */
void hb_slurmc_poll_reset(struct hb_slurmc *c);
/*
 * The queue depth the last job table showed: jobs pending (not held) in
 * partition, a job waiting for several partitions counted in each.  0
 * with *out set; HB_ENOENT (and *out 0) before any poll has taken a table.
 */
int hb_slurmc_pending(const struct hb_slurmc *c, const char *partition,
		      uint32_t *out);

struct hb_slurmc_stats {
	uint64_t polls;		  /* polls that reached slurmctld */
	uint64_t polls_unchanged; /* ... answered "no change in data" */
	uint64_t jobs_reported;	  /* callbacks for new or changed jobs */
	uint64_t jobs_removed;	  /* callbacks for removed jobs */
	size_t jobs_tracked;	  /* jobs in the last table */
	time_t last_update;	  /* slurmctld's stamp of that table */
};
void hb_slurmc_get_stats(const struct hb_slurmc *c,
			 struct hb_slurmc_stats *out);

/*
 * One job (slurm_load_job), into *out; HB_ENOENT when Slurm no longer
 * knows it.  The strings live in out->mem: release them with
 * hb_slurmc_job_clear().  out is untouched on error.
 */
int hb_slurmc_job(struct hb_slurmc *c, uint32_t job_id,
		  struct hb_slurmc_job *out, struct hb_err *err);
void hb_slurmc_job_clear(struct hb_slurmc_job *job);

/* Returned by hb_slurmc_cancel() for a job that had already ended. */
#define HB_SLURMC_DONE 1

/*
 * Cancel (signal 0: SIGKILL, the job ends CANCELLED, as scancel does) or
 * signal a job and all its steps, the batch script included
 * (KILL_FULL_JOB, as scancel --full).  Returns 0, HB_SLURMC_DONE when the
 * job had already ended (not an error), HB_ENOENT for an unknown job, or
 * another error (HB_ESTATE: a pending job cannot take a signal).
 */
int hb_slurmc_cancel(struct hb_slurmc *c, uint32_t job_id, int signal,
		     struct hb_err *err);

/* Set a job's comment (squeue %k), e.g. the phase of a remote run.
 * NULL or "" clears it.  HB_ESTATE once the job has ended. */
int hb_slurmc_set_comment(struct hb_slurmc *c, uint32_t job_id,
			  const char *text, struct hb_err *err);

/* Suspend a running job, or resume a suspended one (scontrol suspend /
 * resume; slurmc_suspend.c): its processes are stopped and its time
 * limit's clock with them.  A job already as asked is 0; HB_ESTATE for
 * one that cannot be (pending, ended), HB_EPERM without SlurmUser's
 * rights; an unknown job is refused (slurmctld 22.05 drops the
 * connection: HB_EUNAVAIL). */
int hb_slurmc_suspend(struct hb_slurmc *c, uint32_t job_id, bool resume,
		      struct hb_err *err);
/*
 * A batch job's script as slurmctld keeps it (scontrol write batch_script;
 * slurm_job_batch_script()), appended to out (up to out->max: HB_ETOOBIG
 * past it).  Only root and SlurmUser may read another user's script:
 * HB_EPERM otherwise; HB_ENOENT for a job Slurm no longer knows, one
 * that is no batch job, or whose script is gone.
 */
int hb_slurmc_batch_script(struct hb_slurmc *c, uint32_t job_id,
			   struct hb_buf *out, struct hb_err *err);
/* Replace a job's admin comment (scontrol show job: AdminComment), which
 * only SlurmUser and root may write. */
int hb_slurmc_set_admin_comment(struct hb_slurmc *c, uint32_t job_id,
				const char *text, struct hb_err *err);

/* ------------------------------------------------ accounting (slurmdbd) */

/* A job as Slurm's accounting recorded it (sacct's view).  Strings are
 * borrowed until the callback returns; "" when unset. */
struct hb_slurmc_acct_job {
	uint32_t job_id;
	const char *user, *account, *partition, *cluster;
	enum hb_slurmc_state state;
	int64_t start_s, end_s; /* Unix seconds; 0: not started, not ended */
	/* sacct's Elapsed: end (now while running) - start - suspended */
	int64_t elapsed_s;
	int64_t suspended_s;
	uint32_t alloc_cpus; /* sacct's AllocCPUS, from tres_alloc_str */
	const char *admin_comment;
};

typedef int (*hb_slurmc_acct_cb)(const struct hb_slurmc_acct_job *j,
				 void *arg);

/*
 * Call cb for each job record slurmdbd holds for this cluster that was
 * eligible before to_s and had not ended before from_s (sacct -S from -E
 * to, without --truncate: start, end and elapsed are the job's own), the
 * last run of a requeued job only, no steps (slurmc_acct.c).  A non-zero
 * return from cb stops and is returned.  Blocks on slurmdbd: call it from
 * a command or a worker thread.  HB_EUNSUP with a message saying which
 * when accounting is not configured (AccountingStorageType is not
 * accounting_storage/slurmdbd) or slurmdbd does not answer; HB_EINVAL for
 * an empty window or a record whose TRES do not parse (err names the job).
 */
int hb_slurmc_acct_jobs(struct hb_slurmc *c, int64_t from_s, int64_t to_s,
			hb_slurmc_acct_cb cb, void *arg, struct hb_err *err);

/* ---------------------------------------------------- partitions, nodes */

enum hb_slurmc_part_state {
	HB_SLURMC_PART_UP,	 /* takes and starts jobs */
	HB_SLURMC_PART_DOWN,	 /* takes jobs, starts none */
	HB_SLURMC_PART_DRAIN,	 /* starts queued jobs, takes no new ones */
	HB_SLURMC_PART_INACTIVE, /* neither */
};
const char *hb_slurmc_part_state_name(enum hb_slurmc_part_state st);

struct hb_slurmc_partition {
	const char *name;
	enum hb_slurmc_part_state state;
	bool is_default;
	uint32_t max_time; /* minutes, HB_SLURMC_INFINITE: none */
	uint32_t total_cpus;
	uint32_t total_nodes;
	const char *nodes; /* hostlist, "" if none */
};
typedef int (*hb_slurmc_part_cb)(const struct hb_slurmc_partition *p,
				 void *arg);
/* Call cb for each partition (hidden ones included), in Slurm's order; a
 * non-zero return from cb stops and is returned. */
int hb_slurmc_partitions(struct hb_slurmc *c, hb_slurmc_part_cb cb, void *arg,
			 struct hb_err *err);

enum hb_slurmc_node_state {
	HB_SLURMC_NODE_UNKNOWN,
	HB_SLURMC_NODE_DOWN,
	HB_SLURMC_NODE_IDLE,
	HB_SLURMC_NODE_ALLOCATED,
	HB_SLURMC_NODE_MIXED,
	HB_SLURMC_NODE_FUTURE,
};
const char *hb_slurmc_node_state_name(enum hb_slurmc_node_state st);

struct hb_slurmc_node {
	const char *name;
	enum hb_slurmc_node_state state; /* the base state */
	bool drain;			 /* DRAIN flag: no new work */
	bool not_responding;		 /* NO_RESPOND flag ("*" in sinfo) */
	/* the state as sinfo -o %T shows it, e.g. "idle", "mixed",
	 * "down*", "drained", "draining" */
	const char *state_text;
	uint32_t cpus;
	uint32_t alloc_cpus;
	uint64_t real_memory_mb;
	uint64_t alloc_memory_mb;
	const char *gres;      /* configured, "" if none */
	const char *gres_used; /* "" if none */
	const char *reason;    /* why down/drained, "" if none */
};
typedef int (*hb_slurmc_node_cb)(const struct hb_slurmc_node *n, void *arg);
/* Call cb for each node; a non-zero return from cb stops and is
 * returned. */
int hb_slurmc_nodes(struct hb_slurmc *c, hb_slurmc_node_cb cb, void *arg,
		    struct hb_err *err);

/* How many of names[0..n) the hostlist ("hb[1-4],gpu7") holds; -1 when
 * it does not parse. */
long hb_slurmc_hostlist_count(const char *hostlist, const char *const *names,
			      size_t n);

/* --------------------------------------------------------------- errors */

/* The HB_E* code for a Slurm or system error number (slurm_get_errno()),
 * as the rest of this module converts it.  0 gives 0. */
int hb_slurmc_errcode(int slurm_errno);

#endif
