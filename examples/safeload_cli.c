/* safeload - command-line tool for safetensors checkpoints, built on safeload.h.

     safeload inspect PATH [--json]     tensors (name, dtype, shape, size, offset) and metadata
     safeload verify PATH               validate; exit 0 ok, 1 invalid, 2 usage or I/O error
     safeload load PATH [options]       load every tensor into memory, report GB/s
     safeload keys PATH --expect FILE   names missing from / unexpected in the checkpoint;
                                        exit 0 same names, 1 they differ, 2 no answer (usage,
                                        I/O, an invalid checkpoint)
     safeload convert PATH OUT [--dtype f32|f16|bf16] [--threads N] [--max-shard-size SIZE]
                     [--align-data] [--progress]
                                        one file holding every tensor (shards merged), or with
                                        --max-shard-size a folder of shards and an index as
                                        save_pretrained writes them; cast while loading
                                        (tensors with no such cast as stored), streamed
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(_WIN32)
#  include <windows.h>
static double now_seconds(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}
#else
#  include <fcntl.h>
#  include <sys/stat.h>
#  include <unistd.h>
static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#endif

static const char usage_text[] =
        "usage:\n"
        "  safeload inspect PATH [--json]\n"
        "  safeload verify PATH [--strict] [--data] [--threads N] [--json]\n"
        "  safeload load PATH [--threads N] [--dtype f32|f16|bf16] [--io read|mmap|direct|auto]\n"
        "                     [--queue-depth N] [--progress] [--checksum]\n"
        "                     [--slice DIM:BEGIN:END] [--json]\n"
        "  safeload keys PATH [--expect NAMES_FILE] [--json]\n"
        "  safeload convert PATH OUT [--dtype f32|f16|bf16] [--threads N]\n"
        "                   [--max-shard-size SIZE] [--align-data] [--progress]\n"
        "  safeload show PATH NAME [--count N|all] [--slice DIM:BEGIN:END] [--force] [--json]\n"
        "  safeload hash PATH [--tensors] [--json] [--threads N]\n"
        "  safeload sample OUT\n"
        "  safeload --version | --help\n"
        "A PATH or OUT that starts with '-' goes after \"--\" (safeload verify -- -x).\n"
        "--opt=VALUE works as --opt VALUE; --expect - reads the names from standard input.\n"
        "--confine (any command): refuse a shard that resolves outside the index's folder.\n"
        "safeload CMD --help describes one command.\n";

/* safeload CMD --help: what the command prints, its options, exit codes and an example */
static const char *const command_help[][2] = {
    {"inspect",
     "usage: safeload inspect PATH [--json]\n"
     "Prints each file's tensors (name, dtype, shape, size, offset in the data section) and\n"
     "metadata, then a summary line: tensors, parameters per dtype, bytes.\n"
     "PATH: a .safetensors file, an index .json, or a directory holding one.\n"
     "  --json   one JSON document (\"schema\": 1), the same shape for one file and a sharded\n"
     "           model; errors as {\"error\": {...}} on standard output\n"
     "exit: 0 printed, 1 the checkpoint is malformed, 2 usage or I/O error\n"
     "example: safeload inspect model.safetensors\n"},
    {"verify",
     "usage: safeload verify PATH [--strict] [--data] [--threads N] [--json]\n"
     "Checks every header (and the index) by the format's rules: prints \"ok: PATH: N tensors,\n"
     "B bytes\" or the first error; for a file cut inside its data, every tensor still whole\n"
     "(\"intact: NAME\") and the first that is not (\"damaged: NAME\").\n"
     "  --strict   the model's warnings are errors (a shard tensor the index leaves out, an\n"
     "             index metadata.total_size that is not the tensors' bytes)\n"
     "  --data     also reads every byte, so a disk error or a file cut since is caught\n"
     "  --threads N  readers for --data (0: the default)\n"
     "  --json     the result or the error as one JSON document\n"
     "exit: 0 valid, 1 invalid, 2 not checked (usage, I/O error, a missing file)\n"
     "example: safeload verify --strict --data path/to/model_dir\n"},
    {"load",
     "usage: safeload load PATH [--threads N] [--dtype f32|f16|bf16] [--io read|mmap|direct|auto]\n"
     "                     [--queue-depth N] [--progress] [--checksum]\n"
     "                     [--slice DIM:BEGIN:END] [--json]\n"
     "Loads every tensor into memory and prints how long it took and the rate.\n"
     "  --threads N   workers (0: the default)     --dtype D   cast while loading\n"
     "  --io MODE     read, mmap, direct or auto    --progress  a progress bar on stderr\n"
     "  --checksum    FNV-1a 64 of the loaded bytes --slice     DIM:BEGIN:END of every tensor\n"
     "  --queue-depth N  direct reads in flight in all (default 32; 1: one per worker)\n"
     "  --json        the figures as one JSON document\n"
     "exit: 0 loaded, 1 the checkpoint is malformed, 2 usage or I/O error\n"
     "example: safeload load path/to/model_dir --dtype bf16 --progress\n"},
    {"keys",
     "usage: safeload keys PATH [--expect NAMES_FILE] [--json]\n"
     "Without --expect: the model's tensor names, one a line. With it: the names NAMES_FILE\n"
     "lists (one a line; - for standard input) that the checkpoint lacks (\"missing: \") and\n"
     "those it holds but the file does not list (\"unexpected: \"), then a count line.\n"
     "  --json   one JSON document\n"
     "exit: 0 listed, or the same names; 1 they differ; 2 no answer (usage, I/O, invalid)\n"
     "example: safeload keys model.safetensors --expect names.txt\n"},
    {"convert",
     "usage: safeload convert PATH OUT [--dtype D] [--threads N] [--max-shard-size SIZE]\n"
     "                        [--align-data] [--progress]\n"
     "Writes every tensor into OUT, cast to --dtype where a cast exists (fp16, float16, half,\n"
     "bf16, bfloat16, fp32, float32, float), streaming; --max-shard-size SIZE (5GB, 500MB)\n"
     "writes OUT/model-0000K-of-0000N.safetensors and OUT/model.safetensors.index.json.\n"
     "  --align-data   pad each header with spaces so that its data starts on a 4096-byte\n"
     "                 boundary: direct I/O then reads tensors straight into memory\n"
     "exit: 0 written, 1 the checkpoint is malformed (nothing written), 2 usage or I/O error\n"
     "example: safeload convert model_dir out --dtype bf16 --max-shard-size 5GB\n"},
    {"show",
     "usage: safeload show PATH NAME [--count N|all] [--slice DIM:BEGIN:END] [--force] [--json]\n"
     "Prints a tensor's dtype, shape and element count, then its first values (16 by default),\n"
     "each the shortest decimal that reads back as the stored value.\n"
     "  --count N|all   how many values; all on more than 1,000,000 elements needs --force\n"
     "  --slice         DIM:BEGIN:END, the values of one slice\n"
     "  --json          one JSON document: values as numbers (nan, inf and complex as strings)\n"
     "exit: 0 printed, 1 malformed or no such tensor, 2 usage or I/O error\n"
     "example: safeload show model.safetensors model.norm.weight --count 32\n"},
    {"hash",
     "usage: safeload hash PATH [--tensors] [--threads N] [--json]\n"
     "The SHA-256 of every file of the checkpoint (each shard and the index), one line each in\n"
     "sha256sum's format (\"HEX  FILE\"), sorted by path: check it with sha256sum -c or\n"
     "against the Hub's LFS ids.\n"
     "  --tensors    one line per tensor instead, \"HEX  NAME\" (the SHA-256 of its bytes as\n"
     "               stored), sorted by name: two checkpoints holding the same tensors in other\n"
     "               files or orders give the same listing\n"
     "  --threads N  readers (0: the default)    --json   one JSON document\n"
     "exit: 0 hashed, 1 the checkpoint is malformed, 2 usage or I/O error\n"
     "example: safeload hash --tensors a/ > a.txt; safeload hash --tensors b/ | diff a.txt -\n"},
    {"sample",
     "usage: safeload sample OUT\n"
     "Writes a small checkpoint (six tensors of common kinds) to try the other commands on.\n"
     "exit: 0 written, 2 usage or I/O error\n"
     "example: safeload sample sample.safetensors\n"}};

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

/* Byte order: a load hands out host-order elements and a file holds them little-endian. On a
   big-endian host the unit to reverse for dtype dt (2, 4 or 8; 4 for C64, two F32), else 1. */
static unsigned swap_unit(safeload_dtype dt) {
    const uint16_t one = 1;
    unsigned char lo;
    unsigned bits = safeload_dtype_bits(dt);
    memcpy(&lo, &one, 1);
    if (lo || bits < 16) return 1;
    return dt == SAFELOAD_C64 ? 4 : bits / 8;
}
/* n bytes of host-order elements of dtype dt as a file holds them (in place) */
static void to_file_order(void *data, uint64_t n, safeload_dtype dt) {
    unsigned char *p = (unsigned char *)data, t;
    uint64_t i, u = swap_unit(dt), k;
    if (u < 2) return;
    for (i = 0; i + u <= n; i += u)
        for (k = 0; k < u / 2; k++) {
            t = p[i + k];
            p[i + k] = p[i + u - 1 - k];
            p[i + u - 1 - k] = t;
        }
}

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

/* A JSON writer for --json output (every command's): it places the commas, so a command
   writes keys and values in order and nothing else. Strings go through json_string; numbers
   are written exactly (uint64 in full). Nesting up to 32 levels. Every document carries
   "schema": 1 first (jw_doc). */
typedef struct jw { FILE *o; int depth; unsigned char more[32]; } jw;

static void jw_sep(jw *w, const char *key) {
    if (w->depth > 0 && w->more[w->depth - 1]) fputc(',', w->o);
    if (w->depth > 0) w->more[w->depth - 1] = 1;
    if (key) { json_string(w->o, key, strlen(key)); fputc(':', w->o); }
}
static void jw_open(jw *w, const char *key, char c) {
    jw_sep(w, key);
    fputc(c, w->o);
    if (w->depth < 32) w->more[w->depth] = 0;
    w->depth++;
}
static void jw_obj(jw *w, const char *key) { jw_open(w, key, '{'); }
static void jw_arr(jw *w, const char *key) { jw_open(w, key, '['); }
static void jw_end(jw *w, char c) {        /* '}' or ']'; the document's last adds a newline */
    fputc(c, w->o);
    if (--w->depth == 0) fputc('\n', w->o);
}
static void jw_str_n(jw *w, const char *key, const char *s, size_t n) {
    jw_sep(w, key);
    json_string(w->o, s, n);
}
static void jw_str(jw *w, const char *key, const char *s) {
    if (!s) { jw_sep(w, key); fputs("null", w->o); }
    else jw_str_n(w, key, s, strlen(s));
}
static void jw_u64(jw *w, const char *key, uint64_t v) {
    jw_sep(w, key);
    fprintf(w->o, "%llu", (unsigned long long)v);
}
static void jw_num(jw *w, const char *key, double v) {     /* finite; 17 digits read back */
    jw_sep(w, key);
    fprintf(w->o, "%.17g", v);
}
static void jw_bool(jw *w, const char *key, int v) {
    jw_sep(w, key);
    fputs(v ? "true" : "false", w->o);
}
static void jw_null(jw *w, const char *key) {
    jw_sep(w, key);
    fputs("null", w->o);
}
static void jw_doc(jw *w, FILE *o) {        /* {"schema":1, ... */
    w->o = o;
    w->depth = 0;
    jw_obj(w, NULL);
    jw_u64(w, "schema", 1);
}

/* An error in the one layout every command uses: "error: FILE: ID: message [tensor NAME]
   (byte N)" on stderr and, with --json, {"schema":1,"error":{"id","message","file","tensor",
   "offset"}} on stdout (file, tensor in full where the model knows them; null when none).
   Returns rc, the command's exit status. */
static int report_error(int json, const char *path, const safeload_error *e,
                        const safeload_model *m, int rc) {
    jw w;
    where at;
    const char *name;
    size_t len;
    print_error(path, e, m);
    if (!json) return rc;
    at = locate(e, path, m, NULL);
    name = full_tensor(e, at.shard, &len);
    jw_doc(&w, stdout);
    jw_obj(&w, "error");
    jw_str(&w, "id", safeload_result_id(e->code));
    jw_str(&w, "message", e->message);
    jw_str(&w, "file", at.file);
    if (e->tensor[0]) jw_str_n(&w, "tensor", name, len);
    else jw_null(&w, "tensor");
    if (e->offset != SAFELOAD_NO_OFFSET) jw_u64(&w, "offset", e->offset);
    else jw_null(&w, "offset");
    jw_end(&w, '}');
    jw_end(&w, '}');
    return rc;
}

/* "warnings": the model's warnings, each in the error object's shape (they also go to
   stderr, as for every command) */
static void jw_warnings(jw *w, const char *path, const safeload_model *m) {
    size_t k, hint = 0, len;
    jw_arr(w, "warnings");
    for (k = 0; m && k < safeload_model_warning_count(m); k++) {
        const safeload_error *e = safeload_model_warning(m, k);
        where at = locate(e, path, m, &hint);
        const char *name = full_tensor(e, at.shard, &len);
        jw_obj(w, NULL);
        jw_str(w, "id", safeload_result_id(e->code));
        jw_str(w, "message", e->message);
        jw_str(w, "file", at.file);
        if (e->tensor[0]) jw_str_n(w, "tensor", name, len);
        else jw_null(w, "tensor");
        if (e->offset != SAFELOAD_NO_OFFSET) jw_u64(w, "offset", e->offset);
        else jw_null(w, "offset");
        jw_end(w, '}');
    }
    jw_end(w, ']');
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

/* one shard (or the single file) as --json's "shards" entry */
static void inspect_json(jw *w, const safeload_file *f, const safeload_model *m, size_t shard) {
    size_t i, n = safeload_tensor_count(f);
    uint32_t k;
    jw_obj(w, NULL);
    jw_str(w, "file", safeload_file_path(f));
    jw_u64(w, "header_bytes", safeload_header_size(f));
    jw_u64(w, "data_bytes", safeload_data_size(f));
    if (safeload_has_metadata(f)) {
        jw_obj(w, "metadata");
        for (i = 0; i < safeload_metadata_count(f); i++) {
            const safeload_kv *kv = safeload_metadata_at(f, i);
            jw_sep(w, NULL);
            json_string(w->o, kv->key, kv->key_len);
            fputc(':', w->o);
            json_string(w->o, kv->value, kv->value_len);
        }
        jw_end(w, '}');
    } else jw_null(w, "metadata");
    jw_arr(w, "tensors");
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_tensor_at(f, i);
        jw_obj(w, NULL);
        jw_str_n(w, "name", t->name, t->name_len);
        jw_str(w, "dtype", dtype_str(t->dtype));
        jw_arr(w, "shape");
        for (k = 0; k < t->rank; k++) jw_u64(w, NULL, t->shape[k]);
        jw_end(w, ']');
        jw_arr(w, "data_offsets");
        jw_u64(w, NULL, t->begin);
        jw_u64(w, NULL, t->end);
        jw_end(w, ']');
        jw_u64(w, "offset", t->file_offset);
        jw_u64(w, "elements", t->numel);
        jw_bool(w, "unlisted", unlisted(m, shard, t));
        jw_end(w, '}');
    }
    jw_end(w, ']');
    jw_end(w, '}');
}

/* The model's tensors (not a shard's unlisted ones), counted per dtype */
typedef struct dtype_sum { uint64_t tensors, params, bytes; } dtype_sum;
static void summarize(const safeload_model *m, dtype_sum *by, dtype_sum *all) {
    size_t k;
    memset(by, 0, SAFELOAD_DTYPE_COUNT * sizeof *by);
    memset(all, 0, sizeof *all);
    for (k = 0; k < safeload_model_tensor_count(m); k++) {
        const safeload_tensor *t = safeload_model_tensor_at(m, k, NULL);
        dtype_sum *d = &by[(int)t->dtype < SAFELOAD_DTYPE_COUNT ? (int)t->dtype : 0];
        d->tensors++, d->params += t->numel, d->bytes += t->nbytes;
        all->tensors++, all->params += t->numel, all->bytes += t->nbytes;
    }
}

/* "summary: 6 tensors, 4,000 parameters (BF16 2048, F16 1024, ...), 6792 bytes" */
static void print_summary(const safeload_model *m) {
    dtype_sum by[SAFELOAD_DTYPE_COUNT], all;
    int d, first = 1;
    summarize(m, by, &all);
    printf("summary: %llu tensor%s, %llu parameter%s (", (unsigned long long)all.tensors,
           plural(all.tensors), (unsigned long long)all.params, plural(all.params));
    for (d = 1; d < SAFELOAD_DTYPE_COUNT; d++) {
        if (!by[d].tensors) continue;
        printf("%s%s %llu", first ? "" : ", ", dtype_str((safeload_dtype)d),
               (unsigned long long)by[d].params);
        first = 0;
    }
    printf("%s), %llu byte%s\n", first ? "none" : "", (unsigned long long)all.bytes,
           plural(all.bytes));
}

static void jw_summary(jw *w, const safeload_model *m) {
    dtype_sum by[SAFELOAD_DTYPE_COUNT], all;
    int d;
    summarize(m, by, &all);
    jw_obj(w, "summary");
    jw_u64(w, "tensors", all.tensors);
    jw_u64(w, "parameters", all.params);
    jw_u64(w, "bytes", all.bytes);
    jw_obj(w, "by_dtype");
    for (d = 1; d < SAFELOAD_DTYPE_COUNT; d++) {
        if (!by[d].tensors) continue;
        jw_obj(w, dtype_str((safeload_dtype)d));
        jw_u64(w, "tensors", by[d].tensors);
        jw_u64(w, "parameters", by[d].params);
        jw_u64(w, "bytes", by[d].bytes);
        jw_end(w, '}');
    }
    jw_end(w, '}');
    jw_end(w, '}');
}

/* A file, an index or a directory: single files keep the exact single-file output. */
/* --confine, given to any command before "--": SAFELOAD_MODEL_CONFINE on every model it
   opens (set once by run(), before the command starts) */
static uint32_t model_flags;

static safeload_result open_model(const char *path, safeload_model **m, safeload_error *e) {
    safeload_model_desc d;
    memset(&d, 0, sizeof d);
    d.flags = model_flags;
    return safeload_model_open(m, path, &d, e);
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
    size_t k, n;
    jw w;
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
    if (r != SAFELOAD_OK) return report_error(json, path, &e, NULL, is_io(r) ? 2 : 1);
    n = safeload_model_shard_count(m);
    if (json) {
        /* one shape for a file and a sharded model: the model's metadata (the index's, or
           the file's), every file in "shards", the summary and the warnings */
        jw_doc(&w, stdout);
        jw_str(&w, "command", "inspect");
        jw_str(&w, "path", path);
        jw_bool(&w, "sharded", safeload_model_has_index(m));
        jw_obj(&w, "metadata");
        for (k = 0; k < safeload_model_metadata_count(m); k++) {
            const safeload_kv *kv = safeload_model_metadata_at(m, k);
            jw_sep(&w, NULL);
            json_string(stdout, kv->key, kv->key_len);
            putchar(':');
            if (kv->value) json_string(stdout, kv->value, kv->value_len);
            else fputs("null", stdout);
        }
        jw_end(&w, '}');
        jw_arr(&w, "shards");
        for (k = 0; k < n; k++) inspect_json(&w, safeload_model_shard(m, k), m, k);
        jw_end(&w, ']');
        jw_summary(&w, m);
        jw_warnings(&w, path, m);
        jw_end(&w, '}');
    } else if (!safeload_model_has_index(m)) {
        inspect_table(safeload_model_shard(m, 0), path, NULL, 0);
        print_summary(m);
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
            if (kv->value) put_text(stdout, kv->value, kv->value_len, 0);
            else printf("(not a string or number)");
            putchar('\n');
        }
        for (k = 0; k < n; k++) {
            printf("\n");
            inspect_table(safeload_model_shard(m, k), safeload_file_path(safeload_model_shard(m, k)),
                          m, k);
        }
        printf("\n");
        print_summary(m);
    }
    print_warnings(path, m);
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

/* the common spellings (PyTorch's, NumPy's, the safetensors names), in any case */
static int parse_dtype(const char *s, safeload_dtype *out) {
    if (same_word(s, "f32") || same_word(s, "fp32") || same_word(s, "float32") ||
        same_word(s, "float")) *out = SAFELOAD_F32;
    else if (same_word(s, "f16") || same_word(s, "fp16") || same_word(s, "float16") ||
             same_word(s, "half")) *out = SAFELOAD_F16;
    else if (same_word(s, "bf16") || same_word(s, "bfloat16")) *out = SAFELOAD_BF16;
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

/* the one wording of a bad --threads value, for every command that takes it */
static int threads_error(const char *v) {
    return usage_error("--threads takes a whole number from 0 to 1024, not", v);
}

/* --slice DIM:BEGIN:END: three whole numbers (the library judges the range) */
static int parse_slice(const char *v, safeload_request *q) {
    uint64_t n[3] = {0, 0, 0};
    int k;
    for (k = 0; k < 3; k++) {
        size_t j;
        for (j = 0; v[j] >= '0' && v[j] <= '9' && n[k] < ((uint64_t)1 << 62); j++)
            n[k] = n[k] * 10 + (uint64_t)(v[j] - '0');
        if (j == 0 || n[k] >= ((uint64_t)1 << 62) || v[j] != (k < 2 ? ':' : '\0')) return 0;
        v += j + (k < 2);
    }
    if (n[0] > 0xFFFFFFFFu) return 0;
    q->slice_dim = (uint32_t)n[0];
    q->slice_begin = n[1];
    q->slice_end = n[2];
    return 1;
}

/* load --slice: every tensor with that dimension and at least END entries in it sliced, the
   rest whole; cast as safeload_load_all casts. *sliced: how many were. */
static safeload_result load_sliced(safeload_model *m, safeload_dtype dtype,
                                   const safeload_load_desc *d, const safeload_request *sl,
                                   safeload_request **out, size_t *n, safeload_arena **arena,
                                   size_t *sliced, safeload_error *e) {
    size_t k, count = safeload_model_tensor_count(m);
    safeload_request *q = (safeload_request *)calloc(count + 1, sizeof *q);
    safeload_result r;
    *sliced = 0;
    if (!q) return SAFELOAD_OUT_OF_MEMORY;
    for (k = 0; k < count; k++) {
        size_t shard;
        const safeload_tensor *t = safeload_model_tensor_at(m, k, &shard);
        q[k].name = t->name;
        q[k].tensor = t;                    /* no lookup */
        q[k].shard = shard;
        if (dtype && dtype != t->dtype && safeload_can_convert(dtype, t->dtype)) q[k].dtype = dtype;
        if (sl->slice_dim < t->rank && sl->slice_end <= t->shape[sl->slice_dim]) {
            q[k].slice_dim = sl->slice_dim;
            q[k].slice_begin = sl->slice_begin;
            q[k].slice_end = sl->slice_end;
            ++*sliced;
        }
    }
    r = safeload_load(m, q, count, d, arena, e);
    if (r != SAFELOAD_OK) { free(q); q = NULL; count = 0; }
    *out = q;
    *n = count;
    return r;
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
    int i, checksum = 0, ends = 0, json = 0;
    uint64_t h = 0xcbf29ce484222325ULL;
    jw w;    /* ends: after "--", every argument is a PATH */
    double t0, t1, t2;
    safeload_request slice, *sq = NULL;     /* --slice: the tensors as sliced */
    safeload_arena *sa = NULL;
    size_t sn = 0, n_sliced = 0;
    int slicing = 0;
    static const char *const io_names[] = {"default", "read", "mmap", "direct", "auto"};
    char io_text[160];
    memset(&d, 0, sizeof d);
    memset(&slice, 0, sizeof slice);
    for (i = 0; i < argc; i++) {
        if (!ends && strcmp(argv[i], "--") == 0) { ends = 1; continue; }
        if (ends) {
            if (path) return usage_error("more than one PATH:", argv[i]);
            path = argv[i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i], &d.threads)) return threads_error(argv[i]);
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
        } else if (strcmp(argv[i], "--queue-depth") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*argv[i] < '0' || *argv[i] > '9' || *end || v < 1 || v > 65536)
                return usage_error("--queue-depth takes a number from 1 to 65536, not", argv[i]);
            d.queue_depth = (int)v;
        } else if (strcmp(argv[i], "--progress") == 0) {
            d.progress = progress_bar;
            d.progress_user = &bar;
        } else if (strcmp(argv[i], "--checksum") == 0) checksum = 1;
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--slice") == 0 && i + 1 < argc) {
            if (!parse_slice(argv[++i], &slice))
                return usage_error("--slice takes DIM:BEGIN:END, not", argv[i]);
            slicing = 1;
        }
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (i + 1 == argc && (strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "--slice") == 0 ||
                                   strcmp(argv[i], "--dtype") == 0 || strcmp(argv[i], "--io") == 0 ||
                                   strcmp(argv[i], "--queue-depth") == 0))
            return usage_error("a value is missing after", argv[i]);
        else return bad_arg(argv[i], path);
    }
    if (!path) return usage_error("load needs a PATH", NULL);
    d.stats = &st;
    bar.shown = 0;
    /* the rate is the load's alone: opening (the headers, the index) is timed apart */
    t0 = now_seconds();
    r = open_model(path, &m, &e);
    t1 = now_seconds();
    bar.t0 = t1;
    if (r == SAFELOAD_OK && slicing)
        r = load_sliced(m, dtype, &d, &slice, &sq, &sn, &sa, &n_sliced, &e);
    else if (r == SAFELOAD_OK)
        r = safeload_load_all(m, dtype, &d, &l, &e);
    t2 = now_seconds();
    if (r != SAFELOAD_OK) {
        if (bar.shown) fputc('\n', stderr);
        if (m) print_warnings(path, m);         /* the model opened: what it found still holds */
        r = (safeload_result)report_error(json, path, &e, m, is_io(r) ? 2 : 1);
        safeload_model_close(m);
        return (int)r;
    }
    print_warnings(path, m);
    /* auto: which files went direct (the page cache did not hold their bytes) */
    if (d.io == SAFELOAD_IO_AUTO)
        snprintf(io_text, sizeof io_text, "auto: %d of %llu file%s direct", st.direct_files,
                 (unsigned long long)safeload_model_shard_count(m),
                 plural(safeload_model_shard_count(m)));
    else
        snprintf(io_text, sizeof io_text, "%s", io_names[st.io]);
    /* direct files: the queue their reads went through, or why there was none */
    if (st.aio != SAFELOAD_AIO_NONE)
        snprintf(io_text + strlen(io_text), sizeof io_text - strlen(io_text), ", %s queue of %d",
                 st.aio == SAFELOAD_AIO_IO_URING ? "io_uring" : "overlapped", st.queue_depth);
    else if (st.aio_error)
        snprintf(io_text + strlen(io_text), sizeof io_text - strlen(io_text),
                 ", no queue: error %d", st.aio_error);
    if (slicing && !json)
        printf("sliced: %llu of %llu tensors, [%llu, %llu) of dimension %u (the rest whole)\n",
               (unsigned long long)n_sliced, (unsigned long long)sn,
               (unsigned long long)slice.slice_begin, (unsigned long long)slice.slice_end,
               (unsigned)slice.slice_dim);
    if (!slicing) {
        sq = l->tensors;
        sn = l->count;
    }
    if (checksum) {
        /* FNV-1a of the loaded elements as little-endian bytes (the file's order): a loaded
           element is in host order, so a big-endian host reads each one's bytes backwards
           (p[j ^ (u - 1)]) and prints what a little-endian one does */
        size_t k;
        for (k = 0; k < sn; k++) {
            const unsigned char *p = (const unsigned char *)sq[k].data;
            uint64_t j, u = swap_unit(sq[k].dtype != SAFELOAD_DTYPE_NONE ? sq[k].dtype
                                                                        : sq[k].tensor->dtype);
            for (j = 0; j < sq[k].nbytes; j++) { h ^= p[j ^ (u - 1)]; h *= 0x100000001b3ULL; }
        }
    }
    if (json) {
        char hex[17];
        jw_doc(&w, stdout);
        jw_str(&w, "command", "load");
        jw_str(&w, "path", path);
        jw_u64(&w, "tensors", sn);
        jw_u64(&w, "bytes_read", st.bytes_read);
        jw_u64(&w, "bytes_written", st.bytes_written);
        jw_num(&w, "seconds", t2 - t1);
        jw_num(&w, "open_seconds", t1 - t0);
        jw_num(&w, "gb_per_s", (double)st.bytes_read / 1e9 / (t2 - t1 > 0 ? t2 - t1 : 1e-9));
        jw_u64(&w, "threads", (uint64_t)st.threads);
        jw_str(&w, "io", d.io == SAFELOAD_IO_AUTO ? "auto" : io_names[st.io]);
        jw_u64(&w, "files", safeload_model_shard_count(m));
        jw_u64(&w, "direct_files", (uint64_t)st.direct_files);
        jw_str(&w, "aio", st.aio == SAFELOAD_AIO_IO_URING ? "io_uring"
                          : st.aio == SAFELOAD_AIO_OVERLAPPED ? "overlapped" : "none");
        jw_u64(&w, "queue_depth", (uint64_t)st.queue_depth);
        jw_u64(&w, "aio_error", (uint64_t)st.aio_error);
        jw_u64(&w, "reads", st.reads);
        jw_u64(&w, "fixed_reads", st.fixed_reads);
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
        if (checksum) jw_str(&w, "checksum", hex);
        else jw_null(&w, "checksum");
        jw_warnings(&w, path, m);
        jw_end(&w, '}');
        if (slicing) { free(sq); safeload_arena_free(sa); }
        safeload_loaded_free(l);
        safeload_model_close(m);
        return 0;
    }
    printf("loaded: %llu tensor%s, %llu byte%s in %.3f s, %.2f GB/s (opened in %.3f s; %llu "
           "byte%s written; %d thread%s, io %s)\n", (unsigned long long)sn,
           plural(sn), (unsigned long long)st.bytes_read, plural(st.bytes_read), t2 - t1,
           (double)st.bytes_read / 1e9 / (t2 - t1 > 0 ? t2 - t1 : 1e-9), t1 - t0,
           (unsigned long long)st.bytes_written, plural(st.bytes_written), st.threads,
           st.threads == 1 ? "" : "s", io_text);
    if (checksum)
        printf("checksum: %016llx\n", (unsigned long long)h);
    if (slicing) { free(sq); safeload_arena_free(sa); }
    safeload_loaded_free(l);
    safeload_model_close(m);
    return 0;
}

/* ---- convert ---- */

/* convert streams. The output's header follows from the source's (names, shapes, the target
   dtype), so each file gets its header first and then its data in the header's order, a batch
   of tensors at a time loaded (and cast) into one buffer and written out: memory is that
   buffer (CV_WINDOW, or the shard size where smaller, or the largest tensor where larger), not
   the model. Every file is written to a temporary beside it and renamed into place only once
   the whole set is written; a failure or a signal removes what was written. The bytes are the
   library writer's (safeload_save): tensors by dtype (descending) then name, compact JSON,
   __metadata__ first with its keys sorted, padded with spaces to a multiple of 8. */
#define CV_WINDOW ((uint64_t)64 << 20)
#define CV_MAX_HEADER 100000000u
#define CV_FILLING ((size_t)-1)

#if defined(_WIN32)
typedef HANDLE cv_fd;
#  define CV_NO_FD INVALID_HANDLE_VALUE
#  define CV_ENOMEM 8       /* ERROR_NOT_ENOUGH_MEMORY */
#  define CV_EEXIST 80      /* ERROR_FILE_EXISTS */
#else
typedef int cv_fd;
#  define CV_NO_FD (-1)
#  define CV_ENOMEM ENOMEM
#  define CV_EEXIST EEXIST
#endif

/* One output file. state says what a signal handler removes: 1 the temporary, 2 the file
   renamed into place (a set being renamed when a later rename failed). */
typedef struct cv_file {
    char *tmp, *final;
#if defined(_WIN32)
    wchar_t *wtmp, *wfinal;
#endif
    cv_fd fd;
    volatile sig_atomic_t state;
} cv_file;

/* The tool's only global state: a signal handler has no other way to the files it removes.
   cv_files is set before cv_count counts an entry of it; cv_made is the folder convert made. */
static cv_file *volatile cv_files;
static volatile sig_atomic_t cv_count;
#if defined(_WIN32)
static wchar_t *volatile cv_made;
#else
static char *volatile cv_made;
#endif

/* unlink and rmdir only: async-signal-safe. Windows runs a SIGINT handler on a thread of its
   own, where closing the handle first lets the file and the folder go at once (a temporary is
   opened with FILE_SHARE_DELETE: deleted while open, it goes when the process ends). */
static void cv_remove_all(void) {
    cv_file *fs = cv_files;
    sig_atomic_t i, n = cv_count;
    for (i = 0; fs && i < n; i++) {
#if defined(_WIN32)
        if (fs[i].state == 1 && fs[i].fd != CV_NO_FD) CloseHandle(fs[i].fd);
        if (fs[i].state == 1) DeleteFileW(fs[i].wtmp);
        else if (fs[i].state == 2) DeleteFileW(fs[i].wfinal);
#else
        if (fs[i].state == 1) unlink(fs[i].tmp);
        else if (fs[i].state == 2) unlink(fs[i].final);
#endif
    }
#if defined(_WIN32)
    if (cv_made) RemoveDirectoryW(cv_made);
#else
    if (cv_made) rmdir(cv_made);
#endif
}

/* Every file is written and being renamed: a signal completes the set instead (rename is
   async-signal-safe). Where signals can be held back (POSIX) they are, and this is not
   reached; Windows cannot hold them. */
static volatile sig_atomic_t cv_renaming;
static void cv_rename_rest(void) {
    cv_file *fs = cv_files;
    sig_atomic_t i, n = cv_count;
    for (i = 0; fs && i < n; i++) {
        if (fs[i].state != 1) continue;
#if defined(_WIN32)
        if (fs[i].wfinal && MoveFileExW(fs[i].wtmp, fs[i].wfinal, MOVEFILE_REPLACE_EXISTING |
                                                                  MOVEFILE_WRITE_THROUGH))
            fs[i].state = 2;
#else
        if (rename(fs[i].tmp, fs[i].final) == 0) fs[i].state = 2;
#endif
    }
}

static void cv_on_signal(int sig) {
    if (cv_renaming) cv_rename_rest();
    else cv_remove_all();
    signal(sig, SIG_DFL);
    raise(sig);                 /* blocked until the handler returns, then the default action */
}

/* SIGINT, SIGTERM, SIGHUP (POSIX; SIGINT and SIGTERM on Windows). A signal the tool was started
   ignoring (nohup) stays ignored. */
static void cv_catch_signals(void) {
#if defined(_WIN32)
    signal(SIGINT, cv_on_signal);
    signal(SIGTERM, cv_on_signal);
#else
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old;
    int i;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cv_on_signal;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < 3; i++) sigaddset(&sa.sa_mask, sigs[i]);
    for (i = 0; i < 3; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
#endif
}

/* Holds the signals back while the set is renamed into place (the tool is single-threaded
   then: the pool is gone), so a set is either all there or all gone. */
static void cv_block(int block) {
#if !defined(_WIN32)
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
#else
    (void)block;
#endif
}

/* Test hook: SAFELOAD_CONVERT_TEST_SIGNAL=POINT:SIGNO raises SIGNO at POINT (open: OUT is
   checked, nothing read; data: the first batch is written; between: the first file is
   written; index: half the index is written; rename: the first file is renamed into place). */
static void cv_test_point(const char *point) {
    const char *v = getenv("SAFELOAD_CONVERT_TEST_SIGNAL");
    size_t n = strlen(point);
    if (v && strncmp(v, point, n) == 0 && v[n] == ':') raise(atoi(v + n + 1));
}

static int cv_errno(void) {
#if defined(_WIN32)
    return (int)GetLastError();
#else
    return errno;
#endif
}

static const char *cv_why(int why) {
#if defined(_WIN32)
    return why == 5 ? "access denied" : why == 3 ? "the folder does not exist" :
           why == 112 ? "the disk is full" : why == 8 ? "out of memory" : "error";
#else
    return strerror(why);
#endif
}

/* error: FILE: IO_ERROR: WHAT: why (error N); returns 2 */
static int cv_io_error(const char *file, const char *what, int why) {
    fprintf(stderr, "error: ");
    put_str(stderr, file);
    fprintf(stderr, ": IO_ERROR: %s: %s (error %d)\n", what, cv_why(why), why);
    fflush(stderr);
    return 2;
}

#if defined(_WIN32)
static wchar_t *cv_widen(const char *p) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, p, -1, NULL, 0);
    wchar_t *w = n > 0 ? (wchar_t *)malloc((size_t)n * sizeof *w) : NULL;
    if (w && !MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, p, -1, w, n)) { free(w); w = NULL; }
    return w;
}
#endif

static char *cv_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *s = (char *)malloc(a + b + 2);
    if (!s) return NULL;
    memcpy(s, dir, a);
    s[a] = '/';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

static size_t cv_dir_len(const char *p) {          /* up to and with the last separator */
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] != '/'
#if defined(_WIN32)
           && p[n - 1] != '\\'
#endif
           ) n--;
    return n;
}

/* A new temporary for f beside `beside`: its name + ".tmp-" + 12 random characters, or where
   that name would be too long for a file system (255), ".tmp-" + 12 in the same folder.
   f->state is 1 from just before the create (a signal then removes at most a name that does
   not exist yet). 0, or the error. */
static int cv_create(cv_file *f, const char *beside, uint64_t *seed) {
    static const char digits[] = "0123456789abcdefghijklmnopqrstuv";
    size_t n = strlen(beside), dir = cv_dir_len(beside), at, i;
    int k, why = 0;
    char *tmp = (char *)malloc(n + 18);
    if (!tmp) return CV_ENOMEM;
    at = n - dir + 17 > 255 ? dir : n;
    memcpy(tmp, beside, at);
    memcpy(tmp + at, ".tmp-", 5);
    tmp[at + 17] = 0;
    for (k = 0; k < 64; k++) {
        uint64_t x;
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x = *seed >> 4;
        for (i = 0; i < 12; i++) { tmp[at + 5 + i] = digits[x & 31]; x >>= 5; }
        f->tmp = tmp;
#if defined(_WIN32)
        free(f->wtmp);
        f->wtmp = cv_widen(tmp);
        if (!f->wtmp) { why = 1113; break; }     /* no memory, or a path that is not UTF-8 */
        f->state = 1;
        f->fd = CreateFileW(f->wtmp, GENERIC_WRITE, FILE_SHARE_DELETE, NULL, CREATE_NEW,
                            FILE_ATTRIBUTE_NORMAL, NULL);
        if (f->fd != CV_NO_FD) return 0;
        why = cv_errno();
        f->state = 0;
        if (why != CV_EEXIST) break;
#else
        f->state = 1;
        do f->fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        while (f->fd < 0 && errno == EINTR);
        if (f->fd >= 0) return 0;
        why = errno;
        f->state = 0;
        if (why != EEXIST) break;
#endif
    }
    return why ? why : CV_EEXIST;
}

static int cv_write(cv_file *f, const void *data, uint64_t n) {
    const unsigned char *p = (const unsigned char *)data;
    while (n) {
        size_t chunk = n > ((uint64_t)1 << 30) ? (size_t)1 << 30 : (size_t)n;
#if defined(_WIN32)
        DWORD put = 0;
        if (!WriteFile(f->fd, p, (DWORD)chunk, &put, NULL) || put == 0) return 0;
#else
        ssize_t put = write(f->fd, p, chunk);
        if (put < 0 && errno == EINTR) continue;
        if (put == 0) errno = EIO;
        if (put <= 0) return 0;
#endif
        p += put;
        n -= (uint64_t)put;
    }
    return 1;
}

/* flushed to the disk and closed: 0, or the error */
static int cv_finish(cv_file *f) {
    int why = 0;
#if defined(_WIN32)
    if (!FlushFileBuffers(f->fd)) why = cv_errno();
    if (!CloseHandle(f->fd) && !why) why = cv_errno();
#else
    int rc;
    while ((rc = fsync(f->fd)) != 0 && errno == EINTR) {}
    if (rc != 0 && errno != EINVAL) why = errno;          /* EINVAL: cannot sync, wrote fine */
    if (close(f->fd) != 0 && !why) why = errno;
#endif
    f->fd = CV_NO_FD;
    return why;
}

static void cv_close(cv_file *f) {
    if (f->fd == CV_NO_FD) return;
#if defined(_WIN32)
    CloseHandle(f->fd);
#else
    close(f->fd);
#endif
    f->fd = CV_NO_FD;
}

static int cv_rename(cv_file *f) {
#if defined(_WIN32)
    if (!MoveFileExW(f->wtmp, f->wfinal, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        return cv_errno();
#else
    if (rename(f->tmp, f->final) != 0) return errno;
#endif
    f->state = 2;
    return 0;
}

/* ---- the bytes: a growing buffer, JSON strings as serde_json and as Python write them ---- */

typedef struct cv_buf { char *p; size_t n, cap; int oom; } cv_buf;

static void cv_put(cv_buf *b, const void *s, size_t n) {
    if (b->oom) return;
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap - b->n < n) {
            if (cap > (size_t)-1 / 2) { b->oom = 1; return; }
            cap *= 2;
        }
        p = (char *)realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void cv_puts(cv_buf *b, const char *s) { cv_put(b, s, strlen(s)); }
static void cv_put_u64(cv_buf *b, uint64_t v) {
    char t[24];
    cv_put(b, t, (size_t)snprintf(t, sizeof t, "%llu", (unsigned long long)v));
}

/* as the reference writer (serde_json): \" \\ \b \f \n \r \t, other controls \u00xx, all
   else raw */
static void cv_put_json(cv_buf *b, const char *s, size_t n) {
    size_t i;
    char u[8];
    cv_put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') cv_put(b, "\\\"", 2);
        else if (c == '\\') cv_put(b, "\\\\", 2);
        else if (c == '\b') cv_put(b, "\\b", 2);
        else if (c == '\f') cv_put(b, "\\f", 2);
        else if (c == '\n') cv_put(b, "\\n", 2);
        else if (c == '\r') cv_put(b, "\\r", 2);
        else if (c == '\t') cv_put(b, "\\t", 2);
        else if (c < 0x20) { snprintf(u, sizeof u, "\\u%04x", c); cv_put(b, u, 6); }
        else cv_put(b, s + i, 1);
    }
    cv_put(b, "\"", 1);
}

/* as Python's json.dumps (ensure_ascii, what transformers writes the index with): the short
   escapes, every other character outside ' '..'~' as \uxxxx (UTF-16 surrogate pairs past
   U+FFFF). s is well-formed UTF-8 (a name the parser accepted). */
static void cv_put_json_ascii(cv_buf *b, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, k;
    char u[16];
    cv_put(b, "\"", 1);
    while (i < n) {
        unsigned long c = p[i];
        k = utf8_len(p + i, n - i);
        if (c >= 0x80 && k == 0) k = 1;                  /* not reached: names are UTF-8 */
        if (c < 0x80) k = 1;
        else if (k == 2) c = (c & 0x1F) << 6 | (p[i + 1] & 0x3F);
        else if (k == 3) c = (c & 0x0F) << 12 | (unsigned long)(p[i + 1] & 0x3F) << 6 | (p[i + 2] & 0x3F);
        else if (k == 4) c = (c & 0x07) << 18 | (unsigned long)(p[i + 1] & 0x3F) << 12 |
                             (unsigned long)(p[i + 2] & 0x3F) << 6 | (p[i + 3] & 0x3F);
        i += k;
        if (c == '"') cv_puts(b, "\\\"");
        else if (c == '\\') cv_puts(b, "\\\\");
        else if (c == '\n') cv_puts(b, "\\n");
        else if (c == '\r') cv_puts(b, "\\r");
        else if (c == '\t') cv_puts(b, "\\t");
        else if (c == '\b') cv_puts(b, "\\b");
        else if (c == '\f') cv_puts(b, "\\f");
        else if (c >= 0x20 && c < 0x7F) { char ch = (char)c; cv_put(b, &ch, 1); }
        else if (c < 0x10000) { snprintf(u, sizeof u, "\\u%04lx", c); cv_puts(b, u); }
        else {
            c -= 0x10000;
            snprintf(u, sizeof u, "\\u%04lx\\u%04lx", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF));
            cv_puts(b, u);
        }
    }
    cv_put(b, "\"", 1);
}

static int cv_name_cmp(const char *a, size_t an, const char *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an < bn ? -1 : an > bn);
}

/* ---- the plan: which tensor goes to which file, in which order ---- */

typedef struct cv_item {
    const safeload_tensor *t;
    size_t shard;               /* the source's shard */
    safeload_dtype dtype;       /* as written */
    uint64_t nbytes;            /* as written */
    size_t file;                /* the output file */
} cv_item;

/* a file's order: the writer's, dtype descending then name */
static int cv_item_order(const void *x, const void *y) {
    const cv_item *a = (const cv_item *)x, *b = (const cv_item *)y;
    if (a->file != b->file) return a->file < b->file ? -1 : 1;
    if (a->dtype != b->dtype) return a->dtype > b->dtype ? -1 : 1;
    return cv_name_cmp(a->t->name, a->t->name_len, b->t->name, b->t->name_len);
}
static int cv_item_name(const void *x, const void *y) {
    const cv_item *a = *(const cv_item *const *)x, *b = *(const cv_item *const *)y;
    return cv_name_cmp(a->t->name, a->t->name_len, b->t->name, b->t->name_len);
}
static int cv_kv_order(const void *x, const void *y) {
    const safeload_kv *a = (const safeload_kv *)x, *b = (const safeload_kv *)y;
    return cv_name_cmp(a->key, a->key_len, b->key, b->key_len);
}

/* A shard size: digits and a unit, as save_pretrained reads them (KB = 1000, MB = 10^6,
   GB = 10^9, TB = 10^12; KiB, MiB, GiB, TiB = powers of 1024; B or none = bytes), in any case
   but one: save_pretrained reads "5Gb" as gigabits, so a lowercase b after a prefix is refused
   rather than read another way. At least 1 byte. */
static int parse_size(const char *s, uint64_t *out) {
    static const char *const units[] = {"", "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib"};
    static const uint64_t mult[] = {1, 1, 1000, 1000000, 1000000000, 1000000000000ULL,
                                    1024, 1048576, 1073741824, 1099511627776ULL};
    uint64_t n = 0;
    size_t j, u, len;
    for (j = 0; s[j] >= '0' && s[j] <= '9'; j++) {
        if (n > (UINT64_MAX - 9) / 10) return 0;
        n = n * 10 + (uint64_t)(s[j] - '0');
    }
    if (j == 0) return 0;
    len = strlen(s + j);
    if (len == 2 && s[j + 1] == 'b') return 0;         /* "Kb", "Mb", "Gb", "Tb": bits */
    for (u = 0; u < sizeof units / sizeof *units; u++)
        if (same_word(s + j, units[u])) break;
    if (u == sizeof units / sizeof *units || n == 0 || n > UINT64_MAX / mult[u]) return 0;
    *out = n * mult[u];
    return 1;
}

/* progress over the whole conversion: each batch's load reports from 0 */
typedef struct cv_progress { bar_state bar; uint64_t base, total; } cv_progress;
static int cv_progress_fn(void *user, uint64_t done, uint64_t total) {
    cv_progress *p = (cv_progress *)user;
    (void)total;
    return progress_bar(&p->bar, p->base + done, p->total);
}

typedef struct cv_ctx {
    const char *path;           /* the source, as given */
    safeload_model *m;
    safeload_load_desc d;
    cv_progress prog;
    unsigned char *buf;         /* one batch */
    uint64_t window;
    safeload_request *reqs;
    const safeload_kv *meta;    /* the first file's metadata, sorted */
    size_t n_meta;
    int has_meta;               /* write "__metadata__" even with no pairs */
    int align;                  /* --align-data: the data section 4096-aligned */
} cv_ctx;

/* the header of one file: its n items in order */
static int cv_header(cv_buf *h, const cv_ctx *c, const cv_item *it, size_t n) {
    size_t i, k;
    uint64_t off = 0, len;
    uint32_t r;
    cv_put(h, "\0\0\0\0\0\0\0\0{", 9);
    if (c->n_meta || c->has_meta) {
        cv_puts(h, "\"__metadata__\":{");
        for (k = 0; k < c->n_meta; k++) {
            if (k) cv_put(h, ",", 1);
            cv_put_json(h, c->meta[k].key, c->meta[k].key_len);
            cv_put(h, ":", 1);
            cv_put_json(h, c->meta[k].value, c->meta[k].value_len);
        }
        cv_put(h, "}", 1);
        if (n) cv_put(h, ",", 1);
    }
    for (i = 0; i < n; i++) {
        if (i) cv_put(h, ",", 1);
        cv_put_json(h, it[i].t->name, it[i].t->name_len);
        cv_puts(h, ":{\"dtype\":\"");
        cv_puts(h, safeload_dtype_name(it[i].dtype));
        cv_puts(h, "\",\"shape\":[");
        for (r = 0; r < it[i].t->rank; r++) {
            if (r) cv_put(h, ",", 1);
            cv_put_u64(h, it[i].t->shape[r]);
        }
        cv_puts(h, "],\"data_offsets\":[");
        cv_put_u64(h, off);
        cv_put(h, ",", 1);
        cv_put_u64(h, off + it[i].nbytes);
        cv_puts(h, "]}");
        off += it[i].nbytes;                    /* no overflow: checked with the plan */
    }
    cv_put(h, "}", 1);
    while (!h->oom && (h->n - 8) % 8) cv_put(h, " ", 1);
    while (!h->oom && c->align && h->n % 4096) cv_put(h, "        ", 8);
    if (h->oom) return 0;
    len = h->n - 8;
    for (k = 0; k < 8; k++) h->p[k] = (char)(len >> (8 * k) & 0xFF);
    return 1;
}

/* One file: its header, then its items' bytes a batch at a time. 0, 1 (the source is invalid)
   or 2 (I/O), the error printed. */
static int cv_write_file(cv_ctx *c, cv_file *f, const cv_item *it, size_t n, int first) {
    cv_buf h;
    size_t i = 0, j, q;
    safeload_error e;
    safeload_result r;
    memset(&h, 0, sizeof h);
    if (!cv_header(&h, c, it, n)) {
        free(h.p);
        fprintf(stderr, "error: out of memory\n");
        return 2;
    }
    if (h.n - 8 > CV_MAX_HEADER) {
        fprintf(stderr, "error: ");
        put_str(stderr, f->final);
        fprintf(stderr, ": HEADER_TOO_LARGE: the header would be %llu bytes, over the limit of "
                "100000000\n", (unsigned long long)(h.n - 8));
        free(h.p);
        return 2;
    }
    if (!cv_write(f, h.p, h.n)) { free(h.p); return cv_io_error(f->final, "writing failed", cv_errno()); }
    free(h.p);
    while (i < n) {
        uint64_t used = 0, src = 0;
        /* a batch: what fits the window, or one tensor bigger than it */
        for (j = i, q = 0; j < n && (j == i || used + it[j].nbytes <= c->window); j++) {
            if (!it[j].nbytes) continue;
            memset(&c->reqs[q], 0, sizeof c->reqs[q]);
            c->reqs[q].name = it[j].t->name;
            c->reqs[q].tensor = it[j].t;
            c->reqs[q].shard = it[j].shard;
            c->reqs[q].dst = c->buf + used;
            c->reqs[q].dst_size = it[j].nbytes;
            c->reqs[q].dtype = it[j].dtype != it[j].t->dtype ? it[j].dtype : SAFELOAD_DTYPE_NONE;
            used += it[j].nbytes;
            src += it[j].t->nbytes;
            q++;
        }
        i = j;
        if (!q) continue;
        r = safeload_load(c->m, c->reqs, q, &c->d, NULL, &e);
        if (r != SAFELOAD_OK) {
            if (c->prog.bar.shown) fputc('\n', stderr);
            print_error(c->path, &e, c->m);
            return is_io(r) ? 2 : 1;
        }
        c->prog.base += src;
        for (j = 0; j < q; j++)                 /* loaded in host order, written little-endian */
            to_file_order(c->reqs[j].dst, c->reqs[j].nbytes,
                          c->reqs[j].dtype != SAFELOAD_DTYPE_NONE ? c->reqs[j].dtype
                                                                  : c->reqs[j].tensor->dtype);
        if (!cv_write(f, c->buf, used)) return cv_io_error(f->final, "writing failed", cv_errno());
        if (first) { cv_test_point("data"); first = 0; }
    }
    return 0;
}

/* model.safetensors.index.json as transformers writes it: json.dumps(indent=2,
   sort_keys=True) and a newline; metadata.total_size, weight_map sorted by name */
static int cv_index(cv_buf *b, cv_item *const *by_name, size_t n, uint64_t total,
                    char *const *names) {
    size_t i;
    cv_puts(b, "{\n  \"metadata\": {\n    \"total_size\": ");
    cv_put_u64(b, total);
    cv_puts(b, "\n  },\n  \"weight_map\": {");
    for (i = 0; i < n; i++) {
        cv_puts(b, i ? ",\n    " : "\n    ");
        cv_put_json_ascii(b, by_name[i]->t->name, by_name[i]->t->name_len);
        cv_puts(b, ": ");
        cv_put_json_ascii(b, names[by_name[i]->file], strlen(names[by_name[i]->file]));
    }
    cv_puts(b, n ? "\n  }\n}\n" : "}\n}\n");
    return !b->oom;
}

/* OUT for one file: the file a symlink names (the link stays), not a directory, device or
   pipe (-1, said); *mode, *uid, *gid those of a file replaced (-1: a new file). 0, -1, or an
   error number. */
static int cv_target(const char *out, char **target, long *mode, long *uid, long *gid) {
    size_t n = strlen(out);
#if !defined(_WIN32)
    struct stat st;
    char *real = NULL;
#endif
    int special;
    *mode = *uid = *gid = -1;
    *target = NULL;
#if defined(_WIN32)
    special = is_directory(out);
#else
    if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode)) real = realpath(out, NULL);
    if (real) *target = real;
    special = stat(real ? real : out, &st) == 0 && !S_ISREG(st.st_mode);
    if (!special && stat(real ? real : out, &st) == 0) {
        *mode = (long)(st.st_mode & 07777);
        *uid = (long)st.st_uid;
        *gid = (long)st.st_gid;
    }
#endif
    if (special) {
        fprintf(stderr, "error: ");
        put_str(stderr, out);
        fprintf(stderr, ": INVALID_ARGUMENT: the target is a directory, device or pipe, not a "
                "file to replace\n");
        free(*target);
        *target = NULL;
        return -1;
    }
    if (!*target && (*target = (char *)malloc(n + 1)) != NULL) memcpy(*target, out, n + 1);
    return *target ? 0 : CV_ENOMEM;
}

/* OUT for a set: a folder, made (one level) where missing. 0, -1 (OUT is something else,
   said), or an error number. */
static int cv_folder(const char *out, int *made) {
    int why = 0;
#if defined(_WIN32)
    wchar_t *w;
#endif
    *made = 0;
    if (is_directory(out)) return 0;
#if defined(_WIN32)
    if (!(w = cv_widen(out))) return 1113;
    if (CreateDirectoryW(w, NULL)) *made = 1;
    else why = cv_errno();
    free(w);
    if (why == 183) {                                   /* ERROR_ALREADY_EXISTS */
#else
    if (mkdir(out, 0777) == 0) *made = 1;
    else why = errno;
    if (why == EEXIST) {
#endif
        fprintf(stderr, "error: ");
        put_str(stderr, out);
        fprintf(stderr, ": INVALID_ARGUMENT: --max-shard-size writes a folder; this is a "
                "file\n");
        return -1;
    }
    return why;
}

/* Every tensor of the model into one file at OUT (atomically, so OUT may be PATH), or with
   --max-shard-size into OUT/model-0000K-of-0000N.safetensors and
   OUT/model.safetensors.index.json as save_pretrained lays them out: cast to --dtype where a
   cast exists, else as stored. The metadata is the first file's (the checkpoint's own, or the
   first shard's: an index's metadata describes the shards), in every file written. */
static int cmd_convert(int argc, char **argv) {
    const char *path = NULL, *out = NULL;
    safeload_dtype dtype = SAFELOAD_DTYPE_NONE;
    safeload_pool *pool = NULL;
    safeload_error e;
    safeload_result r;
    cv_ctx c;
    cv_file *files = NULL, *grown;
    cv_item *items = NULL, **by_name = NULL;
    char **names = NULL, *target = NULL, *made = NULL;
    safeload_kv *meta = NULL;
    const safeload_file *first;
    cv_buf ix;
    size_t k, n = 0, nfiles = 1, nslots = 1, nout, at, cast = 0;
    uint64_t bytes = 0, shard_max = 0, seed, used, biggest = 0;
    long mode = -1, uid = -1, gid = -1;
    int i, ends = 0, rc = 2, why, sharded = 0, progress = 0, threads = 0, dir_made = 0;
#if defined(_WIN32)
    wchar_t *made_w = NULL;
#endif
    memset(&c, 0, sizeof c);
    memset(&ix, 0, sizeof ix);
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!ends && strcmp(a, "--") == 0) { ends = 1; continue; }
        if (!ends && strcmp(a, "--dtype") == 0 && i + 1 < argc) {
            if (!parse_dtype(argv[++i], &dtype))
                return usage_error("--dtype takes f32, f16 or bf16, not", argv[i]);
        } else if (!ends && strcmp(a, "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i], &threads)) return threads_error(argv[i]);
        } else if (!ends && strcmp(a, "--max-shard-size") == 0 && i + 1 < argc) {
            if (!parse_size(argv[++i], &shard_max))
                return usage_error("--max-shard-size takes a size such as 5GB, 500MB, 2GiB or "
                                   "bytes, not", argv[i]);
            sharded = 1;
        } else if (!ends && strcmp(a, "--progress") == 0) {
            progress = 1;
        } else if (!ends && strcmp(a, "--align-data") == 0) {
            c.align = 1;
        } else if (!ends && i + 1 == argc && (strcmp(a, "--dtype") == 0 ||
                                                strcmp(a, "--threads") == 0 ||
                                                strcmp(a, "--max-shard-size") == 0)) {
            return usage_error("a value is missing after", a);
        } else if (!ends && a[0] == '-') {
            return usage_error("unknown option", a);
        } else if (!path) path = a;
        else if (!out) out = a;
        else return usage_error("unexpected argument", a);
    }
    if (!out) return usage_error(path ? "convert needs an OUT path" : "convert needs a PATH and "
                                 "an OUT path", NULL);
    if (!out[0]) return usage_error("OUT is empty", NULL);

    /* OUT first: a file (or folder) that cannot be written fails before anything is read.
       The first file's temporary is made now and written later. */
    seed = (uint64_t)(now_seconds() * 1e9) ^ (uint64_t)(uintptr_t)&c ^ (uint64_t)clock() << 32;
    files = (cv_file *)calloc(1, sizeof *files);
    if (!files) { fprintf(stderr, "error: out of memory\n"); return 2; }
    files[0].fd = CV_NO_FD;
    cv_catch_signals();
    if (!sharded) {
        why = cv_target(out, &target, &mode, &uid, &gid);
        if (why < 0) goto done;
        if (why) { rc = cv_io_error(out, "cannot replace the target", why); goto done; }
        files[0].final = target;
        target = NULL;
    } else {
        why = cv_folder(out, &dir_made);
        if (why < 0) goto done;
        if (why) { rc = cv_io_error(out, "cannot make the folder", why); goto done; }
        made = dir_made ? (char *)malloc(strlen(out) + 1) : NULL;
        if (made) {
            memcpy(made, out, strlen(out) + 1);
#if defined(_WIN32)
            cv_made = made_w = cv_widen(made);
#else
            cv_made = made;
#endif
        }
        files[0].final = cv_join(out, "model.safetensors");
        if (!files[0].final) { fprintf(stderr, "error: out of memory\n"); goto done; }
    }
    cv_files = files;
    cv_count = 1;
    why = cv_create(&files[0], files[0].final, &seed);
    if (why) {
        rc = cv_io_error(sharded ? out : files[0].final, "cannot create a file there", why);
        goto done;
    }
#if !defined(_WIN32)
    if (mode >= 0) {        /* a replaced file keeps its owner where allowed, its permissions */
        if (fchown(files[0].fd, (uid_t)uid, (gid_t)gid) != 0) { /* not root: ours */ }
        (void)fchmod(files[0].fd, (mode_t)mode);
    }
#endif
    cv_test_point("open");

    r = open_model(path, &c.m, &e);
    if (r != SAFELOAD_OK) {
        print_error(path, &e, NULL);
        rc = is_io(r) ? 2 : 1;
        goto done;
    }
    print_warnings(path, c.m);
    c.path = path;

    /* the plan: each tensor's dtype and size as written, and its file */
    n = safeload_model_tensor_count(c.m);
    items = (cv_item *)calloc(n + 1, sizeof *items);
    by_name = (cv_item **)calloc(n + 1, sizeof *by_name);
    c.reqs = (safeload_request *)calloc(n + 1, sizeof *c.reqs);
    if (!items || !by_name || !c.reqs) { fprintf(stderr, "error: out of memory\n"); goto done; }
    for (k = 0; k < n; k++) {
        cv_item *x = &items[k];
        x->t = safeload_model_tensor_at(c.m, k, &x->shard);
        x->dtype = x->t->dtype;
        x->nbytes = x->t->nbytes;
        if (dtype != SAFELOAD_DTYPE_NONE && dtype != x->t->dtype &&
            safeload_can_convert(dtype, x->t->dtype)) {
            uint64_t size = safeload_dtype_size(dtype);
            if (x->t->numel > UINT64_MAX / size) {
                fprintf(stderr, "error: ");
                put_str(stderr, path);
                fprintf(stderr, ": OVERFLOW: the tensor's size as %s overflows 64 bits [tensor ",
                        safeload_dtype_name(dtype));
                put_text(stderr, x->t->name, x->t->name_len, 0);
                fprintf(stderr, "]\n");
                goto done;
            }
            x->dtype = dtype;
            x->nbytes = x->t->numel * size;
            cast++;
        }
        if (x->nbytes > UINT64_MAX / 2 - bytes || (uint64_t)(size_t)x->nbytes != x->nbytes) {
            fprintf(stderr, "error: ");
            put_str(stderr, path);
            fprintf(stderr, ": OVERFLOW: the data is more than this platform can address\n");
            goto done;
        }
        bytes += x->nbytes;
        c.prog.total += x->t->nbytes;
        by_name[k] = x;
    }
    if (sharded) {
        /* save_pretrained's split, in the model's order: a file takes tensors until the next
           would take it past the size; a tensor bigger than the size gets a file of its own
           (placed where it comes, before the file being filled) */
        size_t id = 0, start = 0;
        uint64_t size = 0;
        int filling = 0;        /* a file is being filled: its tensors are marked CV_FILLING */
        for (k = 0; k < n; k++) {
            if (items[k].nbytes > shard_max) { items[k].file = id++; continue; }
            if (filling && size + items[k].nbytes > shard_max) {
                for (; start < k; start++) if (items[start].file == CV_FILLING) items[start].file = id;
                id++;
                size = 0;
                filling = 0;
            }
            if (!filling) { start = k; filling = 1; }
            items[k].file = CV_FILLING;
            size += items[k].nbytes;
        }
        for (; filling && start < n; start++) if (items[start].file == CV_FILLING) items[start].file = id;
        id += (size_t)filling;
        nfiles = id ? id : 1;
        c.window = shard_max < CV_WINDOW ? (shard_max < ((uint64_t)1 << 20) ? (uint64_t)1 << 20 : shard_max)
                                        : CV_WINDOW;
    } else {
        c.window = CV_WINDOW;
    }
    qsort(items, n, sizeof *items, cv_item_order);
    for (k = 0; k < n; k++) by_name[k] = &items[k];
    qsort(by_name, n, sizeof *by_name, cv_item_name);

    /* the batch buffer: the largest batch any file makes */
    for (k = 0, used = 0; k < n; k++) {
        if (k && (items[k].file != items[k - 1].file || used + items[k].nbytes > c.window)) used = 0;
        used += items[k].nbytes;
        if (used > biggest) biggest = used;
    }
    c.buf = (unsigned char *)malloc(biggest ? (size_t)biggest : 1);
    if (!c.buf) {
        fprintf(stderr, "error: out of memory for a batch of %llu bytes\n",
                (unsigned long long)biggest);
        goto done;
    }

    /* the metadata, sorted as the writer sorts it */
    first = safeload_model_shard(c.m, 0);
    c.n_meta = first ? safeload_metadata_count(first) : 0;
    c.has_meta = first && safeload_has_metadata(first);
    meta = (safeload_kv *)calloc(c.n_meta + 1, sizeof *meta);
    if (!meta) { fprintf(stderr, "error: out of memory\n"); goto done; }
    for (k = 0; k < c.n_meta; k++) meta[k] = *safeload_metadata_at(first, k);
    qsort(meta, c.n_meta, sizeof *meta, cv_kv_order);
    c.meta = meta;

    /* every file's name (and the index's), known before the first byte is written */
    names = (char **)calloc(nfiles + 1, sizeof *names);
    grown = (cv_file *)calloc(nfiles + 1, sizeof *grown);
    if (!names || !grown) { free(grown); fprintf(stderr, "error: out of memory\n"); goto done; }
    for (k = 0; k <= nfiles; k++) grown[k].fd = CV_NO_FD;
    cv_block(1);                /* single-threaded here: the table changes under no handler */
    grown[0] = files[0];
    cv_files = grown;
    free(files);
    files = grown;
    nslots = nfiles + 1;
    cv_block(0);
    if (sharded && nfiles > 1) {
        char name[64];
        for (k = 0; k < nfiles; k++) {
            snprintf(name, sizeof name, "model-%05llu-of-%05llu.safetensors",
                     (unsigned long long)k + 1, (unsigned long long)nfiles);
            names[k] = (char *)malloc(strlen(name) + 1);
            if (names[k]) memcpy(names[k], name, strlen(name) + 1);
            if (k) files[k].final = cv_join(out, name);
            if (!names[k] || (k && !files[k].final)) { fprintf(stderr, "error: out of memory\n"); goto done; }
        }
        free(files[0].final);
        files[0].final = cv_join(out, names[0]);
        files[nfiles].final = cv_join(out, "model.safetensors.index.json");
        if (!files[0].final || !files[nfiles].final) { fprintf(stderr, "error: out of memory\n"); goto done; }
    }

    /* the load: one pool for every batch; --progress over the whole conversion */
    if (safeload_pool_create(&pool, threads, &e) == SAFELOAD_OK) c.d.pool = pool;
    else c.d.threads = threads;
    if (progress) {
        c.prog.bar.t0 = now_seconds();
        c.d.progress = cv_progress_fn;
        c.d.progress_user = &c.prog;
    }
    for (k = 0, at = 0; k < nfiles; k++) {
        size_t end = at;
        while (end < n && items[end].file == k) end++;
        if (k) {
            cv_count = (sig_atomic_t)(k + 1);
            why = cv_create(&files[k], files[k].final, &seed);
            if (why) { rc = cv_io_error(files[k].final, "cannot create a file there", why); goto done; }
        }
        rc = cv_write_file(&c, &files[k], items + at, end - at, k == 0);
        if (rc) goto done;
        why = cv_finish(&files[k]);
        if (why) { rc = cv_io_error(files[k].final, "writing failed", why); goto done; }
        if (k == 0) cv_test_point("between");
        at = end;
    }
    if (c.prog.bar.shown && c.prog.base < c.prog.total) fputc('\n', stderr);
    rc = 2;
    nout = nfiles;
    if (sharded && nfiles > 1) {
        size_t half;
        if (!cv_index(&ix, by_name, n, bytes, names)) { fprintf(stderr, "error: out of memory\n"); goto done; }
        cv_count = (sig_atomic_t)(nfiles + 1);
        why = cv_create(&files[nfiles], files[nfiles].final, &seed);
        if (why) { rc = cv_io_error(files[nfiles].final, "cannot create a file there", why); goto done; }
        half = ix.n / 2;
        if (!cv_write(&files[nfiles], ix.p, half)) { rc = cv_io_error(files[nfiles].final, "writing failed", cv_errno()); goto done; }
        cv_test_point("index");
        if (!cv_write(&files[nfiles], ix.p + half, ix.n - half)) { rc = cv_io_error(files[nfiles].final, "writing failed", cv_errno()); goto done; }
        why = cv_finish(&files[nfiles]);
        if (why) { rc = cv_io_error(files[nfiles].final, "writing failed", why); goto done; }
        nout = nfiles + 1;
    }

    /* into place: the model and the pool closed first (Windows replaces no open file; no
       other thread then takes a signal), signals held back, the index last */
    safeload_pool_destroy(pool);
    pool = NULL;
    safeload_model_close(c.m);
    c.m = NULL;
#if defined(_WIN32)
    for (k = 0; k < nout; k++)
        if (!(files[k].wfinal = cv_widen(files[k].final))) {
            rc = cv_io_error(files[k].final, "cannot rename the temporary into place", 1113);
            goto done;
        }
#endif
    cv_block(1);
    cv_renaming = 1;
    for (k = 0; k < nout; k++) {
        why = cv_rename(&files[k]);
        if (why) {
            cv_renaming = 0;
            rc = cv_io_error(files[k].final, "cannot rename the temporary into place", why);
            cv_remove_all();
            cv_count = 0;
            cv_block(0);
            goto done;
        }
        if (k == 0) cv_test_point("rename");
    }
    cv_renaming = 0;
    cv_count = 0;               /* the set is complete: nothing to remove */
    cv_made = NULL;
    cv_block(0);
#if !defined(_WIN32)
    {   /* the renames live in the folder: sync it (best effort; the files are in place) */
        char *d = (char *)malloc(strlen(files[0].final) + 2);
        if (d) {
            size_t dl = cv_dir_len(files[0].final);
            int dfd;
            memcpy(d, files[0].final, dl);
            d[dl] = 0;
            if (!dl) { d[0] = '.'; d[1] = 0; }
            if ((dfd = open(d, O_RDONLY | O_CLOEXEC)) >= 0) { (void)fsync(dfd); close(dfd); }
            free(d);
        }
    }
#endif
    rc = 0;
    printf("wrote ");
    if (sharded && nfiles > 1) {
        put_str(stdout, out);
        printf(": %llu shards and model.safetensors.index.json, ", (unsigned long long)nfiles);
    } else {
        put_str(stdout, sharded ? files[0].final : out);   /* OUT as given, not a link's target */
        printf(": ");
    }
    printf("%llu tensor%s, %llu byte%s of data (", (unsigned long long)n, plural(n),
           (unsigned long long)bytes, plural(bytes));
    if (!cast) printf("as stored)\n");
    else if (cast == n) printf("all cast to %s)\n", safeload_dtype_name(dtype));
    else printf("%llu cast to %s, %llu as stored)\n", (unsigned long long)cast,
                safeload_dtype_name(dtype), (unsigned long long)(n - cast));
done:
    if (rc) {
        cv_block(1);
        for (k = 0; files && k < (size_t)cv_count; k++) cv_close(&files[k]);
        cv_remove_all();
        cv_count = 0;
        cv_made = NULL;
        cv_block(0);
    }
    safeload_pool_destroy(pool);
    safeload_model_close(c.m);
    for (k = 0; files && k < nslots; k++) {
        free(files[k].tmp);
        free(files[k].final);
#if defined(_WIN32)
        free(files[k].wtmp);
        free(files[k].wfinal);
#endif
    }
    for (k = 0; names && k < nfiles; k++) free(names[k]);
#if defined(_WIN32)
    free(made_w);
#endif
    cv_files = NULL;
    free(files);
    free(names);
    free(made);
    free(target);
    free(items);
    free(by_name);
    free(c.reqs);
    free(c.buf);
    free(meta);
    free(ix.p);
    return rc;
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
    uint64_t count = 16, shown, rows, k, numel;
    safeload_model *m = NULL;
    const safeload_tensor *t;
    safeload_request q;
    safeload_arena *arena = NULL;
    safeload_error e;
    safeload_result r;
    char shape[128], buf[96];
    int i, ends = 0, bits, packed, slicing = 0, force = 0, json = 0;
    jw w;
    memset(&q, 0, sizeof q);
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!ends && strcmp(a, "--") == 0) { ends = 1; continue; }
        if (!ends && strcmp(a, "--count") == 0 && i + 1 < argc) {
            if (!parse_count(argv[++i], &count))
                return usage_error("--count takes a whole number or all, not", argv[i]);
        } else if (!ends && strcmp(a, "--slice") == 0 && i + 1 < argc) {
            if (!parse_slice(argv[++i], &q))
                return usage_error("--slice takes DIM:BEGIN:END, not", argv[i]);
            slicing = 1;
        } else if (!ends && (strcmp(a, "--count") == 0 || strcmp(a, "--slice") == 0)) {
            return usage_error("a value is missing after", a);
        } else if (!ends && strcmp(a, "--force") == 0) {
            force = 1;
        } else if (!ends && strcmp(a, "--json") == 0) {
            json = 1;
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
        r = (safeload_result)report_error(json, path, &e, m, is_io(r) ? 2 : 1);
        safeload_model_close(m);
        return (int)r;
    }
    print_warnings(path, m);
    if (!(t = safeload_model_find(m, name, &q.shard))) {
        sl__fail(&e, SAFELOAD_NOT_FOUND, path, SAFELOAD_NO_OFFSET, NULL, 0,
                 "no tensor named %s", name);
        if (json) (void)report_error(json, path, &e, m, 1);
        else {                          /* the name in full, escaped, not as the error keeps it */
            fprintf(stderr, "error: ");
            put_str(stderr, path);
            fprintf(stderr, ": NOT_FOUND: no tensor named ");
            put_str(stderr, name);
            fputc('\n', stderr);
        }
        safeload_model_close(m);
        return 1;
    }
    numel = t->numel;
    if (slicing && q.slice_dim < t->rank && t->shape[q.slice_dim] && q.slice_end > q.slice_begin)
        numel = t->numel / t->shape[q.slice_dim] * (q.slice_end - q.slice_begin);
    shown = count < numel ? count : numel;
    if (count == UINT64_MAX && numel > 1000000 && !force) {      /* --count all, a big one */
        fprintf(stderr, "error: ");
        put_str(stderr, t->name);
        fprintf(stderr, " has %llu elements: --count all would print every one; add --force, "
                "or give --count N\n", (unsigned long long)numel);
        safeload_model_close(m);
        return 2;
    }
    q.name = t->name;
    q.tensor = t;
    if (safeload_can_convert(SAFELOAD_F32, t->dtype) && t->dtype != SAFELOAD_F64)
        q.dtype = SAFELOAD_F32;
    bits = (int)safeload_dtype_bits(t->dtype);
    if (t->rank > 0 && shown < t->numel && !slicing) {  /* the rows that hold the first `shown` */
        uint64_t per = t->numel / t->shape[0];
        rows = (shown + per - 1) / per;
        /* a slice of 4- or 6-bit values must be whole bytes: up to a row count that is */
        while (rows < t->shape[0] && (rows * per * (uint64_t)bits) % 8) rows++;
        if (rows < t->shape[0]) q.slice_end = rows;
    }
    packed = bits % 8 && !q.dtype;
    if (packed) (void)safeload_nbytes(t->dtype, &shown, 1, &shown);  /* F6: packed bytes */
    if (shown || slicing) r = safeload_load(m, &q, 1, NULL, &arena, &e);   /* a slice: checked */
    if (r != SAFELOAD_OK) {
        r = (safeload_result)report_error(json, path, &e, m, is_io(r) ? 2 : 1);
        safeload_model_close(m);
        return (int)r;
    }
    if (json) {
        uint32_t d;
        jw_doc(&w, stdout);
        jw_str(&w, "command", "show");
        jw_str(&w, "path", path);
        jw_str_n(&w, "name", t->name, t->name_len);
        jw_str(&w, "dtype", dtype_str(t->dtype));
        jw_arr(&w, "shape");
        for (d = 0; d < t->rank; d++) jw_u64(&w, NULL, t->shape[d]);
        jw_end(&w, ']');
        jw_u64(&w, "elements", t->numel);
        if (slicing) {
            jw_obj(&w, "slice");
            jw_u64(&w, "dim", q.slice_dim);
            jw_u64(&w, "begin", q.slice_begin);
            jw_u64(&w, "end", q.slice_end);
            jw_u64(&w, "elements", numel);
            jw_end(&w, '}');
        } else jw_null(&w, "slice");
        jw_bool(&w, "packed", packed);
        jw_u64(&w, "shown", shown);
        jw_arr(&w, "values");
        for (k = 0; k < shown; k++) {
            const unsigned char *p = (const unsigned char *)q.data;
            if (packed) { jw_u64(&w, NULL, p[k]); continue; }
            format_element(buf, sizeof buf, p, (size_t)k, q.dtype ? q.dtype : t->dtype, t->dtype);
            jw_sep(&w, NULL);
            /* a JSON number as printed; nan, inf and complex values as strings */
            if (strstr(buf, "nan") || strstr(buf, "inf") || strchr(buf, 'j') ||
                (buf[0] == '0' && buf[1] == 'x'))
                json_string(stdout, buf, strlen(buf));
            else fputs(buf, stdout);
        }
        jw_end(&w, ']');
        jw_warnings(&w, path, m);
        jw_end(&w, '}');
        safeload_arena_free(arena);
        safeload_model_close(m);
        return 0;
    }
    shape_string(shape, sizeof shape, t);
    put_str(stdout, t->name);
    printf(": %s %s, %llu element%s", dtype_str(t->dtype), shape,
           (unsigned long long)t->numel, plural(t->numel));
    if (slicing)
        printf(", slice [%llu, %llu) of dimension %u: %llu element%s",
               (unsigned long long)q.slice_begin, (unsigned long long)q.slice_end,
               (unsigned)q.slice_dim, (unsigned long long)numel, plural(numel));
    if (packed) printf(", shown as %llu packed byte%s", (unsigned long long)shown, plural(shown));
    else if (shown < numel) printf(", the first %llu", (unsigned long long)shown);
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

/* ---- hash ---- */

/* SHA-256 as FIPS 180-4 specifies it: the constants are the first 32 bits of the fractional
   parts of the cube roots of the first 64 primes (K) and of the square roots of the first 8
   (the initial state). Written here so the tool needs no library for it. */
static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

typedef struct sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t fill;
    int ni;                     /* the SHA extensions (sha256_use_ni) */
} sha256;

static void sha256_init(sha256 *s, int ni) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->fill = 0;
    s->ni = ni;
}

#define SHA_ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))
static void sha256_blocks(uint32_t *h, const unsigned char *p, size_t blocks) {
    uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
    int i;
    for (; blocks--; p += 64) {
        for (i = 0; i < 16; i++)
            w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
                   (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (i = 16; i < 64; i++) {
            uint32_t s0 = SHA_ROR(w[i - 15], 7) ^ SHA_ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = SHA_ROR(w[i - 2], 17) ^ SHA_ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
        for (i = 0; i < 64; i++) {
            t1 = k + (SHA_ROR(e, 6) ^ SHA_ROR(e, 11) ^ SHA_ROR(e, 25)) + ((e & f) ^ (~e & g)) +
                 sha256_k[i] + w[i];
            t2 = (SHA_ROR(a, 2) ^ SHA_ROR(a, 13) ^ SHA_ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
    }
}
#undef SHA_ROR

/* x86-64 SHA extensions (Goldmont, Ice Lake, Zen and later): two rounds an instruction, about
   four times the portable loop. The state sits in two registers as ABEF and CDGH; W[16..63]
   come four at a time from sha256msg1 (W[t-16] + s0(W[t-15])), the four words W[t-7] and
   sha256msg2 (+ s1(W[t-2])). */
#if defined(SL__HAVE_AVX) && defined(SL__GNUC) && defined(__x86_64__)
#  include <immintrin.h>
#  define CLI_SHA_NI 1
__attribute__((target("sha,sse4.1")))
static void sha256_blocks_ni(uint32_t *h, const unsigned char *p, size_t blocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)h), 0xB1);
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)(h + 4)), 0x1B);
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                            /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                                 /* CDGH */
    for (; blocks--; p += 64) {
        __m128i m[4], k, save0 = s0, save1 = s1;
        int i;
        for (i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)),
                                    swap);
        for (i = 0; i < 16; i++) {
            __m128i *w = &m[i & 3];
            if (i >= 4)
                *w = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(*w, m[(i + 1) & 3]),
                                  _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4)),
                    m[(i + 3) & 3]);
            k = _mm_add_epi32(*w, _mm_loadu_si128((const __m128i *)(const void *)(sha256_k + 4 * i)));
            s1 = _mm_sha256rnds2_epu32(s1, s0, k);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(k, 0x0E));
        }
        s0 = _mm_add_epi32(s0, save0);
        s1 = _mm_add_epi32(s1, save1);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);                                   /* ABEF -> ABCD, EFGH */
    s1 = _mm_shuffle_epi32(s1, 0xB1);
    _mm_storeu_si128((__m128i *)(void *)h, _mm_blend_epi16(t, s1, 0xF0));
    _mm_storeu_si128((__m128i *)(void *)(h + 4), _mm_alignr_epi8(s1, t, 8));
}
#endif

/* The SHA extensions where the CPU has them (CPUID 7.EBX bit 29, with SSSE3 and SSE4.1), unless
   SAFELOAD_SIMD=scalar asks for the portable code (the tests run both). */
static int sha256_use_ni(void) {
#if defined(CLI_SHA_NI)
    unsigned r0[4], r1[4], r7[4];
    const char *env = getenv("SAFELOAD_SIMD");
    if (env && same_word(env, "scalar")) return 0;
    sl__cpuid(0, 0, r0);
    if (r0[0] < 7) return 0;
    sl__cpuid(1, 0, r1);
    sl__cpuid(7, 0, r7);
    return (r7[1] >> 29 & 1) && (r1[2] >> 9 & 1) && (r1[2] >> 19 & 1);
#else
    return 0;
#endif
}

static void sha256_run(sha256 *s, const unsigned char *p, size_t blocks) {
#if defined(CLI_SHA_NI)
    if (s->ni) { sha256_blocks_ni(s->h, p, blocks); return; }
#endif
    sha256_blocks(s->h, p, blocks);
}

static void sha256_update(sha256 *s, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    s->len += n;
    if (s->fill) {
        size_t take = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->buf + s->fill, p, take);
        s->fill += take, p += take, n -= take;
        if (s->fill < 64) return;
        sha256_run(s, s->buf, 1);
        s->fill = 0;
    }
    sha256_run(s, p, n / 64);
    memcpy(s->buf, p + n / 64 * 64, n % 64);
    s->fill = n % 64;
}

/* the digest as 64 lowercase hex digits and a NUL */
static void sha256_final(sha256 *s, char hex[65]) {
    uint64_t bits = s->len * 8;
    unsigned char pad[72];
    size_t n = (s->fill < 56 ? 56 : 120) - s->fill, i;
    memset(pad, 0, sizeof pad);
    pad[0] = 0x80;
    for (i = 0; i < 8; i++) pad[n + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(s, pad, n + 8);
    for (i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned)(s->h[i / 4] >> (24 - 8 * (i % 4)) & 0xFF));
}

/* hash's work: ranges of files read in chunks, each a job a pool thread takes. A whole-file
   job digests the file; a tensor job digests each tensor of a run of consecutive ones (the
   tensors tile the data section, so one sequential read serves them all); with no digest at
   all (verify --data) it reads every byte, to find a read that fails or a file that was cut. */
enum { HASH_FILES, HASH_TENSORS, HASH_READ };
typedef struct hash_job {
    const char *path;
    const safeload_file *f;     /* tensor jobs: the shard */
    size_t shard, t0, t1;       /* tensors t0..t1-1 of the shard; digests at slot0.. */
    size_t slot0;
    uint64_t lo, hi;            /* bytes lo..hi-1 */
} hash_job;
typedef struct hash_fail {
    int set;
    size_t job;                 /* the first failing job in job order wins: deterministic */
    safeload_result code;
    uint64_t offset;
    const safeload_tensor *tensor;
    char message[160];
} hash_fail;
typedef struct hash_run {
    int mode, ni;
    hash_job *jobs;
    size_t n_jobs, next;
    char (*digest)[65];         /* per job (files) or per tensor slot */
    unsigned char *done;        /* HASH_READ: per tensor slot, 1 once every byte was read */
    sl__mutex mu;               /* next, fail */
    hash_fail fail;
    size_t chunk;
} hash_run;

static void hash_failed(hash_run *R, size_t j, safeload_result code, uint64_t off,
                        const safeload_tensor *t, const char *msg) {
    sl__mutex_lock(&R->mu);
    if (!R->fail.set || j < R->fail.job) {
        R->fail.set = 1;
        R->fail.job = j;
        R->fail.code = code;
        R->fail.offset = off;
        R->fail.tensor = t;
        snprintf(R->fail.message, sizeof R->fail.message, "%s", msg);
    }
    sl__mutex_unlock(&R->mu);
}

/* The tool reads with the library's file layer (sl__os_open, sl__os_pread: UTF-8 and long
   paths on Windows, EINTR, 64-bit offsets) and runs on its pool: the CLI builds the
   implementation, so these are at hand. */
static uint64_t tensor_end(const safeload_file *f, size_t i) {
    const safeload_tensor *t = safeload_tensor_at(f, i);
    return t->file_offset + t->nbytes;
}

static void hash_one(hash_run *R, size_t j, unsigned char *buf) {
    const hash_job *J = &R->jobs[j];
    safeload_allocator a;
    sl__os_file fd;
    uint64_t size, pos = J->lo;
    size_t ti = J->t0, cap = R->chunk;
    const safeload_tensor *t = NULL;
    sha256 s;
    char msg[160];
    int e;
    memset(&a, 0, sizeof a);
    if ((e = sl__os_open(J->path, 0, &a, &fd, &size)) != 0) {
        snprintf(msg, sizeof msg, "cannot open: %s (error %d)", sl__os_why(e, "open failed"), e);
        hash_failed(R, j, SAFELOAD_IO_ERROR, SAFELOAD_NO_OFFSET, NULL, msg);
        return;
    }
    sha256_init(&s, R->ni);
    for (;;) {
        int64_t got = 0;
        size_t k = 0;
        /* tensors that end here (zero-sized ones too) are done; the next one starts */
        while (R->mode != HASH_FILES && ti < J->t1 && tensor_end(J->f, ti) <= pos) {
            if (R->mode == HASH_TENSORS) sha256_final(&s, R->digest[J->slot0 + ti - J->t0]);
            else R->done[J->slot0 + ti - J->t0] = 1;
            sha256_init(&s, R->ni);
            ti++;
        }
        if (pos >= J->hi) break;
        if (R->mode != HASH_READ && R->fail.set && R->fail.job < j)
            break;                      /* an earlier job failed: its error is the answer */
        t = R->mode != HASH_FILES && ti < J->t1 ? safeload_tensor_at(J->f, ti) : NULL;
        {
            uint64_t want = J->hi - pos < cap ? J->hi - pos : cap;
            got = sl__os_pread(fd, buf, (size_t)want, pos);
        }
        /* a failed read: again a page at a time, so the bytes before the bad ones count
           (verify --data names every tensor read whole) and the offset is the bad page's */
        if (got < 0 && cap > 4096) { cap = 4096; continue; }
        if (got == 0 && R->mode == HASH_FILES) { pos = J->hi; break; }  /* the whole file */
        if (got <= 0) {
            if (got == 0)
                snprintf(msg, sizeof msg, "the file ends at byte %llu, %llu byte%s short of "
                         "the data it held when opened", (unsigned long long)pos,
                         (unsigned long long)(J->hi - pos), plural(J->hi - pos));
            else
                snprintf(msg, sizeof msg, "read at byte %llu failed: %s (error %lld)",
                         (unsigned long long)pos, sl__why64(-got), (long long)-got);
            hash_failed(R, j, got == 0 ? SAFELOAD_UNEXPECTED_EOF : SAFELOAD_IO_ERROR, pos, t,
                        msg);
            break;
        }
        if (R->mode == HASH_FILES) sha256_update(&s, buf, (size_t)got);
        else if (R->mode == HASH_TENSORS) {
            while (k < (size_t)got) {              /* split the chunk at tensor ends */
                uint64_t end;
                size_t n;
                while (ti < J->t1 && tensor_end(J->f, ti) <= pos + k) {
                    sha256_final(&s, R->digest[J->slot0 + ti - J->t0]);
                    sha256_init(&s, R->ni);
                    ti++;
                }
                if (ti == J->t1) break;
                end = tensor_end(J->f, ti);
                n = end - (pos + k) < (uint64_t)got - k ? (size_t)(end - (pos + k))
                                                        : (size_t)got - k;
                sha256_update(&s, buf + k, n);
                k += n;
            }
        }
        pos += (uint64_t)got;
    }
    if (R->mode == HASH_FILES && pos == J->hi && !(R->fail.set && R->fail.job <= j))
        sha256_final(&s, R->digest[j]);
    sl__os_close(fd);
}

static void hash_worker(void *ctx, int worker) {
    hash_run *R = (hash_run *)ctx;
    unsigned char *buf = (unsigned char *)malloc(R->chunk);
    (void)worker;
    for (;;) {
        size_t j;
        sl__mutex_lock(&R->mu);
        j = R->next++;
        sl__mutex_unlock(&R->mu);
        if (j >= R->n_jobs) break;
        if (!buf) { hash_failed(R, j, SAFELOAD_OUT_OF_MEMORY, SAFELOAD_NO_OFFSET, NULL,
                                "out of memory for the read buffer"); break; }
        hash_one(R, j, buf);
    }
    free(buf);
}

/* Runs the jobs on a pool of `threads` (0: the default). 0, or the failure in R->fail. */
static int hash_go(hash_run *R, int threads) {
    safeload_pool *pool = NULL;
    safeload_error e;
    if (sl__mutex_init(&R->mu) != 0) return -1;
    R->next = 0;
    R->fail.set = 0;
    if (!R->chunk) R->chunk = (size_t)4 << 20;
    R->ni = sha256_use_ni();
    if (safeload_pool_create(&pool, threads, &e) != SAFELOAD_OK) pool = NULL;   /* one thread */
    sl__pool_run(pool, hash_worker, R, pool ? safeload_pool_threads(pool) : 1);
    safeload_pool_destroy(pool);
    sl__mutex_destroy(&R->mu);
    return R->fail.set;
}

/* Tensor jobs over the model's shards: runs of consecutive tensors of about `target` bytes
   (a bigger tensor alone), so the threads share a single big file too. Slots: the shard's
   tensors in order, shard after shard. *slots receives the count. NULL: out of memory. */
static hash_job *tensor_jobs(const safeload_model *m, uint64_t target, size_t *n_jobs,
                             size_t *slots) {
    size_t k, cap = 16, n = 0, slot = 0;
    hash_job *jobs = (hash_job *)malloc(cap * sizeof *jobs);
    for (k = 0; jobs && k < safeload_model_shard_count(m); k++) {
        const safeload_file *f = safeload_model_shard(m, k);
        size_t i = 0, nt = safeload_tensor_count(f);
        while (i < nt) {
            hash_job *J;
            uint64_t bytes = 0;
            if (n == cap) {
                hash_job *nj = (hash_job *)realloc(jobs, (cap *= 2) * sizeof *jobs);
                if (!nj) { free(jobs); return NULL; }
                jobs = nj;
            }
            J = &jobs[n++];
            J->path = safeload_file_path(f);
            J->f = f;
            J->shard = k;
            J->t0 = i;
            J->slot0 = slot + i;
            J->lo = safeload_tensor_at(f, i)->file_offset;
            while (i < nt && (bytes == 0 || bytes + safeload_tensor_at(f, i)->nbytes <= target))
                bytes += safeload_tensor_at(f, i++)->nbytes;
            J->t1 = i;
            J->hi = J->lo + bytes;
        }
        slot += nt;
    }
    *n_jobs = n;
    *slots = slot;
    return jobs;
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(((const hash_job *)a)->path, ((const hash_job *)b)->path);
}
typedef struct named_digest { const char *name; size_t len; const char *hex; } named_digest;
static int cmp_named(const void *a, const void *b) {
    const named_digest *x = (const named_digest *)a, *y = (const named_digest *)b;
    int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
    return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

/* Does put_text write the n bytes at s other than as they are? */
static int escaped(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i, k;
    for (i = 0; i < n; i++) {
        if (u[i] < 0x20 || u[i] == 0x7F || u[i] == '\\') return 1;
        if (u[i] < 0x80) continue;
        if ((k = utf8_len(u + i, n - i)) == 0 || invisible(u + i, k)) return 1;
        i += k - 1;
    }
    return 0;
}

/* One line in sha256sum's format, "HEX  NAME". A name put_text escapes (a backslash, control
   bytes, bytes that are not UTF-8) has the line start with '\', as sha256sum marks its
   escaped names. */
static void hash_line(const char *hex, const char *name, size_t len) {
    printf("%s%s  ", escaped(name, len) ? "\\" : "", hex);
    put_text(stdout, name, len, 0);
    putchar('\n');
}

static int cmd_hash(int argc, char **argv) {
    const char *path = NULL;
    int tensors = 0, json = 0, threads = 0, i, ends = 0, rc = 0;
    safeload_model *m = NULL;
    safeload_error e;
    safeload_result r;
    hash_run R;
    named_digest *list = NULL;
    size_t k, n = 0, slots = 0;
    jw w;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!ends && strcmp(a, "--") == 0) { ends = 1; continue; }
        if (!ends && strcmp(a, "--tensors") == 0) tensors = 1;
        else if (!ends && strcmp(a, "--json") == 0) json = 1;
        else if (!ends && strcmp(a, "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i], &threads)) return threads_error(argv[i]);
        } else if (!ends && strcmp(a, "--threads") == 0) {
            return usage_error("a value is missing after", a);
        } else if (!ends && a[0] == '-') return usage_error("unknown option", a);
        else if (path) return usage_error("more than one PATH:", a);
        else path = a;
    }
    if (!path) return usage_error("hash needs a PATH", NULL);
    r = open_model(path, &m, &e);
    if (r != SAFELOAD_OK) return report_error(json, path, &e, NULL, is_io(r) ? 2 : 1);
    print_warnings(path, m);
    memset(&R, 0, sizeof R);
    if (!tensors) {            /* every shard, and the index */
        size_t nf = safeload_model_shard_count(m);
        R.mode = HASH_FILES;
        R.jobs = (hash_job *)calloc(nf + 1, sizeof *R.jobs);
        if (R.jobs) {
            for (k = 0; k < nf; k++) R.jobs[k].path = safeload_file_path(safeload_model_shard(m, k));
            if (safeload_model_has_index(m)) R.jobs[nf++].path = safeload_model_path(m);
            for (k = 0; k < nf; k++) R.jobs[k].hi = UINT64_MAX;
            qsort(R.jobs, nf, sizeof *R.jobs, cmp_path);
        }
        R.n_jobs = nf;
        slots = nf;
    } else {
        R.mode = HASH_TENSORS;
        R.jobs = tensor_jobs(m, (uint64_t)64 << 20, &R.n_jobs, &slots);
    }
    R.digest = (char (*)[65])calloc(slots + 1, 65);
    if (!R.jobs || !R.digest || hash_go(&R, threads) < 0) {
        sl__fail(&e, SAFELOAD_OUT_OF_MEMORY, path, SAFELOAD_NO_OFFSET, NULL, 0,
                 "out of memory");
        rc = report_error(json, path, &e, m, 2);
    } else if (R.fail.set) {
        const hash_job *J = &R.jobs[R.fail.job];
        const safeload_tensor *t = R.fail.tensor;
        sl__fail(&e, R.fail.code, J->path, R.fail.offset, t ? t->name : NULL,
                 t ? t->name_len : 0, "%s", R.fail.message);
        rc = report_error(json, path, &e, m, 2);
    } else if (!tensors) {
        if (json) { jw_doc(&w, stdout); jw_str(&w, "command", "hash"); jw_arr(&w, "files"); }
        for (k = 0; k < R.n_jobs; k++) {
            if (!json) { hash_line(R.digest[k], R.jobs[k].path, strlen(R.jobs[k].path)); continue; }
            jw_obj(&w, NULL);
            jw_str(&w, "file", R.jobs[k].path);
            jw_str(&w, "sha256", R.digest[k]);
            jw_end(&w, '}');
        }
        if (json) { jw_end(&w, ']'); jw_end(&w, '}'); }
    } else {
        size_t slot = 0;
        list = (named_digest *)malloc((safeload_model_tensor_count(m) + 1) * sizeof *list);
        for (k = 0; list && k < safeload_model_shard_count(m); k++) {
            const safeload_file *f = safeload_model_shard(m, k);
            size_t j;
            for (j = 0; j < safeload_tensor_count(f); j++, slot++) {
                const safeload_tensor *t = safeload_tensor_at(f, j);
                if (unlisted(m, k, t)) continue;
                list[n].name = t->name;
                list[n].len = t->name_len;
                list[n++].hex = R.digest[slot];
            }
        }
        if (!list) {
            sl__fail(&e, SAFELOAD_OUT_OF_MEMORY, path, SAFELOAD_NO_OFFSET, NULL, 0,
                     "out of memory");
            rc = report_error(json, path, &e, m, 2);
        } else {
            qsort(list, n, sizeof *list, cmp_named);
            if (json) { jw_doc(&w, stdout); jw_str(&w, "command", "hash"); jw_arr(&w, "tensors"); }
            for (k = 0; k < n; k++) {
                if (!json) { hash_line(list[k].hex, list[k].name, list[k].len); continue; }
                jw_obj(&w, NULL);
                jw_str_n(&w, "name", list[k].name, list[k].len);
                jw_str(&w, "sha256", list[k].hex);
                jw_end(&w, '}');
            }
            if (json) { jw_end(&w, ']'); jw_end(&w, '}'); }
        }
    }
    free(list);
    free(R.digest);
    free(R.jobs);
    safeload_model_close(m);
    return rc;
}

/* ---- verify ---- */

/* verify's errors: its own line on stdout ("error: PATH: ID: ... [file FILE]"); with --json
   the common layout on stderr and the JSON object on stdout. The JSON object is left open
   (extras follow) when keep_open. */
static int verify_fail(int json, const char *path, const safeload_error *e,
                       const safeload_model *m, int rc, jw *w, int keep_open) {
    if (!json) { print_verify_error(path, e); return rc; }
    print_error(path, e, m);
    {
        where at = locate(e, path, m, NULL);
        size_t len;
        const char *name = full_tensor(e, at.shard, &len);
        jw_doc(w, stdout);
        jw_obj(w, "error");
        jw_str(w, "id", safeload_result_id(e->code));
        jw_str(w, "message", e->message);
        jw_str(w, "file", at.file);
        if (e->tensor[0]) jw_str_n(w, "tensor", name, len);
        else jw_null(w, "tensor");
        if (e->offset != SAFELOAD_NO_OFFSET) jw_u64(w, "offset", e->offset);
        else jw_null(w, "offset");
        jw_end(w, '}');
    }
    if (!keep_open) jw_end(w, '}');
    return rc;
}

/* A reader over a file that may have been cut: it claims `size` bytes and reads 0 (the end)
   past the real end, so the header of a cut file parses and its tensors can be told apart. */
typedef struct cut_reader { sl__os_file fd; } cut_reader;
static int64_t cut_read(void *user, uint64_t off, void *dst, size_t n) {
    return sl__os_pread(((cut_reader *)user)->fd, dst, n, off);
}

/* A file whose tensors run past its end (INCOMPLETE_BUFFER, the file short): every tensor
   whose bytes are all there ("intact"), then the first that is not. 0 when the file could
   not be read that way (the error already printed says enough). */
static int name_damage(int json, jw *w, const char *file) {
    cut_reader cr;
    safeload_reader rd;
    safeload_allocator a;
    safeload_file *f = NULL;
    safeload_error e;
    uint64_t real = 0;
    size_t i;
    int shown = 0;
    memset(&a, 0, sizeof a);
    if (sl__os_open(file, 0, &a, &cr.fd, &real) != 0) return 0;
    memset(&rd, 0, sizeof rd);
    rd.read = cut_read;
    rd.user = &cr;
    rd.name = file;
    rd.size = (uint64_t)1 << 62;      /* past any tensor: the parser says where they end */
    if (safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_INCOMPLETE_BUFFER &&
        e.offset != SAFELOAD_NO_OFFSET && e.offset > real) {
        rd.size = e.offset;
        if (safeload_open_reader(&f, &rd, NULL, &e) != SAFELOAD_OK) f = NULL;
    } else if (f) {
        safeload_close(f);
        f = NULL;
    }
    if (f) {
        if (json) jw_arr(w, "intact");
        for (i = 0; i < safeload_tensor_count(f); i++) {
            const safeload_tensor *t = safeload_tensor_at(f, i);
            if (t->file_offset + t->nbytes > real) break;
            if (json) jw_str_n(w, NULL, t->name, t->name_len);
            else { printf("intact: "); put_text(stdout, t->name, t->name_len, 0); putchar('\n'); }
        }
        if (json) jw_end(w, ']');
        if (i < safeload_tensor_count(f)) {
            const safeload_tensor *t = safeload_tensor_at(f, i);
            if (json) {
                jw_obj(w, "damaged");
                jw_str_n(w, "name", t->name, t->name_len);
                jw_u64(w, "offset", t->file_offset);
                jw_u64(w, "end", t->file_offset + t->nbytes);
                jw_u64(w, "file_size", real);
                jw_end(w, '}');
            } else {
                printf("damaged: ");
                put_text(stdout, t->name, t->name_len, 0);
                printf(": bytes %llu to %llu, the file ends at byte %llu\n",
                       (unsigned long long)t->file_offset,
                       (unsigned long long)(t->file_offset + t->nbytes), (unsigned long long)real);
            }
        }
        shown = 1;
        safeload_close(f);         /* closes nothing of ours: no close callback */
    }
    sl__os_close(cr.fd);
    return shown;
}

/* the index's metadata.total_size as a number; 0 when it is absent or not a whole number */
static int total_size(const safeload_model *m, uint64_t *out, const char **text) {
    size_t k, j;
    for (k = 0; k < safeload_model_metadata_count(m); k++) {
        const safeload_kv *kv = safeload_model_metadata_at(m, k);
        uint64_t v = 0;
        if (kv->key_len != 10 || memcmp(kv->key, "total_size", 10) != 0) continue;
        *text = kv->value;
        if (!kv->value || !kv->value_len) return -1;
        for (j = 0; j < kv->value_len; j++) {
            unsigned dgt = (unsigned)(kv->value[j] - '0');
            if (dgt > 9 || v > (UINT64_MAX - dgt) / 10) return -1;
            v = v * 10 + dgt;
        }
        *out = v;
        return 1;
    }
    return 0;
}

static int cmd_verify(int argc, char **argv) {
    safeload_model *m = NULL;
    safeload_model_desc md;
    safeload_error e;
    safeload_result r;
    uint64_t bytes = 0, total = 0;
    size_t k;
    const char *path = NULL, *total_text = NULL;
    int i, ends = 0, json = 0, strict = 0, data = 0, threads = 0, rc = 0, ts;
    jw w;
    memset(&md, 0, sizeof md);
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!ends && strcmp(a, "--") == 0) { ends = 1; continue; }
        if (!ends && strcmp(a, "--json") == 0) json = 1;
        else if (!ends && strcmp(a, "--strict") == 0) strict = 1;
        else if (!ends && strcmp(a, "--data") == 0) data = 1;
        else if (!ends && strcmp(a, "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i], &threads)) return threads_error(argv[i]);
        } else if (!ends && strcmp(a, "--threads") == 0) {
            return usage_error("a value is missing after", a);
        } else if (!ends && a[0] == '-') return usage_error("unknown option", a);
        else if (path) return usage_error("more than one PATH:", a);
        else path = a;
    }
    if (!path) return usage_error("verify needs a PATH", NULL);
    md.flags = model_flags;
    if (strict) md.flags |= SAFELOAD_MODEL_STRICT;
    r = safeload_model_open(&m, path, &md, &e);
    if (r != SAFELOAD_OK) {
        /* a file cut inside its data: name what is still there */
        int cut = r == SAFELOAD_INCOMPLETE_BUFFER && strstr(e.message, " short") != NULL;
        const char *file = same_file(&e, path) ? path : e.file;
        if (file == e.file && (strlen(e.file) >= sizeof e.file - 4 || strchr(e.file, '?')))
            cut = 0;                    /* a name the library had to cut or mend */
        rc = verify_fail(json, path, &e, NULL, is_io(r) ? 2 : 1, &w, cut);
        if (cut) {
            name_damage(json, &w, file);
            if (json) jw_end(&w, '}');
        }
        return rc;
    }
    /* the model's tensors: an unlisted shard tensor (a warning) is not part of it */
    for (k = 0; k < safeload_model_tensor_count(m); k++)
        bytes += safeload_model_tensor_at(m, k, NULL)->nbytes;
    print_warnings(path, m);
    ts = safeload_model_has_index(m) ? total_size(m, &total, &total_text) : 0;
    if (ts != 0 && (ts < 0 || total != bytes)) {
        /* HF's total_size is the tensors' bytes; a wrong one is a warning (an error with
           --strict): the data may still be whole */
        if (ts < 0)
            sl__fail(&e, SAFELOAD_INVALID_INDEX, safeload_model_path(m), SAFELOAD_NO_OFFSET,
                     NULL, 0, "metadata.total_size is not a whole number of bytes");
        else
            sl__fail(&e, SAFELOAD_INVALID_INDEX, safeload_model_path(m), SAFELOAD_NO_OFFSET,
                     NULL, 0, "metadata.total_size is %llu but the tensors hold %llu bytes",
                     (unsigned long long)total, (unsigned long long)bytes);
        if (strict) {
            rc = verify_fail(json, path, &e, m, 1, &w, 0);
            safeload_model_close(m);
            return rc;
        }
        print_report("warning", path, &e, m, NULL);
    }
    if (data) {            /* every byte read, so a disk error or a file cut since is caught */
        hash_run R;
        size_t slots = 0;
        memset(&R, 0, sizeof R);
        R.mode = HASH_READ;
        R.jobs = tensor_jobs(m, (uint64_t)64 << 20, &R.n_jobs, &slots);
        R.done = (unsigned char *)calloc(slots + 1, 1);
        if (!R.jobs || !R.done || hash_go(&R, threads) < 0) {
            sl__fail(&e, SAFELOAD_OUT_OF_MEMORY, path, SAFELOAD_NO_OFFSET, NULL, 0,
                     "out of memory");
            rc = verify_fail(json, path, &e, m, 2, &w, 0);
        } else if (R.fail.set) {
            const hash_job *J = &R.jobs[R.fail.job];
            const safeload_tensor *t = R.fail.tensor;
            size_t slot = 0;
            sl__fail(&e, R.fail.code, J->path, R.fail.offset, t ? t->name : NULL,
                     t ? t->name_len : 0, "%s", R.fail.message);
            rc = verify_fail(json, path, &e, m, R.fail.code == SAFELOAD_IO_ERROR ? 2 : 1, &w,
                             1);
            if (json) jw_arr(&w, "intact");
            for (k = 0; k < safeload_model_shard_count(m); k++) {
                const safeload_file *f = safeload_model_shard(m, k);
                size_t j;
                for (j = 0; j < safeload_tensor_count(f); j++, slot++) {
                    const safeload_tensor *x = safeload_tensor_at(f, j);
                    if (!R.done[slot] || unlisted(m, k, x)) continue;
                    if (json) jw_str_n(&w, NULL, x->name, x->name_len);
                    else { printf("intact: "); put_text(stdout, x->name, x->name_len, 0); putchar('\n'); }
                }
            }
            if (json) {
                jw_end(&w, ']');
                if (t) {
                    jw_obj(&w, "damaged");
                    jw_str_n(&w, "name", t->name, t->name_len);
                    jw_u64(&w, "offset", t->file_offset);
                    jw_u64(&w, "end", t->file_offset + t->nbytes);
                    jw_end(&w, '}');
                }
                jw_end(&w, '}');
            } else if (t) {
                printf("damaged: ");
                put_text(stdout, t->name, t->name_len, 0);
                printf(": %s at byte %llu\n", R.fail.code == SAFELOAD_IO_ERROR ? "a read failed"
                       : "the file ends", (unsigned long long)R.fail.offset);
            }
        }
        free(R.jobs);
        free(R.done);
        if (rc) { safeload_model_close(m); return rc; }
    }
    k = safeload_model_tensor_count(m);
    if (json) {
        jw_doc(&w, stdout);
        jw_str(&w, "command", "verify");
        jw_str(&w, "path", path);
        jw_bool(&w, "ok", 1);
        jw_u64(&w, "tensors", k);
        jw_u64(&w, "bytes", bytes);
        jw_u64(&w, "files", safeload_model_shard_count(m));
        jw_bool(&w, "strict", strict);
        jw_bool(&w, "data_read", data);
        if (ts > 0) jw_u64(&w, "total_size", total);
        else if (ts < 0) jw_str(&w, "total_size", total_text);
        else jw_null(&w, "total_size");
        jw_warnings(&w, path, m);
        jw_end(&w, '}');
    } else {
        printf("ok: ");
        put_str(stdout, path);
        printf(": %llu tensor%s, %llu byte%s%s\n", (unsigned long long)k, plural(k),
               (unsigned long long)bytes, plural(bytes), data ? ", every byte read" : "");
    }
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
    int i, ends = 0, json = 0;         /* ends: after "--", every argument is a PATH */
    jw w;
    for (i = 0; i < argc; i++) {
        if (!ends && strcmp(argv[i], "--") == 0) { ends = 1; continue; }
        if (ends) {
            if (path) return usage_error("more than one PATH:", argv[i]);
            path = argv[i];
        } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) names = argv[++i];
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (i + 1 == argc && strcmp(argv[i], "--expect") == 0)
            return usage_error("a value is missing after", argv[i]);
        else return bad_arg(argv[i], path);
    }
    if (!path) return usage_error("keys needs a PATH", NULL);
    if (!names) {                       /* the names, one a line, in the model's order */
        safeload_result r = open_model(path, &m, &e);
        if (r != SAFELOAD_OK) return report_error(json, path, &e, NULL, 2);
        print_warnings(path, m);
        if (json) {
            jw_doc(&w, stdout);
            jw_str(&w, "command", "keys");
            jw_str(&w, "path", path);
            jw_u64(&w, "tensors", safeload_model_tensor_count(m));
            jw_arr(&w, "names");
        }
        for (k = 0; k < safeload_model_tensor_count(m); k++) {
            const safeload_tensor *t = safeload_model_tensor_at(m, k, NULL);
            if (json) jw_str_n(&w, NULL, t->name, t->name_len);
            else { put_text(stdout, t->name, t->name_len, 0); putchar('\n'); }
        }
        if (json) { jw_end(&w, ']'); jw_warnings(&w, path, m); jw_end(&w, '}'); }
        safeload_model_close(m);
        return 0;
    }
    fp = strcmp(names, "-") == 0 ? stdin : fopen(names, "rb");     /* "-": standard input */
    if (!fp) {
        int why = errno;                        /* before the prints below can change it */
        fprintf(stderr, "error: ");
        put_str(stderr, names);
        fprintf(stderr, ": IO_ERROR: cannot open: %s (error %d)\n", why == ENOENT ? "no such file" :
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
                    fprintf(stderr, ": OUT_OF_MEMORY: out of memory after %llu bytes of names\n",
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
            fprintf(stderr, ": IO_ERROR: cannot read the names\n");
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
    if (open_model(path, &m, &e) != SAFELOAD_OK ||
        safeload_model_check_keys(m, (const char *const *)list, n, &rep, &e) != SAFELOAD_OK) {
        if (m) print_warnings(path, m);
        (void)report_error(json, path, &e, m, 2);
        safeload_model_close(m);                /* NULL when the open failed */
        free(list);
        free(buf);
        return 2;                               /* no answer, as with diff: not "they differ" */
    }
    print_warnings(path, m);
    if (json) {
        jw_doc(&w, stdout);
        jw_str(&w, "command", "keys");
        jw_str(&w, "path", path);
        jw_u64(&w, "tensors", safeload_model_tensor_count(m));
        jw_u64(&w, "expected", n);
        jw_bool(&w, "same", !rep.missing_count && !rep.unexpected_count);
        jw_arr(&w, "missing");
        for (k = 0; k < rep.missing_count; k++) jw_str(&w, NULL, rep.missing[k]);
        jw_end(&w, ']');
        jw_arr(&w, "unexpected");
        for (k = 0; k < rep.unexpected_count; k++) jw_str(&w, NULL, rep.unexpected[k]);
        jw_end(&w, ']');
        jw_warnings(&w, path, m);
        jw_end(&w, '}');
    } else {
        for (k = 0; k < rep.missing_count; k++) {
            printf("missing: "); put_str(stdout, rep.missing[k]); putchar('\n');
        }
        for (k = 0; k < rep.unexpected_count; k++) {
            printf("unexpected: "); put_str(stdout, rep.unexpected[k]); putchar('\n');
        }
        printf("%llu expected, %llu in the checkpoint: %llu missing, %llu unexpected\n",
               (unsigned long long)n, (unsigned long long)safeload_model_tensor_count(m),
               (unsigned long long)rep.missing_count, (unsigned long long)rep.unexpected_count);
    }
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
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)     /* --confine: taken out */
        if (strcmp(argv[i], "--confine") == 0) {
            model_flags |= SAFELOAD_MODEL_CONFINE;
            memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof *argv);
            argc--, i--;
        }
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)     /* safeload CMD --help */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            size_t k;
            for (k = 0; k < sizeof command_help / sizeof *command_help; k++)
                if (strcmp(argv[1], command_help[k][0]) == 0) {
                    fputs(command_help[k][1], stdout);
                    return 0;
                }
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
    if (strcmp(argv[1], "hash") == 0) return cmd_hash(argc - 2, argv + 2);
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
