/*
 * test_log_journal.c - the syslog priority prefix ("<6>{...}") that log
 * lines get when the log fd is the stream $JOURNAL_STREAM names, and only
 * then.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "hpcbridge/log.h"
#include "testutil.h"

static char dir[] = "/tmp/hb-logj.XXXXXX";

/* A new empty file in dir: its fd, and its "DEV:INODE" in id. */
static int new_file(const char *name, char *id, size_t n)
{
	char path[256];
	struct stat sb;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	snprintf(id, n, "%llu:%llu", (unsigned long long)sb.st_dev,
		 (unsigned long long)sb.st_ino);
	return fd;
}

/* What fd holds, from its start. */
static char *slurp(int fd)
{
	static char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	hb_log_set_fd(-1);
	unsetenv("JOURNAL_STREAM");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_is_journal(void **state)
{
	char id[64], other[64], junk[80];
	int fd = new_file("a", id, sizeof(id));
	int fd2 = new_file("b", other, sizeof(other));

	(void)state;
	assert_int_equal(hb_log_stream_is_journal(fd, id), 1);
	assert_int_equal(hb_log_stream_is_journal(fd, other), 0);
	assert_int_equal(hb_log_stream_is_journal(fd2, other), 1);
	assert_int_equal(hb_log_stream_is_journal(fd, NULL), 0);
	assert_int_equal(hb_log_stream_is_journal(fd, ""), 0);
	assert_int_equal(hb_log_stream_is_journal(fd, "12"), 0);
	assert_int_equal(hb_log_stream_is_journal(fd, "a:b"), 0);
	assert_int_equal(hb_log_stream_is_journal(fd, ":"), 0);
	/* trailing junk after the inode */
	snprintf(junk, sizeof(junk), "%sx", id);
	assert_int_equal(hb_log_stream_is_journal(fd, junk), 0);
	assert_int_equal(hb_log_stream_is_journal(-1, other), 0);
	close(fd);
	close(fd2);
}

/* Every level's line starts with its priority, then the JSON. */
static void test_prefix(void **state)
{
	static const struct {
		enum hb_log_level level;
		const char *prefix, *name;
	} want[] = {
		{ HB_LOG_DEBUG, "<7>{", "debug" },
		{ HB_LOG_INFO, "<6>{", "info" },
		{ HB_LOG_WARN, "<4>{", "warn" },
		{ HB_LOG_ERROR, "<3>{", "error" },
	};
	char id[64], *line, *nl;
	int fd = new_file("j", id, sizeof(id));
	size_t i;

	(void)state;
	setenv("JOURNAL_STREAM", id, 1);
	hb_log_set_level(HB_LOG_DEBUG);
	hb_log_set_fd(fd);
	for (i = 0; i < 4; i++)
		hb_log(want[i].level, "line %zu", i);
	line = slurp(fd);
	for (i = 0; i < 4; i++) {
		cJSON *j, *lv;

		nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		assert_memory_equal(line, want[i].prefix, 4);
		j = cJSON_Parse(line + 3);
		assert_non_null(j);
		lv = cJSON_GetObjectItem(j, "level");
		assert_string_equal(cJSON_GetStringValue(lv), want[i].name);
		cJSON_Delete(j);
		line = nl + 1;
	}
	assert_string_equal(line, "");
	hb_log_set_level(HB_LOG_INFO);
	close(fd);
}

/* A line cut for length keeps its prefix and stays JSON. */
static void test_prefix_long(void **state)
{
	char id[64], *line, *big;
	int fd = new_file("long", id, sizeof(id));
	cJSON *j;

	(void)state;
	big = malloc(HB_LOG_MSG_MAX * 2);
	assert_non_null(big);
	memset(big, '"', HB_LOG_MSG_MAX * 2 - 1);
	big[HB_LOG_MSG_MAX * 2 - 1] = '\0';
	setenv("JOURNAL_STREAM", id, 1);
	hb_log_set_fd(fd);
	for (int i = 0; i < 40; i++)
		hb_logf(HB_LOG_WARN,
			(struct hb_log_field[]){ HB_LOG_STR("a", big),
						 HB_LOG_STR("b", big) },
			2, "%s", big);
	line = slurp(fd);
	assert_memory_equal(line, "<4>{", 4);
	*strchr(line, '\n') = '\0';
	j = cJSON_Parse(line + 3);
	assert_non_null(j);
	cJSON_Delete(j);
	free(big);
	close(fd);
}

/* Not the journal's stream: plain JSON, whatever JOURNAL_STREAM says. */
static void test_no_prefix(void **state)
{
	char id[64], other[64];
	int fd = new_file("p", id, sizeof(id));
	int fd2 = new_file("q", other, sizeof(other));

	(void)state;
	unsetenv("JOURNAL_STREAM");
	hb_log_set_fd(fd);
	hb_log(HB_LOG_ERROR, "unset");
	assert_memory_equal(slurp(fd), "{\"ts\"", 5);
	/* another file's identity */
	setenv("JOURNAL_STREAM", other, 1);
	hb_log_set_fd(fd);
	hb_log(HB_LOG_ERROR, "other");
	assert_null(strstr(slurp(fd), "<3>"));
	/* malformed */
	setenv("JOURNAL_STREAM", "garbage", 1);
	hb_log_set_fd(fd);
	hb_log(HB_LOG_ERROR, "garbage");
	assert_null(strchr(slurp(fd), '<'));
	close(fd);
	close(fd2);
}

/* Looked at once per fd set: a later change of the variable alone does
 * not change the lines; setting the fd again does. */
static void test_checked_once(void **state)
{
	char id[64];
	int fd = new_file("once", id, sizeof(id));
	char *s;

	(void)state;
	setenv("JOURNAL_STREAM", id, 1);
	hb_log_set_fd(fd);
	hb_log(HB_LOG_INFO, "first");
	unsetenv("JOURNAL_STREAM");
	hb_log(HB_LOG_INFO, "second");
	s = slurp(fd);
	assert_memory_equal(s, "<6>{", 4);
	assert_non_null(strstr(s, "\n<6>{"));
	hb_log_set_fd(fd);
	hb_log(HB_LOG_INFO, "third");
	s = slurp(fd);
	assert_non_null(strstr(s, "\n{\"ts\""));
	close(fd);
}

/* A hook gets the JSON line alone (Slurm's log has its own levels). */
static char hooked[4096];

static void hook(enum hb_log_level level, const char *msg, const char *line,
		 void *arg)
{
	(void)level;
	(void)msg;
	(void)arg;
	snprintf(hooked, sizeof(hooked), "%s", line);
}

static void test_hook_plain(void **state)
{
	char id[64];
	int fd = new_file("h", id, sizeof(id));

	(void)state;
	setenv("JOURNAL_STREAM", id, 1);
	hb_log_set_fd(fd);
	hb_log_set_hook(hook, NULL);
	hb_log(HB_LOG_ERROR, "hooked");
	hb_log_set_hook(NULL, NULL);
	assert_memory_equal(hooked, "{\"ts\"", 5);
	assert_string_equal(slurp(fd), "");
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_journal),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_prefix_long),
		cmocka_unit_test(test_no_prefix),
		cmocka_unit_test(test_checked_once),
		cmocka_unit_test(test_hook_plain),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
