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
 * Valid groups: 1 to NVFP4JIT_MAX_GROUPS (2^20) groups; M >= 0 (M = 0: that group does
 * nothing and its pointers are not read); N >= 8 and a multiple of 8; K >= 64 and a multiple
 * of 64; M, N and K at most NVFP4JIT_MAX_DIM (2^24: the kernels index with 32 bits and TMA
 * limits a dimension); every pointer of a group with M > 0 a device pointer aligned to 16
 * bytes. Anything else is rejected with NVFP4JIT_ERR_INVALID_PROBLEM and a message naming the
 * group and the field. Groups are numbered from 0 in every message (the library's and the
 * command's).
 *
 * Files and the cache directory are untrusted input (README "Trust and limits"): a cache
 * directory that others can write to is not used (the memory cache is, with a warning), one
 * owned by another user is used read-only (with a warning); symlinks below it are never
 * followed, FIFOs and devices are never opened for reading, a cached cubin must be a CUDA ELF
 * for the entry's arch. Templates render in a fresh, bounded Lua state.
 *
 * Threading: a context is not thread-safe; use one per thread, or serialise calls on it.
 * Plans are bound to their context. Messages returned by nvfp4jit_last_error() belong to the
 * context and stay valid until the next call on that context.
 *
 * Errors (as SQLite's sqlite3_errmsg): every call that can fail on a context - it takes the
 * context, or a plan, weights or MoE plan made on it, and returns nvfp4jit_status; all but the
 * ones listed below - clears the context's message when it starts and, if it fails, leaves its detail there; so after a failed
 * call nvfp4jit_last_error(ctx) holds that call's detail until the next such call on the
 * context. The library never clears the message from inside a call: what a failed call leaves is
 * its own failure, never emptied or replaced by an inner step. These calls keep the message as
 * it is (they do not fail on a context): nvfp4jit_last_error, nvfp4jit_last_warning,
 * nvfp4jit_cache_dir, nvfp4jit_tune_db_path, nvfp4jit_version_*, nvfp4jit_status_string,
 * nvfp4jit_variant_format, nvfp4jit_variant_parse, nvfp4jit_variant_space,
 * nvfp4jit_kernel_artifact, nvfp4jit_kernel_resources, nvfp4jit_kernel_variant,
 * nvfp4jit_plan_variant, nvfp4jit_plan_kernel, nvfp4jit_moe_plan_info, nvfp4jit_scale_bytes,
 * nvfp4jit_moe_scale_rows and every *_destroy. A call given a NULL context (where the context
 * may be NULL, as nvfp4jit_variant_check and nvfp4jit_problem_check) records its message
 * nowhere; only a failed nvfp4jit_ctx_create sets the per-thread message that
 * nvfp4jit_last_error(NULL) returns. Warnings (nvfp4jit_last_warning) stay until the next
 * warning replaces them.
 *
 * Environment: nvfp4jit_ctx_create reads NVFP4JIT_CACHE_DIR (or XDG_CACHE_HOME, HOME),
 * NVFP4JIT_DUMP_DIR, NVFP4JIT_TEMPLATE_DIR and NVFP4JIT_NO_TUNE once into the context; changing
 * them afterwards does not affect it. NVFP4JIT_CUDA_DRIVER is read once per process, when the
 * driver is first loaded (the driver is process-wide).
 */
#ifndef NVFP4JIT_H
#define NVFP4JIT_H

/** Limits of a problem set (nvfp4jit_problem_check_shapes). */
#define NVFP4JIT_MAX_GROUPS (1u << 20)
#define NVFP4JIT_MAX_DIM (1 << 24)

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
 *  a GPU. The driver is loaded on first use with dlopen("libcuda.so.1"), or the library that
 *  the environment variable NVFP4JIT_CUDA_DRIVER names (a path; for tests, e.g. the fake driver
 *  tests/fakecuda builds; ignored in set-user-ID/set-group-ID processes). @param opts may be NULL (defaults). @param out receives the context, or NULL on
 *  error. @return NVFP4JIT_OK, NVFP4JIT_ERR_INVALID_ARG (out is NULL),
 *  NVFP4JIT_ERR_OUT_OF_MEMORY, NVFP4JIT_ERR_TEMPLATE (the Lua state could not be made).
 *  The environment variables of the context (see "Environment" at the top) are read here,
 *  once; NVFP4JIT_ERR_INVALID_ARG also when NVFP4JIT_DUMP_DIR or NVFP4JIT_TEMPLATE_DIR is
 *  longer than 3895 bytes or the default cache directory is too long. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ctx_create(const nvfp4jit_ctx_options *opts,
                                                 nvfp4jit_ctx **out);
/** Destroy a context and everything it owns (compiled variants, plans still alive must be
 *  destroyed before). The modules it loaded (variants, the GPU reference) are unloaded when
 *  the CUDA context they were loaded in is current on the calling thread; a module of another
 *  CUDA context is left to that context's destruction (so CUDA graphs that captured launches
 *  of this context's kernels must not be launched after this call). Accepts NULL. */
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
    int strategy;  /* sm_90a: NVFP4JIT_STRATEGY_*; sm_100a: must be 0 */
} nvfp4jit_variant;

/** sm_90a strategies (how the NVFP4 operands reach the fp16 tensor cores). */
enum {
    /** Both operands are dequantised by the GEMM kernel into fp16 tiles in shared memory. */
    NVFP4JIT_STRATEGY_DUAL = 0,
    /** "act16" (formatted ":act16", needs swap_ab = 1 and BLOCK_K = 64, 128 or 256: one, two
     *  or four 64-k blocks per ring stage): a first kernel
     *  dequantises the tokens (A) once to fp16 into a workspace the plan owns; the GEMM kernel
     *  (warp-specialised: one TMA producer warp, BLOCK_M/64 consumer warpgroups, an
     *  mbarrier ring of STAGES stages; at BLOCK_M 256 with BLOCK_N > 64 a producer warpgroup
     *  that gives its registers to two consumer warpgroups of 128 rows with setmaxnreg,
     *  compiled whole-program: NVRTC -dlto, nvJitLink -lto) decodes the weights (B) straight into wgmma's register
     *  operand and reads the fp16 tokens from shared memory where TMA put them. The plan
     *  holds a device workspace of 2 * sum(M*K) bytes for the fp16 tokens (grown on demand,
     *  freed with the plan). The heuristic leaves act16 out for sets that would need more
     *  than 4 GiB of it or more than 2^31 - 256 sixteen-value token blocks; forced (or taken
     *  from the tuning database) on a set over the second limit, nvfp4jit_plan_create fails
     *  with NVFP4JIT_ERR_INVALID_PROBLEM before compiling anything. */
    NVFP4JIT_STRATEGY_ACT16 = 1,
    /** "act16p" (formatted ":act16p"): act16 on a persistent grid, as many CTAs per SM as
     *  the kernel is compiled for (as act16: small tiles fit several), each looping over the
     *  tiles, so a CTA's loads for its next tile overlap the stores of its last one. */
    NVFP4JIT_STRATEGY_ACT16P = 2,
    /** "act16sk" (formatted ":act16sk"): act16p with a static stream-K schedule: with two
     *  whole waves of tiles or more, each CTA first runs whole tiles in act16p's order, then
     *  the k-steps of the last one to two waves' tiles are split evenly over the persistent
     *  CTAs (with fewer, all of them are; no part-empty last wave); where that would save
     *  less than about 8 k-steps, no tile is split and it runs act16p's schedule; a tile cut
     *  between CTAs is summed in fp32 through the workspace in a fixed order (the CTAs' order,
     *  so a result does not depend on timing; it may differ in the last bit from act16's, which
     *  sums in k order, and between devices of different SM counts). The plan's workspace
     *  grows by one BLOCK_M x BLOCK_N fp32 slot and a flag per CTA slot (160 SMs x the CTAs
     *  per SM). Grouped calls only (not the MoE path). The heuristic never chooses it (faster
     *  than act16 of the same tile on some sets, slower on others, with no model yet of which:
     *  bench/RESULTS.md); nvfp4jit_tune times it beside act16 (see its candidates option), or
     *  name it explicitly. */
    NVFP4JIT_STRATEGY_ACT16SK = 3
};

/** Check a variant against its arch's rules (shared memory, MMA shapes, tensor memory).
 *  @return NVFP4JIT_OK, NVFP4JIT_ERR_UNSUPPORTED_ARCH or NVFP4JIT_ERR_INVALID_VARIANT with the
 *  broken rule in nvfp4jit_last_error(ctx). ctx may be NULL: no message is kept anywhere
 *  (nvfp4jit_last_error(NULL), the message of a failed nvfp4jit_ctx_create, is not touched). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_variant *v);

/** Format a variant as "sm90a:128x128x64:s3" (+ ":swap", ":act16", ":act16p").
 *  buf may be NULL (then n is ignored and nothing is written: a length query).
 *  @return chars written (excluding NUL), or the length needed if buf is too small (like
 *  snprintf). */
NVFP4JIT_API int nvfp4jit_variant_format(const nvfp4jit_variant *v, char *buf, size_t n);
/** Largest number nvfp4jit_variant_parse accepts for BLOCK_M/N/K or STAGES (the validity
 *  rules of nvfp4jit_variant_check are much tighter). */
#define NVFP4JIT_VARIANT_MAX_PARAM 65536
/** Parse exactly the form written by nvfp4jit_variant_format: numbers are decimal digits
 *  with no sign, blank or leading zero, each 1..NVFP4JIT_VARIANT_MAX_PARAM; nothing else may
 *  follow. @return NVFP4JIT_OK or NVFP4JIT_ERR_INVALID_ARG (the string is malformed or a
 *  number is out of range; nothing is checked against the validity rules). */
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
    /* Fields are only ever appended. nvfp4jit_kernel_resources writes the whole struct, so
       a program must be built against the header of the library it runs with (ctypes
       bindings: the same fields). Appended after from_cache (issue 10): compile_ms in parts. */
    double render_ms;         /* template rendering (also on a disk-cache hit: the key hashes
                                 the source); 0 from the in-memory map */
    double nvrtc_ms;          /* NVRTC, source -> PTX (whole-program: LTO-IR); 0 on a cache hit */
    double link_ms;           /* nvJitLink, PTX -> cubin (ptxas; whole-program: LTO-IR -> cubin
                               * and PTX); 0 on a cache hit */
    /* Appended after link_ms: */
    int cache_state;          /* an nvfp4jit_cache_state: is the cubin in the disk cache? (from
                                 the in-memory map: as when the kernel was made) */
} nvfp4jit_resources;

/** nvfp4jit_resources.cache_state: whether a compiled kernel's cubin is in the disk cache. A
 *  store that fails is only a warning for nvfp4jit_compile (the kernel is usable); this tells a
 *  program whose job is filling the cache (`nvfp4jit warm`) that nothing reached it. */
typedef enum nvfp4jit_cache_state {
    /** The context has no disk cache: disable_disk_cache, no directory could be determined
     *  (no cache_dir, NVFP4JIT_CACHE_DIR, XDG_CACHE_HOME or HOME; nvfp4jit_cache_dir is ""), or
     *  the directory is not used (writable by other users, or not a directory: the context's
     *  warning from nvfp4jit_ctx_create says why). */
    NVFP4JIT_CACHE_NONE = 0,
    /** In the disk cache: loaded from it (from_cache = 1), or stored there by this compile. */
    NVFP4JIT_CACHE_STORED = 1,
    /** The directory is another user's: looked up, never written; the cubin was not stored. */
    NVFP4JIT_CACHE_READ_ONLY = 2,
    /** Compiled, but storing it failed (nvfp4jit_last_warning says why). */
    NVFP4JIT_CACHE_STORE_FAILED = 3
} nvfp4jit_cache_state;

/** Render, compile (or find in the cache) a variant. The kernel is owned by ctx and lives
 *  until ctx is destroyed; calling again with the same variant returns the same kernel.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG; NVFP4JIT_ERR_INVALID_VARIANT;
 *  NVFP4JIT_ERR_TEMPLATE; NVFP4JIT_ERR_COMPILE / NVFP4JIT_ERR_LINK (full log in
 *  nvfp4jit_last_error); NVFP4JIT_ERR_CACHE is never returned for a bad entry (it is rebuilt
 *  with a warning), only when an entry cannot be written and the variant is still usable
 *  this is reported as a warning, not an error (nvfp4jit_resources.cache_state then says
 *  NVFP4JIT_CACHE_STORE_FAILED). */
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

/** Make a plan for a problem set on an arch: choose a variant and compile it. The variant
 *  is `force` when it is not NULL; else the tuning database's entry for this device and
 *  problem-set signature when there is one (NVFP4JIT_CHOICE_TUNED, see nvfp4jit_tune());
 *  else the heuristic. Shapes are taken from groups (pointers may be 0 here; they are given
 *  to nvfp4jit_plan_run). The only device access is reading the device's attributes: its
 *  compute capability and SM count for the heuristic (see nvfp4jit_plan_sms), and its name
 *  and driver version for the tuning-database lookup (no CUDA context is created; without a
 *  driver or device the heuristic models the arch's usual SM count and the lookup is skipped
 *  silently). The lookup is also skipped
 *  when the context has no disk cache or NVFP4JIT_NO_TUNE is set to a non-empty value other
 *  than "0"; an entry whose variant is invalid is ignored with a warning.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_PROBLEM; NVFP4JIT_ERR_INVALID_VARIANT;
 *  NVFP4JIT_ERR_UNSUPPORTED_ARCH; compile errors as nvfp4jit_compile. *out = NULL on error. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                  const nvfp4jit_group *groups,
                                                  size_t num_groups,
                                                  const nvfp4jit_variant *force,
                                                  nvfp4jit_plan **out);
/** Destroy a plan and free its device buffers, including the immutable copies that CUDA
 *  graphs captured from its runs read: destroy a plan only after every graph captured from
 *  it is destroyed and no launch of it is still running (it waits only for the events of
 *  its own eager uploads). Accepts NULL. */
NVFP4JIT_API void nvfp4jit_plan_destroy(nvfp4jit_plan *plan);
/** @return the plan's variant and how it was chosen (choice may be NULL). */
NVFP4JIT_API const nvfp4jit_variant *nvfp4jit_plan_variant(const nvfp4jit_plan *plan,
                                                           nvfp4jit_choice *choice);
/** @return the plan's compiled kernel (owned by the ctx). */
NVFP4JIT_API nvfp4jit_kernel *nvfp4jit_plan_kernel(const nvfp4jit_plan *plan);
/** @return the SM count the plan's variant was chosen for (0 for NULL). The heuristic's
 *  inputs are the problem set's shapes, the arch and this count, nothing else: it is looked
 *  up once, at nvfp4jit_plan_create, from the device (the caller's current CUDA context's
 *  device, else device 0; no context is created) when that device runs the arch, else it is
 *  the arch's usual count (sm_90a 132, sm_100a 148). So the same nvfp4jit_plan_create on
 *  the same machine chooses the same variant in every process, before and after any run.
 *  Recorded for forced and tuned plans too (it is then not what chose the variant). */
NVFP4JIT_API int nvfp4jit_plan_sms(const nvfp4jit_plan *plan);

/** Launch the grouped GEMM on `stream` (a CUstream; 0 = the legacy default stream) in the
 *  caller's current CUDA context (if no context is current, the primary context of device 0
 *  is made current). groups may have other M and pointers than at plan creation, but the
 *  same count, N and K. One launch per call (two for act16/act16p: a token prep kernel, then
 *  the GEMM as its programmatic dependent (PDL, cuLaunchKernelEx): the GEMM's CTAs may start
 *  while the prep's last ones finish and wait for its tokens on the device).
 *  - Same groups as the last eager call: no allocation, no copy, no host synchronisation.
 *  - Other groups (new pointers, other M): the device-side group table, tensor maps and tile
 *    list are built on the host into one of up to 16 upload buffers that no launch still
 *    reads (found by an event query, never a wait) and uploaded asynchronously; the call
 *    waits for the device only when 16 uploads are still in flight, or (act16) when the
 *    token workspace must grow.
 *  - CUDA graphs: a call on a stream that is being captured (cuStreamBeginCapture, any
 *    mode; torch.cuda.graph) records an immutable copy of what the launch reads, kept by the
 *    plan until nvfp4jit_plan_destroy; every replay computes the problem of its capture,
 *    whatever eager calls or other captures of the plan came before or after. Capturing
 *    with other pointers than the last call's is fine. A captured act16 plan's workspace is
 *    never freed before nvfp4jit_plan_destroy (growing it retires the old one).
 *  Runs of one plan (eager or replayed) must not execute concurrently: use one stream, or
 *  order the streams (the act16 token workspace is shared by all runs of a plan).
 *  - The plan's device buffers belong to the CUDA context of its first run: a run in
 *    another context fails (NVFP4JIT_ERR_INVALID_ARG), and so does every run after that
 *    context was destroyed, even where a new context got its handle (contexts are told apart
 *    by cuCtxGetId); destroying such a plan frees nothing on the device (its memory went with
 *    its context). A primary context reset (cuDevicePrimaryCtxReset, cudaDeviceReset) counts
 *    as destroyed: plans made before it refuse to run, new plans work (tests gpu.primary_reset).
 *    Compiled kernels are loaded once per context, a new context included.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_PROBLEM; NVFP4JIT_ERR_INVALID_ARG (see above);
 *  NVFP4JIT_ERR_NO_DRIVER;
 *  NVFP4JIT_ERR_NO_DEVICE; NVFP4JIT_ERR_ARCH_MISMATCH (e.g. an sm_100a plan on an H200);
 *  NVFP4JIT_ERR_CUDA (the CUresult name is in the message). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_run(nvfp4jit_plan *plan,
                                               const nvfp4jit_group *groups,
                                               size_t num_groups, void *stream);

/* ---- autotuning ------------------------------------------------------------------------- */
/** One timed candidate of nvfp4jit_tune(), in the heuristic's order. */
typedef struct nvfp4jit_tune_result {
    nvfp4jit_variant variant;
    int heuristic_rank;     /* 0 = the heuristic's first choice */
    double est_us;          /* the cost model's estimate */
    double median_us;       /* measured median; < 0 when not timed (see status) */
    double min_us;          /* fastest timed launch; < 0 when not timed */
    nvfp4jit_status status; /* NVFP4JIT_OK, the compile error, or NVFP4JIT_ERR_NOT_FOUND when
                               the time limit ran out before this candidate */
    int winner;             /* 1 for the chosen variant */
} nvfp4jit_tune_result;

/** The most candidates nvfp4jit_tune adds after the `candidates` ranked ones (the act16sk
 *  twins, see nvfp4jit_tune_options.candidates): size a results array candidates + this. */
#define NVFP4JIT_TUNE_MAX_EXTRA 4

/** Options of nvfp4jit_tune(); zero-initialise, then set what you need (0 = default). */
typedef struct nvfp4jit_tune_options {
    /** How many of the heuristic's best-ranked variants (by estimated time) are compiled and
     *  timed. 0: 12. On sm_90a up to NVFP4JIT_TUNE_MAX_EXTRA more follow them: the act16sk
     *  (stream-K) twin (same tile, stages and swap) of each of the first act16 / act16p
     *  candidates of distinct tiles, where the twin would split tiles on this device
     *  (elsewhere it runs act16p's schedule; the heuristic never ranks act16sk; timed last, a
     *  twin wins only when more than 3 % faster). */
    int candidates;
    /** Wall-clock budget in seconds for compiling and timing; candidates not compiled or set up
     *  for timing when it runs out are skipped (the first choice is always timed), no new round
     *  of timing starts after it (the medians then come from the rounds run, at least one).
     *  0: no limit. */
    double time_limit_s;
    /** Timed launches per candidate, each between two CUDA events and each after the L2 is
     *  flushed (twice the device's L2 overwritten outside the events, as `nvfp4jit bench`
     *  times; without the memory for it, a warning and a warm L2); the median is used.
     *  The candidates are timed in turn, in rounds: each runs one untimed launch, then 5
     *  timed ones, per round (iters rounded up to whole rounds; their plans, each with its
     *  own workspace, are alive together meanwhile): during a long run the GPU's clocks fall
     *  under its power cap, and candidates timed one after the other would be ranked by
     *  their place in the order. 0: 20; values below 10 are raised to 10. */
    int iters;
    /** Untimed launches per candidate before timing. 0: 3. */
    int warmup;
    /** Compile threads (one context each, sharing the disk cache directory). 0: the number of
     *  online CPUs, at most 16. Without a disk cache, compiling is serial. */
    int jobs;
    /** 1: draw a progress bar on stderr when stderr is a terminal (nothing otherwise). */
    int progress;
    /** 1: print one line per timed candidate to stderr. */
    int verbose;
    /** 1: do not write the result to the tuning database. */
    int no_store;
    /** Optional: receives up to results_cap candidates (heuristic order, then the twins);
     *  *results_count (if not NULL) the number of candidates considered, at most candidates +
     *  NVFP4JIT_TUNE_MAX_EXTRA. */
    nvfp4jit_tune_result *results;
    size_t results_cap;
    size_t *results_count;
} nvfp4jit_tune_options;

/** Autotune a problem set on the current device (the caller's current CUDA context, else
 *  device 0's primary context): rank the valid variants with the cost model, compile the
 *  best `candidates` of them in parallel (into the disk cache), time each on the device with
 *  CUDA events (warm-up, then the median of `iters` launches), and choose the fastest.
 *  Near-ties are decided deterministically: every candidate whose median is within 3 % of
 *  the fastest is tied, and the tie goes to the one the heuristic ranked higher. The winner
 *  is checked against the CPU reference (ref_gemm) on a sample of every non-empty group
 *  (the first and last 128 rows of A against the first and last 128 rows of B, within a
 *  budget of work): the inputs are copied back from the device, so any data works as long
 *  as its products fit in fp16. A winner that fails the check is dropped (with a warning)
 *  and the next one in the same order is taken.
 *
 *  groups must carry real device pointers (as for nvfp4jit_plan_run): A, B, SFA and SFB are
 *  only read, but C of every group IS OVERWRITTEN (many times) with the product.
 *
 *  Unless opt->no_store, the result is stored in the tuning database (see
 *  nvfp4jit_tune_db_path) under the key (device name, SM count, driver version, library
 *  version, problem-set signature), and nvfp4jit_plan_create uses it for every later problem
 *  set with the same signature on the same device. The signature is the arch plus, per group
 *  in order, (bucket(M), N, K), where bucket(0) = 0, bucket(1..8) = 8 and bucket(M) = the
 *  next power of two >= M above 8 (9..16 -> 16, 17..32 -> 32, 100 -> 128, 128 -> 128).
 *  The database is the text file <cache_dir>/tune-v1.txt: a versioned header line, then one
 *  entry per line (tab-separated: device, SMs, driver, library, signature, variant, median
 *  us); it is rewritten atomically (temporary file + rename) under an flock(2) on
 *  tune-v1.txt.lock, so many processes may tune at once; the last writer wins per key. Lines
 *  that do not parse are ignored with a warning.
 *
 *  @param opt may be NULL (defaults). @param best receives the winner, @param best_us (may be
 *  NULL) its median time in microseconds.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG; NVFP4JIT_ERR_INVALID_PROBLEM;
 *  NVFP4JIT_ERR_UNSUPPORTED_ARCH; NVFP4JIT_ERR_NO_DRIVER / NVFP4JIT_ERR_NO_DEVICE (nothing
 *  else is done then); NVFP4JIT_ERR_ARCH_MISMATCH (the device does not run arch);
 *  NVFP4JIT_ERR_CUDA; compile errors when no candidate compiles; NVFP4JIT_ERR_INTERNAL when no
 *  candidate passes the reference check; NVFP4JIT_ERR_TUNE_DB when the result cannot be
 *  stored (*best is still set). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_tune(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                           const nvfp4jit_group *groups, size_t n,
                                           const nvfp4jit_tune_options *opt,
                                           nvfp4jit_variant *best, double *best_us);

/** @return the path of the context's tuning database (<cache_dir>/tune-v1.txt; owned by ctx,
 *  valid until the next call on ctx), or "" when the context has no cache directory. */
NVFP4JIT_API const char *nvfp4jit_tune_db_path(nvfp4jit_ctx *ctx);

/** Compute capability of the current (or first) device as major*10+minor, e.g. 90.
 *  @return NVFP4JIT_OK, NVFP4JIT_ERR_NO_DRIVER or NVFP4JIT_ERR_NO_DEVICE. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_device_arch(nvfp4jit_ctx *ctx, int *cc);
/** The arch whose code runs on compute capability cc (major*10+minor): sm_90a on 90, sm_100a
 *  on 100 ("a" targets are not forward compatible: nothing else runs them). No device access.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG (arch is NULL);
 *  NVFP4JIT_ERR_UNSUPPORTED_ARCH (no arch runs on cc; *arch unchanged). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_arch_for_cc(int cc, nvfp4jit_arch *arch);

/* ---- GPU reference ------------------------------------------------------------------------ */
/* ---- MoE layers: weights registered once, expert offsets on the device -------------- */

/** Expert weights of one MoE layer: E experts of N x K each (N a positive multiple of 8, K of
 *  64), in the same NVFP4 format as a group's B and SFB. Either stacked, b != 0: expert e at
 *  b + e*N*K/2 and sfb + e*nvfp4jit_scale_bytes(N, K); or per expert, b == 0: host arrays of
 *  E device pointers b_experts / sfb_experts (copied). Every pointer 16-byte aligned. */
typedef struct nvfp4jit_weights_desc {
    int num_experts; /* 1..65536 */
    int64_t n, k;
    uint64_t b, sfb;
    const uint64_t *b_experts, *sfb_experts;
} nvfp4jit_weights_desc;

typedef struct nvfp4jit_weights nvfp4jit_weights;
typedef struct nvfp4jit_moe_plan nvfp4jit_moe_plan;

/** Bytes of one operand's scales in the blocked layout: rows padded to 128, K/16 columns
 *  padded to 4 (rows * K / 16 for K % 64 == 0 and rows % 128 == 0). 0 when rows or k is
 *  negative or the size does not fit a size_t. */
NVFP4JIT_API size_t nvfp4jit_scale_bytes(int64_t rows, int64_t k);

/** Register expert weights (nothing is copied on the device; the weights must stay
 *  unchanged while the object and any plan made from it exist). arch: NVFP4JIT_ARCH_SM90A or
 *  NVFP4JIT_ARCH_SM100A. The sm_100a MoE kernel is COMPILED, LINTED AND EMULATED ONLY: it has
 *  never run on a B200 (README "What is proven how"). No device access.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG (NULL ctx, desc or out; num_experts out of
 *  range; b == 0 without the pointer arrays); NVFP4JIT_ERR_INVALID_PROBLEM (N, K or an
 *  unaligned or NULL pointer, naming the expert); NVFP4JIT_ERR_UNSUPPORTED_ARCH. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_weights_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                     const nvfp4jit_weights_desc *desc,
                                                     nvfp4jit_weights **out);
/** Accepts NULL. Destroy every plan made from it first. */
NVFP4JIT_API void nvfp4jit_weights_destroy(nvfp4jit_weights *w);

/** Rows of the token-scale buffer a MoE call needs for max_rows tokens and E experts: every
 *  expert's scales start at a multiple of 128 rows, so round_up(max_rows + 127 E, 128). 0 when
 *  an argument is negative or the count does not fit an int64_t. */
NVFP4JIT_API int64_t nvfp4jit_moe_scale_rows(int64_t max_rows, int num_experts);

/** Make a MoE plan for up to max_rows tokens (1..2^30, and max_rows * K/16 < 2^31 - 2^24)
 *  over w.
 *  sm_100a weights: the variant is force (a valid sm_100a variant) or the heuristic's best for
 *  max_rows tokens spread evenly; it is compiled (its module holds the MoE entry
 *  nvfp4jit_grouped_moe), and where a compute-capability 10.0 device is current the plan
 *  builds once, on the device, the weight maps and scale pointers of every expert (a blob of
 *  about 300 bytes per expert) and an error word. Without such a device (no driver, or any
 *  other GPU, e.g. an H200) the plan is compiled only, has no device state, and its runs are
 *  refused (NVFP4JIT_ERR_NO_DRIVER / NVFP4JIT_ERR_ARCH_MISMATCH, as an sm_100a grouped plan's
 *  runs are). Never run on a B200.
 *  sm_90a weights: choose a variant (force, else the act16/act16p variant of least worst-case
 *  regret over even, Poisson and exponential spreads of max_rows tokens), compile it, and
 *  build on the device, once, everything a call reads but the tokens: the tensor maps of
 *  every expert's weights and scales, a workspace of 2 * max_rows * K bytes for the fp16
 *  tokens, a tile table of 16 bytes per tile of the worst case (tiles_x * (ceil(max_rows /
 *  BLOCK_N) + E) tiles, tiles_x = ceil(N / BLOCK_M)), an error word, and a CUDA graph of the
 *  call's two kernels (token prep, GEMM) instantiated once. act16 launches one CTA per tile of
 *  that worst case (CTAs past the call's tiles exit at once: choose act16p, the persistent
 *  grid, when calls usually send far fewer than max_rows tokens). Needs the device (sm_90a).
 *  Time and memory: see nvfp4jit_moe_plan_info.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG; NVFP4JIT_ERR_INVALID_VARIANT (a forced dual
 *  variant, or one whose tile table does not fit shared memory with E experts); driver and
 *  compile errors as nvfp4jit_plan_create and nvfp4jit_plan_run. *out = NULL on error. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_plan_create(nvfp4jit_weights *w, int64_t max_rows,
                                                      const nvfp4jit_variant *force,
                                                      nvfp4jit_moe_plan **out);
/** Free the plan's device buffers (the caller makes sure no run or graph replay of it is
 *  still pending, and destroys graphs captured from it first). Accepts NULL. */
NVFP4JIT_API void nvfp4jit_moe_plan_destroy(nvfp4jit_moe_plan *p);

typedef struct nvfp4jit_moe_info {
    nvfp4jit_variant variant;
    nvfp4jit_choice choice;
    size_t device_bytes;  /* workspace and tile table (sm_90a) + constant blob + error word; 0
                           * for a compiled-only sm_100a plan */
    double setup_ms;      /* plan creation: choice, compile or cache hit, maps, uploads */
    unsigned grid;      /* CTAs of the GEMM: sm_90a act16 one per tile of the worst case (see
                         * nvfp4jit_moe_plan_create), act16p persistent, SMs x the CTAs that fit
                         * on one, at most that; sm_100a the worst case, ceil(N / BLOCK_N) x
                         * (ceil(max_rows / 128) + min(E, max_rows)) CTAs; CTAs past the call's
                         * tiles exit at once */
    unsigned prep_grid; /* sm_90a: CTAs of the token prep kernel (CTA 0 writes the tile table,
                         * the others convert the rows); sm_100a: 0, the MoE kernel does it */
    int sms;            /* the SM count the choice was made for (see nvfp4jit_plan_sms) */
} nvfp4jit_moe_info;
/** @return NVFP4JIT_OK, or NVFP4JIT_ERR_INVALID_ARG for NULL arguments. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_plan_info(const nvfp4jit_moe_plan *p,
                                                    nvfp4jit_moe_info *info);

/** One MoE call: tokens sorted by expert. All device pointers.
 *  a: [max_rows, K/2] packed e2m1 tokens; expert e owns rows offsets[e] .. offsets[e+1]-1.
 *  sfa: token scales, nvfp4jit_moe_scale_rows(max_rows, E) rows x K/16 bytes; expert e's
 *       scales are the blocked layout of its rows, starting at scale row sf_offsets[e] (a
 *       multiple of 128), i.e. at byte sf_offsets[e] * K/16.
 *  c: [max_rows, N] fp16 output; rows no valid expert owns are not written.
 *  offsets: int32 [E + 1]; sf_offsets: int32 [E]. */
typedef struct nvfp4jit_moe_call {
    uint64_t a, sfa, c, offsets, sf_offsets;
} nvfp4jit_moe_call;

/** Launch the MoE layer on `stream` (sm_90a: one cuGraphLaunch of the plan's graph of two
 *  kernels, the token prep then the GEMM, its prep node's parameters updated when the call's
 *  pointers differ from the last call's; while `stream` is capturing, the two kernels are
 *  launched plainly instead, so the capture records them with this call's pointers; sm_100a: one ordinary launch of the MoE entry, whose token tensor map is
 *  encoded on the host per call (one cuTensorMapEncodeTiled, no device access) and passed as
 *  a __grid_constant__ parameter; never run on a B200). No host
 *  synchronisation, no allocation, no host work proportional to E: the kernels read the
 *  offsets on the device, so they may be written by a kernel queued just before on the same
 *  stream. Capturable into CUDA graphs: everything per call is a kernel parameter and the
 *  plan's buffers never change, so a replay runs over the buffers given at capture and reads
 *  whatever tokens and offsets they hold then. Runs of one plan must not execute
 *  concurrently (the workspace and tile table are shared), and a plan is called from one host
 *  thread at a time (the graph's update). Offsets are untrusted: an expert whose rows are
 *  negative, decreasing or past max_rows, or whose scale offset is not a multiple of 128 or
 *  runs past the scale buffer, is skipped (its rows of c are not written) and reported by
 *  nvfp4jit_moe_plan_check; no read or write leaves the buffers described above.
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG (NULL p or call, a NULL or unaligned pointer:
 *  a, sfa, c 16 bytes, offsets 4); NVFP4JIT_ERR_CUDA; NVFP4JIT_ERR_INVALID_ARG when another
 *  CUDA context is current than at plan creation, or that context was destroyed (a new
 *  context with its handle is another context; destroying the plan then frees nothing on the
 *  device). */
/*  sm_100a: the same offset rules and error word (faults reported by CTA 0, which validates
 *  every expert; a row fault voids the call, a scale-offset fault skips its expert); a
 *  compiled-only plan returns NVFP4JIT_ERR_NO_DRIVER without a driver and
 *  NVFP4JIT_ERR_ARCH_MISMATCH on a device that is not compute capability 10.0, after the
 *  argument checks. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_run(nvfp4jit_moe_plan *p,
                                              const nvfp4jit_moe_call *call, void *stream);

/** Read and clear the plan's device-side error word (a compiled-only sm_100a plan: NVFP4JIT_OK
 *  at once, nothing ran) (waits for the device: call it after
 *  synchronising the runs' stream, e.g. in a debug build or after a suspicious result).
 *  @return NVFP4JIT_OK when no run since the last check skipped an expert; else
 *  NVFP4JIT_ERR_INVALID_PROBLEM with "expert E: ..." naming the lowest faulty expert and
 *  every fault seen (*expert receives it; may be NULL); NVFP4JIT_ERR_CUDA. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_plan_check(nvfp4jit_moe_plan *p, int *expert);

/** Compute every group's C with the GPU reference kernel, for checking results on shapes too
 *  big for a CPU reference. It is SLOW (one thread per output element, double arithmetic,
 *  no tiling: expect well under 1 % of the grouped GEMM's speed) and meant for tests only.
 *
 *  What it computes, per group with M > 0 and per element: C[m][n] = the sum over k in order
 *  of (e2m1(A[m][k]) * e4m3(SFA)) * (e2m1(B[n][k]) * e4m3(SFB)), every value decoded exactly
 *  by the data contract above (a 16-entry e2m1 table; e4m3 with subnormals, 0x7F/0xFF give
 *  NaN), multiplied and summed in double, rounded ONCE to fp16 (round to nearest even,
 *  overflow to inf, NaN stays NaN) and stored row-major. Every product is exact in double and
 *  so is every partial sum below 2^33, so on data whose products fit in fp16's range the
 *  result is the exact sum correctly rounded, the same bits as the CPU reference.
 *
 *  groups follow the same contract as nvfp4jit_plan_run (checked with
 *  nvfp4jit_problem_check); C of every group with M > 0 is overwritten, groups with M = 0
 *  are skipped (no launch, pointers not read). The kernel is rendered and compiled for the
 *  current device (the caller's current CUDA context, else device 0's primary context:
 *  sm_90a on compute capability 9.0, sm_100a on 10.0) on first use, kept in the disk cache
 *  under a key of its own and in ctx until ctx is destroyed. One launch per non-empty group,
 *  all asynchronous on `stream` (a CUstream; 0 = the legacy default stream).
 *  @return NVFP4JIT_OK; NVFP4JIT_ERR_INVALID_ARG (ctx or groups NULL);
 *  NVFP4JIT_ERR_INVALID_PROBLEM (the group and field in nvfp4jit_last_error);
 *  NVFP4JIT_ERR_NO_DRIVER / NVFP4JIT_ERR_NO_DEVICE; NVFP4JIT_ERR_ARCH_MISMATCH (a device that
 *  is neither cc 9.0 nor 10.0); NVFP4JIT_ERR_TEMPLATE / ERR_COMPILE / ERR_LINK (as
 *  nvfp4jit_compile); NVFP4JIT_ERR_CUDA (the CUresult name is in the message). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_reference_run(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_group *groups,
                                                    size_t num_groups, void *stream);
/** As nvfp4jit_reference_run, and also the error scale of an fp32-accumulating GEMM: sum_abs
 *  is NULL or an array of num_groups device pointers (CUdeviceptr values, 4-byte aligned, 0
 *  to skip a group); sum_abs[g] receives M*N floats, row-major: the sum over k of
 *  |a(m,k) * b(n,k)| computed in double and rounded up (toward +inf) to fp32.
 *  @return as nvfp4jit_reference_run; NVFP4JIT_ERR_INVALID_PROBLEM for a misaligned
 *  sum_abs pointer. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_reference_run_ex(nvfp4jit_ctx *ctx,
                                                       const nvfp4jit_group *groups,
                                                       size_t num_groups,
                                                       const uint64_t *sum_abs, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* NVFP4JIT_H */
