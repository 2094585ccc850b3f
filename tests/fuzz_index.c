/* libFuzzer target: any bytes as a model.safetensors.index.json. The index parser must accept
   or reject with INVALID_INDEX (or OUT_OF_MEMORY), never crash or leak, and what it accepts
   must be consistent: every weight_map entry has a name, a shard and a position inside the
   text, every metadata entry a position. It calls the parser directly (this file includes the
   implementation), so no shard files are needed. Build and run: make fuzz. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include <stdlib.h>

#define FZ_ASSERT(x) do { if (!(x)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the parser decodes in place and relies on SL__PAD zero bytes after the text */
    unsigned char *text = (unsigned char *)calloc(size + SL__PAD, 1);
    sl__index ix;
    safeload_error e;
    size_t i;
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    if (sl__index_parse(text, size, "index.json", NULL, &ix, &e) == SAFELOAD_OK) {
        FZ_ASSERT(ix.has_map);
        for (i = 0; i < ix.map_count; i++) {
            FZ_ASSERT(ix.map[i].key && ix.map[i].value && ix.map_pos[i] < size);
            FZ_ASSERT(strlen(ix.map[i].key) == ix.map[i].key_len);       /* no NUL in names */
            FZ_ASSERT(strlen(ix.map[i].value) == ix.map[i].value_len);
        }
        for (i = 0; i < ix.meta_count; i++) FZ_ASSERT(ix.meta_pos[i] < size);
        free(ix.map);
        free(ix.map_pos);
        free(ix.meta);
        free(ix.meta_pos);
    } else {
        FZ_ASSERT(e.code == SAFELOAD_INVALID_INDEX || e.code == SAFELOAD_OUT_OF_MEMORY);
        FZ_ASSERT(e.offset == SAFELOAD_NO_OFFSET || e.offset <= size);
    }
    free(text);
    return 0;
}
