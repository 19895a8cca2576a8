/*
 * verbs.c - the real provider's RDMA part: devices, ports and GIDs
 * through libibverbs, and each GID's RoCE version from sysfs
 * (ports/N/gid_attrs/types/IDX), which is where the kernel says it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "fabric_int.h"

/* Past this many table entries a GID table is not read further: a RoCE
 * port's table holds a few entries per IP address. */
#define GID_SCAN_MAX 256

/* The lane rate in Gb/s of ibv_port_attr.active_speed (the IB spec's
 * encoding): SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR. */
static double lane_gbps(uint8_t speed)
{
	switch (speed) {
	case 1:
		return 2.5;
	case 2:
		return 5;
	case 4:
	case 8:
		return 10;
	case 16:
		return 14;
	case 32:
		return 25;
	case 64:
		return 50;
	case 128:
		return 100;
	}
	return 0;
}

/* Lanes of ibv_port_attr.active_width: 1x, 4x, 8x, 12x, 2x. */
static uint8_t lanes(uint8_t width)
{
	switch (width) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	}
	return 0;
}

static int gid_zero(const union ibv_gid *g)
{
	for (size_t i = 0; i < sizeof(g->raw); i++)
		if (g->raw[i])
			return 0;
	return 1;
}

static void gid_text(const union ibv_gid *g, char *out, size_t size)
{
	const uint8_t *r = g->raw;

	snprintf(out, size,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		 "%02x%02x:%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
		 r[10], r[11], r[12], r[13], r[14], r[15]);
}

/* The GID's type as sysfs says it ("IB/RoCE v1", "RoCE v2"). */
static uint8_t gid_type(const char *sysfs, const char *dev, unsigned port,
			unsigned idx, uint8_t link)
{
	char path[512], buf[64] = "";
	FILE *f;

	if (link == HB_FAB_LINK_IB)
		return HB_FAB_GID_IB;
	snprintf(path, sizeof(path),
		 "%s/class/infiniband/%s/ports/%u/gid_attrs/types/%u", sysfs,
		 dev, port, idx);
	if (!(f = fopen(path, "re")))
		return HB_FAB_GID_UNKNOWN;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (strstr(buf, "RoCE v2"))
		return HB_FAB_GID_ROCE_V2;
	if (strstr(buf, "RoCE v1") || strstr(buf, "IB/RoCE"))
		return HB_FAB_GID_ROCE_V1;
	return HB_FAB_GID_UNKNOWN;
}

static void read_port(struct ibv_context *ctx, const char *sysfs,
		      const char *dev, unsigned num,
		      const struct ibv_port_attr *a, struct hb_fab_port *p)
{
	union ibv_gid g;

	memset(p, 0, sizeof(*p));
	p->num = (uint8_t)num;
	p->state = a->state <= IBV_PORT_ACTIVE_DEFER ? (uint8_t)a->state : 0;
	p->link = a->link_layer == IBV_LINK_LAYER_INFINIBAND ? HB_FAB_LINK_IB
		  : a->link_layer == IBV_LINK_LAYER_ETHERNET ? HB_FAB_LINK_ETH
							     : HB_FAB_LINK_UNKNOWN;
	/* A port that says nothing of its layer is InfiniBand (verbs.h). */
	if (a->link_layer == IBV_LINK_LAYER_UNSPECIFIED)
		p->link = HB_FAB_LINK_IB;
	p->width = lanes(a->active_width);
	p->gbps = lane_gbps(a->active_speed) * p->width;
	for (int i = 0; i < a->gid_tbl_len && i < GID_SCAN_MAX &&
			p->ngids < HB_FAB_MAX_GIDS;
	     i++) {
		struct hb_fab_gid *x = &p->gids[p->ngids];

		if (ibv_query_gid(ctx, (uint8_t)num, i, &g) || gid_zero(&g))
			continue;
		x->index = (uint16_t)i;
		gid_text(&g, x->text, sizeof(x->text));
		x->type = gid_type(sysfs, dev, num, (unsigned)i, p->link);
		p->ngids++;
	}
}

static int read_dev(struct ibv_device *d, const char *sysfs,
		    struct hb_fab_rdma_dev *out, struct hb_err *err)
{
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	uint64_t guid;
	const uint8_t *b = (const uint8_t *)&guid;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", ibv_get_device_name(d));
	/* The GUID is in network order; print its bytes as they come. */
	guid = ibv_get_device_guid(d);
	snprintf(out->guid, sizeof(out->guid),
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3],
		 b[4], b[5], b[6], b[7]);
	if (!(ctx = ibv_open_device(d)))
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "libibverbs: cannot open %s", out->name);
	if (ibv_query_device(ctx, &da)) {
		ibv_close_device(ctx);
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "libibverbs: cannot query %s", out->name);
	}
	for (unsigned p = 1;
	     p <= da.phys_port_cnt && out->nports < HB_FAB_MAX_PORTS; p++) {
		struct ibv_port_attr pa;

		if (ibv_query_port(ctx, (uint8_t)p, &pa))
			continue;
		read_port(ctx, sysfs, out->name, p, &pa,
			  &out->ports[out->nports++]);
	}
	ibv_close_device(ctx);
	return 0;
}

int fab_verbs_scan(const char *sysfs, struct hb_fab_node *n,
		   struct hb_err *err)
{
	struct ibv_device **list;
	int count = 0, rc = 0;

	/* With no RDMA device (or no kernel support at all) libibverbs
	 * gives an empty list, or NULL with errno set: both mean none. */
	list = ibv_get_device_list(&count);
	if (!list || count <= 0) {
		snprintf(n->rdma_note, sizeof(n->rdma_note),
			 "libibverbs lists no RDMA device");
		if (list)
			ibv_free_device_list(list);
		return 0;
	}
	if (!(n->devs = calloc((size_t)count, sizeof(*n->devs)))) {
		ibv_free_device_list(list);
		return HB_ENOMEM;
	}
	for (int i = 0; i < count; i++) {
		struct hb_err e = { 0 };
		int r = read_dev(list[i], sysfs, &n->devs[n->ndevs], &e);

		if (!r)
			n->ndevs++;
		else if (!rc)
			rc = hb_err_set(err, r, NULL, 0, "%s", e.msg);
	}
	if (rc && !n->ndevs)
		snprintf(n->rdma_note, sizeof(n->rdma_note), "%.150s", err->msg);
	ibv_free_device_list(list);
	return rc;
}

int fab_port_usable(const struct hb_fab_port *p)
{
	if (p->state != HB_FAB_PORT_ACTIVE)
		return 0;
	if (p->link != HB_FAB_LINK_ETH)
		return 1;
	for (uint32_t i = 0; i < p->ngids; i++)
		if (p->gids[i].type == HB_FAB_GID_ROCE_V1 ||
		    p->gids[i].type == HB_FAB_GID_ROCE_V2 ||
		    p->gids[i].type == HB_FAB_GID_UNKNOWN)
			return 1;
	return 0;
}
