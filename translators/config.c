/* config.c - not yet written. */
