/* A ring exchange of known sizes through every kind of send, for the
 * pattern file: to the right on MPI_COMM_WORLD, to the left through a
 * communicator in reversed order (its ranks must come out as world's). */
#include <mpi.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char big[1000], in[1000], tiny[3], tin[3];
    int ten[10], tenin[10];
    double eight[8], eightin[8];
    memset(big, rank, sizeof big); memset(tiny, rank, sizeof tiny);
    memset(ten, 0, sizeof ten); memset(eight, 0, sizeof eight);
    for (int i = 0; i < 2; i++)
        MPI_Sendrecv(big, 1000, MPI_CHAR, right, 1, in, 1000, MPI_CHAR, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request r[2];
    MPI_Irecv(tenin, 10, MPI_INT, left, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(ten, 10, MPI_INT, right, 2, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Sendrecv(eight, 8, MPI_DOUBLE, right, 3, eightin, 8, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request p;
    MPI_Send_init(tiny, 3, MPI_CHAR, right, 4, MPI_COMM_WORLD, &p);
    for (int i = 0; i < 2; i++) {
        MPI_Start(&p);
        MPI_Recv(tin, 3, MPI_CHAR, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&p);
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    int rr;
    MPI_Comm_rank(reversed, &rr);
    /* Reversed rank rr + 1 is world rank `left`. */
    MPI_Sendrecv(big, 100, MPI_CHAR, (rr + 1) % size, 5, in, 100, MPI_CHAR, (rr + size - 1) % size, 5, reversed, MPI_STATUS_IGNORE);
    double v = rank, sum;
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&reversed);
    MPI_Finalize();
    return 0;
}
