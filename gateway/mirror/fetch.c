/*
 * fetch.c - the pieces of a pull the daemon puts together itself, when
 * the agent materialises as the user (gateway/daemon/ckpt.c): a
 * checkpoint's manifest, and one file's bytes from its object.
 */
#include <string.h>

#include "gateway/mirror/mirror_int.h"

int hb_mirror_manifest_get(struct hb_s3 *s3, const char *url,
			   const struct hb_mirror_opts *opts,
			   struct hb_ckpt_manifest **out,
			   char id[HB_MIRROR_ID_LEN + 1], struct hb_err *err)
{
	struct mir m;
	int rc;

	*out = NULL;
	id[0] = '\0';
	rc = mir_open(&m, s3, url, opts, NULL, err);
	if (!rc)
		rc = mir_pick(&m, id, out, err);
	mir_close(&m);
	return rc;
}

int hb_mirror_object_get(struct hb_s3 *s3, const char *url,
			 const struct hb_ckpt_file *f, hb_s3_sink_fn sink,
			 void *arg, struct hb_err *err)
{
	char key[MIR_KEY_MAX];
	struct hb_err e = { 0 };
	struct mir m;
	int rc;

	if ((rc = mir_open(&m, s3, url, NULL, NULL, err)))
		goto out;
	mir_key_object(&m, f->sha256, key);
	rc = hb_s3_get(s3, m.u.bucket, key, 0, 0, f->sha256, sink, arg, &e);
	if (rc == HB_EIO && !strstr(e.msg, "SHA-256"))
		hb_err_set(err, rc, NULL, 0, "%s: %s", f->path, e.msg);
	else if (rc == HB_EIO)
		hb_err_set(err, rc, NULL, 0,
			   "%s: %s: contents do not match their SHA-256 (%s)",
			   f->path, key, e.msg);
	else if (rc)
		hb_err_set(err, rc, NULL, 0, "%s: %s", f->path, e.msg);
out:
	mir_close(&m);
	return rc;
}
