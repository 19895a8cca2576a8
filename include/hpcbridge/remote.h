/*
 * remote.h - where a burst job runs: the remote side, behind one
 * interface.
 *
 * The daemon starts, watches, reads the output of, and cancels remote jobs
 * through struct hb_remote.  Every operation is keyed by the gateway id,
 * and start is idempotent: starting an id that already exists adopts it,
 * so a retry after a crash never runs a job twice.
 *
 * Backends:
 *   kubernetes  translates the job's script into an MPIJob and runs it on a
 *               cluster through the Kubernetes API (backend_kube.c).
 *   local       runs the job's script on this host, as the job's user, in
 *               its own session, with its output in a file.  A stand-in
 *               for a cluster in tests; not a production target.
 *
 * A backend's calls may come from several threads at once (the daemon's
 * workers); each backend guards its own state.
 */
#ifndef HPCBRIDGE_BACKEND_H
#define HPCBRIDGE_BACKEND_H

#include <stdint.h>
#include <sys/types.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/error.h"

enum hb_remote_phase {
	HB_REMOTE_PENDING,
	HB_REMOTE_RUNNING,
	HB_REMOTE_SUCCEEDED,
	HB_REMOTE_FAILED,
	HB_REMOTE_CANCELLED,
	HB_REMOTE_LOST, /* gone without a result */
	/* Admitted and running once, then suspended again: Kueue preempted
	 * it (the MPIJob's spec.runPolicy.suspend went back to true).  Not
	 * final; running again once re-admitted.  Last, so the final phases
	 * stay together. */
	HB_REMOTE_SUSPENDED
};

/* The longest remote id. */
#define HB_REMOTE_ID_MAX 63

/* Whether id can name a remote job: a DNS-1035 label (a lowercase letter,
 * then [a-z0-9-], not ending with '-'), as gateway ids are. */
int hb_remote_id_valid(const char *id);

/* "pending", "running", ...; never NULL. */
const char *hb_remote_phase_name(enum hb_remote_phase p);
/* Whether p is final. */
int hb_remote_phase_done(enum hb_remote_phase p);

/* The phase an MPIJob's .status says (its True conditions: Succeeded,
 * Failed, Suspended, Running, in that order; else pending), and in msg
 * the condition that says it ("Failed: Reason: message", "" if none).
 * Suspended is HB_REMOTE_SUSPENDED for a job that had started (a
 * startTime: it was admitted and ran, and Kueue preempted it), else
 * pending (created suspended, waiting for admission). */
struct cJSON;
enum hb_remote_phase hb_remote_mpijob_phase(const struct cJSON *status,
					    char *msg, size_t size);

/* What a remote job is made of.  Strings are borrowed for the call. */
struct hb_jobspec;

struct hb_remote_job {
	const char *id;	    /* see hb_remote_id_valid() */
	const char *script; /* the job's script, run as is */
	size_t script_len;
	uid_t uid; /* run as */
	gid_t gid;
	const char *workdir;	/* absolute; NULL: the user's home, else / */
	const char *const *env; /* "NAME=value", NULL-terminated; may be
				 * NULL */
	/* For backends that translate the script (kubernetes: its #SBATCH
	 * lines and the SBATCH_* variables of env shape the MPIJob); the
	 * local backend ignores them. */
	const char *name;    /* the script's name; NULL: the id */
	const char *user;    /* labels; may be NULL */
	const char *account;
	int64_t array_task;	     /* the array element, or -1 */
	const struct hb_config *cfg; /* translation settings */
	/* The job as it was decided (kubernetes: the MPIJob is built from
	 * it, with the user's identity); the local backend ignores it. */
	const struct hb_jobspec *spec;
};

struct hb_remote_status {
	enum hb_remote_phase phase;
	int exit_code;	  /* final phases: the job's exit code (128+N for
			   * signal N); -1 when unknown */
	int64_t start_ms; /* 0: not started */
	int64_t end_ms;	  /* 0: not finished */
	char message[256]; /* why, when the backend says ("" if nothing) */
};

struct hb_remote;

/* Start, or adopt if id exists.  HB_EINVAL for a bad id or job. */
int hb_remote_start(struct hb_remote *be, const struct hb_remote_job *job,
		     struct hb_err *err);
/* HB_ENOENT for an unknown id. */
int hb_remote_status(struct hb_remote *be, const char *id,
		      struct hb_remote_status *out, struct hb_err *err);
/*
 * Append up to max bytes of the job's output from byte offset to out
 * (nothing when offset is at the end).  HB_ENOENT for an unknown id.
 */
int hb_remote_log(struct hb_remote *be, const char *id, uint64_t offset,
		   size_t max, struct hb_buf *out, struct hb_err *err);
/* Stop the job (SIGTERM, then SIGKILL after the grace period) and mark it
 * cancelled.  A finished job stays as it finished: 0, nothing done. */
int hb_remote_cancel(struct hb_remote *be, const char *id,
		      struct hb_err *err);
/*
 * The cluster's free capacity and pending work (kube_capacity.h), for
 * placement; opts->ns NULL: the backend's namespace.  Blocks on the
 * network: call it from a worker.  HB_EUNSUP for a backend that has no
 * cluster to measure (local).
 */
struct hb_kcap_opts;
struct hb_kcap;
int hb_remote_capacity(struct hb_remote *be, const struct hb_kcap_opts *opts,
			struct hb_kcap *out, struct hb_err *err);
/* NULL is fine.  Running jobs keep running. */
void hb_remote_free(struct hb_remote *be);
/* "local", "kubernetes". */
const char *hb_remote_name(const struct hb_remote *be);

/*
 * What a backend implements; hb_remote_* pass each call on.  A backend
 * embeds struct hb_remote first in its own state.
 */
struct hb_remote_ops {
	const char *name;
	int (*start)(struct hb_remote *be, const struct hb_remote_job *job,
		     struct hb_err *err);
	int (*status)(struct hb_remote *be, const char *id,
		      struct hb_remote_status *out, struct hb_err *err);
	int (*log)(struct hb_remote *be, const char *id, uint64_t offset,
		   size_t max, struct hb_buf *out, struct hb_err *err);
	int (*cancel)(struct hb_remote *be, const char *id,
		      struct hb_err *err);
	/* NULL: no capacity to report */
	int (*capacity)(struct hb_remote *be, const struct hb_kcap_opts *o,
			struct hb_kcap *out, struct hb_err *err);
	void (*free)(struct hb_remote *be);
};

struct hb_remote {
	const struct hb_remote_ops *ops;
};

/*
 * The local backend.  dir (created 0711 when the first job starts; else
 * it must be the daemon's, writable by nobody else) holds, per job,
 * dir/<id>/, the daemon's own state (0711: the pid of the job's session
 * and its start time, the cancel mark), and dir/<id>/work/, the job's
 * user's (0700: the script, its output and its result), where the daemon
 * only reads, through descriptors that follow no link and open nothing
 * but the user's regular files.  The job writes its pid while still root,
 * then drops to the user's uid, gid and groups before it opens anything
 * in work/; signals to it are sent as the user.  A daemon that is not
 * root runs jobs for its own uid only.  Its calls are safe from several
 * threads, and from two daemons on one dir: a job runs once.  It survives
 * a restart of the daemon: a new backend on the same dir sees the jobs the
 * old one started.  grace_ms: how long cancel waits after SIGTERM.  Caller
 * frees with hb_remote_free().
 */
int hb_remote_local_new(const char *dir, int grace_ms, struct hb_remote **out,
			 struct hb_err *err);

/*
 * The Kubernetes backend: MPIJobs in ns (NULL: the kubeconfig's namespace),
 * through the cluster of kubeconfig (NULL: $KUBECONFIG, else
 * ~/.kube/config; "in-cluster": the pod's service account) and context
 * (NULL: current-context).  It starts a watch thread and workers threads
 * (0: 4); every call returns without waiting on the network.
 */
struct hb_kube_opts;
struct hb_remote_kube_opts {
	const char *kubeconfig;
	const char *context;
	const char *ns;
	const char *field_manager; /* NULL: "hpcbridge" */
	unsigned workers;
	int log_refresh_ms; /* how stale a running job's log may be (0:
			       1000) */
	const struct hb_kube_opts *client; /* NULL: defaults */
};
int hb_remote_kube_new(const struct hb_remote_kube_opts *o,
			struct hb_remote **out, struct hb_err *err);

#endif
