/*
 * translate.h - detect what a buffer holds and parse it into a jobspec.
 */
#ifndef HPCBRIDGE_TRANSLATE_H
#define HPCBRIDGE_TRANSLATE_H

#include <stddef.h>

#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/sbatch.h"

/* What buf holds: HB_SRC_SBATCH, _PBS, _MPIJOB, _TRAINJOB, or
 * HB_SRC_UNKNOWN.  A script with neither #SBATCH nor #PBS lines is read as
 * sbatch, as sbatch would. */
enum hb_source_kind hb_detect(const char *buf, size_t len);

/* Parse buf, of whatever kind it is, into a freshly initialised spec.
 * opts apply to sbatch (environment, options) and, for argv, to PBS. */
int hb_parse_any(const char *buf, size_t len, const char *name,
		 const struct hb_sbatch_opts *opts, struct hb_jobspec *spec,
		 struct hb_err *err);

/* The jobspec as JSON (the "--to jobspec" output), and back. */
struct cJSON *hb_jobspec_to_json(const struct hb_jobspec *spec);
int hb_jobspec_from_json(const struct cJSON *doc, struct hb_jobspec *spec,
			 struct hb_err *err);

#endif
