/*
 * sides/remote.c - the one face of every remote side (the local and the
 * Kubernetes backend): phase names, and the calls passed on to the
 * backend's operations.
 */
#include <stddef.h>
#include <string.h>

#include "hpcbridge/remote.h"
#include "hpcbridge/clock.h"

static const char *const phase_names[] = { "pending",	  "running",
					   "succeeded", "failed",
					   "cancelled", "lost",
					   "suspended" };

const char *hb_remote_phase_name(enum hb_remote_phase p)
{
	return (unsigned)p < sizeof(phase_names) / sizeof(phase_names[0])
		       ? phase_names[p]
		       : "unknown";
}

int hb_remote_phase_done(enum hb_remote_phase p)
{
	return p >= HB_REMOTE_SUCCEEDED && p <= HB_REMOTE_LOST;
}

int hb_remote_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > HB_REMOTE_ID_MAX || !(id[0] >= 'a' && id[0] <= 'z') ||
	    id[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
			return 0;
	return 1;
}

int hb_remote_start(struct hb_remote *be, const struct hb_remote_job *job,
		     struct hb_err *err)
{
	return be->ops->start(be, job, err);
}

int hb_remote_status(struct hb_remote *be, const char *id,
		      struct hb_remote_status *out, struct hb_err *err)
{
	return be->ops->status(be, id, out, err);
}

int hb_remote_log(struct hb_remote *be, const char *id, uint64_t offset,
		   size_t max, struct hb_buf *out, struct hb_err *err)
{
	return be->ops->log(be, id, offset, max, out, err);
}

int hb_remote_cancel(struct hb_remote *be, const char *id,
		      struct hb_err *err)
{
	return be->ops->cancel(be, id, err);
}

int hb_remote_capacity(struct hb_remote *be, const struct hb_kcap_opts *opts,
			struct hb_kcap *out, struct hb_err *err)
{
	if (!be->ops->capacity)
		return hb_err_set(err, HB_EUNSUP, NULL, 0,
				  "the %s backend has no cluster capacity",
				  be->ops->name);
	return be->ops->capacity(be, opts, out, err);
}

const char *hb_remote_name(const struct hb_remote *be)
{
	return be->ops->name;
}

void hb_remote_free(struct hb_remote *be)
{
	if (be)
		be->ops->free(be);
}
