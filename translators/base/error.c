/*
 * error.c - error codes and the error-detail buffer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/error.h"

static const struct {
	int code;
	const char *name, *text;
} codes[] = {
    {HB_OK, "OK", "success"},
    {HB_ENOMEM, "ENOMEM", "out of memory"},
    {HB_EINVAL, "EINVAL", "invalid input"},
    {HB_ERANGE, "ERANGE", "value out of range"},
    {HB_ETOOBIG, "ETOOBIG", "too large"},
    {HB_EUNSUP, "EUNSUP", "not supported"},
    {HB_ENOENT, "ENOENT", "not found"},
    {HB_EIO, "EIO", "input/output error"},
    {HB_ECONFLICT, "ECONFLICT", "conflicting options"},
    {HB_EAGAIN, "EAGAIN", "incomplete input"},
    {HB_EPERM, "EPERM", "permission denied"},
    {HB_ETIMEDOUT, "ETIMEDOUT", "timed out"},
    {HB_EPROTO, "EPROTO", "protocol error"},
    {HB_EEXIST, "EEXIST", "already exists"},
    {HB_ESTORE, "ESTORE", "state store error"},
    {HB_EUNAVAIL, "EUNAVAIL", "unavailable"},
    {HB_ESLURM, "ESLURM", "Slurm error"},
    {HB_ESTATE, "ESTATE", "not possible in the current state"},
};

#define NCODES (sizeof(codes) / sizeof(codes[0]))

const char *hb_strerror(int code)
{
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i].code == code)
			return codes[i].text;
	return "unknown error";
}

const char *hb_errname(int code)
{
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i].code == code)
			return codes[i].name;
	return NULL;
}

int hb_errcode(const char *name)
{
	for (size_t i = 0; name && i < NCODES; i++)
		if (!strcmp(codes[i].name, name))
			return codes[i].code;
	return HB_EINVAL;
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
