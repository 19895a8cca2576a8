/*
 * test_ckpt_util.h - what the checkpoint tests share: writing a file
 * with a mode, and counting this process's descriptors so that a test
 * can show that no run leaks one.
 */
#ifndef HB_TEST_CKPT_UTIL_H
#define HB_TEST_CKPT_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

/* The file at path holds the n bytes of text, with mode. */
static inline void ckpt_test_put(const char *path, const char *text,
				 size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* Open descriptors of this process. */
static inline int ckpt_test_nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

#endif
