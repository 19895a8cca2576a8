/*
 * fabric.c - findings, the node's inventory through a provider, the fake
 * provider, and the node as JSON.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

/* --- findings -------------------------------------------------------- */

const char *hb_fab_level_name(enum hb_fab_level l)
{
	switch (l) {
	case HB_FAB_OK:
		return "ok";
	case HB_FAB_WARN:
		return "warn";
	case HB_FAB_FAIL:
		return "fail";
	}
	return "?";
}

void hb_fab_add(struct hb_fab_findings *f, enum hb_fab_level level,
		const char *code, const char *hint, const char *fmt, ...)
{
	struct hb_fab_finding *it;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Messages quote what the sides hold (an MPIJob's condition, a
	 * node's name): no control character reaches a terminal. */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		void *v = realloc(f->v, cap * sizeof(*f->v));

		if (!v) {
			f->oom = true;
			return;
		}
		f->v = v;
		f->cap = cap;
	}
	it = &f->v[f->n];
	it->level = level;
	it->code = strdup(code);
	it->msg = strdup(msg);
	it->hint = strdup(hint ? hint : "");
	if (!it->code || !it->msg || !it->hint) {
		free(it->code);
		free(it->msg);
		free(it->hint);
		f->oom = true;
		return;
	}
	f->n++;
}

enum hb_fab_level hb_fab_worst(const struct hb_fab_findings *f)
{
	enum hb_fab_level w = HB_FAB_OK;

	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].level > w)
			w = f->v[i].level;
	return w;
}

const struct hb_fab_finding *hb_fab_find(const struct hb_fab_findings *f,
					 const char *code)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].code, code))
			return &f->v[i];
	return NULL;
}

cJSON *hb_fab_findings_json(const struct hb_fab_findings *f)
{
	cJSON *arr = cJSON_CreateArray(), *o;

	for (size_t i = 0; arr && i < f->n; i++) {
		if (!(o = cJSON_CreateObject()) ||
		    !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (!cJSON_AddStringToObject(o, "level",
					     hb_fab_level_name(f->v[i].level)) ||
		    !cJSON_AddStringToObject(o, "code", f->v[i].code) ||
		    !cJSON_AddStringToObject(o, "message", f->v[i].msg) ||
		    !cJSON_AddStringToObject(o, "hint", f->v[i].hint))
			goto fail;
	}
	return arr;
fail:
	cJSON_Delete(arr);
	return NULL;
}

void hb_fab_findings_free(struct hb_fab_findings *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].code);
		free(f->v[i].msg);
		free(f->v[i].hint);
	}
	free(f->v);
	memset(f, 0, sizeof(*f));
}

/* --- names ------------------------------------------------------------ */

const char *hb_fab_link_name(enum hb_fab_link l)
{
	switch (l) {
	case HB_FAB_LINK_IB:
		return "InfiniBand";
	case HB_FAB_LINK_ETH:
		return "Ethernet";
	case HB_FAB_LINK_UNKNOWN:
		break;
	}
	return "unknown";
}

const char *hb_fab_port_state_name(enum hb_fab_port_state s)
{
	static const char *const names[] = { "NOP",   "DOWN",	"INIT",
					     "ARMED", "ACTIVE", "ACTIVE_DEFER" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s]
							      : "unknown";
}

const char *hb_fab_gid_type_name(enum hb_fab_gid_type t)
{
	switch (t) {
	case HB_FAB_GID_IB:
		return "IB";
	case HB_FAB_GID_ROCE_V1:
		return "RoCE v1";
	case HB_FAB_GID_ROCE_V2:
		return "RoCE v2";
	case HB_FAB_GID_UNKNOWN:
		break;
	}
	return "unknown";
}

int hb_fab_nccl_decode(int code, int *major, int *minor, int *patch)
{
	if (code <= 0)
		return HB_EINVAL;
	/* 2.9.6 is 20906; 2.8.4 was 2804.  Codes from 10000 up are the
	 * newer form. */
	if (code >= 10000) {
		*major = code / 10000;
		*minor = code / 100 % 100;
	} else {
		*major = code / 1000;
		*minor = code / 100 % 10;
	}
	*patch = code % 100;
	return 0;
}

void hb_fab_nccl_version_text(int v, char *buf, size_t size)
{
	int a, b, c;

	if (hb_fab_nccl_decode(v, &a, &b, &c))
		snprintf(buf, size, "not present");
	else
		snprintf(buf, size, "%d.%d.%d", a, b, c);
}

/* --- the inventory ----------------------------------------------------- */

void hb_fab_node_free(struct hb_fab_node *n)
{
	if (!n)
		return;
	free(n->devs);
	free(n->gpus);
	memset(n, 0, sizeof(*n));
}

int hb_fab_inventory(const struct hb_fab_provider *p, struct hb_fab_node *n,
		     struct hb_err *err)
{
	int (*parts[])(void *, struct hb_fab_node *, struct hb_err *) = {
		p->rdma, p->gpus, p->nccl, p->mpi
	};
	int first = 0;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		struct hb_err e = { 0 };
		int rc;

		if (!parts[i])
			continue;
		rc = parts[i](p->ctx, n, &e);
		if (rc && !first) {
			first = rc;
			hb_err_set(err, rc, NULL, 0, "%s", e.msg);
		}
	}
	return first;
}

/* The fake provider: each part copies its piece of the canned node. */

/* A copy of count elements of size bytes at src into *dst (NULL when
 * count is 0). */
static int copy_array(void *dst, const void *src, size_t count, size_t size)
{
	void *p = NULL;

	if (count && !(p = malloc(count * size)))
		return HB_ENOMEM;
	if (count)
		memcpy(p, src, count * size);
	memcpy(dst, &p, sizeof(p));
	return 0;
}

static int fake_rdma(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	const struct hb_fab_node *c = ctx;

	(void)err;
	memcpy(n->rdma_note, c->rdma_note, sizeof(n->rdma_note));
	if (copy_array(&n->devs, c->devs, c->ndevs, sizeof(*n->devs)))
		return HB_ENOMEM;
	n->ndevs = c->ndevs;
	return 0;
}

static int fake_gpus(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	const struct hb_fab_node *c = ctx;

	(void)err;
	memcpy(n->nvidia_driver, c->nvidia_driver, sizeof(n->nvidia_driver));
	n->peermem = c->peermem;
	if (copy_array(&n->gpus, c->gpus, c->ngpus, sizeof(*n->gpus)))
		return HB_ENOMEM;
	n->ngpus = c->ngpus;
	return 0;
}

static int fake_nccl(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	const struct hb_fab_node *c = ctx;

	(void)err;
	n->nccl_version = c->nccl_version;
	memcpy(n->nccl_note, c->nccl_note, sizeof(n->nccl_note));
	return 0;
}

static int fake_mpi(void *ctx, struct hb_fab_node *n, struct hb_err *err)
{
	(void)err;
	n->mpi = ((const struct hb_fab_node *)ctx)->mpi;
	return 0;
}

void hb_fab_fake_provider(const struct hb_fab_node *canned,
			  struct hb_fab_provider *out)
{
	*out = (struct hb_fab_provider){ "fake", fake_rdma, fake_gpus,
					 fake_nccl, fake_mpi,
					 (void *)canned };
}

/* --- as JSON ------------------------------------------------------------ */

static cJSON *port_json(const struct hb_fab_port *p)
{
	cJSON *o = cJSON_CreateObject(), *gids, *g;

	if (!o || !cJSON_AddNumberToObject(o, "port", p->num) ||
	    !cJSON_AddStringToObject(o, "state",
				     hb_fab_port_state_name(p->state)) ||
	    !cJSON_AddStringToObject(o, "link_layer",
				     hb_fab_link_name(p->link)) ||
	    !cJSON_AddNumberToObject(o, "width", p->width) ||
	    !cJSON_AddNumberToObject(o, "gbps", p->gbps) ||
	    !(gids = cJSON_AddArrayToObject(o, "gids")))
		goto fail;
	for (uint32_t i = 0; i < p->ngids; i++) {
		if (!(g = cJSON_CreateObject()))
			goto fail;
		cJSON_AddItemToArray(gids, g);
		if (!cJSON_AddNumberToObject(g, "index", p->gids[i].index) ||
		    !cJSON_AddStringToObject(g, "gid", p->gids[i].text) ||
		    !cJSON_AddStringToObject(
			    g, "type", hb_fab_gid_type_name(p->gids[i].type)))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *rdma_json(const struct hb_fab_node *n)
{
	cJSON *arr = cJSON_CreateArray(), *d, *ports;

	for (size_t i = 0; arr && i < n->ndevs; i++) {
		if (!(d = cJSON_CreateObject()))
			goto fail;
		cJSON_AddItemToArray(arr, d);
		if (!cJSON_AddStringToObject(d, "name", n->devs[i].name) ||
		    !cJSON_AddStringToObject(d, "node_guid", n->devs[i].guid) ||
		    !(ports = cJSON_AddArrayToObject(d, "ports")))
			goto fail;
		for (uint32_t j = 0; j < n->devs[i].nports; j++)
			if (!cJSON_AddItemToArray(
				    ports, port_json(&n->devs[i].ports[j])))
				goto fail;
	}
	return arr;
fail:
	cJSON_Delete(arr);
	return NULL;
}

static cJSON *gpus_json(const struct hb_fab_node *n)
{
	cJSON *arr = cJSON_CreateArray(), *g;
	char hex[16];

	for (size_t i = 0; arr && i < n->ngpus; i++) {
		const struct hb_fab_gpu *x = &n->gpus[i];

		if (!(g = cJSON_CreateObject()))
			goto fail;
		cJSON_AddItemToArray(arr, g);
		if (!cJSON_AddStringToObject(g, "pci", x->pci) ||
		    !cJSON_AddStringToObject(g, "vendor",
					     fab_gpu_vendor(x->vendor)))
			goto fail;
		snprintf(hex, sizeof(hex), "0x%04x", x->vendor);
		if (!cJSON_AddStringToObject(g, "vendor_id", hex))
			goto fail;
		snprintf(hex, sizeof(hex), "0x%04x", x->device);
		if (!cJSON_AddStringToObject(g, "device_id", hex))
			goto fail;
		snprintf(hex, sizeof(hex), "0x%06x", x->pci_class);
		if (!cJSON_AddStringToObject(g, "class", hex))
			goto fail;
	}
	return arr;
fail:
	cJSON_Delete(arr);
	return NULL;
}

static cJSON *mpi_json(const struct hb_fab_mpi *m)
{
	cJSON *o = cJSON_CreateObject(), *om;

	if (!o || !(om = cJSON_AddObjectToObject(o, "openmpi")))
		goto fail;
	if (m->ompi_version[0]) {
		if (!cJSON_AddStringToObject(om, "version", m->ompi_version) ||
		    !cJSON_AddItemToObject(om, "cuda",
					   m->ompi_cuda < 0
						   ? cJSON_CreateNull()
						   : cJSON_CreateBool(
							     m->ompi_cuda)) ||
		    !cJSON_AddBoolToObject(om, "ucx", m->ompi_ucx) ||
		    !cJSON_AddBoolToObject(om, "openib", m->ompi_openib))
			goto fail;
	} else if (!cJSON_AddNullToObject(om, "version")) {
		goto fail;
	}
	if (!(m->other[0] ? cJSON_AddStringToObject(o, "other", m->other)
			  : cJSON_AddNullToObject(o, "other")))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

cJSON *hb_fab_node_json(const struct hb_fab_node *n)
{
	cJSON *o = cJSON_CreateObject(), *nv, *nc;
	char v[32];

	if (!o || !cJSON_AddItemToObject(o, "rdma_devices", rdma_json(n)) ||
	    (n->rdma_note[0] &&
	     !cJSON_AddStringToObject(o, "rdma_note", n->rdma_note)) ||
	    !cJSON_AddItemToObject(o, "gpus", gpus_json(n)) ||
	    !(nv = cJSON_AddObjectToObject(o, "nvidia")) ||
	    !cJSON_AddItemToObject(nv, "driver",
				   n->nvidia_driver[0]
					   ? cJSON_CreateString(n->nvidia_driver)
					   : cJSON_CreateNull()) ||
	    !cJSON_AddBoolToObject(nv, "peermem", n->peermem) ||
	    !(nc = cJSON_AddObjectToObject(o, "nccl")))
		goto fail;
	hb_fab_nccl_version_text(n->nccl_version, v, sizeof(v));
	if (!cJSON_AddBoolToObject(nc, "present", n->nccl_version > 0) ||
	    !cJSON_AddStringToObject(nc, "version", v) ||
	    (n->nccl_note[0] &&
	     !cJSON_AddStringToObject(nc, "note", n->nccl_note)) ||
	    !cJSON_AddItemToObject(o, "mpi", mpi_json(&n->mpi)))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}
