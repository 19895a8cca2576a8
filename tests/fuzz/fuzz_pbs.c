/*
 * fuzz_pbs.c - hb_pbs_parse must never crash, and what it accepts must hold
 * together: every directive set a field or says why not, array ranges are
 * sorted and disjoint, node counts agree, and the derived shape is safe to
 * compute.  A failure must leave a message naming where.
 *
 * An input whose first line starts with "ARGV " gives qsub options for the
 * command line (split on blanks); the rest is the script.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "translators/pbs/pbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 16

static void check_ok(const struct hb_jobspec *s, size_t len)
{
	struct hb_shape sh;

	if (s->source != HB_SRC_PBS || s->script_len != len || !s->script)
		abort();
	if (s->nodes_min != s->nodes_max)
		abort();
	for (uint32_t i = 0; i < s->ndirectives; i++) {
		const struct hb_directive *d = &s->directives[i];

		if (!d->text)
			abort();
		if (d->kind == HB_DIR_PBS && !d->nfields && !d->note)
			abort();
		for (uint8_t k = 0; k < d->nfields; k++)
			if (d->fields[k] >= HB__F_COUNT)
				abort();
	}
	for (uint32_t i = 0; i < s->narray_ranges; i++) {
		const struct hb_range *r = &s->array_ranges[i];

		if (r->step == 0 || r->end < r->start)
			abort();
		if ((r->end - r->start) % r->step)
			abort();
		if (i && r->start <= s->array_ranges[i - 1].end)
			abort();
	}
	if (s->narray_ranges && !s->array)
		abort();
	if (s->array) {
		/* never more ranges than the list has items */
		uint32_t items = 1;

		for (const char *p = s->array; *p && *p != '%'; p++)
			items += *p == ',';
		if (s->narray_ranges > items)
			abort();
	}
	if (s->nchunks == 1 || (s->nchunks && !s->chunks))
		abort();
	if (s->nchunks) {
		uint64_t nodes = 0;

		for (uint32_t i = 0; i < s->nchunks; i++)
			nodes += s->chunks[i].count;
		if (nodes != s->nodes_min && s->nodes_min != 1)
			abort();
	}
	if (s->mem_kind > HB_MEM_PER_PROCESS || s->gpu_scope > HB_GPU_PER_TASK)
		abort();
	for (uint32_t i = 0; i < s->nenv; i++)
		if (!s->env[i].name)
			abort();
	(void)hb_jobspec_shape(s, &sh);
	(void)hb_jobspec_array_count(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const char *argv[MAX_ARGS];
	char *line = NULL;
	int argc = 0;
	struct hb_jobspec s;
	struct hb_err err;
	int rc;

	if (size >= 5 && memcmp(buf, "ARGV ", 5) == 0) {
		const char *nl = memchr(buf, '\n', size);
		size_t n = nl ? (size_t)(nl - buf) : size;
		char *p;

		line = malloc(n + 1);
		if (!line)
			return 0;
		memcpy(line, buf + 5, n - 5);
		line[n - 5] = '\0';
		for (p = line; *p && argc < MAX_ARGS;) {
			char *sp;

			while (*p == ' ')
				p++;
			if (!*p)
				break;
			argv[argc++] = p;
			sp = strchr(p, ' ');
			if (!sp)
				break;
			*sp = '\0';
			p = sp + 1;
		}
		/* an argument written "''" stands for the empty string */
		for (int i = 0; i < argc; i++)
			if (strcmp(argv[i], "''") == 0)
				argv[i] = "";
		buf += n < size ? n + 1 : n;
		size -= n < size ? n + 1 : n;
	}

	(void)hb_pbs_detect(buf, size);
	hb_jobspec_init(&s, "fuzz.pbs");
	memset(&err, 0, sizeof(err));
	rc = hb_pbs_parse(buf, size, "fuzz.pbs", argc ? argv : NULL, argc, &s,
			  &err);
	if (rc == 0) {
		check_ok(&s, size);
	} else {
		if (rc != err.code || !err.msg[0])
			abort();
		if (strncmp(err.msg, "fuzz.pbs", 8) != 0 &&
		    strncmp(err.msg, "command line", 12) != 0)
			abort();
	}
	hb_jobspec_free(&s);
	free(line);
	return 0;
}
