/* safeload - command-line tool for safetensors checkpoints, built on safeload.h.

     safeload inspect PATH [--json]     tensors (name, dtype, shape, size, offset) and metadata
     safeload verify PATH               validate; exit 0 ok, 1 invalid, 2 usage or I/O error
     safeload load PATH [options]       load every tensor into memory, report GB/s
     safeload keys PATH --expect FILE   names missing from / unexpected in the checkpoint;
                                        exit 0 same names, 1 they differ, 2 no answer (usage,
                                        I/O, an invalid checkpoint)
     safeload convert PATH OUT [--dtype f32|f16|bf16] [--threads N]
                                        one file holding every tensor (shards merged), cast
                                        while loading (tensors with no such cast as stored)
     safeload show PATH NAME [--count N|all]
                                        the first N values of one tensor (16 by default),
                                        each the shortest decimal that reads back exactly
     safeload sample OUT                write a small built-in checkpoint (for `make demo`)

   PATH is a .safetensors file, a model.safetensors.index.json, or a directory holding one. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#  include <windows.h>
static double now_seconds(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}
#else
#  include <sys/stat.h>
#  include <time.h>
static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#endif

static const char usage_text[] =
        "usage:\n"
        "  safeload inspect PATH [--json]\n"
        "  safeload verify PATH\n"
        "  safeload load PATH [--threads N] [--dtype f32|f16|bf16] [--io read|mmap|direct|auto]\n"
        "                     [--progress] [--checksum]\n"
        "  safeload keys PATH --expect NAMES_FILE\n"
        "  safeload convert PATH OUT [--dtype f32|f16|bf16] [--threads N]\n"
        "  safeload show PATH NAME [--count N|all]\n"
        "  safeload sample OUT\n"
        "  safeload --version | --help\n"
        "A PATH or OUT that starts with '-' goes after \"--\" (safeload verify -- -x).\n"
        "--opt=VALUE works as --opt VALUE; --expect - reads the names from standard input.\n";

static int usage(void) {
    fputs(usage_text, stderr);
    return 2;
}

static void put_str(FILE *o, const char *s);

/* "error: WHAT ARG", then the usage: says which argument was wrong before how to fix it */
static int usage_error(const char *what, const char *arg) {
    fprintf(stderr, "error: %s", what);
    if (arg) { fputc(' ', stderr); put_str(stderr, arg); }
    fputc('\n', stderr);
    return usage();
}

/* a command-line argument that was not understood: an option, a second PATH, or one missing */
static int bad_arg(const char *arg, const char *path) {
    if (arg[0] == '-') return usage_error("unknown option", arg);
    return usage_error(path ? "more than one PATH:" : "unexpected argument", arg);
}

/* The one PATH (or OUT) of a command without options; "--" may come before or after it, as
   with the other commands. 0 and *path set, or the exit status of the usage error. */
static int only_path(int argc, char **argv, const char *missing, const char *second,
                     const char **path) {
    int i, ends = 0;
    *path = NULL;
    for (i = 0; i < argc; i++) {
        if (!ends && strcmp(argv[i], "--") == 0) { ends = 1; continue; }
        if (!ends && argv[i][0] == '-') return bad_arg(argv[i], *path);
        if (*path) return usage_error(second, argv[i]);
        *path = argv[i];
    }
    return *path ? 0 : usage_error(missing, NULL);
}

/* The length of the well-formed UTF-8 sequence at p (no overlongs, surrogates or values past
   U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    size_t k, len;
    unsigned lo = 0x80, hi = 0xBF;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) len = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        len = 3;
        if (p[0] == 0xE0) lo = 0xA0;
        if (p[0] == 0xED) hi = 0x9F;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        len = 4;
        if (p[0] == 0xF0) lo = 0x90;
        if (p[0] == 0xF4) hi = 0x8F;
    } else return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (k = 2; k < len; k++) if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return len;
}

/* Characters that show nothing themselves but change how the text around them looks, or
   read as a space: C1 controls, the soft hyphen, joiners and zero-width characters, line and
   paragraph separators, bidirectional marks, embeddings, overrides and isolates, fillers,
   variation selectors, the BOM, interlinear annotation, and tag characters. s holds one
   well-formed sequence of k bytes. */
static int invisible(const unsigned char *s, size_t k) {
    unsigned long c;
    if (k == 2) c = (unsigned long)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    else if (k == 3) c = (unsigned long)(s[0] & 0x0F) << 12 | (unsigned long)(s[1] & 0x3F) << 6 |
                         (s[2] & 0x3F);
    else c = (unsigned long)(s[0] & 0x07) << 18 | (unsigned long)(s[1] & 0x3F) << 12 |
             (unsigned long)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    return (c >= 0x80 && c <= 0x9F) || c == 0xAD || c == 0x34F || c == 0x61C ||
           c == 0x115F || c == 0x1160 || c == 0x17B4 || c == 0x17B5 ||
           (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) ||
           (c >= 0x2028 && c <= 0x202E) || (c >= 0x2060 && c <= 0x206F) || c == 0x3164 ||
           (c >= 0xFE00 && c <= 0xFE0F) || c == 0xFEFF || c == 0xFFA0 ||
           (c >= 0xFFF0 && c <= 0xFFFB) || (c >= 0xE0000 && c <= 0xE0FFF);
}

/* Names, metadata, messages and paths may come from a hostile file or name: control bytes (C0,
   DEL), bytes that are not UTF-8 (a lone 0x9B is CSI to some terminals) and invisible
   characters (C1 controls, zero-width and bidirectional marks) are written as \xNN per byte,
   and a backslash as \\, so a checkpoint cannot drive the terminal, forge output lines or make
   one name look like another, and a name holding the text \x0a reads differently from one
   holding a newline. Pads to width columns, counting one per character (wide CJK characters are
   counted as one). Returns the columns written, or with o NULL writes nothing and returns the
   columns it would write before the padding. */
static size_t put_text(FILE *o, const char *s, size_t n, size_t width) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i, w = 0, k;
    for (i = 0; i < n; i++) {
        unsigned char c = u[i];
        if (c < 0x20 || c == 0x7F) { if (o) fprintf(o, "\\x%02x", c); w += 4; }
        else if (c == '\\') { if (o) fputs("\\\\", o); w += 2; }
        else if (c < 0x80) { if (o) fputc(c, o); w++; }
        else if ((k = utf8_len(u + i, n - i)) == 0) { if (o) fprintf(o, "\\x%02x", c); w += 4; }
        else if (invisible(u + i, k)) {
            size_t j;
            for (j = 0; j < k; j++) if (o) fprintf(o, "\\x%02x", u[i + j]);
            w += 4 * k;
            i += k - 1;
        } else {
            if (o) fwrite(u + i, 1, k, o);
            w++;
            i += k - 1;
        }
    }
    if (!o) return w;
    for (; w < width; w++) fputc(' ', o);
    return w;
}
static void put_str(FILE *o, const char *s) { (void)put_text(o, s, strlen(s), 0); }

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* Is kept (a safeload_error field of cap bytes) the text s of n bytes as the library keeps
   it? It writes control characters, invisible ones and bytes that are not UTF-8 as '?' (one
   per byte) and, when the text does not fit, cuts it at a UTF-8 boundary with "..." after the
   part kept. Any byte of those kinds may have become '?'. */
static int kept_as(const char *kept, size_t cap, const char *s, size_t n) {
    size_t fl = strlen(kept), k = n, i;
    if (n >= cap) {
        k = cap - 4;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        if (fl != k + 3 || memcmp(kept + k, "...", 3) != 0) return 0;
    } else if (fl != n) return 0;
    for (i = 0; i < k; i++)
        if (kept[i] != s[i] && !(kept[i] == '?' && ((unsigned char)s[i] < 0x20 ||
                                                    (unsigned char)s[i] >= 0x7F))) return 0;
    return 1;
}
static int same_file(const safeload_error *e, const char *path) {
    return kept_as(e->file, sizeof e->file, path, strlen(path));
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* Is p a directory? Asked only where a cut path cannot tell a file from a shard under it; a
   stat, not an open, so a pipe's name cannot block the question. */
static int is_directory(const char *p) {
#if defined(_WIN32)
    wchar_t w[32768];
    DWORD a;
    if (!MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, p, -1, w, 32768)) return 0;
    a = GetFileAttributesW(w);
    return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY) != 0;
#else
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
#endif
}

/* Is e->file surely the path given? Where both were cut (a path of 512 bytes or more), a shard
   under a long directory or index path looks the same: only a .safetensors path given that is
   not a directory names no other file. */
static int surely_path(const safeload_error *e, const char *path) {
    size_t n = strlen(path);
    if (!same_file(e, path)) return 0;
    if (n < sizeof e->file) return 1;
    return ends_with(path, ".safetensors") && !is_directory(path);
}

/* Where an error or warning is: the file in full where we know it (the path given or a shard
   of the open model; m may be NULL), else e->file as the library kept it, and the shard when
   it is one. A cut e->file can fit several (the shards of a long directory): the shard holding
   the named tensor wins, then the path given, then a shard that alone fits. hint (may be NULL)
   is where the scan starts and is left at the shard found: warnings come shard by shard, so a
   thousand of them over thousands of shards do not scan every shard each. */
typedef struct where { const char *file; const safeload_file *shard; } where;
static where locate(const safeload_error *e, const char *path, const safeload_model *m,
                    size_t *hint) {
    where r;
    const safeload_file *hit = NULL;
    size_t n = m ? safeload_model_shard_count(m) : 0, j, hits = 0;
    size_t start = hint && *hint < n ? *hint : 0;
    r.file = path;
    r.shard = NULL;
    if (!e->file[0] || (strlen(path) < sizeof e->file && same_file(e, path))) {
        if (n == 1 && strcmp(safeload_file_path(safeload_model_shard(m, 0)), path) == 0)
            r.shard = safeload_model_shard(m, 0);             /* a single file given */
        return r;
    }
    for (j = 0; j < n; j++) {
        size_t k = (start + j) % n;
        const safeload_file *f = safeload_model_shard(m, k);
        const char *p = safeload_file_path(f);
        if (!p || !same_file(e, p)) continue;
        if (strlen(p) < sizeof e->file || (e->tensor[0] && safeload_find(f, e->tensor))) {
            if (hint) *hint = k;
            r.file = p;
            r.shard = f;
            return r;
        }
        hit = f;
        hits++;
    }
    if (surely_path(e, path)) return r;
    if (hits == 1) {
        r.file = safeload_file_path(hit);
        r.shard = hit;
    } else {
        r.file = e->file;
    }
    return r;
}

/* The tensor a warning or error is about, in full: safeload_error.tensor is cut at 255 bytes
   and has '?' for control bytes, so the shard's own entry is looked up: the one whose name the
   kept one fits and whose header entry (a warning) or bytes (a load error) hold the offset. */
static const char *full_tensor(const safeload_error *e, const safeload_file *shard,
                               size_t *len) {
    const safeload_tensor *t = shard ? safeload_find(shard, e->tensor) : NULL;
    size_t i;
    uint64_t at = e->offset;
    if (t) { *len = t->name_len; return t->name; }
    for (i = 0; shard && at != SAFELOAD_NO_OFFSET && i < safeload_tensor_count(shard); i++) {
        t = safeload_tensor_at(shard, i);
        if ((at == t->header_offset || (at >= t->file_offset && at - t->file_offset < t->nbytes))
            && kept_as(e->tensor, sizeof e->tensor, t->name, t->name_len)) {
            *len = t->name_len;
            return t->name;
        }
    }
    *len = strlen(e->tensor);
    return e->tensor;
}

/* Does e->tensor hold a metadata key? The library says so in the message, in words its
   messages end with (so a shard name quoted in a message cannot pass for one). */
static int is_key_error(const safeload_error *e) {
    if (e->code == SAFELOAD_DUPLICATE_KEY || e->code == SAFELOAD_INVALID_INDEX)
        if (strcmp(e->message, "metadata key appears twice") == 0) return 1;
    if (e->code != SAFELOAD_INVALID_JSON && e->code != SAFELOAD_INVALID_UTF8 &&
        e->code != SAFELOAD_INVALID_INDEX)
        return 0;
    return ends_with(e->message, " in __metadata__") ||
           ends_with(e->message, " in the index's metadata");
}

/* " [tensor NAME]": safeload_error.tensor holds a tensor name, a metadata key or a hook name
   (name: the full name where the caller knows it, else NULL) */
static void put_name_as(FILE *o, const safeload_error *e, const char *name, size_t len) {
    const char *label = "tensor";
    if (!e->tensor[0]) return;
    if (e->code == SAFELOAD_HOOK_MISSING ||
        (e->code == SAFELOAD_HOOK_FAILED && e->offset == SAFELOAD_NO_OFFSET)) label = "hook";
    else if (is_key_error(e)) label = "metadata key";
    fprintf(o, " [%s ", label);
    if (name) put_text(o, name, len, 0);
    else put_str(o, e->tensor);
    fputc(']', o);
}
static void put_name(FILE *o, const safeload_error *e) { put_name_as(o, e, NULL, 0); }

/* " (byte N)", unless the message already says so in the library's words, "at byte N" and a
   space, comma, ')' or the end after it (a path quoted in the message may hold "byte N") */
static void put_offset(FILE *o, const safeload_error *e) {
    char b[40];
    const char *at = e->message;
    size_t n;
    if (e->offset == SAFELOAD_NO_OFFSET) return;
    n = (size_t)snprintf(b, sizeof b, " at byte %llu", (unsigned long long)e->offset);
    while ((at = strstr(at, b)) != NULL) {
        if (at[n] == 0 || at[n] == ' ' || at[n] == ',' || at[n] == ')') return;
        at += n;
    }
    fprintf(o, " (%s)", b + 4);
}

/* KIND: FILE: ID: message [tensor NAME] (byte N), KIND "warning" or "error"; m (may be NULL)
   is the open model, whose shards give files and tensor names in full */
static void print_report(const char *kind, const char *path, const safeload_error *w,
                         const safeload_model *m, size_t *hint) {
    size_t len;
    where at = locate(w, path, m, hint);
    const char *name = full_tensor(w, at.shard, &len);
    fprintf(stderr, "%s: ", kind);
    put_str(stderr, at.file);
    fprintf(stderr, ": %s: ", safeload_result_id(w->code));
    put_str(stderr, w->message);
    put_name_as(stderr, w, name, len);
    put_offset(stderr, w);
    fputc('\n', stderr);
}

static void print_warnings(const char *path, const safeload_model *m) {
    size_t k, hint = 0;
    for (k = 0; k < safeload_model_warning_count(m); k++)
        print_report("warning", path, safeload_model_warning(m, k), m, &hint);
    fflush(stderr);          /* where line buffering is full buffering (the MSVC runtime) */
}

static void print_error(const char *path, const safeload_error *e, const safeload_model *m) {
    print_report("error", path, e, m, NULL);
    fflush(stderr);
}

/* Errors that mean "could not even look at the file" exit 2, like usage errors. */
static int is_io(safeload_result r) {
    return r == SAFELOAD_IO_ERROR || r == SAFELOAD_OUT_OF_MEMORY ||
           r == SAFELOAD_INVALID_ARGUMENT || r == SAFELOAD_THREAD_ERROR ||
           r == SAFELOAD_INDEX_SHARD_MISSING || r == SAFELOAD_NOT_FOUND;
}

static void json_string(FILE *o, const char *s, size_t n) {
    size_t i;
    fputc('"', o);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", o); break;
        case '\\': fputs("\\\\", o); break;
        case '\n': fputs("\\n", o); break;
        case '\r': fputs("\\r", o); break;
        case '\t': fputs("\\t", o); break;
        case '\b': fputs("\\b", o); break;
        case '\f': fputs("\\f", o); break;
        default:
            if (c < 0x20) fprintf(o, "\\u%04x", c);
            else if (c < 0x80) fputc(c, o);
            else {
                /* a well-formed UTF-8 sequence as it is; any other byte (a file name need
                   not be UTF-8) as U+FFFD, so the output stays valid JSON */
                size_t k = utf8_len((const unsigned char *)s + i, n - i);
                if (k) { fwrite(s + i, 1, k, o); i += k - 1; }
                else fputs("\\ufffd", o);
            }
        }
    }
    fputc('"', o);
}

static const char *dtype_str(safeload_dtype d) {   /* a parsed file's dtypes all have names */
    const char *s = safeload_dtype_name(d);
    return s ? s : "?";
}

/* "[d0, d1, ...]"; dimensions that do not fit (each needs up to 22 characters, and ", ...]"
   must still fit after them) are cut as ", ...". cap >= 32. */
static void shape_string(char *buf, size_t cap, const safeload_tensor *t) {
    size_t at = 1;
    uint32_t k;
    buf[0] = '[';
    for (k = 0; k < t->rank && at + 22 + 7 < cap; k++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%llu", k ? ", " : "",
                               (unsigned long long)t->shape[k]);
    snprintf(buf + at, cap - at, "%s]", k < t->rank ? ", ..." : "");
}

static void human_bytes(char *buf, size_t cap, uint64_t n) {
    if (n < 1024) snprintf(buf, cap, "%llu B", (unsigned long long)n);
    else if (n < 1024 * 1024) snprintf(buf, cap, "%.1f KiB", (double)n / 1024.0);
    else if (n < (uint64_t)1024 * 1024 * 1024) snprintf(buf, cap, "%.1f MiB", (double)n / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", (double)n / 1073741824.0);
}

/* A tensor of shard k that the model leaves out: in the shard but not in the index's
   weight_map (INDEX_UNLISTED_TENSOR, a warning). m is NULL for a single file. */
static int unlisted(const safeload_model *m, size_t k, const safeload_tensor *t) {
    size_t shard;
    return m && (!safeload_model_find(m, t->name, &shard) || shard != k);
}

static void inspect_table(const safeload_file *f, const char *path, const safeload_model *m,
                          size_t shard) {
    size_t i, n = safeload_tensor_count(f), w = 4;
    char shape[96], size[32];
    for (i = 0; i < n; i++) {      /* as printed, escapes and all */
        const safeload_tensor *t = safeload_tensor_at(f, i);
        size_t tw = put_text(NULL, t->name, t->name_len, 0);
        if (tw > w) w = tw;
        if (w >= 72) break;
    }
    if (w > 72) w = 72;
    put_str(stdout, path);
    printf(": %llu tensor%s, header %llu byte%s, data %llu byte%s\n",
           (unsigned long long)n, plural(n), (unsigned long long)safeload_header_size(f),
           plural(safeload_header_size(f)), (unsigned long long)safeload_data_size(f),
           plural(safeload_data_size(f)));
    if (safeload_has_metadata(f)) {
        printf("metadata:\n");
        for (i = 0; i < safeload_metadata_count(f); i++) {
            const safeload_kv *kv = safeload_metadata_at(f, i);
            printf("  ");
            put_text(stdout, kv->key, kv->key_len, 0);
            printf(": ");
            put_text(stdout, kv->value, kv->value_len, 0);
            putchar('\n');
        }
    }
    printf("%-*s  %-11s  %-20s  %10s  %s\n", (int)w, "name", "dtype", "shape", "size", "offset");
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_tensor_at(f, i);
        shape_string(shape, sizeof shape, t);
        human_bytes(size, sizeof size, t->nbytes);
        put_text(stdout, t->name, t->name_len, w);
        printf("  %-11s  %-20s  %10s  %llu%s\n", dtype_str(t->dtype), shape, size,
               (unsigned long long)t->begin,
               unlisted(m, shard, t) ? "  (unlisted: not in the model)" : "");
    }
}

/* one line; the sharded form puts one of these in each shard object, where a tensor the index
   does not list has "unlisted":true */
static void inspect_json(const safeload_file *f, const safeload_model *m, size_t shard) {
    size_t i, n = safeload_tensor_count(f);
    uint32_t k;
    printf("{\"header_bytes\":%llu,\"data_bytes\":%llu,\"metadata\":{",
           (unsigned long long)safeload_header_size(f), (unsigned long long)safeload_data_size(f));
    for (i = 0; i < safeload_metadata_count(f); i++) {
        const safeload_kv *kv = safeload_metadata_at(f, i);
        if (i) putchar(',');
        json_string(stdout, kv->key, kv->key_len);
        putchar(':');
        json_string(stdout, kv->value, kv->value_len);
    }
    printf("},\"tensors\":[");
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_tensor_at(f, i);
        if (i) putchar(',');
        printf("{\"name\":");
        json_string(stdout, t->name, t->name_len);
        printf(",\"dtype\":\"%s\",\"shape\":[", dtype_str(t->dtype));
        for (k = 0; k < t->rank; k++) printf("%s%llu", k ? "," : "", (unsigned long long)t->shape[k]);
        printf("],\"data_offsets\":[%llu,%llu]%s}", (unsigned long long)t->begin,
               (unsigned long long)t->end, unlisted(m, shard, t) ? ",\"unlisted\":true" : "");
    }
    printf("]}");
}

/* A file, an index or a directory: single files keep the exact single-file output. */
static safeload_result open_model(const char *path, safeload_model **m, safeload_error *e) {
    return safeload_model_open(m, path, NULL, e);
}

/* error: PATH: ID: message [tensor NAME] [file FILE] (byte N), FILE when not PATH itself
   (a shard or the index of a directory given) */
static void print_verify_error(const char *path, const safeload_error *e) {
    printf("error: ");
    put_str(stdout, path);
    printf(": %s: ", safeload_result_id(e->code));
    put_str(stdout, e->message);
    put_name(stdout, e);
    if (e->file[0] && !surely_path(e, path)) {
        printf(" [file ");
        put_str(stdout, e->file);
        putchar(']');
    }
    put_offset(stdout, e);
    printf("\n");
}

static int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, ends = 0, i;     /* ends: after "--", every argument is a PATH */
    safeload_model *m;
    safeload_error e;
    safeload_result r;
    size_t k, n, hint = 0;            /* hint: the shard of the last warning (locate) */
    for (i = 0; i < argc; i++) {
        if (!ends && strcmp(argv[i], "--") == 0) { ends = 1; continue; }
        if (ends) {
            if (path) return usage_error("more than one PATH:", argv[i]);
            path = argv[i];
        } else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (!path && argv[i][0] != '-') path = argv[i];
        else return bad_arg(argv[i], path);
    }
    if (!path) return usage_error("inspect needs a PATH", NULL);
    r = open_model(path, &m, &e);
    if (r != SAFELOAD_OK) { print_error(path, &e, NULL); return is_io(r) ? 2 : 1; }
    n = safeload_model_shard_count(m);
    if (!safeload_model_has_index(m)) {
        if (json) { inspect_json(safeload_model_shard(m, 0), NULL, 0); putchar('\n'); }
        else inspect_table(safeload_model_shard(m, 0), path, NULL, 0);
    } else if (json) {
        /* a sharded model: the index metadata, then each shard as a single-file object */
        printf("{\"metadata\":{");
        for (k = 0; k < safeload_model_metadata_count(m); k++) {
            const safeload_kv *kv = safeload_model_metadata_at(m, k);
            if (k) putchar(',');
            json_string(stdout, kv->key, kv->key_len);
            putchar(':');
            json_string(stdout, kv->value, kv->value_len);
        }
        printf("},\"shards\":[");
        for (k = 0; k < n; k++) {
            if (k) putchar(',');
            printf("{\"file\":");
            json_string(stdout, safeload_file_path(safeload_model_shard(m, k)),
                        strlen(safeload_file_path(safeload_model_shard(m, k))));
            printf(",\"checkpoint\":");
            inspect_json(safeload_model_shard(m, k), m, k);
            printf("}");
        }
        /* the warnings also go to stderr below, as for every command */
        printf("],\"warnings\":[");
        for (k = 0; k < safeload_model_warning_count(m); k++) {
            const safeload_error *w = safeload_model_warning(m, k);
            where at = locate(w, path, m, &hint);
            const char *file = at.file, *name;
            size_t len;
            name = full_tensor(w, at.shard, &len);
            if (k) putchar(',');
            printf("{\"id\":\"%s\",\"file\":", safeload_result_id(w->code));
            json_string(stdout, file, strlen(file));
            printf(",\"tensor\":");
            json_string(stdout, name, len);
            if (w->offset != SAFELOAD_NO_OFFSET)
                printf(",\"byte\":%llu", (unsigned long long)w->offset);
            printf(",\"message\":");
            json_string(stdout, w->message, strlen(w->message));
            putchar('}');
        }
        printf("]}\n");
    } else {
        size_t nt = safeload_model_tensor_count(m);
        put_str(stdout, path);
        printf(": %llu shard%s, %llu tensor%s\n", (unsigned long long)n, plural(n),
               (unsigned long long)nt, plural(nt));
        for (k = 0; k < safeload_model_metadata_count(m); k++) {
            const safeload_kv *kv = safeload_model_metadata_at(m, k);
            printf("  index ");
            put_text(stdout, kv->key, kv->key_len, 0);
            printf(": ");
            put_text(stdout, kv->value, kv->value_len, 0);
            putchar('\n');
        }
        for (k = 0; k < n; k++) {
            printf("\n");
            inspect_table(safeload_model_shard(m, k), safeload_file_path(safeload_model_shard(m, k)),
                          m, k);
        }
    }
    print_warnings(path, m);
    safeload_model_close(m);
    return 0;
}

static int cmd_verify(int argc, char **argv) {
    safeload_model *m;
    safeload_error e;
    safeload_result r;
    uint64_t bytes = 0;
    size_t k;
    const char *path;
    int bad = only_path(argc, argv, "verify needs a PATH", "more than one PATH:", &path);
    if (bad) return bad;
    r = open_model(path, &m, &e);
    if (r != SAFELOAD_OK) {
        print_verify_error(path, &e);
        return is_io(r) ? 2 : 1;
    }
    /* the model's tensors: an unlisted shard tensor (a warning) is not part of it */
    for (k = 0; k < safeload_model_tensor_count(m); k++)
        bytes += safeload_model_tensor_at(m, k, NULL)->nbytes;
    print_warnings(path, m);
    k = safeload_model_tensor_count(m);
    printf("ok: ");
    put_str(stdout, path);
    printf(": %llu tensor%s, %llu byte%s\n", (unsigned long long)k, plural(k),
           (unsigned long long)bytes, plural(bytes));
    safeload_model_close(m);
    return 0;
}

/* A small checkpoint with one tensor of each common kind, values from a fixed recipe. */
static int cmd_sample(int argc, char **argv) {
    static uint16_t emb[64 * 32], q[32 * 32];
    static float norm[32];
    static double scale = 0.125;
    static unsigned char fp8[16 * 32];
    static const uint64_t s_emb[] = {64, 32}, s_q[] = {32, 32}, s_norm[] = {32},
                          s_fp8[] = {16, 32}, s_empty[] = {0};
    safeload_save_tensor t[6];
    safeload_kv meta[2];
    safeload_save_desc d;
    safeload_error e;
    uint32_t x = 12345;
    int i;
    const char *out;
    int bad = only_path(argc, argv, "sample needs an OUT path", "unexpected argument", &out);
    if (bad) return bad;
    for (i = 0; i < 64 * 32; i++) {            /* bf16 of small signed values */
        float v = (float)((int)((x = x * 1103515245u + 12345u) >> 20 & 255) - 128) / 256.0f;
        uint32_t b;
        memcpy(&b, &v, 4);
        emb[i] = (uint16_t)(b >> 16);
    }
    for (i = 0; i < 32 * 32; i++) q[i] = (uint16_t)(0x3000 + ((x = x * 1103515245u + 12345u) >> 22));
    for (i = 0; i < 32; i++) norm[i] = 1.0f + (float)i / 64.0f;
    for (i = 0; i < 16 * 32; i++) fp8[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 24 & 0x7E);
    memset(t, 0, sizeof t);
    t[0].name = "model.embed_tokens.weight"; t[0].dtype = SAFELOAD_BF16; t[0].rank = 2;
    t[0].shape = s_emb; t[0].data = emb; t[0].nbytes = sizeof emb;
    t[1].name = "model.layers.0.self_attn.q_proj.weight"; t[1].dtype = SAFELOAD_F16; t[1].rank = 2;
    t[1].shape = s_q; t[1].data = q; t[1].nbytes = sizeof q;
    t[2].name = "model.norm.weight"; t[2].dtype = SAFELOAD_F32; t[2].rank = 1;
    t[2].shape = s_norm; t[2].data = norm; t[2].nbytes = sizeof norm;
    t[3].name = "lm_head.scale"; t[3].dtype = SAFELOAD_F64; t[3].rank = 0;
    t[3].data = &scale; t[3].nbytes = sizeof scale;
    t[4].name = "model.layers.0.mlp.experts.3.up_proj.weight"; t[4].dtype = SAFELOAD_F8_E4M3;
    t[4].rank = 2; t[4].shape = s_fp8; t[4].data = fp8; t[4].nbytes = sizeof fp8;
    t[5].name = "empty.bias"; t[5].dtype = SAFELOAD_F16; t[5].rank = 1; t[5].shape = s_empty;
    meta[0].key = "format"; meta[0].key_len = 6; meta[0].value = "pt"; meta[0].value_len = 2;
    meta[1].key = "source"; meta[1].key_len = 6;
    meta[1].value = "safeload sample"; meta[1].value_len = 15;
    memset(&d, 0, sizeof d);
    d.metadata = meta;
    d.metadata_count = 2;
    if (safeload_save(out, t, 6, &d, &e) != SAFELOAD_OK) { print_error(out, &e, NULL); return 2; }
    printf("wrote ");
    put_str(stdout, out);
    putchar('\n');
    return 0;
}

/* ---- load ---- */

typedef struct bar_state { double t0; int shown; } bar_state;

static int progress_bar(void *user, uint64_t done, uint64_t total) {
    bar_state *b = (bar_state *)user;
    int i, w = 40, fill = total ? (int)((double)done / (double)total * w) : w;
    double secs = now_seconds() - b->t0;
    fprintf(stderr, "\r[");
    for (i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %3d%%  %.2f / %.2f GB  %.2f GB/s ", total ? (int)(100.0 * (double)done / (double)total) : 100,
            (double)done / 1e9, (double)total / 1e9, secs > 0 ? (double)done / 1e9 / secs : 0.0);
    if (done == total) fputc('\n', stderr);
    b->shown = 1;
    fflush(stderr);
    return 0;
}

/* s is word in any case ("bf16", "BF16", "Bf16") */
static int same_word(const char *s, const char *word) {
    for (; *s && *word; s++, word++)
        if ((*s >= 'A' && *s <= 'Z' ? *s + 32 : *s) != *word) return 0;
    return *s == 0 && *word == 0;
}

static int parse_dtype(const char *s, safeload_dtype *out) {
    if (same_word(s, "f32")) *out = SAFELOAD_F32;
    else if (same_word(s, "f16")) *out = SAFELOAD_F16;
    else if (same_word(s, "bf16")) *out = SAFELOAD_BF16;
    else return 0;
    return 1;
}

/* a whole number 0..1024 (0: the default), digits only: no sign, no spaces */
static int parse_threads(const char *v, int *out) {
    long n = 0;
    size_t j;
    for (j = 0; v[j] >= '0' && v[j] <= '9' && n <= 1024; j++) n = n * 10 + (v[j] - '0');
    if (j == 0 || v[j] || n > 1024) return 0;
    *out = (int)n;
    return 1;
}

static int cmd_load(int argc, char **argv) {
    const char *path = NULL;
    safeload_dtype dtype = SAFELOAD_DTYPE_NONE;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_model *m = NULL;
    safeload_loaded *l = NULL;
    safeload_error e;
    safeload_result r;
    bar_state bar;
    int i, checksum = 0, ends = 0;    /* ends: after "--", every argument is a PATH */
    double t0, t1, t2;
    static const char *const io_names[] = {"default", "read", "mmap", "direct", "auto"};
    char io_text[96];
    memset(&d, 0, sizeof d);
    for (i = 0; i < argc; i++) {
        if (!ends && strcmp(argv[i], "--") == 0) { ends = 1; continue; }
        if (ends) {
            if (path) return usage_error("more than one PATH:", argv[i]);
            path = argv[i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i], &d.threads))
                return usage_error("--threads takes a whole number from 0 to 1024, not", argv[i]);
        }
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            if (!parse_dtype(argv[++i], &dtype))
                return usage_error("--dtype takes f32, f16 or bf16, not", argv[i]);
        } else if (strcmp(argv[i], "--io") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (same_word(v, "read")) d.io = SAFELOAD_IO_READ;
            else if (same_word(v, "mmap")) d.io = SAFELOAD_IO_MMAP;
            else if (same_word(v, "direct")) d.io = SAFELOAD_IO_DIRECT;
            else if (same_word(v, "auto")) d.io = SAFELOAD_IO_AUTO;
            else return usage_error("--io takes read, mmap, direct or auto, not", v);
        } else if (strcmp(argv[i], "--progress") == 0) {
            d.progress = progress_bar;
            d.progress_user = &bar;
        } else if (strcmp(argv[i], "--checksum") == 0) checksum = 1;
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (i + 1 == argc && (strcmp(argv[i], "--threads") == 0 ||
                                   strcmp(argv[i], "--dtype") == 0 || strcmp(argv[i], "--io") == 0))
            return usage_error("a value is missing after", argv[i]);
        else return bad_arg(argv[i], path);
    }
    if (!path) return usage_error("load needs a PATH", NULL);
    d.stats = &st;
    bar.shown = 0;
    /* the rate is the load's alone: opening (the headers, the index) is timed apart */
    t0 = now_seconds();
    r = safeload_model_open(&m, path, NULL, &e);
    t1 = now_seconds();
    bar.t0 = t1;
    if (r == SAFELOAD_OK) r = safeload_load_all(m, dtype, &d, &l, &e);
    t2 = now_seconds();
    if (r != SAFELOAD_OK) {
        if (bar.shown) fputc('\n', stderr);
        if (m) print_warnings(path, m);         /* the model opened: what it found still holds */
        print_error(path, &e, m);
        safeload_model_close(m);
        return is_io(r) ? 2 : 1;
    }
    print_warnings(path, m);
    /* auto: which files went direct (the page cache did not hold their bytes) */
    if (d.io == SAFELOAD_IO_AUTO)
        snprintf(io_text, sizeof io_text, "auto: %d of %llu file%s direct", st.direct_files,
                 (unsigned long long)safeload_model_shard_count(m),
                 plural(safeload_model_shard_count(m)));
    else
        snprintf(io_text, sizeof io_text, "%s", io_names[st.io]);
    printf("loaded: %llu tensor%s, %llu byte%s in %.3f s, %.2f GB/s (opened in %.3f s; %llu "
           "byte%s written; %d thread%s, io %s)\n", (unsigned long long)l->count,
           plural(l->count), (unsigned long long)st.bytes_read, plural(st.bytes_read), t2 - t1,
           (double)st.bytes_read / 1e9 / (t2 - t1 > 0 ? t2 - t1 : 1e-9), t1 - t0,
           (unsigned long long)st.bytes_written, plural(st.bytes_written), st.threads,
           st.threads == 1 ? "" : "s", io_text);
    if (checksum) {
        uint64_t h = 0xcbf29ce484222325ULL;
        size_t k;
        for (k = 0; k < l->count; k++) {
            const unsigned char *p = (const unsigned char *)l->tensors[k].data;
            uint64_t j;
            for (j = 0; j < l->tensors[k].nbytes; j++) { h ^= p[j]; h *= 0x100000001b3ULL; }
        }
        printf("checksum: %016llx\n", (unsigned long long)h);
    }
    safeload_loaded_free(l);
    safeload_model_close(m);
    return 0;
}

/* ---- convert ---- */

/* Every tensor of the model into one file at OUT (written atomically, so OUT may be PATH):
   cast to --dtype where a cast exists, else as stored. The metadata is the first file's (the
   checkpoint's own, or the first shard's: an index's metadata describes the shards). */
static int cmd_convert(int argc, char **argv) {
    const char *path = NULL, *out = NULL;
    safeload_dtype dtype = SAFELOAD_DTYPE_NONE;
    safeload_load_desc d;
    safeload_save_desc sd;
    safeload_model *m = NULL;
    safeload_loaded *l = NULL;
    safeload_save_tensor *ts = NULL;
    safeload_kv *meta = NULL;
    const safeload_file *first;
    safeload_error e;
    safeload_result r;
    size_t k, n_meta, cast = 0;
    uint64_t bytes = 0;
    int i, ends = 0;
    memset(&d, 0, sizeof d);
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!ends && strcmp(a, "--") == 0) { ends = 1; continue; }
        if (!ends && strcmp(a, "--dtype") == 0 && i + 1 < argc) {
            if (!parse_dtype(argv[++i], &dtype))
                return usage_error("--dtype takes f32, f16 or bf16, not", argv[i]);
        } else if (!ends && strcmp(a, "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i], &d.threads))
                return usage_error("--threads takes a whole number from 0 to 1024, not", argv[i]);
        } else if (!ends && i + 1 == argc && (strcmp(a, "--dtype") == 0 ||
                                                strcmp(a, "--threads") == 0)) {
            return usage_error("a value is missing after", a);
        } else if (!ends && a[0] == '-') {
            return usage_error("unknown option", a);
        } else if (!path) path = a;
        else if (!out) out = a;
        else return usage_error("unexpected argument", a);
    }
    if (!out) return usage_error(path ? "convert needs an OUT path" : "convert needs a PATH and "
                                 "an OUT path", NULL);
    r = open_model(path, &m, &e);
    if (r == SAFELOAD_OK) r = safeload_load_all(m, dtype, &d, &l, &e);
    if (r != SAFELOAD_OK) {
        if (m) print_warnings(path, m);
        print_error(path, &e, m);
        safeload_model_close(m);
        return is_io(r) ? 2 : 1;
    }
    print_warnings(path, m);
    first = safeload_model_shard(m, 0);
    n_meta = first ? safeload_metadata_count(first) : 0;
    ts = (safeload_save_tensor *)calloc(l->count + 1, sizeof *ts);
    meta = (safeload_kv *)calloc(n_meta + 1, sizeof *meta);
    if (!ts || !meta) {
        fprintf(stderr, "error: out of memory\n");
        r = SAFELOAD_OUT_OF_MEMORY;
    } else {
        for (k = 0; k < l->count; k++) {
            const safeload_request *q = &l->tensors[k];
            ts[k].name = q->tensor->name;
            ts[k].dtype = q->dtype ? q->dtype : q->tensor->dtype;
            ts[k].rank = q->tensor->rank;
            ts[k].shape = q->tensor->shape;
            ts[k].data = q->data;
            ts[k].nbytes = q->nbytes;
            cast += ts[k].dtype != q->tensor->dtype;
            bytes += q->nbytes;
        }
        for (k = 0; k < n_meta; k++) meta[k] = *safeload_metadata_at(first, k);
        memset(&sd, 0, sizeof sd);
        sd.metadata = meta;
        sd.metadata_count = n_meta;
        if (first && safeload_has_metadata(first) && !n_meta)
            sd.flags = SAFELOAD_SAVE_EMPTY_METADATA;
        r = safeload_save(out, ts, l->count, &sd, &e);
        if (r != SAFELOAD_OK) print_error(out, &e, NULL);
    }
    if (r == SAFELOAD_OK) {
        printf("wrote ");
        put_str(stdout, out);
        printf(": %llu tensor%s, %llu byte%s of data (", (unsigned long long)l->count,
               plural(l->count), (unsigned long long)bytes, plural(bytes));
        if (!cast) printf("as stored)\n");
        else if (cast == l->count) printf("all cast to %s)\n", safeload_dtype_name(dtype));
        else printf("%llu cast to %s, %llu as stored)\n", (unsigned long long)cast,
                    safeload_dtype_name(dtype), (unsigned long long)(l->count - cast));
    }
    free(ts);
    free(meta);
    safeload_loaded_free(l);
    safeload_model_close(m);
    return r == SAFELOAD_OK ? 0 : 2;
}

/* ---- show ---- */

/* Exact decimal digits, from integer arithmetic rather than printf and strtod: C runtimes
   differ on exact ties (0.3125 to three digits is 0.312 in glibc and today's UCRT, 0.313 in
   others), and old ones misread some long inputs. Numbers up to 1536 bits hold any double
   scaled by the powers of 10 and 2 that the digits and the comparisons need. */
typedef struct { uint32_t w[48]; int n; } big;          /* little-endian 32-bit words */

static void big_set(big *b, uint64_t v) {
    b->w[0] = (uint32_t)v, b->w[1] = (uint32_t)(v >> 32), b->n = 2;
    while (b->n > 0 && b->w[b->n - 1] == 0) b->n--;
}
static void big_mul(big *b, uint32_t k) {
    uint64_t c = 0;
    int i;
    for (i = 0; i < b->n; i++) {
        c += (uint64_t)b->w[i] * k;
        b->w[i] = (uint32_t)c;
        c >>= 32;
    }
    if (c) b->w[b->n++] = (uint32_t)c;
}
static void big_pow10(big *b, int k) {                  /* b *= 10^k, k >= 0 */
    for (; k >= 9; k -= 9) big_mul(b, 1000000000u);
    for (; k > 0; k--) big_mul(b, 10);
}
static void big_shl(big *b, int s) {                    /* b <<= s, s >= 0 */
    int i, q = s / 32, r = s % 32;
    if (b->n == 0) return;
    b->w[b->n + q] = 0;
    for (i = b->n - 1; i >= 0; i--) {
        b->w[i + q + 1] |= r ? b->w[i] >> (32 - r) : 0;
        b->w[i + q] = b->w[i] << r;
    }
    for (i = 0; i < q; i++) b->w[i] = 0;
    b->n += q + 1;
    while (b->n > 0 && b->w[b->n - 1] == 0) b->n--;
}
static int big_cmp(const big *a, const big *b) {
    int i;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (i = a->n - 1; i >= 0; i--)
        if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}
static void big_sub(big *a, const big *b) {              /* a -= b, a >= b */
    int64_t c = 0;
    int i;
    for (i = 0; i < a->n; i++) {
        c += (int64_t)a->w[i] - (i < b->n ? (int64_t)b->w[i] : 0);
        a->w[i] = (uint32_t)c;
        c = c < 0 ? -1 : 0;
    }
    while (a->n > 0 && a->w[a->n - 1] == 0) a->n--;
}
/* compare q * 10^k with m * 2^j exactly */
static int big_cmp_scaled(uint64_t q, int k, uint64_t m, int j) {
    big x, y;
    big_set(&x, q);
    big_set(&y, m);
    if (k >= 0) big_pow10(&x, k); else big_pow10(&y, -k);
    if (j >= 0) big_shl(&y, j); else big_shl(&x, -j);
    return big_cmp(&x, &y);
}

/* |v| (finite, non-zero) to p significant digits, rounded to nearest-even: *q (p digits) and
   the decimal exponent *x of its first digit */
static void decimal_digits(double v, int p, uint64_t *q, int *x) {
    int e, bit, tries;
    uint64_t m = (uint64_t)ldexp(frexp(fabs(v), &e), 53), lo = 1, r;
    e -= 53;                                             /* |v| = m * 2^e */
    for (bit = 1; bit < p; bit++) lo *= 10;              /* 10^(p-1) */
    *x = (int)floor(log10(fabs(v)));
    for (tries = 0; tries < 4; tries++) {                /* log10 may be one off */
        big n, d, t;
        int k = *x - p + 1, c;
        big_set(&n, m);
        big_set(&d, 1);
        if (e >= 0) big_shl(&n, e); else big_shl(&d, -e);
        if (k >= 0) big_pow10(&d, k); else big_pow10(&n, -k);
        r = 0;
        for (bit = 62; bit >= 0; bit--) {                /* r = n / d, n = n % d */
            t = d;
            big_shl(&t, bit);
            if (big_cmp(&t, &n) <= 0) { big_sub(&n, &t); r |= (uint64_t)1 << bit; }
        }
        if (r >= lo * 10) { ++*x; continue; }
        if (r < lo) { --*x; continue; }
        big_shl(&n, 1);
        c = big_cmp(&n, &d);
        if (c > 0 || (c == 0 && (r & 1))) r++;
        if (r == lo * 10) r = lo, ++*x;
        break;
    }
    *q = r;
}

/* Does q * 10^k round to v in a dtype with mb fraction bits and least normal exponent emin
   (to nearest, ties to an even fraction)? It must lie within half a step of v either side,
   the step below a power of two being half the one above. No exponent ceiling: past a
   dtype's largest value it does not. */
static int reads_back(uint64_t q, int k, double v, int mb, int emin) {
    int e, j, even, lo, hi;
    uint64_t V;
    (void)frexp(fabs(v), &e);                            /* 2^(e-1) <= |v| < 2^e */
    if (e - 1 < emin) e = emin + 1;
    j = e - 1 - mb - 2;                                  /* a quarter step, in 2^j */
    V = (uint64_t)ldexp(fabs(v), -j);
    even = ((V >> 2) & 1) == 0;
    hi = big_cmp_scaled(q, k, V + 2, j);
    lo = big_cmp_scaled(q, k, V - ((V == ((uint64_t)1 << (mb + 2)) && e - 1 > emin) ? 1 : 2), j);
    return (hi < 0 || (hi == 0 && even)) && (lo > 0 || (lo == 0 && even));
}

/* The shortest decimal that reads back as v in its dtype (fraction bits mb, least normal
   exponent emin), as Python prints floats: a BF16 weight shows as 0.01233, not as the nine
   digits its F32 value needs; positional unless the exponent is below -4 or above 15. */
static void format_real(char *buf, size_t cap, double v, int mb, int emin) {
    char d[24], *o = buf;
    uint64_t q = 0;
    int p, x = 0, k, n;
    if (v != v) { snprintf(buf, cap, "%snan", signbit(v) ? "-" : ""); return; }
    if (v > DBL_MAX || v < -DBL_MAX) { snprintf(buf, cap, "%sinf", v < 0 ? "-" : ""); return; }
    if (v == 0) { snprintf(buf, cap, "%s0", signbit(v) ? "-" : ""); return; }
    for (p = 1; p <= 17; p++) {
        decimal_digits(v, p, &q, &x);
        if (reads_back(q, x - p + 1, v, mb, emin)) break;
    }
    n = snprintf(d, sizeof d, "%llu", (unsigned long long)q);
    while (n > 1 && d[n - 1] == '0') n--;                /* 1.50 is 1.5 */
    if (v < 0) *o++ = '-';
    if (x < -4 || x >= 16) {                             /* 1.5e-05, 1e+300 */
        for (k = 0; k < n; k++) {
            *o++ = d[k];
            if (k == 0 && n > 1) *o++ = '.';
        }
        snprintf(o, cap - (size_t)(o - buf), "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
        return;
    }
    if (x < 0) {                                         /* 0.0012 */
        *o++ = '0', *o++ = '.';
        for (k = -1; k > x; k--) *o++ = '0';
    }
    for (k = 0; k < n || k <= x; k++) {                  /* 57344 to one digit is 60000 */
        *o++ = k < n ? d[k] : '0';
        if (k == x && k + 1 < n) *o++ = '.';
    }
    *o = 0;
}

/* fraction bits and least normal exponent of each float dtype show prints */
static void float_bits(safeload_dtype d, int *mb, int *emin) {
    switch (d) {
    case SAFELOAD_F64: *mb = 52; *emin = -1022; break;
    case SAFELOAD_F16: *mb = 10; *emin = -14; break;
    case SAFELOAD_BF16: *mb = 7; *emin = -126; break;
    case SAFELOAD_F8_E4M3: *mb = 3; *emin = -6; break;
    case SAFELOAD_F8_E5M2: *mb = 2; *emin = -14; break;
    case SAFELOAD_F8_E4M3FNUZ: *mb = 3; *emin = -7; break;
    case SAFELOAD_F8_E5M2FNUZ: *mb = 2; *emin = -15; break;
    case SAFELOAD_F8_E8M0: *mb = 0; *emin = -127; break;
    case SAFELOAD_F4: *mb = 1; *emin = 0; break;
    default: *mb = 23; *emin = -126; break;                          /* F32, C64 */
    }
}

/* element i of a tensor of dtype d (as loaded: F32 where it was widened from `stored`) */
static void format_element(char *buf, size_t cap, const unsigned char *p, size_t i,
                           safeload_dtype d, safeload_dtype stored) {
    union { int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32;
            int64_t i64; uint64_t u64; float f[2]; double f64; } x;
    size_t w = safeload_dtype_size(d);
    char re[40], im[40];
    int mb, emin;
    float_bits(stored, &mb, &emin);
    memcpy(&x, p + i * w, w);
    switch (d) {
    case SAFELOAD_BOOL: snprintf(buf, cap, "%s", x.u8 ? "true" : "false"); break;
    case SAFELOAD_U8: snprintf(buf, cap, "%u", (unsigned)x.u8); break;
    case SAFELOAD_I8: snprintf(buf, cap, "%d", (int)x.i8); break;
    case SAFELOAD_U16: snprintf(buf, cap, "%u", (unsigned)x.u16); break;
    case SAFELOAD_I16: snprintf(buf, cap, "%d", (int)x.i16); break;
    case SAFELOAD_U32: snprintf(buf, cap, "%lu", (unsigned long)x.u32); break;
    case SAFELOAD_I32: snprintf(buf, cap, "%ld", (long)x.i32); break;
    case SAFELOAD_U64: snprintf(buf, cap, "%llu", (unsigned long long)x.u64); break;
    case SAFELOAD_I64: snprintf(buf, cap, "%lld", (long long)x.i64); break;
    case SAFELOAD_F64: format_real(buf, cap, x.f64, mb, emin); break;
    case SAFELOAD_F32: format_real(buf, cap, x.f[0], mb, emin); break;
    case SAFELOAD_C64:
        format_real(re, sizeof re, x.f[0], mb, emin);
        format_real(im, sizeof im, x.f[1], mb, emin);
        snprintf(buf, cap, "%s%s%sj", re, im[0] == '-' ? "" : "+", im);
        break;
    default: snprintf(buf, cap, "0x%02x", (unsigned)x.u8); break;
    }
}

/* a count: a whole number below 2^62, or "all" */
static int parse_count(const char *v, uint64_t *out) {
    uint64_t n = 0;
    size_t j;
    if (same_word(v, "all")) { *out = UINT64_MAX; return 1; }
    for (j = 0; v[j] >= '0' && v[j] <= '9' && n < ((uint64_t)1 << 62); j++)
        n = n * 10 + (uint64_t)(v[j] - '0');
    if (j == 0 || v[j] || n >= ((uint64_t)1 << 62)) return 0;
    *out = n;
    return 1;
}

/* The first --count elements of one tensor (16 by default), loaded through the library: only
   the rows that hold them are read, and F16, BF16, F4 and the FP8s are widened to F32 on the
   way (exactly); F6 shows its packed bytes. Values print as the shortest decimal that reads back as the stored value. */
static int cmd_show(int argc, char **argv) {
    const char *path = NULL, *name = NULL;
    uint64_t count = 16, shown, rows, k;
    safeload_model *m = NULL;
    const safeload_tensor *t;
    safeload_request q;
    safeload_arena *arena = NULL;
    safeload_error e;
    safeload_result r;
    char shape[128], buf[96];
    int i, ends = 0, bits, packed;
    memset(&q, 0, sizeof q);
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!ends && strcmp(a, "--") == 0) { ends = 1; continue; }
        if (!ends && strcmp(a, "--count") == 0 && i + 1 < argc) {
            if (!parse_count(argv[++i], &count))
                return usage_error("--count takes a whole number or all, not", argv[i]);
        } else if (!ends && strcmp(a, "--count") == 0) {
            return usage_error("a value is missing after", a);
        } else if (!ends && a[0] == '-') {
            return usage_error("unknown option", a);
        } else if (!path) path = a;
        else if (!name) name = a;
        else return usage_error("unexpected argument", a);
    }
    if (!name) return usage_error(path ? "show needs a tensor NAME" : "show needs a PATH and a "
                                  "tensor NAME", NULL);
    r = open_model(path, &m, &e);
    if (r != SAFELOAD_OK) {
        print_error(path, &e, m);
        safeload_model_close(m);
        return is_io(r) ? 2 : 1;
    }
    print_warnings(path, m);
    if (!(t = safeload_model_find(m, name, &q.shard))) {
        fprintf(stderr, "error: ");
        put_str(stderr, path);
        fprintf(stderr, ": no tensor named ");
        put_str(stderr, name);
        fputc('\n', stderr);
        safeload_model_close(m);
        return 1;
    }
    shown = count < t->numel ? count : t->numel;
    q.name = t->name;
    q.tensor = t;
    if (safeload_can_convert(SAFELOAD_F32, t->dtype) && t->dtype != SAFELOAD_F64)
        q.dtype = SAFELOAD_F32;
    bits = (int)safeload_dtype_bits(t->dtype);
    if (t->rank > 0 && shown < t->numel) {       /* the rows that hold the first `shown` */
        uint64_t per = t->numel / t->shape[0];
        rows = (shown + per - 1) / per;
        /* a slice of 4- or 6-bit values must be whole bytes: up to a row count that is */
        while (rows < t->shape[0] && (rows * per * (uint64_t)bits) % 8) rows++;
        if (rows < t->shape[0]) q.row_end = rows;
    }
    packed = bits % 8 && !q.dtype;
    if (packed) shown = (shown * (uint64_t)bits + 7) / 8;         /* F6: packed bytes */
    if (shown) r = safeload_load(m, &q, 1, NULL, &arena, &e);
    if (r != SAFELOAD_OK) {
        print_error(path, &e, m);
        safeload_model_close(m);
        return is_io(r) ? 2 : 1;
    }
    shape_string(shape, sizeof shape, t);
    put_str(stdout, t->name);
    printf(": %s %s, %llu element%s", dtype_str(t->dtype), shape,
           (unsigned long long)t->numel, plural(t->numel));
    if (packed) printf(", shown as %llu packed byte%s", (unsigned long long)shown, plural(shown));
    else if (shown < t->numel) printf(", the first %llu", (unsigned long long)shown);
    putchar('\n');
    for (k = 0; k < shown; k++) {
        const unsigned char *p = (const unsigned char *)q.data;
        if (packed) snprintf(buf, sizeof buf, "0x%02x", (unsigned)p[k]);
        else format_element(buf, sizeof buf, p, (size_t)k, q.dtype ? q.dtype : t->dtype, t->dtype);
        printf("%s%s", k % 8 ? " " : "  ", buf);
        if (k % 8 == 7 || k + 1 == shown) putchar('\n');
    }
    safeload_arena_free(arena);
    safeload_model_close(m);
    return 0;
}

/* ---- keys ---- */

static int cmd_keys(int argc, char **argv) {
    const char *path = NULL, *names = NULL;
    safeload_model *m;
    safeload_error e;
    safeload_key_report rep;
    char **list = NULL, *buf = NULL;
    size_t n = 0, cap = 0, len = 0, k, line;
    FILE *fp;
    int i, ends = 0;                   /* ends: after "--", every argument is a PATH */
    for (i = 0; i < argc; i++) {
        if (!ends && strcmp(argv[i], "--") == 0) { ends = 1; continue; }
        if (ends) {
            if (path) return usage_error("more than one PATH:", argv[i]);
            path = argv[i];
        } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) names = argv[++i];
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (i + 1 == argc && strcmp(argv[i], "--expect") == 0)
            return usage_error("a value is missing after", argv[i]);
        else return bad_arg(argv[i], path);
    }
    if (!path) return usage_error("keys needs a PATH", NULL);
    if (!names) return usage_error("keys needs --expect NAMES_FILE", NULL);
    fp = strcmp(names, "-") == 0 ? stdin : fopen(names, "rb");     /* "-": standard input */
    if (!fp) {
        int why = errno;                        /* before the prints below can change it */
        fprintf(stderr, "error: ");
        put_str(stderr, names);
        fprintf(stderr, ": cannot open: %s (error %d)\n", why == ENOENT ? "no such file" :
                why == EACCES || why == EPERM ? "permission denied" : "failed", why);
        return 2;
    }
    /* read to the end in pieces: a pipe or /dev/stdin has no size to ask for. A NUL byte
       ends the reading (the line holding it is refused below), so /dev/zero cannot fill the
       memory. */
    len = 0;
    {
        size_t cap2 = 0, got;
        do {
            if (cap2 - len < 4096) {
                char *nb = (char *)realloc(buf, (cap2 = cap2 ? cap2 * 2 : 65536) + 1);
                if (!nb) {
                    if (fp != stdin) fclose(fp);
                    free(buf);
                    fprintf(stderr, "error: ");
                    put_str(stderr, names);
                    fprintf(stderr, ": out of memory after %llu bytes of names\n",
                            (unsigned long long)len);
                    return 2;
                }
                buf = nb;
            }
            got = fread(buf + len, 1, cap2 - len, fp);
            len += got;
        } while (got > 0 && !memchr(buf + len - got, 0, got));
        if (ferror(fp)) {
            if (fp != stdin) fclose(fp);
            free(buf);
            fprintf(stderr, "error: ");
            put_str(stderr, names);
            fprintf(stderr, ": cannot read the names\n");
            return 2;
        }
    }
    if (fp != stdin) fclose(fp);
    buf[len] = 0;
    k = len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;   /* a UTF-8 BOM, as CRLF */
    for (line = 1; k < len; line++) {
        size_t s = k;
        while (k < len && buf[k] != '\n') k++;
        if (memchr(buf + s, 0, k - s)) {        /* a name never holds NUL: not a names file */
            fprintf(stderr, "error: ");
            put_str(stderr, names);
            fprintf(stderr, ": line %llu holds a NUL byte, which no tensor name can\n",
                    (unsigned long long)line);
            free(list);
            free(buf);
            return 2;
        }
        buf[k] = 0;
        if (k > s && buf[k - 1] == '\r') buf[k - 1] = 0;
        if (buf[s]) {
            if (n == cap) {
                char **nl = (char **)realloc(list, (cap = cap ? cap * 2 : 256) * sizeof *list);
                if (!nl) {
                    free(list);
                    free(buf);
                    fprintf(stderr, "error: out of memory\n");
                    return 2;
                }
                list = nl;
            }
            list[n++] = buf + s;
        }
        k++;
    }
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK ||
        safeload_model_check_keys(m, (const char *const *)list, n, &rep, &e) != SAFELOAD_OK) {
        if (m) print_warnings(path, m);
        print_error(path, &e, m);
        safeload_model_close(m);                /* NULL when the open failed */
        free(list);
        free(buf);
        return 2;                               /* no answer, as with diff: not "they differ" */
    }
    print_warnings(path, m);
    for (k = 0; k < rep.missing_count; k++) {
        printf("missing: "); put_str(stdout, rep.missing[k]); putchar('\n');
    }
    for (k = 0; k < rep.unexpected_count; k++) {
        printf("unexpected: "); put_str(stdout, rep.unexpected[k]); putchar('\n');
    }
    printf("%llu expected, %llu in the checkpoint: %llu missing, %llu unexpected\n",
           (unsigned long long)n, (unsigned long long)safeload_model_tensor_count(m),
           (unsigned long long)rep.missing_count, (unsigned long long)rep.unexpected_count);
    i = rep.missing_count || rep.unexpected_count;
    safeload_key_report_free(&rep);
    safeload_model_close(m);
    free(list);
    free(buf);
    return i;
}

/* "--threads=4" means "--threads 4", for the options that take a value, before "--": argv
   rewritten into out (2 * argc + 1 entries), the value pointing into the original word */
static int split_eq(int argc, char **argv, char **out) {
    static const char *const with_value[] = {"--threads", "--dtype", "--io", "--expect",
                                                     "--count"};
    int i, n = 0, ends = 0;
    size_t k;
    for (i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (strcmp(argv[i], "--") == 0) ends = 1;
        for (k = 0; !ends && eq && k < sizeof with_value / sizeof *with_value; k++)
            if (strlen(with_value[k]) == (size_t)(eq - argv[i]) &&
                memcmp(argv[i], with_value[k], (size_t)(eq - argv[i])) == 0) break;
        if (!ends && eq && k < sizeof with_value / sizeof *with_value) {
            out[n++] = (char *)with_value[k];
            out[n++] = (char *)eq + 1;
        } else out[n++] = argv[i];
    }
    out[n] = NULL;
    return n;
}

static int run(int argc, char **argv) {
    int i;
    if (argc < 2) return usage_error("no command given", NULL);
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)     /* safeload CMD --help */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
    if (strcmp(argv[1], "inspect") == 0) return cmd_inspect(argc - 2, argv + 2);
    if (strcmp(argv[1], "verify") == 0) return cmd_verify(argc - 2, argv + 2);
    if (strcmp(argv[1], "sample") == 0) return cmd_sample(argc - 2, argv + 2);
    if (strcmp(argv[1], "load") == 0) return cmd_load(argc - 2, argv + 2);
    if (strcmp(argv[1], "keys") == 0) return cmd_keys(argc - 2, argv + 2);
    if (strcmp(argv[1], "convert") == 0) return cmd_convert(argc - 2, argv + 2);
    if (strcmp(argv[1], "show") == 0) return cmd_show(argc - 2, argv + 2);
    if (strcmp(argv[1], "--version") == 0) { printf("safeload %s\n", SAFELOAD_VERSION_STRING); return 0; }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    return usage_error(argv[1][0] == '-' ? "unknown option" : "unknown command", argv[1]);
}

int main(int argc, char **argv) {
    int rc;
    /* stderr is unbuffered: a byte per write(2) made a million warnings take minutes. A line
       at a time keeps each message whole (the progress bar flushes itself). */
    char **args = (char **)malloc((2 * (size_t)argc + 1) * sizeof *args);
    setvbuf(stderr, NULL, _IOLBF, 1 << 16);
    if (!args) { fprintf(stderr, "error: out of memory\n"); return 2; }
    rc = run(split_eq(argc, argv, args), args);
    free(args);
    /* output that did not reach its destination (a full disk, a closed pipe) is a failure */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "error: writing the output failed\n");
        return 2;
    }
    return rc;
}
