/* libFuzzer target: any bytes as a safetensors file. A file the parser accepts must satisfy
   every invariant the loader relies on, and loading it (with and without a cast) must
   reproduce its bytes. Build: make fuzz. */
#define SAFELOAD_IMPLEMENTATION
#include "safeload.h"
#include <stdlib.h>

#define FZ_ASSERT(x) do { if (!(x)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Offset of the first byte of p[0, n) that is not part of well-formed UTF-8 (Unicode table
   3-7), or n: written apart from the header's own check, as an oracle for it. */
static size_t fz_utf8_bad_at(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i], k, lo = 0x80, hi = 0xBF, j;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) k = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return i;
        for (j = 1; j <= k; j++) {
            if (i + j >= n) return i;
            if (p[i + j] < (j == 1 ? lo : 0x80) || p[i + j] > (j == 1 ? hi : 0xBF)) return i;
        }
        i += k + 1;
    }
    return n;
}

/* The same bytes parsed in parts (make fuzz builds this with a small
   SAFELOAD_PARSE_SPLIT_MIN, so most inputs are cut) must give what one thread gives: the
   same error, offset, tensor and message, or the same tensors. */
static void fz_split_same(const uint8_t *data, size_t size, safeload_result r1,
                          const safeload_error *e1, const safeload_file *f1) {
    safeload_file *f2;
    safeload_error e2;
    safeload_open_desc od;
    size_t i;
    memset(&od, 0, sizeof od);
    od.hash_seed = 0x1234;
    od.threads = 3;
    FZ_ASSERT(safeload_open_memory(&f2, data, size, &od, &e2) == r1);
    if (r1 != SAFELOAD_OK) {
        FZ_ASSERT(e2.code == e1->code && e2.offset == e1->offset);
        FZ_ASSERT(strcmp(e2.message, e1->message) == 0 && strcmp(e2.tensor, e1->tensor) == 0);
        return;
    }
    FZ_ASSERT(safeload_tensor_count(f2) == safeload_tensor_count(f1));
    FZ_ASSERT(safeload_metadata_count(f2) == safeload_metadata_count(f1));
    for (i = 0; i < safeload_tensor_count(f1); i++) {
        const safeload_tensor *a = safeload_tensor_at(f1, i), *b = safeload_tensor_at(f2, i);
        FZ_ASSERT(a->name_len == b->name_len && memcmp(a->name, b->name, a->name_len) == 0);
        FZ_ASSERT(a->dtype == b->dtype && a->rank == b->rank && a->begin == b->begin &&
                  a->end == b->end && a->header_offset == b->header_offset);
        FZ_ASSERT(!a->rank || memcmp(a->shape, b->shape, a->rank * sizeof(uint64_t)) == 0);
    }
    for (i = 0; i < safeload_metadata_count(f1); i++)
        FZ_ASSERT(strcmp(safeload_metadata_at(f1, i)->key, safeload_metadata_at(f2, i)->key) == 0);
    safeload_close(f2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    safeload_file *f;
    safeload_error e;
    safeload_open_desc od;
    safeload_result r;
    size_t i, n;
    uint64_t end = 0;
    memset(&od, 0, sizeof od);
    od.hash_seed = 0x1234;
    od.threads = 1;
    r = safeload_open_memory(&f, data, size, &od, &e);
    fz_split_same(data, size, r, &e, f);
    if (r != SAFELOAD_OK) {
        FZ_ASSERT(e.code != SAFELOAD_OK && safeload_result_id(e.code)[0] != 'U');
        /* a file that starts like another format (pickle, ZIP, GGUF, ...) is named as such */
        if (size >= 8 && e.code != SAFELOAD_NOT_SAFETENSORS) {   /* past the length checks, UTF-8 comes first */
            uint64_t hn = 0;
            for (i = 0; i < 8; i++) hn |= (uint64_t)data[i] << (8 * i);
            if (hn <= 100000000u && hn <= size - 8) {
                size_t bad = fz_utf8_bad_at(data + 8, (size_t)hn);
                FZ_ASSERT((e.code == SAFELOAD_INVALID_UTF8) == (bad < hn));
                FZ_ASSERT(bad == hn || e.offset == 8 + (uint64_t)bad);
            }
        }
        return 0;
    }
    n = safeload_tensor_count(f);
    FZ_ASSERT(safeload_data_offset(f) + safeload_data_size(f) == size);
    for (i = 0; i < n; i++) {
        const safeload_tensor *t = safeload_tensor_at(f, i);
        FZ_ASSERT(t->index == i && t->begin == end && t->end >= t->begin);
        FZ_ASSERT(t->file_offset == safeload_data_offset(f) + t->begin);
        FZ_ASSERT(t->nbytes * 8 == t->numel * safeload_dtype_bits(t->dtype));
        FZ_ASSERT(safeload_find_n(f, t->name, t->name_len) == t);
        FZ_ASSERT(strlen(t->name) == t->name_len);
        end = t->end;
    }
    FZ_ASSERT(end == safeload_data_size(f));
    for (i = 0; i < safeload_metadata_count(f); i++) {
        const safeload_kv *kv = safeload_metadata_at(f, i);
        FZ_ASSERT(safeload_metadata_find(f, kv->key) != NULL || strlen(kv->key) != kv->key_len);
    }
    if (size < (1u << 20)) {
        safeload_model *m;
        safeload_loaded *l;
        safeload_load_desc d;
        memset(&d, 0, sizeof d);
        d.threads = 1;
        d.chunk_size = 4096;
        FZ_ASSERT(safeload_model_from_files(&m, &f, 1, NULL, &e) == SAFELOAD_OK);
        FZ_ASSERT(safeload_load_all(m, SAFELOAD_DTYPE_NONE, &d, &l, &e) == SAFELOAD_OK);
        for (i = 0; i < l->count; i++) {
            const safeload_tensor *t = l->tensors[i].tensor;
            FZ_ASSERT(l->tensors[i].nbytes == t->nbytes);
            FZ_ASSERT(t->nbytes == 0 || memcmp(l->tensors[i].data, data + t->file_offset, t->nbytes) == 0);
        }
        safeload_loaded_free(l);
        FZ_ASSERT(safeload_load_all(m, SAFELOAD_F32, &d, &l, &e) == SAFELOAD_OK);
        safeload_loaded_free(l);
        safeload_model_close(m);
        return 0;
    }
    safeload_close(f);
    return 0;
}
