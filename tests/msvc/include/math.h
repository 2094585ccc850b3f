#pragma once
#ifdef __cplusplus
extern "C" {
#endif
double __cdecl frexp(double, int *);
double __cdecl ldexp(double, int);
double __cdecl fabs(double);
double __cdecl fmod(double, double);
double __cdecl floor(double);
double __cdecl log10(double);
double __cdecl sqrt(double);
#define HUGE_VAL (__builtin_huge_val())
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
/* the UCRT's is a macro over _dsign/_fdsign/_ldsign; the builtin computes the same */
#define signbit(x) __builtin_signbit(x)
#ifdef __cplusplus
}
#endif
