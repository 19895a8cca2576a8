/*
 * test_kueue.c - what the daemon reads from Kueue: the visibility API's
 * PendingWorkloadsSummary (hb_kueue_pending), the wait behind it
 * (hb_kueue_wait), and an MPIJob's phase across a preemption
 * (hb_remote_mpijob_phase: suspended after it ran, running once
 * re-admitted, pending while it waits for its first admission).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "hpcbridge/kube_capacity.h"
#include "hpcbridge/remote.h"

static const char summary[] =
	"{\"kind\":\"PendingWorkloadsSummary\",\"items\":["
	"{\"metadata\":{\"name\":\"mpijob-hb-000007-1\",\"namespace\":\"ml\","
	"\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v2beta1\","
	"\"kind\":\"MPIJob\",\"name\":\"hb-000007\",\"uid\":\"u1\"}]},"
	"\"priority\":100,\"localQueueName\":\"team-a\","
	"\"positionInClusterQueue\":0,\"positionInLocalQueue\":0},"
	"{\"metadata\":{\"name\":\"job-x-2\",\"namespace\":\"ml\","
	"\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"x\"}]},"
	"\"priority\":0,\"localQueueName\":\"team-a\","
	"\"positionInClusterQueue\":1,\"positionInLocalQueue\":1},"
	"{\"metadata\":{\"name\":\"low-3\",\"namespace\":\"ml\"},"
	"\"priority\":-5,\"localQueueName\":\"team-a\","
	"\"positionInClusterQueue\":2,\"positionInLocalQueue\":2}]}";

static void test_pending(void **state)
{
	struct hb_kueue_pending p;
	struct hb_err err = { 0 };
	cJSON *doc = cJSON_Parse(summary);

	(void)state;
	assert_non_null(doc);
	assert_int_equal(hb_kueue_pending(doc, 0, &p, &err), 0);
	assert_int_equal(p.items, 3);
	assert_int_equal(p.ahead, 2); /* the priority -5 one queues behind */
	assert_int_equal(p.burst, 1);
	assert_int_equal(hb_kueue_pending(doc, 100, &p, &err), 0);
	assert_int_equal(p.ahead, 1);
	assert_int_equal(hb_kueue_pending(doc, -10, &p, &err), 0);
	assert_int_equal(p.ahead, 3);
	cJSON_Delete(doc);

	/* An empty queue: no items, or items null. */
	doc = cJSON_Parse("{\"kind\":\"PendingWorkloadsSummary\"}");
	assert_int_equal(hb_kueue_pending(doc, 0, &p, &err), 0);
	assert_int_equal(p.items, 0);
	assert_int_equal(p.ahead, 0);
	cJSON_Delete(doc);
	doc = cJSON_Parse("{\"items\":null}");
	assert_int_equal(hb_kueue_pending(doc, 0, &p, &err), 0);
	assert_int_equal(p.items, 0);
	cJSON_Delete(doc);
}

/* Documents of another shape: each error names the field. */
static void test_pending_errors(void **state)
{
	static const struct {
		const char *doc, *msg;
	} bad[] = {
		{ "[]", "PendingWorkloadsSummary: not an object" },
		{ "{\"items\":{}}", "items: not an array" },
		{ "{\"items\":[{\"metadata\":{\"name\":\"a\"}},{}]}",
		  "items[1].metadata.name: missing" },
		{ "{\"items\":[{\"metadata\":{\"name\":\"a\"},"
		  "\"positionInClusterQueue\":-1}]}",
		  "items[0].positionInClusterQueue: not a whole number" },
		{ "{\"items\":[{\"metadata\":{\"name\":\"a\"},"
		  "\"positionInLocalQueue\":1.5}]}",
		  "items[0].positionInLocalQueue: not a whole number" },
		{ "{\"items\":[{\"metadata\":{\"name\":\"a\"},"
		  "\"priority\":\"high\"}]}",
		  "items[0].priority: not a 32-bit number" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hb_kueue_pending p = { 9, 9, 9 };
		struct hb_err err = { 0 };
		cJSON *doc = cJSON_Parse(bad[i].doc);

		assert_non_null(doc);
		assert_int_equal(hb_kueue_pending(doc, 0, &p, &err), HB_EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: '%s' lacks '%s'", bad[i].doc, err.msg,
				 bad[i].msg);
		cJSON_Delete(doc);
	}
}

static void test_wait(void **state)
{
	(void)state;
	/* nothing ahead: no wait */
	assert_int_equal(hb_kueue_wait(0, 0, 0, 3600), 0);
	assert_int_equal(hb_kueue_wait(0, 4, 100, 3600), 0);
	/* one slot, the policy's turn */
	assert_int_equal(hb_kueue_wait(3, 0, 0, 600), 1800);
	assert_int_equal(hb_kueue_wait(3, 1, 0, 600), 1800);
	/* two admitted together: ceil(3 / 2) turns */
	assert_int_equal(hb_kueue_wait(3, 2, 0, 600), 1200);
	assert_int_equal(hb_kueue_wait(4, 2, 0, 600), 1200);
	/* their remaining time, when known, is the turn */
	assert_int_equal(hb_kueue_wait(3, 2, 90, 600), 180);
	/* saturates */
	assert_int_equal(hb_kueue_wait(UINT32_MAX, 1, INT64_MAX / 2, 0),
			 INT64_MAX);
	/* no turn at all: nothing to say */
	assert_int_equal(hb_kueue_wait(3, 1, 0, 0), 0);
}

static enum hb_remote_phase phase_of(const char *status, char *msg, size_t n)
{
	cJSON *st = cJSON_Parse(status);
	enum hb_remote_phase p;

	assert_non_null(st);
	p = hb_remote_mpijob_phase(st, msg, n);
	cJSON_Delete(st);
	return p;
}

/* An MPIJob through a preemption, as the MPI Operator writes its status
 * under Kueue. */
static void test_phase(void **state)
{
	char msg[256];

	(void)state;
	/* Created suspended, waiting for its first admission: pending,
	 * though the operator already wrote Running False. */
	assert_int_equal(phase_of("{\"conditions\":["
				  "{\"type\":\"Created\",\"status\":\"True\"},"
				  "{\"type\":\"Suspended\",\"status\":\"True\","
				  "\"reason\":\"MPIJobSuspended\","
				  "\"message\":\"MPIJob suspended\"},"
				  "{\"type\":\"Running\",\"status\":\"False\","
				  "\"reason\":\"MPIJobSuspended\"}]}",
				  msg, sizeof(msg)),
			 HB_REMOTE_PENDING);
	/* Admitted and running. */
	assert_int_equal(
		phase_of("{\"startTime\":\"2026-11-27T10:00:00Z\","
			 "\"conditions\":["
			 "{\"type\":\"Created\",\"status\":\"True\"},"
			 "{\"type\":\"Suspended\",\"status\":\"False\","
			 "\"reason\":\"MPIJobResumed\"},"
			 "{\"type\":\"Running\",\"status\":\"True\","
			 "\"reason\":\"MPIJobRunning\"}]}",
			 msg, sizeof(msg)),
		HB_REMOTE_RUNNING);
	/* Preempted: suspended again after it ran, with the condition. */
	assert_int_equal(phase_of("{\"startTime\":\"2026-11-27T10:00:00Z\","
				  "\"conditions\":["
				  "{\"type\":\"Created\",\"status\":\"True\"},"
				  "{\"type\":\"Suspended\",\"status\":\"True\","
				  "\"reason\":\"MPIJobSuspended\","
				  "\"message\":\"MPIJob suspended\"},"
				  "{\"type\":\"Running\",\"status\":\"False\","
				  "\"reason\":\"MPIJobSuspended\"}]}",
				  msg, sizeof(msg)),
			 HB_REMOTE_SUSPENDED);
	assert_string_equal(msg, "Suspended: MPIJobSuspended: MPIJob "
				 "suspended");
	assert_string_equal(hb_remote_phase_name(HB_REMOTE_SUSPENDED),
			    "suspended");
	assert_false(hb_remote_phase_done(HB_REMOTE_SUSPENDED));
	assert_true(hb_remote_phase_done(HB_REMOTE_LOST));
	/* Re-admitted: running again. */
	assert_int_equal(
		phase_of("{\"startTime\":\"2026-11-27T10:05:00Z\","
			 "\"conditions\":["
			 "{\"type\":\"Suspended\",\"status\":\"False\","
			 "\"reason\":\"MPIJobResumed\"},"
			 "{\"type\":\"Running\",\"status\":\"True\"}]}",
			 msg, sizeof(msg)),
		HB_REMOTE_RUNNING);
	/* An end wins over a suspension. */
	assert_int_equal(
		phase_of("{\"startTime\":\"2026-11-27T10:05:00Z\","
			 "\"conditions\":["
			 "{\"type\":\"Suspended\",\"status\":\"True\"},"
			 "{\"type\":\"Failed\",\"status\":\"True\","
			 "\"reason\":\"BackoffLimitExceeded\"}]}",
			 msg, sizeof(msg)),
		HB_REMOTE_FAILED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_pending_errors),
		cmocka_unit_test(test_wait),
		cmocka_unit_test(test_phase),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
