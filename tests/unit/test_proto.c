/*
 * test_proto.c - API framing, payload checks and the one-shot client.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/proto.h"
#include "testutil.h"

static const char req_json[] = "{\"op\":\"ping\"}";

static void frame_of(struct hb_buf *b, enum hb_proto_kind kind,
		     const char *json)
{
	hb_buf_init(b, 0);
	assert_int_equal(hb_proto_frame(b, kind, json, strlen(json)), 0);
}

static void test_frame_layout(void **state)
{
	struct hb_buf b;
	const unsigned char *p;

	(void)state;
	frame_of(&b, HB_PROTO_REQUEST, req_json);
	p = (const unsigned char *)b.data;
	assert_int_equal(b.len, HB_PROTO_HDR + strlen(req_json));
	assert_int_equal(p[0], 'H');
	assert_int_equal(p[1], 'B');
	assert_int_equal(p[2], HB_PROTO_VERSION);
	assert_int_equal(p[3], HB_PROTO_REQUEST);
	assert_int_equal(p[4], 0);
	assert_int_equal(p[5], 0);
	assert_int_equal(p[6], 0);
	assert_int_equal(p[7], strlen(req_json));
	assert_memory_equal(b.data + HB_PROTO_HDR, req_json, strlen(req_json));
	hb_buf_free(&b);
}

static void test_frame_errors(void **state)
{
	struct hb_buf b;
	char *big;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_proto_frame(&b, 3, "{}", 2), HB_EINVAL);
	big = malloc(HB_PROTO_MAX_PAYLOAD + 1);
	assert_non_null(big);
	memset(big, ' ', HB_PROTO_MAX_PAYLOAD + 1);
	assert_int_equal(hb_proto_frame(&b, HB_PROTO_REQUEST, big,
					HB_PROTO_MAX_PAYLOAD + 1),
			 HB_ETOOBIG);
	assert_int_equal(b.len, 0);
	/* exactly the maximum frames */
	assert_int_equal(
		hb_proto_frame(&b, HB_PROTO_REPLY, big, HB_PROTO_MAX_PAYLOAD),
		0);
	assert_int_equal(b.len, HB_PROTO_HDR + HB_PROTO_MAX_PAYLOAD);
	hb_buf_free(&b);
	/* the buffer's own cap: refused, and left as it was */
	hb_buf_init(&b, 20);
	assert_int_equal(hb_buf_puts(&b, "abc"), 0);
	assert_int_equal(hb_proto_frame(&b, HB_PROTO_REQUEST, big, 10),
			 HB_ETOOBIG);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.data, "abc");
	hb_buf_free(&b);
	free(big);
}

static void test_peek_whole_and_split(void **state)
{
	struct hb_buf b;
	enum hb_proto_kind kind = 0;
	const char *payload = NULL;
	size_t plen = 0, flen = 0, i;

	(void)state;
	frame_of(&b, HB_PROTO_REPLY, "{\"ok\":true}");
	/* every proper prefix is incomplete, never an error */
	for (i = 0; i < b.len; i++)
		assert_int_equal(hb_proto_peek(b.data, i, 0, &kind, &payload,
					       &plen, &flen, NULL),
				 HB_EAGAIN);
	assert_int_equal(hb_proto_peek(b.data, b.len, 0, &kind, &payload, &plen,
				       &flen, NULL),
			 0);
	assert_int_equal(kind, HB_PROTO_REPLY);
	assert_ptr_equal(payload, b.data + HB_PROTO_HDR);
	assert_int_equal(plen, strlen("{\"ok\":true}"));
	assert_int_equal(flen, b.len);
	/* NULL outputs are fine */
	assert_int_equal(
		hb_proto_peek(b.data, b.len, 0, NULL, NULL, NULL, NULL, NULL),
		0);
	hb_buf_free(&b);
}

static void test_peek_back_to_back(void **state)
{
	struct hb_buf b;
	const char *payload;
	size_t plen, flen, off = 0;
	const char *msgs[] = { "{\"op\":\"a\"}", "{\"op\":\"bb\"}",
			       "{\"op\":\"ccc\"}" };
	int i;

	(void)state;
	hb_buf_init(&b, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(hb_proto_frame(&b, HB_PROTO_REQUEST, msgs[i],
						strlen(msgs[i])),
				 0);
	/* plus half a fourth frame */
	assert_int_equal(hb_buf_append(&b, "HB\1\1\0\0", 6), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(hb_proto_peek(b.data + off, b.len - off, 0,
					       NULL, &payload, &plen, &flen,
					       NULL),
				 0);
		assert_int_equal(plen, strlen(msgs[i]));
		assert_memory_equal(payload, msgs[i], plen);
		off += flen;
	}
	assert_int_equal(hb_proto_peek(b.data + off, b.len - off, 0, NULL, NULL,
				       NULL, NULL, NULL),
			 HB_EAGAIN);
	hb_buf_free(&b);
}

static void expect_peek(const char *data, size_t len, size_t max, int code,
			const char *needle)
{
	struct hb_err err = { 0 };

	assert_int_equal(
		hb_proto_peek(data, len, max, NULL, NULL, NULL, NULL, &err),
		code);
	if (needle) {
		if (!strstr(err.msg, needle))
			fail_msg("'%s' lacks '%s'", err.msg, needle);
	}
}

static void test_peek_header_errors(void **state)
{
	(void)state;
	/* bad magic is seen at the first byte */
	expect_peek("G", 1, 0, HB_EPROTO, "magic");
	expect_peek("HC", 2, 0, HB_EPROTO, "magic");
	expect_peek("{\"op\":\"ping\"}", 13, 0, HB_EPROTO, "magic");
	expect_peek("HB\2", 3, 0, HB_EPROTO, "version 2");
	expect_peek("HB\0", 3, 0, HB_EPROTO, "version 0");
	expect_peek("HB\1\0", 4, 0, HB_EPROTO, "kind 0");
	expect_peek("HB\1\3", 4, 0, HB_EPROTO, "kind 3");
	expect_peek("HB\1\377\0\0\0\0", 8, 0, HB_EPROTO, "kind 255");
	/* a valid partial header */
	expect_peek("", 0, 0, HB_EAGAIN, NULL);
	expect_peek("HB\1\1\0\0\0", 7, 0, HB_EAGAIN, NULL);
	/* lengths: the default cap, a lower cap, the maximum */
	expect_peek("HB\1\1\0\x10\0\1", 8, 0, HB_ETOOBIG, "1048577");
	expect_peek("HB\1\1\xff\xff\xff\xff", 8, 0, HB_ETOOBIG, "4294967295");
	expect_peek("HB\1\1\0\0\4\1", 8, 1024, HB_ETOOBIG, "limit of 1024");
	expect_peek("HB\1\1\0\0\4\0", 8, 1024, HB_EAGAIN, NULL);
	expect_peek("HB\1\1\0\x10\0\0", 8, 0, HB_EAGAIN, NULL);
	/* a cap above the protocol's is clamped to it */
	expect_peek("HB\1\1\0\x10\0\1", 8, (size_t)1 << 30, HB_ETOOBIG,
		    "limit of 1048576");
	/* an empty payload is a whole frame (parse refuses it) */
	expect_peek("HB\1\2\0\0\0\0", 8, 0, 0, NULL);
}

static void expect_parse(const char *json, enum hb_proto_kind kind, int code,
			 const char *needle)
{
	struct hb_err err = { 0 };
	cJSON *doc = (cJSON *)1;

	assert_int_equal(hb_proto_parse(json, strlen(json), kind, &doc, &err),
			 code);
	if (code) {
		assert_null(doc);
		if (needle && !strstr(err.msg, needle))
			fail_msg("'%s': '%s' lacks '%s'", json, err.msg,
				 needle);
	} else {
		assert_non_null(doc);
		cJSON_Delete(doc);
	}
}

static void test_parse(void **state)
{
	struct hb_err err = { 0 };
	cJSON *doc;
	char buf[64];
	char deep[200];
	int i;

	(void)state;
	expect_parse("{\"op\":\"ping\"}", HB_PROTO_REQUEST, 0, NULL);
	expect_parse(" \n{\"op\":\"ping\", \"x\":[1,{\"y\":null}]}\r\n ",
		     HB_PROTO_REQUEST, 0, NULL);
	expect_parse("{\"ok\":false,\"error\":{}}", HB_PROTO_REPLY, 0, NULL);
	expect_parse("{\"op\":\"\\u00e9t\\u00e9 caf\xc3\xa9\"}",
		     HB_PROTO_REQUEST, 0, NULL);
	expect_parse("", HB_PROTO_REQUEST, HB_EPROTO, "not a JSON object");
	expect_parse("   ", HB_PROTO_REQUEST, HB_EPROTO, "not a JSON object");
	expect_parse("[1]", HB_PROTO_REQUEST, HB_EPROTO, "not a JSON object");
	expect_parse("\"op\"", HB_PROTO_REQUEST, HB_EPROTO,
		     "not a JSON object");
	expect_parse("{\"op\":\"ping\"", HB_PROTO_REQUEST, HB_EPROTO,
		     "not valid JSON");
	expect_parse("{op:1}", HB_PROTO_REQUEST, HB_EPROTO, "not valid JSON");
	expect_parse("{\"op\":\"ping\"}{}", HB_PROTO_REQUEST, HB_EPROTO,
		     "text after");
	expect_parse("{\"op\":\"ping\"} x", HB_PROTO_REQUEST, HB_EPROTO,
		     "text after");
	expect_parse("{}", HB_PROTO_REQUEST, HB_EPROTO, "\"op\"");
	expect_parse("{\"op\":1}", HB_PROTO_REQUEST, HB_EPROTO, "\"op\"");
	expect_parse("{\"op\":\"\"}", HB_PROTO_REQUEST, HB_EPROTO, "\"op\"");
	expect_parse("{\"op\":\"x\"}", HB_PROTO_REPLY, HB_EPROTO, "\"ok\"");
	expect_parse("{\"ok\":1}", HB_PROTO_REPLY, HB_EPROTO, "\"ok\"");
	expect_parse("{\"op\":\"a\",\"op\":\"b\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "duplicate key \"op\"");
	expect_parse("{\"op\":\"a\",\"x\":{\"k\":1,\"k\":2}}", HB_PROTO_REQUEST,
		     HB_EPROTO, "duplicate key \"k\"");
	/* invalid UTF-8: a lone continuation, an overlong, a surrogate */
	expect_parse("{\"op\":\"\x80\"}", HB_PROTO_REQUEST, HB_EPROTO, "UTF-8");
	expect_parse("{\"op\":\"\xc0\xaf\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "UTF-8");
	expect_parse("{\"op\":\"\xed\xa0\x80\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "UTF-8");
	expect_parse("{\"op\":\"\xe2\x82\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "UTF-8");
	expect_parse("{\"op\":\"a\\u0000b\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "\\u0000");
	/* an escaped backslash before u0000 is plain text */
	expect_parse("{\"op\":\"a\\\\u0000b\"}", HB_PROTO_REQUEST, 0, NULL);
	expect_parse("{\"op\":\"a\tb\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "control character");
	expect_parse("{\"op\":\"a\\\"\tb\"}", HB_PROTO_REQUEST, HB_EPROTO,
		     "control character");

	/* a raw NUL byte, which strlen() cannot express */
	memcpy(buf, "{\"op\":\"a\0b\"}", 12);
	doc = (cJSON *)1;
	assert_int_equal(hb_proto_parse(buf, 12, HB_PROTO_REQUEST, &doc, &err),
			 HB_EPROTO);
	assert_null(doc);
	assert_non_null(strstr(err.msg, "NUL"));

	/* the payload need not be NUL-terminated */
	memcpy(buf, "{\"op\":\"ping\"}XXXX", 17);
	assert_int_equal(hb_proto_parse(buf, 13, HB_PROTO_REQUEST, &doc, NULL),
			 0);
	assert_string_equal(cJSON_GetObjectItem(doc, "op")->valuestring,
			    "ping");
	cJSON_Delete(doc);

	/* depth: 63 nested arrays under the root pass, 70 do not */
	i = snprintf(deep, sizeof(deep), "{\"op\":\"x\",\"d\":");
	memset(deep + i, '[', 63);
	memset(deep + i + 63, ']', 63);
	deep[i + 126] = '}';
	deep[i + 127] = '\0';
	expect_parse(deep, HB_PROTO_REQUEST, 0, NULL);
	memset(deep + i, '[', 70);
	memset(deep + i + 70, ']', 70);
	deep[i + 140] = '}';
	deep[i + 141] = '\0';
	expect_parse(deep, HB_PROTO_REQUEST, HB_EPROTO, "nested deeper");

	/* bad kind */
	doc = (cJSON *)1;
	assert_int_equal(hb_proto_parse("{}", 2, 0, &doc, NULL), HB_EINVAL);
	assert_null(doc);
}

static void test_parse_many_keys(void **state)
{
	struct hb_buf b;
	cJSON *doc;
	int i;

	(void)state;
	/* the sorted path for wide objects */
	hb_buf_init(&b, 0);
	assert_int_equal(hb_buf_puts(&b, "{\"op\":\"x\""), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(hb_buf_printf(&b, ",\"k%d\":%d", i, i), 0);
	assert_int_equal(hb_buf_puts(&b, "}"), 0);
	assert_int_equal(
		hb_proto_parse(b.data, b.len, HB_PROTO_REQUEST, &doc, NULL), 0);
	cJSON_Delete(doc);
	b.len--;
	assert_int_equal(hb_buf_puts(&b, ",\"k57\":0}"), 0);
	assert_int_equal(
		hb_proto_parse(b.data, b.len, HB_PROTO_REQUEST, &doc, NULL),
		HB_EPROTO);
	hb_buf_free(&b);
}

static void test_error_and_status(void **state)
{
	struct hb_err err = { 0 };
	cJSON *r, *ok;
	char *s;

	(void)state;
	r = hb_proto_error(HB_EPERM, "not yours");
	assert_non_null(r);
	s = cJSON_PrintUnformatted(r);
	assert_string_equal(s, "{\"ok\":false,\"error\":{\"code\":\"EPERM\","
			       "\"message\":\"not yours\"}}");
	cJSON_free(s);
	assert_int_equal(hb_proto_reply_status(r, &err), HB_EPERM);
	assert_string_equal(err.msg, "not yours");
	cJSON_Delete(r);

	/* unknown code: EIO; NULL message: the code's text */
	r = hb_proto_error(-999, NULL);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "code")
			->valuestring,
		"EIO");
	cJSON_Delete(r);
	r = hb_proto_error(HB_ETOOBIG, NULL);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "message")
			->valuestring,
		hb_strerror(HB_ETOOBIG));
	cJSON_Delete(r);

	ok = hb_proto_ok();
	assert_int_equal(hb_proto_reply_status(ok, NULL), 0);
	cJSON_Delete(ok);

	r = cJSON_Parse("{\"ok\":\"yes\"}");
	assert_int_equal(hb_proto_reply_status(r, NULL), HB_EPROTO);
	cJSON_Delete(r);
	r = cJSON_Parse("{\"ok\":false}");
	assert_int_equal(hb_proto_reply_status(r, NULL), HB_EPROTO);
	cJSON_Delete(r);
}

/* ------------------------------------------------------------------ */
/* The client, against small forked servers                            */
/* ------------------------------------------------------------------ */

enum server_mode {
	SRV_ECHO,    /* reply {"ok":true,"echo":REQUEST} */
	SRV_SILENT,  /* read the request, never reply */
	SRV_CLOSE,   /* close without a reply */
	SRV_HALF,    /* send half a reply frame, then close */
	SRV_GARBAGE, /* reply with bad magic */
	SRV_REQUEST, /* reply with a request frame */
	SRV_EARLY,   /* reply an error before reading, then close */
	SRV_SPLIT,   /* reply one byte at a time */
	SRV_NOACCEPT, /* listen, never accept */
	/* for a kept connection: */
	SRV_KEPT_DROP, /* echo one request, close at the next (read, not
			* answered), then echo on a new connection */
	SRV_KEPT_EXTRA, /* echo one request with a second reply after it */
	SRV_IMPOSTOR	/* accept, answer, exit 3 if a byte came, 0 if not */
};

/* The socket lives in a private directory (0700, the test's own): the
 * server check refuses one in /tmp itself (1777). */
static char sock_dir[64];
static char sock_path[108];

/* Read one frame from fd into in (the child's side; _exit on EOF). */
static void read_frame(int fd, struct hb_buf *in, const char **payload,
		       size_t *plen)
{
	char buf[65536];
	ssize_t n;

	while (hb_proto_peek(in->data, in->len, 0, NULL, payload, plen, NULL,
			     NULL) == HB_EAGAIN) {
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			_exit(1);
		hb_buf_append(in, buf, (size_t)n);
	}
}

/* Append {"ok":true,"echo":PAYLOAD} as a reply frame to out. */
static void echo_frame(struct hb_buf *out, const char *payload, size_t plen)
{
	struct hb_buf j;

	hb_buf_init(&j, 0);
	hb_buf_puts(&j, "{\"ok\":true,\"echo\":");
	hb_buf_append(&j, payload, plen);
	hb_buf_puts(&j, "}");
	hb_proto_frame(out, HB_PROTO_REPLY, j.data, j.len);
	hb_buf_free(&j);
}

static void serve_kept(int lfd, enum server_mode mode)
{
	struct hb_buf in, out;
	const char *payload;
	size_t plen;
	int fd = accept(lfd, NULL, NULL);

	hb_buf_init(&in, 0);
	hb_buf_init(&out, 0);
	if (fd < 0)
		_exit(1);
	read_frame(fd, &in, &payload, &plen);
	echo_frame(&out, payload, plen);
	if (mode == SRV_KEPT_EXTRA)
		echo_frame(&out, payload, plen);
	if (write(fd, out.data, out.len) < 0)
		_exit(1);
	if (mode == SRV_KEPT_DROP) {
		hb_buf_reset(&in);
		hb_buf_reset(&out);
		read_frame(fd, &in, &payload, &plen);
		close(fd);
		if ((fd = accept(lfd, NULL, NULL)) < 0)
			_exit(1);
		hb_buf_reset(&in);
		read_frame(fd, &in, &payload, &plen);
		echo_frame(&out, payload, plen);
		if (write(fd, out.data, out.len) < 0)
			_exit(1);
	}
	pause();
	_exit(0);
}

static void serve(int lfd, enum server_mode mode)
{
	char buf[65536];
	struct hb_buf in, out;
	const char *payload;
	size_t plen, i;
	ssize_t n;
	int fd, rc;

	if (mode == SRV_NOACCEPT) {
		pause();
		_exit(0);
	}
	if (mode == SRV_KEPT_DROP || mode == SRV_KEPT_EXTRA)
		serve_kept(lfd, mode);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(1);
	hb_buf_init(&in, 0);
	hb_buf_init(&out, 0);
	if (mode == SRV_EARLY) {
		const char *e = "{\"ok\":false,\"error\":{\"code\":\"ETOOBIG\","
				"\"message\":\"too big\"}}";
		hb_proto_frame(&out, HB_PROTO_REPLY, e, strlen(e));
		if (write(fd, out.data, out.len) < 0)
			_exit(1);
		close(fd);
		_exit(0);
	}
	for (;;) {
		rc = hb_proto_peek(in.data, in.len, 0, NULL, &payload, &plen,
				   NULL, NULL);
		if (rc != HB_EAGAIN)
			break;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			_exit(1);
		hb_buf_append(&in, buf, (size_t)n);
	}
	switch (mode) {
	case SRV_ECHO:
	case SRV_SPLIT:
		echo_frame(&out, payload, plen);
		if (mode == SRV_ECHO) {
			if (write(fd, out.data, out.len) < 0)
				_exit(1);
		} else {
			for (i = 0; i < out.len; i++) {
				struct timespec ts = { 0, 200000 };

				if (write(fd, out.data + i, 1) != 1)
					_exit(1);
				nanosleep(&ts, NULL);
			}
		}
		break;
	case SRV_SILENT:
		pause();
		break;
	case SRV_HALF:
		hb_proto_frame(&out, HB_PROTO_REPLY, "{\"ok\":true}", 11);
		if (write(fd, out.data, out.len / 2) < 0)
			_exit(1);
		break;
	case SRV_GARBAGE:
		if (write(fd, "HTTP/1.0 200 OK\r\n", 17) < 0)
			_exit(1);
		break;
	case SRV_REQUEST:
		hb_proto_frame(&out, HB_PROTO_REQUEST, "{\"op\":\"x\"}", 10);
		if (write(fd, out.data, out.len) < 0)
			_exit(1);
		break;
	default:
		break;
	}
	close(fd);
	_exit(0);
}

static void sock_setup(void)
{
	if (!sock_dir[0]) {
		snprintf(sock_dir, sizeof(sock_dir), "/tmp/hb-test-proto-XXXXXX");
		assert_non_null(mkdtemp(sock_dir));
	}
	snprintf(sock_path, sizeof(sock_path), "%s/api.sock", sock_dir);
}

/* An impostor's answer: whatever the client would act on. */
static void serve_impostor(int lfd)
{
	static const char fake[] = "{\"ok\":true,\"id\":\"hb-fake\","
				   "\"target\":\"kubernetes\"}";
	struct hb_buf out;
	char c;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		_exit(1);
	hb_buf_init(&out, 0);
	hb_proto_frame(&out, HB_PROTO_REPLY, fake, strlen(fake));
	/* fails (EPIPE) when the client has already hung up */
	if (write(fd, out.data, out.len) < 0)
		(void)0;
	/* the client closes without a byte: EOF; a request: 3 */
	_exit(read(fd, &c, 1) > 0 ? 3 : 0);
}

/* Start a server in mode, listening (hence seen through SO_PEERCRED) as
 * uid as, or as the test itself when as is (uid_t)-1. */
static pid_t start_server_as(enum server_mode mode, uid_t as)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pid_t pid;
	int lfd, p[2];
	char c;

	sock_setup();
	unlink(sock_path);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* gone with the test, even when an assertion stops it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		/* the peer credentials are the listener's, taken at
		 * listen() */
		if (as != (uid_t)-1 &&
		    (setgroups(0, NULL) || setresgid(as, as, as) ||
		     setresuid(as, as, as)))
			_exit(1);
		if (listen(lfd, 4) || write(p[1], "r", 1) != 1)
			_exit(1);
		close(p[0]);
		close(p[1]);
		if (mode == SRV_IMPOSTOR)
			serve_impostor(lfd);
		serve(lfd, mode);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	close(lfd);
	return pid;
}

static pid_t start_server(enum server_mode mode)
{
	return start_server_as(mode, (uid_t)-1);
}

static void stop_server(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(sock_path);
}

static int call(enum server_mode mode, const cJSON *req, int timeout,
		cJSON **reply, struct hb_err *err)
{
	pid_t pid = start_server(mode);
	int rc = hb_proto_call(sock_path, req, timeout, reply, err);

	stop_server(pid);
	return rc;
}

static void test_call(void **state)
{
	struct hb_err err = { 0 };
	cJSON *req = cJSON_Parse("{\"op\":\"ping\",\"n\":\"\xc3\xa9\"}");
	cJSON *reply = NULL;
	char *s;

	(void)state;
	assert_int_equal(call(SRV_ECHO, req, 5000, &reply, &err), 0);
	assert_int_equal(hb_proto_reply_status(reply, NULL), 0);
	s = cJSON_PrintUnformatted(cJSON_GetObjectItem(reply, "echo"));
	assert_string_equal(s, "{\"op\":\"ping\",\"n\":\"\xc3\xa9\"}");
	cJSON_free(s);
	cJSON_Delete(reply);

	assert_int_equal(call(SRV_SPLIT, req, 5000, &reply, &err), 0);
	assert_non_null(cJSON_GetObjectItem(reply, "echo"));
	cJSON_Delete(reply);
	cJSON_Delete(req);
}

static void test_call_failures(void **state)
{
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}");
	cJSON *reply = (cJSON *)1;
	struct hb_err err = { 0 };
	struct timespec t0, t1;
	long ms;

	(void)state;
	/* nobody listens */
	assert_int_equal(
		hb_proto_call("/nonexistent/hb.sock", req, 100, &reply, &err),
		HB_EUNAVAIL);
	assert_null(reply);
	assert_non_null(strstr(err.msg, "no daemon listens"));

	/* silent: times out near the deadline */
	memset(&err, 0, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(call(SRV_SILENT, req, 50, &reply, &err), HB_ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	     (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 50 && ms < 2000);
	assert_null(reply);

	/* listening but never accepting: the connect succeeds (backlog),
	 * the reply never comes */
	memset(&err, 0, sizeof(err));
	assert_int_equal(call(SRV_NOACCEPT, req, 30, &reply, &err),
			 HB_ETIMEDOUT);

	memset(&err, 0, sizeof(err));
	assert_int_equal(call(SRV_CLOSE, req, 5000, &reply, &err), HB_EUNAVAIL);
	assert_non_null(strstr(err.msg, "without a reply"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(call(SRV_HALF, req, 5000, &reply, &err), HB_EPROTO);
	assert_non_null(strstr(err.msg, "mid-reply"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(call(SRV_GARBAGE, req, 5000, &reply, &err), HB_EPROTO);
	assert_non_null(strstr(err.msg, "magic"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(call(SRV_REQUEST, req, 5000, &reply, &err), HB_EPROTO);
	assert_null(reply);

	/* bad arguments */
	assert_int_equal(hb_proto_call(sock_path, req, 0, &reply, NULL),
			 HB_EINVAL);
	assert_int_equal(hb_proto_call(NULL, req, 10, &reply, NULL), HB_EINVAL);
	cJSON_Delete(req);
}

/* A kept connection closed at the next request with no reply byte (as
 * the daemon drops an idle one) is tried once more on a new connection;
 * a fresh one is not (SRV_CLOSE above).  Bytes after the reply end the
 * kept connection. */
static void test_call_kept(void **state)
{
	struct hb_proto_conn c = HB_PROTO_CONN_INIT;
	struct hb_err err = { 0 };
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}"), *reply = NULL;
	struct stat a, b;
	pid_t pid;

	(void)state;
	pid = start_server(SRV_KEPT_DROP);
	assert_int_equal(hb_proto_call_on(&c, sock_path, req, 5000, &reply,
					  &err),
			 0);
	cJSON_Delete(reply);
	assert_int_equal(fstat(c.fd, &a), 0);
	assert_int_equal(hb_proto_call_on(&c, sock_path, req, 5000, &reply,
					  &err),
			 0);
	assert_non_null(cJSON_GetObjectItem(reply, "echo"));
	cJSON_Delete(reply);
	assert_int_equal(fstat(c.fd, &b), 0);
	assert_true(a.st_ino != b.st_ino); /* the second connection */
	hb_proto_conn_close(&c);
	stop_server(pid);

	pid = start_server(SRV_KEPT_EXTRA);
	assert_int_equal(hb_proto_call_on(&c, sock_path, req, 5000, &reply,
					  &err),
			 0);
	assert_non_null(cJSON_GetObjectItem(reply, "echo"));
	cJSON_Delete(reply);
	assert_int_equal(c.fd, -1);
	stop_server(pid);
	cJSON_Delete(req);
}

static void test_call_early_reply(void **state)
{
	struct hb_err err = { 0 };
	cJSON *req = cJSON_CreateObject();
	cJSON *reply = NULL;
	char *big;

	(void)state;
	/* a request far larger than the socket buffers: the server replies
	 * and closes without reading it; the client still gets the reply */
	big = malloc(900000);
	assert_non_null(big);
	memset(big, 'a', 899999);
	big[899999] = '\0';
	cJSON_AddStringToObject(req, "op", "decide");
	cJSON_AddStringToObject(req, "script", big);
	free(big);
	assert_int_equal(call(SRV_EARLY, req, 5000, &reply, &err), 0);
	assert_int_equal(hb_proto_reply_status(reply, &err), HB_ETOOBIG);
	cJSON_Delete(reply);

	/* a request over the protocol's maximum is refused locally */
	big = malloc(HB_PROTO_MAX_PAYLOAD + 1);
	memset(big, 'b', HB_PROTO_MAX_PAYLOAD);
	big[HB_PROTO_MAX_PAYLOAD] = '\0';
	cJSON_ReplaceItemInObject(req, "script", cJSON_CreateString(big));
	free(big);
	reply = (cJSON *)1;
	assert_int_equal(hb_proto_call("/nonexistent", req, 100, &reply, NULL),
			 HB_ETOOBIG);
	assert_null(reply);
	cJSON_Delete(req);
}

/* ------------------------------------------------------------------ */
/* The server check                                                    */
/* ------------------------------------------------------------------ */

static void test_daemon_uid(void **state)
{
	struct hb_err err = { 0 };
	uid_t u = 77;

	(void)state;
	assert_int_equal(hb_proto_daemon_uid("root", &u, &err), 0);
	assert_int_equal(u, 0);
	assert_int_equal(hb_proto_daemon_uid("4242", &u, &err), 0);
	assert_int_equal(u, 4242);
	assert_int_equal(hb_proto_daemon_uid("no-such-user-hb", &u, &err),
			 HB_ENOENT);
	assert_non_null(strstr(err.msg, "no user 'no-such-user-hb'"));
	assert_int_equal(hb_proto_daemon_uid("", &u, NULL), HB_EINVAL);
	assert_int_equal(hb_proto_daemon_uid(NULL, &u, NULL), HB_EINVAL);
}

/* The directory's checks, which need no second user. */
static void test_check_dir(void **state)
{
	struct hb_err err = { 0 };
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}"), *reply = NULL;
	char link[128], lsock[140];
	pid_t pid;

	(void)state;
	pid = start_server(SRV_ECHO);
	assert_int_equal(hb_proto_check_server(-1, sock_path, 0, &err), 0);

	/* writable by others (as /tmp is), or by the group: refused */
	assert_int_equal(chmod(sock_dir, 01777), 0);
	assert_int_equal(hb_proto_check_server(-1, sock_path, 0, &err),
			 HB_EPERM);
	assert_non_null(strstr(err.msg, sock_path));
	assert_non_null(strstr(err.msg, "writable by others"));
	reply = (cJSON *)1;
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_proto_call(sock_path, req, 5000, &reply, &err),
			 HB_EPERM);
	assert_null(reply);
	assert_int_equal(chmod(sock_dir, 0770), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_proto_check_server(-1, sock_path, 0, &err),
			 HB_EPERM);
	assert_non_null(strstr(err.msg, "writable by its group"));
	assert_int_equal(chmod(sock_dir, 0700), 0);

	/* a symlinked directory, a symlinked socket: refused */
	snprintf(link, sizeof(link), "%s.link", sock_dir);
	unlink(link);
	assert_int_equal(symlink(sock_dir, link), 0);
	snprintf(lsock, sizeof(lsock), "%s/api.sock", link);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_proto_check_server(-1, lsock, 0, &err), HB_EPERM);
	assert_non_null(strstr(err.msg, "is a symlink"));
	unlink(link);
	snprintf(lsock, sizeof(lsock), "%s/link.sock", sock_dir);
	assert_int_equal(symlink(sock_path, lsock), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_proto_call(lsock, req, 5000, &reply, &err),
			 HB_EPERM);
	assert_non_null(strstr(err.msg, "the socket is a symlink"));
	unlink(lsock);

	/* the real socket still answers */
	assert_int_equal(hb_proto_call(sock_path, req, 5000, &reply, &err), 0);
	cJSON_Delete(reply);
	stop_server(pid);
	cJSON_Delete(req);
}

/* Another uid serves the socket (root only: it takes a second user). */
static void test_check_peer(void **state)
{
	struct hb_proto_conn c = HB_PROTO_CONN_INIT;
	struct hb_err err = { 0 };
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}"), *reply = NULL;
	uid_t other = 65534;
	char want[64];
	pid_t pid;
	int st;

	(void)state;
	if (geteuid() != 0) {
		cJSON_Delete(req);
		skip();
	}
	/* The impostor answers at once; the client must neither send it a
	 * byte nor take its reply. */
	pid = start_server_as(SRV_IMPOSTOR, other);
	reply = (cJSON *)1;
	assert_int_equal(hb_proto_call(sock_path, req, 5000, &reply, &err),
			 HB_EPERM);
	assert_null(reply);
	snprintf(want, sizeof(want), "served by uid %lu",
		 (unsigned long)other);
	assert_non_null(strstr(err.msg, sock_path));
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "expected uid 0 (root)"));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* no byte reached it */
	unlink(sock_path);

	/* The same through a kept connection (the plugin's). */
	pid = start_server_as(SRV_IMPOSTOR, other);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_proto_call_on(&c, sock_path, req, 5000, &reply,
					  &err),
			 HB_EPERM);
	assert_int_equal(c.fd, -1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 0);
	unlink(sock_path);

	/* Configured as the daemon user, it is believed. */
	pid = start_server_as(SRV_ECHO, other);
	c.daemon_uid = other;
	assert_int_equal(hb_proto_call_on(&c, sock_path, req, 5000, &reply,
					  &err),
			 0);
	assert_non_null(cJSON_GetObjectItem(reply, "echo"));
	cJSON_Delete(reply);
	hb_proto_conn_close(&c);
	stop_server(pid);
	pid = start_server_as(SRV_ECHO, other);
	assert_int_equal(hb_proto_call_uid(sock_path, other, req, 5000,
					   &reply, &err),
			 0);
	cJSON_Delete(reply);
	stop_server(pid);

	/* A directory another uid owns: refused, unless it is the daemon
	 * user's. */
	pid = start_server(SRV_ECHO);
	assert_int_equal(chown(sock_dir, other, (gid_t)-1), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_proto_check_server(-1, sock_path, 0, &err),
			 HB_EPERM);
	snprintf(want, sizeof(want), "is owned by uid %lu",
		 (unsigned long)other);
	assert_non_null(strstr(err.msg, want));
	assert_int_equal(hb_proto_check_server(-1, sock_path, other, NULL), 0);
	assert_int_equal(chown(sock_dir, 0, (gid_t)-1), 0);
	stop_server(pid);
	cJSON_Delete(req);
}

static int cleanup(void **state)
{
	(void)state;
	if (sock_dir[0]) {
		unlink(sock_path);
		rmdir(sock_dir);
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_layout),
		cmocka_unit_test(test_frame_errors),
		cmocka_unit_test(test_peek_whole_and_split),
		cmocka_unit_test(test_peek_back_to_back),
		cmocka_unit_test(test_peek_header_errors),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_many_keys),
		cmocka_unit_test(test_error_and_status),
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_call_failures),
		cmocka_unit_test(test_call_early_reply),
		cmocka_unit_test(test_call_kept),
		cmocka_unit_test(test_daemon_uid),
		cmocka_unit_test(test_check_dir),
		cmocka_unit_test(test_check_peer),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, cleanup);
}
