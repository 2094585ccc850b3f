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

/* Feature word: which cast paths this CPU and OS can run, plus the SAFELOAD_SIMD override.
     bits 0..4   SL__CPU_* flags below
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

/* @@SECTION 2: FORMAT @@ */
/* @@SECTION 3: KEY SET @@ */
/* =============================================================================================
   4. CAST KERNELS
   ========================================================================================== */

/* Every kernel converts `count` elements from src to dst: any alignment, no overlap. All paths
   give the same bits for every input under any MXCSR/FPCR (README "The bit contract"):
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

static void sl__k_copy16(void *dst, const void *src, size_t n) { memcpy(dst, src, n * 2); }
static void sl__k_copy32(void *dst, const void *src, size_t n) { memcpy(dst, src, n * 4); }

/* ---- 4b. SIMD loop generator and FP-environment guards ----
   A block function BLK(d, s, nt) converts N elements: it loads with unaligned loads and stores
   whole vectors of VB bytes, with aligned non-temporal stores when nt is 1. SL__GEN_LOOP makes
   NAME(dst, src, n): full blocks, then the tail through small stack buffers (same block code,
   so the tail's bits are the body's). SL__GEN_NT makes NAME_nt: a head with regular stores up
   to a VB-aligned dst, NT blocks, an sfence, and the tail again with regular stores; when dst
   cannot be aligned (dst not a multiple of the element size) it falls back to NAME. The _run
   bodies are noinline so the compiler cannot move FP work across the MXCSR/FPCR switch. */
#define SL__GEN_LOOP(NAME, TGT, DSZ, SSZ, N, BLK, ENV)                                          \
    static SL__NOINLINE TGT void NAME##_run(unsigned char *d, const unsigned char *s,         \
                                            size_t n) {                                        \
        size_t i = 0;                                                                          \
        for (; i + (N) <= n; i += (N)) BLK(d + i * (DSZ), s + i * (SSZ), 0);                   \
        if (i < n) {                                                                           \
            unsigned char ts[(N) * (SSZ)], td[(N) * (DSZ)];                                    \
            memset(ts, 0, sizeof ts);                                                          \
            memcpy(ts, s + i * (SSZ), (n - i) * (SSZ));                                        \
            BLK(td, ts, 0);                                                                    \
            memcpy(d + i * (DSZ), td, (n - i) * (DSZ));                                        \
        }                                                                                      \
    }                                                                                          \
    static void NAME(void *dst, const void *src, size_t n) {                                   \
        ENV##_ENTER;                                                                           \
        NAME##_run((unsigned char *)dst, (const unsigned char *)src, n);                       \
        ENV##_LEAVE;                                                                           \
    }

#define SL__GEN_NT(NAME, TGT, DSZ, SSZ, N, VB, BLK, ENV)                                        \
    static SL__NOINLINE TGT void NAME##_run_nt(unsigned char *d, const unsigned char *s,      \
                                               size_t n) {                                     \
        size_t i = 0, mis = (size_t)((uintptr_t)d & ((VB) - 1));                               \
        if (mis % (DSZ) == 0) {                                                                \
            i = mis ? ((VB) - mis) / (DSZ) : 0;                                                \
            if (i > n) i = n;                                                                  \
            if (i) NAME##_run(d, s, i);                                                        \
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

#define SL__GEN_BOTH(NAME, TGT, DSZ, SSZ, N, VB, BLK, ENV)                                      \
    SL__GEN_LOOP(NAME, TGT, DSZ, SSZ, N, BLK, ENV)                                             \
    SL__GEN_NT(NAME, TGT, DSZ, SSZ, N, VB, BLK, ENV)

/* The six FP8 block functions of a path, from fn(d, s, nt, e5, out) (out: 0 f16, 1 bf16,
   2 f32), and their kernels (integer only, so no FP-environment guard). */
#define SL__F8_BLOCK(name, path, TGT, fn, e5, out)                                              \
    SL__INLINE TGT void sl__b_##name##_##path(unsigned char *d, const unsigned char *s, int nt) { \
        fn(d, s, nt, e5, out);                                                                 \
    }
#define SL__F8_BLOCKS(path, TGT, fn)                                                            \
    SL__F8_BLOCK(e4m3_f16, path, TGT, fn, 0, 0) SL__F8_BLOCK(e4m3_bf16, path, TGT, fn, 0, 1)   \
    SL__F8_BLOCK(e4m3_f32, path, TGT, fn, 0, 2) SL__F8_BLOCK(e5m2_f16, path, TGT, fn, 1, 0)    \
    SL__F8_BLOCK(e5m2_bf16, path, TGT, fn, 1, 1) SL__F8_BLOCK(e5m2_f32, path, TGT, fn, 1, 2)
#define SL__F8_KERNELS(path, TGT, N, VB)                                                        \
    SL__GEN_BOTH(sl__k_e4m3_f16_##path, TGT, 2, 1, N, VB, sl__b_e4m3_f16_##path, SL__ENV_NONE)  \
    SL__GEN_BOTH(sl__k_e4m3_bf16_##path, TGT, 2, 1, N, VB, sl__b_e4m3_bf16_##path, SL__ENV_NONE) \
    SL__GEN_BOTH(sl__k_e4m3_f32_##path, TGT, 4, 1, N, VB, sl__b_e4m3_f32_##path, SL__ENV_NONE)  \
    SL__GEN_BOTH(sl__k_e5m2_f16_##path, TGT, 2, 1, N, VB, sl__b_e5m2_f16_##path, SL__ENV_NONE)  \
    SL__GEN_BOTH(sl__k_e5m2_bf16_##path, TGT, 2, 1, N, VB, sl__b_e5m2_bf16_##path, SL__ENV_NONE) \
    SL__GEN_BOTH(sl__k_e5m2_f32_##path, TGT, 4, 1, N, VB, sl__b_e5m2_f32_##path, SL__ENV_NONE)

/* Non-temporal copies for a path: 64-byte blocks, memcpy for the unaligned head and the tail. */
#define SL__COPY_NT(path, TGT, VB, BLK)                                                         \
    static void sl__k_copy_##path##_run(unsigned char *d, const unsigned char *s, size_t n) {  \
        memcpy(d, s, n);                                                                       \
    }                                                                                          \
    SL__GEN_NT(sl__k_copy_##path, TGT, 1, 1, 64, VB, BLK, SL__ENV_NONE)                        \
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

/* ---- 4c. SSE2 (integer, plus two FP steps that are exact under the default MXCSR) ---- */

SL__INLINE __m128i sl__ld128(const unsigned char *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}
SL__INLINE __m128i sl__ld64x(const unsigned char *p) {
    return _mm_loadl_epi64((const __m128i *)(const void *)p);
}
SL__INLINE void sl__st128(unsigned char *p, __m128i v, int nt) {
    if (nt) _mm_stream_si128((__m128i *)(void *)p, v);
    else _mm_storeu_si128((__m128i *)(void *)p, v);
}
SL__INLINE __m128i sl__sse2_sel(__m128i m, __m128i a, __m128i b) {
    return _mm_or_si128(_mm_and_si128(m, a), _mm_andnot_si128(m, b));
}
/* f32 bits -> f16 bits in the low half of each lane, with one FP add that is exact RNE under
   the default MXCSR (RNE, DAZ off): for |x| in [2^e, 2^(e+1)), C = 2^(e+13) (e clamped below at
   -14, so C = 0.5 in the f16 subnormal range) has an ulp of 2^(e-10), the f16 ulp there, so
   |x| + C rounds |x| to f16 precision and the bits of (|x| + C) - bits of C count the ulps k:
   f16 bits = ((e + 14) << 10) + k, carries included. |x| >= 65520 (and NaN, which minps maps
   to its second operand) is first clamped to 65520, which rounds to 0x7C00; NaNs then get
   sign | 0x7E00 | payload. */
SL__INLINE __m128i sl__sse2_f32_f16(__m128i x) {
    __m128i a = _mm_and_si128(x, SL__X4(0x7FFFFFFF));
    __m128i s = _mm_and_si128(_mm_srli_epi32(x, 16), SL__X4(0x8000));
    __m128 v = _mm_min_ps(_mm_castsi128_ps(a), _mm_set1_ps(65520.0f));
    __m128i c = _mm_castps_si128(_mm_max_ps(_mm_and_ps(v, _mm_castsi128_ps(SL__X4(0x7F800000))),
                                            _mm_castsi128_ps(SL__X4(0x38800000))));
    __m128i sum, h, nan;
    c = _mm_add_epi32(c, SL__X4(13u << 23));
    sum = _mm_castps_si128(_mm_add_ps(v, _mm_castsi128_ps(c)));
    h = _mm_add_epi32(_mm_sub_epi32(sum, c),
                      _mm_sub_epi32(_mm_srli_epi32(c, 13), SL__X4(126u << 10)));
    nan = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(a, 13), SL__X4(0x3FF)), SL__X4(0x7E00));
    h = sl__sse2_sel(_mm_cmpgt_epi32(a, SL__X4(0x7F800000)), nan, h);
    return _mm_or_si128(h, s);
}
/* f16 bits (zero-extended lanes) -> f32 bits: (em << 13) read as an f32 is the value times
   2^-112 (an f32 subnormal for f16 subnormals), so one multiply by 2^112 is exact for every
   finite input when DAZ is off; exponent 31 (Inf/NaN) then gets its all-ones exponent ORed in
   and NaNs the quiet bit. */
SL__INLINE __m128i sl__sse2_f16_f32(__m128i h) {
    __m128i em = _mm_and_si128(h, SL__X4(0x7FFF));
    __m128i s = _mm_slli_epi32(_mm_and_si128(h, SL__X4(0x8000)), 16);
    __m128i f = _mm_castps_si128(_mm_mul_ps(_mm_castsi128_ps(_mm_slli_epi32(em, 13)),
                                            _mm_castsi128_ps(SL__X4(0x77800000))));  /* 2^112 */
    f = _mm_or_si128(f, _mm_and_si128(_mm_cmpgt_epi32(em, SL__X4(0x7BFF)), SL__X4(0x7F800000)));
    f = _mm_or_si128(f, _mm_and_si128(_mm_cmpgt_epi32(em, SL__X4(0x7C00)), SL__X4(0x400000)));
    return _mm_or_si128(f, s);
}
/* f32 bits -> RNE'd bits whose high half is the bf16. */
SL__INLINE __m128i sl__sse2_bf16hi(__m128i x) {
    __m128i lsb = _mm_and_si128(_mm_srli_epi32(x, 16), SL__X4(1));
    __m128i r = _mm_add_epi32(_mm_add_epi32(x, SL__X4(0x7FFF)), lsb);
    __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(x, SL__X4(0x7FFFFFFF)), SL__X4(0x7F800000));
    return sl__sse2_sel(nan, _mm_or_si128(x, SL__X4(0x400000)), r);
}
SL__INLINE __m128i sl__sse2_pack_hi(__m128i a, __m128i b) {      /* high halves, in order */
    return _mm_packs_epi32(_mm_srai_epi32(a, 16), _mm_srai_epi32(b, 16));
}
SL__INLINE __m128i sl__sse2_pack_lo(__m128i a, __m128i b) {      /* low halves, in order */
    return sl__sse2_pack_hi(_mm_slli_epi32(a, 16), _mm_slli_epi32(b, 16));
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
SL__INLINE __m128i sl__sse2_e5m2_f16(__m128i x) {                 /* b << 8, NaNs quieted */
    __m128i h = _mm_slli_epi16(x, 8);
    __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7FFF)), _mm_set1_epi16(0x7C00));
    return _mm_or_si128(h, _mm_and_si128(nan, _mm_set1_epi16(0x0200)));
}
/* 16 FP8 bytes (E5M2 when e5, else E4M3) to 16 f16 (out 0), bf16 (out 1) or f32 (out 2). */
SL__INLINE void sl__sse2_f8(unsigned char *d, const unsigned char *s, int nt, int e5, int out) {
    __m128i v = sl__ld128(s), z = _mm_setzero_si128(), h[2];
    int k;
    h[0] = _mm_unpacklo_epi8(v, z);
    h[1] = _mm_unpackhi_epi8(v, z);
    for (k = 0; k < 2; k++) {
        if (out == 0) h[k] = e5 ? sl__sse2_e5m2_f16(h[k]) : sl__sse2_e4m3_16(h[k], 0);
        else h[k] = e5 ? sl__sse2_e5m2_bf16(h[k]) : sl__sse2_e4m3_16(h[k], 1);
        if (out < 2) {
            sl__st128(d + 16 * k, h[k], nt);
        } else {
            sl__st128(d + 32 * k, _mm_unpacklo_epi16(z, h[k]), nt);
            sl__st128(d + 32 * k + 16, _mm_unpackhi_epi16(z, h[k]), nt);
        }
    }
}
SL__INLINE __m128i sl__sse2_lo32(__m128i v) { return _mm_unpacklo_epi16(v, _mm_setzero_si128()); }
SL__INLINE __m128i sl__sse2_hi32(__m128i v) { return _mm_unpackhi_epi16(v, _mm_setzero_si128()); }

SL__INLINE void sl__b_f32_f16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st128(d, sl__sse2_pack_lo(sl__sse2_f32_f16(sl__ld128(s)),
                                  sl__sse2_f32_f16(sl__ld128(s + 16))), nt);
}
SL__INLINE void sl__b_f16_f32_sse2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st128(d, sl__sse2_f16_f32(sl__sse2_lo32(sl__ld64x(s))), nt);
}
SL__INLINE void sl__b_f32_bf16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st128(d, sl__sse2_pack_hi(sl__sse2_bf16hi(sl__ld128(s)),
                                  sl__sse2_bf16hi(sl__ld128(s + 16))), nt);
}
SL__INLINE void sl__b_bf16_f32_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i v = sl__ld128(s);
    sl__st128(d, _mm_unpacklo_epi16(_mm_setzero_si128(), v), nt);
    sl__st128(d + 16, _mm_unpackhi_epi16(_mm_setzero_si128(), v), nt);
}
SL__INLINE void sl__b_f16_bf16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i v = sl__ld128(s);
    sl__st128(d, sl__sse2_pack_hi(sl__sse2_bf16hi(sl__sse2_f16_f32(sl__sse2_lo32(v))),
                                  sl__sse2_bf16hi(sl__sse2_f16_f32(sl__sse2_hi32(v)))), nt);
}
SL__INLINE void sl__b_bf16_f16_sse2(unsigned char *d, const unsigned char *s, int nt) {
    __m128i v = sl__ld128(s), z = _mm_setzero_si128();
    sl__st128(d, sl__sse2_pack_lo(sl__sse2_f32_f16(_mm_unpacklo_epi16(z, v)),
                                  sl__sse2_f32_f16(_mm_unpackhi_epi16(z, v))), nt);
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

SL__GEN_BOTH(sl__k_f32_f16_sse2, SL__T128, 2, 4, 8, 16, sl__b_f32_f16_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f16_f32_sse2, SL__T128, 4, 2, 4, 16, sl__b_f16_f32_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_bf16_sse2, SL__T128, 2, 4, 8, 16, sl__b_f32_bf16_sse2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_bf16_f32_sse2, SL__T128, 4, 2, 8, 16, sl__b_bf16_f32_sse2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_sse2, SL__T128, 2, 2, 8, 16, sl__b_f16_bf16_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_bf16_f16_sse2, SL__T128, 2, 2, 8, 16, sl__b_bf16_f16_sse2, SL__ENV_MXCSR)
SL__F8_KERNELS(sse2, SL__T128, 16, 16)
SL__GEN_BOTH(sl__k_f64_f32_sse2, SL__T128, 4, 8, 4, 16, sl__b_f64_f32_sse2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_f64_sse2, SL__T128, 8, 4, 4, 16, sl__b_f32_f64_sse2, SL__ENV_MXCSR)
SL__COPY_NT(sse2, SL__T128, 16, sl__b_copy_sse2)
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
SL__INLINE SL__T256 __m256i sl__avx2_bf16hi(__m256i x) {
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), SL__X8(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(x, SL__X8(0x7FFF)), lsb);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, SL__X8(0x7FFFFFFF)),
                                     SL__X8(0x7F800000));
    return _mm256_blendv_epi8(r, _mm256_or_si256(x, SL__X8(0x400000)), nan);
}
SL__INLINE SL__T256 __m256i sl__avx2_pack_hi(__m256i a, __m256i b) {
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(a, 16),
                                                        _mm256_srli_epi32(b, 16)), 0xD8);
}
/* FP8 in 16-bit lanes, as sl__sse2_e4m3_16 and friends, but the subnormal codes (m < 8 resp.
   m < 4; 0 maps to 0) come from byte tables through pshufb: lo/hi bytes of the result. */
#  define SL__H16(x) _mm256_set1_epi16((short)(x))
#  define SL__TAB8(a, b, c, d, e, f, g, h) \
    _mm256_broadcastsi128_si256(_mm_setr_epi8(a, b, c, d, e, f, g, h, 0, 0, 0, 0, 0, 0, 0, 0))
SL__INLINE SL__T256 __m256i sl__avx2_lut16(__m256i m, __m256i lo, __m256i hi) {
    return _mm256_or_si256(_mm256_shuffle_epi8(lo, m),
                           _mm256_slli_epi16(_mm256_shuffle_epi8(hi, m), 8));
}
SL__INLINE SL__T256 __m256i sl__avx2_e4m3_16(__m256i x, int bf) {
    __m256i m = _mm256_and_si256(x, SL__H16(0x7F));
    __m256i s = _mm256_slli_epi16(_mm256_and_si256(x, SL__H16(0x80)), 8);
    __m256i r, sub;
    if (bf) {
        r = _mm256_add_epi16(_mm256_slli_epi16(m, 4), SL__H16(120 << 7));
        sub = sl__avx2_lut16(m, SL__TAB8(0, 0, (char)0x80, (char)0xC0, 0, 0x20, 0x40, 0x60),
                             SL__TAB8(0, 0x3B, 0x3B, 0x3B, 0x3C, 0x3C, 0x3C, 0x3C));
    } else {
        r = _mm256_add_epi16(_mm256_slli_epi16(m, 7), SL__H16(8 << 10));
        sub = _mm256_slli_epi16(_mm256_shuffle_epi8(SL__TAB8(0, 0x18, 0x1C, 0x1E, 0x20, 0x21, 0x22,
                                                             0x23), m), 8);
    }
    r = _mm256_blendv_epi8(r, sub, _mm256_cmpgt_epi16(SL__H16(8), m));
    r = _mm256_blendv_epi8(r, SL__H16(bf ? 0x7FC0 : 0x7E00), _mm256_cmpeq_epi16(m, SL__H16(0x7F)));
    return _mm256_or_si256(r, s);
}
SL__INLINE SL__T256 __m256i sl__avx2_e5m2_bf16(__m256i x) {
    __m256i m = _mm256_and_si256(x, SL__H16(0x7F));
    __m256i s = _mm256_slli_epi16(_mm256_and_si256(x, SL__H16(0x80)), 8);
    __m256i m5 = _mm256_slli_epi16(m, 5);
    __m256i nan = _mm256_and_si256(_mm256_cmpgt_epi16(m, SL__H16(0x7C)), SL__H16(0x40));
    __m256i inf = _mm256_or_si256(_mm256_add_epi16(m5, SL__H16(224 << 7)), nan);
    __m256i sub = sl__avx2_lut16(m, SL__TAB8(0, (char)0x80, 0, 0x40, 0, 0, 0, 0),
                                 SL__TAB8(0, 0x37, 0x38, 0x38, 0, 0, 0, 0));
    __m256i r = _mm256_blendv_epi8(_mm256_add_epi16(m5, SL__H16(112 << 7)), sub,
                                   _mm256_cmpgt_epi16(SL__H16(4), m));
    r = _mm256_blendv_epi8(r, inf, _mm256_cmpgt_epi16(m, SL__H16(0x7B)));
    return _mm256_or_si256(r, s);
}
SL__INLINE SL__T256 __m256i sl__avx2_e5m2_f16(__m256i x) {
    __m256i h = _mm256_slli_epi16(x, 8);
    __m256i nan = _mm256_cmpgt_epi16(_mm256_and_si256(h, SL__H16(0x7FFF)), SL__H16(0x7C00));
    return _mm256_or_si256(h, _mm256_and_si256(nan, SL__H16(0x0200)));
}
SL__INLINE SL__T256 void sl__avx2_f8(unsigned char *d, const unsigned char *s, int nt, int e5,
                                         int out) {
    __m256i h = _mm256_cvtepu8_epi16(sl__ld128(s));
    if (out == 0) {
        sl__st256(d, e5 ? sl__avx2_e5m2_f16(h) : sl__avx2_e4m3_16(h, 0), nt);
        return;
    }
    h = e5 ? sl__avx2_e5m2_bf16(h) : sl__avx2_e4m3_16(h, 1);
    if (out == 1) {
        sl__st256(d, h, nt);
        return;
    }
    sl__st256(d, _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16), nt);
    sl__st256(d + 32, _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16),
              nt);
}

SL__INLINE SL__T256 void sl__b_f32_f16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__avx2_join(sl__avx2_f32_f16(sl__ld256(s)),
                               sl__avx2_f32_f16(sl__ld256(s + 32))), nt);
}
SL__INLINE SL__T256 void sl__b_f16_f32_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__avx2_f16_f32(sl__ld128(s)), nt);
}
SL__INLINE SL__T256 void sl__b_f32_bf16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__avx2_pack_hi(sl__avx2_bf16hi(sl__ld256(s)),
                                  sl__avx2_bf16hi(sl__ld256(s + 32))), nt);
}
SL__INLINE SL__T256 void sl__b_bf16_f32_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, _mm256_slli_epi32(_mm256_cvtepu16_epi32(sl__ld128(s)), 16), nt);
}
SL__INLINE SL__T256 void sl__b_f16_bf16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    sl__st256(d, sl__avx2_pack_hi(sl__avx2_bf16hi(sl__avx2_f16_f32(sl__ld128(s))),
                                  sl__avx2_bf16hi(sl__avx2_f16_f32(sl__ld128(s + 16)))), nt);
}
SL__INLINE SL__T256 void sl__b_bf16_f16_avx2(unsigned char *d, const unsigned char *s, int nt) {
    __m256i lo = _mm256_slli_epi32(_mm256_cvtepu16_epi32(sl__ld128(s)), 16);
    __m256i hi = _mm256_slli_epi32(_mm256_cvtepu16_epi32(sl__ld128(s + 16)), 16);
    sl__st256(d, sl__avx2_join(sl__avx2_f32_f16(lo), sl__avx2_f32_f16(hi)), nt);
}
SL__F8_BLOCKS(avx2, SL__T256, sl__avx2_f8)
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

SL__GEN_BOTH(sl__k_f32_f16_avx2, SL__T256, 2, 4, 16, 32, sl__b_f32_f16_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f16_f32_avx2, SL__T256, 4, 2, 8, 32, sl__b_f16_f32_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_bf16_avx2, SL__T256, 2, 4, 16, 32, sl__b_f32_bf16_avx2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_bf16_f32_avx2, SL__T256, 4, 2, 8, 32, sl__b_bf16_f32_avx2, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_avx2, SL__T256, 2, 2, 16, 32, sl__b_f16_bf16_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_bf16_f16_avx2, SL__T256, 2, 2, 16, 32, sl__b_bf16_f16_avx2, SL__ENV_MXCSR)
SL__F8_KERNELS(avx2, SL__T256, 16, 32)
SL__GEN_BOTH(sl__k_f64_f32_avx2, SL__T256, 4, 8, 8, 32, sl__b_f64_f32_avx2, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_f64_avx2, SL__T256, 8, 4, 8, 32, sl__b_f32_f64_avx2, SL__ENV_MXCSR)
SL__COPY_NT(avx2, SL__T256, 32, sl__b_copy_avx2)

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
SL__INLINE SL__T512 __m256i sl__avx512_f32_f16(__m512i x) {
    return _mm512_cvtps_ph(_mm512_castsi512_ps(x), SL__RNE);
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
/* FP8 in 16-bit lanes, as sl__sse2_e4m3_16 and friends, the subnormal codes from vpermw. */
#  define SL__W16(x) _mm512_set1_epi16((short)(x))
#  define SL__TAB16(a, b, c, d, e, f, g, h) \
    _mm512_setr_epi32((int)((a) | (b) << 16), (int)((c) | (d) << 16), (int)((e) | (f) << 16), \
                      (int)((g) | (h) << 16), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
SL__INLINE SL__T512 __m512i sl__avx512_e4m3_16(__m512i x, int bf) {
    __m512i m = _mm512_and_si512(x, SL__W16(0x7F));
    __m512i s = _mm512_slli_epi16(_mm512_and_si512(x, SL__W16(0x80)), 8);
    __m512i r, tab;
    if (bf) {
        r = _mm512_add_epi16(_mm512_slli_epi16(m, 4), SL__W16(120 << 7));
        tab = SL__TAB16(0, 0x3B00, 0x3B80, 0x3BC0, 0x3C00, 0x3C20, 0x3C40, 0x3C60);
    } else {
        r = _mm512_add_epi16(_mm512_slli_epi16(m, 7), SL__W16(8 << 10));
        tab = SL__TAB16(0, 0x1800, 0x1C00, 0x1E00, 0x2000, 0x2100, 0x2200, 0x2300);
    }
    r = _mm512_mask_permutexvar_epi16(r, _mm512_cmplt_epu16_mask(m, SL__W16(8)), m, tab);
    r = _mm512_mask_mov_epi16(r, _mm512_cmpeq_epi16_mask(m, SL__W16(0x7F)),
                              SL__W16(bf ? 0x7FC0 : 0x7E00));
    return _mm512_or_si512(r, s);
}
SL__INLINE SL__T512 __m512i sl__avx512_e5m2_bf16(__m512i x) {
    __m512i m = _mm512_and_si512(x, SL__W16(0x7F));
    __m512i s = _mm512_slli_epi16(_mm512_and_si512(x, SL__W16(0x80)), 8);
    __m512i m5 = _mm512_slli_epi16(m, 5);
    __m512i r = _mm512_add_epi16(m5, SL__W16(112 << 7));
    r = _mm512_mask_permutexvar_epi16(r, _mm512_cmplt_epu16_mask(m, SL__W16(4)), m,
                                      SL__TAB16(0, 0x3780, 0x3800, 0x3840, 0, 0, 0, 0));
    r = _mm512_mask_add_epi16(r, _mm512_cmpgt_epu16_mask(m, SL__W16(0x7B)), m5, SL__W16(224 << 7));
    r = _mm512_or_si512(r, _mm512_maskz_mov_epi16(_mm512_cmpgt_epu16_mask(m, SL__W16(0x7C)),
                                                  SL__W16(0x40)));
    return _mm512_or_si512(r, s);
}
SL__INLINE SL__T512 __m512i sl__avx512_e5m2_f16(__m512i x) {
    __m512i h = _mm512_slli_epi16(x, 8);
    __mmask32 nan = _mm512_cmpgt_epu16_mask(_mm512_and_si512(h, SL__W16(0x7FFF)), SL__W16(0x7C00));
    return _mm512_or_si512(h, _mm512_maskz_mov_epi16(nan, SL__W16(0x0200)));
}
SL__INLINE SL__T512 __m512i sl__avx512_bf16_f32(__m256i b) {
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
}
SL__INLINE SL__T512 void sl__avx512_f8(unsigned char *d, const unsigned char *s, int nt,
                                             int e5, int out) {
    __m512i h = _mm512_cvtepu8_epi16(sl__ld256(s));
    if (out == 0) {
        sl__st512(d, e5 ? sl__avx512_e5m2_f16(h) : sl__avx512_e4m3_16(h, 0), nt);
        return;
    }
    h = e5 ? sl__avx512_e5m2_bf16(h) : sl__avx512_e4m3_16(h, 1);
    if (out == 1) {
        sl__st512(d, h, nt);
        return;
    }
    sl__st512(d, sl__avx512_bf16_f32(_mm512_castsi512_si256(h)), nt);
    sl__st512(d + 64, sl__avx512_bf16_f32(_mm512_extracti64x4_epi64(h, 1)), nt);
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
SL__F8_BLOCKS(avx512, SL__T512, sl__avx512_f8)
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

SL__GEN_BOTH(sl__k_f32_f16_avx512, SL__T512, 2, 4, 32, 64, sl__b_f32_f16_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f16_f32_avx512, SL__T512, 4, 2, 16, 64, sl__b_f16_f32_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_bf16_avx512, SL__T512, 2, 4, 32, 64, sl__b_f32_bf16_avx512, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_bf16_f32_avx512, SL__T512, 4, 2, 16, 64, sl__b_bf16_f32_avx512, SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_avx512, SL__T512, 2, 2, 32, 64, sl__b_f16_bf16_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_bf16_f16_avx512, SL__T512, 2, 2, 32, 64, sl__b_bf16_f16_avx512, SL__ENV_MXCSR)
SL__F8_KERNELS(avx512, SL__T512, 32, 64)
SL__GEN_BOTH(sl__k_f64_f32_avx512, SL__T512, 4, 8, 16, 64, sl__b_f64_f32_avx512, SL__ENV_MXCSR)
SL__GEN_BOTH(sl__k_f32_f64_avx512, SL__T512, 8, 4, 16, 64, sl__b_f32_f64_avx512, SL__ENV_MXCSR)
SL__COPY_NT(avx512, SL__T512, 64, sl__b_copy_avx512)

/* ---- 4f. AVX512_BF16: vcvtne2ps2bf16 treats fp32 subnormal inputs as zero, so each 32-element
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
SL__GEN_BOTH(sl__k_f32_bf16_avx512bf16, SL__TBF16, 2, 4, 32, 64, sl__b_f32_bf16_avx512bf16,
             SL__ENV_NONE)
SL__GEN_BOTH(sl__k_f16_bf16_avx512bf16, SL__TBF16, 2, 2, 32, 64, sl__b_f16_bf16_avx512bf16,
             SL__ENV_MXCSR)
#  if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic pop
#  endif
#endif /* SL__HAVE_AVX */

#if defined(SL__HAVE_NEON)
/* ---- 4g. NEON (AArch64). FCVTN/FCVTL/FCVT and FMUL follow FPCR (RMode, FZ, DN, AHP), so
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

/* ---- 4h. dispatch ---- */
enum {
    SL__C_COPY16, SL__C_COPY32, SL__C_F32_F16, SL__C_F16_F32, SL__C_F32_BF16, SL__C_BF16_F32,
    SL__C_F16_BF16, SL__C_BF16_F16, SL__C_E4M3_F32, SL__C_E4M3_F16, SL__C_E4M3_BF16,
    SL__C_E5M2_F32, SL__C_E5M2_F16, SL__C_E5M2_BF16, SL__C_F64_F32, SL__C_F32_F64, SL__C_COUNT
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
    default: return -1;
    }
}

/* Element size of the dtypes the casts handle (only called for supported pairs). */
static size_t sl__cast_size(safeload_dtype t) {
    switch (t) {
    case SAFELOAD_F64: return 8;
    case SAFELOAD_F32: return 4;
    case SAFELOAD_F16: case SAFELOAD_BF16: return 2;
    default: return 1;
    }
}

/* Kernel tables, one row per direction: { regular stores, non-temporal stores }. Rows must
   follow the SL__C_* order. A path that adds nothing for a direction names a lower path's
   kernel (scalar and NEON have no NT variant). */
typedef sl__cast_fn sl__cast_row[2];
#define SL__ROW(dir, p) { sl__k_##dir##_##p, sl__k_##dir##_##p }
#define SL__ROWNT(dir, p) { sl__k_##dir##_##p, sl__k_##dir##_##p##_nt }
#define SL__COPYROWS(p) \
    { sl__k_copy16, sl__k_copy16_##p##_nt }, { sl__k_copy32, sl__k_copy32_##p##_nt }

static const sl__cast_row sl__tab_scalar[SL__C_COUNT] = {
    { sl__k_copy16, sl__k_copy16 }, { sl__k_copy32, sl__k_copy32 },
    SL__ROW(f32_f16, scalar), SL__ROW(f16_f32, scalar), SL__ROW(f32_bf16, scalar),
    SL__ROW(bf16_f32, scalar), SL__ROW(f16_bf16, scalar), SL__ROW(bf16_f16, scalar),
    SL__ROW(e4m3_f32, scalar), SL__ROW(e4m3_f16, scalar), SL__ROW(e4m3_bf16, scalar),
    SL__ROW(e5m2_f32, scalar), SL__ROW(e5m2_f16, scalar), SL__ROW(e5m2_bf16, scalar),
    SL__ROW(f64_f32, scalar), SL__ROW(f32_f64, scalar)
};
#if defined(SL__HAVE_SSE2)
static const sl__cast_row sl__tab_sse2[SL__C_COUNT] = {
    SL__COPYROWS(sse2),
    SL__ROWNT(f32_f16, sse2), SL__ROWNT(f16_f32, sse2), SL__ROWNT(f32_bf16, sse2),
    SL__ROWNT(bf16_f32, sse2), SL__ROWNT(f16_bf16, sse2), SL__ROWNT(bf16_f16, sse2),
    SL__ROWNT(e4m3_f32, sse2), SL__ROWNT(e4m3_f16, sse2), SL__ROWNT(e4m3_bf16, sse2),
    SL__ROWNT(e5m2_f32, sse2), SL__ROWNT(e5m2_f16, sse2), SL__ROWNT(e5m2_bf16, sse2),
    SL__ROWNT(f64_f32, sse2), SL__ROWNT(f32_f64, sse2)
};
#endif
#if defined(SL__HAVE_AVX)
static const sl__cast_row sl__tab_avx2[SL__C_COUNT] = {
    SL__COPYROWS(avx2),
    SL__ROWNT(f32_f16, avx2), SL__ROWNT(f16_f32, avx2), SL__ROWNT(f32_bf16, avx2),
    SL__ROWNT(bf16_f32, avx2), SL__ROWNT(f16_bf16, avx2), SL__ROWNT(bf16_f16, avx2),
    SL__ROWNT(e4m3_f32, avx2), SL__ROWNT(e4m3_f16, avx2), SL__ROWNT(e4m3_bf16, avx2),
    SL__ROWNT(e5m2_f32, avx2), SL__ROWNT(e5m2_f16, avx2), SL__ROWNT(e5m2_bf16, avx2),
    SL__ROWNT(f64_f32, avx2), SL__ROWNT(f32_f64, avx2)
};
static const sl__cast_row sl__tab_avx512[SL__C_COUNT] = {
    SL__COPYROWS(avx512),
    SL__ROWNT(f32_f16, avx512), SL__ROWNT(f16_f32, avx512), SL__ROWNT(f32_bf16, avx512),
    SL__ROWNT(bf16_f32, avx512), SL__ROWNT(f16_bf16, avx512), SL__ROWNT(bf16_f16, avx512),
    SL__ROWNT(e4m3_f32, avx512), SL__ROWNT(e4m3_f16, avx512), SL__ROWNT(e4m3_bf16, avx512),
    SL__ROWNT(e5m2_f32, avx512), SL__ROWNT(e5m2_f16, avx512), SL__ROWNT(e5m2_bf16, avx512),
    SL__ROWNT(f64_f32, avx512), SL__ROWNT(f32_f64, avx512)
};
static const sl__cast_row sl__tab_avx512bf16[SL__C_COUNT] = {
    SL__COPYROWS(avx512),
    SL__ROWNT(f32_f16, avx512), SL__ROWNT(f16_f32, avx512), SL__ROWNT(f32_bf16, avx512bf16),
    SL__ROWNT(bf16_f32, avx512), SL__ROWNT(f16_bf16, avx512bf16), SL__ROWNT(bf16_f16, avx512),
    SL__ROWNT(e4m3_f32, avx512), SL__ROWNT(e4m3_f16, avx512), SL__ROWNT(e4m3_bf16, avx512),
    SL__ROWNT(e5m2_f32, avx512), SL__ROWNT(e5m2_f16, avx512), SL__ROWNT(e5m2_bf16, avx512),
    SL__ROWNT(f64_f32, avx512), SL__ROWNT(f32_f64, avx512)
};
#endif
#if defined(SL__HAVE_NEON)
static const sl__cast_row sl__tab_neon[SL__C_COUNT] = {
    { sl__k_copy16, sl__k_copy16 }, { sl__k_copy32, sl__k_copy32 },
    SL__ROW(f32_f16, neon), SL__ROW(f16_f32, neon), SL__ROW(f32_bf16, neon),
    SL__ROW(bf16_f32, neon), SL__ROW(f16_bf16, neon), SL__ROW(bf16_f16, neon),
    SL__ROW(e4m3_f32, neon), SL__ROW(e4m3_f16, neon), SL__ROW(e4m3_bf16, neon),
    SL__ROW(e5m2_f32, neon), SL__ROW(e5m2_f16, neon), SL__ROW(e5m2_bf16, neon),
    SL__ROW(f64_f32, neon), SL__ROW(f32_f64, neon)
};
#endif
#undef SL__ROW
#undef SL__ROWNT
#undef SL__COPYROWS

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

/* The kernel table of a path (AUTO = sl__simd_auto()); NULL when it is not available. */
static const sl__cast_row *sl__cast_table(safeload_simd simd) {
    if (simd == SAFELOAD_SIMD_AUTO) simd = sl__simd_auto();
    else if (!sl__simd_avail(sl__cpu_word(), simd)) return NULL;
    switch (simd) {
    case SAFELOAD_SIMD_SCALAR: return sl__tab_scalar;
#if defined(SL__HAVE_SSE2)
    case SAFELOAD_SIMD_SSE2: return sl__tab_sse2;
#endif
#if defined(SL__HAVE_AVX)
    case SAFELOAD_SIMD_AVX2: return sl__tab_avx2;
    case SAFELOAD_SIMD_AVX512: return sl__tab_avx512;
    case SAFELOAD_SIMD_AVX512BF16: return sl__tab_avx512bf16;
#endif
#if defined(SL__HAVE_NEON)
    case SAFELOAD_SIMD_NEON: return sl__tab_neon;
#endif
    default: return NULL;
    }
}

/* The kernel for dst <- src on a path (AUTO = sl__simd_auto()), with non-temporal stores when
   nt is non-zero and the path has them; NULL when the pair is unsupported or the path is not
   available. Same dtype gives a memcpy kernel. Kernels take any alignment, no overlap. */
static sl__cast_fn sl__cast_resolve(safeload_dtype dst, safeload_dtype src, safeload_simd simd,
                                    int nt) {
    int dir = sl__cast_dir(dst, src);
    const sl__cast_row *tab = sl__cast_table(simd);
    return dir >= 0 && tab ? tab[dir][nt ? 1 : 0] : NULL;
}

/* ---- 4i. public functions ---- */

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

SL__DEF safeload_result safeload_convert_ex(void *dst, safeload_dtype dst_dtype, const void *src,
                                            safeload_dtype src_dtype, size_t count,
                                            const safeload_convert_desc *desc) {
    safeload_simd simd = desc ? desc->simd : SAFELOAD_SIMD_AUTO;
    int nt = desc ? desc->nt_stores : 0;
    size_t dsz, ssz;
    uintptr_t d, s;
    sl__cast_fn fn;
    if (sl__cast_dir(dst_dtype, src_dtype) < 0) return SAFELOAD_UNSUPPORTED_CONVERSION;
    if ((int)simd < 0 || simd >= SAFELOAD_SIMD_COUNT) return SAFELOAD_INVALID_ARGUMENT;
    dsz = sl__cast_size(dst_dtype);
    ssz = sl__cast_size(src_dtype);
    if (count > (size_t)-1 / SL__MAX(dsz, ssz)) return SAFELOAD_OVERFLOW;
    if (nt == 0) nt = count * dsz >= SL__NT_MIN_BYTES ? 1 : -1;
    fn = sl__cast_resolve(dst_dtype, src_dtype, simd, nt > 0);
    if (!fn) return SAFELOAD_UNSUPPORTED;           /* the pair is fine: the path is not here */
    if (count == 0) return SAFELOAD_OK;
    if (!dst || !src) return SAFELOAD_INVALID_ARGUMENT;
    d = (uintptr_t)dst;
    s = (uintptr_t)src;
    if (d < s + count * ssz && s < d + count * dsz) return SAFELOAD_INVALID_ARGUMENT; /* overlap */
    fn(dst, src, count);
    return SAFELOAD_OK;
}

SL__DEF safeload_result safeload_convert(void *dst, safeload_dtype dst_dtype, const void *src,
                                         safeload_dtype src_dtype, size_t count) {
    return safeload_convert_ex(dst, dst_dtype, src, src_dtype, count, NULL);
}

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
