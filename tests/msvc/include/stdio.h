#pragma once
/* UCRT: the printf family are inline wrappers over __stdio_common_* (as in the SDK). */
#include <stddef.h>
#include <stdarg.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct _iobuf { void *_Placeholder; } FILE;
FILE *__cdecl __acrt_iob_func(unsigned);
#define stdin (__acrt_iob_func(0))
#define stdout (__acrt_iob_func(1))
#define stderr (__acrt_iob_func(2))
#define EOF (-1)
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
int __cdecl __stdio_common_vfprintf(unsigned __int64, FILE *, const char *, void *, va_list);
int __cdecl __stdio_common_vsprintf(unsigned __int64, char *, size_t, const char *, void *,
                                    va_list);
#define SL_UCRT_LEGACY_WIDE_SPECIFIERS (1ULL << 2)   /* _CRT_INTERNAL_PRINTF_LEGACY_... */
#define SL_UCRT_STANDARD_SNPRINTF (1ULL << 1)        /* _CRT_INTERNAL_PRINTF_STANDARD_SNPRINTF_BEHAVIOR */
static __inline int vfprintf(FILE *f, const char *fmt, va_list ap) {
    return __stdio_common_vfprintf(SL_UCRT_LEGACY_WIDE_SPECIFIERS, f, fmt, NULL, ap);
}
static __inline int vsnprintf(char *b, size_t n, const char *fmt, va_list ap) {
    int r = __stdio_common_vsprintf(SL_UCRT_LEGACY_WIDE_SPECIFIERS | SL_UCRT_STANDARD_SNPRINTF,
                                    b, n, fmt, NULL, ap);
    return r < 0 ? -1 : r;
}
static __inline int fprintf(FILE *f, const char *fmt, ...) {
    int r; va_list ap; va_start(ap, fmt); r = vfprintf(f, fmt, ap); va_end(ap); return r;
}
static __inline int printf(const char *fmt, ...) {
    int r; va_list ap; va_start(ap, fmt); r = vfprintf(stdout, fmt, ap); va_end(ap); return r;
}
static __inline int snprintf(char *b, size_t n, const char *fmt, ...) {
    int r; va_list ap; va_start(ap, fmt); r = vsnprintf(b, n, fmt, ap); va_end(ap); return r;
}
int __cdecl fputc(int, FILE *);
int __cdecl putchar(int);
int __cdecl puts(const char *);
int __cdecl fputs(const char *, FILE *);
int __cdecl fflush(FILE *);
int __cdecl ferror(FILE *);
FILE *__cdecl fopen(const char *, const char *);
int __cdecl fclose(FILE *);
size_t __cdecl fread(void *, size_t, size_t, FILE *);
size_t __cdecl fwrite(const void *, size_t, size_t, FILE *);
int __cdecl fseek(FILE *, long, int);
long __cdecl ftell(FILE *);
int __cdecl remove(const char *);
int __cdecl setvbuf(FILE *, char *, int, size_t);
#define _IOFBF 0x0000
#define _IOLBF 0x0040
#define _IONBF 0x0004
#ifdef __cplusplus
}
#endif
