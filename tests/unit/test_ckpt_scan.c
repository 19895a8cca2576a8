/*
 * test_ckpt_scan.c - scanning a directory into a manifest: what it lists
 * and how (sizes, modes, SHA-256, order, the same bytes twice), and the
 * attacks: links to a root-only canary planted in the tree or swapped in
 * while the scan runs, a hard link to someone else's file, FIFOs and
 * devices, bad names, a mount.  The canary's digest must never appear.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "hpcbridge/ckpt.h"
#include "test_ckpt_util.h"

#define SHA_TEST "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

static char root[64], dir[96], canary[128], outside[96];
static uint8_t canary_sha[32];

static const char *at(const char *rel)
{
	static char path[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", dir, rel);
	return path[k];
}

/* A file holding the string text. */
static void put_str(const char *path, const char *text, mode_t mode)
{
	ckpt_test_put(path, text, strlen(text), mode);
}

static int fds_at_start;

static int setup(void **state)
{
	uint64_t n;
	int fd;

	(void)state;
	snprintf(root, sizeof(root), "/tmp/hb-test-ckpt-scan-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/dir", root);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	snprintf(canary, sizeof(canary), "%s/shadow", outside);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(outside, 0700), 0);
	/* The canary: a root-only file outside the tree, as /etc/shadow. */
	put_str(canary, "root:$6$CANARY-SECRET:19000::::::\n", 0600);
	fd = open(canary, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(hb_ckpt_sha256_fd(fd, "canary", canary_sha, &n, NULL),
			 0);
	close(fd);
	assert_int_equal(mkdir(at("sub"), 0755), 0);
	assert_int_equal(mkdir(at("sub/deep"), 0700), 0);
	put_str(at("a"), "test", 0644);
	put_str(at("sub/b"), "foo", 0600);
	put_str(at("sub/deep/c"), "bar\n", 0755);
	put_str(at("empty"), "", 0640);
	fds_at_start = ckpt_test_nfds();
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	assert_int_equal(ckpt_test_nfds(), fds_at_start);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void no_canary(const struct hb_ckpt_manifest *m)
{
	for (size_t i = 0; m && i < m->nfiles; i++)
		if (!memcmp(m->files[i].sha256, canary_sha, 32))
			fail_msg("the canary was read as %s", m->files[i].path);
}

static struct hb_ckpt_manifest *scan(const struct hb_ckpt_scan_opts *o,
				     struct hb_ckpt_scan_stats *st)
{
	struct hb_ckpt_manifest *m = NULL;
	struct hb_err err = {0};

	if (hb_ckpt_scan(dir, o, &m, st, &err))
		fail_msg("scan: %s", err.msg);
	no_canary(m);
	return m;
}

static void test_lists(void **state)
{
	struct hb_ckpt_scan_stats st;
	struct hb_ckpt_manifest *m;
	char hex[65];

	(void)state;
	m = scan(NULL, &st);
	assert_int_equal(m->nfiles, 4);
	assert_string_equal(m->files[0].path, "a");
	assert_string_equal(m->files[1].path, "empty");
	assert_string_equal(m->files[2].path, "sub/b");
	assert_string_equal(m->files[3].path, "sub/deep/c");
	hb_ckpt_hex(m->files[0].sha256, hex);
	assert_string_equal(hex, SHA_TEST);
	assert_int_equal(m->files[0].mode, 0644);
	assert_int_equal(m->files[2].mode, 0600);
	assert_int_equal(m->files[3].mode, 0755);
	assert_int_equal(m->files[1].size, 0);
	assert_int_equal(m->total, 4 + 3 + 4);
	assert_int_equal(st.files, 4);
	assert_int_equal(st.dirs, 2);
	assert_string_equal(m->job, "-");
	hb_ckpt_manifest_free(m);
}

static void test_same_bytes(void **state)
{
	struct hb_ckpt_scan_opts o = {.job = "42", .created = 1795802400};
	struct hb_ckpt_manifest *m1 = scan(&o, NULL), *m2 = scan(&o, NULL);
	struct hb_buf b1, b2;

	(void)state;
	hb_buf_init(&b1, 0);
	hb_buf_init(&b2, 0);
	assert_int_equal(hb_ckpt_manifest_write(m1, &b1), 0);
	assert_int_equal(hb_ckpt_manifest_write(m2, &b2), 0);
	assert_string_equal(b1.data, b2.data);
	assert_non_null(strstr(b1.data, "\"job\": \"42\""));
	hb_buf_free(&b1);
	hb_buf_free(&b2);
	hb_ckpt_manifest_free(m1);
	hb_ckpt_manifest_free(m2);
}

static void test_links_skipped(void **state)
{
	struct hb_ckpt_scan_opts strict = {.flags = HB_CKPT_SCAN_STRICT};
	struct hb_ckpt_manifest *m = (void *)1;
	struct hb_ckpt_scan_stats st;
	struct hb_err err = {0};

	(void)state;
	assert_int_equal(symlink(canary, at("shadow")), 0);
	assert_int_equal(symlink("../outside", at("sub/out")), 0);
	assert_int_equal(symlink("../../outside/shadow", at("sub/rel")), 0);
	m = scan(NULL, &st);
	assert_int_equal(m->nfiles, 4);
	assert_int_equal(st.skipped_links, 3);
	assert_null(hb_ckpt_manifest_find(m, "shadow"));
	hb_ckpt_manifest_free(m);
	assert_int_equal(hb_ckpt_scan(dir, &strict, &m, NULL, &err), HB_EPERM);
	assert_null(m);
	assert_non_null(strstr(err.msg, "a symbolic link"));
	unlink(at("shadow"));
	unlink(at("sub/out"));
	unlink(at("sub/rel"));
}

static void test_special_skipped(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct hb_ckpt_scan_stats st;
	struct hb_ckpt_manifest *m;
	int s, dev;

	(void)state;
	assert_int_equal(mkfifo(at("fifo"), 0644), 0);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("sock"));
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* A null device where root may make one (not in every container). */
	dev = mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)) == 0;
	m = scan(NULL, &st); /* a FIFO read would hang here */
	assert_int_equal(m->nfiles, 4);
	assert_int_equal(st.skipped_special, 2 + dev);
	hb_ckpt_manifest_free(m);
	close(s);
	unlink(at("fifo"));
	unlink(at("sock"));
	unlink(at("null"));
}

/*
 * The before_open hook: the swap happens between the listing and the
 * open.  The entry named victim becomes a symbolic link to the canary
 * (how = 'l'), a hard link to it ('h'), or, a directory, is moved away
 * for a link to the canary's directory ('d').
 */
struct swap {
	const char *victim;
	char how;
};

static void swap_hook(void *ctx, const char *path)
{
	const struct swap *w = ctx;
	char tmp[512];

	if (strcmp(path, w->victim))
		return;
	if (w->how == 'd') {
		snprintf(tmp, sizeof(tmp), "%s/away", root);
		assert_int_equal(rename(at(path), tmp), 0);
		assert_int_equal(symlink(outside, at(path)), 0);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", at(path));
	assert_int_equal(w->how == 'l' ? symlink(canary, tmp)
				       : link(canary, tmp), 0);
	assert_int_equal(rename(tmp, at(path)), 0);
}

static void swapped(const char *victim, char how, int code, const char *msg)
{
	struct swap w = {victim, how};
	struct hb_ckpt_scan_opts o = {.before_open = swap_hook, .ctx = &w};
	struct hb_ckpt_manifest *m = (void *)1;
	struct hb_err err = {0};
	int rc = hb_ckpt_scan(dir, &o, &m, NULL, &err);

	if (rc != code || !strstr(err.msg, msg))
		fail_msg("%s: got %d \"%s\"", victim, rc, err.msg);
	assert_null(m);
}

static void test_toctou(void **state)
{
	char away[512], cmd[600];

	(void)state;
	put_str(at("victim"), "x", 0644);
	swapped("victim", 'l', HB_EPERM, "victim: open: a symbolic "
		"link");
	unlink(at("victim"));
	put_str(at("victim"), "x", 0644);
	swapped("victim", 'h', HB_EAGAIN,
		"victim: changed during the scan");
	unlink(at("victim"));
	swapped("sub", 'd', HB_EPERM, "sub: open: a symbolic link");
	unlink(at("sub"));
	snprintf(away, sizeof(away), "%s/away", root);
	snprintf(cmd, sizeof(cmd), "mv %s %s", away, at("sub"));
	assert_int_equal(system(cmd), 0);
	/* What the scan gives afterwards is the tree as it was. */
	hb_ckpt_manifest_free(scan(NULL, NULL));
}

/* Someone else's file hard-linked into a tree is refused; the owner's
 * own hard links (one checkpoint sharing files with the last) are not. */
static void test_hardlinks(void **state)
{
	struct hb_ckpt_manifest *m = (void *)1;
	struct hb_err err = {0};
	char cmd[160];

	(void)state;
	if (geteuid() != 0) /* no chown to another user */
		return;
	snprintf(cmd, sizeof(cmd), "chown -R 65534:65534 %s", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(link(at("a"), at("a-again")), 0);
	m = scan(NULL, NULL);
	assert_int_equal(m->nfiles, 5);
	hb_ckpt_manifest_free(m);
	assert_int_equal(link(canary, at("sub/hl")), 0);
	assert_int_equal(hb_ckpt_scan(dir, NULL, &m, NULL, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "sub/hl: another owner's file"));
	assert_null(m);
	unlink(at("sub/hl"));
	unlink(at("a-again"));
	snprintf(cmd, sizeof(cmd), "chown -R 0:0 %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_bad_names(void **state)
{
	struct hb_ckpt_manifest *m = (void *)1;
	struct hb_err err = {0};

	(void)state;
	put_str(at("sub/bad\nname"), "x", 0644);
	assert_int_equal(hb_ckpt_scan(dir, NULL, &m, NULL, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "sub/bad?name: name: control"));
	assert_null(m);
	unlink(at("sub/bad\nname"));
	put_str(at("\xff"), "x", 0644);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_ckpt_scan(dir, NULL, &m, NULL, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "invalid UTF-8"));
	unlink(at("\xff"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_ckpt_scan("/nonexistent/hb-ckpt", NULL, &m, NULL,
				      &err), HB_ENOENT);
}

static void test_mount_skipped(void **state)
{
	struct hb_ckpt_scan_stats st;
	struct hb_ckpt_manifest *m;

	(void)state;
	assert_int_equal(mkdir(at("mnt"), 0755), 0);
	if (geteuid() != 0) { /* no mount: the walk is the same */
		rmdir(at("mnt"));
		return;
	}
	assert_int_equal(mount("tmpfs", at("mnt"), "tmpfs", 0, "size=64k"), 0);
	put_str(at("mnt/other"), "other", 0644);
	m = scan(NULL, &st);
	assert_int_equal(st.skipped_mounts, 1);
	assert_null(hb_ckpt_manifest_find(m, "mnt/other"));
	hb_ckpt_manifest_free(m);
	assert_int_equal(umount(at("mnt")), 0);
	rmdir(at("mnt"));
}

/* A thread swaps a file for a link to the canary and back as fast as it
 * can while scans run: each scan succeeds or refuses, and none reads the
 * canary. */
static volatile int racing;

static void *racer(void *arg)
{
	char tmp_link[512], tmp_file[512];

	(void)arg;
	snprintf(tmp_link, sizeof(tmp_link), "%s.l", at("race"));
	snprintf(tmp_file, sizeof(tmp_file), "%s.f", at("race"));
	while (racing) {
		unlink(tmp_link);
		if (!symlink(canary, tmp_link))
			rename(tmp_link, at("race"));
		int fd = open(tmp_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0 && write(fd, "plain", 5) == 5)
			rename(tmp_file, at("race"));
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static void test_race(void **state)
{
	int ok = 0, refusedn = 0, as_file = 0, as_link = 0;
	pthread_t t;

	(void)state;
	racing = 1;
	assert_int_equal(pthread_create(&t, NULL, racer, NULL), 0);
	for (int i = 0; i < 400; i++) {
		struct hb_ckpt_manifest *m = NULL;
		struct hb_err err = {0};

		struct hb_ckpt_scan_stats st;

		if (hb_ckpt_scan(dir, NULL, &m, &st, &err) == 0) {
			ok++;
			as_file += hb_ckpt_manifest_find(m, "race") != NULL;
			as_link += st.skipped_links > 0;
		} else {
			refusedn++;
		}
		no_canary(m);
		hb_ckpt_manifest_free(m);
	}
	racing = 0;
	pthread_join(t, NULL);
	assert_true(ok > 0);
	printf("race: %d scans whole (race a file %d, a link %d), %d "
	       "refused\n", ok, as_file, as_link, refusedn);
	unlink(at("race"));
	unlink(at("race.l"));
	unlink(at("race.f"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_same_bytes),
		cmocka_unit_test(test_links_skipped),
		cmocka_unit_test(test_special_skipped),
		cmocka_unit_test(test_toctou),
		cmocka_unit_test(test_hardlinks),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_mount_skipped),
		cmocka_unit_test(test_race),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
