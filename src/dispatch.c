/* dispatch.c - plans: a chosen, compiled variant plus the device buffers its launches read.
 *
 * What a launch reads per call (the blob: group table, tensor maps, tile list) lives in a
 * blob slot: pinned host copy + device copy + an event recorded after the last launch that
 * read it.
 * - Eager calls with the same groups as the last eager upload reuse its slot: the launch
 *   (act16: the prep, then the GEMM as its programmatic dependent, whose completion implies
 *   the prep's) and one cuEventRecord, no allocation, no copy, no host synchronisation.
 * - Eager calls with other groups (new pointers, other M) take a slot whose last launch has
 *   completed (cuEventQuery, never a wait), or a new one, up to NJ_EAGER_SLOTS; the blob is
 *   built into it and one cuMemcpyHtoDAsync on the caller's stream uploads it. Only when
 *   that many uploads are still in flight does the call wait, for the oldest. The eager
 *   slots live in one pinned and one device arena of NJ_EAGER_SLOTS equal parts, sized to a
 *   power of two: allocating or freeing pinned or device memory can synchronise with the
 *   device (seen on the H200: a call that re-sized its pinned buffer waited ~3 ms for the
 *   kernels ahead of it), so that happens only when a blob outgrows its part.
 * - A call made while the stream is being captured into a CUDA graph gets a capture slot of
 *   its own that is never rewritten (kept until plan_destroy; an identical later capture
 *   shares it). It is uploaded at capture time on the plan's own non-blocking stream (and
 *   waited for), so the graph holds only the kernel launches and a replay computes the
 *   problem it was captured with, whatever eager calls or other captures came in between.
 *   (A captured memcpy would re-upload at every replay: measured on the H200, 8-10 us more
 *   GPU time per replay.) Everything during a capture runs in relaxed capture mode.
 * - The act16 workspace (fp16 tokens) is shared by all calls of the plan (runs of a plan are
 *   ordered, see the header). When it must grow, a workspace that a capture baked in, or
 *   that launches still in flight may use, is retired (freed at plan_destroy), never freed
 *   under a graph. */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "family.h"
#include "heuristic.h"
#include "jit.h"
#include "tunedb.h"
#include "variant.h"

#define NJ_EAGER_SLOTS 16

typedef struct blob_slot {
    unsigned char *host; /* pinned */
    size_t host_cap;
    int arena; /* host and dev are parts of the plan's eager arena, not owned */
    CUdeviceptr dev;
    size_t dev_cap;
    CUevent done;          /* eager slots: recorded after each launch that read dev */
    int recorded;          /* done was recorded at least once */
    nvfp4jit_group *groups; /* the groups the blob was built from */
    uint64_t ws_gen;        /* the plan's dws_gen when the blob was built (it bakes in dws) */
    fam_launch launch;
} blob_slot;

struct nvfp4jit_plan {
    nvfp4jit_ctx *ctx;
    nvfp4jit_kernel *kernel;
    nvfp4jit_variant v;
    nvfp4jit_choice choice;
    int sms; /* the SM count the choice was made for */
    const family *fam;
    size_t num_groups;
    nvfp4jit_group *shapes; /* N, K fixed at creation */
    /* device side: cu_ctx is the context of the first run (h NULL before it) */
    drv_ctx cu_ctx;
    blob_slot eager[NJ_EAGER_SLOTS];
    int num_eager;
    unsigned char *arena_host; /* pinned, NJ_EAGER_SLOTS x slot_cap */
    CUdeviceptr arena_dev;
    size_t slot_cap;
    int cur; /* eager slot of the last eager upload, -1 = none */
    blob_slot **captured; /* capture slots, immutable */
    size_t num_captured, cap_captured;
    CUdeviceptr dws; /* workspace of the family's kernels (act16: fp16 tokens) */
    size_t dws_cap;
    int dws_captured; /* a capture baked dws into its blob */
    /* counts every change of dws (freed, retired or newly allocated): a blob is reusable only
     * while the generation it was built in lasts. An address is no identity: after a failed
     * growth, a later allocation may return the freed address with fewer bytes behind it. */
    uint64_t dws_gen;
    CUdeviceptr *retired; /* workspaces replaced while something may still use them */
    size_t num_retired;
    CUstream upload_stream; /* capture-time uploads (non-blocking, created on first capture) */
};

nvfp4jit_status nj_plan_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                               const nvfp4jit_group *groups, size_t num_groups,
                               const nvfp4jit_variant *force, nvfp4jit_plan **out) {
    *out = NULL;
    const family *f = fam_get(arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)arch);
    NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, groups, num_groups, 0));
    nvfp4jit_variant v;
    nvfp4jit_choice choice;
    /* the heuristic's SM count: looked up here, once, and kept (nvfp4jit_plan_sms) */
    int sms = fam_model_sms(f);
    if (force) {
        NJ_RETURN_IF(ctx, force->arch != arch, NVFP4JIT_ERR_INVALID_VARIANT,
                     "forced variant is for arch %d, plan is for %d", (int)force->arch,
                     (int)arch);
        v = *force;
        choice = NVFP4JIT_CHOICE_FORCED;
    } else if (tune_lookup(ctx, arch, groups, num_groups, &v)) {
        choice = NVFP4JIT_CHOICE_TUNED;
    } else {
        NJ_FORWARD_IF_ERROR(heur_choose(ctx, arch, groups, num_groups, sms, &v, &choice));
    }
    char why[256] = "";
    if (f->fits && !f->fits(&v, groups, num_groups, why, sizeof why)) {
        char name[96];
        nj_variant_format(&v, name, sizeof name);
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_PROBLEM, "variant %s: %s", name, why);
    }
    nj_module *k = NULL;
    NJ_FORWARD_IF_ERROR(nj_jit_variant(ctx, &v, &k));
    nvfp4jit_plan *p = calloc(1, sizeof *p);
    NJ_RETURN_IF(ctx, !p, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
    p->shapes = malloc(num_groups * sizeof *groups);
    if (!p->shapes) {
        free(p);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
    }
    p->cur = -1;
    memcpy(p->shapes, groups, num_groups * sizeof *groups);
    p->ctx = ctx;
    p->kernel = k;
    p->v = v;
    p->choice = choice;
    p->sms = sms;
    p->fam = f;
    p->num_groups = num_groups;
    *out = p;
    return NVFP4JIT_OK;
}

nvfp4jit_ctx *nj_plan_ctx(const nvfp4jit_plan *p) { return p->ctx; }

static void slot_free(const drv_api *api, blob_slot *sl) {
    if (sl->done) {
        if (sl->recorded) api->cuEventSynchronize(sl->done);
        api->cuEventDestroy(sl->done);
    }
    if (sl->dev && !sl->arena) api->cuMemFree(sl->dev);
    if (sl->host && !sl->arena) api->cuMemFreeHost(sl->host);
    free(sl->groups);
    memset(sl, 0, sizeof *sl);
}

void nj_plan_destroy(nvfp4jit_plan *p) {
    if (!p) return;
    const drv_api *api = p->cu_ctx.h ? drv_load() : NULL;
    /* a destroyed context took the plan's device memory, streams and events with it; its
     * handle may name a newer context now, whose memory must not be freed */
    if (api && !drv_ctx_alive(api, p->cu_ctx)) api = NULL;
    if (api) {
        CUcontext prev = NULL;
        api->cuCtxGetCurrent(&prev);
        if (prev != p->cu_ctx.h) api->cuCtxSetCurrent(p->cu_ctx.h);
        for (int i = 0; i < p->num_eager; i++) slot_free(api, &p->eager[i]);
        if (p->arena_dev) api->cuMemFree(p->arena_dev);
        if (p->arena_host) api->cuMemFreeHost(p->arena_host);
        for (size_t i = 0; i < p->num_captured; i++) {
            slot_free(api, p->captured[i]);
            free(p->captured[i]);
        }
        if (p->upload_stream) api->cuStreamDestroy(p->upload_stream);
        if (p->dws) api->cuMemFree(p->dws);
        for (size_t i = 0; i < p->num_retired; i++) api->cuMemFree(p->retired[i]);
        if (prev != p->cu_ctx.h) api->cuCtxSetCurrent(prev);
    } else { /* no driver, or the plan's context is gone: host memory only */
        for (size_t i = 0; i < p->num_captured; i++) {
            free(p->captured[i]->groups);
            free(p->captured[i]);
        }
        for (int i = 0; i < p->num_eager; i++) free(p->eager[i].groups);
    }
    free(p->captured);
    free(p->retired);
    free(p->shapes);
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

NVFP4JIT_API int nvfp4jit_plan_sms(const nvfp4jit_plan *p) { return p ? p->sms : 0; }

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


/* The one launch of a run, reading slot sl's device blob. */
static nvfp4jit_status launch(nvfp4jit_plan *p, const drv_api *api, blob_slot *sl, CUstream st) {
    if (sl->launch.num_ctas == 0) return NVFP4JIT_OK; /* every group has M = 0 */
    nj_moe_args none;
    memset(&none, 0, sizeof none);
    void *args[] = {&sl->dev, &none}; /* act16: (blob, MoeArgs); dual: (blob), the rest unread */
    if (sl->launch.prep_ctas) {
        NJ_RETURN_IF(p->ctx, !p->kernel->fn_prep, NVFP4JIT_ERR_INTERNAL,
                     "variant needs a prep kernel but its module has none");
        /* (blob, MoeArgs, PrepTab): the table is the slot's, as immutable as its blob */
        void *prep_args[] = {&sl->dev, &none, &sl->launch.prep_tab};
        DRV_CHECK(p->ctx, api,
                  cuLaunchKernel(p->kernel->fn_prep, sl->launch.prep_ctas, 1, 1,
                                 sl->launch.prep_threads, 1, 1, 0, st, prep_args, NULL),
                  "cuLaunchKernel (prep)");
        /* the GEMM as the prep's programmatic dependent (PDL): its CTAs may launch once every
         * prep CTA has started and set up on the SMs the prep's last wave leaves free; its
         * producer waits (griddepcontrol.wait) for the prep grid's completion and memory
         * before its first copy (templates/sm90a_act16.cuh). A stream capture records the
         * programmatic edge. */
        CUlaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig lc;
        memset(&lc, 0, sizeof lc);
        lc.gridDimX = sl->launch.num_ctas;
        lc.gridDimY = lc.gridDimZ = 1;
        lc.blockDimX = sl->launch.threads;
        lc.blockDimY = lc.blockDimZ = 1;
        lc.sharedMemBytes = (unsigned)sl->launch.dyn_smem;
        lc.hStream = st;
        lc.attrs = &at;
        lc.numAttrs = 1;
        CUresult r = api->cuLaunchKernelEx(&lc, p->kernel->fn, args, NULL);
        if (r != CUDA_ERROR_NOT_SUPPORTED) {
            if (r != CUDA_SUCCESS) return drv_fail(p->ctx, r, "cuLaunchKernelEx");
            return NVFP4JIT_OK;
        }
        /* a driver that refuses the attribute: an ordinary launch after the prep (the
         * kernel's griddepcontrol.wait is then a no-op) */
    }
    DRV_CHECK(p->ctx, api,
              cuLaunchKernel(p->kernel->fn, sl->launch.num_ctas, 1, 1, sl->launch.threads, 1, 1,
                             (unsigned)sl->launch.dyn_smem, st, args, NULL),
              "cuLaunchKernel");
    return NVFP4JIT_OK;
}

/* An eager launch from slot sl, then its event (the slot is free again once it completed). */
static nvfp4jit_status launch_eager(nvfp4jit_plan *p, const drv_api *api, blob_slot *sl,
                                    CUstream st) {
    NJ_FORWARD_IF_ERROR(launch(p, api, sl, st));
    DRV_CHECK(p->ctx, api, cuEventRecord(sl->done, st), "cuEventRecord");
    sl->recorded = 1;
    return NVFP4JIT_OK;
}

static int groups_equal(const nvfp4jit_group *a, const nvfp4jit_group *b, size_t n) {
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* Make every eager slot hold at least `need` bytes: a new arena when it does not (after the
 * launches that read the old one; rare, see the top). */
static nvfp4jit_status arena_reserve(nvfp4jit_plan *p, const drv_api *api, size_t need) {
    nvfp4jit_ctx *ctx = p->ctx;
    if (need <= p->slot_cap) return NVFP4JIT_OK;
    /* (the families' fits bound the tile count far below this: a guard for the doubling and
     * the arena's size, which must not wrap) */
    NJ_RETURN_IF(ctx, need > ((size_t)1 << 48), NVFP4JIT_ERR_INVALID_PROBLEM,
                 "problem set's launch table would need %zu bytes", need);
    for (int i = 0; i < p->num_eager; i++)
        if (p->eager[i].recorded)
            DRV_CHECK(ctx, api, cuEventSynchronize(p->eager[i].done), "waiting for a blob slot");
    if (p->arena_dev) api->cuMemFree(p->arena_dev);
    if (p->arena_host) api->cuMemFreeHost(p->arena_host);
    p->arena_dev = 0;
    p->arena_host = NULL;
    p->slot_cap = 0;
    p->cur = -1;
    for (int i = 0; i < p->num_eager; i++) {
        p->eager[i].host = NULL;
        p->eager[i].dev = 0;
        p->eager[i].host_cap = p->eager[i].dev_cap = 0;
    }
    size_t cap = 4096;
    while (cap < need) cap *= 2;
    void *h = NULL;
    DRV_CHECK(ctx, api, cuMemAllocHost(&h, cap * NJ_EAGER_SLOTS), "cuMemAllocHost (plan blobs)");
    p->arena_host = h;
    DRV_CHECK(ctx, api, cuMemAlloc(&p->arena_dev, cap * NJ_EAGER_SLOTS), "cuMemAlloc (plan blobs)");
    p->slot_cap = cap;
    for (int i = 0; i < p->num_eager; i++) {
        p->eager[i].host = p->arena_host + (size_t)i * cap;
        p->eager[i].dev = p->arena_dev + (CUdeviceptr)((size_t)i * cap);
        p->eager[i].host_cap = p->eager[i].dev_cap = cap;
    }
    return NVFP4JIT_OK;
}

/* An eager slot nothing on the device reads any more: one whose last launch completed (a
 * query, no wait), else a new one, else (NJ_EAGER_SLOTS uploads in flight) the oldest after
 * waiting for it. */
static nvfp4jit_status eager_slot(nvfp4jit_plan *p, const drv_api *api, blob_slot **out) {
    nvfp4jit_ctx *ctx = p->ctx;
    for (int j = 1; j <= p->num_eager; j++) {
        blob_slot *sl = &p->eager[(p->cur + j + p->num_eager) % p->num_eager];
        if (!sl->recorded) {
            *out = sl;
            return NVFP4JIT_OK;
        }
        CUresult r = api->cuEventQuery(sl->done);
        if (r == CUDA_SUCCESS) {
            *out = sl;
            return NVFP4JIT_OK;
        }
        if (r != CUDA_ERROR_NOT_READY) return drv_fail(ctx, r, "cuEventQuery (plan blob slot)");
    }
    if (p->num_eager < NJ_EAGER_SLOTS) {
        blob_slot *sl = &p->eager[p->num_eager];
        memset(sl, 0, sizeof *sl);
        DRV_CHECK(ctx, api, cuEventCreate(&sl->done, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        sl->arena = 1;
        sl->host = p->arena_host + (size_t)p->num_eager * p->slot_cap;
        sl->dev = p->arena_dev + (CUdeviceptr)((size_t)p->num_eager * p->slot_cap);
        sl->host_cap = sl->dev_cap = p->slot_cap;
        p->num_eager++;
        *out = sl;
        return NVFP4JIT_OK;
    }
    blob_slot *sl = &p->eager[(p->cur + 1) % p->num_eager];
    DRV_CHECK(ctx, api, cuEventSynchronize(sl->done), "waiting for the oldest blob slot");
    *out = sl;
    return NVFP4JIT_OK;
}

/* Size slot sl for `need` blob bytes. Its old buffers are unused (eager: its event completed;
 * capture: new), so they can be freed at once. */
static nvfp4jit_status slot_reserve(nvfp4jit_plan *p, const drv_api *api, blob_slot *sl,
                                    size_t need) {
    nvfp4jit_ctx *ctx = p->ctx;
    if (!sl->groups) {
        sl->groups = malloc(p->num_groups * sizeof *sl->groups);
        NJ_RETURN_IF(ctx, !sl->groups, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan slot)");
    }
    NJ_RETURN_IF(ctx, sl->arena && need > sl->host_cap, NVFP4JIT_ERR_INTERNAL,
                 "blob of %zu bytes in an arena slot of %zu", need, sl->host_cap);
    if (need > sl->host_cap) {
        if (sl->host) api->cuMemFreeHost(sl->host);
        sl->host = NULL;
        sl->host_cap = 0;
        void *h = NULL;
        DRV_CHECK(ctx, api, cuMemAllocHost(&h, need), "cuMemAllocHost (plan blob)");
        sl->host = h;
        sl->host_cap = need;
    }
    if (need > sl->dev_cap) {
        if (sl->dev) api->cuMemFree(sl->dev);
        sl->dev = 0;
        sl->dev_cap = 0;
        DRV_CHECK(ctx, api, cuMemAlloc(&sl->dev, need), "cuMemAlloc (plan blob)");
        sl->dev_cap = need;
    }
    return NVFP4JIT_OK;
}

/* Make the workspace at least wneed bytes. The old one is freed only when nothing can use
 * it any more: never when a capture baked it in, and (eager) after the stream's earlier
 * launches; while capturing, or when it was captured, it is retired until plan_destroy. */
static nvfp4jit_status workspace_reserve(nvfp4jit_plan *p, const drv_api *api, size_t wneed,
                                         CUstream st, int capturing) {
    nvfp4jit_ctx *ctx = p->ctx;
    if (wneed <= p->dws_cap) return NVFP4JIT_OK;
    if (p->dws) {
        if (capturing || p->dws_captured) {
            CUdeviceptr *r = realloc(p->retired, (p->num_retired + 1) * sizeof *r);
            NJ_RETURN_IF(ctx, !r, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
            p->retired = r;
            p->retired[p->num_retired++] = p->dws;
        } else {
            /* eager launches of this plan (ordered, see the header) may still use it */
            DRV_CHECK(ctx, api, cuStreamSynchronize(st), "cuStreamSynchronize");
            api->cuMemFree(p->dws);
        }
        p->dws = 0;
        p->dws_cap = 0;
        p->dws_captured = 0;
        p->dws_gen++; /* no blob built on the old workspace is reusable, even if this fails */
    }
    DRV_CHECK(ctx, api, cuMemAlloc(&p->dws, wneed), "cuMemAlloc (plan workspace)");
    p->dws_cap = wneed;
    p->dws_gen++;
    return NVFP4JIT_OK;
}

/* Build groups' blob into slot sl and queue its upload on st. */
static nvfp4jit_status slot_fill(nvfp4jit_plan *p, const drv_api *api, blob_slot *sl,
                                 const nvfp4jit_group *groups, size_t need, CUstream st) {
    nvfp4jit_ctx *ctx = p->ctx;
    NJ_FORWARD_IF_ERROR(slot_reserve(p, api, sl, need));
    NJ_FORWARD_IF_ERROR(p->fam->blob_fill(ctx, api, &p->v, groups, p->num_groups, sl->host,
                                          (uint64_t)sl->dev, (uint64_t)p->dws, &sl->launch));
    DRV_CHECK(ctx, api, cuMemcpyHtoDAsync(sl->dev, sl->host, need, st),
              "cuMemcpyHtoDAsync (plan blob)");
    memcpy(sl->groups, groups, p->num_groups * sizeof *groups);
    sl->ws_gen = p->dws_gen;
    return NVFP4JIT_OK;
}

/* A run on a stream that is being captured: an immutable capture slot. */
static nvfp4jit_status run_captured(nvfp4jit_plan *p, const drv_api *api,
                                    const nvfp4jit_group *groups, CUstream st) {
    nvfp4jit_ctx *ctx = p->ctx;
    size_t n = p->num_groups;
    size_t wneed = p->fam->workspace_size ? p->fam->workspace_size(&p->v, groups, n) : 0;
    NJ_FORWARD_IF_ERROR(workspace_reserve(p, api, wneed, st, 1));
    p->dws_captured = p->dws != 0;
    for (size_t i = 0; i < p->num_captured; i++) {
        blob_slot *sl = p->captured[i];
        if (sl->ws_gen == p->dws_gen && groups_equal(sl->groups, groups, n))
            return launch(p, api, sl, st); /* the same problem, captured before: on the device */
    }
    if (!p->upload_stream)
        DRV_CHECK(ctx, api, cuStreamCreate(&p->upload_stream, CU_STREAM_NON_BLOCKING),
                  "cuStreamCreate (plan upload stream)");
    if (p->num_captured == p->cap_captured) {
        size_t c = p->cap_captured ? 2 * p->cap_captured : 4;
        blob_slot **a = realloc(p->captured, c * sizeof *a);
        NJ_RETURN_IF(ctx, !a, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
        p->captured = a;
        p->cap_captured = c;
    }
    blob_slot *sl = calloc(1, sizeof *sl);
    NJ_RETURN_IF(ctx, !sl, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (plan)");
    size_t need = p->fam->blob_size(&p->v, groups, n);
    nvfp4jit_status s = slot_fill(p, api, sl, groups, need, p->upload_stream);
    if (s == NVFP4JIT_OK) {
        CUresult r = api->cuStreamSynchronize(p->upload_stream);
        if (r != CUDA_SUCCESS) s = drv_fail(ctx, r, "uploading the captured blob");
    }
    if (s != NVFP4JIT_OK) { /* nothing half-built stays in the list */
        slot_free(api, sl);
        free(sl);
        return s;
    }
    p->captured[p->num_captured++] = sl;
    return launch(p, api, sl, st);
}

nvfp4jit_status nj_plan_run(nvfp4jit_plan *p, const nvfp4jit_group *groups, size_t num_groups,
                            void *stream) {
    nvfp4jit_ctx *ctx = p->ctx;
    NJ_RETURN_IF(ctx, num_groups != p->num_groups, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "plan was made for %zu groups, run got %zu", p->num_groups, num_groups);
    NJ_RETURN_IF(ctx, num_groups && !groups, NVFP4JIT_ERR_INVALID_ARG, "groups is NULL");
    CUstream st = (CUstream)stream;
    blob_slot *last = p->cur >= 0 ? &p->eager[p->cur] : NULL;
    int same = last && last->ws_gen == p->dws_gen && groups_equal(groups, last->groups, num_groups);
    /* Steady state: the context of the last launch is still current, so the device checks
     * made then still hold; a stream that is not being captured and the same groups as the
     * last eager upload: launch from its slot. */
    const drv_api *api = p->cu_ctx.h ? drv_load() : NULL;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    drv_ctx now = api ? drv_ctx_current(api) : (drv_ctx){NULL, 0};
    if (api && drv_ctx_same(now, p->cu_ctx)) {
        DRV_CHECK(ctx, api, cuStreamIsCapturing(st, &cap), "cuStreamIsCapturing");
        if (same && cap == CU_STREAM_CAPTURE_STATUS_NONE) {
            /* loaded: returns at once, no driver call */
            NJ_FORWARD_IF_ERROR(nj_jit_load_in(ctx, api, p->kernel, now));
            return launch_eager(p, api, last, st);
        }
    }
    if (!same) {
        NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, groups, num_groups, 1));
        for (size_t i = 0; i < num_groups; i++) {
            NJ_RETURN_IF(ctx, groups[i].n != p->shapes[i].n || groups[i].k != p->shapes[i].k,
                         NVFP4JIT_ERR_INVALID_PROBLEM,
                         "group %zu: N=%lld K=%lld differ from the plan's N=%lld K=%lld", i,
                         (long long)groups[i].n, (long long)groups[i].k,
                         (long long)p->shapes[i].n, (long long)p->shapes[i].k);
        }
        /* the variant's limits that depend on M (tiles, act16's token items), before anything
         * is sized or allocated for this set (nj_plan_create checked the set it was made with) */
        char why[256] = "";
        if (p->fam->fits && !p->fam->fits(&p->v, groups, num_groups, why, sizeof why)) {
            char name[96];
            nj_variant_format(&p->v, name, sizeof name);
            return nj_fail(ctx, NVFP4JIT_ERR_INVALID_PROBLEM, "variant %s: %s", name, why);
        }
    }
    nvfp4jit_status s;
    api = drv_get(ctx, &s);
    if (!api) return s;
    if (p->fam->cc != ctx->device_cc) { /* "a" cubins run on exactly one cc (family.h) */
        return nj_fail(ctx, NVFP4JIT_ERR_ARCH_MISMATCH,
                       "plan is for %s but the device is compute capability %d.%d",
                       p->fam->arch_name, ctx->device_cc / 10, ctx->device_cc % 10);
    }
    drv_ctx cur;
    CUresult cr = drv_ctx_get(api, &cur);
    if (cr != CUDA_SUCCESS) return drv_fail(ctx, cr, "reading the current CUDA context");
    if (p->cu_ctx.h && !drv_ctx_same(p->cu_ctx, cur))
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_ARG,
                       drv_ctx_alive(api, p->cu_ctx)
                           ? "plan's device buffers belong to another CUDA context"
                           : "plan's CUDA context was destroyed (its device buffers with it); "
                             "destroy the plan and make a new one");
    p->cu_ctx = cur;
    DRV_CHECK(ctx, api, cuStreamIsCapturing(st, &cap), "cuStreamIsCapturing");
    NJ_RETURN_IF(ctx, cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED, NVFP4JIT_ERR_CUDA,
                 "the stream's capture was invalidated before this call");
    if (cap == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        /* module load and allocations are "potentially unsafe" during a global-mode
         * capture; they are not part of what the graph replays, so relax this thread */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        DRV_CHECK(ctx, api, cuThreadExchangeStreamCaptureMode(&mode),
                  "cuThreadExchangeStreamCaptureMode");
        s = nj_jit_load_in(ctx, api, p->kernel, cur);
        if (s == NVFP4JIT_OK) s = run_captured(p, api, groups, st);
        api->cuThreadExchangeStreamCaptureMode(&mode);
        return s;
    }
    NJ_FORWARD_IF_ERROR(nj_jit_load_in(ctx, api, p->kernel, cur));
    if (same) return launch_eager(p, api, last, st);
    size_t wneed = p->fam->workspace_size ? p->fam->workspace_size(&p->v, groups, num_groups)
                                          : 0;
    NJ_FORWARD_IF_ERROR(workspace_reserve(p, api, wneed, st, 0));
    size_t need = p->fam->blob_size(&p->v, groups, num_groups);
    NJ_FORWARD_IF_ERROR(arena_reserve(p, api, need));
    blob_slot *sl = NULL;
    NJ_FORWARD_IF_ERROR(eager_slot(p, api, &sl));
    p->cur = -1; /* the slot is rewritten below: not reusable until it is complete */
    NJ_FORWARD_IF_ERROR(slot_fill(p, api, sl, groups, need, st));
    nvfp4jit_status s2 = launch_eager(p, api, sl, st);
    if (s2 != NVFP4JIT_OK) {
        /* the upload (and, act16, a prep launch that read the slot) are queued on st: the
         * slot is free again only after them, not after its last successful launch */
        if (api->cuEventRecord(sl->done, st) == CUDA_SUCCESS) sl->recorded = 1;
        return s2;
    }
    p->cur = (int)(sl - p->eager);
    return NVFP4JIT_OK;
}
