#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int __cdecl _mkdir(const char *);
int __cdecl _rmdir(const char *);
#ifdef __cplusplus
}
#endif
