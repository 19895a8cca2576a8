/* translate.c - not yet written. */
