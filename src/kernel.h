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
    CUcontext mod_ctx;
};


/* Render a variant's source into out (no compile). */
nvfp4jit_status nj_render(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_buf *out);

/* Load the kernel's module in the current context (once). */
nvfp4jit_status nj_kernel_load(nvfp4jit_ctx *ctx, const drv_api *api, nvfp4jit_kernel *k);

#endif
