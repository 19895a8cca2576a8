/*
 * error.c - error codes and the error-detail buffer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hpcbridge/error.h"

const char *hb_strerror(int code)
{
	switch (code) {
	case HB_OK:
		return "success";
	case HB_ENOMEM:
		return "out of memory";
	case HB_EINVAL:
		return "invalid input";
	case HB_ERANGE:
		return "value out of range";
	case HB_ETOOBIG:
		return "too large";
	case HB_EUNSUP:
		return "not supported";
	case HB_ENOENT:
		return "not found";
	case HB_EIO:
		return "input/output error";
	case HB_ECONFLICT:
		return "conflicting options";
	}
	return "unknown error";
}

int hb_err_set(struct hb_err *err, int code, const char *file, unsigned line,
	       const char *fmt, ...)
{
	va_list ap;
	size_t off = 0;
	int n;

	if (!err || err->code)
		return code;
	err->code = code;
	if (file && line)
		n = snprintf(err->msg, sizeof(err->msg), "%s:%u: ", file, line);
	else if (file)
		n = snprintf(err->msg, sizeof(err->msg), "%s: ", file);
	else
		n = 0;
	if (n > 0)
		off = (size_t)n < sizeof(err->msg) ? (size_t)n
						   : sizeof(err->msg) - 1;
	va_start(ap, fmt);
	vsnprintf(err->msg + off, sizeof(err->msg) - off, fmt, ap);
	va_end(ap);
	return code;
}
