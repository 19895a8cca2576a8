/*
 * meter_int.h - what the two meters (meter.c, a finished job's usage;
 * storage.c, checkpoint storage) share: their transaction and the error
 * that names what they metered.  Private to gateway/ledger/.
 */
#ifndef HB_LEDGER_METER_INT_H
#define HB_LEDGER_METER_INT_H

#include "hpcbridge/error.h"

struct hb_store;

/* A transaction of the meter's own, unless the caller holds one (then
 * *own is 0 and the writes join the caller's).  0 or the store's error. */
int hb_meter_txn_begin(struct hb_store *st, int *own, struct hb_err *err);
/* End what hb_meter_txn_begin() began: commit when rc is 0, else roll
 * back.  Returns rc, or the commit's error. */
int hb_meter_txn_end(struct hb_store *st, int own, int rc, struct hb_err *err);
/* err's message as "WHAT: message" (the code's text when it has none);
 * returns rc. */
int hb_meter_err_named(struct hb_err *err, int rc, const char *what);

#endif
