#pragma once
#ifdef __cplusplus
extern "C" {
#endif
double __cdecl frexp(double, int *);
double __cdecl ldexp(double, int);
double __cdecl fabs(double);
double __cdecl fmod(double, double);
double __cdecl floor(double);
double __cdecl sqrt(double);
#define HUGE_VAL (__builtin_huge_val())
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#ifdef __cplusplus
}
#endif
