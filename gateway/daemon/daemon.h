/*
 * daemon.h - hpcbridged's core: the API socket, one epoll loop, the worker
 * pool, authorisation and the ops of protocol version 1.
 *
 * One thread runs the loop and is the only one that touches the store and
 * the connections.  Blocking remote calls (Slurm, later Kubernetes) run on
 * the worker pool and come back to the loop through an eventfd.  Every
 * write the requests of one loop iteration make is one store transaction
 * (group commit), committed before any of their replies is sent.
 *
 * docs/internals/daemon.md has the design; docs/internals/protocol.md the
 * ops.
 */
#ifndef HPCBRIDGE_DAEMON_H
#define HPCBRIDGE_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/placement/decider.h"
#include "gateway/sides/slurm.h"
#include "hpcbridge/config.h"
#include "hpcbridge/error.h"

/* Defaults of the limits that are not site settings. */
#define HB_DAEMON_IDLE_MS      60000 /* an idle connection is closed */
#define HB_DAEMON_MAX_CONNS    1024  /* more are refused with EUNAVAIL */
#define HB_DAEMON_STOP_MS      30000 /* SIGTERM: the most spent finishing */
#define HB_DAEMON_LIST_DEFAULT 1000  /* jobs per "jobs" reply, default */
#define HB_DAEMON_LIST_MAX     5000  /* ... and at most */

struct hb_daemon_opts {
	const char *config_path; /* re-read on SIGHUP; NULL: defaults */
	const char *config_text; /* what was read from it (NUL-ended) */
	const char *socket_path; /* overrides daemon.socket; NULL: none */
	const char *state_path;	 /* overrides daemon.state; NULL: none */
	int idle_ms;		 /* 0: HB_DAEMON_IDLE_MS */
	unsigned max_conns;	 /* 0: HB_DAEMON_MAX_CONNS */
	int orphan_ms;		 /* 0: HB_DAEMON_ORPHAN_MS */
	/* WAL pages between a worker's checkpoints, off the loop (0: the
	 * config's daemon.checkpoint_pages; docs/internals/daemon.md) */
	int checkpoint_pages;
};

/*
 * A job decided for Slurm (or submitted for the CLI) that Slurm has not
 * reported under its tag this long after the decision, while the
 * reconciler's polls succeed, never reached Slurm's queue: slurmctld
 * refused it after the decision, the plugin gave up waiting and left the
 * job untagged, the decision was for a will_run probe (sbatch
 * --test-only), or the daemon died before submitting it.  It ends "lost".
 */
#define HB_DAEMON_ORPHAN_MS (10 * 60 * 1000)

struct hb_daemon;

/*
 * Set up everything the loop needs, in this order: take cfg (moved: the
 * daemon owns it from now on, and cfg is zeroed, whatever the result),
 * open the store, create the socket (its directory with mode 0755 if
 * missing; the socket 0666; a stale socket left by a crash replaced; a
 * live one refused with HB_EEXIST), start the workers and the signalfd.
 * SIGHUP, SIGTERM and SIGINT must already be blocked in every thread (the
 * caller blocks them before any thread starts: hb_daemon_block_signals()).
 * Caller frees with hb_daemon_free().
 */
int hb_daemon_new(const struct hb_daemon_opts *opts, struct hb_config *cfg,
		  struct hb_daemon **out, struct hb_err *err);

/* Block the signals the loop reads through its signalfd, and ignore
 * SIGPIPE, in the calling thread (call before starting threads). */
int hb_daemon_block_signals(void);

/* Use these Slurm calls (copied).  Call before hb_daemon_run(). */
void hb_daemon_set_slurm(struct hb_daemon *d,
			   const struct hb_slurm_side_ops *b);

/*
 * Run until SIGTERM or SIGINT: then stop accepting (the socket is
 * removed), finish the requests in flight (at most HB_DAEMON_STOP_MS),
 * commit, and return 0.  SIGHUP re-reads the configuration file: a file
 * that does not parse, or that changes a setting that is not reloadable,
 * is refused with a log line saying why, and the running one stays.
 * Returns HB_E* only if the loop itself fails (epoll).
 */
int hb_daemon_run(struct hb_daemon *d);

/* Close everything and remove the socket.  NULL is a no-op. */
void hb_daemon_free(struct hb_daemon *d);

/* The socket path in use (borrowed). */
const char *hb_daemon_socket(const struct hb_daemon *d);

#endif
