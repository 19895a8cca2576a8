/* body.c - not yet written. */
