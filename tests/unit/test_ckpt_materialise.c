/*
 * test_ckpt_materialise.c - a manifest into a directory, whole or not at
 * all: round trips (the tree scanned again gives the same manifest),
 * replacing a checkpoint, failures that must leave the last good one
 * intact and no temporary directory (a bad digest, a source error, a
 * full disk on a small tmpfs, EACCES as an unprivileged user), resuming
 * after the source went away, reusing an earlier checkpoint's files, and
 * links planted in the temporary directory that must not lead out.  The
 * same with several threads filling files (opts.jobs): the same tree and
 * stats, the first error winning, resume, and fetches that overlap.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/ckpt.h"
#include "test_ckpt_util.h"

static char root[64], src[96], target[96], part[128], outside[96];
static struct hb_ckpt_manifest *man;
static int srcfd;

static const char *in(const char *base, const char *rel)
{
	static char path[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", base, rel);
	return path[k];
}

static struct hb_ckpt_manifest *scan(const char *dir)
{
	struct hb_ckpt_scan_opts o = {.job = "7", .created = 1795802400};
	struct hb_ckpt_manifest *m = NULL;
	struct hb_err err = {0};

	if (hb_ckpt_scan(dir, &o, &m, NULL, &err))
		fail_msg("scan %s: %s", dir, err.msg);
	return m;
}

/* The manifest text of dir, for comparing trees. */
static char *text_of(const char *dir)
{
	struct hb_ckpt_manifest *m = scan(dir);
	struct hb_buf b;

	hb_buf_init(&b, 0);
	assert_int_equal(hb_ckpt_manifest_write(m, &b), 0);
	hb_ckpt_manifest_free(m);
	return hb_buf_steal(&b);
}

static void same_tree(const char *dir, const char *want)
{
	char *got = text_of(dir);

	assert_string_equal(got, want);
	free(got);
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void clean(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static int fds_at_start;

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/hb-test-ckpt-mat-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(src, sizeof(src), "%s/src", root);
	snprintf(target, sizeof(target), "%s/cur", root);
	snprintf(part, sizeof(part), "%s/.cur.hbpart", root);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(outside, 0755), 0);
	assert_int_equal(mkdir(in(src, "sub"), 0755), 0);
	assert_int_equal(mkdir(in(src, "sub/deep"), 0700), 0);
	ckpt_test_put(in(src, "a"), "test", 4, 0644);
	ckpt_test_put(in(src, "sub/b"), "foo", 3, 0600);
	ckpt_test_put(in(src, "sub/deep/c"), "bar\n", 4, 0755);
	ckpt_test_put(in(src, "empty"), "", 0, 0640);
	ckpt_test_put(in(src, "z"), "last", 4, 0644);
	ckpt_test_put(in(outside, "victim"), "untouched", 9, 0644);
	man = scan(src);
	srcfd = open(src, O_RDONLY | O_DIRECTORY);
	assert_true(srcfd >= 0);
	fds_at_start = ckpt_test_nfds();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(ckpt_test_nfds(), fds_at_start);
	close(srcfd);
	hb_ckpt_manifest_free(man);
	clean(root);
	return 0;
}

/* A source that counts, and fails the file named fail_at with fail_rc. */
struct counting {
	struct hb_ckpt_dir_source dir;
	int calls;
	const char *fail_at;
	int fail_rc;
	const char *garbage_at; /* writes wrong bytes for this one */
	const char *swap_at;    /* swaps the temporary directory here */
};

static int counting_fetch(void *ctx, const struct hb_ckpt_file *f, int fd,
			  struct hb_err *err)
{
	struct counting *c = ctx;

	c->calls++;
	if (c->fail_at && !strcmp(f->path, c->fail_at))
		return hb_err_set(err, c->fail_rc, NULL, 0, "%s: %s", f->path,
				  c->fail_rc == HB_EIO ? "No space left on "
							 "device (simulated)"
						       : "the store went away");
	if (c->swap_at && !strcmp(f->path, c->swap_at)) {
		assert_int_equal(rename(part, in(root, "moved")), 0);
		assert_int_equal(mkdir(part, 0755), 0);
		ckpt_test_put(in(part, "planted"), "x", 1, 0644);
	}
	if (c->garbage_at && !strcmp(f->path, c->garbage_at)) {
		char junk[64];

		memset(junk, 'j', sizeof(junk));
		return write(fd, junk, f->size) == (ssize_t)f->size ? 0
								    : HB_EIO;
	}
	return hb_ckpt_fetch_dir(&c->dir, f, fd, err);
}

static int mat(const struct hb_ckpt_manifest *m, const char *to,
	       struct counting *c, const struct hb_ckpt_mat_opts *o,
	       struct hb_ckpt_mat_stats *st, struct hb_err *err)
{
	c->dir.dirfd = srcfd;
	return hb_ckpt_materialise(m, to, counting_fetch, c, o, st, err);
}

static void good_checkpoint(char **text)
{
	struct counting c = {0};
	struct hb_err err = {0};

	clean(target);
	if (mat(man, target, &c, NULL, NULL, &err))
		fail_msg("%s", err.msg);
	*text = text_of(target);
}

static void test_round_trip(void **state)
{
	struct hb_ckpt_mat_stats st;
	struct counting c = {0};
	struct hb_err err = {0};
	char *want = text_of(src);
	struct stat sb;

	(void)state;
	clean(target);
	if (mat(man, target, &c, NULL, &st, &err))
		fail_msg("%s", err.msg);
	same_tree(target, want);
	assert_int_equal(st.fetched, 5);
	assert_int_equal(st.fetched_bytes, 15);
	assert_int_equal(c.calls, 5);
	assert_false(exists(part));
	assert_int_equal(stat(in(target, "sub/deep/c"), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0755);
	free(want);
}

/* An existing checkpoint is replaced whole: its extra file goes too. */
static void test_replaces(void **state)
{
	struct counting c = {0};
	struct hb_err err = {0};
	char *want = text_of(src);

	(void)state;
	clean(target);
	assert_int_equal(mkdir(target, 0755), 0);
	ckpt_test_put(in(target, "old-only"), "old", 3, 0644);
	ckpt_test_put(in(target, "a"), "older", 5, 0644);
	if (mat(man, target, &c, NULL, NULL, &err))
		fail_msg("%s", err.msg);
	same_tree(target, want);
	assert_false(exists(part));
	assert_false(exists(in(root, ".cur.hbold")));
	free(want);
}

/* Failures leave the last good checkpoint as it was, and no trace. */
static void failed(const struct hb_ckpt_manifest *m, struct counting *c,
		   int code, const char *msg)
{
	struct hb_err err = {0};
	char *good;
	int rc;

	good_checkpoint(&good);
	rc = mat(m, target, c, NULL, NULL, &err);
	if (rc != code || !strstr(err.msg, msg))
		fail_msg("got %d \"%s\", want %d \"%s\"", rc, err.msg, code,
			 msg);
	same_tree(target, good);
	assert_false(exists(part));
	free(good);
}

static void test_bad_digest(void **state)
{
	struct counting c = {0};
	struct hb_ckpt_manifest *m = scan(src);

	(void)state;
	m->files[2].sha256[0] ^= 1; /* sub/b */
	failed(m, &c, HB_EINVAL, "sub/b: SHA-256 2c26b46b");
	c = (struct counting){.garbage_at = "z"};
	failed(man, &c, HB_EINVAL, "z: SHA-256");
	/* A source longer than the manifest says: only size+1 bytes are
	 * copied, and the size check names it. */
	m->files[2].sha256[0] ^= 1;
	m->files[2].size = 2;
	c = (struct counting){0};
	failed(m, &c, HB_EINVAL, "sub/b: 3 bytes written, the manifest says 2");
	hb_ckpt_manifest_free(m);
}

static void test_source_error(void **state)
{
	struct counting c = {.fail_at = "sub/b", .fail_rc = HB_EIO};

	(void)state;
	failed(man, &c, HB_EIO, "sub/b: No space left on device");
}

/* A real full disk: a 64 KiB tmpfs holding a good checkpoint, and a new
 * one of 200 KiB. */
static void test_disk_full(void **state)
{
	char small[128], tgt[160], tpart[160], big[200 * 1024];
	struct hb_ckpt_manifest *m;
	struct counting c = {0};
	struct hb_err err = {0};
	char *good;
	int rc;

	(void)state;
	if (geteuid() != 0) /* no mount: test_source_error stands in */
		return;
	snprintf(small, sizeof(small), "%s/small", root);
	snprintf(tgt, sizeof(tgt), "%s/cur", small);
	snprintf(tpart, sizeof(tpart), "%s/.cur.hbpart", small);
	assert_int_equal(mkdir(small, 0755), 0);
	assert_int_equal(mount("tmpfs", small, "tmpfs", 0, "size=64k"), 0);
	if (mat(man, tgt, &c, NULL, NULL, &err))
		fail_msg("%s", err.msg);
	good = text_of(tgt);
	memset(big, 'b', sizeof(big));
	ckpt_test_put(in(src, "big"), big, sizeof(big), 0644);
	m = scan(src);
	rc = mat(m, tgt, &c, NULL, NULL, &err);
	assert_int_equal(rc, HB_EIO);
	assert_non_null(strstr(err.msg, "big"));
	assert_non_null(strstr(err.msg, "No space left on device"));
	same_tree(tgt, good);
	assert_false(exists(tpart));
	hb_ckpt_manifest_free(m);
	unlink(in(src, "big"));
	free(good);
	assert_int_equal(umount(small), 0);
	rmdir(small);
}

/* As an unprivileged user, a target whose parent is not writable. */
static void test_eacces(void **state)
{
	char locked[128], tgt[160];
	int status;
	pid_t pid;
	char *good;

	(void)state;
	if (geteuid() != 0) /* an unprivileged run cannot drop to nobody */
		return;
	snprintf(locked, sizeof(locked), "%s/locked", root);
	snprintf(tgt, sizeof(tgt), "%s/cur", locked);
	assert_int_equal(mkdir(locked, 0755), 0);
	assert_int_equal(mkdir(tgt, 0755), 0);
	ckpt_test_put(in(tgt, "keep"), "good", 4, 0644);
	good = text_of(tgt);
	assert_int_equal(chmod(root, 0755), 0);
	assert_int_equal(chmod(src, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hb_ckpt_dir_source d = {srcfd};
		struct hb_err err = {0};
		int rc;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		rc = hb_ckpt_materialise(man, tgt, hb_ckpt_fetch_dir, &d, NULL,
					 NULL, &err);
		_exit(rc == HB_EPERM && strstr(err.msg, "Permission denied")
			      ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	same_tree(tgt, good);
	assert_false(exists(in(locked, ".cur.hbpart")));
	free(good);
	clean(locked);
}

/* The source goes away on the third file: what was done stays in the
 * temporary directory, the target is untouched, and the next run
 * fetches only the rest. */
static void test_resume(void **state)
{
	struct counting c = {.fail_at = "sub/b", .fail_rc = HB_EUNAVAIL};
	struct hb_ckpt_mat_stats st;
	struct hb_err err = {0};
	char *good, *want = text_of(src);

	(void)state;
	good_checkpoint(&good);
	assert_int_equal(mat(man, target, &c, NULL, &st, &err), HB_EUNAVAIL);
	same_tree(target, good);
	assert_true(exists(part));
	assert_true(exists(in(part, "a")));
	/* A stray file from an earlier manifest is pruned on resume. */
	ckpt_test_put(in(part, "stray"), "stray", 5, 0644);
	c = (struct counting){0};
	memset(&err, 0, sizeof(err));
	if (mat(man, target, &c, NULL, &st, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(st.kept, 2); /* a, empty */
	assert_int_equal(st.fetched, 3);
	assert_int_equal(c.calls, 3);
	assert_int_equal(st.pruned, 1);
	same_tree(target, want);
	assert_false(exists(part));
	free(good);
	free(want);
}

/* Unchanged files come from an earlier checkpoint, not the source. */
static void test_reuse(void **state)
{
	struct hb_ckpt_mat_opts o;
	struct hb_ckpt_mat_stats st;
	struct hb_ckpt_manifest *m;
	struct counting c = {0};
	struct hb_err err = {0};
	char prev[128], *good, *want;

	(void)state;
	good_checkpoint(&good);
	snprintf(prev, sizeof(prev), "%s/prev", root);
	assert_int_equal(rename(target, prev), 0);
	ckpt_test_put(in(src, "z"), "changed", 7, 0644);
	m = scan(src);
	want = text_of(src);
	o = (struct hb_ckpt_mat_opts){.reuse = prev};
	if (mat(m, target, &c, &o, &st, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(st.reused, 4);
	assert_int_equal(c.calls, 1);
	same_tree(target, want);
	same_tree(prev, good);
	ckpt_test_put(in(src, "z"), "last", 4, 0644);
	hb_ckpt_manifest_free(m);
	clean(prev);
	free(good);
	free(want);
}

/* Links planted in a leftover temporary directory lead nowhere: they
 * are removed, never written through. */
static void test_planted_links(void **state)
{
	struct counting c = {0};
	struct hb_err err = {0};
	char *want = text_of(src), *out_before = text_of(outside);

	(void)state;
	clean(target);
	assert_int_equal(mkdir(part, 0755), 0);
	assert_int_equal(symlink(outside, in(part, "sub")), 0);
	assert_int_equal(symlink(in(outside, "victim"), in(part, "a")), 0);
	assert_int_equal(symlink(outside, in(part, "z")), 0);
	if (mat(man, target, &c, NULL, NULL, &err))
		fail_msg("%s", err.msg);
	same_tree(target, want);
	same_tree(outside, out_before);
	free(want);
	free(out_before);
}

/* A temporary directory someone else made is refused and left alone;
 * one another run holds is too. */
static void test_not_ours(void **state)
{
	struct counting c = {0};
	struct hb_err err = {0};
	int fd;

	(void)state;
	clean(target);
	if (geteuid() != 0) /* no chown to another user */
		return;
	assert_int_equal(mkdir(part, 0777), 0);
	assert_int_equal(chown(part, 65534, 65534), 0);
	assert_int_equal(mat(man, target, &c, NULL, NULL, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "owned by uid 65534"));
	assert_true(exists(part));
	assert_false(exists(target));
	assert_int_equal(chown(part, 0, 0), 0);
	fd = open(part, O_RDONLY | O_DIRECTORY);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(mat(man, target, &c, NULL, NULL, &err), HB_ECONFLICT);
	assert_true(exists(part));
	close(fd);
	clean(part);
}

/* The temporary directory swapped for another while the files are
 * written: the other is not renamed into place. */
static void test_swapped_part(void **state)
{
	struct counting c = {.swap_at = "z"};
	struct hb_err err = {0};
	char *good;

	(void)state;
	good_checkpoint(&good);
	assert_int_equal(mat(man, target, &c, NULL, NULL, &err), HB_EAGAIN);
	assert_non_null(strstr(err.msg, "replaced while it was written"));
	same_tree(target, good);
	clean(part);
	clean(in(root, "moved"));
	free(good);
}

/* Paths a hand-built manifest carries are checked again. */
static void test_hostile_paths(void **state)
{
	static const char *bad[] = {"../escape", "/tmp/abs", "a/../../x",
				    "a//b", "."};
	struct counting c = {0};

	(void)state;
	clean(target);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hb_ckpt_manifest *m = scan(src);
		struct hb_err err = {0};

		m->files[0].path = bad[i];
		assert_int_equal(mat(m, target, &c, NULL, NULL, &err),
				 HB_EINVAL);
		assert_false(exists(target));
		assert_false(exists(part));
		assert_false(exists(in(root, "escape")));
		hb_ckpt_manifest_free(m);
	}
}

static void test_target_not_dir(void **state)
{
	struct counting c = {0};
	struct hb_err err = {0};

	(void)state;
	clean(target);
	ckpt_test_put(target, "file", 4, 0644);
	assert_int_equal(mat(man, target, &c, NULL, NULL, &err), HB_EEXIST);
	assert_non_null(strstr(err.msg, "not a directory"));
	assert_false(exists(part));
	unlink(target);
	memset(&err, 0, sizeof(err));
	assert_int_equal(mat(man, "/", &c, NULL, NULL, &err), HB_EINVAL);
}

/* ---- Several threads (opts.jobs) ---------------------------------- */

#define MANY 240

/* A source safe to call from several threads: it counts calls and the
 * most calls in progress at once, sleeps a little in each so that
 * threads overlap, and fails the file fail_at with fail_rc. */
struct par {
	struct hb_ckpt_dir_source dir;
	atomic_int calls, now, most;
	const char *fail_at;
	int fail_rc;
};

static int par_fetch(void *ctx, const struct hb_ckpt_file *f, int fd,
		     struct hb_err *err)
{
	struct par *p = ctx;
	struct timespec nap = {0, 2 * 1000 * 1000};
	int now = atomic_fetch_add(&p->now, 1) + 1, most, rc;

	atomic_fetch_add(&p->calls, 1);
	most = atomic_load(&p->most);
	while (now > most && !atomic_compare_exchange_weak(&p->most, &most,
							   now))
		;
	nanosleep(&nap, NULL);
	if (p->fail_at && !strcmp(f->path, p->fail_at))
		rc = hb_err_set(err, p->fail_rc, NULL, 0, "%s: %s", f->path,
				"the store said no (simulated)");
	else
		rc = hb_ckpt_fetch_dir(&p->dir, f, fd, err);
	atomic_fetch_sub(&p->now, 1);
	return rc;
}

/* MANY files of sizes 0 to about 9 KiB in nested directories. */
static void make_many(const char *dir)
{
	char path[512], data[9000];

	assert_int_equal(mkdir(dir, 0755), 0);
	for (int i = 0; i < MANY; i++) {
		size_t n = (size_t)(i * 997) % sizeof(data);

		if (i % 20 == 0) {
			snprintf(path, sizeof(path), "%s/d%02d", dir, i / 20);
			assert_int_equal(mkdir(path, 0755), 0);
			snprintf(path, sizeof(path), "%s/d%02d/e", dir, i / 20);
			assert_int_equal(mkdir(path, 0700), 0);
		}
		memset(data, 'a' + i % 26, n);
		snprintf(path, sizeof(path), "%s/d%02d/%sf%03d", dir, i / 20,
			 i % 3 ? "" : "e/", i);
		ckpt_test_put(path, data, n, i % 2 ? 0644 : 0600);
	}
}

/* The many-file manifest and a source of it, for one test. */
struct many {
	char dir[128];
	struct hb_ckpt_manifest *m;
	char *text;
	int fd;
};

static void many_up(struct many *w)
{
	snprintf(w->dir, sizeof(w->dir), "%s/many", root);
	make_many(w->dir);
	w->m = scan(w->dir);
	assert_int_equal(w->m->nfiles, MANY);
	w->text = text_of(w->dir);
	w->fd = open(w->dir, O_RDONLY | O_DIRECTORY);
	assert_true(w->fd >= 0);
}

static void many_down(struct many *w)
{
	close(w->fd);
	hb_ckpt_manifest_free(w->m);
	free(w->text);
	clean(w->dir);
	clean(target);
	clean(part);
}

static int mat_par(struct many *w, struct par *p, unsigned jobs,
		   const char *reuse, struct hb_ckpt_mat_stats *st,
		   struct hb_err *err)
{
	struct hb_ckpt_mat_opts o = {.reuse = reuse, .jobs = jobs};

	p->dir.dirfd = w->fd;
	return hb_ckpt_materialise(w->m, target, par_fetch, p, &o, st, err);
}

/* jobs 8 gives the tree and the stats jobs 1 gives, and its fetches
 * overlapped; jobs 1 never has two at once.  A jobs past the cap works. */
static void test_jobs_same_tree(void **state)
{
	static const unsigned jobs[] = {1, 8, 1000};
	struct hb_ckpt_mat_stats st[3];
	struct many w;

	(void)state;
	clean(target);
	many_up(&w);
	for (size_t i = 0; i < 3; i++) {
		struct par p = {0};
		struct hb_err err = {0};

		clean(target);
		if (mat_par(&w, &p, jobs[i], NULL, &st[i], &err))
			fail_msg("jobs %u: %s", jobs[i], err.msg);
		same_tree(target, w.text);
		assert_false(exists(part));
		assert_int_equal(atomic_load(&p.calls), MANY);
		if (jobs[i] == 1)
			assert_int_equal(atomic_load(&p.most), 1);
		else
			assert_true(atomic_load(&p.most) > 1);
		assert_int_equal(st[i].fetched, MANY);
		assert_int_equal(st[i].fetched_bytes, w.m->total);
		assert_memory_equal(&st[i], &st[0], sizeof(st[0]));
	}
	many_down(&w);
}

/* One file among many fails while others are in flight: the target
 * keeps the last good checkpoint, no temporary directory is left, and
 * the message names that file. */
static void test_jobs_failure(void **state)
{
	struct hb_ckpt_mat_stats st;
	struct par p = {.fail_rc = HB_EIO};
	struct hb_err err = {0};
	struct many w;
	char *good;

	(void)state;
	good_checkpoint(&good);
	many_up(&w);
	p.fail_at = w.m->files[MANY / 2].path;
	assert_int_equal(mat_par(&w, &p, 8, NULL, &st, &err), HB_EIO);
	assert_non_null(strstr(err.msg, p.fail_at));
	assert_non_null(strstr(err.msg, "the store said no"));
	same_tree(target, good);
	assert_false(exists(part));
	assert_true(atomic_load(&p.calls) < MANY);
	free(good);
	many_down(&w);
}

/* The source goes away in the middle: what was completed stays, and a
 * resume with 4 threads fetches only the rest.  Every file before the
 * failed one in manifest order was taken by a thread before it and is
 * finished, as in-flight fetches complete. */
static void test_jobs_resume(void **state)
{
	struct hb_ckpt_mat_stats st;
	struct par p = {.fail_rc = HB_EAGAIN};
	struct hb_err err = {0};
	struct many w;
	char *good;
	size_t at = MANY / 2;

	(void)state;
	good_checkpoint(&good);
	many_up(&w);
	p.fail_at = w.m->files[at].path;
	assert_int_equal(mat_par(&w, &p, 4, NULL, &st, &err), HB_EAGAIN);
	assert_non_null(strstr(err.msg, p.fail_at));
	same_tree(target, good);
	assert_true(exists(part));
	p = (struct par){0};
	memset(&err, 0, sizeof(err));
	if (mat_par(&w, &p, 4, NULL, &st, &err))
		fail_msg("%s", err.msg);
	same_tree(target, w.text);
	assert_false(exists(part));
	assert_true(st.kept >= at);
	assert_true(st.fetched >= 1);
	assert_int_equal(st.kept + st.fetched, MANY);
	assert_int_equal(st.kept_bytes + st.fetched_bytes, w.m->total);
	assert_int_equal(atomic_load(&p.calls), (int)st.fetched);
	free(good);
	many_down(&w);
}

/* Reuse with threads: every unchanged file is copied from the earlier
 * tree, the changed one alone is fetched. */
static void test_jobs_reuse(void **state)
{
	struct hb_ckpt_mat_stats st;
	struct par p = {0};
	struct hb_err err = {0};
	char prev[128], *changed;
	struct many w;

	(void)state;
	clean(target);
	many_up(&w);
	snprintf(prev, sizeof(prev), "%s/prev", root);
	if (mat_par(&w, &p, 4, NULL, &st, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(rename(target, prev), 0);
	changed = strdup(in(w.dir, w.m->files[7].path));
	ckpt_test_put(changed, "new", 3, 0644);
	hb_ckpt_manifest_free(w.m);
	free(w.text);
	w.m = scan(w.dir);
	w.text = text_of(w.dir);
	p = (struct par){0};
	if (mat_par(&w, &p, 4, prev, &st, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(st.reused, MANY - 1);
	assert_int_equal(st.fetched, 1);
	assert_int_equal(atomic_load(&p.calls), 1);
	same_tree(target, w.text);
	free(changed);
	clean(prev);
	many_down(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_replaces),
		cmocka_unit_test(test_bad_digest),
		cmocka_unit_test(test_source_error),
		cmocka_unit_test(test_disk_full),
		cmocka_unit_test(test_eacces),
		cmocka_unit_test(test_resume),
		cmocka_unit_test(test_reuse),
		cmocka_unit_test(test_planted_links),
		cmocka_unit_test(test_not_ours),
		cmocka_unit_test(test_swapped_part),
		cmocka_unit_test(test_hostile_paths),
		cmocka_unit_test(test_target_not_dir),
		cmocka_unit_test(test_jobs_same_tree),
		cmocka_unit_test(test_jobs_failure),
		cmocka_unit_test(test_jobs_resume),
		cmocka_unit_test(test_jobs_reuse),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
