/* moe.c - MoE layers: expert weights registered once, a plan per (weights, max rows) whose
 * device state never changes after creation, and a call whose per-call data (tokens, token
 * scales, output, expert offsets) are all kernel parameters read on the device.
 *
 * Kernels (sm_90a): the act16/act16p prep and GEMM kernels in their MoE mode
 * (templates/sm90a_act16.cuh, "MoE call"): the prep kernel validates the offsets, writes the
 * call's tile table into plan memory and converts the tokens; the GEMM kernel reads the table.
 * The blob is built once here (sm90_moe_blob_fill). A run is one cuGraphLaunch of a graph of
 * the two kernel nodes the plan instantiated at creation (the prep node's parameters updated
 * with cuGraphExecKernelNodeSetParams when the call's pointers change): on the H200 host that
 * costs 1.9-2.6 us against 7.4-9.2 us for two cuLaunchKernel and 3.7-4.7 us for one
 * (bench/probe/graph_host.c). When the stream is capturing, the two kernels are launched
 * plainly instead, so the capture records them; a CUDA graph of a run stays right whatever
 * happens between its replays (every per-call pointer is a kernel parameter).
 *
 * sm_100a (COMPILED, LINTED AND EMULATED ONLY, never run on a B200): the MoE entry of
 * templates/sm100a_grouped.cu (<KERNEL_NAME>_moe), one ordinary launch over a grid sized for
 * the worst case; the blob (weight maps, scale pointers) is built once here
 * (sm100_moe_blob_fill), the token map per call (one cuTensorMapEncodeTiled on the host, a
 * kernel parameter). Without a compute-capability 10.0 device the plan is compiled only (no
 * device state) and a run returns NVFP4JIT_ERR_ARCH_MISMATCH, as the grouped call does. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "heuristic.h"
#include "jit.h"
#include "variant.h"

#define MOE_MAX_EXPERTS 65536
#define MOE_MAX_ROWS (1LL << 30)

struct nvfp4jit_weights {
    nvfp4jit_ctx *ctx;
    nvfp4jit_arch arch;
    int experts;
    int64_t n, k;
    uint64_t *b, *sfb; /* per expert */
};

struct nvfp4jit_moe_plan {
    nvfp4jit_weights *w;
    nvfp4jit_kernel *kernel;
    nvfp4jit_moe_info info;
    int64_t max_rows, sf_rows;
    drv_ctx cu_ctx; /* h NULL: no device state */
    CUfunction fn;  /* the kernel in cu_ctx (the compiled kernel may be reloaded elsewhere);
                    * NULL: an sm_100a plan compiled without a cc 10.0 device (runs refused) */
    CUfunction fn_prep; /* sm_90a: the prep kernel */
    CUdeviceptr blob, ws, status, tiles;
    size_t dyn_smem;
    /* sm_90a: the run's graph (prep node -> GEMM node), instantiated once; prep_args: the
     * prep node's MoeArgs in the instantiated graph (updated when a call's differ) */
    CUgraph graph;
    CUgraphExec exec;
    CUgraphNode node_prep;
    nj_moe_args prep_args, gemm_args;
    nj_prep_tab no_tab; /* the prep's third parameter: unused by a MoE call, all zero */
};

/* 0 for negative arguments or a result that does not fit (the header says so) */
static size_t scale_bytes(int64_t rows, int64_t k) {
    if (rows < 0 || k < 0 || rows > INT64_MAX - 127) return 0;
    size_t r = (size_t)((rows + 127) / 128 * 128), c = (size_t)((k / 16 + 3) / 4 * 4), out;
    return __builtin_mul_overflow(r, c, &out) ? 0 : out;
}

static int64_t moe_scale_rows(int64_t max_rows, int num_experts) {
    if (max_rows < 0 || num_experts < 0) return 0;
    if (max_rows > INT64_MAX - 127 - 127 * (int64_t)num_experts) return 0;
    return (max_rows + 127 * (int64_t)num_experts + 127) / 128 * 128;
}

NVFP4JIT_API size_t nvfp4jit_scale_bytes(int64_t rows, int64_t k) { return scale_bytes(rows, k); }

NVFP4JIT_API int64_t nvfp4jit_moe_scale_rows(int64_t max_rows, int num_experts) {
    return moe_scale_rows(max_rows, num_experts);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_weights_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                     const nvfp4jit_weights_desc *d,
                                                     nvfp4jit_weights **out) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !out, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_weights_create: out is NULL");
    *out = NULL;
    NJ_RETURN_IF(ctx, !d, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_weights_create: desc is NULL");
    NJ_RETURN_IF(ctx, arch != NVFP4JIT_ARCH_SM90A && arch != NVFP4JIT_ARCH_SM100A,
                 NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)arch);
    NJ_RETURN_IF(ctx, d->num_experts < 1 || d->num_experts > MOE_MAX_EXPERTS,
                 NVFP4JIT_ERR_INVALID_ARG, "num_experts=%d: must be 1..%d", d->num_experts,
                 MOE_MAX_EXPERTS);
    NJ_RETURN_IF(ctx, d->n <= 0 || d->n % 8 || d->n > (1 << 24), NVFP4JIT_ERR_INVALID_PROBLEM,
                 "N=%lld: must be a positive multiple of 8, at most 2^24", (long long)d->n);
    NJ_RETURN_IF(ctx, d->k <= 0 || d->k % 64 || d->k > (1 << 24), NVFP4JIT_ERR_INVALID_PROBLEM,
                 "K=%lld: must be a positive multiple of 64, at most 2^24", (long long)d->k);
    NJ_RETURN_IF(ctx, !d->b && (!d->b_experts || !d->sfb_experts), NVFP4JIT_ERR_INVALID_ARG,
                 "weights: b is 0 and b_experts/sfb_experts are not both given");
    NJ_RETURN_IF(ctx, d->b && !d->sfb, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "weights: stacked b given without sfb");
    size_t E = (size_t)d->num_experts;
    nvfp4jit_weights *w = calloc(1, sizeof *w);
    uint64_t *b = malloc(E * sizeof *b), *sfb = malloc(E * sizeof *sfb);
    if (!w || !b || !sfb) {
        free(w);
        free(b);
        free(sfb);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (weights)");
    }
    uint64_t bstride = (uint64_t)(d->n * (d->k / 2));
    uint64_t sstride = (uint64_t)scale_bytes(d->n, d->k);
    for (size_t e = 0; e < E; e++) {
        b[e] = d->b ? d->b + e * bstride : d->b_experts[e];
        sfb[e] = d->b ? d->sfb + e * sstride : d->sfb_experts[e];
        if (!b[e] || !sfb[e] || b[e] % 16 || sfb[e] % 16) {
            unsigned long long bad_b = b[e], bad_sfb = sfb[e]; /* read before the free */
            free(w);
            free(b);
            free(sfb);
            return nj_fail(ctx, NVFP4JIT_ERR_INVALID_PROBLEM,
                           "expert %zu: B=0x%llx SFB=0x%llx: pointers must be non-zero and "
                           "16-byte aligned",
                           e, bad_b, bad_sfb);
        }
    }
    w->ctx = ctx;
    w->arch = arch;
    w->experts = d->num_experts;
    w->n = d->n;
    w->k = d->k;
    w->b = b;
    w->sfb = sfb;
    *out = w;
    return NVFP4JIT_OK;
}

NVFP4JIT_API void nvfp4jit_weights_destroy(nvfp4jit_weights *w) {
    if (!w) return;
    free(w->b);
    free(w->sfb);
    free(w);
}

/* @return 1 if v can serve a MoE plan (sm_90a: act16 or act16p). */
int nj_moe_usable(nvfp4jit_variant *v, int experts, nvfp4jit_arch arch) {
    char why[256];
    if (v->arch != arch) return 0;
    if (arch == NVFP4JIT_ARCH_SM100A) return fam_sm100a.check(v, why, sizeof why);
    if (v->arch != NVFP4JIT_ARCH_SM90A) return 0;
    if (v->strategy != NVFP4JIT_STRATEGY_ACT16 && v->strategy != NVFP4JIT_STRATEGY_ACT16P) return 0;
    return fam_sm90a.check(v, why, sizeof why) && sm90_moe_fits(v, experts);
}

/* The row counts the MoE heuristic ranks variants on: max_rows tokens routed to E experts,
 * at the quantiles (e + 1/2) / E of a distribution of mean max_rows / E (ascending,
 * deterministic): kind 0 even (every expert the mean), 1 Poisson (balanced top-k routing),
 * 2 exponential (popular experts: the busiest holds about ln(2E) times the mean, 4.9x for 64
 * experts; the idlest almost nothing). */
void nj_moe_counts(int64_t max_rows, int experts, int kind, int64_t *out) {
    if (experts < 1) return;
    const double lam = max_rows > 0 ? (double)max_rows / experts : 0.0;
    if (lam <= 0 || kind == 0) {
        for (int e = 0; e < experts; e++)
            out[e] = max_rows / experts + (e >= experts - max_rows % experts ? 1 : 0);
        return;
    }
    if (kind == 2) { /* quantiles of Exp(1), scaled so that they sum to max_rows */
        double total = 0;
        for (int e = 0; e < experts; e++) total += -log(1.0 - (e + 0.5) / experts);
        for (int e = 0; e < experts; e++)
            out[e] = (int64_t)floor(-log(1.0 - (e + 0.5) / experts) * (double)max_rows / total +
                                    0.5);
        return;
    }
    /* Poisson: walk k upward from where the CDF is negligible (below 1e-30, so the sum may
     * start there), handing out quantiles in order */
    int64_t k = (int64_t)fmax(0.0, floor(lam - 12.0 * sqrt(lam) - 12.0));
    const int64_t kmax = (int64_t)ceil(lam + 12.0 * sqrt(lam) + 12.0);
    const double logl = log(lam);
    double pmf = exp((double)k * logl - lam - lgamma((double)k + 1.0)), cdf = pmf;
    int e = 0;
    while (e < experts) {
        if (cdf >= (e + 0.5) / experts || k >= kmax) {
            out[e++] = k;
            continue;
        }
        k++;
        pmf = exp((double)k * logl - lam - lgamma((double)k + 1.0));
        cdf += pmf;
    }
}

/* The variant a MoE plan of E experts of N x K and max_rows rows runs with, chosen without a
 * device: the variant whose estimated time is within the smallest factor of the best one's on
 * every distribution of nj_moe_counts (least worst-case regret), since a plan serves whatever
 * the router sends; ties go to the earlier candidate of the Poisson ranking. sms: the SM
 * count modelled (0: the device's where it runs the arch, else the family default). An even spread
 * alone hid the busiest experts: it chose BLOCK_N 16 for decode64-down, whose experts hold up
 * to 24 rows (two token tiles each, so their weights decoded twice: +25 % on the H200). */
static int moe_cand_cmp(const void *a, const void *b) { return heur_cand_cmp(a, b); }

nvfp4jit_status nj_moe_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, int experts, int64_t n,
                              int64_t k, int64_t max_rows, int sms, nvfp4jit_variant *v) {
    enum { KINDS = 3 };
    size_t E = (size_t)experts, cap = 4096;
    nvfp4jit_group *g = calloc(E, sizeof *g);
    int64_t *cnt = malloc(E * sizeof *cnt);
    heur_cand *c[KINDS] = {NULL, NULL, NULL};
    size_t count[KINDS] = {0, 0, 0};
    for (int d = 0; d < KINDS; d++) c[d] = malloc(cap * sizeof *c[d]);
    nvfp4jit_status s = NVFP4JIT_OK;
    if (!g || !cnt || !c[0] || !c[1] || !c[2])
        s = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (MoE choice)");
    for (int d = 0; d < KINDS && s == NVFP4JIT_OK; d++) {
        nj_moe_counts(max_rows, experts, d, cnt);
        for (size_t e = 0; e < E; e++) g[e] = (nvfp4jit_group){.m = cnt[e], .n = n, .k = k};
        s = heur_rank(ctx, arch, g, E, sms, c[d], cap, &count[d]);
        if (count[d] > cap) count[d] = cap;
    }
    /* candidates in the Poisson ranking's order; regret = max over kinds of est / best est;
     * then, as heur_rank does with estimates, near-ties (regret within 2 %) go to the simpler
     * variant (heur_prefer): on the H200 the least regret alone took 256x24x128:s8 for
     * decode64-up/-down (237.8 / 145.3 us through the MoE path) where the grouped call's
     * 128x24x128:s6 ran 232.7 / 134.9, 1.2 % apart in regret */
    heur_cand *pick = calloc(count[1] ? count[1] : 1, sizeof *pick);
    size_t npick = 0;
    if (!pick && s == NVFP4JIT_OK)
        s = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (MoE choice)");
    for (size_t i = 0; s == NVFP4JIT_OK && i < count[1]; i++) {
        nvfp4jit_variant cand = c[1][i].v;
        if (!nj_moe_usable(&cand, experts, arch)) continue;
        double regret = 0;
        for (int d = 0; d < KINDS && regret >= 0; d++) {
            double est = -1, best = -1;
            for (size_t j = 0; j < count[d]; j++) {
                nvfp4jit_variant u = c[d][j].v;
                if (!nj_moe_usable(&u, experts, arch)) continue;
                if (best < 0) best = c[d][j].est_us;
                if (memcmp(&u, &cand, sizeof u) == 0) est = c[d][j].est_us;
            }
            if (est < 0 || best <= 0) regret = -1; /* not ranked there: not a candidate */
            else if (est / best > regret) regret = est / best;
        }
        if (regret < 0) continue;
        pick[npick] = c[1][i];
        pick[npick].v = cand;
        pick[npick].est_us = 100.0 * regret; /* (heur_prefer's window: 2 % of it) */
        npick++;
    }
    int found = npick > 0;
    if (found) {
        qsort(pick, npick, sizeof *pick, moe_cand_cmp);
        heur_prefer(pick, npick);
        *v = pick[0].v;
    }
    free(pick);
    free(g);
    free(cnt);
    for (int d = 0; d < KINDS; d++) free(c[d]);
    NJ_FORWARD_IF_ERROR(s);
    NJ_RETURN_IF(ctx, !found, NVFP4JIT_ERR_INVALID_VARIANT,
                 "no %s variant fits a MoE layer of %d experts",
                 arch == NVFP4JIT_ARCH_SM100A ? "sm_100a" : "act16/act16p", experts);
    return NVFP4JIT_OK;
}

static void moe_free_device(nvfp4jit_moe_plan *p) {
    const drv_api *api = p->cu_ctx.h ? drv_load() : NULL;
    /* a destroyed context took the plan's device state with it (its handle may name a newer
     * context now, whose memory must not be freed) */
    if (!api || !drv_ctx_alive(api, p->cu_ctx)) return;
    CUcontext prev = NULL;
    api->cuCtxGetCurrent(&prev);
    if (prev != p->cu_ctx.h) api->cuCtxSetCurrent(p->cu_ctx.h);
    if (p->blob) api->cuMemFree(p->blob);
    if (p->ws) api->cuMemFree(p->ws);
    if (p->status) api->cuMemFree(p->status);
    if (p->tiles) api->cuMemFree(p->tiles);
    if (p->exec) api->cuGraphExecDestroy(p->exec);
    if (p->graph) api->cuGraphDestroy(p->graph);
    if (prev != p->cu_ctx.h) api->cuCtxSetCurrent(prev);
}

static void moe_plan_free(nvfp4jit_moe_plan *p) {
    if (!p) return;
    moe_free_device(p);
    free(p);
}

NVFP4JIT_API void nvfp4jit_moe_plan_destroy(nvfp4jit_moe_plan *p) { moe_plan_free(p); }

/* The prep node's launch (params: blob, the call's MoeArgs and an empty PrepTab). */
static void moe_prep_node(const nvfp4jit_moe_plan *p, CUDA_KERNEL_NODE_PARAMS *kp, void **params) {
    memset(kp, 0, sizeof *kp);
    kp->func = p->fn_prep;
    kp->gridDimX = p->info.prep_grid;
    kp->gridDimY = kp->gridDimZ = 1;
    kp->blockDimX = 256;
    kp->blockDimY = kp->blockDimZ = 1;
    kp->kernelParams = params;
}

/* The run's graph: the prep node (its MoeArgs are the last call's; updated per call) before
 * the GEMM node (constant MoeArgs: the tile table's address, max_rows). */
static nvfp4jit_status moe_graph(nvfp4jit_moe_plan *p, const drv_api *api) {
    nvfp4jit_ctx *ctx = p->w->ctx;
    p->gemm_args = (nj_moe_args){0};
    p->gemm_args.max_rows = (int32_t)p->max_rows;
    p->gemm_args.tiles = (uint64_t)p->tiles;
    DRV_CHECK(ctx, api, cuGraphCreate(&p->graph, 0), "cuGraphCreate (MoE)");
    CUDA_KERNEL_NODE_PARAMS kp;
    void *prep_params[] = {&p->blob, &p->prep_args, &p->no_tab};
    void *gemm_params[] = {&p->blob, &p->gemm_args};
    moe_prep_node(p, &kp, prep_params);
    DRV_CHECK(ctx, api, cuGraphAddKernelNode(&p->node_prep, p->graph, NULL, 0, &kp),
              "cuGraphAddKernelNode (MoE prep)");
    memset(&kp, 0, sizeof kp);
    kp.func = p->fn;
    kp.gridDimX = p->info.grid;
    kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = (unsigned)fam_sm90a.threads(&p->info.variant);
    kp.blockDimY = kp.blockDimZ = 1;
    kp.sharedMemBytes = (unsigned)p->dyn_smem;
    kp.kernelParams = gemm_params;
    CUgraphNode gemm = NULL;
    DRV_CHECK(ctx, api, cuGraphAddKernelNode(&gemm, p->graph, NULL, 0, &kp),
              "cuGraphAddKernelNode (MoE GEMM)");
    /* a programmatic edge (PDL): the GEMM's CTAs may launch once every prep CTA has run its
     * griddepcontrol.launch_dependents, and wait in griddepcontrol.wait for the prep grid's
     * completion; a driver that refuses it gets an ordinary edge */
    CUgraphEdgeData ed;
    memset(&ed, 0, sizeof ed);
    ed.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    ed.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
    if (api->cuGraphAddDependencies(p->graph, &p->node_prep, &gemm, &ed, 1) != CUDA_SUCCESS)
        DRV_CHECK(ctx, api, cuGraphAddDependencies(p->graph, &p->node_prep, &gemm, NULL, 1),
                  "cuGraphAddDependencies (MoE)");
    DRV_CHECK(ctx, api, cuGraphInstantiate(&p->exec, p->graph, 0), "cuGraphInstantiate (MoE)");
    return NVFP4JIT_OK;
}

static nvfp4jit_status moe_build(nvfp4jit_moe_plan *p, const drv_api *api) {
    nvfp4jit_weights *w = p->w;
    nvfp4jit_ctx *ctx = w->ctx;
    const nvfp4jit_variant *v = &p->info.variant;
    size_t wsb = (size_t)p->max_rows * (size_t)w->k * 2, bb = sm90_moe_blob_size(w->experts);
    DRV_CHECK(ctx, api, cuMemAlloc(&p->ws, wsb), "cuMemAlloc (MoE token workspace)");
    DRV_CHECK(ctx, api, cuMemAlloc(&p->blob, bb), "cuMemAlloc (MoE blob)");
    DRV_CHECK(ctx, api, cuMemAlloc(&p->status, 8), "cuMemAlloc (MoE error word)");
    int32_t st0[2] = {0, INT_MAX};
    DRV_CHECK(ctx, api, cuMemcpyHtoD(p->status, st0, sizeof st0), "cuMemcpyHtoD (MoE error word)");
    /* the call's tile table, written by the prep kernel (16 bytes a tile, worst case) */
    size_t tb = sm90_moe_table_bytes(v, w->experts, w->n, p->max_rows);
    DRV_CHECK(ctx, api, cuMemAlloc(&p->tiles, tb), "cuMemAlloc (MoE tile table)");
    DRV_CHECK(ctx, api, cuMemsetD8(p->tiles, 0, 16), "cuMemsetD8 (MoE tile table)");
    /* the tensor maps inside must be 64-byte aligned (cuTensorMapEncodeTiled's contract;
     * malloc gives 16) */
    unsigned char *host = aligned_alloc(64, (bb + 63) / 64 * 64);
    NJ_RETURN_IF(ctx, !host, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (MoE blob)");
    nvfp4jit_status s = sm90_moe_blob_fill(ctx, api, v, w->experts, w->n, w->k, w->b, w->sfb,
                                           p->max_rows, (uint64_t)p->ws, host);
    CUresult r = s == NVFP4JIT_OK ? api->cuMemcpyHtoD(p->blob, host, bb) : CUDA_SUCCESS;
    free(host);
    NJ_FORWARD_IF_ERROR(s);
    if (r != CUDA_SUCCESS) return drv_fail(ctx, r, "cuMemcpyHtoD (MoE blob)");
    NJ_FORWARD_IF_ERROR(nj_jit_load(ctx, api, p->kernel));
    NJ_RETURN_IF(ctx, !p->kernel->fn_prep, NVFP4JIT_ERR_INTERNAL, "act16 module without prep kernel");
    /* the function is shared by every plan of this variant: its shared-memory limit only
     * ever grows (a plan of fewer experts must not shrink it under one of more) */
    p->fn = p->kernel->fn;
    if ((int)p->dyn_smem > p->kernel->dyn_smem_attr) {
        DRV_CHECK(ctx, api,
                  cuFuncSetAttribute(p->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     (int)p->dyn_smem),
                  "cuFuncSetAttribute (MoE shared memory)");
        p->kernel->dyn_smem_attr = (int)p->dyn_smem;
    }
    p->fn_prep = p->kernel->fn_prep;
    p->info.device_bytes = wsb + bb + 8 + tb;
    /* GEMM grid. act16: one CTA per tile, as many as the worst case has (CTAs past the call's
     * tiles exit at once). act16p: persistent, as many CTAs as fit on the device at once
     * (small tiles fit several per SM, and decode needs them: with one per SM decode64-down
     * ran 2x slower than the grouped act16 call on the H200), at most the worst case. */
    int64_t bound = sm90_moe_tiles_bound(v, w->experts, w->n, p->max_rows);
    int threads = fam_sm90a.threads(v);
    int64_t grid = bound;
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16P) {
        int sms = ctx->device_sms > 0 ? ctx->device_sms : fam_sm90a.default_sms, per_sm = 0;
        DRV_CHECK(ctx, api,
                  cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->fn, threads,
                                                              p->dyn_smem),
                  "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        NJ_RETURN_IF(ctx, per_sm < 1, NVFP4JIT_ERR_INVALID_VARIANT,
                     "the MoE kernel of %d experts does not fit an SM", w->experts);
        if ((int64_t)sms * per_sm < grid) grid = (int64_t)sms * per_sm;
    }
    NJ_RETURN_IF(ctx, grid < 1 || grid > INT_MAX, NVFP4JIT_ERR_INVALID_ARG,
                 "max_rows=%lld: the MoE grid of %lld CTAs is out of range", (long long)p->max_rows,
                 (long long)grid);
    p->info.grid = (unsigned)grid;
    /* prep grid: CTA 0 writes the tile table, the others convert the rows (a grid-stride loop
     * over chunks of NJ_ACT16_PREP_CTA_ITEMS items, at most 16 per SM: a plan for far more rows
     * than its calls send does not pay for a launch sized to max_rows) */
    int sms = ctx->device_sms > 0 ? ctx->device_sms : fam_sm90a.default_sms;
    int64_t items = p->max_rows * (w->k / 16);
    int64_t prep = (items + NJ_ACT16_PREP_CTA_ITEMS - 1) / NJ_ACT16_PREP_CTA_ITEMS;
    if (prep > (int64_t)sms * 16) prep = (int64_t)sms * 16;
    p->info.prep_grid = (unsigned)(1 + (prep > 0 ? prep : 1));
    return moe_graph(p, api);
}

/* The sm_100a plan's device state (a cc 10.0 device): the constant blob, the error word and
 * the MoE entry of the module. */
static nvfp4jit_status moe_build_sm100(nvfp4jit_moe_plan *p, const drv_api *api) {
    nvfp4jit_weights *w = p->w;
    nvfp4jit_ctx *ctx = w->ctx;
    const nvfp4jit_variant *v = &p->info.variant;
    size_t bb = sm100_moe_blob_size(w->experts);
    DRV_CHECK(ctx, api, cuMemAlloc(&p->blob, bb), "cuMemAlloc (MoE blob)");
    DRV_CHECK(ctx, api, cuMemAlloc(&p->status, 8), "cuMemAlloc (MoE error word)");
    int32_t st0[2] = {0, INT_MAX};
    DRV_CHECK(ctx, api, cuMemcpyHtoD(p->status, st0, sizeof st0), "cuMemcpyHtoD (MoE error word)");
    unsigned char *host = aligned_alloc(64, (bb + 63) / 64 * 64);
    NJ_RETURN_IF(ctx, !host, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (MoE blob)");
    nvfp4jit_status s = sm100_moe_blob_fill(ctx, api, v, w->experts, w->n, w->k, w->b, w->sfb, host);
    CUresult r = s == NVFP4JIT_OK ? api->cuMemcpyHtoD(p->blob, host, bb) : CUDA_SUCCESS;
    free(host);
    NJ_FORWARD_IF_ERROR(s);
    if (r != CUDA_SUCCESS) return drv_fail(ctx, r, "cuMemcpyHtoD (MoE blob)");
    NJ_FORWARD_IF_ERROR(nj_jit_load(ctx, api, p->kernel));
    CUfunction fn = NULL;
    DRV_CHECK(ctx, api, cuModuleGetFunction(&fn, p->kernel->mod, NJ_KERNEL_NAME "_moe"),
              "cuModuleGetFunction (sm_100a MoE entry)");
    DRV_CHECK(ctx, api,
              cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 (int)p->dyn_smem),
              "cuFuncSetAttribute (MoE shared memory)");
    p->fn = fn;
    p->info.device_bytes = bb + 8;
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_plan_create(nvfp4jit_weights *w, int64_t max_rows,
                                                      const nvfp4jit_variant *force,
                                                      nvfp4jit_moe_plan **out) {
    if (!w) return NVFP4JIT_ERR_INVALID_ARG;
    nvfp4jit_ctx *ctx = w->ctx;
    nj_clear(ctx);
    double t0 = nj_now_ms();
    NJ_RETURN_IF(ctx, !out, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_moe_plan_create: out is NULL");
    *out = NULL;
    NJ_RETURN_IF(ctx, max_rows < 1 || max_rows > MOE_MAX_ROWS, NVFP4JIT_ERR_INVALID_ARG,
                 "max_rows=%lld: must be 1..2^30", (long long)max_rows);
    /* the tile table and prep grid stay inside int */
    int64_t tiles_x = (w->n + 63) / 64;
    /* (the fused kernel indexes the token values / 16 in 32 bits, with its grid's threads on
     * top: 132 SMs x 8 CTAs x 1056 threads is about 2^20) */
    NJ_RETURN_IF(ctx, tiles_x * (max_rows / 8 + 1 + w->experts) > INT_MAX / 2 ||
                          max_rows * (w->k / 16) > INT_MAX - (1 << 24),
                 NVFP4JIT_ERR_INVALID_ARG,
                 "max_rows=%lld with N=%lld, K=%lld, %d experts: too many tokens or tiles for one "
                 "launch (max_rows * K/16 must stay below 2^31 - 2^24)",
                 (long long)max_rows, (long long)w->n, (long long)w->k, w->experts);
    nvfp4jit_variant v;
    nvfp4jit_choice choice = NVFP4JIT_CHOICE_HEURISTIC;
    int sms = fam_model_sms(fam_get(w->arch)); /* the heuristic's input, looked up once */
    if (force) {
        v = *force;
        NJ_FORWARD_IF_ERROR(nj_variant_check(ctx, &v));
        NJ_RETURN_IF(ctx, !nj_moe_usable(&v, w->experts, w->arch), NVFP4JIT_ERR_INVALID_VARIANT,
                     w->arch == NVFP4JIT_ARCH_SM100A
                         ? "MoE calls on sm_100a weights need a valid sm_100a variant (%d experts)"
                         : "MoE calls need an sm_90a act16/act16p variant whose tile table for %d "
                           "experts fits shared memory",
                     w->experts);
        choice = NVFP4JIT_CHOICE_FORCED;
    } else {
        NJ_FORWARD_IF_ERROR(nj_moe_choose(ctx, w->arch, w->experts, w->n, w->k, max_rows, sms, &v));
    }
    nvfp4jit_kernel *k = NULL;
    NJ_FORWARD_IF_ERROR(nj_jit_variant(ctx, &v, &k));
    nvfp4jit_status s;
    if (w->arch == NVFP4JIT_ARCH_SM100A) {
        nvfp4jit_moe_plan *p = calloc(1, sizeof *p);
        NJ_RETURN_IF(ctx, !p, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (MoE plan)");
        p->w = w;
        p->kernel = k;
        p->info.variant = v;
        p->info.choice = choice;
        p->info.sms = sms;
        p->max_rows = max_rows;
        p->sf_rows = moe_scale_rows(max_rows, w->experts);
        p->dyn_smem = fam_sm100a.dyn_smem(&v);
        p->info.grid = (unsigned)sm100_moe_grid(&v, w->experts, w->n, max_rows);
        /* device state only where the kernel can run; elsewhere a compiled-only plan whose
         * runs are refused (NVFP4JIT_ERR_ARCH_MISMATCH) */
        const drv_api *api = drv_get(ctx, &s);
        if (api && ctx->device_cc == fam_sm100a.cc) {
            CUresult cr = drv_ctx_get(api, &p->cu_ctx);
            s = cr == CUDA_SUCCESS ? moe_build_sm100(p, api)
                                   : drv_fail(ctx, cr, "reading the current CUDA context");
            if (s != NVFP4JIT_OK) {
                moe_plan_free(p);
                return s;
            }
        }
        nj_clear(ctx); /* (no driver or no sm_100a device: not an error for a compiled-only plan) */
        p->info.setup_ms = nj_now_ms() - t0;
        *out = p;
        return NVFP4JIT_OK;
    }
    const drv_api *api = drv_get(ctx, &s);
    if (!api) return s;
    NJ_RETURN_IF(ctx, ctx->device_cc != fam_sm90a.cc, NVFP4JIT_ERR_ARCH_MISMATCH,
                 "MoE plan is for sm_90a but the device is compute capability %d.%d",
                 ctx->device_cc / 10, ctx->device_cc % 10);
    nvfp4jit_moe_plan *p = calloc(1, sizeof *p);
    NJ_RETURN_IF(ctx, !p, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (MoE plan)");
    p->w = w;
    p->kernel = k;
    p->info.variant = v;
    p->info.choice = choice;
    p->info.sms = sms;
    p->max_rows = max_rows;
    p->sf_rows = moe_scale_rows(max_rows, w->experts);
    p->dyn_smem = sm90_moe_dyn_smem(&v, w->experts);
    CUresult cr = drv_ctx_get(api, &p->cu_ctx);
    s = cr == CUDA_SUCCESS ? moe_build(p, api)
                           : drv_fail(ctx, cr, "reading the current CUDA context");
    if (s != NVFP4JIT_OK) {
        moe_plan_free(p);
        return s;
    }
    p->info.setup_ms = nj_now_ms() - t0;
    *out = p;
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_plan_info(const nvfp4jit_moe_plan *p,
                                                    nvfp4jit_moe_info *info) {
    if (!p || !info) return NVFP4JIT_ERR_INVALID_ARG;
    *info = p->info;
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_run(nvfp4jit_moe_plan *p,
                                              const nvfp4jit_moe_call *call, void *stream) {
    if (!p) return NVFP4JIT_ERR_INVALID_ARG;
    nvfp4jit_ctx *ctx = p->w->ctx;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !call, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_moe_run: call is NULL");
    NJ_RETURN_IF(ctx, !call->a || !call->sfa || !call->c || !call->offsets || !call->sf_offsets,
                 NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_moe_run: a NULL pointer (a, sfa, c, "
                 "offsets and sf_offsets are all needed)");
    NJ_RETURN_IF(ctx, call->a % 16 || call->sfa % 16 || call->c % 16,
                 NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_moe_run: a, sfa and c must be 16-byte aligned");
    NJ_RETURN_IF(ctx, call->offsets % 4 || call->sf_offsets % 4, NVFP4JIT_ERR_INVALID_ARG,
                 "nvfp4jit_moe_run: offsets and sf_offsets must be 4-byte aligned");
    const drv_api *api = drv_load();
    if (p->w->arch == NVFP4JIT_ARCH_SM100A && !p->fn) {
        /* compiled only: as the grouped call on a device that is not cc 10.0 */
        nvfp4jit_status s;
        api = drv_get(ctx, &s);
        if (!api) return s;
        NJ_RETURN_IF(ctx, ctx->device_cc != 100, NVFP4JIT_ERR_ARCH_MISMATCH,
                     "MoE plan is for sm_100a but the device is compute capability %d.%d",
                     ctx->device_cc / 10, ctx->device_cc % 10);
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_ARG,
                       "this sm_100a MoE plan was made without a compute capability 10.0 "
                       "device current: it has no device state (make the plan again)");
    }
    NJ_RETURN_IF(ctx, !api, NVFP4JIT_ERR_NO_DRIVER, "the CUDA driver is not loaded");
    drv_ctx cur;
    CUresult cr = drv_ctx_get(api, &cur);
    if (cr != CUDA_SUCCESS) return drv_fail(ctx, cr, "reading the current CUDA context");
    if (!drv_ctx_same(cur, p->cu_ctx))
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_ARG,
                       drv_ctx_alive(api, p->cu_ctx)
                           ? "MoE plan's device buffers belong to another CUDA context"
                           : "MoE plan's CUDA context was destroyed (its device buffers with "
                             "it); destroy the plan and make a new one");
    if (p->w->arch == NVFP4JIT_ARCH_SM100A) {
        /* one launch; everything per call is a kernel parameter (the token map included) */
        nj_moe_args m = {call->a, call->sfa, call->c, call->offsets, call->sf_offsets,
                         (uint64_t)p->status, (int32_t)p->max_rows,
                         (int32_t)(p->sf_rows > INT_MAX ? INT_MAX : p->sf_rows), 0};
        CUtensorMap amap;
        NJ_FORWARD_IF_ERROR(sm100_moe_token_map(ctx, api, &p->info.variant, call->a,
                                                p->max_rows, p->w->k, &amap));
        void *args[] = {&p->blob, &m, &amap};
        DRV_CHECK(ctx, api,
                  cuLaunchKernel(p->fn, p->info.grid, 1, 1, sm100_moe_threads(&p->info.variant),
                                 1, 1, (unsigned)p->dyn_smem, (CUstream)stream, args, NULL),
                  "cuLaunchKernel (sm_100a MoE)");
        return NVFP4JIT_OK;
    }
    nj_moe_args m = {call->a,
                     call->sfa,
                     call->c,
                     call->offsets,
                     call->sf_offsets,
                     (uint64_t)p->status,
                     (int32_t)p->max_rows,
                     (int32_t)(p->sf_rows > INT_MAX ? INT_MAX : p->sf_rows),
                     (uint64_t)p->tiles};
    void *prep_params[] = {&p->blob, &m, &p->no_tab};
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    DRV_CHECK(ctx, api, cuStreamIsCapturing((CUstream)stream, &cap), "cuStreamIsCapturing");
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE) {
        /* a capture records the two launches, each with its own copy of the parameters
         * (a graph launched inside a capture would be recorded with the plan's parameters of
         * the moment, which later calls change) */
        void *gemm_params[] = {&p->blob, &p->gemm_args};
        DRV_CHECK(ctx, api,
                  cuLaunchKernel(p->fn_prep, p->info.prep_grid, 1, 1, 256, 1, 1, 0,
                                 (CUstream)stream, prep_params, NULL),
                  "cuLaunchKernel (MoE prep)");
        /* the GEMM as the prep's programmatic dependent (the capture records the edge) */
        CUlaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig lc;
        memset(&lc, 0, sizeof lc);
        lc.gridDimX = p->info.grid;
        lc.gridDimY = lc.gridDimZ = 1;
        lc.blockDimX = (unsigned)fam_sm90a.threads(&p->info.variant);
        lc.blockDimY = lc.blockDimZ = 1;
        lc.sharedMemBytes = (unsigned)p->dyn_smem;
        lc.hStream = (CUstream)stream;
        lc.attrs = &at;
        lc.numAttrs = 1;
        DRV_CHECK(ctx, api, cuLaunchKernelEx(&lc, p->fn, gemm_params, NULL),
                  "cuLaunchKernelEx (MoE GEMM)");
        return NVFP4JIT_OK;
    }
    if (memcmp(&m, &p->prep_args, sizeof m) != 0) {
        CUDA_KERNEL_NODE_PARAMS kp;
        moe_prep_node(p, &kp, prep_params);
        DRV_CHECK(ctx, api, cuGraphExecKernelNodeSetParams(p->exec, p->node_prep, &kp),
                  "cuGraphExecKernelNodeSetParams (MoE prep)");
        p->prep_args = m;
    }
    DRV_CHECK(ctx, api, cuGraphLaunch(p->exec, (CUstream)stream), "cuGraphLaunch (MoE)");
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_moe_plan_check(nvfp4jit_moe_plan *p, int *expert) {
    if (expert) *expert = -1;
    if (!p) return NVFP4JIT_ERR_INVALID_ARG;
    nvfp4jit_ctx *ctx = p->w->ctx;
    nj_clear(ctx);
    if (!p->status) return NVFP4JIT_OK; /* a compiled-only sm_100a plan never ran */
    const drv_api *api = drv_load();
    NJ_RETURN_IF(ctx, !api, NVFP4JIT_ERR_NO_DRIVER, "the CUDA driver is not loaded");
    int32_t st[2];
    DRV_CHECK(ctx, api, cuCtxSynchronize(), "cuCtxSynchronize");
    DRV_CHECK(ctx, api, cuMemcpyDtoH(st, p->status, sizeof st), "reading the MoE error word");
    if (st[0] == 0) return NVFP4JIT_OK;
    int32_t st0[2] = {0, INT_MAX};
    DRV_CHECK(ctx, api, cuMemcpyHtoD(p->status, st0, sizeof st0), "clearing the MoE error word");
    if (expert) *expert = st[1];
    return nj_fail(ctx, NVFP4JIT_ERR_INVALID_PROBLEM,
                   "expert %d: skipped by a MoE run (the lowest faulty expert; faults of all "
                   "runs since the last check:%s%s%s)",
                   st[1], st[0] & 1 ? " offsets negative or decreasing;" : "",
                   st[0] & 2 ? " rows past max_rows;" : "",
                   st[0] & 4 ? " scale offset not a multiple of 128 or past the scale buffer;"
                             : "");
}
