/* What the C benchmarks share: a size from the command line, and memory
 * that ends the job with a message when there is none. */
#ifndef AUTOCOLL_BENCH_H
#define AUTOCOLL_BENCH_H

#include <mpi.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* A size of at most `max` bytes: digits, then K or M (binary) if any.
 * Sets *ok to 1 when `s` is one; else to 0, and returns 0. */
static size_t bench_size(const char *s, size_t max, int *ok)
{
    char *end;
    errno = 0;
    *ok = 0;
    if (!isdigit((unsigned char)*s))
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno != 0)
        return 0;
    if (*end == 'K' || *end == 'k') {
        v <<= 10;
        end++;
    } else if (*end == 'M' || *end == 'm') {
        v <<= 20;
        end++;
    }
    if (*end != '\0' || v > max)
        return 0;
    *ok = 1;
    return (size_t)v;
}

/* `n` bytes (one at least); out of memory, the job ends, saying which
 * program and rank ran out. */
static void *bench_alloc(const char *prog, int rank, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: rank %d: out of memory (%zu bytes)\n", prog, rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

#endif
