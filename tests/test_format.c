/* test_format.c - the header parser against the format rules (first failure wins), the public
   query API (tensors, metadata, find, read, view, check_keys) and the reference files.
   Set SAFELOAD_CORPUS_DIR to also write every case's image there (fuzz seed corpus), and
   SAFELOAD_REFERENCE_DIR to read the reference files from elsewhere. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include <time.h>
#if !defined(_WIN32)
#include <unistd.h>
#include <signal.h>
#include <sys/stat.h>
#include <fcntl.h>
#endif

#define NOOFF   UINT64_MAX          /* do not check err.offset */
#define JSONOFF (UINT64_MAX - 1)    /* INVALID_JSON: 8 <= err.offset <= 8 + N */
enum { SRC_MEM = 1, SRC_FILE = 2, SRC_READER = 4, SRC_ALL = 7 };

static const char *g_corpus_dir;
static int g_case;
static int g_no_corpus;             /* set while generating bulk (mutated) images */
static char g_tmp_path[256];

static void save_corpus(const unsigned char *p, size_t n) {
    char path[1024];
    FILE *fp;
    g_case++;
    if (g_no_corpus || !g_corpus_dir || !*g_corpus_dir) return;
    snprintf(path, sizeof path, "%s/case-%03d.safetensors", g_corpus_dir, g_case);
    fp = fopen(path, "wb");
    if (!fp) return;
    if (n) fwrite(p, 1, n, fp);
    fclose(fp);
}

static void pat(unsigned char *p, size_t n, size_t start) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)((start + i) * 131u + 7u);
}

static void put_le64(unsigned char *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* 8-byte LE N = hlen, the header bytes, then dlen data bytes (pattern when data is NULL). */
static unsigned char *mkimg(const char *hdr, size_t hlen, const void *data, size_t dlen,
                            size_t *out_n) {
    size_t n = 8 + hlen + dlen;
    unsigned char *p = (unsigned char *)malloc(n);
    put_le64(p, (uint64_t)hlen);
    if (hlen) memcpy(p + 8, hdr, hlen);
    if (data) { if (dlen) memcpy(p + 8 + hlen, data, dlen); }
    else pat(p + 8 + hlen, dlen, 0);
    *out_n = n;
    save_corpus(p, n);
    return p;
}

/* 8 + index of the nth (1-based) occurrence of needle in hdr. */
static uint64_t at(const char *hdr, const char *needle, int nth) {
    const char *s = hdr;
    for (;;) {
        const char *q = strstr(s, needle);
        if (!q) { fprintf(stderr, "test bug: '%s' not found\n", needle); tu_failures++; return 0; }
        if (--nth == 0) return 8 + (uint64_t)(q - hdr);
        s = q + 1;
    }
}

/* A reader over a memory image. mode 0: short reads of random sizes; 1: always -1;
   2: returns 0 (EOF) from offset `eof_at` on although `size` says more. */
typedef struct rd_user { const unsigned char *p; uint64_t n; uint64_t eof_at; int mode; int closed; } rd_user;

static int64_t rd_read(void *user, uint64_t off, void *dst, size_t n) {
    rd_user *u = (rd_user *)user;
    uint64_t lim = u->n;
    if (u->mode == 1) return -1;
    if (u->mode == 2 && u->eof_at < lim) lim = u->eof_at;
    if (off >= lim) return 0;
    if (n > lim - off) n = (size_t)(lim - off);
    if (n > 1) n = 1 + (size_t)(tu_rand64() % n);
    memcpy(dst, u->p + off, n);
    return (int64_t)n;
}
static void rd_close(void *user) { ((rd_user *)user)->closed++; }

static safeload_reader mk_reader(rd_user *u, const unsigned char *p, uint64_t n, int mode) {
    safeload_reader r;
    memset(u, 0, sizeof *u);
    u->p = p; u->n = n; u->mode = mode; u->eof_at = n;
    memset(&r, 0, sizeof r);
    r.read = rd_read; r.close = rd_close; r.size = n; r.user = u; r.name = "test-reader";
    return r;
}

static int write_file(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    size_t w;
    if (!fp) return -1;
    w = n ? fwrite(p, 1, n, fp) : 0;
    if (fclose(fp) != 0 || w != n) return -1;
    return 0;
}

static const char *src_name(int s) { return s == SRC_MEM ? "memory" : s == SRC_FILE ? "file" : "reader"; }

/* Open one image from one source. u must outlive the file for readers. */
static safeload_result open_src(int src, safeload_file **f, const unsigned char *img, size_t n,
                                rd_user *u, safeload_error *err) {
    *f = NULL;
    if (src == SRC_MEM) return safeload_open_memory(f, img, n, NULL, err);
    if (src == SRC_FILE) {
        if (write_file(g_tmp_path, img, n) != 0) { fprintf(stderr, "cannot write %s\n", g_tmp_path); tu_failures++; }
        return safeload_open(f, g_tmp_path, NULL, err);
    } else {
        safeload_reader r = mk_reader(u, img, n, 0);
        return safeload_open_reader(f, &r, NULL, err);
    }
}

/* Open the image from each source in srcs; check the result, err.code, err.offset (unless
   NOOFF; JSONOFF = within the header) and err.tensor (when tensor != NULL). */
static void expect_img(int line, int srcs, const unsigned char *img, size_t n,
                       safeload_result want, uint64_t off, const char *tensor) {
    int s;
    for (s = 1; s <= 4; s <<= 1) {
        safeload_file *f = NULL;
        safeload_error err;
        safeload_result r;
        rd_user u;
        if (!(srcs & s)) continue;
        memset(&err, 0x5a, sizeof err);
        r = open_src(s, &f, img, n, &u, &err);
        CHECK_MSG(r == want, "line %d (%s): got %s want %s (offset %llu, msg '%.200s')", line,
                  src_name(s), safeload_result_id(r), safeload_result_id(want),
                  (unsigned long long)err.offset, r == SAFELOAD_OK ? "" : err.message);
        if (r != SAFELOAD_OK) {
            CHECK_MSG(err.code == r, "line %d (%s): err.code %d != result %d", line, src_name(s), (int)err.code, (int)r);
            CHECK_MSG(f == NULL, "line %d (%s): *out not NULL on failure", line, src_name(s));
            f = NULL;
        }
        if (r == want && want != SAFELOAD_OK) {
            if (off == JSONOFF) {
                uint64_t N = 0; int i;
                for (i = 7; i >= 0; i--) N = (N << 8) | img[i];
                CHECK_MSG(err.offset >= 8 && err.offset <= 8 + N, "line %d (%s): JSON offset %llu not in [8,%llu]",
                          line, src_name(s), (unsigned long long)err.offset, (unsigned long long)(8 + N));
            } else if (off != NOOFF) {
                CHECK_MSG(err.offset == off, "line %d (%s): offset %llu want %llu", line, src_name(s),
                          (unsigned long long)err.offset, (unsigned long long)off);
            }
            if (tensor)
                CHECK_MSG(strcmp(err.tensor, tensor) == 0, "line %d (%s): err.tensor '%s' want '%s'", line,
                          src_name(s), err.tensor, tensor);
        }
        if (f) safeload_close(f);
    }
}

static void expect_hdr(int line, int srcs, const char *hdr, size_t hlen, size_t dlen,
                       safeload_result want, uint64_t off, const char *tensor) {
    size_t n;
    unsigned char *img = mkimg(hdr, hlen, NULL, dlen, &n);
    expect_img(line, srcs, img, n, want, off, tensor);
    free(img);
}

#define EXP(h, dlen, code, off)        expect_hdr(__LINE__, SRC_MEM, h, strlen(h), dlen, SAFELOAD_##code, off, NULL)
#define EXPA(h, dlen, code, off)       expect_hdr(__LINE__, SRC_ALL, h, strlen(h), dlen, SAFELOAD_##code, off, NULL)
#define EXPT(h, dlen, code, off, nm)   expect_hdr(__LINE__, SRC_MEM, h, strlen(h), dlen, SAFELOAD_##code, off, nm)
#define EXPTA(h, dlen, code, off, nm)  expect_hdr(__LINE__, SRC_ALL, h, strlen(h), dlen, SAFELOAD_##code, off, nm)
#define EXPN(h, hlen, dlen, code, off) expect_hdr(__LINE__, SRC_MEM, h, hlen, dlen, SAFELOAD_##code, off, NULL)
#define OKH(h, dlen)                   expect_hdr(__LINE__, SRC_MEM, h, strlen(h), dlen, SAFELOAD_OK, NOOFF, NULL)
#define OKHA(h, dlen)                  expect_hdr(__LINE__, SRC_ALL, h, strlen(h), dlen, SAFELOAD_OK, NOOFF, NULL)
#define BADJ(h, dlen)                  expect_hdr(__LINE__, SRC_MEM, h, strlen(h), dlen, SAFELOAD_INVALID_JSON, JSONOFF, NULL)

/* An opened, valid image (memory source; the image lives as long as the file). */
typedef struct ofile { unsigned char *img; size_t n; safeload_file *f; } ofile;

static ofile open_okn(int line, const char *hdr, size_t hlen, const void *data, size_t dlen) {
    ofile o;
    safeload_error err;
    safeload_result r;
    o.img = mkimg(hdr, hlen, data, dlen, &o.n);
    o.f = NULL;
    r = safeload_open_memory(&o.f, o.img, o.n, NULL, &err);
    CHECK_MSG(r == SAFELOAD_OK, "line %d: open failed: %s at %llu: %s", line, safeload_result_id(r),
              (unsigned long long)err.offset, err.message);
    if (r != SAFELOAD_OK) o.f = NULL;
    return o;
}
#define OPEN_OK(h, dlen) open_okn(__LINE__, h, strlen(h), NULL, dlen)

static void ofile_close(ofile *o) {
    if (o->f) safeload_close(o->f);
    free(o->img);
    o->f = NULL; o->img = NULL;
}

/* "[2,3]" */
static const char *shape_str(const safeload_tensor *t) {
    static char buf[4096];
    size_t len = 0;
    uint32_t i;
    buf[len++] = '[';
    for (i = 0; i < t->rank && len < sizeof buf - 32; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, i ? ",%llu" : "%llu", (unsigned long long)t->shape[i]);
    buf[len++] = ']';
    buf[len] = 0;
    return buf;
}

/* Check tensor i of f: name, dtype, shape, offsets and every derived field. */
static void chk_t(int line, const safeload_file *f, size_t i, const char *name, safeload_dtype dt,
                  const char *shape, uint64_t b, uint64_t e) {
    const safeload_tensor *t = f ? safeload_tensor_at(f, i) : NULL;
    uint64_t numel = 1;
    uint32_t k;
    CHECK_MSG(t != NULL, "line %d: tensor %u missing", line, (unsigned)i);
    if (!t) return;
    CHECK_MSG(strcmp(t->name, name) == 0 && t->name_len == strlen(name), "line %d: tensor %u name '%s' want '%s'",
              line, (unsigned)i, t->name, name);
    CHECK_MSG(t->dtype == dt, "line %d: %s dtype %d want %d", line, name, (int)t->dtype, (int)dt);
    CHECK_MSG(strcmp(shape_str(t), shape) == 0, "line %d: %s shape %s want %s", line, name, shape_str(t), shape);
    CHECK_MSG(t->begin == b && t->end == e, "line %d: %s offsets [%llu,%llu] want [%llu,%llu]", line, name,
              (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)b, (unsigned long long)e);
    CHECK_MSG(t->nbytes == e - b, "line %d: %s nbytes %llu", line, name, (unsigned long long)t->nbytes);
    CHECK_MSG(t->index == i, "line %d: %s index %u want %u", line, name, (unsigned)t->index, (unsigned)i);
    CHECK_MSG(t->file_offset == safeload_data_offset(f) + b, "line %d: %s file_offset %llu", line, name,
              (unsigned long long)t->file_offset);
    CHECK_MSG(t->rank == 0 ? t->shape == NULL : t->shape != NULL, "line %d: %s shape pointer vs rank", line, name);
    for (k = 0; k < t->rank; k++) numel *= t->shape[k];
    CHECK_MSG(t->numel == numel, "line %d: %s numel %llu want %llu", line, name, (unsigned long long)t->numel,
              (unsigned long long)numel);
    CHECK_MSG(safeload_find(f, name) == t, "line %d: find(%s) is not tensor_at(%u)", line, name, (unsigned)i);
}
#define CHK_T(f, i, name, dt, shape, b, e) chk_t(__LINE__, f, i, name, SAFELOAD_##dt, shape, b, e)

/* A plain valid entry and its size, used to fill headers. */
#define ENT_A "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"

/* ---- rules 1-3: header length ------------------------------------------------------------ */
static void test_header_length(void) {
    unsigned char b[64];
    size_t n;
    memset(b, 0, sizeof b);
    /* 1: fewer than 8 bytes, whatever they are */
    for (n = 0; n < 8; n++) {
        memset(b, n ? 0xff : 0, sizeof b);
        save_corpus(b, n);
        expect_img(__LINE__, SRC_ALL, b, n, SAFELOAD_HEADER_TOO_SMALL, 0, NULL);
    }
    /* 2: N > 100,000,000 beats the length check */
    put_le64(b, UINT64_MAX); save_corpus(b, 8);
    expect_img(__LINE__, SRC_ALL, b, 8, SAFELOAD_HEADER_TOO_LARGE, 0, NULL);
    put_le64(b, 100000001ull); save_corpus(b, 8);
    expect_img(__LINE__, SRC_ALL, b, 8, SAFELOAD_HEADER_TOO_LARGE, 0, NULL);
    put_le64(b, UINT64_MAX - 7); memcpy(b + 8, "{}", 2); save_corpus(b, 10);
    expect_img(__LINE__, SRC_ALL, b, 10, SAFELOAD_HEADER_TOO_LARGE, 0, NULL);
    put_le64(b, (uint64_t)1 << 32); save_corpus(b, 16);
    expect_img(__LINE__, SRC_MEM, b, 16, SAFELOAD_HEADER_TOO_LARGE, 0, NULL);
    /* N = 100,000,000 exactly is not too large: the file is just short */
    put_le64(b, 100000000ull); save_corpus(b, 8);
    expect_img(__LINE__, SRC_ALL, b, 8, SAFELOAD_INVALID_HEADER_LENGTH, 0, NULL);
    save_corpus(b, 64);
    expect_img(__LINE__, SRC_MEM, b, 64, SAFELOAD_INVALID_HEADER_LENGTH, 0, NULL);
    /* 3: 8 + N past the end */
    put_le64(b, 3); memcpy(b + 8, "{}", 2); save_corpus(b, 10);
    expect_img(__LINE__, SRC_ALL, b, 10, SAFELOAD_INVALID_HEADER_LENGTH, 0, NULL);
    put_le64(b, 1); save_corpus(b, 8);
    expect_img(__LINE__, SRC_ALL, b, 8, SAFELOAD_INVALID_HEADER_LENGTH, 0, NULL);
    /* N = 0: an empty header is not a JSON object */
    put_le64(b, 0); save_corpus(b, 8);
    expect_img(__LINE__, SRC_ALL, b, 8, SAFELOAD_INVALID_JSON, 8, NULL);
    /* N = 2 exactly fits */
    put_le64(b, 2); memcpy(b + 8, "{}", 2); save_corpus(b, 10);
    expect_img(__LINE__, SRC_ALL, b, 10, SAFELOAD_OK, NOOFF, NULL);
    /* N = 1 with "{}" after: header "{" is bad JSON; the '}' then is trailing data */
    put_le64(b, 1); save_corpus(b, 10);
    expect_img(__LINE__, SRC_MEM, b, 10, SAFELOAD_INVALID_JSON, JSONOFF, NULL);
}

/* N = 100,000,000 exactly is accepted; one more byte is HEADER_TOO_LARGE. */
static void test_header_limit(void) {
    size_t N = 100000000, n = 8 + N + 1;
    unsigned char *p = (unsigned char *)malloc(n);
    safeload_file *f = NULL;
    safeload_error err;
    safeload_result r;
    put_le64(p, N);
    memset(p + 8, ' ', N + 1);
    memcpy(p + 8, "{}", 2);
    r = safeload_open_memory(&f, p, 8 + N, NULL, &err);
    CHECK_MSG(r == SAFELOAD_OK, "100,000,000-byte header: %s", safeload_result_id(r));
    if (r == SAFELOAD_OK) {
        CHECK_EQ_U64(safeload_header_size(f), N);
        CHECK_EQ_U64(safeload_data_offset(f), 8 + N);
        CHECK_EQ_U64(safeload_data_size(f), 0);
        CHECK_EQ_U64(safeload_tensor_count(f), 0);
        safeload_close(f);
    }
    put_le64(p, N + 1);
    expect_img(__LINE__, SRC_MEM, p, n, SAFELOAD_HEADER_TOO_LARGE, 0, NULL);
    free(p);
}

/* ---- rule 4: UTF-8 ---------------------------------------------------------------------- */
static void utf8_case(int line, const char *bytes, int good, size_t bad_at) {
    /* inside a metadata value, then inside a tensor name, then in the trailing padding */
    char h[256];
    const char *pre[3] = { "{\"__metadata__\":{\"k\":\"", "{\"", "{}   " };
    const char *post[3] = { "\"}}", "\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", "" };
    size_t dl[3] = { 0, 1, 0 };
    int i;
    for (i = 0; i < 3; i++) {
        size_t pl = strlen(pre[i]);
        size_t hl;
        if (i == 2 && good) continue;
        hl = (size_t)snprintf(h, sizeof h, "%s%s%s", pre[i], bytes, post[i]);
        if (good)
            expect_hdr(line, SRC_MEM, h, hl, dl[i], SAFELOAD_OK, NOOFF, NULL);
        else
            expect_hdr(line, i == 0 ? SRC_ALL : SRC_MEM, h, hl, dl[i], SAFELOAD_INVALID_UTF8, 8 + pl + bad_at, NULL);
    }
}
#define UTF8_OK(s)       utf8_case(__LINE__, s, 1, 0)
#define UTF8_BAD(s, at)  utf8_case(__LINE__, s, 0, at)

static void test_utf8(void) {
    /* escapes shrink a string as it is decoded in place; the bytes left over must not look like
       bad UTF-8 when a later JSON error makes the parser re-check the whole header */
    BADJ("{\"\\n\\n\xc3\xa9\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},}", 1);
    BADJ("{\"__metadata__\":{\"k\":\"\\t\\t\\t\xe2\x82\xac\"},\"x\":1}", 0);
    /* ... and when the string itself fails after an escape (a bad escape, a control character,
       a lone surrogate): still a JSON error, or the first really bad byte where there is one */
    BADJ("{\"a\\n\xc3\xa9\\q\":1}", 0);
    BADJ("{\"x\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"k\":\"\\t\xe2\x82\xac\x01\"}}", 4);
    BADJ("{\"\\t\xc3\xa9\\ud800\":1}", 0);
    BADJ("{\"\\t\\t\xf0\x9f\x98\x80\\u12\":1}", 0);
    {
        const char h[] = "{\"\\t\xc3\xa9\\q\":1,\"b\xff\":2}";
        EXPN(h, sizeof h - 1, 0, INVALID_UTF8, 8 + sizeof h - 6);
    }
    /* boundaries of the valid ranges */
    UTF8_OK("\xc2\x80"); UTF8_OK("\xdf\xbf"); UTF8_OK("\xe0\xa0\x80"); UTF8_OK("\xed\x9f\xbf");
    UTF8_OK("\xee\x80\x80"); UTF8_OK("\xef\xbf\xbf"); UTF8_OK("\xf0\x90\x80\x80");
    UTF8_OK("\xf4\x8f\xbf\xbf"); UTF8_OK("x\xe2\x82\xac\xf0\x9f\x98\x80y");
    /* overlong 2-byte */
    UTF8_BAD("\xc0\x80", 0); UTF8_BAD("\xc0\xaf", 0); UTF8_BAD("\xc1\xbf", 0); UTF8_BAD("ab\xc1\x81", 2);
    /* overlong 3-byte, surrogates */
    UTF8_BAD("\xe0\x80\x80", 0); UTF8_BAD("\xe0\x9f\xbf", 0);
    UTF8_BAD("\xed\xa0\x80", 0); UTF8_BAD("\xed\xbf\xbf", 0); UTF8_BAD("x\xed\xb0\x80", 1);
    /* overlong 4-byte, above U+10FFFF, bytes that never occur */
    UTF8_BAD("\xf0\x80\x80\x80", 0); UTF8_BAD("\xf0\x8f\xbf\xbf", 0);
    UTF8_BAD("\xf4\x90\x80\x80", 0); UTF8_BAD("\xf5\x80\x80\x80", 0); UTF8_BAD("\xf7\xbf\xbf\xbf", 0);
    UTF8_BAD("\xf8\x88\x80\x80\x80", 0); UTF8_BAD("\xfc\x84\x80\x80\x80\x80", 0);
    UTF8_BAD("\xfe", 0); UTF8_BAD("\xff", 0); UTF8_BAD("abc\xff", 3);
    /* truncated sequences (followed by the closing quote) */
    UTF8_BAD("\xc3", 0); UTF8_BAD("\xe2\x82", 0); UTF8_BAD("\xe2", 0); UTF8_BAD("\xf0\x9f\x98", 0);
    UTF8_BAD("ok\xf0\x9f", 2); UTF8_BAD("\xe2\x82\xe2\x82\xac", 0);
    /* stray continuation bytes */
    UTF8_BAD("\x80", 0); UTF8_BAD("\xbf", 0); UTF8_BAD("a\x80", 1); UTF8_BAD("\xc3\xa9\xa9", 2);
    UTF8_BAD("\xe2\x82\xac\x80", 3);
    /* the first bad sequence wins */
    UTF8_BAD("\xc3\xa9\xff\xc0\x80", 2);
    {
        /* invalid UTF-8 beats a JSON error that comes earlier */
        const char h1[] = "{x \"\xff\"}";
        const char h2[] = "[1,2,\"\xe0\x80\x80\"]";
        const char h3[] = "{\"a\":{\"dtype\":\"F32\"}}      \xc3";
        EXPN(h1, sizeof h1 - 1, 0, INVALID_UTF8, 8 + 4);
        EXPN(h2, sizeof h2 - 1, 0, INVALID_UTF8, 8 + 6);
        EXPN(h3, sizeof h3 - 1, 0, INVALID_UTF8, 8 + sizeof h3 - 2);
    }
    {
        /* a header whose last byte starts a multibyte sequence: truncated at the end of N */
        const char h[] = "{}\xe2\x82";
        EXPN(h, 3, 0, INVALID_UTF8, 10);
        EXPN(h, 4, 0, INVALID_UTF8, 10);
    }
}

/* ---- rule 5: JSON syntax and shape ---------------------------------------------------- */
#define E1(x) "{\"a\":" x "}"        /* one entry */
#define EF(x) "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]," x "}}" /* extra field */

static void test_json_syntax(void) {
    /* syntax errors */
    BADJ("", 0); BADJ(" ", 0); BADJ("{", 0); BADJ("}", 0); BADJ("{]", 0); BADJ("{\"a\"}", 0);
    BADJ("{\"a\":}", 0); BADJ("{,}", 0); BADJ("{" ENT_A ",}", 4); BADJ("{" ENT_A ",,}", 4);
    BADJ("{'a':1}", 0); BADJ("{a:1}", 0); BADJ("{/*c*/}", 0); BADJ("{}//c", 0);
    BADJ("{" ENT_A, 4); BADJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4);
    BADJ("{\"a\" {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    BADJ("{\"a\":{\"dtype\":\"F32\" \"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    BADJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", 4);
    BADJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1 1],\"data_offsets\":[0,4]}}", 4);
    BADJ("{\"a\":{\"dtype\":\"F32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    BADJ(EF("\"x\":tru"), 4); BADJ(EF("\"x\":nul"), 4); BADJ(EF("\"x\":True"), 4); BADJ(EF("\"x\":NaN"), 4);
    BADJ(EF("\"x\":Infinity"), 4); BADJ(EF("\"x\":.5"), 4); BADJ(EF("\"x\":5."), 4); BADJ(EF("\"x\":1e"), 4);
    BADJ(EF("\"x\":1e+"), 4); BADJ(EF("\"x\":-"), 4); BADJ(EF("\"x\":0x10"), 4); BADJ(EF("\"x\":[1,]"), 4);
    BADJ(EF("\"x\":{\"y\":1,}"), 4); BADJ(EF("\"x\":{1:2}"), 4); BADJ(EF("\"x\":\"abc"), 4);
    BADJ(EF("\"x\":01"), 4); BADJ(EF("\"x\":-01"), 4); BADJ(EF("\"x\":+1"), 4);
    /* trailing characters after the object */
    {
        const char nul[] = "{}\0";
        EXPN(nul, 3, 0, INVALID_JSON, JSONOFF);
    }
    BADJ("{}\v", 0); BADJ("{}\f", 0); BADJ("{}\xc2\xa0", 0); BADJ("{}x", 0); BADJ("{}{}", 0);
    BADJ("{} {}", 0); BADJ("{}  \n 1", 0); BADJ("{" ENT_A "}}", 4); BADJ("{" ENT_A "},", 4);
    /* leading junk: BOM, other whitespace */
    BADJ("\xef\xbb\xbf{}", 0); BADJ("\v{}", 0); BADJ("\f{}", 0); BADJ("\xc2\xa0{}", 0); BADJ("x{}", 0);
    /* the top level must be an object */
    BADJ("[]", 0); BADJ("null", 0); BADJ("1", 0); BADJ("\"abc\"", 0); BADJ("true", 0);
    BADJ("[{}]", 0); BADJ("[" ENT_A "]", 4);
    /* raw control characters inside strings; bad escapes; lone surrogates */
    {
        const char h1[] = "{\"__metadata__\":{\"k\":\"a\tb\"}}";
        const char h2[] = "{\"__metadata__\":{\"k\":\"a\nb\"}}";
        const char h3[] = "{\"__metadata__\":{\"k\":\"a\x01" "b\"}}";
        const char h4[] = "{\"__metadata__\":{\"k\":\"a\x1f" "b\"}}";
        const char h5[] = "{\"__metadata__\":{\"k\":\"a\0b\"}}";
        const char h6[] = "{\"a\x7f\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}";
        EXPN(h1, sizeof h1 - 1, 0, INVALID_JSON, JSONOFF);
        EXPN(h2, sizeof h2 - 1, 0, INVALID_JSON, JSONOFF);
        EXPN(h3, sizeof h3 - 1, 0, INVALID_JSON, JSONOFF);
        EXPN(h4, sizeof h4 - 1, 0, INVALID_JSON, JSONOFF);
        EXPN(h5, sizeof h5 - 1, 0, INVALID_JSON, JSONOFF);
        EXPN(h6, sizeof h6 - 1, 1, OK, NOOFF); /* DEL is not a control character for JSON */
    }
    BADJ("{\"__metadata__\":{\"k\":\"\\x41\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\u12G4\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\u12\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\U0041\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\a\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\'\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\0\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\ud800\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\udc00\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\ud800\\u0041\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\ud800x\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\udbff\\udbff\"}}", 0); BADJ("{\"__metadata__\":{\"k\":\"\\udfff\\ud800\"}}", 0);
    BADJ("{\"__metadata__\":{\"k\":\"\\ud800\\\"}}", 0); BADJ("{\"__metadata__\":{\"\\ud83d\":\"v\"}}", 0);
    BADJ("{\"\\udc00\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1);
    BADJ(EF("\"x\":\"\\ud800\""), 4); BADJ(EF("\"\\ud800\":1"), 4); BADJ(EF("\"x\":\"\\q\""), 4);
}

/* ---- rule 5: types, numbers, fields ---------------------------------------------------- */
static void test_json_types(void) {
    /* numbers in shape / data_offsets */
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1E0],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[00],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[+0],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0,18446744073709551616],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0,99999999999999999999],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0,184467440737095516150],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[true],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4e0]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,04]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[+0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}"), 4);
    /* shape: not an array */
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":null,\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":\"[1]\",\"data_offsets\":[0,4]}"), 4);
    /* data_offsets: exactly two unsigned integers */
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":null}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{\"0\":0,\"1\":4}}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",\"4\"]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0,4\"}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,null]}"), 4);
    /* dtype */
    BADJ(E1("{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"float32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F8_E4M3FN\",\"shape\":[1],\"data_offsets\":[0,1]}"), 1);
    BADJ(E1("{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}"), 16);
    BADJ(E1("{\"dtype\":\"\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32 \",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F3\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"I4\",\"shape\":[2],\"data_offsets\":[0,1]}"), 1);
    BADJ(E1("{\"dtype\":\"C128\",\"shape\":[1],\"data_offsets\":[0,16]}"), 16);
    BADJ(E1("{\"dtype\":\"NONE\",\"shape\":[1],\"data_offsets\":[0,1]}"), 1);
    BADJ(E1("{\"dtype\":17,\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":null,\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":{\"F32\":null},\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":[\"F32\"],\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    {
        const char h[] = "{\"a\":{\"dtype\":\"F32\0\",\"shape\":[1],\"data_offsets\":[0,4]}}";
        EXPN(h, sizeof h - 1, 4, INVALID_JSON, JSONOFF);
    }
    BADJ(E1("{\"dtype\":\"F32\\u0000\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    /* missing fields, duplicated fields */
    BADJ(E1("{\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1]}"), 4);
    BADJ(E1("{}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"dty\\u0070e\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4);
    /* entries that are not objects */
    BADJ(E1("[\"F32\",[1],[0,4]]"), 4); BADJ(E1("null"), 0); BADJ(E1("1"), 0); BADJ(E1("\"F32\""), 0);
    BADJ("{\"__METADATA__\":{\"k\":\"v\"}}", 0); BADJ("{\"__metadata\":{}}", 0);
}

/* ---- rule 5: __metadata__, nesting depth, ignored numbers ----------------------------- */
static char *nested(const char *open, const char *close, int k) {
    /* EF("\"x\":" k opens + "1" + k closes) */
    size_t ol = strlen(open), cl = strlen(close), n = 256 + (size_t)k * (ol + cl);
    char *h = (char *)malloc(n), *p;
    int i;
    p = h + sprintf(h, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":");
    for (i = 0; i < k; i++) { memcpy(p, open, ol); p += ol; }
    *p++ = '1';
    for (i = 0; i < k; i++) { memcpy(p, close, cl); p += cl; }
    strcpy(p, "}}");
    return h;
}

static void test_json_meta_depth(void) {
    char *h;
    /* metadata values must be strings */
    BADJ("{\"__metadata__\":{\"k\":1}}", 0); BADJ("{\"__metadata__\":{\"k\":true}}", 0);
    BADJ("{\"__metadata__\":{\"k\":null}}", 0); BADJ("{\"__metadata__\":{\"k\":{}}}", 0);
    BADJ("{\"__metadata__\":{\"k\":[]}}", 0); BADJ("{\"__metadata__\":{\"k\":[\"v\"]}}", 0);
    BADJ("{\"__metadata__\":{\"a\":\"b\",\"k\":1.5}}", 0);
    BADJ("{\"__metadata__\":\"pt\"}", 0); BADJ("{\"__metadata__\":[]}", 0); BADJ("{\"__metadata__\":1}", 0);
    BADJ("{\"__metadata__\":true}", 0); BADJ("{\"__metadata__\":[[\"k\",\"v\"]]}", 0);
    BADJ("{\"__metadata__\":{},\"__metadata__\":{}}", 0);
    BADJ("{\"__metadata__\":null,\"__metadata__\":{}}", 0);
    BADJ("{\"__metadata__\":{\"a\":\"b\"}," ENT_A ",\"__metadata__\":{\"c\":\"d\"}}", 4);
    BADJ("{\"__metadata__\":{},\"__metad\\u0061ta__\":{}}", 0);
    BADJ("{\"__metad\\u0061ta__\":\"pt\"}", 0);
    /* nesting: top-level object = 1, entry = 2; 127 open containers accepted, 128 not */
    h = nested("[", "]", 125); OKH(h, 4); free(h);
    h = nested("[", "]", 126); BADJ(h, 4); free(h);
    h = nested("[", "]", 1000); BADJ(h, 4); free(h);
    h = nested("{\"y\":", "}", 125); OKH(h, 4); free(h);
    h = nested("{\"y\":", "}", 126); BADJ(h, 4); free(h);
    h = nested("[{\"y\":", "}]", 62); OKH(h, 4); free(h);      /* 2 + 2*62 = 126 */
    h = nested("[{\"y\":", "}]", 63); BADJ(h, 4); free(h);     /* 128 */
    {
        /* a very deep array with nothing closed: must not blow the stack */
        size_t k = 200000, n;
        char *d = (char *)malloc(k + 64);
        n = (size_t)sprintf(d, "{\"a\":{\"x\":");
        memset(d + n, '[', k);
        d[n + k] = 0;
        EXPN(d, n + k, 0, INVALID_JSON, JSONOFF);
        free(d);
    }
    /* ignored numbers must be finite doubles */
    BADJ(EF("\"x\":1e400"), 4); BADJ(EF("\"x\":-1e400"), 4); BADJ(EF("\"x\":1.8e308"), 4);
    BADJ(EF("\"x\":[1,2,1e309]"), 4); BADJ(EF("\"x\":{\"y\":-2e308}"), 4);
    {
        char big[600];
        memset(big, '0', sizeof big);
        memcpy(big, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1", 59);
        strcpy(big + 59 + 399, "}}");
        BADJ(big, 4);                                                    /* 400 digits */
        big[59 + 299] = 0; strcat(big, "}}");
        OKH(big, 4);                                                     /* 300 digits */
    }
    OKH(EF("\"x\":1e308"), 4); OKH(EF("\"x\":1.7976931348623157e308"), 4); OKH(EF("\"x\":0e999999"), 4);
    OKH(EF("\"x\":-1.7976931348623157e308"), 4); OKH(EF("\"x\":1e-400"), 4); OKH(EF("\"x\":-0"), 4);
    OKH(EF("\"x\":18446744073709551616"), 4); OKH(EF("\"x\":-9223372036854775809"), 4);
    OKH(EF("\"x\":0.000000000000000000000000000001e-10"), 4);
    {
        /* serde_json's own number rules (the reference builds it without exact floats):
           the value is (double)first-digits * 10^e in one rounded multiply, and the check for
           a fraction digit counts the digits the significand took (since serde_json 1.0.89).
           NUMOFF(k): k bytes into the number. */
#define NUMOFF(k) (8u + sizeof EF("") - 3u + 4u + (k))
        EXP(EF("\"x\":1.7976931348623158e308"), 4, INVALID_JSON, NUMOFF(0));
        EXP(EF("\"x\":-17976931348623158e292"), 4, INVALID_JSON, NUMOFF(0));
        EXP(EF("\"x\":1797693134862315665e290"), 4, INVALID_JSON, NUMOFF(0));
        OKH(EF("\"x\":179769313486231580e291"), 4);         /* same value, other digits */
        OKH(EF("\"x\":179769313486231598e291"), 4);         /* rounds to inf, product does not */
        EXP(EF("\"x\":18446744073709551616."), 4, INVALID_JSON, NUMOFF(21));   /* 2^64 */
        EXP(EF("\"x\":-18446744073709551616.e5"), 4, INVALID_JSON, NUMOFF(22));
        EXP(EF("\"x\":18446744073709551616.]"), 4, INVALID_JSON, NUMOFF(21));
        OKH(EF("\"x\":18446744073709551616.0"), 4);         /* the 0 fits the significand */
        OKH(EF("\"x\":18446744073709551619.5"), 4);
        OKH(EF("\"x\":18446744073709551616.6"), 4);         /* that digit does not fit */
        OKH(EF("\"x\":18446744073709551616.00"), 4);
        OKH(EF("\"x\":18446744073709551620.0"), 4);
        OKH(EF("\"x\":184467440737095516160.0"), 4);
        EXP(EF("\"x\":1."), 4, INVALID_JSON, NUMOFF(2));
        EXP(EF("\"x\":1e2147483648"), 4, INVALID_JSON, NUMOFF(0));
        EXP(EF("\"x\":-1e2147483648"), 4, INVALID_JSON, NUMOFF(0));
        EXP(EF("\"x\":1e309"), 4, INVALID_JSON, NUMOFF(0));
        OKH(EF("\"x\":1e-2147483649"), 4); OKH(EF("\"x\":0e2147483648"), 4);
        OKH(EF("\"x\":0.0e400"), 4); OKH(EF("\"x\":1e288"), 4);
        OKH(EF("\"x\":18446744073709551615e288"), 4);       /* (2^64) * 10^288 < 2^1024 */
#undef NUMOFF
    }
}

/* ---- rule 5: what must be accepted --------------------------------------------------- */
static void test_json_accepted(void) {
    ofile o;
    const safeload_kv *kv;
    /* whitespace before, after and between tokens */
    OKHA(" \t\r\n{}\n\r\t ", 0);
    OKHA("\n{ \"a\" :\t{ \"dtype\" : \"F32\" ,\r\n\"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 4 ] } }  ", 4);
    OKH("{\t}", 0); OKH("{ }", 0); OKH("{}\n", 0); OKH("{}\r\n", 0); OKH("    {}", 0);
    /* unknown extra fields of every kind */
    OKH(EF("\"x\":{\"y\":[1,-2.5e-3,true,false,null,\"s\",{}]}"), 4);
    OKH(EF("\"x\":-1,\"y\":2.5,\"z\":true,\"w\":false,\"v\":null,\"u\":\"F99\",\"t\":[],\"s\":{}"), 4);
    OKH(EF("\"dtype_\":\"bad\",\"Shape\":1,\"data\":null"), 4);
    OKH(E1("{\"x\":1,\"dtype\":\"F32\",\"y\":[],\"shape\":[1],\"z\":{},\"data_offsets\":[0,4],\"w\":null}"), 4);
    /* any key order */
    OKH(E1("{\"data_offsets\":[0,4],\"shape\":[1],\"dtype\":\"F32\"}"), 4);
    OKH(E1("{\"shape\":[1],\"data_offsets\":[0,4],\"dtype\":\"F32\"}"), 4);
    OKH("{" ENT_A ",\"__metadata__\":{\"k\":\"v\"}}", 4);
    /* escapes are decoded before matching */
    o = OPEN_OK("{\"__metad\\u0061ta__\":{\"k\\u0041\":\"\\u0041\\\"\\\\\\/\\b\\f\\n\\r\\t\"},"
                "\"n\\u0041me\":{\"dty\\u0070e\":\"F\\u00332\",\"sh\\u0061pe\":[1],\"data_offsets\":[0,4]}}", 4);
    CHECK(safeload_has_metadata(o.f));
    CHECK_EQ_U64(safeload_metadata_count(o.f), 1);
    kv = safeload_metadata_find(o.f, "kA");
    CHECK(kv && kv->value_len == 9 && memcmp(kv->value, "A\"\\/\b\f\n\r\t", 10) == 0);
    CHK_T(o.f, 0, "nAme", F32, "[1]", 0, 4);
    ofile_close(&o);
    /* surrogate pairs -> 4-byte UTF-8; \u escapes of BMP characters; raw multibyte names */
    o = OPEN_OK("{\"__metadata__\":{\"e\":\"\\ud83d\\ude00\\u00e9\\u20AC\\uFFFF\\uD800\\uDC00\\udbff\\udfff\"},"
                "\"\xe6\xa8\xa1\xe5\x9e\x8b.\xf0\x9f\x98\x80\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                "\"\\ud83d\\ude01\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[1,2]}}", 2);
    kv = safeload_metadata_find(o.f, "e");
    CHECK(kv && kv->value_len == 4 + 2 + 3 + 3 + 4 + 4 &&
          memcmp(kv->value, "\xf0\x9f\x98\x80\xc3\xa9\xe2\x82\xac\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 20) == 0);
    CHK_T(o.f, 0, "\xe6\xa8\xa1\xe5\x9e\x8b.\xf0\x9f\x98\x80", U8, "[]", 0, 1);
    CHK_T(o.f, 1, "\xf0\x9f\x98\x81", U8, "[]", 1, 2);
    ofile_close(&o);
    /* \u0000 inside a metadata value (and key): value_len counts it */
    o = OPEN_OK("{\"__metadata__\":{\"k\":\"a\\u0000b\",\"z\\u0000\":\"\\u0000\"}}", 0);
    kv = safeload_metadata_at(o.f, 0);
    CHECK(kv && kv->key_len == 1 && kv->value_len == 3 && memcmp(kv->value, "a\0b", 4) == 0);
    kv = safeload_metadata_at(o.f, 1);
    CHECK(kv && kv->key_len == 2 && memcmp(kv->key, "z\0", 3) == 0 && kv->value_len == 1 && kv->value[0] == 0);
    /* such a key is found by its length: "z\0" is not "z" */
    CHECK(safeload_metadata_find_n(o.f, "z\0", 2) == kv);
    CHECK(safeload_metadata_find(o.f, "z") == NULL && safeload_metadata_find_n(o.f, "z", 1) == NULL);
    CHECK(safeload_metadata_find_n(o.f, "kx", 1) == safeload_metadata_at(o.f, 0));
    CHECK(safeload_metadata_find_n(NULL, "k", 1) == NULL && safeload_metadata_find_n(o.f, NULL, 0) == NULL);
    ofile_close(&o);
    /* null metadata = none; {} = empty; __metadata__ anywhere */
    o = OPEN_OK("{\"__metadata__\":null," ENT_A "}", 4);
    CHECK(!safeload_has_metadata(o.f)); CHECK_EQ_U64(safeload_metadata_count(o.f), 0);
    CHECK_EQ_U64(safeload_tensor_count(o.f), 1);
    ofile_close(&o);
    o = OPEN_OK("{" ENT_A ",\"__metadata__\":{}}", 4);
    CHECK(safeload_has_metadata(o.f)); CHECK_EQ_U64(safeload_metadata_count(o.f), 0);
    CHECK(safeload_metadata_find(o.f, "") == NULL);
    ofile_close(&o);
    o = OPEN_OK("{}", 0);
    CHECK(!safeload_has_metadata(o.f)); CHECK(safeload_metadata_find(o.f, "k") == NULL);
    CHECK(safeload_metadata_at(o.f, 0) == NULL);
    ofile_close(&o);
    /* an empty name and a name that looks like JSON are fine */
    o = OPEN_OK("{\"\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                "\"{\\\"x\\\":[1]}\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[1,2]}}", 2);
    CHK_T(o.f, 0, "", U8, "[]", 0, 1);
    CHK_T(o.f, 1, "{\"x\":[1]}", U8, "[]", 1, 2);
    ofile_close(&o);
}

/* ---- rule 6: duplicates and NUL in names ------------------------------------------------ */
/* one entry: T("a", "F32", "[1]", 0, 4) */
#define T(n, d, s, b, e) "\"" n "\":{\"dtype\":\"" d "\",\"shape\":" s ",\"data_offsets\":[" #b "," #e "]}"

static void test_duplicates(void) {
    const char *h;
    safeload_file *f = NULL;
    safeload_error err;
    size_t n;
    unsigned char *img;
    h = "{" T("a","F32","[1]",0,4) "," T("a","F32","[1]",0,4) "}";
    EXPTA(h, 4, DUPLICATE_KEY, at(h, "\"a\":", 2), "a");
    h = "{" T("a","F32","[1]",0,4) "," T("b","F32","[1]",4,8) "," T("a","F32","[1]",8,12) "}";
    EXPT(h, 12, DUPLICATE_KEY, at(h, "\"a\":", 2), "a");
    h = "{" T("a","F32","[2]",0,8) "," T("b","F32","[1]",4,8) "," T("a","F32","[1]",0,4) "}";
    EXPT(h, 8, DUPLICATE_KEY, at(h, "\"a\":", 2), "a");
    h = "{" T("x.y","F32","[1]",0,4) "," T("x.\\u0079","F32","[1]",4,8) "}";
    EXPT(h, 8, DUPLICATE_KEY, at(h, "\"x.\\u0079\"", 1), "x.y");
    h = "{" T("\\u00e9","U8","[]",0,1) "," T("\xc3\xa9","U8","[]",1,2) "}";
    EXPT(h, 2, DUPLICATE_KEY, at(h, "\"\xc3\xa9\"", 1), "\xc3\xa9");
    /* a duplicate is found before any offset problem (even one in an earlier tensor) */
    h = "{" T("a","F32","[1]",0,5) "," T("b","F32","[1]",9,4) "," T("b","F32","[1]",0,4) "}";
    EXPT(h, 4, DUPLICATE_KEY, at(h, "\"b\":", 2), "b");
    /* ... but after the JSON has parsed completely */
    h = "{" T("a","F32","[1]",0,4) "," T("a","F32","[1]",0,4) ",\"b\":1}";
    BADJ(h, 4);
    /* duplicate metadata keys */
    h = "{\"__metadata__\":{\"k\":\"1\",\"j\":\"2\",\"k\":\"1\"}}";
    EXPTA(h, 0, DUPLICATE_KEY, at(h, "\"k\"", 2), "k");
    h = "{\"__metadata__\":{\"format\":\"pt\",\"form\\u0061t\":\"np\"}," ENT_A "}";
    EXPT(h, 4, DUPLICATE_KEY, at(h, "\"form\\u0061t\"", 1), "format");
    h = "{" ENT_A ",\"__metadata__\":{\"\":\"1\",\"\":\"2\"}}";
    EXPT(h, 4, DUPLICATE_KEY, at(h, "\"\"", 2), "");
    /* a tensor and a metadata key may share a name */
    OKH("{\"__metadata__\":{\"a\":\"x\"}," ENT_A "}", 4);
    /* NUL in a tensor name */
    h = "{" T("a\\u0000b","U8","[]",0,1) "}";
    EXP(h, 1, INVALID_NAME, 9);
    h = "{" T("ok","U8","[]",0,1) "," T("\\u0000","U8","[]",1,2) "}";
    EXP(h, 2, INVALID_NAME, at(h, "\"\\u0000\"", 1));
    h = "{" T("a\\u0000b","U8","[]",0,1) "}";
    img = mkimg(h, strlen(h), NULL, 1, &n);
    memset(&err, 0, sizeof err);
    CHECK(safeload_open_memory(&f, img, n, NULL, &err) == SAFELOAD_INVALID_NAME);
    CHECK(err.tensor[0] == 'a');               /* the name, as far as C strings go */
    free(img);
    /* NUL in a name is reported even when offsets are bad */
    h = "{" T("a","F32","[1]",0,3) "," T("\\u0000z","U8","[]",7,8) "}";
    EXP(h, 4, INVALID_NAME, at(h, "\"\\u0000z\"", 1));
}

/* ---- rule 7: offsets, sizes, overflow --------------------------------------------------- */
#define TOFF(h, n) at(h, "\"" n "\":{", 1)

static void test_offsets(void) {
    const char *h;
    ofile o;
    /* gaps, overlap, containment, identical ranges, end < begin */
    h = "{" T("a","F32","[1]",4,8) "}";                               EXPTA(h, 8, INVALID_OFFSET, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[1]",0,4) "," T("b","F32","[1]",8,12) "}";     EXPT(h, 12, INVALID_OFFSET, TOFF(h,"b"), "b");
    h = "{" T("a","F32","[2]",0,8) "," T("b","F32","[1]",4,8) "}";      EXPT(h, 8, INVALID_OFFSET, TOFF(h,"b"), "b");
    h = "{" T("a","F32","[2]",0,8) "," T("b","U8","[2]",2,4) "}";       EXPT(h, 8, INVALID_OFFSET, TOFF(h,"b"), "b");
    h = "{" T("a","F32","[1]",0,4) "," T("b","F32","[1]",0,4) "}";      EXPT(h, 4, INVALID_OFFSET, TOFF(h,"b"), "b");
    h = "{" T("b","F32","[1]",0,4) "," T("a","F32","[1]",0,4) "}";      EXPT(h, 4, INVALID_OFFSET, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[1]",0,4) "," T("b","F32","[1]",4,0) "}";      EXPT(h, 4, INVALID_OFFSET, TOFF(h,"b"), "b");
    h = "{" T("a","F32","[0]",4,0) "}";                               EXPT(h, 0, INVALID_OFFSET, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[1]",0,4) "," T("b","F32","[1]",5,9) "}";      EXPT(h, 9, INVALID_OFFSET, TOFF(h,"b"), "b");
    h = "{" T("a","F32","[1]",0,4) "," T("b","F32","[1]",3,7) "}";      EXPT(h, 7, INVALID_OFFSET, TOFF(h,"b"), "b");
    /* the first bad tensor in offset order wins, whatever its error and header position */
    h = "{" T("c","F32","[2]",8,12) "," T("b","F32","[3]",4,8) "," T("a","F4","[3]",0,4) "}";
    EXPTA(h, 12, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("c","F32","[2]",8,12) "," T("b","F32","[3]",4,8) "," T("a","F32","[1]",0,4) "}";
    EXPT(h, 12, SIZE_MISMATCH, TOFF(h,"b"), "b");
    h = "{" T("c","F32","[1]",9,13) "," T("b","U8","[4611686018427387904,4]",4,8) "," T("a","F32","[1]",0,4) "}";
    EXPT(h, 13, OVERFLOW, TOFF(h,"b"), "b");
    h = "{" T("c","F32","[1]",100,104) "," T("b","F32","[1]",4,8) "," T("a","I8","[4]",0,3) "}";
    EXPT(h, 8, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("z","F4","[1]",4,4) "," T("y","F32","[1]",0,4) "," T("x","F32","[1]",4,9) "}";
    EXPT(h, 9, MISALIGNED_SUBBYTE, TOFF(h,"z"), "z");
    h = "{" T("z","F32","[1]",4,9) "," T("y","F32","[1]",0,4) "," T("x","F32","[0]",4,4) "}";
    EXPT(h, 9, SIZE_MISMATCH, TOFF(h,"z"), "z");
    /* overflow: shape product left to right from 1, then x bits */
    OKH("{" T("a","F32","[0,18446744073709551615]",0,0) "}", 0);
    OKH("{" T("a","F32","[18446744073709551615,0]",0,0) "}", 0);
    OKH("{" T("a","U64","[18446744073709551615,0,18446744073709551615]",0,0) "}", 0);
    h = "{" T("a","F32","[4294967296,4294967296,0]",0,0) "}";         EXPTA(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","U8","[2,9223372036854775808]",0,0) "}";            EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","U8","[2,18446744073709551614]",0,0) "}";           EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","U8","[2305843009213693952]",0,0) "}";              EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","BOOL","[2305843009213693952]",0,0) "}";            EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","F4","[4611686018427387904]",0,0) "}";              EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[2,9223372036854775807]",0,0) "}";           EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","U64","[288230376151711744]",0,0) "}";              EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[18446744073709551615,2,0]",0,0) "}";        EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    /* the largest sizes that do not overflow: size mismatch instead */
    h = "{" T("a","U8","[2305843009213693951]",0,0) "}";              EXPT(h, 0, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","F4","[4611686018427387902]",0,0) "}";              EXPT(h, 0, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","U64","[288230376151711743]",0,0) "}";              EXPT(h, 0, SIZE_MISMATCH, TOFF(h,"a"), "a");
    /* sub-byte dtypes */
    h = "{" T("a","F4","[]",0,1) "}";                                 EXPTA(h, 1, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("a","F4","[]",0,0) "}";                                 EXPT(h, 0, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("a","F4","[3]",0,2) "}";                                EXPT(h, 2, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("a","F4","[1,3]",0,2) "}";                              EXPT(h, 2, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("a","F6_E2M3","[3]",0,3) "}";                           EXPT(h, 3, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("a","F6_E3M2","[5]",0,4) "}";                           EXPT(h, 4, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    h = "{" T("a","F6_E3M2","[2]",0,2) "}";                           EXPT(h, 2, MISALIGNED_SUBBYTE, TOFF(h,"a"), "a");
    OKH("{" T("a","F6_E2M3","[4]",0,3) "}", 3); OKH("{" T("a","F6_E3M2","[2,2]",0,3) "}", 3);
    OKH("{" T("a","F4","[2]",0,1) "}", 1); OKH("{" T("a","F4","[3,2]",0,3) "}", 3);
    OKH("{" T("a","F4","[0]",0,0) "}", 0); OKH("{" T("a","F6_E2M3","[3,0]",0,0) "}", 0);
    h = "{" T("a","F4","[4]",0,3) "}";                                EXPT(h, 3, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","F6_E2M3","[4]",0,4) "}";                           EXPT(h, 4, SIZE_MISMATCH, TOFF(h,"a"), "a");
    /* size mismatch */
    h = "{" T("a","F32","[1]",0,3) "}";                               EXPTA(h, 3, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[1]",0,8) "}";                               EXPT(h, 8, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[0]",0,4) "}";                               EXPT(h, 4, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[]",0,0) "}";                                EXPT(h, 0, SIZE_MISMATCH, TOFF(h,"a"), "a");
    h = "{" T("a","F32","[2,2]",0,16) "," T("b","BF16","[3]",16,24) "}"; EXPT(h, 24, SIZE_MISMATCH, TOFF(h,"b"), "b");
    /* reported even when the data section is missing entirely */
    h = "{" T("a","F32","[1]",0,8) "}";                               EXPT(h, 0, SIZE_MISMATCH, TOFF(h,"a"), "a");
    /* zero-sized tensors */
    o = OPEN_OK("{" T("b","F32","[1]",0,4) "," T("a","F32","[0]",0,0) "}", 4);  /* (0,0) sorts before (0,4) */
    CHK_T(o.f, 0, "a", F32, "[0]", 0, 0); CHK_T(o.f, 1, "b", F32, "[1]", 0, 4);
    ofile_close(&o);
    o = OPEN_OK("{" T("z3","I8","[0]",4,4) "," T("a","F32","[1]",0,4) "," T("z1","I8","[5,0]",4,4) ","
                T("b","F32","[1]",4,8) "," T("z2","BF16","[0,7]",4,4) "," T("e","U8","[0]",8,8) ","
                T("d","F4","[0]",8,8) "," T("s","F64","[0]",0,0) "}", 8);
    CHECK_EQ_U64(safeload_tensor_count(o.f), 8);
    CHK_T(o.f, 0, "s", F64, "[0]", 0, 0); CHK_T(o.f, 1, "a", F32, "[1]", 0, 4);
    CHK_T(o.f, 2, "z3", I8, "[0]", 4, 4); CHK_T(o.f, 3, "z1", I8, "[5,0]", 4, 4);
    CHK_T(o.f, 4, "z2", BF16, "[0,7]", 4, 4); CHK_T(o.f, 5, "b", F32, "[1]", 4, 8);
    CHK_T(o.f, 6, "e", U8, "[0]", 8, 8); CHK_T(o.f, 7, "d", F4, "[0]", 8, 8);
    ofile_close(&o);
    h = "{" T("a","F32","[2]",0,8) "," T("z","F32","[0]",4,4) "}";      EXPT(h, 8, INVALID_OFFSET, TOFF(h,"z"), "z");
    h = "{" T("a","F32","[1]",0,4) "," T("z","F32","[0]",8,8) "}";      EXPT(h, 4, INVALID_OFFSET, TOFF(h,"z"), "z");
    h = "{" T("z","F32","[0]",1,1) "}";                               EXPT(h, 0, INVALID_OFFSET, TOFF(h,"z"), "z");
    h = "{" T("z","F32","[0]",0,1) "}";                               EXPT(h, 1, SIZE_MISMATCH, TOFF(h,"z"), "z");
    OKHA("{" T("z","F32","[0]",0,0) "}", 0);
}

/* ---- rule 8: the data section must end exactly at EOF ----------------------------------- */
static void test_incomplete(void) {
    const char *h;
    size_t N;
    char *b;
    int i;
    h = "{" ENT_A "}"; N = strlen(h);
    EXPA(h, 5, INCOMPLETE_BUFFER, 8 + N + 4);              /* one trailing byte */
    EXP(h, 4096, INCOMPLETE_BUFFER, 8 + N + 4);
    EXPA(h, 3, INCOMPLETE_BUFFER, 8 + N + 3);              /* truncated: offset = file size */
    EXP(h, 0, INCOMPLETE_BUFFER, 8 + N);
    {   /* one byte too many or too few: said in the singular */
        static const char *const want[2] = {"1 byte follows the end", "the file is 1 byte short"};
        for (i = 0; i < 2; i++) {
            size_t n = 8 + N + (i ? 3 : 5);
            unsigned char *img = (unsigned char *)calloc(1, n);
            safeload_file *f = NULL;
            safeload_error e;
            int k;
            for (k = 0; k < 8; k++) img[k] = (unsigned char)((uint64_t)N >> (8 * k));
            memcpy(img + 8, h, N);
            CHECK(safeload_open_memory(&f, img, n, NULL, &e) == SAFELOAD_INCOMPLETE_BUFFER && !f);
            CHECK_MSG(strstr(e.message, want[i]) != NULL, "%s", e.message);
            free(img);
        }
    }
    h = "{}"; EXPA(h, 1, INCOMPLETE_BUFFER, 10);             /* no tensors, some bytes */
    h = "{\"__metadata__\":{\"k\":\"v\"}}"; EXP(h, 7, INCOMPLETE_BUFFER, 8 + strlen(h));
    h = "{" T("a","F32","[0]",0,0) "}"; EXP(h, 2, INCOMPLETE_BUFFER, 8 + strlen(h));
    h = "{" T("a","U8","[2305843009213693951]",0,2305843009213693951) "}";
    EXP(h, 16, INCOMPLETE_BUFFER, 8 + strlen(h) + 16);
    /* eight U8 [2^61-1] tensors ending at 2^64-8: 8 + N + data_len overflows */
    b = (char *)malloc(4096);
    N = (size_t)sprintf(b, "{");
    for (i = 0; i < 8; i++) {
        unsigned long long s = 2305843009213693951ull;
        N += (size_t)sprintf(b + N, "%s\"t%d\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}",
                             i ? "," : "", i, s, s * (unsigned long long)i, s * (unsigned long long)(i + 1));
    }
    strcpy(b + N, "}");
    EXPA(b, 16, INCOMPLETE_BUFFER, NOOFF);
    {   /* the message says the end overflows, not "0 bytes short" */
        size_t n = 8 + N + 1 + 16;
        unsigned char *img = (unsigned char *)calloc(1, n);
        safeload_file *f = NULL;
        safeload_error e;
        for (i = 0; i < 8; i++) img[i] = (unsigned char)((uint64_t)(N + 1) >> (8 * i));
        memcpy(img + 8, b, N + 1);
        CHECK(safeload_open_memory(&f, img, n, NULL, &e) == SAFELOAD_INCOMPLETE_BUFFER && !f);
        CHECK_MSG(strstr(e.message, "past byte 2^64") != NULL && e.offset == n, "%s", e.message);
        free(img);
    }
    /* ... and the same with the last end at 2^64-1 would be past 2^64-8; SIZE_MISMATCH first */
    free(b);
}

/* ---- messages show what the file holds ------------------------------------------------- */
static safeload_result open_hdr(const char *h, safeload_error *e) {
    size_t N = strlen(h), i;
    unsigned char *img = (unsigned char *)calloc(1, 8 + N);
    safeload_file *f = NULL;
    safeload_result r;
    for (i = 0; i < 8; i++) img[i] = (unsigned char)((uint64_t)N >> (8 * i));
    memcpy(img + 8, h, N);
    r = safeload_open_memory(&f, img, 8 + N, NULL, e);
    safeload_close(f);
    free(img);
    return r;
}

static void test_messages(void) {
    safeload_error e;
    /* a dtype with a NUL in it is not shown as the valid dtype before the NUL */
    CHECK(open_hdr("{\"a\":{\"dtype\":\"U8\\u0000\",\"shape\":[],\"data_offsets\":[0,0]}}", &e)
          == SAFELOAD_INVALID_JSON);
    CHECK_MSG(strstr(e.message, "unknown variant `U8\\x00`") != NULL, "%s", e.message);
    CHECK(open_hdr("{\"a\":{\"dtype\":\"F33\",\"shape\":[],\"data_offsets\":[0,0]}}", &e)
          == SAFELOAD_INVALID_JSON);
    CHECK_MSG(strstr(e.message, "unknown variant `F33`") != NULL, "%s", e.message);
    /* errors inside an entry name its tensor, inside a metadata value its key; errors between
       entries, or in a key itself, name none */
    CHECK(strcmp(e.tensor, "a") == 0);
    CHECK(open_hdr("{\"ok\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                   "\"b.w\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[1,2]}}", &e)
          == SAFELOAD_INVALID_JSON);
    CHECK_MSG(strcmp(e.tensor, "b.w") == 0 && e.offset == 8 + 82, "%s @%llu", e.tensor,
              (unsigned long long)e.offset);
    CHECK(open_hdr("{\"b\":{\"dtype\":\"U8\",\"shape\":[1]}}", &e) == SAFELOAD_INVALID_JSON);
    CHECK(strcmp(e.tensor, "b") == 0 && strstr(e.message, "data_offsets") != NULL);
    CHECK(open_hdr("{\"b\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1,2]}}", &e)
          == SAFELOAD_INVALID_JSON);
    CHECK(strcmp(e.tensor, "b") == 0);
    CHECK(open_hdr("{\"__metadata__\":{\"x\":\"1\",\"step\":1000}}", &e) == SAFELOAD_INVALID_JSON);
    CHECK_MSG(strcmp(e.tensor, "step") == 0 && e.offset == 8 + 32, "%s @%llu", e.tensor,
              (unsigned long long)e.offset);
    CHECK_MSG(strstr(e.message, " in __metadata__") != NULL, "%s", e.message);  /* says where */
    CHECK(open_hdr("{\"__metadata__\":{\"k\":\"\xff\"}}", &e) == SAFELOAD_INVALID_UTF8);
    CHECK(strcmp(e.tensor, "k") == 0);
    CHECK_MSG(strstr(e.message, " in __metadata__") != NULL, "%s", e.message);
    /* past a metadata value a fault is no key's: a trailing comma names none */
    CHECK(open_hdr("{\"__metadata__\":{\"k\":\"v\",},\"a\":1}", &e) == SAFELOAD_INVALID_JSON);
    CHECK_MSG(e.tensor[0] == 0 && strstr(e.message, "__metadata__") == NULL, "%s: %s", e.tensor,
              e.message);
    /* a tensor's error after the metadata does not say "in __metadata__" */
    CHECK(open_hdr("{\"__metadata__\":{\"k\":\"v\"},\"a\":{\"dtype\":\"F33\",\"shape\":[],"
                   "\"data_offsets\":[0,0]}}", &e) == SAFELOAD_INVALID_JSON);
    CHECK_MSG(strcmp(e.tensor, "a") == 0 && strstr(e.message, "__metadata__") == NULL, "%s",
              e.message);
    CHECK(open_hdr("{\"ok\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,0]} x}", &e)
          == SAFELOAD_INVALID_JSON);
    CHECK(e.tensor[0] == 0);                                /* between entries */
    CHECK(open_hdr("{\"__metadata__\":{\"k\":\"v\"},\"a\\q\":{}}", &e) == SAFELOAD_INVALID_JSON);
    CHECK(e.tensor[0] == 0);                                /* a bad escape in a key */
    /* names and messages are safe to print: NUL, C0, DEL and C1 (CSI) become '?' byte for
       byte; a NUL does not cut the name short */
    CHECK(open_hdr("{\"__metadata__\":{\"a\\u0000b\":\"x\",\"a\\u0000b\":\"z\"}}", &e)
          == SAFELOAD_DUPLICATE_KEY);
    CHECK_MSG(strcmp(e.tensor, "a?b") == 0, "%s", e.tensor);
    CHECK(open_hdr("{\"a\\u0001\\u001b\\u007f\\u0085\\u009bb\":{\"dtype\":\"F32\",\"shape\":[2],"
                   "\"data_offsets\":[0,4]}}", &e) == SAFELOAD_SIZE_MISMATCH);
    CHECK_MSG(strcmp(e.tensor, "a???????b") == 0, "%s", e.tensor);
    /* bidirectional controls (they reorder what a terminal shows) likewise, byte for byte;
       other non-ASCII text stays */
    CHECK(open_hdr("{\"\\u202eab\\u2066c\\u200f\\u061c\\u00e9\\u202a\\u2069\\u2065\\u202f\":{\"dtype\":"
                   "\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", &e) == SAFELOAD_SIZE_MISMATCH);
    CHECK_MSG(strcmp(e.tensor, "???ab???c?????\xc3\xa9??????\xe2\x81\xa5\xe2\x80\xaf") == 0, "%s", e.tensor);
    CHECK(open_hdr("{\"a\":{\"dtype\":\"U8\\u009b\\u007f\",\"shape\":[],\"data_offsets\":[0,0]}}", &e)
          == SAFELOAD_INVALID_JSON);
    {
        size_t i;
        for (i = 0; e.message[i]; i++)
            CHECK_MSG((unsigned char)e.message[i] >= 0x20 && (unsigned char)e.message[i] != 0x7F &&
                      !((unsigned char)e.message[i] == 0xC2 && (unsigned char)e.message[i + 1] < 0xA0),
                      "%s", e.message);
    }
    {   /* the writer's errors: a name that is not UTF-8 comes back as '?' per byte */
        static const uint64_t one = 1;
        safeload_save_tensor t;
        unsigned char b = 0;
        memset(&t, 0, sizeof t);
        t.name = "x\xff\xc3y";
        t.dtype = SAFELOAD_U8;
        t.rank = 1;
        t.shape = &one;
        t.data = &b;
        t.nbytes = 1;
        void *out;
        size_t out_n;
        CHECK(safeload_serialize(&out, &out_n, &t, 1, NULL, &e) == SAFELOAD_INVALID_NAME);
        CHECK(out == NULL && out_n == 0);
        CHECK_MSG(strcmp(e.tensor, "x??y") == 0, "%s", e.tensor);
    }
}

/* ---- well-formed files --------------------------------------------------------------- */
static void test_reference_vector(void) {
    /* upstream test_deserialization: N = 60, not a multiple of 8 */
    const char *h = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    unsigned char data[16], out[16];
    ofile o;
    const safeload_tensor *t;
    int i;
    CHECK_EQ_U64(strlen(h), 60);
    for (i = 0; i < 16; i++) data[i] = (unsigned char)(i * 17);
    o = open_okn(__LINE__, h, strlen(h), data, 16);
    if (!o.f) return;
    CHECK_EQ_U64(safeload_header_size(o.f), 60);
    CHECK_EQ_U64(safeload_data_offset(o.f), 68);
    CHECK_EQ_U64(safeload_data_size(o.f), 16);
    CHECK_EQ_U64(safeload_file_size(o.f), 84);
    CHECK_EQ_U64(safeload_tensor_count(o.f), 1);
    CHK_T(o.f, 0, "test", I32, "[2,2]", 0, 16);
    t = safeload_find(o.f, "test");
    CHECK(t && t->numel == 4 && t->file_offset == 68 && t->header_offset == 9);
    CHECK(safeload_read(o.f, t, out, sizeof out, NULL) == SAFELOAD_OK);
    tu_le(out, 16, 4);
    CHECK(memcmp(out, data, 16) == 0);
    CHECK(!safeload_has_metadata(o.f));
    CHECK(safeload_tensor_at(o.f, 1) == NULL);
    ofile_close(&o);
    expect_img(__LINE__, SRC_ALL, o.img = mkimg(h, strlen(h), data, 16, &o.n), o.n, SAFELOAD_OK, NOOFF, NULL);
    free(o.img);
}

static void test_no_alignment(void) {
    /* F64 at data offset 6, header length 61 */
    const char *h = "{" T("a","U8","[6]",0,6) "," T("b","F64","[1]",6,14) "}";
    unsigned char out[8];
    ofile o = OPEN_OK(h, 14);
    if (!o.f) return;
    CHK_T(o.f, 0, "a", U8, "[6]", 0, 6); CHK_T(o.f, 1, "b", F64, "[1]", 6, 14);
    CHECK(safeload_read(o.f, safeload_find(o.f, "b"), out, 8, NULL) == SAFELOAD_OK);
    tu_le(out, 8, 8);
    CHECK(memcmp(out, o.img + 8 + strlen(h) + 6, 8) == 0);
    {   /* a pointer into the tensor array that is not one of its elements is refused */
        const void *v = NULL;
        size_t al = 0;
        const safeload_tensor *bad = (const safeload_tensor *)(const void *)
                                     ((const char *)safeload_tensor_at(o.f, 0) + 1);
        CHECK(safeload_read(o.f, bad, out, 8, NULL) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(safeload_view(o.f, bad, &v, &al, NULL) == SAFELOAD_INVALID_ARGUMENT && v == NULL);
    }
    ofile_close(&o);
    EXPA(h, 14, OK, NOOFF);
}

static const char *const dt_names[22] = { "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2",
    "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32",
    "F32", "C64", "F64", "I64", "U64" };
static const unsigned dt_bits[22] = { 8,4,6,6,8,8,8,8,8,8,8,16,16,16,16,32,32,32,64,64,64,64 };

static void test_dtypes(void) {
    char h[8192];
    size_t len = 0, off = 0;
    int i;
    ofile o;
    CHECK_EQ_U64(SAFELOAD_DTYPE_COUNT, 23);
    for (i = 0; i < 22; i++) {
        safeload_dtype d = (safeload_dtype)(i + 1);
        CHECK_STR(safeload_dtype_name(d), dt_names[i]);
        CHECK_EQ_U64(safeload_dtype_from_name(dt_names[i], strlen(dt_names[i])), d);
        CHECK_EQ_U64(safeload_dtype_bits(d), dt_bits[i]);
        CHECK_EQ_U64(safeload_dtype_size(d), dt_bits[i] % 8 ? 0 : dt_bits[i] / 8);
        /* a prefix or an extension of a name is not that name */
        CHECK(safeload_dtype_from_name(dt_names[i], strlen(dt_names[i]) - 1) != d);
    }
    CHECK(safeload_dtype_name(SAFELOAD_DTYPE_NONE) == NULL);
    CHECK(safeload_dtype_name(SAFELOAD_DTYPE_COUNT) == NULL);
    CHECK(safeload_dtype_name((safeload_dtype)1000) == NULL);
    CHECK_EQ_U64(safeload_dtype_bits(SAFELOAD_DTYPE_NONE), 0);
    CHECK_EQ_U64(safeload_dtype_bits(SAFELOAD_DTYPE_COUNT), 0);
    CHECK_EQ_U64(safeload_dtype_size(SAFELOAD_DTYPE_NONE), 0);
    CHECK_EQ_U64(safeload_dtype_size(SAFELOAD_DTYPE_COUNT), 0);
    CHECK_EQ_U64(safeload_dtype_from_name("F32x", 4), SAFELOAD_DTYPE_NONE);
    CHECK_EQ_U64(safeload_dtype_from_name("F32x", 3), SAFELOAD_F32);
    CHECK_EQ_U64(safeload_dtype_from_name("f32", 3), SAFELOAD_DTYPE_NONE);
    CHECK_EQ_U64(safeload_dtype_from_name("", 0), SAFELOAD_DTYPE_NONE);
    CHECK_EQ_U64(safeload_dtype_from_name("F8_E4M3FN", 9), SAFELOAD_DTYPE_NONE);
    CHECK_EQ_U64(safeload_dtype_from_name("NONE", 4), SAFELOAD_DTYPE_NONE);
    CHECK_EQ_U64(safeload_dtype_from_name("F16\0", 4), SAFELOAD_DTYPE_NONE);
    /* every dtype in one file, shape [2,4] (whole bytes for the sub-byte ones), in reverse
       header order */
    len = (size_t)sprintf(h, "{");
    for (i = 21; i >= 0; i--) {
        size_t nb = 8 * dt_bits[i] / 8, b = 0;
        int j;
        for (j = 0; j < i; j++) b += 8 * dt_bits[j] / 8;
        len += (size_t)sprintf(h + len, "%s\"t_%s\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[%u,%u]}",
                               i == 21 ? "" : ",", dt_names[i], dt_names[i], (unsigned)b, (unsigned)(b + nb));
        off += nb;
    }
    strcpy(h + len, "}");
    o = OPEN_OK(h, off);
    if (!o.f) return;
    CHECK_EQ_U64(safeload_tensor_count(o.f), 22);
    off = 0;
    for (i = 0; i < 22; i++) {
        char nm[64];
        size_t nb = dt_bits[i];
        char needle[80];
        sprintf(nm, "t_%s", dt_names[i]);
        sprintf(needle, "\"%s\":", nm);
        chk_t(__LINE__, o.f, (size_t)i, nm, (safeload_dtype)(i + 1), "[2,4]", off, off + nb);
        CHECK_EQ_U64(safeload_tensor_at(o.f, (size_t)i)->header_offset, at(h, needle, 1));
        off += nb;
    }
    ofile_close(&o);
}

/* ---- shapes, order, metadata, lookup ---------------------------------------------------- */
static void test_ranks(void) {
    char h[16384];
    size_t len, off = 0;
    int r, i;
    ofile o;
    /* ranks 0..8, dims 2 (U8: 2^r bytes) */
    len = (size_t)sprintf(h, "{");
    for (r = 0; r <= 8; r++) {
        len += (size_t)sprintf(h + len, "%s\"r%d\":{\"dtype\":\"U8\",\"shape\":[", r ? "," : "", r);
        for (i = 0; i < r; i++) len += (size_t)sprintf(h + len, i ? ",2" : "2");
        len += (size_t)sprintf(h + len, "],\"data_offsets\":[%u,%u]}", (unsigned)off, (unsigned)(off + (1u << r)));
        off += 1u << r;
    }
    strcpy(h + len, "}");
    o = OPEN_OK(h, off);
    if (o.f) {
        off = 0;
        for (r = 0; r <= 8; r++) {
            const safeload_tensor *t = safeload_tensor_at(o.f, (size_t)r);
            CHECK(t && t->rank == (uint32_t)r && t->numel == (1u << r) && t->nbytes == (1u << r));
            CHECK(t && t->begin == off);
            off += 1u << r;
        }
    }
    ofile_close(&o);
    /* 1000 dimensions of 1, and 1000 with a 0 in the middle */
    len = (size_t)sprintf(h, "{\"big\":{\"dtype\":\"F16\",\"shape\":[");
    for (i = 0; i < 1000; i++) len += (size_t)sprintf(h + len, i ? ",%d" : "%d", i == 500 ? 3 : 1);
    len += (size_t)sprintf(h + len, "],\"data_offsets\":[0,6]},\"zero\":{\"dtype\":\"F16\",\"shape\":[");
    for (i = 0; i < 1000; i++) len += (size_t)sprintf(h + len, i ? ",%d" : "%d", i == 0 ? 7 : i == 999 ? 0 : 1);
    strcpy(h + len, "],\"data_offsets\":[6,6]}}");
    o = OPEN_OK(h, 6);
    if (o.f) {
        const safeload_tensor *t = safeload_find(o.f, "big");
        CHECK(t && t->rank == 1000 && t->numel == 3 && t->nbytes == 6 && t->shape[500] == 3 && t->shape[999] == 1);
        t = safeload_find(o.f, "zero");
        CHECK(t && t->rank == 1000 && t->numel == 0 && t->shape[0] == 7 && t->shape[999] == 0);
    }
    ofile_close(&o);
    /* scalars of several dtypes */
    o = OPEN_OK("{" T("s1","F64","[]",0,8) "," T("s2","BOOL","[]",8,9) "," T("s3","BF16","[]",9,11) "}", 11);
    CHK_T(o.f, 0, "s1", F64, "[]", 0, 8); CHK_T(o.f, 1, "s2", BOOL, "[]", 8, 9);
    CHK_T(o.f, 2, "s3", BF16, "[]", 9, 11);
    ofile_close(&o);
}

static void test_order(void) {
    const char *h = "{\"__metadata__\":{\"zeta\":\"1\",\"alpha\":\"2\",\"mid\":\"3\"},"
        T("c","F32","[2]",12,20) "," T("a","F16","[3]",6,12) "," T("b","U8","[6]",0,6) ","
        T("d","I64","[1]",20,28) "}";
    ofile o = OPEN_OK(h, 28);
    const char *names[4] = { "b", "a", "c", "d" };
    const safeload_kv *kv;
    size_t i;
    if (!o.f) return;
    CHECK_EQ_U64(safeload_tensor_count(o.f), 4);
    for (i = 0; i < 4; i++) {
        const safeload_tensor *t = safeload_tensor_at(o.f, i);
        char needle[16];
        sprintf(needle, "\"%s\":", names[i]);
        CHECK(t && strcmp(t->name, names[i]) == 0 && t->index == i);
        CHECK(t && t->header_offset == at(h, needle, 1));
        CHECK(t && t->file_offset == 8 + strlen(h) + t->begin);
        CHECK(t && safeload_find(o.f, names[i]) == t);
    }
    CHK_T(o.f, 0, "b", U8, "[6]", 0, 6); CHK_T(o.f, 1, "a", F16, "[3]", 6, 12);
    CHK_T(o.f, 2, "c", F32, "[2]", 12, 20); CHK_T(o.f, 3, "d", I64, "[1]", 20, 28);
    /* metadata: header order, lookup */
    CHECK(safeload_has_metadata(o.f));
    CHECK_EQ_U64(safeload_metadata_count(o.f), 3);
    kv = safeload_metadata_at(o.f, 0); CHECK(kv && strcmp(kv->key, "zeta") == 0 && strcmp(kv->value, "1") == 0);
    kv = safeload_metadata_at(o.f, 1); CHECK(kv && strcmp(kv->key, "alpha") == 0 && kv->key_len == 5);
    kv = safeload_metadata_at(o.f, 2); CHECK(kv && strcmp(kv->key, "mid") == 0 && kv->value_len == 1);
    CHECK(safeload_metadata_at(o.f, 3) == NULL);
    kv = safeload_metadata_find(o.f, "mid"); CHECK(kv && strcmp(kv->value, "3") == 0);
    CHECK(safeload_metadata_find(o.f, "mi") == NULL);
    CHECK(safeload_metadata_find(o.f, "midd") == NULL);
    CHECK(safeload_metadata_find(o.f, "c") == NULL);
    CHECK(safeload_find(o.f, "zeta") == NULL);
    CHECK(safeload_find(o.f, "__metadata__") == NULL);
    ofile_close(&o);
}

static void test_find(void) {
    const char *h;
    ofile o;
    const safeload_tensor *t;
    h = "{" T("a.weight","U8","[1]",0,1) "," T("a.weight_scale_inv","U8","[1]",1,2) ","
        T("x\\\"y","U8","[1]",2,3) "," T("\\/\\u00e9\\t","U8","[1]",3,4) "," T("a","U8","[1]",4,5) "}";
    o = OPEN_OK(h, 5);
    if (!o.f) return;
    t = safeload_find(o.f, "a.weight"); CHECK(t && t->begin == 0 && strcmp(t->name, "a.weight") == 0);
    t = safeload_find(o.f, "a.weight_scale_inv"); CHECK(t && t->begin == 1);
    t = safeload_find(o.f, "x\"y"); CHECK(t && t->begin == 2 && t->name_len == 3);
    t = safeload_find(o.f, "/\xc3\xa9\t"); CHECK(t && t->begin == 3 && t->name_len == 4);
    t = safeload_find(o.f, "a"); CHECK(t && t->begin == 4);
    CHECK(safeload_find(o.f, "a.weigh") == NULL);
    CHECK(safeload_find(o.f, "a.weight_scale") == NULL);
    CHECK(safeload_find(o.f, "a.weight_scale_inv ") == NULL);
    CHECK(safeload_find(o.f, "x\\\"y") == NULL);          /* the escaped form is not the name */
    CHECK(safeload_find(o.f, "") == NULL);
    CHECK(safeload_find(o.f, "A") == NULL);
    t = safeload_find_n(o.f, "a.weight_scale_inv", 8); CHECK(t && t->begin == 0);
    t = safeload_find_n(o.f, "a.weightXYZ", 8); CHECK(t && t->begin == 0);
    t = safeload_find_n(o.f, "abc", 1); CHECK(t && t->begin == 4);
    CHECK(safeload_find_n(o.f, "a.weight", 7) == NULL);
    CHECK(safeload_find_n(o.f, "a.weight", 0) == NULL);
    ofile_close(&o);
    /* find_n with embedded NULs cannot match a name (names have none), and the empty name */
    o = OPEN_OK("{" T("","U8","[1]",0,1) "," T("b","U8","[1]",1,2) "}", 2);
    t = safeload_find(o.f, ""); CHECK(t && t->begin == 0 && t->name_len == 0);
    t = safeload_find_n(o.f, "b", 0); CHECK(t && t->begin == 0);
    CHECK(safeload_find_n(o.f, "b\0", 2) == NULL);
    ofile_close(&o);
}

/* ---- read, view, readers -------------------------------------------------------------- */
static void test_read(void) {
    const char *h = "{" T("w","F32","[3,5]",0,60) "," T("z","I8","[0]",60,60) "," T("s","BF16","[]",60,62) "}";
    size_t n, k;
    unsigned char *img = mkimg(h, strlen(h), NULL, 62, &n);
    int s;
    for (s = 1; s <= 4; s <<= 1) {
        safeload_file *f = NULL;
        safeload_error err;
        rd_user u;
        unsigned char buf[128];
        const safeload_tensor *t;
        if (open_src(s, &f, img, n, &u, &err) != SAFELOAD_OK) { CHECK_MSG(0, "open %s", src_name(s)); continue; }
        t = safeload_find(f, "w");
        for (k = 0; k < 8; k++) {           /* repeated, so that readers give different short reads */
            memset(buf, 0xee, sizeof buf);
            CHECK(safeload_read(f, t, buf, 60, &err) == SAFELOAD_OK);
            tu_le(buf, 60, 4);              /* host order -> the file's little-endian bytes */
            CHECK_MSG(memcmp(buf, img + 8 + strlen(h), 60) == 0 && buf[60] == 0xee, "read bytes (%s)", src_name(s));
        }
        CHECK(safeload_read(f, t, buf, sizeof buf, NULL) == SAFELOAD_OK);
        tu_le(buf, 60, 4);
        CHECK(memcmp(buf, img + n - 62, 60) == 0);
        memset(&err, 0, sizeof err);
        CHECK(safeload_read(f, t, buf, 59, &err) == SAFELOAD_BUFFER_TOO_SMALL);
        CHECK(err.code == SAFELOAD_BUFFER_TOO_SMALL && strcmp(err.tensor, "w") == 0);
        CHECK(safeload_read(f, t, buf, 0, NULL) == SAFELOAD_BUFFER_TOO_SMALL);
        t = safeload_find(f, "z");
        CHECK(safeload_read(f, t, buf, 0, NULL) == SAFELOAD_OK);
        t = safeload_find(f, "s");
        CHECK(safeload_read(f, t, buf, 2, NULL) == SAFELOAD_OK);
        tu_le(buf, 2, 2);
        CHECK(memcmp(buf, img + n - 2, 2) == 0);
        CHECK(safeload_read(f, t, buf, 1, NULL) == SAFELOAD_BUFFER_TOO_SMALL);
        CHECK_EQ_U64(safeload_file_size(f), n);
        if (s == SRC_FILE) CHECK_STR(safeload_file_path(f), g_tmp_path);
        safeload_close(f);
        if (s == SRC_READER) CHECK_EQ_U64(u.closed, 1);
    }
    free(img);
}

static size_t pow2_align(const void *p) {
    uintptr_t a = (uintptr_t)p;
    size_t al = 1;
    while (al < 4096 && (a & (2 * al - 1)) == 0) al *= 2;
    return al;
}

static void test_view(void) {
    const char *h = "{" T("a","U8","[3]",0,3) "," T("b","F64","[2]",3,19) "," T("c","U8","[45]",19,64) "}";
    size_t hl = strlen(h), n = 8 + hl + 64, shift;
    unsigned char *raw = (unsigned char *)malloc(n + 8192 + 64);
    unsigned char *img;
    for (shift = 0; shift < 70; shift += 7) {
        safeload_file *f = NULL;
        const void *p = NULL;
        size_t al = 0;
        int i;
        /* the image starts at (4096-aligned base) + shift */
        img = (unsigned char *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095) + shift;
        put_le64(img, hl); memcpy(img + 8, h, hl); pat(img + 8 + hl, 64, 0);
        if (safeload_open_memory(&f, img, n, NULL, NULL) != SAFELOAD_OK) { CHECK(0); continue; }
        for (i = 0; i < 3; i++) {
            const safeload_tensor *t = safeload_tensor_at(f, (size_t)i);
            p = NULL; al = 0;
            CHECK(safeload_view(f, t, &p, &al, NULL) == SAFELOAD_OK);
            CHECK_MSG(p == img + t->file_offset, "view pointer (shift %u)", (unsigned)shift);
            CHECK_MSG(al == pow2_align(img + t->file_offset), "view alignment %u want %u", (unsigned)al,
                      (unsigned)pow2_align(img + t->file_offset));
        }
        safeload_close(f);
    }
    free(raw);
    /* file source: a mapping; reader source: not supported */
    img = mkimg(h, hl, NULL, 64, &n);
    {
        safeload_file *f = NULL;
        rd_user u;
        safeload_error err;
        const void *p = NULL;
        size_t al = 0;
        int i;
        if (open_src(SRC_FILE, &f, img, n, &u, &err) == SAFELOAD_OK) {
            for (i = 0; i < 3; i++) {
                const safeload_tensor *t = safeload_tensor_at(f, (size_t)i);
                CHECK(safeload_view(f, t, &p, &al, NULL) == SAFELOAD_OK);
                CHECK(p && memcmp(p, img + t->file_offset, t->nbytes) == 0);
                CHECK(p && al >= 1 && al <= 4096 && (al & (al - 1)) == 0 && al == pow2_align(p));
            }
            safeload_close(f);
        } else CHECK(0);
        if (open_src(SRC_READER, &f, img, n, &u, &err) == SAFELOAD_OK) {
            CHECK(safeload_view(f, safeload_tensor_at(f, 0), &p, &al, &err) != SAFELOAD_OK);
            safeload_close(f);
        } else CHECK(0);
    }
    free(img);
}

static void test_reader_errors(void) {
    const char *h = "{" T("w","F32","[5]",0,20) "}";
    size_t n;
    unsigned char *img = mkimg(h, strlen(h), NULL, 20, &n);
    unsigned char buf[32], pad[100];
    safeload_reader r;
    rd_user u;
    safeload_file *f = NULL;
    safeload_error err;
    safeload_result res;
    /* read() < 0 while opening */
    r = mk_reader(&u, img, n, 1);
    memset(&err, 0, sizeof err);
    CHECK(safeload_open_reader(&f, &r, NULL, &err) == SAFELOAD_IO_ERROR && err.code == SAFELOAD_IO_ERROR);
    CHECK_STR(err.file, "test-reader");
    /* read() < 0 after opening */
    r = mk_reader(&u, img, n, 0);
    if (safeload_open_reader(&f, &r, NULL, &err) == SAFELOAD_OK) {
        u.mode = 1;
        CHECK(safeload_read(f, safeload_find(f, "w"), buf, sizeof buf, &err) == SAFELOAD_IO_ERROR);
        u.mode = 2; u.eof_at = n - 5;           /* the size says more than there is */
        res = safeload_read(f, safeload_find(f, "w"), buf, sizeof buf, &err);
        CHECK_MSG(res == SAFELOAD_IO_ERROR || res == SAFELOAD_UNEXPECTED_EOF, "short source: %s", safeload_result_id(res));
        u.mode = 0;
        CHECK(safeload_read(f, safeload_find(f, "w"), buf, sizeof buf, &err) == SAFELOAD_OK);
        safeload_close(f);
    } else CHECK(0);
    /* size says 100, read() returns 0 from 50 on (inside the header) */
    put_le64(pad, 92); memset(pad + 8, ' ', 92); memcpy(pad + 8, "{}", 2);
    r = mk_reader(&u, pad, 100, 2); u.eof_at = 50;
    f = NULL;
    res = safeload_open_reader(&f, &r, NULL, &err);
    CHECK_MSG(res == SAFELOAD_IO_ERROR || res == SAFELOAD_UNEXPECTED_EOF, "EOF at 50 of 100: %s", safeload_result_id(res));
    if (res == SAFELOAD_OK) safeload_close(f);
    r = mk_reader(&u, pad, 100, 2); u.eof_at = 100;
    CHECK(safeload_open_reader(&f, &r, NULL, &err) == SAFELOAD_OK);
    if (f) safeload_close(f);
    /* reported file names */
    put_le64(pad, 5);
    CHECK(safeload_open_memory(&f, pad, 10, NULL, &err) == SAFELOAD_INVALID_HEADER_LENGTH);
    CHECK_STR(err.file, "<memory>");
    write_file(g_tmp_path, pad, 10);
    CHECK(safeload_open(&f, g_tmp_path, NULL, &err) == SAFELOAD_INVALID_HEADER_LENGTH);
    CHECK_STR(err.file, g_tmp_path);
    unlink(g_tmp_path);
    res = safeload_open(&f, "/nonexistent-dir-safeload/x.safetensors", NULL, &err);
    CHECK_MSG(res == SAFELOAD_IO_ERROR, "open missing file: %s", safeload_result_id(res));
    CHECK(err.code == res && f == NULL);
    res = safeload_open(&f, "/tmp", NULL, &err);          /* a directory */
    CHECK_MSG(res != SAFELOAD_OK && f == NULL, "open a directory: %s", safeload_result_id(res));
    free(img);
}

/* ---- check_keys, result ids -------------------------------------------------------------- */
static void test_check_keys(void) {
    const char *h = "{" T("c","U8","[1]",2,3) "," T("a","U8","[1]",1,2) "," T("b","U8","[1]",0,1) ","
        T("d","U8","[1]",3,4) "," T("e","U8","[0]",4,4) "}";
    ofile o = OPEN_OK(h, 4);
    const char *exp1[] = { "a", "x", "a", "y", "c", "x", "e", "y", "zz" };
    const char *exp2[] = { "e", "d", "c", "b", "a", "a" };
    safeload_key_report rep;
    safeload_error err;
    if (!o.f) return;
    memset(&rep, 0, sizeof rep);
    CHECK(safeload_check_keys(o.f, exp1, 9, &rep, &err) == SAFELOAD_OK);
    CHECK_EQ_U64(rep.missing_count, 3);
    if (rep.missing_count == 3) {
        CHECK(rep.missing[0] == exp1[1]); CHECK(rep.missing[1] == exp1[3]); CHECK(rep.missing[2] == exp1[8]);
    }
    CHECK_EQ_U64(rep.unexpected_count, 2);
    if (rep.unexpected_count == 2) {       /* offset order: b (0), d (3) */
        CHECK_STR(rep.unexpected[0], "b"); CHECK_STR(rep.unexpected[1], "d");
        CHECK(rep.unexpected[0] == safeload_find(o.f, "b")->name);
    }
    safeload_key_report_free(&rep);
    memset(&rep, 0, sizeof rep);
    CHECK(safeload_check_keys(o.f, exp2, 6, &rep, &err) == SAFELOAD_OK);
    CHECK_EQ_U64(rep.missing_count, 0); CHECK_EQ_U64(rep.unexpected_count, 0);
    safeload_key_report_free(&rep);
    memset(&rep, 0, sizeof rep);
    CHECK(safeload_check_keys(o.f, NULL, 0, &rep, &err) == SAFELOAD_OK);
    CHECK_EQ_U64(rep.missing_count, 0); CHECK_EQ_U64(rep.unexpected_count, 5);
    if (rep.unexpected_count == 5) {
        CHECK_STR(rep.unexpected[0], "b"); CHECK_STR(rep.unexpected[1], "a"); CHECK_STR(rep.unexpected[2], "c");
        CHECK_STR(rep.unexpected[3], "d"); CHECK_STR(rep.unexpected[4], "e");
    }
    safeload_key_report_free(&rep);
    ofile_close(&o);
    o = OPEN_OK("{}", 0);
    memset(&rep, 0, sizeof rep);
    CHECK(safeload_check_keys(o.f, exp1, 9, &rep, &err) == SAFELOAD_OK);
    CHECK_EQ_U64(rep.missing_count, 6); CHECK_EQ_U64(rep.unexpected_count, 0);
    if (rep.missing_count == 6) {
        CHECK_STR(rep.missing[0], "a"); CHECK_STR(rep.missing[1], "x"); CHECK_STR(rep.missing[2], "y");
        CHECK_STR(rep.missing[3], "c"); CHECK_STR(rep.missing[4], "e"); CHECK_STR(rep.missing[5], "zz");
    }
    safeload_key_report_free(&rep);
    memset(&rep, 0, sizeof rep);
    CHECK(safeload_check_keys(o.f, NULL, 0, &rep, &err) == SAFELOAD_OK);
    CHECK_EQ_U64(rep.missing_count, 0); CHECK_EQ_U64(rep.unexpected_count, 0);
    safeload_key_report_free(&rep);
    {   /* a count past the dedup table's 32-bit index is refused before a name is read */
        const char *one[1] = {"a"};
        CHECK(safeload_check_keys(o.f, one, SIZE_MAX, &rep, &err) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(rep.missing == NULL && strstr(err.message, "too many names") != NULL);
    }
    {   /* a NULL name is refused (it would come back in missing[] for the caller to print) */
        const char *withnull[3] = {"a", NULL, "b"};
        CHECK(safeload_check_keys(o.f, withnull, 3, &rep, &err) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(rep.missing == NULL && rep.missing_count == 0 && strstr(err.message, "expected[1]"));
    }
    ofile_close(&o);
}

/* ---- NOT_SAFETENSORS: the formats downloaded by mistake, named from their first bytes --- */

/* open the n bytes at img from every source: the id, offset 0, and a message holding want */
static void expect_kind(int line, const void *img, size_t n, safeload_result code,
                        const char *want) {
    int s;
    for (s = 1; s <= 4; s <<= 1) {
        safeload_file *f = NULL;
        safeload_error err;
        rd_user u;
        safeload_result r;
        memset(&err, 0x5a, sizeof err);
        r = open_src(s, &f, (const unsigned char *)img, n, &u, &err);
        CHECK_MSG(r == code, "line %d (%s): got %s want %s (%s)", line, src_name(s),
                  safeload_result_id(r), safeload_result_id(code),
                  r == SAFELOAD_OK ? "" : err.message);
        if (r == code && r != SAFELOAD_OK) {
            CHECK_MSG(err.code == code && err.offset == 0 && err.tensor[0] == 0,
                      "line %d (%s): offset %llu tensor '%s'", line, src_name(s),
                      (unsigned long long)err.offset, err.tensor);
            CHECK_MSG(strstr(err.message, want) != NULL, "line %d (%s): message '%s' lacks '%s'",
                      line, src_name(s), err.message, want);
            CHECK_MSG(strcmp(err.file, s == SRC_MEM ? "<memory>" : s == SRC_FILE ? g_tmp_path
                                                                             : "test-reader") == 0,
                      "line %d (%s): file '%s'", line, src_name(s), err.file);
        }
        if (f) safeload_close(f);
    }
}
#define KIND(lit, want) expect_kind(__LINE__, lit, sizeof lit - 1, SAFELOAD_NOT_SAFETENSORS, want)

static void test_not_safetensors(void) {
    static const char lfs[] = "version https://git-lfs.github.com/spec/v1\n"
                              "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                              "size 12345\n";
    unsigned char big[4096], *img;
    size_t n, i;
    int p;
    KIND("<!DOCTYPE html><html><head><title>Sign in</title></head></html>\n", "an HTML page");
    KIND("\r\n  \t<html lang=\"en\"><body>404 Not Found</body></html>", "the download failed");
    KIND("\xEF\xBB\xBF<!doctype HTML>\n<p>", "an HTML page");
    KIND("<HtMl>", "an HTML page");                       /* shorter than the length prefix */
    expect_kind(__LINE__, lfs, sizeof lfs - 1, SAFELOAD_NOT_SAFETENSORS, "`git lfs pull`");
    KIND("PK\x03\x04\x14\x00\x00\x00\x08\x00 archive/data.pkl and more bytes", "a ZIP archive");
    KIND("GGUF\x03\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00", "a GGUF file");
    KIND("GGUF", "a GGUF file");
    KIND("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n",
         "a NumPy .npy array");
    for (p = 2; p <= 5; p++) {           /* torch.save's legacy format: a raw pickle */
        char want[32];
        memset(big, 0, sizeof big);
        big[0] = 0x80; big[1] = (unsigned char)p; big[2] = 0x8a; big[3] = 0x0a;
        memcpy(big + 4, "l\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03.", 18);
        snprintf(want, sizeof want, "pickle (protocol %d)", p);
        expect_kind(__LINE__, big, 200, SAFELOAD_NOT_SAFETENSORS, want);
    }
    /* not these kinds: the parser's own answer stands */
    expect_kind(__LINE__, "\x80\x01\x8a\x0a\x01\x02\x03\x04\x05", 9, SAFELOAD_HEADER_TOO_LARGE, "");
    expect_kind(__LINE__, "<htm", 4, SAFELOAD_HEADER_TOO_SMALL, "");
    expect_kind(__LINE__, "x <html> and more bytes after it", 32, SAFELOAD_HEADER_TOO_LARGE, "");
    expect_kind(__LINE__, "version https://git-lf", 22, SAFELOAD_HEADER_TOO_LARGE, "");

    /* A valid safetensors file whose length prefix reads as a pickle's start: a 640-, 896-,
       1152- or 1408-byte header is 80 02..05 00 00 00 00 00 00. It loads; damaged, it keeps
       the parser's own error. */
    for (p = 2; p <= 5; p++) {
        size_t hlen = 0x80 + 256 * (size_t)p;
        char hdr[2048];
        safeload_file *f = NULL;
        safeload_error err;
        memset(hdr, ' ', sizeof hdr);
        memcpy(hdr, "{" ENT_A "}", strlen("{" ENT_A "}"));
        img = mkimg(hdr, hlen, NULL, 4, &n);
        CHECK(img[0] == 0x80 && img[1] == p && img[2] == 0);
        expect_img(__LINE__, SRC_ALL, img, n, SAFELOAD_OK, NOOFF, NULL);
        CHECK(safeload_open_memory(&f, img, n, NULL, &err) == SAFELOAD_OK &&
              safeload_find(f, "a") != NULL);
        safeload_close(f);
        img[8 + 3] = 'X';                                /* "a" -> "X": still a header */
        img[8 + 1] = '[';
        expect_img(__LINE__, SRC_ALL, img, n, SAFELOAD_INVALID_JSON, JSONOFF, NULL);
        free(img);
        /* cut: the data is short, the header is whole */
        img = mkimg(hdr, hlen, NULL, 2, &n);
        expect_img(__LINE__, SRC_ALL, img, n, SAFELOAD_INCOMPLETE_BUFFER, NOOFF, NULL);
        free(img);
    }
    /* "PK\3\4" as a length is 67,324,752: a valid file with that header is a ZIP's start too */
    {
        size_t hlen = 0x04034B50u;
        char *hdr = (char *)malloc(hlen);
        safeload_file *f = NULL;
        safeload_error err;
        if (hdr) {
            memset(hdr, ' ', hlen);
            memcpy(hdr, "{" ENT_A "}", strlen("{" ENT_A "}"));
            g_no_corpus++;
            img = mkimg(hdr, hlen, NULL, 4, &n);
            g_no_corpus--;
            free(hdr);
            CHECK(memcmp(img, "PK\x03\x04\0\0\0\0", 8) == 0);
            CHECK(safeload_open_memory(&f, img, n, NULL, &err) == SAFELOAD_OK &&
                  safeload_tensor_count(f) == 1);
            safeload_close(f);
            free(img);
        }
    }
    /* whitespace before the '{' of a damaged header: still safetensors */
    for (i = 0; i < sizeof big; i++) big[i] = ' ';
    img = mkimg((const char *)big, 100, NULL, 0, &n);
    img[8 + 99] = '<';
    expect_img(__LINE__, SRC_MEM, img, n, SAFELOAD_INVALID_JSON, JSONOFF, NULL);
    free(img);
}

static void test_result_ids(void) {
    int count = 0;
#define X(id, msg) CHECK_STR(safeload_result_id(SAFELOAD_##id), #id); \
    CHECK_STR(safeload_result_message(SAFELOAD_##id), msg); CHECK_EQ_U64(SAFELOAD_##id, count); count++;
    SAFELOAD_RESULT_TABLE(X)
#undef X
    CHECK_EQ_U64(count, SAFELOAD_RESULT_COUNT);
    CHECK_EQ_U64(SAFELOAD_OK, 0);
    CHECK_STR(safeload_result_id(SAFELOAD_INVALID_JSON), "INVALID_JSON");
    CHECK_STR(safeload_result_id(SAFELOAD_HEADER_TOO_SMALL), "HEADER_TOO_SMALL");
    CHECK_STR(safeload_result_id(SAFELOAD_INCOMPLETE_BUFFER), "INCOMPLETE_BUFFER");
    CHECK_STR(safeload_result_id(SAFELOAD_HOOK_FAILED), "HOOK_FAILED");
    CHECK_STR(safeload_result_id(SAFELOAD_NOT_SAFETENSORS), "NOT_SAFETENSORS");
    (void)safeload_result_id(SAFELOAD_RESULT_COUNT);   /* must not crash */
    (void)safeload_result_message((safeload_result)-1);
}

/* ---- 100,000 tensors ------------------------------------------------------------------ */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_many(void) {
    enum { L = 1000, E = 100, NT = L * E };
    char (*names)[64] = (char (*)[64])malloc((size_t)NT * 64);
    safeload_save_tensor *st = (safeload_save_tensor *)calloc(NT, sizeof *st);
    static const uint64_t shape1[1] = { 2 };
    static const unsigned char bytes[2] = { 1, 2 };
    void *img = NULL;
    size_t n = 0, i, found = 0;
    safeload_file *f = NULL;
    safeload_error err;
    double t0, t1;
    for (i = 0; i < NT; i++) {
        sprintf(names[i], "model.layers.%u.mlp.experts.%u.gate_proj.weight", (unsigned)(i / E), (unsigned)(i % E));
        st[i].name = names[i]; st[i].dtype = SAFELOAD_U8; st[i].rank = 1; st[i].shape = shape1;
        st[i].data = bytes; st[i].nbytes = 2;
    }
    CHECK(safeload_serialize(&img, &n, st, NT, NULL, &err) == SAFELOAD_OK);
    if (!img) goto done;
    t0 = now_s();
    CHECK(safeload_open_memory(&f, img, n, NULL, &err) == SAFELOAD_OK);
    t1 = now_s();
    if (!f) goto done;
    printf("  100k tensors: header %llu bytes, open %.1f ms\n", (unsigned long long)safeload_header_size(f),
           (t1 - t0) * 1e3);
    CHECK_EQ_U64(safeload_tensor_count(f), NT);
    t0 = now_s();
    for (i = 0; i < NT; i++) {
        const safeload_tensor *t = safeload_find(f, names[i]);
        found += t && t->nbytes == 2 && strcmp(t->name, names[i]) == 0;
    }
    t1 = now_s();
    CHECK_EQ_U64(found, NT);
    printf("  100k finds: %.1f ms\n", (t1 - t0) * 1e3);
    /* a guard against linear lookups, not a benchmark (make bench measures): a scan would
       be ~5e9 name compares, far past 2 s, while this must pass under qemu and sanitizers */
    CHECK_MSG(t1 - t0 < 2.0, "100k finds took %.3f s", t1 - t0);
    CHECK(safeload_find(f, "model.layers.1000.mlp.experts.0.gate_proj.weight") == NULL);
    CHECK(safeload_find(f, "model.layers.0.mlp.experts.100.gate_proj.weight") == NULL);
    /* writer order is by name bytewise: offsets follow it */
    CHECK_STR(safeload_tensor_at(f, 0)->name, "model.layers.0.mlp.experts.0.gate_proj.weight");
    CHECK_STR(safeload_tensor_at(f, 1)->name, "model.layers.0.mlp.experts.1.gate_proj.weight");
    CHECK_STR(safeload_tensor_at(f, 2)->name, "model.layers.0.mlp.experts.10.gate_proj.weight");
    for (i = 0; i < NT; i++) {
        const safeload_tensor *t = safeload_tensor_at(f, i);
        if (t->index != i || t->begin != 2 * i) { CHECK_MSG(0, "tensor %u out of place", (unsigned)i); break; }
    }
    safeload_close(f);
done:
    safeload_free(img, NULL);
    free(st);
    free(names);
}

/* ---- boundaries for block-wise (SIMD) scanners --------------------------------------- */
static void test_block_boundaries(void) {
    char h[4096];
    size_t L, pl, k;
    const char *bad[] = { "\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82", "\xf0\x9f\x98", "\x80", "\xf4\x90\x80\x80" };
    const char *good[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf" };
    for (L = 0; L < 140; L++) {
        char fill[256];
        memset(fill, 'a', L); fill[L] = 0;
        /* invalid sequences at every position of a long string */
        for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            size_t n = (size_t)sprintf(h, "{\"__metadata__\":{\"k\":\"%s%s\"}}", fill, bad[k]);
            pl = strlen("{\"__metadata__\":{\"k\":\"") + L;
            expect_hdr(__LINE__, SRC_MEM, h, n, 0, SAFELOAD_INVALID_UTF8, 8 + pl, NULL);
        }
        /* valid ones straddling every block boundary; value_len checked */
        for (k = 0; k < sizeof good / sizeof good[0]; k++) {
            size_t n = (size_t)sprintf(h, "{\"__metadata__\":{\"k\":\"%s%s\"}}", fill, good[k]);
            ofile o = open_okn(__LINE__, h, n, NULL, 0);
            const safeload_kv *kv = o.f ? safeload_metadata_find(o.f, "k") : NULL;
            CHECK(kv && kv->value_len == L + strlen(good[k]) && memcmp(kv->value + L, good[k], strlen(good[k])) == 0);
            ofile_close(&o);
        }
        /* escapes and quotes at every position */
        {
            size_t n = (size_t)sprintf(h, "{\"__metadata__\":{\"k\":\"%s\\\\\",\"j\":\"%s\\\"\\\\\\\"\"}}", fill, fill);
            ofile o = open_okn(__LINE__, h, n, NULL, 0);
            const safeload_kv *kv = o.f ? safeload_metadata_find(o.f, "k") : NULL;
            CHECK(kv && kv->value_len == L + 1 && kv->value[L] == '\\');
            kv = o.f ? safeload_metadata_find(o.f, "j") : NULL;
            CHECK(kv && kv->value_len == L + 3 && memcmp(kv->value + L, "\"\\\"", 3) == 0);
            ofile_close(&o);
        }
        /* a raw control character at every position */
        {
            size_t n = (size_t)sprintf(h, "{\"__metadata__\":{\"k\":\"%s\x1f\"}}", fill);
            expect_hdr(__LINE__, SRC_MEM, h, n, 0, SAFELOAD_INVALID_JSON, JSONOFF, NULL);
        }
        /* whitespace runs: valid, then with one bad character at the end */
        {
            char ws[256];
            for (k = 0; k < L; k++) ws[k] = " \t\r\n"[k % 4];
            ws[L] = 0;
            sprintf(h, "%s{%s}%s", ws, ws, ws); OKH(h, 0);
            sprintf(h, "{}%sx", ws); BADJ(h, 0);
            sprintf(h, "{}%s\v", ws); BADJ(h, 0);
            sprintf(h, "{}%s\xe2\x80\xa8", ws); BADJ(h, 0);
            sprintf(h, "{%s\"a\"%s:%s{\"dtype\":\"F32\",%s\"shape\"%s:[%s1%s]%s,\"data_offsets\":[0,4]}%s}",
                    ws, ws, ws, ws, ws, ws, ws, ws, ws);
            OKH(h, 4);
        }
    }
}

/* A header cut short at every byte (so its tail lands in the data section, or the buffer ends
   right there): always INVALID_JSON, never a read past N. */
static void test_truncated_headers(void) {
    const char *full[] = {
        "{\"__metadata__\":{\"k\":\"v\\u00e9\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
        "\"x\":[true,false,null,-1.5e3,{\"y\":\"z\"}]}}",
        "{ \"ab\" : { \"data_offsets\" : [ 0 , 12 ] , \"shape\" : [ 3 ] , \"dtype\" : \"I32\" } } ",
    };
    size_t i, k;
    for (i = 0; i < 2; i++) {
        size_t len = strlen(full[i]);
        for (k = 0; k < len; k++) {
            size_t n;
            unsigned char *img;
            int trailing_ws = 1;
            size_t j;
            for (j = k; j < len; j++) if (full[i][j] != ' ') trailing_ws = 0;
            if (trailing_ws) continue;         /* only padding cut: still valid */
            /* exact-size buffer: the header is the last thing in memory */
            img = mkimg(full[i], k, NULL, 0, &n);
            expect_img(__LINE__, SRC_MEM | SRC_READER, img, n, SAFELOAD_INVALID_JSON, JSONOFF, NULL);
            free(img);
            /* the rest of the JSON follows in the data section */
            img = mkimg(full[i], k, full[i] + k, len - k, &n);
            expect_img(__LINE__, SRC_MEM, img, n, SAFELOAD_INVALID_JSON, JSONOFF, NULL);
            free(img);
        }
    }
}

/* More numbers, literals and odd-but-valid forms. */
static void test_json_more(void) {
    const char *h;
    ofile o;
    BADJ(EF("\"x\":1.e5"), 4); BADJ(EF("\"x\":1e5.5"), 4); BADJ(EF("\"x\":--1"), 4); BADJ(EF("\"x\":1_000"), 4);
    BADJ(EF("\"x\":truex"), 4); BADJ(EF("\"x\":nulll"), 4); BADJ(EF("\"x\":[1]]"), 4); BADJ(EF("\"x\":{]"), 4);
    BADJ(EF("\"x\":[}"), 4); BADJ(EF("\"x\":\"\\u00\""), 4); BADJ(EF("\"x\":1 2"), 4); BADJ(EF("\"x\"1"), 4);
    BADJ(EF("\"x\":-Infinity"), 4); BADJ(EF("\"x\":1.5e+-3"), 4);
    OKH(EF("\"x\":1.5e-3,\"y\":-0.0,\"z\":0.5E+10,\"w\":-0e-0,\"v\":1E5,\"u\":0.0"), 4);
    OKH(EF("\"x\":{ },\"y\":[ ],\"z\":[[],[[]],{}],\"w\":\"\\u00E9\\uABCD\""), 4);
    OKH(EF("\"x\":{\"dtype\":\"BAD\",\"shape\":-1,\"data_offsets\":[1,2,3]}"), 4);
    OKH("{\"__metadata__\":{\"__metadata__\":\"x\",\"dtype\":\"F99\"}}", 0);
    OKH("{\"__metad\\u0061ta__\":null}", 0);
    OKH("{\"a\":{\"\\u0064\\u0074\\u0079\\u0070\\u0065\":\"\\u0046\\u0033\\u0032\",\"shape\":[1],"
        "\"data_\\u006fffsets\":[0,4]}}", 4);
    /* shape numbers */
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1.],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[1E+0],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[00000000000000000001],\"data_offsets\":[0,4]}"), 4);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0,18446744073709551620],\"data_offsets\":[0,0]}"), 0);
    BADJ(E1("{\"dtype\":\"F32\",\"shape\":[0,28446744073709551615],\"data_offsets\":[0,0]}"), 0);
    h = "{" T("a","U8","[18446744073709551615]",0,18446744073709551615) "}";
    EXPT(h, 0, OVERFLOW, TOFF(h,"a"), "a");
    h = "{" T("a","U8","[1]",18446744073709551615,18446744073709551615) "}";
    EXPT(h, 0, INVALID_OFFSET, TOFF(h,"a"), "a");
    /* offsets of keys behind whitespace and escapes */
    h = "{ \n\t\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\r\n  \"\\u0061\" : {}}";
    BADJ(h, 4);
    h = "{ \n\t\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\r\n  \"\\u0061\" : "
        "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    EXPT(h, 8, DUPLICATE_KEY, at(h, "\"\\u0061\"", 1), "a");
    h = "{ \"\\u0062\" :{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},\n\"\\u0061\":"
        "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,5]}}";
    EXPT(h, 8, SIZE_MISMATCH, at(h, "\"\\u0061\"", 1), "a");
    h = "  { \"\\u0062\" :{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},\n\"\\u0061\":"
        "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    o = OPEN_OK(h, 8);
    CHECK(o.f && safeload_find(o.f, "a")->header_offset == at(h, "\"\\u0061\"", 1));
    CHECK(o.f && safeload_find(o.f, "b")->header_offset == at(h, "\"\\u0062\"", 1));
    ofile_close(&o);
}

/* ---- scale: ties, long names, many keys ------------------------------------------------ */
static void test_scale(void) {
    size_t cap = 4 << 20, len, i;
    char *h = (char *)malloc(cap);
    ofile o;
    /* 3000 zero-size tensors on one offset, in a scrambled header order: iteration keeps
       header order for ties (a stable sort) */
    len = (size_t)sprintf(h, "{" T("first","U8","[2]",0,2));
    for (i = 0; i < 3000; i++)
        len += (size_t)sprintf(h + len, ",\"z%05u\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]}",
                               (unsigned)((i * 7919) % 3000));
    strcpy(h + len, "," T("last","U8","[1]",2,3) "}");
    o = open_okn(__LINE__, h, strlen(h), NULL, 3);
    if (o.f) {
        int ok = safeload_tensor_count(o.f) == 3002;
        for (i = 0; ok && i < 3000; i++) {
            char nm[16];
            sprintf(nm, "z%05u", (unsigned)((i * 7919) % 3000));
            ok = strcmp(safeload_tensor_at(o.f, i + 1)->name, nm) == 0 && safeload_tensor_at(o.f, i + 1)->index == i + 1;
        }
        CHECK_MSG(ok, "zero-size ties not in header order");
        CHECK_STR(safeload_tensor_at(o.f, 3001)->name, "last");
    }
    ofile_close(&o);
    /* equal non-empty ranges among many: the second in header order is reported */
    len = (size_t)sprintf(h, "{");
    for (i = 0; i < 2000; i++)
        len += (size_t)sprintf(h + len, "%s\"t%u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%u,%u]}",
                               i ? "," : "", (unsigned)i, (unsigned)(i == 1500 ? 700 : i), (unsigned)(i == 1500 ? 701 : i + 1));
    strcpy(h + len, "}");
    expect_hdr(__LINE__, SRC_MEM, h, strlen(h), 2000, SAFELOAD_INVALID_OFFSET, at(h, "\"t1500\"", 1), "t1500");
    /* a duplicate among 20,000 names (hash table growth) */
    len = (size_t)sprintf(h, "{");
    for (i = 0; i < 20000; i++)
        len += (size_t)sprintf(h + len, "%s\"n%u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%u,%u]}",
                               i ? "," : "", (unsigned)(i == 19999 ? 12345 : i), (unsigned)i, (unsigned)i + 1);
    strcpy(h + len, "}");
    expect_hdr(__LINE__, SRC_MEM, h, strlen(h), 20000, SAFELOAD_DUPLICATE_KEY, at(h, "\"n12345\"", 2), "n12345");
    /* 20,000 metadata keys, all findable; then one repeated */
    len = (size_t)sprintf(h, "{\"__metadata__\":{");
    for (i = 0; i < 20000; i++)
        len += (size_t)sprintf(h + len, "%s\"key.%u\":\"v%u\"", i ? "," : "", (unsigned)i, (unsigned)i * 3);
    strcpy(h + len, "}}");
    o = open_okn(__LINE__, h, strlen(h), NULL, 0);
    if (o.f) {
        int ok = safeload_metadata_count(o.f) == 20000;
        for (i = 0; ok && i < 20000; i++) {
            char k[32], v[32];
            const safeload_kv *kv;
            sprintf(k, "key.%u", (unsigned)i); sprintf(v, "v%u", (unsigned)i * 3);
            kv = safeload_metadata_find(o.f, k);
            ok = kv && strcmp(kv->value, v) == 0 && safeload_metadata_at(o.f, i) == kv;
        }
        CHECK_MSG(ok, "20,000 metadata keys");
    }
    ofile_close(&o);
    len = (size_t)sprintf(h, "{\"__metadata__\":{");
    for (i = 0; i < 20000; i++)
        len += (size_t)sprintf(h + len, "%s\"key.%u\":\"v\"", i ? "," : "", (unsigned)(i == 15000 ? 42 : i));
    strcpy(h + len, "}}");
    expect_hdr(__LINE__, SRC_MEM, h, strlen(h), 0, SAFELOAD_DUPLICATE_KEY, at(h, "\"key.42\"", 2), "key.42");
    /* a 100,000-byte name: valid, findable; with an error, err.tensor is a truncated prefix */
    {
        size_t nl = 100000;
        char *name = (char *)malloc(nl + 1);
        safeload_error err;
        safeload_file *f = NULL;
        size_t n;
        unsigned char *img;
        for (i = 0; i < nl; i++) name[i] = (char)('a' + i % 26);
        name[nl] = 0;
        len = (size_t)sprintf(h, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", name);
        o = open_okn(__LINE__, h, len, NULL, 2);
        CHECK(o.f && safeload_find(o.f, name) && safeload_find(o.f, name)->name_len == nl);
        ofile_close(&o);
        img = mkimg(h, len, NULL, 3, &n);
        memset(&err, 0x41, sizeof err);
        CHECK(safeload_open_memory(&f, img, n, NULL, &err) == SAFELOAD_INCOMPLETE_BUFFER);
        img[8 + len - 4] = '3';             /* data_offsets [0,3]: SIZE_MISMATCH naming the tensor */
        memset(&err, 0x41, sizeof err);
        CHECK(safeload_open_memory(&f, img, n, NULL, &err) == SAFELOAD_SIZE_MISMATCH);
        /* truncated (the library marks it with "..."): a NUL-terminated prefix of the name */
        CHECK(memchr(err.tensor, 0, sizeof err.tensor) != NULL && strlen(err.tensor) >= 200 &&
              strncmp(err.tensor, name, 200) == 0);
        CHECK(memchr(err.message, 0, sizeof err.message) != NULL);
        CHECK(memchr(err.file, 0, sizeof err.file) != NULL);
        CHECK_EQ_U64(err.offset, 9);
        free(img);
        free(name);
    }
    free(h);
}

/* ---- random mutations of valid headers: never a crash, a consistent answer ------------ */
/* ---- a large header parsed in parts (safeload_open_desc.threads) ------------------------
   Headers of SAFELOAD_PARSE_SPLIT_MIN bytes and up are cut at `},"` after each part's even
   share and parsed on several threads; any doubt and the whole header is parsed again on one
   thread. Whatever the bytes, the result must be the one-thread parse's: the same tensors in
   the same order, or the same error id, offset, tensor and message. Mutations land next to the
   cuts, and some put `},"` where it is not an entry's end (a name ending in "},", a nested
   unknown field, a metadata value). */
static size_t split_base(char *h, size_t cap, unsigned count) {
    size_t len = (size_t)snprintf(h, cap, "{\"__metadata__\":{\"format\":\"pt\"}");
    unsigned i, off = 0;
    for (i = 0; i < count && len + 200 < cap; i++) {
        unsigned d = 1 + i % 3;
        len += (size_t)snprintf(h + len, cap - len,
                                ",\"model.layers.%u.mlp.experts.%u.w%u\":{\"dtype\":\"BF16\","
                                "\"shape\":[%u],\"data_offsets\":[%u,%u]}",
                                i / 64, i % 64, i % 3, d, off, off + 2 * d);
        off += 2 * d;
    }
    h[len++] = '}';
    h[len] = 0;
    return len;
}

/* where the data of split_base's header ends (its last data_offsets) */
static uint64_t split_data_len(const char *h, size_t len) {
    static const char key[] = "\"data_offsets\":[";
    size_t i, kl = sizeof key - 1;
    uint64_t end = 0;
    for (i = 0; i + kl < len; i++)
        if (h[i] == '"' && memcmp(h + i, key, kl) == 0) {
            const char *c = (const char *)memchr(h + i + kl, ',', len - i - kl);
            uint64_t e = c ? strtoull(c + 1, NULL, 10) : 0;
            if (e > end) end = e;
            i += kl;
        }
    return end;
}

/* opens the image with `threads` and returns the result; err and *f as safeload_open gives */
static safeload_result split_open(const unsigned char *img, size_t n, int threads,
                                  safeload_file **f, safeload_error *err) {
    safeload_open_desc d;
    memset(&d, 0, sizeof d);
    d.threads = threads;
    d.hash_seed = 42;
    return safeload_open_memory(f, img, n, &d, err);
}

static int split_same(int line, const unsigned char *img, size_t n, int threads) {
    safeload_file *a = NULL, *b = NULL;
    safeload_error ea, eb;
    safeload_result ra = split_open(img, n, 1, &a, &ea), rb = split_open(img, n, threads, &b, &eb);
    int ok = ra == rb;
    size_t i;
    if (ok && ra != SAFELOAD_OK)
        ok = ea.code == eb.code && ea.offset == eb.offset && strcmp(ea.message, eb.message) == 0 &&
             strcmp(ea.tensor, eb.tensor) == 0;
    if (ok && ra == SAFELOAD_OK) {
        ok = safeload_tensor_count(a) == safeload_tensor_count(b) &&
             safeload_metadata_count(a) == safeload_metadata_count(b);
        for (i = 0; ok && i < safeload_tensor_count(a); i++) {
            const safeload_tensor *x = safeload_tensor_at(a, i), *y = safeload_tensor_at(b, i);
            ok = x->name_len == y->name_len && memcmp(x->name, y->name, x->name_len + 1) == 0 &&
                 x->dtype == y->dtype && x->rank == y->rank && x->begin == y->begin &&
                 x->end == y->end && x->header_offset == y->header_offset &&
                 x->numel == y->numel && x->index == y->index &&
                 (!x->rank || memcmp(x->shape, y->shape, x->rank * sizeof(uint64_t)) == 0) &&
                 safeload_find(b, x->name) == y;
        }
    }
    CHECK_MSG(ok, "line %d: %d threads differ from one: %d/%d %s | %s", line, threads, (int)ra,
              (int)rb, ra ? ea.message : "", rb ? eb.message : "");
    safeload_close(a);
    safeload_close(b);
    return ok;
}

static void test_split_parse(void) {
    size_t cap = 3 << 20, len, n, it, parts, dlen, iters = getenv("SAFELOAD_TEST_QUICK") ? 60 : 400;
    char *base = (char *)malloc(cap), *h = (char *)malloc(cap);
    unsigned char *img;
    int save = g_no_corpus, threads[] = { 2, 3, 8 }, t;
    const char *plant[] = { "},", "\"a},\":1", "{\"x\":{},\"y\":2}", "},\"", "\\\"},\\\"",
                            "}", ",", "\"", "__metadata__" };
    g_no_corpus = 1;
    len = split_base(base, cap, 18000);
    dlen = (size_t)split_data_len(base, len);
    CHECK_MSG(len >= ((size_t)1 << 20) + 65536, "the base header is %u bytes", (unsigned)len);
    /* the header as written: the parts land, and every thread count agrees */
    img = mkimg(base, len, NULL, dlen, &n);
    for (t = 0; t < 3; t++) split_same(__LINE__, img, n, threads[t]);
    {
        safeload_file *f = NULL;
        safeload_error e;
        /* (the implementation is in this file: the parts are the file's to free) */
        CHECK(split_open(img, n, 2, &f, &e) == SAFELOAD_OK && f &&
              safeload_tensor_count(f) == 18000 && safeload_metadata_count(f) == 1);
        CHECK_MSG(f && f->n_parts == 1, "2 threads: %u parts besides the first",
                  f ? (unsigned)f->n_parts : 0u);
        safeload_close(f);
        CHECK(split_open(img, n, 8, &f, &e) == SAFELOAD_OK && f);
        /* parts of half SAFELOAD_PARSE_SPLIT_MIN at least, 8 at most (each cut found) */
        parts = (size_t)(len / SL__MAX((uint64_t)SAFELOAD_PARSE_SPLIT_MIN / 2, (uint64_t)1));
        parts = parts > 8 ? 8 : parts;
        CHECK_MSG(f && f->n_parts == parts - 1, "8 threads, a %u-byte header: %u parts besides "
                  "the first, not %u", (unsigned)len, f ? (unsigned)f->n_parts : 0u,
                  (unsigned)parts - 1);
        safeload_close(f);
        CHECK(split_open(img, n, 1, &f, &e) == SAFELOAD_OK && f && f->n_parts == 0);
        safeload_close(f);
    }
    free(img);
    /* __metadata__ in a later part: kept when it is the only one, refused when repeated
       (also as null, which a part could take without allocating) */
    for (t = 0; t < 3; t++) {
        size_t at0 = t ? 0 : strlen("{\"__metadata__\":{\"format\":\"pt\"},");
        size_t hl = 0;
        safeload_file *f = NULL;
        safeload_error e;
        h[hl++] = '{';
        memcpy(h + hl, base + at0, len - at0 - 1);   /* (t = 1: the first one stays) */
        hl += len - at0 - 1;
        hl += (size_t)sprintf(h + hl, ",\"__metadata__\":%s}", t == 2 ? "null" : "{\"late\":\"1\"}");
        if (t) { memmove(h + 1, h + 2, hl - 2); hl--; }    /* "{{" -> "{" */
        img = mkimg(h, hl, NULL, dlen, &n);
        split_same(__LINE__, img, n, 2);
        if (!t) {
            CHECK(split_open(img, n, 2, &f, &e) == SAFELOAD_OK && f &&
                  safeload_metadata_count(f) == 1 && safeload_tensor_count(f) == 18000);
            CHECK(f && safeload_metadata_find(f, "late") &&
                  strcmp(safeload_metadata_find(f, "late")->value, "1") == 0);
        } else {
            CHECK(split_open(img, n, 2, &f, &e) == SAFELOAD_INVALID_JSON &&
                  strstr(e.message, "duplicate field `__metadata__`"));
        }
        safeload_close(f);
        free(img);
    }
    for (it = 0; it < iters; it++) {
        size_t hl = len, pos, m, nm = 1 + (size_t)(tu_rand64() % 2);
        int k = 2 + (int)(tu_rand64() % 7);         /* next to part k's cut of 2..8 */
        memcpy(h, base, len + 1);
        for (m = 0; m < nm; m++) {
            size_t share = hl / (size_t)k * (size_t)(1 + tu_rand64() % (uint64_t)(k - 1));
            const char *s = plant[tu_rand64() % (sizeof plant / sizeof *plant)];
            size_t sl = strlen(s);
            int op = (int)(tu_rand64() % 4);
            pos = share + (size_t)(tu_rand64() % 400);
            if (pos >= hl) pos = hl - 1;
            if (op == 0) h[pos] = "{}[]\":,0x\\"[tu_rand64() % 10];
            else if (op == 1) { memmove(h + pos, h + pos + 1, hl - pos); hl--; }
            else if (hl + sl + 1 < cap) {           /* plant a string there */
                memmove(h + pos + sl, h + pos, hl - pos + 1);
                memcpy(h + pos, s, sl);
                hl += sl;
            }
        }
        img = mkimg(h, hl, NULL, dlen, &n);
        split_same(__LINE__, img, n, threads[it % 3]);
        free(img);
    }
    g_no_corpus = save;
    free(base);
    free(h);
}

static void test_mutations(void) {
    const char *base[] = {
        "{\"__metadata__\":{\"format\":\"pt\",\"k\\u00e9\":\"v\\n\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],"
        "\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"F4\",\"shape\":[4],\"data_offsets\":[16,18]},"
        "\"z\":{\"dtype\":\"I8\",\"shape\":[0],\"data_offsets\":[18,18],\"x\":[1e3,{\"y\":null}]}}  ",
        "{\"\xc3\xa9\":{\"data_offsets\":[0,2],\"shape\":[],\"dtype\":\"BF16\"}}",
    };
    const char alphabet[] = "{}[]\":,0123456789-+.eE \t\n\\u\x00\x80\xc3\xff" "aFIUtrfnl";
    size_t dl[2] = { 18, 2 };
    int it, b;
    g_no_corpus = 1;
    for (b = 0; b < 2; b++) {
        size_t len = strlen(base[b]);
        for (it = 0; it < 20000; it++) {
            char h[512];
            size_t n, hl = len;
            unsigned char *img;
            safeload_file *f = NULL;
            safeload_error err;
            safeload_result r;
            int m, nm = 1 + (int)(tu_rand64() % 3);
            memcpy(h, base[b], len);
            for (m = 0; m < nm; m++) {
                size_t pos = (size_t)(tu_rand64() % hl);
                int op = (int)(tu_rand64() % 3);
                char c = alphabet[tu_rand64() % (sizeof alphabet - 1)];
                if (op == 0) h[pos] = c;
                else if (op == 1 && hl > 1) { memmove(h + pos, h + pos + 1, hl - pos - 1); hl--; }
                else if (hl < sizeof h - 1) { memmove(h + pos + 1, h + pos, hl - pos); h[pos] = c; hl++; }
            }
            img = mkimg(h, hl, NULL, dl[b], &n);
            memset(&err, 0, sizeof err);
            r = safeload_open_memory(&f, img, n, NULL, &err);
            if (r == SAFELOAD_OK) {
                size_t i, cnt = safeload_tensor_count(f);
                uint64_t end = 0;
                for (i = 0; i < cnt; i++) {
                    const safeload_tensor *t = safeload_tensor_at(f, i);
                    CHECK(t->begin == end && t->end >= t->begin && t->index == i && safeload_find_n(f, t->name, t->name_len) == t);
                    end = t->end;
                }
                CHECK(8 + safeload_header_size(f) + end == n);
                safeload_close(f);
            } else {
                CHECK(err.code == r && f == NULL);
                CHECK_MSG(r >= SAFELOAD_INVALID_UTF8 && r <= SAFELOAD_INVALID_NAME, "mutation gave %s", safeload_result_id(r));
                CHECK(err.offset >= 8 && err.offset <= n);
            }
            free(img);
        }
    }
}
/* ---- allocators: everything freed, on success and on every failure point ------------------ */
static long g_live, g_allocs, g_fail_at;    /* g_fail_at: fail the n-th allocation (0 = never) */
static void *fa_alloc(void *u, size_t n) {
    (void)u;
    if (g_fail_at && ++g_allocs == g_fail_at) return NULL;
    { void *p = malloc(n ? n : 1); if (p) g_live++; return p; }
}
static void *fa_realloc(void *u, void *p, size_t o, size_t n) {
    void *q;
    (void)u; (void)o;
    if (g_fail_at && ++g_allocs == g_fail_at) return NULL;
    q = realloc(p, n ? n : 1);
    if (q && !p) g_live++;
    return q;
}
static void fa_free(void *u, void *p) { (void)u; if (p) { g_live--; free(p); } }

static void test_allocator(void) {
    const char *h = "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"}," T("b","F32","[2]",8,16) ","
        T("a","F32","[2]",0,8) "," T("z","I8","[0]",16,16) ",\"c\":{\"dtype\":\"U8\",\"shape\":[4],"
        "\"data_offsets\":[16,20],\"x\":[[1,2],{\"y\":\"\\u00e9\"}]}}";
    const char *expected[] = { "a", "q", "c", "a" };
    size_t n;
    unsigned char *img = mkimg(h, strlen(h), NULL, 20, &n);
    safeload_open_desc desc;
    int with_realloc, k;
    for (with_realloc = 0; with_realloc < 2; with_realloc++) {
        memset(&desc, 0, sizeof desc);
        desc.allocator.alloc = fa_alloc; desc.allocator.free = fa_free;
        desc.allocator.realloc = with_realloc ? fa_realloc : NULL;
        desc.hash_seed = with_realloc ? 12345 : UINT64_MAX;
        for (k = 1; k < 400; k++) {
            safeload_file *f = NULL;
            safeload_error err;
            safeload_result r;
            safeload_key_report rep;
            g_live = 0; g_allocs = 0; g_fail_at = k;
            memset(&err, 0, sizeof err);
            r = safeload_open_memory(&f, img, n, &desc, &err);
            if (r == SAFELOAD_OK) {
                CHECK(safeload_tensor_count(f) == 4 && safeload_find(f, "c") && safeload_metadata_find(f, "k"));
                memset(&rep, 0, sizeof rep);
                r = safeload_check_keys(f, expected, 4, &rep, &err);
                CHECK_MSG(r == SAFELOAD_OK || r == SAFELOAD_OUT_OF_MEMORY, "check_keys under failing allocator: %s",
                          safeload_result_id(r));
                if (r == SAFELOAD_OK) {
                    CHECK(rep.missing_count == 1 && rep.unexpected_count == 2);
                    safeload_key_report_free(&rep);
                }
                safeload_close(f);
            } else {
                CHECK_MSG(r == SAFELOAD_OUT_OF_MEMORY && err.code == r, "alloc %d failing: %s", k, safeload_result_id(r));
                CHECK(f == NULL);
            }
            CHECK_MSG(g_live == 0, "alloc %d failing (realloc %d): %ld blocks leaked", k, with_realloc, g_live);
            if (g_allocs < k) break;      /* the failure was not reached: all points covered */
        }
        CHECK_MSG(k > 2, "allocator was not used");
    }
    /* file and reader sources with the counting allocator */
    g_fail_at = 0; g_live = 0;
    {
        safeload_file *f = NULL;
        rd_user u;
        safeload_reader r = mk_reader(&u, img, n, 0);
        write_file(g_tmp_path, img, n);
        CHECK(safeload_open(&f, g_tmp_path, &desc, NULL) == SAFELOAD_OK);
        if (f) safeload_close(f);
        CHECK_EQ_U64(g_live, 0);
        CHECK(safeload_open_reader(&f, &r, &desc, NULL) == SAFELOAD_OK);
        if (f) safeload_close(f);
        CHECK_EQ_U64(g_live, 0);
    }
    /* a failing file open: nothing left */
    {
        safeload_file *f = NULL;
        img[8 + 3] = 'X';
        write_file(g_tmp_path, img, n);
        CHECK(safeload_open(&f, g_tmp_path, &desc, NULL) == SAFELOAD_INVALID_JSON);
        CHECK_EQ_U64(g_live, 0);
    }
    free(img);
}

/* A reader that claims more bytes than were asked for must not be trusted. */
static int64_t liar_read(void *user, uint64_t off, void *dst, size_t n) {
    rd_user *u = (rd_user *)user;
    size_t k = n;
    if (off >= u->n) return 0;
    if (k > u->n - off) k = (size_t)(u->n - off);
    memcpy(dst, u->p + off, k);
    return (int64_t)n + 100;
}

/* Honest, except that a read of exactly 64 MiB claims one byte more (mode 0; 5: honest). */
static int64_t liar64_read(void *user, uint64_t off, void *dst, size_t n) {
    rd_user *u = (rd_user *)user;
    if (off >= u->n) return 0;
    if (n > u->n - off) n = (size_t)(u->n - off);
    memcpy(dst, u->p + off, n);
    return (int64_t)n + (u->mode == 0 && n == ((size_t)64 << 20));
}

/* errno's words in messages: a rename across file systems said "failed: error (error 18)" */
static void test_os_words(void) {
#if !defined(_WIN32)
    CHECK_STR(sl__os_why(EXDEV, "error"), "cross-device: the target is on another file system");
    CHECK_STR(sl__os_why(EIO, "error"), "I/O error");
    CHECK_STR(sl__os_why(EBUSY, "error"), "busy (in use, or a mount point)");
    CHECK_STR(sl__why64(EXDEV), "cross-device: the target is on another file system");
#endif
    CHECK_STR(sl__why64(-1), "error");
    CHECK_STR(sl__why64(INT64_MAX), "error");
}

/* SAFELOAD_MODEL_CONFINE with real symbolic links: a shard linked outside the index's folder,
   or reached through a linked folder, is refused; a link that stays inside (the Hugging Face
   cache's shape, one level down) is fine; without the flag links are followed. Both checks
   (openat2 where the kernel has it, and realpath) answer the same. */
static void test_confine(void) {
#if !defined(_WIN32)
    char root[256], p[512], q[512];
    const char *hdr = "{" ENT_A "}";
    size_t n;
    unsigned char *img = mkimg(hdr, strlen(hdr), NULL, 4, &n);
    static const char *const shards[] = {"a.safetensors", "out.safetensors", "abs.safetensors",
                                         "sub/c.safetensors", "in.safetensors"};
    static const int outside[] = {0, 1, 1, 1, 0};
    int i;
    snprintf(root, sizeof root, "/tmp/safeload_confine_%d", (int)getpid());
    snprintf(p, sizeof p, "rm -rf %s", root);
    if (system(p) != 0) {}
    snprintf(p, sizeof p, "%s", root); CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/m", root); CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/m/blobs", root); CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/outside", root); CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/m/a.safetensors", root); CHECK(write_file(p, img, n) == 0);
    snprintf(p, sizeof p, "%s/outside/b.safetensors", root); CHECK(write_file(p, img, n) == 0);
    snprintf(p, sizeof p, "%s/outside/c.safetensors", root); CHECK(write_file(p, img, n) == 0);
    snprintf(p, sizeof p, "%s/m/blobs/x", root); CHECK(write_file(p, img, n) == 0);
    snprintf(p, sizeof p, "%s/m/out.safetensors", root);
    CHECK(symlink("../outside/b.safetensors", p) == 0);
    snprintf(p, sizeof p, "%s/m/abs.safetensors", root);
    snprintf(q, sizeof q, "%s/outside/b.safetensors", root);
    CHECK(symlink(q, p) == 0);
    snprintf(p, sizeof p, "%s/m/sub", root);
    CHECK(symlink("../outside", p) == 0);
    snprintf(p, sizeof p, "%s/m/in.safetensors", root);
    CHECK(symlink("blobs/x", p) == 0);
    for (i = 0; i < 5; i++) {
        safeload_model *m = NULL;
        safeload_model_desc d;
        safeload_error e;
        safeload_result r;
        char idx[256], path[512], dir[512];
        struct stat st;
        const char *how = "";
        int fl;
        snprintf(idx, sizeof idx, "{\"weight_map\":{\"t\":\"%s\"}}", shards[i]);
        snprintf(p, sizeof p, "%s/m/model.safetensors.index.json", root);
        CHECK(write_file(p, idx, strlen(idx)) == 0);
        for (fl = 0; fl < 2; fl++) {
            memset(&d, 0, sizeof d);
            d.flags = fl ? SAFELOAD_MODEL_CONFINE : 0;
            snprintf(q, sizeof q, "%s/m", root);
            r = safeload_model_open(&m, q, &d, &e);
            /* the index names "t", the shard holds "a": a warning and a missing tensor */
            if (fl && outside[i]) {
                CHECK_MSG(r == SAFELOAD_INVALID_INDEX && m == NULL, "%s: %s %s", shards[i],
                          safeload_result_id(r), e.message);
                snprintf(path, sizeof path, "%s/m/%s", root, shards[i]);
                CHECK_MSG(strcmp(e.file, path) == 0 && strstr(e.message, "outside the index's "
                          "directory"), "%s: %s [%s]", shards[i], e.message, e.file);
            } else {
                CHECK_MSG(r == SAFELOAD_INDEX_MISSING_TENSOR, "%s (flag %d): %s %s", shards[i],
                          fl, safeload_result_id(r), e.message);
            }
            safeload_model_close(m);
        }
        /* the realpath check alone (the fallback) agrees */
        snprintf(path, sizeof path, "%s/m/%s", root, shards[i]);
        snprintf(dir, sizeof dir, "%s/m/", root);
        CHECK(stat(path, &st) == 0);
        CHECK_MSG(sl__os_beneath_realpath(dir, path, &st, NULL) == outside[i], "realpath %s",
                  shards[i]);
        {
            int fd = open(path, O_RDONLY);
            CHECK(fd >= 0);
            CHECK_MSG(sl__os_beneath(path, strlen(dir), fd, NULL, &how) == outside[i],
                      "beneath %s (%s)", shards[i], how);
            close(fd);
        }
    }
    {   /* the file checked must be the one open: another file at that name is refused */
        struct stat st;
        char dir[512];
        int fd;
        snprintf(p, sizeof p, "%s/m/a.safetensors", root);
        snprintf(dir, sizeof dir, "%s/m/", root);
        snprintf(q, sizeof q, "%s/m/blobs/x", root);
        fd = open(q, O_RDONLY);
        CHECK(fd >= 0 && fstat(fd, &st) == 0);
        {
            const char *how = "";
            CHECK(sl__os_beneath(p, strlen(dir), fd, NULL, &how) == 1);
        }
        CHECK(sl__os_beneath_realpath(dir, p, &st, NULL) == 1);
        close(fd);
    }
    {   /* an unknown flag is still refused */
        safeload_model *m = NULL;
        safeload_model_desc d;
        safeload_error e;
        memset(&d, 0, sizeof d);
        d.flags = 1u << 7;
        CHECK(safeload_model_open(&m, root, &d, &e) == SAFELOAD_INVALID_ARGUMENT);
    }
    snprintf(p, sizeof p, "rm -rf %s", root);
    if (system(p) != 0) {}
    free(img);
#endif
}

static void test_reader_misbehaving(void) {
    const char *h = "{" T("w","F32","[5]",0,20) "}";
    size_t n;
    unsigned char *img = mkimg(h, strlen(h), NULL, 20, &n);
    rd_user u;
    safeload_reader r = mk_reader(&u, img, n, 0);
    safeload_file *f = NULL;
    safeload_result res;
    r.read = liar_read;
    {   /* said as it is, not as an invented errno */
        safeload_error e;
        res = safeload_open_reader(&f, &r, NULL, &e);
        CHECK_MSG(res == SAFELOAD_IO_ERROR && strcmp(e.message, "reader returned 108 bytes for "
                  "a request of 8 at byte 0") == 0, "%s: %s", safeload_result_id(res), e.message);
        CHECK(strcmp(e.file, "test-reader") == 0 && e.offset == 0);
    }
    if (f) {
        unsigned char buf[64];
        res = safeload_read(f, safeload_find(f, "w"), buf, sizeof buf, NULL);
        CHECK_MSG(res != SAFELOAD_OK, "reader returning more than asked: read accepted");
        safeload_close(f);
    }
    free(img);
    {   /* the same lie on a read of 64 MiB, the most one call asks for: a header and a tensor
           of 65 MiB are read in two calls, and the first one's extra byte must be caught */
        size_t big = (size_t)65 << 20, hl;
        char hb[128];
        unsigned char *p = (unsigned char *)malloc(8 + big);
        safeload_error e;
        CHECK(p != NULL);
        if (!p) return;
        put_le64(p, big);                        /* a 65 MiB header: "{}" and spaces */
        memset(p + 8, ' ', big);
        memcpy(p + 8, "{}", 2);
        r = mk_reader(&u, p, 8 + big, 0);
        r.read = liar64_read;
        f = NULL;
        res = safeload_open_reader(&f, &r, NULL, &e);
        CHECK_MSG(res == SAFELOAD_IO_ERROR && f == NULL, "65 MiB header, lying reader: %s",
                  safeload_result_id(res));
        if (f) safeload_close(f);
        /* a 65 MiB tensor after an honest open */
        hl = (size_t)snprintf(hb, sizeof hb, "{\"t\":{\"dtype\":\"U8\",\"shape\":[%lu],"
                              "\"data_offsets\":[0,%lu]}}", (unsigned long)(big - 200),
                              (unsigned long)(big - 200));
        put_le64(p, hl);
        memcpy(p + 8, hb, hl);
        r = mk_reader(&u, p, 8 + hl + big - 200, 0);
        r.read = liar64_read;
        u.mode = 5;                              /* honest until told */
        res = safeload_open_reader(&f, &r, NULL, &e);
        CHECK_MSG(res == SAFELOAD_OK, "%s", e.message);
        if (f) {
            safeload_model *m = NULL;
            safeload_loaded *l = NULL;
            safeload_load_desc d;
            u.mode = 0;
            res = safeload_read(f, safeload_find(f, "t"), p + 8 + hl, big - 200, &e);
            CHECK_MSG(res == SAFELOAD_IO_ERROR, "safeload_read, lying reader: %s",
                      safeload_result_id(res));
            CHECK_MSG(strstr(e.message, "reader returned 67108865 bytes for a request of "
                                        "67108864") != NULL, "%s", e.message);
            CHECK(safeload_model_from_files(&m, &f, 1, NULL, &e) == SAFELOAD_OK);
            memset(&d, 0, sizeof d);
            d.chunk_size = (size_t)128 << 20;    /* one task, read in 64 MiB calls */
            res = safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e);
            CHECK_MSG(res == SAFELOAD_IO_ERROR && l == NULL, "load, lying reader: %s",
                      safeload_result_id(res));
            CHECK_MSG(strstr(e.message, "reader returned 67108865 bytes for a request of "
                                        "67108864 at byte ") != NULL && strcmp(e.tensor, "t") == 0,
                      "%s [%s]", e.message, e.tensor);
            safeload_loaded_free(l);
            safeload_model_close(m);
        }
        free(p);
    }
}
/* ---- the reference files ----------------------------------------------------------------- */

typedef struct ref_tensor { char name[256]; char dtype[32]; char shape[256]; uint64_t b, e, fnv; } ref_tensor;

/* Check one reference file (all three sources) against its MANIFEST entry. */
static void check_ref_file(const char *dir, const char *file, uint64_t data_fnv, const ref_tensor *rt, size_t nt) {
    char path[1024];
    size_t n, i;
    unsigned char *img;
    int s;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    img = tu_slurp(path, &n);
    CHECK_MSG(img != NULL, "cannot read %s", path);
    if (!img) return;
    for (s = 1; s <= 4; s <<= 1) {
        safeload_file *f = NULL;
        safeload_error err;
        rd_user u;
        safeload_result r;
        if (s == SRC_FILE) r = safeload_open(&f, path, NULL, &err);
        else r = open_src(s, &f, img, n, &u, &err);
        CHECK_MSG(r == SAFELOAD_OK, "%s (%s): %s %s", file, src_name(s), safeload_result_id(r), err.message);
        if (r != SAFELOAD_OK) continue;
        CHECK_EQ_U64(safeload_file_size(f), n);
        CHECK_EQ_U64(safeload_data_offset(f) + safeload_data_size(f), n);
        CHECK_MSG(tu_fnv1a(img + safeload_data_offset(f), (size_t)safeload_data_size(f), TU_FNV_BASIS) == data_fnv,
                  "%s: data section checksum", file);
        CHECK_MSG(safeload_tensor_count(f) == nt, "%s: %u tensors, manifest %u", file,
                  (unsigned)safeload_tensor_count(f), (unsigned)nt);
        for (i = 0; i < nt && i < safeload_tensor_count(f); i++) {
            const safeload_tensor *t = safeload_tensor_at(f, i);
            unsigned char *buf = (unsigned char *)malloc((size_t)t->nbytes + 1);
            CHECK_MSG(strcmp(t->name, rt[i].name) == 0, "%s[%u]: name %s want %s", file, (unsigned)i, t->name, rt[i].name);
            CHECK_MSG(strcmp(safeload_dtype_name(t->dtype), rt[i].dtype) == 0, "%s: %s dtype", file, rt[i].name);
            CHECK_MSG(strcmp(shape_str(t), rt[i].shape) == 0, "%s: %s shape %s want %s", file, rt[i].name,
                      shape_str(t), rt[i].shape);
            CHECK_MSG(t->begin == rt[i].b && t->end == rt[i].e, "%s: %s offsets", file, rt[i].name);
            CHECK(safeload_find(f, rt[i].name) == t);
            CHECK(safeload_read(f, t, buf, (size_t)t->nbytes, &err) == SAFELOAD_OK);
            TU_LE_DT(buf, (size_t)t->nbytes, t->dtype);   /* MANIFEST hashes the file's bytes */
            CHECK_MSG(tu_fnv1a(buf, (size_t)t->nbytes, TU_FNV_BASIS) == rt[i].fnv, "%s: %s (%s) checksum", file,
                      rt[i].name, src_name(s));
            free(buf);
        }
        if (strcmp(file, "metadata.safetensors") == 0) {
            const safeload_kv *kv = safeload_metadata_find(f, "format");
            CHECK(safeload_metadata_count(f) == 1 && kv && strcmp(kv->value, "pt") == 0);
        } else CHECK(!safeload_has_metadata(f));
        safeload_close(f);
    }
    free(img);
}

static void test_reference_files(void) {
    const char *dir = getenv("SAFELOAD_REFERENCE_DIR");
    char path[1024], line[4096], file[256] = "";
    ref_tensor *rt = (ref_tensor *)malloc(1024 * sizeof *rt);
    size_t nt = 0;
    int files = 0;
    uint64_t data_fnv = 0;
    FILE *fp;
    if (!dir || !*dir) dir = "tests/data/reference";
    snprintf(path, sizeof path, "%s/MANIFEST.txt", dir);
    fp = fopen(path, "r");
    CHECK_MSG(fp != NULL, "cannot open %s (run from the repository root)", path);
    if (!fp) { free(rt); return; }
    for (;;) {
        int eof = fgets(line, sizeof line, fp) == NULL;
        char *nl;
        if (eof || strncmp(line, "file ", 5) == 0) {
            if (file[0]) { check_ref_file(dir, file, data_fnv, rt, nt); files++; }
            if (eof) break;
            nt = 0;
            strncpy(file, line + 5, sizeof file - 1); file[sizeof file - 1] = 0;
            if ((nl = strpbrk(file, "\r\n")) != NULL) *nl = 0;
        } else if (strncmp(line, "data_fnv1a64 ", 13) == 0) {
            data_fnv = strtoull(line + 13, NULL, 16);
        } else if (line[0] != '#' && line[0] != '\n' && nt < 1024) {
            ref_tensor *t = &rt[nt];
            unsigned long long b, e, h;
            if (sscanf(line, "%255[^\t]\t%31[^\t]\t%255[^\t]\t%llu\t%llu\t%llx", t->name, t->dtype, t->shape, &b, &e, &h) == 6) {
                t->b = b; t->e = e; t->fnv = h; nt++;
            } else CHECK_MSG(0, "bad MANIFEST line: %s", line);
        }
    }
    fclose(fp);
    CHECK_MSG(files == 6, "%d reference files in MANIFEST", files);
    free(rt);
}

/* A hang inside the library is a failure, not a stuck build. */
#if !defined(_WIN32)
static char g_hang_msg[256] = "test_format: TIMED OUT (a call did not return)\n";
static void on_alarm(int sig) {
    ssize_t w;
    (void)sig;
    w = write(2, g_hang_msg, strlen(g_hang_msg));
    (void)w;
    _exit(2);
}
#endif

/* The parser reads entries printed exactly like the reference writer's through a fast path and
   everything else through the general one. Both must agree: each random entry is parsed as
   printed and again with a space after every colon (which only the general path accepts), and
   the two results must be the same tensor, or the same error. */
static void test_fast_path_agrees(void) {
    static const char *const dts[] = {"F32", "BF16", "F16", "U8", "I64", "F8_E4M3", "BOOL",
                                      "F4", "C64", "f32", "F128", "BF1", "F8_E4M3FN"};
    static const char *const nums[] = {"0", "1", "7", "00", "01", "-1", "1.0", "1e3",
                                       "4294967296", "18446744073709551615",
                                       "18446744073709551616", "99999999999999999999",
                                       "1234567890123456789", "12345678901234567890", "64"};
    int iter;
    for (iter = 0; iter < 4000; iter++) {
        char a[512], b[600];
        const char *dt = dts[tu_rand64() % (sizeof dts / sizeof dts[0])];
        int rank = (int)(tu_rand64() % 4), k, la = 0, lb = 0;
        const char *b0 = tu_rand64() % 3 ? "0" : nums[tu_rand64() % 15];
        const char *b1 = nums[tu_rand64() % 15];
        safeload_file *fa = NULL, *fb = NULL;
        safeload_error ea, eb;
        safeload_result ra, rb;
        unsigned char *ia, *ib;
        size_t na, nb, dlen = (size_t)(tu_rand64() % 80);
        la += snprintf(a + la, sizeof a - (size_t)la, "{\"t\":{\"dtype\":\"%s\",\"shape\":[", dt);
        lb += snprintf(b + lb, sizeof b - (size_t)lb, "{\"t\":{\"dtype\": \"%s\",\"shape\": [", dt);
        for (k = 0; k < rank; k++) {
            const char *d = tu_rand64() % 4 ? (tu_rand64() % 2 ? "2" : "4") : nums[tu_rand64() % 15];
            la += snprintf(a + la, sizeof a - (size_t)la, "%s%s", k ? "," : "", d);
            lb += snprintf(b + lb, sizeof b - (size_t)lb, "%s%s", k ? "," : "", d);
        }
        la += snprintf(a + la, sizeof a - (size_t)la, "],\"data_offsets\":[%s,%s]}}", b0, b1);
        lb += snprintf(b + lb, sizeof b - (size_t)lb, "],\"data_offsets\": [%s,%s]}}", b0, b1);
        ia = mkimg(a, (size_t)la, NULL, dlen, &na);
        ib = mkimg(b, (size_t)lb, NULL, dlen, &nb);
        ra = safeload_open_memory(&fa, ia, na, NULL, &ea);
        rb = safeload_open_memory(&fb, ib, nb, NULL, &eb);
        CHECK_MSG(ra == rb, "%s -> %s but %s -> %s", a, safeload_result_id(ra), b,
                  safeload_result_id(rb));
        if (ra == SAFELOAD_OK && rb == SAFELOAD_OK) {
            const safeload_tensor *x = safeload_tensor_at(fa, 0), *y = safeload_tensor_at(fb, 0);
            CHECK(x && y && x->dtype == y->dtype && x->rank == y->rank && x->numel == y->numel &&
                  x->begin == y->begin && x->end == y->end &&
                  (x->rank == 0 || memcmp(x->shape, y->shape, x->rank * sizeof(uint64_t)) == 0));
        }
        safeload_close(fa);
        safeload_close(fb);
        free(ia);
        free(ib);
    }
}

int main(void) {
    g_corpus_dir = getenv("SAFELOAD_CORPUS_DIR");
#if !defined(_WIN32)
    signal(SIGALRM, on_alarm);
    alarm(120);
    snprintf(g_tmp_path, sizeof g_tmp_path, "/tmp/safeload_test_format_%d.safetensors", (int)getpid());
#else
    snprintf(g_tmp_path, sizeof g_tmp_path, "safeload_test_format_%u.safetensors",
             (unsigned)(tu_rand64() & 0xFFFFFF));
#endif
    if (getenv("SAFELOAD_TEST_SPLIT_ONLY")) {       /* (make test-tsan: the threaded part) */
        test_split_parse();
        return tu_finish("test_format (headers in parts)");
    }
    test_header_length();
    test_header_limit();
    test_utf8();
    test_fast_path_agrees();
    test_json_syntax();
    test_json_types();
    test_json_meta_depth();
    test_json_accepted();
    test_duplicates();
    test_offsets();
    test_incomplete();
    test_messages();
    test_reference_vector();
    test_no_alignment();
    test_dtypes();
    test_ranks();
    test_order();
    test_find();
    test_read();
    test_view();
    test_reader_errors();
    test_check_keys();
    test_result_ids();
    test_not_safetensors();
    test_block_boundaries();
    test_truncated_headers();
    test_json_more();
    test_scale();
    test_mutations();
    test_split_parse();
    test_allocator();
    test_reader_misbehaving();
    test_os_words();
    test_confine();
    test_many();
    test_reference_files();
    unlink(g_tmp_path);
    printf("  %d file images\n", g_case);
    return tu_finish("test_format");
}
