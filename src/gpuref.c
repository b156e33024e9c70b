/* gpuref.c - the GPU reference: render templates/reference_gemm.cu, compile it through the
 * same NVRTC/nvJitLink path and disk cache as the variants (under a key of its own), and
 * launch it once per non-empty group. */
#include "gpuref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "compile.h"
#include "family.h"
#include "kernel.h"
#include "template.h"

static int arch_slot(nvfp4jit_arch arch) {
    return arch == NVFP4JIT_ARCH_SM90A ? 0 : arch == NVFP4JIT_ARCH_SM100A ? 1 : -1;
}

static const char *arch_name(nvfp4jit_arch arch) { return fam_get(arch)->arch_name; }

static void ref_free(nj_gpuref *g) {
    if (!g) return;
    nj_buf_free(&g->source);
    nj_buf_free(&g->ptx);
    nj_buf_free(&g->cubin);
    nj_buf_free(&g->log);
    free(g);
}

void gpuref_free(nvfp4jit_ctx *ctx) {
    for (int i = 0; i < 2; i++) {
        nj_gpuref *g = ctx->gpuref[i];
        if (!g) continue;
        if (g->mod) {
            /* NOTE: cuModuleUnload acts on the current context; a module of another (maybe
             * destroyed) context is left to that context's destruction. */
            const drv_api *api = drv_load();
            CUcontext cur = NULL;
            if (api && api->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == g->mod_ctx)
                api->cuModuleUnload(g->mod);
        }
        ref_free(g);
        ctx->gpuref[i] = NULL;
    }
}

/* Manifest lines of a cache entry: what it is, then the key fields as "key.<name> = value". */
static void manifest(const nj_gpuref *g, const char *keytext, nj_buf *m) {
    nj_buf_printf(m, "variant = reference\nlibrary = %s\n", NVFP4JIT_VERSION_STRING);
    for (const char *p = keytext; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq)
            nj_buf_printf(m, "key.%.*s = %.*s\n", (int)(eq - p), p,
                          (int)(len - (size_t)(eq - p) - 1), eq + 1);
        if (!e) break;
        p = e + 1;
    }
    nj_buf_printf(m, "registers = %d\nspill_stores = %d\nspill_loads = %d\nstack_frame = %d\n",
                  g->res.registers, g->res.spill_store_bytes, g->res.spill_load_bytes,
                  g->res.local_bytes);
    nj_buf_printf(m, "threads = %d\ncompile_ms = %.1f\n", g->res.threads, g->res.compile_ms);
}

nvfp4jit_status gpuref_get(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, nj_gpuref **out) {
    *out = NULL;
    int slot = arch_slot(arch);
    NJ_RETURN_IF(ctx, slot < 0, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "GPU reference: arch %d is not supported (sm_90a = 90, sm_100a = 100)",
                 (int)arch);
    if (ctx->gpuref[slot]) {
        ctx->gpuref[slot]->res.from_cache = 2;
        ctx->gpuref[slot]->res.compile_ms = 0;
        *out = ctx->gpuref[slot];
        return NVFP4JIT_OK;
    }
    const char *an = arch_name(arch);
    double t0 = nj_now_ms();
    nj_gpuref *g = calloc(1, sizeof *g);
    NJ_RETURN_IF(ctx, !g, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (reference kernel)");
    g->arch = arch;
    nj_buf_init(&g->source);
    nj_buf_init(&g->ptx);
    nj_buf_init(&g->cubin);
    nj_buf_init(&g->log);
    tmpl_param p[] = {{"ARCH", 1, 0, an},
                      {"KERNEL_NAME", 1, 0, NJ_GPUREF_KERNEL_NAME},
                      {"TILE", 0, NJ_GPUREF_TILE, NULL}};
    nvfp4jit_status s = tmpl_render(ctx, NJ_GPUREF_TEMPLATE, p, 3, &g->source);
    if (s != NVFP4JIT_OK) {
        ref_free(g);
        return s;
    }
    /* The key: a "kind" line no variant key has, then what nvfp4jit_compile hashes. */
    nj_buf keytext, keybuf;
    nj_buf_init(&keytext);
    nj_buf_init(&keybuf);
    int oom = nj_buf_printf(&keytext, "kind=reference\nformat=%d\nkernel=%s\n", NJ_CACHE_FORMAT,
                            NJ_GPUREF_KERNEL_NAME);
    oom |= nvrtc_key_text(an, &keytext);
    oom |= nj_buf_append(&keybuf, keytext.data, keytext.len);
    oom |= nj_buf_append(&keybuf, g->source.data, g->source.len);
    if (oom) {
        nj_buf_free(&keytext);
        nj_buf_free(&keybuf);
        ref_free(g);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (cache key)");
    }
    nj_hash128_hex(keybuf.data, keybuf.len, g->key);
    nj_buf_free(&keybuf);
    g->res.threads = NJ_GPUREF_TILE * NJ_GPUREF_TILE;

    nj_artifacts art = {&g->source, &g->ptx, &g->cubin, &g->log};
    if (ctx->disk_cache) cache_entry_path(ctx->cache_dir, g->key, g->path, sizeof g->path);
    int hit = nj_cache_fetch(ctx, g->key, "reference kernel", &art, &g->res);
    if (hit) g->res.from_cache = 1;
    if (!hit) {
        nvrtc_result r;
        nvrtc_result_init(&r);
        char prog[64];
        snprintf(prog, sizeof prog, "reference_gemm_%s.cu", an);
        s = nvrtc_compile(ctx, g->source.data, prog, an, &r);
        if (s != NVFP4JIT_OK) {
            nvrtc_result_free(&r);
            nj_buf_free(&keytext);
            ref_free(g);
            return s;
        }
        g->ptx = r.ptx;
        g->cubin = r.cubin;
        g->log = r.log;
        g->res = r.res;
        g->res.threads = NJ_GPUREF_TILE * NJ_GPUREF_TILE;
        g->res.compile_ms = nj_now_ms() - t0;
        g->res.from_cache = 0;
        if (ctx->disk_cache) {
            nj_buf m;
            nj_buf_init(&m);
            manifest(g, keytext.data, &m);
            nj_cache_put(ctx, g->key, "reference kernel", &art, &m);
            nj_buf_free(&m);
        }
    }
    nj_buf_free(&keytext);
    if (!ctx->disk_cache) g->path[0] = '\0';
    ctx->gpuref[slot] = g;
    *out = g;
    return NVFP4JIT_OK;
}

/* Load the module in the current context (once per context). */
static nvfp4jit_status ref_load(nvfp4jit_ctx *ctx, const drv_api *api, nj_gpuref *g) {
    CUcontext cur = NULL;
    api->cuCtxGetCurrent(&cur);
    if (g->mod && g->mod_ctx == cur) return NVFP4JIT_OK;
    CUmodule m;
    CUresult r = api->cuModuleLoadData(&m, g->cubin.data);
    if (r != CUDA_SUCCESS) return drv_fail(ctx, r, "cuModuleLoadData (reference kernel)");
    CUfunction fn;
    r = api->cuModuleGetFunction(&fn, m, NJ_GPUREF_KERNEL_NAME);
    if (r != CUDA_SUCCESS) {
        api->cuModuleUnload(m);
        return drv_fail(ctx, r, "cuModuleGetFunction (reference kernel)");
    }
    g->mod = m; /* a module of an earlier context is left to that context */
    g->fn = fn;
    g->mod_ctx = cur;
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_reference_run_ex(nvfp4jit_ctx *ctx,
                                                       const nvfp4jit_group *groups,
                                                       size_t num_groups, const uint64_t *sum_abs,
                                                       void *stream) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    NJ_FORWARD_IF_ERROR(nvfp4jit_problem_check(ctx, groups, num_groups)); /* clears ctx too */
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
    nj_gpuref *g = NULL;
    NJ_FORWARD_IF_ERROR(gpuref_get(ctx, fam->arch, &g));
    NJ_FORWARD_IF_ERROR(ref_load(ctx, api, g));
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

NVFP4JIT_API nvfp4jit_status nvfp4jit_reference_run(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_group *groups,
                                                    size_t num_groups, void *stream) {
    return nvfp4jit_reference_run_ex(ctx, groups, num_groups, NULL, stream);
}
