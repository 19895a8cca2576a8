/*
 * log.c - JSON-lines logging with a level filter and a hook.  When the
 * log goes to systemd's journal, each line starts with its syslog
 * priority ("<6>{...}"), which journald takes off and records.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/error.h"
#include "hpcbridge/log.h"
#include "hpcbridge/timefmt.h"

static int min_level = HB_LOG_INFO;
static int log_fd = -1;
static hb_log_hook_fn log_hook;
static void *log_hook_arg;

/* Whether the log fd is systemd's journal: -1 not known yet, 0, 1. */
static int to_journal = -1;

static const char *const names[] = { "debug", "info", "warn", "error" };
/* Each level's syslog priority (debug, info, warning, err), as journald
 * reads it from the "<N>" that starts a line (SyslogLevelPrefix=). */
static const char *const prio[] = { "<7>", "<6>", "<4>", "<3>" };

void hb_log_set_level(enum hb_log_level level)
{
	if (level < HB_LOG_DEBUG)
		level = HB_LOG_DEBUG;
	if (level > HB_LOG_ERROR)
		level = HB_LOG_ERROR;
	__atomic_store_n(&min_level, (int)level, __ATOMIC_RELAXED);
}

enum hb_log_level hb_log_get_level(void)
{
	return (enum hb_log_level)__atomic_load_n(&min_level, __ATOMIC_RELAXED);
}

int hb_log_enabled(enum hb_log_level level)
{
	return (int)level >= __atomic_load_n(&min_level, __ATOMIC_RELAXED);
}

int hb_log_level_parse(const char *s, enum hb_log_level *out)
{
	for (int i = 0; s && i < 4; i++)
		if (!strcasecmp(s, names[i])) {
			*out = (enum hb_log_level)i;
			return 0;
		}
	if (s && !strcasecmp(s, "warning")) {
		*out = HB_LOG_WARN;
		return 0;
	}
	return HB_EINVAL;
}

const char *hb_log_level_name(enum hb_log_level level)
{
	if (level < HB_LOG_DEBUG || level > HB_LOG_ERROR)
		return "error";
	return names[level];
}

void hb_log_set_fd(int fd)
{
	__atomic_store_n(&log_fd, fd, __ATOMIC_RELAXED);
	__atomic_store_n(&to_journal, -1, __ATOMIC_RELAXED);
}

int hb_log_stream_is_journal(int fd, const char *journal_stream)
{
	unsigned long long dev, ino;
	struct stat sb;
	char *end;

	/* "DEV:INODE", both decimal (systemd.exec(5), $JOURNAL_STREAM) */
	if (!journal_stream || !*journal_stream)
		return 0;
	errno = 0;
	dev = strtoull(journal_stream, &end, 10);
	if (errno || end == journal_stream || *end != ':')
		return 0;
	journal_stream = end + 1;
	ino = strtoull(journal_stream, &end, 10);
	if (errno || end == journal_stream || *end)
		return 0;
	if (fstat(fd, &sb) != 0)
		return 0;
	return (unsigned long long)sb.st_dev == dev &&
	       (unsigned long long)sb.st_ino == ino;
}

/* Looked at once per log fd: an fd that another program's stderr took
 * over (a child's redirection) is not the journal's any more. */
static int journal_prefix(int fd)
{
	int j = __atomic_load_n(&to_journal, __ATOMIC_RELAXED);

	if (j < 0) {
		j = hb_log_stream_is_journal(fd, getenv("JOURNAL_STREAM"));
		__atomic_store_n(&to_journal, j, __ATOMIC_RELAXED);
	}
	return j;
}

void hb_log_set_hook(hb_log_hook_fn hook, void *arg)
{
	log_hook_arg = arg;
	log_hook = hook;
}

/* A fixed-size line builder: writes past the end are dropped and noted. */
struct line {
	char *p;
	size_t len, cap;
	int cut;
};

static void put(struct line *l, const char *s, size_t n)
{
	if (n > l->cap - l->len) {
		n = l->cap - l->len;
		l->cut = 1;
	}
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

static void puts_(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

/* s as a JSON string body: control characters and invalid bytes escaped
 * (bytes >= 0x80 are passed through only as whole UTF-8 sequences). */
static void put_escaped(struct line *l, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	char esc[6];

	while (*u) {
		unsigned char c = *u;
		size_t k = 0;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(l, esc, 2);
		} else if (c == '\n') {
			put(l, "\\n", 2);
		} else if (c == '\t') {
			put(l, "\\t", 2);
		} else if (c < 0x20 || c == 0x7f) {
			esc[0] = '\\';
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(l, esc, 6);
		} else if (c < 0x80) {
			put(l, (const char *)u, 1);
		} else {
			/* a whole, plausible UTF-8 sequence or U+FFFD */
			if (c >= 0xc2 && c <= 0xdf)
				k = 2;
			else if (c >= 0xe0 && c <= 0xef)
				k = 3;
			else if (c >= 0xf0 && c <= 0xf4)
				k = 4;
			for (size_t i = 1; i < k; i++)
				if ((u[i] & 0xc0) != 0x80)
					k = 0;
			if (k) {
				put(l, (const char *)u, k);
				u += k;
				continue;
			}
			put(l, "\xef\xbf\xbd", 3);
		}
		u++;
	}
}

static void put_ts(struct line *l)
{
	char buf[32];

	hb_time_rfc3339_format_ms(hb_clock_wall_ms(), buf);
	puts_(l, buf);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

void hb_vlogf(enum hb_log_level level, const struct hb_log_field *f, size_t n,
	      const char *fmt, va_list ap)
{
	char msg[HB_LOG_MSG_MAX + 4];
	/* room for the message escaped at worst (6 bytes a byte) */
	char buf[HB_LOG_MSG_MAX * 6 + 4096 + 4];
	struct line l = { .p = buf + 3, .cap = sizeof(buf) - 5 };
	hb_log_hook_fn hook = log_hook;
	int m, fd;

	if (!hb_log_enabled(level))
		return;
	if (level > HB_LOG_ERROR)
		level = HB_LOG_ERROR;
	m = vsnprintf(msg, HB_LOG_MSG_MAX + 1, fmt, ap);
	if (m < 0)
		snprintf(msg, sizeof(msg), "(unformattable log message)");
	else if ((size_t)m > HB_LOG_MSG_MAX)
		memcpy(msg + HB_LOG_MSG_MAX, "...", 4);

	puts_(&l, "{\"ts\":\"");
	put_ts(&l);
	puts_(&l, "\",\"level\":\"");
	puts_(&l, hb_log_level_name(level));
	puts_(&l, "\",\"msg\":\"");
	put_escaped(&l, msg);
	put(&l, "\"", 1);
	for (size_t i = 0; f && i < n; i++) {
		char num[32];

		if (!f[i].key)
			continue;
		puts_(&l, ",\"");
		put_escaped(&l, f[i].key);
		puts_(&l, "\":");
		if (f[i].is_num) {
			snprintf(num, sizeof(num), "%lld", f[i].num);
			puts_(&l, num);
		} else if (f[i].str) {
			put(&l, "\"", 1);
			put_escaped(&l, f[i].str);
			put(&l, "\"", 1);
		} else {
			puts_(&l, "null");
		}
	}
	if (l.cut) {
		/* Too long for one line: keep it valid JSON, drop the
		 * fields. */
		l.len = 0;
		l.cut = 0;
		puts_(&l, "{\"ts\":\"");
		put_ts(&l);
		puts_(&l, "\",\"level\":\"");
		puts_(&l, hb_log_level_name(level));
		puts_(&l, "\",\"msg\":\"");
		put_escaped(&l, msg);
		puts_(&l, "\",\"truncated\":true");
	}
	put(&l, "}", 1);
	l.p[l.len] = '\0';
	if (hook) {
		hook(level, msg, l.p, log_hook_arg);
		return;
	}
	l.p[l.len++] = '\n';
	fd = __atomic_load_n(&log_fd, __ATOMIC_RELAXED);
	if (fd < 0)
		fd = STDERR_FILENO;
	/* buf keeps 3 bytes before the line for the priority */
	if (journal_prefix(fd)) {
		memcpy(buf, prio[level], 3);
		write_all(fd, buf, l.len + 3);
	} else {
		write_all(fd, l.p, l.len);
	}
}

void hb_logf(enum hb_log_level level, const struct hb_log_field *f, size_t n,
	     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hb_vlogf(level, f, n, fmt, ap);
	va_end(ap);
}

void hb_log(enum hb_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hb_vlogf(level, NULL, 0, fmt, ap);
	va_end(ap);
}
