/*
 * url.c - mirror locations ("s3://BUCKET/PREFIX"), checkpoint IDs, the
 * keys under PREFIX and the options of a call with their defaults.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gateway/mirror/mirror_int.h"
#include "hpcbridge/clock.h"

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
				  "%.160s: not an s3://BUCKET/PREFIX location",
				  url ? url : "(null)");
	b = url + 5;
	slash = strchr(b, '/');
	bn = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_ok(b, bn))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "%.160s: bucket: 3 to 63 of a-z, 0-9, '.' and "
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
				  "%.160s: prefix: longer than %u bytes", url,
				  HB_MIRROR_PREFIX_MAX);
	if (pn) {
		struct hb_err pe = { 0 };

		if (hb_ckpt_path_check(slash + 1, pn, "prefix", &pe))
			return hb_err_set(err, HB_EINVAL, NULL, 0, "%.160s: %s",
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

#define MIB (1024ull * 1024)

int mir_open(struct mir *m, struct hb_s3 *s3, const char *url,
	     const struct hb_mirror_opts *opts, struct hb_mirror_stats *st,
	     struct hb_err *err)
{
	memset(m, 0, sizeof(*m));
	m->st = st ? st : &m->local;
	memset(m->st, 0, sizeof(*m->st));
	pthread_mutex_init(&m->mu, NULL);
	m->s3 = s3;
	m->url = url ? url : "(null)";
	m->start_ms = hb_clock_mono_ms();
	if (opts)
		m->o = *opts;
	if (!m->o.jobs)
		m->o.jobs = 4;
	if (!m->o.part_size)
		m->o.part_size = 16 * MIB;
	if (!m->o.multipart_min)
		m->o.multipart_min = 128 * MIB;
	if (m->o.gc_grace_s < 0)
		m->o.gc_grace_s = 3600;
	if (!m->o.progress_ms)
		m->o.progress_ms = 500;
	if (m->o.jobs > 64)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "jobs: %u, at most 64", m->o.jobs);
	/* S3's bounds on a part; the last may be smaller. */
	if (m->o.part_size < 5 * MIB || m->o.part_size > 5120 * MIB)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "part size: %" PRIu64 " bytes, not within "
				  "5 MiB to 5 GiB", m->o.part_size);
	if (m->o.multipart_min < 5 * MIB || m->o.multipart_min > 5120 * MIB)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "multipart minimum: %" PRIu64 " bytes, not "
				  "within 5 MiB to 5 GiB", m->o.multipart_min);
	if (m->o.checkpoint &&
	    !hb_mirror_id_valid(m->o.checkpoint, strlen(m->o.checkpoint)))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "checkpoint: '%.64s' is not an ID "
				  "(YYYYMMDDTHHMMSSZ-XXXXXXXX)",
				  m->o.checkpoint);
	if (!s3)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no S3 client");
	return hb_mirror_url_parse(url, &m->u, err);
}

void mir_close(struct mir *m)
{
	m->st->elapsed_ms = (uint64_t)(hb_clock_mono_ms() - m->start_ms);
	pthread_mutex_destroy(&m->mu);
}

static void key(const struct mir *m, const char *word, const char *name,
		const char *ext, char out[MIR_KEY_MAX])
{
	/* Every part is bounded: the prefix by HB_MIRROR_PREFIX_MAX, the
	 * rest are fixed words, IDs and digests. */
	snprintf(out, MIR_KEY_MAX, "%s%s%s%s%s", m->u.prefix,
		 m->u.prefix[0] ? "/" : "", word, name, ext);
}

void mir_key_dir(const struct mir *m, const char *word, char out[MIR_KEY_MAX])
{
	key(m, word, "", "", out);
}

void mir_key_object(const struct mir *m, const uint8_t d[32],
		    char out[MIR_KEY_MAX])
{
	char hex[65];

	hb_ckpt_hex(d, hex);
	key(m, "objects/", hex, "", out);
}

void mir_key_manifest(const struct mir *m, const char *id,
		      char out[MIR_KEY_MAX])
{
	key(m, "checkpoints/", id, ".json", out);
}

void mir_key_url(const struct mir *m, const char *k, char *out, size_t n)
{
	snprintf(out, n, "s3://%s/%s", m->u.bucket, k);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int mir_hex_digest(const char *s, size_t n, uint8_t d[32])
{
	if (n != 64)
		return 0;
	for (size_t i = 0; i < 32; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		d[i] = (uint8_t)(hi << 4 | lo);
	}
	return 1;
}

void mir_make_id(int64_t created, const uint8_t d[32],
		 char out[HB_MIRROR_ID_LEN + 1])
{
	time_t t = (time_t)created;
	struct tm tm;
	char hex[65], tmp[96] = "";

	/* Manifests hold years 1970 to 9999 (ckpt.h), so this is 25
	 * characters; tmp has room for any int. */
	gmtime_r(&t, &tm);
	hb_ckpt_hex(d, hex);
	snprintf(tmp, sizeof(tmp), "%04d%02d%02dT%02d%02d%02dZ-%.8s",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, hex);
	memcpy(out, tmp, HB_MIRROR_ID_LEN);
	out[HB_MIRROR_ID_LEN] = '\0';
}
