/*
 * k8s_image.c - the plan's steps for what the containers run: the image
 * (from the --container map, the container as an image reference, a
 * loaded module, the partition, the MPI implementation or the default),
 * the env on every container, and the launcher script.
 *
 * See docs/internals/manifests.md for the mapping and why it is so.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/launcher.h"
#include "translators/k8s/k8s_int.h"

static bool looks_like_image(const char *s)
{
	size_t n = 0;

	if (!s || !*s || *s == '/' || *s == '.' || *s == '~' || *s == '-')
		return false;
	for (; s[n]; n++) {
		char ch = s[n];

		if (!hb_k8s_is_alnum(ch) && !strchr("._/:@-", ch))
			return false;
	}
	return n <= 500;
}

int hb_k8s_container_check(const struct hb_k8s_opts *cfg,
			   const struct hb_jobspec *s, struct hb_err *err)
{
	/* The site's maps are trusted; an image the user names must be on
	 * the site's list. */
	if (!s->container ||
	    hb_kv_get(cfg->container_images, cfg->ncontainer_images,
		      s->container) ||
	    !looks_like_image(s->container) ||
	    hb_k8s_image_allowed(cfg, s->container))
		return 0;
	return hb_err_set(err, HB_EINVAL, s->source_name,
			  s->prov[HB_F_CONTAINER].kind == HB_PROV_FILE
				  ? s->prov[HB_F_CONTAINER].line
				  : 0,
			  "--container image '%.200s' is not one the site "
			  "allows (kubernetes.allowed_images)",
			  s->container);
}

/* The image: --container map, the container as an image reference, the
 * first mapped module, the partition, the default. */
int hb_k8s_plan_image(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	const struct hb_k8s_opts *cfg = c->cfg;
	const char *img = NULL, *how = NULL, *cont_note = NULL;
	char why[256];
	int rc;

	why[0] = '\0';
	if ((rc = hb_k8s_container_check(cfg, s, c->err)))
		return rc;
	if (s->container) {
		img = hb_kv_get(cfg->container_images,
				    cfg->ncontainer_images, s->container);
		if (img) {
			how = "container";
		} else if (looks_like_image(s->container)) {
			img = s->container;
			how = "container-as-image";
		} else {
			cont_note = "is not an image reference and has no "
				    "container_images entry";
		}
	}
	for (uint32_t i = 0; !img && i < s->nmodules; i++) {
		const char *m = s->modules[i], *sl = strchr(m, '/');

		img = hb_kv_get(cfg->module_images, cfg->nmodule_images, m);
		if (!img && sl) {
			char base[128];
			size_t bl = (size_t)(sl - m);

			if (bl < sizeof(base)) {
				memcpy(base, m, bl);
				base[bl] = '\0';
				img = hb_kv_get(cfg->module_images,
						    cfg->nmodule_images, base);
			}
		}
		if (img) {
			snprintf(why, sizeof(why), "module %s -> %s", m, img);
			how = "module";
		}
	}
	if (!img && s->partition) {
		img = hb_kv_get(cfg->partition_images,
				    cfg->npartition_images, s->partition);
		if (img) {
			snprintf(why, sizeof(why), "partition %s -> %s",
				 s->partition, img);
			how = "partition";
		}
	}
	if (!img) {
		/* The job's MPI implementation, else the configured one. */
		const char *m = hb_mpi_impl_name(hb_mpi_family(s->mpi));

		if (!m)
			m = cfg->default_mpi ? cfg->default_mpi : "OpenMPI";
		img = !strcmp(m, "Intel")   ? cfg->intel_image
		      : !strcmp(m, "MPICH") ? cfg->mpich_image
					    : cfg->openmpi_image;
		if (img) {
			snprintf(why, sizeof(why), "the %s image %s", m, img);
			how = "mpi";
		}
	}
	if (!img && cfg->default_image) {
		img = cfg->default_image;
		how = "default";
		snprintf(why, sizeof(why), "the default image %s", img);
	}
	if (!img)
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "no image for this job: map its --container, "
				  "a module it loads or its partition to an "
				  "image, or set default_image in the "
				  "configuration");
	if (!looks_like_image(img))
		return hb_err_set(c->err, HB_EINVAL, s->source_name, 0,
				  "image '%.200s' is not a valid image "
				  "reference",
				  img);
	c->plan->image = img;

	if (s->container) {
		if ((rc = annotate(c, "container", s->container)))
			return rc;
		if (cont_note)
			hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_PARTIAL,
				       c->paths->image,
				       "'%.100s' %s: used %s; kept in "
				       "annotation " ANN("container"),
				       s->container, cont_note, why);
		else if (strcmp(how, "container") == 0)
			hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_MAPPED,
				       c->paths->image, "%.100s -> %.200s",
				       s->container, img);
		else
			hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_MAPPED,
				       c->paths->image, "used as the image");
	} else if (hb_k8s_is_set(s, HB_F_CONTAINER)) {
		hb_report_fate(c->rep, HB_F_CONTAINER, HB_FATE_MAPPED,
			       c->paths->image, "%s", why);
	}
	return 0;
}

/* Env for the containers; NULL values (pass-through from the submit
 * host) cannot be given and are listed in an annotation. */
int hb_k8s_plan_env(struct hb_k8s_ctx *c)
{
	const struct hb_jobspec *s = c->spec;
	struct hb_buf v, pass;
	uint32_t npass = 0, nbad = 0;
	int rc = 0;
	char idx[24];
	static const char *const array_vars[] = {
	    "SLURM_ARRAY_TASK_ID", "PBS_ARRAYID", "PBS_ARRAY_INDEX"};

	hb_buf_init(&v, 0);
	hb_buf_init(&pass, 0);
	for (uint32_t i = 0; i < s->nenv; i++) {
		const struct hb_env *e = &s->env[i];

		if (!e->name || !*e->name || strchr(e->name, '=')) {
			nbad++;
			continue;
		}
		if (!e->value) {
			if ((rc = hb_buf_printf(&pass, "%s%u:%s",
						npass ? "," : "", i, e->name)))
				goto out;
			npass++;
			continue;
		}
		hb_buf_reset(&v);
		if ((rc = hb_k8s_escape(e->value, strlen(e->value), &v)))
			goto out;
		if (hb_k8s_kv_push(c->plan, &c->plan->env, e->name, v.data))
			goto nomem;
	}
	if (c->plan->array_index >= 0) {
		hb_buf_reset(&v);
		snprintf(idx, sizeof(idx), "%lld",
			 (long long)c->plan->array_index);
		for (size_t k = 0; k < NELEM(array_vars); k++) {
			bool dup = false;

			for (uint32_t i = 0; i < s->nenv; i++)
				if (s->env[i].name &&
				    strcmp(s->env[i].name, array_vars[k]) == 0)
					dup = true;
			if (dup)
				continue;
			if (hb_k8s_kv_push(c->plan, &c->plan->env,
					   array_vars[k], idx))
				goto nomem;
			if ((rc = hb_buf_printf(&v, "%s%s", v.len ? "," : "",
						array_vars[k])))
				goto out;
		}
		/* What this element adds, so the way back can take it off
		 * again and keep the job's own. */
		if (v.len && (rc = annotate(c, "array-env", v.data)))
			goto out;
	}
	if (npass && (rc = annotate(c, "env-passthrough", pass.data)))
		goto out;
	if (hb_k8s_is_set(s, HB_F_ENV)) {
		if (npass || nbad)
			hb_report_fate(
			    c->rep, HB_F_ENV, HB_FATE_PARTIAL, c->paths->env,
			    "%u variable(s) passed through from the "
			    "submit environment have no value in "
			    "the pod (kept in annotation " ANN(
				"env-passthrough") "); %u invalid "
						   "name(s) left out",
			    npass, nbad);
		else
			hb_report_fate(
			    c->rep, HB_F_ENV, HB_FATE_MAPPED, c->paths->env,
			    "%u variable(s), on every container", s->nenv);
	}
	goto out;
nomem:
	rc = OOM(c);
out:
	hb_buf_free(&v);
	hb_buf_free(&pass);
	return rc ? hb_err_set(c->err, rc, NULL, 0, "out of memory") : 0;
}

/* The launcher script, escaped against $(VAR) expansion. */
int hb_k8s_plan_script(struct hb_k8s_ctx *c)
{
	struct hb_buf raw, *esc;
	int rc;

	struct hb_jobspec orig = *c->spec;
	const char *kind = hb_k8s_provenance(c->spec, "source-kind");
	const char *file = hb_k8s_provenance(c->spec, "source-name");

	/* A job read back from a manifest hpcbridge made runs under the
	 * name of its original script, as it did the first time. */
	if (file) {
		orig.source_name = file;
		orig.source = kind && strcmp(kind, "pbs") == 0 ? HB_SRC_PBS
			      : kind && strcmp(kind, "sbatch") == 0
				  ? HB_SRC_SBATCH
				  : orig.source;
	}
	/* No cap of its own: the launcher keeps to HB_LAUNCHER_MAX, and
	 * builds straight into a buffer that leaves it the room. */
	hb_buf_init(&raw, 0);
	esc = &c->plan->script;
	rc = hb_launcher_script_ex(&orig, c->plan->name, c->plan->array_index,
				   c->plan->runtime_mounted, &raw, c->err);
	if (rc) {
		if (c->err && !c->err->code)
			hb_err_set(c->err, rc, c->spec->source_name, 0,
				   "cannot write the launcher script: %s",
				   hb_strerror(rc));
		goto out;
	}
	if ((rc = hb_k8s_escape(raw.data ? raw.data : "", raw.len, esc))) {
		OOM(c);
		goto out;
	}
	hb_report_fate(c->rep, HB_F_SCRIPT, HB_FATE_MAPPED, c->paths->script,
		       "run unchanged by the launcher script, with "
		       "SLURM_*/PBS_* variables from the hostfile%s",
		       c->plan->runtime_mounted
			       ? "; the launcher runtime is mounted "
				 "from the ConfigMap"
			       : "");
out:
	hb_buf_free(&raw);
	return rc;
}
