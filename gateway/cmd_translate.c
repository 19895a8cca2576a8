/* cmd_translate.c - not yet written. */
