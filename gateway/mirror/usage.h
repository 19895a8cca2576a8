/*
 * usage.h - what a checkpoint location holds in S3, for the storage it
 * is charged (the daemon's storage meter, meter.h hb_meter_storage()).
 */
#ifndef HB_MIRROR_USAGE_H
#define HB_MIRROR_USAGE_H

#include <stdint.h>

#include "hpcbridge/error.h"
#include "hpcbridge/s3.h"

/*
 * The bytes and keys S3 holds under url's PREFIX/ ("s3://BUCKET/PREFIX",
 * hb_mirror_url_parse()): every key, objects, manifests and anything
 * else, as S3 bills them; one listing, nothing read.  0 and 0 when there
 * is none.  HB_EINVAL for a bad url or one without a prefix (a whole
 * bucket is no job's).
 */
int hb_mirror_usage(struct hb_s3 *s3, const char *url, uint64_t *bytes,
		    uint64_t *keys, struct hb_err *err);

#endif
