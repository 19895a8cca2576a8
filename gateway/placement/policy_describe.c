/*
 * policy_describe.c - what a policy means, in sentences, for "hpcbridge
 * policy check": hb_policy_describe().
 */
#include "hpcbridge/buf.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/units.h"

#define D_MONEY(v) hb_format_money((v), (char[48]){ 0 }, 48)
#define D_RATE(v)  hb_format_rate((v), (char[48]){ 0 }, 48)
#define D_MEM(v)   mem_text((v), (char[32]){ 0 })

static const char *mem_text(uint64_t mib, char buf[32])
{
	hb_format_k8s_mem(mib, buf);
	return buf;
}
#define D_DUR(v)  hb_format_duration((v), (char[32]){ 0 }, 32)
#define D_SIZE(v) hb_format_size((v), (char[32]){ 0 }, 32)

static int describe_list(struct hb_buf *b, const char *const *v, uint32_t n)
{
	int rc = 0;

	for (uint32_t i = 0; !rc && i < n; i++)
		rc = hb_buf_printf(b, "%s%s", i ? ", " : "", v[i]);
	return rc;
}

static int describe_cap(struct hb_buf *b, const struct hb_capability *c)
{
	int rc = hb_buf_puts(b, "    runs: ");

	if (!rc && c->max_nodes)
		rc = hb_buf_printf(b, "up to %u nodes per job", c->max_nodes);
	else if (!rc)
		rc = hb_buf_puts(b, "any number of nodes");
	if (!rc && (c->node_cpus || c->node_mem_mb || c->node_gpus))
		rc = hb_buf_printf(b, "; nodes of %u CPUs, %s, %u GPUs",
				   c->node_cpus, D_MEM(c->node_mem_mb),
				   c->node_gpus);
	if (!rc && c->ngpu_types) {
		rc = hb_buf_puts(b, "; GPU types ");
		if (!rc)
			rc = describe_list(b, c->gpu_types, c->ngpu_types);
	}
	if (!rc && c->nmig) {
		rc = hb_buf_puts(b, "; MIG ");
		if (!rc)
			rc = describe_list(b, c->mig, c->nmig);
	}
	if (!rc)
		rc = hb_buf_printf(b, "; shards %s; RDMA %s\n",
				   c->shards ? "yes" : "no",
				   c->rdma ? "yes" : "no");
	return rc;
}

static int describe_rates(struct hb_buf *b, const struct hb_policy *pol,
			  const struct hb_rates *r)
{
	const char *sym = pol->currency_symbol;
	int rc =
		hb_buf_printf(b,
			      "    costs: %s%s per CPU-hour, %s%s per "
			      "GiB-hour, %s%s per GPU-hour",
			      sym, D_RATE(r->cpu_hour), sym,
			      D_RATE(r->mem_gb_hour), sym, D_RATE(r->gpu_hour));

	for (uint32_t i = 0; !rc && i < r->ngpu; i++)
		rc = hb_buf_printf(b, ", %s %s%s", r->gpu[i].type, sym,
				   D_RATE(r->gpu[i].per_hour));
	if (!rc && r->shard_hour)
		rc = hb_buf_printf(b, ", %s%s per shard-hour", sym,
				   D_RATE(r->shard_hour));
	if (!rc)
		rc = hb_buf_printf(b, ", %s%s per job\n", sym,
				   D_RATE(r->per_job));
	return rc;
}

static int describe_rule(struct hb_buf *b, const struct hb_policy *pol,
			 const struct hb_rule *ru)
{
	static const char *const prefer[] = {
		"stays on Slurm unless Slurm would miss the deadline",
		"goes to Kubernetes unless Kubernetes would miss the deadline",
		"goes to the cheaper side that meets the deadline",
		"goes to the side that finishes first"
	};
	const char *sym = pol->currency_symbol;
	int rc;

	if (ru->index)
		rc = hb_buf_printf(b, "  rule %s (line %u), for %s%s%s%s:\n",
				   ru->name, ru->line,
				   ru->account ? "account " : "any account",
				   ru->account ? ru->account : "",
				   ru->partition ? " in partition " : "",
				   ru->partition ? ru->partition : "");
	else
		rc = hb_buf_puts(b, "  defaults, for jobs no rule matches:\n");
	if (rc)
		return rc;
	if (!ru->burst)
		rc = hb_buf_puts(b, "    never bursts: every job stays on "
				    "Slurm\n");
	else
		rc = hb_buf_printf(b, "    a job %s\n", prefer[ru->prefer]);
	if (!rc)
		rc = hb_buf_printf(b,
				   "    when no side meets the deadline: %s\n",
				   ru->fallback == HB_FALLBACK_REJECT
					   ? "reject the job"
					   : "run where it finishes first");
	if (!rc && ru->budget != HB_UNSET)
		rc = hb_buf_printf(
			b,
			"    budget: %s%s per %s of %s spend; a side that "
			"would exceed it is not used\n",
			sym, D_MONEY(ru->budget),
			hb_period_name(ru->budget_period),
			ru->budget_sides == (1u << HB_SIDE_KUBE) ? "Kubernetes"
			: ru->budget_sides == (1u << HB_SIDE_SLURM) ? "Slurm"
								    : "all");
	if (!rc &&
	    (ru->premium_bp != HB_UNSET || ru->premium_abs != HB_UNSET)) {
		rc = hb_buf_puts(b, "    to meet a deadline it pays at most ");
		if (!rc && ru->premium_bp != HB_UNSET)
			rc = hb_buf_printf(b, "%d.%02d%%", ru->premium_bp / 100,
					   ru->premium_bp % 100);
		if (!rc && ru->premium_bp != HB_UNSET &&
		    ru->premium_abs != HB_UNSET)
			rc = hb_buf_puts(b, " and at most ");
		if (!rc && ru->premium_abs != HB_UNSET)
			rc = hb_buf_printf(b, "%s%s", sym,
					   D_MONEY(ru->premium_abs));
		if (!rc)
			rc = hb_buf_puts(b, " more than the preferred side\n");
	}
	if (!rc && ru->keep_with_data_over)
		rc = hb_buf_printf(b,
				   "    a job whose data to move exceeds %s "
				   "stays with its data\n",
				   D_SIZE(ru->keep_with_data_over));
	if (!rc && ru->staging_slack_bp != HB_UNSET)
		rc = hb_buf_printf(b,
				   "    staging may take at most %d.%02d%% of "
				   "the deadline's slack\n",
				   ru->staging_slack_bp / 100,
				   ru->staging_slack_bp % 100);
	if (!rc && ru->pilot_bp)
		rc = hb_buf_printf(b,
				   "    migration pilot: %d.%02d%% of eligible "
				   "jobs go to Kubernetes (by hash)\n",
				   ru->pilot_bp / 100, ru->pilot_bp % 100);
	if (!rc && !ru->honour_target)
		rc = hb_buf_puts(b, "    --hpcbridge-target is ignored\n");
	return rc;
}

int hb_policy_describe(const struct hb_policy *pol, struct hb_buf *b)
{
	int rc;

	rc = hb_buf_printf(b,
			   "policy %s: valid\n"
			   "money in %s; a job with no time limit is assumed "
			   "to run %s, with %s per CPU when it gives no "
			   "memory\n",
			   pol->source_name, pol->currency,
			   D_DUR(pol->default_time_limit),
			   D_MEM(pol->default_mem_per_cpu_mb));
	if (!rc)
		rc = hb_buf_printf(
			b,
			"slurm: %u partition%s, default %s; "
			"without an estimate a job waits %s\n",
			pol->npartitions, pol->npartitions == 1 ? "" : "s",
			pol->default_partition ? pol->default_partition
					       : "(the job's)",
			D_DUR(pol->slurm_default_wait));
	if (!rc && !pol->npartitions)
		rc = describe_rates(b, pol, &pol->slurm_rates);
	for (uint32_t i = 0; !rc && i < pol->npartitions; i++) {
		const struct hb_partition *p = &pol->partitions[i];

		rc = hb_buf_printf(b, "  partition %s (line %u)\n", p->name,
				   p->line);
		if (!rc)
			rc = describe_cap(b, &p->cap);
		if (!rc)
			rc = describe_rates(b, pol, &p->rates);
		if (!rc && p->default_deadline)
			rc = hb_buf_printf(b,
					   "    default deadline: %s after "
					   "submission\n",
					   D_DUR(p->default_deadline));
		if (!rc && p->default_time_limit)
			rc = hb_buf_printf(b, "    default run time: %s\n",
					   D_DUR(p->default_time_limit));
	}
	if (!rc && !pol->kube_enabled)
		rc = hb_buf_puts(b, "kubernetes: not configured; no job "
				    "bursts\n");
	else if (!rc) {
		rc = hb_buf_printf(b,
				   "kubernetes: namespace %s, start-up %s; "
				   "without an estimate a job waits %s\n",
				   pol->namespace, D_DUR(pol->kube_startup),
				   D_DUR(pol->kube_default_wait));
		for (uint32_t i = 0; !rc && i < pol->nqueues; i++) {
			const struct hb_kqueue *q = &pol->queues[i];

			rc = hb_buf_printf(b, "  queue %s: ", q->name);
			if (!rc && !q->naccounts && !q->npartitions)
				rc = hb_buf_puts(b, "any job");
			if (!rc && q->naccounts) {
				rc = hb_buf_puts(b, "accounts ");
				if (!rc)
					rc = describe_list(b, q->accounts,
							   q->naccounts);
			}
			if (!rc && q->npartitions) {
				rc = hb_buf_puts(b, q->naccounts
							    ? "; partitions "
							    : "partitions ");
				if (!rc)
					rc = describe_list(b, q->partitions,
							   q->npartitions);
			}
			if (!rc)
				rc = hb_buf_puts(b, "\n");
		}
		if (!rc)
			rc = describe_cap(b, &pol->kube_cap);
		if (!rc)
			rc = describe_rates(b, pol, &pol->kube_rates);
	}
	for (uint32_t i = 0; !rc && i < pol->ndata; i++) {
		const struct hb_data_loc *l = &pol->data[i];

		rc = hb_buf_printf(b, "data %s lives on %s", l->prefix,
				   hb_side_name(l->side));
		if (!rc && l->size_known)
			rc = hb_buf_printf(b, ", %s", D_SIZE(l->size));
		if (!rc && !l->movable)
			rc = hb_buf_puts(b, "; it never moves");
		else if (!rc)
			rc = hb_buf_printf(
				b, "; moving it costs %s%s per GB at %s",
				pol->currency_symbol, D_RATE(l->egress_per_gb),
				hb_format_bandwidth(l->bandwidth,
						    (char[32]){ 0 }, 32));
		if (!rc)
			rc = hb_buf_puts(b, "\n");
	}
	for (uint32_t i = 0; !rc && i < pol->nequiv; i++) {
		rc = hb_buf_printf(b, "gpu: a request for %s may also run on ",
				   pol->equiv[i].type);
		if (!rc)
			rc = describe_list(b, pol->equiv[i].runs_on,
					   pol->equiv[i].n);
		if (!rc)
			rc = hb_buf_puts(b, "\n");
	}
	if (!rc)
		rc = hb_buf_printf(b, "rules, first match wins (%u):\n",
				   pol->nrules);
	for (uint32_t i = 0; !rc && i < pol->nrules; i++)
		rc = describe_rule(b, pol, &pol->rules[i]);
	if (!rc)
		rc = describe_rule(b, pol, &pol->defaults);
	return rc;
}
