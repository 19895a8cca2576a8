/*
 * fabric.h - what a node has for a multi-node job's network (RDMA
 * devices and ports, GPUs, NCCL, the MPI libraries), what each side
 * (Slurm, Kubernetes) advertises of it, and the checks `hpcbridge
 * doctor` reports.
 *
 * The inventory is read through a provider: the real one asks
 * libibverbs, sysfs, /proc, dlopen("libnccl.so.2") and ompi_info; the
 * fake one hands back a node a test describes.  Everything else here is
 * a pure function over data the caller fetched: the sides' objects come
 * in as JSON (Kubernetes Nodes, DRA DeviceClasses and ResourceSlices,
 * `scontrol --json show nodes` or `sinfo --json`), so this part knows
 * no client.
 *
 * Each check appends findings: a level, a stable code ("rdma.no_device"),
 * a message in plain words and a hint saying what to do.
 *
 * Memory: findings, nodes and sides own what they hold; free them with
 * their _free functions (NULL and zeroed structs are fine).  cJSON
 * objects passed in are borrowed.
 */
#ifndef HPCBRIDGE_FABRIC_H
#define HPCBRIDGE_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/jobspec.h"

/* --- findings -------------------------------------------------------- */

enum hb_fab_level { HB_FAB_OK = 0, HB_FAB_WARN, HB_FAB_FAIL };

/* "ok", "warn" or "fail". */
const char *hb_fab_level_name(enum hb_fab_level l);

struct hb_fab_finding {
	enum hb_fab_level level;
	char *code; /* stable: "rdma.no_device" */
	char *msg;  /* what is so */
	char *hint; /* what to do ("" when nothing) */
};

struct hb_fab_findings {
	struct hb_fab_finding *v;
	size_t n, cap;
	bool oom; /* a finding was lost for want of memory */
};

/* Append a finding; hint may be NULL.  On ENOMEM the finding is dropped
 * and f->oom set (a report that lost a line says so). */
void hb_fab_add(struct hb_fab_findings *f, enum hb_fab_level level,
		const char *code, const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* The worst level of all findings (HB_FAB_OK when there are none). */
enum hb_fab_level hb_fab_worst(const struct hb_fab_findings *f);
/* The first finding with this code, or NULL. */
const struct hb_fab_finding *hb_fab_find(const struct hb_fab_findings *f,
					 const char *code);
/* [{level, code, message, hint}, ...]; NULL when out of memory. */
cJSON *hb_fab_findings_json(const struct hb_fab_findings *f);
void hb_fab_findings_free(struct hb_fab_findings *f);

/* --- the node's inventory --------------------------------------------- */

#define HB_FAB_NAME_MAX	 64
#define HB_FAB_MAX_PORTS 8
#define HB_FAB_MAX_GIDS	 16

/* A port's link layer: InfiniBand, or Ethernet (RoCE on an RDMA port). */
enum hb_fab_link { HB_FAB_LINK_UNKNOWN = 0, HB_FAB_LINK_IB, HB_FAB_LINK_ETH };
/* As libibverbs' enum ibv_port_state. */
enum hb_fab_port_state {
	HB_FAB_PORT_NOP = 0,
	HB_FAB_PORT_DOWN,
	HB_FAB_PORT_INIT,
	HB_FAB_PORT_ARMED,
	HB_FAB_PORT_ACTIVE,
	HB_FAB_PORT_ACTIVE_DEFER
};
/* A GID's type (sysfs gid_attrs/types): IB, RoCE v1, RoCE v2. */
enum hb_fab_gid_type {
	HB_FAB_GID_UNKNOWN = 0,
	HB_FAB_GID_IB,
	HB_FAB_GID_ROCE_V1,
	HB_FAB_GID_ROCE_V2
};

const char *hb_fab_link_name(enum hb_fab_link l);	  /* "InfiniBand" */
const char *hb_fab_port_state_name(enum hb_fab_port_state s); /* "ACTIVE" */
const char *hb_fab_gid_type_name(enum hb_fab_gid_type t); /* "RoCE v2" */

struct hb_fab_gid {
	uint16_t index;
	uint8_t type; /* enum hb_fab_gid_type */
	char text[40]; /* "fe80:0000:0000:0000:0002:c903:00a1:b2c3" */
};

struct hb_fab_port {
	uint8_t num;   /* from 1 */
	uint8_t state; /* enum hb_fab_port_state */
	uint8_t link;  /* enum hb_fab_link */
	uint8_t width; /* lanes: 1, 2, 4, 8 or 12 (0: unknown) */
	double gbps;   /* the active rate: lane speed times width */
	uint32_t ngids;
	struct hb_fab_gid gids[HB_FAB_MAX_GIDS];
};

struct hb_fab_rdma_dev {
	char name[HB_FAB_NAME_MAX]; /* "mlx5_0" */
	char guid[20];		    /* node GUID, "0002:c903:00a1:b2c0" */
	uint32_t nports;
	struct hb_fab_port ports[HB_FAB_MAX_PORTS];
};

struct hb_fab_gpu {
	char pci[16];	/* "0000:3b:00.0" */
	uint16_t vendor; /* 0x10de NVIDIA, 0x1002 AMD */
	uint16_t device;
	uint32_t pci_class; /* 0x030000, 0x030200 or 0x038000 */
};

struct hb_fab_mpi {
	char ompi_version[32]; /* Open MPI's, "" when not installed */
	int8_t ompi_cuda;      /* built with CUDA: 1, 0, -1 unknown */
	bool ompi_ucx;	       /* the pml/ucx component is there */
	bool ompi_openib;      /* the btl/openib component is there */
	char other[96]; /* another MPI's first line: "MPICH Version: 4.0.2",
			   "Intel(R) MPI Library ...", "" none */
};

struct hb_fab_node {
	struct hb_fab_rdma_dev *devs;
	size_t ndevs;
	char rdma_note[160]; /* why no device could be listed, "" if none */
	struct hb_fab_gpu *gpus;
	size_t ngpus;
	char nvidia_driver[128]; /* /proc/driver/nvidia/version's first line,
				    "" when the driver is not loaded */
	bool peermem;		 /* nvidia_peermem or nv_peer_mem loaded */
	int nccl_version;	 /* 22703 for 2.27.3; 0: not present */
	char nccl_note[160];	 /* why not, "" when present */
	struct hb_fab_mpi mpi;
};

/* Release what the node holds; it may be reused zeroed. */
void hb_fab_node_free(struct hb_fab_node *n);
/* The inventory as JSON (the doctor's "node" object); NULL on ENOMEM. */
cJSON *hb_fab_node_json(const struct hb_fab_node *n);
/* "2.27.3" for 22703 (and 2.8.4 for 2804) into buf. */
void hb_fab_nccl_version_text(int v, char *buf, size_t size);
/* NCCL's version code as ncclGetVersion() gives it, into one of the
 * form above: from 2.9 on major*10000+minor*100+patch, before it
 * major*1000+minor*100+patch. */
int hb_fab_nccl_decode(int code, int *major, int *minor, int *patch);

/* A provider: each function fills its part of the node and returns 0, or
 * a negative HB_E* with err saying why (the others still run). */
struct hb_fab_provider {
	const char *name; /* "real", "fake" */
	int (*rdma)(void *ctx, struct hb_fab_node *n, struct hb_err *err);
	int (*gpus)(void *ctx, struct hb_fab_node *n, struct hb_err *err);
	int (*nccl)(void *ctx, struct hb_fab_node *n, struct hb_err *err);
	int (*mpi)(void *ctx, struct hb_fab_node *n, struct hb_err *err);
	void *ctx;
};

/* Where the real provider looks; NULL members take the defaults. */
struct hb_fab_real_opts {
	const char *sysfs;    /* "/sys" */
	const char *procfs;   /* "/proc" */
	const char *nccl_lib; /* "libnccl.so.2" */
	const char *ompi_info; /* "ompi_info", found through $PATH */
	int timeout_ms;	      /* each child program (0: 10000) */
};

/* The real provider; opts (may be NULL) is borrowed while it is used. */
void hb_fab_real_provider(const struct hb_fab_real_opts *opts,
			  struct hb_fab_provider *out);
/* A provider that hands back a copy of canned (borrowed while used). */
void hb_fab_fake_provider(const struct hb_fab_node *canned,
			  struct hb_fab_provider *out);

/* Fill n (zeroed by the caller) through p.  Every part is tried; a part
 * that fails leaves its note in the node and its error in err.  0, or
 * the first part's error (the node is still usable). */
int hb_fab_inventory(const struct hb_fab_provider *p, struct hb_fab_node *n,
		     struct hb_err *err);

/* The real provider's pieces, for tests and the doctor. */
int hb_fab_scan_gpus(const char *sysfs, const char *procfs,
		     struct hb_fab_node *n, struct hb_err *err);
/* Open MPI's facts from `ompi_info --parsable` text (all: the --all
 * text, for mpi_built_with_cuda_support; may be NULL). */
void hb_fab_parse_ompi_info(const char *text, const char *all,
			    struct hb_fab_mpi *out);

/*
 * Run argv (argv[0] found through $PATH, no shell) with stdin from
 * /dev/null and stderr dropped; its stdout (at most max bytes, the rest
 * read and dropped) appended to out.  *status: the exit status, or 128+N
 * when killed by signal N.  HB_ENOENT when the program is not found,
 * HB_ETIMEDOUT (the child killed) after timeout_ms.
 */
int hb_fab_run(const char *const argv[], int timeout_ms, size_t max,
	       struct hb_buf *out, int *status, struct hb_err *err);

/* --- checks over the node ----------------------------------------------- */

/* Variables that turn the fabric off or steer it; lookup gives the value
 * of a name (NULL: unset). */
typedef const char *(*hb_fab_env_fn)(void *ctx, const char *name);

/* RDMA, GPUs, GPUDirect, NCCL, MPI, and the summary
 * "fabric.tcp_fallback" (or "fabric.rdma") with every reason. */
void hb_fab_check_node(const struct hb_fab_node *n, hb_fab_env_fn env,
		       void *env_ctx, struct hb_fab_findings *f);

/* The MPI family a text names (an image, "mpichversion" output, the
 * jobspec's MPI name): "OpenMPI", "MVAPICH2", "Intel", "MPICH" or NULL. */
const char *hb_fab_mpi_family(const char *text);

/* A job script's needs against the node (name: the script's path). */
void hb_fab_check_job(const struct hb_jobspec *spec, const char *name,
		      const struct hb_fab_node *n, struct hb_fab_findings *f);

/* --- what the sides advertise ------------------------------------------ */

struct hb_fab_side_node {
	char name[HB_FAB_NAME_MAX];
	uint32_t gpus;	     /* GPUs allocatable or in gres */
	uint32_t rdma;	     /* RDMA resources (count) */
	char rdma_what[128]; /* which: "rdma/hca_shared_devices_a=1000",
				"feature ib" */
	bool rdma_label;     /* labelled RDMA-capable (NFD) */
};

struct hb_fab_side {
	const char *side; /* "kubernetes", "slurm" (static) */
	struct hb_fab_side_node *v;
	size_t n, cap;
	size_t nodes_rdma, nodes_gpu, nodes_rdma_label, gpus;
	/* DRA (Kubernetes): devices in ResourceSlices by kind, and the
	 * DeviceClasses' names, comma-separated */
	bool dra_served;
	size_t dra_rdma, dra_gpu, dra_other;
	char dra_drivers[160];
	char dra_classes[256];
};
void hb_fab_side_free(struct hb_fab_side *s);

/* Kubernetes Nodes (an array of v1 Node objects) into s: allocatable
 * nvidia.com/gpu, amd.com/gpu, rdma/... (or a resource whose name after
 * the slash holds "rdma") and the
 * feature.node.kubernetes.io/rdma.* labels. */
int hb_fab_kube_nodes(const cJSON *items, struct hb_fab_side *s,
		      struct hb_err *err);
/* DRA: DeviceClasses and ResourceSlices (arrays; either may be NULL when
 * resource.k8s.io is not served) into s.  A device counts as RDMA when
 * an attribute named .../rdma is true (DraNet's dra.net/rdma), as a GPU
 * when its driver is a GPU driver (gpu.nvidia.com, gpu.amd.com). */
int hb_fab_kube_dra(const cJSON *classes, const cJSON *slices,
		    struct hb_fab_side *s, struct hb_err *err);
/* Slurm: `scontrol --json show nodes`, or Slurm 22.05's `sinfo --json`
 * (both {"nodes": [...]}) into s.  A node
 * offers RDMA when one of its features (active or configured) is in
 * rdma_features (comma-separated; NULL: "ib,infiniband,rdma,roce") or
 * its gres names rdma or hca. */
int hb_fab_slurm_nodes(const cJSON *doc, const char *rdma_features,
		       struct hb_fab_side *s, struct hb_err *err);
/* Findings on a side, their codes prefixed "slurm." or "k8s.": "rdma"
 * (ok) or "no_rdma" (warn), "gpu" or "no_gpu" (ok), and for Kubernetes
 * "rdma_unallocatable" and DRA's ("dra", "dra.unserved",
 * "dra.no_class"). */
void hb_fab_check_side(const struct hb_fab_side *s,
		       struct hb_fab_findings *f);

/*
 * The site's configured way to RDMA on Kubernetes (kubernetes.rdma.mode,
 * .resource, .dra.device_class) against what the cluster offers (s, read
 * by hb_fab_kube_nodes() and hb_fab_kube_dra()): "k8s.rdma_config.ok";
 * "k8s.rdma_config.resource_missing" (fail) when mode is device_plugin
 * and no node has the resource; "k8s.rdma_config.class_missing" (fail)
 * when mode is dra and the DeviceClass does not exist (or DRA is not
 * served); "k8s.rdma_config.none" (warn) when the mode is none (or NULL)
 * and the cluster offers RDMA.
 */
void hb_fab_check_kube_rdma_config(const struct hb_fab_side *s,
				   const char *mode, const char *resource,
				   const char *dra_class,
				   struct hb_fab_findings *f);

/* A job's needs against a side: "job.side.no_rdma" (fail) when it needs
 * RDMA and the side offers none, "job.side.no_gpu" (warn) for GPUs. */
void hb_fab_check_job_side(const struct hb_jobspec *spec, const char *name,
			   const struct hb_fab_side *s,
			   struct hb_fab_findings *f);

/* The MPI Operator's common failures an MPIJob shows or invites:
 * hostNetwork workers that can land two on a node (port clash), an SSH
 * mount path that does not match the launcher's user, and a failed job
 * whose conditions name SSH or hostnames. */
void hb_fab_check_mpijob(const cJSON *mpijob, struct hb_fab_findings *f);

#endif
