/* Runs one MPI collective once, to see which algorithm an MPI library's
 * selection file makes it use: coll OP BYTES (bytes per rank; alltoall's
 * and reduce-scatter's per block, and run twice, the second time in
 * place). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *op = argv[1];
    int n = atoi(argv[2]);
    int p; MPI_Comm_size(MPI_COMM_WORLD, &p);
    char *a = calloc((size_t)n * p + 8, 1), *b = calloc((size_t)n * p + 8, 1);
    if (!strcmp(op, "bcast")) MPI_Bcast(a, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "allreduce")) MPI_Allreduce(a, b, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(op, "reduce")) MPI_Reduce(a, b, n / 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "scan")) MPI_Scan(a, b, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(op, "exscan")) MPI_Exscan(a, b, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(op, "allgather")) MPI_Allgather(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(op, "scatter")) MPI_Scatter(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "gather")) MPI_Gather(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
    else if (!strcmp(op, "reduce-scatter")) {
        MPI_Reduce_scatter_block(a, b, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce_scatter_block(MPI_IN_PLACE, a, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    else if (!strcmp(op, "alltoall")) {
        MPI_Alltoall(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD);
        /* In place too: MPICH selects apart on it. MPI ignores the send
         * count and type; Open MPI's rules still read them. */
        MPI_Alltoall(MPI_IN_PLACE, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
