#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *__cdecl malloc(size_t);
void *__cdecl calloc(size_t, size_t);
void *__cdecl realloc(void *, size_t);
void __cdecl free(void *);
int __cdecl atoi(const char *);
long __cdecl strtol(const char *, char **, int);
char *__cdecl getenv(const char *);
int __cdecl _putenv_s(const char *, const char *);
__declspec(noreturn) void __cdecl exit(int);
__declspec(noreturn) void __cdecl abort(void);
void __cdecl qsort(void *, size_t, size_t, int (__cdecl *)(const void *, const void *));
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#ifdef __cplusplus
}
#endif
