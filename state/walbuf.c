/*
 * walbuf.c - the store's VFS: gathers a commit's WAL frames into one
 * write (see walbuf.h).
 *
 * One VFS is registered per base VFS (the default when the store first
 * opened a file; tests put a fault-injecting one in between), named
 * "hb-walbuf" and "hb-walbuf-N".  Its xOpen hands every file but a WAL
 * to the base unchanged: the base's file object sits at the start of the
 * space SQLite gives, with the base's methods, so SQLite calls them
 * directly.  A WAL gets a struct wal_file, with the base's file object
 * after it, and the methods below, which pass everything on.
 *
 * While held (hb_walbuf_begin), a write that continues the held bytes is
 * appended to them; any other write, and every read, size, truncate,
 * file control, sync or close, first writes what is held.  So the file
 * is exactly what SQLite wrote whenever anything looks at it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walbuf.h"

/* No more than this is held: a commit of more than 1,000 pages writes
 * what it has held and holds again. */
#define HOLD_MAX (4u << 20)
/* Nor written by one call: SQLite's unix VFS writes at most 128 KiB - 1
 * bytes per call (it masks the length to 17 bits, and reports the short
 * write as a full disk). */
#define WRITE_MAX ((size_t)0x1ffff & ~(size_t)4095)

struct wal_file {
	sqlite3_file base;  /* our methods */
	sqlite3_file *real; /* the base VFS's file, after this struct */
	const char *name;   /* SQLite's, valid while the file is open */
	int hold;	    /* gather writes (hb_walbuf_begin) */
	int nosync;	    /* and do not sync them */
	int header;	    /* held: the log's header, written again */
	char *buf;	    /* held bytes, for the file at off */
	size_t len, cap;
	sqlite3_int64 off;
};

#define REAL_AT (((sizeof(struct wal_file)) + 15) & ~(size_t)15)

static int held_write(struct wal_file *w)
{
	int rc = SQLITE_OK;

	for (size_t at = 0; at < w->len && rc == SQLITE_OK; at += WRITE_MAX)
		rc = w->real->pMethods->xWrite(w->real, w->buf + at,
					       (int)(w->len - at < WRITE_MAX
							     ? w->len - at
							     : WRITE_MAX),
					       w->off + (sqlite3_int64)at);
	w->len = 0; /* on error too: the commit fails, and is written anew */
	return rc;
}

static int w_close(sqlite3_file *f)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w), rc2;

	rc2 = w->real->pMethods->xClose(w->real);
	free(w->buf);
	w->buf = NULL;
	w->cap = 0;
	return rc ? rc : rc2;
}

static int w_read(sqlite3_file *f, void *b, int n, sqlite3_int64 off)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w);

	return rc ? rc : w->real->pMethods->xRead(w->real, b, n, off);
}

/* Room for n more held bytes; 0 if there is none (write through). */
static int room(struct wal_file *w, size_t n)
{
	size_t cap = w->cap ? w->cap : 65536;
	char *p;

	if (w->len + n > HOLD_MAX)
		return 0;
	while (cap < w->len + n)
		cap *= 2;
	if (cap == w->cap)
		return 1;
	if (!(p = realloc(w->buf, cap)))
		return 0;
	w->buf = p;
	w->cap = cap;
	return 1;
}

static int w_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 off)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc;

	if (w->hold && off == 0)
		w->header = 1;
	if (w->hold && n > 0 &&
	    (!w->len || off == w->off + (sqlite3_int64)w->len)) {
		if (!room(w, (size_t)n) && (rc = held_write(w)))
			return rc;
		if (room(w, (size_t)n)) {
			if (!w->len)
				w->off = off;
			memcpy(w->buf + w->len, b, (size_t)n);
			w->len += (size_t)n;
			return SQLITE_OK;
		}
	}
	if ((rc = held_write(w)))
		return rc;
	return w->real->pMethods->xWrite(w->real, b, n, off);
}

static int w_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w);

	return rc ? rc : w->real->pMethods->xTruncate(w->real, size);
}

/* The errno of the base file's last failed call (EIO if it kept none). */
static int last_errno(struct wal_file *w)
{
	int e = 0;

	w->real->pMethods->xFileControl(w->real, SQLITE_FCNTL_LAST_ERRNO, &e);
	return e ? e : EIO;
}

/*
 * Two syncs can come while held.  When the log starts again, SQLite
 * writes its header at offset 0 and syncs it before any frame, so that no
 * new frame can reach the disk before the new salts do (and the first
 * sync of a new WAL also syncs its directory entry): that sync is always
 * real, nosync or not, and holding goes on.  The commit's own sync comes
 * after its last frame: nosync skips it, and holding stops, because what
 * SQLite writes after it (the rest of a padding frame, without
 * POWERSAFE_OVERWRITE) is published at once.
 */
static int w_sync(sqlite3_file *f, int flags)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w), header = w->header;

	w->header = 0;
	if (rc)
		return rc;
	if (!header)
		w->hold = 0;
	if (w->nosync && !header)
		return SQLITE_OK;
	rc = w->real->pMethods->xSync(w->real, flags);
	if (rc != SQLITE_OK)
		hb_walbuf_fatal(w->name, "fdatasync", last_errno(w));
	return rc;
}

static int w_size(sqlite3_file *f, sqlite3_int64 *size)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w);

	return rc ? rc : w->real->pMethods->xFileSize(w->real, size);
}

static int w_fcntl(sqlite3_file *f, int op, void *arg)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w);

	return rc ? rc : w->real->pMethods->xFileControl(w->real, op, arg);
}

static int w_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
	struct wal_file *w = (struct wal_file *)f;
	int rc = held_write(w);

	return rc ? rc : w->real->pMethods->xFetch(w->real, off, n, p);
}

/* The rest only pass on. */
#define PASS(name, args, call)                                                 \
	static int w_##name args                                               \
	{                                                                      \
		sqlite3_file *r = ((struct wal_file *)f)->real;                \
		return r->pMethods->x##call;                                   \
	}
PASS(lock, (sqlite3_file * f, int l), Lock(r, l))
PASS(unlock, (sqlite3_file * f, int l), Unlock(r, l))
PASS(reserved, (sqlite3_file * f, int *out), CheckReservedLock(r, out))
PASS(sector, (sqlite3_file * f), SectorSize(r))
PASS(devchar, (sqlite3_file * f), DeviceCharacteristics(r))
PASS(shmmap, (sqlite3_file * f, int i, int sz, int ext, void volatile **p),
     ShmMap(r, i, sz, ext, p))
PASS(shmlock, (sqlite3_file * f, int off, int n, int fl),
     ShmLock(r, off, n, fl))
PASS(shmunmap, (sqlite3_file * f, int del), ShmUnmap(r, del))
PASS(unfetch, (sqlite3_file * f, sqlite3_int64 off, void *p),
     Unfetch(r, off, p))
#undef PASS

static void w_shmbarrier(sqlite3_file *f)
{
	sqlite3_file *r = ((struct wal_file *)f)->real;

	r->pMethods->xShmBarrier(r);
}

/* Per version of the base's methods, so SQLite never calls one the base
 * does not have. */
#define IO(v)                                                                  \
	{                                                                      \
		.iVersion = (v), .xClose = w_close, .xRead = w_read,           \
		.xWrite = w_write, .xTruncate = w_truncate, .xSync = w_sync,   \
		.xFileSize = w_size, .xLock = w_lock, .xUnlock = w_unlock,     \
		.xCheckReservedLock = w_reserved, .xFileControl = w_fcntl,     \
		.xSectorSize = w_sector, .xDeviceCharacteristics = w_devchar,  \
		.xShmMap = w_shmmap, .xShmLock = w_shmlock,                    \
		.xShmBarrier = w_shmbarrier, .xShmUnmap = w_shmunmap,          \
		.xFetch = w_fetch, .xUnfetch = w_unfetch,                      \
	}
static const sqlite3_io_methods wal_io[3] = { IO(1), IO(2), IO(3) };
#undef IO

/* --- the VFS ------------------------------------------------------------ */

#define MAX_SHIMS 4

static struct shim {
	sqlite3_vfs vfs; /* first: SQLite hands this back */
	sqlite3_vfs *base;
	char name[32];
} shims[MAX_SHIMS];
static int nshims;
static pthread_mutex_t shims_mu = PTHREAD_MUTEX_INITIALIZER;

static int shim_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f,
		     int flags, int *out)
{
	sqlite3_vfs *base = ((struct shim *)vfs)->base;
	struct wal_file *w = (struct wal_file *)f;
	int rc, v;

	if (!(flags & SQLITE_OPEN_WAL))
		return base->xOpen(base, name, f, flags, out);
	memset(w, 0, sizeof(*w));
	w->real = (sqlite3_file *)((char *)f + REAL_AT);
	rc = base->xOpen(base, name, w->real, flags, out);
	if (rc != SQLITE_OK || !w->real->pMethods) {
		if (w->real->pMethods)
			w->real->pMethods->xClose(w->real);
		f->pMethods = NULL;
		return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
	}
	w->name = name;
	v = w->real->pMethods->iVersion;
	f->pMethods = &wal_io[(v < 1 ? 1 : v > 3 ? 3 : v) - 1];
	return SQLITE_OK;
}

const char *hb_walbuf_vfs(void)
{
	sqlite3_vfs *base;
	const char *name = NULL;

	if (sqlite3_initialize() != SQLITE_OK)
		return NULL;
	pthread_mutex_lock(&shims_mu);
	base = sqlite3_vfs_find(NULL);
	for (int i = 0; base && i < nshims && !name; i++)
		if (shims[i].base == base || &shims[i].vfs == base)
			name = shims[i].name;
	if (!name && base && nshims < MAX_SHIMS) {
		struct shim *s = &shims[nshims];

		s->base = base;
		/* the rest of the base's methods, as they are */
		s->vfs = *base;
		s->vfs.pNext = NULL;
		s->vfs.szOsFile = (int)REAL_AT + base->szOsFile;
		s->vfs.xOpen = shim_open;
		snprintf(s->name, sizeof(s->name),
			 nshims ? "hb-walbuf-%d" : "hb-walbuf", nshims);
		s->vfs.zName = s->name;
		if (sqlite3_vfs_register(&s->vfs, 0) == SQLITE_OK) {
			nshims++;
			name = s->name;
		}
	}
	pthread_mutex_unlock(&shims_mu);
	return name;
}

/* db's WAL, when it is one of ours. */
static struct wal_file *wal_of(sqlite3 *db)
{
	sqlite3_file *f = NULL;

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
				 &f) != SQLITE_OK ||
	    !f)
		return NULL;
	for (int i = 0; i < 3; i++)
		if (f->pMethods == &wal_io[i])
			return (struct wal_file *)f;
	return NULL;
}

void hb_walbuf_begin(sqlite3 *db, int nosync)
{
	struct wal_file *w = wal_of(db);

	if (w) {
		w->hold = 1;
		w->nosync = nosync;
		w->header = 0;
	}
}

void hb_walbuf_end(sqlite3 *db, int committed)
{
	struct wal_file *w = wal_of(db);

	if (!w)
		return;
	w->hold = w->nosync = w->header = 0;
	if (!committed || !w->len) {
		w->len = 0;
		return;
	}
	/* published without a sync (not FULL): the frames must get there */
	if (held_write(w) != SQLITE_OK)
		hb_walbuf_fatal(w->name, "write", last_errno(w));
}

void hb_walbuf_fatal(const char *file, const char *what, int err)
{
	fprintf(stderr,
		"hpcbridge: %s: %s of the write-ahead log failed: %s; "
		"stopping, as what was committed may not be on disk\n",
		file ? file : "?", what, strerror(err));
	abort();
}
