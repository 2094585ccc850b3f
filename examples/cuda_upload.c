/* cuda_upload: load a checkpoint straight into GPU memory.

   The CUDA side is six small functions with the names safeload.h looks for
   (safeload_cuda_*). Defining them is all the setup there is: the header declares them as weak
   references, so linking this file in is enough and the load desc only says
   SAFELOAD_DEVICE_CUDA. safeload does the rest: every worker reads (and casts) into its own
   pinned buffers while the previous buffer is being copied, one CUDA stream per worker, one
   event per buffer as its fence.

   Build (the Makefile's `make examples` does this when nvcc is installed):
       nvcc -O2 -I. -x cu examples/cuda_upload.c -o build/cuda_upload -lcudart
   or with a C compiler:
       cc -O2 -I. -I$CUDA_HOME/include examples/cuda_upload.c -L$CUDA_HOME/lib64 -lcudart -lpthread
   Run:
       build/cuda_upload MODEL [--threads N] [--dtype f32|f16|bf16] [--verify] [--pinned MiB]
                         [--bench]
   MODEL is a .safetensors file, an index .json or a directory. --verify copies every tensor
   back and compares it with a host load. --pinned sets the size of each pinned staging buffer
   (two per thread; default 2 MiB). --bench times three loads against the machine's limits. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the hooks: streams and events live here, created in begin(), destroyed in end() ----
   One device load at a time: begin() and end() bracket a load, and loads running at the same
   time would each call them. For concurrent device loads, keep this state per load behind
   desc.hooks.user (the hooks receive it as `user`). */

static struct {
    int device, workers, buffers;
    cudaStream_t *streams;          /* one per worker */
    cudaEvent_t *events;            /* one per (worker, buffer): the buffer's fence */
} g_cuda;

static int cuda_fail(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "cuda_upload: %s: %s\n", what, cudaGetErrorString(e));
    return (int)e;
}

int safeload_cuda_begin(void *user, int workers, int buffers) {
    int i;
    (void)user;
    g_cuda.workers = workers;
    g_cuda.buffers = buffers;
    g_cuda.streams = (cudaStream_t *)calloc((size_t)workers, sizeof(cudaStream_t));
    g_cuda.events = (cudaEvent_t *)calloc((size_t)(workers * buffers), sizeof(cudaEvent_t));
    if (!g_cuda.streams || !g_cuda.events) return 1;
    for (i = 0; i < workers; i++)
        if (cuda_fail(cudaStreamCreateWithFlags(&g_cuda.streams[i], cudaStreamNonBlocking),
                      "cudaStreamCreate")) return 1;
    for (i = 0; i < workers * buffers; i++)
        if (cuda_fail(cudaEventCreateWithFlags(&g_cuda.events[i], cudaEventDisableTiming),
                      "cudaEventCreate")) return 1;
    return 0;
}

void safeload_cuda_end(void *user) {
    int i;
    (void)user;
    for (i = 0; g_cuda.events && i < g_cuda.workers * g_cuda.buffers; i++)
        if (g_cuda.events[i]) cudaEventDestroy(g_cuda.events[i]);
    for (i = 0; g_cuda.streams && i < g_cuda.workers; i++)
        if (g_cuda.streams[i]) cudaStreamDestroy(g_cuda.streams[i]);
    free(g_cuda.events);
    free(g_cuda.streams);
    g_cuda.events = NULL;
    g_cuda.streams = NULL;
}

int safeload_cuda_pinned_alloc(void *user, size_t size, void **out) {
    (void)user;
    return cuda_fail(cudaMallocHost(out, size), "cudaMallocHost");
}

void safeload_cuda_pinned_free(void *user, void *ptr) {
    (void)user;
    cudaFreeHost(ptr);
}

int safeload_cuda_device_alloc(void *user, size_t size, void **out) {
    (void)user;
    return cuda_fail(cudaMalloc(out, size), "cudaMalloc");
}

void safeload_cuda_device_free(void *user, void *ptr) {
    (void)user;
    cudaFree(ptr);
}

/* Called from worker threads: the device must be current in each of them. */
int safeload_cuda_upload(void *user, int worker, int buffer, void *device_dst,
                         const void *pinned_src, size_t n) {
    (void)user;
    if (g_cuda.device && cuda_fail(cudaSetDevice(g_cuda.device), "cudaSetDevice")) return 1;
    if (cuda_fail(cudaMemcpyAsync(device_dst, pinned_src, n, cudaMemcpyHostToDevice,
                                  g_cuda.streams[worker]), "cudaMemcpyAsync")) return 1;
    /* the event marks the latest copy from this buffer; the stream orders earlier ones */
    return cuda_fail(cudaEventRecord(g_cuda.events[worker * g_cuda.buffers + buffer],
                                     g_cuda.streams[worker]), "cudaEventRecord");
}

int safeload_cuda_wait(void *user, int worker, int buffer) {
    (void)user;
    return cuda_fail(cudaEventSynchronize(g_cuda.events[worker * g_cuda.buffers + buffer]),
                     "cudaEventSynchronize");
}

int safeload_cuda_sync(void *user) {
    int i;
    (void)user;
    for (i = 0; i < g_cuda.workers; i++)
        if (cuda_fail(cudaStreamSynchronize(g_cuda.streams[i]), "cudaStreamSynchronize"))
            return 1;
    return 0;
}

/* ---- the program ---- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --bench: the machine's own limits, measured in the same run so the load's rate has something
   to stand against. The PCIe link: pinned host memory to the GPU in 64 MiB copies (its best
   case). The file layer: one read() stream (fread, unbuffered) over the model's files, which
   the loads before it left in the page cache. */
static double bench_h2d(void) {
    const size_t sz = (size_t)64 << 20;
    void *host = NULL, *dev = NULL;
    double t0, t;
    int k;
    if (cuda_fail(cudaMallocHost(&host, sz), "cudaMallocHost") ||
        cuda_fail(cudaMalloc(&dev, sz), "cudaMalloc")) {
        if (host) cudaFreeHost(host);
        return 0;
    }
    memset(host, 1, sz);
    cudaMemcpy(dev, host, sz, cudaMemcpyHostToDevice);          /* warm up */
    t0 = now_seconds();
    for (k = 0; k < 32; k++) cudaMemcpy(dev, host, sz, cudaMemcpyHostToDevice);
    t = now_seconds() - t0;
    cudaFree(dev);
    cudaFreeHost(host);
    return 32.0 * (double)sz / t;
}

static double bench_read(const safeload_model *m) {
    const size_t sz = (size_t)16 << 20;
    char *buf = (char *)malloc(sz);
    uint64_t total = 0;
    double t0 = now_seconds();
    size_t i;
    for (i = 0; buf && i < safeload_model_shard_count(m); i++) {
        FILE *fp = fopen(safeload_file_path(safeload_model_shard(m, i)), "rb");
        size_t got;
        if (!fp) continue;
        setvbuf(fp, NULL, _IONBF, 0);
        while ((got = fread(buf, 1, sz, fp)) > 0) total += got;
        fclose(fp);
    }
    free(buf);
    return (double)total / (now_seconds() - t0);
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ULL; }
    return h;
}

/* safeload_error's strings are safe to print as they are (the library replaces control and
   invalid bytes); the offset is SAFELOAD_NO_OFFSET when no byte is to blame. */
static void put_error(const safeload_error *e) {
    fprintf(stderr, "error: %s: %s: %s", e->file[0] ? e->file : "-", safeload_result_id(e->code),
            e->message);
    if (e->tensor[0]) fprintf(stderr, " [%s]", e->tensor);
    if (e->offset != SAFELOAD_NO_OFFSET)
        fprintf(stderr, " (byte %llu)", (unsigned long long)e->offset);
    fputc('\n', stderr);
}

int main(int argc, char **argv) {
    const char *path = NULL;
    safeload_dtype dtype = SAFELOAD_DTYPE_NONE;
    safeload_model *m;
    safeload_request *rq;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_arena *arena = NULL;
    safeload_error e;
    size_t i, n;
    int verify = 0, bench = 0, rc = 0, rep;
    double t0, t1, best = 0;
    uint64_t need = 0;                                /* device bytes, from safeload_nbytes */
    size_t gpu_free = 0, gpu_total = 0;
    memset(&d, 0, sizeof d);
    for (i = 1; i < (size_t)argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < (size_t)argc) d.threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < (size_t)argc) {
            const char *v = argv[++i];
            dtype = strcmp(v, "f32") == 0 ? SAFELOAD_F32 : strcmp(v, "f16") == 0 ? SAFELOAD_F16
                  : strcmp(v, "bf16") == 0 ? SAFELOAD_BF16 : SAFELOAD_DTYPE_NONE;
        } else if (strcmp(argv[i], "--verify") == 0) verify = 1;
        else if (strcmp(argv[i], "--bench") == 0) bench = 1;
        else if (strcmp(argv[i], "--pinned") == 0 && i + 1 < (size_t)argc)   /* MiB per buffer */
            d.pinned_size = (size_t)atoi(argv[++i]) << 20;
        else path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "usage: cuda_upload MODEL [--threads N] [--dtype f32|f16|bf16] [--verify] "
                "[--pinned MiB] [--bench]\n");
        return 2;
    }
    if (cuda_fail(cudaSetDevice(0), "cudaSetDevice")) return 2;
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK) {
        put_error(&e);
        return 1;
    }
    n = safeload_model_tensor_count(m);
    rq = (safeload_request *)calloc(n + 1, sizeof *rq);
    if (!rq) {
        fprintf(stderr, "cuda_upload: out of memory\n");
        safeload_model_close(m);
        return 2;
    }
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_model_tensor_at(m, i, NULL);
        uint64_t bytes;
        rq[i].name = t->name;
        rq[i].device = 1;                             /* device memory through the hooks */
        if (dtype && safeload_can_convert(dtype, t->dtype)) rq[i].dtype = dtype;
        /* what the GPU will hold: each tensor in the dtype it is loaded as */
        if (safeload_nbytes(rq[i].dtype ? rq[i].dtype : t->dtype, t->shape, t->rank, &bytes) !=
                SAFELOAD_OK || bytes > UINT64_MAX - need) {
            fprintf(stderr, "cuda_upload: the model's size overflows\n");
            free(rq);
            safeload_model_close(m);
            return 1;
        }
        need += bytes;
    }
    if (cuda_fail(cudaMemGetInfo(&gpu_free, &gpu_total), "cudaMemGetInfo") || need > gpu_free) {
        /* before a single byte is read, not halfway through the load */
        fprintf(stderr, "cuda_upload: the tensors need %llu bytes, the GPU has %llu free\n",
                (unsigned long long)need, (unsigned long long)gpu_free);
        free(rq);
        safeload_model_close(m);
        return 1;
    }
    d.device = SAFELOAD_DEVICE_CUDA;                  /* the safeload_cuda_* above */
    d.stats = &st;
    cudaDeviceSynchronize();                          /* context creation out of the timing */
    /* --bench: a first load fills the page cache, then three timed ones, the best counts */
    for (rep = 0; rep < (bench ? 4 : 1); rep++) {
        if (arena) { safeload_arena_free(arena); arena = NULL; }
        t0 = now_seconds();
        if (safeload_load(m, rq, n, &d, &arena, &e) != SAFELOAD_OK) {
            put_error(&e);                            /* nothing stays on the GPU */
            free(rq);
            safeload_model_close(m);
            return 1;
        }
        t1 = now_seconds();
        printf("uploaded %llu tensors, %llu bytes read, %llu bytes on the GPU in %.3f s: "
               "%.2f GB/s (%d threads, %.0f MiB pinned)%s\n", (unsigned long long)n,
               (unsigned long long)st.bytes_read, (unsigned long long)st.bytes_written, t1 - t0,
               (double)st.bytes_read / 1e9 / (t1 - t0), st.threads,
               (double)st.pinned_bytes / 1048576.0, bench && rep == 0 ? " [warm-up]" : "");
        if (rep > 0 && (double)st.bytes_read / (t1 - t0) > best)
            best = (double)st.bytes_read / (t1 - t0);
        if (st.bytes_written != need) {
            fprintf(stderr, "cuda_upload: %llu bytes on the GPU, %llu planned\n",
                    (unsigned long long)st.bytes_written, (unsigned long long)need);
            rc = 1;
        }
    }
    if (bench) {
        /* the GPU's side is what bounds a load: bytes_written is what crossed the link */
        double h2d = bench_h2d(), rd = bench_read(m);
        double out_rate = st.bytes_read ? best * (double)st.bytes_written /
                                                (double)st.bytes_read : 0.0;
        printf("bench: load %.2f GB/s read, %.2f GB/s to the GPU (best of 3); pinned "
               "host-to-device copy %.2f GB/s; read() from the page cache %.2f GB/s\n",
               best / 1e9, out_rate / 1e9, h2d / 1e9, rd / 1e9);
        printf("bench: the load runs at %.2fx the host-to-device copy and %.2fx read()\n",
               h2d > 0 ? out_rate / h2d : 0.0, rd > 0 ? best / rd : 0.0);
    }
    if (verify) {
        /* the same tensors through a host load, compared with a copy back from the GPU */
        safeload_loaded *host;
        uint64_t hd = 0xcbf29ce484222325ULL, hh = 0xcbf29ce484222325ULL;
        if (safeload_load_all(m, dtype, NULL, &host, &e) != SAFELOAD_OK) {
            put_error(&e);
            rc = 1;
        } else {
            for (i = 0; i < n && rc == 0; i++) {
                void *back = malloc((size_t)rq[i].nbytes + 1);
                if (!back) { fprintf(stderr, "cuda_upload: out of memory\n"); rc = 2; break; }
                if (cuda_fail(cudaMemcpy(back, rq[i].data, (size_t)rq[i].nbytes,
                                         cudaMemcpyDeviceToHost), "cudaMemcpy"))
                    rc = 2;
                hd = fnv1a(back, (size_t)rq[i].nbytes, hd);
                hh = fnv1a(host->tensors[i].data, (size_t)host->tensors[i].nbytes, hh);
                free(back);
            }
            if (rc == 0) {
                printf("verify: device %016llx host %016llx: %s\n", (unsigned long long)hd,
                       (unsigned long long)hh, hd == hh ? "match" : "MISMATCH");
                rc = hd != hh;
            }
            safeload_loaded_free(host);
        }
    }
    safeload_arena_free(arena);                       /* cudaFree through device_free */
    free(rq);
    safeload_model_close(m);
    return rc;
}
