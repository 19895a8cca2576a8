/*
 * test_slurmc_spec.c - a jobspec onto Slurm's batch request without a
 * controller: every jobspec field has a row (a carrier or "refused"),
 * each directive of a full script reaches its job_desc_msg_t member
 * (hb_slurmc_from_jobspec, then fill_desc() on a job_desc_msg_t from
 * slurm_init_job_desc_msg, also after the JSON trip to the as-user
 * child), the fidelity report gives every set field a fate, and what
 * Slurm cannot take is refused with the field named.
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
#include "gateway/slurm/slurmc_jobs.c"
#include "gateway/slurm/slurmc_submit.c"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

/* 2030-01-02T03:04:05 UTC */
#define BEGIN_T 1893553445

static const char *const base_env[] = { "PATH=/bin", "HOME=/h",
					"HPCBRIDGE_JOB_ID=hb-1", NULL };

/* spec from script, mapped onto *r (as the caller's uid); the code. */
static int map(const char *script, struct hb_jobspec *spec,
	       struct hb_slurmc_submit *r, struct hb_report *rep,
	       struct hb_err *err)
{
	int rc;

	memset(r, 0, sizeof(*r));
	hb_jobspec_init(spec, "job.sh");
	rc = hb_parse_any(script, strlen(script), "job.sh", NULL, spec, err);
	if (rc)
		fail_msg("%s", err->msg);
	r->script = script;
	r->work_dir = "/tmp";
	r->as_user = true;
	r->uid = (uint32_t)getuid();
	r->gid = (uint32_t)getgid();
	r->env = base_env;
	return hb_slurmc_from_jobspec(spec, r, 1700000000, 0, rep, err);
}

static void test_every_field_has_a_row(void **state)
{
	(void)state;
	for (int f = 0; f < HB__F_COUNT; f++) {
		assert_non_null(hb_field_name((enum hb_field)f));
		if (!hb_slurmc_field_target(f))
			fail_msg("field %s has no row in slurmc_spec.c",
				 hb_field_name((enum hb_field)f));
	}
	assert_null(hb_slurmc_field_target(HB__F_COUNT));
	assert_null(hb_slurmc_field_target(-1));
	assert_string_equal(hb_slurmc_field_target(HB_F_QOS), "qos");
	assert_string_equal(hb_slurmc_field_target(HB_F_CONSTRAINT),
			    "features");
}

static const char full[] =
	"#!/bin/bash\n"
	"#SBATCH --job-name=full\n"
	"#SBATCH --qos=high\n"
	"#SBATCH --constraint=fast&ib\n"
	"#SBATCH --exclusive\n"
	"#SBATCH --array=0-6:2%2\n"
	"#SBATCH --mail-type=BEGIN,END\n"
	"#SBATCH --mail-user=a@example.org\n"
	"#SBATCH --begin=2030-01-02T03:04:05\n"
	"#SBATCH --signal=B:USR1@120\n"
	"#SBATCH --licenses=matlab:2\n"
	"#SBATCH --dependency=afterok:12\n"
	"#SBATCH --no-requeue\n"
	"#SBATCH --time=1:00:00\n"
	"#SBATCH --time-min=10\n"
	"#SBATCH --gpus-per-task=1\n"
	"#SBATCH --mem-per-gpu=4G\n"
	"#SBATCH --input=in.txt\n"
	"#SBATCH --nodelist=n1\n"
	"#SBATCH --exclude=n2\n"
	"#SBATCH --nodes=1-3\n"
	"#SBATCH --ntasks=4\n"
	"#SBATCH --comment=note\n"
	"#SBATCH --export=ALL,FOO=bar\n"
	"srun hostname\n";

/* What a full script's job_desc_msg_t says. */
static void check_desc(const job_desc_msg_t *d)
{
	assert_string_equal(d->name, "full");
	assert_string_equal(d->qos, "high");
	assert_string_equal(d->features, "fast&ib");
	assert_int_equal(d->shared, JOB_SHARED_NONE);
	assert_string_equal(d->array_inx, "0-6:2%2");
	assert_int_equal(d->mail_type, MAIL_JOB_BEGIN | MAIL_JOB_END);
	assert_string_equal(d->mail_user, "a@example.org");
	assert_int_equal((long long)d->begin_time, BEGIN_T);
	assert_int_equal(d->warn_signal, SIGUSR1);
	assert_int_equal(d->warn_time, 120);
	assert_int_equal(d->warn_flags, KILL_JOB_BATCH);
	assert_string_equal(d->licenses, "matlab:2");
	assert_string_equal(d->dependency, "afterok:12");
	assert_int_equal(d->requeue, 0);
	assert_int_equal(d->time_limit, 60);
	assert_int_equal(d->time_min, 10);
	assert_string_equal(d->tres_per_task, "gres:gpu:1");
	assert_null(d->tres_per_node);
	assert_string_equal(d->mem_per_tres, "gres:gpu:4096");
	assert_string_equal(d->std_in, "in.txt");
	assert_string_equal(d->req_nodes, "n1");
	assert_string_equal(d->exc_nodes, "n2");
	assert_int_equal(d->min_nodes, 1);
	assert_int_equal(d->max_nodes, 3);
	assert_int_equal(d->num_tasks, 4);
	assert_string_equal(d->comment, "note");
	assert_null(d->container);
}

static bool env_has(char **env, uint32_t n, const char *e)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(env[i], e))
			return true;
	return false;
}

static void test_full_script(void **state)
{
	struct hb_slurmc_submit r, got;
	struct hb_jobspec spec;
	struct hb_report rep;
	struct hb_err err = { 0 };
	struct desc_mem m = { 0 }, m2 = { 0 };
	job_desc_msg_t d, d2;
	cJSON *tree = NULL;
	char *text = NULL, **genv = NULL;
	size_t len = 0;
	int rc;

	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	hb_report_init(&rep, "Slurm");
	rc = map(full, &spec, &r, &rep, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(hb_slurmc_submit_check(&r, &err), 0);
	/* every field the script set has a fate, and none is dropped */
	for (int f = 0; f < HB__F_COUNT; f++) {
		if (!hb_jobspec_has(&spec, (enum hb_field)f))
			continue;
		if (rep.fate[f].kind != HB_FATE_MAPPED &&
		    rep.fate[f].kind != HB_FATE_PARTIAL)
			fail_msg("field %s: fate %s",
				 hb_field_name((enum hb_field)f),
				 hb_fate_name(rep.fate[f].kind));
	}
	assert_string_equal(rep.fate[HB_F_QOS].target, "qos");
	slurm_init_job_desc_msg(&d);
	assert_int_equal(fill_desc(&d, &r, &m, &err), 0);
	check_desc(&d);
	/* the environment: the caller's with FOO set */
	assert_true(env_has(d.environment, d.env_size, "FOO=bar"));
	assert_true(env_has(d.environment, d.env_size, "HOME=/h"));
	assert_true(env_has(d.environment, d.env_size,
			    "HPCBRIDGE_JOB_ID=hb-1"));
	/* the same after the trip to the child that submits as the user */
	assert_int_equal(req_to_json(&r, &text, &len, &err), 0);
	assert_int_equal(req_from_json(text, len, &got, &tree, &genv, &err),
			 0);
	slurm_init_job_desc_msg(&d2);
	assert_int_equal(fill_desc(&d2, &got, &m2, &err), 0);
	check_desc(&d2);
	assert_true(env_has(d2.environment, d2.env_size, "FOO=bar"));
	desc_mem_free(&m);
	desc_mem_free(&m2);
	free(genv);
	free(text);
	cJSON_Delete(tree);
	hb_report_free(&rep);
	hb_jobspec_free(&spec);
}

static void test_small_things(void **state)
{
	struct hb_slurmc_submit r;
	struct hb_jobspec spec;
	struct hb_err err = { 0 };
	struct desc_mem m = { 0 };
	job_desc_msg_t d;

	(void)state;
	/* --gpus per job, --mem=0, requeue, R: signal by number */
	assert_int_equal(map("#!/bin/sh\n#SBATCH --gpus=a100:3\n"
			     "#SBATCH --mem=0\n#SBATCH --requeue\n"
			     "#SBATCH --signal=R:10@30\n"
			     "#SBATCH --export=NONE\ntrue\n",
			     &spec, &r, NULL, &err),
			 0);
	slurm_init_job_desc_msg(&d);
	assert_int_equal(fill_desc(&d, &r, &m, &err), 0);
	assert_string_equal(d.tres_per_job, "gres:gpu:a100:3");
	assert_int_equal(d.pn_min_memory, 0);
	assert_int_equal(d.requeue, 1);
	assert_int_equal(d.warn_signal, 10);
	assert_int_equal(d.warn_time, 30);
	assert_int_equal(d.warn_flags, KILL_JOB_RESV);
	/* --export=NONE keeps only Slurm's and the gateway's variables */
	assert_int_equal(d.env_size, 1);
	assert_string_equal(d.environment[0], "HPCBRIDGE_JOB_ID=hb-1");
	assert_int_equal(d.shared, NO_VAL16);
	desc_mem_free(&m);
	hb_jobspec_free(&spec);
}

/* script is refused, its message naming field. */
static void refused(const char *script, const char *field)
{
	struct hb_slurmc_submit r;
	struct hb_jobspec spec;
	struct hb_report rep;
	struct hb_err err = { 0 };
	char want[64];
	int f;

	hb_report_init(&rep, "Slurm");
	assert_int_equal(map(script, &spec, &r, &rep, &err), HB_EINVAL);
	snprintf(want, sizeof(want), "field %s: ", field);
	if (!strstr(err.msg, want) ||
	    !strstr(err.msg, "cannot be submitted to Slurm"))
		fail_msg("'%s' does not name %s", err.msg, field);
	for (f = 0; f < HB__F_COUNT; f++)
		if (!strcmp(hb_field_name((enum hb_field)f), field))
			break;
	assert_true(f < HB__F_COUNT);
	assert_int_equal(rep.fate[f].kind, HB_FATE_DROPPED);
	hb_report_free(&rep);
	hb_jobspec_free(&spec);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("#!/bin/sh\n#SBATCH --container=busybox\ntrue\n",
		"container");
	refused("#!/bin/sh\n#PBS -k oe\ntrue\n", "keep");
	refused("#!/bin/sh\n#PBS -l select=1:ncpus=2+2:ncpus=4\ntrue\n",
		"chunks");
	refused("#!/bin/sh\n#SBATCH --hpcbridge-data=s3://b/x\ntrue\n",
		"data");
	refused("#!/bin/sh\n#SBATCH --uid=65534\ntrue\n", "user");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_field_has_a_row),
		cmocka_unit_test(test_full_script),
		cmocka_unit_test(test_small_things),
		cmocka_unit_test(test_refusals),
	};

	if (hb_slurmc_child_main(argc, argv) == 0)
		return 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
