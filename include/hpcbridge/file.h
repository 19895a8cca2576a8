/*
 * file.h - reading a whole configuration-sized file (a policy, a
 * kubeconfig, a token, the daemon's configuration), and measuring the
 * data under a path (placement's data locations).
 */
#ifndef HPCBRIDGE_FILE_H
#define HPCBRIDGE_FILE_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * The bytes of data under path (an absolute path: a file, or a directory
 * walked whole): the sum of the sizes of its regular files, each
 * hard-linked file once, symbolic links not followed, other file systems
 * mounted below it not entered.  A file removed during the walk is not
 * counted.  Errors name the path: HB_ENOENT or HB_EPERM for path itself
 * or an entry that cannot be read, HB_ETOOBIG past max_entries entries,
 * HB_ETIMEDOUT past timeout_ms (0: none), HB_EINVAL for a relative path;
 * *bytes is then 0.
 */
int hb_path_size(const char *path, uint64_t max_entries, int timeout_ms,
		 uint64_t *bytes, struct hb_err *err);

#endif
