/*
 * metering.c - finished jobs priced into the ledger (meter.h), and what
 * budgets count as jobs end: a job's reservation released when it ends,
 * its actual cost added when it is metered.  Also the record a burst
 * job's proxy keeps in Slurm of what ran remotely.
 */
#include <stdio.h>
#include <string.h>

#include "daemon_int.h"
#include "gateway/sides/slurm.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/log.h"
#include "hpcbridge/meter.h"
#include "hpcbridge/mpijob.h"

#define MIB (1024ULL * 1024)

int hbd_ratecard_load(const struct hb_config *cfg, struct hb_ratecard *card,
		      struct hb_err *err)
{
	memset(card, 0, sizeof(*card));
	if (!cfg->chargeback_ratecard)
		return 0;
	return hb_ratecard_load(cfg->chargeback_ratecard, card, err);
}

/*
 * The store's end hook: a job that ends gives back the estimate it held
 * in its account's budget (what it really cost comes when it is
 * metered).  Without a rate card nothing is metered and the estimate
 * stands.
 */
static void job_ended(void *arg, const char *id)
{
	struct hb_daemon *d = arg;
	struct hb_spend_row r;
	struct hb_err err = { 0 };
	char account[HB_STORE_NAME_MAX + 1];

	if (!d->budget_actuals ||
	    hb_store_reservation(d->st, id, &r, account, sizeof(account),
				 &err))
		return;
	hb_decider_spend_add(d->dc, r.account, r.side, r.at_ms,
			     -r.cost_micro, hb_clock_wall_ms() / 1000);
}

void hbd_metering_start(struct hb_daemon *d)
{
	hb_store_set_end_hook(d->st, job_ended, d);
	hbd_metering_apply(d);
}

void hbd_metering_apply(struct hb_daemon *d)
{
	const char *cur = hb_decider_currency(d->dc);

	d->budget_actuals = d->card.nversions && cur &&
			    !strcmp(d->card.currency, cur);
	if (d->card.nversions && !d->budget_actuals)
		hb_log(HB_LOG_WARN,
		       "budgets count the placement's estimates, not what "
		       "jobs cost: the rate card %s prices in %s, the policy "
		       "in %s",
		       d->card.source_name ? d->card.source_name : "",
		       d->card.currency, cur ? cur : "?");
}

/* Make m the job's entries; count the change in its account's budget
 * and audit it.  0, or a store error. */
static int record(struct hb_daemon *d, const struct hb_job_row *j,
		  const struct hb_meter_job *m, struct hb_err *err)
{
	struct hb_meter_result res;
	cJSON *detail;
	int rc = hb_meter_record(d->st, &d->card, m, &res, err);

	if (rc == HB_ESTORE || rc == HB_ENOMEM)
		return rc;
	if (rc) {
		/* the card cannot price it: said, and left unmetered */
		hb_log(HB_LOG_WARN, "metering %s: %s", j->id, err->msg);
		memset(err, 0, sizeof(*err));
		return 0;
	}
	if (!res.written)
		return 0;
	d->nmetered++;
	if (d->budget_actuals)
		hb_decider_spend_add(d->dc, j->account, j->target,
				     m->usage.end * 1000,
				     res.amount_micros - res.replaced_micros,
				     hb_clock_wall_ms() / 1000);
	if (!(detail = cJSON_CreateObject()))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	cJSON_AddStringToObject(detail, "side", hb_job_target_name(j->target));
	if (m->part)
		cJSON_AddStringToObject(detail, "part", m->part);
	cJSON_AddNumberToObject(detail, "entries", res.entries);
	cJSON_AddNumberToObject(detail, "reversed", res.reversed);
	cJSON_AddNumberToObject(detail, "amount_micros",
				(double)res.amount_micros);
	if (res.rate_version)
		cJSON_AddStringToObject(detail, "rate_version",
					res.rate_version);
	cJSON_AddNumberToObject(detail, "elapsed_s",
				(double)(m->usage.end - m->usage.start));
	cJSON_AddNumberToObject(detail, "cpus", m->usage.cpus);
	rc = hbd_audit(d, 0, "hpcbridged", "daemon", "meter", j->id, detail,
		       err);
	cJSON_Delete(detail);
	return rc;
}

int hbd_meter_slurm(struct hb_daemon *d, const struct hb_job_row *j,
		    const struct hb_slurm_change *ch, struct hb_err *err)
{
	struct hb_meter_job m = { .job_id = j->id,
				  .user = j->user,
				  .account = j->account,
				  .partition = ch->partition[0] ? ch->partition
								: j->partition };
	char part[24];
	int64_t run;
	int rc;

	if (!d->card.nversions || j->target != HB_TARGET_SLURM ||
	    ch->start_s <= 0)
		return 0; /* never ran: nothing used, its estimate released */
	/* each Slurm job the gateway job ran as is a part of its own: the
	 * tasks of an array, a job placed again */
	snprintf(part, sizeof(part), "%lld", (long long)ch->slurm_job_id);
	m.part = part;
	run = ch->end_s > ch->start_s ? ch->end_s - ch->start_s : 0;
	run = run > ch->suspended_s ? run - ch->suspended_s : 0;
	m.usage.side = HB_RATE_SLURM;
	m.usage.start = ch->start_s;
	m.usage.end = ch->start_s + run; /* suspended time is not charged */
	m.usage.cpus = ch->cpus;
	m.usage.mem_bytes = ch->mem_mib * MIB;
	m.usage.nodes = ch->nodes;
	m.usage.exclusive = ch->exclusive;
	for (uint32_t i = 0; i < ch->ngpu && i < HB_USAGE_MAX_GPU_TYPES; i++) {
		m.usage.gpus[i].type = ch->gpu[i].type[0] ? ch->gpu[i].type
							  : NULL;
		m.usage.gpus[i].count = ch->gpu[i].count;
		m.usage.ngpus++;
	}
	if ((rc = record(d, j, &m, err)))
		return rc;
	/* the job's times are its bound Slurm job's (an array's first) */
	if (j->slurm_job_id >= 0 && ch->slurm_job_id != j->slurm_job_id)
		return 0;
	rc = hb_store_job_set_times(d->st, j->id, ch->start_s * 1000,
				    ch->end_s >= ch->start_s ? ch->end_s * 1000
							     : -1,
				    err);
	return rc == HB_EINVAL ? 0 : rc;
}

/* The Kueue LocalQueue the job was sent to, as the translator picks it:
 * its partition's, else the default. */
static const char *queue_of(const struct hb_config *cfg, const char *part)
{
	const char *q = part ? hb_kv_get(cfg->k8s.partition_queues,
					 cfg->k8s.npartition_queues, part)
			     : NULL;

	return q ? q : cfg->k8s.default_queue;
}

/* The usage of a burst job from its stored jobspec and remote status
 * (an end not known yet: now).  0, or an error in err. */
static int remote_usage(const char *id, const char *jobspec,
			const struct hb_config *cfg,
			const struct hb_remote_status *rs, struct hb_jobspec *spec,
			struct hb_usage *u, struct hb_err *err)
{
	int64_t end = rs->end_ms > 0 ? rs->end_ms : hb_clock_wall_ms();
	int rc;

	hb_jobspec_init(spec, "script");
	if ((rc = hbd_job_spec(id, jobspec, spec, err)))
		return rc;
	return hb_meter_kube_usage(spec, &cfg->k8s, rs->start_ms,
				   end > rs->start_ms ? end : rs->start_ms,
				   NULL, u, err);
}

/*
 * When a burst job ran, as the daemon may believe it.  A cluster's times
 * are its controllers' (the MPIJob's status).  The local backend's are
 * files in a directory the job's user can write: the daemon's own
 * observations stand instead, the start as it recorded the job running
 * and the end as it first saw it over (j, read after the state change).
 */
static void trusted_times(const struct hb_daemon *d,
			  const struct hb_job_row *j,
			  const struct hb_remote_status *rs,
			  struct hb_remote_status *out)
{
	*out = *rs;
	if (hbd_remote_cfg_is_cluster(&d->cfg))
		return;
	if (j->started_ms >= 0)
		out->start_ms = j->started_ms;
	out->end_ms = j->ended_ms >= out->start_ms ? j->ended_ms : 0;
}

int hbd_meter_remote(struct hb_daemon *d, const struct hb_job_row *row,
		     int64_t task, const struct hb_remote_status *rs,
		     struct hb_err *err)
{
	struct hb_job_row j = { 0 };
	struct hb_meter_job m = { 0 };
	char part[24];
	struct hb_remote_status t;
	struct hb_jobspec spec;
	struct hb_err e = { 0 };
	int rc;

	if (!d->card.nversions || row->target != HB_TARGET_KUBERNETES)
		return 0;
	/* the job as the state change left it: its times and cost now */
	if ((rc = hb_store_job_get(d->st, row->id, &j, err)))
		return rc == HB_ENOENT ? 0 : rc;
	trusted_times(d, &j, rs, &t);
	if (t.start_ms <= 0)
		goto out;
	if (remote_usage(j.id, j.jobspec, &d->cfg, &t, &spec, &m.usage,
			 &e)) {
		hb_log(HB_LOG_WARN, "metering %s: %s", j.id, e.msg);
		hb_jobspec_free(&spec);
		goto out;
	}
	m.job_id = j.id;
	if (task >= 0) {
		snprintf(part, sizeof(part), "t%lld", (long long)task);
		m.part = part;
	}
	m.user = j.user;
	m.account = j.account;
	m.partition = j.partition;
	m.queue = queue_of(&d->cfg, spec.partition ? spec.partition
						   : j.partition);
	rc = record(d, &j, &m, err);
	hb_jobspec_free(&spec);
	if (!rc && task < 0 && hbd_remote_cfg_is_cluster(&d->cfg)) {
		rc = hb_store_job_set_times(d->st, j.id, t.start_ms,
					    t.end_ms > 0 ? t.end_ms : -1, err);
		if (rc == HB_EINVAL)
			rc = 0;
	}
out:
	hb_job_row_free(&j);
	return rc;
}

/* An RFC 3339 time of an MPIJob's status in ms, 0 when absent. */
static int64_t status_ms(const cJSON *twin, const char *key)
{
	const char *v = hb_doc_str(hb_doc_get(twin, "status"), key);
	int64_t t;

	if (!v || hb_time_rfc3339_parse_flags(v, HB_TIME_LENIENT, &t) || t < 0)
		return 0;
	return t * 1000;
}

int hbd_meter_twin(struct hb_daemon *d, const struct hb_job_row *j,
		   const cJSON *twin, struct hb_err *err)
{
	struct hb_meter_job m = { .job_id = j->id,
				  .user = j->user,
				  .account = j->account,
				  .partition = j->partition };
	struct hb_jobspec spec;
	struct hb_err e = { 0 };
	int64_t start = status_ms(twin, "startTime");
	int64_t end = status_ms(twin, "completionTime");
	int rc = 0;

	if (!d->card.nversions || j->target != HB_TARGET_KUBERNETES ||
	    start <= 0)
		return 0;
	if (end < start)
		end = hb_clock_wall_ms() > start ? hb_clock_wall_ms() : start;
	hb_jobspec_init(&spec, j->id);
	if (hb_mpijob_parse(twin, &spec, &e) ||
	    hb_meter_kube_usage(&spec, &d->cfg.k8s, start, end, NULL,
				&m.usage, &e)) {
		hb_log(HB_LOG_WARN, "metering %s: %s", j->id, e.msg);
		goto out;
	}
	m.queue = hb_doc_str(hb_doc_get(hb_doc_get(twin, "metadata"),
					"labels"),
			     "kueue.x-k8s.io/queue-name");
	if ((rc = record(d, j, &m, err)))
		goto out;
	rc = hb_store_job_set_times(d->st, j->id, start, end, err);
	if (rc == HB_EINVAL)
		rc = 0;
out:
	hb_jobspec_free(&spec);
	return rc;
}

/* What job id's checkpoint storage has been charged so far, as the
 * status reply's "storage" (none when nothing was). */
int hbd_storage_status(struct hb_daemon *d, const char *id, cJSON *job,
		       struct hb_err *err)
{
	int64_t mib_s = 0, micros = 0;
	cJSON *o;
	int rc = hb_store_storage_charged(d->st, id, &mib_s, &micros, err);

	if (rc || (!mib_s && !micros))
		return rc;
	if (!(o = cJSON_AddObjectToObject(job, "storage")) ||
	    !cJSON_AddNumberToObject(o, "mib_s", (double)mib_s) ||
	    !cJSON_AddNumberToObject(o, "amount_micros", (double)micros))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

/* m's job from job_id's row: its account, user and LocalQueue. */
static int storage_job(struct hb_daemon *d, const char *job_id,
		       struct hb_job_row *j, struct hb_meter_storage *m,
		       struct hb_err *err)
{
	struct hb_jobspec spec;
	struct hb_err e = { 0 };
	int rc = hb_store_job_get(d->st, job_id, j, err);

	if (rc)
		return rc;
	hb_jobspec_init(&spec, j->id);
	rc = hbd_job_spec(j->id, j->jobspec, &spec, &e);
	m->job_id = j->id;
	m->account = j->account;
	m->user = j->user;
	m->queue = queue_of(&d->cfg, !rc && spec.partition ? spec.partition
							   : j->partition);
	hb_jobspec_free(&spec);
	return 0;
}

int hbd_meter_storage(struct hb_daemon *d, const char *job_id,
		      const char *url, uint64_t bytes, int64_t now_ms,
		      struct hb_err *err)
{
	struct hb_meter_storage m = { .url = url,
				      .bytes = bytes,
				      .now_ms = now_ms };
	struct hb_meter_storage_result res;
	struct hb_job_row j = { 0 };
	int rc = 0;

	if (!d->card.nversions)
		return 0; /* no card, no charge: as for jobs */
	if (job_id && (rc = storage_job(d, job_id, &j, &m, err)))
		goto out;
	rc = hb_meter_storage(d->st, &d->card, &m, &res, err);
	if (rc == HB_ESTORE || rc == HB_ENOMEM)
		goto out;
	if (rc) {
		hb_log(HB_LOG_WARN, "storage of %s: %s", url, err->msg);
		memset(err, 0, sizeof(*err));
		rc = 0;
		goto out;
	}
	/* the entries are the record: no event each bill_interval */
	if (res.entries && d->budget_actuals && res.account[0])
		hb_decider_spend_add(d->dc, res.account, HB_TARGET_KUBERNETES,
				     now_ms, res.amount_micros,
				     hb_clock_wall_ms() / 1000);
out:
	hb_job_row_free(&j);
	return rc == HB_ENOENT ? 0 : rc;
}

int hbd_proxy_record(const char *id, const char *jobspec,
		     const struct hb_config *cfg,
		     const struct hb_remote_status *rs, char *out,
		     size_t outsz, struct hb_err *err)
{
	struct hb_jobspec spec;
	struct hb_usage u;
	char from[32], to[32], gpus[48] = "";
	int rc, n;

	if (rs->start_ms <= 0)
		return hb_err_set(err, HB_ESTATE, NULL, 0,
				  "%s never started", id);
	if ((rc = remote_usage(id, jobspec, cfg, rs, &spec, &u, err))) {
		hb_jobspec_free(&spec);
		return rc;
	}
	hb_time_rfc3339_format(u.start, from);
	hb_time_rfc3339_format(u.end, to);
	if (u.ngpus)
		snprintf(gpus, sizeof(gpus), ", %u GPUs%s%.20s",
			 u.gpus[0].count, u.gpus[0].type ? " " : "",
			 u.gpus[0].type ? u.gpus[0].type : "");
	n = snprintf(out, outsz,
		     "ran on kubernetes: %u pods, %u CPUs, %llu MiB%s, %s to "
		     "%s (%lld s); charged there, not as this proxy",
		     u.nodes, u.cpus,
		     (unsigned long long)(u.mem_bytes / MIB), gpus, from, to,
		     (long long)(u.end - u.start));
	hb_jobspec_free(&spec);
	if (n < 0 || (size_t)n >= outsz)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "the proxy's record is too long");
	return 0;
}
