/*
 * walbuf.h - the store's VFS: SQLite's default one, except that a WAL's
 * frames written while the store commits are gathered and written with
 * one call at the commit's sync.  Private to state/.
 *
 * SQLite writes each WAL frame as two calls (a 24-byte header, then the
 * page), so a commit of 13 pages costs 26 pwrite(2) calls; gathered, it
 * costs one.  Nothing else changes: with synchronous=FULL SQLite syncs
 * the WAL at every commit before it publishes the commit to readers, and
 * the gathered frames reach the file in that sync, so a write the disk
 * refuses still fails the commit, and no reader ever sees a frame that is
 * not in the file.  Outside a commit every write goes straight through.
 */
#ifndef HB_STATE_WALBUF_H
#define HB_STATE_WALBUF_H

#include <sqlite3.h>

/*
 * The name of the VFS to open a store with: the one over whatever VFS is
 * SQLite's default now (registered on first use, never the default
 * itself).  NULL if it cannot be made (then open with the default VFS:
 * correct, one write per frame part).
 */
const char *hb_walbuf_vfs(void);

/*
 * Around a COMMIT on db, which runs with synchronous=FULL: begin holds the
 * WAL's writes until its next sync (when db's WAL is open through
 * hb_walbuf_vfs(); otherwise nothing happens).  With nosync, the commit's
 * sync writes the frames but does not sync them: the caller syncs the WAL
 * itself, later.  (When the log starts again SQLite also syncs its new
 * header before the frames: that sync is always made.)  end stops
 * holding.  What is still
 * held then was not synced: if the COMMIT failed (committed 0), SQLite
 * never published it and writes it again, so it is dropped; if it
 * succeeded, SQLite published it without a sync (not FULL), so it is
 * written now, and a failure stops the process.  end is safe to call
 * twice, and on a db whose WAL is not open.
 */
void hb_walbuf_begin(sqlite3 *db, int nosync);
void hb_walbuf_end(sqlite3 *db, int committed);

/*
 * A failed sync or write of a WAL with committed frames stops the
 * process: Linux reports a failed write back once, so no later sync could
 * vouch for what was committed.  Prints one line naming file, what failed
 * ("fdatasync", "write") and the error, then abort()s.
 */
void hb_walbuf_fatal(const char *file, const char *what, int err)
	__attribute__((noreturn));

#endif
