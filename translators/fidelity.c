/* fidelity.c - not yet written. */
