/*
 * trainjob.c - Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1),
 * both directions.
 *
 * The TrainJob names the MPI ClusterTrainingRuntime from the
 * configuration; the runtime brings the launcher and node pods, the ssh
 * keys and the hostfile.  The trainer's command runs the launcher script,
 * which runs the original script unchanged.  Placement (node selectors,
 * affinity) goes into a runtime patch on the "launcher" and "node"
 * replicated jobs of the runtime.  Shared pieces are in k8s*.c
 * (k8s_int.h); the mapping is in docs/internals/manifests.md.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/trainjob.h"
#include "translators/k8s/k8s_int.h"

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
    .security = PATCH_PATH ".securityContext",
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

/* A patch for one replicated job of the runtime: pod labels, the pod's
 * securityContext (who it runs as; the containers' own are the
 * runtime's), and the node selector and affinity. */
static void patch_job(struct hb_emit *w, const struct hb_k8s_plan *plan,
		      const char *name)
{
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", name);
	hb_emit_obj(w, "template");
	hb_emit_obj(w, "spec");
	hb_emit_obj(w, "template");
	hb_emit_obj(w, "metadata");
	hb_k8s_write_pod_meta(w, plan, paths.role);
	hb_emit_end(w);
	hb_emit_obj(w, "spec");
	hb_k8s_write_pod_security(w, plan);
	hb_k8s_write_placement(w, plan);
	hb_emit_end(w);
	hb_emit_end(w); /* template */
	hb_emit_end(w); /* spec */
	hb_emit_end(w); /* template */
	hb_emit_end(w);
}

int hb_trainjob_write(const struct hb_jobspec *spec,
		      const struct hb_k8s_opts *cfg, int64_t array_index,
		      struct hb_emit *w, struct hb_report *rep,
		      struct hb_err *err)
{
	struct hb_k8s_plan plan;
	const char *mpi, *runtime;
	size_t reserve;
	uint32_t last;
	int rc;

	if (!spec || !cfg || !w || !rep)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_trainjob_write: missing argument");
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
	if (hb_k8s_annotate(&plan, HB_ANNOTATION_PREFIX "mpi",
			    mpi ? mpi : "default")) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
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

	hb_emit_obj(w, NULL);
	hb_emit_str(w, "apiVersion", API_VERSION);
	hb_emit_str(w, "kind", "TrainJob");
	hb_k8s_write_metadata(w, &plan);
	hb_emit_obj(w, "spec");
	hb_emit_obj(w, "runtimeRef");
	hb_emit_str(w, "apiGroup", API_GROUP);
	hb_emit_str(w, "kind", "ClusterTrainingRuntime");
	hb_emit_str(w, "name", runtime);
	hb_emit_end(w);
	if (plan.deadline)
		hb_emit_num(w, "activeDeadlineSeconds", (double)plan.deadline);
	/* Kueue admits a queued job by unsuspending it. */
	if (plan.queue)
		hb_emit_bool(w, "suspend", 1);
	hb_emit_obj(w, "trainer");
	hb_emit_num(w, "numNodes", plan.shape.nodes);
	hb_emit_num(w, "numProcPerNode", plan.shape.tasks_per_node);
	hb_emit_str(w, "image", plan.image);
	hb_emit_arr(w, "command");
	hb_emit_str(w, NULL, "/bin/sh");
	hb_emit_str(w, NULL, "-c");
	hb_emit_end(w);
	hb_emit_arr(w, "args");
	hb_k8s_write_script(w, &plan);
	hb_emit_end(w);
	hb_k8s_write_env(w, &plan, NULL, false);
	hb_k8s_write_resources(w, "resourcesPerNode", &plan.resources);
	hb_emit_end(w); /* trainer */

	/* Pod labels and placement, patched into the runtime's launcher
	 * and node jobs (the launcher is a node in the MPI runtime). */
	hb_emit_arr(w, "runtimePatches");
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "manager", PATCH_MANAGER);
	hb_emit_obj(w, "trainingRuntimeSpec");
	hb_emit_obj(w, "template");
	hb_emit_obj(w, "spec");
	hb_emit_arr(w, "replicatedJobs");
	patch_job(w, &plan, "launcher");
	patch_job(w, &plan, "node");
	hb_emit_end(w); /* replicatedJobs */
	hb_emit_end(w); /* spec */
	hb_emit_end(w); /* template */
	hb_emit_end(w); /* trainingRuntimeSpec */
	hb_emit_end(w); /* the patch */
	hb_emit_end(w); /* runtimePatches */
	hb_emit_end(w); /* spec */
	hb_emit_end(w);
	rc = hb_emit_done(w);
	if (rc)
		hb_err_set(err, rc, spec->source_name, 0,
			   "cannot write the TrainJob: %s", hb_strerror(rc));
out:
	hb_k8s_plan_free(&plan);
	return rc;
}

int hb_trainjob_emit(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		     int64_t array_index, struct cJSON **out,
		     struct hb_report *rep, struct hb_err *err)
{
	struct hb_emit *w;
	int rc;

	if (!spec || !cfg || !out || !rep)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_trainjob_emit: missing argument");
	*out = NULL;
	if (!(w = hb_emit_new(HB_EMIT_TREE, NULL)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	rc = hb_trainjob_write(spec, cfg, array_index, w, rep, err);
	if (!rc)
		rc = hb_emit_take(w, out);
	hb_emit_free(w);
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
	static const char *const ours_spec[] = {
	    "runtimeRef", "trainer", "activeDeadlineSeconds", "runtimePatches",
	    "suspend", NULL};
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
