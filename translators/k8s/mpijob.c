/*
 * mpijob.c - Kubeflow MPIJob (kubeflow.org/v2beta1), both directions.
 *
 * A job becomes one MPIJob: N workers (one per node) that run the ssh
 * daemon, as the operator's examples do, and a launcher that runs the
 * launcher script, which runs the original script unchanged against the
 * operator's hostfile.  The shared pieces are in k8s*.c (k8s_int.h); the
 * mapping is in docs/internals/manifests.md.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/launcher.h"
#include "hpcbridge/mpijob.h"
#include "translators/k8s/k8s_int.h"

#define API_VERSION   "kubeflow.org/v2beta1"
#define WORKER_PATH   "spec.mpiReplicaSpecs.Worker.template.spec"
#define LAUNCHER_PATH "spec.mpiReplicaSpecs.Launcher.template.spec"
#define INT32_MAXV    2147483647
/* The launcher pod's volume holding the runtime ConfigMap. */
#define RUNTIME_VOLUME "hpcbridge-launcher"

static const struct hb_k8s_paths paths = {
    .kind = "MPIJob",
    .nodes = "spec.mpiReplicaSpecs.Worker.replicas",
    .slots = "spec.slotsPerWorker",
    .resources = WORKER_PATH ".containers[0].resources",
    .deadline = "spec.runPolicy.activeDeadlineSeconds",
    .image = "spec.mpiReplicaSpecs.*.template.spec.containers[0].image",
    .env = "spec.mpiReplicaSpecs.*.template.spec.containers[0].env",
    .script = LAUNCHER_PATH ".containers[0].args[0]",
    .selector = WORKER_PATH ".nodeSelector",
    .affinity = WORKER_PATH ".affinity",
    .role = "worker",
    .security = "spec.mpiReplicaSpecs.*.template.spec.securityContext",
    .mounts = true,
};

/* Where the operator mounts its SSH keys when the site does not say:
 * outside any home directory, so that no site volume (a /home) hides it
 * or is hidden by it, whatever uid the pods run as. */
#define SSH_AUTH_DEFAULT "/etc/hpcbridge/ssh"
/* What the launcher script adds to each MPI's ssh command line. */
#define SSH_ARGS_ENV "HPCBRIDGE_SSH_ARGS"

/* What the replicas run, besides the plan. */
struct replica_run {
	const char *const *command;
	int ncommand;
	const char *args0;	       /* NULL: the launcher script */
	const struct hb_k8s_kv *extra; /* env added after the job's */
	bool launcher;
};

/* One replica spec with its pod template and single container. */
static void replica(struct hb_emit *w, const struct hb_k8s_plan *plan,
		    const char *key, int64_t replicas, const char *role,
		    const struct replica_run *run)
{
	bool launcher = run->launcher;
	bool mounts = (launcher && plan->runtime_mounted) || plan->nvolumes ||
		      plan->ckpt_mount;

	hb_emit_obj(w, key);
	hb_emit_num(w, "replicas", (double)replicas);
	hb_emit_str(w, "restartPolicy", "Never");
	hb_emit_obj(w, "template");
	hb_emit_obj(w, "metadata");
	hb_k8s_write_pod_meta(w, plan, role);
	hb_emit_end(w);
	hb_emit_obj(w, "spec");
	hb_k8s_write_pod_security(w, plan);
	hb_k8s_write_ckpt_init(w, plan, launcher);
	hb_emit_arr(w, "containers");
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", role);
	hb_emit_str(w, "image", plan->image);
	hb_emit_arr(w, "command");
	for (int i = 0; i < run->ncommand; i++)
		hb_emit_str(w, NULL, run->command[i]);
	hb_emit_end(w);
	hb_emit_arr(w, "args");
	if (!run->args0)
		hb_k8s_write_script(w, plan);
	else
		hb_emit_str(w, NULL, run->args0);
	hb_emit_end(w);
	hb_k8s_write_env(w, plan, run->extra, launcher);
	hb_k8s_write_resources(w, "resources",
			       launcher ? &plan->launcher_resources
					: &plan->resources);
	hb_k8s_write_container_security(w, !launcher && plan->ipc_lock);
	if (mounts) {
		hb_emit_arr(w, "volumeMounts");
		if (launcher && plan->runtime_mounted) {
			/* The launcher runtime's ConfigMap. */
			hb_emit_obj(w, NULL);
			hb_emit_str(w, "name", RUNTIME_VOLUME);
			hb_emit_str(w, "mountPath", HB_LAUNCHER_RUNTIME_DIR);
			hb_emit_bool(w, "readOnly", 1);
			hb_emit_end(w);
		}
		hb_k8s_write_site_mounts(w, plan);
		hb_k8s_write_ckpt_mount(w, plan);
		hb_emit_end(w);
	}
	hb_emit_end(w); /* the container */
	hb_emit_end(w); /* containers */
	if (!launcher) {
		hb_k8s_write_placement(w, plan);
		hb_k8s_write_pod_claims(w, plan);
	}
	if (mounts) {
		hb_emit_arr(w, "volumes");
		if (launcher && plan->runtime_mounted) {
			hb_emit_obj(w, NULL);
			hb_emit_str(w, "name", RUNTIME_VOLUME);
			hb_emit_obj(w, "configMap");
			hb_emit_str(w, "name", hb_launcher_runtime_name());
			/* Missing, the pod still starts and the launcher
			 * says why it cannot run, instead of hanging in
			 * ContainerCreating. */
			hb_emit_bool(w, "optional", 1);
			hb_emit_end(w);
			hb_emit_end(w);
		}
		hb_k8s_write_site_volumes(w, plan);
		hb_k8s_write_ckpt_volume(w, plan);
		hb_emit_end(w);
	}
	hb_emit_end(w); /* spec */
	hb_emit_end(w); /* template */
	hb_emit_end(w);
}

/*
 * What runs the workers' sshd as the user: no root, no privileged port,
 * no capability.  The configuration is written at start (the image's
 * /etc/ssh/sshd_config wants root): the port, a pid file the user may
 * write, the operator's mounted key as host key and its authorized_keys,
 * and StrictModes off, since the Secret's files belong to root.  A uid
 * the image's /etc/passwd lacks is added where that file is writable (as
 * OpenShift images allow), for sshd to accept the login.
 */
static int worker_script(const char *auth, uint32_t port, struct hb_buf *out)
{
	struct hb_buf raw;
	int rc;

	hb_buf_init(&raw, 0);
	rc = hb_buf_printf(
	    &raw,
	    "d=${TMPDIR:-/tmp}/hpcbridge-sshd\n"
	    "mkdir -p \"$d\" && chmod 700 \"$d\" || exit 1\n"
	    "if ! id -un >/dev/null 2>&1 && [ -w /etc/passwd ]; then\n"
	    "\techo \"hpcbridge:x:$(id -u):$(id -g)::$d:/bin/sh\" "
	    ">>/etc/passwd\n"
	    "fi\n"
	    "printf '%%s\\n' 'Port %u' \"PidFile $d/sshd.pid\" "
	    "'HostKey %s/id_rsa' 'AuthorizedKeysFile %s/authorized_keys' "
	    "'StrictModes no' 'PasswordAuthentication no' "
	    ">\"$d/sshd_config\" || exit 1\n"
	    "exec /usr/sbin/sshd -De -f \"$d/sshd_config\"\n",
	    port, auth, auth);
	if (!rc)
		rc = hb_k8s_escape(raw.data, raw.len, out);
	hb_buf_free(&raw);
	return rc;
}

/* spec.runPolicy: Kueue admits a queued job by unsuspending it; gang
 * scheduling wants every pod (workers and the launcher) at once. */
static void run_policy(struct hb_emit *w, const struct hb_k8s_plan *plan,
		       const struct hb_k8s_opts *cfg)
{
	hb_emit_obj(w, "runPolicy");
	hb_emit_str(w, "cleanPodPolicy", "Running");
	hb_emit_num(w, "backoffLimit", 0);
	if (plan->deadline)
		hb_emit_num(w, "activeDeadlineSeconds", (double)plan->deadline);
	if (plan->queue)
		hb_emit_bool(w, "suspend", 1);
	if (cfg->gang_scheduling) {
		hb_emit_obj(w, "schedulingPolicy");
		hb_emit_num(w, "minAvailable", (double)plan->shape.nodes + 1);
		if (plan->queue)
			hb_emit_str(w, "queue", plan->queue);
		if (plan->pod_priority)
			hb_emit_str(w, "priorityClass", plan->pod_priority);
		hb_emit_end(w);
	}
	hb_emit_end(w);
}

static const char *mpi_name(const struct hb_jobspec *spec,
			    const struct hb_k8s_opts *cfg, struct hb_err *err)
{
	const char *m = hb_mpi_impl_name(hb_mpi_family(spec->mpi));

	if (m)
		return m;
	m = cfg->default_mpi ? cfg->default_mpi : "OpenMPI";
	if (strcmp(m, "OpenMPI") && strcmp(m, "Intel") && strcmp(m, "MPICH")) {
		hb_err_set(err, HB_EINVAL, NULL, 0,
			   "configuration: default_mpi '%.60s' is not OpenMPI, "
			   "Intel or MPICH",
			   m);
		return NULL;
	}
	return m;
}

int hb_mpijob_write(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		    int64_t array_index, struct hb_emit *w,
		    struct hb_report *rep, struct hb_err *err)
{
	static const char *const sh_cmd[] = {"/bin/sh", "-c"};
	struct hb_k8s_plan plan;
	struct hb_buf sshd, args;
	struct hb_k8s_kv ssh_env = {SSH_ARGS_ENV, NULL};
	const char *mpi, *auth;
	uint32_t port;
	int rc;

	if (!spec || !cfg || !w || !rep)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_mpijob_write: missing argument");
	rc = hb_k8s_plan(spec, cfg, array_index, 0, &paths, &plan, rep, err);
	if (rc)
		return rc;
	hb_buf_init(&sshd, 0);
	hb_buf_init(&args, 0);
	auth = cfg->ssh_auth_mount_path ? cfg->ssh_auth_mount_path
					: SSH_AUTH_DEFAULT;
	port = cfg->ssh_port ? cfg->ssh_port : HB_K8S_SSH_PORT;
	/* The launcher's ssh: the workers' port and the operator's key,
	 * wherever the user's home is; no known_hosts to write. */
	if (worker_script(auth, port, &sshd) ||
	    hb_buf_printf(&args,
			  "-p %u -i %s/id_rsa -o StrictHostKeyChecking=no "
			  "-o UserKnownHostsFile=/dev/null",
			  port, auth)) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	ssh_env.value = args.data;
	if (plan.shape.nodes > INT32_MAXV ||
	    plan.shape.tasks_per_node > INT32_MAXV) {
		rc = hb_err_set(err, HB_ERANGE, spec->source_name, 0,
				"%u workers x %u slots do not fit an MPIJob",
				plan.shape.nodes, plan.shape.tasks_per_node);
		goto out;
	}
	if (!(mpi = mpi_name(spec, cfg, err))) {
		rc = HB_EINVAL;
		goto out;
	}
	if (spec->mpi)
		hb_report_fate(rep, HB_F_MPI, HB_FATE_MAPPED,
			       "spec.mpiImplementation", "%s", mpi);
	else if (spec->nmpi_lines || hb_jobspec_has(spec, HB_F_MPI))
		hb_report_fate(rep, HB_F_MPI, HB_FATE_MAPPED,
			       "spec.mpiImplementation",
			       "the job names no MPI: the configured default "
			       "%s; launch lines run against the hostfile",
			       mpi);
	if (!spec->mpi &&
	    hb_k8s_annotate(&plan, HB_ANNOTATION_PREFIX "mpi", "default")) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}

	hb_emit_obj(w, NULL);
	hb_emit_str(w, "apiVersion", API_VERSION);
	hb_emit_str(w, "kind", "MPIJob");
	hb_k8s_write_metadata(w, &plan);
	hb_emit_obj(w, "spec");
	hb_emit_num(w, "slotsPerWorker", plan.shape.tasks_per_node);
	run_policy(w, &plan, cfg);
	hb_emit_str(w, "sshAuthMountPath", auth);
	hb_emit_str(w, "mpiImplementation", mpi);
	hb_emit_obj(w, "mpiReplicaSpecs");
	replica(w, &plan, "Launcher", 1, "launcher",
		&(struct replica_run){sh_cmd, 2, NULL, &ssh_env, true});
	replica(w, &plan, "Worker", plan.shape.nodes, "worker",
		&(struct replica_run){sh_cmd, 2, sshd.data, NULL, false});
	hb_emit_end(w); /* mpiReplicaSpecs */
	hb_emit_end(w); /* spec */
	hb_emit_end(w);
	rc = hb_emit_done(w);
	if (rc)
		hb_err_set(err, rc, spec->source_name, 0,
			   "cannot write the MPIJob: %s", hb_strerror(rc));
out:
	hb_buf_free(&sshd);
	hb_buf_free(&args);
	hb_k8s_plan_free(&plan);
	return rc;
}

int hb_mpijob_emit(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		   int64_t array_index, struct cJSON **out,
		   struct hb_report *rep, struct hb_err *err)
{
	struct hb_emit *w;
	int rc;

	if (!spec || !cfg || !out || !rep)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_mpijob_emit: missing argument");
	*out = NULL;
	if (!(w = hb_emit_new(HB_EMIT_TREE, NULL)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	rc = hb_mpijob_write(spec, cfg, array_index, w, rep, err);
	if (!rc)
		rc = hb_emit_take(w, out);
	hb_emit_free(w);
	return rc;
}

/* ---------------------------------------------------------------- */
/* Reading an MPIJob back                                           */
/* ---------------------------------------------------------------- */

static unsigned lineof(const cJSON *n)
{
	int l = n ? hb_doc_line(n) : 0;

	return l > 0 ? (unsigned)l : 0;
}

static const cJSON *get(const cJSON *o, const char *k)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

/* A replica's pod spec and its first container. */
static int pod(struct hb_k8s_reader *rd, const cJSON *replica, const char *base,
	       const cJSON **ps, const cJSON **c)
{
	static const char *const tmpl_known[] = {"metadata", "spec", NULL};
	const cJSON *t, *cs;
	char p[256];
	int rc;

	*ps = *c = NULL;
	snprintf(p, sizeof(p), "%s.template", base);
	if ((rc = hb_k8s_get_obj(rd, get(replica, "template"), p, &t)))
		return rc;
	snprintf(p, sizeof(p), "%s.template.spec", base);
	if ((rc = hb_k8s_get_obj(rd, get(t, "spec"), p, ps)))
		return rc;
	snprintf(p, sizeof(p), "%s.template.spec.containers", base);
	if ((rc = hb_k8s_get_arr(rd, get(*ps, "containers"), p, &cs)))
		return rc;
	if (!cs || cJSON_GetArraySize(cs) < 1)
		return hb_err_set(rd->err, HB_EINVAL, rd->spec->source_name,
				  lineof(cs),
				  "%s: must list at least one container", p);
	*c = cJSON_GetArrayItem(cs, 0);
	snprintf(p, sizeof(p), "%s.template", base);
	if (!rd->ours &&
	    (rc = hb_k8s_note_unknown(rd, t, p, tmpl_known,
				      "not carried: pod metadata")))
		return rc;
	if (cJSON_GetArraySize(cs) > 1) {
		snprintf(p, sizeof(p), "%s.template.spec.containers[1]", base);
		if ((rc = hb_k8s_note(rd, cJSON_GetArrayItem(cs, 1), p, 0, NULL,
				      "not carried: only the first container "
				      "runs the job")))
			return rc;
	}
	return 0;
}

/* What the steps of hb_mpijob_parse() read and pass on. */
struct mpijob_in {
	struct hb_k8s_reader rd;
	const cJSON *s;			/* spec */
	const cJSON *rp;		/* spec.runPolicy */
	const cJSON *rs;		/* spec.mpiReplicaSpecs */
	const cJSON *launcher, *worker; /* its replicas */
	const cJSON *lps, *lc;		/* the launcher's pod spec, container */
	const cJSON *wps, *wc;		/* the workers' */
	int64_t slots;			/* tasks per node */
};

/* Slots: tasks per node. */
static int read_slots(struct mpijob_in *m)
{
	struct hb_k8s_reader *rd = &m->rd;
	int64_t v;
	bool present;
	int rc;

	if ((rc = hb_k8s_get_int(rd, get(m->s, "slotsPerWorker"),
				 "spec.slotsPerWorker", 0, INT32_MAXV, &v,
				 &present)))
		return rc;
	if (present && v > 0) {
		m->slots = v;
		rd->spec->ntasks_per_node = (uint32_t)v;
		if ((rc = hb_k8s_set(rd, get(m->s, "slotsPerWorker"),
				     "spec.slotsPerWorker",
				     HB_F_NTASKS_PER_NODE, NULL)))
			return rc;
	}
	return 0;
}

/* Replicas: one launcher, the workers, and the node count. */
static int read_replicas(struct mpijob_in *m)
{
	struct hb_k8s_reader *rd = &m->rd;
	struct hb_jobspec *spec = rd->spec;
	struct hb_err *err = rd->err;
	const cJSON *s = m->s;
	int64_t replicas = 0, v;
	bool present, as_worker = false;
	uint32_t nodes;
	int rc;

	if ((rc = hb_k8s_get_obj(rd, get(s, "mpiReplicaSpecs"),
				 "spec.mpiReplicaSpecs", &m->rs)))
		return rc;
	if (!m->rs)
		return hb_err_set(err, HB_EINVAL, spec->source_name, lineof(s),
				  "spec.mpiReplicaSpecs: missing");
	if ((rc = hb_k8s_get_obj(rd, get(m->rs, "Launcher"),
				 "spec.mpiReplicaSpecs.Launcher",
				 &m->launcher)) ||
	    (rc = hb_k8s_get_obj(rd, get(m->rs, "Worker"),
				 "spec.mpiReplicaSpecs.Worker", &m->worker)))
		return rc;
	if (!m->launcher)
		return hb_err_set(err, HB_EINVAL, spec->source_name,
				  lineof(m->rs),
				  "spec.mpiReplicaSpecs.Launcher: missing (an "
				  "MPIJob needs its launcher)");
	if ((rc = hb_k8s_get_int(rd, get(m->launcher, "replicas"),
				 "spec.mpiReplicaSpecs.Launcher.replicas", 0,
				 INT32_MAXV, &v, &present)))
		return rc;
	if (present && v != 1)
		return hb_err_set(err, HB_EINVAL, spec->source_name,
				  lineof(get(m->launcher, "replicas")),
				  "spec.mpiReplicaSpecs.Launcher.replicas: "
				  "must be 1");
	if ((rc = hb_k8s_get_int(rd, get(m->worker, "replicas"),
				 "spec.mpiReplicaSpecs.Worker.replicas", 0,
				 INT32_MAXV, &replicas, &present)))
		return rc;
	if (get(s, "runLauncherAsWorker")) {
		const cJSON *b = get(s, "runLauncherAsWorker");

		if (!cJSON_IsBool(b) && !cJSON_IsNull(b))
			return hb_err_set(err, HB_EINVAL, spec->source_name,
					  lineof(b),
					  "spec.runLauncherAsWorker: must be "
					  "true or false");
		as_worker = cJSON_IsTrue(b);
	}
	nodes = (uint32_t)replicas + (as_worker ? 1 : 0);
	if (nodes == 0)
		nodes = 1;
	spec->nodes_min = nodes;
	rd->m_nodes = nodes;
	rd->m_slots = (uint32_t)m->slots;
	if (m->worker && present) {
		if ((rc = hb_k8s_set(rd, get(m->worker, "replicas"),
				     "spec.mpiReplicaSpecs.Worker.replicas",
				     HB_F_NODES,
				     as_worker ? "workers, plus the launcher "
						 "as a worker"
					       : NULL)))
			return rc;
	} else if ((rc = hb_k8s_set(rd, m->launcher,
				    "spec.mpiReplicaSpecs.Launcher", HB_F_NODES,
				    "no workers: the launcher alone"))) {
		return rc;
	}
	return 0;
}

/* Time limit. */
static int read_deadline(struct mpijob_in *m)
{
	struct hb_k8s_reader *rd = &m->rd;
	int64_t v;
	bool present;
	int rc;

	if ((rc = hb_k8s_get_obj(rd, get(m->s, "runPolicy"), "spec.runPolicy",
				 &m->rp)) ||
	    (rc = hb_k8s_get_int(rd, get(m->rp, "activeDeadlineSeconds"),
				 "spec.runPolicy.activeDeadlineSeconds", 1,
				 1000000000000LL, &v, &present)))
		return rc;
	if (present) {
		rd->spec->time_limit = (uint64_t)v;
		rd->m_has_deadline = true;
		if ((rc = hb_k8s_set(rd, get(m->rp, "activeDeadlineSeconds"),
				     "spec.runPolicy.activeDeadlineSeconds",
				     HB_F_TIME_LIMIT, NULL)))
			return rc;
	}
	return 0;
}

/* MPI implementation: the operator's default is OpenMPI. */
static int read_mpi(struct mpijob_in *m)
{
	struct hb_k8s_reader *rd = &m->rd;
	struct hb_jobspec *spec = rd->spec;
	const cJSON *s = m->s;
	const char *mpi;
	int rc;

	if ((rc = hb_k8s_get_str(rd, get(s, "mpiImplementation"),
				 "spec.mpiImplementation", &mpi)))
		return rc;
	if (!mpi || strcmp(mpi, "OpenMPI") == 0)
		spec->mpi = HB_MPI_OPENMPI;
	else if (strcmp(mpi, "Intel") == 0)
		spec->mpi = HB_MPI_INTEL;
	else if (strcmp(mpi, "MPICH") == 0)
		spec->mpi = HB_MPI_MPICH;
	else
		return hb_err_set(rd->err, HB_EINVAL, spec->source_name,
				  lineof(get(s, "mpiImplementation")),
				  "spec.mpiImplementation: '%.60s' is not "
				  "OpenMPI, Intel or MPICH",
				  mpi);
	return hb_k8s_set(rd, mpi ? get(s, "mpiImplementation") : s,
			  mpi ? "spec.mpiImplementation" : "spec", HB_F_MPI,
			  mpi ? NULL
			      : "no mpiImplementation: the "
				"operator's default, OpenMPI");
}

/* The pods: the workers' resources (else the launcher's) and the
 * launcher's container, which runs the job. */
static int read_pods(struct mpijob_in *m)
{
	static const char *const container_known[] = {
	    "name", "image",	 "command",    "args",
	    "env",  "resources", "workingDir", NULL};
	/* What hpcbridge writes besides: the security context and the
	 * mounts come from the configuration, not the job. */
	static const char *const ours_container[] = {
	    "name",	 "image",	     "command",	     "args",
	    "env",	 "resources",	     "workingDir",   "securityContext",
	    "volumeMounts", NULL};
	struct hb_k8s_reader *rd = &m->rd;
	const cJSON *lc, *wc;
	int rc;

	if ((rc = pod(rd, m->launcher, "spec.mpiReplicaSpecs.Launcher", &m->lps,
		      &m->lc)))
		return rc;
	m->wps = m->wc = NULL;
	if (m->worker && (rc = pod(rd, m->worker, "spec.mpiReplicaSpecs.Worker",
				   &m->wps, &m->wc)))
		return rc;
	lc = m->lc;
	wc = m->wc;
	if ((rc = hb_k8s_read_resources(rd, get(wc ? wc : lc, "resources"),
					wc ? WORKER_PATH ".containers[0]."
							 "resources"
					   : LAUNCHER_PATH ".containers[0]."
							   "resources",
					(uint32_t)m->slots)))
		return rc;
	if (wc && !rd->ours &&
	    (rc = hb_k8s_note(rd, get(lc, "resources"),
			      LAUNCHER_PATH ".containers[0].resources", 0, NULL,
			      "not carried: the launcher's own resources")))
		return rc;
	if ((rc = hb_k8s_read_container(rd, lc,
					LAUNCHER_PATH ".containers[0]")) ||
	    (rc = hb_k8s_note_unknown(rd, lc, LAUNCHER_PATH ".containers[0]",
				      rd->ours ? ours_container
					       : container_known,
				      "not carried: a container setting "
				      "sbatch does not have")))
		return rc;
	return 0;
}

/* What has no sbatch equivalent. */
static int note_uncarried(struct mpijob_in *m)
{
	static const char *const spec_known[] = {
	    "slotsPerWorker",	 "runPolicy",		"mpiReplicaSpecs",
	    "mpiImplementation", "runLauncherAsWorker", NULL};
	static const char *const rp_known[] = {"activeDeadlineSeconds", NULL};
	static const char *const rs_known[] = {"Launcher", "Worker", NULL};
	static const char *const replica_known[] = {"replicas", "template",
						    "restartPolicy", NULL};
	static const char *const ours_ps[] = {
	    "containers", "nodeSelector", "affinity",
	    "securityContext", "volumes", "initContainers", "resourceClaims",
	    NULL};
	static const char *const ps_known[] = {"containers", NULL};
	struct hb_k8s_reader *rd = &m->rd;
	int rc;

	if ((rc = hb_k8s_note_unknown(rd, m->s, "spec", spec_known,
				      "not carried: an MPI Operator "
				      "setting")) ||
	    (rc = hb_k8s_note_unknown(rd, m->rp, "spec.runPolicy", rp_known,
				      "not carried: a run policy Slurm "
				      "does not have")) ||
	    (rc = hb_k8s_note_unknown(rd, m->rs, "spec.mpiReplicaSpecs",
				      rs_known,
				      "not carried: not an MPIJob replica")) ||
	    (rc = hb_k8s_note_unknown(rd, m->launcher,
				      "spec.mpiReplicaSpecs.Launcher",
				      replica_known, "not carried")) ||
	    (rc = hb_k8s_note_unknown(rd, m->worker,
				      "spec.mpiReplicaSpecs.Worker",
				      replica_known, "not carried")) ||
	    (rc = hb_k8s_note_unknown(rd, m->lps, LAUNCHER_PATH,
				      rd->ours ? ours_ps : ps_known,
				      "not carried: a pod setting sbatch "
				      "does not have")) ||
	    (rc = hb_k8s_note_unknown(rd, m->wps, WORKER_PATH,
				      rd->ours ? ours_ps : ps_known,
				      "not carried: a pod setting sbatch "
				      "does not have")))
		return rc;
	if (m->wc && !rd->ours &&
	    (rc = hb_k8s_note(rd, m->wc, WORKER_PATH ".containers[0]", 0, NULL,
			      "the workers' container: its resources are "
			      "read; its command (the ssh daemon) and the "
			      "rest are not carried")))
		return rc;
	return 0;
}

int hb_mpijob_parse(const struct cJSON *doc, struct hb_jobspec *spec,
		    struct hb_err *err)
{
	struct mpijob_in m;
	int rc;

	if (!spec)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_mpijob_parse: missing jobspec");
	memset(&m, 0, sizeof(m));
	m.slots = 1;
	rc = hb_k8s_read_begin(&m.rd, doc, spec, err, API_VERSION, "MPIJob",
			       HB_SRC_MPIJOB);
	if (rc)
		return rc;
	if ((rc = hb_k8s_get_obj(&m.rd, get(doc, "spec"), "spec", &m.s)))
		return rc;
	if (!m.s)
		return hb_err_set(err, HB_EINVAL, spec->source_name, 0,
				  "spec: missing");
	if ((rc = read_slots(&m)) || (rc = read_replicas(&m)) ||
	    (rc = read_deadline(&m)) || (rc = read_mpi(&m)) ||
	    (rc = read_pods(&m)) || (rc = note_uncarried(&m)))
		return rc;
	return hb_k8s_read_end(&m.rd);
}
