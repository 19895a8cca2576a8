/*
 * driver.c - print the launcher script for a job script, for tests that
 * cannot use the hpcbridge CLI.  The job's shape comes from the command
 * line, not from #SBATCH lines.
 *
 *   driver SCRIPT JOB_ID NODES TASKS_PER_NODE
 */
#include <stdio.h>
#include <stdlib.h>

#include "hpcbridge/launcher.h"

int main(int argc, char **argv)
{
	static char text[HB_LAUNCHER_MAX];
	struct hb_jobspec spec;
	struct hb_err err = {0};
	struct hb_buf out;
	size_t n;
	FILE *f;
	int rc;

	if (argc != 5 || !(f = fopen(argv[1], "rb"))) {
		fprintf(stderr, "usage: driver SCRIPT JOB_ID NODES TPN\n");
		return 2;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	hb_jobspec_init(&spec, argv[1]);
	spec.script = hb_jobspec_strndup(&spec, text, n);
	spec.script_len = (uint32_t)n;
	spec.nodes_min = (uint32_t)strtoul(argv[3], NULL, 10);
	spec.ntasks_per_node = (uint32_t)strtoul(argv[4], NULL, 10);
	spec.mpi = HB_MPI_OPENMPI;
	hb_buf_init(&out, 0);
	rc = hb_launcher_script(&spec, argv[2], -1, &out, &err);
	if (rc) {
		fprintf(stderr, "driver: %s\n", err.msg);
		return 1;
	}
	fwrite(out.data, 1, out.len, stdout);
	hb_buf_free(&out);
	hb_jobspec_free(&spec);
	return 0;
}
