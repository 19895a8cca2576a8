/*
 * log.h - one logging call for the daemon, the CLI and the plugins.
 *
 * Every record is one JSON line on standard error (by default):
 *
 *   {"ts":"2026-01-31T12:00:00.123Z","level":"info","msg":"...", ...}
 *
 * with optional extra fields after "msg".  The line is written with one
 * write(2), so records from several threads never interleave.  A hook can
 * take the records instead (the Slurm plugins route them to Slurm's log).
 *
 * Never log secrets (tokens, keys, passwords, the environment of a job):
 * the log is readable by operators, and the callers are the only ones who
 * know what is secret.
 */
#ifndef HPCBRIDGE_LOG_H
#define HPCBRIDGE_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum hb_log_level {
	HB_LOG_DEBUG = 0,
	HB_LOG_INFO = 1,
	HB_LOG_WARN = 2,
	HB_LOG_ERROR = 3
};

/* One extra field: a string (str) or an integer (num when is_num). */
struct hb_log_field {
	const char *key;
	const char *str; /* NULL: JSON null, unless is_num */
	long long num;
	int is_num;
};

#define HB_LOG_STR(k, v) ((struct hb_log_field){ .key = (k), .str = (v) })
#define HB_LOG_INT(k, v)                                                       \
	((struct hb_log_field){                                                \
		.key = (k), .num = (long long)(v), .is_num = 1 })

/* Messages longer than this are cut (and end with "..."). */
#define HB_LOG_MSG_MAX 2048

/* Log a printf-formatted message at level, if level is enabled. */
void hb_log(enum hb_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same with n extra fields (f may be NULL when n is 0). */
void hb_logf(enum hb_log_level level, const struct hb_log_field *f, size_t n,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void hb_vlogf(enum hb_log_level level, const struct hb_log_field *f, size_t n,
	      const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* The lowest level written (default HB_LOG_INFO).  Thread-safe. */
void hb_log_set_level(enum hb_log_level level);
enum hb_log_level hb_log_get_level(void);
int hb_log_enabled(enum hb_log_level level);

/* "debug", "info", "warn" (or "warning"), "error" -> level; 0 or
 * HB_EINVAL. */
int hb_log_level_parse(const char *s, enum hb_log_level *out);
const char *hb_log_level_name(enum hb_log_level level);

/* Write records to fd instead of standard error (-1 restores stderr).
 * The caller keeps fd open while it is in use.
 *
 * When the fd (at its first record) is the stream $JOURNAL_STREAM names,
 * systemd's journal, each line starts with its syslog priority: "<7>"
 * debug, "<6>" info, "<4>" warn, "<3>" error; journald takes it off and
 * records the priority (journalctl -p).  Elsewhere a line is the JSON
 * alone. */
void hb_log_set_fd(int fd);

/* Whether fd is the stream journal_stream ("DEV:INODE", as systemd sets
 * $JOURNAL_STREAM) names: 1 or 0 (0 for NULL or a malformed value). */
int hb_log_stream_is_journal(int fd, const char *journal_stream);

/*
 * Route records to hook instead of a file descriptor: it gets the level,
 * the formatted message alone (for a log that has its own framing, such
 * as Slurm's) and the whole JSON line without its newline; both are
 * borrowed for the call.  NULL restores the file descriptor.  Set it
 * before other threads log (the pointer swap is not synchronised with
 * calls in flight).
 */
typedef void (*hb_log_hook_fn)(enum hb_log_level level, const char *msg,
			       const char *json_line, void *arg);
void hb_log_set_hook(hb_log_hook_fn hook, void *arg);

#endif
