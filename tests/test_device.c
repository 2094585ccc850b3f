/* test_device: uploads through the hooks, against the fake device (tests/fakedev.h). The fake
   copies late, on its own thread, checks that staging bytes did not change before the copy,
   poisons them after, and can fail any hook at its k-th call. */
#define _GNU_SOURCE
#include <unistd.h>
#ifdef SL_TEST_SHARED_IMPL   /* make test links build/impl.o (tests/impl.c) instead */
#  include "shared_impl.h"
#else
#  define SAFELOAD_IMPLEMENTATION
#endif
#include "safeload.h"
#include "testutil.h"
#include "fakedev.h"

/* does io_uring run here (not under qemu-user, seccomp or the sysctl)? */
static int td_uring;
#if defined(__linux__)
#  include <sys/syscall.h>
static int td_uring_probe(void) {
    unsigned char params[120];
    long fd;
    memset(params, 0, sizeof params);
    fd = syscall(425, 2u, params);
    if (fd >= 0) close((int)fd);
    return fd >= 0;
}
#else
static int td_uring_probe(void) { return 0; }
#endif

typedef struct td_tensor { char name[64]; safeload_dtype dt; uint64_t shape[2]; unsigned char *data; uint64_t n; } td_tensor;
static td_tensor td[400];
static size_t td_n;
static unsigned char *td_img;
static size_t td_size;

static void td_make(void) {
    safeload_save_tensor st[400];
    safeload_error e;
    size_t i;
    void *img;
    for (i = 0; i < 400; i++) {
        td_tensor *t = &td[i];
        uint64_t j;
        snprintf(t->name, sizeof t->name, "layer.%u.w%u", (unsigned)(i / 8), (unsigned)(i % 8));
        t->dt = i % 4 == 0 ? SAFELOAD_F32 : i % 4 == 3 ? SAFELOAD_U8 : SAFELOAD_BF16;
        t->shape[0] = i % 50 == 7 ? 600 : 1 + i % 13;          /* a few big ones */
        t->shape[1] = i % 50 == 7 ? 1031 : 96 + i % 7;
        t->n = t->shape[0] * t->shape[1] * safeload_dtype_size(t->dt);
        t->data = (unsigned char *)malloc(t->n);
        for (j = 0; j < t->n; j++) t->data[j] = (unsigned char)tu_rand64();
        if (t->dt == SAFELOAD_BF16) for (j = 1; j < t->n; j += 2) t->data[j] = (unsigned char)((t->data[j] & 0x83) | 0x38);
        if (t->dt == SAFELOAD_F32) for (j = 3; j < t->n; j += 4) t->data[j] = (unsigned char)((t->data[j] & 0x81) | 0x3C);
        st[i].name = t->name;
        st[i].dtype = t->dt;
        st[i].rank = 2;
        st[i].shape = t->shape;
        st[i].data = t->data;
        st[i].nbytes = t->n;
    }
    td_n = 400;
    if (safeload_serialize(&img, &td_size, st, td_n, NULL, &e) != SAFELOAD_OK) abort();
    td_img = (unsigned char *)img;
}

static const td_tensor *td_get(const char *name) {
    size_t i;
    for (i = 0; i < td_n; i++) if (strcmp(td[i].name, name) == 0) return &td[i];
    return NULL;
}

/* Expected bytes of a request: the stored bytes, or the scalar reference cast. */
static int td_expect(const safeload_request *r, const td_tensor *t) {
    uint64_t cnt;
    unsigned char *want;
    int ok;
    safeload_convert_desc cd;
    if (r->dtype == SAFELOAD_DTYPE_NONE || r->dtype == t->dt)
        return r->nbytes == t->n && memcmp(r->data, t->data, t->n) == 0;
    cnt = t->n / safeload_dtype_size(t->dt);
    want = (unsigned char *)malloc(cnt * safeload_dtype_size(r->dtype) + 1);
    memset(&cd, 0, sizeof cd);
    cd.simd = SAFELOAD_SIMD_SCALAR;
    ok = safeload_convert_ex(want, r->dtype, t->data, t->dt, (size_t)cnt, &cd) == SAFELOAD_OK &&
         r->nbytes == cnt * safeload_dtype_size(r->dtype) &&
         memcmp(r->data, want, (size_t)r->nbytes) == 0;
    free(want);
    return ok;
}

/* All tensors; every third one cast to F32 (BF16) or BF16 (F32); some to the host. */
static void td_requests(safeload_request *rq, int host_every) {
    size_t i;
    memset(rq, 0, td_n * sizeof *rq);
    for (i = 0; i < td_n; i++) {
        rq[i].name = td[i].name;
        rq[i].device = host_every && i % (size_t)host_every == 0 ? 0 : 1;
        if (i % 3 == 1 && td[i].dt == SAFELOAD_BF16) rq[i].dtype = SAFELOAD_F32;
        if (i % 3 == 1 && td[i].dt == SAFELOAD_F32) rq[i].dtype = SAFELOAD_BF16;
    }
}

static void test_device_loads(fake_dev *dev) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[400];
    int th, io, cfg;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    for (cfg = 0; cfg < 3; cfg++)
        for (th = 1; th <= 4; th++)
            for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_MMAP; io++) {
                safeload_load_desc d;
                safeload_load_stats st;
                safeload_arena *arena = NULL;
                safeload_result r;
                size_t i;
                int bad = 0;
                if (tu_skip_threads(th, cfg * 2 + io)) continue;
                memset(&d, 0, sizeof d);
                d.threads = th;
                d.io = (safeload_io)io;
                d.device = SAFELOAD_DEVICE_HOOKS;
                d.hooks = fd_hooks(dev);
                d.pinned_size = cfg == 0 ? 65536 : cfg == 1 ? 1 << 20 : 0;
                d.pinned_count = cfg == 2 ? 3 : 2;
                d.staging_size = cfg == 1 ? 8192 : 0;
                d.stats = &st;
                fd_reset_counters(dev, -1, 0);
                td_requests(rq, cfg == 2 ? 5 : 0);
                r = safeload_load_file(f, rq, td_n, &d, &arena, &e);
                CHECK_MSG(r == SAFELOAD_OK, "cfg %d threads %d: %s", cfg, th, e.message);
                if (r != SAFELOAD_OK) continue;
                for (i = 0; i < td_n; i++) bad += !td_expect(&rq[i], td_get(rq[i].name));
                CHECK_MSG(bad == 0, "cfg %d threads %d io %d: %d tensors differ", cfg, th, io, bad);
                CHECK_EQ_U64(dev->violations, 0);
                CHECK_EQ_U64(dev->pinned_live, 0);         /* every staging buffer freed */
                CHECK_EQ_U64(dev->device_live, 1);         /* the device arena */
                CHECK(dev->begins == 1 && dev->ends == 1 && dev->syncs >= 1);
                CHECK(dev->begin_buffers == d.pinned_count);
                CHECK(st.pinned_bytes > 0 && st.pinned_bytes <= 256u << 20);
                safeload_arena_free(arena);
                CHECK_EQ_U64(dev->device_live, 0);
            }
    safeload_close(f);
}

/* desc.reuse with device requests: an arena's device memory is used again while it fits (no
   device_alloc), and replaced (the old freed through the hooks) when it does not. */
static void test_device_reuse(fake_dev *dev) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[400];
    safeload_load_desc d;
    safeload_arena *arena = NULL, *out = NULL;
    size_t i, half = td_n / 2;
    long allocs;
    int bad = 0;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    memset(&d, 0, sizeof d);
    d.threads = 2;
    d.device = SAFELOAD_DEVICE_HOOKS;
    d.hooks = fd_hooks(dev);
    fd_reset_counters(dev, -1, 0);
    td_requests(rq, 4);
    CHECK(safeload_load_file(f, rq, half, &d, &arena, &e) == SAFELOAD_OK && arena);
    allocs = dev->calls[FD_DEVICE_ALLOC];
    CHECK(allocs == 1 && dev->device_live == 1);
    d.reuse = arena;                            /* the same half again: fits */
    td_requests(rq, 4);
    CHECK(safeload_load_file(f, rq, half, &d, &out, &e) == SAFELOAD_OK && out == arena);
    for (i = 0; i < half; i++) bad += !td_expect(&rq[i], td_get(rq[i].name));
    CHECK(bad == 0 && dev->calls[FD_DEVICE_ALLOC] == allocs && dev->device_live == 1);
    td_requests(rq, 4);                         /* everything: the device part grows */
    CHECK(safeload_load_file(f, rq, td_n, &d, &out, &e) == SAFELOAD_OK && out == arena);
    for (i = 0, bad = 0; i < td_n; i++) bad += !td_expect(&rq[i], td_get(rq[i].name));
    CHECK(bad == 0 && dev->calls[FD_DEVICE_ALLOC] == allocs + 1 && dev->device_live == 1);
    CHECK_EQ_U64(dev->violations, 0);
    safeload_arena_free(arena);
    CHECK_EQ_U64(dev->device_live, 0);
    safeload_close(f);
}

/* Device pointers the caller allocated, and a pinned budget that forces small buffers. */
static void test_caller_device_ptrs(fake_dev *dev) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[400];
    void *mem[400];
    safeload_load_desc d;
    safeload_load_stats st;
    size_t i;
    int bad = 0;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    memset(rq, 0, sizeof rq);
    for (i = 0; i < td_n; i++) {
        fd_device_alloc(dev, (size_t)td[i].n, &mem[i]);
        rq[i].name = td[i].name;
        rq[i].device = 1;
        rq[i].dst = mem[i];
        rq[i].dst_size = td[i].n;
    }
    memset(&d, 0, sizeof d);
    d.threads = 3;
    d.hooks = fd_hooks(dev);
    d.pinned_limit = 3 * 2 * 65536;          /* 3 workers x 2 buffers of 64 KiB */
    d.stats = &st;
    fd_reset_counters(dev, -1, 0);
    CHECK_MSG(safeload_load_file(f, rq, td_n, &d, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    CHECK(st.pinned_bytes <= d.pinned_limit);
    for (i = 0; i < td_n; i++) {
        bad += rq[i].data != mem[i] || memcmp(mem[i], td[i].data, td[i].n) != 0;
        fd_device_free(dev, mem[i]);
    }
    CHECK(bad == 0);
    CHECK_EQ_U64(dev->violations, 0);
    d.pinned_limit = 1000;                   /* too small for even one buffer per worker */
    CHECK(safeload_load_file(f, rq, td_n, &d, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    safeload_close(f);
}

/* The pinned budget: buffers as small as pinned_size allows (4 KiB) fit a limit that holds
   exactly workers x buffers of them; a smaller limit is refused before any hook runs.
   upload_align: every upload starts that aligned, and pinned memory that is not is refused. */
static long g_pb_misaligned;
static int pb_pinned_alloc_off(void *u, size_t n, void **out) {    /* 16 bytes past aligned */
    int rc = fd_pinned_alloc(u, n + 64, out);
    if (rc == 0 && *out) *out = (unsigned char *)*out + 16;
    return rc;
}
static void pb_pinned_free_off(void *u, void *p) { fd_pinned_free(u, (unsigned char *)p - 16); }
static int pb_upload(void *u, int w, int b, void *dst, const void *src, size_t n) {
    if ((uintptr_t)src % 64 != 0) g_pb_misaligned++;
    return fd_upload(u, w, b, dst, src, n);
}
static void test_pinned_budget(fake_dev *dev) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[400];
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_arena *arena = NULL;
    size_t i;
    int bad = 0, round;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    memset(&d, 0, sizeof d);
    d.threads = 2;
    d.hooks = fd_hooks(dev);
    d.pinned_size = 4096;
    d.pinned_count = 2;
    d.pinned_limit = 2 * 2 * 4096;
    d.stats = &st;
    fd_reset_counters(dev, -1, 0);
    td_requests(rq, 0);
    CHECK_MSG(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_OK, "%s", e.message);
    for (i = 0; i < td_n; i++) bad += !td_expect(&rq[i], td_get(rq[i].name));
    CHECK(bad == 0);
    CHECK(st.pinned_bytes > 0 && st.pinned_bytes <= d.pinned_limit && st.pinned_bytes % 4096 == 0);
    CHECK_EQ_U64(dev->violations, 0);
    safeload_arena_free(arena);
    arena = NULL;
    CHECK(dev->pinned_live == 0 && dev->device_live == 0);
    /* one byte short: refused, and no hook was called (no device arena allocated and freed) */
    d.pinned_limit = 2 * 2 * 4096 - 1;
    fd_reset_counters(dev, -1, 0);
    td_requests(rq, 0);
    CHECK(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK_MSG(strstr(e.message, "buffers of at least 4 KiB") != NULL, "%s", e.message);
    for (i = 0; i < FD_NHOOKS; i++) CHECK_EQ_U64(dev->calls[i], 0);
    CHECK(arena == NULL && dev->begins == 0);
    /* upload_align 64: every upload from a 64-aligned pinned address; then pinned memory that
       is 16 bytes off: refused, naming pinned_alloc, and what was allocated is freed */
    for (round = 0; round < 2; round++) {
        memset(&d, 0, sizeof d);
        d.threads = 2;
        d.hooks = fd_hooks(dev);
        d.hooks.upload = pb_upload;
        d.upload_align = 64;
        d.pinned_size = 65536;
        if (round) {
            d.hooks.pinned_alloc = pb_pinned_alloc_off;
            d.hooks.pinned_free = pb_pinned_free_off;
        }
        fd_reset_counters(dev, -1, 0);
        g_pb_misaligned = 0;
        td_requests(rq, 3);
        if (!round) {
            CHECK_MSG(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_OK, "%s",
                      e.message);
            for (i = 0, bad = 0; i < td_n; i++) bad += !td_expect(&rq[i], td_get(rq[i].name));
            CHECK(bad == 0 && dev->uploads > 0);
            CHECK_EQ_U64(g_pb_misaligned, 0);
            safeload_arena_free(arena);
            arena = NULL;
        } else {
            CHECK(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_HOOK_FAILED);
            CHECK_STR(e.tensor, "pinned_alloc");
            CHECK_MSG(strstr(e.message, "not upload_align (64) aligned") != NULL, "%s",
                      e.message);
            CHECK(arena == NULL && dev->uploads == 0);
        }
        CHECK_EQ_U64(dev->violations, 0);
        CHECK(dev->pinned_live == 0 && dev->device_live == 0);
    }
    /* an alignment beyond 1 GiB would space the device arena out by as much: refused */
    d.upload_align = (size_t)1 << 31;
    CHECK(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK_MSG(strstr(e.message, "up to 1 GiB") != NULL, "%s", e.message);
    safeload_close(f);
}

/* A hook failure that belongs to no file (begin, device_alloc, pinned_alloc, sync) names the
   model (its index), not the first shard; a failed wait names the tensor whose copy it fenced,
   and that tensor's shard. */
static void test_hook_error_file(fake_dev *dev) {
    char dir[128], p1[192], p2[192], px[192];
    FILE *fp;
    uint64_t shape[1] = {64};
    float v[64];
    safeload_save_tensor st[2];
    safeload_model *m;
    safeload_error e;
    safeload_load_desc d;
    safeload_request rq[2];
    safeload_arena *arena = NULL;
    int hook;
    size_t i;
    for (i = 0; i < 64; i++) v[i] = (float)i;
    snprintf(dir, sizeof dir, "build/test-device-shards-%ld", (long)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(p1, sizeof p1, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/model-00002-of-00002.safetensors", dir);
    memset(st, 0, sizeof st);
    st[0].name = "a"; st[0].dtype = SAFELOAD_F32; st[0].rank = 1; st[0].shape = shape;
    st[0].data = v; st[0].nbytes = sizeof v;
    st[1] = st[0]; st[1].name = "b";
    CHECK(safeload_save(p1, &st[0], 1, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_save(p2, &st[1], 1, NULL, &e) == SAFELOAD_OK);
    snprintf(px, sizeof px, "%s/model.safetensors.index.json", dir);
    fp = fopen(px, "wb");
    CHECK(fp != NULL);
    if (fp) {
        fputs("{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
              "\"b\":\"model-00002-of-00002.safetensors\"}}", fp);
        fclose(fp);
    }
    CHECK_MSG(safeload_model_open(&m, dir, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    CHECK_EQ_U64(safeload_model_shard_count(m), 2);
    for (hook = FD_BEGIN; hook <= FD_SYNC; hook++) {
        if (hook == FD_UPLOAD) continue;      /* an upload names its tensor and shard */
        memset(&d, 0, sizeof d);
        d.device = SAFELOAD_DEVICE_HOOKS;
        d.hooks = fd_hooks(dev);
        fd_reset_counters(dev, hook, 0);
        memset(rq, 0, sizeof rq);
        rq[0].name = "a"; rq[0].device = 1;
        rq[1].name = "b"; rq[1].device = 1;
        CHECK(safeload_load(m, rq, 2, &d, &arena, &e) == SAFELOAD_HOOK_FAILED);
        if (hook == FD_WAIT) {
            CHECK_MSG((strcmp(e.tensor, "a") == 0 && strcmp(e.file, p1) == 0) ||
                      (strcmp(e.tensor, "b") == 0 && strcmp(e.file, p2) == 0),
                      "wait names '%s' in '%s'", e.tensor, e.file);
            CHECK_MSG(strstr(e.message, "the wait hook failed with ") != NULL &&
                      strstr(e.message, "the copy of this tensor") != NULL, "%s", e.message);
            CHECK(e.offset == 8 + safeload_header_size(safeload_model_shard(m, e.tensor[0] - 'a')));
        } else {
            CHECK_MSG(strcmp(e.file, px) == 0, "hook %d names '%s', not the model's index '%s'",
                      hook, e.file, px);
        }
        CHECK(arena == NULL);
        CHECK_EQ_U64(dev->violations, 0);
    }
    safeload_model_close(m);
    remove(p1);
    remove(p2);
    remove(px);
    rmdir(dir);
}

/* Device requests for empty tensors only: the device arena holds 0 bytes, and device_alloc is
   never asked for 0 (cudaMalloc answers that with success and NULL, as the fake device does). */
static void test_empty_device_tensors(fake_dev *dev) {
    uint64_t s0[2] = {0, 16}, s1[1] = {0}, s2[1] = {4};
    float four[4] = {1, 2, 3, 4};
    safeload_save_tensor st[3];
    safeload_file *f;
    safeload_error e;
    safeload_request rq[3];
    safeload_load_desc d;
    safeload_arena *arena = NULL;
    void *img;
    size_t size;
    int host;
    memset(st, 0, sizeof st);
    st[0].name = "e0"; st[0].dtype = SAFELOAD_F32; st[0].rank = 2; st[0].shape = s0;
    st[1].name = "e1"; st[1].dtype = SAFELOAD_BF16; st[1].rank = 1; st[1].shape = s1;
    st[2].name = "w"; st[2].dtype = SAFELOAD_F32; st[2].rank = 1; st[2].shape = s2;
    st[2].data = four; st[2].nbytes = sizeof four;
    CHECK(safeload_serialize(&img, &size, st, 3, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_open_memory(&f, img, size, NULL, &e) == SAFELOAD_OK);
    for (host = 0; host <= 1; host++) {     /* the empty ones alone, then beside a host one */
        memset(rq, 0, sizeof rq);
        rq[0].name = "e0"; rq[0].device = 1;
        rq[1].name = "e1"; rq[1].device = 1; rq[1].dtype = SAFELOAD_F32;
        rq[2].name = "w";
        memset(&d, 0, sizeof d);
        d.hooks = fd_hooks(dev);
        fd_reset_counters(dev, -1, 0);
        dev->zero_allocs = 0;
        CHECK_MSG(safeload_load_file(f, rq, host ? 3 : 2, &d, &arena, &e) == SAFELOAD_OK, "%s",
                  e.message);
        CHECK_EQ_U64(dev->zero_allocs, 0);
        CHECK(rq[0].data != NULL && rq[0].nbytes == 0 && rq[1].data != NULL && rq[1].nbytes == 0);
        if (host) CHECK(rq[2].data && memcmp(rq[2].data, four, sizeof four) == 0);
        CHECK_EQ_U64(dev->device_live, 1);
        safeload_arena_free(arena);
        arena = NULL;
        CHECK_EQ_U64(dev->device_live, 0);
        CHECK_EQ_U64(dev->violations, 0);
    }
    safeload_close(f);
    safeload_free(img, NULL);
}

/* Every hook failing at every call: a clean HOOK_FAILED naming it, nothing leaked, no staging
   buffer freed or reused while a copy may run, end() called whenever begin() succeeded. */
static void test_hook_failures(fake_dev *dev) {
    static const char *const names[FD_NHOOKS] = {"pinned_alloc", "device_alloc", "begin",
                                                 "upload", "wait", "sync"};
    safeload_file *f;
    safeload_error e;
    safeload_request rq[400];
    long calls[FD_NHOOKS];
    int hook;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_arena *arena = NULL;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    memset(&d, 0, sizeof d);
    d.threads = 2;
    d.hooks = fd_hooks(dev);
    d.pinned_size = 65536;
    d.stats = &st;
    fd_reset_counters(dev, -1, 0);
    td_requests(rq, 7);
    CHECK(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_OK);
    CHECK_EQ_U64(st.pinned_bytes, (uint64_t)dev->calls[FD_PINNED_ALLOC] * 65536);
    safeload_arena_free(arena);
    memcpy(calls, dev->calls, sizeof calls);
    for (hook = 0; hook < FD_NHOOKS; hook++) {
        long k, most = tu_quick() ? 20 : 60, step = calls[hook] > most ? calls[hook] / most : 1;
        CHECK(calls[hook] > 0);
        for (k = 0; k < calls[hook]; k += step) {
            safeload_result r;
            fd_reset_counters(dev, hook, k);
            d.threads = 1 + (int)(k % 3);
            arena = NULL;
            r = safeload_load_file(f, rq, td_n, &d, &arena, &e);
            /* with more threads a later call may not happen: then the load succeeds */
            if (r == SAFELOAD_OK) { CHECK(dev->calls[hook] <= k); safeload_arena_free(arena); continue; }
            CHECK_MSG(r == SAFELOAD_HOOK_FAILED, "%s at %ld: %s", names[hook], k, safeload_result_id(r));
            CHECK(arena == NULL && rq[0].data == NULL);
            /* the stats count the pinned buffers that were allocated, not those planned */
            CHECK_EQ_U64(st.pinned_bytes, (uint64_t)(dev->calls[FD_PINNED_ALLOC] -
                                                     (hook == FD_PINNED_ALLOC)) * 65536);
            CHECK_MSG(strstr(e.message, names[hook]) != NULL || strcmp(e.tensor, names[hook]) == 0,
                      "%s: %s", names[hook], e.message);
            if (hook == FD_UPLOAD || hook == FD_WAIT) CHECK(e.tensor[0] != 0);
            CHECK_EQ_U64(dev->violations, 0);
            CHECK_EQ_U64(dev->pinned_live, 0);
            CHECK_EQ_U64(dev->device_live, 0);
            CHECK_EQ_U64(dev->begins, dev->ends);
        }
    }
    safeload_close(f);
}

/* Device requests with nothing to upload through: HOOK_MISSING naming the function. */
static void test_missing_hooks(fake_dev *dev) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[1];
    safeload_load_desc d;
    safeload_arena *arena = NULL;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    memset(rq, 0, sizeof rq);
    rq[0].name = td[0].name;
    rq[0].device = 1;
    memset(&d, 0, sizeof d);
    d.device = SAFELOAD_DEVICE_CUDA;         /* nothing defines safeload_cuda_* in this program */
    CHECK(safeload_load_file(f, rq, 1, &d, &arena, &e) == SAFELOAD_HOOK_MISSING);
    CHECK_STR(e.tensor, "safeload_cuda_upload");
    d.device = SAFELOAD_DEVICE_ASCEND;
    CHECK(safeload_load_file(f, rq, 1, &d, &arena, &e) == SAFELOAD_HOOK_MISSING);
    CHECK_STR(e.tensor, "safeload_ascend_upload");
    d.device = SAFELOAD_DEVICE_HOOKS;
    d.hooks = fd_hooks(dev);
    d.hooks.wait = NULL;
    CHECK(safeload_load_file(f, rq, 1, &d, &arena, &e) == SAFELOAD_HOOK_MISSING);
    CHECK_STR(e.tensor, "hooks.wait");
    d.hooks = fd_hooks(dev);
    d.hooks.device_alloc = NULL;             /* needed only for "allocate for me" */
    CHECK(safeload_load_file(f, rq, 1, &d, &arena, &e) == SAFELOAD_HOOK_MISSING);
    CHECK_STR(e.tensor, "hooks.device_alloc");
    CHECK(arena == NULL);
    d.hooks = fd_hooks(dev);
    d.hooks.device_free = NULL;              /* the block could never be given back */
    CHECK(safeload_load_file(f, rq, 1, &d, &arena, &e) == SAFELOAD_HOOK_MISSING);
    CHECK_STR(e.tensor, "hooks.device_free");
    CHECK(arena == NULL && rq[0].data == NULL);
    {   /* with a destination of the caller's, device_free is not needed */
        void *dst = NULL;
        CHECK(fd_device_alloc(dev, (size_t)td[0].n, &dst) == 0);
        rq[0].dst = dst;
        rq[0].dst_size = td[0].n;
        CHECK_MSG(safeload_load_file(f, rq, 1, &d, &arena, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK(rq[0].data == dst);
        safeload_arena_free(arena);
        arena = NULL;
        fd_device_free(dev, dst);
        rq[0].dst = NULL;
        rq[0].dst_size = 0;
    }
    safeload_close(f);
}

/* Cancelling a device load mid-way drains the copies and frees everything. */
static int td_cancel_at;
static int td_progress(void *user, uint64_t done, uint64_t total) {
    (void)done; (void)total;
    return ++*(int *)user == td_cancel_at;
}

static void test_device_cancel(fake_dev *dev) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[400];
    safeload_load_desc d;
    safeload_arena *arena;
    int k, calls;
    CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
    for (k = 1; k <= 6; k++) {
        memset(&d, 0, sizeof d);
        d.threads = 1 + k % 2;
        d.hooks = fd_hooks(dev);
        d.pinned_size = 65536;
        d.progress = td_progress;
        d.progress_user = &calls;
        d.progress_interval = 65536;
        calls = 0;
        td_cancel_at = k;
        fd_reset_counters(dev, -1, 0);
        td_requests(rq, 0);
        arena = NULL;
        CHECK(safeload_load_file(f, rq, td_n, &d, &arena, &e) == SAFELOAD_CANCELLED);
        CHECK(arena == NULL);
        CHECK_EQ_U64(dev->violations, 0);
        CHECK_EQ_U64(dev->pinned_live, 0);
        CHECK_EQ_U64(dev->device_live, 0);
    }
    safeload_close(f);
}

/* A device run read from a file that joins a plain tensor, a cast one and a plain one again
   goes through the staging buffer, so it must fit it (it used to overflow an 8 KiB one). */
static void test_mixed_run(fake_dev *dev) {
    static const char hdr[] =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,64]},"
        "\"b\":{\"dtype\":\"F16\",\"shape\":[2048],\"data_offsets\":[64,4160]},"
        "\"c\":{\"dtype\":\"F32\",\"shape\":[2048],\"data_offsets\":[4160,12352]}}";
    float want_b[2048];
    size_t n, ds, i;
    unsigned char *img = tu_image(hdr, 12352, &n, &ds);
    static unsigned char data[12352];       /* the data section in host order */
    char p[] = "/tmp/safeload-test-device-XXXXXX";
    void *mem;
    int fd, io;
    CHECK(img != NULL);
    if (!img) return;
    memcpy(data, img + ds, sizeof data);
    tu_le(data, 64, 4);
    tu_le(data + 64, 4096, 2);
    tu_le(data + 4160, 8192, 4);
    CHECK(safeload_convert(want_b, SAFELOAD_F32, data + 64, SAFELOAD_F16, 2048) == SAFELOAD_OK);
    fd = mkstemp(p);
    CHECK(fd >= 0 && write(fd, img, n) == (ssize_t)n);
    if (fd >= 0) close(fd);
    fd_device_alloc(dev, 16448, &mem);
    for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
        safeload_file *f;
        safeload_error e;
        safeload_request q[3];
        safeload_load_desc d;
        unsigned char *m = (unsigned char *)mem;
        memset(q, 0, sizeof q);
        memset(&d, 0, sizeof d);
        memset(mem, 0, 16448);
        q[0].name = "a"; q[0].dst = m;        q[0].dst_size = 64;
        q[1].name = "b"; q[1].dst = m + 64;   q[1].dst_size = 8192; q[1].dtype = SAFELOAD_F32;
        q[2].name = "c"; q[2].dst = m + 8256; q[2].dst_size = 8192;
        for (i = 0; i < 3; i++) q[i].device = 1;
        d.threads = 1;
        d.io = (safeload_io)io;
        d.staging_size = 8192;
        d.hooks = fd_hooks(dev);
        fd_reset_counters(dev, -1, 0);
        CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
        CHECK_MSG(safeload_load_file(f, q, 3, &d, NULL, &e) == SAFELOAD_OK, "io %d: %s", io,
                  e.message);
        CHECK_MSG(memcmp(m, data, 64) == 0, "io %d: a", io);
        CHECK_MSG(memcmp(m + 64, want_b, 8192) == 0, "io %d: b", io);
        CHECK_MSG(memcmp(m + 8256, data + 4160, 8192) == 0, "io %d: c", io);
        CHECK_EQ_U64(dev->violations, 0);
        safeload_close(f);
    }
    fd_device_free(dev, mem);
    remove(p);
    free(img);
}

/* A failed upload inside a run of small tensors names the tensor whose bytes it carried and
   that tensor's first file byte, also when a cast earlier in the run changed the sizes (the
   buffer position used to be reported as a file position). */
static void test_upload_failure_names(fake_dev *dev) {
    static const char hdr[] =
        "{\"A\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"B\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]},"
        "\"C\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[32,48]}}";
    size_t n, data, i;
    unsigned char *img = tu_image(hdr, 48, &n, &data);
    safeload_file *f;
    safeload_error e;
    void *mem[3];
    int fail;
    CHECK(img != NULL);
    if (!img) return;
    CHECK(safeload_open_memory(&f, img, n, NULL, &e) == SAFELOAD_OK);
    for (i = 0; i < 3; i++) fd_device_alloc(dev, 64, &mem[i]);  /* apart: one upload each */
    for (fail = 0; fail < 3; fail++) {
        static const char *const names[3] = {"A", "B", "C"};
        safeload_request q[3];
        safeload_load_desc d;
        memset(q, 0, sizeof q);
        memset(&d, 0, sizeof d);
        for (i = 0; i < 3; i++) {
            q[i].name = names[i];
            q[i].device = 1;
            q[i].dst = mem[i];
            q[i].dst_size = 64;
        }
        q[0].dtype = SAFELOAD_F16;            /* A: 16 bytes in, 8 out */
        q[1].dtype = SAFELOAD_F64;            /* B: 16 bytes in, 32 out */
        d.threads = 1;
        d.hooks = fd_hooks(dev);
        fd_reset_counters(dev, FD_UPLOAD, fail);
        CHECK(safeload_load_file(f, q, 3, &d, NULL, &e) == SAFELOAD_HOOK_FAILED);
        CHECK_STR(e.tensor, names[fail]);
        CHECK_MSG(e.offset == data + 16 * (uint64_t)fail, "upload %d failed: offset %llu, want %llu",
                  fail, (unsigned long long)e.offset, (unsigned long long)(data + 16 * (size_t)fail));
        CHECK_EQ_U64(dev->pinned_live, 0);
    }
    for (i = 0; i < 3; i++) fd_device_free(dev, mem[i]);
    safeload_close(f);
    free(img);
}

/* ---- a wedged device: a hook fails, then the final sync fails too --------------------------
   Copies that were started and never confirmed may still be running: their pinned buffers and
   the device arena they write into must be leaked, not freed under them. These hooks record
   the copies in flight (confirmed by wait) and flag any free that would cut one off. */
typedef struct td_wedge { int uploads, fail_upload, fail_wait, pending; const void *src; void *dst;
                          size_t pinned_size, device_size; int bad_pinned_free, bad_device_free;
                        } td_wedge;
static td_wedge g_wd;
static int tw_pa(void *u, size_t n, void **o) {
    (void)u;
    g_wd.pinned_size = n;               /* every buffer has the same size */
    *o = malloc(n);
    return *o ? 0 : 1;
}
static void tw_pf(void *u, void *p) {
    (void)u;
    if (g_wd.pending && (const char *)g_wd.src >= (const char *)p &&
        (const char *)g_wd.src < (const char *)p + g_wd.pinned_size)
        g_wd.bad_pinned_free++;
    free(p);
}
static int tw_da(void *u, size_t n, void **o) {
    (void)u;
    g_wd.device_size = n;               /* one block per load */
    *o = malloc(n);
    return *o ? 0 : 1;
}
static void tw_df(void *u, void *p) {
    (void)u;
    if (g_wd.pending && (char *)g_wd.dst >= (char *)p && (char *)g_wd.dst < (char *)p + g_wd.device_size)
        g_wd.bad_device_free++;
    free(p);
}
static int tw_up(void *u, int w, int b, void *dst, const void *src, size_t n) {
    (void)u; (void)w; (void)b; (void)n;
    if (++g_wd.uploads == g_wd.fail_upload) return 1;
    g_wd.pending = 1; g_wd.src = src; g_wd.dst = dst;
    return 0;
}
static int tw_wt(void *u, int w, int b) {
    (void)u; (void)w; (void)b;
    if (g_wd.fail_wait) return 1;
    g_wd.pending = 0;
    return 0;
}
static int tw_sy(void *u) { (void)u; return 1; }

static void test_wedged_device(void) {
    static const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {9, 10, 11, 12};
    static const uint64_t shape[1] = {4};
    safeload_save_tensor st[3];
    void *img = NULL;
    size_t size = 0;
    int round, i;
    st[0].name = "a"; st[0].dtype = SAFELOAD_F32; st[0].rank = 1; st[0].shape = shape; st[0].data = a; st[0].nbytes = 16;
    st[1] = st[0]; st[1].name = "b"; st[1].data = b;
    st[2] = st[0]; st[2].name = "c"; st[2].data = c;
    CHECK(safeload_serialize(&img, &size, st, 3, NULL, NULL) == SAFELOAD_OK);
    for (round = 0; round < 2; round++) {
        safeload_file *f = NULL;
        safeload_error e;
        safeload_arena *arena = NULL;
        safeload_request q[3];
        safeload_load_desc d;
        safeload_result r;
        memset(&g_wd, 0, sizeof g_wd);
        if (round == 0) g_wd.fail_upload = 2;   /* the second upload of a run of small tensors */
        else g_wd.fail_wait = 1;                 /* every wait fails */
        CHECK(safeload_open_memory(&f, img, size, NULL, &e) == SAFELOAD_OK);
        memset(q, 0, sizeof q);
        memset(&d, 0, sizeof d);
        for (i = 0; i < 3; i++) { q[i].name = st[i].name; q[i].device = 1; }
        d.threads = 1;
        d.hooks.pinned_alloc = tw_pa; d.hooks.pinned_free = tw_pf;
        d.hooks.device_alloc = tw_da; d.hooks.device_free = tw_df;
        d.hooks.upload = tw_up; d.hooks.wait = tw_wt; d.hooks.sync = tw_sy;
        r = safeload_load_file(f, q, 3, &d, &arena, &e);
        CHECK_MSG(r == SAFELOAD_HOOK_FAILED && arena == NULL, "round %d: %s", round, safeload_result_id(r));
        /* round 0: the copy before the failed one is waited for (confirmed) before anything is
           freed; round 1: it never is, so its buffers are leaked */
        if (round == 1) CHECK_MSG(g_wd.pending == 1, "round %d: no copy was left unconfirmed", round);
        CHECK_MSG(g_wd.bad_pinned_free == 0 && g_wd.bad_device_free == 0,
                  "round %d: freed under a running copy (pinned %d, device %d)", round,
                  g_wd.bad_pinned_free, g_wd.bad_device_free);
        safeload_close(f);
    }
    safeload_free(img, NULL);
}

/* Hooks (a plain host "device") that start a load on the pool running the outer one: the
   caller's hooks (device_alloc, begin, sync, end) and the helpers' (upload, wait) alike. */
typedef struct tn_state { safeload_file *f; safeload_pool *pool; int calls, refused, fail_begin; } tn_state;
static void tn_nest(tn_state *s) {
    safeload_load_desc d;
    safeload_request rq;
    safeload_arena *ar = NULL;
    safeload_error e;
    memset(&d, 0, sizeof d);
    memset(&rq, 0, sizeof rq);
    d.pool = s->pool;
    rq.name = "a";
    __atomic_fetch_add(&s->calls, 1, __ATOMIC_SEQ_CST);
    if (safeload_load_file(s->f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT &&
        strstr(e.message, "desc.pool") != NULL && ar == NULL)
        __atomic_fetch_add(&s->refused, 1, __ATOMIC_SEQ_CST);
    safeload_arena_free(ar);
}
static int tn_pa(void *u, size_t n, void **out) { (void)u; *out = malloc(n); return *out ? 0 : 1; }
static void tn_pf(void *u, void *p) { (void)u; free(p); }
static int tn_da(void *u, size_t n, void **out) { tn_nest((tn_state *)u); return tn_pa(u, n, out); }
static int tn_begin(void *u, int w, int b) {
    (void)w; (void)b;
    tn_nest((tn_state *)u);
    return ((tn_state *)u)->fail_begin;
}
static void tn_df(void *u, void *p) {      /* inside the load only when it fails */
    if (((tn_state *)u)->fail_begin) tn_nest((tn_state *)u);
    free(p);
}
static int tn_up(void *u, int w, int b, void *dst, const void *src, size_t n) {
    (void)w; (void)b;
    memcpy(dst, src, n);
    tn_nest((tn_state *)u);
    return 0;
}
static int tn_wait(void *u, int w, int b) { (void)u; (void)w; (void)b; return 0; }
static int tn_sync(void *u) { tn_nest((tn_state *)u); return 0; }
static void tn_end(void *u) { tn_nest((tn_state *)u); }

static void test_nested_in_hooks(void) {
    static const float a[4] = {1, 2, 3, 4};
    static const uint64_t shape[1] = {4};
    safeload_save_tensor st[1];
    void *img = NULL;
    size_t size = 0;
    tn_state s;
    safeload_error e;
    safeload_load_desc d;
    safeload_request q[1];
    safeload_arena *arena = NULL;
    st[0].name = "a"; st[0].dtype = SAFELOAD_F32; st[0].rank = 1; st[0].shape = shape;
    st[0].data = a; st[0].nbytes = 16;
    CHECK(safeload_serialize(&img, &size, st, 1, NULL, NULL) == SAFELOAD_OK);
    memset(&s, 0, sizeof s);
    CHECK(safeload_open_memory(&s.f, img, size, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_pool_create(&s.pool, 2, &e) == SAFELOAD_OK);
    memset(&d, 0, sizeof d);
    memset(q, 0, sizeof q);
    q[0].name = "a";
    q[0].device = 1;
    d.pool = s.pool;
    d.hooks.user = &s;
    d.hooks.pinned_alloc = tn_pa; d.hooks.pinned_free = tn_pf;
    d.hooks.device_alloc = tn_da; d.hooks.device_free = tn_df;
    d.hooks.begin = tn_begin; d.hooks.upload = tn_up; d.hooks.wait = tn_wait;
    d.hooks.sync = tn_sync; d.hooks.end = tn_end;
    alarm(60);
    CHECK(safeload_load_file(s.f, q, 1, &d, &arena, &e) == SAFELOAD_OK);
    alarm(0);
    /* device_alloc, begin, upload, sync, end: each one's load was refused */
    CHECK_MSG(s.calls >= 5 && s.refused == s.calls, "calls %d refused %d", s.calls, s.refused);
    CHECK(arena && memcmp(q[0].data, a, 16) == 0);
    safeload_arena_free(arena);
    /* a failing load: device_free, its last hook, runs inside it */
    s.calls = s.refused = 0;
    s.fail_begin = 1;
    CHECK(safeload_load_file(s.f, q, 1, &d, &arena, &e) == SAFELOAD_HOOK_FAILED && !arena);
    CHECK_MSG(s.calls == 3 && s.refused == 3, "calls %d refused %d", s.calls, s.refused);
    safeload_pool_destroy(s.pool);
    safeload_close(s.f);
    safeload_free(img, NULL);
}

/* Slices of either dimension into device memory (arena and caller pointers), cast or not, from
   memory and from a file in each I/O mode, small pinned buffers and staging; and every hook
   failing in turn with slices in the load. */
static uint64_t td_dim[400], td_b[400], td_e[400];

static void td_slice_requests(fake_dev *dev, safeload_request *rq, unsigned char **own,
                              int caller) {
    size_t i;
    td_requests(rq, 6);
    for (i = 0; i < td_n; i++) {
        const td_tensor *t = &td[i];
        uint32_t d = (uint32_t)(tu_rand64() % 2);
        uint64_t rows = t->shape[d], out;
        td_dim[i] = d;
        td_b[i] = tu_rand64() % rows;
        td_e[i] = td_b[i] + 1 + tu_rand64() % (rows - td_b[i]);
        rq[i].slice_dim = d;
        rq[i].slice_begin = td_b[i];
        rq[i].slice_end = td_e[i];
        own[i] = NULL;
        out = (d ? t->shape[0] * (td_e[i] - td_b[i]) : (td_e[i] - td_b[i]) * t->shape[1]) *
              safeload_dtype_size(rq[i].dtype ? rq[i].dtype : t->dt);
        if (caller && i % 2) {
            void *p = NULL;
            if (rq[i].device) fd_device_alloc(dev, (size_t)out + 1, &p);
            else p = malloc(out + 1);
            own[i] = (unsigned char *)p;
            rq[i].dst = own[i];
            rq[i].dst_size = out;
        }
    }
}

/* the slice of td[i] as requested, cast as requested */
static int td_slice_expect(const safeload_request *r, size_t i) {
    const td_tensor *t = &td[i];
    size_t es = safeload_dtype_size(t->dt), os, cnt, k;
    uint64_t w = td_e[i] - td_b[i];
    unsigned char *sl;
    int ok;
    if (td_dim[i] == 0) {
        cnt = (size_t)(w * t->shape[1]);
        sl = (unsigned char *)malloc(cnt * es + 1);
        memcpy(sl, t->data + td_b[i] * t->shape[1] * es, cnt * es);
    } else {
        cnt = (size_t)(w * t->shape[0]);
        sl = (unsigned char *)malloc(cnt * es + 1);
        for (k = 0; k < t->shape[0]; k++)
            memcpy(sl + k * w * es, t->data + (k * t->shape[1] + td_b[i]) * es, (size_t)(w * es));
    }
    if (r->dtype && r->dtype != t->dt) {
        safeload_convert_desc cd;
        unsigned char *c;
        os = safeload_dtype_size(r->dtype);
        c = (unsigned char *)malloc(cnt * os + 1);
        memset(&cd, 0, sizeof cd);
        cd.simd = SAFELOAD_SIMD_SCALAR;
        ok = safeload_convert_ex(c, r->dtype, sl, t->dt, cnt, &cd) == SAFELOAD_OK;
        free(sl);
        sl = c;
        es = os;
    } else {
        ok = 1;
    }
    ok = ok && r->nbytes == cnt * es && r->data && memcmp(r->data, sl, cnt * es) == 0;
    free(sl);
    return ok;
}

static void test_device_slices(fake_dev *dev) {
    char path[] = "/tmp/safeload-test-device-slices-XXXXXX";
    safeload_request rq[400];
    unsigned char *own[400];
    safeload_error e;
    int fd = mkstemp(path), src, th, cfg;
    size_t i;
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    CHECK(fp && fwrite(td_img, 1, td_size, fp) == td_size);
    if (fp) fclose(fp);
    for (src = 0; src < 4; src++)               /* memory, READ, MMAP, DIRECT */
        for (th = 1; th <= 4; th++)
            for (cfg = 0; cfg < 2; cfg++) {
                safeload_file *f;
                safeload_load_desc d;
                safeload_arena *arena = NULL;
                safeload_result r;
                safeload_load_stats st;
                int bad = 0;
                if (tu_skip_threads(th, src * 2 + cfg)) continue;
                if (src == 0) CHECK(safeload_open_memory(&f, td_img, td_size, NULL, &e) == SAFELOAD_OK);
                else CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
                memset(&d, 0, sizeof d);
                d.threads = th;
                d.io = src == 0 ? SAFELOAD_IO_READ : (safeload_io)(SAFELOAD_IO_READ + src - 1);
                d.device = SAFELOAD_DEVICE_HOOKS;
                d.hooks = fd_hooks(dev);
                d.pinned_size = cfg ? 8192 : 0;      /* slices across many pinned buffers */
                d.staging_size = cfg ? 4096 : 0;
                d.chunk_size = cfg ? 8192 : 0;
                fd_reset_counters(dev, -1, 0);
                td_slice_requests(dev, rq, own, cfg);
                d.stats = &st;
                r = safeload_load_file(f, rq, td_n, &d, &arena, &e);
                CHECK_MSG(r == SAFELOAD_OK, "src %d threads %d cfg %d: %s", src, th, cfg, e.message);
                /* DIRECT: reads queued (io_uring) where the kernel gives it, more in flight
                   than workers, into the same pinned double buffering */
                if (src == 3 && td_uring && st.io == SAFELOAD_IO_DIRECT)
                    CHECK_MSG(st.aio == SAFELOAD_AIO_IO_URING && st.queue_depth > st.threads,
                              "threads %d cfg %d: aio %d queue %d", th, cfg, (int)st.aio,
                              st.queue_depth);
                for (i = 0; i < td_n && r == SAFELOAD_OK; i++) bad += !td_slice_expect(&rq[i], i);
                CHECK_MSG(bad == 0, "src %d threads %d cfg %d: %d slices differ", src, th, cfg, bad);
                CHECK_EQ_U64(dev->violations, 0);
                CHECK_EQ_U64(dev->pinned_live, 0);
                safeload_arena_free(arena);
                for (i = 0; i < td_n; i++) {
                    if (own[i] && rq[i].device) fd_device_free(dev, own[i]);
                    else free(own[i]);
                }
                safeload_close(f);
            }
    {
        int hook;
        safeload_file *f;
        CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
        for (hook = 0; hook < FD_NHOOKS; hook++) {
            long k;
            for (k = 0; k < 200; k++) {
                safeload_load_desc d;
                safeload_arena *arena = NULL;
                safeload_result r;
                memset(&d, 0, sizeof d);
                d.threads = 1 + (int)(k % 3);
                d.hooks = fd_hooks(dev);
                d.pinned_size = 8192;
                d.staging_size = 4096;
                fd_reset_counters(dev, hook, k * (tu_quick() ? 21 : 7));
                td_slice_requests(dev, rq, own, 0);
                r = safeload_load_file(f, rq, td_n, &d, &arena, &e);
                if (r == SAFELOAD_OK) {
                    int bad = 0;
                    for (i = 0; i < td_n; i++) bad += !td_slice_expect(&rq[i], i);
                    CHECK(bad == 0);
                    safeload_arena_free(arena);
                    if (dev->calls[hook] <= k * (tu_quick() ? 21 : 7)) break;   /* past the last */
                    continue;
                }
                CHECK_MSG(r == SAFELOAD_HOOK_FAILED, "hook %d at %ld: %s", hook, k, e.message);
                CHECK(arena == NULL && rq[0].data == NULL);
                CHECK_EQ_U64(dev->violations, 0);
                CHECK_EQ_U64(dev->pinned_live, 0);
                CHECK_EQ_U64(dev->device_live, 0);
            }
        }
        safeload_close(f);
    }
    remove(path);
}

int main(void) {
    fake_dev dev;
    size_t i;
    td_make();
    td_uring = td_uring_probe();
    fd_init(&dev, 0);
    TU_PART(test_device_loads(&dev));
    TU_PART(test_device_reuse(&dev));
    TU_PART(test_caller_device_ptrs(&dev));
    TU_PART(test_pinned_budget(&dev));
    TU_PART(test_empty_device_tensors(&dev));
    TU_PART(test_hook_error_file(&dev));
    TU_PART(test_hook_failures(&dev));
    TU_PART(test_missing_hooks(&dev));
    TU_PART(test_device_cancel(&dev));
    TU_PART(test_mixed_run(&dev));
    TU_PART(test_upload_failure_names(&dev));
    TU_PART(test_wedged_device());
    TU_PART(test_nested_in_hooks());
    TU_PART(test_device_slices(&dev));
    fd_destroy(&dev);
    /* throttled: copies land well after upload() returns */
    fd_init(&dev, 400e6);
    TU_PART(test_device_loads(&dev));
    fd_destroy(&dev);
    for (i = 0; i < td_n; i++) free(td[i].data);
    safeload_free(td_img, NULL);
    return tu_finish("test_device");
}
