/* gpuref.c - the GPU reference: render templates/reference_gemm.cu, compile it through the
 * one JIT path of the variants (src/jit.c, under a key of its own), and launch it once per
 * non-empty group. */
#include "gpuref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "variant.h"

nvfp4jit_status gpuref_get(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, nj_module **out) {
    *out = NULL;
    const family *f = fam_get(arch); /* (the family table, src/arch.c) */
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "GPU reference: arch %d is not supported (sm_90a = 90, sm_100a = 100)",
                 (int)arch);
    const char *an = f->arch_name;
    char stem[64];
    snprintf(stem, sizeof stem, "reference_gemm_%s", an);
    tmpl_param p[] = {{"ARCH", 1, 0, an},
                      {"KERNEL_NAME", 1, 0, NJ_GPUREF_KERNEL_NAME},
                      {"TILE", 0, NJ_GPUREF_TILE, NULL}};
    nj_jit_req req = {
        .kind = NJ_KIND_REFERENCE,
        .v = {.arch = arch},
        .what = "reference kernel",
        .label = "reference",
        .stem = stem,
        .template_name = NJ_GPUREF_TEMPLATE,
        .params = p,
        .nparams = (int)(sizeof p / sizeof p[0]),
        .arch_name = an,
        .kernel_name = NJ_GPUREF_KERNEL_NAME,
        .prep_name = NULL,
        .key_kind = "reference",
        .threads = NJ_GPUREF_TILE * NJ_GPUREF_TILE,
        .dyn_smem = 0,
    };
    return nj_jit_get(ctx, &req, out);
}

/* The reference run: the body of nvfp4jit_reference_run_ex (src/nvfp4jit.c checks ctx and
 * clears its message). */
nvfp4jit_status gpuref_run(nvfp4jit_ctx *ctx, const nvfp4jit_group *groups, size_t num_groups,
                           const uint64_t *sum_abs, void *stream) {
    NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, groups, num_groups, 1));
    for (size_t i = 0; sum_abs && i < num_groups; i++)
        NJ_RETURN_IF(ctx, groups[i].m > 0 && sum_abs[i] % 4, NVFP4JIT_ERR_INVALID_PROBLEM,
                     "group %zu: sum_abs pointer 0x%llx is not 4-byte aligned", i,
                     (unsigned long long)sum_abs[i]);
    nvfp4jit_status s;
    const drv_api *api = drv_get(ctx, &s);
    if (!api) return s;
    int cc = ctx->device_cc;
    const family *fam = fam_for_cc(cc); /* the arch this cc runs (family.h) */
    NJ_RETURN_IF(ctx, !fam, NVFP4JIT_ERR_ARCH_MISMATCH,
                 "the GPU reference is built for sm_90a (compute capability 9.0) or sm_100a "
                 "(10.0); the device is compute capability %d.%d",
                 cc / 10, cc % 10);
    nj_module *g = NULL;
    NJ_FORWARD_IF_ERROR(gpuref_get(ctx, fam->arch, &g));
    NJ_FORWARD_IF_ERROR(nj_jit_load(ctx, api, g));
    const unsigned tile = NJ_GPUREF_TILE;
    for (size_t i = 0; i < num_groups; i++) {
        const nvfp4jit_group *p = &groups[i];
        if (p->m == 0) continue; /* nothing to do, pointers not read */
        /* x: n tiles (N <= 2^24, far below the 2^31-1 limit); y: m tiles, capped at the
         * 65535 limit of gridDim.y (the kernel loops over the rest) */
        unsigned gx = (unsigned)((p->n + tile - 1) / tile);
        int64_t ty = (p->m + tile - 1) / tile;
        unsigned gy = ty > 65535 ? 65535u : (unsigned)ty;
        CUdeviceptr a = p->a, b = p->b, sfa = p->sfa, sfb = p->sfb, c = p->c;
        CUdeviceptr sa = sum_abs ? sum_abs[i] : 0;
        int m = (int)p->m, n = (int)p->n, k = (int)p->k;
        void *args[] = {&a, &b, &sfa, &sfb, &c, &sa, &m, &n, &k};
        CUresult r = api->cuLaunchKernel(g->fn, gx, gy, 1, tile, tile, 1, 0, (CUstream)stream,
                                         args, NULL);
        if (r != CUDA_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "cuLaunchKernel (reference kernel, group %zu)", i);
            return drv_fail(ctx, r, what);
        }
    }
    return NVFP4JIT_OK;
}
