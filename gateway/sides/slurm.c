/*
 * sides/slurm.c - the daemon's Slurm side: hb_slurm_side_ops over the
 * Slurm client (slurmc.h).
 *
 * A script submitted through the daemon does not pass through sbatch, so
 * its #SBATCH (or #PBS) directives are read here with the translators and
 * carried onto the libslurm request, every field or the job refused
 * naming the one Slurm cannot take (hb_slurmc_from_jobspec).  The job's
 * environment gets HPCBRIDGE_JOB_ID, so the job_submit plugin lets the
 * job through instead of asking the daemon again.
 *
 * A job is submitted as its user (hb_slurmc_submit with as_user: the RPC
 * is made by a child that has become the user, so Slurm's partition
 * access, associations, limits and job_submit policies see the user, not
 * root); the admin comment that tags it is set afterwards as root.
 *
 * The worker pool calls in from several threads; one mutex serialises
 * them over the one Slurm client handle (libslurm keeps per-process
 * state, and the handle is not thread-safe).  The submission's fork
 * happens under it too, so no other thread is inside libslurm then.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hpcbridge/slurmc.h"
#include "hpcbridge/translate.h"
#include "gateway/sides/slurm.h"

struct hb_slurm_side {
	struct hb_slurmc *c;
	pthread_mutex_t mu;
};

int hb_slurm_side_open(const char *slurm_conf, struct hb_slurm_side **out,
			  struct hb_err *err)
{
	struct hb_slurm_side *sb = calloc(1, sizeof(*sb));
	int rc;

	*out = NULL;
	if (!sb)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	if ((rc = hb_slurmc_open(slurm_conf, &sb->c, err))) {
		free(sb);
		return rc;
	}
	pthread_mutex_init(&sb->mu, NULL);
	*out = sb;
	return 0;
}

void hb_slurm_side_close(struct hb_slurm_side *sb)
{
	if (!sb)
		return;
	hb_slurmc_close(sb->c);
	pthread_mutex_destroy(&sb->mu);
	free(sb);
}

/* The local zone's offset from UTC now, seconds east. */
static int32_t utc_offset(time_t t)
{
	struct tm tm;

	return localtime_r(&t, &tm) ? (int32_t)tm.tm_gmtoff : 0;
}

static int submit(void *ctx, const struct hb_submit_req *req,
		  int64_t *slurm_job_id, struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	struct hb_slurmc_submit r = { 0 };
	struct hb_jobspec spec;
	const char **env = NULL;
	char idvar[80], *namevar = NULL;
	size_t nenv = 0, k = 0;
	uint32_t id = 0;
	int rc;

	r.partition = req->partition;
	hb_jobspec_init(&spec, req->name ? req->name : "-");
	rc = req->jobspec ? hb_jobspec_from_json(req->jobspec, &spec, err)
			  : hb_parse_any(req->script, strlen(req->script),
					 req->name ? req->name : "-", NULL,
					 &spec, err);
	if (rc)
		goto out;
	while (req->env && req->env[nenv])
		nenv++;
	env = calloc(nenv + 3, sizeof(*env));
	if (!env) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	/* the job's own name is set below, as sbatch sets it, not inherited */
	for (size_t i = 0, n = nenv; i < n; i++)
		if (strncmp(req->env[i], "SLURM_JOB_NAME=", 15))
			env[k++] = req->env[i];
	nenv = k;
	snprintf(idvar, sizeof(idvar), "HPCBRIDGE_JOB_ID=%s", req->id);
	env[nenv] = idvar;
	r.script = req->script;
	r.as_user = true;
	r.uid = req->uid;
	r.gid = req->gid;
	r.work_dir = req->cwd;
	r.env = env;
	/* every directive onto the request, or the job refused naming it */
	if ((rc = hb_slurmc_from_jobspec(&spec, &r, (int64_t)time(NULL),
					 utc_offset(time(NULL)), NULL, err)))
		goto out;
	if (!r.name)
		r.name = req->name;
	/*
	 * sbatch hands the job its name in SLURM_JOB_NAME, and slurmstepd
	 * reads it from there, for the script and for %x in output paths;
	 * a job submitted through the API has none unless it is given one.
	 */
	if (r.name && asprintf(&namevar, "SLURM_JOB_NAME=%s", r.name) < 0) {
		namevar = NULL;
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	env[nenv + 1] = namevar;
	r.admin_comment = req->admin_comment;
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_submit(sb->c, &r, &id, err);
	pthread_mutex_unlock(&sb->mu);
	if (!rc)
		*slurm_job_id = id;
out:
	free(namevar);
	free(env);
	hb_jobspec_free(&spec);
	return rc;
}


/* A Slurm job id as libslurm takes it; 0 with err set when out of range. */
static uint32_t job_id32(int64_t id, struct hb_err *err)
{
	if (id <= 0 || id > UINT32_MAX) {
		hb_err_set(err, HB_EINVAL, NULL, 0,
			   "Slurm job id %lld out of range", (long long)id);
		return 0;
	}
	return (uint32_t)id;
}

static int cancel(void *ctx, int64_t slurm_job_id, struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	uint32_t id = job_id32(slurm_job_id, err);
	int rc;

	if (!id)
		return HB_EINVAL;
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_cancel(sb->c, id, 0, err);
	pthread_mutex_unlock(&sb->mu);
	return rc == HB_SLURMC_DONE ? 0 : rc;
}

static int suspend(void *ctx, int64_t slurm_job_id, int resume,
		   struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	uint32_t id = job_id32(slurm_job_id, err);
	int rc;

	if (!id)
		return HB_EINVAL;
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_suspend(sb->c, id, resume != 0, err);
	pthread_mutex_unlock(&sb->mu);
	return rc;
}

static int retag(void *ctx, int64_t slurm_job_id, const char *admin,
		 const char *comment, struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	uint32_t id = job_id32(slurm_job_id, err);
	int rc;

	if (!id)
		return HB_EINVAL;
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_set_admin_comment(sb->c, id, admin, err);
	if (!rc && comment)
		rc = hb_slurmc_set_comment(sb->c, id, comment, err);
	pthread_mutex_unlock(&sb->mu);
	return rc;
}

/* Slurm keeps an admin comment whole; this one stays readable in sacct. */
#define ANNOTATED_MAX 1024

static int annotate(void *ctx, int64_t slurm_job_id, const char *tag,
		    const char *text, struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	struct hb_slurmc_job j;
	uint32_t id = job_id32(slurm_job_id, err);
	size_t n = strlen(tag);
	char buf[ANNOTATED_MAX];
	int rc;

	if (!id)
		return HB_EINVAL;
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_job(sb->c, id, &j, err);
	if (rc)
		goto out;
	/* only the job this tag names, and only once */
	if (!strncmp(j.admin_comment, tag, n) &&
	    (!j.admin_comment[n] || j.admin_comment[n] == ' ') &&
	    !strstr(j.admin_comment, text)) {
		if ((size_t)snprintf(buf, sizeof(buf), "%s; %s",
				     j.admin_comment, text) >= sizeof(buf))
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"job %u: the admin comment would pass "
					"%d bytes",
					id, ANNOTATED_MAX);
		else
			rc = hb_slurmc_set_admin_comment(sb->c, id, buf, err);
	}
	hb_slurmc_job_clear(&j);
out:
	pthread_mutex_unlock(&sb->mu);
	return rc;
}

struct poll_ctx {
	int (*cb)(const struct hb_slurm_change *, void *);
	void *arg;
};

/* Slurm's state as a job state (enum hb_job_state); -1 for one to leave
 * alone. */
static int store_state(const struct hb_slurmc_job *j)
{
	switch (j->state) {
	case HB_SLURMC_PENDING:
		return HB_JOB_QUEUED;
	case HB_SLURMC_RUNNING:
	case HB_SLURMC_SUSPENDED:
		return HB_JOB_RUNNING;
	case HB_SLURMC_COMPLETE:
		return HB_JOB_SUCCEEDED;
	case HB_SLURMC_CANCELLED:
		return HB_JOB_CANCELLED;
	case HB_SLURMC_UNKNOWN:
		return -1;
	default: /* failed, timeout, node_fail, preempted, boot_fail, ... */
		return HB_JOB_FAILED;
	}
}

/*
 * What the daemon meters a job with: its times and its allocation.  Only
 * times that happened: Slurm's start of a queued job is the scheduler's
 * guess and its end of a running one the time limit, and a job cancelled
 * while queued gets start = end = the cancel; one that ran had nodes,
 * and keeps their names once it ended.
 */
static void meter_fields(const struct hb_slurmc_job *j,
			 struct hb_slurm_change *ch)
{
	bool final = hb_slurmc_state_final(j->state);
	bool started = j->state == HB_SLURMC_RUNNING ||
		       j->state == HB_SLURMC_SUSPENDED ||
		       (final && j->nodes && j->nodes[0]);
	uint32_t n = j->alloc_ngpu;

	_Static_assert(sizeof(ch->gpu) / sizeof(ch->gpu[0]) ==
			       HB_SLURMC_GPU_TYPES,
		       "one GPU slot per Slurm GPU type");
	_Static_assert(sizeof(ch->gpu[0].type) == sizeof(j->alloc_gpu[0].type),
		       "GPU type sizes");
	ch->start_s = started ? (int64_t)j->start_time : 0;
	ch->end_s = started && final ? (int64_t)j->end_time : 0;
	ch->suspended_s = j->suspended_s;
	snprintf(ch->partition, sizeof(ch->partition), "%s",
		 j->partition ? j->partition : "");
	ch->cpus = j->alloc_cpus;
	ch->nodes = j->alloc_nodes;
	ch->mem_mib = j->alloc_mem_mib;
	ch->exclusive = j->exclusive;
	if (n > HB_SLURMC_GPU_TYPES)
		n = HB_SLURMC_GPU_TYPES;
	for (uint32_t i = 0; i < n; i++) {
		memcpy(ch->gpu[i].type, j->alloc_gpu[i].type,
		       sizeof(ch->gpu[i].type));
		ch->gpu[i].count = j->alloc_gpu[i].count;
	}
	ch->ngpu = n;
}

/* The number of "snap=N" or "cost=N": N in decimal, 0..INT64_MAX, else
 * 0. */
static int64_t number_of(const char *w, size_t n)
{
	int64_t v = 0;

	if (n > 19 || !n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (w[i] < '0' || w[i] > '9' ||
		    v > (INT64_MAX - (w[i] - '0')) / 10)
			return 0;
		v = v * 10 + (w[i] - '0');
	}
	return v;
}

int hb_slurm_tag_read(const char *admin_comment, struct hb_slurm_change *ch)
{
	static const char tag[] = "hpcbridge:";
	const char *p;
	size_t n;

	ch->id[0] = ch->target[0] = '\0';
	ch->snap = ch->cost_micro = 0;
	if (!admin_comment || strncmp(admin_comment, tag, sizeof(tag) - 1))
		return HB_ENOENT;
	p = admin_comment + sizeof(tag) - 1;
	n = strcspn(p, " ;");
	if (n == 0 || n >= sizeof(ch->id))
		return HB_ENOENT;
	memcpy(ch->id, p, n);
	ch->id[n] = '\0';
	/* the tag's words end where the original request ("orig:") or a
	 * note ("; ...") begins: what follows is no word of the tag */
	for (p += n; *p == ' '; p += n) {
		p++;
		n = strcspn(p, " ;");
		if (!strncmp(p, "orig:", 5))
			break;
		if (n > 7 && n - 7 < sizeof(ch->target) &&
		    !strncmp(p, "target=", 7)) {
			memcpy(ch->target, p + 7, n - 7);
			ch->target[n - 7] = '\0';
		} else if (n > 5 && !strncmp(p, "snap=", 5)) {
			ch->snap = number_of(p + 5, n - 5);
		} else if (n > 5 && !strncmp(p, "cost=", 5)) {
			ch->cost_micro = number_of(p + 5, n - 5);
		}
	}
	return 0;
}

static int poll_job(const struct hb_slurmc_job *j, void *arg)
{
	struct poll_ctx *pc = arg;
	struct hb_slurm_change ch = { 0 };
	int state = store_state(j);

	if (j->removed || state < 0 || hb_slurm_tag_read(j->admin_comment, &ch))
		return 0;
	ch.state = (enum hb_job_state)state;
	ch.slurm_job_id = j->job_id;
	ch.exit_code = -1;
	if (hb_slurmc_state_final(j->state))
		ch.exit_code =
			j->exit_signal ? 128 + j->exit_signal : j->exit_code;
	ch.uid = j->user_id;
	ch.account = j->account;
	ch.name = j->name;
	ch.time_limit_min = j->time_limit_min;
	meter_fields(j, &ch);
	return pc->cb(&ch, pc->arg);
}

static int poll_changes(void *ctx,
			int (*cb)(const struct hb_slurm_change *, void *),
			void *arg, struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	struct poll_ctx pc = { cb, arg };
	int rc;

	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_poll(sb->c, poll_job, &pc, err);
	pthread_mutex_unlock(&sb->mu);
	return rc;
}

static int batch_script(void *ctx, int64_t slurm_job_id, struct hb_buf *out,
			struct hb_err *err)
{
	struct hb_slurm_side *sb = ctx;
	uint32_t id = job_id32(slurm_job_id, err);
	int rc;

	if (!id)
		return HB_EINVAL;
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_batch_script(sb->c, id, out, err);
	pthread_mutex_unlock(&sb->mu);
	return rc;
}

static void poll_reset(void *ctx)
{
	struct hb_slurm_side *sb = ctx;

	pthread_mutex_lock(&sb->mu);
	hb_slurmc_poll_reset(sb->c);
	pthread_mutex_unlock(&sb->mu);
}

/* Partitions' node lists, for the estimate. */
struct parts_ctx {
	struct hb_decider_part *v;
	size_t n;
	char **hostlist; /* per v[i], strdup'ed, or NULL */
	const char **idle;
	size_t nidle, capidle;
	int rc;
};

static int part_cb(const struct hb_slurmc_partition *p, void *arg)
{
	struct parts_ctx *pc = arg;

	for (size_t i = 0; i < pc->n; i++)
		if (!strcmp(pc->v[i].name, p->name) && !pc->hostlist[i] &&
		    !(pc->hostlist[i] = strdup(p->nodes)))
			return pc->rc = HB_ENOMEM;
	return 0;
}

static int node_cb(const struct hb_slurmc_node *nd, void *arg)
{
	struct parts_ctx *pc = arg;
	const char **v;
	char *name;

	if (nd->state != HB_SLURMC_NODE_IDLE || nd->drain ||
	    nd->not_responding)
		return 0;
	if (pc->nidle == pc->capidle) {
		size_t cap = pc->capidle ? pc->capidle * 2 : 64;

		if (!(v = realloc(pc->idle, cap * sizeof(*v))))
			return pc->rc = HB_ENOMEM;
		pc->idle = v;
		pc->capidle = cap;
	}
	if (!(name = strdup(nd->name)))
		return pc->rc = HB_ENOMEM;
	pc->idle[pc->nidle++] = name;
	return 0;
}

static int estimate(void *ctx, struct hb_decider_part *out, size_t n,
		    struct hb_err *err)
{
	static const char probe[] = "#!/bin/sh\ntrue\n";
	/* slurmctld runs job_submit for a will_run too: the gateway's
	 * variable tells job_submit/hpcbridge the probe is the gateway's own,
	 * as for every job it submits */
	static const char *const probe_env[] = { "PATH=/usr/bin:/bin",
						 "HPCBRIDGE_JOB_ID=probe",
						 NULL };
	struct hb_slurm_side *sb = ctx;
	struct parts_ctx pc = { .v = out, .n = n };
	time_t now = time(NULL), start;
	int rc;

	if (!(pc.hostlist = calloc(n ? n : 1, sizeof(*pc.hostlist))))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	pthread_mutex_lock(&sb->mu);
	rc = hb_slurmc_partitions(sb->c, part_cb, &pc, err);
	if (!rc)
		rc = hb_slurmc_nodes(sb->c, node_cb, &pc, err);
	for (size_t i = 0; !rc && i < n; i++) {
		struct hb_slurmc_submit r = { 0 };
		struct hb_err e = { 0 };
		long idle;

		if (!pc.hostlist[i])
			continue; /* Slurm has no such partition */
		idle = hb_slurmc_hostlist_count(pc.hostlist[i], pc.idle,
						pc.nidle);
		out[i].idle_known = idle >= 0;
		out[i].idle_nodes = idle > 0 ? (uint32_t)idle : 0;
		/* the reconciler's last job table (polled every second) */
		(void)hb_slurmc_pending(sb->c, out[i].name, &out[i].pending);
		r.script = probe;
		r.env = probe_env;
		r.partition = out[i].name;
		r.nodes = 1;
		r.ntasks = 1;
		r.time_limit = 1;
		/* A partition that cannot take the probe (down, or limits)
		 * keeps no estimate: the policy's default wait stands. */
		if (hb_slurmc_will_run(sb->c, &r, &start, NULL, 0, &e) == 0) {
			out[i].wait_known = true;
			out[i].wait = start > now ? start - now : 0;
		}
	}
	pthread_mutex_unlock(&sb->mu);
	if (!rc && pc.rc)
		rc = hb_err_set(err, pc.rc, NULL, 0, "out of memory");
	for (size_t i = 0; i < n; i++)
		free(pc.hostlist[i]);
	for (size_t i = 0; i < pc.nidle; i++)
		free((char *)pc.idle[i]);
	free(pc.hostlist);
	free(pc.idle);
	return rc;
}

void hb_slurm_side_ops(struct hb_slurm_side *sb,
			  struct hb_slurm_side_ops *out)
{
	memset(out, 0, sizeof(*out));
	out->ctx = sb;
	out->slurm_submit = submit;
	out->slurm_cancel = cancel;
	out->slurm_poll = poll_changes;
	out->slurm_estimate = estimate;
	out->slurm_suspend = suspend;
	out->slurm_retag = retag;
	out->slurm_annotate = annotate;
	out->slurm_batch_script = batch_script;
	out->slurm_poll_reset = poll_reset;
}
