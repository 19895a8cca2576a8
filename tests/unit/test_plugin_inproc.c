/*
 * test_plugin_inproc.c - placement inside slurmctld (slurm-plugin/inproc.c)
 * driven without slurmctld: a snapshot published into a temporary
 * directory with hb_snapfile_write(), a datagram socket bound where the
 * notices go, and job descriptions decided with hb_inproc_decide().
 * Covers the tag and the proxy, ids from the lease (never from the one
 * found at start), the cases that leave a job alone untouched, the
 * allowance, the notice queue, and a damaged snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/snapfile.h"
#include "hpcbridge/snapshot.h"
#include "slurm-plugin/hbplugin.h"
#include "slurmfix.h"
#include "testutil.h"

#define NOW_MS	   1795248000000LL /* 2026-11-21T08:00:00Z */
#define MAX_AGE_MS 60000

/* batch stays on Slurm (and costs 1.00 per CPU-hour); cloud bursts; the
 * account chem has a budget on Slurm, so a job too big for it is
 * rejected with the spend in its reason. */
static const char policy_text[] =
	"version: 1\n"
	"defaults:\n"
	"  prefer: slurm\n"
	"  mem_per_cpu: 1Gi\n"
	"slurm:\n"
	"  partitions:\n"
	"    batch:\n"
	"      max_nodes: 4\n"
	"      node: {cpus: 32, memory: 128Gi}\n"
	"      rates: {cpu_hour: 1.00}\n"
	"    cloud:\n"
	"      max_nodes: 4\n"
	"      node: {cpus: 32, memory: 128Gi}\n"
	"kubernetes:\n"
	"  namespace: hpc\n"
	"  max_nodes: 64\n"
	"  node: {cpus: 64, memory: 256Gi}\n"
	"  startup: 2m\n"
	"  rates: {cpu_hour: 0.50, per_job: 0.10}\n"
	"rules:\n"
	"  - name: chem\n"
	"    account: chem\n"
	"    partition: batch\n"
	"    burst: never\n"
	"    budget: {amount: 10, period: month, sides: [slurm]}\n"
	"  - name: stay\n"
	"    partition: batch\n"
	"    burst: never\n"
	"  - name: go\n"
	"    partition: cloud\n"
	"    prefer: kubernetes\n";

struct fx {
	char dir[64], snap[128], notice[128], dsock[128];
	int rx; /* the bound notice socket; -1: none */
	struct hb_inproc *ip;
	uint64_t version;
	/* what the next publish() says */
	int64_t lo, hi, written_ms, allowance, noticed, spent;
	char owner[24]; /* the nonce the lease is for ("": none) */
};

/* ------------------------------------------------------- allocator */

static char *t_strdup(const char *s)
{
	return strdup(s);
}

static void t_free(void **p)
{
	free(*p);
	*p = NULL;
}

static const struct hb_slurm_alloc talloc = { t_strdup, t_free };

/* ------------------------------------------------------- fixture */

static void publish(struct fx *fx)
{
	struct hb_snapfile_meta m = {
		.version = ++fx->version,
		.written_ms = fx->written_ms,
		.max_age_ms = MAX_AGE_MS,
		.lease_lo = (uint64_t)fx->lo,
		.lease_hi = (uint64_t)fx->hi,
	};
	struct hb_snapshot s;
	struct hb_err err = { 0 };
	char cfg[512];

	hb_snapshot_init(&s, NOW_MS / 1000);
	/* what the daemon counted of chem's spend this month */
	if (fx->spent)
		assert_int_equal(hb_snapshot_set_spend(
					 &s, "chem", HB_PERIOD_MONTH,
					 HB_SIDE_SLURM, fx->spent * 1000000),
				 0);
	snprintf(cfg, sizeof(cfg),
		 "daemon:\n  socket: %s\nslurm:\n  burst_partition: hbburst\n"
		 "remote:\n  backend: local\n",
		 fx->dsock);
	if (hb_fix_publish(fx->snap, &m,
			   &(struct hb_fix_body){ .policy = policy_text,
						  .config = cfg,
						  .state = &s,
						  .daemon_socket = fx->dsock,
						  .notice_socket = fx->notice,
						  .allowance = fx->allowance,
						  .noticed = fx->noticed,
						  .owner = fx->owner },
			   &err))
		fail_msg("%s", err.msg);
	hb_snapshot_free(&s);
}

static void bind_rx(struct fx *fx)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	fx->rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fx->rx >= 0);
	assert_true(strlen(fx->notice) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, fx->notice, strlen(fx->notice) + 1);
	assert_int_equal(bind(fx->rx, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

/* A started plugin (no thread) with no snapshot yet, the notice socket
 * bound and a lease of [1, 100] ready to publish. */
static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct hb_err err = { 0 };

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/hb-inproc-test.XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->snap, sizeof(fx->snap), "%s/placement.snap", fx->dir);
	snprintf(fx->notice, sizeof(fx->notice), "%s/notice.sock", fx->dir);
	snprintf(fx->dsock, sizeof(fx->dsock), "%s/hpcbridged.sock", fx->dir);
	fx->rx = -1;
	fx->lo = 1;
	fx->hi = 100;
	fx->written_ms = NOW_MS - 1000;
	fx->allowance = 1000;
	*state = fx;
	bind_rx(fx);
	if (hb_inproc_start(fx->snap, geteuid(), 0, &fx->ip, &err))
		fail_msg("%s", err.msg);
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	hb_inproc_stop(fx->ip);
	if (fx->rx >= 0)
		close(fx->rx);
	unlink(fx->snap);
	unlink(fx->notice);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* Publish and take it in. */
static void publish_take(struct fx *fx)
{
	publish(fx);
	assert_int_equal(hb_inproc_refresh(fx->ip), 0);
}

/* The next notice (parsed), or NULL when none waits: the plugin's
 * thread would have sent what job_submit queued. */
static cJSON *notice(struct fx *fx)
{
	static char buf[256 * 1024];
	ssize_t n;
	cJSON *j;

	if (fx->ip)
		hb_inproc_flush(fx->ip);
	n = recv(fx->rx, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (n < 0) {
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		return NULL;
	}
	buf[n] = '\0';
	j = cJSON_Parse(buf);
	if (!j)
		fail_msg("notice is not JSON: %s", buf);
	return j;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(s))
		fail_msg("'%s' is not a string", key);
	return s->valuestring;
}

static double jnum(const cJSON *o, const char *key)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(s))
		fail_msg("'%s' is not a number", key);
	return s->valuedouble;
}

/* The next notice is the plugin's hello: its nonce, the lease's owner
 * from now on. */
static void take_hello(struct fx *fx)
{
	cJSON *n = notice(fx);

	assert_non_null(n);
	assert_string_equal(jstr(n, "op"), "hello");
	assert_int_equal(strlen(jstr(n, "nonce")), 16);
	snprintf(fx->owner, sizeof(fx->owner), "%s", jstr(n, "nonce"));
	cJSON_Delete(n);
}

/* The usual start: no file at start, then the first snapshot, whose
 * lease is nobody's; the plugin asks for one, the daemon leases to it. */
static void start_fresh(struct fx *fx)
{
	assert_int_equal(hb_inproc_refresh(fx->ip), HB_ENOENT);
	publish_take(fx);
	take_hello(fx);
	publish_take(fx);
}

/* The next notice is a decision for id with target. */
static void expect_decided(struct fx *fx, const char *id, const char *target,
			   uint64_t version)
{
	cJSON *n = notice(fx);

	assert_non_null(n);
	assert_string_equal(jstr(n, "op"), "decided");
	assert_string_equal(jstr(n, "id"), id);
	assert_string_equal(jstr(n, "target"), target);
	assert_true(jnum(n, "snapshot") == (double)version);
	assert_int_equal(
		(int)jnum(cJSON_GetObjectItemCaseSensitive(n, "request"),
			  "uid"),
		1000);
	cJSON_Delete(n);
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("'%s' does not contain '%s'", hay ? hay : "(null)",
			 needle);
}

/* ------------------------------------------------------- jobs */

#define SCRIPT "#!/bin/bash\n#SBATCH -n 1\nsrun hostname\n"

/* A job of one CPU for an hour in partition (account may be NULL). */
static void job(job_desc_msg_t *jd, const char *partition, const char *account)
{
	hb_fix_job_desc(jd);
	jd->time_limit = 60;
	jd->partition = strdup(partition);
	jd->account = account ? strdup(account) : NULL;
	jd->script = strdup(SCRIPT);
	jd->name = strdup("job");
}

static void job_free(job_desc_msg_t *jd)
{
	free(jd->partition);
	free(jd->account);
	free(jd->script);
	free(jd->name);
	free(jd->admin_comment);
	free(jd->comment);
	memset(jd, 0, sizeof(*jd));
}

/* A job that must be left alone with code rc: the fields apply() would
 * touch are as they were, and the message names what. */
static void expect_left(struct fx *fx, const char *partition,
			const char *account, int rc, const char *what)
{
	struct hb_inproc_result r;
	struct hb_err err = { 0 };
	job_desc_msg_t jd;

	job(&jd, partition, account);
	assert_int_equal(
		hb_inproc_decide(fx->ip, &jd, &talloc, NOW_MS, &r, &err), rc);
	assert_contains(err.msg, what);
	assert_string_equal(jd.partition, partition);
	assert_string_equal(jd.script, SCRIPT);
	assert_null(jd.admin_comment);
	assert_null(jd.comment);
	assert_int_equal(jd.min_nodes, NO_VAL);
	job_free(&jd);
}

/* Decide a job that must be decided; its id is checked to be want_id
 * (a number) and its result goes to r. */
static void decide_ok(struct fx *fx, job_desc_msg_t *jd, int64_t want_id,
		      struct hb_inproc_result *r)
{
	struct hb_err err = { 0 };
	char id[32];

	if (hb_inproc_decide(fx->ip, jd, &talloc, NOW_MS, r, &err))
		fail_msg("decide: %s", err.msg);
	snprintf(id, sizeof(id), "hb-%06" PRId64, want_id);
	assert_string_equal(r->id, id);
	assert_true(r->version == fx->version);
}

/* A slurm job of account decided as want_id, its notice read. */
static void slurm_ok(struct fx *fx, const char *account, int64_t want_id)
{
	struct hb_inproc_result r;
	job_desc_msg_t jd;

	char cost[32];

	job(&jd, "batch", account);
	decide_ok(fx, &jd, want_id, &r);
	assert_int_equal(r.target, HB_PLUGIN_SLURM);
	/* the tag says what was charged (one CPU-hour at 1.00), for a
	 * decision the daemon rebuilds from it */
	snprintf(cost, sizeof(cost), " cost=%s", account ? "1000000" : "0");
	assert_contains(jd.admin_comment, cost);
	expect_decided(fx, r.id, "slurm", fx->version);
	job_free(&jd);
}

/* ------------------------------------------------------- tests */

static void test_slurm_tag(void **state)
{
	struct fx *fx = *state;
	struct hb_inproc_result r;
	struct hb_inproc_stats st;
	job_desc_msg_t jd;
	char want[128];

	start_fresh(fx);
	assert_null(notice(fx)); /* one hello only */
	job(&jd, "batch", NULL);
	decide_ok(fx, &jd, 1, &r);
	assert_int_equal(r.target, HB_PLUGIN_SLURM);
	assert_string_equal(r.partition, "batch");
	snprintf(want, sizeof(want),
		 "hpcbridge:hb-000001 target=slurm snap=%" PRIu64 " cost=0",
		 fx->version);
	assert_string_equal(jd.admin_comment, want);
	/* the job is otherwise as it was */
	assert_string_equal(jd.partition, "batch");
	assert_string_equal(jd.script, SCRIPT);
	assert_null(jd.comment);
	expect_decided(fx, "hb-000001", "slurm", fx->version);
	assert_null(notice(fx));
	hb_inproc_stats(fx->ip, &st);
	assert_int_equal(st.decisions, 1);
	assert_int_equal(st.left, 0);
	assert_int_equal(st.views, 2); /* nobody's lease, then its own */
	assert_int_equal(st.notices_sent, 2); /* the hello, the decision */
	assert_int_equal(st.queued, 0);
	job_free(&jd);
}

static void test_kubernetes_proxy(void **state)
{
	struct fx *fx = *state;
	struct hb_inproc_result r;
	struct hb_buf req;
	job_desc_msg_t jd;
	char line[256];
	cJSON *j;

	start_fresh(fx);
	job(&jd, "cloud", NULL);
	decide_ok(fx, &jd, 1, &r);
	assert_int_equal(r.target, HB_PLUGIN_KUBERNETES);
	assert_string_equal(jd.partition, "hbburst");
	assert_string_equal(r.partition, "hbburst");
	assert_true(!strncmp(jd.script, "#!/bin/sh\nexec ", 15));
	snprintf(line, sizeof(line), " shadow --socket '%s' hb-000001\n",
		 fx->dsock);
	assert_contains(jd.script, line);
	assert_true(!strncmp(jd.comment, "hpcbridge:hb-000001 kubernetes", 30));
	assert_true(
		!strncmp(jd.admin_comment,
			 "hpcbridge:hb-000001 target=kubernetes snap=", 43));
	assert_int_equal(jd.min_nodes, 1);
	assert_int_equal(jd.num_tasks, 1);
	/* the proxy carries the request: the script and the uid */
	hb_buf_init(&req, 1u << 20);
	assert_int_equal(
		hb_rules_proxy_request(jd.script, strlen(jd.script), &req), 0);
	j = cJSON_ParseWithLength(req.data, req.len);
	assert_non_null(j);
	assert_string_equal(jstr(j, "script"), SCRIPT);
	assert_int_equal((int)jnum(j, "uid"), 1000);
	assert_string_equal(jstr(j, "partition"), "cloud");
	cJSON_Delete(j);
	hb_buf_free(&req);
	expect_decided(fx, "hb-000001", "kubernetes", fx->version);
	job_free(&jd);
}

/* Ids go up by one per decision; a rejection takes one and leaves the
 * job as it was. */
static void test_ids_and_rejection(void **state)
{
	struct fx *fx = *state;
	struct hb_inproc_result r;
	job_desc_msg_t jd;

	start_fresh(fx);
	slurm_ok(fx, NULL, 1);
	slurm_ok(fx, NULL, 2);
	/* 100 nodes: batch has 4 and may not burst */
	job(&jd, "batch", NULL);
	jd.min_nodes = 100;
	decide_ok(fx, &jd, 3, &r);
	assert_int_equal(r.target, HB_PLUGIN_REJECTED);
	assert_contains(r.reason, "Slurm (partition batch)");
	assert_string_equal(jd.partition, "batch");
	assert_string_equal(jd.script, SCRIPT);
	assert_null(jd.admin_comment);
	assert_null(jd.comment);
	expect_decided(fx, "hb-000003", "rejected", fx->version);
	job_free(&jd);
	slurm_ok(fx, NULL, 4);
}

/* No snapshot, a stale one, one that went away: the job is left alone. */
static void test_no_usable_snapshot(void **state)
{
	struct fx *fx = *state;
	struct hb_inproc_stats st;

	assert_int_equal(hb_inproc_refresh(fx->ip), HB_ENOENT);
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no placement snapshot");

	fx->written_ms = NOW_MS - MAX_AGE_MS - 1;
	publish_take(fx);
	take_hello(fx);
	publish_take(fx);
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "60 s old");
	expect_left(fx, "cloud", NULL, HB_EUNAVAIL, "60 s old");
	/* at the edge it is still fresh */
	fx->written_ms = NOW_MS - MAX_AGE_MS;
	publish_take(fx);
	slurm_ok(fx, NULL, 1);

	unlink(fx->snap);
	assert_int_equal(hb_inproc_refresh(fx->ip), HB_ENOENT);
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no placement snapshot");
	assert_null(notice(fx));
	hb_inproc_stats(fx->ip, &st);
	assert_int_equal(st.decisions, 1);
	assert_int_equal(st.left, 4);
}

/* A lease is for one plugin (its nonce): another's is never used (a
 * slurmctld that crashed, a primary a backup took over from); the plugin
 * asks for its own, at most every half second. */
static void test_lease_of_another(void **state)
{
	struct fx *fx = *state;
	char mine[24];

	snprintf(fx->owner, sizeof(fx->owner), "00000000deadbeef");
	publish_take(fx); /* lease A: [1, 100], another plugin's */
	take_hello(fx);
	snprintf(mine, sizeof(mine), "%s", fx->owner);
	snprintf(fx->owner, sizeof(fx->owner), "00000000deadbeef");
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no gateway id");
	/* a new snapshot of A: still not used; the next hello waits */
	publish_take(fx);
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no gateway id");
	assert_null(notice(fx));
	/* lease B, for this plugin */
	fx->lo = 101;
	fx->hi = 200;
	snprintf(fx->owner, sizeof(fx->owner), "%s", mine);
	publish_take(fx);
	assert_null(notice(fx));
	slurm_ok(fx, NULL, 101);
	slurm_ok(fx, NULL, 102);
	/* the daemon gives the lease to another plugin (it said hello):
	 * this one stops taking ids at once */
	snprintf(fx->owner, sizeof(fx->owner), "00000000deadbeef");
	fx->lo = 201;
	fx->hi = 300;
	publish_take(fx);
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no gateway id");
}

/* Nothing there at start: the first lease published is used. */
static void test_lease_after_empty_start(void **state)
{
	struct fx *fx = *state;

	fx->lo = 500;
	fx->hi = 502;
	start_fresh(fx);
	assert_null(notice(fx)); /* one hello only */
	slurm_ok(fx, NULL, 500);
	slurm_ok(fx, NULL, 501);
	slurm_ok(fx, NULL, 502);
	/* the lease runs out: the 4th job is left alone */
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no gateway id");
	/* the same lease again gives nothing back */
	publish_take(fx);
	expect_left(fx, "cloud", NULL, HB_EUNAVAIL, "no gateway id");
	fx->lo = 503;
	fx->hi = 600;
	publish_take(fx);
	slurm_ok(fx, NULL, 503);
}

/* The chem spend this view holds, as the budget's reason tells it: a
 * job too big for the budget (64 CPU-hours) is rejected, taking id. */
static void expect_spent(struct fx *fx, int64_t id, const char *spent)
{
	struct hb_inproc_result r;
	job_desc_msg_t jd;
	char want[64];

	job(&jd, "batch", "chem");
	jd.num_tasks = 64;
	jd.min_nodes = jd.max_nodes = 2;
	decide_ok(fx, &jd, id, &r);
	assert_int_equal(r.target, HB_PLUGIN_REJECTED);
	snprintf(want, sizeof(want), "%s spent", spent);
	assert_contains(r.reason, want);
	expect_decided(fx, r.id, "rejected", fx->version);
	job_free(&jd);
}

/* What the daemon has not counted is capped per account; a snapshot
 * that counts it lets decisions go on; one that does not, does not. */
static void test_allowance(void **state)
{
	struct fx *fx = *state;

	fx->allowance = 2; /* two jobs of 1.00 */
	start_fresh(fx);
	slurm_ok(fx, "chem", 1);
	slurm_ok(fx, "chem", 2);
	expect_spent(fx, 3, "$2.00");
	expect_left(fx, "batch", "chem", HB_EUNAVAIL, "account chem");
	/* the job left alone charged nothing (it once did: a later job of
	 * chem could be rejected for a budget it had not spent) */
	expect_spent(fx, 4, "$2.00");
	/* another account goes on; no account, no cost */
	slurm_ok(fx, "bio", 5);
	slurm_ok(fx, NULL, 6);

	/* a view that has not counted 1 and 2: they are charged again */
	fx->noticed = 0;
	publish_take(fx);
	expect_spent(fx, 7, "$2.00");
	expect_left(fx, "batch", "chem", HB_EUNAVAIL, "account chem");

	/* the daemon counted them */
	fx->noticed = 7;
	fx->spent = 2;
	publish_take(fx);
	expect_spent(fx, 8, "$2.00");
	slurm_ok(fx, "chem", 9);
	slurm_ok(fx, "chem", 10);
	expect_left(fx, "batch", "chem", HB_EUNAVAIL, "account chem");

	/* counted up to 9 only: 10 is charged again and still owed */
	fx->noticed = 9;
	fx->spent = 3;
	publish_take(fx);
	expect_spent(fx, 11, "$4.00");
	slurm_ok(fx, "chem", 12);
	expect_left(fx, "batch", "chem", HB_EUNAVAIL, "account chem");
}

/* Notices wait while nobody listens and go, in order, once somebody
 * does. */
static void test_notice_queue(void **state)
{
	struct fx *fx = *state;
	struct hb_inproc_result r;
	struct hb_inproc_stats st;
	job_desc_msg_t jd;
	char id[32];

	start_fresh(fx);
	close(fx->rx);
	fx->rx = -1;
	unlink(fx->notice);
	for (int i = 1; i <= 5; i++) {
		job(&jd, i % 2 ? "batch" : "cloud", NULL);
		decide_ok(fx, &jd, i, &r);
		job_free(&jd);
	}
	hb_inproc_stats(fx->ip, &st);
	assert_int_equal(st.decisions, 5);
	assert_int_equal(st.queued, 5);
	assert_int_equal(st.notices_sent, 1); /* the hello, before */
	/* refresh with no listener keeps them */
	assert_int_equal(hb_inproc_refresh(fx->ip), 0);
	hb_inproc_stats(fx->ip, &st);
	assert_int_equal(st.queued, 5);

	bind_rx(fx);
	assert_int_equal(hb_inproc_refresh(fx->ip), 0);
	hb_inproc_stats(fx->ip, &st);
	assert_int_equal(st.queued, 0);
	/* what the queue counted goes with what it sent: no drift toward
	 * its 64 MiB bound */
	assert_int_equal(st.queued_bytes, 0);
	assert_int_equal(st.notices_sent, 6); /* and the hello */
	assert_int_equal(st.dropped, 0);
	for (int i = 1; i <= 5; i++) {
		snprintf(id, sizeof(id), "hb-%06d", i);
		expect_decided(fx, id, i % 2 ? "slurm" : "kubernetes",
			       fx->version);
	}
	assert_null(notice(fx));
	/* with the queue empty, the next goes at once */
	slurm_ok(fx, NULL, 6);
}

/* A damaged snapshot is refused; the view before it goes on being used
 * until a good one comes. */
static void test_corrupt_snapshot(void **state)
{
	struct fx *fx = *state;
	uint64_t good;
	char c;
	int fd;

	start_fresh(fx);
	good = fx->version;
	slurm_ok(fx, NULL, 1);

	fx->lo = 101;
	fx->hi = 200;
	publish(fx);
	fd = open(fx->snap, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, HB_SNAPFILE_HEADER + 10), 1);
	c ^= 0x20;
	assert_int_equal(pwrite(fd, &c, 1, HB_SNAPFILE_HEADER + 10), 1);
	close(fd);
	assert_int_equal(hb_inproc_refresh(fx->ip), HB_EPROTO);
	assert_int_equal(hb_inproc_refresh(fx->ip), HB_EPROTO);
	/* still the old view: its version and its lease */
	fx->version = good;
	slurm_ok(fx, NULL, 2);

	/* a good one again: taken */
	fx->version++;
	publish_take(fx);
	slurm_ok(fx, NULL, 101);
}

/* Stopping with notices still queued and a view in hand frees them all
 * (run under ASan to see it); a thread started and stopped too. */
static void test_stop_frees(void **state)
{
	struct fx *fx = *state;
	struct hb_inproc *ip = NULL;
	struct hb_inproc_result r;
	struct hb_inproc_stats st;
	struct hb_err err = { 0 };
	job_desc_msg_t jd;

	start_fresh(fx);
	close(fx->rx);
	fx->rx = -1;
	unlink(fx->notice);
	for (int i = 1; i <= 3; i++) {
		job(&jd, "cloud", NULL);
		decide_ok(fx, &jd, i, &r);
		job_free(&jd);
	}
	hb_inproc_stats(fx->ip, &st);
	assert_int_equal(st.queued, 3);
	hb_inproc_stop(fx->ip);
	fx->ip = NULL;

	/* with the thread: it takes in the snapshot there at start */
	assert_int_equal(hb_inproc_start(fx->snap, geteuid(), 1, &ip, &err), 0);
	hb_inproc_stats(ip, &st);
	assert_int_equal(st.views, 1);
	/* ... and the lease there, the stopped plugin's, is not used */
	fx->ip = ip;
	expect_left(fx, "batch", NULL, HB_EUNAVAIL, "no gateway id");
	fx->ip = NULL;
	hb_inproc_stop(ip);
	hb_inproc_stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_slurm_tag),
		T(test_kubernetes_proxy),
		T(test_ids_and_rejection),
		T(test_no_usable_snapshot),
		T(test_lease_of_another),
		T(test_lease_after_empty_start),
		T(test_allowance),
		T(test_notice_queue),
		T(test_corrupt_snapshot),
		T(test_stop_frees),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
