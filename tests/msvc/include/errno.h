#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int *__cdecl _errno(void);
#define errno (*_errno())
#define EPERM 1
#define ENOENT 2
#define EACCES 13
#define EINVAL 22
#ifdef __cplusplus
}
#endif
