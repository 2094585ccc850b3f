/* fail_io.so: an LD_PRELOAD shim (Linux, glibc) that makes the tool's I/O fail on cue, for the
   CLI tests of errors that a root-run test cannot cause with permissions or a real disk.
     SL_FAIL_READ_AT=N   pread/preadv that would touch byte N or later fail with EIO
     SL_FAIL_OPEN=NAME   open of a path whose last component is NAME fails with EACCES, and
                         so does stat where SL_FAIL_STAT is set too (a directory on the way
                         that denies access, as a non-root user would meet it)
     SL_FAIL_THREADS=N   pthread_create fails with EAGAIN after N threads (a thread limit)
     SL_FAIL_WRITE_AFTER=N  write to a file (fd > 2) fails with ENOSPC once N bytes went to
                         files (a full disk)
     SL_FAIL_RENAME=NAME rename to a path whose last component is NAME fails with EIO
   Built by `make test-cli` as build/fail_io.so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static void *next(const char *sym) { return dlsym(RTLD_NEXT, sym); }

static int read_fails(off_t at, size_t n) {
    const char *v = getenv("SL_FAIL_READ_AT");
    return v && at + (off_t)n > (off_t)strtoll(v, NULL, 10);
}
static int open_fails(const char *path) {
    const char *v = getenv("SL_FAIL_OPEN"), *base = strrchr(path, '/');
    return v && strcmp(base ? base + 1 : path, v) == 0;
}

#define SHIM_PREAD(name)                                                                   \
    ssize_t name(int fd, void *b, size_t n, off_t at) {                                    \
        ssize_t (*real)(int, void *, size_t, off_t);                                       \
        if (read_fails(at, n)) { errno = EIO; return -1; }                                 \
        *(void **)&real = next(#name);                                                     \
        return real(fd, b, n, at);                                                         \
    }
#define SHIM_PREADV(name)                                                                  \
    ssize_t name(int fd, const struct iovec *v, int k, off_t at) {                         \
        ssize_t (*real)(int, const struct iovec *, int, off_t);                            \
        size_t n = 0;                                                                      \
        int i;                                                                             \
        for (i = 0; i < k; i++) n += v[i].iov_len;                                         \
        if (read_fails(at, n)) { errno = EIO; return -1; }                                 \
        *(void **)&real = next(#name);                                                     \
        return real(fd, v, k, at);                                                         \
    }
#define SHIM_OPEN(name)                                                                    \
    int name(const char *path, int flags, ...) {                                           \
        int (*real)(const char *, int, ...);                                               \
        mode_t mode = 0;                                                                   \
        va_list ap;                                                                        \
        va_start(ap, flags);                                                               \
        if (flags & O_CREAT) mode = (mode_t)va_arg(ap, int);                               \
        va_end(ap);                                                                        \
        if (open_fails(path)) { errno = EACCES; return -1; }                               \
        *(void **)&real = next(#name);                                                     \
        return real(path, flags, mode);                                                    \
    }

#define SHIM_STAT(name, type)                                                              \
    int name(const char *path, type *st) {                                                 \
        int (*real)(const char *, type *);                                                 \
        if (getenv("SL_FAIL_STAT") && open_fails(path)) { errno = EACCES; return -1; }     \
        *(void **)&real = next(#name);                                                     \
        return real(path, st);                                                             \
    }

SHIM_PREAD(pread)
SHIM_PREAD(pread64)
SHIM_PREADV(preadv)
SHIM_PREADV(preadv64)
SHIM_OPEN(open)
SHIM_OPEN(open64)
SHIM_STAT(stat, struct stat)
#if defined(__GLIBC__)
SHIM_STAT(stat64, struct stat64)
#endif

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    static int made;
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    const char *v = getenv("SL_FAIL_THREADS");
    if (v && __atomic_fetch_add(&made, 1, __ATOMIC_RELAXED) >= atoi(v)) return EAGAIN;
    *(void **)&real = next("pthread_create");
    return real(t, attr, fn, arg);
}

ssize_t write(int fd, const void *b, size_t n) {
    static unsigned long long sent;
    ssize_t (*real)(int, const void *, size_t);
    const char *v = getenv("SL_FAIL_WRITE_AFTER");
    if (v && fd > 2) {
        unsigned long long cap = strtoull(v, NULL, 10);
        if (sent >= cap) { errno = ENOSPC; return -1; }
        if (n > cap - sent) n = (size_t)(cap - sent);      /* a short write, then the error */
        sent += n;
    }
    *(void **)&real = next("write");
    return real(fd, b, n);
}

int rename(const char *from, const char *to) {
    int (*real)(const char *, const char *);
    const char *v = getenv("SL_FAIL_RENAME"), *base = strrchr(to, '/');
    if (v && strcmp(base ? base + 1 : to, v) == 0) { errno = EIO; return -1; }
    *(void **)&real = next("rename");
    return real(from, to);
}
