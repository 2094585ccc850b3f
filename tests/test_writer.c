/* test_writer.c - safeload_serialize / safeload_save against the reference writer's layout:
   tensors by dtype (descending enum order) then name bytewise, compact JSON, __metadata__ first
   with sorted keys, spaces to a multiple of 8, data contiguous in that order, serde_json
   escaping; rejects; atomic replacement; byte-for-byte reproduction of the reference files. */
#ifdef SL_TEST_SHARED_IMPL   /* make test links build/impl.o (tests/impl.c) instead */
#  include "shared_impl.h"
#else
#  define SAFELOAD_IMPLEMENTATION
#endif
#include "safeload.h"
#include "testutil.h"
#include <unistd.h>
#include <signal.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char g_dir[256];              /* a private scratch directory */

/* fsync, replaced in this program so a test can make it fail like a full or failing disk */
static int g_fsync_fails;           /* 1: every fsync fails; 2: only a directory's */
static struct stat g_dir_synced;    /* the last directory fsync'd */
int fsync(int fd) {
    struct stat sb;
    int is_dir = fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (is_dir) g_dir_synced = sb;
    if (g_fsync_fails == 1 || (g_fsync_fails == 2 && is_dir)) { errno = EIO; return -1; }
    return fdatasync(fd);
}

/* A hang inside the library is a failure, not a stuck build. */
static char g_hang_msg[256] = "test_writer: TIMED OUT (a call did not return)\n";
static void on_alarm(int sig) {
    ssize_t w;
    (void)sig;
    w = write(2, g_hang_msg, strlen(g_hang_msg));
    (void)w;
    _exit(2);
}


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

static safeload_kv mkkv(const char *key, const char *value) {
    safeload_kv kv;
    kv.key = key; kv.key_len = strlen(key); kv.value = value; kv.value_len = strlen(value);
    return kv;
}

static const unsigned char BYTES[64] = {
    0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,
    32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63 };

/* ---- exact literal images --------------------------------------------------------------- */
static void test_literals(void) {
    static const uint64_t s2[1] = { 2 }, s22[2] = { 2, 2 }, s0[1] = { 0 }, s3[1] = { 3 }, s4[1] = { 4 };
    static const uint64_t sbig[2] = { 0, UINT64_MAX };
    safeload_save_tensor t[8];
    safeload_save_desc d;
    safeload_kv kv[4];
    unsigned char want[64], le4[16], le8[8];
    /* BYTES as the file holds them as F32/I32 and as F64 elements (little-endian) */
    memcpy(le4, BYTES, 16);
    tu_le(le4, 16, 4);
    memcpy(le8, BYTES, 8);
    tu_le(le8, 8, 8);
    /* nothing at all: "{}" + 6 spaces */
    EXPECT_SER(NULL, 0, NULL, "{}", NULL, 0);
    {
        void *out = NULL; size_t n = 0;
        static const unsigned char img[16] = { 8,0,0,0,0,0,0,0, '{','}',' ',' ',' ',' ',' ',' ' };
        CHECK(safeload_serialize(&out, &n, NULL, 0, NULL, NULL) == SAFELOAD_OK);
        CHECK(n == 16 && out && memcmp(out, img, 16) == 0);
        safeload_free(out, NULL);
    }
    memset(&d, 0, sizeof d);
    EXPECT_SER(NULL, 0, &d, "{}", NULL, 0);
    d.flags = SAFELOAD_SAVE_EMPTY_METADATA;
    EXPECT_SER(NULL, 0, &d, "{\"__metadata__\":{}}", NULL, 0);
    {   /* a flag this header does not know (a newer one's?) is refused, not ignored */
        void *o = (void *)1;
        size_t on = 1;
        safeload_error e;
        d.flags = SAFELOAD_SAVE_EMPTY_METADATA | 0x80u;
        CHECK(safeload_serialize(&o, &on, NULL, 0, &d, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(o == NULL && on == 0 && strcmp(e.message, "unknown flags 0x81") == 0);
        d.flags = SAFELOAD_SAVE_EMPTY_METADATA;
    }
    /* metadata pairs: keys sorted bytewise, __metadata__ first */
    kv[0] = mkkv("b", "2"); kv[1] = mkkv("a", "1");
    kv[2] = mkkv("B", "3"); kv[3] = mkkv("a.b", "");
    memset(&d, 0, sizeof d);
    d.metadata = kv; d.metadata_count = 4;
    EXPECT_SER(NULL, 0, &d, "{\"__metadata__\":{\"B\":\"3\",\"a\":\"1\",\"a.b\":\"\",\"b\":\"2\"}}", NULL, 0);
    d.flags = SAFELOAD_SAVE_EMPTY_METADATA;     /* no effect when there are pairs */
    EXPECT_SER(NULL, 0, &d, "{\"__metadata__\":{\"B\":\"3\",\"a\":\"1\",\"a.b\":\"\",\"b\":\"2\"}}", NULL, 0);
    t[0] = st("w", SAFELOAD_F32, 1, s2, BYTES, 8);
    EXPECT_SER(t, 1, &d, "{\"__metadata__\":{\"B\":\"3\",\"a\":\"1\",\"a.b\":\"\",\"b\":\"2\"},"
               "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", le4, 8);
    /* one tensor; the upstream reference vector: N = 60 padded to 64 */
    EXPECT_SER(t, 1, NULL, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", le4, 8);
    t[0] = st("test", SAFELOAD_I32, 2, s22, BYTES, 16);
    EXPECT_SER(t, 1, NULL, "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", le4, 16);
    {
        void *out = NULL; size_t n = 0;
        CHECK(safeload_serialize(&out, &n, t, 1, NULL, NULL) == SAFELOAD_OK);
        CHECK(n == 8 + 64 + 16 && out && ((unsigned char *)out)[0] == 64 && memcmp((char *)out + 8 + 60, "    ", 4) == 0);
        safeload_free(out, NULL);
    }
    /* scalar, zero-size, huge zero-size shape */
    t[0] = st("s", SAFELOAD_F64, 0, NULL, BYTES, 8);
    t[1] = st("z", SAFELOAD_F64, 1, s0, BYTES, 0);
    t[2] = st("e", SAFELOAD_U8, 2, sbig, BYTES, 0);
    EXPECT_SER(t, 3, NULL, "{\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},"
               "\"z\":{\"dtype\":\"F64\",\"shape\":[0],\"data_offsets\":[8,8]},"
               "\"e\":{\"dtype\":\"U8\",\"shape\":[0,18446744073709551615],\"data_offsets\":[8,8]}}", le8, 8);
    /* order: dtype descending, then name bytewise; data follows that order */
    t[0] = st("b", SAFELOAD_U8, 1, s3, BYTES + 10, 3);
    t[1] = st("a", SAFELOAD_U8, 1, s4, BYTES + 20, 4);
    t[2] = st("c", SAFELOAD_F16, 1, s2, BYTES + 30, 4);
    t[3] = st("Z", SAFELOAD_BF16, 1, s2, BYTES + 40, 4);
    t[4] = st("x", SAFELOAD_BOOL, 1, s2, BYTES + 50, 2);
    t[5] = st("y", SAFELOAD_F4, 1, s4, BYTES + 52, 2);
    t[6] = st("q", SAFELOAD_U64, 0, NULL, BYTES, 8);
    memcpy(want, BYTES, 8);            /* q */
    memcpy(want + 8, BYTES + 40, 4);   /* Z (BF16) */
    memcpy(want + 12, BYTES + 30, 4);  /* c (F16) */
    memcpy(want + 16, BYTES + 20, 4);  /* a (U8) */
    memcpy(want + 20, BYTES + 10, 3);  /* b (U8) */
    memcpy(want + 23, BYTES + 52, 2);  /* y (F4) */
    memcpy(want + 25, BYTES + 50, 2);  /* x (BOOL) */
    tu_le(want, 8, 8);
    tu_le(want + 8, 8, 2);
    EXPECT_SER(t, 7, NULL, "{\"q\":{\"dtype\":\"U64\",\"shape\":[],\"data_offsets\":[0,8]},"
               "\"Z\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]},"
               "\"c\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[12,16]},"
               "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[16,20]},"
               "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[20,23]},"
               "\"y\":{\"dtype\":\"F4\",\"shape\":[4],\"data_offsets\":[23,25]},"
               "\"x\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[25,27]}}", want, 27);
    /* bytewise name order: prefixes first, then by unsigned byte (0xC3 > 'z' > 'Z' > '.') */
    t[0] = st("a\xc3\xa9", SAFELOAD_I8, 1, s2, BYTES, 2);
    t[1] = st("aZ", SAFELOAD_I8, 1, s2, BYTES + 2, 2);
    t[2] = st("a.b", SAFELOAD_I8, 1, s2, BYTES + 4, 2);
    t[3] = st("a", SAFELOAD_I8, 1, s2, BYTES + 6, 2);
    t[4] = st("az", SAFELOAD_I8, 1, s2, BYTES + 8, 2);
    memcpy(want, BYTES + 6, 2); memcpy(want + 2, BYTES + 4, 2); memcpy(want + 4, BYTES + 2, 2);
    memcpy(want + 6, BYTES + 8, 2); memcpy(want + 8, BYTES, 2);
    EXPECT_SER(t, 5, NULL, "{\"a\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]},"
               "\"a.b\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[2,4]},"
               "\"aZ\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[4,6]},"
               "\"az\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[6,8]},"
               "\"a\xc3\xa9\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[8,10]}}", want, 10);
}

/* ---- escaping (serde_json) --------------------------------------------------------------- */
static void test_escaping(void) {
    static const uint64_t s1[1] = { 1 };
    safeload_save_tensor t[4];
    safeload_save_desc d;
    safeload_kv kv[3];
    /* the sort uses the raw bytes, not the escaped text: '"'(22) < '#'(23) < '\\'(5c) < ']'(5d) */
    t[0] = st("]", SAFELOAD_U8, 1, s1, BYTES + 0, 1);
    t[1] = st("\\", SAFELOAD_U8, 1, s1, BYTES + 1, 1);
    t[2] = st("#", SAFELOAD_U8, 1, s1, BYTES + 2, 1);
    t[3] = st("\"", SAFELOAD_U8, 1, s1, BYTES + 3, 1);
    {
        static const unsigned char w[4] = { 3, 2, 1, 0 };
        EXPECT_SER(t, 4, NULL, "{\"\\\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                   "\"#\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
                   "\"\\\\\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]},"
                   "\"]\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]}}", w, 4);
    }
    /* every control character, '/', DEL and non-ASCII */
    t[0] = st("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18"
              "\x19\x1a\x1b\x1c\x1d\x1e\x1f /\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", SAFELOAD_U8, 1, s1, BYTES, 1);
    EXPECT_SER(t, 1, NULL, "{\"\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e"
               "\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c"
               "\\u001d\\u001e\\u001f /\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":"
               "{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", BYTES, 1);
    /* metadata keys and values are escaped the same way */
    kv[0] = mkkv("q\"uote", "back\\slash\ttab\nnl");
    kv[1] = mkkv("ctl\x1f", "\x7f/\xc3\xa9\r\f\b");
    kv[2] = mkkv("Q", "{\"json\":[1]}");
    memset(&d, 0, sizeof d);
    d.metadata = kv; d.metadata_count = 3;
    EXPECT_SER(NULL, 0, &d, "{\"__metadata__\":{\"Q\":\"{\\\"json\\\":[1]}\",\"ctl\\u001f\":\"\x7f/\xc3\xa9\\r\\f\\b\","
               "\"q\\\"uote\":\"back\\\\slash\\ttab\\nnl\"}}", NULL, 0);
}

/* ---- an independent model of the layout, for generated cases ------------------------------ */
typedef struct sbuf { char *p; size_t n, cap; } sbuf;
static void sb_put(sbuf *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = (char *)realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_json(sbuf *b, const char *s, size_t n) {
    size_t i;
    sb_put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        if (c == '"') sb_str(b, "\\\"");
        else if (c == '\\') sb_str(b, "\\\\");
        else if (c == '\b') sb_str(b, "\\b");
        else if (c == '\t') sb_str(b, "\\t");
        else if (c == '\n') sb_str(b, "\\n");
        else if (c == '\f') sb_str(b, "\\f");
        else if (c == '\r') sb_str(b, "\\r");
        else if (c < 0x20) { sprintf(e, "\\u%04x", c); sb_str(b, e); }
        else sb_put(b, &s[i], 1);
    }
    sb_put(b, "\"", 1);
}
static int bytecmp(const char *a, size_t an, const char *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an < bn ? -1 : an > bn ? 1 : 0);
}
static const safeload_save_tensor *g_sort_ts;
static int cmp_tensor(const void *x, const void *y) {
    const safeload_save_tensor *a = &g_sort_ts[*(const size_t *)x], *b = &g_sort_ts[*(const size_t *)y];
    if (a->dtype != b->dtype) return a->dtype > b->dtype ? -1 : 1;
    return bytecmp(a->name, strlen(a->name), b->name, strlen(b->name));
}
static int cmp_kv(const void *x, const void *y) {
    const safeload_kv *a = (const safeload_kv *)x, *b = (const safeload_kv *)y;
    return bytecmp(a->key, a->key_len, b->key, b->key_len);
}

/* The expected image for tensors + metadata (+ flags), built from the spec. */
static unsigned char *model_image(const safeload_save_tensor *ts, size_t count, const safeload_save_desc *d,
                                  size_t *out_n) {
    sbuf j = { NULL, 0, 0 }, data = { NULL, 0, 0 };
    size_t *idx = (size_t *)malloc((count + 1) * sizeof *idx), i, m = d ? d->metadata_count : 0;
    uint64_t off = 0;
    unsigned char *img;
    int first = 1;
    char num[64];
    for (i = 0; i < count; i++) idx[i] = i;
    g_sort_ts = ts;
    qsort(idx, count, sizeof *idx, cmp_tensor);
    sb_str(&j, "{");
    sb_put(&data, "", 0);
    if (m || (d && (d->flags & SAFELOAD_SAVE_EMPTY_METADATA))) {
        safeload_kv *kv = (safeload_kv *)malloc((m + 1) * sizeof *kv);
        if (m) memcpy(kv, d->metadata, m * sizeof *kv);
        qsort(kv, m, sizeof *kv, cmp_kv);
        sb_str(&j, "\"__metadata__\":{");
        for (i = 0; i < m; i++) {
            if (i) sb_str(&j, ",");
            sb_json(&j, kv[i].key, kv[i].key_len); sb_str(&j, ":"); sb_json(&j, kv[i].value, kv[i].value_len);
        }
        sb_str(&j, "}");
        first = 0;
        free(kv);
    }
    for (i = 0; i < count; i++) {
        const safeload_save_tensor *t = &ts[idx[i]];
        uint32_t k;
        if (!first) sb_str(&j, ",");
        first = 0;
        sb_json(&j, t->name, strlen(t->name));
        sb_str(&j, ":{\"dtype\":\""); sb_str(&j, safeload_dtype_name(t->dtype)); sb_str(&j, "\",\"shape\":[");
        for (k = 0; k < t->rank; k++) { sprintf(num, k ? ",%llu" : "%llu", (unsigned long long)t->shape[k]); sb_str(&j, num); }
        sprintf(num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->nbytes));
        sb_str(&j, num);
        off += t->nbytes;
        if (t->nbytes) sb_put(&data, t->data, (size_t)t->nbytes);
    }
    sb_str(&j, "}");
    img = expect_image(j.p, data.p, data.n, out_n);
    free(j.p); free(data.p); free(idx);
    return img;
}

/* Header lengths of every residue mod 8: padding to the next multiple of 8, none when exact. */
static void test_padding(void) {
    static const uint64_t s1[1] = { 1 };
    char name[64];
    int len;
    for (len = 1; len <= 24; len++) {
        safeload_save_tensor t;
        void *out = NULL;
        size_t n = 0, want_n, jl;
        unsigned char *want;
        memset(name, 'n', (size_t)len); name[len] = 0;
        t = st(name, SAFELOAD_U8, 1, s1, BYTES + 5, 1);
        want = model_image(&t, 1, NULL, &want_n);
        CHECK(safeload_serialize(&out, &n, &t, 1, NULL, NULL) == SAFELOAD_OK);
        CHECK(out && n == want_n && memcmp(out, want, n) == 0);
        jl = strlen("{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}") + (size_t)len;
        CHECK(out && ((unsigned char *)out)[0] == (jl + 7) / 8 * 8 && n == 8 + (jl + 7) / 8 * 8 + 1);
        safeload_free(out, NULL);
        free(want);
    }
}

/* SAFELOAD_SAVE_ALIGN_DATA: the image without the flag, its header padded with more spaces to
   the first 4096-byte boundary at or after it (none when it already ends on one), read back
   with the data section there. JSON lengths around each residue and across several pages. */
static void test_align_data(void) {
    static const uint64_t s1[1] = { 1 }, s16[1] = { 16 };
    static const size_t jls[] = { 1, 2, 7, 8, 9, 4070, 4080, 4081, 4088, 4089, 4090, 8184,
                                  8185, 12000 };
    size_t li;
    for (li = 0; li < sizeof jls / sizeof jls[0]; li++) {
        /* a name sized so that the JSON is jls[li] bytes where it can be (at least the
           template's length) */
        const char *tmpl = "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                           "\"zz\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[1,17]}}";
        size_t base = strlen(tmpl), nl = jls[li] > base ? jls[li] - base : 1, want_n, n = 0, N,
               plain_N, k;
        char *name = (char *)malloc(nl + 1);
        safeload_save_tensor t[2];
        safeload_save_desc d;
        unsigned char *want;
        void *out = NULL;
        safeload_file *f = NULL;
        safeload_error err;
        memset(name, 'a', nl);
        name[nl] = 0;
        t[0] = st(name, SAFELOAD_U8, 1, s1, BYTES + 5, 1);
        t[1] = st("zz", SAFELOAD_U8, 1, s16, BYTES, 16);
        want = model_image(t, 2, NULL, &want_n);
        plain_N = want_n - 8 - 17;
        memset(&d, 0, sizeof d);
        d.flags = SAFELOAD_SAVE_ALIGN_DATA;
        CHECK(safeload_serialize(&out, &n, t, 2, &d, NULL) == SAFELOAD_OK);
        if (!out) { free(want); free(name); continue; }
        for (N = 0, k = 0; k < 8; k++) N |= (size_t)((unsigned char *)out)[k] << (8 * k);
        CHECK_MSG((8 + N) % 4096 == 0 && N >= plain_N && N - plain_N < 4096 &&
                  (N == plain_N) == ((8 + plain_N) % 4096 == 0),
                  "json %zu: N %zu, unaligned %zu", jls[li], N, plain_N);
        CHECK(n == 8 + N + 17);
        CHECK(memcmp((unsigned char *)out + 8, want + 8, plain_N) == 0);   /* JSON + its pad */
        for (k = 8 + plain_N; k < 8 + N && ((unsigned char *)out)[k] == ' '; k++) {}
        CHECK_EQ_U64(k, 8 + N);                                         /* spaces to the end */
        CHECK(memcmp((unsigned char *)out + 8 + N, want + 8 + plain_N, 17) == 0);
        CHECK_MSG(safeload_open_memory(&f, out, n, NULL, &err) == SAFELOAD_OK, "%s", err.message);
        if (f) {
            const safeload_tensor *z = safeload_find(f, "zz");
            CHECK_EQ_U64(safeload_data_offset(f), 8 + N);
            CHECK(z && z->file_offset == 8 + N + 1 && z->nbytes == 16);
            safeload_close(f);
        }
        /* with EMPTY_METADATA too */
        safeload_free(out, NULL);
        out = NULL;
        d.flags = SAFELOAD_SAVE_ALIGN_DATA | SAFELOAD_SAVE_EMPTY_METADATA;
        CHECK(safeload_serialize(&out, &n, t, 2, &d, NULL) == SAFELOAD_OK);
        CHECK(out && (n - 17) % 4096 == 0 && memcmp((char *)out + 8, "{\"__metadata__\":{}", 18) == 0);
        safeload_free(out, NULL);
        free(want);
        free(name);
    }
    {   /* a flag past the known ones is still refused with them */
        void *o = NULL;
        size_t on = 0;
        safeload_save_desc d;
        safeload_error e;
        memset(&d, 0, sizeof d);
        d.flags = SAFELOAD_SAVE_ALIGN_DATA | 0x4u;
        CHECK(safeload_serialize(&o, &on, NULL, 0, &d, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(o == NULL && strcmp(e.message, "unknown flags 0x6") == 0);
        /* nothing at all: "{}" and 4086 spaces */
        d.flags = SAFELOAD_SAVE_ALIGN_DATA;
        CHECK(safeload_serialize(&o, &on, NULL, 0, &d, &e) == SAFELOAD_OK);
        CHECK(on == 4096 && o && ((unsigned char *)o)[0] == 0xF8 && ((unsigned char *)o)[1] == 0x0F &&
              memcmp((char *)o + 8, "{}  ", 4) == 0 && ((char *)o)[4095] == ' ');
        safeload_free(o, NULL);
    }
}

/* Metadata strings with NUL bytes (lengths, not C strings): written as \u0000 and read back. */
static void test_metadata_nul(void) {
    safeload_kv kv[2];
    safeload_save_desc d;
    void *out = NULL;
    size_t n = 0;
    safeload_file *f = NULL;
    kv[0].key = "k"; kv[0].key_len = 1; kv[0].value = "a\0b"; kv[0].value_len = 3;
    kv[1].key = "k\0z"; kv[1].key_len = 3; kv[1].value = ""; kv[1].value_len = 0;
    memset(&d, 0, sizeof d);
    d.metadata = kv; d.metadata_count = 2;
    EXPECT_SER(NULL, 0, &d, "{\"__metadata__\":{\"k\":\"a\\u0000b\",\"k\\u0000z\":\"\"}}", NULL, 0);
    CHECK(safeload_serialize(&out, &n, NULL, 0, &d, NULL) == SAFELOAD_OK);
    CHECK(out && safeload_open_memory(&f, out, n, NULL, NULL) == SAFELOAD_OK);
    if (f) {
        const safeload_kv *r = safeload_metadata_find(f, "k");
        CHECK(r && r->value_len == 3 && memcmp(r->value, "a\0b", 3) == 0);
        r = safeload_metadata_at(f, 1);
        CHECK(r && r->key_len == 3 && memcmp(r->key, "k\0z", 3) == 0);
        safeload_close(f);
    }
    safeload_free(out, NULL);
}

/* ---- generated round trips ---------------------------------------------------------------- */
static void rand_name(char *s, size_t max) {
    static const char *const parts[] = { "a", "b", "Z", ".", "_", "0", "9", "\"", "\\", "/", "\t", "\n", "\x01",
        "\x1f", "\x7f", " ", "{", "}", ":", ",", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "layers", "weight" };
    size_t n = 0, k = tu_rand64() % 7, i;
    for (i = 0; i < k; i++) {
        const char *p = parts[tu_rand64() % (sizeof parts / sizeof parts[0])];
        size_t l = strlen(p);
        if (n + l >= max) break;
        memcpy(s + n, p, l); n += l;
    }
    s[n] = 0;
}

static void test_round_trips(void) {
    enum { MAXT = 40, MAXM = 6 };
    static char names[MAXT][64], keys[MAXM][64], vals[MAXM][64];
    static uint64_t shapes[MAXT][4];
    static unsigned char data[MAXT][2048], le[MAXT][2048];
    safeload_save_tensor ts[MAXT], tle[MAXT];
    safeload_kv kv[MAXM];
    safeload_save_desc d;
    int iter;
    for (iter = 0; iter < 300; iter++) {
        size_t count = (size_t)(tu_rand64() % MAXT), m = (size_t)(tu_rand64() % MAXM), i, j, n = 0, want_n;
        void *out = NULL;
        unsigned char *want;
        safeload_file *f = NULL;
        safeload_error err;
        for (i = 0; i < count; i++) {
            safeload_dtype dt = (safeload_dtype)(1 + tu_rand64() % 22);
            uint32_t rank = (uint32_t)(tu_rand64() % 5), k;
            uint64_t numel = 1;
            do {                                    /* unique names */
                rand_name(names[i], sizeof names[i]);
                for (j = 0; j < i && strcmp(names[j], names[i]) != 0; j++) {}
            } while (j < i);
            if (safeload_dtype_bits(dt) % 8 && rank == 0) rank = 1;
            for (k = 0; k < rank; k++) { shapes[i][k] = tu_rand64() % 5; numel *= shapes[i][k]; }
            if (safeload_dtype_bits(dt) % 8) { shapes[i][0] *= 4; numel *= 4; }
            ts[i] = st(names[i], dt, rank, shapes[i], data[i], numel * safeload_dtype_bits(dt) / 8);
            if (ts[i].nbytes == 0 && (iter & 1)) ts[i].data = NULL;   /* allowed when empty */
            for (j = 0; j < ts[i].nbytes; j++) data[i][j] = (unsigned char)tu_rand64();
            /* the file holds the elements little-endian (the same bytes on a little-endian host) */
            memcpy(le[i], data[i], (size_t)ts[i].nbytes);
            TU_LE_DT(le[i], (size_t)ts[i].nbytes, dt);
            tle[i] = ts[i];
            if (tle[i].data) tle[i].data = le[i];
        }
        for (i = 0; i < m; i++) {
            do {
                rand_name(keys[i], sizeof keys[i]);
                for (j = 0; j < i && strcmp(keys[j], keys[i]) != 0; j++) {}
            } while (j < i);
            rand_name(vals[i], sizeof vals[i]);
            kv[i] = mkkv(keys[i], vals[i]);
        }
        memset(&d, 0, sizeof d);
        d.metadata = kv; d.metadata_count = m;
        d.flags = (tu_rand64() & 1) ? SAFELOAD_SAVE_EMPTY_METADATA : 0;
        want = model_image(tle, count, &d, &want_n);
        CHECK_MSG(safeload_serialize(&out, &n, ts, count, &d, &err) == SAFELOAD_OK, "round trip %d: %s", iter, err.message);
        if (out) {
            int same = n == want_n && memcmp(out, want, n) == 0;
            CHECK_MSG(same, "round trip %d: image differs from the model", iter);
            if (!same) hexdiff((const unsigned char *)out, n, want, want_n);
        }
        CHECK_MSG(out && safeload_open_memory(&f, out, n, NULL, &err) == SAFELOAD_OK, "round trip %d: reopen: %s",
                  iter, err.message);
        if (f) {
            CHECK_EQ_U64(safeload_tensor_count(f), count);
            CHECK_EQ_U64(safeload_header_size(f) % 8, 0);
            for (i = 0; i < count; i++) {
                const safeload_tensor *t = safeload_find(f, names[i]);
                const void *p = NULL;
                size_t al = 0;
                CHECK(t && t->dtype == ts[i].dtype && t->rank == ts[i].rank && t->nbytes == ts[i].nbytes);
                if (!t) continue;
                CHECK(t->rank == 0 || memcmp(t->shape, ts[i].shape, t->rank * sizeof(uint64_t)) == 0);
                CHECK(safeload_view(f, t, &p, &al, NULL) == SAFELOAD_OK && (t->nbytes == 0 || memcmp(p, le[i], (size_t)t->nbytes) == 0));
                {   /* a read hands back the host-order values saved */
                    static unsigned char back[2048];
                    CHECK(safeload_read(f, t, back, sizeof back, NULL) == SAFELOAD_OK &&
                          memcmp(back, data[i], (size_t)t->nbytes) == 0);
                }
                /* the writer's layout: every tensor at a multiple of its element size in the file */
                if (safeload_dtype_size(t->dtype)) CHECK(t->file_offset % safeload_dtype_size(t->dtype) == 0);
            }
            CHECK_EQ_U64(safeload_has_metadata(f) != 0, m > 0 || (d.flags & SAFELOAD_SAVE_EMPTY_METADATA));
            CHECK_EQ_U64(safeload_metadata_count(f), m);
            for (i = 0; i < m; i++) {
                const safeload_kv *r = safeload_metadata_find(f, keys[i]);
                CHECK(r && strcmp(r->value, vals[i]) == 0);
            }
            safeload_close(f);
        }
        safeload_free(out, NULL);
        free(want);
    }
}

/* ---- rejects ------------------------------------------------------------------------------- */
static void test_rejects(void) {
    static const uint64_t s2[1] = { 2 }, s3[1] = { 3 }, s1[1] = { 1 }, s0[1] = { 0 };
    static const uint64_t s61[1] = { (uint64_t)1 << 61 }, s3232[2] = { (uint64_t)1 << 32, (uint64_t)1 << 32 };
    static const uint64_t s263[2] = { 2, ((uint64_t)1 << 63) - 1 }, s3232z[3] = { (uint64_t)1 << 32, (uint64_t)1 << 32, 0 };
    safeload_save_tensor t[4];
    safeload_save_desc d;
    safeload_kv kv[3];
    {   /* counts whose arrays would not fit in memory fail before anything is written */
        void *out = (void *)1;
        size_t on = 7;
        t[0] = st("a", SAFELOAD_F32, 1, s1, BYTES, 4);
        t[1] = st("b", SAFELOAD_F32, 1, s1, BYTES, 4);
        CHECK(safeload_serialize(&out, &on, t, ((size_t)1 << (sizeof(size_t) * 8 - 3)) - 1, NULL, NULL)
              == SAFELOAD_OUT_OF_MEMORY && out == NULL && on == 0);
        memset(&d, 0, sizeof d);
        kv[0] = mkkv("k", "v");
        d.metadata = kv;
        d.metadata_count = SIZE_MAX / sizeof(safeload_kv) + 1;
        CHECK(safeload_serialize(&out, &on, t, 1, &d, NULL) == SAFELOAD_OUT_OF_MEMORY && out == NULL);
    }
    t[0] = st("a", SAFELOAD_F32, 1, s2, BYTES, 4);    EXPECT_REJ(t, 1, NULL, SIZE_MISMATCH);
    t[0] = st("a", SAFELOAD_F32, 1, s2, BYTES, 9);    EXPECT_REJ(t, 1, NULL, SIZE_MISMATCH);
    t[0] = st("a", SAFELOAD_F32, 1, s0, BYTES, 1);    EXPECT_REJ(t, 1, NULL, SIZE_MISMATCH);
    t[0] = st("a", SAFELOAD_F32, 0, NULL, BYTES, 0);  EXPECT_REJ(t, 1, NULL, SIZE_MISMATCH);
    t[0] = st("a", SAFELOAD_F4, 1, s3, BYTES, 2);     EXPECT_REJ(t, 1, NULL, MISALIGNED_SUBBYTE);
    t[0] = st("a", SAFELOAD_F4, 1, s3, BYTES, 1);     EXPECT_REJ(t, 1, NULL, MISALIGNED_SUBBYTE);
    t[0] = st("a", SAFELOAD_F4, 0, NULL, BYTES, 1);   EXPECT_REJ(t, 1, NULL, MISALIGNED_SUBBYTE);
    t[0] = st("a", SAFELOAD_F6_E2M3, 1, s1, BYTES, 1); EXPECT_REJ(t, 1, NULL, MISALIGNED_SUBBYTE);
    t[0] = st("a", SAFELOAD_F6_E3M2, 1, s3, BYTES, 3); EXPECT_REJ(t, 1, NULL, MISALIGNED_SUBBYTE);
    t[0] = st("a", SAFELOAD_U8, 1, s61, BYTES, 0);    EXPECT_REJ(t, 1, NULL, OVERFLOW);
    t[0] = st("a", SAFELOAD_U8, 2, s3232, BYTES, 0);  EXPECT_REJ(t, 1, NULL, OVERFLOW);
    t[0] = st("a", SAFELOAD_U8, 3, s3232z, BYTES, 0); EXPECT_REJ(t, 1, NULL, OVERFLOW);
    t[0] = st("a", SAFELOAD_F32, 2, s263, BYTES, 0);  EXPECT_REJ(t, 1, NULL, OVERFLOW);
    if (sizeof(size_t) < 8) {   /* 32-bit: more bytes than the address space holds */
        static const uint64_t s4g[1] = { ((uint64_t)1 << 32) + 16 };
        t[0] = st("a", SAFELOAD_U8, 1, s4g, BYTES, s4g[0]); EXPECT_REJ(t, 1, NULL, OVERFLOW);
    } else {                    /* data that fits, a file size that wraps: said as such */
        static const uint64_t s61m[1] = { ((uint64_t)1 << 61) - 1 };
        void *out = NULL;
        size_t on = 0, k;
        safeload_error e;
        static const char *const names[4] = {"a", "b", "c", "d"};
        for (k = 0; k < 4; k++)        /* 4 x (2^62 - 2) bytes: 2^64 - 8, then the header */
            t[k] = st(names[k], SAFELOAD_U16, 1, s61m, BYTES, s61m[0] * 2);
        CHECK(safeload_serialize(&out, &on, t, 4, NULL, &e) == SAFELOAD_OVERFLOW && !out);
        CHECK_MSG(strstr(e.message, "overflows 64 bits") != NULL, "%s", e.message);
    }
    /* a good tensor with a bad one */
    t[0] = st("ok", SAFELOAD_U8, 1, s2, BYTES, 2);
    t[1] = st("bad", SAFELOAD_U8, 1, s2, BYTES, 3);   EXPECT_REJ(t, 2, NULL, SIZE_MISMATCH);
    /* duplicate names, also when the sort does not put them side by side */
    t[0] = st("a", SAFELOAD_U8, 1, s2, BYTES, 2);
    t[1] = st("a", SAFELOAD_U8, 1, s2, BYTES, 2);     EXPECT_REJ(t, 2, NULL, DUPLICATE_KEY);
    t[0] = st("a", SAFELOAD_U64, 1, s1, BYTES, 8);
    t[1] = st("b", SAFELOAD_F32, 1, s1, BYTES, 4);
    t[2] = st("a", SAFELOAD_U8, 1, s2, BYTES, 2);     EXPECT_REJ(t, 3, NULL, DUPLICATE_KEY);
    t[0] = st("a", SAFELOAD_U8, 1, s0, BYTES, 0);
    t[1] = st("a", SAFELOAD_F16, 1, s0, BYTES, 0);    EXPECT_REJ(t, 2, NULL, DUPLICATE_KEY);
    /* duplicate metadata keys */
    memset(&d, 0, sizeof d);
    kv[0] = mkkv("k", "1"); kv[1] = mkkv("j", "2"); kv[2] = mkkv("k", "1");
    d.metadata = kv; d.metadata_count = 3;
    EXPECT_REJ(NULL, 0, &d, DUPLICATE_KEY);
    kv[2] = mkkv("", ""); kv[1] = mkkv("", "x"); d.metadata_count = 3;
    EXPECT_REJ(NULL, 0, &d, DUPLICATE_KEY);
    /* invalid arguments */
    t[0] = st(NULL, SAFELOAD_U8, 1, s2, BYTES, 2);    EXPECT_REJ(t, 1, NULL, INVALID_ARGUMENT);
    t[0] = st("a", SAFELOAD_DTYPE_NONE, 1, s2, BYTES, 2); EXPECT_REJ(t, 1, NULL, INVALID_ARGUMENT);
    t[0] = st("a", SAFELOAD_DTYPE_COUNT, 1, s2, BYTES, 2); EXPECT_REJ(t, 1, NULL, INVALID_ARGUMENT);
    t[0] = st("a", (safeload_dtype)1000, 1, s2, BYTES, 2); EXPECT_REJ(t, 1, NULL, INVALID_ARGUMENT);
    t[0] = st("a", (safeload_dtype)-1, 1, s2, BYTES, 2); EXPECT_REJ(t, 1, NULL, INVALID_ARGUMENT);
    t[0] = st("ok", SAFELOAD_U8, 1, s2, BYTES, 2);
    t[1] = st(NULL, SAFELOAD_U8, 1, s2, BYTES, 2);    EXPECT_REJ(t, 2, NULL, INVALID_ARGUMENT);
    {
        /* unspecified codes, but never success and never a crash */
        void *out = NULL; size_t n = 0;
        safeload_result r;
        t[0] = st("a", SAFELOAD_U8, 1, NULL, BYTES, 2);
        r = safeload_serialize(&out, &n, t, 1, NULL, NULL); CHECK(r != SAFELOAD_OK);
        t[0] = st("a", SAFELOAD_U8, 1, s2, NULL, 2);
        r = safeload_serialize(&out, &n, t, 1, NULL, NULL); CHECK(r != SAFELOAD_OK);
        r = safeload_serialize(&out, &n, NULL, 1, NULL, NULL); CHECK(r != SAFELOAD_OK);
        r = safeload_serialize(NULL, &n, NULL, 0, NULL, NULL); CHECK(r != SAFELOAD_OK);
        memset(&d, 0, sizeof d); d.metadata_count = 2;
        r = safeload_serialize(&out, &n, NULL, 0, &d, NULL); CHECK(r != SAFELOAD_OK);
    }
}

/* ---- the 100,000,000-byte header limit applies to the padded header ---------------------- */
static void test_header_limit(void) {
    static const uint64_t s0[1] = { 0 };
    const char *tmpl = "{\"\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    size_t base = strlen(tmpl), L = 100000000;
    char *name = (char *)malloc(L + 1);
    safeload_save_tensor t;
    safeload_save_desc d;
    safeload_kv kv;
    void *out = NULL;
    size_t n = 0;
    safeload_result r;
    /* JSON of exactly 100,000,000 bytes: fits, no padding */
    memset(name, 'x', L); name[L - base] = 0;
    t = st(name, SAFELOAD_U8, 1, s0, BYTES, 0);
    r = safeload_serialize(&out, &n, &t, 1, NULL, NULL);
    CHECK_MSG(r == SAFELOAD_OK, "100,000,000-byte header: %s", safeload_result_id(r));
    CHECK(n == 8 + L && out && ((unsigned char *)out)[n - 1] == '}');
    safeload_free(out, NULL); out = NULL;
    /* 99,999,993 bytes: padded to 100,000,000, fits */
    name[L - base - 7] = 0;
    r = safeload_serialize(&out, &n, &t, 1, NULL, NULL);
    CHECK_MSG(r == SAFELOAD_OK && n == 8 + L, "99,999,993-byte header: %s", safeload_result_id(r));
    safeload_free(out, NULL); out = NULL;
    /* ... but not padded on to a 4096-byte boundary (100,003,832 bytes) */
    memset(&d, 0, sizeof d);
    d.flags = SAFELOAD_SAVE_ALIGN_DATA;
    r = safeload_serialize(&out, &n, &t, 1, &d, NULL);
    CHECK_MSG(r == SAFELOAD_HEADER_TOO_LARGE, "99,999,993 aligned: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) safeload_free(out, NULL);
    out = NULL;
    /* 99,995,000 bytes: 99,995,640 aligned, fits */
    memset(name, 'x', L); name[99995000 - base] = 0;
    r = safeload_serialize(&out, &n, &t, 1, &d, NULL);
    CHECK_MSG(r == SAFELOAD_OK && n == 8 + 99995640, "99,995,000 aligned: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) safeload_free(out, NULL);
    out = NULL;
    /* 100,000,001 bytes (padded to 100,000,008): too large */
    memset(name, 'x', L); name[L - base + 1] = 0;
    r = safeload_serialize(&out, &n, &t, 1, NULL, NULL);
    CHECK_MSG(r == SAFELOAD_HEADER_TOO_LARGE, "100,000,001-byte header: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) safeload_free(out, NULL);
    out = NULL;
    /* the same through a metadata value, with save */
    memset(&d, 0, sizeof d);
    memset(name, 'x', L);
    name[L - strlen("{\"__metadata__\":{\"k\":\"\"}}") + 1] = 0;
    kv = mkkv("k", name);
    d.metadata = &kv; d.metadata_count = 1;
    r = safeload_serialize(&out, &n, NULL, 0, &d, NULL);
    CHECK_MSG(r == SAFELOAD_HEADER_TOO_LARGE, "metadata 100,000,001: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) safeload_free(out, NULL);
    /* 10,000,000 control characters escape to 60,000,000 bytes: fine; 20,000,000 do not fit */
    memset(name, '\x01', 20000000); name[10000000] = 0;
    kv = mkkv("k", name);
    out = NULL;
    r = safeload_serialize(&out, &n, NULL, 0, &d, NULL);
    CHECK_MSG(r == SAFELOAD_OK && n > 8 + 60000000, "10M escaped controls: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) safeload_free(out, NULL);
    name[10000000] = '\x01'; name[20000000] = 0;
    kv = mkkv("k", name);
    out = NULL;
    r = safeload_serialize(&out, &n, NULL, 0, &d, NULL);
    CHECK_MSG(r == SAFELOAD_HEADER_TOO_LARGE, "20M escaped controls: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) safeload_free(out, NULL);
    free(name);
}

/* ---- saving files ------------------------------------------------------------------------- */

static int file_equals(const char *path, const void *p, size_t n) {
    size_t fn;
    unsigned char *f = tu_slurp(path, &fn);
    int eq = f && fn == n && memcmp(f, p, n) == 0;
    free(f);
    return eq;
}

/* entries in g_dir other than . and .. (names joined with spaces into list) */
static int dir_entries(char *list, size_t cap) {
    DIR *dp = opendir(g_dir);
    struct dirent *e;
    int count = 0;
    list[0] = 0;
    if (!dp) return -1;
    while ((e = readdir(dp)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        count++;
        if (strlen(list) + strlen(e->d_name) + 2 < cap) { strcat(list, e->d_name); strcat(list, " "); }
    }
    closedir(dp);
    return count;
}

static void test_save(void) {
    static const uint64_t s2[1] = { 2 }, s4[1] = { 4 };
    safeload_save_tensor t[3];
    char path[512], path2[600], list[4096];
    void *out = NULL;
    size_t n = 0;
    safeload_error err;
    safeload_result r;
    safeload_file *old = NULL;
    const void *view = NULL;
    size_t al;
    snprintf(path, sizeof path, "%s/model.safetensors", g_dir);
    t[0] = st("w", SAFELOAD_F32, 1, s2, BYTES, 8);
    t[1] = st("b", SAFELOAD_U8, 1, s4, BYTES + 8, 4);
    /* a new file: the same bytes as serialize */
    CHECK(safeload_serialize(&out, &n, t, 2, NULL, NULL) == SAFELOAD_OK);
    r = safeload_save(path, t, 2, NULL, &err);
    CHECK_MSG(r == SAFELOAD_OK, "save: %s %s", safeload_result_id(r), err.message);
    CHECK(out && file_equals(path, out, n));
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    {   /* the rename is made durable: the target's directory is synced after it */
        struct stat ds;
        CHECK(stat(g_dir, &ds) == 0);
        CHECK(g_dir_synced.st_ino == ds.st_ino && g_dir_synced.st_dev == ds.st_dev);
        /* ... best effort: the target is already replaced when that sync fails */
        memset(&g_dir_synced, 0, sizeof g_dir_synced);
        g_fsync_fails = 2;
        r = safeload_save(path, t, 2, NULL, &err);
        g_fsync_fails = 0;
        CHECK_MSG(r == SAFELOAD_OK, "save: %s %s", safeload_result_id(r), err.message);
        CHECK(g_dir_synced.st_ino == ds.st_ino && file_equals(path, out, n));
    }
    {   /* fsync fails (EIO): IO_ERROR, the target keeps its bytes, no temporary file left */
        void *o1 = NULL;
        size_t n1 = 0;
        safeload_save_tensor t2 = st("w", SAFELOAD_F32, 1, s2, BYTES + 4, 8);
        CHECK(safeload_serialize(&o1, &n1, t, 2, NULL, NULL) == SAFELOAD_OK);
        g_fsync_fails = 1;
        CHECK(safeload_save(path, &t2, 1, NULL, &err) == SAFELOAD_IO_ERROR);
        g_fsync_fails = 0;
        CHECK(o1 && file_equals(path, o1, n1));
        CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
        safeload_free(o1, NULL);
    }
    {   /* a directory or FIFO at the target is not replaced; opening a FIFO with no writer
           fails at once instead of blocking */
        safeload_file *ff = (safeload_file *)&err;
        struct stat sb;
        snprintf(path2, sizeof path2, "%s/fifo.safetensors", g_dir);
        CHECK(mkfifo(path2, 0600) == 0);
        CHECK(safeload_save(path2, t, 2, NULL, &err) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(stat(path2, &sb) == 0 && S_ISFIFO(sb.st_mode));
        CHECK(safeload_open(&ff, path2, NULL, &err) == SAFELOAD_IO_ERROR && ff == NULL);
        CHECK(strstr(err.message, "pipe") != NULL);
        CHECK(remove(path2) == 0);
        CHECK(safeload_save(g_dir, t, 2, NULL, &err) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(stat(g_dir, &sb) == 0 && S_ISDIR(sb.st_mode));
    }
    {   /* an empty tensor may come without a data pointer */
        static const uint64_t s0[1] = { 0 };
        safeload_save_tensor e0[2];
        void *o2 = NULL;
        size_t n2 = 0;
        e0[0] = st("empty", SAFELOAD_F32, 1, s0, NULL, 0);
        e0[1] = t[1];
        CHECK(safeload_serialize(&o2, &n2, e0, 2, NULL, NULL) == SAFELOAD_OK);
        snprintf(path2, sizeof path2, "%s/empty.safetensors", g_dir);
        CHECK(safeload_save(path2, e0, 2, NULL, &err) == SAFELOAD_OK);
        CHECK(o2 && file_equals(path2, o2, n2));
        CHECK(remove(path2) == 0);
        safeload_free(o2, NULL);
    }
    /* replace it while it is open (mapped): the old mapping keeps the old bytes */
    CHECK(safeload_open(&old, path, NULL, &err) == SAFELOAD_OK);
    CHECK(old && safeload_view(old, safeload_find(old, "w"), &view, &al, NULL) == SAFELOAD_OK);
    safeload_free(out, NULL); out = NULL;
    t[0] = st("w", SAFELOAD_F32, 1, s2, BYTES + 32, 8);
    t[2] = st("new", SAFELOAD_I16, 1, s2, BYTES + 40, 4);
    CHECK(safeload_serialize(&out, &n, t, 3, NULL, NULL) == SAFELOAD_OK);
    CHECK(safeload_save(path, t, 3, NULL, &err) == SAFELOAD_OK);
    CHECK(out && file_equals(path, out, n));
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    if (old) {
        unsigned char le[8];                /* the F32 elements as the file holds them */
        memcpy(le, BYTES, 8);
        tu_le(le, 8, 4);
        CHECK(view && memcmp(view, le, 8) == 0);
        safeload_close(old);
    }
    /* a failing save leaves the target untouched and no temporary files */
    t[1] = st("b", SAFELOAD_U8, 1, s4, BYTES, 5);
    r = safeload_save(path, t, 3, NULL, &err);
    CHECK_MSG(r == SAFELOAD_SIZE_MISMATCH && err.code == r, "bad save: %s", safeload_result_id(r));
    CHECK(file_equals(path, out, n));
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    t[1] = st("w", SAFELOAD_U8, 1, s4, BYTES, 4);
    CHECK(safeload_save(path, t, 3, NULL, &err) == SAFELOAD_DUPLICATE_KEY);
    CHECK(file_equals(path, out, n));
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    /* a missing directory */
    t[1] = st("b", SAFELOAD_U8, 1, s4, BYTES + 8, 4);
    snprintf(path2, sizeof path2, "%s/no/such/dir/x.safetensors", g_dir);
    memset(&err, 0, sizeof err);
    r = safeload_save(path2, t, 3, NULL, &err);
    CHECK_MSG(r == SAFELOAD_IO_ERROR && err.code == r, "save into a missing directory: %s", safeload_result_id(r));
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    /* a target that is a directory */
    snprintf(path2, sizeof path2, "%s/adir", g_dir);
    mkdir(path2, 0700);
    r = safeload_save(path2, t, 3, NULL, &err);
    CHECK_MSG(r != SAFELOAD_OK, "save over a directory succeeded");
    rmdir(path2);
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    /* an empty file and metadata through save */
    snprintf(path2, sizeof path2, "%s/empty.safetensors", g_dir);
    CHECK(safeload_save(path2, NULL, 0, NULL, &err) == SAFELOAD_OK);
    CHECK(file_equals(path2, "\x08\0\0\0\0\0\0\0{}      ", 16));
    unlink(path2);
    unlink(path);
    safeload_free(out, NULL);
}

/* ---- what a save replaces: long names, permissions, symlinks, unwritable targets --------- */
static void put_file(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    CHECK_MSG(fp != NULL, "cannot write %s", path);
    if (fp) { fputs(text, fp); fclose(fp); }
}

static void test_save_target(void) {
    static const unsigned char A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8};
    static const uint64_t s4[1] = {4};
    safeload_save_tensor ta = st("w", SAFELOAD_U8, 1, s4, A, 4), tb = st("w", SAFELOAD_U8, 1, s4, B, 4);
    char path[1024], link[1024], link2[1024], real[1024], sub[1024], list[4096], name[241], got[64];
    void *ia = NULL, *ib = NULL;
    size_t na = 0, nb = 0;
    struct stat sb;
    safeload_error err;
    safeload_result r;
    ssize_t gl;
    CHECK(safeload_serialize(&ia, &na, &ta, 1, NULL, NULL) == SAFELOAD_OK);
    CHECK(safeload_serialize(&ib, &nb, &tb, 1, NULL, NULL) == SAFELOAD_OK);

    /* a 240-byte name is legal (NAME_MAX 255), but name + ".tmp-" + 12 is not: the temporary
       takes a short name in the same directory instead */
    memset(name, 'n', 240); name[240] = 0;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    r = safeload_save(path, &ta, 1, NULL, &err);
    CHECK_MSG(r == SAFELOAD_OK, "240-byte name: %s: %s", safeload_result_id(r), err.message);
    CHECK(file_equals(path, ia, na));
    CHECK(safeload_save(path, &tb, 1, NULL, &err) == SAFELOAD_OK);   /* and over an existing one */
    CHECK(file_equals(path, ib, nb));
    CHECK_MSG(dir_entries(list, sizeof list) == 1, "directory holds: %s", list);
    unlink(path);
    {   /* a name no file system here holds (256 bytes and more) is refused before a byte is
           written: the temporary would take a short name and only the rename would fail */
        char lname[300];
        memset(lname, 'n', 299); lname[299] = 0;
        snprintf(path, sizeof path, "%s/%s", g_dir, lname);
        r = safeload_save(path, &ta, 1, NULL, &err);
        CHECK(r == SAFELOAD_IO_ERROR);
        CHECK_MSG(strstr(err.message, "cannot replace the target: name too long") != NULL, "%s",
                  err.message);
        CHECK_MSG(dir_entries(list, sizeof list) == 0, "directory holds: %s", list);
    }

    /* the replacement keeps the old file's permissions: a private checkpoint stays private */
    snprintf(path, sizeof path, "%s/private.safetensors", g_dir);
    put_file(path, "old");
    chmod(path, 0600);
    CHECK(safeload_save(path, &ta, 1, NULL, &err) == SAFELOAD_OK);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    CHECK(file_equals(path, ia, na));
    chmod(path, 0640);
    CHECK(safeload_save(path, &tb, 1, NULL, &err) == SAFELOAD_OK);
    CHECK_MSG(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0640, "mode %o", (unsigned)(sb.st_mode & 0777));
    if (geteuid() == 0) {   /* root replacing someone's file leaves it theirs */
        CHECK(chown(path, 65534, 65534) == 0);
        CHECK(safeload_save(path, &tb, 1, NULL, &err) == SAFELOAD_OK);
        CHECK_MSG(stat(path, &sb) == 0 && sb.st_uid == 65534 && sb.st_gid == 65534 &&
                  (sb.st_mode & 0777) == 0640, "owner %u:%u mode %o", (unsigned)sb.st_uid,
                  (unsigned)sb.st_gid, (unsigned)(sb.st_mode & 0777));
    }

    /* a file the caller may not write is refused, as opening it for writing would be (root
       may write any file, and then the save goes through and keeps the mode) */
    chmod(path, 0444);
    memset(&err, 0, sizeof err);
    r = safeload_save(path, &ta, 1, NULL, &err);
    if (geteuid() != 0) {
        CHECK_MSG(r == SAFELOAD_IO_ERROR && strstr(err.message, "permission denied"),
                  "read-only target: %s: %s", safeload_result_id(r), err.message);
        CHECK(file_equals(path, ib, nb));
    } else {
        CHECK(r == SAFELOAD_OK && file_equals(path, ia, na));
    }
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0444);
    unlink(path);

    /* a relative symlink (as the Hugging Face cache makes them) survives, and the file it names
       gets the new bytes; so does a chain of two */
    snprintf(sub, sizeof sub, "%s/blobs", g_dir);
    snprintf(real, sizeof real, "%s/blobs/abc", g_dir);
    snprintf(link, sizeof link, "%s/link.safetensors", g_dir);
    snprintf(link2, sizeof link2, "%s/link2.safetensors", g_dir);
    CHECK(mkdir(sub, 0700) == 0);
    put_file(real, "old");
    CHECK(symlink("blobs/abc", link) == 0);
    CHECK(symlink("link.safetensors", link2) == 0);
    r = safeload_save(link, &ta, 1, NULL, &err);
    CHECK_MSG(r == SAFELOAD_OK, "save through a link: %s", err.message);
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    gl = readlink(link, got, sizeof got - 1);
    CHECK(gl == 9 && memcmp(got, "blobs/abc", 9) == 0);
    CHECK(file_equals(real, ia, na));
    CHECK(safeload_save(link2, &tb, 1, NULL, &err) == SAFELOAD_OK);
    CHECK(lstat(link2, &sb) == 0 && S_ISLNK(sb.st_mode) && lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(file_equals(real, ib, nb));
    /* no temporary left beside the link or beside the file */
    CHECK_MSG(dir_entries(list, sizeof list) == 3, "directory holds: %s", list);
    /* a dangling link: the file it names is created */
    unlink(real);
    CHECK(safeload_save(link2, &ta, 1, NULL, &err) == SAFELOAD_OK);
    CHECK(file_equals(real, ia, na) && lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    /* an absolute link */
    unlink(link);
    CHECK(symlink(real, link) == 0);
    CHECK(safeload_save(link2, &tb, 1, NULL, &err) == SAFELOAD_OK);
    CHECK(file_equals(real, ib, nb) && lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    unlink(real);
    rmdir(sub);
    unlink(link);
    unlink(link2);
    /* another user's link in a sticky world-writable directory (/tmp) is not followed: the
       kernel's protected_symlinks rule, which writing through the link would meet */
    if (geteuid() == 0) {
        char sticky[1024], victim[1024], trap[1024];
        snprintf(sticky, sizeof sticky, "%s/sticky", g_dir);
        snprintf(victim, sizeof victim, "%s/victim", g_dir);
        snprintf(trap, sizeof trap, "%s/sticky/m.safetensors", g_dir);
        CHECK(mkdir(sticky, 0777) == 0 && chmod(sticky, 01777) == 0);
        put_file(victim, "precious");
        CHECK(symlink(victim, trap) == 0 && lchown(trap, 65534, 65534) == 0);
        memset(&err, 0, sizeof err);
        r = safeload_save(trap, &ta, 1, NULL, &err);
        CHECK_MSG(r == SAFELOAD_IO_ERROR && strstr(err.message, "permission denied"),
                  "foreign link in a sticky dir: %s: %s", safeload_result_id(r), err.message);
        CHECK(file_equals(victim, "precious", 8));
        CHECK(lchown(trap, 0, 0) == 0);          /* the caller's own link is followed */
        CHECK(safeload_save(trap, &ta, 1, NULL, &err) == SAFELOAD_OK && file_equals(victim, ia, na));
        unlink(trap);
        unlink(victim);
        rmdir(sticky);
    }
    /* a loop of links: an error, and nothing written */
    CHECK(symlink("link2.safetensors", link) == 0);
    CHECK(symlink("link.safetensors", link2) == 0);
    memset(&err, 0, sizeof err);
    r = safeload_save(link, &ta, 1, NULL, &err);
    CHECK_MSG(r == SAFELOAD_IO_ERROR && strstr(err.message, "symbolic links"),
              "link loop: %s: %s", safeload_result_id(r), err.message);
    unlink(link);
    unlink(link2);

    /* the reason is in the message */
    snprintf(path, sizeof path, "%s/no/such/dir/x.safetensors", g_dir);
    r = safeload_save(path, &ta, 1, NULL, &err);
    CHECK_MSG(r == SAFELOAD_IO_ERROR && strstr(err.message, "no such file"), "%s", err.message);
    r = safeload_save("", &ta, 1, NULL, &err);
    CHECK_MSG(r == SAFELOAD_INVALID_ARGUMENT && err.code == r, "empty path: %s", safeload_result_id(r));
    CHECK_MSG(dir_entries(list, sizeof list) == 0, "directory holds: %s", list);
    safeload_free(ia, NULL);
    safeload_free(ib, NULL);
}

/* ---- byte-for-byte reproduction of the reference files ------------------------------------ */
static void reproduce(const char *dir, const char *file) {
    char path[8192];
    size_t n = 0, i, count, outn = 0;
    unsigned char *img;
    safeload_file *f = NULL;
    safeload_save_tensor *ts;
    safeload_kv *kv;
    safeload_save_desc d;
    safeload_error err;
    void *out = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    img = tu_slurp(path, &n);
    CHECK_MSG(img != NULL, "cannot read %s", path);
    if (!img) return;
    CHECK_MSG(safeload_open(&f, path, NULL, &err) == SAFELOAD_OK, "%s: %s", file, err.message);
    if (!f) { free(img); return; }
    count = safeload_tensor_count(f);
    ts = (safeload_save_tensor *)calloc(count + 1, sizeof *ts);
    kv = (safeload_kv *)calloc(safeload_metadata_count(f) + 1, sizeof *kv);
    /* given in reverse data order, so the writer has to sort */
    for (i = 0; i < count; i++) {
        const safeload_tensor *t = safeload_tensor_at(f, count - 1 - i);
        void *buf = malloc((size_t)t->nbytes + 1);
        CHECK(safeload_read(f, t, buf, (size_t)t->nbytes, NULL) == SAFELOAD_OK);
        ts[i] = st(t->name, t->dtype, t->rank, t->shape, buf, t->nbytes);
    }
    for (i = 0; i < safeload_metadata_count(f); i++) kv[i] = *safeload_metadata_at(f, i);
    memset(&d, 0, sizeof d);
    d.metadata = kv; d.metadata_count = safeload_metadata_count(f);
    if (safeload_has_metadata(f) && d.metadata_count == 0) d.flags = SAFELOAD_SAVE_EMPTY_METADATA;
    CHECK(safeload_serialize(&out, &outn, ts, count, &d, &err) == SAFELOAD_OK);
    {
        int same = out && outn == n && memcmp(out, img, n) == 0;
        CHECK_MSG(same, "%s: not reproduced byte for byte", file);
        CHECK(out && tu_fnv1a(out, outn, TU_FNV_BASIS) == tu_fnv1a(img, n, TU_FNV_BASIS));
        if (!same && out) hexdiff((const unsigned char *)out, outn, img, n);
    }
    /* and through save */
    snprintf(path, sizeof path, "%s/%s", g_dir, file);
    CHECK(safeload_save(path, ts, count, &d, &err) == SAFELOAD_OK);
    CHECK_MSG(file_equals(path, img, n), "%s: saved file differs", file);
    unlink(path);
    for (i = 0; i < count; i++) free((void *)ts[i].data);
    free(ts); free(kv);
    safeload_free(out, NULL);
    safeload_close(f);
    free(img);
}

static void test_reference_files(void) {
    const char *dir = getenv("SAFELOAD_REFERENCE_DIR");
    char path[1024], line[1024];
    FILE *fp;
    int files = 0;
    if (!dir || !*dir) dir = "tests/data/reference";
    snprintf(path, sizeof path, "%s/MANIFEST.txt", dir);
    fp = fopen(path, "r");
    CHECK_MSG(fp != NULL, "cannot open %s (run from the repository root)", path);
    if (!fp) return;
    while (fgets(line, sizeof line, fp)) {
        char *nl;
        if (strncmp(line, "file ", 5) != 0) continue;
        if ((nl = strpbrk(line, "\r\n")) != NULL) *nl = 0;
        reproduce(dir, line + 5);
        files++;
    }
    fclose(fp);
    CHECK_MSG(files == 6, "%d reference files", files);
}

/* ---- 100,000 tensors: save, open, find ------------------------------------------------------ */
static void test_many(void) {
    enum { NT = 100000 };
    char (*names)[64] = (char (*)[64])malloc((size_t)NT * 64);
    safeload_save_tensor *ts = (safeload_save_tensor *)calloc(NT, sizeof *ts);
    static uint64_t shapes[3][2] = { { 2, 2 }, { 3, 1 }, { 0, 5 } };
    static const safeload_dtype dts[3] = { SAFELOAD_BF16, SAFELOAD_F32, SAFELOAD_U8 };
    char path[512];
    size_t i, ok = 0;
    safeload_file *f = NULL;
    safeload_error err;
    uint64_t total = 0;
    for (i = 0; i < NT; i++) {
        int k = (int)(i % 3);
        sprintf(names[i], "model.layers.%u.mlp.experts.%u.gate_proj.weight", (unsigned)(i / 100), (unsigned)(i % 100));
        ts[i] = st(names[i], dts[k], 2, shapes[k], BYTES + i % 32,
                   shapes[k][0] * shapes[k][1] * safeload_dtype_size(dts[k]));
        total += ts[i].nbytes;
    }
    snprintf(path, sizeof path, "%s/many.safetensors", g_dir);
    CHECK(safeload_save(path, ts, NT, NULL, &err) == SAFELOAD_OK);
    CHECK(safeload_open(&f, path, NULL, &err) == SAFELOAD_OK);
    if (f) {
        CHECK_EQ_U64(safeload_tensor_count(f), NT);
        CHECK_EQ_U64(safeload_data_size(f), total);
        CHECK_EQ_U64(safeload_header_size(f) % 8, 0);
        for (i = 0; i < NT; i++) {
            const safeload_tensor *t = safeload_find(f, names[i]);
            unsigned char buf[16];
            if (t && t->dtype == ts[i].dtype && t->nbytes == ts[i].nbytes &&
                safeload_read(f, t, buf, sizeof buf, NULL) == SAFELOAD_OK && memcmp(buf, ts[i].data, (size_t)t->nbytes) == 0)
                ok++;
        }
        CHECK_EQ_U64(ok, NT);
        /* F32 block first, then BF16, then U8; names sorted bytewise within each */
        CHECK(safeload_tensor_at(f, 0)->dtype == SAFELOAD_F32);
        CHECK_STR(safeload_tensor_at(f, 0)->name, "model.layers.0.mlp.experts.1.gate_proj.weight");
        safeload_close(f);
    }
    unlink(path);
    free(ts);
    free(names);
}

/* ---- failing allocations: OUT_OF_MEMORY, nothing leaked, no file touched ---------------- */
static long g_allocs, g_fail_at;
static void *fl_alloc(void *u, size_t n) {
    if (g_fail_at && ++g_allocs == g_fail_at) return NULL;
    return ca_alloc(u, n);
}
static void *fl_realloc(void *u, void *p, size_t o, size_t n) {
    if (g_fail_at && ++g_allocs == g_fail_at) return NULL;
    return ca_realloc(u, p, o, n);
}

/* One (mode, realloc) combination, in a child process so that a hang is reported, not waited
   for: mode 0 = serialize, 1 = save. */
static void alloc_failures_child(int mode, int with_realloc) {
    static const uint64_t s2[1] = { 2 };
    safeload_save_tensor t[3];
    safeload_kv kv[2];
    safeload_save_desc d;
    char path[512], list[4096];
    const char *what = mode ? "safeload_save" : "safeload_serialize";
    int k;
    t[0] = st("w", SAFELOAD_F32, 1, s2, BYTES, 8);
    t[1] = st("b\n", SAFELOAD_U8, 1, s2, BYTES + 8, 2);
    t[2] = st("a", SAFELOAD_U8, 1, s2, BYTES + 10, 2);
    kv[0] = mkkv("z", "1"); kv[1] = mkkv("y", "\x01");
    snprintf(path, sizeof path, "%s/oom.safetensors", g_dir);
    memset(&d, 0, sizeof d);
    d.metadata = kv; d.metadata_count = 2;
    d.allocator.alloc = fl_alloc; d.allocator.free = ca_free;
    d.allocator.realloc = with_realloc ? fl_realloc : NULL;
    for (k = 1; k < 200; k++) {
        void *out = NULL;
        size_t n = 0;
        safeload_error err;
        safeload_result r;
        snprintf(g_hang_msg, sizeof g_hang_msg, "test_writer: %s never returns when allocation %d fails "
                 "(allocator %s realloc)\n", what, k, with_realloc ? "with" : "without");
        alarm(2);
        g_live = 0; g_allocs = 0; g_fail_at = k;
        memset(&err, 0, sizeof err);
        if (mode == 0) r = safeload_serialize(&out, &n, t, 3, &d, &err);
        else r = safeload_save(path, t, 3, &d, &err);
        if (r == SAFELOAD_OK) {
            if (mode == 0) safeload_free(out, &d.allocator);
            else unlink(path);
        } else {
            CHECK_MSG(r == SAFELOAD_OUT_OF_MEMORY && err.code == r, "%s: alloc %d failing: %s", what, k,
                      safeload_result_id(r));
            CHECK_MSG(dir_entries(list, sizeof list) == 0, "failed save left: %s", list);
        }
        CHECK_MSG(g_live == 0, "%s: alloc %d failing (realloc %d): %ld blocks leaked", what, k, with_realloc, g_live);
        if (g_allocs < k) break;
    }
    alarm(0);
    CHECK_MSG(k > 1, "allocator not used by %s", what);
}

static void test_alloc_failures(void) {
    int mode, with_realloc;
    for (mode = 0; mode < 2; mode++)
    for (with_realloc = 0; with_realloc < 2; with_realloc++) {
        int status = 0;
        pid_t pid;
        char list[4096];
        fflush(stdout); fflush(stderr);
        pid = fork();
        if (pid == 0) {
            alloc_failures_child(mode, with_realloc);
            fflush(stderr);
            _exit(tu_failures ? 1 : 0);
        }
        CHECK_MSG(pid > 0, "fork failed");
        if (pid <= 0) continue;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "allocation failures (%s, %s realloc): checks failed or the call hung",
                  mode ? "save" : "serialize", with_realloc ? "with" : "without");
        if (dir_entries(list, sizeof list) > 0) {     /* clean up after a killed child */
            DIR *dp = opendir(g_dir);
            struct dirent *e;
            while (dp && (e = readdir(dp)) != NULL) {
                char p[1024];
                if (e->d_name[0] == '.') continue;
                snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
                unlink(p);
            }
            if (dp) closedir(dp);
            CHECK_MSG(!WIFEXITED(status), "allocation failures left files: %s", list);
        }
    }
}

/* ---- save: small tensors go through a buffer, big ones straight; mixed, the bytes must match
   serialize; a failing buffer allocation is OUT_OF_MEMORY --------------------------------- */
static size_t g_fail_above;                /* fail allocations larger than this (0 = never) */
static void *big_alloc(void *u, size_t n) { return g_fail_above && n > g_fail_above ? NULL : ca_alloc(u, n); }
static void *big_realloc(void *u, void *p, size_t o, size_t n) {
    return g_fail_above && n > g_fail_above ? NULL : ca_realloc(u, p, o, n);
}

static void test_save_mixed_sizes(void) {
    enum { NT = 40 };
    static uint64_t shapes[NT][1];
    static char names[NT][16];
    safeload_save_tensor t[NT];
    unsigned char *data;
    size_t sizes[NT], total = 0, i, off = 0, n = 0;
    char path[512], list[4096];
    void *out = NULL;
    safeload_save_desc d;
    safeload_error err;
    safeload_result r;
    for (i = 0; i < NT; i++) {
        /* per 8: one direct write, then 322,141 buffered bytes */
        size_t k = i % 8;
        sizes[i] = k == 0 ? 65536 + i : k <= 4 ? 65535 : k == 5 ? 1 : k == 6 ? 0 : 60000;
        total += sizes[i];
    }
    data = (unsigned char *)malloc(total);
    for (i = 0; i < total; i++) data[i] = (unsigned char)(i * 7 + (i >> 16));
    for (i = 0; i < NT; i++) {
        sprintf(names[i], "t%02u", (unsigned)i);
        shapes[i][0] = sizes[i];
        t[i] = st(names[i], SAFELOAD_U8, 1, shapes[i], data + off, sizes[i]);
        off += sizes[i];
    }
    snprintf(path, sizeof path, "%s/mixed.safetensors", g_dir);
    CHECK(safeload_serialize(&out, &n, t, NT, NULL, NULL) == SAFELOAD_OK);
    CHECK(safeload_save(path, t, NT, NULL, &err) == SAFELOAD_OK);
    CHECK_MSG(out && file_equals(path, out, n), "saved mixed-size file differs from serialize");
    safeload_free(out, NULL);
    unlink(path);
    /* only the write buffer (and serialize's output) is larger than 200,000 bytes */
    memset(&d, 0, sizeof d);
    d.allocator.alloc = big_alloc; d.allocator.free = ca_free; d.allocator.realloc = big_realloc;
    g_fail_above = 200000; g_live = 0;
    memset(&err, 0, sizeof err);
    r = safeload_save(path, t, NT, &d, &err);
    CHECK_MSG(r == SAFELOAD_OUT_OF_MEMORY, "save with its write buffer unallocatable: %s (%s)",
              safeload_result_id(r), err.message);
    CHECK_EQ_U64(g_live, 0);
    CHECK_MSG(dir_entries(list, sizeof list) == 0, "failed save left: %s", list);
    out = NULL;
    r = safeload_serialize(&out, &n, t, NT, &d, &err);
    CHECK_MSG(r == SAFELOAD_OUT_OF_MEMORY, "serialize with its output unallocatable: %s", safeload_result_id(r));
    CHECK_EQ_U64(g_live, 0);
    g_fail_above = 0;
    unlink(path);
    free(data);
}

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(120);
    char list[4096];
    snprintf(g_dir, sizeof g_dir, "/tmp/safeload_test_writer_%d", (int)getpid());
    if (mkdir(g_dir, 0700) != 0) { perror(g_dir); return 1; }
    test_literals();
    test_escaping();
    test_padding();
    test_align_data();
    test_metadata_nul();
    test_round_trips();
    test_rejects();
    test_header_limit();
    test_save();
    test_save_target();
    test_save_mixed_sizes();
    test_alloc_failures();
    test_reference_files();
    test_many();
    CHECK_MSG(dir_entries(list, sizeof list) == 0, "left behind: %s", list);
    rmdir(g_dir);
    return tu_finish("test_writer");
}
