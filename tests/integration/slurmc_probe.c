/*
 * slurmc_probe.c - drives the Slurm client (hpcbridge/slurmc.h) against a
 * real Slurm for tests/integration/slurmc.test.sh.
 *
 * usage: slurmc_probe COMMAND [ARGS]
 *
 *   open [CONF]            open (CONF, else $SLURM_CONF) and close; on
 *                          failure print "error=NAME msg=..." and exit 1
 *   reopen                 open, close, open again, close
 *   conflict CONF2         open $SLURM_CONF, then CONF2: must be ECONFLICT
 *   submit [OPTS]          submit; print "job=ID"
 *   will-run [OPTS]        print "start=EPOCH nodes=LIST" or fail
 *   watch ID [SECONDS]     poll until ID is final and not completing;
 *                          print each state it was reported in, then the
 *                          final record
 *   job ID                 print the job's record (exit 3 if unknown)
 *   cancel ID [SIGNAL]     print "result=cancelled" or "result=done"
 *   set-comment ID TEXT
 *   suspend ID, resume ID  print "result=suspended" / "result=resumed"
 *   set-admin-comment ID TEXT
 *   poll-twice             poll, poll again at once; print the counters
 *   partitions, nodes      one line per record
 *
 * OPTS: --wrap CMD | --script FILE, --name, --partition, --account,
 * --uid N --gid N, --workdir, --env NAME=VALUE (repeatable), --time MIN
 * (or "inf"), --nodes, --ntasks, --ntasks-per-node, --cpus-per-task,
 * --mem MB, --mem-per-cpu MB, --gres, --output, --error, --comment,
 * --admin-comment, --hold.
 *
 * Exit status: 0 success, 1 failure (the error on stderr), 2 usage, 3 no
 * such job.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/slurmc.h"
#include "hpcbridge/units.h"

#define MAX_ENV 64

static int usage(void)
{
	fprintf(stderr, "usage: slurmc_probe COMMAND [ARGS] (see the source "
			"header)\n");
	return 2;
}

static int report(const char *what, int rc, const struct hb_err *err)
{
	const char *name = hb_errname(rc);

	printf("error=%s\n", name ? name : "?");
	fprintf(stderr, "slurmc_probe: %s: %s: %s\n", what, hb_strerror(rc),
		err->msg[0] ? err->msg : "(no detail)");
	return rc == HB_ENOENT ? 3 : 1;
}

static int open_default(struct hb_slurmc **c)
{
	struct hb_err err = { 0 };
	int rc = hb_slurmc_open(NULL, c, &err);

	if (rc)
		return report("open", rc, &err);
	return 0;
}

static int parse_u32(const char *s, uint32_t *out)
{
	if (hb_parse_u32(s, out)) {
		fprintf(stderr, "slurmc_probe: '%s': not a number\n", s);
		return -1;
	}
	return 0;
}

static int parse_u16(const char *s, uint16_t *out)
{
	uint32_t v;

	if (parse_u32(s, &v))
		return -1;
	if (v > UINT16_MAX) {
		fprintf(stderr, "slurmc_probe: '%s': too large\n", s);
		return -1;
	}
	*out = (uint16_t)v;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (hb_parse_u64(s, UINT64_MAX, out)) {
		fprintf(stderr, "slurmc_probe: '%s': not a number\n", s);
		return -1;
	}
	return 0;
}

static char *read_file(const char *path)
{
	struct hb_buf b;
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "slurmc_probe: %s: %s\n", path,
			strerror(errno));
		return NULL;
	}
	hb_buf_init(&b, 1 << 20);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (hb_buf_append(&b, chunk, n)) {
			fclose(f);
			hb_buf_free(&b);
			return NULL;
		}
	}
	fclose(f);
	return hb_buf_steal(&b);
}

/* Parse OPTS from argv into req; *script_mem and env are owned by the
 * caller. */
static int parse_request(int argc, char **argv, struct hb_slurmc_submit *req,
			 char **script_mem, const char **env)
{
	enum {
		O_WRAP = 256,
		O_SCRIPT,
		O_NAME,
		O_PARTITION,
		O_ACCOUNT,
		O_UID,
		O_GID,
		O_WORKDIR,
		O_ENV,
		O_TIME,
		O_NODES,
		O_NTASKS,
		O_NTPN,
		O_CPT,
		O_MEM,
		O_MEMCPU,
		O_GRES,
		O_OUTPUT,
		O_ERROR,
		O_COMMENT,
		O_ADMIN,
		O_HOLD,
		O_EXCL,
	};
	static const struct option opts[] = {
		{ "wrap", required_argument, NULL, O_WRAP },
		{ "script", required_argument, NULL, O_SCRIPT },
		{ "name", required_argument, NULL, O_NAME },
		{ "partition", required_argument, NULL, O_PARTITION },
		{ "account", required_argument, NULL, O_ACCOUNT },
		{ "uid", required_argument, NULL, O_UID },
		{ "gid", required_argument, NULL, O_GID },
		{ "workdir", required_argument, NULL, O_WORKDIR },
		{ "env", required_argument, NULL, O_ENV },
		{ "time", required_argument, NULL, O_TIME },
		{ "nodes", required_argument, NULL, O_NODES },
		{ "ntasks", required_argument, NULL, O_NTASKS },
		{ "ntasks-per-node", required_argument, NULL, O_NTPN },
		{ "cpus-per-task", required_argument, NULL, O_CPT },
		{ "mem", required_argument, NULL, O_MEM },
		{ "mem-per-cpu", required_argument, NULL, O_MEMCPU },
		{ "gres", required_argument, NULL, O_GRES },
		{ "output", required_argument, NULL, O_OUTPUT },
		{ "error", required_argument, NULL, O_ERROR },
		{ "comment", required_argument, NULL, O_COMMENT },
		{ "admin-comment", required_argument, NULL, O_ADMIN },
		{ "hold", no_argument, NULL, O_HOLD },
		{ "exclusive", no_argument, NULL, O_EXCL },
		{ NULL, 0, NULL, 0 },
	};
	size_t nenv = 0;
	struct hb_buf b;
	int o;

	optind = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case O_WRAP:
			hb_buf_init(&b, 1 << 20);
			free(*script_mem);
			if (hb_buf_printf(&b, "#!/bin/sh\n%s\n", optarg))
				return -1;
			*script_mem = hb_buf_steal(&b);
			req->script = *script_mem;
			break;
		case O_SCRIPT:
			free(*script_mem);
			if (!(*script_mem = read_file(optarg)))
				return -1;
			req->script = *script_mem;
			break;
		case O_NAME:
			req->name = optarg;
			break;
		case O_PARTITION:
			req->partition = optarg;
			break;
		case O_ACCOUNT:
			req->account = optarg;
			break;
		case O_UID:
			req->as_user = true;
			if (parse_u32(optarg, &req->uid))
				return -1;
			break;
		case O_GID:
			req->as_user = true;
			if (parse_u32(optarg, &req->gid))
				return -1;
			break;
		case O_WORKDIR:
			req->work_dir = optarg;
			break;
		case O_ENV:
			if (nenv + 1 >= MAX_ENV)
				return -1;
			env[nenv++] = optarg;
			env[nenv] = NULL;
			req->env = env;
			break;
		case O_TIME:
			if (!strcmp(optarg, "inf"))
				req->time_limit = HB_SLURMC_INFINITE;
			else if (parse_u32(optarg, &req->time_limit))
				return -1;
			break;
		case O_NODES:
			if (parse_u32(optarg, &req->nodes))
				return -1;
			break;
		case O_NTASKS:
			if (parse_u32(optarg, &req->ntasks))
				return -1;
			break;
		case O_NTPN:
			if (parse_u16(optarg, &req->ntasks_per_node))
				return -1;
			break;
		case O_CPT:
			if (parse_u16(optarg, &req->cpus_per_task))
				return -1;
			break;
		case O_MEM:
			if (parse_u64(optarg, &req->mem_per_node_mb))
				return -1;
			break;
		case O_MEMCPU:
			if (parse_u64(optarg, &req->mem_per_cpu_mb))
				return -1;
			break;
		case O_GRES:
			req->gres = optarg;
			break;
		case O_OUTPUT:
			req->output = optarg;
			break;
		case O_ERROR:
			req->error = optarg;
			break;
		case O_COMMENT:
			req->comment = optarg;
			break;
		case O_ADMIN:
			req->admin_comment = optarg;
			break;
		case O_HOLD:
			req->hold = true;
			break;
		case O_EXCL:
			req->exclusive = true;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "slurmc_probe: unexpected '%s'\n",
			argv[optind]);
		return -1;
	}
	return 0;
}

static void print_job(const struct hb_slurmc_job *j)
{
	printf("job=%" PRIu32 " state=%s completing=%d held=%d exit=%d "
	       "signal=%d uid=%" PRIu32 " start=%lld end=%lld\n",
	       j->job_id, hb_slurmc_state_name(j->state), j->completing,
	       j->held, j->exit_code, j->exit_signal, j->user_id,
	       (long long)j->start_time, (long long)j->end_time);
	printf("name=%s\npartition=%s\nnodes=%s\ncomment=%s\n"
	       "admin_comment=%s\nreason=%s\n",
	       j->name, j->partition, j->nodes, j->comment, j->admin_comment,
	       j->reason);
	printf("alloc_cpus=%" PRIu32 " alloc_mem_mib=%" PRIu64
	       " alloc_nodes=%" PRIu32 " exclusive=%d suspended=%lld gpus=",
	       j->alloc_cpus, j->alloc_mem_mib, j->alloc_nodes, j->exclusive,
	       (long long)j->suspended_s);
	for (uint32_t i = 0; i < j->alloc_ngpu; i++)
		printf("%s%s:%" PRIu32, i ? "," : "",
		       j->alloc_gpu[i].type[0] ? j->alloc_gpu[i].type : "-",
		       j->alloc_gpu[i].count);
	printf("\n");
}

static int cmd_open(int argc, char **argv)
{
	struct hb_err err = { 0 };
	struct hb_slurmc *c = NULL;
	int rc;

	if (argc > 2)
		return usage();
	rc = hb_slurmc_open(argc == 2 ? argv[1] : NULL, &c, &err);
	if (rc)
		return report("open", rc, &err);
	printf("conf=%s\n", hb_slurmc_conf(c));
	hb_slurmc_close(c);
	return 0;
}

static int cmd_reopen(void)
{
	struct hb_slurmc *c = NULL, *d = NULL;
	struct hb_err err = { 0 };
	int rc;

	if ((rc = open_default(&c)))
		return rc;
	/* A second handle on the same file shares libslurm. */
	if ((rc = open_default(&d)))
		goto out;
	hb_slurmc_close(d);
	d = NULL;
	if ((rc = hb_slurmc_partitions(c, NULL, NULL, &err)) != HB_EINVAL) {
		fprintf(stderr, "slurmc_probe: NULL callback accepted\n");
		rc = 1;
		goto out;
	}
	hb_slurmc_close(c);
	c = NULL;
	/* The last close released libslurm; it loads again. */
	if ((rc = open_default(&c)))
		goto out;
	printf("reopen=ok\n");
out:
	hb_slurmc_close(d);
	hb_slurmc_close(c);
	return rc ? 1 : 0;
}

static int cmd_conflict(int argc, char **argv)
{
	struct hb_slurmc *c = NULL, *d = NULL;
	struct hb_err err = { 0 };
	int rc;

	if (argc != 2)
		return usage();
	if ((rc = open_default(&c)))
		return rc;
	rc = hb_slurmc_open(argv[1], &d, &err);
	printf("error=%s\n", rc ? hb_errname(rc) : "none");
	if (rc)
		fprintf(stderr, "slurmc_probe: conflict: %s\n", err.msg);
	hb_slurmc_close(d);
	hb_slurmc_close(c);
	return rc == HB_ECONFLICT ? 0 : 1;
}

static int cmd_submit(int argc, char **argv, bool will_run)
{
	struct hb_slurmc_submit req = { 0 };
	const char *env[MAX_ENV] = { NULL };
	struct hb_slurmc *c = NULL;
	struct hb_err err = { 0 };
	char *script = NULL;
	char nodes[256];
	uint32_t id = 0;
	time_t start = 0;
	int rc;

	if (parse_request(argc, argv, &req, &script, env)) {
		free(script);
		return usage();
	}
	if ((rc = open_default(&c)))
		goto out;
	if (will_run) {
		rc = hb_slurmc_will_run(c, &req, &start, nodes, sizeof(nodes),
					&err);
		if (rc) {
			rc = report("will_run", rc, &err);
			goto out;
		}
		printf("start=%lld nodes=%s\n", (long long)start, nodes);
	} else {
		rc = hb_slurmc_submit(c, &req, &id, &err);
		if (id)
			printf("job=%" PRIu32 "\n", id);
		if (rc) {
			rc = report("submit", rc, &err);
			goto out;
		}
	}
out:
	hb_slurmc_close(c);
	free(script);
	return rc;
}

struct watch {
	uint32_t id;
	struct hb_slurmc_job last;
	bool seen, done;
	char states[256];
};

static int watch_cb(const struct hb_slurmc_job *j, void *arg)
{
	struct watch *w = arg;
	const char *name = hb_slurmc_state_name(j->state);
	size_t len = strlen(w->states);

	if (j->job_id != w->id)
		return 0;
	if (j->removed) {
		fprintf(stderr, "slurmc_probe: job %u removed\n", j->job_id);
		return HB_ENOENT;
	}
	/* Record each distinct state once, in order. */
	if (!w->seen || w->last.state != j->state)
		snprintf(w->states + len, sizeof(w->states) - len, "%s%s",
			 len ? "," : "", name);
	w->seen = true;
	w->last = *j;
	w->done = hb_slurmc_state_final(j->state) && !j->completing;
	if (w->done)
		print_job(j); /* its strings are borrowed: print now */
	return 0;
}

static int cmd_watch(int argc, char **argv)
{
	struct watch w = { 0 };
	struct hb_slurmc *c = NULL;
	struct hb_slurmc_stats st;
	uint32_t secs = 60;
	struct timespec t0, t;
	int rc;

	if (argc < 2 || argc > 3 || parse_u32(argv[1], &w.id) ||
	    (argc == 3 && parse_u32(argv[2], &secs)))
		return usage();
	if ((rc = open_default(&c)))
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct hb_err err = { 0 };

		rc = hb_slurmc_poll(c, watch_cb, &w, &err);
		if (rc) {
			rc = report("poll", rc, &err);
			break;
		}
		if (w.done) {
			printf("states=%s\n", w.states);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= (time_t)secs) {
			fprintf(stderr,
				"slurmc_probe: job %u not final after %u s "
				"(states seen: %s)\n",
				w.id, secs, w.states);
			rc = 1;
			break;
		}
		usleep(100 * 1000);
	}
	hb_slurmc_get_stats(c, &st);
	printf("polls=%" PRIu64 " unchanged=%" PRIu64 "\n", st.polls,
	       st.polls_unchanged);
	hb_slurmc_close(c);
	return rc;
}

static int cmd_job(int argc, char **argv)
{
	struct hb_slurmc_job j = { 0 };
	struct hb_slurmc *c = NULL;
	struct hb_err err = { 0 };
	uint32_t id;
	int rc;

	if (argc != 2 || parse_u32(argv[1], &id))
		return usage();
	if ((rc = open_default(&c)))
		return rc;
	rc = hb_slurmc_job(c, id, &j, &err);
	if (rc) {
		rc = report("job", rc, &err);
	} else {
		print_job(&j);
		hb_slurmc_job_clear(&j);
	}
	hb_slurmc_close(c);
	return rc;
}

static int cmd_cancel(int argc, char **argv)
{
	struct hb_slurmc *c = NULL;
	struct hb_err err = { 0 };
	uint32_t id, sig = 0;
	int rc;

	if (argc < 2 || argc > 3 || parse_u32(argv[1], &id) ||
	    (argc == 3 && parse_u32(argv[2], &sig)))
		return usage();
	if ((rc = open_default(&c)))
		return rc;
	rc = hb_slurmc_cancel(c, id, (int)sig, &err);
	if (rc == 0)
		printf("result=cancelled\n");
	else if (rc == HB_SLURMC_DONE)
		printf("result=done\n");
	else
		rc = report("cancel", rc, &err);
	hb_slurmc_close(c);
	return rc == HB_SLURMC_DONE ? 0 : rc;
}

static int cmd_set_comment(int argc, char **argv)
{
	struct hb_slurmc *c = NULL;
	struct hb_err err = { 0 };
	uint32_t id;
	int rc;

	if (argc != 3 || parse_u32(argv[1], &id))
		return usage();
	if ((rc = open_default(&c)))
		return rc;
	rc = hb_slurmc_set_comment(c, id, argv[2], &err);
	if (rc)
		rc = report("set_comment", rc, &err);
	hb_slurmc_close(c);
	return rc;
}

/* suspend ID / resume ID (resume set), set-admin-comment ID TEXT
 * (admin set): slurmc_suspend.c. */
static int cmd_suspend(int argc, char **argv, bool resume, bool admin)
{
	struct hb_slurmc *c = NULL;
	struct hb_err err = { 0 };
	uint32_t id;
	int rc;

	if (argc != (admin ? 3 : 2) || parse_u32(argv[1], &id))
		return usage();
	if ((rc = open_default(&c)))
		return rc;
	rc = admin ? hb_slurmc_set_admin_comment(c, id, argv[2], &err)
		   : hb_slurmc_suspend(c, id, resume, &err);
	if (rc)
		rc = report(argv[0], rc, &err);
	else if (!admin)
		printf("result=%s\n", resume ? "resumed" : "suspended");
	hb_slurmc_close(c);
	return rc;
}

static int count_cb(const struct hb_slurmc_job *j, void *arg)
{
	(void)j;
	(*(unsigned *)arg)++;
	return 0;
}

/*
 * Two polls in a row.  slurmctld compares time stamps in whole seconds
 * and answers "changed" for a table that changed in the second before
 * the previous answer, so a queue that changed just now may need one
 * more round: up to 3 rounds, one second apart.  The second poll of a
 * round must make no callback in any case.  initial_reported is what
 * the very first poll reported (every job).
 */
static int cmd_poll_twice(void)
{
	struct hb_slurmc_stats a, b;
	struct hb_slurmc *c = NULL;
	unsigned first = 0, second = 0, initial = 0;
	int rc, round;

	if ((rc = open_default(&c)))
		return rc;
	for (round = 1; round <= 3; round++) {
		struct hb_err err = { 0 };

		first = second = 0;
		if (round > 1)
			sleep(1);
		if ((rc = hb_slurmc_poll(c, count_cb, &first, &err))) {
			rc = report("poll", rc, &err);
			goto out;
		}
		if (round == 1)
			initial = first;
		hb_slurmc_get_stats(c, &a);
		if ((rc = hb_slurmc_poll(c, count_cb, &second, &err))) {
			rc = report("poll", rc, &err);
			goto out;
		}
		hb_slurmc_get_stats(c, &b);
		if (second) {
			fprintf(stderr,
				"slurmc_probe: second poll reported %u "
				"jobs\n",
				second);
			rc = 1;
			goto out;
		}
		if (b.polls_unchanged == a.polls_unchanged + 1)
			break;
	}
	printf("rounds=%d initial_reported=%u first_reported=%u "
	       "second_reported=%u "
	       "second_unchanged=%d tracked=%zu polls=%" PRIu64
	       " unchanged=%" PRIu64 "\n",
	       round > 3 ? 3 : round, initial, first, second,
	       b.polls_unchanged == a.polls_unchanged + 1, b.jobs_tracked,
	       b.polls, b.polls_unchanged);
	rc = b.polls_unchanged == a.polls_unchanged + 1 ? 0 : 1;
out:
	hb_slurmc_close(c);
	return rc;
}

static int part_cb(const struct hb_slurmc_partition *p, void *arg)
{
	(void)arg;
	printf("partition=%s state=%s default=%d max_time=%s cpus=%" PRIu32
	       " nodes=%" PRIu32 " list=%s\n",
	       p->name, hb_slurmc_part_state_name(p->state), p->is_default,
	       p->max_time == HB_SLURMC_INFINITE ? "UNLIMITED" : "limited",
	       p->total_cpus, p->total_nodes, p->nodes);
	return 0;
}

static int node_cb(const struct hb_slurmc_node *n, void *arg)
{
	(void)arg;
	printf("node=%s state=%s cpus=%" PRIu32 " alloc_cpus=%" PRIu32
	       " mem=%" PRIu64 " alloc_mem=%" PRIu64 " gres=%s\n",
	       n->name, n->state_text, n->cpus, n->alloc_cpus,
	       n->real_memory_mb, n->alloc_memory_mb, n->gres);
	return 0;
}

static int cmd_list(bool nodes)
{
	struct hb_slurmc *c = NULL;
	struct hb_err err = { 0 };
	int rc;

	if ((rc = open_default(&c)))
		return rc;
	if (nodes)
		rc = hb_slurmc_nodes(c, node_cb, NULL, &err);
	else
		rc = hb_slurmc_partitions(c, part_cb, NULL, &err);
	if (rc)
		rc = report(nodes ? "nodes" : "partitions", rc, &err);
	hb_slurmc_close(c);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd;
	int rc;

	hb_slurmc_child_main(argc, argv); /* returns unless it is that child */
	if (argc < 2)
		return usage();
	cmd = argv[1];
	argc--;
	argv++;
	if (!strcmp(cmd, "open"))
		rc = cmd_open(argc, argv);
	else if (!strcmp(cmd, "reopen"))
		rc = cmd_reopen();
	else if (!strcmp(cmd, "conflict"))
		rc = cmd_conflict(argc, argv);
	else if (!strcmp(cmd, "submit"))
		rc = cmd_submit(argc, argv, false);
	else if (!strcmp(cmd, "will-run"))
		rc = cmd_submit(argc, argv, true);
	else if (!strcmp(cmd, "watch"))
		rc = cmd_watch(argc, argv);
	else if (!strcmp(cmd, "job"))
		rc = cmd_job(argc, argv);
	else if (!strcmp(cmd, "cancel"))
		rc = cmd_cancel(argc, argv);
	else if (!strcmp(cmd, "set-comment"))
		rc = cmd_set_comment(argc, argv);
	else if (!strcmp(cmd, "suspend") || !strcmp(cmd, "resume"))
		rc = cmd_suspend(argc, argv, !strcmp(cmd, "resume"), false);
	else if (!strcmp(cmd, "set-admin-comment"))
		rc = cmd_suspend(argc, argv, false, true);
	else if (!strcmp(cmd, "poll-twice"))
		rc = cmd_poll_twice();
	else if (!strcmp(cmd, "partitions"))
		rc = cmd_list(false);
	else if (!strcmp(cmd, "nodes"))
		rc = cmd_list(true);
	else
		return usage();
	fflush(stdout);
	return rc < 0 ? 1 : rc;
}
