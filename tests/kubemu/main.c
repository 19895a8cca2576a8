/*
 * main.c - hb-kubemu: options, start-up, the restarts that emulate
 * refused connections, and shutdown.
 *
 * See docs/emulator.md for the flags and what is emulated.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/log.h"
#include "kubemu.h"

#ifndef HB_KUBEMU_CRDS
#define HB_KUBEMU_CRDS "/usr/share/hpcbridge/crds"
#endif

static void usage(FILE *f)
{
	fputs("usage: hb-kubemu [OPTIONS]\n"
	      "\n"
	      "A Kubernetes API server emulator for hpcbridge: MPIJobs,\n"
	      "TrainJobs, pods (and their logs), events, leases and\n"
	      "ConfigMaps, nodes, with the real CRD schemas and an emulated\n"
	      "MPI Operator.\n"
	      "\n"
	      "  --listen HOST:PORT     address (default 127.0.0.1:0; port 0\n"
	      "                         picks a free one)\n"
	      "  --port-file FILE       write the port there once serving\n"
	      "  --tls-dir DIR          serve HTTPS with a CA made (or kept)\n"
	      "                         in DIR: ca.crt, ca.key, server.*\n"
	      "  --token TOKEN[:NS]     accept this bearer token (only in\n"
	      "                         namespace NS if given); repeatable;\n"
	      "                         none: no authentication\n"
	      "  --kubeconfig-out FILE  write a kubeconfig for clients\n"
	      "  --crds DIR             CRDs to validate against (default\n"
	      "                         " HB_KUBEMU_CRDS ")\n"
	      "  --pidfile FILE         write the process id there\n"
	      "  --workdir DIR          per-pod directories (default: a\n"
	      "                         temporary one, removed at exit)\n"
	      "  --execute              run launcher commands on this host\n"
	      "  --exec-env NAME=VALUE  add to executed containers' env\n"
	      "  --hostfile-slots N     slots in the launcher's hostfile\n"
	      "                         (default: workers x slotsPerWorker)\n"
	      "  --no-operator          do not run the emulated MPI Operator\n"
	      "  --no-kueue             do not run the emulated Kueue\n"
	      "  --pod-start-ms N       pending to running (default 200)\n"
	      "  --run-ms N             simulated launcher run (default 2000)\n"
	      "  --kill-grace-ms N      SIGTERM to SIGKILL (default 3000)\n"
	      "  --watch-window N       events kept for resuming (4096)\n"
	      "  --bookmark-ms N        bookmark interval (default 10000)\n"
	      "  --watch-timeout S      default watch timeout (1800)\n"
	      "  --log-level LEVEL      debug, info (default), warn, error\n"
	      "  --node NAME[,KEY=VALUE]...\n"
	      "                         a Node (repeatable): cpu, memory,\n"
	      "                         pods, nvidia.com/gpu, gpu-product,\n"
	      "                         label:KEY, ready, unschedulable;\n"
	      "                         with nodes, pods are scheduled\n"
	      "  --namespace NAME[,LABEL=VALUE|,annotation:KEY=VALUE]...\n"
	      "                         a Namespace (repeatable), e.g. with\n"
	      "                         pod-security.kubernetes.io/\n"
	      "                         enforce=restricted\n"
	      "  --pvc-root DIR         persistentVolumeClaim volumes of\n"
	      "                         executed pods are DIR/NAMESPACE/CLAIM\n"
	      "  --image-user UID       the user images run as when a pod\n"
	      "                         names none (the image's USER; 0)\n"
	      "  -h, --help             this help\n",
	      f);
}

static int parse_int(const char *s, long min, long max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < min || v > max)
		return HB_EINVAL;
	*out = (int)v;
	return 0;
}

static int add_token(struct km_opts *o, const char *arg)
{
	struct km_token *t;
	const char *colon = strchr(arg, ':');

	t = realloc(o->tokens, (o->ntokens + 1) * sizeof(*t));
	if (!t)
		return HB_ENOMEM;
	o->tokens = t;
	t = &o->tokens[o->ntokens];
	t->token = colon ? strndup(arg, (size_t)(colon - arg)) : strdup(arg);
	t->ns = colon && colon[1] ? strdup(colon + 1) : NULL;
	if (!t->token || !*t->token)
		return HB_EINVAL;
	o->ntokens++;
	return 0;
}

static int add_env(struct km_opts *o, const char *arg)
{
	char **e;

	if (!strchr(arg, '=') || arg[0] == '=')
		return HB_EINVAL;
	e = realloc(o->exec_env, (o->nexec_env + 1) * sizeof(*e));
	if (!e)
		return HB_ENOMEM;
	o->exec_env = e;
	e[o->nexec_env] = strdup(arg);
	return e[o->nexec_env++] ? 0 : HB_ENOMEM;
}

/* A --node or --namespace spec, checked now (by parse) so that a bad
 * one stops the start. */
static int add_spec(char ***specs, size_t *n, const char *arg,
		    int (*parse)(const char *, cJSON **, struct hb_err *))
{
	struct hb_err err = { 0 };
	cJSON *obj;
	char **v;
	int rc = parse(arg, &obj, &err);

	if (rc) {
		fprintf(stderr, "hb-kubemu: %s\n", err.msg);
		return rc;
	}
	cJSON_Delete(obj);
	v = realloc(*specs, (*n + 1) * sizeof(*v));
	if (!v)
		return HB_ENOMEM;
	*specs = v;
	v[*n] = strdup(arg);
	return v[(*n)++] ? 0 : HB_ENOMEM;
}

static int parse_listen(struct km_opts *o, const char *arg)
{
	const char *colon = strrchr(arg, ':');

	if (!colon || colon == arg)
		return HB_EINVAL;
	free(o->host);
	o->host = strndup(arg, (size_t)(colon - arg));
	return o->host ? parse_int(colon + 1, 0, 65535, &o->port) : HB_ENOMEM;
}

enum {
	O_LISTEN = 256,
	O_PORT_FILE,
	O_TLS_DIR,
	O_TOKEN,
	O_KUBECONFIG,
	O_CRDS,
	O_PIDFILE,
	O_WORKDIR,
	O_EXECUTE,
	O_EXEC_ENV,
	O_HOSTFILE_SLOTS,
	O_NO_OPERATOR,
	O_NO_KUEUE,
	O_POD_START,
	O_RUN_MS,
	O_KILL_GRACE,
	O_WINDOW,
	O_BOOKMARK,
	O_WATCH_TIMEOUT,
	O_LOG_LEVEL,
	O_NODE,
	O_NAMESPACE,
	O_PVC_ROOT,
	O_IMAGE_USER
};

static int parse_args(int argc, char **argv, struct km_opts *o)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "port-file", required_argument, NULL, O_PORT_FILE },
		{ "tls-dir", required_argument, NULL, O_TLS_DIR },
		{ "token", required_argument, NULL, O_TOKEN },
		{ "kubeconfig-out", required_argument, NULL, O_KUBECONFIG },
		{ "crds", required_argument, NULL, O_CRDS },
		{ "pidfile", required_argument, NULL, O_PIDFILE },
		{ "workdir", required_argument, NULL, O_WORKDIR },
		{ "execute", no_argument, NULL, O_EXECUTE },
		{ "exec-env", required_argument, NULL, O_EXEC_ENV },
		{ "hostfile-slots", required_argument, NULL, O_HOSTFILE_SLOTS },
		{ "no-operator", no_argument, NULL, O_NO_OPERATOR },
		{ "no-kueue", no_argument, NULL, O_NO_KUEUE },
		{ "pod-start-ms", required_argument, NULL, O_POD_START },
		{ "run-ms", required_argument, NULL, O_RUN_MS },
		{ "kill-grace-ms", required_argument, NULL, O_KILL_GRACE },
		{ "watch-window", required_argument, NULL, O_WINDOW },
		{ "bookmark-ms", required_argument, NULL, O_BOOKMARK },
		{ "watch-timeout", required_argument, NULL, O_WATCH_TIMEOUT },
		{ "log-level", required_argument, NULL, O_LOG_LEVEL },
		{ "node", required_argument, NULL, O_NODE },
		{ "namespace", required_argument, NULL, O_NAMESPACE },
		{ "pvc-root", required_argument, NULL, O_PVC_ROOT },
		{ "image-user", required_argument, NULL, O_IMAGE_USER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, v, rc = 0;
	enum hb_log_level lvl;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_LISTEN:
			rc = parse_listen(o, optarg);
			break;
		case O_PORT_FILE:
			o->port_file = optarg;
			break;
		case O_TLS_DIR:
			o->tls_dir = optarg;
			break;
		case O_TOKEN:
			rc = add_token(o, optarg);
			break;
		case O_KUBECONFIG:
			o->kubeconfig_out = optarg;
			break;
		case O_CRDS:
			o->crds_dir = optarg;
			break;
		case O_PIDFILE:
			o->pidfile = optarg;
			break;
		case O_WORKDIR:
			o->workdir = optarg;
			break;
		case O_EXECUTE:
			o->execute = 1;
			break;
		case O_EXEC_ENV:
			rc = add_env(o, optarg);
			break;
		case O_HOSTFILE_SLOTS:
			rc = parse_int(optarg, 1, 4096, &o->hostfile_slots);
			break;
		case O_NO_OPERATOR:
			o->no_operator = 1;
			break;
		case O_NO_KUEUE:
			o->no_kueue = 1;
			break;
		case O_POD_START:
			rc = parse_int(optarg, 0, 3600000, &o->pod_start_ms);
			break;
		case O_RUN_MS:
			rc = parse_int(optarg, 0, 86400000, &o->run_ms);
			break;
		case O_KILL_GRACE:
			rc = parse_int(optarg, 0, 600000, &o->kill_grace_ms);
			break;
		case O_WINDOW:
			rc = parse_int(optarg, 16, 10000000, &v);
			o->window = (size_t)v;
			break;
		case O_BOOKMARK:
			rc = parse_int(optarg, 10, 3600000, &o->bookmark_ms);
			break;
		case O_WATCH_TIMEOUT:
			rc = parse_int(optarg, 1, 86400, &o->watch_timeout_s);
			break;
		case O_NODE:
			rc = add_spec(&o->nodes, &o->nnodes, optarg,
				      km_node_from_spec);
			break;
		case O_NAMESPACE:
			rc = add_spec(&o->namespaces, &o->nnamespaces, optarg,
				      km_namespace_from_spec);
			break;
		case O_PVC_ROOT:
			o->pvc_root = optarg;
			break;
		case O_IMAGE_USER:
			rc = parse_int(optarg, 0, 2147483647, &v);
			km_image_uid = (unsigned)v;
			break;
		case O_LOG_LEVEL:
			rc = hb_log_level_parse(optarg, &lvl);
			if (!rc)
				hb_log_set_level(lvl);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return HB_EINVAL;
		}
		if (rc) {
			fprintf(stderr, "hb-kubemu: bad value for --%s: %s\n",
				opts[c - O_LISTEN].name, optarg);
			return rc;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hb-kubemu: unexpected argument %s\n",
			argv[optind]);
		return HB_EINVAL;
	}
	return 0;
}

/* Write text to path through a temporary file and a rename. */
static int write_atomic(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return HB_EINVAL;
	f = fopen(tmp, "w");
	if (!f)
		return HB_EIO;
	if (fputs(text, f) < 0) {
		fclose(f);
		return HB_EIO;
	}
	if (fclose(f) || rename(tmp, path))
		return HB_EIO;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

int main(int argc, char **argv)
{
	struct km_opts o = { 0 };
	struct km_ctx ctx = { 0 };
	struct km_server *sv = NULL;
	struct hb_err err = { 0 };
	sigset_t sigs;
	char tmpl[] = "/tmp/hb-kubemu.XXXXXX";
	char url[128], num[32];
	int made_workdir = 0, rc = 1, port;

	/* Objects accumulate: grow the heap in large steps. */
	mallopt(M_TOP_PAD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	o.host = strdup("127.0.0.1");
	o.pod_start_ms = 200;
	o.run_ms = 2000;
	o.kill_grace_ms = 3000;
	o.window = 4096;
	o.bookmark_ms = 10000;
	o.watch_timeout_s = 1800;
	if (!o.host || parse_args(argc, argv, &o))
		return 2;
	ctx.o = &o;
	atomic_init(&ctx.stopping, 0);
	atomic_init(&ctx.drop_gen, 0);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());

	/* Signals go to main alone: block them before any thread starts. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.workdir) {
		if (mkdir(o.workdir, 0755) && errno != EEXIST) {
			fprintf(stderr, "hb-kubemu: %s: %s\n", o.workdir,
				strerror(errno));
			return 1;
		}
		ctx.workdir = strdup(o.workdir);
	} else {
		if (!mkdtemp(tmpl)) {
			perror("hb-kubemu: mkdtemp");
			return 1;
		}
		made_workdir = 1;
		ctx.workdir = strdup(tmpl);
	}
	ctx.valid =
		km_valid_new(o.crds_dir ? o.crds_dir : HB_KUBEMU_CRDS, &err);
	if (!ctx.valid) {
		fprintf(stderr, "hb-kubemu: loading CRDs: %s\n", err.msg);
		goto out;
	}
	ctx.store = km_store_new(o.window);
	ctx.faults = km_faults_new();
	ctx.kubelet = km_kubelet_new(&ctx);
	ctx.ctl = km_ctl_new(&ctx);
	if (!ctx.workdir || !ctx.store || !ctx.faults || !ctx.kubelet ||
	    !ctx.ctl) {
		fprintf(stderr, "hb-kubemu: out of memory\n");
		goto out;
	}
	km_store_set_hook(ctx.store, km_ctl_hook, ctx.ctl);
	if (km_nodes_create(&ctx, &err) || km_namespaces_create(&ctx, &err)) {
		fprintf(stderr, "hb-kubemu: %s\n", err.msg);
		goto out;
	}
	if (o.tls_dir && km_tls_setup(&ctx, o.tls_dir, &err)) {
		fprintf(stderr, "hb-kubemu: TLS: %s\n", err.msg);
		goto out;
	}
	if (km_ctl_start(ctx.ctl)) {
		fprintf(stderr, "hb-kubemu: cannot start the controller\n");
		goto out;
	}
	port = o.port;
	sv = km_server_start(&ctx, &port, &err);
	if (!sv) {
		fprintf(stderr, "hb-kubemu: %s\n", err.msg);
		goto out;
	}
	o.port = port;
	snprintf(url, sizeof(url), "%s://%s:%d", o.tls_dir ? "https" : "http",
		 strcmp(o.host, "0.0.0.0") ? o.host : "127.0.0.1", port);
	if (o.kubeconfig_out &&
	    km_write_kubeconfig(&ctx, o.kubeconfig_out, url, &err)) {
		fprintf(stderr, "hb-kubemu: kubeconfig: %s\n", err.msg);
		goto out;
	}
	if (o.pidfile) {
		snprintf(num, sizeof(num), "%d\n", (int)getpid());
		if (write_atomic(o.pidfile, num)) {
			fprintf(stderr, "hb-kubemu: cannot write %s\n",
				o.pidfile);
			goto out;
		}
	}
	/* The port file comes last: once it exists, everything is ready. */
	if (o.port_file) {
		snprintf(num, sizeof(num), "%d\n", port);
		if (write_atomic(o.port_file, num)) {
			fprintf(stderr, "hb-kubemu: cannot write %s\n",
				o.port_file);
			goto out;
		}
	}
	printf("hb-kubemu: serving %s (%s mode, workdir %s)\n", url,
	       o.execute ? "execute" : "simulate", ctx.workdir);
	fflush(stdout);
	hb_logf(HB_LOG_INFO,
		(struct hb_log_field[]){ HB_LOG_STR("url", url),
					 HB_LOG_INT("tokens", o.ntokens) },
		2, "hb-kubemu serving");

	for (;;) {
		struct timespec ts = { 0, 100 * 1000000 };
		int sig = sigtimedwait(&sigs, NULL, &ts), ms;

		if (sig > 0) {
			hb_log(HB_LOG_INFO, "signal %d: shutting down", sig);
			break;
		}
		ms = km_server_refuse_pending();
		if (!ms)
			continue;
		/* Refuse connections: cut the streams, close the listener
		 * (and every connection), then listen again on the same
		 * port. */
		atomic_fetch_add(&ctx.drop_gen, 1);
		km_store_kick(ctx.store);
		km_server_stop(sv);
		sv = NULL;
		{
			struct timespec d = { ms / 1000,
					      (long)(ms % 1000) * 1000000 };

			while (nanosleep(&d, &d) && errno == EINTR)
				;
		}
		for (int tries = 0; tries < 50 && !sv; tries++) {
			struct hb_err e2 = { 0 };

			port = o.port;
			sv = km_server_start(&ctx, &port, &e2);
			if (!sv)
				usleep(100000);
		}
		if (!sv) {
			fprintf(stderr,
				"hb-kubemu: cannot listen again on "
				"port %d\n",
				o.port);
			goto out;
		}
		hb_log(HB_LOG_INFO, "faults: accepting connections again");
	}
	rc = 0;
out:
	atomic_store(&ctx.stopping, 1);
	if (ctx.store)
		km_store_kick(ctx.store);
	km_server_stop(sv);
	km_ctl_free(ctx.ctl);
	km_kubelet_free(ctx.kubelet);
	km_faults_free(ctx.faults);
	km_store_free(ctx.store);
	km_valid_free(ctx.valid);
	if (made_workdir && ctx.workdir)
		nftw(ctx.workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (o.pidfile)
		unlink(o.pidfile);
	free(ctx.workdir);
	free(ctx.tls_key);
	free(ctx.tls_cert);
	free(ctx.tls_ca);
	free(ctx.tls_ca_path);
	for (size_t i = 0; i < o.ntokens; i++) {
		free(o.tokens[i].token);
		free(o.tokens[i].ns);
	}
	free(o.tokens);
	for (size_t i = 0; i < o.nexec_env; i++)
		free(o.exec_env[i]);
	free(o.exec_env);
	for (size_t i = 0; i < o.nnodes; i++)
		free(o.nodes[i]);
	free(o.nodes);
	for (size_t i = 0; i < o.nnamespaces; i++)
		free(o.namespaces[i]);
	free(o.namespaces);
	free(o.host);
	return rc;
}
