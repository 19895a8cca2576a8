/* sbatch_emit.c - not yet written. */
