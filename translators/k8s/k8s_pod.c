/*
 * k8s_pod.c - what lets the pods run on a cluster that enforces Pod
 * Security "restricted" (OpenShift's restricted-v2), as the user, on the
 * site's filesystems: the identity and the securityContexts, the site
 * volumes and the check that the job's files lie on them, and the
 * allow-list of images a user may choose.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/units.h"
#include "translators/k8s/k8s_int.h"

/* The longest path the check takes. */
#define PATH_CAP 4096

/* ---------------------------------------------------------------- */
/* Paths                                                            */
/* ---------------------------------------------------------------- */

/*
 * in (absolute) without empty and "." components or a trailing '/', into
 * out.  HB_EINVAL for a ".." component (the path would leave the
 * directory it names, which a plain prefix test cannot see), HB_ERANGE
 * when it does not fit.
 */
int hb_k8s_path_plain(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	const char *p = in;

	while (*p) {
		const char *e;
		size_t k;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchr(p, '/');
		k = e ? (size_t)(e - p) : strlen(p);
		if (k == 2 && p[0] == '.' && p[1] == '.')
			return HB_EINVAL;
		if (!(k == 1 && p[0] == '.')) {
			if (n + 1 + k + 1 > cap)
				return HB_ERANGE;
			out[n++] = '/';
			memcpy(out + n, p, k);
			n += k;
		}
		p += k;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* Whether normalised path lies in the directory mount (normalised),
 * component by component: /scratchy is not under /scratch. */
static bool under(const char *path, const char *mount)
{
	size_t ml = strlen(mount);

	if (ml == 1)
		return true; /* "/" */
	return strncmp(path, mount, ml) == 0 &&
	       (path[ml] == '\0' || path[ml] == '/');
}

const struct hb_k8s_volume *hb_k8s_on_volume(const struct hb_k8s_opts *o,
					     const char *dir)
{
	char m[PATH_CAP];

	for (uint32_t i = 0; i < o->nvolumes; i++)
		if (o->volumes[i].path &&
		    hb_k8s_path_plain(o->volumes[i].path, m, sizeof(m)) == 0 &&
		    under(dir, m))
			return &o->volumes[i];
	return NULL;
}

/* The job's paths and where errors point (NULL: nowhere). */
struct pcheck {
	const struct hb_k8s_opts *o;
	const char *where;
	struct hb_err *err;
};

static int not_mounted(const struct pcheck *k, const char *field,
		       const char *path)
{
	char list[512];
	size_t n = 0;

	list[0] = '\0';
	for (uint32_t i = 0; i < k->o->nvolumes && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      i ? ", " : "", k->o->volumes[i].path);
	return hb_err_set(k->err, HB_EINVAL, k->where, 0,
			  "%s %.400s is not on a volume the cluster mounts "
			  "(mapped: %s)",
			  field, path, list);
}

/*
 * Check one path of the job: the directory itself (is_dir) or the
 * directory of a file.  A relative path is resolved against wd; with no
 * wd it is not checked.
 */
static int check_one(const struct pcheck *k, const char *field,
		     const char *path, const char *wd, bool is_dir)
{
	char full[PATH_CAP], norm[PATH_CAP], *slash;
	int n, rc;

	if (!path || !*path || strcmp(path, "/dev/null") == 0)
		return 0;
	if (path[0] == '/')
		n = snprintf(full, sizeof(full), "%s", path);
	else if (wd)
		n = snprintf(full, sizeof(full), "%s/%s", wd, path);
	else
		return 0;
	if (n < 0 || (size_t)n >= sizeof(full))
		return hb_err_set(k->err, HB_EINVAL, k->where, 0,
				  "%s: the path is longer than %d bytes", field,
				  PATH_CAP - 1);
	rc = hb_k8s_path_plain(full, norm, sizeof(norm));
	if (rc == HB_EINVAL)
		return hb_err_set(k->err, HB_EINVAL, k->where, 0,
				  "%s %.400s: a path with a '..' component "
				  "cannot be checked against the volumes the "
				  "cluster mounts; write it without '..'",
				  field, full);
	if (rc)
		return hb_err_set(k->err, HB_EINVAL, k->where, 0,
				  "%s: the path is longer than %d bytes", field,
				  PATH_CAP - 1);
	if (!is_dir && (slash = strrchr(norm, '/')) != NULL) {
		char dir[PATH_CAP];
		size_t dl = slash == norm ? 1 : (size_t)(slash - norm);

		memcpy(dir, norm, dl);
		dir[dl] = '\0';
		if (!hb_k8s_on_volume(k->o, dir))
			return not_mounted(k, field, norm);
		return 0;
	}
	if (!hb_k8s_on_volume(k->o, norm))
		return not_mounted(k, field, norm);
	return 0;
}

static int paths_check(const struct pcheck *k, const struct hb_jobspec *spec,
		       const char *workdir)
{
	char wdbuf[PATH_CAP];
	const char *wd = workdir;
	int rc;

	if (!k->o->nvolumes)
		return 0;
	/* The job runs in --chdir when it has one, else where it was
	 * submitted. */
	if (!spec->chdir && workdir &&
	    (rc = check_one(k, "the working directory", workdir, NULL, true)))
		return rc;
	if (spec->chdir) {
		if ((rc = check_one(k, "--chdir", spec->chdir, workdir, true)))
			return rc;
		if (spec->chdir[0] == '/')
			wd = spec->chdir;
		else if (!workdir)
			wd = NULL;
		else if (snprintf(wdbuf, sizeof(wdbuf), "%s/%s", workdir,
				  spec->chdir) < (int)sizeof(wdbuf))
			wd = wdbuf;
	}
	if ((rc = check_one(k, "--output", spec->output, wd, false)) ||
	    (rc = check_one(k, "--error", spec->error, wd, false)) ||
	    (rc = check_one(k, "--input", spec->input, wd, false)))
		return rc;
	return 0;
}

int hb_k8s_paths_check(const struct hb_k8s_opts *o,
		       const struct hb_jobspec *spec, const char *workdir,
		       struct hb_err *err)
{
	struct pcheck k = { o, NULL, err };

	if (!o || !spec)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_k8s_paths_check: missing argument");
	return paths_check(&k, spec, workdir);
}

/* ---------------------------------------------------------------- */
/* The plan's steps                                                 */
/* ---------------------------------------------------------------- */

int hb_k8s_plan_identity(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	struct hb_k8s_plan *plan = c->plan;

	if (s->run_uid == 0)
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "the job runs as root (uid 0), and root "
				  "jobs never run on the cluster");
	plan->run_uid = s->run_uid;
	plan->run_gid = s->run_gid;
	plan->groups = s->run_groups;
	plan->ngroups = s->nrun_groups;
	plan->fs_group = -1;
	if (c->cfg->fs_group == HB_FS_GROUP_PRIMARY)
		plan->fs_group = s->run_gid;
	else if (c->cfg->fs_group == HB_FS_GROUP_GID)
		plan->fs_group = c->cfg->fs_group_gid;
	if (!c->paths->security)
		return 0;
	if (s->run_uid < 0)
		hb_report_warn(c->rep,
			       "the pods run as the submitting user: "
			       "runAsUser, runAsGroup and supplementalGroups "
			       "are filled in when the job bursts");
	return 0;
}

int hb_k8s_plan_volumes(struct hb_k8s_ctx *c)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	int rc;
	struct pcheck k = { cfg, c->spec->source_name, c->err };

	if (!cfg->nvolumes)
		return 0;
	if ((rc = paths_check(&k, c->spec, NULL)))
		return rc;
	if (!c->paths->mounts) {
		hb_report_warn(c->rep,
			       "the site volumes are not mounted in a %s's "
			       "pods: its runtime says what they mount",
			       c->paths->kind);
		return 0;
	}
	c->plan->volumes = cfg->volumes;
	c->plan->nvolumes = cfg->nvolumes;
	for (uint32_t i = 0; i < cfg->nvolumes; i++)
		if (cfg->volumes[i].host_path)
			hb_report_warn(c->rep,
				       "volume %s is a hostPath, which Pod "
				       "Security \"baseline\" and "
				       "\"restricted\" refuse",
				       cfg->volumes[i].path);
	return 0;
}

int hb_k8s_uid_in_range(const char *range, int64_t id)
{
	const char *p = range;
	int in = 0;

	if (!p || !*p)
		return -1;
	while (*p) {
		int64_t start, n;
		char sep;

		if (!hb_scan_digits(&p, 18, &start) ||
		    ((sep = *p) != '/' && sep != '-'))
			return -1;
		p++;
		if (!hb_scan_digits(&p, 18, &n) || (sep == '-' && n < start))
			return -1;
		if (sep == '/')
			in |= id >= start && id - start < n;
		else
			in |= id >= start && id <= n;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -1;
	}
	return in;
}

bool hb_k8s_image_allowed(const struct hb_k8s_opts *cfg, const char *image)
{
	if (!cfg->nallowed_images)
		return true;
	for (uint32_t i = 0; i < cfg->nallowed_images; i++)
		if (cfg->allowed_images[i] &&
		    fnmatch(cfg->allowed_images[i], image, 0) == 0)
			return true;
	return false;
}

/* ---------------------------------------------------------------- */
/* Writing                                                          */
/* ---------------------------------------------------------------- */

void hb_k8s_write_pod_security(struct hb_emit *w,
			       const struct hb_k8s_plan *plan)
{
	hb_emit_obj(w, "securityContext");
	if (plan->run_uid > 0)
		hb_emit_num(w, "runAsUser", (double)plan->run_uid);
	if (plan->run_gid >= 0)
		hb_emit_num(w, "runAsGroup", (double)plan->run_gid);
	if (plan->ngroups) {
		hb_emit_arr(w, "supplementalGroups");
		for (uint32_t i = 0; i < plan->ngroups; i++)
			hb_emit_num(w, NULL, (double)plan->groups[i]);
		hb_emit_end(w);
	}
	if (plan->fs_group >= 0)
		hb_emit_num(w, "fsGroup", (double)plan->fs_group);
	hb_emit_bool(w, "runAsNonRoot", 1);
	hb_emit_obj(w, "seccompProfile");
	hb_emit_str(w, "type", "RuntimeDefault");
	hb_emit_end(w);
	hb_emit_end(w);
}

void hb_k8s_write_container_security(struct hb_emit *w, bool ipc_lock)
{
	hb_emit_obj(w, "securityContext");
	hb_emit_bool(w, "allowPrivilegeEscalation", 0);
	hb_emit_obj(w, "capabilities");
	/* RDMA verbs pin memory: IPC_LOCK, and only then. */
	if (ipc_lock) {
		hb_emit_arr(w, "add");
		hb_emit_str(w, NULL, "IPC_LOCK");
		hb_emit_end(w);
	}
	hb_emit_arr(w, "drop");
	hb_emit_str(w, NULL, "ALL");
	hb_emit_end(w);
	hb_emit_end(w);
	hb_emit_bool(w, "runAsNonRoot", 1);
	hb_emit_end(w);
}

/*
 * A volume's name, the same for the same path on every run: "site-",
 * the path's letters and digits (runs of others one '-'), and 8 hex
 * digits of its hash, so that /a-b and /a/b differ.  A DNS-1123 label.
 */
static void volume_name(const char *path, char out[HB_DNS_LABEL_MAX + 1])
{
	size_t n = 0, max = HB_DNS_LABEL_MAX - 9;
	bool dash = true; /* after "site-" */

	memcpy(out, "site-", 5);
	n = 5;
	for (const char *p = path; *p && n < max; p++) {
		char ch = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
			out[n++] = ch;
			dash = false;
		} else if (!dash) {
			out[n++] = '-';
			dash = true;
		}
	}
	if (n && out[n - 1] == '-')
		n--;
	snprintf(out + n, HB_DNS_LABEL_MAX + 1 - n, "-%08x",
		 (unsigned)(hb_fnv1a_str(HB_FNV1A_INIT, path) & 0xffffffffu));
}

void hb_k8s_write_site_volumes(struct hb_emit *w,
			       const struct hb_k8s_plan *plan)
{
	char name[HB_DNS_LABEL_MAX + 1];

	for (uint32_t i = 0; i < plan->nvolumes; i++) {
		const struct hb_k8s_volume *v = &plan->volumes[i];

		volume_name(v->path, name);
		hb_emit_obj(w, NULL);
		hb_emit_str(w, "name", name);
		if (v->pvc) {
			hb_emit_obj(w, "persistentVolumeClaim");
			hb_emit_str(w, "claimName", v->pvc);
			if (v->read_only)
				hb_emit_bool(w, "readOnly", 1);
		} else if (v->nfs_server) {
			hb_emit_obj(w, "nfs");
			hb_emit_str(w, "server", v->nfs_server);
			hb_emit_str(w, "path", v->nfs_path ? v->nfs_path : "/");
			if (v->read_only)
				hb_emit_bool(w, "readOnly", 1);
		} else {
			hb_emit_obj(w, "hostPath");
			hb_emit_str(w, "path",
				    v->host_path ? v->host_path : v->path);
			hb_emit_str(w, "type", "Directory");
		}
		hb_emit_end(w);
		hb_emit_end(w);
	}
}

void hb_k8s_write_site_mounts(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	char name[HB_DNS_LABEL_MAX + 1];

	for (uint32_t i = 0; i < plan->nvolumes; i++) {
		const struct hb_k8s_volume *v = &plan->volumes[i];

		volume_name(v->path, name);
		hb_emit_obj(w, NULL);
		hb_emit_str(w, "name", name);
		hb_emit_str(w, "mountPath", v->path);
		if (v->read_only)
			hb_emit_bool(w, "readOnly", 1);
		hb_emit_end(w);
	}
}
