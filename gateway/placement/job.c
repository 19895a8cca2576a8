/*
 * job.c - one job placed: what Slurm (or a CLI caller, or a managed
 * MPIJob) asked for, read into the engine's input, decided, explained and
 * charged to the snapshot's spend.  The daemon's decider and the
 * job_submit plugin (deciding in slurmctld from the published snapshot)
 * run this same code, so a decision reads the same wherever it is made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/translate.h"

void hb_place_out_free(struct hb_place_out *out)
{
	free(out->explanation);
	free(out->doc_json);
	out->explanation = NULL;
	out->doc_json = NULL;
}

/* A name the daemon would not read from a request (hb_doc_get_str()'s
 * limit in hb_place_request_read()). */
static int long_name(const char *field, const char *s, struct hb_err *err)
{
	if (!s || strnlen(s, HB_PLACE_NAME_MAX + 1) <= HB_PLACE_NAME_MAX)
		return 0;
	return hb_err_set(err, HB_EINVAL, NULL, 0, "%s: longer than %d bytes",
			  field, HB_PLACE_NAME_MAX);
}

/* The job as the engine sees it: the jobspec Slurm resolved, with the
 * request's identity over it: job->spec, or own read from job->jobspec.
 * The one to use in *use. */
static int read_job(const struct hb_place_job *job, struct hb_jobspec *own,
		    struct hb_jobspec **use, struct hb_err *err)
{
	struct hb_jobspec *spec = job->spec ? job->spec : own;
	int rc;

	if ((rc = long_name("account", job->account, err)) ||
	    (rc = long_name("partition", job->partition, err)) ||
	    (rc = long_name("slurm_job_name", job->name, err)))
		return rc;
	if (job->spec) {
		/* read already */
	} else if (job->jobspec) {
		if ((rc = hb_jobspec_from_json(job->jobspec, spec, err)))
			return rc;
	} else {
		spec->nodes_min = spec->nodes_max = 1;
		spec->ntasks = 1;
	}
	if (!spec->time_limit && job->time_limit_min != HB_RULES_NO_LIMIT)
		spec->time_limit = (uint64_t)job->time_limit_min * 60;
	*use = spec;
	return 0;
}

/* Why, from the explanation's first line ("decision: kubernetes (queue
 * q): WHY" or "decision: reject: WHY"): the one line a user sees. */
static void first_line(const char *text, char *out, size_t size)
{
	const char *nl = strchr(text, '\n');
	const char *end = nl ? nl : text + strlen(text);
	const char *p = text;
	size_t n;

	if (!strncmp(p, "decision: ", 10)) {
		const char *colon = memchr(p + 10, ':', (size_t)(end - p - 10));

		p = colon && colon[1] == ' ' ? colon + 2 : p + 10;
	}
	n = (size_t)(end - p);
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* A rejection says what each side lacks: its explanation lines
 * ("Slurm (partition p): cannot run the job: ...") follow, after "; ". */
static void add_sides(const char *text, char *out, size_t size)
{
	size_t len = strlen(out);

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if ((!strncmp(p, "Slurm (", 7) || !strncmp(p, "Kubernetes (", 12)) &&
		    len + 2 < size) {
			int k = snprintf(out + len, size - len, "; %.*s",
					 (int)n, p);

			len = k < 0 || (size_t)k >= size - len ? size - 1
							       : len + (size_t)k;
		}
		p = nl ? nl + 1 : NULL;
	}
}

/* Why the cluster may not run the job whatever its capacity (see
 * struct hb_place_job's k8s): it runs as root, a path it works in or
 * writes is on no volume the cluster mounts, or the image it names is
 * not one the site allows.  The text in why; NULL if nothing stops it. */
static const char *kube_refusal(const struct hb_place_job *job,
				const struct hb_jobspec *spec, char *why,
				size_t size)
{
	struct hb_err e = { 0 };

	if (!job->k8s)
		return NULL;
	if (job->uid == 0) {
		snprintf(why, size,
			 "the job runs as root, and root never runs on the "
			 "cluster (submit it as a user)");
		return why;
	}
	if (job->k8s->uid_range &&
	    hb_k8s_uid_in_range(job->k8s->uid_range, job->uid) == 0) {
		snprintf(why, size,
			 "uid %lld is outside the uids the cluster's namespace "
			 "admits (kubernetes.openshift.uid_range %.60s)",
			 (long long)job->uid, job->k8s->uid_range);
		return why;
	}
	if (hb_k8s_paths_check(job->k8s, spec, NULL, &e) == 0 &&
	    hb_k8s_container_check(job->k8s, spec, &e) == 0)
		return NULL;
	/* the message alone (its place would be "job_desc", Slurm's
	 * description of the job) */
	size = strnlen(e.msg, size - 1);
	memcpy(why, e.msg, size);
	why[size] = '\0';
	return why;
}

int32_t hb_place_local_offset(int64_t now)
{
	time_t t = (time_t)now;
	struct tm tm;

	return localtime_r(&t, &tm) ? (int32_t)tm.tm_gmtoff : 0;
}

int hb_place_job(const struct hb_policy *pol, struct hb_snapshot *snap,
		 const struct hb_place_job *job, int64_t now, const char *note,
		 struct hb_place_out *out, struct hb_err *err)
{
	struct hb_jobspec own, *spec = &own;
	struct hb_place_input in;
	struct hb_place_result res;
	struct hb_buf text, doc;
	struct hb_emit *e = NULL;
	char why[320];
	int rc;

	memset(out, 0, sizeof(*out));
	hb_jobspec_init(&own, "job_desc");
	hb_buf_init(&text, 1u << 20);
	hb_buf_init(&doc, 1u << 20);
	if ((rc = read_job(job, &own, &spec, err)))
		goto out;
	snap->utc_offset = hb_place_local_offset(now);
	if ((rc = hb_place_input_from_jobspec(pol, spec, now,
					      snap->utc_offset, &in, err)))
		goto out;
	in.user = job->user;
	in.account = job->account && *job->account ? job->account : NULL;
	in.partition = job->partition && *job->partition ? job->partition
							 : in.partition;
	in.name = job->name;
	in.seq = job->seq;
	in.kube_refusal = kube_refusal(job, spec, why, sizeof(why));
	if (job->ask == HB_ASK_SLURM)
		in.requested = HB_SIDE_SLURM;
	else if (job->ask == HB_ASK_KUBE)
		in.requested = HB_SIDE_KUBE;
	if ((rc = hb_place_decide(pol, snap, &in, &res))) {
		hb_err_set(err, rc, NULL, 0, "the job has no nodes or CPUs");
		goto out;
	}
	/* Both are sized for a usual decision at once: the explanation
	 * nearly always fits 1 KiB, the document 3 KiB. */
	if (!(e = hb_emit_new(HB_EMIT_JSON_COMPACT, &doc)) ||
	    hb_buf_reserve(&text, 1023) || hb_buf_reserve(&doc, 3071) ||
	    (rc = hb_place_explain(pol, &in, &res, &text)) ||
	    (note && note[0] && hb_buf_printf(&text, "note: %s\n", note)) ||
	    (rc = hb_place_emit(e, NULL, pol, &in, &res, NULL)) ||
	    (rc = hb_emit_done(e)) ||
	    !(out->explanation = hb_buf_steal(&text)) ||
	    !(out->doc_json = hb_buf_steal(&doc))) {
		rc = rc == HB_ETOOBIG ? rc : HB_ENOMEM;
		hb_err_set(err, rc, NULL, 0,
			   rc == HB_ENOMEM ? "out of memory"
					   : "the decision's document is too "
					     "large");
		goto out;
	}
	out->target = res.target == HB_PLACE_SLURM  ? HB_DECIDE_SLURM
		      : res.target == HB_PLACE_KUBE ? HB_DECIDE_KUBE
						    : HB_DECIDE_REJECT;
	snprintf(out->why, sizeof(out->why), "%s", hb_place_why_name(res.why));
	snprintf(out->rule, sizeof(out->rule), "%s", res.rule->name);
	out->cost_micro = res.target != HB_PLACE_REJECT && in.account
				  ? (int64_t)res.alt[res.target].cost
				  : 0;
	out->side = res.target != HB_PLACE_REJECT ? (int)res.target : -1;
	out->period = res.rule ? (int)res.rule->budget_period : 0;
	first_line(out->explanation, out->reason, sizeof(out->reason));
	if (out->target == HB_DECIDE_REJECT)
		add_sides(out->explanation, out->reason, sizeof(out->reason));
	/* in's strings may be the jobspec's, freed below */
	snprintf(out->partition, sizeof(out->partition), "%s",
		 in.partition ? in.partition : "");
	/* The spend is counted in memory; a batch whose commit fails leaves
	 * it counted (an over-estimate, on the safe side of a budget). */
	if ((rc = hb_place_commit(&in, &res, snap))) {
		hb_err_set(err, rc, NULL, 0, "spend: %s", hb_strerror(rc));
		goto out;
	}
	rc = 0;
out:
	if (rc)
		hb_place_out_free(out);
	hb_emit_free(e);
	hb_buf_free(&text);
	hb_buf_free(&doc);
	hb_jobspec_free(&own);
	return rc;
}

int hb_place_request_read(const cJSON *req, const char *user,
			  struct hb_place_request *q, struct hb_err *e)
{
	const char *account = NULL, *partition = NULL;
	const char *name = NULL, *target = NULL, *script = NULL;
	const cJSON *jobspec = NULL, *argv = NULL, *env = NULL;
	int64_t tl = HB_RULES_NO_LIMIT;

	memset(q, 0, sizeof(*q)); /* absent members stay NULL */
	q->uid = -1;
	hb_doc_get_i64(req, "uid", 0, 4294967294LL, HB_DOC_REQUIRED, &q->uid,
		       e);
	hb_doc_get_str(req, "account", HB_PLACE_NAME_MAX, 0, &account, e);
	hb_doc_get_str(req, "partition", HB_PLACE_NAME_MAX, 0, &partition, e);
	hb_doc_get_str(req, "slurm_job_name", HB_PLACE_NAME_MAX, 0, &name, e);
	hb_doc_get_str(req, "target", 32, 0, &target, e);
	hb_doc_get_i64(req, "time_limit_min", INT64_MIN / 2, INT64_MAX / 2, 0,
		       &tl, e);
	hb_doc_get_obj(req, "options", 0, &q->options, e);
	hb_doc_get_obj(req, "jobspec", 0, &jobspec, e);
	hb_doc_get_str(req, "script", HB_PLACE_REQUEST_MAX, 0, &script, e);
	hb_doc_get_strv(req, "argv", 0, &argv, e);
	hb_doc_get_strv(req, "env", 0, &env, e);
	if (!e->code && !hb_rules_target_valid(target))
		hb_err_set(e, HB_EINVAL, NULL, 0,
			   "target: '%.60s' is not auto, slurm or kubernetes",
			   target);
	if (e->code)
		return e->code;
	q->job.user = user;
	q->job.account = account;
	q->job.partition = partition;
	q->job.name = name;
	/* hb_rules_target_valid() let through absent, "", auto (the policy
	 * chooses), slurm and kubernetes */
	q->target = target;
	q->job.ask = target && !strcmp(target, "slurm")	       ? HB_ASK_SLURM
		     : target && !strcmp(target, "kubernetes") ? HB_ASK_KUBE
							       : HB_ASK_AUTO;
	q->job.time_limit_min = hb_rules_time_limit(tl);
	q->job.jobspec = jobspec;
	q->job.uid = q->uid;
	return 0;
}
