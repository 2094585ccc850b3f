/* Tiny test harness shared by the test programs. Each CHECK counts; a failure prints where and
   keeps going, and the program exits non-zero at the end if anything failed. */
#ifndef SAFELOAD_TESTUTIL_H
#define SAFELOAD_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#if defined(__GNUC__) || defined(__clang__)
#define TU_UNUSED __attribute__((unused))
#else
#define TU_UNUSED
#endif

static int tu_failures = 0;
static int tu_checks = 0;

#define CHECK(cond) do { tu_checks++; if (!(cond)) { tu_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define CHECK_MSG(cond, ...) do { tu_checks++; if (!(cond)) { tu_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK_EQ_U64(a, b) do { uint64_t tu_a = (uint64_t)(a), tu_b = (uint64_t)(b); tu_checks++; \
    if (tu_a != tu_b) { tu_failures++; fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n", \
    __FILE__, __LINE__, #a, #b, (unsigned long long)tu_a, (unsigned long long)tu_b); } } while (0)

#define CHECK_STR(a, b) do { const char *tu_a = (a), *tu_b = (b); tu_checks++; \
    if (!tu_a || !tu_b || strcmp(tu_a, tu_b) != 0) { tu_failures++; \
    fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, \
    tu_a ? tu_a : "(null)", tu_b ? tu_b : "(null)"); } } while (0)

TU_UNUSED static int tu_finish(const char *name) {
    if (tu_failures) {
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, tu_failures, tu_checks);
        return 1;
    }
    printf("%s: %d checks passed\n", name, tu_checks);
    return 0;
}

/* A test program's parts: TU_PART(test_pages()) runs one, and prints its seconds on stderr
   when SAFELOAD_TEST_TIMES is set (where a slow runner, a sanitizer or qemu, spends its
   time); SAFELOAD_TEST_ONLY=test_pages (a part's name, or the start of several names) runs
   those parts alone. Wall-clock seconds (the CPU clock where there is no POSIX one). */
TU_UNUSED static double tu_now(void) {
#if defined(CLOCK_MONOTONIC) && !defined(_WIN32)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}
TU_UNUSED static int tu_part_on(const char *call) {
    const char *only = getenv("SAFELOAD_TEST_ONLY");
    return !only || !*only || strncmp(call, only, strlen(only)) == 0;
}
#define TU_PART(call) do { double tu_t0_ = tu_now(); if (!tu_part_on(#call)) break; call; \
    if (getenv("SAFELOAD_TEST_TIMES")) \
        fprintf(stderr, "  %7.2f s  %s\n", tu_now() - tu_t0_, #call); } while (0)

/* SAFELOAD_TEST_QUICK (the sanitizer and qemu runs): a test tries fewer cases and failure
   points there, still reaching each path; the native run tries every one. */
TU_UNUSED static int tu_quick(void) { return getenv("SAFELOAD_TEST_QUICK") != NULL; }
/* When quick, a loop over thread counts runs two threads and 1 + k % 4 (k: the case, so the
   cases of a loop between them still run one, two, three and four threads). */
TU_UNUSED static int tu_skip_threads(int th, int k) {
    return tu_quick() && th != 2 && th != 1 + k % 4;
}

/* FNV-1a 64, the checksum used by MANIFEST.txt and `safeload load --checksum`. */
TU_UNUSED static uint64_t tu_fnv1a(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i;
    for (i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return h;
}
#define TU_FNV_BASIS 0xcbf29ce484222325ULL

/* A whole file into a fresh malloc'd buffer (one spare byte); NULL when it cannot be read. */
TU_UNUSED static unsigned char *tu_slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    unsigned char *p = NULL;
    long len;
    *n = 0;
    if (!fp) return NULL;
    if (fseek(fp, 0, SEEK_END) == 0 && (len = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
        p = (unsigned char *)malloc((size_t)len + 1);
        if (p && fread(p, 1, (size_t)len, fp) != (size_t)len) { free(p); p = NULL; }
        else if (p) *n = (size_t)len;
    }
    fclose(fp);
    return p;
}

/* A file image written by hand: the 8-byte length, the JSON header padded with spaces to a
   multiple of 8, then data_len bytes of data filled with a fixed pattern. The data section
   starts at *data_start. Free with free(). */
TU_UNUSED static unsigned char *tu_image(const char *header, size_t data_len, size_t *size,
                                         size_t *data_start) {
    size_t hl = strlen(header), pad = (8 - hl % 8) % 8, i;
    unsigned char *img = (unsigned char *)malloc(8 + hl + pad + data_len);
    if (!img) return NULL;
    for (i = 0; i < 8; i++) img[i] = (unsigned char)((uint64_t)(hl + pad) >> (8 * i));
    memcpy(img + 8, header, hl);
    memset(img + 8 + hl, ' ', pad);
    for (i = 0; i < data_len; i++) img[8 + hl + pad + i] = (unsigned char)(i * 7 + i / 256);
    *size = 8 + hl + pad + data_len;
    *data_start = 8 + hl + pad;
    return img;
}

/* Byte order. Files hold little-endian elements and loads hand out host order, so a test that
   compares loaded bytes with a file's bytes (or builds a file from host values) turns one into
   the other with tu_le: it reverses each unit-byte element (2, 4 or 8; 4 for C64, two F32) on
   a big-endian host and does nothing on a little-endian one. */
TU_UNUSED static int tu_big_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}
TU_UNUSED static void tu_le(void *data, size_t n, unsigned unit) {
    unsigned char *p = (unsigned char *)data, t;
    size_t i, k;
    if (!tu_big_endian() || unit < 2) return;
    for (i = 0; i + unit <= n; i += unit)
        for (k = 0; k < unit / 2; k++) {
            t = p[i + k];
            p[i + k] = p[i + unit - 1 - k];
            p[i + unit - 1 - k] = t;
        }
}
/* The unit tu_le takes for a dtype of `bits` bits (C64: pass 32), and tu_le by dtype. */
#define TU_UNIT(bits) ((bits) >= 16 ? (unsigned)(bits) / 8 : 1u)
#define TU_LE_DT(p, n, dt) \
    tu_le((p), (n), (dt) == SAFELOAD_C64 ? 4u : TU_UNIT(safeload_dtype_bits(dt)))

/* Deterministic PRNG (splitmix64) so tests never depend on time. */
static uint64_t tu_rng_state = 0x9E3779B97F4A7C15ULL;
TU_UNUSED static uint64_t tu_rand64(void) {
    uint64_t z = (tu_rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

#endif
