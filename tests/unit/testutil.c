/*
 * testutil.c - helpers shared by the cmocka unit tests.
 */
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

char *hb_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n = 0;

	if (!f)
		fail_msg("cannot open %s", path);
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		fail_msg("cannot size %s", path);
	p = malloc((size_t)n + 1);
	assert_non_null(p);
	if (fread(p, 1, (size_t)n, f) != (size_t)n)
		fail_msg("short read on %s", path);
	p[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return p;
}

static char pathbuf[4096];

static const char *join(const char *dir, const char *rel)
{
	int n = snprintf(pathbuf, sizeof(pathbuf), "%s/%s", dir, rel);

	if (n < 0 || (size_t)n >= sizeof(pathbuf))
		fail_msg("path too long: %s/%s", dir, rel);
	return pathbuf;
}

const char *hb_test_src_path(const char *rel)
{
	return join(HB_SOURCE_DIR, rel);
}

const char *hb_test_shared_path(const char *rel)
{
	const char *env = getenv("HB_SHARED_DIR");

	return join(env && *env ? env : HB_SHARED_DIR, rel);
}
