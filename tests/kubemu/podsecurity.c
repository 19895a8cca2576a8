/*
 * podsecurity.c - Namespaces from --namespace, and the API server's
 * PodSecurity admission plugin on them.
 *
 * A namespace's labels pod-security.kubernetes.io/{enforce,warn,audit}
 * (privileged, baseline or restricted) and their -version labels pick the
 * Pod Security Standards level a new pod is held to.  enforce: a pod
 * that violates it is refused with 403 Forbidden, "pods "x" is
 * forbidden: violates PodSecurity "restricted:latest": ...";  warn: the
 * reply carries a Warning header "would violate PodSecurity ...";  audit:
 * the emulator's log gets a line.  The checks are those of
 * k8s.io/pod-security-admission/policy, with the same reasons and
 * details, in the same order (by check ID); every version label value is
 * evaluated with the current checks.  Like the real plugin, it looks
 * only at Pods: custom resources that embed pod templates (MPIJobs) are
 * not checked, the pods their controllers create are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/log.h"
#include "kubemu.h"

#define PSA	   "pod-security.kubernetes.io/"
#define LIST_MAX   2048
#define SET_MAX	   32
#define DETAIL_MAX 4096
#define SPEC_MAX   4096

/* ---- namespaces ----------------------------------------------------- */

int km_namespace_from_spec(const char *spec, cJSON **out, struct hb_err *err)
{
	char buf[SPEC_MAX], *save = NULL, *tok;
	cJSON *ns = NULL, *meta, *labels, *st;
	char ts[32];

	*out = NULL;
	if (snprintf(buf, sizeof(buf), "%s", spec) >= (int)sizeof(buf))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "--namespace: too long");
	tok = strtok_r(buf, ",", &save);
	if (!tok || !*tok || strchr(tok, '='))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "--namespace %s: no name", spec);
	km_timestamp(ts, sizeof(ts), 0);
	ns = cJSON_CreateObject();
	if (!ns || km_set_str(ns, "apiVersion", "v1") ||
	    km_set_str(ns, "kind", "Namespace") ||
	    !(meta = km_obj_at(ns, "metadata")) ||
	    km_set_str(meta, "name", tok) ||
	    !(labels = km_obj_at(meta, "labels")) ||
	    km_set_str(labels, "kubernetes.io/metadata.name", tok) ||
	    !(st = km_obj_at(ns, "status")) ||
	    km_set_str(st, "phase", "Active"))
		goto oom;
	while ((tok = strtok_r(NULL, ",", &save))) {
		int ann = !strncmp(tok, "annotation:", 11);
		cJSON *to = labels;
		char *eq;

		if (ann) {
			tok += 11;
			if (!(to = km_obj_at(meta, "annotations")))
				goto oom;
		}
		eq = strchr(tok, '=');
		if (!eq || eq == tok) {
			cJSON_Delete(ns);
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "--namespace %s: \"%s\" is not "
					  "LABEL=VALUE or annotation:KEY=VALUE",
					  spec, tok);
		}
		*eq = '\0';
		if (km_set_str(to, tok, eq + 1))
			goto oom;
	}
	*out = ns;
	return 0;
oom:
	cJSON_Delete(ns);
	return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
}

int km_namespaces_create(struct km_ctx *ctx, struct hb_err *err)
{
	for (size_t i = 0; i < ctx->o->nnamespaces; i++) {
		cJSON *ns;
		int rc =
			km_namespace_from_spec(ctx->o->namespaces[i], &ns, err);

		if (rc)
			return rc;
		rc = km_internal_create(ctx, KM_NAMESPACE, ns, "kubemu", NULL);
		if (rc)
			return hb_err_set(
				err, rc, NULL, 0, "--namespace %s: %s",
				ctx->o->namespaces[i], hb_strerror(rc));
	}
	return 0;
}

/* ---- lists and sets, as the checks' details spell them -------------- */

/* "a", "b" (joinQuote), or a, b unquoted. */
struct list {
	char s[LIST_MAX];
	size_t n;
};

static void list_add(struct list *l, const char *v, int quote)
{
	size_t len = strlen(l->s);

	snprintf(l->s + len, sizeof(l->s) - len, quote ? "%s\"%s\"" : "%s%s",
		 l->n ? ", " : "", v);
	l->n++;
}

/* A sorted set of strings (Go's sets.String.List()). */
struct set {
	char v[SET_MAX][128];
	size_t n;
};

static void set_add(struct set *s, const char *v)
{
	size_t i = 0;

	while (i < s->n && strcmp(s->v[i], v) < 0)
		i++;
	if ((i < s->n && !strcmp(s->v[i], v)) || s->n == SET_MAX)
		return;
	memmove(s->v[i + 1], s->v[i], (s->n - i) * sizeof(s->v[0]));
	snprintf(s->v[i], sizeof(s->v[0]), "%s", v);
	s->n++;
}

static void set_join(const struct set *s, struct list *l, int quote)
{
	for (size_t i = 0; i < s->n; i++)
		list_add(l, s->v[i], quote);
}

static const char *plural(const char *one, const char *many, size_t n)
{
	return n == 1 ? one : many;
}

/* Append to the string in buf (cap bytes), truncating. */
__attribute__((format(printf, 3, 4))) static void
catf(char *buf, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + n, cap - n, fmt, ap);
	va_end(ap);
}

/* ---- the checks ----------------------------------------------------- */

/* One forbidden finding: its reason and detail. */
struct finding {
	char reason[64];
	char detail[DETAIL_MAX];
};

__attribute__((format(printf, 3, 4))) static int
forbid(struct finding *f, const char *reason, const char *fmt, ...)
{
	va_list ap;

	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
	return 1;
}

static const cJSON *sc(const cJSON *c)
{
	return km_get(c, "securityContext");
}

static const char *const container_lists[] = { "initContainers", "containers",
					       "ephemeralContainers" };

/* Every container, init and ephemeral ones included (visitContainers). */
#define FOR_CONTAINERS(c, spec)                                                \
	for (int ci_ = 0; ci_ < 3; ci_++)                                      \
		cJSON_ArrayForEach (c, km_get(spec, container_lists[ci_]))

static const char *cname(const cJSON *c)
{
	return km_str(c, "name") ? km_str(c, "name") : "";
}

/* "container "a"" or "containers "a", "b"" for a list of containers. */
static void who(const struct list *l, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s %s", plural("container", "containers", l->n),
		 l->s);
}

/* The containers whose securityContext field is bad(): "reason
 * (container(s) "a", ... must ...)". */
static int containers_with(const cJSON *spec, const char *field,
			   int (*bad)(const cJSON *), struct finding *f,
			   const char *reason, const char *must)
{
	struct list l = { 0 };
	const cJSON *c;
	char w[LIST_MAX + 16];

	FOR_CONTAINERS(c, spec)
	{
		if (bad(km_get(sc(c), field)))
			list_add(&l, cname(c), 1);
	}
	if (!l.n)
		return 0;
	who(&l, w, sizeof(w));
	return forbid(f, reason, "%s %s", w, must);
}

static int not_false(const cJSON *v)
{
	return !cJSON_IsFalse(v);
}

static int is_true(const cJSON *v)
{
	return cJSON_IsTrue(v);
}

static int check_ape(const cJSON *spec, const cJSON *meta, struct finding *f)
{
	(void)meta;
	return containers_with(spec, "allowPrivilegeEscalation", not_false, f,
			       "allowPrivilegeEscalation != false",
			       "must set securityContext."
			       "allowPrivilegeEscalation=false");
}

/*
 * The "pod and containers set a bad value" shape shared by AppArmor,
 * seccomp (baseline) and the like: field of the pod's and containers'
 * securityContext; ok() says whether a value is allowed.
 */
struct setters {
	struct list who; /* "pod", "container(s) ..." joined by " and " */
	struct set values;
	struct list bad;
	int pod;
};

static void setters_scan(const cJSON *spec, const char *field,
			 int (*ok)(const char *), struct setters *s)
{
	const cJSON *c;
	const char *t;

	t = km_str(km_get(km_get(spec, "securityContext"), field), "type");
	if (t && !ok(t)) {
		s->pod = 1;
		set_add(&s->values, t);
	}
	FOR_CONTAINERS(c, spec)
	{
		t = km_str(km_get(sc(c), field), "type");
		if (t && !ok(t)) {
			list_add(&s->bad, cname(c), 1);
			set_add(&s->values, t);
		}
	}
}

/* "pod and containers "a", "b"" */
static void setters_who(const struct setters *s, char *buf, size_t cap)
{
	char w[LIST_MAX + 16] = "";

	if (s->bad.n)
		who(&s->bad, w, sizeof(w));
	snprintf(buf, cap, "%s%s%s", s->pod ? "pod" : "",
		 s->pod && s->bad.n ? " and " : "", w);
}

static int apparmor_ok(const char *t)
{
	return !strcmp(t, "RuntimeDefault") || !strcmp(t, "Localhost");
}

static int check_apparmor(const cJSON *spec, const cJSON *meta,
			  struct finding *f)
{
	static const char prefix[] = "container.apparmor.security.beta."
				     "kubernetes.io/";
	struct setters s = { 0 };
	struct set ann = { 0 };
	struct list vals = { 0 };
	const cJSON *a;
	char w[LIST_MAX + 64], kv[256];

	setters_scan(spec, "appArmorProfile", apparmor_ok, &s);
	cJSON_ArrayForEach (a, km_get(meta, "annotations")) {
		if (strncmp(a->string, prefix, sizeof(prefix) - 1) ||
		    !cJSON_IsString(a) ||
		    !strcmp(a->valuestring, "runtime/default") ||
		    !strncmp(a->valuestring, "localhost/", 10))
			continue;
		snprintf(kv, sizeof(kv), "%s=\"%s\"", a->string,
			 a->valuestring);
		set_add(&ann, kv);
	}
	if (!s.pod && !s.bad.n && !ann.n)
		return 0;
	setters_who(&s, w, sizeof(w));
	if (ann.n)
		catf(w, sizeof(w), "%s%s", w[0] ? " and " : "",
		     plural("annotation", "annotations", ann.n));
	set_join(&s.values, &vals, 1);
	set_join(&ann, &vals, 1);
	return forbid(f,
		      plural("forbidden AppArmor profile",
			     "forbidden AppArmor profiles", vals.n),
		      "%s must not set AppArmor profile type to %s", w, vals.s);
}

/* Capabilities a baseline pod may add. */
static int cap_default(const char *cap)
{
	static const char *const ok[] = {
		"AUDIT_WRITE", "CHOWN",	 "DAC_OVERRIDE", "FOWNER",
		"FSETID",      "KILL",	 "MKNOD",	 "NET_BIND_SERVICE",
		"SETFCAP",     "SETGID", "SETPCAP",	 "SETUID",
		"SYS_CHROOT",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(cap, ok[i]))
			return 1;
	return 0;
}

/* Containers adding capabilities that allowed() refuses; 1 if any. */
static int caps_added(const cJSON *spec, int (*allowed)(const char *),
		      struct list *bad, struct set *caps)
{
	const cJSON *c, *a;

	FOR_CONTAINERS(c, spec)
	{
		int any = 0;

		cJSON_ArrayForEach (
			a, km_get(km_get(sc(c), "capabilities"), "add")) {
			if (cJSON_IsString(a) && !allowed(a->valuestring)) {
				set_add(caps, a->valuestring);
				any = 1;
			}
		}
		if (any)
			list_add(bad, cname(c), 1);
	}
	return bad->n > 0;
}

static int check_caps_baseline(const cJSON *spec, const cJSON *meta,
			       struct finding *f)
{
	struct list bad = { 0 }, cl = { 0 };
	struct set caps = { 0 };
	char w[LIST_MAX + 16];

	(void)meta;
	if (!caps_added(spec, cap_default, &bad, &caps))
		return 0;
	who(&bad, w, sizeof(w));
	set_join(&caps, &cl, 1);
	return forbid(f, "non-default capabilities",
		      "%s must not include %s in "
		      "securityContext.capabilities.add",
		      w, cl.s);
}

static int cap_restricted(const char *cap)
{
	return !strcmp(cap, "NET_BIND_SERVICE");
}

static int check_caps_restricted(const cJSON *spec, const cJSON *meta,
				 struct finding *f)
{
	struct list nodrop = { 0 }, bad = { 0 }, cl = { 0 };
	struct set caps = { 0 };
	const cJSON *c, *d;
	char w[LIST_MAX + 16];

	(void)meta;
	FOR_CONTAINERS(c, spec)
	{
		int all = 0;

		cJSON_ArrayForEach (
			d, km_get(km_get(sc(c), "capabilities"), "drop"))
			all |= cJSON_IsString(d) &&
			       !strcmp(d->valuestring, "ALL");
		if (!all)
			list_add(&nodrop, cname(c), 1);
	}
	caps_added(spec, cap_restricted, &bad, &caps);
	if (!nodrop.n && !bad.n)
		return 0;
	f->detail[0] = '\0';
	if (nodrop.n) {
		who(&nodrop, w, sizeof(w));
		catf(f->detail, sizeof(f->detail),
		     "%s must set securityContext.capabilities.drop=[\"ALL\"]",
		     w);
	}
	if (bad.n) {
		who(&bad, w, sizeof(w));
		set_join(&caps, &cl, 1);
		catf(f->detail, sizeof(f->detail),
		     "%s%s must not include %s in "
		     "securityContext.capabilities.add",
		     f->detail[0] ? "; " : "", w, cl.s);
	}
	snprintf(f->reason, sizeof(f->reason), "unrestricted capabilities");
	return 1;
}

static int check_host_ns(const cJSON *spec, const cJSON *meta,
			 struct finding *f)
{
	static const char *const keys[] = { "hostNetwork", "hostPID",
					    "hostIPC" };
	struct list l = { 0 };
	char v[32];

	(void)meta;
	for (size_t i = 0; i < 3; i++) {
		if (cJSON_IsTrue(km_get(spec, keys[i]))) {
			snprintf(v, sizeof(v), "%s=true", keys[i]);
			list_add(&l, v, 0);
		}
	}
	return l.n ? forbid(f, "host namespaces", "%s", l.s) : 0;
}

static int check_hostpath(const cJSON *spec, const cJSON *meta,
			  struct finding *f)
{
	struct list l = { 0 };
	const cJSON *v;

	(void)meta;
	cJSON_ArrayForEach (v, km_get(spec, "volumes")) {
		if (km_get(v, "hostPath"))
			list_add(&l, km_str(v, "name") ?: "", 1);
	}
	return l.n ? forbid(f, "hostPath volumes", "%s %s",
			    plural("volume", "volumes", l.n), l.s)
		   : 0;
}

static int check_hostports(const cJSON *spec, const cJSON *meta,
			   struct finding *f)
{
	struct list bad = { 0 }, pl = { 0 };
	struct set ports = { 0 };
	const cJSON *c, *p, *hp;
	char w[LIST_MAX + 16], num[32];

	(void)meta;
	FOR_CONTAINERS(c, spec)
	{
		int any = 0;

		cJSON_ArrayForEach (p, km_get(c, "ports")) {
			hp = km_get(p, "hostPort");
			if (cJSON_IsNumber(hp) && hp->valueint != 0) {
				snprintf(num, sizeof(num), "%d", hp->valueint);
				set_add(&ports, num);
				any = 1;
			}
		}
		if (any)
			list_add(&bad, cname(c), 1);
	}
	if (!bad.n)
		return 0;
	who(&bad, w, sizeof(w));
	set_join(&ports, &pl, 0);
	return forbid(f, "hostPort", "%s %s %s %s", w,
		      plural("uses", "use", bad.n),
		      plural("hostPort", "hostPorts", ports.n), pl.s);
}

static int check_privileged(const cJSON *spec, const cJSON *meta,
			    struct finding *f)
{
	(void)meta;
	return containers_with(spec, "privileged", is_true, f, "privileged",
			       "must not set securityContext.privileged=true");
}

static int check_procmount(const cJSON *spec, const cJSON *meta,
			   struct finding *f)
{
	struct list bad = { 0 }, vl = { 0 };
	struct set vals = { 0 };
	const cJSON *c;
	char w[LIST_MAX + 16];

	(void)meta;
	FOR_CONTAINERS(c, spec)
	{
		const char *pm = km_str(sc(c), "procMount");

		if (pm && strcmp(pm, "Default")) {
			list_add(&bad, cname(c), 1);
			set_add(&vals, pm);
		}
	}
	if (!bad.n)
		return 0;
	who(&bad, w, sizeof(w));
	set_join(&vals, &vl, 1);
	return forbid(f, "procMount",
		      "%s must not set securityContext.procMount to %s", w,
		      vl.s);
}

static int check_volumes(const cJSON *spec, const cJSON *meta,
			 struct finding *f)
{
	static const char *const ok[] = {
		"configMap", "csi",	  "downwardAPI",
		"emptyDir",  "ephemeral", "persistentVolumeClaim",
		"projected", "secret"
	};
	struct list bad = { 0 }, tl = { 0 };
	struct set types = { 0 };
	const cJSON *v, *m;

	(void)meta;
	cJSON_ArrayForEach (v, km_get(spec, "volumes")) {
		/* A volume with no source is defaulted to an emptyDir. */
		const char *type = NULL;
		int allowed = 0;

		cJSON_ArrayForEach (m, v) {
			if (!strcmp(m->string, "name") || cJSON_IsNull(m))
				continue;
			type = m->string;
			for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
				allowed |= !strcmp(type, ok[i]);
		}
		if (allowed || !type)
			continue;
		list_add(&bad, km_str(v, "name") ?: "", 1);
		set_add(&types, type);
	}
	if (!bad.n)
		return 0;
	set_join(&types, &tl, 1);
	return forbid(f, "restricted volume types", "%s %s %s %s %s",
		      plural("volume", "volumes", bad.n), bad.s,
		      plural("uses", "use", bad.n),
		      plural("restricted volume type",
			     "restricted volume types", types.n),
		      tl.s);
}

static int check_nonroot(const cJSON *spec, const cJSON *meta,
			 struct finding *f)
{
	const cJSON *p = km_get(km_get(spec, "securityContext"),
				"runAsNonRoot"),
		    *c, *v;
	struct list expl = { 0 }, impl = { 0 };
	int pod_bad = cJSON_IsFalse(p), pod_ok = cJSON_IsTrue(p);
	char w[LIST_MAX + 16] = "";

	(void)meta;
	FOR_CONTAINERS(c, spec)
	{
		v = km_get(sc(c), "runAsNonRoot");
		if (cJSON_IsBool(v)) {
			if (cJSON_IsFalse(v))
				list_add(&expl, cname(c), 1);
		} else if (!pod_ok) {
			list_add(&impl, cname(c), 1);
		}
	}
	if (pod_bad || expl.n) {
		if (expl.n)
			who(&expl, w, sizeof(w));
		return forbid(f, "runAsNonRoot != true",
			      "%s%s%s must not set "
			      "securityContext.runAsNonRoot=false",
			      pod_bad ? "pod" : "",
			      pod_bad && expl.n ? " and " : "", w);
	}
	if (!impl.n)
		return 0;
	who(&impl, w, sizeof(w));
	return forbid(f, "runAsNonRoot != true",
		      "pod or %s must set securityContext.runAsNonRoot=true",
		      w);
}

static int is_zero(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble == 0;
}

static int check_runasuser(const cJSON *spec, const cJSON *meta,
			   struct finding *f)
{
	int pod = is_zero(km_get(km_get(spec, "securityContext"), "runAsUser"));
	struct list bad = { 0 };
	const cJSON *c;
	char w[LIST_MAX + 16] = "";

	(void)meta;
	FOR_CONTAINERS(c, spec)
	{
		if (is_zero(km_get(sc(c), "runAsUser")))
			list_add(&bad, cname(c), 1);
	}
	if (!pod && !bad.n)
		return 0;
	if (bad.n)
		who(&bad, w, sizeof(w));
	return forbid(f, "runAsUser=0", "%s%s%s must not set runAsUser=0",
		      pod ? "pod" : "", pod && bad.n ? " and " : "", w);
}

/* seLinuxOptions: a type outside the container types, a user or a
 * role; *bad collects the types, *ur bit 1 a user, bit 2 a role. */
static int selinux_bad(const cJSON *o, struct set *types, int *ur)
{
	static const char *const ok[] = { "", "container_t", "container_init_t",
					  "container_kvm_t",
					  "container_engine_t" };
	const char *t = km_str(o, "type") ?: "";
	int good = 0;

	if (!o)
		return 0;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		good |= !strcmp(t, ok[i]);
	if (!good)
		set_add(types, t);
	if (km_str(o, "user") && *km_str(o, "user")) {
		*ur |= 1;
		good = 0;
	}
	if (km_str(o, "role") && *km_str(o, "role")) {
		*ur |= 2;
		good = 0;
	}
	return !good;
}

static int check_selinux(const cJSON *spec, const cJSON *meta,
			 struct finding *f)
{
	struct setters s = { 0 };
	struct list tl = { 0 };
	const cJSON *c;
	char w[LIST_MAX + 64], data[LIST_MAX + 64] = "";
	int ur = 0;

	(void)meta;
	s.pod = selinux_bad(
		km_get(km_get(spec, "securityContext"), "seLinuxOptions"),
		&s.values, &ur);
	FOR_CONTAINERS(c, spec)
	{
		if (selinux_bad(km_get(sc(c), "seLinuxOptions"), &s.values,
				&ur))
			list_add(&s.bad, cname(c), 1);
	}
	if (!s.pod && !s.bad.n)
		return 0;
	setters_who(&s, w, sizeof(w));
	/* The parts of the detail are joined with "; ". */
	if (s.values.n) {
		set_join(&s.values, &tl, 1);
		snprintf(data, sizeof(data), "%s %s",
			 plural("type", "types", s.values.n), tl.s);
	}
	for (int b = 1; b <= 2; b++) {
		if (!(ur & b))
			continue;
		catf(data, sizeof(data), "%s%s may not be set",
		     data[0] ? "; " : "", b == 1 ? "user" : "role");
	}
	return forbid(f, "seLinuxOptions",
		      "%s set forbidden securityContext.seLinuxOptions: %s", w,
		      data);
}

static int seccomp_baseline_ok(const char *t)
{
	return strcmp(t, "Unconfined") != 0;
}

static int seccomp_restricted_ok(const char *t)
{
	return !strcmp(t, "RuntimeDefault") || !strcmp(t, "Localhost");
}

static int seccomp_bad_setters(struct setters *s, struct finding *f)
{
	struct list vl = { 0 };
	char w[LIST_MAX + 64];

	setters_who(s, w, sizeof(w));
	set_join(&s->values, &vl, 1);
	return forbid(f, "seccompProfile",
		      "%s must not set securityContext.seccompProfile.type "
		      "to %s",
		      w, vl.s);
}

static int check_seccomp_baseline(const cJSON *spec, const cJSON *meta,
				  struct finding *f)
{
	struct setters s = { 0 };

	(void)meta;
	setters_scan(spec, "seccompProfile", seccomp_baseline_ok, &s);
	return s.pod || s.bad.n ? seccomp_bad_setters(&s, f) : 0;
}

static int check_seccomp_restricted(const cJSON *spec, const cJSON *meta,
				    struct finding *f)
{
	struct setters s = { 0 };
	struct list impl = { 0 };
	const cJSON *c;
	char w[LIST_MAX + 16];
	int pod_set = km_str(km_get(km_get(spec, "securityContext"),
				    "seccompProfile"),
			     "type") != NULL;

	(void)meta;
	setters_scan(spec, "seccompProfile", seccomp_restricted_ok, &s);
	if (s.pod || s.bad.n)
		return seccomp_bad_setters(&s, f);
	FOR_CONTAINERS(c, spec)
	{
		if (!km_get(sc(c), "seccompProfile") && !pod_set)
			list_add(&impl, cname(c), 1);
	}
	if (!impl.n)
		return 0;
	who(&impl, w, sizeof(w));
	return forbid(f, "seccompProfile",
		      "pod or %s must set securityContext.seccompProfile.type "
		      "to \"RuntimeDefault\" or \"Localhost\"",
		      w);
}

static int check_sysctls(const cJSON *spec, const cJSON *meta,
			 struct finding *f)
{
	static const char *const ok[] = {
		"kernel.shm_rmid_forced",
		"net.ipv4.ip_local_port_range",
		"net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range",
		"net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time",
		"net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes",
		"net.ipv4.tcp_rmem",
		"net.ipv4.tcp_wmem",
	};
	struct list l = { 0 };
	const cJSON *s;

	(void)meta;
	cJSON_ArrayForEach (
		s, km_get(km_get(spec, "securityContext"), "sysctls")) {
		const char *n = km_str(s, "name") ?: "";
		int good = 0;

		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			good |= !strcmp(n, ok[i]);
		if (!good)
			list_add(&l, n, 0);
	}
	return l.n ? forbid(f, "forbidden sysctls", "%s", l.s) : 0;
}

enum level { L_PRIVILEGED, L_BASELINE, L_RESTRICTED };

/* The checks, in the order of their IDs, as the real evaluator runs
 * them; a restricted check may replace a baseline one (overrides). */
static const struct check {
	const char *id;
	enum level level;
	const char *overrides;
	int (*fn)(const cJSON *spec, const cJSON *meta, struct finding *f);
} checks[] = {
	{ "allowPrivilegeEscalation", L_RESTRICTED, NULL, check_ape },
	{ "appArmorProfile", L_BASELINE, NULL, check_apparmor },
	{ "capabilities_baseline", L_BASELINE, NULL, check_caps_baseline },
	{ "capabilities_restricted", L_RESTRICTED, "capabilities_baseline",
	  check_caps_restricted },
	{ "hostNamespaces", L_BASELINE, NULL, check_host_ns },
	{ "hostPathVolumes", L_BASELINE, NULL, check_hostpath },
	{ "hostPorts", L_BASELINE, NULL, check_hostports },
	{ "privileged", L_BASELINE, NULL, check_privileged },
	{ "procMount", L_BASELINE, NULL, check_procmount },
	{ "restrictedVolumes", L_RESTRICTED, NULL, check_volumes },
	{ "runAsNonRoot", L_RESTRICTED, NULL, check_nonroot },
	{ "runAsUser", L_RESTRICTED, NULL, check_runasuser },
	{ "seLinuxOptions", L_BASELINE, NULL, check_selinux },
	{ "seccompProfile_baseline", L_BASELINE, NULL, check_seccomp_baseline },
	{ "seccompProfile_restricted", L_RESTRICTED, "seccompProfile_baseline",
	  check_seccomp_restricted },
	{ "sysctls", L_BASELINE, NULL, check_sysctls },
};

#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

static int overridden(const char *id, enum level lvl)
{
	for (size_t i = 0; i < NCHECKS; i++)
		if (checks[i].overrides && checks[i].level <= lvl &&
		    !strcmp(checks[i].overrides, id))
			return 1;
	return 0;
}

int km_psa_evaluate(const cJSON *pod, const char *level, struct hb_buf *out)
{
	static const char *const names[] = { "privileged", "baseline",
					     "restricted" };
	const cJSON *spec = km_get(pod, "spec"),
		    *meta = km_get(pod, "metadata");
	enum level lvl = L_RESTRICTED;
	int n = 0;

	for (int i = 0; i < 3; i++)
		if (!strcmp(level, names[i]))
			lvl = (enum level)i;
	for (size_t i = 0; i < NCHECKS; i++) {
		struct finding f;

		if (checks[i].level > lvl || overridden(checks[i].id, lvl) ||
		    !checks[i].fn(spec, meta, &f))
			continue;
		hb_buf_printf(out, "%s%s%s%s%s", n++ ? ", " : "", f.reason,
			      f.detail[0] ? " (" : "", f.detail,
			      f.detail[0] ? ")" : "");
	}
	return n;
}

/* ---- admission ------------------------------------------------------ */

/* The policy of one mode (enforce, warn, audit): "restricted:latest" in
 * pol, or 0 when the namespace sets none (privileged). */
static int policy_of(const cJSON *labels, const char *mode, char *level,
		     size_t lcap, char *pol, size_t cap)
{
	char key[80];
	const char *l, *v;

	snprintf(key, sizeof(key), PSA "%s", mode);
	l = km_str(labels, key);
	snprintf(key, sizeof(key), PSA "%s-version", mode);
	v = km_str(labels, key);
	if (!l || !strcmp(l, "privileged"))
		return 0;
	/* A level the plugin does not know is enforced as restricted. */
	if (strcmp(l, "baseline") && strcmp(l, "restricted"))
		l = "restricted";
	if (!v || (strcmp(v, "latest") && (v[0] != 'v' || !strchr(v, '.'))))
		v = "latest";
	snprintf(level, lcap, "%s", l);
	snprintf(pol, cap, "%s:%s", l, v);
	return 1;
}

int km_psa_admit(struct km_ctx *ctx, const char *ns, const cJSON *pod,
		 struct hb_buf *warnings, cJSON **status)
{
	static const char *const modes[] = { "enforce", "warn", "audit" };
	struct km_obj *nso = km_store_get(ctx->store, KM_NAMESPACE, NULL, ns);
	const cJSON *labels =
		nso ? km_get(km_get(nso->tree, "metadata"), "labels") : NULL;
	const char *name = km_meta_str(pod, "name") ?: "";
	char level[16], pol[64];
	struct hb_buf why;
	int rc = 0;

	*status = NULL;
	hb_buf_init(&why, 64 * 1024);
	for (int m = 0; m < 3 && !rc; m++) {
		hb_buf_reset(&why);
		if (!policy_of(labels, modes[m], level, sizeof(level), pol,
			       sizeof(pol)) ||
		    !km_psa_evaluate(pod, level, &why) || !why.data)
			continue;
		if (m == 0) {
			*status = km_statusf(403, "Forbidden", KM_POD, name,
					     "pods \"%s\" is forbidden: "
					     "violates PodSecurity \"%s\": %s",
					     name, pol, why.data);
			rc = HB_EPERM;
		} else if (m == 1 && warnings) {
			hb_buf_printf(warnings,
				      "would violate PodSecurity \"%s\": %s\n",
				      pol, why.data);
		} else if (m == 2) {
			hb_log(HB_LOG_INFO,
			       "audit: pod %s/%s violates PodSecurity "
			       "\"%s\": %s",
			       ns, name, pol, why.data);
		}
	}
	hb_buf_free(&why);
	km_obj_unref(nso);
	return rc;
}
