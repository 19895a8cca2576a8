/*
 * fuzz_kubeconfig.c - the kubeconfig loader (hb_kube_config_parse) must
 * never crash or leak, must say why it refuses, and what it accepts must
 * be usable: a server URL, a namespace, an exec plugin with a command.
 * Files named in the input are not read (HB_KUBE_NO_FILES).
 *
 * Input: up to three files separated by a line "---8<---"; a first line
 * "#context NAME" picks a context.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/kube/kube_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEP "\n---8<---\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *names[3] = { "a.yaml", "dir/b.yaml", "/etc/c" };
	struct hb_kube_src srcs[3];
	struct hb_kube_config *cfg = NULL;
	struct hb_err err = { 0 };
	char *text, *p, *ctx = NULL;
	size_t n = 0;
	int rc;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	p = text;
	if (!strncmp(p, "#context ", 9)) {
		char *nl = strchr(p, '\n');

		ctx = p + 9;
		if (nl) {
			*nl = '\0';
			p = nl + 1;
		} else {
			p += strlen(p);
		}
	}
	while (n < 3) {
		char *sep = strstr(p, SEP);
		size_t len = sep ? (size_t)(sep - p) : strlen(p);

		srcs[n] = (struct hb_kube_src){ names[n], p, len };
		n++;
		if (!sep)
			break;
		p = sep + strlen(SEP);
	}
	rc = hb_kube_config_parse(srcs, n, ctx, HB_KUBE_NO_FILES, &cfg, &err);
	if (rc) {
		if (cfg || !err.msg[0])
			abort();
	} else {
		if (!cfg || !cfg->server || !cfg->ns || !*cfg->ns ||
		    (strncmp(cfg->server, "http://", 7) &&
		     strncmp(cfg->server, "https://", 8)))
			abort();
		if (cfg->exec && (!cfg->exec->argv || !cfg->exec->argv[0] ||
				  !cfg->exec->env || !cfg->exec->what))
			abort();
		if (cfg->insecure && cfg->ca.data)
			abort();
		if (strcmp(hb_kube_config_server(cfg), cfg->server))
			abort();
	}
	hb_kube_config_free(cfg);
	free(text);
	return 0;
}
