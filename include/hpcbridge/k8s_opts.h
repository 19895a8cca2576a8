/*
 * k8s_opts.h - what the Kubernetes translators (MPIJob, TrainJob, the
 * launcher's ConfigMap) take from the site: the kubernetes: section of
 * hpcbridge.yaml, and the checkpoints: section's S3 location.
 *
 * gateway/config/ fills one from the file (struct hb_config's k8s member);
 * a program that only translates can fill one itself.  The strings and
 * tables are borrowed: the translators never free or change them.
 */
#ifndef HPCBRIDGE_K8S_OPTS_H
#define HPCBRIDGE_K8S_OPTS_H

#include <stdbool.h>
#include <stdint.h>

/* key -> value */
struct hb_kv {
	const char *key;
	const char *value;
};

/* key -> a set of label=value pairs (a nodeSelector) */
struct hb_selector_map {
	const char *key;
	struct hb_kv *labels;
	uint32_t nlabels;
};

/* Where the pods' fsGroup comes from (kubernetes.fs_group). */
enum hb_fs_group {
	HB_FS_GROUP_NONE = 0, /* no fsGroup: volumes keep their ownership */
	HB_FS_GROUP_PRIMARY,  /* the user's primary group */
	HB_FS_GROUP_GID	      /* fs_group_gid */
};

/* One site filesystem the pods mount at path: exactly one of pvc,
 * nfs_server (with nfs_path) and host_path is set. */
struct hb_k8s_volume {
	const char *path;	/* absolute mount path, as on the Slurm side */
	const char *pvc;	/* PersistentVolumeClaim name */
	const char *nfs_server; /* NFS server host */
	const char *nfs_path;	/* its export */
	const char *host_path;	/* a directory on every Kubernetes node */
	bool read_only;
};

struct hb_k8s_opts {
	const char *namespace;	     /* "default" */
	const char *default_image;   /* image when nothing else maps */
	struct hb_kv *module_images; /* module load name -> image */
	uint32_t nmodule_images;
	struct hb_kv *partition_images; /* partition -> image */
	uint32_t npartition_images;
	struct hb_kv *container_images; /* --container value -> image */
	uint32_t ncontainer_images;
	/* Image per MPI implementation, after container, module and
	 * partition, before default_image; NULL: none. */
	const char *openmpi_image, *intel_image, *mpich_image;
	struct hb_kv *partition_queues; /* partition -> Kueue LocalQueue */
	uint32_t npartition_queues;
	const char *default_queue;	 /* NULL: no queue label */
	const char *default_mpi;	 /* "OpenMPI" | "Intel" | "MPICH" */
	const char *trainjob_runtime;	 /* ClusterTrainingRuntime name */
	const char *ssh_auth_mount_path; /* MPIJob sshAuthMountPath */
	const char *gpu_resource;	 /* "nvidia.com/gpu" */
	/* GPU type (--gpus TYPE:N) -> extended resource ("mi300x" ->
	 * "amd.com/gpu"); when set, the cluster's only GPU types. */
	struct hb_kv *gpu_resources;
	uint32_t ngpu_resources;

	/* Worker pod shape: what one Kubernetes worker node offers. */
	uint32_t worker_cpus;	/* 0: unbounded */
	uint64_t worker_mem_mb; /* 0: unbounded */
	uint32_t worker_gpus;	/* 0: unbounded */

	/* Launcher pod resources. */
	uint32_t launcher_cpus;	  /* 1 */
	uint64_t launcher_mem_mb; /* 1024 */
	/* Where an MPIJob launcher finds its runtime: "configmap" (mounted
	 * from the ConfigMap hb_launcher_runtime_name()) or "inline" (carried
	 * in every manifest). */
	const char *launcher_runtime;

	struct hb_selector_map *constraint_selectors;
	uint32_t nconstraint_selectors;
	struct hb_selector_map *gpu_type_selectors;
	uint32_t ngpu_type_selectors;

	uint32_t max_array_jobs; /* cap on MPIJobs from one array */

	/* Running as the user under Pod Security "restricted". */
	uint32_t ssh_port;   /* the workers' sshd; 0: 2222 */
	uint8_t fs_group;    /* enum hb_fs_group */
	uint32_t fs_group_gid; /* with HB_FS_GROUP_GID */
	struct hb_k8s_volume *volumes; /* the site filesystems */
	uint32_t nvolumes;
	/* fnmatch() patterns a user-chosen image must match; none: any. */
	const char **allowed_images;
	uint32_t nallowed_images;

	/* Kueue and gang scheduling. */
	struct hb_kv *priority_classes; /* QoS -> WorkloadPriorityClass */
	uint32_t npriority_classes;
	const char *default_priority_class; /* NULL: none */
	struct hb_kv *pod_priority_classes; /* QoS -> PriorityClass */
	uint32_t npod_priority_classes;
	bool gang_scheduling; /* spec.runPolicy.schedulingPolicy */

	/* OpenShift.  scc: the SecurityContextConstraints the pods ask for
	 * (annotation openshift.io/required-scc); NULL: admission picks.
	 * uid_range: the uids the namespace admits, as its annotation
	 * openshift.io/sa.scc.uid-range says them ("START/SIZE", or
	 * "START-END", comma-separated); NULL: any uid but root. */
	const char *openshift_scc;
	const char *uid_range;

	/* The Pod Security level of the jobs' namespace: "restricted"
	 * (NULL), "baseline" or "privileged".  The pods are written for
	 * restricted; RDMA's IPC_LOCK needs privileged. */
	const char *pod_security;

	/* RDMA for jobs whose fabric is RDMA (kubernetes.rdma).  mode:
	 * "none" (NULL: the cluster has none; the translation warns),
	 * "device_plugin" (rdma_resource) or "dra" (a
	 * ResourceClaimTemplate per job). */
	const char *rdma_mode;
	const char *rdma_resource; /* device plugin: "rdma/hca_shared_a" */
	uint32_t rdma_count;	   /* devices per worker; 0: 1 */
	/* DRA: the DeviceClass, the resource.k8s.io version written, the
	 * driver whose opaque config names the interface, the name the
	 * NIC gets inside the pod (NULL: the driver's), and a CEL
	 * selector (NULL: none). */
	const char *rdma_dra_class, *rdma_dra_api, *rdma_dra_driver;
	const char *rdma_dra_ifname, *rdma_dra_selector;

	/* Checkpoints (the checkpoints: section).  ckpt_url: where jobs'
	 * checkpoints are kept, "s3://BUCKET[/PREFIX]"; NULL: nowhere, and
	 * nothing of the rest is written.  ckpt_endpoint, ckpt_region: the
	 * S3 endpoint URL and region the pods use (NULL: the client's
	 * default).  ckpt_secret: the Secret holding AWS_ACCESS_KEY_ID and
	 * AWS_SECRET_ACCESS_KEY (NULL: the pods have credentials another
	 * way).  ckpt_image: the image of the init container that pulls a
	 * checkpoint (NULL: the job's).  ckpt_default_dir: the checkpoint
	 * directory of a job that names none (NULL: none). */
	const char *ckpt_url, *ckpt_endpoint, *ckpt_region, *ckpt_secret;
	const char *ckpt_image, *ckpt_default_dir;
	/* The daemon's retention after a pull: the newest N kept (0: all). */
	uint32_t ckpt_keep;
	/* Seconds between pushes from the launcher, and pulls by the daemon,
	 * while a job runs (HPCBRIDGE_CKPT_EVERY); 0: at its ends only. */
	uint32_t ckpt_interval;
	/* Seconds between the daemon's measurements of what each checkpoint
	 * location holds, for its storage charge; 0: only after pushes and
	 * pulls. */
	uint32_t ckpt_bill_interval;
};

/* The longest job key hb_k8s_ckpt_key() writes, with its NUL. */
#define HB_K8S_CKPT_KEY_MAX 96

/*
 * The S3 key under ckpt_url where the checkpoints of a job whose
 * checkpoint directory is dir (absolute) and whose user is uid live:
 * "UID/NAME-HASH", NAME the directory's last component (its letters,
 * digits, '-', '_' and '.', at most 40) and HASH 16 hex digits of the
 * 64-bit FNV-1a of the directory written plainly (no "." components, no
 * "//", no trailing '/').  The same directory of the same user gives the
 * same key on either side, whatever job takes it up.  HB_EINVAL for a
 * relative path or one with a ".." component, a negative uid.
 */
int hb_k8s_ckpt_key(int64_t uid, const char *dir,
		    char out[HB_K8S_CKPT_KEY_MAX]);

/* The longest checkpoint directory, with its NUL. */
#define HB_K8S_CKPT_DIR_MAX 4096

struct hb_jobspec;

/*
 * The checkpoint directory of job s, as its pods and the gateway both
 * take it: its --hpcbridge-checkpoint, else cfg->ckpt_default_dir; a
 * relative one under an absolute --chdir; written plainly into out.
 * 0; 1 when it has none; 2 when it is relative and the job has no
 * absolute --chdir; HB_EINVAL when it has a ".." or is too long (out
 * then holds it as given, for the message); HB_ERANGE when it is "/".
 */
int hb_k8s_ckpt_dir(const struct hb_k8s_opts *cfg, const struct hb_jobspec *s,
		    char out[HB_K8S_CKPT_DIR_MAX]);

/* Whether id lies in an OpenShift uid range text (see uid_range): 1 or
 * 0; -1 when the text is not one. */
int hb_k8s_uid_in_range(const char *range, int64_t id);

/* Look key up in a map; NULL if absent. */
const char *hb_kv_get(const struct hb_kv *kv, uint32_t n, const char *key);
const struct hb_selector_map *hb_selector_get(const struct hb_selector_map *m,
					      uint32_t n, const char *key);

#endif
