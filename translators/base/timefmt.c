/*
 * timefmt.c - the times jobs and documents are written in: Slurm
 * durations, Slurm dates and times (parse_time() of Slurm 22.05, as the
 * check sbatch makes and as the instant placement needs) and RFC 3339.
 * The civil calendar under them is units.c's (hb_days_from_civil()).
 */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hpcbridge/error.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/units.h"

/* ---- Slurm dates and times: the check sbatch makes ------------------- */

/*
 * parse_time() from src/common/parse_time.c, as a check: does Slurm read
 * a date or time from s?  Forms: today, tomorrow, midnight, noon, fika,
 * teatime, now[{+|-}N[units]], HH:MM[:SS] [AM|PM], MMDD[YY], MM/DD[/YY],
 * MM.DD[.YY], YYYY-MM-DD[THH:MM[:SS]], uts<epoch>.
 */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char at(const char *s, size_t len, size_t i)
{
	return i < len ? s[i] : '\0';
}

/* "uts" then what strtol() reads as a number of seconds, from 1000000 on
 * and up to LONG_MAX, and nothing after it. */
static bool uts_ok(const char *s)
{
	uint64_t n;

	while (is_space(*s))
		s++;
	if (*s == '-')
		return false; /* below 1000000 */
	if (*s == '+')
		s++;
	return hb_parse_u64(s, LONG_MAX, &n) == 0 && n >= 1000000;
}

static bool pt_delta(const char *s, size_t len, size_t *pos)
{
	static const char *const units[] = { "seconds", "second", "minutes",
					     "minute",	"hours",  "hour",
					     "days",	"day",	  "weeks",
					     "week" };
	size_t off;
	int ndig = 0;

	for (off = *pos + 1; at(s, len, off) != '\0' && s[off] != '\n'; off++) {
		size_t u;

		if (is_space(s[off]))
			continue;
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (hb_ascii_iprefix(s + off, units[u]))
				break;
		if (u < sizeof(units) / sizeof(units[0])) {
			off += strlen(units[u]);
			break;
		}
		if (is_digit(s[off])) {
			if (++ndig > 12) /* Slurm's long would overflow */
				return false;
			continue;
		}
		return false;
	}
	if (!ndig)
		return false;
	*pos = off - 1;
	return true;
}

static bool pt_time(const char *s, size_t len, size_t *pos)
{
	size_t off = *pos;
	int hr, min, sec;

	if (!is_digit(at(s, len, off)))
		return false;
	hr = s[off++] - '0';
	if (at(s, len, off) != ':') {
		if (!is_digit(at(s, len, off)))
			return false;
		hr = hr * 10 + s[off++] - '0';
	}
	if (hr > 23 || at(s, len, off) != ':')
		return false;
	off++;
	if (!is_digit(at(s, len, off)) || !is_digit(at(s, len, off + 1)))
		return false;
	min = (s[off] - '0') * 10 + s[off + 1] - '0';
	off += 2;
	if (min > 59)
		return false;
	if (at(s, len, off) == ':') {
		off++;
		if (!is_digit(at(s, len, off)) ||
		    !is_digit(at(s, len, off + 1)))
			return false;
		sec = (s[off] - '0') * 10 + s[off + 1] - '0';
		off += 2;
		if (sec > 59)
			return false;
	}
	while (is_space(at(s, len, off)))
		off++;
	if (off < len && hb_ascii_iprefix(s + off, "pm")) {
		hr += 12;
		if (hr > 24)
			return false;
		off += 2;
	} else if (off < len && hb_ascii_iprefix(s + off, "am")) {
		if (hr > 12)
			return false;
		off += 2;
	}
	*pos = off - 1;
	return true;
}

static bool pt_date(const char *s, size_t len, size_t *pos)
{
	size_t off = *pos;
	int mon, day;

	if (len >= off + 7 && at(s, len, off + 4) == '-' &&
	    at(s, len, off + 7) == '-') {
		for (int i = 0; i < 4; i++)
			if (!is_digit(s[off++]))
				return false;
		off++;
		mon = at(s, len, off) - '0';
		off++;
		if (is_digit(at(s, len, off)))
			mon = mon * 10 + s[off++] - '0';
		if (mon < 1 || mon > 12)
			return false;
		off++;
		if (!is_digit(at(s, len, off)))
			return false;
		day = s[off++] - '0';
		if (is_digit(at(s, len, off)))
			day = day * 10 + s[off++] - '0';
		if (day < 1 || day > 31)
			return false;
		*pos = off - 1;
		return true;
	}
	mon = at(s, len, off) - '0';
	off++;
	if (is_digit(at(s, len, off)))
		mon = mon * 10 + s[off++] - '0';
	if (mon < 1 || mon > 12)
		return false;
	if (at(s, len, off) == '.' || at(s, len, off) == '/')
		off++;
	if (!is_digit(at(s, len, off)))
		return false;
	day = s[off++] - '0';
	if (is_digit(at(s, len, off)))
		day = day * 10 + s[off++] - '0';
	if (day < 1 || day > 31)
		return false;
	if (at(s, len, off) == '.' || at(s, len, off) == '/')
		off++;
	if (is_digit(at(s, len, off))) {
		off++;
		if (!is_digit(at(s, len, off)))
			return false;
		off++;
	}
	*pos = off - 1;
	return true;
}

bool hb_time_slurm_date_ok(const char *s)
{
	size_t len = strlen(s), pos;
	bool have = false;

	if (hb_ascii_iprefix(s, "uts"))
		return uts_ok(s + 3);
	for (pos = 0; pos < len && s[pos] != '\n'; pos++) {
		char ch = s[pos];

		if (ch == ' ' || ch == '\t' || ch == '-' || ch == 'T')
			continue;
		if (hb_ascii_iprefix(s + pos, "today")) {
			have = true;
			pos += 4;
		} else if (hb_ascii_iprefix(s + pos, "tomorrow") ||
			   hb_ascii_iprefix(s + pos, "midnight")) {
			have = true;
			pos += 7;
		} else if (hb_ascii_iprefix(s + pos, "noon") ||
			   hb_ascii_iprefix(s + pos, "fika")) {
			have = true;
			pos += 3;
		} else if (hb_ascii_iprefix(s + pos, "teatime")) {
			have = true;
			pos += 6;
		} else if (hb_ascii_iprefix(s + pos, "now")) {
			size_t i;

			for (i = pos + 3;; i++) {
				char x = at(s, len, i);

				if (x == '+' || x == '-') {
					/* Slurm adds the absolute index */
					pos += i;
					if (pos >= len ||
					    !pt_delta(s, len, &pos))
						return false;
					break;
				}
				if (x == ' ' || x == '\t')
					continue;
				if (x == '\0' || x == '\n') {
					pos += i - 1;
					break;
				}
				return false;
			}
			have = true;
		} else if (!is_digit(ch)) {
			return false;
		} else if (at(s, len, pos + 1) == ':' ||
			   (pos + 1 < len && at(s, len, pos + 2) == ':')) {
			if (!pt_time(s, len, &pos))
				return false;
			have = true;
		} else {
			if (!pt_date(s, len, &pos))
				return false;
			have = true;
		}
	}
	return have;
}

/* ---- Slurm dates and times: the instant ------------------------------ */

static bool word(const char **p, const char *w)
{
	size_t n = strlen(w);

	if (strncasecmp(*p, w, n))
		return false;
	*p += n;
	return true;
}

/* "HH:MM[:SS]" then optional AM/PM: seconds of the day. */
static bool time_of_day(const char **p, int64_t *tod)
{
	const char *s = *p;
	int64_t h, m, sec = 0;

	if (!hb_scan_digits(&s, 2, &h) || *s++ != ':' || !hb_scan_digits(&s, 2, &m))
		return false;
	if (*s == ':') {
		s++;
		if (!hb_scan_digits(&s, 2, &sec))
			return false;
	}
	while (*s == ' ')
		s++;
	if (word(&s, "pm")) {
		if (h < 1 || h > 12)
			return false;
		h = h % 12 + 12;
	} else if (word(&s, "am")) {
		if (h < 1 || h > 12)
			return false;
		h %= 12;
	}
	if (h > 23 || m > 59 || sec > 59)
		return false;
	*tod = h * 3600 + m * 60 + sec;
	*p = s;
	return true;
}

/* What follows "now": nothing, or {+|-}N[units]. */
static int date_now(const char *p, int64_t now, int64_t *out)
{
	static const struct {
		const char *w;
		int64_t mult;
	} units[] = { { "seconds", 1 },	 { "second", 1 },   { "minutes", 60 },
		      { "minute", 60 },	 { "hours", 3600 }, { "hour", 3600 },
		      { "days", 86400 }, { "day", 86400 },  { "weeks", 604800 },
		      { "week", 604800 } };
	int sign = 1;
	int64_t v;
	size_t u;

	while (*p == ' ')
		p++;
	if (!*p) {
		*out = now;
		return 0;
	}
	if (*p != '+' && *p != '-')
		return HB_EINVAL;
	sign = *p++ == '-' ? -1 : 1;
	while (*p == ' ')
		p++;
	if (!hb_scan_digits(&p, 9, &v))
		return HB_EINVAL;
	while (*p == ' ')
		p++;
	for (u = 0; *p && u < sizeof(units) / sizeof(units[0]); u++)
		if (!strcasecmp(p, units[u].w))
			break;
	if (*p && u == sizeof(units) / sizeof(units[0]))
		return HB_EINVAL;
	*out = now + sign * v * (*p ? units[u].mult : 1);
	return 0;
}

/* today, tomorrow, midnight, noon, fika, teatime: 1 and *out, or 0. */
static bool date_word(const char *p, int64_t day, int64_t tod,
		      int32_t utc_offset, int64_t *out)
{
	static const struct {
		const char *w;
		int64_t tod;
		bool next; /* always the next day */
	} words[] = {
		{ "today", 0, false },	      { "tomorrow", 0, true },
		{ "midnight", 0, true },      { "noon", 12 * 3600, false },
		{ "fika", 15 * 3600, false }, { "teatime", 16 * 3600, false }
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		const char *q = p;

		if (!word(&q, words[i].w) || *q)
			continue;
		if (words[i].next || (words[i].tod && tod >= words[i].tod))
			day++;
		*out = day * 86400 + words[i].tod - utc_offset;
		return true;
	}
	return false;
}

/* YYYY-MM-DD[THH[:MM[:SS]]] */
static int date_iso(const char *p, int32_t utc_offset, int64_t *out)
{
	int64_t y, mo, d, h = 0, m = 0, sec = 0;

	if (!hb_scan_digits(&p, 4, &y) || *p++ != '-' || !hb_scan_digits(&p, 2, &mo) || *p++ != '-' ||
	    !hb_scan_digits(&p, 2, &d))
		return HB_EINVAL;
	if (*p == 'T') {
		p++;
		if (!hb_scan_digits(&p, 2, &h))
			return HB_EINVAL;
		if (*p == ':' && (p++, !hb_scan_digits(&p, 2, &m)))
			return HB_EINVAL;
		if (*p == ':' && (p++, !hb_scan_digits(&p, 2, &sec)))
			return HB_EINVAL;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || m > 59 ||
	    sec > 59)
		return HB_EINVAL;
	*out = hb_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	       h * 3600 + m * 60 + sec - utc_offset;
	return 0;
}

/* MM/DD[/YY], MM.DD[.YY], MMDD[YY], then optional -HH:MM[:SS] */
static int date_month_day(const char *p, int64_t day, int32_t utc_offset,
			  int64_t *out)
{
	int64_t t = 0, cy, y, mo, d;
	unsigned cm, cd;
	const char *q = p;

	hb_civil_from_days(day, &cy, &cm, &cd);
	y = cy;
	if (isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2])) {
		/* MMDD[YY] */
		mo = (q[0] - '0') * 10 + (q[1] - '0');
		d = (q[2] - '0') * 10 + (q[3] - '0');
		if (!isdigit((unsigned char)q[3]))
			return HB_EINVAL;
		q += 4;
		if (isdigit((unsigned char)q[0])) {
			if (!isdigit((unsigned char)q[1]))
				return HB_EINVAL;
			y = 2000 + (q[0] - '0') * 10 + (q[1] - '0');
			q += 2;
		}
	} else {
		char sep;

		if (!hb_scan_digits(&q, 2, &mo) || (*q != '/' && *q != '.'))
			return HB_EINVAL;
		sep = *q++;
		if (!hb_scan_digits(&q, 2, &d))
			return HB_EINVAL;
		if (*q == sep) {
			q++;
			if (!hb_scan_digits(&q, 2, &y))
				return HB_EINVAL;
			y += 2000;
		}
	}
	if (*q == '-' || *q == 'T') {
		q++;
		if (!time_of_day(&q, &t))
			return HB_EINVAL;
	}
	if (*q || mo < 1 || mo > 12 || d < 1 || d > 31)
		return HB_EINVAL;
	*out = hb_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	       t - utc_offset;
	return 0;
}

int hb_time_slurm_date(const char *s, int64_t now, int32_t utc_offset,
		       int64_t *out)
{
	int64_t local = now + utc_offset, day, tod, v;
	const char *p = s;

	day = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
	tod = local - day * 86400;
	while (*p == ' ')
		p++;
	if (word(&p, "uts")) {
		if (!hb_scan_digits(&p, 12, &v) || *p)
			return HB_EINVAL;
		*out = v;
		return 0;
	}
	if (word(&p, "now"))
		return date_now(p, now, out);
	if (date_word(p, day, tod, utc_offset, out))
		return 0;
	if (isdigit((unsigned char)p[0]) && strlen(p) >= 10 && p[4] == '-')
		return date_iso(p, utc_offset, out);
	/* HH:MM[:SS][AM|PM]: today, or tomorrow if already past */
	if (isdigit((unsigned char)p[0]) &&
	    (p[1] == ':' || (p[1] && p[2] == ':'))) {
		int64_t t;

		if (!time_of_day(&p, &t) || *p)
			return HB_EINVAL;
		if (t <= tod)
			day++;
		*out = day * 86400 + t - utc_offset;
		return 0;
	}
	if (isdigit((unsigned char)p[0]))
		return date_month_day(p, day, utc_offset, out);
	return HB_EINVAL;
}

/* ---- RFC 3339 -------------------------------------------------------- */

/* Exactly n digits at *p. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

/*
 * One number of a date or time: exactly n digits, or with HB_TIME_LENIENT
 * what glibc's strptime() reads: blanks, then one to n digits.  (strptime()
 * also stops early where another digit would pass the field's maximum;
 * a digit left over is refused either way, as what follows is '-', 'T',
 * ':' or the zone.)
 */
static int field(const char **p, int n, unsigned flags, int *out)
{
	const char *s = *p;
	int v = 0;

	if (!(flags & HB_TIME_LENIENT))
		return digits(p, n, out);
	while (is_space(*s))
		s++;
	if (!is_digit(*s))
		return -1;
	do
		v = v * 10 + (*s++ - '0');
	while (--n > 0 && is_digit(*s));
	*p = s;
	*out = v;
	return 0;
}

/* (Z|+HH:MM|-HH:MM) and the end: the offset east of UTC in seconds. */
static int zone(const char *p, unsigned flags, int *off)
{
	int sign, oh, om;

	if ((*p == 'Z' || *p == 'z') && !p[1]) {
		*off = 0;
		return 0;
	}
	if (*p != '+' && *p != '-')
		return -1;
	sign = *p++ == '-' ? -1 : 1;
	if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || *p)
		return -1;
	if (!(flags & HB_TIME_LENIENT) && (oh > 23 || om > 59))
		return -1;
	*off = sign * (oh * 3600 + om * 60);
	return 0;
}

int hb_time_rfc3339_parse_flags(const char *s, unsigned flags, int64_t *out)
{
	int y, mo, d, h, mi, sec, off;
	int64_t t;
	const char *p = s;
	bool lenient = flags & HB_TIME_LENIENT;

	if (!s || field(&p, 4, flags, &y) || *p++ != '-' ||
	    field(&p, 2, flags, &mo) || *p++ != '-' || field(&p, 2, flags, &d))
		return HB_EINVAL;
	if (*p != 'T' &&
	    (lenient || (*p != 't' && (*p != ' ' || (flags & HB_TIME_STRICT)))))
		return HB_EINVAL;
	p++;
	if (field(&p, 2, flags, &h) || *p++ != ':' ||
	    field(&p, 2, flags, &mi) || *p++ != ':' ||
	    field(&p, 2, flags, &sec))
		return HB_EINVAL;
	if (*p == '.') {
		p++;
		if (!lenient && !is_digit(*p))
			return HB_EINVAL;
		while (is_digit(*p))
			p++;
	}
	if (zone(p, flags, &off) || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > (lenient ? 61 : 60))
		return HB_EINVAL;
	t = hb_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + sec - off;
	if (out)
		*out = t;
	return 0;
}

int hb_time_rfc3339_parse(const char *s, int64_t *out)
{
	return hb_time_rfc3339_parse_flags(s, 0, out);
}

/* The day and second of the day t + off falls on, without overflow. */
static void civil_split(int64_t t, int32_t off, int64_t *day, int64_t *sec)
{
	*day = t / 86400;
	*sec = t % 86400 + off;
	while (*sec < 0) {
		*sec += 86400;
		(*day)--;
	}
	while (*sec >= 86400) {
		*sec -= 86400;
		(*day)++;
	}
}

/* "YYYY-MM-DDTHH:MM:SS" of t + off seconds, then tail, into out[32]: what
 * strftime("%Y-%m-%dT%H:%M:%S") writes for the years 1000 on, and other
 * years as "%04lld" writes them. */
static void civil_format(int64_t t, int32_t off, const char *tail, char out[32])
{
	int64_t day, s, y;
	unsigned m, d;

	civil_split(t, off, &day, &s);
	hb_civil_from_days(day, &y, &m, &d);
	snprintf(out, 32, "%04lld-%02u-%02uT%02u:%02u:%02u%s", (long long)y, m,
		 d, (unsigned)(s / 3600), (unsigned)(s / 60 % 60),
		 (unsigned)(s % 60), tail);
}

void hb_time_rfc3339_format(int64_t t, char out[32])
{
	civil_format(t, 0, "Z", out);
}

void hb_time_rfc3339_format_ms(int64_t ms, char out[32])
{
	int64_t t = ms / 1000, frac = ms % 1000;
	char tail[8];

	if (frac < 0) {
		frac += 1000;
		t--;
	}
	snprintf(tail, sizeof(tail), ".%03uZ", (unsigned)frac);
	civil_format(t, 0, tail, out);
}

void hb_time_slurm_date_format(int64_t t, int32_t utc_offset, char out[32])
{
	civil_format(t, utc_offset, "", out);
}
