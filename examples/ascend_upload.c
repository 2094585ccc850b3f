/* ascend_upload: load a checkpoint straight into Ascend NPU memory through AscendCL (CANN).

   NOT RUN ON AN NPU: the CANN toolkit cannot be installed where this was written. CI
   compile-checks this file against tests/stubs/acl/acl.h, a declarations-only stand-in written
   from Huawei's AscendCL reference. Build against the real toolkit with
       cc -O2 -I. -I$ASCEND_TOOLKIT_HOME/include examples/ascend_upload.c \
          -L$ASCEND_TOOLKIT_HOME/lib64 -lascendcl -lpthread -o ascend_upload

   What the CANN documentation asks for, and how the hooks meet it:
   - aclrtMemcpyAsync is only asynchronous from page-locked memory allocated by
     aclrtMallocHost (from malloc'd or mmap'd memory it blocks, and copying straight from an
     mmap has been seen to hang): every upload here comes from safeload's pinned staging
     buffers, which pinned_alloc takes from aclrtMallocHost.
   - Some products want 64-byte aligned copy addresses: desc.upload_align = 64 makes every
     upload start 64-aligned in its staging buffer (device arena offsets are 256-aligned).
   - Allocating page-locked memory is slow and too much of it hurts the system: safeload
     allocates its staging once per load, bounded by desc.pinned_limit.
   - A thread must have the context current: upload/wait set it in the worker threads.
   Fences are events: aclrtRecordEvent after each copy on the worker's stream,
   aclrtSynchronizeEvent before safeload reuses that buffer. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

#include <acl/acl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hooks' state: streams made in begin(), destroyed in end(), so one device load at a time
   (concurrent loads would each need their own, behind desc.hooks.user). */
static struct {
    int32_t device;
    aclrtContext ctx;
    int workers, buffers;
    aclrtStream *streams;           /* one per worker */
    aclrtEvent *events;             /* one per (worker, buffer) */
} g_acl;

static int acl_fail(aclError e, const char *what) {
    if (e == ACL_SUCCESS) return 0;
    fprintf(stderr, "ascend_upload: %s failed with %d\n", what, (int)e);
    return 1;
}

int safeload_ascend_begin(void *user, int workers, int buffers) {
    int i;
    (void)user;
    if (acl_fail(aclrtSetCurrentContext(g_acl.ctx), "aclrtSetCurrentContext")) return 1;
    g_acl.workers = workers;
    g_acl.buffers = buffers;
    g_acl.streams = (aclrtStream *)calloc((size_t)workers, sizeof(aclrtStream));
    g_acl.events = (aclrtEvent *)calloc((size_t)(workers * buffers), sizeof(aclrtEvent));
    if (!g_acl.streams || !g_acl.events) return 1;
    for (i = 0; i < workers; i++)
        if (acl_fail(aclrtCreateStream(&g_acl.streams[i]), "aclrtCreateStream")) return 1;
    for (i = 0; i < workers * buffers; i++)
        if (acl_fail(aclrtCreateEvent(&g_acl.events[i]), "aclrtCreateEvent")) return 1;
    return 0;
}

void safeload_ascend_end(void *user) {
    int i;
    (void)user;
    for (i = 0; g_acl.events && i < g_acl.workers * g_acl.buffers; i++)
        if (g_acl.events[i]) aclrtDestroyEvent(g_acl.events[i]);
    for (i = 0; g_acl.streams && i < g_acl.workers; i++)
        if (g_acl.streams[i]) aclrtDestroyStream(g_acl.streams[i]);
    free(g_acl.events);
    free(g_acl.streams);
    g_acl.events = NULL;
    g_acl.streams = NULL;
}

int safeload_ascend_pinned_alloc(void *user, size_t size, void **out) {
    (void)user;
    return acl_fail(aclrtMallocHost(out, size), "aclrtMallocHost");
}

void safeload_ascend_pinned_free(void *user, void *ptr) {
    (void)user;
    aclrtFreeHost(ptr);
}

int safeload_ascend_device_alloc(void *user, size_t size, void **out) {
    (void)user;
    return acl_fail(aclrtMalloc(out, size, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
}

void safeload_ascend_device_free(void *user, void *ptr) {
    (void)user;
    aclrtFree(ptr);
}

int safeload_ascend_upload(void *user, int worker, int buffer, void *device_dst,
                           const void *pinned_src, size_t n) {
    (void)user;
    if (acl_fail(aclrtSetCurrentContext(g_acl.ctx), "aclrtSetCurrentContext")) return 1;
    if (acl_fail(aclrtMemcpyAsync(device_dst, n, pinned_src, n, ACL_MEMCPY_HOST_TO_DEVICE,
                                  g_acl.streams[worker]), "aclrtMemcpyAsync")) return 1;
    return acl_fail(aclrtRecordEvent(g_acl.events[worker * g_acl.buffers + buffer],
                                     g_acl.streams[worker]), "aclrtRecordEvent");
}

int safeload_ascend_wait(void *user, int worker, int buffer) {
    (void)user;
    if (acl_fail(aclrtSetCurrentContext(g_acl.ctx), "aclrtSetCurrentContext")) return 1;
    return acl_fail(aclrtSynchronizeEvent(g_acl.events[worker * g_acl.buffers + buffer]),
                    "aclrtSynchronizeEvent");
}

int safeload_ascend_sync(void *user) {
    int i;
    (void)user;
    if (acl_fail(aclrtSetCurrentContext(g_acl.ctx), "aclrtSetCurrentContext")) return 1;
    for (i = 0; i < g_acl.workers; i++)
        if (acl_fail(aclrtSynchronizeStream(g_acl.streams[i]), "aclrtSynchronizeStream"))
            return 1;
    return 0;
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
    safeload_model *m;
    safeload_request *rq;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_arena *arena = NULL;
    safeload_error e;
    size_t i, n, hbm_free = 0, hbm_total = 0;
    uint64_t need = 0;                          /* device bytes, from safeload_nbytes */
    int rc = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: ascend_upload MODEL [device-id]\n");
        return 2;
    }
    g_acl.device = argc > 2 ? atoi(argv[2]) : 0;
    if (acl_fail(aclInit(NULL), "aclInit") ||
        acl_fail(aclrtSetDevice(g_acl.device), "aclrtSetDevice") ||
        acl_fail(aclrtCreateContext(&g_acl.ctx, g_acl.device), "aclrtCreateContext"))
        return 2;
    if (safeload_model_open(&m, argv[1], NULL, &e) != SAFELOAD_OK) {
        put_error(&e);
        rc = 1;
        goto shut;
    }
    n = safeload_model_tensor_count(m);
    rq = (safeload_request *)calloc(n + 1, sizeof *rq);
    if (!rq) {
        fprintf(stderr, "ascend_upload: out of memory\n");
        rc = 2;
        goto done;
    }
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_model_tensor_at(m, i, NULL);
        uint64_t bytes;
        rq[i].name = t->name;
        rq[i].device = 1;
        /* the NPU's share: each tensor as stored (F4 and F6 too), checked against its free HBM
           before a byte is read */
        if (safeload_nbytes(t->dtype, t->shape, t->rank, &bytes) != SAFELOAD_OK ||
            bytes > UINT64_MAX - need) {
            fprintf(stderr, "ascend_upload: the model's size overflows\n");
            rc = 1;
            goto done;
        }
        need += bytes;
    }
    if (acl_fail(aclrtGetMemInfo(ACL_HBM_MEM, &hbm_free, &hbm_total), "aclrtGetMemInfo") ||
        need > hbm_free) {
        fprintf(stderr, "ascend_upload: the tensors need %llu bytes, the NPU has %llu free\n",
                (unsigned long long)need, (unsigned long long)hbm_free);
        rc = 1;
        goto done;
    }
    memset(&d, 0, sizeof d);
    d.device = SAFELOAD_DEVICE_ASCEND;          /* the safeload_ascend_* above */
    d.upload_align = 64;
    d.stats = &st;
    if (safeload_load(m, rq, n, &d, &arena, &e) != SAFELOAD_OK) {
        put_error(&e);
        rc = 1;
    } else {
        printf("uploaded %llu tensors, %llu bytes (%d threads, %.0f MiB pinned)\n",
               (unsigned long long)n, (unsigned long long)st.bytes_written, st.threads,
               (double)st.pinned_bytes / 1048576.0);
    }
    safeload_arena_free(arena);                 /* aclrtFree through device_free */
done:
    free(rq);
    safeload_model_close(m);
shut:
    aclrtDestroyContext(g_acl.ctx);
    aclrtResetDevice(g_acl.device);
    aclFinalize();
    return rc;
}
