/*
 * cmd_explain.c - "hpcbridge explain": where a job would run and why,
 * and "hpcbridge policy check": what a placement policy means.
 *
 * explain reads the policy, a snapshot of the world (--state) and the
 * job, and runs the same engine the daemon runs.  Without --state it
 * asks the live daemon ("placement" op) for its snapshot and, unless
 * --policy is given, the policy it decides with.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/placement.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/translate.h"
#include "hpcbridge/units.h"

extern char **environ;

/* The policy when --policy is not given. */
#define DEFAULT_POLICY "/etc/hpcbridge/policy.yaml"
/* Largest policy or snapshot file read. */
#define DOC_MAX	    (4u * 1024 * 1024)
#define MAX_OPTIONS 256

struct opts {
	const char *policy, *state, *user, *socket, *config;
	int json, dump, use_env;
	uint64_t seq;
	const char *options[MAX_OPTIONS];
	int noptions;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hpcbridge explain [OPTIONS] SCRIPT|MANIFEST\n"
		"       hpcbridge explain [--state FILE] [--json] "
		"--dump-state\n"
		"\n"
		"Say where a job would run (Slurm, Kubernetes, or "
		"nowhere) and why:\n"
		"every side's start, finish, cost and feasibility, the "
		"rule that applied\nand each factor.\n"
		"\n"
		"  -p, --policy FILE   placement policy (default: the "
		"daemon's; with --state\n"
		"                      " DEFAULT_POLICY ")\n"
		"  -s, --state FILE    a snapshot of queues, capacity, data "
		"sizes and spend\n"
		"                      (docs/placement.md); without it the "
		"live daemon is asked\n"
		"      --socket PATH   the daemon's socket (default: "
		"$HPCBRIDGE_SOCKET, else\n"
		"                      daemon.socket of --config FILE)\n"
		"      --config FILE   the configuration whose daemon.socket "
		"to use\n"
		"  -j, --json          the decision as JSON\n"
		"      --dump-state    write the snapshot in use (the "
		"daemon's, or --state's) and stop\n"
		"  -u, --user NAME     the submitting user (default: the "
		"job's, else $USER)\n"
		"      --seq N         the submission counter, for the "
		"migration pilot's hash\n"
		"  -O, --option OPT    an sbatch (or qsub) option applied "
		"after the script's\n"
		"                      directives, e.g. -O --account=physics\n"
		"      --no-env        ignore SBATCH_* environment variables\n"
		"  -h, --help          this help\n"
		"\n"
		"Exit status: 0 a decision was made (reject included), 1 bad "
		"input (the\nmessage names FILE:LINE), 2 usage, 3 the daemon "
		"could not be asked.\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "dump-state", no_argument, NULL, 'D' },
		{ "user", required_argument, NULL, 'u' },
		{ "seq", required_argument, NULL, 'S' },
		{ "option", required_argument, NULL, 'O' },
		{ "no-env", no_argument, NULL, 'E' },
		{ "socket", required_argument, NULL, 'K' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->use_env = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:s:ju:O:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'p':
			o->policy = optarg;
			break;
		case 's':
			o->state = optarg;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'D':
			o->dump = 1;
			break;
		case 'u':
			o->user = optarg;
			break;
		case 'S':
			if (hb_parse_u64(optarg, UINT64_MAX, &o->seq)) {
				fprintf(stderr,
					"hpcbridge explain: --seq: "
					"'%s' is not a whole number\n",
					optarg);
				return -1;
			}
			break;
		case 'O':
			if (o->noptions == MAX_OPTIONS) {
				fprintf(stderr,
					"hpcbridge explain: more than "
					"%d --option\n",
					MAX_OPTIONS);
				return -1;
			}
			o->options[o->noptions++] = optarg;
			break;
		case 'E':
			o->use_env = 0;
			break;
		case 'K':
			o->socket = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(HB_EXIT_OK);
		default:
			return -1;
		}
	}
	if (o->dump && optind != argc) {
		fprintf(stderr, "hpcbridge explain: --dump-state takes no "
				"script\n");
		return -1;
	}
	if (!o->dump && optind + 1 != argc) {
		fprintf(stderr, "hpcbridge explain: give one SCRIPT or "
				"MANIFEST\n");
		return -1;
	}
	return 0;
}

static int load_policy(const char *path, struct hb_policy *pol,
		       struct hb_err *err)
{
	struct hb_buf b;
	int rc = hb_cli_read_file(path, DOC_MAX, &b, err);

	if (!rc)
		rc = hb_policy_parse(b.data, b.len, path, pol, err);
	hb_buf_free(&b);
	return rc;
}

static int load_state(const char *path, struct hb_snapshot *s,
		      struct hb_err *err)
{
	struct hb_buf b;
	int rc = hb_cli_read_file(path, DOC_MAX, &b, err);

	if (!rc)
		rc = hb_snapshot_parse(b.data, b.len, path, s, err);
	hb_buf_free(&b);
	return rc;
}

/* Write doc to stdout as JSON or YAML. */
static int write_doc(const cJSON *doc, int json)
{
	struct hb_buf b;
	int rc;

	hb_buf_init(&b, 0);
	rc = json ? hb_doc_write_json(doc, &b) : hb_doc_write_yaml(doc, &b);
	if (!rc && fwrite(b.data, 1, b.len, stdout) != b.len)
		rc = HB_EIO;
	if (!rc && fflush(stdout))
		rc = HB_EIO;
	hb_buf_free(&b);
	return rc;
}

/*
 * The live daemon's policy (unless --policy names one) and snapshot, over
 * its socket.  Prints the error and returns an exit code on failure.
 */
static int load_live(const struct opts *o, struct hb_policy *pol,
		     struct hb_snapshot *snap)
{
	struct hb_err err = { 0 };
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const cJSON *state, *name, *text;
	char *s = NULL;
	int rc;

	if (req && !cJSON_AddStringToObject(req, "op", "placement")) {
		cJSON_Delete(req);
		req = NULL;
	}
	if ((rc = hb_cli_call("explain", o->socket, o->config, req, &reply)))
		return rc;
	state = cJSON_GetObjectItemCaseSensitive(reply, "state");
	name = cJSON_GetObjectItemCaseSensitive(reply, "policy");
	text = cJSON_GetObjectItemCaseSensitive(reply, "policy_text");
	if (!cJSON_IsObject(state) || !cJSON_IsString(name) ||
	    !cJSON_IsString(text)) {
		fprintf(stderr, "hpcbridge explain: the daemon's reply has no "
				"policy or state\n");
		rc = HB_EXIT_REMOTE;
		goto out;
	}
	rc = HB_EXIT_INPUT;
	if (!(s = cJSON_PrintUnformatted(state)) ||
	    hb_snapshot_parse(s, strlen(s), "hpcbridged", snap, &err))
		goto fail;
	if (!o->dump && !o->policy &&
	    hb_policy_parse(text->valuestring, strlen(text->valuestring),
			    name->valuestring, pol, &err))
		goto fail;
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "hpcbridge explain: %s\n",
		err.msg[0] ? err.msg : "out of memory");
out:
	cJSON_free(s);
	cJSON_Delete(reply);
	return rc;
}

int hb_cmd_explain(int argc, char **argv)
{
	struct opts o;
	struct hb_policy pol = { 0 };
	struct hb_snapshot snap = { 0 };
	struct hb_jobspec spec = { 0 };
	struct hb_place_input in;
	struct hb_place_result res;
	struct hb_sbatch_opts sopts;
	struct hb_err err = { 0 };
	struct hb_buf script, text;
	const char *path;
	cJSON *doc = NULL;
	int rc, status = HB_EXIT_INPUT;

	hb_buf_init(&script, 0);
	hb_buf_init(&text, 0);
	if (parse_opts(argc, argv, &o)) {
		fprintf(stderr, "Run 'hpcbridge explain --help' for usage.\n");
		return HB_EXIT_USAGE;
	}
	if (!o.state) {
		if ((rc = load_live(&o, &pol, &snap))) {
			status = rc;
			goto out;
		}
	} else if ((rc = load_state(o.state, &snap, &err))) {
		goto fail;
	}
	if (o.dump) {
		doc = hb_snapshot_to_json(&snap);
		if (!doc || write_doc(doc, o.json)) {
			fprintf(stderr, "hpcbridge explain: cannot write the "
					"snapshot\n");
			goto out;
		}
		status = HB_EXIT_OK;
		goto out;
	}
	if ((o.state || o.policy) &&
	    (rc = load_policy(o.policy ? o.policy : DEFAULT_POLICY, &pol,
			      &err)))
		goto fail;

	path = argv[optind];
	if ((rc = hb_cli_read_file(path, HB_SCRIPT_MAX, &script, &err)))
		goto fail;
	sopts.envp = o.use_env ? (const char *const *)environ : NULL;
	sopts.argv = o.options;
	sopts.argc = o.noptions;
	hb_jobspec_init(&spec, strcmp(path, "-") ? path : "<stdin>");
	if ((rc = hb_parse_any(script.data, script.len, spec.source_name,
			       &sopts, &spec, &err)))
		goto fail;
	if ((rc = hb_place_input_from_jobspec(&pol, &spec, snap.now,
					      snap.utc_offset, &in, &err)))
		goto fail;
	in.user = o.user ? o.user : in.user ? in.user : getenv("USER");
	in.seq = o.seq;
	hb_place_decide(&pol, &snap, &in, &res);

	if (o.json) {
		doc = hb_place_to_json(&pol, &in, &res);
		if (!doc || write_doc(doc, 1)) {
			fprintf(stderr, "hpcbridge explain: cannot write the "
					"decision\n");
			goto out;
		}
	} else {
		if (hb_buf_printf(&text, "%s:\n", spec.source_name) ||
		    hb_place_explain(&pol, &in, &res, &text) ||
		    fwrite(text.data, 1, text.len, stdout) != text.len ||
		    fflush(stdout)) {
			fprintf(stderr, "hpcbridge explain: cannot write the "
					"explanation\n");
			goto out;
		}
	}
	status = HB_EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "%s\n", err.msg[0] ? err.msg : hb_strerror(rc));
out:
	cJSON_Delete(doc);
	hb_jobspec_free(&spec);
	hb_policy_free(&pol);
	hb_snapshot_free(&snap);
	hb_buf_free(&script);
	hb_buf_free(&text);
	return status;
}

static void policy_usage(FILE *f)
{
	fprintf(f, "usage: hpcbridge policy check FILE\n"
		   "\n"
		   "Validate a placement policy and say what it means.  "
		   "Errors name the\nfile, the line and the key.\n"
		   "Exit status: 0 valid, 1 invalid, 2 usage.\n");
}

int hb_cmd_policy(int argc, char **argv)
{
	struct hb_policy pol = { 0 };
	struct hb_err err = { 0 };
	struct hb_buf out;
	int rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		policy_usage(stdout);
		return HB_EXIT_OK;
	}
	if (argc != 3 || strcmp(argv[1], "check")) {
		policy_usage(stderr);
		return HB_EXIT_USAGE;
	}
	if ((rc = load_policy(argv[2], &pol, &err))) {
		fprintf(stderr, "%s\n", err.msg[0] ? err.msg : hb_strerror(rc));
		return HB_EXIT_INPUT;
	}
	hb_buf_init(&out, 0);
	rc = hb_policy_describe(&pol, &out);
	if (!rc &&
	    (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)))
		rc = HB_EIO;
	if (rc)
		fprintf(stderr, "hpcbridge policy: %s\n", hb_strerror(rc));
	hb_buf_free(&out);
	hb_policy_free(&pol);
	return rc ? HB_EXIT_INPUT : HB_EXIT_OK;
}
