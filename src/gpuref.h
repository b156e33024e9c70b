/* gpuref.h - the GPU reference kernel (templates/reference_gemm.cu): one thread per output,
 * double accumulation, for checking shapes too big for the CPU reference. The public entry
 * points are nvfp4jit_reference_run / nvfp4jit_reference_run_ex (include/nvfp4jit.h). */
#ifndef NJ_GPUREF_H
#define NJ_GPUREF_H

#include "common.h"
#include "jit.h"

#define NJ_GPUREF_KERNEL_NAME "nvfp4jit_reference"
#define NJ_GPUREF_TEMPLATE "reference_gemm.cu"
#define NJ_GPUREF_TILE 16 /* a CTA is TILE x TILE threads, one output each */

/* The reference kernel for arch (sm_90a or sm_100a), through the one JIT path (src/jit.c):
 * from ctx's map, the disk cache (key: "kind=reference" + kernel name + NVRTC/nvJitLink
 * options and versions + source, so it never collides with a grouped-GEMM variant's key) or
 * compiled. No device is needed. @return NVFP4JIT_OK with *out owned by ctx;
 * NVFP4JIT_ERR_UNSUPPORTED_ARCH; template and compile errors as nvfp4jit_compile. */
nvfp4jit_status gpuref_get(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, nj_module **out);

/* Check the groups (and sum_abs' alignment), get the reference kernel for the device's arch,
 * load it and launch it once per non-empty group: nvfp4jit_reference_run_ex without the
 * argument check and the clearing of ctx's message. */
nvfp4jit_status gpuref_run(nvfp4jit_ctx *ctx, const nvfp4jit_group *groups, size_t num_groups,
                           const uint64_t *sum_abs, void *stream);

#endif
