/*
 * ckptagent.c - the daemon's side of checkpoint mirroring, for the
 * attack tests: as root, run the agent as a user on a directory (the
 * daemon's own way, hb_mirror_agent_spawn()) and make one request.
 *
 *   ckptagent USER DIR scan              the manifest the agent sends
 *   ckptagent USER DIR open PATH SIZE    the file's bytes, through the
 *                                        descriptor the agent passes
 *   ckptagent USER DIR put SRC           SRC (scanned here, as root) put
 *                                        into DIR by the agent, each
 *                                        file's bytes read here
 *   ckptagent USER DIR env               wait until the agent runs and
 *                                        print its environment
 *
 * Exits 0, or 1 with the error on stderr.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpcbridge/mirror.h"
#include "hpcbridge/user.h"

static int fail(const char *what, const struct hb_err *e)
{
	fprintf(stderr, "ckptagent: %s: %s\n", what, e->msg);
	return 1;
}

/* The bytes of a file of SRC, as the S3 side would give them. */
static int from_dir(void *ctx, const struct hb_ckpt_file *f,
		    hb_s3_sink_fn sink, void *arg, struct hb_err *err)
{
	char path[8192], buf[65536];
	ssize_t n;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", (const char *)ctx, f->path);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW)) < 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "%s: cannot open",
				  path);
	while (!rc && (n = read(fd, buf, sizeof(buf))) > 0)
		rc = sink(buf, (size_t)n, arg);
	close(fd);
	return rc;
}

/* The environment of the agent process (found by its argv). */
static int agent_env(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[300], buf[65536];
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0 || !memmem(buf, (size_t)n, HB_MIRROR_AGENT_ARG,
				      strlen(HB_MIRROR_AGENT_ARG)))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < n; i++)
				putchar(buf[i] ? buf[i] : '\n');
		close(fd);
		closedir(d);
		return 0;
	}
	if (d)
		closedir(d);
	fputs("ckptagent: no agent process\n", stderr);
	return 1;
}

int main(int argc, char **argv)
{
	struct hb_mirror_agent *a = NULL;
	struct hb_err err = { 0 };
	const struct passwd *pw;
	gid_t *groups = NULL;
	size_t ng = 0;
	int rc = 1;

	if (hb_mirror_agent_main(argc, argv) >= 0)
		return 2;
	if (argc < 4 || !(pw = getpwnam(argv[1]))) {
		fputs("usage: ckptagent USER DIR scan|open PATH SIZE|put SRC|"
		      "env\n",
		      stderr);
		return 2;
	}
	if (hb_user_lookup(pw->pw_uid, pw->pw_gid, &groups, &ng, NULL, &err) ||
	    hb_mirror_agent_spawn("/proc/self/exe", argv[2], pw->pw_uid,
				  pw->pw_gid, groups, ng, 10000, &a, &err))
		return fail("spawn", &err);
	if (!strcmp(argv[3], "scan")) {
		struct hb_ckpt_manifest *m = NULL;
		struct hb_buf b;

		hb_buf_init(&b, 0);
		if (hb_mirror_agent_scan(a, "1", &m, &err) ||
		    hb_ckpt_manifest_write(m, &b))
			rc = fail("scan", &err);
		else
			rc = fputs(b.data, stdout) < 0;
		hb_ckpt_manifest_free(m);
		hb_buf_free(&b);
	} else if (!strcmp(argv[3], "open") && argc == 6) {
		char buf[65536];
		ssize_t n;
		int fd = hb_mirror_agent_open(a, argv[4],
					      strtoull(argv[5], NULL, 10), &err);

		if (fd < 0) {
			rc = fail("open", &err);
		} else {
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				fwrite(buf, 1, (size_t)n, stdout);
			close(fd);
			rc = 0;
		}
	} else if (!strcmp(argv[3], "put") && argc == 5) {
		struct hb_ckpt_scan_opts so = { .job = "1" };
		struct hb_ckpt_manifest *m = NULL;
		struct hb_ckpt_mat_stats st;
		struct hb_buf b;

		hb_buf_init(&b, 0);
		if (hb_ckpt_scan(argv[4], &so, &m, NULL, &err) ||
		    hb_ckpt_manifest_write(m, &b) ||
		    hb_mirror_agent_put(a, b.data, b.len, from_dir, argv[4],
					&st, &err))
			rc = fail("put", &err);
		else
			rc = 0;
		hb_ckpt_manifest_free(m);
		hb_buf_free(&b);
	} else if (!strcmp(argv[3], "env")) {
		struct hb_ckpt_manifest *m = NULL;

		/* A scan first: the agent runs, past its exec. */
		hb_mirror_agent_scan(a, "1", &m, &err);
		hb_ckpt_manifest_free(m);
		rc = agent_env();
	} else {
		fputs("ckptagent: unknown request\n", stderr);
		rc = 2;
	}
	hb_mirror_agent_free(a);
	free(groups);
	return rc;
}
