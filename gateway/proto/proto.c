/*
 * proto.c - the hpcbridged API protocol: framing, strict JSON payloads and
 * a one-shot client with one deadline.
 */
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/clock.h"
#include "hpcbridge/doc.h"
#include "hpcbridge/proto.h"

static const char magic[2] = { 'H', 'B' };

int hb_proto_header(unsigned char hdr[HB_PROTO_HDR], enum hb_proto_kind kind,
		    size_t len)
{
	if (kind != HB_PROTO_REQUEST && kind != HB_PROTO_REPLY)
		return HB_EINVAL;
	if (len > HB_PROTO_MAX_PAYLOAD)
		return HB_ETOOBIG;
	hdr[0] = (unsigned char)magic[0];
	hdr[1] = (unsigned char)magic[1];
	hdr[2] = HB_PROTO_VERSION;
	hdr[3] = (unsigned char)kind;
	hdr[4] = (unsigned char)(len >> 24);
	hdr[5] = (unsigned char)(len >> 16);
	hdr[6] = (unsigned char)(len >> 8);
	hdr[7] = (unsigned char)len;
	return 0;
}

int hb_proto_frame(struct hb_buf *out, enum hb_proto_kind kind,
		   const char *json, size_t len)
{
	unsigned char hdr[HB_PROTO_HDR];
	size_t old = out->len;
	int rc;

	if ((rc = hb_proto_header(hdr, kind, len)))
		return rc;
	if (!out->max)
		out->max = HB_BUF_DEFAULT_MAX;
	if (out->len > out->max || HB_PROTO_HDR + len > out->max - out->len)
		return HB_ETOOBIG;
	rc = hb_buf_append(out, hdr, sizeof(hdr));
	if (rc == 0 && len)
		rc = hb_buf_append(out, json, len);
	if (rc) {
		out->len = old;
		if (out->data)
			out->data[old] = '\0';
	}
	return rc;
}

int hb_proto_peek(const void *data, size_t len, size_t max_payload,
		  enum hb_proto_kind *kind, const char **payload, size_t *plen,
		  size_t *frame_len, struct hb_err *err)
{
	const unsigned char *p = data;
	uint32_t n;

	if (max_payload == 0 || max_payload > HB_PROTO_MAX_PAYLOAD)
		max_payload = HB_PROTO_MAX_PAYLOAD;
	if (len >= 1 && p[0] != (unsigned char)magic[0])
		goto bad_magic;
	if (len >= 2 && p[1] != (unsigned char)magic[1])
		goto bad_magic;
	if (len >= 3 && p[2] != HB_PROTO_VERSION)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "unsupported protocol version %u (this side "
				  "speaks %d)",
				  p[2], HB_PROTO_VERSION);
	if (len >= 4 && p[3] != HB_PROTO_REQUEST && p[3] != HB_PROTO_REPLY)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "bad frame kind %u (1 request, 2 reply)",
				  p[3]);
	if (len < HB_PROTO_HDR)
		return HB_EAGAIN;
	n = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 |
	    (uint32_t)p[7];
	if (n > max_payload)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "frame payload of %u bytes exceeds the "
				  "limit of %zu",
				  n, max_payload);
	if (len - HB_PROTO_HDR < n)
		return HB_EAGAIN;
	if (kind)
		*kind = (enum hb_proto_kind)p[3];
	if (payload)
		*payload = (const char *)p + HB_PROTO_HDR;
	if (plen)
		*plen = n;
	if (frame_len)
		*frame_len = HB_PROTO_HDR + (size_t)n;
	return 0;
bad_magic:
	return hb_err_set(err, HB_EPROTO, NULL, 0,
			  "bad frame magic (not an hpcbridge API client?)");
}

/* ------------------------------------------------------------------ */
/* Payloads                                                            */
/* ------------------------------------------------------------------ */

/*
 * What cJSON does not check: UTF-8, NUL bytes (raw, or \u0000 which cJSON
 * would silently cut a string at) and raw control characters in strings.
 * A lexer-level pass: it tracks only whether it is inside a string.
 */
static int scan_text(const char *payload, size_t len, struct hb_err *err)
{
	const unsigned char *s = (const unsigned char *)payload;
	size_t i = 0, k;
	int in_str = 0;

	while (i < len) {
		unsigned char c = s[i];

		if (c == 0)
			return hb_err_set(err, HB_EPROTO, NULL, 0,
					  "payload byte %zu: NUL byte", i);
		if (c >= 0x80) {
			k = hb_utf8_dec(s + i, len - i, NULL);
			if (!k)
				return hb_err_set(err, HB_EPROTO, NULL, 0,
						  "payload byte %zu: invalid "
						  "UTF-8",
						  i);
			i += k;
			continue;
		}
		if (!in_str) {
			if (c == '"')
				in_str = 1;
			i++;
			continue;
		}
		if (c < 0x20)
			return hb_err_set(err, HB_EPROTO, NULL, 0,
					  "payload byte %zu: control character "
					  "in a string (escape it)",
					  i);
		if (c == '"') {
			in_str = 0;
		} else if (c == '\\') {
			if (i + 1 < len && s[i + 1] == 'u' && i + 5 < len &&
			    !memcmp(s + i + 2, "0000", 4))
				return hb_err_set(err, HB_EPROTO, NULL, 0,
						  "payload byte %zu: \\u0000 "
						  "in a string",
						  i);
			i++; /* skip the escaped character */
		}
		i++;
	}
	return 0;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Duplicate keys and depth, over the whole tree. */
static int check_tree(const cJSON *node, int depth, struct hb_err *err)
{
	const cJSON *c, *d;
	const char **keys;
	size_t n = 0, i;
	int rc;

	if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
		return 0;
	if (depth > HB_PROTO_MAX_DEPTH)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "payload nested deeper than %d levels",
				  HB_PROTO_MAX_DEPTH);
	for (c = node->child; c; c = c->next) {
		if ((rc = check_tree(c, depth + 1, err)))
			return rc;
		n++;
	}
	if (!cJSON_IsObject(node) || n < 2)
		return 0;
	if (n <= 16) {
		for (c = node->child; c; c = c->next)
			for (d = c->next; d; d = d->next)
				if (!strcmp(c->string, d->string))
					goto dup_small;
		return 0;
	}
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (i = 0, c = node->child; c; c = c->next)
		keys[i++] = c->string;
	qsort(keys, n, sizeof(*keys), cmp_keys);
	for (i = 1; i < n; i++)
		if (!strcmp(keys[i - 1], keys[i])) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"duplicate key \"%.100s\"", keys[i]);
			free(keys);
			return rc;
		}
	free(keys);
	return 0;
dup_small:
	return hb_err_set(err, HB_EPROTO, NULL, 0, "duplicate key \"%.100s\"",
			  c->string);
}

int hb_proto_parse(const char *payload, size_t len, enum hb_proto_kind kind,
		   cJSON **out, struct hb_err *err)
{
	const char *end = NULL;
	const cJSON *f;
	cJSON *doc = NULL;
	size_t i;
	int rc;

	*out = NULL;
	if (kind != HB_PROTO_REQUEST && kind != HB_PROTO_REPLY)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "bad frame kind");
	if (len > HB_PROTO_MAX_PAYLOAD)
		return hb_err_set(err, HB_ETOOBIG, NULL, 0,
				  "payload of %zu bytes is too large", len);
	/* The common case in one fast pass: JSON that the project's checker
	 * accepts has valid UTF-8, no NUL byte and no raw control character
	 * in a string, and without the six bytes \u0000 anywhere it has no
	 * escaped NUL either.  Anything else (text that is not JSON, or
	 * that only looks as if it held \u0000) takes the exact scan, which
	 * names the byte. */
	if ((hb_json_check(payload, len, NULL) ||
	     memmem(payload, len, "\\u0000", 6)) &&
	    (rc = scan_text(payload, len, err)))
		return rc;
	/* cJSON parses with a length; skip leading whitespace ourselves so
	 * that an all-blank payload is reported plainly. */
	for (i = 0; i < len && strchr(" \t\r\n", payload[i]); i++)
		;
	if (i == len || payload[i] != '{')
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "payload is not a JSON object");
	doc = cJSON_ParseWithLengthOpts(payload, len, &end, 0);
	if (!doc || !cJSON_IsObject(doc)) {
		/* On failure cJSON points end at the error. */
		size_t at = end && end >= payload && end <= payload + len
				    ? (size_t)(end - payload)
				    : 0;

		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"payload is not valid JSON (near byte %zu)",
				at);
		goto out;
	}
	for (i = (size_t)(end - payload); i < len; i++)
		if (!strchr(" \t\r\n", payload[i])) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"payload byte %zu: text after the JSON "
					"object",
					i);
			goto out;
		}
	if ((rc = check_tree(doc, 1, err)))
		goto out;
	if (kind == HB_PROTO_REQUEST) {
		f = cJSON_GetObjectItemCaseSensitive(doc, "op");
		if (!cJSON_IsString(f) || !f->valuestring[0]) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"request has no \"op\" string");
			goto out;
		}
	} else {
		f = cJSON_GetObjectItemCaseSensitive(doc, "ok");
		if (!cJSON_IsBool(f)) {
			rc = hb_err_set(err, HB_EPROTO, NULL, 0,
					"reply has no \"ok\" boolean");
			goto out;
		}
	}
	*out = doc;
	doc = NULL;
	rc = 0;
out:
	cJSON_Delete(doc);
	return rc;
}

cJSON *hb_proto_error(int code, const char *message)
{
	const char *name = hb_errname(code);
	cJSON *r = cJSON_CreateObject(), *e;

	if (!name || code == 0)
		name = "EIO";
	if (!message)
		message = hb_strerror(code);
	if (!r || !cJSON_AddFalseToObject(r, "ok") ||
	    !(e = cJSON_AddObjectToObject(r, "error")) ||
	    !cJSON_AddStringToObject(e, "code", name) ||
	    !cJSON_AddStringToObject(e, "message", message)) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

cJSON *hb_proto_ok(void)
{
	cJSON *r = cJSON_CreateObject();

	if (r && !cJSON_AddTrueToObject(r, "ok")) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

int hb_proto_reply_status(const cJSON *reply, struct hb_err *err)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	const cJSON *e, *code, *msg;
	int c;

	if (cJSON_IsTrue(ok))
		return 0;
	if (!cJSON_IsFalse(ok))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "reply has no \"ok\" boolean");
	e = cJSON_GetObjectItemCaseSensitive(reply, "error");
	code = cJSON_GetObjectItemCaseSensitive(e, "code");
	msg = cJSON_GetObjectItemCaseSensitive(e, "message");
	if (!cJSON_IsString(code))
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "error reply has no \"error.code\" string");
	c = hb_errcode(code->valuestring);
	if (c == 0)
		c = HB_EPROTO;
	return hb_err_set(err, c, NULL, 0, "%s",
			  cJSON_IsString(msg) ? msg->valuestring
					      : hb_strerror(c));
}

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

/* Wait for events on fd until the deadline: 0, or HB_ETIMEDOUT/HB_EIO. */
static int wait_fd(int fd, short events, int64_t deadline, struct hb_err *err)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - hb_clock_mono_ms();
		if (left <= 0)
			return hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
					  "no reply from the daemon in time");
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return hb_err_set(err, HB_EIO, NULL, 0, "poll: %s",
					  strerror(errno));
	}
}

static int connect_unix(const char *path, int64_t deadline, int *fdp,
			struct hb_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	socklen_t sl;
	int fd, rc, e;

	if (n == 0 || n >= sizeof(sa.sun_path))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "socket path is empty or too long");
	memcpy(sa.sun_path, path, n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "socket: %s",
				  strerror(errno));
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		e = errno;
		if (e == EINTR)
			continue;
		if (e == EAGAIN) {
			/* The listen backlog is full: retry until the
			 * deadline, a millisecond at a time. */
			struct timespec ms = { 0, 1000000 };

			if (hb_clock_mono_ms() >= deadline) {
				rc = hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
						"%s: the daemon's backlog is "
						"full",
						path);
				goto fail;
			}
			nanosleep(&ms, NULL);
			continue;
		}
		if (e == EINPROGRESS) {
			if ((rc = wait_fd(fd, POLLOUT, deadline, err)))
				goto fail;
			sl = sizeof(e);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0)
				e = errno;
			if (e == 0)
				break;
		}
		if (e == EACCES || e == EPERM)
			rc = hb_err_set(err, HB_EPERM, NULL, 0, "%s: %s", path,
					strerror(e));
		else if (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR)
			rc = hb_err_set(err, HB_EUNAVAIL, NULL, 0,
					"%s: no daemon listens (%s)", path,
					strerror(e));
		else
			rc = hb_err_set(err, HB_EUNAVAIL, NULL, 0,
					"%s: connect: %s", path, strerror(e));
		goto fail;
	}
	*fdp = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The server check                                                    */
/* ------------------------------------------------------------------ */

static int trusted(uid_t uid, uid_t daemon_uid)
{
	return uid == 0 || uid == daemon_uid || uid == geteuid();
}

/* "uid 0 (root), 991 (daemon.user) or 1000 (this process)" */
static const char *expected(uid_t daemon_uid, char *buf, size_t n)
{
	uid_t me = geteuid();
	int more = daemon_uid != 0, self = me != 0 && me != daemon_uid;

	if (more && self)
		snprintf(buf, n, "uid 0 (root), %lu (daemon.user) or %lu "
			 "(this process)", (unsigned long)daemon_uid,
			 (unsigned long)me);
	else if (more)
		snprintf(buf, n, "uid 0 (root) or %lu (daemon.user)",
			 (unsigned long)daemon_uid);
	else if (self)
		snprintf(buf, n, "uid 0 (root) or %lu (this process)",
			 (unsigned long)me);
	else
		snprintf(buf, n, "uid 0 (root)");
	return buf;
}

/* path's directory, and path itself, as a daemon's socket must be. */
static int check_dir(const char *path, uid_t daemon_uid, struct hb_err *err)
{
	const char *slash = strrchr(path, '/');
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], want[128];
	struct stat st;
	size_t n;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((n = (size_t)(slash - path)) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int)n, path);
	else
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "socket path is too long");
	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return hb_err_set(err, HB_EUNAVAIL, NULL, 0,
					  "%s: no daemon listens (%s: %s)",
					  path, dir, strerror(errno));
		return hb_err_set(err, HB_EPERM, NULL, 0, "%s: %s: %s", path,
				  dir, strerror(errno));
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: the socket's directory %s is %s, not "
				  "a directory: refused",
				  path, dir,
				  S_ISLNK(st.st_mode) ? "a symlink"
						      : "not a directory");
	if (!trusted(st.st_uid, daemon_uid))
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: the socket's directory %s is owned by "
				  "uid %lu, expected %s: refused",
				  path, dir, (unsigned long)st.st_uid,
				  expected(daemon_uid, want, sizeof(want)));
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: the socket's directory %s (owner uid "
				  "%lu, mode %04o) is writable by %s: "
				  "refused",
				  path, dir, (unsigned long)st.st_uid,
				  (unsigned)(st.st_mode & 07777),
				  st.st_mode & S_IWOTH ? "others" : "its group");
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: the socket is a symlink: refused", path);
	return 0;
}

/* The process listening on fd's other end runs as a trusted uid. */
static int check_peer(int fd, const char *path, uid_t daemon_uid,
		      struct hb_err *err)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char want[128];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
	    len != sizeof(cr))
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: cannot tell who serves the socket "
				  "(SO_PEERCRED: %s): refused",
				  path, strerror(errno));
	if (!trusted(cr.uid, daemon_uid))
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "%s: served by uid %lu (pid %ld), expected "
				  "%s: not the daemon, refused",
				  path, (unsigned long)cr.uid, (long)cr.pid,
				  expected(daemon_uid, want, sizeof(want)));
	return 0;
}

int hb_proto_check_server(int fd, const char *path, uid_t daemon_uid,
			  struct hb_err *err)
{
	int rc;

	if (!path || !*path)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "socket path is empty");
	if ((rc = check_dir(path, daemon_uid, err)))
		return rc;
	return fd >= 0 ? check_peer(fd, path, daemon_uid, err) : 0;
}

int hb_proto_daemon_uid(const char *name, uid_t *uid, struct hb_err *err)
{
	struct passwd pw, *res = NULL;
	size_t len = 16384;
	char *buf, *end;
	unsigned long v;
	int e;

	if (!name || !*name)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "daemon.user: empty");
	/* the default needs no lookup (and no NSS round trip in slurmctld) */
	if (!strcmp(name, "root")) {
		*uid = 0;
		return 0;
	}
	if (name[0] >= '0' && name[0] <= '9') {
		errno = 0;
		v = strtoul(name, &end, 10);
		if (!errno && !*end && v < (unsigned long)(uid_t)-1) {
			*uid = (uid_t)v;
			return 0;
		}
	}
	if (!(buf = malloc(len)))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	e = getpwnam_r(name, &pw, buf, len, &res);
	if (e == 0 && res)
		*uid = res->pw_uid;
	free(buf);
	if (e == 0 && res)
		return 0;
	return hb_err_set(err, HB_ENOENT, NULL, 0,
			  "daemon.user: no user '%.64s'%s%s", name,
			  e ? ": " : "", e ? strerror(e) : "");
}

/* Send all of b; EPIPE/ECONNRESET give HB_EUNAVAIL (the caller may still
 * find a reply waiting). */
static int send_all(int fd, const struct hb_buf *b, int64_t deadline,
		    struct hb_err *err)
{
	size_t off = 0;
	ssize_t n;
	int rc;

	while (off < b->len) {
		n = send(fd, b->data + off, b->len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if ((rc = wait_fd(fd, POLLOUT, deadline, err)))
				return rc;
			continue;
		}
		return hb_err_set(err, HB_EUNAVAIL, NULL, 0, "send: %s",
				  strerror(errno));
	}
	return 0;
}

/* Read one reply frame into in; payload and plen point into in. */
static int recv_frame(int fd, struct hb_buf *in, int64_t deadline,
		      const char **payload, size_t *plen, size_t *flen,
		      struct hb_err *err)
{
	enum hb_proto_kind kind;
	char chunk[16384];
	ssize_t n;
	int rc;

	for (;;) {
		rc = hb_proto_peek(in->data, in->len, HB_PROTO_MAX_PAYLOAD,
				   &kind, payload, plen, flen, err);
		if (rc == 0)
			break;
		if (rc != HB_EAGAIN)
			return rc;
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n > 0) {
			if ((rc = hb_buf_append(in, chunk, (size_t)n)))
				return hb_err_set(err, rc, NULL, 0,
						  "reply too large");
			continue;
		}
		if (n == 0)
			return hb_err_set(
				err, in->len ? HB_EPROTO : HB_EUNAVAIL, NULL, 0,
				in->len ? "the daemon closed the "
					  "connection mid-reply"
					: "the daemon closed the "
					  "connection without a "
					  "reply");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if ((rc = wait_fd(fd, POLLIN, deadline, err)))
				return rc;
			continue;
		}
		return hb_err_set(err, HB_EUNAVAIL, NULL, 0, "recv: %s",
				  strerror(errno));
	}
	if (kind != HB_PROTO_REPLY)
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "the daemon sent a request frame, not a "
				  "reply");
	return 0;
}

/* Send the framed request out on fd and read one reply frame into in. */
static int exchange(int fd, const struct hb_buf *out, struct hb_buf *in,
		    int64_t deadline, const char **payload, size_t *plen,
		    size_t *flen, struct hb_err *err)
{
	struct hb_err serr = { 0 };
	int sent, rc;

	/* A daemon that refuses the request may reply and close before it
	 * has read all of it: look for that reply before giving up. */
	sent = send_all(fd, out, deadline, &serr);
	if (sent == HB_ETIMEDOUT)
		return hb_err_set(err, sent, NULL, 0, "%s", serr.msg);
	rc = recv_frame(fd, in, deadline, payload, plen, flen, err);
	if (rc && sent) {
		if (err)
			*err = serr;
		rc = sent;
	}
	return rc;
}

/* c's connection, if it may carry another call to path. */
static int reusable(struct hb_proto_conn *c, const char *path)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	if (c->fd < 0)
		return 0;
	/* the daemon closed it (POLLIN at EOF, POLLHUP) or said something
	 * unasked: either way, not for this call */
	if (strcmp(c->path, path) ||
	    hb_clock_mono_ms() - c->used_ms >= HB_PROTO_REUSE_MS ||
	    poll(&pfd, 1, 0) != 0) {
		hb_proto_conn_close(c);
		return 0;
	}
	return 1;
}

void hb_proto_conn_close(struct hb_proto_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int hb_proto_call_on(struct hb_proto_conn *c, const char *path,
		     const cJSON *req, int timeout_ms, cJSON **reply,
		     struct hb_err *err)
{
	struct hb_buf out, in;
	const char *payload;
	char *json = NULL;
	int64_t deadline;
	size_t plen, flen = 0;
	int rc, reused, keep = 1;

	*reply = NULL;
	hb_buf_init(&out, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	hb_buf_init(&in, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	if (!path || !req || timeout_ms <= 0) {
		rc = hb_err_set(err, HB_EINVAL, NULL, 0,
				"hb_proto_call: bad arguments");
		goto out;
	}
	deadline = hb_clock_mono_ms() + timeout_ms;
	json = cJSON_PrintUnformatted(req);
	if (!json) {
		rc = hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
		goto out;
	}
	rc = hb_proto_frame(&out, HB_PROTO_REQUEST, json, strlen(json));
	if (rc) {
		hb_err_set(err, rc, NULL, 0, "request of %zu bytes: %s",
			   strlen(json), hb_strerror(rc));
		goto out;
	}
	reused = reusable(c, path);
	for (;;) {
		if (c->fd < 0) {
			/* the directory before connecting, the listener
			 * after: nothing is sent to an untrusted server */
			if ((rc = check_dir(path, c->daemon_uid, err)) ||
			    (rc = connect_unix(path, deadline, &c->fd, err)) ||
			    (rc = check_peer(c->fd, path, c->daemon_uid, err)))
				goto out;
			snprintf(c->path, sizeof(c->path), "%s", path);
		}
		hb_buf_reset(&in);
		rc = exchange(c->fd, &out, &in, deadline, &payload, &plen,
			      &flen, err);
		/* A kept connection closed between our look at it and the
		 * request (the daemon's idle limit, a stop), so no byte of a
		 * reply came: once more, on a new connection.  A daemon that
		 * went away refuses it; one that dropped an idle connection
		 * answers.  (One that died after reading the request may have
		 * decided it: its reconciler gives such a decision up as an
		 * orphan.) */
		if (rc != HB_EUNAVAIL || !reused || in.len)
			break;
		reused = 0;
		hb_proto_conn_close(c);
	}
	if (rc)
		goto out;
	/* more than the reply: the stream is no longer in step */
	if (in.len != flen)
		keep = 0;
	rc = hb_proto_parse(payload, plen, HB_PROTO_REPLY, reply, err);
out:
	if (rc || !keep)
		hb_proto_conn_close(c);
	else
		c->used_ms = hb_clock_mono_ms();
	cJSON_free(json);
	hb_buf_free(&out);
	hb_buf_free(&in);
	return rc;
}

int hb_proto_call_uid(const char *path, uid_t daemon_uid, const cJSON *req,
		      int timeout_ms, cJSON **reply, struct hb_err *err)
{
	struct hb_proto_conn c = HB_PROTO_CONN_INIT;
	int rc;

	c.daemon_uid = daemon_uid;
	rc = hb_proto_call_on(&c, path, req, timeout_ms, reply, err);
	hb_proto_conn_close(&c);
	return rc;
}

int hb_proto_call(const char *path, const cJSON *req, int timeout_ms,
		  cJSON **reply, struct hb_err *err)
{
	return hb_proto_call_uid(path, 0, req, timeout_ms, reply, err);
}
