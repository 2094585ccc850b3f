/* The named CUDA hooks, defined by "the user" in their own file and backed by the fake device.
   Linked directly into test_weak they are found through the weak references; put into a static
   archive that nothing else pulls in, they are not (test_weak_archive, docs/device.md). */
#define _GNU_SOURCE      /* clock_gettime, nanosleep for the fake device */
#include "safeload.h"
#include <stdio.h>
#include "fakedev.h"

static fake_dev g_dev;
static int g_init;

int safeload_cuda_begin(void *user, int workers, int buffers) {
    (void)user;
    if (!g_init) { fd_init(&g_dev, 0); g_init = 1; }
    return fd_begin(&g_dev, workers, buffers);
}
int safeload_cuda_pinned_alloc(void *user, size_t size, void **out) { (void)user; return fd_pinned_alloc(&g_dev, size, out); }
void safeload_cuda_pinned_free(void *user, void *p) { (void)user; fd_pinned_free(&g_dev, p); }
int safeload_cuda_device_alloc(void *user, size_t size, void **out) {
    (void)user;
    if (!g_init) { fd_init(&g_dev, 0); g_init = 1; }
    return fd_device_alloc(&g_dev, size, out);
}
void safeload_cuda_device_free(void *user, void *p) { (void)user; fd_device_free(&g_dev, p); }
int safeload_cuda_upload(void *user, int worker, int buffer, void *dst, const void *src, size_t n) {
    (void)user;
    return fd_upload(&g_dev, worker, buffer, dst, src, n);
}
int safeload_cuda_wait(void *user, int worker, int buffer) { (void)user; return fd_wait(&g_dev, worker, buffer); }
int safeload_cuda_sync(void *user) { (void)user; return fd_sync(&g_dev); }
void safeload_cuda_end(void *user) {
    (void)user;
    fd_end(&g_dev);
    if (g_dev.violations) { fprintf(stderr, "fake device: %ld violations\n", g_dev.violations); abort(); }
}
