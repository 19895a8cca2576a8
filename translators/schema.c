/* schema.c - not yet written. */
