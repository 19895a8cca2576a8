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

/* Slurm durations are units.h's hb_parse_slurm_time() and
 * hb_format_slurm_time(). */

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
 * leap second reads as the next second; a day up to 31 in any month runs
 * into the next month.  0 or HB_EINVAL.  hb_time_rfc3339_parse_flags()
 * with no flags.
 */
int hb_time_rfc3339_parse(const char *s, int64_t *out);

/* Flags of hb_time_rfc3339_parse_flags(), one or the other. */
/* 'T' or 't' between the date and the time, not a blank: JSON Schema's
 * "date-time" (RFC 3339's own grammar). */
#define HB_TIME_STRICT 0x1u
/*
 * What strptime("%Y-%m-%dT%H:%M:%S") then a zone reads: blanks before each
 * number and fewer digits ("2024-5-1T8: 0:00Z"), 'T' only, seconds to 61,
 * a fraction of no digits ("...:00.Z"), an offset's two-digit hours and
 * minutes unbounded ("+99:99").  How the objects of a cluster are read.
 */
#define HB_TIME_LENIENT 0x2u

/* hb_time_rfc3339_parse(), with what flags say; out may be NULL, to check
 * s only. */
int hb_time_rfc3339_parse_flags(const char *s, unsigned flags, int64_t *out);

/* t as "YYYY-MM-DDTHH:MM:SSZ"; out holds 32 bytes.  A year outside 0 to
 * 9999 is written as "%04lld" writes it.  For the years 1000 to 9999, what
 * strftime("%Y-%m-%dT%H:%M:%SZ") of gmtime() writes. */
void hb_time_rfc3339_format(int64_t t, char out[32]);

/* ms milliseconds since the epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ" (the log's
 * timestamps); out holds 32 bytes. */
void hb_time_rfc3339_format_ms(int64_t ms, char out[32]);

/*
 * t as the local "YYYY-MM-DDTHH:MM:SS" of a zone utc_offset seconds east
 * of UTC, with no zone: for the years 0 to 9999, a Slurm date that
 * hb_time_slurm_date() reads back to t with that offset.  out holds 32
 * bytes.  For the years 1000 on, what strftime("%Y-%m-%dT%H:%M:%S") of
 * localtime() writes.
 */
void hb_time_slurm_date_format(int64_t t, int32_t utc_offset, char out[32]);

#endif
