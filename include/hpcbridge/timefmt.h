/*
 * timefmt.h - the times jobs and documents are written in: Slurm
 * durations (--time), Slurm dates and times (--begin, --deadline) and RFC
 * 3339 instants.  Every parser takes a NUL-terminated string and accepts
 * the whole of it or nothing.  Instants are seconds since the epoch, UTC;
 * the calendar under them is hb_days_from_civil() of units.h.
 */
#ifndef HPCBRIDGE_TIMEFMT_H
#define HPCBRIDGE_TIMEFMT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A Slurm duration, as sbatch --time reads it (time_str2mins): "M",
 * "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S", "UNLIMITED", "INFINITE" and
 * "-1" (HB_TIME_UNLIMITED), into seconds rounded up to whole minutes.  0,
 * HB_EINVAL or HB_ERANGE.  The same as hb_parse_slurm_time() (units.h).
 */
int hb_time_slurm_duration_parse(const char *s, uint64_t *seconds);

/* Seconds as Slurm writes a duration, "[D-]HH:MM:SS", or "UNLIMITED";
 * out holds 32 bytes.  The same as hb_format_slurm_time() (units.h). */
void hb_time_slurm_duration_format(uint64_t seconds, char out[32]);

/*
 * Whether Slurm 22.05's parse_time() reads a date or time from s: the
 * check sbatch makes on --begin and --deadline.  Forms: today, tomorrow,
 * midnight, noon, fika, teatime, now[{+|-}N[units]], HH:MM[:SS] [AM|PM],
 * MMDD[YY], MM/DD[/YY], MM.DD[.YY], YYYY-MM-DD[THH:MM[:SS]], uts<epoch>,
 * and, as Slurm reads them, several of these in a row ("tomorrow 10:00").
 */
bool hb_time_slurm_date_ok(const char *s);

/*
 * The instant a Slurm date or time names, for a clock that reads now and
 * a zone utc_offset seconds east of UTC.  One form per value: uts<epoch>,
 * now[ ][{+|-}[ ]N[ ][units]], today, tomorrow, midnight, noon, fika,
 * teatime, YYYY-MM-DD[THH[:MM[:SS]]], HH:MM[:SS][ ][AM|PM] (tomorrow when
 * already past), MM/DD[/YY], MM.DD[.YY], MMDD[YY], each of the last three
 * with an optional -HH:MM[:SS] or THH:MM[:SS].  0 or HB_EINVAL.
 *
 * Not the same set as hb_time_slurm_date_ok(): it reads one form only
 * (Slurm also takes "tomorrow 10:00"), and takes "YYYY-MM-DDTHH", which
 * Slurm refuses.  See docs/internals/timefmt.md.
 */
int hb_time_slurm_date(const char *s, int64_t now, int32_t utc_offset,
		       int64_t *out);

/*
 * An RFC 3339 date-time, "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)";
 * 't' or ' ' may stand for 'T', 'z' for 'Z'; the fraction is dropped; a
 * leap second reads as the next second.  0 or HB_EINVAL.
 */
int hb_time_rfc3339_parse(const char *s, int64_t *out);

/* t as "YYYY-MM-DDTHH:MM:SSZ"; out holds 32 bytes.  A year outside 0 to
 * 9999 is written as "%04lld" writes it. */
void hb_time_rfc3339_format(int64_t t, char out[32]);

#endif
