#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *__cdecl _aligned_malloc(size_t, size_t);
void __cdecl _aligned_free(void *);
#ifdef __cplusplus
}
#endif
