#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int *__cdecl _errno(void);
#define errno (*_errno())
#define EINVAL 22
#ifdef __cplusplus
}
#endif
