/*
 * fuzz_ckpt_manifest.c - reading a checkpoint manifest must never crash,
 * and what reads must write, read back and write again to the same bytes
 * and the same files:
 *   text -> manifest M1 -> text T1 -> M2 -> T2, with T1 == T2 and M1 == M2.
 * Every path read must pass hb_ckpt_path_check().  A broken invariant
 * aborts with the texts on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *why, const struct hb_buf *a,
		const struct hb_buf *b)
{
	fprintf(stderr, "fuzz_ckpt_manifest: %s\n--- first\n%s\n--- second\n"
		"%s\n", why, a && a->data ? a->data : "",
		b && b->data ? b->data : "");
	abort();
}

static int same(const struct hb_ckpt_manifest *x,
		const struct hb_ckpt_manifest *y)
{
	if (x->nfiles != y->nfiles || x->total != y->total ||
	    x->created != y->created || strcmp(x->job, y->job))
		return 0;
	for (size_t i = 0; i < x->nfiles; i++) {
		const struct hb_ckpt_file *a = &x->files[i], *b = &y->files[i];

		if (strcmp(a->path, b->path) || a->size != b->size ||
		    a->mode != b->mode || memcmp(a->sha256, b->sha256, 32))
			return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hb_ckpt_manifest *m1 = NULL, *m2 = NULL;
	struct hb_err err = {0};
	struct hb_buf t1, t2;

	if (hb_ckpt_manifest_parse((const char *)data, size, "fuzz", &m1,
				   &err)) {
		if (m1 || !err.code || !err.msg[0])
			die("a refusal without a message", NULL, NULL);
		return 0;
	}
	hb_buf_init(&t1, 0);
	hb_buf_init(&t2, 0);
	for (size_t i = 0; i < m1->nfiles; i++)
		if (hb_ckpt_path_check(m1->files[i].path,
				       strlen(m1->files[i].path), NULL, NULL))
			die("a bad path was read", NULL, NULL);
	if (hb_ckpt_manifest_write(m1, &t1))
		die("what was read does not write", NULL, NULL);
	memset(&err, 0, sizeof(err));
	if (hb_ckpt_manifest_parse(t1.data, t1.len, "again", &m2, &err))
		die(err.msg, &t1, NULL);
	if (hb_ckpt_manifest_write(m2, &t2))
		die("the second manifest does not write", &t1, NULL);
	if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len))
		die("the texts differ", &t1, &t2);
	if (!same(m1, m2))
		die("the manifests differ", &t1, &t2);
	hb_ckpt_manifest_free(m1);
	hb_ckpt_manifest_free(m2);
	hb_buf_free(&t1);
	hb_buf_free(&t2);
	return 0;
}
