#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *__cdecl memcpy(void *, const void *, size_t);
void *__cdecl memmove(void *, const void *, size_t);
void *__cdecl memset(void *, int, size_t);
int __cdecl memcmp(const void *, const void *, size_t);
void *__cdecl memchr(const void *, int, size_t);
size_t __cdecl strlen(const char *);
int __cdecl strcmp(const char *, const char *);
int __cdecl strncmp(const char *, const char *, size_t);
char *__cdecl strchr(const char *, int);
char *__cdecl strrchr(const char *, int);
char *__cdecl strstr(const char *, const char *);
#ifdef __cplusplus
}
#endif
