/* Cast kernels: every SIMD path against the scalar reference, bit for bit, and the scalar
   reference against an independent oracle written with double arithmetic (frexp/ldexp and an
   explicit round-half-even). Runs in a few seconds; also built with ASan/UBSan and for AArch64. */
#if !defined(_WIN32)
#  define _GNU_SOURCE /* setenv; pread and friends where safeload.h is not the first include */
#endif
#include "testutil.h"
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include <math.h>

#if defined(__x86_64__) || defined(_M_X64)
#  include <xmmintrin.h>
#  define FPENV_T unsigned
static FPENV_T fpenv_get(void) { return _mm_getcsr(); }
static void fpenv_set(FPENV_T v) { _mm_setcsr(v); }
/* FTZ (bit 15) + DAZ (bit 6) + round toward zero (bits 13-14), exceptions masked */
#  define FPENV_HOSTILE (0x1F80u | 0x8000u | 0x0040u | 0x6000u)
#  define FPENV_NAME "MXCSR FTZ+DAZ+RZ"
#elif defined(__aarch64__)
#  define FPENV_T uint64_t
static FPENV_T fpenv_get(void) { uint64_t v; __asm__ __volatile__("mrs %0, fpcr" : "=r"(v)); return v; }
static void fpenv_set(FPENV_T v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v)); }
/* FZ (bit 24) + DN (bit 25) + RMode = RZ (bits 22-23) */
#  define FPENV_HOSTILE ((uint64_t)0x03C00000u)
#  define FPENV_NAME "FPCR FZ+DN+RZ"
#endif

/* ------------------------------------------------------------------------------------------
   Directions and paths
   ------------------------------------------------------------------------------------------ */
typedef struct { safeload_dtype dst, src; const char *name; } dir_t;
static const dir_t DIRS[] = {
    { SAFELOAD_F16, SAFELOAD_F32, "f32->f16" },   { SAFELOAD_F32, SAFELOAD_F16, "f16->f32" },
    { SAFELOAD_BF16, SAFELOAD_F32, "f32->bf16" }, { SAFELOAD_F32, SAFELOAD_BF16, "bf16->f32" },
    { SAFELOAD_BF16, SAFELOAD_F16, "f16->bf16" }, { SAFELOAD_F16, SAFELOAD_BF16, "bf16->f16" },
    { SAFELOAD_F32, SAFELOAD_F8_E4M3, "e4m3->f32" }, { SAFELOAD_F16, SAFELOAD_F8_E4M3, "e4m3->f16" },
    { SAFELOAD_BF16, SAFELOAD_F8_E4M3, "e4m3->bf16" }, { SAFELOAD_F32, SAFELOAD_F8_E5M2, "e5m2->f32" },
    { SAFELOAD_F16, SAFELOAD_F8_E5M2, "e5m2->f16" }, { SAFELOAD_BF16, SAFELOAD_F8_E5M2, "e5m2->bf16" },
    { SAFELOAD_F32, SAFELOAD_F64, "f64->f32" },   { SAFELOAD_F64, SAFELOAD_F32, "f32->f64" },
    { SAFELOAD_F32, SAFELOAD_F32, "f32 copy" },   { SAFELOAD_F16, SAFELOAD_F16, "f16 copy" },
    { SAFELOAD_BF16, SAFELOAD_BF16, "bf16 copy" },
    { SAFELOAD_F32, SAFELOAD_F4, "f4->f32" },     { SAFELOAD_F16, SAFELOAD_F4, "f4->f16" },
    { SAFELOAD_BF16, SAFELOAD_F4, "f4->bf16" },   { SAFELOAD_F32, SAFELOAD_F8_E8M0, "e8m0->f32" },
    { SAFELOAD_F16, SAFELOAD_F8_E8M0, "e8m0->f16" }, { SAFELOAD_BF16, SAFELOAD_F8_E8M0, "e8m0->bf16" },
    { SAFELOAD_F32, SAFELOAD_F8_E4M3FNUZ, "e4m3fnuz->f32" },
    { SAFELOAD_F16, SAFELOAD_F8_E4M3FNUZ, "e4m3fnuz->f16" },
    { SAFELOAD_BF16, SAFELOAD_F8_E4M3FNUZ, "e4m3fnuz->bf16" },
    { SAFELOAD_F32, SAFELOAD_F8_E5M2FNUZ, "e5m2fnuz->f32" },
    { SAFELOAD_F16, SAFELOAD_F8_E5M2FNUZ, "e5m2fnuz->f16" },
    { SAFELOAD_BF16, SAFELOAD_F8_E5M2FNUZ, "e5m2fnuz->bf16" },
};
#define FIRST_NEW_DIR 17                /* DIRS[17..]: the F4, E8M0 and FNUZ sources */

#define NDIRS (sizeof DIRS / sizeof DIRS[0])

/* Paths under test, with CPU features masked off (g_off) to reach kernels this CPU would not
   pick: on a VBMI CPU the avx512 paths are run once with the FP8 tables and once without. */
static safeload_simd g_paths[2 * SAFELOAD_SIMD_COUNT];
static unsigned g_off[2 * SAFELOAD_SIMD_COUNT];
static char g_name[2 * SAFELOAD_SIMD_COUNT][32];
static int g_npaths;

static safeload_result conv(void *dst, safeload_dtype dt, const void *src, safeload_dtype st,
                            size_t n, safeload_simd simd, int nt) {
    safeload_convert_desc d;
    d.simd = simd;
    d.nt_stores = nt;
    return safeload_convert_ex(dst, dt, src, st, n, &d);
}

/* conv on path variant p */
static safeload_result convp(void *dst, safeload_dtype dt, const void *src, safeload_dtype st,
                             size_t n, int p, int nt) {
    safeload_convert_desc d;
    d.simd = g_paths[p];
    d.nt_stores = nt;
    return sl__convert_w(sl__cpu_word() & ~g_off[p], dst, dt, src, st, n, &d);
}

static uint64_t load_bits(const unsigned char *p, size_t sz) {
    uint64_t v = 0;
    switch (sz) {
    case 1: v = p[0]; break;
    case 2: { uint16_t t; memcpy(&t, p, 2); v = t; } break;
    case 4: { uint32_t t; memcpy(&t, p, 4); v = t; } break;
    default: memcpy(&v, p, 8); break;
    }
    return v;
}

/* Compare got with want (n elements of the dst dtype); on mismatch report the first one with
   its input. Returns the number of mismatches. */
static size_t compare(const char *what, const dir_t *d, const void *src, const void *want,
                      const void *got, size_t n) {
    size_t dz = safeload_dtype_size(d->dst), sz = safeload_dtype_size(d->src), i, bad = 0, first = 0;
    uint64_t in;
    if (memcmp(want, got, n * dz) == 0) { tu_checks++; return 0; }
    for (i = 0; i < n; i++) {
        if (memcmp((const unsigned char *)want + i * dz, (const unsigned char *)got + i * dz, dz)) {
            if (!bad) first = i;
            bad++;
        }
    }
    if (d->src == SAFELOAD_F4) {            /* the element's nibble */
        in = ((const unsigned char *)src)[first / 2] >> (first % 2 * 4) & 15u;
        sz = 1;
    } else {
        in = load_bits((const unsigned char *)src + first * sz, sz);
    }
    CHECK_MSG(bad == 0, "%s %s: %zu mismatches; first at %zu: in 0x%0*llx want 0x%0*llx got 0x%0*llx",
              what, d->name, bad, first, (int)(2 * sz), (unsigned long long)in,
              (int)(2 * dz), (unsigned long long)load_bits((const unsigned char *)want + first * dz, dz),
              (int)(2 * dz), (unsigned long long)load_bits((const unsigned char *)got + first * dz, dz));
    return bad;
}

static const dir_t *find_dir(safeload_dtype dst, safeload_dtype src) {
    size_t i;
    for (i = 0; i < NDIRS; i++)
        if (DIRS[i].dst == dst && DIRS[i].src == src) return &DIRS[i];
    return NULL;
}

/* Every available path, with NT stores never / always / by size, on one input set against the
   scalar result; dst is also shifted by 2 and 6 bytes to exercise the NT head/tail code. */
static void all_paths_vs_scalar(const char *what, safeload_dtype dt, safeload_dtype st,
                                const void *src, size_t n) {
    const dir_t *d = find_dir(dt, st);
    size_t dz = safeload_dtype_size(dt), k;
    unsigned char *want = (unsigned char *)malloc(n * dz + 64);
    unsigned char *got = (unsigned char *)malloc(n * dz + 64);
    static const size_t offs[] = { 0, 2, 6 };
    static const int nts[] = { -1, 1, 0 };
    int p, t;
    CHECK(conv(want, dt, src, st, n, SAFELOAD_SIMD_SCALAR, -1) == SAFELOAD_OK);
    for (p = 0; p < g_npaths; p++) {
        for (t = 0; t < 3; t++) {
            for (k = 0; k < sizeof offs / sizeof offs[0]; k++) {
                char label[160];
                if (offs[k] % dz) continue;
                memset(got, 0xCD, n * dz + 64);
                snprintf(label, sizeof label, "%.48s [%.31s nt=%d dst+%zu]", what,
                         g_name[p], nts[t], offs[k]);
                CHECK(convp(got + offs[k], dt, src, st, n, p, nts[t]) == SAFELOAD_OK);
                compare(label, d, src, want, got + offs[k], n);
            }
        }
    }
    free(want);
    free(got);
}

/* ------------------------------------------------------------------------------------------
   The independent oracle: values as doubles, rounding done on the value.
   ------------------------------------------------------------------------------------------ */
/* Round v >= 0 to p significand bits, normal exponents down to 2^emin (gradual underflow),
   ties to even, exponent unbounded above (the caller turns too-large results into Inf). */
static double o_round(double v, int p, int emin) {
    int e, q;
    double scaled, fl, diff;
    if (v == 0) return 0;
    (void)frexp(v, &e);                 /* v in [2^(e-1), 2^e) */
    q = e - p;                          /* ulp there */
    if (q < emin - p + 1) q = emin - p + 1;
    scaled = ldexp(v, -q);
    fl = floor(scaled);
    diff = scaled - fl;
    if (diff > 0.5 || (diff == 0.5 && fmod(fl, 2.0) != 0)) fl += 1;
    return ldexp(fl, q);
}
/* Bits of a rounded value r >= 0 in a format with p significand bits, ebits exponent bits. */
static uint64_t o_encode(double r, int neg, int p, int ebits) {
    int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias, e;
    uint64_t sign = (uint64_t)(neg ? 1 : 0) << (p - 1 + ebits), bits;
    double f;
    if (r >= ldexp(1.0, bias + 1)) return sign | ((uint64_t)((1 << ebits) - 1) << (p - 1));
    if (r < ldexp(1.0, emin)) return sign | (uint64_t)ldexp(r, -(emin - p + 1));
    f = frexp(r, &e);                   /* r = f * 2^e, f in [0.5, 1) */
    bits = ((uint64_t)(e - 1 + bias) << (p - 1)) | (uint64_t)ldexp(2 * f - 1, p - 1);
    return sign | bits;
}
/* Value of the non-NaN bits x in a format with p significand bits, ebits exponent bits. */
static double o_decode(uint64_t x, int p, int ebits, int *neg) {
    int bias = (1 << (ebits - 1)) - 1;
    uint64_t m = x & ((1ull << (p - 1)) - 1), E = (x >> (p - 1)) & ((1u << ebits) - 1);
    *neg = (int)((x >> (p - 1 + ebits)) & 1);
    if (E == (uint64_t)((1 << ebits) - 1) && ebits != 4) return HUGE_VAL;   /* Inf (not E4M3) */
    if (E == 0) return ldexp((double)m, 1 - bias - (p - 1));
    return ldexp((double)(m | (1ull << (p - 1))), (int)E - bias - (p - 1));
}

/* f32 input -> f16 / bf16 bits by the oracle; NaN rules written out from the contract. */
static uint16_t o_f32_to_f16(uint32_t x) {
    int neg;
    double v;
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)(((x >> 16) & 0x8000u) | 0x7E00u | ((x >> 13) & 0x3FFu));
    v = o_decode(x, 24, 8, &neg);
    return (uint16_t)o_encode(v == HUGE_VAL ? v : o_round(v, 11, -14), neg, 11, 5);
}
static uint16_t o_f32_to_bf16(uint32_t x) {
    int neg;
    double v;
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
    v = o_decode(x, 24, 8, &neg);
    return (uint16_t)o_encode(v == HUGE_VAL ? v : o_round(v, 8, -126), neg, 8, 8);
}
static uint32_t o_f64_to_f32(uint64_t x) {
    int neg;
    double v;
    uint32_t s = (uint32_t)(x >> 32) & 0x80000000u;
    if ((x & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull)
        return s | 0x7FC00000u | (uint32_t)((x >> 29) & 0x7FFFFFu);
    memcpy(&v, &x, 8);
    neg = v < 0 || (v == 0 && s);
    v = fabs(v);
    return (uint32_t)o_encode(v == HUGE_VAL ? v : o_round(v, 24, -126), neg, 24, 8);
}
/* Small formats -> f32 bits by value (exact); NaNs by the contract's rules. */
static uint32_t o_small_to_f32(uint32_t x, int p, int ebits) {
    int neg, total = p + ebits;
    uint32_t signbit = 1u << (total - 1), mag = x & (signbit - 1), s = (x & signbit) ? 0x80000000u : 0;
    uint32_t expall = ((1u << ebits) - 1) << (p - 1);
    double v;
    if (ebits == 4) { if (mag == 0x7F) return s | 0x7FC00000u; }           /* E4M3: S.1111.111 */
    else if ((mag & expall) == expall && (mag & ~expall))                   /* IEEE-like NaN */
        return s | 0x7F800000u | 0x400000u | ((mag & ~expall) << (24 - p));
    v = o_decode(x, p, ebits, &neg);
    if (v == HUGE_VAL) return s | 0x7F800000u;
    return (uint32_t)o_encode(v, neg, 24, 8);  /* exact: every value fits f32 */
}
static uint64_t o_f32_to_f64(uint32_t x) {
    int neg;
    double v;
    uint64_t b, s = (uint64_t)(x >> 31) << 63;
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return s | 0x7FF8000000000000ull | ((uint64_t)(x & 0x7FFFFFu) << 29);
    v = o_decode(x, 24, 8, &neg);
    if (neg) v = -v;
    if (v == 0 && neg) v = -0.0;
    memcpy(&b, &v, 8);
    return b;
}

/* ------------------------------------------------------------------------------------------
   Scalar reference vs oracle
   ------------------------------------------------------------------------------------------ */
static void check_oracle_f32_to_16(const char *what, const uint32_t *in, size_t n) {
    uint16_t *a = (uint16_t *)malloc(n * 2), *b = (uint16_t *)malloc(n * 2);
    size_t i, bad16 = 0, badbf = 0;
    CHECK(conv(a, SAFELOAD_F16, in, SAFELOAD_F32, n, SAFELOAD_SIMD_SCALAR, -1) == SAFELOAD_OK);
    for (i = 0; i < n; i++) {
        uint16_t o = o_f32_to_f16(in[i]);
        if (o != a[i] && bad16++ == 0)
            fprintf(stderr, "oracle f32->f16 (%s): in 0x%08x oracle 0x%04x scalar 0x%04x\n", what,
                    (unsigned)in[i], o, a[i]);
    }
    CHECK_MSG(bad16 == 0, "%s: %zu f32->f16 oracle mismatches", what, bad16);
    CHECK(conv(b, SAFELOAD_BF16, in, SAFELOAD_F32, n, SAFELOAD_SIMD_SCALAR, -1) == SAFELOAD_OK);
    for (i = 0; i < n; i++) {
        uint16_t o = o_f32_to_bf16(in[i]);
        if (o != b[i] && badbf++ == 0)
            fprintf(stderr, "oracle f32->bf16 (%s): in 0x%08x oracle 0x%04x scalar 0x%04x\n", what,
                    (unsigned)in[i], o, b[i]);
    }
    CHECK_MSG(badbf == 0, "%s: %zu f32->bf16 oracle mismatches", what, badbf);
    free(a);
    free(b);
}

static size_t push_around(uint32_t *v, size_t k, uint32_t x) {   /* x and its +-1 ulp, both signs */
    v[k++] = x; v[k++] = x + 1; v[k++] = x - 1;
    v[k++] = x | 0x80000000u; v[k++] = (x + 1) | 0x80000000u; v[k++] = (x - 1) | 0x80000000u;
    return k;
}

static void test_oracle(void) {
    size_t cap = 2000000, k = 0, i, bad;
    uint32_t *v = (uint32_t *)malloc(cap * sizeof *v);
    uint32_t h, b;
    /* every finite f16 value, the ties halfway to the next one, and their +-1 ulp neighbours:
       every exponent, normal and subnormal. The tie is exact in f32. */
    for (h = 0; h < 0x7C00; h++) {
        int neg;
        double lo = o_decode(h, 11, 5, &neg), hi = o_decode(h + 1, 11, 5, &neg);
        float mid = (float)((lo + hi) / 2), fl = (float)lo;
        uint32_t mb, lb;
        memcpy(&mb, &mid, 4);
        memcpy(&lb, &fl, 4);
        k = push_around(v, k, mb);
        if (lb) k = push_around(v, k, lb);
    }
    /* every finite bf16 value, its ties and neighbours */
    for (b = 0; b < 0x7F80; b++) {
        k = push_around(v, k, (b << 16) | 0x8000u);
        if (b) k = push_around(v, k, b << 16);
    }
    {   /* boundaries */
        static const uint32_t bnd[] = {
            0x477FE000u /* 65504 */, 0x477FF000u /* 65520 */, 0x47800000u /* 65536 */,
            0x33800000u /* 2^-24 */, 0x33000000u /* 2^-25 */, 0x33400000u /* 1.5 * 2^-25 */,
            0x387FC000u /* max f16 subnormal */, 0x38800000u /* min f16 normal */,
            0x7F7F0000u /* max finite bf16 */, 0x7F7F8000u /* tie to Inf */, 0x7F7FFFFFu,
            0x7F800000u, 0x00000001u, 0x00008000u, 0x00008001u, 0x007FFFFFu, 0x00800000u,
            0x00000000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x7FA00000u, 0x7F802000u,
            0x3F800000u
        };
        for (i = 0; i < sizeof bnd / sizeof bnd[0]; i++) k = push_around(v, k, bnd[i]);
    }
    check_oracle_f32_to_16("ties/boundaries", v, k);
    printf("  oracle: %zu f32 tie/neighbour/boundary inputs\n", k);
    /* random: uniform bits, and values around the f16 range */
    for (i = 0; i < 1000000; i++) {
        uint64_t r = tu_rand64();
        if (i & 1) v[i] = (uint32_t)r;
        else v[i] = (uint32_t)(r & 0x807FFFFFu) | ((uint32_t)(90 + (r >> 40) % 70) << 23);
    }
    check_oracle_f32_to_16("random", v, 1000000);

    {   /* 16-bit inputs: all 2^16 through f16->f32, bf16->f32, f16<->bf16 */
        uint16_t *in = (uint16_t *)malloc(65536 * 2), *o16 = (uint16_t *)malloc(65536 * 2);
        uint32_t *o32 = (uint32_t *)malloc(65536 * 4);
        size_t bad2 = 0, bad3 = 0, bad4 = 0;
        for (i = 0; i < 65536; i++) in[i] = (uint16_t)i;
        bad = 0;
        CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F16, 65536, SAFELOAD_SIMD_SCALAR, -1) == 0);
        for (i = 0; i < 65536; i++) bad += o32[i] != o_small_to_f32((uint32_t)i, 11, 5);
        CHECK_MSG(bad == 0, "oracle f16->f32: %zu mismatches", bad);
        CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_BF16, 65536, SAFELOAD_SIMD_SCALAR, -1) == 0);
        for (i = 0; i < 65536; i++) {
            uint32_t want = o_small_to_f32((uint32_t)i, 8, 8);
            /* the bf16 -> f32 rule is bits << 16 for NaN too (no quieting): check it directly */
            if ((i & 0x7FFF) > 0x7F80) want = (uint32_t)i << 16;
            bad2 += o32[i] != want;
        }
        CHECK_MSG(bad2 == 0, "oracle bf16->f32: %zu mismatches", bad2);
        CHECK(conv(o16, SAFELOAD_BF16, in, SAFELOAD_F16, 65536, SAFELOAD_SIMD_SCALAR, -1) == 0);
        for (i = 0; i < 65536; i++) bad3 += o16[i] != o_f32_to_bf16(o_small_to_f32((uint32_t)i, 11, 5));
        CHECK_MSG(bad3 == 0, "oracle f16->bf16: %zu mismatches", bad3);
        CHECK(conv(o16, SAFELOAD_F16, in, SAFELOAD_BF16, 65536, SAFELOAD_SIMD_SCALAR, -1) == 0);
        for (i = 0; i < 65536; i++) {
            uint32_t f = (i & 0x7FFF) > 0x7F80 ? (uint32_t)i << 16 : o_small_to_f32((uint32_t)i, 8, 8);
            bad4 += o16[i] != o_f32_to_f16(f);
        }
        CHECK_MSG(bad4 == 0, "oracle bf16->f16: %zu mismatches", bad4);
        free(in); free(o16); free(o32);
    }
    {   /* all 256 of both f8 formats to f32, f16, bf16 */
        unsigned char in[256];
        uint32_t o32[256];
        uint16_t o16[256], ob[256];
        int f;
        for (i = 0; i < 256; i++) in[i] = (unsigned char)i;
        for (f = 0; f < 2; f++) {
            safeload_dtype st = f ? SAFELOAD_F8_E5M2 : SAFELOAD_F8_E4M3;
            int p = f ? 3 : 4, eb = f ? 5 : 4;
            CHECK(conv(o32, SAFELOAD_F32, in, st, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
            CHECK(conv(o16, SAFELOAD_F16, in, st, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
            CHECK(conv(ob, SAFELOAD_BF16, in, st, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
            bad = 0;
            for (i = 0; i < 256; i++) {
                uint32_t w = o_small_to_f32((uint32_t)i, p, eb);
                if (o32[i] != w || o16[i] != o_f32_to_f16(w) || ob[i] != o_f32_to_bf16(w)) {
                    if (!bad)
                        fprintf(stderr, "oracle %s: in 0x%02x f32 0x%08x/0x%08x f16 0x%04x/0x%04x "
                                "bf16 0x%04x/0x%04x (oracle/scalar)\n", f ? "e5m2" : "e4m3",
                                (unsigned)i, (unsigned)w, (unsigned)o32[i], o_f32_to_f16(w),
                                o16[i], o_f32_to_bf16(w), ob[i]);
                    bad++;
                }
            }
            CHECK_MSG(bad == 0, "oracle %s: %zu mismatches", f ? "e5m2" : "e4m3", bad);
        }
        /* spot values from the OCP spec */
        CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F8_E4M3, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
        CHECK_EQ_U64(o32[0x7E], 0x43E00000u);   /* 448 */
        CHECK_EQ_U64(o32[0x01], 0x3B000000u);   /* 2^-9 */
        CHECK_EQ_U64(o32[0xFF], 0xFFC00000u);   /* -NaN */
        CHECK_EQ_U64(o32[0x78], 0x43800000u);   /* 256 */
        CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F8_E5M2, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
        CHECK_EQ_U64(o32[0x7B], 0x47600000u);   /* 57344 */
        CHECK_EQ_U64(o32[0x7C], 0x7F800000u);   /* Inf */
        CHECK_EQ_U64(o32[0x7D], 0x7FE00000u);   /* NaN, payload 01, quieted */
        CHECK_EQ_U64(o32[0x01], 0x37800000u);   /* 2^-16 */
    }
    {   /* f64 -> f32: f32 ties in double, +-1 ulp (double), boundaries, random; f32 -> f64 */
        uint64_t *d = (uint64_t *)malloc(cap * 8);
        uint32_t *o = (uint32_t *)malloc(cap * 4);
        uint64_t *o64 = (uint64_t *)malloc(cap * 8);
        size_t n = 0;
        static const uint64_t dbnd[] = {
            0x47EFFFFFE0000000ull /* FLT_MAX */, 0x47EFFFFFF0000000ull /* tie to Inf */,
            0x47F0000000000000ull /* 2^128 */, 0x36A0000000000000ull /* 2^-149 */,
            0x3690000000000000ull /* 2^-150: tie to 0 */, 0x3698000000000000ull,
            0x380FFFFFC0000000ull /* max f32 subnormal */, 0x3810000000000000ull /* 2^-126 */,
            0x380FFFFFE0000000ull /* tie to 2^-126 */, 0x0000000000000001ull, 0x000FFFFFFFFFFFFFull,
            0x7FF0000000000000ull, 0x7FF0000000000001ull, 0x7FF8000000000000ull,
            0x7FF4000020000000ull, 0x7FFFFFFFFFFFFFFFull, 0x3FF0000000000000ull, 0
        };
        for (i = 0; i < sizeof dbnd / sizeof dbnd[0]; i++) {
            uint64_t x = dbnd[i], s;
            for (s = 0; s < 2; s++) {
                uint64_t sg = s << 63;
                d[n++] = sg | x;
                d[n++] = sg | (x + 1);
                if (x) d[n++] = sg | (x - 1);
            }
        }
        for (i = 0; i < 300000; i++) {            /* ties between random f32 neighbours */
            uint32_t f = (uint32_t)tu_rand64() & 0x7F7FFFFFu;
            int neg;
            double lo = o_decode(f, 24, 8, &neg), hi = o_decode(f + 1, 24, 8, &neg), mid = (lo + hi) / 2;
            uint64_t mb, sg = (tu_rand64() & 1) << 63;
            memcpy(&mb, &mid, 8);
            d[n++] = sg | mb; d[n++] = sg | (mb + 1); d[n++] = sg | (mb - 1);
        }
        for (i = 0; i < 300000; i++) {            /* random: raw bits and f32-range values */
            uint64_t r = tu_rand64();
            d[n++] = (i & 1) ? r : ((r & 0x800FFFFFFFFFFFFFull) | ((uint64_t)(1023 - 160 + (r >> 52) % 300) << 52));
        }
        CHECK(conv(o, SAFELOAD_F32, d, SAFELOAD_F64, n, SAFELOAD_SIMD_SCALAR, -1) == 0);
        bad = 0;
        for (i = 0; i < n; i++) {
            uint32_t w = o_f64_to_f32(d[i]);
            if (w != o[i] && bad++ == 0)
                fprintf(stderr, "oracle f64->f32: in 0x%016llx oracle 0x%08x scalar 0x%08x\n",
                        (unsigned long long)d[i], (unsigned)w, (unsigned)o[i]);
        }
        CHECK_MSG(bad == 0, "oracle f64->f32: %zu mismatches of %zu", bad, n);
        for (i = 0; i < k; i++) o[i] = v[i];       /* f32 -> f64 on the f32 tie set + random */
        for (; i < k + 1000000 && i < cap; i++) o[i] = (uint32_t)tu_rand64();
        CHECK(conv(o64, SAFELOAD_F64, o, SAFELOAD_F32, i, SAFELOAD_SIMD_SCALAR, -1) == 0);
        n = i;
        bad = 0;
        for (i = 0; i < n; i++) bad += o64[i] != o_f32_to_f64(o[i]);
        CHECK_MSG(bad == 0, "oracle f32->f64: %zu mismatches", bad);
        free(d); free(o); free(o64);
    }
    free(v);
}

/* F4, E8M0 and the FNUZ FP8s by value, from the formats' definitions (the F4 values listed as
   the OCP MX spec lists them); *nan for the one NaN code. Written apart from the library's
   bit-level decoders. */
static double o_new_value(safeload_dtype st, unsigned code, int *nan, int *neg) {
    static const double e2m1[8] = { 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0 };
    int bias, mb;
    unsigned e, m;
    *nan = 0;
    *neg = 0;
    if (st == SAFELOAD_F4) { *neg = (code >> 3) & 1; return e2m1[code & 7]; }
    if (st == SAFELOAD_F8_E8M0) {
        if (code == 255) { *nan = 1; return 0; }
        return ldexp(1.0, (int)code - 127);
    }
    if (code == 0x80) { *nan = 1; return 0; }
    bias = st == SAFELOAD_F8_E4M3FNUZ ? 8 : 16;
    mb = st == SAFELOAD_F8_E4M3FNUZ ? 3 : 2;
    *neg = code >> 7;
    e = (code & 0x7F) >> mb;
    m = code & ((1u << mb) - 1);
    if (e == 0) return ldexp((double)m, 1 - bias - mb);                     /* subnormal */
    return ldexp((double)((1u << mb) + m), (int)e - bias - mb);
}

static void test_new_oracle(void) {
    static const safeload_dtype srcs[4] = { SAFELOAD_F4, SAFELOAD_F8_E8M0, SAFELOAD_F8_E4M3FNUZ,
                                            SAFELOAD_F8_E5M2FNUZ };
    unsigned char in[256];
    uint32_t o32[512];
    uint16_t o16[512], ob[512];
    size_t i, n;
    int f;
    for (i = 0; i < 256; i++) in[i] = (unsigned char)i;
    for (f = 0; f < 4; f++) {
        safeload_dtype st = srcs[f];
        size_t bad = 0;
        n = st == SAFELOAD_F4 ? 512 : 256;          /* F4: every byte, both nibbles */
        CHECK(conv(o32, SAFELOAD_F32, in, st, n, SAFELOAD_SIMD_SCALAR, -1) == 0);
        CHECK(conv(o16, SAFELOAD_F16, in, st, n, SAFELOAD_SIMD_SCALAR, -1) == 0);
        CHECK(conv(ob, SAFELOAD_BF16, in, st, n, SAFELOAD_SIMD_SCALAR, -1) == 0);
        for (i = 0; i < n; i++) {
            unsigned code = st == SAFELOAD_F4 ? (unsigned)(in[i / 2] >> (i % 2 * 4)) & 15u
                                              : (unsigned)in[i];
            int nan, neg;
            double v = o_new_value(st, code, &nan, &neg);
            uint32_t w32 = nan ? 0x7FC00000u : (uint32_t)o_encode(v, neg, 24, 8);
            uint16_t w16 = nan ? 0x7E00u : (uint16_t)o_encode(o_round(v, 11, -14), neg, 11, 5);
            uint16_t wb = nan ? 0x7FC0u : (uint16_t)o_encode(o_round(v, 8, -126), neg, 8, 8);
            if (o32[i] != w32 || o16[i] != w16 || ob[i] != wb) {
                if (!bad)
                    fprintf(stderr, "oracle %s: code 0x%02x f32 0x%08x/0x%08x f16 0x%04x/0x%04x "
                            "bf16 0x%04x/0x%04x (oracle/scalar)\n", safeload_dtype_name(st), code,
                            (unsigned)w32, (unsigned)o32[i], w16, o16[i], wb, ob[i]);
                bad++;
            }
        }
        CHECK_MSG(bad == 0, "oracle %s: %zu mismatches", safeload_dtype_name(st), bad);
    }
    /* spot values */
    CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F4, 512, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o32[2 * 0x27], 0x40C00000u);          /* byte 0x27: low nibble 7 = 6.0 */
    CHECK_EQ_U64(o32[2 * 0x27 + 1], 0x3F800000u);      /* high nibble 2 = 1.0 */
    CHECK_EQ_U64(o32[2 * 0x90 + 1], 0xBF000000u);      /* byte 0x90: high nibble 9 = -0.5 */
    CHECK_EQ_U64(o32[2 * 0x08], 0x80000000u);          /* code 8 = -0 */
    CHECK(conv(o16, SAFELOAD_F16, in, SAFELOAD_F4, 512, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o16[2 * 0x0F], 0xC600u);               /* -6 */
    CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F8_E8M0, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o32[127], 0x3F800000u);                /* 1 */
    CHECK_EQ_U64(o32[0], 0x00400000u);                  /* 2^-127, an f32 subnormal */
    CHECK_EQ_U64(o32[254], 0x7F000000u);                /* 2^127 */
    CHECK_EQ_U64(o32[255], 0x7FC00000u);                /* NaN */
    CHECK(conv(o16, SAFELOAD_F16, in, SAFELOAD_F8_E8M0, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o16[142], 0x7800u);                    /* 2^15, the largest that fits */
    CHECK_EQ_U64(o16[143], 0x7C00u);                    /* 2^16 overflows to +Inf */
    CHECK_EQ_U64(o16[113], 0x0400u);                    /* 2^-14, the smallest normal */
    CHECK_EQ_U64(o16[112], 0x0200u);                    /* 2^-15: subnormal */
    CHECK_EQ_U64(o16[103], 0x0001u);                    /* 2^-24, the smallest subnormal */
    CHECK_EQ_U64(o16[102], 0x0000u);                    /* 2^-25: the tie rounds to even, 0 */
    CHECK_EQ_U64(o16[0], 0x0000u);
    CHECK_EQ_U64(o16[255], 0x7E00u);
    CHECK(conv(ob, SAFELOAD_BF16, in, SAFELOAD_F8_E8M0, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(ob[0], 0x0040u);                       /* 2^-127 exact in bf16 */
    CHECK_EQ_U64(ob[255], 0x7FC0u);
    CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F8_E4M3FNUZ, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o32[0x7F], 0x43700000u);               /* 240 */
    CHECK_EQ_U64(o32[0xFF], 0xC3700000u);               /* -240: a number, not a NaN */
    CHECK_EQ_U64(o32[0x01], 0x3A800000u);               /* 2^-10 */
    CHECK_EQ_U64(o32[0x40], 0x3F800000u);               /* 1 */
    CHECK_EQ_U64(o32[0x80], 0x7FC00000u);               /* the NaN */
    CHECK(conv(o32, SAFELOAD_F32, in, SAFELOAD_F8_E5M2FNUZ, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o32[0x7F], 0x47600000u);               /* 57344 */
    CHECK_EQ_U64(o32[0x7C], 0x47000000u);               /* 32768: no Inf */
    CHECK_EQ_U64(o32[0x01], 0x37000000u);               /* 2^-17 */
    CHECK_EQ_U64(o32[0x40], 0x3F800000u);               /* 1 */
    CHECK_EQ_U64(o32[0x80], 0x7FC00000u);
    CHECK(conv(o16, SAFELOAD_F16, in, SAFELOAD_F8_E5M2FNUZ, 256, SAFELOAD_SIMD_SCALAR, -1) == 0);
    CHECK_EQ_U64(o16[0x01], 0x0080u);                   /* 2^-17: an f16 subnormal, exact */
    CHECK_EQ_U64(o16[0x80], 0x7E00u);
}

/* ------------------------------------------------------------------------------------------
   SIMD paths vs scalar
   ------------------------------------------------------------------------------------------ */
/* Every input once in order, then the same inputs shuffled: some kernels take a second form
   for a block that holds a NaN, a zero or a subnormal, and only a shuffle puts those next to
   ordinary values in every lane position. */
static void test_16bit_inputs(const char *what) {
    uint16_t *in = (uint16_t *)malloc(65536 * 2);
    size_t i, pass;
    for (i = 0; i < 65536; i++) in[i] = (uint16_t)i;
    for (pass = 0; pass < 2; pass++) {
        char w[96];
        snprintf(w, sizeof w, "%s%s", what, pass ? " shuffled" : "");
        for (i = 65535; pass && i > 0; i--) {
            size_t j = (size_t)(tu_rand64() % (i + 1));
            uint16_t t = in[i];
            in[i] = in[j];
            in[j] = t;
        }
        all_paths_vs_scalar(w, SAFELOAD_F32, SAFELOAD_F16, in, 65536);
        all_paths_vs_scalar(w, SAFELOAD_F32, SAFELOAD_BF16, in, 65536);
        all_paths_vs_scalar(w, SAFELOAD_BF16, SAFELOAD_F16, in, 65536);
        all_paths_vs_scalar(w, SAFELOAD_F16, SAFELOAD_BF16, in, 65536);
    }
    free(in);
}

static void test_f8(const char *what) {
    unsigned char in[256 + 4096];
    int i;
    for (i = 0; i < 256; i++) in[i] = (unsigned char)i;
    for (; i < (int)sizeof in; i++) in[i] = (unsigned char)tu_rand64();   /* mixed blocks */
    all_paths_vs_scalar(what, SAFELOAD_F32, SAFELOAD_F8_E4M3, in, sizeof in);
    all_paths_vs_scalar(what, SAFELOAD_F16, SAFELOAD_F8_E4M3, in, sizeof in);
    all_paths_vs_scalar(what, SAFELOAD_BF16, SAFELOAD_F8_E4M3, in, sizeof in);
    all_paths_vs_scalar(what, SAFELOAD_F32, SAFELOAD_F8_E5M2, in, sizeof in);
    all_paths_vs_scalar(what, SAFELOAD_F16, SAFELOAD_F8_E5M2, in, sizeof in);
    all_paths_vs_scalar(what, SAFELOAD_BF16, SAFELOAD_F8_E5M2, in, sizeof in);
    {   /* F4, E8M0, FNUZ: every byte, then random (F4: every pair of nibbles, then random) */
        size_t d;
        for (d = FIRST_NEW_DIR; d < NDIRS; d++)
            all_paths_vs_scalar(what, DIRS[d].dst, DIRS[d].src, in,
                                DIRS[d].src == SAFELOAD_F4 ? 2 * sizeof in : sizeof in);
    }
}

static uint32_t *g_f32set;
static uint64_t *g_f64set;
static size_t g_nf32, g_nf64;

static void make_random_sets(void) {
    static const uint32_t sp[] = {
        0, 0x80000000u, 1, 0x80000001u, 0x007FFFFFu, 0x00800000u, 0x00008000u, 0x00008001u,
        0x3F800000u, 0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x47800000u,
        0x33000000u, 0x33000001u, 0x32FFFFFFu, 0x33800000u, 0x387FE000u, 0x387FF000u,
        0x38800000u, 0x7F7F7FFFu, 0x7F7F8000u, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u,
        0x7F800001u, 0x7FC00000u, 0xFFC00001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0xFFFFFFFFu,
        0x7FA00000u, 0x7F802000u, 0x3F808000u, 0x3F818000u
    };
    size_t i, n = 1000000;
    g_f32set = (uint32_t *)malloc((n + 64) * 4);
    g_f64set = (uint64_t *)malloc((n + 64) * 8);
    for (i = 0; i < sizeof sp / sizeof sp[0]; i++) g_f32set[i] = sp[i];
    for (; i < n; i++) {
        uint64_t r = tu_rand64();
        switch (i % 4) {
        case 0: g_f32set[i] = (uint32_t)r; break;
        case 1: g_f32set[i] = (uint32_t)(r & 0x807FFFFFu) | ((uint32_t)(95 + (r >> 40) % 60) << 23); break;
        case 2: g_f32set[i] = ((uint32_t)r & 0xFFFF0000u) | 0x8000u | (uint32_t)((r >> 40) & 1); break;
        default: g_f32set[i] = ((uint32_t)r & 0xFFFFE000u) | 0x1000u; break;  /* f16 ties */
        }
    }
    g_nf32 = n;
    for (i = 0; i < n; i++) {
        uint64_t r = tu_rand64();
        switch (i % 4) {
        case 0: g_f64set[i] = r; break;
        case 1: g_f64set[i] = (r & 0x800FFFFFFFFFFFFFull) | ((uint64_t)(1023 - 160 + (r >> 52) % 300) << 52); break;
        case 2: g_f64set[i] = (r & 0xFFFFFFFFE0000000ull) | 0x10000000ull; break;  /* f32 ties */
        default: g_f64set[i] = ((uint64_t)g_f32set[i] << 29) ^ ((r & 1) << 63); break;
        }
    }
    g_f64set[0] = 0x7FF4000000000001ull;
    g_f64set[1] = 0x36A0000000000000ull;
    g_f64set[2] = 0x47EFFFFFF0000000ull;
    g_nf64 = n;
}

/* Runs of 64 f32s that all lie in one region, so whole SIMD blocks stay on a kernel's fast form
   (SSE2 f32->f16 takes its integer form only for a block whose results are all normal): random
   exponent and mantissa within the f16 normal range, f16 ties there, and consecutive bit
   patterns across the edges where the fast form stops (2^-14, 65504..65536 and beyond), each
   run with a random sign. */
static uint32_t *g_f32runs;
static size_t g_nf32runs;

static void make_run_set(void) {
    static const uint32_t edges[] = { 0x387FDFE0u, 0x387FEFE0u, 0x387FFFE0u, 0x38800FE0u,
                                      0x38801FE0u, 0x477FDFE0u, 0x477FEFE0u, 0x477FFFE0u,
                                      0x47800FE0u, 0x47801FE0u, 0x47802FE0u, 0x4780FFE0u };
    size_t n = 1 << 18, i, k;
    g_f32runs = (uint32_t *)malloc(n * 4);
    for (i = 0; i < n; i += 64) {
        uint64_t r = tu_rand64();
        uint32_t sign = (uint32_t)(r & 1) << 31, e = (uint32_t)(113 + (r >> 8) % 30);
        for (k = 0; k < 64; k++) {
            uint32_t m = (uint32_t)tu_rand64() & 0x7FFFFFu, x;
            switch ((r >> 1) % 4) {
            case 0: x = e << 23 | m; break;
            case 1: x = e << 23 | (m & ~0x1FFFu) | 0x1000u; break;    /* f16 ties */
            case 2: x = e << 23 | (m & ~0x1FFFu) | ((m & 1) ? 0x1001u : 0x0FFFu); break;
            default: x = edges[(r >> 16) % (sizeof edges / sizeof edges[0])] + (uint32_t)k; break;
            }
            g_f32runs[i + k] = sign | x;
        }
    }
    g_nf32runs = n;
}

static void test_random_sets(const char *what) {
    all_paths_vs_scalar(what, SAFELOAD_F16, SAFELOAD_F32, g_f32runs, g_nf32runs);
    all_paths_vs_scalar(what, SAFELOAD_BF16, SAFELOAD_F32, g_f32runs, g_nf32runs);
    all_paths_vs_scalar(what, SAFELOAD_F16, SAFELOAD_F32, g_f32set, g_nf32);
    all_paths_vs_scalar(what, SAFELOAD_BF16, SAFELOAD_F32, g_f32set, g_nf32);
    all_paths_vs_scalar(what, SAFELOAD_F64, SAFELOAD_F32, g_f32set, g_nf32);
    all_paths_vs_scalar(what, SAFELOAD_F32, SAFELOAD_F64, g_f64set, g_nf64);
}

/* Odd lengths 0..130 at misaligned src/dst, guard bytes around dst. */
static void test_lengths(void) {
    enum { MAXN = 300, GUARD = 64 };
    static const size_t soffs[] = { 0, 1, 3 }, doffs[] = { 0, 1, 2, 6, 62 };
    unsigned char src[MAXN * 8 + 16], want[MAXN * 8 + 16], buf[MAXN * 8 + 2 * GUARD + 128];
    size_t di, n, a, b, i;
    int p, t;
    for (i = 0; i < sizeof src; i++) src[i] = (unsigned char)tu_rand64();
    for (di = 0; di < NDIRS; di++) {
        const dir_t *d = &DIRS[di];
        size_t dz = safeload_dtype_size(d->dst), bad = 0;
        for (a = 0; a < sizeof soffs / sizeof soffs[0]; a++) {
            /* every length to 300 for the new sources, to 130 for the others (as before) */
            for (n = 0; n <= (di >= FIRST_NEW_DIR ? (size_t)MAXN : 130); n++) {
                CHECK(conv(want, d->dst, src + soffs[a], d->src, n, SAFELOAD_SIMD_SCALAR, -1) == 0);
                for (p = 0; p < g_npaths; p++) {
                    for (t = -1; t <= 1; t += 2) {
                        for (b = 0; b < sizeof doffs / sizeof doffs[0]; b++) {
                            unsigned char *dst;
                            /* place dst at a fixed misalignment relative to a 64-byte boundary */
                            size_t base = (size_t)(((uintptr_t)buf + GUARD + 63) & ~(uintptr_t)63) -
                                          (size_t)(uintptr_t)buf;
                            dst = buf + base + doffs[b];
                            memset(buf, 0xA5, sizeof buf);
                            if (convp(dst, d->dst, src + soffs[a], d->src, n, p, t) != 0 ||
                                memcmp(dst, want, n * dz) != 0) {
                                if (!bad++)
                                    fprintf(stderr, "%s [%s nt=%d] n=%zu src+%zu dst+%zu: wrong bits\n",
                                            d->name, g_name[p], t, n, soffs[a], doffs[b]);
                            }
                            for (i = 0; i < sizeof buf; i++) {
                                if ((buf + i < dst || buf + i >= dst + n * dz) && buf[i] != 0xA5) {
                                    if (!bad++)
                                        fprintf(stderr, "%s [%s nt=%d] n=%zu dst+%zu: guard byte %ld clobbered\n",
                                                d->name, g_name[p], t, n, doffs[b],
                                                (long)(buf + i - dst));
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        CHECK_MSG(bad == 0, "%s: %zu length/alignment failures", d->name, bad);
    }
}

/* ------------------------------------------------------------------------------------------
   API contract
   ------------------------------------------------------------------------------------------ */
static int expect_supported(safeload_dtype dst, safeload_dtype src) {
    int f = src == SAFELOAD_F32 || src == SAFELOAD_F16 || src == SAFELOAD_BF16;
    int t = dst == SAFELOAD_F32 || dst == SAFELOAD_F16 || dst == SAFELOAD_BF16;
    if (f && t) return 1;
    if ((src == SAFELOAD_F8_E4M3 || src == SAFELOAD_F8_E5M2) && t) return 1;
    if ((src == SAFELOAD_F64 && dst == SAFELOAD_F32) || (src == SAFELOAD_F32 && dst == SAFELOAD_F64)) return 1;
    if ((src == SAFELOAD_F4 || src == SAFELOAD_F8_E8M0 || src == SAFELOAD_F8_E4M3FNUZ ||
         src == SAFELOAD_F8_E5M2FNUZ) && t) return 1;
    return 0;
}

static void test_api(void) {
    unsigned char a[64], b[64];
    int s, d, p;
    size_t big = (size_t)-1 / 2 + 1;
    memset(a, 0, sizeof a);
    for (s = 0; s <= SAFELOAD_DTYPE_COUNT; s++) {
        for (d = 0; d <= SAFELOAD_DTYPE_COUNT; d++) {
            int want = expect_supported((safeload_dtype)d, (safeload_dtype)s);
            safeload_result r = safeload_convert(b, (safeload_dtype)d, a, (safeload_dtype)s, 1);
            CHECK_MSG(safeload_can_convert((safeload_dtype)d, (safeload_dtype)s) == want, "can_convert %d<-%d", d, s);
            CHECK_MSG(r == (want ? SAFELOAD_OK : SAFELOAD_UNSUPPORTED_CONVERSION), "convert %d<-%d gave %d", d, s, (int)r);
            CHECK_MSG((sl__cast_resolve((safeload_dtype)d, (safeload_dtype)s, SAFELOAD_SIMD_AUTO, 0) != NULL) == want,
                      "resolve %d<-%d", d, s);
            if (!want) CHECK(safeload_convert(b, (safeload_dtype)d, a, (safeload_dtype)s, 0) == SAFELOAD_UNSUPPORTED_CONVERSION);
        }
    }
    /* overflow of count x element size */
    CHECK(safeload_convert(b, SAFELOAD_F16, a, SAFELOAD_F32, big) == SAFELOAD_OVERFLOW);
    CHECK(safeload_convert(b, SAFELOAD_F32, a, SAFELOAD_F8_E4M3, (size_t)-1 / 4 + 1) == SAFELOAD_OVERFLOW);
    CHECK(safeload_convert(b, SAFELOAD_F32, a, SAFELOAD_F64, (size_t)-1 / 8 + 1) == SAFELOAD_OVERFLOW);
    CHECK(safeload_convert(b, SAFELOAD_F16, a, SAFELOAD_F16, (size_t)-1) == SAFELOAD_OVERFLOW);
    CHECK(safeload_convert(b, SAFELOAD_F32, a, SAFELOAD_F4, (size_t)-1 / 4 + 1) == SAFELOAD_OVERFLOW);
    CHECK(safeload_convert(b, SAFELOAD_F16, a, SAFELOAD_F4, (size_t)-1 / 2 + 1) == SAFELOAD_OVERFLOW);
    CHECK(safeload_convert(b, SAFELOAD_BF16, a, SAFELOAD_F8_E8M0, (size_t)-1 / 2 + 1) == SAFELOAD_OVERFLOW);
    /* F4 reads ceil(count / 2) bytes: 16 elements end where dst begins, 17 overlap it; no cast
       works in place (dst and src must not overlap) */
    CHECK(safeload_convert(a + 8, SAFELOAD_F16, a, SAFELOAD_F4, 16) == SAFELOAD_OK);
    CHECK(safeload_convert(a + 8, SAFELOAD_F16, a, SAFELOAD_F4, 17) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_convert(a, SAFELOAD_F16, a + 8, SAFELOAD_F4, 1) == SAFELOAD_OK);
    CHECK(safeload_convert(a + 7, SAFELOAD_F16, a + 8, SAFELOAD_F4, 1) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_convert(a, SAFELOAD_F32, a, SAFELOAD_F8_E4M3FNUZ, 4) == SAFELOAD_INVALID_ARGUMENT);
    {   /* an odd count converts the low nibble of the last byte and nothing past it */
        unsigned char in4[2] = { 0x21, 0x73 };
        uint32_t o4[4] = { 0, 0, 0, 0xDEADBEEFu };
        CHECK(safeload_convert(o4, SAFELOAD_F32, in4, SAFELOAD_F4, 3) == SAFELOAD_OK);
        CHECK(o4[0] == 0x3F000000u && o4[1] == 0x3F800000u && o4[2] == 0x3FC00000u &&
              o4[3] == 0xDEADBEEFu);
        CHECK(safeload_convert(o4, SAFELOAD_F32, in4, SAFELOAD_F4, 1) == SAFELOAD_OK);
        CHECK(o4[0] == 0x3F000000u && o4[1] == 0x3F800000u);
    }
    /* NULL, count 0, overlap, bad desc */
    CHECK(safeload_convert(NULL, SAFELOAD_F16, a, SAFELOAD_F32, 1) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_convert(b, SAFELOAD_F16, NULL, SAFELOAD_F32, 1) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_convert(NULL, SAFELOAD_F16, NULL, SAFELOAD_F32, 0) == SAFELOAD_OK);
    CHECK(safeload_convert(a, SAFELOAD_F16, a + 4, SAFELOAD_F32, 4) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_convert(a + 8, SAFELOAD_F32, a, SAFELOAD_F16, 5) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_convert(a + 8, SAFELOAD_F32, a, SAFELOAD_F16, 4) == SAFELOAD_OK); /* adjacent */
    CHECK(safeload_convert(a + 8, SAFELOAD_F16, a, SAFELOAD_F16, 4) == SAFELOAD_OK);
    CHECK(conv(b, SAFELOAD_F16, a, SAFELOAD_F32, 1, (safeload_simd)-1, 0) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(conv(b, SAFELOAD_F16, a, SAFELOAD_F32, 1, SAFELOAD_SIMD_COUNT, 0) == SAFELOAD_INVALID_ARGUMENT);
    /* paths: names, availability, forcing an unavailable one */
    CHECK_STR(safeload_simd_name(SAFELOAD_SIMD_AUTO), "auto");
    CHECK_STR(safeload_simd_name(SAFELOAD_SIMD_AVX512BF16), "avx512bf16");
    CHECK(safeload_simd_name(SAFELOAD_SIMD_COUNT) == NULL);
    CHECK(safeload_simd_available(SAFELOAD_SIMD_AUTO) && safeload_simd_available(SAFELOAD_SIMD_SCALAR));
    CHECK(!safeload_simd_available(SAFELOAD_SIMD_COUNT));
    CHECK(safeload_simd_available(safeload_simd_best()));
    for (p = SAFELOAD_SIMD_SCALAR; p < SAFELOAD_SIMD_COUNT; p++) {
        safeload_result r = conv(b, SAFELOAD_F16, a, SAFELOAD_F32, 4, (safeload_simd)p, 0);
        int av = safeload_simd_available((safeload_simd)p);
        CHECK_MSG(r == (av ? SAFELOAD_OK : SAFELOAD_UNSUPPORTED), "forced %s gave %d", safeload_simd_name((safeload_simd)p), (int)r);
        CHECK((sl__cast_resolve(SAFELOAD_F16, SAFELOAD_F32, (safeload_simd)p, 1) != NULL) == av);
        CHECK((sl__cast_resolve(SAFELOAD_F16, SAFELOAD_F32, (safeload_simd)p, 0) != NULL) == av);
    }
#if defined(__x86_64__) || defined(_M_X64)
    CHECK(!safeload_simd_available(SAFELOAD_SIMD_NEON));
#  if !defined(SAFELOAD_NO_SIMD)
    CHECK(safeload_simd_available(SAFELOAD_SIMD_SSE2));
#  endif
#elif defined(__aarch64__)
    CHECK(!safeload_simd_available(SAFELOAD_SIMD_SSE2) && !safeload_simd_available(SAFELOAD_SIMD_AVX2));
#  if !defined(SAFELOAD_NO_SIMD)
    CHECK(safeload_simd_available(SAFELOAD_SIMD_NEON));
#  endif
#endif
    /* availability is hierarchical on x86 */
    if (safeload_simd_available(SAFELOAD_SIMD_AVX512BF16)) CHECK(safeload_simd_available(SAFELOAD_SIMD_AVX512));
    if (safeload_simd_available(SAFELOAD_SIMD_AVX512)) CHECK(safeload_simd_available(SAFELOAD_SIMD_AVX2));
    if (safeload_simd_available(SAFELOAD_SIMD_AVX2)) CHECK(safeload_simd_available(SAFELOAD_SIMD_SSE2));
#if !defined(_WIN32)
    {   /* SAFELOAD_SIMD parsing and the AUTO cap (detection re-run; the cached word is not) */
        unsigned w;
        setenv("SAFELOAD_SIMD", "scalar", 1);
        CHECK(sl__simd_pick(sl__cpu_detect()) == SAFELOAD_SIMD_SCALAR);
        setenv("SAFELOAD_SIMD", "sse2", 1);
        w = sl__cpu_detect();
        CHECK(sl__simd_pick(w) == (sl__simd_avail(w, SAFELOAD_SIMD_SSE2) ? SAFELOAD_SIMD_SSE2 : SAFELOAD_SIMD_SCALAR));
        setenv("SAFELOAD_SIMD", "avx512bf16", 1);   /* x86: no cap; AArch64: below NEON */
        w = sl__cpu_detect();
        CHECK(sl__simd_pick(w) == (sl__simd_avail(w, SAFELOAD_SIMD_NEON) ? SAFELOAD_SIMD_SCALAR
                                                                          : sl__simd_pick(w & ~0xF00u)));
        setenv("SAFELOAD_SIMD", "neon", 1);         /* x86: ranks above all, so no cap */
        w = sl__cpu_detect();
        CHECK(sl__simd_pick(w) == sl__simd_pick(w & ~0xF00u));
        setenv("SAFELOAD_SIMD", "bogus", 1);
        CHECK(sl__simd_pick(sl__cpu_detect()) == sl__simd_pick(sl__cpu_detect() & ~0xF00u));
        unsetenv("SAFELOAD_SIMD");
    }
#endif
}

/* safeload_nbytes: exact values, sub-byte rounding, zero dimensions and the 64-bit edges */
static void test_nbytes(void) {
    const uint64_t M = UINT64_MAX, P32 = (uint64_t)1 << 32;
    uint64_t out, s[3];
#define NB(dt, r, want) do {                                                                  \
        out = 12345;                                                                          \
        CHECK(safeload_nbytes(dt, s, r, &out) == SAFELOAD_OK);                                \
        CHECK_EQ_U64(out, want);                                                              \
    } while (0)
#define NB_FAIL(dt, r, res) do {                                                              \
        out = 12345;                                                                          \
        CHECK(safeload_nbytes(dt, s, r, &out) == (res));                                      \
        CHECK_EQ_U64(out, 0);                                                                 \
    } while (0)
    s[0] = 2; s[1] = 3; s[2] = 5;
    NB(SAFELOAD_F32, 2, 24); NB(SAFELOAD_BF16, 3, 60); NB(SAFELOAD_C64, 1, 16);
    NB(SAFELOAD_F4, 2, 3); NB(SAFELOAD_F4, 3, 15); NB(SAFELOAD_F6_E2M3, 2, 5);  /* 36 bits */
    NB(SAFELOAD_F64, 0, 8); NB(SAFELOAD_F4, 0, 1); NB(SAFELOAD_F6_E3M2, 0, 1);  /* scalars */
    s[0] = 1; NB(SAFELOAD_F4, 1, 1); NB(SAFELOAD_F6_E2M3, 1, 1);
    s[0] = 5; NB(SAFELOAD_F4, 1, 3); NB(SAFELOAD_F6_E2M3, 1, 4);                   /* 30 bits */
    s[0] = 4; NB(SAFELOAD_F6_E3M2, 1, 3); NB(SAFELOAD_BOOL, 1, 4);
    s[0] = 0; NB(SAFELOAD_U64, 1, 0);
    s[0] = M; s[1] = 0; NB(SAFELOAD_U64, 2, 0);                   /* a zero: 0 bytes */
    s[0] = P32; s[1] = P32; s[2] = 0; NB(SAFELOAD_F32, 3, 0);     /* even past an overflow */
    /* the 64-bit edges */
    s[0] = M; NB(SAFELOAD_U8, 1, M); NB(SAFELOAD_F4, 1, (uint64_t)1 << 63);
    NB(SAFELOAD_F6_E2M3, 1, (uint64_t)3 << 62);                   /* ceil(3 (2^64 - 1) / 4) */
    NB_FAIL(SAFELOAD_U16, 1, SAFELOAD_OVERFLOW);
    s[0] = M / 2; NB(SAFELOAD_I16, 1, M - 1);
    s[0] = M / 2 + 1; NB_FAIL(SAFELOAD_I16, 1, SAFELOAD_OVERFLOW);
    s[0] = M / 8; NB(SAFELOAD_F64, 1, M - 7);
    s[0] = M / 8 + 1; NB_FAIL(SAFELOAD_F64, 1, SAFELOAD_OVERFLOW);
    s[0] = (M / 4) * 3 + 2; NB(SAFELOAD_F6_E3M2, 1, (uint64_t)9 << 60);  /* ceil(6 (3 2^62 - 1) / 8) */
    s[0] = P32; s[1] = P32; NB_FAIL(SAFELOAD_U8, 2, SAFELOAD_OVERFLOW);
    s[1] = P32 - 1; NB(SAFELOAD_U8, 2, P32 * (P32 - 1));
    s[1] = P32 / 2; NB_FAIL(SAFELOAD_U16, 2, SAFELOAD_OVERFLOW);  /* 2^63 elements x 2 bytes */
    NB(SAFELOAD_F4, 2, (uint64_t)1 << 62);
    /* bad arguments */
    s[0] = 1;
    NB_FAIL(SAFELOAD_DTYPE_NONE, 1, SAFELOAD_INVALID_ARGUMENT);
    NB_FAIL(SAFELOAD_DTYPE_COUNT, 1, SAFELOAD_INVALID_ARGUMENT);
    NB_FAIL((safeload_dtype)-1, 1, SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_nbytes(SAFELOAD_F32, NULL, 1, &out) == SAFELOAD_INVALID_ARGUMENT && out == 0);
    CHECK(safeload_nbytes(SAFELOAD_F32, NULL, 0, &out) == SAFELOAD_OK && out == 4);
    CHECK(safeload_nbytes(SAFELOAD_F32, s, 1, NULL) == SAFELOAD_INVALID_ARGUMENT);
    s[0] = 7; s[1] = 3;                                            /* out may alias the shape */
    CHECK(safeload_nbytes(SAFELOAD_F6_E2M3, s, 2, &s[1]) == SAFELOAD_OK && s[1] == 16);
#undef NB
#undef NB_FAIL
    {   /* every dtype of a parsed file: the header's byte sizes */
        safeload_save_tensor st[SAFELOAD_DTYPE_COUNT];
        uint64_t sh[SAFELOAD_DTYPE_COUNT][2];
        static unsigned char data[SAFELOAD_DTYPE_COUNT * 64];
        void *img = NULL;
        size_t isz = 0, k, nt = 0;
        char names[SAFELOAD_DTYPE_COUNT][8];
        safeload_file *f;
        safeload_error e;
        for (k = 1; k < SAFELOAD_DTYPE_COUNT; k++, nt++) {
            safeload_dtype dt = (safeload_dtype)k;
            memset(&st[nt], 0, sizeof st[nt]);
            snprintf(names[nt], sizeof names[nt], "t%u", (unsigned)k);
            sh[nt][0] = 3; sh[nt][1] = 4;              /* 12 elements: whole bytes for F4, F6 */
            st[nt].name = names[nt]; st[nt].dtype = dt; st[nt].rank = 2; st[nt].shape = sh[nt];
            st[nt].data = data; st[nt].nbytes = 12 * safeload_dtype_bits(dt) / 8;
        }
        CHECK(safeload_serialize(&img, &isz, st, nt, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_open_memory(&f, img, isz, NULL, &e) == SAFELOAD_OK);
        for (k = 0; k < safeload_tensor_count(f); k++) {
            const safeload_tensor *t = safeload_tensor_at(f, k);
            CHECK(safeload_nbytes(t->dtype, t->shape, t->rank, &out) == SAFELOAD_OK);
            CHECK_EQ_U64(out, t->nbytes);
        }
        safeload_close(f);
        safeload_free(img, NULL);
    }
}

int main(void) {
    int p;
    (void)tu_fnv1a; /* testutil.h helper this test does not need */
    for (p = SAFELOAD_SIMD_SCALAR; p < SAFELOAD_SIMD_COUNT; p++)
        if (safeload_simd_available((safeload_simd)p)) {
            g_paths[g_npaths] = (safeload_simd)p;
            snprintf(g_name[g_npaths++], sizeof g_name[0], "%s", safeload_simd_name((safeload_simd)p));
            if ((p == SAFELOAD_SIMD_AVX512 || p == SAFELOAD_SIMD_AVX512BF16) &&
                (sl__cpu_word() & SL__CPU_VBMI)) {
                g_paths[g_npaths] = (safeload_simd)p;
                g_off[g_npaths] = SL__CPU_VBMI;
                snprintf(g_name[g_npaths++], sizeof g_name[0], "%s-novbmi",
                         safeload_simd_name((safeload_simd)p));
            }
        }
    {   /* SAFELOAD_TEST_EXPECT_PATHS: what the caller knows this CPU has (the MSVC-mode run
           checks its __cpuidex/_xgetbv detection with it) */
        char list[1024] = "";
        const char *want = getenv("SAFELOAD_TEST_EXPECT_PATHS");
        for (p = 0; p < g_npaths; p++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", p ? " " : "", g_name[p]);
        printf("test_cast: paths: %s (auto = %s)\n", list, safeload_simd_name(safeload_simd_best()));
        if (want) CHECK_STR(list, want);
    }

    test_api();
    test_nbytes();
    test_oracle();
    test_new_oracle();
    make_random_sets();
    make_run_set();
    test_16bit_inputs("all 2^16");
    test_f8("all 256");
    test_random_sets("specials+random");
    test_lengths();
#if defined(FPENV_HOSTILE)
    {   /* everything once more under a hostile FP environment; the kernels must leave it alone */
        FPENV_T saved = fpenv_get();
        fpenv_set(FPENV_HOSTILE);
        CHECK(fpenv_get() == FPENV_HOSTILE);
        test_16bit_inputs("all 2^16 under " FPENV_NAME);
        test_f8("all 256 under " FPENV_NAME);
        test_random_sets("specials+random under " FPENV_NAME);
        CHECK_MSG(fpenv_get() == FPENV_HOSTILE, "kernels changed the FP control register");
        fpenv_set(saved);
    }
#endif
    free(g_f32set);
    free(g_f64set);
    free(g_f32runs);
    return tu_finish("test_cast");
}
