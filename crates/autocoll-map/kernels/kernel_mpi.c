/* The communication kernels of examples/kernel.rs as an MPI program, for
 * the mapping experiments under Open MPI (`mpirun --rankfile`) and the
 * learning experiments (`autocoll mpirun --learn`):
 *
 *   kernel_mpi ring|halo2d|halo3d|ladder|multigrid ITERS BYTES
 *              [-s SEED] [-c BYTES]
 *
 * The same neighbours and bytes as the Rust kernel; every iteration posts
 * a receive from and a send to every neighbour and waits for all.
 * -s SEED shuffles the rank order: the kernel's rank k is the MPI rank
 * that a permutation drawn from SEED puts there, as a program that
 * numbers its domains its own way would be (SEED 0 keeps the order).
 * -c BYTES adds a collective phase to every iteration: an MPI_Allreduce
 * (sum of doubles) and an MPI_Bcast from rank 0 of BYTES each.
 * Rank 0 prints `kernel=NAME ranks=N iters=I bytes=B secs=T`, T the
 * slowest rank's time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64
#define TAG 19

static int npeers;
static int peer[MAXN];
static int len[MAXN];
/* The MPI rank of each kernel rank (the identity unless -s). */
static int *rank_of;

static void add(int p, int l, int rank) {
    if (p != rank && npeers < MAXN) {
        peer[npeers] = rank_of[p];
        len[npeers] = l;
        npeers++;
    }
}

/* rank_of as a permutation of n drawn from seed (Fisher-Yates over a
 * 64-bit xorshift), the same on every rank. */
static void shuffle(int n, unsigned long long seed) {
    rank_of = malloc(n * sizeof *rank_of);
    for (int i = 0; i < n; i++) rank_of[i] = i;
    unsigned long long x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int i = n - 1; seed && i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int j = (int)(x % (unsigned long long)(i + 1)), t = rank_of[i];
        rank_of[i] = rank_of[j];
        rank_of[j] = t;
    }
}

/* The kernel rank MPI rank `rank` plays. */
static int kernel_rank(int rank, int n) {
    for (int k = 0; k < n; k++)
        if (rank_of[k] == rank) return k;
    return rank;
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

/* The collective phase of one iteration: an allreduce and a broadcast. */
static void collectives(double *sum, double *mine, char *root_data, int bytes) {
    int count = bytes / (int)sizeof(double);
    if (count > 0) MPI_Allreduce(mine, sum, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(root_data, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* Reads -s SEED and -c BYTES after the three positional arguments;
 * 0 on anything else. */
static int options(int argc, char **argv, unsigned long long *seed, int *coll) {
    for (int i = 4; i < argc; i += 2) {
        if (i + 1 >= argc) return 0;
        if (!strcmp(argv[i], "-s")) *seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "-c")) *coll = atoi(argv[i + 1]);
        else return 0;
    }
    return *coll >= 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n, coll = 0;
    unsigned long long seed = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int good = argc >= 4 && options(argc, argv, &seed, &coll);
    if (good) shuffle(n, seed);
    if (!good || !neighbours(argv[1], kernel_rank(rank, n), n, atoi(argv[3]))) {
        if (rank == 0)
            fprintf(stderr, "usage: kernel_mpi ring|halo2d|halo3d|ladder|multigrid ITERS BYTES [-s SEED] [-c BYTES]\n");
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
    double *sum = calloc(coll / sizeof(double) + 1, sizeof(double));
    double *part = calloc(coll / sizeof(double) + 1, sizeof(double));
    char *root_data = calloc(coll + 1, 1);
    /* untimed: connections are made on first use */
    exchange(out, in, req);
    if (coll) collectives(sum, part, root_data, coll);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        exchange(out, in, req);
        if (coll) collectives(sum, part, root_data, coll);
    }
    double mine = MPI_Wtime() - start, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("kernel=%s ranks=%d iters=%d bytes=%s secs=%.6f\n", argv[1], n, iters, argv[3], slowest);
    for (int i = 0; i < npeers; i++) {
        free(out[i]);
        free(in[i]);
    }
    free(sum);
    free(part);
    free(root_data);
    free(rank_of);
    MPI_Finalize();
    return 0;
}
