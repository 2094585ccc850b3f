/* Compiles the whole implementation; built as C99, C++ and with every switch by `make test`.
   The public functions are referenced so that nothing is dead under SAFELOAD_STATIC. */
#ifdef SYSTEM_HEADERS_FIRST /* docs/loading.md's promise: on 64-bit Linux it may come last */
#  include <stdio.h>
#  include <stdlib.h>
#  include <string.h>
#  include <unistd.h>
#  include <sys/stat.h>
#  include <pthread.h>
#endif
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"

/* one U8 tensor "a" = "xy" */
static const char img[] = "\x35\0\0\0\0\0\0\0"
                          "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}xy";

int main(void) {
    safeload_file *f = 0;
    safeload_model *m = 0;
    safeload_job *job = 0;
    safeload_arena *arena = 0;
    safeload_request rq;
    safeload_error e;
    float out[4];
    uint16_t in[4] = {0x3c00, 0x4000, 0x0000, 0x8000};
    if (safeload_open_memory(&f, "", 0, 0, &e) != SAFELOAD_HEADER_TOO_SMALL) return 1;
    if (safeload_convert(out, SAFELOAD_F32, in, SAFELOAD_F16, 4) != SAFELOAD_OK) return 1;
#ifdef SAFELOAD_NO_THREADS
    if (safeload_default_threads() != 1) return 1;      /* what every pool has in this build */
#endif
    /* an async load: a thread of its own, or (SAFELOAD_NO_THREADS) done inside the call */
    memset(&rq, 0, sizeof rq);
    rq.name = "a";
    if (safeload_open_memory(&f, img, sizeof img - 1, 0, &e) != SAFELOAD_OK) return 1;
    if (safeload_model_from_files(&m, &f, 1, 0, &e) != SAFELOAD_OK) return 1;
    if (safeload_load_async(&job, m, &rq, 1, 0, &arena, &e) != SAFELOAD_OK) return 1;
#ifdef SAFELOAD_NO_THREADS
    if (!safeload_job_done(job)) return 1;
#endif
    if (safeload_job_wait(job) != SAFELOAD_OK || rq.nbytes != 2 || memcmp(rq.data, "xy", 2) != 0)
        return 1;
    safeload_arena_free(arena);
    safeload_model_close(m);
    return out[0] == 1.0f && out[1] == 2.0f ? 0 : 1;
}
