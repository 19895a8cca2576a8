/*
 * cmd_doctor.c - hpcbridge doctor [--config FILE] [--user NAME]...: what
 * a site must have in place before burst jobs can run on its cluster as
 * their users, checked against the cluster itself.
 *
 * With remote.backend kubernetes it reads, through the configuration's
 * kubeconfig, the namespace burst jobs go to and says in plain words:
 *   - whether the namespace exists and what its Pod Security labels
 *     enforce (hpcbridge's pods meet "restricted");
 *   - on OpenShift, the uid range the namespace assigns
 *     (openshift.io/sa.scc.uid-range): a user whose uid lies outside it
 *     can only run there through a site SCC that allows the uid;
 *   - whether the MPIJob API (the MPI Operator) is served;
 *   - whether the Kueue LocalQueue the configuration names exists.
 * Each finding is one line, "ok", "warn" or "FAIL"; the exit code is 1
 * when anything failed.  It only reads.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/k8s_opts.h"

#define MAX_USERS 64

/* The ordinary users a site's login.defs gives by default. */
#define UID_MIN 1000
#define UID_MAX 60000

static const struct hb_kube_res ns_res = { "", "v1", "namespaces",
					   "Namespace" };
static const struct hb_kube_res lq_res = { "kueue.x-k8s.io", "v1beta1",
					   "localqueues", "LocalQueue" };

struct doctor {
	int failed;
	struct hb_kube *k;
	const char *ns;
	const struct hb_k8s_opts *k8s;
};

static void say(struct doctor *dr, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct doctor *dr, const char *level, const char *fmt, ...)
{
	va_list ap;

	if (!strcmp(level, "FAIL"))
		dr->failed = 1;
	printf("%-4s  ", level);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/*
 * Whether id lies in an OpenShift range annotation: blocks "START/SIZE"
 * (or "START-END"), separated by commas.  -1 if the text is not one.
 */
/* The users to check: those named, else the site's ordinary users. */
static size_t users_to_check(char **named, size_t nnamed,
			     struct passwd *out, char **names)
{
	size_t n = 0;
	struct passwd *pw;

	for (size_t i = 0; i < nnamed && n < MAX_USERS; i++) {
		if (!(pw = getpwnam(named[i]))) {
			fprintf(stderr, "hpcbridge doctor: no user %s\n",
				named[i]);
			continue;
		}
		out[n] = *pw;
		names[n++] = strdup(pw->pw_name);
	}
	if (nnamed)
		return n;
	setpwent();
	while ((pw = getpwent()) && n < MAX_USERS)
		if (pw->pw_uid >= UID_MIN && pw->pw_uid < UID_MAX) {
			out[n] = *pw;
			names[n++] = strdup(pw->pw_name);
		}
	endpwent();
	return n;
}

static void check_uids(struct doctor *dr, const cJSON *ann, char **named,
		       size_t nnamed)
{
	const char *range = NULL;
	struct passwd users[MAX_USERS];
	char *names[MAX_USERS];
	size_t n, outside = 0;

	hb_doc_get_str(ann, "openshift.io/sa.scc.uid-range", 256, 0, &range,
		       NULL);
	if (!range) {
		say(dr, "ok", "namespace %s assigns no uid range (not "
			      "OpenShift): pods run as the user's own uid",
		    dr->ns);
		return;
	}
	if (hb_k8s_uid_in_range(range, 0) < 0) {
		say(dr, "warn", "namespace %s: cannot read its uid range '%s'",
		    dr->ns, range);
		return;
	}
	say(dr, "ok", "namespace %s assigns uids %s (OpenShift)", dr->ns,
	    range);
	if (dr->k8s->uid_range && strcmp(dr->k8s->uid_range, range))
		say(dr, "FAIL",
		    "kubernetes.openshift.uid_range is %s, not the namespace's "
		    "%s: placement would send jobs the namespace refuses, or "
		    "keep ones it takes",
		    dr->k8s->uid_range, range);
	else if (!dr->k8s->uid_range && !dr->k8s->openshift_scc)
		say(dr, "warn",
		    "neither kubernetes.openshift.uid_range nor "
		    "kubernetes.openshift.scc is set: a job whose uid is "
		    "outside the range bursts, and its pods are refused");
	n = users_to_check(named, nnamed, users, names);
	for (size_t i = 0; i < n; i++) {
		if (hb_k8s_uid_in_range(range, users[i].pw_uid) == 1)
			say(dr, "ok", "user %s (uid %u) is inside the range",
			    names[i] ? names[i] : "?",
			    (unsigned)users[i].pw_uid);
		else if (outside++ < 10)
			say(dr, "warn",
			    "user %s (uid %u) is outside the range: restricted-v2 "
			    "rejects its pods unless a site SCC allows its uid "
			    "(docs/kubernetes.md, OpenShift)",
			    names[i] ? names[i] : "?",
			    (unsigned)users[i].pw_uid);
		free(names[i]);
	}
	if (outside > 10)
		say(dr, "warn", "%zu more users outside the range", outside - 10);
}

static void check_namespace(struct doctor *dr, char **named, size_t nnamed)
{
	char sel[300];
	cJSON *items = NULL, *ns;
	const cJSON *labels, *ann;
	const char *enforce = NULL;
	struct hb_err err = { 0 };

	snprintf(sel, sizeof(sel), "metadata.name=%s", dr->ns);
	if (hb_kube_list_cluster(dr->k, &ns_res, NULL, sel, 0, &items, &err)) {
		say(dr, "FAIL", "cannot read namespace %s: %s", dr->ns,
		    err.msg);
		return;
	}
	if (!(ns = cJSON_GetArrayItem(items, 0))) {
		say(dr, "FAIL", "namespace %s does not exist", dr->ns);
		cJSON_Delete(items);
		return;
	}
	labels = hb_doc_get(ns, "metadata.labels");
	ann = hb_doc_get(ns, "metadata.annotations");
	hb_doc_get_str(labels, "pod-security.kubernetes.io/enforce", 64, 0,
		       &enforce, NULL);
	say(dr, "ok", "namespace %s: Pod Security enforces %s%s", dr->ns,
	    enforce ? enforce : "nothing",
	    enforce ? "; hpcbridge's pods meet restricted" : "");
	check_uids(dr, ann, named, nnamed);
	cJSON_Delete(items);
}

static void check_apis(struct doctor *dr, const struct hb_config *cfg)
{
	struct hb_err err = { 0 };
	cJSON *page = NULL;
	const char *q = cfg->k8s.default_queue;

	if (hb_kube_list(dr->k, &hb_kube_mpijob, dr->ns, NULL, NULL, 1, NULL,
			 &page, &err))
		say(dr, "FAIL",
		    "MPIJobs (kubeflow.org/v2beta1) are not served: is the MPI "
		    "Operator installed? %s",
		    err.msg);
	else
		say(dr, "ok", "MPIJobs (kubeflow.org/v2beta1) are served");
	cJSON_Delete(page);
	if (!q) {
		say(dr, "ok", "no Kueue queue configured (kubernetes.queue)");
		return;
	}
	memset(&err, 0, sizeof(err));
	if (hb_kube_get(dr->k, &lq_res, dr->ns, q, NULL, &err))
		say(dr, "FAIL", "Kueue LocalQueue %s/%s: %s", dr->ns, q,
		    err.msg);
	else
		say(dr, "ok", "Kueue LocalQueue %s/%s exists", dr->ns, q);
}

static const char usage[] =
	"usage: hpcbridge doctor [--config FILE] [--user NAME]...\n"
	"  check the cluster burst jobs go to: its namespace, Pod Security,\n"
	"  OpenShift uid range (for the users named, else every user of uid\n"
	"  1000-59999), the MPIJob API and the Kueue LocalQueue\n";

int hb_cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "user", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *config = getenv("HPCBRIDGE_CONFIG");
	char *named[MAX_USERS];
	size_t nnamed = 0;
	struct hb_config cfg;
	struct hb_kube_config *kc = NULL;
	struct doctor dr = { 0 };
	struct hb_err err = { 0 };
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:u:h", opts, NULL)) != -1) {
		if (opt == 'c')
			config = optarg;
		else if (opt == 'u' && nnamed < MAX_USERS)
			named[nnamed++] = optarg;
		else {
			fputs(usage, opt == 'h' ? stdout : stderr);
			return opt == 'h' ? HB_EXIT_OK : HB_EXIT_USAGE;
		}
	}
	memset(&cfg, 0, sizeof(cfg));
	if (hb_cli_load_config(config, &cfg, &err)) {
		fprintf(stderr, "hpcbridge doctor: %s\n", err.msg);
		hb_config_free(&cfg);
		return HB_EXIT_INPUT;
	}
	if (strcmp(cfg.remote_backend, "kubernetes")) {
		say(&dr, "ok", "remote.backend is %s: no cluster to check",
		    cfg.remote_backend);
		hb_config_free(&cfg);
		return HB_EXIT_OK;
	}
	rc = cfg.remote_kubeconfig && !strcmp(cfg.remote_kubeconfig,
					      "in-cluster")
		     ? hb_kube_config_incluster(NULL, &kc, &err)
		     : hb_kube_config_load(cfg.remote_kubeconfig,
					   cfg.remote_context, &kc, &err);
	if (!rc)
		rc = hb_kube_new(kc, NULL, &dr.k, &err);
	if (rc) {
		say(&dr, "FAIL", "cannot reach the cluster: %s", err.msg);
	} else {
		dr.k8s = &cfg.k8s;
		dr.ns = cfg.k8s.namespace ? cfg.k8s.namespace
					  : hb_kube_config_namespace(kc);
		if (!dr.ns)
			dr.ns = "default";
		say(&dr, "ok", "cluster %s, namespace %s",
		    hb_kube_config_server(kc), dr.ns);
		check_namespace(&dr, named, nnamed);
		check_apis(&dr, &cfg);
	}
	hb_kube_free(dr.k);
	hb_kube_config_free(kc);
	hb_config_free(&cfg);
	return dr.failed ? HB_EXIT_INPUT : HB_EXIT_OK;
}
