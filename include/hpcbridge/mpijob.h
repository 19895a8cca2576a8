/*
 * mpijob.h - Kubeflow MPIJob (kubeflow.org/v2beta1), both directions, and
 * what other parts use of the pieces the MPIJob and TrainJob translators
 * share (k8s.c): the object name and the launcher runtime's ConfigMap.
 * The rest of those pieces is private to translators/k8s/ (k8s_int.h).
 *
 * The mapping, the annotation carry-over and the reverse direction are
 * described in docs/internals/manifests.md.
 */
#ifndef HPCBRIDGE_MPIJOB_H
#define HPCBRIDGE_MPIJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/error.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/jobspec.h"

struct cJSON;

/* The workers' sshd port when kubernetes.ssh_port does not say. */
#define HB_K8S_SSH_PORT 2222

/* Longest metadata.name: "<name>-worker-<N-1>" must stay <= 63. */
#define HB_DNS_LABEL_MAX 63

/*
 * The Kubernetes name for spec: the job name (else the source file's base
 * name without extension) lowercased, each run of characters outside
 * [a-z0-9] turned into one '-', trimmed of '-', and cut so that
 * "<name>[-<array_index>]-worker-<nodes-1>" fits in 63 characters.  A name
 * that comes out empty or starting with a digit is prefixed "job-" (an
 * empty one becomes "job").  The result is a DNS-1035 label.  A jobspec
 * read back from one of hpcbridge's manifests uses the original script's
 * file name (hpcbridge.io/source-name).  array_index < 0: not an array
 * element; nodes 0 counts as 1.  out: HB_DNS_LABEL_MAX + 1 bytes.
 */
int hb_k8s_name(const struct hb_jobspec *spec, int64_t array_index,
		uint32_t nodes, char out[HB_DNS_LABEL_MAX + 1]);

/*
 * The same, reserving reserve characters after "<name>[-<index>]" instead
 * of "-worker-<nodes-1>" (a TrainJob's longest pod host name is
 * "<name>-launcher-0-0" or "<name>-node-0-<N-1>").  HB_ERANGE when the
 * reserve leaves no room.
 */
int hb_k8s_name_reserve(const struct hb_jobspec *spec, int64_t array_index,
			size_t reserve, char out[HB_DNS_LABEL_MAX + 1]);

/*
 * Build the MPIJob for spec (array_index >= 0: that element of an array).
 * Records every field's fate in rep.  Caller frees *out with cJSON_Delete.
 */
int hb_mpijob_emit(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		   int64_t array_index, struct cJSON **out,
		   struct hb_report *rep, struct hb_err *err);

/*
 * The same MPIJob written as one document of w (doc.h: JSON, YAML or a
 * tree), ended with hb_emit_done().  hb_mpijob_emit() is this with a
 * tree writer.  On error nothing is left in w's output.
 */
struct hb_emit;
int hb_mpijob_write(const struct hb_jobspec *spec, const struct hb_k8s_opts *cfg,
		    int64_t array_index, struct hb_emit *w,
		    struct hb_report *rep, struct hb_err *err);

/* Read an MPIJob manifest (already parsed into doc) into spec.  Fields
 * hpcbridge wrote as annotations are recovered.  Errors name the field
 * path. */
int hb_mpijob_parse(const struct cJSON *doc, struct hb_jobspec *spec,
		    struct hb_err *err);

/*
 * Whether the job's files are on the filesystems the cluster mounts
 * (o->volumes).  The working directory (spec->chdir, resolved against
 * workdir when relative; else workdir) and the directories of --output,
 * --error and --input (relative ones resolved against the working
 * directory; Slurm's %j-style patterns may stand in the file name) must
 * each lie under a volume's path, compared component by component.  A
 * path with a ".." component is refused; /dev/null is every pod's.  A
 * relative path is not checked when there is no working directory
 * (workdir NULL and no absolute --chdir).  With no volumes configured
 * every path passes: the site then relies on its images.  HB_EINVAL
 * with a message naming the option and the path, e.g. "--output
 * /home/u/x.out is not on a volume the cluster mounts (mapped: /scratch,
 * /projects)".  hb_mpijob_emit() checks with workdir NULL.
 */
int hb_k8s_paths_check(const struct hb_k8s_opts *o,
		       const struct hb_jobspec *spec, const char *workdir,
		       struct hb_err *err);

/*
 * Whether the site lets spec's --container run: a value of the
 * container_images map, or a name that is no image reference, always;
 * an image reference only when kubernetes.allowed_images matches it (or
 * lists nothing).  HB_EINVAL naming the option and the image otherwise.
 * hb_mpijob_emit() and hb_trainjob_emit() check it too.
 */
int hb_k8s_container_check(const struct hb_k8s_opts *cfg,
			   const struct hb_jobspec *spec, struct hb_err *err);

/*
 * The ResourceClaimTemplate the worker pods of an MPIJob claim their RDMA
 * NIC from (kubernetes.rdma.mode dra): resource.k8s.io in the configured
 * version, named "<metadata.name>-rdma" in the MPIJob's namespace, with
 * cfg's DeviceClass, count, CEL selector and, as DraNet takes it, the
 * interface name in the driver's opaque configuration.  The worker pod
 * template's reference is pointed at that name, so call it once the
 * MPIJob's name is final (after a rename), and create the template
 * before the MPIJob.  *out NULL when the MPIJob claims no NIC.  Caller
 * frees *out with cJSON_Delete().
 */
int hb_k8s_claim_template(struct cJSON *mpijob, const struct hb_k8s_opts *cfg,
			  struct cJSON **out, struct hb_err *err);

/*
 * The ConfigMap that holds the launcher runtime (launcher.h), in
 * cfg->namespace, for MPIJobs whose launcher mounts it.  Creating it once
 * per namespace is enough; the name changes with the runtime.  Caller
 * frees *out with cJSON_Delete().
 */
int hb_k8s_runtime_configmap(const struct hb_k8s_opts *cfg, struct cJSON **out,
			     struct hb_err *err);

#endif
