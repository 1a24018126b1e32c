/* Whether a network carries pairs exchanging at once as fast as a ring:
 * every rank sends N bytes and receives N (MPI_Sendrecv), first with
 * partner rank ^ 1, ^ 2, ^ 4 (recursive doubling's steps), then to its
 * right neighbour and from its left (a ring's step). Rank 0 prints the
 * least and the mean of REPS times of each, barriers around every one.
 *
 *   mpicc -O2 -o pairs crates/autocoll-mpi/bench/pairs.c
 *   target/cluster/star8/mpirun -n 8 ./pairs [N] [REPS]   (default 1 MiB, 4)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Seconds of one exchange with `to` and `from`, all ranks in step. */
static double exchange(char *out, char *in, int n, int to, int from)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Sendrecv(out, n, MPI_BYTE, to, 0, in, n, MPI_BYTE, from, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 1 << 20, reps = argc > 2 ? atoi(argv[2]) : 4;
    char *out = calloc((size_t)n, 1), *in = calloc((size_t)n, 1);
    if (size & (size - 1)) {
        if (rank == 0)
            fprintf(stderr, "pairs: %d ranks; the pairs need a power of two\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* step < size: the partner rank ^ step; step == size: the ring. */
    for (int step = 1; step <= size; step <<= 1) {
        int ring = step == size;
        int to = ring ? (rank + 1) % size : rank ^ step;
        int from = ring ? (rank + size - 1) % size : rank ^ step;
        double least = 1e300, sum = 0;
        for (int r = 0; r < reps; r++) {
            double t = exchange(out, in, n, to, from);
            sum += t;
            least = t < least ? t : least;
        }
        if (rank == 0 && ring)
            printf("pairs: ring       %d B: least %.4f s, mean %.4f s\n", n, least, sum / reps);
        else if (rank == 0)
            printf("pairs: rank ^ %-3d %d B: least %.4f s, mean %.4f s\n", step, n, least, sum / reps);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
