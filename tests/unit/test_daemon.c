/*
 * test_daemon.c - the daemon's loop with a fake Slurm: submit and cancel
 * through the worker pool, replies in order on one connection, SIGTERM
 * finishing a request in flight, concurrent callers, decided jobs Slurm
 * never queued given up as lost, and decisions made in slurmctld rebuilt
 * from Slurm's job table.
 */
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gateway/daemon/daemon.h"
#include "hpcbridge/config.h"
#include "hpcbridge/log.h"
#include "hpcbridge/proto.h"
#include "hpcbridge/rules.h"
#include "hpcbridge/snapfile.h"
#include "testutil.h"

/* ---- the fake Slurm ---------------------------------------------- */

static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static int fake_submit_rc, fake_cancel_rc, fake_delay_ms;
static int64_t fake_next_id = 4242, fake_cancelled;
static int fake_submits, fake_cancels;
static int fake_entered; /* submits begun, counted before the delay */
static char fake_script[256], fake_comment[96], fake_cwd[64], fake_env0[32],
	fake_argv1[32];
static uint32_t fake_uid, fake_gid;

static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int fake_submit(void *ctx, const struct hb_submit_req *req, int64_t *id,
		       struct hb_err *err)
{
	int rc;

	(void)ctx;
	__atomic_add_fetch(&fake_entered, 1, __ATOMIC_SEQ_CST);
	if (fake_delay_ms)
		nap(fake_delay_ms);
	pthread_mutex_lock(&fake_mu);
	fake_submits++;
	snprintf(fake_script, sizeof(fake_script), "%s", req->script);
	snprintf(fake_comment, sizeof(fake_comment), "%s", req->admin_comment);
	snprintf(fake_cwd, sizeof(fake_cwd), "%s", req->cwd ? req->cwd : "");
	snprintf(fake_env0, sizeof(fake_env0), "%s",
		 req->env[0] ? req->env[0] : "");
	snprintf(fake_argv1, sizeof(fake_argv1), "%s",
		 req->argv[0] && req->argv[1] ? req->argv[1] : "");
	fake_uid = req->uid;
	fake_gid = req->gid;
	rc = fake_submit_rc;
	if (!rc)
		*id = fake_next_id++;
	pthread_mutex_unlock(&fake_mu);
	if (rc)
		return hb_err_set(err, rc, NULL, 0,
				  "Invalid partition name specified");
	return 0;
}

static int fake_cancel(void *ctx, int64_t id, struct hb_err *err)
{
	int rc;

	(void)ctx;
	pthread_mutex_lock(&fake_mu);
	fake_cancels++;
	fake_cancelled = id;
	rc = fake_cancel_rc;
	pthread_mutex_unlock(&fake_mu);
	if (rc)
		return hb_err_set(err, rc, NULL, 0, "Access/permission denied");
	return 0;
}

/* ---- a daemon per test ------------------------------------------- */

struct fixture {
	char dir[64], sock[96];
	struct hb_daemon *d;
	pthread_t th;
	int run_rc;
};

static void *run_thread(void *arg)
{
	struct fixture *f = arg;

	f->run_rc = hb_daemon_run(f->d);
	return NULL;
}

/* The jobs the fake Slurm reports under their tag (the reconciler). */
static char fake_seen[4][32];
static int fake_nseen, fake_polls;

static int fake_poll(void *ctx,
		     int (*cb)(const struct hb_slurm_change *, void *),
		     void *arg, struct hb_err *err)
{
	struct hb_slurm_change ch = { .state = HB_JOB_QUEUED, .exit_code = -1 };
	int rc = 0;

	(void)ctx;
	(void)err;
	pthread_mutex_lock(&fake_mu);
	fake_polls++;
	for (int i = 0; !rc && i < fake_nseen; i++) {
		ch.slurm_job_id = 7000 + i;
		memcpy(ch.id, fake_seen[i], sizeof(ch.id));
		rc = cb(&ch, arg);
	}
	pthread_mutex_unlock(&fake_mu);
	return rc;
}

static int setup_ckpt_pages; /* hb_daemon_opts.checkpoint_pages */

static int setup_with(void **state, const struct hb_slurm_side_ops *be,
		      int orphan_ms)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct hb_daemon_opts opts = { .orphan_ms = orphan_ms,
				       .checkpoint_pages = setup_ckpt_pages };
	struct hb_err err = { 0 };
	struct hb_config cfg;
	char text[512], state_path[128];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/hb-test-daemon-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/api.sock", f->dir);
	snprintf(state_path, sizeof(state_path), "%s/state.db", f->dir);
	snprintf(text, sizeof(text),
		 "daemon:\n  socket: %s\n  state: %s\n  workers: 2\n"
		 "  log_level: error\n"
		 "placement:\n  partitions: {gpu: kubernetes}\n",
		 f->sock, state_path);
	if (hb_config_parse(text, strlen(text), "test.yaml", &cfg, &err))
		fail_msg("%s", err.msg);
	if (hb_daemon_new(&opts, &cfg, &f->d, &err))
		fail_msg("%s", err.msg);
	hb_daemon_set_slurm(f->d, be);
	fake_submit_rc = fake_cancel_rc = fake_delay_ms = 0;
	__atomic_store_n(&fake_entered, 0, __ATOMIC_SEQ_CST);
	fake_submits = fake_cancels = 0;
	fake_next_id = 4242;
	assert_int_equal(pthread_create(&f->th, NULL, run_thread, f), 0);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	static const struct hb_slurm_side_ops be = {
		.slurm_submit = fake_submit,
		.slurm_cancel = fake_cancel,
	};

	return setup_with(state, &be, 0);
}

/* With the reconciler, and orphans given up after 300 ms. */
static int setup_poll(void **state)
{
	static const struct hb_slurm_side_ops be = {
		.slurm_submit = fake_submit,
		.slurm_cancel = fake_cancel,
		.slurm_poll = fake_poll,
	};

	fake_nseen = fake_polls = 0;
	return setup_with(state, &be, 300);
}

static int fail_poll(void *ctx,
		     int (*cb)(const struct hb_slurm_change *, void *),
		     void *arg, struct hb_err *err)
{
	(void)ctx;
	(void)cb;
	(void)arg;
	return hb_err_set(err, HB_EUNAVAIL, NULL, 0, "slurmctld is down");
}

/* The reconciler's polls all fail (slurmctld down). */
static int setup_with_failing_poll(void **state)
{
	static const struct hb_slurm_side_ops be = {
		.slurm_submit = fake_submit,
		.slurm_cancel = fake_cancel,
		.slurm_poll = fail_poll,
	};

	return setup_with(state, &be, 300);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char path[160];

	if (f->d) {
		kill(getpid(), SIGTERM);
		pthread_join(f->th, NULL);
		hb_daemon_free(f->d);
	}
	snprintf(path, sizeof(path), "%s/state.db", f->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.db-wal", f->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.db-shm", f->dir);
	unlink(path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* One request; the reply, which must be there. */
static cJSON *call(struct fixture *f, const char *json)
{
	struct hb_err err = { 0 };
	cJSON *req = cJSON_Parse(json), *reply = NULL;

	assert_non_null(req);
	if (hb_proto_call(f->sock, req, 10000, &reply, &err))
		fail_msg("%s: %s", json, err.msg);
	cJSON_Delete(req);
	return reply;
}

static const char *str(const cJSON *o, const char *path)
{
	const cJSON *v = o;
	char key[64];
	const char *p = path, *dot;

	while (v && *p) {
		dot = strchr(p, '.');
		snprintf(key, sizeof(key), "%.*s",
			 (int)(dot ? (size_t)(dot - p) : strlen(p)), p);
		v = cJSON_GetObjectItemCaseSensitive(v, key);
		p = dot ? dot + 1 : p + strlen(p);
	}
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void expect_ok(const cJSON *r)
{
	struct hb_err err = { 0 };

	if (hb_proto_reply_status(r, &err))
		fail_msg("not ok: %s", err.msg);
}

/* ---- tests --------------------------------------------------------- */

static void test_submit(void **state)
{
	struct fixture *f = *state;
	cJSON *r, *s;
	char id[32], req[128];

	r = call(f, "{\"op\":\"submit\",\"script\":\"#!/bin/sh\\necho hi\\n\","
		    "\"name\":\"hello\",\"cwd\":\"/tmp\",\"argv\":[\"job.sh\","
		    "\"one\"],\"env\":[\"A=1\"]}");
	expect_ok(r);
	assert_int_equal(num(r, "slurm_job_id"), 4242);
	assert_string_equal(str(r, "target"), "slurm");
	snprintf(id, sizeof(id), "%s", str(r, "id"));
	cJSON_Delete(r);
	/* what Slurm was given */
	assert_int_equal(fake_submits, 1);
	assert_string_equal(fake_script, "#!/bin/sh\necho hi\n");
	assert_string_equal(fake_cwd, "/tmp");
	assert_string_equal(fake_env0, "A=1");
	assert_string_equal(fake_argv1, "one");
	assert_int_equal(fake_uid, getuid());
	assert_int_equal(fake_gid, getgid());
	snprintf(req, sizeof(req), "hpcbridge:%s target=slurm", id);
	assert_string_equal(fake_comment, req);
	/* recorded: queued, with its Slurm id, audited */
	snprintf(req, sizeof(req), "{\"op\":\"status\",\"id\":\"%s\"}", id);
	s = call(f, req);
	expect_ok(s);
	assert_string_equal(str(s, "job.state"), "queued");
	assert_string_equal(str(s, "job.origin"), "cli");
	assert_string_equal(str(s, "job.name"), "hello");
	assert_int_equal(num(cJSON_GetObjectItem(s, "job"), "slurm_job_id"),
			 4242);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(
				 cJSON_GetObjectItem(s, "job"), "events")),
			 2); /* submit, slurm-submit */
	cJSON_Delete(s);

	/* no script: refused before anything is recorded or sent */
	r = call(f, "{\"op\":\"submit\"}");
	assert_int_equal(hb_proto_reply_status(r, NULL), HB_EINVAL);
	cJSON_Delete(r);
	r = call(f, "{\"op\":\"submit\",\"script\":\"x\",\"cwd\":\"rel\"}");
	assert_int_equal(hb_proto_reply_status(r, NULL), HB_EINVAL);
	cJSON_Delete(r);
	assert_int_equal(fake_submits, 1);
}

static void test_submit_refused(void **state)
{
	struct fixture *f = *state;
	struct hb_err err = { 0 };
	cJSON *r, *s;
	char req[128];

	fake_submit_rc = HB_ESLURM;
	r = call(f, "{\"op\":\"submit\",\"script\":\"#!/bin/sh\\n\"}");
	assert_int_equal(hb_proto_reply_status(r, &err), HB_ESLURM);
	assert_string_equal(err.msg, "Invalid partition name specified");
	cJSON_Delete(r);
	/* the job is on record as failed, with Slurm's reason */
	s = call(f, "{\"op\":\"jobs\"}");
	expect_ok(s);
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "jobs"), 0);
	assert_non_null(r);
	assert_string_equal(str(r, "state"), "failed");
	assert_string_equal(str(r, "reason"),
			    "Invalid partition name specified");
	snprintf(req, sizeof(req), "{\"op\":\"cancel\",\"id\":\"%s\"}",
		 str(r, "id"));
	cJSON_Delete(s);
	/* an ended job cannot be cancelled */
	r = call(f, req);
	assert_int_equal(hb_proto_reply_status(r, NULL), HB_ESTATE);
	cJSON_Delete(r);
	assert_int_equal(fake_cancels, 0);
}

static void test_cancel_slurm_job(void **state)
{
	struct fixture *f = *state;
	struct hb_err err = { 0 };
	char req[128], st[128];
	cJSON *r;

	r = call(f, "{\"op\":\"submit\",\"script\":\"#!/bin/sh\\n\"}");
	expect_ok(r);
	snprintf(req, sizeof(req), "{\"op\":\"cancel\",\"id\":\"%s\"}",
		 str(r, "id"));
	snprintf(st, sizeof(st), "{\"op\":\"status\",\"id\":\"%s\"}",
		 str(r, "id"));
	cJSON_Delete(r);

	/* Slurm refuses: the error comes back, the job stays */
	fake_cancel_rc = HB_EPERM;
	r = call(f, req);
	assert_int_equal(hb_proto_reply_status(r, &err), HB_EPERM);
	cJSON_Delete(r);
	r = call(f, st);
	assert_string_equal(str(r, "job.state"), "queued");
	cJSON_Delete(r);

	/* Slurm cancels it */
	fake_cancel_rc = 0;
	r = call(f, req);
	expect_ok(r);
	assert_string_equal(str(r, "state"), "cancelled");
	cJSON_Delete(r);
	assert_int_equal(fake_cancels, 2);
	assert_int_equal(fake_cancelled, 4242);
	r = call(f, st);
	assert_string_equal(str(r, "job.state"), "cancelled");
	cJSON_Delete(r);
	/* again: already cancelled, Slurm is not asked */
	r = call(f, req);
	expect_ok(r);
	cJSON_Delete(r);
	assert_int_equal(fake_cancels, 2);

	/* a job Slurm has forgotten is cancelled all the same */
	r = call(f, "{\"op\":\"submit\",\"script\":\"#!/bin/sh\\n\"}");
	snprintf(req, sizeof(req), "{\"op\":\"cancel\",\"id\":\"%s\"}",
		 str(r, "id"));
	cJSON_Delete(r);
	fake_cancel_rc = HB_ENOENT;
	r = call(f, req);
	expect_ok(r);
	cJSON_Delete(r);
}

/* Requests sent together on one connection are answered in order, even
 * when one of them waits for a worker. */
static void test_in_order(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static const char *const reqs[] = {
		"{\"op\":\"ping\"}",
		"{\"op\":\"submit\",\"script\":\"#!/bin/sh\\n\"}",
		"{\"op\":\"jobs\"}",
		"{\"op\":\"nope\"}",
	};
	struct hb_buf out, in;
	const char *payload;
	size_t plen, flen, off = 0;
	char buf[4096];
	ssize_t n;
	int fd, got = 0;
	cJSON *r;

	fake_delay_ms = 200;
	hb_buf_init(&out, 0);
	hb_buf_init(&in, 0);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(hb_proto_frame(&out, HB_PROTO_REQUEST, reqs[i],
						strlen(reqs[i])),
				 0);
	memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, out.data, out.len), (ssize_t)out.len);
	while (got < 4 && (n = read(fd, buf, sizeof(buf))) > 0) {
		hb_buf_append(&in, buf, (size_t)n);
		while (hb_proto_peek(in.data + off, in.len - off, 0, NULL,
				     &payload, &plen, &flen, NULL) == 0) {
			assert_int_equal(hb_proto_parse(payload, plen,
							HB_PROTO_REPLY, &r,
							NULL),
					 0);
			switch (got++) {
			case 0:
				assert_int_equal(num(r, "proto"), 1);
				break;
			case 1:
				assert_int_equal(num(r, "slurm_job_id"), 4242);
				break;
			case 2:
				/* sees the job the submit made */
				assert_int_equal(
					cJSON_GetArraySize(
						cJSON_GetObjectItem(r, "jobs")),
					1);
				break;
			case 3:
				assert_int_equal(hb_proto_reply_status(r, NULL),
						 HB_EUNSUP);
				break;
			}
			cJSON_Delete(r);
			off += flen;
		}
	}
	assert_int_equal(got, 4);
	close(fd);
	hb_buf_free(&out);
	hb_buf_free(&in);
}

struct caller {
	struct fixture *f;
	const char *json;
	int rc;
	int64_t slurm_id;
	char id[32];
};

static void *call_thread(void *arg)
{
	struct caller *c = arg;
	cJSON *req = cJSON_Parse(c->json), *reply = NULL;

	c->rc = hb_proto_call(c->f->sock, req, 10000, &reply, NULL);
	if (!c->rc)
		c->rc = hb_proto_reply_status(reply, NULL);
	if (!c->rc) {
		c->slurm_id = (int64_t)num(reply, "slurm_job_id");
		snprintf(c->id, sizeof(c->id), "%s", str(reply, "id"));
	}
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return NULL;
}

/* SIGTERM while a submit waits for Slurm: the reply still comes, and the
 * loop ends with 0. */
static void test_sigterm_finishes(void **state)
{
	struct fixture *f = *state;
	struct caller c = { .f = f,
			    .json = "{\"op\":\"submit\",\"script\":\"#!/bin/"
				    "sh\\n\"}" };
	struct hb_err err = { 0 };
	cJSON *req, *reply = NULL;
	pthread_t th;

	fake_delay_ms = 300;
	assert_int_equal(pthread_create(&th, NULL, call_thread, &c), 0);
	/* SIGTERM once the submit is in flight (a loaded machine may take
	 * longer than any fixed nap to get it there) */
	for (int i = 0; i < 1000 && !__atomic_load_n(&fake_entered,
						      __ATOMIC_SEQ_CST);
	     i++)
		nap(10);
	assert_true(__atomic_load_n(&fake_entered, __ATOMIC_SEQ_CST) > 0);
	kill(getpid(), SIGTERM);
	pthread_join(f->th, NULL);
	assert_int_equal(f->run_rc, 0);
	pthread_join(th, NULL);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.slurm_id, 4242);
	/* nobody listens any more */
	req = cJSON_Parse("{\"op\":\"ping\"}");
	assert_int_equal(hb_proto_call(f->sock, req, 100, &reply, &err),
			 HB_EUNAVAIL);
	cJSON_Delete(req);
	hb_daemon_free(f->d);
	f->d = NULL;
}

/* Many callers at once: every decision answered, each with its own id. */
static void test_concurrent_decides(void **state)
{
	struct fixture *f = *state;
	struct caller c[24];
	pthread_t th[24];
	cJSON *r;
	int i, j;

	if (getuid() != 0)
		skip(); /* decide is for root and SlurmUser */
	for (i = 0; i < 24; i++) {
		c[i].f = f;
		c[i].json = i % 2 ? "{\"op\":\"decide\",\"user\":\"a\","
				    "\"uid\":1,\"partition\":\"gpu\"}"
				  : "{\"op\":\"decide\",\"user\":\"b\","
				    "\"uid\":2,\"partition\":\"cpu\"}";
		assert_int_equal(
			pthread_create(&th[i], NULL, call_thread, &c[i]), 0);
	}
	for (i = 0; i < 24; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(c[i].rc, 0);
		for (j = 0; j < i; j++)
			assert_string_not_equal(c[i].id, c[j].id);
	}
	r = call(f, "{\"op\":\"jobs\",\"all\":true}");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "jobs")),
			 24);
	cJSON_Delete(r);
}

/* Checkpoints every 8 pages of WAL. */
static int setup_ckpt(void **state)
{
	int rc;

	setup_ckpt_pages = 8;
	rc = setup(state);
	setup_ckpt_pages = 0;
	return rc;
}

/*
 * The WAL is copied into the database by a worker, not inside a commit:
 * the daemon counts the worker's checkpoints.  A passive checkpoint cannot
 * let the WAL start again while commits keep coming, so the loop's handle
 * still checkpoints inline past 8 x 8 pages: the WAL stays within a few
 * times that (the inline one is skipped while the worker's runs; a
 * decision writes about a dozen pages; without the limit these 200 would
 * leave over 2,000).
 */
static void test_checkpoints_off_loop(void **state)
{
	struct fixture *f = *state;
	struct stat wal;
	char path[160];
	cJSON *r;

	if (getuid() != 0)
		skip(); /* decide is for root and SlurmUser */
	for (int i = 0; i < 200; i++) {
		r = call(f, "{\"op\":\"decide\",\"user\":\"a\",\"uid\":1,"
			    "\"partition\":\"gpu\"}");
		expect_ok(r);
		cJSON_Delete(r);
	}
	r = call(f, "{\"op\":\"ping\"}");
	expect_ok(r);
	assert_int_equal(num(r, "decisions"), 200);
	assert_true(num(r, "checkpoints") >= 1);
	cJSON_Delete(r);
	snprintf(path, sizeof(path), "%s/state.db-wal", f->dir);
	assert_int_equal(stat(path, &wal), 0);
	/* 32-byte header, then frames of a 24-byte header and a page */
	assert_true(wal.st_size < 32 + 4 * 8 * 8 * (24 + 4096));
}

/* A decided job's state, from the API. */
static void job_state(struct fixture *f, const char *id, char *out,
		      size_t size, char *reason, size_t rsize)
{
	char req[128];
	cJSON *r;

	snprintf(req, sizeof(req), "{\"op\":\"status\",\"id\":\"%s\"}", id);
	r = call(f, req);
	expect_ok(r);
	snprintf(out, size, "%s", str(r, "job.state"));
	if (reason)
		snprintf(reason, rsize, "%s",
			 str(r, "job.reason") ? str(r, "job.reason") : "");
	cJSON_Delete(r);
}

/* A job Slurm never reports under its tag ends "lost" once the grace has
 * passed; one it reports is bound and stays. */
static void test_orphans_lost(void **state)
{
	struct fixture *f = *state;
	char seen[32], orphan[32], st[32], reason[256];
	cJSON *r;
	int i;

	if (getuid() != 0)
		skip(); /* decide is for root and SlurmUser */
	r = call(f, "{\"op\":\"decide\",\"user\":\"a\",\"uid\":1,"
		    "\"partition\":\"gpu\"}");
	expect_ok(r);
	snprintf(seen, sizeof(seen), "%s", str(r, "id"));
	cJSON_Delete(r);
	r = call(f, "{\"op\":\"decide\",\"user\":\"b\",\"uid\":2,"
		    "\"partition\":\"cpu\"}");
	expect_ok(r);
	snprintf(orphan, sizeof(orphan), "%s", str(r, "id"));
	cJSON_Delete(r);
	pthread_mutex_lock(&fake_mu);
	snprintf(fake_seen[0], sizeof(fake_seen[0]), "%s", seen);
	fake_nseen = 1;
	pthread_mutex_unlock(&fake_mu);

	for (i = 0; i < 100; i++) {
		job_state(f, orphan, st, sizeof(st), reason, sizeof(reason));
		if (!strcmp(st, "lost"))
			break;
		nap(50);
	}
	assert_string_equal(st, "lost");
	assert_non_null(strstr(reason, "Slurm never queued the job"));
	/* the job Slurm has is bound, and not given up */
	job_state(f, seen, st, sizeof(st), NULL, 0);
	assert_string_not_equal(st, "lost");
	r = call(f, "{\"op\":\"jobs\",\"all\":true}");
	expect_ok(r);
	cJSON_Delete(r);
	pthread_mutex_lock(&fake_mu);
	assert_true(fake_polls > 1);
	pthread_mutex_unlock(&fake_mu);
}

/* With no successful poll, nothing is given up. */
static void test_orphans_need_polls(void **state)
{
	struct fixture *f = *state;
	char id[32], st[32];
	cJSON *r;

	if (getuid() != 0)
		skip();
	r = call(f, "{\"op\":\"decide\",\"user\":\"b\",\"uid\":2,"
		    "\"partition\":\"cpu\"}");
	expect_ok(r);
	snprintf(id, sizeof(id), "%s", str(r, "id"));
	cJSON_Delete(r);
	nap(1200); /* four times the grace */
	job_state(f, id, st, sizeof(st), NULL, 0);
	assert_string_equal(st, "pending");
}

/* The inode of fd's socket: the same connection, or a new one. */
static ino_t sock_ino(int fd)
{
	struct stat sb;

	assert_int_equal(fstat(fd, &sb), 0);
	return sb.st_ino;
}

/* One ping on c; it must be answered. */
static void ping_on(struct fixture *f, struct hb_proto_conn *c)
{
	struct hb_err err = { 0 };
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}"), *reply = NULL;

	assert_non_null(req);
	if (hb_proto_call_on(c, f->sock, req, 10000, &reply, &err))
		fail_msg("ping: %s", err.msg);
	assert_int_equal(hb_proto_reply_status(reply, NULL), 0);
	cJSON_Delete(reply);
	cJSON_Delete(req);
}

/*
 * A kept connection (the plugin's) carries call after call; a new one is
 * made when the daemon closed the old, when the old one has something
 * unasked to read, when it is too old to trust, or for another socket.
 */
static void test_kept_connection(void **state)
{
	struct fixture *f = *state;
	struct hb_proto_conn c = HB_PROTO_CONN_INIT;
	ino_t ino;

	ping_on(f, &c);
	assert_true(c.fd >= 0);
	ino = sock_ino(c.fd);
	ping_on(f, &c);
	ping_on(f, &c);
	assert_int_equal(sock_ino(c.fd), ino);

	/* a bad frame: the daemon replies with an error and closes */
	assert_int_equal(write(c.fd, "XX\1\1\0\0\0\2{}", 10), 10);
	nap(100);
	ping_on(f, &c);
	assert_int_not_equal(sock_ino(c.fd), ino);
	ino = sock_ino(c.fd);

	/* last used too long ago */
	c.used_ms -= HB_PROTO_REUSE_MS;
	ping_on(f, &c);
	assert_int_not_equal(sock_ino(c.fd), ino);
	ino = sock_ino(c.fd);

	/* another path: connects there (here, nobody listens) */
	{
		struct hb_err err = { 0 };
		cJSON *req = cJSON_Parse("{\"op\":\"ping\"}"), *reply = NULL;
		char other[160];

		snprintf(other, sizeof(other), "%s/none.sock", f->dir);
		assert_int_equal(hb_proto_call_on(&c, other, req, 1000, &reply,
						  &err),
				 HB_EUNAVAIL);
		assert_int_equal(c.fd, -1); /* a failed call closes it */
		cJSON_Delete(req);
	}
	ping_on(f, &c);
	hb_proto_conn_close(&c);
	hb_proto_conn_close(&c); /* twice is fine */
	assert_int_equal(c.fd, -1);
}

/* ---- decisions made in slurmctld, rebuilt from Slurm's job table -- */

/* The tagged jobs the fake Slurm reports, every poll; scripts by job. */
struct fake_tagged {
	char id[32], target[16];
	int64_t snap, slurm_id;
	const char *account, *name, *partition;
	const char *script; /* its batch script; NULL: Slurm has none */
	int cancelled;	    /* ended cancelled in Slurm */
};
static struct fake_tagged fake_tagged[8];
static int fake_ntagged, fake_scripts_read;

static int fake_poll_tagged(void *ctx,
			    int (*cb)(const struct hb_slurm_change *, void *),
			    void *arg, struct hb_err *err)
{
	int rc = 0;

	(void)ctx;
	(void)err;
	pthread_mutex_lock(&fake_mu);
	fake_polls++;
	for (int i = 0; !rc && i < fake_ntagged; i++) {
		const struct fake_tagged *t = &fake_tagged[i];
		struct hb_slurm_change ch = {
			.slurm_job_id = t->slurm_id,
			.state = t->cancelled ? HB_JOB_CANCELLED
				 : strcmp(t->target, "kubernetes")
					 ? HB_JOB_QUEUED
					 : HB_JOB_RUNNING,
			.exit_code = -1,
			.snap = t->snap,
			.uid = getuid(),
			.account = t->account,
			.name = t->name,
			.time_limit_min = 30,
		};

		memcpy(ch.id, t->id, sizeof(ch.id));
		memcpy(ch.target, t->target, sizeof(ch.target));
		snprintf(ch.partition, sizeof(ch.partition), "%s",
			 t->partition);
		rc = cb(&ch, arg);
	}
	pthread_mutex_unlock(&fake_mu);
	return rc;
}

static int fake_batch_script(void *ctx, int64_t slurm_id, struct hb_buf *out,
			     struct hb_err *err)
{
	int rc = hb_err_set(err, HB_ENOENT, NULL, 0, "no such job");

	(void)ctx;
	pthread_mutex_lock(&fake_mu);
	fake_scripts_read++;
	for (int i = 0; i < fake_ntagged; i++)
		if (fake_tagged[i].slurm_id == slurm_id &&
		    fake_tagged[i].script)
			rc = hb_buf_puts(out, fake_tagged[i].script);
	pthread_mutex_unlock(&fake_mu);
	return rc;
}

static int setup_tagged(void **state)
{
	static const struct hb_slurm_side_ops be = {
		.slurm_submit = fake_submit,
		.slurm_cancel = fake_cancel,
		.slurm_poll = fake_poll_tagged,
		.slurm_batch_script = fake_batch_script,
	};

	fake_ntagged = fake_polls = fake_scripts_read = 0;
	return setup_with(state, &be, 0);
}

/* The lease the daemon published for a plugin that asked for one (a
 * hello on the notice socket): wait for its snapshot. */
static void published_lease(struct fixture *f, int64_t *lo, int64_t *hi)
{
	static const char hello[] = "{\"op\":\"hello\",\"nonce\":\"00000000000000aa\"}";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hb_snapfile sf = { 0 };
	char path[160];
	int i, fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/hpcbridged.notice",
		 f->dir);
	snprintf(path, sizeof(path), "%s/placement.snap", f->dir);
	/* one hello (each would lease anew), once the socket is there */
	for (i = 0; i < 200; i++) {
		if (sendto(fd, hello, strlen(hello), 0, (struct sockaddr *)&sa,
			   sizeof(sa)) > 0)
			break;
		nap(20);
	}
	close(fd);
	assert_true(i < 200);
	for (i = 0; i < 200; i++) {
		if (!hb_snapfile_open(path, getuid(), &sf, NULL)) {
			if (sf.meta.lease_lo)
				break;
			hb_snapfile_close(&sf);
		}
		nap(20);
	}
	assert_true(i < 200);
	*lo = (int64_t)sf.meta.lease_lo;
	*hi = (int64_t)sf.meta.lease_hi;
	hb_snapfile_close(&sf);
	assert_true(*lo > 0 && *hi >= *lo + 10);
}

/* The status of job id, or NULL when the daemon has none (not ok). */
static cJSON *status_of(struct fixture *f, const char *id)
{
	char req[128];
	cJSON *r;

	snprintf(req, sizeof(req), "{\"op\":\"status\",\"id\":\"%s\"}", id);
	r = call(f, req);
	if (hb_proto_reply_status(r, NULL)) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* An op's error code for id (0: ok). */
static int op_rc(struct fixture *f, const char *op, const char *id)
{
	char req[128];
	cJSON *r;
	int rc;

	snprintf(req, sizeof(req), "{\"op\":\"%s\",\"id\":\"%s\"}", op, id);
	r = call(f, req);
	rc = hb_proto_reply_status(r, NULL);
	cJSON_Delete(r);
	return rc;
}

/*
 * Jobs the plugin decided in slurmctld whose notices never came: a poll
 * that reports them tagged with a snap rebuilds each decision from Slurm
 * (a burst job's request from its proxy's script) and binds its Slurm
 * job; later polls do not again; an id never leased, and a tag without
 * a snap, are not taken.  Until then a shadow hears "try again".
 */
static void test_recover_decisions(void **state)
{
	struct fixture *f = *state;
	int64_t lo, hi;
	char ids[6][32], user[64] = "", req[512];
	struct hb_buf kube;
	cJSON *r;
	int i, reads;

	published_lease(f, &lo, &hi);
	for (i = 0; i < 4; i++)
		snprintf(ids[i], sizeof(ids[i]), "hb-%06lld",
			 (long long)(lo + i));
	snprintf(ids[4], sizeof(ids[4]), "hb-%06lld", (long long)(hi + 500));
	snprintf(ids[5], sizeof(ids[5]), "hb-%06lld", (long long)(lo + 5));
	/* a shadow before the decision is recorded: try again; an id past
	 * every lease: no such job */
	assert_int_equal(op_rc(f, "remote_start", ids[1]), HB_EUNAVAIL);
	assert_int_equal(op_rc(f, "remote_poll", ids[1]), HB_EUNAVAIL);
	assert_int_equal(op_rc(f, "remote_start", ids[4]), HB_ENOENT);

	snprintf(req, sizeof(req),
		 "{\"uid\":%u,\"account\":\"chem\",\"partition\":\"gpu\","
		 "\"slurm_job_name\":\"burst\",\"time_limit_min\":30,"
		 "\"script\":\"#!/bin/sh\\necho hi\\n\",\"env\":[\"A=1\"]}",
		 (unsigned)getuid());
	hb_buf_init(&kube, 0);
	assert_int_equal(hb_buf_puts(&kube, "#!/bin/sh\nexec hpcbridge "
					    "shadow x\n"),
			 0);
	assert_int_equal(hb_rules_proxy_payload(&kube, req, strlen(req)), 0);
	pthread_mutex_lock(&fake_mu);
	fake_tagged[0] = (struct fake_tagged){ .target = "slurm",
					       .snap = 1795845206222,
					       .slurm_id = 9001,
					       .account = "physics",
					       .name = "onslurm",
					       .partition = "cpu" };
	fake_tagged[1] = (struct fake_tagged){ .target = "kubernetes",
					       .snap = 1795845206222,
					       .slurm_id = 9002,
					       .account = "",
					       .name = "hpcbridge-proxy",
					       .partition = "burst",
					       .script = kube.data };
	/* a proxy whose script carries no request */
	fake_tagged[2] = (struct fake_tagged){ .target = "kubernetes",
					       .snap = 7,
					       .slurm_id = 9003,
					       .account = "",
					       .name = "p",
					       .partition = "burst",
					       .script = "#!/bin/sh\nexit 0\n" };
	/* a tag without a snap: the daemon's own reply, never rebuilt */
	fake_tagged[3] = (struct fake_tagged){ .target = "slurm",
					       .slurm_id = 9004,
					       .account = "a",
					       .name = "n",
					       .partition = "cpu" };
	/* an id no lease ever held */
	fake_tagged[4] = (struct fake_tagged){ .target = "slurm",
					       .snap = 7,
					       .slurm_id = 9005,
					       .account = "a",
					       .name = "n",
					       .partition = "cpu" };
	/* a proxy cancelled before its decision was recorded */
	fake_tagged[5] = fake_tagged[1];
	fake_tagged[5].slurm_id = 9006;
	fake_tagged[5].cancelled = 1;
	for (i = 0; i < 6; i++)
		memcpy(fake_tagged[i].id, ids[i], sizeof(ids[i]));
	fake_ntagged = 6;
	pthread_mutex_unlock(&fake_mu);

	for (i = 0; i < 200 && !(r = status_of(f, ids[2])); i++)
		nap(20);
	assert_non_null(r);
	assert_string_equal(str(r, "job.target"), "kubernetes");
	assert_string_equal(str(r, "job.state"), "failed");
	assert_non_null(strstr(str(r, "job.reason"),
			       "carries no decide request"));
	assert_int_equal(num(cJSON_GetObjectItem(r, "job"), "slurm_job_id"),
			 9003);
	cJSON_Delete(r);
	/* its shadow hears it over, with the reason */
	snprintf(req, sizeof(req),
		 "{\"op\":\"remote_start\",\"id\":\"%s\"}", ids[2]);
	r = call(f, req);
	expect_ok(r);
	assert_string_equal(str(r, "phase"), "failed");
	cJSON_Delete(r);

	r = status_of(f, ids[0]);
	assert_non_null(r);
	{
		const cJSON *j = cJSON_GetObjectItem(r, "job");
		struct passwd *pw = getpwuid(getuid());

		if (pw)
			snprintf(user, sizeof(user), "%s", pw->pw_name);
		assert_string_equal(str(j, "target"), "slurm");
		assert_string_equal(str(j, "state"), "queued");
		assert_string_equal(str(j, "account"), "physics");
		assert_string_equal(str(j, "partition"), "cpu");
		assert_int_equal(num(j, "uid"), getuid());
		if (user[0])
			assert_string_equal(str(j, "user"), user);
		assert_int_equal(num(j, "slurm_job_id"), 9001);
	}
	cJSON_Delete(r);
	r = status_of(f, ids[1]);
	assert_non_null(r);
	{
		const cJSON *j = cJSON_GetObjectItem(r, "job");

		assert_string_equal(str(j, "target"), "kubernetes");
		assert_string_equal(str(j, "state"), "pending");
		/* from the proxy's request, not the proxy */
		assert_string_equal(str(j, "account"), "chem");
		assert_string_equal(str(j, "partition"), "gpu");
		assert_string_equal(str(j, "name"), "burst");
		assert_int_equal(num(j, "uid"), getuid());
		assert_int_equal(num(j, "slurm_job_id"), 9002);
	}
	cJSON_Delete(r);
	assert_null(r = status_of(f, ids[3]));
	assert_null(r = status_of(f, ids[4]));
	r = status_of(f, ids[5]);
	assert_non_null(r);
	assert_string_equal(str(r, "job.state"), "cancelled");
	assert_non_null(strstr(str(r, "job.reason"), "ended before"));
	assert_int_equal(num(cJSON_GetObjectItem(r, "job"), "slurm_job_id"),
			 9006);
	cJSON_Delete(r);

	/* polls go on reporting them: nothing is rebuilt twice */
	pthread_mutex_lock(&fake_mu);
	reads = fake_scripts_read;
	i = fake_polls;
	pthread_mutex_unlock(&fake_mu);
	assert_int_equal(reads, 3);
	for (int polls = i; polls < i + 3;) {
		nap(100);
		pthread_mutex_lock(&fake_mu);
		polls = fake_polls;
		pthread_mutex_unlock(&fake_mu);
	}
	pthread_mutex_lock(&fake_mu);
	assert_int_equal(fake_scripts_read, reads);
	pthread_mutex_unlock(&fake_mu);
	r = call(f, "{\"op\":\"jobs\",\"all\":true}");
	expect_ok(r);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "jobs")),
			 4);
	cJSON_Delete(r);
	assert_null(r = status_of(f, ids[3]));
	pthread_mutex_lock(&fake_mu);
	fake_ntagged = 0; /* kube's text is going */
	pthread_mutex_unlock(&fake_mu);
	hb_buf_free(&kube);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_submit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cancel_slurm_job, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigterm_finishes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_orphans_lost, setup_poll,
						teardown),
		cmocka_unit_test_setup_teardown(test_orphans_need_polls,
						setup_with_failing_poll,
						teardown),
		cmocka_unit_test_setup_teardown(test_checkpoints_off_loop,
						setup_ckpt, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_decides, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kept_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_recover_decisions,
						setup_tagged, teardown),
	};

	/* the loop reads SIGTERM from a signalfd: block it everywhere */
	if (hb_daemon_block_signals())
		return 1;
	hb_log_set_level(HB_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
