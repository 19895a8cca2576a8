/*
 * store_int.h - what store.c shares with the other files of state/ (the
 * ledger): the handle's connection, its statement cache, its error and
 * transaction helpers.  Private to state/.
 */
#ifndef HPCBRIDGE_STORE_INT_H
#define HPCBRIDGE_STORE_INT_H

#include <stdint.h>

#include <sqlite3.h>

#include "hpcbridge/error.h"
#include "hpcbridge/store.h"

/* Statement slots for the ledger (ledger.c), cached on the handle. */
enum hb_si_slot {
	HB_SI_LEDGER_INSERT,
	HB_SI_LEDGER_REVERSE,
	HB_SI_LEDGER_TARGET,
	HB_SI_LEDGER_LIST,
	HB_SI_STORAGE_LIST,
	HB_SI_STORAGE_SET,
	HB_SI_STORAGE_SUM,
	HB_SI_NSLOT
};

/* migrations[v] takes a file from schema version v to v + 1 (schema.c). */
extern const char *const hb_si_migrations[];

sqlite3 *hb_si_db(struct hb_store *st);
const char *hb_si_path(const struct hb_store *st);
/* The handle's clock (hb_store_set_clock()), in ms. */
int64_t hb_si_now(struct hb_store *st);
/* The statement sql in slot, prepared once per handle (persistent); as
 * store.c's own: refused while the group is lost, HB_ESTATE while it is
 * being stepped. */
int hb_si_prep(struct hb_store *st, enum hb_si_slot slot, const char *sql,
	       sqlite3_stmt **out, const char *op, struct hb_err *err);
/* sqlite3_step(): SQLITE_ROW or SQLITE_DONE, else HB_E* with err set and
 * the statement reset. */
int hb_si_step(struct hb_store *st, sqlite3_stmt *s, const char *op,
	       struct hb_err *err);
/* SQLite's last error on st as HB_E* for operation op. */
int hb_si_db_fail(struct hb_store *st, const char *op, struct hb_err *err);
/* A call's own transaction, or a savepoint inside the caller's group
 * (one_write: a single statement, no savepoint needed); end keeps it when
 * rc is 0 and returns rc or the commit's error. */
int hb_si_op_begin(struct hb_store *st, int one_write, const char *op,
		   struct hb_err *err);
int hb_si_op_end(struct hb_store *st, int rc, const char *op,
		 struct hb_err *err);
/* 1 if the handle was opened read-only (hb_store_open_readonly()). */
int hb_si_readonly(const struct hb_store *st);

#endif
