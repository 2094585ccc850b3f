/* Timing helpers shared by the benchmarks. */
#ifndef SAFELOAD_BENCHUTIL_H
#define SAFELOAD_BENCHUTIL_H
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <windows.h>
#include <direct.h>
#define bu_mkdir(p) ((void)_mkdir(p))
#define bu_rmdir(p) ((void)_rmdir(p))
static double bu_now(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}
#else
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#define bu_mkdir(p) ((void)mkdir(p, 0777))
#define bu_rmdir(p) ((void)rmdir(p))
static double bu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#endif
static int bu_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* Median (sorts v in place). */
static double bu_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
#endif
