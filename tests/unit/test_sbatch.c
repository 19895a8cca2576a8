/*
 * test_sbatch.c - the sbatch reader, case by case against what Slurm
 * 22.05's sbatch does with the same script (each expectation below was
 * checked with sbatch --hold and scontrol show job).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/sbatch.h"
#include "testutil.h"

static struct hb_jobspec spec;
static struct hb_err err;

static int parse_opts(const char *script, const char *const *envp,
		      const char *const *argv)
{
	struct hb_sbatch_opts o = {envp, argv, 0};

	while (argv && argv[o.argc])
		o.argc++;
	hb_jobspec_free(&spec);
	hb_jobspec_init(&spec, "job.sh");
	memset(&err, 0, sizeof(err));
	return hb_sbatch_parse(script, strlen(script), "job.sh", &o, &spec,
			       &err);
}

static int parse(const char *script)
{
	return parse_opts(script, NULL, NULL);
}

/* Parse; fail the test with the error if it does not succeed. */
static void ok(const char *script)
{
	if (parse(script))
		fail_msg("rejected: %s\n%s", err.msg, script);
}

/* Parse; expect an error whose message contains want. */
static void bad(const char *script, int code, const char *want)
{
	int rc = parse(script);

	if (rc == 0)
		fail_msg("accepted, want '%s':\n%s", want, script);
	if (code && rc != code)
		fail_msg("rc %d, want %d (%s)", rc, code, err.msg);
	if (!strstr(err.msg, want))
		fail_msg("message '%s' lacks '%s'", err.msg, want);
}

static const struct hb_directive *find_dir(const char *text)
{
	for (uint32_t i = 0; i < spec.ndirectives; i++)
		if (strcmp(spec.directives[i].text, text) == 0)
			return &spec.directives[i];
	fail_msg("no directive '%s'", text);
	return NULL;
}

static bool dir_has(const struct hb_directive *d, enum hb_field f)
{
	for (uint8_t i = 0; i < d->nfields; i++)
		if (d->fields[i] == f)
			return true;
	return false;
}

#define SH "#!/bin/bash\n"

static void test_basic_fields(void **state)
{
	(void)state;
	ok(SH "#SBATCH --job-name=cfd -A proj -p gpu --qos=high\n"
	      "#SBATCH --comment='a b' -N 2-4 -n 16 --ntasks-per-node=8\n"
	      "#SBATCH -c 4 --mem=4G --gres=gpu:a100:2 -L matlab:1\n"
	      "#SBATCH --exclusive -C ib -w n[1-2] -x n9 -t 1-2:30\n"
	      "#SBATCH --time-min=30 --begin=now+1hour --deadline=2035-01-01\n"
	      "#SBATCH --signal=B:USR1@60 -o o.%j -e e.%j -i /dev/null\n"
	      "#SBATCH -D /scratch --array=0-9%2 -d singleton\n"
	      "#SBATCH --mail-type=END --mail-user=a@b --requeue\n"
	      "#SBATCH --export=ALL --container=/c --uid=alice\n"
	      "srun ./a.out\n");
	assert_string_equal(spec.name, "cfd");
	assert_string_equal(spec.account, "proj");
	assert_string_equal(spec.partition, "gpu");
	assert_string_equal(spec.qos, "high");
	assert_string_equal(spec.comment, "a b");
	assert_int_equal(spec.nodes_min, 2);
	assert_int_equal(spec.nodes_max, 4);
	assert_int_equal(spec.ntasks, 16);
	assert_int_equal(spec.ntasks_per_node, 8);
	assert_int_equal(spec.cpus_per_task, 4);
	assert_int_equal(spec.mem_kind, HB_MEM_PER_NODE);
	assert_true(spec.mem_mb == 4096);
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(spec.gpus, 2);
	assert_string_equal(spec.gpu_type, "a100");
	assert_string_equal(spec.licenses, "matlab:1");
	assert_true(spec.exclusive);
	assert_string_equal(spec.constraint, "ib");
	assert_string_equal(spec.nodelist, "n[1-2]");
	assert_string_equal(spec.exclude, "n9");
	assert_true(spec.time_limit == (86400 + 2 * 3600 + 30 * 60));
	assert_true(spec.time_min == 1800);
	assert_string_equal(spec.begin, "now+1hour");
	assert_string_equal(spec.deadline, "2035-01-01");
	assert_string_equal(spec.signal, "B:USR1@60");
	assert_string_equal(spec.output, "o.%j");
	assert_string_equal(spec.error, "e.%j");
	assert_string_equal(spec.input, "/dev/null");
	assert_string_equal(spec.chdir, "/scratch");
	assert_string_equal(spec.array, "0-9%2");
	assert_int_equal(spec.narray_ranges, 1);
	assert_int_equal(spec.array_max_running, 2);
	assert_string_equal(spec.dependency, "singleton");
	assert_string_equal(spec.mail_type, "END");
	assert_string_equal(spec.mail_user, "a@b");
	assert_int_equal(spec.requeue, 1);
	assert_string_equal(spec.export_spec, "ALL");
	assert_string_equal(spec.container, "/c");
	assert_string_equal(spec.user, "alice");
	assert_string_equal(spec.interpreter, "/bin/bash");
	assert_int_equal(spec.source, HB_SRC_SBATCH);
	assert_non_null(spec.script);
	assert_true(hb_jobspec_has(&spec, HB_F_TIME_LIMIT));
	assert_int_equal(spec.prov[HB_F_NODES].kind, HB_PROV_FILE);
	assert_int_equal(spec.prov[HB_F_NODES].line, 3);
	assert_int_equal(spec.prov[HB_F_MAIL_USER].line, 9);
	assert_true(dir_has(find_dir("-N 2-4"), HB_F_NODES));
	assert_true(dir_has(find_dir("--gres=gpu:a100:2"), HB_F_GPUS));
	assert_int_equal(find_dir("--export=ALL")->kind, HB_DIR_SBATCH);
	assert_int_equal(find_dir("-t 1-2:30")->prov.line, 5);
}

static void test_tokenizer(void **state)
{
	(void)state;
	/* quotes group, the '#' inside them is kept */
	ok(SH "#SBATCH --job-name=\"Big Run #2\" --comment='x \"y\"'\n");
	assert_string_equal(spec.name, "Big Run #2");
	assert_string_equal(spec.comment, "x \"y\"");
	/* an unquoted # ends the line, even inside a word */
	ok(SH "#SBATCH -J a#b -N 3\n");
	assert_string_equal(spec.name, "a");
	assert_int_equal(spec.nodes_min, 0);
	/* a backslash escapes a character, not white space */
	ok(SH "#SBATCH -J a\\#b\\\"c\n");
	assert_string_equal(spec.name, "a#b\"c");
	bad(SH "#SBATCH --comment=a\\ b\n", HB_EINVAL,
	    "job.sh:2: invalid directive found in batch script: b");
	/* quotes may open mid-word; the backslash works inside them */
	ok(SH "#SBATCH -J pre\"fix 'x' \\\"\"post\n");
	assert_string_equal(spec.name, "prefix 'x' \"post");
	/* an empty argument ends the line: -N 2 is never seen */
	bad(SH "#SBATCH --comment \"\" -N 2\n", HB_EINVAL,
	    "option '--comment' requires an argument");
	/* "hetjob" as a later argument is blanked: the value comes from
	 * the next line */
	ok(SH "#SBATCH -J hetjob\n#SBATCH foo\n");
	assert_string_equal(spec.name, "foo");
	/* a trailing comment after options */
	ok(SH "#SBATCH -N 2   # two nodes -N 3\n");
	assert_int_equal(spec.nodes_min, 2);
	bad(SH "#SBATCH -J \"open\n", HB_EINVAL, "job.sh:2: unmatched \"");
	bad(SH "#SBATCH -J x\n#SBATCH :foo\n", HB_EINVAL,
	    "job.sh:3: unexpected ':'");
	ok(SH "#SBATCH -J x:foo\n");
	assert_string_equal(spec.name, "x:foo");
	/* #SBATCH is a prefix: "#SBATCH-N2" is -N2 */
	ok(SH "#SBATCH-N2\n");
	assert_int_equal(spec.nodes_min, 2);
	bad(SH "#SBATCHX -N2\n", HB_EINVAL,
	    "invalid directive found in batch script: X");
	ok(SH "#SLURM -N3\n");
	assert_int_equal(spec.nodes_min, 3);
	/* tabs and runs of blanks */
	ok(SH "#SBATCH\t -N\t 2  -n 4\n");
	assert_int_equal(spec.ntasks, 4);
	/* an option's value may be on the next #SBATCH line */
	ok(SH "#SBATCH --time\n#SBATCH 10\n");
	assert_true(spec.time_limit == 600);
	assert_int_equal(spec.prov[HB_F_TIME_LIMIT].line, 2);
	assert_string_equal(find_dir("--time 10")->text, "--time 10");
}

static void test_scan_stops(void **state)
{
	(void)state;
	/* comments and blanks do not stop the scan, a command does */
	ok(SH "# comment\n\n   \n  # indented comment\n#SBATCH -N 2\n"
	      "echo hi\n#SBATCH -N 5\n");
	assert_int_equal(spec.nodes_min, 2);
	assert_int_equal(spec.prov[HB_F_NODES].line, 6);
	/* an indented #SBATCH is only a comment */
	ok(SH " #SBATCH -N 2\n#SBATCH -n 3\n");
	assert_int_equal(spec.nodes_min, 0);
	assert_int_equal(spec.ntasks, 3);
	/* nothing after the first command */
	ok(SH "hostname\n#SBATCH -N 2\n");
	assert_int_equal(spec.nodes_min, 0);
	{
		const char *a = SH "hostname\n#SBATCH -N 2\n";
		const char *b = SH "# x\n#SBATCH -N 2\n";
		const char *c = "#PBS -l nodes=1\n";

		assert_int_equal(hb_sbatch_detect(a, strlen(a)), 0);
		assert_int_equal(hb_sbatch_detect(b, strlen(b)), 1);
		assert_int_equal(hb_sbatch_detect(b, 14), 0);
		assert_int_equal(hb_sbatch_detect(c, strlen(c)), 0);
	}
	assert_int_equal(hb_sbatch_detect(NULL, 0), 0);
}

static void test_getopt(void **state)
{
	(void)state;
	/* unique prefixes, and exact names that are prefixes of others */
	ok(SH "#SBATCH --ntasks-per-no=3 --job=x --cluster=c1\n");
	assert_int_equal(spec.ntasks_per_node, 3);
	assert_string_equal(spec.name, "x");
	bad(SH "#SBATCH --nod=3\n", HB_EINVAL, "'--nodefile' '--nodelist'");
	bad(SH "#SBATCH --co=x\n", HB_EINVAL,
	    "job.sh:2: option '--co=x' is ambiguous; possibilities:");
	bad(SH "#SBATCH --ntasks-per=2\n", HB_EINVAL, "is ambiguous");
	/* ntasks-per-node and its old name tasks-per-node are one option */
	ok(SH "#SBATCH --tasks-per-node=3\n");
	assert_int_equal(spec.ntasks_per_node, 3);
	/* short options: attached, separate, clustered, optional args */
	ok(SH "#SBATCH -N2 -n 4 -HJname -kset\n");
	assert_int_equal(spec.nodes_min, 2);
	assert_int_equal(spec.ntasks, 4);
	assert_string_equal(spec.name, "name");
	assert_non_null(find_dir("-H")->note);
	assert_int_equal(find_dir("-kset")->nfields, 0);
	/* -k takes an optional argument, so "c3" is its argument */
	bad(SH "#SBATCH -kc3\n", HB_EINVAL, "invalid --no-kill");
	bad(SH "#SBATCH --foo\n", HB_EINVAL,
	    "job.sh:2: unrecognized option '--foo'");
	bad(SH "#SBATCH -N 1\n#SBATCH -Z\n", HB_EINVAL,
	    "job.sh:3: invalid option -- 'Z'");
	bad(SH "#SBATCH -N\n", HB_EINVAL, "option requires an argument -- 'N'");
	bad(SH "#SBATCH --hold=yes\n", HB_EINVAL,
	    "option '--hold' doesn't allow an argument");
	bad(SH "#SBATCH --exclusive user\n", HB_EINVAL,
	    "invalid directive found in batch script: user");
	bad(SH "#SBATCH - -N 2\n", HB_EINVAL,
	    "invalid directive found in batch script: -");
	/* "--" ends the options; anything after it is a bad directive */
	ok(SH "#SBATCH -N 2 --\n");
	bad(SH "#SBATCH -- -N 2\n", HB_EINVAL,
	    "invalid directive found in batch script: -N");
	/* options sbatch reads only on its own command line are ignored */
	ok(SH "#SBATCH --help --version --wrap=x -v -Q\n");
	assert_non_null(find_dir("--help")->note);
	assert_int_equal(find_dir("--wrap=x")->nfields, 0);
}

static void test_script_checks(void **state)
{
	char big[64];

	(void)state;
	bad("", HB_EINVAL, "job.sh: batch script is empty");
	bad("  \n\t\n", HB_EINVAL, "only white space");
	bad("hostname\n", HB_EINVAL, "job.sh:1: this does not look like");
	bad("#!/bin/sh\n#SBATCH -N 2\r\nhostname\r\n", HB_EINVAL,
	    "job.sh:2: batch script contains DOS line breaks");
	bad("#!/bin/sh\necho a\nhost\033name\n", HB_EINVAL,
	    "job.sh:3: batch script contains a control character");
	/* a NUL byte, found with its line */
	{
		const char s[] = "#!/bin/sh\n#SBATCH -N 1\nx\0y\n";

		hb_jobspec_free(&spec);
		hb_jobspec_init(&spec, "job.sh");
		memset(&err, 0, sizeof(err));
		assert_int_equal(hb_sbatch_parse(s, sizeof(s) - 1, "job.sh",
						 NULL, &spec, &err),
				 HB_EINVAL);
		assert_non_null(strstr(err.msg, "job.sh:3: "));
		assert_non_null(strstr(err.msg, "NUL"));
	}
	/* the buffer need not be NUL-terminated */
	memcpy(big, SH "#SBATCH -N 7\nhostnameXXXX", 38);
	hb_jobspec_free(&spec);
	hb_jobspec_init(&spec, "job.sh");
	assert_int_equal(hb_sbatch_parse(big, 34, "j", NULL, &spec, &err), 0);
	assert_int_equal(spec.nodes_min, 7);
	assert_int_equal(spec.script_len, 34);
	assert_int_equal(spec.script[34], '\0');
	/* over the size cap */
	{
		size_t n = HB_SCRIPT_MAX + 1;
		char *s = malloc(n);

		assert_non_null(s);
		memset(s, '#', n);
		s[1] = '!';
		hb_jobspec_free(&spec);
		hb_jobspec_init(&spec, "job.sh");
		memset(&err, 0, sizeof(err));
		assert_int_equal(
		    hb_sbatch_parse(s, n, "job.sh", NULL, &spec, &err),
		    HB_ETOOBIG);
		free(s);
	}
	/* the interpreter line */
	ok("#!  /usr/bin/env   bash  \n#SBATCH -N 1\n");
	assert_string_equal(spec.interpreter, "/usr/bin/env   bash");
	ok("#!\n#SBATCH -N 1\n");
	assert_null(spec.interpreter);
	/* heterogeneous jobs are refused, not half read */
	bad(SH "#SBATCH -N 1\n#SBATCH hetjob\n#SBATCH -N 2\n", HB_EUNSUP,
	    "job.sh:3: heterogeneous job");
	bad(SH "#SBATCH packjob\n", HB_EUNSUP, "heterogeneous");
}

static void test_times(void **state)
{
	(void)state;
	ok(SH "#SBATCH -t 0\n");
	assert_true(spec.time_limit == HB_TIME_UNLIMITED);
	ok(SH "#SBATCH -t 5-\n");
	assert_true(spec.time_limit == 5 * 86400);
	ok(SH "#SBATCH -t 0:30\n"); /* rounded up to a minute */
	assert_true(spec.time_limit == 60);
	ok(SH "#SBATCH -t UNLIMITED --time-min=infinite\n");
	assert_true(spec.time_limit == HB_TIME_UNLIMITED);
	assert_true(spec.time_min == HB_TIME_UNLIMITED);
	bad(SH "#SBATCH -t 1:2:3:4\n", HB_EINVAL,
	    "job.sh:2: invalid --time specification '1:2:3:4'");
	bad(SH "#SBATCH --time-min=1h\n", HB_EINVAL,
	    "invalid --time-min specification '1h'");
	bad(SH "#SBATCH -t 99999999999\n", HB_ERANGE, "job.sh:2: --time:");
	/* dates as parse_time() reads them */
	ok(SH "#SBATCH --begin=16:00 --deadline=2030-01-05T10:00:00\n");
	ok(SH "#SBATCH --begin=tomorrow --deadline=12/25/30\n");
	ok(SH "#SBATCH --begin=now+90minutes\n");
	ok(SH "#SBATCH --begin=10:30pm\n");
	ok(SH "#SBATCH --begin=uts2000000000\n");
	bad(SH "#SBATCH --begin=garbage\n", HB_EINVAL, "invalid --begin");
	bad(SH "#SBATCH --begin=25:00\n", HB_EINVAL, "invalid --begin");
	bad(SH "#SBATCH --begin=now+\n", HB_EINVAL, "invalid --begin");
	bad(SH "#SBATCH --deadline=13/01\n", HB_EINVAL, "invalid --deadline");
	bad(SH "#SBATCH --begin=T\n", HB_EINVAL, "invalid --begin");
	/* a minimum above the limit is refused, as slurmctld does */
	bad(SH "#SBATCH -t 10 --time-min=20\n", HB_EINVAL,
	    "job.sh:2: invalid --time-min specification (exceeds");
	bad(SH "#SBATCH -t 10 --time-min=0\n", HB_EINVAL, "exceeds");
	ok(SH "#SBATCH -t 0 --time-min=20\n");
}

static void test_memory(void **state)
{
	const char *env_cpu[] = {"SBATCH_MEM_PER_CPU=1G", NULL};
	const char *env_both[] = {"SBATCH_MEM_PER_CPU=1G",
				  "SBATCH_MEM_PER_NODE=8G", NULL};
	const char *cli_cpu[] = {"--mem-per-cpu=2G", NULL};

	(void)state;
	ok(SH "#SBATCH --mem=0\n");
	assert_int_equal(spec.mem_kind, HB_MEM_PER_NODE);
	assert_true(spec.mem_mb == 0);
	assert_true(hb_jobspec_has(&spec, HB_F_MEM));
	ok(SH "#SBATCH --mem=1025K\n");
	assert_true(spec.mem_mb == 2);
	ok(SH "#SBATCH --mem-per-cpu=1500\n");
	assert_int_equal(spec.mem_kind, HB_MEM_PER_CPU);
	assert_true(spec.mem_mb == 1500);
	ok(SH "#SBATCH --mem-per-gpu=40G --gres=gpu:2\n");
	assert_int_equal(spec.mem_kind, HB_MEM_PER_GPU);
	assert_true(spec.mem_mb == 40960);
	bad(SH "#SBATCH --mem-per-gpu=40G\n", HB_EINVAL,
	    "job.sh:2: requested memory per GPU but did not request any GPU");
	bad(SH "#SBATCH --mem=4GiB\n", HB_EINVAL,
	    "invalid --mem specification");
	bad(SH "#SBATCH --mem=-1\n", HB_EINVAL, "invalid --mem");
	bad(SH "#SBATCH --mem=9999999999999999T\n", HB_ERANGE, "--mem: size");
	/* two of them in the script, or script and command line: Slurm's
	 * own message */
	bad(SH "#SBATCH --mem=4G\n#SBATCH --mem-per-cpu=1G\n", HB_ECONFLICT,
	    "job.sh:3: --mem, --mem-per-cpu, and --mem-per-gpu are mutually "
	    "exclusive.");
	assert_int_not_equal(parse_opts(SH "#SBATCH --mem=4G\n", NULL, cli_cpu),
			     0);
	assert_non_null(strstr(err.msg, "mutually exclusive"));
	/* an environment variable yields to a directive of another kind */
	assert_int_equal(parse_opts(SH "#SBATCH --mem=4G\n", env_cpu, NULL), 0);
	assert_int_equal(spec.mem_kind, HB_MEM_PER_NODE);
	assert_true(spec.mem_mb == 4096);
	assert_non_null(strstr(find_dir("SBATCH_MEM_PER_CPU=1G")->note,
			       "overridden by '--mem=4G' at line 2"));
	/* ... and overrides the same kind */
	assert_int_equal(
	    parse_opts(SH "#SBATCH --mem-per-cpu=4G\n", env_cpu, NULL), 0);
	assert_true(spec.mem_mb == 1024);
	assert_int_equal(spec.prov[HB_F_MEM].kind, HB_PROV_ENV);
	/* two kinds in the environment conflict */
	assert_int_equal(parse_opts(SH "hostname\n", env_both, NULL),
			 HB_ECONFLICT);
	/* the command line overrides an environment variable */
	assert_int_equal(parse_opts(SH "hostname\n", env_both, cli_cpu), 0);
	assert_int_equal(spec.mem_kind, HB_MEM_PER_CPU);
	assert_true(spec.mem_mb == 2048);
	assert_int_equal(spec.prov[HB_F_MEM].kind, HB_PROV_CLI);
}

static void test_counts(void **state)
{
	(void)state;
	ok(SH "#SBATCH -N 3\n");
	assert_int_equal(spec.nodes_min, 3);
	assert_int_equal(spec.nodes_max, 3);
	ok(SH "#SBATCH -N 1k\n");
	assert_int_equal(spec.nodes_min, 1024);
	bad(SH "#SBATCH -N 2-\n", HB_EINVAL, "maximum node count -1");
	ok(SH "#SBATCH -N -3\n"); /* an empty minimum is 1 */
	assert_int_equal(spec.nodes_min, 1);
	assert_int_equal(spec.nodes_max, 3);
	bad(SH "#SBATCH -N 3-2\n", HB_EINVAL, "maximum node count 2 is less");
	bad(SH "#SBATCH -N 2x\n", HB_EINVAL, "not a valid node count");
	bad(SH "#SBATCH -N 0\n", HB_EUNSUP, "no nodes");
	bad(SH "#SBATCH -N 9999999999\n", HB_ERANGE, "too large");
	bad(SH "#SBATCH -N 99999999999999999999999k\n", HB_ERANGE, "too large");
	bad(SH "#SBATCH -N 3000000k\n", HB_ERANGE, "too large");
	bad(SH "#SBATCH -B -99999999999999k\n", HB_EINVAL, "extra-node-info");
	bad(SH "#SBATCH -N 2 -B 2147483647:2147483647:2147483647\n", HB_EUNSUP,
	    "task count");
	/* fewer tasks than nodes: sbatch shrinks the node count */
	ok(SH "#SBATCH -N 4 -n 2\n");
	assert_int_equal(spec.nodes_min, 2);
	assert_int_equal(spec.nodes_max, 2);
	assert_non_null(strstr(find_dir("-N 4")->note, "node count to 2"));
	ok(SH "#SBATCH -N 1-8 -n 4\n");
	assert_int_equal(spec.nodes_max, 4);
	/* a node list sets the node count */
	ok(SH "#SBATCH -w n[01-03],x1\n");
	assert_int_equal(spec.nodes_min, 4);
	assert_true(dir_has(find_dir("-w n[01-03],x1"), HB_F_NODES));
	ok(SH "#SBATCH -w n1,n1 -N 1\n");
	assert_int_equal(spec.nodes_min, 1);
	bad(SH "#SBATCH -w n[1-3] -N 2\n", HB_EINVAL,
	    "invalid number of nodes (-N 3-2)");
	/* the node topology request implies tasks */
	ok(SH "#SBATCH -B 2:4:1 -N 2\n");
	assert_int_equal(spec.ntasks, 16);
	ok(SH "#SBATCH --sockets-per-node=2\n");
	assert_int_equal(spec.ntasks, 0); /* no -N, no -B: nothing derived */
	/* --hint replaces the topology request, or yields to -B */
	ok(SH "#SBATCH -N 4 --hint=nomultithread --cores-per-socket=4\n");
	assert_int_equal(spec.ntasks, 4);
	ok(SH "#SBATCH -N 2 --hint=memory_bound -B 2:4\n");
	assert_int_equal(spec.ntasks, 16);
	assert_non_null(
	    strstr(find_dir("--hint=memory_bound")->note, "ignored"));
	/* integers as parse_int() reads them */
	ok(SH "#SBATCH -n +4 -c ' 2'\n");
	assert_int_equal(spec.ntasks, 4);
	assert_int_equal(spec.cpus_per_task, 2);
	bad(SH "#SBATCH -n 0\n", HB_EINVAL,
	    "invalid numeric value '0' for --ntasks");
	bad(SH "#SBATCH --ntasks-per-node=4x\n", HB_EINVAL, "invalid numeric");
	bad(SH "#SBATCH -c 2147483648\n", HB_ERANGE,
	    "job.sh:2: numeric value '2147483648' for --cpus-per-task is "
	    "too large");
}

static void test_gpus(void **state)
{
	(void)state;
	ok(SH "#SBATCH --gres=gpu:2\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(spec.gpus, 2);
	assert_null(spec.gpu_type);
	ok(SH "#SBATCH --gres=gpu\n");
	assert_int_equal(spec.gpus, 1);
	ok(SH "#SBATCH --gres=gpu:h100\n");
	assert_int_equal(spec.gpus, 1);
	assert_string_equal(spec.gpu_type, "h100");
	ok(SH "#SBATCH --gres=gres:gpu:a100:3,shard:1\n");
	assert_int_equal(spec.gpus, 3);
	assert_non_null(strstr(find_dir("--gres=gres:gpu:a100:3,shard:1")->note,
			       "shard:1"));
	ok(SH "#SBATCH --gres=shard:1\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_NONE);
	ok(SH "#SBATCH --gres=none\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_NONE);
	ok(SH "#SBATCH --gpus=a100:4\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_JOB);
	assert_string_equal(spec.gpu_type, "a100");
	ok(SH "#SBATCH --gpus-per-node=h100:8\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(spec.gpus, 8);
	ok(SH "#SBATCH --gpus-per-task=1 -n 2\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_TASK);
	ok(SH "#SBATCH --gpus=a100:1,h100:1\n");
	assert_int_equal(spec.gpus, 2);
	assert_null(spec.gpu_type);
	/* two kinds of request: the per-node one is carried, the other
	 * says why it is not */
	ok(SH "#SBATCH --gpus=4 --gpus-per-node=2\n");
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_NODE);
	assert_int_equal(spec.gpus, 2);
	assert_false(dir_has(find_dir("--gpus=4"), HB_F_GPUS));
	assert_true(dir_has(find_dir("--gpus=4"), HB_F_NODES));
	assert_int_equal(spec.nodes_min, 2);
	assert_non_null(strstr(find_dir("--gpus=4")->note, "derives nodes 2"));
	assert_non_null(strstr(find_dir("--gpus=4")->note, "not carried"));
	bad(SH "#SBATCH --gres=gpu:\n", HB_EINVAL, "invalid --gres");
	bad(SH "#SBATCH --gres=gpu::2\n", HB_EINVAL, "invalid --gres");
	bad(SH "#SBATCH --gpus=99999999999\n", HB_ERANGE, "too large");
	bad(SH "#SBATCH --gres=help\n", HB_EINVAL, "submits no job");
	bad(SH "#SBATCH --gpus='a 100:2'\n", HB_EINVAL, "invalid GPU type");
	/* sbatch's own GPU checks, and the counts they imply */
	bad(SH "#SBATCH --gpus-per-task=1\n", HB_EINVAL,
	    "job.sh:2: --gpus-per-task used without either --gpus or "
	    "-n/--ntasks");
	bad(SH "#SBATCH -N 2-4 --gpus-per-task=1\n", HB_EINVAL,
	    "--gpus-per-task used without");
	ok(SH "#SBATCH -N 2 --gpus-per-task=1\n");
	assert_int_equal(spec.ntasks, 2);
	ok(SH "#SBATCH --gpus=4 --gpus-per-task=2\n");
	assert_int_equal(spec.ntasks, 2);
	assert_int_equal(spec.prov[HB_F_NTASKS].kind, HB_PROV_DERIVED);
	assert_true(dir_has(find_dir("--gpus-per-task=2"), HB_F_NTASKS));
	bad(SH "#SBATCH --gpus=4 --gpus-per-task=1 -n 2\n", HB_ECONFLICT,
	    "differs from -n/--ntasks");
	bad(SH "#SBATCH --gpus=3 --gpus-per-task=2\n", HB_EINVAL,
	    "not multiple of --gpus-per-task");
	ok(SH "#SBATCH -N 2 --gres=gpu:4 --gpus-per-task=2\n");
	assert_int_equal(spec.ntasks_per_node, 2);
	assert_int_equal(spec.ntasks, 2);
	bad(SH "#SBATCH --gres=gpu:4 --gpus-per-task=2 -n 4 "
	       "--ntasks-per-node=1\n",
	    HB_ECONFLICT, "differs from --ntasks-per-node");
	ok(SH "#SBATCH --cpus-per-gpu=6 --gpus-per-task=1 -n 2\n");
	assert_int_equal(spec.cpus_per_task, 6);
	bad(SH "#SBATCH --gpus=a100:2 --gpus-per-task=1 -n 2\n", HB_EINVAL,
	    "with and without type");
	bad(SH "#SBATCH -N 3 --gpus=2\n", HB_EINVAL, "--gpus < -N");
	ok(SH "#SBATCH --gpus=4 --gres=gpu:2\n");
	assert_int_equal(spec.nodes_min, 2);
	assert_int_equal(spec.nodes_max, 2);
	assert_int_equal(spec.prov[HB_F_NODES].kind, HB_PROV_DERIVED);
	bad(SH "#SBATCH --gpus=4 --gres=gpu:2 -N 3\n", HB_EINVAL,
	    "outside the job's node range");
	bad(SH "#SBATCH --gpus=3 --gres=gpu:2\n", HB_EINVAL,
	    "not multiple of --gres=gpu");
	bad(SH "#SBATCH --gpus=1 --gpus-per-node=2\n", HB_EINVAL,
	    "failed to ensure --gpus >=");
	bad(SH "#SBATCH --cpus-per-gpu=2 -c 2 --gpus=1\n", HB_ECONFLICT,
	    "mutually exclusive with --cpus-per-task");
	bad(SH "#SBATCH --gpus-per-socket=1 --gpus=2\n", HB_EINVAL,
	    "requires --sockets-per-node");
	ok(SH "#SBATCH -N 1-4 --gpus=2\n");
	assert_int_equal(spec.nodes_max, 2);
}

/* The job's size as the controller settles it: nodes from the task
 * count without -N, tasks from --ntasks-per-gpu without -n. */
/* pre, opt and post joined, in a static buffer. */
static const char *with_opt(const char *pre, const char *opt,
			    const char *post)
{
	static char buf[256];
	int n = snprintf(buf, sizeof(buf), "%s%s%s", pre, opt, post);

	assert_true(n > 0 && (size_t)n < sizeof(buf));
	return buf;
}

/* Tasks per GPU, given as opt: tasks = GPUs x tasks per GPU. */
static void tasks_per_gpu_cases(const char *opt)
{
	char d[64];

	ok(with_opt(SH "#SBATCH ", opt, "=2 --gpus=2\n"));
	assert_int_equal(spec.ntasks, 4);
	assert_int_equal(spec.prov[HB_F_NTASKS].kind, HB_PROV_DERIVED);
	snprintf(d, sizeof(d), "%s=2", opt);
	assert_true(dir_has(find_dir(d), HB_F_NTASKS));
	ok(with_opt(SH "#SBATCH -N 2 --gpus-per-node=2 ", opt, "=3\n"));
	assert_int_equal(spec.ntasks, 12);
	ok(with_opt(SH "#SBATCH -N 2 --gres=gpu:a100:2 ", opt, "=2\n"));
	assert_int_equal(spec.ntasks, 8);
	ok(with_opt(SH "#SBATCH --gpus-per-node=2 ", opt, "=2\n"));
	assert_int_equal(spec.ntasks, 4);
	ok(with_opt(SH "#SBATCH --gpus=2 -N 1-2 ", opt, "=2\n"));
	assert_int_equal(spec.ntasks, 4);
	/* -n wins; with no GPUs there is nothing to count from */
	ok(with_opt(SH "#SBATCH -n 6 ", opt, "=2\n"));
	assert_int_equal(spec.ntasks, 6);
	assert_non_null(strstr(find_dir(d)->note, "not applied"));
	ok(with_opt(SH "#SBATCH -N 2 ", opt, "=2\n"));
	assert_int_equal(spec.ntasks, 0);
	snprintf(d, sizeof(d), "%s needs either a GPU request", opt);
	bad(with_opt(SH "#SBATCH ", opt, "=2\n"), HB_EINVAL, d);
	bad(with_opt(SH "#SBATCH ", opt, "=2 --gpus=2 --ntasks-per-node=2\n"),
	    HB_ECONFLICT, "--ntasks-per-node is mutually exclusive");
	bad(with_opt(SH "#SBATCH ", opt, "=2 --gpus-per-task=1 -n 2\n"),
	    HB_ECONFLICT, "--gpus-per-task is mutually exclusive");
}

static void test_sizing(void **state)
{
	struct hb_shape sh;

	(void)state;
	/* no -N: ceil(ntasks / ntasks-per-node) nodes (sbatch --test-only) */
	ok(SH "#SBATCH -n 1\n#SBATCH --ntasks=80\n"
	      "#SBATCH --ntasks-per-node=40\n");
	assert_int_equal(spec.nodes_min, 2);
	assert_int_equal(spec.nodes_max, 0);
	assert_int_equal(spec.prov[HB_F_NODES].kind, HB_PROV_DERIVED);
	assert_true(dir_has(find_dir("--ntasks-per-node=40"), HB_F_NODES));
	assert_non_null(strstr(find_dir("--ntasks-per-node=40")->note,
			       "Slurm allocates 2 nodes"));
	assert_int_equal(hb_jobspec_shape(&spec, &sh), 0);
	assert_int_equal(sh.nodes, 2);
	assert_int_equal(sh.tasks_per_node, 40);
	ok(SH "#SBATCH --ntasks=10 --ntasks-per-node=4\n");
	assert_int_equal(spec.nodes_min, 3);
	/* one node is the default: nothing derived */
	ok(SH "#SBATCH -n 4 --ntasks-per-node=4\n");
	assert_int_equal(spec.nodes_min, 0);
	assert_false(hb_jobspec_has(&spec, HB_F_NODES));
	/* -N or a node list wins */
	ok(SH "#SBATCH -N 1 -n 8 --ntasks-per-node=4\n");
	assert_int_equal(spec.nodes_min, 1);
	ok(SH "#SBATCH -w n[1-4] -n 8 --ntasks-per-node=4\n");
	assert_int_equal(spec.nodes_min, 4);

	/* --ntasks-per-gpu, and --ntasks-per-tres under another name */
	tasks_per_gpu_cases("--ntasks-per-gpu");
	tasks_per_gpu_cases("--ntasks-per-tres");
	ok(SH "#SBATCH --gpus=3 --ntasks-per-gpu=2 --ntasks-per-tres=2\n");
	assert_int_equal(spec.ntasks, 6);
	bad(SH "#SBATCH --gpus=2 --ntasks-per-gpu=2 --ntasks-per-tres=3\n",
	    HB_ECONFLICT,
	    "inconsistent values set to --ntasks-per-gpu=2 and "
	    "--ntasks-per-tres=3");
}

static void test_arrays(void **state)
{
	(void)state;
	ok(SH "#SBATCH --array=1-10:2,20,3%4\n");
	assert_string_equal(spec.array, "1-10:2,20,3%4");
	assert_int_equal(spec.array_max_running, 4);
	/* sorted, disjoint: 1,3,5,7,9 then 20 (3 is already in) */
	assert_int_equal(spec.narray_ranges, 2);
	assert_int_equal(spec.array_ranges[0].start, 1);
	assert_int_equal(spec.array_ranges[0].end, 9);
	assert_int_equal(spec.array_ranges[0].step, 2);
	assert_int_equal(spec.array_ranges[1].start, 20);
	assert_true(hb_jobspec_array_count(&spec) == 6);
	ok(SH "#SBATCH -a 5,1-3,4\n");
	assert_int_equal(spec.narray_ranges, 1);
	assert_int_equal(spec.array_ranges[0].end, 5);
	ok(SH "#SBATCH -a [1-2],7,9\n");
	assert_int_equal(spec.narray_ranges, 3);
	ok(SH "#SBATCH -a 0-1000\n");
	assert_true(hb_jobspec_array_count(&spec) == 1001);
	bad(SH "#SBATCH -a 0-1001\n", HB_ERANGE, "indices run from 0 to 1000");
	bad(SH "#SBATCH -a 5-1\n", HB_EINVAL, "invalid --array");
	bad(SH "#SBATCH -a 1-5:0\n", HB_EINVAL, "invalid --array");
	bad(SH "#SBATCH -a abc\n", HB_EINVAL, "invalid --array");
	ok(SH "#SBATCH --array=\n");
	assert_null(spec.array);
	ok(SH "#SBATCH --array=1-4%0\n");
	assert_int_equal(spec.array_max_running, 0);
}

static void test_mail_signal_flags(void **state)
{
	const char *cli[] = {"--mail-type=FAIL", NULL};

	(void)state;
	/* mail types accumulate, in script and on the command line */
	assert_int_equal(parse_opts(SH "#SBATCH --mail-type=END\n"
				       "#SBATCH --mail-type=begin\n",
				    NULL, cli),
			 0);
	assert_string_equal(spec.mail_type, "BEGIN,END,FAIL");
	assert_true(dir_has(find_dir("--mail-type=END"), HB_F_MAIL_TYPE));
	ok(SH "#SBATCH --mail-type=ALL\n");
	assert_string_equal(spec.mail_type,
			    "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT");
	ok(SH "#SBATCH --mail-type=BEGIN,BOGUS\n");
	assert_string_equal(spec.mail_type, "BEGIN");
	bad(SH "#SBATCH --mail-type=BOGUS\n", HB_EINVAL, "invalid --mail-type");
	ok(SH "#SBATCH --signal=SIGUSR2 --signal=R:10@30\n");
	assert_string_equal(spec.signal, "R:10@30");
	bad(SH "#SBATCH --signal=FOO\n", HB_EINVAL, "invalid --signal");
	bad(SH "#SBATCH --signal=USR1@-1\n", HB_EINVAL, "invalid --signal");
	/* exclusive and oversubscribe write one value */
	ok(SH "#SBATCH --exclusive -s\n");
	assert_false(spec.exclusive);
	assert_true(hb_jobspec_has(&spec, HB_F_EXCLUSIVE));
	ok(SH "#SBATCH -s --exclusive=exclusive\n");
	assert_true(spec.exclusive);
	ok(SH "#SBATCH --exclusive=user\n");
	assert_false(hb_jobspec_has(&spec, HB_F_EXCLUSIVE));
	assert_non_null(find_dir("--exclusive=user")->note);
	bad(SH "#SBATCH --exclusive=bogus\n", HB_EINVAL, "invalid --exclusive");
	ok(SH "#SBATCH --requeue --no-requeue\n");
	assert_int_equal(spec.requeue, 0);
	ok(SH "#SBATCH -N 1\n");
	assert_int_equal(spec.requeue, -1);
}

static void test_unmapped(void **state)
{
	(void)state;
	ok(SH "#SBATCH --nice=10 --priority=TOP --hint=nomultithread\n"
	      "#SBATCH --distribution=block:cyclic,pack --wckey=w\n"
	      "#SBATCH --reservation=r --open-mode=append --hold\n"
	      "#SBATCH --core-spec=0 --switches=2@10:00 --tmp=10G\n"
	      "#SBATCH --gres-flags=enforce-binding --propagate=STACK\n"
	      "#SBATCH --profile=task --acctg-freq=task=30 --parsable\n"
	      "#SBATCH --kill-on-invalid-dep=yes --get-user-env=10L\n"
	      "#SBATCH --wait-all-nodes=1 --delay-boot=10 --power=level\n");
	for (uint32_t i = 0; i < spec.ndirectives; i++) {
		const struct hb_directive *d = &spec.directives[i];

		if (d->kind != HB_DIR_SBATCH)
			continue;
		if (d->nfields != 0)
			fail_msg("'%s' set a field", d->text);
		if (!d->note)
			fail_msg("'%s' has no note", d->text);
	}
	assert_true(spec.ndirectives >= 21);
	bad(SH "#SBATCH --nice=99999999999\n", HB_ERANGE, "out of range");
	bad(SH "#SBATCH --priority=-1\n", HB_EINVAL, ">= 0");
	bad(SH "#SBATCH --hint=bogus\n", HB_EINVAL, "invalid --hint");
	bad(SH "#SBATCH --distribution=bogus\n", HB_EINVAL,
	    "invalid --distribution");
	bad(SH "#SBATCH --open-mode=x\n", HB_EINVAL, "invalid --open-mode");
	bad(SH "#SBATCH --profile=bogus\n", HB_EINVAL, "invalid --profile");
	bad(SH "#SBATCH --propagate=BOGUS\n", HB_EINVAL, "invalid --propagate");
	bad(SH "#SBATCH --wait-all-nodes=2\n", HB_EINVAL,
	    "invalid --wait-all-nodes");
	bad(SH "#SBATCH --get-user-env=10X\n", HB_EINVAL,
	    "invalid --get-user-env");
	bad(SH "#SBATCH --kill-on-invalid-dep=maybe\n", HB_EINVAL,
	    "invalid --kill-on-invalid-dep");
	bad(SH "#SBATCH --gres-flags=x\n", HB_EINVAL, "invalid --gres-flags");
	bad(SH "#SBATCH -B x\n", HB_EINVAL, "invalid --extra-node-info");
	/* #PBS lines in an sbatch script are listed, not read */
	ok(SH "#SBATCH -N 1\n#PBS -N pbsname\n");
	assert_null(spec.name);
	assert_int_equal(find_dir("#PBS -N pbsname")->kind, HB_DIR_PBS);
	assert_non_null(strstr(find_dir("#PBS -N pbsname")->note, "not read"));
	ok(SH "#SBATCH --ignore-pbs\n#PBS -N pbsname\n");
	assert_non_null(strstr(find_dir("#PBS -N pbsname")->note, "ignored"));
}

/* slurmctld stores account names in lower case, wherever they came from */
static void test_account_case(void **state)
{
	const char *env[] = {"SBATCH_ACCOUNT=ProjX", NULL};
	const char *argv[] = {"-A", "Cli-ACCT", NULL};

	(void)state;
	ok(SH "#SBATCH -A K1206\n");
	assert_string_equal(spec.account, "k1206");
	assert_true(dir_has(find_dir("-A K1206"), HB_F_ACCOUNT));
	assert_non_null(strstr(find_dir("-A K1206")->note,
			       "account k1206: Slurm stores account names in "
			       "lower case"));
	ok(SH "#SBATCH --account=n01-SiAMOC_2\n");
	assert_string_equal(spec.account, "n01-siamoc_2");
	/* only ASCII capitals change, as tolower() in the C locale */
	ok(SH "#SBATCH -A \xc3\x9c" "ber-X\n");
	assert_string_equal(spec.account, "\xc3\x9c" "ber-x");
	/* already lower case: nothing to say */
	ok(SH "#SBATCH -A proj7\n");
	assert_string_equal(spec.account, "proj7");
	assert_true(!find_dir("-A proj7")->note ||
		    !strstr(find_dir("-A proj7")->note, "lower case"));
	/* SBATCH_ACCOUNT and the command line too */
	assert_int_equal(parse_opts(SH "hostname\n", env, NULL), 0);
	assert_string_equal(spec.account, "projx");
	assert_int_equal(spec.prov[HB_F_ACCOUNT].kind, HB_PROV_ENV);
	assert_non_null(
	    strstr(find_dir("SBATCH_ACCOUNT=ProjX")->note, "lower case"));
	assert_int_equal(parse_opts(SH "#SBATCH -A Script\n", env, argv), 0);
	assert_string_equal(spec.account, "cli-acct");
	assert_int_equal(spec.prov[HB_F_ACCOUNT].kind, HB_PROV_CLI);
}

static void test_precedence(void **state)
{
	const char *env[] = {"SBATCH_PARTITION=long",	"SBATCH_TIMELIMIT=20",
			     "SBATCH_REQUEUE=no",	"SBATCH_EXCLUSIVE=",
			     "SBATCH_JOB_NAME=envname", "OTHER=1",
			     "SBATCH_GPUS=a100:4",	NULL};
	const char *argv[] = {"-p", "debug", "--job-name=cli", "-N3", NULL};
	const char *env_bad[] = {"SBATCH_TIMELIMIT=bogus", NULL};
	const char *argv_bad[] = {"-N", "2", "--bogus", NULL};
	const char *argv_nonopt[] = {"-N", "2", "job.sh", NULL};
	const char *argv_help[] = {"--help", NULL};

	(void)state;
	assert_int_equal(parse_opts(SH "#SBATCH -p gpu -t 10 --requeue\n"
				       "#SBATCH -J script -N 2\n",
				    env, argv),
			 0);
	assert_string_equal(spec.partition, "debug");
	assert_int_equal(spec.prov[HB_F_PARTITION].kind, HB_PROV_CLI);
	assert_int_equal(spec.prov[HB_F_PARTITION].line, 1);
	assert_true(spec.time_limit == 1200);
	assert_int_equal(spec.prov[HB_F_TIME_LIMIT].kind, HB_PROV_ENV);
	assert_int_equal(spec.requeue, -1); /* reset by SBATCH_REQUEUE=no */
	assert_true(spec.exclusive);
	assert_string_equal(spec.name, "cli");
	assert_int_equal(spec.nodes_min, 3);
	assert_int_equal(spec.prov[HB_F_NODES].line, 4);
	assert_int_equal(spec.gpu_scope, HB_GPU_PER_JOB);
	/* every source is listed, the losers say who won */
	assert_non_null(
	    strstr(find_dir("-p gpu")->note, "'-p debug' on the command line"));
	assert_non_null(strstr(find_dir("SBATCH_PARTITION=long")->note,
			       "'-p debug' on the command line"));
	assert_non_null(
	    strstr(find_dir("--requeue")->note, "SBATCH_REQUEUE=no"));
	assert_int_equal(find_dir("SBATCH_JOB_NAME=envname")->prov.kind,
			 HB_PROV_ENV);
	assert_int_equal(find_dir("-p debug")->prov.kind, HB_PROV_CLI);
	assert_int_equal(find_dir("-N3")->prov.line, 4);
	/* errors name their source */
	assert_int_equal(parse_opts(SH "hostname\n", env_bad, NULL), HB_EINVAL);
	assert_non_null(strstr(err.msg, "SBATCH_TIMELIMIT: invalid --time"));
	assert_int_equal(parse_opts(SH "hostname\n", NULL, argv_bad),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "command line:3: unrecognized option "
					"'--bogus'"));
	assert_int_equal(parse_opts(SH "hostname\n", NULL, argv_nonopt),
			 HB_EINVAL);
	assert_non_null(strstr(err.msg, "unexpected argument 'job.sh'"));
	assert_int_equal(parse_opts(SH "hostname\n", NULL, argv_help),
			 HB_EINVAL);
}

static void test_hpcbridge_options(void **state)
{
	(void)state;
	ok(SH "#SBATCH --hpcbridge-target=kubernetes\n"
	      "#SBATCH --hpcbridge-deadline=2030-06-01T12:00:00\n"
	      "#SBATCH --hpcbridge-checkpoint=/ckpt/run1\n"
	      "#SBATCH --hpcbridge-data=s3://bucket/in --hpcbridge-data=/d\n");
	assert_string_equal(spec.deadline, "2030-06-01T12:00:00");
	assert_true(
	    dir_has(find_dir("--hpcbridge-deadline=2030-06-01T12:00:00"),
		    HB_F_DEADLINE));
	assert_string_equal(spec.checkpoint_dir, "/ckpt/run1");
	assert_int_equal(spec.ndata, 2);
	assert_string_equal(spec.data[0], "s3://bucket/in");
	assert_string_equal(spec.data[1], "/d");
	assert_non_null(strstr(find_dir("--hpcbridge-target=kubernetes")->note,
			       "kubernetes"));
	/* --deadline wins over ours */
	ok(SH
	   "#SBATCH --hpcbridge-deadline=2030-06-01 --deadline=2031-01-01\n");
	assert_string_equal(spec.deadline, "2031-01-01");
	bad(SH "#SBATCH --hpcbridge-target=mars\n", HB_EINVAL,
	    "want auto, slurm or kubernetes");
	bad(SH "#SBATCH --hpcbridge-data=s3://\n", HB_EINVAL,
	    "names no bucket");
	bad(SH "#SBATCH --hpcbridge-deadline=soon\n", HB_EINVAL,
	    "invalid --hpcbridge-deadline");
	bad(SH "#SBATCH --hpcbridge-d=x\n", HB_EINVAL, "ambiguous");
}

static void test_export(void **state)
{
	(void)state;
	/* the script's own quotes go; inner ones reach sbatch's split */
	ok(SH "#SBATCH --export=\"ALL,A=1,'B=2,3',C\"\n");
	assert_string_equal(spec.export_spec, "ALL,A=1,'B=2,3',C");
	assert_int_equal(spec.nenv, 3);
	assert_string_equal(spec.env[0].name, "A");
	assert_string_equal(spec.env[0].value, "1");
	assert_string_equal(spec.env[1].name, "B");
	assert_string_equal(spec.env[1].value, "2,3");
	assert_string_equal(spec.env[2].name, "C");
	assert_null(spec.env[2].value);
	ok(SH "#SBATCH --export=NONE\n");
	assert_int_equal(spec.nenv, 0);
}

static void test_corpus(void **state)
{
	const char *dir = hb_test_src_path("tests/corpus/sbatch");
	char path[4096];
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	(void)state;
	assert_non_null(d);
	snprintf(path, sizeof(path), "%s", dir);
	while ((de = readdir(d))) {
		char full[4400];
		size_t len;
		char *buf;
		int w;

		if (!strstr(de->d_name, ".sh"))
			continue;
		w = snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
		assert_true(w > 0 && (size_t)w < sizeof(full));
		buf = hb_test_read_file(full, &len);
		assert_true(len >= 1024 && len <= 4096);
		hb_jobspec_free(&spec);
		hb_jobspec_init(&spec, de->d_name);
		memset(&err, 0, sizeof(err));
		if (hb_sbatch_parse(buf, len, de->d_name, NULL, &spec, &err))
			fail_msg("%s: %s", de->d_name, err.msg);
		assert_true(spec.ndirectives > 3);
		assert_true(hb_sbatch_detect(buf, len));
		free(buf);
		n++;
	}
	closedir(d);
	assert_true(n >= 25);
}

static int teardown(void **state)
{
	(void)state;
	hb_jobspec_free(&spec);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic_fields),
	    cmocka_unit_test(test_tokenizer),
	    cmocka_unit_test(test_scan_stops),
	    cmocka_unit_test(test_getopt),
	    cmocka_unit_test(test_script_checks),
	    cmocka_unit_test(test_times),
	    cmocka_unit_test(test_memory),
	    cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_gpus),
	    cmocka_unit_test(test_sizing),
	    cmocka_unit_test(test_arrays),
	    cmocka_unit_test(test_mail_signal_flags),
	    cmocka_unit_test(test_unmapped),
	    cmocka_unit_test(test_account_case),
	    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_hpcbridge_options),
	    cmocka_unit_test(test_export),
	    cmocka_unit_test(test_corpus),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
