/* pbs.c - not yet written. */
