/*
 * url.c - mirror locations ("s3://BUCKET/PREFIX") and checkpoint IDs.
 */
#include <string.h>

#include "hpcbridge/mirror.h"

static int bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-'))
			return 0;
	}
	/* S3: begins and ends with a letter or digit, no "..". */
	return b[0] != '.' && b[0] != '-' && b[n - 1] != '.' &&
	       b[n - 1] != '-' && !memmem(b, n, "..", 2);
}

int hb_mirror_url_parse(const char *url, struct hb_mirror_url *out,
			struct hb_err *err)
{
	const char *b, *slash;
	size_t bn, pn;

	memset(out, 0, sizeof(*out));
	if (!url || strncmp(url, "s3://", 5))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: not an s3://BUCKET/PREFIX location",
				  url ? url : "(null)");
	b = url + 5;
	slash = strchr(b, '/');
	bn = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_ok(b, bn))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: bucket: 3 to 63 of a-z, 0-9, '.' and "
				  "'-', beginning and ending with a letter or "
				  "digit", url);
	memcpy(out->bucket, b, bn);
	if (!slash)
		return 0;
	pn = strlen(slash + 1);
	if (pn && slash[pn] == '/')
		pn--;
	if (pn > HB_MIRROR_PREFIX_MAX)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%s: prefix: longer than %u bytes", url,
				  HB_MIRROR_PREFIX_MAX);
	if (pn) {
		struct hb_err pe = { 0 };

		if (hb_ckpt_path_check(slash + 1, pn, "prefix", &pe))
			return hb_err_set(err, HB_EINVAL, NULL, 0, "%s: %s",
					  url, pe.msg);
	}
	memcpy(out->prefix, slash + 1, pn);
	out->prefix[pn] = '\0';
	return 0;
}

int hb_mirror_id_valid(const char *id, size_t n)
{
	/* YYYYMMDDTHHMMSSZ-XXXXXXXX */
	static const char form[] = "99999999T999999Z-xxxxxxxx";

	if (n != sizeof(form) - 1)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		switch (form[i]) {
		case '9':
			if (c < '0' || c > '9')
				return 0;
			break;
		case 'x':
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
				return 0;
			break;
		default:
			if (c != form[i])
				return 0;
		}
	}
	return 1;
}
