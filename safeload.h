/* safeload.h - v0.1.0 - strict, fast safetensors loading in one C header.

   Do this:
       #define SAFELOAD_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation. Best
   give it a file of its own (it turns on _GNU_SOURCE and _FILE_OFFSET_BITS=64 for the rest
   of that translation unit):

       in safeload_impl.c, on its own:
       #define SAFELOAD_IMPLEMENTATION
       #include "safeload.h"

   What it does
       - parses a safetensors header with exactly the reference implementation's rules (and a
         few stricter ones): a 100,000-tensor header in about 14 ms on one core;
       - O(1) tensor lookup by name, metadata lookup, missing/unexpected key reports;
       - loads tensors with a worker pool, coalescing small tensors and splitting big ones,
         casting between F32/F16/BF16 (and FP8 upcasts, F64 <-> F32) while reading, with
         SIMD kernels that give bit-identical results on every path; pread, mmap or O_DIRECT
         I/O, or per file O_DIRECT where the page cache does not hold the bytes (AUTO);
       - sharded checkpoints (model.safetensors.index.json);
       - device upload (CUDA, Ascend, anything) through hooks you supply;
       - writes files byte-identical to the reference writer.

   Compile-time options (define before including the implementation)
       SAFELOAD_STATIC            make every function static (private to one translation unit)
       SAFELOAD_MALLOC(sz)        \
       SAFELOAD_REALLOC(p,sz)      > define all three or none (default: libc)
       SAFELOAD_FREE(p)           /     (they take every allocation, load arenas included)
       SAFELOAD_ASSERT(x)         internal sanity checks (default: assert; never on file data)
       SAFELOAD_NO_THREADS        no worker pool: every load runs on the calling thread
       SAFELOAD_NO_SIMD           scalar cast kernels only
       SAFELOAD_NO_WEAK_HOOKS     do not declare the named device hooks as weak references

   Quick start
       safeload_model *m;  safeload_loaded *w;  safeload_error e;
       safeload_model_open(&m, "model_dir", NULL, &e);        file, index .json or directory
       safeload_load_all(m, SAFELOAD_F32, NULL, &w, &e);      every tensor, cast while reading
       ... w->tensors[i].name / .data / .nbytes ...
       safeload_loaded_free(w);  safeload_model_close(m);
   Finer control: safeload_open / safeload_find / safeload_read / safeload_view for one file;
   safeload_load with requests (your destinations, casts, row slices, device memory), or
   safeload_load_async to run it on a thread of its own; safeload_check_keys;
   safeload_convert; safeload_save.

   Errors
       Every fallible call returns a safeload_result (SAFELOAD_OK == 0) and, when given a
       safeload_error*, fills it with a stable id (safeload_result_id), the byte offset in the
       file where the problem is, the file, the tensor name and a short message. The library
       never prints, never aborts on bad input, and frees everything it allocated on failure;
       after a failure every out-pointer the call was given is NULL.

   Threads
       Everything a call needs travels in its arguments; the one static is a write-once cache
       of the CPU's features. Files and models may be read from several threads at once;
       a pool runs one load at a time (others wait their turn).

   Layout of the implementation, in the order data flows
       0 configuration, 1 platform (memory, errors, files, directories, threads, CPU
       features), 2 format (byte sources, UTF-8, the JSON header parser, validation,
       index.json), 3 key set (SipHash, name table, opening files, key reports), 4 cast
       kernels, 5 load engine (pool, models, planning, execution, async jobs), 6 device
       hooks, 7 writer.

   README.md: the quick start; docs/: the full manual (docs/README.md lists it).
   License: MIT or Unlicense, at the end of this file.
*/
/* The implementation needs POSIX/GNU declarations (pread, O_DIRECT, madvise) that strict
   -std=c99 hides; they must be requested before the first system header. Include safeload.h
   first in the implementation file, or build that file with -D_GNU_SOURCE. */
#if defined(SAFELOAD_IMPLEMENTATION) && !defined(SAFELOAD_IMPLEMENTATION_INCLUDED)
#  if defined(__linux__) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#  endif
#  if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#    define _DARWIN_C_SOURCE
#  endif
#  if !defined(_WIN32) && !defined(_FILE_OFFSET_BITS)
#    define _FILE_OFFSET_BITS 64
#  endif
#endif

#ifndef SAFELOAD_H_INCLUDED
#define SAFELOAD_H_INCLUDED

#define SAFELOAD_VERSION_MAJOR 0
#define SAFELOAD_VERSION_MINOR 1
#define SAFELOAD_VERSION_PATCH 0
#define SAFELOAD_VERSION_STRING "0.1.0"

#include <stddef.h>
#include <stdint.h>

#ifndef SAFELOAD_API
#  ifdef SAFELOAD_STATIC
#    define SAFELOAD_API static
#  else
#    define SAFELOAD_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
   Data types. The enumerators are in the reference's order (its writer sorts by it) and each
   NAME is exactly the dtype string used in files. 0 means "none" / "as stored".
   ------------------------------------------------------------------------------------------ */
typedef enum safeload_dtype {
    SAFELOAD_DTYPE_NONE = 0,
    SAFELOAD_BOOL, SAFELOAD_F4, SAFELOAD_F6_E2M3, SAFELOAD_F6_E3M2, SAFELOAD_U8, SAFELOAD_I8,
    SAFELOAD_F8_E5M2, SAFELOAD_F8_E4M3, SAFELOAD_F8_E8M0, SAFELOAD_F8_E4M3FNUZ,
    SAFELOAD_F8_E5M2FNUZ, SAFELOAD_I16, SAFELOAD_U16, SAFELOAD_F16, SAFELOAD_BF16, SAFELOAD_I32,
    SAFELOAD_U32, SAFELOAD_F32, SAFELOAD_C64, SAFELOAD_F64, SAFELOAD_I64, SAFELOAD_U64,
    SAFELOAD_DTYPE_COUNT
} safeload_dtype;

/* "F32" for SAFELOAD_F32; NULL for SAFELOAD_DTYPE_NONE, SAFELOAD_DTYPE_COUNT and values
   outside the enum. */
SAFELOAD_API const char *safeload_dtype_name(safeload_dtype dtype);
/* Exact, case-sensitive match of the len bytes at name; SAFELOAD_DTYPE_NONE when unknown. */
SAFELOAD_API safeload_dtype safeload_dtype_from_name(const char *name, size_t len);
/* Bits per element (4, 6, 8, 16, 32 or 64); 0 for values outside the enum. */
SAFELOAD_API unsigned safeload_dtype_bits(safeload_dtype dtype);
/* Bytes per element for byte-sized dtypes; 0 for F4/F6 and values outside the enum. */
SAFELOAD_API size_t safeload_dtype_size(safeload_dtype dtype);

/* ---------------------------------------------------------------------------------------------
   Results. One table gives the enumerators (SAFELOAD_<ID>), the stable ids and the messages.
   ------------------------------------------------------------------------------------------ */
#define SAFELOAD_RESULT_TABLE(X) \
    X(OK,                     "success") \
    X(HEADER_TOO_SMALL,       "file is shorter than the 8-byte header length") \
    X(HEADER_TOO_LARGE,       "header is larger than 100,000,000 bytes") \
    X(INVALID_HEADER_LENGTH,  "header length runs past the end of the file") \
    X(INVALID_UTF8,           "header is not valid UTF-8") \
    X(INVALID_JSON,           "header is not a valid safetensors JSON object") \
    X(INVALID_OFFSET,         "tensor data_offsets do not tile the data section") \
    X(OVERFLOW,               "a size overflows 64 bits or this platform's address space") \
    X(MISALIGNED_SUBBYTE,     "sub-byte tensor does not end on a byte boundary") \
    X(SIZE_MISMATCH,          "tensor byte range does not match its shape and dtype") \
    X(INCOMPLETE_BUFFER,      "data section does not end exactly at the end of the file") \
    X(DUPLICATE_KEY,          "duplicate tensor name or metadata key") \
    X(INVALID_NAME,           "tensor name is not allowed (NUL, not UTF-8, __metadata__)") \
    X(INVALID_ARGUMENT,       "invalid argument") \
    X(OUT_OF_MEMORY,          "memory allocation failed") \
    X(IO_ERROR,               "I/O error") \
    X(UNEXPECTED_EOF,         "file ended before the requested bytes") \
    X(NOT_FOUND,              "tensor not found") \
    X(UNSUPPORTED_CONVERSION, "conversion between these dtypes is not supported") \
    X(INVALID_SLICE,          "slice is out of range or not representable") \
    X(BUFFER_TOO_SMALL,       "destination buffer is too small") \
    X(CANCELLED,              "cancelled by the progress callback") \
    X(THREAD_ERROR,           "could not start a worker thread") \
    X(UNSUPPORTED,            "not supported by this build or platform") \
    X(INVALID_INDEX,          "model.safetensors.index.json is malformed") \
    X(INDEX_SHARD_MISSING,    "a shard listed in the index cannot be opened") \
    X(INDEX_WRONG_SHARD,      "tensor is not in the shard the index names") \
    X(INDEX_DUPLICATE_TENSOR, "tensor is present in more than one shard") \
    X(INDEX_MISSING_TENSOR,   "tensor listed in the index is in no shard") \
    X(INDEX_UNLISTED_TENSOR,  "shard holds a tensor the index does not list") \
    X(HOOK_MISSING,           "a device hook is needed but none is set or linked") \
    X(HOOK_FAILED,            "a device hook reported an error") \
    X(NOT_SAFETENSORS,        "not a safetensors file (an HTML page, a Git LFS pointer, " \
                              "PyTorch, GGUF or NumPy)")

typedef enum safeload_result {
#define SAFELOAD__RESULT_ENUM(id, msg) SAFELOAD_##id,
    SAFELOAD_RESULT_TABLE(SAFELOAD__RESULT_ENUM)
#undef SAFELOAD__RESULT_ENUM
    SAFELOAD_RESULT_COUNT
} safeload_result;

#define SAFELOAD_NO_OFFSET UINT64_MAX

/* Filled in by every call that takes one (may be NULL). Fixed-size so that reporting an error
   can never fail: long strings are cut ("..." at a UTF-8 boundary), and control characters
   (NUL, C0, DEL, C1), bidirectional controls (U+061C, U+200E/F, U+202A-E, U+2066-9) and bytes
   that are not valid UTF-8 become '?' (one per byte), so the text is safe to print as it is;
   it is for people to read, not keys to look up. A call that fails has set every out-pointer
   it was given to NULL (and sizes to 0), whatever the failure, so cleanup code can free them
   blindly. */
typedef struct safeload_error {
    safeload_result code;
    uint64_t offset;        /* byte offset in `file`, or SAFELOAD_NO_OFFSET */
    char file[512];         /* path, "<memory>" or the reader's name; "" when no file */
    char tensor[256];       /* tensor name, metadata key or hook name; "" when none */
    char message[256];      /* what went wrong, with the numbers */
} safeload_error;

SAFELOAD_API const char *safeload_result_id(safeload_result r);      /* "INVALID_JSON" */
SAFELOAD_API const char *safeload_result_message(safeload_result r); /* the table's text */

/* Bytes of rank dimensions `shape` of dtype (rank 0: a scalar, one element): ceil(elements x
   bits / 8), so F4 and F6 work too (an odd F4 count ends in half a byte, rounded up). A slice
   of rows [b, e): the shape with shape[0] = e - b; a cast's output: the destination dtype; a
   bare element count n: rank 1, shape &n. A dimension 0 gives 0 (whatever else overflows).
   OVERFLOW when the bytes do not fit 64 bits; INVALID_ARGUMENT for a dtype outside the enum
   or NONE, out NULL, or shape NULL with rank > 0. *out is 0 after a failure. */
SAFELOAD_API safeload_result safeload_nbytes(safeload_dtype dtype, const uint64_t *shape,
                                             uint32_t rank, uint64_t *out);

/* ---------------------------------------------------------------------------------------------
   Allocation. Zero = the compile-time allocator: SAFELOAD_MALLOC when defined (it then takes
   every allocation, load arenas included), else libc, with load arenas of 2 MiB or more taken
   from the OS as page-aligned (huge-page) mappings. realloc is optional. One call never calls
   yours from two threads at once (parallel shard opens take turns); calls you make from
   several threads with the same allocator do.
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_allocator {
    void *(*alloc)(void *user, size_t size);
    void *(*realloc)(void *user, void *ptr, size_t old_size, size_t new_size);
    void  (*free)(void *user, void *ptr);
    void *user;
} safeload_allocator;

/* ---------------------------------------------------------------------------------------------
   Opening one file
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_file safeload_file;

/* A caller-supplied byte source (archives, asset managers, network). read() returns the number
   of bytes read (fewer than n is fine, it is called again), 0 at end of data, < 0 on error.
   Loads may call it from several worker threads at once; use threads = 1 if it is not
   thread-safe. */
typedef struct safeload_reader {
    int64_t (*read)(void *user, uint64_t offset, void *dst, size_t n);
    void (*close)(void *user);          /* optional; called by safeload_close (a failed open
                                           does not call it: the reader is still yours) */
    uint64_t size;                      /* total bytes */
    void *user;
    const char *name;                   /* optional, used in errors */
} safeload_reader;

typedef struct safeload_open_desc {
    safeload_allocator allocator;
    uint64_t hash_seed;                 /* 0 = a per-file seed from address and time; in a
                                           model desc it seeds the model's table too */
    int threads;                        /* a header of 1 MiB and up (~10,000 tensors) is read
                                           and parsed in parts on up to this many threads (at
                                           most 8); 0 = default (safeload_default_threads), 1 =
                                           the calling thread only. A caller's reader is always
                                           read on the calling thread. */
} safeload_open_desc;

typedef struct safeload_tensor {
    const char *name;                   /* UTF-8, NUL-terminated, unescaped */
    size_t name_len;
    safeload_dtype dtype;
    uint32_t rank;                      /* 0 for a scalar */
    const uint64_t *shape;              /* rank entries (NULL when rank == 0) */
    uint64_t numel;                     /* product of shape (1 for a scalar) */
    uint64_t begin, end;                /* data_offsets, relative to the data section */
    uint64_t nbytes;                    /* end - begin */
    uint64_t file_offset;               /* absolute offset of byte 0 in the file */
    uint64_t header_offset;             /* file offset of the entry's name in the header */
    size_t index;                       /* position in data-offset order */
} safeload_tensor;

typedef struct safeload_kv {
    const char *key;   size_t key_len;   /* NUL-terminated; may contain NUL (see len) */
    const char *value; size_t value_len;
} safeload_kv;

/* path is UTF-8 (converted to UTF-16 on Windows, in the \\?\ form when 248 characters or longer,
   so MAX_PATH does not apply). */
SAFELOAD_API safeload_result safeload_open(safeload_file **out, const char *path,
                                           const safeload_open_desc *desc, safeload_error *err);
/* The buffer is not copied for data reads: it must outlive the file. */
SAFELOAD_API safeload_result safeload_open_memory(safeload_file **out, const void *data,
                                                  size_t size, const safeload_open_desc *desc,
                                                  safeload_error *err);
SAFELOAD_API safeload_result safeload_open_reader(safeload_file **out,
                                                  const safeload_reader *reader,
                                                  const safeload_open_desc *desc,
                                                  safeload_error *err);
SAFELOAD_API void safeload_close(safeload_file *file);

SAFELOAD_API const char *safeload_file_path(const safeload_file *file);
SAFELOAD_API uint64_t safeload_file_size(const safeload_file *file);
SAFELOAD_API uint64_t safeload_header_size(const safeload_file *file);  /* N */
SAFELOAD_API uint64_t safeload_data_offset(const safeload_file *file);  /* 8 + N */
SAFELOAD_API uint64_t safeload_data_size(const safeload_file *file);

/* Tensors in data-offset order (ties: header order). */
SAFELOAD_API size_t safeload_tensor_count(const safeload_file *file);
SAFELOAD_API const safeload_tensor *safeload_tensor_at(const safeload_file *file, size_t i);
/* O(1) lookup; NULL when absent. */
SAFELOAD_API const safeload_tensor *safeload_find(const safeload_file *file, const char *name);
SAFELOAD_API const safeload_tensor *safeload_find_n(const safeload_file *file, const char *name,
                                                    size_t len);

/* __metadata__: present (even empty) or not; entries in header order; lookup by key. */
SAFELOAD_API int safeload_has_metadata(const safeload_file *file);
SAFELOAD_API size_t safeload_metadata_count(const safeload_file *file);
SAFELOAD_API const safeload_kv *safeload_metadata_at(const safeload_file *file, size_t i);
SAFELOAD_API const safeload_kv *safeload_metadata_find(const safeload_file *file,
                                                       const char *key);
/* key of len bytes, which may hold NUL (a metadata key may) */
SAFELOAD_API const safeload_kv *safeload_metadata_find_n(const safeload_file *file,
                                                         const char *key, size_t len);

/* Read a whole tensor's stored bytes into dst (synchronous, no cast), each element in host
   byte order (swapped from the file's little-endian on a big-endian host, as loads do). dst
   must not overlap the tensor's bytes in a memory source (INVALID_ARGUMENT). */
SAFELOAD_API safeload_result safeload_read(const safeload_file *file,
                                           const safeload_tensor *tensor, void *dst,
                                           size_t dst_size, safeload_error *err);

/* Zero-copy view of a tensor in a read-only mapping of the file (memory sources: a pointer into
   the caller's buffer): the file's bytes, so elements are little-endian on every host.
   *alignment receives the largest power of two (up to 4096) that divides the address. The
   pointer stays valid until safeload_close. Not for reader sources. A file that has shrunk
   since it was opened so that the tensor's bytes are gone gives UNEXPECTED_EOF (touching them
   would be a SIGBUS); one cut after the call can still fault. */
SAFELOAD_API safeload_result safeload_view(safeload_file *file, const safeload_tensor *tensor,
                                           const void **data, size_t *alignment,
                                           safeload_error *err);

/* ---------------------------------------------------------------------------------------------
   Key check: which of the names a program expects are missing, and which names in the
   checkpoint it did not expect. O(expected + tensors). missing keeps the order given (a name
   listed twice is reported once); unexpected is in tensor order.
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_key_report {
    const char **missing;     size_t missing_count;    /* point into the caller's array */
    const char **unexpected;  size_t unexpected_count; /* point into the checkpoint */
    safeload_allocator allocator_;                      /* private */
} safeload_key_report;

SAFELOAD_API safeload_result safeload_check_keys(const safeload_file *file,
                                                 const char *const *expected, size_t count,
                                                 safeload_key_report *report,
                                                 safeload_error *err);
SAFELOAD_API void safeload_key_report_free(safeload_key_report *report);

/* ---------------------------------------------------------------------------------------------
   Casts. count is in elements; dst and src need no alignment and must not overlap.
   Supported: every pair among F32, F16, BF16 (same dtype = copy); F8_E4M3, F8_E5M2, F4,
   F8_E8M0, F8_E4M3FNUZ and F8_E5M2FNUZ to F32/F16/BF16; F64 <-> F32. F4 packs two elements a
   byte, the first in the low nibble: count elements read (count + 1) / 2 bytes (an odd count
   leaves the last byte's high nibble unread). F6_E2M3/F6_E3M2 have no cast (no documented
   packing order). The bits are the same on every SIMD path and under every MXCSR/FPCR setting
   (docs/casts.md).
   ------------------------------------------------------------------------------------------ */
SAFELOAD_API safeload_result safeload_convert(void *dst, safeload_dtype dst_dtype,
                                              const void *src, safeload_dtype src_dtype,
                                              size_t count);
SAFELOAD_API int safeload_can_convert(safeload_dtype dst_dtype, safeload_dtype src_dtype);

typedef enum safeload_simd {
    SAFELOAD_SIMD_AUTO = 0,     /* best available (or the SAFELOAD_SIMD environment variable) */
    SAFELOAD_SIMD_SCALAR,
    SAFELOAD_SIMD_SSE2,
    SAFELOAD_SIMD_AVX2,         /* AVX2 + F16C */
    SAFELOAD_SIMD_AVX512,       /* AVX-512 F + BW (FP8 by vpermi2b tables where VBMI is there) */
    SAFELOAD_SIMD_AVX512BF16,   /* AVX-512 + AVX512_BF16 (with the subnormal fix-up) */
    SAFELOAD_SIMD_NEON,
    SAFELOAD_SIMD_COUNT
} safeload_simd;

typedef struct safeload_convert_desc {
    safeload_simd simd;         /* force a path (testing); unavailable paths return UNSUPPORTED */
    int nt_stores;              /* 0 = by size, 1 = always, -1 = never */
} safeload_convert_desc;

SAFELOAD_API safeload_result safeload_convert_ex(void *dst, safeload_dtype dst_dtype,
                                                 const void *src, safeload_dtype src_dtype,
                                                 size_t count, const safeload_convert_desc *desc);
SAFELOAD_API int safeload_simd_available(safeload_simd simd);
SAFELOAD_API safeload_simd safeload_simd_best(void);
SAFELOAD_API const char *safeload_simd_name(safeload_simd simd);

/* ---------------------------------------------------------------------------------------------
   Worker pool
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_pool safeload_pool;

/* threads counts the calling thread: a pool of n runs n-1 helper threads. 0 or less =
   safeload_default_threads(); more than 256 = 256. SAFELOAD_NO_THREADS builds: always 1. */
SAFELOAD_API safeload_result safeload_pool_create(safeload_pool **out, int threads,
                                                  safeload_error *err);
SAFELOAD_API void safeload_pool_destroy(safeload_pool *pool);
SAFELOAD_API int safeload_pool_threads(const safeload_pool *pool);
/* SAFELOAD_NUM_THREADS if it is a number in 1..256 (anything else is ignored), else the
   online CPU count capped at 8; 1 in SAFELOAD_NO_THREADS builds. */
SAFELOAD_API int safeload_default_threads(void);

/* ---------------------------------------------------------------------------------------------
   Models: one file, or shards with model.safetensors.index.json
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_model safeload_model;

enum {
    SAFELOAD_MODEL_STRICT = 1u << 0,    /* a shard tensor the index does not list is an error */
    /* Refuse (INVALID_INDEX) a shard that resolves outside the index's directory: a symbolic
       link, or a linked folder on the way, pointing elsewhere. Linux 5.6+: openat2 with
       RESOLVE_BENEATH; elsewhere (and where openat2 is refused) realpath; either way the file
       opened is checked to be the one found beneath. Not on Windows (UNSUPPORTED). The
       default follows links (the Hugging Face cache links snapshots into ../../blobs). */
    SAFELOAD_MODEL_CONFINE = 1u << 1
};

typedef struct safeload_model_desc {
    safeload_open_desc open;
    int threads;                        /* shard headers are parsed in parallel; 0 = default */
    safeload_pool *pool;
    uint32_t flags;                     /* SAFELOAD_MODEL_*; another bit: INVALID_ARGUMENT */
} safeload_model_desc;

/* path: a .safetensors file, an index .json, or a directory holding
   model.safetensors.index.json, or else exactly one *.safetensors.index.json, or else
   model.safetensors, or else exactly one .safetensors file, or else exactly one variant index
   *.safetensors.index.V.json when every .safetensors file there has ".V." or ".V-" in its
   name (hidden files and folders do not count). */
SAFELOAD_API safeload_result safeload_model_open(safeload_model **out, const char *path,
                                                 const safeload_model_desc *desc,
                                                 safeload_error *err);
/* Wrap already opened files (taking ownership, also on failure); no index. A NULL entry is
   INVALID_ARGUMENT (the others are closed). */
SAFELOAD_API safeload_result safeload_model_from_files(safeload_model **out,
                                                       safeload_file **files, size_t count,
                                                       const safeload_model_desc *desc,
                                                       safeload_error *err);
SAFELOAD_API void safeload_model_close(safeload_model *model);
SAFELOAD_API size_t safeload_model_shard_count(const safeload_model *model);
/* 1 when the model came from an index .json (its metadata is the index's), else 0 */
SAFELOAD_API int safeload_model_has_index(const safeload_model *model);
/* the index .json the model came from, or its one file; NULL for safeload_model_from_files */
SAFELOAD_API const char *safeload_model_path(const safeload_model *model);
SAFELOAD_API safeload_file *safeload_model_shard(const safeload_model *model, size_t i);
/* All tensors: shards in file-name order (safeload_model_from_files: the order given), tensors
   in data-offset order. */
SAFELOAD_API size_t safeload_model_tensor_count(const safeload_model *model);
SAFELOAD_API const safeload_tensor *safeload_model_tensor_at(const safeload_model *model,
                                                             size_t i, size_t *shard);
SAFELOAD_API const safeload_tensor *safeload_model_find(const safeload_model *model,
                                                        const char *name, size_t *shard);
SAFELOAD_API size_t safeload_model_metadata_count(const safeload_model *model);
SAFELOAD_API const safeload_kv *safeload_model_metadata_at(const safeload_model *model,
                                                           size_t i);
/* Non-fatal findings (INDEX_UNLISTED_TENSOR without SAFELOAD_MODEL_STRICT): one per shard
   tensor the index leaves out, the first 1000 of them, then one that counts the rest
   (safeload_model_find tells which tensors are in the model). */
SAFELOAD_API size_t safeload_model_warning_count(const safeload_model *model);
SAFELOAD_API const safeload_error *safeload_model_warning(const safeload_model *model,
                                                          size_t i);
SAFELOAD_API safeload_result safeload_model_check_keys(const safeload_model *model,
                                                       const char *const *expected,
                                                       size_t count,
                                                       safeload_key_report *report,
                                                       safeload_error *err);

/* ---------------------------------------------------------------------------------------------
   Device hooks (CUDA, Ascend, anything). Every hook returns 0 on success.
   upload() starts an asynchronous copy of n bytes from a pinned staging buffer to a device
   address on the given worker's queue; wait(worker, buffer) blocks until the last copy started
   from that staging buffer has finished (safeload reuses or frees a buffer only after it);
   sync() waits for everything at the end of a load. begin()/end() bracket one load and worker
   numbers are that load's: loads running at the same time each call them, so keep per-load
   state behind `user` (one per load) or run device loads one at a time.
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_device_hooks {
    void *user;
    int  (*pinned_alloc)(void *user, size_t size, void **out);
    void (*pinned_free)(void *user, void *ptr);
    int  (*device_alloc)(void *user, size_t size, void **out);   /* "allocate for me";
                                                                    size is never 0 */
    void (*device_free)(void *user, void *ptr);   /* safeload_arena_free, or a failed load;
                                                     needed wherever device_alloc is */
    int  (*begin)(void *user, int workers, int buffers);         /* optional */
    int  (*upload)(void *user, int worker, int buffer, void *device_dst,
                   const void *pinned_src, size_t n);
    int  (*wait)(void *user, int worker, int buffer);
    int  (*sync)(void *user);
    void (*end)(void *user);        /* optional; not called when begin failed */
} safeload_device_hooks;

typedef enum safeload_device {
    SAFELOAD_DEVICE_NONE = 0,   /* as HOOKS: with no hooks set, device requests fail with
                                   HOOK_MISSING */
    SAFELOAD_DEVICE_HOOKS,      /* the hooks in the load desc */
    SAFELOAD_DEVICE_CUDA,       /* desc hooks if set, else the linked safeload_cuda_* functions */
    SAFELOAD_DEVICE_ASCEND      /* desc hooks if set, else the linked safeload_ascend_* ones */
} safeload_device;

/* The named hooks. Define them in your program and link them in: they are weak references in
   the implementation (gcc/clang, ELF and Mach-O), so the load finds them with no setup. See
   docs/device.md "Zero-config, weakly linked" for the traps (static archives, MSVC). */
int  safeload_cuda_pinned_alloc(void *user, size_t size, void **out);
void safeload_cuda_pinned_free(void *user, void *ptr);
int  safeload_cuda_device_alloc(void *user, size_t size, void **out);
void safeload_cuda_device_free(void *user, void *ptr);
int  safeload_cuda_begin(void *user, int workers, int buffers);
int  safeload_cuda_upload(void *user, int worker, int buffer, void *device_dst,
                          const void *pinned_src, size_t n);
int  safeload_cuda_wait(void *user, int worker, int buffer);
int  safeload_cuda_sync(void *user);
void safeload_cuda_end(void *user);
int  safeload_ascend_pinned_alloc(void *user, size_t size, void **out);
void safeload_ascend_pinned_free(void *user, void *ptr);
int  safeload_ascend_device_alloc(void *user, size_t size, void **out);
void safeload_ascend_device_free(void *user, void *ptr);
int  safeload_ascend_begin(void *user, int workers, int buffers);
int  safeload_ascend_upload(void *user, int worker, int buffer, void *device_dst,
                            const void *pinned_src, size_t n);
int  safeload_ascend_wait(void *user, int worker, int buffer);
int  safeload_ascend_sync(void *user);
void safeload_ascend_end(void *user);

/* ---------------------------------------------------------------------------------------------
   Loading
   ------------------------------------------------------------------------------------------ */
typedef enum safeload_io {
    SAFELOAD_IO_DEFAULT = 0,    /* = READ */
    SAFELOAD_IO_READ,           /* pread / ReadFile */
    SAFELOAD_IO_MMAP,           /* copy (and cast) from a read-only mapping */
    SAFELOAD_IO_DIRECT,         /* O_DIRECT / FILE_FLAG_NO_BUFFERING with aligned bounce buffers */
    SAFELOAD_IO_AUTO            /* per file: DIRECT where the bytes this load reads from it are
                                   mostly not in the page cache (a sample), READ where they are
                                   (Linux asks the kernel; elsewhere, and where it will not
                                   say: READ) */
} safeload_io;

/* The pages a load's arena gets (the memory safeload_load allocates for requests with no
   destination). Its first touch is most of a load's cost into fresh memory, and what each kind
   costs depends on the host: huge pages fault in 3-4x faster than 4 KiB ones on bare metal or
   with memory freed just before, but in a VM whose host takes back memory the guest left free
   (a balloon's free page reporting) they fault on the host too and run at a third of the speed
   of 4 KiB pages. See docs/performance.md. Linux only; elsewhere the OS decides. */
typedef enum safeload_pages {
    SAFELOAD_PAGES_AUTO = 0,    /* measured: the first huge and 4 KiB pages are timed, and huge
                                   pages kept while they fault in at 3/4 of the 4 KiB rate or
                                   better, checked as the load goes; else 4 KiB pages */
    SAFELOAD_PAGES_HUGE,        /* transparent huge pages requested (MADV_HUGEPAGE) */
    SAFELOAD_PAGES_NORMAL       /* 4 KiB pages (MADV_NOHUGEPAGE) */
} safeload_pages;

/* How a load kept many reads in flight on its DIRECT files (stats.aio). */
typedef enum safeload_aio {
    SAFELOAD_AIO_NONE = 0,      /* one read at a time per worker: not DIRECT, queue_depth 1,
                                   or no queue could be set up (stats.aio_error says why) */
    SAFELOAD_AIO_IO_URING,      /* Linux 5.1+ */
    SAFELOAD_AIO_OVERLAPPED     /* Windows: overlapped ReadFile */
} safeload_aio;

typedef struct safeload_request {
    const char *name;           /* tensor to load */
    void *dst;                  /* host or device address; NULL = allocate for me */
    uint64_t dst_size;          /* capacity of dst in bytes (checked) */
    safeload_dtype dtype;       /* 0 = as stored; else cast while reading */
    uint32_t slice_dim;         /* slice [slice_begin, slice_end) of this dimension; the */
    uint64_t slice_begin;       /*   result is the dense C-order sub-tensor. Both 0 = the whole */
    uint64_t slice_end;         /*   tensor, else begin < end <= shape[slice_dim] and
                                     slice_dim < rank (else INVALID_SLICE) */
    int device;                 /* 0 = host memory, 1 = device memory through the hooks;
                                   anything else is INVALID_ARGUMENT */
    /* outputs: after a failure data is NULL and nbytes 0, and tensor and shard are as given */
    void *data;                 /* where the bytes are */
    uint64_t nbytes;            /* how many bytes were written there */
    const safeload_tensor *tensor;  /* also an input: set to this checkpoint's tensor (with */
    size_t shard;                   /* name == tensor->name) to skip the name lookup */
} safeload_request;

/* Called on the calling thread after a chunk that takes `done` across a multiple of
   progress_interval (several crossings can collapse into one call; chunks are chunk_size or a
   whole small tensor, and while the caller reads a chunk it cannot report), and once at the end,
   also for an empty load. Non-zero cancels: workers stop within one chunk and the load returns
   SAFELOAD_CANCELLED. */
typedef int (*safeload_progress_fn)(void *user, uint64_t done, uint64_t total);

typedef struct safeload_load_stats {
    uint64_t bytes_read;        /* source bytes (a slice's rows only); progress counts these */
    uint64_t bytes_written;     /* to destinations, after casts */
    uint64_t reads;             /* read calls (syscalls or reader callbacks); 0 when mapped */
    uint64_t pinned_bytes;      /* pinned staging allocated through hooks */
    int threads;                /* workers that ran: at most one per task */
    safeload_io io;             /* the mode used: READ where DIRECT or MMAP could not run
                                   (docs/loading.md), or where nothing was mapped (memory and
                                   reader sources); AUTO reports DIRECT when some file went
                                   direct, else READ */
    int direct_files;           /* files read with O_DIRECT (DIRECT or AUTO; a file the load
                                   reads nothing from is not opened) */
    safeload_pages pages;       /* the arena's fresh pages: HUGE or NORMAL, what the policy
                                   asked for last (AUTO: what it settled on); AUTO (0) when the
                                   load took no fresh pages from the OS (no arena, one from an
                                   allocator or under 2 MiB, a reused one that fit, not Linux) */
    uint64_t fresh_bytes;       /* arena bytes this load took fresh from the OS or an allocator
                                   (0 when a reused arena fit) */
    uint64_t huge_bytes;        /* of those, the bytes first touched with huge pages asked for */
    uint64_t touch_huge_mbps;   /* AUTO: first-touch rates it measured, MB/s of one thread's CPU */
    uint64_t touch_normal_mbps; /*   time (each the latest: verdict or retry); 0 = not measured */
    safeload_aio aio;           /* the queue DIRECT files were read through */
    int queue_depth;            /* reads it kept in flight at most, over all workers (0: none) */
    int aio_error;              /* why no queue ran where one was wanted: the OS's error code
                                   (ENOSYS: an old kernel or qemu-user; EPERM: seccomp or the
                                   io_uring_disabled sysctl); 0 when one ran or none was wanted */
    uint64_t fixed_reads;       /* of reads, those io_uring made into registered (fixed) staging
                                   buffers, pinned once for the load instead of once per read;
                                   reads straight into destinations are never fixed (0 where
                                   the kernel refused to register, e.g. RLIMIT_MEMLOCK) */
} safeload_load_stats;

/* Shared loading: rank `rank` of `world` processes that load the same requests (same names,
   dtypes, slices and destinations kinds, in the same order) from the same checkpoint. Each rank
   reads about 1/world of the requested bytes (a contiguous stretch of the files where it can),
   casts them, and the hooks hand them to the others, so storage is read once between them.
   world <= 1 (or a zeroed struct): no sharing. Both hooks are collectives: every rank calls
   them in the same order with the same arguments (bar the buffer's address); return 0 on
   success. A failure on any rank fails the load on every rank, naming that rank. */
typedef struct safeload_share {
    int rank;                   /* 0 .. world-1 */
    int world;
    void *user;
    /* n bytes at buf on rank `root` to buf on every other rank (MPI_Bcast; ncclBroadcast on a
       device pointer); device: 1 when buf is device memory (requests with device = 1) */
    int (*broadcast)(void *user, void *buf, size_t n, int root, int device);
    /* every rank's *value replaced by the maximum over the ranks (MPI_Allreduce MPI_MAX on
       one uint64; ncclAllReduce ncclMax); host memory */
    int (*max)(void *user, uint64_t *value);
} safeload_share;
typedef struct safeload_arena safeload_arena;

typedef struct safeload_load_desc {
    int threads;                /* counts the caller; 0 = pool's, else safeload_default_threads */
    safeload_pool *pool;        /* reuse a pool; NULL = a temporary one */
    safeload_io io;
    size_t chunk_size;          /* bytes per read; 0 = 2 MiB (4 KiB to 1 GiB) */
    size_t staging_size;        /* per-worker cast buffer; 0 = 256 KiB (4 KiB to 1 GiB) */
    safeload_progress_fn progress;
    void *progress_user;
    uint64_t progress_interval; /* 0 = 64 MiB */
    safeload_allocator allocator;   /* for the arena and bookkeeping */
    safeload_device device;
    safeload_device_hooks hooks;
    size_t pinned_size;         /* bytes per pinned staging buffer; 0 = 2 MiB (to 1 GiB) */
    int pinned_count;           /* pinned buffers per worker; below 2 (0 too) = 2 */
    size_t pinned_limit;        /* total pinned bytes; 0 = 256 MiB; buffers shrink to fit, and
                                   below workers x buffers x 4 KiB it is INVALID_ARGUMENT */
    size_t upload_align;        /* every upload starts this aligned in pinned memory (Ascend's
                                   aclrtMemcpyAsync wants 64), so pinned_alloc must return
                                   memory this aligned (else HOOK_FAILED); device arena tensors
                                   start at multiples of it too; small tensors are then not
                                   batched into one buffer; 0 = no constraint; a power of two
                                   up to 1 GiB (else INVALID_ARGUMENT) */
    safeload_pages pages;       /* the arena's pages; 0 = AUTO */
    safeload_arena *reuse;      /* load into this arena (from an earlier load, or
                                   safeload_arena_create) instead of a new one: see
                                   safeload_load */
    int queue_depth;            /* DIRECT files (and AUTO's direct ones): reads in flight over
                                   all workers, each into a bounce buffer of chunk_size; 0 = 32
                                   (64 MiB of buffers at the default chunk); 1 = one read at a
                                   time per worker, no queue; negative: INVALID_ARGUMENT */
    safeload_load_stats *stats; /* optional output; zeroed first by every load, so after a
                                   failure it holds what that load did, if anything */
    safeload_share share;       /* world > 1: ranks split the reads and share the bytes */
} safeload_load_desc;

/* Loads every request or none: on failure nothing is reported loaded, allocated memory is
   released, and caller destinations hold unspecified bytes. Requests with dst == NULL need
   arena != NULL; free it with safeload_arena_free when done with the data. Caller
   destinations must not overlap one another or the bytes being read (a memory source, a
   view's mapping): INVALID_ARGUMENT. Loads may run from several threads at once, but not from
   a progress callback or hook of a load on the same pool (INVALID_ARGUMENT; in
   SAFELOAD_NO_THREADS builds nothing waits and it runs), nor from anything such a callback
   starts. Longer cycles are not detected and wait forever: a load on a second pool whose hook
   uses the first, or two threads whose callbacks each load on the other's pool. A load from a
   callback is safe with a pool no other thread shares, or with none. */
SAFELOAD_API safeload_result safeload_load(safeload_model *model, safeload_request *requests,
                                           size_t count, const safeload_load_desc *desc,
                                           safeload_arena **arena, safeload_error *err);
SAFELOAD_API safeload_result safeload_load_file(safeload_file *file,
                                                safeload_request *requests, size_t count,
                                                const safeload_load_desc *desc,
                                                safeload_arena **arena, safeload_error *err);
SAFELOAD_API void safeload_arena_free(safeload_arena *arena);
/* Reuse (model switching): a load whose desc.reuse is an arena, from an earlier load or from
   safeload_arena_create, places its requests with dst == NULL there instead of in a new one,
   and touches no fresh memory while they fit. Its earlier tensors are given up (overwritten:
   be done with them); one load at a time. Where they do not fit, the arena grows: its memory
   is released and taken anew at the size needed (stats.fresh_bytes says how much); its device
   memory likewise, through this load's hooks (reuse it with the same hooks). On success
   *arena (may be NULL here) is desc.reuse; on failure *arena is NULL and the arena is still
   the caller's, whole and reusable, its bytes unspecified (after OUT_OF_MEMORY it may hold
   no memory). The load never frees it: safeload_arena_free does.
   safeload_arena_create makes one of host_bytes up front (a pool-owned arena) with desc's
   allocator and page policy (desc may be NULL; its stats get the page figures) and first
   touches it now, on the calling thread. */
SAFELOAD_API safeload_result safeload_arena_create(safeload_arena **out, uint64_t host_bytes,
                                                   const safeload_load_desc *desc,
                                                   safeload_error *err);
/* host bytes a load into the arena can use without growing it (0 for NULL) */
SAFELOAD_API uint64_t safeload_arena_capacity(const safeload_arena *arena);

/* Everything, in model order, into one arena, optionally cast (dtype 0 = as stored; tensors
   that cannot be cast to dtype keep their own; a value outside the enum is INVALID_ARGUMENT).
   With desc.reuse the tensors are in that arena, which stays the caller's (arena is NULL). */
typedef struct safeload_loaded {
    size_t count;
    safeload_request *tensors;
    safeload_arena *arena;
    safeload_allocator allocator_;      /* private */
} safeload_loaded;

SAFELOAD_API safeload_result safeload_load_all(safeload_model *model, safeload_dtype dtype,
                                               const safeload_load_desc *desc,
                                               safeload_loaded **out, safeload_error *err);
SAFELOAD_API void safeload_loaded_free(safeload_loaded *loaded);

/* safeload_load on a thread of its own, for a UI or game loop that must not block. The load
   is safeload_load(model, requests, count, desc, arena, err) exactly; this call returns at once
   with a job (OK; *job is set before the load starts, so its callbacks may use it), or with
   INVALID_ARGUMENT (job or model NULL, half an allocator), OUT_OF_MEMORY or THREAD_ERROR and
   no job; all else the load finds comes from safeload_job_wait. Until that returns, leave
   the model, requests, desc's pool, the caller destinations and *arena, *err untouched: the
   load writes *arena, *err and desc->stats on its thread. desc->progress, if any, is called
   there too. Where no thread can be started (a process limit; SAFELOAD_NO_THREADS builds) the
   load runs inside this call, and the job is done when it returns. Every job is waited for
   exactly once: that frees it. */
typedef struct safeload_job safeload_job;
SAFELOAD_API safeload_result safeload_load_async(safeload_job **job, safeload_model *model,
                                                 safeload_request *requests, size_t count,
                                                 const safeload_load_desc *desc,
                                                 safeload_arena **arena, safeload_error *err);
/* 1 once the load has ended (*arena and *err are then written; safeload_job_wait returns at
   once), else 0 */
SAFELOAD_API int safeload_job_done(safeload_job *job);
/* bytes loaded so far and in all, as of the load's latest progress report (one each
   desc->progress_interval, default 64 MiB, and one at the end); 0 and 0 before the first */
SAFELOAD_API void safeload_job_progress(safeload_job *job, uint64_t *done, uint64_t *total);
/* asks the load to stop at its next progress report: it then ends SAFELOAD_CANCELLED, as if
   the progress callback had returned non-zero (a load past its last report ends as it ends) */
SAFELOAD_API void safeload_job_cancel(safeload_job *job);
/* waits for the load to end, frees the job, returns the load's result (NULL: INVALID_ARGUMENT).
   Not from a progress callback or hook of the job, nor of any load on the job's pool: that
   would wait for itself (a pool runs one load at a time). */
SAFELOAD_API safeload_result safeload_job_wait(safeload_job *job);

/* ---------------------------------------------------------------------------------------------
   Writing, byte-identical to the reference writer: tensors sorted by dtype (descending) then
   name, compact JSON, __metadata__ first (keys sorted), padded with spaces to a multiple of 8.
   Files are written atomically: a temporary file in the same directory, flushed, renamed. The
   new file keeps the old one's permissions; a symlink is followed (the link survives). data
   is in host byte order; files get it little-endian (a big-endian host swaps each element).
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_save_tensor {
    const char *name;           /* NUL-terminated UTF-8 */
    safeload_dtype dtype;
    uint32_t rank;
    const uint64_t *shape;
    const void *data;
    uint64_t nbytes;            /* must equal shape x dtype bits / 8 */
} safeload_save_tensor;

enum {
    SAFELOAD_SAVE_EMPTY_METADATA = 1u << 0, /* write "__metadata__":{} when there are no pairs */
    /* pad the header with spaces until the data section starts on a 4096-byte boundary (the
       reference pads to 8; its reader takes either). Tensors whose data offsets are 4 KiB
       multiples can then be read with O_DIRECT straight into 4 KiB-aligned memory (io DIRECT
       and AUTO do), with no copy through a bounce buffer. Costs up to 4 KiB a file. */
    SAFELOAD_SAVE_ALIGN_DATA = 1u << 1
};

typedef struct safeload_save_desc {
    const safeload_kv *metadata;
    size_t metadata_count;
    uint32_t flags;             /* SAFELOAD_SAVE_*; another bit: INVALID_ARGUMENT */
    safeload_allocator allocator;
} safeload_save_desc;

SAFELOAD_API safeload_result safeload_save(const char *path, const safeload_save_tensor *tensors,
                                           size_t count, const safeload_save_desc *desc,
                                           safeload_error *err);
/* The same bytes into one allocation (free it with safeload_free and the same allocator). */
SAFELOAD_API safeload_result safeload_serialize(void **out, size_t *out_size,
                                                const safeload_save_tensor *tensors,
                                                size_t count, const safeload_save_desc *desc,
                                                safeload_error *err);
SAFELOAD_API void safeload_free(void *ptr, const safeload_allocator *allocator);

#ifdef __cplusplus
}
#endif
#endif /* SAFELOAD_H_INCLUDED */

/* =============================================================================================
   IMPLEMENTATION
   ========================================================================================== */
#if defined(SAFELOAD_IMPLEMENTATION) && !defined(SAFELOAD_IMPLEMENTATION_INCLUDED)
#define SAFELOAD_IMPLEMENTATION_INCLUDED

/* =============================================================================================
   0. CONFIGURATION: includes, overridable macros, compiler and architecture switches
   ========================================================================================== */
#if defined(SAFELOAD_MALLOC) && defined(SAFELOAD_FREE) && defined(SAFELOAD_REALLOC)
/* all three given: they take every allocation, load arenas included */
#  define SL__USER_MALLOC 1
#elif !defined(SAFELOAD_MALLOC) && !defined(SAFELOAD_FREE) && !defined(SAFELOAD_REALLOC)
#  define SL__USER_MALLOC 0
#  include <stdlib.h>
#  define SAFELOAD_MALLOC(sz) malloc(sz)
#  define SAFELOAD_REALLOC(p, sz) realloc(p, sz)
#  define SAFELOAD_FREE(p) free(p)
#else
#  error "Define all or none of SAFELOAD_MALLOC, SAFELOAD_REALLOC and SAFELOAD_FREE."
#endif

#ifndef SAFELOAD_ASSERT
#  include <assert.h>
#  define SAFELOAD_ASSERT(x) assert(x)
#endif

#include <string.h>
#include <limits.h>

/* Byte order. Every number in a safetensors file is little-endian: the header length, and
   each element of the tensor data. A big-endian host (s390x, PowerPC, some MIPS and ARM)
   reads the header length byte by byte, and a load swaps each 2-, 4- or 8-byte element to host
   order while it copies or casts it (SL__SWAP); the writer swaps back. On little-endian hosts
   SL__SWAP is 0 and none of that code is compiled. SL__TEST_SWAP (tests/test_swap.c only)
   turns the swapping on for a little-endian host, so that its logic is tested natively. */
#if (defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
     __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) || \
    (!defined(__BYTE_ORDER__) && (defined(__BIG_ENDIAN__) || defined(_BIG_ENDIAN)))
#  define SL__BIG_ENDIAN 1
#else
#  define SL__BIG_ENDIAN 0
#endif
#if SL__BIG_ENDIAN || defined(SL__TEST_SWAP)
#  define SL__SWAP 1
#else
#  define SL__SWAP 0
#endif

#if defined(_WIN32)
#  define SL__WINDOWS 1
#  define SL__WINDOWS_PATHS 1  /* a backslash separates path parts too */
#else
#  define SL__POSIX 1
#  define SL__WINDOWS_PATHS 0
#endif

#if defined(__x86_64__) || defined(_M_X64) || defined(_M_AMD64)
#  define SL__X86_64 1
#  include <emmintrin.h>   /* SSE2 is baseline on x86-64: the parser's scans use it */
#elif defined(__aarch64__) || defined(_M_ARM64)
#  define SL__AARCH64 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define SL__GNUC 1
#  define SL__INLINE static __inline__
#  define SL__FORCEINLINE static __inline__ __attribute__((always_inline))
#  define SL__NOINLINE __attribute__((noinline))
#  define SL__LIKELY(x) __builtin_expect(!!(x), 1)
#  define SL__UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Per-function ISA targets: kernels for AVX2/AVX-512 compile in a translation unit built at
   baseline flags and are only called after a run-time CPU check. */
#  define SL__TARGET(t) __attribute__((target(t)))
#  define SL__PREFETCH(p) __builtin_prefetch(p)
#  define SL__MAYBE_UNUSED __attribute__((unused))
/* Makes p's alignment unknown to the optimiser (see the SIMD loops' tail). */
#  define SL__HIDE_ALIGN(p) __asm__("" : "+r"(p))
#elif defined(_MSC_VER)
#  define SL__INLINE static __inline
#  define SL__FORCEINLINE static __forceinline
#  define SL__NOINLINE __declspec(noinline)
#  define SL__LIKELY(x) (x)
#  define SL__UNLIKELY(x) (x)
#  define SL__TARGET(t) /* MSVC compiles any intrinsic anywhere */
#  define SL__PREFETCH(p) ((void)(p))
#  define SL__MAYBE_UNUSED
#  define SL__HIDE_ALIGN(p) ((void)0)
#else
#  define SL__INLINE static
#  define SL__FORCEINLINE static
#  define SL__NOINLINE
#  define SL__LIKELY(x) (x)
#  define SL__UNLIKELY(x) (x)
#  define SL__TARGET(t)
#  define SL__PREFETCH(p) ((void)(p))
#  define SL__MAYBE_UNUSED
#  define SL__HIDE_ALIGN(p) ((void)0)
#endif

/* The worker pool needs atomics; without gcc/clang builtins or MSVC intrinsics, loads run on
   the calling thread. */
#if !defined(SL__GNUC) && !defined(_MSC_VER) && !defined(SAFELOAD_NO_THREADS)
#  define SAFELOAD_NO_THREADS
#endif

#if defined(SAFELOAD_STATIC)
#  define SL__DEF static SL__MAYBE_UNUSED   /* a program need not call every function */
#  if defined(_MSC_VER) && !defined(__clang__)
/* MSVC has no "unused" attribute; C4505 (/W4: an uncalled static function was removed) comes at
   the end of the translation unit, so it cannot be pushed and popped around the library. */
#    pragma warning(disable : 4505)
#  endif
#else
#  define SL__DEF
#endif

#define SL__MIN(a, b) ((a) < (b) ? (a) : (b))
#define SL__MAX(a, b) ((a) > (b) ? (a) : (b))
#define SL__UNUSED(x) ((void)(x))
#define SL__KIB ((uint64_t)1024)
#define SL__MIB ((uint64_t)1024 * 1024)
#define SL__GIB ((uint64_t)1024 * 1024 * 1024)
#define SL__MAX_HEADER 100000000u   /* the reference's MAX_HEADER_SIZE (decimal) */

/* =============================================================================================
   1. PLATFORM: memory, files, threads, CPU features
   ========================================================================================== */

/* ---- 1a. memory and error reporting ---- */

#include <stdarg.h>
#include <stdio.h>   /* vsnprintf only: the library never prints */
#include <time.h>

static void *sl__malloc(const safeload_allocator *a, size_t n) {
    if (n == 0) n = 1;
    if (a && a->alloc) return a->alloc(a->user, n);
    return SAFELOAD_MALLOC(n);
}

static void sl__free(const safeload_allocator *a, void *p) {
    if (!p) return;
    if (a && a->alloc) a->free(a->user, p);
    else SAFELOAD_FREE(p);
}

static void *sl__realloc(const safeload_allocator *a, void *p, size_t old_n, size_t n) {
    if (n == 0) n = 1;
    if (a && a->alloc) {
        void *q;
        if (a->realloc) return a->realloc(a->user, p, old_n, n);
        q = a->alloc(a->user, n);
        if (q && p) { memcpy(q, p, SL__MIN(old_n, n)); a->free(a->user, p); }
        return q;
    }
    return SAFELOAD_REALLOC(p, n);
}

static void sl__prefault(void *p, size_t n);

/* Zeroes n fresh bytes: populated first where the OS can (the memset touches every page
   anyway). Returns p. */
static void *sl__zero_fresh(void *p, size_t n) {
    sl__prefault(p, n);
    memset(p, 0, n);
    return p;
}

static void *sl__calloc(const safeload_allocator *a, size_t count, size_t size) {
    void *p;
    if (size && count > SIZE_MAX / size) return NULL;
    p = sl__malloc(a, count * size);
    return p ? sl__zero_fresh(p, count * size) : NULL;
}

/* count + 1 elements (never a zero-size request), or NULL when that overflows: for arrays
   sized by a caller's count, which may be anything. */
static void *sl__malloc_n(const safeload_allocator *a, size_t count, size_t size) {
    if (count >= SIZE_MAX / size) return NULL;
    return sl__malloc(a, (count + 1) * size);
}

/* A runtime allocator needs both alloc and free. */
static int sl__allocator_ok(const safeload_allocator *a) {
    return !a || (!a->alloc && !a->free && !a->realloc) || (a->alloc && a->free);
}

static size_t sl__utf8_valid_up_to(const unsigned char *s, size_t n);

/* Error text is printed as it is by callers, and names come from the file: every control
   character (C0 and NUL, DEL, C1 such as CSI), every bidirectional control (the marks U+061C,
   U+200E, U+200F, the embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069:
   they reorder what a terminal shows, so one name could read as another) and every byte that
   is not part of valid UTF-8 becomes '?', byte for byte, so the text keeps its length and is
   safe on a terminal. */
static void sl__err_clean(char *s, size_t n) {
    size_t i = 0, k, v;
    while (i < n) {
        v = sl__utf8_valid_up_to((const unsigned char *)s + i, n - i);
        for (k = i; k < i + v; k++) {
            unsigned char c = (unsigned char)s[k];
            unsigned char c1 = k + 1 < i + v ? (unsigned char)s[k + 1] : 0;
            unsigned char c2 = k + 2 < i + v ? (unsigned char)s[k + 2] : 0;
            if (c < 0x20 || c == 0x7F) s[k] = '?';
            else if ((c == 0xC2 && c1 <= 0x9F) || (c == 0xD8 && c1 == 0x9C)) {
                s[k] = s[k + 1] = '?';
                k++;
            } else if (c == 0xE2 && ((c1 == 0x80 && (c2 == 0x8E || c2 == 0x8F ||
                                                     (c2 >= 0xAA && c2 <= 0xAE))) ||
                                     (c1 == 0x81 && c2 >= 0xA6 && c2 <= 0xA9))) {
                s[k] = s[k + 1] = s[k + 2] = '?';
                k += 2;
            }
        }
        i += v;
        if (i < n) s[i++] = '?';
    }
}

/* dst (cap bytes) holds the start of a longer text: end it with "..." at a UTF-8 boundary
   at or before cap - 4. Returns the new length. */
static size_t sl__mark_cut(char *dst, size_t cap) {
    size_t k = cap - 4;
    while (k > 0 && ((unsigned char)dst[k] & 0xC0) == 0x80) k--;
    memcpy(dst + k, "...", 4);
    return k + 3;
}

/* Copy at most cap-1 bytes of s, never splitting a UTF-8 sequence, "..." when cut; cleaned. */
static void sl__copy_trunc(char *dst, size_t cap, const char *s, size_t n) {
    if (!s) { dst[0] = 0; return; }
    if (n < cap) { memcpy(dst, s, n); dst[n] = 0; }
    else {
        memcpy(dst, s, cap - 1);
        n = sl__mark_cut(dst, cap);
    }
    sl__err_clean(dst, n);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 7, 8)))
#endif
static safeload_result sl__fail(safeload_error *err, safeload_result code, const char *file,
                                uint64_t offset, const char *name, size_t name_len,
                                const char *fmt, ...) {
    va_list ap;
    if (!err) return code;
    err->code = code;
    err->offset = offset;
    sl__copy_trunc(err->file, sizeof err->file, file, file ? strlen(file) : 0);
    sl__copy_trunc(err->tensor, sizeof err->tensor, name, name_len);
    if (fmt) {
        int n;
        va_start(ap, fmt);
        n = vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof err->message)       /* cut (a long path in it): say so */
            sl__mark_cut(err->message, sizeof err->message);
        sl__err_clean(err->message, strlen(err->message));
    } else {
        sl__copy_trunc(err->message, sizeof err->message, safeload_result_message(code),
                       strlen(safeload_result_message(code)));
    }
    return code;
}

static void sl__clear_error(safeload_error *err) {
    if (!err) return;
    err->code = SAFELOAD_OK;
    err->offset = SAFELOAD_NO_OFFSET;
    err->file[0] = err->tensor[0] = err->message[0] = 0;
}

#define SL__OOM(err, file) sl__fail(err, SAFELOAD_OUT_OF_MEMORY, file, SAFELOAD_NO_OFFSET, \
                                    NULL, 0, "out of memory")

typedef unsigned long long sl__ull;   /* for printf */

/* ---- 1b. files: open, positional reads, mappings ---- */

#if defined(SL__WINDOWS)
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN
#  endif
#  ifndef NOMINMAX
#    define NOMINMAX
#  endif
#  include <windows.h>
typedef HANDLE sl__os_file;
#  define SL__NO_FILE INVALID_HANDLE_VALUE
#else
#  include <errno.h>
#  include <fcntl.h>
#  include <unistd.h>
#  include <sys/mman.h>
#  include <sys/stat.h>
#  include <sys/types.h>
#  include <sys/uio.h>
typedef int sl__os_file;
#  define SL__NO_FILE (-1)
#  if defined(ENOTBLK)                 /* our code for "a block device", with our own words */
#    define SL__EBLOCKDEV ENOTBLK
#  else
#    define SL__EBLOCKDEV ENODEV
#  endif
#  if defined(__linux__) && !defined(__cplusplus) && (defined(__LP64__) || defined(_LP64))
/* If the implementation file included system headers in strict C99 mode before this one,
   these POSIX/GNU declarations are hidden. On 64-bit Linux their ABI is fixed (no 64-bit
   offset renaming), so declare them; identical redeclarations are harmless in C. (C++
   compilers define _GNU_SOURCE, so there everything is already visible.) */
#    if defined(__GNUC__)
#      pragma GCC diagnostic push
#      pragma GCC diagnostic ignored "-Wredundant-decls"
#    endif
extern ssize_t pread(int, void *, size_t, off_t);
extern ssize_t preadv(int, const struct iovec *, int, off_t);
extern int madvise(void *, size_t, int);
extern int fsync(int);
extern int lstat(const char *, struct stat *);
extern ssize_t readlink(const char *, char *, size_t);
extern int fchmod(int, mode_t);
extern int fchown(int, uid_t, gid_t);
extern uid_t geteuid(void);
extern long syscall(long, ...);
extern int mincore(void *, size_t, unsigned char *);
extern char *realpath(const char *, char *);
#    if defined(__GNUC__)
#      pragma GCC diagnostic pop
#    endif
#    ifndef PATH_MAX
#      define PATH_MAX 4096             /* Linux's; <limits.h> hides it in strict C99 */
#    endif
#    ifndef MAP_ANONYMOUS
#      define MAP_ANONYMOUS 0x20
#    endif
#    ifndef MADV_HUGEPAGE
#      define MADV_HUGEPAGE 14
#    endif
#    ifndef O_CLOEXEC
#      define O_CLOEXEC 02000000
#    endif
#    if !defined(O_DIRECT) && defined(__x86_64__)
#      define O_DIRECT 040000
#    elif !defined(O_DIRECT) && defined(__aarch64__)
#      define O_DIRECT 0200000
#    endif
#    if !defined(O_DIRECTORY) && defined(__x86_64__)
#      define O_DIRECTORY 0200000
#    elif !defined(O_DIRECTORY) && defined(__aarch64__)
#      define O_DIRECTORY 040000
#    endif
#    if !defined(O_PATH) && (defined(__x86_64__) || defined(__aarch64__))
#      define O_PATH 010000000
#    endif
#  endif
/* hidden by strict C99 when a system header came first; the values are the same everywhere */
#  ifndef S_ISSOCK
#    define S_ISSOCK(m) (((m) & 0170000) == 0140000)
#  endif
#  ifndef S_ISLNK
#    define S_ISLNK(m) (((m) & 0170000) == 0120000)
#  endif
/* Test seams: the tests define these to inject short reads, EINTR and errors. */
#  ifndef SAFELOAD_PREAD
#    define SAFELOAD_PREAD pread
#  endif
#  ifndef SAFELOAD_PREADV
#    define SAFELOAD_PREADV preadv
#  endif
#  ifndef O_CLOEXEC
#    define O_CLOEXEC 0
#  endif
#endif

#define SL__READ_MAX ((size_t)64 << 20)   /* bytes per read call: Windows' ReadFile limit */

#if defined(SL__WINDOWS)
/* A path of MAX_PATH (260) characters or more fails in the Win32 calls unless the process has
   opted in to long paths. The \\?\ form has no such limit, but Windows takes it literally (no
   '/', '.' or '..', no relative paths), so a long path is first made absolute and normalised by
   GetFullPathNameW, which has no limit itself. 248, not 260: CreateDirectory's limit, and the
   one a directory's pattern ("dir\*") must stay under. Where that fails, the path is kept as
   given, and the call that uses it says why. */
static wchar_t *sl__long_path(wchar_t *w, size_t len, const safeload_allocator *a) {
    DWORD m, k;
    wchar_t *v;
    size_t skip;
#define SL__WSEP(c) ((c) == L'\\' || (c) == L'/')
#define SL__WDEVICE(p) /* \\?\ or \\.\, in either slash */ \
    (SL__WSEP((p)[0]) && SL__WSEP((p)[1]) && ((p)[2] == L'?' || (p)[2] == L'.') && SL__WSEP((p)[3]))
    if (SL__WDEVICE(w)) return w;               /* a form Windows takes as it is */
    /* short and absolute (C:\ or \\server): as it is. A short relative path may still be long
       once the current directory is put before it. */
    if (len < 248 && ((w[0] && w[1] == L':' && SL__WSEP(w[2])) ||
                      (SL__WSEP(w[0]) && SL__WSEP(w[1]))))
        return w;
    m = GetFullPathNameW(w, 0, NULL, NULL);
    if (m == 0 || m - 1 < 248) return w;
    v = (wchar_t *)sl__malloc(a, ((size_t)m + 8) * sizeof(wchar_t));
    if (!v) return w;
    k = GetFullPathNameW(w, m, v + 6, NULL);             /* room for "\\?\UNC" before it */
    if (k == 0 || k >= m || SL__WDEVICE(v + 6)) {   /* a reserved name (NUL, COM1): a device */
        sl__free(a, v);
        return w;
    }
#undef SL__WDEVICE
#undef SL__WSEP
    if (v[6] == L'\\' && v[7] == L'\\') {                /* \\server\share\... */
        memcpy(v, L"\\\\?\\UNC", 7 * sizeof(wchar_t));    /* over the first '\\' */
        skip = 0;
    } else {                                             /* C:\... */
        memcpy(v + 2, L"\\\\?\\", 4 * sizeof(wchar_t));
        skip = 2;
    }
    if (skip) memmove(v, v + skip, ((size_t)k + 6 - skip + 1) * sizeof(wchar_t));
    sl__free(a, w);
    return v;
}

static wchar_t *sl__widen(const char *path, const safeload_allocator *a) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    wchar_t *w;
    if (n <= 0) return NULL;
    w = (wchar_t *)sl__malloc(a, (size_t)n * sizeof(wchar_t));
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, n) <= 0) {
        sl__free(a, w);
        w = NULL;
    }
    return w ? sl__long_path(w, (size_t)n - 1, a) : NULL;
}
#endif

/* Opens a regular file for reading; direct = bypass the page cache. Returns an errno-style code
   (0 = ok) so the caller can word the error. On Windows an unbuffered handle is also an
   overlapped one, for the queued reads (1e); sl__os_pread waits on such a read itself. */
#if defined(SL__WINDOWS) && !defined(SAFELOAD_NO_OVERLAPPED)
#  define SL__DIRECT_FLAGS (FILE_FLAG_NO_BUFFERING | FILE_FLAG_OVERLAPPED)
#elif defined(SL__WINDOWS)
#  define SL__DIRECT_FLAGS FILE_FLAG_NO_BUFFERING
#endif
static int sl__os_open(const char *path, int direct, const safeload_allocator *a,
                       sl__os_file *out, uint64_t *size) {
#if defined(SL__WINDOWS)
    LARGE_INTEGER li;
    HANDLE h;
    DWORD ft;
    wchar_t *w = sl__widen(path, a);
    if (!w) return 1113; /* ERROR_NO_UNICODE_TRANSLATION (or out of memory) */
    h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                    NULL, OPEN_EXISTING,
                    FILE_ATTRIBUTE_NORMAL | (direct ? SL__DIRECT_FLAGS : 0), NULL);
    if (h == INVALID_HANDLE_VALUE) {         /* GetLastError's codes, as sl__os_why reads them */
        DWORD e = GetLastError(), at;
        if (e == ERROR_ACCESS_DENIED) {      /* what a directory gives, too */
            at = GetFileAttributesW(w);
            if (at != INVALID_FILE_ATTRIBUTES && (at & FILE_ATTRIBUTE_DIRECTORY)) e = 267;
        }
        sl__free(a, w);
        return (int)(e ? e : 5);
    }
    sl__free(a, w);
    /* a pipe gives no size and blocks, a device (NUL, CON, COM1) has no bytes of its own: as on
       POSIX, only files are checkpoints. ERROR_BAD_PIPE and ERROR_BAD_DEVICE carry the why. */
    ft = GetFileType(h);
    if (ft != FILE_TYPE_DISK) { CloseHandle(h); return ft == FILE_TYPE_PIPE ? 230 : 1200; }
    if (!GetFileSizeEx(h, &li)) {
        DWORD e = GetLastError();
        CloseHandle(h);
        return (int)(e ? e : 5);
    }
    *out = h;
    *size = (uint64_t)li.QuadPart;
    return 0;
#else
    struct stat st;
    int flags = O_RDONLY | O_CLOEXEC, fd;
#  if defined(O_DIRECT)
    if (direct) flags |= O_DIRECT;
#  else
    if (direct) return EINVAL;
#  endif
    SL__UNUSED(a);
    /* non-blocking: a FIFO without a writer would otherwise block the open forever. It is
       refused below; for a file the flag changes nothing, and is cleared. */
    do fd = open(path, flags | O_NONBLOCK); while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno ? errno : EIO;
    if (fstat(fd, &st) != 0) { int e = errno; close(fd); return e ? e : EIO; }
    if (S_ISDIR(st.st_mode)) { close(fd); return EISDIR; }
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) { close(fd); return ESPIPE; }
    /* /dev/zero, a tty: no size, endless or interactive bytes; not a checkpoint */
    if (S_ISCHR(st.st_mode)) { close(fd); return ENODEV; }
    /* a block device: its size is the device's, which a checkpoint (exactly its header and
       tensors) fills only by chance */
    if (!S_ISREG(st.st_mode)) { close(fd); return SL__EBLOCKDEV; }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *size = (uint64_t)st.st_size;
#  if defined(__APPLE__) && defined(F_NOCACHE)
    if (direct) fcntl(fd, F_NOCACHE, 1);
#  endif
    *out = fd;
    return 0;
#endif
}

/* Words for a code from the file layer: errno's, or on Windows GetLastError's (267 for "is a
   directory"); other codes get dflt, and the caller prints the number too. */
static const char *sl__os_why(int e, const char *dflt) {
#if defined(SL__WINDOWS)             /* GetLastError's codes */
    if (e == 2 || e == 3) return "no such file";
    if (e == 5) return "permission denied";
    if (e == 267) return "is a directory";
    if (e == 32 || e == 33) return "in use by another process";
    if (e == 112 || e == 39) return "no space left on the device";
    if (e == 206) return "name too long";
    if (e == 1113) return "the name is not valid UTF-8, or out of memory";
    if (e == 12 || e == 8 || e == 14) return "out of memory";
    if (e == 4) return "too many open files";
    if (e == 230) return "a pipe, not a file";
    if (e == 1200) return "a device, not a file";
    if (e == 17) return "cross-device: the target is on another drive";
    if (e == 80 || e == 183) return "already exists";
    if (e == 23 || e == 1117 || e == 483) return "I/O error (a bad sector or a failing device)";
    if (e == 21) return "the device is not ready";
    if (e == 87) return "invalid parameter";
    return dflt;
#else
    if (e == ENOENT) return "no such file";
    if (e == EACCES || e == EPERM) return "permission denied";
    if (e == EISDIR) return "is a directory";
    if (e == ESPIPE) return "a pipe or socket, not a file";
    if (e == ENXIO) return "a socket or a device that is not there, not a file";
    if (e == ENODEV) return "a character device, not a file";
    if (e == SL__EBLOCKDEV) return "a block device, not a file";
    if (e == ENOTDIR) return "a part of the path is not a directory";
    if (e == ENAMETOOLONG) return "name too long";
    if (e == ENOSPC) return "no space left on the device";
    if (e == EROFS) return "read-only file system";
    if (e == EFBIG) return "file too large for the file system or the process's limit";
    if (e == EIO) return "I/O error";
    if (e == EMFILE) return "too many open files (the process's limit; a model keeps one per shard)";
    if (e == ENFILE) return "too many open files in the system";
#  if defined(ELOOP)
    if (e == ELOOP) return "too many levels of symbolic links";
#  endif
    if (e == EXDEV) return "cross-device: the target is on another file system";
    if (e == EINTR) return "interrupted by a signal";
    if (e == EAGAIN) return "temporarily unavailable";
    if (e == EBUSY) return "busy (in use, or a mount point)";
    if (e == EEXIST) return "already exists";
    if (e == EINVAL) return "invalid argument (the file system refuses this operation here)";
    if (e == EBADF) return "bad file handle";
    if (e == ENOMEM) return "out of memory";
    if (e == EFAULT) return "bad address";
#  if defined(ETXTBSY)
    if (e == ETXTBSY) return "in use as a running program";
#  endif
#  if defined(ENOTEMPTY)
    if (e == ENOTEMPTY) return "a directory that is not empty";
#  endif
#  if defined(ENOTSUP)
    if (e == ENOTSUP) return "not supported by the file system";
#  endif
#  if defined(EOPNOTSUPP) && (!defined(ENOTSUP) || EOPNOTSUPP != ENOTSUP)
    if (e == EOPNOTSUPP) return "not supported by the file system";
#  endif
#  if defined(ETIMEDOUT)
    if (e == ETIMEDOUT) return "timed out (a network file system)";
#  endif
#  if defined(ESTALE)
    if (e == ESTALE) return "stale file handle (a network file system)";
#  endif
#  if defined(EDQUOT)
    if (e == EDQUOT) return "disk quota exceeded";
#  endif
#  if defined(EOVERFLOW)
    if (e == EOVERFLOW && sizeof(off_t) < 8)
        return "too large for this build's 32-bit off_t (build with -D_FILE_OFFSET_BITS=64)";
#  endif
    return dflt;
#endif
}

static void sl__os_close(sl__os_file f) {
#if defined(SL__WINDOWS)
    if (f != INVALID_HANDLE_VALUE) CloseHandle(f);
#else
    if (f >= 0) close(f);
#endif
}

/* The file's size now (it may have changed since it was opened): 0, or an error code. */
static int sl__os_size(sl__os_file f, uint64_t *size) {
#if defined(SL__WINDOWS)
    LARGE_INTEGER li;
    if (!GetFileSizeEx(f, &li)) return 5;
    *size = (uint64_t)li.QuadPart;
    return 0;
#else
    struct stat st;
    if (fstat(f, &st) != 0) return errno ? errno : EIO;
    if (!S_ISREG(st.st_mode)) return EINVAL;
    *size = (uint64_t)st.st_size;
    return 0;
#endif
}

/* Are two handles the same file? A second handle opened by path (O_DIRECT) may find another
   file there now: one renamed over it since the first was opened, or a relative path after a
   chdir. */
static int sl__os_same(sl__os_file a, sl__os_file b) {
#if defined(SL__WINDOWS)
    BY_HANDLE_FILE_INFORMATION x, y;
    if (!GetFileInformationByHandle(a, &x) || !GetFileInformationByHandle(b, &y)) return 0;
    return x.dwVolumeSerialNumber == y.dwVolumeSerialNumber &&
           x.nFileIndexHigh == y.nFileIndexHigh && x.nFileIndexLow == y.nFileIndexLow;
#else
    struct stat x, y;
    if (fstat(a, &x) != 0 || fstat(b, &y) != 0) return 0;
    return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
#endif
}

/* How many pages of [off, off + len) of a file sit in the page cache (*pages: how many pages
   the range spans), or -1 where the OS does not say. SAFELOAD_IO_AUTO asks it (sl__auto_cached)
   to choose direct I/O for cold bytes (they are read once, and need not push the page cache
   out) and buffered reads for cached ones (a copy at memory speed, which direct I/O would give
   up for the disk's). *how carries what worked across the calls for one file: 0 at first.
   Linux only: cachestat (6.5+), else mincore over a mapping of the range, but only for a file
   this process owns (or as root). Both answer only for a file the caller owns or could write:
   mincore since 5.0 reports every page of any other file as resident, and recent kernels
   (6.18 here) refuse cachestat for it (EPERM); such a file gets no answer, so buffered reads. */
#if defined(__linux__)
#  include <sys/syscall.h>
#  define SL__HAVE_CACHED 1
#  if defined(__NR_cachestat)
#    define SL__NR_CACHESTAT __NR_cachestat
#  elif (defined(__x86_64__) && !defined(__ILP32__)) || defined(__i386__) || \
        defined(__aarch64__) || defined(__arm__) || defined(__riscv) || defined(__loongarch__)
#    define SL__NR_CACHESTAT 451          /* its number there; older kernel headers lack the name */
#  endif
/* Test seam: the tests define this to run the mincore path on kernels that have cachestat. */
#  ifndef SAFELOAD_CACHESTAT
#    if defined(SL__NR_CACHESTAT)
#      define SAFELOAD_CACHESTAT(fd, range, cs) syscall(SL__NR_CACHESTAT, fd, range, cs, 0u)
#    else
#      define SAFELOAD_CACHESTAT(fd, range, cs) ((void)(fd), (void)(range), (void)(cs), -1L)
#    endif
#  endif
#endif

static int64_t sl__os_cached(sl__os_file f, uint64_t off, uint64_t len, uint64_t *pages,
                             int *how) {
#if defined(SL__HAVE_CACHED)
    /* how: 0 untried, 1 cachestat works, 2 mincore allowed, 3 neither */
#  if defined(_SC_PAGESIZE)
    long pgl = sysconf(_SC_PAGESIZE);
#  else
    long pgl = 4096;
#  endif
    uint64_t pg = pgl > 0 ? (uint64_t)pgl : 4096, a0 = off - off % pg, np;
    if (len == 0 || len > UINT64_MAX / 4 || off > UINT64_MAX / 4) return -1;
    np = (off + len - a0 + pg - 1) / pg;
    *pages = np;
    if (*how <= 1) {
        struct { uint64_t off, len; } range;
        uint64_t cs[5];                   /* struct cachestat: nr_cache first */
        range.off = a0;
        range.len = np * pg;
        memset(cs, 0, sizeof cs);         /* written by the kernel (MSan cannot see it) */
        if (SAFELOAD_CACHESTAT(f, &range, cs) == 0) {
            *how = 1;
            return (int64_t)SL__MIN(cs[0], np);
        }
        if (*how == 1) return -1;
        {
            struct stat st;
            *how = fstat(f, &st) == 0 && (st.st_uid == geteuid() || geteuid() == 0) ? 2 : 3;
        }
    }
    if (*how == 2) {
        unsigned char vec[1024];
        int64_t n = 0;
        uint64_t done = 0;
        while (done < np) {
            uint64_t k = SL__MIN(np - done, (uint64_t)sizeof vec), j, at = a0 + done * pg;
            void *p;
            if (at > (uint64_t)INT64_MAX || (uint64_t)(off_t)at != at)  /* a 32-bit off_t */
                return -1;
            p = mmap(NULL, (size_t)(k * pg), PROT_READ, MAP_SHARED, f, (off_t)at);
            if (p == MAP_FAILED) return -1;
            memset(vec, 0, sizeof vec);
            if (mincore(p, (size_t)(k * pg), vec) != 0) { munmap(p, (size_t)(k * pg)); return -1; }
            munmap(p, (size_t)(k * pg));
            for (j = 0; j < k; j++) n += vec[j] & 1;
            done += k;
        }
        return n;
    }
    return -1;
#else
    SL__UNUSED(f);
    SL__UNUSED(off);
    SL__UNUSED(len);
    SL__UNUSED(pages);
    SL__UNUSED(how);
    return -1;
#endif
}

/* One positional read: bytes read (may be short), 0 at end of file, -errno on error. */
static int64_t sl__os_pread(sl__os_file f, void *dst, size_t n, uint64_t off) {
#if defined(SL__WINDOWS)
    OVERLAPPED ov;
    DWORD got = 0;
    BOOL ok;
    if (n > SL__READ_MAX) n = SL__READ_MAX;
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)(off & 0xFFFFFFFFu);
    ov.OffsetHigh = (DWORD)(off >> 32);
    /* an event of its own: on an overlapped handle (a direct one) the read may go on in the
       background, and other threads' reads signal the handle itself */
    ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
    ok = ReadFile(f, dst, (DWORD)n, &got, &ov);
    if (!ok && GetLastError() == ERROR_IO_PENDING && ov.hEvent)
        ok = GetOverlappedResult(f, &ov, &got, TRUE);
    if (!ok) {
        DWORD e = GetLastError();
        if (ov.hEvent) CloseHandle(ov.hEvent);
        if (e == ERROR_HANDLE_EOF) return 0;
        return -(int64_t)(e ? e : 5);
    }
    if (ov.hEvent) CloseHandle(ov.hEvent);
    return (int64_t)got;
#else
    ssize_t r;
    if (n > SL__READ_MAX) n = SL__READ_MAX;
    if (off > (uint64_t)INT64_MAX) return -EINVAL;
    do r = SAFELOAD_PREAD(f, dst, n, (off_t)off); while (r < 0 && errno == EINTR);
    return r < 0 ? -(int64_t)(errno ? errno : EIO) : (int64_t)r;
#endif
}

/* Read-only mapping of [0, size). Read-only (not copy-on-write) keeps Windows from charging the
   whole file against the commit limit. */
static void *sl__os_map(sl__os_file f, uint64_t size, void **handle) {
#if defined(SL__WINDOWS)
    HANDLE m;
    void *p;
    *handle = NULL;
    if (size == 0 || size > (uint64_t)SIZE_MAX) return NULL;
    m = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
    if (!m) return NULL;
    p = MapViewOfFile(m, FILE_MAP_READ, 0, 0, (SIZE_T)size);
    if (!p) { CloseHandle(m); return NULL; }
    *handle = m;
    return p;
#else
    void *p;
    *handle = NULL;
    if (size == 0 || size > (uint64_t)SIZE_MAX) return NULL;
    p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, f, 0);
    return p == MAP_FAILED ? NULL : p;
#endif
}

static void sl__os_unmap(void *p, uint64_t size, void *handle) {
    if (!p) return;
#if defined(SL__WINDOWS)
    SL__UNUSED(size);
    UnmapViewOfFile(p);
    if (handle) CloseHandle((HANDLE)handle);
#else
    SL__UNUSED(handle);
    munmap(p, (size_t)size);
#endif
}

/* Big anonymous allocations (load arenas): page-aligned, zero, not yet touched. Which pages
   they get (huge or 4 KiB) is the load's page policy (sl__pages_*, section 5). */
SL__MAYBE_UNUSED static void *sl__os_alloc_pages(uint64_t size) {
#if defined(SL__WINDOWS)
    if (size == 0 || size > (uint64_t)SIZE_MAX) return NULL;
    return VirtualAlloc(NULL, (SIZE_T)size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
#else
    void *p;
    if (size == 0 || size > (uint64_t)SIZE_MAX) return NULL;
    p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#endif
}

/* Page kinds and first touch, Linux only (elsewhere the OS picks: 4 KiB pages, and nothing is
   measured). Test seam: the tests define SAFELOAD_MADVISE to make each advice fail. */
#if defined(__linux__)
#  define SL__HAVE_PAGES 1
#  ifndef MADV_NOHUGEPAGE
#    define MADV_NOHUGEPAGE 15
#  endif
#  ifndef MADV_POPULATE_WRITE
#    define MADV_POPULATE_WRITE 23
#  endif
#  ifndef SAFELOAD_MADVISE
#    define SAFELOAD_MADVISE(p, n, advice) madvise(p, n, advice)
#  endif
#endif

/* huge: 1 asks for transparent huge pages, 0 for 4 KiB pages; 0 when the kernel took it */
SL__MAYBE_UNUSED static int sl__os_advise_pages(unsigned char *p, uint64_t n, int huge) {
#if defined(SL__HAVE_PAGES)
    return n ? SAFELOAD_MADVISE(p, (size_t)n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) : 0;
#else
    SL__UNUSED(p); SL__UNUSED(n); SL__UNUSED(huge);
    return -1;
#endif
}

/* Faults [p, p+n) in for writing without writing a byte (MADV_POPULATE_WRITE, Linux 5.14+), so
   it may run over memory another worker is filling: 0, or -1 where the kernel lacks it. */
SL__MAYBE_UNUSED static int sl__os_populate(unsigned char *p, uint64_t n) {
#if defined(SL__HAVE_PAGES)
    return n ? SAFELOAD_MADVISE(p, (size_t)n, MADV_POPULATE_WRITE) : 0;
#else
    SL__UNUSED(p); SL__UNUSED(n);
    return -1;
#endif
}

/* Bookkeeping the caller is about to write whole (a header buffer, tables, a load's plan): a
   100,000-tensor checkpoint takes 10-20 MB of it, fresh from the OS in a new process. One
   MADV_POPULATE_WRITE faults it in far cheaper than a page fault per 4 KiB (a VM pays each
   fault twice). Only blocks of 256 KiB and up, whole pages inside them; a hint, so any failure
   is ignored. */
static void sl__prefault(void *p, size_t n) {
#if defined(SL__HAVE_PAGES)
    uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
    uintptr_t b = ((uintptr_t)p + n) & ~(uintptr_t)4095;
    if (n >= ((size_t)256 << 10) && b > a) (void)sl__os_populate((unsigned char *)a, b - a);
#else
    SL__UNUSED(p); SL__UNUSED(n);
#endif
}

/* This thread's CPU time in ns (0 where unknown): first-touch costs are timed in it, so a
   thread the scheduler put aside (a shared machine) does not read as slow memory. */
SL__MAYBE_UNUSED static uint64_t sl__thread_ns(void) {
#if defined(SL__HAVE_PAGES) && defined(CLOCK_THREAD_CPUTIME_ID)
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
    return 0;
#endif
}

SL__MAYBE_UNUSED static void sl__os_free_pages(void *p, uint64_t size) {
    if (!p) return;
#if defined(SL__WINDOWS)
    SL__UNUSED(size);
    VirtualFree(p, 0, MEM_RELEASE);
#else
    munmap(p, (size_t)size);
#endif
}

/* Big tables (a header of 100,000 tensors, its entries, a load's plan: 10-20 MB, written end
   to end as soon as they are allocated) on huge pages where a 4 KiB first touch is dear. On
   most hosts a fresh 4 KiB page costs 0.3-3 us (the PVM guest on 12-02 evening: 1.5-1.9 us,
   3 us after the memory sat idle; a fresh huge page 40-60 us, 0.1-0.2 us per 4 KiB of it,
   when the host backs the memory). Under shadow paging (PVM-style guests) every first touch
   of a 4 KiB page exits to the hypervisor: 10.5 us measured (populated ahead: 4.9 us), so
   3 MB of header cost 8 ms, while a fresh 2 MiB huge page cost 0.1-0.3 ms there. Where huge
   pages themselves are dear (a balloon took the host's 2 MiB blocks back) and 4 KiB pages
   cheap, they are not used. The verdict (sl__bigv) is a file's, taken when its header is
   allocated: 16 fresh 4 KiB pages timed; at 1 us a page or more the first huge page of each
   block is timed too, and huge pages are kept on while each costs a quarter as much per
   byte or less (the 11-29 guest: an 18th to a 54th; 16 pages can read 4x dearer than the
   bulk's 4 KiB faults); the first dearer one turns the verdict to 4 KiB pages. Loads on the
   file start from its verdict and never probe 4 KiB pages again. Only with the library's own
   allocator (a caller's takes every byte) and only on Linux; blocks of SL__BIG_MIN and up.
   Every block, mapped or not, starts SL__BIG_HDR bytes early with its size and kind, so
   sl__big_free can tell. */
#ifndef SAFELOAD_BIG_MIN
#  define SAFELOAD_BIG_MIN ((size_t)1 << 20)
#endif
#define SL__BIG_HDR 64                      /* the block keeps 64-byte alignment */
#define SL__BIG_HUGE ((size_t)2 << 20)
#define SL__BIG_SLOW_NS 1000                /* a 4 KiB first touch this slow: try huge pages */
#ifndef SAFELOAD_BIG_NS                     /* test seam: the tests choose what was measured */
#  define SAFELOAD_BIG_NS(huge, ns) (ns)
#endif

typedef struct sl__bigv {
    int state;                  /* 0 not measured, 1 huge pages, 2 the allocator's memory */
    uint64_t ns_4k;             /* the probe: ns per fresh 4 KiB page */
    uint64_t ns_2m;             /* the first huge page's cost, ns (0: not timed) */
} sl__bigv;

#define SL__BIG_MEASURE 1               /* sl__big_alloc: take the verdict (a file's header) */
#define SL__BIG_WHOLE 2                 /* the caller writes every byte at once (a table) */
#define SL__BIG_DMA 4                   /* the disk writes it (O_DIRECT bounce buffers, queued
                                           reads' slots): huge pages, see sl__big_alloc */

#if defined(SL__HAVE_PAGES)
/* Whether n bytes go on huge pages under the verdict: from SAFELOAD_BIG_MIN up, or from a
   quarter of it (a 25,000-name table: 512 KiB) when the huge page timed cost less than the
   4 KiB pages the block would fault in: all of them for a block written whole, half for one
   sized ahead of its use (a parse's arrays). */
static int sl__big_fits(const sl__bigv *v, size_t n, int how) {
    size_t pages = n / ((how & SL__BIG_WHOLE) ? 4096 : 8192);
    if (n >= (size_t)SAFELOAD_BIG_MIN) return 1;
    return v->state == 1 && n >= (size_t)SAFELOAD_BIG_MIN / 4 && v->ns_2m &&
           v->ns_2m < v->ns_4k * pages;
}

/* ns per 4 KiB page of 16 fresh ones, populated then written as the library's tables and
   arenas are; 0 when unknown. Two runs of 16, the cheaper one counts: the first touch of a
   fresh mapping after the memory sat idle can stall once (12-02: 12-28 us a page over 16
   pages, 1-2 us over the next 16), and one stall read as dear pages put a whole arena on
   huge pages that faulted in at a third of the 4 KiB rate. */
static uint64_t sl__big_probe(void) {
    unsigned char *q = (unsigned char *)sl__os_alloc_pages(32 * 4096);
    uint64_t best = 0, t0, t1;
    size_t i, r;
    if (!q) return 0;
    (void)sl__os_advise_pages(q, 32 * 4096, 0);
    for (r = 0; r < 2; r++) {
        unsigned char *p = q + r * 16 * 4096;
        t0 = sl__thread_ns();
        (void)sl__os_populate(p, 16 * 4096);
        for (i = 0; i < 16; i++) ((volatile unsigned char *)p)[i * 4096] = 0;
        t1 = sl__thread_ns();
        if (!t0 || t1 <= t0) { best = 0; break; }
        if (!best || t1 - t0 < best) best = t1 - t0;
    }
    sl__os_free_pages(q, 32 * 4096);
    return best ? (uint64_t)SAFELOAD_BIG_NS(0, best / 16) : 0;
}
#endif

/* n bytes (uninitialised unless *zero, when asked for, comes back 1: fresh mapped pages), by
   the verdict v (measured here when v->state is 0 and how has SL__BIG_MEASURE); free with
   sl__big_free only */
static void *sl__big_alloc(const safeload_allocator *a, size_t n, sl__bigv *v, int how,
                           int *zero) {
    unsigned char *b;
    int measure = how & SL__BIG_MEASURE, dma = how & SL__BIG_DMA;
    if (zero) *zero = 0;
#if defined(SL__HAVE_PAGES)
    if (!(a && a->alloc) && !SL__USER_MALLOC && n < SIZE_MAX / 4 &&
        (dma ? n >= SL__BIG_HUGE / 2 : sl__big_fits(v, n, how))) {
        /* Memory the disk writes into goes on huge pages whatever 4 KiB pages cost: a virtual
           disk moves each read as one piece per physically contiguous stretch, so reads into
           4 KiB pages scattered over memory split into many pieces (the PVM guest's virtio
           disk, 12-03: 4 threads of 4 MiB O_DIRECT reads, 2.3 GB/s into 4 KiB pages and 9.6
           into huge pages; safeload io direct 3.6 and 6.5). Unless a huge page was timed
           dear: then, or when the first one here costs more than the 4 KiB pages it stands
           for, the allocator's memory (or 4 KiB pages for the rest of the block). */
        if (dma) {
            if (!v->ns_4k) v->ns_4k = sl__big_probe();
            v->state = v->state == 2 && v->ns_2m ? 2 : 1;
        } else if (v->state == 0 && measure) {
            v->ns_4k = sl__big_probe();
            v->state = v->ns_4k >= SL__BIG_SLOW_NS ? 1 : 2;
        }
        if (v->state == 1) {
            size_t map = (n + SL__BIG_HDR + SL__BIG_HUGE - 1) & ~(SL__BIG_HUGE - 1);
            unsigned char *r = (unsigned char *)sl__os_alloc_pages(map + SL__BIG_HUGE);
            if (r) {
                size_t head = (size_t)((SL__BIG_HUGE - (uintptr_t)r % SL__BIG_HUGE) % SL__BIG_HUGE);
                b = r + head;                          /* 2 MiB aligned: whole huge pages */
                if (head) sl__os_free_pages(r, head);
                sl__os_free_pages(b + map, SL__BIG_HUGE - head);
                if (sl__os_advise_pages(b, map, 1) == 0) {
                    /* the block's first huge page, against 512 of the probe's: kept at a
                       quarter of their cost or less, since 16 pages can read 4x too dear (a
                       moment's stall, sl__pages_start). Every block's first page is timed,
                       not only the header's: after the memory sat idle the first huge pages
                       can come fast and later ones at a tenth of the speed (free page
                       reporting hands out what the host still backs first), so the first
                       dear one sends the rest of its block, and every block after it, to
                       4 KiB pages. (Timing every page of a block cost more than it saved:
                       blocks sized ahead were faulted in whole, and one page caught in a
                       compaction turned a cheap verdict.) */
                    if (v->ns_4k) {
                        uint64_t t0 = sl__thread_ns(), t1, ns;
                        b[0] = 0;
                        t1 = sl__thread_ns();
                        ns = t0 && t1 > t0 ? (uint64_t)SAFELOAD_BIG_NS(1, t1 - t0) : 0;
                        if (measure || dma) v->ns_2m = ns;
                        if (!ns || ns * (dma ? 1 : 4) > v->ns_4k * (SL__BIG_HUGE / 4096)) {
                            v->state = 2;              /* dearer: 4 KiB pages from here on */
                            if (map > SL__BIG_HUGE)
                                (void)sl__os_advise_pages(b + SL__BIG_HUGE, map - SL__BIG_HUGE,
                                                          0);
                        }
                    }
                    memcpy(b, &map, sizeof map);
                    if (zero) *zero = 1;
                    return b + SL__BIG_HDR;
                }
                sl__os_free_pages(b, map);
            }
        }
    }
#else
    SL__UNUSED(v); SL__UNUSED(measure); SL__UNUSED(how); SL__UNUSED(dma);
#endif
    if (n > SIZE_MAX - SL__BIG_HDR) return NULL;
    b = (unsigned char *)sl__malloc(a, n + SL__BIG_HDR);
    if (!b) return NULL;
    memset(b, 0, sizeof(size_t));                     /* 0: from the allocator */
    return b + SL__BIG_HDR;
}

/* count elements of size bytes, zeroed */
static void *sl__big_calloc(const safeload_allocator *a, size_t count, size_t size,
                            sl__bigv *v) {
    void *p;
    int zero;
    if (size && count > SIZE_MAX / size) return NULL;
    p = sl__big_alloc(a, count * size, v, SL__BIG_WHOLE, &zero);
    return p && !zero ? sl__zero_fresh(p, count * size) : p;
}

/* Block p's start (its size and kind are there) and *map: its mapping's size, 0 when it came
   from the allocator. */
static unsigned char *sl__big_block(void *p, size_t *map) {
    unsigned char *b = (unsigned char *)p - SL__BIG_HDR;
    memcpy(map, b, sizeof *map);
    return b;
}

/* A block sized ahead on huge pages, allocated before the verdict turned to 4 KiB pages: its
   pages past the first (not yet touched, as a rule) go on 4 KiB pages too. After the memory
   sat idle the first huge pages come fast and later ones at a tenth of the speed, so a
   header's tables passed their first page and then faulted in their next ones at 5 ms each
   (the PVM guest, 12-03: a 25,000-tensor open took 11.6-12.6 ms against 1.6 with the memory
   backed, 5 ms of it one huge page of the entries the merge of the parts reached). */
SL__MAYBE_UNUSED static void sl__big_settle(void *p) {
#if defined(SL__HAVE_PAGES)
    unsigned char *b;
    size_t map;
    if (!p) return;
    b = sl__big_block(p, &map);
    if (map > SL__BIG_HUGE) (void)sl__os_advise_pages(b + SL__BIG_HUGE, map - SL__BIG_HUGE, 0);
#else
    SL__UNUSED(p);
#endif
}

static void sl__big_free(const safeload_allocator *a, void *p) {
    unsigned char *b;
    size_t map;
    if (!p) return;
    b = sl__big_block(p, &map);
    if (map) sl__os_free_pages(b, map);
    else sl__free(a, b);
}

SL__MAYBE_UNUSED static int sl__os_cpu_count(void) {
#if defined(SL__WINDOWS)
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return (int)si.dwNumberOfProcessors;
#elif defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)SL__MIN(n, 4096) : 1;
#else
    return 1;
#endif
}

/* A per-process-instance seed for the name hash: addresses (ASLR) and time, so crafted names
   cannot be tuned to collide. */
static uint64_t sl__entropy(const void *a) {
    uint64_t x = (uint64_t)(uintptr_t)a ^ ((uint64_t)(uintptr_t)&x << 17) ^
                 ((uint64_t)time(NULL) * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)clock();
    x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ULL; x ^= x >> 29; x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 32);
}

/* Directories, for models given as a folder. */
#if !defined(SL__WINDOWS)
#  include <dirent.h>
#endif

/* What is at path (through symlinks): 0 nothing (or unknown), 1 a regular file, 2 a directory,
   3 anything else (a device, FIFO or socket), -1 cannot tell (a directory on the way denies
   access). */
static int sl__os_kind(const char *path, const safeload_allocator *a) {
#if defined(SL__WINDOWS)
    DWORD at;
    int denied;
    wchar_t *w = sl__widen(path, a);
    if (!w) return 0;
    at = GetFileAttributesW(w);
    denied = at == INVALID_FILE_ATTRIBUTES && GetLastError() == ERROR_ACCESS_DENIED;
    sl__free(a, w);
    if (at == INVALID_FILE_ATTRIBUTES) return denied ? -1 : 0;
    return (at & FILE_ATTRIBUTE_DIRECTORY) ? 2 : (at & 0x40u) ? 3 : 1;   /* 0x40: a device */
#else
    struct stat st;
    SL__UNUSED(a);
    if (stat(path, &st) != 0) return errno == EACCES || errno == EPERM ? -1 : 0;
    return S_ISREG(st.st_mode) ? 1 : S_ISDIR(st.st_mode) ? 2 : 3;
#endif
}
/* SAFELOAD_MODEL_CONFINE: is the file open as fd, opened by the path dir + name (dir is the
   first dlen bytes of path, "" or ending in a separator), beneath dir once every link is
   followed? 0 yes, 1 no (it resolves outside, or is not the file found beneath: changed
   since), -1 it could not be told (an error); *how says which check answered. Linux: openat2
   with RESOLVE_BENEATH from the directory (5.6+; refused by seccomp filters or older kernels
   with ENOSYS or EPERM: then realpath); elsewhere realpath of both, the file's under the
   directory's plus a separator. Either way the file found must be the one open (device and
   inode), so a link swapped in between cannot pass. */
#if !defined(SL__WINDOWS)
/* the realpath check: path's real path under dir's plus a separator, and the file want.
   Strict C99 with a system header included first hides realpath and PATH_MAX (and O_PATH):
   then neither check can answer, and CONFINE refuses every shard (-1), failing closed. */
static int sl__os_beneath_realpath(const char *dir, const char *path, const struct stat *want,
                                   const safeload_allocator *a) {
#  if defined(PATH_MAX)
    char *rd = (char *)sl__malloc(a, PATH_MAX + 1), *rp = (char *)sl__malloc(a, PATH_MAX + 1);
    struct stat got;
    size_t n;
    int rc = -1;
    if (rd && rp && realpath(dir, rd) && realpath(path, rp)) {
        n = strlen(rd);
        if (n && rd[n - 1] == '/') n--;                  /* the root */
        if (strncmp(rp, rd, n) != 0 || rp[n] != '/') rc = 1;
        else rc = stat(rp, &got) == 0 ? (got.st_dev != want->st_dev ||
                                         got.st_ino != want->st_ino) : -1;
    }
    sl__free(a, rd);
    sl__free(a, rp);
    return rc;
#  else
    SL__UNUSED(dir);
    SL__UNUSED(path);
    SL__UNUSED(want);
    SL__UNUSED(a);
    return -1;
#  endif
}

static int sl__os_beneath(const char *path, size_t dlen, sl__os_file fd,
                          const safeload_allocator *a, const char **how) {
    struct stat want;
    char *dir = (char *)sl__malloc(a, dlen + 2);
    int rc = -1;
    if (!dir) return -1;
    if (dlen) memcpy(dir, path, dlen);
    dir[dlen] = 0;
    if (!dlen) dir[0] = '.', dir[1] = 0;                 /* a bare name: the working directory */
    if (fstat(fd, &want) != 0) { sl__free(a, dir); return -1; }
#  if defined(__linux__) && defined(O_PATH) && defined(O_DIRECTORY) && \
      (defined(SYS_openat2) || defined(__x86_64__) || defined(__aarch64__))
    {
        struct { uint64_t flags, mode, resolve; } oh;    /* struct open_how */
        struct stat got;
        long f2;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        memset(&oh, 0, sizeof oh);
        oh.flags = O_PATH | O_CLOEXEC;
        oh.resolve = 0x08;                               /* RESOLVE_BENEATH */
#    if defined(SYS_openat2)
        f2 = dfd < 0 ? -1 : syscall(SYS_openat2, dfd, path + dlen, &oh, sizeof oh);
#    else
        f2 = dfd < 0 ? -1 : syscall(437, dfd, path + dlen, &oh, sizeof oh);   /* its number */
#    endif
        if (f2 >= 0) {
            *how = "openat2 RESOLVE_BENEATH";
            rc = fstat((int)f2, &got) == 0 ? (got.st_dev != want.st_dev ||
                                              got.st_ino != want.st_ino) : -1;
            close((int)f2);
        } else if (dfd >= 0 && errno == EXDEV) {        /* it leaves the directory */
            *how = "openat2 RESOLVE_BENEATH";
            rc = 1;
        } else if (dfd >= 0 && errno != ENOSYS && errno != EPERM && errno != EINVAL) {
            *how = "openat2 RESOLVE_BENEATH";
            rc = errno == ENOENT || errno == ELOOP ? 1 : -1;
        }
        if (dfd >= 0) close(dfd);
        if (rc != -1 || f2 >= 0) { sl__free(a, dir); return rc; }
    }
#  endif
    rc = sl__os_beneath_realpath(dir, path, &want, a);
    *how = "realpath";
    sl__free(a, dir);
    return rc;
}
#endif

SL__INLINE int sl__os_is_dir(const char *path, const safeload_allocator *a) {
    return sl__os_kind(path, a) == 2;
}
/* A rename over anything but a regular file would replace it: /dev/null with a checkpoint. */
SL__INLINE int sl__os_is_special(const char *path, const safeload_allocator *a) {
    return sl__os_kind(path, a) >= 2;
}

/* Calls fn(user, name) for each entry of dir (not "." or ".."); 0 on success. */
static int sl__os_list_dir(const char *dir, const safeload_allocator *a,
                           int (*fn)(void *user, const char *name), void *user) {
#if defined(SL__WINDOWS)
    WIN32_FIND_DATAW fd;
    HANDLE h;
    size_t n = strlen(dir);
    char *pat = (char *)sl__malloc(a, n + 3);
    wchar_t *w;
    int rc = 0;
    if (!pat) return -1;
    memcpy(pat, dir, n);
    memcpy(pat + n, "\\*", 3);
    w = sl__widen(pat, a);
    sl__free(a, pat);
    if (!w) return -1;
    h = FindFirstFileW(w, &fd);
    sl__free(a, w);
    /* nothing matched: an empty drive root (which has no "." or ".." to list) */
    if (h == INVALID_HANDLE_VALUE) return GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : -1;
    do {
        char name[1024];
        if (WideCharToMultiByte(CP_UTF8, 0, fd.cFileName, -1, name, (int)sizeof name, NULL,
                                NULL) <= 0) continue;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (fn(user, name)) { rc = 1; break; }
    } while (FindNextFileW(h, &fd));
    if (rc == 0 && GetLastError() != ERROR_NO_MORE_FILES) rc = -1;    /* not the end */
    FindClose(h);
    return rc < 0 ? -1 : 0;
#else
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    SL__UNUSED(a);
    if (!d) return -1;
    for (;;) {
        errno = 0;     /* readdir's NULL is the end, or an error (EOVERFLOW: 32-bit off_t) */
        if ((e = readdir(d)) == NULL) { rc = errno ? -1 : 0; break; }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (fn(user, e->d_name)) break;
    }
    closedir(d);
    return rc;
#endif
}

/* ---- 1c. threads and atomics ---- */

#if defined(SL__GNUC)
#  define sl__atomic_load(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define sl__atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#  define sl__atomic_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#elif defined(_MSC_VER)
#  include <intrin.h>
#  define sl__atomic_load(p) (*(p))
#  define sl__atomic_store(p, v) (*(p) = (v))
#  define sl__atomic_add(p, v) (sizeof(*(p)) == 8 ? \
       (uint64_t)_InterlockedExchangeAdd64((volatile __int64 *)(p), (__int64)(v)) : \
       (uint64_t)_InterlockedExchangeAdd((volatile long *)(p), (long)(v)))
#else                                   /* no threads here (section 0): plain reads and adds */
#  define sl__atomic_load(p) (*(p))
#  define sl__atomic_store(p, v) (*(p) = (v))
#  define sl__atomic_add(p, v) ((*(p) += (v)) - (v))
#endif
/* Shared counters are size_t (task and shard indices) except the load's byte count. Where
   8-byte atomics are not lock-free (ARMv5, MIPS32, i386 proper) gcc would call libatomic, a
   library the user does not link: that count is kept under the load's mutex instead. */
#if defined(SL__GNUC) && defined(__GCC_ATOMIC_LLONG_LOCK_FREE) && \
    __GCC_ATOMIC_LLONG_LOCK_FREE < 2 && !defined(SAFELOAD_NO_THREADS)
#  define SL__LOCKED_COUNT 1
#endif
/* i386 aligns uint64_t struct members to 4: an atomic on one split across cache lines is a
   bus lock */
#if defined(SL__GNUC)
#  define SL__ALIGN8 __attribute__((aligned(8)))
#else
#  define SL__ALIGN8
#endif

#if defined(SAFELOAD_NO_THREADS)
typedef int sl__mutex;
typedef int sl__cond;
#  define sl__mutex_init(m) (*(m) = 0, 0)
#  define sl__mutex_destroy(m) ((void)(m))
#  define sl__mutex_lock(m) ((void)(m))
#  define sl__mutex_unlock(m) ((void)(m))
#elif defined(SL__WINDOWS)
typedef SRWLOCK sl__mutex;
typedef CONDITION_VARIABLE sl__cond;
typedef HANDLE sl__thread;
SL__MAYBE_UNUSED static int sl__mutex_init(sl__mutex *m) { InitializeSRWLock(m); return 0; }
SL__MAYBE_UNUSED static void sl__mutex_destroy(sl__mutex *m) { SL__UNUSED(m); }
SL__MAYBE_UNUSED static void sl__mutex_lock(sl__mutex *m) { AcquireSRWLockExclusive(m); }
SL__MAYBE_UNUSED static void sl__mutex_unlock(sl__mutex *m) { ReleaseSRWLockExclusive(m); }
SL__MAYBE_UNUSED static int sl__cond_init(sl__cond *c) { InitializeConditionVariable(c); return 0; }
SL__MAYBE_UNUSED static void sl__cond_destroy(sl__cond *c) { SL__UNUSED(c); }
SL__MAYBE_UNUSED static void sl__cond_wait(sl__cond *c, sl__mutex *m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
SL__MAYBE_UNUSED static void sl__cond_broadcast(sl__cond *c) { WakeAllConditionVariable(c); }
typedef DWORD sl__tid;          /* which thread this is: to refuse a call that would deadlock */
SL__MAYBE_UNUSED static sl__tid sl__tid_self(void) { return GetCurrentThreadId(); }
SL__MAYBE_UNUSED static int sl__tid_eq(sl__tid a, sl__tid b) { return a == b; }
#else
#  include <pthread.h>
typedef pthread_mutex_t sl__mutex;
typedef pthread_cond_t sl__cond;
typedef pthread_t sl__thread;
SL__MAYBE_UNUSED static int sl__mutex_init(sl__mutex *m) { return pthread_mutex_init(m, NULL); }
SL__MAYBE_UNUSED static void sl__mutex_destroy(sl__mutex *m) { pthread_mutex_destroy(m); }
SL__MAYBE_UNUSED static void sl__mutex_lock(sl__mutex *m) { pthread_mutex_lock(m); }
SL__MAYBE_UNUSED static void sl__mutex_unlock(sl__mutex *m) { pthread_mutex_unlock(m); }
SL__MAYBE_UNUSED static int sl__cond_init(sl__cond *c) { return pthread_cond_init(c, NULL); }
SL__MAYBE_UNUSED static void sl__cond_destroy(sl__cond *c) { pthread_cond_destroy(c); }
SL__MAYBE_UNUSED static void sl__cond_wait(sl__cond *c, sl__mutex *m) { pthread_cond_wait(c, m); }
SL__MAYBE_UNUSED static void sl__cond_broadcast(sl__cond *c) { pthread_cond_broadcast(c); }
typedef pthread_t sl__tid;
SL__MAYBE_UNUSED static sl__tid sl__tid_self(void) { return pthread_self(); }
SL__MAYBE_UNUSED static int sl__tid_eq(sl__tid a, sl__tid b) { return pthread_equal(a, b); }
#endif

#if !defined(SAFELOAD_NO_THREADS)
static void sl__pool_main(safeload_pool *p, int id);    /* section 5a */

/* what a started thread runs: pool worker `id`, or run(ctx) when run is set (an async job) */
typedef struct sl__pool_arg {
    safeload_pool *pool;
    int id;
    int has_tid;
    sl__tid tid;
    void (*run)(void *ctx);
    void *ctx;
} sl__pool_arg;

#  if defined(SL__WINDOWS)
static DWORD WINAPI sl__thread_entry(LPVOID arg) {
    sl__pool_arg *a = (sl__pool_arg *)arg;
    if (a->run) a->run(a->ctx);
    else sl__pool_main(a->pool, a->id);
    return 0;
}
static int sl__thread_start(sl__thread *t, sl__pool_arg *arg) {
    *t = CreateThread(NULL, 0, sl__thread_entry, arg, 0, NULL);
    return *t ? 0 : -1;
}
static void sl__thread_join(sl__thread t) {
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}
#  else
static void *sl__thread_entry(void *arg) {
    sl__pool_arg *a = (sl__pool_arg *)arg;
    if (a->run) a->run(a->ctx);
    else sl__pool_main(a->pool, a->id);
    return NULL;
}
static int sl__thread_start(sl__thread *t, sl__pool_arg *arg) {
    return pthread_create(t, NULL, sl__thread_entry, arg);
}
static void sl__thread_join(sl__thread t) { pthread_join(t, NULL); }
#  endif
#endif

/* ---- 1d. CPU features (used by the cast kernels' dispatch) ---- */

/* Feature word: which cast paths this CPU and OS can run, plus the SAFELOAD_SIMD override.
     bits 0..5   SL__CPU_* flags below
     bits 8..11  safeload_simd value named by SAFELOAD_SIMD (0 = not set or not recognised)
     bit  31     set once detection has run
   It is cached in sl__cpu_word_cache, THE LIBRARY'S ONLY MUTABLE STATIC STATE. Detection is
   idempotent (every thread computes the same word), so a race between two first callers is
   harmless: both store the same value. gcc/clang use relaxed atomics, others a volatile. */
#define SL__CPU_SSE2        (1u << 0)
#define SL__CPU_AVX2        (1u << 1)   /* AVX2 + F16C, OS saves YMM */
#define SL__CPU_AVX512      (1u << 2)   /* + AVX-512 F and BW, OS saves ZMM/opmask */
#define SL__CPU_AVX512BF16  (1u << 3)   /* + AVX512_BF16 */
#define SL__CPU_NEON        (1u << 4)   /* AArch64: baseline (incl. FCVTN/FCVTL for fp16) */
#define SL__CPU_VBMI        (1u << 5)   /* with SL__CPU_AVX512: AVX512_VBMI (FP8 table kernels) */
#define SL__CPU_DONE        (1u << 31)

/* Which SIMD kernels are compiled at all. MinGW gcc does not keep 32-byte stack alignment for
   AVX spills (gcc bug 54412), so it gets SSE2 only. NEON needs gcc/clang inline asm for FPCR. */
#if !defined(SAFELOAD_NO_SIMD) && defined(SL__X86_64)
#  define SL__HAVE_SSE2 1
#  if !(defined(__MINGW32__) && !defined(__clang__))
#    define SL__HAVE_AVX 1
#  endif
#endif
#if !defined(SAFELOAD_NO_SIMD) && defined(SL__AARCH64) && defined(SL__GNUC)
#  define SL__HAVE_NEON 1
#endif

#include <stdlib.h> /* getenv */

#if defined(SL__HAVE_AVX) && defined(_MSC_VER) && !defined(__clang__)
#  include <intrin.h>
#  include <immintrin.h>
static void sl__cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (unsigned)v[0]; r[1] = (unsigned)v[1]; r[2] = (unsigned)v[2]; r[3] = (unsigned)v[3];
}
static unsigned long long sl__xgetbv0(void) { return (unsigned long long)_xgetbv(0); }
#elif defined(SL__HAVE_AVX)
static void sl__cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    unsigned a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(leaf), "c"(sub));
    r[0] = a; r[1] = b; r[2] = c; r[3] = d;
}
static unsigned long long sl__xgetbv0(void) {
    unsigned lo, hi;
    __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0)); /* xgetbv */
    return ((unsigned long long)hi << 32) | lo;
}
#endif

static unsigned sl__cpu_detect(void) {
    unsigned f = 0;
    const char *env;
#if defined(SL__HAVE_SSE2)
    f |= SL__CPU_SSE2;                       /* baseline on x86-64 */
#endif
#if defined(SL__HAVE_AVX)
    {
        unsigned r0[4], r1[4], r7[4], r71[4];
        sl__cpuid(0, 0, r0);
        sl__cpuid(1, 0, r1);
        /* OSXSAVE (27), AVX (28), F16C (29) */
        if (r0[0] >= 7 && (r1[2] & (7u << 27)) == (7u << 27)) {
            unsigned long long xcr0 = sl__xgetbv0();
            sl__cpuid(7, 0, r7);
            if ((xcr0 & 0x6u) == 0x6u && (r7[1] & (1u << 5))) {            /* YMM, AVX2 */
                f |= SL__CPU_AVX2;
                if ((xcr0 & 0xE6u) == 0xE6u && (r7[1] & (1u << 16))         /* ZMM, F */
                    && (r7[1] & (1u << 30))) {                               /* BW */
                    f |= SL__CPU_AVX512;
                    if (r7[2] & (1u << 1)) f |= SL__CPU_VBMI;
                    if (r7[0] >= 1) {
                        sl__cpuid(7, 1, r71);
                        if (r71[0] & (1u << 5)) f |= SL__CPU_AVX512BF16;
                    }
                }
            }
        }
    }
#endif
#if defined(SL__HAVE_NEON)
    f |= SL__CPU_NEON;
#endif
    /* SAFELOAD_SIMD=scalar|sse2|avx2|avx512|avx512bf16|neon caps what SAFELOAD_SIMD_AUTO picks. */
#if defined(_MSC_VER)
#  pragma warning(push)
#  pragma warning(disable : 4996) /* getenv */
#endif
    env = getenv("SAFELOAD_SIMD");
#if defined(_MSC_VER)
#  pragma warning(pop)
#endif
    if (env) {
        static const char *const names[] = { "scalar", "sse2", "avx2", "avx512", "avx512bf16",
                                             "neon" };
        unsigned i;
        for (i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(env, names[i]) == 0) f |= (i + 1u) << 8; /* SAFELOAD_SIMD_SCALAR + i */
    }
    return f | SL__CPU_DONE;
}

#if defined(SL__GNUC)
static unsigned sl__cpu_word_cache;
#  define SL__CPU_LOAD() __atomic_load_n(&sl__cpu_word_cache, __ATOMIC_RELAXED)
#  define SL__CPU_STORE(v) __atomic_store_n(&sl__cpu_word_cache, (v), __ATOMIC_RELAXED)
#else
static volatile unsigned sl__cpu_word_cache;
#  define SL__CPU_LOAD() sl__cpu_word_cache
#  define SL__CPU_STORE(v) (sl__cpu_word_cache = (v))
#endif

static unsigned sl__cpu_word(void) {
    unsigned w = SL__CPU_LOAD();
    if (SL__UNLIKELY(!w)) {
        w = sl__cpu_detect();
        SL__CPU_STORE(w);
    }
    return w;
}

/* ---- end of CPU features ---- */

/* ---- 1e. many reads in flight: io_uring (Linux), overlapped ReadFile (Windows) ----
   A disk serves one read at a time per worker far below its limit: NVMe and cloud volumes
   want tens of requests outstanding. Each worker of a DIRECT load gets a queue of its own and
   keeps its share of desc.queue_depth reads in flight, handling each as it completes. Where
   no queue can be set up (kernels before 5.1, seccomp filters, the io_uring_disabled sysctl,
   qemu-user, other systems) the engine reads one request at a time per worker, as before;
   stats.aio and stats.aio_error say which ran and why. io_uring is driven through syscall()
   with the kernel's ABI spelled out below: no liburing, no <linux/io_uring.h>. */
#if defined(__linux__) && defined(SL__GNUC) && !defined(SAFELOAD_NO_IO_URING)
#  define SL__AIO 1                     /* io_uring */
#  include <sys/syscall.h>
#  if defined(__NR_io_uring_setup)
#    define SL__NR_URING_SETUP __NR_io_uring_setup
#    define SL__NR_URING_ENTER __NR_io_uring_enter
#    define SL__NR_URING_REGISTER __NR_io_uring_register
#  elif !defined(__alpha__)
#    define SL__NR_URING_SETUP 425      /* one number on every architecture but alpha */
#    define SL__NR_URING_ENTER 426
#    define SL__NR_URING_REGISTER 427
#  endif
#  if !defined(SL__NR_URING_SETUP)
#    undef SL__AIO
#  endif
#elif defined(SL__WINDOWS) && !defined(SAFELOAD_NO_OVERLAPPED)
#  define SL__AIO 2                     /* overlapped ReadFile */
#endif
#if defined(SL__AIO)
#  define SL__AIO_KIND SL__AIO          /* safeload_aio's value */
#else
#  define SL__AIO_KIND 0
#endif
#if defined(SL__WINDOWS)
#  define SL__AIO_NOMEM 8               /* the file layer's codes: GetLastError's */
#else
#  define SL__AIO_NOMEM ENOMEM
#endif
/* Test seams: the tests make the setup fail (the fallback) and alter completions. */
#if defined(SL__AIO) && SL__AIO == 1
#  ifndef SAFELOAD_URING_SETUP
#    define SAFELOAD_URING_SETUP(entries, params) \
         syscall(SL__NR_URING_SETUP, (long)(entries), (params))
#  endif
/* one buffer (a struct iovec *) as fixed buffer 0; a seam that refuses it calls through to
   SL__URING_REGISTER_SYS otherwise */
#  define SL__URING_REGISTER_SYS(ring, iov) \
       syscall(SL__NR_URING_REGISTER, (long)(ring), (long)SL__URING_REGISTER_BUFFERS, (iov), 1L)
#  ifndef SAFELOAD_URING_REGISTER
#    define SAFELOAD_URING_REGISTER(ring, iov) SL__URING_REGISTER_SYS(ring, iov)
#  endif
#endif
#ifndef SAFELOAD_AIO_RESULT                  /* every completion: bytes read, or -error */
#  define SAFELOAD_AIO_RESULT(res, buf, off, len) (res)
#endif
#if defined(__has_feature)
#  if __has_feature(memory_sanitizer)
/* the kernel fills the buffers and the setup's parameters behind MemorySanitizer's back */
#    define SL__MSAN 1
void __msan_unpoison(const volatile void *p, size_t n);
#  endif
#endif
#if defined(SL__MSAN)
#  define SL__UNPOISON(p, n) __msan_unpoison((p), (n))
#else
#  define SL__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(SL__AIO) && SL__AIO == 1
typedef struct sl__uring_sqe {          /* struct io_uring_sqe, as far as reads use it */
    uint8_t opcode, flags;
    uint16_t ioprio;
    int32_t fd;
    uint64_t off, addr;
    uint32_t len, rw_flags;
    uint64_t user_data;
    uint16_t buf_index, personality;
    int32_t splice_fd_in;
    uint64_t addr3, pad;
} sl__uring_sqe;
typedef struct sl__uring_cqe {
    uint64_t user_data;
    int32_t res;
    uint32_t flags;
} sl__uring_cqe;
typedef struct sl__uring_params {       /* io_uring_params with its two offset structs */
    uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd,
        resv[3];
    uint32_t sq_head, sq_tail, sq_mask, sq_entries_off, sq_flags, sq_dropped, sq_array,
        sq_resv1;
    uint64_t sq_user_addr;
    uint32_t cq_head, cq_tail, cq_mask, cq_entries_off, cq_overflow, cq_cqes, cq_flags,
        cq_resv1;
    uint64_t cq_user_addr;
} sl__uring_params;
#  define SL__URING_OP_READV 1
#  define SL__URING_OP_READ_FIXED 4
#  define SL__URING_ENTER_GETEVENTS 1u
#  define SL__URING_FEAT_SINGLE_MMAP 1u
#  define SL__URING_OFF_CQ_RING 0x8000000ULL
#  define SL__URING_OFF_SQES 0x10000000ULL
#  define SL__URING_REGISTER_BUFFERS 0u
#endif

typedef struct sl__aio {
    unsigned depth;                     /* slots: reads this queue may have in flight */
    unsigned queued;                    /* written, not yet handed to the OS */
    uint64_t fixed_reads;               /* reads into the registered buffer (stats) */
#if defined(SL__AIO) && SL__AIO == 1
    int fd;
    unsigned char *sq_ring, *cq_ring;
    size_t sq_size, cq_size, sqes_size;
    sl__uring_sqe *sqes;
    sl__uring_cqe *cqes;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct iovec *iov;                  /* per slot: READV reads its address from here */
    unsigned char *fixed;               /* the registered buffer (READ_FIXED), or NULL */
    size_t fixed_len;
#elif defined(SL__AIO) && SL__AIO == 2
    OVERLAPPED *ov;                     /* per slot, each with an event of its own */
    HANDLE *ev, *fh;
    unsigned char *busy;
    uint32_t *want;
#endif
} sl__aio;

#if defined(SL__AIO) && SL__AIO == 1
static void sl__aio_close(sl__aio *q, const safeload_allocator *a) {
    if (q->sqes) munmap((void *)q->sqes, q->sqes_size);
    if (q->cq_ring && q->cq_ring != q->sq_ring) munmap(q->cq_ring, q->cq_size);
    if (q->sq_ring) munmap(q->sq_ring, q->sq_size);
    if (q->fd >= 0) close(q->fd);
    sl__free(a, q->iov);
    memset(q, 0, sizeof *q);
    q->fd = -1;
}

/* A queue of `depth` slots; 0, or the errno that says why there is none. */
static int sl__aio_open(sl__aio *q, unsigned depth, const safeload_allocator *a) {
    sl__uring_params p;
    unsigned char *sqes;
    long fd;
    int e;
    memset(q, 0, sizeof *q);
    q->fd = -1;
    memset(&p, 0, sizeof p);
    fd = SAFELOAD_URING_SETUP(depth, &p);
    if (fd < 0) return errno ? errno : ENOSYS;
    SL__UNPOISON(&p, sizeof p);
    q->fd = (int)fd;
    q->depth = depth;
    q->iov = (struct iovec *)sl__calloc(a, depth, sizeof(struct iovec));
    q->sq_size = p.sq_array + p.sq_entries * sizeof(unsigned);
    q->cq_size = p.cq_cqes + p.cq_entries * sizeof(sl__uring_cqe);
    if (p.features & SL__URING_FEAT_SINGLE_MMAP)
        q->sq_size = q->cq_size = SL__MAX(q->sq_size, q->cq_size);
    q->sqes_size = p.sq_entries * sizeof(sl__uring_sqe);
    q->sq_ring = (unsigned char *)mmap(NULL, q->sq_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                                       q->fd, 0);
    if (q->sq_ring == (unsigned char *)MAP_FAILED) q->sq_ring = NULL;
    if (q->sq_ring && (p.features & SL__URING_FEAT_SINGLE_MMAP)) {
        q->cq_ring = q->sq_ring;
    } else if (q->sq_ring) {
        q->cq_ring = (unsigned char *)mmap(NULL, q->cq_size, PROT_READ | PROT_WRITE,
                                           MAP_SHARED, q->fd, (off_t)SL__URING_OFF_CQ_RING);
        if (q->cq_ring == (unsigned char *)MAP_FAILED) q->cq_ring = NULL;
    }
    sqes = q->cq_ring ? (unsigned char *)mmap(NULL, q->sqes_size, PROT_READ | PROT_WRITE,
                                              MAP_SHARED, q->fd, (off_t)SL__URING_OFF_SQES)
                      : (unsigned char *)MAP_FAILED;
    if (sqes == (unsigned char *)MAP_FAILED || !q->iov || p.sq_entries < depth) {
        e = errno ? errno : ENOMEM;
        if (sqes != (unsigned char *)MAP_FAILED) munmap(sqes, q->sqes_size);
        sl__aio_close(q, a);
        return e;
    }
    q->sqes = (sl__uring_sqe *)(void *)sqes;
    q->sq_head = (unsigned *)(void *)(q->sq_ring + p.sq_head);
    q->sq_tail = (unsigned *)(void *)(q->sq_ring + p.sq_tail);
    q->sq_mask = (unsigned *)(void *)(q->sq_ring + p.sq_mask);
    q->sq_array = (unsigned *)(void *)(q->sq_ring + p.sq_array);
    q->cq_head = (unsigned *)(void *)(q->cq_ring + p.cq_head);
    q->cq_tail = (unsigned *)(void *)(q->cq_ring + p.cq_tail);
    q->cq_mask = (unsigned *)(void *)(q->cq_ring + p.cq_mask);
    q->cqes = (sl__uring_cqe *)(void *)(q->cq_ring + p.cq_cqes);
    return 0;
}

/* buf/len: memory the reads will mostly go to, registered once where the kernel lets it
   (fixed buffers: no page pinning per read); else (RLIMIT_MEMLOCK) the reads are plain. */
static void sl__aio_fixed(sl__aio *q, unsigned char *buf, size_t len) {
    struct iovec v;
    if (!buf || !len || len > SL__GIB) return;
    v.iov_base = buf;
    v.iov_len = len;
    if (SAFELOAD_URING_REGISTER(q->fd, &v) == 0) {
        q->fixed = buf;
        q->fixed_len = len;
    }
}

/* Queues a read of n bytes at off into buf, tagged with its slot. The caller never has more
   than depth reads queued or in flight, so a slot is always free. */
static void sl__aio_read(sl__aio *q, sl__os_file f, unsigned char *buf, size_t n, uint64_t off,
                         unsigned slot) {
    unsigned tail = *q->sq_tail, idx = tail & *q->sq_mask;
    sl__uring_sqe *s = &q->sqes[idx];
    memset(s, 0, sizeof *s);
    s->fd = f;
    s->off = off;
    s->len = (uint32_t)n;
    s->user_data = slot;
    if (q->fixed && buf >= q->fixed && buf + n <= q->fixed + q->fixed_len) {
        s->opcode = SL__URING_OP_READ_FIXED;
        s->addr = (uint64_t)(uintptr_t)buf;
        s->buf_index = 0;
        q->fixed_reads++;
    } else {
        q->iov[slot].iov_base = buf;
        q->iov[slot].iov_len = n;
        s->opcode = SL__URING_OP_READV;
        s->addr = (uint64_t)(uintptr_t)&q->iov[slot];
        s->len = 1;
    }
    q->sq_array[idx] = idx;
    __atomic_store_n(q->sq_tail, tail + 1, __ATOMIC_RELEASE);
    q->queued++;
}

/* Hands the queued reads to the kernel and, when wait, sleeps until one completes; 0, or the
   errno of a failure that leaves the queue unusable. A full completion queue or a kernel
   short of memory (EAGAIN, EBUSY) only delays: the next call tries again. */
static int sl__aio_enter(sl__aio *q, int wait) {
    if (!wait && !q->queued) return 0;      /* nothing to hand over: no syscall */
    for (;;) {
        long r = syscall(SL__NR_URING_ENTER, (long)q->fd, (long)q->queued, wait ? 1L : 0L,
                         wait ? (long)SL__URING_ENTER_GETEVENTS : 0L, (void *)NULL, (size_t)0);
        if (r >= 0) {
            q->queued -= (unsigned)r < q->queued ? (unsigned)r : q->queued;
            return 0;
        }
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EBUSY ? 0 : (errno ? errno : EIO);
    }
}

/* One completion, if any: its slot and result (bytes, or -errno). */
static int sl__aio_reap(sl__aio *q, unsigned *slot, int64_t *res) {
    unsigned head = *q->cq_head;
    const sl__uring_cqe *c;
    if (head == __atomic_load_n(q->cq_tail, __ATOMIC_ACQUIRE)) return 0;
    c = &q->cqes[head & *q->cq_mask];
    *slot = (unsigned)c->user_data;
    *res = c->res;
    __atomic_store_n(q->cq_head, head + 1, __ATOMIC_RELEASE);
    return 1;
}
#endif /* SL__AIO == 1 */

#if defined(SL__AIO) && SL__AIO == 2
/* Overlapped reads on a handle opened with FILE_FLAG_OVERLAPPED, each slot with an event of
   its own; WaitForMultipleObjects takes at most 64 of them, so a worker keeps at most 64. */
static void sl__aio_close(sl__aio *q, const safeload_allocator *a) {
    unsigned i;
    for (i = 0; q->ev && i < q->depth; i++)
        if (q->ev[i]) CloseHandle(q->ev[i]);
    sl__free(a, q->ov);
    sl__free(a, q->ev);
    sl__free(a, q->fh);
    sl__free(a, q->busy);
    sl__free(a, q->want);
    memset(q, 0, sizeof *q);
}

static int sl__aio_open(sl__aio *q, unsigned depth, const safeload_allocator *a) {
    unsigned i;
    memset(q, 0, sizeof *q);
    if (depth > MAXIMUM_WAIT_OBJECTS) depth = MAXIMUM_WAIT_OBJECTS;
    q->depth = depth;
    q->ov = (OVERLAPPED *)sl__calloc(a, depth, sizeof(OVERLAPPED));
    q->ev = (HANDLE *)sl__calloc(a, depth, sizeof(HANDLE));
    q->fh = (HANDLE *)sl__calloc(a, depth, sizeof(HANDLE));
    q->busy = (unsigned char *)sl__calloc(a, depth, 1);
    q->want = (uint32_t *)sl__calloc(a, depth, sizeof(uint32_t));
    if (!q->ov || !q->ev || !q->fh || !q->busy || !q->want) { sl__aio_close(q, a); return 8; }
    for (i = 0; i < depth; i++)
        if (!(q->ev[i] = CreateEventW(NULL, TRUE, FALSE, NULL))) {
            DWORD e = GetLastError();
            sl__aio_close(q, a);
            return (int)(e ? e : 8);
        }
    return 0;
}

/* Starts the read now (Windows has no separate submit). One that fails at once completes
   at once: its slot's event is set and its result kept in the OVERLAPPED's Internal field. */
static void sl__aio_read(sl__aio *q, sl__os_file f, unsigned char *buf, size_t n, uint64_t off,
                         unsigned slot) {
    OVERLAPPED *o = &q->ov[slot];
    memset(o, 0, sizeof *o);
    o->Offset = (DWORD)(off & 0xFFFFFFFFu);
    o->OffsetHigh = (DWORD)(off >> 32);
    o->hEvent = q->ev[slot];
    q->want[slot] = (uint32_t)n;
    q->fh[slot] = f;
    q->busy[slot] = 1;
    if (!ReadFile(f, buf, (DWORD)n, NULL, o)) {
        DWORD e = GetLastError();
        if (e != ERROR_IO_PENDING) {
            q->busy[slot] = 2;              /* failed at once: e, or the end of the file */
            o->Internal = (ULONG_PTR)(e == ERROR_HANDLE_EOF ? 0 : (e ? e : 5));
            SetEvent(q->ev[slot]);
        }
    }
}

static void sl__aio_fixed(sl__aio *q, unsigned char *buf, size_t len) {   /* (none here) */
    SL__UNUSED(q); SL__UNUSED(buf); SL__UNUSED(len);
}

static int sl__aio_enter(sl__aio *q, int wait) {
    HANDLE h[MAXIMUM_WAIT_OBJECTS];
    DWORD n = 0, r;
    unsigned i;
    if (!wait) return 0;
    for (i = 0; i < q->depth; i++)
        if (q->busy[i]) h[n++] = q->ev[i];
    if (!n) return 0;
    r = WaitForMultipleObjects(n, h, FALSE, INFINITE);
    if (r == WAIT_FAILED) { DWORD e = GetLastError(); return (int)(e ? e : 5); }
    return 0;
}

static int sl__aio_reap(sl__aio *q, unsigned *slot, int64_t *res) {
    unsigned i;
    for (i = 0; i < q->depth; i++) {
        DWORD got = 0;
        if (!q->busy[i] || WaitForSingleObject(q->ev[i], 0) != WAIT_OBJECT_0) continue;
        if (q->busy[i] == 2) {
            DWORD e = (DWORD)q->ov[i].Internal;
            *res = e ? -(int64_t)e : 0;
        } else if (GetOverlappedResult(q->fh[i], &q->ov[i], &got, FALSE)) {
            *res = (int64_t)got;
        } else {
            DWORD e = GetLastError();
            *res = e == ERROR_HANDLE_EOF ? 0 : -(int64_t)(e ? e : 5);
        }
        q->busy[i] = 0;
        ResetEvent(q->ev[i]);
        *slot = i;
        return 1;
    }
    return 0;
}
#endif /* SL__AIO == 2 */

/* =============================================================================================
   2. FORMAT: byte sources, dtype table, header parser, validation
   ========================================================================================== */

/* ---- 2a. result and dtype tables ---- */

static const char *const sl__result_ids[] = {
#define SL__RESULT_ID(id, msg) #id,
    SAFELOAD_RESULT_TABLE(SL__RESULT_ID)
#undef SL__RESULT_ID
};
static const char *const sl__result_msgs[] = {
#define SL__RESULT_MSG(id, msg) msg,
    SAFELOAD_RESULT_TABLE(SL__RESULT_MSG)
#undef SL__RESULT_MSG
};

SL__DEF const char *safeload_result_id(safeload_result r) {
    return (unsigned)r < (unsigned)SAFELOAD_RESULT_COUNT ? sl__result_ids[r] : "UNKNOWN";
}

SL__DEF const char *safeload_result_message(safeload_result r) {
    return (unsigned)r < (unsigned)SAFELOAD_RESULT_COUNT ? sl__result_msgs[r] : "unknown result";
}

static const char *const sl__dtype_names[SAFELOAD_DTYPE_COUNT] = {
    NULL, "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64",
    "F64", "I64", "U64"
};
static const unsigned char sl__dtype_bits[SAFELOAD_DTYPE_COUNT] = {
    0, 8, 4, 6, 6, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64
};

SL__DEF const char *safeload_dtype_name(safeload_dtype d) {
    return (unsigned)d < (unsigned)SAFELOAD_DTYPE_COUNT ? sl__dtype_names[d] : NULL;
}

SL__DEF unsigned safeload_dtype_bits(safeload_dtype d) {
    return (unsigned)d < (unsigned)SAFELOAD_DTYPE_COUNT ? sl__dtype_bits[d] : 0u;
}

SL__DEF size_t safeload_dtype_size(safeload_dtype d) {
    unsigned b = safeload_dtype_bits(d);
    return (b % 8) ? 0 : b / 8;
}

static safeload_result sl__nbytes(safeload_dtype dtype, const uint64_t *shape, uint32_t rank,
                                  uint64_t *out) {
    uint64_t n = 1, bits = safeload_dtype_bits(dtype), q;
    uint32_t i;
    int over = 0;
    if (!bits || (rank && !shape)) return SAFELOAD_INVALID_ARGUMENT;
    for (i = 0; i < rank; i++) {
        if (shape[i] == 0) return SAFELOAD_OK;                      /* no elements, no bytes */
        if (n > UINT64_MAX / shape[i]) over = 1;
        else n *= shape[i];
    }
    if (over) return SAFELOAD_OVERFLOW;
    /* ceil(n * bits / 8) without forming n * bits: whole groups of 8 elements, then the rest */
    q = n / 8;
    if (q > UINT64_MAX / bits) return SAFELOAD_OVERFLOW;
    q *= bits;
    if (q > UINT64_MAX - (n % 8 * bits + 7) / 8) return SAFELOAD_OVERFLOW;
    *out = q + (n % 8 * bits + 7) / 8;
    return SAFELOAD_OK;
}

SL__DEF safeload_result safeload_nbytes(safeload_dtype dtype, const uint64_t *shape,
                                        uint32_t rank, uint64_t *out) {
    uint64_t r = 0;                     /* out may be an element of shape */
    safeload_result res = out ? sl__nbytes(dtype, shape, rank, &r) : SAFELOAD_INVALID_ARGUMENT;
    if (out) *out = res == SAFELOAD_OK ? r : 0;
    return res;
}

static const unsigned char sl__dtype_name_len[SAFELOAD_DTYPE_COUNT] = {
    0, 4, 2, 7, 7, 2, 2, 7, 7, 7, 11, 11, 3, 3, 3, 4, 3, 3, 3, 3, 3, 3, 3
};

SL__DEF safeload_dtype safeload_dtype_from_name(const char *s, size_t n) {
    int i;
    if (!s) return SAFELOAD_DTYPE_NONE;
    /* the parser calls this once per tensor: the common names without a loop */
    if (n == 3) {
        int w = s[1] == '1' && s[2] == '6' ? 0 : s[1] == '3' && s[2] == '2' ? 1
              : s[1] == '6' && s[2] == '4' ? 2 : -1;
        static const safeload_dtype f[3] = {SAFELOAD_F16, SAFELOAD_F32, SAFELOAD_F64};
        static const safeload_dtype si[3] = {SAFELOAD_I16, SAFELOAD_I32, SAFELOAD_I64};
        static const safeload_dtype u[3] = {SAFELOAD_U16, SAFELOAD_U32, SAFELOAD_U64};
        if (w < 0) return SAFELOAD_DTYPE_NONE;
        switch (s[0]) {
        case 'F': return f[w];
        case 'I': return si[w];
        case 'U': return u[w];
        case 'C': return w == 2 ? SAFELOAD_C64 : SAFELOAD_DTYPE_NONE;
        default: return SAFELOAD_DTYPE_NONE;
        }
    }
    if (n == 4 && s[0] == 'B') {
        if (s[1] == 'F' && s[2] == '1' && s[3] == '6') return SAFELOAD_BF16;
        if (s[1] == 'O' && s[2] == 'O' && s[3] == 'L') return SAFELOAD_BOOL;
        return SAFELOAD_DTYPE_NONE;
    }
    if (n < 2 || n > 11) return SAFELOAD_DTYPE_NONE;
    for (i = 1; i < (int)SAFELOAD_DTYPE_COUNT; i++)
        if (sl__dtype_name_len[i] == n && memcmp(sl__dtype_names[i], s, n) == 0)
            return (safeload_dtype)i;
    return SAFELOAD_DTYPE_NONE;
}

#if SL__SWAP
/* Element byte order on a swapping host (0.): the unit whose bytes are reversed is 2, 4 or 8;
   C64 is two F32 (4); the 1-byte and sub-byte dtypes stay as they are (1). */
SL__INLINE uint16_t sl__bswap16(uint16_t v) { return (uint16_t)(v << 8 | v >> 8); }
SL__INLINE uint32_t sl__bswap32(uint32_t v) {
    return v << 24 | (v & 0xFF00u) << 8 | (v >> 8 & 0xFF00u) | v >> 24;
}
SL__INLINE uint64_t sl__bswap64(uint64_t v) {
    return (uint64_t)sl__bswap32((uint32_t)v) << 32 | sl__bswap32((uint32_t)(v >> 32));
}
static unsigned sl__swap_unit(safeload_dtype d) {
    unsigned b = safeload_dtype_bits(d);
    return d == SAFELOAD_C64 ? 4u : b >= 16 ? b / 8 : 1u;
}
/* n bytes (whole units) from src to dst, each unit's bytes reversed; dst == src is allowed. */
static void sl__swap_copy(void *dst, const void *src, size_t n, unsigned unit) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i;
    if (unit == 2)
        for (i = 0; i + 2 <= n; i += 2) {
            uint16_t v;
            memcpy(&v, s + i, 2);
            v = sl__bswap16(v);
            memcpy(d + i, &v, 2);
        }
    else if (unit == 4)
        for (i = 0; i + 4 <= n; i += 4) {
            uint32_t v;
            memcpy(&v, s + i, 4);
            v = sl__bswap32(v);
            memcpy(d + i, &v, 4);
        }
    else if (unit == 8)
        for (i = 0; i + 8 <= n; i += 8) {
            uint64_t v;
            memcpy(&v, s + i, 8);
            v = sl__bswap64(v);
            memcpy(d + i, &v, 8);
        }
    else if (d != s)
        memcpy(d, s, n);
}
#  define SL__SWAP_UNIT(d) sl__swap_unit(d)
#else
#  define SL__SWAP_UNIT(d) 1u
#endif

/* ---- 2b. byte sources: a file, the caller's memory, or the caller's reader ---- */

typedef enum sl__src_kind { SL__SRC_FILE, SL__SRC_MEMORY, SL__SRC_READER } sl__src_kind;

typedef struct sl__source {
    sl__src_kind kind;
    uint64_t size;
    sl__os_file fd;
    const unsigned char *mem;
    safeload_reader reader;
} sl__source;

/* A failed read's error number for messages: a reader returns -errno (or any negative value,
   INT64_MIN included: reported as EIO, 5). */
static int64_t sl__err_code(int64_t r) {
    return r < 0 && r > INT64_MIN ? -r : 5;
}
/* sl__os_why for a 64-bit code (a reader's may be any number) */
static const char *sl__why64(int64_t e) {
    return e > 0 && e < 100000 ? sl__os_why((int)e, "error") : "error";
}

/* Exactly n bytes at off, looping over short reads. *calls counts read calls (may be NULL). */
/* Where a source that a read found ending at byte `at` ends: a file that shrank may end
   before it (its size now); a reader has no size to ask for. */
static uint64_t sl__source_end(const sl__source *s, uint64_t at) {
    uint64_t now;
    if (s->kind != SL__SRC_FILE || sl__os_size(s->fd, &now) != 0 || now > at) return at;
    return now;
}

static safeload_result sl__source_read(const sl__source *s, const char *path, uint64_t off,
                                       void *dst, size_t n, safeload_error *err,
                                       uint64_t *calls) {
    unsigned char *d = (unsigned char *)dst;
    if (off > s->size || n > s->size - off)
        return sl__fail(err, SAFELOAD_UNEXPECTED_EOF, path, off, NULL, 0,
                        "read of %llu bytes at byte %llu runs past the end (%llu bytes)",
                        (sl__ull)n, (sl__ull)off, (sl__ull)s->size);
    if (s->kind == SL__SRC_MEMORY) {
        if (n) memcpy(d, s->mem + off, n);
        if (calls) (*calls)++;
        return SAFELOAD_OK;
    }
    while (n) {
        int64_t r;
        size_t ask = SL__MIN(n, SL__READ_MAX);
        if (calls) (*calls)++;
        if (s->kind == SL__SRC_FILE) r = sl__os_pread(s->fd, d, ask, off);
        else r = s->reader.read(s->reader.user, off, d, ask);
        if (r > 0 && (uint64_t)r > ask)   /* more than asked for: a broken reader */
            return sl__fail(err, SAFELOAD_IO_ERROR, path, off, NULL, 0,
                            "reader returned %lld bytes for a request of %llu at byte %llu",
                            (long long)r, (sl__ull)ask, (sl__ull)off);
        if (r < 0)
            return sl__fail(err, SAFELOAD_IO_ERROR, path, off, NULL, 0,
                            "read of %llu bytes at byte %llu failed: %s (error %lld)",
                            (sl__ull)ask, (sl__ull)off, sl__why64(sl__err_code(r)),
                            (long long)sl__err_code(r));
        if (r == 0)                     /* off is the first byte missing */
            return sl__fail(err, SAFELOAD_UNEXPECTED_EOF, path, off, NULL, 0,
                            "file ended at byte %llu, %llu byte%s short (it was %llu bytes "
                            "when opened)", (sl__ull)sl__source_end(s, off), (sl__ull)n,
                            n == 1 ? "" : "s", (sl__ull)s->size);
        d += r; off += (uint64_t)r; n -= (size_t)r;
    }
    return SAFELOAD_OK;
}

/* ---- 2c. the file object (filled by the parser, indexed by the key set) ---- */

/* Open-addressing name table (section 3). Declared here because the parser fills it. */
typedef struct sl__table {
    uint64_t *slots;        /* 0 = empty, else (hash high 32 bits) << 32 | (index + 1) */
    size_t mask;
    int big;                /* slots is a big block (sl__big_alloc) */
} sl__table;

struct safeload_file {
    safeload_allocator alloc;
    sl__source src;
    char *path;
    unsigned char *header;      /* the N header bytes + zero padding, decoded in place */
    uint64_t header_len, data_offset, data_size;
    safeload_tensor *tensors;
    size_t count;
    uint64_t *dims;
    safeload_kv *meta;
    size_t meta_count;
    int has_meta;
    sl__table names, meta_names;
    uint64_t k0, k1;            /* hash key */
    sl__mutex map_lock;
    int map_lock_ok;
    const unsigned char *map;   /* lazily created read-only mapping (file sources) */
    void *map_handle;
    int threads;                /* the open desc's: how many threads may parse the header */
    sl__bigv big;               /* where its big tables go (header, parts, a load's plan) */
    unsigned char **parts;      /* a header parsed in parts: parts 1.. were read into these */
    size_t n_parts;
};

/* The verdict a model's or a load's tables follow: its first file's (a copy: read, never
   measured again), or none */
static sl__bigv sl__big_first(safeload_file *const *shards, size_t n_shards) {
    sl__bigv v;
    memset(&v, 0, sizeof v);
    if (n_shards) v = shards[0]->big;
    return v;
}

/* ---- 2d. UTF-8 (the reference checks all N header bytes, padding included) ---- */

/* Length of the longest valid prefix (Rust's valid_up_to): overlongs, surrogates, code points
   above U+10FFFF and truncated sequences are invalid. */
static size_t sl__utf8_valid_up_to(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c;
#if defined(SL__X86_64)
        if (i + 32 <= n) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
            if (!_mm_movemask_epi8(_mm_or_si128(a, b))) { i += 32; continue; }
        }
#else
        if (i + 16 <= n) {
            uint64_t a, b;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            if (!((a | b) & 0x8080808080808080ULL)) { i += 16; continue; }
        }
#endif
        c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c < 0xC2) return i;
        if (c < 0xE0) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return i;
            i += 2;
        } else if (c < 0xF0) {
            unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (i + 1 >= n || s[i + 1] < lo || s[i + 1] > hi) return i;
            if (i + 2 >= n || (s[i + 2] & 0xC0) != 0x80) return i;
            i += 3;
        } else if (c < 0xF5) {
            unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (i + 1 >= n || s[i + 1] < lo || s[i + 1] > hi) return i;
            if (i + 2 >= n || (s[i + 2] & 0xC0) != 0x80) return i;
            if (i + 3 >= n || (s[i + 3] & 0xC0) != 0x80) return i;
            i += 4;
        } else {
            return i;
        }
    }
    return n;
}

/* ---- 2e. the JSON header parser ----
   One pass, no DOM, strings decoded in place (decoding only shrinks them), so names point into
   the header buffer. The dialect is serde_json's as the reference uses it: see
   docs/validation.md. Errors carry the file offset of the offending byte. */

#define SL__MAX_NESTING 127   /* serde_json: remaining_depth 128, the 128th container fails */
#define SL__PAD 32            /* zero bytes after the header: word reads and a 0 stopper */

/* The parser writes tensors straight into the public array, in header order. Until the
   array is final, two fields carry parse state: numel holds the index of the first dimension
   in the dims array, and index is 1 when the name had a \u0000. */
typedef safeload_tensor sl__entry;

typedef struct sl__jp {
    unsigned char *p, *start, *end;
    const char *path;
    safeload_error *err;
    const safeload_allocator *alloc;
    sl__bigv *big;                      /* not NULL: ents and dims are big blocks */
    sl__entry *ents;  size_t n_ents, cap_ents;
    uint64_t *dims;   size_t n_dims, cap_dims;
    safeload_kv *meta; size_t n_meta, cap_meta;
    uint32_t *meta_pos;
    int seen_meta, has_meta;
    const char *cur;  size_t cur_len;   /* the tensor or metadata key being parsed, for errors */
    const char *cur_in;                 /* NULL, or " in <where>" when cur is a metadata key: the
                                           messages about it end so */
    /* a part of a split header (sl__parse_split): start is header byte `base`; split: the
       part ends where the next one's first key starts (landed: it got there, at the top
       level); no_meta: a __metadata__ key fails the part (the whole header then parses on
       one thread, which words every error) */
    uint64_t base;
    int split, landed, no_meta;
    int fixed;                          /* ents and dims may not move (split part 0: the
                                           other parts write into the same arrays) */
} sl__jp;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static safeload_result sl__jfail(sl__jp *j, const unsigned char *at, const char *fmt, ...) {
    va_list ap;
    uint64_t off = 8 + j->base + (uint64_t)((at > j->end ? j->end : at) - j->start);
    char msg[200];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sl__fail(j->err, SAFELOAD_INVALID_JSON, j->path, off, j->cur, j->cur_len, "%s%s", msg,
                    j->cur && j->cur_in ? j->cur_in : "");
}

/* What a byte we did not expect is, for messages. */
static safeload_result sl__junexpected(sl__jp *j, const unsigned char *at, const char *want) {
    if (at >= j->end) return sl__jfail(j, at, "EOF while parsing: expected %s", want);
    if (*at >= 0x20 && *at < 0x7F)
        return sl__jfail(j, at, "expected %s, found `%c`", want, *at);
    return sl__jfail(j, at, "expected %s, found byte 0x%02X", want, *at);
}

#define SL__WS(p) while (*(p) == ' ' || *(p) == '\n' || *(p) == '\r' || *(p) == '\t') (p)++

static int sl__hex4(const unsigned char *p, unsigned *out) {
    unsigned v = 0, i, c;
    for (i = 0; i < 4; i++) {
        c = p[i];
        if (c >= '0' && c <= '9') c -= '0';
        else if (c >= 'a' && c <= 'f') c -= 'a' - 10;
        else if (c >= 'A' && c <= 'F') c -= 'A' - 10;
        else return 0;
        v = v << 4 | c;
    }
    *out = v;
    return 1;
}

/* First byte at or after p that is '"', '\\', < 0x20 or >= 0x80 (the start of a multibyte
   sequence, checked as it is met). The zero padding after the header stops the scan; SSE2 is
   baseline on x86-64, elsewhere 8 bytes at a time. */
#if defined(SL__X86_64)
SL__INLINE unsigned char *sl__scan_string(unsigned char *p) {
    const __m128i q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\'), c = _mm_set1_epi8(0x1F);
    for (;;) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)),
                                   _mm_cmpeq_epi8(_mm_min_epu8(x, c), x));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, x));   /* x: bytes >= 0x80 */
        if (m) {
#  if defined(_MSC_VER) && !defined(__clang__)
            unsigned long i;
            _BitScanForward(&i, m);
            return p + i;
#  else
            return p + __builtin_ctz(m);
#  endif
        }
        p += 16;
    }
}
#else
SL__INLINE unsigned char *sl__scan_string(unsigned char *p) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    for (;;) {
        uint64_t w, q, b;
        memcpy(&w, p, 8);
        q = w ^ (ones * '"');
        b = w ^ (ones * '\\');
        if ((((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high) break;
        p += 8;
    }
    while (*p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80) p++;
    return p;
}
#endif

/* The UTF-8 sequence whose lead byte (>= 0x80) is at p: its length, or 0 when it is invalid
   (overlong, surrogate, above U+10FFFF, truncated, or running past end). The same rules as
   sl__utf8_valid_up_to, one sequence at a time. */
SL__INLINE unsigned sl__utf8_seq(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0], lo = 0x80, hi = 0xBF, n, i;
    if (c < 0xC2 || c > 0xF4) return 0;
    if (c < 0xE0) n = 2;
    else if (c < 0xF0) { n = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else { n = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi) return 0;
    for (i = 2; i < n; i++) if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

static safeload_result sl__jutf8_fail(sl__jp *j, const unsigned char *at) {
    uint64_t off = 8 + (uint64_t)(at - j->start);
    return sl__fail(j->err, SAFELOAD_INVALID_UTF8, j->path, off, j->cur, j->cur_len,
                    "invalid UTF-8 sequence at byte %llu%s", (sl__ull)off,
                    j->cur && j->cur_in ? j->cur_in : "");
}

/* j->p is just after an opening quote. Decodes in place, NUL-terminates, leaves j->p after the
   closing quote. */
static safeload_result sl__jstring(sl__jp *j, char **out, size_t *len, int *has_nul) {
    unsigned char *p = j->p, *w, *s = j->p;
    unsigned k;
    for (;;) {
        p = sl__scan_string(p);
        if (*p < 0x80) break;
        if (!(k = sl__utf8_seq(p, j->end))) return sl__jutf8_fail(j, p);
        p += k;
    }
    if (*p == '"' && p < j->end) {
        *out = (char *)s; *len = (size_t)(p - s);
        *p = 0;
        j->p = p + 1;
        return SAFELOAD_OK;
    }
    /* From here the string is decoded in place, so the write point w trails the read point p,
       and the bytes between them may start inside a multibyte sequence. A failure blanks them,
       so that the whole-header UTF-8 check after a JSON error (the reference checks UTF-8
       first) sees the header as valid as it was. The error is worded before the blanking. */
#define SL__JSTR_FAIL(call) \
    do { safeload_result r_ = (call); memset(w, ' ', (size_t)(p - w)); return r_; } while (0)
    w = p;
    for (;;) {
        unsigned c = *p;
        if (c == '"' && p < j->end) break;
        if (c >= 0x80) {
            if (!(k = sl__utf8_seq(p, j->end))) SL__JSTR_FAIL(sl__jutf8_fail(j, p));
            while (k--) *w++ = *p++;
            continue;
        }
        if (c >= 0x20 && c != '\\') { *w++ = *p++; continue; }
        if (p >= j->end) SL__JSTR_FAIL(sl__jfail(j, p, "EOF while parsing a string"));
        if (c < 0x20)
            SL__JSTR_FAIL(sl__jfail(j, p, "control character (\\u0000-\\u001F) found while "
                                    "parsing a string"));
        /* an escape */
        switch (p[1]) {
        case '"': *w++ = '"'; p += 2; break;
        case '\\': *w++ = '\\'; p += 2; break;
        case '/': *w++ = '/'; p += 2; break;
        case 'b': *w++ = '\b'; p += 2; break;
        case 'f': *w++ = '\f'; p += 2; break;
        case 'n': *w++ = '\n'; p += 2; break;
        case 'r': *w++ = '\r'; p += 2; break;
        case 't': *w++ = '\t'; p += 2; break;
        case 'u': {
            unsigned cp, lo;
            if (!sl__hex4(p + 2, &cp)) SL__JSTR_FAIL(sl__jfail(j, p, "invalid escape"));
            p += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                SL__JSTR_FAIL(sl__jfail(j, p - 6, "lone trailing surrogate in hex escape"));
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (p[0] != '\\' || p[1] != 'u' || !sl__hex4(p + 2, &lo) || lo < 0xDC00 ||
                    lo > 0xDFFF)
                    SL__JSTR_FAIL(sl__jfail(j, p - 6, "lone leading surrogate in hex escape"));
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) *has_nul = 1;
            if (cp < 0x80) *w++ = (unsigned char)cp;
            else if (cp < 0x800) {
                *w++ = (unsigned char)(0xC0 | cp >> 6);
                *w++ = (unsigned char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *w++ = (unsigned char)(0xE0 | cp >> 12);
                *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (unsigned char)(0x80 | (cp & 0x3F));
            } else {
                *w++ = (unsigned char)(0xF0 | cp >> 18);
                *w++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (unsigned char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            if (p + 1 >= j->end) SL__JSTR_FAIL(sl__jfail(j, p + 1, "EOF while parsing a string"));
            SL__JSTR_FAIL(sl__jfail(j, p, "invalid escape"));
        }
    }
    *out = (char *)s; *len = (size_t)(w - s);
    /* decoding shrank the string: blank what is left of the original bytes, which may now
       start inside a multibyte sequence, so a later whole-header UTF-8 check sees them valid */
    *w = 0;
    if (p > w + 1) memset(w + 1, ' ', (size_t)(p - (w + 1)));
    j->p = p + 1;
    return SAFELOAD_OK;
#undef SL__JSTR_FAIL
}

#define SL__ISDIGIT(c) ((unsigned)((c) - '0') < 10u)

/* Numbers in fields the reference does not read (unknown tensor fields, at any depth) still go
   through serde_json's number parser, and the reference builds serde_json without its exact
   float feature. So what passes is decided by that parser, not by JSON or by correct rounding:
   - the significand keeps the leading digits while they fit in 64 bits; the integer digits
     after that raise the exponent, the fraction digits after that are dropped;
   - "at least one digit after the point" counts the fraction digits the significand took (a
     fraction digit that overflows it ends the check): 18446744073709551616. is rejected and
     18446744073709551616.0 passes. (serde_json before 1.0.89 tested the exponent instead,
     which let the first through and stopped the second.)
   - the value is (double)significand * 10^exponent, one rounded multiply with the double
     nearest 10^exponent, and an infinite product is "number out of range": so
     1.7976931348623158e308 is rejected although it rounds to the largest double;
   - an exponent beyond 308, or past 2^31 - 1 with a '+' or no sign, is out of range unless the
     significand is 0; negative exponents never fail. */
static const uint64_t sl__pow10_bits[20] = {    /* the doubles nearest 10^289 .. 10^308 */
    0x7BF06B0BB1FB384CULL, 0x7C2485CE9E7A065FULL, 0x7C59A742461887F6ULL, 0x7C9008896BCF54FAULL,
    0x7CC40AABC6C32A38ULL, 0x7CF90D56B873F4C7ULL, 0x7D2F50AC6690F1F8ULL, 0x7D63926BC01A973BULL,
    0x7D987706B0213D0AULL, 0x7DCE94C85C298C4CULL, 0x7E031CFD3999F7B0ULL, 0x7E37E43C8800759CULL,
    0x7E6DDD4BAA009303ULL, 0x7EA2AA4F4A405BE2ULL, 0x7ED754E31CD072DAULL, 0x7F0D2A1BE4048F90ULL,
    0x7F423A516E82D9BAULL, 0x7F76C8E5CA239029ULL, 0x7FAC7B1F3CAC7433ULL, 0x7FE1CCF385EBC8A0ULL
};

/* the 128-bit product of two 64-bit numbers, from 32-bit limbs (no __int128 in C99) */
static void sl__mul128(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
    uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    *lo = (ll & 0xFFFFFFFFu) | (mid << 32);
    *hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* Does (double)sig * (the double nearest 10^e) round to infinity? Exactly, in integers, so
   the caller's FP environment plays no part. Only 289 <= e <= 308 can: below, even
   2^64 * 10^288 is under 2^1024. Infinity iff the exact product of the two doubles reaches
   the midpoint 2^1024 - 2^970 between the largest double and 2^1024 (its tie rounds up). */
static int sl__serde_overflows(uint64_t sig, int e) {
    uint64_t pb = sl__pow10_bits[e - 289], ma = sig, mb, hi, lo, rhi, rlo;
    int ea = 0, eb, t, n = 0, sh;
    while (n < 64 && (sig >> n)) n++;              /* sig's bit length */
    if (n > 53) {                                  /* round sig to 53 bits, ties to even */
        uint64_t rem, half;
        sh = n - 53;
        rem = sig & ((1ULL << sh) - 1);
        half = 1ULL << (sh - 1);
        ma = sig >> sh;
        if (rem > half || (rem == half && (ma & 1))) ma++;
        if (ma >> 53) { ma >>= 1; sh++; }
        ea = sh;
    }
    mb = (pb & ((1ULL << 52) - 1)) | (1ULL << 52);
    eb = (int)((pb >> 52) & 0x7FF) - 1075;
    sl__mul128(ma, mb, &hi, &lo);                  /* P = ma * mb < 2^106 */
    /* P * 2^t >= 2^54 - 1 with t = ea + eb - 970 */
    t = ea + eb - 970;
    if (t >= 0) {
        if (t >= 54) return 1;
        /* P * 2^t needs no more than 106 + 53 bits; compare P >= ceil((2^54-1) / 2^t) */
        return hi != 0 || lo >= (((1ULL << 54) - 1) + ((1ULL << t) - 1)) >> t;
    }
    t = -t;                                        /* P >= (2^54 - 1) * 2^t */
    if (t >= 74) return 0;                         /* the right side is >= 2^127 > P */
    rhi = t >= 64 ? ((1ULL << 54) - 1) << (t - 64) : t > 10 ? ((1ULL << 54) - 1) >> (64 - t) : 0;
    rlo = t >= 64 ? 0 : ((1ULL << 54) - 1) << t;
    return hi > rhi || (hi == rhi && lo >= rlo);
}

/* Any JSON number in a field we otherwise ignore, with serde_json's rules (above). */
static safeload_result sl__jnumber_any(sl__jp *j) {
    unsigned char *p = j->p, *s = p;
    uint64_t sig = 0;
    int64_t ex = 0, e = 0;
    int full = 0, eneg = 0;
    unsigned d;
    if (*p == '-') p++;
    if (*p == '0') { p++; if (SL__ISDIGIT(*p)) return sl__jfail(j, p, "invalid number"); }
    else if (!SL__ISDIGIT(*p)) return sl__jfail(j, p, "invalid number");
    for (; SL__ISDIGIT(*p); p++) {
        d = (unsigned)(*p - '0');
        if (!full && sig <= (UINT64_MAX - d) / 10) sig = sig * 10 + d;
        else { full = 1; ex++; }
    }
    if (*p != '.' && *p != 'e' && *p != 'E' && !full) {      /* an integer: never fails */
        j->p = p;
        return SAFELOAD_OK;
    }
    if (*p == '.') {
        int dropped = 0, kept = 0;
        for (p++; SL__ISDIGIT(*p); p++) {
            d = (unsigned)(*p - '0');
            if (dropped || sig > (UINT64_MAX - d) / 10) dropped = 1;
            else { sig = sig * 10 + d; ex--; kept = 1; }
        }
        if (!dropped && !kept) return sl__jfail(j, p, "invalid number");
    }
    if (*p == 'e' || *p == 'E') {
        int over = 0;
        p++;
        if (*p == '+' || *p == '-') { eneg = *p == '-'; p++; }
        if (!SL__ISDIGIT(*p)) return sl__jfail(j, p, "invalid number");
        for (; SL__ISDIGIT(*p); p++) {
            d = (unsigned)(*p - '0');
            if (over || e > (INT32_MAX - (int64_t)d) / 10) over = 1;
            else e = e * 10 + d;
        }
        if (over) {
            j->p = p;
            return sig != 0 && !eneg ? sl__jfail(j, s, "number out of range") : SAFELOAD_OK;
        }
        ex = eneg ? ex - e : ex + e;   /* serde saturates this at 32 bits: the same
                                          verdicts below, so no clamp */
    }
    j->p = p;
    if (sig == 0 || ex < 289) return SAFELOAD_OK;
    if (ex > 308 || sl__serde_overflows(sig, (int)ex)) return sl__jfail(j, s, "number out of range");
    return SAFELOAD_OK;
}

/* A non-negative integer that fits in 64 bits (shape dims, data_offsets). */
static safeload_result sl__ju64(sl__jp *j, uint64_t *out) {
    unsigned char *p = j->p, *s = p;
    uint64_t v = 0;
    if (*p == '-') {
        if (SL__ISDIGIT(p[1]))
            return sl__jfail(j, s, "invalid value: negative integer, expected usize");
        return sl__jfail(j, s, "invalid number");
    }
    if (!SL__ISDIGIT(*p)) {
        if (*p == '"') return sl__jfail(j, s, "invalid type: string, expected usize");
        return sl__junexpected(j, p, "an integer");
    }
    if (*p == '0') {
        p++;
        if (SL__ISDIGIT(*p)) return sl__jfail(j, p, "invalid number");
    } else {
        /* 19 digits always fit; a 20th needs a check; 21 never fit */
        while (SL__ISDIGIT(*p) && p - s < 19) v = v * 10 + (unsigned)(*p++ - '0');
        if (SL__ISDIGIT(*p)) {
            unsigned d = (unsigned)(*p++ - '0');
            if (v > (UINT64_MAX - d) / 10 || SL__ISDIGIT(*p))
                return sl__jfail(j, s, "invalid type: floating point (integer >= 2^64), "
                                 "expected usize");
            v = v * 10 + d;
        }
    }
    if (*p == '.' || *p == 'e' || *p == 'E')
        return sl__jfail(j, s, "invalid type: floating point, expected usize");
    *out = v;
    j->p = p;
    return SAFELOAD_OK;
}

/* The common case inline: 1-19 digits (no leading zero) ended by a byte that cannot continue a
   number. Anything else takes the careful path above, which also words the errors. */
SL__INLINE safeload_result sl__ju64_fast(sl__jp *j, uint64_t *out) {
    unsigned char *p = j->p;
    uint64_t v;
    if (*p >= '1' && *p <= '9') {
        v = (uint64_t)(*p++ - '0');
        while (SL__ISDIGIT(*p) && p - j->p < 19) v = v * 10 + (uint64_t)(*p++ - '0');
        if (!SL__ISDIGIT(*p) && *p != '.' && (*p | 0x20) != 'e') {
            *out = v;
            j->p = p;
            return SAFELOAD_OK;
        }
    } else if (*p == '0' && !SL__ISDIGIT(p[1]) && p[1] != '.' && (p[1] | 0x20) != 'e') {
        *out = 0;
        j->p = p + 1;
        return SAFELOAD_OK;
    }
    return sl__ju64(j, out);
}

/* Do the 8 bytes at p equal the 8 characters of lit? One word compare (the header's zero
   padding keeps the read inside the buffer); no masks, which would cost a stack round trip. */
SL__INLINE int sl__lit8(const unsigned char *p, const char *lit) {
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, lit, 8);
    return a == b;
}

static safeload_result sl__jskip(sl__jp *j, int depth);

static safeload_result sl__jliteral(sl__jp *j, const char *lit, size_t n) {
    if (memcmp(j->p, lit, n) != 0) {
        size_t i = 0;
        while (i < n && j->p[i] == (unsigned char)lit[i]) i++;
        return sl__jfail(j, j->p + i, "expected ident `%s`", lit);
    }
    j->p += n;
    return SAFELOAD_OK;
}

/* Skip any value (unknown fields), fully validated. depth = containers open around it. */
static safeload_result sl__jskip(sl__jp *j, int depth) {
    safeload_result r;
    unsigned char *p = j->p;
    char *s;
    size_t n;
    int nul = 0;
    switch (*p) {
    case '{':
    case '[': {
        unsigned char close = *p == '{' ? '}' : ']';
        if (depth + 1 > SL__MAX_NESTING) return sl__jfail(j, p, "recursion limit exceeded");
        p++;
        SL__WS(p);
        if (*p == close) { j->p = p + 1; return SAFELOAD_OK; }
        for (;;) {
            if (close == '}') {
                if (*p != '"') {
                    if (p >= j->end) return sl__jfail(j, p, "EOF while parsing an object");
                    return sl__jfail(j, p, "key must be a string");
                }
                j->p = p + 1;
                if ((r = sl__jstring(j, &s, &n, &nul)) != SAFELOAD_OK) return r;
                p = j->p;
                SL__WS(p);
                if (*p != ':') return sl__junexpected(j, p, "`:`");
                p++;
                SL__WS(p);
            }
            j->p = p;
            if ((r = sl__jskip(j, depth + 1)) != SAFELOAD_OK) return r;
            p = j->p;
            SL__WS(p);
            if (*p == ',') {
                p++;
                SL__WS(p);
                if (*p == close) return sl__jfail(j, p, "trailing comma");
                continue;
            }
            if (*p == close) { j->p = p + 1; return SAFELOAD_OK; }
            return sl__junexpected(j, p, close == '}' ? "`,` or `}`" : "`,` or `]`");
        }
    }
    case '"':
        j->p = p + 1;
        return sl__jstring(j, &s, &n, &nul);
    case 't': return sl__jliteral(j, "true", 4);
    case 'f': return sl__jliteral(j, "false", 5);
    case 'n': return sl__jliteral(j, "null", 4);
    default:
        if (*p == '-' || SL__ISDIGIT(*p)) return sl__jnumber_any(j);
        return sl__junexpected(j, p, "a value");
    }
}

/* What kind of JSON value starts at p, for "invalid type" messages. */
static const char *sl__jkind(unsigned char c) {
    switch (c) {
    case '{': return "map";
    case '[': return "sequence";
    case '"': return "string";
    case 't': case 'f': return "boolean";
    case 'n': return "null";
    default: return (c == '-' || SL__ISDIGIT(c)) ? "number" : "value";
    }
}

static int sl__grow(const safeload_allocator *a, void **arr, size_t *cap, size_t need,
                    size_t elem) {
    size_t nc;
    void *q;
    if (need <= *cap) return 1;
    nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem) return 0;
        nc *= 2;
    }
    q = sl__realloc(a, *arr, *cap * elem, nc * elem);
    if (!q) return 0;
    *arr = q;
    *cap = nc;
    return 1;
}

/* sl__grow for an array that is a big block (big: the verdict it follows; sl__big_free frees
   it), or the allocator's (big NULL) */
static int sl__grow_big(const safeload_allocator *a, sl__bigv *big, void **arr, size_t *cap,
                        size_t need, size_t elem) {
    size_t nc;
    void *q;
    if (!big) return sl__grow(a, arr, cap, need, elem);
    if (need <= *cap) return 1;
    nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem) return 0;
        nc *= 2;
    }
    q = sl__big_alloc(a, nc * elem, big, 0, NULL);
    if (!q) return 0;
    if (*cap) memcpy(q, *arr, *cap * elem);
    sl__big_free(a, *arr);
    *arr = q;
    *cap = nc;
    return 1;
}

/* Room in j's entries or dims for element n (the count so far): grown as needed, unless j's
   arrays are fixed (a split's part, whose stretch the others' sit beside) */
SL__INLINE int sl__jroom(sl__jp *j, void **arr, size_t *cap, size_t n, size_t elem) {
    return n < *cap || (!j->fixed && sl__grow_big(j->alloc, j->big, arr, cap, n + 1, elem));
}

/* A plain number as writers print it: 1-19 digits, no leading zero (or "0" alone), then a
   byte that cannot continue a number. 0 when it is anything else. */
SL__INLINE int sl__jnum_plain(unsigned char **pp, uint64_t *out) {
    unsigned char *p = *pp, *s = p;
    uint64_t v = 0;
    if (*p == '0') p++;
    else while (SL__ISDIGIT(*p) && p - s < 19) v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == s || SL__ISDIGIT(*p) || *p == '.' || (*p | 0x20) == 'e') return 0;
    *out = v;
    *pp = p;
    return 1;
}

/* The entry exactly as the reference writer (and nearly every other) prints it:
   {"dtype":"D","shape":[n,...],"data_offsets":[b,e]}
   Returns 1 with the entry filled in, or 0 with nothing changed, and the general parser below
   reads the entry instead (and words any error). Most headers never leave this path. */
static int sl__jtensor_fast(sl__jp *j, sl__entry *e) {
    unsigned char *p = j->p, *q;
    size_t dims0 = j->n_dims;
    safeload_dtype d;
    uint64_t b0, b1, v;
    if (!sl__lit8(p, "{\"dtype\"") || p[8] != ':' || p[9] != '"') return 0;
    p += 10;
    for (q = p; q - p < 12 && ((*q >= 'A' && *q <= 'Z') || SL__ISDIGIT(*q) || *q == '_'); q++) {}
    if (*q != '"' || (d = safeload_dtype_from_name((const char *)p, (size_t)(q - p))) ==
        SAFELOAD_DTYPE_NONE) return 0;
    p = q + 1;
    if (!sl__lit8(p, ",\"shape\"") || p[8] != ':' || p[9] != '[') return 0;
    p += 10;
    e->numel = j->n_dims;
    e->rank = 0;
    if (*p != ']') for (;;) {
        if (!sl__jnum_plain(&p, &v) || e->rank == UINT32_MAX) goto undo;
        if (!sl__jroom(j, (void **)&j->dims, &j->cap_dims, j->n_dims, sizeof(uint64_t)))
            goto undo;
        j->dims[j->n_dims++] = v;
        e->rank++;
        if (*p == ']') break;
        if (*p++ != ',') goto undo;
    }
    p++;
    if (!sl__lit8(p, ",\"data_o") || !sl__lit8(p + 8, "ffsets\":") || p[16] != '[') goto undo;
    p += 17;
    if (!sl__jnum_plain(&p, &b0) || *p++ != ',' || !sl__jnum_plain(&p, &b1) || p[0] != ']' ||
        p[1] != '}') goto undo;
    e->dtype = d;
    e->begin = b0;
    e->end = b1;
    j->p = p + 2;
    return 1;
undo:
    j->n_dims = dims0;
    return 0;
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e], ...unknown fields} */
static safeload_result sl__jtensor(sl__jp *j, sl__entry *e) {
    safeload_result r;
    unsigned char *p = j->p;
    int seen_dtype = 0, seen_shape = 0, seen_offsets = 0;
    if (*p != '{') {
        if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
        return sl__jfail(j, p, "invalid type: %s, expected struct TensorInfo (an object)",
                         sl__jkind(*p));
    }
    p++;
    SL__WS(p);
    if (*p != '}') for (;;) {
        char *key;
        size_t klen;
        int nul = 0;
        unsigned char *kp = p;
        int field = 0;  /* 1 dtype, 2 shape, 3 data_offsets, 0 anything else */
        /* the three fields as writers spell them (name, quote, colon), without decoding a
           string; any other spelling takes the general path below */
        if (sl__lit8(p, "\"dtype\":")) { field = 1; p += 7; }
        else if (sl__lit8(p, "\"shape\":")) { field = 2; p += 7; }
        else if (sl__lit8(p, "\"data_of") && sl__lit8(p + 7, "ffsets\":")) {
            field = 3;
            p += 14;
        }
        else {
            if (*p != '"') {
                if (p >= j->end) return sl__jfail(j, p, "EOF while parsing an object");
                return sl__jfail(j, p, "key must be a string");
            }
            j->p = p + 1;
            if ((r = sl__jstring(j, &key, &klen, &nul)) != SAFELOAD_OK) return r;
            p = j->p;
            if (klen == 5 && memcmp(key, "dtype", 5) == 0) field = 1;
            else if (klen == 5 && memcmp(key, "shape", 5) == 0) field = 2;
            else if (klen == 12 && memcmp(key, "data_offsets", 12) == 0) field = 3;
        }
        SL__WS(p);
        if (*p != ':') return sl__junexpected(j, p, "`:`");
        p++;
        SL__WS(p);
        j->p = p;
        if (field == 1) {
            char *dt;
            size_t dlen;
            safeload_dtype d;
            if (seen_dtype) return sl__jfail(j, kp, "duplicate field `dtype`");
            seen_dtype = 1;
            if (*p != '"') {
                if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
                return sl__jfail(j, p, "invalid type: %s, expected a dtype string",
                                 sl__jkind(*p));
            }
            j->p = p + 1;
            if ((r = sl__jstring(j, &dt, &dlen, &nul)) != SAFELOAD_OK) return r;
            d = safeload_dtype_from_name(dt, dlen);
            if (d == SAFELOAD_DTYPE_NONE) {
                char shown[4 * 40 + 1];     /* control bytes as \xHH: "U8\x00" is not "U8" */
                size_t w = 0, k;
                for (k = 0; k < dlen && k < 40; k++) {
                    unsigned char c = (unsigned char)dt[k];
                    if (c < 0x20 || c == 0x7F) {
                        shown[w++] = '\\'; shown[w++] = 'x';
                        shown[w++] = "0123456789ABCDEF"[c >> 4];
                        shown[w++] = "0123456789ABCDEF"[c & 15];
                    } else {
                        shown[w++] = (char)c;
                    }
                }
                shown[w] = 0;
                return sl__jfail(j, p, "unknown variant `%s`, expected one of `BOOL`, `F4`, "
                                 "`F6_E2M3`, ... `U64`", shown);
            }
            e->dtype = d;
        } else if (field == 2) {
            if (seen_shape) return sl__jfail(j, kp, "duplicate field `shape`");
            seen_shape = 1;
            if (*p != '[') {
                if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
                return sl__jfail(j, p, "invalid type: %s, expected a sequence", sl__jkind(*p));
            }
            p++;
            SL__WS(p);
            e->numel = j->n_dims;
            e->rank = 0;
            if (*p == ']') p++;
            else for (;;) {
                uint64_t v = 0;                 /* set by the call; gcc -O3 cannot tell */
                j->p = p;
                if ((r = sl__ju64_fast(j, &v)) != SAFELOAD_OK) return r;
                if (!sl__jroom(j, (void **)&j->dims, &j->cap_dims, j->n_dims, sizeof(uint64_t)))
                    return SL__OOM(j->err, j->path);
                if (e->rank == UINT32_MAX) return sl__jfail(j, p, "too many dimensions");
                j->dims[j->n_dims++] = v;
                e->rank++;
                p = j->p;
                SL__WS(p);
                if (*p == ',') {
                    p++;
                    SL__WS(p);
                    if (*p == ']') return sl__jfail(j, p, "trailing comma");
                    continue;
                }
                if (*p == ']') { p++; break; }
                return sl__junexpected(j, p, "`,` or `]`");
            }
            j->p = p;
        } else if (field == 3) {
            /* two scalars, not an array: a 16-byte reload of two 8-byte stores stalls */
            uint64_t b0 = 0, b1 = 0;
            if (seen_offsets) return sl__jfail(j, kp, "duplicate field `data_offsets`");
            seen_offsets = 1;
            if (*p != '[') {
                if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
                return sl__jfail(j, p, "invalid type: %s, expected a tuple of size 2",
                                 sl__jkind(*p));
            }
            p++;
            SL__WS(p);
            if (*p == ']') return sl__jfail(j, p, "invalid length 0, expected a tuple of size 2");
            j->p = p;
            if ((r = sl__ju64_fast(j, &b0)) != SAFELOAD_OK) return r;
            p = j->p;
            SL__WS(p);
            if (*p == ']') return sl__jfail(j, p, "invalid length 1, expected a tuple of size 2");
            if (*p != ',') return sl__junexpected(j, p, "`,` or `]`");
            p++;
            SL__WS(p);
            j->p = p;
            if ((r = sl__ju64_fast(j, &b1)) != SAFELOAD_OK) return r;
            p = j->p;
            SL__WS(p);
            if (*p == ',') return sl__jfail(j, p, "invalid length 3, expected 2 elements in "
                                            "sequence");
            if (*p != ']') return sl__junexpected(j, p, "`]`");
            j->p = p + 1;
            e->begin = b0;
            e->end = b1;
        } else {
            if ((r = sl__jskip(j, 2)) != SAFELOAD_OK) return r;
        }
        p = j->p;
        SL__WS(p);
        if (*p == ',') {
            p++;
            SL__WS(p);
            if (*p == '}') return sl__jfail(j, p, "trailing comma");
            continue;
        }
        if (*p == '}') break;
        return sl__junexpected(j, p, "`,` or `}`");
    }
    if (!seen_dtype) return sl__jfail(j, p, "missing field `dtype`");
    if (!seen_shape) return sl__jfail(j, p, "missing field `shape`");
    if (!seen_offsets) return sl__jfail(j, p, "missing field `data_offsets`");
    j->p = p + 1;
    return SAFELOAD_OK;
}

/* "__metadata__": null | {"key": "value", ...} */
static safeload_result sl__jmetadata(sl__jp *j, unsigned char *kp) {
    safeload_result r;
    unsigned char *p = j->p;
    if (j->seen_meta) return sl__jfail(j, kp, "duplicate field `__metadata__`");
    j->seen_meta = 1;
    if (*p == 'n') {
        if ((r = sl__jliteral(j, "null", 4)) != SAFELOAD_OK) return r;
        return SAFELOAD_OK;
    }
    if (*p != '{') {
        if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
        return sl__jfail(j, p, "invalid type: %s, expected a map", sl__jkind(*p));
    }
    j->has_meta = 1;
    p++;
    SL__WS(p);
    if (*p == '}') { j->p = p + 1; return SAFELOAD_OK; }
    for (;;) {
        safeload_kv kv;
        int nul = 0;
        char *k, *v;
        size_t kl, vl;
        unsigned char *kpos = p;
        j->cur = NULL;
        if (*p != '"') {
            if (p >= j->end) return sl__jfail(j, p, "EOF while parsing an object");
            return sl__jfail(j, p, "key must be a string");
        }
        j->p = p + 1;
        if ((r = sl__jstring(j, &k, &kl, &nul)) != SAFELOAD_OK) return r;
        j->cur = k;                     /* errors from here to the value's end name this key */
        j->cur_len = kl;
        j->cur_in = " in __metadata__";
        p = j->p;
        SL__WS(p);
        if (*p != ':') return sl__junexpected(j, p, "`:`");
        p++;
        SL__WS(p);
        if (*p != '"') {
            if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
            return sl__jfail(j, p, "invalid type: %s, expected a string", sl__jkind(*p));
        }
        j->p = p + 1;
        if ((r = sl__jstring(j, &v, &vl, &nul)) != SAFELOAD_OK) return r;
        j->cur = NULL;                  /* past the value: a fault from here on is no key's */
        if (j->n_meta == j->cap_meta) {
            size_t cap = j->cap_meta;
            if (!sl__grow(j->alloc, (void **)&j->meta, &j->cap_meta, j->n_meta + 1,
                          sizeof(safeload_kv)) ||
                !sl__grow(j->alloc, (void **)&j->meta_pos, &cap, j->n_meta + 1,
                          sizeof(uint32_t)))
                return SL__OOM(j->err, j->path);
        }
        kv.key = k; kv.key_len = kl; kv.value = v; kv.value_len = vl;
        j->meta[j->n_meta] = kv;
        j->meta_pos[j->n_meta] = (uint32_t)(kpos - j->start);
        j->n_meta++;
        p = j->p;
        SL__WS(p);
        if (*p == ',') {
            p++;
            SL__WS(p);
            if (*p == '}') return sl__jfail(j, p, "trailing comma");
            continue;
        }
        if (*p == '}') { j->p = p + 1; j->cur = NULL; return SAFELOAD_OK; }
        return sl__junexpected(j, p, "`,` or `}`");
    }
}

/* The top-level object's members from the first key at p, its closing brace and the
   whitespace after it. A split part (j->split) stops instead where its bytes end, when that is
   where a key would start. */
static safeload_result sl__jmembers(sl__jp *j, unsigned char *p) {
    safeload_result r;
    for (;;) {
        char *key;
        size_t klen;
        int nul = 0;
        unsigned char *kp = p;
        if (j->split && p == j->end) { j->landed = 1; return SAFELOAD_OK; }
        if (*p != '"') {
            if (p >= j->end) return sl__jfail(j, p, "EOF while parsing an object");
            return sl__jfail(j, p, "key must be a string");
        }
        j->p = p + 1;
        if ((r = sl__jstring(j, &key, &klen, &nul)) != SAFELOAD_OK) return r;
        p = j->p;
        SL__WS(p);
        if (*p != ':') return sl__junexpected(j, p, "`:`");
        p++;
        SL__WS(p);
        j->p = p;
        if (klen == 12 && memcmp(key, "__metadata__", 12) == 0) {
            if (j->no_meta) return sl__jfail(j, kp, "__metadata__ in a split part");
            if ((r = sl__jmetadata(j, kp)) != SAFELOAD_OK) return r;
        } else {
            sl__entry *e;
            if (!sl__jroom(j, (void **)&j->ents, &j->cap_ents, j->n_ents, sizeof(sl__entry)))
                return SL__OOM(j->err, j->path);
            if (j->n_ents >= (size_t)UINT32_MAX - 1) return sl__jfail(j, kp, "too many tensors");
            e = &j->ents[j->n_ents];
            memset(e, 0, sizeof *e);
            e->name = key;
            e->name_len = klen;
            e->index = (size_t)nul;
            e->header_offset = 8 + j->base + (uint64_t)(kp - j->start);
            j->cur = key;               /* errors inside the entry name the tensor */
            j->cur_len = klen;
            j->cur_in = NULL;
            if (!sl__jtensor_fast(j, e) && (r = sl__jtensor(j, e)) != SAFELOAD_OK) return r;
            j->cur = NULL;
            j->n_ents++;
        }
        p = j->p;
        SL__WS(p);
        if (*p == ',') {
            p++;
            SL__WS(p);
            if (*p == '}') return sl__jfail(j, p, "trailing comma");
            continue;
        }
        if (*p == '}') break;
        return sl__junexpected(j, p, "`,` or `}`");
    }
    p++;
    SL__WS(p);
    if (p < j->end) return sl__jfail(j, p, "trailing characters");
    return SAFELOAD_OK;
}

/* The whole header: optional whitespace, one object, optional whitespace. */
static safeload_result sl__jheader(sl__jp *j) {
    unsigned char *p = j->start;
    SL__WS(p);
    if (*p != '{') {
        if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
        if (*p == '[' || *p == '"' || *p == 't' || *p == 'f' || *p == 'n' || *p == '-' ||
            SL__ISDIGIT(*p))
            return sl__jfail(j, p, "invalid type: %s, expected struct HashMetadata",
                             sl__jkind(*p));
        return sl__junexpected(j, p, "a value");
    }
    p++;
    SL__WS(p);
    if (*p != '}') return sl__jmembers(j, p);
    p++;
    SL__WS(p);
    if (p < j->end) return sl__jfail(j, p, "trailing characters");
    return SAFELOAD_OK;
}

/* ---- 2f. validation: the reference's order, after sorting by (begin, end) ---- */

/* Stable merge sort of entry indices by (begin, end): ties keep header order, so the order
   (and the tensor an error names) is deterministic, unlike the reference's. */
static int sl__entry_less(const sl__entry *e, uint32_t a, uint32_t b) {
    return e[a].begin < e[b].begin || (e[a].begin == e[b].begin && e[a].end < e[b].end);
}

static void sl__sort_entries(const sl__entry *e, uint32_t *idx, uint32_t *tmp, size_t n) {
    size_t width, i;
    uint32_t *src = idx, *dst = tmp, *t;
    /* bottom-up; runs of 16 by insertion sort first */
    for (i = 0; i < n; i += 16) {
        size_t hi = SL__MIN(i + 16, n), k;
        for (k = i + 1; k < hi; k++) {
            uint32_t v = src[k];
            size_t m = k;
            while (m > i && sl__entry_less(e, v, src[m - 1])) { src[m] = src[m - 1]; m--; }
            src[m] = v;
        }
    }
    for (width = 16; width < n; width *= 2) {
        for (i = 0; i < n; i += 2 * width) {
            size_t lo = i, mid = SL__MIN(i + width, n), hi = SL__MIN(i + 2 * width, n);
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) dst[k++] = sl__entry_less(e, src[b], src[a]) ? src[b++]
                                                                                  : src[a++];
            while (a < mid) dst[k++] = src[a++];
            while (b < hi) dst[k++] = src[b++];
        }
        t = src; src = dst; dst = t;
    }
    if (src != idx) memcpy(idx, src, n * sizeof(uint32_t));
}

/* Walks the tensors in offset order with the reference's per-tensor checks. */
/* Also fills in each tensor's derived fields (shape pointer, numel, nbytes, file offset) as it
   goes: one pass over the array instead of two. */
static safeload_result sl__validate(sl__jp *j, const uint32_t *order, size_t n,
                                    uint64_t data_offset, uint64_t *data_len) {
    uint64_t start = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        sl__entry *e = &j->ents[order ? order[i] : i];
        uint64_t numel = 1, bits = sl__dtype_bits[e->dtype], nbytes, off = e->header_offset;
        uint64_t at = e->numel;             /* parse state: where the dims start */
        uint32_t k;
        if (e->begin != start || e->end < e->begin) {
            if (e->end < e->begin)
                return sl__fail(j->err, SAFELOAD_INVALID_OFFSET, j->path, off, e->name,
                                e->name_len, "data_offsets [%llu, %llu] end before they begin",
                                (sl__ull)e->begin, (sl__ull)e->end);
            return sl__fail(j->err, SAFELOAD_INVALID_OFFSET, j->path, off, e->name, e->name_len,
                            "data_offsets [%llu, %llu] %s: the data before it ends at %llu",
                            (sl__ull)e->begin, (sl__ull)e->end,
                            e->begin < start ? "overlap another tensor" : "leave a gap",
                            (sl__ull)start);
        }
        start = e->end;
        for (k = 0; k < e->rank; k++) {
            uint64_t d = j->dims[at + k];
            if (d && numel > UINT64_MAX / d)
                return sl__fail(j->err, SAFELOAD_OVERFLOW, j->path, off, e->name, e->name_len,
                                "the element count overflows 64 bits at dimension %u",
                                (unsigned)k);
            numel *= d;
        }
        if (numel > UINT64_MAX / bits)
            return sl__fail(j->err, SAFELOAD_OVERFLOW, j->path, off, e->name, e->name_len,
                            "%llu elements x %u bits overflows 64 bits", (sl__ull)numel,
                            (unsigned)bits);
        if ((numel * bits) % 8)
            return sl__fail(j->err, SAFELOAD_MISALIGNED_SUBBYTE, j->path, off, e->name,
                            e->name_len, "%llu elements x %u bits is not a whole number of "
                            "bytes", (sl__ull)numel, (unsigned)bits);
        nbytes = numel * bits / 8;
        if (e->end - e->begin != nbytes)
            return sl__fail(j->err, SAFELOAD_SIZE_MISMATCH, j->path, off, e->name, e->name_len,
                            "data_offsets [%llu, %llu] hold %llu bytes but %s x %llu elements "
                            "needs %llu", (sl__ull)e->begin, (sl__ull)e->end,
                            (sl__ull)(e->end - e->begin), sl__dtype_names[e->dtype],
                            (sl__ull)numel, (sl__ull)nbytes);
        e->shape = e->rank ? &j->dims[at] : NULL;
        e->numel = numel;
        e->nbytes = nbytes;
        e->file_offset = data_offset + e->begin;
    }
    *data_len = start;
    return SAFELOAD_OK;
}

/* ---- 2g. model.safetensors.index.json: {"metadata": {...}, "weight_map": {name: shard}} ----
   Same JSON dialect and in-place decoding as the header. metadata values that are strings or
   numbers (HF writes "total_size": 123) are kept as text; others are listed with a NULL value
   (so that a repeated key is seen whatever its values) and dropped after that check. */

typedef struct sl__index {
    safeload_kv *map;           /* key = tensor name, value = shard file name */
    size_t map_count, map_cap;
    uint32_t *map_pos;          /* index-file offset of each key, for errors */
    safeload_kv *meta;
    size_t meta_count, meta_cap;
    uint32_t *meta_pos;
    int has_map, has_meta;
} sl__index;

/* A shard name stays inside the index's directory and names a file: relative, no empty part,
   no "..", not ending in ".". Backslashes count as separators here on every platform (an
   index written on Windows): refusing more is safe. */
static int sl__safe_shard_name(const char *s, size_t n) {
    size_t i, start = 0;
    if (n == 0 || s[0] == '/' || s[0] == '\\' || (n > 1 && s[1] == ':')) return 0;
    for (i = 0; i <= n; i++) {
        if (i == n || s[i] == '/' || s[i] == '\\') {
            if (i - start == 2 && s[start] == '.' && s[start + 1] == '.') return 0;
            if (i == start) return 0;     /* empty component */
            if (i == n && i - start == 1 && s[start] == '.') return 0;   /* a directory */
            start = i + 1;
        }
    }
    return 1;
}

/* "./a.safetensors" and "a/./b" name the files "a.safetensors" and "a/b": drop the "./" parts
   so one shard is not opened twice under two spellings (and then seen to repeat its tensors).
   Only '/' separates on POSIX, where a backslash is part of a name; a final "." and names the
   safe-name check will refuse (an empty part, "..") are left as written, for its message. */
static size_t sl__drop_dot_parts(char *s, size_t n) {
    size_t i, start = 0, w = 0;
    if (!memchr(s, '/', n) && !(SL__WINDOWS_PATHS && memchr(s, '\\', n)))
        return n;                                       /* one part: nothing to drop */
    if (!sl__safe_shard_name(s, n)) return n;
#if SL__WINDOWS_PATHS
    /* there w\a and w/a name one file: one spelling, so one shard */
    for (i = 0; i < n; i++) if (s[i] == '\\') s[i] = '/';
#endif
    for (i = 0; i < n; i++) {
        if (s[i] != '/') continue;
        if (!(i - start == 1 && s[start] == '.')) {
            memmove(s + w, s + start, i + 1 - start);   /* the part and its separator */
            w += i + 1 - start;
        }
        start = i + 1;
    }
    memmove(s + w, s + start, n - start);               /* the last part, "." included */
    return w + (n - start);
}

static safeload_result sl__index_pairs(sl__jp *j, sl__index *ix, int is_map) {
    safeload_result r;
    unsigned char *p = j->p;
    safeload_kv **arr = is_map ? &ix->map : &ix->meta;        /* where the pairs go */
    size_t *cnt = is_map ? &ix->map_count : &ix->meta_count;
    size_t *cap = is_map ? &ix->map_cap : &ix->meta_cap;
    uint32_t **pos = is_map ? &ix->map_pos : &ix->meta_pos;
    if (*p != '{') {
        if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
        return sl__jfail(j, p, "invalid type: %s, expected a map", sl__jkind(*p));
    }
    p++;
    SL__WS(p);
    if (*p == '}') { j->p = p + 1; return SAFELOAD_OK; }
    for (;;) {
        safeload_kv kv;
        int nul = 0;
        char *k, *v = NULL;
        size_t kl, vl = 0;
        unsigned char *kp = p, *vp, c;
        j->cur = NULL;
        if (*p != '"') {
            if (p >= j->end) return sl__jfail(j, p, "EOF while parsing an object");
            return sl__jfail(j, p, "key must be a string");
        }
        j->p = p + 1;
        if ((r = sl__jstring(j, &k, &kl, &nul)) != SAFELOAD_OK) return r;
        if (is_map && nul) return sl__jfail(j, kp, "tensor name contains \\u0000");
        j->cur = k;                     /* errors in the value name the tensor or key */
        j->cur_len = kl;
        j->cur_in = is_map ? NULL : " in the index's metadata";
        nul = 0;
        p = j->p;
        SL__WS(p);
        if (*p != ':') return sl__junexpected(j, p, "`:`");
        p++;
        SL__WS(p);
        vp = p;
        j->p = p;
        if (*p == '"') {
            j->p = p + 1;
            if ((r = sl__jstring(j, &v, &vl, &nul)) != SAFELOAD_OK) return r;
            if (is_map && nul) return sl__jfail(j, vp, "shard file name contains \\u0000");
            if (is_map) vl = sl__drop_dot_parts(v, vl);
        } else if (is_map) {
            if (p >= j->end) return sl__jfail(j, p, "EOF while parsing a value");
            return sl__jfail(j, p, "invalid type: %s, expected a shard file name",
                             sl__jkind(*p));
        } else {
            if ((r = sl__jskip(j, 2)) != SAFELOAD_OK) return r;
            if (*vp == '-' || SL__ISDIGIT(*vp)) {   /* keep numbers as their text */
                v = (char *)vp;
                vl = (size_t)(j->p - vp);
            }
        }
        p = j->p;
        SL__WS(p);
        j->cur = NULL;          /* past the value: a fault from here on is no entry's */
        c = *p;                 /* read the delimiter first: the number's NUL may land on it */
        if (v) v[vl] = 0;
        kv.key = k; kv.key_len = kl; kv.value = v; kv.value_len = vl;
        if (*cnt == *cap) {
            size_t c2 = *cap;
            if (!sl__grow(j->alloc, (void **)arr, cap, *cnt + 1, sizeof(safeload_kv)) ||
                !sl__grow(j->alloc, (void **)pos, &c2, *cnt + 1, sizeof(uint32_t)))
                return SL__OOM(j->err, j->path);
        }
        (*pos)[*cnt] = (uint32_t)(kp - j->start);
        (*arr)[(*cnt)++] = kv;
        if (c == ',') {
            p++;
            SL__WS(p);
            if (*p == '}') return sl__jfail(j, p, "trailing comma");
            continue;
        }
        if (c == '}') { j->p = p + 1; j->cur = NULL; return SAFELOAD_OK; }
        *p = c;                 /* the byte the message names, not the number's NUL */
        return sl__junexpected(j, p, "`,` or `}`");
    }
}

/* text has len bytes plus SL__PAD zero bytes; decoded in place. Errors are INVALID_INDEX with
   the offset in the index file. */
static safeload_result sl__index_parse(unsigned char *text, size_t len, const char *path,
                                       const safeload_allocator *a, sl__index *ix,
                                       safeload_error *err) {
    sl__jp j;
    safeload_result r;
    unsigned char *p;
    size_t bad = sl__utf8_valid_up_to(text, len);
    memset(ix, 0, sizeof *ix);
    if (bad != len)
        return sl__fail(err, SAFELOAD_INVALID_INDEX, path, bad, NULL, 0,
                        "invalid UTF-8 at byte %llu", (sl__ull)bad);
    memset(&j, 0, sizeof j);
    j.start = text;
    j.end = text + len;
    j.path = path;
    j.err = err;
    j.alloc = a;
    p = text;
    SL__WS(p);
    if (*p != '{') { r = sl__junexpected(&j, p, "`{`"); goto fail; }
    p++;
    SL__WS(p);
    if (*p != '}') for (;;) {
        char *key;
        size_t kl;
        int nul = 0;
        unsigned char *kp = p;
        if (*p != '"') { r = sl__jfail(&j, p, "key must be a string"); goto fail; }
        j.p = p + 1;
        if ((r = sl__jstring(&j, &key, &kl, &nul)) != SAFELOAD_OK) goto fail;
        p = j.p;
        SL__WS(p);
        if (*p != ':') { r = sl__junexpected(&j, p, "`:`"); goto fail; }
        p++;
        SL__WS(p);
        j.p = p;
        if (kl == 10 && memcmp(key, "weight_map", 10) == 0) {
            if (ix->has_map) { r = sl__jfail(&j, kp, "duplicate field `weight_map`"); goto fail; }
            ix->has_map = 1;
            r = sl__index_pairs(&j, ix, 1);
        } else if (kl == 8 && memcmp(key, "metadata", 8) == 0) {
            /* twice would be merged here, or last-wins in Python: refuse, as for weight_map */
            if (ix->has_meta) { r = sl__jfail(&j, kp, "duplicate field `metadata`"); goto fail; }
            ix->has_meta = 1;
            r = *p == '{' ? sl__index_pairs(&j, ix, 0) : sl__jskip(&j, 1);
        } else {
            r = sl__jskip(&j, 1);
        }
        if (r != SAFELOAD_OK) goto fail;
        p = j.p;
        SL__WS(p);
        if (*p == ',') { p++; SL__WS(p); continue; }
        if (*p == '}') break;
        r = sl__junexpected(&j, p, "`,` or `}`");
        goto fail;
    }
    p++;
    SL__WS(p);
    if (p < j.end) { r = sl__jfail(&j, p, "trailing characters"); goto fail; }
    if (!ix->has_map) {
        r = sl__fail(err, SAFELOAD_INVALID_INDEX, path, 0, NULL, 0, "no \"weight_map\" object");
        goto fail;
    }
    return SAFELOAD_OK;
fail:
    if (err && r == SAFELOAD_INVALID_JSON) {
        err->code = SAFELOAD_INVALID_INDEX;
        if (err->offset != SAFELOAD_NO_OFFSET) err->offset -= 8;   /* no 8-byte prefix here */
    }
    sl__free(a, ix->map);
    sl__free(a, ix->map_pos);
    sl__free(a, ix->meta);
    sl__free(a, ix->meta_pos);
    memset(ix, 0, sizeof *ix);
    return r == SAFELOAD_INVALID_JSON ? SAFELOAD_INVALID_INDEX : r;
}

/* =============================================================================================
   3. KEY SET: seeded hashing, the name table, opening files, lookups, key reports
   ========================================================================================== */

/* ---- 3a. SipHash-1-3 keyed by a per-file seed: names come from untrusted files, so the table
   must not be something an attacker can fill with collisions. ---- */

/* The 8 little-endian bytes at p (the header length; SipHash's words, so a name hashes the
   same on every host). */
SL__INLINE uint64_t sl__le64(const unsigned char *p) {
    uint64_t v;
#if SL__BIG_ENDIAN
    int i;
    for (v = 0, i = 7; i >= 0; i--) v = v << 8 | p[i];
#else
    memcpy(&v, p, 8);
#endif
    return v;
}

#define SL__ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SL__SIPROUND do { \
    v0 += v1; v1 = SL__ROTL(v1, 13); v1 ^= v0; v0 = SL__ROTL(v0, 32); \
    v2 += v3; v3 = SL__ROTL(v3, 16); v3 ^= v2; \
    v0 += v3; v3 = SL__ROTL(v3, 21); v3 ^= v0; \
    v2 += v1; v1 = SL__ROTL(v1, 17); v1 ^= v2; v2 = SL__ROTL(v2, 32); } while (0)

static uint64_t sl__hash(const void *data, size_t n, uint64_t k0, uint64_t k1) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    uint64_t m, b = (uint64_t)n << 56;
    size_t i, left = n & 7;
    for (i = 0; i + 8 <= n; i += 8) {
        m = sl__le64(p + i);
        v3 ^= m; SL__SIPROUND; v0 ^= m;
    }
    while (left--) b |= (uint64_t)p[i + left] << (8 * left);
    v3 ^= b; SL__SIPROUND; v0 ^= b;
    v2 ^= 0xff;
    SL__SIPROUND; SL__SIPROUND; SL__SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- 3b. the table: linear probing, load <= 1/2, slots hold a hash tag and an index into an
   array whose elements start with {const char *name; size_t len;} (safeload_tensor,
   safeload_kv and the model's refs all do). ---- */

typedef struct sl__keys {
    const unsigned char *base;
    size_t stride;
} sl__keys;

SL__INLINE void sl__key_at(sl__keys k, size_t i, const char **s, size_t *n) {
    const unsigned char *e = k.base + i * k.stride;
    memcpy(s, e, sizeof *s);
    memcpy(n, e + sizeof(const char *), sizeof *n);
}

/* big: a file's verdict for its big tables, or NULL (the allocator's memory) */
static int sl__table_init(sl__table *t, size_t n, const safeload_allocator *a, sl__bigv *big) {
    size_t cap = 16;
    while (cap < n * 2 + 2) {
        if (cap > SIZE_MAX / 4 / sizeof(uint64_t)) return 0;
        cap *= 2;
    }
    t->big = big != NULL;
    t->slots = (uint64_t *)(big ? sl__big_calloc(a, cap, sizeof(uint64_t), big)
                                : sl__calloc(a, cap, sizeof(uint64_t)));
    t->mask = cap - 1;
    return t->slots != NULL;
}

static void sl__table_free(sl__table *t, const safeload_allocator *a) {
    if (t->big) sl__big_free(a, t->slots);
    else sl__free(a, t->slots);
    t->slots = NULL;
    t->mask = 0;
    t->big = 0;
}

/* Index of name, or -1. */
static int64_t sl__table_find(const sl__table *t, sl__keys k, const char *name, size_t len,
                              uint64_t h) {
    size_t i;
    uint64_t tag = h >> 32;
    if (!t->slots) return -1;
    for (i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
        uint64_t s = t->slots[i];
        const char *kn;
        size_t kl, idx;
        if (!s) return -1;
        if ((s >> 32) != tag) continue;
        idx = (size_t)(s & 0xFFFFFFFFu) - 1;
        sl__key_at(k, idx, &kn, &kl);
        if (kl == len && memcmp(kn, name, len) == 0) return (int64_t)idx;
    }
}

/* Inserts idx unless the name is present: returns -1 when inserted, else the existing index. */
static int64_t sl__table_insert(sl__table *t, sl__keys k, size_t idx, uint64_t h) {
    size_t i;
    uint64_t tag = h >> 32;
    const char *name;
    size_t len;
    sl__key_at(k, idx, &name, &len);
    for (i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
        uint64_t s = t->slots[i];
        if (!s) { t->slots[i] = tag << 32 | (uint64_t)(idx + 1); return -1; }
        if ((s >> 32) == tag) {
            const char *kn;
            size_t kl, other = (size_t)(s & 0xFFFFFFFFu) - 1;
            sl__key_at(k, other, &kn, &kl);
            if (kl == len && memcmp(kn, name, len) == 0) return (int64_t)other;
        }
    }
}

/* Builds a table over n keys; *dup receives the first index (in array order) whose name
   repeats an earlier one, or -1. Tables outgrow the caches: each key's slot is fetched
   SL__AHEAD keys before it goes in. */
#define SL__AHEAD 8
static int sl__table_build(sl__table *t, sl__keys k, size_t n, uint64_t k0, uint64_t k1,
                           const safeload_allocator *a, int64_t *dup) {
    size_t i;
    uint64_t ahead[SL__AHEAD];
    *dup = -1;
    if (!sl__table_init(t, n, a, NULL)) return 0;
    for (i = 0; i < n + SL__AHEAD; i++) {
        const char *s;
        size_t len;
        if (i >= SL__AHEAD && sl__table_insert(t, k, i - SL__AHEAD, ahead[i % SL__AHEAD]) >= 0) {
            *dup = (int64_t)(i - SL__AHEAD);
            break;
        }
        if (i < n) {
            sl__key_at(k, i, &s, &len);
            ahead[i % SL__AHEAD] = sl__hash(s, len, k0, k1);
            SL__PREFETCH(&t->slots[ahead[i % SL__AHEAD] & t->mask]);
        }
    }
    return 1;
}

/* Bytewise order, shorter first: Rust's String order. */
static int sl__name_cmp(const char *a, size_t an, const char *b, size_t bn) {
    int c = memcmp(a, b, SL__MIN(an, bn));
    return c ? c : (an < bn ? -1 : an > bn ? 1 : 0);
}

/* A stable bottom-up merge sort of T values with a scratch array (index.json and the writer
   use it; neither is hot, n log n is the point). */
#define SL__DEFINE_MSORT(fname, T, less) \
static void fname(T *v, T *tmp, size_t n) { \
    size_t w, i; \
    for (w = 1; w < n; w *= 2) { \
        for (i = 0; i < n; i += 2 * w) { \
            size_t lo = i, mid = SL__MIN(i + w, n), hi = SL__MIN(i + 2 * w, n), a = lo, b = mid, k = lo; \
            while (a < mid && b < hi) tmp[k++] = less(&v[b], &v[a]) ? v[b++] : v[a++]; \
            while (a < mid) tmp[k++] = v[a++]; \
            while (b < hi) tmp[k++] = v[b++]; \
        } \
        memcpy(v, tmp, n * sizeof(T)); \
    } \
}
#define SL__KEYS(arr, type) sl__keys_make((const void *)(arr), sizeof(type))
SL__INLINE sl__keys sl__keys_make(const void *base, size_t stride) {
    sl__keys k;
    k.base = (const unsigned char *)base;
    k.stride = stride;
    return k;
}

/* ---- 3c. opening a file: read the header, parse, check, sort, index ---- */

static void sl__file_free(safeload_file *f) {
    safeload_allocator a;
    if (!f) return;
    a = f->alloc;
    if (f->map) sl__os_unmap((void *)(uintptr_t)f->map, f->src.size, f->map_handle);
    if (f->src.kind == SL__SRC_FILE) sl__os_close(f->src.fd);
    if (f->src.kind == SL__SRC_READER && f->src.reader.close) f->src.reader.close(f->src.reader.user);
    if (f->map_lock_ok) sl__mutex_destroy(&f->map_lock);
    sl__table_free(&f->names, &a);
    sl__table_free(&f->meta_names, &a);
    sl__big_free(&a, f->tensors);
    sl__big_free(&a, f->dims);
    sl__free(&a, f->meta);
    sl__big_free(&a, f->header);
    while (f->n_parts) sl__big_free(&a, f->parts[--f->n_parts]);
    sl__free(&a, f->parts);
    sl__free(&a, f->path);
    sl__free(&a, f);
}

/* the names' hashes in the file's table, for entries e[0..n) */
static void sl__hash_names(const safeload_file *f, const sl__entry *e, size_t n, uint64_t *out) {
    size_t i;
    for (i = 0; i < n; i++) out[i] = sl__hash(e[i].name, e[i].name_len, f->k0, f->k1);
}

/* ---- a large header on several threads ----
   A header of SAFELOAD_PARSE_SPLIT_MIN bytes or more (a checkpoint of ~10,000 tensors and up)
   is cut into parts at `},"` (an entry's end, a comma, the next key) found just after each
   part's even share, and each part is read and parsed on a thread of its own, into a stretch
   of the header's own entry, dims and hash arrays set aside for it (no arrays of its own to
   fault in and copy over); the first is parsed here, in the header buffer. The stretches are
   closed up after the join. The cut is a guess, since those
   three bytes can sit inside a string, so a part counts only when the part before it ended
   exactly where it starts, at the top level. Any doubt (a guess that missed, a part with
   __metadata__, an error, a full array, a thread that did not start) and the whole header is
   read again and parsed on this thread: every error, offset and message is the one-thread
   parse's. */
#if !defined(SAFELOAD_PARSE_SPLIT_MIN)
#  define SAFELOAD_PARSE_SPLIT_MIN ((uint64_t)1 << 20)
#endif
#define SL__SPLIT_MAX 8                 /* parts at most */
#define SL__SPLIT_SCAN 65536            /* how far past its even share a part's start is sought */

#if !defined(SAFELOAD_NO_THREADS)
typedef struct sl__part {
    const safeload_file *f;
    uint64_t at, len;                   /* header bytes [at, at + len) */
    unsigned char *buf;                 /* len + SL__PAD bytes, the part's own */
    sl__jp j;                           /* its stretch of the arrays: it never allocates */
    uint64_t *hashes;                   /* its stretch of the hashes */
    safeload_error err;                 /* a part's error is only a reason to redo the header */
    safeload_result r;
    sl__thread th;
    sl__pool_arg arg;
    int started;
} sl__part;

/* what a part's arrays grow with: nothing (a part that outgrows them is redone) */
static void *sl__no_alloc(void *u, size_t n) { SL__UNUSED(u); SL__UNUSED(n); return NULL; }
static void *sl__no_realloc(void *u, void *p, size_t o, size_t n) {
    SL__UNUSED(u); SL__UNUSED(p); SL__UNUSED(o); SL__UNUSED(n);
    return NULL;
}
static void sl__no_free(void *u, void *p) { SL__UNUSED(u); SL__UNUSED(p); }
static const safeload_allocator sl__refuse = { sl__no_alloc, sl__no_realloc, sl__no_free, NULL };

static void sl__part_run(void *ctx) {
    sl__part *pt = (sl__part *)ctx;
    sl__prefault(pt->buf, (size_t)pt->len);
    pt->r = sl__source_read(&pt->f->src, pt->f->path, 8 + pt->at, pt->buf, (size_t)pt->len,
                            &pt->err, NULL);
    if (pt->r != SAFELOAD_OK) return;
    memset(pt->buf + pt->len, 0, SL__PAD);
    pt->r = sl__jmembers(&pt->j, pt->buf);
    if (pt->r == SAFELOAD_OK && pt->j.split && !pt->j.landed) pt->r = SAFELOAD_INVALID_JSON;
    if (pt->r == SAFELOAD_OK) sl__hash_names(pt->f, pt->j.ents, pt->j.n_ents, pt->hashes);
}

/* Where part k (k >= 1) of an n-byte header starts: the byte after the first `},` at or past
   its even share, when a `"` follows and that lies past `after`; 0: nowhere. The bytes looked
   at are read into their own place in the header buffer (part 0's read or the redo writes
   them again): no buffer of its own to fault in. */
static uint64_t sl__part_start(const safeload_file *f, uint64_t n, size_t k, size_t parts,
                               uint64_t after) {
    uint64_t m = n / parts * k + n % parts * k / parts, w = SL__MIN(n - m, (uint64_t)SL__SPLIT_SCAN);
    unsigned char *win = f->header + m;
    size_t i;
    if (w < 3 || sl__source_read(&f->src, f->path, 8 + m, win, (size_t)w, NULL, NULL))
        return 0;
    for (i = 0; i + 2 < w; i++)
        if (win[i] == '}' && win[i + 1] == ',' && win[i + 2] == '"')
            return m + i + 2 > after ? m + i + 2 : 0;
    return 0;
}

static void sl__parts_free(const safeload_allocator *a, sl__part *pt, size_t n, int keep_bufs) {
    size_t k;
    for (k = 0; k < n && !keep_bufs; k++) sl__big_free(a, pt[k].buf);
    sl__free(a, pt);
}

/* The header's JSON (j set up for the whole of it, f->header allocated, nothing read yet; j's
   arrays hold SL__SPLIT_ENTS and SL__SPLIT_DIMS of the header), in parts. 1: done, j holds
   every entry as the one-thread parse would and *hashes their names' hashes; 0: not split (the
   caller reads and parses the header itself). */
#define SL__SPLIT_ENTS(len) ((size_t)((len) / 64) + 4)  /* a part's entries at most (typical) */
#define SL__SPLIT_DIMS(len) ((size_t)((len) / 32) + 8)
static int sl__parse_split(safeload_file *f, sl__jp *j, uint64_t **hashes) {
    const safeload_allocator *a = &f->alloc;
    uint64_t n = f->header_len, q[SL__SPLIT_MAX + 1];
    size_t parts, k, i, total, ents, dims, cap0_ents, cap0_dims;
    size_t at_ents[SL__SPLIT_MAX], at_dims[SL__SPLIT_MAX];   /* each part's stretch */
    int threads = f->threads > 0 ? f->threads : safeload_default_threads(), ok;
    sl__part *pt;
    safeload_error e0, *err0 = j->err;
    *hashes = NULL;
    if (n < (uint64_t)SAFELOAD_PARSE_SPLIT_MIN || threads < 2 || f->src.kind == SL__SRC_READER)
        return 0;                       /* a caller's reader may not take calls from threads */
    /* parts of half the threshold at least */
    parts = (size_t)SL__MIN((uint64_t)SL__MIN(threads, SL__SPLIT_MAX),
                            n / SL__MAX((uint64_t)SAFELOAD_PARSE_SPLIT_MIN / 2, (uint64_t)1));
    if (parts < 2) return 0;
    q[0] = 0;
    for (k = 1, i = 1; k < parts; k++)              /* parts whose start was found */
        if ((q[i] = sl__part_start(f, n, k, parts, q[i - 1])) != 0) i++;
    parts = i;
    q[parts] = n;
    if (parts < 2) return 0;
    /* the stretches, in order; they fit, as sl__parse sized the arrays for SL__SPLIT_MAX
       parts (the floors of the parts' shares add up to no more than the whole's) */
    for (k = 0, ents = dims = 0; k < parts; k++) {
        at_ents[k] = ents;
        at_dims[k] = dims;
        ents += SL__SPLIT_ENTS(q[k + 1] - q[k]);
        dims += SL__SPLIT_DIMS(q[k + 1] - q[k]);
    }
    if (ents > j->cap_ents || dims > j->cap_dims || j->n_ents || j->n_dims) return 0;
    pt = (sl__part *)sl__calloc(a, parts - 1, sizeof *pt);
    if (!pt) return 0;
    for (k = 1, ok = 1; k < parts && ok; k++) {     /* every buffer, before any runs */
        sl__part *p = &pt[k - 1];
        p->f = f;
        p->at = q[k];
        p->len = q[k + 1] - q[k];
        p->buf = (unsigned char *)sl__big_alloc(a, (size_t)p->len + SL__PAD, &f->big, 0, NULL);
        ok = p->buf != NULL;
        p->j.ents = j->ents + at_ents[k];
        p->j.cap_ents = SL__SPLIT_ENTS(p->len);
        p->j.dims = j->dims + at_dims[k];
        p->j.cap_dims = SL__SPLIT_DIMS(p->len);
        p->j.start = p->buf;
        p->j.end = p->buf + p->len;
        p->j.base = p->at;
        p->j.path = f->path;
        p->j.err = &p->err;
        p->j.alloc = &sl__refuse;       /* (its __metadata__ fails it, before any allocation) */
        p->j.fixed = 1;
        p->j.split = k + 1 < parts;     /* the last part ends the header */
        p->j.no_meta = 1;
    }
    /* the verdict dear by now (a part's block took the dear page, or an earlier one): the
       blocks sized ahead before them (the arrays the parts write, the header's rest) go on
       4 KiB pages past their first huge page; the allocator's are left alone */
    if (f->big.state == 2) {
        sl__big_settle(f->header);
        sl__big_settle(j->ents);
        sl__big_settle(j->dims);
    }
    ok = ok && (*hashes = (uint64_t *)sl__big_alloc(a, (ents + 1) * sizeof(uint64_t), &f->big,
                                                    0, NULL)) != NULL;
    for (k = 1; k < parts && ok; k++) {
        sl__part *p = &pt[k - 1];
        p->hashes = *hashes + at_ents[k];
        p->arg.run = sl__part_run;
        p->arg.ctx = p;
        p->started = sl__thread_start(&p->th, &p->arg) == 0;
        ok = p->started;
    }
    /* part 0, here, in the header buffer: it ends where part 1 starts (zeros there, as at a
       header's end, so nothing past it is read), in its own stretch (it may not grow the
       arrays: the other parts write into them); its errors are only a reason to redo */
    cap0_ents = j->cap_ents;
    cap0_dims = j->cap_dims;
    if (ok) {
        j->end = f->header + q[1];
        j->split = 1;
        j->fixed = 1;
        j->cap_ents = SL__SPLIT_ENTS(q[1]);
        j->cap_dims = SL__SPLIT_DIMS(q[1]);
        j->err = &e0;
        memset(f->header + q[1], 0, SL__PAD);
        sl__prefault(f->header, (size_t)q[1]);
        ok = sl__source_read(&f->src, f->path, 8, f->header, (size_t)q[1], &e0, NULL) ==
                 SAFELOAD_OK &&
             sl__jheader(j) == SAFELOAD_OK && j->landed;
        if (ok) sl__hash_names(f, j->ents, j->n_ents, *hashes);
    }
    for (k = 1; k < parts; k++)
        if (pt[k - 1].started) sl__thread_join(pt[k - 1].th);
    j->cap_ents = cap0_ents;
    j->cap_dims = cap0_dims;
    j->fixed = 0;
    for (k = 1, total = j->n_ents; k < parts && ok; k++) {
        ok = pt[k - 1].r == SAFELOAD_OK;
        total += pt[k - 1].j.n_ents;
    }
    ok = ok && total < (size_t)UINT32_MAX - 1 &&
         (f->parts = (unsigned char **)sl__calloc(a, parts - 1, sizeof *f->parts)) != NULL;
    /* the stretches closed up, in order: each moves down (or stays), never onto one not yet
       moved; an entry's dims start (numel, while parsing) moves with its part's dims */
    for (k = 1; k < parts && ok; k++) {
        sl__part *p = &pt[k - 1];
        sl__entry *e = j->ents + j->n_ents;
        for (i = 0; i < p->j.n_ents; i++) {
            e[i] = p->j.ents[i];
            e[i].numel += j->n_dims;
        }
        memmove(*hashes + j->n_ents, p->hashes, p->j.n_ents * sizeof(uint64_t));
        memmove(j->dims + j->n_dims, p->j.dims, p->j.n_dims * sizeof(uint64_t));
        j->n_ents += p->j.n_ents;
        j->n_dims += p->j.n_dims;
        f->parts[f->n_parts++] = p->buf;            /* the names point into it */
    }
    if (!ok) {                          /* as before the split, for the caller's redo */
        f->n_parts = 0;                 /* (the buffers are freed below) */
        sl__free(a, f->parts);
        f->parts = NULL;
        sl__big_free(a, *hashes);
        *hashes = NULL;
        j->n_ents = j->n_dims = j->n_meta = j->cap_meta = 0;
        sl__free(a, j->meta);           /* (its two arrays' sizes may differ after an OOM) */
        sl__free(a, j->meta_pos);
        j->meta = NULL;
        j->meta_pos = NULL;
        j->seen_meta = j->has_meta = 0;
        j->cur = NULL;
    }
    sl__parts_free(a, pt, parts - 1, ok);
    /* back to the whole header, for the caller's redo (or the checks after the JSON) */
    j->end = f->header + n;
    j->split = j->landed = 0;
    j->err = err0;
    return ok;
}
#endif

static safeload_result sl__parse(safeload_file *f, safeload_error *err) {
    sl__jp j;
    safeload_result r;
    unsigned char len8[8];
    uint64_t n, data_len = 0;
    size_t i;
    uint32_t *order = NULL, *tmp = NULL;
    uint64_t *hashes = NULL;
    int64_t dup;
    const safeload_allocator *a = &f->alloc;
    const char *path = f->path;

    /* 1-3: sizes, in the reference's order */
    if (f->src.size < 8)
        return sl__fail(err, SAFELOAD_HEADER_TOO_SMALL, path, 0, NULL, 0,
                        "the file is %llu bytes; the header length alone needs 8",
                        (sl__ull)f->src.size);
    if ((r = sl__source_read(&f->src, path, 0, len8, 8, err, NULL)) != SAFELOAD_OK) return r;
    n = sl__le64(len8);
    if (n > SL__MAX_HEADER)
        return sl__fail(err, SAFELOAD_HEADER_TOO_LARGE, path, 0, NULL, 0,
                        "header length %llu exceeds the limit of 100000000 bytes", (sl__ull)n);
    if (8 + n > f->src.size)
        return sl__fail(err, SAFELOAD_INVALID_HEADER_LENGTH, path, 0, NULL, 0,
                        "header length %llu runs past the end of the %llu-byte file",
                        (sl__ull)n, (sl__ull)f->src.size);
    f->header_len = n;
    f->data_offset = 8 + n;
    f->header = (unsigned char *)sl__big_alloc(a, (size_t)n + SL__PAD, &f->big, SL__BIG_MEASURE,
                                               NULL);
    if (!f->header) return SL__OOM(err, path);

    /* 4 and 5: UTF-8 and JSON in one pass. Strings are checked as they are scanned and
       everything outside them must be ASCII JSON, so a header that parses is valid UTF-8.
       When the JSON fails, the whole header is checked: a UTF-8 error anywhere wins. */
    /* 5: JSON */
    memset(&j, 0, sizeof j);
    j.start = f->header;
    j.end = f->header + n;
    j.path = path;
    j.err = err;
    j.alloc = a;
    /* a tensor entry takes >= 48 header bytes: size the arrays once for typical headers (and
       for a split parse's stretches, SL__SPLIT_MAX of them) */
    j.big = &f->big;                    /* the entries become f->tensors: a big block */
    sl__grow_big(a, j.big, (void **)&j.ents, &j.cap_ents,
                 (size_t)(n / 64) + 4 * SL__SPLIT_MAX + 1, sizeof(sl__entry));
    sl__grow_big(a, j.big, (void **)&j.dims, &j.cap_dims,
                 (size_t)(n / 32) + 8 * SL__SPLIT_MAX + 1, sizeof(uint64_t));
#if !defined(SAFELOAD_NO_THREADS)
    if (sl__parse_split(f, &j, &hashes)) {
        r = SAFELOAD_OK;
    } else
#endif
    {
        /* on one thread (also the redo of a split that failed: from the file's bytes) */
        memset(f->header + n, 0, SL__PAD);
        sl__prefault(f->header, (size_t)n);
        r = sl__source_read(&f->src, path, 8, f->header, (size_t)n, err, NULL);
        if (r == SAFELOAD_OK) r = sl__jheader(&j);
    }
    f->dims = j.dims;
    f->meta = j.meta;
    f->meta_count = j.n_meta;
    f->has_meta = j.has_meta;
    if (r == SAFELOAD_INVALID_JSON) {
        /* in-place decoding kept every byte valid and left the rest untouched */
        i = sl__utf8_valid_up_to(f->header, (size_t)n);
        if (i != n)
            r = sl__fail(err, SAFELOAD_INVALID_UTF8, path, 8 + (uint64_t)i, NULL, 0,
                         "invalid UTF-8 sequence at byte %llu", (sl__ull)(8 + i));
    }
    if (r != SAFELOAD_OK) goto done;

    /* 6 (stricter than the reference): duplicate metadata keys, NUL in names, duplicate
       names — after the JSON parsed, before offsets */
    if (!sl__table_build(&f->meta_names, SL__KEYS(f->meta, safeload_kv), f->meta_count, f->k0,
                         f->k1, a, &dup)) { r = SL__OOM(err, path); goto done; }
    if (dup >= 0) {
        const safeload_kv *kv = &f->meta[dup];
        r = sl__fail(err, SAFELOAD_DUPLICATE_KEY, path, 8 + (uint64_t)j.meta_pos[dup], kv->key,
                     kv->key_len, "metadata key appears twice");
        goto done;
    }
    if (!hashes) {                      /* (a split parse hashed the names as it went) */
        hashes = (uint64_t *)sl__big_alloc(a, (j.n_ents + 1) * sizeof(uint64_t), &f->big,
                                           SL__BIG_WHOLE,
                                           NULL);
        if (hashes) sl__hash_names(f, j.ents, j.n_ents, hashes);
    }
    if (!hashes || !sl__table_init(&f->names, j.n_ents, a, &f->big)) {
        r = SL__OOM(err, path);
        goto done;
    }
    for (i = 0; i < j.n_ents; i++) {
        sl__entry *e = &j.ents[i];
        /* the table is bigger than the caches: fetch slots a few inserts ahead */
        if (i + 8 < j.n_ents) SL__PREFETCH(&f->names.slots[hashes[i + 8] & f->names.mask]);
        if (e->index) {
            r = sl__fail(err, SAFELOAD_INVALID_NAME, path, e->header_offset, e->name,
                         e->name_len, "tensor name contains \\u0000");
            goto done;
        }
        if (sl__table_insert(&f->names, SL__KEYS(j.ents, sl__entry), i, hashes[i]) >= 0) {
            r = sl__fail(err, SAFELOAD_DUPLICATE_KEY, path, e->header_offset, e->name,
                         e->name_len, "tensor name appears twice");
            goto done;
        }
    }

    /* 7: offset order, then the per-tensor checks */
    for (i = 1; i < j.n_ents; i++)
        if (sl__entry_less(j.ents, (uint32_t)i, (uint32_t)(i - 1))) break;
    if (i < j.n_ents) {
        order = (uint32_t *)sl__malloc(a, j.n_ents * sizeof(uint32_t));
        tmp = (uint32_t *)sl__malloc(a, j.n_ents * sizeof(uint32_t));
        if (!order || !tmp) { r = SL__OOM(err, path); goto done; }
        for (i = 0; i < j.n_ents; i++) order[i] = (uint32_t)i;
        sl__sort_entries(j.ents, order, tmp, j.n_ents);
    }
    if ((r = sl__validate(&j, order, j.n_ents, f->data_offset, &data_len)) != SAFELOAD_OK)
        goto done;

    /* 8: the data section ends exactly at the end of the file */
    if (data_len > UINT64_MAX - f->data_offset) {
        r = sl__fail(err, SAFELOAD_INCOMPLETE_BUFFER, path, f->src.size, NULL, 0,
                     "the tensors end past byte 2^64 (data section of %llu bytes after the "
                     "%llu-byte header); the file is %llu bytes",
                     (sl__ull)data_len, (sl__ull)f->data_offset, (sl__ull)f->src.size);
        goto done;
    }
    if (f->data_offset + data_len != f->src.size) {
        uint64_t want = f->data_offset + data_len;
        uint64_t gap = want < f->src.size ? f->src.size - want : want - f->src.size;
        const char *s = gap == 1 ? "" : "s";
        if (want < f->src.size)
            r = sl__fail(err, SAFELOAD_INCOMPLETE_BUFFER, path, want, NULL, 0,
                         "%llu byte%s follow%s the end of the data section (the tensors end "
                         "at byte %llu)", (sl__ull)gap, s, gap == 1 ? "s" : "", (sl__ull)want);
        else
            r = sl__fail(err, SAFELOAD_INCOMPLETE_BUFFER, path, f->src.size, NULL, 0,
                         "the file is %llu byte%s short: the tensors end at byte %llu",
                         (sl__ull)gap, s, (sl__ull)want);
        goto done;
    }
    f->data_size = data_len;

    /* the public array in offset order: usually the header order already, else permuted */
    if (order) {
        safeload_tensor *sorted =
            (safeload_tensor *)sl__big_alloc(a, j.n_ents * sizeof *sorted, j.big, SL__BIG_WHOLE,
                                             NULL);
        if (!sorted) { r = SL__OOM(err, path); goto done; }
        for (i = 0; i < j.n_ents; i++) sorted[i] = j.ents[order[i]];
        sl__big_free(a, j.ents);
        j.ents = sorted;
        /* inverse permutation, then re-point each slot from header order to offset order */
        for (i = 0; i < j.n_ents; i++) tmp[order[i]] = (uint32_t)i;
        for (i = 0; i <= f->names.mask; i++) {
            uint64_t s = f->names.slots[i];
            if (s) f->names.slots[i] = (s & 0xFFFFFFFF00000000ULL) |
                                       (uint64_t)(tmp[(s & 0xFFFFFFFFu) - 1] + 1);
        }
    }
    for (i = 0; i < j.n_ents; i++) j.ents[i].index = i;
    f->tensors = j.ents;
    f->count = j.n_ents;
    j.ents = NULL;
    r = SAFELOAD_OK;
done:
    sl__big_free(a, hashes);
    sl__free(a, order);
    sl__free(a, tmp);
    sl__big_free(a, j.ents);
    sl__free(a, j.meta_pos);
    return r;
}

static safeload_result sl__file_new(safeload_file **out, const char *label,
                                    const safeload_open_desc *desc, safeload_error *err,
                                    safeload_file **fp) {
    safeload_allocator a;
    safeload_file *f;
    size_t n = strlen(label);
    memset(&a, 0, sizeof a);
    sl__clear_error(err);
    if (!out) return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, label, SAFELOAD_NO_OFFSET, NULL,
                              0, "out is NULL");
    *out = NULL;
    if (desc) a = desc->allocator;
    if (!sl__allocator_ok(&a))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, label, SAFELOAD_NO_OFFSET, NULL, 0,
                        "an allocator needs both alloc and free");
    f = (safeload_file *)sl__calloc(&a, 1, sizeof *f);
    if (!f) return SL__OOM(err, label);
    f->alloc = a;
    f->src.fd = SL__NO_FILE;
    f->path = (char *)sl__malloc(&a, n + 1);
    if (!f->path) { sl__free(&a, f); return SL__OOM(err, label); }
    memcpy(f->path, label, n + 1);
    f->threads = desc ? desc->threads : 0;
    f->k0 = desc && desc->hash_seed ? desc->hash_seed : sl__entropy(f);
    f->k1 = sl__entropy(&f->k0) ^ 0x5bd1e995u;
    if (desc && desc->hash_seed) f->k1 = desc->hash_seed * 0x9E3779B97F4A7C15ULL + 1;
    f->map_lock_ok = sl__mutex_init(&f->map_lock) == 0;
    *fp = f;
    return SAFELOAD_OK;
}

/* What a file that failed to parse is, from its first bytes, when it is one of the formats
   people download by mistake (a login or error page, an LFS pointer, a PyTorch or NumPy or
   llama.cpp file): its message, else NULL. b holds the first n bytes (up to 512). Asked only
   after the parse failed, and only where the header cannot be a safetensors header (the
   length prefix failed, or the JSON does not open with '{'): a valid file, or a damaged one,
   whose length happens to read as these bytes (a 640-byte header is 80 02 00 ..., a pickle's
   start) keeps its own answer. */
/* do the n bytes at b start with the lowercase ASCII word w, in any case? */
static int sl__ascii_prefix_ci(const unsigned char *b, size_t n, const char *w) {
    size_t i;
    for (i = 0; w[i]; i++)
        if (i >= n || (b[i] >= 'A' && b[i] <= 'Z' ? b[i] + 32 : b[i]) != (unsigned char)w[i])
            return 0;
    return 1;
}

static const char *sl__not_safetensors(const unsigned char *b, size_t n, uint64_t size,
                                       char *buf, size_t cap) {
    size_t i = 0;
    uint64_t len = n >= 8 ? sl__le64(b) : 0;
    if (n >= 8 && len <= SL__MAX_HEADER && 8 + len <= size) {
        for (i = 8; i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n');)
            i++;
        if (i == n || b[i] == '{') return NULL;         /* a safetensors header, damaged */
    }
    i = n >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;       /* a UTF-8 BOM */
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n' ||
                     b[i] == '\f'))
        i++;
    if (sl__ascii_prefix_ci(b + i, n - i, "<!doctype") ||
        sl__ascii_prefix_ci(b + i, n - i, "<html"))
        return "an HTML page, not safetensors: the download failed (an error, login or "
               "redirect page was saved); download the file again";
    if (n >= 23 && memcmp(b, "version https://git-lfs", 23) == 0)
        return "a Git LFS pointer, not safetensors: the weights were not downloaded; run "
               "`git lfs pull` (or download the file itself)";
    if (n >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
        return "a ZIP archive, not safetensors: a PyTorch checkpoint (.bin/.pt) or a NumPy "
               ".npz; convert it to safetensors first";
    if (n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) {
        snprintf(buf, cap, "a Python pickle (protocol %d), not safetensors: a PyTorch "
                 "checkpoint (.bin/.pt); convert it to safetensors first", (int)b[1]);
        return buf;
    }
    if (n >= 4 && memcmp(b, "GGUF", 4) == 0)
        return "a GGUF file (llama.cpp), not safetensors: read it with a GGUF reader, or "
               "download the safetensors weights";
    if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
        return "a NumPy .npy array, not safetensors: convert it to safetensors first";
    return NULL;
}

static safeload_result sl__file_finish(safeload_file **out, safeload_file *f,
                                       safeload_error *err) {
    safeload_result r = sl__parse(f, err);
    if (r >= SAFELOAD_HEADER_TOO_SMALL && r <= SAFELOAD_INVALID_NAME) {
        /* a format error: is it another format altogether? */
        unsigned char b[512];
        char buf[160];
        const char *what;
        size_t n = (size_t)SL__MIN(f->src.size, (uint64_t)sizeof b);
        if (sl__source_read(&f->src, f->path, 0, b, n, NULL, NULL) == SAFELOAD_OK &&
            (what = sl__not_safetensors(b, n, f->src.size, buf, sizeof buf)) != NULL)
            r = sl__fail(err, SAFELOAD_NOT_SAFETENSORS, f->path, 0, NULL, 0, "%s", what);
    }
    if (r != SAFELOAD_OK) {
        f->src.reader.close = NULL;     /* a reader becomes ours only when the open succeeds */
        sl__file_free(f);
        return r;
    }
    *out = f;
    return SAFELOAD_OK;
}

SL__DEF safeload_result safeload_open(safeload_file **out, const char *path,
                                      const safeload_open_desc *desc, safeload_error *err) {
    safeload_file *f = NULL;
    safeload_result r;
    int e;
    if (!path || !path[0]) {                /* as safeload_save: "" names no file */
        sl__clear_error(err);
        if (out) *out = NULL;
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        path ? "path is empty" : "path is NULL");
    }
    if ((r = sl__file_new(out, path, desc, err, &f)) != SAFELOAD_OK) return r;
    f->src.kind = SL__SRC_FILE;
    e = sl__os_open(path, 0, &f->alloc, &f->src.fd, &f->src.size);
    if (e) {
        sl__file_free(f);
        return sl__fail(err, SAFELOAD_IO_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot open: %s (error %d)", sl__os_why(e, "open failed"), e);
    }
    return sl__file_finish(out, f, err);
}

SL__DEF safeload_result safeload_open_memory(safeload_file **out, const void *data, size_t size,
                                             const safeload_open_desc *desc,
                                             safeload_error *err) {
    safeload_file *f = NULL;
    safeload_result r;
    if ((r = sl__file_new(out, "<memory>", desc, err, &f)) != SAFELOAD_OK) return r;
    if (!data && size) {
        sl__file_free(f);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "<memory>", SAFELOAD_NO_OFFSET, NULL, 0,
                        "data is NULL");
    }
    f->src.kind = SL__SRC_MEMORY;
    f->src.mem = (const unsigned char *)data;
    f->src.size = size;
    return sl__file_finish(out, f, err);
}

SL__DEF safeload_result safeload_open_reader(safeload_file **out, const safeload_reader *reader,
                                             const safeload_open_desc *desc,
                                             safeload_error *err) {
    safeload_file *f = NULL;
    safeload_result r;
    const char *label = reader && reader->name ? reader->name : "<reader>";
    if ((r = sl__file_new(out, label, desc, err, &f)) != SAFELOAD_OK) return r;
    if (!reader || !reader->read) {
        sl__file_free(f);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, label, SAFELOAD_NO_OFFSET, NULL, 0,
                        "reader or reader->read is NULL");
    }
    f->src.kind = SL__SRC_READER;
    f->src.reader = *reader;
    f->src.size = reader->size;
    r = sl__file_finish(out, f, err);
    return r;
}

SL__DEF void safeload_close(safeload_file *f) { sl__file_free(f); }

SL__DEF const char *safeload_file_path(const safeload_file *f) { return f ? f->path : NULL; }
SL__DEF uint64_t safeload_file_size(const safeload_file *f) { return f ? f->src.size : 0; }
SL__DEF uint64_t safeload_header_size(const safeload_file *f) { return f ? f->header_len : 0; }
SL__DEF uint64_t safeload_data_offset(const safeload_file *f) { return f ? f->data_offset : 0; }
SL__DEF uint64_t safeload_data_size(const safeload_file *f) { return f ? f->data_size : 0; }
SL__DEF size_t safeload_tensor_count(const safeload_file *f) { return f ? f->count : 0; }

SL__DEF const safeload_tensor *safeload_tensor_at(const safeload_file *f, size_t i) {
    return f && i < f->count ? &f->tensors[i] : NULL;
}

SL__DEF const safeload_tensor *safeload_find_n(const safeload_file *f, const char *name,
                                               size_t len) {
    int64_t i;
    if (!f || !name) return NULL;
    i = sl__table_find(&f->names, SL__KEYS(f->tensors, safeload_tensor), name, len,
                       sl__hash(name, len, f->k0, f->k1));
    return i < 0 ? NULL : &f->tensors[i];
}

SL__DEF const safeload_tensor *safeload_find(const safeload_file *f, const char *name) {
    return name ? safeload_find_n(f, name, strlen(name)) : NULL;
}

SL__DEF int safeload_has_metadata(const safeload_file *f) { return f ? f->has_meta : 0; }
SL__DEF size_t safeload_metadata_count(const safeload_file *f) { return f ? f->meta_count : 0; }

SL__DEF const safeload_kv *safeload_metadata_at(const safeload_file *f, size_t i) {
    return f && i < f->meta_count ? &f->meta[i] : NULL;
}

SL__DEF const safeload_kv *safeload_metadata_find_n(const safeload_file *f, const char *key,
                                                    size_t len) {
    int64_t i;
    if (!f || !key) return NULL;
    i = sl__table_find(&f->meta_names, SL__KEYS(f->meta, safeload_kv), key, len,
                       sl__hash(key, len, f->k0, f->k1));
    return i < 0 ? NULL : &f->meta[i];
}
SL__DEF const safeload_kv *safeload_metadata_find(const safeload_file *f, const char *key) {
    return key ? safeload_metadata_find_n(f, key, strlen(key)) : NULL;
}

/* Is t one of f's tensors (callers pass pointers back in)? Inside the array and on an element,
   compared as addresses, so a stray pointer is never dereferenced or subtracted across objects. */
static int sl__owns(const safeload_file *f, const safeload_tensor *t) {
    uintptr_t a, b;
    if (!f || !t || !f->count) return 0;
    a = (uintptr_t)f->tensors;
    b = (uintptr_t)t;
    return b >= a && b < a + f->count * sizeof *t && (b - a) % sizeof *t == 0;
}

SL__DEF safeload_result safeload_read(const safeload_file *f, const safeload_tensor *t,
                                      void *dst, size_t dst_size, safeload_error *err) {
    safeload_result r;
    sl__clear_error(err);
    if (!sl__owns(f, t) || (!dst && t->nbytes))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, f ? f->path : "", SAFELOAD_NO_OFFSET,
                        NULL, 0, "tensor does not belong to this file, or dst is NULL");
    if ((uint64_t)(size_t)t->nbytes != t->nbytes)   /* first: no buffer could be big enough */
        return sl__fail(err, SAFELOAD_OVERFLOW, f->path, t->file_offset, t->name, t->name_len,
                        "tensor is larger than this platform's address space");
    if (dst_size < t->nbytes)
        return sl__fail(err, SAFELOAD_BUFFER_TOO_SMALL, f->path, t->file_offset, t->name,
                        t->name_len, "needs %llu byte%s, the buffer has %llu",
                        (sl__ull)t->nbytes, t->nbytes == 1 ? "" : "s", (sl__ull)dst_size);
    if (f->src.kind == SL__SRC_MEMORY && t->nbytes) {       /* a copy onto itself: refused */
        /* in 64 bits: on a 32-bit host a range near the top of the address space would wrap */
        uint64_t s = (uint64_t)(uintptr_t)(f->src.mem + t->file_offset);
        uint64_t d = (uint64_t)(uintptr_t)dst;
        if (d < s + t->nbytes && s < d + t->nbytes)
            return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, f->path, t->file_offset, t->name,
                            t->name_len, "dst overlaps the tensor's bytes in the memory source");
    }
    r = sl__source_read(&f->src, f->path, t->file_offset, dst, (size_t)t->nbytes, err, NULL);
    if (r != SAFELOAD_OK && err)                       /* the read names no tensor; this does */
        sl__copy_trunc(err->tensor, sizeof err->tensor, t->name, t->name_len);
#if SL__SWAP
    if (r == SAFELOAD_OK) sl__swap_copy(dst, dst, (size_t)t->nbytes, sl__swap_unit(t->dtype));
#endif
    return r;
}

/* The mapping is created once, under the file's lock, and lives until close. */
static safeload_result sl__file_map(safeload_file *f, safeload_error *err) {
    safeload_result r = SAFELOAD_OK;
    if (f->src.kind != SL__SRC_FILE) return SAFELOAD_OK;
    if (f->map_lock_ok) sl__mutex_lock(&f->map_lock);
    if (!f->map && f->src.size) {
        f->map = (const unsigned char *)sl__os_map(f->src.fd, f->src.size, &f->map_handle);
        if (!f->map)
            r = sl__fail(err, SAFELOAD_IO_ERROR, f->path, SAFELOAD_NO_OFFSET, NULL, 0,
                         "cannot map the file (%llu bytes)", (sl__ull)f->src.size);
    }
    if (f->map_lock_ok) sl__mutex_unlock(&f->map_lock);
    return r;
}

/* The file's mapping, or NULL while none has been made. */
static const unsigned char *sl__file_mapped(safeload_file *f) {
    const unsigned char *p;
    if (f->map_lock_ok) sl__mutex_lock(&f->map_lock);
    p = f->map;
    if (f->map_lock_ok) sl__mutex_unlock(&f->map_lock);
    return p;
}

SL__DEF safeload_result safeload_view(safeload_file *f, const safeload_tensor *t,
                                      const void **data, size_t *alignment,
                                      safeload_error *err) {
    safeload_result r;
    const unsigned char *base;
    uintptr_t addr;
    size_t al = 4096;
    sl__clear_error(err);
    if (data) *data = NULL;
    if (alignment) *alignment = 0;
    if (!sl__owns(f, t) || !data)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, f ? f->path : "", SAFELOAD_NO_OFFSET,
                        NULL, 0, "tensor does not belong to this file, or data is NULL");
    if (f->src.kind == SL__SRC_READER)
        return sl__fail(err, SAFELOAD_UNSUPPORTED, f->path, SAFELOAD_NO_OFFSET, t->name,
                        t->name_len, "reader sources cannot be viewed");
    if ((r = sl__file_map(f, NULL)) != SAFELOAD_OK)
        return sl__fail(err, r, f->path, t->file_offset, t->name, t->name_len,
                        "cannot map the file (%llu bytes) to view the tensor%s",
                        (sl__ull)f->src.size, sizeof(void *) < 8 ? "; safeload_read or a "
                        "load reads it without a mapping" : "");
    if (f->src.kind == SL__SRC_FILE && t->nbytes) {
        /* pages past the end of a file that shrank since it was opened fault when touched
           (SIGBUS): refuse a view of bytes that are gone. One cut after this returns can still
           fault, which no mapping can prevent. */
        uint64_t now, end = t->file_offset + t->nbytes;
        int e = sl__os_size(f->src.fd, &now);
        if (e != 0)
            return sl__fail(err, SAFELOAD_IO_ERROR, f->path, t->file_offset, t->name,
                            t->name_len, "cannot read the file's size: %s (error %d)",
                            sl__os_why(e, "error"), e);
        if (now < end)
            return sl__fail(err, SAFELOAD_UNEXPECTED_EOF, f->path,
                            now > t->file_offset ? now : t->file_offset, t->name, t->name_len,
                            "the file has shrunk to %llu bytes since it was opened, and the "
                            "tensor's bytes end at %llu", (sl__ull)now, (sl__ull)end);
    }
    base = f->src.kind == SL__SRC_MEMORY ? f->src.mem : f->map;
    *data = base ? base + t->file_offset : NULL;
    addr = (uintptr_t)*data;
    while (al > 1 && (addr & (al - 1))) al >>= 1;
    if (alignment) *alignment = al;
    return SAFELOAD_OK;
}

/* ---- 3d. key reports: missing and unexpected names in O(expected + tensors) ---- */

/* The names a report is computed over: one file, or a model's merged table. */
typedef struct sl__nameset {
    const sl__table *table;
    sl__keys keys;              /* the keys table indexes */
    const uint32_t *remap;      /* table index -> list index; NULL: the same */
    sl__keys list;              /* the names in report order */
    size_t count;
    uint64_t k0, k1;
    const safeload_allocator *alloc;
} sl__nameset;

static safeload_result sl__check_keys(const sl__nameset *ns, const char *const *expected,
                                      size_t n, safeload_key_report *rep,
                                      safeload_error *err) {
    const safeload_allocator *a = ns->alloc;
    unsigned char *seen;
    sl__table dedup;
    size_t i;
    rep->allocator_ = *a;                 /* the caller has zeroed *rep */
    if (n && !expected)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "expected is NULL");
    if ((uint64_t)n >= 0xFFFFFFFFu)       /* the dedup table's slots hold a 32-bit index */
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "too many names (%llu; at most 2^32 - 2)", (sl__ull)n);
    for (i = 0; i < n; i++)       /* a NULL would come back in missing[] for the caller to print */
        if (!expected[i])
            return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                            "expected[%llu] is NULL", (sl__ull)i);
    seen = (unsigned char *)sl__calloc(a, ns->count + 1, 1);
    rep->missing = (const char **)sl__malloc_n(a, n, sizeof(char *));
    rep->unexpected = (const char **)sl__malloc(a, (ns->count + 1) * sizeof(char *));
    memset(&dedup, 0, sizeof dedup);
    if (!seen || !rep->missing || !rep->unexpected || !sl__table_init(&dedup, n, a, NULL)) {
        sl__free(a, seen);
        sl__table_free(&dedup, a);
        safeload_key_report_free(rep);
        return SL__OOM(err, "");
    }
    for (i = 0; i < n; i++) {
        const char *s = expected[i];
        size_t len = strlen(s);
        uint64_t h = sl__hash(s, len, ns->k0, ns->k1);
        int64_t at = sl__table_find(ns->table, ns->keys, s, len, h);
        if (at >= 0) { seen[ns->remap ? ns->remap[at] : (size_t)at] = 1; continue; }
        /* dedup missing names: the table's keys are the expected strings themselves */
        {
            size_t slot;
            int dup = 0;
            for (slot = (size_t)h & dedup.mask; dedup.slots[slot]; slot = (slot + 1) & dedup.mask) {
                uint64_t v = dedup.slots[slot];
                const char *o = expected[(v & 0xFFFFFFFFu) - 1];
                if ((v >> 32) == (h >> 32) && strcmp(o ? o : "", s) == 0) { dup = 1; break; }
            }
            if (dup) continue;
            dedup.slots[slot] = (h >> 32) << 32 | (uint64_t)(i + 1);
        }
        rep->missing[rep->missing_count++] = expected[i];
    }
    for (i = 0; i < ns->count; i++) {
        if (!seen[i]) {
            const char *s;
            size_t len;
            sl__key_at(ns->list, i, &s, &len);
            rep->unexpected[rep->unexpected_count++] = s;
        }
    }
    sl__free(a, seen);
    sl__table_free(&dedup, a);
    return SAFELOAD_OK;
}

SL__DEF safeload_result safeload_check_keys(const safeload_file *f, const char *const *expected,
                                            size_t count, safeload_key_report *report,
                                            safeload_error *err) {
    sl__nameset ns;
    sl__clear_error(err);
    if (report) memset(report, 0, sizeof *report);
    if (!f || !report)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "file or report is NULL");
    ns.table = &f->names;
    ns.keys = SL__KEYS(f->tensors, safeload_tensor);
    ns.remap = NULL;
    ns.list = ns.keys;
    ns.count = f->count;
    ns.k0 = f->k0;
    ns.k1 = f->k1;
    ns.alloc = &f->alloc;
    return sl__check_keys(&ns, expected, count, report, err);
}

SL__DEF void safeload_key_report_free(safeload_key_report *r) {
    if (!r) return;
    sl__free(&r->allocator_, (void *)r->missing);
    sl__free(&r->allocator_, (void *)r->unexpected);
    r->missing = r->unexpected = NULL;
    r->missing_count = r->unexpected_count = 0;
}

/* =============================================================================================
   4. CAST KERNELS
   ========================================================================================== */

/* Every kernel converts `count` elements from src to dst: any alignment, no overlap. All paths
   give the same bits for every input under any MXCSR/FPCR (docs/casts.md):
     f32->f16   IEEE round-to-nearest-even; |x| >= 65520 -> +-Inf; fp16 subnormals produced;
                NaN -> sign | 0x7E00 | (mantissa >> 13)            (= F16C vcvtps2ph, imm RNE)
     f16->f32   exact; NaN quieted (bit 22), sign and payload kept  (= vcvtph2ps)
     f32->bf16  RNE on the bits (+0x7FFF + lsb); fp32 subnormals kept; overflow carries to Inf;
                NaN -> (bits >> 16) | 0x0040
     bf16->f32  bits << 16
     f16<->bf16 through f32 (exact), so one rounding
     F8_E4M3    OCP "FN": bias 7, no Inf, S.1111.111 is NaN, max 448. Exact to f32;
                NaN -> sign | 0x7FC00000. To f16/bf16: the f32 value by the rules above (exact;
                NaN -> sign | 0x7E00 resp. sign | 0x7FC0).
     F8_E5M2    bias 15, IEEE-like: it is the top byte of an f16, so the value is f16(b << 8):
                exact; NaN keeps sign and payload and is quieted like f16->f32. f16 result:
                (b << 8), | 0x0200 for NaN; bf16: from the f32 value.
     f64->f32   IEEE RNE with f32 subnormals and overflow to Inf;
                NaN -> sign | 0x7FC00000 | (mantissa52 >> 29)      (= cvtsd2ss)
     f32->f64   exact; NaN quieted (bit 51), payload << 29         (= cvtss2sd)
     F4         E2M1 (bias 1, no Inf/NaN): +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, code 8 is -0; two a
                byte, the first element in the low nibble. Exact to f32, f16 and bf16.
     F8_E8M0    2^(b-127), no sign, no zero; 0xFF is NaN -> 0x7FC00000 / 0x7E00 / 0x7FC0.
                f32 and bf16 exact (b = 0: 2^-127, subnormal in both). f16: the f32 value by
                the f32->f16 rule: exact for 2^-24..2^15 (b = 103..142); b >= 143 -> +Inf;
                b <= 102 -> +0 (2^-25 is a tie and rounds to even, 0).
     F8_E4M3FNUZ, F8_E5M2FNUZ  bias 8 resp. 16, no Inf, no -0; 0x80 is the only NaN and has
                no sign -> 0x7FC00000 / 0x7E00 / 0x7FC0. Every other code is a number (0x7F and
                0xFF are +-240 resp. +-57344), exact in f32, f16 and bf16.
     f32 results of F4/E8M0/FNUZ are their bf16 results << 16; f16/bf16 results are the f32
     value through the rules above (exact except E8M0 -> f16 at the ends).
   The scalar functions below are the reference: integer bit manipulation only. The SIMD paths
   are tested against them bit for bit (tests/test_cast.c, tests/cast_exhaustive.c).
   SIMD kernels that use FP instructions run with MXCSR set to its default (RNE, no FTZ/DAZ,
   exceptions masked) or FPCR = 0 on AArch64, and put the caller's register back afterwards. */

typedef void (*sl__cast_fn)(void *dst, const void *src, size_t count);

/* ---- 4a. scalar reference ---- */

SL__INLINE uint8_t sl__ld8(const unsigned char *p) { return p[0]; }
SL__INLINE uint16_t sl__ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
SL__INLINE uint32_t sl__ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
SL__INLINE uint64_t sl__ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
SL__INLINE void sl__st16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
SL__INLINE void sl__st32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
SL__INLINE void sl__st64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

SL__INLINE uint16_t sl__f32_to_f16(uint32_t x) {
    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(s | 0x7E00u | ((a >> 13) & 0x3FFu));  /* NaN */
    if (a >= 0x477FF000u) return (uint16_t)(s | 0x7C00u);          /* >= 65520: Inf */
    if (a >= 0x38800000u)                                          /* normal result */
        return (uint16_t)(s | ((a - 0x38000000u + 0xFFFu + ((a >> 13) & 1u)) >> 13));
    if (a < 0x33000000u) return (uint16_t)s;                       /* < 2^-25: +-0 */
    {   /* subnormal result: m * 2^(e-150) in units of 2^-24, shift by 126-e in [14, 24] */
        uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u, sh = 126u - e;
        uint32_t r = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(s | r);
    }
}

SL__INLINE uint32_t sl__f16_to_f32(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 31) return s | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u);
    if (e) return s | ((e + 112u) << 23) | (m << 13);
    if (!m) return s;
    e = 113;                                                       /* subnormal: normalise */
    while (!(m & 0x400u)) { m <<= 1; e--; }
    return s | (e << 23) | ((m & 0x3FFu) << 13);
}

SL__INLINE uint16_t sl__f32_to_bf16(uint32_t x) {
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

SL__INLINE uint32_t sl__bf16_to_f32(uint16_t b) { return (uint32_t)b << 16; }
SL__INLINE uint16_t sl__f16_to_bf16(uint16_t h) { return sl__f32_to_bf16(sl__f16_to_f32(h)); }
SL__INLINE uint16_t sl__bf16_to_f16(uint16_t b) { return sl__f32_to_f16(sl__bf16_to_f32(b)); }

SL__INLINE uint32_t sl__e4m3_to_f32(uint8_t b) {
    uint32_t s = (uint32_t)(b & 0x80u) << 24, e = (b >> 3) & 0xFu, m = b & 7u;
    if ((b & 0x7Fu) == 0x7Fu) return s | 0x7FC00000u;             /* the only NaN */
    if (e) return s | ((e + 120u) << 23) | (m << 20);
    if (!m) return s;
    e = 121;                                                       /* subnormal: m * 2^-9 */
    while (!(m & 8u)) { m <<= 1; e--; }
    return s | (e << 23) | ((m & 7u) << 20);
}
SL__INLINE uint32_t sl__e5m2_to_f32(uint8_t b) { return sl__f16_to_f32((uint16_t)(b << 8)); }
SL__INLINE uint16_t sl__e4m3_to_f16(uint8_t b) { return sl__f32_to_f16(sl__e4m3_to_f32(b)); }
SL__INLINE uint16_t sl__e4m3_to_bf16(uint8_t b) { return sl__f32_to_bf16(sl__e4m3_to_f32(b)); }
SL__INLINE uint16_t sl__e5m2_to_f16(uint8_t b) { return sl__f32_to_f16(sl__e5m2_to_f32(b)); }
SL__INLINE uint16_t sl__e5m2_to_bf16(uint8_t b) { return sl__f32_to_bf16(sl__e5m2_to_f32(b)); }

/* F4 (E2M1, bias 1; c is one 4-bit code, the sign at bit 3): 0, 0.5 and 2^(e-1) * (1 + m/2) */
SL__INLINE uint32_t sl__f4_to_f32(unsigned c) {
    uint32_t s = (uint32_t)(c & 8u) << 28, m = c & 7u;
    if (m < 2) return s | (m ? 0x3F000000u : 0u);
    return s | ((m << 22) + (126u << 23));
}
/* F8_E8M0: 2^(b-127), unsigned; 0xFF is the NaN (no sign: positive quiet NaN) */
SL__INLINE uint32_t sl__e8m0_to_f32(uint8_t b) {
    if (b == 0xFF) return 0x7FC00000u;
    return b ? (uint32_t)b << 23 : 0x00400000u;                   /* 2^-127: subnormal */
}
/* The FNUZ FP8s: 0x80 is the only NaN (it has no sign: positive quiet NaN), no Inf, no -0 */
SL__INLINE uint32_t sl__e4m3fnuz_to_f32(uint8_t b) {             /* bias 8 */
    uint32_t s = (uint32_t)(b & 0x80u) << 24, e = (b >> 3) & 0xFu, m = b & 7u;
    if (b == 0x80) return 0x7FC00000u;
    if (e) return s | ((e + 119u) << 23) | (m << 20);
    if (!m) return s;
    e = 120;                                                       /* subnormal: m * 2^-10 */
    while (!(m & 8u)) { m <<= 1; e--; }
    return s | (e << 23) | ((m & 7u) << 20);
}
SL__INLINE uint32_t sl__e5m2fnuz_to_f32(uint8_t b) {             /* bias 16 */
    uint32_t s = (uint32_t)(b & 0x80u) << 24, e = (b >> 2) & 0x1Fu, m = b & 3u;
    if (b == 0x80) return 0x7FC00000u;
    if (e) return s | ((e + 111u) << 23) | (m << 21);
    if (!m) return s;
    e = 112;                                                       /* subnormal: m * 2^-17 */
    while (!(m & 4u)) { m <<= 1; e--; }
    return s | (e << 23) | ((m & 3u) << 21);
}
#define SL__VIA_F32(name)                                                                      \
    SL__INLINE uint16_t sl__##name##_to_f16(uint8_t b) {                                       \
        return sl__f32_to_f16(sl__##name##_to_f32(b));                                        \
    }                                                                                          \
    SL__INLINE uint16_t sl__##name##_to_bf16(uint8_t b) {                                      \
        return sl__f32_to_bf16(sl__##name##_to_f32(b));                                       \
    }
SL__VIA_F32(e8m0)
SL__VIA_F32(e4m3fnuz)
SL__VIA_F32(e5m2fnuz)
#undef SL__VIA_F32

SL__INLINE uint32_t sl__f64_to_f32(uint64_t x) {
    uint32_t s = (uint32_t)(x >> 32) & 0x80000000u;
    uint64_t a = x & 0x7FFFFFFFFFFFFFFFull, e = a >> 52;
    if (a > 0x7FF0000000000000ull)                                 /* NaN */
        return s | 0x7FC00000u | (uint32_t)((a >> 29) & 0x7FFFFFu);
    if (a >= 0x47EFFFFFF0000000ull) return s | 0x7F800000u;        /* >= (2 - 2^-24) * 2^127 */
    if (e >= 897) {                                                /* normal f32 result */
        uint64_t t = a - (896ull << 52);
        return s | (uint32_t)((t + 0x0FFFFFFFull + ((t >> 29) & 1u)) >> 29);
    }
    if (e < 873) return s;                                         /* < 2^-150: +-0 */
    {   /* subnormal result in units of 2^-149: m * 2^(e-1075+149), shift by 926-e in [30, 53] */
        uint64_t m = (a & 0xFFFFFFFFFFFFFull) | (1ull << 52), sh = 926u - e;
        uint64_t r = m >> sh, rem = m & ((1ull << sh) - 1u), half = 1ull << (sh - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return s | (uint32_t)r;
    }
}

SL__INLINE uint64_t sl__f32_to_f64(uint32_t x) {
    uint64_t s = (uint64_t)(x >> 31) << 63;
    uint32_t a = x & 0x7FFFFFFFu, m;
    int e;
    if (a > 0x7F800000u) return s | 0x7FF8000000000000ull | ((uint64_t)(a & 0x7FFFFFu) << 29);
    if (a == 0x7F800000u) return s | 0x7FF0000000000000ull;
    if (a >= 0x00800000u) return s | (((uint64_t)a << 29) + (896ull << 52));
    if (!a) return s;
    m = a; e = 1;                                                  /* subnormal: normalise */
    while (!(m & 0x800000u)) { m <<= 1; e--; }
    return s | ((uint64_t)(e + 896) << 52) | ((uint64_t)(m & 0x7FFFFFu) << 29);
}

#define SL__SCALAR_KERNEL(dir, DSZ, SSZ, ld, st, fn)                                            \
    static void sl__k_##dir##_scalar(void *dst, const void *src, size_t n) {                   \
        unsigned char *d = (unsigned char *)dst;                                               \
        const unsigned char *s = (const unsigned char *)src;                                   \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) st(d + i * (DSZ), fn(ld(s + i * (SSZ))));                      \
    }
SL__SCALAR_KERNEL(f32_f16, 2, 4, sl__ld32, sl__st16, sl__f32_to_f16)
SL__SCALAR_KERNEL(f16_f32, 4, 2, sl__ld16, sl__st32, sl__f16_to_f32)
SL__SCALAR_KERNEL(f32_bf16, 2, 4, sl__ld32, sl__st16, sl__f32_to_bf16)
SL__SCALAR_KERNEL(bf16_f32, 4, 2, sl__ld16, sl__st32, sl__bf16_to_f32)
SL__SCALAR_KERNEL(f16_bf16, 2, 2, sl__ld16, sl__st16, sl__f16_to_bf16)
SL__SCALAR_KERNEL(bf16_f16, 2, 2, sl__ld16, sl__st16, sl__bf16_to_f16)
SL__SCALAR_KERNEL(e4m3_f32, 4, 1, sl__ld8, sl__st32, sl__e4m3_to_f32)
SL__SCALAR_KERNEL(e4m3_f16, 2, 1, sl__ld8, sl__st16, sl__e4m3_to_f16)
SL__SCALAR_KERNEL(e4m3_bf16, 2, 1, sl__ld8, sl__st16, sl__e4m3_to_bf16)
SL__SCALAR_KERNEL(e5m2_f32, 4, 1, sl__ld8, sl__st32, sl__e5m2_to_f32)
SL__SCALAR_KERNEL(e5m2_f16, 2, 1, sl__ld8, sl__st16, sl__e5m2_to_f16)
SL__SCALAR_KERNEL(e5m2_bf16, 2, 1, sl__ld8, sl__st16, sl__e5m2_to_bf16)
SL__SCALAR_KERNEL(f64_f32, 4, 8, sl__ld64, sl__st32, sl__f64_to_f32)
SL__SCALAR_KERNEL(f32_f64, 8, 4, sl__ld32, sl__st64, sl__f32_to_f64)
#define SL__SCALAR_F8X(name)                                                                   \
    SL__SCALAR_KERNEL(name##_f32, 4, 1, sl__ld8, sl__st32, sl__##name##_to_f32)                \
    SL__SCALAR_KERNEL(name##_f16, 2, 1, sl__ld8, sl__st16, sl__##name##_to_f16)                \
    SL__SCALAR_KERNEL(name##_bf16, 2, 1, sl__ld8, sl__st16, sl__##name##_to_bf16)
SL__SCALAR_F8X(e8m0)
SL__SCALAR_F8X(e4m3fnuz)
SL__SCALAR_F8X(e5m2fnuz)
#undef SL__SCALAR_F8X

/* F4 kernels count in source bytes, i.e. pairs of elements (the low nibble first), so that
   every kernel's unit is a whole number of bytes on both sides: n bytes in, 2n elements out.
   sl__f4_to_out gives one element in the output dtype (out: 0 f16, 1 bf16, 2 f32). */
SL__INLINE void sl__f4_st(unsigned char *d, unsigned c, int out) {
    uint32_t v = sl__f4_to_f32(c);
    if (out == 2) sl__st32(d, v);
    else sl__st16(d, out ? sl__f32_to_bf16(v) : sl__f32_to_f16(v));
}
#define SL__SCALAR_F4(name, out, DSZ)                                                          \
    static void sl__k_f4_##name##_scalar(void *dst, const void *src, size_t n) {               \
        unsigned char *d = (unsigned char *)dst;                                               \
        const unsigned char *s = (const unsigned char *)src;                                   \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) {                                                              \
            sl__f4_st(d + 2 * i * (DSZ), s[i] & 15u, out);                                     \
            sl__f4_st(d + (2 * i + 1) * (DSZ), (unsigned)s[i] >> 4, out);                      \
        }                                                                                      \
    }
SL__SCALAR_F4(f16, 0, 2)
SL__SCALAR_F4(bf16, 1, 2)
SL__SCALAR_F4(f32, 2, 4)
#undef SL__SCALAR_F4

static void sl__k_copy16(void *dst, const void *src, size_t n) { memcpy(dst, src, n * 2); }
static void sl__k_copy32(void *dst, const void *src, size_t n) { memcpy(dst, src, n * 4); }

#if SL__SWAP
/* ---- 4a'. loads on a swapping host (0.): the source is in file order (little-endian), the
   result in host order. Plain copies reverse each unit; the casts from 2-, 4- and 8-byte
   dtypes load each element reversed into the scalar reference above (the 1-byte sources need
   no variant). The same bits as the host-order kernel on the reversed source. */
SL__INLINE uint16_t sl__ldx16(const unsigned char *p) { return sl__bswap16(sl__ld16(p)); }
SL__INLINE uint32_t sl__ldx32(const unsigned char *p) { return sl__bswap32(sl__ld32(p)); }
SL__INLINE uint64_t sl__ldx64(const unsigned char *p) { return sl__bswap64(sl__ld64(p)); }
SL__SCALAR_KERNEL(f32_f16_x, 2, 4, sl__ldx32, sl__st16, sl__f32_to_f16)
SL__SCALAR_KERNEL(f16_f32_x, 4, 2, sl__ldx16, sl__st32, sl__f16_to_f32)
SL__SCALAR_KERNEL(f32_bf16_x, 2, 4, sl__ldx32, sl__st16, sl__f32_to_bf16)
SL__SCALAR_KERNEL(bf16_f32_x, 4, 2, sl__ldx16, sl__st32, sl__bf16_to_f32)
SL__SCALAR_KERNEL(f16_bf16_x, 2, 2, sl__ldx16, sl__st16, sl__f16_to_bf16)
SL__SCALAR_KERNEL(bf16_f16_x, 2, 2, sl__ldx16, sl__st16, sl__bf16_to_f16)
SL__SCALAR_KERNEL(f64_f32_x, 4, 8, sl__ldx64, sl__st32, sl__f64_to_f32)
SL__SCALAR_KERNEL(f32_f64_x, 8, 4, sl__ldx32, sl__st64, sl__f32_to_f64)
static void sl__k_swap16(void *d, const void *s, size_t n) { sl__swap_copy(d, s, n * 2, 2); }
static void sl__k_swap32(void *d, const void *s, size_t n) { sl__swap_copy(d, s, n * 4, 4); }
static void sl__k_swap64(void *d, const void *s, size_t n) { sl__swap_copy(d, s, n * 8, 8); }
#endif

/* ---- 4b. SIMD loop generator and FP-environment guards ----
   A block function BLK(d, s, nt) converts N elements: it loads with unaligned loads and stores
   whole vectors, with aligned non-temporal stores when nt is 1. SL__GEN_LOOP makes
   NAME(dst, src, n): full blocks, then the tail through small stack buffers (same block code,
   so the tail's bits are the body's). The buffers' addresses are hidden from the optimiser:
   gcc turns unaligned vector accesses to a 64-byte-aligned local into aligned ones, and under
   AddressSanitizer's fake stack (detect_stack_use_after_return) that local is only 32-byte
   aligned, so the AVX-512 kernels faulted there. SL__GEN_NT makes NAME_nt: a head with
   regular stores up to a 64-byte-aligned dst, NT blocks, an sfence, and the tail again with
   regular stores; when dst cannot be aligned (dst not a multiple of the element size) it falls
   back to NAME. The _run bodies are noinline so the compiler cannot move FP work across the
   MXCSR/FPCR switch. */
#define SL__GEN_LOOP(NAME, TGT, DSZ, SSZ, N, BLK, ENV)                                          \
    static SL__NOINLINE TGT void NAME##_run(unsigned char *d, const unsigned char *s,         \
                                            size_t n) {                                        \
        size_t i = 0;                                                                          \
        for (; i + (N) <= n; i += (N)) BLK(d + i * (DSZ), s + i * (SSZ), 0);                   \
        if (i < n) {                                                                           \
            unsigned char ts[(N) * (SSZ)], td[(N) * (DSZ)], *tsp = ts, *tdp = td;              \
            memset(ts, 0, sizeof ts);                                                          \
            memcpy(ts, s + i * (SSZ), (n - i) * (SSZ));                                        \
            SL__HIDE_ALIGN(tsp);                                                               \
            SL__HIDE_ALIGN(tdp);                                                               \
            BLK(tdp, tsp, 0);                                                                  \
            memcpy(d + i * (DSZ), td, (n - i) * (DSZ));                                        \
        }                                                                                      \
    }                                                                                          \
    static void NAME(void *dst, const void *src, size_t n) {                                   \
        ENV##_ENTER;                                                                           \
        NAME##_run((unsigned char *)dst, (const unsigned char *)src, n);                       \
        ENV##_LEAVE;                                                                           \
    }

/* The NT loop starts at a 64-byte boundary (the head goes through NAME##_run) and writes whole
   64-byte lines per iteration (U blocks): a line filled by one burst of streaming stores leaves
   the write-combining buffer at once; at 512 MiB that is worth about 10 % on AVX2. U also makes
   an iteration read at least 64 bytes (SSE2 f16 -> f32 read 32, and gained 5 % from this).
   It prefetches the source SL__PF_AHEAD bytes ahead, one prefetch per 64 bytes it reads,
   never past the source's end. With streaming stores the hardware prefetchers alone leave the
   input stream short: at 512 MiB this is worth 5-20 % on every kernel here (2-4 KiB ahead was
   best; NTA hints were worse than T0). */
#define SL__NT_U1(X) ((X) >= 64 ? 1 : (X) >= 32 ? 2 : 4)
#define SL__NT_U(N, DSZ, SSZ) SL__MAX(SL__NT_U1((N) * (DSZ)), SL__NT_U1((N) * (SSZ)))
#define SL__PF_AHEAD 4096u
#define SL__PF_SRC(ss, se, BYTES)                                                              \
    do {                                                                                       \
        size_t k_;                                                                             \
        for (k_ = 0; k_ < (BYTES); k_ += 64)                                                   \
            if ((size_t)((se) - (ss)) > SL__PF_AHEAD + k_)                                     \
                _mm_prefetch((const char *)(ss) + SL__PF_AHEAD + k_, _MM_HINT_T0);             \
    } while (0)
#define SL__GEN_NT(NAME, TGT, DSZ, SSZ, N, BLK, ENV)                                            \
    static SL__NOINLINE TGT void NAME##_run_nt(unsigned char *d, const unsigned char *s,      \
                                               size_t n) {                                     \
        const size_t U = SL__NT_U(N, DSZ, SSZ), B = (N) * (DSZ), A = (N) * (SSZ);              \
        size_t i = 0, mis = (size_t)((uintptr_t)d & 63u);                                      \
        const unsigned char *se = s + n * (SSZ);                                               \
        if (mis % (DSZ) == 0) {                                                                \
            i = mis ? (64u - mis) / (DSZ) : 0;                                                 \
            if (i > n) i = n;                                                                  \
            if (i) NAME##_run(d, s, i);                                                        \
            for (; i + (N) * U <= n; i += (N) * U) {                                           \
                unsigned char *dd = d + i * (DSZ);                                             \
                const unsigned char *ss = s + i * (SSZ);                                       \
                SL__PF_SRC(ss, se, A * U);                                                     \
                BLK(dd, ss, 1);                                                                \
                if (U > 1) BLK(dd + B, ss + A, 1);                                             \
                if (U > 2) {                                                                   \
                    BLK(dd + 2 * B, ss + 2 * A, 1);                                            \
                    BLK(dd + 3 * B, ss + 3 * A, 1);                                            \
                }                                                                              \
            }                                                                                  \
            for (; i + (N) <= n; i += (N)) BLK(d + i * (DSZ), s + i * (SSZ), 1);               \
            _mm_sfence();                                                                      \
        }                                                                                      \
        if (i < n) NAME##_run(d + i * (DSZ), s + i * (SSZ), n - i);                            \
    }                                                                                          \
    static void NAME##_nt(void *dst, const void *src, size_t n) {                              \
        ENV##_ENTER;                                                                           \
        NAME##_run_nt((unsigned char *)dst, (const unsigned char *)src, n);                    \
        ENV##_LEAVE;                                                                           \
    }

#define SL__GEN_BOTH(NAME, TGT, DSZ, SSZ, N, BLK, ENV)                                          \
    SL__GEN_LOOP(NAME, TGT, DSZ, SSZ, N, BLK, ENV)                                             \
    SL__GEN_NT(NAME, TGT, DSZ, SSZ, N, BLK, ENV)

/* The six FP8 block functions of a path, from fn(d, s, nt, e5, out) (out: 0 f16, 1 bf16,
   2 f32), and their kernels (integer only, so no FP-environment guard). */
#define SL__F8_BLOCK(name, path, TGT, fn, e5, out)                                              \
    SL__FORCEINLINE TGT void sl__b_##name##_##path(unsigned char *d, const unsigned char *s,   \
                                                   int nt) {                                   \
        fn(d, s, nt, e5, out);                                                                 \
    }
#define SL__F8_BLOCKS(path, TGT, fn)                                                            \
    SL__F8_BLOCK(e4m3_f16, path, TGT, fn, 0, 0) SL__F8_BLOCK(e4m3_bf16, path, TGT, fn, 0, 1)   \
    SL__F8_BLOCK(e4m3_f32, path, TGT, fn, 0, 2) SL__F8_BLOCK(e5m2_f16, path, TGT, fn, 1, 0)    \
    SL__F8_BLOCK(e5m2_bf16, path, TGT, fn, 1, 1) SL__F8_BLOCK(e5m2_f32, path, TGT, fn, 1, 2)
#define SL__F8_KERNELS(path, TGT, N)                                                            \
    SL__GEN_BOTH(sl__k_e4m3_f16_##path, TGT, 2, 1, N, sl__b_e4m3_f16_##path, SL__ENV_NONE)      \
    SL__GEN_BOTH(sl__k_e4m3_bf16_##path, TGT, 2, 1, N, sl__b_e4m3_bf16_##path, SL__ENV_NONE)     \
    SL__GEN_BOTH(sl__k_e4m3_f32_##path, TGT, 4, 1, N, sl__b_e4m3_f32_##path, SL__ENV_NONE)      \
    SL__GEN_BOTH(sl__k_e5m2_f16_##path, TGT, 2, 1, N, sl__b_e5m2_f16_##path, SL__ENV_NONE)      \
    SL__GEN_BOTH(sl__k_e5m2_bf16_##path, TGT, 2, 1, N, sl__b_e5m2_bf16_##path, SL__ENV_NONE)     \
    SL__GEN_BOTH(sl__k_e5m2_f32_##path, TGT, 4, 1, N, sl__b_e5m2_f32_##path, SL__ENV_NONE)

/* The twelve F4/E8M0/FNUZ kernels of a path, from fn(d, s, nt, fmt, out) (fmt: 0 F4, 1 E8M0,
   2 E4M3FNUZ, 3 E5M2FNUZ; out: 0 f16, 1 bf16, 2 f32) converting N elements a block; an F4
   block is N/2 source bytes (its unit is a byte: two elements). GEN is SL__GEN_BOTH, or
   SL__GEN_LOOP where the path has no NT stores; E16 the FP-environment guard of f16 output. */
#define SL__X_KERNEL(path, TGT, fn, name, fmt, out, DSZ, N, GEN, ENV)                          \
    SL__FORCEINLINE TGT void sl__b_##name##_##path(unsigned char *d, const unsigned char *s,   \
                                                   int nt) {                                   \
        fn(d, s, nt, fmt, out);                                                                \
    }                                                                                          \
    GEN(sl__k_##name##_##path, TGT, DSZ, 1, N, sl__b_##name##_##path, ENV)
#define SL__X_KERNELS3(path, TGT, fn, name, fmt, N, GEN, E16)                                  \
    SL__X_KERNEL(path, TGT, fn, name##_f16, fmt, 0, 2, N, GEN, E16)                            \
    SL__X_KERNEL(path, TGT, fn, name##_bf16, fmt, 1, 2, N, GEN, SL__ENV_NONE)                  \
    SL__X_KERNEL(path, TGT, fn, name##_f32, fmt, 2, 4, N, GEN, SL__ENV_NONE)
#define SL__X_KERNELS(path, TGT, fn, N, GEN, E16)                                              \
    SL__X_KERNEL(path, TGT, fn, f4_f16, 0, 0, 4, (N) / 2, GEN, E16)                            \
    SL__X_KERNEL(path, TGT, fn, f4_bf16, 0, 1, 4, (N) / 2, GEN, SL__ENV_NONE)                  \
    SL__X_KERNEL(path, TGT, fn, f4_f32, 0, 2, 8, (N) / 2, GEN, SL__ENV_NONE)                   \
    SL__X_KERNELS_F8(path, TGT, fn, N, GEN, E16)
#define SL__X_KERNELS_F8(path, TGT, fn, N, GEN, E16)      /* without F4 (a path's own) */      \
    SL__X_KERNELS3(path, TGT, fn, e8m0, 1, N, GEN, E16)                                        \
    SL__X_KERNELS3(path, TGT, fn, e4m3fnuz, 2, N, GEN, E16)                                    \
    SL__X_KERNELS3(path, TGT, fn, e5m2fnuz, 3, N, GEN, E16)
/* Decoding F4, E8M0 and FNUZ codes (one a 32-bit lane) to f32 bits, the same on every path:
   a normal code's exponent is rebiased (m << (23 - MB) puts the code's exponent field at bit 23
   and its mantissa below); a subnormal one is its mantissa field converted to float (exact)
   with the scale 2^-(BIAS - 1 + MB) subtracted from that float's exponent (integer, so nothing
   is computed with a subnormal and no rounding mode or FTZ/DAZ setting can matter); then the
   sign, and the FNUZ NaN 0x80. E8M0 is the code << 23, 2^-127 for 0 and NaN for 0xFF. Every
   value is exact in bf16, so f32 -> bf16 is a plain >> 16 and f32 -> f16 the path's exact
   conversion. X(name, MB, BIAS, SB, NAN): MB mantissa bits, SB the sign bit, NAN whether 0x80
   is the NaN. */
#define SL__X_FORMATS(X)                                                                       \
    X(f4, 1, 1, 3, 0) X(e4m3fnuz, 3, 8, 7, 1) X(e5m2fnuz, 2, 16, 7, 1)
#define SL__XMAGIC(MB, BIAS) (((BIAS) - 1u + (MB)) << 23)
/* F4 code c (sign at bit 3) -> f16 / bf16 bits, constant expressions for 16-entry tables */
#define SL__V_F4_F16(c) ((((c) & 8) << 12) |                                                  \
                         (((c) & 7) < 2 ? ((c) & 7) * 0x3800 : (((c) & 7) << 9) + 0x3800))
#define SL__V_F4_BF16(c) ((((c) & 8) << 12) |                                                 \
                          (((c) & 7) < 2 ? ((c) & 7) * 0x3F00 : (((c) & 7) << 6) + 0x3F00))
#define SL__F4LO(V, c) (char)(V(c) & 0xFF)
#define SL__F4HI(V, c) (char)(V(c) >> 8)
#define SL__F4TAB(B, V) _mm_setr_epi8(B(V, 0), B(V, 1), B(V, 2), B(V, 3), B(V, 4), B(V, 5),   \
    B(V, 6), B(V, 7), B(V, 8), B(V, 9), B(V, 10), B(V, 11), B(V, 12), B(V, 13), B(V, 14),    \
    B(V, 15))

/* Non-temporal copies for a path: 64-byte blocks, memcpy for the unaligned head and the tail. */
#define SL__COPY_NT(path, TGT, BLK)                                                             \
    static void sl__k_copy_##path##_run(unsigned char *d, const unsigned char *s, size_t n) {  \
        memcpy(d, s, n);                                                                       \
    }                                                                                          \
    SL__GEN_NT(sl__k_copy_##path, TGT, 1, 1, 64, BLK, SL__ENV_NONE)                            \
    static void sl__k_copy16_##path##_nt(void *d, const void *s, size_t n) {                   \
        sl__k_copy_##path##_nt(d, s, n * 2);                                                   \
    }                                                                                          \
    static void sl__k_copy32_##path##_nt(void *d, const void *s, size_t n) {                   \
        sl__k_copy_##path##_nt(d, s, n * 4);                                                   \
    }

#define SL__ENV_NONE_ENTER (void)0
#define SL__ENV_NONE_LEAVE (void)0

#if defined(SL__HAVE_AVX)
#  include <immintrin.h>
#elif defined(SL__HAVE_SSE2)
#  include <emmintrin.h>
#endif

#if defined(SL__HAVE_SSE2)
/* MXCSR 0x1F80: all exceptions masked, round to nearest even, FTZ and DAZ off. Restoring the
   saved value also drops any exception flags the kernel raised. */
#  define SL__ENV_MXCSR_ENTER unsigned sl__csr = _mm_getcsr(); _mm_setcsr(0x1F80u)
#  define SL__ENV_MXCSR_LEAVE _mm_setcsr(sl__csr)
#  define SL__RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#  define SL__X4(x) _mm_set1_epi32((int)(x))
#  define SL__X8(x) _mm256_set1_epi32((int)(x))
#  define SL__X16(x) _mm512_set1_epi32((int)(x))

/* FP8 -> f16/bf16 as constant expressions of the magnitude m = 0..127 (the sign is OR'ed into
   bit 15): the source of the lookup tables of the AVX2 and AVX-512 kernels. Subnormal FP8 values
   are normal in f16 and bf16; NaNs are quieted with their payload kept. */
#define SL__V_E4M3_F16(m)                                                                      \
    ((m) == 127 ? 0x7E00 : (m) >= 8 ? ((m) << 7) + (8 << 10)                                   \
     : (m) < 2 ? (m) * 0x1800 : (m) < 4 ? 0x1C00 + ((m) & 1) * 0x200 : 0x2000 + ((m) & 3) * 0x100)
#define SL__V_E4M3_BF16(m)                                                                     \
    ((m) == 127 ? 0x7FC0 : (m) >= 8 ? ((m) << 4) + (120 << 7)                                  \
     : (m) < 2 ? (m) * 0x3B00 : (m) < 4 ? 0x3B80 + ((m) & 1) * 0x40 : 0x3C00 + ((m) & 3) * 0x20)
#define SL__V_E5M2_F16(m) (((m) << 8) | ((m) > 0x7C ? 0x200 : 0))
#define SL__V_E5M2_BF16(m)                                                                     \
    ((m) > 0x7C ? (((m) << 5) + (224 << 7)) | 0x40 : (m) == 0x7C ? 0x7F80                      \
     : (m) >= 4 ? ((m) << 5) + (112 << 7) : (m) < 2 ? (m) * 0x3780 : 0x3800 + ((m) & 1) * 0x40)

/* The same casts in the byte domain, for 16-entry pshufb tables (AVX2, AVX-512 without VBMI).
   For most m the two result bytes are shifts of m: lo = (m << A) & ML, hi = ((m >> B) & MH) +
   BASE. The few m where that is wrong (subnormals, zero, Inf, NaN) get their own table slot
   through idx = min(((x + K1) & 0x7F), K2), and every other m slot K2. The tables hold what
   to add to the shifted bytes: (true byte - shifted byte) in the own slots, 0 and BASE in slot
   K2. So each result byte is a shift, a mask and one add.
   E4M3: K1 = 1, K2 = 9 puts m = 127, 0..7 in slots 0..8.
   E5M2: K1 = 4, K2 = 8 puts m = 124..127, 0..3 in slots 0..7. */
#define SL__F8CL(m, V, A, ML, B, MH, BASE) (char)((V(m) & 0xFF) - (((m) << (A)) & (ML)))
#define SL__F8CH(m, V, A, ML, B, MH, BASE) (char)((V(m) >> 8) - (((m) >> (B)) & (MH)))
#define SL__F8CL_N(V, A, ML, B, MH, BASE) 0
#define SL__F8CH_N(V, A, ML, B, MH, BASE) (BASE)
#define SL__F8SLOTS_E4M3(C, N, ...) C(127, __VA_ARGS__), C(0, __VA_ARGS__), C(1, __VA_ARGS__), \
    C(2, __VA_ARGS__), C(3, __VA_ARGS__), C(4, __VA_ARGS__), C(5, __VA_ARGS__), C(6, __VA_ARGS__), \
    C(7, __VA_ARGS__), N(__VA_ARGS__), 0, 0, 0, 0, 0, 0
#define SL__F8SLOTS_E5M2(C, N, ...) C(124, __VA_ARGS__), C(125, __VA_ARGS__), C(126, __VA_ARGS__), \
    C(127, __VA_ARGS__), C(0, __VA_ARGS__), C(1, __VA_ARGS__), C(2, __VA_ARGS__),              \
    C(3, __VA_ARGS__), N(__VA_ARGS__), 0, 0, 0, 0, 0, 0, 0
/* X(name, slots, K1, K2, V, A, ML, B, MH, BASE) for each FP8 -> 16-bit direction but E5M2 ->
   f16, which is simpler still: zero low bytes, and the input byte with NaNs quieted on top. */
#define SL__F8_BYTE_KERNELS(X)                                                                 \
    X(e4m3_f16, SL__F8SLOTS_E4M3, 1, 9, SL__V_E4M3_F16, 7, 0x80, 1, 0x3F, 0x20)                \
    X(e4m3_bf16, SL__F8SLOTS_E4M3, 1, 9, SL__V_E4M3_BF16, 4, 0xF0, 4, 0x07, 0x3C)              \
    X(e5m2_bf16, SL__F8SLOTS_E5M2, 4, 8, SL__V_E5M2_BF16, 5, 0xE0, 3, 0x0F, 0x38)

/* ---- 4c. SSE2 (integer, plus two FP steps that are exact under the default MXCSR) ---- */

SL__INLINE __m128i sl__ld128(const unsigned char *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}
SL__INLINE void sl__st128(unsigned char *p, __m128i v, int nt) {
    if (nt) _mm_stream_si128((__m128i *)(void *)p, v);
    else _mm_storeu_si128((__m128i *)(void *)p, v);
}
SL__INLINE __m128i sl__sse2_sel(__m128i m, __m128i a, __m128i b) {
    return _mm_or_si128(_mm_and_si128(m, a), _mm_andnot_si128(m, b));
}
/* f32 bits -> f16 magnitude bits (no sign) in the low half of each lane, with one FP add that
   is exact RNE under the default MXCSR (RNE, DAZ off): for |x| in [2^e, 2^(e+1)),
   C = 2^(e+13) (e clamped below at -14, so C = 0.5 in the f16 subnormal range) has an ulp of
   2^(e-10), the f16 ulp there, so |x| + C rounds |x| to f16 precision and the bits of
   (|x| + C) - bits of C count the ulps k: f16 bits = ((e + 14) << 10) + k, carries included.
   |x| >= 65520 (and NaN, which minps maps to its second operand) is first clamped to 65520,
   which rounds to 0x7C00; with nan_lanes, NaNs then get 0x7E00 | payload. */
SL__INLINE __m128i sl__sse2_f32_f16(__m128i x, int nan_lanes) {
    __m128i a = _mm_and_si128(x, SL__X4(0x7FFFFFFF));
    __m128 v = _mm_min_ps(_mm_castsi128_ps(a), _mm_set1_ps(65520.0f));
    __m128i c = _mm_castps_si128(_mm_max_ps(_mm_and_ps(v, _mm_castsi128_ps(SL__X4(0x7F800000))),
                                            _mm_castsi128_ps(SL__X4(0x38800000))));
    __m128i sum, h, nan;
    c = _mm_add_epi32(c, SL__X4(13u << 23));
    sum = _mm_castps_si128(_mm_add_ps(v, _mm_castsi128_ps(c)));
    h = _mm_add_epi32(_mm_sub_epi32(sum, c),
                      _mm_sub_epi32(_mm_srli_epi32(c, 13), SL__X4(126u << 10)));
    if (!nan_lanes) return h;
    nan = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(a, 13), SL__X4(0x3FF)), SL__X4(0x7E00));
    return sl__sse2_sel(_mm_cmpgt_epi32(a, SL__X4(0x7F800000)), nan, h);
}
/* Lanes of 8 f16 whose exponent is 0 or 31 (zero, subnormal, Inf, NaN), whatever the sign:
   (v + 0x400) & 0x7800 is 0 exactly for those. */
SL__INLINE __m128i sl__sse2_f16_rare(__m128i v) {
    return _mm_cmpeq_epi16(_mm_and_si128(_mm_add_epi16(v, _mm_set1_epi16(0x400)),
                                         _mm_set1_epi16(0x7800)), _mm_setzero_si128());
}
SL__INLINE __m128i sl__sse2_f16_infnan(__m128i v) {      /* lanes with exponent 31 */
    return _mm_cmpgt_epi16(_mm_and_si128(v, _mm_set1_epi16(0x7FFF)), _mm_set1_epi16(0x7BFF));
}
/* 8 normal f16 -> 8 f32 bits: the high half sign | ((em >> 3) + (112 << 7)) (srai copies the
   sign over bits 14..12, which the mask clears) and the low half em << 13, interleaved. */
SL__INLINE void sl__sse2_f16x8_f32n(__m128i h, __m128i *lo, __m128i *hi) {
    __m128i top = _mm_and_si128(_mm_srai_epi16(h, 3), _mm_set1_epi16((short)0x8FFF));
    __m128i bot = _mm_slli_epi16(h, 13);
    top = _mm_add_epi16(top, _mm_set1_epi16(112 << 7));
    *lo = _mm_unpacklo_epi16(bot, top);
    *hi = _mm_unpackhi_epi16(bot, top);
}
/* 8 f16 -> 8 f32 bits, any f16. Without an exponent 0 or 31 in the block it is the integer
   rebias above. Otherwise the same halves, without the rebias (and with the exponent field
   filled where the f16's is 31), interleave to f32 bits whose value is the f16's times 2^-112
   (Inf and NaN with sign and payload in place). One multiply by 2^112 is then exact, keeps
   Inf, and quiets a signalling NaN (bit 22) with sign and payload kept. An f16 subnormal would
   be an f32 subnormal there, and a multiply with a subnormal operand costs Intel a microcode
   assist of about 150 cycles (about 0.6x memcpy instead of 0.9x on N(0, 0.02) weights, 0.2 %
   subnormal), so the subnormal lanes get exponent 113 instead, i.e. 2^-14 * (1 + m/1024) with
   m the f16 mantissa, are multiplied by 1 and have 2^-14 subtracted, which leaves m * 2^-24
   exactly. No operand is then subnormal. */
SL__INLINE void sl__sse2_f16x8_f32(__m128i h, __m128i *lo, __m128i *hi) {
    __m128i z = _mm_setzero_si128(), em, top, bot, sub, k, c;
    if (SL__LIKELY(_mm_movemask_epi8(sl__sse2_f16_rare(h)) == 0)) {
        sl__sse2_f16x8_f32n(h, lo, hi);
        return;
    }
    em = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
    top = _mm_and_si128(_mm_srai_epi16(h, 3), _mm_set1_epi16((short)0x8FFF));
    bot = _mm_slli_epi16(h, 13);
    top = _mm_or_si128(top, _mm_and_si128(sl__sse2_f16_infnan(h), _mm_set1_epi16(0x7F80)));
    sub = _mm_cmpgt_epi16(_mm_set1_epi16(0x0400), em);
    sub = _mm_andnot_si128(_mm_cmpeq_epi16(em, z), sub);     /* subnormal (zeros multiply fine) */
    top = _mm_add_epi16(top, _mm_and_si128(sub, _mm_set1_epi16(0x3880)));
    k = sl__sse2_sel(sub, _mm_set1_epi16(0x3F80), _mm_set1_epi16(0x7780));   /* 1.0 : 2^112 */
    c = _mm_and_si128(sub, _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)),
                                        _mm_set1_epi16(0x3880)));          /* +-2^-14 there */
    *lo = _mm_castps_si128(_mm_sub_ps(
        _mm_mul_ps(_mm_castsi128_ps(_mm_unpacklo_epi16(bot, top)),
                   _mm_castsi128_ps(_mm_unpacklo_epi16(z, k))),
        _mm_castsi128_ps(_mm_unpacklo_epi16(z, c))));
    *hi = _mm_castps_si128(_mm_sub_ps(
        _mm_mul_ps(_mm_castsi128_ps(_mm_unpackhi_epi16(bot, top)),
                   _mm_castsi128_ps(_mm_unpackhi_epi16(z, k))),
        _mm_castsi128_ps(_mm_unpackhi_epi16(z, c))));
}
/* f32 bits -> RNE'd bits whose high half is the bf16: rne for non-NaN x, hi for any x. */
SL__INLINE __m128i sl__sse2_bf16rne(__m128i x) {
    return _mm_add_epi32(_mm_add_epi32(x, SL__X4(0x7FFF)),
                         _mm_and_si128(_mm_srli_epi32(x, 16), SL__X4(1)));
}
SL__INLINE __m128i sl__sse2_isnan(__m128i x) {
    return _mm_cmpgt_epi32(_mm_and_si128(x, SL__X4(0x7FFFFFFF)), SL__X4(0x7F800000));
}
/* f32 bits -> f16 magnitude bits, integer RNE: (|x| + 0xFFF + bit 13 - (112 << 23)) >> 13,
   carries included. Where that lands in [0x400, 0x7C00] it is right: a normal f16, the Inf
   that |x| >= 65520 rounds to, or 0x400 for |x| in [2^-14 - 2^-25, 2^-14), which the
   subnormal rounding also takes up to 2^-14. Anything else lands outside (a small |x| wraps to
   a huge result, and the pack below saturates it). */
SL__INLINE __m128i sl__sse2_f32_f16n(__m128i x) {
    __m128i a = _mm_and_si128(x, SL__X4(0x7FFFFFFF));
    a = _mm_add_epi32(a, _mm_and_si128(_mm_srli_epi32(a, 13), SL__X4(1)));
    return _mm_srli_epi32(_mm_add_epi32(a, SL__X4(0xFFFu - (112u << 23))), 13);
}
/* 8 f32 -> 8 f16. The magnitudes (at most 0x7FFF) pack with signed saturation as they are,
   and so do the f32s: a negative one saturates to 0x8000 or stays negative, a positive one
   never reaches bit 15, so its bit 15 is the sign. A block whose results are all normal (or
   the overflow Inf) takes the integer form, checked on the packed results with one add and one
   compare; any other goes through the FP form, and its NaN select runs only for a block that
   holds a NaN. */
SL__INLINE __m128i sl__sse2_sign8(__m128i x, __m128i y) {   /* the f32s' signs at bit 15 */
    return _mm_and_si128(_mm_packs_epi32(x, y), _mm_set1_epi16((short)0x8000));
}
static SL__NOINLINE __m128i sl__sse2_f32x8_f16_fp(__m128i x, __m128i y) {
    __m128i s = sl__sse2_sign8(x, y);
    int nan = _mm_movemask_epi8(_mm_or_si128(sl__sse2_isnan(x), sl__sse2_isnan(y))) != 0;
    __m128i h = nan ? _mm_packs_epi32(sl__sse2_f32_f16(x, 1), sl__sse2_f32_f16(y, 1))
                    : _mm_packs_epi32(sl__sse2_f32_f16(x, 0), sl__sse2_f32_f16(y, 0));
    return _mm_or_si128(h, s);
}
SL__FORCEINLINE __m128i sl__sse2_f32x8_f16(__m128i x, __m128i y) {
    __m128i h = _mm_packs_epi32(sl__sse2_f32_f16n(x), sl__sse2_f32_f16n(y));
    /* h <= 0x7FFF; h + 0x3FF > 0x7FE without wrapping exactly for h in [0x400, 0x7C00] */
    __m128i ok = _mm_cmpgt_epi16(_mm_add_epi16(h, _mm_set1_epi16(0x3FF)), _mm_set1_epi16(0x7FE));
    if (SL__LIKELY(_mm_movemask_epi8(ok) == 0xFFFF))
        return _mm_or_si128(h, sl__sse2_sign8(x, y));
    return sl__sse2_f32x8_f16_fp(x, y);
}
SL__INLINE __m128i sl__sse2_bf16hi(__m128i x) {
    return sl__sse2_sel(sl__sse2_isnan(x), _mm_or_si128(x, SL__X4(0x400000)), sl__sse2_bf16rne(x));
}
SL__INLINE __m128i sl__sse2_pack_hi(__m128i a, __m128i b) {      /* high halves, in order */
    return _mm_packs_epi32(_mm_srai_epi32(a, 16), _mm_srai_epi32(b, 16));
}
/* FP8 in 16-bit lanes (bytes zero-extended), integer only. Every E4M3/E5M2 value is exact in
   f16 and bf16, and its f32 bits are its bf16 bits << 16, so f8 -> f32 goes through bf16.
   A subnormal m * 2^-k (m = 1..7 resp. 1..3) is normalised by one multiply: with p the position
   of m's top bit, m * 2^(M - p) (M = mantissa width) puts m's leading one into the exponent
   field's lowest bit, so bits = ((bias - k + p - 1) << M) + m * 2^(M - p). */
SL__INLINE __m128i sl__sse2_e4m3_16(__m128i x, int bf) {        /* bf: bf16, else f16 */
    __m128i m = _mm_and_si128(x, _mm_set1_epi16(0x7F));
    __m128i s = _mm_slli_epi16(_mm_and_si128(x, _mm_set1_epi16(0x80)), 8);
    __m128i c2 = _mm_cmpgt_epi16(m, _mm_set1_epi16(1)), c4 = _mm_cmpgt_epi16(m, _mm_set1_epi16(3));
    __m128i nrm, mul, sub, one, r;
    if (bf) {
        nrm = _mm_add_epi16(_mm_slli_epi16(m, 4), _mm_set1_epi16(120 << 7));
        mul = _mm_sub_epi16(_mm_set1_epi16(128), _mm_and_si128(c2, _mm_set1_epi16(64)));
        mul = _mm_sub_epi16(mul, _mm_and_si128(c4, _mm_set1_epi16(32)));
        sub = _mm_add_epi16(_mm_mullo_epi16(m, mul), _mm_set1_epi16(117 << 7));
        one = _mm_set1_epi16(1 << 7);
    } else {
        nrm = _mm_add_epi16(_mm_slli_epi16(m, 7), _mm_set1_epi16(8 << 10));
        mul = _mm_sub_epi16(_mm_set1_epi16(1024), _mm_and_si128(c2, _mm_set1_epi16(512)));
        mul = _mm_sub_epi16(mul, _mm_and_si128(c4, _mm_set1_epi16(256)));
        sub = _mm_add_epi16(_mm_mullo_epi16(m, mul), _mm_set1_epi16(5 << 10));
        one = _mm_set1_epi16(1 << 10);
    }
    sub = _mm_add_epi16(sub, _mm_add_epi16(_mm_and_si128(c2, one), _mm_and_si128(c4, one)));
    r = sl__sse2_sel(_mm_cmplt_epi16(m, _mm_set1_epi16(8)), sub, nrm);
    r = _mm_andnot_si128(_mm_cmpeq_epi16(m, _mm_setzero_si128()), r);
    r = sl__sse2_sel(_mm_cmpeq_epi16(m, _mm_set1_epi16(0x7F)),
                     _mm_set1_epi16(bf ? 0x7FC0 : 0x7E00), r);
    return _mm_or_si128(r, s);
}
SL__INLINE __m128i sl__sse2_e5m2_bf16(__m128i x) {
    __m128i m = _mm_and_si128(x, _mm_set1_epi16(0x7F));
    __m128i s = _mm_slli_epi16(_mm_and_si128(x, _mm_set1_epi16(0x80)), 8);
    __m128i c2 = _mm_cmpgt_epi16(m, _mm_set1_epi16(1));
    __m128i m5 = _mm_slli_epi16(m, 5);
    __m128i mul = _mm_sub_epi16(_mm_set1_epi16(128), _mm_and_si128(c2, _mm_set1_epi16(64)));
    __m128i sub = _mm_add_epi16(_mm_mullo_epi16(m, mul), _mm_set1_epi16(110 << 7));
    __m128i inf = _mm_add_epi16(m5, _mm_set1_epi16(224 << 7));
    __m128i r;
    sub = _mm_add_epi16(sub, _mm_and_si128(c2, _mm_set1_epi16(1 << 7)));
    inf = _mm_or_si128(inf, _mm_and_si128(_mm_cmpgt_epi16(m, _mm_set1_epi16(0x7C)),
                                          _mm_set1_epi16(0x40)));
    r = sl__sse2_sel(_mm_cmplt_epi16(m, _mm_set1_epi16(4)), sub,
                     _mm_add_epi16(m5, _mm_set1_epi16(112 << 7)));
    r = _mm_andnot_si128(_mm_cmpeq_epi16(m, _mm_setzero_si128()), r);
    r = sl__sse2_sel(_mm_cmpgt_epi16(m, _mm_set1_epi16(0x7B)), inf, r);
    return _mm_or_si128(r, s);
}
/* stores 16 converted elements (h: f16 or bf16 bits, in order) as 16-bit (out 0/1) or f32 */
SL__FORCEINLINE void sl__sse2_f8_st(unsigned char *d, const __m128i *h, int nt, int out) {
    __m128i z = _mm_setzero_si128();
    int k;
    for (k = 0; k < 2; k++) {
        if (out < 2) {
            sl__st128(d + 16 * k, h[k], nt);
        } else {
            sl__st128(d + 32 * k, _mm_unpacklo_epi16(z, h[k]), nt);
            sl__st128(d + 32 * k + 16, _mm_unpackhi_epi16(z, h[k]), nt);
        }
    }
}
static SL__NOINLINE void sl__sse2_f8_full(unsigned char *d, __m128i v, int nt, int e5, int out) {
    __m128i h[2];
    int k;
    h[0] = _mm_unpacklo_epi8(v, _mm_setzero_si128());
    h[1] = _mm_unpackhi_epi8(v, _mm_setzero_si128());
    for (k = 0; k < 2; k++) {
        if (out == 0) h[k] = sl__sse2_e4m3_16(h[k], 0);
        else h[k] = e5 ? sl__sse2_e5m2_bf16(h[k]) : sl__sse2_e4m3_16(h[k], 1);
    }
    sl__sse2_f8_st(d, h, nt, out);
}
/* FP8 bytes (E5M2 when e5, else E4M3) to f16 (out 0), bf16 (out 1) or f32 (out 2), 32 bytes
   at a time. E5M2 -> f16 is b << 8 with NaNs quieted: a byte interleave with zero low bytes.
   A normal, finite FP8 value only needs its exponent rebiased, and with the byte in the high
   half of a 16-bit lane that is one arithmetic shift (which puts the sign at the top and copies
   of it over the exponent's top bits), one mask and one add. So 32 bytes that hold no zero,
   subnormal, Inf or NaN take that form, 3 instructions per 8 elements instead of about 30. One
   add and mask per 16 bytes and one unsigned min, compare and test per 32 find those bytes:
   the magnitude plus 1 (E4M3) or 4 (E5M2), mod 128, is below 9 resp. 8 exactly for them. In
   scaled FP8 weights they are rare: 0.7 % of 32-byte E4M3 blocks and none of E5M2 in the
   benchmark's (N(0, 0.02) with 6 sigma at the format's largest value); a block of random bytes
   nearly always holds one and takes the full form. SSE2's FP8 loops are bound by their
   instruction count on a 2.2 GHz host, and one test per 32 bytes instead of 16 (with two of
   those per 64-byte block) made them 2-17 % faster at 256 MiB, 4-23 % in cache. */
SL__INLINE __m128i sl__sse2_f8_key(__m128i v, int e5) {
    return _mm_and_si128(_mm_add_epi8(v, _mm_set1_epi8(e5 ? 4 : 1)), _mm_set1_epi8(0x7F));
}
SL__FORCEINLINE void sl__sse2_f8_common(unsigned char *d, __m128i v, int nt, int e5, int out) {
    /* f16 from E4M3: s eeee mmm << 7, exponent + 8; bf16: exponent + 120 (E4M3) or + 112
       (E5M2), mantissa at bit 4 resp. 5 */
    __m128i msk = _mm_set1_epi16((short)(out == 0 ? 0xBFFF : e5 ? 0x8FFF : 0x87FF));
    __m128i add = _mm_set1_epi16((short)(out == 0 ? 0x2000 : e5 ? 0x3800 : 0x3C00));
    __m128i h[2];
    int k;
    h[0] = _mm_unpacklo_epi8(_mm_setzero_si128(), v);
    h[1] = _mm_unpackhi_epi8(_mm_setzero_si128(), v);
    for (k = 0; k < 2; k++) {
        h[k] = out == 0 ? _mm_srai_epi16(h[k], 1) : e5 ? _mm_srai_epi16(h[k], 3)
                                                       : _mm_srai_epi16(h[k], 4);
        h[k] = _mm_add_epi16(_mm_and_si128(h[k], msk), add);
    }
    sl__sse2_f8_st(d, h, nt, out);
}
SL__FORCEINLINE void sl__sse2_f8_32(unsigned char *d, const unsigned char *s, int nt, int e5,
                                    int out) {
    const size_t half = (size_t)16 << (out == 2 ? 2 : 1);
    __m128i v = sl__ld128(s), w = sl__ld128(s + 16), z = _mm_setzero_si128(), spec;
    size_t k;
    if (e5 && out == 0) {
        for (k = 0; k < 2; k++) {
            __m128i x = k ? w : v;
            __m128i nan = _mm_cmpgt_epi8(_mm_and_si128(x, _mm_set1_epi8(0x7F)),
                                         _mm_set1_epi8(0x7C));
            x = _mm_or_si128(x, _mm_and_si128(nan, _mm_set1_epi8(0x02)));
            sl__st128(d + k * half, _mm_unpacklo_epi8(z, x), nt);
            sl__st128(d + k * half + 16, _mm_unpackhi_epi8(z, x), nt);
        }
        return;
    }
    spec = _mm_min_epu8(sl__sse2_f8_key(v, e5), sl__sse2_f8_key(w, e5));
    if (SL__UNLIKELY(_mm_movemask_epi8(_mm_cmpgt_epi8(_mm_set1_epi8(e5 ? 8 : 9), spec)) != 0)) {
        sl__sse2_f8_full(d, v, nt, e5, out);
        sl__sse2_f8_full(d + half, w, nt, e5, out);
        return;
    }
    sl__sse2_f8_common(d, v, nt, e5, out);
    sl__sse2_f8_common(d + half, w, nt, e5, out);
}
/* The block: 64 bytes, so the loop's overhead and the prefetch come once per 64 input bytes */
SL__FORCEINLINE void sl__sse2_f8(unsigned char *d, const unsigned char *s, int nt, int e5,
                                 int out) {
    sl__sse2_f8_32(d, s, nt, e5, out);
    sl__sse2_f8_32(d + ((size_t)32 << (out == 2 ? 2 : 1)), s + 32, nt, e5, out);
}

SL__FORCEINLINE void sl__b_f32_f16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st128(d, sl__sse2_f32x8_f16(sl__ld128(s), sl__ld128(s + 16)), nt);
}
/* 16 f16 (a, b) -> 16 f32 at d; normal: every lane is a normal f16 */
SL__FORCEINLINE void sl__sse2_f16x16_f32_do(unsigned char *d, __m128i a, __m128i b, int nt,
                                            int normal) {
    __m128i lo, hi;
    int k;
    for (k = 0; k < 2; k++) {
        if (normal) sl__sse2_f16x8_f32n(k ? b : a, &lo, &hi);
        else sl__sse2_f16x8_f32(k ? b : a, &lo, &hi);
        sl__st128(d + 32 * k, lo, nt);
        sl__st128(d + 32 * k + 16, hi, nt);
    }
}
static SL__NOINLINE void sl__sse2_f16x16_f32_st(unsigned char *d, __m128i a, __m128i b, int nt) {
    sl__sse2_f16x16_f32_do(d, a, b, nt, 0);
}
/* 16 f16 -> 16 f32: one test for both vectors (20 % more throughput than a test per 8, with
   about 0.95x instead of 0.9x memcpy at 512 MiB). */
SL__FORCEINLINE void sl__b_f16_f32_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i a = sl__ld128(s), b = sl__ld128(s + 16);
    if (SL__UNLIKELY(_mm_movemask_epi8(_mm_or_si128(sl__sse2_f16_rare(a),
                                                    sl__sse2_f16_rare(b))) != 0))
        sl__sse2_f16x16_f32_st(d, a, b, nt);
    else
        sl__sse2_f16x16_f32_do(d, a, b, nt, 1);
}
/* As sl__b_f32_bf16_avx2: one NaN test per block, the select only for a block with a NaN. */
SL__INLINE void sl__b_f32_bf16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i a = sl__ld128(s), b = sl__ld128(s + 16);
    if (SL__UNLIKELY(_mm_movemask_epi8(_mm_or_si128(sl__sse2_isnan(a), sl__sse2_isnan(b))) != 0))
        sl__st128(d, sl__sse2_pack_hi(sl__sse2_bf16hi(a), sl__sse2_bf16hi(b)), nt);
    else
        sl__st128(d, sl__sse2_pack_hi(sl__sse2_bf16rne(a), sl__sse2_bf16rne(b)), nt);
}
SL__INLINE void sl__b_bf16_f32_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i v = sl__ld128(s);
    sl__st128(d, _mm_unpacklo_epi16(_mm_setzero_si128(), v), nt);
    sl__st128(d + 16, _mm_unpackhi_epi16(_mm_setzero_si128(), v), nt);
}
/* A normal f16 is a normal bf16 with the exponent rebiased (+112) and the mantissa rounded from
   10 to 7 bits: (v + 3 + bit 3) >> 3, carries included, in 16-bit lanes. The shift is
   arithmetic, so the sign lands at bit 15 with copies over bits 14..12 that the mask clears.
   Sixteen elements share one test for exponents 0 and 31; a block with one takes the form
   below for zeros and subnormals, or the f32 route for Inf and NaN. */
SL__FORCEINLINE __m128i sl__sse2_f16x8_bf16n(__m128i v) {
    __m128i r = _mm_add_epi16(v, _mm_and_si128(_mm_srli_epi16(v, 3), _mm_set1_epi16(1)));
    r = _mm_srai_epi16(_mm_add_epi16(r, _mm_set1_epi16(3)), 3);
    return _mm_add_epi16(_mm_and_si128(r, _mm_set1_epi16((short)0x8FFF)),
                         _mm_set1_epi16(112 << 7));
}
/* f16 -> bf16 through f32, for blocks that hold an Inf or NaN (rare enough that the NaN
   select runs on every lane) */
SL__INLINE __m128i sl__sse2_f16x8_bf16_fp(__m128i v) {
    __m128i lo, hi;
    sl__sse2_f16x8_f32(v, &lo, &hi);
    return sl__sse2_pack_hi(sl__sse2_bf16hi(lo), sl__sse2_bf16hi(hi));
}
/* 8 f16 without Inf/NaN -> bf16, for the blocks that hold a zero or subnormal: the common
   form for every lane, and for exponent 0 m * 2^-24 in f32 (cvtdq2ps of the mantissa and one
   multiply, both exact; no operand or result is subnormal) rounded to bf16. The select keeps
   the common form's sign bit. About half the instructions of the f32 route above (A/B:
   +2-8 % at 512 MiB on N(0, 0.02) weights; +14 % in cache when every block holds one). */
SL__INLINE __m128i sl__sse2_f16x8_bf16z(__m128i v) {
    __m128i z = _mm_setzero_si128(), m = _mm_and_si128(v, _mm_set1_epi16(0x3FF));
    __m128 sc = _mm_set1_ps(1.0f / 16777216.0f);
    __m128i e0 = _mm_cmpeq_epi16(_mm_and_si128(v, _mm_set1_epi16(0x7C00)), z);
    __m128i lo = _mm_castps_si128(_mm_mul_ps(_mm_cvtepi32_ps(_mm_unpacklo_epi16(m, z)), sc));
    __m128i hi = _mm_castps_si128(_mm_mul_ps(_mm_cvtepi32_ps(_mm_unpackhi_epi16(m, z)), sc));
    __m128i sub = sl__sse2_pack_hi(sl__sse2_bf16rne(lo), sl__sse2_bf16rne(hi));
    return _mm_or_si128(_mm_and_si128(e0, sub),
                        _mm_andnot_si128(_mm_and_si128(e0, _mm_set1_epi16(0x7FFF)),
                                         sl__sse2_f16x8_bf16n(v)));
}
static SL__NOINLINE void sl__sse2_f16x16_bf16_st(unsigned char *d, __m128i a, __m128i b, int nt) {
    if (SL__LIKELY(_mm_movemask_epi8(_mm_or_si128(sl__sse2_f16_infnan(a),
                                                  sl__sse2_f16_infnan(b))) == 0)) {
        sl__st128(d, sl__sse2_f16x8_bf16z(a), nt);
        sl__st128(d + 16, sl__sse2_f16x8_bf16z(b), nt);
        return;
    }
    sl__st128(d, sl__sse2_f16x8_bf16_fp(a), nt);
    sl__st128(d + 16, sl__sse2_f16x8_bf16_fp(b), nt);
}
SL__FORCEINLINE void sl__b_f16_bf16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i a = sl__ld128(s), b = sl__ld128(s + 16);
    if (SL__UNLIKELY(_mm_movemask_epi8(_mm_or_si128(sl__sse2_f16_rare(a),
                                                    sl__sse2_f16_rare(b))) != 0)) {
        sl__sse2_f16x16_bf16_st(d, a, b, nt);
        return;
    }
    sl__st128(d, sl__sse2_f16x8_bf16n(a), nt);
    sl__st128(d + 16, sl__sse2_f16x8_bf16n(b), nt);
}
/* A bf16 whose f16 is normal (exponent 113..142) converts exactly: the exponent rebiased
   (-112) and the mantissa moved up 3 bits, i.e. ((em - (113 << 7)) << 3) + (1 << 10). One
   saturating subtract tells whether every lane of the block is such a bf16; a block that holds
   any other (zero, f16 subnormal or overflow range, Inf, NaN) takes the f32 -> f16 route. */
SL__FORCEINLINE void sl__b_bf16_f16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i v = sl__ld128(s), z = _mm_setzero_si128();
    __m128i em = _mm_and_si128(v, _mm_set1_epi16(0x7FFF));
    __m128i e = _mm_sub_epi16(em, _mm_set1_epi16(113 << 7));       /* 0..0xEFF when normal */
    if (SL__LIKELY(_mm_movemask_epi8(_mm_cmpeq_epi16(
                       _mm_subs_epu16(e, _mm_set1_epi16(0xEFF)), z)) == 0xFFFF)) {
        e = _mm_add_epi16(_mm_slli_epi16(e, 3), _mm_set1_epi16(1 << 10));
        sl__st128(d, _mm_or_si128(e, _mm_xor_si128(v, em)), nt);
        return;
    }
    sl__st128(d, sl__sse2_f32x8_f16_fp(_mm_unpacklo_epi16(z, v), _mm_unpackhi_epi16(z, v)), nt);
}
#  define SL__T128
SL__F8_BLOCKS(sse2, SL__T128, sl__sse2_f8)
SL__INLINE void sl__b_f64_f32_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128 a = _mm_cvtpd_ps(_mm_loadu_pd((const double *)(const void *)s));
    __m128 b = _mm_cvtpd_ps(_mm_loadu_pd((const double *)(const void *)(s + 16)));
    sl__st128(d, _mm_castps_si128(_mm_movelh_ps(a, b)), nt);
}
SL__INLINE void sl__b_f32_f64_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128 v = _mm_loadu_ps((const float *)(const void *)s);
    sl__st128(d, _mm_castpd_si128(_mm_cvtps_pd(v)), nt);
    sl__st128(d + 16, _mm_castpd_si128(_mm_cvtps_pd(_mm_movehl_ps(v, v))), nt);
}
SL__INLINE void sl__b_copy_sse2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st128(d, sl__ld128(s), nt);
    sl__st128(d + 16, sl__ld128(s + 16), nt);
    sl__st128(d + 32, sl__ld128(s + 32), nt);
    sl__st128(d + 48, sl__ld128(s + 48), nt);
}

/* F4, E8M0, FNUZ (see SL__X_FORMATS): 16 elements a block */
#  define SL__XDEC_SSE2(name, MB, BIAS, SB, NAN)                                               \
    SL__INLINE __m128i sl__sse2_dec_##name(__m128i x) {                                        \
        __m128i m = _mm_and_si128(x, SL__X4((1u << (SB)) - 1u)), r;                            \
        __m128i nrm = _mm_add_epi32(_mm_slli_epi32(m, 23 - (MB)), SL__X4((127u - (BIAS)) << 23)); \
        __m128i sub = _mm_sub_epi32(_mm_castps_si128(_mm_cvtepi32_ps(m)),                      \
                                    SL__X4(SL__XMAGIC(MB, BIAS)));                             \
        r = sl__sse2_sel(_mm_cmplt_epi32(m, SL__X4(1u << (MB))), sub, nrm);                    \
        r = _mm_andnot_si128(_mm_cmpeq_epi32(m, _mm_setzero_si128()), r);                      \
        r = _mm_or_si128(r, _mm_slli_epi32(_mm_and_si128(x, SL__X4(1u << (SB))), 31 - (SB)));  \
        if (NAN) r = sl__sse2_sel(_mm_cmpeq_epi32(x, SL__X4(0x80)), SL__X4(0x7FC00000), r);   \
        return r;                                                                              \
    }
SL__X_FORMATS(SL__XDEC_SSE2)
#  undef SL__XDEC_SSE2
SL__INLINE __m128i sl__sse2_dec_e8m0(__m128i x) {
    __m128i r = sl__sse2_sel(_mm_cmpeq_epi32(x, _mm_setzero_si128()), SL__X4(0x00400000),
                             _mm_slli_epi32(x, 23));
    return sl__sse2_sel(_mm_cmpeq_epi32(x, SL__X4(0xFF)), SL__X4(0x7FC00000), r);
}
SL__FORCEINLINE __m128i sl__sse2_dec(__m128i x, int fmt) {
    return fmt == 0 ? sl__sse2_dec_f4(x) : fmt == 1 ? sl__sse2_dec_e8m0(x)
         : fmt == 2 ? sl__sse2_dec_e4m3fnuz(x) : sl__sse2_dec_e5m2fnuz(x);
}
/* The decoded values to f16, exactly (every F4/FNUZ value is an f16; E8M0 is a power of two):
   a normal f16 is a rebias and a shift; below 2^-14 the value times 2^24 is a whole number
   (or below 1, which is 0: an E8M0 of 2^-25 or less), so one exact multiply and a truncating
   conversion give it; 2^16 and up (E8M0) is Inf. sl__sse2_f32x8_f16 would take its FP form for
   every block with a zero. */
SL__INLINE __m128i sl__sse2_xf16(__m128i x) {
    __m128i a = _mm_and_si128(x, SL__X4(0x7FFFFFFF));
    __m128i nrm = _mm_srli_epi32(_mm_sub_epi32(a, SL__X4(0x38000000)), 13);
    __m128i sub = _mm_cvttps_epi32(_mm_mul_ps(_mm_castsi128_ps(a), _mm_set1_ps(16777216.0f)));
    __m128i h = sl__sse2_sel(_mm_cmplt_epi32(a, SL__X4(0x38800000)), sub, nrm);
    h = sl__sse2_sel(_mm_cmpgt_epi32(a, SL__X4(0x477FFFFF)), SL__X4(0x7C00), h);
    return sl__sse2_sel(_mm_cmpgt_epi32(a, SL__X4(0x7F800000)), SL__X4(0x7E00), h);
}
/* 8 packed F4 bytes -> 16 codes in element order (the low nibble first) */
SL__INLINE __m128i sl__sse2_f4codes(__m128i v) {
    __m128i f = _mm_set1_epi8(15);
    return _mm_unpacklo_epi8(_mm_and_si128(v, f), _mm_and_si128(_mm_srli_epi16(v, 4), f));
}
SL__FORCEINLINE void sl__sse2_x(unsigned char *d, const unsigned char *s, int nt, int fmt,
                                int out) {
    __m128i z = _mm_setzero_si128(), f[4], c;
    int k;
    c = fmt == 0 ? sl__sse2_f4codes(_mm_loadl_epi64((const __m128i *)(const void *)s))
                 : sl__ld128(s);
    for (k = 0; k < 2; k++) {
        __m128i w = k ? _mm_unpackhi_epi8(c, z) : _mm_unpacklo_epi8(c, z);
        f[2 * k] = sl__sse2_dec(_mm_unpacklo_epi16(w, z), fmt);
        f[2 * k + 1] = sl__sse2_dec(_mm_unpackhi_epi16(w, z), fmt);
    }
    for (k = 0; k < 4; k++) {
        if (out == 2) sl__st128(d + 16 * k, f[k], nt);
        else if (k % 2 == 0)
            sl__st128(d + 8 * k, out ? sl__sse2_pack_hi(f[k], f[k + 1])
                                     : _mm_or_si128(_mm_packs_epi32(sl__sse2_xf16(f[k]),
                                                                    sl__sse2_xf16(f[k + 1])),
                                                    sl__sse2_sign8(f[k], f[k + 1])), nt);
    }
}

SL__GEN_BOTH(sl__k_f32_f16_sse2, SL__T128, 2, 4, 8, sl__b_f32_f16_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f16_f32_sse2, SL__T128, 4, 2, 16, sl__b_f16_f32_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_bf16_sse2, SL__T128, 2, 4, 8, sl__b_f32_bf16_sse2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_bf16_f32_sse2, SL__T128, 4, 2, 8, sl__b_bf16_f32_sse2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_sse2, SL__T128, 2, 2, 16, sl__b_f16_bf16_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_bf16_f16_sse2, SL__T128, 2, 2, 8, sl__b_bf16_f16_sse2, SL__ENV_MXCSR)
SL__F8_KERNELS(sse2, SL__T128, 64)
SL__GEN_BOTH(sl__k_f64_f32_sse2, SL__T128, 4, 8, 4, sl__b_f64_f32_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_f64_sse2, SL__T128, 8, 4, 4, sl__b_f32_f64_sse2, SL__ENV_MXCSR)
SL__COPY_NT(sse2, SL__T128, sl__b_copy_sse2)
SL__X_KERNELS(sse2, SL__T128, sl__sse2_x, 16, SL__GEN_BOTH, SL__ENV_MXCSR)
#endif /* SL__HAVE_SSE2 */

#if defined(SL__HAVE_AVX)
/* ---- 4d. AVX2 + F16C ---- */
#  define SL__T256 SL__TARGET("avx,avx2,f16c")

SL__INLINE SL__T256 __m256i sl__ld256(const unsigned char *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}
SL__INLINE SL__T256 __m256 sl__ld256f(const unsigned char *p) {
    return _mm256_loadu_ps((const float *)(const void *)p);
}
SL__INLINE SL__T256 void sl__st256(unsigned char *p, __m256i v, int nt) {
    if (nt) _mm256_stream_si256((__m256i *)(void *)p, v);
    else _mm256_storeu_si256((__m256i *)(void *)p, v);
}
SL__INLINE SL__T256 __m256i sl__avx2_join(__m128i lo, __m128i hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}
SL__INLINE SL__T256 __m128i sl__avx2_f32_f16(__m256i x) {
    return _mm256_cvtps_ph(_mm256_castsi256_ps(x), SL__RNE);
}
SL__INLINE SL__T256 __m256i sl__avx2_f16_f32(__m128i h) {
    return _mm256_castps_si256(_mm256_cvtph_ps(h));
}
/* As sl__sse2_bf16rne/bf16hi. Rounding alone is 4 instructions per 8 lanes and NaN handling 4
   more (blendv is 2 on Intel); at memory speed the count still shows, so the blocks below test
   for NaN once per 16 lanes and run the blend only for a block that holds one (real weights
   have none): sl__avx2_bf16x2. */
SL__INLINE SL__T256 __m256i sl__avx2_bf16rne(__m256i x) {
    return _mm256_add_epi32(_mm256_add_epi32(x, SL__X8(0x7FFF)),
                            _mm256_and_si256(_mm256_srli_epi32(x, 16), SL__X8(1)));
}
SL__INLINE SL__T256 __m256i sl__avx2_bf16hi(__m256i x) {
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, SL__X8(0x7FFFFFFF)),
                                     SL__X8(0x7F800000));
    return _mm256_blendv_epi8(sl__avx2_bf16rne(x), _mm256_or_si256(x, SL__X8(0x400000)), nan);
}
SL__INLINE SL__T256 __m256i sl__avx2_pack_hi(__m256i a, __m256i b) {
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(a, 16),
                                                        _mm256_srli_epi32(b, 16)), 0xD8);
}
SL__INLINE SL__T256 void sl__b_f32_f16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__avx2_join(sl__avx2_f32_f16(sl__ld256(s)),
                               sl__avx2_f32_f16(sl__ld256(s + 32))), nt);
}
SL__INLINE SL__T256 void sl__b_f16_f32_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__avx2_f16_f32(sl__ld128(s)), nt);
}
/* 16 f32 (a, b) -> 16 bf16; has_nan: whether any input is a NaN */
SL__INLINE SL__T256 __m256i sl__avx2_bf16x2(__m256i a, __m256i b, int has_nan) {
    if (SL__UNLIKELY(has_nan)) return sl__avx2_pack_hi(sl__avx2_bf16hi(a), sl__avx2_bf16hi(b));
    return sl__avx2_pack_hi(sl__avx2_bf16rne(a), sl__avx2_bf16rne(b));
}
SL__INLINE SL__T256 void sl__b_f32_bf16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    __m256i a = sl__ld256(s), b = sl__ld256(s + 32), abs = SL__X8(0x7FFFFFFF);
    __m256i m = _mm256_max_epu32(_mm256_and_si256(a, abs), _mm256_and_si256(b, abs));
    int nan = _mm256_movemask_epi8(_mm256_cmpgt_epi32(m, SL__X8(0x7F800000))) != 0;
    sl__st256(d, sl__avx2_bf16x2(a, b, nan), nt);
}
SL__INLINE SL__T256 void sl__b_bf16_f32_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, _mm256_slli_epi32(_mm256_cvtepu16_epi32(sl__ld128(s)), 16), nt);
}
SL__INLINE SL__T256 void sl__b_f16_bf16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    /* the NaN test on the f16 inputs: a NaN stays a NaN in f32 */
    __m256i h = _mm256_and_si256(sl__ld256(s), _mm256_set1_epi16(0x7FFF));
    int nan = _mm256_movemask_epi8(_mm256_cmpgt_epi16(h, _mm256_set1_epi16(0x7C00))) != 0;
    sl__st256(d, sl__avx2_bf16x2(sl__avx2_f16_f32(sl__ld128(s)),
                                 sl__avx2_f16_f32(sl__ld128(s + 16)), nan), nt);
}
SL__INLINE SL__T256 void sl__b_bf16_f16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    __m256i lo = _mm256_slli_epi32(_mm256_cvtepu16_epi32(sl__ld128(s)), 16);
    __m256i hi = _mm256_slli_epi32(_mm256_cvtepu16_epi32(sl__ld128(s + 16)), 16);
    sl__st256(d, sl__avx2_join(sl__avx2_f32_f16(lo), sl__avx2_f32_f16(hi)), nt);
}
/* FP8 -> f16/bf16/f32 in the byte domain (see SL__F8_BYTE_KERNELS), written once for W = 256
   (AVX2: 32 elements in about 16 instructions) and W = 512 (AVX-512 without VBMI: 64 in about
   14). The unpacks work inside 128-bit lanes, so the input is first shuffled to where they need
   it for an in-order result (sl__f8q_W: qwords, for 16-bit results; sl__f8d_W: dwords, for f32
   = bf16 << 16 in two unpack steps). sl__f8bc_W broadcasts a 16-byte table to every lane. */
#  define SL__B8X(v) _mm256_set1_epi8((char)(v))
SL__INLINE SL__T256 __m256i sl__f8q_256(__m256i x) { return _mm256_permute4x64_epi64(x, 0xD8); }
SL__INLINE SL__T256 __m256i sl__f8d_256(__m256i x) {
    return _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}
SL__INLINE SL__T256 __m256i sl__f8bc_256(__m128i t) { return _mm256_broadcastsi128_si256(t); }
#  define SL__F8B(W, P, TGT, name, SLOTS, K1, K2, V, A, ML, B, MH, BASE)                       \
    SL__INLINE TGT void sl__##P##_##name(__m##W##i x, __m##W##i *lo, __m##W##i *hi) {           \
        __m##W##i cl = sl__f8bc_##W(_mm_setr_epi8(SLOTS(SL__F8CL, SL__F8CL_N, V, A, ML, B, MH,  \
                                                        BASE)));                               \
        __m##W##i ch = sl__f8bc_##W(_mm_setr_epi8(SLOTS(SL__F8CH, SL__F8CH_N, V, A, ML, B, MH,  \
                                                        BASE)));                               \
        __m##W##i i = _mm##W##_min_epu8(_mm##W##_and_si##W(                                    \
            _mm##W##_add_epi8(x, _mm##W##_set1_epi8(K1)), _mm##W##_set1_epi8(0x7F)),           \
            _mm##W##_set1_epi8(K2));                                                           \
        *lo = _mm##W##_add_epi8(_mm##W##_and_si##W(_mm##W##_slli_epi16(x, A),                  \
                                                   _mm##W##_set1_epi8((char)(ML))),            \
                                _mm##W##_shuffle_epi8(cl, i));                                 \
        *hi = _mm##W##_add_epi8(_mm##W##_and_si##W(_mm##W##_srli_epi16(x, B),                  \
                                                   _mm##W##_set1_epi8(MH)),                    \
                                _mm##W##_shuffle_epi8(ch, i));                                 \
        *hi = _mm##W##_or_si##W(*hi, _mm##W##_and_si##W(x, _mm##W##_set1_epi8((char)0x80)));  \
    }                                                                                          \
    SL__INLINE TGT void sl__b_##name##_##P(unsigned char *d, const unsigned char *s, int nt) { \
        __m##W##i lo, hi;                                                                      \
        sl__##P##_##name(sl__f8q_##W(sl__ld##W(s)), &lo, &hi);                                 \
        sl__st##W(d, _mm##W##_unpacklo_epi8(lo, hi), nt);                                      \
        sl__st##W(d + (W) / 8, _mm##W##_unpackhi_epi8(lo, hi), nt);                            \
    }                                                                                          \
    SL__GEN_BOTH(sl__k_##name##_##P, TGT, 2, 1, (W) / 8, sl__b_##name##_##P,                    \
                 SL__ENV_NONE)
/* f32 = the bf16 bytes with two zero bytes below */
#  define SL__F8F32(W, P, TGT, name, bf)                                                        \
    SL__INLINE TGT void sl__b_##name##_##P(unsigned char *d, const unsigned char *s, int nt) { \
        __m##W##i lo, hi, w0, w1, z = _mm##W##_setzero_si##W();                                \
        sl__##P##_##bf(sl__f8d_##W(sl__ld##W(s)), &lo, &hi);                                   \
        w0 = _mm##W##_unpacklo_epi8(lo, hi);                                                   \
        w1 = _mm##W##_unpackhi_epi8(lo, hi);                                                   \
        sl__st##W(d, _mm##W##_unpacklo_epi16(z, w0), nt);                                      \
        sl__st##W(d + (W) / 8, _mm##W##_unpackhi_epi16(z, w0), nt);                            \
        sl__st##W(d + (W) / 4, _mm##W##_unpacklo_epi16(z, w1), nt);                            \
        sl__st##W(d + 3 * (W) / 8, _mm##W##_unpackhi_epi16(z, w1), nt);                        \
    }                                                                                          \
    SL__GEN_BOTH(sl__k_##name##_##P, TGT, 4, 1, (W) / 8, sl__b_##name##_##P,                    \
                 SL__ENV_NONE)
#  define SL__F8B_AVX2(...) SL__F8B(256, avx2, SL__T256, __VA_ARGS__)
SL__F8_BYTE_KERNELS(SL__F8B_AVX2)
SL__F8F32(256, avx2, SL__T256, e4m3_f32, e4m3_bf16)
SL__F8F32(256, avx2, SL__T256, e5m2_f32, e5m2_bf16)
#  undef SL__F8B_AVX2
SL__INLINE SL__T256 void sl__b_e5m2_f16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    __m256i x = sl__f8q_256(sl__ld256(s)), z = _mm256_setzero_si256();
    __m256i nan = _mm256_cmpgt_epi8(_mm256_and_si256(x, SL__B8X(0x7F)), SL__B8X(0x7C));
    x = _mm256_or_si256(x, _mm256_and_si256(nan, SL__B8X(0x02)));
    sl__st256(d, _mm256_unpacklo_epi8(z, x), nt);
    sl__st256(d + 32, _mm256_unpackhi_epi8(z, x), nt);
}
SL__GEN_BOTH(sl__k_e5m2_f16_avx2, SL__T256, 2, 1, 32, sl__b_e5m2_f16_avx2, SL__ENV_NONE)
SL__INLINE SL__T256 void sl__b_f64_f32_avx2(unsigned char *d, const unsigned char *s, int nt) {
    __m128 a = _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(const void *)s));
    __m128 b = _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(const void *)(s + 32)));
    sl__st256(d, sl__avx2_join(_mm_castps_si128(a), _mm_castps_si128(b)), nt);
}
SL__INLINE SL__T256 void sl__b_f32_f64_avx2(unsigned char *d, const unsigned char *s, int nt) {
    __m256 v = sl__ld256f(s);
    sl__st256(d, _mm256_castpd_si256(_mm256_cvtps_pd(_mm256_castps256_ps128(v))), nt);
    sl__st256(d + 32, _mm256_castpd_si256(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))), nt);
}
SL__INLINE SL__T256 void sl__b_copy_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__ld256(s), nt);
    sl__st256(d + 32, sl__ld256(s + 32), nt);
}

SL__GEN_BOTH(sl__k_f32_f16_avx2, SL__T256, 2, 4, 16, sl__b_f32_f16_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f16_f32_avx2, SL__T256, 4, 2, 8, sl__b_f16_f32_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_bf16_avx2, SL__T256, 2, 4, 16, sl__b_f32_bf16_avx2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_bf16_f32_avx2, SL__T256, 4, 2, 8, sl__b_bf16_f32_avx2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_avx2, SL__T256, 2, 2, 16, sl__b_f16_bf16_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_bf16_f16_avx2, SL__T256, 2, 2, 16, sl__b_bf16_f16_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f64_f32_avx2, SL__T256, 4, 8, 8, sl__b_f64_f32_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_f64_avx2, SL__T256, 8, 4, 8, sl__b_f32_f64_avx2, SL__ENV_MXCSR)
SL__COPY_NT(avx2, SL__T256, sl__b_copy_avx2)
/* F4, E8M0, FNUZ (see SL__X_FORMATS): 32 elements a block */
#  define SL__XDEC_AVX2(name, MB, BIAS, SB, NAN)                                               \
    SL__INLINE SL__T256 __m256i sl__avx2_dec_##name(__m256i x) {                               \
        __m256i m = _mm256_and_si256(x, SL__X8((1u << (SB)) - 1u)), r;                         \
        __m256i nrm = _mm256_add_epi32(_mm256_slli_epi32(m, 23 - (MB)),                        \
                                       SL__X8((127u - (BIAS)) << 23));                         \
        __m256i sub = _mm256_sub_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(m)),             \
                                       SL__X8(SL__XMAGIC(MB, BIAS)));                          \
        r = _mm256_blendv_epi8(nrm, sub, _mm256_cmpgt_epi32(SL__X8(1u << (MB)), m));           \
        r = _mm256_andnot_si256(_mm256_cmpeq_epi32(m, _mm256_setzero_si256()), r);             \
        r = _mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(x, SL__X8(1u << (SB))),      \
                                                 31 - (SB)));                                  \
        if (NAN)                                                                               \
            r = _mm256_blendv_epi8(r, SL__X8(0x7FC00000), _mm256_cmpeq_epi32(x, SL__X8(0x80))); \
        return r;                                                                              \
    }
SL__X_FORMATS(SL__XDEC_AVX2)
#  undef SL__XDEC_AVX2
SL__INLINE SL__T256 __m256i sl__avx2_dec_e8m0(__m256i x) {
    __m256i r = _mm256_blendv_epi8(_mm256_slli_epi32(x, 23), SL__X8(0x00400000),
                                   _mm256_cmpeq_epi32(x, _mm256_setzero_si256()));
    return _mm256_blendv_epi8(r, SL__X8(0x7FC00000), _mm256_cmpeq_epi32(x, SL__X8(0xFF)));
}
SL__FORCEINLINE SL__T256 __m256i sl__avx2_dec(__m128i c, int fmt) {     /* 8 codes of c */
    __m256i x = _mm256_cvtepu8_epi32(c);
    return fmt == 0 ? sl__avx2_dec_f4(x) : fmt == 1 ? sl__avx2_dec_e8m0(x)
         : fmt == 2 ? sl__avx2_dec_e4m3fnuz(x) : sl__avx2_dec_e5m2fnuz(x);
}
SL__FORCEINLINE SL__T256 void sl__avx2_x(unsigned char *d, const unsigned char *s, int nt,
                                         int fmt, int out) {
    __m128i c[2];
    __m256i f[4];
    int k;
    c[0] = sl__ld128(s);                /* FP8 codes (F4 has table kernels here: sl__f4t) */
    c[1] = sl__ld128(s + 16);
    for (k = 0; k < 4; k++) f[k] = sl__avx2_dec(k % 2 ? _mm_srli_si128(c[k / 2], 8) : c[k / 2], fmt);
    for (k = 0; k < 4; k++) {
        if (out == 2) sl__st256(d + 32 * k, f[k], nt);
        else if (k % 2 == 0)
            sl__st256(d + 16 * k, out ? sl__avx2_pack_hi(f[k], f[k + 1])
                                      : sl__avx2_join(sl__avx2_f32_f16(f[k]),
                                                      sl__avx2_f32_f16(f[k + 1])), nt);
    }
}
SL__X_KERNELS_F8(avx2, SL__T256, sl__avx2_x, 32, SL__GEN_BOTH, SL__ENV_MXCSR)
/* F4 by table: codes in element order (sl__f4c_W), then, as the FP8 byte kernels, a lane
   permutation for in-order unpacks (q: 16-bit results; d: f32) and two 16-entry pshufb lookups
   of the result bytes (every F4 value's f16 has a zero low byte); f32 is bf16 << 16. */
SL__INLINE SL__T256 __m256i sl__f4c_256(const unsigned char *s) {      /* 16 bytes: 32 codes */
    __m128i v = sl__ld128(s), m = _mm_set1_epi8(15);
    __m128i lo = _mm_and_si128(v, m), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
    return sl__avx2_join(_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi));
}
#  define SL__F4K(W, P, TGT)                                                                   \
    SL__FORCEINLINE TGT void sl__##P##_f4t(unsigned char *d, const unsigned char *s, int nt,  \
                                           int out) {                                          \
        __m##W##i c = sl__f4c_##W(s), z = _mm##W##_setzero_si##W(), lo, hi, w0, w1;           \
        c = out == 2 ? sl__f8d_##W(c) : sl__f8q_##W(c);                                        \
        if (out == 0) {                                                                        \
            hi = _mm##W##_shuffle_epi8(sl__f8bc_##W(SL__F4TAB(SL__F4HI, SL__V_F4_F16)), c);    \
            sl__st##W(d, _mm##W##_unpacklo_epi8(z, hi), nt);                                   \
            sl__st##W(d + (W) / 8, _mm##W##_unpackhi_epi8(z, hi), nt);                         \
            return;                                                                            \
        }                                                                                      \
        lo = _mm##W##_shuffle_epi8(sl__f8bc_##W(SL__F4TAB(SL__F4LO, SL__V_F4_BF16)), c);       \
        hi = _mm##W##_shuffle_epi8(sl__f8bc_##W(SL__F4TAB(SL__F4HI, SL__V_F4_BF16)), c);       \
        w0 = _mm##W##_unpacklo_epi8(lo, hi);                                                   \
        w1 = _mm##W##_unpackhi_epi8(lo, hi);                                                   \
        if (out == 1) {                                                                        \
            sl__st##W(d, w0, nt);                                                              \
            sl__st##W(d + (W) / 8, w1, nt);                                                    \
            return;                                                                            \
        }                                                                                      \
        sl__st##W(d, _mm##W##_unpacklo_epi16(z, w0), nt);                                      \
        sl__st##W(d + (W) / 8, _mm##W##_unpackhi_epi16(z, w0), nt);                            \
        sl__st##W(d + (W) / 4, _mm##W##_unpacklo_epi16(z, w1), nt);                            \
        sl__st##W(d + 3 * (W) / 8, _mm##W##_unpackhi_epi16(z, w1), nt);                        \
    }                                                                                          \
    SL__INLINE TGT void sl__b_f4_f16_##P##t(unsigned char *d, const unsigned char *s, int nt) { \
        sl__##P##_f4t(d, s, nt, 0);                                                            \
    }                                                                                          \
    SL__INLINE TGT void sl__b_f4_bf16_##P##t(unsigned char *d, const unsigned char *s, int nt) { \
        sl__##P##_f4t(d, s, nt, 1);                                                            \
    }                                                                                          \
    SL__INLINE TGT void sl__b_f4_f32_##P##t(unsigned char *d, const unsigned char *s, int nt) { \
        sl__##P##_f4t(d, s, nt, 2);                                                            \
    }                                                                                          \
    SL__GEN_BOTH(sl__k_f4_f16_##P##t, TGT, 4, 1, (W) / 16, sl__b_f4_f16_##P##t, SL__ENV_NONE)   \
    SL__GEN_BOTH(sl__k_f4_bf16_##P##t, TGT, 4, 1, (W) / 16, sl__b_f4_bf16_##P##t, SL__ENV_NONE) \
    SL__GEN_BOTH(sl__k_f4_f32_##P##t, TGT, 8, 1, (W) / 16, sl__b_f4_f32_##P##t, SL__ENV_NONE)
SL__F4K(256, avx2, SL__T256)

/* ---- 4e. AVX-512 F + BW ---- */
/* g++ 12 warns (-Wmaybe-uninitialized, -Wuninitialized) inside many AVX-512 intrinsics, whose
   _mm512_undefined_*() self-initialise (gcc bug 105593, fixed in gcc 13). */
#  if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#    pragma GCC diagnostic ignored "-Wuninitialized"
#  endif
#  define SL__T512 SL__TARGET("avx,avx2,f16c,avx512f,avx512bw")

SL__INLINE SL__T512 __m512i sl__ld512(const unsigned char *p) {
    return _mm512_loadu_si512((const void *)p);
}
SL__INLINE SL__T512 void sl__st512(unsigned char *p, __m512i v, int nt) {
    if (nt) _mm512_stream_si512((__m512i *)(void *)p, v);
    else _mm512_storeu_si512((void *)p, v);
}
SL__INLINE SL__T512 __m512i sl__avx512_join(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
/* the masked form with every lane set: gcc's -O0 macro for the plain one passes -1 as a
   __mmask16, a -Wsign-conversion warning in the user's build; the instruction is the same */
SL__INLINE SL__T512 __m256i sl__avx512_f32_f16(__m512i x) {
    return _mm512_mask_cvtps_ph(_mm256_setzero_si256(), (__mmask16)0xFFFF,
                                _mm512_castsi512_ps(x), SL__RNE);
}
SL__INLINE SL__T512 __m512i sl__avx512_f16_f32(__m256i h) {
    return _mm512_castps_si512(_mm512_cvtph_ps(h));
}
SL__INLINE SL__T512 __m512i sl__avx512_bf16hi(__m512i x) {
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), SL__X16(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, SL__X16(0x7FFF)), lsb);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, SL__X16(0x7FFFFFFF)),
                                            SL__X16(0x7F800000));
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(x, SL__X16(0x400000)));
}
/* The high 16-bit halves of a's and b's 32-bit lanes, in order (one vpermt2w). */
SL__INLINE SL__T512 __m512i sl__avx512_pack_hi(__m512i a, __m512i b) {
#  define SL__PK(k) (int)((4u * (k) + 1u) | ((4u * (k) + 3u) << 16))
    const __m512i idx = _mm512_setr_epi32(SL__PK(0), SL__PK(1), SL__PK(2), SL__PK(3), SL__PK(4),
                                          SL__PK(5), SL__PK(6), SL__PK(7), SL__PK(8), SL__PK(9),
                                          SL__PK(10), SL__PK(11), SL__PK(12), SL__PK(13),
                                          SL__PK(14), SL__PK(15));
#  undef SL__PK
    return _mm512_permutex2var_epi16(a, idx, b);
}
SL__INLINE SL__T512 __m512i sl__avx512_bf16_f32(__m256i b) {
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
}
SL__INLINE SL__T512 void sl__b_f32_f16_avx512(unsigned char *d, const unsigned char *s,
                                                    int nt) {
    sl__st512(d, sl__avx512_join(sl__avx512_f32_f16(sl__ld512(s)),
                                 sl__avx512_f32_f16(sl__ld512(s + 64))), nt);
}
SL__INLINE SL__T512 void sl__b_f16_f32_avx512(unsigned char *d, const unsigned char *s,
                                                    int nt) {
    sl__st512(d, sl__avx512_f16_f32(sl__ld256(s)), nt);
}
SL__INLINE SL__T512 void sl__b_f32_bf16_avx512(unsigned char *d, const unsigned char *s,
                                                     int nt) {
    sl__st512(d, sl__avx512_pack_hi(sl__avx512_bf16hi(sl__ld512(s)),
                                    sl__avx512_bf16hi(sl__ld512(s + 64))), nt);
}
SL__INLINE SL__T512 void sl__b_bf16_f32_avx512(unsigned char *d, const unsigned char *s,
                                                     int nt) {
    sl__st512(d, sl__avx512_bf16_f32(sl__ld256(s)), nt);
}
SL__INLINE SL__T512 void sl__b_f16_bf16_avx512(unsigned char *d, const unsigned char *s,
                                                     int nt) {
    sl__st512(d, sl__avx512_pack_hi(sl__avx512_bf16hi(sl__avx512_f16_f32(sl__ld256(s))),
                                    sl__avx512_bf16hi(sl__avx512_f16_f32(sl__ld256(s + 32)))),
              nt);
}
SL__INLINE SL__T512 void sl__b_bf16_f16_avx512(unsigned char *d, const unsigned char *s,
                                                     int nt) {
    sl__st512(d, sl__avx512_join(sl__avx512_f32_f16(sl__avx512_bf16_f32(sl__ld256(s))),
                                 sl__avx512_f32_f16(sl__avx512_bf16_f32(sl__ld256(s + 32)))),
              nt);
}
/* FP8 -> f16/bf16/f32 in the byte domain: SL__F8B and SL__F8F32 of 4d at W = 512. */
#  define SL__B8Z(v) _mm512_set1_epi8((char)(v))
SL__INLINE SL__T512 __m512i sl__f8q_512(__m512i x) {
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), x);
}
SL__INLINE SL__T512 __m512i sl__f8d_512(__m512i x) {
    return _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), x);
}
SL__INLINE SL__T512 __m512i sl__f8bc_512(__m128i t) { return _mm512_broadcast_i32x4(t); }
#  define SL__F8B_AVX512(...) SL__F8B(512, avx512, SL__T512, __VA_ARGS__)
SL__F8_BYTE_KERNELS(SL__F8B_AVX512)
SL__F8F32(512, avx512, SL__T512, e4m3_f32, e4m3_bf16)
SL__F8F32(512, avx512, SL__T512, e5m2_f32, e5m2_bf16)
#  undef SL__F8B_AVX512
SL__INLINE SL__T512 void sl__b_e5m2_f16_avx512(unsigned char *d, const unsigned char *s,
                                                     int nt) {
    __m512i x = sl__f8q_512(sl__ld512(s));
    __mmask64 nan = _mm512_cmpgt_epu8_mask(_mm512_and_si512(x, SL__B8Z(0x7F)), SL__B8Z(0x7C));
    __m512i z = _mm512_setzero_si512();
    x = _mm512_or_si512(x, _mm512_maskz_mov_epi8(nan, SL__B8Z(0x02)));
    sl__st512(d, _mm512_unpacklo_epi8(z, x), nt);
    sl__st512(d + 64, _mm512_unpackhi_epi8(z, x), nt);
}
SL__GEN_BOTH(sl__k_e5m2_f16_avx512, SL__T512, 2, 1, 64, sl__b_e5m2_f16_avx512, SL__ENV_NONE)
SL__INLINE SL__T512 void sl__b_f64_f32_avx512(unsigned char *d, const unsigned char *s,
                                                    int nt) {
    __m256 a = _mm512_cvt_roundpd_ps(_mm512_loadu_pd((const void *)s), SL__RNE);
    __m256 b = _mm512_cvt_roundpd_ps(_mm512_loadu_pd((const void *)(s + 64)), SL__RNE);
    sl__st512(d, sl__avx512_join(_mm256_castps_si256(a), _mm256_castps_si256(b)), nt);
}
SL__INLINE SL__T512 void sl__b_f32_f64_avx512(unsigned char *d, const unsigned char *s,
                                                    int nt) {
    sl__st512(d, _mm512_castpd_si512(_mm512_cvtps_pd(sl__ld256f(s))), nt);
    sl__st512(d + 64, _mm512_castpd_si512(_mm512_cvtps_pd(sl__ld256f(s + 32))), nt);
}
SL__INLINE SL__T512 void sl__b_copy_avx512(unsigned char *d, const unsigned char *s,
                                                 int nt) {
    sl__st512(d, sl__ld512(s), nt);
}

SL__GEN_BOTH(sl__k_f32_f16_avx512, SL__T512, 2, 4, 32, sl__b_f32_f16_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f16_f32_avx512, SL__T512, 4, 2, 16, sl__b_f16_f32_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_bf16_avx512, SL__T512, 2, 4, 32, sl__b_f32_bf16_avx512, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_bf16_f32_avx512, SL__T512, 4, 2, 16, sl__b_bf16_f32_avx512, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_avx512, SL__T512, 2, 2, 32, sl__b_f16_bf16_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_bf16_f16_avx512, SL__T512, 2, 2, 32, sl__b_bf16_f16_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f64_f32_avx512, SL__T512, 4, 8, 16, sl__b_f64_f32_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_f64_avx512, SL__T512, 8, 4, 16, sl__b_f32_f64_avx512, SL__ENV_MXCSR)
SL__COPY_NT(avx512, SL__T512, sl__b_copy_avx512)
/* F4, E8M0, FNUZ (see SL__X_FORMATS): 64 elements a block */
#  define SL__XDEC_AVX512(name, MB, BIAS, SB, NAN)                                             \
    SL__INLINE SL__T512 __m512i sl__avx512_dec_##name(__m512i x) {                             \
        __m512i m = _mm512_and_si512(x, SL__X16((1u << (SB)) - 1u)), r;                        \
        __m512i nrm = _mm512_add_epi32(_mm512_slli_epi32(m, 23 - (MB)),                        \
                                       SL__X16((127u - (BIAS)) << 23));                        \
        __m512i sub = _mm512_sub_epi32(_mm512_castps_si512(_mm512_cvtepi32_ps(m)),             \
                                       SL__X16(SL__XMAGIC(MB, BIAS)));                         \
        r = _mm512_mask_mov_epi32(nrm, _mm512_cmplt_epu32_mask(m, SL__X16(1u << (MB))), sub);   \
        r = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(m, m), r);                           \
        r = _mm512_or_si512(r, _mm512_slli_epi32(_mm512_and_si512(x, SL__X16(1u << (SB))),     \
                                                 31 - (SB)));                                  \
        if (NAN)                                                                               \
            r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(x, SL__X16(0x80)),            \
                                      SL__X16(0x7FC00000));                                    \
        return r;                                                                              \
    }
SL__X_FORMATS(SL__XDEC_AVX512)
#  undef SL__XDEC_AVX512
SL__INLINE SL__T512 __m512i sl__avx512_dec_e8m0(__m512i x) {
    __m512i r = _mm512_mask_mov_epi32(_mm512_slli_epi32(x, 23),
                                      _mm512_cmpeq_epi32_mask(x, _mm512_setzero_si512()),
                                      SL__X16(0x00400000));
    return _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(x, SL__X16(0xFF)),
                                 SL__X16(0x7FC00000));
}
SL__FORCEINLINE SL__T512 __m512i sl__avx512_dec(__m128i c, int fmt) {   /* 16 codes */
    __m512i x = _mm512_cvtepu8_epi32(c);
    return fmt == 0 ? sl__avx512_dec_f4(x) : fmt == 1 ? sl__avx512_dec_e8m0(x)
         : fmt == 2 ? sl__avx512_dec_e4m3fnuz(x) : sl__avx512_dec_e5m2fnuz(x);
}
SL__FORCEINLINE SL__T512 void sl__avx512_x(unsigned char *d, const unsigned char *s, int nt,
                                           int fmt, int out) {
    __m128i c[4];
    __m512i f[4];
    int k;
    for (k = 0; k < 4; k++) {           /* FP8 codes (F4 has table kernels here) */
        c[k] = sl__ld128(s + 16 * k);
        f[k] = sl__avx512_dec(c[k], fmt);
    }
    for (k = 0; k < 4; k++) {
        if (out == 2) sl__st512(d + 64 * k, f[k], nt);
        else if (k % 2 == 0)
            sl__st512(d + 32 * k,
                      out ? sl__avx512_join(_mm512_cvtepi32_epi16(_mm512_srli_epi32(f[k], 16)),
                                            _mm512_cvtepi32_epi16(_mm512_srli_epi32(f[k + 1], 16)))
                          : sl__avx512_join(sl__avx512_f32_f16(f[k]), sl__avx512_f32_f16(f[k + 1])),
                      nt);
    }
}
SL__X_KERNELS_F8(avx512, SL__T512, sl__avx512_x, 64, SL__GEN_BOTH, SL__ENV_MXCSR)
SL__INLINE SL__T512 __m512i sl__f4c_512(const unsigned char *s) {      /* 32 bytes: 64 codes */
    __m256i v = sl__ld256(s), m = _mm256_set1_epi8(15);
    __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
    /* in-lane unpacks give codes [0..15 | 32..47] and [16..31 | 48..63]: put them in order */
    /* both halves filled before the permute (a cast leaves the upper half undefined, which
       MemorySanitizer counts against every lane of a two-source permute) */
    __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_unpacklo_epi8(lo, hi)),
                                   _mm256_unpackhi_epi8(lo, hi), 1);
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7), x);
}
SL__F4K(512, avx512, SL__T512)

/* ---- 4f. AVX-512 VBMI: FP8 to f16/bf16 by table. Each FP8 value is exact in f16 and bf16,
   so the result is a function of the byte alone: vpermi2b looks up the low and the high result
   byte of the 7 magnitude bits in two 128-byte tables and the sign bit is OR'ed in. That is
   about 6 instructions per 64 elements, against 14 for the byte-domain kernels of 4e, and at
   memory speed the count still shows. The tables are SL__V_* (4b) written out as constant
   expressions (test_cast checks every byte against the scalar reference). The avx512 and
   avx512bf16 paths use them when the CPU has VBMI (Ice Lake, Zen 4 and later). ---- */
#  define SL__TVBMI SL__TARGET("avx,avx2,f16c,avx512f,avx512bw,avx512vbmi")
#  define SL__VLO(V, m) (unsigned char)(V(m) & 0xFF)
#  define SL__VHI(V, m) (unsigned char)(V(m) >> 8)
#  define SL__V8(B, V, m) B(V, (m)), B(V, (m) + 1), B(V, (m) + 2), B(V, (m) + 3), B(V, (m) + 4), \
    B(V, (m) + 5), B(V, (m) + 6), B(V, (m) + 7)
#  define SL__V64(B, V, m) SL__V8(B, V, (m)), SL__V8(B, V, (m) + 8), SL__V8(B, V, (m) + 16),   \
    SL__V8(B, V, (m) + 24), SL__V8(B, V, (m) + 32), SL__V8(B, V, (m) + 40),                    \
    SL__V8(B, V, (m) + 48), SL__V8(B, V, (m) + 56)
#  define SL__VTAB(V) { { SL__V64(SL__VLO, V, 0) }, { SL__V64(SL__VLO, V, 64) },               \
                        { SL__V64(SL__VHI, V, 0) }, { SL__V64(SL__VHI, V, 64) } }
/* [direction][low bytes 0..63, 64..127, high bytes 0..63, 64..127] */
static const unsigned char sl__f8tab[4][4][64] = {
    SL__VTAB(SL__V_E4M3_F16), SL__VTAB(SL__V_E4M3_BF16),
    SL__VTAB(SL__V_E5M2_F16), SL__VTAB(SL__V_E5M2_BF16)
};
#  undef SL__VTAB
#  undef SL__V64
#  undef SL__V8
#  undef SL__VLO
#  undef SL__VHI
/* 64 FP8 bytes -> 64 16-bit results with table t. The qword shuffle first puts bytes 8k..8k+7
   where unpacklo/unpackhi (which work inside 128-bit lanes) need them for an in-order result. */
SL__INLINE SL__TVBMI void sl__vbmi_f8(unsigned char *d, const unsigned char *s, int nt, int t) {
    const unsigned char (*tb)[64] = sl__f8tab[t];
    __m512i x = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), sl__ld512(s));
    __m512i lo = _mm512_permutex2var_epi8(sl__ld512(tb[0]), x, sl__ld512(tb[1]));
    __m512i hi = _mm512_permutex2var_epi8(sl__ld512(tb[2]), x, sl__ld512(tb[3]));
    hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8((char)0x80), 0xF8); /* hi | x & 0x80 */
    sl__st512(d, _mm512_unpacklo_epi8(lo, hi), nt);
    sl__st512(d + 64, _mm512_unpackhi_epi8(lo, hi), nt);
}
#  define SL__VBMI_KERNEL(name, t)                                                             \
    SL__INLINE SL__TVBMI void sl__b_##name##_vbmi(unsigned char *d, const unsigned char *s,    \
                                                  int nt) {                                    \
        sl__vbmi_f8(d, s, nt, t);                                                              \
    }                                                                                          \
    SL__GEN_BOTH(sl__k_##name##_vbmi, SL__TVBMI, 2, 1, 64, sl__b_##name##_vbmi, SL__ENV_NONE)
SL__VBMI_KERNEL(e4m3_f16, 0)
SL__VBMI_KERNEL(e4m3_bf16, 1)
SL__VBMI_KERNEL(e5m2_f16, 2)
SL__VBMI_KERNEL(e5m2_bf16, 3)
#  undef SL__VBMI_KERNEL

/* ---- 4g. AVX512_BF16: vcvtne2ps2bf16 treats fp32 subnormal inputs as zero, so each 32-element
   block that holds one (1 <= |bits| <= 0x7FFFFF) is redone with the integer AVX-512 block.
   f16 inputs are never fp32 subnormals, so f16->bf16 needs no check. Other directions use the
   AVX-512 kernels (this instruction adds nothing to them). ---- */
#  define SL__TBF16 SL__TARGET("avx,avx2,f16c,avx512f,avx512bw,avx512bf16")
#  if defined(_MSC_VER) && !defined(__clang__)
#    define SL__BH_AS_SI512(v) (v)
#  else
#    define SL__BH_AS_SI512(v) ((__m512i)(v))
#  endif

SL__INLINE SL__TBF16 __m512i sl__bf16_cvt(__m512i a, __m512i b) {
    return SL__BH_AS_SI512(_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(b), _mm512_castsi512_ps(a)));
}
SL__INLINE SL__TBF16 void sl__b_f32_bf16_avx512bf16(unsigned char *d, const unsigned char *s,
                                                       int nt) {
    __m512i a = sl__ld512(s), b = sl__ld512(s + 64), abs = SL__X16(0x7FFFFFFF);
    __m512i one = SL__X16(1), top = SL__X16(0x7FFFFF);
    __mmask16 sa = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(_mm512_and_si512(a, abs), one), top);
    __mmask16 sb = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(_mm512_and_si512(b, abs), one), top);
    if (SL__UNLIKELY((sa | sb) != 0)) sl__b_f32_bf16_avx512(d, s, nt);
    else sl__st512(d, sl__bf16_cvt(a, b), nt);
}
SL__INLINE SL__TBF16 void sl__b_f16_bf16_avx512bf16(unsigned char *d, const unsigned char *s,
                                                       int nt) {
    sl__st512(d, sl__bf16_cvt(sl__avx512_f16_f32(sl__ld256(s)),
                              sl__avx512_f16_f32(sl__ld256(s + 32))), nt);
}
SL__GEN_BOTH(sl__k_f32_bf16_avx512bf16, SL__TBF16, 2, 4, 32, sl__b_f32_bf16_avx512bf16,
             SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_avx512bf16, SL__TBF16, 2, 2, 32, sl__b_f16_bf16_avx512bf16,
             SL__ENV_MXCSR)
#  if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic pop
#  endif
#endif /* SL__HAVE_AVX */

#if defined(SL__HAVE_NEON)
/* ---- 4h. NEON (AArch64). FCVTN/FCVTL/FCVT and FMUL follow FPCR (RMode, FZ, DN, AHP), so
   the FP kernels run with FPCR = 0 (RNE, IEEE half, no flush, NaN propagation) and restore it.
   bf16 rounding is integer. Loads and stores go through u8 vectors: no alignment needed.
   There is no non-temporal variant (nt is ignored on this path). ---- */
#  include <arm_neon.h>
SL__INLINE uint64_t sl__fpcr_get(void) {
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v) : : "memory");
    return v;
}
SL__INLINE void sl__fpcr_set(uint64_t v) {
    __asm__ __volatile__("msr fpcr, %0" : : "r"(v) : "memory");
}
#  define SL__ENV_FPCR_ENTER uint64_t sl__fpcr = sl__fpcr_get(); if (sl__fpcr) sl__fpcr_set(0)
#  define SL__ENV_FPCR_LEAVE if (sl__fpcr) sl__fpcr_set(sl__fpcr)
#  define SL__TNEON

SL__INLINE uint32x4_t sl__nld32(const unsigned char *p) {
    return vreinterpretq_u32_u8(vld1q_u8(p));
}
SL__INLINE uint16x8_t sl__nld16(const unsigned char *p) {
    return vreinterpretq_u16_u8(vld1q_u8(p));
}
SL__INLINE void sl__nst32(unsigned char *p, uint32x4_t v) { vst1q_u8(p, vreinterpretq_u8_u32(v)); }
SL__INLINE void sl__nst16(unsigned char *p, uint16x8_t v) { vst1q_u8(p, vreinterpretq_u8_u16(v)); }
SL__INLINE uint16x4_t sl__neon_f32_f16(uint32x4_t x) {
    return vreinterpret_u16_f16(vcvt_f16_f32(vreinterpretq_f32_u32(x)));
}
SL__INLINE uint32x4_t sl__neon_f16_f32(uint16x4_t h) {
    return vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(h)));
}
SL__INLINE uint16x8_t sl__neon_f32x2_f16(uint32x4_t a, uint32x4_t b) {
    return vcombine_u16(sl__neon_f32_f16(a), sl__neon_f32_f16(b));
}
SL__INLINE uint32x4_t sl__neon_bf16hi(uint32x4_t x) {
    uint32x4_t lsb = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(vaddq_u32(x, vdupq_n_u32(0x7FFF)), lsb);
    uint32x4_t nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7FFFFFFF)), vdupq_n_u32(0x7F800000));
    return vbslq_u32(nan, vorrq_u32(x, vdupq_n_u32(0x400000)), r);
}
SL__INLINE uint16x8_t sl__neon_pack_hi(uint32x4_t a, uint32x4_t b) {
    return vcombine_u16(vshrn_n_u32(sl__neon_bf16hi(a), 16), vshrn_n_u32(sl__neon_bf16hi(b), 16));
}
/* FP8 in 16-bit lanes: the same integer formulas as sl__sse2_e4m3_16 and friends. */
SL__INLINE uint16x8_t sl__neon_e4m3_16(uint16x8_t x, int bf) {
    uint16x8_t m = vandq_u16(x, vdupq_n_u16(0x7F));
    uint16x8_t s = vshlq_n_u16(vandq_u16(x, vdupq_n_u16(0x80)), 8);
    uint16x8_t c2 = vcgtq_u16(m, vdupq_n_u16(1)), c4 = vcgtq_u16(m, vdupq_n_u16(3));
    uint16x8_t nrm, mul, sub, one, r;
    if (bf) {
        nrm = vaddq_u16(vshlq_n_u16(m, 4), vdupq_n_u16(120 << 7));
        mul = vsubq_u16(vsubq_u16(vdupq_n_u16(128), vandq_u16(c2, vdupq_n_u16(64))),
                        vandq_u16(c4, vdupq_n_u16(32)));
        sub = vaddq_u16(vmulq_u16(m, mul), vdupq_n_u16(117 << 7));
        one = vdupq_n_u16(1 << 7);
    } else {
        nrm = vaddq_u16(vshlq_n_u16(m, 7), vdupq_n_u16(8 << 10));
        mul = vsubq_u16(vsubq_u16(vdupq_n_u16(1024), vandq_u16(c2, vdupq_n_u16(512))),
                        vandq_u16(c4, vdupq_n_u16(256)));
        sub = vaddq_u16(vmulq_u16(m, mul), vdupq_n_u16(5 << 10));
        one = vdupq_n_u16(1 << 10);
    }
    sub = vaddq_u16(sub, vaddq_u16(vandq_u16(c2, one), vandq_u16(c4, one)));
    r = vbslq_u16(vcltq_u16(m, vdupq_n_u16(8)), sub, nrm);
    r = vandq_u16(vtstq_u16(m, m), r);
    r = vbslq_u16(vceqq_u16(m, vdupq_n_u16(0x7F)), vdupq_n_u16(bf ? 0x7FC0 : 0x7E00), r);
    return vorrq_u16(r, s);
}
SL__INLINE uint16x8_t sl__neon_e5m2_bf16(uint16x8_t x) {
    uint16x8_t m = vandq_u16(x, vdupq_n_u16(0x7F));
    uint16x8_t s = vshlq_n_u16(vandq_u16(x, vdupq_n_u16(0x80)), 8);
    uint16x8_t c2 = vcgtq_u16(m, vdupq_n_u16(1));
    uint16x8_t nrm = vaddq_u16(vshlq_n_u16(m, 5), vdupq_n_u16(112 << 7));
    uint16x8_t mul = vsubq_u16(vdupq_n_u16(128), vandq_u16(c2, vdupq_n_u16(64)));
    uint16x8_t sub = vaddq_u16(vaddq_u16(vmulq_u16(m, mul), vdupq_n_u16(110 << 7)),
                               vandq_u16(c2, vdupq_n_u16(1 << 7)));
    uint16x8_t inf = vorrq_u16(vaddq_u16(vshlq_n_u16(m, 5), vdupq_n_u16(224 << 7)),
                               vandq_u16(vcgtq_u16(m, vdupq_n_u16(0x7C)), vdupq_n_u16(0x40)));
    uint16x8_t r = vbslq_u16(vcltq_u16(m, vdupq_n_u16(4)), sub, nrm);
    r = vandq_u16(vtstq_u16(m, m), r);
    r = vbslq_u16(vcgtq_u16(m, vdupq_n_u16(0x7B)), inf, r);
    return vorrq_u16(r, s);
}
SL__INLINE uint16x8_t sl__neon_e5m2_f16(uint16x8_t x) {
    uint16x8_t h = vshlq_n_u16(x, 8);
    uint16x8_t nan = vcgtq_u16(vandq_u16(h, vdupq_n_u16(0x7FFF)), vdupq_n_u16(0x7C00));
    return vorrq_u16(h, vandq_u16(nan, vdupq_n_u16(0x0200)));
}
SL__INLINE void sl__neon_f8(unsigned char *d, const unsigned char *s, int nt, int e5, int out) {
    uint8x16_t v = vld1q_u8(s);
    uint16x8_t h[2];
    int k;
    (void)nt;
    h[0] = vmovl_u8(vget_low_u8(v));
    h[1] = vmovl_u8(vget_high_u8(v));
    for (k = 0; k < 2; k++) {
        if (out == 0) h[k] = e5 ? sl__neon_e5m2_f16(h[k]) : sl__neon_e4m3_16(h[k], 0);
        else h[k] = e5 ? sl__neon_e5m2_bf16(h[k]) : sl__neon_e4m3_16(h[k], 1);
        if (out < 2) {
            sl__nst16(d + 16 * k, h[k]);
        } else {
            sl__nst32(d + 32 * k, vshll_n_u16(vget_low_u16(h[k]), 16));
            sl__nst32(d + 32 * k + 16, vshll_n_u16(vget_high_u16(h[k]), 16));
        }
    }
}

SL__INLINE void sl__b_f32_f16_neon(unsigned char *d, const unsigned char *s, int nt) {
    (void)nt;
    sl__nst16(d, sl__neon_f32x2_f16(sl__nld32(s), sl__nld32(s + 16)));
}
SL__INLINE void sl__b_f16_f32_neon(unsigned char *d, const unsigned char *s, int nt) {
    uint16x8_t h = sl__nld16(s);
    (void)nt;
    sl__nst32(d, sl__neon_f16_f32(vget_low_u16(h)));
    sl__nst32(d + 16, sl__neon_f16_f32(vget_high_u16(h)));
}
SL__INLINE void sl__b_f32_bf16_neon(unsigned char *d, const unsigned char *s, int nt) {
    (void)nt;
    sl__nst16(d, sl__neon_pack_hi(sl__nld32(s), sl__nld32(s + 16)));
}
SL__INLINE void sl__b_bf16_f32_neon(unsigned char *d, const unsigned char *s, int nt) {
    uint16x8_t b = sl__nld16(s);
    (void)nt;
    sl__nst32(d, vshll_n_u16(vget_low_u16(b), 16));
    sl__nst32(d + 16, vshll_n_u16(vget_high_u16(b), 16));
}
SL__INLINE void sl__b_f16_bf16_neon(unsigned char *d, const unsigned char *s, int nt) {
    uint16x8_t h = sl__nld16(s);
    (void)nt;
    sl__nst16(d, sl__neon_pack_hi(sl__neon_f16_f32(vget_low_u16(h)),
                                  sl__neon_f16_f32(vget_high_u16(h))));
}
SL__INLINE void sl__b_bf16_f16_neon(unsigned char *d, const unsigned char *s, int nt) {
    uint16x8_t b = sl__nld16(s);
    (void)nt;
    sl__nst16(d, sl__neon_f32x2_f16(vshll_n_u16(vget_low_u16(b), 16),
                                    vshll_n_u16(vget_high_u16(b), 16)));
}
SL__F8_BLOCKS(neon, SL__TNEON, sl__neon_f8)
SL__INLINE void sl__b_f64_f32_neon(unsigned char *d, const unsigned char *s, int nt) {
    float64x2_t a = vreinterpretq_f64_u8(vld1q_u8(s)), b = vreinterpretq_f64_u8(vld1q_u8(s + 16));
    (void)nt;
    vst1q_u8(d, vreinterpretq_u8_f32(vcvt_high_f32_f64(vcvt_f32_f64(a), b)));
}
SL__INLINE void sl__b_f32_f64_neon(unsigned char *d, const unsigned char *s, int nt) {
    float32x4_t v = vreinterpretq_f32_u8(vld1q_u8(s));
    (void)nt;
    vst1q_u8(d, vreinterpretq_u8_f64(vcvt_f64_f32(vget_low_f32(v))));
    vst1q_u8(d + 16, vreinterpretq_u8_f64(vcvt_high_f64_f32(v)));
}

/* F4, E8M0, FNUZ (see SL__X_FORMATS): 16 elements a block */
#  define SL__XDEC_NEON(name, MB, BIAS, SB, NAN)                                               \
    SL__INLINE uint32x4_t sl__neon_dec_##name(uint32x4_t x) {                                  \
        uint32x4_t m = vandq_u32(x, vdupq_n_u32((1u << (SB)) - 1u)), r;                        \
        uint32x4_t nrm = vaddq_u32(vshlq_n_u32(m, 23 - (MB)), vdupq_n_u32((127u - (BIAS)) << 23)); \
        uint32x4_t sub = vsubq_u32(vreinterpretq_u32_f32(vcvtq_f32_u32(m)),                    \
                                   vdupq_n_u32(SL__XMAGIC(MB, BIAS)));                         \
        r = vbslq_u32(vcltq_u32(m, vdupq_n_u32(1u << (MB))), sub, nrm);                        \
        r = vandq_u32(vtstq_u32(m, m), r);                                                     \
        r = vorrq_u32(r, vshlq_n_u32(vandq_u32(x, vdupq_n_u32(1u << (SB))), 31 - (SB)));       \
        if (NAN) r = vbslq_u32(vceqq_u32(x, vdupq_n_u32(0x80)), vdupq_n_u32(0x7FC00000), r);   \
        return r;                                                                              \
    }
SL__X_FORMATS(SL__XDEC_NEON)
#  undef SL__XDEC_NEON
SL__INLINE uint32x4_t sl__neon_dec_e8m0(uint32x4_t x) {
    uint32x4_t r = vbslq_u32(vceqq_u32(x, vdupq_n_u32(0)), vdupq_n_u32(0x00400000),
                             vshlq_n_u32(x, 23));
    return vbslq_u32(vceqq_u32(x, vdupq_n_u32(0xFF)), vdupq_n_u32(0x7FC00000), r);
}
SL__INLINE uint32x4_t sl__neon_dec(uint16x4_t c, int fmt) {
    uint32x4_t x = vmovl_u16(c);
    return fmt == 0 ? sl__neon_dec_f4(x) : fmt == 1 ? sl__neon_dec_e8m0(x)
         : fmt == 2 ? sl__neon_dec_e4m3fnuz(x) : sl__neon_dec_e5m2fnuz(x);
}
SL__INLINE void sl__neon_x(unsigned char *d, const unsigned char *s, int nt, int fmt, int out) {
    uint8x16_t c;
    uint32x4_t f[4];
    int k;
    (void)nt;
    if (fmt == 0) {             /* 8 packed bytes -> 16 codes, the low nibble first */
        uint8x8_t v = vld1_u8(s);
        uint8x8x2_t z = vzip_u8(vand_u8(v, vdup_n_u8(15)), vshr_n_u8(v, 4));
        c = vcombine_u8(z.val[0], z.val[1]);
    } else {
        c = vld1q_u8(s);
    }
    for (k = 0; k < 2; k++) {
        uint16x8_t w = vmovl_u8(k ? vget_high_u8(c) : vget_low_u8(c));
        f[2 * k] = sl__neon_dec(vget_low_u16(w), fmt);
        f[2 * k + 1] = sl__neon_dec(vget_high_u16(w), fmt);
    }
    for (k = 0; k < 4; k++) {
        if (out == 2) sl__nst32(d + 16 * k, f[k]);
        else if (k % 2 == 0)
            sl__nst16(d + 8 * k, out ? vcombine_u16(vshrn_n_u32(f[k], 16), vshrn_n_u32(f[k + 1], 16))
                                     : sl__neon_f32x2_f16(f[k], f[k + 1]));
    }
}
SL__X_KERNELS(neon, SL__TNEON, sl__neon_x, 16, SL__GEN_LOOP, SL__ENV_FPCR)

SL__GEN_LOOP(sl__k_f32_f16_neon, SL__TNEON, 2, 4, 8, sl__b_f32_f16_neon, SL__ENV_FPCR)
SL__GEN_LOOP(sl__k_f16_f32_neon, SL__TNEON, 4, 2, 8, sl__b_f16_f32_neon, SL__ENV_FPCR)
SL__GEN_LOOP(sl__k_f32_bf16_neon, SL__TNEON, 2, 4, 8, sl__b_f32_bf16_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_bf16_f32_neon, SL__TNEON, 4, 2, 8, sl__b_bf16_f32_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_f16_bf16_neon, SL__TNEON, 2, 2, 8, sl__b_f16_bf16_neon, SL__ENV_FPCR)
SL__GEN_LOOP(sl__k_bf16_f16_neon, SL__TNEON, 2, 2, 8, sl__b_bf16_f16_neon, SL__ENV_FPCR)
SL__GEN_LOOP(sl__k_e4m3_f16_neon, SL__TNEON, 2, 1, 16, sl__b_e4m3_f16_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_e4m3_bf16_neon, SL__TNEON, 2, 1, 16, sl__b_e4m3_bf16_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_e4m3_f32_neon, SL__TNEON, 4, 1, 16, sl__b_e4m3_f32_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_e5m2_f16_neon, SL__TNEON, 2, 1, 16, sl__b_e5m2_f16_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_e5m2_bf16_neon, SL__TNEON, 2, 1, 16, sl__b_e5m2_bf16_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_e5m2_f32_neon, SL__TNEON, 4, 1, 16, sl__b_e5m2_f32_neon, SL__ENV_NONE)
SL__GEN_LOOP(sl__k_f64_f32_neon, SL__TNEON, 4, 8, 4, sl__b_f64_f32_neon, SL__ENV_FPCR)
SL__GEN_LOOP(sl__k_f32_f64_neon, SL__TNEON, 8, 4, 4, sl__b_f32_f64_neon, SL__ENV_FPCR)
#endif /* SL__HAVE_NEON */

/* ---- 4i. dispatch ---- */
enum {
    SL__C_COPY16, SL__C_COPY32, SL__C_F32_F16, SL__C_F16_F32, SL__C_F32_BF16, SL__C_BF16_F32,
    SL__C_F16_BF16, SL__C_BF16_F16, SL__C_E4M3_F32, SL__C_E4M3_F16, SL__C_E4M3_BF16,
    SL__C_E5M2_F32, SL__C_E5M2_F16, SL__C_E5M2_BF16, SL__C_F64_F32, SL__C_F32_F64,
    SL__C_F4_F32, SL__C_F4_F16, SL__C_F4_BF16, SL__C_E8M0_F32, SL__C_E8M0_F16, SL__C_E8M0_BF16,
    SL__C_E4M3FNUZ_F32, SL__C_E4M3FNUZ_F16, SL__C_E4M3FNUZ_BF16, SL__C_E5M2FNUZ_F32,
    SL__C_E5M2FNUZ_F16, SL__C_E5M2FNUZ_BF16, SL__C_COUNT
};

/* Index of the (dst, src) direction in the kernel tables; -1 when unsupported. */
static int sl__cast_dir(safeload_dtype dst, safeload_dtype src) {
    switch (src) {
    case SAFELOAD_F32:
        switch (dst) {
        case SAFELOAD_F32: return SL__C_COPY32;
        case SAFELOAD_F16: return SL__C_F32_F16;
        case SAFELOAD_BF16: return SL__C_F32_BF16;
        case SAFELOAD_F64: return SL__C_F32_F64;
        default: return -1;
        }
    case SAFELOAD_F16:
        switch (dst) {
        case SAFELOAD_F32: return SL__C_F16_F32;
        case SAFELOAD_F16: return SL__C_COPY16;
        case SAFELOAD_BF16: return SL__C_F16_BF16;
        default: return -1;
        }
    case SAFELOAD_BF16:
        switch (dst) {
        case SAFELOAD_F32: return SL__C_BF16_F32;
        case SAFELOAD_F16: return SL__C_BF16_F16;
        case SAFELOAD_BF16: return SL__C_COPY16;
        default: return -1;
        }
    case SAFELOAD_F8_E4M3:
    case SAFELOAD_F8_E5M2: {
        int e4 = src == SAFELOAD_F8_E4M3;
        switch (dst) {
        case SAFELOAD_F32: return e4 ? SL__C_E4M3_F32 : SL__C_E5M2_F32;
        case SAFELOAD_F16: return e4 ? SL__C_E4M3_F16 : SL__C_E5M2_F16;
        case SAFELOAD_BF16: return e4 ? SL__C_E4M3_BF16 : SL__C_E5M2_BF16;
        default: return -1;
        }
    }
    case SAFELOAD_F64: return dst == SAFELOAD_F32 ? SL__C_F64_F32 : -1;
    case SAFELOAD_F4: case SAFELOAD_F8_E8M0: case SAFELOAD_F8_E4M3FNUZ:
    case SAFELOAD_F8_E5M2FNUZ: {         /* rows of three: to F32, F16, BF16 */
        int row = src == SAFELOAD_F4 ? SL__C_F4_F32 : src == SAFELOAD_F8_E8M0 ? SL__C_E8M0_F32
                : src == SAFELOAD_F8_E4M3FNUZ ? SL__C_E4M3FNUZ_F32 : SL__C_E5M2FNUZ_F32;
        switch (dst) {
        case SAFELOAD_F32: return row;
        case SAFELOAD_F16: return row + 1;
        case SAFELOAD_BF16: return row + 2;
        default: return -1;
        }
    }
    default: return -1;
    }
}

/* A kernel's unit: one element, except from F4, where it is one byte (two elements). *su and
   *du are the bytes of one unit in the source and the destination. */
static void sl__cast_unit(safeload_dtype dst, safeload_dtype src, unsigned *su, unsigned *du) {
    unsigned k = src == SAFELOAD_F4 ? 2u : 1u;
    *su = src == SAFELOAD_F4 ? 1u : (unsigned)safeload_dtype_size(src);
    *du = k * (unsigned)safeload_dtype_size(dst);
}

/* Kernel tables, one row per direction: { regular stores, non-temporal stores }. Rows must
   follow the SL__C_* order. A path that adds nothing for a direction names a lower path's
   kernel (scalar and NEON have no NT variant). */
typedef sl__cast_fn sl__cast_row[2];
#define SL__ROW(dir, p) { sl__k_##dir##_##p, sl__k_##dir##_##p }
#define SL__ROWNT(dir, p) { sl__k_##dir##_##p, sl__k_##dir##_##p##_nt }
/* A whole table: R is SL__ROW or SL__ROWNT, p the path, h the path that has the f32->bf16 and
   f16->bf16 kernels (AVX512_BF16 has its own two; everything else is AVX-512's), f the path
   of the FP8 -> f16/bf16 kernels (VBMI's tables, or p's formulas), x the path of the F4,
   E8M0 and FNUZ kernels (with RX: their rows), x4 that of the F4 ones. */
#define SL__TABLE(name, copies, R, p, h, f, RX, x, x4) \
static const sl__cast_row name[SL__C_COUNT] = { \
    copies, \
    R(f32_f16, p), R(f16_f32, p), R(f32_bf16, h), R(bf16_f32, p), R(f16_bf16, h), \
    R(bf16_f16, p), R(e4m3_f32, p), R(e4m3_f16, f), R(e4m3_bf16, f), R(e5m2_f32, p), \
    R(e5m2_f16, f), R(e5m2_bf16, f), R(f64_f32, p), R(f32_f64, p), \
    RX(f4_f32, x4), RX(f4_f16, x4), RX(f4_bf16, x4), RX(e8m0_f32, x), RX(e8m0_f16, x), \
    RX(e8m0_bf16, x), RX(e4m3fnuz_f32, x), RX(e4m3fnuz_f16, x), RX(e4m3fnuz_bf16, x), \
    RX(e5m2fnuz_f32, x), RX(e5m2fnuz_f16, x), RX(e5m2fnuz_bf16, x) \
};
#define SL__COPY_PLAIN { sl__k_copy16, sl__k_copy16 }, { sl__k_copy32, sl__k_copy32 }
#define SL__COPY_ROWS_NT(p) \
    { sl__k_copy16, sl__k_copy16_##p##_nt }, { sl__k_copy32, sl__k_copy32_##p##_nt }

SL__TABLE(sl__tab_scalar, SL__COPY_PLAIN, SL__ROW, scalar, scalar, scalar, SL__ROW, scalar, scalar)
#if defined(SL__HAVE_SSE2)
SL__TABLE(sl__tab_sse2, SL__COPY_ROWS_NT(sse2), SL__ROWNT, sse2, sse2, sse2, SL__ROWNT, sse2, sse2)
#endif
#if defined(SL__HAVE_AVX)
SL__TABLE(sl__tab_avx2, SL__COPY_ROWS_NT(avx2), SL__ROWNT, avx2, avx2, avx2, SL__ROWNT, avx2, avx2t)
SL__TABLE(sl__tab_avx512, SL__COPY_ROWS_NT(avx512), SL__ROWNT, avx512, avx512, avx512,
          SL__ROWNT, avx512, avx512t)
SL__TABLE(sl__tab_avx512bf16, SL__COPY_ROWS_NT(avx512), SL__ROWNT, avx512, avx512bf16, avx512,
          SL__ROWNT, avx512, avx512t)
SL__TABLE(sl__tab_avx512vbmi, SL__COPY_ROWS_NT(avx512), SL__ROWNT, avx512, avx512, vbmi,
          SL__ROWNT, avx512, avx512t)
SL__TABLE(sl__tab_avx512bf16vbmi, SL__COPY_ROWS_NT(avx512), SL__ROWNT, avx512, avx512bf16, vbmi,
          SL__ROWNT, avx512, avx512t)
#endif
#if defined(SL__HAVE_NEON)
SL__TABLE(sl__tab_neon, SL__COPY_PLAIN, SL__ROW, neon, neon, neon, SL__ROW, neon, neon)
#endif
#undef SL__ROW
#undef SL__ROWNT
#undef SL__TABLE
#undef SL__COPY_PLAIN
#undef SL__COPY_ROWS_NT

static int sl__simd_avail(unsigned w, safeload_simd simd) {
    switch (simd) {
    case SAFELOAD_SIMD_AUTO: case SAFELOAD_SIMD_SCALAR: return 1;
    case SAFELOAD_SIMD_SSE2: return (w & SL__CPU_SSE2) != 0;
    case SAFELOAD_SIMD_AVX2: return (w & SL__CPU_AVX2) != 0;
    case SAFELOAD_SIMD_AVX512: return (w & SL__CPU_AVX512) != 0;
    case SAFELOAD_SIMD_AVX512BF16: return (w & SL__CPU_AVX512BF16) != 0;
    case SAFELOAD_SIMD_NEON: return (w & SL__CPU_NEON) != 0;
    default: return 0;
    }
}

/* What SAFELOAD_SIMD_AUTO runs: the best available path, or, with SAFELOAD_SIMD set, the best
   available path at or below the named one in enum order. */
static safeload_simd sl__simd_pick(unsigned w) {
    int p = (int)((w >> 8) & 0xFu);
    if (p <= 0 || p >= (int)SAFELOAD_SIMD_COUNT) p = (int)SAFELOAD_SIMD_COUNT - 1;
    for (; p > (int)SAFELOAD_SIMD_SCALAR; p--)
        if (sl__simd_avail(w, (safeload_simd)p)) return (safeload_simd)p;
    return SAFELOAD_SIMD_SCALAR;
}
static safeload_simd sl__simd_auto(void) { return sl__simd_pick(sl__cpu_word()); }

/* The kernel table of a path (AUTO = the best) on a CPU with feature word w; NULL when the path
   is not available. VBMI is not a path of its own: it only swaps in the FP8 table kernels. */
static const sl__cast_row *sl__cast_table(unsigned w, safeload_simd simd) {
    if (simd == SAFELOAD_SIMD_AUTO) simd = sl__simd_pick(w);
    else if (!sl__simd_avail(w, simd)) return NULL;
    switch (simd) {
    case SAFELOAD_SIMD_SCALAR: return sl__tab_scalar;
#if defined(SL__HAVE_SSE2)
    case SAFELOAD_SIMD_SSE2: return sl__tab_sse2;
#endif
#if defined(SL__HAVE_AVX)
    case SAFELOAD_SIMD_AVX2: return sl__tab_avx2;
    case SAFELOAD_SIMD_AVX512: return w & SL__CPU_VBMI ? sl__tab_avx512vbmi : sl__tab_avx512;
    case SAFELOAD_SIMD_AVX512BF16:
        return w & SL__CPU_VBMI ? sl__tab_avx512bf16vbmi : sl__tab_avx512bf16;
#endif
#if defined(SL__HAVE_NEON)
    case SAFELOAD_SIMD_NEON: return sl__tab_neon;
#endif
    default: return NULL;
    }
}

/* The kernel for dst <- src on a path (AUTO = the best) of a CPU with feature word w, with
   non-temporal stores when nt is non-zero and the path has them; NULL when the pair is
   unsupported or the path is not available. Same dtype gives a memcpy kernel. Kernels take any
   alignment, no overlap. Tests pass a w with features masked off to reach every kernel. */
static sl__cast_fn sl__cast_resolve_w(unsigned w, safeload_dtype dst, safeload_dtype src,
                                      safeload_simd simd, int nt) {
    int dir = sl__cast_dir(dst, src);
    const sl__cast_row *tab = sl__cast_table(w, simd);
    return dir >= 0 && tab ? tab[dir][nt ? 1 : 0] : NULL;
}
static sl__cast_fn sl__cast_resolve(safeload_dtype dst, safeload_dtype src, safeload_simd simd,
                                    int nt) {
    return sl__cast_resolve_w(sl__cpu_word(), dst, src, simd, nt);
}

/* The kernel a load runs for dst <- src: src as the file stores it, dst in host order. NULL
   for a plain copy (same dtype, no swap) and for a pair that has no kernel. On a swapping
   host every 2-, 4- and 8-byte source goes through a kernel that reverses it (a plain copy
   included: count is then in swap units, SL__SWAP_UNIT). */
static sl__cast_fn sl__cast_resolve_file(safeload_dtype dst, safeload_dtype src, int nt) {
#if SL__SWAP
    unsigned u = sl__swap_unit(src);
    if (u > 1) {
        if (dst == src) return u == 2 ? sl__k_swap16 : u == 4 ? sl__k_swap32 : sl__k_swap64;
        switch (sl__cast_dir(dst, src)) {
        case SL__C_F32_F16: return sl__k_f32_f16_x_scalar;
        case SL__C_F16_F32: return sl__k_f16_f32_x_scalar;
        case SL__C_F32_BF16: return sl__k_f32_bf16_x_scalar;
        case SL__C_BF16_F32: return sl__k_bf16_f32_x_scalar;
        case SL__C_F16_BF16: return sl__k_f16_bf16_x_scalar;
        case SL__C_BF16_F16: return sl__k_bf16_f16_x_scalar;
        case SL__C_F64_F32: return sl__k_f64_f32_x_scalar;
        case SL__C_F32_F64: return sl__k_f32_f64_x_scalar;
        default: return NULL;   /* tests/test_swap.c checks every convertible pair has one */
        }
    }
#endif
    return dst == src ? NULL : sl__cast_resolve(dst, src, SAFELOAD_SIMD_AUTO, nt);
}

/* ---- 4j. public functions ---- */

/* nt_stores = 0 uses non-temporal stores from this many output bytes on: below it the output
   likely stays in cache for whoever reads it next. */
#ifndef SL__NT_MIN_BYTES
#  define SL__NT_MIN_BYTES (8 * SL__MIB)
#endif

SL__DEF int safeload_can_convert(safeload_dtype dst_dtype, safeload_dtype src_dtype) {
    return sl__cast_dir(dst_dtype, src_dtype) >= 0;
}

SL__DEF int safeload_simd_available(safeload_simd simd) {
    return sl__simd_avail(sl__cpu_word(), simd);
}

SL__DEF safeload_simd safeload_simd_best(void) { return sl__simd_auto(); }

SL__DEF const char *safeload_simd_name(safeload_simd simd) {
    static const char *const names[SAFELOAD_SIMD_COUNT] = {
        "auto", "scalar", "sse2", "avx2", "avx512", "avx512bf16", "neon"
    };
    return (int)simd >= 0 && simd < SAFELOAD_SIMD_COUNT ? names[simd] : NULL;
}

/* safeload_convert_ex on a CPU with feature word w (tests mask features off). */
static safeload_result sl__convert_w(unsigned w, void *dst, safeload_dtype dst_dtype,
                                     const void *src, safeload_dtype src_dtype, size_t count,
                                     const safeload_convert_desc *desc) {
    safeload_simd simd = desc ? desc->simd : SAFELOAD_SIMD_AUTO;
    int nt = desc ? desc->nt_stores : 0, f4 = src_dtype == SAFELOAD_F4;
    size_t dsz, sbytes;
    uintptr_t d, s;
    sl__cast_fn fn;
    if (sl__cast_dir(dst_dtype, src_dtype) < 0) return SAFELOAD_UNSUPPORTED_CONVERSION;
    if ((int)simd < 0 || simd >= SAFELOAD_SIMD_COUNT) return SAFELOAD_INVALID_ARGUMENT;
    dsz = safeload_dtype_size(dst_dtype);
    sbytes = safeload_dtype_size(src_dtype);       /* 0 for F4 */
    if (count > (size_t)-1 / SL__MAX(dsz, sbytes)) return SAFELOAD_OVERFLOW;
    sbytes = f4 ? count / 2 + (count & 1) : count * sbytes;
    if (nt == 0) nt = count * dsz >= SL__NT_MIN_BYTES ? 1 : -1;
    fn = sl__cast_resolve_w(w, dst_dtype, src_dtype, simd, nt > 0);
    if (!fn) return SAFELOAD_UNSUPPORTED;           /* the pair is fine: the path is not here */
    if (count == 0) return SAFELOAD_OK;
    if (!dst || !src) return SAFELOAD_INVALID_ARGUMENT;
    d = (uintptr_t)dst;
    s = (uintptr_t)src;
    if (d < s + sbytes && s < d + count * dsz) return SAFELOAD_INVALID_ARGUMENT;   /* overlap */
    if (!f4) {
        fn(dst, src, count);
        return SAFELOAD_OK;
    }
    /* F4: whole bytes through the kernel; an odd count ends on a low nibble (the high one of
       that byte is not read as an element) */
    if (count > 1) fn(dst, src, count / 2);
    if (count & 1)
        sl__f4_st((unsigned char *)dst + (count - 1) * dsz,
                  ((const unsigned char *)src)[count / 2] & 15u,
                  dst_dtype == SAFELOAD_F32 ? 2 : dst_dtype == SAFELOAD_BF16 ? 1 : 0);
    return SAFELOAD_OK;
}

SL__DEF safeload_result safeload_convert_ex(void *dst, safeload_dtype dst_dtype, const void *src,
                                            safeload_dtype src_dtype, size_t count,
                                            const safeload_convert_desc *desc) {
    return sl__convert_w(sl__cpu_word(), dst, dst_dtype, src, src_dtype, count, desc);
}

SL__DEF safeload_result safeload_convert(void *dst, safeload_dtype dst_dtype, const void *src,
                                         safeload_dtype src_dtype, size_t count) {
    return safeload_convert_ex(dst, dst_dtype, src, src_dtype, count, NULL);
}

/* ---- end of cast kernels ---- */

/* =============================================================================================
   5. LOAD ENGINE: worker pool, models (shards + index), load planning, execution, async jobs
   ========================================================================================== */

/* ---- 5a. the worker pool: n-1 parked threads plus the caller; one job at a time ---- */

struct safeload_pool {
    int threads;                /* counting the caller */
    safeload_allocator alloc;   /* a load's own temporary pool uses the load's allocator */
#if !defined(SAFELOAD_NO_THREADS)
    sl__thread *ths;
    struct sl__pool_arg *args;
    int started;
    sl__mutex mu, run_mu;
    sl__cond cv_start, cv_done;
    uint64_t gen;
    void (*job)(void *ctx, int worker);
    void *ctx;
    int job_workers;            /* helper ids 1..job_workers take part in the current job */
    int running;
    int quit;
    struct sl__pool_user *users;    /* threads inside a load on this pool, under mu */
#endif
};

/* A thread that called a load on a pool, registered from before the load's first hook until
   its last (device_free on failure): a load it starts from those or from a progress callback
   on the same pool is refused, whether or not the pool's threads happen to be busy at that
   moment. On the caller's stack. (SAFELOAD_NO_THREADS: nothing waits, nothing is refused.) */
#if defined(SAFELOAD_NO_THREADS)
typedef struct sl__pool_user { int unused; } sl__pool_user;
#else
typedef struct sl__pool_user { sl__tid tid; struct sl__pool_user *next; } sl__pool_user;
#endif

#if !defined(SAFELOAD_NO_THREADS)
static void sl__pool_main(safeload_pool *p, int id) {
    uint64_t seen = 0;
    sl__mutex_lock(&p->mu);
    p->args[id - 1].tid = sl__tid_self();
    p->args[id - 1].has_tid = 1;
    for (;;) {
        while (!p->quit && p->gen == seen) sl__cond_wait(&p->cv_start, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        if (id <= p->job_workers) {
            void (*job)(void *, int) = p->job;
            void *ctx = p->ctx;
            sl__mutex_unlock(&p->mu);
            job(ctx, id);
            sl__mutex_lock(&p->mu);
            if (--p->running == 0) sl__cond_broadcast(&p->cv_done);
        }
    }
    sl__mutex_unlock(&p->mu);
}
#endif

SL__DEF int safeload_default_threads(void) {
#if defined(SAFELOAD_NO_THREADS)
    return 1;                     /* what every pool has in this build */
#else
    const char *e = getenv("SAFELOAD_NUM_THREADS");
    int n = 0;
    /* digits only: "3x" or "-1" is a typo to ignore, not a 3 */
    while (e && *e >= '0' && *e <= '9' && n <= 256) n = n * 10 + (*e++ - '0');
    if (e && !*e && n >= 1 && n <= 256) return n;
    n = sl__os_cpu_count();
    return n < 1 ? 1 : n > 8 ? 8 : n;
#endif
}

SL__DEF void safeload_pool_destroy(safeload_pool *p) {
    safeload_allocator a;
    if (!p) return;
    a = p->alloc;
#if !defined(SAFELOAD_NO_THREADS)
    {
        int i;
        sl__mutex_lock(&p->mu);
        p->quit = 1;
        sl__cond_broadcast(&p->cv_start);
        sl__mutex_unlock(&p->mu);
        for (i = 0; i < p->started; i++) sl__thread_join(p->ths[i]);
        sl__cond_destroy(&p->cv_start);
        sl__cond_destroy(&p->cv_done);
        sl__mutex_destroy(&p->mu);
        sl__mutex_destroy(&p->run_mu);
        sl__free(&a, p->ths);
        sl__free(&a, p->args);
    }
#endif
    sl__free(&a, p);
}

/* a: the allocator for the pool's own memory (NULL: the compile-time one) */
/* where: the file or model a failure names ("" for safeload_pool_create) */
/* fewer_ok: a call's temporary pool runs with the threads the system gives (a process's or a
   container's thread limit), down to none but the caller's: the result is the same with any
   count. A pool the caller creates asked for its count, and fails without it. */
static safeload_result sl__pool_new(safeload_pool **out, int threads, const safeload_allocator *a,
                                    const char *where, int fewer_ok, safeload_error *err) {
    safeload_pool *p;
    *out = NULL;
    if (threads <= 0) threads = safeload_default_threads();
    if (threads > 256) threads = 256;
    p = (safeload_pool *)sl__calloc(a, 1, sizeof *p);
    if (!p) return SL__OOM(err, where);
    if (a) p->alloc = *a;
#if defined(SAFELOAD_NO_THREADS)
    SL__UNUSED(fewer_ok);
    p->threads = 1;
#else
    {
        int i;
        p->threads = threads;
        if (sl__mutex_init(&p->mu) || sl__mutex_init(&p->run_mu) || sl__cond_init(&p->cv_start) ||
            sl__cond_init(&p->cv_done)) {
            sl__free(a, p);
            return sl__fail(err, SAFELOAD_THREAD_ERROR, where, SAFELOAD_NO_OFFSET, NULL, 0,
                            "cannot create the pool's locks");
        }
        p->ths = (sl__thread *)sl__calloc(a, (size_t)threads, sizeof(sl__thread));
        p->args = (sl__pool_arg *)sl__calloc(a, (size_t)threads, sizeof(sl__pool_arg));
        if (!p->ths || !p->args) { safeload_pool_destroy(p); return SL__OOM(err, where); }
        for (i = 0; i < threads - 1; i++) {
            p->args[i].pool = p;
            p->args[i].id = i + 1;
            if (sl__thread_start(&p->ths[i], &p->args[i]) != 0) {
                if (fewer_ok) { p->threads = i + 1; break; }
                safeload_pool_destroy(p);
                return sl__fail(err, SAFELOAD_THREAD_ERROR, where, SAFELOAD_NO_OFFSET, NULL, 0,
                                "cannot start worker thread %d of %d", i + 1, threads - 1);
            }
            p->started++;
        }
    }
#endif
    *out = p;
    return SAFELOAD_OK;
}

SL__DEF safeload_result safeload_pool_create(safeload_pool **out, int threads,
                                             safeload_error *err) {
    sl__clear_error(err);
    if (!out) return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                              "out is NULL");
    return sl__pool_new(out, threads, NULL, "", 0, err);
}

SL__DEF int safeload_pool_threads(const safeload_pool *p) { return p ? p->threads : 0; }

/* Runs job(ctx, 0..workers-1) with the caller as worker 0 and returns when all have returned.
   Loads sharing a pool from several threads take turns. */
static void sl__pool_run(safeload_pool *p, void (*job)(void *, int), void *ctx, int workers) {
#if defined(SAFELOAD_NO_THREADS)
    SL__UNUSED(p);
    SL__UNUSED(workers);
    job(ctx, 0);
#else
    int helpers = p ? SL__MIN(workers - 1, p->threads - 1) : 0;
    if (helpers <= 0) { job(ctx, 0); return; }
    sl__mutex_lock(&p->run_mu);
    sl__mutex_lock(&p->mu);
    p->job = job;
    p->ctx = ctx;
    p->job_workers = helpers;
    p->running = helpers;
    p->gen++;
    sl__cond_broadcast(&p->cv_start);
    sl__mutex_unlock(&p->mu);
    job(ctx, 0);
    sl__mutex_lock(&p->mu);
    while (p->running) sl__cond_wait(&p->cv_done, &p->mu);
    sl__mutex_unlock(&p->mu);
    sl__mutex_unlock(&p->run_mu);
#endif
}

/* Is this thread inside a load on p: a caller registered for the load's span (a progress
   callback or a hook on the caller), or one of p's helpers (a hook)? A call that used p from
   there could wait for the job it is part of, forever. */
static int sl__pool_reentered(safeload_pool *p) {
#if defined(SAFELOAD_NO_THREADS)
    SL__UNUSED(p);
    return 0;
#else
    sl__tid self = sl__tid_self();
    int i, in = 0;
    const sl__pool_user *u;
    sl__mutex_lock(&p->mu);
    for (u = p->users; u && !in; u = u->next) in = sl__tid_eq(u->tid, self);
    for (i = 0; !in && i < p->started; i++)
        if (p->args[i].has_tid && sl__tid_eq(p->args[i].tid, self)) in = 1;
    sl__mutex_unlock(&p->mu);
    return in;
#endif
}

/* A load's caller registers with the caller's pool for the load's duration (above). */
static void sl__pool_enter(safeload_pool *p, sl__pool_user *u) {
#if defined(SAFELOAD_NO_THREADS)
    SL__UNUSED(p);
    SL__UNUSED(u);
#else
    u->tid = sl__tid_self();
    sl__mutex_lock(&p->mu);
    u->next = p->users;
    p->users = u;
    sl__mutex_unlock(&p->mu);
#endif
}
static void sl__pool_leave(safeload_pool *p, sl__pool_user *u) {
#if defined(SAFELOAD_NO_THREADS)
    SL__UNUSED(p);
    SL__UNUSED(u);
#else
    sl__pool_user **at;
    sl__mutex_lock(&p->mu);
    for (at = &p->users; *at; at = &(*at)->next)
        if (*at == u) { *at = u->next; break; }
    sl__mutex_unlock(&p->mu);
#endif
}

/* The pool a call should use: the caller's, or a temporary one (*tmp, destroyed by caller). */
static safeload_result sl__pool_for(safeload_pool *given, int threads,
                                    const safeload_allocator *a, safeload_pool **use,
                                    safeload_pool **tmp, int *workers, const char *where,
                                    safeload_error *err) {
    *tmp = NULL;
    if (given) {
        if (sl__pool_reentered(given))
            return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, where, SAFELOAD_NO_OFFSET, NULL, 0,
                            "desc.pool is in use by the load this call was made from (a "
                            "progress callback or hook): it could wait for itself; use another "
                            "pool or none");
        *use = given;
        *workers = threads > 0 ? SL__MIN(threads, given->threads) : given->threads;
        return SAFELOAD_OK;
    }
    if (threads <= 0) threads = safeload_default_threads();
#if defined(SAFELOAD_NO_THREADS)
    threads = 1;
#endif
    *use = NULL;
    if (threads > 1) {
        safeload_result r = sl__pool_new(tmp, threads, a, where, 1, err);
        if (r != SAFELOAD_OK) return r;
        *use = *tmp;
        threads = (*tmp)->threads;          /* capped at 256, or the threads that started */
    }
    *workers = threads;
    return SAFELOAD_OK;
}

/* ---- 5b. models: one file, or shards listed by an index (the index is authoritative) ---- */

typedef struct sl__ref {
    const char *name;           /* name, len first (key table) */
    size_t len;
    uint32_t shard;
    uint32_t idx;               /* tensor index within the shard */
} sl__ref;

struct safeload_model {
    safeload_allocator alloc;
    safeload_file **shards;
    size_t n_shards;
    sl__ref *refs;              /* shards in file-name order, tensors in offset order */
    size_t count;
    int has_unlisted;           /* some shard tensor is not in the model (not in the index) */
    /* Name lookups go through one table: the one file's own (a single file is looked up as
       safeload_find does), the index's weight_map table built to check the index (remap takes
       its entries to refs), or a table of the model's own over refs (safeload_model_from_files
       with several files). None is built twice. */
    sl__table names;            /* the model's own table or the weight_map's; tab may point here */
    const sl__table *tab;
    sl__keys tkeys;             /* the keys tab indexes */
    uint32_t *remap;            /* tab index -> refs index; NULL: the same */
    uint64_t hk0, hk1;          /* tab's hash key */
    uint64_t k0, k1;
    unsigned char *index_text;  /* the decoded index: metadata and names point into it */
    sl__index index;
    const safeload_kv *meta;
    size_t meta_count;
    safeload_error *warnings;
    size_t n_warnings, cap_warnings;
    char *path;                 /* the index or single file opened: load errors name it */
};

/* What errors that belong to no one shard name: the path opened, else (from_files) the one
   file, else nothing: several files given have no one name. */
static const char *sl__model_where(const safeload_model *m) {
    return m->path ? m->path : m->n_shards == 1 ? m->shards[0]->path : "";
}

SL__DEF void safeload_model_close(safeload_model *m) {
    size_t i;
    safeload_allocator a;
    if (!m) return;
    a = m->alloc;
    for (i = 0; i < m->n_shards; i++) safeload_close(m->shards[i]);
    sl__free(&a, m->shards);
    sl__big_free(&a, m->refs);
    sl__table_free(&m->names, &a);
    sl__free(&a, m->remap);
    sl__free(&a, m->index_text);
    sl__free(&a, m->index.map);
    sl__free(&a, m->index.map_pos);
    sl__free(&a, m->index.meta);
    sl__free(&a, m->index.meta_pos);
    sl__free(&a, m->warnings);
    sl__free(&a, m->path);
    sl__free(&a, m);
}

static safeload_model *sl__model_new(const safeload_model_desc *desc) {
    safeload_allocator a;
    safeload_model *m;
    memset(&a, 0, sizeof a);
    if (desc) a = desc->open.allocator;
    m = (safeload_model *)sl__calloc(&a, 1, sizeof *m);
    if (!m) return NULL;
    m->alloc = a;
    m->k0 = desc && desc->open.hash_seed ? desc->open.hash_seed : sl__entropy(m);
    m->k1 = sl__entropy(&m->k0) ^ 0x27d4eb2f165667c5ULL;
    if (desc && desc->open.hash_seed)       /* a seed makes the model's table repeatable too */
        m->k1 = desc->open.hash_seed * 0x9E3779B97F4A7C15ULL + 3;
    return m;
}

/* refs over every tensor of every shard (skip[] marks excluded ones), and unless table is 0
   (the index's table will serve), the lookup table: the one file's own, else one over refs */
static safeload_result sl__model_index(safeload_model *m, const unsigned char *skip,
                                       int table, safeload_error *err) {
    size_t i, k, n = 0, at = 0;
    int64_t dup;
    sl__bigv big = sl__big_first(m->shards, m->n_shards);
    for (i = 0; i < m->n_shards; i++) n += m->shards[i]->count;
    sl__big_free(&m->alloc, m->refs);
    sl__table_free(&m->names, &m->alloc);
    m->tab = NULL;
    m->refs = n < SIZE_MAX / sizeof(sl__ref) - 1
                  ? (sl__ref *)sl__big_alloc(&m->alloc, (n + 1) * sizeof(sl__ref), &big,
                                             SL__BIG_WHOLE,
                                             NULL)
                  : NULL;
    if (!m->refs) return SL__OOM(err, "");
    for (i = 0; i < m->n_shards; i++) {
        const safeload_file *f = m->shards[i];
        for (k = 0; k < f->count; k++, at++) {
            sl__ref *r;
            if (skip && skip[at]) { m->has_unlisted = 1; continue; }
            r = &m->refs[m->count++];
            r->name = f->tensors[k].name;
            r->len = f->tensors[k].name_len;
            r->shard = (uint32_t)i;
            r->idx = (uint32_t)k;
        }
    }
    if (!table) return SAFELOAD_OK;
    if (m->n_shards == 1 && !m->has_unlisted) {   /* refs are the file's tensors, in order */
        const safeload_file *f = m->shards[0];
        m->tab = &f->names;
        m->tkeys = SL__KEYS(f->tensors, safeload_tensor);
        m->hk0 = f->k0;
        m->hk1 = f->k1;
        return SAFELOAD_OK;
    }
    if (!sl__table_build(&m->names, SL__KEYS(m->refs, sl__ref), m->count, m->k0, m->k1,
                         &m->alloc, &dup))
        return SL__OOM(err, "");
    m->tab = &m->names;
    m->tkeys = SL__KEYS(m->refs, sl__ref);
    m->hk0 = m->k0;
    m->hk1 = m->k1;
    if (dup >= 0) {
        const sl__ref *d = &m->refs[dup];
        int64_t first = sl__table_find(&m->names, SL__KEYS(m->refs, sl__ref), d->name, d->len,
                                       sl__hash(d->name, d->len, m->k0, m->k1));
        const safeload_file *f = m->shards[d->shard];
        return sl__fail(err, SAFELOAD_INDEX_DUPLICATE_TENSOR, f->path,
                        f->tensors[d->idx].header_offset, d->name, d->len,
                        "tensor is also in %s", first >= 0 ?
                        m->shards[m->refs[first].shard]->path : "another shard");
    }
    return SAFELOAD_OK;
}

static const safeload_tensor *sl__model_lookup(const safeload_model *m, const char *name,
                                               size_t len, size_t *shard) {
    int64_t i;
    if (!m->tab) return NULL;
    i = sl__table_find(m->tab, m->tkeys, name, len, sl__hash(name, len, m->hk0, m->hk1));
    if (i < 0) return NULL;
    if (m->remap) i = m->remap[i];
    if (shard) *shard = m->refs[i].shard;
    return &m->shards[m->refs[i].shard]->tensors[m->refs[i].idx];
}

static int sl__file_ptr_less(safeload_file *const *x, safeload_file *const *y) {
    return (uintptr_t)*x < (uintptr_t)*y;
}
SL__DEFINE_MSORT(sl__sort_file_ptrs, safeload_file *, sl__file_ptr_less)

/* Closes each distinct file of files[0..count) once (the model was to own them). */
static void sl__close_files_once(safeload_file **files, size_t count) {
    size_t i, k;
    for (i = 0; files && i < count; i++) {
        for (k = 0; k < i && files[k] != files[i]; k++) {}
        if (k == i) safeload_close(files[i]);   /* compares pointers only: none is read twice */
    }
}

SL__DEF safeload_result safeload_model_from_files(safeload_model **out, safeload_file **files,
                                                  size_t count, const safeload_model_desc *desc,
                                                  safeload_error *err) {
    safeload_model *m = NULL;
    safeload_file **sorted = NULL;
    safeload_result r;
    size_t i;
    sl__clear_error(err);
    if (out) *out = NULL;
    if (!out || (count && !files)) {
        sl__close_files_once(files, count);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "out or files is NULL");
    }
    for (i = 0; i < count && files[i]; i++) {}
    if (i < count) {
        sl__close_files_once(files, count);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "files[%llu] is NULL", (sl__ull)i);
    }
    if (desc && !sl__allocator_ok(&desc->open.allocator)) {
        sl__close_files_once(files, count);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "an allocator needs both alloc and free");
    }
    if (desc && (desc->flags & ~(uint32_t)(SAFELOAD_MODEL_STRICT | SAFELOAD_MODEL_CONFINE))) {
        sl__close_files_once(files, count);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "unknown flags 0x%lx", (unsigned long)desc->flags);
    }
    m = sl__model_new(desc);
    if (m) {
        m->shards = (safeload_file **)sl__malloc_n(&m->alloc, count, sizeof *m->shards);
        sorted = (safeload_file **)sl__malloc_n(&m->alloc, count, sizeof *sorted);
    }
    if (!m || !m->shards || !sorted) {
        if (m) sl__free(&m->alloc, sorted);
        safeload_model_close(m);
        sl__close_files_once(files, count);
        return SL__OOM(err, "");
    }
    /* one file listed twice would be closed twice by the model: refuse it */
    if (count) memcpy(m->shards, files, count * sizeof *files);       /* files may be NULL */
    sl__sort_file_ptrs(m->shards, sorted, count);
    for (i = 1; i < count && m->shards[i] != m->shards[i - 1]; i++) {}
    sl__free(&m->alloc, sorted);
    if (i < count) {
        safeload_model_close(m);              /* owns no file yet: n_shards is 0 */
        sl__close_files_once(files, count);
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "the same file is listed twice");
    }
    if (count) memcpy(m->shards, files, count * sizeof *files);
    m->n_shards = count;
    if (m->n_shards == 1) {
        m->meta = m->shards[0]->meta;
        m->meta_count = m->shards[0]->meta_count;
    }
    if ((r = sl__model_index(m, NULL, 1, err)) != SAFELOAD_OK) { safeload_model_close(m); return r; }
    *out = m;
    return SAFELOAD_OK;
}

/* -- opening shards in parallel -- */

/* Shards are claimed in order. The error is the first failing shard's, so once one fails the
   shards after it are not opened (an index naming millions of missing files answers at once):
   every shard before it was claimed already and is still opened, so the first failure in
   order is always the one kept, whatever the timing. */
typedef struct sl__shard_job {
    char **paths;
    safeload_file **files;
    size_t n;
    volatile size_t next;
    volatile size_t fail_at;            /* the first shard that failed so far; n: none */
    safeload_result fail_res;
    safeload_error fail_err;
    sl__mutex mu;                       /* the first failure, and calls to a caller's allocator */
    const safeload_open_desc *open;
    safeload_open_desc locked;          /* desc->open with the caller's allocator behind mu */
    size_t dir_len;                     /* SAFELOAD_MODEL_CONFINE: paths[i][0..dir_len) */
    int confine;
} sl__shard_job;

/* A caller's allocator is never called from two threads at once (a bump allocator without a
   lock is a fair thing to pass), so the parallel shard opens take turns at it. */
static void *sl__locked_alloc(void *user, size_t n) {
    sl__shard_job *j = (sl__shard_job *)user;
    void *p;
    sl__mutex_lock(&j->mu);
    p = j->open->allocator.alloc(j->open->allocator.user, n);
    sl__mutex_unlock(&j->mu);
    return p;
}
static void *sl__locked_realloc(void *user, void *ptr, size_t old_n, size_t n) {
    sl__shard_job *j = (sl__shard_job *)user;
    void *p;
    sl__mutex_lock(&j->mu);
    p = j->open->allocator.realloc(j->open->allocator.user, ptr, old_n, n);
    sl__mutex_unlock(&j->mu);
    return p;
}
static void sl__locked_free(void *user, void *ptr) {
    sl__shard_job *j = (sl__shard_job *)user;
    sl__mutex_lock(&j->mu);
    j->open->allocator.free(j->open->allocator.user, ptr);
    sl__mutex_unlock(&j->mu);
}

static void sl__shard_worker(void *ctx, int worker) {
    sl__shard_job *j = (sl__shard_job *)ctx;
    SL__UNUSED(worker);
    for (;;) {
        size_t i = sl__atomic_add(&j->next, (size_t)1);
        safeload_error e;
        safeload_result r;
        if (i >= j->n || i > sl__atomic_load(&j->fail_at)) break;
        r = safeload_open(&j->files[i], j->paths[i],
                          j->open->allocator.alloc ? &j->locked : j->open, &e);
#if !defined(SL__WINDOWS)
        if (r == SAFELOAD_OK && j->confine) {
            const char *how = "";
            int out = sl__os_beneath(j->paths[i], j->dir_len, j->files[i]->src.fd,
                                     &j->files[i]->alloc, &how);
            if (out) {
                safeload_close(j->files[i]);
                j->files[i] = NULL;
                r = sl__fail(&e, out > 0 ? SAFELOAD_INVALID_INDEX : SAFELOAD_IO_ERROR,
                             j->paths[i], SAFELOAD_NO_OFFSET, NULL, 0, out > 0 ?
                             "shard resolves outside the index's directory (a symbolic link; "
                             "SAFELOAD_MODEL_CONFINE, checked by %s)" : "cannot tell whether "
                             "the shard is inside the index's directory (%s failed)", how);
            }
        }
#endif
        if (r == SAFELOAD_OK) continue;
        sl__mutex_lock(&j->mu);
        if (i < j->fail_at) {
            j->fail_res = r;
            j->fail_err = e;
            sl__atomic_store(&j->fail_at, i);
        }
        sl__mutex_unlock(&j->mu);
    }
}

typedef struct sl__dirscan {
    const safeload_allocator *a;
    const char *dir;
    char *index;                /* a *.safetensors.index.json (model.* preferred) */
    char *single;               /* a *.safetensors (model.safetensors preferred) */
    char *variant;              /* a variant index, *.safetensors.index.V.json */
    const char *mark;           /* second pass: V, counting the files without ".V." / ".V-" */
    size_t mark_len;
    int n_index, n_single, n_variant, n_unmarked, oom, has_model, has_model_single;
} sl__dirscan;

static int sl__ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}
static int sl__ends_with_nocase(const char *s, const char *lower_suffix) {  /* ASCII case */
    size_t n = strlen(s), k = strlen(lower_suffix), i;
    if (n < k) return 0;
    for (i = 0; i < k; i++) {
        char c = s[n - k + i];
        if ((c >= 'A' && c <= 'Z' ? (char)(c + 32) : c) != lower_suffix[i]) return 0;
    }
    return 1;
}

static char *sl__strdup(const safeload_allocator *a, const char *s, size_t n) {
    char *d = (char *)sl__malloc(a, n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

/* dir + "/" + name (name may not be absolute or climb out with ".."). */
static char *sl__join(const safeload_allocator *a, const char *dir, size_t dlen, const char *name,
                      size_t nlen) {
    char *p = (char *)sl__malloc(a, dlen + nlen + 2);
    if (!p) return NULL;
    memcpy(p, dir, dlen);
    if (dlen && dir[dlen - 1] != '/' && !(SL__WINDOWS_PATHS && dir[dlen - 1] == '\\'))
        p[dlen++] = '/';
    memcpy(p + dlen, name, nlen);
    p[dlen + nlen] = 0;
    return p;
}

/* "fp16" in model.safetensors.index.fp16.json, the name transformers and diffusers give the
   index of a variant (whose shards are model.fp16-00001-of-00002.safetensors); else NULL */
static const char *sl__index_variant(const char *name, size_t *len) {
    const char *v = strstr(name, ".safetensors.index.");
    size_t n;
    if (!v) return NULL;
    v += 19;
    n = strlen(v);
    if (n <= 5 || !sl__ends_with(v, ".json")) return NULL;
    *len = n - 5;
    return v;
}

/* does a file name carry the variant mark: ".fp16." or ".fp16-" */
static int sl__has_mark(const char *name, const char *mark, size_t len) {
    const char *p;
    for (p = strchr(name, '.'); p; p = strchr(p + 1, '.'))
        if (strncmp(p + 1, mark, len) == 0 && (p[len + 1] == '.' || p[len + 1] == '-')) return 1;
    return 0;
}

static int sl__dirscan_fn(void *user, const char *name) {
    sl__dirscan *d = (sl__dirscan *)user;
    int is_index = sl__ends_with(name, ".safetensors.index.json"), is_dir, model, is_variant;
    size_t vlen;
    char **slot;
    char *full;
    is_variant = !is_index && sl__index_variant(name, &vlen) != NULL;
    slot = is_index ? &d->index : is_variant ? &d->variant : &d->single;
    /* hidden files are not candidates: macOS leaves "._model.safetensors" (AppleDouble
       metadata, not a checkpoint) beside the real file on exFAT and network drives */
    if (name[0] == '.' || (!is_index && !is_variant && !sl__ends_with(name, ".safetensors")))
        return 0;
    /* a folder named like a checkpoint is not one (nor a candidate to choose between) */
    if (!(full = sl__join(d->a, d->dir, strlen(d->dir), name, strlen(name)))) {
        d->oom = 1;
        return 0;
    }
    is_dir = sl__os_is_dir(full, d->a);
    sl__free(d->a, full);
    if (is_dir) return 0;
    if (d->mark) {                  /* the second pass: only the .safetensors files count */
        if (!is_index && !is_variant && !sl__has_mark(name, d->mark, d->mark_len))
            d->n_unmarked++;
        return 0;
    }
    if (is_variant) {               /* only ever taken when it is the only one */
        d->n_variant++;
        if (*slot) return 0;
        if (!(*slot = sl__strdup(d->a, name, strlen(name)))) d->oom = 1;
        return 0;
    }
    /* one of a kind is taken; among several, the model.* one */
    model = strcmp(name, is_index ? "model.safetensors.index.json" : "model.safetensors") == 0;
    *(is_index ? &d->n_index : &d->n_single) += 1;
    *(is_index ? &d->has_model : &d->has_model_single) |= model;
    if (*slot && !model) return 0;
    sl__free(d->a, *slot);
    if (!(*slot = sl__strdup(d->a, name, strlen(name)))) d->oom = 1;
    return 0;
}



static int sl__kv_value_less(const safeload_kv *x, const safeload_kv *y) {
    return sl__name_cmp(x->value, x->value_len, y->value, y->value_len) < 0;
}
SL__DEFINE_MSORT(sl__sort_kv_by_value, safeload_kv, sl__kv_value_less)

/* 0 when out of memory: the open then fails, as a caller cannot tell a list missing one */
#define SL__MAX_WARNINGS 1000           /* unlisted tensors warned about one by one */
static int sl__model_warn(safeload_model *m, const safeload_error *w) {
    if (m->n_warnings == m->cap_warnings &&
        !sl__grow(&m->alloc, (void **)&m->warnings, &m->cap_warnings, m->n_warnings + 1,
                  sizeof(safeload_error)))
        return 0;
    m->warnings[m->n_warnings++] = *w;
    return 1;
}

/* Opening a sharded model from its index, in the order its data flows: read and parse the
   index; its metadata; the weight_map's table; the distinct shard names; open every shard
   (in parallel); the index against the shards; the weight_map's table becomes the model's.
   Each step fails with the error set and leaves what it made in *x (or the model: the model's
   close frees that); sl__index_release frees the rest. */
typedef struct sl__index_open {
    safeload_model *m;
    const char *path;                   /* the index */
    size_t dlen;                        /* its directory's length in path */
    const safeload_model_desc *desc;
    const safeload_allocator *a;
    sl__table itab;                     /* the weight_map's names */
    safeload_kv *by_shard, *tmp;        /* the weight_map sorted by shard name, sort scratch */
    const char **names;                 /* the distinct shard names, sorted */
    size_t n_names;
    char **paths;                       /* their paths */
    unsigned char *skip;                /* per shard tensor, in shard order: not in the index */
    uint32_t *ref_of;                   /* per weight_map entry: its tensor's place in refs */
    size_t n_ref, dup_shard, dup_k, dup_at;  /* the second of a name in two shards */
} sl__index_open;

/* The index's text (at most 256 MiB), kept by the model, parsed. */
static safeload_result sl__index_read(sl__index_open *x, safeload_error *err) {
    safeload_model *m = x->m;
    const char *path = x->path;
    sl__source src;
    safeload_result r;
    int e;
    memset(&src, 0, sizeof src);
    src.kind = SL__SRC_FILE;
    e = sl__os_open(path, 0, x->a, &src.fd, &src.size);
    if (e) return sl__fail(err, SAFELOAD_IO_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                           "cannot open the index: %s (error %d)", sl__os_why(e, "open failed"), e);
    if (src.size > ((uint64_t)256 << 20)) {
        sl__os_close(src.fd);
        return sl__fail(err, SAFELOAD_INVALID_INDEX, path, 0, NULL, 0,
                        "index is %llu bytes, over the 256 MiB limit", (sl__ull)src.size);
    }
    m->index_text = (unsigned char *)sl__calloc(x->a, (size_t)src.size + SL__PAD, 1);
    if (!m->index_text) { sl__os_close(src.fd); return SL__OOM(err, path); }
    r = sl__source_read(&src, path, 0, m->index_text, (size_t)src.size, err, NULL);
    sl__os_close(src.fd);
    if (r != SAFELOAD_OK) return r;
    return sl__index_parse(m->index_text, (size_t)src.size, path, x->a, &m->index, err);
}

/* Metadata keys once each, as in a file header (json.load would keep the last), whatever
   their values; then the values that are not kept (true, null, objects) go. Then the
   weight_map's table: no name twice. */
static safeload_result sl__index_keys(sl__index_open *x, safeload_error *err) {
    safeload_model *m = x->m;
    sl__index *ix = &m->index;
    size_t i, k;
    int64_t dup;
    if (!sl__table_build(&x->itab, SL__KEYS(ix->meta, safeload_kv), ix->meta_count, m->k0,
                         m->k1, x->a, &dup))
        return SL__OOM(err, x->path);
    sl__table_free(&x->itab, x->a);
    memset(&x->itab, 0, sizeof x->itab);
    if (dup >= 0)
        return sl__fail(err, SAFELOAD_INVALID_INDEX, x->path, ix->meta_pos[dup],
                        ix->meta[dup].key, ix->meta[dup].key_len, "metadata key appears twice");
    for (i = k = 0; i < ix->meta_count; i++)
        if (ix->meta[i].value) {
            ix->meta_pos[k] = ix->meta_pos[i];
            ix->meta[k++] = ix->meta[i];
        }
    ix->meta_count = k;
    m->meta = ix->meta;
    m->meta_count = ix->meta_count;
    if (!sl__table_build(&x->itab, SL__KEYS(ix->map, safeload_kv), ix->map_count, m->k0, m->k1,
                         x->a, &dup))
        return SL__OOM(err, x->path);
    if (dup >= 0)
        return sl__fail(err, SAFELOAD_INVALID_INDEX, x->path, ix->map_pos[dup], ix->map[dup].key,
                        ix->map[dup].key_len, "weight_map lists the tensor twice");
    return SAFELOAD_OK;
}

/* The distinct shard names, sorted, each a safe file name inside the index's directory. */
static safeload_result sl__index_shard_names(sl__index_open *x, safeload_error *err) {
    const sl__index *ix = &x->m->index;
    size_t i, k;
    x->by_shard = (safeload_kv *)sl__malloc(x->a, (ix->map_count + 1) * sizeof *x->by_shard);
    x->tmp = (safeload_kv *)sl__malloc(x->a, (ix->map_count + 1) * sizeof *x->tmp);
    x->names = (const char **)sl__malloc(x->a, (ix->map_count + 1) * sizeof *x->names);
    if (!x->by_shard || !x->tmp || !x->names) return SL__OOM(err, x->path);
    if (ix->map_count) memcpy(x->by_shard, ix->map, ix->map_count * sizeof *x->by_shard);
    sl__sort_kv_by_value(x->by_shard, x->tmp, ix->map_count);
    for (i = 0; i < ix->map_count; i++)
        if (!x->n_names || sl__name_cmp(x->by_shard[i].value, x->by_shard[i].value_len,
                                        x->names[x->n_names - 1],
                                        strlen(x->names[x->n_names - 1])) != 0)
            x->names[x->n_names++] = x->by_shard[i].value;  /* NUL-terminated in place */
    /* checked once per distinct name; an unsafe one is reported at its first entry in the
       index */
    for (k = 0; k < x->n_names && sl__safe_shard_name(x->names[k], strlen(x->names[k])); k++) {}
    if (k < x->n_names)
        for (i = 0; i < ix->map_count; i++)
            if (!sl__safe_shard_name(ix->map[i].value, ix->map[i].value_len))
                return sl__fail(err, SAFELOAD_INVALID_INDEX, x->path, ix->map_pos[i],
                                ix->map[i].key, ix->map[i].key_len, "shard name \"%.*s\" is "
                                "not a file inside the index's directory (absolute, an empty "
                                "part, .. or a final .)",
                                (int)SL__MIN(ix->map[i].value_len, 100), ix->map[i].value);
    return SAFELOAD_OK;
}

/* Every shard opened and parsed, in parallel (m->shards; the ones not opened stay NULL). A
   shard that is not there is the index's fault (INDEX_SHARD_MISSING). */
static safeload_result sl__index_open_shards(sl__index_open *x, safeload_error *err) {
    safeload_model *m = x->m;
    const sl__index *ix = &m->index;
    const safeload_model_desc *desc = x->desc;
    const char *path = x->path;
    safeload_open_desc plain;
    size_t i, k, n_names = x->n_names;
    safeload_pool *pool, *tmp_pool = NULL;
    int workers, kind;
    sl__shard_job job;
    safeload_result r;
    memset(&job, 0, sizeof job);
    x->paths = (char **)sl__calloc(x->a, n_names + 1, sizeof *x->paths);
    m->shards = (safeload_file **)sl__calloc(x->a, n_names + 1, sizeof *m->shards);
    if (!x->paths || !m->shards) return SL__OOM(err, path);
    for (i = 0; i < n_names; i++) {
        x->paths[i] = sl__join(x->a, path, x->dlen, x->names[i], strlen(x->names[i]));
        if (!x->paths[i]) return SL__OOM(err, path);
    }
    job.paths = x->paths;
    job.files = m->shards;
    job.n = n_names;
    job.fail_at = n_names;
    /* several shards parse side by side: each header on one thread */
    plain = desc->open;
    if (n_names > 1) plain.threads = 1;
    job.open = &plain;
    job.dir_len = x->dlen;
    job.confine = (desc->flags & SAFELOAD_MODEL_CONFINE) != 0;
    m->n_shards = n_names;              /* the ones not opened stay NULL */
    if (sl__mutex_init(&job.mu) != 0)
        return sl__fail(err, SAFELOAD_THREAD_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot create a mutex");
    job.locked = plain;
    job.locked.allocator.alloc = sl__locked_alloc;
    job.locked.allocator.realloc = desc->open.allocator.realloc ? sl__locked_realloc : NULL;
    job.locked.allocator.free = sl__locked_free;
    job.locked.allocator.user = &job;
    r = sl__pool_for(desc->pool, desc->threads, x->a, &pool, &tmp_pool, &workers, path, err);
    if (r == SAFELOAD_OK)
        sl__pool_run(pool, sl__shard_worker, &job, (int)SL__MIN((size_t)workers, n_names));
    for (i = 0; i < n_names; i++)       /* the shards outlive the job: the caller's allocator */
        if (m->shards[i]) m->shards[i]->alloc = desc->open.allocator;
    sl__mutex_destroy(&job.mu);
    safeload_pool_destroy(tmp_pool);
    if (r != SAFELOAD_OK || job.fail_at >= n_names) return r;
    i = job.fail_at;
    r = job.fail_res;
    if (err) *err = job.fail_err;
    /* a shard that is not there (or is not a file) is the index's fault; one that is there
       but cannot be opened (permissions, no descriptors left, or a directory on the way that
       denies access, so that we cannot tell) stays an IO_ERROR */
    kind = r == SAFELOAD_IO_ERROR ? sl__os_kind(x->paths[i], x->a) : 1;
    if (kind == 0 || kind >= 2) {
        /* name the first tensor the index puts there (its offset would be the index's, and
           err.file is the shard) */
        const safeload_kv *first = NULL;
        for (k = 0; k < ix->map_count && !first; k++)
            if (strcmp(ix->map[k].value, x->names[i]) == 0) first = &ix->map[k];
        r = sl__fail(err, SAFELOAD_INDEX_SHARD_MISSING, x->paths[i], SAFELOAD_NO_OFFSET,
                     first ? first->key : NULL, first ? first->key_len : 0,
                     "shard cannot be opened (%s), listed in %s", job.fail_err.message, path);
    }
    return r;
}

/* Every shard tensor: listed in the index (which notes where it was found, the first time:
   a second time is a name in two shards), or skipped with a warning (an error under
   SAFELOAD_MODEL_STRICT). Then the model's key set of the tensors kept. */
static safeload_result sl__index_match(sl__index_open *x, safeload_error *err) {
    safeload_model *m = x->m;
    const sl__index *ix = &m->index;
    const char *path = x->path;
    size_t i, k, total = 0, more = 0;
    for (i = 0; i < x->n_names; i++) total += m->shards[i]->count;
    x->skip = (unsigned char *)sl__calloc(x->a, total + 1, 1);
    x->ref_of = (uint32_t *)sl__malloc_n(x->a, ix->map_count + 1, sizeof *x->ref_of);
    if (!x->skip || !x->ref_of) return SL__OOM(err, path);
    for (i = 0; i < ix->map_count; i++) x->ref_of[i] = UINT32_MAX;
    for (i = 0, total = 0; i < x->n_names; i++) {
        const safeload_file *f = m->shards[i];
        uint64_t ahead[2 * SL__AHEAD];  /* k's hash and j's in different places */
        for (k = 0; k < f->count + SL__AHEAD; k++) {
            const safeload_tensor *t;
            size_t j = k - SL__AHEAD;   /* the tensor looked up now; k's slot is fetched */
            int64_t at;
            safeload_error w;
            if (k < f->count) {         /* as in sl__table_build */
                t = &f->tensors[k];
                ahead[k % (2 * SL__AHEAD)] = sl__hash(t->name, t->name_len, m->k0, m->k1);
                SL__PREFETCH(&x->itab.slots[ahead[k % (2 * SL__AHEAD)] & x->itab.mask]);
            }
            if (k < SL__AHEAD) continue;
            t = &f->tensors[j];
            at = sl__table_find(&x->itab, SL__KEYS(ix->map, safeload_kv), t->name, t->name_len,
                                ahead[j % (2 * SL__AHEAD)]);
            if (at >= 0) {
                if (x->ref_of[at] == UINT32_MAX) x->ref_of[at] = (uint32_t)x->n_ref;
                else if (x->dup_at == SIZE_MAX)
                    x->dup_shard = i, x->dup_k = j, x->dup_at = (size_t)at;
                x->n_ref++;
                total++;
                continue;
            }
            x->skip[total++] = 1;
            if (x->desc->flags & SAFELOAD_MODEL_STRICT)
                return sl__fail(err, SAFELOAD_INDEX_UNLISTED_TENSOR, f->path, t->header_offset,
                                t->name, t->name_len, "tensor is in this shard but not in %s's "
                                "weight_map (SAFELOAD_MODEL_STRICT)", path);
            /* a warning is a whole safeload_error (1 KiB): a hostile shard of a million
               unlisted tensors would hold a GiB of them, so they stop at SL__MAX_WARNINGS */
            if (m->n_warnings >= SL__MAX_WARNINGS) { more++; continue; }
            sl__fail(&w, SAFELOAD_INDEX_UNLISTED_TENSOR, f->path, t->header_offset, t->name,
                     t->name_len, "tensor is in this shard but not in %s's weight_map; it is "
                     "left out of the model", path);
            if (!sl__model_warn(m, &w)) return SL__OOM(err, path);
        }
    }
    if (more) {
        safeload_error w;
        sl__fail(&w, SAFELOAD_INDEX_UNLISTED_TENSOR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                 "%llu more shard tensors are not in the weight_map either (the warnings stop "
                 "at %d)", (sl__ull)more, SL__MAX_WARNINGS);
        if (!sl__model_warn(m, &w)) return SL__OOM(err, path);
    }
    return sl__model_index(m, x->skip, 0, err);
}

/* No name in two shards; every weight_map entry in a shard (in one at most, as just
   checked), and in the one the index names. */
static safeload_result sl__index_check(sl__index_open *x, safeload_error *err) {
    const safeload_model *m = x->m;
    const sl__index *ix = &m->index;
    size_t i;
    if (x->dup_at != SIZE_MAX) {        /* the second of a name in two shards, in refs order */
        const safeload_file *f = m->shards[x->dup_shard];
        const safeload_tensor *t = &f->tensors[x->dup_k];
        return sl__fail(err, SAFELOAD_INDEX_DUPLICATE_TENSOR, f->path, t->header_offset,
                        t->name, t->name_len, "tensor is also in %s",
                        m->shards[m->refs[x->ref_of[x->dup_at]].shard]->path);
    }
    for (i = 0; i < ix->map_count; i++) {
        size_t shard = x->ref_of[i] == UINT32_MAX ? 0 : m->refs[x->ref_of[i]].shard;
        const safeload_kv *kv = &ix->map[i];
        if (x->ref_of[i] == UINT32_MAX)
            return sl__fail(err, SAFELOAD_INDEX_MISSING_TENSOR, x->path, ix->map_pos[i], kv->key,
                            kv->key_len, "the index puts the tensor in %s, which does not hold "
                            "it, and no other shard does", kv->value);
        if (sl__name_cmp(kv->value, kv->value_len, x->names[shard], strlen(x->names[shard])) != 0)
            return sl__fail(err, SAFELOAD_INDEX_WRONG_SHARD, x->path, ix->map_pos[i], kv->key,
                            kv->key_len, "the index puts the tensor in %s but it is in %s",
                            kv->value, x->names[shard]);
    }
    return SAFELOAD_OK;
}

/* The weight_map's table is the model's: every entry is one of refs, and refs are all
   entries. */
static void sl__index_adopt(sl__index_open *x) {
    safeload_model *m = x->m;
    m->names = x->itab;
    memset(&x->itab, 0, sizeof x->itab);
    m->tab = &m->names;
    m->tkeys = SL__KEYS(m->index.map, safeload_kv);
    m->remap = x->ref_of;
    x->ref_of = NULL;
    m->hk0 = m->k0;
    m->hk1 = m->k1;
}

static void sl__index_release(sl__index_open *x) {
    size_t i;
    if (x->paths) for (i = 0; i < x->n_names; i++) sl__free(x->a, x->paths[i]);
    sl__free(x->a, x->paths);
    sl__free(x->a, (void *)x->names);
    sl__free(x->a, x->by_shard);
    sl__free(x->a, x->tmp);
    sl__free(x->a, x->skip);
    sl__free(x->a, x->ref_of);
    sl__table_free(&x->itab, x->a);
}

static safeload_result sl__model_open_index(safeload_model *m, const char *path,
                                            const safeload_model_desc *desc,
                                            safeload_error *err) {
    sl__index_open x;
    safeload_result r;
    memset(&x, 0, sizeof x);
    x.m = m;
    x.path = path;
    x.desc = desc;
    x.a = &m->alloc;
    x.dup_at = SIZE_MAX;
    /* the index's directory; a backslash is part of a name outside Windows */
    x.dlen = strlen(path);
    while (x.dlen && path[x.dlen - 1] != '/' &&
           !(SL__WINDOWS_PATHS && path[x.dlen - 1] == '\\'))
        x.dlen--;
    if ((r = sl__index_read(&x, err)) != SAFELOAD_OK) return r;
    if ((r = sl__index_keys(&x, err)) == SAFELOAD_OK &&
        (r = sl__index_shard_names(&x, err)) == SAFELOAD_OK &&
        (r = sl__index_open_shards(&x, err)) == SAFELOAD_OK &&
        (r = sl__index_match(&x, err)) == SAFELOAD_OK &&
        (r = sl__index_check(&x, err)) == SAFELOAD_OK)
        sl__index_adopt(&x);
    sl__index_release(&x);
    return r;
}

SL__DEF safeload_result safeload_model_open(safeload_model **out, const char *path,
                                            const safeload_model_desc *desc,
                                            safeload_error *err) {
    safeload_model_desc dd;
    safeload_model *m;
    safeload_result r = SAFELOAD_OK;
    char *target = NULL;
    int is_index = 0;
    sl__clear_error(err);
    if (out) *out = NULL;
    if (!out || !path || !path[0])
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        path && !path[0] ? "path is empty" : "out or path is NULL");
    memset(&dd, 0, sizeof dd);
    if (desc) dd = *desc;
    if (!sl__allocator_ok(&dd.open.allocator))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "an allocator needs both alloc and free");
    if (dd.flags & ~(uint32_t)(SAFELOAD_MODEL_STRICT | SAFELOAD_MODEL_CONFINE))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "unknown flags 0x%lx", (unsigned long)dd.flags);   /* a newer header's */
#if defined(SL__WINDOWS)
    if (dd.flags & SAFELOAD_MODEL_CONFINE)
        return sl__fail(err, SAFELOAD_UNSUPPORTED, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "SAFELOAD_MODEL_CONFINE is not supported on Windows");
#endif
    m = sl__model_new(&dd);
    if (!m) return SL__OOM(err, path);

    /* what the path names: an index, or one file (a directory holds one or the other) */
    if (sl__os_is_dir(path, &m->alloc)) {
        sl__dirscan d;
        memset(&d, 0, sizeof d);
        d.a = &m->alloc;
        d.dir = path;
        if (sl__os_list_dir(path, &m->alloc, sl__dirscan_fn, &d) != 0)
            r = sl__fail(err, SAFELOAD_IO_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                         "cannot list the directory");
        else if (d.oom) r = SL__OOM(err, path);
        else if (d.n_index > 1 && !d.has_model)     /* listing order must not choose */
            r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                         "%d *.safetensors.index.json files and no model.safetensors.index.json:"
                         " name one", d.n_index);
        else {
            const char *name = d.index ? d.index : d.single;
            is_index = d.index != NULL;
            if (!d.index && d.n_single != 1 && !d.has_model_single) {
                /* a variant's index, when it is the only one and every .safetensors file
                   here is of that variant (a plain model.safetensors beside it wins) */
                name = NULL;
                if (d.n_variant == 1) {
                    d.mark = sl__index_variant(d.variant, &d.mark_len);
                    if (sl__os_list_dir(path, &m->alloc, sl__dirscan_fn, &d) == 0 &&
                        d.n_unmarked == 0)
                        name = d.variant, is_index = 1;
                }
            }
            if (d.oom) r = SL__OOM(err, path);
            else if (name) {
                target = sl__join(&m->alloc, path, strlen(path), name, strlen(name));
                if (!target) r = SL__OOM(err, path);
            } else if (d.n_variant > 1)
                r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                             "%d variant indexes (*.safetensors.index.*.json), no "
                             "model.safetensors.index.json and no model.safetensors: name one",
                             d.n_variant);
            else if (d.n_single)
                r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                             "no *.safetensors.index.json, no model.safetensors and %d "
                             ".safetensors files: name one", d.n_single);
            else
                r = sl__fail(err, SAFELOAD_NOT_FOUND, path, SAFELOAD_NO_OFFSET, NULL, 0,
                             "no .safetensors file or index in this directory");
        }
        sl__free(&m->alloc, d.index);
        sl__free(&m->alloc, d.single);
        sl__free(&m->alloc, d.variant);
    } else {
        is_index = sl__ends_with_nocase(path, ".json");  /* INDEX.JSON from a FAT drive */
        target = sl__strdup(&m->alloc, path, strlen(path));
        if (!target) r = SL__OOM(err, path);
    }

    if (r == SAFELOAD_OK && is_index) {
        r = sl__model_open_index(m, target, &dd, err);
    } else if (r == SAFELOAD_OK) {
        m->shards = (safeload_file **)sl__calloc(&m->alloc, 1, sizeof *m->shards);
        if (!dd.open.threads) dd.open.threads = dd.threads;   /* its header, in parts */
        r = m->shards ? safeload_open(&m->shards[0], target, &dd.open, err) : SL__OOM(err, path);
        if (r == SAFELOAD_OK) {
            m->n_shards = 1;
            m->meta = m->shards[0]->meta;
            m->meta_count = m->shards[0]->meta_count;
            r = sl__model_index(m, NULL, 1, err);
        }
    }
    if (r != SAFELOAD_OK) {
        sl__free(&m->alloc, target);
        safeload_model_close(m);
        return r;
    }
    m->path = target;
    *out = m;
    return SAFELOAD_OK;
}

SL__DEF size_t safeload_model_shard_count(const safeload_model *m) { return m ? m->n_shards : 0; }
SL__DEF int safeload_model_has_index(const safeload_model *m) { return m && m->index_text; }
SL__DEF const char *safeload_model_path(const safeload_model *m) { return m ? m->path : NULL; }
SL__DEF safeload_file *safeload_model_shard(const safeload_model *m, size_t i) {
    return m && i < m->n_shards ? m->shards[i] : NULL;
}
SL__DEF size_t safeload_model_tensor_count(const safeload_model *m) { return m ? m->count : 0; }

SL__DEF const safeload_tensor *safeload_model_tensor_at(const safeload_model *m, size_t i,
                                                        size_t *shard) {
    if (!m || i >= m->count) return NULL;
    if (shard) *shard = m->refs[i].shard;
    return &m->shards[m->refs[i].shard]->tensors[m->refs[i].idx];
}

SL__DEF const safeload_tensor *safeload_model_find(const safeload_model *m, const char *name,
                                                   size_t *shard) {
    return m && name ? sl__model_lookup(m, name, strlen(name), shard) : NULL;
}

SL__DEF size_t safeload_model_metadata_count(const safeload_model *m) {
    return m ? m->meta_count : 0;
}
SL__DEF const safeload_kv *safeload_model_metadata_at(const safeload_model *m, size_t i) {
    return m && i < m->meta_count ? &m->meta[i] : NULL;
}
SL__DEF size_t safeload_model_warning_count(const safeload_model *m) {
    return m ? m->n_warnings : 0;
}
SL__DEF const safeload_error *safeload_model_warning(const safeload_model *m, size_t i) {
    return m && i < m->n_warnings ? &m->warnings[i] : NULL;
}

SL__DEF safeload_result safeload_model_check_keys(const safeload_model *m,
                                                  const char *const *expected, size_t count,
                                                  safeload_key_report *report,
                                                  safeload_error *err) {
    sl__nameset ns;
    sl__clear_error(err);
    if (report) memset(report, 0, sizeof *report);
    if (!m || !report)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "model or report is NULL");
    ns.table = m->tab;
    ns.keys = m->tkeys;
    ns.remap = m->remap;
    ns.list = SL__KEYS(m->refs, sl__ref);
    ns.count = m->count;
    ns.k0 = m->hk0;
    ns.k1 = m->hk1;
    ns.alloc = &m->alloc;
    return sl__check_keys(&ns, expected, count, report, err);
}

/* ---- 5c. load planning: requests -> extents -> tasks ----
   A task is one read: either one piece (<= chunk) of one request, or a run of whole small
   requests that sit back to back in one shard. Tasks are in file order; workers take the next
   one from a shared counter, so reads stay mostly sequential and big tensors are shared. */

#define SL__ALIGN 64                    /* arena alignment of every allocated tensor */
#define SL__DIRECT_ALIGN ((uint64_t)4096)
#define SL__MAX_SEGS 1024               /* segments per coalesced task (IOV_MAX on Linux) */

typedef struct sl__rp {                 /* a resolved request */
    const safeload_tensor *t;           /* written to the caller's request on success only */
    uint32_t shard;
    uint64_t src_off, src_len;          /* absolute file offset and source bytes */
    uint64_t n_runs, run_len, stride;   /* the source bytes: n_runs runs of run_len bytes,
                                           stride apart from src_off (a slice of dimension
                                           d > 0); else 1, src_len, src_len */
    unsigned char *dst;                 /* host address, or device address when device */
    uint64_t dst_len;
    unsigned ssize, dsize;              /* element bytes (1 when no cast) */
    sl__cast_fn cast;                   /* NULL: a plain copy */
    int device;
    int alloc;                          /* destination comes from the arena */
} sl__rp;

typedef struct sl__seg {
    uint32_t req;
    uint64_t src_pos;                   /* offset of this piece within the request's source */
    uint64_t len;                       /* source bytes */
    uint64_t task_pos;                  /* offset within the task's read */
} sl__seg;

typedef struct sl__task {
    uint32_t shard;
    uint32_t seg0, nseg;
    uint32_t cast;                      /* some segment casts: the run goes through staging */
    uint32_t holes;                     /* its segments have gaps between them (a slice's
                                           runs read in one go): read, then dropped */
    uint64_t off, len;                  /* absolute file offset, bytes (gaps included) */
    uint64_t data_len;                  /* source bytes of its segments (gaps not) */
    uint64_t out_len;                   /* output bytes of its segments (after casts) */
} sl__task;

typedef struct sl__worker {
    unsigned char *staging;             /* cast staging, run buffer */
    unsigned char *bounce, *bounce_raw; /* direct I/O, 4 KiB aligned */
    void **pinned;                      /* device staging (pinned through the hooks) */
    size_t *pinned_busy;        /* per buffer: 1 + the task its copies came from; 0: free */
    int next_pinned;
    uint64_t reads, bytes_read, bytes_written;
    /* a DIRECT load's queue (1e): slots of slot_size bytes each, the free ones stacked */
    sl__aio aio;
    int aio_on;
    int stuck;                          /* the queue failed with reads in flight: its memory
                                           is leaked, not freed (the kernel may still write) */
    unsigned char *slot_raw, *slot_mem;
    size_t slot_size;
    struct sl__slot *slots;
    unsigned *free_slots, n_free, inflight;
    const unsigned char *ready;         /* a completed read's bytes: the task reads from here */
    uint64_t ready_off;                 /*   (the file offset of ready[0]) */
} sl__worker;

typedef struct sl__slot {               /* one read in flight */
    const struct sl__task *t;
    unsigned char *buf;                 /* the slot's memory, or the destination itself */
    uint64_t lo, hi;                    /* the aligned file range read */
    int into_dst;
} sl__slot;

struct safeload_arena {
    unsigned char *host;                /* aligned base */
    void *host_raw;
    uint64_t host_size, raw_size;       /* host_size: what the last load placed there */
    uint64_t host_cap;                  /* usable bytes from host */
    uint64_t touched;                   /* bytes from host some load has written (first touch
                                           done: a later load into it pays none) */
    int os_pages;
    void *device;
    uint64_t device_cap;
    safeload_device_hooks hooks;
    safeload_allocator alloc;
};

/* The arena's fresh pages during one load (see safeload_pages). Every worker faults in the
   2 MiB windows its task writes before reading into them (MADV_POPULATE_WRITE: no per-page
   trap in the middle of the copy, and measurable), each window once. AUTO times the first
   windows, huge and 4 KiB pages alternately, keeps huge pages while they cost little more and then
   watches every 8 MiB of them: free page reporting hands out the memory the host still backs
   first, so huge pages can turn slow in the middle of a load. The other way round is rarer but
   seen (a probe that hit a moment of compaction, with memory the host backs): on 4 KiB pages,
   AUTO tries one window with huge pages again after SL__RECHECK_WINS windows, then after twice
   as many each time it stays slow, so a host where they stay slow pays a window now and then;
   and it watches every 8 MiB of 4 KiB pages too, which can also turn slow mid-load, trying
   huge pages at once when two verdicts fall under their latest rate (sl__pages_watch4). */
#define SL__WIN ((uint64_t)2 << 20)
#define SL__PROBE_WINS 4                /* huge, 4 KiB, huge, 4 KiB (or the first pair alone) */
#define SL__VERDICT_BYTES (4 * SL__WIN)
/* Two slow verdicts among the last three switch to 4 KiB pages: one alone was a passing
   moment (host compaction, another process's burst) in most loads that saw it where the host
   backs memory, and a switch there cost 128 MiB of 4 KiB pages (docs/performance.md); a host
   that takes memory back stays slow, and pays 8 MiB more of slow huge pages before the
   switch. Not only two in a row: where the host backs some of the free blocks and has taken
   others back, verdicts come in slow and fast by turns (12-02 evening: one idle load kept
   468 of 512 MiB on huge pages with its last verdict at 256 MB/s against 1266 for 4 KiB pages,
   1.51 s against 0.27 for the others). */
#define SL__STRIKES 2
#define SL__SLOW_OF(hist) (((hist) & 1) + (((hist) >> 1) & 1) + (((hist) >> 2) & 1))
/* ... except SL__FAR_WINS huge windows in a row, each at a quarter of the 4 KiB rate or less:
   they switch at once, whatever the verdicts. After the memory sat idle (12-02 evening, 12-03)
   the first huge pages came fast, the probe and the first verdicts passed them, and from some
   window on every one took 4.6-7 ms (0.1-0.2 of the 4 KiB rate): a verdict that straddled the
   turn was one strike, the next one the switch, 6-7 slow windows in all. Each costs the load
   7-8 windows' worth of 4 KiB faults; so while a huge window that can confirm the turn is in
   flight, the other workers take theirs on 4 KiB pages (sl__pages_touch_range). With memory
   the host backs no huge window has come near the line: 12,300 of them on 12-03 (56 loads)
   took at most 0.6 ms against 0.6-0.9 for a 4 KiB window; the slow moments seen on other days
   ran at 0.26-0.54 of the 4 KiB rate over a verdict. */
#define SL__HUGE_FAR(huge, normal) ((huge) * 4 <= (normal))
#define SL__FAR_WINS 2
/* A retry that measures huge pages that far under the 4 KiB rate puts the next one this many
   times as far away, not twice: the host has taken the memory back and keeps it (after idle on
   12-03, 27 of 30 retries found 3.4-7 ms a window against 0.6-1 for 4 KiB pages), and each
   costs a slow window. A retry merely slow (a passing moment ending) doubles the gap. */
#define SL__FAR_GAP 8
#ifndef SL__RECHECK_WINS                /* (the tests make it small) */
#  define SL__RECHECK_WINS 64
#endif
/* Huge pages are kept while they fault in at 3/4 of the 4 KiB rate or better: past the first
   touch they pay back (the copy into them misses the TLB less, and a 512 MiB arena is released
   in 2 ms instead of 30-40), while the pages they guard against (faulting on the host too) run
   at a third of it. Measured in docs/performance.md. */
#define SL__HUGE_OK(huge, normal) ((huge) * 4 >= (normal) * 3)
/* A retry after 4 KiB pages won asks more: huge pages at least as fast as 4 KiB ones. A host
   that takes memory back measured 0.6-0.75 of the 4 KiB rate here, close to the line above,
   and a retry there that scraped past it cost more than it won; a passing slow moment, once
   over, measures 1.4-2x. */
#define SL__HUGE_FAST(huge, normal) ((huge) >= (normal))
/* The probe stops after its first pair when huge pages ran under half the 4 KiB rate, since
   each probe window costs the load its time alone, before the workers start: only a second
   huge window at 1.5x the 4 KiB rate could lift the pair to SL__HUGE_OK (a passing slow
   moment, which the retries catch; a host that took the memory back: 4.5 ms a huge window
   against 0.9 on 4 KiB pages, docs/loading.md). It never stops early the other way: the one
   4 KiB window of the pair can be a stall (sl__pages_start). */
#define SL__HUGE_LOST(huge, normal) ((huge) * 2 < (normal))
/* ... nor the other way, unless huge pages ran at 8x the 4 KiB rate or more: a stall of the
   4 KiB window (1.8-6.7 ms against 0.45-0.9, above) makes huge pages look at most 2-3x as
   fast where the host backs neither well, while where it backs memory they fault in at
   10-50x the 4 KiB rate (the PVM guest, 12-03 evening: 4 KiB pages at 7.6 us each, a second
   4 KiB window cost a 512 MiB load 4 ms of its 37). The window of 4 KiB pages owed after the
   first verdict (check4) still re-measures them. */
#ifndef SL__WON_BY                      /* (the tests turn it off: 0) */
#  define SL__WON_BY 8
#endif
#define SL__HUGE_WON(huge, normal) (SL__WON_BY && (huge) >= (normal) * SL__WON_BY)
#ifndef SAFELOAD_TOUCH_NS                /* test seam: the tests make huge pages look slow */
#  define SAFELOAD_TOUCH_NS(huge, ns) (ns)
#endif
typedef struct sl__pages {
    unsigned char *base;                /* the arena's host base (2 MiB aligned) */
    uint64_t lo, hi;                    /* the fresh bytes [lo, hi) from base */
    size_t n_win, first_win;            /* windows of SL__WIN bytes from first_win * SL__WIN */
    volatile size_t next;               /* the next window to fault in, from first_win */
    volatile int huge;                  /* what the windows not yet touched get */
    int monitor;                        /* AUTO on huge pages: time them, switch when slow */
    volatile int populate;              /* MADV_POPULATE_WRITE works */
    uint64_t acc_bytes, acc_ns;         /* huge windows since the last verdict (under mu) */
    unsigned far_run;                   /* huge windows in a row SL__HUGE_FAR (under mu) */
    unsigned huge_busy;                 /* workers' huge windows being faulted in (under mu) */
    uint64_t far_bytes, far_ns;         /* ... their bytes and time */
    unsigned slow;                      /* the last three verdicts, 1 = slow, latest in
                                           bit 0 (under mu) */
    uint64_t acc4_bytes, acc4_ns;       /* the same for 4 KiB windows, where AUTO retries */
    int strikes4;                       /* 4 KiB verdicts slower than huge pages, in a row */
    int retry_due;                      /* ... SL__STRIKES of them: retry now (under mu) */
    int autop;                          /* AUTO measured: retries and verdicts (set before
                                           the workers) */
    uint64_t first_ns[2];               /* the probe's first-write cost of a window after its
                                           populate, 4 KiB [0] and huge [1]: the least seen */
    size_t retry;                       /* AUTO on 4 KiB pages: the window that tries huge
                                           pages again (0: none; under mu) */
    size_t gap;                         /* windows to the next retry when this one fails */
    volatile int check4;                /* AUTO on huge pages after its probe: one window of
                                           4 KiB pages is owed after the first verdict they
                                           pass (1), the next window taken is it (2); set
                                           under mu, read without it */
    uint64_t huge_bytes, huge_mbps, normal_mbps;
    safeload_pages policy;              /* for stats: 0 when this load touches no fresh pages */
} sl__pages;

typedef struct sl__load {
    safeload_file **shards;
    size_t n_shards;
    sl__os_file *direct;                /* per shard: an O_DIRECT handle, or SL__NO_FILE */
    const unsigned char **maps;         /* mmap mode, per shard: its mapping (NULL: not read) */
    void **map_handles;                 /* mappings of this load's own (SL__MAP_PER_LOAD) */
    safeload_io io;
    sl__rp *reqs;
    safeload_request *user;
    size_t n_reqs;
    sl__task *tasks;
    size_t n_tasks, cap_tasks;
    sl__seg *segs;
    size_t n_segs, cap_segs;
    sl__bigv big;                       /* the first file's verdict for reqs and segs */
    sl__bigv dma;                       /* its copy for the disk's buffers (SL__BIG_DMA) */
    sl__worker *workers;
    int n_workers;
    size_t chunk, staging, pinned_size, upload_align;
    int pinned_count;
    uint64_t pinned_bytes;              /* allocated through pinned_alloc (stats) */
    volatile size_t next_task;
    volatile uint64_t done_bytes SL__ALIGN8;   /* under mu where SL__LOCKED_COUNT */
    uint64_t total_bytes;
    volatile int stop;                  /* 1 after an error or a cancel */
    sl__mutex mu;
    sl__cond cv;
    int have_error;
    safeload_error first;
    safeload_progress_fn progress;
    void *progress_user;
    uint64_t progress_interval;
    uint64_t reported;                  /* the last `done` passed to progress (none: max) */
    safeload_device_hooks hooks;        /* resolved device hooks */
    int begun;                          /* begin() succeeded: end() is owed */
    sl__cast_fn ntcopy;                 /* non-temporal copy for big loads, or NULL */
    struct sl__share *share;            /* a shared load's bookkeeping, or NULL */
    const uint64_t *part_cum;           /* shared loads: per request, where its bytes start in
                                           the load's (file order); NULL: not shared */
    uint64_t part_lo, part_hi;          /* this rank's part of those bytes */
    const safeload_allocator *alloc;
    const char *where;                  /* the model's or file's path, for errors */
    /* what the load call's steps (5e) hand on, from the settings to the release */
    safeload_load_desc d;               /* the caller's desc; alloc points at its allocator */
    safeload_arena *arena;              /* built by the load, the caller's when it succeeds */
    uint32_t *order, *order_tmp;        /* requests in file order, and the sort's scratch (in
                                           the reqs block) */
    uint64_t host_total, dev_total;     /* arena bytes wanted on the host, on the device */
    uint64_t cast_out;                  /* bytes the casts write */
    int need_host, need_dev, any_dev;   /* arena space wanted; any request for the device */
    safeload_pool *pool, *tmp_pool;     /* the pool the load runs on; the one it made */
    sl__pool_user me;                   /* this thread, inside the caller's pool */
    int entered;                        /* sl__pool_enter ran: sl__pool_leave is owed */
    int unconfirmed;                    /* device copies never confirmed: the arena leaks */
    sl__pages pages;
    uint64_t fresh;                     /* arena bytes no earlier load touched (stats) */
    int queue_depth;                    /* reads in flight wanted over all workers (1: none) */
    int aio_depth;                      /* what the workers' queues hold in all (stats) */
    int aio_error;                      /* why no queue was set up where one was wanted */
} sl__load;

/* The file offset of byte `pos` of a request's (sliced) source bytes. */
SL__INLINE uint64_t sl__rp_at(const sl__rp *r, uint64_t pos) {
    return r->n_runs == 1 ? r->src_off + pos
                          : r->src_off + pos / r->run_len * r->stride + pos % r->run_len;
}
/* One past its last byte in the file. */
SL__INLINE uint64_t sl__rp_end(const sl__rp *r) {
    return r->src_len ? sl__rp_at(r, r->src_len - 1) + 1 : r->src_off;
}

/* A request's slice as runs of the file: [begin, end) of dimension d is prod(shape[:d]) runs
   of (end - begin) x prod(shape[d+1:]) elements, shape[d] x prod(shape[d+1:]) apart. Sets
   p->src_off, src_len, n_runs, run_len, stride; on a bad slice, INVALID_SLICE saying why. */
static safeload_result sl__slice_runs(const safeload_tensor *t, const safeload_request *q,
                                      size_t i, const char *sp, sl__rp *p, safeload_error *err) {
    uint64_t b = q->slice_begin, e = q->slice_end, outer = 1, inner = 1, bits, ib;
    uint32_t d = q->slice_dim, k;
    p->src_off = t->file_offset;
    p->src_len = t->nbytes;
    p->n_runs = 1;
    p->run_len = p->stride = t->nbytes;
    if (b == 0 && e == 0) return SAFELOAD_OK;              /* the whole tensor */
    if (t->rank == 0)
        return sl__fail(err, SAFELOAD_INVALID_SLICE, sp, t->header_offset, t->name, t->name_len,
                        "request %llu: a scalar cannot be sliced", (sl__ull)i);
    if (d >= t->rank)
        return sl__fail(err, SAFELOAD_INVALID_SLICE, sp, t->header_offset, t->name, t->name_len,
                        "request %llu: slice_dim %u of a tensor of rank %u", (sl__ull)i,
                        (unsigned)d, (unsigned)t->rank);
    if (b >= e || e > t->shape[d])
        return sl__fail(err, SAFELOAD_INVALID_SLICE, sp, t->header_offset, t->name, t->name_len,
                        "request %llu: %s slice [%llu, %llu) of dimension %u, which has %llu "
                        "entr%s", (sl__ull)i, b >= e ? "an empty" : "a past-the-end",
                        (sl__ull)b, (sl__ull)e, (unsigned)d, (sl__ull)t->shape[d],
                        t->shape[d] == 1 ? "y" : "ies");
    if (b == 0 && e == t->shape[d]) return SAFELOAD_OK;    /* all of it: F4 too */
    if (t->numel == 0) {                                   /* nothing to read */
        p->src_len = p->run_len = p->stride = 0;
        return SAFELOAD_OK;
    }
    /* numel > 0: every product below is at most numel, and numel x bits fits (nbytes) */
    for (k = 0; k < d; k++) outer *= t->shape[k];
    for (k = d + 1; k < t->rank; k++) inner *= t->shape[k];
    bits = safeload_dtype_bits(t->dtype);
    if ((inner * bits) % 8)
        return sl__fail(err, SAFELOAD_INVALID_SLICE, sp, t->header_offset, t->name, t->name_len,
                        "request %llu: a slice of dimension %u of this %s tensor does not "
                        "start and end on whole bytes (%llu values of %u bits per entry)",
                        (sl__ull)i, (unsigned)d, sl__dtype_names[t->dtype], (sl__ull)inner,
                        (unsigned)bits);
    ib = inner * bits / 8;
    p->src_off += b * ib;
    p->run_len = (e - b) * ib;
    p->stride = t->shape[d] * ib;
    p->n_runs = outer;
    p->src_len = outer * p->run_len;
    if (outer == 1) p->stride = p->run_len;
    return SAFELOAD_OK;
}

static safeload_result sl__add_task(sl__load *L, uint32_t shard, uint64_t off) {
    sl__task *t;
    if (L->n_tasks == L->cap_tasks &&
        !sl__grow(L->alloc, (void **)&L->tasks, &L->cap_tasks, L->n_tasks + 1, sizeof(sl__task)))
        return SAFELOAD_OUT_OF_MEMORY;
    t = &L->tasks[L->n_tasks++];
    t->shard = shard;
    t->off = off;
    t->len = 0;
    t->data_len = 0;
    t->out_len = 0;
    t->seg0 = (uint32_t)L->n_segs;
    t->nseg = 0;
    t->cast = 0;
    t->holes = 0;
    return SAFELOAD_OK;
}

/* Bytes [src_pos, src_pos + len) of request req, which sit at file offset `at` (at or past the
   current task's end: a gap is read and dropped). */
static safeload_result sl__add_seg_at(sl__load *L, uint32_t req, uint64_t src_pos, uint64_t len,
                                      uint64_t at) {
    sl__task *t = &L->tasks[L->n_tasks - 1];
    sl__seg *s;
    if (L->n_segs == L->cap_segs &&
        !sl__grow_big(L->alloc, &L->big, (void **)&L->segs, &L->cap_segs, L->n_segs + 1,
                      sizeof(sl__seg)))
        return SAFELOAD_OUT_OF_MEMORY;
    s = &L->segs[L->n_segs++];
    s->req = req;
    s->src_pos = src_pos;
    s->len = len;
    s->task_pos = at - t->off;
    if (s->task_pos != t->len) t->holes = 1;
    t->len = s->task_pos + len;
    t->data_len += len;
    t->out_len += len / L->reqs[req].ssize * L->reqs[req].dsize;
    t->nseg++;
    if (L->reqs[req].cast) t->cast = 1;
    return SAFELOAD_OK;
}

static safeload_result sl__add_seg(sl__load *L, uint32_t req, uint64_t src_pos, uint64_t len) {
    const sl__task *t = &L->tasks[L->n_tasks - 1];
    return sl__add_seg_at(L, req, src_pos, len, t->off + t->len);
}

/* A shard as addressable memory (the caller's buffer, or the mapping in mmap mode), or
   NULL when its bytes must be read. */
SL__INLINE const unsigned char *sl__mem_base(const sl__load *L, uint32_t shard) {
    const safeload_file *f = L->shards[shard];
    if (f->src.kind == SL__SRC_MEMORY) return f->src.mem;
    return L->maps ? L->maps[shard] : NULL;
}

/* How many source bytes one task may carry for request r. */
static uint64_t sl__task_limit(const sl__load *L, const sl__rp *r) {
    uint64_t lim = L->chunk;
    if (r->device) {
        /* the output of a task fills at most one pinned buffer (pinned_size is a multiple of
           4096, so pieces keep any upload alignment up to that) */
        lim = (uint64_t)L->pinned_size / r->dsize * r->ssize;
    }
    lim -= lim % r->ssize;
    return lim ? lim : r->ssize;
}

/* May a whole request join the current run? Runs are read in one go (preadv, one copy from
   the mapping, or one read into the staging or pinned buffer). */
static int sl__can_join(const sl__load *L, const sl__task *t, const sl__rp *r) {
    const sl__rp *first;
    uint64_t cap;
    if (!t || t->holes || t->shard != r->shard || t->off + t->len != r->src_off ||
        t->nseg >= SL__MAX_SEGS)
        return 0;
    first = &L->reqs[L->segs[t->seg0].req];
    if (first->device != r->device) return 0;
    if (r->device && L->upload_align > 1) return 0;   /* each upload from offset 0 */
    if (r->device) {
        /* output bytes of the run must fit one pinned buffer; casts go through staging */
        if (t->out_len + r->src_len / r->ssize * r->dsize > L->pinned_size) return 0;
        if (r->cast || t->cast) return t->len + r->src_len <= L->staging;
        return 1;
    }
    /* host: a run stays inside one chunk-aligned window of the destination, so with an arena
       each huge page is first touched (and zeroed) by one worker, not fought over by two */
    if (!r->cast && !t->cast) {
        uint64_t w0 = (uint64_t)(uintptr_t)(first->dst + L->segs[t->seg0].src_pos) / L->chunk;
        uint64_t w1 = ((uint64_t)(uintptr_t)r->dst + (r->dst_len ? r->dst_len - 1 : 0)) / L->chunk;
        if (w0 != w1) return 0;
    }
    /* host: preadv and memory (a mapping, the caller's buffer) take a chunk; staged runs a
       staging buffer (a reader source in mmap mode has no mapping: it is staged) */
    if (sl__mem_base(L, r->shard))
        cap = L->chunk;
#if !defined(SL__WINDOWS)
    else if (L->io != SAFELOAD_IO_MMAP && L->shards[r->shard]->src.kind == SL__SRC_FILE &&
             !r->cast && !t->cast)
        cap = L->chunk;                 /* preadv, also for the files DIRECT reads buffered */
#endif
    else if (L->io == SAFELOAD_IO_DIRECT && L->direct[r->shard] != SL__NO_FILE)
        cap = L->chunk;
    else
        cap = L->staging;
    return t->len + r->src_len <= cap;
}

/* How many head bytes of request r may end the current run at its window's end: a host run
   of plain copies into the arena that r continues in the file and in the destination, whose
   window r crosses. 0: none. */
static uint64_t sl__join_head(const sl__load *L, const sl__task *t, const sl__rp *r) {
    const sl__seg *s0;
    const sl__rp *first;
    uint64_t end, part;
    if (!t || t->holes || t->cast || r->cast || r->device || !r->alloc || t->shard != r->shard ||
        t->off + t->len != r->src_off || t->nseg >= SL__MAX_SEGS || L->share)
        return 0;
    s0 = &L->segs[t->seg0];
    first = &L->reqs[s0->req];
    if (first->device || !first->alloc) return 0;
    /* the window the run fills, and where r's destination reaches its end */
    end = ((uint64_t)(uintptr_t)(first->dst + s0->src_pos) / L->chunk + 1) * L->chunk;
    if ((uint64_t)(uintptr_t)r->dst >= end) return 0;
    part = end - (uint64_t)(uintptr_t)r->dst;
    if (part >= r->src_len || t->len + part > L->chunk) return 0;
    /* runs read in one go up to a chunk (else a staging buffer: leave those alone) */
    if (sl__mem_base(L, r->shard) || (L->direct && L->direct[r->shard] != SL__NO_FILE))
        return part;
#if !defined(SL__WINDOWS)
    if (L->io != SAFELOAD_IO_MMAP && L->shards[r->shard]->src.kind == SL__SRC_FILE) return part;
#endif
    return 0;
}

/* Runs of a slice closer than this are read in one go, the gap read and dropped: one read
   beats two syscalls (or two device round trips) for a gap this small. */
#define SL__GAP_MAX ((uint64_t)64 * SL__KIB)

/* The most file bytes a read of runs of request r (gaps included) may span: the mapping, a
   caller's buffer, O_DIRECT's bounce buffer and a preadv (its gaps into a sink) take a chunk;
   a read into staging (casts, reader sources, device runs, Windows) the staging buffer. */
static uint64_t sl__gap_cap(const sl__load *L, const sl__rp *r) {
    if (sl__mem_base(L, r->shard) || (L->direct && L->direct[r->shard] != SL__NO_FILE))
        return L->chunk;
#if !defined(SL__WINDOWS)
    if (!r->device && !r->cast && L->shards[r->shard]->src.kind == SL__SRC_FILE) return L->chunk;
#endif
    return L->staging;
}

/* Tasks for bytes [a, b) of request ri's source bytes (all of them, or a rank's part). */
static safeload_result sl__plan_range(sl__load *L, uint32_t ri, uint64_t a, uint64_t b) {
    const sl__rp *r = &L->reqs[ri];
    uint64_t lim = sl__task_limit(L, r), pos = a, cap = 0;
    int group = 0;              /* the last task is a run group of r's that may take more */
    uint32_t iovs = 0;          /* the group's preadv vectors (a gap needs sink vectors) */
    int gaps = r->n_runs > 1 && r->stride - r->run_len <= SL__GAP_MAX;
    sl__task *cur = L->n_tasks ? &L->tasks[L->n_tasks - 1] : NULL;
    if (a >= b) return SAFELOAD_OK;
    if (r->n_runs == 1 && a == 0 && b == r->src_len && r->src_len <= lim) {
        uint64_t part;
        if (sl__can_join(L, cur, r)) return sl__add_seg(L, ri, 0, r->src_len);
        /* a small tensor across the end of the run's window: its head ends the run there,
           so each window of the arena is one task's, faulted in by the worker that fills it
           (another core's freshly zeroed pages cost a trip across the caches) */
        if ((part = sl__join_head(L, cur, r)) != 0) {
            if (sl__add_seg(L, ri, 0, part)) return SAFELOAD_OUT_OF_MEMORY;
            pos = part;
        }
    }
    if (gaps) cap = sl__gap_cap(L, r);
    while (pos < b) {
        /* the piece of one run: [pos, end) */
        uint64_t end = r->n_runs == 1 ? b : SL__MIN(b, (pos / r->run_len + 1) * r->run_len);
        uint64_t at = sl__rp_at(r, pos), n = end - pos;
        if (group) {
            sl__task *t = &L->tasks[L->n_tasks - 1];
            uint64_t gap = at - (t->off + t->len);
            uint32_t cost = 1 + (uint32_t)((gap + L->staging - 1) / L->staging);
            if (at + n - t->off <= cap && t->data_len + n <= lim && iovs + cost <= SL__MAX_SEGS) {
                if (sl__add_seg_at(L, ri, pos, n, at)) return SAFELOAD_OUT_OF_MEMORY;
                iovs += cost;
                pos = end;
                continue;
            }
        }
        group = 0;
        if (gaps && n <= lim && n <= cap) {                 /* a group's first run */
            if (sl__add_task(L, r->shard, at) || sl__add_seg_at(L, ri, pos, n, at))
                return SAFELOAD_OUT_OF_MEMORY;
            group = 1;
            iovs = 1;
            pos = end;
            continue;
        }
        while (pos < end) {
            uint64_t piece = SL__MIN(end - pos, lim);
            /* no-cast host pieces end on chunk boundaries of the destination, so each huge page
               of an arena is filled (and first touched) by one worker */
            if (!r->cast && !r->device && piece == lim && piece == L->chunk) {
                uint64_t addr = (uint64_t)(uintptr_t)(r->dst + pos);
                uint64_t to_boundary = L->chunk - addr % L->chunk;
                if (to_boundary < piece) piece = to_boundary;
            }
            if (sl__add_task(L, r->shard, sl__rp_at(r, pos)) || sl__add_seg(L, ri, pos, piece))
                return SAFELOAD_OUT_OF_MEMORY;
            pos += piece;
        }
    }
    return SAFELOAD_OK;
}

static safeload_result sl__plan_tasks(sl__load *L, const uint32_t *order) {
    size_t i;
    for (i = 0; i < L->n_reqs; i++) {
        uint32_t ri = order[i];
        uint64_t a = 0, b = L->reqs[ri].src_len;
        if (L->part_cum) {                  /* shared: this rank's part of the bytes only */
            uint64_t c = L->part_cum[ri];
            a = SL__MAX(L->part_lo, c) - c;
            b = SL__MAX(SL__MIN(L->part_hi, c + b), c) - c;
        }
        if (sl__plan_range(L, ri, a, b)) return SAFELOAD_OUT_OF_MEMORY;
    }
    return SAFELOAD_OK;
}

/* ---- 5d. execution ---- */

/* Records the load's first error. shard names the file; SL__NO_SHARD (a hook's failure that
   belongs to no file) names the model, as the other hook errors do. */
#define SL__NO_SHARD ((uint32_t)-1)
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 7, 8)))
#endif
static void sl__load_fail(sl__load *L, safeload_result code, uint32_t shard, uint64_t offset,
                          const safeload_tensor *t, const char *tensor_name, const char *fmt,
                          ...) {
    safeload_error e;
    va_list ap;
    char msg[sizeof e.message];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sl__fail(&e, code, shard < L->n_shards ? L->shards[shard]->path : L->where, offset,
             t ? t->name : tensor_name, t ? t->name_len : (tensor_name ? strlen(tensor_name) : 0),
             "%s", msg);
    sl__mutex_lock(&L->mu);
    if (!L->have_error) {
        L->first = e;
        L->have_error = 1;
    }
    sl__atomic_store(&L->stop, 1);
#if !defined(SAFELOAD_NO_THREADS)
    sl__cond_broadcast(&L->cv);
#endif
    sl__mutex_unlock(&L->mu);
}

/* The tensor a task's byte at file offset `off` belongs to, for error messages. */
static const safeload_tensor *sl__task_tensor(const sl__load *L, const sl__task *t,
                                              uint64_t off) {
    uint32_t k;
    for (k = 0; k < t->nseg; k++) {
        const sl__seg *s = &L->segs[t->seg0 + k];
        if (off < t->off + s->task_pos + s->len) return L->reqs[s->req].t;
    }
    return L->reqs[L->segs[t->seg0].req].t;
}

/* A read of a task's shard found the end of the file at byte `at`: the file shrank since it
   was opened. Which worker read past the end first must not change the report, so it names
   the file's size now and, as the place, the first byte this load wanted at or past it (what
   one thread, reading in order, meets first) and that byte's tensor. A reader source has no
   size to ask for: its end is where the read found it. */
static void sl__load_eof(sl__load *L, const sl__task *t, uint64_t at) {
    const safeload_file *f = L->shards[t->shard];
    const safeload_tensor *bt = NULL;
    uint64_t now = sl__source_end(&f->src, at), best = at;
    size_t i;
    for (i = 0; i < L->n_reqs; i++) {
        const sl__rp *r = &L->reqs[i];
        uint64_t b;
        if (r->shard != t->shard || !r->src_len || sl__rp_end(r) <= now) continue;
        b = r->src_off;
        if (now > b) {                      /* its first byte at or past `now`, gaps skipped */
            uint64_t run = (now - b) / r->stride, in = (now - b) % r->stride;
            b += run * r->stride + (in < r->run_len ? in : r->stride);
        }
        if (!bt || b < best) { best = b; bt = r->t; }
    }
    if (!bt) { best = at; bt = sl__task_tensor(L, t, at); }
    sl__load_fail(L, SAFELOAD_UNEXPECTED_EOF, t->shard, best, bt, NULL,
                  "file ended at byte %llu (it was %llu bytes when opened)", (sl__ull)now,
                  (sl__ull)f->src.size);
}

SL__INLINE int sl__is_direct(const sl__load *L, uint32_t shard) {
    return L->direct && L->direct[shard] != SL__NO_FILE;
}

/* Read into a buffer of ours (staging) rather than from memory or through O_DIRECT bounces? */
SL__INLINE int sl__staged(const sl__load *L, const sl__task *t) {
    return !sl__mem_base(L, t->shard) && !sl__is_direct(L, t->shard);
}

/* Exactly n bytes at off from an OS handle: 0, or -1 at an early end, or the error code. */
static int64_t sl__fd_read_full(sl__os_file fd, unsigned char *dst, uint64_t n, uint64_t off,
                                uint64_t *calls, uint64_t *at) {
    while (n) {
        int64_t r = sl__os_pread(fd, dst, (size_t)SL__MIN(n, (uint64_t)SL__READ_MAX), off);
        (*calls)++;
        if (r < 0) { *at = off; return -r; }
        if (r == 0) { *at = off; return -1; }
        dst += r; off += (uint64_t)r; n -= (uint64_t)r;
    }
    return 0;
}

/* A plain copy: with non-temporal stores in big loads (no read-for-ownership of the cold
   destination, the same reason the casts stream), else memcpy. */
SL__INLINE void sl__copy(const sl__load *L, unsigned char *dst, const unsigned char *src,
                         uint64_t len) {
    if (L->ntcopy && len >= 4096) {
        size_t words = (size_t)(len / 4);
        L->ntcopy(dst, src, words);
        memcpy(dst + words * 4, src + words * 4, (size_t)(len - words * 4));
    } else {
        memcpy(dst, src, (size_t)len);
    }
}

/* A direct read that ended inside a block (the end of the file, or a partial read): another
   unbuffered read would start at an unaligned offset, which Windows refuses (and Linux may),
   so the rest, if any is wanted, comes through the file's own buffered handle. *got: bytes of
   buf filled from lo, updated; 0 after an error (reported). */
static int sl__direct_tail(sl__load *L, sl__worker *w, const sl__task *t, uint64_t off,
                           uint64_t n, unsigned char *buf, uint64_t lo, uint64_t *got) {
    uint64_t at = 0;
    int64_t r;
    if (lo + *got >= off + n) return 1;
    r = sl__fd_read_full(L->shards[t->shard]->src.fd, buf + *got, off + n - lo - *got,
                         lo + *got, &w->reads, &at);
    if (r > 0) {
        at = SL__MAX(at, off);
        sl__load_fail(L, SAFELOAD_IO_ERROR, t->shard, at, sl__task_tensor(L, t, at), NULL,
                      "read at byte %llu failed: %s (error %lld)", (sl__ull)at, sl__why64(r),
                      (long long)r);
        return 0;
    }
    *got = r == 0 ? off + n - lo : at - lo;         /* at: where the file ended */
    return 1;
}

/* O_DIRECT wants the offset, the length and the buffer aligned: read the aligned range that
   covers [off, off+n) into buf, from byte `got` of it on (a queued read that came back short
   goes on here), and return where byte `off` landed. */
static const unsigned char *sl__direct_from(sl__load *L, sl__worker *w, const sl__task *t,
                                            uint64_t off, uint64_t n, unsigned char *buf,
                                            uint64_t got) {
    uint64_t lo = off & ~(SL__DIRECT_ALIGN - 1);
    uint64_t hi = (off + n + SL__DIRECT_ALIGN - 1) & ~(SL__DIRECT_ALIGN - 1);
    if (got % SL__DIRECT_ALIGN) {
        if (!sl__direct_tail(L, w, t, off, n, buf, lo, &got)) return NULL;
        hi = lo + got;
    }
    while (lo + got < hi) {
        int64_t r = sl__os_pread(L->direct[t->shard], buf + got,
                                 (size_t)SL__MIN(hi - lo - got, (uint64_t)SL__READ_MAX), lo + got);
        w->reads++;
        if (r < 0) {
            uint64_t at = SL__MAX(lo + got, off);   /* blocks start before the bytes wanted */
            sl__load_fail(L, SAFELOAD_IO_ERROR, t->shard, at, sl__task_tensor(L, t, at), NULL,
                          "direct read at byte %llu failed: %s (error %lld)", (sl__ull)at,
                          sl__why64(-r), (long long)-r);
            return NULL;
        }
        if (r == 0) break;                          /* end of file inside the last block */
        got += (uint64_t)r;
        if ((uint64_t)r % SL__DIRECT_ALIGN) {       /* a part of a block */
            if (!sl__direct_tail(L, w, t, off, n, buf, lo, &got)) return NULL;
            break;
        }
    }
    if (lo + got < off + n) {                       /* the same report as a buffered read's */
        sl__load_eof(L, t, SL__MAX(lo + got, off));
        return NULL;
    }
    return buf + (off - lo);
}

/* The whole of such a read into `into` (when everything is aligned) or the bounce buffer. */
static const unsigned char *sl__direct_fill(sl__load *L, sl__worker *w, const sl__task *t,
                                            uint64_t off, uint64_t n, unsigned char *into) {
    const unsigned char *p = sl__direct_from(L, w, t, off, n, into ? into : w->bounce, 0);
    if (p) w->bytes_read += n;
    return p;
}

/* n bytes of a shard at absolute offset off into dst, by the load's I/O mode. */
static int sl__io_read(sl__load *L, sl__worker *w, const sl__task *t, uint64_t off,
                       unsigned char *dst, uint64_t n) {
    safeload_file *f = L->shards[t->shard];
    uint64_t at = off;
    int64_t rc;
    if (n == 0) return 1;
    if (w->ready) {                     /* a queued read brought the task's bytes */
        sl__copy(L, dst, w->ready + (off - w->ready_off), n);
        w->bytes_read += n;
        return 1;
    }
    if (sl__mem_base(L, t->shard)) {
        sl__copy(L, dst, sl__mem_base(L, t->shard) + off, n);
        w->bytes_read += n;
        return 1;
    }
    if (sl__is_direct(L, t->shard)) {
        const unsigned char *p;
        if (((uint64_t)(uintptr_t)dst | off | n) % SL__DIRECT_ALIGN == 0)
            p = sl__direct_fill(L, w, t, off, n, dst);
        else if ((p = sl__direct_fill(L, w, t, off, n, NULL)) != NULL)
            memcpy(dst, p, (size_t)n);
        return p != NULL;
    }
    if (f->src.kind == SL__SRC_FILE) {
        rc = sl__fd_read_full(f->src.fd, dst, n, off, &w->reads, &at);
    } else {
        /* the caller's reader: short reads are fine, errors and early ends are not */
        rc = 0;
        while (n) {
            size_t ask = (size_t)SL__MIN(n, (uint64_t)SL__READ_MAX);
            int64_t r = f->src.reader.read(f->src.reader.user, off, dst, ask);
            w->reads++;
            if (r > 0 && (uint64_t)r > ask) {        /* a broken reader */
                sl__load_fail(L, SAFELOAD_IO_ERROR, t->shard, off, sl__task_tensor(L, t, off),
                              NULL, "reader returned %lld bytes for a request of %llu at byte "
                              "%llu", (long long)r, (sl__ull)ask, (sl__ull)off);
                return 0;
            }
            if (r < 0) { rc = sl__err_code(r); at = off; break; }
            if (r == 0) { rc = -1; at = off; break; }
            dst += r; off += (uint64_t)r; n -= (uint64_t)r;
            w->bytes_read += (uint64_t)r;
        }
        if (!rc) return 1;
    }
    if (rc == 0) { w->bytes_read += n; return 1; }
    if (rc < 0)
        sl__load_eof(L, t, at);
    else
        sl__load_fail(L, SAFELOAD_IO_ERROR, t->shard, at, sl__task_tensor(L, t, at), NULL,
                      "read at byte %llu failed: %s (error %lld)", (sl__ull)at, sl__why64(rc),
                      (long long)rc);
    return 0;
}

/* Where a task's bytes can be read from memory: the mapping, the caller's buffer, or a copy
   read into the bounce (direct) or staging buffer. */
static const unsigned char *sl__read_run(sl__load *L, sl__worker *w, const sl__task *t) {
    const unsigned char *base = sl__mem_base(L, t->shard);
    if (w->ready) { w->bytes_read += t->data_len; return w->ready + (t->off - w->ready_off); }
    if (base) { w->bytes_read += t->data_len; return base + t->off; }   /* gaps untouched */
    if (sl__is_direct(L, t->shard))
        return sl__direct_fill(L, w, t, t->off, t->len, NULL);
    SAFELOAD_ASSERT(t->len <= L->staging);
    return sl__io_read(L, w, t, t->off, w->staging, t->len) ? w->staging : NULL;
}

SL__INLINE void sl__emit(const sl__load *L, const sl__rp *r, unsigned char *dst,
                         const unsigned char *src, uint64_t len) {
    if (r->cast) r->cast(dst, src, (size_t)(len / r->ssize));
    else sl__copy(L, dst, src, len);
}

static int sl__host_task(sl__load *L, sl__worker *w, const sl__task *t) {
    const sl__seg *s0 = &L->segs[t->seg0];
    const sl__rp *r0 = &L->reqs[s0->req];
    const unsigned char *src;
    uint32_t k;
    int staged = sl__staged(L, t);
    if (t->nseg == 1 && !r0->cast) {
        /* straight into the destination: no staging, no second pass */
        w->bytes_written += t->len;
        return sl__io_read(L, w, t, t->off, r0->dst + s0->src_pos, t->len);
    }
    if (t->nseg == 1 && staged) {
        /* read a cache-sized piece, cast it into the destination while it is hot */
        uint64_t pos = 0, piece = L->staging - L->staging % r0->ssize;
        while (pos < t->len) {
            uint64_t n = SL__MIN(piece, t->len - pos);
            if (sl__atomic_load(&L->stop)) return 0;
            if (!sl__io_read(L, w, t, t->off + pos, w->staging, n)) return 0;
            sl__emit(L, r0, r0->dst + (s0->src_pos + pos) / r0->ssize * r0->dsize, w->staging, n);
            pos += n;
        }
        w->bytes_written += t->len / r0->ssize * r0->dsize;
        return 1;
    }
#if !defined(SL__WINDOWS)
    if (staged && L->shards[t->shard]->src.kind == SL__SRC_FILE) {
        safeload_file *f = L->shards[t->shard];
        /* a run of whole small tensors, or of a slice's runs, no casts: one preadv scatters
           it into place (a gap between runs into the staging buffer, a sink) */
        struct iovec iov[SL__MAX_SEGS];
        if (!t->cast) {
            uint64_t off = t->off, left = t->len, at = 0;
            int first = 0, nv = 0;
            for (k = 0; k < t->nseg; k++) {
                const sl__seg *s = &L->segs[t->seg0 + k];
                while (at < s->task_pos) {
                    size_t g = (size_t)SL__MIN(s->task_pos - at, (uint64_t)L->staging);
                    iov[nv].iov_base = w->staging;
                    iov[nv++].iov_len = g;
                    at += g;
                }
                at += s->len;
                /* pieces that land back to back (an arena keeps file order) are one vector:
                   the kernel's cost is per vector, and a run of 100,000 small tensors
                   becomes a few big reads */
                if (nv && k && (unsigned char *)iov[nv - 1].iov_base + iov[nv - 1].iov_len ==
                               L->reqs[s->req].dst + s->src_pos &&
                    iov[nv - 1].iov_base != w->staging) {
                    iov[nv - 1].iov_len += (size_t)s->len;
                    continue;
                }
                iov[nv].iov_base = L->reqs[s->req].dst + s->src_pos;
                iov[nv++].iov_len = (size_t)s->len;
            }
            while (left) {
                ssize_t got = SAFELOAD_PREADV(f->src.fd, iov + first, nv - first, (off_t)off);
                w->reads++;
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) {
                    if (got == 0)
                        sl__load_eof(L, t, off);
                    else
                        sl__load_fail(L, SAFELOAD_IO_ERROR, t->shard, off,
                                      sl__task_tensor(L, t, off), NULL, "read at byte %llu "
                                      "failed: %s (error %d)", (sl__ull)off,
                                      sl__os_why(errno, "error"), errno);
                    return 0;
                }
                off += (uint64_t)got;
                left -= (uint64_t)got;
                w->bytes_read += (uint64_t)got;
                /* a short read: skip the filled vectors, trim the partial one */
                while (got > 0 && first < nv) {
                    if ((size_t)got >= iov[first].iov_len) { got -= (ssize_t)iov[first].iov_len; first++; }
                    else {
                        iov[first].iov_base = (unsigned char *)iov[first].iov_base + got;
                        iov[first].iov_len -= (size_t)got;
                        got = 0;
                    }
                }
            }
            w->bytes_written += t->out_len;
            return 1;
        }
    }
#endif
    /* everything else: the run's bytes from memory, then copy or cast each piece; plain
       pieces that land back to back (an arena keeps file order) go as one copy */
    if (!(src = sl__read_run(L, w, t))) return 0;
    for (k = 0; k < t->nseg; k++) {
        const sl__seg *s = &L->segs[t->seg0 + k];
        const sl__rp *r = &L->reqs[s->req];
        unsigned char *dst = r->dst + s->src_pos / r->ssize * r->dsize;
        uint64_t len = s->len;
        if (!r->cast)
            while (k + 1 < t->nseg) {
                const sl__seg *nx = &L->segs[t->seg0 + k + 1];
                const sl__rp *rn = &L->reqs[nx->req];
                if (rn->cast || rn->dst + nx->src_pos != dst + len ||
                    nx->task_pos != s->task_pos + len) break;
                len += nx->len;
                k++;
            }
        sl__emit(L, r, dst, src + s->task_pos, len);
        w->bytes_written += len / r->ssize * r->dsize;
    }
    return 1;
}

/* Device tasks, setup and teardown live in section 6. */
static int sl__device_task(sl__load *L, sl__worker *w, int wid, const sl__task *t);
static void sl__device_drain(sl__load *L, sl__worker *w, int wid);

/* The load's byte count; held: the caller holds mu. */
static void sl__done_add(sl__load *L, uint64_t n) {
#if defined(SL__LOCKED_COUNT)
    sl__mutex_lock(&L->mu);
    L->done_bytes += n;
    sl__mutex_unlock(&L->mu);
#else
    sl__atomic_add(&L->done_bytes, n);
#endif
}
static uint64_t sl__done(sl__load *L, int held) {
#if defined(SL__LOCKED_COUNT)
    uint64_t v;
    if (held) return L->done_bytes;
    sl__mutex_lock(&L->mu);
    v = L->done_bytes;
    sl__mutex_unlock(&L->mu);
    return v;
#else
    SL__UNUSED(held);
    return sl__atomic_load(&L->done_bytes);
#endif
}

static void sl__maybe_progress(sl__load *L, uint64_t *last, int final) {
    uint64_t done = sl__done(L, 0);
    /* report each time `done` crosses a multiple of the interval */
    if (!L->progress || (!final && done / L->progress_interval == *last / L->progress_interval))
        return;
    *last = done;
    L->reported = done;
    if (L->progress(L->progress_user, done, L->total_bytes) != 0) {
        sl__mutex_lock(&L->mu);
        if (!L->have_error) {
            sl__fail(&L->first, SAFELOAD_CANCELLED, L->where, SAFELOAD_NO_OFFSET, NULL, 0,
                     "cancelled by the progress callback at %llu of %llu bytes", (sl__ull)done,
                     (sl__ull)L->total_bytes);
            L->have_error = 1;
        }
        sl__atomic_store(&L->stop, 1);
        sl__mutex_unlock(&L->mu);
    }
}

/* ---- the arena's pages (sl__pages) ---- */

/* Faults in one window (bytes [a, b) from base) for writing and returns the CPU ns it took
   (0 when not timed). touch, only where nothing else runs yet (the probe, before the
   workers): write a zero per page, after the populate too, or instead of it where the kernel
   has none. The write is timed apart and its least cost per window kept (first_ns): under
   shadow paging, and on a host that has taken the memory back, a populated 4 KiB page still
   exits to the hypervisor on its first access (2.3-3.1 ms a window against a 0.3-0.5 ms
   populate, 12-02), which the reads pay; elsewhere 10 us a window. The workers cannot write
   (another may be reading into the window), so their windows are charged the probe's
   first-write cost on top of their populate. */
static uint64_t sl__pages_fault(sl__pages *P, uint64_t a, uint64_t b, int huge, int touch) {
    uint64_t t0 = sl__thread_ns(), tp, t1, i, ns;
    int pop = sl__atomic_load(&P->populate);
    b = (b + 4095) & ~(uint64_t)4095;       /* the mapping runs on to whole pages */
    if (pop && sl__os_populate(P->base + a, b - a) != 0) {
        pop = 0;
        sl__atomic_store(&P->populate, 0);  /* not this kernel (before 5.14): the reads fault */
    }
    if (!pop && !touch) return 0;
    tp = sl__thread_ns();
    if (touch) {
        for (i = a; i < b; i += 4096) ((volatile unsigned char *)P->base)[i] = 0;
        t1 = sl__thread_ns();
        if (pop && tp >= t0 && t1 >= tp) {
            uint64_t w = (t1 - tp) * SL__WIN / (b - a), *f = &P->first_ns[huge ? 1 : 0];
            if (*f == UINT64_MAX || w < *f) *f = w;
        }
        ns = t0 && t1 > t0 ? t1 - t0 : 0;
    } else {
        uint64_t f = P->first_ns[huge ? 1 : 0];
        ns = t0 && tp > t0 ? tp - t0 + (f == UINT64_MAX ? 0 : f * (b - a) / SL__WIN) : 0;
    }
    return ns ? (uint64_t)SAFELOAD_TOUCH_NS(huge, ns) : 0;
}

static uint64_t sl__mbps(uint64_t bytes, uint64_t ns) {
    return ns ? (uint64_t)((double)bytes * 1000.0 / (double)ns) : 0;
}

/* Sets the fresh bytes [lo, hi) of the arena at base up for the policy, before the workers run:
   AUTO probes its first windows here. */
static void sl__pages_start(sl__load *L, unsigned char *base, uint64_t lo, uint64_t hi,
                            safeload_pages policy) {
    sl__pages *P = &L->pages;
    uint64_t probe_end = lo, hb = 0, hn = 0, nb = 0, nn = 0;
    size_t k;
    memset(P, 0, sizeof *P);
#if defined(SL__HAVE_PAGES)
    if (lo >= hi) return;
    P->base = base;
    P->first_win = (size_t)(lo / SL__WIN);
    P->lo = lo;
    P->hi = hi;
    P->n_win = (size_t)((hi + SL__WIN - 1) / SL__WIN) - P->first_win;
    P->populate = 1;
    P->first_ns[0] = P->first_ns[1] = UINT64_MAX;
    lo &= ~(uint64_t)4095;
    if (policy == SAFELOAD_PAGES_AUTO) {
        /* too small to compare (under 8 MiB, where either costs little), or no clock: 4 KiB */
        if (P->n_win < SL__PROBE_WINS + 1 || !sl__thread_ns()) policy = SAFELOAD_PAGES_NORMAL;
    }
    if (policy == SAFELOAD_PAGES_AUTO) {
        /* Huge and 4 KiB windows in turn, each written page by page after its populate so
           that it costs what the reads will find (shadow paging: a populated page still exits
           to the hypervisor on its first access). Huge pages count all their windows; 4 KiB
           pages their fastest one: the first 4 KiB pages touched after huge ones, or after
           the memory sat idle, can stall once (12-02: 1.8-6.7 ms for a window that then took
           0.45-0.9), and a stall read as the 4 KiB rate kept huge pages that faulted in at a
           third of the real one. So huge pages win only after both 4 KiB windows, unless by
           far (SL__HUGE_WON); they lose after the first pair (a huge stall the retries
           undo). */
        int measured = 1;
        for (k = 0; k < SL__PROBE_WINS; k++) {
            uint64_t a = SL__MAX(lo, (P->first_win + k) * SL__WIN), b = (P->first_win + k + 1) * SL__WIN, ns;
            P->huge = !(k & 1);
            if (sl__os_advise_pages(base + a, b - a, P->huge) != 0) { measured = 0; break; }
            ns = sl__pages_fault(P, a, b, P->huge, 1);
            P->next = k + 1;
            if (P->huge) {
                hb += b - a;
                hn += ns;
            } else if (ns && (!nn || (b - a) * nn > nb * ns)) {
                nb = b - a;                     /* the fastest 4 KiB window so far */
                nn = ns;
            }
            probe_end = b;
            if (hn && nn) {
                uint64_t hm = sl__mbps(hb, hn), nm = sl__mbps(nb, nn);
                if (SL__HUGE_LOST(hm, nm) || SL__HUGE_WON(hm, nm)) break;
            }
        }
        P->huge_bytes = hb;
        P->huge_mbps = sl__mbps(hb, hn);
        P->normal_mbps = sl__mbps(nb, nn);
        /* huge pages only where they measured fast enough: else 4 KiB for the rest */
        P->huge = measured && hn && nn && SL__HUGE_OK(P->huge_mbps, P->normal_mbps);
        P->monitor = P->huge && P->populate;
        if (!P->huge) P->huge_mbps = measured ? P->huge_mbps : 0;
        if (!measured) P->normal_mbps = 0;      /* a window's advice refused: nothing measured */
        P->policy = P->huge ? SAFELOAD_PAGES_HUGE : SAFELOAD_PAGES_NORMAL;
        if (sl__os_advise_pages(base + probe_end, hi - probe_end, P->huge) != 0 && P->huge) {
            P->huge = 0;                    /* no huge pages after all */
            P->monitor = 0;
            P->policy = SAFELOAD_PAGES_NORMAL;
        }
        P->autop = measured && hn && nn;
        P->check4 = P->monitor && P->autop;
        if (!P->huge && P->autop) {                     /* measured slow: try again later */
            P->gap = SL__RECHECK_WINS;
            P->retry = P->next + P->gap;
        }
        return;
    }
    P->huge = policy == SAFELOAD_PAGES_HUGE;
    P->policy = (safeload_pages)policy;
    if (sl__os_advise_pages(base + lo, hi - lo, P->huge) != 0 && P->huge) {
        P->huge = 0;                        /* the kernel has no transparent huge pages */
        P->policy = SAFELOAD_PAGES_NORMAL;
    }
#else
    SL__UNUSED(L); SL__UNUSED(base); SL__UNUSED(lo); SL__UNUSED(hi); SL__UNUSED(policy);
    SL__UNUSED(probe_end); SL__UNUSED(hb); SL__UNUSED(hn); SL__UNUSED(nb); SL__UNUSED(nn);
    SL__UNUSED(k);
#endif
}

/* Before a host task: fault in the fresh windows its arena destinations touch, each window
   once, whichever worker gets there first (the others' reads then wait on the kernel's page
   lock, never on bytes). AUTO on huge pages: every SL__VERDICT_BYTES of them, the rate is
   compared with the 4 KiB pages' from the probe, and the rest of the arena goes to 4 KiB
   pages when huge ones have fallen below SL__HUGE_OK. */
static void sl__pages_touch_range(sl__load *L, uint64_t hi);
static void sl__pages_touch(sl__load *L, const sl__task *t) {
    sl__pages *P = &L->pages;
    uint64_t lo = UINT64_MAX, hi = 0;
    uint32_t j;
    if (!P->base || !sl__atomic_load(&P->populate)) return;
    for (j = 0; j < t->nseg; j++) {
        const sl__seg *s = &L->segs[t->seg0 + j];
        const sl__rp *r = &L->reqs[s->req];
        uint64_t a, n = s->len / r->ssize * r->dsize;
        if (!r->alloc || r->device || !n) continue;
        a = (uint64_t)(r->dst + s->src_pos / r->ssize * r->dsize - P->base);
        lo = SL__MIN(lo, a);
        hi = SL__MAX(hi, a + n);
    }
    if (lo < hi) sl__pages_touch_range(L, hi);
}

/* AUTO on 4 KiB pages: window k, [a, b), faulted in with huge pages and timed; fast enough
   now (SL__HUGE_FAST against the latest 4 KiB rate), the rest of the arena goes back to huge
   pages (watched as after the probe), else the next try is twice as far away, and the rate is
   the one 4 KiB windows are held against from now on. */
static void sl__pages_retry(sl__load *L, size_t k, uint64_t a, uint64_t b) {
    sl__pages *P = &L->pages;
    uint64_t ns = 0, mbps = 0;
    int advised = sl__os_advise_pages(P->base + a, b - a, 1) == 0;
    if (advised) ns = sl__pages_fault(P, a, b, 1, 0);
    if (ns) mbps = sl__mbps(b - a, ns);
    sl__mutex_lock(&L->mu);
    if (advised) P->huge_bytes += b - a;
    if (mbps && SL__HUGE_FAST(mbps, P->normal_mbps) && b < P->hi &&
        sl__os_advise_pages(P->base + b, P->hi - b, 1) == 0) {
        P->huge_mbps = mbps;
        P->acc_bytes = P->acc_ns = 0;
        P->far_run = 0;
        P->far_bytes = P->far_ns = 0;
        P->monitor = 1;
        P->policy = SAFELOAD_PAGES_HUGE;
        sl__atomic_store(&P->huge, 1);
    } else {
        if (mbps) P->huge_mbps = mbps;
        P->gap *= mbps && SL__HUGE_FAR(mbps, P->normal_mbps) ? SL__FAR_GAP : 2;
        P->retry = k + P->gap;
    }
    sl__mutex_unlock(&L->mu);
}

/* AUTO on 4 KiB pages, a 4 KiB window k just faulted in (ns, with the probe's first-write
   cost): every SL__VERDICT_BYTES the 4 KiB rate is taken again, and where it has fallen under
   the latest huge rate in SL__STRIKES verdicts in a row, huge pages are retried at once
   rather than at the next doubling. 4 KiB pages can turn slow in the middle of a load too
   (12-02: 3 ms a window with the first write for 96 windows, then 7-9 ms, when huge ones took
   4.5-5); a stall of one window (1.8-6.7 ms) cannot take four of them under a huge rate that
   lost to them. */
static void sl__pages_watch4(sl__load *L, uint64_t bytes, uint64_t ns) {
    sl__pages *P = &L->pages;
    sl__mutex_lock(&L->mu);
    if (!sl__atomic_load(&P->huge) && P->gap) {
        P->acc4_bytes += bytes;
        P->acc4_ns += ns;
        if (P->acc4_bytes >= SL__VERDICT_BYTES) {
            P->normal_mbps = sl__mbps(P->acc4_bytes, P->acc4_ns);
            P->acc4_bytes = P->acc4_ns = 0;
            P->strikes4 = SL__HUGE_FAST(P->huge_mbps, P->normal_mbps) ? P->strikes4 + 1 : 0;
            if (P->strikes4 >= SL__STRIKES) {
                P->strikes4 = 0;
                P->retry_due = 1;               /* the next 4 KiB window taken tries huge */
            }
        }
    }
    sl__mutex_unlock(&L->mu);
}

/* AUTO on huge pages, SL__STRIKES of the last three verdicts under SL__HUGE_OK, or
   SL__FAR_WINS windows in a row far under it (under mu; k: the window just faulted in): the
   rest of the arena to 4 KiB pages (touched huge pages stay as they are). */
static void sl__pages_to4k(sl__load *L, size_t k) {
    sl__pages *P = &L->pages;
    P->slow = 0;
    P->monitor = 0;                     /* (a retry that wins starts the windows' counts anew) */
    sl__atomic_store(&P->check4, 0);
    if (sl__os_advise_pages(P->base + (P->lo & ~(uint64_t)4095),
                            P->hi - (P->lo & ~(uint64_t)4095), 0) == 0) {
        sl__atomic_store(&P->huge, 0);
        P->policy = SAFELOAD_PAGES_NORMAL;
        P->gap = P->gap ? P->gap * 2 : SL__RECHECK_WINS;
        P->retry = k + 1 + P->gap;
        P->acc4_bytes = P->acc4_ns = 0;
        P->strikes4 = 0;
    }
}

/* AUTO on huge pages, after the first verdict they pass: window k, [a, b), on 4 KiB pages,
   timed (with the probe's first-write cost). The probe's 4 KiB windows run first thing in the
   load, where memory that sat idle can stall both (the PVM guest, 12-02 evening, after 6 s
   idle: the faster of them at 250-340 MB/s, while loads on forced 4 KiB pages in the same run
   moved 2.2-3.9 GB/s, and huge pages faulted in at 0.3 GB/s): held against that rate, huge
   pages passed every verdict and a load ran 4-6x slower than on 4 KiB pages. The faster of
   the two rates counts from here on, and the latest verdict is taken again against it:
   failing now, it is a strike, and the next slow verdict switches. Where huge pages won
   honestly this costs one window's 4 KiB first touch (0.5-1.5 ms there, 3-4 ms under
   shadow paging with the first write). */
static void sl__pages_check4(sl__load *L, size_t k, uint64_t a, uint64_t b) {
    sl__pages *P = &L->pages;
    int advised = sl__os_advise_pages(P->base + a, b - a, 0) == 0;
    uint64_t mbps = sl__mbps(b - a, sl__pages_fault(P, a, b, !advised, 0));
    sl__mutex_lock(&L->mu);
    if (!advised) P->huge_bytes += b - a;
    else if (mbps && sl__atomic_load(&P->huge) && P->monitor && mbps > P->normal_mbps) {
        /* a verdict that passed against the old rate and fails against this one is a strike
           (one that failed already was counted) */
        int was_ok = SL__HUGE_OK(P->huge_mbps, P->normal_mbps);
        P->normal_mbps = mbps;
        if (was_ok && !SL__HUGE_OK(P->huge_mbps, mbps)) {
            P->slow |= 1;
            if (SL__SLOW_OF(P->slow) >= SL__STRIKES) sl__pages_to4k(L, k);
        }
    }
    sl__mutex_unlock(&L->mu);
}

static void sl__pages_touch_range(sl__load *L, uint64_t hi) {
    sl__pages *P = &L->pages;
    size_t need, k;
    hi = SL__MIN(hi, P->hi);
    if (hi <= P->lo) return;
    need = (size_t)((hi - 1) / SL__WIN) - P->first_win;
    /* windows are taken in order from a shared cursor: one may run a window past what this
       task needs, which a later one needs anyway (the whole arena gets written) */
    while (sl__atomic_load(&P->next) <= need) {
        uint64_t a, b, ns;
        int huge;
        k = sl__atomic_add(&P->next, (size_t)1);
        if (k >= P->n_win) break;
        a = SL__MAX((P->first_win + k) * SL__WIN, P->lo);
        b = SL__MIN((P->first_win + k + 1) * SL__WIN, P->hi);
        huge = sl__atomic_load(&P->huge);
        if (!huge && k && P->autop) {
            int now;
            sl__mutex_lock(&L->mu);
            now = P->gap && (k == P->retry || P->retry_due);
            if (now) P->retry_due = 0;
            sl__mutex_unlock(&L->mu);
            if (now) {
                sl__pages_retry(L, k, a, b);
                continue;
            }
        }
        if (huge && sl__atomic_load(&P->check4) == 2) {
            int now;
            sl__mutex_lock(&L->mu);
            now = sl__atomic_load(&P->check4) == 2;
            if (now) sl__atomic_store(&P->check4, 0);
            sl__mutex_unlock(&L->mu);
            if (now) {
                sl__pages_check4(L, k, a, b);
                continue;
            }
        }
        if (huge) {
            /* one far window in: while another worker's huge window, already in flight, can
               confirm the turn, this one goes on 4 KiB pages rather than be a third slow one
               (after idle on 12-03 both workers' windows at the turn were slow, and the one
               taken before the second of them landed made three) */
            int confirm;
            sl__mutex_lock(&L->mu);
            confirm = P->monitor && P->far_run + 1 >= SL__FAR_WINS && P->huge_busy > 0;
            if (!confirm) P->huge_busy++;
            sl__mutex_unlock(&L->mu);
            if (confirm) {
                if (sl__os_advise_pages(P->base + a, b - a, 0) == 0) {
                    (void)sl__pages_fault(P, a, b, 0, 0);
                    continue;
                }
                sl__mutex_lock(&L->mu);
                P->huge_busy++;                     /* refused: a huge window after all */
                sl__mutex_unlock(&L->mu);
            }
        }
        ns = sl__pages_fault(P, a, b, huge, 0);
        if (!huge) {
            if (ns && P->autop) sl__pages_watch4(L, b - a, ns);
            continue;
        }
        sl__mutex_lock(&L->mu);
        P->huge_busy--;
        P->huge_bytes += b - a;
        if (P->monitor && ns) {
            P->acc_bytes += b - a;
            P->acc_ns += ns;
            if (SL__HUGE_FAR(sl__mbps(b - a, ns), P->normal_mbps)) {
                P->far_run++;
                P->far_bytes += b - a;
                P->far_ns += ns;
            } else {
                P->far_run = 0;
                P->far_bytes = P->far_ns = 0;
            }
            if (P->far_run >= SL__FAR_WINS) {
                P->huge_mbps = sl__mbps(P->far_bytes, P->far_ns);
                sl__pages_to4k(L, k);
            } else if (P->acc_bytes >= SL__VERDICT_BYTES) {
                P->huge_mbps = sl__mbps(P->acc_bytes, P->acc_ns);
                P->acc_bytes = P->acc_ns = 0;
                P->slow = ((P->slow << 1) | !SL__HUGE_OK(P->huge_mbps, P->normal_mbps)) & 7u;
                if (SL__SLOW_OF(P->slow) >= SL__STRIKES) sl__pages_to4k(L, k);
                else if (P->check4 == 1 && !(P->slow & 1))   /* the first that passed */
                    sl__atomic_store(&P->check4, 2);
            }
        }
        sl__mutex_unlock(&L->mu);
    }
}

/* A task finished: counted, and progress reported (by the caller's thread, worker 0; the
   others wake it). */
static void sl__task_done(sl__load *L, int wid, const sl__task *t, uint64_t *last) {
    sl__done_add(L, t->data_len);
    if (wid == 0) sl__maybe_progress(L, last, 0);
#if !defined(SAFELOAD_NO_THREADS)
    else if (L->progress) {
        sl__mutex_lock(&L->mu);
        sl__cond_broadcast(&L->cv);
        sl__mutex_unlock(&L->mu);
    }
#endif
}

SL__INLINE int sl__run_task(sl__load *L, sl__worker *w, int wid, const sl__task *t) {
    return L->reqs[L->segs[t->seg0].req].device ? sl__device_task(L, w, wid, t)
                                                : sl__host_task(L, w, t);
}

/* ---- queued reads (1e): a worker of a DIRECT load keeps several reads in flight ---- */

/* Whether a queued read of task t goes straight into its destination (one segment, as
   stored, host memory, destination, offset and length 4 KiB-aligned) rather than a slot. */
SL__MAYBE_UNUSED static int sl__aio_into_dst(const sl__load *L, const sl__task *t) {
    const sl__seg *s0 = &L->segs[t->seg0];
    const sl__rp *r0 = &L->reqs[s0->req];
    return t->nseg == 1 && !r0->cast && !r0->device &&
           ((uint64_t)(uintptr_t)(r0->dst + s0->src_pos) | t->off | t->len) %
                   SL__DIRECT_ALIGN == 0;
}

/* Each worker's queue and slots (one aligned bounce buffer per read in flight; none when
   every read goes straight into its destination), all or none: where the OS gives none,
   L->aio_error says why and the workers read one task at a time. */
static void sl__aio_setup(sl__load *L) {
#if defined(SL__AIO)
    uint64_t span = 0;
    size_t i, nd = 0, per;
    int k, e = 0;
    if (L->io != SAFELOAD_IO_DIRECT || L->queue_depth <= 1) return;
    for (i = 0; i < L->n_tasks; i++) {
        const sl__task *t = &L->tasks[i];
        if (!sl__is_direct(L, t->shard)) continue;
        nd++;
        if (sl__aio_into_dst(L, t)) continue;
        span = SL__MAX(span, ((t->off + t->len + SL__DIRECT_ALIGN - 1) & ~(SL__DIRECT_ALIGN - 1)) -
                                 (t->off & ~(SL__DIRECT_ALIGN - 1)));
    }
    /* the depth shared out, and no more slots than a worker has reads to make */
    per = ((size_t)L->queue_depth + (size_t)L->n_workers - 1) / (size_t)L->n_workers;
    per = SL__MIN(per, (nd + (size_t)L->n_workers - 1) / (size_t)L->n_workers);
#  if SL__AIO == 2
    per = SL__MIN(per, (size_t)MAXIMUM_WAIT_OBJECTS);
#  endif
    if (per < 2) return;                    /* one read a worker: nothing to queue */
    if (span > (SIZE_MAX - SL__DIRECT_ALIGN) / per) { L->aio_error = SL__AIO_NOMEM; return; }
    for (k = 0; k < L->n_workers && !e; k++) {
        sl__worker *w = &L->workers[k];
        size_t j, sz = (size_t)span * per;
        /* the queue first: where the OS refuses one, no slot memory was faulted for nothing */
        if ((e = sl__aio_open(&w->aio, (unsigned)per, L->alloc)) != 0) break;
        w->aio_on = 1;
        if (sz)
            w->slot_raw = (unsigned char *)sl__big_alloc(L->alloc, sz + (size_t)SL__DIRECT_ALIGN,
                                                         &L->dma, SL__BIG_DMA, NULL);
        w->slots = (sl__slot *)sl__calloc(L->alloc, per, sizeof(sl__slot));
        w->free_slots = (unsigned *)sl__malloc_n(L->alloc, per, sizeof(unsigned));
        if ((sz && !w->slot_raw) || !w->slots || !w->free_slots) { e = SL__AIO_NOMEM; break; }
        if (sz) {
            w->slot_mem = (unsigned char *)(((uintptr_t)w->slot_raw +
                                             (uintptr_t)(SL__DIRECT_ALIGN - 1)) &
                                            ~(uintptr_t)(SL__DIRECT_ALIGN - 1));
            sl__aio_fixed(&w->aio, w->slot_mem, sz);
        }
        w->slot_size = (size_t)span;
        for (j = 0; j < per; j++) w->free_slots[j] = (unsigned)(per - 1 - j);
        w->n_free = (unsigned)per;
    }
    if (e) {                                /* none, then: the plain path for every worker */
        for (k = 0; k < L->n_workers; k++) {
            sl__worker *w = &L->workers[k];
            if (w->aio_on) sl__aio_close(&w->aio, L->alloc);
            sl__big_free(L->alloc, w->slot_raw);
            sl__free(L->alloc, w->slots);
            sl__free(L->alloc, w->free_slots);
            w->slot_raw = w->slot_mem = NULL;
            w->slots = NULL;
            w->free_slots = NULL;
            w->aio_on = 0;
            w->n_free = 0;
        }
        L->aio_error = e;
        return;
    }
    L->aio_depth = (int)(per * (size_t)L->n_workers);
#else
    SL__UNUSED(L);
#endif
}

#if defined(SL__AIO)
/* Starts the read of task t in a free slot: straight into its destination where that and the
   file range are aligned, else into the slot's buffer. */
static void sl__aio_start(sl__load *L, sl__worker *w, const sl__task *t) {
    unsigned k = w->free_slots[--w->n_free];
    sl__slot *s = &w->slots[k];
    const sl__seg *s0 = &L->segs[t->seg0];
    const sl__rp *r0 = &L->reqs[s0->req];
    unsigned char *dst = r0->dst + s0->src_pos;
    s->t = t;
    s->lo = t->off & ~(SL__DIRECT_ALIGN - 1);
    s->hi = (t->off + t->len + SL__DIRECT_ALIGN - 1) & ~(SL__DIRECT_ALIGN - 1);
    s->into_dst = sl__aio_into_dst(L, t);
    s->buf = s->into_dst ? dst : w->slot_mem + (size_t)k * w->slot_size;
    sl__aio_read(&w->aio, L->direct[t->shard], s->buf, (size_t)(s->hi - s->lo), s->lo, k);
    w->inflight++;
    w->reads++;
}

/* A read came back (res: bytes, or -error): its bytes go where the task's requests want
   them, by the task's own code, which takes them from w->ready instead of reading. A short
   read is finished the way a worker without a queue reads. */
static int sl__aio_done(sl__load *L, sl__worker *w, int wid, const sl__slot *s, int64_t res) {
    const sl__task *t = s->t;
    const unsigned char *p;
    int ok;
    if (res < 0) {
        uint64_t at = SL__MAX(s->lo, t->off);
        sl__load_fail(L, SAFELOAD_IO_ERROR, t->shard, at, sl__task_tensor(L, t, at), NULL,
                      "direct read at byte %llu failed: %s (error %lld)", (sl__ull)at,
                      sl__why64(-res), (long long)-res);
        return 0;
    }
    if ((uint64_t)res > s->hi - s->lo) res = (int64_t)(s->hi - s->lo);
    SL__UNPOISON(s->buf, (size_t)res);
    p = (uint64_t)res < s->hi - s->lo
            ? sl__direct_from(L, w, t, t->off, t->len, s->buf, (uint64_t)res)
            : s->buf + (t->off - s->lo);
    if (!p) return 0;
    if (s->into_dst) {
        w->bytes_read += t->len;
        w->bytes_written += t->len;
        return 1;
    }
    w->ready = p;
    w->ready_off = t->off;
    ok = sl__run_task(L, w, wid, t);
    w->ready = NULL;
    return ok;
}

/* A read started in each free slot while tasks are left; 0 once none is left or one failed. */
static int sl__aio_fill(sl__load *L, sl__worker *w, int wid, uint64_t *last) {
    while (w->n_free && !sl__atomic_load(&L->stop)) {
        size_t i = sl__atomic_add(&L->next_task, (size_t)1);
        const sl__task *t;
        if (i >= L->n_tasks) return 0;
        t = &L->tasks[i];
        if (!L->reqs[L->segs[t->seg0].req].device) sl__pages_touch(L, t);
        if (sl__is_direct(L, t->shard)) { sl__aio_start(L, w, t); continue; }
        /* a file AUTO leaves to buffered reads: read now, the queue runs on meanwhile */
        if (!sl__run_task(L, w, wid, t)) return 0;
        sl__task_done(L, wid, t, last);
    }
    return 1;
}

/* The worker's loop with a queue: keep its slots busy, handle reads as they complete. After
   an error or a cancel it starts nothing more but waits for every read still in flight, so
   nothing writes into a buffer or a destination once the load has returned. */
static void sl__aio_job(sl__load *L, sl__worker *w, int wid, uint64_t *last) {
    int more = 1, e;
    for (;;) {
        unsigned k;
        int64_t res;
        if (more) more = sl__aio_fill(L, w, wid, last);
        if (!w->inflight) break;
        if ((e = sl__aio_enter(&w->aio, 1)) != 0) {
            const sl__task *t = NULL;
            for (k = 0; k < w->aio.depth && !t; k++)
                if (w->slots[k].t) t = w->slots[k].t;
            w->stuck = 1;                   /* reads may be in flight: never freed */
            sl__load_fail(L, SAFELOAD_IO_ERROR, t ? t->shard : SL__NO_SHARD,
                          t ? t->off : SAFELOAD_NO_OFFSET, t ? sl__task_tensor(L, t, t->off) : NULL,
                          NULL, "waiting for queued reads failed: %s (error %d)",
                          sl__os_why(e, "error"), e);
            return;
        }
        while (sl__aio_reap(&w->aio, &k, &res)) {
            sl__slot *s = &w->slots[k];
            w->inflight--;
            res = SAFELOAD_AIO_RESULT(res, s->buf, s->lo, s->hi - s->lo);
            if (!sl__atomic_load(&L->stop)) {
                if (sl__aio_done(L, w, wid, s, res)) sl__task_done(L, wid, s->t, last);
                else more = 0;
            }
            s->t = NULL;
            w->free_slots[w->n_free++] = k;
            /* the slot straight back to the disk: reads that completed together, copied out
               one after another, would leave it idle until the last was copied. (Should the
               hand-over fail, the wait above tries it again and reports.) */
            if (more && !sl__atomic_load(&L->stop)) {
                more = sl__aio_fill(L, w, wid, last);
                (void)sl__aio_enter(&w->aio, 0);
            }
        }
    }
}
#endif

static void sl__load_job(void *ctx, int wid) {
    sl__load *L = (sl__load *)ctx;
    sl__worker *w = &L->workers[wid];
    uint64_t last = 0;
#if defined(SL__AIO)
    if (w->aio_on) sl__aio_job(L, w, wid, &last);
    else
#endif
    for (;;) {
        size_t i;
        const sl__task *t;
        if (sl__atomic_load(&L->stop)) break;
        i = sl__atomic_add(&L->next_task, (size_t)1);
        if (i >= L->n_tasks) break;
        t = &L->tasks[i];
        if (!L->reqs[L->segs[t->seg0].req].device) sl__pages_touch(L, t);
        if (!sl__run_task(L, w, wid, t)) break;
        sl__task_done(L, wid, t, &last);
    }
    sl__device_drain(L, w, wid);
#if !defined(SAFELOAD_NO_THREADS)
    /* the caller keeps reporting progress while the others finish */
    if (wid == 0 && L->progress && L->n_workers > 1) {
        sl__mutex_lock(&L->mu);
        while (!sl__atomic_load(&L->stop) &&
               sl__done(L, 1) < L->total_bytes) {
            sl__cond_wait(&L->cv, &L->mu);
            sl__mutex_unlock(&L->mu);
            sl__maybe_progress(L, &last, 0);
            sl__mutex_lock(&L->mu);
        }
        sl__mutex_unlock(&L->mu);
    }
#endif
}

/* ---- 5e. the load call ---- */

typedef const safeload_tensor *(*sl__resolve_fn)(const void *ctx, const char *name, size_t *shard);

static const safeload_tensor *sl__resolve_model(const void *ctx, const char *name,
                                                size_t *shard) {
    return sl__model_lookup((const safeload_model *)ctx, name, strlen(name), shard);
}

static const safeload_tensor *sl__resolve_file(const void *ctx, const char *name, size_t *shard) {
    *shard = 0;
    return safeload_find((const safeload_file *)ctx, name);
}

static int sl__req_less(const sl__rp *r, uint32_t a, uint32_t b) {
    return r[a].shard < r[b].shard || (r[a].shard == r[b].shard && r[a].src_off < r[b].src_off);
}

static void sl__sort_reqs(const sl__rp *r, uint32_t *v, uint32_t *tmp, size_t n) {
    size_t w, lo;
    for (lo = 1; lo < n && !sl__req_less(r, v[lo], v[lo - 1]); lo++) {}
    if (lo >= n) return;                 /* already in file order: the usual case */
    for (w = 1; w < n; w *= 2) {
        for (lo = 0; lo < n; lo += 2 * w) {
            size_t mid = SL__MIN(lo + w, n), hi = SL__MIN(lo + 2 * w, n), x = lo, y = mid, o = lo;
            while (x < mid && y < hi) tmp[o++] = sl__req_less(r, v[y], v[x]) ? v[y++] : v[x++];
            while (x < mid) tmp[o++] = v[x++];
            while (y < hi) tmp[o++] = v[y++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* io AUTO: how much of what this load reads from one file (requests order[a..], all of that
   file, in file order, total > 0 source bytes) is in the page cache, 0..1; -1 when the OS does
   not say. A sample, so the question costs the same for any size: 16 windows of at most 1 MiB
   at even steps through the requested bytes (the bytes between requests do not count). */
#define SL__AUTO_WINDOWS 16
static double sl__auto_cached(const sl__load *L, const uint32_t *order, size_t a,
                              uint64_t total) {
    uint64_t cum = 0, win, cached = 0, pages = 0;
    size_t j;
    int k, how = 0;
    win = SL__MIN(SL__MIB, (total + SL__AUTO_WINDOWS - 1) / SL__AUTO_WINDOWS);
    for (k = 0, j = a; k < SL__AUTO_WINDOWS; k++) {
        /* the window's first byte, counted through the requested bytes only */
        uint64_t q = total / SL__AUTO_WINDOWS * (uint64_t)k +
                     total % SL__AUTO_WINDOWS * (uint64_t)k / SL__AUTO_WINDOWS, np = 0;
        const sl__rp *r;
        int64_t c;
        while (cum + L->reqs[order[j]].src_len <= q) cum += L->reqs[order[j++]].src_len;
        r = &L->reqs[order[j]];
        c = sl__os_cached(L->shards[r->shard]->src.fd, sl__rp_at(r, q - cum),
                          SL__MIN(win, r->run_len - (q - cum) % r->run_len), &np, &how);
        if (c < 0) return -1;
        cached += (uint64_t)c;
        pages += np;
    }
    return (double)cached / (double)pages;
}

SL__DEF void safeload_arena_free(safeload_arena *a) {
    safeload_allocator al;
    if (!a) return;
    al = a->alloc;
    if (a->host_raw) {
        if (a->os_pages) sl__os_free_pages(a->host_raw, a->raw_size);
        else sl__free(&al, a->host_raw);
    }
    if (a->device && a->hooks.device_free) a->hooks.device_free(a->hooks.user, a->device);
    sl__free(&al, a);
}

static void sl__stats_clear(const safeload_load_desc *desc);

SL__DEF uint64_t safeload_arena_capacity(const safeload_arena *a) {
    return a ? a->host_cap : 0;
}

static safeload_result sl__arena_host(safeload_arena *a, uint64_t need, uint64_t *fresh_lo,
                                      const char *path0, safeload_error *err);

SL__DEF safeload_result safeload_arena_create(safeload_arena **out, uint64_t host_bytes,
                                              const safeload_load_desc *desc,
                                              safeload_error *err) {
    safeload_load_desc d;
    safeload_arena *a;
    safeload_result r;
    sl__load L;
    uint64_t lo = 0;
    sl__clear_error(err);
    sl__stats_clear(desc);
    if (out) *out = NULL;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!out || !sl__allocator_ok(&d.allocator) || (unsigned)d.pages > SAFELOAD_PAGES_NORMAL)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        !out ? "out is NULL" : (unsigned)d.pages > SAFELOAD_PAGES_NORMAL
                        ? "unknown page policy" : "an allocator needs both alloc and free");
    if (host_bytes > (uint64_t)(SIZE_MAX / 2))
        return sl__fail(err, SAFELOAD_OVERFLOW, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "an arena of %llu bytes would exceed half the address space",
                        (sl__ull)host_bytes);
    a = (safeload_arena *)sl__calloc(&d.allocator, 1, sizeof *a);
    if (!a) return SL__OOM(err, "");
    a->alloc = d.allocator;
    if ((r = sl__arena_host(a, host_bytes, &lo, "", err)) != SAFELOAD_OK) {
        safeload_arena_free(a);
        return r;
    }
    memset(&L, 0, sizeof L);
    L.alloc = &a->alloc;
    if (sl__mutex_init(&L.mu) != 0) {
        safeload_arena_free(a);
        return sl__fail(err, SAFELOAD_THREAD_ERROR, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot create a lock");
    }
    if (a->os_pages) sl__pages_start(&L, a->host, 0, host_bytes, d.pages);
    /* the first touch, now: populated where the kernel can, else written (nothing else
       holds this memory yet) */
    sl__pages_touch_range(&L, host_bytes);
    if (!L.pages.base || !sl__atomic_load(&L.pages.populate)) memset(a->host, 0, (size_t)host_bytes);
    a->touched = host_bytes;
    if (d.stats) {
        d.stats->pages = L.pages.policy;
        d.stats->fresh_bytes = host_bytes;
        d.stats->huge_bytes = L.pages.huge_bytes;
        d.stats->touch_huge_mbps = L.pages.huge_mbps;
        d.stats->touch_normal_mbps = L.pages.normal_mbps;
    }
    sl__mutex_destroy(&L.mu);
    *out = a;
    return SAFELOAD_OK;
}

static safeload_result sl__resolve_hooks(sl__load *L, const safeload_load_desc *d, int need_alloc,
                                         safeload_error *err);
static safeload_result sl__device_budget(sl__load *L, const safeload_load_desc *d, int workers,
                                         safeload_error *err);
static void sl__worker_free(sl__load *L, sl__worker *w);
static safeload_result sl__device_setup(sl__load *L, safeload_error *err);

/* Caller destinations must not overlap one another, nor the bytes being read (a memory
   source, or a mapping safeload_view handed out): workers would write the same bytes, or read
   what another wrote, and the result would depend on timing. Sorted spans: O(n log n). */
typedef struct sl__span { uint64_t lo, hi; size_t req; int dev; } sl__span;  /* 64 bits: no wrap */
static int sl__span_less(const sl__span *x, const sl__span *y) {
    return x->dev != y->dev ? x->dev < y->dev : x->lo < y->lo;
}
SL__DEFINE_MSORT(sl__sort_spans, sl__span, sl__span_less)

static safeload_result sl__check_overlap(const sl__load *L, safeload_file **shards,
                                         size_t n_shards, safeload_error *err) {
    const safeload_request *reqs = L->user;
    sl__span *sp = NULL, *tmp = NULL;
    size_t i, k = 0, n = L->n_reqs, hn, hi;
    int sorted = 1;
    safeload_result r = SAFELOAD_OK;
    for (i = 0; i < n; i++) k += !L->reqs[i].alloc && L->reqs[i].dst_len;
    if (k == 0) return SAFELOAD_OK;
    sp = (sl__span *)sl__malloc_n(L->alloc, k, sizeof *sp);
    if (!sp) { r = SL__OOM(err, L->where); goto done; }
    for (i = 0, k = 0; i < n; i++) {
        const sl__rp *p = &L->reqs[i];
        if (p->alloc || !p->dst_len) continue;
        sp[k].lo = (uint64_t)(uintptr_t)p->dst;
        sp[k].hi = sp[k].lo + p->dst_len;
        sp[k].req = i;
        sp[k].dev = p->device;
        if (k && sl__span_less(&sp[k], &sp[k - 1])) sorted = 0;
        k++;
    }
    if (!sorted) {                  /* one arena laid out in order needs no sort, nor its buffer */
        tmp = (sl__span *)sl__malloc_n(L->alloc, k, sizeof *tmp);
        if (!tmp) { r = SL__OOM(err, L->where); goto done; }
        sl__sort_spans(sp, tmp, k);
    }
    for (i = 1; i < k; i++)
        if (sp[i].dev == sp[i - 1].dev && sp[i].lo < sp[i - 1].hi) {
            const safeload_request *q = &reqs[SL__MAX(sp[i].req, sp[i - 1].req)];
            r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, L->where, SAFELOAD_NO_OFFSET, q->name,
                         strlen(q->name), "the destinations of requests %llu and %llu overlap",
                         (sl__ull)SL__MIN(sp[i].req, sp[i - 1].req),
                         (sl__ull)SL__MAX(sp[i].req, sp[i - 1].req));
            goto done;
        }
    /* host spans sort first: sp[0..hn) */
    for (hn = 0; hn < k && !sp[hn].dev; hn++) {}
    for (i = 0; i < n_shards; i++) {
        safeload_file *f = shards[i];
        uint64_t a, b;
        size_t first;
        const unsigned char *base = NULL;
        if (f->src.kind == SL__SRC_MEMORY) {
            base = f->src.mem;
        } else if (f->src.kind == SL__SRC_FILE) {
            base = sl__file_mapped(f);
        }
        if (!base || !f->src.size) continue;
        a = (uint64_t)(uintptr_t)base;
        b = a + f->src.size;
        /* the first host span starting at or after a; it, or the one before, may cut [a, b) */
        for (first = 0, hi = hn; first < hi;) {
            size_t mid = first + (hi - first) / 2;
            if (sp[mid].lo < a) first = mid + 1; else hi = mid;
        }
        if ((first < hn && sp[first].lo < b) || (first > 0 && sp[first - 1].hi > a)) {
            size_t which = first < hn && sp[first].lo < b ? sp[first].req : sp[first - 1].req;
            const safeload_request *q = &reqs[which];
            r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, f->path, SAFELOAD_NO_OFFSET, q->name,
                         strlen(q->name), "the destination of request %llu overlaps memory "
                         "this load reads from (this file's memory source or its mapping)",
                         (sl__ull)which);
            goto done;
        }
    }
done:
    sl__free(L->alloc, sp);
    sl__free(L->alloc, tmp);
    return r;
}

/* mmap mode maps the shards a load reads, and only those. On 64-bit that is the file's own
   mapping, made once and kept until close, so later loads and views reuse it. In a 32-bit
   address space a whole-shard mapping is too big to keep: there each load maps for itself
   (or uses a view's mapping, which stays until close anyway) and unmaps when it ends. */
#define SL__MAP_PER_LOAD (sizeof(void *) < 8)

static void sl__load_unmap(sl__load *L) {
    size_t i;
    if (L->maps && L->map_handles)
        for (i = 0; i < L->n_shards; i++) {
            safeload_file *f = L->shards[i];
            if (L->maps[i] && L->maps[i] != sl__file_mapped(f))    /* not a view's: ours */
                sl__os_unmap((void *)(uintptr_t)L->maps[i], f->src.size, L->map_handles[i]);
        }
    sl__free(L->alloc, (void *)L->maps);
    sl__free(L->alloc, L->map_handles);
    L->maps = NULL;
    L->map_handles = NULL;
}

/* Sets L->maps, or falls back to READ (same bytes): where a file shrank since it was opened
   (the mapping would fault, SIGBUS, past its end; buffered reads report UNEXPECTED_EOF
   instead; a file cut while the load runs can still fault, which mmap cannot tell), where a
   shard cannot be mapped (too big for a 32-bit address space), or where no file is read
   (memory sources are read in place either way; reader sources have no mapping). Fails only
   for want of memory. */
static safeload_result sl__load_map(sl__load *L) {
    size_t i, n = L->n_shards;
    int files = 0, ok = 1;
    L->maps = (const unsigned char **)sl__calloc(L->alloc, n + 1, sizeof *L->maps);
    if (SL__MAP_PER_LOAD) L->map_handles = (void **)sl__calloc(L->alloc, n + 1, sizeof(void *));
    if (!L->maps || (SL__MAP_PER_LOAD && !L->map_handles)) {
        sl__load_unmap(L);
        return SAFELOAD_OUT_OF_MEMORY;
    }
    for (i = 0; i < L->n_reqs; i++) {                      /* mark the shards read: 1 */
        const safeload_file *f = L->shards[L->reqs[i].shard];
        if (f->src.kind == SL__SRC_FILE && f->src.size && L->reqs[i].src_len)
            L->maps[L->reqs[i].shard] = (const unsigned char *)1;
    }
    for (i = 0; i < n; i++) {
        safeload_file *f = L->shards[i];
        uint64_t now;
        if (!L->maps[i]) continue;
        L->maps[i] = NULL;
        files = 1;
        if (sl__os_size(f->src.fd, &now) != 0 || now < f->src.size) { ok = 0; break; }
        if (SL__MAP_PER_LOAD) {
            /* a view's mapping, kept until close, serves; else one of this load's own */
            if (!(L->maps[i] = sl__file_mapped(f)))
                L->maps[i] = (const unsigned char *)sl__os_map(f->src.fd, f->src.size,
                                                               &L->map_handles[i]);
        } else if (sl__file_map(f, NULL) == SAFELOAD_OK) {
            L->maps[i] = sl__file_mapped(f);
        }
        if (!L->maps[i]) { ok = 0; break; }
    }
    if (ok && files) return SAFELOAD_OK;
    for (; i < n; i++) L->maps[i] = NULL;                  /* the marks not yet visited */
    sl__load_unmap(L);
    L->io = SAFELOAD_IO_READ;
    return SAFELOAD_OK;
}

/* Host room for `need` bytes in arena a: kept where it fits (a reused arena), else taken
   anew, the old memory released first (a growing arena never holds both). *fresh_lo: the
   first byte no earlier load has touched. */
static safeload_result sl__arena_host(safeload_arena *a, uint64_t need, uint64_t *fresh_lo,
                                      const char *path0, safeload_error *err) {
    uint64_t huge = SL__WIN;
    if (a->host_raw && a->host_cap >= need) { *fresh_lo = a->touched; return SAFELOAD_OK; }
    if (a->host_raw) {
        if (a->os_pages) sl__os_free_pages(a->host_raw, a->raw_size);
        else sl__free(&a->alloc, a->host_raw);
    }
    a->host_raw = NULL;
    a->host = NULL;
    a->host_cap = a->touched = a->raw_size = 0;
    a->os_pages = 0;
    *fresh_lo = 0;
    /* page-aligned pages from the OS, 2 MiB aligned, unless the user brought an allocator */
    if (!a->alloc.alloc && !SL__USER_MALLOC && need >= huge) {
        a->raw_size = need + huge;
        a->host_raw = sl__os_alloc_pages(a->raw_size);
        a->os_pages = 1;
        if (a->host_raw)
            a->host = (unsigned char *)(((uintptr_t)a->host_raw + (uintptr_t)(huge - 1)) &
                                        ~(uintptr_t)(huge - 1));
    } else if ((uint64_t)(size_t)(need + SL__ALIGN) == need + SL__ALIGN) {
        a->raw_size = need + SL__ALIGN;
        a->host_raw = sl__malloc(&a->alloc, (size_t)a->raw_size);
        if (a->host_raw)
            a->host = (unsigned char *)(((uintptr_t)a->host_raw + SL__ALIGN - 1) &
                                        ~(uintptr_t)(SL__ALIGN - 1));
    }
    if (!a->host_raw) {
        a->os_pages = 0;
        a->raw_size = 0;
        return sl__fail(err, SAFELOAD_OUT_OF_MEMORY, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot allocate %llu bytes for the loaded tensors", (sl__ull)need);
    }
    a->host_cap = need;
    return SAFELOAD_OK;
}

/* The load call, in the order its data flows: settings, resolve (each request's tensor, byte
   range, cast and destination), open the I/O handles, threads, arena, plan (tasks and worker
   buffers), execute on the pool, finish (the device's sync, the last progress call), release.
   Each step fails with the error set and leaves what it made in *L; sl__load_release frees
   it, whichever step failed. */

/* The desc's defaults and limits, and the load's lock. Nothing to release when it fails. */
static safeload_result sl__load_settings(sl__load *L, const safeload_load_desc *desc,
                                         safeload_error *err) {
    safeload_load_desc *d = &L->d;
    const char *path0 = L->where;
    size_t i;
    if (desc) *d = *desc;                 /* the caller has set *arena_out to NULL */
    if (L->n_reqs && !L->user)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "requests is NULL");
    for (i = 0; i < L->n_reqs; i++) {     /* nothing reported loaded, whatever fails below */
        L->user[i].data = NULL;
        L->user[i].nbytes = 0;
    }
    if (!sl__allocator_ok(&d->allocator))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "an allocator needs both alloc and free");
    L->alloc = &d->allocator;
    L->io = d->io == SAFELOAD_IO_DEFAULT ? SAFELOAD_IO_READ : d->io;
    if ((unsigned)L->io > (unsigned)SAFELOAD_IO_AUTO)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "unknown I/O mode %d", (int)d->io);
    if ((unsigned)d->pages > (unsigned)SAFELOAD_PAGES_NORMAL)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "unknown page policy %d", (int)d->pages);
    if ((unsigned)d->device > (unsigned)SAFELOAD_DEVICE_ASCEND)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "unknown device %d", (int)d->device);
    L->chunk = d->chunk_size ? SL__MIN(SL__MAX(d->chunk_size, (size_t)4096), (size_t)SL__GIB)
                             : (size_t)(2 * SL__MIB);
    L->chunk -= L->chunk % 4096;
    L->staging = d->staging_size
                     ? SL__MIN(SL__MAX(d->staging_size, (size_t)4096), (size_t)SL__GIB)
                     : (size_t)(256 * SL__KIB);
    L->staging -= L->staging % 64;
    /* 2 MiB: a worker's two buffers stay in its core's L2 between the copy in and the DMA out.
       On an H100 host, 4 MiB ran 15-30 % slower at 8-16 workers (5 % faster at 1). */
    L->pinned_size = d->pinned_size
                         ? SL__MIN(SL__MAX(d->pinned_size, (size_t)4096), (size_t)SL__GIB)
                         : (size_t)(2 * SL__MIB);
    L->pinned_size -= L->pinned_size % 4096;
    L->pinned_count = d->pinned_count >= 2 ? d->pinned_count : 2;
    if (d->queue_depth < 0)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "queue_depth %d is negative", d->queue_depth);
    /* 32 in all: 64 MiB in flight at 2 MiB a read (a cloud volume or an NVMe drive reaches
       its limit well before that); the measurements are in docs/performance.md */
    L->queue_depth = d->queue_depth ? d->queue_depth : 32;
    L->upload_align = d->upload_align;
    if ((L->upload_align & (L->upload_align - 1)) || L->upload_align > SL__GIB)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "upload_align %llu is not a power of two up to 1 GiB",
                        (sl__ull)L->upload_align);
    L->progress = d->progress;
    L->progress_user = d->progress_user;
    L->progress_interval = d->progress_interval ? d->progress_interval : 64 * SL__MIB;
    L->reported = UINT64_MAX;           /* nothing said yet: an empty load still gets its call */
    if (sl__mutex_init(&L->mu) != 0)
        return sl__fail(err, SAFELOAD_THREAD_ERROR, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot create a lock");
#if !defined(SAFELOAD_NO_THREADS)
    if (sl__cond_init(&L->cv) != 0) {
        sl__mutex_destroy(&L->mu);
        return sl__fail(err, SAFELOAD_THREAD_ERROR, path0, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot create a condition variable");
    }
#endif
    return SAFELOAD_OK;
}

/* Request i: its tensor (trust_ptr: a tensor pointer the request carries may stand for the
   name), byte range, cast and destination (the caller's, or an offset into the arena). */
static safeload_result sl__resolve_req(sl__load *L, size_t i, sl__resolve_fn resolve,
                                       const void *rctx, int trust_ptr, safeload_error *err) {
    safeload_request *q = &L->user[i];
    sl__rp *p = &L->reqs[i];
    safeload_file **shards = L->shards;
    const safeload_tensor *t;
    size_t shard = 0;
    safeload_dtype dt;
    safeload_result r;
    const char *sp;
    if (!q->name)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, L->where, SAFELOAD_NO_OFFSET, NULL, 0,
                        "request %llu has no name", (sl__ull)i);
    /* a request already carrying this checkpoint's tensor (load_all, or a pointer from
       safeload_model_find) skips the name lookup; where a shard holds tensors the model
       leaves out, the lookup decides, so a shard's pointer cannot bring one back */
    if (trust_ptr && q->tensor && q->shard < L->n_shards &&
        sl__owns(shards[q->shard], q->tensor) && q->tensor->name == q->name) {
        t = q->tensor;
        shard = q->shard;
    } else {
        t = resolve(rctx, q->name, &shard);
    }
    if (!t)
        return sl__fail(err, SAFELOAD_NOT_FOUND, L->where, SAFELOAD_NO_OFFSET, q->name,
                        strlen(q->name), "request %llu names a tensor the checkpoint does not "
                        "hold", (sl__ull)i);
    sp = shards[shard]->path;
    p->t = t;
    p->shard = (uint32_t)shard;
    dt = q->dtype == SAFELOAD_DTYPE_NONE ? t->dtype : q->dtype;
    p->ssize = p->dsize = 1;
    if ((int)dt < 0 || (int)dt >= (int)SAFELOAD_DTYPE_COUNT)      /* as safeload_load_all */
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, sp, t->header_offset, t->name,
                        t->name_len, "request %llu: dtype %d is not a safeload_dtype",
                        (sl__ull)i, (int)dt);
    if (dt != t->dtype || SL__SWAP_UNIT(dt) > 1) {     /* a cast, or a swap (0.) */
        p->cast = sl__cast_resolve_file(dt, t->dtype, 0);
        if (!p->cast)
            return sl__fail(err, SAFELOAD_UNSUPPORTED_CONVERSION, sp, t->header_offset, t->name,
                            t->name_len, "request %llu: cannot cast %s to %s", (sl__ull)i,
                            sl__dtype_names[t->dtype],
                            safeload_dtype_name(dt) ? safeload_dtype_name(dt) : "(unknown)");
        sl__cast_unit(dt, t->dtype, &p->ssize, &p->dsize);
        if (dt == t->dtype) p->ssize = p->dsize = SL__SWAP_UNIT(dt);   /* C64: two F32 */
    }
    /* the slice: runs of the file */
    if ((r = sl__slice_runs(t, q, i, sp, p, err)) != SAFELOAD_OK) return r;
    p->dst_len = p->src_len / p->ssize * p->dsize;
    if (p->dst_len / p->dsize * p->ssize != p->src_len ||
        (uint64_t)(size_t)p->dst_len != p->dst_len)
        return sl__fail(err, SAFELOAD_OVERFLOW, sp, t->header_offset, t->name, t->name_len,
                        "request %llu: the destination size overflows", (sl__ull)i);
    if (p->cast) L->cast_out += p->dst_len;
    if (q->device != 0 && q->device != 1)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, sp, t->header_offset, t->name,
                        t->name_len, "request %llu: device is %d: 0 (host) or 1 (device)",
                        (sl__ull)i, q->device);
    p->device = q->device;
    L->any_dev |= p->device;
    if (q->dst) {
        if (q->dst_size < p->dst_len)
            return sl__fail(err, SAFELOAD_BUFFER_TOO_SMALL, sp, t->header_offset, t->name,
                            t->name_len, "request %llu needs %llu byte%s, its destination "
                            "has %llu", (sl__ull)i, (sl__ull)p->dst_len,
                            p->dst_len == 1 ? "" : "s", (sl__ull)q->dst_size);
        p->dst = (unsigned char *)q->dst;
    } else {
        /* arena space: 64-byte aligned on the host, 256 on a device */
        uint64_t al = p->device ? SL__MAX(256, (uint64_t)L->upload_align) : SL__ALIGN;
        uint64_t *tot = p->device ? &L->dev_total : &L->host_total;
        /* half the address space: no arena gets near it, and the round-ups and the
           huge-page slack added below cannot wrap */
        const uint64_t lim = (uint64_t)(SIZE_MAX / 2);
        p->alloc = 1;
        *tot = (*tot + al - 1) / al * al;              /* *tot <= lim: no wrap */
        p->dst = (unsigned char *)(uintptr_t)*tot;     /* an offset until the arena exists */
        if (*tot > lim || p->dst_len > lim - *tot)
            return sl__fail(err, SAFELOAD_OVERFLOW, sp, t->header_offset, t->name, t->name_len,
                            "the arena would exceed half the address space");
        *tot += p->dst_len;
        if (p->device) L->need_dev = 1; else L->need_host = 1;
    }
    L->total_bytes += p->src_len;
    return SAFELOAD_OK;
}

/* Every request resolved; destinations checked against one another and the source; the
   copy and cast kernels chosen for the load's size; the device hooks found. has_arena: the
   caller can take an arena. */
static safeload_result sl__load_resolve(sl__load *L, sl__resolve_fn resolve, const void *rctx,
                                        int trust_ptr, int has_arena, safeload_error *err) {
    size_t i, n = L->n_reqs;
    safeload_result r;
    L->big = sl__big_first(L->shards, L->n_shards);
    /* the requests, then the file order and its sort's scratch: one block, one set of fresh
       pages, rather than two more allocations faulted in 4 KiB at a time */
    L->reqs = n < SIZE_MAX ? (sl__rp *)sl__big_calloc(L->alloc, n + 1,
                                                      sizeof(sl__rp) + 2 * sizeof(uint32_t),
                                                      &L->big)
                           : NULL;
    if (!L->reqs) return SL__OOM(err, L->where);
    L->order = (uint32_t *)(L->reqs + n + 1);
    L->order_tmp = L->order + n;
    if (n > (size_t)UINT32_MAX - 1)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, L->where, SAFELOAD_NO_OFFSET, NULL, 0,
                        "too many requests");
    for (i = 0; i < n; i++)
        if ((r = sl__resolve_req(L, i, resolve, rctx, trust_ptr, err)) != SAFELOAD_OK) return r;
    if ((r = sl__check_overlap(L, L->shards, L->n_shards, err)) != SAFELOAD_OK) return r;
    /* the plan takes a piece per request at least: sized once (and faulted in) rather than
       grown; sl__grow refuses a size that overflows */
    if (!sl__grow_big(L->alloc, &L->big, (void **)&L->segs, &L->cap_segs, n + 1,
                      sizeof(sl__seg)))
        return SL__OOM(err, L->where);
    sl__prefault(L->segs, (n + 1) * sizeof(sl__seg));
    /* casts that write more than the caches hold stream past them (non-temporal stores): the
       output will not be read back before the load ends, and no read-for-ownership halves
       the write bandwidth. Decided on the whole load, not per tensor: 100,000 small tensors
       are as big a write as one large one. */
    if (L->total_bytes >= 8 * SL__MIB)
        L->ntcopy = sl__cast_resolve(SAFELOAD_F32, SAFELOAD_F32, SAFELOAD_SIMD_AUTO, 1);
    if (L->cast_out >= 8 * SL__MIB)
        for (i = 0; i < n; i++) {
            sl__rp *p = &L->reqs[i];
            sl__cast_fn nt;
            safeload_dtype want = L->user[i].dtype;
            if (!p->cast) continue;
            nt = sl__cast_resolve_file(want != SAFELOAD_DTYPE_NONE ? want : p->t->dtype,
                                       p->t->dtype, 1);
            if (nt) p->cast = nt;
        }
    if ((L->need_host || L->need_dev) && !has_arena)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, L->where, SAFELOAD_NO_OFFSET, NULL, 0,
                        "requests without a destination need an arena pointer");
    if (L->any_dev) return sl__resolve_hooks(L, &L->d, L->need_dev, err);
    return SAFELOAD_OK;
}

/* shared loads (below): this rank's part of the requests */
typedef struct sl__share sl__share;
static void sl__share_plan(sl__load *L, const uint32_t *order, sl__share *sh);

/* Requests in file order (the I/O handles look at them file by file, the tasks follow
   them), then the I/O mode's handles: mappings, or O_DIRECT handles (falling back to
   buffered reads where the file system refuses them, or the path now names another file;
   under AUTO also where the bytes this load reads from a file are mostly in the page
   cache). */
static safeload_result sl__load_open_io(sl__load *L, safeload_error *err) {
    size_t i, n = L->n_reqs, n_shards = L->n_shards, a, b;
    safeload_file **shards = L->shards;
    int any = 0;
    for (i = 0; i < n; i++) L->order[i] = (uint32_t)i;
    sl__sort_reqs(L->reqs, L->order, L->order_tmp, n);
    if (L->share) sl__share_plan(L, L->order, L->share);
    if (L->io == SAFELOAD_IO_MMAP)
        return sl__load_map(L) != SAFELOAD_OK ? SL__OOM(err, L->where) : SAFELOAD_OK;
    if (L->io != SAFELOAD_IO_DIRECT && L->io != SAFELOAD_IO_AUTO) return SAFELOAD_OK;
    L->direct = (sl__os_file *)sl__malloc(L->alloc, (n_shards + 1) * sizeof(sl__os_file));
    if (!L->direct) return SL__OOM(err, L->where);
    for (i = 0; i < n_shards; i++) L->direct[i] = SL__NO_FILE;
    /* order[a..b): file i's requests; a file this load reads nothing from gets no handle */
    for (i = 0, a = 0; i < n_shards; i++, a = b) {
        uint64_t sz = 0, bytes = 0;
        for (b = a; b < n && L->reqs[L->order[b]].shard == (uint32_t)i; b++)
            bytes += L->reqs[L->order[b]].src_len;
        if (!bytes || shards[i]->src.kind != SL__SRC_FILE) continue;
        if (L->io == SAFELOAD_IO_AUTO) {
            double c = sl__auto_cached(L, L->order, a, bytes);
            if (c < 0 || c >= 0.5) continue;                /* cached, or no answer: buffered */
        }
        if (sl__os_open(shards[i]->path, 1, L->alloc, &L->direct[i], &sz) == 0) {
            /* not the file that was opened (replaced since): buffered reads of the
               opened one instead */
            if (!sl__os_same(L->direct[i], shards[i]->src.fd)) {
                sl__os_close(L->direct[i]);
                L->direct[i] = SL__NO_FILE;
            } else {
                any = 1;
            }
        }
    }
    L->io = any ? SAFELOAD_IO_DIRECT : SAFELOAD_IO_READ;
    return SAFELOAD_OK;
}

/* The threads (L->n_workers: as many as the pool gives), before the first hook runs
   (device_alloc): a load those start on the caller's pool is refused from here to the end.
   Then the pinned budget (it bounds device task sizes), also refused before any hook runs. */
static safeload_result sl__load_threads(sl__load *L, safeload_error *err) {
    safeload_result r;
    L->n_workers = 1;
    if ((r = sl__pool_for(L->d.pool, L->d.threads, L->alloc, &L->pool, &L->tmp_pool,
                          &L->n_workers, L->where, err)) != SAFELOAD_OK)
        return r;
    if (L->d.pool) {
        sl__pool_enter(L->d.pool, &L->me);
        L->entered = 1;
    }
    if (L->any_dev) return sl__device_budget(L, &L->d, L->n_workers, err);
    return SAFELOAD_OK;
}

/* The arena: the caller's to reuse (desc.reuse), or one mapping whose pages the policy picks,
   first touched by the workers; device memory from device_alloc. Arena requests' offsets
   become pointers. */
static safeload_result sl__load_arena(sl__load *L, safeload_error *err) {
    safeload_arena *arena;
    safeload_result r;
    size_t i;
    if (!L->need_host && !L->need_dev) return SAFELOAD_OK;
    if (L->d.reuse) {
        arena = L->arena = L->d.reuse;
    } else {
        arena = L->arena = (safeload_arena *)sl__calloc(L->alloc, 1, sizeof *arena);
        if (!arena) return SL__OOM(err, L->where);
        arena->alloc = L->d.allocator;
        arena->hooks = L->hooks;
    }
    if (L->need_host) {
        uint64_t fresh_lo = arena->touched;
        if ((r = sl__arena_host(arena, L->host_total, &fresh_lo, L->where, err)) != SAFELOAD_OK)
            return r;
        arena->host_size = L->host_total;
        L->fresh = L->host_total > fresh_lo ? L->host_total - fresh_lo : 0;
        if (arena->os_pages) sl__pages_start(L, arena->host, fresh_lo, L->host_total, L->d.pages);
    }
    if (L->need_dev && arena->device && arena->device_cap < L->dev_total) {
        /* a reused arena's device memory is too small: this load's hooks allocate anew */
        if (arena->hooks.device_free) arena->hooks.device_free(arena->hooks.user, arena->device);
        arena->device = NULL;
        arena->device_cap = 0;
    }
    if (L->need_dev && !arena->device) {
        /* never 0 bytes (all the tensors empty): cudaMalloc answers that with NULL, and the
           empty tensors still get a pointer, as on the host */
        arena->hooks = L->hooks;
        if (L->hooks.device_alloc(L->hooks.user, L->dev_total ? (size_t)L->dev_total : 1,
                                  &arena->device) != 0 || !arena->device) {
            arena->device = NULL;
            return sl__fail(err, SAFELOAD_HOOK_FAILED, L->where, SAFELOAD_NO_OFFSET,
                            "device_alloc", 12, "device_alloc hook failed for %llu bytes",
                            (sl__ull)L->dev_total);
        }
        arena->device_cap = L->dev_total ? L->dev_total : 1;
    }
    for (i = 0; i < L->n_reqs; i++) {
        sl__rp *p = &L->reqs[i];
        if (p->alloc) p->dst = (p->device ? (unsigned char *)arena->device : arena->host) +
                               (uintptr_t)p->dst;
    }
    return SAFELOAD_OK;
}

/* Tasks in file order; the workers (no more than tasks) and their buffers; the device
   pipeline (begin, pinned buffers), whose end() is owed from here on. */
static safeload_result sl__load_plan(sl__load *L, safeload_error *err) {
    uint64_t max_task = 0;
    size_t i;
    if (sl__plan_tasks(L, L->order) != SAFELOAD_OK) return SL__OOM(err, L->where);
    for (i = 0; i < L->n_tasks; i++) max_task = SL__MAX(max_task, L->tasks[i].len);
    if ((size_t)L->n_workers > L->n_tasks) L->n_workers = L->n_tasks ? (int)L->n_tasks : 1;
    L->dma = L->big;
    L->workers = (sl__worker *)sl__calloc(L->alloc, (size_t)L->n_workers, sizeof(sl__worker));
    if (!L->workers) return SL__OOM(err, L->where);
    sl__aio_setup(L);
    for (i = 0; i < (size_t)L->n_workers && L->n_tasks; i++) {
        sl__worker *w = &L->workers[i];
        w->staging = (unsigned char *)sl__malloc(L->alloc, L->staging);
        if (!w->staging) return SL__OOM(err, L->where);
        if (L->io == SAFELOAD_IO_DIRECT) {
            /* with a queue, only a short read's rest comes through it: no huge pages then */
            sl__bigv plain = {2, 0, 0};
            uint64_t sz = SL__MAX(max_task, (uint64_t)L->staging) + 3 * SL__DIRECT_ALIGN;
            w->bounce_raw = (unsigned char *)sl__big_alloc(
                L->alloc, (size_t)sz, w->aio_on ? &plain : &L->dma, w->aio_on ? 0 : SL__BIG_DMA,
                NULL);
            if (!w->bounce_raw) return SL__OOM(err, L->where);
            w->bounce = (unsigned char *)(((uintptr_t)w->bounce_raw +
                                           (uintptr_t)(SL__DIRECT_ALIGN - 1)) &
                                          ~(uintptr_t)(SL__DIRECT_ALIGN - 1));
        }
    }
    if (L->any_dev && L->n_tasks) return sl__device_setup(L, err);
    return SAFELOAD_OK;
}

/* The tasks on the pool's workers (this thread among them), then the device's sync and the
   last progress call; the load's first error, if any, becomes the result. */
static safeload_result sl__load_execute(sl__load *L, safeload_error *err) {
    safeload_load_stats *st = L->d.stats;
    size_t i;
    if (st) {
        memset(st, 0, sizeof *st);
        st->threads = L->n_workers;
        st->io = L->io;
        for (i = 0; i < L->n_shards; i++) st->direct_files += sl__is_direct(L, (uint32_t)i);
    }
    if (L->n_tasks) sl__pool_run(L->pool, sl__load_job, L, L->n_workers);
    if (L->any_dev && L->begun && !L->have_error && L->hooks.sync(L->hooks.user) != 0)
        sl__load_fail(L, SAFELOAD_HOOK_FAILED, SL__NO_SHARD, SAFELOAD_NO_OFFSET, NULL, "sync",
                      "the sync hook failed at the end of the load");
    if (!L->have_error && L->progress && L->reported != L->total_bytes) {
        uint64_t last = 0;
        L->done_bytes = L->total_bytes;
        sl__maybe_progress(L, &last, 1);     /* the final call, unless one said 100% already */
    }
    if (st) {
        for (i = 0; i < (size_t)L->n_workers; i++) {
            st->bytes_read += L->workers[i].bytes_read;
            st->bytes_written += L->workers[i].bytes_written;
            st->reads += L->workers[i].reads;
            st->fixed_reads += L->workers[i].aio.fixed_reads;
        }
        st->pages = L->pages.policy;
        st->fresh_bytes = L->fresh;
        st->huge_bytes = L->pages.huge_bytes;
        st->touch_huge_mbps = L->pages.huge_mbps;
        st->touch_normal_mbps = L->pages.normal_mbps;
        st->queue_depth = L->aio_depth;
        st->aio = L->aio_depth ? (safeload_aio)SL__AIO_KIND : SAFELOAD_AIO_NONE;
        st->aio_error = L->aio_error;
    }
    if (!L->have_error) return SAFELOAD_OK;
    if (err) *err = L->first;
    return L->first.code;
}

/* Everything the steps made, freed, whichever step failed (r); on success the requests get
   their results and the caller the arena (arena_out), else nothing is reported loaded. */
static safeload_result sl__load_release(sl__load *L, safeload_result r,
                                        safeload_arena **arena_out) {
    safeload_request *reqs = L->user;
    size_t i, n = L->n_reqs;
    /* after a failure, nothing may still be in flight: a sync that succeeds frees every staging
       buffer; if it fails, buffers whose copies were never confirmed are leaked, not freed, and
       so is the device arena those copies write into */
    if (L->begun && r != SAFELOAD_OK && L->workers) {
        int synced = L->hooks.sync(L->hooks.user) == 0;
        for (i = 0; i < (size_t)L->n_workers; i++) {
            int b;
            if (!L->workers[i].pinned_busy) continue;
            for (b = 0; b < L->pinned_count; b++) {
                if (synced) L->workers[i].pinned_busy[b] = 0;
                else if (L->workers[i].pinned_busy[b]) L->unconfirmed = 1;
            }
        }
    }
    if (L->workers) {
        for (i = 0; i < (size_t)L->n_workers; i++) sl__worker_free(L, &L->workers[i]);
        if (L->d.stats) L->d.stats->pinned_bytes = L->pinned_bytes;
    }
    if (L->begun && L->hooks.end) L->hooks.end(L->hooks.user);
    safeload_pool_destroy(L->tmp_pool);
    if (L->direct) {
        for (i = 0; i < L->n_shards; i++) sl__os_close(L->direct[i]);
        sl__free(L->alloc, L->direct);
    }
    sl__load_unmap(L);
    if (r == SAFELOAD_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].data = L->reqs[i].dst;
            reqs[i].nbytes = L->reqs[i].dst_len;
            reqs[i].tensor = L->reqs[i].t;
            reqs[i].shard = L->reqs[i].shard;
        }
        if (L->arena && L->need_host)
            L->arena->touched = SL__MAX(L->arena->touched, L->host_total);
        if (L->d.reuse) L->arena = L->d.reuse;      /* the caller's, whatever this load used */
        if (arena_out) *arena_out = L->arena;
        else if (!L->d.reuse) safeload_arena_free(L->arena);
    } else {
        for (i = 0; i < n; i++) { reqs[i].data = NULL; reqs[i].nbytes = 0; }
        if (L->unconfirmed && L->arena) {           /* leaked: a copy may still write it */
            L->arena->device = NULL;
            L->arena->device_cap = 0;
        }
        if (L->arena != L->d.reuse) safeload_arena_free(L->arena);  /* device_free: last hook */
    }
    if (L->entered) sl__pool_leave(L->d.pool, &L->me);
    sl__free(L->alloc, L->workers);
    sl__free(L->alloc, L->tasks);
    sl__big_free(L->alloc, L->segs);
    sl__big_free(L->alloc, L->reqs);               /* (the order arrays with it) */
#if !defined(SAFELOAD_NO_THREADS)
    sl__cond_destroy(&L->cv);
#endif
    sl__mutex_destroy(&L->mu);
    return r;
}

/* where: the model's or the file's path, named by errors that are not one shard's. */
/* sh: a shared load's bookkeeping (this rank reads its part only), or NULL */
static safeload_result sl__load_run(safeload_file **shards, size_t n_shards, const char *where,
                                    sl__resolve_fn resolve, const void *rctx, int trust_ptr,
                                    safeload_request *reqs, size_t n,
                                    const safeload_load_desc *desc, safeload_arena **arena_out,
                                    sl__share *sh, safeload_error *err) {
    sl__load L;
    safeload_result r;
    memset(&L, 0, sizeof L);
    L.where = where;
    L.share = sh;
    L.shards = shards;
    L.n_shards = n_shards;
    L.user = reqs;
    L.n_reqs = n;
    if ((r = sl__load_settings(&L, desc, err)) != SAFELOAD_OK) return r;
    if ((r = sl__load_resolve(&L, resolve, rctx, trust_ptr,
                              arena_out != NULL || (desc && desc->reuse), err)) ==
            SAFELOAD_OK &&
        (r = sl__load_open_io(&L, err)) == SAFELOAD_OK &&
        (r = sl__load_threads(&L, err)) == SAFELOAD_OK &&
        (r = sl__load_arena(&L, err)) == SAFELOAD_OK &&
        (r = sl__load_plan(&L, err)) == SAFELOAD_OK)
        r = sl__load_execute(&L, err);
    return sl__load_release(&L, r, arena_out);
}

/* ---- 5e. shared loads: ranks that split the reads and share the bytes ----
   The requests' source bytes, in file order, are cut into world parts of about equal size
   (at element boundaries); rank r reads part r into its own destinations, like a load of just
   that part. Then, in the same order on every rank: one max (did any rank fail?), the
   broadcasts (each part from the rank that read it, cast already; consecutive arena tensors
   from one root go as one call), and a second max (did any broadcast fail?). Every rank calls
   the same collectives whatever failed, so no rank waits for one that gave up. */

struct sl__share {
    const safeload_share *s;
    uint64_t *cum;                      /* per request: where its bytes start (file order) */
    uint64_t *cuts;                     /* world + 1: part k is [cuts[k], cuts[k+1]) */
    uint32_t *order;                    /* the requests in file order */
    unsigned *su, *du;                  /* per request: source and destination unit bytes */
    uint64_t *len;                      /* per request: source bytes */
    int planned;                        /* the engine filled the above */
};

/* In sl__load_run, after the requests are resolved and sorted: the parts, this rank's
   restriction, and the arena laid out in file order, so a rank's part is one stretch of it. */
static void sl__share_plan(sl__load *L, const uint32_t *order, sl__share *sh) {
    uint64_t *host_total = &L->host_total, *dev_total = &L->dev_total;
    const safeload_share *s = sh->s;
    uint64_t c = 0, total;
    size_t i, j = 0, n = L->n_reqs;
    int k, w = s->world;
    for (i = 0; i < n; i++) {
        const sl__rp *p = &L->reqs[order[i]];
        sh->order[i] = order[i];
        sh->cum[order[i]] = c;
        sh->len[order[i]] = p->src_len;
        sh->su[order[i]] = p->ssize;
        sh->du[order[i]] = p->dsize;
        c += p->src_len;
    }
    total = c;
    sh->cuts[0] = 0;
    sh->cuts[w] = total;
    for (k = 1; k < w; k++) {
        uint64_t at = total / (uint64_t)w * (uint64_t)k + total % (uint64_t)w * (uint64_t)k / (uint64_t)w;
        while (j < n && sh->cum[order[j]] + sh->len[order[j]] <= at) j++;
        if (j < n) {                    /* inside request order[j]: on a unit boundary */
            uint64_t c0 = sh->cum[order[j]], u = sh->su[order[j]];
            at = c0 + (at - c0) / u * u;
        }
        sh->cuts[k] = SL__MAX(at, sh->cuts[k - 1]);
    }
    L->part_cum = sh->cum;
    L->part_lo = sh->cuts[s->rank];
    L->part_hi = sh->cuts[s->rank + 1];
    L->total_bytes = L->part_hi - L->part_lo;
    *host_total = *dev_total = 0;
    for (i = 0; i < n; i++) {
        sl__rp *p = &L->reqs[order[i]];
        uint64_t al = p->device ? SL__MAX(256, (uint64_t)L->upload_align) : SL__ALIGN;
        uint64_t *tot = p->device ? dev_total : host_total;
        if (!p->alloc) continue;
        *tot = (*tot + al - 1) / al * al;
        p->dst = (unsigned char *)(uintptr_t)*tot;
        *tot += p->dst_len;
    }
    sh->planned = 1;
}

/* One broadcast of a stretch, in pieces of at most 1 GiB (MPI counts are ints). */
static int sl__share_bcast(const safeload_share *s, unsigned char *p, uint64_t n, int root,
                           int device) {
    int bad = 0;
    while (n) {
        size_t k = (size_t)SL__MIN(n, (uint64_t)SL__GIB);
        bad |= s->broadcast(s->user, p, k, root, device) != 0;
        p += k;
        n -= k;
    }
    return bad;
}

/* Every part to every rank: 1 when a broadcast failed here (the rest are still called). */
static int sl__share_spread(const sl__share *sh, const safeload_request *reqs, size_t n) {
    const safeload_share *s = sh->s;
    unsigned char *pp = NULL;           /* the stretch waiting to go */
    uint64_t pn = 0;
    int proot = -1, pdev = 0, parena = 0, bad = 0, k = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t ri = sh->order[i];
        uint64_t c = sh->cum[ri], len = sh->len[ri];
        unsigned char *data = (unsigned char *)reqs[ri].data;
        int arena = reqs[ri].dst == NULL, dev = reqs[ri].device;
        if (!len) continue;
        while (sh->cuts[k + 1] <= c) k++;
        for (; k < s->world && sh->cuts[k] < c + len; k++) {
            uint64_t a = SL__MAX(sh->cuts[k], c) - c, b = SL__MIN(sh->cuts[k + 1], c + len) - c;
            unsigned char *p = data + a / sh->su[ri] * sh->du[ri];
            uint64_t m = (b - a) / sh->su[ri] * sh->du[ri];
            if (a >= b) continue;
            /* the next tensor of one arena from the same root: one call (the bytes between
               are padding; offsets in an arena are the same on every rank, so is this) */
            if (pp && proot == k && pdev == dev && parena && arena && p >= pp + pn &&
                (uint64_t)(p - (pp + pn)) < 4096) {
                pn = (uint64_t)(p - pp) + m;
            } else {
                if (pp) bad |= sl__share_bcast(s, pp, pn, proot, pdev);
                pp = p; pn = m; proot = k; pdev = dev; parena = arena;
            }
            if (sh->cuts[k + 1] >= c + len) break;      /* the next tensor may be k's too */
        }
    }
    if (pp) bad |= sl__share_bcast(s, pp, pn, proot, pdev);
    return bad;
}

/* max over the ranks of "failed here": 0, or (world - failing rank) << 32 | its result, so
   the lowest failing rank wins; -1 when the hook itself failed */
static int sl__share_agree(const safeload_share *s, safeload_result r, uint64_t *v) {
    *v = r == SAFELOAD_OK ? 0 : (uint64_t)(s->world - s->rank) << 32 | (uint32_t)r;
    return s->max(s->user, v) != 0 ? -1 : 0;
}

/* "rank R of W: " before an error's message (its end cut where it no longer fits) */
static void sl__share_name_rank(const safeload_share *s, safeload_error *err) {
    char pre[48];
    size_t k, m, cap = sizeof err->message - 1;
    if (!err) return;
    snprintf(pre, sizeof pre, "rank %d of %d: ", s->rank, s->world);
    k = strlen(pre);
    m = SL__MIN(strlen(err->message), cap - k);
    memmove(err->message + k, err->message, m);
    memcpy(err->message, pre, k);
    err->message[k + m] = 0;
}

/* After this rank's part: agree, share, agree. On failure nothing is loaded on any rank. */
static safeload_result sl__share_finish(const sl__share *sh, safeload_result r, const char *where,
                                        safeload_request *reqs, size_t n,
                                        safeload_arena **arena, safeload_error *err) {
    const safeload_share *s = sh->s;
    uint64_t v = 0;
    size_t i;
    int w = s->world;
    if (sl__share_agree(s, r, &v) != 0) {
        if (r == SAFELOAD_OK)
            r = sl__fail(err, SAFELOAD_HOOK_FAILED, where, SAFELOAD_NO_OFFSET, "max", 3,
                         "rank %d of %d: the share max hook failed", s->rank, w);
    } else if (v) {
        int fr = w - (int)(v >> 32);
        safeload_result code = (safeload_result)(v & 0xFFFFFFFFu);
        if ((unsigned)code >= (unsigned)SAFELOAD_RESULT_COUNT || code == SAFELOAD_OK)
            code = SAFELOAD_HOOK_FAILED;            /* not from this library: say so */
        if (r != SAFELOAD_OK) {
            sl__share_name_rank(s, err);     /* this rank's own error, naming the rank */
        } else {
            r = sl__fail(err, code, where, SAFELOAD_NO_OFFSET, NULL, 0,
                         "rank %d of %d failed the shared load (%s); this rank (%d) was fine",
                         fr, w, safeload_result_id(code), s->rank);
        }
    } else {
        int bad = sl__share_spread(sh, reqs, n);
        if (sl__share_agree(s, bad ? SAFELOAD_HOOK_FAILED : SAFELOAD_OK, &v) != 0)
            r = sl__fail(err, SAFELOAD_HOOK_FAILED, where, SAFELOAD_NO_OFFSET, "max", 3,
                         "rank %d of %d: the share max hook failed", s->rank, w);
        else if (v)
            r = sl__fail(err, SAFELOAD_HOOK_FAILED, where, SAFELOAD_NO_OFFSET, "broadcast", 9,
                         "the share broadcast hook failed on rank %d of %d",
                         w - (int)(v >> 32), w);
    }
    if (r != SAFELOAD_OK) {
        if (arena) { safeload_arena_free(*arena); *arena = NULL; }
        for (i = 0; i < n && reqs; i++) { reqs[i].data = NULL; reqs[i].nbytes = 0; }
    }
    return r;
}

static int sl__share_on(const safeload_load_desc *d) {
    return d && d->share.world > 1;
}

/* A shared load refused before it started still takes part in the agreement, so the other
   ranks learn of it instead of waiting (where the share itself is usable). */
static safeload_result sl__share_early(const safeload_load_desc *d, safeload_result r,
                                       safeload_error *err) {
    const safeload_share *s = d ? &d->share : NULL;
    uint64_t v;
    if (sl__share_on(d) && s->rank >= 0 && s->rank < s->world && s->max && s->broadcast &&
        sl__share_agree(s, r, &v) == 0)
        sl__share_name_rank(s, err);
    return r;
}

static safeload_result sl__load_any(safeload_file **shards, size_t n_shards, const char *where,
                                    sl__resolve_fn resolve, const void *rctx, int trust_ptr,
                                    safeload_request *reqs, size_t n,
                                    const safeload_load_desc *d, safeload_arena **arena,
                                    safeload_error *err) {
    const safeload_share *s;
    sl__share sh;
    safeload_result r;
    const safeload_allocator *a;
    size_t m = n + 1;
    if (!sl__share_on(d))
        return sl__load_run(shards, n_shards, where, resolve, rctx, trust_ptr, reqs, n, d, arena,
                            NULL, err);
    s = &d->share;
    if (s->rank < 0 || s->rank >= s->world || !s->broadcast || !s->max)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, where, SAFELOAD_NO_OFFSET, NULL, 0,
                        "share: rank %d of %d, broadcast %s, max %s: a rank in [0, world) and "
                        "both hooks are needed", s->rank, s->world, s->broadcast ? "set" : "NULL",
                        s->max ? "set" : "NULL");
    memset(&sh, 0, sizeof sh);
    sh.s = s;
    a = sl__allocator_ok(&d->allocator) ? &d->allocator : NULL;
    if (!a) {
        r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, where, SAFELOAD_NO_OFFSET, NULL, 0,
                     "an allocator needs both alloc and free");
    } else {
        sh.cum = (uint64_t *)sl__malloc_n(a, m, sizeof(uint64_t));
        sh.len = (uint64_t *)sl__malloc_n(a, m, sizeof(uint64_t));
        sh.cuts = (uint64_t *)sl__malloc_n(a, (size_t)s->world + 1, sizeof(uint64_t));
        sh.order = (uint32_t *)sl__malloc_n(a, m, sizeof(uint32_t));
        sh.su = (unsigned *)sl__malloc_n(a, m, sizeof(unsigned));
        sh.du = (unsigned *)sl__malloc_n(a, m, sizeof(unsigned));
        if (!sh.cum || !sh.len || !sh.cuts || !sh.order || !sh.su || !sh.du)
            r = SL__OOM(err, where);
        else
            r = sl__load_run(shards, n_shards, where, resolve, rctx, trust_ptr, reqs, n, d,
                             arena, &sh, err);
    }
    r = sl__share_finish(&sh, r, where, reqs, n, arena, err);
    if (a) {
        sl__free(a, sh.cum); sl__free(a, sh.len); sl__free(a, sh.cuts);
        sl__free(a, sh.order); sl__free(a, sh.su); sl__free(a, sh.du);
    }
    return r;
}

/* A load's figures start from zero, so a load that fails early never shows an earlier one's. */
static void sl__stats_clear(const safeload_load_desc *desc) {
    if (desc && desc->stats) memset(desc->stats, 0, sizeof *desc->stats);
}

SL__DEF safeload_result safeload_load(safeload_model *m, safeload_request *reqs, size_t n,
                                      const safeload_load_desc *desc, safeload_arena **arena,
                                      safeload_error *err) {
    sl__clear_error(err);
    sl__stats_clear(desc);
    if (arena) *arena = NULL;
    if (!m) return sl__share_early(desc, sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "",
                                                  SAFELOAD_NO_OFFSET, NULL, 0, "model is NULL"),
                                   err);
    return sl__load_any(m->shards, m->n_shards, sl__model_where(m), sl__resolve_model, m,
                        !m->has_unlisted, reqs, n, desc, arena, err);
}

SL__DEF safeload_result safeload_load_file(safeload_file *f, safeload_request *reqs, size_t n,
                                           const safeload_load_desc *desc,
                                           safeload_arena **arena, safeload_error *err) {
    sl__clear_error(err);
    sl__stats_clear(desc);
    if (arena) *arena = NULL;
    if (!f) return sl__share_early(desc, sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "",
                                                  SAFELOAD_NO_OFFSET, NULL, 0, "file is NULL"),
                                   err);
    return sl__load_any(&f, 1, f->path, sl__resolve_file, f, 1, reqs, n, desc, arena, err);
}

SL__DEF void safeload_loaded_free(safeload_loaded *l) {
    safeload_allocator a;
    if (!l) return;
    a = l->allocator_;
    safeload_arena_free(l->arena);
    sl__big_free(&a, l->tensors);
    sl__free(&a, l);
}

SL__DEF safeload_result safeload_load_all(safeload_model *m, safeload_dtype dtype,
                                          const safeload_load_desc *desc, safeload_loaded **out,
                                          safeload_error *err) {
    safeload_loaded *l;
    safeload_result r;
    safeload_allocator a;
    sl__bigv big;
    size_t i;
    sl__clear_error(err);
    sl__stats_clear(desc);
    if (out) *out = NULL;
    if (!m || !out)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "model or out is NULL");
    if ((int)dtype < 0 || (int)dtype >= (int)SAFELOAD_DTYPE_COUNT)   /* no dtype at all */
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, sl__model_where(m), SAFELOAD_NO_OFFSET,
                        NULL, 0, "dtype %d is not a safeload_dtype", (int)dtype);
    memset(&a, 0, sizeof a);
    if (desc) a = desc->allocator;
    if (!sl__allocator_ok(&a))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "an allocator needs both alloc and free");
    l = (safeload_loaded *)sl__calloc(&a, 1, sizeof *l);
    if (!l) return SL__OOM(err, "");
    l->allocator_ = a;
    big = sl__big_first(m->shards, m->n_shards);
    l->tensors = (safeload_request *)sl__big_calloc(&a, m->count + 1, sizeof *l->tensors, &big);
    if (!l->tensors) { sl__free(&a, l); return SL__OOM(err, ""); }
    l->count = m->count;
    for (i = 0; i < m->count; i++) {
        const safeload_tensor *t = &m->shards[m->refs[i].shard]->tensors[m->refs[i].idx];
        l->tensors[i].name = t->name;
        l->tensors[i].tensor = t;            /* resolved already: no lookup in the load */
        l->tensors[i].shard = m->refs[i].shard;
        if (dtype != SAFELOAD_DTYPE_NONE && dtype != t->dtype &&
            sl__cast_resolve(dtype, t->dtype, SAFELOAD_SIMD_AUTO, 0))
            l->tensors[i].dtype = dtype;
    }
    r = safeload_load(m, l->tensors, l->count, desc, &l->arena, err);
    if (r != SAFELOAD_OK) { safeload_loaded_free(l); return r; }
    if (desc && desc->reuse) l->arena = NULL;   /* the caller's arena holds the tensors */
    *out = l;
    return SAFELOAD_OK;
}

/* ---- 5e. async loads: safeload_load on a thread of its own ---- */

struct safeload_job {
    safeload_allocator alloc;
    safeload_model *model;
    safeload_request *requests;
    size_t count;
    safeload_load_desc desc;            /* the caller's, with progress routed through the job */
    safeload_progress_fn progress;      /* the caller's own callback and its user pointer */
    void *progress_user;
    safeload_arena **arena;
    safeload_error *err;
    safeload_result result;
    int threaded;                       /* a thread was started: wait joins it */
#if !defined(SAFELOAD_NO_THREADS)
    sl__thread thread;
    sl__pool_arg start;                 /* what the thread runs: sl__job_run(this job) */
#endif
    sl__mutex mu;                       /* guards what follows, between the load and callers */
    uint64_t done, total;
    int cancel, finished;
};

/* the load's progress callback: records the figures for safeload_job_progress, calls the
   caller's, and stops the load once safeload_job_cancel asked (also during that call) */
static int sl__job_progress(void *user, uint64_t done, uint64_t total) {
    safeload_job *j = (safeload_job *)user;
    int stop = 0;
    sl__mutex_lock(&j->mu);
    j->done = done;
    j->total = total;
    sl__mutex_unlock(&j->mu);
    if (j->progress && j->progress(j->progress_user, done, total) != 0) stop = 1;
    sl__mutex_lock(&j->mu);
    stop |= j->cancel;
    sl__mutex_unlock(&j->mu);
    return stop;
}

static void sl__job_run(void *ctx) {
    safeload_job *j = (safeload_job *)ctx;
    safeload_result r = safeload_load(j->model, j->requests, j->count, &j->desc, j->arena,
                                      j->err);
    sl__mutex_lock(&j->mu);
    j->result = r;
    j->finished = 1;
    sl__mutex_unlock(&j->mu);
}

SL__DEF safeload_result safeload_load_async(safeload_job **out, safeload_model *m,
                                            safeload_request *reqs, size_t n,
                                            const safeload_load_desc *desc,
                                            safeload_arena **arena, safeload_error *err) {
    safeload_job *j;
    safeload_allocator a;
    sl__clear_error(err);
    if (out) *out = NULL;
    if (arena) *arena = NULL;
    if (!out || !m)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, m ? sl__model_where(m) : "",
                        SAFELOAD_NO_OFFSET, NULL, 0, "job or model is NULL");
    memset(&a, 0, sizeof a);
    if (desc) a = desc->allocator;
    if (!sl__allocator_ok(&a))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, sl__model_where(m), SAFELOAD_NO_OFFSET,
                        NULL, 0, "an allocator needs both alloc and free");
    j = (safeload_job *)sl__calloc(&a, 1, sizeof *j);
    if (!j) return SL__OOM(err, sl__model_where(m));
    if (sl__mutex_init(&j->mu) != 0) {
        sl__free(&a, j);
        return sl__fail(err, SAFELOAD_THREAD_ERROR, sl__model_where(m), SAFELOAD_NO_OFFSET,
                        NULL, 0, "cannot create a lock");
    }
    j->alloc = a;
    j->model = m;
    j->requests = reqs;
    j->count = n;
    if (desc) j->desc = *desc;
    j->progress = j->desc.progress;
    j->progress_user = j->desc.progress_user;
    j->desc.progress = sl__job_progress;
    j->desc.progress_user = j;
    j->arena = arena;
    j->err = err;
    *out = j;                        /* before the load starts: its callbacks may cancel it */
#if !defined(SAFELOAD_NO_THREADS)
    j->start.run = sl__job_run;                     /* the pool's thread start, not a worker */
    j->start.ctx = j;
    j->threaded = sl__thread_start(&j->thread, &j->start) == 0;
#endif
    if (!j->threaded) sl__job_run(j);               /* no thread to be had: here and now */
    return SAFELOAD_OK;
}

SL__DEF int safeload_job_done(safeload_job *j) {
    int f;
    if (!j) return 1;
    sl__mutex_lock(&j->mu);
    f = j->finished;
    sl__mutex_unlock(&j->mu);
    return f;
}

SL__DEF void safeload_job_progress(safeload_job *j, uint64_t *done, uint64_t *total) {
    uint64_t d = 0, t = 0;
    if (j) {
        sl__mutex_lock(&j->mu);
        d = j->done;
        t = j->total;
        sl__mutex_unlock(&j->mu);
    }
    if (done) *done = d;
    if (total) *total = t;
}

SL__DEF void safeload_job_cancel(safeload_job *j) {
    if (!j) return;
    sl__mutex_lock(&j->mu);
    j->cancel = 1;
    sl__mutex_unlock(&j->mu);
}

SL__DEF safeload_result safeload_job_wait(safeload_job *j) {
    safeload_allocator a;
    safeload_result r;
    if (!j) return SAFELOAD_INVALID_ARGUMENT;
#if !defined(SAFELOAD_NO_THREADS)
    if (j->threaded) sl__thread_join(j->thread);
#endif
    r = j->result;
    a = j->alloc;
    sl__mutex_destroy(&j->mu);
    sl__free(&a, j);
    return r;
}

/* =============================================================================================
   6. DEVICE HOOKS: resolving the hooks, pinned double-buffered staging, uploads
   ========================================================================================== */

/* The named hooks are weak references: a program that links a definition gets it used, one
   that does not sees NULL and gets HOOK_MISSING naming the function. PE/COFF (MinGW, MSVC) has
   no usable weak references: there, pass the hooks in safeload_load_desc.hooks. */
#if !defined(SAFELOAD_NO_WEAK_HOOKS) && defined(SL__GNUC) && !defined(SL__WINDOWS) && \
    (defined(__ELF__) || defined(__APPLE__))
#  define SL__WEAK_HOOKS 1
#  if defined(__APPLE__)
#    define SL__WEAK_REF __attribute__((weak_import))
#  else
#    define SL__WEAK_REF __attribute__((weak))
#  endif
/* redeclared (the public part declared them) to make the references weak */
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wredundant-decls"
SL__WEAK_REF int safeload_cuda_pinned_alloc(void *user, size_t size, void **out);
SL__WEAK_REF void safeload_cuda_pinned_free(void *user, void *ptr);
SL__WEAK_REF int safeload_cuda_device_alloc(void *user, size_t size, void **out);
SL__WEAK_REF void safeload_cuda_device_free(void *user, void *ptr);
SL__WEAK_REF int safeload_cuda_begin(void *user, int workers, int buffers);
SL__WEAK_REF int safeload_cuda_upload(void *user, int worker, int buffer, void *device_dst,
                                      const void *pinned_src, size_t n);
SL__WEAK_REF int safeload_cuda_wait(void *user, int worker, int buffer);
SL__WEAK_REF int safeload_cuda_sync(void *user);
SL__WEAK_REF void safeload_cuda_end(void *user);
SL__WEAK_REF int safeload_ascend_pinned_alloc(void *user, size_t size, void **out);
SL__WEAK_REF void safeload_ascend_pinned_free(void *user, void *ptr);
SL__WEAK_REF int safeload_ascend_device_alloc(void *user, size_t size, void **out);
SL__WEAK_REF void safeload_ascend_device_free(void *user, void *ptr);
SL__WEAK_REF int safeload_ascend_begin(void *user, int workers, int buffers);
SL__WEAK_REF int safeload_ascend_upload(void *user, int worker, int buffer, void *device_dst,
                                        const void *pinned_src, size_t n);
SL__WEAK_REF int safeload_ascend_wait(void *user, int worker, int buffer);
SL__WEAK_REF int safeload_ascend_sync(void *user);
SL__WEAK_REF void safeload_ascend_end(void *user);
#  pragma GCC diagnostic pop
#endif

/* Each hook: from the options if set there, else the linked named function. */
static safeload_result sl__resolve_hooks(sl__load *L, const safeload_load_desc *d,
                                         int need_alloc, safeload_error *err) {
    safeload_device_hooks h = d->hooks;
    const char *prefix = "hooks.";
    const char *missing = NULL;
    const char *path0 = L->where;
    char name[64];
#if defined(SL__WEAK_HOOKS)
    if (d->device == SAFELOAD_DEVICE_CUDA) {
        prefix = "safeload_cuda_";
        if (!h.pinned_alloc) h.pinned_alloc = safeload_cuda_pinned_alloc;
        if (!h.pinned_free) h.pinned_free = safeload_cuda_pinned_free;
        if (!h.device_alloc) h.device_alloc = safeload_cuda_device_alloc;
        if (!h.device_free) h.device_free = safeload_cuda_device_free;
        if (!h.begin) h.begin = safeload_cuda_begin;
        if (!h.upload) h.upload = safeload_cuda_upload;
        if (!h.wait) h.wait = safeload_cuda_wait;
        if (!h.sync) h.sync = safeload_cuda_sync;
        if (!h.end) h.end = safeload_cuda_end;
    } else if (d->device == SAFELOAD_DEVICE_ASCEND) {
        prefix = "safeload_ascend_";
        if (!h.pinned_alloc) h.pinned_alloc = safeload_ascend_pinned_alloc;
        if (!h.pinned_free) h.pinned_free = safeload_ascend_pinned_free;
        if (!h.device_alloc) h.device_alloc = safeload_ascend_device_alloc;
        if (!h.device_free) h.device_free = safeload_ascend_device_free;
        if (!h.begin) h.begin = safeload_ascend_begin;
        if (!h.upload) h.upload = safeload_ascend_upload;
        if (!h.wait) h.wait = safeload_ascend_wait;
        if (!h.sync) h.sync = safeload_ascend_sync;
        if (!h.end) h.end = safeload_ascend_end;
    }
#else
    if (d->device == SAFELOAD_DEVICE_CUDA) prefix = "safeload_cuda_";
    if (d->device == SAFELOAD_DEVICE_ASCEND) prefix = "safeload_ascend_";
#endif
    if (!h.upload) missing = "upload";
    else if (!h.wait) missing = "wait";
    else if (!h.sync) missing = "sync";
    else if (!h.pinned_alloc) missing = "pinned_alloc";
    else if (!h.pinned_free) missing = "pinned_free";
    else if (need_alloc && !h.device_alloc) missing = "device_alloc";
    else if (need_alloc && !h.device_free) missing = "device_free";   /* or its blocks leak */
    if (missing) {
        snprintf(name, sizeof name, "%s%s", prefix, missing);
        return sl__fail(err, SAFELOAD_HOOK_MISSING, path0, SAFELOAD_NO_OFFSET, name,
                        strlen(name), "a device destination needs %s: %s", name,
                        d->device == SAFELOAD_DEVICE_CUDA || d->device == SAFELOAD_DEVICE_ASCEND
#if defined(SL__WEAK_HOOKS)
                        ? "define it in your program and link it in, or set it in "
                          "safeload_load_desc.hooks"
#else
                        ? "named hooks are not looked up in this build (SAFELOAD_NO_WEAK_HOOKS, "
                          "or a platform without weak references such as Windows): set it in "
                          "safeload_load_desc.hooks"
#endif
                        : "set it in safeload_load_desc.hooks (or set desc.device to "
                          "SAFELOAD_DEVICE_CUDA/ASCEND and link the named hooks)");
    }
    L->hooks = h;
    return SAFELOAD_OK;
}

/* Pinned memory per worker: pinned_count buffers of pinned_size, all within pinned_limit. */
static safeload_result sl__device_budget(sl__load *L, const safeload_load_desc *d, int workers,
                                         safeload_error *err) {
    uint64_t limit = d->pinned_limit ? d->pinned_limit : 256 * SL__MIB;
    uint64_t per = limit / ((uint64_t)workers * (uint64_t)L->pinned_count);
    if (per < 4096)                     /* pinned_size's own floor */
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, L->where, SAFELOAD_NO_OFFSET, NULL, 0,
                        "pinned_limit %llu is too small for %d workers x %d buffers of at least "
                        "4 KiB", (sl__ull)limit, workers, L->pinned_count);
    if (L->pinned_size > per) L->pinned_size = (size_t)(per - per % 4096);
    return SAFELOAD_OK;
}

static safeload_result sl__device_setup(sl__load *L, safeload_error *err) {
    int i, b;
    const char *path0 = L->where;
    if (L->hooks.begin && L->hooks.begin(L->hooks.user, L->n_workers, L->pinned_count) != 0)
        return sl__fail(err, SAFELOAD_HOOK_FAILED, path0, SAFELOAD_NO_OFFSET, "begin", 5,
                        "the begin hook failed (%d workers, %d buffers each)", L->n_workers,
                        L->pinned_count);
    L->begun = 1;                       /* from here on, end() is owed */
    for (i = 0; i < L->n_workers; i++) {
        sl__worker *w = &L->workers[i];
        w->pinned = (void **)sl__calloc(L->alloc, (size_t)L->pinned_count, sizeof(void *));
        w->pinned_busy = (size_t *)sl__calloc(L->alloc, (size_t)L->pinned_count, sizeof(size_t));
        if (!w->pinned || !w->pinned_busy) return SL__OOM(err, path0);
        for (b = 0; b < L->pinned_count; b++) {
            if (L->hooks.pinned_alloc(L->hooks.user, L->pinned_size, &w->pinned[b]) != 0 ||
                !w->pinned[b]) {
                w->pinned[b] = NULL;
                return sl__fail(err, SAFELOAD_HOOK_FAILED, path0, SAFELOAD_NO_OFFSET,
                                "pinned_alloc", 12, "the pinned_alloc hook failed for %llu "
                                "bytes (worker %d, buffer %d)", (sl__ull)L->pinned_size, i, b);
            }
            L->pinned_bytes += L->pinned_size;
            /* uploads start upload_align-aligned in the buffer, so the buffer must be too
               (cudaMallocHost and aclrtMallocHost return page-aligned memory; malloc does not) */
            if (L->upload_align > 1 && (uintptr_t)w->pinned[b] % L->upload_align != 0)
                return sl__fail(err, SAFELOAD_HOOK_FAILED, path0, SAFELOAD_NO_OFFSET,
                                "pinned_alloc", 12, "the pinned_alloc hook returned memory that "
                                "is not upload_align (%llu) aligned (worker %d, buffer %d)",
                                (sl__ull)L->upload_align, i, b);
        }
    }
    return SAFELOAD_OK;
}

/* A wait failed: the error names the tensor (and its file) whose copy the fence was for, the
   first of the task that filled the buffer. */
static void sl__wait_failed(sl__load *L, sl__worker *w, int wid, int b, int rc) {
    const sl__task *t = &L->tasks[w->pinned_busy[b] - 1];
    sl__load_fail(L, SAFELOAD_HOOK_FAILED, t->shard, t->off, sl__task_tensor(L, t, t->off), NULL,
                  "the wait hook failed with %d (worker %d, buffer %d, the copy of this tensor)",
                  rc, wid, b);
}

/* Waits for every copy still running from this worker's buffers. A buffer whose wait fails is
   never reused or freed: its copy may still be reading it. */
static void sl__device_drain(sl__load *L, sl__worker *w, int wid) {
    int b, rc;
    if (!w->pinned_busy) return;
    for (b = 0; b < L->pinned_count; b++) {
        if (!w->pinned_busy[b]) continue;
        if ((rc = L->hooks.wait(L->hooks.user, wid, b)) != 0) {
            sl__wait_failed(L, w, wid, b, rc);
            continue;
        }
        w->pinned_busy[b] = 0;
    }
}

static void sl__worker_free(sl__load *L, sl__worker *w) {
    int b;
    if (w->pinned) {
        for (b = 0; b < L->pinned_count; b++)
            if (w->pinned[b] && !(w->pinned_busy && w->pinned_busy[b]))
                L->hooks.pinned_free(L->hooks.user, w->pinned[b]);
    }
    sl__free(L->alloc, w->pinned);
    sl__free(L->alloc, w->pinned_busy);
    sl__free(L->alloc, w->staging);
    sl__big_free(L->alloc, w->bounce_raw);
#if defined(SL__AIO)
    if (!w->stuck) {                    /* else the kernel may still write them: leaked */
        if (w->aio_on) sl__aio_close(&w->aio, L->alloc);
        sl__big_free(L->alloc, w->slot_raw);
    }
    sl__free(L->alloc, w->slots);
    sl__free(L->alloc, w->free_slots);
#endif
    memset(w, 0, sizeof *w);
}

static int sl__upload(sl__load *L, int wid, int b, const sl__task *t, unsigned char *dev,
                      const unsigned char *pin, uint64_t n, uint64_t src_off) {
    int rc = L->hooks.upload(L->hooks.user, wid, b, dev, pin, (size_t)n);
    if (rc != 0) {
        sl__load_fail(L, SAFELOAD_HOOK_FAILED, t->shard, src_off, sl__task_tensor(L, t, src_off),
                      NULL, "the upload hook failed with %d (%llu bytes, worker %d, buffer %d)",
                      rc, (sl__ull)n, wid, b);
        return 0;
    }
    return 1;
}

/* One task to the device: wait for the buffer's last copy, fill it (reading, and casting from
   cache-sized staging when the dtype changes), start the upload. The next task fills the other
   buffer while this one is copied. */
static int sl__device_task(sl__load *L, sl__worker *w, int wid, const sl__task *t) {
    const sl__seg *s0 = &L->segs[t->seg0];
    const sl__rp *r0 = &L->reqs[s0->req];
    int b = w->next_pinned, staged;
    size_t busy = (size_t)(t - L->tasks) + 1;
    unsigned char *pin;
    uint32_t k;
    w->next_pinned = (b + 1) % L->pinned_count;
    if (w->pinned_busy[b]) {
        int rc = L->hooks.wait(L->hooks.user, wid, b);
        if (rc != 0) {
            sl__wait_failed(L, w, wid, b, rc);
            return 0;
        }
        w->pinned_busy[b] = 0;
    }
    pin = (unsigned char *)w->pinned[b];
    staged = sl__staged(L, t);
    if (t->nseg == 1) {
        uint64_t out = t->len / r0->ssize * r0->dsize;
        if (!r0->cast) {
            if (!sl__io_read(L, w, t, t->off, pin, t->len)) return 0;
        } else if (staged) {
            uint64_t pos = 0, piece = L->staging - L->staging % r0->ssize;
            while (pos < t->len) {
                uint64_t n = SL__MIN(piece, t->len - pos);
                if (!sl__io_read(L, w, t, t->off + pos, w->staging, n)) return 0;
                r0->cast(pin + pos / r0->ssize * r0->dsize, w->staging, (size_t)(n / r0->ssize));
                pos += n;
            }
        } else {
            const unsigned char *src = sl__read_run(L, w, t);
            if (!src) return 0;
            r0->cast(pin, src, (size_t)(t->len / r0->ssize));
        }
        if (!sl__upload(L, wid, b, t, r0->dst + s0->src_pos / r0->ssize * r0->dsize, pin, out,
                        t->off)) return 0;
        w->bytes_written += out;
    } else {
        /* a run of small tensors: fill the buffer, then one upload per stretch of contiguous
           device memory */
        uint64_t opos = 0, start = 0, spos = 0;     /* spos: where the stretch starts in the file */
        if (!t->cast && !t->holes) {   /* back to back: in place */
            if (!sl__io_read(L, w, t, t->off, pin, t->len)) return 0;
        } else {
            const unsigned char *src = sl__read_run(L, w, t);
            if (!src) return 0;
            for (k = 0; k < t->nseg; k++) {
                const sl__seg *s = &L->segs[t->seg0 + k];
                const sl__rp *r = &L->reqs[s->req];
                sl__emit(L, r, pin + opos, src + s->task_pos, s->len);
                opos += s->len / r->ssize * r->dsize;
            }
        }
        opos = 0;
        for (k = 0; k < t->nseg; k++) {
            const sl__seg *s = &L->segs[t->seg0 + k];
            const sl__rp *r = &L->reqs[s->req];
            uint64_t n = s->len / r->ssize * r->dsize;
            unsigned char *dev = r->dst + s->src_pos / r->ssize * r->dsize;
            const sl__seg *nx = k + 1 < t->nseg ? s + 1 : NULL;
            opos += n;
            if (nx) {
                const sl__rp *rn = &L->reqs[nx->req];
                if (rn->dst + nx->src_pos / rn->ssize * rn->dsize == dev + n) continue;
            }
            /* upload [start, opos) of the buffer to the device address where start landed */
            {
                uint64_t len = opos - start;
                if (!sl__upload(L, wid, b, t, dev + n - len, pin + start, len, t->off + spos))
                    return 0;
                w->pinned_busy[b] = busy;   /* from the first copy: a later failure leaves it busy */
                w->bytes_written += len;
            }
            start = opos;
            if (nx) spos = nx->task_pos;
        }
    }
    w->pinned_busy[b] = busy;
    return 1;
}

/* =============================================================================================
   7. WRITER: the reference's byte layout, written atomically
   ========================================================================================== */

typedef struct sl__buf {
    char *p;
    size_t n, cap;
    const safeload_allocator *a;
    int oom;
} sl__buf;

static void sl__put(sl__buf *b, const void *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap && !sl__grow(b->a, (void **)&b->p, &b->cap, b->n + n + 1, 1)) {
        b->oom = 1;
        return;
    }
    if (n) memcpy(b->p + b->n, s, n);       /* s may be NULL when n is 0 */
    b->n += n;
}

static void sl__put_u64(sl__buf *b, uint64_t v) {
    char tmp[24];
    int i = 24;
    do { tmp[--i] = (char)('0' + v % 10); v /= 10; } while (v);
    sl__put(b, tmp + i, (size_t)(24 - i));
}

/* serde_json's string escaping: \" \\ \b \f \n \r \t, other controls as \u00xx (lowercase),
   everything else raw. */
static void sl__put_json_string(sl__buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t i, run = 0;
    sl__put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[6];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        sl__put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
            u[4] = hex[c >> 4]; u[5] = hex[c & 15];
            sl__put(b, u, 6);
            continue;
        }
        sl__put(b, esc, 2);
    }
    sl__put(b, s + run, n - run);
    sl__put(b, "\"", 1);
}

typedef struct sl__save_item {
    const char *name;           /* name, len first (key table) */
    size_t len;
    const safeload_save_tensor *t;
} sl__save_item;

static int sl__save_less(const sl__save_item *x, const sl__save_item *y) {
    if (x->t->dtype != y->t->dtype) return x->t->dtype > y->t->dtype;
    return sl__name_cmp(x->name, x->len, y->name, y->len) < 0;
}

static int sl__kv_less(const safeload_kv *x, const safeload_kv *y) {
    return sl__name_cmp(x->key, x->key_len, y->key, y->key_len) < 0;
}

SL__DEFINE_MSORT(sl__sort_save, sl__save_item, sl__save_less)
SL__DEFINE_MSORT(sl__sort_kv, safeload_kv, sl__kv_less)

typedef struct sl__plan {
    sl__buf head;               /* 8-byte length + padded JSON */
    sl__save_item *items;
    size_t count;
    uint64_t data_size;
    safeload_allocator alloc;
} sl__plan;

static void sl__plan_free(sl__plan *p) {
    sl__free(&p->alloc, p->head.p);
    sl__free(&p->alloc, p->items);
    p->head.p = NULL;
    p->items = NULL;
}

/* Validates the tensors as the reference's writer does and lays out the header. */
static safeload_result sl__plan_make(sl__plan *pl, const char *path,
                                     const safeload_save_tensor *ts, size_t n,
                                     const safeload_save_desc *desc, safeload_error *err) {
    size_t i, m = desc ? desc->metadata_count : 0;
    safeload_kv *kvs = NULL, *kvtmp = NULL;
    sl__save_item *tmp = NULL;
    sl__table tab;
    int64_t dup;
    uint64_t off = 0, len;
    safeload_result r = SAFELOAD_OK;
    memset(pl, 0, sizeof *pl);
    memset(&tab, 0, sizeof tab);
    if (desc) pl->alloc = desc->allocator;
    pl->head.a = &pl->alloc;
    if (!sl__allocator_ok(&pl->alloc))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "an allocator needs both alloc and free");
    if (desc && (desc->flags & ~(uint32_t)(SAFELOAD_SAVE_EMPTY_METADATA |  /* a newer header's? */
                                           SAFELOAD_SAVE_ALIGN_DATA)))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "unknown flags 0x%lx", (unsigned long)desc->flags);
    if ((n && !ts) || (m && !desc->metadata))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "tensors or metadata is NULL");
    pl->items = (sl__save_item *)sl__malloc_n(&pl->alloc, n, sizeof *pl->items);
    tmp = (sl__save_item *)sl__malloc_n(&pl->alloc, n, sizeof *tmp);
    if (!pl->items || !tmp) { r = SL__OOM(err, path); goto done; }
    pl->count = n;
    for (i = 0; i < n; i++) {
        const safeload_save_tensor *t = &ts[i];
        uint64_t numel = 1, bits;
        uint32_t k;
        if (!t->name || (unsigned)t->dtype == 0 || (unsigned)t->dtype >= SAFELOAD_DTYPE_COUNT ||
            (t->rank && !t->shape) || (t->nbytes && !t->data)) {
            r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, t->name,
                         t->name ? strlen(t->name) : 0,
                         "tensor %llu: NULL name, shape or data, or an unknown dtype",
                         (sl__ull)i);
            goto done;
        }
        pl->items[i].name = t->name;
        pl->items[i].len = strlen(t->name);
        pl->items[i].t = t;
        /* names the parser would refuse: not UTF-8, or the metadata key itself */
        if (sl__utf8_valid_up_to((const unsigned char *)t->name, pl->items[i].len) !=
                pl->items[i].len ||
            (pl->items[i].len == 12 && memcmp(t->name, "__metadata__", 12) == 0)) {
            r = sl__fail(err, SAFELOAD_INVALID_NAME, path, SAFELOAD_NO_OFFSET, t->name,
                         pl->items[i].len, "a tensor cannot be named \"__metadata__\" and "
                         "names must be UTF-8");
            goto done;
        }
        bits = sl__dtype_bits[t->dtype];
        for (k = 0; k < t->rank; k++) {
            if (t->shape[k] && numel > UINT64_MAX / t->shape[k]) {
                r = sl__fail(err, SAFELOAD_OVERFLOW, path, SAFELOAD_NO_OFFSET, t->name,
                             strlen(t->name), "the element count overflows 64 bits");
                goto done;
            }
            numel *= t->shape[k];
        }
        if (numel > UINT64_MAX / bits) {
            r = sl__fail(err, SAFELOAD_OVERFLOW, path, SAFELOAD_NO_OFFSET, t->name,
                         strlen(t->name), "the size in bits overflows 64 bits");
            goto done;
        }
        if ((numel * bits) % 8) {
            r = sl__fail(err, SAFELOAD_MISALIGNED_SUBBYTE, path, SAFELOAD_NO_OFFSET, t->name,
                         strlen(t->name), "not a whole number of bytes");
            goto done;
        }
        if (numel * bits / 8 != t->nbytes) {
            r = sl__fail(err, SAFELOAD_SIZE_MISMATCH, path, SAFELOAD_NO_OFFSET, t->name,
                         strlen(t->name), "nbytes is %llu, shape and dtype need %llu",
                         (sl__ull)t->nbytes, (sl__ull)(numel * bits / 8));
            goto done;
        }
        if ((uint64_t)(size_t)t->nbytes != t->nbytes) {    /* 32-bit: no such buffer exists */
            r = sl__fail(err, SAFELOAD_OVERFLOW, path, SAFELOAD_NO_OFFSET, t->name,
                         strlen(t->name), "%llu bytes are more than this platform's address "
                         "space", (sl__ull)t->nbytes);
            goto done;
        }
    }
    if (!sl__table_build(&tab, SL__KEYS(pl->items, sl__save_item), n, 0x736166656c6f6164ULL,
                         (uint64_t)(uintptr_t)pl, &pl->alloc, &dup)) {
        r = SL__OOM(err, path);
        goto done;
    }
    if (dup >= 0) {
        r = sl__fail(err, SAFELOAD_DUPLICATE_KEY, path, SAFELOAD_NO_OFFSET, pl->items[dup].name,
                     pl->items[dup].len, "tensor name appears twice");
        goto done;
    }
    sl__sort_save(pl->items, tmp, n);

    if (m) {
        kvs = (safeload_kv *)sl__malloc_n(&pl->alloc, m, sizeof *kvs);
        kvtmp = (safeload_kv *)sl__malloc_n(&pl->alloc, m, sizeof *kvtmp);
        if (!kvs || !kvtmp) { r = SL__OOM(err, path); goto done; }
        for (i = 0; i < m; i++) {
            kvs[i] = desc->metadata[i];
            if (!kvs[i].key || !kvs[i].value) {
                r = sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                             "metadata entry %llu has a NULL key or value", (sl__ull)i);
                goto done;
            }
            if (sl__utf8_valid_up_to((const unsigned char *)kvs[i].key, kvs[i].key_len) !=
                    kvs[i].key_len ||
                sl__utf8_valid_up_to((const unsigned char *)kvs[i].value, kvs[i].value_len) !=
                    kvs[i].value_len) {
                r = sl__fail(err, SAFELOAD_INVALID_UTF8, path, SAFELOAD_NO_OFFSET, kvs[i].key,
                             kvs[i].key_len, "metadata entry %llu is not UTF-8", (sl__ull)i);
                goto done;
            }
        }
        sl__sort_kv(kvs, kvtmp, m);
        for (i = 1; i < m; i++)
            if (sl__name_cmp(kvs[i].key, kvs[i].key_len, kvs[i - 1].key, kvs[i - 1].key_len) == 0) {
                r = sl__fail(err, SAFELOAD_DUPLICATE_KEY, path, SAFELOAD_NO_OFFSET, kvs[i].key,
                             kvs[i].key_len, "metadata key appears twice");
                goto done;
            }
    }

    sl__put(&pl->head, "\0\0\0\0\0\0\0\0{", 9);
    if (m || (desc && (desc->flags & SAFELOAD_SAVE_EMPTY_METADATA))) {
        sl__put(&pl->head, "\"__metadata__\":{", 16);
        for (i = 0; i < m; i++) {
            if (i) sl__put(&pl->head, ",", 1);
            sl__put_json_string(&pl->head, kvs[i].key, kvs[i].key_len);
            sl__put(&pl->head, ":", 1);
            sl__put_json_string(&pl->head, kvs[i].value, kvs[i].value_len);
        }
        sl__put(&pl->head, "}", 1);
        if (n) sl__put(&pl->head, ",", 1);
    }
    for (i = 0; i < n; i++) {
        const safeload_save_tensor *t = pl->items[i].t;
        uint32_t k;
        if (i) sl__put(&pl->head, ",", 1);
        sl__put_json_string(&pl->head, pl->items[i].name, pl->items[i].len);
        sl__put(&pl->head, ":{\"dtype\":\"", 11);
        sl__put(&pl->head, sl__dtype_names[t->dtype], strlen(sl__dtype_names[t->dtype]));
        sl__put(&pl->head, "\",\"shape\":[", 11);
        for (k = 0; k < t->rank; k++) {
            if (k) sl__put(&pl->head, ",", 1);
            sl__put_u64(&pl->head, t->shape[k]);
        }
        sl__put(&pl->head, "],\"data_offsets\":[", 18);
        sl__put_u64(&pl->head, off);
        sl__put(&pl->head, ",", 1);
        sl__put_u64(&pl->head, off + t->nbytes);
        sl__put(&pl->head, "]}", 2);
        if (t->nbytes > UINT64_MAX - off) {
            r = sl__fail(err, SAFELOAD_OVERFLOW, path, SAFELOAD_NO_OFFSET, NULL, 0,
                         "the data section overflows 64 bits");
            goto done;
        }
        off += t->nbytes;
    }
    sl__put(&pl->head, "}", 1);
    while (!pl->head.oom && (pl->head.n - 8) % 8) sl__put(&pl->head, " ", 1);
    if (desc && (desc->flags & SAFELOAD_SAVE_ALIGN_DATA)) {   /* 8-byte steps to 4096 */
        static const char sp[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
        while (!pl->head.oom && pl->head.n % 4096) sl__put(&pl->head, sp, 8);
    }
    if (pl->head.oom) { r = SL__OOM(err, path); goto done; }
    len = pl->head.n - 8;
    if (len > SL__MAX_HEADER) {
        r = sl__fail(err, SAFELOAD_HEADER_TOO_LARGE, path, SAFELOAD_NO_OFFSET, NULL, 0,
                     "the header would be %llu bytes, over the limit of 100000000",
                     (sl__ull)len);
        goto done;
    }
    for (i = 0; i < 8; i++) pl->head.p[i] = (char)(len >> (8 * i) & 0xFF);
    pl->data_size = off;
done:
    sl__table_free(&tab, &pl->alloc);
    sl__free(&pl->alloc, tmp);
    sl__free(&pl->alloc, kvs);
    sl__free(&pl->alloc, kvtmp);
    if (r != SAFELOAD_OK) sl__plan_free(pl);
    return r;
}

SL__DEF void safeload_free(void *p, const safeload_allocator *a) { sl__free(a, p); }

SL__DEF safeload_result safeload_serialize(void **out, size_t *out_size,
                                           const safeload_save_tensor *ts, size_t n,
                                           const safeload_save_desc *desc,
                                           safeload_error *err) {
    sl__plan pl;
    safeload_result r;
    unsigned char *buf;
    uint64_t total;
    size_t i, at;
    sl__clear_error(err);
    if (out) *out = NULL;
    if (out_size) *out_size = 0;
    if (!out || !out_size)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "<memory>", SAFELOAD_NO_OFFSET, NULL, 0,
                        "out or out_size is NULL");
    if ((r = sl__plan_make(&pl, "<memory>", ts, n, desc, err)) != SAFELOAD_OK) return r;
    total = (uint64_t)pl.head.n + pl.data_size;
    if (total < pl.data_size || total > (uint64_t)SIZE_MAX) {
        int wrapped = total < pl.data_size;
        sl__plan_free(&pl);
        if (wrapped)
            return sl__fail(err, SAFELOAD_OVERFLOW, "<memory>", SAFELOAD_NO_OFFSET, NULL, 0,
                            "the file size overflows 64 bits");
        return sl__fail(err, SAFELOAD_OVERFLOW, "<memory>", SAFELOAD_NO_OFFSET, NULL, 0,
                        "%llu bytes do not fit in memory", (sl__ull)total);
    }
    buf = (unsigned char *)sl__malloc(&pl.alloc, (size_t)total);
    if (!buf) { sl__plan_free(&pl); return SL__OOM(err, "<memory>"); }
    memcpy(buf, pl.head.p, pl.head.n);
    at = pl.head.n;
    for (i = 0; i < pl.count; i++) {
        const safeload_save_tensor *t = pl.items[i].t;
        if (t->nbytes) memcpy(buf + at, t->data, (size_t)t->nbytes);
#if SL__SWAP
        sl__swap_copy(buf + at, buf + at, (size_t)t->nbytes, sl__swap_unit(t->dtype));
#endif
        at += (size_t)t->nbytes;
    }
    sl__plan_free(&pl);
    *out = buf;
    *out_size = (size_t)total;
    return SAFELOAD_OK;
}

/* ---- atomic file writing ---- */

#if defined(SL__WINDOWS)
typedef HANDLE sl__wfile;
#else
typedef int sl__wfile;
#endif
#if defined(ENOMEM)
#  define SL__ENOMEM ENOMEM
#else
#  define SL__ENOMEM 12
#endif

/* Length of path's directory part, its last separator included (0: none). */
static size_t sl__dir_len(const char *path) {
    size_t k, dir = 0;
    for (k = 0; path[k]; k++)
        if (path[k] == '/' || (SL__WINDOWS_PATHS && path[k] == '\\')) dir = k + 1;
    return dir;
}

/* What a replacement keeps of the file it replaces. */
typedef struct sl__keep {
    int mode;                   /* permission bits; -1: a new file, the process's default */
    long uid, gid;              /* owner, restored where allowed (root, or one's own group) */
} sl__keep;

/* The file a save replaces, in *out (allocated), and what the new one keeps of it. A symlink
   is followed to the file it names, so the link survives and that file gets the new bytes, as
   writing in place would give; the replacement keeps the old file's permissions and, where the
   caller may set it, its owner; a file the caller may not write is refused, as opening it for
   writing would be. Returns 0 or an errno-style code. (Windows: path as given.) */
static int sl__save_target(const char *path, const safeload_allocator *a, char **out,
                           sl__keep *keep) {
    size_t n = strlen(path);
    char *cur = (char *)sl__malloc(a, n + 1);
#if !defined(SL__WINDOWS)
    int hops;
#endif
    keep->mode = -1;
    keep->uid = keep->gid = -1;
    *out = NULL;
    if (!cur) return SL__ENOMEM;
    memcpy(cur, path, n + 1);
#if !defined(SL__WINDOWS)
    for (hops = 0;; hops++) {
        struct stat st;
        size_t cap, dir;
        ssize_t got;
        char *link, *next;
        if (lstat(cur, &st) != 0) {
            /* a name the file system cannot hold would fail only at the final rename, after
               every byte was written: say so now */
            if (errno == ENAMETOOLONG) { sl__free(a, cur); return ENAMETOOLONG; }
            break;                                    /* nothing there yet: a new file */
        }
        if (!S_ISLNK(st.st_mode)) {
            if (S_ISREG(st.st_mode)) {
                int fd;
                do fd = open(cur, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
                while (fd < 0 && errno == EINTR);
                if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
                    int e = errno;
                    sl__free(a, cur);
                    return e;
                }
                if (fd >= 0) close(fd);
                keep->mode = (int)(st.st_mode & 0777);
                keep->uid = (long)st.st_uid;
                keep->gid = (long)st.st_gid;
            }
            break;
        }
        if (hops == 40) { sl__free(a, cur); return ELOOP; }
        /* The kernel's protected_symlinks rule, which a write through the link would meet: in
           a sticky world-writable directory (/tmp), follow only a link the caller or the
           directory's owner made, so another user's link cannot aim a save at our files. */
        dir = sl__dir_len(cur);
        {
            struct stat ds;
            char c = cur[dir];
            int sr;
            cur[dir] = 0;
            sr = stat(dir ? cur : ".", &ds);
            cur[dir] = c;
            if (sr == 0 && (ds.st_mode & 01000) && (ds.st_mode & 0002) &&
                st.st_uid != geteuid() && st.st_uid != ds.st_uid) {
                sl__free(a, cur);
                return EACCES;
            }
        }
        /* st_size is the link's length on most file systems, 0 on some: grow until it fits */
        for (cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 256;; cap *= 2) {
            if (!(link = (char *)sl__malloc(a, cap))) { sl__free(a, cur); return SL__ENOMEM; }
            got = readlink(cur, link, cap);
            if (got < 0) { int e = errno; sl__free(a, link); sl__free(a, cur); return e ? e : EIO; }
            if ((size_t)got < cap) break;
            sl__free(a, link);
        }
        /* a relative link is relative to the directory that holds it */
        if (link[0] == '/') dir = 0;
        if (!(next = (char *)sl__malloc(a, dir + (size_t)got + 1))) {
            sl__free(a, link);
            sl__free(a, cur);
            return SL__ENOMEM;
        }
        memcpy(next, cur, dir);
        memcpy(next + dir, link, (size_t)got);
        next[dir + (size_t)got] = 0;
        sl__free(a, link);
        sl__free(a, cur);
        cur = next;
    }
#endif
    *out = cur;
    return 0;
}

static int sl__write_all(sl__wfile f, const void *data, uint64_t n) {
    const unsigned char *p = (const unsigned char *)data;
    while (n) {
        size_t chunk = (size_t)SL__MIN(n, (uint64_t)SL__READ_MAX);
#if defined(SL__WINDOWS)
        DWORD put = 0;
        if (!WriteFile(f, p, (DWORD)chunk, &put, NULL) || put == 0) return 0;
#else
        ssize_t put = write(f, p, chunk);
        if (put < 0 && errno == EINTR) continue;
        if (put == 0) errno = EIO;          /* no progress and no reason: call it an I/O error */
        if (put <= 0) return 0;
#endif
        p += put;
        n -= (uint64_t)put;
    }
    return 1;
}

/* Saving, in the order its data flows: the plan (header, layout) and the target (symlinks
   followed, its owner and mode noted); a fresh temporary file beside it; the bytes; flush,
   close and rename over the target (or remove the temporary); the error, if any; release.
   The target is replaced whole or not at all. */
typedef struct sl__save {
    const char *path;                   /* as the caller named it, for errors */
    sl__plan pl;
    char *target;                       /* the file to replace: path with symlinks followed */
    char *tmp;                          /* the temporary beside it */
    size_t tlen, dir;                   /* target's length, its directory's */
    sl__keep keep;                      /* the target's owner and mode, where it exists */
    sl__wfile f;                        /* the temporary, open for writing */
#if defined(SL__WINDOWS)
    wchar_t *wtmp, *wpath;
#endif
    int ok, why, oom, renaming;         /* written and replaced; else the error, and whether
                                           memory or the rename failed */
} sl__save;

/* The target to replace: a file (not a directory, device or pipe) whose size fits. */
static safeload_result sl__save_target_of(sl__save *s, safeload_error *err) {
    const char *path = s->path;
    if (sl__os_is_special(path, &s->pl.alloc))
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "the target is a directory, device or pipe, not a file to replace");
    if (s->pl.data_size > UINT64_MAX - s->pl.head.n)
        return sl__fail(err, SAFELOAD_OVERFLOW, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "the file size overflows 64 bits");
    s->why = sl__save_target(path, &s->pl.alloc, &s->target, &s->keep);
    if (s->why || !s->target) {             /* !target alone is not reached */
        if (!s->why || s->why == SL__ENOMEM) return SL__OOM(err, path);
        return sl__fail(err, SAFELOAD_IO_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot replace the target: %s (error %d); it is untouched",
                        sl__os_why(s->why, "error"), s->why);
    }
    return SAFELOAD_OK;
}

/* A fresh name beside the target, so the final rename stays on one file system: the
   target's name + ".tmp-" + 12 random characters, or, where that name would be too long
   (a name near the file system's limit), ".tmp-" + 12 characters in the same directory. */
static safeload_result sl__save_create(sl__save *s, safeload_error *err) {
    const char *target = s->target;
    size_t at, i, k, tlen, dir;
    int made = 0, beside;
    uint64_t salt;
    char *tmp;
    tlen = s->tlen = strlen(target);
    dir = s->dir = sl__dir_len(target);
    tmp = s->tmp = (char *)sl__malloc(&s->pl.alloc, tlen + 32);
    if (!tmp) return SL__OOM(err, s->path);
    salt = sl__entropy(tmp);
    /* 255 is the usual limit of one name (bytes on POSIX, UTF-16 units on Windows, never more
       than the UTF-8 bytes), and file systems differ in the error they give past it */
    beside = tlen - dir + 17 > 255;
    for (k = 0; k < 64 && !made; k++) {
        static const char digits[] = "0123456789abcdefghijklmnopqrstuv";
        uint64_t x = salt + k * 0x9E3779B97F4A7C15ULL;
        at = beside ? dir : tlen;
        memcpy(tmp, target, at);
        memcpy(tmp + at, ".tmp-", 5);
        for (i = 0; i < 12; i++) { tmp[at + 5 + i] = digits[x & 31]; x >>= 5; }
        tmp[at + 17] = 0;
#if defined(SL__WINDOWS)
        sl__free(&s->pl.alloc, s->wtmp);
        s->wtmp = sl__widen(tmp, &s->pl.alloc);
        if (!s->wtmp) {     /* out of memory, or a path that is not UTF-8 */
            s->why = 1113;
            s->oom = sl__utf8_valid_up_to((const unsigned char *)tmp, strlen(tmp)) ==
                     strlen(tmp);
            break;
        }
        s->f = CreateFileW(s->wtmp, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL,
                           NULL);
        if (s->f != INVALID_HANDLE_VALUE) { made = 1; break; }
        s->why = (int)GetLastError();
        if (s->why == ERROR_FILENAME_EXCED_RANGE && !beside && dir < tlen) beside = 1;
        else if (s->why != ERROR_FILE_EXISTS) break;
#else
        s->f = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (s->f >= 0) { made = 1; break; }
        s->why = errno;
        if (s->why == ENAMETOOLONG && !beside && dir < tlen) beside = 1;
        else if (s->why != EEXIST) break;
#endif
    }
    if (!made)
        return s->oom ? SL__OOM(err, s->path)
                      : sl__fail(err, SAFELOAD_IO_ERROR, s->path, SAFELOAD_NO_OFFSET, NULL, 0,
                                 "cannot create a temporary file beside the target: %s "
                                 "(error %d)", sl__os_why(s->why, "error"), s->why);
#if !defined(SL__WINDOWS)
    /* the replacement keeps the old file's owner where allowed, then its permissions (a
       private checkpoint stays private; chown first, as it may clear mode bits). A failure
       leaves the defaults, which is no reason to fail the save. */
    if (s->keep.mode >= 0) {
        if (fchown(s->f, (uid_t)s->keep.uid, (gid_t)s->keep.gid) != 0) { /* not root: ours */ }
        (void)fchmod(s->f, (mode_t)s->keep.mode);
    }
#endif
    return SAFELOAD_OK;
}

/* The header, then tensors under 1 MiB through a buffer written 4 MiB at a time; bigger
   tensors straight from the caller. Big writes matter after the save too: the page cache
   keeps a file in folios as large as the writes that made it (ext4, Linux 6.x), and copying
   out of 4-64 KiB folios was 15 % slower than out of large ones (a 25,000-tensor file,
   384 MiB, loaded on 2 threads). Sets ok, or why (and oom). */
static void sl__save_write(sl__save *s) {
    sl__buf wb;
    size_t i;
    int ok;
    memset(&wb, 0, sizeof wb);
    wb.a = &s->pl.alloc;
    ok = sl__write_all(s->f, s->pl.head.p, s->pl.head.n);
    for (i = 0; ok && i < s->pl.count; i++) {
        const safeload_save_tensor *t = s->pl.items[i].t;
        if (t->nbytes < ((uint64_t)1 << 20)) {
            sl__put(&wb, t->data, (size_t)t->nbytes);
            if (wb.oom) ok = 0;
#if SL__SWAP
            if (ok) {
                unsigned char *put = (unsigned char *)wb.p + wb.n - (size_t)t->nbytes;
                sl__swap_copy(put, put, (size_t)t->nbytes, sl__swap_unit(t->dtype));
            }
#endif
            if (ok && wb.n >= (4u << 20)) { ok = sl__write_all(s->f, wb.p, wb.n); wb.n = 0; }
        } else {
            if (wb.n) { ok = sl__write_all(s->f, wb.p, wb.n); wb.n = 0; }
#if SL__SWAP
            if (ok && sl__swap_unit(t->dtype) > 1) {
                /* little-endian from host order, through the buffer 1 MiB at a time */
                const unsigned char *src = (const unsigned char *)t->data;
                uint64_t pos, piece;
                for (pos = 0; ok && pos < t->nbytes; pos += piece) {
                    piece = SL__MIN(t->nbytes - pos, (uint64_t)(1u << 20));
                    wb.n = 0;
                    sl__put(&wb, src + pos, (size_t)piece);
                    if (wb.oom) { ok = 0; break; }
                    sl__swap_copy(wb.p, wb.p, (size_t)piece, sl__swap_unit(t->dtype));
                    ok = sl__write_all(s->f, wb.p, wb.n);
                }
                wb.n = 0;
                continue;
            }
#endif
            if (ok) ok = sl__write_all(s->f, t->data, t->nbytes);
        }
    }
    if (ok && wb.n) ok = sl__write_all(s->f, wb.p, wb.n);
#if defined(SL__WINDOWS)
    s->why = ok ? 0 : (int)GetLastError();  /* before a user's free() can change it */
#else
    s->why = ok ? 0 : errno;
#endif
    sl__free(&s->pl.alloc, wb.p);
    s->oom = wb.oom;
    s->ok = ok;
}

/* The bytes on the disk, the temporary closed and renamed over the target; after a failure
   (of this or the writing), the temporary removed. */
static void sl__save_commit(sl__save *s) {
#if defined(SL__WINDOWS)
    if (s->ok && !(s->ok = FlushFileBuffers(s->f) != 0)) s->why = (int)GetLastError();
    if (CloseHandle(s->f) == 0 && s->ok) { s->ok = 0; s->why = (int)GetLastError(); }
    s->f = INVALID_HANDLE_VALUE;
    if (s->ok) {
        s->wpath = sl__widen(s->target, &s->pl.alloc);
        s->ok = s->wpath && MoveFileExW(s->wtmp, s->wpath, MOVEFILE_REPLACE_EXISTING |
                                                            MOVEFILE_WRITE_THROUGH) != 0;
        if (!s->ok)
            s->why = s->wpath ? (int)GetLastError() : 0, s->oom = !s->wpath,
            s->renaming = !s->oom;
    }
    if (!s->ok) DeleteFileW(s->wtmp);
#else
    char *target = s->target;
    size_t dir = s->dir;
    if (s->ok) {
        int rc;
        while ((rc = fsync(s->f)) != 0 && errno == EINTR) {}
        /* EIO, ENOSPC, EDQUOT: the bytes may never reach the disk, so the target is left
           alone. EINVAL: a file system that cannot sync; the writes themselves succeeded. */
        if (rc != 0 && errno != EINVAL) { s->ok = 0; s->why = errno; }
    }
    if (close(s->f) != 0 && s->ok) { s->ok = 0; s->why = errno; }
    s->f = -1;
    if (s->ok && rename(s->tmp, target) != 0) { s->ok = 0; s->why = errno; }
    if (!s->ok) unlink(s->tmp);
    if (s->ok) {
        /* The rename lives in the directory: sync it too, so that after a crash the name
           holds the new bytes rather than the old file (MOVEFILE_WRITE_THROUGH on Windows).
           Best effort: the target is already replaced, so a failure here is no error. */
        char c = target[dir];
        int dfd;
        target[dir] = 0;
        do dfd = open(dir ? target : ".", O_RDONLY | O_CLOEXEC);
        while (dfd < 0 && errno == EINTR);
        target[dir] = c;
        if (dfd >= 0) {
            while (fsync(dfd) != 0 && errno == EINTR) {}
            close(dfd);
        }
    }
#endif
}

/* What failed, if anything, for the caller; the target is untouched whenever it did. */
static safeload_result sl__save_report(const sl__save *s, safeload_error *err) {
    const char *path = s->path;
    int why = s->why;
    if (s->ok) return SAFELOAD_OK;
    if (s->oom)
        return sl__fail(err, SAFELOAD_OUT_OF_MEMORY, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "out of memory while writing; the target is untouched");
    if (s->renaming && (why == 5 || why == 32))
        return sl__fail(err, SAFELOAD_IO_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                        "cannot replace the target (error %d): it is read-only, or open "
                        "(Windows does not replace an open file, even one this process "
                        "opened: close it first); the target is untouched", why);
    return sl__fail(err, SAFELOAD_IO_ERROR, path, SAFELOAD_NO_OFFSET, NULL, 0,
                    "writing or renaming the temporary file failed: %s (error %d); the target "
                    "is untouched", sl__os_why(why, "error"), why);
}

SL__DEF safeload_result safeload_save(const char *path, const safeload_save_tensor *ts,
                                      size_t n, const safeload_save_desc *desc,
                                      safeload_error *err) {
    sl__save s;
    safeload_result r;
    sl__clear_error(err);
    if (!path)
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "path is NULL");
    if (!path[0])
        return sl__fail(err, SAFELOAD_INVALID_ARGUMENT, "", SAFELOAD_NO_OFFSET, NULL, 0,
                        "path is empty");
    memset(&s, 0, sizeof s);
    s.path = path;
#if defined(SL__WINDOWS)
    s.f = INVALID_HANDLE_VALUE;
#else
    s.f = -1;
#endif
    if ((r = sl__plan_make(&s.pl, path, ts, n, desc, err)) != SAFELOAD_OK) return r;
    if ((r = sl__save_target_of(&s, err)) == SAFELOAD_OK &&
        (r = sl__save_create(&s, err)) == SAFELOAD_OK) {
        sl__save_write(&s);
        sl__save_commit(&s);
        r = sl__save_report(&s, err);
    }
#if defined(SL__WINDOWS)
    sl__free(&s.pl.alloc, s.wtmp);
    sl__free(&s.pl.alloc, s.wpath);
#endif
    sl__free(&s.pl.alloc, s.tmp);
    sl__free(&s.pl.alloc, s.target);
    sl__plan_free(&s.pl);
    return r;
}

#endif /* SAFELOAD_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the safeload.h authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
In jurisdictions that recognize copyright laws, the author or authors of this
software dedicate any and all copyright interest in the software to the public
domain. We make this dedication for the benefit of the public at large and to
the detriment of our heirs and successors. We intend this dedication to be an
overt act of relinquishment in perpetuity of all present and future rights to
this software under copyright law.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
------------------------------------------------------------------------------
*/
