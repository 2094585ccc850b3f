/* bench_load: safeload against this machine's own limits, measured in the same run.

   Writes its checkpoints into $SAFELOAD_BENCH_DIR (default build/bench):
     dense    8 BF16 tensors, SAFELOAD_BENCH_DENSE_MB (default 2048) MiB
     moe      SAFELOAD_BENCH_MOE_TENSORS (default 100000) tensors of 4-64 KiB named
              model.layers.{i}.mlp.experts.{j}.{gate,up,down}_proj.weight,
              SAFELOAD_BENCH_MOE_MB (default 1536) MiB
     sharded  the dense tensors in 4 shards with model.safetensors.index.json
   Files are read once first (warm page cache). Each figure is the median of
   SAFELOAD_BENCH_REPS (default 5) runs; GB/s = 10^9 bytes of data section per second.

   Baselines, same run, same thread counts:
     read()      malloc(data size) fresh + pread of the whole data section (threads split it)
     mmap+cpy    mmap the file + memcpy into fresh malloc memory
     memcpy      memcpy between two prefaulted buffers of the data size
   safeload:
     alloc       safeload_load_all into its own arena (fresh memory, huge pages requested)
     prefaulted  safeload_load into caller buffers that were touched beforehand
     bf16->f32   the same with a cast; its ratio counts input + output bytes against memcpy's
                 read + write bytes (2 x data size)
   io auto: the dense file warm (auto against read), then cold (dropped from the page cache
   before each load) with read, direct and auto, and how much of the file each load left in
   the page cache. Cold figures depend on the disk (on a VM, on the host's cache too).
   cold loads (alone: SAFELOAD_BENCH_ONLY=cold, which writes only the dense files, 1024 MiB
   unless SAFELOAD_BENCH_DENSE_MB says otherwise): read, direct and auto next to the disk's
   limit (the best of 1, 4, 16 and 32 threads of 4 MiB O_DIRECT reads, and of 1, 4 and 16
   into huge pages), interleaved, and the same tensors in a file whose data section is
   4096-aligned (SAFELOAD_SAVE_ALIGN_DATA); see bench_cold. SAFELOAD_BENCH_COLD_THREADS (default 2): safeload's threads there. */
/* io_uring's fixed buffers against plain reads (the cold section): the same load with the
   registration refused, as RLIMIT_MEMLOCK would refuse it. The flag is the bench's; the
   library keeps no state of its own. */
static int bench_no_fixed;
long bench_uring_register(int ring, void *iov);   /* defined below, with the syscall */
#define SAFELOAD_URING_REGISTER(ring, iov) bench_uring_register(ring, iov)
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include "benchutil.h"
#include "pagecache.h"
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <pthread.h>

#if defined(SL__AIO) && SL__AIO == 1
#  define BENCH_FIXED_AB 1
long bench_uring_register(int ring, void *iov) {
    if (bench_no_fixed) { errno = ENOMEM; return -1; }
    return SL__URING_REGISTER_SYS(ring, iov);
}
#else
#  define BENCH_FIXED_AB 0
long bench_uring_register(int ring, void *iov) { (void)ring; (void)iov; return -1; }
#endif

static int reps = 5;

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : def;
}

/* ---- checkpoint writing ---- */
static void fill_bf16(unsigned char *p, size_t n, uint64_t seed) {
    size_t i;
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        /* high byte of each 16-bit lane: sign | 0x3C..0x3F: plausible weights, no NaN */
        uint64_t v = (x & 0x80FF80FF80FF80FFULL) | 0x3C003C003C003C00ULL;
        memcpy(p + i, &v, 8);
    }
}

/* shards: 0 dense.safetensors, 1 four shards and an index, 2 dense-aligned.safetensors (the
   same tensors, SAFELOAD_SAVE_ALIGN_DATA: the data section 4096-aligned) */
static int save_dense(const char *dir, uint64_t mb, int shards) {
    size_t i, n = 8;
    uint64_t per = mb * SL__MIB / n;
    uint64_t cols = 4096, rows = per / 2 / cols;
    safeload_save_tensor t[8];
    uint64_t shape[8][2];
    char names[8][64], path[600];
    unsigned char *data = (unsigned char *)malloc((size_t)(rows * cols * 2 * n));
    safeload_error e;
    if (!data) return 0;
    fill_bf16(data, (size_t)(rows * cols * 2 * n), 7);
    for (i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "model.layers.%u.mlp.down_proj.weight", (unsigned)i);
        shape[i][0] = rows;
        shape[i][1] = cols;
        t[i].name = names[i];
        t[i].dtype = SAFELOAD_BF16;
        t[i].rank = 2;
        t[i].shape = shape[i];
        t[i].data = data + i * rows * cols * 2;
        t[i].nbytes = rows * cols * 2;
    }
    if (shards != 1) {
        safeload_save_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.flags = shards == 2 ? SAFELOAD_SAVE_ALIGN_DATA : 0;
        snprintf(path, sizeof path, "%s/dense%s.safetensors", dir, shards == 2 ? "-aligned" : "");
        if (safeload_save(path, t, n, &sd, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); return 0; }
    } else {
        FILE *fp;
        char sub[520];
        snprintf(sub, sizeof sub, "%s/sharded", dir);
        mkdir(sub, 0755);
        for (i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/model-%05u-of-00004.safetensors", sub, (unsigned)i + 1);
            if (safeload_save(path, t + 2 * i, 2, NULL, &e) != SAFELOAD_OK) return 0;
        }
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", sub);
        fp = fopen(path, "wb");
        fprintf(fp, "{\"metadata\":{\"total_size\":%llu},\"weight_map\":{", (unsigned long long)(rows * cols * 2 * n));
        for (i = 0; i < n; i++)
            fprintf(fp, "%s\"%s\":\"model-%05u-of-00004.safetensors\"", i ? "," : "", names[i], (unsigned)(i / 2) + 1);
        fprintf(fp, "}}\n");
        fclose(fp);
    }
    free(data);
    return 1;
}

static int save_moe(const char *dir, uint64_t mb, uint64_t count) {
    static const uint64_t rows_of[4] = {16, 32, 128, 256};   /* x 128 BF16: 4, 8, 32, 64 KiB */
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    safeload_save_tensor *t = (safeload_save_tensor *)calloc(count, sizeof *t);
    uint64_t (*shape)[2] = (uint64_t (*)[2])calloc(count, sizeof *shape);
    char *names = (char *)malloc(count * 72);
    uint64_t i, total = 0, budget = mb * SL__MIB, at = 0;
    unsigned char *data;
    char path[600];
    safeload_error e;
    int ok;
    /* sizes cycle 4/8/32/64 KiB weighted to average budget/count */
    for (i = 0; i < count; i++) {
        uint64_t want = total < budget ? (budget - total) / (count - i) : 0, r;
        r = want >= 48 * 1024 ? rows_of[3] : want >= 20 * 1024 ? rows_of[2 + (i & 1)]
          : want >= 8 * 1024 ? rows_of[1 + (i % 3 == 0)] : rows_of[i & 1];
        shape[i][0] = r;
        shape[i][1] = 128;
        total += r * 128 * 2;
    }
    data = (unsigned char *)malloc((size_t)total);
    if (!data || !t || !shape || !names) return 0;
    fill_bf16(data, (size_t)total, 11);
    for (i = 0; i < count; i++) {
        char *nm = names + i * 72;
        snprintf(nm, 72, "model.layers.%u.mlp.experts.%u.%s.weight", (unsigned)(i / 768),
                 (unsigned)(i / 3 % 256), proj[i % 3]);
        t[i].name = nm;
        t[i].dtype = SAFELOAD_BF16;
        t[i].rank = 2;
        t[i].shape = shape[i];
        t[i].data = data + at;
        t[i].nbytes = shape[i][0] * 256;
        at += t[i].nbytes;
    }
    snprintf(path, sizeof path, "%s/moe.safetensors", dir);
    ok = safeload_save(path, t, (size_t)count, NULL, &e) == SAFELOAD_OK;
    if (!ok) fprintf(stderr, "%s\n", e.message);
    free(data); free(t); free(shape); free(names);
    return ok;
}

/* ---- baselines ---- */
typedef struct job { int fd; unsigned char *dst; const unsigned char *src; uint64_t off, n; } job;

static void *pread_job(void *a) {
    job *j = (job *)a;
    uint64_t done = 0;
    while (done < j->n) {
        size_t want = (size_t)SL__MIN(j->n - done, (uint64_t)16 << 20);
        ssize_t r = pread(j->fd, j->dst + done, want, (off_t)(j->off + done));
        if (r <= 0) break;
        done += (uint64_t)r;
    }
    return NULL;
}

static void *memcpy_job(void *a) {
    job *j = (job *)a;
    memcpy(j->dst, j->src, (size_t)j->n);
    return NULL;
}

/* split [0, n) among th threads, each running fn */
static void run_split(int th, void *(*fn)(void *), int fd, unsigned char *dst,
                      const unsigned char *src, uint64_t off, uint64_t n) {
    pthread_t tid[8];
    job jb[8];
    int i;
    for (i = 0; i < th; i++) {
        uint64_t a = n * (uint64_t)i / (uint64_t)th, b = n * (uint64_t)(i + 1) / (uint64_t)th;
        jb[i].fd = fd; jb[i].dst = dst + a; jb[i].src = src ? src + a : NULL;
        jb[i].off = off + a; jb[i].n = b - a;
        if (i) pthread_create(&tid[i], NULL, fn, &jb[i]);
    }
    fn(&jb[0]);
    for (i = 1; i < th; i++) pthread_join(tid[i], NULL);
}

static double base_read(const char *path, uint64_t off, uint64_t n, int th) {
    int fd = open(path, O_RDONLY);
    double t0 = bu_now(), t;
    unsigned char *dst = (unsigned char *)malloc((size_t)n);
    run_split(th, pread_job, fd, dst, NULL, off, n);
    t = bu_now() - t0;
    free(dst);
    close(fd);
    return t;
}

static double base_mmap(const char *path, uint64_t off, uint64_t n, uint64_t size, int th) {
    int fd = open(path, O_RDONLY);
    double t0 = bu_now(), t;
    unsigned char *map = (unsigned char *)mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    unsigned char *dst = (unsigned char *)malloc((size_t)n);
    run_split(th, memcpy_job, -1, dst, map + off, 0, n);
    munmap(map, (size_t)size);
    t = bu_now() - t0;
    free(dst);
    close(fd);
    return t;
}

/* the kernel's copy into memory that is already faulted in: read mode's own limit */
static double base_read_prefaulted(const char *path, uint64_t off, uint64_t n, int th,
                                   unsigned char *dst) {
    int fd = open(path, O_RDONLY);
    double t0 = bu_now(), t;
    run_split(th, pread_job, fd, dst, NULL, off, n);
    t = bu_now() - t0;
    close(fd);
    return t;
}

/* copying out of a mapping into memory that is already faulted in: mmap mode's own limit */
static double base_mmap_prefaulted(const char *path, uint64_t off, uint64_t n, uint64_t size,
                                   int th, unsigned char *dst) {
    int fd = open(path, O_RDONLY);
    double t0 = bu_now(), t;
    unsigned char *map = (unsigned char *)mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    run_split(th, memcpy_job, -1, dst, map + off, 0, n);
    munmap(map, (size_t)size);
    t = bu_now() - t0;
    close(fd);
    return t;
}

static double base_memcpy(unsigned char *dst, const unsigned char *src, uint64_t n, int th) {
    double t0 = bu_now();
    run_split(th, memcpy_job, -1, dst, src, 0, n);
    return bu_now() - t0;
}

/* ---- safeload ---- */
static double sl_alloc(safeload_model *m, int th, safeload_dtype dt) {
    safeload_load_desc d;
    safeload_loaded *l;
    safeload_error e;
    double t0, t;
    memset(&d, 0, sizeof d);
    d.threads = th;
    t0 = bu_now();
    if (safeload_load_all(m, dt, &d, &l, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    t = bu_now() - t0;
    safeload_loaded_free(l);
    return t;
}

/* one load of every tensor into buf (prefaulted by the caller) with desc d */
static double sl_into(safeload_model *m, safeload_dtype dt, unsigned char *buf,
                      safeload_request *rq, const safeload_load_desc *d) {
    safeload_error e;
    size_t i, n = safeload_model_tensor_count(m);
    uint64_t off = 0;
    double t0;
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_model_tensor_at(m, i, NULL);
        uint64_t bytes = dt ? t->numel * safeload_dtype_size(dt) : t->nbytes;
        memset(&rq[i], 0, sizeof rq[i]);
        rq[i].name = t->name;
        rq[i].dtype = dt;
        rq[i].dst = buf + off;
        rq[i].dst_size = bytes;
        off += bytes;
    }
    t0 = bu_now();
    if (safeload_load(m, rq, n, d, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    return bu_now() - t0;
}

static double sl_prefaulted(safeload_model *m, int th, safeload_dtype dt, unsigned char *buf,
                            safeload_request *rq, safeload_io io) {
    safeload_load_desc d;
    memset(&d, 0, sizeof d);
    d.threads = th;
    d.io = io;
    return sl_into(m, dt, buf, rq, &d);
}

#define MEDIAN(var, expr) do { double v_[64]; int r_; \
    for (r_ = 0; r_ < reps; r_++) { v_[r_] = (expr); } \
    (var) = bu_median(v_, reps); } while (0)

static double gbs(uint64_t bytes, double secs) { return (double)bytes / 1e9 / secs; }

typedef struct row { double alloc, pref, pref_mmap, cast_alloc, cast_pref, cast_pref_mmap; } row;

static void bench_file(const char *label, const char *path, const char *file0, row out[3]) {
    safeload_model *m;
    safeload_error e;
    safeload_file *f;
    uint64_t n = 0, off;
    unsigned char *src, *dst;
    safeload_request *rq;
    int th;
    size_t i;
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    for (i = 0; i < safeload_model_shard_count(m); i++) n += safeload_data_size(safeload_model_shard(m, i));
    f = safeload_model_shard(m, 0);
    off = safeload_data_offset(f);
    rq = (safeload_request *)calloc(safeload_model_tensor_count(m) + 1, sizeof *rq);
    /* warm the page cache, prefault the caller buffers */
    sl_alloc(m, 2, 0);
    src = (unsigned char *)malloc((size_t)n);
    dst = (unsigned char *)malloc((size_t)n * 2);
    memset(src, 1, (size_t)n);
    memset(dst, 2, (size_t)n * 2);
    printf("\n%s: %s, %llu tensors, %.2f GiB data\n", label, path,
           (unsigned long long)safeload_model_tensor_count(m), (double)n / 1073741824.0);
    for (th = 1; th <= 2; th++) {
        double rd = 0, mm = 0, rp = 0, mp = 0, cp, a, p, pm, ca, cpf, cpm, best;
        int single = safeload_model_shard_count(m) == 1;
        if (single) {
            MEDIAN(rd, base_read(file0, off, n, th));
            MEDIAN(mm, base_mmap(file0, off, n, safeload_file_size(f), th));
            MEDIAN(rp, base_read_prefaulted(file0, off, n, th, dst));
            MEDIAN(mp, base_mmap_prefaulted(file0, off, n, safeload_file_size(f), th, dst));
        }
        MEDIAN(cp, base_memcpy(dst, src, n, th));
        MEDIAN(a, sl_alloc(m, th, 0));
        MEDIAN(p, sl_prefaulted(m, th, 0, dst, rq, SAFELOAD_IO_READ));
        MEDIAN(pm, sl_prefaulted(m, th, 0, dst, rq, SAFELOAD_IO_MMAP));
        MEDIAN(ca, sl_alloc(m, th, SAFELOAD_F32));
        MEDIAN(cpf, sl_prefaulted(m, th, SAFELOAD_F32, dst, rq, SAFELOAD_IO_READ));
        MEDIAN(cpm, sl_prefaulted(m, th, SAFELOAD_F32, dst, rq, SAFELOAD_IO_MMAP));
        out[th].alloc = gbs(n, a);
        out[th].pref = gbs(n, p);
        out[th].pref_mmap = gbs(n, pm);
        out[th].cast_alloc = gbs(n, ca);
        out[th].cast_pref = gbs(n, cpf);
        out[th].cast_pref_mmap = gbs(n, cpm);
        printf("  [%d thread%s]\n", th, th > 1 ? "s" : "");
        if (single) {
            best = SL__MAX(gbs(n, rd), gbs(n, mm));
            printf("    baseline read() into fresh malloc      %6.2f GB/s\n", gbs(n, rd));
            printf("    baseline mmap+memcpy into fresh        %6.2f GB/s\n", gbs(n, mm));
            printf("    baseline read() into prefaulted        %6.2f GB/s\n", gbs(n, rp));
            printf("    baseline mmap+memcpy into prefaulted   %6.2f GB/s\n", gbs(n, mp));
        }
        printf("    baseline memcpy prefaulted             %6.2f GB/s\n", gbs(n, cp));
        if (single)
            printf("    safeload into its arena                %6.2f GB/s = %.2fx best fresh baseline (>= 1.0)\n",
                   out[th].alloc, out[th].alloc / best);
        else
            printf("    safeload into its arena                %6.2f GB/s\n", out[th].alloc);
        printf("    safeload into prefaulted, io read      %6.2f GB/s = %.2fx memcpy (>= 0.8)", out[th].pref,
               out[th].pref / gbs(n, cp));
        if (single) printf(", %.2fx read() into prefaulted", out[th].pref / gbs(n, rp));
        printf("\n    safeload into prefaulted, io mmap      %6.2f GB/s = %.2fx memcpy (>= 0.8)",
               out[th].pref_mmap, out[th].pref_mmap / gbs(n, cp));
        if (single) printf(", %.2fx mmap+memcpy into prefaulted", out[th].pref_mmap / gbs(n, mp));
        printf("\n");
        printf("    bf16->f32 into its arena               %6.2f GB/s in, %5.2f in+out\n",
               out[th].cast_alloc, out[th].cast_alloc * 3);
        printf("    bf16->f32 into prefaulted, io read     %6.2f GB/s in, %5.2f in+out = %.2fx memcpy r+w (>= 0.8)\n",
               out[th].cast_pref, out[th].cast_pref * 3, out[th].cast_pref * 3 / (2 * gbs(n, cp)));
        printf("    bf16->f32 into prefaulted, io mmap     %6.2f GB/s in, %5.2f in+out = %.2fx memcpy r+w (>= 0.8)\n",
               out[th].cast_pref_mmap, out[th].cast_pref_mmap * 3,
               out[th].cast_pref_mmap * 3 / (2 * gbs(n, cp)));
    }
    free(src);
    free(dst);
    free(rq);
    safeload_model_close(m);
}

/* ---- io AUTO: as READ on a warm file, as DIRECT on a cold one ---- */
static void bench_auto(const char *path) {
    static const safeload_io ios[3] = {SAFELOAD_IO_READ, SAFELOAD_IO_DIRECT, SAFELOAD_IO_AUTO};
    static const char *const names[3] = {"read  ", "direct", "auto  "};
    safeload_model *m;
    safeload_error e;
    safeload_request *rq;
    unsigned char *dst;
    uint64_t n;
    double warm_read, warm_auto, t;
    int i;
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    n = safeload_data_size(safeload_model_shard(m, 0));
    rq = (safeload_request *)calloc(safeload_model_tensor_count(m) + 1, sizeof *rq);
    dst = (unsigned char *)malloc((size_t)n);
    memset(dst, 2, (size_t)n);
    printf("\nio auto (%s, 1 thread, into prefaulted memory)\n", path);
    sl_prefaulted(m, 1, 0, dst, rq, SAFELOAD_IO_READ);          /* warm */
    MEDIAN(warm_read, sl_prefaulted(m, 1, 0, dst, rq, SAFELOAD_IO_READ));
    MEDIAN(warm_auto, sl_prefaulted(m, 1, 0, dst, rq, SAFELOAD_IO_AUTO));
    printf("  warm file: auto %6.2f GB/s = %.2fx io read\n", gbs(n, warm_auto), warm_read / warm_auto);
    /* cold: one load each after dropping the file from the page cache; what it left there */
    for (i = 0; i < 3; i++) {
        pc_drop(path);
        t = sl_prefaulted(m, 1, 0, dst, rq, ios[i]);
        printf("  cold file: %s %6.2f GB/s, leaves %5.1f%% of the file in the page cache\n",
               names[i], gbs(n, t), 100 * pc_resident(path, 0, 0));
    }
    free(dst);
    free(rq);
    safeload_model_close(m);
}

/* ---- host memory states: the same loads into fresh memory, memory just freed vs idle ----
   Backed: just before the run the bench maps SAFELOAD_BENCH_BACKED_MB (default 1.5x the
   bigger file, at least 1 GiB) of anonymous memory with huge pages, touches it and frees it, so
   the memory a load takes is still backed by the host. Idle: the bench sleeps
   SAFELOAD_BENCH_IDLE_S (default 6) seconds first, long enough for a balloon's free page
   reporting (2 s on Linux) to hand the freed memory back to the host. On bare metal both
   states read alike. Loaders, interleaved (a new shuffled order each time: bench_order): one
   read() into fresh malloc (threads split the file), the C peers' way (mmap + per-tensor malloc +
   memcpy, threads split the tensors), safeload_load_all with each page policy. Times cover
   open to loaded (the header parse included), not the freeing; minor faults per run. */
#include <sys/resource.h>
enum { L_READ, L_PEER, L_AUTO, L_HUGE, L_NORMAL, L_COUNT };
static const char *const ld_names[L_COUNT] = {
    "read() into fresh malloc", "mmap + per-tensor malloc+memcpy", "safeload default (auto)",
    "safeload pages huge", "safeload pages normal"};

static void make_backed(uint64_t mb) {
    size_t sz = (size_t)mb << 20, i;
    unsigned char *p = (unsigned char *)mmap(NULL, sz, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, sz, MADV_HUGEPAGE);
    for (i = 0; i < sz; i += 4096) p[i] = 1;
    munmap(p, sz);
}

static long minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* Repetition r's order of n variants (n <= 64): a shuffle seeded by r, the same every run.
   Not a rotation: rotating a fixed order still puts each variant after the same one every
   time: whatever state variant A leaves (the disk's, the host's cache's) always met variant
   B. In the cold section on 12-03, io direct at depth 1, always right after io direct, ran
   1.3-1.4x as fast as it in every repetition of two runs, and io auto, always right after
   depth 1, 0.7-0.8x as fast as io direct: the same code as io direct there. */
static void bench_order(int r, int n, int *out) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(r + 1);
    int i;
    for (i = 0; i < n; i++) out[i] = i;
    for (i = n - 1; i > 0; i--) {
        int j, tmp;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;        /* xorshift64 */
        j = (int)(x % (uint64_t)(i + 1));
        tmp = out[i]; out[i] = out[j]; out[j] = tmp;
    }
}

static double loadavg(void) {
    double a = 0;
    FILE *fp = fopen("/proc/loadavg", "r");
    if (fp) { if (fscanf(fp, "%lf", &a) != 1) a = 0; fclose(fp); }
    return a;
}

typedef struct peer_job { const unsigned char *map; const safeload_tensor *const *t; size_t a, b; void **out; } peer_job;
static void *peer_run(void *arg) {
    peer_job *j = (peer_job *)arg;
    size_t i;
    for (i = j->a; i < j->b; i++) {
        j->out[i] = malloc((size_t)j->t[i]->nbytes ? (size_t)j->t[i]->nbytes : 1);
        memcpy(j->out[i], j->map + j->t[i]->file_offset, (size_t)j->t[i]->nbytes);
    }
    return NULL;
}

/* one timed load of `path` into fresh memory by loader `ld`; frees after timing */
static double ms_run(const char *path, int ld, int th, safeload_load_stats *st) {
    safeload_error e;
    double t0 = bu_now(), t;
    if (ld == L_READ) {
        int fd = open(path, O_RDONLY);
        struct stat sb;
        unsigned char *dst;
        fstat(fd, &sb);
        dst = (unsigned char *)malloc((size_t)sb.st_size);
        run_split(th, pread_job, fd, dst, NULL, 0, (uint64_t)sb.st_size);
        t = bu_now() - t0;
        free(dst);
        close(fd);
    } else if (ld == L_PEER) {
        safeload_file *f;
        size_t n, i, sum = 0, half = 0;
        const safeload_tensor **tv;
        void **out;
        int fd = open(path, O_RDONLY);
        struct stat sb;
        unsigned char *map;
        peer_job jb[2];
        pthread_t tid;
        fstat(fd, &sb);
        map = (unsigned char *)mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (safeload_open(&f, path, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
        n = safeload_tensor_count(f);
        tv = (const safeload_tensor **)malloc(n * sizeof *tv);
        out = (void **)malloc(n * sizeof *out);
        for (i = 0; i < n; i++) { tv[i] = safeload_tensor_at(f, i); sum += (size_t)tv[i]->nbytes; }
        for (i = 0; i < n && half < sum / 2; i++) half += (size_t)tv[i]->nbytes;
        jb[0].map = jb[1].map = map; jb[0].t = jb[1].t = tv; jb[0].out = jb[1].out = out;
        jb[0].a = 0; jb[0].b = th > 1 ? i : n; jb[1].a = i; jb[1].b = n;
        if (th > 1) pthread_create(&tid, NULL, peer_run, &jb[1]);
        peer_run(&jb[0]);
        if (th > 1) pthread_join(tid, NULL);
        munmap(map, (size_t)sb.st_size);
        close(fd);
        t = bu_now() - t0;
        for (i = 0; i < n; i++) free(out[i]);
        free(out);
        free(tv);
        safeload_close(f);
    } else {
        safeload_model *m;
        safeload_loaded *l;
        safeload_load_desc d;
        memset(&d, 0, sizeof d);
        d.threads = th;
        d.pages = ld == L_HUGE ? SAFELOAD_PAGES_HUGE : ld == L_NORMAL ? SAFELOAD_PAGES_NORMAL
                                                                     : SAFELOAD_PAGES_AUTO;
        d.stats = st;
        if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK ||
            safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e) != SAFELOAD_OK) {
            fprintf(stderr, "%s\n", e.message);
            exit(1);
        }
        t = bu_now() - t0;
        safeload_loaded_free(l);
        safeload_model_close(m);
    }
    return t;
}

#define MS_MAX_REPS 64
typedef struct ms_cell {
    double t[MS_MAX_REPS], load[MS_MAX_REPS];
    long flt[MS_MAX_REPS];
    int n, huge_runs;
    safeload_load_stats st[MS_MAX_REPS];    /* what each load ran (its page policy's figures) */
} ms_cell;

static double ms_med(ms_cell *c, double *lo, double *hi) {
    double v[MS_MAX_REPS];
    int i;
    memcpy(v, c->t, sizeof(double) * (size_t)c->n);
    *lo = *hi = v[0];
    for (i = 0; i < c->n; i++) { if (v[i] < *lo) *lo = v[i]; if (v[i] > *hi) *hi = v[i]; }
    return bu_median(v, c->n);
}

static void ms_measure(ms_cell *c, const char *path, int ld, int th, int state, uint64_t backed_mb,
                       int idle_s) {
    safeload_load_stats st;
    long f0;
    memset(&st, 0, sizeof st);
    if (state) make_backed(backed_mb); else sleep((unsigned)idle_s);
    c->load[c->n] = loadavg();
    f0 = minflt();
    c->t[c->n] = ms_run(path, ld, th, &st);
    c->flt[c->n] = minflt() - f0;
    if (ld == L_AUTO && st.pages == SAFELOAD_PAGES_HUGE) c->huge_runs++;
    c->st[c->n] = st;
    c->n++;
}

/* Reads the file through one reused buffer (4 MiB reads): its page-cache pages become as
   recently read as those of a file loaded a moment ago. On a VM guest the host reclaims guest
   pages that go unread, page cache included: on the PVM guest of 2026-11-30 a 384 MiB file
   whose cache went unread for 20 s loaded 1.5x slower into backed memory, 60 s later 2.2x
   slower. recache's reads, below. */
static void rewarm(const char *path) {
    static unsigned char buf[4 << 20];
    int fd = open(path, O_RDONLY);
    off_t at = 0;
    ssize_t got;
    if (fd < 0) return;
    while ((got = pread(fd, buf, sizeof buf, at)) > 0) at += got;
    close(fd);
}

/* The share of a file's cached bytes held in 4 KiB folios (pages not part of a larger one),
   or -1 where it cannot be told (/proc/kpageflags and the page frames in /proc/self/pagemap
   are root's). Linux's page cache keeps a file in folios of up to 2 MiB (ext4 from 6.16),
   and copying out of 4 KiB folios is slower: on the PVM guest of 2026-12-03, pread() into
   prefaulted memory moved 6.5-9.9 GB/s out of a file cached wholly in 4 KiB folios against
   8.9-13.8 GB/s out of the same bytes in 2 MiB folios (6 reps each, interleaved). A file
   written in large writes, or read after a drop, starts in large folios; there the guest's
   DAMON reclaim evicted old files' pages, and what was read back into the holes came in
   4 KiB folios (the bench's MoE file: 30 % of its bytes, the dense file 37 %, 5 minutes
   after they were written). Pages not cached are left alone: touching them would read them
   in. */
static double small_folios(const char *path) {
    int fd = open(path, O_RDONLY), pm = open("/proc/self/pagemap", O_RDONLY),
        kf = open("/proc/kpageflags", O_RDONLY);
    struct stat sb;
    void *map = NULL;
    unsigned char *m, *vec = NULL;
    uint64_t *ent = NULL, n = 0, i, small = 0, cached = 0;
    double r = -1;
    volatile unsigned char sink = 0;
    if (fd < 0 || pm < 0 || kf < 0 || fstat(fd, &sb) != 0 || sb.st_size == 0) goto out;
    n = ((uint64_t)sb.st_size + 4095) / 4096;
    vec = (unsigned char *)calloc((size_t)n, 1);
    ent = (uint64_t *)calloc((size_t)n, sizeof *ent);
    if (!vec || !ent || pc_incore(fd, 0, n, 4096, &map, vec) != 0) goto out;
    m = (unsigned char *)map;
    for (i = 0; i < n; i++)                 /* mapped, so that pagemap names its frame */
        if (vec[i] & 1) sink = (unsigned char)(sink + m[i * 4096]);
    if (pread(pm, ent, (size_t)n * 8, (off_t)((uintptr_t)m / 4096 * 8)) != (ssize_t)(n * 8))
        goto out;
    for (i = 0; i < n; i++) {
        uint64_t pfn = ent[i] & (((uint64_t)1 << 55) - 1), fl;
        /* no frame: not cached after all (evicted since mincore), or not root (all zero) */
        if (!(vec[i] & 1) || !(ent[i] >> 63) || !pfn ||
            pread(kf, &fl, 8, (off_t)(pfn * 8)) != 8) continue;
        cached++;
        small += !(fl >> 15 & 1) && !(fl >> 16 & 1);  /* neither a compound head nor tail */
    }
    if (cached) r = (double)small / (double)cached;
out:
    if (map) munmap(map, (size_t)(n * 4096));
    free(vec);
    free(ent);
    if (fd >= 0) close(fd);
    if (pm >= 0) close(pm);
    if (kf >= 0) close(kf);
    return r;
}

/* Both files dropped from the page cache, then each read twice in 4 MiB reads: cached afresh
   alike, in the folios a sequential read gets, whatever the guest's reclaim left of either.
   The second read: on the PVM guest the load after a single read back was at times 1.4x
   slower for the file read back first (12-03); fresh page cache, like fresh memory, may cost
   the host something on its first use. */
static void recache(const char *a, const char *b) {
    int k;
    pc_drop(a);
    pc_drop(b);
    for (k = 0; k < 4; k++) rewarm(k & 1 ? b : a);
}

static void bench_memory_states(const char *dense, const char *moe) {
    uint64_t dsz, msz, backed_mb;
    int idle_s = (int)env_u64("SAFELOAD_BENCH_IDLE_S", 6), st, th, ld, r, k;
    static ms_cell cell[2][3][L_COUNT];       /* [state][threads][loader] */
    static ms_cell moecell[2], paircell[2];   /* [state]: the pairs' MoE and dense loads */
    static double pair[2][MS_MAX_REPS];   /* MoE GB/s over its pair's dense's, side by side */
    static double small[2][2][MS_MAX_REPS];   /* [state][dense, MoE]: 4 KiB folios, as found */
    struct stat sb;
    memset(cell, 0, sizeof cell);
    memset(moecell, 0, sizeof moecell);
    memset(paircell, 0, sizeof paircell);
    stat(dense, &sb); dsz = (uint64_t)sb.st_size;
    stat(moe, &sb); msz = (uint64_t)sb.st_size;
    backed_mb = env_u64("SAFELOAD_BENCH_BACKED_MB", SL__MAX((uint64_t)1024, SL__MAX(dsz, msz) * 3 / 2 >> 20));
    printf("\nhost memory states (%s, %.2f GiB; MoE %s), %d rep%s, idle = %d s asleep first, "
           "backed = %llu MiB touched and freed first; load average %.2f at the start\n", dense,
           (double)dsz / 1073741824.0, moe, reps, reps > 1 ? "s" : "", idle_s,
           (unsigned long long)backed_mb, loadavg());
    {   /* warm the page cache */
        double t = ms_run(dense, L_READ, 2, NULL) + ms_run(moe, L_READ, 2, NULL);
        (void)t;
    }
    for (r = 0; r < reps && r < MS_MAX_REPS; r++)
        for (st = 0; st < 2; st++)
            for (th = 1; th <= 2; th++) {
                int ord[L_COUNT];
                bench_order(r * 4 + st * 2 + th, L_COUNT, ord);     /* a new order each time */
                for (k = 0; k < L_COUNT; k++) {
                    ld = ord[k];
                    ms_cell *mc = &moecell[st], *pc = &paircell[st];
                    ms_measure(&cell[st][th][ld], dense, ld, th, st, backed_mb, idle_s);
                    if (th != 2 || ld != L_AUTO) continue;
                    /* then a pair of its own: the MoE file and the dense one, default, 2
                       threads, MoE first every other repetition, both files cached afresh
                       alike just before (recache, small_folios), in the same state: a pair
                       the host's drift hits alike. (Its own: the load after a recache ran
                       up to 6 ms slower at times, and the default's cell above stays as
                       every other loader's.) */
                    small[st][0][r] = small_folios(dense);
                    small[st][1][r] = small_folios(moe);
                    recache(dense, moe);
                    if (r & 1) ms_measure(mc, moe, L_AUTO, 2, st, backed_mb, idle_s);
                    ms_measure(pc, dense, L_AUTO, 2, st, backed_mb, idle_s);
                    if (!(r & 1)) ms_measure(mc, moe, L_AUTO, 2, st, backed_mb, idle_s);
                    pair[st][r] = ((double)msz / mc->t[mc->n - 1]) / ((double)dsz / pc->t[pc->n - 1]);
                }
            }
    for (st = 0; st < 2; st++) {
        printf("  %s\n", st ? "memory freed just before (backed)" : "memory idle >= 6 s before (host took it back)");
        for (th = 1; th <= 2; th++) {
            double base[2] = {0, 0};
            for (ld = 0; ld < L_COUNT; ld++) {
                ms_cell *c = &cell[st][th][ld];
                double lo, hi, med = ms_med(c, &lo, &hi), la = 0;
                long fl[MS_MAX_REPS];
                int i;
                for (i = 0; i < c->n; i++) { la += c->load[i]; fl[i] = c->flt[i]; }
                if (ld < 2) base[ld] = med;
                printf("    %d thread%s %-32s %7.3f s [%.3f-%.3f] %6.2f GB/s  %7ld faults  load %.1f",
                       th, th > 1 ? "s" : " ", ld_names[ld], med, lo, hi, (double)dsz / 1e9 / med,
                       fl[0], la / c->n);
                if (ld >= 2)
                    printf("  = %.2fx read(), %.2fx peer", base[0] / med, base[1] / med);
                if (ld == L_AUTO) printf(" (auto kept huge pages in %d of %d)", c->huge_runs, c->n);
                printf("\n");
                /* a default load 1.5x its median or slower: what its page policy measured */
                for (i = 0; ld == L_AUTO && i < c->n; i++)
                    if (c->t[i] >= 1.5 * med)
                        printf("      rep %d: %.3f s, ended on %s pages, %llu of %llu MiB huge, "
                               "huge %llu MB/s (its latest verdict), 4 KiB %llu MB/s (its probe)\n",
                               i + 1, c->t[i], c->st[i].pages == SAFELOAD_PAGES_HUGE ? "huge" : "4 KiB",
                               (unsigned long long)(c->st[i].huge_bytes >> 20),
                               (unsigned long long)(c->st[i].fresh_bytes >> 20),
                               (unsigned long long)c->st[i].touch_huge_mbps,
                               (unsigned long long)c->st[i].touch_normal_mbps);
            }
        }
    }
    for (st = 0; st < 2; st++) {
        double lo, hi, md = ms_med(&paircell[st], &lo, &hi), mm = ms_med(&moecell[st], &lo, &hi);
        int n = moecell[st].n;
        lo = hi = pair[st][0];
        for (r = 0; r < n; r++) { lo = SL__MIN(lo, pair[st][r]); hi = SL__MAX(hi, pair[st][r]); }
        printf("  MoE vs dense, safeload default, 2 threads, %s: %.2f vs %.2f GB/s = %.2fx; side "
               "by side %.2fx [%.2f-%.2f] (target >= 0.85)\n", st ? "backed" : "idle  ",
               (double)msz / 1e9 / mm, (double)dsz / 1e9 / md, ((double)msz / mm) / ((double)dsz / md),
               bu_median(pair[st], n), lo, hi);
        if (n && small[st][0][0] >= 0 && small[st][1][0] >= 0)
            printf("    both files' page cache dropped and read twice before each pair; before "
                   "that, %.0f %% / %.0f %% of the dense / MoE file's cached bytes were in 4 KiB "
                   "folios (medians)\n", 100 * bu_median(small[st][0], n),
                   100 * bu_median(small[st][1], n));
    }
    for (st = 0; st < 2; st++) {
        double lo, hi, a = ms_med(&cell[st][2][L_AUTO], &lo, &hi);
        double b = SL__MIN(ms_med(&cell[st][2][L_READ], &lo, &hi), ms_med(&cell[st][2][L_PEER], &lo, &hi));
        printf("  default vs the faster naive baseline, 2 threads, %s: %.2fx (target >= %s)\n",
               st ? "backed" : "idle  ", b / a, st ? "2.0" : "1.0");
    }
    printf("  load average %.2f at the end\n", loadavg());
}

/* ---- cold loads: against the disk's own limit ----
   The file dropped from the page cache before every load (posix_fadvise(DONTNEED), checked
   with mincore; as root, drop_caches when pages stay), then loaded by each variant, interleaved
   (every repetition runs every variant once, in a shuffled order of its own: bench_order).
   Baseline: T threads (1, 4, 16, 32) reading the whole file in 4 MiB O_DIRECT blocks, each thread into one
   aligned buffer of its own, reused, the blocks handed out by a shared counter; and T = 1, 4
   and 16 again with each buffer on huge pages (a virtual disk moves a read as one piece per
   physically contiguous stretch of memory: on the PVM guest 4 KiB pages scattered over
   memory cost it 2-4x). The best of them (by median GB/s) is the disk's limit. safeload reads into prefaulted memory with
   SAFELOAD_BENCH_COLD_THREADS (default 2) threads; each of its times is divided by the best
   baseline's time in the same repetition (per-repetition ratios: their median and range). */
typedef struct cold_job {
    const char *path;
    uint64_t size;
    volatile uint64_t *next;
    int huge, ok;
} cold_job;

static void *cold_reader(void *a) {
    cold_job *j = (cold_job *)a;
    const uint64_t blk = (uint64_t)4 << 20;
    const size_t hp = (size_t)2 << 20;
    void *buf = NULL, *map = NULL;
    int fd = open(j->path, O_RDONLY | O_DIRECT);
    if (j->huge) {   /* 2 MiB aligned, huge pages advised */
        map = mmap(NULL, (size_t)blk + hp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
        if (map == MAP_FAILED) map = NULL;
        else {
            buf = (void *)(((uintptr_t)map + hp - 1) & ~(uintptr_t)(hp - 1));
            madvise(buf, (size_t)blk, MADV_HUGEPAGE);
        }
        j->ok = fd >= 0 && map;
    } else {
        j->ok = fd >= 0 && posix_memalign(&buf, 4096, (size_t)blk) == 0;
    }
    while (j->ok) {
        uint64_t at = __sync_fetch_and_add(j->next, (uint64_t)1) * blk;
        ssize_t r;
        if (at >= j->size) break;
        r = pread(fd, buf, (size_t)blk, (off_t)at);
        if (r <= 0) j->ok = 0;
    }
    if (map) munmap(map, (size_t)blk + hp);
    else free(buf);
    if (fd >= 0) close(fd);
    return NULL;
}

/* seconds for th threads to read the file, or -1 when O_DIRECT was refused */
static double cold_base(const char *path, uint64_t size, int th, int huge) {
    pthread_t tid[32];
    cold_job jb[32];
    volatile uint64_t next = 0;
    double t0 = bu_now();
    int i, ok = 1;
    for (i = 0; i < th; i++) {
        jb[i].path = path; jb[i].size = size; jb[i].next = &next; jb[i].ok = 0;
        jb[i].huge = huge;
        if (i) pthread_create(&tid[i], NULL, cold_reader, &jb[i]);
    }
    cold_reader(&jb[0]);
    for (i = 1; i < th; i++) pthread_join(tid[i], NULL);
    t0 = bu_now() - t0;
    for (i = 0; i < th; i++) ok &= jb[i].ok;
    return ok ? t0 : -1;
}

/* drop the file from the page cache; what is left of it there (fraction). drop_caches empties
   the whole machine's cache, so once it has left the file in place (tmpfs) it is not tried
   again. */
static double cold_drop(const char *path, int *drop_caches_ok) {
    double left;
    pc_drop(path);
    left = pc_resident(path, 0, 0);
    if (left > 0 && *drop_caches_ok && geteuid() == 0) {
        FILE *fp = fopen("/proc/sys/vm/drop_caches", "w");
        if (fp) { fputs("1\n", fp); fclose(fp); }
        left = pc_resident(path, 0, 0);
        if (left > 0) *drop_caches_ok = 0;
    }
    return left;
}

enum { C_B1, C_B4, C_B16, C_B32, C_H1, C_H4, C_H16, C_READ, C_DIRECT, C_DIRECT1, C_AUTO,
       C_PLAIN, C_AL, C_ALHP, C_COUNT, C_NBASE = 7, C_NSMALL = 4 };

/* this process's CPU seconds (user + system, every thread) */
static double cpu_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

/* aligned: the same tensors with the data section 4096-aligned (C_AL: into the same memory,
   4 KiB-aligned; C_ALHP: into prefaulted huge pages), so O_DIRECT reads go straight there */
static void bench_cold(const char *path, const char *aligned, const char *cmd) {
    static const int bth[C_NBASE] = {1, 4, 16, 32, 1, 4, 16};
    static const char *const names[C_COUNT] = {
        "baseline O_DIRECT 4 MiB,  1 thread", "baseline O_DIRECT 4 MiB,  4 threads",
        "baseline O_DIRECT 4 MiB, 16 threads", "baseline O_DIRECT 4 MiB, 32 threads",
        "baseline, huge pages,     1 thread", "baseline, huge pages,     4 threads",
        "baseline, huge pages,    16 threads",
        "safeload io read", "safeload io direct", "safeload io direct qd 1", "safeload io auto",
        "safeload io direct, plain reads", "safeload io direct, aligned file",
        "safeload io direct, aligned, huge pages"};
    static double t[C_COUNT][64], left[C_COUNT][64], cpu[C_COUNT][64];
    static safeload_load_stats st[C_COUNT][64];
    int th = (int)env_u64("SAFELOAD_BENCH_COLD_THREADS", 2), r, k, v, best = -1, dc_ok = 1;
    double before = 0, bmed[C_NBASE], dmed = 0, amed = 0, almed = 0, hpmed = 0;
    safeload_model *m, *ma;
    safeload_error e;
    safeload_request *rq;
    unsigned char *dst, *dsthp;
    void *mem = NULL, *hpmap;
    uint64_t n, size;
    struct stat sb;
    size_t hp = (size_t)2 << 20;
    if (th < 1) th = 1;
    if (safeload_model_open(&m, path, NULL, &e) != SAFELOAD_OK ||
        safeload_model_open(&ma, aligned, NULL, &e) != SAFELOAD_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
    n = safeload_data_size(safeload_model_shard(m, 0));
    size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : n;
    rq = (safeload_request *)calloc(safeload_model_tensor_count(m) + 1, sizeof *rq);
    /* 4 KiB-aligned (so that the aligned file's reads can go straight in), and the same on
       huge pages */
    if (posix_memalign(&mem, 4096, (size_t)n) != 0) exit(1);
    dst = (unsigned char *)mem;
    memset(dst, 2, (size_t)n);
    hpmap = mmap(NULL, (size_t)n + hp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hpmap == MAP_FAILED) exit(1);
    dsthp = (unsigned char *)(((uintptr_t)hpmap + hp - 1) & ~(uintptr_t)(hp - 1));
    madvise(dsthp, (size_t)n, MADV_HUGEPAGE);
    memset(dsthp, 2, (size_t)n);
    printf("\ncold loads: %s\n  %s, %.2f GiB; dropped from the page cache before every load; %d rep%s "
           "interleaved, order shuffled; safeload %d thread%s into prefaulted memory; "
           "load average %.2f at the start\n", cmd, path, (double)size / 1073741824.0, reps,
           reps > 1 ? "s" : "", th, th > 1 ? "s" : "", loadavg());
    for (r = 0; r < reps; r++) {
        int ord[C_COUNT];
        bench_order(r, C_COUNT, ord);
        for (k = 0; k < C_COUNT; k++) {
            safeload_load_desc d;
            v = ord[k];
            before = SL__MAX(before, cold_drop(path, &dc_ok));
            before = SL__MAX(before, cold_drop(aligned, &dc_ok));
            memset(&st[v][r], 0, sizeof st[v][r]);
            cpu[v][r] = cpu_now();
            if (v < C_NBASE) {
                t[v][r] = cold_base(path, size, bth[v], v >= C_NSMALL);
            } else {
                memset(&d, 0, sizeof d);
                d.threads = th;
                d.io = v == C_READ ? SAFELOAD_IO_READ : v == C_AUTO ? SAFELOAD_IO_AUTO
                                                                    : SAFELOAD_IO_DIRECT;
                d.queue_depth = v == C_DIRECT1;   /* 1: one read per worker, no ring */
                d.stats = &st[v][r];
                bench_no_fixed = v == C_PLAIN;
                t[v][r] = sl_into(v >= C_AL ? ma : m, SAFELOAD_DTYPE_NONE,
                                  v == C_ALHP ? dsthp : dst, rq, &d);
                bench_no_fixed = 0;
            }
            cpu[v][r] = cpu_now() - cpu[v][r];
            left[v][r] = pc_resident(v >= C_AL ? aligned : path, 0, 0);
        }
    }
    for (k = 0; k < C_NBASE; k++) {   /* median GB/s of each T; -1: O_DIRECT refused */
        double c[64];
        for (r = 0; r < reps; r++) c[r] = gbs(size, t[k][r]);
        bmed[k] = bu_median(c, reps);
        for (r = 0; r < reps; r++) if (t[k][r] < 0) bmed[k] = -1;
        if (bmed[k] > 0 && (best < 0 || bmed[k] > bmed[best])) best = k;
    }
    printf("  %-36s %-22s %-26s %-7s %s\n", "", "GB/s median [min-max]",
           "x best baseline [min-max]", "CPU s", "left in page cache");
    for (k = 0; k < C_COUNT; k++) {
        double g[64], x[64], lo = 1e30, hi = 0, xlo = 1e30, xhi = 0, lmax = 0, med;
        char lab[64], num[64];
        uint64_t bytes = k < C_NBASE ? size : n;
        int ok = k >= C_NBASE || bmed[k] > 0;
        for (r = 0; r < reps; r++) {
            g[r] = ok ? gbs(bytes, t[k][r]) : 0;
            x[r] = best >= 0 && ok ? g[r] / gbs(size, t[best][r]) : 0;
            lo = SL__MIN(lo, g[r]); hi = SL__MAX(hi, g[r]);
            xlo = SL__MIN(xlo, x[r]); xhi = SL__MAX(xhi, x[r]);
            lmax = SL__MAX(lmax, left[k][r]);
        }
        if (!ok) { printf("  %-36s O_DIRECT refused here\n", names[k]); continue; }
        if (k >= C_NBASE) snprintf(lab, sizeof lab, "%s, %d thread%s", names[k], th, th > 1 ? "s" : "");
        else snprintf(lab, sizeof lab, "%s", names[k]);
        med = bu_median(g, reps);
        snprintf(num, sizeof num, "%5.2f [%.2f-%.2f]", med, lo, hi);
        printf("  %-36s %-22s ", lab, num);
        if (best >= 0) {
            double xm = bu_median(x, reps);
            snprintf(num, sizeof num, "%5.2fx [%.2f-%.2f]%s", xm, xlo, xhi, k == best ? " *" : "");
            printf("%-26s ", num);
            if (k == C_DIRECT) dmed = xm;
            if (k == C_AUTO) amed = xm;
            if (k == C_AL) almed = xm;
            if (k == C_ALHP) hpmed = xm;
        }
        printf("%7.3f %5.1f %%", bu_median(cpu[k], reps), 100 * lmax);
        if (k >= C_NBASE) {   /* what ran: io mode and files read direct (last repetition's) */
            safeload_load_stats *s = &st[k][reps - 1];
            printf("  (ran io %s, %d direct file%s, aio %s, depth %d",
                   s->io == SAFELOAD_IO_DIRECT ? "direct" : s->io == SAFELOAD_IO_READ ? "read"
                   : s->io == SAFELOAD_IO_MMAP ? "mmap" : "?", s->direct_files,
                   s->direct_files == 1 ? "" : "s",
                   s->aio == SAFELOAD_AIO_IO_URING ? "io_uring" : s->aio == SAFELOAD_AIO_NONE
                   ? "none" : "overlapped", s->queue_depth);
            if (s->aio_error) printf(", aio_error %d", s->aio_error);
            if (s->aio == SAFELOAD_AIO_IO_URING)
                printf(", %llu of %llu reads fixed", (unsigned long long)s->fixed_reads,
                       (unsigned long long)s->reads);
            printf(")");
        }
        printf("\n");
    }
    if (best >= 0)
        printf("  * the best baseline (the disk's limit): %d thread%s%s. Cold direct or auto: %.2fx it "
               "(target >= 0.9)\n", bth[best], bth[best] > 1 ? "s" : "",
               best >= C_NSMALL ? ", huge pages" : "", SL__MAX(dmed, amed));
    if (best >= 0)
        printf("  the same file written with SAFELOAD_SAVE_ALIGN_DATA (data 4096-aligned, read "
               "straight into memory): io direct %.2fx it, into huge pages %.2fx\n", almed, hpmed);
    {   /* the same against the best of the 4 KiB-page baselines alone */
        int b4 = -1;
        for (k = 0; k < C_NSMALL; k++)
            if (bmed[k] > 0 && (b4 < 0 || bmed[k] > bmed[b4])) b4 = k;
        if (b4 >= 0 && b4 != best) {
            double xd[64], xa[64];
            for (r = 0; r < reps; r++) {
                xd[r] = t[b4][r] / t[C_DIRECT][r] * (double)n / (double)size;
                xa[r] = t[b4][r] / t[C_AUTO][r] * (double)n / (double)size;
            }
            printf("  against the best baseline on 4 KiB pages (%d thread%s, %.2f GB/s): direct "
                   "%.2fx, auto %.2fx\n", bth[b4], bth[b4] > 1 ? "s" : "", bmed[b4],
                   bu_median(xd, reps), bu_median(xa, reps));
        }
    }
    {   /* the queue's gain: direct at the default depth over depth 1, the same repetition */
        double q[64], qlo = 1e30, qhi = 0;
        for (r = 0; r < reps; r++) {
            q[r] = t[C_DIRECT1][r] / t[C_DIRECT][r];
            qlo = SL__MIN(qlo, q[r]); qhi = SL__MAX(qhi, q[r]);
        }
        printf("  io direct, default queue depth over depth 1: %.2fx [%.2f-%.2f]\n",
               bu_median(q, reps), qlo, qhi);
    }
    if (BENCH_FIXED_AB) {   /* fixed buffers over plain reads: wall time, CPU time */
        double q[64], c[64], qlo = 1e30, qhi = 0, clo = 1e30, chi = 0;
        for (r = 0; r < reps; r++) {
            q[r] = t[C_PLAIN][r] / t[C_DIRECT][r];
            c[r] = cpu[C_DIRECT][r] > 0 ? cpu[C_PLAIN][r] / cpu[C_DIRECT][r] : 0;
            qlo = SL__MIN(qlo, q[r]); qhi = SL__MAX(qhi, q[r]);
            clo = SL__MIN(clo, c[r]); chi = SL__MAX(chi, c[r]);
        }
        printf("  io direct, fixed buffers over plain reads: %.2fx [%.2f-%.2f] the speed, "
               "%.2fx [%.2f-%.2f] less CPU\n", bu_median(q, reps), qlo, qhi, bu_median(c, reps),
               clo, chi);
    }
    printf("  page cache before each load: at most %.1f %% of the file%s; load average %.2f at "
           "the end\n", 100 * before, before > 0.01 ? " (NOT COLD: the file could not be dropped; "
           "tmpfs?)" : "", loadavg());
    free(dst);
    munmap(hpmap, (size_t)n + hp);
    safeload_model_close(ma);
    free(rq);
    safeload_model_close(m);
}

/* the command as run: the SAFELOAD_BENCH_* variables set, then the program */
extern char **environ;
static void command_line(char *out, size_t cap, const char *prog) {
    size_t at = 0;
    char **ev;
    out[0] = 0;
    for (ev = environ; ev && *ev && at < cap; ev++)
        if (strncmp(*ev, "SAFELOAD_BENCH_", 15) == 0)
            at += (size_t)snprintf(out + at, cap - at, "%s ", *ev);
    if (at < cap) snprintf(out + at, cap - at, "%s", prog);
}

int main(int argc, char **argv) {
    const char *dir = getenv("SAFELOAD_BENCH_DIR") ? getenv("SAFELOAD_BENCH_DIR") : "build/bench";
    const char *only = getenv("SAFELOAD_BENCH_ONLY") ? getenv("SAFELOAD_BENCH_ONLY") : "";
    int cold_only = strcmp(only, "cold") == 0;
    /* the cold section alone reads the file (4 + 3) x reps times from disk: 1 GiB by default */
    uint64_t dense_mb = env_u64("SAFELOAD_BENCH_DENSE_MB", cold_only ? 1024 : 2048);
    uint64_t moe_mb = env_u64("SAFELOAD_BENCH_MOE_MB", 1536);
    uint64_t moe_n = env_u64("SAFELOAD_BENCH_MOE_TENSORS", 100000);
    char dense[600], moe[600], sharded[600], aligned[600], cmd[1024];
    row rd[3], rm[3], rs[3];
    (void)argc;
    command_line(cmd, sizeof cmd, argv[0]);
    reps = (int)env_u64("SAFELOAD_BENCH_REPS", 5);
    if (reps < 1 || reps > 64) reps = 5;
    mkdir(dir, 0755);
    snprintf(dense, sizeof dense, "%s/dense.safetensors", dir);
    snprintf(moe, sizeof moe, "%s/moe.safetensors", dir);
    snprintf(sharded, sizeof sharded, "%s/sharded", dir);
    snprintf(aligned, sizeof aligned, "%s/dense-aligned.safetensors", dir);
    /* SAFELOAD_BENCH_ONLY=cold: the cold loads alone, on the dense file alone */
    if (cold_only) {
        printf("bench_load: writing %s/dense.safetensors and dense-aligned.safetensors (%llu MiB each)\n",
               dir, (unsigned long long)dense_mb);
        if (!save_dense(dir, dense_mb, 0) || !save_dense(dir, dense_mb, 2)) {
            fprintf(stderr, "cannot write the checkpoint\n");
            return 1;
        }
        bench_cold(dense, aligned, cmd);
        return 0;
    }
    printf("bench_load: writing checkpoints into %s (dense %llu MiB, MoE %llu MiB in %llu tensors)\n",
           dir, (unsigned long long)dense_mb, (unsigned long long)moe_mb, (unsigned long long)moe_n);
    if (!save_dense(dir, dense_mb, 0) || !save_moe(dir, moe_mb, moe_n) || !save_dense(dir, dense_mb, 1)) {
        fprintf(stderr, "cannot write the checkpoints\n");
        return 1;
    }
    /* SAFELOAD_BENCH_ONLY=memory: the host memory states alone */
    if (strcmp(only, "memory") == 0) {
        bench_memory_states(dense, moe);
        return 0;
    }
    bench_file("dense", dense, dense, rd);
    bench_file("moe", moe, moe, rm);
    bench_file("sharded (4 shards + index)", sharded, dense, rs);
    bench_auto(dense);
    if (!save_dense(dir, dense_mb, 2)) { fprintf(stderr, "cannot write the checkpoint\n"); return 1; }
    bench_cold(dense, aligned, cmd);
    bench_memory_states(dense, moe);
    printf("\nMoE vs dense, safeload into its arena: 1 thread %.2fx, 2 threads %.2fx (target >= 0.85)\n",
           rm[1].alloc / rd[1].alloc, rm[2].alloc / rd[2].alloc);
    printf("MoE vs dense, into prefaulted memory:  1 thread %.2fx, 2 threads %.2fx (io read); "
           "%.2fx, %.2fx (io mmap)\n", rm[1].pref / rd[1].pref, rm[2].pref / rd[2].pref,
           rm[1].pref_mmap / rd[1].pref_mmap, rm[2].pref_mmap / rd[2].pref_mmap);
    printf("MoE vs dense, bf16->f32 into prefaulted: 1 thread %.2fx, 2 threads %.2fx (io read)\n",
           rm[1].cast_pref / rd[1].cast_pref, rm[2].cast_pref / rd[2].cast_pref);
    return 0;
}
