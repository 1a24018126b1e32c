/*
 * native_cost: what a call to MPI_Bcast (8 bytes), MPI_Allreduce (1 double,
 * SUM) and MPI_Barrier costs, in nanoseconds per call: on 1 rank nearly
 * all of it is the call itself, so run with and without libautocoll_mpi.so
 * preloaded (AUTOCOLL_SELECT=native) the difference is what interposition
 * costs (scripts/mpi-preload-bench --native-cost).
 *
 *   native_cost N
 *
 * Each collective is called N / 10 times untimed, then N times timed as a
 * whole with MPI_Wtime. On more than 1 rank the slowest rank's figure is
 * printed. Rank 0 prints:
 *
 *   # op ns_per_call calls ranks
 *   bcast 41.3 1000000 1
 */
#include <mpi.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static double timed(int which, long n)
{
    double x = 1.0, y = 0.0;
    char buf[8] = "autocoll";
    double t0 = 0;
    for (long i = -(n / 10); i < n; i++) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        switch (which) {
        case 0:
            MPI_Bcast(buf, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
            break;
        case 1:
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            break;
        default:
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        }
    }
    double ns = (MPI_Wtime() - t0) / (double)n * 1e9;
    if ((which == 0 && memcmp(buf, "autocoll", 8) != 0) || (which == 1 && y != (double)nprocs)) {
        fprintf(stderr, "native_cost: rank %d: wrong result of %s\n", rank,
                which == 0 ? "MPI_Bcast" : "MPI_Allreduce");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double worst = 0;
    MPI_Reduce(&ns, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    char *end = NULL;
    errno = 0;
    long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;
    if (argc != 2 || end == argv[1] || *end != '\0' || errno != 0 || n < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: native_cost N   (N >= 1 calls of each collective)\n");
        MPI_Finalize();
        return 2;
    }
    static const char *const names[] = {"bcast", "allreduce", "barrier"};
    if (rank == 0)
        printf("# op ns_per_call calls ranks\n");
    for (int which = 0; which < 3; which++) {
        double ns = timed(which, n);
        if (rank == 0)
            printf("%s %.1f %ld %d\n", names[which], ns, n, nprocs);
    }
    MPI_Finalize();
    return 0;
}
