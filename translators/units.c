/* units.c - not yet written. */
