/*
 * test_qsub.c - hpcbridge qsub without a daemon: how its command line is
 * split into qsub options and the script, the pbs.queues map, the job id
 * as qsub prints it, and the wrapper Slurm receives, run with sh under
 * the SLURM_* values of a two-node job (a stand-in scontrol on PATH):
 * the user's script comes out byte for byte and sees PBS's variables.
 * gateway/cli/cmd_qsub.c is compiled into this program (the command is
 * no library); the CLI helpers it calls are stubbed below.
 * tests/integration/qsub.test.sh submits through a real Slurm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gateway/cli/cmd_qsub.c"
#include "testutil.h"

/* ---- stubs for the CLI helpers cmd_qsub.c calls ---- */
int hb_cli_read_file(const char *path, size_t max, struct hb_buf *b,
		     struct hb_err *err)
{
	size_t n;
	char *d = hb_test_read_file(path, &n);

	(void)max;
	hb_buf_init(b, 0);
	if (!d)
		return hb_err_set(err, HB_ENOENT, path, 0, "cannot read");
	hb_buf_append(b, d, n);
	free(d);
	return 0;
}

const char *hb_cli_config_path(const char *config)
{
	return config;
}

int hb_cli_load_config(const char *path, struct hb_config *cfg,
		       struct hb_err *err)
{
	(void)path;
	(void)err;
	return hb_config_defaults(cfg);
}

cJSON *hb_cli_submit_request(const char *cmd, const char *name,
			     const struct hb_buf *script)
{
	(void)cmd;
	(void)name;
	(void)script;
	return NULL;
}

int hb_cli_call(const char *cmd, const char *socket, const char *config,
		cJSON *req, cJSON **reply)
{
	(void)cmd;
	(void)socket;
	(void)config;
	cJSON_Delete(req);
	*reply = NULL;
	return HB_EXIT_REMOTE;
}

/* ---- the command line ---- */

static void test_args_split(void **state)
{
	char *argv[] = { "qsub", "-l", "nodes=2:ppn=4", "-N", "x", "-jMoe",
			 "-V", "-lwalltime=1:00", "--config=/c", "job.pbs",
			 NULL };
	struct qargs q;

	(void)state;
	assert_int_equal(qsub_args(10, argv, &q), 0);
	assert_string_equal(q.script, "job.pbs");
	assert_string_equal(q.config, "/c");
	/* "-jMoe": -j takes "Moe" (its value starts inside the word) */
	assert_int_equal(q.nopts, 7);
	assert_string_equal(q.opts[0], "-l");
	assert_string_equal(q.opts[1], "nodes=2:ppn=4");
	assert_string_equal(q.opts[4], "-jMoe");
	assert_string_equal(q.opts[5], "-V");
	assert_string_equal(q.opts[6], "-lwalltime=1:00");
	assert_false(q.quiet);
	{
		char *z[] = { "qsub", "-zV", "job.pbs", NULL };

		assert_int_equal(qsub_args(3, z, &q), 0);
		assert_true(q.quiet);
	}
}

static void test_args_stdin_and_refusals(void **state)
{
	char *a1[] = { "qsub", "-N", "x", NULL };
	char *a2[] = { "qsub", "-I", "job.pbs", NULL };
	char *a3[] = { "qsub", "-h", "job.pbs", NULL };
	char *a4[] = { "qsub", "job.pbs", "extra", NULL };
	char *a5[] = { "qsub", "-Y", "job.pbs", NULL };
	char *a6[] = { "qsub", "-l", NULL };
	char *a7[] = { "qsub", "--", "/bin/date", NULL };
	char *a8[] = { "qsub", "-", NULL };
	char *a9[] = { "qsub", "-F", "a b", "job.pbs", NULL };
	struct qargs q;

	(void)state;
	assert_int_equal(qsub_args(3, a1, &q), 0);
	assert_string_equal(q.script, "-");
	assert_int_equal(qsub_args(3, a2, &q), HB_EXIT_USAGE);
	assert_int_equal(qsub_args(3, a4, &q), HB_EXIT_USAGE);
	assert_int_equal(qsub_args(3, a5, &q), HB_EXIT_USAGE);
	assert_int_equal(qsub_args(2, a6, &q), HB_EXIT_USAGE);
	assert_int_equal(qsub_args(3, a7, &q), HB_EXIT_USAGE);
	assert_int_equal(qsub_args(2, a8, &q), 0);
	assert_string_equal(q.script, "-");
	/* -h and -F are qsub's own: nothing of them reaches the reader */
	assert_int_equal(qsub_args(3, a3, &q), 0);
	assert_true(q.hold);
	assert_int_equal(q.nopts, 0);
	qargs_free(&q);
	assert_int_equal(qsub_args(4, a9, &q), 0);
	assert_false(q.hold);
	assert_string_equal(q.args, "a b");
	assert_int_equal(q.nopts, 0);
	assert_string_equal(q.script, "job.pbs");
	qargs_free(&q);
}

/* -h and -F inside a word of options: the other letters stay. */
static void test_args_hold_and_arguments(void **state)
{
	char *a1[] = { "qsub", "-hVN", "x", "job.pbs", NULL };
	char *a2[] = { "qsub", "-VFone two", "-Nh", "job.pbs", NULL };
	char *a3[] = { "qsub", "-Vh", "-F", NULL };
	struct qargs q;

	(void)state;
	assert_int_equal(qsub_args(4, a1, &q), 0);
	assert_true(q.hold);
	assert_int_equal(q.nopts, 2);
	assert_string_equal(q.opts[0], "-VN");
	assert_string_equal(q.opts[1], "x");
	qargs_free(&q);
	/* -Nh: the h is -N's value (the job's name), not a hold */
	assert_int_equal(qsub_args(4, a2, &q), 0);
	assert_false(q.hold);
	assert_string_equal(q.args, "one two");
	assert_int_equal(q.nopts, 2);
	assert_string_equal(q.opts[0], "-V");
	assert_string_equal(q.opts[1], "-Nh");
	qargs_free(&q);
	assert_int_equal(qsub_args(3, a3, &q), HB_EXIT_USAGE);
	qargs_free(&q);
}

/* ---- the queue map and the job id ---- */

static void parse(struct hb_jobspec *s, const char *text,
		  const char *const *argv, int argc)
{
	struct hb_err err = { 0 };

	hb_jobspec_init(s, "job.pbs");
	assert_int_equal(hb_pbs_parse(text, strlen(text), "job.pbs", argv,
				      argc, s, &err),
			 0);
}

static void test_queue_map(void **state)
{
	struct hb_kv kv[] = { { "batch", "cpu" }, { "gpuq", "gpu" } };
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_err err = { 0 };
	const char *queue;
	const char *cli[] = { "-q", "gpuq" };

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.pbs_queues = kv;
	cfg.npbs_queues = 2;
	/* the script's queue, mapped */
	parse(&s, "#!/bin/sh\n#PBS -q batch\ntrue\n", NULL, 0);
	assert_int_equal(map_queue(&cfg, &s, &queue, &err), 0);
	assert_string_equal(queue, "batch");
	assert_string_equal(s.partition, "cpu");
	hb_jobspec_free(&s);
	/* the command line's wins */
	parse(&s, "#!/bin/sh\n#PBS -q batch\ntrue\n", cli, 2);
	assert_int_equal(map_queue(&cfg, &s, &queue, &err), 0);
	assert_string_equal(s.partition, "gpu");
	hb_jobspec_free(&s);
	/* a queue not in the map: refused, naming it and its line */
	parse(&s, "#!/bin/sh\n\n#PBS -q nosuch\ntrue\n", NULL, 0);
	assert_int_equal(map_queue(&cfg, &s, &queue, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "job.pbs:3"));
	assert_non_null(strstr(err.msg, "nosuch"));
	/* an empty map: the queue is the partition */
	cfg.npbs_queues = 0;
	assert_int_equal(map_queue(&cfg, &s, &queue, &err), 0);
	assert_string_equal(s.partition, "nosuch");
	hb_jobspec_free(&s);
}

/* PBS's default files, and a directory given to -o, name the job */
static void test_default_files(void **state)
{
	const char *cli[] = { "-o", "/out/", "-N", "a%b" };
	struct hb_jobspec s;

	(void)state;
	parse(&s, "#!/bin/sh\n#PBS -N run\ntrue\n", NULL, 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	assert_string_equal(s.output, "run.o%j");
	assert_string_equal(s.error, "run.e%j");
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/sh\n#PBS -N run\n#PBS -t 1-3\n#PBS -j oe\ntrue\n",
	      NULL, 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	assert_string_equal(s.output, "run.o%A-%a");
	assert_null(s.error);
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/sh\ntrue\n", cli, 4);
	assert_int_equal(default_files(&s, "/sub"), 0);
	assert_null(strstr(s.output, "%x"));
	assert_non_null(strstr(s.output, "/out/a%%b.o"));
	hb_jobspec_free(&s);
	/* PBS Pro's array tasks: NAME.oSEQ.INDEX */
	parse(&s, "#!/bin/sh\n#PBS -N run\n#PBS -J 1-3\ntrue\n", NULL, 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	assert_string_equal(s.output, "run.o%A.%a");
	assert_string_equal(s.error, "run.e%A.%a");
	hb_jobspec_free(&s);
}

/* -k oe keeps both streams in the home directory, whatever -o says; a
 * relative -o is the submit directory's, not -d's */
static void test_keep_and_relative(void **state)
{
	const struct passwd *pw = getpwuid(getuid());
	char want[600];
	struct hb_jobspec s;

	(void)state;
	assert_non_null(pw);
	parse(&s, "#!/bin/sh\n#PBS -N k\n#PBS -k oe\n#PBS -o x.log\ntrue\n",
	      NULL, 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	snprintf(want, sizeof(want), "%s/k.o%%j", pw->pw_dir);
	assert_string_equal(s.output, want);
	snprintf(want, sizeof(want), "%s/k.e%%j", pw->pw_dir);
	assert_string_equal(s.error, want);
	assert_non_null(strstr(s.directives[1].note, "home directory"));
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/sh\n#PBS -N r\n#PBS -d /elsewhere\n#PBS -o r.out\n"
		  "true\n", NULL, 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	assert_string_equal(s.output, "/sub/r.out");
	assert_string_equal(s.error, "/sub/r.e%j");
	hb_jobspec_free(&s);
	/* without -d, Slurm's reading is PBS's: left relative */
	parse(&s, "#!/bin/sh\n#PBS -N r\n#PBS -o r.out\ntrue\n", NULL, 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	assert_string_equal(s.output, "r.out");
	hb_jobspec_free(&s);
	/* a '%' in the submit directory or the name is no Slurm pattern:
	 * doubled, so the files land where PBS puts them */
	parse(&s, "#!/bin/sh\n#PBS -N a%jb\n#PBS -d /elsewhere\n"
		  "#PBS -o r.out\ntrue\n", NULL, 0);
	assert_int_equal(default_files(&s, "/run%j"), 0);
	assert_string_equal(s.output, "/run%%j/r.out");
	assert_string_equal(s.error, "/run%%j/a%%jb.e%j");
	hb_jobspec_free(&s);
}

static void test_jobid(void **state)
{
	struct hb_config cfg;
	char buf[64], host[64];

	(void)state;
	format_jobid(123, false, "srv", buf, sizeof(buf));
	assert_string_equal(buf, "123.srv");
	format_jobid(77, true, "srv", buf, sizeof(buf));
	assert_string_equal(buf, "77[].srv");
	memset(&cfg, 0, sizeof(cfg));
	cfg.pbs_server_name = "pbs01";
	hb_cli_pbs_server(&cfg, host, sizeof(host));
	assert_string_equal(host, "pbs01");
	cfg.pbs_server_name = NULL;
	hb_cli_pbs_server(&cfg, host, sizeof(host));
	assert_null(strchr(host, '.'));
	assert_true(host[0] != '\0');
}

/* ---- the wrapper, run ---- */

/* Write text to path (mode). */
static void put_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* A script without a final newline and with quotes, $ and a #PBS line
 * further down, which must all reach the job unchanged. */
static const char user_script[] =
	"#!/bin/sh\n"
	"#PBS -N pbsvars\n"
	"#PBS -l nodes=2:ppn=3\n"
	"echo \"jobid=$PBS_JOBID\"\n"
	"echo \"name=$PBS_JOBNAME nodes=$PBS_NUM_NODES ppn=$PBS_NUM_PPN "
	"np=$PBS_NP\"\n"
	"echo \"workdir=$PBS_O_WORKDIR queue=$PBS_QUEUE env=$PBS_ENVIRONMENT\"\n"
	"echo \"nodefile=$(tr '\\n' ' ' <\"$PBS_NODEFILE\")\"\n"
	"echo 'quote '\\''$HOME'\\'''\n"
	"cp \"$0\" \"$OUTDIR/copy\"\n"
	"echo \"args=$#:$1:$2\"\n"
	"[ \"$3 $4\" = '$(touch${IFS}pwned) `touch${IFS}p2`' ] || exit 9\n"
	"#PBS -q ignored\n"
	"exit 7";

static void test_wrapper_runs(void **state)
{
	char dir[] = "/tmp/test_qsub.XXXXXX", path[512], cmd[1536];
	struct hb_kv kv[] = { { "batch", "debug" } };
	struct hb_config cfg;
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = { 0 };
	struct hb_buf out;
	const char *queue;
	const char *cli[] = { "-q", "batch" };
	char *got;
	size_t n;
	int rc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(&cfg, 0, sizeof(cfg));
	cfg.pbs_queues = kv;
	cfg.npbs_queues = 1;
	parse(&s, user_script, cli, 2);
	assert_int_equal(map_queue(&cfg, &s, &queue, &err), 0);
	assert_int_equal(default_files(&s, "/sub"), 0);
	hb_buf_init(&out, 0);
	hb_report_init(&rep, "sbatch");
	assert_int_equal(build_wrapper(&s, user_script, strlen(user_script),
				       queue, "srv", "/sub/dir",
				       "a 'b\t$(touch${IFS}pwned) `touch${IFS}p2`",
				       &out,
				       &rep, &err),
			 0);
	/* Slurm reads the job's shape from the #SBATCH lines */
	assert_non_null(strstr(out.data, "#SBATCH --nodes=2\n"));
	assert_non_null(strstr(out.data, "#SBATCH --ntasks-per-node=3\n"));
	assert_non_null(strstr(out.data, "#SBATCH --partition=debug\n"));
	/* PBS's file names, not Slurm's slurm-ID.out */
	assert_non_null(strstr(out.data, "#SBATCH --output=pbsvars.o%j\n"));
	assert_non_null(strstr(out.data, "#SBATCH --error=pbsvars.e%j\n"));
	assert_int_equal(strncmp(out.data, "#!/bin/sh\n", 10), 0);
	snprintf(path, sizeof(path), "%s/slurm_script", dir);
	put_file(path, out.data, 0700);
	snprintf(path, sizeof(path), "%s/scontrol", dir);
	put_file(path, "#!/bin/sh\n[ \"$1 $2 $3\" = 'show hostnames n[1-2]' ] "
		       "&& printf 'n1\\nn2\\n'\n",
		 0700);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && env -i PATH=%s:/usr/bin:/bin HOME=/h TMPDIR=%s "
		 "OUTDIR=%s SLURM_JOB_ID=42 SLURM_JOB_NAME=pbsvars "
		 "SLURM_JOB_NUM_NODES=2 SLURM_TASKS_PER_NODE='3(x2)' "
		 "SLURM_JOB_NODELIST='n[1-2]' SLURM_JOB_PARTITION=debug "
		 "SLURM_SUBMIT_DIR=/sub/dir ./slurm_script >out 2>err",
		 dir, dir, dir, dir);
	rc = system(cmd);
	assert_true(WIFEXITED(rc));
	assert_int_equal(WEXITSTATUS(rc), 7);
	snprintf(path, sizeof(path), "%s/out", dir);
	got = hb_test_read_file(path, &n);
	assert_non_null(got);
	assert_non_null(strstr(got, "jobid=42.srv\n"));
	assert_non_null(strstr(got, "name=pbsvars nodes=2 ppn=3 np=6\n"));
	assert_non_null(
		strstr(got, "workdir=/sub/dir queue=batch env=PBS_BATCH\n"));
	assert_non_null(strstr(got, "nodefile=n1 n1 n1 n2 n2 n2 \n"));
	assert_non_null(strstr(got, "quote '$HOME'\n"));
	/* -F's words reach the script as they are, none run */
	assert_non_null(strstr(got, "args=4:a:'b\n"));
	free(got);
	/* the script the job ran is the user's, byte for byte (and a
	 * final newline) */
	snprintf(path, sizeof(path), "%s/copy", dir);
	got = hb_test_read_file(path, &n);
	assert_non_null(got);
	assert_int_equal(n, strlen(user_script) + 1);
	assert_memory_equal(got, user_script, strlen(user_script));
	assert_int_equal(got[n - 1], '\n');
	free(got);
	/* the private copy and the node file are gone */
	snprintf(cmd, sizeof(cmd),
		 "test -z \"$(ls %s | grep -v -e slurm_script -e scontrol "
		 "-e out -e err -e copy)\"",
		 dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	hb_buf_free(&out);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* A script without "#!" runs with the login shell (sh here at worst) */
static void test_wrapper_noshebang(void **state)
{
	static const char text[] = "#PBS -N plain\necho \"plain $PBS_JOBID\"\n";
	char dir[] = "/tmp/test_qsub.XXXXXX", cmd[1024], path[512];
	struct hb_jobspec s;
	struct hb_report rep;
	struct hb_err err = { 0 };
	struct hb_buf out;
	char *got;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	parse(&s, text, NULL, 0);
	assert_null(s.interpreter);
	hb_buf_init(&out, 0);
	hb_report_init(&rep, "sbatch");
	assert_int_equal(build_wrapper(&s, text, strlen(text), NULL, "srv",
				       "/w", NULL, &out, &rep, &err),
			 0);
	snprintf(path, sizeof(path), "%s/slurm_script", dir);
	put_file(path, out.data, 0700);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && env -i PATH=/usr/bin:/bin TMPDIR=%s "
		 "SLURM_JOB_ID=9 ./slurm_script >out 2>&1",
		 dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/out", dir);
	got = hb_test_read_file(path, &n);
	assert_non_null(got);
	assert_non_null(strstr(got, "plain 9.srv\n"));
	free(got);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	hb_buf_free(&out);
	hb_report_free(&rep);
	hb_jobspec_free(&s);
}

/* -h: "#SBATCH --hold" second, for sbatch; refused for the daemon. */
static void test_hold(void **state)
{
	static const char text[] = "#!/bin/sh\n#PBS -N held\n#PBS -h\ntrue\n";
	struct hb_config cfg;
	struct hb_err err = { 0 };
	struct hb_buf out;
	struct hb_jobspec s;

	(void)state;
	parse(&s, text, NULL, 0);
	assert_true(script_hold(&s));
	assert_non_null(strstr(s.directives[1].note, "held"));
	hb_jobspec_free(&s);
	parse(&s, "#!/bin/sh\n#PBS -N free\ntrue\n", NULL, 0);
	assert_false(script_hold(&s));
	hb_jobspec_free(&s);
	memset(&cfg, 0, sizeof(cfg));
	cfg.pbs_submit = "sbatch";
	hb_buf_init(&out, 0);
	assert_int_equal(hb_buf_puts(&out, "#!/bin/sh\n#SBATCH -N1\n"), 0);
	assert_int_equal(put_hold(&cfg, &out, &err), 0);
	assert_string_equal(out.data,
			    "#!/bin/sh\n#SBATCH --hold\n#SBATCH -N1\n");
	cfg.pbs_submit = "daemon";
	assert_int_not_equal(put_hold(&cfg, &out, &err), 0);
	assert_non_null(strstr(err.msg, "pbs.submit: sbatch"));
	hb_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args_split),
		cmocka_unit_test(test_args_stdin_and_refusals),
		cmocka_unit_test(test_args_hold_and_arguments),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_queue_map),
		cmocka_unit_test(test_default_files),
		cmocka_unit_test(test_keep_and_relative),
		cmocka_unit_test(test_jobid),
		cmocka_unit_test(test_wrapper_runs),
		cmocka_unit_test(test_wrapper_noshebang),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
