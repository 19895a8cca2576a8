/*
 * file.h - reading a whole configuration-sized file: a policy, a
 * kubeconfig, a token, the daemon's configuration.
 */
#ifndef HPCBRIDGE_FILE_H
#define HPCBRIDGE_FILE_H

#include <stddef.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* The largest configuration file the daemon reads. */
#define HB_CONFIG_FILE_MAX (4u * 1024 * 1024)

/*
 * Append the regular file at path, at most max bytes, to out (which
 * stays as it was on error).  Errors are "WHAT: PATH: reason" (what may
 * be NULL): HB_ENOENT, HB_EPERM, HB_EINVAL (not a regular file),
 * HB_ETOOBIG, HB_EIO.
 */
int hb_file_read(const char *path, size_t max, const char *what,
		 struct hb_buf *out, struct hb_err *err);

#endif
