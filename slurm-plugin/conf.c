/*
 * conf.c - the settings job_submit/hpcbridge uses from hpcbridge.yaml:
 * daemon.socket, daemon.user and plugin.timeout_ms.  The file is read and validated
 * with the one configuration table (hb_config_parse), so the plugin and
 * the daemon agree on what a valid file is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbplugin.h"
#include "hpcbridge/config.h"
#include "hpcbridge/proto.h"

void hb_plugin_conf_defaults(struct hb_plugin_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	snprintf(conf->socket, sizeof(conf->socket), "%s",
		 HB_PLUGIN_DEFAULT_SOCKET);
	conf->timeout_ms = HB_PLUGIN_DEFAULT_TIMEOUT_MS;
	/* as the configuration's defaults say: plugin.decide: snapshot,
	 * placement.snap beside daemon.socket */
	conf->inproc = 1;
	snprintf(conf->snapshot, sizeof(conf->snapshot), "%s",
		 HB_PLUGIN_DEFAULT_SNAPSHOT);
}

/* Read the whole file (at most HB_PLUGIN_CONFIG_MAX bytes).  Caller frees
 * *out with free(). */
static int read_file(const char *path, char **out, size_t *len,
		     struct hb_err *err)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return hb_err_set(err, HB_ENOENT, path, 0,
					  "no such file");
		return hb_err_set(err, HB_EIO, path, 0, "cannot open: %s",
				  strerror(errno));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = hb_err_set(err, HB_EIO, path, 0, "not a regular file");
		goto out;
	}
	if ((uint64_t)st.st_size > HB_PLUGIN_CONFIG_MAX) {
		rc = hb_err_set(err, HB_ETOOBIG, path, 0,
				"larger than %u bytes", HB_PLUGIN_CONFIG_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = hb_err_set(err, HB_ENOMEM, path, 0, "out of memory");
		goto out;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = hb_err_set(err, HB_EIO, path, 0, "read: %s",
					strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

int hb_plugin_conf_load(const char *path, struct hb_plugin_conf *conf,
			struct hb_err *err)
{
	struct hb_config cfg = { 0 };
	struct hb_err uerr = { 0 };
	char *buf = NULL;
	size_t len = 0, n;
	uid_t uid = 0;
	int rc;

	hb_plugin_conf_defaults(conf);
	if (!path || !*path)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no config path");
	rc = read_file(path, &buf, &len, err);
	if (rc)
		goto out;
	/* The whole file is validated, as the daemon validates it. */
	rc = hb_config_parse(buf, len, path, &cfg, err);
	if (rc)
		goto out;
	n = cfg.daemon_socket ? strlen(cfg.daemon_socket) : 0;
	if (!n || n >= sizeof(conf->socket)) {
		rc = hb_err_set(err, HB_EINVAL, path, 0,
				"daemon.socket: empty or longer than %zu bytes",
				sizeof(conf->socket) - 1);
		goto out;
	}
	if (cfg.plugin_timeout_ms < 1 ||
	    cfg.plugin_timeout_ms > HB_PLUGIN_MAX_TIMEOUT_MS) {
		rc = hb_err_set(err, HB_ERANGE, path, 0,
				"plugin.timeout_ms: not from 1 to %d",
				HB_PLUGIN_MAX_TIMEOUT_MS);
		goto out;
	}
	if ((rc = hb_proto_daemon_uid(cfg.daemon_user, &uid, &uerr))) {
		hb_err_set(err, rc, path, 0, "%s", uerr.msg);
		goto out;
	}
	if ((rc = hb_config_plugin_path(&cfg, HB_PLUGIN_SNAPSHOT,
					conf->snapshot,
					sizeof(conf->snapshot)))) {
		hb_err_set(err, rc, path, 0, "plugin.snapshot: too long");
		hb_plugin_conf_defaults(conf);
		goto out;
	}
	memcpy(conf->socket, cfg.daemon_socket, n + 1);
	conf->timeout_ms = (int)cfg.plugin_timeout_ms;
	conf->daemon_uid = uid;
	conf->inproc = !strcmp(cfg.plugin_decide, "snapshot");
out:
	hb_config_free(&cfg);
	free(buf);
	return rc;
}
