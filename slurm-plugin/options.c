/*
 * options.c - the SPANK options: names, checks, and where sbatch forwards
 * their values.
 */
#include <ctype.h>
#include <string.h>

#include "hbplugin.h"
#include "hpcbridge/jobspec.h"
#include "hpcbridge/timefmt.h"

static const struct {
	const char *name, *key, *arginfo, *usage;
} opts[HB__OPT_COUNT] = {
	[HB_OPT_TARGET] = { "hpcbridge-target", "target",
			    "auto|slurm|kubernetes",
			    "Where hpcbridge runs the job: auto (the "
			    "gateway's policy), slurm or kubernetes" },
	[HB_OPT_DEADLINE] = { "hpcbridge-deadline", "deadline", "TIME",
			      "When the job must be done, for placement "
			      "(a Slurm time: now+4hours, 18:00, "
			      "2025-06-30T18:00, tomorrow)" },
	[HB_OPT_CHECKPOINT] = { "hpcbridge-checkpoint", "checkpoint", "DIR",
				"Absolute path of the job's checkpoint "
				"directory, mirrored where the job runs" },
	[HB_OPT_DATA] = { "hpcbridge-data", "data", "PATH|s3://bucket/prefix",
			  "Input data the job reads: an absolute path or an "
			  "S3 URL, for placement by data locality" },
	[HB_OPT_FABRIC] = { "hpcbridge-fabric", "fabric", "rdma|tcp|auto",
			    "The network the job's ranks need: rdma "
			    "(InfiniBand or RoCE: never placed where there "
			    "is none), tcp, or auto (read from the script)" },
};

#define ENV_PREFIX   "_SLURM_SPANK_OPTION_"
#define SPANK_PREFIX "SPANK_"

const char *hb_opt_name(enum hb_opt o)
{
	return (unsigned)o < HB__OPT_COUNT ? opts[o].name : NULL;
}

const char *hb_opt_key(enum hb_opt o)
{
	return (unsigned)o < HB__OPT_COUNT ? opts[o].key : NULL;
}

const char *hb_opt_arginfo(enum hb_opt o)
{
	return (unsigned)o < HB__OPT_COUNT ? opts[o].arginfo : NULL;
}

const char *hb_opt_usage(enum hb_opt o)
{
	return (unsigned)o < HB__OPT_COUNT ? opts[o].usage : NULL;
}

/* Values are quoted in messages: short and printable. */
static const char *shown(const char *v, char *buf, size_t len)
{
	size_t n = 0, i;

	for (i = 0; v[i] && n + 4 < len; i++)
		buf[n++] =
			(unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	if (v[i]) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static int bad(enum hb_opt o, const char *v, struct hb_err *err,
	       const char *want)
{
	char s[64];

	return hb_err_set(err, HB_EINVAL, NULL, 0, "--%s: '%s' %s",
			  opts[o].name, shown(v, s, sizeof(s)), want);
}

/* Any control character (a newline would end a log or #SBATCH line). */
static int has_ctl(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return 1;
	return 0;
}

static int check_target(const char *v, struct hb_err *err)
{
	if (!strcasecmp(v, "auto") || !strcasecmp(v, "slurm") ||
	    !strcasecmp(v, "kubernetes"))
		return 0;
	return bad(HB_OPT_TARGET, v, err, "is not auto, slurm or kubernetes");
}

/* A deadline is what Slurm's parse_time() reads, as sbatch checks
 * --deadline (and the sbatch reader --hpcbridge-deadline). */
static int check_deadline(const char *v, struct hb_err *err)
{
	if (*v && !has_ctl(v) && hb_time_slurm_date_ok(v))
		return 0;
	return bad(HB_OPT_DEADLINE, v, err,
		   "is not a date or time Slurm reads (now+4hours, 18:00, "
		   "2025-06-30T18:00, tomorrow, ...)");
}

/* An absolute path: '/', no control characters, no ".." component. */
static int abs_path_ok(const char *v)
{
	const char *p;

	if (v[0] != '/' || has_ctl(v))
		return 0;
	for (p = v; (p = strstr(p, "..")); p += 2)
		if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
			return 0;
	return 1;
}

/* An S3 bucket name: 3-63 of [a-z0-9.-], alphanumeric at both ends, no
 * "..". */
static int bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return 0;
	if (!isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if (!(islower(c) || isdigit(c) || c == '.' || c == '-'))
			return 0;
		if (c == '.' && b[i + 1] == '.')
			return 0;
	}
	return 1;
}

static int check_data(const char *v, struct hb_err *err)
{
	if (!strncmp(v, "s3://", 5)) {
		const char *b = v + 5, *slash = strchr(b, '/');
		size_t n = slash ? (size_t)(slash - b) : strlen(b);

		if (has_ctl(v))
			return bad(HB_OPT_DATA, v, err,
				   "has control characters");
		if (!bucket_ok(b, n))
			return bad(HB_OPT_DATA, v, err,
				   "does not name a valid S3 bucket "
				   "(3-63 characters: a-z, 0-9, '.', '-')");
		return 0;
	}
	if (!abs_path_ok(v))
		return bad(HB_OPT_DATA, v, err,
			   "is neither an absolute path nor "
			   "s3://bucket/prefix");
	return 0;
}

int hb_opt_check(enum hb_opt o, const char *v, struct hb_err *err)
{
	if ((unsigned)o >= HB__OPT_COUNT)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "unknown option");
	if (!v)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "--%s: a value is required", opts[o].name);
	if (strlen(v) > HB_OPT_VALUE_MAX)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "--%s: value longer than %u bytes",
				  opts[o].name, HB_OPT_VALUE_MAX);
	switch (o) {
	case HB_OPT_TARGET:
		return check_target(v, err);
	case HB_OPT_DEADLINE:
		return check_deadline(v, err);
	case HB_OPT_CHECKPOINT:
		if (!abs_path_ok(v))
			return bad(o, v, err,
				   "is not an absolute directory path");
		return 0;
	case HB_OPT_DATA:
		return check_data(v, err);
	case HB_OPT_FABRIC:
		if (hb_fabric_parse(v) < 0)
			return bad(o, v, err, "is not rdma, tcp or auto");
		return 0;
	case HB__OPT_COUNT:
		break;
	}
	return hb_err_set(err, HB_EINVAL, NULL, 0, "unknown option");
}

int hb_opt_env_name(enum hb_opt o, char *buf, size_t len)
{
	const char *parts[2];
	size_t n;

	if ((unsigned)o >= HB__OPT_COUNT || !buf)
		return HB_EINVAL;
	parts[0] = HB_SPANK_PLUGIN_NAME;
	parts[1] = opts[o].name;
	n = strlen(ENV_PREFIX) + strlen(parts[0]) + 1 + strlen(parts[1]);
	if (n + 1 > len)
		return HB_ETOOBIG;
	memcpy(buf, ENV_PREFIX, strlen(ENV_PREFIX));
	n = strlen(ENV_PREFIX);
	for (int p = 0; p < 2; p++) {
		for (const char *s = parts[p]; *s; s++)
			buf[n++] = isalnum((unsigned char)*s) ? *s : '_';
		if (p == 0)
			buf[n++] = '_';
	}
	buf[n] = '\0';
	return 0;
}

/* The value of NAME in env (NAME=VALUE), also as SPANK_NAME. */
static const char *env_get(char *const *env, uint32_t n, const char *name)
{
	size_t nl = strlen(name), pl = strlen(SPANK_PREFIX);

	if (!env)
		return NULL;
	for (uint32_t i = 0; i < n && env[i]; i++) {
		const char *e = env[i];

		if (!strncmp(e, SPANK_PREFIX, pl) &&
		    !strncmp(e + pl, name, nl) && e[pl + nl] == '=')
			return e + pl + nl + 1;
		if (!strncmp(e, name, nl) && e[nl] == '=')
			return e + nl + 1;
	}
	return NULL;
}

const char *hb_opt_find(enum hb_opt o, char *const *spank_env, uint32_t nspank,
			char *const *env, uint32_t nenv)
{
	char name[128];
	const char *v;

	if (hb_opt_env_name(o, name, sizeof(name)))
		return NULL;
	v = env_get(spank_env, nspank, name);
	if (!v)
		v = env_get(env, nenv, name);
	return v;
}
