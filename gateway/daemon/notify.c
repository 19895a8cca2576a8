/*
 * notify.c - the daemon's messages to systemd (sd_notify(3) through
 * libsystemd): READY=1 once the socket listens and the store is open,
 * RELOADING=1 and READY=1 around a SIGHUP's re-read, STOPPING=1 on
 * SIGTERM, STATUS= lines, and the watchdog.
 *
 * The watchdog is fed by the loop itself: the loop's epoll timeout is cut
 * to the next ping, and hbd_notify_tick() sends WATCHDOG=1 from the
 * iteration.  A loop that is stuck (a blocking call, a livelock, SIGSTOP)
 * stops feeding it, and systemd kills and restarts the daemon: no thread
 * of its own could tell that.
 *
 * Without $NOTIFY_SOCKET every call here is a no-op.  NotifyAccess=main
 * (the unit) makes systemd ignore the daemon's children, which inherit
 * the environment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"

/* STATUS= is sent again at most this often when its text changed. */
#define STATUS_EVERY_MS 10000

/* A failure is logged once, until a message gets through again: the
 * watchdog's pings would repeat it every few seconds. */
static void say(struct hb_daemon *d, const char *msg)
{
	int rc;

	if (!d->notify.on)
		return;
	rc = sd_notify(0, msg);
	if (rc < 0 && !d->notify.failing)
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){ HB_LOG_STR("message", msg) },
			1, "sd_notify: %s (said once until it works again)",
			strerror(-rc));
	else if (rc >= 0 && d->notify.failing)
		hb_log(HB_LOG_INFO, "sd_notify works again");
	d->notify.failing = rc < 0;
}

/* What the daemon is doing, for `systemctl status`: the jobs not yet
 * over on each side (counted by the store in one query) and the API. */
static void status(struct hb_daemon *d, const char *what)
{
	uint64_t n[HB__TARGET_COUNT][HB__JOB_STATE_COUNT];
	unsigned long long live[HB__TARGET_COUNT] = { 0 };
	struct hb_err err = { 0 };
	char msg[256];

	if (d->st && !hb_store_job_counts(d->st, HBD_LIVE_STATES, n, &err))
		for (int t = 0; t < HB__TARGET_COUNT; t++)
			for (int s = 0; s < HB__JOB_STATE_COUNT; s++)
				live[t] += n[t][s];
	snprintf(msg, sizeof(msg),
		 "STATUS=%s: jobs on Slurm %llu, on Kubernetes %llu; %u "
		 "connections, %llu requests, %llu decisions",
		 what, live[HB_TARGET_SLURM], live[HB_TARGET_KUBERNETES],
		 d->nconns, (unsigned long long)d->nrequests,
		 (unsigned long long)d->ndecisions);
	if (!strcmp(msg, d->notify.status))
		return;
	memcpy(d->notify.status, msg, sizeof(msg));
	say(d, msg);
}

void hbd_notify_start(struct hb_daemon *d)
{
	uint64_t usec = 0;
	const char *s = getenv("NOTIFY_SOCKET");
	int64_t now = hb_clock_mono_ms();

	memset(&d->notify, 0, sizeof(d->notify));
	d->notify.on = s && *s;
	if (!d->notify.on)
		return;
	/* 0 when WATCHDOG_USEC is unset, or WATCHDOG_PID names another
	 * process (a child that inherited the environment) */
	if (sd_watchdog_enabled(0, &usec) > 0) {
		d->notify.wd_half_ms = (int64_t)(usec / 2000);
		if (d->notify.wd_half_ms < 1)
			d->notify.wd_half_ms = 1;
	}
	d->notify.wd_next = now + d->notify.wd_half_ms;
	d->notify.status_ms = now;
	say(d, "READY=1");
	if (d->notify.wd_half_ms)
		say(d, "WATCHDOG=1");
	status(d, "serving");
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){
			HB_LOG_INT("watchdog_ms", d->notify.wd_half_ms * 2) },
		1, "told systemd the daemon is ready");
}

int hbd_notify_timeout(const struct hb_daemon *d, int timeout)
{
	int64_t left;

	if (!d->notify.wd_half_ms)
		return timeout;
	left = d->notify.wd_next - hb_clock_mono_ms();
	if (left < 0)
		left = 0;
	return left < timeout ? (int)left : timeout;
}

void hbd_notify_tick(struct hb_daemon *d, int64_t now)
{
	if (!d->notify.on)
		return;
	if (d->notify.wd_half_ms && now >= d->notify.wd_next) {
		say(d, "WATCHDOG=1");
		d->notify.wd_next = now + d->notify.wd_half_ms;
	}
	if (now - d->notify.status_ms >= STATUS_EVERY_MS) {
		d->notify.status_ms = now;
		status(d, d->stopping ? "stopping" : "serving");
	}
}

void hbd_notify_reloading(struct hb_daemon *d)
{
	char msg[64];
	struct timespec ts;

	if (!d->notify.on)
		return;
	/* MONOTONIC_USEC: what systemd 253's Type=notify-reload wants;
	 * older ones ignore it */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ull +
			 (unsigned long long)ts.tv_nsec / 1000);
	say(d, msg);
}

void hbd_notify_reloaded(struct hb_daemon *d, int rc)
{
	if (!d->notify.on)
		return;
	/* READY=1 either way: the daemon serves, with the new
	 * configuration or the one it had */
	status(d, rc ? "reload refused, the running configuration stays"
		     : "configuration reloaded");
	say(d, "READY=1");
}

void hbd_notify_stopping(struct hb_daemon *d)
{
	if (!d->notify.on)
		return;
	say(d, "STOPPING=1");
	status(d, "stopping: finishing the requests in flight");
}
