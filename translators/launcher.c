/* launcher.c - not yet written. */
