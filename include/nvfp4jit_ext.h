/* nvfp4jit_ext.h - the extension API: what the nvfp4jit command (tools/) needs beyond the
 * contract of nvfp4jit.h, for tools built on the library.
 *
 * STABILITY: these declarations may change in any release, source and ABI alike; they are not
 * covered by the version promise of nvfp4jit.h (the way zstd gates its advanced API behind
 * ZSTD_STATIC_LINKING_ONLY). Link statically (libnvfp4jit.a) against the exact version whose
 * header you compiled with. To use them, define NVFP4JIT_STATIC_LINKING_ONLY before including
 * this header; without it the header refuses to compile.
 *
 *   #define NVFP4JIT_STATIC_LINKING_ONLY
 *   #include "nvfp4jit_ext.h"
 *
 * What is here, in groups, each a thin wrapper over one internal subsystem of the library:
 *   - problem sets: the text format of problems/NAME.txt and of a "MxNxK,..." string
 *   - the CPU reference: e2m1/e4m3 decoding, the blocked scale layout, random test data,
 *     the grouped GEMM in double and the tolerance check
 *   - the disk cache: listing, verifying and clearing entries
 *   - the tuning database: problem-set signatures and the plan-time lookup
 *   - the heuristic: the cost model's ranking of the valid variants, with its terms
 *   - the CUDA driver the library loaded (libcuda.so.1, or NVFP4JIT_CUDA_DRIVER)
 * Every name is prefixed nvfp4jit_ext_ / NVFP4JIT_EXT_. Functions that take a context record
 * their error on it (nvfp4jit_last_error) as the functions of nvfp4jit.h do. */
#ifndef NVFP4JIT_EXT_H
#define NVFP4JIT_EXT_H

#if !defined(NVFP4JIT_STATIC_LINKING_ONLY)
#error "nvfp4jit_ext.h is not ABI-stable: define NVFP4JIT_STATIC_LINKING_ONLY to use it"
#endif

#include <stddef.h>
#include <stdint.h>

#include "nvfp4jit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- problem sets ------------------------------------------------------------------------------
 * A problems file holds one set per line: a name, then one MxNxK token per group, separated
 * by blanks. '#' starts a comment (to the end of the line); blank lines are skipped. A groups
 * string is MxNxK tokens separated by commas (blanks around a token are ignored). Numbers are
 * decimal digits only, at most NVFP4JIT_EXT_DIM_MAX. Only syntax and range are checked; the
 * data contract is nvfp4jit_problem_check_shapes(). */
#define NVFP4JIT_EXT_DIM_MAX 2147483647LL
#define NVFP4JIT_EXT_SET_NAME_MAX 128

typedef struct nvfp4jit_ext_shape {
    int64_t m, n, k;
} nvfp4jit_ext_shape;

typedef struct nvfp4jit_ext_set {
    char name[NVFP4JIT_EXT_SET_NAME_MAX];
    nvfp4jit_ext_shape *groups; /* malloc'ed, count entries */
    size_t count;
    int line; /* line in its file (0 for a groups string) */
} nvfp4jit_ext_set;

typedef struct nvfp4jit_ext_problems {
    nvfp4jit_ext_set *sets; /* malloc'ed, count entries, in file order */
    size_t count;
} nvfp4jit_ext_problems;

/** Parse one MxNxK token (len bytes at tok, not NUL-terminated).
 *  @return 0, or -1 with the reason in err (the caller says where the token was). */
NVFP4JIT_API int nvfp4jit_ext_parse_shape(const char *tok, size_t len, nvfp4jit_ext_shape *out,
                                          char *err, size_t err_n);
/** Parse "MxNxK,MxNxK,..." into a set named name (NULL: "groups"). @return 0, or -1 with the
 *  message in err (groups numbered from 0); out is then empty and needs no free. */
NVFP4JIT_API int nvfp4jit_ext_parse_groups(const char *s, const char *name,
                                           nvfp4jit_ext_set *out, char *err, size_t err_n);
/** Read and parse a problems file (a regular file of at most 16 MiB). Duplicate set names and
 *  sets without groups are errors. @return 0, or -1 with "file:line: ..." in err. */
NVFP4JIT_API int nvfp4jit_ext_problems_load(const char *path, nvfp4jit_ext_problems *out,
                                            char *err, size_t err_n);
/** Release what a set / a file owns; both accept a zeroed or already-freed object. */
NVFP4JIT_API void nvfp4jit_ext_set_free(nvfp4jit_ext_set *s);
NVFP4JIT_API void nvfp4jit_ext_problems_free(nvfp4jit_ext_problems *f);

/* ---- the CPU reference ---------------------------------------------------------------------- */
/** e2m1 code (low 4 bits) -> value; float8_e4m3fn byte -> value (0x7F/0xFF are NaN). */
NVFP4JIT_API double nvfp4jit_ext_ref_e2m1(unsigned code);
NVFP4JIT_API double nvfp4jit_ext_ref_e4m3(unsigned byte);
/** Nearest fp16 (round to nearest even) as bits, and back. */
NVFP4JIT_API uint16_t nvfp4jit_ext_ref_f16_from_double(double x);
NVFP4JIT_API double nvfp4jit_ext_ref_f16_to_double(uint16_t h);
/** The blocked scale layout: bytes for rows x K, and the offset of (row r, scale column j). */
NVFP4JIT_API size_t nvfp4jit_ext_ref_sf_bytes(int64_t rows, int64_t k);
NVFP4JIT_API size_t nvfp4jit_ext_ref_sf_offset(int64_t r, int64_t j, int64_t k);
/** One group, C[M][N] (fp16 bits) = A * B^T, every product and the sum in double, rounded once;
 *  up to `threads` threads (the result does not depend on it). Aborts when out of memory. */
NVFP4JIT_API void nvfp4jit_ext_ref_gemm(const uint8_t *a, const uint8_t *sfa, const uint8_t *b,
                                        const uint8_t *sfb, int64_t m, int64_t n, int64_t k,
                                        uint16_t *c, int threads);

/** Deterministic random generator (splitmix64 seeding, xoshiro256**). */
typedef struct nvfp4jit_ext_rng {
    uint64_t s[4];
} nvfp4jit_ext_rng;
NVFP4JIT_API void nvfp4jit_ext_rng_seed(nvfp4jit_ext_rng *r, uint64_t seed);
/** Random packed operand (rows x K/2 bytes, all 16 e2m1 codes uniformly). */
NVFP4JIT_API void nvfp4jit_ext_ref_fill_packed(nvfp4jit_ext_rng *r, uint8_t *packed,
                                               int64_t rows, int64_t k);
/** Random blocked scales for rows x K: positive finite e4m3 values from 2^-9 up to
 *  2^max_exp * 1.875 (max_exp clamped to [-9, 8]), padding bytes 0. */
NVFP4JIT_API void nvfp4jit_ext_ref_fill_scales(nvfp4jit_ext_rng *r, uint8_t *sf_blocked,
                                               int64_t rows, int64_t k, int max_exp);

/** The result of nvfp4jit_ext_ref_compare(). */
typedef struct nvfp4jit_ext_ref_check {
    int64_t bad;       /* elements outside the element-wise tolerance, or NaN */
    int64_t first_bad; /* index of the first one, -1 if none */
    double max_abs_err;
    double rel_l2; /* ||out-ref|| / ||ref|| */
    int pass;
} nvfp4jit_ext_ref_check;
/** |out-ref| <= atol + rtol*|ref| element-wise (NaN never passes, equal infinities pass) and
 *  ||out-ref|| / ||ref|| <= rel_l2. res may be NULL. @return 1 if all pass. */
NVFP4JIT_API int nvfp4jit_ext_ref_compare(const uint16_t *out, const uint16_t *ref,
                                          int64_t count, double atol, double rtol,
                                          double rel_l2, nvfp4jit_ext_ref_check *res);

/* ---- the disk cache ------------------------------------------------------------------------- */
/** Visit every entry under the cache directory dir (nvfp4jit_cache_dir()), in key order:
 *  cb(key, entry_dir, ok, why, user), ok = 1 when the entry verifies (why is "" then); bad
 *  entries are only reported. cb may be NULL. @return the number of entries visited, -1 if dir
 *  cannot be read (a missing dir has 0). */
typedef void (*nvfp4jit_ext_cache_visit_fn)(const char *key, const char *entry_dir, int ok,
                                            const char *why, void *user);
NVFP4JIT_API int nvfp4jit_ext_cache_foreach(const char *dir, nvfp4jit_ext_cache_visit_fn cb,
                                            void *user);
/** The manifest text of entry key (a key that foreach passed) under dir, NUL-terminated and cut
 *  to n - 1 bytes, read without following a symlink anywhere below dir; nothing is verified.
 *  @return the length copied, -1 when it cannot be read (no such entry, a link, not a regular
 *  file, larger than 1 MiB). */
NVFP4JIT_API int nvfp4jit_ext_cache_manifest(const char *dir, const char *key, char *out,
                                             size_t n);
/** Remove every entry (good or bad) and what crashed writers left. @return the number of
 *  entries removed, -1 on error (err says the first). */
NVFP4JIT_API int nvfp4jit_ext_cache_clear(const char *dir, char *err, size_t err_n);

/* ---- the tuning database (nvfp4jit_tune_db_path()) ------------------------------------------ */
#define NVFP4JIT_EXT_SIGNATURE_MAX 1024
/** The problem-set signature the database is keyed by: "<arch>:" then per group
 *  "<bucket(M)>x<N>x<K>" (runs of equal groups as "...*r"), or a hash of it when that does not
 *  fit NVFP4JIT_EXT_SIGNATURE_MAX. @return 0, -1 on bad arguments (out has room for cap). */
NVFP4JIT_API int nvfp4jit_ext_tune_signature(nvfp4jit_arch arch, const nvfp4jit_group *g,
                                             size_t n, char *out, size_t cap);
/** What nvfp4jit_plan_create() would take from the database for this set on this device.
 *  @return 1 and *v when there is a valid entry, else 0 (also without a driver or database). */
NVFP4JIT_API int nvfp4jit_ext_tune_lookup(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                          const nvfp4jit_group *g, size_t n,
                                          nvfp4jit_variant *v);

/* ---- the heuristic -------------------------------------------------------------------------- */
/** One variant as the cost model sees it: the estimate and the terms it is made of. */
typedef struct nvfp4jit_ext_candidate {
    nvfp4jit_variant variant;
    double est_us;    /* estimated time */
    double mma_us;    /* tensor-core time of the busiest SM */
    double decode_us; /* dequantisation time of the busiest SM (sm_90a) */
    double mem_us;    /* DRAM floor, plus L2 re-reads */
    long long tiles;
    double waves;
    double waste; /* fraction of MMA work spent on padding */
    /* sm_100a, and for sm_90a act16 ctas_per_sm, kstep_us and ring_us (0 elsewhere): CTAs
     * per SM and what limits them, the time of one k-step and the time per k-step the stage
     * ring allows */
    int ctas_per_sm, occ_smem, occ_tmem, occ_regs;
    double kstep_us, ring_us;
} nvfp4jit_ext_candidate;

/** Rank every valid variant of arch for the set, best first: writes at most cap candidates
 *  (out may be NULL when cap is 0), *count = how many were ranked. sms = 0: the device's SM
 *  count, else the arch's usual one. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_rank(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                               const nvfp4jit_group *g, size_t n, int sms,
                                               nvfp4jit_ext_candidate *out, size_t cap,
                                               size_t *count);
/** The heuristic's choice for the set, without the tuning database and without a plan. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                 const nvfp4jit_group *g, size_t n,
                                                 nvfp4jit_variant *v, nvfp4jit_choice *choice);
/** The DRAM round trip (us) the sm_100a cost model assumes a stage ring must cover. */
NVFP4JIT_API double nvfp4jit_ext_sm100_ring_latency_us(void);
/** Threads per CTA and dynamic shared memory (bytes) of a variant's kernel.
 *  @return NVFP4JIT_OK, NVFP4JIT_ERR_UNSUPPORTED_ARCH, or NVFP4JIT_ERR_INVALID_ARG (NULL). */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_variant_launch(const nvfp4jit_variant *v,
                                                         int *threads, size_t *dyn_smem);

/* ---- the CUDA driver ------------------------------------------------------------------------
 * The library loads the driver itself (dlopen of libcuda.so.1, or of NVFP4JIT_CUDA_DRIVER) on
 * first use. A tool that launches its own work (test data, timing, baselines) uses the same
 * driver through these two calls, so that it never loads a second one. */
/** Load the driver and make sure a context is current: the caller's, or device 0's primary
 *  context. @return NVFP4JIT_OK, else NVFP4JIT_ERR_NO_DRIVER / NVFP4JIT_ERR_NO_DEVICE /
 *  NVFP4JIT_ERR_CUDA with the detail on ctx. */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_cuda_init(nvfp4jit_ctx *ctx);
/** The address of the driver's entry point called name, by its versioned symbol name (what
 *  <cuda.h> maps the API name to, e.g. "cuMemAlloc_v2"); cast it to the type <cuda.h> gives.
 *  @return NULL before the driver is loaded (nvfp4jit_ext_cuda_init) or when there is no such
 *  entry point. */
NVFP4JIT_API void *nvfp4jit_ext_cuda_proc(const char *name);

#ifdef __cplusplus
}
#endif

#endif
