/* The communication kernels of examples/kernel.rs as an MPI program, for
 * the mapping experiments under Open MPI (`mpirun --rankfile`):
 *
 *   kernel_mpi ring|halo2d|halo3d|ladder|multigrid ITERS BYTES
 *
 * The same neighbours and bytes as the Rust kernel; every iteration posts
 * a receive from and a send to every neighbour and waits for all. Rank 0
 * prints `kernel=NAME ranks=N iters=I bytes=B secs=T`, T the slowest
 * rank's time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64
#define TAG 19

static int npeers;
static int peer[MAXN];
static int len[MAXN];

static void add(int p, int l, int rank) {
    if (p != rank && npeers < MAXN) {
        peer[npeers] = p;
        len[npeers] = l;
        npeers++;
    }
}

/* Sides of a grid of n in d dimensions, as equal as n allows, largest first. */
static void grid(int n, int d, int *sides) {
    int factors[32], nf = 0, rest = n;
    for (int f = 2; rest > 1; f++)
        while (rest % f == 0) {
            factors[nf++] = f;
            rest /= f;
        }
    for (int i = 0; i < d; i++) sides[i] = 1;
    for (int i = nf - 1; i >= 0; i--) {
        int s = 0;
        for (int j = 1; j < d; j++)
            if (sides[j] < sides[s]) s = j;
        sides[s] *= factors[i];
    }
    for (int i = 0; i < d; i++) /* largest first */
        for (int j = i + 1; j < d; j++)
            if (sides[j] > sides[i]) {
                int t = sides[i];
                sides[i] = sides[j];
                sides[j] = t;
            }
}

static void grid_neighbours(int rank, const int *sides, int d, int stride, int l) {
    int coord[3], r = rank;
    for (int i = 0; i < d; i++) {
        coord[i] = r % sides[i];
        r /= sides[i];
    }
    for (int i = 0; i < d; i++)
        if (coord[i] % stride) return;
    for (int axis = 0; axis < d; axis++)
        for (int forward = 0; forward < 2; forward++) {
            int c[3];
            memcpy(c, coord, sizeof c);
            if (!forward && c[axis] >= stride) c[axis] -= stride;
            else if (forward && c[axis] + stride < sides[axis]) c[axis] += stride;
            else continue;
            int index = 0;
            for (int i = d - 1; i >= 0; i--) index = index * sides[i] + c[i];
            add(index, l, rank);
        }
}

static int neighbours(const char *name, int rank, int n, int bytes) {
    int sides[3];
    if (!strcmp(name, "ring")) {
        add((rank + n - 1) % n, bytes, rank);
        add((rank + 1) % n, bytes, rank);
    } else if (!strcmp(name, "halo2d")) {
        grid(n, 2, sides);
        grid_neighbours(rank, sides, 2, 1, bytes);
    } else if (!strcmp(name, "halo3d")) {
        grid(n, 3, sides);
        grid_neighbours(rank, sides, 3, 1, bytes);
    } else if (!strcmp(name, "ladder")) {
        int half = n / 2 > 0 ? n / 2 : 1, rail = rank / half, at = rank % half;
        add((rank + n / 2) % n, bytes * 7 / 4, rank);
        if (at > 0) add(rail * half + at - 1, bytes, rank);
        if (at + 1 < half) add(rail * half + at + 1, bytes, rank);
    } else if (!strcmp(name, "multigrid")) {
        grid(n, 2, sides);
        grid_neighbours(rank, sides, 2, 1, bytes);
        grid_neighbours(rank, sides, 2, 2, bytes / 4);
        grid_neighbours(rank, sides, 2, 4, bytes / 16);
    } else {
        return 0;
    }
    return 1;
}

static void exchange(char **out, char **in, MPI_Request *req) {
    for (int i = 0; i < npeers; i++)
        MPI_Irecv(in[i], len[i], MPI_CHAR, peer[i], TAG, MPI_COMM_WORLD, &req[i]);
    for (int i = 0; i < npeers; i++)
        MPI_Isend(out[i], len[i], MPI_CHAR, peer[i], TAG, MPI_COMM_WORLD, &req[npeers + i]);
    MPI_Waitall(2 * npeers, req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4 || !neighbours(argv[1], rank, n, atoi(argv[3]))) {
        if (rank == 0) fprintf(stderr, "usage: kernel_mpi ring|halo2d|halo3d|ladder|multigrid ITERS BYTES\n");
        MPI_Finalize();
        return 2;
    }
    int iters = atoi(argv[2]);
    char *out[MAXN], *in[MAXN];
    MPI_Request req[2 * MAXN];
    for (int i = 0; i < npeers; i++) {
        out[i] = calloc(len[i] + 1, 1);
        in[i] = calloc(len[i] + 1, 1);
    }
    exchange(out, in, req); /* untimed: connections are made on first use */
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < iters; it++) exchange(out, in, req);
    double mine = MPI_Wtime() - start, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("kernel=%s ranks=%d iters=%d bytes=%s secs=%.6f\n", argv[1], n, iters, argv[3], slowest);
    for (int i = 0; i < npeers; i++) {
        free(out[i]);
        free(in[i]);
    }
    MPI_Finalize();
    return 0;
}
