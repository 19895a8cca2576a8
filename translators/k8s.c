/* k8s.c - not yet written. */
