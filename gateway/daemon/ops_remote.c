/*
 * ops_remote.c - what the shadow (a burst job's proxy) asks of a job that
 * runs remotely: remote_start, remote_poll, the cancel of one array task
 * and remote_abandon.  The loop checks and records; the work runs on the
 * remote pool (hbd_rstart_run(), hbd_rpoll_run(), the backend's cancel).
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/translate.h"
#include "hpcbridge/user.h"

/* Output bytes per poll (base64 in the reply). */
#define REMOTE_CHUNK_MAX (256 * 1024)

/* ------------------------------------------------------------------ */
/* Remote jobs: what the shadow (a burst job's proxy) asks             */
/* ------------------------------------------------------------------ */

/* The job state for a final remote phase. */
static enum hb_job_state remote_state(enum hb_remote_phase p)
{
	switch (p) {
	case HB_REMOTE_SUCCEEDED:
		return HB_JOB_SUCCEEDED;
	case HB_REMOTE_FAILED:
		return HB_JOB_FAILED;
	case HB_REMOTE_CANCELLED:
		return HB_JOB_CANCELLED;
	case HB_REMOTE_LOST:
		return HB_JOB_LOST;
	default:
		return HB_JOB_RUNNING;
	}
}

/* What a shadow hears about a job placed on Slurm instead: its proxy has
 * nothing more to follow, and ends (successfully: the job itself runs on
 * as the Slurm job named in the message). */
static void replaced_reply(struct hb_daemon *d, struct conn *c,
			   const struct hb_job_row *j, int64_t offset)
{
	char msg[160];
	cJSON *r = hb_proto_ok();

	snprintf(msg, sizeof(msg),
		 "preempted on Kubernetes; placed on Slurm as job %lld",
		 (long long)j->slurm_job_id);
	if (r && (!cJSON_AddStringToObject(r, "phase", "replaced") ||
		  !cJSON_AddNumberToObject(r, "exit_code", 0) ||
		  !cJSON_AddStringToObject(r, "message", msg) ||
		  !cJSON_AddNumberToObject(r, "slurm_job_id",
					   (double)j->slurm_job_id) ||
		  !cJSON_AddStringToObject(r, "data", "") ||
		  !cJSON_AddNumberToObject(r, "next", (double)offset) ||
		  !cJSON_AddBoolToObject(r, "done", 1))) {
		cJSON_Delete(r);
		r = NULL;
	}
	hbd_stage_reply(d, c, r, 0, 0);
}

/*
 * The job of req's id, visible to the caller (hbd_visible_job()); 0 or an
 * error staged.  A shadow may start before the daemon recorded the
 * decision the plugin made in slurmctld (its notice lost, the reconciler
 * not there yet): an id within the leases given hears EUNAVAIL, "try
 * again", which the shadow does.  So does every such id the caller may
 * not see, recorded or not: the answer tells nothing of other users'
 * jobs, and nothing is ever recorded from what a caller sends (only the
 * reconciler, from Slurm's table, rebuilds a decision).
 */
static int remote_visible(struct hb_daemon *d, struct conn *c, const cJSON *req,
			  struct hb_job_row *j)
{
	struct hb_err e = { 0 };
	const char *id = NULL;
	char msg[128];
	int rc;

	if (hb_doc_get_str(req, "id", 31, HBD_REQUIRED, &id, &e))
		return hbd_visible_job(d, c, req, j); /* it says what */
	rc = hb_store_job_get(d->st, id, j, &e);
	if (!rc && may_see(d, c, j))
		return 0;
	hb_job_row_free(j);
	if ((rc && rc != HB_ENOENT) || !hbd_maybe_leased(d, id))
		return hbd_visible_job(d, c, req, j);
	snprintf(msg, sizeof(msg),
		 "job %s is not recorded yet (decided in slurmctld): try "
		 "again",
		 id);
	hbd_stage_error(d, c, HB_EUNAVAIL, msg, 0);
	return HB_EUNAVAIL;
}

/* A job that runs remotely, visible to the caller; 0 or an error staged
 * (or, for one placed on Slurm instead, the answer that says so: offset
 * >= 0 is the shadow's output offset). */
static int remote_job_at(struct hb_daemon *d, struct conn *c,
			 const cJSON *req, struct hb_job_row *j,
			 int64_t offset)
{
	char msg[128];

	if (remote_visible(d, c, req, j))
		return -1;
	if (offset >= 0 && hbd_replaced(d, j)) {
		replaced_reply(d, c, j, offset);
		hb_job_row_free(j);
		return -1;
	}
	if (j->target != HB_TARGET_KUBERNETES) {
		snprintf(msg, sizeof(msg), "job %s runs on %s, not remotely",
			 j->id, hb_job_target_name(j->target));
		hbd_stage_error(d, c, HB_ESTATE, msg, 0);
		hb_job_row_free(j);
		return -1;
	}
	return 0;
}

static int remote_job(struct hb_daemon *d, struct conn *c, const cJSON *req,
		      struct hb_job_row *j)
{
	return remote_job_at(d, c, req, j, -1);
}

/* Record a state change of j (and its audit event) in this iteration's
 * batch; 0, or an error staged. */
static int remote_record(struct hb_daemon *d, struct conn *c,
			 const struct hb_job_row *j, enum hb_job_state state,
			 int64_t exit_code, int64_t slurm_job_id,
			 const char *action)
{
	struct hb_err err = { 0 };
	cJSON *detail = cJSON_CreateObject();
	int rc;

	if (!detail) {
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return HB_ENOMEM;
	}
	cJSON_AddStringToObject(detail, "from", hb_job_state_name(j->state));
	cJSON_AddStringToObject(detail, "to", hb_job_state_name(state));
	if (exit_code >= 0)
		cJSON_AddNumberToObject(detail, "exit_code", (double)exit_code);
	if ((rc = hbd_txn(d, &err)) ||
	    (slurm_job_id > 0 && j->slurm_job_id < 0 &&
	     (rc = hb_store_job_set_slurm(d->st, j->id, slurm_job_id, &err))) ||
	    (j->state != state &&
	     (rc = hb_store_job_set_state(d->st, j->id, state, exit_code, NULL,
					  &err))) ||
	    (rc = hbd_audit(d, c->uid, c->user, c->peer, action, j->id, detail,
			    &err))) {
		hbd_store_failed(d, c, rc, &err);
	}
	cJSON_Delete(detail);
	return rc;
}

/*
 * The remote job's id: the gateway id, or "<id>-t<N>" for task N of an
 * array (each array task's proxy runs its own remote job).  0, or an
 * error staged.
 */
static int remote_id(struct hb_daemon *d, struct conn *c, const cJSON *req,
		     const struct hb_job_row *j, char out[48], int64_t *task)
{
	struct hb_err e = { 0 };

	*task = -1;
	hb_doc_get_i64(req, "array_task", 0, 4000000, 0, task, &e);
	if (e.code) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return e.code;
	}
	/* ids are at most 31 characters, tasks at most 7 digits */
	if (snprintf(out, 48, *task >= 0 ? "%s-t%lld" : "%s", j->id,
		     (long long)*task) >= 48) {
		hbd_stage_error(d, c, HB_ERANGE, "array_task: id too long", 0);
		return HB_ERANGE;
	}
	return 0;
}

/*
 * Stop a burst job's remote side only; its Slurm jobs are left alone.
 *
 * - cancel {id, array_task}: one task of an array, from that task's
 *   shadow (scancel of the task).  The other tasks and the gateway job go
 *   on (it ends with its tasks).
 * - remote_abandon {id, [array_task], reason}: the shadow is ending its
 *   proxy failed (it cannot write the job's output, or lost the daemon):
 *   the remote job must not run on with nothing to follow it.  The
 *   gateway job (not an array's) is marked failed with the reason.
 *
 * A remote job that is already gone answers ok all the same.  The
 * backend's cancel runs on a worker; stop_rest() goes on.
 */
void hbd_remote_stop(struct hb_daemon *d, struct conn *c, const cJSON *req,
		     int abandon)
{
	struct hb_job_row j = { 0 };
	struct hb_err e = { 0 };
	const char *why = NULL;
	struct task *t;
	char rid[48];
	int64_t task;

	if (abandon)
		hb_doc_get_str(req, "reason", 1024, HBD_REQUIRED, &why, &e);
	if (e.code) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (remote_job(d, c, req, &j))
		return;
	if (remote_id(d, c, req, &j, rid, &task))
		goto out;
	if (!(t = hbd_remote_task(d, c, TASK_REMOTE_CANCEL, &j, rid, task)))
		goto out;
	t->rw->stop = abandon ? RSTOP_ABANDON : RSTOP_TASK;
	if (why && !(t->rw->why = strdup(why))) {
		hbd_task_free(t);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	hbd_stage_task(d, c, t, 0);
out:
	hb_job_row_free(&j);
}

/* hbd_remote_stop() once the backend's cancel said rc (0 or HB_ENOENT) for
 * rid, task of j: the record, the audit event, the reply. */
static void stop_rest(struct hb_daemon *d, struct conn *c,
		      const struct hb_job_row *j, const char *rid,
		      int64_t task, const char *why, int abandon, int rc)
{
	struct hb_err err = { 0 };
	enum hb_job_state state;
	cJSON *r, *detail = NULL;

	detail = cJSON_CreateObject();
	if (!detail ||
	    (task >= 0 &&
	     !cJSON_AddNumberToObject(detail, "array_task", (double)task)) ||
	    !cJSON_AddStringToObject(detail, "remote",
				     rc ? "not found" : "cancelled") ||
	    (why && !cJSON_AddStringToObject(detail, "reason", why))) {
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	state = abandon && task < 0 && !hb_store_state_terminal(j->state)
			? HB_JOB_FAILED
			: j->state;
	memset(&err, 0, sizeof(err));
	if ((rc = hbd_txn(d, &err)) ||
	    (state != j->state &&
	     (rc = hb_store_job_set_state(d->st, j->id, state, -1, why,
					  &err))) ||
	    (rc = hbd_audit(d, c->uid, c->user, c->peer,
			    abandon ? "remote-abandon" : "cancel-task", j->id,
			    detail, &err))) {
		hbd_store_failed(d, c, rc, &err);
		goto out;
	}
	hb_logf(abandon ? HB_LOG_WARN : HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("job", j->id),
					 HB_LOG_STR("remote", rid),
					 HB_LOG_STR("by", c->user),
					 HB_LOG_STR("reason", why ? why : "") },
		4,
		abandon ? "proxy failed: remote job stopped"
			: "array task cancelled");
	r = hb_proto_ok();
	if (r)
		cJSON_AddStringToObject(r, "state", hb_job_state_name(state));
	hbd_stage_reply(d, c, r, 1, 0);
out:
	cJSON_Delete(detail);
}

/*
 * A remote job's work runs on its own workers (d->rpool), never on the
 * loop: remote_start parses the stored source (a script of up to 4 MiB),
 * checks the array task against the job's array, and has the backend
 * build the manifest or start the process; remote_poll reads the output
 * and encodes it; cancel and remote_abandon have the backend cancel (the
 * local backend writes and syncs a mark and forks a child that signals
 * as the user).  The loop looks the job up and checks who asks before,
 * and records what happened after (hbd_remote_done()).  Their own
 * workers, so that a flood of them never delays Slurm's submits and
 * polls.
 *
 * The queue is bounded: at most d->rlimit tasks staged, queued or
 * running; a uid other than root and SlurmUser at most a quarter of
 * them, and all such uids together at most three quarters, so root's and
 * SlurmUser's requests always find room.  Past that the request is
 * answered EUNAVAIL ("busy, try again"), which the shadow retries.
 */

/* Why a remote task for c may not be queued now; NULL if it may. */
static const char *remote_busy(const struct hb_daemon *d,
			       const struct conn *c)
{
	unsigned mine = 0, users = 0, share = d->rlimit / 4;

	if (d->reload_wanted)
		return "the daemon is reloading its configuration; try again";
	if (d->nremote >= d->rlimit)
		return "busy: too many remote jobs' requests in flight; try "
		       "again";
	if (uid_is_priv(d, c->uid))
		return NULL;
	for (const struct task *t = d->rtasks; t; t = t->rnext) {
		mine += t->actor_uid == c->uid;
		users += !uid_is_priv(d, t->actor_uid);
	}
	if (mine >= (share ? share : 1))
		return "busy: too many remote jobs' requests from your uid in "
		       "flight; try again";
	if (users >= d->rlimit - share)
		return "busy: the rest is kept for root and SlurmUser; try "
		       "again";
	return NULL;
}

/* A remote task for c on job j, staged (launched at the end of the
 * iteration); NULL with an error staged. */
struct task *hbd_remote_task(struct hb_daemon *d, struct conn *c,
			     enum task_kind kind, const struct hb_job_row *j,
			     const char *rid, int64_t task)
{
	const char *why = remote_busy(d, c);
	struct task *t;

	if (why) {
		hbd_stage_error(d, c, HB_EUNAVAIL, why, 0);
		return NULL;
	}
	t = hbd_task_new(d, c, kind, j->id);
	if (!t || !(t->rw = calloc(1, sizeof(*t->rw)))) {
		hbd_task_free(t);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		return NULL;
	}
	t->rnext = d->rtasks;
	if (d->rtasks)
		d->rtasks->rprev = t;
	d->rtasks = t;
	d->nremote++;
	t->rw->be = d->remote;
	t->rw->cfg = &d->cfg;
	t->rw->task = task;
	t->rw->slurm_id = -1;
	t->rw->env_job_id = -1;
	t->rw->env_array_id = -1;
	snprintf(t->rw->rid, sizeof(t->rw->rid), "%s", rid);
	return t;
}

/* The script, environment and directory the job was submitted with. */
struct source {
	cJSON *doc;
	const char *script, *cwd;
	const char **env; /* NULL-terminated, borrowed from doc */
};

/* A job id the submitter's environment carried (sbatch or qsub run in
 * another job, by hand or by a job that chains its successor): not this
 * job's.  Slurm replaces them, and so does the daemon (rstart_env()). */
static bool inherited_id(const char *var)
{
	static const char *const ids[] = {
		"SLURM_JOB_ID=",	   "SLURM_JOBID=",
		"SLURM_ARRAY_JOB_ID=",	   "SLURM_ARRAY_TASK_ID=",
		"HPCBRIDGE_JOB_ID=",	   "HPCBRIDGE_SLURM_JOB_ID=",
		"HPCBRIDGE_SLURM_ARRAY_JOB_ID=",
	};

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (!strncmp(var, ids[i], strlen(ids[i])))
			return true;
	return false;
}

static int source_of(const char *jobspec, struct source *s)
{
	const cJSON *e, *v;
	size_t n = 0;

	memset(s, 0, sizeof(*s));
	s->doc = jobspec ? cJSON_Parse(jobspec) : NULL;
	v = cJSON_GetObjectItemCaseSensitive(s->doc, "script");
	if (!cJSON_IsString(v))
		return HB_EINVAL;
	s->script = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(s->doc, "cwd");
	if (cJSON_IsString(v) && v->valuestring[0] == '/')
		s->cwd = v->valuestring;
	e = cJSON_GetObjectItemCaseSensitive(s->doc, "env");
	/* room for the ids rstart_env() adds and the NULL */
	s->env = calloc((size_t)cJSON_GetArraySize(e) + 5, sizeof(*s->env));
	if (!s->env)
		return HB_ENOMEM;
	cJSON_ArrayForEach (v, e)
		if (cJSON_IsString(v) && strchr(v->valuestring, '=') &&
		    !inherited_id(v->valuestring))
			s->env[n++] = v->valuestring;
	return 0;
}

/* The variables the daemon gives a remote job, after the submitted ones:
 * its gateway id, its array task, and its Slurm proxy's ids as
 * HPCBRIDGE_SLURM_* (the launcher pod and qsub's wrapper take the job's
 * ids from them; a plain SLURM_JOB_ID would make Open MPI's mpirun look
 * for a Slurm allocation where the local backend runs it). */
struct rstart_vars {
	char id[64], task[48], jid[64], aid[64];
};

static void rstart_env(const struct task *t, struct rstart_vars *v,
		       const char **env)
{
	const struct rwork *w = t->rw;
	size_t i = 0;

	while (env[i])
		i++;
	snprintf(v->id, sizeof(v->id), "HPCBRIDGE_JOB_ID=%s", t->id);
	env[i++] = v->id;
	if (w->task >= 0) {
		snprintf(v->task, sizeof(v->task), "SLURM_ARRAY_TASK_ID=%lld",
			 (long long)w->task);
		env[i++] = v->task;
	}
	if (w->env_job_id > 0) {
		snprintf(v->jid, sizeof(v->jid), "HPCBRIDGE_SLURM_JOB_ID=%lld",
			 (long long)w->env_job_id);
		env[i++] = v->jid;
	}
	if (w->task >= 0 && w->env_array_id > 0) {
		snprintf(v->aid, sizeof(v->aid),
			 "HPCBRIDGE_SLURM_ARRAY_JOB_ID=%lld",
			 (long long)w->env_array_id);
		env[i++] = v->aid;
	}
	env[i] = NULL;
}

static void source_free(struct source *s)
{
	cJSON_Delete(s->doc);
	free(s->env);
}

/*
 * On a worker: whether array task t->rw->task is in the job's array as
 * Slurm read it: the jobspec the plugin sent (Slurm's array_inx); without
 * one, the script's #SBATCH --array or the SBATCH_ARRAY it was submitted
 * with.  A job without an array has no task.  0, or EINVAL in t->err.
 */
static int array_check(struct task *t, const struct source *s)
{
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(s->doc, "jobspec");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(js, "array"), "spec");
	struct hb_sbatch_opts o = { .envp = s->env };
	struct hb_jobspec spec;
	struct hb_err perr = { 0 };
	const char *arr = cJSON_IsString(a) ? a->valuestring : NULL;
	int rc = 0;

	hb_jobspec_init(&spec, "script");
	if (!arr && hb_sbatch_parse(s->script, strlen(s->script), "script",
				    &o, &spec, &perr) == 0)
		arr = spec.array;
	if (!arr || !*arr)
		rc = hb_err_set(&t->err, HB_EINVAL, NULL, 0,
				"array_task: job %s is not an array job",
				t->id);
	else if (!hb_sbatch_array_has(arr, (uint32_t)t->rw->task))
		rc = hb_err_set(&t->err, HB_EINVAL, NULL, 0,
				"array_task: %lld is not in job %s's array "
				"(%.60s)",
				(long long)t->rw->task, t->id, arr);
	hb_jobspec_free(&spec);
	return rc;
}

/* On a worker: the primary group of uid (the uid itself if none). */
static gid_t user_gid(uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		return res->pw_gid;
	return (gid_t)uid;
}

/*
 * On a worker: the job as it was decided, for a backend that builds a
 * manifest from it (remote.backend kubernetes).  That is the jobspec
 * Slurm resolved from the script, the command-line options and the
 * SBATCH_* variables, as the plugin sent it, with the script's body read
 * for its module loads and launch lines; for a job without one (sent by
 * hpcbridge submit), the script read as sbatch reads it, with the
 * environment it was submitted with.  A job that names no directory runs
 * in the one it was submitted from.  0, or an error in t->err.
 */
static int decided_job(const char *id, const struct source *s,
		       struct hb_jobspec *spec, struct hb_err *err)
{
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(s->doc, "jobspec");
	struct hb_sbatch_opts so = { .envp = s->env };
	size_t n = strlen(s->script);
	struct hb_err e = { 0 };
	int rc;

	if (!cJSON_IsObject(js))
		rc = hb_parse_any(s->script, n, spec->source_name, &so, spec,
				  &e);
	else if (!(rc = hb_jobspec_from_json(js, spec, &e)) &&
		 !spec->script) {
		spec->script = hb_jobspec_strndup(spec, s->script, n);
		spec->script_len = (uint32_t)n;
		rc = spec->script ? hb_jobspec_scan_body(spec, &e) : HB_ENOMEM;
	}
	if (!rc && !spec->chdir && s->cwd) {
		if (!(spec->chdir = hb_jobspec_strdup(spec, s->cwd)))
			rc = HB_ENOMEM;
		hb_jobspec_set_prov(spec, HB_F_CHDIR,
				    (struct hb_prov){ HB_PROV_DERIVED, 0 });
	}
	if (rc)
		return hb_err_set(err, rc, NULL, 0, "cannot start %s: %s", id,
				  e.msg[0] ? e.msg : hb_strerror(rc));
	return 0;
}

int hbd_job_spec(const char *id, const char *jobspec, struct hb_jobspec *spec,
		 struct hb_err *err)
{
	struct source s;
	int rc = source_of(jobspec, &s);

	if (rc)
		rc = hb_err_set(err, rc, NULL, 0,
				"%s: the job's script was not kept", id);
	else
		rc = decided_job(id, &s, spec, err);
	source_free(&s);
	return rc;
}

/* On a worker: the job runs as uid, its primary group gid and its groups,
 * as initgroups() would give them (never root: placement keeps root's jobs
 * on Slurm, and the manifest refuses uid 0 again).  0, or an error in
 * t->err. */
static int run_as(struct task *t, uid_t uid, gid_t gid,
		  struct hb_jobspec *spec)
{
	gid_t *groups = NULL;
	uint32_t *g32 = NULL;
	size_t n = 0;
	int rc;

	if ((rc = hb_user_lookup(uid, gid, &groups, &n, NULL, &t->err)))
		return rc;
	if (n && !(g32 = calloc(n, sizeof(*g32))))
		rc = hb_err_set(&t->err, HB_ENOMEM, NULL, 0, "out of memory");
	for (size_t i = 0; !rc && i < n; i++)
		g32[i] = (uint32_t)groups[i];
	if (!rc && (rc = hb_jobspec_set_identity(spec, (int64_t)uid,
						 (int64_t)gid, g32,
						 (uint32_t)n)))
		hb_err_set(&t->err, rc, NULL, 0,
			   "cannot start %s: uid %u or its groups cannot run "
			   "on the cluster",
			   t->id, (unsigned)uid);
	free(g32);
	free(groups);
	return rc;
}

/* On a worker: remote_start's work. */
int hbd_rstart_run(struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_remote_job rj = { 0 };
	struct hb_err err = { 0 };
	struct hb_jobspec spec;
	struct source src;
	struct rstart_vars vars;
	int rc;

	if ((rc = source_of(w->jobspec, &src))) {
		source_free(&src);
		return hb_err_set(&t->err, rc == HB_ENOMEM ? rc : HB_ESTATE,
				  NULL, 0, "%s",
				  rc == HB_ENOMEM ? "out of memory"
						  : "the job's script was not "
						    "kept");
	}
	hb_jobspec_init(&spec, w->name ? w->name : t->id);
	rj.gid = user_gid(w->uid);
	if (w->task >= 0 && (rc = array_check(t, &src)))
		goto out;
	if (hbd_remote_cfg_is_cluster(w->cfg)) {
		if ((rc = decided_job(t->id, &src, &spec, &t->err)) ||
		    (rc = run_as(t, w->uid, rj.gid, &spec)))
			goto out;
		rj.spec = &spec;
		/* The pods resume from what the directory holds now; without
		 * it they would start afresh, and what they push back would
		 * replace the directory's later state: no start then. */
		if (w->task < 0 &&
		    (rc = hbd_ckpt_push(w->cfg, t->id, w->uid, rj.gid, &spec,
					&w->ckpt, &err))) {
			hb_err_set(&t->err, rc, NULL, 0,
				   "cannot start %s: its checkpoint: %s", t->id,
				   err.msg);
			goto out;
		}
	}
	rstart_env(t, &vars, src.env);
	rj.id = w->rid;
	rj.script = src.script;
	rj.script_len = strlen(src.script);
	rj.uid = w->uid;
	rj.workdir = src.cwd;
	rj.env = src.env;
	rj.name = w->name;
	rj.user = w->user;
	rj.account = w->account;
	rj.array_task = w->task;
	rj.cfg = w->cfg;
	rc = hb_remote_start(w->be, &rj, &err);
	if (!rc)
		rc = hb_remote_status(w->be, w->rid, &w->st, &err);
	if (rc)
		hb_err_set(&t->err, rc, NULL, 0, "cannot start %s: %s", t->id,
			   err.msg[0] ? err.msg : hb_strerror(rc));
out:
	hb_jobspec_free(&spec);
	source_free(&src);
	return rc;
}

/*
 * On a worker, before the shadow hears that its job is over (its proxy
 * still runs): the proxy's admin comment (its tag, and what the job
 * asked of Slurm) gains what ran remotely, so that
 * sacct's record of the proxy (1 CPU in the burst partition) does not
 * pass for the job's use.  slurmctld refuses to change a job once it
 * has finished, hence now.  A failure is logged: the ledger has the
 * figures either way.
 */
static void proxy_record(struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_err err = { 0 };
	char text[512];

	char tag[48];

	if (w->task >= 0 || w->slurm_id <= 0 || !w->jobspec ||
	    !t->be.slurm_annotate)
		return;
	snprintf(tag, sizeof(tag), "hpcbridge:%s", t->id);
	if (hbd_proxy_record(t->id, w->jobspec, w->cfg, &w->st, text,
			     sizeof(text), &err) ||
	    t->be.slurm_annotate(t->be.ctx, w->slurm_id, tag, text, &err))
		hb_log(HB_LOG_WARN, "%s: proxy %lld keeps its tag only: %s",
		       t->id, (long long)w->slurm_id, err.msg);
}

/*
 * On a worker, when a cluster job is over and before its shadow hears
 * so: the newest checkpoint its pods pushed comes back into its
 * directory, so that whatever runs next (the same script placed again,
 * on either side) resumes from it.  A failure is the job's event and a
 * warning; the job's end stands.
 */
static void ckpt_back(struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_jobspec spec;
	struct source src;
	struct hb_err err = { 0 };

	if (w->task >= 0 || !w->jobspec || !hbd_remote_cfg_is_cluster(w->cfg) ||
	    !w->cfg->k8s.ckpt_url)
		return;
	hb_jobspec_init(&spec, t->id);
	if (source_of(w->jobspec, &src) ||
	    decided_job(t->id, &src, &spec, &err) ||
	    hbd_ckpt_pull(w->cfg, t->id, w->uid, user_gid(w->uid), &spec,
			  &w->ckpt, &err))
		hb_log(HB_LOG_WARN, "%s: checkpoint not brought back: %s",
		       t->id, err.msg[0] ? err.msg : "the job's script was "
						      "not kept");
	w->ckpt.periodic = !w->done;
	hb_jobspec_free(&spec);
	source_free(&src);
}

/* On a worker: remote_poll's work, down to the framed reply. */
int hbd_rpoll_run(struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_buf data, b64;
	cJSON *r = NULL;
	int rc;

	hb_buf_init(&data, w->max + 1);
	hb_buf_init(&b64, 0);
	if ((rc = hb_remote_status(w->be, w->rid, &w->st, &t->err)) ||
	    (rc = hb_remote_log(w->be, w->rid, w->offset, w->max, &data,
				 &t->err)))
		goto out;
	/* Final, and this read did not stop at the cap: nothing more. */
	w->done = hb_remote_phase_done(w->st.phase) && data.len < w->max;
	if (w->done) {
		ckpt_back(t);
		proxy_record(t);
	} else if (w->ckpt_due && w->st.phase == HB_REMOTE_RUNNING) {
		ckpt_back(t);
	}
	if ((rc = hb_buf_base64(&b64, data.data ? data.data : "",
				data.len))) {
		hb_err_set(&t->err, rc, NULL, 0, "output too large");
		goto out;
	}
	r = hb_proto_ok();
	if (r && (!cJSON_AddStringToObject(r, "phase",
					   hb_remote_phase_name(w->st.phase)) ||
		  !cJSON_AddNumberToObject(r, "exit_code", w->st.exit_code) ||
		  (w->st.message[0] &&
		   !cJSON_AddStringToObject(r, "message", w->st.message)) ||
		  !cJSON_AddStringToObject(r, "data",
					   b64.data ? b64.data : "") ||
		  !cJSON_AddNumberToObject(r, "next",
					   (double)(w->offset + data.len)) ||
		  !cJSON_AddBoolToObject(r, "done", w->done))) {
		cJSON_Delete(r);
		r = NULL;
	}
	/* NULL: out of memory, or too big (hbd_stage_frame() says which) */
	w->frame = r ? hbd_frame_json(r, &w->flen) : NULL;
	if (!w->frame)
		w->flen = r != NULL;
out:
	cJSON_Delete(r);
	hb_buf_free(&data);
	hb_buf_free(&b64);
	return rc;
}

/* The loop side of a finished remote_start. */
static void rstart_done(struct hb_daemon *d, struct conn *c, struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };
	int final = hb_remote_phase_done(w->st.phase) && w->task < 0;
	int rc;
	cJSON *r;

	if (hbd_ckpt_audit(d, t->id, &w->ckpt, "slurm", &err))
		hb_log(HB_LOG_WARN, "%s: %s", t->id, err.msg);
	memset(&err, 0, sizeof(err));
	if (t->rc) {
		hbd_stage_error(d, c, t->rc, t->err.msg, 0);
		return;
	}
	/* the job as it is now: it may have moved while the worker ran */
	if ((rc = hb_store_job_get(d->st, t->id, &j, &err))) {
		hbd_stage_error(d, c, HB_ESTORE, err.msg, 0);
		return;
	}
	/* An array's tasks share the gateway job: it is running while any
	 * runs; their ends are audited, not recorded as the job's end. */
	if (remote_record(d, c, &j,
			  final ? remote_state(w->st.phase)
			  : hb_store_state_terminal(j.state) ? j.state
							     : HB_JOB_RUNNING,
			  final ? w->st.exit_code : -1,
			  w->task < 0 ? w->slurm_id : -1, "remote_start"))
		goto out;
	if (hb_remote_phase_done(w->st.phase) &&
	    (rc = hbd_meter_remote(d, &j, w->task, &w->st, &err))) {
		hbd_store_failed(d, c, rc, &err);
		goto out;
	}
	r = hb_proto_ok();
	if (r)
		cJSON_AddStringToObject(r, "phase",
					hb_remote_phase_name(w->st.phase));
	hbd_stage_reply(d, c, r, 1, 0);
out:
	hb_job_row_free(&j);
}

/*
 * A job that ended before its remote job was ever made (a decision
 * recovered from Slurm without the request to run it): the shadow hears
 * it over, with the job's reason, and ends its proxy so.  1 if answered.
 */
static int ended_unstarted(struct hb_daemon *d, struct conn *c,
			   const struct task *t)
{
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };
	cJSON *r;

	if (t->rc != HB_ENOENT || t->rw->task >= 0 ||
	    hb_store_job_get(d->st, t->id, &j, &err))
		return 0;
	if (!hb_store_state_terminal(j.state)) {
		hb_job_row_free(&j);
		return 0;
	}
	r = hb_proto_ok();
	if (r && (!cJSON_AddStringToObject(r, "phase",
					   hb_job_state_name(j.state)) ||
		  !cJSON_AddNumberToObject(r, "exit_code",
					   j.exit_code > 0 ? (double)j.exit_code
							   : 1) ||
		  !cJSON_AddStringToObject(r, "message",
					   j.reason ? j.reason
						    : "it never ran remotely") ||
		  !cJSON_AddStringToObject(r, "data", "") ||
		  !cJSON_AddNumberToObject(r, "next",
					   (double)t->rw->offset) ||
		  !cJSON_AddBoolToObject(r, "done", 1))) {
		cJSON_Delete(r);
		r = NULL;
	}
	hbd_stage_reply(d, c, r, 0, 0);
	hb_job_row_free(&j);
	return 1;
}

/* The loop side of a finished remote_poll. */
static void rpoll_done(struct hb_daemon *d, struct conn *c, struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };
	enum hb_job_state to = remote_state(w->st.phase);
	int recorded = 0, rc;

	if (hbd_ckpt_audit(d, t->id, &w->ckpt, "kubernetes", &err))
		hb_log(HB_LOG_WARN, "%s: %s", t->id, err.msg);
	memset(&err, 0, sizeof(err));
	if (w->done && w->task < 0)
		hbd_ckpt_due(d, t->id, 1);
	if (t->rc && ended_unstarted(d, c, t))
		return;
	if (t->rc) {
		hbd_stage_error(d, c, t->rc, t->err.msg, 0);
		return;
	}
	if (w->done && w->task < 0) {
		if (hb_store_job_get(d->st, t->id, &j, &err)) {
			hbd_stage_error(d, c, HB_ESTORE, err.msg, 0);
			return;
		}
		if (j.state != to && !hb_store_state_terminal(j.state)) {
			if (remote_record(d, c, &j, to, w->st.exit_code, -1,
					  "remote_end"))
				goto out;
			recorded = 1;
		}
	}
	/* metered once final, whoever ended it (the same entries again are
	 * not written twice); an array task on its own */
	if (w->done) {
		if (!j.id[0] && hb_store_job_get(d->st, t->id, &j, &err)) {
			hbd_stage_error(d, c, HB_ESTORE, err.msg, 0);
			return;
		}
		if ((rc = hbd_txn(d, &err)) ||
		    (rc = hbd_meter_remote(d, &j, w->task, &w->st, &err))) {
			hbd_store_failed(d, c, rc, &err);
			goto out;
		}
		recorded = 1;
	}
	hbd_stage_frame(d, c, w->frame, w->frame ? w->flen : 0,
			!w->frame && w->flen, recorded, 0);
	w->frame = NULL;
out:
	hb_job_row_free(&j);
}

/* The loop side of a finished cancel or remote_abandon: what hbd_op_cancel()
 * or hbd_remote_stop() did after the backend's cancel, on the job as it is
 * now (it may have moved while the worker ran). */
static void rcancel_done(struct hb_daemon *d, struct conn *c, struct task *t)
{
	struct rwork *w = t->rw;
	struct hb_job_row j = { 0 };
	struct hb_err err = { 0 };
	int rc;

	if (t->rc && t->rc != HB_ENOENT) {
		hbd_stage_error(d, c, t->rc, t->err.msg, 0);
		return;
	}
	if (hb_store_job_get(d->st, t->id, &j, &err)) {
		hbd_stage_error(d, c, HB_ESTORE, err.msg, 0);
		return;
	}
	if (w->stop == RSTOP_JOB)
		hbd_cancel_rest(d, c, &j);
	else
		stop_rest(d, c, &j, w->rid, w->task, w->why,
			  w->stop == RSTOP_ABANDON, t->rc);
	/* what ran before the cancel is charged (the status the worker
	 * read after it), in the batch that recorded the cancel */
	if (w->st.start_ms > 0 && d->txn_open &&
	    (rc = hbd_meter_remote(d, &j, w->task, &w->st, &err))) {
		hb_log(HB_LOG_ERROR, "metering %s: %s", j.id, err.msg);
		hbd_batch_abort(d, &err);
	}
	hb_job_row_free(&j);
}

/* The loop side of a finished remote task: record, reply, go on. */
void hbd_remote_done(struct task *t)
{
	struct conn *c = t->c;
	struct hb_daemon *d = t->d;

	c->busy = 0;
	/* recorded even when the caller has gone: the remote job runs (or
	 * was cancelled) */
	if (t->kind == TASK_REMOTE_START)
		rstart_done(d, c, t);
	else if (t->kind == TASK_REMOTE_POLL)
		rpoll_done(d, c, t);
	else
		rcancel_done(d, c, t);
	hbd_task_free(t);
	hbd_conn_resume(c);
}

/* A Slurm job id given as a string under key: *out, -1 when absent; -1
 * returned with the error staged when it is not one. */
static int slurm_id_of(struct hb_daemon *d, struct conn *c, const cJSON *req,
		       const char *key, int64_t *out)
{
	struct hb_err e = { 0 };
	const char *sid = NULL;
	char *end;

	*out = -1;
	hb_doc_get_str(req, key, 16, 0, &sid, &e);
	if (e.code) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return -1;
	}
	if (!sid)
		return 0;
	errno = 0;
	*out = strtoll(sid, &end, 10);
	if (errno || *end || end == sid || *out <= 0) {
		hb_err_set(&e, HB_EINVAL, NULL, 0, "%s: not a Slurm job id",
			   key);
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return -1;
	}
	return 0;
}

void hbd_op_remote_start(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	struct hb_job_row j = { 0 };
	char rid[48];
	int64_t slurm_id, claimed, array_id, task;
	struct task *t;
	struct rwork *w;
	cJSON *r;

	if (slurm_id_of(d, c, req, "slurm_job_id", &slurm_id) ||
	    slurm_id_of(d, c, req, "slurm_array_job_id", &array_id))
		return;
	claimed = slurm_id;
	/* Only root and SlurmUser bind a Slurm job here: a `cancel` acts on
	 * the bound job with the daemon's own rights, and a user naming
	 * someone else's job would have it cancelled.  The shadow runs as
	 * the job's user; its proxy is bound by the reconciler, from the tag
	 * only the plugin can write (admin_comment). */
	if (!is_priv(d, c))
		slurm_id = -1;
	if (remote_job_at(d, c, req, &j, 0))
		return;
	if (remote_id(d, c, req, &j, rid, &task))
		goto out;
	if (task < 0 && hb_store_state_terminal(j.state)) {
		r = hb_proto_ok();
		if (r)
			cJSON_AddStringToObject(r, "phase",
						hb_job_state_name(j.state));
		hbd_stage_reply(d, c, r, 0, 0);
		goto out;
	}
	if (!j.jobspec) {
		hbd_stage_error(d, c, HB_ESTATE,
				"the job's script was not kept", 0);
		goto out;
	}
	if (!(t = hbd_remote_task(d, c, TASK_REMOTE_START, &j, rid, task)))
		goto out;
	w = t->rw;
	w->slurm_id = slurm_id;
	/* what the shadow says is only shown to the job itself; the ids
	 * squeue shows are the proxy's */
	w->env_job_id = claimed;
	w->env_array_id = array_id;
	w->uid = (uid_t)j.uid;
	w->jobspec = strdup(j.jobspec);
	w->name = xstrdup(j.name);
	w->user = xstrdup(j.user);
	w->account = xstrdup(j.account);
	if (!w->jobspec || (j.name && !w->name) || (j.user && !w->user) ||
	    (j.account && !w->account)) {
		hbd_task_free(t);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	hbd_stage_task(d, c, t, 0);
out:
	hb_job_row_free(&j);
}

void hbd_op_remote_poll(struct hb_daemon *d, struct conn *c, const cJSON *req)
{
	struct hb_job_row j = { 0 };
	struct hb_err e = { 0 };
	int64_t offset = 0, max = REMOTE_CHUNK_MAX, task;
	char rid[48];
	struct task *t;

	hb_doc_get_i64(req, "offset", 0, INT64_MAX / 2, 0, &offset, &e);
	hb_doc_get_i64(req, "max", 1, REMOTE_CHUNK_MAX, 0, &max, &e);
	if (e.code) {
		hbd_stage_error(d, c, e.code, e.msg, 0);
		return;
	}
	if (remote_job_at(d, c, req, &j, offset))
		return;
	if (remote_id(d, c, req, &j, rid, &task))
		goto out;
	if (!(t = hbd_remote_task(d, c, TASK_REMOTE_POLL, &j, rid, task)))
		goto out;
	t->rw->offset = (uint64_t)offset;
	t->rw->max = (size_t)max;
	/* for the proxy's record and the checkpoint, should this poll find
	 * the job over */
	t->rw->slurm_id = j.slurm_job_id;
	t->rw->uid = (uid_t)j.uid;
	if (task < 0)
		t->rw->ckpt_due = hbd_ckpt_due(d, j.id,
					       hb_store_state_terminal(j.state));
	if (j.jobspec && !(t->rw->jobspec = strdup(j.jobspec))) {
		hbd_task_free(t);
		hbd_stage_error(d, c, HB_ENOMEM, "out of memory", 0);
		goto out;
	}
	hbd_stage_task(d, c, t, 0);
out:
	hb_job_row_free(&j);
}

/* remote_abandon: the shadow gives up on its proxy (hbd_remote_stop()). */
void hbd_op_remote_abandon(struct hb_daemon *d, struct conn *c,
			   const cJSON *req)
{
	hbd_remote_stop(d, c, req, 1);
}
