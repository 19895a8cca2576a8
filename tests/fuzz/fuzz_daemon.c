/*
 * fuzz_daemon.c - the daemon's request handlers over untrusted requests.
 *
 * One hpcbridged core (hb_daemon_run) runs in a thread of this process, its
 * state on tmpfs, with a fake Slurm that accepts every submit and cancel.
 * Burst jobs go to the local backend, in a directory of the same tmpfs
 * (remote.backend local: it runs a job's script as the job's user, here
 * never root nor a real account: see JOB_UID), or,
 * with HB_FUZZ_BACKEND=kubernetes, to a Kubernetes backend whose API
 * server refuses connections (nothing is ever run).  Each input is a sequence of requests
 * separated by the byte 0x1E; every piece that is a JSON object with a
 * string "op" is sent, framed, on one kept connection, so a sequence can
 * submit a job and then act on it: the text @ID in a request is replaced
 * by the last "id" a reply gave.  Pieces that are not requests are left to
 * fuzz_proto.c, which covers the framing and the JSON reader.
 *
 * The seeds have root decide burst jobs for the user, which the user
 * then starts, polls, cancels and abandons (remote_start, remote_poll,
 * cancel with and without an array_task), so the local backend's paths
 * run for a caller that is not root.
 *
 * A request with "@as": "user" is sent (without that field) on a second
 * connection, made as the user nobody (65534), and one with "@as":
 * "admin" on a third, made as the user daemon (1), whom the daemon's
 * configuration names an admin; so the paths of a plain user and of an
 * admin are explored as well as those of root.  The connecting thread
 * alone takes that effective uid for the connect, through the raw
 * setresuid system call (glibc's would change every thread's), and the
 * daemon reads it with SO_PEERCRED.  Run as another user than root, every
 * request goes as that user.
 *
 * What must hold: every request gets a well-formed reply within 10 s
 * (hb_proto_call_on checks the reply's shape), the daemon neither
 * crashes nor trips ASan/UBSan, whatever the fields hold, the user never
 * gets ok for another's job, and neither the user nor the admin gets ok
 * for a decide (only root and SlurmUser decide).
 */
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gateway/daemon/daemon.h"
#include "hpcbridge/config.h"
#include "hpcbridge/proto.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

#define SEP	   0x1e
#define REPLY_MS   10000
#define MAX_PIECES 16

/* Who sends a request: its "@as", and the uid it connects as. */
enum caller { ROOT, USER, ADMIN, NCALLERS };
static const struct {
	const char *as;
	uid_t uid; /* and gid */
} callers[NCALLERS] = { { NULL, 0 }, { "user", 65534 }, { "admin", 1 } };

/* With the local backend a burst job's script really runs, as the uid its
 * decide named: a decide for any uid but the user's is made for this
 * one, which has no account, so that a mutated script ("hostname x",
 * "kill -9 -1") never runs as root or as a real user.  The user's own
 * jobs stay the user's, and the owner check below still sees a job that
 * is not the user's. */
#define JOB_UID 65533
static int local_backend;

static struct hb_daemon *daemon_;
static pthread_t loop_thread;
static char dir[64], sock[96];
static struct hb_proto_conn conns[NCALLERS] = { HB_PROTO_CONN_INIT,
						HB_PROTO_CONN_INIT,
						HB_PROTO_CONN_INIT };
static char last_id[32];
static int verbose; /* HB_FUZZ_VERBOSE=1: print each request and reply */

/* ---- a fake Slurm: every call succeeds, at once ---------------------- */

static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t fake_next_id = 1000;

static int fake_submit(void *ctx, const struct hb_submit_req *req,
		       int64_t *slurm_job_id, struct hb_err *err)
{
	(void)ctx;
	(void)req;
	(void)err;
	pthread_mutex_lock(&fake_mu);
	*slurm_job_id = fake_next_id++;
	pthread_mutex_unlock(&fake_mu);
	return 0;
}

static int fake_cancel(void *ctx, int64_t slurm_job_id, struct hb_err *err)
{
	(void)ctx;
	(void)slurm_job_id;
	(void)err;
	return 0;
}

static int fake_poll(void *ctx,
		     int (*cb)(const struct hb_slurm_change *, void *),
		     void *arg, struct hb_err *err)
{
	(void)ctx;
	(void)cb;
	(void)arg;
	(void)err;
	return 0;
}

/* ---- the daemon, once per process ------------------------------------ */

static void *run_loop(void *arg)
{
	(void)arg;
	if (hb_daemon_run(daemon_))
		abort();
	return NULL;
}

static void cleanup_file(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static int rm_entry(const char *path, const struct stat *sb, int type,
		    struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* At exit: SIGTERM (read by the loop's signalfd), then remove the files. */
static void stop_daemon(void)
{
	for (int i = 0; i < NCALLERS; i++)
		hb_proto_conn_close(&conns[i]);
	kill(getpid(), SIGTERM);
	pthread_join(loop_thread, NULL);
	hb_daemon_free(daemon_);
	cleanup_file("state.db");
	cleanup_file("state.db-wal");
	cleanup_file("state.db-shm");
	cleanup_file("kubeconfig");
	/* the local backend's jobs (their scripts have ended or go on
	 * without it) */
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_daemon: %s: %s\n", what, msg);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const struct hb_slurm_side_ops be = {
		.slurm_submit = fake_submit,
		.slurm_cancel = fake_cancel,
		.slurm_poll = fake_poll,
	};
	struct hb_daemon_opts opts = { 0 };
	struct hb_err err = { 0 };
	struct hb_config cfg;
	char text[1024], kc[160], remote[256];
	const char *backend = getenv("HB_FUZZ_BACKEND");
	FILE *f;

	(void)argc;
	(void)argv;
	verbose = getenv("HB_FUZZ_VERBOSE") != NULL;
	snprintf(dir, sizeof(dir), "%s/hb-fuzz-daemon-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp", dir);
	if (chmod(dir, 0711)) /* the user's connection reaches the socket */
		die("chmod", dir);
	snprintf(sock, sizeof(sock), "%s/api.sock", dir);
	/* A cluster nobody serves: port 1 on loopback refuses at once. */
	snprintf(kc, sizeof(kc), "%s/kubeconfig", dir);
	if (!(f = fopen(kc, "w")))
		die("fopen", kc);
	fputs("apiVersion: v1\nkind: Config\ncurrent-context: fuzz\n"
	      "clusters:\n- name: fuzz\n  cluster:\n"
	      "    server: http://127.0.0.1:1\n"
	      "users:\n- name: fuzz\n  user:\n    token: x\n"
	      "contexts:\n- name: fuzz\n  context:\n    cluster: fuzz\n"
	      "    user: fuzz\n",
	      f);
	if (fclose(f))
		die("fclose", kc);
	if (backend && !strcmp(backend, "kubernetes"))
		snprintf(remote, sizeof(remote),
			 "  backend: kubernetes\n  kubeconfig: %s\n", kc);
	else {
		local_backend = 1;
		snprintf(remote, sizeof(remote),
			 "  backend: local\n  local_dir: %s/remote\n", dir);
	}
	snprintf(text, sizeof(text),
		 "daemon:\n  socket: %s\n  state: %s/state.db\n  workers: 2\n"
		 "  log_level: error\n  admins: [daemon]\n"
		 "remote:\n%s"
		 "placement:\n  partitions: {gpu: kubernetes, cpu: slurm}\n",
		 sock, dir, remote);
	if (hb_config_parse(text, strlen(text), "fuzz.yaml", &cfg, &err))
		die("config", err.msg);
	if (hb_daemon_block_signals())
		die("signals", "cannot block");
	if (hb_daemon_new(&opts, &cfg, &daemon_, &err))
		die("hb_daemon_new", err.msg);
	hb_daemon_set_slurm(daemon_, &be);
	if (pthread_create(&loop_thread, NULL, run_loop, NULL))
		die("pthread_create", "failed");
	atexit(stop_daemon);
	return 0;
}

/* ---- the mutator ------------------------------------------------------ */

static const char *const ops[] = {
	"ping",	  "decide",	  "submit",	 "jobs",	   "status",
	"cancel", "remote_start", "remote_poll", "remote_abandon", "placement",
};

/* The fields the handlers read, and those a decide's jobspec holds. */
/* clang-format off */
static const char *const keys[] = {
	"account", "all", "array_task", "cwd", "id", "limit", "max", "name",
	"offset", "op", "partition", "reason", "script", "slurm_job_id",
	"slurm_job_name", "target", "time_limit_min", "uid", "user", "argv",
	"env", "options", "jobspec", "deadline", "checkpoint", "data",
	"array", "ranges", "spec", "ntasks", "nodes_min", "gpus", "mem",
	"time_limit", "kind",
};

static const double numbers[] = {
	0, 1, -1, 2, 3, 4, 7, 63, 64, 255, 4096, 65536, 1048576, 4000000,
	4000001, 2147483647.0, 2147483648.0, 4294967294.0, 4294967295.0,
	9007199254740992.0, 9.3e18, -9.3e18, 1e308, -1e308, 0.5, -0.0,
};

static const char *const strings[] = {
	"", "@ID", "hb-000001", "hb-999999", "root", "nobody", "0", "-1",
	"auto", "slurm", "kubernetes", "rejected", "gpu", "cpu", "burst",
	"/tmp", "relative/dir", "A=1", "=", "x\xc3\x28y", "\xe2\x82\xac",
	"2026-12-01T00:00:00Z", "not-a-time", "s3://b/k", "UNLIMITED",
	"#!/bin/sh\necho hi\n",
};
/* clang-format on */

#define NCOUNT(a) (sizeof(a) / sizeof((a)[0]))

struct node_ref {
	cJSON *parent, *item;
};

static void collect(cJSON *parent, struct node_ref *out, size_t *n, size_t cap)
{
	for (cJSON *it = parent->child; it && *n < cap; it = it->next) {
		out[(*n)++] = (struct node_ref){ parent, it };
		if (cJSON_IsObject(it) || cJSON_IsArray(it))
			collect(it, out, n, cap);
	}
}

static cJSON *random_value(unsigned *r, size_t depth)
{
	char big[2048];

	switch (rand_r(r) % 8) {
	case 0:
	case 1:
		return cJSON_CreateNumber(numbers[rand_r(r) % NCOUNT(numbers)]);
	case 2:
		return cJSON_CreateNumber((double)(rand_r(r) % 16));
	case 3:
	case 4:
		return cJSON_CreateString(strings[rand_r(r) % NCOUNT(strings)]);
	case 5:
		memset(big, 'a' + rand_r(r) % 26, sizeof(big) - 1);
		big[(size_t)1 << (rand_r(r) % 11)] = '\0';
		return cJSON_CreateString(big);
	case 6:
		return rand_r(r) % 2 ? cJSON_CreateNull()
				     : cJSON_CreateBool(rand_r(r) % 2);
	default:
		if (depth > 2)
			return cJSON_CreateArray();
		{
			cJSON *o = rand_r(r) % 2 ? cJSON_CreateObject()
						 : cJSON_CreateArray();
			cJSON *v = random_value(r, depth + 1);

			if (o && v && cJSON_IsObject(o))
				cJSON_AddItemToObject(
					o, keys[rand_r(r) % NCOUNT(keys)], v);
			else if (o && v)
				cJSON_AddItemToArray(o, v);
			else
				cJSON_Delete(v);
			return o;
		}
	}
}

/* One change to one request; 0 if it could not be made. */
static int mutate_request(cJSON *req, unsigned *r)
{
	struct node_ref refs[256];
	size_t n = 0;
	struct node_ref x;
	cJSON *v;

	if (rand_r(r) % 8 == 0) {
		v = cJSON_CreateString(ops[rand_r(r) % NCOUNT(ops)]);
		return v &&
		       cJSON_ReplaceItemInObjectCaseSensitive(req, "op", v);
	}
	if (rand_r(r) % 8 == 0) { /* another caller: root, user or admin */
		enum caller who = (enum caller)(rand_r(r) % NCALLERS);

		cJSON_DeleteItemFromObjectCaseSensitive(req, "@as");
		return who == ROOT ||
		       cJSON_AddStringToObject(req, "@as", callers[who].as);
	}
	/* Half the time only the request's own fields, which the handlers
	 * read; a decide's jobspec alone can hold dozens of nodes, and has
	 * its own target (fuzz_jobspec.c). */
	if (rand_r(r) % 2)
		for (cJSON *it = req->child; it && n < NCOUNT(refs);
		     it = it->next)
			refs[n++] = (struct node_ref){ req, it };
	else
		collect(req, refs, &n, NCOUNT(refs));
	switch (rand_r(r) % 4) {
	case 0: /* add a field the handlers read */
		v = random_value(r, 0);
		return v && cJSON_AddItemToObject(
				    req, keys[rand_r(r) % NCOUNT(keys)], v);
	case 1: /* remove one, but keep "op" a string */
		if (!n)
			return 0;
		x = refs[rand_r(r) % n];
		if (x.parent == req && !strcmp(x.item->string, "op"))
			return 0;
		cJSON_Delete(cJSON_DetachItemViaPointer(x.parent, x.item));
		return 1;
	case 2: /* rename a key */
		if (!n)
			return 0;
		x = refs[rand_r(r) % n];
		if (!x.item->string ||
		    (x.parent == req && !strcmp(x.item->string, "op")))
			return 0;
		v = cJSON_DetachItemViaPointer(x.parent, x.item);
		cJSON_AddItemToObject(x.parent, keys[rand_r(r) % NCOUNT(keys)],
				      v);
		return 1;
	default: /* set a value */
		if (!n)
			return 0;
		x = refs[rand_r(r) % n];
		if (x.parent == req && !strcmp(x.item->string, "op"))
			return 0;
		if (!(v = random_value(r, 0)))
			return 0;
		return cJSON_ReplaceItemViaPointer(x.parent, x.item, v);
	}
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	cJSON *reqs[MAX_PIECES];
	const char *p = (const char *)data, *end = p + size, *sep;
	size_t n = 0, out = 0;
	unsigned r = seed;
	int ok = 0;

	if (rand_r(&r) % 4 == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	while (p <= end && n < MAX_PIECES) {
		sep = memchr(p, SEP, (size_t)(end - p));
		if (!sep)
			sep = end;
		reqs[n] = cJSON_ParseWithLength(p, (size_t)(sep - p));
		if (cJSON_IsObject(reqs[n]) &&
		    cJSON_IsString(
			    cJSON_GetObjectItemCaseSensitive(reqs[n], "op")))
			n++;
		else
			cJSON_Delete(reqs[n]);
		p = sep + 1;
	}
	if (n == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	if (rand_r(&r) % 8 == 0 && n < MAX_PIECES) { /* repeat a request */
		cJSON *again = cJSON_Duplicate(reqs[rand_r(&r) % n], 1);

		if (again)
			reqs[n++] = again;
	}
	for (int tries = 0; !ok && tries < 4; tries++)
		ok = mutate_request(reqs[rand_r(&r) % n], &r);
	if (!ok) {
		for (size_t i = 0; i < n; i++)
			cJSON_Delete(reqs[i]);
		return LLVMFuzzerMutate(data, size, max_size);
	}
	for (size_t i = 0; i < n; i++) {
		char *t = cJSON_PrintUnformatted(reqs[i]);
		size_t len = t ? strlen(t) : 0;

		if (t && out + len + (i > 0) <= max_size) {
			if (i > 0)
				data[out++] = SEP;
			memcpy(data + out, t, len);
			out += len;
		}
		cJSON_free(t);
		cJSON_Delete(reqs[i]);
	}
	return out;
}

/* This thread's effective uid and gid only (the raw system calls: glibc's
 * wrappers would change every thread's). */
static void become(uid_t uid, gid_t gid)
{
	if (uid) {
		if (syscall(SYS_setresgid, -1, gid, -1) ||
		    syscall(SYS_setresuid, -1, uid, -1))
			die("setresuid", "cannot become the user");
	} else if (syscall(SYS_setresuid, -1, 0, -1) ||
		   syscall(SYS_setresgid, -1, gid, -1)) {
		die("setresuid", "cannot become root again");
	}
}

/* Who is to send req: its "@as" (removed here); ROOT (this process's
 * own uid) when that is not root. */
static enum caller caller_of(cJSON *req)
{
	const cJSON *as = cJSON_GetObjectItemCaseSensitive(req, "@as");
	enum caller who = ROOT;

	for (int i = USER; i < NCALLERS && cJSON_IsString(as); i++)
		if (!strcmp(as->valuestring, callers[i].as))
			who = (enum caller)i;
	cJSON_DeleteItemFromObjectCaseSensitive(req, "@as");
	return geteuid() == 0 ? who : ROOT;
}

/* Send req as who, on who's connection. */
static int call(const cJSON *req, enum caller who, cJSON **reply,
		struct hb_err *err)
{
	gid_t gid = getegid();
	int rc;

	if (who == ROOT)
		return hb_proto_call_on(&conns[ROOT], sock, req, REPLY_MS,
					reply, err);
	become(callers[who].uid, callers[who].uid);
	rc = hb_proto_call_on(&conns[who], sock, req, REPLY_MS, reply, err);
	become(0, gid);
	return rc;
}

/* ---- one input: a sequence of requests -------------------------------- */

/* piece with each "@ID" replaced by the last id a reply gave; NULL if it
 * is not a request. */
static cJSON *request_of(const char *piece, size_t len)
{
	char *text;
	size_t idlen = strlen(last_id), n = 0;
	cJSON *req, *op;

	text = malloc(len * (idlen > 3 ? idlen : 3) / 3 + 1);
	if (!text)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (i + 3 <= len && !memcmp(piece + i, "@ID", 3)) {
			memcpy(text + n, last_id, idlen);
			n += idlen;
			i += 2;
		} else {
			text[n++] = piece[i];
		}
	}
	text[n] = '\0';
	req = cJSON_ParseWithLength(text, n);
	free(text);
	op = cJSON_GetObjectItemCaseSensitive(req, "op");
	if (!cJSON_IsObject(req) || !cJSON_IsString(op)) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/*
 * The owner of each job a decide or submit made (the last 64): a decide's
 * "uid", a submit's caller.  The user may never act on another's job,
 * nor see it: no op that names a job may answer the user ok.
 */
static struct {
	char id[32];
	double uid;
} owners[64];
static unsigned nowners;

static void remember_id(const cJSON *req, enum caller who, const cJSON *reply)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(reply, "id"),
		    *op = cJSON_GetObjectItemCaseSensitive(req, "op"),
		    *uid = cJSON_GetObjectItemCaseSensitive(req, "uid");
	double owner = -1;

	if (!cJSON_IsString(id) || strlen(id->valuestring) >= sizeof(last_id))
		return;
	snprintf(last_id, sizeof(last_id), "%s", id->valuestring);
	if (!strcmp(op->valuestring, "submit"))
		owner = who == ROOT ? geteuid() : callers[who].uid;
	else if (!strcmp(op->valuestring, "decide") && cJSON_IsNumber(uid))
		owner = uid->valuedouble;
	else
		return;
	snprintf(owners[nowners % 64].id, sizeof(owners[0].id), "%s",
		 id->valuestring);
	owners[nowners++ % 64].uid = owner;
}

static void check_rules(const cJSON *req, enum caller who, const cJSON *reply)
{
	static const char *const job_ops[] = { "status", "cancel",
					       "remote_start", "remote_poll",
					       "remote_abandon" };
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id"),
		    *ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	const char *op =
		cJSON_GetObjectItemCaseSensitive(req, "op")->valuestring;
	size_t i = 0;

	if (who != ROOT && !strcmp(op, "decide") && cJSON_IsTrue(ok))
		die("a decide from neither root nor SlurmUser was answered",
		    callers[who].as);
	while (i < NCOUNT(job_ops) && strcmp(op, job_ops[i]))
		i++;
	if (who != USER || i == NCOUNT(job_ops) || !cJSON_IsString(id) ||
	    !cJSON_IsTrue(ok))
		return;
	for (i = 0; i < 64 && i < nowners; i++)
		if (!strcmp(owners[i].id, id->valuestring) &&
		    owners[i].uid != callers[USER].uid)
			die("the user acted on another's job", id->valuestring);
}

/* A decide's job is for the user (65534) or for JOB_UID, never for root
 * or another real account (see JOB_UID). */
static void harmless_owner(cJSON *req)
{
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
	cJSON *uid = cJSON_GetObjectItemCaseSensitive(req, "uid");

	if (strcmp(op->valuestring, "decide") || !cJSON_IsNumber(uid) ||
	    uid->valuedouble == callers[USER].uid)
		return;
	cJSON_SetNumberValue(uid, JOB_UID);
	cJSON_DeleteItemFromObjectCaseSensitive(req, "user");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *sep;
	int pieces = 0;

	while (p <= end && pieces < MAX_PIECES) {
		struct hb_err err = { 0 };
		cJSON *req, *reply = NULL;
		enum caller who;
		int rc;

		sep = memchr(p, SEP, (size_t)(end - p));
		if (!sep)
			sep = end;
		req = request_of(p, (size_t)(sep - p));
		p = sep + 1;
		if (!req)
			continue;
		pieces++;
		who = caller_of(req);
		if (local_backend)
			harmless_owner(req);
		/* The store grows over a run: a thousand-job reply (the
		 * default) to every "jobs" slowed a 10-minute run from 128
		 * inputs/s to 22.  A limit the input gives is kept. */
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(req, "op")
				    ->valuestring,
			    "jobs") &&
		    !cJSON_GetObjectItemCaseSensitive(req, "limit"))
			cJSON_AddNumberToObject(req, "limit", 20);
		rc = call(req, who, &reply, &err);
		/* A request too large for a frame is refused before it is
		 * sent; anything else unanswered means the daemon failed. */
		if (rc == HB_ETOOBIG) {
			cJSON_Delete(req);
			continue;
		}
		if (rc)
			die("no reply", err.msg);
		if (verbose) {
			char *a = cJSON_PrintUnformatted(req),
			     *b = cJSON_PrintUnformatted(reply);

			fprintf(stderr, "> %s\n< %s\n", a ? a : "?",
				b ? b : "?");
			cJSON_free(a);
			cJSON_free(b);
		}
		check_rules(req, who, reply);
		remember_id(req, who, reply);
		cJSON_Delete(req);
		cJSON_Delete(reply);
	}
	return 0;
}
