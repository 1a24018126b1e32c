/* Communicators made one after another, as benchmarks and libraries make
 * them: N duplicates of the world and N splits into halves, one at a
 * time, each running K allreduces of 1 KiB and freed. Rank 0 prints
 * "shapes: dup_s=S" where S is the time the ranks spent in the
 * duplicates' allreduces (each rank's own time, the mean over ranks,
 * summed over calls): what the lottery of the world's shape saw. A
 * barrier on the world comes first, untimed, as a program's set-up: the
 * library's one-off start-up work (the machine's probe) is done there. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* K allreduces of 256 floats on `comm`; this rank's seconds in them. */
static double allreduces(MPI_Comm comm, int k, int *wrong)
{
    float in[256], out[256];
    int n;
    MPI_Comm_size(comm, &n);
    for (int i = 0; i < 256; i++) in[i] = (float)i;
    double spent = 0;
    for (int c = 0; c < k; c++) {
        double t = MPI_Wtime();
        MPI_Allreduce(in, out, 256, MPI_FLOAT, MPI_SUM, comm);
        spent += MPI_Wtime() - t;
        *wrong += out[255] != 255.0f * n;
    }
    return spent;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, wrong = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 4, k = argc > 2 ? atoi(argv[2]) : 400;
    double dup_s = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        dup_s += allreduces(c, k, &wrong);
        MPI_Comm_free(&c);
        MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &c);
        allreduces(c, k, &wrong);
        MPI_Comm_free(&c);
    }
    double sum = 0;
    int all_wrong = 0;
    MPI_Reduce(&dup_s, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("shapes: dup_s=%.9f wrong=%d\n", sum / size, all_wrong);
    MPI_Finalize();
    return all_wrong != 0;
}
