/*
 * slurmc_jobs.c - what Slurm holds: one job, the job table polled for
 * changes (and the pending jobs per partition it counts), cancel and
 * comment, partitions, nodes and host lists.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/slurm/slurmc_int.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/log.h"
#include "hpcbridge/slurmc.h"

/*
 * Exported by libslurm 22.05 but not declared in its public headers (it
 * lives in src/common/slurm_protocol_defs.c).
 */
extern char *slurm_job_reason_string(enum job_state_reason inx);

/* ------------------------------------------------------------- jobs */

/*
 * What r was allocated: its tres_alloc_str, else (pending, or a string
 * that does not parse) the CPUs and nodes it asks for.  Exclusive:
 * shared is JOB_SHARED_NONE (OverSubscribe=NO, --exclusive); NO_VAL16
 * (no preference) and the sharing kinds are not.
 */
static void alloc_from_slurm(const slurm_job_info_t *r, struct hb_slurmc_job *j)
{
	struct hb_slurmc_tres t;
	struct hb_err err = { 0 };

	if (r->tres_alloc_str && *r->tres_alloc_str &&
	    hb_slurmc_parse_tres(r->tres_alloc_str, &t, &err) == 0) {
		/* TRES name GPUs only where AccountingStorageTRES does:
		 * else the GPUs each node holds */
		bool detail = t.ngpu == 0;

		for (uint32_t i = 0; detail && i < r->gres_detail_cnt; i++)
			if (r->gres_detail_str && r->gres_detail_str[i] &&
			    hb_slurmc_tres_add_gres_detail(
				    &t, r->gres_detail_str[i], &err)) {
				hb_log(HB_LOG_WARN, "slurm job %u: %s",
				       r->job_id, err.msg);
				memset(t.gpu, 0, sizeof(t.gpu));
				t.ngpu = 0;
				break;
			}
		j->alloc_cpus = t.cpus;
		j->alloc_mem_mib = t.mem_mib;
		j->alloc_nodes = t.nodes;
		memcpy(j->alloc_gpu, t.gpu, sizeof(j->alloc_gpu));
		j->alloc_ngpu = t.ngpu;
	} else {
		if (err.code)
			hb_log(HB_LOG_WARN, "slurm job %u: %s", r->job_id,
			       err.msg);
		j->alloc_cpus = r->num_cpus == NO_VAL ? 0 : r->num_cpus;
		j->alloc_nodes = r->num_nodes == NO_VAL ? 0 : r->num_nodes;
	}
	j->exclusive = r->shared == JOB_SHARED_NONE;
}

/*
 * Seconds r spent suspended, as Slurm's run time (squeue %M, scontrol's
 * RunTime) leaves them out: run time is end - suspend_time +
 * pre_sus_time once suspended (suspend_time is the last suspend or
 * resume, pre_sus_time the run time before the last suspend), so the
 * suspended seconds are suspend_time - start - pre_sus_time.
 */
static int64_t suspended_from_slurm(const slurm_job_info_t *r)
{
	int64_t s;

	if (!r->suspend_time || !r->start_time)
		return 0;
	s = (int64_t)r->suspend_time - (int64_t)r->start_time -
	    (int64_t)r->pre_sus_time;
	return s > 0 ? s : 0;
}

/* Our view of one Slurm job record; strings are borrowed from r. */
static void job_from_slurm(const slurm_job_info_t *r, struct hb_slurmc_job *j)
{
	const char *reason;

	memset(j, 0, sizeof(*j));
	j->job_id = r->job_id;
	j->state = hb_slurmc_state_from_slurm(r->job_state, &j->completing);
	j->held = j->state == HB_SLURMC_PENDING && r->priority == 0;
	j->exit_code = -1;
	if (hb_slurmc_state_final(j->state))
		hb_slurmc_decode_exit(r->exit_code, &j->exit_code,
				      &j->exit_signal);
	j->user_id = r->user_id;
	j->submit_time = r->submit_time;
	j->start_time = r->start_time;
	j->end_time = r->end_time;
	j->name = str_or_empty(r->name);
	j->partition = str_or_empty(r->partition);
	j->nodes = str_or_empty(r->nodes);
	j->comment = str_or_empty(r->comment);
	j->admin_comment = str_or_empty(r->admin_comment);
	j->account = str_or_empty(r->account);
	j->time_limit_min = r->time_limit == NO_VAL || r->time_limit == INFINITE
				    ? -1
				    : (int64_t)r->time_limit;
	if (r->state_desc && *r->state_desc)
		reason = r->state_desc;
	else
		reason = slurm_job_reason_string(
			(enum job_state_reason)r->state_reason);
	j->reason = str_or_empty(reason);
	alloc_from_slurm(r, j);
	j->suspended_s = suspended_from_slurm(r);
}

/* A fingerprint of what a poll reports.  Times a pending job only
 * expects (start) or a running job only expects (end) are left out, so
 * the scheduler's estimates do not count as changes. */
static uint64_t job_fingerprint(const struct hb_slurmc_job *j)
{
	uint64_t h = HB_FNV1A_INIT;
	int32_t v[5] = { (int32_t)j->state, j->completing, j->held,
			 j->exit_code, j->exit_signal };
	int64_t t[2] = { 0, 0 };

	if (j->state != HB_SLURMC_PENDING)
		t[0] = (int64_t)j->start_time;
	if (hb_slurmc_state_final(j->state))
		t[1] = (int64_t)j->end_time;
	h = hb_fnv1a(h, v, sizeof(v));
	h = hb_fnv1a(h, t, sizeof(t));
	h = hb_fnv1a_strz(h, j->name);
	h = hb_fnv1a_strz(h, j->partition);
	h = hb_fnv1a_strz(h, j->nodes);
	h = hb_fnv1a_strz(h, j->comment);
	h = hb_fnv1a_strz(h, j->admin_comment);
	h = hb_fnv1a_strz(h, j->reason);
	return h;
}

void hb_slurmc_snap_free(struct snap *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i].gpu);
	free(s);
}

/* The GPUs j holds, or, when Slurm no longer says (it ended), those
 * old saw; kept in next for the next poll.  HB_ENOMEM. */
static int carry_gpus(struct hb_slurmc_job *j, const struct snap *old,
		      struct snap *next)
{
	if (!j->alloc_ngpu && old && old->ngpu) {
		memcpy(j->alloc_gpu, old->gpu, old->ngpu * sizeof(*old->gpu));
		j->alloc_ngpu = old->ngpu;
	}
	if (!j->alloc_ngpu)
		return 0;
	next->gpu = malloc(j->alloc_ngpu * sizeof(*next->gpu));
	if (!next->gpu)
		return HB_ENOMEM;
	memcpy(next->gpu, j->alloc_gpu, j->alloc_ngpu * sizeof(*next->gpu));
	next->ngpu = j->alloc_ngpu;
	return 0;
}

static int snap_cmp(const void *a, const void *b)
{
	const struct snap *x = a, *y = b;

	return (x->job_id > y->job_id) - (x->job_id < y->job_id);
}

static const struct snap *snap_find(const struct snap *s, size_t n, uint32_t id)
{
	struct snap key = { .job_id = id };

	if (!n)
		return NULL;
	return bsearch(&key, s, n, sizeof(*s), snap_cmp);
}

/* Count j in each partition it waits for ("a,b" names two). */
static int count_pending(const struct hb_slurmc_job *j, struct pend **v,
			 size_t *n, size_t *cap)
{
	const char *p = j->partition;

	if (j->state != HB_SLURMC_PENDING || j->held)
		return 0;
	while (*p) {
		size_t len = strcspn(p, ","), i;

		if (len && len < sizeof((*v)->name)) {
			for (i = 0; i < *n; i++)
				if (!strncmp((*v)[i].name, p, len) &&
				    !(*v)[i].name[len])
					break;
			if (i == *n) {
				if (*n == *cap) {
					size_t c = *cap ? *cap * 2 : 8;
					struct pend *nv =
						realloc(*v, c * sizeof(**v));

					if (!nv)
						return HB_ENOMEM;
					*v = nv;
					*cap = c;
				}
				memcpy((*v)[i].name, p, len);
				(*v)[i].name[len] = '\0';
				(*v)[i].n = 0;
				(*n)++;
			}
			(*v)[i].n++;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

/* Report the jobs of resp that changed, then those that left; on success
 * the handle takes the new table and its pending counts. */
static int poll_table(struct hb_slurmc *c, const job_info_msg_t *resp,
		      hb_slurmc_job_cb cb, void *arg)
{
	size_t n = resp->record_count, i, k, npend = 0, cappend = 0;
	struct snap *next = NULL;
	struct pend *pend = NULL;
	struct hb_slurmc_job j;
	int rc = 0;

	if (n) {
		next = calloc(n, sizeof(*next));
		if (!next)
			return HB_ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct snap *old;

		job_from_slurm(&resp->job_array[i], &j);
		if ((rc = count_pending(&j, &pend, &npend, &cappend)))
			goto out;
		next[i].job_id = j.job_id;
		next[i].fp = job_fingerprint(&j);
		old = snap_find(c->snap, c->nsnap, j.job_id);
		if ((rc = carry_gpus(&j, old, &next[i])))
			goto out;
		if (old && old->fp == next[i].fp)
			continue;
		if (cb && (rc = cb(&j, arg)))
			goto out;
		c->stats.jobs_reported++;
	}
	if (n)
		qsort(next, n, sizeof(*next), snap_cmp);
	/* Both sorted: the old ids missing from the new table left it. */
	for (i = 0, k = 0; i < c->nsnap; i++) {
		while (k < n && next[k].job_id < c->snap[i].job_id)
			k++;
		if (k < n && next[k].job_id == c->snap[i].job_id)
			continue;
		memset(&j, 0, sizeof(j));
		j.job_id = c->snap[i].job_id;
		j.state = HB_SLURMC_UNKNOWN;
		j.removed = true;
		j.exit_code = -1;
		j.name = j.partition = j.nodes = "";
		j.comment = j.admin_comment = j.reason = "";
		if (cb && (rc = cb(&j, arg)))
			goto out;
		c->stats.jobs_removed++;
	}
	hb_slurmc_snap_free(c->snap, c->nsnap);
	c->snap = next;
	c->nsnap = n;
	next = NULL;
	free(c->pend);
	c->pend = pend;
	c->npend = npend;
	pend = NULL;
	c->update_time = resp->last_update;
	c->stats.last_update = resp->last_update;
	c->stats.jobs_tracked = n;
out:
	hb_slurmc_snap_free(next, n);
	free(pend);
	return rc;
}

int hb_slurmc_pending(const struct hb_slurmc *c, const char *partition,
		      uint32_t *out)
{
	*out = 0;
	if (!c || !c->update_time)
		return HB_ENOENT;
	for (size_t i = 0; i < c->npend; i++)
		if (!strcmp(c->pend[i].name, partition)) {
			*out = c->pend[i].n;
			break;
		}
	return 0;
}

int hb_slurmc_poll(struct hb_slurmc *c, hb_slurmc_job_cb cb, void *arg,
		   struct hb_err *err)
{
	job_info_msg_t *resp = NULL;
	int rc, e;

	if (!c)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_poll: no handle");
	c->stats.polls++;
	rc = slurm_load_jobs(c->update_time, &resp, SHOW_ALL | SHOW_DETAIL);
	if (rc != SLURM_SUCCESS) {
		e = slurm_errno_of(rc);
		if (resp) /* not expected on error, but never leak it */
			slurm_free_job_info_msg(resp);
		if (e == SLURM_NO_CHANGE_IN_DATA) {
			c->stats.polls_unchanged++;
			return 0;
		}
		return fail_slurm(err, e, "slurm_load_jobs");
	}
	rc = poll_table(c, resp, cb, arg);
	slurm_free_job_info_msg(resp);
	if (rc == HB_ENOMEM)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	return rc;
}

void hb_slurmc_poll_reset(struct hb_slurmc *c)
{
	if (!c)
		return;
	hb_slurmc_snap_free(c->snap, c->nsnap);
	c->snap = NULL;
	c->nsnap = 0;
	free(c->pend);
	c->pend = NULL;
	c->npend = 0;
	c->update_time = 0;
	c->stats.jobs_tracked = 0;
	c->stats.last_update = 0;
}

void hb_slurmc_get_stats(const struct hb_slurmc *c, struct hb_slurmc_stats *out)
{
	if (c)
		*out = c->stats;
	else
		memset(out, 0, sizeof(*out));
}

void hb_slurmc_job_clear(struct hb_slurmc_job *job)
{
	if (!job)
		return;
	hb_arena_free(&job->mem);
	memset(job, 0, sizeof(*job));
	job->exit_code = -1;
}

int hb_slurmc_job(struct hb_slurmc *c, uint32_t job_id,
		  struct hb_slurmc_job *out, struct hb_err *err)
{
	job_info_msg_t *resp = NULL;
	const slurm_job_info_t *r = NULL;
	struct hb_slurmc_job j;
	struct hb_arena mem;
	int rc = 0;

	if (!c || !out)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_job: no handle or output");
	if (slurm_load_job(&resp, job_id, SHOW_ALL | SHOW_DETAIL) !=
	    SLURM_SUCCESS) {
		int e = slurm_errno_of(SLURM_ERROR);

		if (resp)
			slurm_free_job_info_msg(resp);
		return fail_slurm(err, e, "slurm_load_job");
	}
	/* An array's id brings all its tasks: take the record of the id. */
	for (uint32_t i = 0; i < resp->record_count; i++) {
		if (resp->job_array[i].job_id == job_id) {
			r = &resp->job_array[i];
			break;
		}
	}
	if (!r && resp->record_count)
		r = &resp->job_array[0];
	if (!r) {
		rc = hb_err_set(err, HB_ENOENT, NULL, 0, "job %u: not found",
				job_id);
		goto out;
	}
	job_from_slurm(r, &j);
	hb_arena_init(&mem, 0);
	if (!(j.name = hb_arena_strdup(&mem, j.name)) ||
	    !(j.partition = hb_arena_strdup(&mem, j.partition)) ||
	    !(j.nodes = hb_arena_strdup(&mem, j.nodes)) ||
	    !(j.comment = hb_arena_strdup(&mem, j.comment)) ||
	    !(j.admin_comment = hb_arena_strdup(&mem, j.admin_comment)) ||
	    !(j.account = hb_arena_strdup(&mem, j.account)) ||
	    !(j.reason = hb_arena_strdup(&mem, j.reason))) {
		hb_arena_free(&mem);
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	j.mem = mem;
	*out = j;
out:
	slurm_free_job_info_msg(resp);
	return rc;
}

int hb_slurmc_batch_script(struct hb_slurmc *c, uint32_t job_id,
			   struct hb_buf *out, struct hb_err *err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int rc, e;

	if (!c || !out)
		return hb_err_set(
			err, HB_EINVAL, NULL, 0,
			"hb_slurmc_batch_script: no handle or output");
	if (!(f = open_memstream(&text, &len)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	rc = slurm_job_batch_script(f, job_id);
	e = rc == SLURM_SUCCESS ? 0 : slurm_errno_of(rc);
	if (fclose(f) && !e) /* the stream's last write failed */
		e = ENOMEM;
	if (e == ESLURM_JOB_SCRIPT_MISSING)
		rc = hb_err_set(err, HB_ENOENT, NULL, 0,
				"job %u: Slurm keeps no batch script for it",
				job_id);
	else if (e)
		rc = fail_slurm(err, e, "slurm_job_batch_script");
	else if ((rc = hb_buf_append(out, text, len)) == HB_ETOOBIG)
		hb_err_set(err, rc, NULL, 0,
			   "job %u: the batch script (%zu bytes) passes %zu",
			   job_id, len, out->max);
	else if (rc)
		hb_err_set(err, rc, NULL, 0, "out of memory");
	free(text);
	return rc;
}

int hb_slurmc_cancel(struct hb_slurmc *c, uint32_t job_id, int signal,
		     struct hb_err *err)
{
	uint16_t sig = SIGKILL, flags = 0;
	int e;

	if (!c)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_cancel: no handle");
	if (signal < 0 || signal > SIGRTMAX)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "signal %d: out of range", signal);
	if (signal) {
		sig = (uint16_t)signal;
		flags = KILL_FULL_JOB;
	}
	if (slurm_kill_job(job_id, sig, flags) == SLURM_SUCCESS)
		return 0;
	e = slurm_errno_of(SLURM_ERROR);
	if (e == ESLURM_ALREADY_DONE)
		return HB_SLURMC_DONE;
	return fail_slurm(err, e, "slurm_kill_job");
}

int hb_slurmc_set_comment(struct hb_slurmc *c, uint32_t job_id,
			  const char *text, struct hb_err *err)
{
	job_desc_msg_t d;

	if (!c)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_set_comment: no handle");
	slurm_init_job_desc_msg(&d);
	d.job_id = job_id;
	d.comment = (char *)(text ? text : "");
	if (slurm_update_job(&d) != SLURM_SUCCESS)
		return fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				  "slurm_update_job(comment)");
	return 0;
}

/* ------------------------------------------------ partitions, nodes */

int hb_slurmc_partitions(struct hb_slurmc *c, hb_slurmc_part_cb cb, void *arg,
			 struct hb_err *err)
{
	partition_info_msg_t *resp = NULL;
	int rc = 0;

	if (!c || !cb)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_partitions: no handle or "
				  "callback");
	rc = slurm_load_partitions(0, &resp, SHOW_ALL);
	if (rc != SLURM_SUCCESS) {
		int e = slurm_errno_of(rc);

		if (resp)
			slurm_free_partition_info_msg(resp);
		return fail_slurm(err, e, "slurm_load_partitions");
	}
	for (uint32_t i = 0; i < resp->record_count; i++) {
		const partition_info_t *r = &resp->partition_array[i];
		struct hb_slurmc_partition p = { 0 };

		if (!r->name)
			continue;
		p.name = r->name;
		switch (r->state_up) {
		case PARTITION_UP:
			p.state = HB_SLURMC_PART_UP;
			break;
		case PARTITION_DOWN:
			p.state = HB_SLURMC_PART_DOWN;
			break;
		case PARTITION_DRAIN:
			p.state = HB_SLURMC_PART_DRAIN;
			break;
		default:
			p.state = HB_SLURMC_PART_INACTIVE;
			break;
		}
		p.is_default = (r->flags & PART_FLAG_DEFAULT) != 0;
		if (r->max_time == INFINITE || r->max_time == NO_VAL)
			p.max_time = HB_SLURMC_INFINITE;
		else
			p.max_time = r->max_time;
		p.total_cpus = r->total_cpus;
		p.total_nodes = r->total_nodes;
		p.nodes = str_or_empty(r->nodes);
		if ((rc = cb(&p, arg)))
			break;
	}
	slurm_free_partition_info_msg(resp);
	return rc;
}

/* sinfo's %T for a node state word, simplified: the base state, DRAIN
 * as drained/draining, FAIL as fail/failing, "*" when not responding. */
static void node_state_text(enum hb_slurmc_node_state base, uint32_t st,
			    char *out, size_t size)
{
	bool busy = base == HB_SLURMC_NODE_ALLOCATED ||
		    base == HB_SLURMC_NODE_MIXED ||
		    (st & NODE_STATE_COMPLETING);
	const char *name;

	if (st & NODE_STATE_DRAIN)
		name = busy ? "draining" : "drained";
	else if (st & NODE_STATE_FAIL)
		name = busy ? "failing" : "fail";
	else if (base == HB_SLURMC_NODE_IDLE && (st & NODE_STATE_COMPLETING))
		name = "completing";
	else
		name = hb_slurmc_node_state_name(base);
	snprintf(out, size, "%s%s", name,
		 (st & NODE_STATE_NO_RESPOND) ? "*" : "");
}

static enum hb_slurmc_node_state node_base(uint32_t st)
{
	switch (st & NODE_STATE_BASE) {
	case NODE_STATE_DOWN:
		return HB_SLURMC_NODE_DOWN;
	case NODE_STATE_IDLE:
		return HB_SLURMC_NODE_IDLE;
	case NODE_STATE_ALLOCATED:
		return HB_SLURMC_NODE_ALLOCATED;
	case NODE_STATE_MIXED:
		return HB_SLURMC_NODE_MIXED;
	case NODE_STATE_FUTURE:
		return HB_SLURMC_NODE_FUTURE;
	default:
		return HB_SLURMC_NODE_UNKNOWN;
	}
}

int hb_slurmc_nodes(struct hb_slurmc *c, hb_slurmc_node_cb cb, void *arg,
		    struct hb_err *err)
{
	node_info_msg_t *resp = NULL;
	int rc;

	if (!c || !cb)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_nodes: no handle or callback");
	rc = slurm_load_node(0, &resp, SHOW_ALL | SHOW_MIXED | SHOW_FUTURE);
	if (rc != SLURM_SUCCESS) {
		int e = slurm_errno_of(rc);

		if (resp)
			slurm_free_node_info_msg(resp);
		return fail_slurm(err, e, "slurm_load_node");
	}
	for (uint32_t i = 0; i < resp->record_count; i++) {
		const node_info_t *r = &resp->node_array[i];
		struct hb_slurmc_node n = { 0 };
		uint16_t alloc_cpus = 0;
		uint64_t alloc_mem = 0;
		char text[32];

		if (!r->name)
			continue;
		if (r->select_nodeinfo) {
			slurm_get_select_nodeinfo(
				r->select_nodeinfo, SELECT_NODEDATA_SUBCNT,
				NODE_STATE_ALLOCATED, &alloc_cpus);
			slurm_get_select_nodeinfo(
				r->select_nodeinfo, SELECT_NODEDATA_MEM_ALLOC,
				NODE_STATE_ALLOCATED, &alloc_mem);
		}
		n.name = r->name;
		n.state = node_base(r->node_state);
		/* A node with some CPUs in use is mixed, as sinfo says. */
		if (n.state == HB_SLURMC_NODE_ALLOCATED && alloc_cpus &&
		    alloc_cpus < r->cpus)
			n.state = HB_SLURMC_NODE_MIXED;
		n.drain = (r->node_state & NODE_STATE_DRAIN) != 0;
		n.not_responding = (r->node_state & NODE_STATE_NO_RESPOND) != 0;
		node_state_text(n.state, r->node_state, text, sizeof(text));
		n.state_text = text;
		n.cpus = r->cpus;
		n.alloc_cpus = alloc_cpus;
		n.real_memory_mb = r->real_memory;
		n.alloc_memory_mb = alloc_mem;
		n.gres = str_or_empty(r->gres);
		n.gres_used = str_or_empty(r->gres_used);
		n.reason = str_or_empty(r->reason);
		if ((rc = cb(&n, arg)))
			break;
	}
	slurm_free_node_info_msg(resp);
	return rc;
}

long hb_slurmc_hostlist_count(const char *hostlist, const char *const *names,
			      size_t n)
{
	hostlist_t hl;
	long count = 0;

	if (!hostlist || !*hostlist)
		return 0;
	if (!(hl = slurm_hostlist_create(hostlist)))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (names[i] && slurm_hostlist_find(hl, names[i]) >= 0)
			count++;
	slurm_hostlist_destroy(hl);
	return count;
}
