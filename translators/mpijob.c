/* mpijob.c - not yet written. */
