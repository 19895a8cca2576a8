/*
 * s3_creds.c - where the S3 client's keys come from: the options, the
 * standard AWS_* variables, or the shared credentials file (the INI file
 * the AWS CLI writes).  The secret is copied, wiped when freed, and never
 * put in a message: errors name the file, the profile and the key that
 * is missing, never a value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/file.h"

#include "gateway/s3/s3_int.h"

#define CREDS_FILE_MAX (1u << 20)

static void wipe_free(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

void hb_s3_creds_clear(struct hb_s3_creds *c)
{
	wipe_free(&c->access_key);
	wipe_free(&c->secret_key);
	wipe_free(&c->session_token);
	free(c->source);
	c->source = NULL;
}

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* One line of the file: its start and length, blanks trimmed both ends. */
static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' ||
		      (*s)[*n - 1] == '\r'))
		(*n)--;
}

/* key = value in the profile's section: store the three we know. */
static int take(struct hb_s3_creds *out, const char *k, size_t kl,
		const char *v, size_t vl)
{
	static const char *const names[] = { "aws_access_key_id",
					     "aws_secret_access_key",
					     "aws_session_token" };
	char **slot[] = { &out->access_key, &out->secret_key,
			  &out->session_token };

	for (size_t i = 0; i < 3; i++) {
		if (strlen(names[i]) != kl || strncasecmp(k, names[i], kl))
			continue;
		wipe_free(slot[i]);
		*slot[i] = dup_n(v, vl);
		return *slot[i] ? 0 : HB_ENOMEM;
	}
	return 0;
}

static int section_is(const char *s, size_t n, const char *profile)
{
	size_t pl = strlen(profile);

	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return -1; /* not a section header */
	s++;
	n -= 2;
	trim(&s, &n);
	/* ~/.aws/config spells it "[profile NAME]"; accept both. */
	if (n > 8 && !strncmp(s, "profile ", 8)) {
		s += 8;
		n -= 8;
		trim(&s, &n);
	}
	return n == pl && !memcmp(s, profile, n);
}

int hb_s3_creds_parse(const char *text, size_t n, const char *name,
		      const char *profile, struct hb_s3_creds *out,
		      struct hb_err *err)
{
	const char *p = text, *end = text + n;
	int in = 0, found = 0, rc = 0;
	unsigned line = 0;

	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *s = p, *eq;
		size_t len = (size_t)((nl ? nl : end) - p);
		int sec;

		p = nl ? nl + 1 : end;
		line++;
		trim(&s, &len);
		if (!len || s[0] == '#' || s[0] == ';')
			continue;
		sec = section_is(s, len, profile);
		if (sec >= 0) {
			in = sec;
			found |= sec;
			continue;
		}
		eq = memchr(s, '=', len);
		if (!in || !eq)
			continue;
		{
			const char *k = s, *v = eq + 1;
			size_t kl = (size_t)(eq - s);
			size_t vl = len - kl - 1;

			trim(&k, &kl);
			trim(&v, &vl);
			rc = take(out, k, kl, v, vl);
		}
	}
	if (rc)
		return rc;
	if (!found)
		return hb_err_set(err, HB_ENOENT, name, 0,
				  "no profile [%s]", profile);
	if (!out->access_key || !*out->access_key || !out->secret_key ||
	    !*out->secret_key)
		return hb_err_set(err, HB_ENOENT, name, 0,
				  "profile [%s] lacks aws_access_key_id or "
				  "aws_secret_access_key", profile);
	{
		size_t sl = strlen(name) + strlen(profile) + 4;

		out->source = malloc(sl);
		if (!out->source)
			return HB_ENOMEM;
		snprintf(out->source, sl, "%s [%s]", name, profile);
	}
	return 0;
}

static int set3(struct hb_s3_creds *out, const char *ak, const char *sk,
		const char *tok, const char *source)
{
	out->access_key = strdup(ak);
	out->secret_key = strdup(sk);
	out->session_token = tok && *tok ? strdup(tok) : NULL;
	out->source = strdup(source);
	if (!out->access_key || !out->secret_key || !out->source ||
	    (tok && *tok && !out->session_token))
		return HB_ENOMEM;
	return 0;
}

int hb_s3_creds_resolve(const struct hb_s3_opts *o, struct hb_s3_creds *out,
			struct hb_err *err)
{
	const char *ak, *sk, *path, *profile;
	struct hb_buf text, p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (o->access_key) {
		if (!o->secret_key)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "s3: an access key without a secret "
					  "key");
		return set3(out, o->access_key, o->secret_key,
			    o->session_token, "options");
	}
	ak = getenv("AWS_ACCESS_KEY_ID");
	sk = getenv("AWS_SECRET_ACCESS_KEY");
	if (ak && *ak) {
		if (!sk || !*sk)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "s3: AWS_ACCESS_KEY_ID is set but "
					  "AWS_SECRET_ACCESS_KEY is not");
		return set3(out, ak, sk, getenv("AWS_SESSION_TOKEN"),
			    "environment");
	}
	profile = o->profile ? o->profile : getenv("AWS_PROFILE");
	if (!profile || !*profile)
		profile = "default";
	hb_buf_init(&p, 4096);
	hb_buf_init(&text, CREDS_FILE_MAX);
	path = getenv("AWS_SHARED_CREDENTIALS_FILE");
	if (path && *path) {
		rc = hb_buf_puts(&p, path) ? HB_ENOMEM : 0;
	} else if (getenv("HOME")) {
		rc = hb_buf_printf(&p, "%s/.aws/credentials", getenv("HOME"))
			     ? HB_ENOMEM : 0;
	} else {
		rc = hb_err_set(err, HB_ENOENT, NULL, 0,
				"s3: no credentials: no options, no "
				"AWS_ACCESS_KEY_ID, no HOME for "
				"~/.aws/credentials");
	}
	if (!rc)
		rc = hb_file_read(p.data, CREDS_FILE_MAX, "s3 credentials",
				  &text, err);
	if (!rc)
		rc = hb_s3_creds_parse(text.data ? text.data : "", text.len,
				       p.data, profile, out, err);
	if (text.data)
		explicit_bzero(text.data, text.len);
	hb_buf_free(&text);
	hb_buf_free(&p);
	if (rc)
		hb_s3_creds_clear(out);
	return rc;
}
