/* Included instead of the implementation by a test that make test links against build/impl.o
   (tests/impl.c): the feature macros the implementation turns on and the POSIX headers it
   would have brought in, which the test uses too. First, before any system header. */
#ifndef SAFELOAD_TEST_SHARED_IMPL_H
#define SAFELOAD_TEST_SHARED_IMPL_H
#if !defined(_WIN32)
#  if defined(__linux__) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#  endif
#  if !defined(_FILE_OFFSET_BITS)
#    define _FILE_OFFSET_BITS 64
#  endif
#  include <errno.h>
#  include <fcntl.h>
#  include <unistd.h>
#  include <sys/stat.h>
#  include <sys/types.h>
#endif
#include <stdlib.h>
#include <time.h>
#endif
