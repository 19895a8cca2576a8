/*
 * pbs.h - PBS job scripts, Torque and PBS Pro dialects.
 */
#ifndef HPCBRIDGE_PBS_H
#define HPCBRIDGE_PBS_H

#include <stddef.h>

#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"

/*
 * Parse a PBS script (directives "#PBS ..." before the first command line)
 * into spec, which must be freshly initialised.  argv/argc: qsub options
 * that override the script's, or NULL/0.  The dialect is recognised per
 * directive: Torque "-l nodes=", PBS Pro "-l select=".
 */
int hb_pbs_parse(const char *buf, size_t len, const char *name,
		 const char *const *argv, int argc, struct hb_jobspec *spec,
		 struct hb_err *err);

/* How qsub reads option letter o: 2 it takes a value ("-l RES" or
 * "-lRES"), 1 it is a flag, 0 qsub has no such option. */
int hb_pbs_option_kind(char o);

/* How an array task's files are told apart, after the job id: '-' for
 * Torque's -t (NAME.o123-4), '.' for PBS Pro's -J (NAME.o123.4). */
char hb_pbs_array_sep(const struct hb_jobspec *spec);

/* True if buf looks like a PBS script (#PBS before any #SBATCH). */
int hb_pbs_detect(const char *buf, size_t len);

#endif
