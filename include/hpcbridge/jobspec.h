/*
 * jobspec.h - the canonical job model.
 *
 * One structure describes a job whatever it came from: an sbatch script, a PBS
 * script, an MPIJob or a TrainJob manifest.  Parsers fill it, emitters read
 * it.  Every field remembers where its value came from (struct hb_prov),
 * and every directive a parser read is listed in spec->directives, so the
 * fidelity report can say what became of each one.
 *
 * Memory: every string and array a jobspec points to lives in spec->arena.
 * hb_jobspec_free() releases all of it.  Strings are NUL-terminated; NULL
 * means "not given".  Numbers use 0 for "not given" unless said otherwise.
 */
#ifndef HPCBRIDGE_JOBSPEC_H
#define HPCBRIDGE_JOBSPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/units.h" /* HB_TIME_UNLIMITED */

/* Field identifiers: one per thing a job can say.  Used for provenance and for
 * the fidelity report.  Keep hb_field_name() in step. */
enum hb_field {
	HB_F_NAME,
	HB_F_USER,
	HB_F_ACCOUNT,
	HB_F_PARTITION,
	HB_F_QOS,
	HB_F_COMMENT,
	HB_F_NODES,
	HB_F_NTASKS,
	HB_F_NTASKS_PER_NODE,
	HB_F_CPUS_PER_TASK,
	HB_F_MEM,
	HB_F_GPUS,
	HB_F_LICENSES,
	HB_F_EXCLUSIVE,
	HB_F_CONSTRAINT,
	HB_F_NODELIST,
	HB_F_EXCLUDE,
	HB_F_TIME_LIMIT,
	HB_F_TIME_MIN,
	HB_F_BEGIN,
	HB_F_DEADLINE,
	HB_F_SIGNAL,
	HB_F_OUTPUT,
	HB_F_ERROR,
	HB_F_INPUT,
	HB_F_CHDIR,
	HB_F_ARRAY,
	HB_F_DEPENDENCY,
	HB_F_MAIL_TYPE,
	HB_F_MAIL_USER,
	HB_F_REQUEUE,
	HB_F_EXPORT,
	HB_F_ENV,
	HB_F_MPI,
	HB_F_CONTAINER,
	HB_F_CHECKPOINT,
	HB_F_DATA,
	HB_F_SCRIPT,
	HB_F_KEEP,	 /* PBS -k: where to keep output (no Slurm twin) */
	HB_F_HETEROGENEOUS, /* PBS Pro multi-chunk select */
	HB_F_FABRIC,	 /* the network the ranks need (fabric, fabric_why) */
	HB__F_COUNT
};

/* Stable lower-case name of a field ("ntasks_per_node"); NULL if unknown. */
const char *hb_field_name(enum hb_field f);

/* Provenance: where a field's value came from.  ("Origin" means only a
 * job created on Kubernetes, gateway/daemon/origin.c.) */
enum hb_prov_kind {
	HB_PROV_NONE = 0, /* not set */
	HB_PROV_FILE,	  /* a directive in the script: line is its line */
	HB_PROV_ENV,	  /* an environment variable (SBATCH_*) */
	HB_PROV_CLI,	  /* a command-line option: line is argv index */
	HB_PROV_MANIFEST, /* a manifest field: line is its line (YAML) or 0 */
	HB_PROV_DERIVED	  /* computed from other fields */
};

struct hb_prov {
	uint8_t kind;  /* enum hb_prov_kind */
	uint32_t line;
};

/* What a script or manifest came from. */
enum hb_source_kind {
	HB_SRC_UNKNOWN = 0,
	HB_SRC_SBATCH,
	HB_SRC_PBS,
	HB_SRC_MPIJOB,
	HB_SRC_TRAINJOB
};

enum hb_mem_kind {
	HB_MEM_NONE = 0,
	HB_MEM_PER_NODE,   /* --mem, PBS Pro select mem (per chunk) */
	HB_MEM_PER_CPU,	   /* --mem-per-cpu */
	HB_MEM_PER_GPU,	   /* --mem-per-gpu */
	HB_MEM_JOB,	   /* Torque -l mem: job-wide total */
	HB_MEM_PER_PROCESS /* Torque -l pmem: per process (task) */
};

enum hb_mpi_impl {
	HB_MPI_UNKNOWN = 0,
	HB_MPI_OPENMPI,
	HB_MPI_INTEL,
	HB_MPI_MPICH,
	HB_MPI_MVAPICH2
};

/* "OpenMPI", "Intel", "MPICH", "MVAPICH2", or NULL for unknown. */
const char *hb_mpi_impl_name(enum hb_mpi_impl m);
/* The implementation named name (hb_mpi_impl_name()'s words), or
 * HB_MPI_UNKNOWN. */
enum hb_mpi_impl hb_mpi_impl_parse(const char *name);
/*
 * The implementation whose launcher and ABI m shares, among the three the
 * MPI Operator knows (OpenMPI, Intel, MPICH): MVAPICH2 is an MPICH
 * derivative (Hydra's mpiexec, the MPICH ABI), so it runs as MPICH.
 * Others are returned as they are.
 */
enum hb_mpi_impl hb_mpi_family(enum hb_mpi_impl m);
/* Whether a program built against a runs against b's library: the same
 * implementation, or two members of the MPICH ABI Compatibility
 * Initiative (MPICH, Intel MPI, MVAPICH2).  Unknown is compatible. */
bool hb_mpi_abi_compatible(enum hb_mpi_impl a, enum hb_mpi_impl b);

/* The network the job's ranks talk over (translators/fabric.c). */
enum hb_fabric {
	HB_FABRIC_AUTO = 0, /* not said: placement's rules decide */
	HB_FABRIC_TCP,	    /* TCP (or the job turned RDMA off) */
	HB_FABRIC_RDMA	    /* InfiniBand or RoCE: a side without it cannot
			       run the job */
};

/* Longest fabric_why kept: what said so is quoted, not stored whole. */
#define HB_FABRIC_WHY_MAX 256

/* "auto", "tcp", "rdma"; NULL past the last. */
const char *hb_fabric_name(enum hb_fabric f);
/* The fabric named s ("auto", "tcp", "rdma", any case), or -1. */
int hb_fabric_parse(const char *s);

enum hb_directive_kind {
	HB_DIR_SBATCH = 1, /* #SBATCH line, SBATCH_* variable or sbatch flag */
	HB_DIR_PBS,	   /* #PBS line or qsub flag */
	HB_DIR_MANIFEST,   /* a manifest field */
	HB_DIR_SCRIPT	   /* something read from the script body */
};

/*
 * One directive as the user wrote it, e.g. "--mem=4G" at job.sh:5.  A
 * directive that set several fields lists them all.
 */
#define HB_DIRECTIVE_MAX_FIELDS 12
struct hb_directive {
	uint8_t kind;		  /* enum hb_directive_kind */
	struct hb_prov prov;  /* where it was written */
	const char *text;	  /* the option and its argument, as written */
	uint8_t nfields;
	uint8_t fields[HB_DIRECTIVE_MAX_FIELDS]; /* enum hb_field */
	const char *note;	  /* parser's remark (e.g. "overridden"), or NULL */
};

/* A GPU request: count GPUs per job, per node or per task. */
enum hb_gpu_scope {
	HB_GPU_NONE = 0,
	HB_GPU_PER_JOB,	  /* --gpus, PBS select total */
	HB_GPU_PER_NODE,  /* --gres=gpu:N, --gpus-per-node, Torque gpus= */
	HB_GPU_PER_TASK	  /* --gpus-per-task */
};

/* One array index range: start..end step step (step >= 1). */
struct hb_range {
	uint32_t start, end, step;
};

/* One PBS Pro select chunk: count nodes of this shape. */
struct hb_chunk {
	uint32_t count, ncpus, mpiprocs, ompthreads, ngpus;
	uint64_t mem_mb;
};

/* NAME=VALUE (value NULL: pass NAME through from the submit environment). */
struct hb_env {
	const char *name;
	const char *value;
};

struct hb_env_index; /* private to jobspec.c */

struct hb_jobspec {
	struct hb_arena arena;
	uint8_t source;		/* enum hb_source_kind */
	const char *source_name; /* file name for messages ("job.sh", "-") */
	struct hb_prov prov[HB__F_COUNT];

	/* Identity */
	const char *name, *user, *account, *partition, *qos, *comment;
	/* Who the job's pods run as: the user's uid, primary gid and
	 * groups (sorted, no duplicates, in the arena).  The daemon fills
	 * them from the passwd and group entries when the job bursts
	 * (hb_jobspec_set_identity); -1: not known, as in a translation
	 * outside the daemon. */
	int64_t run_uid, run_gid;
	uint32_t *run_groups;
	uint32_t nrun_groups;

	/* Resources.  nodes_min/nodes_max 0: not given. */
	uint32_t nodes_min, nodes_max;
	uint32_t ntasks, ntasks_per_node, cpus_per_task;
	uint8_t mem_kind;	/* enum hb_mem_kind */
	uint64_t mem_mb;	/* MiB; 0 with mem_kind PER_NODE = whole node */
	uint8_t gpu_scope;	/* enum hb_gpu_scope */
	uint32_t gpus;
	const char *gpu_type;	/* "a100", or NULL */
	const char *licenses, *constraint, *nodelist, *exclude;
	bool exclusive;
	struct hb_chunk *chunks; /* PBS Pro select chunks, when more than one */
	uint32_t nchunks;

	/* Time, in seconds.  HB_TIME_UNLIMITED for UNLIMITED/INFINITE. */
	uint64_t time_limit, time_min;
	const char *begin, *deadline; /* as written: Slurm time specs */
	const char *signal;	     /* [{R|B}:]num[@time], as written */

	/* I/O patterns, as written (%j etc. are kept). */
	const char *output, *error, *input, *chdir;
	bool join_output;	/* PBS -j oe: stderr joins stdout */
	const char *keep;	/* PBS -k argument */

	/* Arrays */
	const char *array;	/* as written */
	struct hb_range *array_ranges;
	uint32_t narray_ranges;
	uint32_t array_max_running; /* %N, 0: no limit */

	/* Other */
	const char *dependency;	/* Slurm syntax (PBS converted) */
	const char *mail_type;	/* Slurm syntax: BEGIN,END,FAIL,... */
	const char *mail_user;
	int8_t requeue;		/* -1 not given, 0 no, 1 yes */
	const char *export_spec; /* --export / -v as written (Slurm form) */
	bool export_all;	/* PBS -V */
	struct hb_env *env;	/* variables the job sets (NCCL_*, -v) */
	uint32_t nenv;
	struct hb_env_index *env_index; /* names -> env (jobspec.c only) */
	uint8_t mpi;		/* enum hb_mpi_impl */
	const char **mpi_lines; /* srun/mpirun/mpiexec lines in the body */
	uint32_t nmpi_lines;
	uint8_t fabric;		/* enum hb_fabric */
	const char *fabric_why; /* what said so, as the user wrote it
				   ("--hpcbridge-fabric=rdma",
				   "UCX_NET_DEVICES=mlx5_0:1"), or NULL */
	bool fabric_inferred;	/* read from the variables the script sets,
				   not asked for in words: placement holds
				   it only for a multi-node job */
	const char **modules;	/* module load names in the body */
	uint32_t nmodules;
	const char *container;	/* --container or an image */
	const char *checkpoint_dir;
	const char **data;	/* data inputs: paths or s3:// URLs */
	uint32_t ndata;

	const char *script;	/* the whole script, unchanged */
	uint32_t script_len;
	const char *interpreter; /* from the shebang, e.g. "/bin/bash" */

	/* Directives read, in order. */
	struct hb_directive *directives;
	uint32_t ndirectives, cap_directives;
};

/* Initialise an empty jobspec (run_uid and run_gid -1: unknown). */
void hb_jobspec_init(struct hb_jobspec *spec, const char *source_name);
/* Release everything the jobspec owns.  Safe on a zeroed struct. */
void hb_jobspec_free(struct hb_jobspec *spec);

/*
 * Set who the job runs as: uid and gid (-1: unknown; otherwise at most
 * 4294967294) and the n groups (copied into the arena, sorted, duplicates
 * dropped; NULL with n 0: none).  HB_EINVAL for an out-of-range id,
 * HB_ENOMEM.  On error the identity is left as it was.
 */
int hb_jobspec_set_identity(struct hb_jobspec *spec, int64_t uid, int64_t gid,
			    const uint32_t *groups, uint32_t n);

/* Copy a string into the jobspec's arena.  NULL on ENOMEM. */
char *hb_jobspec_strdup(struct hb_jobspec *spec, const char *s);
char *hb_jobspec_strndup(struct hb_jobspec *spec, const char *s, size_t n);

/* Mark field f as set from provenance o. */
void hb_jobspec_set_prov(struct hb_jobspec *spec, enum hb_field f,
			   struct hb_prov o);
static inline bool hb_jobspec_has(const struct hb_jobspec *spec,
				  enum hb_field f)
{
	return spec->prov[f].kind != HB_PROV_NONE;
}

/* Append a directive; text is copied.  Returns a pointer into
 * spec->directives (valid until the next append) or NULL on ENOMEM. */
struct hb_directive *hb_jobspec_add_directive(struct hb_jobspec *spec,
					      enum hb_directive_kind kind,
					      struct hb_prov prov,
					      const char *text, size_t len);
/* Record that directive d set field f. */
void hb_directive_add_field(struct hb_directive *d, enum hb_field f);

/*
 * Set variable name to value (NULL: pass it through), strings copied.  A
 * name already in spec->env keeps its place and takes the new value (a
 * later assignment wins); a new name is appended.  Linear overall: past a
 * few names, an index of them in the arena (a keyed hash, so a script
 * cannot pick colliding names) finds the earlier one.  Callers may reorder
 * or remove entries of spec->env in place, but not rename them: the index
 * notices and rebuilds itself.  HB_ENOMEM when the arena is full.
 */
int hb_jobspec_add_env(struct hb_jobspec *spec, const char *name,
		       const char *value);
/* Append to the data, module and MPI line lists (strings copied). */
int hb_jobspec_add_data(struct hb_jobspec *spec, const char *path);
int hb_jobspec_add_module(struct hb_jobspec *spec, const char *name);
int hb_jobspec_add_mpi_line(struct hb_jobspec *spec, const char *line);

/*
 * Derived shape, the same for every emitter:
 *   nodes           nodes_min, else ceil(ntasks / ntasks_per_node) when
 *                   both are given (what Slurm allocates), else 1
 *   tasks_per_node  ntasks_per_node, else ceil(ntasks / nodes), else 1
 *   ntasks          ntasks, else nodes * tasks_per_node
 *   cpus_per_task   cpus_per_task, else 1
 *   gpus_per_node   GPUs each node needs, whatever the request's scope
 *   mem_per_node_mb memory each node needs (0: unknown or whole node)
 * Returns HB_ERANGE when a product overflows.
 */
struct hb_shape {
	uint32_t nodes, tasks_per_node, ntasks, cpus_per_task;
	uint32_t cpus_per_node, gpus_per_node;
	uint64_t mem_per_node_mb;
	bool whole_node_mem;
};
int hb_jobspec_shape(const struct hb_jobspec *spec, struct hb_shape *out);

/* Number of array indices (0: not an array), capped at UINT32_MAX. */
uint64_t hb_jobspec_array_count(const struct hb_jobspec *spec);
/* The i-th array index in order (i < count). */
uint32_t hb_jobspec_array_index(const struct hb_jobspec *spec, uint64_t i);

/* Scan spec->script's body for module loads, MPI launch lines, the MPI
 * implementation and exported NCCL_/UCX_/OMPI_ variables, then settle the
 * fabric (hb_jobspec_settle_fabric()).  Parsers call it after they have
 * read the directives. */
int hb_jobspec_scan_body(struct hb_jobspec *spec, struct hb_err *err);

/*
 * Settle spec->fabric when no option said it (an explicit
 * --hpcbridge-fabric or a fabric set before always wins): from the
 * variables the script sets (spec->env: UCX_NET_DEVICES naming an RDMA
 * device, NCCL_IB_HCA, OMPI_MCA_btl, UCX_TLS, FI_PROVIDER, MV2_*, and
 * NCCL_IB_DISABLE=1 or a TCP-only transport list for TCP), then from a
 * --constraint naming ib, infiniband, rdma or roce.  fabric_why says
 * what decided, as the user wrote it, with its place ("UCX_NET_DEVICES=
 * mlx5_0:1 at job.sh:7").  HB_ENOMEM only.
 */
int hb_jobspec_settle_fabric(struct hb_jobspec *spec);

/*
 * Settle the fabric of a jobspec built without its script (the Slurm
 * plugin's, from the job description): its --constraint, else the
 * variables script sets, read in a scratch jobspec so that nothing else
 * of the body lands in spec.  A fabric already set is kept.  HB_ENOMEM.
 */
int hb_jobspec_fabric_from_script(struct hb_jobspec *spec, const char *script);

/*
 * Set the fabric from an option's value v ("rdma", "tcp", "auto", any
 * case) given at o, as written in text ("--hpcbridge-fabric=rdma").
 * HB_EINVAL for another value; HB_ENOMEM.
 */
int hb_jobspec_set_fabric(struct hb_jobspec *spec, const char *v,
			  const char *text, struct hb_prov o);

/*
 * The known disagreements between the job's MPI and what it runs on (its
 * image's MPI and ABI, the hostfile syntax its launcher reads), each said
 * in one line to fn (translators/mpi_compat.c).  Stops at, and returns,
 * fn's first non-zero return; 0 otherwise.
 */
int hb_mpi_warnings(const struct hb_jobspec *spec,
		    int (*fn)(void *ctx, const char *msg), void *ctx);

/* The implementation an image reference names ("mpioperator/openmpi:0.5",
 * "intel/oneapi-hpckit", "mvapich2:2.3"), or HB_MPI_UNKNOWN. */
enum hb_mpi_impl hb_mpi_from_image(const char *image);

#endif
