/*
 * test_decider.c - the daemon's placement: the policy made from
 * placement.partitions (what the simple settings promise), a policy file
 * and its errors, Slurm estimates aged to the decision's instant, spend
 * carried from one decision to the next and loaded again from the store
 * after a restart, and the snapshot served to "hpcbridge explain".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <time.h>

#include "gateway/placement/decider.h"
#include "hpcbridge/k8s_opts.h"
#include "hpcbridge/config.h"
#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/policy.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/store.h"
#include "testutil.h"

#define T0 1795248000 /* 2026-11-21T08:00:00Z */

static void config(const char *text, struct hb_config *cfg)
{
	struct hb_err err = { 0 };

	if (hb_config_parse(text, strlen(text), "test.yaml", cfg, &err))
		fail_msg("%s", err.msg);
}

static struct hb_decider *make(const char *cfg_text)
{
	struct hb_config cfg;
	struct hb_decider *dc = NULL;
	struct hb_err err = { 0 };

	config(cfg_text, &cfg);
	if (hb_decider_new(&cfg, &dc, &err))
		fail_msg("%s", err.msg);
	hb_config_free(&cfg);
	return dc;
}

/* A job of nodes nodes, tasks tasks, in partition, asking target
 * (HB_TARGET_PENDING: none). */
static int decide(struct hb_decider *dc, const char *partition,
		  enum hb_job_target target, const char *account,
		  unsigned nodes, unsigned tasks, int64_t now,
		  struct hb_place_out *out)
{
	char js[256];
	cJSON *spec;
	struct hb_place_job job = { .user = "alice",
				      .account = account,
				      .partition = partition,
				      .name = "job",
				      .ask = target == HB_TARGET_SLURM ? HB_ASK_SLURM
					     : target == HB_TARGET_KUBERNETES
						     ? HB_ASK_KUBE
						     : HB_ASK_AUTO,
				      .time_limit_min = 60,
				      .seq = 7 };
	struct hb_err err = { 0 };
	int rc;

	snprintf(js, sizeof(js),
		 "{\"kind\":\"jobspec\",\"nodes_min\":%u,\"nodes_max\":%u,"
		 "\"ntasks\":%u,\"time_limit\":3600}",
		 nodes, nodes, tasks);
	spec = cJSON_Parse(js);
	assert_non_null(spec);
	job.jobspec = spec;
	rc = hb_decider_decide(dc, &job, now, out, &err);
	cJSON_Delete(spec);
	if (rc)
		fail_msg("decide: %s", err.msg);
	return out->target;
}

/* What the cluster may not take whatever its capacity: placement keeps
 * the job on Slurm and says why (the site factor). */
static void test_site_refusals(void **state)
{
	struct hb_decider *dc = make("placement:\n"
				     "  default_target: slurm\n"
				     "  partitions: {gpu: kubernetes}\n");
	static struct hb_k8s_volume vols[] = { { .path = "/scratch",
						 .pvc = "scratch" } };
	struct hb_k8s_opts k8s = { .volumes = vols, .nvolumes = 1 };
	static const struct {
		int64_t uid;
		const char *range, *chdir, *why;
	} cases[] = {
		{ 1205, NULL, "/scratch/u", NULL },
		{ 0, NULL, "/scratch/u", "the job runs as root" },
		{ 1205, NULL, "/home/u",
		  "--chdir /home/u is not on a volume the cluster mounts" },
		{ 1205, "1000660000/10000", "/scratch/u",
		  "uid 1205 is outside the uids the cluster's namespace "
		  "admits (kubernetes.openshift.uid_range 1000660000/10000)" },
		{ 1000660005, "1000660000/10000", "/scratch/u", NULL },
	};
	struct hb_place_out o;
	struct hb_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char js[256];
		cJSON *spec;
		struct hb_place_job job = { .user = "u",
					      .partition = "gpu",
					      .name = "job",
					      .ask = HB_ASK_AUTO,
					      .time_limit_min = 60,
					      .k8s = &k8s,
					      .uid = cases[i].uid };

		k8s.uid_range = cases[i].range;
		snprintf(js, sizeof(js),
			 "{\"kind\":\"jobspec\",\"ntasks\":1,"
			 "\"chdir\":\"%s\"}",
			 cases[i].chdir);
		assert_non_null(spec = cJSON_Parse(js));
		job.jobspec = spec;
		if (hb_decider_decide(dc, &job, T0, &o, &err))
			fail_msg("decide: %s", err.msg);
		cJSON_Delete(spec);
		if (!cases[i].why) {
			assert_int_equal(o.target, HB_DECIDE_KUBE);
		} else {
			assert_int_equal(o.target, HB_DECIDE_SLURM);
			if (!strstr(o.explanation, cases[i].why))
				fail_msg("case %zu: no '%s' in:\n%s", i,
					 cases[i].why, o.explanation);
		}
		hb_place_out_free(&o);
	}
	/* the local backend's jobs (no pod rules) go where the rule says */
	{
		struct hb_place_job job = { .user = "root",
					      .partition = "gpu",
					      .ask = HB_ASK_AUTO,
					      .time_limit_min = 60,
					      .uid = 0 };

		assert_int_equal(hb_decider_decide(dc, &job, T0, &o, &err), 0);
		assert_int_equal(o.target, HB_DECIDE_KUBE);
		hb_place_out_free(&o);
	}
	hb_decider_free(dc);
}

static void test_built_in(void **state)
{
	struct hb_decider *dc = make("placement:\n"
				     "  default_target: slurm\n"
				     "  partitions: {gpu: kubernetes, cpu: "
				     "slurm}\n");
	struct hb_place_out o;

	(void)state;
	assert_string_equal(hb_decider_policy_name(dc),
			    "placement.partitions");
	assert_int_equal(
		decide(dc, "gpu", HB_TARGET_PENDING, NULL, 2, 8, T0, &o),
		HB_DECIDE_KUBE);
	assert_string_equal(o.rule, "placement.partitions[gpu]");
	assert_string_equal(o.reason,
			    "rule placement.partitions[gpu] prefers "
			    "Kubernetes");
	assert_non_null(strstr(o.explanation, "\nSlurm (partition gpu)"));
	hb_place_out_free(&o);
	assert_int_equal(
		decide(dc, "cpu", HB_TARGET_PENDING, NULL, 1, 1, T0, &o),
		HB_DECIDE_SLURM);
	hb_place_out_free(&o);
	/* an unmapped partition takes the default */
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, NULL, 1, 1, T0, &o),
		HB_DECIDE_SLURM);
	assert_string_equal(o.rule, "defaults");
	hb_place_out_free(&o);
	/* --hpcbridge-target wins both ways */
	assert_int_equal(decide(dc, "gpu", HB_TARGET_SLURM, NULL, 1, 1, T0, &o),
			 HB_DECIDE_SLURM);
	assert_string_equal(o.why, "requested");
	hb_place_out_free(&o);
	assert_int_equal(
		decide(dc, "cpu", HB_TARGET_KUBERNETES, NULL, 1, 1, T0, &o),
		HB_DECIDE_KUBE);
	hb_place_out_free(&o);
	hb_decider_free(dc);

	/* default_target: kubernetes sends the unmapped ones */
	dc = make("placement: {default_target: kubernetes}\n");
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, NULL, 4, 4, T0, &o),
		HB_DECIDE_KUBE);
	hb_place_out_free(&o);
	hb_decider_free(dc);
}

static const char *write_tmp(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/hb-test-decider-%d-%s",
		 (int)getpid(), name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char policy[] =
	"version: 1\n"
	"defaults:\n"
	"  prefer: slurm\n"
	"  fallback: reject\n"
	"  budget: {amount: 1.50, period: month, sides: [kubernetes]}\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch: {max_nodes: 2, node: {cpus: 8, memory: 32Gi}}\n"
	"kubernetes:\n"
	"  namespace: hpc\n"
	"  max_nodes: 4\n"
	"  node: {cpus: 8, memory: 32Gi}\n"
	"  startup: 0s\n"
	"  rates: {cpu_hour: 0.10}\n";

static void test_policy_file(void **state)
{
	char text[512];
	struct hb_config cfg;
	struct hb_decider *dc = NULL;
	struct hb_err err = { 0 };
	struct hb_place_out o;
	const char *path = write_tmp("p.yaml", policy);

	(void)state;
	snprintf(text, sizeof(text), "placement: {policy: %s}\n", path);
	config(text, &cfg);
	assert_int_equal(hb_decider_new(&cfg, &dc, &err), 0);
	assert_string_equal(hb_decider_policy_name(dc), path);
	assert_non_null(strstr(hb_decider_policy_text(dc), "namespace: hpc"));

	/* too wide for both sides: rejected, saying what each lacks */
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "phys", 5, 5, T0, &o),
		HB_DECIDE_REJECT);
	assert_non_null(strstr(o.reason, "; Slurm (partition batch): "));
	assert_non_null(strstr(o.reason, "; Kubernetes (queue hpc): "));
	hb_place_out_free(&o);

	/* 3 nodes: only Kubernetes; 6 CPU-hours at 0.10 = 0.60 each.  Two
	 * fit the 1.50 budget, the third would pass it. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(decide(dc, "batch", HB_TARGET_PENDING, "phys",
					3, 6, T0, &o),
				 HB_DECIDE_KUBE);
		hb_place_out_free(&o);
	}
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "phys", 3, 6, T0, &o),
		HB_DECIDE_REJECT);
	assert_non_null(strstr(o.explanation, "$1.20 spent"));
	assert_non_null(strstr(o.explanation, "budget"));
	hb_place_out_free(&o);
	/* another account has its own budget */
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "chem", 3, 6, T0, &o),
		HB_DECIDE_KUBE);
	assert_non_null(o.doc_json);
	{
		cJSON *doc = cJSON_Parse(o.doc_json);

		assert_non_null(doc);
		assert_string_equal(
			cJSON_GetObjectItem(doc, "why")->valuestring,
			"only_side");
		/* the explanation is kept once, beside the document */
		assert_null(cJSON_GetObjectItem(doc, "explanation"));
		cJSON_Delete(doc);
	}
	hb_place_out_free(&o);
	hb_config_free(&cfg);

	/* a reload with a broken policy keeps the running one */
	path = write_tmp("bad.yaml", "version: 1\ndefaults:\n  prefer: up\n");
	snprintf(text, sizeof(text), "placement: {policy: %s}\n", path);
	config(text, &cfg);
	assert_int_not_equal(hb_decider_reload(dc, &cfg, &err), 0);
	assert_non_null(strstr(err.msg, "bad.yaml:3: defaults.prefer"));
	assert_non_null(strstr(hb_decider_policy_text(dc), "namespace: hpc"));
	hb_config_free(&cfg);

	/* a missing file is an error naming the key */
	config("placement: {policy: /nonexistent/p.yaml}\n", &cfg);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_decider_reload(dc, &cfg, &err), HB_ENOENT);
	assert_non_null(strstr(err.msg, "placement.policy: /nonexistent"));
	hb_config_free(&cfg);
	hb_decider_free(dc);
	unlink(write_tmp("p.yaml", ""));
	unlink(write_tmp("bad.yaml", ""));
}

/* Store a decision as the daemon does: a job of account, and the engine's
 * document under inputs.placement. */
static void store_decision(struct hb_store *st, const char *account,
			   const struct hb_place_out *o)
{
	struct hb_job_row row = { .entry = HB_ENTRY_SLURM,
				  .state = HB_JOB_PENDING,
				  .user = "alice",
				  .uid = 1000,
				  .account = account,
				  .slurm_job_id = -1,
				  .exit_code = -1 };
	struct hb_err err = { 0 };
	cJSON *inputs = cJSON_CreateObject();
	char *text;

	row.target = o->target == HB_DECIDE_SLURM  ? HB_TARGET_SLURM
		     : o->target == HB_DECIDE_KUBE ? HB_TARGET_KUBERNETES
						   : HB_TARGET_REJECTED;
	cJSON_AddItemToObject(inputs, "placement", cJSON_Parse(o->doc_json));
	text = cJSON_PrintUnformatted(inputs);
	assert_non_null(text);
	if (hb_store_begin(st, &err) || hb_store_job_add(st, &row, &err) ||
	    hb_store_decision_add(st, row.id, row.target, text, "", "p",
				  &err) ||
	    hb_store_commit(st, &err))
		fail_msg("store: %s", err.msg);
	cJSON_free(text);
	cJSON_Delete(inputs);
}

/* Move every stored decision days into the past. */
static void backdate(const char *db, int days)
{
	sqlite3 *h = NULL;
	char sql[128];

	snprintf(sql, sizeof(sql),
		 "UPDATE decisions SET at_ms = at_ms - %d * 86400000", days);
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

/* Budgets survive a restart: the spend is loaded from the decisions the
 * store holds for the period, and a new period starts afresh. */
static void test_spend_restart(void **state)
{
	char text[512], db[256];
	struct hb_config cfg;
	struct hb_decider *dc = NULL;
	struct hb_store *st = NULL;
	struct hb_err err = { 0 };
	struct hb_place_out o;
	const char *path = write_tmp("p.yaml", policy);
	int64_t now = (int64_t)time(NULL);

	(void)state;
	snprintf(db, sizeof(db), "/tmp/hb-test-decider-%d.db", (int)getpid());
	unlink(db);
	assert_int_equal(hb_store_open(db, &st, &err), 0);
	snprintf(text, sizeof(text), "placement: {policy: %s}\n", path);
	config(text, &cfg);

	/* the first daemon: two Kubernetes jobs of 0.60, stored; one
	 * rejection, which costs nothing */
	assert_int_equal(hb_decider_new(&cfg, &dc, &err), 0);
	assert_int_equal(hb_decider_load_spend(dc, st, now, 0, &err), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(decide(dc, "batch", HB_TARGET_PENDING, "phys",
					3, 6, now, &o),
				 HB_DECIDE_KUBE);
		store_decision(st, "phys", &o);
		hb_place_out_free(&o);
	}
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "phys", 5, 5, now, &o),
		HB_DECIDE_REJECT);
	store_decision(st, "phys", &o);
	hb_place_out_free(&o);
	hb_decider_free(dc);

	/* restarted: without the store the third job would fit... */
	assert_int_equal(hb_decider_new(&cfg, &dc, &err), 0);
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "phys", 3, 6, now, &o),
		HB_DECIDE_KUBE);
	hb_place_out_free(&o);
	hb_decider_free(dc);
	/* ...with it, $1.20 is already spent this month */
	assert_int_equal(hb_decider_new(&cfg, &dc, &err), 0);
	assert_int_equal(hb_decider_load_spend(dc, st, now, 0, &err), 0);
	assert_false(hb_decider_spend_stale(dc, now));
	assert_true(hb_decider_spend_stale(dc, now + 86400));
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "phys", 3, 6, now, &o),
		HB_DECIDE_REJECT);
	assert_non_null(strstr(o.explanation, "$1.20 spent"));
	hb_place_out_free(&o);
	/* another account spent nothing */
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "chem", 3, 6, now, &o),
		HB_DECIDE_KUBE);
	hb_place_out_free(&o);

	/* the decisions are last period's: loading again forgets them, and
	 * what was counted in memory since (chem's 0.60) too */
	backdate(db, 40);
	assert_int_equal(hb_decider_load_spend(dc, st, now, 0, &err), 0);
	assert_int_equal(
		decide(dc, "batch", HB_TARGET_PENDING, "phys", 3, 6, now, &o),
		HB_DECIDE_KUBE);
	hb_place_out_free(&o);
	hb_decider_free(dc);
	hb_config_free(&cfg);
	hb_store_close(st);
	unlink(db);
	unlink(path);
}

static void test_estimates(void **state)
{
	char text[512];
	struct hb_decider *dc;
	struct hb_place_out o;
	struct hb_decider_part p = { .name = "batch",
				     .wait_known = true,
				     .wait = 3600,
				     .idle_known = true,
				     .idle_nodes = 0 };
	const char *const *names;
	const char *path = write_tmp("e.yaml", policy);
	cJSON *st, *b;

	(void)state;
	snprintf(text, sizeof(text), "placement: {policy: %s}\n", path);
	dc = make(text);
	/* the policy's partitions are what a refresh asks about */
	assert_int_equal(hb_decider_partitions(dc, &names), 1);
	assert_string_equal(names[0], "batch");
	assert_int_equal(hb_decider_set_slurm(dc, &p, 1, T0), 0);

	/* 20 minutes later, 40 minutes of the wait are left */
	st = hb_decider_state(dc, T0 + 1200);
	assert_non_null(st);
	b = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(st, "slurm"),
				    "partitions"),
		"batch");
	assert_non_null(b);
	assert_string_equal(
		cJSON_GetObjectItem(b, "expected_start")->valuestring, "40m");
	assert_int_equal(cJSON_GetObjectItem(b, "idle_nodes")->valueint, 0);
	cJSON_Delete(st);

	/* the decision sees the aged wait */
	decide(dc, "batch", HB_TARGET_PENDING, "x", 1, 1, T0 + 1200, &o);
	assert_non_null(strstr(o.explanation, "Slurm (partition batch): "
					      "expected start in 40m"));
	hb_place_out_free(&o);
	/* past the expected start, the wait is 0 */
	decide(dc, "batch", HB_TARGET_PENDING, "x", 1, 1, T0 + 7200, &o);
	assert_null(strstr(o.explanation, "expected start in 40m"));
	hb_place_out_free(&o);
	/* partitions jobs went to are asked about too */
	decide(dc, "debug", HB_TARGET_PENDING, "x", 1, 1, T0, &o);
	hb_place_out_free(&o);
	assert_int_equal(hb_decider_partitions(dc, &names), 2);
	assert_string_equal(names[1], "debug");
	hb_decider_free(dc);
	unlink(path);
}

static cJSON *queue_default(cJSON *st)
{
	return cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(st, "kubernetes"),
				    "queues"),
		"default");
}

/* The cluster's capacity lands in the policy's queue, and decides. */
static void test_kube(void **state)
{
	struct hb_decider *dc =
		make("placement: {default_target: kubernetes}\n");
	struct hb_kcap cap = { .free_millicpus = 24500,
			       .free_mem_bytes = 96ull * 1073741824 + 100,
			       .ngpus = 1,
			       .pending = 0 };
	struct hb_place_out o;
	cJSON *st, *q, *f;
	char *text;

	(void)state;
	snprintf(cap.gpus[0].type, sizeof(cap.gpus[0].type), "NVIDIA-A100");
	cap.gpus[0].free = 3;
	assert_int_equal(hb_decider_set_kube(dc, &cap), 0);
	st = hb_decider_state(dc, T0);
	q = queue_default(st);
	assert_non_null(q);
	f = cJSON_GetObjectItem(q, "free");
	text = cJSON_PrintUnformatted(f);
	assert_string_equal(text, "{\"cpus\":24,\"memory\":\"96Gi\","
				  "\"gpus\":{\"nvidia-a100\":3}}");
	free(text);
	assert_null(cJSON_GetObjectItem(q, "expected_wait"));
	assert_int_equal(cJSON_GetObjectItem(q, "pending")->valueint, 0);
	cJSON_Delete(st);
	decide(dc, "batch", HB_TARGET_KUBERNETES, "x", 1, 4, T0, &o);
	assert_int_equal(o.target, HB_DECIDE_KUBE);
	assert_non_null(strstr(o.explanation, "Kubernetes (queue default): "
					      "free capacity now"));
	hb_place_out_free(&o);

	/* a job pending, the GPUs gone: nothing fits now, the type goes */
	cap.pending = 2;
	cap.ngpus = 0;
	assert_int_equal(hb_decider_set_kube(dc, &cap), 0);
	st = hb_decider_state(dc, T0);
	q = queue_default(st);
	assert_int_equal(cJSON_GetObjectItem(q, "pending")->valueint, 2);
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(q, "free"),
					"gpus"));
	cJSON_Delete(st);
	decide(dc, "batch", HB_TARGET_KUBERNETES, "x", 1, 4, T0, &o);
	assert_null(strstr(o.explanation, "free capacity now"));
	assert_non_null(strstr(o.explanation, "Kubernetes (queue default): "
					      "no estimate"));
	hb_place_out_free(&o);

	/* Kueue's visibility API answered: three workloads ahead, one
	 * slot, the policy's default wait (1h) a turn: 3h. */
	cap.queue_known = 1;
	cap.queue_ahead = 3;
	assert_int_equal(hb_decider_set_kube(dc, &cap), 0);
	st = hb_decider_state(dc, T0);
	q = queue_default(st);
	assert_int_equal(cJSON_GetObjectItem(q, "pending")->valueint, 3);
	assert_string_equal(
		cJSON_GetObjectItem(q, "expected_wait")->valuestring, "3h");
	cJSON_Delete(st);
	decide(dc, "batch", HB_TARGET_KUBERNETES, "x", 1, 4, T0, &o);
	assert_non_null(strstr(o.explanation,
			       "Kubernetes (queue default): admitted in 3h00m "
			       "(3 pending)"));
	hb_place_out_free(&o);

	/* The API failed since: the policy's default wait again, and the
	 * explanation says why. */
	cap.queue_known = 0;
	snprintf(cap.queue_note, sizeof(cap.queue_note),
		 "Kueue LocalQueue team-a: not found (404)");
	assert_int_equal(hb_decider_set_kube(dc, &cap), 0);
	decide(dc, "batch", HB_TARGET_KUBERNETES, "x", 1, 4, T0, &o);
	assert_non_null(strstr(o.explanation, "Kubernetes (queue default): "
					      "no estimate"));
	assert_non_null(strstr(o.explanation, "\nnote: Kueue LocalQueue "
					      "team-a: not found (404)\n"));
	hb_place_out_free(&o);
	/* answering again: no note */
	cap.queue_known = 1;
	assert_int_equal(hb_decider_set_kube(dc, &cap), 0);
	decide(dc, "batch", HB_TARGET_KUBERNETES, "x", 1, 4, T0, &o);
	assert_null(strstr(o.explanation, "note: "));
	hb_place_out_free(&o);
	hb_decider_free(dc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built_in),
		cmocka_unit_test(test_policy_file),
		cmocka_unit_test(test_estimates),
		cmocka_unit_test(test_spend_restart),
		cmocka_unit_test(test_kube),
		cmocka_unit_test(test_site_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
