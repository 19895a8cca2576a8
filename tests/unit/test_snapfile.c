/*
 * test_snapfile.c - snapfile.h: the snapshot file written and mapped
 * back, its byte layout, every damaged header byte and body byte
 * refused with the field named, the owner, mode and link checks, the
 * change check, and writes that fail leaving the old file and no
 * temporary behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpcbridge/hash.h"
#include "hpcbridge/snapfile.h"
#include "testutil.h"

static char root[64];
static char path[128];
static pid_t kids[2]; /* writers a failed test leaves: teardown ends them */

static const char body_text[] = "{\"policy\": {}, \"queues\": [1, 2, 3]}";

static const struct hb_snapfile_meta meta0 = {
	.version = 7,
	.written_ms = 1795000000123,
	.max_age_ms = 30000,
	.lease_lo = 1000,
	.lease_hi = 1999,
};

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/hb-test-snapfile-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/snapshot", root);
	return 0;
}

static int teardown(void **state)
{
	char cmd[192];

	(void)state;
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", root, root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void put(const struct hb_snapfile_meta *m, const char *body)
{
	struct hb_err err = { 0 };

	assert_int_equal(hb_snapfile_write(path, m, body, strlen(body), 0640,
					   (gid_t)-1, &err),
			 0);
}

/* The entries of root, "." and ".." aside. */
static int entries(void)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void assert_meta_equal(const struct hb_snapfile_meta *a,
			      const struct hb_snapfile_meta *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->written_ms, b->written_ms);
	assert_int_equal(a->max_age_ms, b->max_age_ms);
	assert_int_equal(a->lease_lo, b->lease_lo);
	assert_int_equal(a->lease_hi, b->lease_hi);
}

/* The version of the file at path, which must open, trusting uid. */
static uint64_t version_as(uid_t uid)
{
	struct hb_snapfile f;
	struct hb_err err = { 0 };
	uint64_t v;

	if (hb_snapfile_open(path, uid, &f, &err))
		fail_msg("%s", err.msg);
	v = f.meta.version;
	assert_memory_equal(f.body, body_text, sizeof(body_text));
	hb_snapfile_close(&f);
	return v;
}

static void assert_zeroed(const struct hb_snapfile *f)
{
	static const struct hb_snapfile zero;

	assert_memory_equal(f, &zero, sizeof(zero));
}

static void test_round_trip(void **state)
{
	struct hb_snapfile f;
	struct hb_err err = { 0 };
	struct stat st;
	gid_t gid = geteuid() == 0 ? 65534 : getegid();
	mode_t old = umask(077);
	int rc;

	(void)state;
	/* The mode exactly, whatever the umask; the group given. */
	rc = hb_snapfile_write(path, &meta0, body_text, strlen(body_text), 0640,
			       gid, &err);
	umask(old);
	assert_int_equal(rc, 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_gid, gid);
	assert_int_equal(st.st_size,
			 HB_SNAPFILE_HEADER + strlen(body_text) + 1);

	assert_int_equal(hb_snapfile_open(path, 0, &f, &err), 0);
	assert_meta_equal(&f.meta, &meta0);
	assert_int_equal(f.blen, strlen(body_text));
	/* the body is a C string in place: its NUL is in the file */
	assert_string_equal(f.body, body_text);
	assert_int_equal(f.maplen, st.st_size);
	assert_int_equal(f.ino, st.st_ino);
	assert_int_equal(f.size, st.st_size);
	hb_snapfile_close(&f);
	assert_zeroed(&f);
	hb_snapfile_close(&f); /* a zeroed struct is fine */

	/* an empty body and no lease */
	struct hb_snapfile_meta m = { .version = UINT64_MAX,
				      .written_ms = -5,
				      .max_age_ms = INT64_MAX };
	put(&m, "");
	assert_int_equal(hb_snapfile_open(path, 0, &f, &err), 0);
	assert_meta_equal(&f.meta, &m);
	assert_int_equal(f.blen, 0);
	assert_string_equal(f.body, "");
	hb_snapfile_close(&f);
	assert_int_equal(entries(), 1);
}

/* The image of meta0 and body_text as the file holds it.  Caller frees. */
static unsigned char *image(size_t *len)
{
	put(&meta0, body_text);
	return (unsigned char *)hb_test_read_file(path, len);
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void set_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The checksum as docs/internals/snapshot-file.md defines it. */
static void reseal(unsigned char *img, size_t len)
{
	struct hb_siphash_key key = { HB_SNAPFILE_KEY0, HB_SNAPFILE_KEY1 };

	set_le64(img + 8, hb_siphash13(&key, img + 16, len - 1 - 16));
}

/* The layout the internals page documents, byte by byte. */
static void test_layout(void **state)
{
	size_t len;
	unsigned char *img = image(&len);
	struct hb_siphash_key key = { HB_SNAPFILE_KEY0, HB_SNAPFILE_KEY1 };

	(void)state;
	assert_int_equal(len, 64 + strlen(body_text) + 1);
	assert_memory_equal(img, "HBSNAP\0\n", 8);
	assert_memory_equal(&key, "snpfile0snpfile1", 16); /* a LE host */
	assert_int_equal(le64(img + 8),
			 hb_siphash13(&key, img + 16, len - 1 - 16));
	assert_int_equal(img[16] | img[17] << 8, 1);  /* format */
	assert_int_equal(img[18] | img[19] << 8, 64); /* header length */
	assert_int_equal(img[20] | img[21] << 8 | img[22] << 16 |
				 (unsigned)img[23] << 24,
			 strlen(body_text));
	assert_int_equal(le64(img + 24), meta0.version);
	assert_int_equal(le64(img + 32), meta0.written_ms);
	assert_int_equal(le64(img + 40), meta0.max_age_ms);
	assert_int_equal(le64(img + 48), meta0.lease_lo);
	assert_int_equal(le64(img + 56), meta0.lease_hi);
	assert_memory_equal(img + 64, body_text, sizeof(body_text));
	free(img);
}

/* The field a damaged header byte must be named by. */
static const char *field_at(size_t off)
{
	return off < 8	  ? "magic"
	       : off < 16 ? "checksum mismatch"
	       : off < 18 ? "format"
	       : off < 20 ? "header length"
	       : off < 24 ? "body length"
			  : "checksum mismatch";
}

static void expect_refused(const unsigned char *img, size_t len,
			   const char *what, size_t off)
{
	struct hb_snapfile_meta m = { 1, 1, 1, 1, 1 };
	struct hb_err err = { 0 };
	const char *body = NULL;
	size_t blen = 99;

	if (hb_snapfile_parse(img, len, &m, &body, &blen, &err) != HB_EPROTO)
		fail_msg("offset %zu (%s): accepted", off, what);
	if (!strstr(err.msg, what))
		fail_msg("offset %zu: '%s' does not name %s", off, err.msg,
			 what);
	assert_null(body);
	assert_int_equal(blen, 99);
}

static void test_header_bytes(void **state)
{
	static const unsigned char flips[] = { 0x01, 0x80, 0xff };
	size_t len;
	unsigned char *img = image(&len), *bad = malloc(len);
	struct hb_snapfile_meta m;
	struct hb_err err = { 0 };
	const char *body;
	size_t blen;

	(void)state;
	assert_non_null(bad);
	assert_int_equal(hb_snapfile_parse(img, len, &m, &body, &blen, &err),
			 0);
	assert_ptr_equal(body, (char *)img + 64);
	for (size_t off = 0; off < HB_SNAPFILE_HEADER; off++)
		for (size_t i = 0; i < sizeof(flips); i++) {
			memcpy(bad, img, len);
			bad[off] ^= flips[i];
			expect_refused(bad, len, field_at(off), off);
		}

	/* A format this build does not know is refused by number, even
	 * with a good checksum: the plugin then fails open. */
	memcpy(bad, img, len);
	bad[16] = 7;
	reseal(bad, len);
	expect_refused(bad, len, "format 7 not understood", 16);
	/* Values out of bounds behind a good checksum. */
	memcpy(bad, img, len);
	set_le64(bad + 24, 0);
	reseal(bad, len);
	expect_refused(bad, len, "version is 0", 24);
	memcpy(bad, img, len);
	set_le64(bad + 40, (uint64_t)-1);
	reseal(bad, len);
	expect_refused(bad, len, "max_age_ms -1 is not positive", 40);
	memcpy(bad, img, len);
	set_le64(bad + 48, 3000);
	reseal(bad, len);
	expect_refused(bad, len, "lease [3000, 1999]", 48);
	memcpy(bad, img, len);
	set_le64(bad + 48, 0);
	reseal(bad, len);
	expect_refused(bad, len, "lease [0, 1999]", 48);
	/* and resealing a good image changes nothing */
	memcpy(bad, img, len);
	reseal(bad, len);
	assert_int_equal(hb_snapfile_parse(bad, len, &m, &body, &blen, &err),
			 0);
	free(bad);
	free(img);
}

static void test_body_bytes(void **state)
{
	size_t len;
	unsigned char *img = image(&len), *bad = malloc(len);

	(void)state;
	assert_non_null(bad);
	for (size_t off = 64; off < len - 1; off++) {
		memcpy(bad, img, len);
		bad[off] ^= 0x20;
		expect_refused(bad, len, "checksum mismatch", off);
	}
	memcpy(bad, img, len);
	bad[len - 1] = '\n';
	expect_refused(bad, len, "no NUL after the body", len - 1);
	free(bad);
	free(img);
}

static void test_truncated(void **state)
{
	struct hb_snapfile f;
	struct hb_err err = { 0 };
	size_t len;
	unsigned char *img = image(&len), *big = malloc(len + 1);

	(void)state;
	for (size_t n = 0; n < len; n++)
		expect_refused(img, n, n < 64 ? "truncated" : "body length", n);
	/* one byte too many */
	assert_non_null(big);
	memcpy(big, img, len);
	big[len] = 0;
	expect_refused(big, len + 1, "body length", len);
	free(big);

	/* on disk, cut short after a crash */
	assert_int_equal(truncate(path, 64 + 10), 0);
	assert_int_equal(hb_snapfile_open(path, 0, &f, &err), HB_EPROTO);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "body length"));
	assert_zeroed(&f);
	/* empty: what a power cut may leave */
	memset(&err, 0, sizeof(err));
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(hb_snapfile_open(path, 0, &f, &err), HB_EPROTO);
	assert_non_null(strstr(err.msg, "size 0 is outside"));
	assert_zeroed(&f);
	/* past the largest body: refused before it is mapped */
	memset(&err, 0, sizeof(err));
	assert_int_equal(truncate(path, 64 + HB_SNAPFILE_BODY_MAX + 2), 0);
	assert_int_equal(hb_snapfile_open(path, 0, &f, &err), HB_EPROTO);
	assert_non_null(strstr(err.msg, "is outside"));
	free(img);
}

static void expect_open(int code, uid_t trusted, const char *what)
{
	struct hb_snapfile f;
	struct hb_err err = { 0 };

	assert_int_equal(hb_snapfile_open(path, trusted, &f, &err), code);
	if (!strstr(err.msg, what) || strncmp(err.msg, "snapshot ", 9) ||
	    strncmp(err.msg + 9, path, strlen(path)))
		fail_msg("'%s' does not start 'snapshot %s' and say %s",
			 err.msg, path, what);
	assert_zeroed(&f);
}

static void test_trust(void **state)
{
	char other[160];
	uid_t me = geteuid();

	(void)state;
	expect_open(HB_ENOENT, 0, "No such file");
	put(&meta0, body_text);

	/* owned by another user than root or the trusted one */
	if (me == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		expect_open(HB_EPERM, 0, "owned by uid 65534, not root or 0");
		assert_int_equal(version_as(65534), 7);
		assert_int_equal(chown(path, 0, 0), 0);
	} else {
		expect_open(HB_EPERM, me + 1, "not root or");
	}
	assert_int_equal(version_as(0), 7);

	/* writable by others or the group */
	assert_int_equal(chmod(path, 0666), 0);
	expect_open(HB_EPERM, 0, "mode 0666 is writable by group or others");
	assert_int_equal(chmod(path, 0660), 0);
	expect_open(HB_EPERM, 0, "mode 0660");
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(version_as(0), 7);

	/* a second link: an old snapshot put back under the name */
	snprintf(other, sizeof(other), "%s/old", root);
	assert_int_equal(link(path, other), 0);
	expect_open(HB_EPERM, 0, "has 2 links");
	assert_int_equal(unlink(other), 0);

	/* a symbolic link to a good snapshot is not followed */
	assert_int_equal(rename(path, other), 0);
	assert_int_equal(symlink(other, path), 0);
	expect_open(HB_EPERM, 0, "symbolic link");
	assert_int_equal(unlink(path), 0);

	/* a FIFO: refused without blocking on it */
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_open(HB_EPERM, 0, "not a regular file");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	expect_open(HB_EPERM, 0, "not a regular file");
	assert_int_equal(rmdir(path), 0);
}

static void test_changed(void **state)
{
	struct hb_snapfile_meta m = meta0;
	struct hb_snapfile f, g;
	struct hb_err err = { 0 };
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 12345, 0 } };

	(void)state;
	put(&meta0, body_text);
	assert_int_equal(hb_snapfile_open(path, 0, &f, &err), 0);
	assert_int_equal(hb_snapfile_changed(path, &f), 0);
	assert_int_equal(hb_snapfile_changed(path, &f), 0);

	/* the same size, written at once: the rename still shows */
	m.version = 8;
	put(&m, body_text);
	assert_int_equal(hb_snapfile_changed(path, &f), 1);
	/* and the old mapping still reads the old file whole */
	assert_int_equal(f.meta.version, 7);
	assert_string_equal(f.body, body_text);

	assert_int_equal(hb_snapfile_open(path, 0, &g, &err), 0);
	assert_int_equal(g.meta.version, 8);
	assert_int_equal(g.size, f.size);
	assert_int_equal(hb_snapfile_changed(path, &g), 0);
	assert_int_equal(utimensat(AT_FDCWD, path, later, 0), 0);
	assert_int_equal(hb_snapfile_changed(path, &g), 1);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(hb_snapfile_changed(path, &g), 1);
	hb_snapfile_close(&f);
	hb_snapfile_close(&g);
}

static void test_refused_writes(void **state)
{
	struct hb_snapfile_meta bad[] = {
		{ .version = 0, .max_age_ms = 1 },
		{ .version = 1, .max_age_ms = 0 },
		{ .version = 1, .max_age_ms = -1 },
		{ .version = 1, .max_age_ms = 1, .lease_lo = 5, .lease_hi = 3 },
		{ .version = 1, .max_age_ms = 1, .lease_lo = 0, .lease_hi = 3 },
		{ .version = 1, .max_age_ms = 1, .lease_lo = 3, .lease_hi = 0 },
	};
	static const char *why[] = { "version is 0",  "max_age_ms 0",
				     "max_age_ms -1", "lease [5, 3]",
				     "lease [0, 3]",  "lease [3, 0]" };
	struct hb_err err;
	char nodir[160];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(hb_snapfile_write(path, &bad[i], "x", 1, 0600,
						   (gid_t)-1, &err),
				 HB_EINVAL);
		if (!strstr(err.msg, why[i]) || !strstr(err.msg, path))
			fail_msg("'%s' does not say %s", err.msg, why[i]);
	}
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_snapfile_write(path, &meta0, "x", 1, 0664, (gid_t)-1, &err),
		HB_EINVAL);
	assert_non_null(strstr(err.msg, "mode 0664"));
	/* the length is checked before the body is read */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_snapfile_write(path, &meta0, "x",
					   HB_SNAPFILE_BODY_MAX + 1ul, 0600,
					   (gid_t)-1, &err),
			 HB_ETOOBIG);
	memset(&err, 0, sizeof(err));
	snprintf(nodir, sizeof(nodir), "%s/", root);
	assert_int_equal(
		hb_snapfile_write(nodir, &meta0, "x", 1, 0600, (gid_t)-1, &err),
		HB_EINVAL);
	memset(&err, 0, sizeof(err));
	snprintf(nodir, sizeof(nodir), "%s/none/snapshot", root);
	assert_int_equal(
		hb_snapfile_write(nodir, &meta0, "x", 1, 0600, (gid_t)-1, &err),
		HB_ENOENT);
	assert_non_null(strstr(err.msg, nodir));
	assert_int_equal(entries(), 0);
}

/*
 * Run one write of body (len bytes) in a child that first runs how();
 * the child exits 0 when the write failed with want and err named path.
 */
static void write_in_child(void (*how)(void), size_t len, int want)
{
	struct hb_snapfile_meta m = meta0;
	int status;
	pid_t pid;

	m.version = 99;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct hb_err err = { 0 };
		char *body = calloc(1, len + 1);
		int rc;

		how();
		rc = hb_snapfile_write(path, &m, body, len, 0644, (gid_t)-1,
				       &err);
		if (rc != want || !strstr(err.msg, path))
			fprintf(stderr, "child: rc %d: %s\n", rc, err.msg);
		_exit(rc == want && strstr(err.msg, path) ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void as_nobody(void)
{
	if (setgid(65534) || setuid(65534))
		_exit(2);
}

static void small_files(void)
{
	struct rlimit r = { 100, 100 };

	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &r))
		_exit(2);
}

static void test_failed_writes(void **state)
{
	struct hb_err err = { 0 };
	char dir[160];

	(void)state;
	put(&meta0, body_text);
	assert_int_equal(chmod(root, 0755), 0);

	/* no temporary file can be made in the directory */
	if (geteuid() == 0) {
		write_in_child(as_nobody, 10, HB_EPERM);
	} else {
		assert_int_equal(chmod(root, 0555), 0);
		assert_int_equal(hb_snapfile_write(path, &meta0, "x", 1, 0644,
						   (gid_t)-1, &err),
				 HB_EPERM);
		assert_int_equal(chmod(root, 0755), 0);
	}
	assert_int_equal(version_as(0), 7);
	assert_int_equal(entries(), 1);

	/* the write fails part way (a full disk, a quota) */
	write_in_child(small_files, 4096, HB_EIO);
	assert_int_equal(version_as(0), 7);
	assert_int_equal(entries(), 1);

	/* the rename fails: a directory is at the name */
	snprintf(path, sizeof(path), "%s/dir", root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(dir, sizeof(dir), "%s/dir/x", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_snapfile_write(path, &meta0, "x", 1, 0644, (gid_t)-1, &err),
		HB_EIO);
	assert_non_null(strstr(err.msg, "rename"));
	assert_int_equal(entries(), 2);
	snprintf(path, sizeof(path), "%s/snapshot", root);
	assert_int_equal(version_as(0), 7);
}

/* Two writers replace the file over and over while it is opened: every
 * open finds a whole file, and no temporary file stays. */
static void test_readers_never_see_half(void **state)
{
	enum { WRITES = 150 };
	struct hb_snapfile f;
	int opened = 0, status;
	uint64_t last = 0;
	char *big = malloc(256 * 1024 + 1);

	(void)state;
	assert_non_null(big);
	memset(big, 'b', 256 * 1024);
	big[256 * 1024] = 0;
	put(&meta0, body_text);
	for (int w = 0; w < 2; w++) {
		kids[w] = fork();
		assert_true(kids[w] >= 0);
		if (!kids[w]) {
			struct hb_snapfile_meta m = meta0;
			struct hb_err err = { 0 };

			for (int i = 0; i < WRITES; i++) {
				m.version = (uint64_t)(w * 1000 + i + 10);
				if (hb_snapfile_write(path, &m, big,
						      (size_t)(i % 7) * 37000,
						      0644, (gid_t)-1, &err))
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < 2;) {
		struct hb_err err = { 0 };
		pid_t done;

		if (hb_snapfile_open(path, 0, &f, &err))
			fail_msg("open %d: %s", opened, err.msg);
		assert_true(f.blen == strlen(body_text) || f.blen % 37000 == 0);
		assert_true(f.meta.version >= 7);
		last = f.meta.version;
		hb_snapfile_close(&f);
		opened++;
		done = waitpid(-1, &status, WNOHANG);
		if (done > 0) {
			kids[done == kids[1]] = 0;
			assert_true(WIFEXITED(status));
			assert_int_equal(WEXITSTATUS(status), 0);
			w++;
		}
	}
	assert_true(opened > 0);
	print_message("%d opens while 2 writers replaced the file\n", opened);
	assert_true(last >= 7);
	assert_int_equal(entries(), 1);
	assert_int_equal(hb_snapfile_open(path, 0, &f, &(struct hb_err){ 0 }),
			 0);
	assert_true(f.meta.version == 10 + WRITES - 1 ||
		    f.meta.version == 1010 + WRITES - 1);
	hb_snapfile_close(&f);
	free(big);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_round_trip),    T(test_layout),
		T(test_header_bytes),  T(test_body_bytes),
		T(test_truncated),     T(test_trust),
		T(test_changed),       T(test_refused_writes),
		T(test_failed_writes), T(test_readers_never_see_half),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
