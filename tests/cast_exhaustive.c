/* Every one of the 2^32 fp32 inputs through f32->f16 and f32->bf16 on every available SIMD path
   (regular and non-temporal stores), compared bit for bit with the scalar reference, in the
   default FP environment and again under MXCSR FTZ+DAZ+round-toward-zero (FPCR FZ+DN+RZ on
   AArch64). The inputs go in blocks of an odd length (65521) at varying src/dst misalignments,
   with guard bytes checked on both sides of dst. Two threads by default
   (SL_EXHAUSTIVE_THREADS=n to change).

   Build with -DSL_EXHAUSTIVE_STRIDE=N to test every N-th block only (used under qemu). */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include <pthread.h>
#include <time.h>

#ifndef SL_EXHAUSTIVE_STRIDE
#  define SL_EXHAUSTIVE_STRIDE 1
#endif

#if defined(__x86_64__)
#  include <xmmintrin.h>
typedef unsigned fpenv_t;
static fpenv_t fpenv_get(void) { return _mm_getcsr(); }
static void fpenv_set(fpenv_t v) { _mm_setcsr(v); }
#  define FPENV_HOSTILE (0x1F80u | 0x8000u | 0x0040u | 0x6000u)
#  define FPENV_NAME "MXCSR FTZ+DAZ+RZ"
#elif defined(__aarch64__)
typedef uint64_t fpenv_t;
static fpenv_t fpenv_get(void) { uint64_t v; __asm__ __volatile__("mrs %0, fpcr" : "=r"(v)); return v; }
static void fpenv_set(fpenv_t v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v)); }
#  define FPENV_HOSTILE ((uint64_t)0x03C00000u)
#  define FPENV_NAME "FPCR FZ+DN+RZ"
#else
typedef unsigned fpenv_t;
static fpenv_t fpenv_get(void) { return 0; }
static void fpenv_set(fpenv_t v) { (void)v; }
#  define FPENV_HOSTILE 0u
#  define FPENV_NAME "default (no FP environment control on this target)"
#endif

#define BLOCK 65521u                    /* odd (prime) block length */
#define GUARD 64
#define NDIR 2                          /* 0: f32->f16, 1: f32->bf16 */
#define MAXRUN (SAFELOAD_SIMD_COUNT * 2 * 2)

typedef struct {
    safeload_simd simd;
    int nt, hostile;
} run_t;

typedef struct {
    uint64_t mismatches, first_in;
    uint32_t first_want, first_got;
    int guard_hit, err;
} stat_t;

static run_t g_runs[MAXRUN];
static int g_nruns;
static int g_nthreads = 2;
static const safeload_dtype DST[NDIR] = { SAFELOAD_F16, SAFELOAD_BF16 };
static const char *DNAME[NDIR] = { "f32->f16", "f32->bf16" };

typedef struct {
    int id;
    stat_t st[NDIR][MAXRUN];
    uint64_t blocks, elements;
} worker_t;

static void *worker(void *arg) {
    worker_t *w = (worker_t *)arg;
    unsigned char *src = (unsigned char *)malloc((size_t)BLOCK * 4 + 64);
    uint16_t *ref = (uint16_t *)malloc((size_t)BLOCK * 2);
    unsigned char *out = (unsigned char *)malloc((size_t)BLOCK * 2 + 2 * GUARD + 128);
    const uint64_t nblocks = ((uint64_t)1 << 32) / BLOCK + 1;
    fpenv_t saved = fpenv_get();
    uint64_t b;
    for (b = (uint64_t)w->id * SL_EXHAUSTIVE_STRIDE; b < nblocks;
         b += (uint64_t)g_nthreads * SL_EXHAUSTIVE_STRIDE) {
        uint64_t start = b * BLOCK;
        size_t n = (size_t)(((uint64_t)1 << 32) - start < BLOCK ? ((uint64_t)1 << 32) - start : BLOCK);
        size_t smis = (size_t)(b * 5 % 16), i;
        /* dst misalignment: mostly even (NT head/body/tail), every 8th block odd (no NT) */
        size_t dmis = (size_t)((b * 6 + (b % 8 == 7)) % 64);
        unsigned char *s = src + smis;
        unsigned char *base = out + GUARD + (64 - ((uintptr_t)(out + GUARD) & 63));
        unsigned char *d = base + dmis;
        int dir, r;
        for (i = 0; i < n; i++) {
            uint32_t x = (uint32_t)(start + i);
            memcpy(s + 4 * i, &x, 4);
        }
        for (dir = 0; dir < NDIR; dir++) {
            safeload_convert_desc sd;
            sd.simd = SAFELOAD_SIMD_SCALAR;
            sd.nt_stores = -1;
            if (safeload_convert_ex(ref, DST[dir], s, SAFELOAD_F32, n, &sd) != SAFELOAD_OK)
                w->st[dir][0].err++;
            for (r = 0; r < g_nruns; r++) {
                stat_t *st = &w->st[dir][r];
                safeload_result res;
                memset(d - GUARD, 0xA5, GUARD);
                memset(d + n * 2, 0xA5, GUARD);
                sd.simd = g_runs[r].simd;
                sd.nt_stores = g_runs[r].nt;
                if (g_runs[r].hostile) fpenv_set(FPENV_HOSTILE);
                res = safeload_convert_ex(d, DST[dir], s, SAFELOAD_F32, n, &sd);
                if (g_runs[r].hostile) {
                    if (fpenv_get() != (fpenv_t)FPENV_HOSTILE) st->err++;
                    fpenv_set(saved);
                }
                if (res != SAFELOAD_OK) st->err++;
                if (memcmp(d, ref, n * 2) != 0) {
                    for (i = 0; i < n; i++) {
                        uint16_t got;
                        memcpy(&got, d + 2 * i, 2);
                        if (got != ref[i]) {
                            if (!st->mismatches) {
                                st->first_in = start + i;
                                st->first_want = ref[i];
                                st->first_got = got;
                            }
                            st->mismatches++;
                        }
                    }
                }
                for (i = 0; i < GUARD; i++)
                    if (d[-1 - (ptrdiff_t)i] != 0xA5 || d[n * 2 + i] != 0xA5) { st->guard_hit++; break; }
            }
        }
        w->blocks++;
        w->elements += n;
    }
    free(src);
    free(ref);
    free(out);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
    worker_t *ws;
    pthread_t *th;
    int p, t, r, dir;
    uint64_t elements = 0, blocks = 0;
    double t0 = now();
    const char *env = getenv("SL_EXHAUSTIVE_THREADS");
    if (env && atoi(env) > 0 && atoi(env) <= 64) g_nthreads = atoi(env);
    (void)tu_fnv1a;
    (void)tu_rand64;

    /* scalar under the hostile environment (it is integer code: must not change), then every
       SIMD path, NT and not, in both environments */
    g_runs[g_nruns].simd = SAFELOAD_SIMD_SCALAR; g_runs[g_nruns].nt = -1; g_runs[g_nruns++].hostile = 1;
    for (p = SAFELOAD_SIMD_SCALAR + 1; p < SAFELOAD_SIMD_COUNT; p++) {
        int nt, h;
        if (!safeload_simd_available((safeload_simd)p)) continue;
        for (h = 0; h < 2; h++)
            for (nt = -1; nt <= 1; nt += 2) {
                g_runs[g_nruns].simd = (safeload_simd)p;
                g_runs[g_nruns].nt = nt;
                g_runs[g_nruns++].hostile = h;
            }
    }
    printf("cast_exhaustive: every %d-th block of %u, %d thread(s), best path %s, %d runs per "
           "direction:", SL_EXHAUSTIVE_STRIDE, BLOCK, g_nthreads,
           safeload_simd_name(safeload_simd_best()), g_nruns);
    for (r = 0; r < g_nruns; r++)
        printf(" %s%s%s", safeload_simd_name(g_runs[r].simd), g_runs[r].nt > 0 ? "+nt" : "",
               g_runs[r].hostile ? "/hostile" : "");
    printf("\n");
    fflush(stdout);

    ws = (worker_t *)calloc((size_t)g_nthreads, sizeof *ws);
    th = (pthread_t *)calloc((size_t)g_nthreads, sizeof *th);
    for (t = 0; t < g_nthreads; t++) {
        ws[t].id = t;
        CHECK(pthread_create(&th[t], NULL, worker, &ws[t]) == 0);
    }
    for (t = 0; t < g_nthreads; t++) pthread_join(th[t], NULL);
    for (t = 0; t < g_nthreads; t++) { elements += ws[t].elements; blocks += ws[t].blocks; }

    for (dir = 0; dir < NDIR; dir++) {
        for (r = 0; r < g_nruns; r++) {
            stat_t tot;
            memset(&tot, 0, sizeof tot);
            for (t = 0; t < g_nthreads; t++) {
                stat_t *s = &ws[t].st[dir][r];
                if (s->mismatches && !tot.mismatches) {
                    tot.first_in = s->first_in; tot.first_want = s->first_want; tot.first_got = s->first_got;
                }
                tot.mismatches += s->mismatches;
                tot.guard_hit += s->guard_hit;
                tot.err += s->err;
            }
            CHECK_MSG(tot.mismatches == 0 && tot.guard_hit == 0 && tot.err == 0,
                      "%s on %s%s%s: %llu mismatches (first: in 0x%08llx want 0x%04x got 0x%04x), "
                      "%d guard hits, %d errors", DNAME[dir], safeload_simd_name(g_runs[r].simd),
                      g_runs[r].nt > 0 ? "+nt" : "", g_runs[r].hostile ? " under " FPENV_NAME : "",
                      (unsigned long long)tot.mismatches, (unsigned long long)tot.first_in,
                      (unsigned)tot.first_want, (unsigned)tot.first_got, tot.guard_hit, tot.err);
        }
    }
    CHECK(SL_EXHAUSTIVE_STRIDE != 1 || elements == ((uint64_t)1 << 32));
    printf("cast_exhaustive: %llu blocks, %llu inputs per direction (%s), %.1f s\n",
           (unsigned long long)blocks, (unsigned long long)elements,
           SL_EXHAUSTIVE_STRIDE == 1 ? "all 2^32" : "strided sample", now() - t0);
    free(ws);
    free(th);
    return tu_finish("cast_exhaustive");
}
