/*
 * test_log.c - JSON-lines logging: format, escaping, levels, hook, fd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/error.h"
#include "hpcbridge/log.h"
#include "testutil.h"

static char last_line[65536];
static char last_msg[8192];
static int last_level = -1, calls;

static void hook(enum hb_log_level level, const char *msg, const char *line,
		 void *arg)
{
	(void)arg;
	calls++;
	last_level = (int)level;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	snprintf(last_line, sizeof(last_line), "%s", line);
}

static int setup(void **state)
{
	(void)state;
	hb_log_set_hook(hook, NULL);
	hb_log_set_level(HB_LOG_INFO);
	calls = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hb_log_set_hook(NULL, NULL);
	hb_log_set_fd(-1);
	return 0;
}

static cJSON *last_json(void)
{
	cJSON *j = cJSON_Parse(last_line);

	if (!j)
		fail_msg("not JSON: %s", last_line);
	return j;
}

static void test_format(void **state)
{
	const cJSON *ts;
	cJSON *j;
	size_t n;

	(void)state;
	hb_log(HB_LOG_INFO, "hello %s %d", "world", 42);
	assert_int_equal(calls, 1);
	assert_int_equal(last_level, HB_LOG_INFO);
	assert_string_equal(last_msg, "hello world 42");
	j = last_json();
	assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring,
			    "info");
	assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring,
			    "hello world 42");
	ts = cJSON_GetObjectItem(j, "ts");
	assert_true(cJSON_IsString(ts));
	/* 2026-01-31T12:00:00.123Z */
	n = strlen(ts->valuestring);
	assert_int_equal(n, 24);
	assert_int_equal(ts->valuestring[10], 'T');
	assert_int_equal(ts->valuestring[19], '.');
	assert_int_equal(ts->valuestring[23], 'Z');
	/* ts, level, msg come first, in that order */
	assert_string_equal(j->child->string, "ts");
	assert_string_equal(j->child->next->string, "level");
	assert_string_equal(j->child->next->next->string, "msg");
	cJSON_Delete(j);
}

static void test_fields_and_escaping(void **state)
{
	struct hb_log_field f[] = {
		HB_LOG_STR("job", "hb-000001"),
		HB_LOG_INT("uid", -5),
		HB_LOG_STR("nothing", NULL),
		HB_LOG_STR("weird\"key", "a\nb\x01\xff\xc3\xa9"),
	};
	cJSON *j;

	(void)state;
	hb_logf(HB_LOG_WARN, f, 4, "quote \" backslash \\ tab \t");
	j = last_json();
	assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring,
			    "warn");
	assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring,
			    "quote \" backslash \\ tab \t");
	assert_string_equal(cJSON_GetObjectItem(j, "job")->valuestring,
			    "hb-000001");
	assert_int_equal(cJSON_GetObjectItem(j, "uid")->valuedouble, -5);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "nothing")));
	/* a stray 0xff becomes U+FFFD; valid UTF-8 stays */
	assert_string_equal(cJSON_GetObjectItem(j, "weird\"key")->valuestring,
			    "a\nb\x01\xef\xbf\xbd\xc3\xa9");
	cJSON_Delete(j);
}

static void test_levels(void **state)
{
	enum hb_log_level l;

	(void)state;
	hb_log(HB_LOG_DEBUG, "hidden");
	assert_int_equal(calls, 0);
	assert_false(hb_log_enabled(HB_LOG_DEBUG));
	hb_log_set_level(HB_LOG_DEBUG);
	hb_log(HB_LOG_DEBUG, "shown");
	assert_int_equal(calls, 1);
	hb_log_set_level(HB_LOG_ERROR);
	hb_log(HB_LOG_WARN, "hidden");
	assert_int_equal(calls, 1);
	hb_log(HB_LOG_ERROR, "shown");
	assert_int_equal(calls, 2);
	assert_int_equal(hb_log_get_level(), HB_LOG_ERROR);

	assert_int_equal(hb_log_level_parse("debug", &l), 0);
	assert_int_equal(l, HB_LOG_DEBUG);
	assert_int_equal(hb_log_level_parse("WARNING", &l), 0);
	assert_int_equal(l, HB_LOG_WARN);
	assert_int_equal(hb_log_level_parse("error", &l), 0);
	assert_int_equal(l, HB_LOG_ERROR);
	assert_int_equal(hb_log_level_parse("loud", &l), HB_EINVAL);
	assert_int_equal(hb_log_level_parse(NULL, &l), HB_EINVAL);
	assert_string_equal(hb_log_level_name(HB_LOG_INFO), "info");
}

static void test_long(void **state)
{
	struct hb_log_field f[1];
	char *big = malloc(100000);
	cJSON *j;

	(void)state;
	memset(big, '\x01', 99999);
	big[99999] = '\0';
	/* a message past the cap is cut and marked */
	hb_log(HB_LOG_INFO, "%s", big);
	j = last_json();
	assert_int_equal(strlen(cJSON_GetObjectItem(j, "msg")->valuestring),
			 HB_LOG_MSG_MAX + 3);
	cJSON_Delete(j);
	/* a field too long for the line: dropped, still valid JSON */
	memset(big, 'x', 99999);
	f[0] = HB_LOG_STR("script", big);
	hb_logf(HB_LOG_INFO, f, 1, "short");
	j = last_json();
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
	assert_null(cJSON_GetObjectItem(j, "script"));
	assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring,
			    "short");
	cJSON_Delete(j);
	free(big);
}

static void test_fd(void **state)
{
	char buf[4096];
	int p[2];
	ssize_t n;

	(void)state;
	hb_log_set_hook(NULL, NULL);
	assert_int_equal(pipe(p), 0);
	hb_log_set_fd(p[1]);
	hb_log(HB_LOG_ERROR, "to the pipe");
	hb_log(HB_LOG_INFO, "second");
	hb_log_set_fd(-1);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	assert_true(n > 0);
	buf[n] = '\0';
	/* two lines, each newline-terminated JSON */
	assert_non_null(strstr(buf, "\"msg\":\"to the pipe\"}\n{"));
	assert_non_null(strstr(buf, "\"level\":\"error\""));
	assert_int_equal(buf[n - 1], '\n');
	assert_int_equal(calls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fields_and_escaping, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
