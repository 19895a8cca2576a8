/*
 * testutil.h - helpers shared by the cmocka unit tests.
 */
#ifndef HB_TESTUTIL_H
#define HB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Read a whole file; *len gets its size.  Fails the test if it cannot.
 * Caller frees with free(). */
char *hb_test_read_file(const char *path, size_t *len);

/* Path under the source tree or the shared/ folder, in a static buffer
 * that the next call overwrites. */
const char *hb_test_src_path(const char *rel);
const char *hb_test_shared_path(const char *rel);

#endif
