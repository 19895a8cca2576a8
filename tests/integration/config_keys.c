/*
 * config_keys.c - print the configuration table (hb_config_key()) one
 * setting a line, tab-separated: path, type, default ("(none)": null, or
 * an empty map or list), bounds or values, reloadable, help.
 * docs/man/gen_yaml_keys.py writes hpcbridge.yaml(5)'s KEYS section from
 * it, and man.test.sh checks that the page still says the same.
 */
#include <inttypes.h>
#include <stdio.h>

#include "hpcbridge/config.h"

static const char *const type_names[] = {
	[HB_CFG_STRING] = "string",	    [HB_CFG_UINT] = "integer",
	[HB_CFG_SIZE] = "size",		    [HB_CFG_ENUM] = "enum",
	[HB_CFG_MAP] = "map",		    [HB_CFG_SELECTORS] = "selectors",
	[HB_CFG_LIST] = "list",		    [HB_CFG_LIST_MAP] = "list map",
	[HB_CFG_BOOL] = "boolean",	    [HB_CFG_FS_GROUP] = "fs group",
	[HB_CFG_VOLUMES] = "volumes",
};

int main(void)
{
	struct hb_config_key k;

	for (size_t i = 0; hb_config_key(i, &k) == 0; i++) {
		printf("%s\t%s\t%s\t", k.path, type_names[k.type],
		       k.def ? k.def : "(none)");
		if (k.type == HB_CFG_UINT || k.type == HB_CFG_SIZE)
			printf("%" PRIu64 "..%" PRIu64, k.min, k.max);
		for (size_t j = 0; k.values && k.values[j]; j++)
			printf("%s%s", j ? "|" : "", k.values[j]);
		printf("\t%d\t%s\n", k.reloadable, k.help ? k.help : "");
	}
	return 0;
}
