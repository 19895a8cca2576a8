/*
 * user.h - what becoming a user takes: the supplementary groups and the
 * home directory, looked up before a process drops to the user.
 *
 * The daemon drops to a job's user in children it forks (the local
 * backend's jobs, Slurm submissions as the user).  A child of a threaded
 * process may make no NSS call, so the parent looks everything up first,
 * on a worker, never on the event loop.
 */
#ifndef HPCBRIDGE_USER_H
#define HPCBRIDGE_USER_H

#include <stddef.h>
#include <sys/types.h>

#include "hpcbridge/error.h"

/* The most supplementary groups taken for a user (Linux's NGROUPS_MAX). */
#define HB_USER_GROUPS_MAX 65536

/*
 * The groups uid gets as initgroups() would set them: gid and the groups
 * of uid's passwd name; gid alone for a uid with no passwd entry.  With
 * home not NULL, also the user's home directory (NULL when it has no
 * entry or a home that is not absolute).  HB_ERANGE past
 * HB_USER_GROUPS_MAX groups.  Caller frees *groups and *home with free().
 */
int hb_user_lookup(uid_t uid, gid_t gid, gid_t **groups, size_t *ngroups,
		   char **home, struct hb_err *err);

/*
 * In a child about to run as uid: become uid, gid and the groups given,
 * irrevocably (a setuid(0) afterwards must fail), with no core file and
 * not dumpable, so the user cannot read what the parent left in memory.
 * 0, the errno of the set*id call that failed, or -1 when the change
 * did not take (the check after it failed).
 * Async-signal-safe: for a child forked from a threaded process.
 */
int hb_user_become(uid_t uid, gid_t gid, const gid_t *groups, size_t n);

/* Close every descriptor from low up (async-signal-safe). */
void hb_close_from(int low);

#endif
