/*
 * fidelity.h - what became of each directive in a translation.
 *
 * An emitter records, per jobspec field, the fate it gave that field on
 * its target: mapped to a manifest path, carried in an annotation only so
 * that the reverse translation recovers it, or dropped with a reason.  The
 * report then walks the directives the parser read, in order, and prints
 * each one with its line and the fates of the fields it set.  A field that
 * was set but has no recorded fate is reported as dropped ("no mapping"),
 * so nothing is ever dropped silently.
 */
#ifndef HPCBRIDGE_FIDELITY_H
#define HPCBRIDGE_FIDELITY_H

#include <stdbool.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/jobspec.h"

enum hb_fate_kind {
	HB_FATE_NONE = 0,  /* not recorded */
	HB_FATE_MAPPED,	   /* carried by a real field of the target */
	HB_FATE_CARRIED,   /* kept in an annotation/comment; no effect */
	HB_FATE_PARTIAL,   /* mapped with a loss the note explains */
	HB_FATE_DROPPED,   /* not carried; the note says why */
	HB_FATE_OVERRIDDEN, /* report only: a later directive set the field
			     * again (Slurm's and qsub's "last one wins") */
	HB__FATE_COUNT
};

struct hb_fate {
	uint8_t kind;	    /* enum hb_fate_kind */
	const char *target; /* manifest path or "#SBATCH --x", or NULL */
	const char *note;   /* why / how, or NULL */
};

struct hb_report {
	struct hb_arena arena;
	const char *target_kind; /* "MPIJob", "TrainJob", "sbatch" */
	/* Set after hb_report_init() when the report will not be printed:
	 * fates then keep their kind and target but no note (none is
	 * formatted); hb_report_counts() is unaffected.  Warnings are
	 * always kept. */
	bool no_notes;
	struct hb_fate fate[HB__F_COUNT];
	const char **warnings;	 /* translation-wide remarks */
	uint32_t nwarnings, capwarnings;
};

void hb_report_init(struct hb_report *r, const char *target_kind);
void hb_report_free(struct hb_report *r);

/* Record field f's fate; strings are copied (the note only when the
 * report keeps notes).  Later calls override. */
void hb_report_fate(struct hb_report *r, enum hb_field f,
		    enum hb_fate_kind kind, const char *target,
		    const char *note_fmt, ...)
	__attribute__((format(printf, 5, 6)));
void hb_report_warn(struct hb_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

const char *hb_fate_name(enum hb_fate_kind k); /* "mapped", ... */

/* Human-readable report: one line per directive, "FILE:LINE  TEXT  ->
 * fate target (note)", then fields set by defaults or derivation, then
 * warnings. */
int hb_report_write_text(const struct hb_jobspec *spec,
			 const struct hb_report *r, struct hb_buf *out);

/* How many report entries have each fate: counts[HB_FATE_MAPPED] etc.
 * Entries with no recorded fate count as dropped. */
void hb_report_counts(const struct hb_jobspec *spec,
		      const struct hb_report *r,
		      unsigned counts[HB__FATE_COUNT]);

/* The same as a cJSON object (caller frees with cJSON_Delete). */
struct cJSON *hb_report_to_json(const struct hb_jobspec *spec,
				const struct hb_report *r);

#endif
