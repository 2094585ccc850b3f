/* pagecache.h: how much of a file is in the page cache, and dropping a file from it, for the
   io AUTO checks (test_load) and figures (bench_load). POSIX. mincore reports the page cache
   only for files the caller owns or could write: these are the tests' own files. */
#ifndef SAFELOAD_PAGECACHE_H
#define SAFELOAD_PAGECACHE_H
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* fd's pages [a0, a0 + pages * pg) (a0 page-aligned) mapped shared, read-only, into *m, and
   which of them are in the page cache into vec (a byte a page, bit 0); 0 when both worked.
   *m, when not NULL, is the caller's to unmap. */
static int pc_incore(int fd, uint64_t a0, uint64_t pages, uint64_t pg, void **m,
                     unsigned char *vec) {
    *m = mmap(NULL, (size_t)(pages * pg), PROT_READ, MAP_SHARED, fd, (off_t)a0);
    if (*m == MAP_FAILED) { *m = NULL; return -1; }
    return mincore(*m, (size_t)(pages * pg), vec);
}

/* the fraction of [off, off + len) in the page cache (len 0 or past the end: to the end of
   the file), or -1 when it cannot be told */
static double pc_resident(const char *path, uint64_t off, uint64_t len) {
    long pgl = sysconf(_SC_PAGESIZE);
    uint64_t pg = pgl > 0 ? (uint64_t)pgl : 4096, a0 = off - off % pg, pages, k, in = 0;
    struct stat sb;
    unsigned char *vec;
    void *m = NULL;
    double r = -1;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size <= off) { close(fd); return -1; }
    if (!len || len > (uint64_t)sb.st_size - off) len = (uint64_t)sb.st_size - off;
    pages = (off + len - a0 + pg - 1) / pg;
    vec = (unsigned char *)calloc((size_t)pages, 1);
    if (vec && pc_incore(fd, a0, pages, pg, &m, vec) == 0) {
        for (k = 0; k < pages; k++) in += vec[k] & 1;
        r = (double)in / (double)pages;
    }
    if (m) munmap(m, (size_t)(pages * pg));
    free(vec);
    close(fd);
    return r;
}

/* write the file's dirty pages back, then drop it from the page cache */
static void pc_drop(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fsync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}
#endif
