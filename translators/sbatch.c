/* sbatch.c - not yet written. */
