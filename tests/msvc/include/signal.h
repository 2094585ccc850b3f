#pragma once
#ifdef __cplusplus
extern "C" {
#endif
typedef int sig_atomic_t;
typedef void (__cdecl *_crt_signal_t)(int);
#define SIGINT 2
#define SIGTERM 15
#define SIG_DFL ((_crt_signal_t)0)
#define SIG_IGN ((_crt_signal_t)1)
_crt_signal_t __cdecl signal(int, _crt_signal_t);
int __cdecl raise(int);
#ifdef __cplusplus
}
#endif
