/* An intercommunicator and a reduction over a vector datatype: both must
 * reach the MPI library unchanged (the summary counts them) and give MPI's
 * results. */
#include <mpi.h>
#include <stdio.h>

/* Sums the elements of a vector(8, 1, 2) of ints. */
static void add_strided(void *in, void *inout, int *len, MPI_Datatype *t)
{
    for (int k = 0; k < *len; k++)
        for (int i = 0; i < 8; i++) ((int *)inout)[16 * k + 2 * i] += ((int *)in)[16 * k + 2 * i];
    (void)t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm half, inter;
    int color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 99, &inter);
    int v = rank, got = -1;
    /* Group 0's rank 0 broadcasts to group 1. */
    int hrank;
    MPI_Comm_rank(half, &hrank);
    int root = color == 0 ? (hrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Bcast(color == 0 ? &v : &got, 1, MPI_INT, root, inter);
    int bad = color == 1 && got != 0;

    /* A reduction over a non-contiguous type: autocoll's combining works
     * on one block per element, so it goes to MPI. */
    MPI_Datatype every_other;
    MPI_Type_vector(8, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Op add;
    MPI_Op_create(add_strided, 1, &add);
    int in[16], out[16];
    for (int i = 0; i < 16; i++) { in[i] = rank + i; out[i] = -1; }
    MPI_Allreduce(in, out, 1, every_other, add, MPI_COMM_WORLD);
    for (int i = 0; i < 16; i++)
        if (out[i] != (i % 2 == 0 ? size * (size - 1) / 2 + size * i : -1)) bad++;
    MPI_Op_free(&add);
    MPI_Type_free(&every_other);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("passthrough: %s\n", all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
