/* test_macros.c - the compile-time allocator: SAFELOAD_MALLOC/REALLOC/FREE take every allocation
   the library makes (load arenas of many MiB included) and everything is given back. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <stddef.h>

static long g_live, g_calls;
static size_t g_biggest;
static void *tm_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p) { g_live++; g_calls++; if (n > g_biggest) g_biggest = n; }
    return p;
}
static void *tm_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (q) { if (!p) g_live++; g_calls++; if (n > g_biggest) g_biggest = n; }
    return q;
}
static void tm_free(void *p) {
    if (p) { g_live--; free(p); }
}
/* a runtime allocator, given in descs */
static long t_live;
static void *tr_alloc(void *u, size_t n) { void *p = malloc(n); (void)u; if (p) t_live++; return p; }
static void *tr_realloc(void *u, void *p, size_t o, size_t n) {
    void *q = realloc(p, n);
    (void)u; (void)o;
    if (q && !p) t_live++;
    return q;
}
static void tr_free(void *u, void *p) { (void)u; if (p) { t_live--; free(p); } }
#define SAFELOAD_MALLOC(n) tm_malloc(n)
#define SAFELOAD_REALLOC(p, n) tm_realloc(p, n)
#define SAFELOAD_FREE(p) tm_free(p)
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include <unistd.h>

int main(void) {
    enum { BIG = 1 << 20 };                 /* 1 Mi floats: a 4 MiB tensor, an 8 MiB cast */
    static const uint64_t big_shape[1] = {BIG}, small_shape[2] = {2, 3};
    float *big = (float *)malloc(BIG * sizeof(float));
    uint16_t small[6] = {0x3C00, 0x4000, 0x0000, 0x8000, 0x7C00, 0xFC00};
    safeload_save_tensor ts[2];
    safeload_model *m = NULL;
    safeload_loaded *l = NULL;
    safeload_load_desc d;
    safeload_error e;
    char path[256];
    void *img = NULL;
    size_t img_n = 0, i;
    int th;
    for (i = 0; i < BIG; i++) big[i] = (float)i * 0.5f;
    ts[0].name = "big"; ts[0].dtype = SAFELOAD_F32; ts[0].rank = 1; ts[0].shape = big_shape;
    ts[0].data = big; ts[0].nbytes = BIG * sizeof(float);
    ts[1].name = "small"; ts[1].dtype = SAFELOAD_F16; ts[1].rank = 2; ts[1].shape = small_shape;
    ts[1].data = small; ts[1].nbytes = sizeof small;
    snprintf(path, sizeof path, "/tmp/safeload_test_macros_%d.safetensors", (int)getpid());

    CHECK(safeload_serialize(&img, &img_n, ts, 2, NULL, &e) == SAFELOAD_OK);
    CHECK(img_n > BIG * sizeof(float) && g_biggest >= img_n);
    safeload_free(img, NULL);
    CHECK(safeload_save(path, ts, 2, NULL, &e) == SAFELOAD_OK);
    CHECK_MSG(g_live == 0, "serialize/save left %ld allocations live", g_live);

    CHECK_MSG(safeload_model_open(&m, path, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    for (th = 1; th <= 2 && m; th++) {
        memset(&d, 0, sizeof d);
        d.threads = th;
        g_biggest = 0;
        CHECK_MSG(safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK, "%s", e.message);
        /* the arena (over 2 MiB, where libc builds map pages from the OS) came from the macro */
        CHECK_MSG(g_biggest >= BIG * sizeof(float), "biggest allocation %zu", g_biggest);
        CHECK(l && l->count == 2 && memcmp(l->tensors[0].data, big, BIG * sizeof(float)) == 0);
        safeload_loaded_free(l);
        g_biggest = 0;
        CHECK(safeload_load_all(m, SAFELOAD_F32, &d, &l, &e) == SAFELOAD_OK);
        CHECK_MSG(g_biggest >= BIG * sizeof(float), "biggest allocation %zu", g_biggest);
        CHECK(l && ((const float *)l->tensors[1].data)[1] == 2.0f);
        safeload_loaded_free(l);
    }
    /* a runtime allocator in the desc takes every allocation of the call, the temporary pool
       of a threaded load and the model's shard-opening pool included: the macro sees none */
    if (m) {
        safeload_model *m2 = NULL;
        safeload_model_desc md;
        long before = g_calls;
        memset(&d, 0, sizeof d);
        d.threads = 2;
        d.allocator.alloc = tr_alloc; d.allocator.realloc = tr_realloc; d.allocator.free = tr_free;
        CHECK(safeload_load_all(m, SAFELOAD_F32, &d, &l, &e) == SAFELOAD_OK);
        CHECK_MSG(g_calls == before, "%ld allocations bypassed the desc's allocator",
                  g_calls - before);
        CHECK(t_live > 0);
        safeload_loaded_free(l);
        CHECK_MSG(t_live == 0, "the runtime allocator has %ld blocks live", t_live);
        memset(&md, 0, sizeof md);
        md.threads = 2;
        md.open.allocator = d.allocator;
        CHECK(safeload_model_open(&m2, path, &md, &e) == SAFELOAD_OK);
        safeload_model_close(m2);
        CHECK(t_live == 0);
    }
    safeload_model_close(m);
    CHECK_MSG(g_live == 0, "left %ld allocations live", g_live);
    CHECK(g_calls > 10);
    unlink(path);
    free(big);
    return tu_finish("test_macros");
}
