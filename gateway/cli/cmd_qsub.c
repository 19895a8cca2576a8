/*
 * cmd_qsub.c - hpcbridge qsub, also run when the program is called
 * "qsub": a PBS job submitted the way PBS reads it, through hpcbridged
 * to Slurm as the user (the same "submit" op as hpcbridge submit).
 *
 * The options and the script's #PBS lines are read by the PBS reader
 * (translators/pbs), command-line options after the script's ("last one
 * wins").  -q goes through pbs.queues.  What Slurm receives is a small
 * /bin/sh wrapper: the job's #SBATCH lines (hb_sbatch_emit, which also
 * defines the PBS_* variables from Slurm's), the values only qsub knows
 * (PBS_O_WORKDIR, PBS_O_HOST, the server name in PBS_JOBID), then a
 * copy of the user's script, byte for byte, after the wrapper's last
 * command.  The wrapper copies those last bytes of itself ("tail -c N
 * $0") to a private temporary file and runs it with the script's own
 * interpreter (#!, or -S, or the user's login shell): no quoting, no
 * heredoc, nothing of the script is ever read by the shell that runs the
 * wrapper.  A job that bursts runs the same wrapper in the launcher pod,
 * where SLURM_* are the launcher's and the block derives the same PBS_*
 * from them.
 *
 * -h (submit held) and -F (the script's arguments) are qsub's own: the
 * wrapper gets "#SBATCH --hold" and passes the arguments on.  sbatch
 * runs with --ignore-pbs, so that only the reader reads the #PBS lines.
 *
 * Directives with no Slurm equivalent are refused by the reader or the
 * daemon (FILE:LINE and why) or printed here as warnings, never dropped
 * silently.  docs/pbs.md is the user's view.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/sbatch.h"
#include "translators/pbs/pbs.h"

#define QSUB_MAX_OPTS 1024

/* The command line: the qsub options, as the PBS reader takes them. */
struct qargs {
	const char *socket, *config;
	bool dry_run; /* print what Slurm would receive; submit nothing */
	bool quiet;   /* -z: print no job id */
	bool hold;    /* -h: submitted held (sbatch --hold) */
	const char *args; /* -F: the script's arguments, blank-separated */
	const char *opts[QSUB_MAX_OPTS];
	int nopts;
	const char *script; /* "-": standard input */
	char *copies[QSUB_MAX_OPTS]; /* option words rewritten for the reader */
	size_t ncopies;
};

static const char qsub_usage[] =
	"usage: qsub [-a TIME] [-A ACCOUNT] [-d|-w DIR] [-e PATH] [-F ARGS] "
	"[-h]\n"
	"            [-j oe|eo|n] [-J|-t RANGE] [-k oe] [-l RESOURCES] "
	"[-m MAIL] "
	"[-M USERS]\n"
	"            [-N NAME] [-o PATH] [-p PRIO] [-P PROJECT] [-q QUEUE]\n"
	"            [-r y|n] [-S SHELL] [-v VARS] [-V] [-W ATTR=VALUE]\n"
	"            [--socket PATH] [--config FILE] [--dry-run] [SCRIPT | -]\n"
	"Submit a PBS (Torque or PBS Pro) job script to Slurm through "
	"hpcbridged, as\nyourself; its #PBS lines and these options are read "
	"as PBS reads them.\nWithout SCRIPT (or with -) the script is read "
	"from standard input.\n--dry-run prints the script Slurm would "
	"receive and submits nothing.\n";

/* A long option of ours ("--socket PATH" or "--socket=PATH"); 1 when
 * argv[*i] was one (value in *val), -1 when its value is missing. */
static int long_opt(int argc, char **argv, int *i, const char *name,
		    const char **val)
{
	const char *a = argv[*i] + 2;
	size_t n = strlen(name);

	if (strncmp(a, name, n) || (a[n] && a[n] != '='))
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 1;
}

/* Options qsub refuses here rather than submit a job that would not do
 * what they ask. */
static const struct {
	char opt;
	const char *why;
} refused[] = {
	{ 'I', "interactive jobs are not supported here; use salloc or "
	       "srun --pty" },
};

/* -h and -F are qsub's own: the job is submitted held, and the wrapper
 * passes the arguments to the script.  1 when w[j] was one of them (its
 * value taken), -1 when -F has no value. */
static int qsub_own(int argc, char **argv, int *i, size_t j, struct qargs *q)
{
	const char *w = argv[*i];

	if (w[j] == 'h') {
		q->hold = true;
		return 1;
	}
	if (w[j] != 'F')
		return 0;
	if (w[j + 1])
		q->args = w + j + 1;
	else if (*i + 1 < argc)
		q->args = argv[++*i];
	else
		return -1;
	return 2;
}

/* The option word w as the reader gets it, without qsub's own letters:
 * -h before w[upto], and -F with its value when w[upto] is F.  w itself
 * when it has none, else a copy kept in q; "" when nothing is left, NULL
 * when out of memory. */
static const char *reader_word(struct qargs *q, const char *w, size_t upto)
{
	bool cut = w[upto] == 'F';
	char *c;
	size_t n = 1;

	if (!cut && !memchr(w, 'h', upto))
		return w;
	if (q->ncopies >= sizeof(q->copies) / sizeof(q->copies[0]) ||
	    !(c = malloc(strlen(w) + 1)))
		return NULL;
	c[0] = '-';
	for (size_t j = 1; w[j] && (!cut || j < upto); j++)
		if (j >= upto || w[j] != 'h')
			c[n++] = w[j];
	c[n] = '\0';
	q->copies[q->ncopies++] = c;
	return n > 1 ? c : "";
}

/* One word of qsub options ("-l", "-lnodes=2", "-kVN name"): kept, with
 * the next word when the option's value is there.  0, or an exit code
 * (printed). */
static int short_opts(int argc, char **argv, int *i, struct qargs *q)
{
	const char *w = argv[*i], *r;
	size_t j;

	for (j = 1; w[j]; j++) {
		int k = hb_pbs_option_kind(w[j]);
		int own = k ? qsub_own(argc, argv, i, j, q) : 0;

		if (!k) {
			fprintf(stderr, "qsub: unknown option -%c\n%s", w[j],
				qsub_usage);
			return HB_EXIT_USAGE;
		}
		if (own < 0) {
			fprintf(stderr, "qsub: -F needs a value\n");
			return HB_EXIT_USAGE;
		}
		if (own == 2)
			break;
		if (own)
			continue;
		for (size_t x = 0; x < sizeof(refused) / sizeof(*refused); x++)
			if (refused[x].opt == w[j]) {
				fprintf(stderr, "qsub: -%c: %s\n", w[j],
					refused[x].why);
				return HB_EXIT_USAGE;
			}
		q->quiet |= w[j] == 'z';
		if (k == 2)
			break;
	}
	if (q->nopts + 2 > QSUB_MAX_OPTS) {
		fprintf(stderr, "qsub: more than %d option words\n",
			QSUB_MAX_OPTS);
		return HB_EXIT_USAGE;
	}
	/* (-F's value ends the word, and the letters before it stay) */
	if (!(r = reader_word(q, w, w[j] ? j : strlen(w)))) {
		fprintf(stderr, "qsub: out of memory\n");
		return HB_EXIT_INPUT;
	}
	if (*r)
		q->opts[q->nopts++] = r;
	/* an option whose value is the next word */
	if (w[j] && w[j] != 'F' && !w[j + 1]) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "qsub: -%c needs a value\n", w[j]);
			return HB_EXIT_USAGE;
		}
		q->opts[q->nopts++] = argv[++*i];
	}
	return 0;
}

/* Read the command line; 0, -1 for --help (usage printed), or an exit
 * code (the error printed). */
static int qsub_args(int argc, char **argv, struct qargs *q)
{
	int i, rc;

	memset(q, 0, sizeof(*q));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help")) {
			printf("%s", qsub_usage);
			return -1;
		}
		if (!strcmp(a, "--dry-run")) {
			q->dry_run = true;
			continue;
		}
		if (!strncmp(a, "--", 2) && a[2]) {
			rc = long_opt(argc, argv, &i, "socket", &q->socket);
			if (!rc)
				rc = long_opt(argc, argv, &i, "config",
					      &q->config);
			if (rc == 1)
				continue;
			fprintf(stderr, "qsub: %s: %s\n%s", a,
				rc ? "needs a value" : "unknown option",
				qsub_usage);
			return HB_EXIT_USAGE;
		}
		if (!strcmp(a, "--")) {
			fprintf(stderr, "qsub: '-- COMMAND' (an executable "
					"instead of a script) is not "
					"supported; write a script\n");
			return HB_EXIT_USAGE;
		}
		if (a[0] != '-' || !a[1])
			break;
		if ((rc = short_opts(argc, argv, &i, q)))
			return rc;
	}
	q->script = i < argc ? argv[i] : "-";
	if (i + 1 < argc) {
		fprintf(stderr, "qsub: '%s' after the script: arguments to "
				"the script are not supported\n%s",
			argv[i + 1], qsub_usage);
		return HB_EXIT_USAGE;
	}
	return 0;
}

/* Where field f was given, for messages: "FILE:LINE" or "the command
 * line". */
static const char *where(const struct hb_jobspec *s, enum hb_field f,
			 char buf[300])
{
	const struct hb_prov *p = &s->prov[f];

	if (p->kind == HB_PROV_FILE)
		snprintf(buf, 300, "%.250s:%u", s->source_name, p->line);
	else
		snprintf(buf, 300, "the command line");
	return buf;
}

/*
 * The PBS queue (the reader's partition) as a Slurm partition, through
 * pbs.queues: *queue is the queue name (NULL: none given).  A queue not
 * in a non-empty map is an error naming it and where it was given.
 */
static int map_queue(const struct hb_config *cfg, struct hb_jobspec *s,
		     const char **queue, struct hb_err *err)
{
	const char *part;
	char at[300];

	*queue = s->partition;
	if (!s->partition || !cfg->npbs_queues)
		return 0;
	part = hb_kv_get(cfg->pbs_queues, cfg->npbs_queues, s->partition);
	if (!part)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: -q %s: no such queue (pbs.queues "
				  "lists the queues of this site)",
				  where(s, HB_F_PARTITION, at), s->partition);
	s->partition = hb_jobspec_strdup(s, part);
	return s->partition ? 0 : HB_ENOMEM;
}

void hb_cli_pbs_server(const struct hb_config *cfg, char *buf, size_t n)
{
	if (cfg && cfg->pbs_server_name) {
		snprintf(buf, n, "%s", cfg->pbs_server_name);
		return;
	}
	if (gethostname(buf, n - 1))
		snprintf(buf, n, "localhost");
	buf[n - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
}

/* The job id as qsub prints it: "123.server", or "123[].server" for an
 * array (PBS Pro and Torque alike). */
static void format_jobid(long long id, bool array, const char *server,
			 char *buf, size_t n)
{
	snprintf(buf, n, "%lld%s.%s", id, array ? "[]" : "", server);
}

/*
 * What is not carried exactly, on standard error: each directive's
 * reader note and the fields the emitter dropped or carried in part,
 * "FILE:LINE: TEXT: ...".  Nothing is left unsaid.
 */
static void warn_fidelity(const struct hb_jobspec *s,
			  const struct hb_report *rep)
{
	for (uint32_t i = 0; i < s->ndirectives; i++) {
		const struct hb_directive *d = &s->directives[i];
		char at[300];

		if (d->kind != HB_DIR_PBS)
			continue; /* the body's lines: what the pods do */
		if (d->prov.kind == HB_PROV_FILE)
			snprintf(at, sizeof(at), "%.250s:%u", s->source_name,
				 d->prov.line);
		else
			snprintf(at, sizeof(at), "argv[%u]", d->prov.line);
		if (d->note)
			fprintf(stderr, "qsub: note: %s: %s: %s\n", at,
				d->text, d->note);
		for (uint8_t k = 0; k < d->nfields; k++) {
			const struct hb_fate *f = &rep->fate[d->fields[k]];

			/* -k: carried here, by default_files() */
			if (d->fields[k] == HB_F_KEEP)
				continue;
			if (f->kind != HB_FATE_DROPPED &&
			    f->kind != HB_FATE_PARTIAL &&
			    f->kind != HB_FATE_NONE)
				continue;
			fprintf(stderr, "qsub: warning: %s: %s: %s %s%s%s\n",
				at, d->text, hb_field_name(d->fields[k]),
				f->kind == HB_FATE_PARTIAL ? "kept in part"
							   : "not carried",
				f->note ? ": " : "", f->note ? f->note : "");
		}
	}
	for (uint32_t i = 0; i < rep->nwarnings; i++)
		fprintf(stderr, "qsub: warning: %s\n", rep->warnings[i]);
}

/* v single-quoted for sh, appended to b. */
static int put_quoted(struct hb_buf *b, const char *v, size_t n)
{
	int rc = hb_buf_puts(b, "'");

	for (size_t i = 0; !rc && i < n; i++)
		rc = v[i] == '\'' ? hb_buf_puts(b, "'\\''")
				  : hb_buf_append(b, v + i, 1);
	return rc ? rc : hb_buf_puts(b, "'");
}

/* "export NAME='value'\n", value NULL: nothing. */
static int put_var(struct hb_buf *b, const char *name, const char *v)
{
	if (!v)
		return 0;
	return hb_buf_printf(b, "export %s=", name)
		       ?: put_quoted(b, v, strlen(v)) ?: hb_buf_puts(b, "\n");
}

/* How the script runs: "#!/path arg" as the kernel reads it (the path,
 * then the rest as one argument), or the user's login shell (/bin/sh for
 * an account whose shell is nologin or false). */
static int put_interpreter(struct hb_buf *b, const char *interp)
{
	size_t n;

	if (!interp || !*interp)
		return hb_buf_puts(
			b, "hb_qsub_sh=$(getent passwd \"$(id -un)\" | cut "
			   "-d: -f7)\n"
			   "case $hb_qsub_sh in ''|*/nologin|*/false) "
			   "hb_qsub_sh=/bin/sh ;; esac\n"
			   "\"$hb_qsub_sh\"");
	n = strcspn(interp, " \t");
	if (put_quoted(b, interp, n))
		return HB_ENOMEM;
	interp += n;
	interp += strspn(interp, " \t");
	if (*interp)
		return hb_buf_puts(b, " ") ?: put_quoted(b, interp,
							 strlen(interp));
	return 0;
}

/* -F's arguments, each word (blanks separate them, as Torque splits
 * them) single-quoted after the script. */
static int put_args(struct hb_buf *b, const char *args)
{
	int rc = 0;

	while (args && *args && !rc) {
		size_t n;

		args += strspn(args, " \t");
		n = strcspn(args, " \t");
		if (n)
			rc = hb_buf_puts(b, " ") ?: put_quoted(b, args, n);
		args += n;
	}
	return rc;
}

/* The wrapper's own commands (its body before the user's script). */
static int wrapper_body(struct hb_buf *b, const char *interp,
			const char *jobname, const char *queue,
			const char *server, const char *cwd, const char *args,
			size_t payload)
{
	static const char *const carried[] = { "HOME",	"LOGNAME", "PATH",
					       "SHELL", "LANG",	   "MAIL",
					       "TZ" };
	char host[256], name[32];
	int rc;

	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	rc = hb_buf_printf(b,
			   "# hpcbridge qsub: the job script is the last "
			   "%zu bytes of this file,\n# after the exit "
			   "below; it runs unchanged, with PBS's "
			   "variables.\n",
			   payload);
	/* the name as given, the same wherever the job runs (in the
	 * cluster's pods SLURM_JOB_NAME is not the PBS name) */
	rc = rc ?: put_var(b, "PBS_JOBNAME", jobname);
	rc = rc ?: put_var(b, "PBS_O_WORKDIR", cwd);
	rc = rc ?: put_var(b, "PBS_O_HOST", host);
	rc = rc ?: put_var(b, "PBS_SERVER", server);
	if (queue) {
		rc = rc ?: put_var(b, "PBS_QUEUE", queue);
		rc = rc ?: put_var(b, "PBS_O_QUEUE", queue);
	}
	for (size_t i = 0; i < sizeof(carried) / sizeof(carried[0]); i++) {
		snprintf(name, sizeof(name), "PBS_O_%s", carried[i]);
		rc = rc ?: put_var(b, name, getenv(carried[i]));
	}
	rc = rc ?: hb_buf_puts(
		b,
		/* Slurm's ids where Slurm runs the job (and in the launcher
		 * pod, which sets them); where the local backend runs a
		 * burst job, its proxy's ids from the daemon */
		"hb_qsub_id=${SLURM_JOB_ID:-${HPCBRIDGE_SLURM_JOB_ID-}}\n"
		"hb_qsub_aid=${SLURM_ARRAY_JOB_ID:-"
		"${HPCBRIDGE_SLURM_ARRAY_JOB_ID-}}\n"
		"if [ -n \"$hb_qsub_aid\" ]; then\n"
		"\tPBS_JOBID=\"$hb_qsub_aid[$SLURM_ARRAY_TASK_ID]."
		"$PBS_SERVER\"\n"
		"\tPBS_ARRAY_ID=\"$hb_qsub_aid[].$PBS_SERVER\"\n"
		"\texport PBS_ARRAY_ID\n"
		"else\n"
		"\tPBS_JOBID=\"$hb_qsub_id.$PBS_SERVER\"\n"
		"fi\n"
		"export PBS_JOBID\n"
		"hb_qsub_d=$(mktemp -d \"${TMPDIR:-/tmp}/hbqsub.XXXXXX\") || "
		"exit 1\n");
	rc = rc ?: hb_buf_printf(b,
				 "tail -c %zu \"$0\" >\"$hb_qsub_d/script\" "
				 "|| exit 1\n",
				 payload);
	rc = rc ?: put_interpreter(b, interp);
	rc = rc ?: hb_buf_puts(b, " \"$hb_qsub_d/script\"");
	rc = rc ?: put_args(b, args);
	rc = rc ?: hb_buf_puts(b, "\nhb_qsub_rc=$?\n"
				  "rm -rf \"$hb_qsub_d\"\n"
				  "rm -f \"$PBS_NODEFILE\"\n"
				  "exit $hb_qsub_rc\n");
	return rc ? HB_ENOMEM : 0;
}

/*
 * The text Slurm receives for spec (read from script, len bytes): the
 * emitted #SBATCH lines and PBS block, the wrapper, then the script
 * (with a final newline if it had none).  rep gets the emitter's fates.
 */
static int build_wrapper(struct hb_jobspec *s, const char *script,
			 size_t len, const char *queue, const char *server,
			 const char *cwd, const char *args, struct hb_buf *out,
			 struct hb_report *rep, struct hb_err *err)
{
	const char *interp = s->interpreter, *body0 = s->script;
	uint32_t len0 = s->script_len;
	size_t payload = len + (len && script[len - 1] != '\n');
	struct hb_buf body;
	int rc;

	hb_buf_init(&body, 0);
	rc = wrapper_body(&body, interp, s->name, queue, server, cwd, args,
			  payload);
	if (rc) {
		hb_buf_free(&body);
		return hb_err_set(err, rc, NULL, 0, "out of memory");
	}
	s->script = body.data;
	s->script_len = (uint32_t)body.len;
	s->interpreter = "/bin/sh";
	rc = hb_sbatch_emit(s, out, rep, err);
	s->script = body0;
	s->script_len = len0;
	s->interpreter = interp;
	hb_buf_free(&body);
	if (!rc && (hb_buf_append(out, script, len) ||
		    (payload > len && hb_buf_puts(out, "\n"))))
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	return rc;
}

/* The job name PBS gives a job without -N: the script's file name, or
 * STDIN. */
static int default_name(struct hb_jobspec *s, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (s->name)
		return 0;
	s->name = hb_jobspec_strdup(s, strcmp(path, "-") ? (slash ? slash + 1
								 : path)
							: "STDIN");
	return s->name ? 0 : HB_ENOMEM;
}

/* str with each '%' doubled, so that Slurm writes it as it is (a
 * directory or a job name holding "%j" is not a pattern to PBS); str
 * itself when it has none, NULL when out of memory. */
static const char *pct(struct hb_jobspec *s, const char *str)
{
	struct hb_buf b;
	char *r;
	int rc = 0;

	if (!str || !strchr(str, '%'))
		return str;
	hb_buf_init(&b, 0);
	for (const char *p = str; *p && !rc; p++)
		rc = hb_buf_append(&b, p, 1) ?:
		     (*p == '%' ? hb_buf_append(&b, "%", 1) : 0);
	r = rc ? NULL : hb_jobspec_strdup(s, b.data);
	hb_buf_free(&b);
	return r;
}

/* path with each "%x" (the reader's pattern for the job name in a
 * directory given to -o/-e) replaced by name: %x is empty for a job
 * submitted through libslurm.  NULL when out of memory. */
static const char *with_name(struct hb_jobspec *s, const char *path,
			     const char *name)
{
	struct hb_buf b;
	char *r;
	int rc = 0;

	if (!strstr(path, "%x"))
		return path;
	hb_buf_init(&b, 0);
	for (const char *p = path; *p && !rc; p++) {
		if (p[0] == '%' && p[1] == '%') {
			rc = hb_buf_puts(&b, "%%");
			p++;
		} else if (p[0] == '%' && p[1] == 'x') {
			rc = hb_buf_puts(&b, name);
			p++;
		} else {
			rc = hb_buf_append(&b, p, 1);
		}
	}
	r = rc ? NULL : hb_jobspec_strdup(s, b.data);
	hb_buf_free(&b);
	return r;
}

/* "DIR/NAME.oID": PBS's default file for stream which ('o' or 'e'), the
 * name ('%' doubled) and the job id as Slurm patterns: an array task's
 * NAME.oID-INDEX (Torque's -t) or NAME.oID.INDEX (PBS Pro's -J).  dir
 * NULL: the submit directory (relative). */
static const char *pbs_file(struct hb_jobspec *s, const char *dir,
			    const char *name, char which)
{
	char sep = hb_pbs_array_sep(s);

	if (dir && !(dir = pct(s, dir)))
		return NULL;
	return hb_arena_printf(&s->arena, "%s%s%s.%c%s%s%s", dir ? dir : "",
			       dir ? "/" : "", name, which,
			       s->array ? "%A" : "%j",
			       s->array ? (sep == '.' ? "." : "-") : "",
			       s->array ? "%a" : "");
}

/* path as PBS reads it: relative to the directory qsub ran in, not to
 * the job's -d directory (Slurm's reading). */
static const char *from_cwd(struct hb_jobspec *s, const char *path,
			    const char *cwd)
{
	if (!path || path[0] == '/' || !s->chdir)
		return path;
	if (!(cwd = pct(s, cwd)))
		return NULL;
	return hb_arena_printf(&s->arena, "%s/%s", cwd, path);
}

/*
 * The files PBS writes: without -o and -e, NAME.oID and NAME.eID in the
 * submit directory (NAME.oID alone when -j joins the streams); -k o or
 * -k e keeps that stream in the home directory instead, whatever -o or
 * -e said (Torque's reading).  Slurm's own default (slurm-ID.out, both
 * streams) would lose them.  The name is written out ('%' doubled), not
 * as %x (see with_name()).
 */
static int default_files(struct hb_jobspec *s, const char *cwd)
{
	const struct passwd *pw = s->keep ? getpwuid(getuid()) : NULL;
	const char *home = pw ? pw->pw_dir : NULL;
	const char *nm = s->name ? pct(s, s->name) : "";
	bool ko = home && strchr(s->keep, 'o');
	bool ke = home && strchr(s->keep, 'e');
	int rc = nm ? 0 : HB_ENOMEM;

	if (!rc && (ko || !s->output) &&
	    !(s->output = pbs_file(s, ko ? home : NULL, nm, 'o')))
		rc = HB_ENOMEM;
	if (!rc && !s->join_output && (ke || !s->error) &&
	    !(s->error = pbs_file(s, ke ? home : NULL, nm, 'e')))
		rc = HB_ENOMEM;
	if (!rc && s->output &&
	    !(s->output = from_cwd(s, with_name(s, s->output, nm), cwd)))
		rc = HB_ENOMEM;
	if (!rc && s->error &&
	    !(s->error = from_cwd(s, with_name(s, s->error, nm), cwd)))
		rc = HB_ENOMEM;
	for (uint32_t i = 0; !rc && (ko || ke) && i < s->ndirectives; i++)
		for (uint8_t k = 0; k < s->directives[i].nfields; k++)
			if (s->directives[i].fields[k] == HB_F_KEEP)
				s->directives[i].note =
					"kept in the home directory, as "
					"NAME.oSEQ / NAME.eSEQ";
	return rc ? HB_ENOMEM : 0;
}

/* -u USER: PBS runs the job as USER.  The job is submitted as the
 * caller, so -u naming anyone else is refused rather than ignored. */
static int check_user(const struct hb_jobspec *s, struct hb_err *err)
{
	struct passwd *pw;
	char at[300];

	if (!s->user)
		return 0;
	pw = getpwuid(getuid());
	if (pw && !strcmp(pw->pw_name, s->user))
		return 0;
	return hb_err_set(err, HB_EPERM, NULL, 0,
			  "%s: -u %s: a job runs as the user who submits it "
			  "(%s)",
			  where(s, HB_F_USER, at), s->user,
			  pw ? pw->pw_name : "?");
}

/* True when -h was given in the script (#PBS -h), whose reader note
 * ("not carried") is then replaced by what is done. */
static bool script_hold(struct hb_jobspec *s)
{
	bool hold = false;

	for (uint32_t i = 0; i < s->ndirectives; i++) {
		struct hb_directive *d = &s->directives[i];

		if (d->kind == HB_DIR_PBS && d->text &&
		    !strcmp(d->text, "-h")) {
			d->note = "submitted held (sbatch --hold); release it "
				  "with qrls or 'scontrol release JOBID'";
			hold = true;
		}
	}
	return hold;
}

/*
 * -h: "#SBATCH --hold" after the wrapper's first line.  Only sbatch reads
 * it: hpcbridged's submit op does not hold, so with pbs.submit: daemon a
 * held job is refused rather than released at once.
 */
static int put_hold(const struct hb_config *cfg, struct hb_buf *out,
		    struct hb_err *err)
{
	const char *nl = memchr(out->data, '\n', out->len);
	size_t at = nl ? (size_t)(nl - out->data) + 1 : 0;
	struct hb_buf b;

	if (!cfg->pbs_submit || strcmp(cfg->pbs_submit, "sbatch"))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "-h: a held job needs pbs.submit: sbatch "
				  "(the daemon's submit does not hold jobs)");
	hb_buf_init(&b, 0);
	if (hb_buf_append(&b, out->data, at) ||
	    hb_buf_puts(&b, "#SBATCH --hold\n") ||
	    hb_buf_append(&b, out->data + at, out->len - at)) {
		hb_buf_free(&b);
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	}
	hb_buf_free(out);
	*out = b;
	return 0;
}

/* Read, translate and wrap into out (initialised by the caller): the
 * text Slurm receives; *array whether the job is an array, jobname (n
 * bytes) its PBS name.  An exit code (the error printed). */
static int prepare(const struct qargs *q, const struct hb_config *cfg,
		   const char *server, struct hb_buf *out, bool *array,
		   char *jobname, size_t n)
{
	const char *name = strcmp(q->script, "-") ? q->script : "STDIN";
	struct hb_err err = { 0 };
	struct hb_buf in;
	struct hb_jobspec spec;
	struct hb_report rep;
	const char *queue = NULL;
	char cwd[PATH_MAX];
	int rc;

	hb_report_init(&rep, "sbatch");
	hb_jobspec_init(&spec, name);
	if ((rc = hb_cli_read_file(q->script, HB_SCRIPT_MAX, &in, &err)))
		goto fail;
	if (!getcwd(cwd, sizeof(cwd))) {
		rc = hb_err_set(&err, HB_EIO, NULL, 0,
				"the current directory: %s", strerror(errno));
		goto fail;
	}
	rc = hb_pbs_parse(in.data, in.len, name, q->opts, q->nopts, &spec,
			  &err);
	if (!rc)
		rc = map_queue(cfg, &spec, &queue, &err);
	if (!rc)
		rc = check_user(&spec, &err);
	if (!rc)
		rc = default_name(&spec, q->script);
	if (!rc)
		rc = default_files(&spec, cwd);
	if (!rc)
		rc = build_wrapper(&spec, in.data, in.len, queue, server, cwd,
				   q->args, out, &rep, &err);
	if (!rc && (script_hold(&spec) || q->hold))
		rc = put_hold(cfg, out, &err);
	if (rc)
		goto fail;
	warn_fidelity(&spec, &rep);
	*array = spec.array != NULL;
	snprintf(jobname, n, "%s", spec.name);
	goto out;
fail:
	fprintf(stderr, "qsub: %s\n", err.msg[0] ? err.msg : hb_strerror(rc));
out:
	hb_buf_free(&in);
	hb_report_free(&rep);
	hb_jobspec_free(&spec);
	return rc ? HB_EXIT_INPUT : 0;
}

/* Through hpcbridged's submit op (hpcbridge submit's request, the job
 * named by its PBS name, as qstat shows it): the Slurm job id into *id,
 * or an exit code (printed). */
static int daemon_submit(const struct qargs *q, const struct hb_buf *text,
			 const char *jobname, long long *id)
{
	const char *name = strcmp(q->script, "-") ? q->script : "STDIN";
	cJSON *req = hb_cli_submit_request("qsub", name, text), *reply;
	const cJSON *v;
	int rc;

	if (!req)
		return HB_EXIT_INPUT;
	if (!cJSON_ReplaceItemInObjectCaseSensitive(
		    req, "name", cJSON_CreateString(jobname))) {
		cJSON_Delete(req);
		fprintf(stderr, "qsub: out of memory\n");
		return HB_EXIT_INPUT;
	}
	if ((rc = hb_cli_call("qsub", q->socket, q->config, req, &reply)))
		return rc;
	v = cJSON_GetObjectItemCaseSensitive(reply, "slurm_job_id");
	rc = cJSON_IsNumber(v) ? 0 : HB_EXIT_REMOTE;
	if (rc)
		fprintf(stderr, "qsub: the daemon gave no Slurm job id\n");
	else
		*id = (long long)v->valuedouble;
	cJSON_Delete(reply);
	return rc;
}

/*
 * With sbatch, as the caller (pbs.submit: sbatch): the text on sbatch's
 * standard input, its "ID[;CLUSTER]" read back.  The job then goes
 * through job_submit/hpcbridge and placement like any sbatch job.
 * sbatch's own messages reach stderr.  sbatch reads #PBS lines
 * anywhere in a script (walltime=3600 as minutes, mem per node) and
 * lets them win over #SBATCH: --ignore-pbs keeps the reader's.
 */
static int sbatch_submit(const struct hb_buf *text, long long *id)
{
	char buf[256], *end;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, st = 0;
	size_t got = 0, off = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(in) || pipe(out)) {
		fprintf(stderr, "qsub: pipe: %s\n", strerror(errno));
		return HB_EXIT_REMOTE;
	}
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		/* --ignore-pbs: sbatch would read the user's #PBS lines
		 * (after the wrapper's exit) its own way, over ours */
		execlp("sbatch", "sbatch", "--parsable", "--ignore-pbs",
		       (char *)NULL);
		fprintf(stderr, "qsub: sbatch: %s\n", strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	signal(SIGPIPE, SIG_IGN); /* sbatch may stop reading: its error */
	while (pid > 0 && off < text->len &&
	       (n = write(in[1], text->data + off, text->len - off)) > 0)
		off += (size_t)n;
	close(in[1]);
	while (pid > 0 && got < sizeof(buf) - 1 &&
	       (n = read(out[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(out[0]);
	buf[got] = '\0';
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		if (pid < 0)
			fprintf(stderr, "qsub: fork: %s\n", strerror(errno));
		return HB_EXIT_REMOTE;
	}
	errno = 0;
	*id = strtoll(buf, &end, 10);
	if (errno || end == buf || *id <= 0 || (*end && *end != ';' &&
						*end != '\n')) {
		fprintf(stderr, "qsub: sbatch printed '%s', not a job id\n",
			buf);
		return HB_EXIT_REMOTE;
	}
	return 0;
}

/* Submit what q asks for; an exit code. */
static int qsub_run(const struct qargs *q)
{
	struct hb_config cfg;
	struct hb_err err = { 0 };
	struct hb_buf text;
	char server[256], jobid[320], jobname[256] = "";
	bool array = false, with_sbatch;
	long long id = 0;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	if ((rc = hb_cli_load_config(hb_cli_config_path(q->config), &cfg,
				     &err))) {
		fprintf(stderr, "qsub: %s\n", err.msg);
		hb_config_free(&cfg);
		return HB_EXIT_INPUT;
	}
	hb_cli_pbs_server(&cfg, server, sizeof(server));
	with_sbatch = cfg.pbs_submit && !strcmp(cfg.pbs_submit, "sbatch");
	hb_buf_init(&text, 0);
	rc = prepare(q, &cfg, server, &text, &array, jobname,
		     sizeof(jobname));
	hb_config_free(&cfg);
	if (!rc && q->dry_run &&
	    fwrite(text.data, 1, text.len, stdout) != text.len)
		rc = HB_EXIT_INPUT;
	if (!rc && !q->dry_run)
		rc = with_sbatch ? sbatch_submit(&text, &id)
				 : daemon_submit(q, &text, jobname, &id);
	hb_buf_free(&text);
	if (rc || q->dry_run)
		return rc;
	format_jobid(id, array, server, jobid, sizeof(jobid));
	if (!q->quiet)
		printf("%s\n", jobid);
	return HB_EXIT_OK;
}

/* What qsub_args() kept (it may have, whatever it returned). */
static void qargs_free(struct qargs *q)
{
	for (size_t i = 0; i < q->ncopies; i++)
		free(q->copies[i]);
	q->ncopies = 0;
}

int hb_cmd_qsub(int argc, char **argv)
{
	struct qargs q;
	int rc = qsub_args(argc, argv, &q);

	if (!rc)
		rc = qsub_run(&q);
	qargs_free(&q);
	return rc < 0 ? HB_EXIT_OK : rc;
}
