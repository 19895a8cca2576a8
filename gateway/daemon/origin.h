/*
 * origin.h - MPIJobs created by Kubernetes users with
 * spec.runPolicy.managedBy: hpcbridge.io/gateway, placed by the daemon:
 * run on Slurm, or in the cluster as a twin MPIJob without managedBy.
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
#include "hpcbridge/config.h"
#include "hpcbridge/error.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/store.h"

#define HB_ORIGIN_MANAGED_BY	"hpcbridge.io/gateway"
#define HB_ORIGIN_LABEL_USER	"hpcbridge.io/user"
#define HB_ORIGIN_LABEL_ACCOUNT "hpcbridge.io/account"
#define HB_ORIGIN_FIELD_MANAGER "hpcbridge"
/* On a twin: the original's uid. */
#define HB_ORIGIN_LABEL_TWIN_OF "hpcbridge.io/twin-of"
/* origin.min_uid's default, used when no configuration is given; a uid
 * below it is never run (root always is below it). */
#define HB_ORIGIN_MIN_UID 1000
/* The kernel's overflow uid (nobody): never run, whatever the floor. */
#define HB_ORIGIN_OVERFLOW_UID 65534u
/* A twin's name: the original's, cut, then "-" and this many characters
 * of the original's uid. */
#define HB_ORIGIN_TWIN_UID_CHARS 8

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
	cJSON *jobspec;	      /* the jobspec as JSON, for the placement */
	cJSON *fidelity;      /* what Slurm's request carries of each field
			       * (hb_report_to_json, target "Slurm") */
	/* Why Slurm cannot take it ("field X: ...: cannot be submitted to
	 * Slurm"), or "": it may still run as a twin. */
	char slurm_refusal[HB_ERR_MAX];
	const char *reason;   /* on error: the condition reason (static):
				 MissingUser, NamespaceNotMapped,
				 UserNotGranted, UnknownUser, SystemUser,
				 InvalidSpec */
};

/*
 * Read an MPIJob of namespace ns (NULL or "": its metadata.namespace):
 * the user, the account, and the sbatch script (hb_mpijob_parse, the
 * account set from the label, hb_sbatch_emit).
 *
 * The user is granted, not claimed: the hpcbridge.io/user label must name
 * a user that cfg's origin.namespaces lists for ns (or ns lists "*"), who
 * exists in passwd, and whose uid is at least origin.min_uid and not the
 * overflow uid.  Else HB_EPERM with out->reason MissingUser,
 * NamespaceNotMapped (no entry for ns, or no origin.namespaces at all),
 * UserNotGranted, UnknownUser or SystemUser.  cfg NULL: no namespace is
 * mapped (every MPIJob is refused).
 *
 * Every field of the jobspec is then put onto a Slurm request
 * (hb_slurmc_from_jobspec) to know whether Slurm can run it: when a field
 * cannot be submitted, out->slurm_refusal names it and the job may run
 * only as a twin (origin_submit refuses it for Slurm, InvalidSpec).
 * out->fidelity records each field's fate.  The pods' image is the
 * cluster's runtime, not an OCI bundle Slurm could run: it is left out
 * of the script and recorded as dropped for Slurm.
 *
 * On error out->reason and err say why.  Caller frees with
 * hb_origin_job_free() whatever the result.
 */
int hb_origin_prepare(const cJSON *mpijob, const char *ns,
		      const struct hb_config *cfg, struct hb_origin_job *out,
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

/* RFC 3339 UTC ("2026-01-02T03:04:05Z") of ms since the epoch, the epoch
 * itself for ms <= 0: hb_time_rfc3339_format() (timefmt.h) of the
 * seconds. */
void hb_origin_time(int64_t ms, char out[32]);

/*
 * The twin's name for the MPIJob name with this uid and this many workers:
 * name cut by the translators' rule (hb_k8s_name_reserve: a DNS-1035
 * label, "<twin>-worker-<workers-1>" within 63 characters), then "-" and
 * the first HB_ORIGIN_TWIN_UID_CHARS letters and digits of the uid
 * (lowercased).  HB_EINVAL when the uid has too few.
 */
int hb_origin_twin_name(const char *name, const char *uid, uint32_t workers,
			char out[64]);

/*
 * The twin of the MPIJob orig: its spec without runPolicy.managedBy, its
 * labels and annotations, the label HB_ORIGIN_LABEL_TWIN_OF (orig's uid),
 * and an ownerReference to orig (controller false).  name gets the twin's
 * name.  NULL with err set for an MPIJob without a uid or a name.  Caller
 * frees with cJSON_Delete.
 */
cJSON *hb_origin_twin_doc(const cJSON *orig, char name[64],
			  struct hb_err *err);

/*
 * What a twin's status means for its job: the job state (queued,
 * running, succeeded, failed) and, in msg, the deciding condition
 * ("Failed: BackoffLimitExceeded: ...", "" when none).
 */
enum hb_job_state hb_origin_twin_state(const cJSON *twin, char *msg, size_t n);

/*
 * The original's status merge patch copied from its twin: conditions,
 * startTime, completionTime, replicaStatuses, lastReconcileTime (null,
 * which removes it, when the twin has none).  NULL when out of memory.
 * Caller frees.
 */
cJSON *hb_origin_twin_status(const cJSON *twin);

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

/* SYNC: the watch's first list of the namespace is whole (sent once per
 * start of the watch): a managed MPIJob that list did not bring is gone. */
enum hb_origin_ev_type { HB_ORIGIN_UPSERT, HB_ORIGIN_DELETED, HB_ORIGIN_SYNC };

struct hb_origin_ev {
	enum hb_origin_ev_type type;
	int added; /* UPSERT: an ADDED event (a create, or a (re)list) */
	int twin;  /* the object is a twin (HB_ORIGIN_LABEL_TWIN_OF); a
		    * tombstone may be either */
	unsigned gen; /* the watch's start it came from */
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
/* 1 the first time it is asked about a job loaded from the store (not
 * added by this process), 0 otherwise: whether this process must still
 * take the job up (submit, create its twin, or say its status again). */
int hb_origin_index_claim(struct hb_kube_origin *o, const char *uid,
			  const char *ns, const char *name);
/* Mark the MPIJob as listed by watch start gen; whether it was. */
void hb_origin_index_seen(struct hb_kube_origin *o, const char *uid,
			  const char *ns, const char *name, unsigned gen);
int hb_origin_index_listed(struct hb_kube_origin *o, const char *uid,
			   const char *ns, const char *name, unsigned gen);
/* Which job a twin (by namespace and name) belongs to; NULL if none. */
const char *hb_origin_twin_find(struct hb_kube_origin *o, const char *ns,
				const char *name);
int hb_origin_twin_add(struct hb_kube_origin *o, const char *ns,
		       const char *name, const char *job_id);
/* The twin name stored in a job row's jobspec ("twin"), or "". */
void hb_origin_row_twin(const struct hb_job_row *r, char out[64]);
/* The namespace the module watches. */
const char *hb_origin_ns(const struct hb_kube_origin *o);
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

/* Loop thread: stage doc (taken, freed whatever happens) as the status
 * patch of MPIJob ns/name. */
void hb_origin_stage(struct hb_kube_origin *o, const char *ns,
		     const char *name, cJSON *doc);

/* Loop thread, after the commit: hand the staged patches to the worker
 * (the newest patch per MPIJob wins).  hb_origin_staged: some are staged
 * (0 for NULL). */
void hb_origin_flush(struct hb_kube_origin *o);
int hb_origin_staged(const struct hb_kube_origin *o);

/*
 * Worker threads (they block on the API server).  Create the twin doc
 * (hb_origin_twin_doc); an MPIJob of that name already there is adopted
 * when its HB_ORIGIN_LABEL_TWIN_OF is the same, else HB_ECONFLICT.
 * Delete a twin (background propagation; one already gone is 0).
 */
int hb_origin_twin_create(struct hb_kube_origin *o, const cJSON *doc,
			  struct hb_err *err);
int hb_origin_twin_delete(struct hb_kube_origin *o, const char *ns,
			  const char *name, struct hb_err *err);

#endif
