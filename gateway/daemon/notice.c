/*
 * notice.c - what the job_submit plugin tells the daemon without waiting:
 * datagrams on plugin.notice_socket, sent with MSG_DONTWAIT from inside
 * slurmctld (or, when the socket was full or absent, later, from the
 * plugin's own thread).
 *
 *   {"op":"decided", "id", "target", ...}  a decision made under a leased
 *       id: recorded as the decide op records one (hbd_plugin_decided());
 *   {"op":"hello", "nonce"}  a plugin (a slurmctld) asks for a lease of
 *       its own: a new one, for that nonce, is published at once
 *       (publish.c).  Leases are per plugin, so two slurmctld processes
 *       (a restart, a backup controller taking over) never hand out the
 *       same id.
 *
 * A notice is only believed from root or SlurmUser: the socket is 0660
 * with SlurmUser's group, and the kernel says who sent each datagram
 * (SO_PASSCRED).  A
 * notice that never arrives loses nothing: the decision is in Slurm's
 * job record, and the reconciler rebuilds it from there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/metrics.h"

/* The largest notice: a decide request with its script and environment
 * (the plugin leaves those out past it: the reconciler reads them from
 * Slurm). */
#define NOTICE_MAX (256u * 1024)
/* Notices read per pass of the loop, so clients are not starved. */
#define NOTICE_BURST 256

/* Whether a datagram socket is bound at sa (a connect succeeds). */
static int sock_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), live;

	if (fd < 0)
		return 1; /* cannot tell: leave it */
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return live;
}

int hbd_notice_open(struct hb_daemon *d, struct hb_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = d->feed.notice_path;
	int one = 1, size = 8 << 20, fd, rc;
	mode_t mask;
	struct epoll_event ev = { .events = EPOLLIN };
	struct stat st;

	d->feed.fd = -1;
	if (!hbd_publishing(d))
		return 0;
	if (hb_config_plugin_path(&d->cfg, HB_PLUGIN_SNAPSHOT,
				  d->feed.snap_path,
				  sizeof(d->feed.snap_path)) ||
	    hb_config_plugin_path(&d->cfg, HB_PLUGIN_NOTICE,
				  d->feed.notice_path,
				  sizeof(d->feed.notice_path)) ||
	    strlen(path) >= sizeof(sa.sun_path))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "plugin.notice_socket: longer than %zu bytes",
				  sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hb_err_set(err, HB_EIO, path, 0, "socket: %s",
				  strerror(errno));
	/* a socket a crash left behind is replaced (a live one, another
	 * daemon's, answers a connect and is left alone: bind fails);
	 * anything else there is not ours to remove */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_uid == geteuid() && !sock_live(&sa))
		unlink(path);
	/* root and SlurmUser's group may send (0660, or 0600 without a
	 * SlurmUser), so no user can fill the few datagrams the socket
	 * holds; the mode is set by the umask at bind, never by a chmod
	 * of a path, and the kernel's credentials are checked as well */
	mask = umask(d->slurm_uid_valid ? 0117 : 0177);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(mask);
	if (rc || (d->slurm_uid_valid &&
		   lchown(path, (uid_t)-1, d->slurm_gid)) ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
		hb_err_set(err, HB_EIO, path, 0, "notice socket: %s",
			   strerror(errno));
		if (!rc)
			unlink(path);
		close(fd);
		return err->code;
	}
	/* room for a burst of notices while the loop is busy; beyond what
	 * root may force, the kernel's own limit stands */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	d->feed.w.tag = T_NOTICE;
	ev.data.ptr = &d->feed.w;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		hb_err_set(err, HB_EIO, path, 0, "epoll: %s", strerror(errno));
		close(fd);
		unlink(path);
		return err->code;
	}
	d->feed.fd = fd;
	return 0;
}

void hbd_notice_close(struct hb_daemon *d)
{
	if (d->feed.fd < 0)
		return;
	close(d->feed.fd);
	d->feed.fd = -1;
	unlink(d->feed.notice_path);
}

/* The sender's credentials, or -1 when the kernel gave none. */
static int64_t sender_uid(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			return uc.uid;
		}
	return -1;
}

/* One notice from a trusted sender. */
static void notice_one(struct hb_daemon *d, const char *buf, size_t len,
		       int64_t uid)
{
	struct hb_err err = { 0 };
	cJSON *n = cJSON_ParseWithLength(buf, len);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(n, "op");
	char peer[32];
	int rc;

	if (!cJSON_IsString(op)) {
		d->feed.ignored++;
		hb_log(HB_LOG_WARN, "plugin notice: not a JSON object with op");
		goto out;
	}
	if (!strcmp(op->valuestring, "hello")) {
		const cJSON *nonce = cJSON_GetObjectItemCaseSensitive(n, "nonce");
		uint64_t v = cJSON_IsString(nonce)
				     ? strtoull(nonce->valuestring, NULL, 16)
				     : 0;

		/* a lease of its own for the plugin that asks: the last
		 * to ask (the slurmctld that now takes jobs) has it */
		if (v) {
			d->feed.owner = v;
			d->feed.lease_wanted = 1;
		}
		goto out;
	}
	if (strcmp(op->valuestring, "decided")) {
		d->feed.ignored++;
		goto out;
	}
	snprintf(peer, sizeof(peer), "notice uid %lld", (long long)uid);
	rc = hbd_plugin_decided(d, n, peer, 1, &err);
	if (rc == HB_EEXIST)
		rc = 0; /* recorded before: the reconciler was first */
	else if (rc && rc != HB_EINVAL)
		hbd_batch_abort(d, &err);
	if (rc) {
		d->feed.ignored++;
		hb_log(HB_LOG_ERROR, "plugin notice: %s", err.msg);
	}
	hb_metrics_notice(!rc);
out:
	cJSON_Delete(n);
}

void hbd_notice_read(struct hb_daemon *d)
{
	static char buf[NOTICE_MAX + 1];
	char ctl[CMSG_SPACE(sizeof(struct ucred))];

	for (int i = 0; i < NOTICE_BURST; i++) {
		struct iovec iov = { buf, NOTICE_MAX + 1 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl,
				     .msg_controllen = sizeof(ctl) };
		ssize_t n = recvmsg(d->feed.fd, &mh, MSG_DONTWAIT);
		int64_t uid;

		if (n < 0)
			return; /* EAGAIN: all read */
		uid = sender_uid(&mh);
		if (uid != 0 && !(d->slurm_uid_valid && uid == d->slurm_uid)) {
			unsigned dropped;

			/* anyone may write to the socket; only slurmctld
			 * is heard */
			d->feed.ignored++;
			hb_metrics_notice(0);
			if (hbd_rate_ok(&d->rl_perm, &dropped))
				hb_logf(HB_LOG_WARN,
					(struct hb_log_field[]){
						HB_LOG_INT("uid", uid),
						HB_LOG_INT("not_logged",
							   dropped) },
					2,
					"plugin notice ignored: only root and "
					"SlurmUser are heard");
			continue;
		}
		if ((size_t)n > NOTICE_MAX || (mh.msg_flags & MSG_TRUNC)) {
			d->feed.ignored++;
			continue;
		}
		d->feed.notices++;
		notice_one(d, buf, (size_t)n, uid);
	}
}
