/*
 * proto.h - the hpcbridged API protocol (version 1): framing, parsing and a
 * one-shot client.
 *
 * Every message is one frame: an 8-byte header and a JSON payload.
 *
 *   byte 0-1  'H' 'B'            magic
 *   byte 2    HB_PROTO_VERSION
 *   byte 3    HB_PROTO_REQUEST (1) or HB_PROTO_REPLY (2)
 *   byte 4-7  payload length, uint32 big-endian
 *   payload   one UTF-8 JSON object, at most HB_PROTO_MAX_PAYLOAD bytes
 *
 * A request is {"op": NAME, ...}; a reply is {"ok": true, ...} or
 * {"ok": false, "error": {"code": "EPERM", "message": "..."}}, the code
 * being an hb_errname() name.  docs/internals/protocol.md has the ops.
 *
 * This module depends on nothing but cJSON and hb_buf, so the daemon, the
 * CLI and the Slurm plugins all link it.  It never logs.
 */
#ifndef HPCBRIDGE_PROTO_H
#define HPCBRIDGE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

struct cJSON;

#define HB_PROTO_VERSION     1
#define HB_PROTO_HDR	     8
#define HB_PROTO_MAX_PAYLOAD (1u << 20)

enum hb_proto_kind { HB_PROTO_REQUEST = 1, HB_PROTO_REPLY = 2 };

/*
 * Write the header of a frame whose payload is len bytes into hdr: for a
 * writer that reserves the header, writes the payload after it, then
 * fills it in.  HB_ETOOBIG past HB_PROTO_MAX_PAYLOAD; HB_EINVAL for a bad
 * kind.
 */
int hb_proto_header(unsigned char hdr[HB_PROTO_HDR], enum hb_proto_kind kind,
		    size_t len);

/*
 * Append one frame (header, then the len bytes of json) to out.
 * HB_ETOOBIG if len exceeds HB_PROTO_MAX_PAYLOAD or out's cap (out is then
 * left as it was); HB_EINVAL for a bad kind.
 */
int hb_proto_frame(struct hb_buf *out, enum hb_proto_kind kind,
		   const char *json, size_t len);

/*
 * Inspect the first len received bytes of data.
 *   HB_EAGAIN  more bytes are needed (the header so far is valid);
 *   0          a whole frame is there: *kind, *payload (pointing into
 *              data), *plen and *frame_len (header + payload) are set;
 *   HB_EPROTO  bad magic, version or kind (detected as soon as the byte
 *              arrives, so garbage is refused without waiting for 8 bytes);
 *   HB_ETOOBIG the announced length exceeds max_payload (0 means
 *              HB_PROTO_MAX_PAYLOAD; larger values are clamped to it).
 * err (may be NULL) says why on error.  Output pointers may be NULL.
 * Reads only data[0..len).
 */
int hb_proto_peek(const void *data, size_t len, size_t max_payload,
		  enum hb_proto_kind *kind, const char **payload, size_t *plen,
		  size_t *frame_len, struct hb_err *err);

/*
 * Parse a payload of len bytes (need not be NUL-terminated) into a cJSON
 * object.  Refused with HB_EPROTO: anything that is not exactly one JSON
 * object, invalid UTF-8, NUL bytes (raw or as \u0000), raw control
 * characters in strings, duplicate keys at any depth, nesting deeper than
 * HB_PROTO_MAX_DEPTH; for a request, a missing or non-string "op"; for a
 * reply, a missing or non-boolean "ok".  Caller frees *out with
 * cJSON_Delete(); *out is NULL on error.
 */
#define HB_PROTO_MAX_DEPTH 64
int hb_proto_parse(const char *payload, size_t len, enum hb_proto_kind kind,
		   struct cJSON **out, struct hb_err *err);

/*
 * The server check.  Whoever can bind the socket's path, or swap its
 * directory, could otherwise answer for the daemon: feed decisions into
 * slurmctld, or fake output into a job.  So a client believes a server
 * only when
 *   - the socket's directory (lstat: a symlink is refused) is a directory
 *     owned by a trusted uid and writable by neither its group nor others
 *     (a 1777 directory such as /tmp is refused), and the socket itself is
 *     not a symlink;
 *   - the process listening on it (SO_PEERCRED of the connection) runs as
 *     a trusted uid.
 * Trusted: root, daemon_uid (the configured daemon.user; 0 adds no one),
 * and the client's own effective uid (a process that answers as the
 * caller can do nothing the caller could not do itself).  Every client
 * call makes the check on each new connection: hb_proto_call() trusts
 * root, hb_proto_call_uid() and hb_proto_call_on() also c->daemon_uid.
 *
 * hb_proto_check_server() checks path's directory and, if fd >= 0, the
 * peer of the connected socket fd.  0, or HB_EPERM with a message that
 * names the path, the uid found and the uids expected; HB_EUNAVAIL if the
 * directory does not exist.
 */
int hb_proto_check_server(int fd, const char *path, uid_t daemon_uid,
			  struct hb_err *err);

/*
 * The uid of the daemon user named by name (daemon.user): "root" (0, no
 * lookup), a decimal uid (no lookup), or a user name (looked up with
 * getpwnam_r: call it at start-up, never on a hot path).  0 with *uid set; HB_ENOENT (err names the user) if
 * there is no such user; HB_EINVAL for an empty name.
 */
int hb_proto_daemon_uid(const char *name, uid_t *uid, struct hb_err *err);

/*
 * Client: connect to the UNIX socket at path, check the server
 * (hb_proto_check_server(), trusting root), send req as one request
 * frame, read one reply, all within timeout_ms in total (poll-based,
 * non-blocking, no signals: SIGPIPE is never raised).  Returns 0 with the
 * reply object, whether "ok" is true or false (hb_proto_reply_status()
 * tells); HB_EUNAVAIL if nobody listens or the peer closed without a
 * reply; HB_EPERM if the socket may not be opened or the server is not
 * trusted (nothing is sent to it); HB_ETIMEDOUT past the deadline;
 * HB_EPROTO on a malformed reply; HB_ETOOBIG if req is too large;
 * HB_EINVAL for a bad path or timeout (<= 0).  Caller frees *reply with
 * cJSON_Delete(); *reply is NULL on error.
 */
int hb_proto_call(const char *path, const struct cJSON *req, int timeout_ms,
		  struct cJSON **reply, struct hb_err *err);

/* hb_proto_call() that also trusts a server run by daemon_uid. */
int hb_proto_call_uid(const char *path, uid_t daemon_uid,
		      const struct cJSON *req, int timeout_ms,
		      struct cJSON **reply, struct hb_err *err);

/*
 * A connection kept from one call to the next, for a caller that calls
 * often (the plugin keeps one in slurmctld): no connect, accept and close
 * per call, on either side.  hb_proto_call_on() reuses c's connection when
 * it is to the same path, was last used less than HB_PROTO_REUSE_MS ago
 * (well inside the daemon's idle limit), and the daemon has not closed
 * it; otherwise it connects anew (and checks the new connection's server,
 * trusting c->daemon_uid too).  A call that fails closes it.  Results
 * as hb_proto_call()'s.  One caller at a time; start from
 * HB_PROTO_CONN_INIT, end with hb_proto_conn_close() (which may be called
 * any number of times).
 */
#define HB_PROTO_REUSE_MS 10000
struct hb_proto_conn {
	int fd; /* -1: none */
	int64_t used_ms;
	char path[108];	  /* sun_path's size */
	uid_t daemon_uid; /* trusted besides root and oneself; 0: none */
};
#define HB_PROTO_CONN_INIT                                                     \
	{                                                                      \
		.fd = -1                                                       \
	}
int hb_proto_call_on(struct hb_proto_conn *c, const char *path,
		     const struct cJSON *req, int timeout_ms,
		     struct cJSON **reply, struct hb_err *err);
void hb_proto_conn_close(struct hb_proto_conn *c);

/*
 * Build {"ok":false,"error":{"code":NAME,"message":message}} for an HB_E*
 * code (an unknown code is sent as "EIO"; a NULL message as
 * hb_strerror(code)).  Caller frees with cJSON_Delete(); NULL when out of
 * memory.
 */
struct cJSON *hb_proto_error(int code, const char *message);

/* Build {"ok":true}.  Caller frees with cJSON_Delete(); NULL on ENOMEM. */
struct cJSON *hb_proto_ok(void);

/*
 * What a reply says: 0 if "ok" is true; the HB_E* code its error names
 * (HB_EINVAL for an unknown name) with the message in err if it is false;
 * HB_EPROTO if the reply has neither shape.
 */
int hb_proto_reply_status(const struct cJSON *reply, struct hb_err *err);

#endif
