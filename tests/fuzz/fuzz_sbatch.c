/*
 * fuzz_sbatch.c - the sbatch reader and writer on any input.
 *
 * The input is a script, optionally followed by a NUL byte and NUL-
 * separated words: words of the form SBATCH_*=... become environment
 * variables, the others command-line options.  Whatever the reader
 * accepts, the writer must write, the reader must read back, and writing
 * again must give the same script.  A rejection must say why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/fidelity.h"
#include "hpcbridge/sbatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const char *nul = memchr(buf, '\0', size);
	size_t len = nul ? (size_t)(nul - buf) : size;
	char *words = NULL;
	const char *envp[MAX_WORDS + 1], *argv[MAX_WORDS + 1];
	int nenv = 0, nargv = 0;
	struct hb_sbatch_opts opts;
	struct hb_jobspec a, b;
	struct hb_err err = {0};
	struct hb_report rep;
	struct hb_buf out1, out2;

	if (nul) {
		size_t rest = size - len - 1;

		words = malloc(rest + 1);
		if (!words)
			return 0;
		memcpy(words, nul + 1, rest);
		words[rest] = '\0';
		for (char *w = words;
		     w < words + rest + 1 && nenv + nargv < MAX_WORDS;
		     w += strlen(w) + 1) {
			if (!strncmp(w, "SBATCH_", 7) && strchr(w, '='))
				envp[nenv++] = w;
			else if (*w)
				argv[nargv++] = w;
		}
	}
	envp[nenv] = NULL;
	argv[nargv] = NULL;
	opts.envp = envp;
	opts.argv = argv;
	opts.argc = nargv;

	hb_jobspec_init(&a, "fuzz.sh");
	if (hb_sbatch_parse(buf, len, "fuzz.sh", &opts, &a, &err)) {
		if (!err.msg[0] || !err.code)
			abort(); /* every rejection explains itself */
		goto out_a;
	}
	(void)hb_sbatch_detect(buf, len);

	hb_buf_init(&out1, 0);
	hb_report_init(&rep, "sbatch");
	memset(&err, 0, sizeof(err));
	if (hb_sbatch_emit(&a, &out1, &rep, &err)) {
		/* only values no #SBATCH line can hold may be refused */
		if (err.code != HB_EUNSUP && err.code != HB_ENOMEM)
			abort();
		goto out_emit;
	}
	hb_jobspec_init(&b, "back.sh");
	memset(&err, 0, sizeof(err));
	if (hb_sbatch_parse(out1.data, out1.len, "back.sh", NULL, &b, &err))
		abort(); /* what we write, we read */
	hb_buf_init(&out2, 0);
	if (hb_sbatch_emit(&b, &out2, NULL, &err))
		abort();
	if (out1.len != out2.len || memcmp(out1.data, out2.data, out1.len))
		abort(); /* writing is stable */
	hb_buf_free(&out2);
	hb_jobspec_free(&b);
out_emit:
	hb_report_free(&rep);
	hb_buf_free(&out1);
out_a:
	hb_jobspec_free(&a);
	free(words);
	return 0;
}
