/* test_load: the load engine. Every load is checked byte for byte against the data the test
   wrote: thread counts 1..8, every I/O mode, casts, slices, caller and arena destinations,
   memory and reader sources, shards and every index error, cancellation, injected I/O faults
   and allocation failures. */
#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
/* fault injection on the file reads (the library's test seams) */
static ssize_t tl_pread(int fd, void *buf, size_t n, off_t off);
static ssize_t tl_preadv(int fd, const struct iovec *iov, int cnt, off_t off);
#define SAFELOAD_PREAD tl_pread
#define SAFELOAD_PREADV tl_preadv
/* cachestat off: io AUTO's probe falls back to mincore */
static int tl_no_cachestat;
static long tl_cachestat(int fd, void *range, void *cs);
#define SAFELOAD_CACHESTAT(fd, range, cs) tl_cachestat(fd, range, cs)
/* the page policy's seams: advice that fails on cue, first-touch times the test decides */
static int tl_madvise(void *p, size_t n, int advice);
static unsigned long long tl_touch_ns(int huge, unsigned long long ns);
#define SAFELOAD_MADVISE(p, n, advice) tl_madvise(p, n, advice)
#define SAFELOAD_TOUCH_NS(huge, ns) tl_touch_ns(huge, ns)
static long tl_recheck_wins = 4;        /* AUTO's retries of huge pages within a 27 MB load */
#define SL__RECHECK_WINS ((size_t)tl_recheck_wins)
/* AUTO's probe stops early when huge pages win by this factor: off (0) but in the test of it,
   so that the others' window counts stay the four-window probe's */
static long tl_won_by = 0;
#define SL__WON_BY ((uint64_t)tl_won_by)
/* big tables: from 64 KiB (a header of a few hundred tensors), first-touch times the test
   decides (by default 4 KiB pages cheap: the allocator's memory, as before) */
static unsigned long long tl_big_ns(int huge, unsigned long long ns);
#define SAFELOAD_BIG_MIN ((size_t)65536)
#define SAFELOAD_BIG_NS(huge, ns) tl_big_ns(huge, ns)
/* queued reads (io_uring): a setup that fails on cue, completions the test alters */
static long tl_uring_setup(unsigned entries, void *params);
static long long tl_aio_result(long long res, const void *buf, unsigned long long off,
                               unsigned long long len);
static long tl_uring_register(int ring, void *iov);
#define SAFELOAD_URING_SETUP(entries, params) tl_uring_setup(entries, params)
#define SAFELOAD_URING_REGISTER(ring, iov) tl_uring_register(ring, iov)
#define SAFELOAD_AIO_RESULT(res, buf, off, len) tl_aio_result(res, buf, off, len)
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "pagecache.h"
#include <signal.h>
#include <sched.h>
#include <sys/stat.h>

/* ---- fault injection ---- */
enum { FI_NONE, FI_EINTR, FI_SHORT, FI_FAIL_AT };
static int fi_mode = FI_NONE;
static long fi_count = 0, fi_at = -1;

/* every read on an O_DIRECT descriptor must be aligned (Windows refuses others, also at the
   end of the file): counted here, checked at the end */
static long tl_direct_reads, tl_direct_misaligned;

/* the disk's buffers (test_dma_pages): whether the first O_DIRECT read's buffer, and each
   fixed buffer registered, lies in memory advised huge ("hg" in smaps), when asked */
static int tb_vmflag(const void *p, const char *flag);
static int tl_dma_watch, tl_dma_hg = -2, tl_reg_watch, tl_reg_n, tl_reg_hg[8];

static ssize_t tl_pread(int fd, void *buf, size_t n, off_t off) {
    long k = __atomic_fetch_add(&fi_count, 1, __ATOMIC_RELAXED);
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1 && (fl & O_DIRECT)) {
        if (__atomic_exchange_n(&tl_dma_watch, 0, __ATOMIC_RELAXED)) tl_dma_hg = tb_vmflag(buf, "hg");
        __atomic_fetch_add(&tl_direct_reads, 1, __ATOMIC_RELAXED);
        if (((uintptr_t)buf | (uintptr_t)n | (uintptr_t)off) % 4096)
            __atomic_fetch_add(&tl_direct_misaligned, 1, __ATOMIC_RELAXED);
    }
    if (fi_mode == FI_EINTR && (k & 1)) { errno = EINTR; return -1; }
    if (fi_mode == FI_SHORT && n > 4) n = n / 2 + (size_t)(k % 3);
    if (fi_mode == FI_FAIL_AT && k == fi_at) { errno = EIO; return -1; }
    return pread(fd, buf, n, off);
}

static ssize_t tl_preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    long k = __atomic_fetch_add(&fi_count, 1, __ATOMIC_RELAXED);
    if (fi_mode == FI_EINTR && (k & 1)) { errno = EINTR; return -1; }
    if (fi_mode == FI_SHORT && cnt > 1) cnt = cnt / 2;
    if (fi_mode == FI_SHORT && cnt == 1 && iov[0].iov_len > 4) {
        struct iovec half = iov[0];         /* one vector (a merged run): half of it */
        half.iov_len = half.iov_len / 2 + (size_t)(k % 3);
        return preadv(fd, &half, 1, off);
    }
    if (fi_mode == FI_FAIL_AT && k == fi_at) { errno = EIO; return -1; }
    return preadv(fd, iov, cnt, off);
}

#include <sys/syscall.h>
static long tl_cachestat(int fd, void *range, void *cs) {
    if (tl_no_cachestat) { errno = ENOSYS; return -1; }
    return syscall(451, fd, range, cs, 0u);
}

/* bit 0: MADV_HUGEPAGE fails, bit 1: MADV_NOHUGEPAGE, bit 2: MADV_POPULATE_WRITE (EINVAL, as
   on a kernel without transparent huge pages or before 5.14); bit 3: MADV_NOHUGEPAGE on more
   than 2 MiB (AUTO's probe windows pass, its switch for the rest fails) */
static int tl_madv_fail;
static long tl_populates;
static int tl_madvise(void *p, size_t n, int advice) {
    int bit = advice == MADV_HUGEPAGE ? 1 : advice == MADV_NOHUGEPAGE ? 2 :
              advice == MADV_POPULATE_WRITE ? 4 : 0;
    if (advice == MADV_POPULATE_WRITE) __atomic_fetch_add(&tl_populates, 1, __ATOMIC_RELAXED);
    if ((tl_madv_fail & 8) && advice == MADV_NOHUGEPAGE && n > (2u << 20)) bit = 8;
    if (tl_madv_fail & bit) { errno = EINVAL; return -1; }
    return madvise(p, n, advice);
}
/* first-touch times: 0 as measured; else fixed per 2 MiB window, 4 KiB pages 1 ms, huge ones
   1 us (fast) or 100 ms (slow): 1 slow, 2 fast, 3 fast for the first tl_touch_fast huge
   windows then slow; 4: huge ones tl_touch_huge_ns each (near the 4 KiB rate); 5 slow for
   the first tl_touch_slow huge windows then fast; 7 fast for the probe's two,
   tl_touch_huge_ns after; 8 fast for the probe's two, then slow and fast by turns for four
   windows each (a verdict's); 9 huge windows [tl_touch_slow_from, _to) slow, the others fast;
   10 the two from tl_touch_slow_from slow, held in flight together. Slow is tl_touch_slow_ns
   where set (3, 8, 9, 10). tl_touch_stall: the first 4 KiB window that long (a stall);
   tl_touch_normal_ns: 4 KiB windows [tl_touch_normal_from, _to) that long */
static int tl_touch_mode;
static unsigned long long tl_touch_huge_ns, tl_touch_stall, tl_touch_normal_ns, tl_touch_slow_ns;
static long tl_touch_huge, tl_touch_normal, tl_touch_fast, tl_touch_slow;
static long tl_touch_normal_from, tl_touch_normal_to, tl_touch_slow_from, tl_touch_slow_to;
static int tl_touch_second;
static unsigned long long tl_touch_ns(int huge, unsigned long long ns) {
    unsigned long long slow = tl_touch_slow_ns ? tl_touch_slow_ns : 100000000;
    long k;
    if (!tl_touch_mode) return ns;
    if (!huge) {
        k = __atomic_fetch_add(&tl_touch_normal, 1, __ATOMIC_RELAXED);
        if (k == 0 && tl_touch_stall) return tl_touch_stall;
        if (tl_touch_normal_ns && k >= tl_touch_normal_from && k < tl_touch_normal_to)
            return tl_touch_normal_ns;
        return 1000000;
    }
    if (tl_touch_mode == 4) return tl_touch_huge_ns;
    k = __atomic_fetch_add(&tl_touch_huge, 1, __ATOMIC_RELAXED);
    if (tl_touch_mode == 7) return k < 2 ? 1000 : tl_touch_huge_ns;
    /* 8: fast for the probe's two, then each verdict's four slow and fast by turns */
    if (tl_touch_mode == 8) return k < 2 || (k - 2) / 4 % 2 ? 1000 : slow;
    if (tl_touch_mode == 9) return k >= tl_touch_slow_from && k < tl_touch_slow_to ? slow : 1000;
    /* 10: huge windows from and from + 1 slow and in flight together: the first returns once
       the second has come in (at most 2 s), the second 30 ms after it came in */
    if (tl_touch_mode == 10) {
        struct timespec ts = {0, 1000000};
        int i;
        if (k == tl_touch_slow_from)
            for (i = 0; i < 2000 && !__atomic_load_n(&tl_touch_second, __ATOMIC_ACQUIRE); i++)
                nanosleep(&ts, NULL);
        if (k == tl_touch_slow_from + 1) {
            __atomic_store_n(&tl_touch_second, 1, __ATOMIC_RELEASE);
            ts.tv_nsec = 30000000;
            nanosleep(&ts, NULL);
        }
        return k == tl_touch_slow_from || k == tl_touch_slow_from + 1 ? slow : 1000;
    }
    if (tl_touch_mode == 2 || (tl_touch_mode == 3 && k < tl_touch_fast)) return 1000;
    if (tl_touch_mode == 5 && k >= tl_touch_slow) return 1000;
    if (tl_touch_mode == 1 || tl_touch_mode == 5) return 100000000;
    return slow;
}

/* big tables' probe: 0 a 4 KiB page 0.5 us (cheap), 1 8 us (dear) with a huge page 0.1 ms,
   2 8 us with a huge page dearer than 512 of them, 3 no clock (0), 4 8 us with a huge page
   20 us (cheaper than 3 of them), 5 and 6 8 us with a huge page a little over and exactly a
   quarter of 512 of them, 7 8 us with the first huge page 0.1 ms and every later one dearer
   than 512 of them (memory that sat idle: the host backs the first blocks handed out) */
static int tl_big_mode;
static long tl_big_probes, tl_big_huge_probes;
static unsigned long long tl_big_ns(int huge, unsigned long long ns) {
    (void)ns;
    __atomic_fetch_add(huge ? &tl_big_huge_probes : &tl_big_probes, 1, __ATOMIC_RELAXED);
    if (tl_big_mode == 3) return 0;
    if (!huge) return tl_big_mode == 0 ? 500 : 8000;
    if (tl_big_mode == 7) return tl_big_huge_probes == 1 ? 100000 : 512 * 8000 + 1;
    if (tl_big_mode == 8) return tl_big_huge_probes <= 3 ? 100000 : 512 * 8000 + 1;
    return tl_big_mode == 2 ? 512 * 8000 + 1 : tl_big_mode == 4 ? 20000 :
           tl_big_mode == 5 ? 128 * 8000 + 1 : tl_big_mode == 6 ? 128 * 8000 : 100000;
}

/* io_uring: refused with tl_uring_refuse (an errno) when set; completions counted, each
   checked aligned, and altered by tl_aio_mode: 1 short (every other one, aligned and not),
   2 zero bytes, 3 -EIO at completion tl_aio_at */
static int tl_uring_refuse, tl_aio_mode;
static long tl_aio_done, tl_aio_at, tl_aio_misaligned;
static long tl_uring_setup(unsigned entries, void *params) {
    if (tl_uring_refuse) { errno = tl_uring_refuse; return -1; }
    return syscall(425, entries, params);
}
/* fixed buffers: refused (as RLIMIT_MEMLOCK does) when tl_register_refuse; the registrations
   the kernel took are counted */
static int tl_register_refuse;
static long tl_registered;
static long tl_uring_register(int ring, void *iov) {
    long r;
    if (tl_register_refuse) { errno = ENOMEM; return -1; }
#if defined(SL__URING_REGISTER_SYS)
    r = SL__URING_REGISTER_SYS(ring, iov);
#else
    (void)ring; (void)iov;
    errno = ENOSYS;
    r = -1;
#endif
    if (r == 0) __atomic_fetch_add(&tl_registered, 1, __ATOMIC_RELAXED);
    if (tl_reg_watch && tl_reg_n < 8)       /* (from the load's own thread, one at a time) */
        tl_reg_hg[tl_reg_n++] = tb_vmflag(((const struct iovec *)iov)->iov_base, "hg");
    return r;
}
static long long tl_aio_result(long long res, const void *buf, unsigned long long off,
                               unsigned long long len) {
    long k = __atomic_fetch_add(&tl_aio_done, 1, __ATOMIC_RELAXED);
    if (((uintptr_t)buf | off | len) % 4096)
        __atomic_fetch_add(&tl_aio_misaligned, 1, __ATOMIC_RELAXED);
    if (res <= 0) return res;
    if (tl_aio_mode == 1 && (k & 1)) return (k & 2) ? (res / 2) & ~4095LL : res / 2 + 1;
    if (tl_aio_mode == 2 && (k % 3) == 0) return 0;
    if (tl_aio_mode == 3 && k == tl_aio_at) return -EIO;
    return res;
}
/* does this kernel (and sandbox) give io_uring at all? */
static int tl_uring_ok(void) {
    unsigned char params[120];
    long fd;
    memset(params, 0, sizeof params);
    fd = syscall(425, 2u, params);
    if (fd < 0) return 0;
    close((int)fd);
    return 1;
}

static void fi_set(int mode, long at) {
    fi_mode = mode;
    fi_at = at;
    __atomic_store_n(&fi_count, 0, __ATOMIC_RELAXED);
}

/* ---- an allocator that counts and can fail the k-th allocation ---- */
typedef struct tl_alloc { long calls, live, fail_at, big; } tl_alloc;
static void *tl_malloc(void *user, size_t n) {
    tl_alloc *a = (tl_alloc *)user;
    long k = __atomic_fetch_add(&a->calls, 1, __ATOMIC_RELAXED);
    void *p;
    if (n >= (1u << 20)) __atomic_fetch_add(&a->big, 1, __ATOMIC_RELAXED);   /* an arena's */
    if (k == a->fail_at) return NULL;
    p = malloc(n);
    if (p) __atomic_fetch_add(&a->live, 1, __ATOMIC_RELAXED);
    return p;
}
static void tl_free(void *user, void *p) {
    tl_alloc *a = (tl_alloc *)user;
    if (p) { __atomic_fetch_sub(&a->live, 1, __ATOMIC_RELAXED); free(p); }
}
static safeload_allocator tl_allocator(tl_alloc *a, long fail_at) {
    safeload_allocator al;
    memset(&al, 0, sizeof al);
    a->calls = 0;
    a->live = 0;
    a->big = 0;
    a->fail_at = fail_at;
    al.alloc = tl_malloc;
    al.free = tl_free;
    al.user = a;
    return al;
}

/* ---- an allocator that counts calls made while another call is inside it ---- */
typedef struct tl_excl { tl_alloc base; int inside, overlaps; } tl_excl;
static void tl_excl_enter(tl_excl *x) {
    volatile int k;
    if (__atomic_fetch_add(&x->inside, 1, __ATOMIC_SEQ_CST) != 0)
        __atomic_fetch_add(&x->overlaps, 1, __ATOMIC_SEQ_CST);
    for (k = 0; k < 20000; k++) {}          /* stay a while, as a real allocator might */
}
static void tl_excl_leave(tl_excl *x) { __atomic_fetch_sub(&x->inside, 1, __ATOMIC_SEQ_CST); }
static void *tl_excl_malloc(void *user, size_t n) {
    tl_excl *x = (tl_excl *)user;
    void *p;
    tl_excl_enter(x);
    p = tl_malloc(&x->base, n);
    tl_excl_leave(x);
    return p;
}
static void *tl_excl_realloc(void *user, void *p, size_t old_n, size_t n) {
    tl_excl *x = (tl_excl *)user;
    void *q;
    (void)old_n;
    tl_excl_enter(x);
    q = realloc(p, n);
    if (q && !p) __atomic_fetch_add(&x->base.live, 1, __ATOMIC_RELAXED);
    tl_excl_leave(x);
    return q;
}
static void tl_excl_free(void *user, void *p) {
    tl_excl *x = (tl_excl *)user;
    tl_excl_enter(x);
    tl_free(&x->base, p);
    tl_excl_leave(x);
}

/* ---- test checkpoints ---- */
static char tl_dir[256];

static void tl_path(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", tl_dir, name);
}

typedef struct tl_tensor {
    char name[96];
    safeload_dtype dtype;
    uint32_t rank;
    uint64_t shape[4];
    unsigned char *data;
    uint64_t nbytes;
} tl_tensor;

typedef struct tl_model {
    tl_tensor *t;
    size_t n;
} tl_model;

/* Plausible float values in host order: no NaN/Inf patterns so casts round-trip predictably
   (the top byte is set in little-endian order, then turned into the host's). */
static void tl_fill(unsigned char *p, uint64_t n, safeload_dtype dt) {
    uint64_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)tu_rand64();
    if (dt == SAFELOAD_BF16 || dt == SAFELOAD_F16)
        for (i = 1; i < n; i += 2) p[i] = (unsigned char)((p[i] & 0x83) | 0x38);
    if (dt == SAFELOAD_F32)
        for (i = 3; i < n; i += 4) p[i] = (unsigned char)((p[i] & 0x81) | 0x3C);
    TU_LE_DT(p, (size_t)n, dt);
}

static void tl_add(tl_model *m, const char *name, safeload_dtype dt, uint64_t rows,
                   uint64_t cols) {
    tl_tensor *t;
    m->t = (tl_tensor *)realloc(m->t, (m->n + 1) * sizeof *m->t);
    t = &m->t[m->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->rank = 2;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->nbytes = rows * cols * safeload_dtype_bits(dt) / 8;      /* F4: cols must be even */
    t->data = (unsigned char *)malloc(t->nbytes ? t->nbytes : 1);
    tl_fill(t->data, t->nbytes, dt);
}

static void tl_free_model(tl_model *m) {
    size_t i;
    for (i = 0; i < m->n; i++) free(m->t[i].data);
    free(m->t);
    m->t = NULL;
    m->n = 0;
}

static const tl_tensor *tl_get(const tl_model *m, const char *name) {
    size_t i;
    for (i = 0; i < m->n; i++) if (strcmp(m->t[i].name, name) == 0) return &m->t[i];
    return NULL;
}

static int tl_save(const tl_model *m, size_t from, size_t to, const char *path) {
    safeload_save_tensor *st = (safeload_save_tensor *)calloc(to - from + 1, sizeof *st);
    safeload_error e;
    size_t i;
    int ok;
    for (i = from; i < to; i++) {
        st[i - from].name = m->t[i].name;
        st[i - from].dtype = m->t[i].dtype;
        st[i - from].rank = m->t[i].rank;
        st[i - from].shape = m->t[i].shape;
        st[i - from].data = m->t[i].data;
        st[i - from].nbytes = m->t[i].nbytes;
    }
    ok = safeload_save(path, st, to - from, NULL, &e) == SAFELOAD_OK;
    if (!ok) fprintf(stderr, "save %s: %s\n", path, e.message);
    free(st);
    return ok;
}

/* A checkpoint with every size class: big tensors (several chunks, odd sizes), a few thousand
   small ones (coalesced runs), zero-sized ones, several dtypes. */
static void tl_make_mixed(tl_model *m, int small) {
    int i;
    char nm[96];
    tl_add(m, "big.a", SAFELOAD_BF16, 1537, 2049);          /* ~6 MiB, odd */
    tl_add(m, "big.b", SAFELOAD_F32, 1024, 1031);           /* ~4 MiB */
    tl_add(m, "big.c", SAFELOAD_F16, 777, 1024);
    tl_add(m, "empty.a", SAFELOAD_BF16, 0, 16);
    tl_add(m, "empty.b", SAFELOAD_F32, 16, 0);
    tl_add(m, "ints", SAFELOAD_I64, 33, 7);
    tl_add(m, "bytes", SAFELOAD_U8, 3, 5);
    tl_add(m, "fp8", SAFELOAD_F8_E4M3, 64, 33);
    for (i = 0; i < small; i++) {
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.experts.%d.%s_proj.weight", i / 96, i / 3 % 32,
                 i % 3 == 0 ? "gate" : i % 3 == 1 ? "up" : "down");
        tl_add(m, nm, i % 5 == 0 ? SAFELOAD_F32 : SAFELOAD_BF16, 1 + (uint64_t)(i % 7) * 3,
               64 + (uint64_t)(i % 11));
    }
}

/* Every loaded request must hold exactly the expected bytes. */
static int tl_check_loaded(const tl_model *m, const safeload_request *rq, size_t n) {
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        const tl_tensor *t = tl_get(m, rq[i].name);
        if (!t || rq[i].nbytes != t->nbytes ||
            (t->nbytes && memcmp(rq[i].data, t->data, t->nbytes) != 0)) {
            if (!bad) fprintf(stderr, "  mismatch in %s\n", rq[i].name);
            bad++;
        }
    }
    return bad == 0;
}

/* the next failure point a fault loop tries: each one, or when quick the first four and then
   a quarter further each time (4, 5, 6, 7, 8, 10, 12, 15, 18, ...: the early reads and
   allocations, where the setup's paths are, closely; a sanitizer pays 35x for each load of
   random slices) */
static long tl_fault_step(long k) { return tu_quick() && k >= 4 ? 1 + k / 4 : 1; }

/* ---- single files: threads x I/O modes x chunk sizes, arena and caller destinations ---- */
static void test_matrix(const tl_model *m, const char *path) {
    static const safeload_io ios[] = {SAFELOAD_IO_READ, SAFELOAD_IO_MMAP, SAFELOAD_IO_DIRECT,
                                       SAFELOAD_IO_AUTO};
    static const size_t chunks[] = {0, 12288};
    safeload_model *mod;
    safeload_error e;
    int th, io, c;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    CHECK_EQ_U64(safeload_model_tensor_count(mod), m->n);
    for (th = 1; th <= 8; th += tu_quick() ? 3 : 1)
        for (io = 0; io < 4; io++)
            for (c = 0; c < 2; c++) {
                safeload_load_desc d;
                safeload_load_stats st;
                safeload_loaded *l = NULL;
                safeload_result r;
                /* AUTO reads this cached file as READ does: one thread count of it is enough */
                if (ios[io] == SAFELOAD_IO_AUTO && th != (tu_quick() ? 4 : 2)) continue;
                memset(&d, 0, sizeof d);
                d.threads = th;
                d.io = ios[io];
                d.chunk_size = chunks[c];
                d.stats = &st;
                r = safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e);
                CHECK_MSG(r == SAFELOAD_OK, "threads %d io %d chunk %d: %s", th, io, c, e.message);
                if (r != SAFELOAD_OK) continue;
                CHECK_MSG(tl_check_loaded(m, l->tensors, l->count), "threads %d io %d chunk %d",
                          th, io, c);
                CHECK_EQ_U64(st.bytes_written, safeload_data_size(safeload_model_shard(mod, 0)));
                /* arena tensors are 64-byte aligned */
                {
                    size_t k;
                    int misaligned = 0;
                    for (k = 0; k < l->count; k++)
                        misaligned |= (int)((uintptr_t)l->tensors[k].data & 63);
                    CHECK(!misaligned);
                }
                safeload_loaded_free(l);
            }
    safeload_model_close(mod);
}

/* Coalescing: thousands of small tensors cost far fewer reads than tensors. */
static void test_coalescing(const tl_model *m, const char *path) {
    safeload_model *mod;
    safeload_loaded *l;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_error e;
    memset(&d, 0, sizeof d);
    d.threads = 2;
    d.stats = &st;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
    CHECK_MSG(st.reads * 20 < m->n, "%llu reads for %llu tensors", (unsigned long long)st.reads,
              (unsigned long long)m->n);
    safeload_loaded_free(l);
    /* a load that fails before reading anything shows zeros, not the last load's figures */
    {
        static const safeload_load_stats zero;
        safeload_request rq;
        safeload_file *f = safeload_model_shard(mod, 0);
        CHECK(st.bytes_read > 0);
        d.io = (safeload_io)7;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(memcmp(&st, &zero, sizeof st) == 0);
        memset(&st, 0xA5, sizeof st);
        CHECK(safeload_load_all(NULL, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(memcmp(&st, &zero, sizeof st) == 0);
        /* a dtype outside the enum is no dtype to cast to, not "keep them as stored" */
        d.io = SAFELOAD_IO_READ;
        CHECK(safeload_load_all(mod, (safeload_dtype)SAFELOAD_DTYPE_COUNT, &d, &l, &e) ==
              SAFELOAD_INVALID_ARGUMENT && l == NULL);
        CHECK(e.file[0] != 0 && strstr(e.message, "not a safeload_dtype") != NULL);
        CHECK(safeload_load_all(mod, (safeload_dtype)-3, &d, &l, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(l == NULL);
        {   /* the same for a request's dtype: an argument error, not an unsupported cast */
            safeload_request q;
            safeload_arena *ar = NULL;
            int bad;
            for (bad = 0; bad < 2; bad++) {
                memset(&q, 0, sizeof q);
                q.name = safeload_tensor_at(f, 0)->name;
                q.dtype = (safeload_dtype)(bad ? 77 : SAFELOAD_DTYPE_COUNT);
                CHECK(safeload_load(mod, &q, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
                CHECK(ar == NULL && q.data == NULL);
                CHECK_STR(e.tensor, q.name);
                CHECK_MSG(strstr(e.message, bad ? "dtype 77 is not a safeload_dtype" :
                                 "is not a safeload_dtype") != NULL, "%s", e.message);
            }
        }
        d.io = (safeload_io)7;
        memset(&st, 0xA5, sizeof st);
        CHECK(safeload_load(NULL, NULL, 0, &d, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(memcmp(&st, &zero, sizeof st) == 0);
        memset(&st, 0xA5, sizeof st);
        memset(&rq, 0, sizeof rq);
        rq.name = "no such tensor";
        d.io = SAFELOAD_IO_READ;
        CHECK(safeload_load_file(f, &rq, 1, &d, NULL, &e) == SAFELOAD_NOT_FOUND);
        CHECK(memcmp(&st, &zero, sizeof st) == 0);
    }
    safeload_model_close(mod);
}

/* Small tensors back to back in the arena: each run of them fills one chunk-sized window of
   it, a tensor across a window's end split there, so one worker faults in and fills each
   window: one read per window, however the tensors fall. */
static void test_window_runs(void) {
    tl_model w;
    char p[400], nm[32];
    const uint64_t chunk = 65536;
    int i, th;
    memset(&w, 0, sizeof w);
    for (i = 0; i < 600; i++) {
        snprintf(nm, sizeof nm, "t%d", i);
        tl_add(&w, nm, SAFELOAD_U8, 1, 64 * (uint64_t)(17 + i % 53));   /* 1-4.4 KiB */
    }
    tl_path(p, sizeof p, "windows.safetensors");
    CHECK(tl_save(&w, 0, w.n, p));
    for (th = 1; th <= 3; th++) {
        safeload_model *mod;
        safeload_loaded *l;
        safeload_load_desc d;
        safeload_load_stats st;
        safeload_error e;
        uint64_t bytes = 0;
        size_t k;
        memset(&d, 0, sizeof d);
        d.threads = th;
        d.chunk_size = (size_t)chunk;
        d.stats = &st;
        CHECK(safeload_model_open(&mod, p, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        CHECK(tl_check_loaded(&w, l->tensors, l->count));
        /* the tensors lie back to back (64-byte sizes) in file order from the first; the
           windows are the chunk-aligned ones of the address space they span */
        for (k = 0; k < w.n; k++) bytes += w.t[k].nbytes;
        {
            uint64_t lo = UINT64_MAX, hi = 0, wins;
            for (k = 0; k < l->count; k++) {
                uint64_t a = (uint64_t)(uintptr_t)l->tensors[k].data;
                if (a < lo) lo = a;
                if (a + l->tensors[k].nbytes > hi) hi = a + l->tensors[k].nbytes;
            }
            CHECK_EQ_U64(hi - lo, bytes);
            wins = (hi - 1) / chunk - lo / chunk + 1;
            CHECK_MSG(st.reads == wins, "threads %d: %llu reads for %llu windows", th,
                      (unsigned long long)st.reads, (unsigned long long)wins);
        }
        safeload_loaded_free(l);
        safeload_model_close(mod);
    }
    tl_free_model(&w);
}

/* Caller destinations in random order with guard bytes; slices of dimension 0. */
/* Destinations that overlap each other, or the bytes being read, are refused up front. */
static void test_overlap(const tl_model *m, const char *path) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq[3];
    const tl_tensor *a = NULL, *b = NULL;
    unsigned char *buf, *img;
    const void *view;
    size_t al;
    size_t i, n;
    for (i = 0; i < m->n && (!a || !b); i++) {      /* two plain tensors of 64+ bytes */
        if (m->t[i].nbytes < 64) continue;
        if (!a) a = &m->t[i]; else b = &m->t[i];
    }
    CHECK(a && b);
    if (!a || !b) return;
    buf = (unsigned char *)malloc((size_t)(a->nbytes + b->nbytes));
    CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
    memset(rq, 0, sizeof rq);
    rq[0].name = a->name; rq[0].dst = buf; rq[0].dst_size = a->nbytes;
    rq[1].name = b->name; rq[1].dst = buf + a->nbytes - 1; rq[1].dst_size = b->nbytes;
    CHECK(safeload_load_file(f, rq, 2, NULL, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK_MSG(strstr(e.message, "requests 0 and 1 overlap") && strcmp(e.tensor, b->name) == 0,
              "%s [%s]", e.message, e.tensor);
    CHECK(rq[0].data == NULL && rq[1].data == NULL);
    rq[1].dst = buf + a->nbytes;                    /* adjacent is fine */
    CHECK(safeload_load_file(f, rq, 2, NULL, NULL, &e) == SAFELOAD_OK);
    CHECK(memcmp(buf, a->data, (size_t)a->nbytes) == 0 && memcmp(buf + a->nbytes, b->data, (size_t)b->nbytes) == 0);
    /* the same tensor twice into one buffer */
    rq[1] = rq[0];
    CHECK(safeload_load_file(f, rq, 2, NULL, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    /* into the read-only mapping a view handed out */
    CHECK(safeload_view(f, safeload_find(f, b->name), &view, &al, &e) == SAFELOAD_OK);
    memset(rq, 0, sizeof rq);
    rq[0].name = a->name; rq[0].dst = (void *)((uintptr_t)view + 8); rq[0].dst_size = a->nbytes;
    CHECK(safeload_load_file(f, rq, 1, NULL, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK_MSG(strstr(e.message, "memory this load reads from") != NULL, "%s", e.message);
    safeload_close(f);
    /* into the memory it is loaded from */
    img = tu_slurp(path, &n);
    CHECK(img && safeload_open_memory(&f, img, n, NULL, &e) == SAFELOAD_OK);
    rq[0].dst = img + safeload_find(f, a->name)->file_offset + 2;
    CHECK(safeload_load_file(f, rq, 1, NULL, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK_MSG(strstr(e.message, "memory this load reads from") != NULL, "%s", e.message);
    rq[0].dst = buf;                                /* and from it into separate memory */
    CHECK(safeload_load_file(f, rq, 1, NULL, NULL, &e) == SAFELOAD_OK);
    CHECK(memcmp(buf, a->data, (size_t)a->nbytes) == 0);
    safeload_close(f);
    free(img);
    free(buf);
}

static void test_caller_dst_and_slices(const tl_model *m, const char *path) {
    safeload_file *f;
    safeload_error e;
    size_t i, n = m->n;
    safeload_request *rq = (safeload_request *)calloc(n, sizeof *rq);
    unsigned char **buf = (unsigned char **)calloc(n, sizeof *buf);
    uint64_t *lo = (uint64_t *)calloc(n, sizeof *lo), *hi = (uint64_t *)calloc(n, sizeof *hi);
    int th;
    CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
    for (th = 1; th <= 4; th++) {
        safeload_load_desc d;
        int bad = 0;
        memset(&d, 0, sizeof d);
        d.threads = th;
        d.chunk_size = 16384;
        d.io = th == 3 ? SAFELOAD_IO_MMAP : SAFELOAD_IO_READ;
        for (i = 0; i < n; i++) {
            const tl_tensor *t = &m->t[(i * 7919) % n];     /* a shuffled order */
            uint64_t rows = t->shape[0], row = rows ? t->nbytes / rows : 0, len;
            memset(&rq[i], 0, sizeof rq[i]);
            rq[i].name = t->name;
            lo[i] = 0;
            hi[i] = rows;
            if (rows > 2 && (i % 3) == 1) {                  /* a slice */
                lo[i] = tu_rand64() % (rows - 1);
                hi[i] = lo[i] + 1 + tu_rand64() % (rows - lo[i]);
                rq[i].slice_begin = lo[i];
                rq[i].slice_end = hi[i];
            }
            len = (hi[i] - lo[i]) * row;
            buf[i] = (unsigned char *)malloc(len + 64);
            memset(buf[i], 0xA5, len + 64);
            rq[i].dst = buf[i] + 32;
            rq[i].dst_size = len;
        }
        CHECK_MSG(safeload_load_file(f, rq, n, &d, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        for (i = 0; i < n; i++) {
            const tl_tensor *t = &m->t[(i * 7919) % n];
            uint64_t row = t->shape[0] ? t->nbytes / t->shape[0] : 0, len = (hi[i] - lo[i]) * row;
            int k;
            if (rq[i].data != buf[i] + 32 || rq[i].nbytes != len ||
                memcmp(buf[i] + 32, t->data + lo[i] * row, len) != 0) bad++;
            for (k = 0; k < 32; k++)
                if (buf[i][k] != 0xA5 || buf[i][32 + len + k] != 0xA5) bad++;
            free(buf[i]);
        }
        CHECK_MSG(bad == 0, "threads %d: %d bad destinations", th, bad);
    }
    safeload_close(f);
    free(rq); free(buf); free(lo); free(hi);
}

/* Casting while loading gives exactly the scalar reference kernel's bits, for any threads, I/O
   mode and staging size; tensors that cannot be cast keep their bytes. */
static void test_cast_on_load(const tl_model *m, const char *path) {
    safeload_model *mod;
    safeload_error e;
    int th, io;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    for (th = 1; th <= 3; th++)
        for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
            safeload_loaded *l;
            safeload_load_desc d;
            size_t k;
            int bad = 0;
            if (io == SAFELOAD_IO_AUTO && th != 2) continue;      /* as READ on a cached file */
            if (tu_skip_threads(th, io)) continue;
            memset(&d, 0, sizeof d);
            d.threads = th;
            d.io = (safeload_io)io;
            d.staging_size = th == 2 ? 4096 : 0;
            if (safeload_load_all(mod, SAFELOAD_F32, &d, &l, &e) != SAFELOAD_OK) {
                CHECK_MSG(0, "%s", e.message);
                continue;
            }
            for (k = 0; k < l->count; k++) {
                const tl_tensor *t = tl_get(m, l->tensors[k].name);
                if (t->dtype != SAFELOAD_F32 && safeload_can_convert(SAFELOAD_F32, t->dtype)) {
                    /* expected: the scalar reference kernel over the stored bytes */
                    uint64_t cnt = t->nbytes / safeload_dtype_size(t->dtype);
                    unsigned char *want = (unsigned char *)malloc(cnt * 4 + 1);
                    safeload_convert_desc cd;
                    memset(&cd, 0, sizeof cd);
                    cd.simd = SAFELOAD_SIMD_SCALAR;
                    if (safeload_convert_ex(want, SAFELOAD_F32, t->data, t->dtype, (size_t)cnt,
                                            &cd) != SAFELOAD_OK ||
                        l->tensors[k].nbytes != cnt * 4 ||
                        memcmp(l->tensors[k].data, want, cnt * 4) != 0) bad++;
                    free(want);
                } else if (l->tensors[k].nbytes != t->nbytes ||
                           memcmp(l->tensors[k].data, t->data, t->nbytes) != 0) {
                    bad++;
                }
            }
            CHECK_MSG(bad == 0, "threads %d io %d: %d bad tensors", th, io, bad);
            safeload_loaded_free(l);
        }
    safeload_model_close(mod);
}

/* The dequantizing sources (F4, E8M0, the FNUZ FP8s) cast on load to F32, F16 and BF16, whole
   and as row slices (an F4 kernel unit is one byte: chunks and staging pieces split between
   bytes), against safeload_convert on the scalar path; any threads, I/O mode, staging size. */
static void test_new_sources_on_load(void) {
    static const safeload_dtype outs[3] = {SAFELOAD_F32, SAFELOAD_F16, SAFELOAD_BF16};
    static const safeload_io ios[3] = {SAFELOAD_IO_READ, SAFELOAD_IO_MMAP, SAFELOAD_IO_DIRECT};
    tl_model m;
    char path[400];
    safeload_model *mod;
    safeload_error e;
    safeload_convert_desc cd;
    int o, th, io, bad = 0;
    size_t k;
    memset(&m, 0, sizeof m);
    memset(&cd, 0, sizeof cd);
    cd.simd = SAFELOAD_SIMD_SCALAR;
    tl_add(&m, "f4.big", SAFELOAD_F4, 1027, 4096);                 /* 2 MiB: several chunks */
    tl_add(&m, "f4.small", SAFELOAD_F4, 3, 6);
    tl_add(&m, "e8m0", SAFELOAD_F8_E8M0, 33, 32);
    tl_add(&m, "fnuz4", SAFELOAD_F8_E4M3FNUZ, 257, 129);
    tl_add(&m, "fnuz5", SAFELOAD_F8_E5M2FNUZ, 65, 1000);
    tl_path(path, sizeof path, "newsrc.safetensors");
    CHECK(tl_save(&m, 0, m.n, path));
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    for (o = 0; o < 3; o++)
        for (th = 1; th <= 3; th += 2)
            for (io = 0; io < 3; io++) {
                safeload_loaded *l;
                safeload_load_desc d;
                memset(&d, 0, sizeof d);
                d.threads = th;
                d.io = ios[io];
                d.staging_size = th == 3 ? 4096 : 0;
                d.chunk_size = io == 1 ? 12288 : 0;
                if (safeload_load_all(mod, outs[o], &d, &l, &e) != SAFELOAD_OK) {
                    CHECK_MSG(0, "%s", e.message);
                    continue;
                }
                for (k = 0; k < l->count; k++) {
                    const tl_tensor *t = tl_get(&m, l->tensors[k].name);
                    uint64_t cnt = t->shape[0] * t->shape[1], dz = safeload_dtype_size(outs[o]);
                    unsigned char *want = (unsigned char *)malloc(cnt * dz + 1);
                    if (safeload_convert_ex(want, outs[o], t->data, t->dtype, (size_t)cnt, &cd) !=
                            SAFELOAD_OK || l->tensors[k].nbytes != cnt * dz ||
                        memcmp(l->tensors[k].data, want, cnt * dz) != 0) {
                        if (!bad) fprintf(stderr, "  %s to %s: wrong bits\n", t->name,
                                          safeload_dtype_name(outs[o]));
                        bad++;
                    }
                    free(want);
                }
                safeload_loaded_free(l);
            }
    CHECK_MSG(bad == 0, "%d tensors cast wrong on load", bad);
    {   /* rows [5, 700) of the big F4 tensor to F16 in a caller buffer with guard bytes, and a
           destination one byte short */
        const tl_tensor *t = tl_get(&m, "f4.big");
        uint64_t cnt = 695 * 4096, i;
        unsigned char *want = (unsigned char *)malloc(cnt * 2);
        unsigned char *buf = (unsigned char *)malloc(cnt * 2 + 64);
        safeload_request rq;
        memset(buf, 0xA5, cnt * 2 + 64);
        CHECK(safeload_convert_ex(want, SAFELOAD_F16, t->data + 5 * 2048, SAFELOAD_F4,
                                  (size_t)cnt, &cd) == SAFELOAD_OK);
        memset(&rq, 0, sizeof rq);
        rq.name = "f4.big"; rq.dtype = SAFELOAD_F16; rq.slice_begin = 5; rq.slice_end = 700;
        rq.dst = buf + 32; rq.dst_size = cnt * 2 - 1;
        CHECK(safeload_load(mod, &rq, 1, NULL, NULL, &e) == SAFELOAD_BUFFER_TOO_SMALL);
        rq.dst_size = cnt * 2;
        CHECK_MSG(safeload_load(mod, &rq, 1, NULL, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK(rq.nbytes == cnt * 2 && memcmp(buf + 32, want, cnt * 2) == 0);
        for (i = 0; i < 32; i++) CHECK(buf[i] == 0xA5 && buf[32 + cnt * 2 + i] == 0xA5);
        free(want);
        free(buf);
    }
    {   /* F4 [3, 6]: one row is 3 bytes, 6 elements; rows [1, 2) to F32 */
        const tl_tensor *t = tl_get(&m, "f4.small");
        float out[6];
        uint32_t want[6];
        safeload_request rq;
        CHECK(safeload_convert_ex(want, SAFELOAD_F32, t->data + 3, SAFELOAD_F4, 6, &cd) == 0);
        memset(&rq, 0, sizeof rq);
        rq.name = "f4.small"; rq.dtype = SAFELOAD_F32; rq.slice_begin = 1; rq.slice_end = 2;
        rq.dst = out; rq.dst_size = sizeof out;
        CHECK(safeload_load(mod, &rq, 1, NULL, NULL, &e) == SAFELOAD_OK);
        CHECK(rq.nbytes == 24 && memcmp(out, want, 24) == 0);
    }
    safeload_model_close(mod);
    tl_free_model(&m);
}

/* The same checkpoint from memory and through a reader that returns short reads. */
typedef struct tl_reader { const unsigned char *p; uint64_t n; long calls, fail_at; int eof_at_half, fail_min; } tl_reader;
static int64_t tl_read(void *user, uint64_t off, void *dst, size_t n) {
    tl_reader *r = (tl_reader *)user;
    long k = __atomic_fetch_add(&r->calls, 1, __ATOMIC_RELAXED);
    if (k == r->fail_at) return r->fail_min ? INT64_MIN : -5;   /* any negative is an error */
    if (r->eof_at_half && off >= r->n / 2) return 0;
    if (off >= r->n) return 0;
    if (n > r->n - off) n = (size_t)(r->n - off);
    if (n > 7) n = n / 2 + (size_t)(k % 5);                  /* short reads */
    memcpy(dst, r->p + off, n);
    return (int64_t)n;
}

/* A reader over a header followed by zeros: a file of any declared size, nothing stored. */
typedef struct tl_zeros { const char *head; uint64_t n; } tl_zeros;
static int64_t tl_zeros_read(void *user, uint64_t off, void *dst, size_t n) {
    const tl_zeros *z = (const tl_zeros *)user;
    size_t i;
    for (i = 0; i < n; i++)
        ((unsigned char *)dst)[i] = off + i < z->n ? (unsigned char)z->head[off + i] : 0;
    return (int64_t)n;
}

/* A tensor bigger than the address space (32-bit): OVERFLOW wherever its bytes are asked
   for, never BUFFER_TOO_SMALL for a buffer no caller could pass. */
static void test_huge_tensor(void) {
    static const char json[] = "{\"big\":{\"dtype\":\"U8\",\"shape\":[4294967312],"
                               "\"data_offsets\":[0,4294967312]},\"s\":{\"dtype\":\"U8\","
                               "\"shape\":[4],\"data_offsets\":[4294967312,4294967316]}}";
    char head[256];
    size_t jn = sizeof json - 1, k;
    tl_zeros z;
    safeload_reader rd;
    safeload_file *f;
    safeload_error e;
    unsigned char buf[16];
    const safeload_tensor *t;
    memset(head, ' ', sizeof head);
    for (k = 0; k < 8; k++) head[k] = (char)(k == 0 ? jn : k == 1 ? jn >> 8 : 0);
    memcpy(head + 8, json, jn);
    z.head = head;
    z.n = 8 + jn;
    memset(&rd, 0, sizeof rd);
    rd.read = tl_zeros_read;
    rd.user = &z;
    rd.size = 8 + jn + 4294967316ULL;
    rd.name = "zeros";
    CHECK_MSG(safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    t = safeload_find(f, "big");
    CHECK(t && t->nbytes == 4294967312ULL);
    if (sizeof(size_t) < 8)
        CHECK(safeload_read(f, t, buf, (size_t)-1, &e) == SAFELOAD_OVERFLOW);
    else
        CHECK(safeload_read(f, t, buf, sizeof buf, &e) == SAFELOAD_BUFFER_TOO_SMALL);
    CHECK_STR(e.tensor, "big");
    memset(buf, 1, sizeof buf);         /* the small tensor past 4 GiB reads */
    CHECK(safeload_read(f, safeload_find(f, "s"), buf, 4, &e) == SAFELOAD_OK);
    CHECK(buf[0] == 0 && buf[3] == 0 && buf[4] == 1);
    safeload_close(f);
    {   /* the same as a sparse file: a view needs the whole file mapped, which a 32-bit
           address space cannot do (an error naming the tensor); mmap loads read instead */
        char p[400];
        FILE *fp;
        safeload_load_desc d;
        safeload_load_stats st;
        safeload_request rq;
        const void *v = NULL;
        size_t al;
        int ok;
        snprintf(p, sizeof p, "%s/huge.safetensors", tl_dir);
        fp = fopen(p, "wb");
        ok = fp && fwrite(head, 1, 8 + jn, fp) == 8 + jn;
        if (fp) ok &= fclose(fp) == 0;
        ok = ok && truncate(p, (off_t)rd.size) == 0;
        CHECK(ok);
        if (!ok) { remove(p); return; }
        CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
        t = safeload_find(f, "s");
        if (sizeof(void *) < 8) {
            CHECK(safeload_view(f, t, &v, &al, &e) == SAFELOAD_IO_ERROR && v == NULL);
            CHECK(e.offset == t->file_offset && strcmp(e.tensor, "s") == 0);
        } else {
            CHECK(safeload_view(f, t, &v, &al, &e) == SAFELOAD_OK && v != NULL &&
                  memcmp(v, "\0\0\0\0", 4) == 0);
        }
        memset(&rq, 0, sizeof rq);
        memset(&d, 0, sizeof d);
        memset(buf, 1, sizeof buf);
        rq.name = "s";
        rq.dst = buf;
        rq.dst_size = 4;
        d.io = SAFELOAD_IO_MMAP;
        d.stats = &st;
        CHECK(safeload_load_file(f, &rq, 1, &d, NULL, &e) == SAFELOAD_OK);
        CHECK(buf[0] == 0 && buf[3] == 0 && buf[4] == 1);
        CHECK(st.io == (sizeof(void *) < 8 ? SAFELOAD_IO_READ : SAFELOAD_IO_MMAP));
        safeload_close(f);
        remove(p);
    }
}

static void test_sources(const tl_model *m, const char *path) {
    size_t n;
    unsigned char *img = tu_slurp(path, &n);
    safeload_file *f;
    safeload_model *mod;
    safeload_loaded *l;
    safeload_error e;
    safeload_reader rd;
    tl_reader tr;
    int th;
    CHECK(img != NULL);
    {   /* a load refused at its arguments still clears every request's outputs */
        safeload_request rq;
        safeload_load_desc d;
        safeload_arena *ar = (safeload_arena *)1;
        CHECK(safeload_open_memory(&f, img, (size_t)n, NULL, &e) == SAFELOAD_OK);
        memset(&rq, 0, sizeof rq);
        rq.name = m->t[0].name;
        rq.data = (void *)0x1234;
        rq.nbytes = 99;
        memset(&d, 0, sizeof d);
        d.io = (safeload_io)7;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(rq.data == NULL && rq.nbytes == 0 && ar == NULL);
        rq.data = (void *)0x1234;
        d.io = SAFELOAD_IO_READ;
        d.upload_align = 3;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(rq.data == NULL && rq.nbytes == 0);
        /* device values outside their enums are refused, like io's */
        d.upload_align = 0;
        d.device = (safeload_device)999;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK_MSG(strstr(e.message, "unknown device 999") != NULL, "%s", e.message);
        d.device = (safeload_device)-1;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        d.device = SAFELOAD_DEVICE_NONE;
        rq.device = 7;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK_STR(e.tensor, m->t[0].name);
        rq.device = -1;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(rq.data == NULL && ar == NULL);
        rq.device = 0;
        CHECK(safeload_load_file(f, &rq, 1, &d, &ar, &e) == SAFELOAD_OK);
        safeload_arena_free(ar);
        /* safeload_read into the bytes it reads from (a memory source): refused, not UB */
        {
            const safeload_tensor *t = safeload_find(f, m->t[0].name);
            unsigned char *src = img + t->file_offset;
            size_t nb = (size_t)t->nbytes;
            CHECK(nb >= 2);
            CHECK(safeload_read(f, t, src - 1, nb, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK_STR(e.tensor, m->t[0].name);
            CHECK(e.offset == t->file_offset);
            CHECK(safeload_read(f, t, src + nb - 1, nb, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(safeload_read(f, t, src, nb, &e) == SAFELOAD_INVALID_ARGUMENT);
            if (t->file_offset >= nb) {     /* just before: fine (it lands in the header) */
                unsigned char *keep = (unsigned char *)malloc(nb);
                memcpy(keep, src - nb, nb);
                CHECK(safeload_read(f, t, src - nb, nb, &e) == SAFELOAD_OK);
                CHECK(memcmp(src - nb, src, nb) == 0);
                memcpy(src - nb, keep, nb);
                free(keep);
            }
        }
        safeload_close(f);
    }
    {   /* a hash seed makes the model's name table repeatable: both keys follow it */
        safeload_model *m1, *m2;
        safeload_model_desc md;
        memset(&md, 0, sizeof md);
        md.open.hash_seed = 42;
        CHECK(safeload_model_open(&m1, path, &md, &e) == SAFELOAD_OK);
        CHECK(safeload_model_open(&m2, path, &md, &e) == SAFELOAD_OK);
        CHECK(m1->k0 == m2->k0 && m1->k1 == m2->k1);
        safeload_model_close(m1);
        safeload_model_close(m2);
    }
    {   /* no files at all (a NULL array with count 0): an empty model */
        CHECK(safeload_model_from_files(&mod, NULL, 0, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_tensor_count(mod) == 0 && safeload_model_shard_count(mod) == 0);
        safeload_model_close(mod);
    }
    {   /* a NULL among the files: INVALID_ARGUMENT, and the others are closed (ownership) */
        safeload_file *two[2] = {NULL, NULL};
        CHECK(safeload_open_memory(&two[0], img, (size_t)n, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_from_files(&mod, two, 2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(mod == NULL && strstr(e.message, "files[1]") != NULL);
        /* one file listed twice: refused, and closed once (ASan would see a double close) */
        CHECK(safeload_open_memory(&two[0], img, (size_t)n, NULL, &e) == SAFELOAD_OK);
        two[1] = two[0];
        CHECK(safeload_model_from_files(&mod, two, 2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(mod == NULL && strstr(e.message, "twice") != NULL);
        {   /* an unknown flag: refused, and the file is closed (ASan would see a leak) */
            safeload_model_desc md;
            memset(&md, 0, sizeof md);
            md.flags = 0x4u;
            CHECK(safeload_open_memory(&two[0], img, (size_t)n, NULL, &e) == SAFELOAD_OK);
            CHECK(safeload_model_from_files(&mod, two, 1, &md, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(mod == NULL && strcmp(e.message, "unknown flags 0x4") == 0);
        }
        /* an allocator without free */
        {
            safeload_model_desc md;
            tl_alloc ta;
            memset(&md, 0, sizeof md);
            md.open.allocator = tl_allocator(&ta, -1);
            md.open.allocator.free = NULL;
            CHECK(safeload_open_memory(&two[0], img, (size_t)n, NULL, &e) == SAFELOAD_OK);
            CHECK(safeload_model_from_files(&mod, two, 1, &md, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(mod == NULL && strstr(e.message, "allocator") != NULL);
        }
    }
    {   /* mmap mode over a memory source maps nothing: the stats say READ */
        safeload_load_desc d;
        safeload_load_stats ls;
        memset(&d, 0, sizeof d);
        d.io = SAFELOAD_IO_MMAP;
        d.stats = &ls;
        CHECK(safeload_open_memory(&f, img, (size_t)n, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_from_files(&mod, &f, 1, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        CHECK(tl_check_loaded(m, l->tensors, l->count) && ls.io == SAFELOAD_IO_READ);
        safeload_loaded_free(l);
        safeload_model_close(mod);
    }
    for (th = 1; th <= 4; th++) {
        safeload_load_desc d;
        if (tu_skip_threads(th, 0)) continue;
        memset(&d, 0, sizeof d);
        d.threads = th;
        d.chunk_size = th == 2 ? 8192 : 0;
        /* memory */
        CHECK(safeload_open_memory(&f, img, (size_t)n, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_from_files(&mod, &f, 1, NULL, &e) == SAFELOAD_OK);
        CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK(tl_check_loaded(m, l->tensors, l->count));
        safeload_loaded_free(l);
        safeload_model_close(mod);
        /* reader with short reads */
        memset(&tr, 0, sizeof tr);
        tr.p = img; tr.n = n; tr.fail_at = -1;
        memset(&rd, 0, sizeof rd);
        rd.read = tl_read; rd.size = n; rd.user = &tr; rd.name = "test-reader";
        CHECK(safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_from_files(&mod, &f, 1, NULL, &e) == SAFELOAD_OK);
        CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK(tl_check_loaded(m, l->tensors, l->count));
        safeload_loaded_free(l);
        safeload_model_close(mod);
    }
    /* small tensors back to back whose run is larger than a staging buffer, from a reader in
       every I/O mode (a reader has no mapping: mmap mode must stage it in pieces) */
    {
        static unsigned char a[200000], b[200000];
        uint64_t sh[1] = {200000};
        safeload_save_tensor st[2];
        void *img2 = NULL;
        size_t n2 = 0, q;
        int io;
        memset(st, 0, sizeof st);
        st[0].name = "a"; st[0].dtype = SAFELOAD_U8; st[0].rank = 1; st[0].shape = sh;
        st[0].data = a; st[0].nbytes = sizeof a;
        st[1] = st[0]; st[1].name = "b"; st[1].data = b;
        for (q = 0; q < sizeof a; q++) { a[q] = (unsigned char)(q * 7); b[q] = (unsigned char)(q * 13 + 1); }
        CHECK(safeload_serialize(&img2, &n2, st, 2, NULL, &e) == SAFELOAD_OK);
        for (io = SAFELOAD_IO_DEFAULT; io <= SAFELOAD_IO_AUTO; io++) {
            safeload_load_desc d;
            safeload_load_stats ls;
            memset(&d, 0, sizeof d);
            d.threads = 1;
            d.io = (safeload_io)io;
            d.stats = &ls;
            memset(&tr, 0, sizeof tr);
            tr.p = (const unsigned char *)img2; tr.n = n2; tr.fail_at = -1;
            memset(&rd, 0, sizeof rd);
            rd.read = tl_read; rd.size = n2; rd.user = &tr; rd.name = "test-reader";
            CHECK(safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_OK);
            CHECK(safeload_model_from_files(&mod, &f, 1, NULL, &e) == SAFELOAD_OK);
            CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK,
                      "io %d: %s", io, e.message);
            CHECK(l->count == 2 && l->tensors[0].nbytes == sizeof a && l->tensors[1].nbytes == sizeof b);
            CHECK_MSG(ls.io == SAFELOAD_IO_READ, "io %d ran as %d", io, (int)ls.io); /* no mapping */
            CHECK(memcmp(l->tensors[0].data, a, sizeof a) == 0);
            CHECK(memcmp(l->tensors[1].data, b, sizeof b) == 0);
            safeload_loaded_free(l);
            safeload_model_close(mod);
        }
        safeload_free(img2, NULL);
    }
    /* a reader that fails at its k-th call, for every k: IO_ERROR naming the reader and a
       tensor, or success once k is past the last call */
    {
        long k, total_calls;
        memset(&tr, 0, sizeof tr);
        tr.p = img; tr.n = n; tr.fail_at = -1;
        memset(&rd, 0, sizeof rd);
        rd.read = tl_read; rd.size = n; rd.user = &tr; rd.name = "test-reader";
        CHECK(safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_OK);
        tr.calls = 0;
        CHECK(safeload_model_from_files(&mod, &f, 1, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
        safeload_loaded_free(l);
        total_calls = tr.calls;
        for (k = 0; k < total_calls + 2; k += 1 + total_calls / 40) {
            safeload_load_desc d;
            safeload_result r;
            memset(&d, 0, sizeof d);
            d.threads = 1 + (int)(k % 3);
            tr.calls = 0;
            tr.fail_at = k;
            tr.fail_min = (int)(k & 1);
            r = safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e);
            if (k < total_calls) {
                CHECK_MSG(r == SAFELOAD_IO_ERROR && l == NULL, "k=%ld: %s", k, safeload_result_id(r));
                CHECK_STR(e.file, "test-reader");
                CHECK(e.tensor[0] != 0 && e.offset != SAFELOAD_NO_OFFSET);
            } else {
                CHECK(r == SAFELOAD_OK);
                safeload_loaded_free(l);
            }
        }
        /* the data ends early: UNEXPECTED_EOF */
        tr.fail_at = -1;
        tr.eof_at_half = 1;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_UNEXPECTED_EOF);
        safeload_model_close(mod);
    }
    free(img);
}

/* EINTR, short reads and an error at the k-th read of a real file. */
static void test_io_faults(const tl_model *m, const char *path) {
    safeload_model *mod;
    safeload_loaded *l;
    safeload_error e;
    safeload_load_desc d;
    long k, reads;
    int mode;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    for (mode = FI_EINTR; mode <= FI_SHORT; mode++) {
        int th;
        for (th = 1; th <= 3; th++) {
            memset(&d, 0, sizeof d);
            d.threads = th;
            d.chunk_size = 65536;
            fi_set(mode, -1);
            CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK,
                      "mode %d: %s", mode, e.message);
            fi_set(FI_NONE, -1);
            CHECK(tl_check_loaded(m, l->tensors, l->count));
            safeload_loaded_free(l);
        }
    }
    memset(&d, 0, sizeof d);
    d.threads = 1;
    d.chunk_size = 65536;
    fi_set(FI_NONE, -1);
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
    safeload_loaded_free(l);
    reads = fi_count;
    for (k = 0; k <= reads; k += tu_quick() ? 1 + reads / 50 : 1) {
        safeload_result r;
        d.threads = 1 + (int)(k % 4);
        fi_set(FI_FAIL_AT, k);
        r = safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e);
        fi_set(FI_NONE, -1);
        if (r == SAFELOAD_OK) { safeload_loaded_free(l); CHECK(k >= reads); continue; }
        CHECK_MSG(r == SAFELOAD_IO_ERROR && !l, "k=%ld: %s", k, safeload_result_id(r));
        CHECK(strstr(e.file, "mixed") != NULL);
        CHECK(e.tensor[0] != 0);
        CHECK(e.offset != SAFELOAD_NO_OFFSET && e.offset < safeload_file_size(safeload_model_shard(mod, 0)));
    }
    safeload_model_close(mod);
}

/* ---- shards ---- */
static void tl_write_text(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    fputs(text, fp);
    fclose(fp);
}

/* 4 shards of m plus an index (extra: a JSON fragment appended inside weight_map). */
static void tl_write_index(const tl_model *m, const char *idx, const char *extra,
                           const char *const *shard_of) {
    size_t i, cap = 1 << 20, at = 0;
    char *s = (char *)malloc(cap);
    at += (size_t)snprintf(s + at, cap - at, "{\n  \"metadata\": {\"total_size\": 123, \"format\": \"pt\"},\n  \"weight_map\": {");
    for (i = 0; i < m->n; i++) {
        if (at + 512 > cap) s = (char *)realloc(s, cap *= 2);
        at += (size_t)snprintf(s + at, cap - at, "%s\n    \"%s\": \"%s\"", i ? "," : "",
                               m->t[i].name, shard_of[i]);
    }
    at += (size_t)snprintf(s + at, cap - at, "%s\n  }\n}\n", extra ? extra : "");
    tl_write_text(idx, s);
    free(s);
}

/* A caller's allocator (a lock-free bump allocator is a fair thing to pass) is never called
   from two threads at once, though shard headers are opened in parallel; the shards keep it. */
static void test_shard_allocator(void) {
    char sub[300];
    int round, with_realloc;
    snprintf(sub, sizeof sub, "%s/sharded", tl_dir);
    for (with_realloc = 0; with_realloc < 2; with_realloc++)
        for (round = 0; round < (tu_quick() ? 3 : 10); round++) {
            tl_excl x;
            safeload_model_desc md;
            safeload_model *mod = NULL;
            safeload_loaded *l = NULL;
            safeload_error e;
            memset(&x, 0, sizeof x);
            memset(&md, 0, sizeof md);
            md.open.allocator = tl_allocator(&x.base, -1);
            md.open.allocator.alloc = tl_excl_malloc;
            md.open.allocator.realloc = with_realloc ? tl_excl_realloc : NULL;
            md.open.allocator.free = tl_excl_free;
            md.open.allocator.user = &x;
            md.threads = 4;
            CHECK_MSG(safeload_model_open(&mod, sub, &md, &e) == SAFELOAD_OK, "%s", e.message);
            CHECK_EQ_U64(safeload_model_shard_count(mod), 4);
            CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
            safeload_loaded_free(l);
            safeload_model_close(mod);
            CHECK_MSG(x.overlaps == 0, "allocator entered from 2 threads at once %d times",
                      x.overlaps);
            CHECK_MSG(x.base.live == 0, "%ld allocations left", x.base.live);
            CHECK(x.base.calls > 8);
        }
}

/* Every tensor of mod is found by name as safeload_model_tensor_at gives it, and check_keys with
   all but the first two names, plus two unknown ones (one of them twice), reports exactly those:
   the unknown ones in the order given, the first two in model order. Needs two tensors. */
static void tl_check_model_names(safeload_model *mod) {
    size_t n = safeload_model_tensor_count(mod), i, sh, sh2;
    const char **exp = (const char **)malloc((n + 1) * sizeof *exp);
    safeload_key_report rep;
    safeload_error e;
    CHECK(exp != NULL && n >= 2);
    if (!exp || n < 2) { free((void *)exp); return; }
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_model_tensor_at(mod, i, &sh);
        sh2 = 99;
        CHECK(t != NULL && safeload_model_find(mod, t->name, &sh2) == t && sh2 == sh);
        if (i >= 2) exp[i - 2] = t->name;
    }
    exp[n - 2] = "no.such.tensor";
    exp[n - 1] = "another.missing";
    exp[n] = "no.such.tensor";
    CHECK(safeload_model_find(mod, "no.such.tensor", NULL) == NULL);
    CHECK(safeload_model_check_keys(mod, exp, n + 1, &rep, &e) == SAFELOAD_OK);
    CHECK_EQ_U64(rep.missing_count, 2);
    CHECK_EQ_U64(rep.unexpected_count, 2);
    if (rep.missing_count == 2 && rep.unexpected_count == 2) {
        CHECK_STR(rep.missing[0], "no.such.tensor");
        CHECK_STR(rep.missing[1], "another.missing");
        CHECK(rep.unexpected[0] == safeload_model_tensor_at(mod, 0, NULL)->name);
        CHECK(rep.unexpected[1] == safeload_model_tensor_at(mod, 1, NULL)->name);
    }
    safeload_key_report_free(&rep);
    free((void *)exp);
}

static void test_shards(const tl_model *m) {
    char sub[300], p[400], idx[400];
    const char **shard_of = (const char **)calloc(m->n, sizeof(char *));
    static const char *const names[4] = {"model-00001-of-00004.safetensors",
        "model-00002-of-00004.safetensors", "model-00003-of-00004.safetensors",
        "model-00004-of-00004.safetensors"};
    size_t i, q = (m->n + 3) / 4;
    safeload_model *mod;
    safeload_loaded *l;
    safeload_error e;
    safeload_model_desc md;
    int th;
    snprintf(sub, sizeof sub, "%s/sharded", tl_dir);
    mkdir(sub, 0755);
    for (i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", sub, names[i]);
        CHECK(tl_save(m, i * q, SL__MIN((i + 1) * q, m->n), p));
    }
    for (i = 0; i < m->n; i++) shard_of[i] = names[i / q];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", sub);
    tl_write_index(m, idx, NULL, shard_of);

    /* the index file, and the directory holding it */
    for (th = 1; th <= 8; th += tu_quick() ? 3 : 1) {
        safeload_load_desc d;
        uint64_t h = TU_FNV_BASIS, want = TU_FNV_BASIS;
        const char *open_path = th % 2 ? idx : sub;
        memset(&md, 0, sizeof md);
        md.threads = th;
        CHECK_MSG(safeload_model_open(&mod, open_path, &md, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK_EQ_U64(safeload_model_shard_count(mod), 4);
        CHECK_EQ_U64(safeload_model_tensor_count(mod), m->n);
        CHECK_EQ_U64(safeload_model_metadata_count(mod), 2);
        CHECK_STR(safeload_model_metadata_at(mod, 0)->value, "123");
        if (th == 1) tl_check_model_names(mod);
        if (th == 1) {  /* the same shards as files given, without the index */
            safeload_file *fs[4];
            safeload_model *m3;
            for (i = 0; i < 4; i++) {
                snprintf(p, sizeof p, "%s/%s", sub, names[i]);
                CHECK(safeload_open(&fs[i], p, NULL, &e) == SAFELOAD_OK);
            }
            CHECK(safeload_model_from_files(&m3, fs, 4, NULL, &e) == SAFELOAD_OK);
            CHECK_EQ_U64(safeload_model_tensor_count(m3), m->n);
            tl_check_model_names(m3);
            {   /* an error that belongs to no one of several files names none */
                safeload_request q;
                safeload_arena *ar = NULL;
                memset(&q, 0, sizeof q);
                q.name = "no.such.tensor";
                CHECK(safeload_load(m3, &q, 1, NULL, &ar, &e) == SAFELOAD_NOT_FOUND);
                CHECK_STR(e.file, "");
                CHECK_STR(e.tensor, "no.such.tensor");
            }
            for (i = 0; i < m->n; i++) {        /* the same tensors in the same order */
                size_t s1 = 9, s3 = 9;
                CHECK_STR(safeload_model_tensor_at(m3, i, &s3)->name,
                          safeload_model_tensor_at(mod, i, &s1)->name);
                CHECK(s1 == s3);
            }
            safeload_model_close(m3);
        }
        memset(&d, 0, sizeof d);
        d.threads = th;
        d.io = (safeload_io)(1 + th % 4);
        CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK(tl_check_loaded(m, l->tensors, l->count));
        /* model order: shards by file name, tensors by offset; the checksum equals the FNV of
           the shards' data sections one after the other */
        for (i = 0; i < l->count; i++) {   /* loaded in host order; the files little-endian */
            size_t nb = (size_t)l->tensors[i].nbytes;
            unsigned char *le = (unsigned char *)malloc(nb + 1);
            if (!le) continue;
            memcpy(le, l->tensors[i].data, nb);
            TU_LE_DT(le, nb, l->tensors[i].tensor->dtype);
            h = tu_fnv1a(le, nb, h);
            free(le);
        }
        for (i = 0; i < 4; i++) {
            safeload_file *f = safeload_model_shard(mod, i);
            size_t n;
            unsigned char *img;
            snprintf(p, sizeof p, "%s/%s", sub, names[i]);
            img = tu_slurp(p, &n);
            want = tu_fnv1a(img + safeload_data_offset(f), (size_t)safeload_data_size(f), want);
            free(img);
        }
        CHECK_EQ_U64(h, want);
        safeload_loaded_free(l);
        if (th == 1) {  /* mmap maps only the shards a load reads; 32-bit keeps no mapping */
            safeload_load_desc dm;
            safeload_load_stats st;
            safeload_request rq;
            safeload_arena *arena = NULL;
            safeload_model *m2;
            size_t k;
            CHECK(safeload_model_open(&m2, idx, NULL, &e) == SAFELOAD_OK);
            memset(&rq, 0, sizeof rq);
            memset(&dm, 0, sizeof dm);
            rq.name = m->t[0].name;                     /* in the first shard */
            dm.io = SAFELOAD_IO_MMAP;
            dm.stats = &st;
            CHECK(m->t[0].nbytes > 0);
            CHECK(safeload_load(m2, &rq, 1, &dm, &arena, &e) == SAFELOAD_OK);
            CHECK(st.io == SAFELOAD_IO_MMAP && rq.nbytes == m->t[0].nbytes &&
                  memcmp(rq.data, m->t[0].data, (size_t)m->t[0].nbytes) == 0);
            CHECK((safeload_model_shard(m2, 0)->map != NULL) == !SL__MAP_PER_LOAD);
            for (k = 1; k < 4; k++) CHECK(safeload_model_shard(m2, k)->map == NULL);
            safeload_arena_free(arena);
            safeload_model_close(m2);
        }
        {   /* out of file descriptors: the shards are there, so IO_ERROR saying so, not
               INDEX_SHARD_MISSING (in a child, whose limit can be lowered freely) */
            pid_t pid;
            int status = -1;
            fflush(stdout);
            pid = fork();
            if (pid == 0) {
                struct rlimit rl;
                safeload_model_desc md1;
                safeload_model *m1 = NULL;
                int fd = open("/dev/null", O_RDONLY), ok;
                close(fd);
                getrlimit(RLIMIT_NOFILE, &rl);
                rl.rlim_cur = (rlim_t)fd + 2;        /* the index, then two of four shards */
                setrlimit(RLIMIT_NOFILE, &rl);
                memset(&md1, 0, sizeof md1);
                md1.threads = 1;
                ok = safeload_model_open(&m1, idx, &md1, &e) == SAFELOAD_IO_ERROR && !m1 &&
                     strstr(e.message, "too many open files") != NULL &&
                     strstr(e.file, "model-0000") != NULL;
                if (!ok) fprintf(stderr, "fd limit: %s: %s\n", safeload_result_id(e.code), e.message);
                _exit(ok ? 0 : 1);
            }
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        {   /* an index named .JSON (a FAT drive, a Windows tool) is still read as an index */
            char up[400];
            safeload_model *m2;
            snprintf(up, sizeof up, "%s/MODEL.SAFETENSORS.INDEX.JSON", sub);
            CHECK(rename(idx, up) == 0);
            CHECK_MSG(safeload_model_open(&m2, up, NULL, &e) == SAFELOAD_OK, "%s", e.message);
            CHECK(safeload_model_has_index(m2) && safeload_model_tensor_count(m2) == m->n);
            safeload_model_close(m2);
            CHECK(rename(up, idx) == 0);
        }
        {   /* a name the model lacks is the model's error: it names the index, not a shard */
            safeload_request rq;
            safeload_arena *arena;
            memset(&rq, 0, sizeof rq);
            rq.name = "no.such.tensor";
            CHECK(safeload_load(mod, &rq, 1, NULL, &arena, &e) == SAFELOAD_NOT_FOUND);
            CHECK_STR(e.tensor, "no.such.tensor");
            CHECK_STR(e.file, idx);
        }
        safeload_model_close(mod);
    }

    /* every index error */
    {
        char bad[400];
        const char *keep0 = shard_of[0];
        /* a tensor the index puts in shard 2 but is in shard 1 */
        shard_of[0] = names[1];
        tl_write_index(m, idx, NULL, shard_of);
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INDEX_WRONG_SHARD);
        CHECK_STR(e.tensor, m->t[0].name);
        shard_of[0] = keep0;
        /* the index names a tensor no shard holds */
        tl_write_index(m, idx, ",\n    \"ghost.weight\": \"model-00002-of-00004.safetensors\"", shard_of);
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INDEX_MISSING_TENSOR);
        CHECK_STR(e.tensor, "ghost.weight");
        /* a listed shard that is missing */
        tl_write_index(m, idx, ",\n    \"ghost.weight\": \"model-00009-of-00009.safetensors\"", shard_of);
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INDEX_SHARD_MISSING);
        CHECK(strstr(e.file, "model-00009-of-00009") != NULL);
        CHECK_STR(e.tensor, "ghost.weight");        /* the tensor the index puts there */
        /* a name listed twice in weight_map */
        snprintf(bad, sizeof bad, ",\n    \"%s\": \"%s\"", m->t[1].name, shard_of[1]);
        tl_write_index(m, idx, bad, shard_of);
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        /* a shard name that climbs out of the directory */
        tl_write_index(m, idx, ",\n    \"x\": \"../outside.safetensors\"", shard_of);
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        tl_write_index(m, idx, ",\n    \"x\": \"/etc/passwd\"", shard_of);
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        /* malformed JSON, and no weight_map */
        tl_write_text(idx, "{\"weight_map\": {\"a\": \"b.safetensors\",}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK(e.offset == 37 && e.tensor[0] == 0);     /* a trailing comma is no entry's fault */
        tl_write_text(idx, "{\"metadata\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        tl_write_text(idx, "{\"metadata\": {\"a\": \"1\"}, \"weight_map\": {}, \"metadata\": {\"b\": \"2\"}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
        CHECK_MSG(e.offset == 43 && strstr(e.message, "duplicate field `metadata`"), "%llu %s",
                  (unsigned long long)e.offset, e.message);
        tl_write_text(idx, "{\"metadata\": null, \"weight_map\": {}, \"metadata\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
        tl_write_text(idx, "{\"weight_map\": {}, \"weight_map\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
        CHECK_MSG(e.offset == 19 && strstr(e.message, "duplicate field `weight_map`"), "%llu %s",
                  (unsigned long long)e.offset, e.message);
        tl_write_text(idx, "{\"weight_map\": {\"a\": 1}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK(strcmp(e.tensor, "a") == 0 && e.offset == 21);     /* names the tensor */
        CHECK(strstr(e.message, "metadata") == NULL);
        /* an error in a metadata value names the key and says where it is */
        tl_write_text(idx, "{\"metadata\": {\"total_size\": 1e400}, \"weight_map\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK_MSG(strcmp(e.tensor, "total_size") == 0 &&
                  strstr(e.message, " in the index's metadata") != NULL, "%s: %s", e.tensor,
                  e.message);
        tl_write_text(idx, "{\"metadata\": {\"k\": 1, \"k\": 2}, \"weight_map\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX && mod == NULL);
        CHECK(e.offset == 22 && strcmp(e.tensor, "k") == 0);          /* the second "k" */
        /* ... whatever the values, kept or not */
        tl_write_text(idx, "{\"metadata\": {\"k\": true, \"k\": \"2\"}, \"weight_map\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX && mod == NULL);
        CHECK(e.offset == 25 && strcmp(e.tensor, "k") == 0);
        tl_write_text(idx, "{\"metadata\": {\"k\": {}, \"k\": []}, \"weight_map\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX && mod == NULL);
        tl_write_text(idx, "{\"metadata\": {\"a\": null, \"b\": \"x\", \"c\": [1], \"d\": 7}, "
                           "\"weight_map\": {}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_OK);
        CHECK_EQ_U64(safeload_model_metadata_count(mod), 2);
        CHECK_STR(safeload_model_metadata_at(mod, 0)->key, "b");
        CHECK_STR(safeload_model_metadata_at(mod, 1)->value, "7");
        safeload_model_close(mod);
        /* a number kept as text, then a bad byte: the message names that byte, not a NUL */
        tl_write_text(idx, "{\"metadata\":{\"a\":1\"b\":\"c\"},\"weight_map\":{}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK_MSG(e.offset == 18 && strstr(e.message, "found `\"`") != NULL, "%s", e.message);
        tl_write_text(idx, "{\"metadata\":{\"a\":12x},\"weight_map\":{}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK_MSG(e.offset == 19 && strstr(e.message, "found `x`") != NULL, "%s", e.message);
        tl_write_text(idx, "{\"weight_map\": {}}");           /* an empty model: no shard */
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_shard_count(mod) == 0 && safeload_model_tensor_count(mod) == 0);
        CHECK(safeload_model_has_index(mod) == 1);
        safeload_model_close(mod);
        /* \u0000 in a tensor name or in a shard file name: each error names its own string */
        tl_write_text(idx, "{\"weight_map\": {\"a\\u0000b\": \"b.safetensors\"}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK(e.offset == 16 && strstr(e.message, "tensor name") != NULL);
        tl_write_text(idx, "{\"weight_map\": {\"ab\": \"b\\u0000.safetensors\"}}");
        CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INVALID_INDEX);
        CHECK(e.offset == 22 && strstr(e.message, "shard file name") != NULL);
        /* one shard under two spellings ("./s.safetensors", "x/./../"...) is one shard */
        {
            char d3[300], f3[400], i3[400];
            tl_model s3;
            memset(&s3, 0, sizeof s3);
            snprintf(d3, sizeof d3, "%s/dots", tl_dir);
            mkdir(d3, 0755);
            snprintf(f3, sizeof f3, "%s/s.safetensors", d3);
            snprintf(i3, sizeof i3, "%s/model.safetensors.index.json", d3);
            tl_add(&s3, "a", SAFELOAD_F32, 1, 2);
            tl_add(&s3, "b", SAFELOAD_F32, 1, 2);
            tl_add(&s3, "c", SAFELOAD_F32, 1, 2);
            CHECK(tl_save(&s3, 0, s3.n, f3));
            tl_write_text(i3, "{\"weight_map\": {\"a\": \"s.safetensors\", \"b\": \"./s.safetensors\","
                              " \"c\": \"././s.safetensors\"}}");
            CHECK_MSG(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_OK, "%s", e.message);
            CHECK(mod && safeload_model_shard_count(mod) == 1 && safeload_model_tensor_count(mod) == 3);
            safeload_model_close(mod);
            /* "." alone, or "./", names no file */
            tl_write_text(i3, "{\"weight_map\": {\"a\": \"./\"}}");
            CHECK(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
            tl_write_text(i3, "{\"weight_map\": {\"a\": \".\"}}");
            CHECK(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
            tl_write_text(i3, "{\"weight_map\": {\"a\": \"./../s.safetensors\"}}");
            CHECK(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
            tl_write_text(i3, "{\"weight_map\": {\"a\": \"s.safetensors/.\"}}");
            CHECK(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
            /* the message quotes the name as written */
            tl_write_text(i3, "{\"weight_map\": {\"a\": \".//s.safetensors\"}}");
            CHECK(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_INVALID_INDEX && !mod);
            CHECK_MSG(strstr(e.message, "\".//s.safetensors\"") != NULL, "%s", e.message);
            /* on POSIX a backslash is part of a name: ".\\s.safetensors" is not s.safetensors */
            tl_write_text(i3, "{\"weight_map\": {\"a\": \"s.safetensors\", \"b\": \".\\\\s.safetensors\"}}");
            CHECK(safeload_model_open(&mod, i3, NULL, &e) == SAFELOAD_INDEX_SHARD_MISSING && !mod);
            unlink(i3);
            unlink(f3);
            rmdir(d3);
            tl_free_model(&s3);
        }
        /* a tensor in a shard that the index does not list: a warning, or an error in strict
           mode; either way it is not part of the model */
        tl_write_index(m, idx, NULL, shard_of);
        {
            char one[400];
            /* shard 4 rewritten with a stray tensor added */
            snprintf(one, sizeof one, "%s/%s", sub, names[3]);
            {
                tl_model s4;
                memset(&s4, 0, sizeof s4);
                for (i = 3 * q; i < m->n; i++) {
                    tl_add(&s4, m->t[i].name, m->t[i].dtype, m->t[i].shape[0], m->t[i].shape[1]);
                    memcpy(s4.t[s4.n - 1].data, m->t[i].data, m->t[i].nbytes);
                }
                tl_add(&s4, "stray.weight", SAFELOAD_F32, 2, 2);
                CHECK(tl_save(&s4, 0, s4.n, one));
                CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_OK);
                CHECK_EQ_U64(safeload_model_warning_count(mod), 1);
                CHECK(safeload_model_warning(mod, 0)->code == SAFELOAD_INDEX_UNLISTED_TENSOR);
                CHECK_STR(safeload_model_warning(mod, 0)->tensor, "stray.weight");
                CHECK(safeload_model_find(mod, "stray.weight", NULL) == NULL);
                CHECK_EQ_U64(safeload_model_tensor_count(mod), m->n);
                tl_check_model_names(mod);      /* the stray one is not unexpected either */
                CHECK_EQ_U64(safeload_model_tensor_count(mod), m->n);
                {   /* nor can a pointer from the shard bring it back into a load */
                    safeload_request rq;
                    safeload_arena *ar;
                    const safeload_file *sh = safeload_model_shard(mod, 3);
                    memset(&rq, 0, sizeof rq);
                    rq.tensor = safeload_find(sh, "stray.weight");
                    CHECK(rq.tensor != NULL);
                    rq.name = rq.tensor->name;
                    rq.shard = 3;
                    CHECK(safeload_load(mod, &rq, 1, NULL, &ar, &e) == SAFELOAD_NOT_FOUND);
                    CHECK(ar == NULL && rq.data == NULL);
                    /* a listed one given the same way still loads */
                    memset(&rq, 0, sizeof rq);
                    rq.tensor = safeload_find(sh, m->t[m->n - 1].name);
                    rq.name = rq.tensor->name;
                    rq.shard = 3;
                    CHECK(safeload_load(mod, &rq, 1, NULL, &ar, &e) == SAFELOAD_OK);
                    CHECK(memcmp(rq.data, m->t[m->n - 1].data, m->t[m->n - 1].nbytes) == 0);
                    safeload_arena_free(ar);
                }
                safeload_model_close(mod);
                {   /* a warning lost to a failed allocation fails the open: every k */
                    long k;
                    int done = 0;
                    for (k = 0; !done && k < 10000; k++) {
                        tl_alloc ta;
                        safeload_result rr;
                        memset(&md, 0, sizeof md);
                        md.open.allocator = tl_allocator(&ta, k);
                        md.threads = 1;
                        rr = safeload_model_open(&mod, idx, &md, &e);
                        if (rr == SAFELOAD_OK) {    /* a failure it could do without */
                            CHECK_MSG(safeload_model_warning_count(mod) == 1, "k %ld", k);
                            safeload_model_close(mod);
                            done = ta.calls <= k;       /* nothing failed: the end */
                        } else {
                            CHECK_MSG(rr == SAFELOAD_OUT_OF_MEMORY && mod == NULL, "k %ld: %s",
                                      k, e.message);
                        }
                    }
                    CHECK(done);
                }
                memset(&md, 0, sizeof md);
                md.flags = SAFELOAD_MODEL_STRICT | 0x10u;      /* a flag this header lacks */
                CHECK(safeload_model_open(&mod, idx, &md, &e) == SAFELOAD_INVALID_ARGUMENT);
                CHECK(mod == NULL && strcmp(e.message, "unknown flags 0x11") == 0);
                md.flags = SAFELOAD_MODEL_STRICT;
                CHECK(safeload_model_open(&mod, idx, &md, &e) == SAFELOAD_INDEX_UNLISTED_TENSOR);
                CHECK_MSG(strstr(e.message, "left out") == NULL &&
                          strstr(e.message, "SAFELOAD_MODEL_STRICT") != NULL, "%s", e.message);
                /* the same tensor in two shards */
                s4.n--;
                free(s4.t[s4.n].data);
                tl_add(&s4, m->t[0].name, m->t[0].dtype, m->t[0].shape[0], m->t[0].shape[1]);
                CHECK(tl_save(&s4, 0, s4.n, one));
                CHECK(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_INDEX_DUPLICATE_TENSOR);
                CHECK_STR(e.tensor, m->t[0].name);
                CHECK_STR(e.file, one);         /* the second place, naming the first */
                snprintf(p, sizeof p, "tensor is also in %s/%s", sub, names[0]);
                CHECK_STR(e.message, p);
                {   /* the same files without the index: the same error */
                    safeload_file *fs[4];
                    for (i = 0; i < 4; i++) {
                        snprintf(p, sizeof p, "%s/%s", sub, names[i]);
                        CHECK(safeload_open(&fs[i], p, NULL, &e) == SAFELOAD_OK);
                    }
                    CHECK(safeload_model_from_files(&mod, fs, 4, NULL, &e) ==
                          SAFELOAD_INDEX_DUPLICATE_TENSOR);
                    CHECK_STR(e.tensor, m->t[0].name);
                    CHECK_STR(e.file, one);
                    snprintf(p, sizeof p, "tensor is also in %s/%s", sub, names[0]);
                    CHECK_STR(e.message, p);
                }
                tl_free_model(&s4);
            }
            CHECK(tl_save(m, 3 * q, m->n, one));
        }
        /* a directory with no index and one file opens that file; with two, it is an error */
        {
            char d2[300], f2[400];
            snprintf(d2, sizeof d2, "%s/single", tl_dir);
            mkdir(d2, 0755);
            snprintf(f2, sizeof f2, "%s/only.safetensors", d2);
            CHECK(tl_save(m, 0, 5, f2));
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK_EQ_U64(safeload_model_tensor_count(mod), 5);
            tl_check_model_names(mod);          /* looked up in the file's own table */
            {   /* one file given: its errors name it, as when it was opened by path */
                safeload_file *one = NULL;
                safeload_model *m1;
                safeload_request q;
                safeload_arena *ar = NULL;
                CHECK(safeload_open(&one, f2, NULL, &e) == SAFELOAD_OK);
                CHECK(safeload_model_from_files(&m1, &one, 1, NULL, &e) == SAFELOAD_OK);
                tl_check_model_names(m1);
                memset(&q, 0, sizeof q);
                q.name = "no.such.tensor";
                CHECK(safeload_load(m1, &q, 1, NULL, &ar, &e) == SAFELOAD_NOT_FOUND);
                CHECK_STR(e.file, f2);
                CHECK(safeload_load(mod, &q, 1, NULL, &ar, &e) == SAFELOAD_NOT_FOUND);
                CHECK_STR(e.file, f2);
                safeload_model_close(m1);
            }
            CHECK(safeload_model_has_index(mod) == 0 && safeload_model_has_index(NULL) == 0);
            safeload_model_close(mod);
            snprintf(f2, sizeof f2, "%s/model.safetensors", d2);      /* folders: ignored */
            CHECK(mkdir(f2, 0755) == 0);
            snprintf(f2, sizeof f2, "%s/x.safetensors.index.json", d2);
            CHECK(mkdir(f2, 0755) == 0);
            CHECK_MSG(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK, "%s", e.message);
            CHECK_EQ_U64(safeload_model_tensor_count(mod), 5);
            safeload_model_close(mod);
            CHECK(rmdir(f2) == 0);
            snprintf(f2, sizeof f2, "%s/model.safetensors", d2);
            CHECK(rmdir(f2) == 0);
            snprintf(f2, sizeof f2, "%s/._only.safetensors", d2);     /* hidden: ignored */
            tl_write_text(f2, "Mac OS X AppleDouble");
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK_EQ_U64(safeload_model_tensor_count(mod), 5);
            safeload_model_close(mod);
            snprintf(f2, sizeof f2, "%s/second.safetensors", d2);
            CHECK(tl_save(m, 5, 9, f2));
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK_MSG(strstr(e.message, "2 .safetensors files: name one") != NULL, "%s", e.message);
            /* ... unless one is model.safetensors */
            snprintf(f2, sizeof f2, "%s/model.safetensors", d2);
            CHECK(tl_save(m, 2, 9, f2));
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK_EQ_U64(safeload_model_tensor_count(mod), 7);
            CHECK(strstr(safeload_model_shard(mod, 0)->path, "/model.safetensors") != NULL);
            safeload_model_close(mod);
            /* two indexes: the listing order must not choose; model.* is chosen when there */
            snprintf(f2, sizeof f2, "%s/a.safetensors.index.json", d2);
            tl_write_text(f2, "not json");
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_INVALID_INDEX);
            snprintf(f2, sizeof f2, "%s/b.safetensors.index.json", d2);
            tl_write_text(f2, "not json either");
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT && mod == NULL);
            snprintf(f2, sizeof f2, "%s/model.safetensors.index.json", d2);
            tl_write_text(f2, "{\"weight_map\": {}}");
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK(safeload_model_tensor_count(mod) == 0);
            safeload_model_close(mod);
        }
        /* a variant's index (transformers/diffusers: model.safetensors.index.fp16.json over
           model.fp16-0000N-of-00002.safetensors) is taken when it is the only index and every
           .safetensors file is of that variant; a plain file beside it wins or makes it "name
           one", and two variant indexes are "name one" */
        {
            char d2[300], f2[400];
            const char *const of[2] = {"model.fp16-00001-of-00002.safetensors",
                                       "model.fp16-00002-of-00002.safetensors"};
            const char **so = (const char **)calloc(m->n, sizeof(char *));
            size_t k, half = m->n / 2;
            for (k = 0; k < m->n; k++) so[k] = of[k >= half];
            snprintf(d2, sizeof d2, "%s/variant", tl_dir);
            mkdir(d2, 0755);
            snprintf(f2, sizeof f2, "%s/%s", d2, of[0]);
            CHECK(tl_save(m, 0, half, f2));
            snprintf(f2, sizeof f2, "%s/%s", d2, of[1]);
            CHECK(tl_save(m, half, m->n, f2));
            snprintf(f2, sizeof f2, "%s/model.safetensors.index.fp16.json", d2);
            tl_write_index(m, f2, NULL, so);
            snprintf(f2, sizeof f2, "%s/model.safetensors.index.fp16.json.bak", d2);
            tl_write_text(f2, "not a candidate");
            CHECK_MSG(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK, "%s", e.message);
            CHECK(safeload_model_has_index(mod) && safeload_model_shard_count(mod) == 2);
            CHECK_EQ_U64(safeload_model_tensor_count(mod), m->n);
            CHECK(strstr(safeload_model_shard(mod, 1)->path, of[1]) != NULL);
            safeload_model_close(mod);
            /* an unmarked file beside them: this index is not the whole folder */
            snprintf(f2, sizeof f2, "%s/adapter.safetensors", d2);
            CHECK(tl_save(m, 0, 1, f2));
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK_MSG(strstr(e.message, "3 .safetensors files: name one") != NULL, "%s", e.message);
            /* a plain model.safetensors wins over the variant */
            snprintf(f2, sizeof f2, "%s/model.safetensors", d2);
            {
                char from[400];
                snprintf(from, sizeof from, "%s/adapter.safetensors", d2);
                CHECK(rename(from, f2) == 0);
            }
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK(!safeload_model_has_index(mod) && safeload_model_tensor_count(mod) == 1);
            safeload_model_close(mod);
            CHECK(remove(f2) == 0);
            /* a file with the mark elsewhere in its name counts as the variant's; "fp16x" not */
            snprintf(f2, sizeof f2, "%s/extra.fp16.safetensors", d2);
            CHECK(tl_save(m, 0, 1, f2));
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK(safeload_model_has_index(mod));
            safeload_model_close(mod);
            CHECK(remove(f2) == 0);
            snprintf(f2, sizeof f2, "%s/extra.fp16x.safetensors", d2);
            CHECK(tl_save(m, 0, 1, f2));
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(remove(f2) == 0);
            /* two variants */
            snprintf(f2, sizeof f2, "%s/model.safetensors.index.bf16.json", d2);
            tl_write_text(f2, "{\"weight_map\": {}}");
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_INVALID_ARGUMENT && !mod);
            CHECK_MSG(strstr(e.message, "2 variant indexes") != NULL, "%s", e.message);
            /* a plain index wins over both */
            snprintf(f2, sizeof f2, "%s/model.safetensors.index.json", d2);
            tl_write_text(f2, "{\"weight_map\": {}}");
            CHECK(safeload_model_open(&mod, d2, NULL, &e) == SAFELOAD_OK);
            CHECK(safeload_model_has_index(mod) && safeload_model_tensor_count(mod) == 0);
            safeload_model_close(mod);
            free((void *)so);
        }
    }
    free((void *)shard_of);
}

/* ---- progress and cancellation ---- */
typedef struct tl_prog { int calls, cancel_at; uint64_t last_done, total; int monotonic; } tl_prog;
static int tl_progress(void *user, uint64_t done, uint64_t total) {
    tl_prog *p = (tl_prog *)user;
    if (done < p->last_done || done > total) p->monotonic = 0;
    p->last_done = done;
    p->total = total;
    return ++p->calls == p->cancel_at;
}

static void test_progress_cancel(const tl_model *m, const char *path) {
    safeload_model *mod;
    safeload_loaded *l;
    safeload_error e;
    safeload_load_desc d;
    tl_prog pg;
    int k, th, total_calls;
    tl_alloc ta;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    memset(&d, 0, sizeof d);
    memset(&pg, 0, sizeof pg);
    pg.monotonic = 1;
    pg.cancel_at = -1;
    d.progress = tl_progress;
    d.progress_user = &pg;
    d.progress_interval = 1 << 20;
    d.chunk_size = 1 << 16;
    d.threads = 1;
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
    CHECK(pg.monotonic && pg.last_done == pg.total && pg.total > 0);
    /* one thread: exactly one call per interval boundary crossed, plus the final one */
    CHECK_EQ_U64(pg.calls, (pg.total >> 20) + ((pg.total & ((1 << 20) - 1)) != 0));
    total_calls = pg.calls;
    safeload_loaded_free(l);
    memset(&pg, 0, sizeof pg);
    pg.monotonic = 1;
    pg.cancel_at = -1;
    d.threads = 2;
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
    /* the caller reports while the other worker runs; if the scheduler leaves it asleep
       until the end, the crossings collapse into one call */
    CHECK(pg.monotonic && pg.last_done == pg.total && pg.calls >= 1);
    CHECK(pg.calls <= total_calls);
    CHECK(tl_check_loaded(m, l->tensors, l->count));
    safeload_loaded_free(l);
    /* cancel at every call, several thread counts: CANCELLED, nothing loaded, nothing leaked */
    for (th = 1; th <= 4; th += tu_quick() ? 2 : 1)
        for (k = 1; k <= total_calls; k += tu_quick() ? 3 : 1) {
            safeload_result r;
            memset(&pg, 0, sizeof pg);
            pg.monotonic = 1;
            pg.cancel_at = k;
            d.threads = th;
            d.allocator = tl_allocator(&ta, -1);
            r = safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e);
            if (r == SAFELOAD_OK) {
                /* more threads can finish in fewer progress calls: then k was never reached */
                CHECK_MSG(pg.calls < k && th > 1, "threads %d cancel at %d: not cancelled", th, k);
                safeload_loaded_free(l);
                continue;
            }
            CHECK_MSG(r == SAFELOAD_CANCELLED && l == NULL, "threads %d cancel at %d: %s", th, k,
                      safeload_result_id(r));
            CHECK_STR(e.file, path);                /* the error names the checkpoint */
            CHECK_EQ_U64(ta.live, 0);
            CHECK_EQ_U64(pg.calls, k);      /* no calls after the one that cancelled */
        }
    memset(&d.allocator, 0, sizeof d.allocator);
    /* an empty load (no requests, or only empty tensors) still gets its one final call */
    for (th = 1; th <= 2; th++) {
        safeload_arena *arena = NULL;
        memset(&pg, 0, sizeof pg);
        pg.monotonic = 1;
        pg.cancel_at = -1;
        pg.total = 99;
        d.threads = th;
        CHECK(safeload_load(mod, NULL, 0, &d, &arena, &e) == SAFELOAD_OK);
        CHECK_MSG(pg.calls == 1 && pg.last_done == 0 && pg.total == 0, "empty load: %d calls", pg.calls);
        safeload_arena_free(arena);
    }
    safeload_model_close(mod);
}

/* ---- queued reads: DIRECT through io_uring, many reads in flight per worker ---- */

/* One DIRECT load of every tensor (dtype: as stored, or a cast); checks the bytes against a
   READ load's and the stats against what the queue should have been. */
static safeload_result tq_load(safeload_model *mod, int depth, int th, size_t chunk,
                               safeload_dtype dt, safeload_load_stats *st, safeload_loaded **l,
                               safeload_error *e) {
    safeload_load_desc d;
    memset(&d, 0, sizeof d);
    d.io = SAFELOAD_IO_DIRECT;
    d.threads = th;
    d.queue_depth = depth;
    d.chunk_size = chunk;
    d.stats = st;
    return safeload_load_all(mod, dt, &d, l, e);
}

static int tq_same(const safeload_loaded *a, const safeload_loaded *b) {
    size_t i;
    if (a->count != b->count) return 0;
    for (i = 0; i < a->count; i++)
        if (a->tensors[i].nbytes != b->tensors[i].nbytes ||
            (a->tensors[i].nbytes &&
             memcmp(a->tensors[i].data, b->tensors[i].data, a->tensors[i].nbytes) != 0))
            return 0;
    return 1;
}

/* A file whose tensors start 4 KiB aligned in the file (the header padded with spaces), so
   reads into 4 KiB-aligned caller memory go straight there. */
static void tq_write_aligned(const char *path, int n, uint64_t each) {
    char hdr[4088];
    size_t at = 0;
    int i;
    uint64_t k;
    FILE *fp = fopen(path, "wb");
    unsigned char len[8];
    at += (size_t)snprintf(hdr + at, sizeof hdr - at, "{");
    for (i = 0; i < n; i++)
        at += (size_t)snprintf(hdr + at, sizeof hdr - at,
                               "%s\"w%d\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":"
                               "[%llu,%llu]}", i ? "," : "", i, (unsigned long long)each,
                               (unsigned long long)(each * (uint64_t)i),
                               (unsigned long long)(each * (uint64_t)(i + 1)));
    at += (size_t)snprintf(hdr + at, sizeof hdr - at, "}");
    memset(hdr + at, ' ', sizeof hdr - at);
    for (i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)sizeof hdr >> (8 * i));
    fwrite(len, 1, 8, fp);
    fwrite(hdr, 1, sizeof hdr, fp);
    {
        unsigned char *b = (unsigned char *)malloc((size_t)each);
        for (i = 0; i < n; i++) {
            for (k = 0; k < each; k++) {
                uint64_t at = (uint64_t)i * each + k;
                b[k] = (unsigned char)((at * 7 + at / 4096) & 0xFF);
            }
            fwrite(b, 1, (size_t)each, fp);
        }
        free(b);
    }
    fclose(fp);
}

static int tq_cancel_first(void *user, uint64_t done, uint64_t total) {
    (void)user; (void)total;
    return done > 0;
}

static void test_queued_reads(const tl_model *m, const char *path) {
    static const int depths[] = {0, 1, 2, 3, 7, 32, 64};
    static const int threads[] = {1, 2, 3, 5};
    static const size_t chunks[] = {0, 12288};
    int uring = tl_uring_ok(), di, ti, ci, dt, queued = 0, fixed = 0;
    safeload_model *mod;
    safeload_loaded *ref = NULL, *ref32 = NULL, *l = NULL;
    safeload_load_stats st;
    safeload_load_desc d;
    safeload_error e;
    printf("  io_uring %s here\n", uring ? "available" : "not available");
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    memset(&d, 0, sizeof d);
    d.io = SAFELOAD_IO_READ;
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &ref, &e) == SAFELOAD_OK);
    CHECK(safeload_load_all(mod, SAFELOAD_F32, &d, &ref32, &e) == SAFELOAD_OK);
    CHECK(tl_check_loaded(m, ref->tensors, ref->count));
    /* depth x threads x chunk, as stored and cast: the bytes of a READ load, every read
       aligned, and the stats say which queue ran */
    tl_aio_misaligned = 0;
    for (di = 0; di < 7; di++)
        for (ti = 0; ti < 4; ti++)
            for (ci = 0; ci < 2; ci++)
                for (dt = 0; dt < 2; dt++) {
                    int depth = depths[di], th = threads[ti];
                    safeload_result r;
                    /* when quick: 2 and 5 threads at depth 32 only, and half the chunk and
                       dtype pairs at each depth (the other half at the next) */
                    if (tu_quick() && (((ti & 1) && di != 5) || ((di + ci + dt) & 1))) continue;
                    /* no io_uring (qemu-user, old kernels): the fallback, a few shapes of it */
                    if (!uring && (di > 1 || ti > 1 || ci)) continue;
                    tl_registered = 0;
                    r = tq_load(mod, depth, th, chunks[ci], dt ? SAFELOAD_F32 : SAFELOAD_DTYPE_NONE,
                                &st, &l, &e);
                    CHECK_MSG(r == SAFELOAD_OK, "depth %d threads %d: %s", depth, th, e.message);
                    if (r != SAFELOAD_OK) continue;
                    CHECK_MSG(tq_same(l, dt ? ref32 : ref), "depth %d threads %d chunk %d dt %d",
                              depth, th, ci, dt);
                    CHECK(st.io == SAFELOAD_IO_DIRECT && st.direct_files == 1);
                    /* the depth shared out between the workers; under two reads each, no queue
                       (one read at a time is what a worker does without one) */
                    int want = depth ? depth : 32, per = (want + st.threads - 1) / st.threads;
                    if (per < 2) {
                        CHECK(st.aio == SAFELOAD_AIO_NONE && st.queue_depth == 0 &&
                              st.aio_error == 0);
                    } else if (uring) {
                        CHECK_MSG(st.aio == SAFELOAD_AIO_IO_URING && st.aio_error == 0,
                                  "depth %d threads %d: aio %d error %d", depth, th, (int)st.aio,
                                  st.aio_error);
                        /* no more slots than a worker has reads: the small chunk makes
                           hundreds, the default a handful */
                        CHECK_MSG(ci ? st.queue_depth == per * st.threads
                                     : st.queue_depth >= 2 * st.threads &&
                                       st.queue_depth <= per * st.threads,
                                  "depth %d threads %d: queue %d", depth, th, st.queue_depth);
                        /* each worker's slots registered once where the kernel allows it
                           (RLIMIT_MEMLOCK may not); a cast reads every byte into a slot, so
                           then every read is a fixed one, else none is */
                        CHECK(tl_registered == 0 || tl_registered == st.threads);
                        queued++;
                        fixed += tl_registered != 0;
                        if (dt)
                            CHECK_MSG(st.fixed_reads == (tl_registered ? st.reads : 0),
                                      "depth %d threads %d: %llu fixed of %llu reads, %ld "
                                      "registered", depth, th, (unsigned long long)st.fixed_reads,
                                      (unsigned long long)st.reads, tl_registered);
                        else
                            CHECK(st.fixed_reads <= st.reads && (tl_registered || !st.fixed_reads));
                    } else {
                        CHECK(st.aio == SAFELOAD_AIO_NONE && st.aio_error != 0);
                    }
                    if (st.aio == SAFELOAD_AIO_NONE) CHECK_EQ_U64(st.fixed_reads, 0);
                    safeload_loaded_free(l);
                    l = NULL;
                }
    CHECK_EQ_U64(tl_aio_misaligned, 0);
    if (uring) printf("  fixed buffers registered in %d of %d queued loads\n", fixed, queued);
    /* a negative depth is refused */
    CHECK(tq_load(mod, -1, 2, 0, SAFELOAD_DTYPE_NONE, &st, &l, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(strstr(e.message, "queue_depth") != NULL);
    /* io_uring refused (an old kernel, seccomp, the sysctl): the same bytes, one read at a
       time, and the stats say why */
    if (uring) {
        static const int refuse[] = {ENOSYS, EPERM};
        int k;
        for (k = 0; k < 2; k++) {
            tl_uring_refuse = refuse[k];
            CHECK(tq_load(mod, 16, 2, 0, SAFELOAD_DTYPE_NONE, &st, &l, &e) == SAFELOAD_OK);
            tl_uring_refuse = 0;
            CHECK(tq_same(l, ref));
            CHECK(st.aio == SAFELOAD_AIO_NONE && st.queue_depth == 0 &&
                  st.aio_error == refuse[k]);
            safeload_loaded_free(l);
        }
        /* registration refused (RLIMIT_MEMLOCK): the queue runs with plain reads, the same
           bytes, cast or not */
        for (dt = 0; dt < 2; dt++) {
            tl_register_refuse = 1;
            tl_registered = 0;
            CHECK(tq_load(mod, 16, 2, 0, dt ? SAFELOAD_F32 : SAFELOAD_DTYPE_NONE, &st, &l, &e) ==
                  SAFELOAD_OK);
            tl_register_refuse = 0;
            CHECK(tq_same(l, dt ? ref32 : ref));
            CHECK(st.aio == SAFELOAD_AIO_IO_URING && st.reads > 0);
            CHECK_EQ_U64(st.fixed_reads, 0);
            CHECK_EQ_U64(tl_registered, 0);
            safeload_loaded_free(l);
        }
        /* completions that come back short (aligned or not) or empty: finished as a worker
           without a queue reads, the same bytes */
        for (k = 1; k <= 2; k++)
            for (ti = 1; ti <= 3; ti++) {
                tl_aio_mode = k;
                tl_aio_done = 0;
                CHECK(tq_load(mod, 8, ti, 12288, k == 1 ? SAFELOAD_F32 : SAFELOAD_DTYPE_NONE, &st,
                              &l, &e) == SAFELOAD_OK);
                tl_aio_mode = 0;
                CHECK(tl_aio_done > 4);
                CHECK_MSG(tq_same(l, k == 1 ? ref32 : ref), "mode %d threads %d", k, ti);
                safeload_loaded_free(l);
            }
        /* EIO at each completion in turn: IO_ERROR naming the file, a tensor and a byte of
           it; nothing loaded, nothing leaked */
        {
            long total, at;
            tl_alloc ta;
            tl_aio_done = 0;
            CHECK(tq_load(mod, 8, 2, 1 << 16, SAFELOAD_DTYPE_NONE, &st, &l, &e) == SAFELOAD_OK);
            safeload_loaded_free(l);
            total = tl_aio_done;
            CHECK(total > 8);
            for (at = 0; at < total; at += tu_quick() ? 1 + total / 20 : 1) {
                safeload_result r;
                memset(&d, 0, sizeof d);
                d.io = SAFELOAD_IO_DIRECT;
                d.threads = 1 + (int)(at % 3);
                d.queue_depth = 8;
                d.chunk_size = 1 << 16;
                d.allocator = tl_allocator(&ta, -1);
                tl_aio_mode = 3;
                tl_aio_at = at;
                tl_aio_done = 0;
                l = NULL;
                r = safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e);
                tl_aio_mode = 0;
                if (r == SAFELOAD_OK) {
                    /* the allocator's arena sits elsewhere than the mapping did, so the
                       pieces (cut at its 2 MiB boundaries) may be one fewer */
                    CHECK_MSG(tl_aio_done <= at && at >= total - 2, "EIO at completion %ld of %ld"
                              " not reported", at, tl_aio_done);
                    safeload_loaded_free(l);
                    CHECK_EQ_U64(ta.live, 0);
                    continue;
                }
                CHECK_MSG(r == SAFELOAD_IO_ERROR && !l, "EIO at completion %ld: %s", at,
                          safeload_result_id(r));
                CHECK(strstr(e.file, "mixed") != NULL && e.tensor[0] != 0);
                CHECK(strstr(e.message, "direct read at byte") != NULL);
                CHECK(e.offset < safeload_file_size(safeload_model_shard(mod, 0)));
                CHECK_EQ_U64(ta.live, 0);
            }
        }
    }
    safeload_loaded_free(ref);
    safeload_loaded_free(ref32);
    safeload_model_close(mod);

    /* straight into aligned caller memory; a cancel with reads in flight returns only when
       none is left: nothing writes into the destinations after the load has returned */
    {
        char ap[400];
        const int n = 8;
        const uint64_t each = (uint64_t)4 << 20;
        unsigned char *buf[8], *block;
        safeload_request rq[8];
        safeload_file *f;
        int i, round;
        char nm[8][16];
        tl_path(ap, sizeof ap, "aligned.safetensors");
        tq_write_aligned(ap, n, each);
        CHECK(safeload_open(&f, ap, NULL, &e) == SAFELOAD_OK);
        /* one block, a page apart (destinations that touch would merge tensors into one
           read: a run of two segments, through a slot) */
        CHECK(posix_memalign((void **)&block, 4096, (size_t)(each + 4096) * (size_t)n) == 0);
        for (i = 0; i < n; i++) buf[i] = block + (size_t)i * (size_t)(each + 4096);
        for (round = 0; round < 4; round++) {
            safeload_result r;
            long done0, reg0;
            memset(rq, 0, sizeof rq);
            for (i = 0; i < n; i++) {
                snprintf(nm[i], sizeof nm[i], "w%d", i);
                rq[i].name = nm[i];
                rq[i].dst = buf[i];
                rq[i].dst_size = each;
                memset(buf[i], 0xEE, (size_t)each);
            }
            memset(&d, 0, sizeof d);
            d.io = SAFELOAD_IO_DIRECT;
            d.threads = 1 + round % 2;
            d.queue_depth = 32;
            d.chunk_size = 1 << 20;
            d.stats = &st;
            d.progress_interval = 1 << 20;
            if (round >= 2) d.progress = tq_cancel_first;
            tl_aio_done = 0;
            reg0 = tl_registered;
            r = safeload_load_file(f, rq, (size_t)n, &d, NULL, &e);
            done0 = tl_aio_done;
            if (round < 2) {
                uint64_t k;
                int bad = 0;
                CHECK_MSG(r == SAFELOAD_OK, "aligned: %s", e.message);
                for (i = 0; i < n; i++)
                    for (k = 0; k < each; k++) {
                        uint64_t at = (uint64_t)i * each + k;
                        bad += buf[i][k] != (unsigned char)((at * 7 + at / 4096) & 0xFF);
                    }
                CHECK_EQ_U64(bad, 0);
                if (uring) CHECK(st.aio == SAFELOAD_AIO_IO_URING);
                CHECK_EQ_U64(st.bytes_written, each * (uint64_t)n);
                /* every read straight in: no slots, so no fixed buffer registered */
                CHECK_EQ_U64(st.fixed_reads, 0);
                CHECK_EQ_U64(tl_registered, reg0);
                continue;
            }
            CHECK_MSG(r == SAFELOAD_CANCELLED, "cancel: %s", safeload_result_id(r));
            if (!uring) continue;
            /* every read it started came back before it returned */
            CHECK_MSG(done0 == (long)st.reads && st.reads > 1, "%ld completions, %llu reads",
                      done0, (unsigned long long)st.reads);
            for (i = 0; i < n; i++) memset(buf[i], 0x5A, (size_t)each);
            {
                struct timespec ts = {0, 50 * 1000 * 1000};
                uint64_t k;
                int bad = 0;
                nanosleep(&ts, NULL);
                for (i = 0; i < n; i++)
                    for (k = 0; k < each; k++) bad += buf[i][k] != 0x5A;
                CHECK_EQ_U64(bad, 0);
                CHECK_EQ_U64(tl_aio_done, done0);
            }
        }
        free(block);
        safeload_close(f);
    }
}

/* ---- async loads: safeload_load on a thread of its own ---- */
typedef struct tl_gate { int entered, go, calls; } tl_gate;
/* the first report holds the load until the test lets it go (it cancels meanwhile) */
static int tl_gate_progress(void *user, uint64_t done, uint64_t total) {
    tl_gate *g = (tl_gate *)user;
    (void)done;
    (void)total;
    if (__atomic_fetch_add(&g->calls, 1, __ATOMIC_SEQ_CST) == 0) {
        __atomic_store_n(&g->entered, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&g->go, __ATOMIC_SEQ_CST)) sched_yield();
    }
    return 0;
}

/* cancels the job it belongs to, through the pointer safeload_load_async set */
static int tl_self_cancel(void *user, uint64_t done, uint64_t total) {
    (void)done;
    (void)total;
    safeload_job_cancel(*(safeload_job **)user);
    return 0;
}

static void test_async(const tl_model *m, const char *path) {
    safeload_model *mod;
    safeload_error e;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_job *job;
    safeload_request *rq, bad;
    safeload_arena *arena = NULL;
    uint64_t done, total, want = 0;
    size_t i, n = m->n;
    tl_prog pg;
    tl_gate g;
    tl_alloc ta;
    long k;
    int th;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    rq = (safeload_request *)calloc(n, sizeof *rq);
    for (i = 0; i < n; i++) { rq[i].name = m->t[i].name; want += m->t[i].nbytes; }
    /* the bytes of a synchronous load; the job's figures, the caller's callback and the
       stats all see the whole load */
    for (th = 1; th <= 4; th++) {
        if (tu_skip_threads(th, 3)) continue;
        memset(&d, 0, sizeof d);
        memset(&pg, 0, sizeof pg);
        pg.monotonic = 1;
        pg.cancel_at = -1;
        d.threads = th;
        d.progress = tl_progress;
        d.progress_user = &pg;
        d.progress_interval = 1 << 20;
        d.stats = &st;
        CHECK(safeload_load_async(&job, mod, rq, n, &d, &arena, &e) == SAFELOAD_OK && job);
        while (!safeload_job_done(job)) sched_yield();
        safeload_job_progress(job, &done, &total);
        CHECK_EQ_U64(total, want);
        CHECK_EQ_U64(done, want);
        CHECK(safeload_job_wait(job) == SAFELOAD_OK);
        CHECK(e.code == SAFELOAD_OK && arena != NULL);
        CHECK(tl_check_loaded(m, rq, n));
        CHECK(pg.calls >= 1 && pg.monotonic && pg.last_done == want && pg.total == want);
        CHECK_EQ_U64(st.bytes_read, want);
        safeload_arena_free(arena);
        arena = NULL;
    }
    /* cancelled while the load reports: it ends CANCELLED at that report, with nothing loaded
       or leaked and no report after it */
    for (th = 1; th <= 3; th += 2) {
        memset(&d, 0, sizeof d);
        memset(&g, 0, sizeof g);
        d.threads = th;
        d.chunk_size = 1 << 16;
        d.progress_interval = 1;
        d.progress = tl_gate_progress;
        d.progress_user = &g;
        d.allocator = tl_allocator(&ta, -1);
        CHECK(safeload_load_async(&job, mod, rq, n, &d, &arena, &e) == SAFELOAD_OK);
        while (!__atomic_load_n(&g.entered, __ATOMIC_SEQ_CST)) sched_yield();
        safeload_job_cancel(job);
        CHECK(!safeload_job_done(job));
        safeload_job_progress(job, &done, &total);
        /* the other workers may have loaded the rest by the first report (total then) */
        CHECK(done > 0 && done <= total && total == want);
        __atomic_store_n(&g.go, 1, __ATOMIC_SEQ_CST);
        CHECK_MSG(safeload_job_wait(job) == SAFELOAD_CANCELLED, "threads %d", th);
        CHECK(e.code == SAFELOAD_CANCELLED && arena == NULL);
        CHECK_STR(e.file, path);
        CHECK_EQ_U64(g.calls, 1);
        CHECK_EQ_U64(ta.live, 0);
    }
    /* three jobs at once on one shared pool (they take turns) and one on a temporary pool */
    {
        safeload_pool *pool;
        safeload_job *jobs[4];
        safeload_request *rqs[4];
        safeload_arena *arenas[4];
        safeload_error es[4];
        int q;
        CHECK(safeload_pool_create(&pool, 3, &e) == SAFELOAD_OK);
        for (q = 0; q < 4; q++) {
            rqs[q] = (safeload_request *)calloc(n, sizeof **rqs);
            for (i = 0; i < n; i++) rqs[q][i].name = m->t[i].name;
            memset(&d, 0, sizeof d);
            d.pool = q < 3 ? pool : NULL;
            d.threads = 1 + q;
            CHECK(safeload_load_async(&jobs[q], mod, rqs[q], n, &d, &arenas[q], &es[q]) ==
                  SAFELOAD_OK);
        }
        for (q = 3; q >= 0; q--) {
            CHECK_MSG(safeload_job_wait(jobs[q]) == SAFELOAD_OK, "job %d: %s", q, es[q].message);
            CHECK(tl_check_loaded(m, rqs[q], n));
            safeload_arena_free(arenas[q]);
            free(rqs[q]);
        }
        safeload_pool_destroy(pool);
    }
    /* *job is set before the load starts: its own callback may cancel it */
    memset(&d, 0, sizeof d);
    d.threads = 2;
    d.chunk_size = 1 << 16;
    d.progress_interval = 1;
    d.progress = tl_self_cancel;
    d.progress_user = &job;
    CHECK(safeload_load_async(&job, mod, rq, n, &d, &arena, &e) == SAFELOAD_OK);
    CHECK(safeload_job_wait(job) == SAFELOAD_CANCELLED && arena == NULL);
    /* the load's own errors come from the wait, in *err */
    memset(&bad, 0, sizeof bad);
    bad.name = "no.such.tensor";
    CHECK(safeload_load_async(&job, mod, &bad, 1, NULL, &arena, &e) == SAFELOAD_OK);
    CHECK(safeload_job_wait(job) == SAFELOAD_NOT_FOUND);
    CHECK(e.code == SAFELOAD_NOT_FOUND && arena == NULL);
    CHECK_STR(e.tensor, "no.such.tensor");
    /* argument errors: no job, and *job stays NULL */
    job = (safeload_job *)&bad;
    CHECK(safeload_load_async(&job, NULL, rq, n, NULL, &arena, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(job == NULL && e.code == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_load_async(NULL, mod, rq, n, NULL, &arena, &e) == SAFELOAD_INVALID_ARGUMENT);
    memset(&d, 0, sizeof d);
    d.allocator.alloc = tl_malloc;
    CHECK(safeload_load_async(&job, mod, rq, n, &d, &arena, &e) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(job == NULL);
    CHECK(safeload_job_wait(NULL) == SAFELOAD_INVALID_ARGUMENT);
    CHECK(safeload_job_done(NULL) == 1);
    done = total = 7;
    safeload_job_progress(NULL, &done, &total);
    CHECK(done == 0 && total == 0);
    safeload_job_cancel(NULL);
    /* allocation failure at every k, the job's own first: OUT_OF_MEMORY from the call or
       from the wait, nothing leaked; past the last allocation, the bytes */
    n = n < 60 ? n : 60;
    for (k = 0;; k++) {
        safeload_result r;
        memset(&d, 0, sizeof d);
        d.threads = 1 + (int)(k % 3);
        d.allocator = tl_allocator(&ta, k);
        r = safeload_load_async(&job, mod, rq, n, &d, &arena, &e);
        if (r == SAFELOAD_OK) r = safeload_job_wait(job);
        else CHECK(job == NULL);
        if (r == SAFELOAD_OK) {
            CHECK(arena && tl_check_loaded(m, rq, n));
            safeload_arena_free(arena);
            CHECK_EQ_U64(ta.live, 0);
            if (ta.calls <= k) break;                   /* no allocation failed: done */
            continue;
        }
        CHECK_MSG(r == SAFELOAD_OUT_OF_MEMORY && arena == NULL, "k %ld: %s", k,
                  safeload_result_id(r));
        CHECK_EQ_U64(ta.live, 0);
    }
    CHECK(k > 1);
    free(rq);
    safeload_model_close(mod);
}

/* ---- allocation failures: every k-th allocation, open and load ---- */
static void test_alloc_failures(const char *path) {
    int io;
    for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {    /* each mode's own */
        tl_alloc ta;
        long k, need = 0;
        int successes = 0;
        /* a failure some step survives (a queue's buffers: one read at a time instead) is a
           success too: go on past every allocation a clean load makes */
        for (k = 1; k <= 3; k++) {
            safeload_model_desc md;
            safeload_load_desc d;
            safeload_model *mod = NULL;
            safeload_loaded *l = NULL;
            safeload_error e;
            memset(&md, 0, sizeof md);
            memset(&d, 0, sizeof d);
            md.open.allocator = tl_allocator(&ta, -1);
            d.allocator = md.open.allocator;
            d.threads = (int)k;
            d.chunk_size = 1 << 16;
            d.io = (safeload_io)io;
            CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
            CHECK(safeload_load_all(mod, SAFELOAD_F32, &d, &l, &e) == SAFELOAD_OK);
            safeload_loaded_free(l);
            safeload_model_close(mod);
            if (ta.calls > need) need = ta.calls;
        }
        for (k = 0; k < 100000; k++) {
            safeload_model_desc md;
            safeload_load_desc d;
            safeload_model *mod = NULL;
            safeload_loaded *l = NULL;
            safeload_error e;
            safeload_result r;
            /* when quick, past the first four a third of the points, each mode its own third:
               the four modes together still fail every allocation the load makes */
            if (tu_quick() && k >= 4 && k <= need && k % 3 != io % 3) continue;
            memset(&md, 0, sizeof md);
            memset(&d, 0, sizeof d);
            md.open.allocator = tl_allocator(&ta, k);
            d.allocator = md.open.allocator;
            d.threads = 1 + (int)(k % 3);
            d.chunk_size = 1 << 16;
            d.io = (safeload_io)io;
            r = safeload_model_open(&mod, path, &md, &e);
            if (r == SAFELOAD_OK) r = safeload_load_all(mod, SAFELOAD_F32, &d, &l, &e);
            CHECK_MSG(r == SAFELOAD_OK || r == SAFELOAD_OUT_OF_MEMORY, "io %d k=%ld: %s", io, k,
                      safeload_result_id(r));
            safeload_loaded_free(l);
            safeload_model_close(mod);
            CHECK_MSG(ta.live == 0, "io %d k=%ld: %ld allocations leaked", io, k, ta.live);
            if (r == SAFELOAD_OK && ++successes >= 3 && k > need) break;
        }
        CHECK(successes >= 3 && k > need);
    }
}

/* ---- mmap mode's mappings: how many of the file there are, during a load and after ---- */
static const char *tm_path;
static int tm_max;
static int tl_maps_with(const char *s) {     /* mappings naming s ("": all), -1: no /proc */
    char line[1024];
    int n = 0;
    FILE *fp = fopen("/proc/self/maps", "r");
    if (!fp) return -1;
    while (fgets(line, sizeof line, fp)) n += strstr(line, s) != NULL;
    fclose(fp);
    return n;
}
static int tm_count(void) { return tl_maps_with(tm_path); }   /* the file's mappings */
/* bytes of this process's mappings with MADV_HUGEPAGE (VmFlags "hg"), -1: no smaps */
static long long tl_huge_advised(void) {
    char line[1024];
    unsigned long long lo, hi, size = 0;
    long long n = 0;
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp) return -1;
    while (fgets(line, sizeof line, fp)) {
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            size = hi - lo;
        else if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " hg"))
            n += (long long)size;
    }
    fclose(fp);
    return n;
}
/* tl_huge_advised(), or -1 where advice does not show in smaps (qemu-user takes
   MADV_HUGEPAGE and drops it): a 4 MiB mapping advised must raise the count */
static long long tl_huge_measure(void) {
    long long before = tl_huge_advised(), after;
    void *p = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (before < 0 || p == MAP_FAILED) return -1;
    after = madvise(p, 4u << 20, MADV_HUGEPAGE) == 0 ? tl_huge_advised() : -1;
    munmap(p, 4u << 20);
    return after > before ? tl_huge_advised() : -1;
}
static int tm_progress(void *user, uint64_t done, uint64_t total) {
    int c = tm_count();
    (void)user; (void)done; (void)total;
    if (c > tm_max) tm_max = c;
    return 0;
}
static void test_map_lifetime(const tl_model *m, const char *path) {
    safeload_model *mod;
    safeload_loaded *l;
    safeload_load_desc d;
    safeload_error e;
    const void *v;
    size_t al;
    int round;
    tm_path = path;
    if (tm_count() != 0) return;          /* no /proc here, or mapped already: nothing to see */
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    for (round = 0; round < 2; round++) {
        memset(&d, 0, sizeof d);
        d.io = SAFELOAD_IO_MMAP;
        d.progress = tm_progress;
        tm_max = 0;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        CHECK(tl_check_loaded(m, l->tensors, l->count));
        safeload_loaded_free(l);
        /* one mapping while loading (after a view: the view's, not a second one); after the
           load, 64-bit keeps it for later loads and views, 32-bit gives the space back */
        CHECK_MSG(tm_max == 1, "round %d: %d mappings during the load", round, tm_max);
        CHECK_MSG(tm_count() == (round || !SL__MAP_PER_LOAD ? 1 : 0), "round %d: %d after",
                  round, tm_count());
        if (round == 0)
            CHECK(safeload_view(safeload_model_shard(mod, 0), safeload_model_tensor_at(mod, 0, NULL),
                                &v, &al, &e) == SAFELOAD_OK);
    }
    safeload_model_close(mod);
    CHECK(tm_count() == 0);
}

/* ---- argument errors ---- */
static void test_request_errors(const tl_model *m, const char *path) {
    safeload_file *f;
    safeload_error e;
    safeload_request rq;
    safeload_arena *arena = NULL;
    const tl_tensor *t = &m->t[0];
    unsigned char small[8];
    CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
    memset(&rq, 0, sizeof rq);
    rq.name = "no.such.tensor";
    CHECK(safeload_load_file(f, &rq, 1, NULL, &arena, &e) == SAFELOAD_NOT_FOUND);
    CHECK_STR(e.tensor, "no.such.tensor");
    CHECK(arena == NULL && rq.data == NULL);
    memset(&rq, 0, sizeof rq);
    rq.name = t->name;
    rq.dst = small;
    rq.dst_size = sizeof small;
    CHECK(safeload_load_file(f, &rq, 1, NULL, NULL, &e) == SAFELOAD_BUFFER_TOO_SMALL);
    CHECK(rq.tensor == NULL && rq.shard == 0 && rq.data == NULL && rq.nbytes == 0);
    {   /* a failed load leaves tensor and shard as given, in every request (the first here
           resolved fine); a load that succeeds sets them */
        safeload_request two[2];
        memset(two, 0, sizeof two);
        two[0].name = t->name;
        two[0].shard = 77;
        two[1].name = t->name;
        two[1].dst = small;
        two[1].dst_size = sizeof small;
        CHECK(safeload_load_file(f, two, 2, NULL, &arena, &e) == SAFELOAD_BUFFER_TOO_SMALL);
        CHECK_MSG(strncmp(e.message, "request 1 needs ", 16) == 0, "%s", e.message);
        CHECK(arena == NULL);
        CHECK(two[0].tensor == NULL && two[0].shard == 77 && two[0].data == NULL);
        CHECK(two[1].tensor == NULL && two[1].shard == 0);
        two[1].dst = NULL;
        two[1].dst_size = 0;
        CHECK(safeload_load_file(f, two, 2, NULL, &arena, &e) == SAFELOAD_OK);
        CHECK(two[0].tensor == safeload_find(f, t->name) && two[0].shard == 0);
        CHECK(two[1].tensor == two[0].tensor && two[1].data != NULL);
        safeload_arena_free(arena);
        arena = NULL;
    }
    memset(&rq, 0, sizeof rq);
    rq.name = t->name;
    CHECK(safeload_load_file(f, &rq, 1, NULL, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    rq.slice_begin = 5;
    rq.slice_end = 3;
    CHECK(safeload_load_file(f, &rq, 1, NULL, &arena, &e) == SAFELOAD_INVALID_SLICE);
    rq.slice_begin = 0;
    rq.slice_end = t->shape[0] + 1;
    CHECK(safeload_load_file(f, &rq, 1, NULL, &arena, &e) == SAFELOAD_INVALID_SLICE);
    memset(&rq, 0, sizeof rq);
    rq.name = "ints";
    rq.dtype = SAFELOAD_F16;
    CHECK(safeload_load_file(f, &rq, 1, NULL, &arena, &e) == SAFELOAD_UNSUPPORTED_CONVERSION);
    memset(&rq, 0, sizeof rq);
    rq.name = t->name;
    rq.device = 1;
    CHECK(safeload_load_file(f, &rq, 1, NULL, &arena, &e) == SAFELOAD_HOOK_MISSING);
    CHECK(arena == NULL);
    /* the same tensor twice, to two destinations, is fine */
    {
        safeload_request two[2];
        memset(two, 0, sizeof two);
        two[0].name = two[1].name = "bytes";
        CHECK(safeload_load_file(f, two, 2, NULL, &arena, &e) == SAFELOAD_OK);
        CHECK(two[0].data != two[1].data && memcmp(two[0].data, two[1].data, 15) == 0);
        safeload_arena_free(arena);
    }
    safeload_close(f);
    {   /* F4 [2, 3]: a row is 1.5 bytes, so one row cannot be sliced, but all rows can */
        uint64_t sh[2] = {2, 3};
        unsigned char nib[3] = {0x21, 0x43, 0x65}, out4[3];
        safeload_save_tensor st;
        void *img = NULL;
        size_t in = 0;
        memset(&st, 0, sizeof st);
        st.name = "q"; st.dtype = SAFELOAD_F4; st.rank = 2; st.shape = sh;
        st.data = nib; st.nbytes = 3;
        CHECK(safeload_serialize(&img, &in, &st, 1, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_open_memory(&f, img, in, NULL, &e) == SAFELOAD_OK);
        memset(&rq, 0, sizeof rq);
        rq.name = "q"; rq.dst = out4; rq.dst_size = sizeof out4;
        rq.slice_begin = 0; rq.slice_end = 1;
        CHECK(safeload_load_file(f, &rq, 1, NULL, NULL, &e) == SAFELOAD_INVALID_SLICE);
        rq.slice_end = 2;
        memset(out4, 0, sizeof out4);
        CHECK(safeload_load_file(f, &rq, 1, NULL, NULL, &e) == SAFELOAD_OK);
        CHECK(rq.nbytes == 3 && memcmp(out4, nib, 3) == 0);
        safeload_close(f);
        safeload_free(img, NULL);
    }
    {   /* a reader that declares a (2^61 - 1)-byte tensor: eight arena requests for it add up
           to 2^64 with the alignment, which must be OVERFLOW before anything is allocated or
           read (the huge-page slack wrapped it to a small arena once) */
        static char hdr[128];
        static tl_reader zr;
        safeload_reader rd;
        safeload_request rq8[8];
        uint64_t S = ((uint64_t)1 << 61) - 1, N = 96, k;
        int len = snprintf(hdr + 8, sizeof hdr - 8,
                           "{\"a\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[0,%llu]}}",
                           (unsigned long long)S, (unsigned long long)S);
        CHECK(len > 0 && (uint64_t)len <= N);
        memset(hdr + 8 + len, ' ', (size_t)(N - (uint64_t)len));
        for (k = 0; k < 8; k++) hdr[k] = (char)(N >> (8 * k));
        memset(&zr, 0, sizeof zr);
        zr.p = (const unsigned char *)hdr; zr.n = 8 + N; zr.fail_at = -1;
        memset(&rd, 0, sizeof rd);
        rd.read = tl_read; rd.size = 8 + N + S; rd.user = &zr; rd.name = "huge";
        CHECK(safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_OK);
        memset(rq8, 0, sizeof rq8);
        for (k = 0; k < 8; k++) rq8[k].name = "a";
        arena = (safeload_arena *)&e;
        zr.calls = 0;
        CHECK(safeload_load_file(f, rq8, 8, NULL, &arena, &e) == SAFELOAD_OVERFLOW);
        CHECK(arena == NULL && rq8[7].data == NULL && zr.calls == 0);
        CHECK_STR(e.tensor, "a");
        safeload_close(f);
    }
    {   /* a NULL argument still clears every out-pointer the caller did pass */
        safeload_model *mo = (safeload_model *)&e;
        safeload_loaded *lo = (safeload_loaded *)&e;
        void *buf = &e;
        size_t bn = 7;
        CHECK(safeload_model_open(&mo, NULL, NULL, &e) == SAFELOAD_INVALID_ARGUMENT && mo == NULL);
        CHECK(safeload_load_all(NULL, SAFELOAD_F32, NULL, &lo, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(lo == NULL);
        CHECK(safeload_serialize(&buf, NULL, NULL, 0, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(buf == NULL);
        CHECK(safeload_serialize(NULL, &bn, NULL, 0, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
        CHECK(bn == 0);
        {
            safeload_arena *ar = (safeload_arena *)&e;
            const void *vp = &e;
            size_t al = 7;
            safeload_key_report rep;
            memset(&rep, 0xA5, sizeof rep);
            CHECK(safeload_load(NULL, NULL, 0, NULL, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(ar == NULL);
            ar = (safeload_arena *)&e;
            CHECK(safeload_load_file(NULL, NULL, 0, NULL, &ar, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(ar == NULL);
            CHECK(safeload_view(NULL, NULL, &vp, &al, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(vp == NULL && al == 0);
            CHECK(safeload_check_keys(NULL, NULL, 0, &rep, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(rep.missing == NULL && rep.unexpected == NULL);
            safeload_key_report_free(&rep);
            memset(&rep, 0xA5, sizeof rep);
            CHECK(safeload_model_check_keys(NULL, NULL, 0, &rep, &e) == SAFELOAD_INVALID_ARGUMENT);
            CHECK(rep.missing == NULL && rep.unexpected == NULL);
            safeload_key_report_free(&rep);
        }
    }
}

/* A progress callback that starts a load of its own: on the pool that runs it (refused:
   it would wait for itself), or on no pool (allowed). */
typedef struct tl_nest { safeload_model *mod; safeload_pool *pool; int calls, refused, loaded; } tl_nest;
static int tl_nested(void *user, uint64_t done, uint64_t total) {
    tl_nest *n = (tl_nest *)user;
    safeload_load_desc d;
    safeload_loaded *l = NULL;
    safeload_error e;
    (void)done;
    (void)total;
    if (n->calls++ >= 3) return 0;
    memset(&d, 0, sizeof d);
    d.pool = n->pool;
    if (safeload_load_all(n->mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_INVALID_ARGUMENT &&
        l == NULL && strstr(e.message, "desc.pool") != NULL && e.file[0] != 0)   /* names it */
        n->refused++;
    d.pool = NULL;
    d.threads = 2;
    if (safeload_load_all(n->mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK) {
        n->loaded++;
        safeload_loaded_free(l);
    }
    return 0;
}

/* ---- a pool reused across loads; the thread-count default ---- */
static void test_pool(const tl_model *m, const char *path) {
    safeload_pool *pool;
    safeload_model *mod;
    safeload_error e;
    int i;
    CHECK(safeload_pool_create(&pool, 4, &e) == SAFELOAD_OK);
    CHECK_EQ_U64(safeload_pool_threads(pool), 4);
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    for (i = 0; i < 12; i++) {
        safeload_load_desc d;
        safeload_loaded *l;
        memset(&d, 0, sizeof d);
        d.pool = pool;
        d.threads = i % 5;                   /* 0 = all of the pool's */
        d.chunk_size = 1 << 17;
        CHECK(safeload_load_all(mod, i % 2 ? SAFELOAD_F32 : SAFELOAD_DTYPE_NONE, &d, &l, &e) ==
              SAFELOAD_OK);
        if (i % 2 == 0) CHECK(tl_check_loaded(m, l->tensors, l->count));
        safeload_loaded_free(l);
    }
    {   /* a load inside the progress callback of a load on the same pool is refused, every
           time: mid-load, at the final call (the pool's threads are idle by then), and when
           the outer load is one task that the caller runs alone; the same load on its own
           threads runs */
        int variant;
        for (variant = 0; variant < 3; variant++) {
            safeload_load_desc d;
            safeload_loaded *l;
            safeload_request rq;
            safeload_arena *ar = NULL;
            tl_nest n;
            memset(&n, 0, sizeof n);
            n.mod = mod;
            n.pool = pool;
            memset(&d, 0, sizeof d);
            d.pool = pool;
            d.progress = tl_nested;
            d.progress_user = &n;
            d.progress_interval = variant == 0 ? 1 : 0;     /* 0: the final call only */
            d.chunk_size = 4096;
            alarm(60);           /* the failure this guards against is a hang */
            if (variant < 2) {
                CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
                CHECK(tl_check_loaded(m, l->tensors, l->count));
                safeload_loaded_free(l);
            } else {
                memset(&rq, 0, sizeof rq);
                rq.name = m->t[0].name;
                CHECK(safeload_load(mod, &rq, 1, &d, &ar, &e) == SAFELOAD_OK);
                safeload_arena_free(ar);
            }
            alarm(0);
            CHECK_MSG(n.calls >= 1 && n.refused == SL__MIN(n.calls, 3) &&
                      n.loaded == SL__MIN(n.calls, 3), "variant %d: calls %d refused %d loaded %d",
                      variant, n.calls, n.refused, n.loaded);
        }
    }
    {   /* more threads than a pool can have: the load reports the 256 it ran with */
        safeload_load_desc d;
        safeload_loaded *l;
        safeload_load_stats st;
        memset(&d, 0, sizeof d);
        d.threads = 100000;
        d.chunk_size = 4096;
        d.stats = &st;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        CHECK_MSG(st.threads >= 1 && st.threads <= 256, "threads %d", st.threads);
        safeload_loaded_free(l);
    }
    safeload_model_close(mod);
    safeload_pool_destroy(pool);
    setenv("SAFELOAD_NUM_THREADS", "3", 1);
    CHECK_EQ_U64(safeload_default_threads(), 3);
    setenv("SAFELOAD_NUM_THREADS", "256", 1);
    CHECK_EQ_U64(safeload_default_threads(), 256);
    unsetenv("SAFELOAD_NUM_THREADS");
    {   /* out of range or not a number: ignored, the default stands */
        static const char *const bad[] = {"0", "257", "3x", "-1", " 3", "99999999999999999999"};
        int dflt = safeload_default_threads(), b;
        CHECK(dflt >= 1 && dflt <= 8);
        for (b = 0; b < 6; b++) {
            setenv("SAFELOAD_NUM_THREADS", bad[b], 1);
            CHECK_MSG(safeload_default_threads() == dflt, "SAFELOAD_NUM_THREADS=\"%s\"", bad[b]);
        }
        unsetenv("SAFELOAD_NUM_THREADS");
    }
}

/* zero-copy view into the mapping */
static void test_view(const tl_model *m, const char *path) {
    safeload_file *f;
    safeload_error e;
    size_t i;
    int bad = 0;
    CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
    for (i = 0; i < m->n; i += 17) {
        const safeload_tensor *t = safeload_find(f, m->t[i].name);
        const void *p;
        size_t al;
        /* a view is the file's bytes: the elements little-endian */
        unsigned char *le = (unsigned char *)malloc((size_t)m->t[i].nbytes + 1);
        if (le) {
            memcpy(le, m->t[i].data, (size_t)m->t[i].nbytes);
            TU_LE_DT(le, (size_t)m->t[i].nbytes, m->t[i].dtype);
        }
        if (!le || safeload_view(f, t, &p, &al, &e) != SAFELOAD_OK ||
            memcmp(p, le, m->t[i].nbytes) != 0 || (uintptr_t)p % al != 0 ||
            (al & (al - 1)) != 0) bad++;
        free(le);
    }
    CHECK(bad == 0);
    safeload_close(f);
}

/* The file changes on disk after it was opened. Replaced (a rename over it): every I/O mode
   still loads the bytes of the file that was opened (O_DIRECT reopens by path, and must notice
   that the path names another file now). Truncated: every mode reports UNEXPECTED_EOF (mmap
   must not touch pages past the new end, which would be SIGBUS). */
/* A run that joins a plain tensor, a cast one, then a plain one again must still fit the
   staging buffer it is read through (the third used to be checked against the chunk only,
   and a 12 KiB run overflowed an 8 KiB staging buffer). */
static void test_mixed_run(void) {
    static const char hdr[] =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,64]},"
        "\"b\":{\"dtype\":\"F16\",\"shape\":[2048],\"data_offsets\":[64,4160]},"
        "\"c\":{\"dtype\":\"F32\",\"shape\":[2048],\"data_offsets\":[4160,12352]}}";
    unsigned char *img, *win = NULL;
    static unsigned char host[12352];
    float want_b[2048];
    size_t n, ds;
    char p[400];
    FILE *fp;
    int io, th;
    img = tu_image(hdr, 12352, &n, &ds);
    CHECK(img != NULL);
    if (!img) return;
    memcpy(host, img + ds, sizeof host);    /* the data section's elements in host order */
    tu_le(host, 64, 4);
    tu_le(host + 64, 4096, 2);
    tu_le(host + 4160, 8192, 4);
    CHECK(safeload_convert(want_b, SAFELOAD_F32, host + 64, SAFELOAD_F16, 2048) ==
          SAFELOAD_OK);
    tl_path(p, sizeof p, "mixed_run.safetensors");
    fp = fopen(p, "wb");
    CHECK(fp != NULL && fwrite(img, 1, n, fp) == n);
    if (fp) fclose(fp);
    CHECK(posix_memalign((void **)&win, 2u << 20, 2u << 20) == 0);   /* one 2 MiB window */
    for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO && win; io++)
        for (th = 1; th <= 2; th++) {
            safeload_file *f;
            safeload_error e;
            safeload_request q[3];
            safeload_load_desc d;
            safeload_result r;
            memset(q, 0, sizeof q);
            memset(&d, 0, sizeof d);
            memset(win, 0xAB, 20000);
            q[0].name = "a"; q[0].dst = win;        q[0].dst_size = 64;
            q[1].name = "b"; q[1].dst = win + 64;   q[1].dst_size = 8192;
            q[1].dtype = SAFELOAD_F32;
            q[2].name = "c"; q[2].dst = win + 8256; q[2].dst_size = 8192;
            d.threads = th;
            d.io = (safeload_io)io;
            d.staging_size = 8192;
            CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
            r = safeload_load_file(f, q, 3, &d, NULL, &e);
            CHECK_MSG(r == SAFELOAD_OK, "io %d threads %d: %s", io, th, e.message);
            CHECK_MSG(memcmp(win, host, 64) == 0, "io %d: a", io);
            CHECK_MSG(memcmp(win + 64, want_b, 8192) == 0, "io %d: b", io);
            CHECK_MSG(memcmp(win + 8256, host + 4160, 8192) == 0, "io %d: c", io);
            CHECK_MSG(win[16448] == 0xAB, "io %d: wrote past c", io);
            safeload_close(f);
        }
    /* cut inside c after the open: every mode reports the same tensor and byte */
    if (win) {
        safeload_file *f;
        safeload_error e;
        uint64_t cut = ds + 4160 + 100;
        CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
        CHECK(truncate(p, (off_t)cut) == 0);
        for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
            int only_c;
            for (only_c = 0; only_c <= 1; only_c++) {
                safeload_request q[3];
                safeload_load_desc d;
                memset(q, 0, sizeof q);
                memset(&d, 0, sizeof d);
                q[0].name = "a"; q[0].dst = win;        q[0].dst_size = 64;
                q[1].name = "b"; q[1].dst = win + 64;   q[1].dst_size = 8192;
                q[1].dtype = SAFELOAD_F32;
                q[2].name = "c"; q[2].dst = win + 8256; q[2].dst_size = 8192;
                d.threads = 1;
                d.io = (safeload_io)io;
                CHECK_MSG(safeload_load_file(f, only_c ? q + 2 : q, only_c ? 1 : 3, &d, NULL,
                                             &e) == SAFELOAD_UNEXPECTED_EOF, "io %d", io);
                CHECK_STR(e.tensor, "c");
                CHECK_MSG(e.offset == cut, "io %d only_c %d: offset %llu, want %llu", io,
                          only_c, (unsigned long long)e.offset, (unsigned long long)cut);
            }
        }
        {   /* safeload_read names the tensor too; a view of bytes that are gone is refused
               (touching them would be a SIGBUS), one of bytes still there is not */
            const void *v = win;
            size_t al = 7;
            CHECK(safeload_read(f, safeload_find(f, "c"), win, 8192, &e) == SAFELOAD_UNEXPECTED_EOF);
            CHECK_STR(e.tensor, "c");
            CHECK_MSG(e.offset == cut, "read: offset %llu", (unsigned long long)e.offset);
            CHECK(safeload_view(f, safeload_find(f, "c"), &v, &al, &e) == SAFELOAD_UNEXPECTED_EOF);
            CHECK(v == NULL && al == 0);
            CHECK_STR(e.tensor, "c");
            CHECK_MSG(e.offset == cut, "view: offset %llu", (unsigned long long)e.offset);
            CHECK(strstr(e.message, "shrunk") != NULL);
            CHECK(safeload_view(f, safeload_find(f, "b"), &v, &al, &e) == SAFELOAD_OK);
            CHECK(v != NULL && memcmp(v, img + ds + 64, 4096) == 0);
        }
        CHECK(truncate(p, (off_t)(ds + 4000)) == 0);     /* now inside b */
        for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
            safeload_request q;
            safeload_load_desc d;
            memset(&q, 0, sizeof q);
            memset(&d, 0, sizeof d);
            q.name = "c"; q.dst = win + 8256; q.dst_size = 8192;
            d.io = (safeload_io)io;
            CHECK(safeload_load_file(f, &q, 1, &d, NULL, &e) == SAFELOAD_UNEXPECTED_EOF);
            CHECK_STR(e.tensor, "c");
            CHECK_MSG(e.offset == ds + 4160, "io %d: offset %llu", io,
                      (unsigned long long)e.offset);
        }
        {   /* b is cut inside (the first byte gone is the new end); c starts past it */
            const void *v;
            size_t al;
            CHECK(safeload_view(f, safeload_find(f, "b"), &v, &al, &e) == SAFELOAD_UNEXPECTED_EOF);
            CHECK_STR(e.tensor, "b");
            CHECK(e.offset == ds + 4000);
            CHECK(safeload_view(f, safeload_find(f, "c"), &v, &al, &e) == SAFELOAD_UNEXPECTED_EOF);
            CHECK_STR(e.tensor, "c");
            CHECK(e.offset == ds + 4160);
            CHECK(safeload_view(f, safeload_find(f, "a"), &v, &al, &e) == SAFELOAD_OK);
            CHECK(v != NULL && memcmp(v, img + ds, 64) == 0);
        }
        safeload_close(f);
    }
    free(win);
    free(img);
}

/* A file cut after the open: the report (tensor, byte, message) is the same whatever the
   thread count, I/O mode and chunk size, though with several threads any worker may be the
   first to read past the end: the first byte the load wanted at or past the file's new size. */
static void test_cut_deterministic(void) {
    enum { NT = 8, EL = 16384 };                      /* 8 tensors of 64 KiB */
    static float buf[NT][EL];
    static unsigned char dst[NT][EL * 4];
    uint64_t shape[1] = {EL}, ds, cuts[3];
    safeload_save_tensor st[NT];
    char names[NT][16], p[400], want_msg[200];
    safeload_file *f;
    safeload_error e;
    int i, k, c;
    memset(st, 0, sizeof st);
    for (i = 0; i < NT; i++) {
        for (k = 0; k < EL; k++) buf[i][k] = (float)(i * EL + k);
        snprintf(names[i], sizeof names[i], "t%d", i);
        st[i].name = names[i]; st[i].dtype = SAFELOAD_F32; st[i].rank = 1; st[i].shape = shape;
        st[i].data = buf[i]; st[i].nbytes = sizeof buf[i];
    }
    tl_path(p, sizeof p, "cut_det.safetensors");
    CHECK(safeload_save(p, st, NT, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
    if (!f) return;
    ds = safeload_data_offset(f);
    safeload_close(f);
    cuts[0] = ds + 2 * (uint64_t)EL * 4 + 1000;       /* inside t2 */
    cuts[1] = ds - 10;                                /* inside the header: t0's first byte */
    cuts[2] = ds + 4 * (uint64_t)EL * 4 + 7;          /* inside t4, which is not asked for */
    for (c = 0; c < 3; c++) {
        const char *want_t = c == 0 ? "t2" : c == 1 ? "t0" : "t5";
        uint64_t want_off = c == 0 ? cuts[0] : c == 1 ? ds : ds + 5 * (uint64_t)EL * 4;
        int io, th, cast;
        CHECK(safeload_save(p, st, NT, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
        if (!f) return;
        CHECK(truncate(p, (off_t)cuts[c]) == 0);
        snprintf(want_msg, sizeof want_msg, "file ended at byte %llu (it was %llu bytes when opened)",
                 (unsigned long long)cuts[c], (unsigned long long)safeload_file_size(f));
        for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++)
            for (th = 1; th <= 4; th++)
                for (cast = 0; cast <= 1; cast++) {
                    safeload_request q[NT];
                    safeload_load_desc d;
                    int n = 0;
                    memset(q, 0, sizeof q);
                    memset(&d, 0, sizeof d);
                    for (i = 0; i < NT; i++) {
                        if (c == 2 && i == 4) continue;
                        q[n].name = names[i];
                        q[n].dst = dst[i];
                        q[n].dst_size = sizeof dst[i];
                        if (cast) q[n].dtype = SAFELOAD_F16;
                        n++;
                    }
                    d.threads = th;
                    d.io = (safeload_io)io;
                    d.chunk_size = 4096;
                    CHECK(safeload_load_file(f, q, (size_t)n, &d, NULL, &e) == SAFELOAD_UNEXPECTED_EOF);
                    CHECK_MSG(strcmp(e.tensor, want_t) == 0 && e.offset == want_off &&
                              strcmp(e.message, want_msg) == 0,
                              "cut %d io %d threads %d cast %d: [%s] (byte %llu) %s", c, io, th,
                              cast, e.tensor, (unsigned long long)e.offset, e.message);
                }
        safeload_close(f);
    }
    remove(p);
}

static void test_changed_file(void) {
    static float one[50000], two[50000], out[50000];
    uint64_t shape[1] = {50000};
    safeload_save_tensor st;
    safeload_file *f;
    safeload_error e;
    char p[400];
    int io, i;
    for (i = 0; i < 50000; i++) { one[i] = 1.0f + (float)i; two[i] = -2.0f; }
    memset(&st, 0, sizeof st);
    st.name = "w"; st.dtype = SAFELOAD_F32; st.rank = 1; st.shape = shape;
    st.data = one; st.nbytes = sizeof one;
    tl_path(p, sizeof p, "changed.safetensors");
    CHECK(safeload_save(p, &st, 1, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
    st.data = two;
    CHECK(safeload_save(p, &st, 1, NULL, &e) == SAFELOAD_OK);       /* renamed over it */
    for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
        safeload_request q;
        safeload_load_desc d;
        memset(&q, 0, sizeof q);
        memset(&d, 0, sizeof d);
        memset(out, 0, sizeof out);
        q.name = "w"; q.dst = out; q.dst_size = sizeof out;
        d.io = (safeload_io)io; d.threads = 1 + io % 2;
        CHECK_MSG(safeload_load_file(f, &q, 1, &d, NULL, &e) == SAFELOAD_OK, "io %d: %s", io, e.message);
        CHECK_MSG(memcmp(out, one, sizeof one) == 0, "io %d read the replacement", io);
    }
    safeload_close(f);
    st.data = one;
    CHECK(safeload_save(p, &st, 1, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_open(&f, p, NULL, &e) == SAFELOAD_OK);
    CHECK(truncate(p, 4096) == 0);
    for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
        safeload_request q;
        safeload_load_desc d;
        memset(&q, 0, sizeof q);
        memset(&d, 0, sizeof d);
        q.name = "w"; q.dst = out; q.dst_size = sizeof out;
        d.io = (safeload_io)io;
        CHECK_MSG(safeload_load_file(f, &q, 1, &d, NULL, &e) == SAFELOAD_UNEXPECTED_EOF,
                  "io %d: %s", io, safeload_result_id(e.code));
        CHECK_STR(e.tensor, "w");
    }
    safeload_close(f);
}

/* Indexes at scale: the first failing shard in order is the one named whatever the threads
   (the shards after it are not opened), and unlisted tensors give at most 1000 warnings plus
   one that counts the rest. */
static void test_index_scale(void) {
    char sub[300], p[400], idx[400];
    uint64_t shape[1] = {1};
    unsigned char byte = 7;
    safeload_save_tensor *st;
    char (*nm)[16];
    safeload_model *mod;
    safeload_model_desc md;
    safeload_error e;
    FILE *fp;
    size_t i, nt = 1500;
    int th;
    snprintf(sub, sizeof sub, "%s/scale", tl_dir);
    CHECK(mkdir(sub, 0755) == 0);
    /* two real shards, then 5000 that are not there */
    st = (safeload_save_tensor *)calloc(nt, sizeof *st);
    nm = (char (*)[16])calloc(nt, sizeof *nm);
    for (i = 0; i < nt; i++) {
        snprintf(nm[i], sizeof nm[i], "t%u", (unsigned)i);
        st[i].name = nm[i]; st[i].dtype = SAFELOAD_U8; st[i].rank = 1; st[i].shape = shape;
        st[i].data = &byte; st[i].nbytes = 1;
    }
    snprintf(p, sizeof p, "%s/a0.safetensors", sub);
    CHECK(safeload_save(p, st, 1, NULL, &e) == SAFELOAD_OK);
    snprintf(p, sizeof p, "%s/a1.safetensors", sub);
    CHECK(safeload_save(p, st + 1, 1, NULL, &e) == SAFELOAD_OK);
    snprintf(idx, sizeof idx, "%s/missing.index.json", sub);
    fp = fopen(idx, "wb");
    fprintf(fp, "{\"weight_map\":{\"t0\":\"a0.safetensors\",\"t1\":\"a1.safetensors\"");
    for (i = 2; i < 5002; i++) fprintf(fp, ",\"x%u\":\"b%05u.safetensors\"", (unsigned)i, (unsigned)i);
    fprintf(fp, "}}");
    fclose(fp);
    for (th = 1; th <= 4; th++) {
        memset(&md, 0, sizeof md);
        md.threads = th;
        CHECK(safeload_model_open(&mod, idx, &md, &e) == SAFELOAD_INDEX_SHARD_MISSING && !mod);
        CHECK_MSG(strstr(e.file, "b00002.safetensors") && strcmp(e.tensor, "x2") == 0,
                  "threads %d: %s [%s]", th, e.file, e.tensor);
    }
    remove(idx);
    /* one shard of 1500 tensors, of which the index lists one */
    snprintf(p, sizeof p, "%s/big.safetensors", sub);
    CHECK(safeload_save(p, st, nt, NULL, &e) == SAFELOAD_OK);
    snprintf(idx, sizeof idx, "%s/big.index.json", sub);
    tl_write_text(idx, "{\"weight_map\":{\"t0\":\"big.safetensors\"}}");
    CHECK_MSG(safeload_model_open(&mod, idx, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    if (mod) {
        const safeload_error *w;
        CHECK_EQ_U64(safeload_model_tensor_count(mod), 1);
        CHECK_EQ_U64(safeload_model_warning_count(mod), 1001);
        w = safeload_model_warning(mod, 999);
        CHECK(w && w->code == SAFELOAD_INDEX_UNLISTED_TENSOR && w->tensor[0] != 0);
        w = safeload_model_warning(mod, 1000);
        CHECK_MSG(w && w->code == SAFELOAD_INDEX_UNLISTED_TENSOR && w->tensor[0] == 0 &&
                  strstr(w->message, "499 more shard tensors") != NULL, "%s",
                  w ? w->message : "(none)");
        safeload_model_close(mod);
    }
    remove(idx);
    remove(p);
    snprintf(p, sizeof p, "%s/a0.safetensors", sub);
    remove(p);
    snprintf(p, sizeof p, "%s/a1.safetensors", sub);
    remove(p);
    rmdir(sub);
    free(st);
    free(nm);
}

/* ---- SAFELOAD_IO_AUTO: direct I/O for the files whose bytes are not in the page cache ---- */

/* drop a file from the page cache; 1 if it went (a file system may keep it: tmpfs) */
static int tl_drop(const char *path) {
    double r;
    pc_drop(path);
    r = pc_resident(path, 0, 0);
    return r >= 0 && r < 0.01;
}

/* read [off, off + len) into the page cache, without readahead past it */
static void tl_cache(const char *path, uint64_t off, uint64_t len) {
    static unsigned char buf[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    while (len) {
        size_t k = len < sizeof buf ? (size_t)len : sizeof buf;
        if (pread(fd, buf, k, (off_t)off) != (ssize_t)k) break;
        off += k;
        len -= k;
    }
    close(fd);
}

/* one load of the named tensors (all when names is NULL) with io AUTO, checked byte for byte;
   returns stats.direct_files, or -1 when the load failed */
static int tl_auto_load(safeload_model *mod, const char *const *names, size_t n,
                        const unsigned char *const *want, safeload_io *io_out) {
    safeload_request rq[4];
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_arena *arena = NULL;
    safeload_error e;
    size_t i;
    int ok = 1;
    memset(rq, 0, sizeof rq);
    memset(&d, 0, sizeof d);
    d.io = SAFELOAD_IO_AUTO;
    d.threads = 2;
    d.stats = &st;
    for (i = 0; i < n; i++) rq[i].name = names[i];
    if (safeload_load(mod, rq, n, &d, &arena, &e) != SAFELOAD_OK) {
        CHECK_MSG(0, "AUTO load: %s", e.message);
        return -1;
    }
    for (i = 0; i < n; i++) ok &= memcmp(rq[i].data, want[i], (size_t)rq[i].nbytes) == 0;
    CHECK_MSG(ok, "AUTO load: the bytes differ");
    safeload_arena_free(arena);
    if (io_out) *io_out = st.io;
    return st.direct_files;
}

static void test_io_auto_once(void) {
    /* a: 1 MiB, b: 17 MiB (together more than 16 MiB: the probe samples 16 windows of 1 MiB,
       1.13 MiB apart), c: 1 MiB, in that order in the file */
    static const uint64_t na = 1u << 20, nb = 17u << 20;
    unsigned char *a = (unsigned char *)malloc(na), *b = (unsigned char *)malloc(nb);
    unsigned char *c = (unsigned char *)malloc(na);
    const unsigned char *want[2], *want_ac[2];
    const char *names[2] = {"a", "b"}, *names_ac[2] = {"a", "c"};
    uint64_t sa[1] = {na}, sb[1] = {nb}, ds;
    safeload_save_tensor st[3];
    safeload_model *mod = NULL, *two = NULL;
    safeload_error e;
    safeload_io io = SAFELOAD_IO_DEFAULT;
    char p[400], p2[400];
    uint64_t i;
    int fd;
    for (i = 0; i < na; i++) a[i] = (unsigned char)(i * 31 + (i >> 13));
    for (i = 0; i < nb; i++) b[i] = (unsigned char)(i * 17 + (i >> 11) + 5);
    for (i = 0; i < na; i++) c[i] = (unsigned char)(i * 7 + 3);
    want[0] = want_ac[0] = a;
    want[1] = b;
    want_ac[1] = c;
    memset(st, 0, sizeof st);
    st[0].name = "a"; st[0].dtype = SAFELOAD_U8; st[0].rank = 1; st[0].shape = sa;
    st[0].data = a; st[0].nbytes = na;
    st[1] = st[0];
    st[1].name = "b"; st[1].shape = sb; st[1].data = b; st[1].nbytes = nb;
    st[2] = st[0];
    st[2].name = "c"; st[2].data = c;
    tl_path(p, sizeof p, "auto.safetensors");
    tl_path(p2, sizeof p2, "auto_b.safetensors");
    CHECK(safeload_save(p, st, 3, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_save(p2, st + 1, 1, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_model_open(&mod, p, NULL, &e) == SAFELOAD_OK);
    ds = safeload_file_size(safeload_model_shard(mod, 0)) - 2 * na - nb;   /* a's first byte */

    /* just written, so in the page cache: buffered reads, as READ */
    CHECK_EQ_U64(tl_auto_load(mod, names, 2, want, &io), 0);
    CHECK(io == SAFELOAD_IO_READ);

    fd = open(p, O_RDONLY | O_DIRECT);
    if (fd < 0 || !tl_drop(p)) {
        printf("  io AUTO: this file system %s, cold-file checks skipped\n",
               fd < 0 ? "refuses O_DIRECT" : "keeps dropped pages");
        if (fd >= 0) close(fd);
        goto done;
    }
    close(fd);
    /* cold: O_DIRECT, and the page cache stays as it was */
    CHECK_EQ_U64(tl_auto_load(mod, names, 2, want, &io), 1);
    CHECK(io == SAFELOAD_IO_DIRECT);
    CHECK_MSG(pc_resident(p, ds, na + nb) < 0.05, "an AUTO load of a cold file filled the page "
              "cache: %.2f", pc_resident(p, ds, na + nb));
    /* a READ load caches it; AUTO then reads it buffered */
    {
        safeload_loaded *l = NULL;
        safeload_load_desc d;
        memset(&d, 0, sizeof d);
        d.io = SAFELOAD_IO_READ;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        safeload_loaded_free(l);
    }
    CHECK_EQ_U64(tl_auto_load(mod, names, 2, want, NULL), 0);

    /* the bytes the load reads decide, not the whole file: a cached, b cold */
    CHECK(tl_drop(p));
    tl_cache(p, ds, na);
    CHECK_EQ_U64(tl_auto_load(mod, names, 1, want, NULL), 0);
    CHECK_EQ_U64(tl_auto_load(mod, names + 1, 1, want + 1, NULL), 1);
    /* only the requested bytes count, not those between: a and c cached around a cold b
       read buffered, a and c cold around a cached b direct */
    CHECK(tl_drop(p));
    tl_cache(p, ds, na);
    tl_cache(p, ds + na + nb, na);
    CHECK_EQ_U64(tl_auto_load(mod, names_ac, 2, want_ac, NULL), 0);
    CHECK(tl_drop(p));
    tl_cache(p, ds + na, nb);
    CHECK_EQ_U64(tl_auto_load(mod, names_ac, 2, want_ac, NULL), 1);
    CHECK(tl_drop(p));
    /* a, then b: the sampled windows of the whole span. Three quarters cached (12 of the 16
       windows): buffered; a seventh (2.3 windows): direct */
    tl_cache(p, ds, (na + nb) * 3 / 4);
    CHECK_EQ_U64(tl_auto_load(mod, names, 2, want, NULL), 0);
    CHECK(tl_drop(p));
    tl_cache(p, ds, (na + nb) / 7);
    CHECK_EQ_U64(tl_auto_load(mod, names, 2, want, NULL), 1);

    /* per file: a model of two files, a's just written (cached) and b's dropped (cold) */
    {
        char pa[400];
        safeload_file *pair[2] = {NULL, NULL};
        tl_path(pa, sizeof pa, "auto_a.safetensors");
        CHECK(tl_drop(p2));
        CHECK(safeload_save(pa, st, 1, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_open(&pair[0], pa, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_open(&pair[1], p2, NULL, &e) == SAFELOAD_OK);
        CHECK(safeload_model_from_files(&two, pair, 2, NULL, &e) == SAFELOAD_OK);
        CHECK_EQ_U64(tl_auto_load(two, names, 2, want, &io), 1);
        CHECK(io == SAFELOAD_IO_DIRECT);
        CHECK(pc_resident(pa, 0, 0) > 0.9);
        CHECK(pc_resident(p2, 0, 0) < 0.05);
        {
            /* DIRECT opens only the files a load reads: a's, not b's */
            safeload_request q;
            safeload_load_desc d;
            safeload_load_stats ls;
            safeload_arena *ar = NULL;
            memset(&q, 0, sizeof q);
            memset(&d, 0, sizeof d);
            q.name = "a";
            d.io = SAFELOAD_IO_DIRECT;
            d.stats = &ls;
            CHECK(safeload_load(two, &q, 1, &d, &ar, &e) == SAFELOAD_OK);
            CHECK(q.data && memcmp(q.data, a, na) == 0);
            CHECK_EQ_U64(ls.direct_files, 1);
            CHECK(ls.io == SAFELOAD_IO_DIRECT);
            safeload_arena_free(ar);
        }
        safeload_model_close(two);
        remove(pa);
    }
done:
    safeload_model_close(mod);
    remove(p);
    remove(p2);
    free(a);
    free(b);
    free(c);
}

static void test_io_auto(void) {
    test_io_auto_once();            /* cachestat where the kernel has it (6.5+) */
    tl_no_cachestat = 1;            /* mincore */
    test_io_auto_once();
    tl_no_cachestat = 0;
}

/* ---- slices on any dimension ---- */

/* A tensor of any rank (up to 4), filled like tl_add's. */
static void tl_add_nd(tl_model *m, const char *name, safeload_dtype dt, uint32_t rank,
                      const uint64_t *shape) {
    tl_tensor *t;
    uint64_t numel = 1;
    uint32_t k;
    m->t = (tl_tensor *)realloc(m->t, (m->n + 1) * sizeof *m->t);
    t = &m->t[m->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->rank = rank;
    for (k = 0; k < rank; k++) { t->shape[k] = shape[k]; numel *= shape[k]; }
    t->nbytes = numel * safeload_dtype_bits(dt) / 8;
    t->data = (unsigned char *)malloc(t->nbytes ? t->nbytes : 1);
    tl_fill(t->data, t->nbytes, dt);
}

/* The slice the slow way: for each index of the dimensions before d, the bytes of rows
   [b, e) of d. *len: its bytes; *span: from its first byte to its last in the file; *runs,
   *gap: the runs and the bytes between them. */
static unsigned char *tl_naive_slice(const tl_tensor *t, uint32_t d, uint64_t b, uint64_t e,
                                     uint64_t *len, uint64_t *runs, uint64_t *gap) {
    uint64_t outer = 1, inner = 1, ib, o, k;
    unsigned char *out;
    for (k = 0; k < d; k++) outer *= t->shape[k];
    for (k = d + 1; k < t->rank; k++) inner *= t->shape[k];
    ib = inner * safeload_dtype_bits(t->dtype) / 8;
    *len = outer * (e - b) * ib;
    *runs = outer;
    *gap = (t->shape[d] - (e - b)) * ib;
    out = (unsigned char *)malloc(*len + 1);
    for (o = 0; o < outer; o++)
        memcpy(out + o * (e - b) * ib, t->data + (o * t->shape[d] + b) * ib, (size_t)((e - b) * ib));
    return out;
}

typedef struct tl_slice_case {
    const tl_tensor *t;
    uint32_t dim;
    uint64_t b, e;
    safeload_dtype cast;
    unsigned char *want;            /* expected output bytes (cast applied) */
    uint64_t want_len, src_len, span;
} tl_slice_case;

/* Random slices of every dimension of every tensor of s (some whole, some cast to F32). */
static size_t tl_slice_cases(const tl_model *s, tl_slice_case *c, size_t cap) {
    size_t n = 0, i;
    for (i = 0; i < s->n; i++) {
        const tl_tensor *t = &s->t[i];
        uint32_t d;
        if (t->rank == 0 || t->dtype == SAFELOAD_F4) continue;
        for (d = 0; d < t->rank && n < cap; d++) {
            tl_slice_case *x = &c[n++];
            uint64_t rows = t->shape[d], runs, gap, len;
            unsigned char *src;
            memset(x, 0, sizeof *x);
            x->t = t;
            x->dim = d;
            if (rows == 0) { n--; continue; }
            x->b = tu_rand64() % rows;
            x->e = x->b + 1 + tu_rand64() % (rows - x->b);
            if (tu_rand64() % 4 == 0) { x->b = 0; x->e = 1 + tu_rand64() % rows; }
            src = tl_naive_slice(t, d, x->b, x->e, &len, &runs, &gap);
            x->src_len = len;
            x->span = runs && gap <= 65536 ? len + (runs - 1) * gap : len;
            if ((t->dtype == SAFELOAD_BF16 || t->dtype == SAFELOAD_F16) && tu_rand64() % 2) {
                safeload_convert_desc cd;
                uint64_t cnt = len / 2;
                memset(&cd, 0, sizeof cd);
                cd.simd = SAFELOAD_SIMD_SCALAR;
                x->cast = SAFELOAD_F32;
                x->want = (unsigned char *)malloc(cnt * 4 + 1);
                CHECK(safeload_convert_ex(x->want, SAFELOAD_F32, src, t->dtype, (size_t)cnt,
                                          &cd) == SAFELOAD_OK);
                x->want_len = cnt * 4;
                free(src);
            } else {
                x->want = src;
                x->want_len = len;
            }
        }
    }
    return n;
}

static void tl_slice_requests(const tl_slice_case *c, size_t n, safeload_request *rq,
                              unsigned char **buf, int caller) {
    size_t i;
    for (i = 0; i < n; i++) {
        memset(&rq[i], 0, sizeof rq[i]);
        rq[i].name = c[i].t->name;
        rq[i].slice_dim = c[i].dim;
        rq[i].slice_begin = c[i].b;
        rq[i].slice_end = c[i].e;
        rq[i].dtype = c[i].cast;
        buf[i] = NULL;
        if (caller) {
            buf[i] = (unsigned char *)malloc(c[i].want_len + 64);
            memset(buf[i], 0x5A, c[i].want_len + 64);
            rq[i].dst = buf[i] + 32;
            rq[i].dst_size = c[i].want_len;
        }
    }
}

/* Exact bytes in every request (and untouched guards around caller buffers); frees buf. */
static int tl_slice_verify(const tl_slice_case *c, size_t n, const safeload_request *rq,
                           unsigned char **buf) {
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        int k;
        if (rq[i].nbytes != c[i].want_len || !rq[i].data ||
            memcmp(rq[i].data, c[i].want, (size_t)c[i].want_len) != 0) {
            if (!bad) fprintf(stderr, "  slice mismatch: %s dim %u [%llu, %llu)\n", c[i].t->name,
                              c[i].dim, (unsigned long long)c[i].b, (unsigned long long)c[i].e);
            bad++;
        }
        if (buf[i]) {
            for (k = 0; k < 32; k++)
                if (buf[i][k] != 0x5A || buf[i][32 + c[i].want_len + k] != 0x5A) bad++;
            free(buf[i]);
            buf[i] = NULL;
        }
    }
    return bad;
}

static void tl_make_slices(tl_model *s) {
    static const uint64_t a1[] = {100003}, a2[] = {300, 700}, b2[] = {64, 40000},
                          a3[] = {5, 37, 129}, a4[] = {3, 4, 5, 67}, b4[] = {2, 3, 2, 2000},
                          c3[] = {17, 33, 9}, f4[] = {6, 10}, e3[] = {4, 0, 3}, d2[] = {9, 3};
    tl_add_nd(s, "r1.u8", SAFELOAD_U8, 1, a1);
    tl_add_nd(s, "r2.bf16", SAFELOAD_BF16, 2, a2);
    tl_add_nd(s, "r2.wide.f32", SAFELOAD_F32, 2, b2);     /* rows 160 KB apart: separate runs */
    tl_add_nd(s, "r3.f16", SAFELOAD_F16, 3, a3);
    tl_add_nd(s, "r4.f32", SAFELOAD_F32, 4, a4);
    tl_add_nd(s, "r4.i64", SAFELOAD_I64, 4, b4);
    tl_add_nd(s, "r3.fp8", SAFELOAD_F8_E4M3, 3, c3);
    tl_add_nd(s, "r2.small.bf16", SAFELOAD_BF16, 2, d2);
    tl_add_nd(s, "f4", SAFELOAD_F4, 2, f4);
    tl_add_nd(s, "empty", SAFELOAD_BF16, 3, e3);
    tl_add_nd(s, "scalar", SAFELOAD_F32, 0, NULL);
}

static void test_slices_any_dim(void) {
    enum { CAP = 64 };
    tl_model s;
    char path[400];
    tl_slice_case c[CAP];
    safeload_request rq[CAP];
    unsigned char *buf[CAP];
    unsigned char *img;
    size_t n, imgn, i;
    safeload_file *f;
    safeload_error e;
    int src, th, io, round;
    memset(&s, 0, sizeof s);
    tl_make_slices(&s);
    tl_path(path, sizeof path, "slices.safetensors");
    CHECK(tl_save(&s, 0, s.n, path));
    img = tu_slurp(path, &imgn);
    /* sources: a file in each I/O mode, memory, a reader with short reads */
    for (round = 0; round < (tu_quick() ? 2 : 4); round++)
        for (src = 0; src < 6; src++)
            for (th = 1; th <= 4; th++) {
                safeload_load_desc d;
                safeload_load_stats st;
                safeload_arena *ar = NULL;
                safeload_reader rd;
                tl_reader tr;
                uint64_t lo = 0, hi = 0;
                int caller = (th + round) % 2, bad;
                if (tu_quick() && th != 1 + (round + src) % 4) continue;
                n = tl_slice_cases(&s, c, CAP);
                memset(&d, 0, sizeof d);
                d.threads = th;
                d.stats = &st;
                d.chunk_size = round % 2 ? 12288 : 0;       /* runs across chunk boundaries */
                d.staging_size = round >= 2 ? 4096 : 0;
                io = src < 4 ? SAFELOAD_IO_READ + src : SAFELOAD_IO_READ;
                d.io = (safeload_io)io;
                if (src == 4) {
                    CHECK(safeload_open_memory(&f, img, imgn, NULL, &e) == SAFELOAD_OK);
                } else if (src == 5) {
                    memset(&tr, 0, sizeof tr);
                    tr.p = img; tr.n = imgn; tr.fail_at = -1;
                    memset(&rd, 0, sizeof rd);
                    rd.read = tl_read; rd.size = imgn; rd.user = &tr; rd.name = "slices";
                    CHECK(safeload_open_reader(&f, &rd, NULL, &e) == SAFELOAD_OK);
                } else {
                    CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
                }
                tl_slice_requests(c, n, rq, buf, caller);
                CHECK_MSG(safeload_load_file(f, rq, n, &d, caller ? NULL : &ar, &e) ==
                          SAFELOAD_OK, "src %d threads %d: %s", src, th, e.message);
                bad = tl_slice_verify(c, n, rq, buf);
                CHECK_MSG(bad == 0, "round %d src %d threads %d: %d bad slices", round, src, th,
                          bad);
                /* what was read: the runs, and at most the gaps (<= 64 KiB) between them; from
                   memory (a mapping, a buffer) the runs alone */
                for (i = 0; i < n; i++) { lo += c[i].src_len; hi += c[i].span; }
                if (io == SAFELOAD_IO_MMAP || src == 4) hi = lo;
                CHECK_MSG(st.bytes_read >= lo && st.bytes_read <= hi,
                          "src %d threads %d: read %llu, want %llu..%llu", src, th,
                          (unsigned long long)st.bytes_read, (unsigned long long)lo,
                          (unsigned long long)hi);
                safeload_arena_free(ar);
                safeload_close(f);
                for (i = 0; i < n; i++) free(c[i].want);
            }
    {   /* one slice of dimension 1 with rows 1,200 bytes apart: one preadv of the span; on a
           wide tensor (runs 160 KB apart): the runs alone, one read each */
        safeload_load_desc d;
        safeload_load_stats st;
        safeload_arena *ar = NULL;
        const tl_tensor *t = tl_get(&s, "r2.bf16");
        uint64_t len, runs, gap;
        unsigned char *want = tl_naive_slice(t, 1, 100, 200, &len, &runs, &gap);
        CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
        memset(&d, 0, sizeof d);
        d.threads = 1;
        d.stats = &st;
        memset(&rq[0], 0, sizeof rq[0]);
        rq[0].name = t->name; rq[0].slice_dim = 1; rq[0].slice_begin = 100; rq[0].slice_end = 200;
        CHECK(safeload_load_file(f, rq, 1, &d, &ar, &e) == SAFELOAD_OK);
        CHECK(rq[0].nbytes == len && memcmp(rq[0].data, want, (size_t)len) == 0);
        if (!tu_big_endian()) {     /* there a swap is a cast: the runs go through staging */
            CHECK_EQ_U64(st.bytes_read, 299 * 1400 + 200);
            CHECK_EQ_U64(st.reads, 1);
        }
        CHECK_EQ_U64(st.bytes_written, len);
        safeload_arena_free(ar);
        free(want);
        t = tl_get(&s, "r2.wide.f32");
        want = tl_naive_slice(t, 1, 5, 9, &len, &runs, &gap);
        rq[0].name = t->name; rq[0].slice_begin = 5; rq[0].slice_end = 9;
        CHECK(safeload_load_file(f, rq, 1, &d, &ar, &e) == SAFELOAD_OK);
        CHECK(rq[0].nbytes == len && memcmp(rq[0].data, want, (size_t)len) == 0);
        CHECK_EQ_U64(st.bytes_read, 64 * 16);
        CHECK_EQ_U64(st.reads, 64);
        safeload_arena_free(ar);
        free(want);
        /* and slices that are the whole tensor are the whole tensor, for F4 too */
        t = tl_get(&s, "f4");
        rq[0].name = t->name; rq[0].slice_dim = 1; rq[0].slice_begin = 0; rq[0].slice_end = 10;
        CHECK(safeload_load_file(f, rq, 1, &d, &ar, &e) == SAFELOAD_OK);
        CHECK(rq[0].nbytes == 30 && memcmp(rq[0].data, t->data, 30) == 0);
        safeload_arena_free(ar);
        /* F4 rows of dimension 0 are 5 bytes: slices of them work */
        rq[0].slice_dim = 0; rq[0].slice_begin = 1; rq[0].slice_end = 3;
        CHECK(safeload_load_file(f, rq, 1, &d, &ar, &e) == SAFELOAD_OK);
        CHECK(rq[0].nbytes == 10 && memcmp(rq[0].data, t->data + 5, 10) == 0);
        safeload_arena_free(ar);
        safeload_close(f);
    }
    {   /* bad slices: INVALID_SLICE saying which, nothing loaded */
        static const struct { const char *name; uint32_t dim; uint64_t b, e; const char *says; } bad[] = {
            {"r3.f16", 3, 0, 1, "slice_dim 3 of a tensor of rank 3"},
            {"r3.f16", 1, 5, 5, "an empty slice [5, 5) of dimension 1, which has 37 entries"},
            {"r3.f16", 2, 7, 3, "an empty slice"},
            {"r3.f16", 2, 0, 130, "a past-the-end slice [0, 130) of dimension 2, which has 129"},
            {"r1.u8", 0, 0, 100004, "past-the-end"},
            {"scalar", 0, 0, 1, "a scalar cannot be sliced"},
            {"f4", 1, 0, 3, "does not start and end on whole bytes"},
            {"f4", 1, 2, 4, "does not start and end on whole bytes"},
            {"empty", 1, 0, 1, "past-the-end slice [0, 1) of dimension 1, which has 0 entries"},
        };
        unsigned char tiny[64];
        CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            safeload_arena *ar = NULL;
            memset(rq, 0, 2 * sizeof rq[0]);
            rq[0].name = "r1.u8";
            rq[0].dst = tiny; rq[0].dst_size = sizeof tiny;
            rq[0].slice_begin = 0; rq[0].slice_end = 64;
            rq[1].name = bad[i].name;
            rq[1].slice_dim = bad[i].dim;
            rq[1].slice_begin = bad[i].b;
            rq[1].slice_end = bad[i].e;
            CHECK(safeload_load_file(f, rq, 2, NULL, &ar, &e) == SAFELOAD_INVALID_SLICE);
            CHECK_MSG(strstr(e.message, bad[i].says) && strstr(e.message, "request 1") &&
                      strcmp(e.tensor, bad[i].name) == 0, "%s [%s]", e.message, e.tensor);
            CHECK(ar == NULL && rq[0].data == NULL && rq[1].data == NULL);
        }
        /* an empty tensor's slices of its other dimensions are empty, not errors */
        memset(&rq[0], 0, sizeof rq[0]);
        rq[0].name = "empty"; rq[0].slice_dim = 2; rq[0].slice_begin = 1; rq[0].slice_end = 2;
        {
            safeload_arena *ar = NULL;
            CHECK(safeload_load_file(f, rq, 1, NULL, &ar, &e) == SAFELOAD_OK);
            CHECK(rq[0].nbytes == 0 && rq[0].data != NULL);
            safeload_arena_free(ar);
        }
        safeload_close(f);
    }
    {   /* faults: every read failing in turn, short and interrupted reads; every allocation
           failing in turn. Either all is loaded exactly, or nothing, and nothing leaks. */
        int mode;
        for (mode = 0; mode < 3; mode++)
            for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_DIRECT; io++) {
                long k;
                if (io == SAFELOAD_IO_MMAP) continue;           /* no reads to fail */
                if (io == SAFELOAD_IO_DIRECT && mode == 1) continue;  /* O_DIRECT: aligned */
                for (k = 0; k < 400; k += tl_fault_step(k)) {
                    safeload_load_desc d;
                    safeload_arena *ar = NULL;
                    safeload_result r;
                    if (mode && k) break;
                    n = tl_slice_cases(&s, c, CAP);
                    memset(&d, 0, sizeof d);
                    d.threads = 1 + (int)(k % 3);
                    d.io = (safeload_io)io;
                    d.chunk_size = 12288;
                    d.staging_size = 4096;
                    d.queue_depth = 1;      /* the injected reads are pread's (test_queued_reads
                                               injects into the queue's completions) */
                    CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
                    tl_slice_requests(c, n, rq, buf, (int)(k % 2));
                    fi_set(mode == 0 ? FI_FAIL_AT : mode == 1 ? FI_SHORT : FI_EINTR, k);
                    r = safeload_load_file(f, rq, n, &d, k % 2 ? NULL : &ar, &e);
                    fi_set(FI_NONE, -1);
                    if (r == SAFELOAD_OK) {
                        CHECK_MSG(tl_slice_verify(c, n, rq, buf) == 0, "mode %d io %d at %ld",
                                  mode, io, k);
                    } else {
                        CHECK_MSG(r == SAFELOAD_IO_ERROR && mode == 0 && e.offset != SAFELOAD_NO_OFFSET &&
                                  e.tensor[0], "mode %d io %d at %ld: %s", mode, io, k, e.message);
                        for (i = 0; i < n; i++) {
                            CHECK(rq[i].data == NULL);
                            free(buf[i]);
                        }
                    }
                    safeload_arena_free(ar);
                    safeload_close(f);
                    for (i = 0; i < n; i++) free(c[i].want);
                    if (r == SAFELOAD_OK) break;
                }
                CHECK_MSG(mode || k > 3, "io %d: only %ld failure points", io, k);
            }
    }
    {
        tl_alloc ta;
        long k;
        CHECK(safeload_open(&f, path, NULL, &e) == SAFELOAD_OK);
        for (k = 0; k < 200; k += tl_fault_step(k)) {
            safeload_load_desc d;
            safeload_arena *ar = NULL;
            safeload_result r;
            n = tl_slice_cases(&s, c, CAP);
            memset(&d, 0, sizeof d);
            d.threads = 2;
            d.allocator = tl_allocator(&ta, k);
            tl_slice_requests(c, n, rq, buf, 0);
            r = safeload_load_file(f, rq, n, &d, &ar, &e);
            if (r == SAFELOAD_OK) CHECK(tl_slice_verify(c, n, rq, buf) == 0);
            else CHECK_MSG(r == SAFELOAD_OUT_OF_MEMORY && rq[0].data == NULL, "%s", e.message);
            safeload_arena_free(ar);
            CHECK_EQ_U64(ta.live, 0);
            for (i = 0; i < n; i++) free(c[i].want);
            if (r == SAFELOAD_OK) break;
        }
        CHECK(k > 3 && k < 200);
        safeload_close(f);
    }
    free(img);
    tl_free_model(&s);
}

/* ---- the arena's page policy: every policy gives the same bytes; stats say what ran ---- */
static void tl_make_pages(tl_model *m) {
    int i;
    char nm[96];
    tl_add(m, "p.a", SAFELOAD_BF16, 1537, 2049);
    tl_add(m, "p.b", SAFELOAD_F32, 1024, 1031);
    tl_add(m, "p.c", SAFELOAD_BF16, 2048, 2500);
    tl_add(m, "p.d", SAFELOAD_F16, 1000, 3001);
    for (i = 0; i < 300; i++) {
        snprintf(nm, sizeof nm, "p.small.%03d", i);
        tl_add(m, nm, SAFELOAD_BF16, 1 + (uint64_t)(i % 5), 96 + (uint64_t)(i % 13));
    }
}

/* One load_all with this policy, seams as set: checks the bytes, returns the stats. */
static safeload_load_stats tl_pages_load(const tl_model *m, safeload_model *mod,
                                         safeload_pages pol, int th, safeload_io io) {
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_loaded *l = NULL;
    safeload_error e;
    memset(&d, 0, sizeof d);
    memset(&st, 0xEE, sizeof st);
    d.threads = th;
    d.io = io;
    d.pages = pol;
    d.stats = &st;
    tl_touch_huge = tl_touch_normal = 0;
    CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK,
              "pages %d threads %d io %d: %s", (int)pol, th, (int)io, e.message);
    if (!l) { memset(&st, 0, sizeof st); return st; }
    CHECK_MSG(tl_check_loaded(m, l->tensors, l->count), "pages %d threads %d io %d", (int)pol,
              th, (int)io);
    CHECK_EQ_U64(st.fresh_bytes, safeload_arena_capacity(l->arena));
    CHECK(st.fresh_bytes >= 20u << 20);
    safeload_loaded_free(l);
    return st;
}

/* Bytes of the arena's windows from window k on, every `gap` windows, the gap growing `mult`
   times each time: where AUTO, on 4 KiB pages, tries huge pages again (each try slow, by the
   seam: twice as far after a slow one, SL__FAR_GAP times after one far under the line). */
static uint64_t tl_retry_bytes(uint64_t fresh, uint64_t k, uint64_t gap, uint64_t mult) {
    const uint64_t W = 2u << 20;
    uint64_t sum = 0;
    for (; k * W < fresh; gap *= mult, k += gap) sum += fresh - k * W < W ? fresh - k * W : W;
    return sum;
}

/* AUTO on 4 KiB pages watches them too: a 40 MiB arena (20 windows), the periodic retries
   out of reach (tl_recheck_wins), huge pages 1398 MB/s, 4 KiB ones 2097 in the probe */
static void tl_pages_watch4(int thp) {
    tl_model m = {0};
    char path[400];
    safeload_model *mod;
    safeload_error e;
    safeload_load_stats st;
    const uint64_t W = 2u << 20;
    int th, nth = tu_quick() ? 1 : 2;          /* quick: one thread */
    if (!thp) return;
    tl_add(&m, "q.a", SAFELOAD_F32, 2560, 4096);
    tl_add(&m, "q.b", SAFELOAD_BF16, 3, 1000);
    tl_path(path, sizeof path, "pages4.safetensors");
    CHECK(tl_save(&m, 0, m.n, path));
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    tl_recheck_wins = 1000;
    tl_touch_mode = 4;
    tl_touch_huge_ns = 1500000;
    tl_touch_normal_ns = 4000000;                       /* 524 MB/s */
    /* 4 KiB windows slow from the workers' first on: two verdicts (windows 4-7, 8-11) under
       the huge rate, and window 12 tries huge pages, which win: huge for the rest */
    tl_touch_normal_from = 2;
    tl_touch_normal_to = 1000;
    for (th = 1; th <= nth; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.fresh_bytes > 16 * W);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK_EQ_U64(st.touch_normal_mbps, 524);
        /* (two threads: a verdict may take in the last, partial window, timed whole) */
        if (th == 1) CHECK_EQ_U64(st.touch_huge_mbps, 1398);
        CHECK(st.touch_huge_mbps >= 1000 && st.touch_huge_mbps <= 1398);
        if (th == 1) CHECK_EQ_U64(st.huge_bytes, 2 * W + st.fresh_bytes - 12 * W);
        /* two threads: where the switch lands is the scheduler's (the other worker's windows
           in flight when it comes: seen as late as window 18 of 20) */
        CHECK_MSG(st.huge_bytes > 2 * W, "threads %d: %.2f of %.2f windows huge", th,
                  (double)st.huge_bytes / (double)W, (double)st.fresh_bytes / (double)W);
    }
    /* one slow verdict alone (windows 4-7) tries nothing: 4 KiB pages throughout */
    tl_touch_normal_to = 6;
    for (th = 1; th <= nth; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.huge_bytes, 2 * W);
        if (th == 1) CHECK_EQ_U64(st.touch_normal_mbps, 2097);  /* the latest verdict's */
    }
    /* 4 KiB pages slow, huge ones slower (20 MB/s): they stay lost, nothing tried (the probe
       stops after its pair: the workers' 4 KiB windows from the second on) */
    tl_touch_mode = 1;
    tl_touch_normal_from = 1;
    tl_touch_normal_to = 1000;
    for (th = 1; th <= nth; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.huge_bytes, W);
        CHECK_EQ_U64(st.touch_normal_mbps, 524);
        CHECK_EQ_U64(st.touch_huge_mbps, 20);
    }
    /* huge pages at 8x the 4 KiB rate or more win after the probe's first pair (SL__WON_BY):
       two 4 KiB windows in the load, the probe's and the check's after the first verdict; at
       5x the probe takes its four windows, and three are 4 KiB */
    tl_touch_mode = 4;
    tl_touch_normal_ns = 0;
    tl_won_by = 8;
    for (th = 1; th <= nth; th++) {
        tl_touch_huge_ns = 100000;              /* 10x */
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK_EQ_U64(st.huge_bytes, st.fresh_bytes - 2 * W);
        tl_touch_huge_ns = 200000;              /* 5x */
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK_EQ_U64(st.huge_bytes, st.fresh_bytes - 3 * W);
    }
    tl_won_by = 0;
    /* on huge pages: the probe's two 4 KiB windows both stalled (6.7 ms, 313 MB/s), as the
       first ones after idle memory can be, and huge pages at 699 MB/s pass the probe and the
       first verdict against that. The 4 KiB window after it (window 8) runs at 2097: the
       verdict fails against that (a strike), the next one too (windows 9-12), and the rest
       goes to 4 KiB pages. Before the check, huge pages stayed for the whole arena. */
    tl_touch_mode = 4;
    tl_touch_huge_ns = 3000000;
    tl_touch_normal_ns = 6700000;
    tl_touch_normal_from = 0;
    tl_touch_normal_to = 2;
    for (th = 1; th <= nth; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.fresh_bytes > 16 * W);
        CHECK_EQ_U64(st.touch_normal_mbps, 2097);
        CHECK(st.huge_bytes >= 10 * W);
        if (th > 1) continue;
        /* (two threads: a verdict the other worker takes before the check's rate lands
           passes against the stalled one and clears the strike, 14-15 windows seen; where
           the scheduler keeps this worker out long enough, no switch at all) */
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.touch_huge_mbps, 699);
        CHECK_EQ_U64(st.huge_bytes, 10 * W);
    }
    /* ... the check window stalled as well: nothing learnt, huge pages stay (all but the
       three 4 KiB windows) */
    tl_touch_normal_to = 3;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_HUGE);
    CHECK_EQ_U64(st.touch_normal_mbps, 313);
    CHECK_EQ_U64(st.huge_bytes, st.fresh_bytes - 3 * W);
    tl_touch_normal_ns = 4000000;
    tl_touch_huge_ns = 1500000;
    /* on huge pages, verdicts slow (262 MB/s, half the 4 KiB rate of the windows stalled
       above, 524) and fast by turns (windows 4-7 slow, 8-11 fast, then the 4 KiB check at 12,
       13-16 slow): two slow among the last three switch the rest to 4 KiB pages; two in a row
       never came, and huge pages stayed for the whole arena */
    tl_touch_mode = 8;
    tl_touch_slow_ns = 8000000;
    for (th = 1; th <= nth; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.fresh_bytes > 18 * W);
        CHECK(st.huge_bytes >= 10 * W);
        if (th > 1) continue;                   /* (two threads: the switch is the scheduler's) */
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.huge_bytes, 14 * W);
        CHECK_EQ_U64(st.touch_huge_mbps, 262);
    }
    tl_touch_slow_ns = 0;
    /* the periodic retry, 4 windows after the probe, is held against the latest 4 KiB rate:
       4 KiB windows 4-7 slow, so window 8 goes huge */
    tl_recheck_wins = 4;
    tl_touch_mode = 4;
    tl_touch_normal_from = 2;
    tl_touch_normal_to = 6;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_HUGE);
    CHECK_EQ_U64(st.huge_bytes, 2 * W + st.fresh_bytes - 8 * W);
    tl_touch_normal_ns = 0;
    /* retries every 2 windows from the probe, each slow: huge pages merely slow (1398 MB/s, 2/3
       of the 4 KiB rate) double the gap (windows 6, 10, 18); far under the line (20 MB/s, the
       probe stops after its pair) make it SL__FAR_GAP times as long (windows 4, then 20, the
       arena's last, partial) */
    tl_recheck_wins = 2;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
    CHECK_EQ_U64(st.touch_huge_mbps, 1398);
    CHECK(st.fresh_bytes > 20 * W && st.fresh_bytes < 21 * W);
    CHECK_EQ_U64(st.huge_bytes, 2 * W + tl_retry_bytes(st.fresh_bytes, 6, 2, 2));
    CHECK_EQ_U64(st.huge_bytes, 5 * W);
    tl_touch_mode = 1;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
    CHECK_EQ_U64(st.touch_huge_mbps, 20);
    CHECK_EQ_U64(st.huge_bytes, W + tl_retry_bytes(st.fresh_bytes, 4, 2, SL__FAR_GAP));
    CHECK_EQ_U64(st.huge_bytes, 2 * W + st.fresh_bytes - 20 * W);
    tl_recheck_wins = 4;
    tl_touch_mode = 0;
    safeload_model_close(mod);
    if (!getenv("TL_KEEP")) remove(path);
    tl_free_model(&m);
}

static void test_pages(void) {
    static const safeload_io ios[2] = {SAFELOAD_IO_READ, SAFELOAD_IO_MMAP};
    tl_model m = {0};
    char path[400];
    safeload_model *mod;
    safeload_error e;
    safeload_load_stats st;
    int th, io, pol, thp;
    const uint64_t W = 2u << 20;
    void *probe;
    tl_make_pages(&m);
    tl_path(path, sizeof path, "pages.safetensors");
    CHECK(tl_save(&m, 0, m.n, path));
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    /* does this kernel take MADV_HUGEPAGE at all? */
    probe = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    thp = probe != MAP_FAILED && madvise(probe, 4u << 20, MADV_HUGEPAGE) == 0;
    if (probe != MAP_FAILED) munmap(probe, 4u << 20);
    /* as measured, every policy, threads, read and mmap: the same bytes */
    for (pol = 0; pol <= 2; pol++)
        for (th = 1; th <= 2; th++)
            for (io = 0; io < 2; io++) {
                if (tu_quick() && (pol + th + io) % 2) continue;    /* quick: half of them */
                st = tl_pages_load(&m, mod, (safeload_pages)pol, th, ios[io]);
                if (pol == SAFELOAD_PAGES_NORMAL) {
                    CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
                    CHECK_EQ_U64(st.huge_bytes, 0);
                    CHECK(st.touch_huge_mbps == 0 && st.touch_normal_mbps == 0);
                } else if (pol == SAFELOAD_PAGES_HUGE) {
                    CHECK(st.pages == (thp ? SAFELOAD_PAGES_HUGE : SAFELOAD_PAGES_NORMAL));
                    CHECK_EQ_U64(st.huge_bytes, thp ? st.fresh_bytes : 0);
                    CHECK(st.touch_huge_mbps == 0 && st.touch_normal_mbps == 0);
                } else {                        /* AUTO: it measured both, and chose */
                    CHECK(st.pages == SAFELOAD_PAGES_HUGE || st.pages == SAFELOAD_PAGES_NORMAL);
                    if (thp) {
                        CHECK(st.touch_normal_mbps > 0 && st.touch_huge_mbps > 0);
                        CHECK(st.huge_bytes >= 2 * W && st.huge_bytes <= st.fresh_bytes);
                    }
                }
            }
    /* the arena's windows alone decide: no load runs the big tables' 16-page probe, whatever
       it would say (the seam: 8 us a page, dear), and the 4 KiB rate is a window's */
    tl_big_mode = 1;
    for (pol = 0; pol <= 2; pol++)
        for (th = 1; th <= 2; th++) {
            if (tu_quick() && (pol + th) % 2) continue;             /* quick: half of them */
            tl_big_probes = tl_big_huge_probes = 0;
            st = tl_pages_load(&m, mod, (safeload_pages)pol, th, ios[th - 1]);
            CHECK_EQ_U64(tl_big_probes + tl_big_huge_probes, 0);
            if (pol == SAFELOAD_PAGES_AUTO && thp) CHECK(st.touch_normal_mbps != 512);
        }
    tl_big_mode = 0;
    if (!thp) {
        fprintf(stderr, "  no transparent huge pages here: the policy seams are not run\n");
        goto done;
    }
    /* huge pages slow (the seam: 100x the 4 KiB time): AUTO's probe stops after its first
       pair (huge pages under half the 4 KiB rate), 4 KiB pages for the rest, and a huge window
       again 4 windows (SL__RECHECK_WINS here) after the probe, then 8 after that */
    tl_touch_mode = 1;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK(st.fresh_bytes > 6 * W);                      /* (one retry at least) */
        CHECK_EQ_U64(st.huge_bytes, W + tl_retry_bytes(st.fresh_bytes, 6, 4, SL__FAR_GAP));
        CHECK_EQ_U64(st.touch_normal_mbps, 2097);           /* 2 MiB in 1 ms */
        CHECK_EQ_U64(st.touch_huge_mbps, 20);               /* 2 MiB in 100 ms */
    }
    /* huge pages slow at first, then fast (a moment of compaction): the first retry finds
       them fast and the rest of the arena goes back to huge pages; or the second one */
    tl_touch_mode = 5;
    for (th = 1; th <= 2; th++) {
        tl_touch_slow = 1;                                  /* the probe's one */
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK(st.touch_huge_mbps > 1000000 && st.touch_normal_mbps == 2097);
        /* 4 KiB: the probe's window 1 and windows 2-5; with two threads also those the other
           worker took while the retry ran (how many is the scheduler's: under qemu, all) */
        if (th == 1) CHECK_EQ_U64(st.huge_bytes, st.fresh_bytes - 5 * W);
        CHECK(st.huge_bytes >= 2 * W && st.huge_bytes <= st.fresh_bytes - 5 * W);
        /* the first retry's slow too: the next one would be at window 14, past this load */
        tl_touch_slow = 2;
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.fresh_bytes > 6 * W && st.fresh_bytes <= 14 * W);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.huge_bytes, 2 * W);
    }
    /* huge pages a little slower to fault in than 4 KiB ones (up to a quarter): AUTO keeps
       them (they pay back in the copy and the release); slower than that, it does not */
    tl_touch_mode = 4;
    {
        static const unsigned long long ns[6] = {1000000, 1150000, 1250000, 1500000, 1950000,
                                                 2100000};
        for (th = 0; th < 6; th++) {
            /* 100 %, 87 %, 80 %, 67 %, 51 % and 48 % of the 4 KiB rate */
            tl_touch_huge_ns = ns[th];
            st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1 + th % 2, SAFELOAD_IO_READ);
            CHECK_MSG(st.pages == (th < 3 ? SAFELOAD_PAGES_HUGE : SAFELOAD_PAGES_NORMAL),
                      "huge %llu MB/s, normal %llu: pages %d", (unsigned long long)st.touch_huge_mbps,
                      (unsigned long long)st.touch_normal_mbps, (int)st.pages);
            /* the whole probe (two huge windows) down to half the rate; under it, the first
               pair settles it; then the retries (slow again: huge pages must match 4 KiB) */
            if (th >= 3)
                CHECK_EQ_U64(st.huge_bytes, th < 5 ? 2 * W + tl_retry_bytes(st.fresh_bytes, 8, 4, 2)
                                                   : W + tl_retry_bytes(st.fresh_bytes, 6, 4, 2));
        }
    }
    /* huge pages fast: AUTO keeps them throughout, after all four probe windows (however
       fast, the pair's one 4 KiB window could be a stall), and one window on 4 KiB pages
       after the first verdict they pass (the probe's 4 KiB windows could both be stalls) */
    tl_touch_mode = 2;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK_EQ_U64(st.huge_bytes, st.fresh_bytes - 3 * W);    /* all but those three */
        CHECK(st.touch_huge_mbps > 1000000 && st.touch_normal_mbps == 2097);
    }
    /* the 4 KiB rate is the probe's fastest 4 KiB window: a first one that stalled (4 ms,
       524 MB/s) does not count, the second (1 ms) does. Huge pages at 67 % of it lose; timed
       against both windows together (839 MB/s) they would have won */
    tl_touch_mode = 4;
    tl_touch_huge_ns = 1500000;                         /* 1398 MB/s */
    tl_touch_stall = 4000000;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.touch_normal_mbps, 2097);
        CHECK_EQ_U64(st.touch_huge_mbps, 1398);
        CHECK_EQ_U64(st.huge_bytes, 2 * W + tl_retry_bytes(st.fresh_bytes, 8, 4, 2));
    }
    /* the cliff of 12-02: huge pages fast for the probe's two windows, then at a third of the
       4 KiB rate (699 MB/s), and the first 4 KiB window stalled (6.7 ms, 313 MB/s). Against
       the stall they were OK and stayed for the whole arena; against the real rate two
       verdicts switch the rest to 4 KiB pages (the probe's 2 windows, then 8) */
    tl_touch_mode = 7;
    tl_touch_huge_ns = 3000000;
    tl_touch_stall = 6700000;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.touch_normal_mbps, 2097);
        CHECK(st.fresh_bytes > 12 * W);
        /* with two threads the other worker may take the arena's last window (partial, timed
           as a whole one by the seam) into a verdict: a little under 699 */
        if (th == 1) CHECK_EQ_U64(st.touch_huge_mbps, 699);
        CHECK(st.touch_huge_mbps >= 524 && st.touch_huge_mbps <= 699);
        if (th == 1) CHECK_EQ_U64(st.huge_bytes, 10 * W + tl_retry_bytes(st.fresh_bytes, 16, 4, 2));
        CHECK(st.huge_bytes >= 10 * W && st.huge_bytes <= st.fresh_bytes);
    }
    tl_touch_stall = 0;
    /* huge pages turn slow after the probe, to a third of the 4 KiB rate (699 MB/s): two slow
       verdicts in a row (8 MiB each) switch the rest, and a retry 4 windows after that would
       find them still slow */
    tl_touch_mode = 3;
    tl_touch_fast = 2;                                  /* the probe's two */
    tl_touch_slow_ns = 3000000;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        /* probe 2 + two verdicts' 4 (windows 4-11), retries from window 16 (past this load);
           with two threads the other worker may take a window or two more meanwhile, and
           a verdict may take in the last, partial window (timed whole by the seam) */
        CHECK(st.fresh_bytes > 12 * W && st.fresh_bytes < 13 * W);
        if (th == 1) CHECK_EQ_U64(st.huge_bytes, 10 * W);
        if (th == 1) CHECK_EQ_U64(st.touch_huge_mbps, 699);
        CHECK(st.huge_bytes >= 10 * W && st.huge_bytes <= st.fresh_bytes);
        CHECK(st.touch_huge_mbps >= 524 && st.touch_huge_mbps <= 699);
    }
    /* ... to under a quarter of it (20 MB/s, as after idle on 12-02 and 12-03: the first huge
       pages fast, the rest at 0.1-0.2 of the 4 KiB rate): two such windows in a row switch at
       once (windows 4-5, before their verdict ends), and the retry comes at window 10 */
    tl_touch_slow_ns = 0;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        if (th == 1)
            CHECK_EQ_U64(st.huge_bytes, 4 * W + tl_retry_bytes(st.fresh_bytes, 10, 4, SL__FAR_GAP));
        /* (two threads: windows 4 to the one that switched, and the retry: the other worker
           may have taken more while this one waited, up to the whole arena under qemu) */
        CHECK(st.huge_bytes >= 5 * W && st.huge_bytes <= st.fresh_bytes);
        if (th == 1) CHECK_EQ_U64(st.touch_huge_mbps, 20);      /* the retry's */
        CHECK(st.touch_huge_mbps > 0 && st.touch_huge_mbps <= 20);  /* (or the partial last) */
    }
    /* one slow verdict alone (a passing moment, 699 MB/s) changes nothing: huge pages stay.
       The 4 KiB check comes after the first verdict they pass (windows 8-11), at window 12,
       the arena's last (partial); with two threads the other worker may have taken it first */
    tl_touch_mode = 9;                  /* only the first verdict's windows (huge windows 2-5) */
    tl_touch_slow_from = 2;
    tl_touch_slow_to = 6;
    tl_touch_slow_ns = 3000000;
    for (th = 1; th <= 2; th++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, th, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK(st.fresh_bytes > 12 * W && st.fresh_bytes < 13 * W);
        if (th == 1) CHECK_EQ_U64(st.huge_bytes, 10 * W);
        CHECK(st.huge_bytes == 10 * W || st.huge_bytes == st.fresh_bytes - 2 * W);
    }
    /* ... and where the kernel refuses 4 KiB pages for the rest, huge pages stay */
    tl_madv_fail = 8;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_HUGE);
    CHECK_EQ_U64(st.huge_bytes, 10 * W);
    tl_madv_fail = 0;
    /* two huge windows in a row far under the line (20 MB/s) switch at once (window 5); one
       (a window caught in a compaction) makes one slow verdict: huge pages stay. Two: the
       retry at window 10 finds them fast again, huge pages from there (4 KiB: the probe's
       two, 6-9) */
    tl_touch_slow_ns = 0;
    for (tl_touch_slow_to = 3; tl_touch_slow_to <= 4; tl_touch_slow_to++) {
        st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_HUGE);
        CHECK_MSG(st.huge_bytes == (tl_touch_slow_to == 4 ? st.fresh_bytes - 6 * W : 10 * W),
                  "%ld far windows: %.2f of %.2f windows huge", tl_touch_slow_to - 2,
                  (double)st.huge_bytes / (double)W, (double)st.fresh_bytes / (double)W);
    }
    /* two threads, the two far windows in flight together (mode 10: windows 4 and 5): the
       worker done first takes its next windows on 4 KiB pages while the other's can confirm
       the turn, and the second far one switches. Without that rule its next window went huge
       (fast here: the far run reset before the second landed) and huge pages stayed (10.85
       of 12.85 windows huge). With it: 4 KiB from window 6 on, then the retry at window 10
       (huge again) unless those 4 KiB windows had got past it by then; the other worker may
       take a window on 4 KiB pages while the retry runs. The scheduler can hand one more
       window to huge pages before the switch lands (7.85 of 12.85 windows huge: s390x under
       qemu-user, three test runs on two cores, 12-03), still far from the 10.85 without the
       rule */
    tl_touch_mode = 10;
    tl_touch_slow_from = 2;
    tl_touch_second = 0;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 2, SAFELOAD_IO_READ);
    CHECK_EQ_U64(tl_touch_second, 1);
    CHECK_MSG(st.huge_bytes >= 4 * W && st.huge_bytes <= st.fresh_bytes - 5 * W,
              "%.2f of %.2f windows huge", (double)st.huge_bytes / (double)W,
              (double)st.fresh_bytes / (double)W);
    tl_touch_mode = 9;
    /* a refused probe window: nothing measured, 4 KiB pages */
    tl_madv_fail = 2;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 1, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
    CHECK_EQ_U64(st.huge_bytes, W);                     /* the one huge window before it */
    CHECK(st.touch_huge_mbps == 0 && st.touch_normal_mbps == 0);
    /* no MADV_POPULATE_WRITE (kernels before 5.14): the probe writes its windows instead and
       still decides; the reads fault the rest in */
    tl_madv_fail = 4;
    tl_touch_mode = 1;
    tl_populates = 0;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_AUTO, 2, SAFELOAD_IO_READ);
    CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
    CHECK_EQ_U64(st.huge_bytes, W);                     /* the probe stopped after its pair */
    CHECK_EQ_U64(st.touch_normal_mbps, 2097);
    CHECK_EQ_U64(tl_populates, 1);      /* asked once for the whole arena */
    tl_populates = 0;
    st = tl_pages_load(&m, mod, SAFELOAD_PAGES_HUGE, 2, SAFELOAD_IO_MMAP);
    CHECK(st.pages == SAFELOAD_PAGES_HUGE);
    /* no probe here: each worker may ask once before it sees the other's refusal (qemu's
       scheduling showed both), never once per window */
    CHECK(st.fresh_bytes > 4 * W);
    CHECK(tl_populates >= 1 && tl_populates <= 2);
    /* no transparent huge pages (MADV_HUGEPAGE refused): every policy runs 4 KiB pages */
    tl_madv_fail = 1;
    tl_touch_mode = 2;
    for (pol = 0; pol <= 2; pol++) {
        st = tl_pages_load(&m, mod, (safeload_pages)pol, 2, SAFELOAD_IO_READ);
        CHECK(st.pages == SAFELOAD_PAGES_NORMAL);
        CHECK_EQ_U64(st.huge_bytes, 0);
        CHECK(st.touch_huge_mbps == 0 && st.touch_normal_mbps == 0);
    }
    tl_madv_fail = 0;
    tl_touch_mode = 0;
    tl_pages_watch4(thp);
done:
    {   /* no fresh pages of its own: caller destinations, an allocator's arena; a bad policy */
        safeload_load_desc d;
        safeload_request rq;
        safeload_loaded *l = NULL;
        safeload_arena *a = NULL;
        tl_alloc ta;
        const tl_tensor *t = tl_get(&m, "p.c");
        unsigned char *buf = (unsigned char *)malloc(t->nbytes);
        memset(&d, 0, sizeof d);
        memset(&rq, 0, sizeof rq);
        d.stats = &st;
        rq.name = "p.c";
        rq.dst = buf;
        rq.dst_size = t->nbytes;
        CHECK(safeload_load(mod, &rq, 1, &d, &a, &e) == SAFELOAD_OK && a == NULL);
        CHECK(memcmp(buf, t->data, t->nbytes) == 0);
        CHECK(st.pages == SAFELOAD_PAGES_AUTO && st.fresh_bytes == 0 && st.huge_bytes == 0);
        d.allocator = tl_allocator(&ta, -1);
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        CHECK(l && tl_check_loaded(&m, l->tensors, l->count));
        CHECK(st.pages == SAFELOAD_PAGES_AUTO && st.huge_bytes == 0);
        CHECK_EQ_U64(st.fresh_bytes, safeload_arena_capacity(l ? l->arena : NULL));
        safeload_loaded_free(l);
        CHECK(ta.live == 0);
        memset(&d, 0, sizeof d);
        d.pages = (safeload_pages)3;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) ==
              SAFELOAD_INVALID_ARGUMENT && l == NULL);
        CHECK(strstr(e.message, "page policy") != NULL);
        free(buf);
    }
    safeload_model_close(mod);
    if (!getenv("TL_KEEP")) remove(path);
    tl_free_model(&m);
}

/* ---- reuse: a later load into an earlier load's arena touches no fresh memory ---- */
static void tl_scribble(const safeload_loaded *l) {
    size_t i;
    for (i = 0; i < l->count; i++) memset(l->tensors[i].data, 0xA5, (size_t)l->tensors[i].nbytes);
}

static void test_arena_reuse(void) {
    tl_model m = {0}, half = {0};
    char path[400], path2[400];
    safeload_model *mod, *mod2;
    safeload_error e;
    safeload_load_desc d;
    safeload_load_stats st;
    safeload_loaded *l = NULL, *l2 = NULL;
    safeload_arena *a = NULL, *out = NULL;
    safeload_request rq[3];
    tl_alloc ta;
    uint64_t cap;
    int th;
    size_t i;
    long k;
    tl_make_pages(&m);
    for (i = 2; i < m.n; i++) {             /* a smaller model: the same minus p.a, p.b */
        tl_add(&half, m.t[i].name, m.t[i].dtype, m.t[i].shape[0], m.t[i].shape[1]);
        memcpy(half.t[half.n - 1].data, m.t[i].data, m.t[i].nbytes);
    }
    tl_path(path, sizeof path, "reuse.safetensors");
    tl_path(path2, sizeof path2, "reuse-half.safetensors");
    CHECK(tl_save(&m, 0, m.n, path) && tl_save(&half, 0, half.n, path2));
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_model_open(&mod2, path2, NULL, &e) == SAFELOAD_OK);

    /* model switching: big, small, big again, every policy and thread count, into one arena */
    for (th = 1; th <= 2; th++) {
        memset(&d, 0, sizeof d);
        d.threads = th;
        d.stats = &st;
        d.pages = (safeload_pages)(th == 1 ? SAFELOAD_PAGES_AUTO : SAFELOAD_PAGES_NORMAL);
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        if (!l) break;
        a = l->arena;
        l->arena = NULL;                    /* the arena is ours now; l holds the requests */
        cap = safeload_arena_capacity(a);
        CHECK(cap >= 20u << 20 && st.fresh_bytes == cap);
        d.reuse = a;
        tl_scribble(l);
        CHECK(safeload_load_all(mod2, SAFELOAD_DTYPE_NONE, &d, &l2, &e) == SAFELOAD_OK);
        CHECK(l2 && l2->arena == NULL && tl_check_loaded(&half, l2->tensors, l2->count));
        CHECK_EQ_U64(st.fresh_bytes, 0);
        CHECK(st.pages == SAFELOAD_PAGES_AUTO && st.huge_bytes == 0);
        CHECK(l2 && (unsigned char *)l2->tensors[0].data >= (unsigned char *)l->tensors[0].data &&
              (unsigned char *)l2->tensors[0].data < (unsigned char *)l->tensors[0].data + cap);
        safeload_loaded_free(l2);
        l2 = NULL;
        tl_scribble(l);
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l2, &e) == SAFELOAD_OK);
        CHECK(l2 && tl_check_loaded(&m, l2->tensors, l2->count));
        CHECK(l2 && l2->tensors[0].data == l->tensors[0].data);   /* the same layout, again */
        CHECK_EQ_U64(st.fresh_bytes, 0);
        CHECK_EQ_U64(safeload_arena_capacity(a), cap);
        safeload_loaded_free(l2);
        safeload_loaded_free(l);
        l = l2 = NULL;
        safeload_arena_free(a);
    }

    /* requests, a counting allocator: a reused arena takes no allocation the size of one;
       *arena gives the same arena back (and may be NULL) */
    memset(&d, 0, sizeof d);
    d.allocator = tl_allocator(&ta, -1);
    d.stats = &st;
    CHECK(safeload_arena_create(&a, 1u << 20, &d, &e) == SAFELOAD_OK && a);
    CHECK(ta.big == 1 && safeload_arena_capacity(a) == (1u << 20) && st.fresh_bytes == (1u << 20));
    memset(rq, 0, sizeof rq);
    rq[0].name = "p.small.007";
    rq[1].name = "p.small.100";
    rq[2].name = "p.b";                     /* 4 MiB: does not fit, the arena grows */
    d.reuse = a;
    CHECK(safeload_load(mod, rq, 2, &d, &out, &e) == SAFELOAD_OK && out == a);
    CHECK(tl_check_loaded(&m, rq, 2) && ta.big == 1 && st.fresh_bytes == 0);
    CHECK(safeload_load(mod, rq, 3, &d, NULL, &e) == SAFELOAD_OK);
    CHECK(tl_check_loaded(&m, rq, 3) && ta.big == 2);
    CHECK(st.fresh_bytes == safeload_arena_capacity(a) && st.fresh_bytes >= 4222976);
    CHECK(safeload_load(mod, rq, 3, &d, &out, &e) == SAFELOAD_OK && out == a);
    CHECK(tl_check_loaded(&m, rq, 3) && ta.big == 2 && st.fresh_bytes == 0);
    /* a failed load leaves the arena the caller's and whole: the next load uses it */
    rq[1].name = "no.such.tensor";
    CHECK(safeload_load(mod, rq, 3, &d, &out, &e) == SAFELOAD_NOT_FOUND && out == NULL);
    rq[1].name = "p.small.100";
    fi_set(FI_FAIL_AT, 1);                  /* an I/O error in the middle */
    d.threads = 1;
    CHECK(safeload_load(mod, rq, 3, &d, &out, &e) == SAFELOAD_IO_ERROR && out == NULL);
    fi_set(FI_NONE, -1);
    CHECK(rq[0].data == NULL && rq[2].data == NULL);
    CHECK(safeload_load(mod, rq, 3, &d, &out, &e) == SAFELOAD_OK && out == a);
    CHECK(tl_check_loaded(&m, rq, 3) && ta.big == 2);
    safeload_arena_free(a);
    CHECK(ta.live == 0);

    /* safeload_arena_create: arguments */
    CHECK(safeload_arena_create(NULL, 1, NULL, &e) == SAFELOAD_INVALID_ARGUMENT);
    memset(&d, 0, sizeof d);
    d.pages = (safeload_pages)7;
    CHECK(safeload_arena_create(&a, 1, &d, &e) == SAFELOAD_INVALID_ARGUMENT && a == NULL);
    CHECK(safeload_arena_create(&a, ~(uint64_t)0, NULL, &e) == SAFELOAD_OVERFLOW && a == NULL);
    CHECK(safeload_arena_capacity(NULL) == 0);
    /* OS pages with a policy, first touched up front: a load into it touches nothing fresh */
    memset(&d, 0, sizeof d);
    d.pages = SAFELOAD_PAGES_NORMAL;
    d.stats = &st;
    CHECK(safeload_arena_create(&a, 64u << 20, &d, &e) == SAFELOAD_OK);
    CHECK(st.pages == SAFELOAD_PAGES_NORMAL && st.fresh_bytes == (64u << 20));
    d.reuse = a;
    d.threads = 2;
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
    CHECK(l && tl_check_loaded(&m, l->tensors, l->count));
    CHECK(st.fresh_bytes == 0 && st.pages == SAFELOAD_PAGES_AUTO);
    safeload_loaded_free(l);
    l = NULL;
    safeload_arena_free(a);

    /* allocation failure at every k: creating, loading into it, growing it; nothing leaks */
    for (k = 0; k < 10000; k++) {
        safeload_result r;
        memset(&d, 0, sizeof d);
        d.allocator = tl_allocator(&ta, k);
        d.threads = 1 + (int)(k % 2);
        a = NULL;
        r = safeload_arena_create(&a, 4096, &d, &e);
        CHECK_MSG(r == SAFELOAD_OK || (r == SAFELOAD_OUT_OF_MEMORY && a == NULL), "k=%ld", k);
        if (r == SAFELOAD_OK) {
            d.reuse = a;
            r = safeload_load(mod, rq, 2, &d, &out, &e);           /* fits */
            CHECK_MSG(r == SAFELOAD_OK || r == SAFELOAD_OUT_OF_MEMORY, "k=%ld", k);
            if (r == SAFELOAD_OK) r = safeload_load(mod, rq, 3, &d, &out, &e);   /* grows */
            CHECK_MSG(r == SAFELOAD_OK || r == SAFELOAD_OUT_OF_MEMORY, "k=%ld", k);
            if (r == SAFELOAD_OK) CHECK(tl_check_loaded(&m, rq, 3) && out == a);
            if (r != SAFELOAD_OK) CHECK(out == NULL);
            safeload_arena_free(a);
        }
        CHECK_MSG(ta.live == 0, "k=%ld: %ld allocations leaked", k, ta.live);
        if (r == SAFELOAD_OK && k > ta.calls) break;            /* past the last allocation */
    }
    CHECK(k < 10000);
    safeload_model_close(mod);
    safeload_model_close(mod2);
    remove(path);
    remove(path2);
    tl_free_model(&m);
    tl_free_model(&half);
}


/* ---- big tables (header buffers, a load's plan) on huge pages where 4 KiB pages are dear ---- */
static int tb_mapped(const void *p) {       /* the block came from its own mapping */
    const unsigned char *b = (const unsigned char *)p - SL__BIG_HDR;
    size_t map;
    memcpy(&map, b, sizeof map);
    return map != 0 && (uintptr_t)b % SL__BIG_HUGE == 0;
}
/* whether the mapping holding p shows flag ("hg": MADV_HUGEPAGE, "nh": MADV_NOHUGEPAGE) in
   /proc/self/smaps; -1 where there is no smaps or no such mapping */
static int tb_vmflag(const void *p, const char *flag) {
    char line[1024], want[8];
    unsigned long long lo, hi, a = (unsigned long long)(uintptr_t)p;
    int in = 0, r = -1;
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp) return -1;
    snprintf(want, sizeof want, " %s", flag);
    while (fgets(line, sizeof line, fp)) {
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = a >= lo && a < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            r = strstr(line, want) != NULL;
            break;
        }
    }
    fclose(fp);
    return r;
}
/* every tensor of the test's checkpoint loaded: tensor i (named by i / 64 and i % 64) holds
   the first 1 + i % 40 bytes of data + 40 i */
static int tb_check(const safeload_loaded *l, const unsigned char *data, size_t nt) {
    size_t i;
    if (l->count != nt) return 0;
    for (i = 0; i < nt; i++) {
        const safeload_request *q = &l->tensors[i];
        size_t at = (size_t)strtoul(q->name + 13, NULL, 10) * 64 +
                    (size_t)strtoul(strstr(q->name, "experts.") + 8, NULL, 10);
        if (at >= nt || q->nbytes != 1 + at % 40 || memcmp(q->data, data + at * 40, q->nbytes)) {
            fprintf(stderr, "  %s: %llu bytes\n", q->name, (unsigned long long)q->nbytes);
            return 0;
        }
    }
    return 1;
}
static void test_big_tables(void) {
    static const safeload_io ios[] = {SAFELOAD_IO_READ, SAFELOAD_IO_MMAP, SAFELOAD_IO_DIRECT,
                                       SAFELOAD_IO_AUTO};
    size_t i, nt = 12000;
    safeload_save_tensor *st = (safeload_save_tensor *)calloc(nt, sizeof *st);
    char (*nm)[80] = (char (*)[80])calloc(nt, sizeof *nm);
    uint64_t (*shape)[1] = (uint64_t (*)[1])calloc(nt, sizeof *shape);
    unsigned char *data = (unsigned char *)malloc(nt * 40);
    char path[400];
    safeload_model *mod;
    safeload_model_desc md;
    safeload_load_desc d;
    safeload_loaded *l;
    safeload_error e;
    int mode, th, io, k;
    long long before;
    for (i = 0; i < nt * 40; i++) data[i] = (unsigned char)tu_rand64();
    for (i = 0; i < nt; i++) {
        snprintf(nm[i], sizeof nm[i], "model.layers.%u.mlp.experts.%u.down_proj.weight",
                 (unsigned)(i / 64), (unsigned)(i % 64));
        shape[i][0] = 1 + i % 40;
        st[i].name = nm[i]; st[i].dtype = SAFELOAD_U8; st[i].rank = 1; st[i].shape = shape[i];
        st[i].data = data + i * 40; st[i].nbytes = shape[i][0];
    }
    tl_path(path, sizeof path, "big_tables.safetensors");
    CHECK(safeload_save(path, st, nt, NULL, &e) == SAFELOAD_OK);
    for (mode = 0; mode <= 3; mode++)
        for (th = 1; th <= 4; th += 3) {
            safeload_file *f;
            tl_big_mode = mode;
            tl_big_probes = tl_big_huge_probes = 0;
            memset(&md, 0, sizeof md);
            md.threads = th;                    /* 4: the 1.3 MB header is parsed in parts */
            CHECK_MSG(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK, "%s", e.message);
            if (!mod) continue;
            f = safeload_model_shard(mod, 0);
            CHECK(f->header_len > ((size_t)1 << 20));
            CHECK(th > 1 ? f->n_parts >= 1 : f->n_parts == 0);
            /* measured once, on the header: 16 fresh 4 KiB pages, then (when dear) the first
               huge page of the block */
            CHECK_EQ_U64(tl_big_probes, 1);
            /* every block's first huge page is timed: the header's, a part's, the entries'
               and dims' sized ahead, the names', the refs' (mode 1); the first, dear (2) */
            if (mode == 1) CHECK(tl_big_huge_probes >= 5 + (long)f->n_parts);
            else CHECK_EQ_U64(tl_big_huge_probes, mode == 2 ? 1 : 0);
            CHECK_EQ_U64(f->big.state, mode == 1 ? 1 : 2);
            CHECK(tb_mapped(f->header) == (mode == 1 || mode == 2));
            for (k = 0; k < (int)f->n_parts; k++) CHECK(tb_mapped(f->parts[k]) == (mode == 1));
            /* the tables after it follow the verdict: entries, dims, names, the model's refs */
            CHECK(tb_mapped(f->tensors) == (mode == 1));
            CHECK(tb_mapped(f->dims) == (mode == 1));
            CHECK(f->names.big && tb_mapped(f->names.slots) == (mode == 1));
            CHECK(tb_mapped(mod->refs) == (mode == 1));
            CHECK_EQ_U64(safeload_model_tensor_count(mod), nt);
            for (io = 0; io < 4; io++) {
                memset(&d, 0, sizeof d);
                d.threads = 1 + (io + th) % 3;
                d.io = ios[io];
                CHECK_MSG(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK,
                          "%s", e.message);
                if (!l) continue;
                CHECK(tb_mapped(l->tensors) == (mode == 1));   /* loads never measure */
                CHECK_MSG(tb_check(l, data, nt), "mode %d threads %d io %d", mode, th, io);
                safeload_loaded_free(l);
            }
            CHECK_EQ_U64(tl_big_probes, 1);
            safeload_model_close(mod);
        }
    /* every block is given back: opens and loads leave no huge-page mapping behind (counted
       in bytes, MADV_HUGEPAGE areas only: the process's other mappings come and go with
       thread stacks and a sanitizer's allocator) */
    tl_big_mode = 1;
    before = tl_huge_measure();
    for (th = 0; th < 8; th++) {
        memset(&md, 0, sizeof md);
        md.threads = 1 + th % 4;
        CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
        if (!mod) continue;
        memset(&d, 0, sizeof d);
        d.threads = 2;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        if (before >= 0) CHECK(tl_huge_advised() > before);   /* (the measure sees them) */
        safeload_loaded_free(l);
        safeload_model_close(mod);
    }
    if (before >= 0)
        CHECK_MSG(tl_huge_advised() == before, "%lld bytes advised huge, %lld before",
                  tl_huge_advised(), before);
    else
        printf("  big tables: MADV_HUGEPAGE not seen in smaps here, no-leak check skipped\n");
    /* huge pages refused (no transparent huge pages): the allocator's memory */
    tl_madv_fail = 1;
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    if (mod) {
        safeload_file *f = safeload_model_shard(mod, 0);
        CHECK_EQ_U64(f->big.state, 1);
        CHECK(!tb_mapped(f->header));
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
        if (l) {
            CHECK(!tb_mapped(l->tensors));
            CHECK(tb_check(l, data, nt));
            safeload_loaded_free(l);
        }
        safeload_model_close(mod);
    }
    tl_madv_fail = 0;
    /* the first huge page fast, the next dear (mode 7): the block that took it keeps its
       mapping with the rest of it on 4 KiB pages, every block after it is the allocator's,
       and so are a load's tables (its verdict starts from the file's); nothing else is timed */
    for (th = 1; th <= 4; th += 3) {
        safeload_file *f;
        tl_big_mode = 7;
        tl_big_probes = tl_big_huge_probes = 0;
        memset(&md, 0, sizeof md);
        md.threads = th;
        CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
        if (!mod) continue;
        f = safeload_model_shard(mod, 0);
        CHECK_EQ_U64(tl_big_probes, 1);
        CHECK_EQ_U64(tl_big_huge_probes, 2);
        CHECK_EQ_U64(f->big.state, 2);
        CHECK_EQ_U64(f->big.ns_2m, 100000);
        /* the header's first huge page (the fast one), then the first of the entries sized
           ahead (the dear one: the block stays mapped, any rest of it on 4 KiB pages) */
        CHECK(tb_mapped(f->header));
        CHECK(tb_mapped(f->tensors));
        CHECK(!tb_mapped(f->dims) && !tb_mapped(mod->refs));
        for (k = 0; k < (int)f->n_parts; k++) CHECK(!tb_mapped(f->parts[k]));
        CHECK(f->names.big && !tb_mapped(f->names.slots));
        memset(&d, 0, sizeof d);
        d.threads = 2;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        if (l) {
            CHECK(!tb_mapped(l->tensors));
            CHECK(tb_check(l, data, nt));
            safeload_loaded_free(l);
        }
        CHECK_EQ_U64(tl_big_probes + tl_big_huge_probes, 3);
        /* a load whose huge pages turn dear after an open that found them cheap: its table
           keeps the one page it timed, the load's own tables go to the allocator */
        tl_big_mode = 1;
        safeload_model_close(mod);
        CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
        if (!mod) continue;
        f = safeload_model_shard(mod, 0);
        CHECK_EQ_U64(f->big.state, 1);
        tl_big_mode = 2;
        tl_big_huge_probes = 0;
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        if (l) {
            CHECK(tb_mapped(l->tensors));
            CHECK(tb_check(l, data, nt));
            safeload_loaded_free(l);
        }
        /* l->tensors' first page, then the load's request table's first page */
        CHECK_EQ_U64(tl_big_huge_probes, 2);
        CHECK_EQ_U64(f->big.state, 1);              /* a load's verdict is its own copy */
        safeload_model_close(mod);
    }
    /* the header's, the entries' and the dims' first huge pages fast, a part's dear (mode 8):
       the entries sized ahead (4 MiB mapped; with more tensors the merge of the parts writes on
       into the second huge page) keep their first huge page and put the rest on 4 KiB pages */
    if (tl_huge_measure() >= 0) {
        safeload_file *f;
        const unsigned char *tail;
        size_t map;
        tl_big_mode = 8;
        tl_big_probes = tl_big_huge_probes = 0;
        memset(&md, 0, sizeof md);
        md.threads = 4;
        CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
        if (mod) {
            f = safeload_model_shard(mod, 0);
            CHECK(f->n_parts >= 1);
            CHECK_EQ_U64(tl_big_huge_probes, 4);
            CHECK_EQ_U64(f->big.state, 2);
            CHECK(tb_mapped(f->header) && tb_mapped(f->tensors) && tb_mapped(f->dims));
            /* the first part's buffer took the dear page (mapped, its rest on 4 KiB pages) */
            for (k = 0; k < (int)f->n_parts; k++) CHECK(tb_mapped(f->parts[k]) == (k == 0));
            tail = (const unsigned char *)f->tensors - SL__BIG_HDR + SL__BIG_HUGE;
            memcpy(&map, tail - SL__BIG_HUGE, sizeof map);
            CHECK(map > SL__BIG_HUGE);
            CHECK_EQ_U64(tb_vmflag(f->tensors, "hg"), 1);
            CHECK_EQ_U64(tb_vmflag(tail, "nh"), 1);
            CHECK_EQ_U64(tb_vmflag(tail, "hg"), 0);
            memset(&d, 0, sizeof d);
            d.threads = 2;
            CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
            if (l) { CHECK(tb_check(l, data, nt)); safeload_loaded_free(l); }
            safeload_model_close(mod);
        }
        /* (one thread: no parts; the entries are written whole before the names' table takes
           the dear page, so nothing is settled and their rest stays advised huge) */
        tl_big_probes = tl_big_huge_probes = 0;
        md.threads = 1;
        CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
        if (mod) {
            f = safeload_model_shard(mod, 0);
            tail = (const unsigned char *)f->tensors - SL__BIG_HDR + SL__BIG_HUGE;
            CHECK_EQ_U64(tb_vmflag(tail, "hg"), 1);
            safeload_model_close(mod);
        }
    }
    /* the huge page timed must cost a quarter of 512 of the 16 pages or less (16 pages can
       read 4x too dear): exactly a quarter keeps huge pages on, a nanosecond more does not */
    for (mode = 5; mode <= 6; mode++) {
        tl_big_mode = mode;
        tl_big_huge_probes = 0;
        CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
        if (!mod) continue;
        {
            safeload_file *f = safeload_model_shard(mod, 0);
            if (mode == 5) CHECK_EQ_U64(tl_big_huge_probes, 1);
            else CHECK(tl_big_huge_probes >= 5);    /* every block's first page */
            CHECK_EQ_U64(f->big.state, mode == 6 ? 1 : 2);
            CHECK(tb_mapped(f->tensors) == (mode == 6));
            CHECK(tb_mapped(f->names.slots) == (mode == 6));
        }
        CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
        if (l) { CHECK(tb_check(l, data, nt)); safeload_loaded_free(l); }
        safeload_model_close(mod);
    }
    /* Blocks under SAFELOAD_BIG_MIN (64 KiB here) go on a huge page when the one timed cost
       less than the 4 KiB pages they would fault in: all of a block written whole, half of
       one sized ahead. 1,000 names: a 16 KiB table (4 pages), 24 KiB of refs (6) and 32 KiB
       of dims sized ahead (4 counted) go huge at 20 us a huge page, not at 100 us; the
       entries (88 KiB) go huge either way */
    {
        char path2[400];
        tl_path(path2, sizeof path2, "big_tables_small.safetensors");
        CHECK(safeload_save(path2, st, 1000, NULL, &e) == SAFELOAD_OK);
        for (mode = 1; mode <= 4; mode += 3) {
            safeload_file *f;
            tl_big_mode = mode;
            CHECK_MSG(safeload_model_open(&mod, path2, NULL, &e) == SAFELOAD_OK, "%s", e.message);
            if (!mod) continue;
            f = safeload_model_shard(mod, 0);
            CHECK(f->header_len >= 65536 && f->header_len / 32 + 8 <= 4096);
            CHECK_EQ_U64(f->big.state, 1);
            CHECK_EQ_U64(f->big.ns_2m, mode == 4 ? 20000 : 100000);
            CHECK(f->names.mask + 1 == 2048 && tb_mapped(f->tensors));
            CHECK(tb_mapped(f->names.slots) == (mode == 4));
            /* (refs are 16 KiB less 368 bytes with 32-bit pointers: under the quarter) */
            CHECK(tb_mapped(mod->refs) == (mode == 4 && 1001 * sizeof(sl__ref) >= 16384));
            CHECK(tb_mapped(f->dims) == (mode == 4));
            CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
            if (l) { CHECK(tb_check(l, data, 1000)); safeload_loaded_free(l); }
            safeload_model_close(mod);
        }
        remove(path2);
    }
    /* a caller's allocator takes every byte: nothing measured, nothing mapped */
    {
        tl_alloc ta;
        memset(&md, 0, sizeof md);
        md.open.allocator = tl_allocator(&ta, -1);
        tl_big_probes = 0;
        CHECK(safeload_model_open(&mod, path, &md, &e) == SAFELOAD_OK);
        if (mod) {
            safeload_file *f = safeload_model_shard(mod, 0);
            CHECK_EQ_U64(f->big.state, 0);
            CHECK_EQ_U64(tl_big_probes, 0);
            CHECK(!tb_mapped(f->header));
            memset(&d, 0, sizeof d);
            d.allocator = md.open.allocator;
            CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
            if (l) { CHECK(!tb_mapped(l->tensors)); safeload_loaded_free(l); }
            safeload_model_close(mod);
        }
        CHECK_EQ_U64(ta.live, 0);
    }
    tl_big_mode = 0;
    remove(path);
    free(st);
    free(nm);
    free(shape);
    free(data);
}

/* The disk's buffers (O_DIRECT bounce buffers, the queue's fixed slots) go on huge pages
   unless one timed costs more than the 512 4 KiB pages it stands for: then the block's rest
   and every later one are the allocator's. A caller's allocator takes them all. The bytes are
   the same every way. (Three tensors of 2 MiB + 100 bytes, unaligned in the file: every
   read goes through the buffers.) */
static void test_dma_pages(void) {
    enum { NT = 3, EACH = (2 << 20) + 100 };
    safeload_save_tensor st[NT];
    uint64_t shape[NT];
    char names[NT][8], path[400];
    unsigned char *data = (unsigned char *)malloc((size_t)NT * EACH);
    safeload_model *mod;
    safeload_loaded *ref = NULL, *l = NULL;
    safeload_load_desc d;
    safeload_load_stats ls;
    safeload_error e;
    int i, mode, depth, uring = tl_uring_ok();
    int smaps = tl_huge_measure() >= 0;     /* advice shows in smaps (not under qemu-user) */
    for (i = 0; i < NT * EACH; i++) data[i] = (unsigned char)(i * 13 + i / 4099);
    for (i = 0; i < NT; i++) {
        snprintf(names[i], sizeof names[i], "t%d", i);
        shape[i] = EACH;
        st[i].name = names[i];
        st[i].dtype = SAFELOAD_U8;
        st[i].rank = 1;
        st[i].shape = &shape[i];
        st[i].data = data + (size_t)i * EACH;
        st[i].nbytes = EACH;
    }
    tl_path(path, sizeof path, "dma.safetensors");
    CHECK(safeload_save(path, st, NT, NULL, &e) == SAFELOAD_OK);
    CHECK(safeload_model_open(&mod, path, NULL, &e) == SAFELOAD_OK);
    if (!mod) { free(data); return; }
    memset(&d, 0, sizeof d);
    d.io = SAFELOAD_IO_READ;
    CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &ref, &e) == SAFELOAD_OK);
    CHECK(ref && ref->count == NT && memcmp(ref->tensors[2].data, data + 2 * EACH, EACH) == 0);
    /* mode 0: 4 KiB pages 0.5 us, a huge page 100 us (under 512 x 0.5); mode 2: a huge page
       dearer than 512 4 KiB pages by a nanosecond */
    for (mode = 0; mode <= 2; mode += 2) {
        for (depth = 1; depth <= 32; depth += 31) {
            int aio = depth > 1 && uring;
            tl_big_mode = mode;
            tl_big_probes = tl_big_huge_probes = 0;
            tl_dma_hg = -2;
            tl_dma_watch = !aio;
            tl_reg_n = 0;
            tl_reg_watch = aio;
            CHECK_MSG(tq_load(mod, depth, 2, 0, SAFELOAD_DTYPE_NONE, &ls, &l, &e) == SAFELOAD_OK,
                      "%s", e.message);
            tl_reg_watch = tl_dma_watch = 0;
            if (l) { CHECK(tq_same(l, ref)); safeload_loaded_free(l); }
            /* the 4 KiB probe once; a huge page timed for each worker's block until one is
               dear (with a queue the bounce buffers stay the allocator's; without io_uring
               the queue is refused before any slot is allocated) */
            CHECK_EQ_U64(tl_big_probes, 1);
            CHECK_EQ_U64(tl_big_huge_probes, mode == 0 ? 2 : 1);
            if (aio) {
                CHECK_EQ_U64(ls.aio, SAFELOAD_AIO_IO_URING);
                if (tl_reg_n == 2 && smaps) {   /* (RLIMIT_MEMLOCK may refuse fixed buffers) */
                    CHECK_EQ_U64(tl_reg_hg[0], 1);      /* its first huge page timed */
                    CHECK_EQ_U64(tl_reg_hg[1], mode == 0);
                }
            } else if (mode == 0 && smaps) {
                CHECK_EQ_U64(tl_dma_hg, 1);             /* a worker's first read */
            }
        }
    }
    /* io_uring refused: the queue is asked for first, so no slot memory is mapped or timed;
       the two workers' bounce buffers are */
    tl_big_mode = 0;
    tl_big_probes = tl_big_huge_probes = 0;
    tl_uring_refuse = ENOSYS;
    CHECK(tq_load(mod, 32, 2, 0, SAFELOAD_DTYPE_NONE, &ls, &l, &e) == SAFELOAD_OK);
    tl_uring_refuse = 0;
    if (l) { CHECK(tq_same(l, ref)); safeload_loaded_free(l); }
    CHECK_EQ_U64(ls.aio, SAFELOAD_AIO_NONE);
    CHECK_EQ_U64(ls.aio_error, ENOSYS);
    CHECK_EQ_U64(tl_big_probes, 1);
    CHECK_EQ_U64(tl_big_huge_probes, 2);
    /* a caller's allocator: every buffer its memory, nothing probed */
    {
        tl_alloc ta;
        memset(&ta, 0, sizeof ta);
        tl_big_mode = 0;
        for (depth = 1; depth <= 32; depth += 31) {
            tl_big_probes = tl_big_huge_probes = 0;
            tl_dma_hg = -2;
            tl_dma_watch = 1;
            memset(&d, 0, sizeof d);
            d.io = SAFELOAD_IO_DIRECT;
            d.threads = 2;
            d.queue_depth = depth;
            d.allocator = tl_allocator(&ta, -1);
            CHECK(safeload_load_all(mod, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
            tl_dma_watch = 0;
            if (l) { CHECK(tq_same(l, ref)); safeload_loaded_free(l); }
            CHECK_EQ_U64(tl_big_probes + tl_big_huge_probes, 0);
            if (tl_dma_hg != -2 && smaps) CHECK_EQ_U64(tl_dma_hg, 0);
        }
        CHECK_EQ_U64(ta.live, 0);
    }
    tl_big_mode = 0;
    safeload_loaded_free(ref);
    safeload_model_close(mod);
    remove(path);
    free(data);
}

int main(void) {
    tl_model m;
    char path[400];
    snprintf(tl_dir, sizeof tl_dir, "/tmp/safeload-test-load-XXXXXX");
    if (!mkdtemp(tl_dir)) { perror("mkdtemp"); return 1; }
    memset(&m, 0, sizeof m);
    tl_make_mixed(&m, 3000);
    tl_path(path, sizeof path, "mixed.safetensors");
    CHECK(tl_save(&m, 0, m.n, path));

    TU_PART(test_matrix(&m, path));
    TU_PART(test_coalescing(&m, path));
    TU_PART(test_window_runs());
    TU_PART(test_caller_dst_and_slices(&m, path));
    TU_PART(test_overlap(&m, path));
    TU_PART(test_cast_on_load(&m, path));
    TU_PART(test_new_sources_on_load());
    TU_PART(test_sources(&m, path));
    TU_PART(test_io_faults(&m, path));
    TU_PART(test_huge_tensor());
    TU_PART(test_map_lifetime(&m, path));
    TU_PART(test_shards(&m));
    TU_PART(test_shard_allocator());
    TU_PART(test_index_scale());
    TU_PART(test_progress_cancel(&m, path));
    TU_PART(test_async(&m, path));
    TU_PART(test_request_errors(&m, path));
    TU_PART(test_pool(&m, path));
    TU_PART(test_view(&m, path));
    TU_PART(test_cut_deterministic());
    TU_PART(test_changed_file());
    TU_PART(test_io_auto());
    TU_PART(test_mixed_run());
    TU_PART(test_slices_any_dim());
    TU_PART(test_pages());
    TU_PART(test_big_tables());
    TU_PART(test_dma_pages());
    TU_PART(test_arena_reuse());
    TU_PART(test_queued_reads(&m, path));
    {
        /* allocation failures on a smaller checkpoint (the loop runs once per allocation) */
        tl_model s;
        char sp[400];
        memset(&s, 0, sizeof s);
        tl_make_mixed(&s, 40);
        tl_path(sp, sizeof sp, "small.safetensors");
        CHECK(tl_save(&s, 0, s.n, sp));
        TU_PART(test_alloc_failures(sp));
        tl_free_model(&s);
    }
    tl_free_model(&m);
    /* where this file system takes O_DIRECT, every unbuffered read was aligned */
    printf("  %ld O_DIRECT reads, %ld misaligned\n", tl_direct_reads, tl_direct_misaligned);
    CHECK_EQ_U64(tl_direct_misaligned, 0);
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tl_dir);
        if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    }
    return tu_finish("test_load");
}
