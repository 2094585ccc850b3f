/* the implementation, in a file of its own (as the README's safeload_impl.c) */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
