/* test_weak: desc.device = SAFELOAD_DEVICE_CUDA with no hooks in the options. Linked with
   weak_hooks_def.c, the named hooks are used; built with -DEXPECT_MISSING and the hooks only in
   a static archive, the load reports HOOK_MISSING (the documented trap). */
#ifdef SL_TEST_SHARED_IMPL   /* make test links build/impl.o (tests/impl.c) instead */
#  include "shared_impl.h"
#else
#  define SAFELOAD_IMPLEMENTATION
#endif
#include "safeload.h"
#include "testutil.h"

int main(void) {
    static const uint64_t shape[2] = {64, 1000};
    static uint16_t w[64 * 1000];
    safeload_save_tensor t;
    safeload_file *f;
    safeload_error e;
    safeload_request rq;
    safeload_load_desc d;
    safeload_arena *arena = NULL;
    void *img;
    size_t n, i;
    safeload_result r;
    for (i = 0; i < 64 * 1000; i++) w[i] = (uint16_t)(0x3c00 + (i * 7 % 977));
    memset(&t, 0, sizeof t);
    t.name = "w";
    t.dtype = SAFELOAD_BF16;
    t.rank = 2;
    t.shape = shape;
    t.data = w;
    t.nbytes = sizeof w;
    CHECK(safeload_serialize(&img, &n, &t, 1, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_open_memory(&f, img, n, NULL, &e) == SAFELOAD_OK);
    memset(&rq, 0, sizeof rq);
    rq.name = "w";
    rq.device = 1;
    memset(&d, 0, sizeof d);
    d.device = SAFELOAD_DEVICE_CUDA;
    d.threads = 2;
    d.pinned_size = 16384;
    r = safeload_load_file(f, &rq, 1, &d, &arena, &e);
#if defined(EXPECT_MISSING)
    CHECK(r == SAFELOAD_HOOK_MISSING);
    CHECK_STR(e.tensor, "safeload_cuda_upload");
#else
    CHECK_MSG(r == SAFELOAD_OK, "%s", e.message);
    CHECK(rq.data != NULL && rq.nbytes == sizeof w && memcmp(rq.data, w, sizeof w) == 0);
    safeload_arena_free(arena);
#endif
    safeload_close(f);
    safeload_free(img, NULL);
#if defined(EXPECT_MISSING)
    return tu_finish("test_weak (hooks only in a static archive: HOOK_MISSING, as documented)");
#else
    return tu_finish("test_weak (linked hooks found through weak references)");
#endif
}
