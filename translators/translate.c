/*
 * translate.c - what a buffer holds, and parsing it whatever it is.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/mpijob.h"
#include "translators/pbs/pbs.h"
#include "hpcbridge/trainjob.h"
#include "hpcbridge/translate.h"

/* The value of a top-level "kind:" line in YAML, or of "kind" in JSON
 * found textually; the parse that follows checks it for real. */
static enum hb_source_kind manifest_kind(const char *buf, size_t len)
{
	static const struct {
		const char *kind;
		enum hb_source_kind src;
	} kinds[] = { { "MPIJob", HB_SRC_MPIJOB },
		      { "TrainJob", HB_SRC_TRAINJOB } };
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *v;
		size_t n;

		if (!eol)
			eol = end;
		v = NULL;
		if ((size_t)(eol - p) > 5 && memcmp(p, "kind:", 5) == 0)
			v = p + 5;
		else if ((v = memmem(p, (size_t)(eol - p), "\"kind\"", 6))) {
			v = memchr(v + 6, ':', (size_t)(eol - v - 6));
			if (v)
				v++;
		}
		if (v) {
			while (v < eol && (*v == ' ' || *v == '\t' ||
					   *v == '"' || *v == '\''))
				v++;
			for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds);
			     i++) {
				n = strlen(kinds[i].kind);
				if ((size_t)(eol - v) >= n &&
				    memcmp(v, kinds[i].kind, n) == 0 &&
				    (v + n == eol ||
				     strchr(" \t\"',\r}#", v[n])))
					return kinds[i].src;
			}
		}
		p = eol < end ? eol + 1 : end;
	}
	return HB_SRC_UNKNOWN;
}

enum hb_source_kind hb_detect(const char *buf, size_t len)
{
	size_t i = 0;

	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n'))
		i++;
	if (i == len)
		return HB_SRC_UNKNOWN;
	if (buf[i] == '#' &&
	    !(len - i >= 3 && memcmp(buf + i, "---", 3) == 0)) {
		/* A script: '#!' or a directive first.  A YAML file may
		 * also start with a comment, so look for apiVersion. */
		if (i + 1 < len && buf[i + 1] == '!')
			return hb_pbs_detect(buf, len) ? HB_SRC_PBS
						       : HB_SRC_SBATCH;
		if (!memmem(buf, len, "\napiVersion:", 12))
			return hb_pbs_detect(buf, len) ? HB_SRC_PBS
						       : HB_SRC_SBATCH;
	}
	if (buf[i] == '{' || buf[i] == '-' || buf[i] == '#' ||
	    memmem(buf, len, "apiVersion", 10)) {
		enum hb_source_kind k = manifest_kind(buf + i, len - i);

		if (k != HB_SRC_UNKNOWN)
			return k;
		return HB_SRC_UNKNOWN;
	}
	/* A manifest without apiVersion: its reader names what is missing.
	 * Otherwise neither a manifest nor a script with '#' first: sbatch
	 * will say what is wrong with it. */
	{
		enum hb_source_kind k = manifest_kind(buf + i, len - i);

		if (k != HB_SRC_UNKNOWN)
			return k;
	}
	return HB_SRC_SBATCH;
}

static int parse_manifest(const char *buf, size_t len, const char *name,
			  enum hb_source_kind kind, struct hb_jobspec *spec,
			  struct hb_err *err)
{
	cJSON *doc = NULL;
	int rc;

	rc = hb_doc_parse(buf, len, name, &doc, err);
	if (rc)
		return rc;
	if (kind == HB_SRC_MPIJOB)
		rc = hb_mpijob_parse(doc, spec, err);
	else
		rc = hb_trainjob_parse(doc, spec, err);
	cJSON_Delete(doc);
	return rc;
}

int hb_parse_any(const char *buf, size_t len, const char *name,
		 const struct hb_sbatch_opts *opts, struct hb_jobspec *spec,
		 struct hb_err *err)
{
	switch (hb_detect(buf, len)) {
	case HB_SRC_SBATCH:
		return hb_sbatch_parse(buf, len, name, opts, spec, err);
	case HB_SRC_PBS:
		return hb_pbs_parse(buf, len, name, opts ? opts->argv : NULL,
				    opts ? opts->argc : 0, spec, err);
	case HB_SRC_MPIJOB:
		return parse_manifest(buf, len, name, HB_SRC_MPIJOB, spec, err);
	case HB_SRC_TRAINJOB:
		return parse_manifest(buf, len, name, HB_SRC_TRAINJOB, spec,
				      err);
	case HB_SRC_UNKNOWN:
		break;
	}
	return hb_err_set(err, HB_EINVAL, name, 0,
			  "not an sbatch or PBS script, nor an MPIJob or "
			  "TrainJob manifest");
}
