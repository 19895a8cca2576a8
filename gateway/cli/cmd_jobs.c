/*
 * cmd_jobs.c - hpcbridge submit, jobs, status and cancel: the daemon's
 * API from the command line.
 *
 * Each command sends one request to hpcbridged and prints the reply as a
 * table (like squeue) or, with --json, as the reply's JSON.  The daemon
 * knows the caller from the socket (SO_PEERCRED): a user sees and cancels
 * only their own jobs.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "report.h"
#include "hpcbridge/units.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/proto.h"

#define SCRIPT_MAX	(4u * 1024 * 1024)
#define DEFAULT_TIMEOUT 10000
#define SYSTEM_CONFIG	"/etc/hpcbridge/hpcbridge.yaml"

extern char **environ;

struct conn {
	const char *socket; /* --socket */
	const char *config; /* --config */
	int timeout_ms;
	int json;
	int all;
};

static const struct option long_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "config", required_argument, NULL, 'c' },
	{ "timeout", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, 'j' },
	{ "all", no_argument, NULL, 'a' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Parse the shared options; 0, or HB_EXIT_USAGE (message printed), or
 * -1 for --help (usage printed). */
static int parse_conn(int argc, char **argv, const char *usage, int allow_all,
		      struct conn *c)
{
	int opt;

	memset(c, 0, sizeof(*c));
	c->timeout_ms = DEFAULT_TIMEOUT;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "s:c:t:jah", long_opts, NULL)) !=
	       -1) {
		switch (opt) {
		case 's':
			c->socket = optarg;
			break;
		case 'c':
			c->config = optarg;
			break;
		case 't': {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0 || v > 600000) {
				fprintf(stderr,
					"%s: --timeout: '%s' is not a number "
					"of milliseconds in 1..600000\n",
					argv[0], optarg);
				return HB_EXIT_USAGE;
			}
			c->timeout_ms = (int)v;
			break;
		}
		case 'j':
			c->json = 1;
			break;
		case 'a':
			if (!allow_all)
				goto bad;
			c->all = 1;
			break;
		case 'h':
			printf("%s", usage);
			return -1;
		default:
			goto bad;
		}
	}
	return 0;
bad:
	fprintf(stderr, "%s", usage);
	return HB_EXIT_USAGE;
}

const char *hb_cli_config_path(const char *config)
{
	if (!config)
		config = getenv("HPCBRIDGE_CONFIG");
	if (!config && access(SYSTEM_CONFIG, R_OK) == 0)
		config = SYSTEM_CONFIG;
	return config;
}

/* daemon.user of cfg as a uid (into *uid), the error naming the file. */
static int cfg_daemon_uid(const struct hb_config *cfg, const char *cfgpath,
			  uid_t *uid, struct hb_err *err)
{
	struct hb_err e = { 0 };
	int rc = hb_proto_daemon_uid(cfg->daemon_user, uid, &e);

	return rc ? hb_err_set(err, rc, cfgpath, 0, "%s", e.msg) : 0;
}

int hb_cli_daemon_uid(const char *config, uid_t *uid, struct hb_err *err)
{
	const char *cfgpath = hb_cli_config_path(config);
	struct hb_config cfg;
	int rc;

	*uid = 0;
	if (!cfgpath)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	rc = hb_cli_load_config(cfgpath, &cfg, err);
	if (!rc)
		rc = cfg_daemon_uid(&cfg, cfgpath, uid, err);
	hb_config_free(&cfg);
	return rc;
}

/*
 * The socket: --socket, else $HPCBRIDGE_SOCKET, else daemon.socket of the
 * config (--config, $HPCBRIDGE_CONFIG, or the system file if present),
 * else the built-in default.  Copied into out.  *uid: daemon.user of the
 * same config (root without one), whom the server check also trusts.
 */
static int socket_path(const struct conn *c, char *out, size_t n, uid_t *uid,
		       struct hb_err *err)
{
	const char *cfgpath = hb_cli_config_path(c->config), *env = NULL;
	struct hb_config cfg;
	int rc, len;

	*uid = 0;
	if (c->socket || (env = getenv("HPCBRIDGE_SOCKET"))) {
		len = snprintf(out, n, "%s", c->socket ? c->socket : env);
		if (len <= 0 || (size_t)len >= n)
			return hb_err_set(err, HB_ETOOBIG, NULL, 0,
					  "socket path too long");
		return hb_cli_daemon_uid(c->config, uid, err);
	}
	memset(&cfg, 0, sizeof(cfg));
	rc = hb_cli_load_config(cfgpath, &cfg, err);
	if (!rc) {
		len = snprintf(out, n, "%s", cfg.daemon_socket);
		if (len <= 0 || (size_t)len >= n)
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"socket path too long");
	}
	if (!rc && cfgpath)
		rc = cfg_daemon_uid(&cfg, cfgpath, uid, err);
	hb_config_free(&cfg);
	return rc;
}

/* Send req, take the reply; prints the error and returns an exit code
 * unless the reply says ok (then 0 and *reply is set). */
static int call(const char *cmd, const struct conn *c, cJSON *req,
		cJSON **reply)
{
	char path[PATH_MAX];
	struct hb_err err = { 0 };
	uid_t uid;
	int rc;

	*reply = NULL;
	if (!req) {
		fprintf(stderr, "hpcbridge %s: out of memory\n", cmd);
		return HB_EXIT_INPUT;
	}
	rc = socket_path(c, path, sizeof(path), &uid, &err);
	if (!rc)
		rc = hb_proto_call_uid(path, uid, req, c->timeout_ms, reply,
				       &err);
	cJSON_Delete(req);
	if (rc) {
		fprintf(stderr, "hpcbridge %s: %s%s\n", cmd,
			err.msg[0] ? err.msg : hb_strerror(rc),
			rc == HB_EUNAVAIL ? " (is hpcbridged running?)" : "");
		return HB_EXIT_REMOTE;
	}
	if ((rc = hb_proto_reply_status(*reply, &err))) {
		if (c->json) {
			char *text = cJSON_Print(*reply);

			if (text)
				printf("%s\n", text);
			cJSON_free(text);
		}
		fprintf(stderr, "hpcbridge %s: %s (%s)\n", cmd,
			err.msg[0] ? err.msg : hb_strerror(rc),
			hb_errname(rc) ? hb_errname(rc) : "?");
		cJSON_Delete(*reply);
		*reply = NULL;
		return HB_EXIT_REMOTE;
	}
	return 0;
}

int hb_cli_call(const char *cmd, const char *socket, const char *config,
		cJSON *req, cJSON **reply)
{
	struct conn c = { .socket = socket,
			  .config = config,
			  .timeout_ms = DEFAULT_TIMEOUT };

	return call(cmd, &c, req, reply);
}

static int print_json(const cJSON *v)
{
	struct hb_buf b;
	int rc;

	hb_buf_init(&b, 0);
	rc = hb_doc_write_json(v, &b);
	if (!rc && fwrite(b.data, 1, b.len, stdout) != b.len)
		rc = HB_EIO;
	hb_buf_free(&b);
	return rc ? HB_EXIT_INPUT : HB_EXIT_OK;
}

/* A string field as text ("-" when absent or not a string). */
static const char *str(const cJSON *o, const char *key)
{
	const char *s = hb_doc_str(o, key);

	return s ? s : "-";
}

/* A number field as text ("-" when absent or null). */
static const char *num(const cJSON *o, const char *key, char buf[32])
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		return "-";
	snprintf(buf, 32, "%.0f", v->valuedouble);
	return buf;
}

/* A timestamp (RFC 3339 text, as the daemon sends it) to the second. */
static const char *when(const cJSON *o, const char *key, char buf[32])
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v) || strlen(v->valuestring) < 19)
		return "-";
	snprintf(buf, 32, "%.19s", v->valuestring);
	return buf;
}

/* An event's detail object as "key=value ..." into buf. */
static const char *detail_text(const cJSON *o, char *buf, size_t n)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "detail"), *f;
	size_t off = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach (f, d) {
		int k;

		if (cJSON_IsString(f))
			k = snprintf(buf + off, n - off, "%s%s=%s",
				     off ? " " : "", f->string, f->valuestring);
		else if (cJSON_IsNumber(f))
			k = snprintf(buf + off, n - off, "%s%s=%.0f",
				     off ? " " : "", f->string, f->valuedouble);
		else
			continue;
		if (k < 0 || (size_t)k >= n - off)
			break;
		off += (size_t)k;
	}
	return buf;
}

/* The run time as Slurm prints it ([D-]HH:MM:SS), "-" when not over. */
static const char *elapsed(const cJSON *o, char buf[32])
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "elapsed_s");

	if (!cJSON_IsNumber(v) || v->valuedouble < 0)
		return "-";
	hb_format_slurm_time((uint64_t)v->valuedouble, buf);
	return buf;
}

/* What the job cost, in the rate card's currency units, exact to the
 * micro-unit (the ledger's sum); "-" when it has not been metered. */
static const char *cost(const cJSON *o, char buf[48])
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "cost_micros");

	if (!cJSON_IsNumber(v))
		return "-";
	return hb_report_fixed((int64_t)v->valuedouble, HB_REPORT_MICRO, 6,
			       buf);
}

static void table_head(void)
{
	printf("%-12s %-10s %-10s %-10s %-10s %-8s %-19s %-11s %-12s %s\n",
	       "ID", "USER", "TARGET", "STATE", "SLURM_ID", "EXIT",
	       "SUBMITTED", "ELAPSED", "COST", "NAME");
}

static void table_row(const cJSON *j)
{
	char a[32], b[32], c[32], e[32], m[48];

	printf("%-12s %-10.10s %-10.10s %-10.10s %-10s %-8s %-19s %-11s "
	       "%-12s %s\n",
	       str(j, "id"), str(j, "user"), str(j, "target"), str(j, "state"),
	       num(j, "slurm_job_id", a), num(j, "exit_code", b),
	       when(j, "created", c), elapsed(j, e), cost(j, m),
	       str(j, "name"));
}

static const char submit_usage[] =
	"usage: hpcbridge submit [--socket PATH] [--config FILE] [--timeout "
	"MS] "
	"[--json] FILE\n"
	"Submit an sbatch or PBS script to Slurm through hpcbridged, as "
	"yourself,\nfrom the current directory and with your environment.\n";

cJSON *hb_cli_submit_request(const char *cmd, const char *name,
			     const struct hb_buf *script)
{
	char cwd[PATH_MAX];
	cJSON *req, *env = NULL;
	const char *nul;
	size_t bad;

	/* The request is JSON text: a script that is not UTF-8 (a Latin-1
	 * comment) is refused here, where the file and line can be named,
	 * rather than changed behind the user's back. */
	bad = hb_utf8_span(script->data, script->len);
	nul = memchr(script->data, '\0', script->len);
	if (nul && (size_t)(nul - script->data) < bad)
		bad = (size_t)(nul - script->data);
	if (bad < script->len) {
		size_t line = 1;

		for (size_t i = 0; i < bad; i++)
			line += script->data[i] == '\n';
		fprintf(stderr, "%s:%zu: byte %zu %s\n", name, line, bad + 1,
			script->data[bad]
				? "is not UTF-8; hpcbridge sends UTF-8 "
				  "scripts only (convert it, e.g. iconv -f "
				  "latin1 -t utf-8, or use sbatch)"
				: "is a NUL byte, which a batch script cannot "
				  "hold");
		return NULL;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "hpcbridge %s: the current directory: %s\n",
			cmd, strerror(errno));
		return NULL;
	}
	req = cJSON_CreateObject();
	if (req && (!cJSON_AddStringToObject(req, "op", "submit") ||
		    !cJSON_AddStringToObject(req, "script", script->data) ||
		    !cJSON_AddStringToObject(req, "name", name) ||
		    !cJSON_AddStringToObject(req, "cwd", cwd) ||
		    !(env = cJSON_AddArrayToObject(req, "env"))))
		goto nomem;
	for (char **e = environ; req && *e; e++) {
		size_t n = strlen(*e);

		if (hb_utf8_span(*e, n) < n) {
			fprintf(stderr,
				"hpcbridge %s: warning: %.*s is not UTF-8 "
				"and is left out of the job's environment\n",
				cmd, (int)strcspn(*e, "="), *e);
			continue;
		}
		if (!cJSON_AddItemToArray(env, cJSON_CreateString(*e)))
			goto nomem;
	}
	if (req)
		return req;
nomem:
	cJSON_Delete(req);
	fprintf(stderr, "hpcbridge %s: out of memory\n", cmd);
	return NULL;
}

int hb_cmd_submit(int argc, char **argv)
{
	struct conn c;
	struct hb_buf script;
	struct hb_err err = { 0 };
	cJSON *req, *reply;
	int rc = parse_conn(argc, argv, submit_usage, 0, &c);

	if (rc)
		return rc < 0 ? HB_EXIT_OK : rc;
	if (argc - optind != 1) {
		fprintf(stderr, "%s", submit_usage);
		return HB_EXIT_USAGE;
	}
	if ((rc = hb_cli_read_file(argv[optind], SCRIPT_MAX, &script, &err))) {
		fprintf(stderr, "%s\n", err.msg[0] ? err.msg : hb_strerror(rc));
		return HB_EXIT_INPUT;
	}
	req = hb_cli_submit_request("submit", argv[optind], &script);
	hb_buf_free(&script);
	if (!req)
		return HB_EXIT_INPUT;
	if ((rc = call("submit", &c, req, &reply)))
		return rc;
	if (c.json) {
		rc = print_json(reply);
	} else {
		char a[32];

		printf("Submitted %s: %s", str(reply, "id"),
		       str(reply, "target"));
		if (strcmp(num(reply, "slurm_job_id", a), "-"))
			printf(" (Slurm job %s)", a);
		printf("\n");
	}
	cJSON_Delete(reply);
	return rc;
}

static const char jobs_usage[] =
	"usage: hpcbridge jobs [--all] [--socket PATH] [--config FILE] "
	"[--timeout MS] [--json]\n"
	"List your jobs (--all: everyone's; root, SlurmUser and admins "
	"only).\n";

int hb_cmd_jobs(int argc, char **argv)
{
	struct conn c;
	cJSON *req, *reply;
	const cJSON *j;
	int rc = parse_conn(argc, argv, jobs_usage, 1, &c);

	if (rc)
		return rc < 0 ? HB_EXIT_OK : rc;
	if (optind != argc) {
		fprintf(stderr, "%s", jobs_usage);
		return HB_EXIT_USAGE;
	}
	req = cJSON_CreateObject();
	if (req && (!cJSON_AddStringToObject(req, "op", "jobs") ||
		    !cJSON_AddBoolToObject(req, "all", c.all))) {
		cJSON_Delete(req);
		req = NULL;
	}
	if ((rc = call("jobs", &c, req, &reply)))
		return rc;
	if (c.json) {
		rc = print_json(reply);
	} else {
		table_head();
		cJSON_ArrayForEach (j, cJSON_GetObjectItem(reply, "jobs"))
			table_row(j);
	}
	cJSON_Delete(reply);
	return rc;
}

cJSON *hb_cli_id_request(const char *op, const char *id)
{
	cJSON *req = cJSON_CreateObject();

	if (req && (!cJSON_AddStringToObject(req, "op", op) ||
		    !cJSON_AddStringToObject(req, "id", id))) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/*
 * The job's checkpoints, from its ckpt_* events (gateway/daemon/ckpt.c):
 * which checkpoint went where, and which one it resumed from (the one
 * pushed before it started on the cluster).
 */
/* What the job's checkpoint storage has been charged so far (the
 * status reply's "storage": MiB-seconds and micro-units). */
static void print_storage(const cJSON *st)
{
	const cJSON *m = cJSON_GetObjectItem(st, "mib_s");
	const cJSON *a = cJSON_GetObjectItem(st, "amount_micros");
	char g[48], c[48];

	if (!cJSON_IsNumber(m) || !cJSON_IsNumber(a))
		return;
	printf("  storage in S3: %s GB-months, charged %s so far\n",
	       HB_REPORT_GB_MONTHS((int64_t)m->valuedouble, 6, g),
	       hb_report_fixed((int64_t)a->valuedouble, HB_REPORT_MICRO, 6, c));
}

static void print_checkpoints(const cJSON *job)
{
	const cJSON *events = cJSON_GetObjectItem(job, "events");
	const cJSON *storage = cJSON_GetObjectItem(job, "storage");
	static const struct {
		const char *action, *verb;
	} kinds[] = { { "ckpt_push", "pushed" },
		      { "ckpt_pull", "pulled" },
		      { "ckpt_failed", "FAILED" } };
	const cJSON *e;
	int head = 0;

	cJSON_ArrayForEach (e, events) {
		const cJSON *d = cJSON_GetObjectItem(e, "detail");
		const char *action = str(e, "action"), *verb = NULL;
		char at[32], nf[32], nb[32];

		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(action, kinds[i].action))
				verb = kinds[i].verb;
		if (!verb)
			continue;
		if (!head++)
			printf("\ncheckpoints:\n");
		printf("  %s  %-6s  %s  %s -> %s  %s files, %s bytes",
		       when(e, "at", at), verb, str(d, "checkpoint"),
		       str(d, "from"), str(d, "to"), num(d, "files", nf),
		       num(d, "bytes", nb));
		if (!strcmp(action, "ckpt_push"))
			printf("; the job resumed from it on the cluster");
		if (cJSON_IsNumber(cJSON_GetObjectItem(d, "stored_bytes")))
			printf("; S3 keeps %s bytes of its checkpoints",
			       num(d, "stored_bytes", nb));
		if (cJSON_IsString(cJSON_GetObjectItem(d, "error")))
			printf("; %s", str(d, "error"));
		printf("\n");
	}
	if (storage) {
		if (!head++)
			printf("\ncheckpoints:\n");
		print_storage(storage);
	}
}

static const char status_usage[] =
	"usage: hpcbridge status [--socket PATH] [--config FILE] [--timeout "
	"MS] "
	"[--json] ID\n"
	"Show a job, where it was placed and why, and its history.\n";

int hb_cmd_status(int argc, char **argv)
{
	struct conn c;
	cJSON *req, *reply;
	const cJSON *job, *d, *e;
	int rc = parse_conn(argc, argv, status_usage, 0, &c);

	if (rc)
		return rc < 0 ? HB_EXIT_OK : rc;
	if (argc - optind != 1) {
		fprintf(stderr, "%s", status_usage);
		return HB_EXIT_USAGE;
	}
	req = hb_cli_id_request("status", argv[optind]);
	if ((rc = call("status", &c, req, &reply)))
		return rc;
	if (c.json) {
		rc = print_json(reply);
		cJSON_Delete(reply);
		return rc;
	}
	job = cJSON_GetObjectItem(reply, "job");
	table_head();
	table_row(job);
	d = cJSON_GetObjectItem(job, "decision");
	if (cJSON_IsObject(d)) {
		const cJSON *x = cJSON_GetObjectItem(d, "explanation");

		printf("\ndecision: %s (policy %s)\n", str(d, "target"),
		       str(d, "policy"));
		/* the engine's explanation, one point per line */
		for (const char *p = cJSON_IsString(x) ? x->valuestring : "";
		     *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);

			printf("  %.*s\n", (int)n, p);
			p += n + (nl != NULL);
		}
	}
	print_checkpoints(job);
	if (cJSON_GetArraySize(cJSON_GetObjectItem(job, "events")) > 0)
		printf("\nevents:\n");
	cJSON_ArrayForEach (e, cJSON_GetObjectItem(job, "events")) {
		char a[32], dt[256];

		printf("  %s  %-12s %-10s %s\n", when(e, "at", a),
		       str(e, "action"), str(e, "actor"),
		       detail_text(e, dt, sizeof(dt)));
	}
	cJSON_Delete(reply);
	return HB_EXIT_OK;
}

static const char cancel_usage[] = "usage: hpcbridge cancel [--socket PATH] "
				   "[--config FILE] [--timeout MS] "
				   "[--json] ID\n"
				   "Cancel a job, wherever it runs.\n";

int hb_cmd_cancel(int argc, char **argv)
{
	struct conn c;
	cJSON *req, *reply;
	int rc = parse_conn(argc, argv, cancel_usage, 0, &c);

	if (rc)
		return rc < 0 ? HB_EXIT_OK : rc;
	if (argc - optind != 1) {
		fprintf(stderr, "%s", cancel_usage);
		return HB_EXIT_USAGE;
	}
	req = hb_cli_id_request("cancel", argv[optind]);
	if ((rc = call("cancel", &c, req, &reply)))
		return rc;
	if (c.json)
		rc = print_json(reply);
	else
		printf("%s: %s\n", argv[optind], str(reply, "state"));
	cJSON_Delete(reply);
	return rc;
}
