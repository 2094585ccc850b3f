/* test_share: shared loads (desc.share) with threads as ranks over an in-process fake
   collective, and tensor-parallel ranks that each load their own slices. Every rank must end
   with exactly the bytes a plain load gives, the storage read once between the ranks, few
   collective calls, and any failure on one rank failing every rank, naming it, with no rank
   left waiting. */
#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
/* a read that fails on cue, on one rank's threads only */
static ssize_t ts_pread(int fd, void *buf, size_t n, off_t off);
static ssize_t ts_preadv(int fd, const struct iovec *iov, int cnt, off_t off);
#define SAFELOAD_PREAD ts_pread
#define SAFELOAD_PREADV ts_preadv
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "fakedev.h"

static __thread int ts_rank = -1;           /* the rank a thread loads for (workers: -1) */
static __thread int ts_fail_me;             /* this load thread's reads fail */
static long ts_fail_at = -1, ts_reads;
static int ts_fail_rank = -1;

static int ts_read_fails(void) {
    return ts_fail_me && __atomic_fetch_add(&ts_reads, 1, __ATOMIC_SEQ_CST) == ts_fail_at;
}
static ssize_t ts_pread(int fd, void *buf, size_t n, off_t off) {
    if (ts_read_fails()) { errno = EIO; return -1; }
    return pread(fd, buf, n, off);
}
static ssize_t ts_preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    if (ts_read_fails()) { errno = EIO; return -1; }
    return preadv(fd, iov, cnt, off);
}

/* ---- the fake collective: every call waits for all ranks, checks they agree, then runs ---- */
enum { FC_BCAST, FC_MAX, FC_MAXR = 8 };
typedef struct fc {
    int world;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    uint64_t gen;
    int kind[FC_MAXR], root[FC_MAXR], dev[FC_MAXR];
    void *buf[FC_MAXR];
    size_t n[FC_MAXR];
    uint64_t *val[FC_MAXR];
    long calls[FC_MAXR], bcasts, dev_bcasts, maxes, mismatches, hangs;
    uint64_t bcast_bytes;
    int fail_rank, fail_kind;               /* this rank's fail_call-th call of fail_kind */
    long fail_call;                         /* reports failure after taking part (-1: none) */
    long kind_calls[FC_MAXR][2];
} fc;
typedef struct fc_rank { fc *w; int rank; } fc_rank;

static void fc_init(fc *w, int world) {
    memset(w, 0, sizeof *w);
    w->world = world;
    w->fail_rank = -1;
    w->fail_call = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static int fc_call(fc_rank *r, int kind, void *buf, size_t n, int root, int dev, uint64_t *val) {
    fc *w = r->w;
    int me = r->rank, fail, i;
    uint64_t gen0;
    pthread_mutex_lock(&w->mu);
    w->calls[me]++;
    fail = me == w->fail_rank && kind == w->fail_kind && w->kind_calls[me][kind] == w->fail_call;
    w->kind_calls[me][kind]++;
    w->kind[me] = kind; w->buf[me] = buf; w->n[me] = n; w->root[me] = root; w->dev[me] = dev;
    w->val[me] = val;
    gen0 = w->gen;
    if (++w->arrived == w->world) {
        for (i = 1; i < w->world; i++)
            if (w->kind[i] != w->kind[0] || (kind == FC_BCAST && (w->n[i] != w->n[0] ||
                                              w->root[i] != w->root[0] || w->dev[i] != w->dev[0])))
                w->mismatches++;
        if (kind == FC_BCAST && !w->mismatches) {
            for (i = 0; i < w->world; i++)
                if (i != root) memcpy(w->buf[i], w->buf[root], n);
            w->bcasts++;
            w->dev_bcasts += dev != 0;
            w->bcast_bytes += n;
        } else if (kind == FC_MAX) {
            uint64_t m = 0;
            for (i = 0; i < w->world; i++) if (*w->val[i] > m) m = *w->val[i];
            for (i = 0; i < w->world; i++) *w->val[i] = m;
            w->maxes++;
        }
        w->arrived = 0;
        w->gen++;
        pthread_cond_broadcast(&w->cv);
    } else {
        while (w->gen == gen0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 20;
            if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT && w->gen == gen0) {
                w->hangs++;                 /* a rank gave up and left this one waiting */
                w->arrived--;
                pthread_mutex_unlock(&w->mu);
                return -1;
            }
        }
    }
    pthread_mutex_unlock(&w->mu);
    return fail ? -1 : 0;
}
static int fc_bcast(void *user, void *buf, size_t n, int root, int device) {
    return fc_call((fc_rank *)user, FC_BCAST, buf, n, root, device, NULL);
}
static int fc_max(void *user, uint64_t *v) {
    return fc_call((fc_rank *)user, FC_MAX, NULL, 0, 0, 0, v);
}

/* ---- the checkpoint: two shards and an index; big, small, 2-D, F32 and BF16 ---- */
static char ts_dir[64], ts_index[128];
typedef struct ts_t { char name[64]; safeload_dtype dt; uint64_t shape[2]; unsigned char *data; uint64_t n; } ts_t;
static ts_t ts_t_[1200];
static size_t ts_n;
static fake_dev ts_dev[FC_MAXR + 1];         /* one per rank, and the plain load's */

static void ts_make(void) {
    size_t i, half;
    char p[160];
    FILE *fp;
    snprintf(ts_dir, sizeof ts_dir, "/tmp/safeload-test-share-XXXXXX");
    if (!mkdtemp(ts_dir)) abort();
    for (i = 0; i < 1200; i++) {
        ts_t *t = &ts_t_[i];
        uint64_t j;
        int big = i % 300 == 5;
        snprintf(t->name, sizeof t->name, "model.layers.%u.mlp.experts.%u.w", (unsigned)(i / 100),
                 (unsigned)(i % 100));
        t->dt = i % 4 == 0 ? SAFELOAD_F32 : SAFELOAD_BF16;
        t->shape[0] = big ? 700 : 1 + i % 9;
        t->shape[1] = big ? 1500 : 32 + i % 13;
        t->n = t->shape[0] * t->shape[1] * safeload_dtype_size(t->dt);
        t->data = (unsigned char *)malloc(t->n);
        for (j = 0; j < t->n; j++) t->data[j] = (unsigned char)tu_rand64();
        if (t->dt == SAFELOAD_BF16)
            for (j = 1; j < t->n; j += 2) t->data[j] = (unsigned char)((t->data[j] & 0x83) | 0x38);
        if (t->dt == SAFELOAD_F32)
            for (j = 3; j < t->n; j += 4) t->data[j] = (unsigned char)((t->data[j] & 0x81) | 0x3C);
    }
    ts_n = 1200;
    half = 500;
    for (i = 0; i < 2; i++) {
        safeload_save_tensor st[1200];
        safeload_error e;
        size_t a = i ? half : 0, b = i ? ts_n : half, k;
        for (k = a; k < b; k++) {
            st[k - a].name = ts_t_[k].name;
            st[k - a].dtype = ts_t_[k].dt;
            st[k - a].rank = 2;
            st[k - a].shape = ts_t_[k].shape;
            st[k - a].data = ts_t_[k].data;
            st[k - a].nbytes = ts_t_[k].n;
        }
        snprintf(p, sizeof p, "%s/model-%05u-of-00002.safetensors", ts_dir, (unsigned)i + 1);
        if (safeload_save(p, st, b - a, NULL, &e) != SAFELOAD_OK) abort();
    }
    snprintf(ts_index, sizeof ts_index, "%s/model.safetensors.index.json", ts_dir);
    fp = fopen(ts_index, "w");
    if (!fp) abort();
    fprintf(fp, "{\"metadata\": {}, \"weight_map\": {");
    for (i = 0; i < ts_n; i++)
        fprintf(fp, "%s\"%s\": \"model-%05u-of-00002.safetensors\"", i ? ", " : "", ts_t_[i].name,
                i < half ? 1u : 2u);
    fprintf(fp, "}}\n");
    fclose(fp);
}

/* The requests every rank makes: all tensors; cfg 1 adds casts, slices and caller memory;
   cfg 2 casts and slices nearly every one; cfg 3 puts every 4th in device memory. */
static void ts_requests(safeload_request *rq, unsigned char **own, int cfg) {
    size_t i;
    memset(rq, 0, ts_n * sizeof *rq);
    for (i = 0; i < ts_n; i++) {
        const ts_t *t = &ts_t_[(i * 7) % ts_n];              /* not in file order */
        rq[i].name = t->name;
        own[i] = NULL;
        if (cfg == 0) continue;
        if (cfg == 3) {                 /* every 4th into (fake) device memory */
            rq[i].device = i % 4 == 0;
            if (i % 3 == 1 && t->dt == SAFELOAD_BF16) rq[i].dtype = SAFELOAD_F32;
            continue;
        }
        if (cfg == 2) {                 /* nearly all cast: the parts' cuts land in casts */
            if (t->dt == SAFELOAD_BF16) rq[i].dtype = SAFELOAD_F32;
            rq[i].slice_dim = 1;
            rq[i].slice_end = t->shape[1] - 1;
            continue;
        }
        if (i % 3 == 1 && t->dt == SAFELOAD_BF16) rq[i].dtype = SAFELOAD_F32;
        if (i % 5 == 2) {
            rq[i].slice_dim = 1;
            rq[i].slice_begin = 3;
            rq[i].slice_end = 3 + i % 20;
        }
        if (i % 7 == 3) {
            uint64_t out = t->n * 2;                          /* room for any of the above */
            own[i] = (unsigned char *)malloc(out);
            rq[i].dst = own[i];
            rq[i].dst_size = out;
        }
    }
}

typedef struct ts_job {
    fc *w;
    int rank, cfg, threads, null_model;
    safeload_allocator alloc;
    /* results */
    safeload_result r;
    safeload_error e;
    safeload_load_stats st;
    int bad;                                /* bytes that differ from the plain load's */
    int arena_left;                         /* failure: an arena or data still reported */
} ts_job;

static safeload_request ts_ref[1200];       /* a plain load of the same requests */
static unsigned char *ts_ref_own[1200];
static safeload_arena *ts_ref_arena;
static uint64_t ts_ref_read;

static void *ts_rank_main(void *arg) {
    ts_job *j = (ts_job *)arg;
    fc_rank me;
    safeload_model *m = NULL;
    safeload_request *rq = (safeload_request *)calloc(ts_n, sizeof *rq);
    unsigned char **own = (unsigned char **)calloc(ts_n, sizeof *own);
    safeload_load_desc d;
    safeload_arena *arena = NULL;
    size_t i;
    ts_rank = j->rank;
    me.w = j->w;
    me.rank = j->rank;
    if (!j->null_model && safeload_model_open(&m, ts_index, NULL, &j->e) != SAFELOAD_OK) abort();
    ts_fail_me = j->rank == ts_fail_rank;       /* the load's reads, not the open's */
    ts_requests(rq, own, j->cfg);
    memset(&d, 0, sizeof d);
    d.threads = j->threads;
    d.stats = &j->st;
    d.chunk_size = 65536;
    d.allocator = j->alloc;
    if (j->cfg == 3) d.hooks = fd_hooks(&ts_dev[j->rank]);
    d.share.rank = j->rank;
    d.share.world = j->w->world;
    d.share.user = &me;
    d.share.broadcast = fc_bcast;
    d.share.max = fc_max;
    j->r = safeload_load(m, rq, ts_n, &d, &arena, &j->e);
    if (j->r == SAFELOAD_OK) {
        for (i = 0; i < ts_n; i++)
            if (rq[i].nbytes != ts_ref[i].nbytes ||
                memcmp(rq[i].data, ts_ref[i].data, (size_t)rq[i].nbytes) != 0) j->bad++;
    } else {
        j->arena_left = arena != NULL;
        for (i = 0; i < ts_n; i++) j->arena_left += rq[i].data != NULL;
    }
    safeload_arena_free(arena);
    for (i = 0; i < ts_n; i++) free(own[i]);
    safeload_model_close(m);
    free(rq);
    free(own);
    return NULL;
}

static void ts_reference(int cfg) {
    safeload_model *m;
    safeload_error e;
    safeload_load_desc d;
    safeload_load_stats st;
    size_t i;
    for (i = 0; i < ts_n; i++) free(ts_ref_own[i]);
    safeload_arena_free(ts_ref_arena);
    ts_ref_arena = NULL;
    CHECK(safeload_model_open(&m, ts_index, NULL, &e) == SAFELOAD_OK);
    ts_requests(ts_ref, ts_ref_own, cfg);
    memset(&d, 0, sizeof d);
    d.stats = &st;
    d.chunk_size = 65536;
    if (cfg == 3) d.hooks = fd_hooks(&ts_dev[FC_MAXR]);
    CHECK(safeload_load(m, ts_ref, ts_n, &d, &ts_ref_arena, &e) == SAFELOAD_OK);
    ts_ref_read = st.bytes_read;
    safeload_model_close(m);
}

/* world ranks load at once; jobs[r] holds rank r's outcome */
static void ts_run(fc *w, ts_job *jobs, int world, int cfg, int threads) {
    int r;
    fc_init(w, world);
    for (r = 0; r < world; r++) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].w = w;
        jobs[r].rank = r;
        jobs[r].cfg = cfg;
        jobs[r].threads = threads;
    }
}
static void ts_go(fc *w, ts_job *jobs, int world) {
    pthread_t th[FC_MAXR];
    int r;
    for (r = 0; r < world; r++) pthread_create(&th[r], NULL, ts_rank_main, &jobs[r]);
    for (r = 0; r < world; r++) pthread_join(th[r], NULL);
    CHECK_EQ_U64(w->hangs, 0);
    CHECK_EQ_U64(w->mismatches, 0);
}

static void test_shared_loads(void) {
    int cfg, world, threads;
    for (cfg = 0; cfg < 4; cfg++) {
        ts_reference(cfg);
        for (world = 1; world <= 4; world++)
            for (threads = 1; threads <= 3; threads += 2) {
                fc w;
                ts_job jobs[FC_MAXR];
                uint64_t sum = 0;
                int r;
                ts_run(&w, jobs, world, cfg, threads);
                ts_go(&w, jobs, world);
                for (r = 0; r < world; r++) {
                    CHECK_MSG(jobs[r].r == SAFELOAD_OK, "cfg %d world %d rank %d: %s", cfg,
                              world, r, jobs[r].e.message);
                    CHECK_MSG(jobs[r].bad == 0, "cfg %d world %d rank %d: %d tensors differ",
                              cfg, world, r, jobs[r].bad);
                    sum += jobs[r].st.bytes_read;
                }
                if (world == 1) {
                    CHECK_EQ_U64(w.calls[0], 0);            /* no sharing: no collectives */
                    CHECK_EQ_U64(sum, ts_ref_read);
                } else if (cfg == 0) {
                    /* the data read once between the ranks, each rank about its share, and
                       one broadcast per rank's part for 1,200 arena tensors */
                    CHECK_EQ_U64(sum, ts_ref_read);
                    for (r = 0; r < world; r++)
                        CHECK_MSG(jobs[r].st.bytes_read * (uint64_t)world <= ts_ref_read * 11 / 10 &&
                                  jobs[r].st.bytes_read * (uint64_t)world >= ts_ref_read * 9 / 10,
                                  "world %d rank %d read %llu of %llu", world, r,
                                  (unsigned long long)jobs[r].st.bytes_read,
                                  (unsigned long long)ts_ref_read);
                    CHECK_MSG(w.bcasts == world, "world %d: %ld broadcasts", world, w.bcasts);
                    CHECK_EQ_U64(w.maxes, 2);
                } else if (cfg == 3) {
                    /* device destinations: their broadcasts say so (device pointers) */
                    int v;
                    CHECK_EQ_U64(sum, ts_ref_read);
                    CHECK_MSG(w.dev_bcasts >= 1 && w.dev_bcasts < w.bcasts, "world %d: %ld of %ld",
                              world, w.dev_bcasts, w.bcasts);
                    for (v = 0; v <= world; v++) CHECK_EQ_U64(ts_dev[v == world ? FC_MAXR : v].violations, 0);
                } else {
                    /* slices: a rank may read a small gap the plain load read too, or not */
                    CHECK_MSG(sum >= ts_ref_read * 9 / 10 && sum <= ts_ref_read * 11 / 10,
                              "world %d: read %llu, plain %llu", world, (unsigned long long)sum,
                              (unsigned long long)ts_ref_read);
                    /* caller memory goes tensor by tensor (171 of them), arena stretches
                       between them */
                    CHECK_MSG(w.bcasts <= 2 * 171 + world, "world %d: %ld broadcasts", world,
                              w.bcasts);
                }
            }
    }
}

/* A failure on one rank, at every point: every rank fails, naming it, and none waits. */
static void ts_check_failed(const ts_job *jobs, int world, int fr, safeload_result want,
                            const char *what) {
    int r;
    char named[64];
    snprintf(named, sizeof named, "rank %d of %d", fr, world);
    for (r = 0; r < world; r++) {
        CHECK_MSG(jobs[r].r == want, "%s: rank %d: %s, want %s (%s)", what, r,
                  safeload_result_id(jobs[r].r), safeload_result_id(want), jobs[r].e.message);
        CHECK_MSG(strstr(jobs[r].e.message, named) != NULL, "%s: rank %d: %s", what, r,
                  jobs[r].e.message);
        CHECK(jobs[r].arena_left == 0);
    }
}

typedef struct ts_alloc { long calls, live, fail_at; } ts_alloc;
static void *ts_malloc(void *user, size_t n) {
    ts_alloc *a = (ts_alloc *)user;
    long k = __atomic_fetch_add(&a->calls, 1, __ATOMIC_SEQ_CST);
    void *p;
    if (k == a->fail_at) return NULL;
    p = malloc(n);
    if (p) __atomic_fetch_add(&a->live, 1, __ATOMIC_SEQ_CST);
    return p;
}
static void ts_free(void *user, void *p) {
    ts_alloc *a = (ts_alloc *)user;
    if (p) { __atomic_fetch_sub(&a->live, 1, __ATOMIC_SEQ_CST); free(p); }
}

/* When quick (tu_quick), reads fail a quarter further apart each time past the first few, and
   allocations each rank its own third past the first four (the three ranks together still
   fail each one). */
static void test_share_failures(void) {
    fc w;
    ts_job jobs[FC_MAXR];
    int world = 3, fr, r;
    long k;
    ts_reference(1);
    for (fr = 0; fr < world; fr++) {
        /* reads failing on rank fr (every 3rd read of its, to its last) */
        for (k = 0;; k += tu_quick() && k >= 12 ? 3 + k / 4 : 3) {
            int ok = 1;
            ts_run(&w, jobs, world, 1, 1);  /* one thread: every read is the rank's own */
            ts_fail_rank = fr;
            ts_fail_at = k;
            ts_reads = 0;
            ts_go(&w, jobs, world);
            ts_fail_rank = -1;
            for (r = 0; r < world; r++) ok &= jobs[r].r == SAFELOAD_OK;
            if (ok) {
                for (r = 0; r < world; r++) CHECK(jobs[r].bad == 0);
                break;
            }
            ts_check_failed(jobs, world, fr, SAFELOAD_IO_ERROR, "read");
            CHECK_MSG(strstr(jobs[fr].e.message, ": read at byte") != NULL, "%s",
                      jobs[fr].e.message);     /* its own error, with the rank in front */
            CHECK(k < 100000);
        }
        CHECK_MSG(k > 3, "rank %d: reads fail at %ld points only", fr, k / 3);
        /* allocations failing on rank fr at every point */
        for (k = 0;; k++) {
            ts_alloc a;
            int ok = 1;
            if (tu_quick() && k >= 4 && k % 3 != fr % 3) continue;
            memset(&a, 0, sizeof a);
            a.fail_at = k;
            ts_run(&w, jobs, world, 1, 2);
            jobs[fr].alloc.alloc = ts_malloc;
            jobs[fr].alloc.free = ts_free;
            jobs[fr].alloc.user = &a;
            ts_go(&w, jobs, world);
            CHECK_EQ_U64(a.live, 0);
            for (r = 0; r < world; r++) ok &= jobs[r].r == SAFELOAD_OK;
            if (ok) break;
            ts_check_failed(jobs, world, fr, SAFELOAD_OUT_OF_MEMORY, "alloc");
            CHECK(k < 10000);
        }
        CHECK_MSG(k > 10, "rank %d: %ld allocation points", fr, k);
        /* a broadcast failing on rank fr (it took part): all fail, naming it */
        for (k = 0; k < 3; k++) {
            ts_run(&w, jobs, world, 1, 1);
            w.fail_rank = fr;
            w.fail_kind = FC_BCAST;
            w.fail_call = k;
            ts_go(&w, jobs, world);
            ts_check_failed(jobs, world, fr, SAFELOAD_HOOK_FAILED, "broadcast");
            CHECK(strstr(jobs[0].e.message, "broadcast hook failed") != NULL);
        }
        /* rank fr has no model: the others are told, not left waiting */
        ts_run(&w, jobs, world, 1, 1);
        jobs[fr].null_model = 1;
        ts_go(&w, jobs, world);
        ts_check_failed(jobs, world, fr, SAFELOAD_INVALID_ARGUMENT, "no model");
    }
    {   /* a max hook that fails: HOOK_FAILED on the rank it failed on */
        ts_run(&w, jobs, world, 0, 1);
        w.fail_rank = 1;
        w.fail_kind = FC_MAX;
        w.fail_call = 1;                    /* the second: after the broadcasts */
        ts_go(&w, jobs, world);
        CHECK(jobs[1].r == SAFELOAD_HOOK_FAILED && strstr(jobs[1].e.message, "max hook failed"));
        CHECK(jobs[0].r == SAFELOAD_OK && jobs[2].r == SAFELOAD_OK);
    }
    {   /* a share that cannot work is refused at once, with no collective call */
        safeload_model *m;
        safeload_error e;
        safeload_load_desc d;
        safeload_request rq;
        safeload_arena *ar = NULL;
        CHECK(safeload_model_open(&m, ts_index, NULL, &e) == SAFELOAD_OK);
        memset(&d, 0, sizeof d);
        memset(&rq, 0, sizeof rq);
        rq.name = ts_t_[0].name;
        d.share.world = 2;
        d.share.rank = 2;
        d.share.broadcast = fc_bcast;
        d.share.max = fc_max;
        CHECK(safeload_load(m, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(strstr(e.message, "rank 2 of 2") != NULL);
        d.share.rank = 0;
        d.share.max = NULL;
        CHECK(safeload_load(m, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(ar == NULL && rq.data == NULL);
        safeload_model_close(m);
    }
}

/* Tensor parallelism needs no sharing: rank r of w asks for its own slices (column-parallel
   on dimension 0, row-parallel on dimension 1) and gets exactly those bytes, reading only
   them where the runs are far apart. */
static void test_tensor_parallel(void) {
    safeload_model *m;
    safeload_error e;
    int world, r;
    CHECK(safeload_model_open(&m, ts_index, NULL, &e) == SAFELOAD_OK);
    for (world = 1; world <= 4; world++) {
        uint64_t sum = 0, total = 0;
        for (r = 0; r < world; r++) {
            safeload_request *rq = (safeload_request *)calloc(ts_n, sizeof *rq);
            safeload_load_desc d;
            safeload_load_stats st;
            safeload_arena *ar = NULL;
            size_t i;
            int bad = 0;
            memset(&d, 0, sizeof d);
            d.stats = &st;
            d.threads = 2;
            for (i = 0; i < ts_n; i++) {
                const ts_t *t = &ts_t_[i];
                uint32_t dim = i % 2 ? 1 : 0;
                uint64_t len = t->shape[dim];
                rq[i].name = t->name;
                if (len < (uint64_t)world) continue;           /* replicated */
                rq[i].slice_dim = dim;
                rq[i].slice_begin = len * (uint64_t)r / (uint64_t)world;
                rq[i].slice_end = len * (uint64_t)(r + 1) / (uint64_t)world;
            }
            CHECK_MSG(safeload_load(m, rq, ts_n, &d, &ar, &e) == SAFELOAD_OK, "%s", e.message);
            for (i = 0; i < ts_n; i++) {
                const ts_t *t = &ts_t_[i];
                uint64_t es = safeload_dtype_size(t->dt), b = rq[i].slice_begin,
                         en = rq[i].slice_end, k, off = 0;
                if (!en) { bad += rq[i].nbytes != t->n || memcmp(rq[i].data, t->data, t->n); continue; }
                if (rq[i].slice_dim == 0) {
                    bad += rq[i].nbytes != (en - b) * t->shape[1] * es ||
                           memcmp(rq[i].data, t->data + b * t->shape[1] * es, (size_t)rq[i].nbytes);
                    continue;
                }
                for (k = 0; k < t->shape[0]; k++) {              /* row k's columns [b, en) */
                    bad += memcmp((unsigned char *)rq[i].data + off,
                                  t->data + (k * t->shape[1] + b) * es, (size_t)((en - b) * es)) != 0;
                    off += (en - b) * es;
                }
                bad += rq[i].nbytes != off;
            }
            CHECK_MSG(bad == 0, "world %d rank %d: %d bad shards", world, r, bad);
            sum += st.bytes_read;
            safeload_arena_free(ar);
            free(rq);
        }
        for (r = 0; r < (int)ts_n; r++) total += ts_t_[r].n;
        /* the shards cover each tensor once; small gaps between a rank's columns are read */
        CHECK_MSG(world == 1 ? sum == total : sum >= total, "world %d: read %llu of %llu", world,
                  (unsigned long long)sum, (unsigned long long)total);
    }
    safeload_model_close(m);
}

int main(void) {
    size_t i;
    char cmd[200];
    ts_make();
    for (i = 0; i <= FC_MAXR; i++) fd_init(&ts_dev[i], 0);
    TU_PART(test_shared_loads());
    TU_PART(test_share_failures());
    TU_PART(test_tensor_parallel());
    for (i = 0; i < ts_n; i++) { free(ts_t_[i].data); free(ts_ref_own[i]); }
    safeload_arena_free(ts_ref_arena);
    for (i = 0; i <= FC_MAXR; i++) fd_destroy(&ts_dev[i]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ts_dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    return tu_finish("test_share");
}
