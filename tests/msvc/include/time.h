#pragma once
#ifdef __cplusplus
extern "C" {
#endif
typedef __int64 time_t;
typedef long clock_t;
time_t __cdecl _time64(time_t *);
static __inline time_t __cdecl time(time_t *t) { return _time64(t); }
clock_t __cdecl clock(void);
#define CLOCKS_PER_SEC 1000
#ifdef __cplusplus
}
#endif
