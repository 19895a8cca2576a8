/*
 * hello.c - a two-line MPI program for the sandbox: each rank says who
 * and where it is.  Built by scripts/run.sh with mpicc.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME];
	int rank, size, len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("hello from rank %d of %d on %s\n", rank, size, host);
	MPI_Finalize();
	return 0;
}
