/* kernel.h - a compiled variant (the in-memory map entry) and the compile path. */
#ifndef NJ_KERNEL_H
#define NJ_KERNEL_H

#include "common.h"
#include "driver.h"

#define NJ_KERNEL_NAME "nvfp4jit_grouped"

struct nvfp4jit_kernel {
    struct nvfp4jit_kernel *next;
    nvfp4jit_variant v;
    char key[33];
    char path[4096]; /* cache entry directory, "" without disk cache */
    nj_buf source, ptx, cubin, log;
    nvfp4jit_resources res;
    /* device side, loaded on first launch */
    CUmodule mod;
    CUfunction fn;
    CUfunction fn_prep; /* <KERNEL_NAME>_prep when the module has one (sm_90a act16), else NULL */
    int dyn_smem_attr;  /* fn's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: only ever raised */
    CUcontext mod_ctx;
};


/* Render a variant's source into out (no compile). */
nvfp4jit_status nj_render(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_buf *out);

/* The compiled artifacts of one cache key: what nj_cache_fetch fills and nj_cache_put stores. */
typedef struct nj_artifacts {
    const nj_buf *source;      /* the rendered source (compared on a hit, stored on a put) */
    nj_buf *ptx, *cubin, *log; /* filled on a hit; stored on a put */
} nj_artifacts;

/* Look key up in the context's disk cache (a no-op returning 0 without one). On a good entry
 * with the same source, move its PTX, cubin and log into a, parse the resources from the log
 * into *res and return 1. A corrupt entry (moved aside by the cache) or a failed lookup is a
 * warning naming `what` (e.g. "sm90a:128x128x64:s4", "reference kernel"), and 0. */
int nj_cache_fetch(nvfp4jit_ctx *ctx, const char *key, const char *what, nj_artifacts *a,
                   nvfp4jit_resources *res);
/* Store a's buffers (and manifest lines) under key in the disk cache, if there is one; a
 * failure is a warning naming `what` (the artifacts stay usable). */
void nj_cache_put(nvfp4jit_ctx *ctx, const char *key, const char *what, const nj_artifacts *a,
                  const nj_buf *manifest);

/* Load the kernel's module in the current context (once). */
nvfp4jit_status nj_kernel_load(nvfp4jit_ctx *ctx, const drv_api *api, nvfp4jit_kernel *k);

#endif
