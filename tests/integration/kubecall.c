/*
 * kubecall - drive the Kubernetes client (include/hpcbridge/kube.h) from a
 * shell, for tests/integration/kube_client.test.sh.
 *
 *   kubecall [options] VERB ARGS...
 *
 * Options (before the verb):
 *   --kubeconfig PATHS   colon-separated list ($KUBECONFIG otherwise)
 *   --context NAME       a context other than current-context
 *   --incluster ROOT     the in-cluster configuration under ROOT
 *   --ns NS              the namespace (the configuration's otherwise)
 *   --timeout-ms N --connect-timeout-ms N --retries N --backoff-ms N
 *   --backoff-cap-ms N --max-body N
 *   --repeat N           make the call N times with one client
 *   --interval-ms N      pause between repeats
 *   --rewrite-keep-mtime FILE VALUE   once the client exists, write VALUE
 *                        into FILE in place and put its mtime back (a
 *                        rotation the mtime does not show)
 *   --log-level LEVEL    the library's log (stderr)
 *
 * Verbs (RES: mpijobs, trainjobs, pods, events, configmaps):
 *   create RES FILE | get RES NAME | list RES [--selector S] [--fields F]
 *   [--limit N] [--continue C] | list-all RES [--selector S] [--limit N] |
 *   delete RES NAME [--propagation P] | apply RES FILE --manager M
 *   [--force] [--status] | patch-status RES NAME FILE | log POD
 *   [--container C] [--limit N] | follow POD [--follow-timeout-ms N] |
 *   events NAME | reflect RES [--all-namespaces] [--selector S] [--page N]
 *   [--watch-timeout-s N] [--poll-ms N] [--for-ms N]
 *
 * FILE is YAML or JSON ("-": standard input).  Results go to standard
 * output (JSON, or the log's text, or for reflect one line per event:
 * "TYPE ns/name rv", with " synth" for a DELETED the reflector made up).
 * After each call one line goes to standard error:
 *   status rc=OK|ENAME http=N reason=R attempts=N ms=N
 * and on error "error: MESSAGE".  Exit status: 0, 1 (the call failed) or
 * 2 (usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/kube.h"
#include "hpcbridge/log.h"

static const struct hb_kube_res configmaps = { "", "v1", "configmaps",
					       "ConfigMap" };

static atomic_int stop;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

static __attribute__((noreturn)) void usage(void)
{
	fprintf(stderr, "usage: kubecall [options] VERB ARGS... (see the "
			"source's header)\n");
	exit(2);
}

static long num(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s) {
		fprintf(stderr, "kubecall: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

static const struct hb_kube_res *resource(const char *name)
{
	if (!strcmp(name, "mpijobs"))
		return &hb_kube_mpijob;
	if (!strcmp(name, "trainjobs"))
		return &hb_kube_trainjob;
	if (!strcmp(name, "pods"))
		return &hb_kube_pod;
	if (!strcmp(name, "events"))
		return &hb_kube_event;
	if (!strcmp(name, "configmaps"))
		return &configmaps;
	fprintf(stderr, "kubecall: unknown resource %s\n", name);
	exit(2);
}

static cJSON *read_doc(const char *path)
{
	struct hb_buf b;
	struct hb_err err = { 0 };
	char tmp[4096];
	cJSON *doc = NULL;
	int fd = strcmp(path, "-") ? open(path, O_RDONLY) : 0;
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "kubecall: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	hb_buf_init(&b, HB_DOC_MAX);
	while ((n = read(fd, tmp, sizeof(tmp))) > 0)
		if (hb_buf_append(&b, tmp, (size_t)n)) {
			fprintf(stderr, "kubecall: %s: too large\n", path);
			exit(2);
		}
	if (fd)
		close(fd);
	if (hb_doc_parse(b.data ? b.data : "", b.len, path, &doc, &err)) {
		fprintf(stderr, "kubecall: %s\n", err.msg);
		exit(2);
	}
	hb_buf_free(&b);
	return doc;
}

static void print_json(const cJSON *doc)
{
	struct hb_buf b;

	hb_buf_init(&b, 0);
	if (doc && !hb_doc_write_json(doc, &b))
		fwrite(b.data, 1, b.len, stdout);
	fflush(stdout);
	hb_buf_free(&b);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write value into path in place, then give it its old times back. */
static void rewrite_keep_mtime(const char *path, const char *value)
{
	struct stat st;
	struct timespec ts[2];
	int fd = open(path, O_WRONLY);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "kubecall: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (pwrite(fd, value, strlen(value), 0) != (ssize_t)strlen(value) ||
	    ftruncate(fd, (off_t)strlen(value))) {
		fprintf(stderr, "kubecall: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	if (futimens(fd, ts)) {
		fprintf(stderr, "kubecall: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	close(fd);
}

static int print_event(void *ctx, const struct hb_kube_event *ev)
{
	static const char *names[] = { "ADDED", "MODIFIED", "DELETED",
				       "BOOKMARK", "ERROR" };
	const cJSON *md, *ns, *name, *uid;

	(void)ctx;
	if (ev->type == HB_KUBE_BOOKMARK) {
		printf("BOOKMARK - %s\n", ev->rv);
		fflush(stdout);
		return 0;
	}
	md = cJSON_GetObjectItemCaseSensitive(ev->object, "metadata");
	ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	name = cJSON_GetObjectItemCaseSensitive(md, "name");
	uid = cJSON_GetObjectItemCaseSensitive(md, "uid");
	printf("%s %s/%s %s%s\n", names[ev->type],
	       cJSON_IsString(ns) ? ns->valuestring : "",
	       cJSON_IsString(name) ? name->valuestring : "?", ev->rv,
	       ev->type == HB_KUBE_DELETED && !uid ? " synth" : "");
	fflush(stdout);
	return 0;
}

static int print_chunk(void *ctx, const char *data, size_t len)
{
	(void)ctx;
	fwrite(data, 1, len, stdout);
	fflush(stdout);
	return 0;
}

struct args {
	const char *selector, *fields, *cont, *propagation, *manager;
	const char *container;
	int limit, force, status, all_ns, page, watch_timeout_s, poll_ms;
	int follow_timeout_ms, for_ms;
};

static int run_verb(struct hb_kube *k, const char *verb, char **pos, int npos,
		    const char *ns, const struct args *a, struct hb_err *err)
{
	cJSON *out = NULL, *in = NULL;
	int rc;

#define NEED(n)                                                                \
	do {                                                                   \
		if (npos < (n))                                                \
			usage();                                               \
	} while (0)
	if (!strcmp(verb, "create")) {
		NEED(2);
		in = read_doc(pos[1]);
		rc = hb_kube_create(k, resource(pos[0]), ns, in, &out, err);
	} else if (!strcmp(verb, "get")) {
		NEED(2);
		rc = hb_kube_get(k, resource(pos[0]), ns, pos[1], &out, err);
	} else if (!strcmp(verb, "list")) {
		NEED(1);
		rc = hb_kube_list(k, resource(pos[0]), ns, a->selector,
				  a->fields, a->limit, a->cont, &out, err);
	} else if (!strcmp(verb, "list-all")) {
		char rv[32];
		cJSON *items = NULL;

		NEED(1);
		rc = hb_kube_list_all(k, resource(pos[0]), ns, a->selector,
				      a->limit, &items, rv, err);
		if (!rc) {
			out = cJSON_CreateObject();
			cJSON_AddStringToObject(out, "resourceVersion", rv);
			cJSON_AddItemToObject(out, "items", items);
		}
	} else if (!strcmp(verb, "delete")) {
		NEED(2);
		rc = hb_kube_delete(k, resource(pos[0]), ns, pos[1],
				    a->propagation, err);
	} else if (!strcmp(verb, "apply")) {
		NEED(2);
		in = read_doc(pos[1]);
		rc = hb_kube_apply(k, resource(pos[0]), ns, in, a->manager,
				   a->force, a->status, &out, err);
	} else if (!strcmp(verb, "patch-status")) {
		NEED(3);
		in = read_doc(pos[2]);
		rc = hb_kube_patch_status(k, resource(pos[0]), ns, pos[1], in,
					  &out, err);
	} else if (!strcmp(verb, "log")) {
		struct hb_buf b;

		NEED(1);
		hb_buf_init(&b, 0);
		rc = hb_kube_log(k, ns, pos[0], a->container,
				 (size_t)(a->limit > 0 ? a->limit : 0), &b,
				 err);
		if (!rc && b.len)
			fwrite(b.data, 1, b.len, stdout);
		hb_buf_free(&b);
	} else if (!strcmp(verb, "follow")) {
		NEED(1);
		rc = hb_kube_log_follow(k, ns, pos[0], a->container,
					a->follow_timeout_ms, print_chunk, NULL,
					err);
	} else if (!strcmp(verb, "events")) {
		NEED(1);
		rc = hb_kube_events(k, ns, pos[0], &out, err);
	} else if (!strcmp(verb, "reflect")) {
		struct hb_kube_reflect_opts o = {
			.ns = a->all_ns ? NULL : (ns ? ns : ""),
			.selector = a->selector,
			.page = a->page,
			.poll_ms = a->poll_ms,
			.watch_timeout_s = a->watch_timeout_s,
		};

		NEED(1);
		if (o.ns && !*o.ns)
			o.ns = NULL;
		if (!a->all_ns && !o.ns) {
			fprintf(stderr, "kubecall: reflect needs --ns or "
					"--all-namespaces\n");
			exit(2);
		}
		if (a->for_ms > 0) {
			struct itimerval it = { .it_value = { a->for_ms / 1000,
							      (a->for_ms %
							       1000) * 1000 } };

			setitimer(ITIMER_REAL, &it, NULL);
		}
		rc = hb_kube_reflect(k, resource(pos[0]), &o, print_event, NULL,
				     &stop, err);
	} else {
		usage();
	}
	if (!rc && out)
		print_json(out);
	cJSON_Delete(out);
	cJSON_Delete(in);
	return rc;
}

int main(int argc, char **argv)
{
	struct hb_kube_opts o = { 0 };
	struct hb_kube_config *cfg = NULL;
	struct hb_kube *k = NULL;
	struct hb_err err = { 0 };
	struct args a = { 0 };
	const char *kc = NULL, *context = NULL, *incluster = NULL, *ns = NULL;
	const char *rw_file = NULL, *rw_value = NULL;
	char *pos[8];
	int npos = 0, repeat = 1, interval = 0, rc = 0, i;
	const char *verb = NULL;
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	for (i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

#define OPT(name) (!strcmp(s, name) && (v || (usage(), 0)) && ++i)
		if (OPT("--kubeconfig"))
			kc = v;
		else if (OPT("--context"))
			context = v;
		else if (OPT("--incluster"))
			incluster = v;
		else if (OPT("--ns"))
			ns = v;
		else if (OPT("--timeout-ms"))
			o.timeout_ms = (int)num(v);
		else if (OPT("--connect-timeout-ms"))
			o.connect_timeout_ms = (int)num(v);
		else if (OPT("--retries"))
			o.retries = (int)num(v);
		else if (OPT("--backoff-ms"))
			o.backoff_ms = (int)num(v);
		else if (OPT("--backoff-cap-ms"))
			o.backoff_cap_ms = (int)num(v);
		else if (OPT("--max-body"))
			o.max_body = (size_t)num(v);
		else if (OPT("--repeat"))
			repeat = (int)num(v);
		else if (OPT("--interval-ms"))
			interval = (int)num(v);
		else if (!strcmp(s, "--rewrite-keep-mtime") && i + 2 < argc) {
			rw_file = argv[++i];
			rw_value = argv[++i];
		} else if (OPT("--log-level")) {
			enum hb_log_level l;

			if (hb_log_level_parse(v, &l))
				usage();
			hb_log_set_level(l);
		} else if (OPT("--selector"))
			a.selector = v;
		else if (OPT("--fields"))
			a.fields = v;
		else if (OPT("--limit"))
			a.limit = (int)num(v);
		else if (OPT("--continue"))
			a.cont = v;
		else if (OPT("--propagation"))
			a.propagation = v;
		else if (OPT("--manager"))
			a.manager = v;
		else if (OPT("--container"))
			a.container = v;
		else if (OPT("--page"))
			a.page = (int)num(v);
		else if (OPT("--watch-timeout-s"))
			a.watch_timeout_s = (int)num(v);
		else if (OPT("--poll-ms"))
			a.poll_ms = (int)num(v);
		else if (OPT("--follow-timeout-ms"))
			a.follow_timeout_ms = (int)num(v);
		else if (OPT("--for-ms"))
			a.for_ms = (int)num(v);
		else if (!strcmp(s, "--force"))
			a.force = 1;
		else if (!strcmp(s, "--status"))
			a.status = 1;
		else if (!strcmp(s, "--all-namespaces"))
			a.all_ns = 1;
		else if (s[0] == '-' && s[1] == '-')
			usage();
		else if (!verb)
			verb = s;
		else if (npos < 8)
			pos[npos++] = argv[i];
		else
			usage();
	}
	if (!verb)
		usage();
	rc = incluster ? hb_kube_config_incluster(incluster, &cfg, &err)
		       : hb_kube_config_load(kc, context, &cfg, &err);
	if (!rc)
		rc = hb_kube_new(cfg, &o, &k, &err);
	if (rc) {
		fprintf(stderr, "status rc=%s http=0 reason= attempts=0 ms=0\n",
			hb_errname(rc));
		fprintf(stderr, "error: %s\n", err.msg);
		hb_kube_config_free(cfg);
		return 1;
	}
	if (rw_file)
		rewrite_keep_mtime(rw_file, rw_value);
	for (i = 0; i < repeat; i++) {
		struct hb_kube_last last;
		int64_t t0 = now_ms();

		memset(&err, 0, sizeof(err));
		if (i && interval)
			usleep((useconds_t)interval * 1000);
		rc = run_verb(k, verb, pos, npos, ns, &a, &err);
		hb_kube_last(k, &last);
		fprintf(stderr,
			"status rc=%s http=%ld reason=%s attempts=%d "
			"ms=%lld\n",
			rc ? (hb_errname(rc) ? hb_errname(rc) : "?") : "OK",
			last.http, last.reason, last.attempts,
			(long long)(now_ms() - t0));
		if (rc) {
			fprintf(stderr, "error: %s\n", err.msg);
			break;
		}
	}
	hb_kube_free(k);
	hb_kube_config_free(cfg);
	return rc ? 1 : 0;
}
