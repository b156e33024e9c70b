/* gpudata.h - shared by the GPU test areas (test_gpu.c, test_gpuref.c): the device check,
 * random problem data on host and device, output poisoning, the fp32 accumulation allowance.
 *
 * Data: fresh random bytes for A and B (all 16 e2m1 codes), scales over subnormal..448; one
 * operand of each group draws from the whole range and the other from a range capped so that
 * sums over K stay inside fp16 (which one alternates by group). */
#ifndef NJ_GPUDATA_H
#define NJ_GPUDATA_H

#include <stdint.h>

#include "driver.h"
#include "testutil.h"

#define GPU_CASE_MAX 512 /* groups of a case */
typedef struct gpu_case {
    size_t n;
    nvfp4jit_group g[GPU_CASE_MAX];
    uint8_t *ha[GPU_CASE_MAX], *hb[GPU_CASE_MAX], *hsfa[GPU_CASE_MAX], *hsfb[GPU_CASE_MAX];
    uint16_t *hc[GPU_CASE_MAX];
    CUdeviceptr da[GPU_CASE_MAX], db[GPU_CASE_MAX], dsfa[GPU_CASE_MAX], dsfb[GPU_CASE_MAX], dc[GPU_CASE_MAX];
} gpu_case;

/* The driver API with a current context (cc receives the compute capability), or NULL with
 * the reason in nvfp4jit_last_error(ctx). */
const drv_api *gpu_api(nvfp4jit_ctx *ctx, int *cc);

/* Declares `api`; skips the test (destroying ctx) without a device of compute capability 9.0,
 * printing "skipped: no CUDA device ..." so that CTest reports it as skipped. */
#define NEED_SM90(ctx, api)                                                                  \
    int cc_ = 0;                                                                             \
    const drv_api *api = gpu_api(ctx, &cc_);                                                 \
    if (!api) {                                                                              \
        char why_[160];                                                                      \
        snprintf(why_, sizeof why_, "%s", nvfp4jit_last_error(ctx));                         \
        nvfp4jit_ctx_destroy(ctx);                                                           \
        SKIP("skipped: no CUDA device (%s)", why_);                                          \
    }                                                                                        \
    if (cc_ != 90) {                                                                         \
        nvfp4jit_ctx_destroy(ctx);                                                           \
        SKIP("skipped: no CUDA device of compute capability 9.0 (found %d)", cc_);           \
    }

/* fp32 accumulation allowance: the standard bound for summing n terms in floating point,
 * |error| <= n * u * sum|terms| with u = 2^-24 (fp32), where the tensor core adds K/16 partial
 * sums of 16 exact products each (plus a few additions inside one wgmma). */
#define ACC_EPS(k) (((double)(k) / 16 + 4) / 16777216.0)

/* The exponent cap of the capped operand's scales for this K (keeps |C| well inside fp16). */
int scale_cap(int64_t k);
/* A seed that differs from run to run (printed by the tests that use it). */
uint64_t fresh_seed(void);

/* Make a case: host data for every group (shapes[i] = {M, N, K}), device copies for groups
 * with M > 0 (C allocated, not written). @return 0, -1 on failure (call case_free anyway). */
int case_alloc(const drv_api *api, gpu_case *c, const int64_t (*shapes)[3], size_t n,
               uint64_t seed);
void case_free(const drv_api *api, gpu_case *c);
/* Fill every non-empty group's C with 0xFF (fp16 NaN), so an unwritten element fails. */
void poison(const drv_api *api, gpu_case *c);

/* Compare one group's output (host copy, M x N fp16) with the CPU reference under the
 * DESIGN.md tolerance plus the fp32 accumulation allowance; prints what failed under
 * `label` and group gi. @return 0 if it passes, 1 if not. */
int group_check(const uint16_t *out, const uint8_t *a, const uint8_t *sfa, const uint8_t *b,
                const uint8_t *sfb, int64_t m, int64_t n, int64_t k, const char *label,
                size_t gi);

/* A context with the disk cache only when NVFP4JIT_CACHE_DIR is set (CTest sets it). */
nvfp4jit_ctx *new_ctx(void);

/* The shapes of set `set` in problems/<file>: *shapes (malloc'ed, {M, N, K} each) and *n.
 * @return 0, or -1 with the reason printed. */
int set_shapes(const char *file, const char *set, int64_t (**shapes)[3], size_t *n);

#endif
