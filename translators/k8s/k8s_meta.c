/*
 * k8s_meta.c - the plan's steps for the object's identity and what
 * Kubernetes has no field for: the labels (managed-by, the Kueue queue,
 * user and account), the fates of the identity fields, the
 * hpcbridge.io/ annotation carry-over and its 256 KiB budget.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "translators/k8s/k8s_int.h"

/* A label value: [A-Za-z0-9] at both ends, [-_.A-Za-z0-9] inside, at
 * most 63 characters; other characters become '_'.  False if empty. */
static bool label_value(const char *s, char out[HB_DNS_LABEL_MAX + 1])
{
	size_t n = 0;

	for (; s && *s && n < HB_DNS_LABEL_MAX; s++) {
		char c = *s;

		if (!hb_k8s_is_alnum(c) && c != '-' && c != '.' && c != '_')
			c = '_';
		if (n == 0 && !hb_k8s_is_alnum(c))
			continue;
		out[n++] = c;
	}
	while (n && !hb_k8s_is_alnum(out[n - 1]))
		n--;
	out[n] = '\0';
	return n > 0;
}

static bool valid_label_value(const char *s)
{
	char tmp[HB_DNS_LABEL_MAX + 1];

	return s && label_value(s, tmp) && strcmp(tmp, s) == 0;
}

/* Field f has no Kubernetes equivalent: keep value in an annotation
 * (hpcbridge.io/<k>, k a string literal). */
#define carry(c, f, k, value, why)                                             \
	carry_((c), (f), ANN(k), "metadata.annotations[" ANN(k) "]", (value),  \
	       (why))

static int carry_(struct hb_k8s_ctx *c, enum hb_field f, const char *key,
		  const char *target, const char *value, const char *why)
{
	int rc;

	if (!value)
		return 0;
	if ((rc = hb_k8s_ann_put(c, key, value)))
		return rc;
	hb_report_fate(c->rep, f, HB_FATE_CARRIED, target,
		       "%s%sno Kubernetes equivalent; kept in annotation %s",
		       why ? why : "", why ? "; " : "", key);
	return 0;
}

/* Kueue's priority: the WorkloadPriorityClass of the job's QoS, else the
 * default; for gang scheduling, the PriorityClass of its QoS. */
static int plan_priority(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_k8s_opts *cfg = c->cfg;
	const char *pc = NULL;

	if (s->qos)
		pc = hb_kv_get(cfg->priority_classes, cfg->npriority_classes,
			       s->qos);
	if (!pc)
		pc = cfg->default_priority_class;
	if (pc) {
		if (!valid_label_value(pc))
			return hb_err_set(c->err, HB_EINVAL, NULL, 0,
					  "configuration: priority class "
					  "'%.100s' is not a valid label value",
					  pc);
		if (hb_k8s_kv_set(c->plan, &c->plan->labels, HB_LABEL_PRIORITY,
				  pc))
			return OOM(c);
	}
	if (s->qos)
		c->plan->pod_priority =
		    hb_kv_get(cfg->pod_priority_classes,
			      cfg->npod_priority_classes, s->qos);
	return 0;
}

/* The user: who the pods run as, where the emitter writes a
 * securityContext; kept in an annotation either way. */
static int plan_user(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const char *target = "metadata.annotations[" ANN("user") "]";
	int rc;

	if ((rc = annotate(c, "user", s->user)))
		return rc;
	if (!c->paths->security)
		hb_report_fate(c->rep, HB_F_USER, HB_FATE_CARRIED, target,
			       "the pods run as the training runtime says; "
			       "labelled and kept in annotation " ANN("user"));
	else if (s->run_uid < 0)
		hb_report_fate(c->rep, HB_F_USER, HB_FATE_CARRIED, target,
			       "the identity (runAsUser, runAsGroup, "
			       "supplementalGroups) is filled in when the job "
			       "bursts; labelled and kept in annotation " ANN(
				   "user"));
	else
		hb_report_fate(c->rep, HB_F_USER, HB_FATE_MAPPED,
			       hb_k8s_at(c, c->paths->security, "runAsUser"),
			       "uid %lld, gid %lld, %u group(s); labelled and "
			       "kept in annotation " ANN("user"),
			       (long long)s->run_uid, (long long)s->run_gid,
			       s->nrun_groups);
	return 0;
}

int hb_k8s_plan_metadata(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_k8s_opts *cfg = c->cfg;
	struct hb_k8s_kvs *labels = &c->plan->labels;
	char v[HB_DNS_LABEL_MAX + 1];
	const char *queue = NULL, *part = NULL;
	int rc;

	c->plan->namespace = cfg->namespace;
	if (hb_k8s_kv_set(c->plan, labels, HB_LABEL_MANAGED_BY, HB_MANAGED_BY))
		return OOM(c);

	/* The Kueue queue: partition map, else the default. */
	if (s->partition) {
		queue = hb_kv_get(cfg->partition_queues,
				      cfg->npartition_queues, s->partition);
		if (queue)
			part = s->partition;
	}
	if (!queue)
		queue = cfg->default_queue;
	if (queue) {
		if (!valid_label_value(queue))
			return hb_err_set(c->err, HB_EINVAL, NULL, 0,
					  "configuration: queue '%.100s' is "
					  "not a valid label value",
					  queue);
		if (hb_k8s_kv_set(c->plan, labels, HB_LABEL_QUEUE, queue))
			return OOM(c);
		c->plan->queue = queue;
	}
	c->plan->scc = cfg->openshift_scc;
	if ((rc = plan_priority(c)))
		return rc;
	if (s->user && label_value(s->user, v) &&
	    hb_k8s_kv_set(c->plan, labels, ANN("user"), v))
		return OOM(c);
	if (s->account && label_value(s->account, v) &&
	    hb_k8s_kv_set(c->plan, labels, ANN("account"), v))
		return OOM(c);

	/* Fates of identity fields. */
	if (s->name) {
		rc = annotate(c, "name", s->name);

		if (rc)
			return rc;
		if (strcmp(s->name, c->plan->name) == 0)
			hb_report_fate(c->rep, HB_F_NAME, HB_FATE_MAPPED,
				       "metadata.name", NULL);
		else
			hb_report_fate(
			    c->rep, HB_F_NAME, HB_FATE_PARTIAL, "metadata.name",
			    "'%.100s' became '%s' (a DNS-1035 label"
			    "%s); kept in annotation " ANN("name"),
			    s->name, c->plan->name,
			    c->plan->array_index >= 0 ? " with the array index"
						      : "");
	}
	if (s->partition) {
		rc = annotate(c, "partition", s->partition);

		if (rc)
			return rc;
		if (part)
			hb_report_fate(c->rep, HB_F_PARTITION, HB_FATE_MAPPED,
				       "metadata.labels[" HB_LABEL_QUEUE "]",
				       "partition %.100s -> LocalQueue %.100s",
				       s->partition, queue);
		else
			hb_report_fate(
			    c->rep, HB_F_PARTITION, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("partition") "]",
			    "no partition_queues entry%s%.100s; no "
			    "Kubernetes equivalent; kept in "
			    "annotation " ANN("partition"),
			    queue ? ": the default queue " : "",
			    queue ? queue : "");
	}
	if (s->user && (rc = plan_user(c)))
		return rc;
	if (s->account) {
		rc = carry(c, HB_F_ACCOUNT, "account", s->account,
			       "labelled " ANN("account") " for chargeback");
		if (rc)
			return rc;
	}
	return 0;
}

static int annotate_json(struct hb_k8s_ctx *c, const char *key, cJSON *v)
{
	char *text;
	int rc;

	if (!v)
		return OOM(c);
	text = cJSON_PrintUnformatted(v);
	cJSON_Delete(v);
	if (!text)
		return OOM(c);
	rc = hb_k8s_ann_put(c, key, text);
	cJSON_free(text);
	return rc;
}

static const char *source_kind_name(uint8_t k)
{
	switch (k) {
	case HB_SRC_SBATCH:
		return "sbatch";
	case HB_SRC_PBS:
		return "pbs";
	case HB_SRC_MPIJOB:
		return "mpijob";
	case HB_SRC_TRAINJOB:
		return "trainjob";
	}
	return "unknown";
}

/* Everything Kubernetes has no field for. */
int hb_k8s_plan_carried(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const char *v;
	char num[24];
	int rc = 0;

#define CARRY(f, key, val, why)                                                \
	do {                                                                   \
		if ((rc = carry(c, f, key, val, why)))                         \
			return rc;                                             \
	} while (0)

	CARRY(HB_F_QOS, "qos", s->qos, NULL);
	if (s->qos && (v = hb_kv_get(c->cfg->priority_classes,
				     c->cfg->npriority_classes, s->qos)))
		hb_report_fate(c->rep, HB_F_QOS, HB_FATE_MAPPED,
			       "metadata.labels[" HB_LABEL_PRIORITY "]",
			       "QoS %.100s -> WorkloadPriorityClass %.100s; "
			       "kept in annotation " ANN("qos"),
			       s->qos, v);
	CARRY(HB_F_COMMENT, "comment", s->comment, NULL);
	CARRY(HB_F_LICENSES, "licenses", s->licenses, NULL);
	CARRY(HB_F_NODELIST, "nodelist", s->nodelist,
	      "Slurm host names do not exist on Kubernetes");
	CARRY(HB_F_EXCLUDE, "exclude", s->exclude,
	      "Slurm host names do not exist on Kubernetes");
	if (s->time_min) {
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)s->time_min);
		CARRY(HB_F_TIME_MIN, "time-min", num, NULL);
	}
	CARRY(HB_F_BEGIN, "begin", s->begin,
	      "the gateway decides when the job is created");
	CARRY(HB_F_DEADLINE, "deadline", s->deadline, NULL);
	CARRY(HB_F_SIGNAL, "signal", s->signal,
	      "Kubernetes sends SIGTERM at the deadline");
	CARRY(HB_F_OUTPUT, "output", s->output,
	      "the launcher's log is the job's output");
	CARRY(HB_F_ERROR, "error", s->error,
	      "the launcher's log holds stderr too");
	if (s->join_output) {
		if ((rc = annotate(c, "join-output", "true")))
			return rc;
		if (!s->error)
			hb_report_fate(
			    c->rep, HB_F_ERROR, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("join-output") "]",
			    "stderr joins stdout in the launcher's "
			    "log anyway; kept in annotation " ANN(
				"join-output"));
	}
	CARRY(HB_F_INPUT, "input", s->input, NULL);
	CARRY(HB_F_CHDIR, "chdir", s->chdir,
	      "the launcher cds there if the pod has the path, else runs in "
	      "/tmp");
	CARRY(HB_F_KEEP, "keep", s->keep, NULL);
	CARRY(HB_F_DEPENDENCY, "dependency", s->dependency,
	      "Slurm job ids mean nothing to Kubernetes");
	CARRY(HB_F_MAIL_TYPE, "mail-type", s->mail_type, NULL);
	CARRY(HB_F_MAIL_USER, "mail-user", s->mail_user, NULL);
	if (s->requeue >= 0)
		CARRY(HB_F_REQUEUE, "requeue", s->requeue ? "true" : "false",
		      "the launcher runs once (runPolicy.backoffLimit 0)");
	CARRY(HB_F_EXPORT, "export", s->export_spec,
	      "the submit host's environment does not exist in the pod; "
	      "settings the job makes are in env");
	if (s->export_all) {
		if ((rc = annotate(c, "export-all", "true")))
			return rc;
		if (!s->export_spec)
			hb_report_fate(
			    c->rep, HB_F_EXPORT, HB_FATE_CARRIED,
			    "metadata.annotations[" ANN("export-all") "]",
			    "the submit host's environment does "
			    "not exist in the pod; no Kubernetes "
			    "equivalent; kept in annotation " ANN(
				"export-all"));
	}
	/* With checkpoints.url, hb_k8s_plan_ckpt() maps it after this. */
	CARRY(HB_F_CHECKPOINT, "checkpoint-dir", s->checkpoint_dir,
	      "kept for the gateway; with no checkpoints.url the pods see "
	      "the directory only on a volume they mount");
	/* The fabric: what placement read, kept with what said so. */
	if (hb_jobspec_has(s, HB_F_FABRIC)) {
		char from[HB_FABRIC_WHY_MAX + 64];

		snprintf(from, sizeof(from), "from %s; placement reads it",
			 s->fabric_why ? s->fabric_why : "the job");
		CARRY(HB_F_FABRIC, "fabric",
		      hb_fabric_name((enum hb_fabric)s->fabric), from);
		if (s->fabric_why &&
		    (rc = annotate(c, "fabric-why", s->fabric_why)))
			return rc;
		if (s->fabric_inferred &&
		    (rc = annotate(c, "fabric-inferred", "true")))
			return rc;
	}
	if (s->ndata) {
		cJSON *a = cJSON_CreateArray();

		for (uint32_t i = 0; a && i < s->ndata; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(s->data[i]));
		if (a && cJSON_GetArraySize(a) != (int)s->ndata) {
			cJSON_Delete(a);
			a = NULL;
		}
		if ((rc = annotate_json(c, ANN("data"), a)))
			return rc;
		hb_report_fate(c->rep, HB_F_DATA, HB_FATE_CARRIED,
			       "metadata.annotations[" ANN("data") "]",
			       "the gateway stages data; no Kubernetes "
			       "equivalent; kept in annotation " ANN("data"));
	}
	if (s->nchunks) {
		cJSON *a = cJSON_CreateArray();

		for (uint32_t i = 0; a && i < s->nchunks; i++) {
			const struct hb_chunk *k = &s->chunks[i];
			cJSON *o = cJSON_CreateObject();

			if (!o) {
				cJSON_Delete(a);
				a = NULL;
				break;
			}
			cJSON_AddItemToArray(a, o);
			if (!cJSON_AddNumberToObject(o, "count", k->count) ||
			    !cJSON_AddNumberToObject(o, "ncpus", k->ncpus) ||
			    !cJSON_AddNumberToObject(o, "mpiprocs",
						     k->mpiprocs) ||
			    !cJSON_AddNumberToObject(o, "ompthreads",
						     k->ompthreads) ||
			    !cJSON_AddNumberToObject(o, "ngpus", k->ngpus) ||
			    !cJSON_AddNumberToObject(o, "mem_mb",
						     (double)k->mem_mb)) {
				cJSON_Delete(a);
				a = NULL;
			}
		}
		if ((rc = annotate_json(c, ANN("chunks"), a)))
			return rc;
		hb_report_fate(c->rep, HB_F_HETEROGENEOUS, HB_FATE_PARTIAL,
			       c->paths->nodes,
			       "%u select chunks: Kubernetes workers are all "
			       "alike, sized %u workers x %u CPUs; the chunks "
			       "are kept in annotation " ANN("chunks"),
			       s->nchunks, c->plan->shape.nodes,
			       c->plan->shape.cpus_per_node);
	}
	if (s->interpreter && (rc = annotate(c, "interpreter", s->interpreter)))
		return rc;
	v = hb_k8s_provenance(s, "source-kind");
	if ((rc = annotate(c, "source-kind",
			   v ? v : source_kind_name(s->source))))
		return rc;
	v = hb_k8s_provenance(s, "source-name");
	if (!v)
		v = s->source_name;
	if (v && (rc = annotate(c, "source-name", v)))
		return rc;
#undef CARRY
	return 0;
}

/* The API server refuses more than 256 KiB of annotations. */
#define ANNOTATIONS_MAX (256u * 1024)

int hb_k8s_annotation_budget(struct hb_k8s_ctx *c)
{
	const struct hb_k8s_kvs *kv = &c->plan->annotations;
	const struct hb_k8s_kv *big = NULL;
	size_t total = 0, bigsz = 0;

	for (uint32_t i = 0; i < kv->n; i++) {
		size_t n = strlen(kv->v[i].key) + strlen(kv->v[i].value);

		total += n;
		if (n > bigsz) {
			bigsz = n;
			big = &kv->v[i];
		}
	}
	if (total <= ANNOTATIONS_MAX)
		return 0;
	return hb_err_set(c->err, HB_ETOOBIG, c->spec->source_name, 0,
			  "the fields kept in annotations take %zu bytes, more "
			  "than Kubernetes' %u; the largest is %s (%zu bytes)",
			  total, ANNOTATIONS_MAX, big ? big->key : "?", bigsz);
}
