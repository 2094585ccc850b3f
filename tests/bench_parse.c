/* bench_parse: parse + validate + index a 100,000-tensor header, median of several runs, on one
   thread and in parts on the default threads (interleaved): once with MoE-style names
   (model.layers.{i}.mlp.experts.{j}.gate_proj.weight, about 11 MB of header) and once with
   short names (layers.{i}.e{j}.w{k}, about 8 MB). The MoE tensors are also opened as a model:
   as the one file, and as 8 shards with an index.
   Usage: bench_parse [tensors] [runs] */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "benchutil.h"

static int bench(size_t n, int runs, int short_names);
static int bench_sharded(const safeload_save_tensor *ts, size_t n, int runs, const char *single);

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 100000;
    int runs = argc > 2 ? atoi(argv[2]) : 15;
    if (runs < 1 || runs > 1000) runs = 15;
    return bench(n, runs, 0) || bench(n, runs, 1);
}

static int bench(size_t n, int runs, int short_names) {
    int i, t;
    safeload_save_tensor *ts = (safeload_save_tensor *)calloc(n, sizeof *ts);
    char *names = (char *)malloc(n * 64);
    static const uint64_t shape[2] = {4, 2};
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    static unsigned char zeros[16];
    void *file;
    size_t size, k;
    double *ms = (double *)malloc(sizeof(double) * (size_t)runs), med;
    double *ms1 = (double *)malloc(sizeof(double) * (size_t)runs);
    safeload_open_desc od;
    safeload_error e;
    safeload_file *f;
    const char *path = short_names ? "build/bench_parse_short.safetensors"
                                   : "build/bench_parse_moe.safetensors";
    FILE *out;

    for (k = 0; k < n; k++) {
        char *nm = names + k * 64;
        if (short_names)
            snprintf(nm, 64, "layers.%u.e%u.w%u", (unsigned)(k / 768), (unsigned)(k / 3 % 256),
                     (unsigned)(k % 3));
        else
            snprintf(nm, 64, "model.layers.%u.mlp.experts.%u.%s.weight", (unsigned)(k / 768),
                     (unsigned)(k / 3 % 256), proj[k % 3]);
        ts[k].name = nm;
        ts[k].dtype = SAFELOAD_BF16;
        ts[k].rank = 2;
        ts[k].shape = shape;
        ts[k].data = zeros;
        ts[k].nbytes = 16;
    }
    if (safeload_serialize(&file, &size, ts, n, NULL, &e) != SAFELOAD_OK) {
        fprintf(stderr, "serialize: %s\n", e.message);
        return 1;
    }
    out = fopen(path, "wb");
    if (!out || fwrite(file, 1, size, out) != size) { fprintf(stderr, "write failed\n"); return 1; }
    fclose(out);

    /* the very first open in a fresh process pays for faulting in fresh memory */
    {
        double t0 = bu_now();
        if (safeload_open_memory(&f, file, size, NULL, &e) != SAFELOAD_OK) return 1;
        printf("first open in this process (fresh memory, page faults included): %.2f ms\n",
               (bu_now() - t0) * 1e3);
        safeload_close(f);
    }
    /* one thread (desc.threads = 1) and the default (the header in parts on up to
       safeload_default_threads()), interleaved */
    for (t = 0; t < 2; t++) {
        double one;
        for (i = 0; i < 2 * runs; i++) {
            double t0;
            int th = (i + t) % 2;                   /* this round's: 0 one thread, 1 default */
            memset(&od, 0, sizeof od);
            od.threads = th ? 0 : 1;
            t0 = bu_now();
            if ((t ? safeload_open(&f, path, &od, &e)
                   : safeload_open_memory(&f, file, size, &od, &e)) != SAFELOAD_OK) {
                fprintf(stderr, "open: %s\n", e.message);
                return 1;
            }
            (th ? ms : ms1)[i / 2] = (bu_now() - t0) * 1e3;
            if (safeload_tensor_count(f) != n) { fprintf(stderr, "count mismatch\n"); return 1; }
            safeload_close(f);
        }
        one = bu_median(ms1, runs);
        med = bu_median(ms, runs);
        {
            const unsigned char *b = (const unsigned char *)file;
            uint64_t hn = 0;
            for (k = 0; k < 8; k++) hn |= (uint64_t)b[k] << (8 * k);
            printf("parse %zu-tensor header (%.2f MB, %s names, %s source), medians over %d runs:\n"
                   "  1 thread %.2f ms (%.0f MB/s, %.1f ns/tensor); default threads (%d, in parts) "
                   "%.2f ms = %.2fx\n", n, (double)hn / 1e6, short_names ? "short" : "MoE",
                   t ? "file" : "memory", runs, one, (double)hn / 1e6 / (one / 1e3),
                   one * 1e6 / (double)n, safeload_default_threads(), med, one / med);
        }
    }
    if (!short_names && bench_sharded(ts, n, runs, path)) return 1;
    safeload_free(file, NULL);
    free(ts); free(names); free(ms); free(ms1);
    if (!getenv("KEEP")) remove(path);
    return 0;
}

/* The same tensors as SHARDS shards and a model.safetensors.index.json, opened as a model
   (index parsed, shards opened and parsed in parallel, every weight_map entry checked against
   its shard), against the one file opened as a model. */
#define SHARDS 8
static int bench_sharded(const safeload_save_tensor *ts, size_t n, int runs, const char *single) {
    static const char *dir = "build/bench_parse_sharded";
    char path[256], *idx;
    size_t k, per = (n + SHARDS - 1) / SHARDS, len = 0, cap = n * 96 + 256;
    double *ms = (double *)malloc(sizeof(double) * (size_t)runs);
    int s, i, t;
    safeload_error e;
    FILE *out;
    idx = (char *)malloc(cap);
    if (!ms || !idx) return 1;
    bu_mkdir(dir);
    len += (size_t)snprintf(idx + len, cap - len, "{\n  \"metadata\": {\"total_size\": %llu},\n"
                            "  \"weight_map\": {", (unsigned long long)(n * 16));
    for (s = 0; s < SHARDS; s++) {
        size_t lo = (size_t)s * per, hi = lo + per < n ? lo + per : n, size;
        void *file;
        snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, s + 1, SHARDS);
        if (lo >= hi) break;
        if (safeload_serialize(&file, &size, ts + lo, hi - lo, NULL, &e) != SAFELOAD_OK) {
            fprintf(stderr, "serialize: %s\n", e.message);
            return 1;
        }
        out = fopen(path, "wb");
        if (!out || fwrite(file, 1, size, out) != size || fclose(out) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        safeload_free(file, NULL);
        for (k = lo; k < hi; k++)
            len += (size_t)snprintf(idx + len, cap - len, "%s\n    \"%s\": "
                                    "\"model-%05d-of-%05d.safetensors\"", k ? "," : "",
                                    ts[k].name, s + 1, SHARDS);
    }
    len += (size_t)snprintf(idx + len, cap - len, "\n  }\n}\n");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    out = fopen(path, "wb");
    if (!out || fwrite(idx, 1, len, out) != len || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    for (t = 0; t < 3; t++) {                 /* the one file; the shards, 1 thread; default */
        safeload_model_desc d;
        safeload_model *m;
        memset(&d, 0, sizeof d);
        d.threads = t == 1 ? 1 : 0;
        for (i = 0; i < runs; i++) {
            double t0 = bu_now();
            if (safeload_model_open(&m, t ? dir : single, &d, &e) != SAFELOAD_OK) {
                fprintf(stderr, "model open: %s\n", e.message);
                return 1;
            }
            ms[i] = (bu_now() - t0) * 1e3;
            if (safeload_model_tensor_count(m) != n) { fprintf(stderr, "count\n"); return 1; }
            safeload_model_close(m);
        }
        if (t == 0)
            printf("model open, one file: median %.2f ms\n", bu_median(ms, runs));
        else
            printf("model open, %d shards + index (%.2f MB), %s: median %.2f ms\n", SHARDS,
                   (double)len / 1e6, t == 1 ? "1 thread" : "default threads",
                   bu_median(ms, runs));
    }
    if (!getenv("KEEP")) {
        for (s = 0; s < SHARDS; s++) {
            snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, s + 1, SHARDS);
            remove(path);
        }
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        remove(path);
        bu_rmdir(dir);
    }
    free(idx);
    free(ms);
    return 0;
}
