/*
 * k8s_ckpt.c - the checkpoint a job resumes from, brought from S3 into
 * its pods: the job's key under checkpoints.url, the plan's step that
 * decides where the directory lives in the pods, and the init container
 * that runs `hpcbridge ckpt pull --if-exists` before the job starts.
 *
 * A job with a checkpoint directory (--hpcbridge-checkpoint, else
 * checkpoints.default_dir) whose site names an S3 location
 * (checkpoints.url) gets, on every container, HPCBRIDGE_CKPT_URL (the
 * location of its checkpoints, s3://BUCKET/PREFIX/KEY) and
 * HPCBRIDGE_CKPT_DIR (the directory).  Where the directory is:
 *
 *   - on a site volume (kubernetes.volumes): every pod mounts it, so the
 *     launcher's init container alone pulls into it; the workers need it
 *     only once mpirun starts their ranks, after that init container
 *     ended.  Several pulls into one directory at once would race.
 *   - elsewhere: an emptyDir, mounted on the directory's parent in every
 *     container, and an init container in every pod; a pull
 *     materialises the checkpoint beside the directory and renames it
 *     into place, which needs the parent on the same filesystem.
 *
 * The init container runs as the job does (the pod's securityContext,
 * and the containers' own), and takes its S3 credentials from a Secret
 * (checkpoints.secret) through secretKeyRef: no key is ever written into
 * a manifest.  docs/translation.md says what the user sees.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/hash.h"
#include "translators/k8s/k8s_int.h"

#define PATH_CAP      HB_K8S_CKPT_DIR_MAX
#define INIT_NAME     "hpcbridge-ckpt"
#define CKPT_VOLUME   "hpcbridge-ckpt"
#define KEY_NAME_MAX  40
#define INIT_TARGET   "spec.mpiReplicaSpecs.*.template.spec.initContainers"

int hb_k8s_ckpt_key(int64_t uid, const char *dir,
		    char out[HB_K8S_CKPT_KEY_MAX])
{
	char plain[PATH_CAP], name[KEY_NAME_MAX + 1];
	const char *last;
	size_t n = 0;

	out[0] = '\0';
	if (uid < 0 || !dir || dir[0] != '/' ||
	    hb_k8s_path_plain(dir, plain, sizeof(plain)))
		return HB_EINVAL;
	last = strrchr(plain, '/') + 1;
	for (const char *p = last; *p && n < KEY_NAME_MAX; p++)
		if (hb_k8s_is_alnum(*p) || *p == '-' || *p == '_' || *p == '.')
			name[n++] = *p;
	name[n] = '\0';
	snprintf(out, HB_K8S_CKPT_KEY_MAX, "%lld/%s-%016llx", (long long)uid,
		 n ? name : "ckpt",
		 (unsigned long long)hb_fnv1a_str(HB_FNV1A_INIT, plain));
	return 0;
}

int hb_k8s_ckpt_dir(const struct hb_k8s_opts *cfg, const struct hb_jobspec *s,
		    char out[HB_K8S_CKPT_DIR_MAX])
{
	const char *dir = s->checkpoint_dir ? s->checkpoint_dir
					    : cfg->ckpt_default_dir;
	char full[PATH_CAP];
	int n;

	out[0] = '\0';
	if (!dir || !*dir)
		return 1;
	if (dir[0] == '/')
		n = snprintf(full, sizeof(full), "%s", dir);
	else if (s->chdir && s->chdir[0] == '/')
		n = snprintf(full, sizeof(full), "%s/%s", s->chdir, dir);
	else
		return 2;
	if (n < 0 || (size_t)n >= sizeof(full) ||
	    hb_k8s_path_plain(full, out, HB_K8S_CKPT_DIR_MAX)) {
		snprintf(out, HB_K8S_CKPT_DIR_MAX, "%.300s", full);
		return HB_EINVAL;
	}
	return strcmp(out, "/") ? 0 : HB_ERANGE;
}

/* The job's checkpoint directory, absolute and plain, into out; 1 when
 * there is none to pull into (a warning says why where it matters). */
static int ckpt_dir(struct hb_k8s_ctx *c, char out[PATH_CAP])
{
	const struct hb_jobspec *s = c->spec;
	int rc = hb_k8s_ckpt_dir(c->cfg, s, out);

	if (rc == 2) {
		hb_report_warn(c->rep,
			       "checkpoint directory '%.200s' is relative and "
			       "the job has no absolute --chdir: its checkpoint "
			       "is not pulled from %s",
			       s->checkpoint_dir ? s->checkpoint_dir
						 : c->cfg->ckpt_default_dir,
			       c->cfg->ckpt_url);
		return 1;
	}
	if (rc == HB_EINVAL)
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "checkpoint directory %.300s: write it "
				  "without '..' and in at most %d bytes",
				  out, PATH_CAP - 1);
	if (rc == HB_ERANGE)
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "checkpoint directory /: name a directory "
				  "of its own");
	return rc;
}

/* Set plan env name to value, escaped against $(VAR) expansion. */
static int set_env(struct hb_k8s_plan *plan, const char *name,
		   const char *value)
{
	struct hb_buf v;
	int rc;

	hb_buf_init(&v, 0);
	rc = hb_k8s_escape(value, strlen(value), &v);
	if (!rc)
		rc = hb_k8s_kv_set(plan, &plan->env, name, v.data);
	hb_buf_free(&v);
	return rc;
}

int hb_k8s_plan_ckpt(struct hb_k8s_ctx *c)
{
	const struct hb_k8s_opts *cfg = c->cfg;
	struct hb_k8s_plan *plan = c->plan;
	char dir[PATH_CAP], key[HB_K8S_CKPT_KEY_MAX], *url, *slash;
	const struct hb_k8s_volume *vol;
	int rc;

	if (!cfg->ckpt_url || (rc = ckpt_dir(c, dir)) == 1)
		return 0;
	if (rc)
		return rc;
	if (!c->paths->mounts) {
		hb_report_warn(c->rep,
			       "the checkpoint in %s is not pulled into a "
			       "%s's pods: its runtime says what they run",
			       cfg->ckpt_url, c->paths->kind);
		return 0;
	}
	if (plan->run_uid < 0) {
		hb_report_warn(c->rep,
			       "the checkpoint's S3 location (a key of the "
			       "user's uid) and the init container that pulls "
			       "it are written when the job bursts");
		return 0;
	}
	if (hb_k8s_ckpt_key(plan->run_uid, dir, key))
		return hb_err_set(c->err, HB_EINVAL, c->spec->source_name, 0,
				  "checkpoint directory %.300s: no S3 key",
				  dir);
	url = hb_arena_printf(&plan->arena, "%s/%s", cfg->ckpt_url, key);
	plan->ckpt_dir = hb_arena_strdup(&plan->arena, dir);
	if (!url || !plan->ckpt_dir)
		return OOM(c);
	plan->ckpt_url = url;
	plan->ckpt_image = cfg->ckpt_image ? cfg->ckpt_image : plan->image;
	plan->ckpt_endpoint = cfg->ckpt_endpoint;
	plan->ckpt_region = cfg->ckpt_region;
	plan->ckpt_secret = cfg->ckpt_secret;
	vol = hb_k8s_on_volume(cfg, dir);
	if (vol && vol->read_only)
		return hb_err_set(c->err, HB_EINVAL, c->spec->source_name, 0,
				  "checkpoint directory %.300s is on volume %s, "
				  "which the pods mount read-only: the "
				  "checkpoint cannot be pulled into it, nor "
				  "the job write one",
				  dir, vol->path);
	if (!vol) {
		char *parent = hb_arena_strdup(&plan->arena, dir);

		if (!parent)
			return OOM(c);
		slash = strrchr(parent, '/');
		if (slash == parent)
			return hb_err_set(
			    c->err, HB_EINVAL, c->spec->source_name, 0,
			    "checkpoint directory %.300s: its parent is /, "
			    "where no volume can be mounted; name one at "
			    "least two levels down (/ckpt/run)",
			    dir);
		*slash = '\0';
		plan->ckpt_mount = parent;
	}
	/* On every container, escaped as every value there is; both are
	 * the gateway's, not the job's (the reader drops them). */
	if ((rc = set_env(plan, "HPCBRIDGE_CKPT_URL", url)) ||
	    (rc = set_env(plan, "HPCBRIDGE_CKPT_DIR", dir)))
		return OOM(c);
	if (cfg->ckpt_interval) {
		char every[16];

		snprintf(every, sizeof(every), "%u", cfg->ckpt_interval);
		if (set_env(plan, "HPCBRIDGE_CKPT_EVERY", every))
			return OOM(c);
	}
	hb_report_fate(c->rep, HB_F_CHECKPOINT, HB_FATE_MAPPED, INIT_TARGET,
		       "the newest complete checkpoint in %s is pulled into "
		       "%s before the job starts (%s); HPCBRIDGE_CKPT_URL and "
		       "HPCBRIDGE_CKPT_DIR on every container; kept in "
		       "annotation " ANN("checkpoint-dir"),
		       url, dir,
		       plan->ckpt_mount ? "an emptyDir in every pod"
					: "the site volume, by the launcher");
	return 0;
}

/* {name, value}, or {name, valueFrom.secretKeyRef {secret, key}}. */
static void env_item(struct hb_emit *w, const char *name, const char *value,
		     const char *secret, const char *key)
{
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", name);
	if (secret) {
		hb_emit_obj(w, "valueFrom");
		hb_emit_obj(w, "secretKeyRef");
		hb_emit_str(w, "name", secret);
		hb_emit_str(w, "key", key);
		hb_emit_end(w);
		hb_emit_end(w);
	} else {
		hb_emit_str(w, "value", value);
	}
	hb_emit_end(w);
}

void hb_k8s_write_ckpt_s3_env(struct hb_emit *w, const struct hb_k8s_plan *plan,
			      bool own)
{
	/* The init container is the gateway's: the standard names.  The
	 * launcher runs the job, whose own AWS_* must stay as the job set
	 * them: names of the gateway's, which its runtime passes to the
	 * push alone. */
	static const char *const names[2][4] = {
		{ "HPCBRIDGE_S3_ENDPOINT", "HPCBRIDGE_S3_REGION",
		  "HPCBRIDGE_S3_ACCESS_KEY_ID", "HPCBRIDGE_S3_SECRET_ACCESS_KEY" },
		{ "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
		  "AWS_SECRET_ACCESS_KEY" }
	};
	const char *const *n = names[own];

	if (!plan->ckpt_url)
		return;
	if (plan->ckpt_endpoint)
		env_item(w, n[0], plan->ckpt_endpoint, NULL, NULL);
	if (plan->ckpt_region)
		env_item(w, n[1], plan->ckpt_region, NULL, NULL);
	if (plan->ckpt_secret) {
		env_item(w, n[2], NULL, plan->ckpt_secret, "AWS_ACCESS_KEY_ID");
		env_item(w, n[3], NULL, plan->ckpt_secret,
			 "AWS_SECRET_ACCESS_KEY");
	}
}

void hb_k8s_write_ckpt_init(struct hb_emit *w, const struct hb_k8s_plan *plan,
			    bool launcher)
{
	const char *url = NULL, *dir = NULL;

	if (!plan->ckpt_url || (!launcher && !plan->ckpt_mount))
		return;
	/* plan->env holds them escaped for $(VAR) expansion, as the
	 * command's words must be too */
	for (uint32_t i = 0; i < plan->env.n; i++) {
		if (!strcmp(plan->env.v[i].key, "HPCBRIDGE_CKPT_URL"))
			url = plan->env.v[i].value;
		else if (!strcmp(plan->env.v[i].key, "HPCBRIDGE_CKPT_DIR"))
			dir = plan->env.v[i].value;
	}
	if (!url || !dir)
		return;
	hb_emit_arr(w, "initContainers");
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", INIT_NAME);
	hb_emit_str(w, "image", plan->ckpt_image);
	hb_emit_arr(w, "command");
	hb_emit_str(w, NULL, "hpcbridge");
	hb_emit_str(w, NULL, "ckpt");
	hb_emit_str(w, NULL, "pull");
	hb_emit_str(w, NULL, url);
	hb_emit_str(w, NULL, dir);
	/* no checkpoint yet: exit 0, the job starts afresh */
	hb_emit_str(w, NULL, "--if-exists");
	hb_emit_str(w, NULL, "--progress");
	hb_emit_str(w, NULL, "json");
	hb_emit_end(w);
	hb_emit_arr(w, "env");
	env_item(w, "HPCBRIDGE_CKPT_URL", url, NULL, NULL);
	env_item(w, "HPCBRIDGE_CKPT_DIR", dir, NULL, NULL);
	hb_k8s_write_ckpt_s3_env(w, plan, true);
	hb_emit_end(w);
	hb_k8s_write_container_security(w, false);
	hb_emit_arr(w, "volumeMounts");
	hb_k8s_write_ckpt_mount(w, plan);
	hb_k8s_write_site_mounts(w, plan);
	hb_emit_end(w);
	hb_emit_end(w); /* the container */
	hb_emit_end(w);
}

void hb_k8s_write_ckpt_volume(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	if (!plan->ckpt_mount)
		return;
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", CKPT_VOLUME);
	hb_emit_obj(w, "emptyDir");
	hb_emit_end(w);
	hb_emit_end(w);
}

void hb_k8s_write_ckpt_mount(struct hb_emit *w, const struct hb_k8s_plan *plan)
{
	if (!plan->ckpt_mount)
		return;
	hb_emit_obj(w, NULL);
	hb_emit_str(w, "name", CKPT_VOLUME);
	hb_emit_str(w, "mountPath", plan->ckpt_mount);
	hb_emit_end(w);
}
