/* doc.c - not yet written. */
