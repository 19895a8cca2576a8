/*
 * test_fidelity.c - the fidelity report: every directive accounted for,
 * overrides named, unrecorded fates reported as dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/config.h"
#include "hpcbridge/fidelity.h"
#include "hpcbridge/mpijob.h"
#include "hpcbridge/translate.h"
#include "testutil.h"

static struct hb_directive *dir(struct hb_jobspec *s, uint8_t kind,
				uint32_t line, const char *text,
				enum hb_field f)
{
	struct hb_origin o = {kind, line};
	struct hb_directive *d =
		hb_jobspec_add_directive(s, HB_DIR_SBATCH, o, text,
					 strlen(text));

	assert_non_null(d);
	if (f != HB__F_COUNT) {
		hb_directive_add_field(d, f);
		hb_jobspec_set_origin(s, f, o);
	}
	return d;
}

static void build(struct hb_jobspec *s)
{
	hb_jobspec_init(s, "job.sh");
	dir(s, HB_ORIGIN_FILE, 2, "--nodes=2", HB_F_NODES);
	dir(s, HB_ORIGIN_FILE, 3, "--partition=debug", HB_F_PARTITION);
	dir(s, HB_ORIGIN_FILE, 4, "--mail-type=END", HB_F_MAIL_TYPE);
	dir(s, HB_ORIGIN_FILE, 5, "--nice=5", HB__F_COUNT)->note =
		"scheduling priority";
	/* The command line overrides the script's partition. */
	dir(s, HB_ORIGIN_CLI, 1, "--partition=gpu", HB_F_PARTITION);
}

static void test_text_report(void **state)
{
	struct hb_jobspec s;
	struct hb_report r;
	struct hb_buf out;
	unsigned c[HB__FATE_COUNT];

	(void)state;
	build(&s);
	hb_report_init(&r, "MPIJob");
	hb_report_fate(&r, HB_F_NODES, HB_FATE_MAPPED,
		       "spec.mpiReplicaSpecs.Worker.replicas", NULL);
	hb_report_fate(&r, HB_F_PARTITION, HB_FATE_CARRIED,
		       "metadata.annotations[hpcbridge.io/partition]",
		       "queue %s", "gpu-queue");
	/* mail_type: no fate recorded -> must still be reported dropped. */
	hb_report_warn(&r, "heterogeneous %s", "chunks");
	hb_report_warn(&r, "heterogeneous chunks"); /* a repeat: kept once */
	hb_buf_init(&out, 0);
	assert_int_equal(hb_report_write_text(&s, &r, &out), 0);
	assert_non_null(strstr(out.data, "# fidelity: job.sh -> MPIJob\n"));
	assert_non_null(strstr(out.data, "job.sh:2       --nodes=2\n"
					 "    nodes            mapped   "
					 "spec.mpiReplicaSpecs.Worker.replicas\n"));
	assert_non_null(strstr(out.data, "partition        overridden "
					 "(by argv[1])"));
	assert_non_null(strstr(out.data, "mail_type        dropped  "
					 "(no MPIJob equivalent)"));
	assert_non_null(strstr(out.data, "(scheduling priority)"));
	assert_non_null(strstr(out.data, "(queue gpu-queue)"));
	assert_non_null(strstr(out.data, "warning: heterogeneous chunks\n"));
	assert_int_equal(r.nwarnings, 1);
	assert_non_null(strstr(out.data, "# 1 mapped, 0 partial, 1 carried, "
					 "2 dropped, 1 overridden"));
	hb_report_counts(&s, &r, c);
	assert_int_equal(c[HB_FATE_MAPPED], 1);
	assert_int_equal(c[HB_FATE_CARRIED], 1);
	assert_int_equal(c[HB_FATE_DROPPED], 2);
	assert_int_equal(c[HB_FATE_OVERRIDDEN], 1);
	hb_buf_free(&out);
	hb_report_free(&r);
	hb_jobspec_free(&s);
}

static void test_json_report_matches_text(void **state)
{
	struct hb_jobspec s;
	struct hb_report r;
	cJSON *j, *e, *f;
	int n = 0;

	(void)state;
	build(&s);
	/* A field set by no directive is listed on its own. */
	s.mpi = HB_MPI_OPENMPI;
	hb_jobspec_set_origin(&s, HB_F_MPI,
			      (struct hb_origin){HB_ORIGIN_DERIVED, 0});
	hb_report_init(&r, "TrainJob");
	hb_report_fate(&r, HB_F_MPI, HB_FATE_MAPPED, "runtimeRef", NULL);
	j = hb_report_to_json(&s, &r);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "target")->valuestring,
			    "TrainJob");
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "entries"))
	{
		n++;
		f = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "fields"), 0);
		assert_non_null(cJSON_GetObjectItem(f, "fate"));
	}
	assert_int_equal(n, 6); /* five directives and the derived field */
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "entries"), 5);
	assert_string_equal(cJSON_GetObjectItem(e, "origin")->valuestring,
			    "derived");
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "fields"), 0);
	assert_string_equal(cJSON_GetObjectItem(f, "fate")->valuestring,
			    "mapped");
	cJSON_Delete(j);
	hb_report_free(&r);
	hb_jobspec_free(&s);
}

/* A value derived from several directives is not an override, repeated
 * accumulating directives are not overrides, and a reader's note shows on
 * its directive's line in the text report. */
static void test_derived_accumulate_and_notes(void **state)
{
	struct hb_jobspec s;
	struct hb_report r;
	struct hb_buf out;
	struct hb_directive *d;
	unsigned c[HB__FATE_COUNT];

	(void)state;
	hb_jobspec_init(&s, "job.sh");
	dir(&s, HB_ORIGIN_FILE, 2, "-N 2", HB_F_NODES);
	dir(&s, HB_ORIGIN_FILE, 3, "--mail-type=BEGIN", HB_F_MAIL_TYPE);
	dir(&s, HB_ORIGIN_FILE, 4, "--mail-type=END", HB_F_MAIL_TYPE);
	d = dir(&s, HB_ORIGIN_FILE, 5, "--gres=gpu:2,license_x:1", HB_F_GPUS);
	d->note = "non-GPU GRES dropped: license_x:1";
	/* The node count was then worked out from several options. */
	hb_jobspec_set_origin(&s, HB_F_NODES,
			      (struct hb_origin){HB_ORIGIN_DERIVED, 0});
	hb_report_init(&r, "MPIJob");
	hb_report_fate(&r, HB_F_NODES, HB_FATE_MAPPED, "replicas", NULL);
	hb_report_fate(&r, HB_F_MAIL_TYPE, HB_FATE_CARRIED, "annotation", NULL);
	hb_report_fate(&r, HB_F_GPUS, HB_FATE_MAPPED, "limits", NULL);
	hb_buf_init(&out, 0);
	assert_int_equal(hb_report_write_text(&s, &r, &out), 0);
	assert_null(strstr(out.data, "overridden (by"));
	assert_non_null(strstr(out.data, "--gres=gpu:2,license_x:1  "
					 "[non-GPU GRES dropped: license_x:1]"));
	hb_report_counts(&s, &r, c);
	assert_int_equal(c[HB_FATE_MAPPED], 2);
	assert_int_equal(c[HB_FATE_CARRIED], 2);
	assert_int_equal(c[HB_FATE_OVERRIDDEN], 0);
	assert_int_equal(c[HB_FATE_DROPPED], 0);
	hb_buf_free(&out);
	hb_report_free(&r);
	hb_jobspec_free(&s);
}

/* A long path keeps its line number. */
static void test_long_path(void **state)
{
	struct hb_jobspec s;
	struct hb_report r;
	struct hb_buf out;
	char path[300];

	(void)state;
	memset(path, 'd', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	path[0] = '/';
	hb_jobspec_init(&s, path);
	dir(&s, HB_ORIGIN_FILE, 42, "-N 2", HB_F_NODES);
	hb_report_init(&r, "MPIJob");
	hb_buf_init(&out, 0);
	assert_int_equal(hb_report_write_text(&s, &r, &out), 0);
	assert_non_null(strstr(out.data, "ddd:42 "));
	hb_buf_free(&out);
	hb_report_free(&r);
	hb_jobspec_free(&s);
}

/*
 * hb_report_counts() counts without the report's words: over the corpus,
 * its counts are the text report's summary line, and a report that keeps
 * no notes records the same kinds and targets (and no note).
 */
static void test_counts_and_no_notes(void **state)
{
	static const char *const files[] = {
		"tests/corpus/sbatch/01-openmpi-hello.sh",
		"tests/corpus/sbatch/04-pytorch-ddp-a100.sh",
		"tests/corpus/sbatch/06-array-param-sweep.sh",
		"tests/corpus/sbatch/18-long-checkpoint-requeue.sh",
		"tests/corpus/pbs/pbspro_multichunk.pbs",
		"tests/corpus/pbs/torque_depend.pbs",
		"tests/corpus/pbs/torque_gpu_pmem.pbs",
	};
	struct hb_config cfg;

	(void)state;
	assert_int_equal(hb_config_defaults(&cfg), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct hb_jobspec spec;
		struct hb_report full, bare;
		struct hb_err err = { 0 };
		struct hb_buf text;
		cJSON *a = NULL, *b = NULL;
		unsigned c[HB__FATE_COUNT], want[5];
		size_t len;
		char *src = hb_test_read_file(hb_test_src_path(files[i]), &len);
		const char *sum;

		hb_jobspec_init(&spec, files[i]);
		assert_int_equal(
			hb_parse_any(src, len, files[i], NULL, &spec, &err), 0);
		hb_report_init(&full, "MPIJob");
		hb_report_init(&bare, "MPIJob");
		bare.no_notes = true;
		assert_int_equal(
			hb_mpijob_emit(&spec, &cfg.k8s, -1, &a, &full, &err), 0);
		assert_int_equal(
			hb_mpijob_emit(&spec, &cfg.k8s, -1, &b, &bare, &err), 0);
		assert_true(cJSON_Compare(a, b, 1));
		for (int f = 0; f < HB__F_COUNT; f++) {
			assert_int_equal(full.fate[f].kind, bare.fate[f].kind);
			assert_null(bare.fate[f].note);
			if (full.fate[f].target)
				assert_string_equal(full.fate[f].target,
						    bare.fate[f].target);
		}
		hb_buf_init(&text, 0);
		assert_int_equal(hb_report_write_text(&spec, &full, &text), 0);
		sum = strstr(text.data, "\n# ");
		assert_non_null(sum);
		assert_int_equal(sscanf(sum,
					"\n# %u mapped, %u partial, %u "
					"carried, %u dropped, %u "
					"overridden",
					&want[0], &want[1], &want[2], &want[3],
					&want[4]),
				 5);
		hb_report_counts(&spec, &bare, c);
		assert_int_equal(c[HB_FATE_MAPPED], want[0]);
		assert_int_equal(c[HB_FATE_PARTIAL], want[1]);
		assert_int_equal(c[HB_FATE_CARRIED], want[2]);
		assert_int_equal(c[HB_FATE_DROPPED], want[3]);
		assert_int_equal(c[HB_FATE_OVERRIDDEN], want[4]);
		assert_int_equal(c[HB_FATE_MAPPED] + c[HB_FATE_CARRIED],
				 want[0] + want[2]);
		hb_buf_free(&text);
		cJSON_Delete(a);
		cJSON_Delete(b);
		hb_report_free(&full);
		hb_report_free(&bare);
		hb_jobspec_free(&spec);
		free(src);
	}
	hb_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_report),
		cmocka_unit_test(test_json_report_matches_text),
		cmocka_unit_test(test_derived_accumulate_and_notes),
		cmocka_unit_test(test_long_path),
		cmocka_unit_test(test_counts_and_no_notes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
