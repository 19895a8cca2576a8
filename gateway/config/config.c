/*
 * config.c - the site configuration: one table of settings, loaded from
 * YAML and validated in full.
 *
 * Each row of the table names a setting by its dotted YAML path and says
 * its type, where it lives in struct hb_config, its default (written as it
 * would be in the file, and validated like it), its bounds, how its value
 * is checked and whether a reload may change it.  Sections ("kubernetes",
 * "kubernetes.worker") are implied by the paths.  Adding a setting is
 * adding a field to struct hb_config and a row here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/units.h"

/* How a string (or a map key or value) is checked. */
enum check {
	C_ANY,		 /* non-empty, no whitespace or control characters */
	C_DNS_LABEL,	 /* RFC 1123 label: a namespace */
	C_DNS_SUBDOMAIN, /* RFC 1123 subdomain: an object name */
	C_QUEUE,      /* a Kueue LocalQueue name: subdomain and label value */
	C_IMAGE,      /* a container image reference */
	C_ABSPATH,    /* an absolute path */
	C_RESOURCE,   /* an extended resource name: domain/name */
	C_LABEL_KEY,  /* a Kubernetes label key */
	C_LABEL_VALUE, /* a Kubernetes label value (may be empty) */
	C_USER,	       /* a POSIX user name */
	C_SOCKET,      /* an absolute path that fits a UNIX socket address */
	C_TARGET,      /* where a job runs: slurm | kubernetes */
	C_GRANTEE,     /* a user name, or "*" (any user at the uid floor) */
	C_UID_RANGE,   /* OpenShift's uid range: START/SIZE or START-END, ... */
	C_CLASS,       /* a priority class: a subdomain usable as a label
			* value */
	C_S3_URL,      /* s3://BUCKET[/PREFIX] */
	C_HTTP_URL,    /* http:// or https:// and a host */
	C_PLAIN_PATH,  /* an absolute path written plainly, not / */
	C_IFNAME,      /* a Linux network interface name */
	C_CEL,	       /* a CEL expression: printable text, spaces too */
	C_LISTEN       /* HOST:PORT, an IP address: 127.0.0.1:9464, [::1]:9464 */
};

struct setting {
	const char *path;
	enum hb_config_type type;
	size_t off;	  /* the field in struct hb_config */
	size_t count_off; /* HB_CFG_MAP/SELECTORS/LIST: its uint32_t count */
	const char *def;  /* default, as YAML would say it */
	uint64_t min, max;
	const char *const *values;
	enum check check;     /* strings; map values */
	enum check key_check; /* map keys */
	int nullable;	      /* a string that may be null */
	int reloadable;
	const char *help;
};

#define F(field) offsetof(struct hb_config, field)
#define MIB_MAX	 (64ull * 1024 * 1024) /* 64 TiB */

static const char *const mpi_values[] = {"OpenMPI", "Intel", "MPICH", NULL};
static const char *const runtime_values[] = {"configmap", "inline", NULL};
static const char *const backend_values[] = {"local", "kubernetes", NULL};
static const char *const plugin_decide_values[] = { "snapshot", "daemon",
						     NULL };
static const char *const level_values[] = {"debug", "info", "warn", "error",
					   NULL};
static const char *const target_values[] = {"slurm", "kubernetes", NULL};
static const char *const pbs_submit_values[] = {"daemon", "sbatch", NULL};
static const char *const pss_values[] = {"restricted", "baseline",
					 "privileged", NULL};
static const char *const rdma_values[] = {"none", "device_plugin", "dra",
					  NULL};
static const char *const dra_api_values[] = {
    "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1",
    NULL};

/*
 * The settings.  Unset fields are 0: min 0, max 0 (only UINT/SIZE use
 * them), check C_ANY, not nullable, not reloadable; each row says
 * .reloadable explicitly.
 */
static const struct setting table[] = {
#include "config_k8s.h"
    {.path = "checkpoints.url",
     .type = HB_CFG_STRING,
     .off = F(k8s.ckpt_url),
     .def = NULL,
     .check = C_S3_URL,
     .nullable = 1,
     .reloadable = 1,
     .help = "Where jobs' checkpoints are kept, s3://BUCKET[/PREFIX]: a "
	     "burst job with a checkpoint directory gets "
	     "HPCBRIDGE_CKPT_URL and an init container that pulls its "
	     "newest checkpoint; null: checkpoints stay where they are."},
    {.path = "checkpoints.endpoint",
     .type = HB_CFG_STRING,
     .off = F(k8s.ckpt_endpoint),
     .def = NULL,
     .check = C_HTTP_URL,
     .nullable = 1,
     .reloadable = 1,
     .help = "The S3 endpoint the pods use (AWS_ENDPOINT_URL), "
	     "http(s)://HOST[:PORT]; null: AWS's."},
    {.path = "checkpoints.region",
     .type = HB_CFG_STRING,
     .off = F(k8s.ckpt_region),
     .def = NULL,
     .nullable = 1,
     .reloadable = 1,
     .help = "The S3 region the pods sign for (AWS_DEFAULT_REGION); "
	     "null: the client's default."},
    {.path = "checkpoints.secret",
     .type = HB_CFG_STRING,
     .off = F(k8s.ckpt_secret),
     .def = NULL,
     .check = C_DNS_SUBDOMAIN,
     .nullable = 1,
     .reloadable = 1,
     .help = "The Secret, in the jobs' namespace, whose keys "
	     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY the init "
	     "container's environment refers to; null: none."},
    {.path = "checkpoints.image",
     .type = HB_CFG_STRING,
     .off = F(k8s.ckpt_image),
     .def = NULL,
     .check = C_IMAGE,
     .nullable = 1,
     .reloadable = 1,
     .help = "Image of the init container that runs hpcbridge ckpt pull; "
	     "null: the job's image."},
    {.path = "checkpoints.default_dir",
     .type = HB_CFG_STRING,
     .off = F(k8s.ckpt_default_dir),
     .def = NULL,
     .check = C_PLAIN_PATH,
     .nullable = 1,
     .reloadable = 1,
     .help = "Checkpoint directory of a job that names none "
	     "(--hpcbridge-checkpoint); null: such a job has none."},
    {.path = "checkpoints.keep",
     .type = HB_CFG_UINT,
     .off = F(k8s.ckpt_keep),
     .def = "0",
     .min = 0,
     .max = 100000,
     .reloadable = 1,
     .help = "After a burst job's checkpoint came back, keep the newest "
	     "N complete checkpoints at its location, deleting older ones "
	     "and the objects no kept one names; 0: keep all."},
    {.path = "checkpoints.interval",
     .type = HB_CFG_UINT,
     .off = F(k8s.ckpt_interval),
     .def = "300",
     .min = 0,
     .max = 86400,
     .reloadable = 1,
     .help = "Seconds between the checkpoint's trips while a burst job "
	     "runs: its launcher pushes it to S3, the daemon pulls the "
	     "newest back into its directory; 0: only when it starts and "
	     "ends."},
    {.path = "checkpoints.bill_interval",
     .type = HB_CFG_UINT,
     .off = F(k8s.ckpt_bill_interval),
     .def = "3600",
     .min = 0,
     .max = 86400,
     .reloadable = 1,
     .help = "Seconds between the daemon's measurements of the bytes S3 "
	     "holds at each checkpoint location it charges storage for; "
	     "each charges the time since the last one (with a rate card); "
	     "0: only after pushes and pulls."},
    {.path = "translation.max_array_jobs",
     .type = HB_CFG_UINT,
     .off = F(k8s.max_array_jobs),
     .def = "1000",
     .min = 1,
     .max = 100000,
     .reloadable = 1,
     .help = "Most MPIJobs one job array may become."},
    {.path = "daemon.socket",
     .type = HB_CFG_STRING,
     .off = F(daemon_socket),
     .def = "/run/hpcbridge/hpcbridged.sock",
     .check = C_SOCKET,
     .reloadable = 0,
     .help = "UNIX socket the daemon serves its API on (hpcbridged "
	     "--socket overrides it)."},
    {.path = "daemon.user",
     .type = HB_CFG_STRING,
     .off = F(daemon_user),
     .def = "root",
     .check = C_USER,
     .reloadable = 0,
     .help = "User hpcbridged runs as: the plugin, the shadow and the CLI "
	     "talk only to a socket served by root or this user (a name or "
	     "a uid), in a directory one of them owns."},
    {.path = "daemon.state",
     .type = HB_CFG_STRING,
     .off = F(daemon_state),
     .def = "/var/lib/hpcbridge/state.db",
     .check = C_ABSPATH,
     .reloadable = 0,
     .help = "SQLite file holding jobs, decisions and the audit log "
	     "(hpcbridged --state overrides it)."},
    {.path = "daemon.admins",
     .type = HB_CFG_LIST,
     .off = F(daemon_admins),
     .count_off = F(ndaemon_admins),
     .check = C_USER,
     .reloadable = 1,
     .help = "User names who may see and cancel every job."},
    {.path = "daemon.max_request",
     .type = HB_CFG_UINT,
     .off = F(daemon_max_request),
     .def = "1048576",
     .min = 4096,
     .max = 1048576,
     .reloadable = 1,
     .help = "Largest API request payload accepted, in bytes; larger "
	     "ones get ETOOBIG."},
    {.path = "daemon.workers",
     .type = HB_CFG_UINT,
     .off = F(daemon_workers),
     .def = "4",
     .min = 1,
     .max = 64,
     .reloadable = 0,
     .help = "Threads that make blocking calls to Slurm and Kubernetes."},
    {.path = "daemon.checkpoint_pages",
     .type = HB_CFG_UINT,
     .off = F(daemon_checkpoint_pages),
     .def = "1000",
     .min = 100,
     .max = 100000,
     .reloadable = 0,
     .help = "Pages of 4 KiB the state's write-ahead log gathers before a "
	     "worker copies them into the database."},
    {.path = "daemon.log_level",
     .type = HB_CFG_ENUM,
     .off = F(daemon_log_level),
     .def = "info",
     .values = level_values,
     .reloadable = 1,
     .help = "Lowest level the daemon logs."},
    {.path = "metrics.listen",
     .type = HB_CFG_STRING,
     .off = F(metrics_listen),
     .def = NULL,
     .check = C_LISTEN,
     .nullable = 1,
     .reloadable = 0,
     .help = "Address the daemon serves Prometheus metrics and /healthz "
	     "on over HTTP, IP:PORT (127.0.0.1:9464, [::1]:9464); null: "
	     "none.  A non-loopback address needs metrics.allow_remote."},
    {.path = "metrics.allow_remote",
     .type = HB_CFG_BOOL,
     .off = F(metrics_allow_remote),
     .def = "false",
     .reloadable = 0,
     .help = "Let metrics.listen be an address other hosts reach: the "
	     "metrics carry no authentication and name accounts and their "
	     "spend."},
    {.path = "slurm.user",
     .type = HB_CFG_STRING,
     .off = F(slurm_user),
     .def = "slurm",
     .check = C_USER,
     .reloadable = 1,
     .help = "SlurmUser: besides root, the one user that may ask for "
	     "decisions and act for any user."},
    {.path = "slurm.burst_partition",
     .type = HB_CFG_STRING,
     .off = F(burst_partition),
     .def = "burst",
     .check = C_ANY,
     .reloadable = 1,
     .help = "Partition that proxy jobs of burst jobs run in."},
    {.path = "slurm.proxy_mem_mb",
     .type = HB_CFG_UINT,
     .off = F(proxy_mem_mb),
     .def = "64",
     .min = 1,
     .max = 65536,
     .reloadable = 1,
     .help = "Memory of a proxy job, in MiB."},
    {.path = "slurm.proxy_grace_min",
     .type = HB_CFG_UINT,
     .off = F(proxy_grace_min),
     .def = "5",
     .max = 1440,
     .reloadable = 1,
     .help = "Minutes added to a proxy job's time limit, for staging and "
	     "cleanup."},
    {.path = "slurm.shadow_command",
     .type = HB_CFG_STRING,
     .off = F(shadow_command),
     .def = "/usr/bin/hpcbridge",
     .check = C_ABSPATH,
     .reloadable = 1,
     .help = "The hpcbridge binary a proxy job runs as 'hpcbridge shadow "
	     "ID', on the burst partition's nodes."},
    {.path = "remote.backend",
     .type = HB_CFG_ENUM,
     .off = F(remote_backend),
     .def = "local",
     .values = backend_values,
     .reloadable = 0,
     .help = "Where burst jobs run: kubernetes (as MPIJobs, through the "
	     "cluster of remote.kubeconfig) or local (this host, as the job's "
	     "user: a stand-in for a cluster, for tests)."},
    {.path = "remote.kubeconfig",
     .type = HB_CFG_STRING,
     .off = F(remote_kubeconfig),
     .def = NULL,
     .nullable = 1,
     .reloadable = 0,
     .help = "The kubeconfig file(s) of the cluster, colon-separated as "
	     "$KUBECONFIG; in-cluster for the pod's service account; null "
	     "for $KUBECONFIG, else ~/.kube/config."},
    {.path = "remote.context",
     .type = HB_CFG_STRING,
     .off = F(remote_context),
     .def = NULL,
     .nullable = 1,
     .reloadable = 0,
     .help = "The kubeconfig context to use; null for its current-context."},
    {.path = "remote.local_dir",
     .type = HB_CFG_STRING,
     .off = F(remote_local_dir),
     .def = "/var/lib/hpcbridge/remote",
     .check = C_ABSPATH,
     .reloadable = 0,
     .help = "The local backend's directory: each job's script, output "
	     "and result."},
    {.path = "plugin.timeout_ms",
     .type = HB_CFG_UINT,
     .off = F(plugin_timeout_ms),
     .def = "20",
     .min = 1,
     .max = 5000,
     .reloadable = 1,
     .help = "The most the job_submit plugin waits for a decision, in "
	     "milliseconds; past it the job stays on Slurm."},
    {.path = "plugin.decide",
     .type = HB_CFG_ENUM,
     .off = F(plugin_decide),
     .def = "snapshot",
     .values = plugin_decide_values,
     .reloadable = 0,
     .help = "Where the job_submit plugin decides: snapshot (inside "
	     "slurmctld, from the snapshot the daemon publishes at "
	     "plugin.snapshot; no round trip) or daemon (it asks the daemon "
	     "over daemon.socket, waiting up to plugin.timeout_ms)."},
    {.path = "plugin.snapshot",
     .type = HB_CFG_STRING,
     .off = F(plugin_snapshot),
     .def = NULL,
     .nullable = 1,
     .check = C_ABSPATH,
     .reloadable = 0,
     .help = "The placement snapshot the daemon publishes and the plugin "
	     "decides from (replaced atomically, readable by root and "
	     "SlurmUser only); null: placement.snap beside daemon.socket."},
    {.path = "plugin.notice_socket",
     .type = HB_CFG_STRING,
     .off = F(plugin_notice_socket),
     .def = NULL,
     .nullable = 1,
     .check = C_SOCKET,
     .reloadable = 0,
     .help = "The datagram socket on which the plugin tells the daemon "
	     "what it decided, without waiting; only root and SlurmUser "
	     "are heard; null: hpcbridged.notice beside daemon.socket."},
    {.path = "plugin.snapshot_max_age_s",
     .type = HB_CFG_UINT,
     .off = F(plugin_snapshot_max_age_s),
     .def = "60",
     .min = 3,
     .max = 86400,
     .reloadable = 1,
     .help = "How old a snapshot the plugin decides from, in seconds; "
	     "past it (the daemon is down or stuck) jobs stay on Slurm."},
    {.path = "plugin.lease",
     .type = HB_CFG_UINT,
     .off = F(plugin_lease),
     .def = "1000",
     .min = 10,
     .max = 1000000,
     .reloadable = 1,
     .help = "How many gateway ids the daemon leases to the plugin at a "
	     "time; a new lease follows when half is used."},
    {.path = "plugin.allowance",
     .type = HB_CFG_UINT,
     .off = F(plugin_allowance),
     .def = "100",
     .min = 0,
     .max = 1000000000,
     .reloadable = 1,
     .help = "The most, in whole units of the policy's currency, that "
	     "decisions made in slurmctld may charge an account before the "
	     "daemon has counted them: the bound on budget overspend."},
    {.path = "placement.policy",
     .type = HB_CFG_STRING,
     .off = F(placement_policy),
     .def = NULL,
     .nullable = 1,
     .check = C_ABSPATH,
     .reloadable = 1,
     .help = "The placement policy file (docs/placement.md); null: a "
	     "policy made from placement.default_target and "
	     "placement.partitions."},
    {.path = "placement.refresh_s",
     .type = HB_CFG_UINT,
     .off = F(placement_refresh_s),
     .def = "30",
     .min = 1,
     .max = 3600,
     .reloadable = 1,
     .help = "How often the daemon asks Slurm for its partitions' "
	     "expected start times and idle nodes, and the Kubernetes "
	     "cluster for its free capacity, in seconds."},
    {.path = "placement.data_refresh_s",
     .type = HB_CFG_UINT,
     .off = F(placement_data_refresh_s),
     .def = "600",
     .min = 0,
     .max = 86400,
     .reloadable = 1,
     .help = "How often the daemon measures the policy's data locations "
	     "on a file system that give no size, in seconds; 0: never."},
    {.path = "placement.default_target",
     .type = HB_CFG_ENUM,
     .off = F(default_target),
     .def = "slurm",
     .values = target_values,
     .reloadable = 1,
     .help = "Where a job runs when neither its --hpcbridge-target nor "
	     "its partition decides."},
    {.path = "placement.partitions",
     .type = HB_CFG_MAP,
     .off = F(placement_partitions),
     .count_off = F(nplacement_partitions),
     .check = C_TARGET,
     .reloadable = 1,
     .help = "Slurm partition to where its jobs run (slurm or "
	     "kubernetes)."},
    {.path = "pbs.queues",
     .type = HB_CFG_MAP,
     .off = F(pbs_queues),
     .count_off = F(npbs_queues),
     .check = C_ANY,
     .reloadable = 1,
     .help = "PBS queue to the Slurm partition hpcbridge qsub submits its "
	     "jobs to (-q QUEUE); a queue not listed is refused.  Empty: "
	     "the queue name is the partition."},
    {.path = "pbs.server_name",
     .type = HB_CFG_STRING,
     .off = F(pbs_server_name),
     .def = NULL,
     .nullable = 1,
     .check = C_ANY,
     .reloadable = 1,
     .help = "The server name hpcbridge qsub prints after the job id "
	     "(123.NAME) and sets in PBS_JOBID; null: this host's short "
	     "name."},
    {.path = "pbs.submit",
     .type = HB_CFG_ENUM,
     .off = F(pbs_submit),
     .def = "sbatch",
     .values = pbs_submit_values,
     .reloadable = 1,
     .help = "How hpcbridge qsub submits: sbatch (run as the user, through "
	     "job_submit/hpcbridge and placement like any sbatch job) or "
	     "daemon (hpcbridged's submit op, the job pinned to Slurm)."},
    {.path = "origin.namespaces",
     .type = HB_CFG_LIST_MAP,
     .off = F(origin_namespaces),
     .count_off = F(norigin_namespaces),
     .check = C_GRANTEE,
     .key_check = C_DNS_LABEL,
     .reloadable = 1,
     .help = "Namespace to the users its managed MPIJobs may run as (their "
	     "hpcbridge.io/user label); \"*\" grants any user whose uid is at "
	     "least origin.min_uid.  An MPIJob of a namespace not listed is "
	     "refused."},
    {.path = "chargeback.ratecard",
     .type = HB_CFG_STRING,
     .off = F(chargeback_ratecard),
     .def = NULL,
     .nullable = 1,
     .check = C_ABSPATH,
     .reloadable = 1,
     .help = "The rate card finished jobs are priced with, into the "
	     "ledger (docs/chargeback.md); null: jobs are not metered."},
    {.path = "origin.min_uid",
     .type = HB_CFG_UINT,
     .off = F(origin_min_uid),
     .def = "1000",
     .min = 1,
     .max = 4294967294u,
     .reloadable = 1,
     .help = "Lowest uid a managed MPIJob may run as: root and the system "
	     "users below it are refused, even when a namespace lists them."},
};

#define NSETTINGS (sizeof(table) / sizeof(table[0]))

int hb_config_key(size_t i, struct hb_config_key *out)
{
	const struct setting *s;

	if (i >= NSETTINGS)
		return HB_ENOENT;
	s = &table[i];
	out->path = s->path;
	out->type = s->type;
	out->def = s->def;
	out->min = s->min;
	out->max = s->max;
	out->values = s->values;
	out->reloadable = s->reloadable;
	out->help = s->help;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Name checks                                                         */
/* ------------------------------------------------------------------ */

static int lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63. */
static int dns_label(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return 0;
	for (i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return 0;
	return 1;
}

/* RFC 1123 subdomain: labels joined by '.', at most 253. */
static int dns_subdomain(const char *s, size_t n)
{
	size_t i, start = 0;

	if (n == 0 || n > 253)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!dns_label(s + start, i - start))
			return 0;
		start = i + 1;
	}
	return 1;
}

/* Label name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63. */
static int label_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

/* [prefix/]name with a DNS subdomain prefix; need_prefix for resources. */
static int qualified_name(const char *s, int need_prefix)
{
	const char *slash = strchr(s, '/');

	if (!slash)
		return !need_prefix && label_name(s, strlen(s));
	if (strchr(slash + 1, '/'))
		return 0;
	return dns_subdomain(s, (size_t)(slash - s)) &&
	       label_name(slash + 1, strlen(slash + 1));
}

static int plain_token(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return 0;
	return n > 0 && n <= max;
}

/* A POSIX user name, as useradd takes it (a trailing '$' for machine
 * accounts). */
static int user_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 32 || s[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '_' && s[i] != '.' &&
		    s[i] != '-' && !(s[i] == '$' && i == n - 1 && i > 0))
			return 0;
	return 1;
}

/* [registry/]repository[:tag][@digest], loosely: the characters an image
 * reference may hold, no whitespace, a letter or digit first. */
static int image_ref(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 500 || !alnum(s[0]))
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum(s[i]) && !strchr("._/:@-", s[i]))
			return 0;
	return 1;
}

/* s3://BUCKET[/PREFIX]: the bucket as S3 names them (3 to 63 of a-z,
 * 0-9, '.', '-', a letter or digit at both ends), the prefix plain
 * components of printable ASCII other than space, at most 400 bytes so
 * that a job's key fits after it. */
static int s3_url(const char *s)
{
	const char *b, *p;
	size_t n;

	if (strncmp(s, "s3://", 5))
		return 0;
	b = s + 5;
	p = strchr(b, '/');
	n = p ? (size_t)(p - b) : strlen(b);
	if (n < 3 || n > 63 || !lower_alnum(b[0]) || !lower_alnum(b[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(b[i]) && b[i] != '-' && b[i] != '.')
			return 0;
	if (!p)
		return 1;
	if (strlen(p + 1) > 400)
		return 0;
	do {
		const char *e;

		p++;
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] <= ' ' ||
			    (unsigned char)p[i] >= 0x7f)
				return 0;
		p += n;
	} while (*p == '/');
	return 1;
}

/* http(s)://HOST[:PORT][/PATH], no whitespace, no credentials. */
static int http_url(const char *s)
{
	const char *h = !strncmp(s, "http://", 7)    ? s + 7
			: !strncmp(s, "https://", 8) ? s + 8
						     : NULL;
	size_t n;

	if (!h || !plain_token(s, 500))
		return 0;
	n = strcspn(h, "/");
	return n > 0 && !memchr(h, '@', n) && h[0] != ':';
}

static const char *mount_path_bad(const char *p);

/* NULL if s passes, else what is wrong with it. */
static const char *check_string(enum check c, const char *s)
{
	size_t n = strlen(s);

	switch (c) {
	case C_ANY:
		if (!plain_token(s, 253))
			return "must be 1 to 253 characters without spaces or "
			       "control characters";
		return NULL;
	case C_DNS_LABEL:
		if (!dns_label(s, n))
			return "must be a DNS-1123 label (at most 63 "
			       "characters: a-z, 0-9 and '-', starting and "
			       "ending with a letter or digit)";
		return NULL;
	case C_DNS_SUBDOMAIN:
		if (!dns_subdomain(s, n))
			return "must be a DNS-1123 subdomain (a-z, 0-9, '-' "
			       "and '.', at most 253 characters)";
		return NULL;
	case C_QUEUE:
		if (!dns_subdomain(s, n) || n > 63)
			return "must be a valid queue name (a DNS-1123 "
			       "subdomain of at most 63 characters)";
		return NULL;
	case C_IMAGE:
		if (!image_ref(s, n))
			return "is not an image reference (at most 500 "
			       "characters of A-Z, a-z, 0-9 and ._/:@-, "
			       "starting with a letter or digit)";
		return NULL;
	case C_ABSPATH:
		if (s[0] != '/' || !plain_token(s, 4096))
			return "must be an absolute path without whitespace";
		return NULL;
	case C_RESOURCE:
		if (!qualified_name(s, 1))
			return "must be an extended resource name "
			       "(domain/name, e.g. nvidia.com/gpu)";
		return NULL;
	case C_LABEL_KEY:
		if (!qualified_name(s, 0))
			return "is not a valid label key ([prefix/]name: the "
			       "name at most 63 characters of A-Z, a-z, 0-9, "
			       "'-', '_', '.', the prefix a DNS subdomain)";
		return NULL;
	case C_LABEL_VALUE:
		if (n && !label_name(s, n))
			return "is not a valid label value (at most 63 "
			       "characters of A-Z, a-z, 0-9, '-', '_', '.', "
			       "starting and ending with a letter or digit)";
		return NULL;
	case C_USER:
		if (!user_name(s, n))
			return "is not a user name (1 to 32 characters of "
			       "A-Z, a-z, 0-9, '_', '.', '-', not starting "
			       "with '-')";
		return NULL;
	case C_SOCKET:
		if (s[0] != '/' || !plain_token(s, 107))
			return "must be an absolute path of at most 107 "
			       "characters without whitespace (a UNIX "
			       "socket address)";
		return NULL;
	case C_TARGET:
		if (strcmp(s, "slurm") && strcmp(s, "kubernetes"))
			return "must be slurm or kubernetes";
		return NULL;
	case C_CLASS:
		if (!dns_subdomain(s, n) || n > 63)
			return "must be a priority class name (a DNS-1123 "
			       "subdomain of at most 63 characters)";
		return NULL;
	case C_UID_RANGE:
		if (hb_k8s_uid_in_range(s, 0) < 0)
			return "must be a uid range as OpenShift writes it: "
			       "START/SIZE or START-END, comma-separated "
			       "(1000660000/10000)";
		return NULL;
	case C_S3_URL:
		if (!s3_url(s))
			return "must be s3://BUCKET[/PREFIX]: a bucket of 3 to "
			       "63 characters of a-z, 0-9, '.' and '-', and a "
			       "prefix of at most 400 characters without "
			       "spaces, empty, '.' or '..' components";
		return NULL;
	case C_HTTP_URL:
		if (!http_url(s))
			return "must be http://HOST[:PORT] or "
			       "https://HOST[:PORT], without spaces or "
			       "credentials";
		return NULL;
	case C_PLAIN_PATH:
		return mount_path_bad(s);
	case C_IFNAME:
		/* IFNAMSIZ less the NUL; no '/', ':' or space. */
		if (!n || n > 15 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"
					"MNOPQRSTUVWXYZ0123456789-_.") != n ||
		    !strcmp(s, ".") || !strcmp(s, ".."))
			return "must be a network interface name (1 to 15 "
			       "characters of A-Z, a-z, 0-9, '-', '_', '.')";
		return NULL;
	case C_CEL:
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				return "must be one line of text (no control "
				       "characters)";
		if (n == 0 || n > 10240)
			return "must be 1 to 10240 characters";
		return NULL;
	case C_LISTEN:
		if (hb_config_listen_addr(s, NULL, NULL, NULL))
			return "must be IP:PORT, an IPv4 address or an IPv6 "
			       "one in brackets and a port 1 to 65535 "
			       "(127.0.0.1:9464, [::1]:9464)";
		return NULL;
	case C_GRANTEE:
		if (strcmp(s, "*") && !user_name(s, n))
			return "is neither a user name (1 to 32 characters of "
			       "A-Z, a-z, 0-9, '_', '.', '-', not starting "
			       "with '-') nor \"*\"";
		return NULL;
	}
	return "cannot be checked";
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

struct priv {
	struct hb_arena arena;
};

struct loader {
	const char *name;
	struct hb_err *err;
	struct hb_config *cfg;
	struct hb_arena *arena;
	unsigned nerrors;
	unsigned char seen[NSETTINGS];
};

static int lerr(struct loader *l, const cJSON *node, const char *path,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int lerr(struct loader *l, const cJSON *node, const char *path,
		const char *fmt, ...)
{
	char msg[HB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l->nerrors++;
	hb_err_set(l->err, HB_EINVAL, l->name,
		   node ? (unsigned)hb_doc_line(node) : 0, "%.200s: %s", path,
		   msg);
	return HB_EINVAL;
}

static void *field(struct hb_config *cfg, size_t off)
{
	return (char *)cfg + off;
}

static const char *type_name(const cJSON *v)
{
	switch (v->type & 0xFF) {
	case cJSON_NULL:
		return "null";
	case cJSON_True:
	case cJSON_False:
		return "a boolean";
	case cJSON_Number:
		return "a number";
	case cJSON_String:
		return "a string";
	case cJSON_Array:
		return "a list";
	case cJSON_Object:
		return "a mapping";
	}
	return "invalid";
}

/* A size in MiB: an integer (MiB) or a quantity/size string. */
static int parse_size(const char *s, uint64_t *mib)
{
	size_t n = strlen(s);

	if (n == 0 || !(s[0] >= '0' && s[0] <= '9'))
		return HB_EINVAL;
	/* binary Kubernetes suffixes (Ki, Mi, Gi, ...) */
	if (n >= 2 && s[n - 1] == 'i')
		return hb_parse_k8s_mem(s, mib);
	/* Slurm: N, NK, NM, NG, NT (binary; no suffix is MiB) */
	if (hb_parse_slurm_size(s, mib) == 0)
		return 0;
	/* the other Kubernetes forms: 1e9, 500k, 1500000000 bytes... */
	return hb_parse_k8s_mem(s, mib);
}

static const char *bounds_text(const struct setting *s, char *buf, size_t n)
{
	if (s->type == HB_CFG_SIZE) {
		char lo[32], hi[32];

		hb_format_k8s_mem(s->min, lo);
		hb_format_k8s_mem(s->max, hi);
		snprintf(buf, n, "%s and %s", s->min ? lo : "0", hi);
	} else {
		snprintf(buf, n, "%llu and %llu", (unsigned long long)s->min,
			 (unsigned long long)s->max);
	}
	return buf;
}

/* Store one scalar setting from v (NULL: from the default text). */
static int load_scalar(struct loader *l, const struct setting *s,
		       const cJSON *v)
{
	const char *text = s->def, *why;
	void *dst = field(l->cfg, s->off);
	uint64_t u = 0;
	char b[96];

	if (v && cJSON_IsNull(v) && s->nullable) {
		*(const char **)dst = NULL;
		return 0;
	}
	if (!v && !text) {
		*(const char **)dst = NULL;
		return 0;
	}
	switch (s->type) {
	case HB_CFG_STRING:
	case HB_CFG_ENUM:
		if (v && !cJSON_IsString(v))
			return lerr(l, v, s->path, "must be a string, not %s%s",
				    type_name(v),
				    cJSON_IsNumber(v) || cJSON_IsBool(v)
					? " (put it in quotes)"
					: "");
		if (v)
			text = v->valuestring;
		if (s->type == HB_CFG_ENUM) {
			char list[160] = "";
			size_t i, used = 0;
			int ok = 0;

			for (i = 0; s->values[i]; i++) {
				ok |= !strcmp(s->values[i], text);
				if (used < sizeof(list))
					used += (size_t)snprintf(
					    list + used, sizeof(list) - used,
					    "%s%s", i ? ", " : "",
					    s->values[i]);
			}
			if (!ok)
				return lerr(l, v, s->path,
					    "must be one of %s (not '%.60s')",
					    list, text);
		} else if ((why = check_string(s->check, text))) {
			return lerr(l, v, s->path, "'%.80s' %s", text, why);
		}
		text = hb_arena_strdup(l->arena, text);
		if (!text)
			return HB_ENOMEM;
		*(const char **)dst = text;
		return 0;
	case HB_CFG_UINT:
	case HB_CFG_SIZE:
		if (v && cJSON_IsNumber(v)) {
			double d = v->valuedouble;

			if (!(d >= (double)s->min && d <= (double)s->max))
				return lerr(l, v, s->path, "must be between %s",
					    bounds_text(s, b, sizeof(b)));
			if (d != (double)(uint64_t)d)
				return lerr(l, v, s->path,
					    "must be a whole number");
			u = (uint64_t)d;
		} else if (v &&
			   !(s->type == HB_CFG_SIZE && cJSON_IsString(v))) {
			return lerr(l, v, s->path, "must be %s, not %s",
				    s->type == HB_CFG_SIZE
					? "a size (an integer in MiB, or "
					  "\"4Gi\", \"512Mi\", \"4G\")"
					: "a non-negative integer",
				    type_name(v));
		} else {
			int rc;

			if (v)
				text = v->valuestring;
			rc = s->type == HB_CFG_SIZE
				 ? parse_size(text, &u)
				 : hb_parse_u64(text, UINT64_MAX, &u);
			if (rc == HB_ERANGE)
				return lerr(l, v, s->path, "must be between %s",
					    bounds_text(s, b, sizeof(b)));
			if (rc)
				return lerr(l, v, s->path,
					    "'%.60s' is not a size (an integer "
					    "in MiB, or \"4Gi\", \"512Mi\", "
					    "\"4G\")",
					    text);
			if (u < s->min || u > s->max)
				return lerr(l, v, s->path, "must be between %s",
					    bounds_text(s, b, sizeof(b)));
		}
		if (s->type == HB_CFG_SIZE)
			*(uint64_t *)dst = u;
		else
			*(uint32_t *)dst = (uint32_t)u;
		return 0;
	default:
		return 0;
	}
}

/* A mapping of strings to checked strings, into an arena array. */
static int load_kv(struct loader *l, const struct setting *s, const char *path,
		   const cJSON *m, enum check kc, enum check vc,
		   struct hb_kv **out, uint32_t *nout)
{
	const cJSON *c;
	struct hb_kv *kv;
	uint32_t n = 0;
	int bad = 0;
	const char *why;
	char sub[320];

	(void)s;
	*out = NULL;
	*nout = 0;
	if (cJSON_IsNull(m))
		return 0;
	if (!cJSON_IsObject(m))
		return lerr(l, m, path, "must be a mapping, not %s",
			    type_name(m));
	n = (uint32_t)cJSON_GetArraySize(m);
	if (n == 0)
		return 0;
	kv = hb_arena_alloc(l->arena, n * sizeof(*kv));
	if (!kv)
		return HB_ENOMEM;
	n = 0;
	for (c = m->child; c; c = c->next) {
		snprintf(sub, sizeof(sub), "%.200s.%.100s", path, c->string);
		if ((why = check_string(kc, c->string))) {
			bad = lerr(l, c, sub, "the key %s", why);
			continue;
		}
		if (!cJSON_IsString(c)) {
			bad = lerr(l, c, sub, "must be a string, not %s%s",
				   type_name(c),
				   cJSON_IsNumber(c) || cJSON_IsBool(c)
				       ? " (put it in quotes)"
				       : "");
			continue;
		}
		if ((why = check_string(vc, c->valuestring))) {
			bad =
			    lerr(l, c, sub, "'%.80s' %s", c->valuestring, why);
			continue;
		}
		kv[n].key = hb_arena_strdup(l->arena, c->string);
		kv[n].value = hb_arena_strdup(l->arena, c->valuestring);
		if (!kv[n].key || !kv[n].value)
			return HB_ENOMEM;
		n++;
	}
	if (bad)
		return bad;
	*out = kv;
	*nout = n;
	return 0;
}

static int load_map(struct loader *l, const struct setting *s, const cJSON *m)
{
	struct hb_kv **dst = field(l->cfg, s->off);
	uint32_t *cnt = field(l->cfg, s->count_off);

	if (!m) {
		*dst = NULL;
		*cnt = 0;
		return 0;
	}
	return load_kv(l, s, s->path, m, C_ANY, s->check, dst, cnt);
}

/*
 * A mapping of names (checked by key) into an arena array of n elements
 * of size bytes: entry() loads the value of each (its path is sub) into
 * its element, with the name already copied to the arena.  Every entry is
 * checked before the first error is returned.
 */
typedef int (*entry_fn)(struct loader *l, const struct setting *s,
			const char *sub, const cJSON *c, const char *name,
			void *elem);

static int load_mapping(struct loader *l, const struct setting *s,
			const cJSON *m, enum check key, size_t size,
			entry_fn entry, void **dst, uint32_t *cnt)
{
	const cJSON *c;
	const char *why, *name;
	char *arr, sub[320];
	uint32_t n;
	int bad = 0, rc;

	*dst = NULL;
	*cnt = 0;
	if (!m || cJSON_IsNull(m))
		return 0;
	if (!cJSON_IsObject(m))
		return lerr(l, m, s->path, "must be a mapping, not %s",
			    type_name(m));
	n = (uint32_t)cJSON_GetArraySize(m);
	if (n == 0)
		return 0;
	arr = hb_arena_alloc(l->arena, n * size);
	if (!arr)
		return HB_ENOMEM;
	n = 0;
	for (c = m->child; c; c = c->next) {
		snprintf(sub, sizeof(sub), "%.200s.%.100s", s->path, c->string);
		if ((why = check_string(key, c->string))) {
			bad = lerr(l, c, sub, "the key %s", why);
			continue;
		}
		if (!(name = hb_arena_strdup(l->arena, c->string)))
			return HB_ENOMEM;
		rc = entry(l, s, sub, c, name, arr + n * size);
		if (rc == HB_ENOMEM)
			return rc;
		if (rc) {
			bad = rc;
			continue;
		}
		n++;
	}
	if (bad)
		return bad;
	*dst = arr;
	*cnt = n;
	return 0;
}

static int selector_entry(struct loader *l, const struct setting *s,
			  const char *sub, const cJSON *c, const char *name,
			  void *elem)
{
	struct hb_selector_map *sm = elem;

	if (!cJSON_IsObject(c) && !cJSON_IsNull(c))
		return lerr(l, c, sub,
			    "must be a mapping of node labels, not %s",
			    type_name(c));
	sm->key = name;
	return load_kv(l, s, sub, c, s->key_check, s->check, &sm->labels,
		       &sm->nlabels);
}

static int load_selectors(struct loader *l, const struct setting *s,
			  const cJSON *m)
{
	return load_mapping(l, s, m, C_ANY, sizeof(struct hb_selector_map),
			    selector_entry, field(l->cfg, s->off),
			    field(l->cfg, s->count_off));
}

static int load_strv(struct loader *l, const char *path, const cJSON *v,
		     enum check c, const char ***out, uint32_t *nout)
{
	const cJSON *e, *d;
	const char **list, *why;
	uint32_t n, i = 0, cnt = 0;
	int bad = 0;
	char sub[320];

	*out = NULL;
	*nout = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return lerr(l, v, path, "must be a list, not %s", type_name(v));
	n = (uint32_t)cJSON_GetArraySize(v);
	if (n == 0)
		return 0;
	list = hb_arena_alloc(l->arena, n * sizeof(*list));
	if (!list)
		return HB_ENOMEM;
	for (e = v->child; e; e = e->next, i++) {
		snprintf(sub, sizeof(sub), "%.200s[%u]", path, i);
		if (!cJSON_IsString(e)) {
			bad = lerr(l, e, sub, "must be a string, not %s%s",
				   type_name(e),
				   cJSON_IsNumber(e) || cJSON_IsBool(e)
				       ? " (put it in quotes)"
				       : "");
			continue;
		}
		if ((why = check_string(c, e->valuestring))) {
			bad = lerr(l, e, sub, "'%.80s' %s", e->valuestring,
				   why);
			continue;
		}
		for (d = v->child; d != e; d = d->next)
			if (cJSON_IsString(d) &&
			    !strcmp(d->valuestring, e->valuestring))
				break;
		if (d != e) {
			bad = lerr(l, e, sub, "'%.80s' is listed twice",
				   e->valuestring);
			continue;
		}
		list[cnt] = hb_arena_strdup(l->arena, e->valuestring);
		if (!list[cnt])
			return HB_ENOMEM;
		cnt++;
	}
	if (bad)
		return bad;
	*out = list;
	*nout = cnt;
	return 0;
}

static int load_list(struct loader *l, const struct setting *s,
		     const cJSON *v)
{
	return load_strv(l, s->path, v, s->check, field(l->cfg, s->off),
			 field(l->cfg, s->count_off));
}

static int list_entry(struct loader *l, const struct setting *s,
		      const char *sub, const cJSON *c, const char *name,
		      void *elem)
{
	struct hb_list_map *lm = elem;

	lm->key = name;
	return load_strv(l, sub, c, s->check, &lm->values, &lm->nvalues);
}

/* A mapping of names (checked by key_check) to lists of strings (checked
 * by check), into an arena array. */
static int load_list_map(struct loader *l, const struct setting *s,
			 const cJSON *m)
{
	return load_mapping(l, s, m, s->key_check, sizeof(struct hb_list_map),
			    list_entry, field(l->cfg, s->off),
			    field(l->cfg, s->count_off));
}

static int load_bool(struct loader *l, const struct setting *s,
		     const cJSON *v)
{
	bool *dst = field(l->cfg, s->off);

	if (!v) {
		*dst = s->def && !strcmp(s->def, "true");
		return 0;
	}
	if (!cJSON_IsBool(v))
		return lerr(l, v, s->path, "must be true or false, not %s",
			    type_name(v));
	*dst = cJSON_IsTrue(v);
	return 0;
}

/* none | primary | a group id (not 0: the root group). */
static int load_fs_group(struct loader *l, const struct setting *s,
			 const cJSON *v)
{
	struct hb_k8s_opts *k = &l->cfg->k8s;
	const char *text = v && cJSON_IsString(v) ? v->valuestring : s->def;
	uint64_t gid = 0;

	if (v && cJSON_IsNumber(v)) {
		double d = v->valuedouble;

		if (!(d >= 1 && d <= 4294967294.0) || d != (double)(uint64_t)d)
			return lerr(l, v, s->path,
				    "a group id must be a whole number between "
				    "1 and 4294967294");
		gid = (uint64_t)d;
	} else if (v && !cJSON_IsString(v)) {
		return lerr(l, v, s->path,
			    "must be none, primary or a group id, not %s",
			    type_name(v));
	} else if (!strcmp(text, "none")) {
		k->fs_group = HB_FS_GROUP_NONE;
		return 0;
	} else if (!strcmp(text, "primary")) {
		k->fs_group = HB_FS_GROUP_PRIMARY;
		return 0;
	} else if (hb_parse_u64(text, 4294967294u, &gid) || gid == 0) {
		return lerr(l, v, s->path,
			    "must be none, primary or a group id between 1 "
			    "and 4294967294 (not '%.60s')",
			    text);
	}
	k->fs_group = HB_FS_GROUP_GID;
	k->fs_group_gid = (uint32_t)gid;
	return 0;
}

/* A mount path: absolute, not "/", without empty, "." or ".."
 * components, so that comparing paths component by component is
 * comparing strings. */
static const char *mount_path_bad(const char *p)
{
	const char *c;

	if (check_string(C_ABSPATH, p))
		return "must be an absolute path without whitespace";
	if (!strcmp(p, "/"))
		return "cannot be / itself";
	for (c = p; *c; c++) {
		if (*c != '/')
			continue;
		if (c[1] == '/' || c[1] == '\0' ||
		    (c[1] == '.' && (c[2] == '/' || c[2] == '\0')) ||
		    (c[1] == '.' && c[2] == '.' &&
		     (c[3] == '/' || c[3] == '\0')))
			return "must be written plainly: no '.', '..', '//' "
			       "or trailing '/'";
	}
	return NULL;
}

/* A string member key of mapping m, checked with c (NULL when absent). */
static int vol_str(struct loader *l, const char *sub, const cJSON *m,
		   const char *key, enum check c, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
	char p[360];
	const char *why;

	*out = NULL;
	if (!v)
		return 0;
	snprintf(p, sizeof(p), "%.300s.%s", sub, key);
	if (!cJSON_IsString(v))
		return lerr(l, v, p, "must be a string, not %s", type_name(v));
	why = c == C_ABSPATH ? mount_path_bad(v->valuestring)
			     : check_string(c, v->valuestring);
	if (why)
		return lerr(l, v, p, "'%.80s' %s", v->valuestring, why);
	if (!(*out = hb_arena_strdup(l->arena, v->valuestring)))
		return HB_ENOMEM;
	return 0;
}

static int volume_entry(struct loader *l, const char *sub, const cJSON *e,
			struct hb_k8s_volume *v)
{
	static const char *const known[] = {"path", "pvc", "nfs", "host_path",
					    "read_only", NULL};
	const cJSON *c, *nfs, *ro;
	char p[360];
	int rc, n;

	if (!cJSON_IsObject(e))
		return lerr(l, e, sub, "must be a mapping, not %s",
			    type_name(e));
	for (c = e->child; c; c = c->next) {
		size_t i;

		for (i = 0; known[i] && strcmp(known[i], c->string); i++)
			;
		if (!known[i])
			return lerr(l, c, sub,
				    "unknown key '%.60s' (path, pvc, nfs, "
				    "host_path, read_only)",
				    c->string);
	}
	if ((rc = vol_str(l, sub, e, "path", C_ABSPATH, &v->path)) ||
	    (rc = vol_str(l, sub, e, "pvc", C_DNS_SUBDOMAIN, &v->pvc)) ||
	    (rc = vol_str(l, sub, e, "host_path", C_ABSPATH, &v->host_path)))
		return rc;
	if (!v->path)
		return lerr(l, e, sub, "needs a path (where the pods mount it)");
	nfs = cJSON_GetObjectItemCaseSensitive(e, "nfs");
	snprintf(p, sizeof(p), "%.300s.nfs", sub);
	if (nfs && !cJSON_IsObject(nfs))
		return lerr(l, nfs, p,
			    "must be a mapping {server, path}, not %s",
			    type_name(nfs));
	if (nfs) {
		for (c = nfs->child; c; c = c->next)
			if (strcmp(c->string, "server") &&
			    strcmp(c->string, "path"))
				return lerr(l, c, p,
					    "unknown key '%.60s' (server, "
					    "path)",
					    c->string);
		if ((rc = vol_str(l, p, nfs, "server", C_ANY,
				  &v->nfs_server)) ||
		    (rc = vol_str(l, p, nfs, "path", C_ABSPATH, &v->nfs_path)))
			return rc;
		if (!v->nfs_server || !v->nfs_path)
			return lerr(l, nfs, p, "needs both server and path");
	}
	n = !!v->pvc + !!nfs + !!v->host_path;
	if (n != 1)
		return lerr(l, e, sub,
			    "needs exactly one of pvc, nfs and host_path (it "
			    "has %d)",
			    n);
	ro = cJSON_GetObjectItemCaseSensitive(e, "read_only");
	snprintf(p, sizeof(p), "%.300s.read_only", sub);
	if (ro && !cJSON_IsBool(ro))
		return lerr(l, ro, p, "must be true or false, not %s",
			    type_name(ro));
	v->read_only = cJSON_IsTrue(ro);
	return 0;
}

static int load_volumes(struct loader *l, const struct setting *s,
			const cJSON *v)
{
	struct hb_k8s_volume **dst = field(l->cfg, s->off), *vols;
	uint32_t *cnt = field(l->cfg, s->count_off), n, k = 0;
	const cJSON *e;
	char sub[320];
	int bad = 0, rc;

	*dst = NULL;
	*cnt = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return lerr(l, v, s->path, "must be a list, not %s",
			    type_name(v));
	n = (uint32_t)cJSON_GetArraySize(v);
	if (n == 0)
		return 0;
	if (!(vols = hb_arena_alloc(l->arena, n * sizeof(*vols))))
		return HB_ENOMEM;
	memset(vols, 0, n * sizeof(*vols));
	for (e = v->child; e; e = e->next) {
		snprintf(sub, sizeof(sub), "%s[%u]", s->path, k);
		rc = volume_entry(l, sub, e, &vols[k]);
		if (rc == HB_ENOMEM)
			return rc;
		if (rc) {
			bad = rc;
			continue;
		}
		for (uint32_t i = 0; i < k; i++)
			if (!strcmp(vols[i].path, vols[k].path)) {
				bad = lerr(l, e, sub,
					   "path %.200s is listed twice",
					   vols[k].path);
				break;
			}
		if (!bad)
			k++;
	}
	if (bad)
		return bad;
	*dst = vols;
	*cnt = k;
	return 0;
}

static int load_setting(struct loader *l, const struct setting *s,
			const cJSON *v)
{
	switch (s->type) {
	case HB_CFG_BOOL:
		return load_bool(l, s, v);
	case HB_CFG_FS_GROUP:
		return load_fs_group(l, s, v);
	case HB_CFG_VOLUMES:
		return load_volumes(l, s, v);
	case HB_CFG_LIST:
		return load_list(l, s, v);
	case HB_CFG_LIST_MAP:
		return load_list_map(l, s, v);
	case HB_CFG_MAP:
		return load_map(l, s, v);
	case HB_CFG_SELECTORS:
		return load_selectors(l, s, v);
	default:
		return load_scalar(l, s, v);
	}
}

/* Levenshtein distance, capped: for "did you mean". */
static unsigned distance(const char *a, const char *b)
{
	unsigned row[64], i, j, prev, tmp;
	size_t la = strlen(a), lb = strlen(b);

	if (la >= 63 || lb >= 63)
		return 99;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

/*
 * The known name closest to key among the children of section prefix
 * ("" for the top level); NULL if none is close.
 */
static const char *suggest(const char *prefix, const char *key, char *out,
			   size_t outn)
{
	size_t pl = strlen(prefix), i;
	unsigned best = 3;
	const char *found = NULL;

	for (i = 0; i < NSETTINGS; i++) {
		const char *p = table[i].path, *name, *dot;
		char cand[64];
		size_t cn;
		unsigned d;

		if (pl && (strncmp(p, prefix, pl) || p[pl] != '.'))
			continue;
		name = pl ? p + pl + 1 : p;
		dot = strchr(name, '.');
		cn = dot ? (size_t)(dot - name) : strlen(name);
		if (cn >= sizeof(cand))
			continue;
		memcpy(cand, name, cn);
		cand[cn] = '\0';
		d = distance(key, cand);
		if (d < best) {
			best = d;
			snprintf(out, outn, "%s", cand);
			found = out;
		}
	}
	return found;
}

static const struct setting *find_setting(const char *path)
{
	size_t i;

	for (i = 0; i < NSETTINGS; i++)
		if (!strcmp(table[i].path, path))
			return &table[i];
	return NULL;
}

static int is_section(const char *path)
{
	size_t i, n = strlen(path);

	for (i = 0; i < NSETTINGS; i++)
		if (!strncmp(table[i].path, path, n) && table[i].path[n] == '.')
			return 1;
	return 0;
}

/* Walk a section of the file. */
static int load_section(struct loader *l, const char *prefix, const cJSON *m)
{
	const cJSON *c;
	int rc, bad = 0;

	for (c = m->child; c; c = c->next) {
		char path[256], hint[64];
		const struct setting *s;
		int n = snprintf(path, sizeof(path), "%s%s%s", prefix,
				 *prefix ? "." : "", c->string);

		if (n < 0 || (size_t)n >= sizeof(path) ||
		    strchr(c->string, '.')) {
			bad = lerr(l, c, *prefix ? prefix : "(top level)",
				   "unknown key '%.60s'", c->string);
			continue;
		}
		if ((s = find_setting(path))) {
			l->seen[s - table] = 1;
			rc = load_setting(l, s, c);
		} else if (is_section(path)) {
			if (cJSON_IsNull(c))
				continue;
			if (!cJSON_IsObject(c))
				rc = lerr(l, c, path,
					  "must be a mapping, not %s",
					  type_name(c));
			else
				rc = load_section(l, path, c);
		} else if (suggest(prefix, c->string, hint, sizeof(hint))) {
			rc = lerr(l, c, path,
				  "unknown key (did you mean '%s'?)", hint);
		} else {
			rc = lerr(l, c, path, "unknown key");
		}
		if (rc == HB_ENOMEM)
			return rc;
		if (rc)
			bad = rc;
	}
	return bad;
}

/* ------------------------------------------------------------------ */
/* The metrics address                                                 */
/* ------------------------------------------------------------------ */

int hb_config_listen_addr(const char *s, struct sockaddr_storage *ss,
			  socklen_t *len, int *loopback)
{
	struct sockaddr_storage tmp;
	const char *colon;
	char host[INET6_ADDRSTRLEN + 2], *end;
	size_t n;
	long port;

	if (!s || !(colon = strrchr(s, ':')))
		return HB_EINVAL;
	n = (size_t)(colon - s);
	if (n >= sizeof(host) || colon[1] < '0' || colon[1] > '9')
		return HB_EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || port < 1 || port > 65535)
		return HB_EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (!ss)
		ss = &tmp;
	memset(ss, 0, sizeof(*ss));
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[n - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			return HB_EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (len)
			*len = sizeof(*a);
		if (loopback)
			*loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return HB_EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (len)
			*len = sizeof(*a);
		if (loopback)
			*loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

/* A metrics address other hosts reach only when the site says so. */
static int check_metrics(struct loader *l)
{
	int lo = 1;

	if (!l->cfg->metrics_listen || l->cfg->metrics_allow_remote)
		return 0;
	hb_config_listen_addr(l->cfg->metrics_listen, NULL, NULL, &lo);
	if (lo)
		return 0;
	return lerr(l, NULL, "metrics.listen",
		    "%s is not a loopback address; the metrics carry no "
		    "authentication: set metrics.allow_remote: true to serve "
		    "them there",
		    l->cfg->metrics_listen);
}

static int load(const cJSON *doc, const char *name, struct hb_config *cfg,
		struct hb_err *err)
{
	struct loader l;
	struct priv *pv;
	size_t i;
	int rc = 0;

	memset(cfg, 0, sizeof(*cfg));
	pv = calloc(1, sizeof(*pv));
	if (!pv)
		return hb_err_set(err, HB_ENOMEM, name, 0, "out of memory");
	hb_arena_init(&pv->arena, 0);
	cfg->priv = pv;
	memset(&l, 0, sizeof(l));
	l.name = name;
	l.err = err;
	l.cfg = cfg;
	l.arena = &pv->arena;
	if (doc && !cJSON_IsNull(doc)) {
		if (!cJSON_IsObject(doc)) {
			hb_err_set(err, HB_EINVAL, name,
				   (unsigned)hb_doc_line(doc),
				   "the configuration must be a mapping, "
				   "not %s",
				   type_name(doc));
			rc = HB_EINVAL;
			goto out;
		}
		rc = load_section(&l, "", doc);
		if (rc == HB_ENOMEM)
			goto out;
	}
	/* defaults for what the file does not say */
	for (i = 0; i < NSETTINGS; i++) {
		int r;

		if (l.seen[i])
			continue;
		r = load_setting(&l, &table[i], NULL);
		if (r == HB_ENOMEM) {
			rc = r;
			goto out;
		}
		if (r && !rc)
			rc = r;
	}
	if (rc == 0)
		rc = check_metrics(&l);
	if (rc == 0 && l.nerrors)
		rc = HB_EINVAL;
out:
	if (rc) {
		if (rc == HB_ENOMEM)
			hb_err_set(err, rc, name, 0, "out of memory");
		else if (l.nerrors > 1 && err) {
			size_t used = strlen(err->msg);

			snprintf(err->msg + used, sizeof(err->msg) - used,
				 " (and %u more error%s)", l.nerrors - 1,
				 l.nerrors > 2 ? "s" : "");
		}
		hb_config_free(cfg);
	}
	return rc;
}

int hb_config_defaults(struct hb_config *cfg)
{
	struct hb_err err = {0};

	return load(NULL, "defaults", cfg, &err);
}

int hb_config_parse(const char *buf, size_t len, const char *name,
		    struct hb_config *cfg, struct hb_err *err)
{
	cJSON *doc = NULL;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	if ((rc = hb_doc_parse(buf, len, name, &doc, err)))
		return rc;
	rc = load(doc, name, cfg, err);
	cJSON_Delete(doc);
	return rc;
}

void hb_config_free(struct hb_config *cfg)
{
	struct priv *pv;

	if (!cfg)
		return;
	pv = cfg->priv;
	if (pv) {
		hb_arena_free(&pv->arena);
		free(pv);
	}
	memset(cfg, 0, sizeof(*cfg));
}

/* ------------------------------------------------------------------ */
/* Reload and lookups                                                  */
/* ------------------------------------------------------------------ */

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

static int kv_eq(const struct hb_kv *a, uint32_t na, const struct hb_kv *b,
		 uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (!str_eq(a[i].key, b[i].key) ||
		    !str_eq(a[i].value, b[i].value))
			return 0;
	return 1;
}

static int strv_eq(const char *const *a, uint32_t na, const char *const *b,
		   uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (!str_eq(a[i], b[i]))
			return 0;
	return 1;
}

static int setting_eq(const struct setting *s, const struct hb_config *a,
		      const struct hb_config *b)
{
	const void *pa = (const char *)a + s->off;
	const void *pb = (const char *)b + s->off;
	uint32_t na = 0, nb = 0, i;

	if (s->type == HB_CFG_MAP || s->type == HB_CFG_SELECTORS ||
	    s->type == HB_CFG_LIST || s->type == HB_CFG_LIST_MAP ||
	    s->type == HB_CFG_VOLUMES) {
		na = *(const uint32_t *)((const char *)a + s->count_off);
		nb = *(const uint32_t *)((const char *)b + s->count_off);
	}
	switch (s->type) {
	case HB_CFG_STRING:
	case HB_CFG_ENUM:
		return str_eq(*(const char *const *)pa,
			      *(const char *const *)pb);
	case HB_CFG_UINT:
		return *(const uint32_t *)pa == *(const uint32_t *)pb;
	case HB_CFG_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case HB_CFG_FS_GROUP:
		return a->k8s.fs_group == b->k8s.fs_group &&
		       a->k8s.fs_group_gid == b->k8s.fs_group_gid;
	case HB_CFG_VOLUMES: {
		const struct hb_k8s_volume *x =
		    *(struct hb_k8s_volume *const *)pa;
		const struct hb_k8s_volume *y =
		    *(struct hb_k8s_volume *const *)pb;

		if (na != nb)
			return 0;
		for (i = 0; i < na; i++)
			if (!str_eq(x[i].path, y[i].path) ||
			    !str_eq(x[i].pvc, y[i].pvc) ||
			    !str_eq(x[i].nfs_server, y[i].nfs_server) ||
			    !str_eq(x[i].nfs_path, y[i].nfs_path) ||
			    !str_eq(x[i].host_path, y[i].host_path) ||
			    x[i].read_only != y[i].read_only)
				return 0;
		return 1;
	}
	case HB_CFG_SIZE:
		return *(const uint64_t *)pa == *(const uint64_t *)pb;
	case HB_CFG_MAP:
		return kv_eq(*(struct hb_kv *const *)pa, na,
			     *(struct hb_kv *const *)pb, nb);
	case HB_CFG_LIST:
		return strv_eq(*(const char *const *const *)pa, na,
			       *(const char *const *const *)pb, nb);
	case HB_CFG_LIST_MAP: {
		const struct hb_list_map *x = *(struct hb_list_map *const *)pa;
		const struct hb_list_map *y = *(struct hb_list_map *const *)pb;

		if (na != nb)
			return 0;
		for (i = 0; i < na; i++)
			if (!str_eq(x[i].key, y[i].key) ||
			    !strv_eq(x[i].values, x[i].nvalues, y[i].values,
				     y[i].nvalues))
				return 0;
		return 1;
	}
	case HB_CFG_SELECTORS: {
		const struct hb_selector_map *x =
		    *(struct hb_selector_map *const *)pa;
		const struct hb_selector_map *y =
		    *(struct hb_selector_map *const *)pb;

		if (na != nb)
			return 0;
		for (i = 0; i < na; i++)
			if (!str_eq(x[i].key, y[i].key) ||
			    !kv_eq(x[i].labels, x[i].nlabels, y[i].labels,
				   y[i].nlabels))
				return 0;
		return 1;
	}
	}
	return 0;
}

int hb_config_check_reload(const struct hb_config *cur,
			   const struct hb_config *next, struct hb_err *err)
{
	size_t i;

	for (i = 0; i < NSETTINGS; i++)
		if (!table[i].reloadable && !setting_eq(&table[i], cur, next))
			return hb_err_set(err, HB_ECONFLICT, NULL, 0,
					  "%s: changing it needs a restart",
					  table[i].path);
	return 0;
}

int hb_list_has(const char *const *list, uint32_t n, const char *s)
{
	uint32_t i;

	if (!list || !s)
		return 0;
	for (i = 0; i < n; i++)
		if (list[i] && !strcmp(list[i], s))
			return 1;
	return 0;
}

const struct hb_list_map *hb_list_map_get(const struct hb_list_map *m,
					  uint32_t n, const char *key)
{
	uint32_t i;

	if (!m || !key)
		return NULL;
	for (i = 0; i < n; i++)
		if (m[i].key && !strcmp(m[i].key, key))
			return &m[i];
	return NULL;
}

int hb_config_plugin_path(const struct hb_config *cfg, enum hb_plugin_path which,
			  char *buf, size_t size)
{
	const char *set = which == HB_PLUGIN_SNAPSHOT ? cfg->plugin_snapshot
						      : cfg->plugin_notice_socket;
	const char *name = which == HB_PLUGIN_SNAPSHOT ? "placement.snap"
						       : "hpcbridged.notice";
	const char *sock = cfg->daemon_socket ? cfg->daemon_socket : "";
	const char *slash = strrchr(sock, '/');
	int n;

	if (set)
		n = snprintf(buf, size, "%s", set);
	else
		n = snprintf(buf, size, "%.*s/%s",
			     slash ? (int)(slash - sock) : 1,
			     slash ? sock : "/", name);
	return n < 0 || (size_t)n >= size ? HB_ETOOBIG : 0;
}
