/* test_writer.c - safeload_serialize / safeload_save against the reference writer's layout:
   tensors by dtype (descending enum order) then name bytewise, compact JSON, __metadata__ first
   with sorted keys, spaces to a multiple of 8, data contiguous in that order, serde_json
   escaping; rejects; atomic replacement; byte-for-byte reproduction of the reference files. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

static char g_dir[256];              /* a private scratch directory */

/* ---- a counting allocator: every serialize must free all it allocated -------------------- */
static long g_live;
static void *ca_alloc(void *u, size_t n) { void *p = malloc(n ? n : 1); (void)u; if (p) g_live++; return p; }
static void *ca_realloc(void *u, void *p, size_t o, size_t n) {
    void *q = realloc(p, n ? n : 1); (void)u; (void)o; if (q && !p) g_live++; return q; }
static void ca_free(void *u, void *p) { (void)u; if (p) { g_live--; free(p); } }
static safeload_allocator counting_allocator(void) {
    safeload_allocator a;
    a.alloc = ca_alloc; a.realloc = ca_realloc; a.free = ca_free; a.user = NULL;
    return a;
}

/* ---- building the expected image ---------------------------------------------------------- */
/* header JSON (unpadded) + data -> 8-byte N, JSON, spaces to a multiple of 8, data */
static unsigned char *expect_image(const char *json, const void *data, size_t dlen, size_t *out_n) {
    size_t jl = strlen(json), N = (jl + 7) / 8 * 8, n = 8 + N + dlen, i;
    unsigned char *p = (unsigned char *)malloc(n);
    for (i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)N >> (8 * i));
    memcpy(p + 8, json, jl);
    memset(p + 8 + jl, ' ', N - jl);
    if (dlen) memcpy(p + 8 + N, data, dlen);
    *out_n = n;
    return p;
}

static void hexdiff(const unsigned char *a, size_t an, const unsigned char *b, size_t bn) {
    size_t i = 0;
    while (i < an && i < bn && a[i] == b[i]) i++;
    fprintf(stderr, "    sizes %u vs %u, first difference at %u\n", (unsigned)an, (unsigned)bn, (unsigned)i);
    if (i < an && i < bn) {
        size_t s = i > 40 ? i - 40 : 0;
        fprintf(stderr, "    got:  %.*s\n    want: %.*s\n", (int)((an - s) < 120 ? an - s : 120), (const char *)a + s,
                (int)((bn - s) < 120 ? bn - s : 120), (const char *)b + s);
    }
}

/* serialize (NULL desc fields allowed) and compare with json + data */
static void expect_serialize(int line, const safeload_save_tensor *ts, size_t count, const safeload_save_desc *desc,
                             const char *json, const void *data, size_t dlen) {
    void *out = NULL;
    size_t out_n = 0, want_n;
    safeload_error err;
    safeload_result r;
    unsigned char *want = expect_image(json, data, dlen, &want_n);
    safeload_save_desc d;
    if (desc) d = *desc; else memset(&d, 0, sizeof d);
    d.allocator = counting_allocator();
    g_live = 0;
    r = safeload_serialize(&out, &out_n, ts, count, &d, &err);
    CHECK_MSG(r == SAFELOAD_OK, "line %d: serialize: %s %s", line, safeload_result_id(r), err.message);
    if (r == SAFELOAD_OK) {
        int same = out_n == want_n && memcmp(out, want, want_n) == 0;
        CHECK_MSG(same, "line %d: image differs", line);
        if (!same) hexdiff((const unsigned char *)out, out_n, want, want_n);
        safeload_free(out, &d.allocator);
    }
    CHECK_MSG(g_live == 0, "line %d: %ld allocations not freed", line, g_live);
    free(want);
}
#define EXPECT_SER(ts, count, desc, json, data, dlen) expect_serialize(__LINE__, ts, count, desc, json, data, dlen)

/* serialize must fail with `want`, leaving nothing allocated */
static void expect_reject(int line, const safeload_save_tensor *ts, size_t count, const safeload_save_desc *desc,
                          safeload_result want) {
    void *out = (void *)&g_live;
    size_t out_n = 12345;
    safeload_error err;
    safeload_result r;
    safeload_save_desc d;
    if (desc) d = *desc; else memset(&d, 0, sizeof d);
    d.allocator = counting_allocator();
    g_live = 0;
    memset(&err, 0, sizeof err);
    r = safeload_serialize(&out, &out_n, ts, count, &d, &err);
    CHECK_MSG(r == want, "line %d: got %s want %s (%s)", line, safeload_result_id(r), safeload_result_id(want), err.message);
    CHECK_MSG(err.code == r, "line %d: err.code %s", line, safeload_result_id(err.code));
    if (r == SAFELOAD_OK) safeload_free(out, &d.allocator);
    CHECK_MSG(g_live == 0, "line %d: %ld allocations not freed after failure", line, g_live);
}
#define EXPECT_REJ(ts, count, desc, code) expect_reject(__LINE__, ts, count, desc, SAFELOAD_##code)

static safeload_save_tensor st(const char *name, safeload_dtype dt, uint32_t rank, const uint64_t *shape,
                               const void *data, uint64_t nbytes) {
    safeload_save_tensor t;
    t.name = name; t.dtype = dt; t.rank = rank; t.shape = shape; t.data = data; t.nbytes = nbytes;
    return t;
}

static const unsigned char BYTES[64] = {
    0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,
    32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63 };
