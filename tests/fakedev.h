/* A fake accelerator for the device-upload tests and benchmark.
   - "device memory" and "pinned memory" are host allocations the fake keeps track of;
   - upload() only queues a copy: a separate engine thread performs it later, throttled to a set
     bandwidth, like a DMA engine working through a stream;
   - at upload time the fake checksums the staging bytes and re-checks them when the copy
     really happens: if safeload touched a staging buffer before its fence, that shows;
   - after each copy the staging bytes are poisoned, so stale data can never pass as good;
   - pinned_free() of a buffer with a copy still queued, an upload outside device memory, or a
     wait/sync error are counted as violations;
   - any hook can be made to fail at its k-th call. */
#ifndef SAFELOAD_FAKEDEV_H
#define SAFELOAD_FAKEDEV_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#if defined(__GNUC__) || defined(__clang__)
#define FD_UNUSED __attribute__((unused))
#else
#define FD_UNUSED
#endif

enum { FD_PINNED_ALLOC, FD_DEVICE_ALLOC, FD_BEGIN, FD_UPLOAD, FD_WAIT, FD_SYNC, FD_NHOOKS };

typedef struct fd_copy {
    unsigned char *dst;
    unsigned char *src;
    size_t n;
    int worker, buffer;
    uint64_t sum;
} fd_copy;

typedef struct fd_region { unsigned char *p; size_t n; int pinned; } fd_region;

typedef struct fake_dev {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t engine;
    int quit;
    fd_copy *q;
    size_t qhead, qtail, qcap;         /* FIFO of queued copies */
    fd_region *regions;
    size_t nregions, capregions;
    int pending[64][16];               /* queued copies per (worker, buffer) */
    double bandwidth;                  /* bytes per second; 0 = as fast as memcpy */
    int fast;                          /* benchmark mode: a DMA engine that takes time but no
                                          CPU or memory bandwidth (no copy, no checksums) */
    double t0;
    uint64_t copied;                   /* bytes the engine copied since t0 */
    /* results */
    long violations, uploads, waits, syncs, begins, ends;
    long pinned_live, device_live;
    long zero_allocs;                  /* allocations asked for 0 bytes (answered as cudaMalloc
                                          does: success and NULL) */
    uint64_t upload_bytes;
    int begin_workers, begin_buffers;
    /* failure injection */
    long calls[FD_NHOOKS];
    int fail_hook;                     /* -1 = none */
    long fail_at;
} fake_dev;

FD_UNUSED static double fd_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t fd_sum(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t i;
    for (i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return h;
}

FD_UNUSED static int fd_fail(fake_dev *d, int hook) {
    long k;
    pthread_mutex_lock(&d->mu);
    k = d->calls[hook]++;
    pthread_mutex_unlock(&d->mu);
    return d->fail_hook == hook && k == d->fail_at;
}

FD_UNUSED static void *fd_engine(void *arg) {
    fake_dev *d = (fake_dev *)arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        fd_copy c;
        while (!d->quit && d->qhead == d->qtail) pthread_cond_wait(&d->cv, &d->mu);
        if (d->qhead == d->qtail && d->quit) break;
        c = d->q[d->qhead % d->qcap];
        pthread_mutex_unlock(&d->mu);
        if (d->bandwidth > 0) {        /* throttle: never ahead of bandwidth since t0 */
            double due = d->t0 + (double)(d->copied + c.n) / d->bandwidth, now = fd_now();
            if (due > now) {
                struct timespec ts;
                double s = due - now;
                ts.tv_sec = (time_t)s;
                ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
                nanosleep(&ts, NULL);
            }
        }
        if (!d->fast && fd_sum(c.src, c.n) != c.sum) {
            pthread_mutex_lock(&d->mu);
            d->violations++;           /* the staging bytes changed before the copy ran */
            pthread_mutex_unlock(&d->mu);
        }
        if (!d->fast) {
            memcpy(c.dst, c.src, c.n);
            memset(c.src, 0xDB, c.n);  /* poison: stale staging bytes never pass */
        }
        pthread_mutex_lock(&d->mu);
        d->copied += c.n;
        d->qhead++;
        d->pending[c.worker][c.buffer]--;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

FD_UNUSED static void fd_init(fake_dev *d, double bandwidth) {
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->qcap = 1 << 16;
    d->q = (fd_copy *)calloc(d->qcap, sizeof *d->q);
    d->bandwidth = bandwidth;
    d->fail_hook = -1;
    d->t0 = fd_now();
    pthread_create(&d->engine, NULL, fd_engine, d);
}

FD_UNUSED static void fd_destroy(fake_dev *d) {
    size_t i;
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->engine, NULL);
    for (i = 0; i < d->nregions; i++) free(d->regions[i].p);
    free(d->regions);
    free(d->q);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
}

FD_UNUSED static void fd_reset_counters(fake_dev *d, int fail_hook, long fail_at) {
    pthread_mutex_lock(&d->mu);
    memset(d->calls, 0, sizeof d->calls);
    d->fail_hook = fail_hook;
    d->fail_at = fail_at;
    d->violations = d->uploads = d->waits = d->syncs = d->begins = d->ends = 0;
    d->upload_bytes = 0;
    d->t0 = fd_now();
    d->copied = 0;
    pthread_mutex_unlock(&d->mu);
}

FD_UNUSED static void *fd_region_add(fake_dev *d, size_t n, int pinned) {
    void *v = NULL;
    unsigned char *p;
    /* page-aligned, as cudaMallocHost and aclrtMallocHost return (upload_align relies on it) */
    if (posix_memalign(&v, 4096, n ? n : 1) != 0) v = NULL;
    p = (unsigned char *)v;
    pthread_mutex_lock(&d->mu);
    if (d->nregions == d->capregions) {
        d->capregions = d->capregions ? d->capregions * 2 : 64;
        d->regions = (fd_region *)realloc(d->regions, d->capregions * sizeof *d->regions);
    }
    d->regions[d->nregions].p = p;
    d->regions[d->nregions].n = n;
    d->regions[d->nregions].pinned = pinned;
    d->nregions++;
    if (pinned) d->pinned_live++; else d->device_live++;
    pthread_mutex_unlock(&d->mu);
    return p;
}

FD_UNUSED static int fd_region_remove(fake_dev *d, void *p, int pinned) {
    size_t i;
    int found = 0;
    pthread_mutex_lock(&d->mu);
    for (i = 0; i < d->nregions; i++)
        if (d->regions[i].p == p && d->regions[i].pinned == pinned) {
            size_t k;
            /* a copy still queued from this buffer? */
            for (k = d->qhead; k < d->qtail; k++) {
                const fd_copy *c = &d->q[k % d->qcap];
                if (c->src >= d->regions[i].p && c->src < d->regions[i].p + d->regions[i].n)
                    d->violations++;
            }
            d->regions[i] = d->regions[--d->nregions];
            if (pinned) d->pinned_live--; else d->device_live--;
            found = 1;
            break;
        }
    if (!found) d->violations++;
    pthread_mutex_unlock(&d->mu);
    if (found) free(p);
    return found;
}

/* Is [p, p+n) inside one device region? */
FD_UNUSED static int fd_in_device(fake_dev *d, const unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < d->nregions; i++)
        if (!d->regions[i].pinned && p >= d->regions[i].p && p + n <= d->regions[i].p + d->regions[i].n)
            return 1;
    return 0;
}

/* ---- the hooks ---- */
FD_UNUSED static int fd_pinned_alloc(void *user, size_t size, void **out) {
    fake_dev *d = (fake_dev *)user;
    if (fd_fail(d, FD_PINNED_ALLOC)) return 2;
    if (size == 0) { d->zero_allocs++; *out = NULL; return 0; }
    *out = fd_region_add(d, size, 1);
    return 0;
}
FD_UNUSED static void fd_pinned_free(void *user, void *p) { fd_region_remove((fake_dev *)user, p, 1); }
FD_UNUSED static int fd_device_alloc(void *user, size_t size, void **out) {
    fake_dev *d = (fake_dev *)user;
    if (fd_fail(d, FD_DEVICE_ALLOC)) return 2;
    if (size == 0) { d->zero_allocs++; *out = NULL; return 0; }
    *out = fd_region_add(d, size, 0);
    return 0;
}
FD_UNUSED static void fd_device_free(void *user, void *p) { fd_region_remove((fake_dev *)user, p, 0); }
FD_UNUSED static int fd_begin(void *user, int workers, int buffers) {
    fake_dev *d = (fake_dev *)user;
    if (fd_fail(d, FD_BEGIN)) return 3;
    pthread_mutex_lock(&d->mu);
    d->begins++;
    d->begin_workers = workers;
    d->begin_buffers = buffers;
    pthread_mutex_unlock(&d->mu);
    return workers <= 64 && buffers <= 16 ? 0 : 4;
}
FD_UNUSED static int fd_upload(void *user, int worker, int buffer, void *dst, const void *src, size_t n) {
    fake_dev *d = (fake_dev *)user;
    fd_copy c;
    if (fd_fail(d, FD_UPLOAD)) return 5;
    c.dst = (unsigned char *)dst;
    c.src = (unsigned char *)(uintptr_t)src;
    c.n = n;
    c.worker = worker;
    c.buffer = buffer;
    c.sum = d->fast ? 0 : fd_sum(c.src, n);
    pthread_mutex_lock(&d->mu);
    if (!fd_in_device(d, c.dst, n) || worker < 0 || worker >= d->begin_workers || buffer < 0 ||
        buffer >= d->begin_buffers) d->violations++;
    while (d->qtail - d->qhead == d->qcap) pthread_cond_wait(&d->cv, &d->mu);
    d->q[d->qtail++ % d->qcap] = c;
    d->pending[worker & 63][buffer & 15]++;
    d->uploads++;
    d->upload_bytes += n;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return 0;
}
FD_UNUSED static int fd_wait(void *user, int worker, int buffer) {
    fake_dev *d = (fake_dev *)user;
    if (fd_fail(d, FD_WAIT)) return 6;
    pthread_mutex_lock(&d->mu);
    d->waits++;
    while (d->pending[worker & 63][buffer & 15] > 0) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    return 0;
}
FD_UNUSED static int fd_sync(void *user) {
    fake_dev *d = (fake_dev *)user;
    int fail = fd_fail(d, FD_SYNC);
    pthread_mutex_lock(&d->mu);
    d->syncs++;
    while (d->qhead != d->qtail) pthread_cond_wait(&d->cv, &d->mu);   /* drains even when failing */
    pthread_mutex_unlock(&d->mu);
    return fail ? 7 : 0;
}
FD_UNUSED static void fd_end(void *user) {
    fake_dev *d = (fake_dev *)user;
    pthread_mutex_lock(&d->mu);
    d->ends++;
    pthread_mutex_unlock(&d->mu);
}

FD_UNUSED static safeload_device_hooks fd_hooks(fake_dev *d) {
    safeload_device_hooks h;
    memset(&h, 0, sizeof h);
    h.user = d;
    h.pinned_alloc = fd_pinned_alloc;
    h.pinned_free = fd_pinned_free;
    h.device_alloc = fd_device_alloc;
    h.device_free = fd_device_free;
    h.begin = fd_begin;
    h.upload = fd_upload;
    h.wait = fd_wait;
    h.sync = fd_sync;
    h.end = fd_end;
    return h;
}

#endif
