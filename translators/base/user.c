/*
 * user.c - a user's groups and home, looked up before dropping to it.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hpcbridge/user.h"

int hb_user_lookup(uid_t uid, gid_t gid, gid_t **groups, size_t *ngroups,
		   char **home, struct hb_err *err)
{
	struct passwd pw, *pwp = NULL;
	long size = sysconf(_SC_GETPW_R_SIZE_MAX);
	char *buf = NULL;
	gid_t *g = NULL, *ng;
	int n = 32, want, rc;

	*groups = NULL;
	*ngroups = 0;
	if (home)
		*home = NULL;
	if (size < 4096)
		size = 4096;
	for (;;) {
		if (!(buf = malloc((size_t)size)))
			goto nomem;
		rc = getpwuid_r(uid, &pw, buf, (size_t)size, &pwp);
		if (rc != ERANGE || size >= (1L << 20))
			break;
		free(buf);
		size *= 4;
	}
	if (!pwp) { /* no entry: its group alone */
		free(buf);
		buf = NULL;
		if (!(g = malloc(sizeof(*g))))
			goto nomem;
		g[0] = gid;
		*groups = g;
		*ngroups = 1;
		return 0;
	}
	if (home && pw.pw_dir && pw.pw_dir[0] == '/' &&
	    !(*home = strdup(pw.pw_dir)))
		goto nomem;
	for (;;) {
		if (!(ng = realloc(g, (size_t)n * sizeof(*g))))
			goto nomem;
		g = ng;
		want = n;
		if (getgrouplist(pw.pw_name, gid, g, &want) >= 0)
			break;
		if (want <= n)
			want = n * 2;
		if (want > HB_USER_GROUPS_MAX) {
			rc = hb_err_set(err, HB_ERANGE, NULL, 0,
					"user %s (uid %u) is in more than %d "
					"groups",
					pw.pw_name, (unsigned)uid,
					HB_USER_GROUPS_MAX);
			goto fail;
		}
		n = want;
	}
	free(buf);
	*groups = g;
	*ngroups = (size_t)want;
	return 0;
nomem:
	rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
fail:
	free(buf);
	free(g);
	if (home) {
		free(*home);
		*home = NULL;
	}
	return rc;
}

int hb_user_become(uid_t uid, gid_t gid, const gid_t *groups, size_t n)
{
	struct rlimit no_core = { 0, 0 };

	setrlimit(RLIMIT_CORE, &no_core);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (setgroups(n, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
		return errno ? errno : EPERM;
	if (getuid() != uid || geteuid() != uid || getgid() != gid ||
	    getegid() != gid || (uid != 0 && setuid(0) == 0))
		return -1;
	/* a change of uid resets it to fs.suid_dumpable: again */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return 0;
}

void hb_close_from(int low)
{
	struct rlimit rl;
	long max = 65536;

	if (!close_range((unsigned)low, ~0u, 0))
		return;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)max)
		max = (long)rl.rlim_cur;
	for (long fd = low; fd < max; fd++)
		close((int)fd);
}
