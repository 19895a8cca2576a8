/*
 * error.h - hpcbridge error codes and the error-detail buffer.
 *
 * Every hb_* function that can fail returns int: 0 on success, a negative
 * HB_E* code on failure.  Functions that read input also take a
 * struct hb_err * and fill it with a message that names the location of the
 * problem ("job.sh:7: --time: malformed time 'abc'").
 */
#ifndef HPCBRIDGE_ERROR_H
#define HPCBRIDGE_ERROR_H

#include <stddef.h>

enum {
	HB_OK = 0,
	HB_ENOMEM = -1,	  /* out of memory */
	HB_EINVAL = -2,	  /* invalid input (see the detail buffer) */
	HB_ERANGE = -3,	  /* value out of range or overflow */
	HB_ETOOBIG = -4,  /* input or output exceeds a size cap */
	HB_EUNSUP = -5,	  /* valid input we cannot carry */
	HB_ENOENT = -6,	  /* missing file, key or object */
	HB_EIO = -7,	  /* read or write failed */
	HB_ECONFLICT = -8, /* conflicting options */
	HB_EAGAIN = -9,	   /* incomplete: more input needed */
	HB_EPERM = -10,	   /* the caller may not do this */
	HB_ETIMEDOUT = -11, /* a deadline passed */
	HB_EPROTO = -12,   /* a malformed or unexpected message */
	HB_EEXIST = -13,   /* the object already exists */
	HB_ESTORE = -14,   /* the state store failed (SQLite) */
	HB_EUNAVAIL = -15, /* a peer (daemon, cluster) is unreachable */
	HB_ESLURM = -16,   /* Slurm refused or failed a call */
	HB_ESTATE = -17	   /* not possible in the object's current state */
};

/* The short name of an HB_E* code ("EINVAL"), as the API sends it; NULL
 * for an unknown code. */
const char *hb_errname(int code);
/* The HB_E* code for a name from hb_errname(); HB_EINVAL if unknown. */
int hb_errcode(const char *name);

/* Static text for an HB_E* code; never NULL. */
const char *hb_strerror(int code);

#define HB_ERR_MAX 512

/* Error detail: where and what.  Zero-initialise before use. */
struct hb_err {
	int code;
	char msg[HB_ERR_MAX];
};

/*
 * Record an error at a location and return code.  file may be NULL (no
 * location); line 0 means "file only".  The message is printf-formatted and
 * truncated to fit.  Only the first error is kept: later calls leave an
 * already-set detail alone, so the innermost, most precise message wins.
 */
int hb_err_set(struct hb_err *err, int code, const char *file,
	       unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
