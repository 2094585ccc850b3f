/* The implementation alone, compiled once per configuration (build/impl.o, build/san/impl.o,
   build/gsan/impl.o, build/msan/impl.o) for the tests that link it instead of defining it themselves. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
