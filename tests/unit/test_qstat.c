/*
 * test_qstat.c - hpcbridge qstat's and qdel's PBS side, without a daemon
 * or Slurm: jobs built as the daemon's "jobs" reply sends them, printed in
 * Torque's default table (column widths, long names and users cut as
 * qstat cuts them, Time Use), -a's table, -f's attributes (ctime's time
 * format, comp_time and exit_status only once ended, exec_host only
 * while running, the hpcbridge_* attributes), the state letters, which
 * jobs a listing shows (-u, -x, named ids), and the job id forms qdel
 * takes.  gateway/cli/cmd_pbs_stat.c is compiled into this program (the
 * command is no library); tests/integration/qstat.test.sh runs it
 * against a real daemon and Slurm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/cli/cmd_pbs_stat.c"
#include "testutil.h"

/* cmd_jobs.c's, which this program does not link: never reached here */
int hb_cli_call(const char *cmd, const char *socket, const char *config,
		cJSON *req, cJSON **reply)
{
	(void)cmd, (void)socket, (void)config, (void)reply;
	cJSON_Delete(req);
	return HB_EXIT_REMOTE;
}

cJSON *hb_cli_id_request(const char *op, const char *id)
{
	(void)op, (void)id;
	return NULL;
}

/* cmd_jobs.c's and cmd_qsub.c's: no configuration here, and the server
 * name it would give */
const char *hb_cli_config_path(const char *config)
{
	return config;
}

int hb_cli_load_config(const char *path, struct hb_config *cfg,
		       struct hb_err *err)
{
	(void)path, (void)cfg;
	return hb_err_set(err, HB_ENOENT, NULL, 0, "no configuration");
}

void hb_cli_pbs_server(const struct hb_config *cfg, char *buf, size_t n)
{
	snprintf(buf, n, "%s", cfg && cfg->pbs_server_name
				       ? cfg->pbs_server_name
				       : "localhost");
}

/* 2026-11-28T10:00:00Z */
#define T0 INT64_C(1795860000)

static cJSON *row(const char *id, int64_t slurm, const char *name,
		  const char *state, const char *target, const char *started,
		  const char *ended, int exit_code)
{
	cJSON *o = cJSON_CreateObject();

	assert_non_null(o);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "user", "alice");
	cJSON_AddStringToObject(o, "state", state);
	cJSON_AddStringToObject(o, "target", target);
	if (slurm > 0)
		cJSON_AddNumberToObject(o, "slurm_job_id", (double)slurm);
	else
		cJSON_AddNullToObject(o, "slurm_job_id");
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "partition", "debug");
	if (exit_code >= 0)
		cJSON_AddNumberToObject(o, "exit_code", exit_code);
	else
		cJSON_AddNullToObject(o, "exit_code");
	cJSON_AddStringToObject(o, "created", "2026-11-28T10:00:00.000Z");
	cJSON_AddStringToObject(o, "updated", "2026-11-28T10:05:00.000Z");
	if (started)
		cJSON_AddStringToObject(o, "started", started);
	else
		cJSON_AddNullToObject(o, "started");
	if (ended)
		cJSON_AddStringToObject(o, "ended", ended);
	else
		cJSON_AddNullToObject(o, "ended");
	return o;
}

/* What fn printed, as a string the caller frees. */
#define CAPTURE(out, call)                                                     \
	do {                                                                   \
		size_t len_;                                                   \
		FILE *f = open_memstream(&(out), &len_);                       \
		assert_non_null(f);                                            \
		call;                                                          \
		fclose(f);                                                     \
	} while (0)

static void setup_tz(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
}

static void test_state_letters(void **state)
{
	static const struct {
		const char *st;
		int held;
		char want;
	} cases[] = {
		{ "pending", 0, 'Q' },	 { "queued", 0, 'Q' },
		{ "queued", 1, 'H' },	 { "running", 0, 'R' },
		{ "suspended", 0, 'S' }, { "completing", 0, 'E' },
		{ "succeeded", 0, 'F' }, { "failed", 0, 'F' },
		{ "cancelled", 0, 'F' }, { "lost", 0, 'F' },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pbs_job j = { .state = cases[i].st,
				     .held = cases[i].held };

		assert_int_equal(pbs_state(&j), cases[i].want);
		assert_int_equal(pbs_finished(&j), cases[i].want == 'F');
	}
}

static void test_hms(void **state)
{
	char b[32];

	(void)state;
	pbs_hms(0, b);
	assert_string_equal(b, "00:00:00");
	pbs_hms(3723, b);
	assert_string_equal(b, "01:02:03");
	/* PBS's hours do not roll over into days */
	pbs_hms(100 * 3600 + 59, b);
	assert_string_equal(b, "100:00:59");
	pbs_hms(-5, b);
	assert_string_equal(b, "00:00:00");
}

static void test_table(void **state)
{
	cJSON *a =
		row("hb-000001", 1234, "a_name_longer_than_sixteen_characters",
		    "running", "slurm", "2026-11-28T10:00:00Z", NULL, -1);
	cJSON *b = row("hb-000002", 0, "short", "pending", "pending", NULL,
		       NULL, -1);
	struct pbs_job jobs[2];
	char *out = NULL;

	(void)state;
	cJSON_ReplaceItemInObject(a, "user",
				  cJSON_CreateString("a_user_name_of_20ch"));
	pbs_from_json(a, &jobs[0]);
	pbs_from_json(b, &jobs[1]);
	CAPTURE(out, pbs_print_table(f, jobs, 2, "hb1", T0 + 3723));
	assert_string_equal(
		out,
		"Job ID                    Name             User            "
		"Time Use S Queue\n"
		"------------------------- ---------------- --------------- "
		"-------- - -----\n"
		"1234.hb1                  a_name_longer_th a_user_name_of_ "
		"01:02:03 R debug\n"
		"hb-000002                 short            alice           "
		"       0 Q debug\n");
	free(out);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_table_long_id(void **state)
{
	struct pbs_job j = { .hb_id = "hb-000003",
			     .slurm_id = 4294967000,
			     .name = "x",
			     .user = "bob",
			     .state = "queued",
			     .started = -1,
			     .ended = -1 };
	char *out = NULL;

	(void)state;
	/* the id column keeps 25 characters, as Torque's does */
	CAPTURE(out, pbs_print_table(f, &j, 1, "a-very-long-server-name-indeed",
				     T0));
	assert_non_null(strstr(out, "\n4294967000.a-very-long-se x "));
	free(out);
}

static void test_full(void **state)
{
	cJSON *run = row("hb-000007", 77, "burst", "running", "kubernetes",
			 "2026-11-28T10:01:00Z", NULL, -1);
	cJSON *done = row("hb-000008", 78, "done", "cancelled", "slurm",
			  "2026-11-28T10:01:00Z", "2026-11-28T10:03:30Z", 0);
	struct pbs_job j;
	char *out = NULL;

	(void)state;
	setup_tz();
	pbs_from_json(run, &j);
	j.exec_host = "hb1";
	j.ncpus = 4;
	j.nodes = 2;
	j.mem_mib = 2048;
	CAPTURE(out, pbs_print_full(f, &j, "hb1", T0 + 120));
	assert_string_equal(out, "Job Id: 77.hb1\n"
				 "    Job_Name = burst\n"
				 "    Job_Owner = alice@hb1\n"
				 "    resources_used.walltime = 00:01:00\n"
				 "    job_state = R\n"
				 "    queue = debug\n"
				 "    server = hb1\n"
				 "    ctime = Sat Nov 28 10:00:00 2026\n"
				 "    qtime = Sat Nov 28 10:00:00 2026\n"
				 "    mtime = Sat Nov 28 10:05:00 2026\n"
				 "    stime = Sat Nov 28 10:01:00 2026\n"
				 "    exec_host = hb1\n"
				 "    Resource_List.nodect = 2\n"
				 "    Resource_List.ncpus = 4\n"
				 "    Resource_List.mem = 2048mb\n"
				 "    hpcbridge_id = hb-000007\n"
				 "    hpcbridge_side = kubernetes\n"
				 "    hpcbridge_state = running\n\n");
	free(out);
	pbs_from_json(done, &j);
	j.exec_host = "hb1"; /* not shown once the job is over */
	CAPTURE(out, pbs_print_full(f, &j, "hb1", T0 + 9999));
	assert_non_null(strstr(out, "    job_state = F\n"));
	assert_non_null(strstr(out, "resources_used.walltime = 00:02:30\n"));
	assert_non_null(strstr(out, "    comp_time = Sat Nov 28 10:03:30 "
				    "2026\n"));
	assert_non_null(strstr(out, "    exit_status = 0\n"));
	assert_null(strstr(out, "exec_host"));
	free(out);
	/* a job that has not ended has neither */
	pbs_from_json(run, &j);
	CAPTURE(out, pbs_print_full(f, &j, "hb1", T0));
	assert_null(strstr(out, "comp_time"));
	assert_null(strstr(out, "exit_status"));
	free(out);
	cJSON_Delete(run);
	cJSON_Delete(done);
}

static void test_alt(void **state)
{
	cJSON *a = row("hb-000009", 901, "wide", "running", "slurm",
		       "2026-11-28T10:00:00Z", NULL, -1);
	struct pbs_job j;
	char *out = NULL, *line;

	(void)state;
	pbs_from_json(a, &j);
	j.exec_host = "hb[1-2]";
	j.nodes = 2;
	j.ncpus = 8;
	j.mem_mib = 1024;
	CAPTURE(out, pbs_print_alt(f, &j, 1, "hb1", T0 + 65, 1));
	assert_true(!strncmp(out, "\nhb1:\n", 6));
	line = strstr(out, "Job ID ");
	assert_non_null(line);
	assert_true(!strncmp(line,
			     "Job ID                  Username    Queue    "
			     "Jobname          SessID   NDS    TSK    Memory "
			     "     Time S      Time\n",
			     strlen("Job ID                  Username    "
				    "Queue    Jobname          SessID   NDS    "
				    "TSK    Memory      Time S      Time\n")));
	assert_non_null(strstr(out,
			       "901.hb1                 alice       debug    "
			       "wide                 --     2      8    1024mb "
			       "       -- R  00:01:05\n   hb[1-2]\n"));
	free(out);
	cJSON_Delete(a);
}

static void test_parse_id(void **state)
{
	static const struct {
		const char *in;
		int64_t slurm, task;
		const char *hb;
	} good[] = {
		{ "1234", 1234, -1, "" },
		{ "1234.server", 1234, -1, "" },
		{ "1234.hb1.example.org", 1234, -1, "" },
		{ "1234@server", 1234, -1, "" },
		{ "1234[]", 1234, -1, "" },
		{ "1234[].server", 1234, -1, "" },
		{ "1234[5]", 1234, 5, "" },
		{ "1234[0].server", 1234, 0, "" },
		{ "hb-000042", -1, -1, "hb-000042" },
	};
	static const char *const bad[] = {
		"",	    "x1",     "-1",	     "0",	 "1234x",
		"1234.",    "1234[",  "1234[5",	     "1234[a]",	 "1234]",
		"hb-",	    "hb-12a", "99999999999", "1234[5]x", "12 34",
		"1234[-1]",
	};
	struct pbs_id id;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(pbs_parse_id(good[i].in, &id), 0);
		assert_int_equal(id.slurm_id, good[i].slurm);
		assert_int_equal(id.task, good[i].task);
		assert_string_equal(id.hb_id, good[i].hb);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (pbs_parse_id(bad[i], &id) != HB_EINVAL)
			fail_msg("'%s' was read as a job id", bad[i]);
}

static void test_shows(void **state)
{
	cJSON *live =
		row("hb-000010", 10, "l", "running", "slurm", NULL, NULL, -1);
	cJSON *over =
		row("hb-000011", 11, "o", "succeeded", "slurm", NULL, NULL, 0);
	struct pbs_job jl, jo;
	struct qstat_opts o = { 0 };
	struct pbs_id ids[1] = { { 0 } };
	char seen[1] = { 0 };

	(void)state;
	pbs_from_json(live, &jl);
	pbs_from_json(over, &jo);
	/* finished jobs only with -x */
	assert_true(qstat_shows(&o, ids, &jl, seen));
	assert_false(qstat_shows(&o, ids, &jo, seen));
	o.finished = 1;
	assert_true(qstat_shows(&o, ids, &jo, seen));
	/* -u: that user's only */
	o.user = "bob";
	assert_false(qstat_shows(&o, ids, &jl, seen));
	o.user = "alice";
	assert_true(qstat_shows(&o, ids, &jl, seen));
	/* -u takes a list, as Torque's does */
	o.user = "bob,alice";
	assert_true(qstat_shows(&o, ids, &jl, seen));
	o.user = "bob,alic,alicea";
	assert_false(qstat_shows(&o, ids, &jl, seen));
	o.user = "alice";
	/* -u of oneself alone asks the daemon for one's own jobs only */
	{
		struct passwd *pw = getpwuid(getuid());
		char two[300];

		assert_non_null(pw);
		assert_false(other_user(pw->pw_name));
		snprintf(two, sizeof(two), "%s,%s", pw->pw_name, pw->pw_name);
		assert_false(other_user(two));
		snprintf(two, sizeof(two), "%s,hbnobody", pw->pw_name);
		assert_true(other_user(two));
		assert_true(other_user("hbnobody"));
	}
	/* named ids: those only, and each one seen is marked */
	assert_int_equal(pbs_parse_id("11.hb1", &ids[0]), 0);
	o.nids = 1;
	o.finished = 0; /* named but finished: not shown, and said so */
	assert_false(qstat_shows(&o, ids, &jo, seen));
	assert_int_equal(seen[0], 2);
	seen[0] = 0;
	o.finished = 1;
	assert_false(qstat_shows(&o, ids, &jl, seen));
	assert_int_equal(seen[0], 0);
	assert_true(qstat_shows(&o, ids, &jo, seen));
	assert_int_equal(seen[0], 1);
	/* a gateway id names its job too */
	assert_int_equal(pbs_parse_id("hb-000010", &ids[0]), 0);
	assert_true(pbs_id_match(&ids[0], &jl));
	assert_false(pbs_id_match(&ids[0], &jo));
	cJSON_Delete(live);
	cJSON_Delete(over);
}

/* What the job asked for (the daemon's "requested") wins over Slurm's
 * allocation: a burst job's proxy has 1 CPU, the job not. */
static void test_requested(void **state)
{
	cJSON *a = row("hb-000012", 120, "big", "running", "kubernetes",
		       "2026-11-28T10:00:00Z", NULL, -1);
	cJSON *r = cJSON_Parse("{\"nodes\":2,\"ntasks\":8,"
			       "\"cpus_per_node\":4,\"gpus_per_node\":2,"
			       "\"mem_per_node_mb\":1000,\"time_limit\":5400,"
			       "\"output\":\"out-%j\",\"error\":\"err-%j\"}");
	struct pbs_job j;
	char *out = NULL;

	(void)state;
	assert_non_null(r);
	cJSON_AddItemToObject(a, "requested", r);
	pbs_from_json(a, &j);
	j.ncpus = j.nodes = 1; /* the proxy's allocation */
	j.mem_mib = 100;
	CAPTURE(out, pbs_print_full(f, &j, "hb1", T0));
	assert_non_null(strstr(out, "    Resource_List.nodect = 2\n"
				    "    Resource_List.nodes = 2:ppn=4\n"
				    "    Resource_List.ncpus = 8\n"
				    "    Resource_List.mem = 2000mb\n"
				    "    Resource_List.ngpus = 4\n"
				    "    Resource_List.walltime = 01:30:00\n"
				    "    Output_Path = out-%j\n"
				    "    Error_Path = err-%j\n"));
	free(out);
	CAPTURE(out, pbs_print_alt(f, &j, 1, "hb1", T0, 0));
	assert_non_null(strstr(out,
			       "120.hb1                 alice       "
			       "debug    big                  --     2      "
			       "8    2000mb  01:30:00 R  00:00:00\n"));
	free(out);
	/* no limit */
	cJSON_ReplaceItemInObject(r, "time_limit",
				  cJSON_CreateString("UNLIMITED"));
	pbs_from_json(a, &j);
	CAPTURE(out, pbs_print_full(f, &j, "hb1", T0));
	assert_non_null(strstr(out, "Resource_List.walltime = UNLIMITED\n"));
	free(out);
	/* none asked for and none known: no Resource_List at all */
	cJSON_DeleteItemFromObject(a, "requested");
	pbs_from_json(a, &j);
	CAPTURE(out, pbs_print_full(f, &j, "hb1", T0));
	assert_null(strstr(out, "Resource_List"));
	assert_null(strstr(out, "Output_Path"));
	free(out);
	cJSON_Delete(a);
}

static void test_order_and_names(void **state)
{
	struct pbs_job j[3] = { { .slurm_id = 12, .hb_id = "hb-000003" },
				{ .slurm_id = -1, .hb_id = "hb-000009" },
				{ .slurm_id = 7, .hb_id = "hb-000001" } };
	struct pbs_id id;
	char b[64];

	(void)state;
	/* by Slurm id, oldest first; one not in Slurm yet before them */
	qsort(j, 3, sizeof(j[0]), by_id);
	assert_string_equal(j[0].hb_id, "hb-000009");
	assert_int_equal(j[1].slurm_id, 7);
	assert_int_equal(j[2].slurm_id, 12);
	/* messages name an id with its server, as PBS's do */
	assert_int_equal(pbs_parse_id("42", &id), 0);
	pbs_arg_name("42", &id, "hb1", b, sizeof(b));
	assert_string_equal(b, "42.hb1");
	assert_int_equal(pbs_parse_id("42[]", &id), 0);
	pbs_arg_name("42[]", &id, "hb1", b, sizeof(b));
	assert_string_equal(b, "42[].hb1");
	assert_int_equal(pbs_parse_id("42.other", &id), 0);
	pbs_arg_name("42.other", &id, "hb1", b, sizeof(b));
	assert_string_equal(b, "42.other");
	assert_int_equal(pbs_parse_id("hb-000042", &id), 0);
	pbs_arg_name("hb-000042", &id, "hb1", b, sizeof(b));
	assert_string_equal(b, "hb-000042");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_letters),
		cmocka_unit_test(test_hms),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_table_long_id),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_alt),
		cmocka_unit_test(test_parse_id),
		cmocka_unit_test(test_shows),
		cmocka_unit_test(test_order_and_names),
		cmocka_unit_test(test_requested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
