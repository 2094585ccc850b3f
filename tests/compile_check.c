/* Compiles the whole implementation; built as C99, C++ and with every switch by `make test`.
   The public functions are referenced so that nothing is dead under SAFELOAD_STATIC. */
#ifdef SYSTEM_HEADERS_FIRST /* the README's promise: on 64-bit Linux it may come last */
#  include <stdio.h>
#  include <stdlib.h>
#  include <string.h>
#  include <unistd.h>
#  include <sys/stat.h>
#  include <pthread.h>
#endif
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

int main(void) {
    safeload_file *f = 0;
    safeload_error e;
    float out[4];
    uint16_t in[4] = {0x3c00, 0x4000, 0x0000, 0x8000};
    if (safeload_open_memory(&f, "", 0, 0, &e) != SAFELOAD_HEADER_TOO_SMALL) return 1;
    if (safeload_convert(out, SAFELOAD_F32, in, SAFELOAD_F16, 4) != SAFELOAD_OK) return 1;
#ifdef SAFELOAD_NO_THREADS
    if (safeload_default_threads() != 1) return 1;      /* what every pool has in this build */
#endif
    return out[0] == 1.0f && out[1] == 2.0f ? 0 : 1;
}
