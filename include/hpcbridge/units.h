/*
 * units.h - strict parsers for the numbers, times and sizes jobs are
 * written in.  Each takes a NUL-terminated string, accepts the whole of it
 * or nothing, and returns 0, HB_EINVAL (malformed) or HB_ERANGE (overflow).
 */
#ifndef HPCBRIDGE_UNITS_H
#define HPCBRIDGE_UNITS_H

#include <stdint.h>

/* A time limit of "UNLIMITED" or "INFINITE", in seconds. */
#define HB_TIME_UNLIMITED UINT64_MAX

/* Decimal unsigned integer, no sign, no spaces, at most max. */
int hb_parse_u64(const char *s, uint64_t max, uint64_t *out);
int hb_parse_u32(const char *s, uint32_t *out);

/*
 * Slurm time, as sbatch --time reads it (Slurm's time_str2mins), into
 * seconds: "minutes", "minutes:seconds", "hours:minutes:seconds",
 * "days-hours", "days-hours:minutes", "days-hours:minutes:seconds", and
 * "UNLIMITED"/"INFINITE" (HB_TIME_UNLIMITED).
 */
int hb_parse_slurm_time(const char *s, uint64_t *seconds);

/*
 * PBS walltime into seconds: "[[HH:]MM:]SS" with an optional ".fraction"
 * that is dropped; a bare number is seconds.
 */
int hb_parse_pbs_time(const char *s, uint64_t *seconds);

/*
 * Slurm memory size into MiB: a number with an optional K, M, G or T suffix
 * (case-insensitive, optional trailing B); no suffix means MiB.  K rounds
 * up to whole MiB as Slurm does.
 */
int hb_parse_slurm_size(const char *s, uint64_t *mib);

/*
 * PBS size into bytes: a number with an optional b, w, kb, mb, gb, tb,
 * pb suffix (case-insensitive; k/m/g/t without b also accepted); no suffix
 * means bytes, w means 8-byte words.
 */
int hb_parse_pbs_size(const char *s, uint64_t *bytes);

/* Bytes to MiB, rounding up. */
uint64_t hb_bytes_to_mib(uint64_t bytes);

/* Format seconds as Slurm's [D-]HH:MM:SS; "UNLIMITED" for that value.
 * out must hold 32 bytes. */
void hb_format_slurm_time(uint64_t seconds, char out[32]);

/* Format MiB as a Kubernetes quantity ("512Mi", "4Gi"). out: 32 bytes. */
void hb_format_k8s_mem(uint64_t mib, char out[32]);

/* Parse a Kubernetes quantity into MiB (rounding up) or into milli-units
 * for CPUs.  Accepts the suffixes Kubernetes does. */
int hb_parse_k8s_mem(const char *s, uint64_t *mib);
int hb_parse_k8s_cpu(const char *s, uint64_t *millicpus);
/* The same quantity in whole units (bytes for memory, a count for
 * extended resources such as nvidia.com/gpu), rounding up. */
int hb_parse_k8s_units(const char *s, uint64_t *out);

#endif
