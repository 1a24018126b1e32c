/* Communicators freed and made again, of other sizes and orders, with a
 * collective on each: a new communicator may get a freed one's handle,
 * and the library must not take it for the one it remembers (it keeps
 * the last communicator's rank, size and state to skip its checks).
 * Prints "reuse: ok (N wrong, M handles reused)" on rank 0. */
#include <mpi.h>
#include <stdio.h>

/* Sum of the ranks' (rank + 1) * 10 over `comm`, against the formula. */
static int wrong_sum(MPI_Comm comm)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long mine = (r + 1) * 10L, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm);
    int root_data[2] = { -1, -1 };
    if (r == n - 1) { root_data[0] = n; root_data[1] = r; }
    MPI_Bcast(root_data, 2, MPI_INT, n - 1, comm);
    return (sum != 10L * n * (n + 1) / 2) + (root_data[0] != n) + (root_data[1] != n - 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = wrong_sum(MPI_COMM_WORLD), reused = 0;
    MPI_Comm last = MPI_COMM_NULL;
    for (int i = 0; i < 12; i++) {
        MPI_Comm c;
        /* Halves (another size, another rank), whole reversed, a dup. */
        if (i % 3 == 0) MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
        else if (i % 3 == 1) MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c);
        else MPI_Comm_dup(MPI_COMM_WORLD, &c);
        reused += c == last;
        /* Only c: it is the remembered one when it is freed, and the
         * next call is on the next communicator (often at its handle). */
        bad += wrong_sum(c);
        last = c;
        MPI_Comm_free(&c);
    }
    int all = 0, all_reused = 0;
    bad += wrong_sum(MPI_COMM_WORLD);
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&reused, &all_reused, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("reuse: %s (%d wrong, %d handles reused)\n", all ? "FAILED" : "ok", all, all_reused);
    MPI_Finalize();
    return 0;
}
