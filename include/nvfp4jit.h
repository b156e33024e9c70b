/*
 * nvfp4jit.h - the whole public API of libnvfp4jit.
 *
 * nvfp4jit renders CUDA source for one kernel variant of an NVFP4 block-scaled grouped GEMM
 * from templates (Lua, embedded in the library), compiles it at run time with NVRTC and
 * nvJitLink for sm_90a (H100/H200) or sm_100a (B200), caches the cubin on disk, chooses a
 * variant per problem set and launches the grouped GEMM on a CUDA stream.
 *
 * What is not declared here is not API.
 *
 * Data contract, per group g with sizes (M, N, K):  C[M,N] = A[M,K] * B[N,K]^T
 *   A    M rows of K/2 bytes, row-major (K contiguous), two e2m1 values per byte: element 2j
 *        in the low nibble, 2j+1 in the high nibble. e2m1 codes 0..7 are
 *        0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign.
 *   B    N rows of K/2 bytes, same format.
 *   SFA  one e4m3 (float8_e4m3fn) scale per 16 consecutive k of a row of A, in the cuBLAS
 *        block-scaling "blocked" layout: rows padded to a multiple of 128, scale columns (K/16)
 *        padded to a multiple of 4; row r, scale column j lives at byte
 *          ((r/128) * (padded_cols/4) + j/4) * 512 + (r%32) * 16 + ((r%128)/32) * 4 + (j%4)
 *        so the buffer holds ceil(M/128)*128 * padded_cols bytes.
 *   SFB  the same for B (N rows).
 *   C    M rows of N fp16 values, row-major; the product is accumulated in fp32 and rounded
 *        once to fp16.
 * Valid groups: any number of groups >= 1; M >= 0 (M = 0: that group does nothing and its
 * pointers are not read); N >= 8 and a multiple of 8; K >= 64 and a multiple of 64; every
 * pointer of a group with M > 0 a device pointer aligned to 16 bytes. Anything else is
 * rejected with NVFP4JIT_ERR_INVALID_PROBLEM and a message naming the group and the field.
 *
 * Threading: a context is not thread-safe; use one per thread, or serialise calls on it.
 * Plans are bound to their context. Messages returned by nvfp4jit_last_error() belong to the
 * context and stay valid until the next call on that context.
 */
#ifndef NVFP4JIT_H
#define NVFP4JIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NVFP4JIT_BUILDING) && defined(__GNUC__)
#define NVFP4JIT_API __attribute__((visibility("default")))
#else
#define NVFP4JIT_API
#endif

/* ---- version --------------------------------------------------------------------------- */
#define NVFP4JIT_VERSION_MAJOR 0
#define NVFP4JIT_VERSION_MINOR 1
#define NVFP4JIT_VERSION_PATCH 0
#define NVFP4JIT_VERSION_NUMBER \
    (NVFP4JIT_VERSION_MAJOR * 10000 + NVFP4JIT_VERSION_MINOR * 100 + NVFP4JIT_VERSION_PATCH)
#define NVFP4JIT_VERSION_STRING "0.1.0"

/** @return NVFP4JIT_VERSION_NUMBER of the library actually linked; compare it with the macro
 *  to catch a header/library mismatch. */
NVFP4JIT_API int nvfp4jit_version_number(void);
/** @return the library's version string (static storage). */
NVFP4JIT_API const char *nvfp4jit_version_string(void);

/* ---- status ---------------------------------------------------------------------------- */
/* X(name, value, description). Values never change; new codes are appended. */
#define NVFP4JIT_STATUS_MAP(X)                                                               \
    X(OK,                 0, "success")                                                     \
    X(ERR_INVALID_ARG,    1, "invalid argument")                                            \
    X(ERR_INVALID_PROBLEM,2, "invalid problem set")                                         \
    X(ERR_UNSUPPORTED_ARCH,3, "unsupported architecture")                                    \
    X(ERR_INVALID_VARIANT,4, "invalid kernel variant")                                       \
    X(ERR_OUT_OF_MEMORY,  5, "out of host memory")                                          \
    X(ERR_TEMPLATE,       6, "template rendering failed")                                   \
    X(ERR_COMPILE,        7, "NVRTC compilation failed")                                    \
    X(ERR_LINK,           8, "nvJitLink failed")                                            \
    X(ERR_CACHE,          9, "disk cache error")                                            \
    X(ERR_NO_DRIVER,     10, "CUDA driver not available")                                   \
    X(ERR_NO_DEVICE,     11, "no CUDA device / context")                                    \
    X(ERR_ARCH_MISMATCH, 12, "variant architecture does not match the device")              \
    X(ERR_CUDA,          13, "CUDA driver call failed")                                     \
    X(ERR_NOT_FOUND,     14, "not found")                                                   \
    X(ERR_TUNE_DB,       15, "tuning database error")                                       \
    X(ERR_IO,            16, "file I/O error")                                              \
    X(ERR_INTERNAL,      17, "internal error")

typedef enum nvfp4jit_status {
#define NVFP4JIT_X_ENUM(name, value, desc) NVFP4JIT_##name = value,
    NVFP4JIT_STATUS_MAP(NVFP4JIT_X_ENUM)
#undef NVFP4JIT_X_ENUM
} nvfp4jit_status;

/** @return a static, human-readable name for a status ("NVFP4JIT_ERR_COMPILE: NVRTC ...");
 *  never NULL, also for values outside the enum. */
NVFP4JIT_API const char *nvfp4jit_status_string(nvfp4jit_status s);

/* ---- context --------------------------------------------------------------------------- */
typedef struct nvfp4jit_ctx nvfp4jit_ctx;

/** Options for a context; zero-initialise, then set what you need. NULL strings mean defaults. */
typedef struct nvfp4jit_ctx_options {
    /** Cache directory. NULL: $NVFP4JIT_CACHE_DIR, else $XDG_CACHE_HOME/nvfp4jit, else
     *  $HOME/.cache/nvfp4jit. Created on first write. */
    const char *cache_dir;
    /** 1: do not read or write the disk cache (in-memory map only). */
    int disable_disk_cache;
    /** 1: print warnings (e.g. a corrupt cache entry being rebuilt) to stderr. Default 0,
     *  warnings are also readable with nvfp4jit_last_warning(). */
    int verbose;
} nvfp4jit_ctx_options;

/** Create a context. Loads nothing from the CUDA driver: everything but running works without
 *  a GPU. @param opts may be NULL (defaults). @param out receives the context, or NULL on
 *  error. @return NVFP4JIT_OK, NVFP4JIT_ERR_INVALID_ARG (out is NULL),
 *  NVFP4JIT_ERR_OUT_OF_MEMORY, NVFP4JIT_ERR_TEMPLATE (the Lua state could not be made). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ctx_create(const nvfp4jit_ctx_options *opts,
                                                 nvfp4jit_ctx **out);
/** Destroy a context and everything it owns (compiled variants, plans still alive must be
 *  destroyed before). Accepts NULL. */
NVFP4JIT_API void nvfp4jit_ctx_destroy(nvfp4jit_ctx *ctx);

/** @return the detail of the last failed call on ctx (NVRTC log, template file:line, CUresult
 *  name, group and field), or "" if none. Owned by ctx, valid until the next call on ctx.
 *  With ctx NULL, returns the message of the last failed nvfp4jit_ctx_create in this thread. */
NVFP4JIT_API const char *nvfp4jit_last_error(const nvfp4jit_ctx *ctx);
/** @return the last warning recorded on ctx (e.g. a corrupt cache entry rebuilt), or "". */
NVFP4JIT_API const char *nvfp4jit_last_warning(const nvfp4jit_ctx *ctx);
/** @return the cache directory the context uses (owned by ctx). */
NVFP4JIT_API const char *nvfp4jit_cache_dir(const nvfp4jit_ctx *ctx);

/* ---- variants ---------------------------------------------------------------------------- */
typedef enum nvfp4jit_arch {
    NVFP4JIT_ARCH_SM90A = 90,   /* H100 / H200: dequantise to fp16 in the kernel, wgmma */
    NVFP4JIT_ARCH_SM100A = 100, /* B200: tcgen05.mma kind::mxf4nvf4 (compiled, not run here) */
} nvfp4jit_arch;

/** One kernel variant. Which values are valid depends on the arch; see
 *  nvfp4jit_variant_check(). */
typedef struct nvfp4jit_variant {
    nvfp4jit_arch arch;
    int block_m;   /* rows of the MMA's M side per CTA (sm_100a: 128) */
    int block_n;   /* rows of the MMA's N side per CTA */
    int block_k;   /* k per pipeline stage */
    int stages;    /* pipeline depth */
    int swap_ab;   /* sm_90a: 1 = B (weights) on the MMA's M side, A (tokens) on its N side,
                      C written transposed; the choice for small M. sm_100a: must be 0. */
} nvfp4jit_variant;

/** Check a variant against its arch's rules (shared memory, MMA shapes, tensor memory).
 *  @return NVFP4JIT_OK, NVFP4JIT_ERR_UNSUPPORTED_ARCH or NVFP4JIT_ERR_INVALID_VARIANT with the
 *  broken rule in nvfp4jit_last_error(ctx). ctx may be NULL (no message kept). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_variant *v);

/** Format a variant as "sm90a:128x128x64:s3" (+ ":swap"). @return chars written (excluding
 *  NUL), or the length needed if buf is too small (like snprintf). */
NVFP4JIT_API int nvfp4jit_variant_format(const nvfp4jit_variant *v, char *buf, size_t n);
/** Parse the form written by nvfp4jit_variant_format. @return NVFP4JIT_OK or
 *  NVFP4JIT_ERR_INVALID_ARG (the string is malformed; nothing is checked against rules). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_parse(const char *s, nvfp4jit_variant *out);

/** Enumerate the valid variant space of an arch. Writes at most cap variants into out (may be
 *  NULL when cap is 0) and stores the total count in *count.
 *  @return NVFP4JIT_OK or NVFP4JIT_ERR_UNSUPPORTED_ARCH / NVFP4JIT_ERR_INVALID_ARG. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_space(nvfp4jit_arch arch, nvfp4jit_variant *out,
                                                    size_t cap, size_t *count);

/* ---- compiling and inspecting ------------------------------------------------------------ */
typedef struct nvfp4jit_kernel nvfp4jit_kernel; /* a compiled variant, owned by its ctx */

/** Resource report of a compiled variant (read from the cubin and the ptxas report). */
typedef struct nvfp4jit_resources {
    int registers;            /* per thread */
    int shared_static_bytes;  /* static shared memory */
    int shared_dynamic_bytes; /* dynamic shared memory the launch asks for */
    int spill_store_bytes;
    int spill_load_bytes;
    int local_bytes;          /* stack frame per thread */
    int threads;              /* threads per CTA */
    double compile_ms;        /* wall time of render+NVRTC+nvJitLink; 0 on a cache hit */
    int from_cache;           /* 1 = loaded from the disk cache, 2 = from the in-memory map */
} nvfp4jit_resources;

/** Render, compile (or find in the cache) a variant. The kernel is owned by ctx and lives
 *  until ctx is destroyed; calling again with the same variant returns the same kernel.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG; NVFP4JIT_ERR_INVALID_VARIANT;
 *  NVFP4JIT_ERR_TEMPLATE; NVFP4JIT_ERR_COMPILE / NVFP4JIT_ERR_LINK (full log in
 *  nvfp4jit_last_error); NVFP4JIT_ERR_CACHE is never returned for a bad entry (it is rebuilt
 *  with a warning), only when an entry cannot be written and the variant is still usable
 *  this is reported as a warning, not an error. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_compile(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v,
                                              nvfp4jit_kernel **out);

/** What nvfp4jit_kernel_artifact can return. */
typedef enum nvfp4jit_artifact {
    NVFP4JIT_ARTIFACT_SOURCE = 0, /* rendered CUDA source (NUL-terminated) */
    NVFP4JIT_ARTIFACT_PTX = 1,    /* PTX (NUL-terminated) */
    NVFP4JIT_ARTIFACT_CUBIN = 2,  /* cubin ELF (binary) */
    NVFP4JIT_ARTIFACT_LOG = 3,    /* NVRTC + nvJitLink logs (NUL-terminated, may be "") */
    NVFP4JIT_ARTIFACT_CACHE_KEY = 4, /* the cache key, 32 hex chars */
    NVFP4JIT_ARTIFACT_CACHE_PATH = 5 /* the cache entry's directory, "" without disk cache */
} nvfp4jit_artifact;

/** Borrow an artifact of a compiled kernel: *data points into memory owned by the kernel.
 *  @return NVFP4JIT_OK or NVFP4JIT_ERR_INVALID_ARG. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_kernel_artifact(const nvfp4jit_kernel *k,
                                                      nvfp4jit_artifact what,
                                                      const void **data, size_t *size);
/** Copy the resource report of a compiled kernel. @return NVFP4JIT_OK or ERR_INVALID_ARG. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_kernel_resources(const nvfp4jit_kernel *k,
                                                       nvfp4jit_resources *out);
/** @return the variant a kernel was compiled for, or NULL if k is NULL. */
NVFP4JIT_API const nvfp4jit_variant *nvfp4jit_kernel_variant(const nvfp4jit_kernel *k);

/* ---- problem sets, plans, running --------------------------------------------------------- */
/** One group of a problem set. Pointers are CUdeviceptr values (device addresses). */
typedef struct nvfp4jit_group {
    int64_t m, n, k;
    uint64_t a, b, sfa, sfb, c;
} nvfp4jit_group;

/** Check a problem set against the data contract (no device access).
 *  @return NVFP4JIT_OK, or NVFP4JIT_ERR_INVALID_PROBLEM with e.g.
 *  "group 3: K=100 is not a multiple of 64" in nvfp4jit_last_error(ctx). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_problem_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_group *groups,
                                                    size_t num_groups);
/** As nvfp4jit_problem_check but on shapes only: pointers are not checked. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_problem_check_shapes(nvfp4jit_ctx *ctx,
                                                           const nvfp4jit_group *groups,
                                                           size_t num_groups);

typedef struct nvfp4jit_plan nvfp4jit_plan;

/** How a plan chose its variant. */
typedef enum nvfp4jit_choice {
    NVFP4JIT_CHOICE_HEURISTIC = 0,
    NVFP4JIT_CHOICE_FORCED = 1,
    NVFP4JIT_CHOICE_TUNED = 2
} nvfp4jit_choice;

/** Make a plan for a problem set on an arch: choose a variant (forced when `force` is not
 *  NULL, else the heuristic) and compile it. Shapes are taken from groups (pointers may be 0
 *  here; they are given to nvfp4jit_plan_run). No device access.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_PROBLEM; NVFP4JIT_ERR_INVALID_VARIANT;
 *  NVFP4JIT_ERR_UNSUPPORTED_ARCH; compile errors as nvfp4jit_compile. *out = NULL on error. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                  const nvfp4jit_group *groups,
                                                  size_t num_groups,
                                                  const nvfp4jit_variant *force,
                                                  nvfp4jit_plan **out);
/** Destroy a plan and free its device buffers (synchronises nothing: the caller must make
 *  sure no launch of the plan is still running). Accepts NULL. */
NVFP4JIT_API void nvfp4jit_plan_destroy(nvfp4jit_plan *plan);
/** @return the plan's variant and how it was chosen (choice may be NULL). */
NVFP4JIT_API const nvfp4jit_variant *nvfp4jit_plan_variant(const nvfp4jit_plan *plan,
                                                           nvfp4jit_choice *choice);
/** @return the plan's compiled kernel (owned by the ctx). */
NVFP4JIT_API nvfp4jit_kernel *nvfp4jit_plan_kernel(const nvfp4jit_plan *plan);

/** Launch the grouped GEMM on `stream` (a CUstream; 0 = the legacy default stream) in the
 *  caller's current CUDA context (if no context is current, the primary context of device 0
 *  is made current). groups may have other M and pointers than at plan creation, but the
 *  same count, N and K. One launch per call; the device-side tile list and group table are
 *  uploaded only when shapes or pointers changed since the last call (steady state: no
 *  allocation, no host synchronisation). A plan must not be run on several streams at once.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_PROBLEM; NVFP4JIT_ERR_NO_DRIVER;
 *  NVFP4JIT_ERR_NO_DEVICE; NVFP4JIT_ERR_ARCH_MISMATCH (e.g. an sm_100a plan on an H200);
 *  NVFP4JIT_ERR_CUDA (the CUresult name is in the message). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_run(nvfp4jit_plan *plan,
                                               const nvfp4jit_group *groups,
                                               size_t num_groups, void *stream);

/** Compute capability of the current (or first) device as major*10+minor, e.g. 90.
 *  @return NVFP4JIT_OK, NVFP4JIT_ERR_NO_DRIVER or NVFP4JIT_ERR_NO_DEVICE. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_device_arch(nvfp4jit_ctx *ctx, int *cc);

#ifdef __cplusplus
}
#endif
#endif /* NVFP4JIT_H */
