/*
 * ckpt_int.h - what the files of the checkpoint part share: the error
 * text of a system call, and the walk of a relative path one component
 * at a time under a directory descriptor.
 */
#ifndef HPCBRIDGE_CKPT_INT_H
#define HPCBRIDGE_CKPT_INT_H

#include "hpcbridge/ckpt.h"

/* The HB_E* code for errno e: EACCES/EPERM/EROFS HB_EPERM, ENOENT
 * HB_ENOENT, ENOMEM HB_ENOMEM, ELOOP/ENOTDIR HB_EPERM (a link or a file
 * where a directory was expected), anything else HB_EIO. */
int ckpt_errno_code(int e);

/* Set err for a failed system call on path: "PATH: WHAT: strerror".
 * ENOSPC and EDQUOT read "no space left on the device" or "disk quota
 * exceeded" as strerror words them.  Returns the code. */
int ckpt_sys_err(struct hb_err *err, int e, const char *path,
		 const char *what);

/*
 * Open the directory that holds path's last component, under dirfd,
 * each component opened with O_DIRECTORY | O_NOFOLLOW (a link anywhere
 * is ELOOP).  create: make missing directories (mode 0777 under the
 * umask).  Returns the descriptor (caller closes; dirfd itself is dup'ed
 * when path has one component) and *base points at the last component
 * of path; -1 with errno set on failure.
 */
int ckpt_open_parent(int dirfd, const char *path, int create,
		     const char **base);

/* Remove the tree named name under dirfd (a file, or a directory and
 * everything in it), never following a link.  0 or -1 with errno. */
int ckpt_remove_tree(int dirfd, const char *name);

/* hb_ckpt_sha256_fd() reading through buf, bufsz bytes, of the caller. */
int ckpt_sha256_fd_buf(int fd, const char *what, char *buf, size_t bufsz,
		       uint8_t out[32], uint64_t *bytes, struct hb_err *err);

/* The index of the first file of sealed m whose path is not before path
 * (hb_ckpt_path_cmp() order); m->nfiles when there is none. */
size_t ckpt_lower_bound(const struct hb_ckpt_manifest *m, const char *path);

#endif
