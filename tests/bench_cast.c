/* Cast throughput: every direction on every available path, single thread, against memcpy on
   the same buffers in the same run.

   usage: bench_cast [MiB ...] [nt=auto|0|1|both] [reps=N] [only=f32->bf16,...] [f8=random]
                     [weights=normal]
          (default sizes 8 and 512 MiB of *input*; env SL_BENCH_SIZES="8,512" works too;
          fractions for cache-resident sizes: 0.015625 = 16 KiB, each sample then times
          about 1 MiB of back-to-back calls; reps = rounds, default 31 below 128 MiB, else 5)
   GB/s = 1e9 bytes/s. "in" counts input bytes, "in+out" input plus output bytes: the figure to
   set against memcpy's read+write ("in+out" of memcpy = 2 x bytes copied). Each round times
   every path, and right before each one a memcpy of the input size (below 128 MiB the second
   of two back-to-back copies: its best case). "x memcpy" is the median over the rounds of each
   cast's in+out rate divided by that of the memcpy just before it: the machine's speed drifts
   (other guests, memory bandwidth), and a paired ratio cancels the drift that a ratio of two
   medians keeps. GB/s columns are medians. Buffers are mmap'd with MADV_HUGEPAGE where
   available and prefaulted before timing. nt=auto is what safeload_convert does by default
   (non-temporal stores from 8 MiB of output on). */
#define _GNU_SOURCE
#include "testutil.h"
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include <math.h>
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#  include <sys/mman.h>
#  define HAVE_MMAP 1
#endif

typedef struct { safeload_dtype dst, src; const char *name; int rounds; } dir_t;
/* rounds = 1: the cast can round (target 0.6x memcpy); 0: exact widening (target 0.9x) */
static const dir_t DIRS[] = {
    { SAFELOAD_F16, SAFELOAD_F32, "f32->f16", 1 },      { SAFELOAD_BF16, SAFELOAD_F32, "f32->bf16", 1 },
    { SAFELOAD_F32, SAFELOAD_F16, "f16->f32", 0 },      { SAFELOAD_F32, SAFELOAD_BF16, "bf16->f32", 0 },
    { SAFELOAD_BF16, SAFELOAD_F16, "f16->bf16", 1 },    { SAFELOAD_F16, SAFELOAD_BF16, "bf16->f16", 1 },
    { SAFELOAD_F32, SAFELOAD_F8_E4M3, "e4m3->f32", 0 }, { SAFELOAD_F16, SAFELOAD_F8_E4M3, "e4m3->f16", 0 },
    { SAFELOAD_BF16, SAFELOAD_F8_E4M3, "e4m3->bf16", 0 }, { SAFELOAD_F32, SAFELOAD_F8_E5M2, "e5m2->f32", 0 },
    { SAFELOAD_F16, SAFELOAD_F8_E5M2, "e5m2->f16", 0 }, { SAFELOAD_BF16, SAFELOAD_F8_E5M2, "e5m2->bf16", 0 },
    { SAFELOAD_F32, SAFELOAD_F64, "f64->f32", 1 },      { SAFELOAD_F64, SAFELOAD_F32, "f32->f64", 0 },
    { SAFELOAD_F32, SAFELOAD_F4, "f4->f32", 0 },        { SAFELOAD_F16, SAFELOAD_F4, "f4->f16", 0 },
    { SAFELOAD_BF16, SAFELOAD_F4, "f4->bf16", 0 },      { SAFELOAD_F32, SAFELOAD_F8_E8M0, "e8m0->f32", 0 },
    { SAFELOAD_F16, SAFELOAD_F8_E8M0, "e8m0->f16", 0 }, { SAFELOAD_BF16, SAFELOAD_F8_E8M0, "e8m0->bf16", 0 },
    { SAFELOAD_F32, SAFELOAD_F8_E4M3FNUZ, "e4m3fnuz->f32", 0 },
    { SAFELOAD_F16, SAFELOAD_F8_E4M3FNUZ, "e4m3fnuz->f16", 0 },
    { SAFELOAD_BF16, SAFELOAD_F8_E4M3FNUZ, "e4m3fnuz->bf16", 0 },
    { SAFELOAD_F32, SAFELOAD_F8_E5M2FNUZ, "e5m2fnuz->f32", 0 },
    { SAFELOAD_F16, SAFELOAD_F8_E5M2FNUZ, "e5m2fnuz->f16", 0 },
    { SAFELOAD_BF16, SAFELOAD_F8_E5M2FNUZ, "e5m2fnuz->bf16", 0 },
};
#define NDIRS (sizeof DIRS / sizeof DIRS[0])

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *big_alloc(size_t n) {
#if defined(HAVE_MMAP)
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#  if defined(MADV_HUGEPAGE)
    madvise(p, n, MADV_HUGEPAGE);
#  endif
    memset(p, 0, n);                    /* prefault */
    return p;
#else
    void *p = malloc(n);
    if (p) memset(p, 0, n);
    return p;
#endif
}

/* keeps the compiler from folding repeated memcpys into one: the copy is "used" */
static void bench_clobber(void *p) {
#if defined(__GNUC__)
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    volatile unsigned char sink = *(volatile unsigned char *)p;
    (void)sink;
#endif
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* roughly N(0, 0.02) weights, as f32 bits. About 0.24 % of them are below 2^-14, the f16
   subnormal range. normal: every weight below 2^-13 is raised to 2^-13 (sign kept), so no f16
   is zero or subnormal and every SIMD block takes its common form (the cost of the rare
   blocks' form is then the difference to the default). */
static uint32_t weight_bits(int normal) {
    double u1 = ((double)(tu_rand64() >> 11) + 1) / 9007199254740993.0;
    double u2 = (double)(tu_rand64() >> 11) / 9007199254740992.0;
    float f = (float)(0.02 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
    uint32_t b;
    if (normal && fabsf(f) < 1.0f / 8192) f = f < 0 ? -1.0f / 8192 : 1.0f / 8192;
    memcpy(&b, &f, 4);
    return b;
}

/* f32 -> FP8 (E5M2 when e5, else E4M3), truncating (the bench only needs realistic bytes):
   saturates at the format's largest finite value, subnormals below its smallest normal */
static unsigned char f8_from(float f, int e5) {
    int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    unsigned maxc = e5 ? 0x7B : 0x7E;
    uint32_t b, sign, e;
    unsigned code;
    memcpy(&b, &f, 4);
    sign = (b >> 24) & 0x80;
    e = (b >> 23) & 0xFF;
    if (e == 0xFF) return (unsigned char)(sign | maxc);
    if ((int)e - 127 + bias >= 1) {
        code = (unsigned)((int)e - 127 + bias) << mb | (unsigned)((b >> (23 - mb)) & ((1u << mb) - 1));
        if (code > maxc) code = maxc;
    } else {
        float a = f < 0 ? -f : f;
        code = (unsigned)(a * (float)(1 << (bias - 1 + mb)));   /* in units of the subnormal ulp */
    }
    return (unsigned char)(sign | code);
}

/* Input for the F4, E8M0 and FNUZ directions, made from the FP8 weights (one buffer, refilled
   when the source changes; F4 reads half the bytes: the output stays within 4x the input).
   F4: E2M1 codes of the weights scaled so 6 sigma is 6 (MXFP4-like), two a byte; E8M0: scales
   2^-8..2^7; FNUZ: the OCP code of twice the value (half the value in FNUZ), 0x80 made 0. */
static void fill_src(unsigned char *x, size_t n, safeload_dtype st, const unsigned char *e4,
                     const unsigned char *e5, const uint32_t *w, size_t nw, int rnd) {
    size_t k;
    for (k = 0; k < n; k++) {
        unsigned char b;
        if (rnd) b = (unsigned char)tu_rand64();
        else if (st == SAFELOAD_F8_E8M0) b = (unsigned char)(119 + tu_rand64() % 16);
        else if (st == SAFELOAD_F4) {
            unsigned c[2], h;
            for (h = 0; h < 2; h++) {
                float f, a;
                uint32_t bits = w[(2 * k + h) % nw];
                memcpy(&f, &bits, 4);
                a = (f < 0 ? -f : f) * 50.0f;
                c[h] = (a < 0.25f ? 0u : a < 0.75f ? 1u : a < 1.25f ? 2u : a < 1.75f ? 3u
                        : a < 2.5f ? 4u : a < 3.5f ? 5u : a < 5.0f ? 6u : 7u) | (f < 0 ? 8u : 0u);
            }
            b = (unsigned char)(c[0] | c[1] << 4);
        } else {
            b = st == SAFELOAD_F8_E4M3FNUZ ? e4[k] : e5[k];
            if (b == 0x80) b = 0;
        }
        x[k] = b;
    }
}

int main(int argc, char **argv) {
    size_t sizes[8];
    int nsizes = 0, ntmode = 2 /* auto */, reps_arg = 0, f8rand = 0, wnormal = 0, i, si, p;
    size_t maxin = 0, maxout = 0;
    unsigned char *src, *src5, *srcx, *dst, *mdst, *bufs[4];
    safeload_dtype srcx_dtype = SAFELOAD_DTYPE_NONE;      /* what srcx holds now */
    size_t srcx_n = 0;
    const char *env = getenv("SL_BENCH_SIZES"), *only = NULL;
    safeload_simd paths[SAFELOAD_SIMD_COUNT];
    int npaths = 0;
    (void)tu_fnv1a; /* testutil.h helpers this program does not need */
    (void)tu_finish;

    for (i = 1; i < argc; i++) {
        if (strncmp(argv[i], "nt=", 3) == 0) {
            const char *m = argv[i] + 3;
            ntmode = strcmp(m, "0") == 0 ? 0 : strcmp(m, "1") == 0 ? 1 : strcmp(m, "both") == 0 ? 3 : 2;
        } else if (strncmp(argv[i], "only=", 5) == 0) {
            only = argv[i] + 5;
        } else if (strcmp(argv[i], "f8=random") == 0) {
            f8rand = 1;
        } else if (strcmp(argv[i], "weights=normal") == 0) {
            wnormal = 1;
        } else if (strncmp(argv[i], "reps=", 5) == 0) {
            reps_arg = atoi(argv[i] + 5);
        } else if (nsizes < 8 && atof(argv[i]) > 0) {
            sizes[nsizes++] = (size_t)(atof(argv[i]) * 1048576.0);
        }
    }
    if (!nsizes && env) {
        char *copy = (char *)malloc(strlen(env) + 1), *tok;
        strcpy(copy, env);
        for (tok = strtok(copy, ","); tok && nsizes < 8; tok = strtok(NULL, ","))
            if (atof(tok) > 0) sizes[nsizes++] = (size_t)(atof(tok) * 1048576.0);
        free(copy);
    }
    if (!nsizes) { sizes[0] = (size_t)8 << 20; sizes[1] = (size_t)512 << 20; nsizes = 2; }
    for (si = 0; si < nsizes; si++) {
        sizes[si] &= ~(size_t)63;
        if (sizes[si] > maxin) maxin = sizes[si];
        if (sizes[si] * 4 > maxout) maxout = sizes[si] * 4;   /* f8 -> f32 quadruples */
    }
    for (p = SAFELOAD_SIMD_SCALAR; p < SAFELOAD_SIMD_COUNT; p++)
        if (safeload_simd_available((safeload_simd)p)) paths[npaths++] = (safeload_simd)p;

    /* one source buffer per input width, filled with the same weights; one destination */
    src = (unsigned char *)big_alloc(maxin);     /* E4M3 */
    src5 = (unsigned char *)big_alloc(maxin);    /* E5M2 */
    srcx = (unsigned char *)big_alloc(maxin);    /* F4, E8M0 or FNUZ (fill_src) */
    dst = (unsigned char *)big_alloc(maxout);
    mdst = (unsigned char *)big_alloc(maxin);  /* memcpy's own: its dirty lines must not be
                                                   where the next cast stores (NT stores to a
                                                   cached dirty line wait for its write-back) */
    bufs[0] = (unsigned char *)big_alloc(maxin);    /* f32 */
    bufs[1] = (unsigned char *)big_alloc(maxin);    /* f16 */
    bufs[2] = (unsigned char *)big_alloc(maxin);    /* bf16 */
    bufs[3] = (unsigned char *)big_alloc(maxin);    /* f64 */
    if (!src || !src5 || !srcx || !dst || !mdst || !bufs[0] || !bufs[1] || !bufs[2] || !bufs[3]) {
        fprintf(stderr, "bench_cast: out of memory\n");
        return 1;
    }
    {   /* f32 weights; f16/bf16 (two halves), f64 and FP8 made from them. FP8 is scaled
           the way per-tensor-scaled checkpoints are: 6 sigma (0.12) maps to the format's
           largest value (448, 57344), and each weight is used 4 times, at 4 scales 1.5x
           apart. f8=random: random bytes instead (all 256 values alike, NaNs included). */
        size_t n32 = maxin / 4, k;
        uint32_t *w = (uint32_t *)(void *)bufs[0];
        for (k = 0; k < n32; k++) w[k] = weight_bits(wnormal);
        safeload_convert(bufs[1], SAFELOAD_F16, bufs[0], SAFELOAD_F32, n32);
        safeload_convert(bufs[1] + maxin / 2, SAFELOAD_F16, bufs[0], SAFELOAD_F32, n32);
        safeload_convert(bufs[2], SAFELOAD_BF16, bufs[0], SAFELOAD_F32, n32);
        safeload_convert(bufs[2] + maxin / 2, SAFELOAD_BF16, bufs[0], SAFELOAD_F32, n32);
        safeload_convert(bufs[3], SAFELOAD_F64, bufs[0], SAFELOAD_F32, maxin / 8);
        for (k = 0; k < maxin; k++) {
            float f;
            uint32_t b = w[k % n32];
            static const float sc[4] = { 1.0f, 1.5f, 0.6667f, 0.4444f };
            memcpy(&f, &b, 4);
            f *= sc[k / n32 % 4];
            src[k] = f8rand ? (unsigned char)tu_rand64() : f8_from(f * (448.0f / 0.12f), 0);
            src5[k] = f8rand ? (unsigned char)tu_rand64() : f8_from(f * (57344.0f / 0.12f), 1);
        }
    }

    printf("bench_cast: paths");
    for (p = 0; p < npaths; p++) printf(" %s", safeload_simd_name(paths[p]));
    printf("; best %s; nt=%s; FP8 input %s%s\n", safeload_simd_name(safeload_simd_best()),
           ntmode == 2 ? "auto (>= 8 MiB output)" : ntmode == 3 ? "both" : ntmode ? "1" : "0",
           f8rand ? "random bytes" : "from the weights",
           wnormal ? "; weights=normal (none below 2^-13)" : "");

    for (si = 0; si < nsizes; si++) {
        size_t in_bytes = sizes[si];
        int reps = reps_arg > 0 ? reps_arg : in_bytes >= ((size_t)128 << 20) ? 5 : 31;
        int nt_lo = ntmode == 3 ? 0 : ntmode, nt_hi = ntmode == 3 ? 1 : ntmode, nrows, r, k, c;
        /* below 1 MiB one call lasts microseconds, near the clock's grain: each sample then
           times `calls` back-to-back calls (about 1 MiB of input in all) and divides */
        int calls = in_bytes < ((size_t)1 << 20) ? (int)((((size_t)1 << 20) + in_bytes - 1) / in_bytes) : 1;
        double *mc = (double *)malloc(sizeof(double) * (size_t)reps * NDIRS * 4 * SAFELOAD_SIMD_COUNT), mc_med;
        double res_t[NDIRS][4 * SAFELOAD_SIMD_COUNT], res_r[NDIRS][4 * SAFELOAD_SIMD_COUNT];
        safeload_convert_desc res_cd[NDIRS][4 * SAFELOAD_SIMD_COUNT];
        const char *res_sfx[NDIRS][4 * SAFELOAD_SIMD_COUNT];
        int res_n[NDIRS], nmc = 0;
        if (reps > 64) reps = 64;
        for (i = 0; i < (int)NDIRS; i++) {
            const dir_t *d = &DIRS[i];
            int x = d->src == SAFELOAD_F4 || d->src == SAFELOAD_F8_E8M0 ||
                    d->src == SAFELOAD_F8_E4M3FNUZ || d->src == SAFELOAD_F8_E5M2FNUZ;
            size_t ib = d->src == SAFELOAD_F4 ? in_bytes / 2 : in_bytes;
            size_t n = d->src == SAFELOAD_F4 ? in_bytes : in_bytes / safeload_dtype_size(d->src);
            const unsigned char *s = d->src == SAFELOAD_F32 ? bufs[0] : d->src == SAFELOAD_F16 ? bufs[1]
                                   : d->src == SAFELOAD_BF16 ? bufs[2] : d->src == SAFELOAD_F64 ? bufs[3]
                                   : d->src == SAFELOAD_F8_E4M3 ? src : x ? srcx : src5;
            safeload_convert_desc cd[4 * SAFELOAD_SIMD_COUNT];
            unsigned off[4 * SAFELOAD_SIMD_COUNT];     /* CPU features masked off */
            const char *sfx[4 * SAFELOAD_SIMD_COUNT];  /* row name after the path's */
            double t[4 * SAFELOAD_SIMD_COUNT][64], q[4 * SAFELOAD_SIMD_COUNT][64];
            /* FP8 -> f16/bf16 on a VBMI CPU: the avx512 paths also without the VBMI tables */
            int f8 = (d->src == SAFELOAD_F8_E4M3 || d->src == SAFELOAD_F8_E5M2) && d->dst != SAFELOAD_F32 &&
                     (sl__cpu_word() & SL__CPU_VBMI);
            /* rows: scalar once, every other path once per NT mode */
            nrows = 0;
            res_n[i] = 0;
            if (only && !strstr(only, d->name)) continue;
            if (x && (srcx_dtype != d->src || srcx_n != ib)) {
                fill_src(srcx, ib, d->src, src, src5, (const uint32_t *)(void *)bufs[0], maxin / 4,
                         f8rand);
                srcx_dtype = d->src;
                srcx_n = ib;
            }
            for (p = 0; p < npaths; p++) {
                int ntv;
                for (ntv = nt_lo; ntv <= nt_hi; ntv++) {
                    if (paths[p] == SAFELOAD_SIMD_SCALAR && ntv != nt_lo) continue;
                    int vbmi = f8 && (paths[p] == SAFELOAD_SIMD_AVX512 ||
                                      paths[p] == SAFELOAD_SIMD_AVX512BF16);
                    cd[nrows].simd = paths[p];
                    cd[nrows].nt_stores = ntv == 2 ? 0 : ntv ? 1 : -1;
                    off[nrows] = 0;
                    sfx[nrows++] = vbmi ? "+vbmi" : "";
                    if (vbmi) {
                        cd[nrows] = cd[nrows - 1];
                        off[nrows] = SL__CPU_VBMI;
                        sfx[nrows++] = "-novbmi";
                    }
                }
            }
            /* each row is timed right after a memcpy of the same input size (below 128 MiB the
               second of two back-to-back copies, so with a warm cache), and the ratio is taken
               per pair: a burst of load from other processes hits both sides of a pair alike */
            for (r = 0; r < reps; r++) {
                for (k = 0; k < nrows; k++) {
                    double t0, tm;
                    if (in_bytes < ((size_t)128 << 20)) memcpy(mdst, bufs[0], in_bytes);
                    t0 = now();
                    for (c = 0; c < calls; c++) {
                        memcpy(mdst, bufs[0], in_bytes);
                        bench_clobber(mdst);
                    }
                    tm = (now() - t0) / calls;
                    mc[nmc++] = tm;
                    t0 = now();
                    for (c = 0; c < calls; c++) {
                        if (sl__convert_w(sl__cpu_word() & ~off[k], dst, d->dst, s, d->src, n, &cd[k]) !=
                            SAFELOAD_OK) {
                            fprintf(stderr, "convert failed\n");
                            return 1;
                        }
                    }
                    t[k][r] = (now() - t0) / calls;
                    /* (in+out / t) / (2 in / tm) */
                    q[k][r] = (double)(ib + n * safeload_dtype_size(d->dst)) * tm / (2.0 * in_bytes * t[k][r]);
                }
            }
            res_n[i] = nrows;
            for (k = 0; k < nrows; k++) {
                res_cd[i][k] = cd[k];
                res_sfx[i][k] = sfx[k];
                res_t[i][k] = median(t[k], reps);
                res_r[i][k] = median(q[k], reps);
            }
            fprintf(stderr, "%s ", d->name);
        }
        fprintf(stderr, "\n");
        mc_med = median(mc, nmc);
        if (in_bytes < ((size_t)1 << 20))
            printf("\n## input %.0f KiB, %d rounds of %d calls", in_bytes / 1024.0, reps, calls);
        else
            printf("\n## input %.0f MiB, %d rounds", in_bytes / 1048576.0, reps);
        printf(" (medians; x memcpy: median of per-round ratios to "
               "the memcpy timed just before; memcpy row: all %d of its samples)\n\n", nmc);
        printf("| direction | path | nt | in GB/s | in+out GB/s | x memcpy in+out | target | "
               "x scalar |\n|---|---|---|---|---|---|---|---|\n");
        printf("| memcpy | libc | - | %.2f | %.2f | 1.00 | - | - |\n", in_bytes / mc_med / 1e9,
               2.0 * in_bytes / mc_med / 1e9);
        for (i = 0; i < (int)NDIRS; i++) {
            const dir_t *d = &DIRS[i];
            size_t dsz = safeload_dtype_size(d->dst);
            size_t ib = d->src == SAFELOAD_F4 ? in_bytes / 2 : in_bytes;
            size_t n = d->src == SAFELOAD_F4 ? in_bytes : in_bytes / safeload_dtype_size(d->src);
            double t_scalar = 0;
            for (k = 0; k < res_n[i]; k++) {
                const safeload_convert_desc *c = &res_cd[i][k];
                double tm = res_t[i][k], ior = (double)(ib + n * dsz) / tm / 1e9;
                double ratio = res_r[i][k];
                int scalar = c->simd == SAFELOAD_SIMD_SCALAR;
                int used_nt = !scalar && c->simd != SAFELOAD_SIMD_NEON &&
                              (c->nt_stores > 0 || (c->nt_stores == 0 && n * dsz >= ((size_t)8 << 20)));
                if (scalar) t_scalar = tm;
                printf("| %s | %s%s | %s | %.2f | %.2f | %.2f | %s%s | %.1f |\n", d->name,
                       safeload_simd_name(c->simd), res_sfx[i][k], used_nt ? "yes" : "no", ib / tm / 1e9,
                       ior, ratio, scalar ? "" : d->rounds ? ">=0.6" : ">=0.9",
                       scalar ? "-" : ratio >= (d->rounds ? 0.6 : 0.9) ? " ok" : " MISS",
                       t_scalar > 0 ? t_scalar / tm : 0.0);
            }
        }
        fflush(stdout);
        printf("\nmemcpy samples: median %.2f, slowest %.2f, fastest %.2f GB/s in+out\n",
               2.0 * in_bytes / mc_med / 1e9, 2.0 * in_bytes / mc[nmc - 1] / 1e9,
               2.0 * in_bytes / mc[0] / 1e9);
        free(mc);
    }
    return 0;
}
