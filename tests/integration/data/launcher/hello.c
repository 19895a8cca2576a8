/*
 * hello.c - one line per MPI rank: its rank, the world size, and the
 * variables the launcher must carry to every rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "-";
}

int main(int argc, char **argv)
{
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	printf("hello rank=%d size=%d nccl=%s procid=%s job=%s\n", rank, size,
	       env("NCCL_DEBUG"), env("SLURM_PROCID"), env("SLURM_JOB_ID"));
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
