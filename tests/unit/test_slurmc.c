/*
 * test_slurmc.c - the Slurm client without a running Slurm: state and
 * exit-status mapping, error conversion, GRES and TRES text (a job's
 * allocation, exclusivity and suspended time), slurmdbd's records,
 * request checks, the
 * request-to-job_desc conversion, the poll's change detection, node state
 * text, opening bad or good slurm.conf files, and the parts of a
 * submission as another user: the child's privilege drop, and the
 * parent's wait (answer, silence, death, stop, deadline).
 *
 * The module's file-local functions (fill_desc, poll_table,
 * job_from_slurm, node_state_text, job_from_acct, make_cond) are reached
 * by compiling gateway/slurm/slurmc.c and its siblings into this program;
 * their public functions then come from here, not from the hbslurmc
 * archive.  tests/integration/slurmc.test.sh covers the calls that need
 * slurmctld, reconcile.test.sh those that need slurmdbd.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gateway/slurm/slurmc.c"
#include "gateway/slurm/slurmc_acct.c"
#include "gateway/slurm/slurmc_jobs.c"
#include "gateway/slurm/slurmc_submit.c"
#include "testutil.h"

/* ---------------------------------------------------------- states */

static void test_state_map(void **state)
{
	static const struct {
		uint32_t slurm;
		enum hb_slurmc_state ours;
		const char *name;
		bool final;
	} cases[] = {
		{ JOB_PENDING, HB_SLURMC_PENDING, "PENDING", false },
		{ JOB_RUNNING, HB_SLURMC_RUNNING, "RUNNING", false },
		{ JOB_SUSPENDED, HB_SLURMC_SUSPENDED, "SUSPENDED", false },
		{ JOB_COMPLETE, HB_SLURMC_COMPLETE, "COMPLETED", true },
		{ JOB_CANCELLED, HB_SLURMC_CANCELLED, "CANCELLED", true },
		{ JOB_FAILED, HB_SLURMC_FAILED, "FAILED", true },
		{ JOB_TIMEOUT, HB_SLURMC_TIMEOUT, "TIMEOUT", true },
		{ JOB_NODE_FAIL, HB_SLURMC_NODE_FAIL, "NODE_FAIL", true },
		{ JOB_PREEMPTED, HB_SLURMC_PREEMPTED, "PREEMPTED", true },
		{ JOB_BOOT_FAIL, HB_SLURMC_BOOT_FAIL, "BOOT_FAIL", true },
		{ JOB_DEADLINE, HB_SLURMC_DEADLINE, "DEADLINE", true },
		{ JOB_OOM, HB_SLURMC_OOM, "OUT_OF_MEMORY", true },
		{ JOB_END, HB_SLURMC_UNKNOWN, "UNKNOWN", false },
		{ 0xff, HB_SLURMC_UNKNOWN, "UNKNOWN", false },
	};
	bool completing;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		completing = true;
		assert_int_equal(
			hb_slurmc_state_from_slurm(cases[i].slurm, &completing),
			cases[i].ours);
		assert_false(completing);
		assert_string_equal(hb_slurmc_state_name(cases[i].ours),
				    cases[i].name);
		assert_int_equal(hb_slurmc_state_final(cases[i].ours),
				 cases[i].final);
	}
	/* Flags: COMPLETING is reported, the others do not change the
	 * state. */
	assert_int_equal(hb_slurmc_state_from_slurm(
				 JOB_COMPLETE | JOB_COMPLETING, &completing),
			 HB_SLURMC_COMPLETE);
	assert_true(completing);
	assert_int_equal(
		hb_slurmc_state_from_slurm(
			JOB_FAILED | JOB_COMPLETING | JOB_REQUEUE, &completing),
		HB_SLURMC_FAILED);
	assert_true(completing);
	assert_int_equal(
		hb_slurmc_state_from_slurm(
			JOB_PENDING | JOB_CONFIGURING | JOB_RESIZING, NULL),
		HB_SLURMC_PENDING);
	assert_int_equal(hb_slurmc_state_from_slurm(JOB_RUNNING | JOB_SIGNALING,
						    &completing),
			 HB_SLURMC_RUNNING);
	assert_false(completing);
	/* Out of range enum values still have a name. */
	assert_string_equal(hb_slurmc_state_name((enum hb_slurmc_state)99),
			    "UNKNOWN");
	assert_string_equal(hb_slurmc_state_name((enum hb_slurmc_state) - 1),
			    "UNKNOWN");
	assert_false(hb_slurmc_state_final((enum hb_slurmc_state)99));
	assert_string_equal(hb_slurmc_part_state_name(HB_SLURMC_PART_DRAIN),
			    "DRAIN");
	assert_string_equal(
		hb_slurmc_part_state_name((enum hb_slurmc_part_state)7),
		"UNKNOWN");
	assert_string_equal(hb_slurmc_node_state_name(HB_SLURMC_NODE_MIXED),
			    "mixed");
	assert_string_equal(
		hb_slurmc_node_state_name((enum hb_slurmc_node_state)42),
		"unknown");
}

static void test_decode_exit(void **state)
{
	int code, sig;

	(void)state;
	hb_slurmc_decode_exit(0, &code, &sig);
	assert_int_equal(code, 0);
	assert_int_equal(sig, 0);
	hb_slurmc_decode_exit(3 << 8, &code, &sig); /* exit 3 */
	assert_int_equal(code, 3);
	assert_int_equal(sig, 0);
	hb_slurmc_decode_exit(255 << 8, &code, &sig);
	assert_int_equal(code, 255);
	assert_int_equal(sig, 0);
	hb_slurmc_decode_exit(SIGKILL, &code, &sig);
	assert_int_equal(code, 0);
	assert_int_equal(sig, SIGKILL);
	hb_slurmc_decode_exit(SIGSEGV | 0x80, &code, &sig); /* core dumped */
	assert_int_equal(code, 0);
	assert_int_equal(sig, SIGSEGV);
	hb_slurmc_decode_exit(NO_VAL, &code, &sig);
	assert_int_equal(code, 0);
	assert_int_equal(sig, 0);
}

static void test_errcode(void **state)
{
	static const struct {
		int slurm, ours;
	} cases[] = {
		{ 0, 0 },
		{ ESLURM_INVALID_JOB_ID, HB_ENOENT },
		{ ESLURM_INVALID_PARTITION_NAME, HB_ENOENT },
		{ ESLURM_ACCESS_DENIED, HB_EPERM },
		{ ESLURM_USER_ID_MISSING, HB_EPERM },
		{ ESLURM_GROUP_ID_MISSING, HB_EPERM },
		{ ESLURM_ALREADY_DONE, HB_ESTATE },
		{ ESLURM_JOB_FINISHED, HB_ESTATE },
		{ ESLURM_TRANSITION_STATE_NO_UPDATE, HB_ESTATE },
		{ ESLURM_JOB_PENDING, HB_ESTATE },
		{ SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR, HB_EUNAVAIL },
		{ SLURM_COMMUNICATIONS_RECEIVE_ERROR, HB_EUNAVAIL },
		{ ECONNREFUSED, HB_EUNAVAIL },
		{ ESLURM_AUTH_UNABLE_TO_SIGN, HB_EUNAVAIL },
		{ SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT, HB_ETIMEDOUT },
		{ ETIMEDOUT, HB_ETIMEDOUT },
		{ ENOMEM, HB_ENOMEM },
		{ ESLURM_PATHNAME_TOO_LONG, HB_ETOOBIG },
		{ SLURM_PROTOCOL_VERSION_ERROR, HB_EPROTO },
		{ ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE, HB_ESLURM },
		{ ESLURM_INVALID_GRES, HB_ESLURM },
		{ SLURM_ERROR, HB_ESLURM },
		{ 123456, HB_ESLURM },
	};
	struct hb_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(hb_slurmc_errcode(cases[i].slurm),
				 cases[i].ours);
	/* The detail names the call and carries Slurm's text and code. */
	assert_int_equal(fail_slurm(&err, ESLURM_INVALID_JOB_ID, "slurm_x"),
			 HB_ENOENT);
	assert_string_equal(err.msg, "slurm_x: Invalid job id specified "
				     "(Slurm error 2017)");
	memset(&err, 0, sizeof(err));
	assert_int_equal(fail_slurm(&err, SLURM_ERROR, "slurm_y"), HB_ESLURM);
	assert_non_null(strstr(err.msg, "unspecified"));
	/* A call that reports its code directly, or SLURM_ERROR. */
	assert_int_equal(slurm_errno_of(ESLURM_INVALID_JOB_ID),
			 ESLURM_INVALID_JOB_ID);
	errno = 0;
	assert_int_equal(slurm_errno_of(SLURM_ERROR), SLURM_ERROR);
	errno = ESLURM_ACCESS_DENIED;
	assert_int_equal(slurm_errno_of(SLURM_ERROR), ESLURM_ACCESS_DENIED);
}

/* ------------------------------------------------------------- GRES */

static void test_gres(void **state)
{
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "gpu", "gres:gpu" },
		{ "gpu:2", "gres:gpu:2" },
		{ "gpu:a100:2", "gres:gpu:a100:2" },
		{ "gpu:a100:2,mps:10", "gres:gpu:a100:2,gres:mps:10" },
		{ "gres:gpu:1", "gres:gpu:1" },
		{ "gres/gpu:1", "gres:gpu:1" },
		{ "gpu:1,gres:mps:5", "gres:gpu:1,gres:mps:5" },
	};
	static const char *const bad[] = {
		"",	    ",",     "gpu:1,", ",gpu:1",
		"gpu,,mps", "gres:", "gres/",  "gpu,gres:",
	};
	struct hb_buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		hb_buf_init(&b, 0);
		assert_int_equal(hb_slurmc_gres_to_tres(good[i].in, &b), 0);
		assert_string_equal(b.data, good[i].out);
		hb_buf_free(&b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hb_buf_init(&b, 0);
		assert_int_equal(hb_buf_puts(&b, "keep"), 0);
		assert_int_equal(hb_slurmc_gres_to_tres(bad[i], &b), HB_EINVAL);
		assert_string_equal(b.data, "keep"); /* left as it was */
		hb_buf_free(&b);
	}
	hb_buf_init(&b, 0);
	assert_int_equal(hb_slurmc_gres_to_tres(NULL, &b), HB_EINVAL);
	hb_buf_free(&b);
	/* The buffer's cap holds, and a failed append changes nothing. */
	hb_buf_init(&b, 12);
	assert_int_equal(hb_buf_puts(&b, "x"), 0);
	assert_int_equal(hb_slurmc_gres_to_tres("gpu:1,gpu:2", &b), HB_ETOOBIG);
	assert_string_equal(b.data, "x");
	hb_buf_free(&b);
}

/* --------------------------------------------------- request checks */

static const char *const good_env[] = { "A=1", "PATH=/bin", "EMPTY=", NULL };

static void good_request(struct hb_slurmc_submit *r)
{
	memset(r, 0, sizeof(*r));
	r->script = "#!/bin/sh\ntrue\n";
}

static void check_req(const struct hb_slurmc_submit *r, int code,
		      const char *in_msg)
{
	struct hb_err err = { 0 };

	assert_int_equal(hb_slurmc_submit_check(r, &err), code);
	if (code) {
		assert_int_equal(err.code, code);
		if (!strstr(err.msg, in_msg))
			fail_msg("'%s' not in '%s'", in_msg, err.msg);
	}
}

static void test_submit_check(void **state)
{
	static const char *const env_noeq[] = { "A=1", "B", NULL };
	static const char *const env_noname[] = { "=1", NULL };
	struct hb_slurmc_submit r;

	(void)state;
	check_req(NULL, HB_EINVAL, "no request");
	good_request(&r);
	check_req(&r, 0, NULL);
	r.env = good_env;
	r.time_limit = HB_SLURMC_INFINITE;
	r.nodes = 2;
	r.ntasks_per_node = 3;
	r.cpus_per_task = 4;
	r.mem_per_cpu_mb = 1024;
	r.gres = "gpu:a100:1";
	r.as_user = true;
	r.uid = 1000;
	r.gid = 1000;
	check_req(&r, 0, NULL);

	good_request(&r);
	r.script = NULL;
	check_req(&r, HB_EINVAL, "script: missing");
	r.script = "";
	check_req(&r, HB_EINVAL, "script: missing");
	r.script = "echo hi\n";
	check_req(&r, HB_EINVAL, "#!");

	good_request(&r);
	r.env = env_noeq;
	check_req(&r, HB_EINVAL, "env[1]");
	r.env = env_noname;
	check_req(&r, HB_EINVAL, "env[0]");

	good_request(&r);
	r.time_limit = NO_VAL;
	check_req(&r, HB_ERANGE, "time_limit");
	good_request(&r);
	r.nodes = NO_VAL;
	check_req(&r, HB_ERANGE, "nodes");
	good_request(&r);
	r.ntasks = UINT32_MAX;
	check_req(&r, HB_ERANGE, "ntasks");
	good_request(&r);
	r.ntasks_per_node = NO_VAL16;
	check_req(&r, HB_ERANGE, "ntasks_per_node");
	good_request(&r);
	r.cpus_per_task = UINT16_MAX;
	check_req(&r, HB_ERANGE, "cpus_per_task");
	good_request(&r);
	r.ntasks = 100000;
	r.cpus_per_task = 60000; /* 6e9 CPUs */
	check_req(&r, HB_ERANGE, "too many CPUs");
	good_request(&r);
	r.nodes = 1000000;
	r.ntasks_per_node = 60000;
	check_req(&r, HB_ERANGE, "too many CPUs");

	good_request(&r);
	r.mem_per_node_mb = 1;
	r.mem_per_cpu_mb = 1;
	check_req(&r, HB_ECONFLICT, "give one");
	good_request(&r);
	r.mem_per_cpu_mb = MEM_PER_CPU;
	check_req(&r, HB_ERANGE, "memory");
	good_request(&r);
	r.mem_per_node_mb = UINT64_MAX;
	check_req(&r, HB_ERANGE, "memory");

	good_request(&r);
	r.gres = "gpu:1,";
	check_req(&r, HB_EINVAL, "gres");

	good_request(&r);
	r.as_user = true;
	r.uid = NO_VAL;
	check_req(&r, HB_ERANGE, "uid/gid");
	r.uid = 5;
	r.gid = UINT32_MAX;
	check_req(&r, HB_ERANGE, "uid/gid");
}

/* ------------------------------------------------- request -> Slurm */

static void test_fill_desc(void **state)
{
	struct hb_slurmc_submit r;
	struct desc_mem m = { 0 };
	struct hb_err err = { 0 };
	job_desc_msg_t d;

	(void)state;
	/* Everything set. */
	good_request(&r);
	r.name = "n";
	r.partition = "gpu";
	r.account = "acct";
	r.as_user = true;
	r.uid = 1234;
	r.gid = 5678;
	r.work_dir = "/w";
	r.env = good_env;
	r.time_limit = 90;
	r.nodes = 2;
	r.ntasks = 8;
	r.ntasks_per_node = 4;
	r.cpus_per_task = 3;
	r.mem_per_cpu_mb = 512;
	r.gres = "gpu:a100:2";
	r.output = "o-%j";
	r.error = "e-%j";
	r.comment = "c";
	r.hold = true;
	slurm_init_job_desc_msg(&d);
	assert_int_equal(fill_desc(&d, &r, &m, &err), 0);
	assert_ptr_equal(d.script, r.script);
	assert_string_equal(d.name, "n");
	assert_string_equal(d.partition, "gpu");
	assert_string_equal(d.account, "acct");
	assert_int_equal(d.user_id, 1234);
	assert_int_equal(d.group_id, 5678);
	assert_string_equal(d.work_dir, "/w");
	assert_int_equal(d.env_size, 3);
	assert_string_equal(d.environment[0], "A=1");
	assert_string_equal(d.environment[2], "EMPTY=");
	assert_null(d.environment[3]);
	assert_int_equal(d.time_limit, 90);
	assert_int_equal(d.min_nodes, 2);
	assert_int_equal(d.max_nodes, 2);
	assert_int_equal(d.num_tasks, 8);
	assert_int_equal(d.ntasks_per_node, 4);
	assert_int_equal(d.cpus_per_task, 3);
	assert_int_equal(d.min_cpus, 24);
	assert_true(d.pn_min_memory == (512 | MEM_PER_CPU));
	assert_string_equal(d.tres_per_node, "gres:gpu:a100:2");
	assert_string_equal(d.std_out, "o-%j");
	assert_string_equal(d.std_err, "e-%j");
	assert_string_equal(d.comment, "c");
	assert_int_equal(d.priority, 0);
	assert_non_null(d.alloc_node);
	assert_null(strchr(d.alloc_node, '.'));
	desc_mem_free(&m);

	/* Defaults: the caller's ids and directory, PATH only, Slurm's own
	 * values for everything left unset. */
	memset(&m, 0, sizeof(m));
	good_request(&r);
	slurm_init_job_desc_msg(&d);
	assert_int_equal(fill_desc(&d, &r, &m, &err), 0);
	assert_int_equal(d.user_id, getuid());
	assert_int_equal(d.group_id, getgid());
	assert_non_null(d.work_dir);
	assert_true(d.work_dir[0] == '/');
	assert_int_equal(d.env_size, 1);
	assert_string_equal(d.environment[0], DEFAULT_PATH);
	assert_int_equal(d.time_limit, NO_VAL);
	assert_int_equal(d.min_nodes, NO_VAL);
	assert_int_equal(d.num_tasks, NO_VAL);
	assert_int_equal(d.cpus_per_task, NO_VAL16);
	assert_int_equal(d.min_cpus, 1);
	assert_true(d.pn_min_memory == NO_VAL64);
	assert_null(d.tres_per_node);
	assert_null(d.name);
	assert_int_equal(d.priority, NO_VAL);
	desc_mem_free(&m);

	/* An empty environment list is the default one too; no limit is
	 * INFINITE; memory per node; tasks from nodes x tasks per node. */
	memset(&m, 0, sizeof(m));
	good_request(&r);
	{
		static const char *const none[] = { NULL };

		r.env = none;
	}
	r.time_limit = HB_SLURMC_INFINITE;
	r.mem_per_node_mb = 2048;
	r.nodes = 3;
	r.ntasks_per_node = 2;
	slurm_init_job_desc_msg(&d);
	assert_int_equal(fill_desc(&d, &r, &m, &err), 0);
	assert_int_equal(d.env_size, 1);
	assert_int_equal(d.time_limit, INFINITE);
	assert_true(d.pn_min_memory == 2048);
	assert_int_equal(d.num_tasks, 6);
	assert_int_equal(d.min_cpus, 6);
	desc_mem_free(&m);
}

/* ------------------------------------------------------ job records */

static void test_job_from_slurm(void **state)
{
	slurm_job_info_t r;
	struct hb_slurmc_job j;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.job_id = 7;
	r.job_state = JOB_PENDING;
	r.priority = 0;
	r.state_reason = WAIT_HELD_USER;
	r.exit_code = 3 << 8; /* ignored while pending */
	job_from_slurm(&r, &j);
	assert_int_equal(j.job_id, 7);
	assert_int_equal(j.state, HB_SLURMC_PENDING);
	assert_true(j.held);
	assert_int_equal(j.exit_code, -1);
	assert_int_equal(j.exit_signal, 0);
	assert_string_equal(j.reason, "JobHeldUser");
	assert_string_equal(j.name, "");
	assert_string_equal(j.nodes, "");
	assert_string_equal(j.comment, "");
	assert_string_equal(j.admin_comment, "");
	assert_false(j.removed);

	r.job_state = JOB_FAILED | JOB_COMPLETING;
	r.priority = 0; /* not held once it has run */
	r.state_reason = WAIT_NO_REASON;
	r.state_desc = "NonZeroExitCode detail";
	r.name = "n";
	r.nodes = "hb1";
	r.comment = "c";
	r.admin_comment = "a";
	r.start_time = 100;
	r.end_time = 200;
	job_from_slurm(&r, &j);
	assert_int_equal(j.state, HB_SLURMC_FAILED);
	assert_true(j.completing);
	assert_false(j.held);
	assert_int_equal(j.exit_code, 3);
	assert_string_equal(j.reason, "NonZeroExitCode detail");
	assert_string_equal(j.name, "n");
	assert_string_equal(j.nodes, "hb1");
	assert_string_equal(j.comment, "c");
	assert_string_equal(j.admin_comment, "a");
	assert_int_equal(j.start_time, 100);
	assert_int_equal(j.end_time, 200);

	r.job_state = JOB_CANCELLED;
	r.exit_code = SIGTERM;
	r.state_desc = "";
	r.state_reason = WAIT_NO_REASON;
	job_from_slurm(&r, &j);
	assert_int_equal(j.exit_code, 0);
	assert_int_equal(j.exit_signal, SIGTERM);
	assert_string_equal(j.reason, "None");
}

/* -------------------------------------------------------------- TRES */

static void test_tres_normal(void **state)
{
	struct hb_slurmc_tres t;
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_slurmc_parse_tres("cpu=4,mem=2000M,node=1,"
					      "billing=4",
					      &t, &err),
			 0);
	assert_int_equal(t.cpus, 4);
	assert_int_equal(t.mem_mib, 2000);
	assert_int_equal(t.nodes, 1);
	assert_int_equal(t.ngpu, 0);

	/* slurmdbd's ids: 1 cpu, 2 mem (MB), 3 energy (NO_VAL64 - 1 when
	 * unknown), 4 node, 5 billing, 1001 a GRES */
	assert_int_equal(hb_slurmc_parse_tres("1=8,2=4096,"
					      "3=18446744073709551614,4=2,"
					      "5=8,1001=1",
					      &t, &err),
			 0);
	assert_int_equal(t.cpus, 8);
	assert_int_equal(t.mem_mib, 4096);
	assert_int_equal(t.nodes, 2);
	assert_int_equal(t.ngpu, 0);

	/* nothing: all zeros */
	t.cpus = 9;
	assert_int_equal(hb_slurmc_parse_tres("", &t, &err), 0);
	assert_int_equal(t.cpus, 0);
	assert_int_equal(hb_slurmc_parse_tres(NULL, &t, &err), 0);
	assert_int_equal(err.code, 0);
}

static void test_tres_gpus(void **state)
{
	struct hb_slurmc_tres t;
	struct hb_err err = { 0 };

	(void)state;
	/* the untyped total beside the typed ones: the typed ones count */
	assert_int_equal(hb_slurmc_parse_tres("cpu=4,mem=2000M,node=1,"
					      "billing=4,gres/gpu=3,"
					      "gres/gpu:a100=1,"
					      "gres/gpu:h100=2",
					      &t, &err),
			 0);
	assert_int_equal(t.ngpu, 2);
	assert_string_equal(t.gpu[0].type, "a100");
	assert_int_equal(t.gpu[0].count, 1);
	assert_string_equal(t.gpu[1].type, "h100");
	assert_int_equal(t.gpu[1].count, 2);

	/* untyped only */
	assert_int_equal(hb_slurmc_parse_tres("gres/gpu=2", &t, &err), 0);
	assert_int_equal(t.ngpu, 1);
	assert_string_equal(t.gpu[0].type, "");
	assert_int_equal(t.gpu[0].count, 2);

	/* more in the total than the types: the rest stays untyped */
	assert_int_equal(hb_slurmc_parse_tres("gres/gpu=3,gres/gpu:a100=1",
					      &t, &err),
			 0);
	assert_int_equal(t.ngpu, 2);
	assert_string_equal(t.gpu[0].type, "");
	assert_int_equal(t.gpu[0].count, 2);
	assert_string_equal(t.gpu[1].type, "a100");
	assert_int_equal(t.gpu[1].count, 1);

	/* other GRES and gpu-like names are not GPUs */
	assert_int_equal(hb_slurmc_parse_tres("gres/gpumem=8G,gres/mps=100,"
					      "license/matlab=1,bb/lua=1G",
					      &t, &err),
			 0);
	assert_int_equal(t.ngpu, 0);
	assert_int_equal(err.code, 0);
}

static void test_tres_units(void **state)
{
	static const struct {
		const char *s;
		uint64_t mib;
	} cases[] = {
		{ "mem=2000M", 2000 },	  { "mem=2000", 2000 },
		{ "mem=2G", 2048 },	  { "mem=1.5G", 1536 },
		{ "mem=1T", 1048576 },	  { "mem=1P", 1073741824ULL },
		{ "mem=512K", 1 },	  { "mem=1025K", 2 },
		{ "mem=0", 0 },		  { "mem=1.25M", 2 },
		{ "2=16384", 16384 },
	};
	struct hb_slurmc_tres t;
	struct hb_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(hb_slurmc_parse_tres(cases[i].s, &t, &err),
				 0);
		assert_int_equal(t.mem_mib, cases[i].mib);
	}
}

static void test_tres_garbage(void **state)
{
	static const struct {
		const char *s;
		int code;
		const char *names;
	} cases[] = {
		{ "cpu=abc", HB_EINVAL, "cpu: 'abc'" },
		{ "cpu=4,mem=2X", HB_EINVAL, "mem: '2X'" },
		{ "cpu=4,mem=G", HB_EINVAL, "mem: 'G'" },
		{ "cpu=-1", HB_EINVAL, "cpu: '-1'" },
		{ "cpu=1.5", HB_EINVAL, "cpu: '1.5'" },
		{ "cpu4", HB_EINVAL, "'cpu4': not NAME=VALUE" },
		{ "=4", HB_EINVAL, "'=4': not NAME=VALUE" },
		{ "cpu=4,,node=1", HB_EINVAL, "empty item" },
		{ "cpu=4,", HB_EINVAL, "trailing comma" },
		{ "billing=", HB_EINVAL, "billing: empty value" },
		{ "cpu=4294967296", HB_ERANGE, "cpu: 4294967296" },
		{ "node=99999999999999999999999", HB_EINVAL, "node: '" },
		{ "mem=99999999999999999P", HB_EINVAL, "mem: '" },
		{ "gres/gpu=x", HB_EINVAL, "gres/gpu: 'x'" },
		{ "gres/gpu:a-very-long-gpu-type-name-indeed=1", HB_ETOOBIG,
		  "GPU type longer" },
		{ "gres/gpu:a=1,gres/gpu:b=1,gres/gpu:c=1,gres/gpu:d=1,"
		  "gres/gpu:e=1,gres/gpu:f=1,gres/gpu:g=1,gres/gpu:h=1,"
		  "gres/gpu:i=1",
		  HB_ERANGE, "'gres/gpu:i=1': more than 8 GPU types" },
	};
	struct hb_slurmc_tres t;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_err err = { 0 };

		memset(&t, 0x5a, sizeof(t));
		assert_int_equal(hb_slurmc_parse_tres(cases[i].s, &t, &err),
				 cases[i].code);
		if (!strstr(err.msg, cases[i].names))
			fail_msg("'%s': '%s' lacks '%s'", cases[i].s, err.msg,
				 cases[i].names);
		assert_int_equal(t.cpus, 0x5a5a5a5a); /* untouched */
	}
}

/* The GPUs a node holds, as scontrol -d prints them. */
static void test_gres_detail(void **state)
{
	struct hb_slurmc_tres t;
	struct hb_err err = { 0 };

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(hb_slurmc_tres_add_gres_detail(
				 &t, "gpu:a100:1(IDX:0),gpu:h100:2(IDX:0,2),"
				     "mps:100(IDX:0)",
				 &err),
			 0);
	/* a second node */
	assert_int_equal(hb_slurmc_tres_add_gres_detail(
				 &t, "gpu:a100:3(IDX:1-3)", &err),
			 0);
	assert_int_equal(t.ngpu, 2);
	assert_string_equal(t.gpu[0].type, "a100");
	assert_int_equal(t.gpu[0].count, 4);
	assert_string_equal(t.gpu[1].type, "h100");
	assert_int_equal(t.gpu[1].count, 2);

	memset(&t, 0, sizeof(t));
	assert_int_equal(hb_slurmc_tres_add_gres_detail(&t, "gpu:2(IDX:0-1)",
							&err),
			 0);
	assert_int_equal(hb_slurmc_tres_add_gres_detail(&t, "gpu:v100(CNT:3)",
							&err),
			 0);
	assert_int_equal(hb_slurmc_tres_add_gres_detail(&t, "", &err), 0);
	assert_int_equal(hb_slurmc_tres_add_gres_detail(&t, NULL, &err), 0);
	assert_int_equal(t.ngpu, 2);
	assert_string_equal(t.gpu[0].type, "");
	assert_int_equal(t.gpu[0].count, 2);
	assert_string_equal(t.gpu[1].type, "v100");
	assert_int_equal(t.gpu[1].count, 3);

	assert_int_equal(hb_slurmc_tres_add_gres_detail(&t, "gpu:a100:x(IDX:0)",
							&err),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "'gpu:a100:x(IDX:0)'"));
}

/* A record's allocation, exclusivity and suspended time. */
static void test_job_alloc(void **state)
{
	slurm_job_info_t r;
	struct hb_slurmc_job j;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.job_id = 9;
	r.job_state = JOB_COMPLETE;
	r.tres_alloc_str = "cpu=4,mem=2G,node=1,billing=4,gres/gpu=1,"
			   "gres/gpu:a100=1";
	r.num_cpus = 2;
	r.num_nodes = 1;
	r.shared = JOB_SHARED_NONE;
	/* ran 100..130, suspended at 130, resumed at 150 (suspend_time),
	 * ended at 200: 30 + 50 s of run time, 20 suspended */
	r.start_time = 100;
	r.end_time = 200;
	r.suspend_time = 150;
	r.pre_sus_time = 30;
	job_from_slurm(&r, &j);
	assert_int_equal(j.alloc_cpus, 4);
	assert_int_equal(j.alloc_mem_mib, 2048);
	assert_int_equal(j.alloc_nodes, 1);
	assert_true(j.exclusive);
	assert_int_equal(j.alloc_ngpu, 1);
	assert_string_equal(j.alloc_gpu[0].type, "a100");
	assert_int_equal(j.alloc_gpu[0].count, 1);
	assert_int_equal(j.suspended_s, 20);
	assert_int_equal(j.end_time - j.start_time - j.suspended_s, 80);

	/* pending: no string, the CPUs and nodes asked; sharing kinds and
	 * "no preference" are not exclusive; never suspended */
	r.job_state = JOB_PENDING;
	r.tres_alloc_str = NULL;
	r.start_time = r.end_time = r.suspend_time = r.pre_sus_time = 0;
	r.num_nodes = NO_VAL;
	for (uint16_t sh = JOB_SHARED_OK; sh <= JOB_SHARED_MCS; sh++) {
		r.shared = sh;
		job_from_slurm(&r, &j);
		assert_false(j.exclusive);
	}
	r.shared = NO_VAL16;
	job_from_slurm(&r, &j);
	assert_false(j.exclusive);
	assert_int_equal(j.alloc_cpus, 2);
	assert_int_equal(j.alloc_nodes, 0);
	assert_int_equal(j.alloc_mem_mib, 0);
	assert_int_equal(j.alloc_ngpu, 0);
	assert_int_equal(j.suspended_s, 0);

	/* a string that does not parse: the counts asked */
	r.tres_alloc_str = "cpu=x";
	r.num_nodes = 3;
	job_from_slurm(&r, &j);
	assert_int_equal(j.alloc_cpus, 2);
	assert_int_equal(j.alloc_nodes, 3);
}

/* A slurmdbd record as sacct -X reads it, and the query's condition. */
static void test_acct_record(void **state)
{
	slurmdb_job_rec_t r;
	slurmdb_job_cond_t cond;
	struct hb_slurmc_acct_job j;
	struct hb_err err = { 0 };
	char *saved = slurm_conf.cluster_name;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.jobid = 77;
	r.user = "alice";
	r.partition = "debug";
	r.admin_comment = "hpcbridge:hb-1 target=slurm";
	r.state = JOB_COMPLETE;
	r.start = 1000;
	r.end = 1100;
	r.suspended = 30;
	r.elapsed = 70;
	r.tres_alloc_str = "1=4,2=2000,3=18446744073709551614,4=1,5=4";
	assert_int_equal(job_from_acct(&r, &j, &err), 0);
	assert_int_equal(j.job_id, 77);
	assert_string_equal(j.user, "alice");
	assert_string_equal(j.account, ""); /* NULL */
	assert_string_equal(j.admin_comment, "hpcbridge:hb-1 target=slurm");
	assert_int_equal(j.state, HB_SLURMC_COMPLETE);
	assert_int_equal(j.elapsed_s, 70);
	assert_int_equal(j.suspended_s, 30);
	assert_int_equal(j.alloc_cpus, 4);

	r.tres_alloc_str = "1=four";
	assert_int_equal(job_from_acct(&r, &j, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "job 77"));
	assert_non_null(strstr(err.msg, "'four'"));

	/* whole records, no steps, no truncation, no flag filter, this
	 * cluster; 0 is not "today" */
	slurm_conf.cluster_name = "hbtest";
	assert_int_equal(make_cond(&cond, 0, 500, &err), 0);
	assert_int_equal(cond.usage_start, 1);
	assert_int_equal(cond.usage_end, 500);
	assert_int_equal(cond.flags,
			 JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_TRUNC);
	assert_int_equal(cond.db_flags, SLURMDB_JOB_FLAG_NOTSET);
	assert_non_null(cond.cluster_list);
	assert_int_equal(slurm_list_count(cond.cluster_list), 1);
	slurm_list_destroy(cond.cluster_list);
	slurm_conf.cluster_name = saved;

	/* no handle */
	assert_int_equal(hb_slurmc_acct_jobs(NULL, 0, 1, NULL, NULL, &err),
			 HB_EINVAL);
}

/* -------------------------------------------------------------- poll */

#define NJOBS 4

struct table {
	job_info_msg_t msg;
	slurm_job_info_t jobs[NJOBS];
};

static void table_set(struct table *t, time_t stamp, size_t n)
{
	t->msg.last_update = stamp;
	t->msg.record_count = (uint32_t)n;
	t->msg.job_array = t->jobs;
}

static void job_set(slurm_job_info_t *r, uint32_t id, uint32_t st)
{
	memset(r, 0, sizeof(*r));
	r->job_id = id;
	r->job_state = st;
	r->priority = 1;
}

struct seen {
	unsigned n, removed;
	uint32_t ids[16];
	enum hb_slurmc_state states[16];
	unsigned fail_at; /* 1-based call that fails; 0: none */
};

static int seen_cb(const struct hb_slurmc_job *j, void *arg)
{
	struct seen *s = arg;

	if (s->fail_at && s->n + 1 == s->fail_at)
		return -77;
	assert_true(s->n < 16);
	s->ids[s->n] = j->job_id;
	s->states[s->n] = j->state;
	s->n++;
	if (j->removed) {
		s->removed++;
		assert_int_equal(j->state, HB_SLURMC_UNKNOWN);
		assert_string_equal(j->name, "");
		assert_string_equal(j->reason, "");
	}
	return 0;
}

static void test_poll_diff(void **state)
{
	struct hb_slurmc c;
	struct table t;
	struct seen s;

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(&t, 0, sizeof(t));

	/* First table: every job is new; reported in Slurm's order. */
	job_set(&t.jobs[0], 30, JOB_PENDING);
	job_set(&t.jobs[1], 10, JOB_RUNNING);
	job_set(&t.jobs[2], 20, JOB_COMPLETE);
	table_set(&t, 1000, 3);
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.ids[0], 30);
	assert_int_equal(s.ids[1], 10);
	assert_int_equal(s.ids[2], 20);
	assert_int_equal(c.update_time, 1000);
	assert_int_equal(c.stats.jobs_tracked, 3);
	assert_int_equal(c.stats.jobs_reported, 3);

	/* The same table: nothing to say. */
	memset(&s, 0, sizeof(s));
	table_set(&t, 1001, 3);
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(c.update_time, 1001);

	/* A scheduler's new estimate for a pending job is no change; a
	 * state change, a comment, a release from hold are. */
	t.jobs[0].start_time = 5000;
	t.jobs[0].end_time = 6000;
	t.jobs[1].end_time = 7000; /* running: expected end */
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 0);
	t.jobs[1].job_state = JOB_COMPLETE | JOB_COMPLETING;
	t.jobs[2].comment = "phase=done";
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ids[0], 10);
	assert_int_equal(s.states[0], HB_SLURMC_COMPLETE);
	assert_int_equal(s.ids[1], 20);
	t.jobs[1].job_state = JOB_COMPLETE; /* epilog done */
	t.jobs[0].priority = 0;		    /* held */
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 2);

	/* Job 20 leaves the table, 40 arrives: 40 first, then 20 removed. */
	job_set(&t.jobs[2], 40, JOB_PENDING);
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ids[0], 40);
	assert_int_equal(s.ids[1], 20);
	assert_int_equal(s.removed, 1);
	assert_int_equal(c.stats.jobs_removed, 1);
	assert_int_equal(c.stats.jobs_tracked, 3);

	/* A failing callback stops the poll, and the handle keeps its old
	 * table and stamp: the next poll reports again (at least once). */
	t.jobs[0].job_state = JOB_RUNNING;
	t.jobs[2].job_state = JOB_RUNNING;
	table_set(&t, 2000, 3);
	memset(&s, 0, sizeof(s));
	s.fail_at = 2;
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), -77);
	assert_int_equal(s.n, 1);
	assert_int_equal(c.update_time, 1001);
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ids[0], 30);
	assert_int_equal(s.ids[1], 40);
	assert_int_equal(c.update_time, 2000);

	/* A failing callback on a removal also keeps the old table. */
	table_set(&t, 2100, 2); /* 40 leaves */
	memset(&s, 0, sizeof(s));
	s.fail_at = 1;
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), -77);
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ids[0], 40);
	assert_int_equal(s.removed, 1);

	/* An empty table removes everything; a reset forgets everything. */
	table_set(&t, 2200, 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.removed, 2);
	assert_int_equal(c.stats.jobs_tracked, 0);
	table_set(&t, 2300, 2);
	assert_int_equal(poll_table(&c, &t.msg, NULL, NULL), 0);
	hb_slurmc_poll_reset(&c);
	assert_int_equal(c.update_time, 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(poll_table(&c, &t.msg, seen_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.removed, 0);
	hb_slurmc_snap_free(c.snap, c.nsnap);
}

static int alloc_cb(const struct hb_slurmc_job *j, void *arg)
{
	struct hb_slurmc_job *last = arg;

	*last = *j;
	last->name = last->partition = last->nodes = NULL;
	last->comment = last->admin_comment = last->reason = NULL;
	return 0;
}

/* The change a job's end makes carries its allocation and suspended
 * time, which the daemon meters it by (they are not in the fingerprint:
 * the end changes the state, and the state is). */
static void test_poll_final_alloc(void **state)
{
	struct hb_slurmc c;
	struct hb_slurmc_job last;
	struct table t;

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(&t, 0, sizeof(t));
	job_set(&t.jobs[0], 50, JOB_RUNNING);
	t.jobs[0].tres_alloc_str = "cpu=2,mem=100M,node=1";
	t.jobs[0].start_time = 1000;
	t.jobs[0].shared = NO_VAL16;
	table_set(&t, 3000, 1);
	memset(&last, 0, sizeof(last));
	assert_int_equal(poll_table(&c, &t.msg, alloc_cb, &last), 0);
	assert_int_equal(last.alloc_cpus, 2);

	/* suspended and resumed: state changes, each reported */
	t.jobs[0].job_state = JOB_SUSPENDED;
	t.jobs[0].suspend_time = 1010;
	t.jobs[0].pre_sus_time = 10;
	table_set(&t, 3001, 1);
	memset(&last, 0, sizeof(last));
	assert_int_equal(poll_table(&c, &t.msg, alloc_cb, &last), 0);
	assert_int_equal(last.state, HB_SLURMC_SUSPENDED);
	t.jobs[0].job_state = JOB_RUNNING;
	t.jobs[0].suspend_time = 1040;
	table_set(&t, 3002, 1);
	assert_int_equal(poll_table(&c, &t.msg, alloc_cb, &last), 0);
	assert_int_equal(last.state, HB_SLURMC_RUNNING);
	assert_int_equal(last.suspended_s, 30);

	/* the GPUs a node holds while it runs (no TRES names them) */
	char *detail[] = { "gpu:a100:2(IDX:0-1)" };
	t.jobs[0].gres_detail_str = detail;
	t.jobs[0].gres_detail_cnt = 1;
	table_set(&t, 3002, 1);
	memset(&last, 0, sizeof(last));
	assert_int_equal(poll_table(&c, &t.msg, alloc_cb, &last), 0);
	assert_int_equal(last.job_id, 0); /* no change to report */
	assert_int_equal(c.nsnap, 1);
	assert_int_equal(c.snap[0].ngpu, 1); /* but remembered */

	/* ended: Slurm drops the detail; the end carries the GPUs seen */
	t.jobs[0].gres_detail_str = NULL;
	t.jobs[0].gres_detail_cnt = 0;
	t.jobs[0].job_state = JOB_COMPLETE;
	t.jobs[0].end_time = 1100;
	table_set(&t, 3003, 1);
	memset(&last, 0, sizeof(last));
	assert_int_equal(poll_table(&c, &t.msg, alloc_cb, &last), 0);
	assert_int_equal(last.job_id, 50);
	assert_int_equal(last.state, HB_SLURMC_COMPLETE);
	assert_int_equal(last.alloc_cpus, 2);
	assert_int_equal(last.alloc_mem_mib, 100);
	assert_int_equal(last.alloc_nodes, 1);
	assert_false(last.exclusive);
	assert_int_equal(last.suspended_s, 30);
	assert_int_equal(last.end_time - last.start_time - last.suspended_s,
			 70);
	assert_int_equal(last.alloc_ngpu, 1);
	assert_string_equal(last.alloc_gpu[0].type, "a100");
	assert_int_equal(last.alloc_gpu[0].count, 2);
	hb_slurmc_snap_free(c.snap, c.nsnap);
}

/* --------------------------------------------------------- nodes */

static void test_node_state_text(void **state)
{
	static const struct {
		enum hb_slurmc_node_state base;
		uint32_t flags;
		const char *text;
	} cases[] = {
		{ HB_SLURMC_NODE_IDLE, 0, "idle" },
		{ HB_SLURMC_NODE_MIXED, 0, "mixed" },
		{ HB_SLURMC_NODE_ALLOCATED, 0, "allocated" },
		{ HB_SLURMC_NODE_DOWN, NODE_STATE_NO_RESPOND, "down*" },
		{ HB_SLURMC_NODE_IDLE, NODE_STATE_DRAIN, "drained" },
		{ HB_SLURMC_NODE_MIXED, NODE_STATE_DRAIN, "draining" },
		{ HB_SLURMC_NODE_IDLE, NODE_STATE_DRAIN | NODE_STATE_COMPLETING,
		  "draining" },
		{ HB_SLURMC_NODE_IDLE, NODE_STATE_COMPLETING, "completing" },
		{ HB_SLURMC_NODE_IDLE, NODE_STATE_FAIL, "fail" },
		{ HB_SLURMC_NODE_ALLOCATED, NODE_STATE_FAIL, "failing" },
		{ HB_SLURMC_NODE_FUTURE, 0, "future" },
		{ HB_SLURMC_NODE_UNKNOWN, NODE_STATE_NO_RESPOND, "unknown*" },
	};
	char text[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		node_state_text(cases[i].base, cases[i].flags, text,
				sizeof(text));
		assert_string_equal(text, cases[i].text);
	}
	assert_int_equal(node_base(NODE_STATE_MIXED | NODE_STATE_DRAIN),
			 HB_SLURMC_NODE_MIXED);
	assert_int_equal(node_base(NODE_STATE_ERROR), HB_SLURMC_NODE_UNKNOWN);
	assert_int_equal(node_base(NODE_STATE_FUTURE), HB_SLURMC_NODE_FUTURE);
}

/* -------------------------------------------------------- open */

static char tmpdir[] = "/tmp/hb-test-slurmc.XXXXXX";

static const char *tmp_path(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(tmp_path(name), "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* A slurm.conf libslurm loads, for a controller that is not there: port
 * 1 on loopback refuses connections at once, and MessageTimeout=1 makes
 * libslurm give up without retrying. */
static const char conf_text[] = "ClusterName=unit\n"
				"SlurmctldHost=localhost(127.0.0.1)\n"
				"SlurmctldPort=1\n"
				"AuthType=auth/munge\n"
				"AuthInfo=socket=/nonexistent/munge.socket\n"
				"MessageTimeout=1\n";

static int setup_dir(void **state)
{
	(void)state;
	/* searchable: a submission as another user reads slurm.conf as that
	 * user */
	return mkdtemp(tmpdir) && chmod(tmpdir, 0755) == 0 ? 0 : -1;
}

static int teardown_dir(void **state)
{
	(void)state;
	unlink(tmp_path("ok.conf"));
	unlink(tmp_path("copy.conf"));
	unlink(tmp_path("bad.conf"));
	unlink(tmp_path("empty.conf"));
	rmdir(tmpdir);
	return 0;
}

static void expect_open_fails(const char *path, int code, const char *in)
{
	struct hb_slurmc *c = (struct hb_slurmc *)0x1;
	struct hb_err err = { 0 };

	assert_int_equal(hb_slurmc_open(path, &c, &err), code);
	assert_ptr_equal(c, (struct hb_slurmc *)0x1); /* untouched */
	if (!strstr(err.msg, in))
		fail_msg("'%s' not in '%s'", in, err.msg);
}

static void test_open_errors(void **state)
{
	struct hb_err err = { 0 };
	char *old;

	(void)state;
	expect_open_fails(tmp_path("none.conf"), HB_ENOENT, "no such file");
	expect_open_fails(tmp_path("none/x.conf"), HB_ENOENT, "no such file");
	expect_open_fails(tmpdir, HB_EINVAL, "not a regular file");
	expect_open_fails("", HB_EINVAL, "empty path");
	/* libslurm would exit() on these two: the process lives on. */
	write_file("bad.conf", "ClusterName=x\nthis is not a key ===\n");
	expect_open_fails(tmp_path("bad.conf"), HB_EINVAL,
			  "libslurm refuses it");
	write_file("empty.conf", "");
	expect_open_fails(tmp_path("empty.conf"), HB_EINVAL,
			  "libslurm refuses it");
	/* NULL: $SLURM_CONF. */
	old = getenv("SLURM_CONF") ? strdup(getenv("SLURM_CONF")) : NULL;
	setenv("SLURM_CONF", tmp_path("none.conf"), 1);
	expect_open_fails(NULL, HB_ENOENT, "none.conf");
	if (old)
		setenv("SLURM_CONF", old, 1);
	else
		unsetenv("SLURM_CONF");
	free(old);
	assert_int_equal(hb_slurmc_open(tmp_path("bad.conf"), NULL, &err),
			 HB_EINVAL);
	hb_slurmc_close(NULL);
	assert_null(hb_slurmc_conf(NULL));
}

static int no_part(const struct hb_slurmc_partition *p, void *arg)
{
	(void)p;
	(void)arg;
	fail_msg("no partition expected");
	return 0;
}

static int no_node(const struct hb_slurmc_node *n, void *arg)
{
	(void)n;
	(void)arg;
	fail_msg("no node expected");
	return 0;
}

static void test_open_no_controller(void **state)
{
	struct hb_slurmc *c = NULL, *c2 = NULL, *c3 = NULL;
	struct hb_slurmc_submit r;
	struct hb_slurmc_stats st;
	struct hb_slurmc_job j;
	struct hb_err err = { 0 };
	uint32_t id = 0;
	time_t start;

	(void)state;
	write_file("ok.conf", conf_text);
	write_file("copy.conf", conf_text);
	assert_int_equal(hb_slurmc_open(tmp_path("ok.conf"), &c, &err), 0);
	assert_non_null(c);
	assert_non_null(strstr(hb_slurmc_conf(c), "ok.conf"));

	/* One slurm.conf per process: the same file (another spelling) is
	 * fine, another file is not. */
	{
		char other[PATH_MAX];

		snprintf(other, sizeof(other), "%s/../%s/ok.conf", tmpdir,
			 strrchr(tmpdir, '/') + 1);
		assert_int_equal(hb_slurmc_open(other, &c2, &err), 0);
		assert_string_equal(hb_slurmc_conf(c2), hb_slurmc_conf(c));
	}
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_open(tmp_path("copy.conf"), &c3, &err),
			 HB_ECONFLICT);
	assert_null(c3);
	assert_non_null(strstr(err.msg, "one slurm.conf per process"));
	hb_slurmc_close(c2);

	/* Every call reaches for slurmctld and says it is unavailable. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_partitions(c, no_part, NULL, &err),
			 HB_EUNAVAIL);
	assert_non_null(strstr(err.msg, "slurm_load_partitions"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_nodes(c, no_node, NULL, &err), HB_EUNAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_poll(c, NULL, NULL, &err), HB_EUNAVAIL);
	hb_slurmc_get_stats(c, &st);
	assert_int_equal(st.polls, 1);
	assert_int_equal(st.polls_unchanged, 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_job(c, 1, &j, &err), HB_EUNAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_cancel(c, 1, 0, &err), HB_EUNAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_set_comment(c, 1, "x", &err), HB_EUNAVAIL);
	good_request(&r);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_submit(c, &r, &id, &err), HB_EUNAVAIL);
	assert_int_equal(id, 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_will_run(c, &r, &start, NULL, 0, &err),
			 HB_EUNAVAIL);
	/* For another user: the child that has become the user makes the
	 * call, and its error comes back; a caller who is not root cannot
	 * become anyone. */
	r.as_user = true;
	r.uid = geteuid() == 0 ? 65534 : (uint32_t)geteuid() + 1;
	r.gid = 65534;
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_submit(c, &r, &id, &err),
			 geteuid() == 0 ? HB_EUNAVAIL : HB_EPERM);
	assert_int_equal(id, 0);
	if (!strstr(err.msg, geteuid() == 0 ? "as uid 65534"
					   : "cannot submit as uid"))
		fail_msg("submit as another uid: %s", err.msg);
	good_request(&r);

	/* Argument checks come before any call to Slurm. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_cancel(c, 1, -1, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_cancel(c, 1, 100000, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_cancel(NULL, 1, 0, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_partitions(c, NULL, NULL, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_nodes(c, NULL, NULL, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_job(c, 1, NULL, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_poll(NULL, NULL, NULL, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_set_comment(NULL, 1, "x", &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_submit(c, &r, NULL, &err), HB_EINVAL);
	r.script = "no interpreter";
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_submit(c, &r, &id, &err), HB_EINVAL);
	assert_int_equal(hb_slurmc_will_run(c, &r, &start, NULL, 0, &err),
			 HB_EINVAL);
	good_request(&r);
	assert_int_equal(hb_slurmc_will_run(c, &r, NULL, NULL, 0, &err),
			 HB_EINVAL);
	assert_int_equal(hb_slurmc_will_run(c, &r, &start, NULL, 5, &err),
			 HB_EINVAL);
	hb_slurmc_close(c);

	/* The last close released libslurm: another file may load now. */
	c = NULL;
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_slurmc_open(tmp_path("copy.conf"), &c, &err), 0);
	hb_slurmc_close(c);

	/* Clearing a job record is safe twice. */
	memset(&j, 0, sizeof(j));
	hb_slurmc_job_clear(&j);
	hb_slurmc_job_clear(&j);
	assert_int_equal(j.exit_code, -1);
	hb_slurmc_job_clear(NULL);
}

/* ------------------------------------------------ submission as a user */

/* A child standing in for the submitting one: what it does. */
enum fake { F_ANSWER, F_SILENT, F_KILLED, F_STOPPED, F_SLOW };

static int fake_child(enum fake how, struct as_user_reply *r,
		      struct hb_err *err, long *ms)
{
	struct timespec t0;
	int fds[2], rc;
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct as_user_reply a = { .stage = AS_SLURM, .job_id = 42 };

		close(fds[0]);
		switch (how) {
		case F_ANSWER:
			say_parent(fds[1], &a);
			break;
		case F_SILENT:
			break;
		case F_KILLED:
			kill(getpid(), SIGKILL);
			break;
		case F_STOPPED:
			raise(SIGSTOP);
			say_parent(fds[1], &a);
			break;
		case F_SLOW:
			sleep(20);
			break;
		}
		_exit(0);
	}
	close(fds[1]);
	memset(err, 0, sizeof(*err));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = as_user_wait(pid, fds[0], -1, r, 4242, err);
	*ms = ms_since(&t0);
	close(fds[0]);
	/* reaped, whatever happened */
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	return rc;
}

static void test_as_user_wait(void **state)
{
	struct as_user_reply r;
	struct hb_err err = { 0 };
	long ms;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(fake_child(F_ANSWER, &r, &err, &ms), 0);
	assert_int_equal(r.stage, AS_SLURM);
	assert_int_equal(r.job_id, 42);
	assert_int_equal(fake_child(F_SILENT, &r, &err, &ms), HB_EIO);
	assert_non_null(strstr(err.msg, "uid 4242 ended without an answer"));
	assert_int_equal(fake_child(F_KILLED, &r, &err, &ms), HB_EIO);
	assert_non_null(strstr(err.msg, "died (signal 9)"));
	/* a user may stop the process that is theirs: it is killed at once,
	 * not waited for */
	assert_int_equal(fake_child(F_STOPPED, &r, &err, &ms), HB_EIO);
	assert_non_null(strstr(err.msg, "was stopped (signal 19)"));
	assert_true(ms < 5000);
	as_user_timeout_ms = 300;
	assert_int_equal(fake_child(F_SLOW, &r, &err, &ms), HB_ETIMEDOUT);
	as_user_timeout_ms = AS_USER_TIMEOUT_MS;
	assert_non_null(strstr(err.msg, "took over 300 ms"));
	assert_true(ms >= 300 && ms < 5000);
}

/* What a child sees after drop_to(). */
struct dropped {
	int rc;
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	int ngroups, dumpable, back_to_root;
	gid_t group0;
};

static void test_drop_to(void **state)
{
	static const gid_t groups[] = { 65534 };
	struct dropped got = { 0 };
	int fds[2], st;
	pid_t pid;

	(void)state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct as_user_reply r = { 0 };
		struct dropped d = { 0 };
		gid_t g[8];

		close(fds[0]);
		d.rc = drop_to(65534, 65534, groups, 1, &r);
		getresuid(&d.ruid, &d.euid, &d.suid);
		getresgid(&d.rgid, &d.egid, &d.sgid);
		d.ngroups = getgroups(8, g);
		d.group0 = d.ngroups > 0 ? g[0] : 0;
		d.dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
		d.back_to_root = setuid(0) == 0;
		if (write(fds[1], &d, sizeof(d)) != sizeof(d))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &got, sizeof(got)), sizeof(got));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(got.rc, 0);
	assert_int_equal(got.ruid, 65534);
	assert_int_equal(got.euid, 65534);
	assert_int_equal(got.suid, 65534);
	assert_int_equal(got.rgid, 65534);
	assert_int_equal(got.egid, 65534);
	assert_int_equal(got.sgid, 65534);
	assert_int_equal(got.ngroups, 1);
	assert_int_equal(got.group0, 65534);
	assert_int_equal(got.dumpable, 0);
	assert_false(got.back_to_root);
}

/* ------------------------------------------ the request to the child */

static void test_req_json(void **state)
{
	static const char *const env[] = { "A=1", "B=caf\xc3\xa9 \"q\"\n\x01",
					   "C=", NULL };
	struct hb_slurmc_submit r, got;
	struct hb_err err = { 0 };
	cJSON *tree = NULL;
	char *text = NULL, **genv = NULL;
	size_t len = 0;

	(void)state;
	/* Every member fill_desc() reads survives the trip, bytes as they
	 * were. */
	memset(&r, 0, sizeof(r));
	r.script = "#!/bin/sh\n\xff\xfe raw bytes\techo \"$A\" \\\n";
	r.name = "n";
	r.partition = "p1,p2";
	r.account = "acct";
	r.as_user = true;
	r.uid = 4000000000u;
	r.gid = 7;
	r.work_dir = "/w d";
	r.env = env;
	r.time_limit = HB_SLURMC_INFINITE;
	r.nodes = 2;
	r.ntasks = 8;
	r.ntasks_per_node = 4;
	r.cpus_per_task = 3;
	r.mem_per_node_mb = (1ull << 62) + 1; /* beyond a double */
	r.gres = "gpu:a100:2";
	r.output = "o-%j";
	r.error = "e-%j";
	r.comment = "c";
	r.admin_comment = "not sent";
	r.hold = true;
	assert_int_equal(req_to_json(&r, &text, &len, &err), 0);
	assert_int_equal(len, strlen(text));
	assert_null(strstr(text, "not sent"));
	assert_int_equal(req_from_json(text, len, &got, &tree, &genv, &err), 0);
	assert_string_equal(got.script, r.script);
	assert_string_equal(got.name, r.name);
	assert_string_equal(got.partition, r.partition);
	assert_string_equal(got.account, r.account);
	assert_true(got.as_user);
	assert_int_equal(got.uid, r.uid);
	assert_int_equal(got.gid, r.gid);
	assert_string_equal(got.work_dir, r.work_dir);
	for (int i = 0; i < 3; i++)
		assert_string_equal(got.env[i], env[i]);
	assert_null(got.env[3]);
	assert_int_equal(got.time_limit, r.time_limit);
	assert_int_equal(got.nodes, r.nodes);
	assert_int_equal(got.ntasks, r.ntasks);
	assert_int_equal(got.ntasks_per_node, r.ntasks_per_node);
	assert_int_equal(got.cpus_per_task, r.cpus_per_task);
	assert_true(got.mem_per_node_mb == r.mem_per_node_mb);
	assert_int_equal(got.mem_per_cpu_mb, 0);
	assert_string_equal(got.gres, r.gres);
	assert_string_equal(got.output, r.output);
	assert_string_equal(got.error, r.error);
	assert_string_equal(got.comment, r.comment);
	assert_null(got.admin_comment);
	assert_true(got.hold);
	free(genv);
	cJSON_Delete(tree);
	free(text);

	/* Unset members stay unset. */
	good_request(&r);
	r.as_user = true;
	r.uid = 5;
	r.gid = 6;
	r.work_dir = "/";
	assert_int_equal(req_to_json(&r, &text, &len, &err), 0);
	assert_int_equal(req_from_json(text, len, &got, &tree, &genv, &err), 0);
	assert_null(got.name);
	assert_null(got.env);
	assert_null(got.gres);
	assert_false(got.hold);
	assert_int_equal(got.mem_per_cpu_mb, 0);
	free(genv);
	cJSON_Delete(tree);
	free(text);
}

static void bad_json(const char *text, int code, const char *in_msg)
{
	struct hb_slurmc_submit got;
	struct hb_err err = { 0 };
	cJSON *tree = NULL;
	char **env = NULL;

	assert_int_equal(
		req_from_json(text, strlen(text), &got, &tree, &env, &err),
		code);
	if (!strstr(err.msg, in_msg))
		fail_msg("'%s' not in '%s' (for %s)", in_msg, err.msg, text);
	free(env);
	cJSON_Delete(tree);
}

#define REQ_OK                                                                 \
	"\"script\":\"#!/bin/sh\\n\",\"uid\":5,\"gid\":6,\"work_dir\":\"/\""

static void test_req_json_errors(void **state)
{
	(void)state;
	bad_json("", HB_EINVAL, "request: not JSON");
	bad_json("{\"script\":", HB_EINVAL, "request: not JSON");
	bad_json("[1]", HB_EINVAL, "not a JSON object");
	bad_json("{" REQ_OK ",\"bogus\":1}", HB_EINVAL,
		 "unknown member 'bogus'");
	bad_json("{" REQ_OK ",\"uid\":5}", HB_EINVAL,
		 "request.uid: given twice");
	bad_json("{\"uid\":5,\"gid\":6,\"work_dir\":\"/\"}", HB_EINVAL,
		 "request.script: missing");
	bad_json("{\"script\":\"#!/bin/sh\\n\",\"gid\":6,\"work_dir\":\"/\"}",
		 HB_EINVAL, "request.uid: missing");
	bad_json("{\"script\":\"#!/bin/sh\\n\",\"uid\":5,\"gid\":6}", HB_EINVAL,
		 "request.work_dir: missing");
	bad_json("{" REQ_OK ",\"name\":1}", HB_EINVAL,
		 "request.name: not a string");
	bad_json("{" REQ_OK ",\"hold\":\"yes\"}", HB_EINVAL,
		 "request.hold: not a boolean");
	bad_json("{" REQ_OK ",\"nodes\":-1}", HB_ERANGE, "request.nodes");
	bad_json("{" REQ_OK ",\"nodes\":1.5}", HB_ERANGE, "request.nodes");
	bad_json("{" REQ_OK ",\"nodes\":4294967296}", HB_ERANGE,
		 "request.nodes");
	bad_json("{" REQ_OK ",\"nodes\":\"2\"}", HB_ERANGE, "request.nodes");
	bad_json("{" REQ_OK ",\"cpus_per_task\":65536}", HB_ERANGE,
		 "request.cpus_per_task");
	bad_json("{" REQ_OK ",\"mem_per_cpu_mb\":5}", HB_ERANGE,
		 "request.mem_per_cpu_mb");
	bad_json("{" REQ_OK ",\"mem_per_cpu_mb\":\"-5\"}", HB_ERANGE,
		 "request.mem_per_cpu_mb");
	bad_json("{" REQ_OK ",\"mem_per_cpu_mb\":\"18446744073709551616\"}",
		 HB_ERANGE, "request.mem_per_cpu_mb");
	bad_json("{" REQ_OK ",\"mem_per_cpu_mb\":\"5x\"}", HB_ERANGE,
		 "request.mem_per_cpu_mb");
	bad_json("{" REQ_OK ",\"env\":\"A=1\"}", HB_EINVAL,
		 "request.env: not an array");
	bad_json("{" REQ_OK ",\"env\":[\"A=1\",2]}", HB_EINVAL,
		 "request.env[1]: not a string");
	/* then the checks any request gets */
	bad_json("{" REQ_OK ",\"env\":[\"A=1\",\"B\"]}", HB_EINVAL, "env[1]");
	bad_json("{\"script\":\"echo\",\"uid\":5,\"gid\":6,\"work_dir\":\"/\"}",
		 HB_EINVAL, "#!");
	bad_json("{" REQ_OK ",\"mem_per_cpu_mb\":\"1\",\"mem_per_node_mb\":"
		 "\"1\"}",
		 HB_ECONFLICT, "give one");
	{
		/* more environment entries than any request may have */
		struct hb_buf b;

		hb_buf_init(&b, 0);
		assert_int_equal(hb_buf_puts(&b, "{" REQ_OK ",\"env\":["), 0);
		for (int i = 0; i <= ENV_MAX; i++)
			assert_int_equal(
				hb_buf_puts(&b, i ? ",\"A=1\"" : "\"A=1\""), 0);
		assert_int_equal(hb_buf_puts(&b, "]}"), 0);
		bad_json(b.data, HB_ETOOBIG, "request.env: more than");
		hb_buf_free(&b);
	}
}

/* ------------------------------------------------ the child's program */

/* Run this program as the submission child (not dropping anything),
 * with text on its stdin and env as its environment; its answer. */
static int run_child(const char *text, char *const env[],
		     struct as_user_reply *r, struct hb_err *err)
{
	char *argv[] = { CHILD_NAME, HB_SLURMC_CHILD_ARG, NULL };
	int in, out[2], rc;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	memset(err, 0, sizeof(*err));
	in = request_file(text, strlen(text), err);
	assert_true(in >= 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in, 0);
		dup2(out[1], 1);
		execve(CHILD_EXE, argv, env);
		_exit(127);
	}
	close(in);
	close(out[1]);
	rc = as_user_wait(pid, out[0], -1, r, (uid_t)getuid(), err);
	close(out[0]);
	return rc;
}

static void test_child_main(void **state)
{
	char *argv_other[] = { "x", "--other", NULL };
	char *argv_more[] = { "x", HB_SLURMC_CHILD_ARG, "y", NULL };
	char conf_env[PATH_MAX + 16], req[512];
	char *env[] = { conf_env, NULL }, *no_env[] = { NULL };
	struct as_user_reply r;
	struct hb_err err;

	(void)state;
	/* not the child: returns at once */
	assert_int_equal(hb_slurmc_child_main(1, argv_other), -1);
	assert_int_equal(hb_slurmc_child_main(2, argv_other), -1);
	assert_int_equal(hb_slurmc_child_main(3, argv_more), -1);

	write_file("ok.conf", conf_text);
	snprintf(conf_env, sizeof(conf_env), "SLURM_CONF=%s",
		 tmp_path("ok.conf"));
	/* a request that does not parse */
	assert_int_equal(run_child("{\"script\":", env, &r, &err), 0);
	assert_int_equal(r.stage, AS_REQUEST);
	assert_non_null(strstr(r.text, "request: not JSON"));
	/* a request for another user than this process: refused */
	snprintf(req, sizeof(req),
		 "{\"script\":\"#!/bin/sh\\n\",\"uid\":%u,\"gid\":%u,"
		 "\"work_dir\":\"/\"}",
		 (unsigned)getuid() + 1, (unsigned)getgid());
	assert_int_equal(run_child(req, env, &r, &err), 0);
	assert_int_equal(r.stage, AS_DROP);
	assert_int_equal(r.err, EPERM);
	assert_non_null(strstr(r.text, "not the request's"));
	/* for this process's user: no SLURM_CONF, then Slurm's answer (no
	 * controller) */
	snprintf(req, sizeof(req),
		 "{\"script\":\"#!/bin/sh\\n\",\"uid\":%u,\"gid\":%u,"
		 "\"work_dir\":\"/\"}",
		 (unsigned)getuid(), (unsigned)getgid());
	assert_int_equal(run_child(req, no_env, &r, &err), 0);
	assert_int_equal(r.stage, AS_REQUEST);
	assert_non_null(strstr(r.text, "SLURM_CONF: not set"));
	assert_int_equal(run_child(req, env, &r, &err), 0);
	assert_int_equal(r.stage, AS_SLURM);
	assert_int_equal(hb_slurmc_errcode(r.err), HB_EUNAVAIL);
	unlink(tmp_path("ok.conf"));
}

/*
 * The deadlock a libslurm call in a forked child risked: between fork()
 * and execve() the child must not allocate (another thread may hold the
 * allocator's lock).  Under AddressSanitizer, a malloc hook ends any
 * process that allocates while its pid is not this one's, so a child
 * that allocated before execve() would die without an answer; meanwhile
 * another thread allocates without pause and holds stderr's lock (with
 * an allocation put back between fork() and execve(), the child hangs on
 * the allocator's lock, or dies in the hook).
 */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_MALLOC_HOOKS 1
int __sanitizer_install_malloc_and_free_hooks(
	void (*malloc_hook)(const volatile void *, size_t),
	void (*free_hook)(const volatile void *));

static volatile pid_t hook_pid; /* armed: the test's own pid */

static void hook_malloc(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	if (hook_pid && getpid() != hook_pid)
		_exit(99);
}

static void hook_free(const volatile void *p)
{
	hook_malloc(p, 0);
}
#endif

static volatile int churn_stop;

static void *churn(void *arg)
{
	(void)arg;
	flockfile(stderr);
	while (!churn_stop) {
		void *p[64];

		for (int i = 0; i < 64; i++)
			p[i] = malloc((size_t)(16 << (i % 12)));
		for (int i = 0; i < 64; i++)
			free(p[i]);
	}
	funlockfile(stderr);
	return NULL;
}

static void test_submit_no_alloc_after_fork(void **state)
{
	struct hb_slurmc *c = NULL;
	struct hb_slurmc_submit r;
	struct hb_err err = { 0 };
	pthread_t t;
	uint32_t id;
	int i, rc = 0;

	(void)state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	write_file("ok.conf", conf_text);
	assert_int_equal(hb_slurmc_open(tmp_path("ok.conf"), &c, &err), 0);
#ifdef HAVE_MALLOC_HOOKS
	assert_int_equal(__sanitizer_install_malloc_and_free_hooks(hook_malloc,
								   hook_free),
			 1);
	hook_pid = getpid();
#endif
	churn_stop = 0;
	assert_int_equal(pthread_create(&t, NULL, churn, NULL), 0);
	good_request(&r);
	r.as_user = true;
	r.uid = 65534;
	r.gid = 65534;
	/* a child that deadlocks fails the test in seconds */
	as_user_timeout_ms = 10000;
	/* each time the child gets as far as Slurm, which is not there */
	for (i = 0; i < 10; i++) {
		memset(&err, 0, sizeof(err));
		id = 0;
		rc = hb_slurmc_submit(c, &r, &id, &err);
		if (rc != HB_EUNAVAIL || !strstr(err.msg, "as uid 65534"))
			break;
	}
	/* the thread first: it holds stderr, where failures are told */
	as_user_timeout_ms = AS_USER_TIMEOUT_MS;
	churn_stop = 1;
	pthread_join(t, NULL);
#ifdef HAVE_MALLOC_HOOKS
	hook_pid = 0;
#endif
	if (i < 10)
		fail_msg("submission %d: %s (%s)", i, hb_errname(rc), err.msg);
	hb_slurmc_close(c);
	unlink(tmp_path("ok.conf"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_map),
		cmocka_unit_test(test_decode_exit),
		cmocka_unit_test(test_errcode),
		cmocka_unit_test(test_gres),
		cmocka_unit_test(test_submit_check),
		cmocka_unit_test(test_fill_desc),
		cmocka_unit_test(test_job_from_slurm),
		cmocka_unit_test(test_tres_normal),
		cmocka_unit_test(test_tres_gpus),
		cmocka_unit_test(test_tres_units),
		cmocka_unit_test(test_tres_garbage),
		cmocka_unit_test(test_gres_detail),
		cmocka_unit_test(test_job_alloc),
		cmocka_unit_test(test_acct_record),
		cmocka_unit_test(test_poll_final_alloc),
		cmocka_unit_test(test_poll_diff),
		cmocka_unit_test(test_node_state_text),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_open_no_controller),
		cmocka_unit_test(test_as_user_wait),
		cmocka_unit_test(test_drop_to),
		cmocka_unit_test(test_req_json),
		cmocka_unit_test(test_req_json_errors),
		cmocka_unit_test(test_child_main),
		cmocka_unit_test(test_submit_no_alloc_after_fork),
	};

	/* a submission as another user runs this program again */
	hb_slurmc_child_main(argc, argv);

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
