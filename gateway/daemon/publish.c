/*
 * publish.c - the placement snapshot the job_submit plugin decides from,
 * inside slurmctld, without asking the daemon (plugin.decide: snapshot).
 *
 * About once a second the loop writes plugin.snapshot (snapfile.h: a
 * versioned header, then a JSON body, replaced by rename): the policy's
 * text, the decider's snapshot as "hpcbridge explain --state" reads it
 * (queues, expected starts, capacity, data sizes, spend), the note every
 * explanation ends with, the configuration's text (the proxy and pod
 * rules), the daemon's socket, the notice socket, the per-account
 * allowance, the highest leased id whose decision the spend counts, and a
 * lease of gateway ids.  The lease is taken from the store's job number
 * sequence and committed (synced) before any snapshot names it, so no
 * other job ever gets those numbers.  A new lease follows when half the
 * current one is used, when a plugin says it started (notice.c), and at
 * every start of the daemon, which cannot know what a plugin used before.
 *
 * docs/internals/snapshot-file.md describes the file, its versions and
 * what happens after a crash.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/snapfile.h"

/* How often the snapshot is replaced (loop time, ms). */
#define PUBLISH_MS 1000

/* The snapshot's body format (its "format" member). */
#define BODY_FORMAT 1

int hbd_publishing(const struct hb_daemon *d)
{
	return !strcmp(d->cfg.plugin_decide, "snapshot");
}

/* Take a new lease of plugin.lease ids in a transaction of its own,
 * committed before it is published.  HB_EAGAIN while a batch is open. */
static int lease_new(struct hb_daemon *d)
{
	struct hb_err err = { 0 };
	int64_t lo = 0, hi = 0;
	int rc;

	if (d->txn_open)
		return HB_EAGAIN;
	rc = hb_store_begin(d->st, &err);
	if (!rc)
		rc = hb_store_id_lease(d->st, d->cfg.plugin_lease, &lo, &hi,
				       &err);
	if (!rc)
		rc = hb_store_commit(d->st, &err);
	else
		hb_store_rollback(d->st);
	if (rc) {
		hb_log(HB_LOG_ERROR, "plugin id lease: %s", err.msg);
		return rc;
	}
	d->feed.lease_lo = lo;
	d->feed.lease_hi = hi;
	d->feed.lease_used = 0;
	d->feed.lease_wanted = 0;
	hb_logf(HB_LOG_DEBUG,
		(struct hb_log_field[]){ HB_LOG_INT("lo", lo),
					 HB_LOG_INT("hi", hi) },
		2, "gateway ids leased to the plugin");
	return 0;
}

/* At start: the plugin the last snapshot leased to, if one is there, gets
 * a new lease at once (the daemon cannot know what it used of the old
 * one); it goes on deciding without asking. */
static void owner_before(struct hb_daemon *d)
{
	struct hb_snapfile f;
	struct hb_err err = { 0 };
	const cJSON *o;
	cJSON *b;

	if (hb_snapfile_open(d->feed.snap_path, geteuid(), &f, &err))
		return;
	b = cJSON_ParseWithLength(f.body, f.blen);
	o = cJSON_GetObjectItemCaseSensitive(b, "lease_owner");
	if (cJSON_IsString(o))
		d->feed.owner = strtoull(o->valuestring, NULL, 16);
	cJSON_Delete(b);
	hb_snapfile_close(&f);
}

/* Whether the lease in force should be replaced before publishing. */
static int lease_due(const struct hb_daemon *d)
{
	int64_t size = d->feed.lease_hi - d->feed.lease_lo + 1;

	if (!d->feed.owner)
		return 0; /* no plugin asked yet */
	if (!d->feed.lease_lo || d->feed.lease_wanted)
		return 1;
	return d->feed.lease_used &&
	       (d->feed.lease_used - d->feed.lease_lo + 1) * 2 >= size;
}

/* The body: everything a decision in slurmctld reads.  NULL when out of
 * memory. */
static char *body_text(struct hb_daemon *d, int64_t now_s)
{
	cJSON *b = cJSON_CreateObject(), *state;
	char *text = NULL, owner[24];

	snprintf(owner, sizeof(owner), "%016" PRIx64, d->feed.owner);

	state = hb_decider_state(d->dc, now_s);
	if (!b || !state || !cJSON_AddItemToObject(b, "state", state)) {
		cJSON_Delete(state);
		goto out;
	}
	if (!cJSON_AddNumberToObject(b, "format", BODY_FORMAT) ||
	    !cJSON_AddStringToObject(b, "policy_name",
				     hb_decider_policy_name(d->dc)) ||
	    !cJSON_AddStringToObject(b, "policy",
				     hb_decider_policy_text(d->dc)) ||
	    !cJSON_AddStringToObject(b, "note", hb_decider_note(d->dc)) ||
	    !cJSON_AddStringToObject(b, "config",
				     d->feed.config.data ? d->feed.config.data
							 : "") ||
	    !cJSON_AddStringToObject(b, "config_name",
				     d->config_path ? d->config_path : "") ||
	    !cJSON_AddStringToObject(b, "daemon_socket",
				     d->cfg.daemon_socket) ||
	    !cJSON_AddStringToObject(b, "notice_socket",
				     d->feed.notice_path) ||
	    !cJSON_AddNumberToObject(b, "allowance",
				     (double)d->cfg.plugin_allowance) ||
	    !cJSON_AddNumberToObject(b, "noticed", (double)d->feed.noticed) ||
	    !cJSON_AddStringToObject(b, "lease_owner", owner))
		goto out;
	text = cJSON_PrintUnformatted(b);
out:
	cJSON_Delete(b);
	return text;
}

void hbd_publish_tick(struct hb_daemon *d, int64_t now)
{
	struct hb_snapfile_meta m = { 0 };
	struct hb_err err = { 0 };
	int64_t wall = hb_clock_wall_ms();
	char *text;
	int rc;

	/* no notice socket, no snapshot: decisions the daemon could not
	 * hear of would wait for the reconciler, and a plugin could not
	 * ask for a lease; jobs stay on Slurm instead (logged at start) */
	if (!hbd_publishing(d) || d->stopping || d->feed.fd < 0 ||
	    !d->feed.snap_path[0] ||
	    (d->feed.last_ms && now - d->feed.last_ms < PUBLISH_MS &&
	     !d->feed.lease_wanted))
		return;
	if (!d->feed.version)
		owner_before(d);
	if (lease_due(d) && lease_new(d) == HB_EAGAIN && d->feed.lease_wanted)
		return; /* a batch is open: next pass */
	d->feed.last_ms = now;
	/* grows with every file; the wall clock's ms keep it growing
	 * across restarts of the daemon */
	d->feed.version = (uint64_t)wall > d->feed.version
				  ? (uint64_t)wall
				  : d->feed.version + 1;
	m.version = d->feed.version;
	m.written_ms = wall;
	m.max_age_ms = (int64_t)d->cfg.plugin_snapshot_max_age_s * 1000;
	m.lease_lo = (uint64_t)d->feed.lease_lo;
	m.lease_hi = (uint64_t)d->feed.lease_hi;
	if (!(text = body_text(d, wall / 1000))) {
		hb_log(HB_LOG_ERROR, "placement snapshot: out of memory");
		return;
	}
	/* root and SlurmUser (slurmctld) read it: it holds the spend */
	rc = hb_snapfile_write(d->feed.snap_path, &m, text, strlen(text),
			       d->slurm_uid_valid ? 0640 : 0600,
			       d->slurm_uid_valid ? d->slurm_gid : (gid_t)-1,
			       &err);
	free(text);
	if (rc && !d->feed.failing)
		hb_log(HB_LOG_ERROR, "placement snapshot: %s", err.msg);
	else if (!rc && d->feed.failing)
		hb_log(HB_LOG_INFO, "placement snapshot written again");
	d->feed.failing = rc != 0;
}

void hbd_publish_used(struct hb_daemon *d, int64_t seq, int noticed)
{
	/* notices come in the order the plugin decided (it queues what it
	 * cannot send and sends the queue first), so every id up to the
	 * last one noticed is counted; a decision the reconciler rebuilt
	 * says nothing of those before it */
	if (noticed && seq > d->feed.noticed)
		d->feed.noticed = seq;
	if (seq >= d->feed.lease_lo && seq <= d->feed.lease_hi &&
	    seq > d->feed.lease_used) {
		d->feed.lease_used = seq;
		/* half used: the next lease goes out at once, not in a
		 * second, so a burst of submissions does not run out */
		if (lease_due(d))
			d->feed.last_ms = 0;
	}
}
