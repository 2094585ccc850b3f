/* engine_arena: how a game engine or an inference runtime would use safeload.h.

   The engine knows which parameters its network has. It checks the checkpoint against that
   list (missing and unexpected names, in one O(n) pass), lays every tensor out in ONE arena
   it owns (its own allocator, 64-byte aligned slots, floats as F32), and loads straight into
   it with a progress bar: no per-tensor allocation, no second pass to convert.

   Run without arguments it writes a small demo checkpoint first:
       build/engine_arena [MODEL] */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

#include <stdint.h>
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

/* Tensor names come from the file: printed with control bytes and non-ASCII escaped, so a
   hostile checkpoint cannot drive the terminal. */
static void put_text(FILE *o, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\') fputc(c, o);
        else fprintf(o, "\\x%02X", c);
    }
}
/* safeload_error's strings are safe to print as they are (the library replaces control and
   invalid bytes); the offset is SAFELOAD_NO_OFFSET when no byte is to blame. */
static void put_error(const char *what, const safeload_error *e) {
    fprintf(stderr, "error: %s: %s: %s: %s", what, e->file[0] ? e->file : "-",
            safeload_result_id(e->code), e->message);
    if (e->tensor[0]) fprintf(stderr, " [%s]", e->tensor);
    if (e->offset != SAFELOAD_NO_OFFSET)
        fprintf(stderr, " (byte %llu)", (unsigned long long)e->offset);
    fputc('\n', stderr);
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
        put_error("cannot write the demo checkpoint", &e);
        return 0;
    }
    printf("wrote demo checkpoint %s (no output.weight, on purpose)\n", path);
    return 1;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "build/engine_demo.safetensors";
    safeload_model *m = NULL;
    safeload_error e;
    safeload_key_report keys;
    safeload_request rq[N_PARAMS];
    safeload_load_desc d;
    unsigned char *arena, *base = NULL;
    uint64_t total = 0, off = 0;
    size_t i, n = 0;
    int status = 1, have_keys = 0;

    if (argc < 2 && !write_demo(path)) return 1;
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK) {
        put_error("open", &e);
        return 1;
    }

    /* 1. the key check: what the engine expects against what the file has */
    if (safeload_model_check_keys(m, k_params, N_PARAMS, &keys, &e) != SAFELOAD_OK) {
        put_error("key check", &e);
        goto done;
    }
    have_keys = 1;
    for (i = 0; i < keys.missing_count; i++)
        printf("  missing:    %s (engine keeps its default)\n", keys.missing[i]);
    for (i = 0; i < keys.unexpected_count; i++) {
        printf("  unexpected: ");
        put_text(stdout, keys.unexpected[i]);
        printf(" (ignored)\n");
    }

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
        /* the destination's bytes in the dtype it is loaded as (F4 and F6 too) */
        if (safeload_nbytes(r->dtype, t->shape, t->rank, &bytes) != SAFELOAD_OK ||
            bytes > SIZE_MAX - 64 - off) {
            fprintf(stderr, "error: %s does not fit in this address space\n", k_params[i]);
            goto done;
        }
        r->dst = (void *)(uintptr_t)off;           /* an offset until the arena exists */
        r->dst_size = bytes;
        off = (off + bytes + 63) / 64 * 64;
    }
    total = off;
    if (total > SIZE_MAX - 64 || !(base = (unsigned char *)engine_alloc((size_t)total))) {
        fprintf(stderr, "error: no memory for a %llu-byte arena\n", (unsigned long long)total);
        goto done;
    }
    arena = (unsigned char *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
    for (i = 0; i < n; i++) rq[i].dst = arena + (uintptr_t)rq[i].dst;

    /* 3. the load, straight into the engine's memory; on failure nothing in it is valid */
    memset(&d, 0, sizeof d);
    d.progress = on_progress;
    d.progress_interval = 16 * 1024;
    if (safeload_load(m, rq, n, &d, NULL, &e) != SAFELOAD_OK) {
        put_error("load", &e);
        goto done;
    }
    for (i = 0; i < n; i++)
        printf("  %-34s %-5s %7llu bytes at arena+%llu\n", rq[i].name,
               safeload_dtype_name(rq[i].dtype), (unsigned long long)rq[i].nbytes,
               (unsigned long long)((unsigned char *)rq[i].data - arena));
    printf("engine arena: %llu bytes, %llu tensors bound", (unsigned long long)total,
           (unsigned long long)n);
    for (i = 0; i < n; i++)
        if (strcmp(rq[i].name, "norm.weight") == 0 && rq[i].dtype == SAFELOAD_F32 &&
            rq[i].nbytes >= sizeof(float))
            printf(", first value of norm.weight = %g", (double)((const float *)rq[i].data)[0]);
    printf("\n");
    status = 0;
done:
    if (have_keys) safeload_key_report_free(&keys);
    safeload_model_close(m);
    free(base);
    return status;
}
