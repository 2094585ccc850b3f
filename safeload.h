/* safeload.h - v0.1.0 - strict, fast safetensors loading in one C header.

   Do this:
       #define SAFELOAD_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation.

       #include ...
       #define SAFELOAD_IMPLEMENTATION
       #include "safeload.h"

   What it does
       - parses a safetensors header with exactly the reference implementation's rules (and a
         few stricter ones), fast enough that a 100,000-tensor header is a few milliseconds;
       - O(1) tensor lookup by name, metadata lookup, missing/unexpected key reports;
       - loads tensors with a worker pool, coalescing small tensors and splitting big ones,
         casting between F32/F16/BF16 (and FP8/F64 upcasts) while reading, with SIMD kernels
         that give bit-identical results on every path;
       - sharded checkpoints (model.safetensors.index.json);
       - device upload (CUDA, Ascend, anything) through hooks you supply;
       - writes files byte-identical to the reference writer.

   Compile-time options (define before including the implementation)
       SAFELOAD_STATIC            make every function static (private to one translation unit)
       SAFELOAD_MALLOC(sz)        \
       SAFELOAD_REALLOC(p,sz)      > define all three or none (default: libc)
       SAFELOAD_FREE(p)           /
       SAFELOAD_ASSERT(x)         internal sanity checks (default: assert; never on file data)
       SAFELOAD_NO_THREADS        no worker pool: every load runs on the calling thread
       SAFELOAD_NO_SIMD           scalar cast kernels only
       SAFELOAD_NO_WEAK_HOOKS     do not declare the named device hooks as weak references

   Errors
       Every fallible call returns a safeload_result (SAFELOAD_OK == 0) and, when given a
       safeload_error*, fills it with a stable id (safeload_result_id), the byte offset in the
       file where the problem is, the file, the tensor name and a short message. The library
       never prints, never aborts on bad input, and frees everything it allocated on failure.

   See README.md for the full manual. License: MIT or Unlicense, at the end of this file.
*/
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

/* "F32" for SAFELOAD_F32; NULL for values outside the enum. */
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
    X(OVERFLOW,               "tensor size overflows 64-bit arithmetic") \
    X(MISALIGNED_SUBBYTE,     "sub-byte tensor does not end on a byte boundary") \
    X(SIZE_MISMATCH,          "tensor byte range does not match its shape and dtype") \
    X(INCOMPLETE_BUFFER,      "data section does not end exactly at the end of the file") \
    X(DUPLICATE_KEY,          "duplicate tensor name or metadata key") \
    X(INVALID_NAME,           "tensor name contains a NUL character") \
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
    X(HOOK_FAILED,            "a device hook reported an error")

typedef enum safeload_result {
#define SAFELOAD__RESULT_ENUM(id, msg) SAFELOAD_##id,
    SAFELOAD_RESULT_TABLE(SAFELOAD__RESULT_ENUM)
#undef SAFELOAD__RESULT_ENUM
    SAFELOAD_RESULT_COUNT
} safeload_result;

#define SAFELOAD_NO_OFFSET UINT64_MAX

/* Filled in by every call that takes one (may be NULL). Fixed-size so that reporting an error
   can never fail; long names are truncated. */
typedef struct safeload_error {
    safeload_result code;
    uint64_t offset;        /* byte offset in `file`, or SAFELOAD_NO_OFFSET */
    char file[512];         /* path, "<memory>" or the reader's name; "" when no file */
    char tensor[256];       /* tensor name, metadata key or hook name; "" when none */
    char message[256];      /* what went wrong, with the numbers */
} safeload_error;

SAFELOAD_API const char *safeload_result_id(safeload_result r);      /* "INVALID_JSON" */
SAFELOAD_API const char *safeload_result_message(safeload_result r); /* the table's text */

/* ---------------------------------------------------------------------------------------------
   Allocation. Zero = the compile-time allocator (SAFELOAD_MALLOC or libc). realloc is optional.
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
    void (*close)(void *user);          /* optional; called by safeload_close */
    uint64_t size;                      /* total bytes */
    void *user;
    const char *name;                   /* optional, used in errors */
} safeload_reader;

typedef struct safeload_open_desc {
    safeload_allocator allocator;
    uint64_t hash_seed;                 /* 0 = a per-file seed from address and time */
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

/* path is UTF-8 (converted to UTF-16 on Windows). */
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

/* Read a whole tensor's stored bytes into dst (synchronous, no cast). */
SAFELOAD_API safeload_result safeload_read(const safeload_file *file,
                                           const safeload_tensor *tensor, void *dst,
                                           size_t dst_size, safeload_error *err);

/* Zero-copy view of a tensor in a read-only mapping of the file (memory sources: a pointer into
   the caller's buffer). *alignment receives the largest power of two (up to 4096) that divides
   the address. The pointer stays valid until safeload_close. Not for reader sources. */
SAFELOAD_API safeload_result safeload_view(safeload_file *file, const safeload_tensor *tensor,
                                           const void **data, size_t *alignment,
                                           safeload_error *err);

/* ---------------------------------------------------------------------------------------------
   Key check: which of the names a program expects are missing, and which names in the
   checkpoint it did not expect. O(expected + tensors).
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
   Supported: every pair among F32, F16, BF16 (same dtype = copy); F8_E4M3 and F8_E5M2 to
   F32/F16/BF16; F64 <-> F32. The bits are the same on every SIMD path and under every
   MXCSR/FPCR setting (README: "The bit contract").
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
    SAFELOAD_SIMD_AVX512,       /* AVX-512 F + BW */
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

/* threads counts the calling thread: a pool of n runs n-1 helper threads. 0 = default. */
SAFELOAD_API safeload_result safeload_pool_create(safeload_pool **out, int threads,
                                                  safeload_error *err);
SAFELOAD_API void safeload_pool_destroy(safeload_pool *pool);
SAFELOAD_API int safeload_pool_threads(const safeload_pool *pool);
/* SAFELOAD_NUM_THREADS if set (1..256), else the online CPU count capped at 8. */
SAFELOAD_API int safeload_default_threads(void);

/* ---------------------------------------------------------------------------------------------
   Models: one file, or shards with model.safetensors.index.json
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_model safeload_model;

enum {
    SAFELOAD_MODEL_STRICT = 1u << 0     /* a shard tensor the index does not list is an error */
};

typedef struct safeload_model_desc {
    safeload_open_desc open;
    int threads;                        /* shard headers are parsed in parallel; 0 = default */
    safeload_pool *pool;
    uint32_t flags;                     /* SAFELOAD_MODEL_* */
} safeload_model_desc;

/* path: a .safetensors file, an index .json, or a directory holding
   model.safetensors.index.json (or exactly one .safetensors file). */
SAFELOAD_API safeload_result safeload_model_open(safeload_model **out, const char *path,
                                                 const safeload_model_desc *desc,
                                                 safeload_error *err);
/* Wrap already opened files (taking ownership, also on failure); no index. */
SAFELOAD_API safeload_result safeload_model_from_files(safeload_model **out,
                                                       safeload_file **files, size_t count,
                                                       const safeload_model_desc *desc,
                                                       safeload_error *err);
SAFELOAD_API void safeload_model_close(safeload_model *model);
SAFELOAD_API size_t safeload_model_shard_count(const safeload_model *model);
SAFELOAD_API safeload_file *safeload_model_shard(const safeload_model *model, size_t i);
/* All tensors: shards in file-name order, tensors in data-offset order. */
SAFELOAD_API size_t safeload_model_tensor_count(const safeload_model *model);
SAFELOAD_API const safeload_tensor *safeload_model_tensor_at(const safeload_model *model,
                                                             size_t i, size_t *shard);
SAFELOAD_API const safeload_tensor *safeload_model_find(const safeload_model *model,
                                                        const char *name, size_t *shard);
SAFELOAD_API size_t safeload_model_metadata_count(const safeload_model *model);
SAFELOAD_API const safeload_kv *safeload_model_metadata_at(const safeload_model *model,
                                                           size_t i);
/* Non-fatal findings (INDEX_UNLISTED_TENSOR without SAFELOAD_MODEL_STRICT). */
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
   sync() waits for everything at the end of a load.
   ------------------------------------------------------------------------------------------ */
typedef struct safeload_device_hooks {
    void *user;
    int  (*pinned_alloc)(void *user, size_t size, void **out);
    void (*pinned_free)(void *user, void *ptr);
    int  (*device_alloc)(void *user, size_t size, void **out);   /* "allocate for me" */
    void (*device_free)(void *user, void *ptr);                  /* on failure only */
    int  (*begin)(void *user, int workers, int buffers);         /* optional */
    int  (*upload)(void *user, int worker, int buffer, void *device_dst,
                   const void *pinned_src, size_t n);
    int  (*wait)(void *user, int worker, int buffer);
    int  (*sync)(void *user);
    void (*end)(void *user);                                     /* optional */
} safeload_device_hooks;

typedef enum safeload_device {
    SAFELOAD_DEVICE_NONE = 0,   /* host only; device requests fail with HOOK_MISSING */
    SAFELOAD_DEVICE_HOOKS,      /* the hooks in the load desc */
    SAFELOAD_DEVICE_CUDA,       /* desc hooks if set, else the linked safeload_cuda_* functions */
    SAFELOAD_DEVICE_ASCEND      /* desc hooks if set, else the linked safeload_ascend_* ones */
} safeload_device;

/* The named hooks. Define them in your program and link them in: they are weak references in
   the implementation (gcc/clang, ELF and Mach-O), so the load finds them with no setup. See
   README "Weak linking" for the traps (static archives, MSVC). */
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
    SAFELOAD_IO_DIRECT          /* O_DIRECT / FILE_FLAG_NO_BUFFERING with aligned bounce buffers */
} safeload_io;

typedef struct safeload_request {
    const char *name;           /* tensor to load */
    void *dst;                  /* host or device address; NULL = allocate for me */
    uint64_t dst_size;          /* capacity of dst in bytes (checked) */
    safeload_dtype dtype;       /* 0 = as stored; else cast while reading */
    uint64_t row_begin;         /* slice [row_begin, row_end) of dimension 0; */
    uint64_t row_end;           /*   row_end == 0 means the whole tensor */
    int device;                 /* 0 = host memory, 1 = device memory through the hooks */
    /* outputs */
    void *data;                 /* where the bytes are */
    uint64_t nbytes;            /* how many bytes were written there */
    const safeload_tensor *tensor;
    size_t shard;
} safeload_request;

/* Called on the calling thread at least every progress_interval bytes and once at the end.
   Non-zero cancels: workers stop within one chunk and the load returns SAFELOAD_CANCELLED. */
typedef int (*safeload_progress_fn)(void *user, uint64_t done, uint64_t total);

typedef struct safeload_load_stats {
    uint64_t bytes_read;        /* from files */
    uint64_t bytes_written;     /* to destinations */
    uint64_t reads;             /* read calls (syscalls or reader callbacks) */
    uint64_t pinned_bytes;      /* pinned staging allocated through hooks */
    int threads;
    safeload_io io;             /* the mode used (DIRECT falls back to READ where unsupported) */
} safeload_load_stats;

typedef struct safeload_load_desc {
    int threads;                /* counts the caller; 0 = pool's, else safeload_default_threads */
    safeload_pool *pool;        /* reuse a pool; NULL = a temporary one */
    safeload_io io;
    size_t chunk_size;          /* bytes per read; 0 = 2 MiB */
    size_t staging_size;        /* per-worker cast buffer; 0 = 256 KiB */
    safeload_progress_fn progress;
    void *progress_user;
    uint64_t progress_interval; /* 0 = 64 MiB */
    safeload_allocator allocator;   /* for the arena and bookkeeping */
    safeload_device device;
    safeload_device_hooks hooks;
    size_t pinned_size;         /* bytes per pinned staging buffer; 0 = 4 MiB */
    int pinned_count;           /* pinned buffers per worker (>= 2); 0 = 2 */
    size_t pinned_limit;        /* total pinned bytes; 0 = 256 MiB */
    safeload_load_stats *stats; /* optional output */
} safeload_load_desc;

typedef struct safeload_arena safeload_arena;

/* Loads every request or none: on failure nothing is reported loaded, allocated memory is
   released, and caller destinations hold unspecified bytes. Requests with dst == NULL need
   arena != NULL; free it with safeload_arena_free when done with the data. */
SAFELOAD_API safeload_result safeload_load(safeload_model *model, safeload_request *requests,
                                           size_t count, const safeload_load_desc *desc,
                                           safeload_arena **arena, safeload_error *err);
SAFELOAD_API safeload_result safeload_load_file(safeload_file *file,
                                                safeload_request *requests, size_t count,
                                                const safeload_load_desc *desc,
                                                safeload_arena **arena, safeload_error *err);
SAFELOAD_API void safeload_arena_free(safeload_arena *arena);

/* Everything, in model order, into one arena, optionally cast (dtype 0 = as stored; tensors
   that cannot be cast to dtype keep their own). */
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

/* ---------------------------------------------------------------------------------------------
   Writing, byte-identical to the reference writer: tensors sorted by dtype (descending) then
   name, compact JSON, __metadata__ first (keys sorted), padded with spaces to a multiple of 8.
   Files are written atomically: a temporary file in the same directory, flushed, renamed.
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
    SAFELOAD_SAVE_EMPTY_METADATA = 1u << 0  /* write "__metadata__":{} when there are no pairs */
};

typedef struct safeload_save_desc {
    const safeload_kv *metadata;
    size_t metadata_count;
    uint32_t flags;
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
/* all three given */
#elif !defined(SAFELOAD_MALLOC) && !defined(SAFELOAD_FREE) && !defined(SAFELOAD_REALLOC)
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

#if defined(_WIN32)
#  define SL__WINDOWS 1
#else
#  define SL__POSIX 1
#endif

#if defined(__x86_64__) || defined(_M_X64) || defined(_M_AMD64)
#  define SL__X86_64 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#  define SL__AARCH64 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define SL__GNUC 1
#  define SL__INLINE static __inline__
#  define SL__NOINLINE __attribute__((noinline))
#  define SL__LIKELY(x) __builtin_expect(!!(x), 1)
#  define SL__UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Per-function ISA targets: kernels for AVX2/AVX-512 compile in a translation unit built at
   baseline flags and are only called after a run-time CPU check. */
#  define SL__TARGET(t) __attribute__((target(t)))
#elif defined(_MSC_VER)
#  define SL__INLINE static __inline
#  define SL__NOINLINE __declspec(noinline)
#  define SL__LIKELY(x) (x)
#  define SL__UNLIKELY(x) (x)
#  define SL__TARGET(t) /* MSVC compiles any intrinsic anywhere */
#else
#  define SL__INLINE static
#  define SL__NOINLINE
#  define SL__LIKELY(x) (x)
#  define SL__UNLIKELY(x) (x)
#  define SL__TARGET(t)
#endif

#if defined(SAFELOAD_STATIC)
#  define SL__DEF static
#else
#  define SL__DEF
#endif

#define SL__MIN(a, b) ((a) < (b) ? (a) : (b))
#define SL__MAX(a, b) ((a) > (b) ? (a) : (b))
#define SL__UNUSED(x) ((void)(x))
#define SL__KIB ((uint64_t)1024)
#define SL__MIB ((uint64_t)1024 * 1024)
#define SL__MAX_HEADER 100000000u   /* the reference's MAX_HEADER_SIZE (decimal) */

/* =============================================================================================
   1. PLATFORM: memory, files, threads, CPU features
   ========================================================================================== */

/* ---- 1c. CPU features (used by the cast kernels' dispatch) ---- */

/* @@CPU FEATURES@@ */

/* ---- end of CPU features ---- */

/* @@SECTION 2: FORMAT @@ */
/* @@SECTION 3: KEY SET @@ */
/* =============================================================================================
   4. CAST KERNELS
   ========================================================================================== */

/* @@CAST KERNELS@@ */

/* ---- end of cast kernels ---- */

/* @@SECTION 5: LOAD ENGINE @@ */
/* @@SECTION 6: DEVICE HOOKS @@ */
/* @@SECTION 7: WRITER @@ */

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
