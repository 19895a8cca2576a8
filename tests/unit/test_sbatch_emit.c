/*
 * test_sbatch_emit.c - the sbatch writer.
 *
 * Property: for every corpus script and for generated scripts (with
 * SBATCH_* variables and command-line options), parse -> emit -> parse
 * gives the same value in every field, and the body after the header is
 * byte for byte the original's.  A failure prints the seed; replay it with
 * HB_EMIT_SEED.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/fidelity.h"
#include "hpcbridge/sbatch.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

/* The jobspec's values: its JSON minus the script and where it came from. */
static cJSON *values(const struct hb_jobspec *s)
{
	cJSON *j = hb_jobspec_to_json(s);

	assert_non_null(j);
	cJSON_DeleteItemFromObject(j, "source_name");
	cJSON_DeleteItemFromObject(j, "script");
	hb_test_fabric_why_unplaced(j);
	return j;
}

/* The body from the first command line on. */
static const char *body_of(const char *script)
{
	const char *p = script;

	while (*p) {
		const char *nl = strchr(p, '\n'), *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != '#' && *q != '\n' && *q != '\0')
			return p;
		if (!nl)
			break;
		p = nl + 1;
	}
	return p + strlen(p);
}

/*
 * Parse script (with opts), emit, parse the result, compare.  Returns the
 * emitted script (caller frees) so callers can look at it.
 */
static char *round_trip(const char *script, size_t len,
			const struct hb_sbatch_opts *opts, const char *what)
{
	struct hb_jobspec a, b;
	struct hb_err err = {0};
	struct hb_buf out;
	cJSON *va, *vb;
	char *text;

	hb_jobspec_init(&a, "in.sh");
	if (hb_sbatch_parse(script, len, "in.sh", opts, &a, &err))
		fail_msg("%s: parse: %s\n%s", what, err.msg, script);
	hb_buf_init(&out, 0);
	if (hb_sbatch_emit(&a, &out, NULL, &err))
		fail_msg("%s: emit: %s\n%s", what, err.msg, script);
	hb_jobspec_init(&b, "out.sh");
	if (hb_sbatch_parse(out.data, out.len, "out.sh", NULL, &b, &err))
		fail_msg("%s: re-parse: %s\n--- emitted\n%s", what, err.msg,
			 out.data);
	va = values(&a);
	vb = values(&b);
	if (!cJSON_Compare(va, vb, 1)) {
		char *x = cJSON_Print(va), *y = cJSON_Print(vb);

		fail_msg("%s: values differ\n--- script\n%s\n--- emitted\n%s\n"
			 "--- before\n%s\n--- after\n%s",
			 what, script, out.data, x, y);
	}
	if (strcmp(body_of(a.script), body_of(b.script)) != 0)
		fail_msg("%s: body changed\n--- emitted\n%s", what, out.data);
	/* the emitted header holds no line sbatch would read twice */
	{
		const char *rest = body_of(out.data);

		for (const char *p = strchr(out.data, '\n'); p && p < rest;
		     p = strchr(p + 1, '\n')) {
			if (!strncmp(p + 1, "#PBS", 4) ||
			    !strncmp(p + 1, "#SLURM", 6) ||
			    !strncmp(p + 1, "#BSUB", 5))
				fail_msg("%s: header keeps '%.20s'", what,
					 p + 1);
		}
	}
	cJSON_Delete(va);
	cJSON_Delete(vb);
	hb_jobspec_free(&a);
	hb_jobspec_free(&b);
	text = hb_buf_steal(&out);
	assert_non_null(text);
	return text;
}

static void test_corpus(void **state)
{
	const char *dir = hb_test_src_path("tests/corpus/sbatch");
	char path[4096];
	DIR *d;
	struct dirent *de;
	int n = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s", dir);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char full[4400], *buf, *out;
		size_t len;
		int w;

		if (!strstr(de->d_name, ".sh"))
			continue;
		w = snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
		assert_true(w > 0 && (size_t)w < sizeof(full));
		buf = hb_test_read_file(full, &len);
		out = round_trip(buf, len, NULL, de->d_name);
		/* emitting what was emitted changes nothing */
		free(round_trip(out, strlen(out), NULL, de->d_name));
		free(out);
		free(buf);
		n++;
	}
	closedir(d);
	assert_true(n >= 25);
}

/* ------------------------------------------------------------------ */
/* Generated scripts                                                   */
/* ------------------------------------------------------------------ */

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ULL) >> 33) % n;
}

#define PICK(v) (v)[rnd(sizeof(v) / sizeof((v)[0]))]

/* A value as a script would quote it: plain, double or single quotes. */
static void put_quoted(struct hb_buf *b, const char *v)
{
	bool dq = false, sq = false, plain = *v != '\0';

	for (const char *p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			dq = true;
		if (*p == '\'')
			sq = true;
		if (*p == ' ' || *p == '\t' || *p == '#' || *p == '"' ||
		    *p == '\'' || *p == '\\')
			plain = false;
	}
	if (plain && rnd(2)) {
		hb_buf_puts(b, v);
	} else if (!sq && rnd(2)) {
		hb_buf_printf(b, "'%s'", v);
	} else {
		hb_buf_putc(b, '"');
		for (const char *p = v; *p; p++) {
			if (*p == '"' || *p == '\\')
				hb_buf_putc(b, '\\');
			hb_buf_putc(b, *p);
		}
		hb_buf_putc(b, '"');
	}
	(void)dq;
}

static const char *const strs[] = {
    "plain",	   "with space", "hash#inside",	  "q\"uote", "it's",
    "back\\slash", "tab\there",	 "-dashed",	  "a=b,c",   "%x-%j.out",
    "x",	   "Big Run #2", "UPPER_lower-09"};

struct gen_opt {
	const char *opt; /* long option */
	const char *const *vals;
	size_t nvals; /* 0: strings from strs[] */
};

#define V(...)                                                                 \
	(const char *const[]){__VA_ARGS__},                                    \
	    sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

static const struct gen_opt gen_opts[] = {
    {"--job-name", NULL, 0},
    {"--account", NULL, 0},
    {"--comment", NULL, 0},
    {"--partition", V("debug", "gpu", "long")},
    {"--qos", V("normal", "high")},
    {"--nodes", V("1", "2", "4", "2-4", "1-8", "3k", "-2")},
    {"--ntasks", V("1", "4", "16", "+8")},
    {"--ntasks-per-node", V("1", "8", "64")},
    {"--cpus-per-task", V("1", "2", "8")},
    {"--mem", V("0", "4G", "1500", "1025K", "2T", "512MB")},
    {"--mem-per-cpu", V("2G", "500M")},
    {"--mem-per-gpu", V("40G", "80000")},
    {"--gres", V("gpu:2", "gpu:a100:4", "gpu", "gpu:h100", "gpu:1,shard:2",
		 "none", "shard:1")},
    {"--gpus", V("4", "a100:2", "a100:1,h100:1")},
    {"--gpus-per-node", V("h100:8", "2")},
    {"--gpus-per-task", V("1", "a100:1")},
    {"--licenses", V("matlab:1", "fluent:2,abaqus:4")},
    {"--exclusive", V("", "=user", "=oversubscribe", "=exclusive")},
    {"--oversubscribe", V("")},
    {"--constraint", V("ib", "ib&haswell", "[rack1|rack2]")},
    {"--nodelist", V("n[1-4]", "a1,b2", "x[01-03,07]", "/etc/hosts")},
    {"--exclude", V("n9", "n[7-8]")},
    {"--time", V("30", "1:30", "02:00:00", "1-0", "2-12:30", "3-01:02:03",
		 "UNLIMITED", "0", "0:30", "5-")},
    {"--time-min", V("20", "1:00:00")},
    {"--begin", V("now+1hour", "2030-01-01T08:00:00", "16:00", "tomorrow")},
    {"--deadline", V("2035-01-01", "12/25/31")},
    {"--signal", V("B:USR1@120", "SIGTERM", "10", "R:USR2@30")},
    {"--output", NULL, 0},
    {"--error", NULL, 0},
    {"--input", V("/dev/null", "in.txt")},
    {"--chdir", NULL, 0},
    {"--array", V("0-9", "1-10:2,20%4", "5,1-3", "[0-15]%3", "0-1000")},
    {"--dependency", V("singleton", "afterok:123", "afterany:1:2")},
    {"--mail-type",
     V("END", "BEGIN,END,FAIL", "ALL", "NONE", "TIME_LIMIT_80,ARRAY_TASKS")},
    {"--mail-user", NULL, 0},
    {"--requeue", V("")},
    {"--no-requeue", V("")},
    {"--export", V("ALL", "NONE", "ALL,A=1,B", "ALL,'C=x,y'")},
    {"--container", V("/ctr/bundle")},
    {"--uid", V("alice", "1000")},
    {"--hpcbridge-checkpoint", V("/ckpt/a", "/shared/ckpt dir")},
    {"--hpcbridge-data", V("s3://b/k", "/data/x")},
    {"--hpcbridge-deadline", V("2031-05-05")},
    {"--nice", V("10", "")},
    {"--hint", V("nomultithread")},
    {"--sockets-per-node", V("2")},
    {"--extra-node-info", V("2:4:1", "1:*:*")},
};

/* One option, written the way users do: long, abbreviated, short. */
static void put_opt(struct hb_buf *b, const struct gen_opt *o, const char *v)
{
	static const struct {
		const char *lng;
		char shrt;
	} shorts[] = {{"--job-name", 'J'},   {"--account", 'A'},
		      {"--partition", 'p'},  {"--nodes", 'N'},
		      {"--ntasks", 'n'},     {"--cpus-per-task", 'c'},
		      {"--time", 't'},	     {"--output", 'o'},
		      {"--array", 'a'},	     {"--chdir", 'D'},
		      {"--constraint", 'C'}, {"--nodelist", 'w'}};
	size_t ol = strlen(o->opt);

	if (!strcmp(o->opt, "--nice") && v[0]) {
		/* an optional argument needs '=' */
		hb_buf_printf(b, "--nice=%s", v);
		return;
	}
	if (v[0] == '=' || (v[0] == '\0' && o->nvals)) {
		/* flags and optional arguments */
		hb_buf_printf(b, "%s%s", o->opt, v);
		return;
	}
	for (size_t i = 0; i < sizeof(shorts) / sizeof(shorts[0]); i++) {
		if (strcmp(shorts[i].lng, o->opt) || rnd(3))
			continue;
		hb_buf_printf(b, "-%c", shorts[i].shrt);
		/* separate (-N 2) or attached (-N2) */
		if (rnd(2) && v[0] != '\0' && v[0] != '-' && v[0] != '+')
			hb_buf_putc(b, ' ');
		put_quoted(b, v);
		return;
	}
	/* "--job-name" abbreviated to "--job-n" now and then: unambiguous
	 * prefixes only for the options that have one that long */
	if (ol > 9 && !rnd(4) && strncmp(o->opt, "--hpcbridge", 11) &&
	    strncmp(o->opt, "--ntasks", 8) && strncmp(o->opt, "--mem", 5) &&
	    strncmp(o->opt, "--gpus", 6) && strncmp(o->opt, "--time", 6) &&
	    strncmp(o->opt, "--mail", 6) && strncmp(o->opt, "--no", 4) &&
	    strncmp(o->opt, "--exclu", 7) && strncmp(o->opt, "--cont", 6) &&
	    strncmp(o->opt, "--dead", 6) && strncmp(o->opt, "--sockets", 9) &&
	    strncmp(o->opt, "--extra", 7))
		hb_buf_append(b, o->opt, ol - 1);
	else
		hb_buf_puts(b, o->opt);
	if (rnd(3) == 0 && v[0] != '-') {
		hb_buf_putc(b, ' ');
	} else {
		hb_buf_putc(b, '=');
	}
	put_quoted(b, v);
}

static void gen_script(struct hb_buf *b)
{
	static const char *const shebangs[] = {"#!/bin/bash", "#!/bin/sh",
					       "#!/usr/bin/env bash",
					       "#! /bin/bash -l"};
	static const char *const bodies[] = {
	    "srun ./a.out\n",
	    "module load openmpi/4.1.5\nmpirun -np $SLURM_NTASKS ./b\n",
	    "export NCCL_DEBUG=INFO\n\nsrun python t.py\n#PBS -N later\n",
	    "echo \"#SBATCH -N 99\"\n#SBATCH --bogus\n",
	    "cat <<EOF\n#PBS -l nodes=2\nEOF\n",
	};
	uint32_t n = 1 + rnd(14);
	bool mem = false;

	hb_buf_reset(b);
	hb_buf_printf(b, "%s\n", PICK(shebangs));
	if (rnd(2))
		hb_buf_puts(b, "# generated test job\n\n");
	for (uint32_t i = 0; i < n; i++) {
		const struct gen_opt *o = &PICK(gen_opts);
		const char *v =
		    o->nvals ? o->vals[rnd((uint32_t)o->nvals)] : PICK(strs);

		if (!strncmp(o->opt, "--mem", 5)) {
			if (mem)
				continue;
			mem = true;
		}
		/* --uid and --nodes with a leading '-' need '=': keep it
		 * simple and let put_opt choose */
		hb_buf_puts(b, "#SBATCH ");
		put_opt(b, o, v);
		if (rnd(3) == 0) {
			const struct gen_opt *o2 = &PICK(gen_opts);
			const char *v2 =
			    o2->nvals ? o2->vals[rnd((uint32_t)o2->nvals)]
				      : PICK(strs);

			if (!strncmp(o2->opt, "--mem", 5)) {
				v2 = NULL;
			}
			if (v2) {
				hb_buf_puts(b, " ");
				put_opt(b, o2, v2);
			}
		}
		if (rnd(4) == 0)
			hb_buf_puts(b, "   # trailing comment");
		hb_buf_putc(b, '\n');
		if (rnd(6) == 0)
			hb_buf_puts(b, "## a comment line\n");
	}
	hb_buf_puts(b, PICK(bodies));
}

static void test_generated(void **state)
{
	const char *env = getenv("HB_EMIT_SEED");
	int iterations = env ? 1 : 3000, accepted = 0;
	struct hb_buf script;

	(void)state;
	hb_buf_init(&script, 0);
	for (int i = 0; i < iterations; i++) {
		struct hb_jobspec probe;
		struct hb_err err = {0};
		uint64_t seed = env ? strtoull(env, NULL, 10)
				    : 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
		char what[64];

		rng = seed;
		gen_script(&script);
		/* some combinations are rightly refused (two memory kinds,
		 * a node list larger than -N); only accepted ones count */
		hb_jobspec_init(&probe, "in.sh");
		if (hb_sbatch_parse(script.data, script.len, "in.sh", NULL,
				    &probe, &err) ||
		    (probe.ntasks && probe.ntasks < probe.nodes_min &&
		     probe.gpu_scope != HB_GPU_PER_TASK)) {
			/* fewer tasks than nodes (from a topology request
			 * and GPUs) is written as sbatch would run it */
			hb_jobspec_free(&probe);
			continue;
		}
		hb_jobspec_free(&probe);
		snprintf(what, sizeof(what), "seed %llu",
			 (unsigned long long)seed);
		free(round_trip(script.data, script.len, NULL, what));
		accepted++;
	}
	hb_buf_free(&script);
	if (!env)
		assert_true(accepted > iterations / 2);
}

/* Values from SBATCH_* variables and the command line are carried too. */
static void test_env_and_cli(void **state)
{
	const char *envp[] = {"SBATCH_PARTITION=long", "SBATCH_TIMELIMIT=45",
			      "SBATCH_GPUS=a100:3",    "SBATCH_EXCLUSIVE=",
			      "SBATCH_MEM_PER_CPU=3G", NULL};
	const char *argv[] = {"--job-name",	 "from cli",	"-N", "3",
			      "--mail-type=END", "--array=1-3", NULL};
	struct hb_sbatch_opts o = {envp, argv, 6};
	const char *script = "#!/bin/bash\n#SBATCH -p debug -J s -t 10\n"
			     "#SBATCH --mail-type=BEGIN\nsrun hostname\n";
	char *out = round_trip(script, strlen(script), &o, "env+cli");

	(void)state;
	assert_non_null(strstr(out, "#SBATCH --job-name=\"from cli\"\n"));
	assert_non_null(strstr(out, "#SBATCH --partition=long\n"));
	assert_non_null(strstr(out, "#SBATCH --time=00:45:00\n"));
	assert_non_null(strstr(out, "#SBATCH --mail-type=BEGIN,END\n"));
	assert_non_null(strstr(out, "#SBATCH --mem-per-cpu=3G\n"));
	assert_non_null(strstr(out, "#SBATCH --gpus=a100:3\n"));
	assert_non_null(strstr(out, "#SBATCH --exclusive\n"));
	free(out);
}

static struct hb_jobspec spec;
static struct hb_err err;
static struct hb_buf out;

static void emit_of(const char *script)
{
	hb_jobspec_free(&spec);
	hb_jobspec_init(&spec, "job.sh");
	memset(&err, 0, sizeof(err));
	if (hb_sbatch_parse(script, strlen(script), "job.sh", NULL, &spec,
			    &err))
		fail_msg("parse: %s", err.msg);
	hb_buf_free(&out);
	hb_buf_init(&out, 0);
	if (hb_sbatch_emit(&spec, &out, NULL, &err))
		fail_msg("emit: %s", err.msg);
}

static void test_layout(void **state)
{
	(void)state;
	emit_of("#!/bin/bash -l\n# about this job\n#SBATCH -N 2 -t 90\n"
		"\n#PBS -N old\n#SBATCH --comment=\"a \\\"b\\\" #c\"\n"
		"module load x\n#SBATCH -N 5\nsrun ./x\n");
	assert_string_equal(out.data,
			    "#!/bin/bash -l\n"
			    "#SBATCH --comment=\"a \\\"b\\\" #c\"\n"
			    "#SBATCH --nodes=2\n"
			    "#SBATCH --time=01:30:00\n"
			    "# about this job\n"
			    "\n"
			    "module load x\n#SBATCH -N 5\nsrun ./x\n");
	/* #PBS further down would be read by sbatch: --ignore-pbs */
	emit_of("#!/bin/sh\n#SBATCH -N 1\nhostname\n#PBS -l nodes=9\n");
	assert_non_null(strstr(out.data, "#SBATCH --ignore-pbs\n"));
	emit_of("#!/bin/sh\n#SBATCH -N 1\nhostname\n");
	assert_null(strstr(out.data, "--ignore-pbs"));
	/* sizes and times in sbatch's own forms */
	emit_of("#!/bin/sh\n#SBATCH --mem=2048 -t 0:30 --time-min=0:20\n");
	assert_non_null(strstr(out.data, "#SBATCH --mem=2G\n"));
	assert_non_null(strstr(out.data, "#SBATCH --time=00:01:00\n"));
	assert_non_null(strstr(out.data, "#SBATCH --time-min=00:01:00\n"));
	emit_of("#!/bin/sh\n#SBATCH -t 0 --time-min=0\n");
	assert_non_null(strstr(out.data, "#SBATCH --time=UNLIMITED\n"));
	assert_non_null(strstr(out.data, "#SBATCH --time-min=UNLIMITED\n"));
	emit_of("#!/bin/sh\n#SBATCH --gpus-per-node=h100:8 -w n[1-3]\n");
	assert_non_null(strstr(out.data, "#SBATCH --gres=gpu:h100:8\n"));
	assert_null(strstr(out.data, "--nodes")); /* the list gives it */
}

static void test_other_sources(void **state)
{
	struct hb_report rep;
	struct hb_jobspec s;
	static const char pbs[] = "#PBS -N pbsjob\n#PBS -l nodes=2:ppn=4\n"
				  "cd $PBS_O_WORKDIR\n"
				  "mpirun -machinefile $PBS_NODEFILE ./a\n";
	size_t start;

	(void)state;
	/* a jobspec from a PBS script: no shebang, PBS variables block */
	hb_jobspec_init(&s, "job.pbs");
	s.source = HB_SRC_PBS;
	s.script = pbs;
	s.script_len = sizeof(pbs) - 1;
	s.name = "pbsjob";
	s.nodes_min = s.nodes_max = 2;
	s.ntasks_per_node = 4;
	s.mem_kind = HB_MEM_JOB;
	s.mem_mb = 8192;
	s.join_output = true;
	s.error = "err.log";
	s.keep = "oe";
	hb_report_init(&rep, "sbatch");
	hb_buf_free(&out);
	hb_buf_init(&out, 0);
	assert_int_equal(hb_sbatch_emit(&s, &out, &rep, &err), 0);
	assert_true(strncmp(out.data, "#!/bin/bash\n", 12) == 0);
	assert_null(strstr(out.data, "#PBS"));
	assert_non_null(strstr(out.data, "#SBATCH --mem=4G\n")); /* 8G / 2 */
	assert_null(strstr(out.data, "--error"));
	assert_non_null(strstr(out.data, "export PBS_O_WORKDIR="));
	assert_non_null(strstr(out.data, "PBS_NODEFILE"));
	assert_non_null(strstr(out.data, "scontrol show hostnames"));
	assert_non_null(strstr(out.data, "PBS_ARRAYID"));
	assert_non_null(
	    strstr(out.data, "PBS_NUM_PPN=\"${PBS_NUM_PPN%%[(,]*}"));
	assert_non_null(strstr(out.data, "cd $PBS_O_WORKDIR\nmpirun"));
	assert_int_equal(rep.fate[HB_F_MEM].kind, HB_FATE_PARTIAL);
	assert_int_equal(rep.fate[HB_F_ERROR].kind, HB_FATE_DROPPED);
	assert_int_equal(rep.fate[HB_F_KEEP].kind, HB_FATE_DROPPED);
	assert_int_equal(rep.fate[HB_F_NAME].kind, HB_FATE_MAPPED);
	assert_string_equal(rep.fate[HB_F_NAME].target, "#SBATCH --job-name");
	/* what was emitted reads back */
	{
		struct hb_jobspec b;

		hb_jobspec_init(&b, "b.sh");
		assert_int_equal(
		    hb_sbatch_parse(out.data, out.len, "b.sh", NULL, &b, &err),
		    0);
		assert_int_equal(b.nodes_min, 2);
		assert_true(b.mem_mb == 4096);
		assert_string_equal(b.name, "pbsjob");
		hb_jobspec_free(&b);
	}
	/* csh: setenv; not a shell: no block, a warning */
	s.interpreter = "/bin/tcsh -f";
	hb_buf_reset(&out);
	assert_int_equal(hb_sbatch_emit(&s, &out, &rep, &err), 0);
	assert_non_null(strstr(out.data, "setenv PBS_NODEFILE"));
	s.interpreter = "/usr/bin/env python3";
	hb_buf_reset(&out);
	assert_int_equal(hb_sbatch_emit(&s, &out, &rep, &err), 0);
	assert_null(strstr(out.data, "PBS variables, from Slurm's"));
	assert_true(rep.nwarnings >= 1);
	hb_report_free(&rep);

	/* values handed over in another syntax are dropped, not written
	 * for sbatch to refuse */
	s.interpreter = NULL;
	s.begin = "202401011200"; /* PBS -a form */
	s.mail_type = "abe";	  /* PBS -m form */
	s.deadline = "2031-01-01";
	hb_report_init(&rep, "sbatch");
	hb_buf_reset(&out);
	assert_int_equal(hb_sbatch_emit(&s, &out, &rep, &err), 0);
	assert_null(strstr(out.data, "--begin"));
	assert_null(strstr(out.data, "--mail-type"));
	assert_non_null(strstr(out.data, "#SBATCH --deadline=2031-01-01\n"));
	assert_int_equal(rep.fate[HB_F_BEGIN].kind, HB_FATE_DROPPED);
	assert_int_equal(rep.fate[HB_F_MAIL_TYPE].kind, HB_FATE_DROPPED);
	assert_int_equal(rep.fate[HB_F_DEADLINE].kind, HB_FATE_MAPPED);
	hb_report_free(&rep);
	s.begin = s.mail_type = s.deadline = NULL;

	/* a value no #SBATCH line can hold: refused, nothing written */
	s.interpreter = NULL;
	s.name = "two\nlines";
	hb_buf_reset(&out);
	hb_buf_puts(&out, "keep");
	start = out.len;
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_sbatch_emit(&s, &out, NULL, &err), HB_EUNSUP);
	assert_int_equal(out.len, start);
	assert_string_equal(out.data, "keep");
	assert_non_null(strstr(err.msg, "name"));

	/* a manifest's job: environment goes to --export, launch lines
	 * become the body */
	s.name = "mj";
	s.source = HB_SRC_MPIJOB;
	s.script = NULL;
	s.script_len = 0;
	s.join_output = false;
	s.mem_kind = HB_MEM_NONE;
	hb_jobspec_add_env(&s, "NCCL_DEBUG", "INFO");
	hb_jobspec_add_env(&s, "LIST", "a,b");
	hb_jobspec_add_mpi_line(&s, "mpirun ./train");
	hb_buf_reset(&out);
	assert_int_equal(hb_sbatch_emit(&s, &out, NULL, &err), 0);
	assert_non_null(strstr(out.data, "#SBATCH --export=\"ALL,NCCL_DEBUG="
					 "INFO,'LIST=a,b'\"\n"));
	assert_non_null(strstr(out.data, "\nmpirun ./train\n"));
	{
		struct hb_jobspec b;

		hb_jobspec_init(&b, "b.sh");
		assert_int_equal(
		    hb_sbatch_parse(out.data, out.len, "b.sh", NULL, &b, &err),
		    0);
		assert_int_equal(b.nenv, 2);
		assert_string_equal(b.env[1].value, "a,b");
		hb_jobspec_free(&b);
	}
	hb_jobspec_free(&s);
}

static int teardown(void **state)
{
	(void)state;
	hb_jobspec_free(&spec);
	hb_buf_free(&out);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_corpus),
	    cmocka_unit_test(test_generated),
	    cmocka_unit_test(test_env_and_cli),
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_other_sources),
	};

	hb_buf_init(&out, 0);
	return cmocka_run_group_tests(tests, NULL, teardown);
}
