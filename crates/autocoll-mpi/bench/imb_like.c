/*
 * imb_like: MPI's collectives measured the way the Intel MPI Benchmarks
 * (IMB-MPI1) measure them, to run unmodified with and without
 * libautocoll_mpi.so preloaded (scripts/preload-imb). Written for autocoll
 * after IMB's documented method; no code of IMB's.
 *
 *   imb_like [-ops LIST] [-min BYTES] [-max BYTES] [-sizes LIST]
 *            [-iter N] [-time SECS]
 *
 * -ops LIST   comma list of bcast reduce allreduce allgather gather scatter
 *             barrier alltoall scan exscan reduce_scatter_block gatherv
 *             scatterv allgatherv alltoallv (any case, e.g. Bcast), or all
 *             (default), run in that order (IMB's, then the eight after it)
 * -min BYTES  smallest size (default 1), -max BYTES the largest (default
 *             4M): the powers of two between; a size may end in K or M
 * -sizes LIST comma list of sizes instead (0 allowed)
 * -iter N     repetitions at most per size (default 1000)
 * -time SECS  time per size at most (default 1.0)
 *
 * Each benchmark (one collective) runs on a communicator of its own, made
 * for it and freed after it, as IMB and real programs make them: an
 * MPI_Comm_split(MPI_COMM_WORLD, 0, rank) for bcast, allreduce, gather and
 * barrier (the even places of the list above), an MPI_Comm_dup of such a
 * split for reduce, allgather and scatter (the odd places; the split is
 * freed with the dup at the end). Which kind goes with which collective
 * does not depend on -ops.
 *
 * Sizes are per rank: the message of bcast, reduce, allreduce and the
 * scans, what each rank sends in gather and allgather and receives in
 * scatter, the block each rank sends each other in alltoall, as
 * MPI_BYTE, and the block each rank gets in reduce_scatter_block (of a
 * vector of P blocks; IMB names the vector). The v-forms move the same
 * bytes as their regular forms, every rank's count the same and the
 * blocks packed, as IMB's do. Reductions (scans and
 * reduce_scatter_block too) are MPI_SUM over MPI_FLOAT, count = bytes / 4, as
 * IMB's: sizes that are not a multiple of 4 (1 and 2 of the default list)
 * are skipped for them, as IMB skips them. barrier has one point, 0 bytes.
 *
 * Repetitions, per size: -iter, capped as IMB caps them by an overall
 * volume of 40 MiB (reps <= 40 MiB / bytes), then by the time: one untimed
 * call, then up to 3 timed calls (the warm-up), whose slowest rank's mean
 * t gives reps <= -time / t; at least 1. Every rank takes the same count
 * (the minimum over ranks, agreed by PMPI_Allreduce).
 *
 * IMB's method: MPI_Barrier (twice), then reps calls back to back, timed
 * with MPI_Wtime on each rank; rooted collectives rotate the root, call i
 * at root i % size. A rank's t is its elapsed time / reps; rank 0 prints
 * per size the minimum, maximum and mean of t over the ranks (PMPI_Reduce
 * after the timed loop, so not measured):
 *
 *   # imb_like ranks=8
 *   # op bytes reps t_min_us t_max_us t_avg_us
 *   bcast 1024 1000 21.114 33.870 27.402
 *
 * After each size's timed loop, one more call (root reps % size) on
 * buffers filled for it is checked on every rank (bcast's content, the
 * reductions' and scans' sums, gather's and allgather's order, scatter's
 * and alltoall's blocks; exscan's rank 0, undefined in MPI, is not): a
 * wrong result is said on stderr, and every rank exits with status 1.
 * The barrier, the warm-up and the checked call go through MPI_ (a
 * preloaded library's), as a program's would; the bookkeeping (agreeing
 * on reps, collecting times, agreeing on a failed check) through PMPI_.
 */
#include "bench.h"
#include <mpi.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op {
    BCAST, REDUCE, ALLREDUCE, ALLGATHER, GATHER, SCATTER, BARRIER, ALLTOALL, SCAN, EXSCAN,
    REDUCE_SCATTER, GATHERV, SCATTERV, ALLGATHERV, ALLTOALLV, NOPS
};
static const char *const names[NOPS] = {"bcast",    "reduce",     "allreduce", "allgather",
                                        "gather",   "scatter",    "barrier",   "alltoall",
                                        "scan",     "exscan",     "reduce_scatter_block",
                                        "gatherv",  "scatterv",   "allgatherv", "alltoallv"};

#define OVERALL_VOL ((size_t)40 << 20) /* IMB's overall volume per size */
#define N_BARR 2                       /* barriers before a timed loop, as IMB */
#define N_WARMUP_TIMED 3               /* timed warm-up calls at most */
#define MAXSIZE ((size_t)1 << 30)
#define MAXSIZES 64

static int rank, nprocs;
/* The v-forms' counts and displacements: every rank's block the same. */
static int *vcounts, *vdispls;

/* WHY: what was wrong (exit 2), or NULL for -h (exit 0, to stdout). */
static void usage(const char *why)
{
    if (rank == 0) {
        if (why)
            fprintf(stderr, "imb_like: %s\n", why);
        fprintf(why ? stderr : stdout,
                "usage: imb_like [-ops LIST] [-min BYTES] [-max BYTES] [-sizes LIST] [-iter N] "
                "[-time SECS]\n"
                "  -ops: bcast,reduce,allreduce,allgather,gather,scatter,barrier,alltoall,scan,\n"
                "        exscan,reduce_scatter_block,gatherv,scatterv,allgatherv,alltoallv or all\n"
                "        (default)\n"
                "  -min/-max: powers of two from MIN to MAX (default 1 and 4M; K or M allowed)\n"
                "  -sizes: a comma list of sizes instead\n"
                "  -iter: repetitions at most (default 1000); -time: seconds per size at most "
                "(default 1.0)\n");
    }
    MPI_Finalize();
    exit(why ? 2 : 0);
}

static size_t need_size(const char *s, const char *what)
{
    int ok;
    size_t v = bench_size(s, MAXSIZE, &ok);
    if (!ok) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: '%.60s' is not a size from 0 to 1G (digits, K or M)", what, s);
        usage(msg);
    }
    return v;
}

static void *xmalloc(size_t n)
{
    return bench_alloc("imb_like", rank, n);
}

static unsigned char pattern(size_t i, int who, int salt)
{
    return (unsigned char)(i * 7 + (size_t)who * 31 + (size_t)salt);
}

static int is_reduction(enum op op)
{
    return op == REDUCE || op == ALLREDUCE || op == SCAN || op == EXSCAN || op == REDUCE_SCATTER;
}
/* The regular form of a v-form (which fills and checks alike), or OP. */
static enum op regular(enum op op)
{
    switch (op) {
    case GATHERV: return GATHER;
    case SCATTERV: return SCATTER;
    case ALLGATHERV: return ALLGATHER;
    case ALLTOALLV: return ALLTOALL;
    default: return op;
    }
}
static int is_blocks(enum op op)
{
    op = regular(op);
    return op == ALLGATHER || op == GATHER || op == SCATTER || op == ALLTOALL;
}

/* One call of OP on COMM at ROOT: BYTES of MPI_BYTE, or COUNT floats. */
static void call(enum op op, MPI_Comm comm, int root, void *s, void *r, int bytes, int count)
{
    switch (op) {
    case BCAST:
        MPI_Bcast(s, bytes, MPI_BYTE, root, comm);
        break;
    case REDUCE:
        MPI_Reduce(s, r, count, MPI_FLOAT, MPI_SUM, root, comm);
        break;
    case ALLREDUCE:
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comm);
        break;
    case ALLGATHER:
        MPI_Allgather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm);
        break;
    case GATHER:
        MPI_Gather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, root, comm);
        break;
    case SCATTER:
        MPI_Scatter(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, root, comm);
        break;
    case BARRIER:
        MPI_Barrier(comm);
        break;
    case ALLTOALL:
        MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, comm);
        break;
    case SCAN:
        MPI_Scan(s, r, count, MPI_FLOAT, MPI_SUM, comm);
        break;
    case EXSCAN:
        MPI_Exscan(s, r, count, MPI_FLOAT, MPI_SUM, comm);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, comm);
        break;
    case GATHERV:
        MPI_Gatherv(s, bytes, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, root, comm);
        break;
    case SCATTERV:
        MPI_Scatterv(s, vcounts, vdispls, MPI_BYTE, r, bytes, MPI_BYTE, root, comm);
        break;
    case ALLGATHERV:
        MPI_Allgatherv(s, bytes, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, comm);
        break;
    case ALLTOALLV:
        MPI_Alltoallv(s, vcounts, vdispls, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, comm);
        break;
    default:
        abort();
    }
}

/* Fills the buffers for the checked call at ROOT (receive sides cleared). */
static void prepare(enum op op, int root, unsigned char *s, unsigned char *r, size_t bytes,
                    int count)
{
    size_t n = (size_t)nprocs;
    switch (regular(op)) {
    case BCAST:
        for (size_t i = 0; i < bytes; i++)
            s[i] = rank == root ? pattern(i, root, 1) : 0xee;
        break;
    case REDUCE:
    case ALLREDUCE:
    case SCAN:
    case EXSCAN:
    case REDUCE_SCATTER:
        for (size_t i = 0; i < (size_t)count * (op == REDUCE_SCATTER ? n : 1); i++)
            ((float *)s)[i] = (float)((size_t)rank + i % 7);
        for (int i = 0; i < count; i++)
            ((float *)r)[i] = -1.0f;
        break;
    case ALLGATHER:
    case GATHER:
        for (size_t i = 0; i < bytes; i++)
            s[i] = pattern(i, rank, 2);
        memset(r, 0xee, bytes * n);
        break;
    case SCATTER:
        if (rank == root)
            for (size_t k = 0; k < n; k++)
                for (size_t i = 0; i < bytes; i++)
                    s[k * bytes + i] = pattern(i, (int)k, 3);
        memset(r, 0xee, bytes);
        break;
    case ALLTOALL:
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < bytes; i++)
                s[k * bytes + i] = pattern(i, rank * nprocs + (int)k, 4);
        memset(r, 0xee, bytes * n);
        break;
    default:
        break;
    }
}

/* Checks the checked call's result on this rank: 0 if right, else 1 (and
 * says where on stderr). */
static int check(enum op op, int root, const unsigned char *s, const unsigned char *r,
                 size_t bytes, int count)
{
    size_t n = (size_t)nprocs;
    switch (regular(op)) {
    case BCAST:
        for (size_t i = 0; i < bytes; i++)
            if (s[i] != pattern(i, root, 1)) {
                fprintf(stderr,
                        "imb_like: bcast %zu B (root %d): wrong result at rank %d, byte %zu: "
                        "0x%02x instead of 0x%02x\n",
                        bytes, root, rank, i, s[i], pattern(i, root, 1));
                return 1;
            }
        break;
    case REDUCE:
    case ALLREDUCE:
    case SCAN:
    case EXSCAN:
    case REDUCE_SCATTER:
        if ((op == REDUCE && rank != root) || (op == EXSCAN && rank == 0))
            break;
        /* The ranks summed: all, or those up to (scan) or before (exscan)
         * this one; reduce_scatter_block's block starts at element rank × count. */
        double m = op == SCAN ? rank + 1 : op == EXSCAN ? rank : (double)n;
        long off = op == REDUCE_SCATTER ? (long)rank * count : 0;
        for (int i = 0; i < count; i++) {
            float want = (float)(m * (m - 1) / 2 + m * ((off + i) % 7));
            float got = ((const float *)r)[i];
            if (got != want) {
                fprintf(stderr,
                        "imb_like: %s %zu B (root %d): wrong sum at rank %d, element %d: %g "
                        "instead of %g\n",
                        names[op], bytes, root, rank, i, (double)got, (double)want);
                return 1;
            }
        }
        break;
    case ALLGATHER:
    case GATHER:
        if (regular(op) == GATHER && rank != root)
            break;
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < bytes; i++)
                if (r[k * bytes + i] != pattern(i, (int)k, 2)) {
                    fprintf(stderr,
                            "imb_like: %s %zu B (root %d): wrong result at rank %d, byte %zu of "
                            "rank %zu's block: 0x%02x instead of 0x%02x\n",
                            names[op], bytes, root, rank, i, k, r[k * bytes + i],
                            pattern(i, (int)k, 2));
                    return 1;
                }
        break;
    case ALLTOALL:
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < bytes; i++)
                if (r[k * bytes + i] != pattern(i, (int)k * nprocs + rank, 4)) {
                    fprintf(stderr,
                            "imb_like: %s %zu B: wrong result at rank %d, byte %zu of "
                            "rank %zu's block: 0x%02x instead of 0x%02x\n",
                            names[op], bytes, rank, i, k, r[k * bytes + i], pattern(i, (int)k * nprocs + rank, 4));
                    return 1;
                }
        break;
    case SCATTER:
        for (size_t i = 0; i < bytes; i++)
            if (r[i] != pattern(i, rank, 3)) {
                fprintf(stderr,
                        "imb_like: %s %zu B (root %d): wrong result at rank %d, byte %zu: "
                        "0x%02x instead of 0x%02x\n",
                        names[op], bytes, root, rank, i, r[i], pattern(i, rank, 3));
                return 1;
            }
        break;
    default:
        break;
    }
    return 0;
}

/* One point: OP at BYTES on COMM; returns 0, or 1 when the check failed on
 * some rank (every rank then returns 1). */
static int point(enum op op, MPI_Comm comm, unsigned char *s, unsigned char *r, size_t bytes,
                 long iter, double secs)
{
    int count = is_reduction(op) ? (int)(bytes / 4) : 0;
    int ib = (int)bytes;
    for (int k = 0; k < nprocs; k++) {
        vcounts[k] = ib;
        vdispls[k] = k * ib;
    }

    /* IMB's volume cap. */
    long reps = iter;
    if (bytes > 0 && (size_t)reps > OVERALL_VOL / bytes)
        reps = (long)(OVERALL_VOL / bytes);
    if (reps < 1)
        reps = 1;

    /* Warm-up: one untimed call (first contact, connections), then up to
     * N_WARMUP_TIMED timed ones; the slowest rank's mean caps reps. */
    MPI_Barrier(comm);
    call(op, comm, 0, s, r, ib, count);
    long nw = reps < N_WARMUP_TIMED ? reps : N_WARMUP_TIMED;
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < nw; i++)
        call(op, comm, (int)(i % nprocs), s, r, ib, count);
    double tw = (MPI_Wtime() - t0) / (double)nw, tw_max = 0;
    PMPI_Allreduce(&tw, &tw_max, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (tw_max > 0 && (double)reps * tw_max > secs) {
        double cap = secs / tw_max;
        reps = cap < 1 ? 1 : (long)cap;
    }
    long agreed = reps;
    PMPI_Allreduce(&reps, &agreed, 1, MPI_LONG, MPI_MIN, comm);
    reps = agreed;

    /* The timed loop, as IMB's. */
    for (int i = 0; i < N_BARR; i++)
        MPI_Barrier(comm);
    t0 = MPI_Wtime();
    for (long i = 0; i < reps; i++)
        call(op, comm, (int)(i % nprocs), s, r, ib, count);
    double t = (MPI_Wtime() - t0) / (double)reps * 1e6;

    double tmin = 0, tmax = 0, tsum = 0;
    PMPI_Reduce(&t, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, comm);
    PMPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    PMPI_Reduce(&t, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);

    /* The checked call. */
    int root = (int)(reps % nprocs), bad = 0, any_bad = 0;
    prepare(op, root, s, r, bytes, count);
    call(op, comm, root, s, r, ib, count);
    bad = check(op, root, s, r, bytes, count);
    PMPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);

    if (rank == 0 && !any_bad) {
        printf("%s %zu %ld %.3f %.3f %.3f\n", names[op], bytes, reps, tmin, tmax, tsum / nprocs);
        fflush(stdout);
    }
    return any_bad;
}

/* One benchmark: OP over SIZES on a communicator of its own. */
static int benchmark(enum op op, const size_t *sizes, int nsizes, long iter, double secs)
{
    MPI_Comm split, comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
    int dup = op % 2 == 1; /* reduce, allgather, scatter: a dup of a split */
    if (dup)
        MPI_Comm_dup(split, &comm);
    else
        comm = split;

    size_t top = 0;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > top)
            top = sizes[k];
    if (op == BARRIER)
        top = 0;
    int per_rank = is_blocks(op) || op == REDUCE_SCATTER;
    size_t cap = (top < 4 ? 4 : top) * (per_rank ? (size_t)nprocs : 1);
    unsigned char *s = xmalloc(cap), *r = xmalloc(cap);
    memset(s, 0, cap);
    memset(r, 0, cap);

    int failed = 0;
    if (op == BARRIER) {
        failed = point(op, comm, s, r, 0, iter, secs);
    } else {
        for (int k = 0; k < nsizes && !failed; k++) {
            if (is_reduction(op) && sizes[k] % 4 != 0)
                continue; /* whole floats only, as IMB */
            failed = point(op, comm, s, r, sizes[k], iter, secs);
        }
    }
    free(s);
    free(r);
    if (dup)
        MPI_Comm_free(&comm);
    MPI_Comm_free(&split);
    return failed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    vcounts = xmalloc(sizeof(int) * (size_t)nprocs);
    vdispls = xmalloc(sizeof(int) * (size_t)nprocs);

    int want[NOPS] = {0}, any_op = 0;
    size_t min = 1, max = (size_t)4 << 20;
    size_t list[MAXSIZES];
    int nlist = 0, have_list = 0, have_range = 0;
    long iter = 1000;
    double secs = 1.0;

    for (int a = 1; a < argc; a++) {
        const char *opt = argv[a];
        if (strcmp(opt, "-h") == 0 || strcmp(opt, "-help") == 0 || strcmp(opt, "--help") == 0)
            usage(NULL);
        if (a + 1 >= argc) {
            char msg[120];
            snprintf(msg, sizeof msg, "'%.40s' needs a value (or is unknown)", opt);
            usage(msg);
        }
        const char *val = argv[++a];
        if (strcmp(opt, "-ops") == 0) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", val);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                for (char *c = tok; *c; c++)
                    *c = (char)tolower((unsigned char)*c);
                int found = 0;
                if (strcmp(tok, "all") == 0) {
                    for (int i = 0; i < NOPS; i++)
                        want[i] = 1;
                    found = 1;
                }
                for (int i = 0; i < NOPS; i++)
                    if (strcmp(tok, names[i]) == 0)
                        want[i] = found = 1;
                if (!found) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "-ops: unknown collective '%.60s'", tok);
                    usage(msg);
                }
                any_op = 1;
            }
            if (!any_op)
                usage("-ops: an empty list");
        } else if (strcmp(opt, "-min") == 0) {
            min = need_size(val, "-min");
            have_range = 1;
        } else if (strcmp(opt, "-max") == 0) {
            max = need_size(val, "-max");
            have_range = 1;
        } else if (strcmp(opt, "-sizes") == 0) {
            char buf[1024];
            snprintf(buf, sizeof buf, "%s", val);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (nlist == MAXSIZES)
                    usage("-sizes: more than 64 sizes");
                list[nlist++] = need_size(tok, "-sizes");
            }
            if (nlist == 0)
                usage("-sizes: an empty list");
            have_list = 1;
        } else if (strcmp(opt, "-iter") == 0) {
            char *end;
            errno = 0;
            iter = strtol(val, &end, 10);
            if (end == val || *end != '\0' || errno != 0 || iter < 1)
                usage("-iter must be an integer >= 1");
        } else if (strcmp(opt, "-time") == 0) {
            char *end;
            errno = 0;
            secs = strtod(val, &end);
            if (end == val || *end != '\0' || errno != 0 || !(secs > 0) || secs > 1e6)
                usage("-time must be a number of seconds above 0");
        } else {
            char msg[120];
            snprintf(msg, sizeof msg, "unknown option '%.40s'", opt);
            usage(msg);
        }
    }
    if (!any_op)
        for (int i = 0; i < NOPS; i++)
            want[i] = 1;
    if (have_list && have_range)
        usage("-sizes or -min/-max, not both");
    if (!have_list) {
        if (min == 0 || (min & (min - 1)) || max == 0 || (max & (max - 1)))
            usage("-min and -max must be powers of two (1, 2, 4, ... 1K ... 1G)");
        if (min > max)
            usage("-min is larger than -max");
        for (size_t b = min; b <= max; b *= 2)
            list[nlist++] = b;
    }
    size_t top = 0;
    for (int k = 0; k < nlist; k++)
        if (list[k] > top)
            top = list[k];
    if (top > (size_t)INT32_MAX / (size_t)nprocs)
        usage("the largest size times the number of ranks exceeds what an int count holds");

    if (rank == 0) {
        printf("# imb_like ranks=%d\n", nprocs);
        printf("# iter %ld, time %g s per size, volume cap %zu B, root i %% size; "
               "us per call: min, max, mean over ranks\n",
               iter, secs, OVERALL_VOL);
        printf("# op bytes reps t_min_us t_max_us t_avg_us\n");
        fflush(stdout);
    }
    int failed = 0;
    for (int op = 0; op < NOPS && !failed; op++)
        if (want[op])
            failed = benchmark((enum op)op, list, nlist, iter, secs);
    if (failed && rank == 0)
        fprintf(stderr, "imb_like: a result was wrong (above); stopping\n");
    MPI_Finalize();
    return failed ? 1 : 0;
}
