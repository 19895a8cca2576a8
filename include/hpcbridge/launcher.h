/*
 * launcher.h - the launcher script that runs an unchanged job script in a
 * Kubernetes launcher pod.
 *
 * The script is a POSIX sh program, meant as the argument of `sh -c` in
 * the MPIJob's launcher container.  Its preamble reads the MPI Operator's
 * hostfile (/etc/mpi/hostfile, or $HPCBRIDGE_HOSTFILE), exports the
 * SLURM_* and PBS_* variables job scripts rely on, writes $PBS_NODEFILE,
 * puts srun/mpirun/mpiexec (and scontrol, module) wrappers first on PATH so
 * that launch lines use the hostfile, forwards NCCL_* and similar settings
 * to every rank, then writes the original script, byte for byte, between
 * heredoc markers and execs it with its own interpreter, so the launcher's
 * exit code is the script's.  docs/internals/launcher.md has the details.
 *
 * The text contains $(...) command substitutions: a caller that puts it
 * in a Kubernetes command or args must escape them against Kubernetes'
 * $(VAR) expansion ($$).
 */
#ifndef HPCBRIDGE_LAUNCHER_H
#define HPCBRIDGE_LAUNCHER_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"

#define HB_LAUNCHER_HOSTFILE "/etc/mpi/hostfile"
/* Largest launcher script: one exec argument (Linux MAX_ARG_STRLEN).  A
 * script's length is always below this, so it fits with its NUL. */
#define HB_LAUNCHER_MAX (128u * 1024)

/*
 * Append the launcher script for spec to out.  job_id names the job in
 * SLURM_JOB_ID/PBS_JOBID.  array_index < 0: not an array element; else it
 * must be one of spec's array indices (any index when spec has none), and
 * SLURM_ARRAY_* / PBS_ARRAYID / PBS_ARRAY_INDEX are set.
 *
 * Errors, with a message in err naming spec->source_name:
 *   HB_ETOOBIG  the script would reach HB_LAUNCHER_MAX (names the sizes)
 *   HB_EINVAL   no script or job id, a NUL in the script, an environment
 *               name a shell cannot set, an index outside the array
 *   HB_ERANGE   the job's counts overflow (hb_jobspec_shape)
 * On error out is left as it was.
 */
int hb_launcher_script(const struct hb_jobspec *spec, const char *job_id,
		       int64_t array_index, struct hb_buf *out,
		       struct hb_err *err);

/*
 * The runtime: the fixed part of every launcher script (hostfile parsing,
 * the SLURM_* and PBS_* variables, the srun, mpirun and mpiexec wrappers).
 * It can travel inline in each launcher script, or once per namespace in a
 * ConfigMap named hb_launcher_runtime_name() whose key
 * HB_LAUNCHER_RUNTIME_KEY is mounted at HB_LAUNCHER_RUNTIME_DIR in the
 * launcher pod.  The name carries a hash of the text, so a new release's
 * runtime never replaces the one running jobs read.
 */
#define HB_LAUNCHER_RUNTIME_DIR "/opt/hpcbridge/launcher"
#define HB_LAUNCHER_RUNTIME_KEY "runtime.sh"

/* The runtime's text (static; *len gets its length). */
const char *hb_launcher_runtime(size_t *len);
/* "hpcbridge-launcher-<8 hex digits>" (static). */
const char *hb_launcher_runtime_name(void);

/*
 * As hb_launcher_script(), which is hb_launcher_script_ex(..., false, ...).
 * mounted: read the runtime from the mounted ConfigMap instead of carrying
 * it inline (${HPCBRIDGE_RUNTIME} overrides the path, for tests).  A
 * mounted launcher script is about 19 KiB smaller.
 */
int hb_launcher_script_ex(const struct hb_jobspec *spec, const char *job_id,
			  int64_t array_index, bool mounted,
			  struct hb_buf *out, struct hb_err *err);

/*
 * Find the original script inside a launcher script written by
 * hb_launcher_script() (after any Kubernetes escaping is undone).  On
 * success *body points into text (borrowed, not NUL-terminated at *len)
 * and *len is its length.  HB_ENOENT if text is not one of ours.
 */
int hb_launcher_extract(const char *text, const char **body, size_t *len);

#endif
