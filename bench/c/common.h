/*
 * Shared helpers for the ftmpi comparison benchmarks (OSU style).
 *
 * Every program accepts:
 *   -impl NAME        label written into the "impl" field (e.g. mpich, openmpi)
 *   -transport NAME   label written into the "transport" field (e.g. shm, tcp)
 *   -runs N           repetitions; the median of the runs is reported (default 5)
 *   -min BYTES        smallest message size (default 1)
 *   -max BYTES        largest message size (default depends on the benchmark)
 * Output: one JSON object per line on stdout, from rank 0 only.
 */
#ifndef FTMPI_BENCH_COMMON_H
#define FTMPI_BENCH_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *impl;
    const char *transport;
    int runs;
    long min;
    long max;
} bench_opts;

static void bench_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-impl NAME] [-transport NAME] [-runs N] [-min BYTES] [-max BYTES]\n",
            prog);
}

/* Strip a leading "-" or "--" so both -runs and --runs work. */
static const char *bench_flag_name(const char *a)
{
    if (a[0] != '-')
        return NULL;
    a++;
    if (a[0] == '-')
        a++;
    return a;
}

static int bench_parse(int argc, char **argv, bench_opts *o, long def_max)
{
    o->impl = "unknown";
    o->transport = "unknown";
    o->runs = 5;
    o->min = 1;
    o->max = def_max;
    for (int i = 1; i < argc; i++) {
        const char *f = bench_flag_name(argv[i]);
        if (f == NULL || i + 1 >= argc) {
            bench_usage(argv[0]);
            return -1;
        }
        const char *v = argv[++i];
        if (strcmp(f, "impl") == 0)
            o->impl = v;
        else if (strcmp(f, "transport") == 0)
            o->transport = v;
        else if (strcmp(f, "runs") == 0)
            o->runs = atoi(v);
        else if (strcmp(f, "min") == 0)
            o->min = atol(v);
        else if (strcmp(f, "max") == 0)
            o->max = atol(v);
        else {
            bench_usage(argv[0]);
            return -1;
        }
    }
    if (o->runs < 1)
        o->runs = 1;
    if (o->min < 1)
        o->min = 1;
    if (o->max < o->min)
        o->max = o->min;
    return 0;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n-1]; sorts v in place. */
static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    if (n % 2 == 1)
        return v[n / 2];
    return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Print one result line. Labels come from the command line and are trusted
 * to be plain identifiers (no quoting needed). */
static void bench_emit(const bench_opts *o, const char *name, int np, long size,
                       double median, const char *unit)
{
    printf("{\"name\":\"%s\",\"impl\":\"%s\",\"transport\":\"%s\",\"np\":%d,"
           "\"size\":%ld,\"median\":%.3f,\"unit\":\"%s\",\"runs\":%d}\n",
           name, o->impl, o->transport, np, size, median, unit, o->runs);
    fflush(stdout);
}

/* Allocate and touch a buffer so page faults do not land in timed loops. */
static void *bench_alloc(size_t n)
{
    if (n == 0)
        n = 1;
    void *p = NULL;
    if (posix_memalign(&p, 4096, n) != 0) {
        fprintf(stderr, "out of memory allocating %zu bytes\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, 'a', n);
    return p;
}

#endif
