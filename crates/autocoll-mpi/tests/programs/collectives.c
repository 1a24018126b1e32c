/* Every wrapped collective over types, counts, roots, communicators and
 * in-place forms; each rank writes what it received to DIR/rank-N.txt so
 * that a run with the library and one without compare line for line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
static int world_rank;

/* A value every rank can compute: test, rank, index. */
static long val(int test, int rank, long i) { return (test * 131 + rank * 17 + i * 7) % 253 - 120; }

typedef struct { MPI_Datatype type; const char *name; int size; } Type;

static void put(void *buf, const Type *t, long i, long v)
{
    switch (t->size) {
    case 1: ((signed char *)buf)[i] = (signed char)v; break;
    case 4: if (t->type == MPI_FLOAT) ((float *)buf)[i] = (float)v / 8; else ((int *)buf)[i] = (int)v; break;
    case 8: if (t->type == MPI_DOUBLE) ((double *)buf)[i] = (double)v / 8; else if (t->type == MPI_2INT) { ((int *)buf)[2*i] = (int)v; ((int *)buf)[2*i+1] = (int)(v & 3); } else ((long *)buf)[i] = v; break;
    }
}

static void fill(void *buf, const Type *t, long n, int test, int rank)
{
    for (long i = 0; i < n; i++) put(buf, t, i, val(test, rank, i));
}

/* A digest of n elements, printed with the test's name. */
static void report(const char *what, const void *buf, long bytes)
{
    unsigned long h = 1469598103934665603UL;
    for (long i = 0; i < bytes; i++) { h ^= ((const unsigned char *)buf)[i]; h *= 1099511628211UL; }
    fprintf(out, "%s bytes=%ld digest=%016lx\n", what, bytes, h);
}

static void check(int code, const char *what)
{
    if (code != MPI_SUCCESS) { fprintf(stderr, "rank %d: %s returned %d\n", world_rank, what, code); MPI_Abort(MPI_COMM_WORLD, 2); }
}

/* Affine maps x -> m x + a composed: associative, not commutative. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *t)
{
    unsigned long *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        unsigned long m = a[2*i] * b[2*i], c = a[2*i] * b[2*i+1] + a[2*i+1];
        b[2*i] = m; b[2*i+1] = c;
    }
    (void)t;
}

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *t)
{
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
    (void)t;
}

/* The line that names a result (every caller has what, cname, t, n, root). */
#define NAME(op, ip) snprintf(what, sizeof what, "%s %s %s n=%ld root=%d%s", op, cname, t->name, n, root, ip)

/* Reduce-scatter in its block form and its counts form (all counts the
 * same, which autocoll runs, and uneven, which goes to MPI), each in
 * place too; `a` and `b` hold n elements per rank. */
static void reduce_scatters(MPI_Comm comm, const char *cname, const Type *t, long n, MPI_Op op,
                            int test, char *a, char *b)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long bytes = n * t->size;
    int root = 0;
    char what[200];
    int *counts = malloc(sizeof(int) * size);
    fill(a, t, n * size, test + 17, rank); memset(b, 0, bytes * size);
    check(MPI_Reduce_scatter_block(a, b, (int)n, t->type, op, comm), "reduce_scatter_block");
    NAME("reduce_scatter_block", ""); report(what, b, bytes);
    fill(b, t, n * size, test + 18, rank);
    check(MPI_Reduce_scatter_block(MPI_IN_PLACE, b, (int)n, t->type, op, comm), "reduce_scatter_block in place");
    NAME("reduce_scatter_block", " in-place"); report(what, b, bytes);
    for (int even = 1; even >= 0; even--) {
        /* Uneven: every other rank gets nothing. */
        for (int i = 0; i < size; i++) counts[i] = even || i % 2 ? (int)n : 0;
        long mine = counts[rank] * t->size;
        fill(a, t, n * size, test + 19 + even, rank); memset(b, 0, bytes * size);
        check(MPI_Reduce_scatter(a, b, counts, t->type, op, comm), "reduce_scatter");
        NAME("reduce_scatter", even ? "" : " uneven"); report(what, b, mine);
#ifdef MPICH
        /* MPICH 4.0.2 fails an assertion (a memcpy onto itself) in an
         * in-place reduce_scatter of uneven counts of 40,000 elements,
         * with no library preloaded. */
        if (!even && n > 7) continue;
#endif
        fill(b, t, n * size, test + 21 + even, rank);
        check(MPI_Reduce_scatter(MPI_IN_PLACE, b, counts, t->type, op, comm), "reduce_scatter in place");
        NAME("reduce_scatter", even ? " in-place" : " uneven in-place"); report(what, b, mine);
    }
    free(counts);
}

/* A v-form's count: none, half or all of n, in turn by k. */
static int vcount(long n, int k) { return (int)(n * (k % 3) / 2); }

/* Blocks one element apart: displacements of counts, the total returned. */
static long spaced(const int *counts, int *displs, int size)
{
    long at = 0;
    for (int i = 0; i < size; i++) { displs[i] = (int)at; at += counts[i] + 1; }
    return at;
}

/* Gatherv, scatterv and allgatherv with uneven counts (some 0) and a gap
 * between blocks, each in place too; whole receive buffers are reported,
 * gaps included. */
static void vforms(MPI_Comm comm, const char *cname, const Type *t, long n, int root, int test)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *c = malloc(sizeof(int) * size), *d = malloc(sizeof(int) * size);
    long room = (n + 1) * size * t->size + 16;
    char *a = malloc(room), *b = malloc(room);
    char what[200];
    for (int i = 0; i < size; i++) c[i] = vcount(n, i + test);
    long total = spaced(c, d, size) * t->size;
    int mine = c[rank];
    char *place = b + (long)d[rank] * t->size;

    fill(a, t, mine, test + 30, rank); memset(b, 0, room);
    check(MPI_Gatherv(a, mine, t->type, b, c, d, t->type, root, comm), "gatherv");
    NAME("gatherv", ""); if (rank == root) report(what, b, total);
    memset(b, 0, room); fill(rank == root ? place : a, t, mine, test + 31, rank);
    check(MPI_Gatherv(rank == root ? MPI_IN_PLACE : a, mine, t->type, b, c, d, t->type, root, comm), "gatherv in place");
    NAME("gatherv", " in-place"); if (rank == root) report(what, b, total);

    fill(a, t, total / t->size, test + 32, rank); memset(b, 0, room);
    check(MPI_Scatterv(a, c, d, t->type, b, mine, t->type, root, comm), "scatterv");
    NAME("scatterv", ""); report(what, b, (long)mine * t->size);
    fill(a, t, total / t->size, test + 33, rank); memset(b, 0, room);
    check(MPI_Scatterv(a, c, d, t->type, rank == root ? MPI_IN_PLACE : b, mine, t->type, root, comm), "scatterv in place");
    NAME("scatterv", " in-place"); report(what, rank == root ? a + (long)d[root] * t->size : b, (long)mine * t->size);

    fill(a, t, mine, test + 34, rank); memset(b, 0, room);
    check(MPI_Allgatherv(a, mine, t->type, b, c, d, t->type, comm), "allgatherv");
    NAME("allgatherv", ""); report(what, b, total);
    memset(b, 0, room); fill(place, t, mine, test + 35, rank);
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, c, d, t->type, comm), "allgatherv in place");
    NAME("allgatherv", " in-place"); report(what, b, total);
    free(a); free(b); free(c); free(d);
}

/* Alltoallv with uneven counts (what rank i sends rank j depends on both)
 * and gaps between blocks, and in place (symmetric counts, as MPI needs). */
static void alltoallvs(MPI_Comm comm, const char *cname, const Type *t, long n, int root, int test)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    long room = (n + 1) * size * t->size + 16;
    char *a = malloc(room), *b = malloc(room);
    char what[200];
    for (int j = 0; j < size; j++) {
        sc[j] = vcount(n, rank + 2 * j + test);
        rc[j] = vcount(n, j + 2 * rank + test);
    }
    long sent = spaced(sc, sd, size), got = spaced(rc, rd, size) * t->size;
    fill(a, t, sent, test + 36, rank); memset(b, 0, room);
    check(MPI_Alltoallv(a, sc, sd, t->type, b, rc, rd, t->type, comm), "alltoallv");
    NAME("alltoallv", ""); report(what, b, got);
    for (int j = 0; j < size; j++) rc[j] = vcount(n, j + rank + test);
    got = spaced(rc, rd, size);
    fill(b, t, got, test + 37, rank);
    check(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b, rc, rd, t->type, comm), "alltoallv in place");
    NAME("alltoallv", " in-place"); report(what, b, got * t->size);
    free(a); free(b); free(sc); free(sd); free(rc); free(rd);
}

static void run(MPI_Comm comm, const char *cname, const Type *t, long n, int root, int test)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long bytes = n * t->size;
    char *a = malloc(bytes * size + 16), *b = malloc(bytes * size + 16);
    char what[200];
    int red = t->type != MPI_CHAR; /* MPI_CHAR is not for reductions */
    MPI_Op op = t->type == MPI_2INT ? MPI_MINLOC : (t->type == MPI_FLOAT || t->type == MPI_DOUBLE ? MPI_SUM : MPI_MAX);

    fill(a, t, n, test, rank); memset(b, 0, bytes * size + 16);
    check(MPI_Bcast(rank == root ? a : b, (int)n, t->type, root, comm), "bcast");
    NAME("bcast", ""); report(what, rank == root ? a : b, bytes);

    if (red) {
        fill(a, t, n, test + 1, rank); memset(b, 0, bytes);
        check(MPI_Reduce(a, b, (int)n, t->type, op, root, comm), "reduce");
        NAME("reduce", ""); if (rank == root) report(what, b, bytes);
#ifdef MPICH
        /* MPICH 4.0.2 crashes in an in-place reduce at a root other than 0
         * of 1000 doubles and more, with no library preloaded. */
        int in_place_reduce = root == 0 || n <= 7;
#else
        int in_place_reduce = 1;
#endif
        fill(b, t, n, test + 2, rank);
        if (in_place_reduce) {
            check(MPI_Reduce(rank == root ? MPI_IN_PLACE : b, rank == root ? b : NULL, (int)n, t->type, op, root, comm), "reduce in place");
            NAME("reduce", " in-place"); if (rank == root) report(what, b, bytes);
        }
        fill(a, t, n, test + 3, rank); memset(b, 0, bytes);
        check(MPI_Allreduce(a, b, (int)n, t->type, op, comm), "allreduce");
        NAME("allreduce", ""); report(what, b, bytes);
        fill(b, t, n, test + 4, rank);
        check(MPI_Allreduce(MPI_IN_PLACE, b, (int)n, t->type, op, comm), "allreduce in place");
        NAME("allreduce", " in-place"); report(what, b, bytes);
        fill(a, t, n, test + 13, rank); memset(b, 0, bytes);
        check(MPI_Scan(a, b, (int)n, t->type, op, comm), "scan");
        NAME("scan", ""); report(what, b, bytes);
        fill(b, t, n, test + 14, rank);
        check(MPI_Scan(MPI_IN_PLACE, b, (int)n, t->type, op, comm), "scan in place");
        NAME("scan", " in-place"); report(what, b, bytes);
        /* Exscan's result at rank 0 is undefined: not reported. */
        fill(a, t, n, test + 15, rank); memset(b, 0, bytes);
        check(MPI_Exscan(a, b, (int)n, t->type, op, comm), "exscan");
        NAME("exscan", ""); if (rank > 0) report(what, b, bytes);
        fill(b, t, n, test + 16, rank);
        check(MPI_Exscan(MPI_IN_PLACE, b, (int)n, t->type, op, comm), "exscan in place");
        NAME("exscan", " in-place"); if (rank > 0) report(what, b, bytes);
        reduce_scatters(comm, cname, t, n, op, test, a, b);
    }

    fill(a, t, n * size, test + 5, rank); memset(b, 0, bytes * size);
    check(MPI_Scatter(a, (int)n, t->type, b, (int)n, t->type, root, comm), "scatter");
    NAME("scatter", ""); report(what, b, bytes);
    fill(a, t, n * size, test + 6, rank);
    check(MPI_Scatter(a, (int)n, t->type, rank == root ? MPI_IN_PLACE : b, (int)n, t->type, root, comm), "scatter in place");
    NAME("scatter", " in-place"); report(what, rank == root ? a + (long)root * bytes : b, bytes);

    fill(a, t, n, test + 7, rank); memset(b, 0, bytes * size);
    check(MPI_Gather(a, (int)n, t->type, b, (int)n, t->type, root, comm), "gather");
    NAME("gather", ""); if (rank == root) report(what, b, bytes * size);
    fill(b, t, n * size, test + 8, rank);
    check(MPI_Gather(rank == root ? MPI_IN_PLACE : b + (long)rank * bytes, (int)n, t->type, b, (int)n, t->type, root, comm), "gather in place");
    NAME("gather", " in-place"); if (rank == root) report(what, b, bytes * size);

    fill(a, t, n, test + 9, rank); memset(b, 0, bytes * size);
    check(MPI_Allgather(a, (int)n, t->type, b, (int)n, t->type, comm), "allgather");
    NAME("allgather", ""); report(what, b, bytes * size);
    fill(b, t, n * size, test + 10, rank);
    check(MPI_Allgather(MPI_IN_PLACE, (int)n, t->type, b, (int)n, t->type, comm), "allgather in place");
    NAME("allgather", " in-place"); report(what, b, bytes * size);

    fill(a, t, n * size, test + 11, rank); memset(b, 0, bytes * size);
    check(MPI_Alltoall(a, (int)n, t->type, b, (int)n, t->type, comm), "alltoall");
    NAME("alltoall", ""); report(what, b, bytes * size);
    fill(b, t, n * size, test + 12, rank);
    check(MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, b, (int)n, t->type, comm), "alltoall in place");
    NAME("alltoall", " in-place"); report(what, b, bytes * size);

    vforms(comm, cname, t, n, root, test);
    alltoallvs(comm, cname, t, n, root, test);

    check(MPI_Barrier(comm), "barrier");
    free(a); free(b);
}

static void user_ops(MPI_Comm comm, const char *cname)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Op sum, affine;
    MPI_Op_create(add_ints, 1, &sum);
    MPI_Op_create(compose, 0, &affine);
    int n = 1001, in[1001], res[1001];
    for (int i = 0; i < n; i++) in[i] = rank * 1000 + i;
    check(MPI_Allreduce(in, res, n, MPI_INT, sum, comm), "user sum");
    char what[100];
    snprintf(what, sizeof what, "allreduce %s user-commutative", cname); report(what, res, sizeof res);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_UNSIGNED_LONG, &pair);
    MPI_Type_commit(&pair);
    unsigned long maps[2 * 33], comp[2 * 33];
    for (int i = 0; i < 33; i++) { maps[2*i] = 2 * (rank + i) + 1; maps[2*i+1] = rank * 7 + i; }
    check(MPI_Reduce(maps, comp, 33, pair, affine, 0, comm), "user non-commutative");
    snprintf(what, sizeof what, "reduce %s user-non-commutative", cname);
    if (rank == 0) report(what, comp, sizeof comp);
    check(MPI_Allreduce(maps, comp, 33, pair, affine, comm), "user non-commutative allreduce");
    snprintf(what, sizeof what, "allreduce %s user-non-commutative", cname); report(what, comp, sizeof comp);
    MPI_Type_free(&pair);
    MPI_Op_free(&sum);
    MPI_Op_free(&affine);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[512];
    snprintf(path, sizeof path, "%s/rank-%d.txt", argc > 1 ? argv[1] : ".", world_rank);
    out = fopen(path, "w");
    if (!out) { perror(path); MPI_Abort(MPI_COMM_WORLD, 1); }

    MPI_Comm dup, half, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - world_rank, &reversed);
    struct { MPI_Comm c; const char *name; } comms[] = {
        { MPI_COMM_WORLD, "world" }, { dup, "dup" }, { half, "half" }, { reversed, "reversed" } };
    Type types[] = { { MPI_CHAR, "char", 1 }, { MPI_INT, "int", 4 }, { MPI_LONG, "long", 8 },
                     { MPI_FLOAT, "float", 4 }, { MPI_DOUBLE, "double", 8 }, { MPI_2INT, "2int", 8 } };
    long counts[] = { 0, 1, 7, 40000 };
    int test = 0;
    for (int c = 0; c < 4; c++) {
        int csize;
        MPI_Comm_size(comms[c].c, &csize);
        for (int t = 0; t < 6; t++)
            for (int k = 0; k < 4; k++) {
                if (counts[k] > 1000 && t != 4 && c > 0) continue; /* large: doubles only, beyond world */
                int roots[] = { 0, csize - 1 };
                for (int r = 0; r < (csize > 1 ? 2 : 1); r++)
                    run(comms[c].c, comms[c].name, &types[t], counts[k], roots[r], test++);
            }
        user_ops(comms[c].c, comms[c].name);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&reversed);
    fclose(out);
    MPI_Finalize();
    return 0;
}
