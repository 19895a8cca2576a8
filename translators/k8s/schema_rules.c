/*
 * schema_rules.c - the rules beyond the structural schema: the CEL rules
 * of the reference CRDs evaluated natively, and the controllers' own rules
 * for MPIJob, TrainJob and training runtimes (hb_schema_check_rules(),
 * hb_schema_check_trainjob_runtime()).
 * See docs/internals/schema.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "translators/k8s/schema_int.h"

/* ------------------------------------------------------------------ */
/* CEL rules of the reference CRDs, evaluated natively                 */

/* The name the object will have: name, or generateName plus a suffix. */
static const char *object_name(const cJSON *obj, char *buf, size_t cap)
{
	const cJSON *meta = hb_schema_get(obj, "metadata");
	const char *name = hb_schema_str(meta, "name");
	const char *gen = hb_schema_str(meta, "generateName");

	if (name && *name)
		return name;
	if (gen && *gen) {
		snprintf(buf, cap, "%sxxxxx", gen);
		return buf;
	}
	return NULL;
}

static int cel_name_rfc1035(const cJSON *self)
{
	char buf[320];
	const char *name = object_name(self, buf, sizeof(buf));

	return !name || hb_schema_dns1035_shape(name);
}

static int cel_name_len63(const cJSON *self)
{
	char buf[320];
	const char *name = object_name(self, buf, sizeof(buf));

	return !name || hb_schema_utf8_chars(name) <= 63;
}

static int cel_storage_uri(const cJSON *self)
{
	const char *s, *p;

	if (!cJSON_IsString(self))
		return 1;
	s = self->valuestring;
	if (!*s)
		return 1;
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return 0;
	for (p = s + 1; hb_schema_alnum((unsigned char)*p) || *p == '+' ||
			*p == '.' || *p == '-';
	     p++)
		;
	return !strncmp(p, "://", 3) && p[3] && !strchr(p + 3, '\n');
}

static int cel_trainjob_managed_by(const cJSON *self)
{
	return !cJSON_IsString(self) ||
	       !strcmp(self->valuestring,
		       "trainer.kubeflow.org/trainjob-controller") ||
	       !strcmp(self->valuestring, "kueue.x-k8s.io/multikueue");
}

static int cel_has_last_updated(const cJSON *self)
{
	return hb_schema_has(self, "lastUpdatedTime") != NULL;
}

static int cel_one_policy(const cJSON *self)
{
	static const char *const names[] = { "torch", "mpi", "jax", "xgboost",
					     "flux" };
	size_t i, n = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (hb_schema_has(self, names[i]))
			n++;
	return n <= 1;
}

static int cel_at_least_one(const cJSON *self)
{
	return !cJSON_IsNumber(self) || self->valuedouble >= 1;
}

static int cel_no_node_container(const cJSON *self)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, self)
		if (cJSON_IsString(c) && !strcmp(c->valuestring, "node"))
			return 0;
	return 1;
}

static int cel_startup_order(const cJSON *self)
{
	const char *order = hb_schema_str(hb_schema_has(self, "startupPolicy"),
					  "startupPolicyOrder");
	const cJSON *rj;

	if (!order || strcmp(order, "InOrder"))
		return 1;
	cJSON_ArrayForEach(rj, hb_schema_has(self, "replicatedJobs"))
		if (hb_schema_has(rj, "dependsOn"))
			return 0;
	return 1;
}

static int cel_claim_namespace(const cJSON *self)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, hb_schema_has(self, "templates")) {
		const char *ns = hb_schema_str(hb_schema_has(t, "metadata"),
					       "namespace");

		if (ns && *ns)
			return 0;
	}
	return 1;
}

const struct cel_impl hb_schema_cel_impls[] = {
	{ "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
	  cel_name_rfc1035 },
	{ "size(self.metadata.name) <= 63", cel_name_len63 },
	{ "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
	  cel_storage_uri },
	{ "self in ['trainer.kubeflow.org/trainjob-controller', "
	  "'kueue.x-k8s.io/multikueue']",
	  cel_trainjob_managed_by },
	{ "has(self.lastUpdatedTime)", cel_has_last_updated },
	{ "[has(self.torch), has(self.mpi), has(self.jax), "
	  "has(self.xgboost),has(self.flux)].filter(x, x).size() <= 1",
	  cel_one_policy },
	{ "self >= 1", cel_at_least_one },
	{ "!self.exists(c, c == 'node')", cel_no_node_container },
	{ "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder "
	  "== 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))",
	  cel_startup_order },
	{ "self.templates.all(t, !has(t.metadata.namespace) || "
	  "size(t.metadata.namespace) == 0)",
	  cel_claim_namespace },
};

const size_t hb_schema_ncel_impls =
	sizeof(hb_schema_cel_impls) / sizeof(hb_schema_cel_impls[0]);

/* ------------------------------------------------------------------ */
/* Controller rules                                                    */

__attribute__((format(printf, 3, 4)))
static void report_at(struct vctx *c, const char *rel, const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	size_t old = c->path.len;
	va_list ap;

	if (rel && *rel) {
		if (c->path.len)
			hb_schema_path_raw(&c->path, ".", 1);
		hb_schema_path_raw(&c->path, rel, strlen(rel));
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hb_schema_report(c, V_VALUE, "%s", msg);
	hb_schema_path_pop(&c->path, old);
}

static int in_list(const char *s, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

static const char *join_quoted(const char *const *list, size_t n, char *buf,
			       size_t cap)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\"",
				      i ? ", " : "", list[i]);
	return buf;
}

/* A string member with a default; NULL when it has another type. */
static const char *str_default(const cJSON *o, const char *key,
			       const char *def)
{
	const cJSON *v = hb_schema_has(o, key);

	if (!v)
		return def;
	if (!cJSON_IsString(v))
		return NULL;
	return *v->valuestring ? v->valuestring : def;
}

static void check_one_of(struct vctx *c, const char *rel, const char *val,
			 const char *const *list, size_t n)
{
	char want[256], q[QUOTE_MAX * 2 + 16];

	if (val && !in_list(val, list, n))
		report_at(c, rel, "Unsupported value: %s: supported values: %s",
			  hb_schema_quote(val, q, sizeof(q)),
			  join_quoted(list, n, want, sizeof(want)));
}

static void check_nonneg(struct vctx *c, const cJSON *o, const char *key,
			 const char *rel)
{
	long long v;

	if (hb_schema_get_int(o, key, &v) && v < 0)
		report_at(c, rel,
			  "Invalid value: %lld: must be greater than or equal "
			  "to 0",
			  v);
}

static const char *const restart_policies[] = { "Never", "OnFailure" };

static void mpi_replica(struct vctx *c, const cJSON *spec, const char *type,
			const char *def_policy, long long def_replicas,
			int launcher)
{
	size_t old = hb_schema_path_key(&c->path, type);
	const cJSON *containers;
	long long replicas = def_replicas;
	int typed = 1;

	if (!cJSON_IsObject(spec)) {
		hb_schema_path_pop(&c->path, old);
		return; /* a schema error */
	}
	if (hb_schema_has(spec, "replicas") &&
	    !hb_schema_get_int(spec, "replicas", &replicas))
		typed = 0; /* the schema reports it */
	check_one_of(c, "restartPolicy",
		     str_default(spec, "restartPolicy", def_policy),
		     restart_policies, 2);
	containers = hb_schema_get(
		hb_schema_get(hb_schema_get(spec, "template"), "spec"),
		"containers");
	if (!cJSON_IsArray(containers) || !cJSON_GetArraySize(containers))
		report_at(c, "template.spec.containers",
			  "Required value: must define at least one container");
	if (typed && launcher && replicas != 1)
		report_at(c, "replicas", "Invalid value: %lld: must be 1",
			  replicas);
	if (typed && !launcher && replicas <= 0)
		report_at(c, "replicas",
			  "Invalid value: %lld: must be greater than or equal "
			  "to 1",
			  replicas);
	hb_schema_path_pop(&c->path, old);
}

static void rules_mpijob(struct vctx *c, const cJSON *obj)
{
	static const char *const clean[] = { "None", "Running", "All" };
	static const char *const impls[] = { "OpenMPI", "Intel", "MPICH" };
	static const char *const managers[] = {
		"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"
	};
	const cJSON *spec = hb_schema_get(obj, "spec");
	const cJSON *specs = hb_schema_has(spec, "mpiReplicaSpecs");
	const cJSON *worker = hb_schema_has(specs, "Worker"), *rp, *m;
	char gen[320], host[96], suffix[40], q[QUOTE_MAX * 2 + 16];
	const char *name = object_name(obj, gen, sizeof(gen));
	long long replicas = 1, r;
	size_t old;
	int n;

	if (!name)
		name = "";
	if (worker && hb_schema_get_int(worker, "replicas", &r) && r > 0)
		replicas = r;
	/* the operator names the last worker <name>-worker-<replicas-1> */
	n = snprintf(suffix, sizeof(suffix), "-worker-%lld", replicas - 1);
	if (strlen(name) + (size_t)n > 63) {
		report_at(c, "metadata.name",
			  "Invalid value: %s: will not be able to create pod "
			  "and service with invalid DNS label \"%.63s%s%s\": "
			  "must be no more than 63 characters",
			  hb_schema_quote(name, q, sizeof(q)), name,
			  strlen(name) > 63 ? "..." : "", suffix);
	} else {
		snprintf(host, sizeof(host), "%s%s", name, suffix);
		if (!hb_schema_dns1035_shape(host))
			report_at(c, "metadata.name",
				  "Invalid value: %s: will not be able to "
				  "create pod and service with invalid DNS "
				  "label \"%s\": a DNS-1035 label must consist "
				  "of lower case alphanumeric characters or "
				  "'-', start with an alphabetic character, "
				  "and end with an alphanumeric character",
				  hb_schema_quote(name, q, sizeof(q)), host);
	}

	old = hb_schema_path_lit(&c->path, "spec");
	if (!cJSON_IsObject(specs)) {
		report_at(c, "mpiReplicaSpecs",
			  "Required value: must have replica specs");
	} else {
		size_t o2 = hb_schema_path_key(&c->path, "mpiReplicaSpecs");

		if (!hb_schema_has(specs, "Launcher"))
			report_at(c, "Launcher",
				  "Required value: must have Launcher replica "
				  "spec");
		else
			mpi_replica(c, hb_schema_get(specs, "Launcher"),
				    "Launcher", "OnFailure", 1, 1);
		if (worker)
			mpi_replica(c, worker, "Worker", "Never", 0, 0);
		cJSON_ArrayForEach(m, specs) {
			size_t o3;

			if (!strcmp(m->string, "Launcher") ||
			    !strcmp(m->string, "Worker"))
				continue;
			o3 = hb_schema_path_key(&c->path, m->string);
			hb_schema_report(
				c, V_VALUE,
				"Unsupported value: not a replica type the MPI "
				"Operator runs (Launcher, Worker); it would be "
				"ignored");
			hb_schema_path_pop(&c->path, o3);
		}
		hb_schema_path_pop(&c->path, o2);
	}
	check_nonneg(c, spec, "slotsPerWorker", "slotsPerWorker");
	rp = hb_schema_has(spec, "runPolicy");
	check_one_of(c, "runPolicy.cleanPodPolicy",
		     str_default(rp, "cleanPodPolicy", "None"), clean, 3);
	check_nonneg(c, rp, "ttlSecondsAfterFinished",
		     "runPolicy.ttlSecondsAfterFinished");
	check_nonneg(c, rp, "activeDeadlineSeconds",
		     "runPolicy.activeDeadlineSeconds");
	check_nonneg(c, rp, "backoffLimit", "runPolicy.backoffLimit");
	if (hb_schema_has(rp, "managedBy"))
		check_one_of(c, "runPolicy.managedBy",
			     hb_schema_str(rp, "managedBy"), managers, 2);
	check_one_of(c, "mpiImplementation",
		     str_default(spec, "mpiImplementation", "OpenMPI"), impls,
		     3);
	hb_schema_path_pop(&c->path, old);
}

static void rules_trainjob(struct vctx *c, const cJSON *obj)
{
	const cJSON *spec = hb_schema_get(obj, "spec");
	const cJSON *ref = hb_schema_has(spec, "runtimeRef");
	const cJSON *trainer = hb_schema_has(spec, "trainer");
	const char *group =
		str_default(ref, "apiGroup", "trainer.kubeflow.org");
	const char *kind = str_default(ref, "kind", "ClusterTrainingRuntime");
	long long v;
	size_t old = hb_schema_path_lit(&c->path, "spec");

	if (!ref)
		report_at(c, "runtimeRef", "Required value");
	else if (group && kind &&
		 (strcmp(group, "trainer.kubeflow.org") ||
		  (strcmp(kind, "ClusterTrainingRuntime") &&
		   strcmp(kind, "TrainingRuntime"))))
		report_at(c, "runtimeRef",
			  "Invalid value: unsupported runtime: %.100s.%.100s",
			  kind, group);
	if (hb_schema_get_int(trainer, "numNodes", &v) && v < 1)
		report_at(c, "trainer.numNodes",
			  "Invalid value: %lld: must be greater than or equal "
			  "to 1",
			  v);
	if (hb_schema_get_int(trainer, "numProcPerNode", &v) && v < 1)
		report_at(c, "trainer.numProcPerNode",
			  "Invalid value: %lld: must be greater than or equal "
			  "to 1",
			  v);
	hb_schema_path_pop(&c->path, old);
}

#define ANCESTOR_LABEL "trainer.kubeflow.org/trainjob-ancestor-step"

static const char *ancestor_container(const char *ancestor)
{
	if (!strcmp(ancestor, "trainer"))
		return "node";
	if (!strcmp(ancestor, "model-initializer"))
		return "model-initializer";
	if (!strcmp(ancestor, "dataset-initializer"))
		return "dataset-initializer";
	return NULL;
}

static void rules_runtime(struct vctx *c, const cJSON *obj)
{
	const cJSON *rjobs = hb_schema_get(
		hb_schema_get(
			hb_schema_get(hb_schema_get(obj, "spec"), "template"),
			"spec"),
		"replicatedJobs");
	const cJSON *rj;
	size_t i = 0;

	if (!cJSON_IsArray(rjobs))
		return;
	cJSON_ArrayForEach(rj, rjobs) {
		const cJSON *tmpl = hb_schema_get(rj, "template");
		const char *anc = hb_schema_str(
			hb_schema_get(hb_schema_get(tmpl, "metadata"),
				      "labels"),
			ANCESTOR_LABEL);
		const cJSON *pod = hb_schema_get(
			hb_schema_get(hb_schema_get(tmpl, "spec"), "template"),
			"spec");
		const char *want = anc ? ancestor_container(anc) : NULL;
		const char *prio = hb_schema_str(pod, "priorityClassName");
		char base[96];
		size_t old;
		long long replicas = 1;

		snprintf(base, sizeof(base),
			 "spec.template.spec.replicatedJobs[%zu]", i++);
		old = hb_schema_path_lit(&c->path, base);
		if (want) {
			const cJSON *ct;
			int found = 0;

			if (hb_schema_has(rj, "replicas") &&
			    !hb_schema_get_int(rj, "replicas", &replicas))
				replicas = 1;
			if (replicas != 1)
				report_at(c, "replicas",
					  "Invalid value: %lld: always must be "
					  "1",
					  replicas);
			cJSON_ArrayForEach(ct, hb_schema_get(pod, "containers"))
				if (hb_schema_str(ct, "name") &&
				    !strcmp(hb_schema_str(ct, "name"), want))
					found = 1;
			if (!found)
				report_at(c, "template.spec.template.spec."
					     "containers",
					  "Invalid value: must contain the "
					  "required container for the "
					  "ancestor: %s",
					  anc);
		}
		if (prio && *prio && !(anc && !strcmp(anc, "trainer")))
			report_at(c, "template.spec.template.spec."
				     "priorityClassName",
				  "Invalid value: must not be set on this "
				  "replicatedJob: only the replicatedJob "
				  "labelled with the \"trainer\" ancestor may "
				  "set it");
		hb_schema_path_pop(&c->path, old);
	}
}

/* Dispatch on kind; 1 when obj is a kind with rules. */
int hb_schema_run_rules(struct vctx *c, const cJSON *obj)
{
	const char *av = hb_schema_str(obj, "apiVersion"),
		   *kind = hb_schema_str(obj, "kind");

	if (!av || !kind)
		return 0;
	if (!strcmp(av, "kubeflow.org/v2beta1") && !strcmp(kind, "MPIJob")) {
		rules_mpijob(c, obj);
		return 1;
	}
	if (strcmp(av, "trainer.kubeflow.org/v1alpha1"))
		return 0;
	if (!strcmp(kind, "TrainJob")) {
		rules_trainjob(c, obj);
		return 1;
	}
	if (!strcmp(kind, "ClusterTrainingRuntime") ||
	    !strcmp(kind, "TrainingRuntime")) {
		rules_runtime(c, obj);
		return 1;
	}
	return 0;
}

int hb_schema_check_rules(const struct cJSON *obj, struct hb_buf *violations,
			  struct hb_err *err)
{
	const char *kind = hb_schema_str(obj, "kind"),
		   *av = hb_schema_str(obj, "apiVersion");
	struct vctx c;

	hb_schema_vctx_init(&c, violations, err);
	if (!cJSON_IsObject(obj))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "<root>: must be of type object");
	if (!hb_schema_run_rules(&c, obj))
		return hb_err_set(err, HB_ENOENT, NULL, 0,
				  "no controller rules for kind %.100s in "
				  "%.100s",
				  kind ? kind : "?", av ? av : "?");
	return hb_schema_vctx_finish(&c);
}

int hb_schema_check_trainjob_runtime(const struct cJSON *trainjob,
				     const struct cJSON *runtime,
				     struct hb_buf *violations,
				     struct hb_err *err)
{
	const char *rkind = hb_schema_str(runtime, "kind");
	const cJSON *spec = hb_schema_get(trainjob, "spec");
	const cJSON *ref = hb_schema_has(spec, "runtimeRef");
	const cJSON *mpi = hb_schema_has(
		hb_schema_has(hb_schema_get(runtime, "spec"), "mlPolicy"),
		"mpi");
	const char *kind, *name, *rname, *ns, *rns;
	char q[QUOTE_MAX * 2 + 16];
	long long nodes = 1;
	struct vctx c;

	if (!cJSON_IsObject(runtime) || !rkind ||
	    !hb_schema_str(runtime, "apiVersion") ||
	    strcmp(hb_schema_str(runtime, "apiVersion"),
		   "trainer.kubeflow.org/v1alpha1") ||
	    (strcmp(rkind, "ClusterTrainingRuntime") &&
	     strcmp(rkind, "TrainingRuntime")))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "the runtime is not a trainer.kubeflow.org/"
				  "v1alpha1 TrainingRuntime or "
				  "ClusterTrainingRuntime");
	hb_schema_vctx_init(&c, violations, err);
	kind = str_default(ref, "kind", "ClusterTrainingRuntime");
	name = hb_schema_str(ref, "name");
	rname = hb_schema_str(hb_schema_get(runtime, "metadata"), "name");
	ns = hb_schema_str(hb_schema_get(trainjob, "metadata"), "namespace");
	rns = hb_schema_str(hb_schema_get(runtime, "metadata"), "namespace");
	if (!kind || !name || !rname || strcmp(kind, rkind) ||
	    strcmp(name, rname) ||
	    (!strcmp(rkind, "TrainingRuntime") && ns && rns &&
	     strcmp(ns, rns)))
		report_at(&c, "spec.runtimeRef",
			  "Invalid value: %s %s not found: specified %s must "
			  "be created before the TrainJob is created",
			  kind ? kind : "runtime",
			  hb_schema_quote(name ? name : "", q, sizeof(q)),
			  kind ? kind : "runtime");
	hb_schema_get_int(hb_schema_has(spec, "trainer"), "numNodes", &nodes);
	if (mpi && nodes >= 2 &&
	    cJSON_IsTrue(hb_schema_get(mpi, "runLauncherAsNode"))) {
		const cJSON *rjobs = hb_schema_get(
			hb_schema_get(hb_schema_get(hb_schema_get(runtime,
								  "spec"),
						    "template"),
				      "spec"),
			"replicatedJobs");
		const cJSON *rj;
		int launcher = 0, node = 0;

		cJSON_ArrayForEach(rj, rjobs) {
			const char *n = hb_schema_str(rj, "name");

			launcher |= n && !strcmp(n, "launcher");
			node |= n && !strcmp(n, "node");
		}
		if (!launcher || !node)
			report_at(&c, "spec.trainer.numNodes",
				  "Invalid value: %lld: must have 1 when MPI "
				  "trainingRuntime with enabled "
				  "runLauncherAsNode does not have either "
				  "launcher and node",
				  nodes);
	}
	return hb_schema_vctx_finish(&c);
}
