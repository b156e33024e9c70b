/* dispatch.c - plans: a chosen, compiled variant plus the device buffers its launches read.
 *
 * Steady state (same shapes and pointers as the last call): one cuLaunchKernel, no
 * allocation, no copy, no host synchronisation. When shapes or pointers change, the family
 * rebuilds the blob in pinned host memory and one cuMemcpyHtoDAsync on the caller's stream
 * uploads it; stream order keeps the previous launch's reads before the copy. Before the
 * pinned staging buffer is rewritten, the event recorded after the previous upload is waited
 * on (it has normally completed long before). */
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "heuristic.h"
#include "kernel.h"
#include "tune.h"

struct nvfp4jit_plan {
    nvfp4jit_ctx *ctx;
    nvfp4jit_kernel *kernel;
    nvfp4jit_variant v;
    nvfp4jit_choice choice;
    const family *fam;
    size_t num_groups;
    nvfp4jit_group *shapes; /* N, K fixed at creation */
    nvfp4jit_group *last;   /* groups of the last upload (change detection) */
    int have_last;
    /* device side */
    CUcontext cu_ctx;
    CUdeviceptr dblob;
    size_t dblob_cap;
    CUdeviceptr dws; /* workspace of the family's kernels (act16: fp16 tokens) */
    size_t dws_cap;
    unsigned char *hblob; /* pinned */
    size_t hblob_cap;
    CUevent upload_done;
    int upload_pending;
    fam_launch launch;
};

NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                  const nvfp4jit_group *groups,
                                                  size_t num_groups,
                                                  const nvfp4jit_variant *force,
                                                  nvfp4jit_plan **out) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !out, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_plan_create: out is NULL");
    *out = NULL;
    const family *f = fam_get(arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)arch);
    NJ_FORWARD_IF_ERROR(nvfp4jit_problem_check_shapes(ctx, groups, num_groups));
    nvfp4jit_variant v;
    nvfp4jit_choice choice;
    if (force) {
        NJ_RETURN_IF(ctx, force->arch != arch, NVFP4JIT_ERR_INVALID_VARIANT,
                     "forced variant is for arch %d, plan is for %d", (int)force->arch,
                     (int)arch);
        v = *force;
        choice = NVFP4JIT_CHOICE_FORCED;
    } else if (tune_lookup(ctx, arch, groups, num_groups, &v)) {
        choice = NVFP4JIT_CHOICE_TUNED;
    } else {
        NJ_FORWARD_IF_ERROR(heur_choose(ctx, arch, groups, num_groups, &v, &choice));
    }
    char why[256] = "";
    if (f->fits && !f->fits(&v, groups, num_groups, why, sizeof why)) {
        char name[96];
        nvfp4jit_variant_format(&v, name, sizeof name);
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_PROBLEM, "variant %s: %s", name, why);
    }
    nvfp4jit_kernel *k = NULL;
    NJ_FORWARD_IF_ERROR(nvfp4jit_compile(ctx, &v, &k));
    nvfp4jit_plan *p = calloc(1, sizeof *p);
    NJ_RETURN_IF(ctx, !p, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
    p->shapes = malloc(num_groups * sizeof *groups);
    p->last = malloc(num_groups * sizeof *groups);
    if (!p->shapes || !p->last) {
        free(p->shapes);
        free(p->last);
        free(p);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
    }
    memcpy(p->shapes, groups, num_groups * sizeof *groups);
    p->ctx = ctx;
    p->kernel = k;
    p->v = v;
    p->choice = choice;
    p->fam = f;
    p->num_groups = num_groups;
    *out = p;
    return NVFP4JIT_OK;
}

NVFP4JIT_API void nvfp4jit_plan_destroy(nvfp4jit_plan *p) {
    if (!p) return;
    const drv_api *api = p->cu_ctx ? drv_load() : NULL;
    if (api) {
        CUcontext prev = NULL;
        api->cuCtxGetCurrent(&prev);
        if (prev != p->cu_ctx) api->cuCtxSetCurrent(p->cu_ctx);
        if (p->upload_done) {
            if (p->upload_pending) api->cuEventSynchronize(p->upload_done);
            api->cuEventDestroy(p->upload_done);
        }
        if (p->dblob) api->cuMemFree(p->dblob);
        if (p->dws) api->cuMemFree(p->dws);
        if (p->hblob) api->cuMemFreeHost(p->hblob);
        if (prev != p->cu_ctx) api->cuCtxSetCurrent(prev);
    }
    free(p->shapes);
    free(p->last);
    free(p);
}

NVFP4JIT_API const nvfp4jit_variant *nvfp4jit_plan_variant(const nvfp4jit_plan *p,
                                                           nvfp4jit_choice *choice) {
    if (!p) return NULL;
    if (choice) *choice = p->choice;
    return &p->v;
}

NVFP4JIT_API nvfp4jit_kernel *nvfp4jit_plan_kernel(const nvfp4jit_plan *p) {
    return p ? p->kernel : NULL;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_device_arch(nvfp4jit_ctx *ctx, int *cc) {
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !cc, NVFP4JIT_ERR_INVALID_ARG, "cc is NULL");
    *cc = 0;
    nvfp4jit_status s;
    const drv_api *api = drv_get(ctx, &s);
    if (!api) return s;
    CUdevice dev;
    int ma = 0, mi = 0;
    api->cuCtxGetDevice(&dev);
    api->cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    api->cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    *cc = ma * 10 + mi;
    return NVFP4JIT_OK;
}

nvfp4jit_status nj_kernel_load(nvfp4jit_ctx *ctx, const drv_api *api, nvfp4jit_kernel *k) {
    CUcontext cur = NULL;
    api->cuCtxGetCurrent(&cur);
    if (k->mod && k->mod_ctx == cur) return NVFP4JIT_OK;
    CUmodule m;
    CUresult r = api->cuModuleLoadData(&m, k->cubin.data);
    if (r != CUDA_SUCCESS) return drv_fail(ctx, r, "cuModuleLoadData");
    CUfunction fn, fn_prep = NULL;
    r = api->cuModuleGetFunction(&fn, m, NJ_KERNEL_NAME);
    if (r == CUDA_SUCCESS && k->res.shared_dynamic_bytes > 48 * 1024)
        r = api->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    k->res.shared_dynamic_bytes);
    /* only the sm_90a act16 strategies have a prep kernel; asking a module without one would
     * be an API error (CUDA_ERROR_NOT_FOUND) that compute-sanitizer reports */
    if (r == CUDA_SUCCESS && k->v.arch == NVFP4JIT_ARCH_SM90A &&
        k->v.strategy != NVFP4JIT_STRATEGY_DUAL)
        r = api->cuModuleGetFunction(&fn_prep, m, NJ_KERNEL_NAME "_prep");
    if (r != CUDA_SUCCESS) {
        api->cuModuleUnload(m);
        return drv_fail(ctx, r, "preparing the kernel function");
    }
    k->mod = m;
    k->fn = fn;
    k->fn_prep = fn_prep;
    k->mod_ctx = cur;
    return NVFP4JIT_OK;
}

/* Does the device run this arch's cubins? sm_90a code runs only on cc 9.0, sm_100a only on
 * cc 10.0 ("a" targets are not forward compatible). */
static int arch_runs_on(nvfp4jit_arch a, int cc) {
    return (a == NVFP4JIT_ARCH_SM90A && cc == 90) || (a == NVFP4JIT_ARCH_SM100A && cc == 100);
}

/* The one launch of a run (the blob is already on the device). */
static nvfp4jit_status launch(nvfp4jit_plan *p, const drv_api *api, CUstream st) {
    if (p->launch.num_ctas == 0) return NVFP4JIT_OK; /* every group has M = 0 */
    void *args[] = {&p->dblob};
    if (p->launch.prep_ctas) {
        NJ_RETURN_IF(p->ctx, !p->kernel->fn_prep, NVFP4JIT_ERR_INTERNAL,
                     "variant needs a prep kernel but its module has none");
        DRV_CHECK(p->ctx, api,
                  cuLaunchKernel(p->kernel->fn_prep, p->launch.prep_ctas, 1, 1,
                                 p->launch.prep_threads, 1, 1, 0, st, args, NULL),
                  "cuLaunchKernel (prep)");
    }
    DRV_CHECK(p->ctx, api,
              cuLaunchKernel(p->kernel->fn, p->launch.num_ctas, 1, 1, p->launch.threads, 1, 1,
                             (unsigned)p->launch.dyn_smem, st, args, NULL),
              "cuLaunchKernel");
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_run(nvfp4jit_plan *p, const nvfp4jit_group *groups,
                                               size_t num_groups, void *stream) {
    if (!p) return NVFP4JIT_ERR_INVALID_ARG;
    nvfp4jit_ctx *ctx = p->ctx;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, num_groups != p->num_groups, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "plan was made for %zu groups, run got %zu", p->num_groups, num_groups);
    /* fast path: nothing changed since the last upload */
    int same = p->have_last && memcmp(groups, p->last, num_groups * sizeof *groups) == 0;
    if (!same) {
        NJ_FORWARD_IF_ERROR(nvfp4jit_problem_check(ctx, groups, num_groups));
        for (size_t i = 0; i < num_groups; i++) {
            NJ_RETURN_IF(ctx, groups[i].n != p->shapes[i].n || groups[i].k != p->shapes[i].k,
                         NVFP4JIT_ERR_INVALID_PROBLEM,
                         "group %zu: N=%lld K=%lld differ from the plan's N=%lld K=%lld", i,
                         (long long)groups[i].n, (long long)groups[i].k,
                         (long long)p->shapes[i].n, (long long)p->shapes[i].k);
        }
    }
    /* Steady state: the context of the last launch is still current, so the device checks
     * made then still hold; otherwise (first launch, other context) check everything. */
    nvfp4jit_status s;
    const drv_api *api = p->cu_ctx ? drv_load() : NULL;
    CUcontext now = NULL;
    if (api && api->cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == p->cu_ctx) {
        NJ_FORWARD_IF_ERROR(nj_kernel_load(ctx, api, p->kernel)); /* loaded: returns at once */
        if (same) return launch(p, api, (CUstream)stream);
    }
    api = drv_get(ctx, &s);
    if (!api) return s;
    if (!arch_runs_on(p->v.arch, ctx->device_cc)) {
        return nj_fail(ctx, NVFP4JIT_ERR_ARCH_MISMATCH,
                       "plan is for %s but the device is compute capability %d.%d",
                       p->fam->arch_name, ctx->device_cc / 10, ctx->device_cc % 10);
    }
    CUcontext cur = NULL;
    api->cuCtxGetCurrent(&cur);
    if (p->cu_ctx && p->cu_ctx != cur)
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_ARG,
                       "plan's device buffers belong to another CUDA context");
    p->cu_ctx = cur;
    NJ_FORWARD_IF_ERROR(nj_kernel_load(ctx, api, p->kernel));
    CUstream st = (CUstream)stream;
    if (!same) {
        size_t need = p->fam->blob_size(&p->v, groups, num_groups);
        if (p->upload_pending) {
            DRV_CHECK(ctx, api, cuEventSynchronize(p->upload_done), "waiting for the last upload");
            p->upload_pending = 0;
        }
        if (need > p->hblob_cap) {
            if (p->hblob) api->cuMemFreeHost(p->hblob);
            p->hblob = NULL;
            p->hblob_cap = 0;
            void *h = NULL;
            DRV_CHECK(ctx, api, cuMemAllocHost(&h, need), "cuMemAllocHost (plan blob)");
            p->hblob = h;
            p->hblob_cap = need;
        }
        if (need > p->dblob_cap) {
            /* the previous launch may still read the old buffer: free it only after it */
            if (p->dblob) {
                DRV_CHECK(ctx, api, cuStreamSynchronize(st), "cuStreamSynchronize");
                api->cuMemFree(p->dblob);
                p->dblob = 0;
                p->dblob_cap = 0;
            }
            DRV_CHECK(ctx, api, cuMemAlloc(&p->dblob, need), "cuMemAlloc (plan blob)");
            p->dblob_cap = need;
        }
        size_t wneed = p->fam->workspace_size ? p->fam->workspace_size(&p->v, groups, num_groups)
                                              : 0;
        if (wneed > p->dws_cap) {
            if (p->dws) { /* the previous launch may still use it */
                DRV_CHECK(ctx, api, cuStreamSynchronize(st), "cuStreamSynchronize");
                api->cuMemFree(p->dws);
                p->dws = 0;
                p->dws_cap = 0;
            }
            DRV_CHECK(ctx, api, cuMemAlloc(&p->dws, wneed), "cuMemAlloc (plan workspace)");
            p->dws_cap = wneed;
        }
        if (!p->upload_done)
            DRV_CHECK(ctx, api, cuEventCreate(&p->upload_done, CU_EVENT_DISABLE_TIMING),
                      "cuEventCreate");
        p->have_last = 0;
        NJ_FORWARD_IF_ERROR(p->fam->blob_fill(ctx, api, &p->v, groups, num_groups, p->hblob,
                                              (uint64_t)p->dblob, (uint64_t)p->dws,
                                              &p->launch));
        DRV_CHECK(ctx, api, cuMemcpyHtoDAsync(p->dblob, p->hblob, need, st),
                  "cuMemcpyHtoDAsync (plan blob)");
        DRV_CHECK(ctx, api, cuEventRecord(p->upload_done, st), "cuEventRecord");
        p->upload_pending = 1;
        memcpy(p->last, groups, num_groups * sizeof *groups);
        p->have_last = 1;
    }
    return launch(p, api, st);
}
