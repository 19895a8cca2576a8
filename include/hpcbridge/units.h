/*
 * units.h - strict parsers for the numbers, times and sizes jobs are
 * written in.  Each takes a NUL-terminated string, accepts the whole of it
 * or nothing, and returns 0, HB_EINVAL (malformed) or HB_ERANGE (overflow).
 */
#ifndef HPCBRIDGE_UNITS_H
#define HPCBRIDGE_UNITS_H

#include <stdbool.h>
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

/* ---- Quantities as people write them (placement policies, snapshots) */

/* Largest duration and size the parsers below accept. */
#define HB_DURATION_MAX (100LL * 366 * 86400) /* 100 years */
#define HB_SIZE_MAX	(1ULL << 62)	      /* 4 EiB */

/* Each accepts the whole string or fails with HB_EINVAL (malformed) or
 * HB_ERANGE (too large), leaving *out alone. */

/* A decimal number, not negative, with at most decimals digits after
 * the point and 18 in all, counted in units of 10^-decimals: "212.40"
 * with 6 decimals is 212400000.  At most max. */
int hb_parse_decimal(const char *s, unsigned decimals, uint64_t max,
		     uint64_t *out);
/* "90s", "11m", "6h10m", "1d12h", "2w"; a bare number is seconds. */
int hb_parse_duration(const char *s, int64_t *out);
/* "800G", "1.5TB", "512Mi", "2GiB", "100": K M G T P E are powers of
 * 1000, Ki Mi Gi Ti Pi Ei of 1024, a trailing B is allowed; bytes. */
int hb_parse_size(const char *s, uint64_t *out);
/* "10Gb/s", "10Gbps", "1.25GB/s", "400Mbit/s": bits (b, bit) or bytes
 * (B), per second; into bytes per second. */
int hb_parse_bandwidth(const char *s, uint64_t *out);
/* "20%", "2.5%": into basis points (hundredths of a percent). */
int hb_parse_percent(const char *s, int32_t *out);
/* "2026-11-21T08:00:00Z", "2026-11-21T09:00:00+01:00", "2026-11-21"
 * (midnight UTC): into Unix seconds. */
int hb_parse_instant(const char *s, int64_t *out);
/* "+01:00", "-05:30", "Z": into seconds east of UTC. */
int hb_parse_utc_offset(const char *s, int32_t *out);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t hb_days_from_civil(int64_t y, unsigned m, unsigned d);
void hb_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* c in lower case if it is an ASCII capital: tolower() without the
 * locale, as Slurm and Kubernetes compare names. */
static inline char hb_ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* s starts with p, ASCII case-insensitively. */
static inline bool hb_ascii_iprefix(const char *s, const char *p)
{
	for (; *p; s++, p++)
		if (hb_ascii_lower(*s) != hb_ascii_lower(*p))
			return false;
	return true;
}

/* Read 1 to maxd decimal digits at *p into *v and move *p past them;
 * false when there are none or more than maxd (then *p is left inside). */
bool hb_scan_digits(const char **p, int maxd, int64_t *v);

#endif
