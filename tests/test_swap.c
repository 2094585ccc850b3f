/* test_swap: the byte-order code of big-endian hosts, on any host. SL__TEST_SWAP makes the
   library take every element in a file as byte-reversed from host order, which is what a
   big-endian host sees, so x86 CI runs the swapping kernels, loads and writer natively; on
   s390x under qemu (make test-be) the same program tests the real thing. Either way: a file
   holds each 2-, 4- or 8-byte element (C64: each F32 half) reversed from the host's; loads
   hand out host order in every I/O mode, from every source, into every destination; views are
   the file's bytes; the writer reverses back. */
#define _GNU_SOURCE
#define SL__TEST_SWAP 1
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "fakedev.h"
#include <unistd.h>

static int ts_quick;

static unsigned ts_unit(safeload_dtype d) {
    unsigned b = safeload_dtype_bits(d);
    return d == SAFELOAD_C64 ? 4u : b >= 16 ? b / 8 : 1u;
}

/* each unit-byte element of p reversed (independent of the library's swap) */
static void ts_rev(unsigned char *p, size_t n, unsigned u) {
    size_t i, k;
    if (u < 2) return;
    for (i = 0; i + u <= n; i += u)
        for (k = 0; k < u / 2; k++) {
            unsigned char t = p[i + k];
            p[i + k] = p[i + u - 1 - k];
            p[i + u - 1 - k] = t;
        }
}

static void ts_random(unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)tu_rand64();
}

/* ---- kernels: every pair a load can ask for, every length 0..70, every alignment ---- */
static void test_kernels(void) {
    enum { MAXN = 70, PAD = 16 };
    static unsigned char src[MAXN * 8 + PAD], host[MAXN * 8 + PAD], want[MAXN * 8 + PAD],
        dst[MAXN * 8 + 2 * PAD];
    int d, s, nt, pairs = 0;
    for (s = 1; s < (int)SAFELOAD_DTYPE_COUNT; s++)
        for (d = 1; d < (int)SAFELOAD_DTYPE_COUNT; d++) {
            safeload_dtype sd = (safeload_dtype)s, dd = (safeload_dtype)d;
            unsigned u = ts_unit(sd);
            int conv = d == s || safeload_can_convert(dd, sd);
            size_t ssz, dsz, n, sa, da;
            sl__cast_fn ref;
            for (nt = 0; nt < 2; nt++) {
                sl__cast_fn fn = sl__cast_resolve_file(dd, sd, nt);
                if (!conv || (d == s && u == 1)) {      /* no kernel: refused, or a plain copy */
                    CHECK_MSG(fn == NULL, "%s <- %s: a kernel", safeload_dtype_name(dd),
                              safeload_dtype_name(sd));
                    continue;
                }
                CHECK_MSG(fn != NULL, "%s <- %s: no load kernel", safeload_dtype_name(dd),
                          safeload_dtype_name(sd));
                if (!fn) continue;
                if (u == 1)     /* byte sources: the host's own kernels, SIMD included */
                    CHECK(fn == sl__cast_resolve(dd, sd, SAFELOAD_SIMD_AUTO, nt));
                ref = d == s ? NULL : sl__cast_resolve(dd, sd, SAFELOAD_SIMD_SCALAR, 0);
                if (d == s) {
                    ssz = dsz = u;
                } else {        /* the engine's units (F4: a byte of two elements) */
                    unsigned su, du;
                    sl__cast_unit(dd, sd, &su, &du);
                    ssz = su;
                    dsz = du;
                }
                pairs++;
                for (n = 0; n <= MAXN; n++)
                    for (sa = 0; sa < 8; sa++)
                        for (da = 0; da < 8; da++) {
                            if (ts_quick && n > 20 && (sa + da + n) % 5) continue;
                            ts_random(src + sa, n * ssz);
                            /* the reference: reverse to host order, then the host kernel */
                            memcpy(host, src + sa, n * ssz);
                            ts_rev(host, n * ssz, u);
                            if (ref) ref(want, host, n);
                            else memcpy(want, host, n * dsz);
                            memset(dst, 0xCD, sizeof dst);
                            fn(dst + PAD + da, src + sa, n);
                            CHECK_MSG(memcmp(dst + PAD + da, want, n * dsz) == 0,
                                      "%s <- %s: n %u, src+%u, dst+%u%s", safeload_dtype_name(dd),
                                      safeload_dtype_name(sd), (unsigned)n, (unsigned)sa,
                                      (unsigned)da, nt ? " (nt)" : "");
                            CHECK(dst[PAD + da - 1] == 0xCD && dst[PAD + da + n * dsz] == 0xCD);
                        }
            }
        }
    /* F32/F16/BF16/F64 both ways, F64<->F32, and the 2-, 4- and 8-byte plain swaps (x2 nt) */
    CHECK_MSG(pairs >= 2 * 20, "%d pairs", pairs);
    {   /* the in-place swap safeload_read and the writer use */
        unsigned u;
        for (u = 1; u <= 8; u *= 2) {
            size_t n;
            for (n = 0; n <= 64; n += u) {
                ts_random(src, n);
                memcpy(want, src, n);
                ts_rev(want, n, u);
                sl__swap_copy(src, src, n, u);
                CHECK_MSG(memcmp(src, want, n) == 0, "in place, unit %u, %u bytes", u,
                          (unsigned)n);
            }
        }
    }
    /* the header length and SipHash's words are little-endian on every host, swap or not */
    {
        static const unsigned char b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        CHECK(sl__le64(b) == 0x0807060504030201ULL);
        CHECK(sl__hash("abcdefgh", 8, 1, 2) == sl__hash("abcdefgh", 8, 1, 2));
    }
}

/* ---- the writer and loads ---- */
typedef struct ts_tensor {
    const char *name;
    safeload_dtype dt;
    uint64_t shape[2];
    unsigned char *data;        /* host order */
    uint64_t nbytes;
} ts_tensor;

static ts_tensor tt[32];
static size_t tn;

static void ts_add(const char *name, safeload_dtype dt, uint64_t rows, uint64_t cols) {
    ts_tensor *t = &tt[tn++];
    t->name = name;
    t->dt = dt;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->nbytes = rows * cols * safeload_dtype_bits(dt) / 8;
    t->data = (unsigned char *)malloc((size_t)t->nbytes + 1);
    ts_random(t->data, (size_t)t->nbytes);
}

typedef struct ts_mem { const unsigned char *p; uint64_t n; } ts_mem;
static int64_t ts_read(void *user, uint64_t off, void *dst, size_t n) {
    ts_mem *m = (ts_mem *)user;
    if (off >= m->n) return 0;
    if (n > m->n - off) n = (size_t)(m->n - off);
    if (n > 1000) n = 1000;                 /* short reads on purpose */
    memcpy(dst, m->p + off, n);
    return (int64_t)n;
}

/* what a load of tensor t as dtype want, [b, e) of dimension dim (e == 0: whole), must give:
   in host order */
static unsigned char *ts_expect(const ts_tensor *t, safeload_dtype want, uint32_t dim,
                                uint64_t b, uint64_t e, uint64_t *len) {
    uint64_t row = t->nbytes / t->shape[0], n, r;
    size_t es = safeload_dtype_size(t->dt);
    unsigned char *sel, *out;
    if (e == 0) { dim = 0; b = 0; e = t->shape[0]; }
    n = dim == 0 ? (e - b) * row : t->shape[0] * (e - b) * es;
    sel = (unsigned char *)malloc((size_t)n + 1);
    if (dim == 0) memcpy(sel, t->data + b * row, (size_t)n);
    else
        for (r = 0; r < t->shape[0]; r++)
            memcpy(sel + r * (e - b) * es, t->data + r * row + b * es, (size_t)((e - b) * es));
    if (want == SAFELOAD_DTYPE_NONE || want == t->dt) { *len = n; return sel; }
    n = n * 8 / safeload_dtype_bits(t->dt);            /* elements (F4: two a byte) */
    *len = n * safeload_dtype_size(want);
    out = (unsigned char *)malloc((size_t)*len + 1);
    CHECK(safeload_convert(out, want, sel, t->dt, (size_t)n) == SAFELOAD_OK);
    free(sel);
    return out;
}

/* a float dtype's other float dtype to cast to (DTYPE_NONE: not a float) */
static safeload_dtype ts_cast_to(safeload_dtype d) {
    switch (d) {
    case SAFELOAD_F32: return SAFELOAD_BF16;
    case SAFELOAD_BF16: return SAFELOAD_F32;
    case SAFELOAD_F16: return SAFELOAD_F32;
    case SAFELOAD_F64: return SAFELOAD_F32;
    case SAFELOAD_F8_E4M3: return SAFELOAD_BF16;
    case SAFELOAD_F4: return SAFELOAD_F32;
    case SAFELOAD_F8_E8M0: return SAFELOAD_BF16;
    case SAFELOAD_F8_E5M2FNUZ: return SAFELOAD_F16;
    default: return SAFELOAD_DTYPE_NONE;
    }
}

static void test_loads(void) {
    static const char *const names[] = {"f32", "bf16", "f16", "f64", "i64", "c64", "i16", "u32",
        "u8", "e4m3", "f4", "bool", "i32", "u16", "u64", "f32big", "f16b", "bf16b", "f64b", "e8m0",
        "e5m2fnuz"};
    safeload_save_tensor st[32];
    void *img = NULL;
    size_t n = 0, i;
    char path[256];
    unsigned char *fbytes;
    size_t fn;
    fake_dev dev;
    int src, io, th, var, dest;
    tn = 0;
    ts_add(names[0], SAFELOAD_F32, 7, 5);
    ts_add(names[1], SAFELOAD_BF16, 9, 3);
    ts_add(names[2], SAFELOAD_F16, 5, 7);
    ts_add(names[3], SAFELOAD_F64, 3, 3);
    ts_add(names[4], SAFELOAD_I64, 4, 2);
    ts_add(names[5], SAFELOAD_C64, 3, 5);
    ts_add(names[6], SAFELOAD_I16, 6, 1);
    ts_add(names[7], SAFELOAD_U32, 2, 9);
    ts_add(names[8], SAFELOAD_U8, 5, 3);
    ts_add(names[9], SAFELOAD_F8_E4M3, 4, 4);
    ts_add(names[10], SAFELOAD_F4, 3, 6);
    ts_add(names[11], SAFELOAD_BOOL, 2, 2);
    ts_add(names[12], SAFELOAD_I32, 3, 1);
    ts_add(names[13], SAFELOAD_U16, 1, 3);
    ts_add(names[14], SAFELOAD_U64, 2, 1);
    /* bigger than the chunk, the staging buffer and the writer's 1 MiB pieces (not a whole
       number of them), so pieces, threads and the writer's swapped stream all take part */
    ts_add(names[15], SAFELOAD_F32, ts_quick ? 300 : 1100, 1001);
    ts_add(names[16], SAFELOAD_F16, 97, 1003);
    ts_add(names[17], SAFELOAD_BF16, 33, 2049);
    ts_add(names[18], SAFELOAD_F64, 41, 999);
    ts_add(names[19], SAFELOAD_F8_E8M0, 3, 32);
    ts_add(names[20], SAFELOAD_F8_E5M2FNUZ, 5, 9);
    for (i = 0; i < tn; i++) {
        memset(&st[i], 0, sizeof st[i]);
        st[i].name = tt[i].name;
        st[i].dtype = tt[i].dt;
        st[i].rank = 2;
        st[i].shape = tt[i].shape;
        st[i].data = tt[i].data;
        st[i].nbytes = tt[i].nbytes;
    }
    /* the writer: each element reversed; save writes serialize's bytes */
    CHECK(safeload_serialize(&img, &n, st, tn, NULL, NULL) == SAFELOAD_OK);
    if (!img) return;
    {
        safeload_file *f = NULL;
        CHECK(safeload_open_memory(&f, img, n, NULL, NULL) == SAFELOAD_OK);
        for (i = 0; f && i < tn; i++) {
            const safeload_tensor *t = safeload_find(f, tt[i].name);
            const void *v = NULL;
            unsigned char *le = (unsigned char *)malloc((size_t)tt[i].nbytes + 1), *back;
            memcpy(le, tt[i].data, (size_t)tt[i].nbytes);
            ts_rev(le, (size_t)tt[i].nbytes, ts_unit(tt[i].dt));
            CHECK(t && safeload_view(f, t, &v, NULL, NULL) == SAFELOAD_OK);
            CHECK_MSG(v && memcmp(v, le, (size_t)tt[i].nbytes) == 0, "%s: file bytes",
                      tt[i].name);
            back = (unsigned char *)malloc((size_t)tt[i].nbytes + 1);
            CHECK(t && safeload_read(f, t, back, (size_t)tt[i].nbytes, NULL) == SAFELOAD_OK);
            CHECK_MSG(memcmp(back, tt[i].data, (size_t)tt[i].nbytes) == 0, "%s: read",
                      tt[i].name);
            free(back);
            free(le);
        }
        safeload_close(f);
    }
    snprintf(path, sizeof path, "%s/safeload-test-swap-%d.safetensors",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    CHECK(safeload_save(path, st, tn, NULL, NULL) == SAFELOAD_OK);
    fbytes = tu_slurp(path, &fn);
    CHECK(fbytes && fn == n && memcmp(fbytes, img, n) == 0);
    free(fbytes);

    fd_init(&dev, 0);
    for (src = 0; src < 3; src++)
        for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++)
            for (th = 1; th <= 3; th += 2)
                for (var = 0; var < 4; var++)
                    for (dest = 0; dest < 3; dest++) {
                        safeload_file *f = NULL;
                        safeload_reader rd;
                        ts_mem mem;
                        safeload_request q[32];
                        void *dst[32];
                        safeload_load_desc d;
                        safeload_arena *arena = NULL;
                        safeload_error e;
                        safeload_result r;
                        if (ts_quick && (src + io + th + var + dest) % 3) continue;
                        if (src != 0 && io != SAFELOAD_IO_READ && (var || dest)) continue;
                        mem.p = (const unsigned char *)img;
                        mem.n = n;
                        memset(&rd, 0, sizeof rd);
                        rd.read = ts_read;
                        rd.size = n;
                        rd.user = &mem;
                        r = src == 0 ? safeload_open(&f, path, NULL, &e)
                          : src == 1 ? safeload_open_memory(&f, img, n, NULL, &e)
                                     : safeload_open_reader(&f, &rd, NULL, &e);
                        CHECK_MSG(r == SAFELOAD_OK, "open %d: %s", src, e.message);
                        if (r != SAFELOAD_OK) continue;
                        memset(&d, 0, sizeof d);
                        d.threads = th;
                        d.io = (safeload_io)io;
                        d.chunk_size = 64 * 1024;
                        d.staging_size = 4096 * (size_t)(1 + var);
                        if (dest == 2) {
                            d.hooks = fd_hooks(&dev);
                            d.pinned_size = 64 * 1024;
                        }
                        memset(q, 0, sizeof q);
                        for (i = 0; i < tn; i++) {
                            uint64_t rows = tt[i].shape[0];
                            q[i].name = tt[i].name;
                            /* 1: casts; 2: rows [1, rows - 1); 3: columns [1, cols - 1) cast */
                            if (var & 1) q[i].dtype = ts_cast_to(tt[i].dt);
                            if (var == 2 && rows > 2) { q[i].slice_begin = 1; q[i].slice_end = rows - 1; }
                            if (var == 3 && tt[i].shape[1] > 2 && safeload_dtype_size(tt[i].dt)) {
                                q[i].slice_dim = 1;
                                q[i].slice_begin = 1;
                                q[i].slice_end = tt[i].shape[1] - 1;
                            }
                            dst[i] = NULL;
                            if (dest == 1) {   /* caller memory, sized for the whole tensor */
                                /* room for any cast: 8 bytes an element */
                                uint64_t b = tt[i].nbytes * 8 / safeload_dtype_bits(tt[i].dt) * 8;
                                dst[i] = malloc((size_t)b + 1);
                                q[i].dst = (unsigned char *)dst[i] + 1;   /* odd address */
                                q[i].dst_size = (size_t)b;
                            }
                            q[i].device = dest == 2;
                        }
                        fd_reset_counters(&dev, -1, 0);
                        r = safeload_load_file(f, q, tn, &d, &arena, &e);
                        CHECK_MSG(r == SAFELOAD_OK, "load src %d io %d threads %d var %d dest %d:"
                                  " %s", src, io, th, var, dest, e.message);
                        for (i = 0; r == SAFELOAD_OK && i < tn; i++) {
                            uint64_t len;
                            unsigned char *want = ts_expect(&tt[i], q[i].dtype, q[i].slice_dim,
                                                            q[i].slice_begin, q[i].slice_end,
                                                            &len);
                            CHECK_MSG(q[i].nbytes == len && memcmp(q[i].data, want,
                                                                   (size_t)len) == 0,
                                      "%s: src %d io %d threads %d var %d dest %d", tt[i].name,
                                      src, io, th, var, dest);
                            free(want);
                        }
                        if (dest == 2) CHECK_EQ_U64(dev.violations, 0);
                        safeload_arena_free(arena);
                        for (i = 0; i < tn; i++) free(dst[i]);
                        safeload_close(f);
                    }
    fd_destroy(&dev);
    {   /* load_all as stored and as F32 */
        safeload_model *m = NULL;
        safeload_loaded *l = NULL;
        int k;
        CHECK(safeload_model_open(&m, path, NULL, NULL) == SAFELOAD_OK);
        for (k = 0; m && k < 2; k++) {
            safeload_dtype want = k ? SAFELOAD_F32 : SAFELOAD_DTYPE_NONE;
            CHECK(safeload_load_all(m, want, NULL, &l, NULL) == SAFELOAD_OK);
            for (i = 0; l && i < l->count; i++) {
                size_t j;
                uint64_t len;
                unsigned char *w;
                for (j = 0; j < tn && strcmp(tt[j].name, l->tensors[i].name) != 0; j++) {}
                if (j == tn) { CHECK(0); continue; }
                w = ts_expect(&tt[j], k && safeload_can_convert(SAFELOAD_F32, tt[j].dt)
                                          ? SAFELOAD_F32 : SAFELOAD_DTYPE_NONE,
                              0, 0, 0, &len);
                CHECK_MSG(l->tensors[i].nbytes == len &&
                          memcmp(l->tensors[i].data, w, (size_t)len) == 0, "load_all %d: %s",
                          k, tt[j].name);
                free(w);
            }
            safeload_loaded_free(l);
            l = NULL;
        }
        safeload_model_close(m);
    }
    unlink(path);
    safeload_free(img, NULL);
    for (i = 0; i < tn; i++) free(tt[i].data);
}

int main(void) {
    ts_quick = getenv("SAFELOAD_TEST_QUICK") != NULL;
    printf("test_swap: %s host, elements %s in files\n", tu_big_endian() ? "big-endian" :
           "little-endian", tu_big_endian() ? "swapped (as on every big-endian host)" :
           "swapped by SL__TEST_SWAP");
    test_kernels();
    test_loads();
    return tu_finish("test_swap");
}
