/*
 * cmd_translate.c - "hpcbridge translate": scripts and manifests in,
 * manifests, scripts or the job model out.
 *
 * Nothing reaches standard output unless every input translated: output
 * is built in memory and written at the end, so a bad input never leaves
 * a half-written stream behind.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/launcher.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"

extern char **environ;

enum target { TO_MPIJOB, TO_TRAINJOB, TO_SBATCH, TO_JOBSPEC };
enum format { FMT_YAML, FMT_JSON };

static const char *const target_names[] = { "mpijob", "trainjob", "sbatch",
					    "jobspec" };
static const char *const target_kinds[] = { "MPIJob", "TrainJob", "sbatch",
					    "jobspec" };

/* Largest config file accepted. */
#define CONFIG_MAX (1u * 1024 * 1024)
/* Cap on the memory all of one run's document trees may take, and on
 * the text of all its documents. */
#define TREES_MAX (1024u * 1024 * 1024)
/* Most sbatch/qsub options passed with --option. */
#define MAX_OPTIONS 256

struct opts {
	enum target to;
	enum format format;
	const char *config;
	int explain, quiet, use_env, with_runtime;
	const char *options[MAX_OPTIONS];
	int noptions;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hpcbridge translate [OPTIONS] FILE... | -\n"
		"\n"
		"Translate sbatch or PBS scripts, or MPIJob/TrainJob "
		"manifests (YAML or\n"
		"JSON), into another form.  The kind of each input is "
		"detected from its\ncontent.\n"
		"\n"
		"  -t, --to KIND       mpijob (default), trainjob, sbatch or "
		"jobspec\n"
		"  -f, --format FMT    yaml (default) or json\n"
		"  -c, --config FILE   site configuration (default: built-in "
		"defaults)\n"
		"  -e, --explain       print the fidelity report instead: "
		"every directive\n"
		"                      with its line and what became of it\n"
		"  -O, --option OPT    an sbatch (or qsub) command-line "
		"option, applied\n"
		"                      after the script's directives and "
		"SBATCH_* variables;\n"
		"                      repeatable, e.g. -O --partition=gpu\n"
		"      --no-env        ignore SBATCH_* environment variables\n"
		"      --with-runtime  put the launcher runtime's ConfigMap "
		"first in the\n"
		"                      output (MPIJobs mount it; apply it once "
		"per namespace)\n"
		"  -q, --quiet         no summary of dropped directives on "
		"stderr\n"
		"  -h, --help          this help\n"
		"\n"
		"Several inputs, or a job array, give a YAML stream or a JSON "
		"array.\n"
		"Exit status: 0 success, 1 bad input (the message names "
		"FILE:LINE), 2 usage.\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "explain", no_argument, NULL, 'e' },
		{ "option", required_argument, NULL, 'O' },
		{ "no-env", no_argument, NULL, 'E' },
		{ "with-runtime", no_argument, NULL, 'R' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->use_env = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:f:c:eO:qh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 't':
			for (c = 0; c < 4; c++)
				if (!strcmp(optarg, target_names[c]))
					break;
			if (c == 4) {
				fprintf(stderr,
					"hpcbridge translate: --to: unknown "
					"kind '%s' (mpijob, trainjob, sbatch, "
					"jobspec)\n",
					optarg);
				return -1;
			}
			o->to = (enum target)c;
			break;
		case 'f':
			if (!strcmp(optarg, "yaml")) {
				o->format = FMT_YAML;
			} else if (!strcmp(optarg, "json")) {
				o->format = FMT_JSON;
			} else {
				fprintf(stderr,
					"hpcbridge translate: --format: "
					"unknown format '%s' (yaml, json)\n",
					optarg);
				return -1;
			}
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'e':
			o->explain = 1;
			break;
		case 'O':
			if (o->noptions == MAX_OPTIONS) {
				fprintf(stderr,
					"hpcbridge translate: more "
					"than %d --option\n",
					MAX_OPTIONS);
				return -1;
			}
			o->options[o->noptions++] = optarg;
			break;
		case 'E':
			o->use_env = 0;
			break;
		case 'R':
			o->with_runtime = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			usage(stdout);
			exit(HB_EXIT_OK);
		default:
			return -1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "hpcbridge translate: no input (give FILE... "
				"or -)\n");
		return -1;
	}
	for (int i = optind, stdin_seen = 0; i < argc; i++) {
		if (strcmp(argv[i], "-"))
			continue;
		if (stdin_seen++) {
			fprintf(stderr, "hpcbridge translate: '-' (standard "
					"input) given more than once\n");
			return -1;
		}
	}
	return 0;
}

int hb_cli_read_file(const char *path, size_t max, struct hb_buf *b,
		     struct hb_err *err)
{
	FILE *f;
	char chunk[65536];
	size_t n;
	int rc = 0;

	hb_buf_init(b, max);
	f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return hb_err_set(err, HB_EIO, path, 0, "cannot open: %s",
				  strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		rc = hb_buf_append(b, chunk, n);
		if (rc == HB_ETOOBIG) {
			hb_err_set(err, rc, path, 0, "larger than %zu bytes",
				   max);
			break;
		}
		if (rc) {
			hb_err_set(err, rc, path, 0, "%s", hb_strerror(rc));
			break;
		}
	}
	if (!rc && ferror(f))
		rc = hb_err_set(err, HB_EIO, path, 0, "read error: %s",
				strerror(errno));
	if (f != stdin)
		fclose(f);
	if (!rc && !b->data)
		rc = hb_buf_append(b, "", 0);
	return rc;
}

/*
 * Everything produced so far, written out only when all inputs succeed.
 * Manifests are written straight into docs as JSON or YAML by the
 * streaming writer; other documents (jobspecs, reports, the runtime
 * ConfigMap) are built as trees and written there at once.  write_out()
 * adds what goes between documents, once their number is known.
 */
struct out {
	struct hb_buf docs; /* the documents' text, one after another */
	size_t *ends;	    /* where each document ends in docs */
	size_t ndocs, capdocs;
	struct hb_emit *w;     /* writes into docs in the chosen format */
	struct hb_buf text;    /* an sbatch script or text reports */
	struct hb_buf scratch; /* manifests made for --explain only */
	struct hb_emit *sw;    /* writes into scratch */
};

/* A document has just been appended to out->docs: remember its end. */
static int doc_added(struct out *out)
{
	if (out->ndocs == out->capdocs) {
		size_t cap = out->capdocs ? out->capdocs * 2 : 16;
		size_t *e = realloc(out->ends, cap * sizeof(*e));

		if (!e)
			return HB_ENOMEM;
		out->ends = e;
		out->capdocs = cap;
	}
	out->ends[out->ndocs++] = out->docs.len;
	return 0;
}

/* Append a document built as a tree (and free it). */
static int add_tree(const struct opts *o, struct out *out, cJSON *doc)
{
	int rc;

	if (!doc)
		return HB_ENOMEM;
	rc = o->format == FMT_JSON ? hb_doc_write_json(doc, &out->docs)
				   : hb_doc_write_yaml(doc, &out->docs);
	cJSON_Delete(doc);
	return rc ? rc : doc_added(out);
}

/* The ResourceClaimTemplate an RDMA job's workers claim from
 * (kubernetes.rdma.mode dra), before its MPIJob: pods made before their
 * template may never get their claim. */
static int add_claim_template(const struct opts *o, const struct hb_config *cfg,
			      const struct hb_jobspec *spec, int64_t index,
			      struct out *out, struct hb_err *err)
{
	struct hb_report rep;
	cJSON *doc = NULL, *tmpl = NULL;
	int rc;

	if (spec->fabric != HB_FABRIC_RDMA)
		return 0;
	hb_report_init(&rep, "MPIJob");
	rep.no_notes = true;
	rc = hb_mpijob_emit(spec, &cfg->k8s, index, &doc, &rep, err);
	if (!rc)
		rc = hb_k8s_claim_template(doc, &cfg->k8s, &tmpl, err);
	if (!rc && tmpl)
		rc = add_tree(o, out, tmpl);
	cJSON_Delete(doc);
	hb_report_free(&rep);
	return rc;
}

static int emit_one(const struct opts *o, const struct hb_config *cfg,
		    const struct hb_jobspec *spec, int64_t index,
		    struct out *out, struct hb_report *rep, struct hb_err *err)
{
	cJSON *doc = NULL;
	/* With --explain the manifest is made for its fates only. */
	struct hb_emit *w = o->explain ? out->sw : out->w;
	int rc;

	switch (o->to) {
	case TO_MPIJOB:
	case TO_TRAINJOB:
		if (o->to == TO_MPIJOB && !o->explain &&
		    (rc = add_claim_template(o, cfg, spec, index, out, err)))
			return rc;
		rc = o->to == TO_MPIJOB
			     ? hb_mpijob_write(spec, &cfg->k8s, index, w, rep, err)
			     : hb_trainjob_write(spec, &cfg->k8s, index, w, rep, err);
		if (rc)
			return rc;
		if (o->explain) {
			hb_buf_reset(&out->scratch);
			return 0;
		}
		return doc_added(out);
	case TO_JOBSPEC:
		/* The job model holds every field it was given. */
		for (int f = 0; f < HB__F_COUNT; f++)
			if (hb_jobspec_has(spec, (enum hb_field)f))
				hb_report_fate(
					rep, (enum hb_field)f, HB_FATE_MAPPED,
					hb_field_name((enum hb_field)f), NULL);
		doc = hb_jobspec_to_json(spec);
		rc = doc ? 0 : HB_ENOMEM;
		break;
	case TO_SBATCH:
	default:
		if (!o->explain)
			return hb_sbatch_emit(spec, &out->text, rep, err);
		/* The report is wanted, not the script. */
		struct hb_buf scratch;

		hb_buf_init(&scratch, 0);
		rc = hb_sbatch_emit(spec, &scratch, rep, err);
		hb_buf_free(&scratch);
		return rc;
	}
	if (rc)
		return rc;
	/* With --explain the document was built for its fates only. */
	if (o->explain) {
		cJSON_Delete(doc);
		return 0;
	}
	return add_tree(o, out, doc);
}

static int translate_one(const struct opts *o, const struct hb_config *cfg,
			 const char *path, const struct hb_sbatch_opts *sopts,
			 struct out *out, struct hb_err *err)
{
	struct hb_buf in;
	struct hb_jobspec spec;
	struct hb_report rep;
	uint64_t count;
	int rc;

	hb_jobspec_init(&spec, strcmp(path, "-") ? path : "<stdin>");
	hb_report_init(&rep, target_kinds[o->to]);
	/* Without --explain only the counts of fates are printed. */
	rep.no_notes = !o->explain;
	rc = hb_cli_read_file(path, HB_SCRIPT_MAX, &in, err);
	if (rc)
		goto out;
	rc = hb_parse_any(in.data, in.len, spec.source_name, sopts, &spec, err);
	if (rc)
		goto out;

	count = hb_jobspec_array_count(&spec);
	if ((o->to == TO_MPIJOB || o->to == TO_TRAINJOB) && count > 0) {
		if (count > cfg->k8s.max_array_jobs) {
			rc = hb_err_set(err, HB_ETOOBIG, spec.source_name,
					spec.prov[HB_F_ARRAY].line,
					"job array of %llu elements exceeds "
					"translation.max_array_jobs (%u)",
					(unsigned long long)count,
					cfg->k8s.max_array_jobs);
			goto out;
		}
		for (uint64_t i = 0; !rc && i < count; i++)
			rc = emit_one(o, cfg, &spec,
				      hb_jobspec_array_index(&spec, i), out,
				      &rep, err);
	} else {
		rc = emit_one(o, cfg, &spec, -1, out, &rep, err);
	}
	if (rc)
		goto out;

	if (o->explain) {
		if (o->format == FMT_JSON) {
			rc = add_tree(o, out, hb_report_to_json(&spec, &rep));
		} else {
			rc = hb_report_write_text(&spec, &rep, &out->text);
		}
	} else if (!o->quiet && o->to != TO_JOBSPEC) {
		unsigned c[HB__FATE_COUNT];

		for (uint32_t i = 0; i < rep.nwarnings; i++)
			fprintf(stderr, "hpcbridge: %s: warning: %s\n",
				spec.source_name, rep.warnings[i]);
		hb_report_counts(&spec, &rep, c);
		if (c[HB_FATE_DROPPED] || c[HB_FATE_PARTIAL])
			fprintf(stderr,
				"hpcbridge: %s: %u dropped, %u partial "
				"(see --explain)\n",
				spec.source_name, c[HB_FATE_DROPPED],
				c[HB_FATE_PARTIAL]);
	}
	if (rc)
		hb_err_set(err, rc, spec.source_name, 0, "%s", hb_strerror(rc));
out:
	hb_report_free(&rep);
	hb_jobspec_free(&spec);
	hb_buf_free(&in);
	return rc;
}

int hb_cli_load_config(const char *path, struct hb_config *cfg,
		       struct hb_err *err)
{
	struct hb_buf b;
	int rc;

	if (!path)
		return hb_config_defaults(cfg);
	rc = hb_cli_read_file(path, CONFIG_MAX, &b, err);
	if (!rc)
		rc = hb_config_parse(b.data, b.len, path, cfg, err);
	hb_buf_free(&b);
	return rc;
}

/* Write one piece of output; HB_EIO when stdout refuses it. */
static int put(const char *p, size_t n)
{
	return n && fwrite(p, 1, n, stdout) != n ? HB_EIO : 0;
}

/*
 * Write the collected output.  A YAML stream separates documents with
 * "---"; several JSON documents form one array.
 */
static int write_out(const struct opts *o, struct out *out)
{
	size_t n = out->ndocs, start = 0;
	int rc = 0;

	if (o->format == FMT_JSON && n > 1)
		rc = put("[\n", 2);
	for (size_t i = 0; i < n && !rc; i++) {
		if (o->format == FMT_YAML && n > 1)
			rc = put("---\n", 4);
		if (!rc)
			rc = put(out->docs.data + start, out->ends[i] - start);
		if (!rc && o->format == FMT_JSON && n > 1 && i + 1 < n)
			rc = put(",\n", 2);
		start = out->ends[i];
	}
	if (!rc && o->format == FMT_JSON && n > 1)
		rc = put("]\n", 2);
	if (!rc)
		rc = put(out->text.data, out->text.len);
	if (!rc && fflush(stdout) != 0)
		rc = HB_EIO;
	return rc;
}

int hb_cmd_translate(int argc, char **argv)
{
	struct opts o;
	struct hb_config cfg;
	struct hb_err err = { 0 };
	struct hb_sbatch_opts sopts;
	struct out out = { 0 };
	struct hb_arena trees;
	int rc, status = HB_EXIT_OK;

	if (parse_opts(argc, argv, &o)) {
		fprintf(stderr, "Run 'hpcbridge translate --help' for "
				"usage.\n");
		return HB_EXIT_USAGE;
	}
	if (o.to == TO_SBATCH && !o.explain && argc - optind > 1) {
		fprintf(stderr, "hpcbridge translate: --to sbatch writes one "
				"script; give one input\n");
		return HB_EXIT_USAGE;
	}
	memset(&cfg, 0, sizeof(cfg));
	if ((rc = hb_cli_load_config(o.config, &cfg, &err))) {
		fprintf(stderr, "%s\n", err.msg[0] ? err.msg : hb_strerror(rc));
		hb_config_free(&cfg);
		return HB_EXIT_INPUT;
	}
	sopts.envp = o.use_env ? (const char *const *)environ : NULL;
	sopts.argv = o.options;
	sopts.argc = o.noptions;
	/* Every tree of this run lives in one arena, freed at the end. */
	hb_arena_init(&trees, TREES_MAX);
	hb_doc_scope_begin(&trees);
	hb_buf_init(&out.docs, TREES_MAX);
	hb_buf_init(&out.text, 0);
	hb_buf_init(&out.scratch, 0);
	out.w = hb_emit_new(o.format == FMT_JSON ? HB_EMIT_JSON : HB_EMIT_YAML,
			    &out.docs);
	out.sw = hb_emit_new(HB_EMIT_JSON, &out.scratch);
	if (!out.w || !out.sw) {
		fprintf(stderr, "hpcbridge translate: out of memory\n");
		status = HB_EXIT_INPUT;
		goto done;
	}
	if (o.with_runtime && o.to == TO_MPIJOB && !o.explain) {
		cJSON *cm = NULL;

		if (!cfg.k8s.launcher_runtime ||
		    strcmp(cfg.k8s.launcher_runtime, "configmap")) {
			fprintf(stderr, "hpcbridge translate: --with-runtime: "
					"kubernetes.launcher.runtime is not "
					"configmap; the MPIJobs carry the "
					"runtime themselves\n");
		} else if (hb_k8s_runtime_configmap(&cfg.k8s, &cm, &err) ||
			   add_tree(&o, &out, cm)) {
			fprintf(stderr, "hpcbridge translate: %s\n",
				err.msg[0] ? err.msg : "out of memory");
			status = HB_EXIT_INPUT;
			goto done;
		}
	}
	for (int i = optind; i < argc; i++) {
		memset(&err, 0, sizeof(err));
		rc = translate_one(&o, &cfg, argv[i], &sopts, &out, &err);
		if (rc) {
			fprintf(stderr, "%s\n",
				err.msg[0] ? err.msg : hb_strerror(rc));
			status = HB_EXIT_INPUT;
			goto done;
		}
	}
	errno = 0;
	if ((rc = write_out(&o, &out))) {
		fprintf(stderr, "hpcbridge translate: cannot write output: %s\n",
			rc == HB_EIO && errno ? strerror(errno)
					      : hb_strerror(rc));
		status = HB_EXIT_INPUT;
	} else if (!o.quiet && !o.explain && !o.with_runtime &&
		   o.to == TO_MPIJOB && cfg.k8s.launcher_runtime &&
		   !strcmp(cfg.k8s.launcher_runtime, "configmap")) {
		fprintf(stderr,
			"hpcbridge: the MPIJobs mount the launcher runtime "
			"from ConfigMap %s; create it once per namespace "
			"with --with-runtime\n",
			hb_launcher_runtime_name());
	}
done:
	hb_emit_free(out.w);
	hb_emit_free(out.sw);
	hb_doc_scope_end();
	free(out.ends);
	hb_buf_free(&out.docs);
	hb_buf_free(&out.scratch);
	hb_arena_free(&trees);
	hb_buf_free(&out.text);
	hb_config_free(&cfg);
	return status;
}
