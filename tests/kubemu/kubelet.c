/*
 * kubelet.c - the pods' side: start-up, simulated runs, launchers really
 * run on this host (--execute), logs, termination and graceful deletion.
 *
 * Every pod goes Pending -> Running after --pod-start-ms, on the node
 * "kubemu-node" with IP 127.0.0.1.  What follows depends on the pod:
 *   - an MPI launcher (label training.kubeflow.org/job-role=launcher) is
 *     simulated for --run-ms and ends with exit code 0, or what the
 *     MPIJob's annotations say (kubemu.hpcbridge.io/run-ms, exit-code,
 *     log); with --execute its first container's command and args really
 *     run here, in a session of their own, with the pod's environment,
 *     its ConfigMap volumes materialised in a per-pod directory, a
 *     hostfile naming localhost, and (container.c) the uid and groups
 *     its securityContext asks for and its hostPath, nfs, claim and
 *     emptyDir volumes bound at their mount paths;
 *   - any other pod (workers, pods of clients) runs until it is deleted.
 * A pod's output goes to WORKDIR/NAMESPACE/POD/log, which pods/log
 * serves.  Deleting a running pod sends SIGTERM to its process group,
 * then SIGKILL after --kill-grace-ms; the pod goes away once the process
 * has.  All of this runs on the controller thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "hpcbridge/log.h"
#include "kubemu.h"

#define KUBELET "kubelet"
#define SCHEDULER "default-scheduler"
#define SCHED_RETRY_MS 250 /* an unschedulable pod is tried again */
#define NODE	"kubemu-node"
#define L_ROLE	"training.kubeflow.org/job-role"
#define A_EXIT	"kubemu.hpcbridge.io/exit-code"
#define A_RUN	"kubemu.hpcbridge.io/run-ms"
#define A_LOG	"kubemu.hpcbridge.io/log"
/* Where the hpcbridge launcher reads its runtime from. */
#define HB_RUNTIME_DIR "/opt/hpcbridge/launcher"
#define MAX_ENV	       1024
/* A failed init container restarts after 10 s, doubling up to 300 s
 * (the kubelet's back-off); a container that waits for a Secret or
 * ConfigMap is tried again every second. */
#define BACKOFF_MS     10000
#define BACKOFF_MAX_MS 300000
#define RETRY_MS       1000

extern char **environ;

struct podstate {
	int64_t seen;	   /* first seen (monotonic ms) */
	int64_t finish_at; /* simulated launcher: when it ends */
	int exit_code;	   /* simulated launcher: how */
	pid_t pid;	   /* executed launcher, 0 if none */
	int64_t term_sent; /* SIGTERM sent at */
	int gone;	   /* the pod object is gone */
	int running;	   /* started (or given up): not again */
	/* Executed launchers with init containers: which runs or is due,
	 * and how often it restarted (restartPolicy OnFailure, Always). */
	int init_next;
	int in_init; /* pid is init container init_next */
	int restarts;
	int64_t retry_at; /* a start waits until then (back-off, Secret) */
	int claim_warned; /* the missing claim template was said */
};

/* A launcher process and its pod. */
struct proc {
	pid_t pid;
	char key[600];
};

struct km_kubelet {
	struct km_ctx *ctx;
	struct km_map *pods; /* ns/name -> struct podstate */
	struct proc *procs;
	size_t nprocs, capprocs;
};

struct km_kubelet *km_kubelet_new(struct km_ctx *ctx)
{
	struct km_kubelet *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->ctx = ctx;
	k->pods = km_map_new();
	if (!k->pods) {
		free(k);
		return NULL;
	}
	return k;
}

/* ---- paths ---------------------------------------------------------- */

/* snprintf for paths: HB_ETOOBIG rather than a truncated path. */
static int pathf(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int pathf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? HB_ETOOBIG : 0;
}

static int pod_dir(const struct km_kubelet *k, const char *ns, const char *name,
		   char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/%s/%s", k->ctx->workdir, ns, name);

	return n < 0 || (size_t)n >= cap ? HB_ETOOBIG : 0;
}

static int mkdirs(const char *path)
{
	char tmp[4096];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return HB_ETOOBIG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return HB_EIO;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return HB_EIO;
	return 0;
}

char *km_kubelet_log_path(struct km_kubelet *k, const char *ns,
			  const char *name, const char *init)
{
	char dir[4096], path[4500];

	if (pod_dir(k, ns, name, dir, sizeof(dir)) ||
	    pathf(path, sizeof(path), "%s/log%s%s", dir, init ? ".init-" : "",
		  init ? init : ""))
		return NULL;
	if (access(path, R_OK))
		return NULL;
	return strdup(path);
}

static int write_file(const char *path, const char *text, size_t len,
		      mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ssize_t w;

	if (fd < 0)
		return HB_EIO;
	while (len) {
		w = write(fd, text, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return HB_EIO;
		}
		text += w;
		len -= (size_t)w;
	}
	return close(fd) ? HB_EIO : 0;
}

/* ---- the launcher's environment ------------------------------------- */

struct env {
	char *v[MAX_ENV];
	size_t n;
};

static void env_free(struct env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
}

static const char *env_get(const struct env *e, const char *name, size_t nl)
{
	for (size_t i = e->n; i-- > 0;) {
		if (!strncmp(e->v[i], name, nl) && e->v[i][nl] == '=')
			return e->v[i] + nl + 1;
	}
	return NULL;
}

/* Set NAME=VALUE, replacing an earlier value. */
static int env_set(struct env *e, const char *name, const char *value)
{
	size_t nl = strlen(name);
	char *kv;

	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return HB_ENOMEM;
	for (size_t i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], name, nl) && e->v[i][nl] == '=') {
			free(e->v[i]);
			e->v[i] = kv;
			return 0;
		}
	}
	if (e->n == MAX_ENV - 1) {
		free(kv);
		return HB_ETOOBIG;
	}
	e->v[e->n++] = kv;
	return 0;
}

/* Kubernetes' $(VAR) expansion: defined names are replaced, $$ is $,
 * anything else stays as written. */
static char *expand(const char *s, const struct env *e)
{
	struct hb_buf b;
	char *out;

	hb_buf_init(&b, 0);
	hb_buf_puts(&b, "");
	while (*s) {
		if (s[0] == '$' && s[1] == '$') {
			hb_buf_putc(&b, '$');
			s += 2;
			continue;
		}
		if (s[0] == '$' && s[1] == '(') {
			const char *end = strchr(s + 2, ')');
			const char *v =
				end ? env_get(e, s + 2, (size_t)(end - s - 2))
				    : NULL;

			if (v) {
				hb_buf_puts(&b, v);
				s = end + 1;
				continue;
			}
		}
		hb_buf_putc(&b, *s++);
	}
	out = hb_buf_steal(&b);
	hb_buf_free(&b);
	return out;
}

/* A mounted volume: the pod's path and where it is on this host. */
struct mount {
	char path[1024];
	char local[2048];
};

struct mounts {
	struct mount m[64];
	size_t n;
};

/* A path under a mount, as it is on this host (value itself if none). */
static char *rewrite(const struct mounts *ms, const char *value)
{
	for (size_t i = 0; i < ms->n; i++) {
		size_t n = strlen(ms->m[i].path);
		char *out;

		if (!strncmp(value, ms->m[i].path, n) &&
		    (value[n] == '/' || value[n] == '\0')) {
			if (asprintf(&out, "%s%s", ms->m[i].local, value + n) <
			    0)
				return NULL;
			return out;
		}
	}
	return strdup(value);
}

/* Write value v of a ConfigMap (or, decoded, of a Secret) to path. */
static int write_value(const char *path, const char *v, int secret)
{
	struct hb_buf b;
	int rc;

	if (!secret)
		return write_file(path, v, strlen(v), 0644);
	hb_buf_init(&b, 0);
	rc = hb_buf_unbase64(&b, v, strlen(v));
	if (!rc)
		rc = write_file(path, b.data ? b.data : "", b.len, 0644);
	hb_buf_free(&b);
	return rc ? HB_EIO : 0;
}

/* Materialise a ConfigMap's data (a Secret's, decoded, when secret is
 * set) into dir (items, when given, pick keys and paths).  HB_EAGAIN
 * when it is missing and not optional. */
static int materialise(struct km_kubelet *k, const char *ns, const cJSON *src,
		       int secret, const char *dir)
{
	const char *name = km_str(src, secret ? "secretName" : "name");
	struct km_obj *cm =
		name ? km_store_get(k->ctx->store,
				    secret ? KM_SECRET : KM_CONFIGMAP, ns, name)
		     : NULL;
	const cJSON *data, *items, *kv;
	char path[4096];
	int rc = 0;

	if (!cm)
		return cJSON_IsTrue(km_get(src, "optional")) ? 0 : HB_EAGAIN;
	data = km_get(cm->tree, "data");
	items = km_get(src, "items");
	if (cJSON_IsArray(items)) {
		cJSON_ArrayForEach (kv, items) {
			const char *key = km_str(kv, "key");
			const char *p = km_str(kv, "path");
			const char *val = key ? km_str(data, key) : NULL;

			if (!val || !p || strstr(p, ".."))
				continue;
			if (pathf(path, sizeof(path), "%s/%s", dir, p) ||
			    write_value(path, val, secret))
				rc = HB_EIO;
		}
	} else {
		cJSON_ArrayForEach (kv, data) {
			if (!cJSON_IsString(kv) || strchr(kv->string, '/') ||
			    !strcmp(kv->string, "..") ||
			    !strcmp(kv->string, "."))
				continue;
			if (pathf(path, sizeof(path), "%s/%s", dir,
				  kv->string) ||
			    write_value(path, kv->valuestring, secret))
				rc = HB_EIO;
		}
	}
	km_obj_unref(cm);
	return rc;
}

/* The hostfile the launcher gets: localhost with the job's slots. */
static int hostfile_slots(struct km_kubelet *k, const cJSON *pod)
{
	const cJSON *ref;
	struct km_obj *job = NULL;
	int slots = 1, workers = 0;

	if (k->ctx->o->hostfile_slots)
		return k->ctx->o->hostfile_slots;
	cJSON_ArrayForEach (
		ref, km_get(km_get(pod, "metadata"), "ownerReferences")) {
		const char *kind = km_str(ref, "kind");

		if (kind && !strcmp(kind, "MPIJob") && km_str(ref, "name"))
			job = km_store_get(k->ctx->store, KM_MPIJOB,
					   km_meta_str(pod, "namespace"),
					   km_str(ref, "name"));
	}
	if (job) {
		const cJSON *spec = km_get(job->tree, "spec");
		const cJSON *spw = km_get(spec, "slotsPerWorker");
		const cJSON *w = km_get(
			km_get(km_get(spec, "mpiReplicaSpecs"), "Worker"),
			"replicas");

		if (cJSON_IsNumber(spw) && spw->valueint > 0)
			slots = spw->valueint;
		if (cJSON_IsNumber(w))
			workers = w->valueint;
		km_obj_unref(job);
	}
	return workers > 0 ? workers * slots : slots;
}

/* A hostPath volume's path, checked or made as its type says. */
static int host_path(const cJSON *v, const char *p, char *why, size_t cap)
{
	const char *type = km_str(km_get(v, "hostPath"), "type");
	struct stat sb;

	if (!stat(p, &sb)) {
		if (type && !strcmp(type, "Directory") && !S_ISDIR(sb.st_mode))
			goto bad;
		return 0;
	}
	/* The runtime makes a missing path with no type, as
	 * DirectoryOrCreate says. */
	if (!type || !*type || !strcmp(type, "DirectoryOrCreate"))
		return mkdirs(p) ? HB_EIO : 0;
bad:
	snprintf(why, cap,
		 "MountVolume.SetUp failed for volume \"%s\" : hostPath type "
		 "check failed: %s is not a directory",
		 km_str(v, "name"), p);
	return HB_EIO;
}

/*
 * Where volume v of pod lives on this host (into local): the path of a
 * hostPath; the export path of an nfs volume (taken as mounted there);
 * --pvc-root/NAMESPACE/CLAIM for a persistentVolumeClaim; else
 * dir/volumes/NAME, with a ConfigMap's data written in.  *bindable: the
 * volume is bound at its mount paths (not ConfigMaps, Secrets, nor the
 * MPI Operator's /etc/mpi: those paths are rewritten in the
 * environment).  HB_EAGAIN when a ConfigMap is missing.
 */
static int volume_local(struct km_kubelet *k, const cJSON *pod, const cJSON *v,
			const char *dir, char *local, size_t cap, int *bindable,
			int *ro, char *why, size_t wcap)
{
	const char *ns = km_meta_str(pod, "namespace");
	const char *vn = km_str(v, "name");
	const cJSON *cm = km_get(v, "configMap"), *nfs = km_get(v, "nfs");
	const cJSON *pvc = km_get(v, "persistentVolumeClaim");
	const cJSON *fsg = km_get(
		km_get(km_get(pod, "spec"), "securityContext"), "fsGroup");
	const char *hp = km_str(km_get(v, "hostPath"), "path");
	int rc;

	if (!strcmp(vn, "mpi-job-config"))
		return pathf(local, cap, "%s/etc-mpi", dir) ? HB_EIO : 0;
	*bindable = 1;
	if (hp) {
		snprintf(local, cap, "%s", hp);
		return host_path(v, hp, why, wcap);
	}
	if (km_str(nfs, "path")) {
		struct stat sb;

		snprintf(local, cap, "%s", km_str(nfs, "path"));
		*ro = cJSON_IsTrue(km_get(nfs, "readOnly"));
		if (stat(local, &sb) || !S_ISDIR(sb.st_mode)) {
			snprintf(why, wcap,
				 "MountVolume.SetUp failed for volume "
				 "\"%.100s\" : mount failed: %.200s:%.400s is "
				 "not a directory on this host (NFS exports are "
				 "taken as mounted at their path)",
				 vn, km_str(nfs, "server") ?: "", local);
			return HB_EIO;
		}
		return 0;
	}
	if (km_str(pvc, "claimName") && k->ctx->o->pvc_root &&
	    !strchr(km_str(pvc, "claimName"), '/')) {
		*ro = cJSON_IsTrue(km_get(pvc, "readOnly"));
		if (pathf(local, cap, "%s/%s/%s", k->ctx->o->pvc_root, ns,
			  km_str(pvc, "claimName")) ||
		    mkdirs(local)) {
			snprintf(why, wcap, "cannot make the claim's %.400s",
				 local);
			return HB_EIO;
		}
		/* The kubelet gives the volume to the fsGroup (its top
		 * directory here), group-writable and setgid. */
		if (cJSON_IsNumber(fsg) && fsg->valuedouble >= 0 &&
		    !chown(local, (uid_t)-1, (gid_t)fsg->valuedouble))
			chmod(local, 02775);
		return 0;
	}
	*bindable = km_get(v, "emptyDir") != NULL;
	if (pathf(local, cap, "%s/volumes/%s", dir, vn) || mkdirs(local))
		return HB_EIO;
	if (*bindable) {
		/* The kubelet makes an emptyDir world-writable, owned by
		 * the fsGroup (setgid) when there is one. */
		if (cJSON_IsNumber(fsg) && fsg->valuedouble >= 0 &&
		    !chown(local, (uid_t)-1, (gid_t)fsg->valuedouble))
			chmod(local, 02777);
		else
			chmod(local, 0777);
	}
	if (km_get(v, "secret")) {
		/* Its data when the Secret exists; else the volume stays
		 * empty (the emulated operator makes no ssh Secret). */
		materialise(k, ns, km_get(v, "secret"), 1, local);
		return 0;
	}
	if (!cm)
		return 0;
	rc = materialise(k, ns, cm, 0, local);
	if (rc == HB_EAGAIN)
		snprintf(why, wcap, "configmap \"%s\" not found",
			 km_str(cm, "name") ? km_str(cm, "name") : "");
	return rc == HB_EAGAIN ? rc : 0;
}

/*
 * A volumeMount m of a volume at local: bound at its mountPath (l) when
 * the volume is bindable and the path differs or must be read-only, the
 * mount point made on this host if missing; else recorded in ms, for the
 * environment's rewriting.
 */
static int add_mount(struct mounts *ms, struct km_launch *l, const cJSON *m,
		     const char *local, int bindable, int ro, char *why,
		     size_t wcap)
{
	const char *mp = km_str(m, "mountPath");
	const char *sub = km_str(m, "subPath");
	char dst[1024], src[2048];
	struct stat sb;
	size_t n;

	if (!mp || snprintf(dst, sizeof(dst), "%s", mp) >= (int)sizeof(dst))
		return 0;
	while ((n = strlen(dst)) > 1 && dst[n - 1] == '/')
		dst[n - 1] = '\0';
	if (sub && *sub && !strstr(sub, "..")) {
		if (pathf(src, sizeof(src), "%s/%s", local, sub))
			return 0;
		if (stat(src, &sb))
			mkdirs(src);
	} else {
		snprintf(src, sizeof(src), "%s", local);
	}
	ro |= cJSON_IsTrue(km_get(m, "readOnly"));
	/* Binding takes root (CAP_SYS_ADMIN): without it, paths are
	 * rewritten as for ConfigMaps. */
	if (!bindable || (!strcmp(dst, src) && !ro) || geteuid() != 0) {
		if (ms->n == sizeof(ms->m) / sizeof(ms->m[0]))
			return 0;
		snprintf(ms->m[ms->n].path, sizeof(ms->m[0].path), "%s", dst);
		snprintf(ms->m[ms->n].local, sizeof(ms->m[0].local), "%s", src);
		ms->n++;
		return 0;
	}
	if (l->nbinds == KM_MAX_BINDS) {
		snprintf(why, wcap, "more than %d volume mounts", KM_MAX_BINDS);
		return HB_EIO;
	}
	/* No image gives the mount point: make it here. */
	if (stat(dst, &sb)) {
		int fd = -1;

		if (!stat(src, &sb) && !S_ISDIR(sb.st_mode)) {
			char parent[1024];
			char *slash;

			snprintf(parent, sizeof(parent), "%s", dst);
			slash = strrchr(parent, '/');
			if (slash && slash != parent)
				*slash = '\0';
			mkdirs(parent);
			fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
		} else {
			fd = mkdirs(dst) ? -1 : 0;
		}
		if (fd < 0) {
			snprintf(why, wcap,
				 "cannot make the mount point %.400s: %s", dst,
				 strerror(errno));
			return HB_EIO;
		}
	}
	snprintf(l->binds[l->nbinds].src, sizeof(l->binds[0].src), "%s", src);
	snprintf(l->binds[l->nbinds].dst, sizeof(l->binds[0].dst), "%s", dst);
	l->binds[l->nbinds++].ro = ro;
	return 0;
}

/* The ConfigMap (the Secret, when secret is set) rn of namespace ns in
 * *o (NULL: missing, and optional); HB_EPERM with the kubelet's message
 * when it is missing and not optional. */
static int ref_get(struct km_kubelet *k, const char *ns, int secret,
		   const char *rn, int opt, struct km_obj **o, char *why,
		   size_t cap)
{
	*o = km_store_get(k->ctx->store, secret ? KM_SECRET : KM_CONFIGMAP, ns,
			  rn);
	if (*o || opt)
		return 0;
	snprintf(why, cap, "%s \"%s\" not found",
		 secret ? "secret" : "configmap", rn);
	return HB_EPERM;
}

/* A value of a ConfigMap's data, or of a Secret's decoded (caller frees;
 * NULL on ENOMEM, or for a value that is not base64). */
static char *ref_value(const char *v, int secret)
{
	struct hb_buf b;
	char *out = NULL;

	if (!secret)
		return strdup(v);
	hb_buf_init(&b, 0);
	if (!hb_buf_unbase64(&b, v, strlen(v)) && !hb_buf_putc(&b, 0))
		out = hb_buf_steal(&b);
	hb_buf_free(&b);
	return out;
}

/*
 * The value of an env entry's valueFrom (from) in *out (caller frees;
 * NULL: the variable is left out, an optional ConfigMap, Secret or key
 * that is missing): fieldRef of the pod's name, namespace, node and IPs,
 * configMapKeyRef, secretKeyRef (data decoded).  HB_EPERM with why set
 * to the kubelet's message when what is named is missing and not
 * optional (the container then waits: CreateContainerConfigError).
 */
static int value_from(struct km_kubelet *k, const cJSON *pod, const cJSON *from,
		      char **out, char *why, size_t cap)
{
	const char *ns = km_meta_str(pod, "namespace");
	const char *fp = km_str(km_get(from, "fieldRef"), "fieldPath");
	const cJSON *ref = km_get(from, "secretKeyRef");
	int secret = ref != NULL, opt;
	const char *rn, *key, *v;
	struct km_obj *o;
	int rc;

	*out = NULL;
	if (fp) {
		v = !strcmp(fp, "metadata.name") ? km_meta_str(pod, "name")
		    : !strcmp(fp, "metadata.namespace") ? ns
		    : !strcmp(fp, "spec.nodeName")
			    ? km_str(km_get(pod, "spec"), "nodeName") ?: NODE
		    : (!strcmp(fp, "status.podIP") ||
		       !strcmp(fp, "status.hostIP"))
			    ? "127.0.0.1"
			    : "";
		*out = strdup(v ?: "");
		return *out ? 0 : HB_ENOMEM;
	}
	if (!ref)
		ref = km_get(from, "configMapKeyRef");
	if (!ref) {
		*out = strdup("");
		return *out ? 0 : HB_ENOMEM;
	}
	rn = km_str(ref, "name") ?: "";
	key = km_str(ref, "key") ?: "";
	opt = cJSON_IsTrue(km_get(ref, "optional"));
	rc = ref_get(k, ns, secret, rn, opt, &o, why, cap);
	if (rc || !o)
		return rc;
	v = km_str(km_get(o->tree, "data"), key);
	if (!v) {
		km_obj_unref(o);
		if (opt)
			return 0;
		snprintf(why, cap, "couldn't find key %s in %s %s/%s", key,
			 secret ? "Secret" : "ConfigMap", ns, rn);
		return HB_EPERM;
	}
	*out = ref_value(v, secret);
	km_obj_unref(o);
	return *out ? 0 : HB_ENOMEM;
}

/*
 * An envFrom entry e (configMapRef or secretRef, with a prefix) into
 * env: every key of the object's data, values as they are (no $(VAR)
 * expansion), mount paths rewritten as for env.  HB_EPERM as
 * value_from when the object is missing and not optional.
 */
static int env_from(struct km_kubelet *k, const cJSON *pod, const cJSON *e,
		    struct env *env, const struct mounts *ms, char *why,
		    size_t cap)
{
	const cJSON *ref = km_get(e, "secretRef"), *kv;
	const char *prefix = km_str(e, "prefix") ?: "";
	int secret = ref != NULL, rc;
	struct km_obj *o;

	if (!ref)
		ref = km_get(e, "configMapRef");
	if (!ref)
		return 0;
	rc = ref_get(k, km_meta_str(pod, "namespace"), secret,
		     km_str(ref, "name") ?: "",
		     cJSON_IsTrue(km_get(ref, "optional")), &o, why, cap);
	if (rc || !o)
		return rc;
	cJSON_ArrayForEach (kv, km_get(o->tree, "data")) {
		char name[512], *v, *x;

		/* The kubelet skips names it cannot set. */
		if (!cJSON_IsString(kv) || !*kv->string ||
		    strchr(kv->string, '=') ||
		    pathf(name, sizeof(name), "%s%s", prefix, kv->string))
			continue;
		v = ref_value(kv->valuestring, secret);
		x = v ? rewrite(ms, v) : NULL;
		if (x)
			env_set(env, name, x);
		free(v);
		free(x);
	}
	km_obj_unref(o);
	return 0;
}

/*
 * Prepare and start container c (an init container or the first one) of
 * the launcher pod (ns/name): volumes, hostfile, environment, command;
 * its output goes to the pod directory's logname.  *pid gets the
 * process.  HB_EAGAIN when a ConfigMap volume is missing, HB_EPERM when
 * the container cannot be made (a Secret or ConfigMap key is missing);
 * *why explains these and other failures.
 */
static int spawn(struct km_kubelet *k, const cJSON *pod, const cJSON *c,
		 const char *logname, pid_t *pid, char *why, size_t whycap)
{
	const cJSON *spec = km_get(pod, "spec");
	const char *ns = km_meta_str(pod, "namespace");
	const char *name = km_meta_str(pod, "name");
	const cJSON *v, *m, *e;
	char dir[4096], path[4200], hostfile[4300], tmp[4200], exe[4096];
	struct mounts *ms = calloc(1, sizeof(*ms));
	struct km_launch *launch = calloc(1, sizeof(*launch));
	struct env *env = calloc(1, sizeof(*env));
	char *argv[256];
	size_t argc = 0;
	const char *wd;
	struct stat sb;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int rc = HB_EIO, fa_ok = 0, at_ok = 0;

	*pid = 0;
	if (!ms || !env || !launch) {
		rc = HB_ENOMEM;
		goto out;
	}
	rc = km_container_ident(pod, c, &launch->id, why, whycap);
	if (rc)
		goto out;
	rc = HB_EIO;
	if (pod_dir(k, ns, name, dir, sizeof(dir)) || mkdirs(dir)) {
		snprintf(why, whycap, "cannot make %.400s", dir);
		goto out;
	}
	/* The operator's /etc/mpi: a hostfile naming this host. */
	if (pathf(path, sizeof(path), "%s/etc-mpi", dir) ||
	    pathf(hostfile, sizeof(hostfile), "%s/hostfile", path)) {
		snprintf(why, whycap, "the work directory's path is too long");
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "localhost slots=%d\n",
		 hostfile_slots(k, pod));
	if (mkdirs(path) || write_file(hostfile, tmp, strlen(tmp), 0644)) {
		snprintf(why, whycap, "cannot write %.400s", hostfile);
		goto out;
	}
	/* Volumes. */
	cJSON_ArrayForEach (v, km_get(spec, "volumes")) {
		const char *vn = km_str(v, "name");
		char local[2048];
		int bindable = 0, ro = 0;

		if (!vn || strchr(vn, '/'))
			continue;
		rc = volume_local(k, pod, v, dir, local, sizeof(local),
				  &bindable, &ro, why, whycap);
		if (rc)
			goto out;
		rc = HB_EIO;
		cJSON_ArrayForEach (m, km_get(c, "volumeMounts")) {
			const char *mn = km_str(m, "name");

			if (mn && !strcmp(mn, vn) &&
			    add_mount(ms, launch, m, local, bindable, ro, why,
				      whycap))
				goto out;
		}
	}
	/* The environment: the host's basics, what this machine needs for
	 * Open MPI, the container's own (mount paths rewritten), and the
	 * --exec-env additions. */
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	mkdirs(tmp);
	env_set(env, "PATH",
		getenv("PATH") ? getenv("PATH")
			       : "/usr/local/bin:/usr/bin:/bin");
	env_set(env, "HOME", dir);
	env_set(env, "TMPDIR", tmp);
	env_set(env, "HOSTNAME",
		km_str(spec, "hostname") ? km_str(spec, "hostname") : name);
	env_set(env, "HPCBRIDGE_HOSTFILE", hostfile);
	if (geteuid() == 0) {
		env_set(env, "OMPI_ALLOW_RUN_AS_ROOT", "1");
		env_set(env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
	}
	env_set(env, "OMPI_MCA_rmaps_base_oversubscribe", "1");
	for (size_t i = 0; i < ms->n; i++) {
		if (!strcmp(ms->m[i].path, HB_RUNTIME_DIR)) {
			snprintf(path, sizeof(path), "%s/runtime.sh",
				 ms->m[i].local);
			env_set(env, "HPCBRIDGE_RUNTIME", path);
		}
	}
	cJSON_ArrayForEach (e, km_get(c, "envFrom")) {
		rc = env_from(k, pod, e, env, ms, why, whycap);
		if (rc)
			goto out;
	}
	rc = HB_EIO;
	cJSON_ArrayForEach (e, km_get(c, "env")) {
		const char *n = km_str(e, "name");
		char *x = NULL, *y;

		if (!n)
			continue;
		if (km_get(e, "valueFrom")) {
			rc = value_from(k, pod, km_get(e, "valueFrom"), &x, why,
					whycap);
			if (rc)
				goto out;
			rc = HB_EIO;
			if (!x)
				continue; /* optional, and missing */
		}
		y = expand(x ? x : km_str(e, "value") ?: "", env);
		free(x);
		x = y ? rewrite(ms, y) : NULL;
		free(y);
		if (x)
			env_set(env, n, x);
		free(x);
	}
	for (size_t i = 0; i < k->ctx->o->nexec_env; i++) {
		const char *kv = k->ctx->o->exec_env[i];
		char nm[256];
		size_t nl = (size_t)(strchr(kv, '=') - kv);

		if (nl >= sizeof(nm))
			continue;
		memcpy(nm, kv, nl);
		nm[nl] = '\0';
		env_set(env, nm, kv + nl + 1);
	}
	/* The command: command + args, $(VAR)-expanded. */
	cJSON_ArrayForEach (e, km_get(c, "command")) {
		if (cJSON_IsString(e) && argc < 255)
			argv[argc++] = expand(e->valuestring, env);
	}
	cJSON_ArrayForEach (e, km_get(c, "args")) {
		if (cJSON_IsString(e) && argc < 255)
			argv[argc++] = expand(e->valuestring, env);
	}
	argv[argc] = NULL;
	if (!argc || !argv[0]) {
		snprintf(why, whycap,
			 "the container has no command: images are not run "
			 "here, only commands");
		rc = HB_EINVAL;
		goto out;
	}
	wd = km_str(c, "workingDir");
	if (!wd || stat(wd, &sb) || !S_ISDIR(sb.st_mode))
		wd = dir;
	if (pathf(path, sizeof(path), "%s/%s", dir, logname)) {
		snprintf(why, whycap, "the log's path is too long");
		goto out;
	}
	env->v[env->n] = NULL;
	if (launch->id.set || launch->nbinds) {
		/* The container's /tmp is writable by whoever it runs as. */
		chmod(tmp, 01777);
		rc = km_container_exec(launch, argv, env->v, wd, path, pid, why,
				       whycap);
		if (!rc)
			hb_logf(HB_LOG_INFO,
				(struct hb_log_field[]){
					HB_LOG_STR("pod", name),
					HB_LOG_INT("pid", *pid),
					HB_LOG_INT("uid", launch->id.uid) },
				3, "kubelet: started %s of %s/%s",
				km_str(c, "name") ?: "", ns, name);
		goto out;
	}
	if (posix_spawn_file_actions_init(&fa))
		goto out;
	fa_ok = 1;
	if (posix_spawnattr_init(&at))
		goto out;
	at_ok = 1;
	sigemptyset(&none);
	{
		sigset_t def;

		sigemptyset(&def);
		sigaddset(&def, SIGPIPE);
		sigaddset(&def, SIGTERM);
		sigaddset(&def, SIGINT);
		sigaddset(&def, SIGHUP);
		posix_spawnattr_setsigdefault(&at, &def);
	}
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
					      POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY,
					     0) ||
	    posix_spawn_file_actions_addopen(
		    &fa, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0644) ||
	    posix_spawn_file_actions_adddup2(&fa, 1, 2) ||
	    posix_spawn_file_actions_addchdir_np(&fa, wd))
		goto out;
	if (km_container_resolve(argv[0], env->v, exe, sizeof(exe))) {
		snprintf(why, whycap,
			 "exec: \"%s\": executable file not found in $PATH",
			 argv[0]);
		rc = HB_EIO;
		goto out;
	}
	rc = posix_spawn(pid, exe, &fa, &at, argv, env->v);
	if (rc) {
		snprintf(why, whycap, "cannot run %s: %s", argv[0],
			 strerror(rc));
		*pid = 0;
		rc = HB_EIO;
		goto out;
	}
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("pod", name),
					 HB_LOG_INT("pid", *pid) },
		2, "kubelet: started %s of %s/%s", km_str(c, "name") ?: "", ns,
		name);
	rc = 0;
out:
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (at_ok)
		posix_spawnattr_destroy(&at);
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	if (env)
		env_free(env);
	free(env);
	free(ms);
	free(launch);
	return rc;
}

/* ---- events --------------------------------------------------------- */

void km_event_record(struct km_ctx *ctx, const cJSON *obj, const char *type,
		     const char *reason, const char *msg, const char *component)
{
	cJSON *ev = cJSON_CreateObject(), *meta, *inv, *src;
	const char *ns = km_meta_str(obj, "namespace");
	const char *name = km_meta_str(obj, "name");
	char ename[400], ts[32];
	struct timespec now;

	if (!ev || !ns || !name)
		goto fail;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(ename, sizeof(ename), "%.253s.%016llx", name,
		 (unsigned long long)now.tv_sec * 1000000000ull +
			 (unsigned long long)now.tv_nsec);
	km_timestamp(ts, sizeof(ts), 0);
	/* Members made in place: a failure frees them with ev. */
	meta = km_obj_at(ev, "metadata");
	inv = km_obj_at(ev, "involvedObject");
	src = km_obj_at(ev, "source");
	if (!meta || !inv || !src || km_set_str(ev, "apiVersion", "v1") ||
	    km_set_str(ev, "kind", "Event") ||
	    km_set_str(meta, "name", ename) ||
	    km_set_str(meta, "namespace", ns) ||
	    km_set_str(inv, "kind", km_str(obj, "kind")) ||
	    km_set_str(inv, "namespace", ns) || km_set_str(inv, "name", name) ||
	    km_set_str(inv, "uid", km_meta_str(obj, "uid")) ||
	    km_set_str(inv, "apiVersion", km_str(obj, "apiVersion")) ||
	    km_set_str(inv, "resourceVersion",
		       km_meta_str(obj, "resourceVersion")) ||
	    km_set_str(ev, "reason", reason) ||
	    km_set_str(ev, "message", msg) ||
	    km_set_str(src, "component", component) ||
	    km_set_str(ev, "firstTimestamp", ts) ||
	    km_set_str(ev, "lastTimestamp", ts) || km_set_num(ev, "count", 1) ||
	    km_set_str(ev, "type", type) ||
	    km_set(ev, "eventTime", cJSON_CreateNull()) ||
	    km_set_str(ev, "reportingComponent", component) ||
	    km_set_str(ev, "reportingInstance", ""))
		goto fail;
	km_internal_create(ctx, KM_EVENT, ev, component, NULL);
	return;
fail:
	cJSON_Delete(ev);
}

/* ---- the sync ------------------------------------------------------- */

static struct podstate *state_of(struct km_kubelet *k, const char *key)
{
	struct podstate *ps = km_map_get(k->pods, key);

	if (ps)
		return ps;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->seen = km_now_ms();
	if (km_map_put(k->pods, key, ps, NULL)) {
		free(ps);
		return NULL;
	}
	return ps;
}

static void drop_state(struct km_kubelet *k, const char *key)
{
	free(km_map_del(k->pods, key));
}

static void add_proc(struct km_kubelet *k, pid_t pid, const char *key)
{
	if (k->nprocs == k->capprocs) {
		size_t cap = k->capprocs ? k->capprocs * 2 : 16;
		struct proc *np = realloc(k->procs, cap * sizeof(*np));

		if (!np) {
			/* Cannot track it: end it rather than lose it. */
			kill(-pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return;
		}
		k->procs = np;
		k->capprocs = cap;
	}
	k->procs[k->nprocs].pid = pid;
	snprintf(k->procs[k->nprocs].key, sizeof(k->procs[0].key), "%s", key);
	k->nprocs++;
}

static const char *annotation(const cJSON *pod, const char *key)
{
	return km_str(km_get(km_get(pod, "metadata"), "annotations"), key);
}

static int is_launcher(const cJSON *pod)
{
	const char *role =
		km_str(km_get(km_get(pod, "metadata"), "labels"), L_ROLE);

	return role && !strcmp(role, "launcher");
}

/* Signal a process group: SIGTERM first, SIGKILL once the grace period
 * is over.  *next gets when to look again. */
static void terminate(struct km_kubelet *k, struct podstate *ps, int64_t now,
		      int64_t *next)
{
	int grace = k->ctx->o->kill_grace_ms;

	if (!ps->term_sent) {
		kill(-ps->pid, SIGTERM);
		ps->term_sent = now;
		*next = now + grace;
	} else if (now >= ps->term_sent + grace) {
		kill(-ps->pid, SIGKILL);
		*next = now + 200;
	} else {
		*next = ps->term_sent + grace;
	}
}

static void fail_start(struct km_kubelet *k, const char *ns, const char *name,
		       const char *why)
{
	struct km_podst sa = { .cid = "kubemu://none" };
	struct km_podst ea = { .code = 128,
			       .reason = "StartError",
			       .message = why };

	km_internal_update(k->ctx, KM_POD, ns, name, KUBELET, NULL,
			   km_podst_running, &sa, NULL);
	km_internal_update(k->ctx, KM_POD, ns, name, KUBELET, "status",
			   km_podst_ended, &ea, NULL);
}

/* Container cname cannot be made: it waits with
 * CreateContainerConfigError, and a Warning event says why (once, as
 * long as the reason stays the same). */
static void config_wait(struct km_kubelet *k, struct km_obj *pod,
			const char *cname, const char *why)
{
	struct km_podst wa = { .container = cname,
			       .reason = "CreateContainerConfigError",
			       .message = why };
	struct km_obj *out = NULL;
	char msg[1100];

	km_internal_update(k->ctx, KM_POD, pod->ns, pod->name, KUBELET,
			   "status", km_podst_waiting, &wa, &out);
	if (!out)
		return; /* said already */
	km_obj_unref(out);
	hb_log(HB_LOG_WARN, "kubelet: %s/%s: %s", pod->ns, pod->name, why);
	snprintf(msg, sizeof(msg), "Error: %s", why);
	km_event_record(k->ctx, pod->tree, "Warning", "Failed", msg, KUBELET);
}

/* The kubelet's verifyRunAsNonRoot for every container, init ones
 * first: 1 (the pod waits, and an Event says why) when one cannot
 * start. */
static int config_error(struct km_kubelet *k, struct km_obj *pod)
{
	static const char *const lists[] = { "initContainers", "containers" };
	const cJSON *spec = km_get(pod->tree, "spec"), *c;
	struct km_ident id;
	char why[1024];

	for (size_t i = 0; i < 2; i++) {
		cJSON_ArrayForEach (c, km_get(spec, lists[i])) {
			if (!km_container_ident(pod->tree, c, &id, why,
						sizeof(why))) {
				continue;
			}
			config_wait(k, pod, km_str(c, "name") ?: "", why);
			return 1;
		}
	}
	return 0;
}

/* Whether a failed init container of pod is restarted in place (else
 * the pod fails): restartPolicy OnFailure or Always. */
static int restarts_init(const cJSON *pod)
{
	const char *rp = km_str(km_get(pod, "spec"), "restartPolicy");

	return !rp || strcmp(rp, "Never");
}

/* Init container ps->init_next of pod ended with code (reason, message):
 * the next container is due (through the pod's sync), or the pod fails
 * (restartPolicy Never), or the container restarts after a back-off. */
static void init_ended(struct km_kubelet *k, struct km_obj *pod,
		       struct podstate *ps, int code, const char *reason,
		       const char *message)
{
	const cJSON *c = cJSON_GetArrayItem(
		km_get(km_get(pod->tree, "spec"), "initContainers"),
		ps->init_next);
	struct km_podst ea = { .index = ps->init_next,
			       .code = code,
			       .reason = reason,
			       .message = message };
	char back[1200];

	ps->in_init = 0;
	if (!code) {
		ps->init_next++;
		ps->restarts = 0;
		ps->running = 0;
	} else if (restarts_init(pod->tree)) {
		int64_t ms = BACKOFF_MS;

		for (int i = 0; i < ps->restarts && ms < BACKOFF_MAX_MS; i++)
			ms *= 2;
		if (ms > BACKOFF_MAX_MS)
			ms = BACKOFF_MAX_MS;
		ps->restarts++;
		ps->retry_at = km_now_ms() + ms;
		ps->running = 0;
		snprintf(back, sizeof(back),
			 "back-off %llds restarting failed container=%s "
			 "pod=%s_%s(%s)",
			 (long long)(ms / 1000), km_str(c, "name") ?: "",
			 pod->name, pod->ns,
			 km_meta_str(pod->tree, "uid") ?: "");
		ea.restart = 1;
		ea.message = back;
	} else {
		ea.fail = 1;
	}
	km_internal_update(k->ctx, KM_POD, pod->ns, pod->name, KUBELET,
			   "status", km_podst_init_ended, &ea, NULL);
}

/*
 * Start what is due in an executed launcher: its next init container,
 * else its first container.  A missing ConfigMap volume, Secret or key
 * makes it wait and try again; a failure to start fails the container
 * (StartError).
 */
static void start_exec(struct km_kubelet *k, struct km_obj *pod,
		       struct podstate *ps, int64_t now, int64_t *next)
{
	const cJSON *spec = km_get(pod->tree, "spec");
	const cJSON *inits = km_get(spec, "initContainers");
	int init = ps->init_next < cJSON_GetArraySize(inits);
	const cJSON *c =
		init ? cJSON_GetArrayItem(inits, ps->init_next)
		     : cJSON_GetArrayItem(km_get(spec, "containers"), 0);
	const char *cname = km_str(c, "name") ?: "";
	char logname[300], dir[4096], logp[4500], cid[64], why[1024] = "";
	char key[600];
	struct km_podst sa = { .index = ps->init_next, .cid = cid };
	int rc;

	snprintf(logname, sizeof(logname), init ? "log.init-%s" : "log", cname);
	if (strchr(cname, '/')) {
		snprintf(why, sizeof(why), "invalid container name \"%.200s\"",
			 cname);
		rc = HB_EINVAL;
	} else {
		rc = spawn(k, pod->tree, c, logname, &ps->pid, why,
			   sizeof(why));
	}
	if (rc == HB_EAGAIN || rc == HB_EPERM) {
		/* A ConfigMap volume, Secret or key is missing: wait. */
		hb_log(HB_LOG_INFO, "kubelet: %s/%s: %s", pod->ns, pod->name,
		       why);
		if (rc == HB_EPERM)
			config_wait(k, pod, cname, why);
		ps->retry_at = now + RETRY_MS;
		*next = ps->retry_at;
		return;
	}
	ps->running = 1;
	if (rc) {
		hb_log(HB_LOG_WARN, "kubelet: %s/%s: %s", pod->ns, pod->name,
		       why);
		if (!strchr(logname, '/') &&
		    !pod_dir(k, pod->ns, pod->name, dir, sizeof(dir)) &&
		    !pathf(logp, sizeof(logp), "%s/%s", dir, logname))
			write_file(logp, why, strlen(why), 0644);
		if (init) {
			ps->in_init = 1;
			init_ended(k, pod, ps, 128, "StartError", why);
		} else {
			fail_start(k, pod->ns, pod->name, why);
		}
		km_event_record(k->ctx, pod->tree, "Warning",
				strncmp(why, "MountVolume", 11) ? "Failed"
								: "FailedMount",
				why, KUBELET);
		return;
	}
	snprintf(key, sizeof(key), "%s/%s", pod->ns, pod->name);
	add_proc(k, ps->pid, key);
	snprintf(cid, sizeof(cid), "kubemu://%d", (int)ps->pid);
	ps->in_init = init;
	km_internal_update(k->ctx, KM_POD, pod->ns, pod->name, KUBELET, NULL,
			   init ? km_podst_init_running : km_podst_running, &sa,
			   NULL);
}

/* A pod that is not executed: its init containers are taken to succeed
 * at once (with empty logs), then it runs; a launcher ends after
 * --run-ms or what its annotations say. */
static void start_simulated(struct km_kubelet *k, struct km_obj *pod,
			    struct podstate *ps, int64_t now, int64_t *next)
{
	const char *ns = pod->ns, *name = pod->name;
	int launcher = is_launcher(pod->tree);
	const char *text = launcher ? annotation(pod->tree, A_LOG) : NULL;
	char dir[4096], logp[4500], cid[64], def[600];
	struct km_podst sa = { .cid = cid };
	const cJSON *c;

	if (pod_dir(k, ns, name, dir, sizeof(dir)) || mkdirs(dir))
		return;
	cJSON_ArrayForEach (
		c, km_get(km_get(pod->tree, "spec"), "initContainers")) {
		if (!pathf(logp, sizeof(logp), "%s/log.init-%s", dir,
			   km_str(c, "name") ?: ""))
			write_file(logp, "", 0, 0644);
	}
	snprintf(logp, sizeof(logp), "%s/log", dir);
	if (launcher && !text) {
		snprintf(def, sizeof(def),
			 "hb-kubemu: simulated launcher %s/%s\n", ns, name);
		text = def;
	}
	write_file(logp, text ? text : "", text ? strlen(text) : 0, 0644);
	if (launcher) {
		const char *rm = annotation(pod->tree, A_RUN);
		const char *ec = annotation(pod->tree, A_EXIT);
		uint64_t v;

		ps->finish_at = now + k->ctx->o->run_ms;
		if (rm && !km_parse_u64(rm, &v))
			ps->finish_at = now + (int64_t)v;
		ps->exit_code =
			ec && !km_parse_u64(ec, &v) && v < 256 ? (int)v : 0;
		*next = ps->finish_at;
	}
	km_uuid(cid + snprintf(cid, sizeof(cid), "kubemu://"));
	ps->running = 1;
	km_internal_update(k->ctx, KM_POD, ns, name, KUBELET, NULL,
			   km_podst_running, &sa, NULL);
}

static void start_pod(struct km_kubelet *k, struct km_obj *pod,
		      struct podstate *ps, int64_t now, int64_t *next)
{
	char dir[4096];

	if (config_error(k, pod)) {
		ps->running = 1; /* tried; not again */
		return;
	}
	if (!k->ctx->o->execute || !is_launcher(pod->tree)) {
		start_simulated(k, pod, ps, now, next);
		return;
	}
	if (pod_dir(k, pod->ns, pod->name, dir, sizeof(dir)) || mkdirs(dir))
		return;
	start_exec(k, pod, ps, now, next);
}

/* ---- the scheduler -------------------------------------------------- */

/*
 * The resource claim controller's part: a pod that claims from a
 * template that does not exist gets a Warning event, once, and stays
 * Pending, unbound; it goes on once the template exists (dra.c).
 */
static int claims_ready(struct km_kubelet *k, struct km_obj *pod,
			struct podstate *ps)
{
	char msg[600];

	if (!km_dra_missing(k->ctx, pod->tree, msg, sizeof(msg)))
		return 1;
	if (!ps->claim_warned) {
		km_event_record(k->ctx, pod->tree, "Warning",
				"FailedResourceClaimCreation", msg,
				"resource_claim");
		ps->claim_warned = 1;
	}
	return 0;
}

static int bind_pod(void *arg, cJSON *pod)
{
	cJSON *spec = km_obj_at(pod, "spec");

	if (!spec || km_set_str(spec, "nodeName", arg))
		return HB_ENOMEM;
	km_del(km_obj_at(pod, "status"), "conditions");
	return 0;
}

/* Bind the pod to a node (1), or say why it cannot be (0). */
static int schedule(struct km_kubelet *k, struct km_obj *pod,
		    struct podstate *ps, int64_t now)
{
	char node[256], why[512];

	if (km_sched_pick(k->ctx, pod->tree, node, sizeof(node), why,
			  sizeof(why))) {
		km_internal_update(k->ctx, KM_POD, pod->ns, pod->name,
				   SCHEDULER, "status", km_podst_unschedulable,
				   why, NULL);
		return 0;
	}
	hb_log(HB_LOG_DEBUG, "scheduler: %s/%s bound to %s", pod->ns,
	       pod->name, node);
	ps->seen = now; /* it starts pod_start_ms after its binding */
	km_internal_update(k->ctx, KM_POD, pod->ns, pod->name, SCHEDULER,
			   NULL, bind_pod, node, NULL);
	return 1;
}

void km_kubelet_sync(struct km_kubelet *k, const char *ns, const char *name,
		     int64_t *next)
{
	struct km_obj *pod = km_store_get(k->ctx->store, KM_POD, ns, name);
	int64_t now = km_now_ms();
	struct podstate *ps;
	const char *phase;
	char key[600];
	int deleting, terminal;

	*next = 0;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	ps = km_map_get(k->pods, key);
	if (!pod) {
		/* Deleted: end its process, if any. */
		if (ps && ps->pid) {
			ps->gone = 1;
			terminate(k, ps, now, next);
		} else if (ps) {
			drop_state(k, key);
		}
		return;
	}
	ps = state_of(k, key);
	if (!ps)
		goto out;
	phase = km_str(km_get(pod->tree, "status"), "phase");
	if (!phase)
		phase = "Pending";
	terminal = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
	deleting = km_get(km_get(pod->tree, "metadata"), "deletionTimestamp") !=
		   NULL;
	if (ps->pid && (terminal || deleting)) {
		/* Evicted, or deleted with grace: end the process; the
		 * reaper finishes the job. */
		terminate(k, ps, now, next);
		goto out;
	}
	if (deleting) {
		km_store_delete(k->ctx->store, KM_POD, ns, name, pod->rv, NULL);
		drop_state(k, key);
		goto out;
	}
	if (terminal)
		goto out;
	if (!strcmp(phase, "Pending") && !ps->running) {
		if (!claims_ready(k, pod, ps)) {
			*next = now + SCHED_RETRY_MS;
			goto out;
		}
		if (k->ctx->o->nnodes &&
		    !km_str(km_get(pod->tree, "spec"), "nodeName")) {
			/* Not bound yet: the scheduler's turn.  A bound pod
			 * comes back here through its change. */
			if (!schedule(k, pod, ps, now))
				*next = now + SCHED_RETRY_MS;
			goto out;
		}
		if (now < ps->seen + k->ctx->o->pod_start_ms) {
			*next = ps->seen + k->ctx->o->pod_start_ms;
			goto out;
		}
		if (now < ps->retry_at) {
			*next = ps->retry_at; /* a back-off, or a wait */
			goto out;
		}
		start_pod(k, pod, ps, now, next);
		goto out;
	}
	if (ps->finish_at && !ps->pid) {
		if (now >= ps->finish_at) {
			struct km_podst ea = {
				.code = ps->exit_code,
				.reason = ps->exit_code ? "Error" : "Completed"
			};

			ps->finish_at = 0;
			km_internal_update(k->ctx, KM_POD, ns, name, KUBELET,
					   "status", km_podst_ended, &ea, NULL);
		} else {
			*next = ps->finish_at;
		}
	}
out:
	km_obj_unref(pod);
}

/* A process ended: record how in its pod (or finish its deletion). */
static void ended(struct km_kubelet *k, const char *key, struct podstate *ps,
		  int status)
{
	char ns[300], name[300];
	const char *slash = strchr(key, '/');
	struct km_obj *pod;
	struct km_podst ea = { .reason = "Completed" };

	/* The container's other processes end with it. */
	kill(-ps->pid, SIGKILL);
	if (WIFEXITED(status))
		ea.code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		ea.code = 128 + WTERMSIG(status);
	if (ea.code)
		ea.reason = "Error";
	hb_log(HB_LOG_INFO, "kubelet: %s of %s ended with %d",
	       ps->in_init ? "an init container" : "the launcher", key,
	       ea.code);
	ps->pid = 0;
	if (!slash || (size_t)(slash - key) >= sizeof(ns))
		return;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	snprintf(name, sizeof(name), "%s", slash + 1);
	pod = km_store_get(k->ctx->store, KM_POD, ns, name);
	if (!pod || ps->gone) {
		km_obj_unref(pod);
		drop_state(k, key);
		return;
	}
	if (km_get(km_get(pod->tree, "metadata"), "deletionTimestamp")) {
		km_store_delete(k->ctx->store, KM_POD, ns, name, 0, NULL);
		km_obj_unref(pod);
		drop_state(k, key);
		return;
	}
	{
		const char *phase =
			km_str(km_get(pod->tree, "status"), "phase");

		/* An evicted pod keeps the status it was given. */
		if (phase && !strcmp(phase, "Failed"))
			ps->in_init = 0;
		else if (ps->in_init)
			init_ended(k, pod, ps, ea.code, ea.reason, NULL);
		else
			km_internal_update(k->ctx, KM_POD, ns, name, KUBELET,
					   "status", km_podst_ended, &ea, NULL);
	}
	km_obj_unref(pod);
}

void km_kubelet_reap(struct km_kubelet *k)
{
	for (size_t i = 0; i < k->nprocs;) {
		int status;
		pid_t pid = waitpid(k->procs[i].pid, &status, WNOHANG);
		struct proc p;
		struct podstate *ps;

		if (pid == 0 || (pid < 0 && errno == EINTR)) {
			i++;
			continue;
		}
		p = k->procs[i];
		k->procs[i] = k->procs[--k->nprocs];
		if (pid < 0)
			status = 0;
		ps = km_map_get(k->pods, p.key);
		if (ps && ps->pid == p.pid)
			ended(k, p.key, ps, status);
		else
			kill(-p.pid, SIGKILL);
	}
}

int km_kubelet_busy(struct km_kubelet *k)
{
	return k->nprocs > 0;
}

/* At exit: SIGTERM to every process group, SIGKILL after the grace. */
static void stop_all(struct km_kubelet *k)
{
	int64_t until = km_now_ms() + k->ctx->o->kill_grace_ms;

	for (size_t i = 0; i < k->nprocs; i++)
		kill(-k->procs[i].pid, SIGTERM);
	while (k->nprocs) {
		for (size_t i = 0; i < k->nprocs;) {
			if (waitpid(k->procs[i].pid, NULL, WNOHANG) != 0) {
				kill(-k->procs[i].pid, SIGKILL);
				k->procs[i] = k->procs[--k->nprocs];
				continue;
			}
			if (km_now_ms() >= until)
				kill(-k->procs[i].pid, SIGKILL);
			i++;
		}
		if (k->nprocs)
			usleep(20000);
	}
}

void km_kubelet_free(struct km_kubelet *k)
{
	if (!k)
		return;
	stop_all(k);
	free(k->procs);
	km_map_free(k->pods, free);
	free(k);
}

/* ---- log streams ---------------------------------------------------- */

struct km_logstream {
	struct km_ctx *ctx;
	int fd;
	char *ns, *name;
	char *init; /* an init container's log: ends when it does */
	int follow;
	uint64_t limit, sent; /* limit 0: none */
	int last_read;	      /* the pod has ended: one more read, then EOF */
	unsigned drop_gen;    /* cut when the faults drop streams */
};

/* The offset where the last n lines of fd begin. */
static off_t tail_offset(int fd, uint64_t n)
{
	char buf[8192];
	off_t end = lseek(fd, 0, SEEK_END), pos = end;
	uint64_t lines = 0;
	int first = 1;

	if (end <= 0)
		return 0;
	while (pos > 0) {
		size_t chunk =
			pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
		ssize_t got;

		pos -= (off_t)chunk;
		got = pread(fd, buf, chunk, pos);
		if (got <= 0)
			return 0;
		for (ssize_t i = got - 1; i >= 0; i--) {
			if (buf[i] != '\n')
				continue;
			/* A final newline ends the last line, it does not
			 * start one. */
			if (first && pos + i == end - 1) {
				first = 0;
				continue;
			}
			first = 0;
			if (++lines > n || (n == 0 && lines))
				return pos + i + 1;
		}
	}
	return 0;
}

struct km_logstream *km_log_open(struct km_ctx *ctx, const char *ns,
				 const char *name, const char *init,
				 const char *path, int follow, uint64_t tail,
				 uint64_t limit)
{
	struct km_logstream *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->ctx = ctx;
	ls->drop_gen = atomic_load(&ctx->drop_gen);
	ls->follow = follow;
	ls->limit = limit;
	ls->fd = open(path, O_RDONLY | O_CLOEXEC);
	ls->ns = strdup(ns);
	ls->name = strdup(name);
	ls->init = init ? strdup(init) : NULL;
	if (ls->fd < 0 || !ls->ns || !ls->name || (init && !ls->init)) {
		km_log_free(ls);
		return NULL;
	}
	if (tail != UINT64_MAX)
		lseek(ls->fd,
		      tail == 0 ? lseek(ls->fd, 0, SEEK_END)
				: tail_offset(ls->fd, tail),
		      SEEK_SET);
	return ls;
}

static int pod_ended(struct km_logstream *ls)
{
	struct km_obj *pod =
		km_store_get(ls->ctx->store, KM_POD, ls->ns, ls->name);
	const char *phase;
	int done;

	if (!pod)
		return 1;
	phase = km_str(km_get(pod->tree, "status"), "phase");
	done = phase &&
	       (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
	if (!done && ls->init) {
		const cJSON *s;

		cJSON_ArrayForEach (s, km_get(km_get(pod->tree, "status"),
					      "initContainerStatuses")) {
			if (km_str(s, "name") &&
			    !strcmp(km_str(s, "name"), ls->init) &&
			    km_get(km_get(s, "state"), "terminated"))
				done = 1;
		}
	}
	km_obj_unref(pod);
	return done;
}

ssize_t km_log_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct km_logstream *ls = cls;

	(void)pos;
	if (ls->limit && ls->sent >= ls->limit)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (ls->limit && max > ls->limit - ls->sent)
		max = (size_t)(ls->limit - ls->sent);
	for (;;) {
		ssize_t n = read(ls->fd, buf, max);

		if (n > 0) {
			ls->sent += (uint64_t)n;
			return n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!ls->follow || ls->last_read)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&ls->ctx->stopping) ||
		    atomic_load(&ls->ctx->drop_gen) != ls->drop_gen)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (pod_ended(ls)) {
			ls->last_read = 1;
			continue;
		}
		usleep(50000);
	}
}

void km_log_free(void *cls)
{
	struct km_logstream *ls = cls;

	if (!ls)
		return;
	if (ls->fd >= 0)
		close(ls->fd);
	free(ls->ns);
	free(ls->name);
	free(ls->init);
	free(ls);
}
