/* jobspec_json.c - not yet written. */
