/*
 * slurm_backend.h - the daemon's Slurm side (hb_daemon_backend) over the
 * Slurm client.  See slurm_backend.c.
 */
#ifndef HPCBRIDGE_SLURM_BACKEND_H
#define HPCBRIDGE_SLURM_BACKEND_H

#include <stdint.h>

#include "daemon.h"
#include "hpcbridge/error.h"

struct hb_slurm_backend;

/* Open the Slurm client (slurm_conf NULL: $SLURM_CONF or Slurm's default
 * path).  Call before any thread starts.  Caller frees with
 * hb_slurm_backend_close(). */
int hb_slurm_backend_open(const char *slurm_conf, struct hb_slurm_backend **out,
			  struct hb_err *err);
void hb_slurm_backend_close(struct hb_slurm_backend *sb); /* NULL ok */

/* The daemon's submit, cancel and poll slots, borrowing sb. */
void hb_slurm_backend_ops(struct hb_slurm_backend *sb,
			  struct hb_daemon_backend *out);

#endif
