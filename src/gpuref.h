/* gpuref.h - the GPU reference kernel (templates/reference_gemm.cu): one thread per output,
 * double accumulation, for checking shapes too big for the CPU reference. The public entry
 * points are nvfp4jit_reference_run / nvfp4jit_reference_run_ex (include/nvfp4jit.h). */
#ifndef NJ_GPUREF_H
#define NJ_GPUREF_H

#include "common.h"
#include "driver.h"

#define NJ_GPUREF_KERNEL_NAME "nvfp4jit_reference"
#define NJ_GPUREF_TEMPLATE "reference_gemm.cu"
#define NJ_GPUREF_TILE 16 /* a CTA is TILE x TILE threads, one output each */

/* The compiled reference kernel of one arch, owned by its ctx (ctx->gpuref[]). */
typedef struct nj_gpuref {
    nvfp4jit_arch arch;
    char key[33];
    char path[4096]; /* cache entry directory, "" without disk cache */
    nj_buf source, ptx, cubin, log;
    nvfp4jit_resources res;
    /* device side, loaded on first launch in a CUDA context */
    CUmodule mod;
    CUfunction fn;
    CUcontext mod_ctx;
} nj_gpuref;

/* Render and compile the reference kernel for arch (sm_90a or sm_100a), or take it from the
 * disk cache (key: "kind=reference" + kernel name + NVRTC/nvJitLink options and versions +
 * source, so it never collides with a grouped-GEMM variant's key) or from ctx. No device is
 * needed. @return NVFP4JIT_OK with *out owned by ctx; NVFP4JIT_ERR_UNSUPPORTED_ARCH; template
 * and compile errors as nvfp4jit_compile. */
nvfp4jit_status gpuref_get(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, nj_gpuref **out);

/* Free what ctx->gpuref holds (called by nvfp4jit_ctx_destroy). A loaded module is unloaded
 * when its CUDA context is the current one (else it is left to its context's destruction). */
void gpuref_free(nvfp4jit_ctx *ctx);

#endif
