/*
 * origin.h - MPIJobs created by Kubernetes users with
 * spec.runPolicy.managedBy: hpcbridge.io/gateway, run on Slurm.
 *
 * The module owns a Kubernetes client, one reflector thread on the MPIJobs
 * of the configured namespace (no label selector: the jobs are the users',
 * filtered by managedBy) and one worker thread that writes .status.  What
 * the reflector sees is queued (a mutex-guarded list) and the module's
 * eventfd becomes readable; the daemon's loop thread takes the events and
 * does everything that touches the store (only it may).  Status patches go
 * the other way: the loop stages them, and hands them to the worker after
 * its batch is committed (hb_origin_flush), so the cluster never hears of
 * a state that is not on disk.
 *
 * Threads: hb_origin_take, hb_origin_flush, hb_origin_job_changed and the
 * index functions are for the loop thread only.
 *
 * docs/internals/origin.md has the design.
 */
#ifndef HPCBRIDGE_ORIGIN_H
#define HPCBRIDGE_ORIGIN_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/store.h"

#define HB_ORIGIN_MANAGED_BY	"hpcbridge.io/gateway"
#define HB_ORIGIN_LABEL_USER	"hpcbridge.io/user"
#define HB_ORIGIN_LABEL_ACCOUNT "hpcbridge.io/account"
#define HB_ORIGIN_FIELD_MANAGER "hpcbridge"

/* --- pure parts (unit-tested) -------------------------------------- */

/* 1 if the MPIJob's spec.runPolicy.managedBy is HB_ORIGIN_MANAGED_BY. */
int hb_origin_managed(const cJSON *mpijob);

/* What the daemon needs to submit an MPIJob to Slurm. */
struct hb_origin_job {
	char user[64];	  /* the hpcbridge.io/user label */
	char account[64]; /* the hpcbridge.io/account label, or "" */
	uint32_t uid, gid;
	char home[512];	      /* the user's home: the default working dir */
	struct hb_buf script; /* the sbatch script (NUL-terminated) */
	const char *reason;   /* on error: the condition reason (static):
				 MissingUser, UnknownUser, InvalidSpec */
};

/*
 * Read an MPIJob: the user (required, looked up in passwd), the account,
 * and the sbatch script (hb_mpijob_parse, the account set from the label,
 * hb_sbatch_emit).  On error out->reason and err say why.  Caller frees
 * with hb_origin_job_free() whatever the result.
 */
int hb_origin_prepare(const cJSON *mpijob, struct hb_origin_job *out,
		      struct hb_err *err);
void hb_origin_job_free(struct hb_origin_job *j);

/*
 * The status merge patch ({"status": {...}}) for a job row as the store
 * has it: conditions (Created; Running; Succeeded or Failed, with reason
 * and message), startTime, completionTime and replicaStatuses.Launcher.
 * The conditions list is written whole (a merge patch replaces lists).
 * start_ms: when it started running (0: unknown; a final job then uses
 * its end).  Times are the row's created_ms and, for final states,
 * updated_ms.  NULL when out of memory.  Caller frees with cJSON_Delete.
 */
cJSON *hb_origin_status_doc(const struct hb_job_row *row, int64_t start_ms);

/* RFC 3339 UTC ("2026-01-02T03:04:05Z") of ms since the epoch. */
void hb_origin_time(int64_t ms, char out[32]);

/* --- the module ------------------------------------------------------ */

struct hb_origin_opts {
	const char *kubeconfig; /* "in-cluster", a path list, or NULL */
	const char *context;	/* NULL: current-context */
	const char *ns;		/* NULL or "": the kubeconfig's */
	const struct hb_kube_opts *client; /* NULL: defaults */
};

struct hb_kube_origin;

/* Start the reflector and the status worker.  Caller frees with
 * hb_origin_free(). */
int hb_origin_new(const struct hb_origin_opts *o, struct hb_kube_origin **out,
		  struct hb_err *err);
/* Stop the threads (staged patches are dropped).  NULL is fine. */
void hb_origin_free(struct hb_kube_origin *o);

/* The eventfd, readable when events are queued. */
int hb_origin_fd(const struct hb_kube_origin *o);

enum hb_origin_ev_type { HB_ORIGIN_UPSERT, HB_ORIGIN_DELETED };

struct hb_origin_ev {
	enum hb_origin_ev_type type;
	int added; /* UPSERT: an ADDED event (a create, or a (re)list) */
	char ns[64];
	char name[256];
	char uid[64]; /* "" for a relist's tombstone */
	cJSON *obj;   /* UPSERT: the MPIJob; owned by the event */
	struct hb_origin_ev *next;
};

/* Take every queued event, oldest first, and reset the eventfd.  Caller
 * frees the list with hb_origin_ev_free(). */
struct hb_origin_ev *hb_origin_take(struct hb_kube_origin *o);
void hb_origin_ev_free(struct hb_origin_ev *list);

/* Loop thread: which gateway job an MPIJob is (by uid when uid is not
 * empty, else by ns/name); NULL when none.  Borrowed until the next
 * hb_origin_index_add. */
const char *hb_origin_index_find(struct hb_kube_origin *o, const char *uid,
				 const char *ns, const char *name);
int hb_origin_index_add(struct hb_kube_origin *o, const char *uid,
			const char *ns, const char *name, const char *job_id);
/* Fill the index from the store's kubernetes-origin jobs (at start). */
int hb_origin_load(struct hb_kube_origin *o, struct hb_store *st,
		   struct hb_err *err);

/*
 * Loop thread, after job_id's row changed (in the open transaction): if
 * it is a kubernetes-origin job, stage its status patch.  Other jobs are
 * ignored.  Errors are logged, not returned: the status is a mirror.
 */
void hb_origin_job_changed(struct hb_kube_origin *o, struct hb_store *st,
			   const char *job_id);

/* Loop thread, after the commit: hand the staged patches to the worker
 * (the newest patch per MPIJob wins). */
void hb_origin_flush(struct hb_kube_origin *o);

#endif
