/* A rank that comes to a collective long after the others, as one that
 * reads a file first: MPI's own collectives wait for it, and so must the
 * library's (the MPI transport's 30 s default timeout once failed them). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned late = argc > 1 ? (unsigned)atoi(argv[1]) : 35;
    int bad = 0;
    int data[1000];
    for (int i = 0; i < 1000; i++) data[i] = rank == 0 ? i : -1;
    /* The library sets up its state for the communicator in its first
     * collective (blocking MPI calls of its own), so the wait under test
     * is in the second. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) sleep(late);
    MPI_Bcast(data, 1000, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 1000; i++) if (data[i] != i) bad++;
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) bad++;
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("late: %s (%d wrong)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all != 0;
}
