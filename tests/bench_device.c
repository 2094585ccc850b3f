/* bench_device: does the pipeline overlap reading with uploading?
   The fake device (tests/fakedev.h) completes copies on its own thread at a set bandwidth; in
   this benchmark it models a DMA engine (time passes, no CPU or memory bandwidth is taken:
   the copies themselves are checked in test_device). For a device
   slower than the reads and for one faster, measure in the same run:
     read stage    safeload into prefaulted host memory (what filling the staging buffers costs)
     upload stage  the fake device alone moving the same bytes from pinned memory
     total         safeload to the fake device
   and report total / max(read, upload): 1.0 is perfect overlap, 2.0 none (target <= 1.15).
   Environment: SAFELOAD_BENCH_DEVICE_MB (default 512), SAFELOAD_BENCH_REPS (default 5),
   SAFELOAD_BENCH_THREADS (default 1: the fake device's copy engine needs the other core). */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "benchutil.h"
#include "fakedev.h"
#include <sys/stat.h>

static int reps = 5, threads = 1;

/* every tensor, back to back in dst (host or device memory) */
static void requests(safeload_model *m, safeload_request *rq, size_t n, unsigned char *dst,
                     int device) {
    uint64_t off = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_model_tensor_at(m, i, NULL);
        memset(&rq[i], 0, sizeof rq[i]);
        rq[i].name = t->name;
        rq[i].device = device;
        rq[i].dst = dst + off;
        rq[i].dst_size = t->nbytes;
        off += t->nbytes;
    }
}

static double read_stage(safeload_model *m, safeload_request *rq, size_t n, unsigned char *dst) {
    safeload_load_desc d;
    safeload_error e;
    double t0;
    requests(m, rq, n, dst, 0);
    memset(&d, 0, sizeof d);
    d.threads = threads;
    t0 = bu_now();
    if (safeload_load(m, rq, n, &d, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    return bu_now() - t0;
}

/* the device alone: the same bytes from two pinned buffers, fenced like the pipeline */
static double upload_stage(fake_dev *dev, uint64_t total, size_t pinned, unsigned char *devmem) {
    void *buf[2] = {NULL, NULL};
    uint64_t done = 0;
    int b = 0, used[2] = {0, 0};
    double t0;
    fd_begin(dev, 1, 2);
    fd_pinned_alloc(dev, pinned, &buf[0]);
    fd_pinned_alloc(dev, pinned, &buf[1]);
    memset(buf[0], 1, pinned);
    memset(buf[1], 2, pinned);
    fd_reset_counters(dev, -1, 0);
    t0 = bu_now();
    while (done < total) {
        size_t n = (size_t)SL__MIN((uint64_t)pinned, total - done);
        if (used[b]) fd_wait(dev, 0, b);
        fd_upload(dev, 0, b, devmem + done, buf[b], n);
        used[b] = 1;
        done += n;
        b ^= 1;
    }
    fd_sync(dev);
    t0 = bu_now() - t0;
    fd_pinned_free(dev, buf[0]);
    fd_pinned_free(dev, buf[1]);
    return t0;
}

/* device memory is allocated (and faulted in, as a GPU's would be) before the timing */
static double pipeline(safeload_model *m, fake_dev *dev, safeload_request *rq, size_t n,
                       size_t pinned, unsigned char *devmem) {
    safeload_load_desc d;
    safeload_error e;
    double t0;
    requests(m, rq, n, devmem, 1);
    memset(&d, 0, sizeof d);
    d.threads = threads;
    d.hooks = fd_hooks(dev);
    d.pinned_size = pinned;
    fd_reset_counters(dev, -1, 0);
    t0 = bu_now();
    if (safeload_load(m, rq, n, &d, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    t0 = bu_now() - t0;
    if (dev->violations) { fprintf(stderr, "fake device: %ld violations\n", dev->violations); exit(1); }
    return t0;
}

int main(void) {
    uint64_t mb = getenv("SAFELOAD_BENCH_DEVICE_MB") ? strtoull(getenv("SAFELOAD_BENCH_DEVICE_MB"), NULL, 10) : 512;
    const char *dir = getenv("SAFELOAD_BENCH_DIR") ? getenv("SAFELOAD_BENCH_DIR") : "build/bench";
    char path[512];
    uint64_t total, rows = mb * SL__MIB / 8 / 2 / 4096, i;
    static uint64_t shape[2];
    safeload_save_tensor t[8];
    char names[8][32];
    unsigned char *data, *host;
    safeload_model *m;
    safeload_error e;
    safeload_request rq[8];
    size_t pinned = getenv("SAFELOAD_BENCH_PINNED_KB") ? (size_t)atoi(getenv("SAFELOAD_BENCH_PINNED_KB")) << 10 : (size_t)1 << 20;
    double rd_v[64], r, bw[2];
    int k, rep;
    reps = getenv("SAFELOAD_BENCH_REPS") ? atoi(getenv("SAFELOAD_BENCH_REPS")) : 5;
    threads = getenv("SAFELOAD_BENCH_THREADS") ? atoi(getenv("SAFELOAD_BENCH_THREADS")) : 1;
    if (reps < 1 || reps > 64) reps = 5;
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/device.safetensors", dir);
    shape[0] = rows;
    shape[1] = 4096;
    total = rows * 4096 * 2 * 8;
    data = (unsigned char *)malloc((size_t)total);
    for (i = 0; i < total; i++) data[i] = (unsigned char)(i * 2654435761u >> 13);
    for (i = 0; i < 8; i++) {
        snprintf(names[i], sizeof names[i], "layer.%u.weight", (unsigned)i);
        t[i].name = names[i];
        t[i].dtype = SAFELOAD_BF16;
        t[i].rank = 2;
        t[i].shape = shape;
        t[i].data = data + i * (total / 8);
        t[i].nbytes = total / 8;
    }
    if (safeload_save(path, t, 8, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); return 1; }
    free(data);
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK) return 1;
    host = (unsigned char *)malloc((size_t)total);
    memset(host, 3, (size_t)total);
    read_stage(m, rq, 8, host);                       /* warm the page cache */
    for (rep = 0; rep < reps; rep++) rd_v[rep] = read_stage(m, rq, 8, host);
    r = bu_median(rd_v, reps);
    printf("bench_device: %.0f MiB, %d loader thread(s), 2 pinned buffers of %zu KiB per thread\n",
           (double)total / SL__MIB, threads, pinned >> 10);
    printf("  read stage alone (into prefaulted host memory): %.3f s, %.2f GB/s\n", r,
           (double)total / 1e9 / r);
    bw[0] = 0.4 * (double)total / r;                  /* a device slower than the reads */
    bw[1] = 2.5 * (double)total / r;                  /* and one faster */
    for (k = 0; k < 2; k++) {
        fake_dev dev;
        double up_v[64], tot_v[64], up, tot, worst;
        void *devmem;
        fd_init(&dev, bw[k]);
        dev.fast = 1;      /* timing only, like a DMA engine: the test suite checks the bytes */
        fd_device_alloc(&dev, (size_t)total, &devmem);
        memset(devmem, 0, (size_t)total);
        for (rep = 0; rep < reps; rep++) {
            up_v[rep] = upload_stage(&dev, total, pinned, (unsigned char *)devmem);
            tot_v[rep] = pipeline(m, &dev, rq, 8, pinned, (unsigned char *)devmem);
        }
        up = bu_median(up_v, reps);
        tot = bu_median(tot_v, reps);
        worst = up > r ? up : r;
        printf("  device %s than the reads (throttled to %.2f GB/s):\n", k ? "faster" : "slower",
               bw[k] / 1e9);
        printf("    upload stage alone %.3f s, pipeline total %.3f s = %.2fx max(read, upload) "
               "(target <= 1.15; 2.0 = no overlap)\n", up, tot, tot / worst);
        fd_destroy(&dev);
    }
    free(host);
    safeload_model_close(m);
    return 0;
}
