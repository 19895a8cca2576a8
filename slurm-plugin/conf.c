/*
 * conf.c - the two settings job_submit/hpcbridge reads from
 * hpcbridge.yaml: daemon.socket and plugin.timeout_ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hbplugin.h"
#include "hpcbridge/doc.h"

void hb_plugin_conf_defaults(struct hb_plugin_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	snprintf(conf->socket, sizeof(conf->socket), "%s",
		 HB_PLUGIN_DEFAULT_SOCKET);
	conf->timeout_ms = HB_PLUGIN_DEFAULT_TIMEOUT_MS;
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

static int get_socket(const cJSON *doc, const char *path,
		      struct hb_plugin_conf *conf, struct hb_err *err)
{
	const cJSON *v = hb_doc_get(doc, "daemon.socket");
	size_t n;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return hb_err_set(err, HB_EINVAL, path, (unsigned)hb_doc_line(v),
				  "daemon.socket: must be a string");
	n = strlen(v->valuestring);
	if (v->valuestring[0] != '/')
		return hb_err_set(err, HB_EINVAL, path, (unsigned)hb_doc_line(v),
				  "daemon.socket: must be an absolute path");
	if (n >= sizeof(conf->socket))
		return hb_err_set(err, HB_EINVAL, path, (unsigned)hb_doc_line(v),
				  "daemon.socket: longer than %zu bytes",
				  sizeof(conf->socket) - 1);
	memcpy(conf->socket, v->valuestring, n + 1);
	return 0;
}

static int get_timeout(const cJSON *doc, const char *path,
		       struct hb_plugin_conf *conf, struct hb_err *err)
{
	const cJSON *v = hb_doc_get(doc, "plugin.timeout_ms");
	double d;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v))
		return hb_err_set(err, HB_EINVAL, path, (unsigned)hb_doc_line(v),
				  "plugin.timeout_ms: must be a number");
	d = v->valuedouble;
	if (d < 1 || d > HB_PLUGIN_MAX_TIMEOUT_MS || d != (double)(int)d)
		return hb_err_set(err, HB_ERANGE, path, (unsigned)hb_doc_line(v),
				  "plugin.timeout_ms: must be a whole number "
				  "from 1 to %d",
				  HB_PLUGIN_MAX_TIMEOUT_MS);
	conf->timeout_ms = (int)d;
	return 0;
}

int hb_plugin_conf_load(const char *path, struct hb_plugin_conf *conf,
			struct hb_err *err)
{
	struct hb_plugin_conf c;
	cJSON *doc = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	hb_plugin_conf_defaults(conf);
	if (!path || !*path)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no config path");
	rc = read_file(path, &buf, &len, err);
	if (rc)
		goto out;
	rc = hb_doc_parse(buf, len, path, &doc, err);
	if (rc)
		goto out;
	if (!cJSON_IsNull(doc) && !cJSON_IsObject(doc)) {
		rc = hb_err_set(err, HB_EINVAL, path, 1, "not a mapping");
		goto out;
	}
	hb_plugin_conf_defaults(&c);
	rc = get_socket(doc, path, &c, err);
	if (!rc)
		rc = get_timeout(doc, path, &c, err);
	if (!rc)
		*conf = c;
out:
	cJSON_Delete(doc);
	free(buf);
	return rc;
}
