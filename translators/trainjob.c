/* trainjob.c - not yet written. */
