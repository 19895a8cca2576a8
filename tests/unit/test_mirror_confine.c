/*
 * test_mirror_confine.c - hb_mirror_pull() against a hostile S3 server
 * (libmicrohttpd in this process, answering whatever it is asked): a
 * listing that names keys outside the prefix or not of the form
 * checkpoints/ID.json, manifests at valid IDs whose paths climb out of the
 * target, an object longer than its manifest says, and a listing whose
 * pages never end.  Checked: no key a listing
 * gave is ever fetched, nothing appears beside the target, the directory
 * already there keeps its bytes, and a pull returns.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gateway/mirror/mirror_int.h"
#include "testutil.h"

#define NOBJ 16
#define NGOT 64
#define KEYMAX 512

/* The server: objects by key, the listing it gives for any prefix, and
 * every key it was asked for. */
struct fake {
	struct MHD_Daemon *d;
	unsigned port;
	pthread_mutex_t mu;
	char key[NOBJ][KEYMAX];
	char *body[NOBJ];
	int nobj;
	char list[8192];	/* <Contents> elements */
	atomic_int endless;	/* every page truncated, the same token */
	atomic_int pages;
	char got[NGOT][KEYMAX];	/* GETs of keys, in order */
	int ngot;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ok = MHD_queue_response(c, status, r);

	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result list_page(struct fake *f, struct MHD_Connection *c)
{
	char xml[10240];
	int more = atomic_load(&f->endless) == 1;

	atomic_fetch_add(&f->pages, 1);
	snprintf(xml, sizeof(xml),
		 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		 "<ListBucketResult><Name>bkt</Name><IsTruncated>%s"
		 "</IsTruncated>%s%s</ListBucketResult>",
		 more ? "true" : "false",
		 more ? "<NextContinuationToken>again"
			"</NextContinuationToken>" : "", f->list);
	return reply(c, 200, xml);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *up,
			      size_t *upn, void **state)
{
	struct fake *f = cls;
	const char *k = url + strlen("/bkt/");
	enum MHD_Result ok;

	(void)version;
	(void)up;
	(void)upn;
	(void)state;
	if (strcmp(method, "GET"))
		return reply(c, 405, "");
	if (!strcmp(url, "/bkt") || !strcmp(url, "/bkt/"))
		return list_page(f, c);
	if (strncmp(url, "/bkt/", 5))
		return reply(c, 404, "");
	pthread_mutex_lock(&f->mu);
	if (f->ngot < NGOT)
		snprintf(f->got[f->ngot++], KEYMAX, "%s", k);
	for (int i = 0; i < f->nobj; i++)
		if (!strcmp(f->key[i], k)) {
			ok = reply(c, 200, f->body[i]);
			pthread_mutex_unlock(&f->mu);
			return ok;
		}
	pthread_mutex_unlock(&f->mu);
	return reply(c, 404, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			     "<Error><Code>NoSuchKey</Code><Message>none"
			     "</Message></Error>");
}

/* Serve body at key, and list key (with its size) unless listed is 0. */
static void put(struct fake *f, const char *key, const char *body, int listed)
{
	size_t n = strlen(f->list);

	assert_true(f->nobj < NOBJ);
	snprintf(f->key[f->nobj], KEYMAX, "%s", key);
	f->body[f->nobj++] = strdup(body);
	if (listed)
		snprintf(f->list + n, sizeof(f->list) - n,
			 "<Contents><Key>%s</Key><Size>%zu</Size>"
			 "<LastModified>2026-11-27T00:00:00.000Z</LastModified>"
			 "</Contents>", key, strlen(body));
}

static struct fake *fake_start(void)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_in a = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *i;

	assert_non_null(f);
	pthread_mutex_init(&f->mu, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
				answer, f, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&a, MHD_OPTION_END);
	assert_non_null(f->d);
	i = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(i);
	f->port = i->port;
	return f;
}

static void fake_stop(struct fake *f)
{
	MHD_stop_daemon(f->d);
	for (int i = 0; i < f->nobj; i++)
		free(f->body[i]);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

static struct hb_s3 *client(const struct fake *f)
{
	char ep[64];
	struct hb_s3_opts o = { .endpoint = ep, .region = "us-east-1",
				.access_key = "AKTEST", .secret_key = "secret",
				.retries = -1, .timeout_ms = 10000 };
	struct hb_s3 *s3 = NULL;
	struct hb_err err = { 0 };

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", f->port);
	assert_int_equal(hb_s3_new(&o, &s3, &err), 0);
	return s3;
}

/* Problems a listing reported: counted. */
static void count_problem(void *ctx, const char *what, const char *why)
{
	(void)what;
	(void)why;
	(*(int *)ctx)++;
}

/* A manifest of one file with contents body, created at t; its ID in id,
 * its bytes returned (caller frees). */
static char *manifest_of(const char *path, const char *body, int64_t t,
			 char id[HB_MIRROR_ID_LEN + 1])
{
	struct hb_ckpt_manifest *m = hb_ckpt_manifest_new();
	struct hb_err err = { 0 };
	struct hb_buf b;
	uint8_t d[32];

	assert_non_null(m);
	m->created = t;
	mir_sha256(body, strlen(body), d);
	assert_int_equal(hb_ckpt_manifest_set_job(m, "1", &err), 0);
	assert_int_equal(hb_ckpt_manifest_add(m, path, strlen(body), 0644, d,
					      &err), 0);
	assert_int_equal(hb_ckpt_manifest_seal(m, &err), 0);
	hb_buf_init(&b, 0);
	assert_int_equal(hb_ckpt_manifest_write(m, &b), 0);
	hb_ckpt_manifest_free(m);
	mir_sha256(b.data, b.len, d);
	mir_make_id(t, d, id);
	return hb_buf_steal(&b);
}

/* A temporary directory holding ck/keep, a good checkpoint's file. */
static void make_dir(char *tmp, size_t n)
{
	char p[512];
	FILE *fp;

	snprintf(tmp, n, "/tmp/hb-confine.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	snprintf(p, sizeof(p), "%s/ck", tmp);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/ck/keep", tmp);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs("the good checkpoint\n", fp);
	fclose(fp);
}

/* The names in dir, sorted and joined by ' '. */
static void names(const char *dir, char *out, size_t n)
{
	struct dirent **v;
	int k = scandir(dir, &v, NULL, alphasort);
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < k; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			len += (size_t)snprintf(out + len, n - len, "%s ",
						v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

/* tmp holds ck alone, and ck its one file with its bytes: make_dir()'s
 * good checkpoint came through untouched, nothing beside it. */
static void assert_intact(const char *tmp)
{
	char dir[128], got[256], *keep;
	size_t n;

	names(tmp, got, sizeof(got));
	assert_string_equal(got, "ck ");
	snprintf(dir, sizeof(dir), "%s/ck", tmp);
	names(dir, got, sizeof(got));
	assert_string_equal(got, "keep ");
	snprintf(got, sizeof(got), "%s/keep", dir);
	keep = hb_test_read_file(got, &n);
	assert_string_equal(keep, "the good checkpoint\n");
	free(keep);
}

static void remove_dir(const char *tmp)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

/* A listing that ignores the prefix asked for and names keys that are not
 * PREFIX/checkpoints/ID.json, each holding a valid manifest dated 2099:
 * none is fetched, and the pull takes the real checkpoint. */
static void test_hostile_listing(void **state)
{
	static const char *hostile[] = {
		"other/checkpoints/20991231T235959Z-aaaaaaaa.json",
		"run/checkpoints/../20991231T235959Z-bbbbbbbb.json",
		"run/checkpoints/sub/20991231T235959Z-cccccccc.json",
		"run/checkpoints/20991231T235959Z-dddddddd.json.bak",
		"run/checkpoints/20991231T235959Z-EEEEEEEE.json",
		"run/checkpoints20991231T235959Z-ffffffff.json",
		"run/objects/20991231T235959Z-00000000.json",
	};
	struct fake *f = fake_start();
	struct hb_s3 *s3 = client(f);
	struct hb_mirror_opts o = { .problem = count_problem };
	struct hb_mirror_stats st;
	struct hb_err err = { 0 };
	char id[HB_MIRROR_ID_LEN + 1], hid[HB_MIRROR_ID_LEN + 1];
	char key[KEYMAX], tmp[64], dir[128], hex[65], *real, *planted, *got;
	int problems = 0;
	uint8_t d[32];
	size_t n;

	(void)state;
	o.ctx = &problems;
	real = manifest_of("data.txt", "real\n", 1795000000, id);
	planted = manifest_of("planted.txt", "planted\n", 4102444799, hid);
	for (size_t i = 0; i < sizeof(hostile) / sizeof(*hostile); i++)
		put(f, hostile[i], planted, 1);
	snprintf(key, sizeof(key), "run/checkpoints/%s.json", id);
	put(f, key, real, 1);
	mir_sha256("real\n", 5, d);
	hb_ckpt_hex(d, hex);
	snprintf(key, sizeof(key), "run/objects/%s", hex);
	put(f, key, "real\n", 0);
	mir_sha256("planted\n", 8, d);
	hb_ckpt_hex(d, hex);
	snprintf(key, sizeof(key), "run/objects/%s", hex);
	put(f, key, "planted\n", 0);

	make_dir(tmp, sizeof(tmp));
	snprintf(dir, sizeof(dir), "%s/ck", tmp);
	assert_int_equal(hb_mirror_pull(s3, "s3://bkt/run", dir, &o, &st, &err),
			 0);
	assert_string_equal(st.id, id);
	assert_int_equal(problems, sizeof(hostile) / sizeof(*hostile));
	/* Two GETs: the real manifest and its one object. */
	assert_int_equal(f->ngot, 2);
	snprintf(key, sizeof(key), "run/checkpoints/%s.json", id);
	assert_string_equal(f->got[0], key);
	snprintf(key, sizeof(key), "%s/data.txt", dir);
	got = hb_test_read_file(key, &n);
	assert_int_equal(n, 5);
	free(got);
	names(tmp, dir, sizeof(dir));
	assert_string_equal(dir, "ck ");
	remove_dir(tmp);
	free(real);
	free(planted);
	hb_s3_free(s3);
	fake_stop(f);
}

/* Manifests at valid IDs whose one path climbs out: refused naming the
 * field, no object fetched, nothing beside the target, which keeps its
 * bytes. */
static void test_hostile_manifest(void **state)
{
	static const char *paths[] = {
		"../escape", "/etc/x", "a/../../b", "a\\u0000b",
		"ok/../../../escape", "a//b", ".", "a/./b", "",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		struct fake *f = fake_start();
		struct hb_s3 *s3 = client(f);
		struct hb_mirror_stats st;
		struct hb_err err = { 0 };
		char body[512], key[KEYMAX], tmp[64], dir[128];
		char id[HB_MIRROR_ID_LEN + 1];
		uint8_t d[32];

		snprintf(body, sizeof(body),
			 "{\n  \"format\": \"hpcbridge-checkpoint/1\",\n"
			 "  \"created\": \"2026-01-01T00:00:00Z\",\n"
			 "  \"job\": \"x\",\n  \"files\": [\n    {\"path\": "
			 "\"%s\", \"size\": 5, \"mode\": \"0644\", \"sha256\":"
			 " \"%064d\"}\n  ]\n}\n", paths[i], 0);
		mir_sha256(body, strlen(body), d);
		mir_make_id(1767225600, d, id);
		snprintf(key, sizeof(key), "run/checkpoints/%s.json", id);
		put(f, key, body, 1);
		make_dir(tmp, sizeof(tmp));
		snprintf(dir, sizeof(dir), "%s/ck", tmp);
		assert_int_equal(hb_mirror_pull(s3, "s3://bkt/run", dir, NULL,
						&st, &err), HB_EINVAL);
		if (!strstr(err.msg, ":6: files[0].path: "))
			fail_msg("\"%s\": %s", paths[i], err.msg);
		assert_int_equal(f->ngot, 1);
		assert_intact(tmp);
		remove_dir(tmp);
		hb_s3_free(s3);
		fake_stop(f);
	}
}

/* An object longer than its manifest says (1 MiB for 5 bytes): the pull
 * stops at the manifest's size, names the file, and the directory already
 * there keeps its bytes; nothing is left beside it. */
static void test_object_too_long(void **state)
{
	struct fake *f = fake_start();
	struct hb_s3 *s3 = client(f);
	struct hb_mirror_stats st;
	struct hb_err err = { 0 };
	char id[HB_MIRROR_ID_LEN + 1], key[KEYMAX], tmp[64], dir[128], hex[65];
	char *real = manifest_of("data.txt", "real\n", 1795000000, id);
	char *big = malloc(1 << 20);
	uint8_t d[32];

	(void)state;
	assert_non_null(big);
	memset(big, 'x', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	snprintf(key, sizeof(key), "run/checkpoints/%s.json", id);
	put(f, key, real, 1);
	mir_sha256("real\n", 5, d);
	hb_ckpt_hex(d, hex);
	snprintf(key, sizeof(key), "run/objects/%s", hex);
	put(f, key, big, 0);
	make_dir(tmp, sizeof(tmp));
	snprintf(dir, sizeof(dir), "%s/ck", tmp);
	assert_int_not_equal(hb_mirror_pull(s3, "s3://bkt/run", dir, NULL, &st,
					    &err), 0);
	if (!strstr(err.msg, "data.txt") || !strstr(err.msg, "longer"))
		fail_msg("%s", err.msg);
	assert_intact(tmp);
	remove_dir(tmp);
	free(big);
	free(real);
	hb_s3_free(s3);
	fake_stop(f);
}

struct run {
	struct hb_s3 *s3;
	const char *dir;
	struct hb_err err;
	int rc;
};

static void *pull_thread(void *u)
{
	struct run *r = u;
	struct hb_mirror_stats st;

	r->rc = hb_mirror_pull(r->s3, "s3://bkt/run", r->dir, NULL, &st,
			       &r->err);
	return NULL;
}

/* A server whose every page is truncated with the same continuation
 * token: the pull stops with an error instead of listing for ever. */
static void test_endless_listing(void **state)
{
	struct fake *f = fake_start();
	struct run r = { .s3 = client(f), .rc = 1 };
	char id[HB_MIRROR_ID_LEN + 1], key[KEYMAX], tmp[64], dir[128];
	char *real = manifest_of("data.txt", "real\n", 1795000000, id);
	struct timespec until;
	pthread_t th;
	int done, pages;

	(void)state;
	snprintf(key, sizeof(key), "run/checkpoints/%s.json", id);
	put(f, key, real, 1);
	atomic_store(&f->endless, 1);
	make_dir(tmp, sizeof(tmp));
	snprintf(dir, sizeof(dir), "%s/new", tmp);
	r.dir = dir;
	assert_int_equal(pthread_create(&th, NULL, pull_thread, &r), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 15;
	done = !pthread_timedjoin_np(th, NULL, &until);
	pages = atomic_load(&f->pages);
	if (!done) {
		/* Let it end, then say what happened. */
		atomic_store(&f->endless, 2);
		pthread_join(th, NULL);
	}
	remove_dir(tmp);
	free(real);
	hb_s3_free(r.s3);
	fake_stop(f);
	if (!done)
		fail_msg("the pull was still listing after 15 s and %d pages "
			 "with one continuation token", pages);
	assert_int_not_equal(r.rc, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_listing),
		cmocka_unit_test(test_hostile_manifest),
		cmocka_unit_test(test_object_too_long),
		cmocka_unit_test(test_endless_listing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
