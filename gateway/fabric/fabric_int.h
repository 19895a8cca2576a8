/*
 * fabric_int.h - what the files of gateway/fabric/ share.
 */
#ifndef HB_FABRIC_INT_H
#define HB_FABRIC_INT_H

#include <stdint.h>

#include "hpcbridge/fabric.h"

/* "NVIDIA", "AMD", or "other" for a PCI vendor id. */
const char *fab_gpu_vendor(uint16_t vendor);

/* The real provider's RDMA part (verbs.c): libibverbs' devices and
 * ports, GID types from sysfs (root: "/sys"). */
int fab_verbs_scan(const char *sysfs, struct hb_fab_node *n,
		   struct hb_err *err);

/* Whether port p has a usable RDMA link: active, and, on Ethernet, a
 * RoCE GID. */
int fab_port_usable(const struct hb_fab_port *p);

#endif
