/*
 * osu_coll: an OSU-style latency benchmark of MPI's collectives, to measure
 * them with and without libautocoll_mpi.so preloaded (scripts/mpi-preload-bench).
 *
 *   osu_coll [--paired=BLOCK] OP MINBYTES MAXBYTES [ITERS] [WARMUP]
 *
 * OP: bcast reduce allreduce gather scatter allgather barrier, or all.
 * Sizes: the powers of two from MINBYTES to MAXBYTES (a size may end in K
 * or M: 1024 or 1048576 bytes; 1 to 4M when both are left out, e.g.
 * `osu_coll bcast`). ITERS (default 1000) iterations after WARMUP (default
 * 100) untimed ones; above 64 KiB a tenth of each (at least 1), as OSU does.
 *
 * Every iteration is preceded by MPI_Barrier and only the collective is
 * timed (MPI_Wtime). A rank's time per call is its mean over the
 * iterations; rank 0 prints per size the mean of that over the ranks
 * (MPI_Reduce SUM / size, as OSU), its minimum and its maximum:
 *
 *   # op bytes avg_us min_us max_us iters
 *   bcast 1024 3.412 3.101 3.723 1000
 *
 * Bytes are per rank: the message of bcast, reduce and allreduce, what
 * each rank sends in gather and allgather and receives in scatter.
 * Reductions are MPI_SUM over MPI_DOUBLE of max(1, bytes / 8) elements
 * (the printed size is the one asked for). The root is rank 0. The result
 * of the last iteration is checked; a wrong one aborts the job with a
 * message. barrier prints one line, with bytes 0.
 *
 * --paired=BLOCK measures, in one run, the collective as the program calls
 * it (MPI_: a preloaded library's when there is one) against the MPI
 * library's own (PMPI_, past any wrapper): ITERS calls of each, in blocks
 * of BLOCK that alternate (the side that goes first alternates from pair
 * to pair), every call after a PMPI_Barrier. Rank 0 prints per pair of
 * blocks the mean over ranks of each block's time per call:
 *
 *   # op bytes pair with_us without_us
 *   allgather 4 1 301.220 297.804
 *
 * Without a preloaded library both sides are the MPI library's: the
 * run's A/A check. The results of both sides' last calls are checked.
 */
#include "bench.h"
#include <mpi.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, BARRIER, NOPS };
static const char *const names[NOPS] = {"bcast",   "reduce",    "allreduce", "gather",
                                        "scatter", "allgather", "barrier"};

#define LARGE (64 * 1024)
#define MAXSIZE ((size_t)1 << 30)

static int rank, nprocs;

static void usage(const char *why)
{
    if (rank == 0) {
        fprintf(stderr, "osu_coll: %s\n", why);
        fprintf(stderr,
                "usage: osu_coll [--paired=BLOCK] OP [MINBYTES MAXBYTES [ITERS [WARMUP]]]\n"
                "  OP: bcast reduce allreduce gather scatter allgather barrier all\n"
                "  sizes: powers of two, optionally with K or M (default 1 to 4M)\n"
                "  ITERS default 1000, WARMUP default 100 (a tenth above 64K)\n");
    }
    MPI_Finalize();
    exit(2);
}

/* A size: digits, optionally followed by K or M (binary); 0 if malformed. */
static size_t parse_size(const char *s)
{
    int ok;
    return bench_size(s, MAXSIZE, &ok);
}

static long parse_count(const char *s, const char *what, long min)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < min) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be an integer >= %ld, not '%s'", what, min, s);
        usage(msg);
    }
    return v;
}

static void *xmalloc(size_t n)
{
    return bench_alloc("osu_coll", rank, n);
}

static void wrong(enum op op, size_t bytes, size_t at, double got, double want)
{
    fprintf(stderr,
            "osu_coll: %s %zu B: wrong result at rank %d, element %zu: %g instead of %g\n",
            names[op], bytes, rank, at, got, want);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(size_t i, int who, int salt)
{
    return (unsigned char)(i * 7 + (size_t)who * 31 + (size_t)salt);
}

/* One call of OP through the prefix P: MPI_ reaches a preloaded library's
 * wrapper, PMPI_ the MPI library's own collective past any wrapper. */
#define CALL(P)                                                                             \
    switch (op) {                                                                           \
    case BCAST:                                                                             \
        P##Bcast(s, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);                               \
        break;                                                                              \
    case REDUCE:                                                                            \
        P##Reduce(s, r, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);                     \
        break;                                                                              \
    case ALLREDUCE:                                                                         \
        P##Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);                     \
        break;                                                                              \
    case GATHER:                                                                            \
        P##Gather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);     \
        break;                                                                              \
    case SCATTER:                                                                           \
        P##Scatter(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);    \
        break;                                                                              \
    case ALLGATHER:                                                                         \
        P##Allgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);     \
        break;                                                                              \
    case BARRIER:                                                                           \
        P##Barrier(MPI_COMM_WORLD);                                                         \
        break;                                                                              \
    default:                                                                                \
        abort();                                                                            \
    }

/* Runs one collective once; NATIVE calls PMPI_ (the MPI library's own). */
static void call(enum op op, int native, void *s, void *r, size_t bytes, int count)
{
    if (native) {
        CALL(PMPI_)
    } else {
        CALL(MPI_)
    }
}

/* Fills the buffers before the last iteration, so that its result shows
 * the collective did its work (the receive buffers are cleared). */
static void prepare(enum op op, unsigned char *s, unsigned char *r, size_t bytes, int count)
{
    size_t n = (size_t)nprocs;
    switch (op) {
    case BCAST:
        for (size_t i = 0; i < bytes; i++)
            s[i] = rank == 0 ? pattern(i, 0, 1) : 0xee;
        break;
    case REDUCE:
    case ALLREDUCE:
        for (int i = 0; i < count; i++)
            ((double *)s)[i] = rank + i % 7;
        memset(r, 0, (size_t)count * sizeof(double));
        break;
    case GATHER:
    case ALLGATHER:
        for (size_t i = 0; i < bytes; i++)
            s[i] = pattern(i, rank, 2);
        memset(r, 0xee, bytes * n);
        break;
    case SCATTER:
        if (rank == 0)
            for (size_t k = 0; k < n; k++)
                for (size_t i = 0; i < bytes; i++)
                    s[k * bytes + i] = pattern(i, (int)k, 3);
        memset(r, 0xee, bytes);
        break;
    default:
        break;
    }
}

static void check(enum op op, unsigned char *s, unsigned char *r, size_t bytes, int count)
{
    size_t n = (size_t)nprocs;
    switch (op) {
    case BCAST:
        for (size_t i = 0; i < bytes; i++)
            if (s[i] != pattern(i, 0, 1))
                wrong(op, bytes, i, s[i], pattern(i, 0, 1));
        break;
    case REDUCE:
    case ALLREDUCE:
        if (op == REDUCE && rank != 0)
            break;
        for (int i = 0; i < count; i++) {
            double want = (double)n * (double)(n - 1) / 2 + (double)n * (i % 7);
            if (((double *)r)[i] != want)
                wrong(op, bytes, (size_t)i, ((double *)r)[i], want);
        }
        break;
    case GATHER:
    case ALLGATHER:
        if (op == GATHER && rank != 0)
            break;
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < bytes; i++)
                if (r[k * bytes + i] != pattern(i, (int)k, 2))
                    wrong(op, bytes, k * bytes + i, r[k * bytes + i], pattern(i, (int)k, 2));
        break;
    case SCATTER:
        for (size_t i = 0; i < bytes; i++)
            if (r[i] != pattern(i, rank, 3))
                wrong(op, bytes, i, r[i], pattern(i, rank, 3));
        break;
    default:
        break;
    }
}

/* Runs N timed calls of OP, each after a barrier, and returns their total
 * time in seconds; VERIFY fills the buffers before the last call and checks
 * its result. NATIVE: the calls go to PMPI_, past any wrapper; otherwise to
 * MPI_, as a program's would. PMPI_SYNC: the barriers go to PMPI_ (the
 * paired run's two sides then differ in the timed calls alone: a library's
 * barrier leaves the ranks at other moments, which the next call's time
 * shows); otherwise to MPI_. */
static double block(enum op op, int native, int pmpi_sync, unsigned char *s, unsigned char *r,
                    size_t bytes, int count, long n, int verify)
{
    double total = 0;
    for (long i = 0; i < n; i++) {
        if (verify && i == n - 1)
            prepare(op, s, r, bytes, count);
        if (pmpi_sync)
            PMPI_Barrier(MPI_COMM_WORLD);
        else
            MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        call(op, native, s, r, bytes, count);
        total += MPI_Wtime() - t0;
    }
    if (verify)
        check(op, s, r, bytes, count);
    return total;
}

/* Prints the mean over ranks of MINE (us per call), its minimum and maximum. */
static void report(enum op op, size_t bytes, double mine, long iters)
{
    double sum = 0, lo = 0, hi = 0;
    PMPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %zu %.3f %.3f %.3f %ld\n", names[op], bytes, sum / nprocs, lo, hi, iters);
}

/* Paired: blocks of BLOCK calls through MPI_ and through PMPI_ alternate
 * (which goes first alternates too), so that what the machine does over
 * milliseconds and more hits both alike; every barrier is PMPI_'s. Prints
 * per pair of blocks the mean over ranks of each side's time per call. */
static void paired(enum op op, unsigned char *s, unsigned char *r, size_t bytes, int count,
                   long iters, long warmup, long blocksize)
{
    long pairs = (iters + blocksize - 1) / blocksize;
    double *mine = xmalloc(2 * (size_t)pairs * sizeof(double));
    double *sum = xmalloc(2 * (size_t)pairs * sizeof(double));
    block(op, 0, 1, s, r, bytes, count, warmup, 0);
    block(op, 1, 1, s, r, bytes, count, warmup, 0);
    for (long p = 0; p < pairs; p++) {
        long n = iters - p * blocksize < blocksize ? iters - p * blocksize : blocksize;
        for (int k = 0; k < 2; k++) {
            int native = (int)((p + k) % 2);
            mine[2 * p + native] = block(op, native, 1, s, r, bytes, count, n, p == pairs - 1) / n * 1e6;
        }
    }
    PMPI_Reduce(mine, sum, (int)(2 * pairs), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (long p = 0; p < pairs; p++)
            printf("%s %zu %ld %.3f %.3f\n", names[op], bytes, p + 1, sum[2 * p] / nprocs,
                   sum[2 * p + 1] / nprocs);
    free(mine);
    free(sum);
}

/* BLOCKSIZE 0: the plain latency run; otherwise paired. */
static void run(enum op op, size_t min, size_t max, long iters0, long warmup0, long blocksize)
{
    size_t n = (size_t)nprocs;
    size_t top = op == BARRIER ? 0 : max;
    /* Buffers for the largest size: doubles for reductions, nprocs blocks
     * where a rank holds everyone's. */
    size_t cap = (top < 8 ? 8 : top) * ((op == GATHER || op == SCATTER || op == ALLGATHER) ? n : 1);
    unsigned char *s = xmalloc(cap), *r = xmalloc(cap);
    memset(s, 0, cap);
    memset(r, 0, cap);

    for (size_t bytes = op == BARRIER ? 0 : min; bytes <= top;) {
        long iters = bytes > LARGE ? iters0 / 10 : iters0;
        long warmup = bytes > LARGE ? warmup0 / 10 : warmup0;
        if (iters < 1)
            iters = 1;
        int count = bytes / 8 ? (int)(bytes / 8) : 1;

        prepare(op, s, r, bytes, count);
        if (blocksize > 0) {
            paired(op, s, r, bytes, count, iters, warmup, blocksize);
        } else {
            block(op, 0, 0, s, r, bytes, count, warmup, 0);
            double total = block(op, 0, 0, s, r, bytes, count, iters, 1);
            report(op, bytes, total / iters * 1e6, iters);
        }
        if (rank == 0)
            fflush(stdout);
        if (bytes == top)
            break;
        bytes *= 2;
    }
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    long blocksize = 0;
    if (argc >= 2 && strncmp(argv[1], "--paired=", 9) == 0) {
        blocksize = parse_count(argv[1] + 9, "--paired=BLOCK", 1);
        argv++;
        argc--;
    }
    if (argc < 2 || argc == 3 || argc > 6)
        usage("wrong number of arguments");
    int first = -1, last = -1;
    if (strcmp(argv[1], "all") == 0) {
        first = 0;
        last = NOPS - 1;
    } else {
        for (int i = 0; i < NOPS; i++)
            if (strcmp(argv[1], names[i]) == 0)
                first = last = i;
    }
    if (first < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown OP '%.60s'", argv[1]);
        usage(msg);
    }
    size_t min = 1, max = (size_t)4 << 20;
    if (argc >= 4) {
        min = parse_size(argv[2]);
        max = parse_size(argv[3]);
        if (min == 0 || max == 0)
            usage("MINBYTES and MAXBYTES must be sizes from 1 to 1G (digits, optionally K or M)");
        if ((min & (min - 1)) || (max & (max - 1)))
            usage("MINBYTES and MAXBYTES must be powers of two");
        if (min > max)
            usage("MINBYTES is larger than MAXBYTES");
    }
    long iters = argc >= 5 ? parse_count(argv[4], "ITERS", 1) : 1000;
    long warmup = argc >= 6 ? parse_count(argv[5], "WARMUP", 0) : 100;
    if ((max > (size_t)INT32_MAX / (size_t)nprocs) && max > 8) {
        /* gather's root buffer holds nprocs blocks; counts are ints */
        usage("MAXBYTES times the number of ranks exceeds what an int count holds");
    }

    if (rank == 0) {
        printf("# osu_coll: %d ranks, %ld iterations after %ld warm-up (a tenth above %d B)\n",
               nprocs, iters, warmup, LARGE);
        if (blocksize > 0)
            printf("# paired: blocks of %ld calls through MPI_ (with) and PMPI_ (without) "
                   "alternate\n# op bytes pair with_us without_us\n",
                   blocksize);
        else
            printf("# op bytes avg_us min_us max_us iters\n");
        fflush(stdout);
    }
    for (int op = first; op <= last; op++)
        run((enum op)op, min, max, iters, warmup, blocksize);
    MPI_Finalize();
    return 0;
}
