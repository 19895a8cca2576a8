/*
 * launcher.h - the launcher script that runs an unchanged job script in a
 * Kubernetes launcher pod.
 *
 * The script is a POSIX sh program.  Its preamble reads the MPI Operator's
 * hostfile (/etc/mpi/hostfile), exports the SLURM_* and PBS_* variables job
 * scripts rely on, writes $PBS_NODEFILE, puts srun/mpirun/mpiexec wrappers
 * first on PATH so that launch lines use the hostfile, forwards NCCL_* and
 * similar settings to every rank, then writes the original script,
 * byte for byte, between heredoc markers and runs it with its own
 * interpreter.
 */
#ifndef HPCBRIDGE_LAUNCHER_H
#define HPCBRIDGE_LAUNCHER_H

#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"

#define HB_LAUNCHER_HOSTFILE "/etc/mpi/hostfile"
/* Largest launcher script: one exec argument (Linux MAX_ARG_STRLEN). */
#define HB_LAUNCHER_MAX (128u * 1024)

/* Append the launcher script for spec; job_id names the job in
 * SLURM_JOB_ID/PBS_JOBID.  array_index < 0: not an array element. */
int hb_launcher_script(const struct hb_jobspec *spec, const char *job_id,
		       int64_t array_index, struct hb_buf *out,
		       struct hb_err *err);

/*
 * Find the original script inside a launcher script written by
 * hb_launcher_script().  On success *body points into text and *len is
 * its length.  HB_ENOENT if text is not one of ours.
 */
int hb_launcher_extract(const char *text, const char **body, size_t *len);

#endif
