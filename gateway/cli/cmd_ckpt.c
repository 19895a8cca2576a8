/*
 * cmd_ckpt.c - hpcbridge ckpt push|pull|verify|ls|retain: checkpoints
 * between a directory and S3 (mirror.h), with progress on standard
 * error and the result on standard output.
 *
 *   push DIR s3://BUCKET/PREFIX [--job ID] [--keep N] [--jobs N]
 *        [--part-size BYTES] [--multipart-min BYTES]
 *        [--progress auto|bar|json|none] [--json]
 *   pull s3://BUCKET/PREFIX DIR [--checkpoint ID] [--if-exists] [--jobs N]
 *        [--progress ...] [--json]
 *   verify s3://BUCKET/PREFIX [--checkpoint ID] [--deep] [--jobs N] [--json]
 *   ls s3://BUCKET/PREFIX [--json]
 *   retain s3://BUCKET/PREFIX --keep N [--grace SECONDS] [--jobs N] [--json]
 *
 * Every verb takes --endpoint URL and --region R.  Exit 0, 1 on an error
 * (or a problem verify found), 2 on a bad command line.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/mirror.h"
#include "hpcbridge/timefmt.h"
#include "hpcbridge/units.h"

#define MIB (1024ull * 1024)

enum { PROG_AUTO, PROG_BAR, PROG_JSON, PROG_NONE };

/* Options, one bit each, so a verb says which it takes. */
enum {
	O_JOB = 1 << 0, O_KEEP = 1 << 1, O_JOBS = 1 << 2, O_PART = 1 << 3,
	O_PROGRESS = 1 << 4, O_JSON = 1 << 5, O_CKPT = 1 << 6,
	O_DEEP = 1 << 7, O_GRACE = 1 << 8, O_S3 = 1 << 9, O_IFEX = 1 << 10
};

struct ck {
	const struct verb *v;
	const char *args[2];
	const char *endpoint, *region;
	struct hb_mirror_opts o;
	int json, prog, have_keep;
	int if_exists;		/* pull: no checkpoint is not an error */
	int drawn;		/* a bar is on the terminal's line */
	struct hb_s3 *s3;
};

struct verb {
	const char *name;
	int nargs;
	unsigned opts;
	int (*run)(struct ck *c);
	const char *usage;
};

static int run_push(struct ck *c);
static int run_pull(struct ck *c);
static int run_verify(struct ck *c);
static int run_ls(struct ck *c);
static int run_retain(struct ck *c);

static const struct verb verbs[] = {
	{ "push", 2, O_JOB | O_KEEP | O_JOBS | O_PART | O_PROGRESS | O_JSON,
	  run_push,
	  "push DIR s3://BUCKET/PREFIX [--job ID] [--keep N] [--jobs N] "
	  "[--part-size BYTES] [--multipart-min BYTES] "
	  "[--progress auto|bar|json|none] [--json]" },
	{ "pull", 2, O_CKPT | O_IFEX | O_JOBS | O_PROGRESS | O_JSON, run_pull,
	  "pull s3://BUCKET/PREFIX DIR [--checkpoint ID] [--if-exists] "
	  "[--jobs N] [--progress auto|bar|json|none] [--json]" },
	{ "verify", 1, O_CKPT | O_DEEP | O_JSON | O_JOBS, run_verify,
	  "verify s3://BUCKET/PREFIX [--checkpoint ID] [--deep] [--jobs N] "
	  "[--json]" },
	{ "ls", 1, O_JSON, run_ls, "ls s3://BUCKET/PREFIX [--json]" },
	{ "retain", 1, O_KEEP | O_GRACE | O_JSON | O_JOBS, run_retain,
	  "retain s3://BUCKET/PREFIX --keep N [--grace SECONDS] [--jobs N] "
	  "[--json]" },
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  hpcbridge ckpt %s\n", verbs[i].usage);
	fprintf(f, "Every verb also takes --endpoint URL and --region R "
		   "(defaults: AWS_ENDPOINT_URL, AWS_DEFAULT_REGION).\n");
}

/* What a listing or a server said, made safe for a terminal. */
/* Text a server or a manifest gave, with every control character (below
 * 0x20, DEL, and U+0080 to U+009F, which a terminal takes as CSI and the
 * like) shown as '?'. */
static void put_safe(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			fputc('?', f);
			p++;
		} else {
			fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
		}
	}
}

static void end_bar(struct ck *c)
{
	if (c->drawn) {
		fputc('\n', stderr);
		c->drawn = 0;
	}
}

static void problem(void *ctx, const char *what, const char *why)
{
	struct ck *c = ctx;

	end_bar(c);
	fprintf(stderr, "hpcbridge ckpt %s: ", c->v->name);
	put_safe(stderr, what);
	fputs(": ", stderr);
	put_safe(stderr, why);
	fputc('\n', stderr);
}

/* "1.5 GiB" */
static void human(uint64_t b, char out[32])
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(out, 32, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void progress(void *ctx, const struct hb_mirror_progress *p)
{
	struct ck *c = ctx;
	uint64_t rate = p->elapsed_ms ? p->bytes_done * 1000 / p->elapsed_ms
				      : 0;
	int64_t eta = -1;

	if (rate && p->bytes_total >= p->bytes_done)
		eta = (int64_t)((p->bytes_total - p->bytes_done) / rate);
	if (c->prog == PROG_JSON) {
		char e[24] = "null";

		if (eta >= 0)
			snprintf(e, sizeof(e), "%" PRId64, eta);
		fprintf(stderr, "{\"phase\":\"%s\",\"files_done\":%" PRIu64
			",\"files_total\":%" PRIu64 ",\"bytes_done\":%" PRIu64
			",\"bytes_total\":%" PRIu64 ",\"rate_bps\":%" PRIu64
			",\"eta_s\":%s,\"final\":%s}\n", p->phase,
			p->files_done, p->files_total, p->bytes_done,
			p->bytes_total, rate, e, p->final ? "true" : "false");
		return;
	}
	{
		char done[32], total[32], r[32], e[24] = "--:--";
		uint64_t num = p->bytes_total ? p->bytes_done : p->files_done;
		uint64_t den = p->bytes_total ? p->bytes_total : p->files_total;
		unsigned pct = den ? (unsigned)(num * 100 / den) : 100;
		char bar[21];

		human(p->bytes_done, done);
		human(p->bytes_total, total);
		human(rate, r);
		if (eta >= 0)
			snprintf(e, sizeof(e), "%" PRId64 ":%02" PRId64,
				 eta / 60, eta % 60);
		for (unsigned i = 0; i < 20; i++)
			bar[i] = i < pct / 5 ? '#' : ' ';
		bar[20] = '\0';
		fprintf(stderr, "\r%-8s [%s] %3u%%  %" PRIu64 "/%" PRIu64
			" files  %s/%s  %s/s  ETA %s  ", p->phase, bar,
			pct > 100 ? 100 : pct, p->files_done, p->files_total,
			done, total, r, e);
		c->drawn = 1;
		if (p->final)
			end_bar(c);
	}
}

/* ---- The result --------------------------------------------------------- */

static void add_u64(cJSON *o, const char *name, uint64_t v)
{
	char s[24];

	/* As digits: a double would round past 2^53. */
	snprintf(s, sizeof(s), "%" PRIu64, v);
	cJSON_AddRawToObject(o, name, s);
}

static int print_json(cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	if (!s) {
		fprintf(stderr, "hpcbridge ckpt: out of memory\n");
		return HB_EXIT_INPUT;
	}
	puts(s);
	free(s);
	return HB_EXIT_OK;
}

static int print_stats(const struct ck *c, const struct hb_mirror_stats *st)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return print_json(NULL);
	cJSON_AddStringToObject(o, "id", st->id);
	cJSON_AddBoolToObject(o, "unchanged", st->unchanged);
	add_u64(o, "files", st->files);
	add_u64(o, "bytes", st->bytes);
	add_u64(o, "sent_files", st->sent_files);
	add_u64(o, "sent_bytes", st->sent_bytes);
	add_u64(o, "stored_files", st->stored_files);
	add_u64(o, "stored_bytes", st->stored_bytes);
	add_u64(o, "got_files", st->got_files);
	add_u64(o, "got_bytes", st->got_bytes);
	add_u64(o, "kept_files", st->kept_files);
	add_u64(o, "kept_bytes", st->kept_bytes);
	add_u64(o, "bad", st->bad);
	add_u64(o, "removed_checkpoints", st->removed_checkpoints);
	add_u64(o, "removed_objects", st->removed_objects);
	add_u64(o, "aborted_uploads", st->aborted_uploads);
	add_u64(o, "prefix_bytes", st->prefix_bytes);
	add_u64(o, "elapsed_ms", st->elapsed_ms);
	(void)c;
	return print_json(o);
}

static int failed(struct ck *c, const struct hb_err *err, int rc)
{
	end_bar(c);
	fprintf(stderr, "hpcbridge ckpt %s: ", c->v->name);
	put_safe(stderr, err->msg[0] ? err->msg : hb_strerror(rc));
	fputc('\n', stderr);
	return HB_EXIT_INPUT;
}

static void print_retained(const struct hb_mirror_stats *st, const char *url)
{
	printf("removed %" PRIu64 " checkpoints and %" PRIu64 " objects",
	       st->removed_checkpoints, st->removed_objects);
	if (st->aborted_uploads)
		printf(", aborted %" PRIu64 " unfinished uploads",
		       st->aborted_uploads);
	printf("; %" PRIu64 " bytes stay under %s\n", st->prefix_bytes, url);
}

static int run_push(struct ck *c)
{
	struct hb_mirror_stats st;
	struct hb_err err = { 0 };
	int rc = hb_mirror_push(c->s3, c->args[1], c->args[0], &c->o, &st,
				&err);

	if (rc)
		return failed(c, &err, rc);
	if (c->json)
		return print_stats(c, &st);
	if (st.unchanged)
		printf("%s unchanged: %" PRIu64 " files, %" PRIu64
		       " bytes; nothing sent\n", st.id, st.files, st.bytes);
	else
		printf("%s: %" PRIu64 " files, %" PRIu64 " bytes; sent %"
		       PRIu64 " files (%" PRIu64 " bytes), %" PRIu64
		       " stored already\n", st.id, st.files, st.bytes,
		       st.sent_files, st.sent_bytes, st.stored_files);
	if (c->o.keep)
		print_retained(&st, c->args[1]);
	return HB_EXIT_OK;
}

/* --if-exists: whether there is a checkpoint to pull; the pull is then
 * pinned to it.  1 when there is none (said on stderr). */
static int none_there(struct ck *c, char id[HB_MIRROR_ID_LEN + 1],
		      struct hb_err *err, int *rc)
{
	struct hb_ckpt_manifest *m = NULL;

	*rc = hb_mirror_manifest_get(c->s3, c->args[0], &c->o, &m, id, err);
	hb_ckpt_manifest_free(m);
	if (*rc == HB_ENOENT) {
		fprintf(stderr, "hpcbridge ckpt pull: ");
		put_safe(stderr, err->msg);
		fprintf(stderr, ": nothing pulled\n");
		*rc = 0;
		return 1;
	}
	if (!*rc)
		c->o.checkpoint = id;
	return 0;
}

static int run_pull(struct ck *c)
{
	char id[HB_MIRROR_ID_LEN + 1];
	struct hb_mirror_stats st = { 0 };
	struct hb_err err = { 0 };
	int rc = 0;

	if (c->if_exists && none_there(c, id, &err, &rc))
		return c->json ? print_stats(c, &st) : HB_EXIT_OK;
	if (!rc)
		rc = hb_mirror_pull(c->s3, c->args[0], c->args[1], &c->o, &st,
				    &err);
	if (rc)
		return failed(c, &err, rc);
	if (c->json)
		return print_stats(c, &st);
	printf("%s -> %s: %" PRIu64 " files, %" PRIu64 " bytes; got %" PRIu64
	       " files (%" PRIu64 " bytes), %" PRIu64 " there already\n",
	       st.id, c->args[1], st.files, st.bytes, st.got_files,
	       st.got_bytes, st.kept_files);
	return HB_EXIT_OK;
}

static int run_verify(struct ck *c)
{
	struct hb_mirror_stats st;
	struct hb_err err = { 0 };
	int rc = hb_mirror_verify(c->s3, c->args[0], &c->o, &st, &err);

	if (rc && !st.bad)
		return failed(c, &err, rc);
	if (c->json)
		print_stats(c, &st);
	else if (!rc)
		printf("%s: %" PRIu64 " files, %" PRIu64 " bytes; every object "
		       "%s\n", st.id, st.files, st.bytes,
		       c->o.deep ? "has its SHA-256" : "is there, of its size");
	if (rc)
		failed(c, &err, rc);
	return rc ? HB_EXIT_INPUT : HB_EXIT_OK;
}

static int list_one(void *ctx, const struct hb_mirror_ckpt *k)
{
	cJSON *a = ctx, *o;
	char t[32], s[24];

	hb_time_rfc3339_format(k->created, t);
	if (!a) {
		printf("%s  %s  %" PRIu64 " files  %" PRIu64 " bytes  job ",
		       k->id, t, k->files, k->bytes);
		put_safe(stdout, k->job);
		putchar('\n');
		return 0;
	}
	if (!(o = cJSON_CreateObject()))
		return HB_ENOMEM;
	cJSON_AddItemToArray(a, o);
	cJSON_AddStringToObject(o, "id", k->id);
	cJSON_AddStringToObject(o, "created", t);
	cJSON_AddStringToObject(o, "job", k->job);
	snprintf(s, sizeof(s), "%" PRIu64, k->files);
	cJSON_AddRawToObject(o, "files", s);
	snprintf(s, sizeof(s), "%" PRIu64, k->bytes);
	cJSON_AddRawToObject(o, "bytes", s);
	return 0;
}

static int run_ls(struct ck *c)
{
	cJSON *a = c->json ? cJSON_CreateArray() : NULL;
	struct hb_err err = { 0 };
	int rc;

	if (c->json && !a)
		return print_json(NULL);
	rc = hb_mirror_list(c->s3, c->args[0], &c->o, list_one, a, &err);
	if (rc) {
		cJSON_Delete(a);
		return failed(c, &err, rc);
	}
	return a ? print_json(a) : HB_EXIT_OK;
}

static int run_retain(struct ck *c)
{
	struct hb_mirror_stats st;
	struct hb_err err = { 0 };
	int rc;

	if (!c->have_keep) {
		fprintf(stderr, "hpcbridge ckpt retain: --keep N is required\n");
		return HB_EXIT_USAGE;
	}
	rc = hb_mirror_retain(c->s3, c->args[0], c->o.keep, &c->o, &st, &err);
	if (rc)
		return failed(c, &err, rc);
	if (c->json)
		return print_stats(c, &st);
	print_retained(&st, c->args[0]);
	return HB_EXIT_OK;
}

/* ---- The command line --------------------------------------------------- */

static const struct option longopts[] = {
	{ "job", required_argument, NULL, 'J' },
	{ "keep", required_argument, NULL, 'k' },
	{ "jobs", required_argument, NULL, 'j' },
	{ "part-size", required_argument, NULL, 'p' },
	{ "multipart-min", required_argument, NULL, 'm' },
	{ "progress", required_argument, NULL, 'P' },
	{ "json", no_argument, NULL, 'o' },
	{ "checkpoint", required_argument, NULL, 'c' },
	{ "deep", no_argument, NULL, 'd' },
	{ "if-exists", no_argument, NULL, 'x' },
	{ "grace", required_argument, NULL, 'g' },
	{ "endpoint", required_argument, NULL, 'e' },
	{ "region", required_argument, NULL, 'r' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static unsigned opt_bit(int ch)
{
	switch (ch) {
	case 'J': return O_JOB;
	case 'k': return O_KEEP;
	case 'j': return O_JOBS;
	case 'p':
	case 'm': return O_PART;
	case 'P': return O_PROGRESS;
	case 'o': return O_JSON;
	case 'c': return O_CKPT;
	case 'd': return O_DEEP;
	case 'g': return O_GRACE;
	case 'x': return O_IFEX;
	case 'e': case 'r': return O_S3;
	default: return 0;
	}
}

/* Set the option ch to arg; 0, or -1 after saying what is wrong. */
static int set_opt(struct ck *c, int ch, const char *arg)
{
	static const char *modes[] = { "auto", "bar", "json", "none" };
	uint64_t v;
	int64_t d;

	switch (ch) {
	case 'J': c->o.job = arg; return 0;
	case 'o': c->json = 1; return 0;
	case 'c': c->o.checkpoint = arg; return 0;
	case 'd': c->o.deep = 1; return 0;
	case 'x': c->if_exists = 1; return 0;
	case 'e': c->endpoint = arg; return 0;
	case 'r': c->region = arg; return 0;
	case 'k':
		if (hb_parse_u64(arg, 1000000, &v))
			break;
		c->o.keep = (unsigned)v;
		c->have_keep = 1;
		return 0;
	case 'j':
		if (hb_parse_u64(arg, 64, &v) || !v)
			break;
		c->o.jobs = (unsigned)v;
		return 0;
	case 'p':
		if (hb_parse_size(arg, &v) || v < 5 * MIB || v > 5120 * MIB)
			break;
		c->o.part_size = v;
		return 0;
	case 'm':
		if (hb_parse_size(arg, &v) || v < 5 * MIB || v > 5120 * MIB)
			break;
		c->o.multipart_min = v;
		return 0;
	case 'g':
		if (hb_parse_duration(arg, &d) || d < 0)
			break;
		c->o.gc_grace_s = d;
		return 0;
	case 'P':
		for (int i = 0; i < 4; i++)
			if (!strcmp(arg, modes[i])) {
				c->prog = i;
				return 0;
			}
		break;
	}
	fprintf(stderr, "hpcbridge ckpt %s: bad value '%s' (jobs 1 to 64, "
		"part size and multipart minimum 5 MiB to 5 GiB, progress auto|bar|json|none)\n",
		c->v->name, arg);
	return -1;
}

static int parse(struct ck *c, int argc, char **argv)
{
	int ch, n = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			exit(HB_EXIT_OK);
		}
		if (ch == '?' || !((c->v->opts | O_S3) & opt_bit(ch))) {
			if (ch != '?')
				fprintf(stderr, "hpcbridge ckpt %s: %s does "
					"not take %s\n", c->v->name,
					c->v->name, argv[optind - 1]);
			return -1;
		}
		if (set_opt(c, ch, optarg))
			return -1;
	}
	for (; optind < argc; optind++) {
		if (n == c->v->nargs) {
			fprintf(stderr, "hpcbridge ckpt %s: unexpected '%s'\n",
				c->v->name, argv[optind]);
			return -1;
		}
		c->args[n++] = argv[optind];
	}
	if (n != c->v->nargs) {
		fprintf(stderr, "hpcbridge ckpt %s: usage: hpcbridge ckpt %s\n",
			c->v->name, c->v->usage);
		return -1;
	}
	return 0;
}

int hb_cmd_ckpt(int argc, char **argv)
{
	struct ck c = { .prog = PROG_AUTO, .o = { .gc_grace_s = -1 } };
	struct hb_s3_opts so = { 0 };
	struct hb_err err = { 0 };
	int rc;

	if (argc < 2) {
		usage(stderr);
		return HB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return HB_EXIT_OK;
	}
	for (size_t i = 0; i < NVERBS && !c.v; i++)
		if (!strcmp(argv[1], verbs[i].name))
			c.v = &verbs[i];
	if (!c.v) {
		fprintf(stderr, "hpcbridge ckpt: unknown verb '%s'\n", argv[1]);
		usage(stderr);
		return HB_EXIT_USAGE;
	}
	if (parse(&c, argc - 1, argv + 1))
		return HB_EXIT_USAGE;
	if (c.prog == PROG_AUTO)
		c.prog = isatty(STDERR_FILENO) ? PROG_BAR : PROG_JSON;
	if (c.prog != PROG_NONE)
		c.o.progress = progress;
	c.o.problem = problem;
	c.o.ctx = &c;
	so.endpoint = c.endpoint;
	so.region = c.region;
	rc = hb_s3_new(&so, &c.s3, &err);
	if (rc)
		rc = failed(&c, &err, rc);
	else
		rc = c.v->run(&c);
	hb_s3_free(c.s3);
	if (fflush(stdout) && !rc) {
		fprintf(stderr, "hpcbridge ckpt %s: standard output: write "
			"failed\n", c.v->name);
		rc = HB_EXIT_INPUT;
	}
	return rc;
}
