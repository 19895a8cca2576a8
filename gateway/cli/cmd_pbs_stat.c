/*
 * cmd_pbs_stat.c - hpcbridge qstat and qdel: the caller's jobs in PBS's
 * formats, and cancelling them by their PBS ids.
 *
 * Both read the daemon's "jobs" op, which lists only the caller's jobs
 * (SO_PEERCRED; everyone's only for administrators), so they show and
 * cancel no more than `hpcbridge jobs` and `hpcbridge cancel` do.  A job
 * is named as PBS names it, "<Slurm job id>.<server>"; a burst job by its
 * Slurm proxy's id.  qdel cancels through the daemon's "cancel" op, so a
 * burst job's cluster side is cancelled too.
 *
 * The layouts are Torque's: the default table (Job ID, Name, User, Time
 * Use, S, Queue), -a's alternative table, and -f's "Job Id:" blocks of
 * "attribute = value" lines.  Finished jobs are shown only with -x, with
 * PBS Pro's state letter F.  Run under the name qstat or qdel (a link to
 * hpcbridge), the program is that command.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "hpcbridge/config.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/slurmc.h"
#include "hpcbridge/timefmt.h"

#define PBS_LIST_MAX 5000	/* the daemon's most jobs per "jobs" reply */
#define PBS_IDS_MAX  256	/* job ids on one command line */
#define PBS_ID_LEN   (256 + 64) /* "ID.server": the server a host name */

/* What qstat shows of one job: the daemon's row, and what Slurm says of
 * a job still in its table (zero / NULL when unknown). */
struct pbs_job {
	const char *hb_id, *name, *user, *queue, *side, *state, *reason;
	int64_t slurm_id;  /* -1: none yet */
	int64_t exit_code; /* -1: not ended, or unknown */
	int64_t created, updated, started, ended; /* epoch s; -1 unknown */
	int held; /* Slurm holds it (priority 0) */
	const char *exec_host;
	uint32_t ncpus, nodes;
	uint64_t mem_mib;
	/* what it asked for (the daemon's "requested"; 0 / NULL unknown) */
	struct {
		uint32_t nodes, ppn, ngpus;
		uint64_t mem_mib;
		int64_t walltime; /* s; -1 unknown, -2 unlimited */
		const char *output, *error;
	} req;
};

/* A job id as a PBS user writes it: 1234, 1234.server, 1234[] (a whole
 * array), 1234[5] (one task), or the gateway's own hb-000042. */
struct pbs_id {
	int64_t slurm_id; /* -1 for a gateway id */
	int64_t task;	  /* -1: no task named */
	char hb_id[32];
};

static int64_t epoch_of(const cJSON *o, const char *key)
{
	const char *s = hb_doc_str(o, key);
	int64_t t;

	return s && !hb_time_rfc3339_parse(s, &t) ? t : -1;
}

static int64_t int_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* The job's request: nodes, CPUs and memory per node, time limit. */
static void pbs_requested(const cJSON *r, struct pbs_job *j)
{
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(r, "time_limit");
	int64_t nodes = int_of(r, "nodes"), ppn = int_of(r, "cpus_per_node");
	int64_t gpn = int_of(r, "gpus_per_node");
	int64_t mem = int_of(r, "mem_per_node_mb");

	j->req.walltime = cJSON_IsString(tl) ? -2 : int_of(r, "time_limit");
	j->req.output = hb_doc_str(r, "output");
	j->req.error = hb_doc_str(r, "error");
	if (nodes <= 0 || nodes > UINT32_MAX)
		return;
	j->req.nodes = (uint32_t)nodes;
	if (ppn > 0 && ppn <= UINT32_MAX)
		j->req.ppn = (uint32_t)ppn;
	if (gpn > 0 && gpn * nodes <= UINT32_MAX)
		j->req.ngpus = (uint32_t)(gpn * nodes);
	if (mem > 0 && mem <= INT64_MAX / nodes)
		j->req.mem_mib = (uint64_t)(mem * nodes);
}

/* A job of the daemon's "jobs" reply; its strings are borrowed from o. */
static void pbs_from_json(const cJSON *o, struct pbs_job *j)
{
	memset(j, 0, sizeof(*j));
	j->req.walltime = -1;
	pbs_requested(cJSON_GetObjectItemCaseSensitive(o, "requested"), j);
	j->hb_id = hb_doc_str(o, "id");
	j->name = hb_doc_str(o, "name");
	j->user = hb_doc_str(o, "user");
	j->queue = hb_doc_str(o, "partition");
	j->side = hb_doc_str(o, "target");
	j->state = hb_doc_str(o, "state");
	j->reason = hb_doc_str(o, "reason");
	j->slurm_id = int_of(o, "slurm_job_id");
	j->exit_code = int_of(o, "exit_code");
	j->created = epoch_of(o, "created");
	j->updated = epoch_of(o, "updated");
	j->started = epoch_of(o, "started");
	j->ended = epoch_of(o, "ended");
}

static int is_state(const struct pbs_job *j, const char *s)
{
	return j->state && !strcmp(j->state, s);
}

/* Whether the job has ended (the daemon's final states). */
static int pbs_finished(const struct pbs_job *j)
{
	static const char *const final[] = { "succeeded", "failed", "cancelled",
					     "lost" };

	for (size_t i = 0; i < sizeof(final) / sizeof(final[0]); i++)
		if (is_state(j, final[i]))
			return 1;
	return 0;
}

/* The PBS state letter: Q queued, H held, R running, S suspended, E
 * exiting, F finished (PBS Pro's; Torque says C). */
static char pbs_state(const struct pbs_job *j)
{
	if (pbs_finished(j))
		return 'F';
	if (is_state(j, "running"))
		return 'R';
	if (is_state(j, "suspended"))
		return 'S';
	if (is_state(j, "completing"))
		return 'E';
	return j->held ? 'H' : 'Q';
}

/* "1234.server"; a job Slurm has no id for yet goes by the gateway's. */
static void pbs_job_id(const struct pbs_job *j, const char *server, char *out,
		       size_t n)
{
	if (j->slurm_id > 0)
		snprintf(out, n, "%" PRId64 ".%s", j->slurm_id, server);
	else
		snprintf(out, n, "%s", j->hb_id ? j->hb_id : "?");
}

/* Seconds as PBS prints a duration: HH:MM:SS, the hours unbounded. */
static void pbs_hms(int64_t s, char out[32])
{
	if (s < 0)
		s = 0;
	snprintf(out, 32, "%02" PRId64 ":%02d:%02d", s / 3600,
		 (int)(s / 60 % 60), (int)(s % 60));
}

/* How long the job has run (to its end, else to now); -1 if never. */
static int64_t pbs_run_s(const struct pbs_job *j, int64_t now)
{
	if (j->started < 0)
		return -1;
	if (j->ended >= j->started)
		return j->ended - j->started;
	return now > j->started ? now - j->started : 0;
}

/* A time stamp as qstat -f prints one (ctime's form, local time). */
static void pbs_when(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) ||
	    !strftime(out, 32, "%a %b %e %H:%M:%S %Y", &tm))
		snprintf(out, 32, "%" PRId64, t);
}

static const char *or_dash(const char *s)
{
	return s && s[0] ? s : "--";
}

/* Nodes, CPUs and memory: as asked for, else as Slurm allocated. */
static uint32_t pbs_nodes(const struct pbs_job *j)
{
	return j->req.nodes ? j->req.nodes : j->nodes;
}

static uint32_t pbs_ncpus(const struct pbs_job *j)
{
	return j->req.nodes && j->req.ppn ? j->req.nodes * j->req.ppn
					  : j->ncpus;
}

static uint64_t pbs_mem(const struct pbs_job *j)
{
	return j->req.mem_mib ? j->req.mem_mib : j->mem_mib;
}

/* The time limit as -a and -f print it; NULL when unknown. */
static const char *pbs_walltime(const struct pbs_job *j, char out[32])
{
	if (j->req.walltime == -2)
		return "UNLIMITED";
	if (j->req.walltime < 0)
		return NULL;
	pbs_hms(j->req.walltime, out);
	return out;
}

/* Torque's default table: Job ID 25, Name 16, User 15, Time Use 8. */
static void pbs_print_table(FILE *f, const struct pbs_job *jobs, size_t n,
			    const char *server, int64_t now)
{
	char id[PBS_ID_LEN], use[32];

	fprintf(f, "%-25s %-16s %-15s %-8s %-1s %-5s\n", "Job ID", "Name",
		"User", "Time Use", "S", "Queue");
	fprintf(f, "%-25s %-16s %-15s %-8s %-1s %-5s\n",
		"-------------------------", "----------------",
		"---------------", "--------", "-", "-----");
	for (size_t i = 0; i < n; i++) {
		const struct pbs_job *j = &jobs[i];
		int64_t run = pbs_run_s(j, now);

		pbs_job_id(j, server, id, sizeof(id));
		if (run < 0)
			snprintf(use, sizeof(use), "0");
		else
			pbs_hms(run, use);
		fprintf(f, "%-25.25s %-16.16s %-15.15s %8s %c %s\n", id,
			or_dash(j->name), or_dash(j->user), use, pbs_state(j),
			or_dash(j->queue));
	}
}

#define ALT_FMT                                                                \
	"%-23.23s %-11.11s %-8.8s %-16.16s %6s %5s %6s %9s %9s %1s %9s\n"

/* Torque's alternative table (qstat -a); -n adds each running job's
 * nodes on a line of their own. */
static void pbs_print_alt(FILE *f, const struct pbs_job *jobs, size_t n,
			  const char *server, int64_t now, int nodes)
{
	char id[PBS_ID_LEN], nds[16], tsk[16], mem[32], elap[32], wt[32];

	fprintf(f, "\n%s:\n", server);
	fprintf(f, ALT_FMT, "", "", "", "", "", "", "", "Req'd", "Req'd", "",
		"Elap");
	fprintf(f, ALT_FMT, "Job ID", "Username", "Queue", "Jobname", "SessID",
		"NDS", "TSK", "Memory", "Time", "S", "Time");
	fprintf(f, ALT_FMT, "-----------------------", "-----------",
		"--------", "----------------", "------", "-----", "------",
		"---------", "---------", "-", "---------");
	for (size_t i = 0; i < n; i++) {
		const struct pbs_job *j = &jobs[i];
		int64_t run = pbs_run_s(j, now);

		pbs_job_id(j, server, id, sizeof(id));
		snprintf(nds, sizeof(nds), "%" PRIu32, pbs_nodes(j));
		snprintf(tsk, sizeof(tsk), "%" PRIu32, pbs_ncpus(j));
		snprintf(mem, sizeof(mem), "%" PRIu64 "mb", pbs_mem(j));
		if (run >= 0)
			pbs_hms(run, elap);
		fprintf(f, ALT_FMT, id, or_dash(j->user), or_dash(j->queue),
			or_dash(j->name), "--", pbs_nodes(j) ? nds : "--",
			pbs_ncpus(j) ? tsk : "--", pbs_mem(j) ? mem : "--",
			or_dash(pbs_walltime(j, wt)),
			(char[]){ pbs_state(j), '\0' }, run >= 0 ? elap : "--");
		if (nodes && j->exec_host && j->exec_host[0])
			fprintf(f, "   %s\n", j->exec_host);
	}
}

/* qstat -f's Resource_List and paths: the request, else the allocation. */
static void pbs_print_resources(FILE *f, const struct pbs_job *j)
{
	char t[32];

	if (pbs_nodes(j))
		fprintf(f, "    Resource_List.nodect = %" PRIu32 "\n",
			pbs_nodes(j));
	if (j->req.nodes && j->req.ppn)
		fprintf(f,
			"    Resource_List.nodes = %" PRIu32 ":ppn=%" PRIu32
			"\n",
			j->req.nodes, j->req.ppn);
	if (pbs_ncpus(j))
		fprintf(f, "    Resource_List.ncpus = %" PRIu32 "\n",
			pbs_ncpus(j));
	if (pbs_mem(j))
		fprintf(f, "    Resource_List.mem = %" PRIu64 "mb\n",
			pbs_mem(j));
	if (j->req.ngpus)
		fprintf(f, "    Resource_List.ngpus = %" PRIu32 "\n",
			j->req.ngpus);
	if (pbs_walltime(j, t))
		fprintf(f, "    Resource_List.walltime = %s\n",
			pbs_walltime(j, t));
	if (j->req.output)
		fprintf(f, "    Output_Path = %s\n", j->req.output);
	if (j->req.error)
		fprintf(f, "    Error_Path = %s\n", j->req.error);
}

/* qstat -f: PBS's attribute names, then the gateway's own, hpcbridge_*. */
static void pbs_print_full(FILE *f, const struct pbs_job *j, const char *server,
			   int64_t now)
{
	char id[PBS_ID_LEN], t[32];
	int64_t run = pbs_run_s(j, now);

	pbs_job_id(j, server, id, sizeof(id));
	fprintf(f, "Job Id: %s\n", id);
	fprintf(f, "    Job_Name = %s\n", or_dash(j->name));
	fprintf(f, "    Job_Owner = %s@%s\n", or_dash(j->user), server);
	if (run >= 0) {
		pbs_hms(run, t);
		fprintf(f, "    resources_used.walltime = %s\n", t);
	}
	fprintf(f, "    job_state = %c\n", pbs_state(j));
	fprintf(f, "    queue = %s\n", or_dash(j->queue));
	fprintf(f, "    server = %s\n", server);
	if (j->created >= 0) {
		pbs_when(j->created, t);
		fprintf(f, "    ctime = %s\n", t);
		fprintf(f, "    qtime = %s\n", t);
	}
	if (j->updated >= 0) {
		pbs_when(j->updated, t);
		fprintf(f, "    mtime = %s\n", t);
	}
	if (j->started >= 0) {
		pbs_when(j->started, t);
		fprintf(f, "    stime = %s\n", t);
	}
	if (j->exec_host && j->exec_host[0] && pbs_state(j) == 'R')
		fprintf(f, "    exec_host = %s\n", j->exec_host);
	pbs_print_resources(f, j);
	if (pbs_finished(j) && j->ended >= 0) {
		pbs_when(j->ended, t);
		fprintf(f, "    comp_time = %s\n", t);
	}
	if (pbs_finished(j) && j->exit_code >= 0)
		fprintf(f, "    exit_status = %" PRId64 "\n", j->exit_code);
	fprintf(f, "    hpcbridge_id = %s\n", or_dash(j->hb_id));
	fprintf(f, "    hpcbridge_side = %s\n", or_dash(j->side));
	fprintf(f, "    hpcbridge_state = %s\n", or_dash(j->state));
	if (j->reason && j->reason[0])
		fprintf(f, "    hpcbridge_reason = %s\n", j->reason);
	fprintf(f, "\n");
}

/* Read a job id as PBS users write it (see struct pbs_id).  0, or
 * HB_EINVAL when it is none of those forms. */
static int pbs_parse_id(const char *s, struct pbs_id *out)
{
	const char *p = s;
	int64_t v = 0;

	out->slurm_id = -1;
	out->task = -1;
	out->hb_id[0] = '\0';
	if (!strncmp(s, "hb-", 3)) {
		size_t n = strlen(s);

		if (n < 4 || n >= sizeof(out->hb_id) ||
		    strspn(s + 3, "0123456789") != n - 3)
			return HB_EINVAL;
		memcpy(out->hb_id, s, n + 1);
		return 0;
	}
	if (*p < '0' || *p > '9')
		return HB_EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_C(1) << 32))
			return HB_EINVAL;
		v = v * 10 + (*p - '0');
	}
	if (v <= 0 || v > UINT32_MAX)
		return HB_EINVAL;
	out->slurm_id = v;
	if (*p == '[') {
		int64_t t = 0;
		const char *q = ++p;

		for (; *p >= '0' && *p <= '9' && t <= 1000000000; p++)
			t = t * 10 + (*p - '0');
		if (*p != ']' || t > 1000000000)
			return HB_EINVAL;
		out->task = p > q ? t : -1;
		p++;
	}
	/* ".server", "@server" or ".server@server": any server name */
	if (*p && *p != '.' && *p != '@')
		return HB_EINVAL;
	if (*p && !p[1])
		return HB_EINVAL;
	return 0;
}

/* An id as the user gave it, as PBS's messages name it: with the server
 * when it has none. */
static void pbs_arg_name(const char *arg, const struct pbs_id *id,
			 const char *server, char *out, size_t n)
{
	if (id->hb_id[0] || strpbrk(arg, ".@"))
		snprintf(out, n, "%s", arg);
	else
		snprintf(out, n, "%s.%s", arg, server);
}

/* Whether job j is the one id names. */
static int pbs_id_match(const struct pbs_id *id, const struct pbs_job *j)
{
	if (id->hb_id[0])
		return j->hb_id && !strcmp(j->hb_id, id->hb_id);
	return j->slurm_id == id->slurm_id;
}

/* The name jobs are said to live at: the short host name (PBS's server). */
/* qsub's server name, so that the ids agree; a configuration that does
 * not load leaves the host's name (the daemon's answer is what counts). */
static void pbs_server(char *out, size_t n)
{
	struct hb_config cfg;
	struct hb_err err = { 0 };

	memset(&cfg, 0, sizeof(cfg));
	if (hb_cli_load_config(hb_cli_config_path(NULL), &cfg, &err))
		hb_cli_pbs_server(NULL, out, n);
	else
		hb_cli_pbs_server(&cfg, out, n);
	hb_config_free(&cfg);
}

/* The caller's jobs (everyone's with all; with what each asked for with
 * requested), in *reply; its "jobs" array is returned, or NULL (error
 * printed, *rc set). */
static const cJSON *list_jobs(const char *cmd, int all, int requested,
			      cJSON **reply, int *rc)
{
	cJSON *req = cJSON_CreateObject();

	if (req && (!cJSON_AddStringToObject(req, "op", "jobs") ||
		    !cJSON_AddBoolToObject(req, "all", all) ||
		    !cJSON_AddBoolToObject(req, "requested", requested) ||
		    !cJSON_AddNumberToObject(req, "limit", PBS_LIST_MAX))) {
		cJSON_Delete(req);
		req = NULL;
	}
	if ((*rc = hb_cli_call(cmd, NULL, NULL, req, reply)))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(*reply, "jobs");
}

/* What Slurm says of a live Slurm-side job: its partition, hold, nodes
 * and allocation.  A burst job's proxy says nothing of the job's size, so
 * only its partition is taken.  Silent when Slurm cannot be asked. */
static void add_slurm(struct hb_slurmc *sc, struct pbs_job *j,
		      struct hb_slurmc_job *sj)
{
	struct hb_err err = { 0 };

	if (!sc || j->slurm_id <= 0 || pbs_finished(j) ||
	    hb_slurmc_job(sc, (uint32_t)j->slurm_id, sj, &err))
		return;
	if (!j->queue && sj->partition && sj->partition[0])
		j->queue = sj->partition;
	j->held = sj->held;
	if (j->side && !strcmp(j->side, "kubernetes"))
		return;
	j->exec_host = sj->nodes;
	j->ncpus = sj->alloc_cpus;
	j->nodes = sj->alloc_nodes;
	j->mem_mib = sj->alloc_mem_mib;
}

struct qstat_opts {
	int full, alt, nodes, finished;
	const char *user;
	char **ids;
	int nids;
};

static const char qstat_usage[] =
	"usage: qstat [-f] [-a] [-n] [-x] [-u USER] [JOBID...]\n"
	"Show your jobs in PBS's formats, wherever they run (Slurm or, "
	"burst,\nKubernetes).  -f every attribute, -a the alternative "
	"table (-n: with\nnodes), -x finished jobs too, -u only USER's "
	"(another user's: administrators only).\n";

static int qstat_args(int argc, char **argv, struct qstat_opts *o)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	int opt;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((opt = getopt_long(argc, argv, "fanxu:1h", longs, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o->full = 1;
			break;
		case 'a':
			o->alt = 1;
			break;
		case 'n':
			o->nodes = o->alt = 1;
			break;
		case 'x':
			o->finished = 1;
			break;
		case 'u':
			o->user = optarg;
			break;
		case '1':
			break;
		case 'h':
			printf("%s", qstat_usage);
			return -1;
		default:
			fprintf(stderr, "%s", qstat_usage);
			return HB_EXIT_USAGE;
		}
	}
	o->ids = argv + optind;
	o->nids = argc - optind;
	if (o->nids > PBS_IDS_MAX) {
		fprintf(stderr, "qstat: at most %d job ids\n", PBS_IDS_MAX);
		return HB_EXIT_USAGE;
	}
	return 0;
}

/* Whether name is in list, names separated by commas (Torque's -u). */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	}
	return 0;
}

/* Whether the listing shows j (the ids named, else by user and state).
 * seen[i] becomes 1 when j is the job ids[i] names, 2 when it is but has
 * finished and -x was not given. */
static int qstat_shows(const struct qstat_opts *o, const struct pbs_id *ids,
		       const struct pbs_job *j, char *seen)
{
	int shown = o->finished || !pbs_finished(j), named = 0;

	if (o->user && (!j->user || !in_list(o->user, j->user)))
		return 0;
	for (int i = 0; i < o->nids; i++)
		if (pbs_id_match(&ids[i], j)) {
			seen[i] = shown ? 1 : 2;
			named = 1;
		}
	return (!o->nids || named) && shown;
}

/* PBS lists jobs by id, oldest first; the daemon newest first. */
static int by_id(const void *a, const void *b)
{
	const struct pbs_job *x = a, *y = b;

	if (x->slurm_id != y->slurm_id)
		return x->slurm_id < y->slurm_id ? -1 : 1;
	return strcmp(x->hb_id ? x->hb_id : "", y->hb_id ? y->hb_id : "");
}

/* Print the jobs the options select from the daemon's list. */
static int qstat_print(const struct qstat_opts *o, const struct pbs_id *ids,
		       const cJSON *list, const char *server)
{
	struct hb_err err = { 0 };
	struct hb_slurmc *sc = NULL;
	size_t cap = (size_t)cJSON_GetArraySize(list), n = 0;
	struct pbs_job *jobs = calloc(cap ? cap : 1, sizeof(*jobs));
	struct hb_slurmc_job *sj = calloc(cap ? cap : 1, sizeof(*sj));
	char seen[PBS_IDS_MAX] = { 0 }, id[PBS_ID_LEN];
	int64_t now = (int64_t)time(NULL);
	const cJSON *o_j;
	int rc = HB_EXIT_OK;

	if (!jobs || !sj) {
		fprintf(stderr, "qstat: out of memory\n");
		rc = HB_EXIT_INPUT;
		goto out;
	}
	if (hb_slurmc_open(NULL, &sc, &err))
		sc = NULL;
	cJSON_ArrayForEach (o_j, list) {
		pbs_from_json(o_j, &jobs[n]);
		if (!qstat_shows(o, ids, &jobs[n], seen))
			continue;
		add_slurm(sc, &jobs[n], &sj[n]);
		n++;
	}
	/* a named job that is not the caller's, or that ended (PBS Pro's
	 * word for it without -x) */
	for (int i = 0; i < o->nids; i++) {
		if (seen[i] == 1)
			continue;
		pbs_arg_name(o->ids[i], &ids[i], server, id, sizeof(id));
		if (seen[i])
			fprintf(stderr,
				"qstat: %s Job has finished, use -x to "
				"obtain historical job information\n",
				id);
		else
			fprintf(stderr, "qstat: Unknown Job Id %s\n", id);
		rc = HB_EXIT_INPUT;
	}
	qsort(jobs, n, sizeof(*jobs), by_id);
	if (o->full)
		for (size_t i = 0; i < n; i++)
			pbs_print_full(stdout, &jobs[i], server, now);
	else if (o->alt && n)
		pbs_print_alt(stdout, jobs, n, server, now, o->nodes);
	else if (n)
		pbs_print_table(stdout, jobs, n, server, now);
out:
	for (size_t i = 0; sj && i < cap; i++)
		hb_slurmc_job_clear(&sj[i]);
	hb_slurmc_close(sc);
	free(sj);
	free(jobs);
	return rc;
}

/* Parse the ids of argv; prints and returns non-zero on a bad one. */
static int parse_ids(const char *cmd, char **argv, int n, struct pbs_id *ids)
{
	for (int i = 0; i < n; i++)
		if (pbs_parse_id(argv[i], &ids[i])) {
			fprintf(stderr,
				"%s: illegally formed job identifier: "
				"%s\n",
				cmd, argv[i]);
			return HB_EXIT_USAGE;
		}
	return 0;
}

/* Whether the list of names (-u) holds someone other than the caller. */
static int other_user(const char *list)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	size_t n;

	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) || !res)
		return 1;
	n = strlen(res->pw_name);
	for (const char *p = list; *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (strncmp(p, res->pw_name, n) || (p[n] != ',' && p[n]))
			return 1;
	}
	return 0;
}

int hb_cmd_qstat(int argc, char **argv)
{
	struct qstat_opts o;
	struct pbs_id ids[PBS_IDS_MAX];
	char server[256];
	const cJSON *list;
	cJSON *reply = NULL;
	int rc = qstat_args(argc, argv, &o);

	if (rc)
		return rc < 0 ? HB_EXIT_OK : rc;
	if ((rc = parse_ids("qstat", o.ids, o.nids, ids)))
		return rc;
	/* another user's jobs take the daemon's "all", which it grants to
	 * administrators only: qstat shows no more than hpcbridge jobs */
	list = list_jobs("qstat", o.user && other_user(o.user), o.full || o.alt,
			 &reply, &rc);
	if (!rc) {
		pbs_server(server, sizeof(server));
		rc = qstat_print(&o, ids, list, server);
	}
	cJSON_Delete(reply);
	return rc;
}

/* Cancel one job through the daemon (a task of a burst array alone);
 * prints PBS's message and returns non-zero when it cannot. */
static int qdel_one(const char *arg, const struct pbs_id *id, const cJSON *list,
		    const char *server)
{
	const cJSON *x;
	struct pbs_job j;
	char name[PBS_ID_LEN];
	cJSON *req, *reply = NULL;

	cJSON_ArrayForEach (x, list) {
		pbs_from_json(x, &j);
		if (pbs_id_match(id, &j))
			break;
	}
	if (!x || !j.hb_id) {
		pbs_arg_name(arg, id, server, name, sizeof(name));
		fprintf(stderr, "qdel: Unknown Job Id %s\n", name);
		return HB_EXIT_INPUT;
	}
	pbs_job_id(&j, server, name, sizeof(name));
	if (pbs_finished(&j)) {
		fprintf(stderr, "qdel: Request invalid for state of job %s\n",
			name);
		return HB_EXIT_INPUT;
	}
	if (id->task >= 0 && (!j.side || strcmp(j.side, "kubernetes"))) {
		fprintf(stderr,
			"qdel: one task of a Slurm array cannot be cancelled "
			"here: %s (qdel %" PRId64 "[] cancels the array, "
			"scancel %" PRId64 "_%" PRId64 " the task)\n",
			arg, id->slurm_id, id->slurm_id, id->task);
		return HB_EXIT_INPUT;
	}
	req = hb_cli_id_request("cancel", j.hb_id);
	if (req && id->task >= 0 &&
	    !cJSON_AddNumberToObject(req, "array_task", (double)id->task)) {
		cJSON_Delete(req);
		req = NULL;
	}
	if (hb_cli_call("qdel", NULL, NULL, req, &reply)) {
		fprintf(stderr, "qdel: could not cancel %s\n", name);
		return HB_EXIT_REMOTE;
	}
	cJSON_Delete(reply);
	return HB_EXIT_OK;
}

static const char qdel_usage[] =
	"usage: qdel JOBID...\n"
	"Cancel your jobs, wherever they run.  JOBID: 1234, 1234.server, "
	"1234[]\n(a whole array), 1234[5] (one task of a burst array) or "
	"hb-000042.\n";

int hb_cmd_qdel(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	struct pbs_id ids[PBS_IDS_MAX];
	char server[256];
	const cJSON *list;
	cJSON *reply = NULL;
	int opt, rc = 0, n;

	optind = 1;
	/* -W force and -p (purge) are PBS's: accepted, and a cancel is a
	 * cancel */
	while ((opt = getopt_long(argc, argv, "W:ph", longs, NULL)) != -1) {
		if (opt == 'h') {
			printf("%s", qdel_usage);
			return HB_EXIT_OK;
		}
		if (opt != 'W' && opt != 'p') {
			fprintf(stderr, "%s", qdel_usage);
			return HB_EXIT_USAGE;
		}
	}
	n = argc - optind;
	if (n < 1 || n > PBS_IDS_MAX) {
		fprintf(stderr, "%s", qdel_usage);
		return HB_EXIT_USAGE;
	}
	if ((rc = parse_ids("qdel", argv + optind, n, ids)))
		return rc;
	list = list_jobs("qdel", 0, 0, &reply, &rc);
	if (rc)
		return rc;
	pbs_server(server, sizeof(server));
	for (int i = 0; i < n; i++) {
		int r = qdel_one(argv[optind + i], &ids[i], list, server);

		if (r && !rc)
			rc = r;
	}
	cJSON_Delete(reply);
	return rc;
}
