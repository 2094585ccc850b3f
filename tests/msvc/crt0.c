/* Start-up code for the MSVC-mode test build (tests/msvc/include). The UCRT initialises itself
   inside ucrtbase.dll; like the MSVC CRT's own start-up, this parses the command line and the
   environment, then exits with main's status. */
#include <stdlib.h>
int main(int, char **);
int _fltused = 0x9875;   /* MSVC-compiled code that uses floating point refers to this */
int __cdecl _configure_narrow_argv(int);      /* 1 = _crt_argv_unexpanded_arguments */
int __cdecl _initialize_narrow_environment(void);
int *__cdecl __p___argc(void);
char ***__cdecl __p___argv(void);
void __cdecl mainCRTStartup(void) {
    if (_configure_narrow_argv(1) != 0 || _initialize_narrow_environment() != 0) exit(255);
    exit(main(*__p___argc(), *__p___argv()));
}

/* __chkstk (from the MSVC CRT's static part): called with the frame size in rax before a frame
   larger than a page is allocated; touches each page from the top down so the guard page moves
   one page at a time. Keeps every register. */
__asm__(".text\n.globl __chkstk\n__chkstk:\n"
        "    pushq %rcx\n    pushq %rax\n"
        "    leaq 24(%rsp), %rcx\n"            /* the caller's rsp */
        "1:  cmpq $0x1000, %rax\n    jb 2f\n"
        "    subq $0x1000, %rcx\n    orq $0, (%rcx)\n    subq $0x1000, %rax\n    jmp 1b\n"
        "2:  subq %rax, %rcx\n    orq $0, (%rcx)\n"
        "    popq %rax\n    popq %rcx\n    ret\n");
