/*
 * file.c - reading a whole configuration-sized file (file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpcbridge/file.h"

int hb_file_read(const char *path, size_t max, const char *what,
		 struct hb_buf *out, struct hb_err *err)
{
	char tmp[8192];
	struct stat st;
	size_t start = out->len, total = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = errno == ENOENT   ? HB_ENOENT
		     : errno == EACCES ? HB_EPERM
				       : HB_EIO;
		return hb_err_set(err, rc, NULL, 0, "%s%s%s: %s",
				  what ? what : "", what ? ": " : "", path,
				  strerror(errno));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = hb_err_set(err, HB_EINVAL, NULL, 0,
				"%s%s%s: not a regular file", what ? what : "",
				what ? ": " : "", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = hb_err_set(err, HB_EIO, NULL, 0, "%s%s%s: %s",
					what ? what : "", what ? ": " : "",
					path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > max) {
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"%s%s%s: larger than %zu bytes",
					what ? what : "", what ? ": " : "",
					path, max);
			goto out;
		}
		rc = hb_buf_append(out, tmp, (size_t)n);
		if (rc) {
			hb_err_set(err, rc, NULL, 0, "%s: %s", path,
				   hb_strerror(rc));
			goto out;
		}
	}
out:
	if (rc && out->data) {
		out->len = start;
		out->data[start] = '\0';
	}
	close(fd);
	return rc;
}
