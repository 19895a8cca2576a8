/*
 * usage.c - hb_mirror_usage(): the bytes S3 holds under a checkpoint
 * location, from one listing of its prefix.
 */
#include <stdio.h>

#include "gateway/mirror/usage.h"
#include "hpcbridge/mirror.h"

struct tally {
	uint64_t bytes, keys;
};

static int count(const struct hb_s3_entry *e, void *arg)
{
	struct tally *t = arg;

	t->bytes += e->size;
	t->keys++;
	return 0;
}

int hb_mirror_usage(struct hb_s3 *s3, const char *url, uint64_t *bytes,
		    uint64_t *keys, struct hb_err *err)
{
	struct hb_mirror_url u;
	struct tally t = { 0 };
	char prefix[HB_MIRROR_PREFIX_MAX + 2];
	int rc;

	*bytes = 0;
	if (keys)
		*keys = 0;
	if ((rc = hb_mirror_url_parse(url, &u, err)))
		return rc;
	if (!u.prefix[0])
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: no prefix: a whole bucket is no "
				  "checkpoint location",
				  url);
	/* "PREFIX/": not PREFIX2/... beside it */
	snprintf(prefix, sizeof(prefix), "%s/", u.prefix);
	if ((rc = hb_s3_list(s3, u.bucket, prefix, count, &t, err)))
		return rc;
	*bytes = t.bytes;
	if (keys)
		*keys = t.keys;
	return 0;
}
