/* Ranks that describe the same bytes with different datatypes, as MPI
 * allows (MPICH's scattern does): a vector type at the root, contiguous
 * elsewhere; and arguments MPI ignores on some ranks (a scatter's send
 * count and type off the root). The library packs the vector side and
 * must give MPI's results; prints "layouts: ok". */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype strided;      /* 12 doubles, every 10th */
    MPI_Type_vector(12, 1, 10, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    MPI_Datatype block;        /* the same, one block per rank apart */
    MPI_Type_create_resized(strided, 0, sizeof(double), &block);
    MPI_Type_commit(&block);
    static double table[8 * 120], mine[12];

    /* Scatter: rank r's 12 values are column r of a 12 x 10 table. */
    for (int i = 0; i < 120 * 8; i++) table[i] = rank == 0 ? i : -1;
    MPI_Scatter(table, 1, block, mine, 12, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 12; i++) if (mine[i] != i * 10 + rank) bad++;

    /* Bcast: the root's strided values land contiguous elsewhere. */
    for (int i = 0; i < 12; i++) mine[i] = -1;
    if (rank == 0) MPI_Bcast(table, 1, strided, 0, MPI_COMM_WORLD);
    else MPI_Bcast(mine, 12, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; rank && i < 12; i++) if (mine[i] != i * 10) bad++;

    /* Gather: contiguous blocks land in the root's columns. */
    for (int i = 0; i < 12; i++) mine[i] = 1000 * rank + i;
    for (int i = 0; i < 120 * 8; i++) table[i] = -1;
    MPI_Gather(mine, 12, MPI_DOUBLE, table, 1, block, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++)
        for (int i = 0; i < 12; i++) if (table[i * 10 + r] != 1000 * r + i) bad++;

    /* A scatter whose send count and type are ignored off the root. */
    double in[64], out[8];
    for (int i = 0; i < 64; i++) in[i] = i;
    if (rank == 0) MPI_Scatter(in, 8, MPI_DOUBLE, out, 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, out, 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++) if (out[i] != rank * 8 + i) bad++;

    /* Alltoall: rank r sends column j of its table to rank j (a vector
     * type), and receives contiguous blocks. */
    for (int i = 0; i < 120 * 8; i++) table[i] = 100000 * rank + i;
    double got[12 * 8];
    MPI_Alltoall(table, 1, block, got, 12, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 12; i++) if (got[r * 12 + i] != 100000 * r + i * 10 + rank) bad++;

    MPI_Type_free(&block);
    MPI_Type_free(&strided);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("layouts: %s\n", all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
