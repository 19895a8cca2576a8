/*
 * config.h - the site configuration (config/hpcbridge.yaml).
 *
 * Every setting has a name, a type, a default and bounds in one table
 * (config.c).  A file is validated in full before it is used: an unknown
 * key, a wrong type or a value out of bounds is an error that names the
 * key and its line.  A missing file section takes the embedded defaults.
 */
#ifndef HPCBRIDGE_CONFIG_H
#define HPCBRIDGE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hpcbridge/error.h"
#include "hpcbridge/k8s_opts.h"

/* key -> a list of strings (origin.namespaces: namespace -> users) */
struct hb_list_map {
	const char *key;
	const char **values;
	uint32_t nvalues;
};

struct hb_config {
	/* kubernetes: what the translators take (k8s_opts.h) */
	struct hb_k8s_opts k8s;

	/* Daemon (hpcbridged) */
	const char *daemon_socket;   /* API socket path */
	const char *daemon_user;     /* who may serve it, besides root */
	const char *daemon_state;    /* SQLite state file */
	const char **daemon_admins;  /* users who may see/cancel every job */
	uint32_t ndaemon_admins;
	uint32_t daemon_max_request; /* bytes of one request payload */
	uint32_t daemon_workers;     /* threads for blocking remote calls */
	uint32_t daemon_checkpoint_pages; /* WAL pages between checkpoints */
	const char *daemon_log_level; /* "debug" | "info" | "warn" | "error" */

	/* Metrics: IP:PORT of /metrics and /healthz; NULL: none */
	const char *metrics_listen;
	bool metrics_allow_remote; /* a non-loopback metrics_listen is fine */

	/* Slurm */
	const char *slurm_user;	     /* SlurmUser: may act for any user */
	const char *burst_partition; /* partition proxy jobs run in */
	uint32_t proxy_mem_mb;	     /* memory of a proxy job */
	uint32_t proxy_grace_min;    /* added to a proxy's time limit */
	const char *shadow_command;  /* hpcbridge binary proxies run */

	/* Remote side of burst jobs */
	const char *remote_backend;   /* "kubernetes" | "local" */
	const char *remote_local_dir; /* the local backend's directory */
	const char *remote_kubeconfig; /* NULL: $KUBECONFIG or ~/.kube/config;
					  "in-cluster" */
	const char *remote_context;    /* NULL: current-context */
	/* kubernetes.preempted_replace_after: seconds a preempted burst job
	 * waits before it is placed on Slurm instead; 0: never */
	uint32_t remote_preempted_replace_s;

	/* job_submit plugin */
	uint32_t plugin_timeout_ms; /* the most a submission waits */
	const char *plugin_decide;  /* "snapshot" | "daemon" */
	const char *plugin_snapshot;	  /* the published snapshot; NULL:
					   * hb_config_plugin_path() */
	const char *plugin_notice_socket; /* the plugin's notices; NULL:
					   * likewise */
	uint32_t plugin_snapshot_max_age_s;
	uint32_t plugin_lease;	   /* gateway ids per lease */
	uint32_t plugin_allowance; /* whole currency units per account */

	/* Placement */
	const char *placement_policy;	  /* policy file, or NULL */
	uint32_t placement_refresh_s;	  /* Slurm estimates, seconds */
	uint32_t placement_data_refresh_s; /* data sizes, seconds; 0: never */
	const char *default_target;	  /* "slurm" | "kubernetes" */
	struct hb_kv *placement_partitions; /* partition -> target */
	uint32_t nplacement_partitions;

	/* hpcbridge qsub: PBS queue -> Slurm partition (none: the queue
	 * name is the partition), and the server name job ids end with
	 * (NULL: this host's short name) */
	struct hb_kv *pbs_queues;
	uint32_t npbs_queues;
	const char *pbs_server_name;
	const char *pbs_submit; /* "daemon" | "sbatch" */

	/* Chargeback: the rate card finished jobs are priced with, or NULL
	 * (no metering) */
	const char *chargeback_ratecard;

	/* Kubernetes-origin MPIJobs (managedBy: hpcbridge.io/gateway) */
	/* namespace -> the users its MPIJobs may run as; "*": any user whose
	 * uid is at least origin_min_uid.  Empty: every MPIJob is refused. */
	struct hb_list_map *origin_namespaces;
	uint32_t norigin_namespaces;
	uint32_t origin_min_uid; /* 1000: lower uids are never run */

	void *priv; /* owned storage */
};

/* Fill cfg with the embedded defaults.  Caller frees with
 * hb_config_free(). */
int hb_config_defaults(struct hb_config *cfg);

/*
 * Parse and validate a YAML config of len bytes named name.  Every key of
 * the file is checked (unknown keys, types, bounds, enum values, names);
 * the first error is reported as "NAME:LINE: key.path: message", followed
 * by "(and N more errors)" when there are others.  Keys the file does not
 * set take their defaults; an empty file gives the defaults.  cfg is
 * overwritten, not freed: free an earlier configuration first (or parse
 * into a fresh struct and swap).  On error cfg is left zeroed (nothing
 * half-loaded; hb_config_free() on it is a no-op).  Caller frees with
 * hb_config_free().
 */
int hb_config_parse(const char *buf, size_t len, const char *name,
		    struct hb_config *cfg, struct hb_err *err);

/* Free what cfg owns and zero it.  NULL and zeroed structs are fine. */
void hb_config_free(struct hb_config *cfg);

/*
 * A reload (SIGHUP) may only change reloadable settings.  0 if next can
 * replace cur; HB_ECONFLICT naming the first setting that differs and
 * needs a restart otherwise.
 */
int hb_config_check_reload(const struct hb_config *cur,
			   const struct hb_config *next, struct hb_err *err);

/* The settings table, for documentation and --help. */
enum hb_config_type {
	HB_CFG_STRING,	 /* a string (some nullable) */
	HB_CFG_UINT,	 /* a non-negative integer */
	HB_CFG_SIZE,	 /* MiB: an integer (MiB), a Kubernetes quantity
			  * ("512Mi", "4Gi") or a Slurm size ("4G") */
	HB_CFG_ENUM,	 /* one of a fixed set of strings */
	HB_CFG_MAP,	 /* a mapping of strings to strings */
	HB_CFG_SELECTORS, /* a mapping of names to label mappings */
	HB_CFG_LIST,	  /* a sequence of distinct strings */
	HB_CFG_LIST_MAP,  /* a mapping of names to lists of strings */
	HB_CFG_BOOL,	  /* true or false */
	HB_CFG_FS_GROUP,  /* none, primary or a group id */
	HB_CFG_VOLUMES	  /* a list of volumes: path and its source */
};

struct hb_config_key {
	const char *path; /* "kubernetes.worker.cpus" */
	enum hb_config_type type;
	const char *def;	   /* default as YAML text; NULL: null/{} */
	uint64_t min, max;	   /* HB_CFG_UINT and HB_CFG_SIZE */
	const char *const *values; /* HB_CFG_ENUM, NULL-terminated */
	int reloadable;
	const char *help; /* what it means, one sentence */
};

/* The i-th setting (0-based) in *out; HB_ENOENT past the last one. */
int hb_config_key(size_t i, struct hb_config_key *out);

/* Is s one of the n strings of list?  NULL list or s: no. */
int hb_list_has(const char *const *list, uint32_t n, const char *s);

/*
 * metrics.listen's "IP:PORT" (an IPv4 address, or an IPv6 one in
 * brackets) as a socket address (ss, len may be NULL: only checked);
 * *loopback (may be NULL) 1 for 127.0.0.0/8 and ::1.  0 or HB_EINVAL.
 */
int hb_config_listen_addr(const char *s, struct sockaddr_storage *ss,
			  socklen_t *len, int *loopback);

/* Look key up in a map; NULL if absent (hb_kv_get and hb_selector_get
 * are in k8s_opts.h). */
const struct hb_list_map *hb_list_map_get(const struct hb_list_map *m,
					  uint32_t n, const char *key);

/*
 * plugin.snapshot or plugin.notice_socket as in force: the key's value,
 * or, when it is null, placement.snap or hpcbridged.notice in the
 * directory of daemon.socket (so a daemon started with --socket keeps
 * them beside it).  0, or HB_ETOOBIG when it does not fit in size.
 */
enum hb_plugin_path { HB_PLUGIN_SNAPSHOT, HB_PLUGIN_NOTICE };
int hb_config_plugin_path(const struct hb_config *cfg, enum hb_plugin_path which,
			  char *buf, size_t size);

#endif
