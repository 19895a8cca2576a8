/*
 * s3call.c - one S3 call from the command line, through the project's
 * client, against the endpoint and keys of the standard AWS_* variables
 * (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_DEFAULT_REGION) or the credentials file.  For integration tests
 * against a real S3 server (Swift with s3api, MinIO, AWS):
 *
 *   s3call put BUCKET KEY FILE
 *   s3call putfile BUCKET KEY FILE [SIZE [SHA256]]   (streamed from the
 *                         file: SIZE bytes promised with digest SHA256,
 *                         by default the file's own)
 *   s3call get BUCKET KEY [OFFSET LENGTH]     (bytes to standard output)
 *   s3call head BUCKET KEY
 *   s3call list BUCKET [PREFIX]               (key TAB size per line)
 *   s3call pages BUCKET PREFIX N              (the same, N keys a page,
 *                                              then "pages P")
 *   s3call delete BUCKET KEY
 *   s3call mpu BUCKET KEY FILE [PART_MIB [THREADS]]
 *   s3call mpu-begin BUCKET KEY               (an upload left unfinished:
 *                                              prints its id)
 *   s3call uploads BUCKET [PREFIX]            (key TAB upload id per line)
 *
 * S3CALL_VHOST=1 asks for virtual-host addressing.  Exit status 0, or 1
 * with the error on standard error.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "hpcbridge/file.h"
#include "hpcbridge/s3.h"

#define FILE_MAX (4ull << 30)

static int parse_num(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end || end == s ? -1 : 0;
}

static int to_stdout(const void *p, size_t n, void *arg)
{
	(void)arg;
	return fwrite(p, 1, n, stdout) == n ? 0 : HB_EIO;
}

static int print_entry(const struct hb_s3_entry *e, void *arg)
{
	(void)arg;
	printf("%s\t%llu\n", e->key, (unsigned long long)e->size);
	return 0;
}

struct mpu {
	struct hb_s3 *s;
	const char *bucket, *key, *id;
	const char *data;
	size_t len, part;
	struct hb_s3_part *parts;
	size_t nparts;
	atomic_size_t next;
	atomic_int rc;
	struct hb_err err;
	pthread_mutex_t mu;
};

static void *mpu_worker(void *u)
{
	struct mpu *m = u;
	size_t i;

	while ((i = atomic_fetch_add(&m->next, 1)) < m->nparts &&
	       !atomic_load(&m->rc)) {
		size_t off = i * m->part;
		size_t n = off + m->part > m->len ? m->len - off : m->part;
		struct hb_err e = { 0 };
		int rc = hb_s3_mpu_part(m->s, m->bucket, m->key, m->id,
					(int)i + 1, m->data + off, n,
					&m->parts[i], &e);

		if (rc) {
			pthread_mutex_lock(&m->mu);
			if (!atomic_load(&m->rc)) {
				m->err = e;
				atomic_store(&m->rc, rc);
			}
			pthread_mutex_unlock(&m->mu);
		}
	}
	return NULL;
}

static int do_mpu(struct hb_s3 *s, int argc, char **argv, struct hb_buf *f,
		  struct hb_err *err)
{
	unsigned long long mib = 8, threads = 4;
	pthread_t th[32];
	struct mpu m = { .s = s, .bucket = argv[2], .key = argv[3] };
	char *id = NULL;
	int rc;

	if ((argc > 5 && (parse_num(argv[5], &mib) || !mib || mib > 5120)) ||
	    (argc > 6 && (parse_num(argv[6], &threads) || !threads ||
			  threads > 32)))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "bad PART_MIB or THREADS");
	rc = hb_s3_mpu_create(s, argv[2], argv[3], &id, err);
	if (rc)
		return rc;
	m.id = id;
	m.data = f->data ? f->data : "";
	m.len = f->len;
	m.part = (size_t)mib << 20;
	m.nparts = m.len ? (m.len + m.part - 1) / m.part : 1;
	m.parts = calloc(m.nparts, sizeof(*m.parts));
	pthread_mutex_init(&m.mu, NULL);
	if (!m.parts) {
		rc = HB_ENOMEM;
		goto out;
	}
	for (size_t t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, mpu_worker, &m);
	for (size_t t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	rc = atomic_load(&m.rc);
	if (rc)
		*err = m.err;
	else
		rc = hb_s3_mpu_complete(s, argv[2], argv[3], id, m.parts,
					m.nparts, err);
	if (rc) {
		struct hb_err e2 = { 0 };

		hb_s3_mpu_abort(s, argv[2], argv[3], id, &e2);
	}
out:
	pthread_mutex_destroy(&m.mu);
	free(m.parts);
	free(id);
	return rc;
}

/* ListObjectsV2 page by page, N keys a page, following the tokens. */
static int do_pages(struct hb_s3 *s, char **argv, struct hb_err *err)
{
	unsigned long long n;
	struct hb_s3_page p = { 0 };
	char *token = NULL;
	int rc, pages = 0;

	if (parse_num(argv[4], &n) || !n || n > 1000)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "bad N");
	do {
		rc = hb_s3_list_page(s, argv[2], argv[3], token, (int)n, &p,
				     err);
		free(token);
		token = NULL;
		if (rc)
			break;
		pages++;
		for (size_t i = 0; i < p.n; i++)
			print_entry(&p.v[i], NULL);
		if (p.truncated && !(token = strdup(p.next_token)))
			rc = HB_ENOMEM;
		hb_s3_page_free(&p);
	} while (!rc && token);
	hb_s3_page_free(&p);
	free(token);
	if (!rc)
		printf("pages %d\n", pages);
	return rc;
}

static int unhex(const char *s, unsigned char d[32])
{
	for (int i = 0; i < 32; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		d[i] = (unsigned char)v;
	}
	return strlen(s) == 64 ? 0 : -1;
}

/* hb_s3_put_file: what is promised may differ from what the file holds. */
static int do_putfile(struct hb_s3 *s, int argc, char **argv,
		      struct hb_buf *f, struct hb_err *err)
{
	unsigned long long size = f->len;
	unsigned char d[32];
	int fd, rc;

	EVP_Digest(f->data ? f->data : "", f->len, d, NULL, EVP_sha256(), NULL);
	if ((argc >= 6 && parse_num(argv[5], &size)) ||
	    (argc == 7 && unhex(argv[6], d)))
		return hb_err_set(err, HB_EINVAL, NULL, 0, "bad SIZE or SHA256");
	if ((fd = open(argv[4], O_RDONLY | O_CLOEXEC)) < 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "%s: %s", argv[4],
				  strerror(errno));
	rc = hb_s3_put_file(s, argv[2], argv[3], fd, size, d, err);
	close(fd);
	return rc;
}

static int print_upload(const struct hb_s3_upload *u, void *arg)
{
	(void)arg;
	printf("%s\t%s\n", u->key, u->upload_id);
	return 0;
}

static int run(struct hb_s3 *s, int argc, char **argv, struct hb_err *err)
{
	const char *cmd = argv[1];
	struct hb_buf f;
	int rc = HB_EINVAL;

	hb_buf_init(&f, FILE_MAX);
	if (!strcmp(cmd, "put") && argc == 5) {
		rc = hb_file_read(argv[4], FILE_MAX, NULL, &f, err);
		if (!rc)
			rc = hb_s3_put(s, argv[2], argv[3], f.data ? f.data : "",
				       f.len, NULL, err);
	} else if (!strcmp(cmd, "putfile") && argc >= 5 && argc <= 7) {
		rc = hb_file_read(argv[4], FILE_MAX, NULL, &f, err);
		if (!rc)
			rc = do_putfile(s, argc, argv, &f, err);
	} else if (!strcmp(cmd, "mpu-begin") && argc == 4) {
		char *id = NULL;

		rc = hb_s3_mpu_create(s, argv[2], argv[3], &id, err);
		if (!rc)
			printf("%s\n", id);
		free(id);
	} else if (!strcmp(cmd, "uploads") && (argc == 3 || argc == 4)) {
		rc = hb_s3_mpu_list(s, argv[2], argc == 4 ? argv[3] : NULL,
				    print_upload, NULL, err);
	} else if (!strcmp(cmd, "mpu") && argc >= 5 && argc <= 7) {
		rc = hb_file_read(argv[4], FILE_MAX, NULL, &f, err);
		if (!rc)
			rc = do_mpu(s, argc, argv, &f, err);
	} else if (!strcmp(cmd, "get") && (argc == 4 || argc == 6)) {
		unsigned long long off = 0, len = 0;

		if (argc == 6 && (parse_num(argv[4], &off) ||
				  parse_num(argv[5], &len)))
			rc = hb_err_set(err, HB_EINVAL, NULL, 0,
					"bad OFFSET or LENGTH");
		else
			rc = hb_s3_get(s, argv[2], argv[3], off, len, NULL,
				       to_stdout, NULL, err);
	} else if (!strcmp(cmd, "head") && argc == 4) {
		struct hb_s3_obj o;

		rc = hb_s3_head(s, argv[2], argv[3], &o, err);
		if (!rc)
			printf("size %llu\netag %s\nlast-modified %s\n",
			       (unsigned long long)o.size, o.etag,
			       o.last_modified);
	} else if (!strcmp(cmd, "list") && (argc == 3 || argc == 4)) {
		rc = hb_s3_list(s, argv[2], argc == 4 ? argv[3] : NULL,
				print_entry, NULL, err);
	} else if (!strcmp(cmd, "pages") && argc == 5) {
		rc = do_pages(s, argv, err);
	} else if (!strcmp(cmd, "delete") && argc == 4) {
		rc = hb_s3_delete(s, argv[2], argv[3], err);
	} else {
		rc = hb_err_set(err, HB_EINVAL, NULL, 0,
				"usage: s3call put|get|head|list|delete|mpu "
				"BUCKET [KEY] [...]");
	}
	hb_buf_free(&f);
	return rc;
}

int main(int argc, char **argv)
{
	const char *vh = getenv("S3CALL_VHOST");
	struct hb_s3_opts o = { .virtual_host = vh && !strcmp(vh, "1") };
	struct hb_err err = { 0 };
	struct hb_s3 *s = NULL;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: s3call put|get|head|list|delete|mpu "
			"BUCKET [KEY] [...]\n");
		return 2;
	}
	rc = hb_s3_new(&o, &s, &err);
	if (!rc)
		rc = run(s, argc, argv, &err);
	if (rc)
		fprintf(stderr, "s3call: %s\n", err.msg[0] ? err.msg
			: hb_strerror(rc));
	if (fflush(stdout))
		rc = rc ? rc : HB_EIO;
	hb_s3_free(s);
	return rc ? 1 : 0;
}
