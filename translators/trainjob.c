/*
 * trainjob.c - Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1),
 * both directions.
 *
 * The TrainJob names the MPI ClusterTrainingRuntime from the
 * configuration; the runtime brings the launcher and node pods, the ssh
 * keys and the hostfile.  The trainer's command runs the launcher script,
 * which runs the original script unchanged.  Placement (node selectors,
 * affinity) goes into a runtime patch on the "launcher" and "node"
 * replicated jobs of the runtime.  Shared pieces are in k8s.c; the mapping
 * is in docs/internals/manifests.md.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/trainjob.h"

#define API_VERSION   "trainer.kubeflow.org/v1alpha1"
#define API_GROUP     "trainer.kubeflow.org"
#define PATCH_MANAGER "hpcbridge.io/gateway"
#define PATCH_PATH                                                             \
	"spec.runtimePatches[0].trainingRuntimeSpec.template.spec."            \
	"replicatedJobs[*].template.spec.template.spec"
#define INT32_MAXV 2147483647

static const struct hb_k8s_paths paths = {
    .kind = "TrainJob",
    .nodes = "spec.trainer.numNodes",
    .slots = "spec.trainer.numProcPerNode",
    .resources = "spec.trainer.resourcesPerNode",
    .deadline = "spec.activeDeadlineSeconds",
    .image = "spec.trainer.image",
    .env = "spec.trainer.env",
    .script = "spec.trainer.args[0]",
    .selector = PATCH_PATH ".nodeSelector",
    .affinity = PATCH_PATH ".affinity",
    .role = "node",
};

static unsigned digits(uint64_t v)
{
	unsigned d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* A patch for one replicated job of the runtime: pod labels, and the
 * node selector and affinity. */
static cJSON *patch_job(const struct hb_k8s_plan *plan, const char *name)
{
	cJSON *j = cJSON_CreateObject(), *t, *ts, *pt, *md, *ps, *x;

	if (!j || !cJSON_AddStringToObject(j, "name", name) ||
	    !(t = cJSON_AddObjectToObject(j, "template")) ||
	    !(ts = cJSON_AddObjectToObject(t, "spec")) ||
	    !(pt = cJSON_AddObjectToObject(ts, "template")) ||
	    !(md = cJSON_AddObjectToObject(pt, "metadata")) ||
	    !(x = cJSON_Duplicate(plan->pod_labels, 1)))
		goto fail;
	cJSON_AddItemToObject(md, "labels", x);
	if (!cJSON_AddStringToObject(x, HB_LABEL_ROLE, paths.role))
		goto fail;
	if (plan->node_selector || plan->affinity) {
		if (!(ps = cJSON_AddObjectToObject(pt, "spec")))
			goto fail;
		if (plan->node_selector) {
			if (!(x = cJSON_Duplicate(plan->node_selector, 1)))
				goto fail;
			cJSON_AddItemToObject(ps, "nodeSelector", x);
		}
		if (plan->affinity) {
			if (!(x = cJSON_Duplicate(plan->affinity, 1)))
				goto fail;
			cJSON_AddItemToObject(ps, "affinity", x);
		}
	}
	return j;
fail:
	cJSON_Delete(j);
	return NULL;
}

int hb_trainjob_emit(const struct hb_jobspec *spec, const struct hb_config *cfg,
		     int64_t array_index, struct cJSON **out,
		     struct hb_report *rep, struct hb_err *err)
{
	struct hb_k8s_plan plan;
	cJSON *root = NULL, *s, *rr, *tr, *a, *patches, *p, *jobs, *x, *ann;
	const char *mpi, *runtime;
	size_t reserve;
	uint32_t last;
	int rc;

	if (!spec || !cfg || !out || !rep)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_trainjob_emit: missing argument");
	*out = NULL;
	/* The longest pod host name: <name>-launcher-0-0 or
	 * <name>-node-0-<N-1>. */
	last = spec->nodes_min > 1 ? spec->nodes_min - 1 : 0;
	reserve = 8 + digits(last);
	if (reserve < sizeof("-launcher-0-0") - 1)
		reserve = sizeof("-launcher-0-0") - 1;
	rc = hb_k8s_plan(spec, cfg, array_index, reserve, &paths, &plan, rep,
			 err);
	if (rc)
		return rc;
	if (plan.shape.nodes > INT32_MAXV ||
	    plan.shape.tasks_per_node > INT32_MAXV) {
		rc = hb_err_set(err, HB_ERANGE, spec->source_name, 0,
				"%u nodes x %u processes do not fit a "
				"TrainJob",
				plan.shape.nodes, plan.shape.tasks_per_node);
		goto out;
	}
	runtime =
	    cfg->trainjob_runtime ? cfg->trainjob_runtime : "mpi-distributed";

	/* No MPI field: the runtime decides (Trainer runs OpenMPI). */
	mpi = hb_mpi_impl_name((enum hb_mpi_impl)spec->mpi);
	ann = cJSON_GetObjectItemCaseSensitive(plan.metadata, "annotations");
	if (!cJSON_AddStringToObject(ann, HB_ANNOTATION_PREFIX "mpi",
				     mpi ? mpi : "default"))
		goto nomem;
	if (spec->mpi && spec->mpi != HB_MPI_OPENMPI)
		hb_report_fate(rep, HB_F_MPI, HB_FATE_PARTIAL,
			       "metadata.annotations[" HB_ANNOTATION_PREFIX
			       "mpi]",
			       "%s: the runtime %s decides the MPI, and "
			       "Trainer's MPI runtime runs OpenMPI only; kept "
			       "in annotation " HB_ANNOTATION_PREFIX "mpi",
			       mpi, runtime);
	else if (spec->mpi || spec->nmpi_lines ||
		 hb_jobspec_has(spec, HB_F_MPI))
		hb_report_fate(
		    rep, HB_F_MPI, HB_FATE_CARRIED,
		    "metadata.annotations[" HB_ANNOTATION_PREFIX "mpi]",
		    "the runtime %s decides the MPI (OpenMPI); no "
		    "TrainJob field; kept in annotation " HB_ANNOTATION_PREFIX
		    "mpi",
		    runtime);
	if (spec->requeue >= 0)
		hb_report_fate(rep, HB_F_REQUEUE, HB_FATE_CARRIED,
			       "metadata.annotations[" HB_ANNOTATION_PREFIX
			       "requeue]",
			       "the runtime's failure policy decides retries; "
			       "no TrainJob field; kept in "
			       "annotation " HB_ANNOTATION_PREFIX "requeue");

	root = cJSON_CreateObject();
	if (!root ||
	    !cJSON_AddStringToObject(root, "apiVersion", API_VERSION) ||
	    !cJSON_AddStringToObject(root, "kind", "TrainJob"))
		goto nomem;
	cJSON_AddItemToObject(root, "metadata", hb_k8s_take(&plan.metadata));
	if (!(s = cJSON_AddObjectToObject(root, "spec")) ||
	    !(rr = cJSON_AddObjectToObject(s, "runtimeRef")) ||
	    !cJSON_AddStringToObject(rr, "apiGroup", API_GROUP) ||
	    !cJSON_AddStringToObject(rr, "kind", "ClusterTrainingRuntime") ||
	    !cJSON_AddStringToObject(rr, "name", runtime))
		goto nomem;
	if (plan.deadline &&
	    !cJSON_AddNumberToObject(s, "activeDeadlineSeconds",
				     (double)plan.deadline))
		goto nomem;
	if (!(tr = cJSON_AddObjectToObject(s, "trainer")) ||
	    !cJSON_AddNumberToObject(tr, "numNodes", plan.shape.nodes) ||
	    !cJSON_AddNumberToObject(tr, "numProcPerNode",
				     plan.shape.tasks_per_node) ||
	    !cJSON_AddStringToObject(tr, "image", plan.image) ||
	    !(a = cJSON_AddArrayToObject(tr, "command")))
		goto nomem;
	if (!(x = cJSON_CreateString("/bin/sh")))
		goto nomem;
	cJSON_AddItemToArray(a, x);
	if (!(x = cJSON_CreateString("-c")))
		goto nomem;
	cJSON_AddItemToArray(a, x);
	if (!(a = cJSON_AddArrayToObject(tr, "args")))
		goto nomem;
	cJSON_AddItemToArray(a, hb_k8s_take(&plan.script));
	if (plan.env)
		cJSON_AddItemToObject(tr, "env", hb_k8s_take(&plan.env));
	cJSON_AddItemToObject(tr, "resourcesPerNode",
			      hb_k8s_take(&plan.resources));

	/* Pod labels and placement, patched into the runtime's launcher
	 * and node jobs (the launcher is a node in the MPI runtime). */
	if (!(patches = cJSON_AddArrayToObject(s, "runtimePatches")) ||
	    !(p = cJSON_CreateObject()))
		goto nomem;
	cJSON_AddItemToArray(patches, p);
	if (!cJSON_AddStringToObject(p, "manager", PATCH_MANAGER) ||
	    !(x = cJSON_AddObjectToObject(p, "trainingRuntimeSpec")) ||
	    !(x = cJSON_AddObjectToObject(x, "template")) ||
	    !(x = cJSON_AddObjectToObject(x, "spec")) ||
	    !(jobs = cJSON_AddArrayToObject(x, "replicatedJobs")))
		goto nomem;
	if (!(x = patch_job(&plan, "launcher")))
		goto nomem;
	cJSON_AddItemToArray(jobs, x);
	if (!(x = patch_job(&plan, "node")))
		goto nomem;
	cJSON_AddItemToArray(jobs, x);

	*out = root;
	root = NULL;
	rc = 0;
	goto out;
nomem:
	rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
out:
	cJSON_Delete(root);
	hb_k8s_plan_free(&plan);
	return rc;
}

/* ---------------------------------------------------------------- */
/* Reading a TrainJob back                                          */
/* ---------------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *k)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static unsigned lineof(const cJSON *n)
{
	int l = n ? hb_doc_line(n) : 0;

	return l > 0 ? (unsigned)l : 0;
}

int hb_trainjob_parse(const struct cJSON *doc, struct hb_jobspec *spec,
		      struct hb_err *err)
{
	static const char *const spec_known[] = {"runtimeRef", "trainer",
						 "activeDeadlineSeconds", NULL};
	static const char *const ours_spec[] = {"runtimeRef", "trainer",
						"activeDeadlineSeconds",
						"runtimePatches", NULL};
	static const char *const trainer_known[] = {"numNodes",
						    "numProcPerNode",
						    "resourcesPerNode",
						    "image",
						    "command",
						    "args",
						    "env",
						    NULL};
	static const char *const ref_known[] = {"name", NULL};
	struct hb_k8s_reader rd;
	const cJSON *s, *ref, *tr;
	const char *runtime;
	int64_t v, tpn = 1;
	bool present;
	int rc;

	if (!spec)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_trainjob_parse: missing jobspec");
	rc = hb_k8s_read_begin(&rd, doc, spec, err, API_VERSION, "TrainJob",
			       HB_SRC_TRAINJOB);
	if (rc)
		return rc;
	if ((rc = hb_k8s_get_obj(&rd, get(doc, "spec"), "spec", &s)))
		return rc;
	if (!s)
		return hb_err_set(err, HB_EINVAL, spec->source_name, 0,
				  "spec: missing");
	if ((rc = hb_k8s_get_obj(&rd, get(s, "runtimeRef"), "spec.runtimeRef",
				 &ref)) ||
	    (rc = hb_k8s_get_str(&rd, get(ref, "name"), "spec.runtimeRef.name",
				 &runtime)))
		return rc;
	if (!runtime || !*runtime)
		return hb_err_set(err, HB_EINVAL, spec->source_name,
				  lineof(ref ? ref : s),
				  "spec.runtimeRef.name: missing (a TrainJob "
				  "names its runtime)");
	if ((rc = hb_k8s_note(&rd, get(ref, "name"), "spec.runtimeRef.name", 0,
			      NULL,
			      "the training runtime: not a job setting; "
			      "the job runs as a batch script")))
		return rc;
	if ((rc = hb_k8s_get_obj(&rd, get(s, "trainer"), "spec.trainer", &tr)))
		return rc;
	if (!tr)
		return hb_err_set(err, HB_EUNSUP, spec->source_name, lineof(s),
				  "spec.trainer: missing: the runtime's own "
				  "command runs, which sbatch cannot express");

	if ((rc = hb_k8s_get_int(&rd, get(tr, "numNodes"),
				 "spec.trainer.numNodes", 1, INT32_MAXV, &v,
				 &present)))
		return rc;
	rd.m_nodes = 1;
	if (present) {
		spec->nodes_min = (uint32_t)v;
		rd.m_nodes = (uint32_t)v;
		if ((rc =
			 hb_k8s_set(&rd, get(tr, "numNodes"),
				    "spec.trainer.numNodes", HB_F_NODES, NULL)))
			return rc;
	}
	if ((rc = hb_k8s_get_int(&rd, get(tr, "numProcPerNode"),
				 "spec.trainer.numProcPerNode", 1, INT32_MAXV,
				 &v, &present)))
		return rc;
	if (present) {
		tpn = v;
		spec->ntasks_per_node = (uint32_t)v;
		if ((rc = hb_k8s_set(&rd, get(tr, "numProcPerNode"),
				     "spec.trainer.numProcPerNode",
				     HB_F_NTASKS_PER_NODE, NULL)))
			return rc;
	}
	rd.m_slots = (uint32_t)tpn;
	if ((rc = hb_k8s_get_int(&rd, get(s, "activeDeadlineSeconds"),
				 "spec.activeDeadlineSeconds", 1,
				 1000000000000LL, &v, &present)))
		return rc;
	if (present) {
		spec->time_limit = (uint64_t)v;
		rd.m_has_deadline = true;
		if ((rc = hb_k8s_set(&rd, get(s, "activeDeadlineSeconds"),
				     "spec.activeDeadlineSeconds",
				     HB_F_TIME_LIMIT, NULL)))
			return rc;
	}
	if ((rc = hb_k8s_read_resources(&rd, get(tr, "resourcesPerNode"),
					"spec.trainer.resourcesPerNode",
					(uint32_t)tpn)) ||
	    (rc = hb_k8s_read_container(&rd, tr, "spec.trainer")))
		return rc;

	if ((rc = hb_k8s_note_unknown(&rd, s, "spec",
				      rd.ours ? ours_spec : spec_known,
				      "not carried: a TrainJob setting "
				      "sbatch does not have")) ||
	    (rc = hb_k8s_note_unknown(&rd, ref, "spec.runtimeRef", ref_known,
				      "the training runtime: not a job "
				      "setting")) ||
	    (rc = hb_k8s_note_unknown(&rd, tr, "spec.trainer", trainer_known,
				      "not carried: a trainer setting sbatch "
				      "does not have")))
		return rc;
	return hb_k8s_read_end(&rd);
}
