/* test_win: the platform layer end to end through the public API, written to run the same on
   Linux and on Windows (built with mingw-w64, run under wine by `make test-win`): atomic saves
   (rename / MoveFileExW), a UTF-8 path with non-ASCII characters (CreateFileW), positional reads
   (pread / ReadFile), mappings, unbuffered I/O, directory scans, the worker pool (pthreads /
   CreateThread + SRWLOCK + CONDITION_VARIABLE), shards, cancellation. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include "testutil.h"
#include <time.h>
#if defined(_WIN32)
#include <direct.h>
#define tw_mkdir(p) _mkdir(p)
#else
#include <sys/stat.h>
#define tw_mkdir(p) mkdir(p, 0755)
#endif

/* Folders and files past MAX_PATH: the C runtime's calls refuse them on Windows, so the test
   makes and removes them through the header's own path form (checked below). */
#if defined(_WIN32)      /* wide-string helpers (the MSVC stand-in CRT has no <wchar.h>) */
static size_t tw_wlen(const wchar_t *w) { size_t n = 0; while (w[n]) n++; return n; }
static int tw_wstarts(const wchar_t *w, const wchar_t *p) {
    while (*p && *w == *p) w++, p++;
    return *p == 0;
}
static int tw_whas(const wchar_t *w, const wchar_t *p) {
    for (; *w; w++) if (tw_wstarts(w, p)) return 1;
    return 0;
}
#endif
static int tw_mkdir_long(const char *p) {
#if defined(_WIN32)
    wchar_t *w = sl__widen(p, NULL);
    int ok = w && CreateDirectoryW(w, NULL);
    sl__free(NULL, w);
    return ok ? 0 : -1;
#else
    return tw_mkdir(p);
#endif
}
static int tw_remove_long(const char *p, int is_dir) {
#if defined(_WIN32)
    wchar_t *w = sl__widen(p, NULL);
    int ok = w && (is_dir ? RemoveDirectoryW(w) : DeleteFileW(w));
    sl__free(NULL, w);
    return ok ? 0 : -1;
#else
    return is_dir ? rmdir(p) : remove(p);
#endif
}

#define TW_N 300
static char tw_names[TW_N][48];
static uint64_t tw_shapes[TW_N][2];
static unsigned char *tw_data[TW_N];
static safeload_save_tensor tw_t[TW_N];

static safeload_model *tw_nest_model;
static safeload_pool *tw_nest_pool;
static int tw_nest_refused;
static int tw_nested(void *user, uint64_t done, uint64_t total) {
    safeload_load_desc d;
    safeload_loaded *l = NULL;
    safeload_error e;
    (void)user;
    (void)done;
    (void)total;
    if (tw_nest_refused) return 0;     /* the first call: mid-load or the final one alike */
    memset(&d, 0, sizeof d);
    d.pool = tw_nest_pool;
    if (safeload_load_all(tw_nest_model, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_INVALID_ARGUMENT
        && l == NULL)
        tw_nest_refused = 1;
    else
        tw_nest_refused = -1;
    safeload_loaded_free(l);
    return 0;
}

static void tw_make(void) {
    size_t i;
    for (i = 0; i < TW_N; i++) {
        uint64_t j, n;
        snprintf(tw_names[i], sizeof tw_names[i], "blk.%u.ffn.w%u", (unsigned)(i / 3), (unsigned)(i % 3));
        tw_shapes[i][0] = i % 40 == 0 ? 700 : 3 + i % 5;
        tw_shapes[i][1] = i % 40 == 0 ? 2049 : 64;
        n = tw_shapes[i][0] * tw_shapes[i][1] * 2;
        tw_data[i] = (unsigned char *)malloc(n);
        for (j = 0; j < n; j++) tw_data[i][j] = (unsigned char)tu_rand64();
        for (j = 1; j < n; j += 2) tw_data[i][j] = (unsigned char)((tw_data[i][j] & 0x83) | 0x38);
        tw_t[i].name = tw_names[i];
        tw_t[i].dtype = SAFELOAD_BF16;
        tw_t[i].rank = 2;
        tw_t[i].shape = tw_shapes[i];
        tw_t[i].data = tw_data[i];
        tw_t[i].nbytes = n;
    }
}

static int tw_check(const safeload_loaded *l, safeload_dtype dt) {
    size_t i, k;
    int bad = 0;
    if (!l) return 0;   /* the load failed (already reported) */
    for (i = 0; i < l->count; i++) {
        for (k = 0; k < TW_N && strcmp(tw_names[k], l->tensors[i].name) != 0; k++) {}
        if (k == TW_N) { bad++; continue; }
        if (dt == SAFELOAD_F32) {
            uint64_t j;
            const unsigned char *o = (const unsigned char *)l->tensors[i].data;
            if (l->tensors[i].nbytes != tw_t[k].nbytes * 2) { bad++; continue; }
            for (j = 0; j < tw_t[k].nbytes / 2; j++)      /* bf16 -> f32 is bits << 16 */
                if (o[4 * j] || o[4 * j + 1] || o[4 * j + 2] != tw_data[k][2 * j] ||
                    o[4 * j + 3] != tw_data[k][2 * j + 1]) { bad++; break; }
        } else if (l->tensors[i].nbytes != tw_t[k].nbytes ||
                   memcmp(l->tensors[i].data, tw_data[k], tw_t[k].nbytes) != 0) bad++;
    }
    return bad == 0 && l->count > 0;
}

/* An index listing the first two tensors, in shards named as JSON strings (escapes kept). */
static void tw_index2(const char *idx, const char *shard0, const char *shard1) {
    FILE *fp = fopen(idx, "wb");
    if (!fp) return;
    fprintf(fp, "{\"weight_map\":{\"%s\":\"%s\",\"%s\":\"%s\"}}", tw_names[0], shard0, tw_names[1],
            shard1);
    fclose(fp);
}

static int tw_cancel_at, tw_calls;
static int tw_progress(void *u, uint64_t done, uint64_t total) {
    (void)u; (void)done; (void)total;
    return ++tw_calls == tw_cancel_at;
}

int main(void) {
    char dir[256], path[320], sdir[300], idx[340];
    safeload_error e;
    safeload_model *m;
    safeload_loaded *l = NULL;
    safeload_pool *pool;
    int th, io;
    size_t i;
    FILE *fp;
    tw_make();
    snprintf(dir, sizeof dir, "build/safeload-test-win-%lx-%lx", (unsigned long)time(NULL),
             (unsigned long)clock());
    CHECK(tw_mkdir(dir) == 0);
    /* a UTF-8 path with non-ASCII characters; saved twice (the second replaces the first) */
    snprintf(path, sizeof path, "%s/t\xC3\xABst-\xC3\xB1\xE6\xA8\xA1\xE5\x9E\x8B.safetensors", dir);
    CHECK(safeload_save(path, tw_t, 10, NULL, &e) == SAFELOAD_OK);
    CHECK_MSG(safeload_save(path, tw_t, TW_N, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    CHECK(safeload_model_open(&m, path, NULL, &e) == SAFELOAD_OK);
    CHECK_EQ_U64(safeload_model_tensor_count(m), TW_N);
    CHECK(safeload_pool_create(&pool, 4, &e) == SAFELOAD_OK);
    for (th = 1; th <= 4; th++)
        for (io = SAFELOAD_IO_READ; io <= SAFELOAD_IO_AUTO; io++) {
            safeload_load_desc d;
            safeload_load_stats st;
            memset(&d, 0, sizeof d);
            d.threads = th;
            d.pool = th % 2 ? pool : NULL;
            d.io = (safeload_io)io;
            d.chunk_size = 65536;
            d.queue_depth = th == 4 ? 1 : th == 3 ? 7 : 0;     /* 0: the default, 32 */
            d.stats = &st;
            CHECK_MSG(safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK, "%s", e.message);
            CHECK_MSG(tw_check(l, SAFELOAD_DTYPE_NONE), "threads %d io %d", th, io);
            safeload_loaded_free(l);
#if defined(_WIN32)
            /* unbuffered files: overlapped reads, several in flight per worker (none with a
               depth of 1) */
            if (io == SAFELOAD_IO_DIRECT)
                CHECK_MSG(st.io == SAFELOAD_IO_DIRECT &&
                          st.aio == (th == 4 ? SAFELOAD_AIO_NONE : SAFELOAD_AIO_OVERLAPPED) &&
                          (th == 4 ? st.queue_depth == 0 : st.queue_depth >= 2 * st.threads) &&
                          st.aio_error == 0, "threads %d: io %d aio %d queue %d error %d", th,
                          (int)st.io, (int)st.aio, st.queue_depth, st.aio_error);
#endif
            CHECK(safeload_load_all(m, SAFELOAD_F32, &d, &l, &e) == SAFELOAD_OK);
            CHECK_MSG(tw_check(l, SAFELOAD_F32), "cast, threads %d io %d", th, io);
            safeload_loaded_free(l);
        }
    /* cancellation from the progress callback */
    for (tw_cancel_at = 1; tw_cancel_at <= 3; tw_cancel_at++) {
        safeload_load_desc d;
        memset(&d, 0, sizeof d);
        d.threads = 2;
        d.progress = tw_progress;
        d.progress_interval = 1 << 16;
        d.chunk_size = 1 << 16;
        d.io = tw_cancel_at == 2 ? SAFELOAD_IO_DIRECT : SAFELOAD_IO_READ;  /* reads queued */
        tw_calls = 0;
        CHECK(safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_CANCELLED);
    }
    for (th = 0; th < 2; th++) {   /* a load from the progress callback of a load on the same
                                      pool: refused, not a hang, mid-load (interval 1) and at
                                      the final call alone (the default interval) */
        safeload_load_desc d;
        memset(&d, 0, sizeof d);
        d.pool = pool;
        d.progress = tw_nested;
        d.progress_interval = th == 0 ? 1 : 0;
        d.chunk_size = 1 << 16;
        tw_nest_model = m;
        tw_nest_pool = pool;
        tw_nest_refused = 0;
        CHECK(safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        safeload_loaded_free(l);
        CHECK_MSG(tw_nest_refused == 1, "interval %d: %d", th, tw_nest_refused);
    }
    /* an async load (CreateThread on Windows): the bytes of a synchronous one; a cancel
       before the first report ends it CANCELLED */
    for (th = 0; th < 2; th++) {
        safeload_load_desc d;
        safeload_job *job;
        safeload_arena *arena = NULL;
        safeload_request rq[TW_N];
        safeload_result r;
        memset(&d, 0, sizeof d);
        memset(rq, 0, sizeof rq);
        for (i = 0; i < TW_N; i++) rq[i].name = tw_names[i];
        d.threads = 2;
        d.pool = pool;
        d.chunk_size = 1 << 16;
        d.progress_interval = th ? 1 : 0;
        CHECK(safeload_load_async(&job, m, rq, TW_N, &d, &arena, &e) == SAFELOAD_OK);
        if (th) safeload_job_cancel(job);
        r = safeload_job_wait(job);
        if (th) {   /* a load that reported its last byte before the cancel landed ends OK */
            CHECK_MSG(r == SAFELOAD_CANCELLED || r == SAFELOAD_OK, "%s", safeload_result_id(r));
        } else {
            CHECK_MSG(r == SAFELOAD_OK, "%s", e.message);
        }
        if (r == SAFELOAD_OK) {
            safeload_loaded fake;
            memset(&fake, 0, sizeof fake);
            fake.count = TW_N;
            fake.tensors = rq;
            CHECK(tw_check(&fake, SAFELOAD_DTYPE_NONE));
        } else {
            CHECK(arena == NULL && e.code == SAFELOAD_CANCELLED);
        }
        safeload_arena_free(arena);
    }
    safeload_model_close(m);
    safeload_pool_destroy(pool);

    /* shards: an index, read through the directory scan */
    snprintf(sdir, sizeof sdir, "%s/sharded", dir);
    CHECK(tw_mkdir(sdir) == 0);
    for (i = 0; i < 3; i++) {
        char sp[400];
        snprintf(sp, sizeof sp, "%s/model-0000%u-of-00003.safetensors", sdir, (unsigned)i + 1);
        CHECK(safeload_save(sp, tw_t + i * (TW_N / 3), TW_N / 3, NULL, &e) == SAFELOAD_OK);
    }
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", sdir);
    fp = fopen(idx, "wb");
    fprintf(fp, "{\"metadata\":{\"total_size\":1},\"weight_map\":{");
    for (i = 0; i < TW_N; i++)
        fprintf(fp, "%s\"%s\":\"model-0000%u-of-00003.safetensors\"", i ? "," : "", tw_names[i],
                (unsigned)(i / (TW_N / 3)) + 1);
    fprintf(fp, "}}");
    fclose(fp);
    CHECK_MSG(safeload_model_open(&m, sdir, NULL, &e) == SAFELOAD_OK, "%s", e.message);
    CHECK_EQ_U64(safeload_model_shard_count(m), 3);
    CHECK(safeload_load_all(m, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
    CHECK(tw_check(l, SAFELOAD_DTYPE_NONE));
    safeload_loaded_free(l);
    safeload_model_close(m);

    {   /* one shard file under two spellings, w/s1 and w\s1: one shard on Windows (a
           backslash separates there), a missing file elsewhere (it is part of a name) */
        char bdir[340], wdir[360], sp[400], bidx[400];
        snprintf(bdir, sizeof bdir, "%s/bs", dir);
        snprintf(wdir, sizeof wdir, "%s/w", bdir);
        CHECK(tw_mkdir(bdir) == 0 && tw_mkdir(wdir) == 0);
        snprintf(sp, sizeof sp, "%s/s1.safetensors", wdir);
        CHECK(safeload_save(sp, tw_t, 2, NULL, &e) == SAFELOAD_OK);
        snprintf(bidx, sizeof bidx, "%s/model.safetensors.index.json", bdir);
        tw_index2(bidx, "w/s1.safetensors", "w\\\\s1.safetensors");
#if defined(_WIN32)
        CHECK_MSG(safeload_model_open(&m, bidx, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK_EQ_U64(safeload_model_shard_count(m), 1);
        CHECK_EQ_U64(safeload_model_tensor_count(m), 2);
        safeload_model_close(m);
#else
        CHECK(safeload_model_open(&m, bidx, NULL, &e) == SAFELOAD_INDEX_SHARD_MISSING);
#endif
        remove(bidx);
        remove(sp);
#if defined(_WIN32)
        _rmdir(wdir);
        _rmdir(bdir);
#else
        rmdir(wdir);
        rmdir(bdir);
#endif
    }
#if !defined(_WIN32)
    {   /* outside Windows a backslash is part of a name, in the index's own path too: the
           index "we\ird.json" lies in bs2, and the folder "d\" holds model.safetensors */
        char bdir[340], sp[400], bidx[400], ddir[340];
        safeload_file *f;
        snprintf(bdir, sizeof bdir, "%s/bs2", dir);
        CHECK(tw_mkdir(bdir) == 0);
        snprintf(sp, sizeof sp, "%s/s.safetensors", bdir);
        CHECK(safeload_save(sp, tw_t, 2, NULL, &e) == SAFELOAD_OK);
        snprintf(bidx, sizeof bidx, "%s/we\\ird.json", bdir);
        tw_index2(bidx, "s.safetensors", "s.safetensors");
        CHECK_MSG(safeload_model_open(&m, bidx, NULL, &e) == SAFELOAD_OK, "%s: %s", e.file,
                  e.message);
        CHECK_EQ_U64(safeload_model_tensor_count(m), 2);
        safeload_model_close(m);
        snprintf(ddir, sizeof ddir, "%s/d\\", dir);
        CHECK(tw_mkdir(ddir) == 0);
        snprintf(sp, sizeof sp, "%s/model.safetensors", ddir);
        CHECK(safeload_save(sp, tw_t, 3, NULL, &e) == SAFELOAD_OK);
        CHECK_MSG(safeload_model_open(&m, ddir, NULL, &e) == SAFELOAD_OK, "%s: %s", e.file,
                  e.message);
        CHECK_EQ_U64(safeload_model_tensor_count(m), 3);
        safeload_model_close(m);
        CHECK(safeload_open(&f, sp, NULL, &e) == SAFELOAD_OK);
        safeload_close(f);
        remove(sp);
        rmdir(ddir);
        remove(bidx);
        snprintf(sp, sizeof sp, "%s/s.safetensors", bdir);
        remove(sp);
        rmdir(bdir);
    }
#endif
    {   /* a name of 250 bytes: the temporary name beside it would pass 255, so the short one
           is used (file systems disagree on the error a long name gives) */
        char lp[600];
        size_t at = (size_t)snprintf(lp, sizeof lp, "%s/", dir), k2;
        safeload_file *f;
        for (k2 = 0; k2 < 238; k2++) lp[at + k2] = 'n';
        snprintf(lp + at + 238, sizeof lp - at - 238, ".safetensors");
        CHECK_MSG(safeload_save(lp, tw_t, 3, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK(safeload_open(&f, lp, NULL, &e) == SAFELOAD_OK);
        CHECK_EQ_U64(safeload_tensor_count(f), 3);
        /* saving over a file this process has open: POSIX replaces it (the open file keeps
           the old bytes); Windows refuses, and says that an open file cannot be replaced */
#if defined(_WIN32)
        CHECK(safeload_save(lp, tw_t, 2, NULL, &e) == SAFELOAD_IO_ERROR);
        CHECK_MSG(strstr(e.message, "does not replace an open file") != NULL, "%s", e.message);
        safeload_close(f);
#else
        CHECK(safeload_save(lp, tw_t, 2, NULL, &e) == SAFELOAD_OK);
        CHECK_EQ_U64(safeload_tensor_count(f), 3);
        safeload_close(f);
#endif
        CHECK(safeload_open(&f, lp, NULL, &e) == SAFELOAD_OK);
#if defined(_WIN32)
        CHECK_EQ_U64(safeload_tensor_count(f), 3);      /* untouched */
#else
        CHECK_EQ_U64(safeload_tensor_count(f), 2);
#endif
        safeload_close(f);
        remove(lp);
    }
    {   /* a path of more than MAX_PATH (260) characters: folders nested past 300, a save, an
           open, a directory model and an atomic replace there. Windows itself refuses such
           paths in the plain form (wine does not), so the form the header hands to Windows is
           checked too: absolute, \\?\-prefixed, with '/' and ".." resolved. */
        char deep[700], lp2[760];
        size_t dl = (size_t)snprintf(deep, sizeof deep, "%s", dir);
        int lv;
        safeload_file *f;
        for (lv = 0; lv < 6; lv++) {
            dl += (size_t)snprintf(deep + dl, sizeof deep - dl,
                                   "/ddddddddddddddddddddddddddddddddddddddddddddddd%d", lv);
            CHECK(tw_mkdir_long(deep) == 0);
        }
        snprintf(lp2, sizeof lp2, "%s/model.safetensors", deep);
        CHECK(strlen(lp2) > 300);
        CHECK_MSG(safeload_save(lp2, tw_t, 4, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK_MSG(safeload_save(lp2, tw_t, 5, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK_MSG(safeload_open(&f, lp2, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK_EQ_U64(safeload_tensor_count(f), 5);
        safeload_close(f);
        CHECK_MSG(safeload_model_open(&m, deep, NULL, &e) == SAFELOAD_OK, "%s", e.message);
        CHECK_EQ_U64(safeload_model_tensor_count(m), 5);
        CHECK(safeload_load_all(m, SAFELOAD_DTYPE_NONE, NULL, &l, &e) == SAFELOAD_OK);
        CHECK(tw_check(l, SAFELOAD_DTYPE_NONE));
        safeload_loaded_free(l);
        safeload_model_close(m);
#if defined(_WIN32)
        {
            safeload_allocator al;
            wchar_t *w, cwd[1024];
            char rel[800];
            size_t cl, k2;
            memset(&al, 0, sizeof al);
            /* short: as given */
            w = sl__widen("a/b.safetensors", &al);
            CHECK(w && tw_wstarts(w, L"a/b.safetensors") && tw_wlen(w) == 15);
            sl__free(&al, w);
            /* long and relative, with '/' and "x/..": absolute, prefixed, resolved */
            snprintf(rel, sizeof rel, "%s/x/../model.safetensors", deep);
            w = sl__widen(rel, &al);
            cl = GetCurrentDirectoryW(1024, cwd);
            CHECK(w && cl > 0 && cl < 1024 && tw_wstarts(w, L"\\\\?\\") &&
                  tw_wstarts(w + 4, cwd) && w[4 + cl] == L'\\');
            if (w) {
                for (k2 = 0; w[k2]; k2++) CHECK(w[k2] != L'/');
                CHECK(!tw_whas(w, L"\\x\\") && !tw_whas(w, L".."));
                CHECK(tw_wlen(w) == 4 + cl + 1 + strlen(lp2));
            }
            sl__free(&al, w);
            /* a long UNC path: \\?\UNC\server\share\... */
            snprintf(rel, sizeof rel, "\\\\srv\\share\\%s", deep);
            w = sl__widen(rel, &al);
            CHECK(w && tw_wstarts(w, L"\\\\?\\UNC\\srv\\share\\build\\safeload-test-win-"));
            sl__free(&al, w);
            /* already in the \\?\ form: as given */
            snprintf(rel, sizeof rel, "\\\\?\\C:\\%s", deep + strlen(dir) + 1);
            w = sl__widen(rel, &al);
            CHECK(w && tw_wstarts(w, L"\\\\?\\C:\\ddd"));
            sl__free(&al, w);
            snprintf(rel, sizeof rel, "//?/C:/%s", deep + strlen(dir) + 1);   /* either slash */
            w = sl__widen(rel, &al);
            CHECK(w && tw_wstarts(w, L"//?/C:/ddd"));
            sl__free(&al, w);
            /* a short relative path under a deep current directory is long too */
            {
                wchar_t *wd = sl__widen(deep, &al), back[1024];
                DWORD bl = GetCurrentDirectoryW(1024, back);
                CHECK(wd && bl > 0 && bl < 1024 && SetCurrentDirectoryW(wd));
                w = sl__widen("model.safetensors", &al);
                CHECK(w && tw_wstarts(w, L"\\\\?\\") && tw_whas(w, L"ddd5\\model.safetensors"));
                sl__free(&al, w);
                CHECK(SetCurrentDirectoryW(back));
                sl__free(&al, wd);
            }
        }
#endif
        CHECK(tw_remove_long(lp2, 0) == 0);
        for (lv = 5; lv >= 0; lv--) {
            CHECK(tw_remove_long(deep, 1) == 0);
            *strrchr(deep, '/') = 0;
        }
    }
    /* an empty path names no file */
    {
        safeload_file *f;
        CHECK(safeload_open(&f, "", NULL, &e) == SAFELOAD_INVALID_ARGUMENT && f == NULL);
        CHECK(safeload_model_open(&m, "", NULL, &e) == SAFELOAD_INVALID_ARGUMENT && m == NULL);
    }

    /* errors name the file */
    CHECK(safeload_model_open(&m, "no-such-dir/x.safetensors", NULL, &e) == SAFELOAD_IO_ERROR);
    CHECK(strstr(e.file, "x.safetensors") != NULL);
    CHECK_MSG(strstr(e.message, "no such file") != NULL, "%s", e.message);
    {   /* a directory opened as a file: Windows says "access denied", the message says why */
        safeload_file *f;
        CHECK(safeload_open(&f, sdir, NULL, &e) == SAFELOAD_IO_ERROR);
        CHECK_MSG(strstr(e.message, "is a directory") != NULL, "%s", e.message);
    }
    /* a save into a missing directory says why */
    CHECK(safeload_save("no-such-dir/y.safetensors", tw_t, 1, NULL, &e) == SAFELOAD_IO_ERROR);
    CHECK_MSG(strstr(e.message, "no such file") != NULL, "%s", e.message);
#if defined(_WIN32)     /* a device is not a file (POSIX: /dev/null and FIFOs, in test_load) */
    {
        safeload_file *f;
        CHECK(safeload_open(&f, "NUL", NULL, &e) == SAFELOAD_IO_ERROR && f == NULL);
        CHECK_MSG(strstr(e.message, "a device, not a file") != NULL, "%s", e.message);
    }
#endif
#if defined(_WIN32)     /* a path that is not UTF-8 cannot become UTF-16: an I/O error, not OOM */
    CHECK(safeload_save("bad\xff.safetensors", tw_t, 1, NULL, &e) == SAFELOAD_IO_ERROR);
    CHECK_MSG(strstr(e.message, "not valid UTF-8") != NULL, "%s", e.message);
#endif
    for (i = 0; i < TW_N; i++) free(tw_data[i]);
    /* leave no files behind */
    for (i = 0; i < 3; i++) {
        char sp[400];
        snprintf(sp, sizeof sp, "%s/model-0000%u-of-00003.safetensors", sdir, (unsigned)i + 1);
        remove(sp);
    }
    remove(idx);
    remove(path);
#if defined(_WIN32)
    _rmdir(sdir);
    _rmdir(dir);
#else
    rmdir(sdir);
    rmdir(dir);
#endif
    return tu_finish("test_win");
}
