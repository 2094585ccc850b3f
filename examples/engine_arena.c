/* engine_arena: how a game engine or an inference runtime would use safeload.h.

   The engine knows which parameters its network has. It checks the checkpoint against that
   list (missing and unexpected names, in one O(n) pass), lays every tensor out in ONE arena
   it owns (its own allocator, 64-byte aligned slots, floats as F32), and loads straight into
   it with a progress bar: no per-tensor allocation, no second pass to convert.

   Run without arguments it writes a small demo checkpoint first:
       build/engine_arena [MODEL] */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The engine's view of its network: parameter names it will bind. */
static const char *const k_params[] = {
    "tok_embeddings.weight",
    "layers.0.attention.wq.weight",
    "layers.0.attention.wk.weight",
    "layers.0.feed_forward.w1.weight",
    "norm.weight",
    "output.weight",
};
#define N_PARAMS (sizeof k_params / sizeof k_params[0])

/* The engine's own allocator: one big block, carved up by the engine. */
static void *engine_alloc(size_t n) {
    void *p = malloc(n + 64);
    return p;
}

static int on_progress(void *user, uint64_t done, uint64_t total) {
    int w = 30, fill = total ? (int)(w * (double)done / (double)total) : w, i;
    (void)user;
    printf("\r  loading [");
    for (i = 0; i < w; i++) putchar(i < fill ? '=' : ' ');
    printf("] %3.0f%%", total ? 100.0 * (double)done / (double)total : 100.0);
    if (done == total) putchar('\n');
    fflush(stdout);
    return 0;                                   /* non-zero would cancel the load */
}

/* A demo checkpoint: the engine's parameters minus one, plus one it does not know. */
static int write_demo(const char *path) {
    static uint16_t emb[256 * 64], wq[64 * 64], wk[64 * 64], w1[128 * 64];
    static float norm[64];
    static const uint64_t s_emb[] = {256, 64}, s_sq[] = {64, 64}, s_w1[] = {128, 64}, s_n[] = {64};
    safeload_save_tensor t[5];
    safeload_error e;
    size_t i;
    for (i = 0; i < 256 * 64; i++) emb[i] = (uint16_t)(0x3c00 + i % 512);   /* bf16 bits */
    for (i = 0; i < 64 * 64; i++) { wq[i] = (uint16_t)(0x3d00 + i % 97); wk[i] = (uint16_t)(0xbd00 + i % 89); }
    for (i = 0; i < 128 * 64; i++) w1[i] = (uint16_t)(0x3a00 + i % 101);
    for (i = 0; i < 64; i++) norm[i] = 1.0f;
    memset(t, 0, sizeof t);
    t[0].name = "tok_embeddings.weight"; t[0].dtype = SAFELOAD_BF16; t[0].rank = 2; t[0].shape = s_emb; t[0].data = emb; t[0].nbytes = sizeof emb;
    t[1].name = "layers.0.attention.wq.weight"; t[1].dtype = SAFELOAD_BF16; t[1].rank = 2; t[1].shape = s_sq; t[1].data = wq; t[1].nbytes = sizeof wq;
    t[2].name = "layers.0.attention.wk.weight"; t[2].dtype = SAFELOAD_BF16; t[2].rank = 2; t[2].shape = s_sq; t[2].data = wk; t[2].nbytes = sizeof wk;
    t[3].name = "layers.0.feed_forward.w1.weight"; t[3].dtype = SAFELOAD_BF16; t[3].rank = 2; t[3].shape = s_w1; t[3].data = w1; t[3].nbytes = sizeof w1;
    t[4].name = "norm.weight"; t[4].dtype = SAFELOAD_F32; t[4].rank = 1; t[4].shape = s_n; t[4].data = norm; t[4].nbytes = sizeof norm;
    if (safeload_save(path, t, 5, NULL, &e) != SAFELOAD_OK) {
        fprintf(stderr, "cannot write %s: %s\n", path, e.message);
        return 0;
    }
    printf("wrote demo checkpoint %s (no output.weight, on purpose)\n", path);
    return 1;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "build/engine_demo.safetensors";
    safeload_model *m;
    safeload_error e;
    safeload_key_report keys;
    safeload_request rq[N_PARAMS];
    safeload_load_desc d;
    unsigned char *arena, *base;
    uint64_t total = 0, off = 0;
    size_t i, n = 0;

    if (argc < 2 && !write_demo(path)) return 1;
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK) {
        fprintf(stderr, "error: %s: %s: %s\n", e.file, safeload_result_id(e.code), e.message);
        return 1;
    }

    /* 1. the key check: what the engine expects against what the file has */
    safeload_model_check_keys(m, k_params, N_PARAMS, &keys, &e);
    for (i = 0; i < keys.missing_count; i++) printf("  missing:    %s (engine keeps its default)\n", keys.missing[i]);
    for (i = 0; i < keys.unexpected_count; i++) printf("  unexpected: %s (ignored)\n", keys.unexpected[i]);

    /* 2. the layout: one slot per present parameter, floats widened to F32, 64-byte aligned */
    memset(rq, 0, sizeof rq);
    for (i = 0; i < N_PARAMS; i++) {
        const safeload_tensor *t = safeload_model_find(m, k_params[i], NULL);
        safeload_request *r;
        uint64_t bytes;
        if (!t) continue;
        r = &rq[n++];
        r->name = k_params[i];
        r->dtype = safeload_can_convert(SAFELOAD_F32, t->dtype) ? SAFELOAD_F32 : t->dtype;
        bytes = t->numel * safeload_dtype_size(r->dtype);
        r->dst = (void *)(uintptr_t)off;           /* an offset until the arena exists */
        r->dst_size = bytes;
        off = (off + bytes + 63) / 64 * 64;
    }
    total = off;
    base = (unsigned char *)engine_alloc((size_t)total);
    if (!base) return 1;
    arena = (unsigned char *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
    for (i = 0; i < n; i++) rq[i].dst = arena + (uintptr_t)rq[i].dst;

    /* 3. the load, straight into the engine's memory */
    memset(&d, 0, sizeof d);
    d.progress = on_progress;
    d.progress_interval = 16 * 1024;
    if (safeload_load(m, rq, n, &d, NULL, &e) != SAFELOAD_OK) {
        fprintf(stderr, "error: %s: %s: %s [%s]\n", e.file, safeload_result_id(e.code), e.message, e.tensor);
        return 1;
    }
    for (i = 0; i < n; i++)
        printf("  %-34s %-5s %7llu bytes at arena+%llu\n", rq[i].name,
               safeload_dtype_name(rq[i].dtype), (unsigned long long)rq[i].nbytes,
               (unsigned long long)((unsigned char *)rq[i].data - arena));
    printf("engine arena: %llu bytes, %llu tensors bound, first value of norm.weight = %g\n",
           (unsigned long long)total, (unsigned long long)n,
           (double)((const float *)rq[n - 1].data)[0]);
    safeload_key_report_free(&keys);
    safeload_model_close(m);
    free(base);
    return 0;
}
