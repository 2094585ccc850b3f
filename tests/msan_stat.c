/* Linked into the MemorySanitizer builds (make test-msan) with -Wl,--wrap for each function.
   glibc 2.33 made stat, fstat and lstat real functions (fstat64@GLIBC_2.33 ...), and clang
   14's MSan runtime does not intercept them, so every struct stat they fill reads as
   uninitialised. Each wrapper marks the struct initialised after a successful call. */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sanitizer/msan_interface.h>

#define SHIM(name, arg)                                                                  \
    int __real_##name(arg, struct stat64 *);                                            \
    int __wrap_##name(arg a, struct stat64 *st);                                        \
    int __wrap_##name(arg a, struct stat64 *st) {                                       \
        int r = __real_##name(a, st);                                                   \
        if (r == 0) __msan_unpoison(st, sizeof *st);                                    \
        return r;                                                                       \
    }
SHIM(fstat64, int)
SHIM(stat64, const char *)
SHIM(lstat64, const char *)
