/* Wildcard receives interleaved with collectives: the library's messages
 * run on its private communicator and must never match them. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = 0;
    for (int round = 0; round < 50; round++) {
        if (rank != 0) {
            int msg[2] = { rank, round };
            MPI_Send(msg, 2, MPI_INT, 0, 7, MPI_COMM_WORLD);
        }
        double v = rank + round, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (sum != size * (size - 1) / 2.0 + size * round) bad++;
        int data[64];
        for (int i = 0; i < 64; i++) data[i] = rank == round % size ? round * 64 + i : -1;
        MPI_Bcast(data, 64, MPI_INT, round % size, MPI_COMM_WORLD);
        for (int i = 0; i < 64; i++) if (data[i] != round * 64 + i) bad++;
        if (rank == 0) {
            for (int k = 1; k < size; k++) {
                int msg[2];
                MPI_Status st;
                MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                if (st.MPI_TAG != 7 || msg[1] != round || msg[0] != st.MPI_SOURCE) bad++;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("wildcard: %s (%d wrong)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all != 0;
}
