/* bench_parse: parse + validate + index a 100,000-tensor header, median of several runs, one
   thread: once with MoE-style names (model.layers.{i}.mlp.experts.{j}.gate_proj.weight, about
   11 MB of header) and once with short names (layers.{i}.e{j}.w{k}, about 7 MB).
   Usage: bench_parse [tensors] [runs] */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "benchutil.h"

static int bench(size_t n, int runs, int short_names);

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 100000;
    int runs = argc > 2 ? atoi(argv[2]) : 15;
    if (runs < 1 || runs > 1000) runs = 15;
    return bench(n, runs, 0) || bench(n, runs, 1);
}

static int bench(size_t n, int runs, int short_names) {
    int i;
    safeload_save_tensor *ts = (safeload_save_tensor *)calloc(n, sizeof *ts);
    char *names = (char *)malloc(n * 64);
    static const uint64_t shape[2] = {4, 2};
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    static unsigned char zeros[16];
    void *file;
    size_t size, k;
    double *ms = (double *)malloc(sizeof(double) * (size_t)runs), med;
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
    for (i = 0; i < runs; i++) {
        double t0 = bu_now();
        if (safeload_open_memory(&f, file, size, NULL, &e) != SAFELOAD_OK) {
            fprintf(stderr, "open: %s\n", e.message);
            return 1;
        }
        ms[i] = (bu_now() - t0) * 1e3;
        if (safeload_tensor_count(f) != n) { fprintf(stderr, "count mismatch\n"); return 1; }
        safeload_close(f);
    }
    med = bu_median(ms, runs);
    {
        const unsigned char *b = (const unsigned char *)file;
        uint64_t hn = 0;
        for (k = 0; k < 8; k++) hn |= (uint64_t)b[k] << (8 * k);
        printf("parse %zu-tensor header (%.2f MB, %s names): median %.2f ms over %d runs, %.0f MB/s, "
               "%.1f ns/tensor (memory source)\n", n, (double)hn / 1e6, short_names ? "short" : "MoE", med, runs,
               (double)hn / 1e6 / (med / 1e3), med * 1e6 / (double)n);
    }
    for (i = 0; i < runs; i++) {
        double t0 = bu_now();
        if (safeload_open(&f, path, NULL, &e) != SAFELOAD_OK) {
            fprintf(stderr, "open: %s\n", e.message);
            return 1;
        }
        ms[i] = (bu_now() - t0) * 1e3;
        safeload_close(f);
    }
    printf("parse %zu-tensor header, file source (open + pread + parse): median %.2f ms\n", n,
           bu_median(ms, runs));
    safeload_free(file, NULL);
    free(ts); free(names); free(ms);
    if (!getenv("KEEP")) remove(path);
    return 0;
}
