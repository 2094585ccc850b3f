/* mpi_load: N ranks load one checkpoint with safeload, over MPI.

     mpirun -np N build/safeload_mpi PATH [--threads T] [--dtype f32|f16|bf16] [--share] [--tp]
                                          [--checksum]

   Without --tp every rank loads every tensor (the checksum is `safeload load --checksum`'s);
   --share makes the ranks read the data once between them: each reads about 1/N of the bytes
   and MPI_Bcast hands them to the others (the library's desc.share hooks, below).
   --tp: a Megatron-style shard of a Llama-like checkpoint. 2-D `*_proj.weight`: q, k, v, gate
   and up split on dimension 0 (column-parallel), o and down on dimension 1 (row-parallel),
   rank r taking [len*r/N, len*(r+1)/N); the rest replicated (with --share, the replicated
   tensors are read once between the ranks; the shards need no sharing).
   Each rank prints one line, in rank order:
     rank R/N: T tensors, B bytes in S s (...) checksum: <16 hex> read: <bytes it read>
   where the checksum is FNV-1a 64 over its tensors' bytes in the checkpoint's order and
   `read` is stats.bytes_read (tensor bytes this rank read from storage, headers not counted).

   The hooks are two collectives every MPI has; for GPU ranks the same two map to NCCL:
   broadcast -> ncclBroadcast(buf, buf, n, ncclUint8, root, comm, stream) on device pointers
   (then cudaStreamSynchronize), max -> ncclAllReduce(ncclUint64, ncclMax) on a device word. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

static int mpi_bcast(void *user, void *buf, size_t n, int root, int device) {
    /* host memory here (a CUDA-aware MPI also takes device pointers); n <= 1 GiB */
    (void)device;
    return MPI_Bcast(buf, (int)n, MPI_BYTE, root, *(MPI_Comm *)user) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_max(void *user, uint64_t *value) {
    return MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_UINT64_T, MPI_MAX, *(MPI_Comm *)user) ==
                   MPI_SUCCESS ? 0 : -1;
}

static double now(void) { return MPI_Wtime(); }

/* the dimension a --tp rank splits a tensor on: 0, 1, or -1 (replicated) */
static int tp_dim(const safeload_tensor *t) {
    static const char *const col[] = {".q_proj.weight", ".k_proj.weight", ".v_proj.weight",
                                      ".gate_proj.weight", ".up_proj.weight"};
    static const char *const row[] = {".o_proj.weight", ".down_proj.weight"};
    size_t k;
    if (t->rank != 2) return -1;
    for (k = 0; k < sizeof col / sizeof col[0]; k++) {
        size_t n = strlen(col[k]);
        if (t->name_len >= n && memcmp(t->name + t->name_len - n, col[k], n) == 0) return 0;
    }
    for (k = 0; k < sizeof row / sizeof row[0]; k++) {
        size_t n = strlen(row[k]);
        if (t->name_len >= n && memcmp(t->name + t->name_len - n, row[k], n) == 0) return 1;
    }
    return -1;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int rank = 0, world = 1, threads = 0, share = 0, tp = 0, checksum = 0, i, r;
    safeload_dtype dtype = SAFELOAD_DTYPE_NONE;
    safeload_model *m = NULL;
    safeload_error e;
    safeload_result res = SAFELOAD_OK;
    safeload_request *local = NULL, *shared = NULL;
    safeload_arena *a1 = NULL, *a2 = NULL;
    safeload_load_stats s1, s2;
    size_t n = 0, nl = 0, ns = 0, k;
    uint64_t bytes = 0, h = 0xcbf29ce484222325ULL;
    double t0, t1;
    MPI_Comm comm;
    char line[1200];

    MPI_Init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);   /* a failed call fails the load */
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            dtype = strcmp(v, "f32") == 0 ? SAFELOAD_F32 : strcmp(v, "f16") == 0 ? SAFELOAD_F16
                  : strcmp(v, "bf16") == 0 ? SAFELOAD_BF16 : SAFELOAD_DTYPE_COUNT;
        } else if (strcmp(argv[i], "--share") == 0) share = 1;
        else if (strcmp(argv[i], "--tp") == 0) tp = 1;
        else if (strcmp(argv[i], "--checksum") == 0) checksum = 1;
        else if (!path && argv[i][0] != '-') path = argv[i];
        else { path = NULL; break; }
    }
    if (!path || dtype == SAFELOAD_DTYPE_COUNT) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N %s PATH [--threads T] [--dtype f32|f16|bf16] "
                            "[--share] [--tp] [--checksum]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }

    res = safeload_model_open(&m, path, NULL, &e);
    if (res == SAFELOAD_OK) {
        /* the requests in the checkpoint's order: this rank's shard of each split tensor
           (local), and the rest (shared between the ranks with --share) */
        n = safeload_model_tensor_count(m);
        local = (safeload_request *)calloc(n + 1, sizeof *local);
        shared = (safeload_request *)calloc(n + 1, sizeof *shared);
        if (!local || !shared) { fprintf(stderr, "out of memory\n"); MPI_Abort(comm, 1); }
        for (k = 0; k < n; k++) {
            size_t shard;
            const safeload_tensor *t = safeload_model_tensor_at(m, k, &shard);
            int dim = tp ? tp_dim(t) : -1;
            safeload_request *x = dim >= 0 ? &local[nl++] : &shared[ns++];
            x->name = t->name;
            x->tensor = t;
            x->shard = shard;
            if (dtype && dtype != t->dtype && safeload_can_convert(dtype, t->dtype))
                x->dtype = dtype;
            if (dim >= 0) {
                uint64_t len = t->shape[dim];
                x->slice_dim = (uint32_t)dim;
                x->slice_begin = len * (uint64_t)rank / (uint64_t)world;
                x->slice_end = len * (uint64_t)(rank + 1) / (uint64_t)world;
                if (x->slice_begin == x->slice_end) {           /* fewer rows than ranks */
                    x->slice_begin = 0;
                    x->slice_end = 0;
                    x->slice_dim = 0;
                    if (rank) nl--;                             /* rank 0 holds it all */
                }
            }
        }
    }
    MPI_Barrier(comm);
    t0 = now();
    memset(&s1, 0, sizeof s1);
    memset(&s2, 0, sizeof s2);
    if (res == SAFELOAD_OK) {
        safeload_load_desc d;
        memset(&d, 0, sizeof d);
        d.threads = threads;
        d.stats = &s1;
        res = safeload_load(m, local, nl, &d, &a1, &e);    /* this rank's shards: no sharing */
        if (res == SAFELOAD_OK) {
            d.stats = &s2;
            if (share) {
                d.share.rank = rank;
                d.share.world = world;
                d.share.user = &comm;
                d.share.broadcast = mpi_bcast;
                d.share.max = mpi_max;
            }
            res = safeload_load(m, shared, ns, &d, &a2, &e);
        }
    }
    t1 = now();
    if (res != SAFELOAD_OK) {
        snprintf(line, sizeof line, "rank %d/%d: error: %s: %s: %s%s%s\n", rank, world, path,
                 safeload_result_id(res), e.message, e.tensor[0] ? " tensor " : "", e.tensor);
    } else {
        /* the checksum in the checkpoint's order: walk it, taking each tensor from the list
           that holds it */
        size_t il = 0, is = 0;
        for (k = 0; k < n; k++) {
            const safeload_tensor *t = safeload_model_tensor_at(m, k, NULL);
            const safeload_request *x;
            if (il < nl && local[il].tensor == t) x = &local[il++];
            else if (is < ns && shared[is].tensor == t) x = &shared[is++];
            else continue;                          /* another rank's alone */
            bytes += x->nbytes;
            if (checksum) {
                const unsigned char *p = (const unsigned char *)x->data;
                uint64_t j;
                for (j = 0; j < x->nbytes; j++) { h ^= p[j]; h *= 0x100000001b3ULL; }
            }
        }
        if (checksum)
            snprintf(line, sizeof line, "rank %d/%d: %llu tensors, %llu bytes in %.3f s (%d "
                     "threads%s%s) checksum: %016llx read: %llu\n", rank, world,
                     (unsigned long long)(nl + ns), (unsigned long long)bytes, t1 - t0,
                     s2.threads ? s2.threads : s1.threads, share ? ", shared" : "",
                     tp ? ", tensor-parallel" : "", (unsigned long long)h,
                     (unsigned long long)(s1.bytes_read + s2.bytes_read));
        else
            snprintf(line, sizeof line, "rank %d/%d: %llu tensors, %llu bytes in %.3f s (%d "
                     "threads%s%s) read: %llu\n", rank, world, (unsigned long long)(nl + ns),
                     (unsigned long long)bytes, t1 - t0, s2.threads ? s2.threads : s1.threads,
                     share ? ", shared" : "", tp ? ", tensor-parallel" : "",
                     (unsigned long long)(s1.bytes_read + s2.bytes_read));
    }
    for (r = 0; r < world; r++) {                   /* one line per rank, in rank order */
        if (r == rank) { fputs(line, stdout); fflush(stdout); }
        MPI_Barrier(comm);
    }
    safeload_arena_free(a1);
    safeload_arena_free(a2);
    free(local);
    free(shared);
    safeload_model_close(m);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return res == SAFELOAD_OK ? 0 : 1;
}
