/*
 * sbatch.h - sbatch scripts, read exactly as Slurm 22.05's sbatch reads
 * them, and written so that real sbatch accepts them.
 */
#ifndef HPCBRIDGE_SBATCH_H
#define HPCBRIDGE_SBATCH_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/error.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"

/* Largest script accepted, as Slurm's default max_script_size. */
#define HB_SCRIPT_MAX (4u * 1024 * 1024)

/*
 * Where options come from besides the script.  Precedence follows sbatch:
 * #SBATCH lines, then SBATCH_* environment variables, then command-line
 * options; a later source overrides an earlier one field by field.
 * envp: NULL-terminated "NAME=VALUE" strings, or NULL.
 * argv/argc: sbatch options only (no program name, no script), or NULL/0.
 */
struct hb_sbatch_opts {
	const char *const *envp;
	const char *const *argv;
	int argc;
};

/*
 * Parse an sbatch script of len bytes (need not be NUL-terminated) named
 * name into spec, which must be freshly initialised.  opts may be NULL.
 * On error spec holds whatever was read so far (free it) and err says
 * "NAME:LINE: message".
 */
int hb_sbatch_parse(const char *buf, size_t len, const char *name,
		    const struct hb_sbatch_opts *opts, struct hb_jobspec *spec,
		    struct hb_err *err);

/* True if buf looks like an sbatch script (a #SBATCH directive before the
 * first command line). */
int hb_sbatch_detect(const char *buf, size_t len);

/*
 * Write spec as an sbatch script: the interpreter line, one #SBATCH line
 * per field that sbatch can express, then the original body unchanged
 * (without its own #SBATCH/#PBS header lines).
 * rep (may be NULL) receives each field's fate: MAPPED to its "#SBATCH
 * --option" when sbatch can express it, DROPPED with the reason when not.
 */
int hb_sbatch_emit(const struct hb_jobspec *spec, struct hb_buf *out,
		   struct hb_report *rep, struct hb_err *err);

/*
 * Whether array task index task is one of array_spec, an --array value
 * as sbatch reads it ("0-15:2,20%4"; "[1-3]" as slurmctld writes it).
 * 0 for a spec sbatch would refuse, and for NULL.
 */
int hb_sbatch_array_has(const char *array_spec, uint32_t task);

#endif
