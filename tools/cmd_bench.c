/* cmd_bench.c - `nvfp4jit bench`: time the chosen variant and, in the same run, cuBLAS on the
 * same products with operands dequantised beforehand to fp16 and to bf16.
 *
 * NOTE: cuBLAS is dlopen'ed here (found at run time: $NVFP4JIT_CUBLAS_LIB, else its soname
 * through the loader's search, which includes the command's RUNPATH to the toolkit, else the
 * toolkit's usual directories) rather than linked: linking libcublas (+ libcublasLt, ~600 MB) costs ~70 ms at every start
 * of the command, which alone would break the "a cache hit takes milliseconds" promise of
 * `nvfp4jit compile`. Only bench pays for it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu.h"

#ifdef NVFP4JIT_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)
#define PEAK_TFLOPS 749.0              /* cuBLAS fp16 8192^3 on the H200 (DESIGN.md) */
#define BENCH_MAX_VARIANTS 16
#define FLUSH_BYTES (256u << 20)       /* > the 60 MB L2 of H100/H200 (and B200's 126 MB) */


/* ---- cuBLAS, loaded at run time ------------------------------------------------------------ */
#ifdef NVFP4JIT_HAVE_CUBLAS
typedef struct cublas_dl {
    void *lib;
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasGemmEx) *gemm_ex;
    __typeof__(cublasGemmGroupedBatchedEx) *grouped; /* NULL before cuBLAS 12.5 */
    __typeof__(cublasGetStatusString) *status_string;
    cublasHandle_t h;
} cublas_dl;

static void *sym(void *lib, const char *name) { return dlsym(lib, name); }
#define LOAD(field, name)                                                                     \
    do {                                                                                      \
        void *p_ = sym(cb->lib, name);                                                        \
        memcpy(&cb->field, &p_, sizeof p_);                                                   \
    } while (0)

static int cublas_open(cublas_dl *cb, char *err, size_t n) {
    memset(cb, 0, sizeof *cb);
    const char *env = getenv("NVFP4JIT_CUBLAS_LIB");
    char home[2][PATH_MAX];
    const char *cuda_home = getenv("CUDA_HOME");
    int w0 = snprintf(home[0], sizeof home[0], "%s/lib64/libcublas.so." BENCH_STR(CUBLAS_VER_MAJOR),
                      cuda_home && *cuda_home ? cuda_home : "/usr/local/cuda");
    int w1 = snprintf(home[1], sizeof home[1], "%s/lib/libcublas.so." BENCH_STR(CUBLAS_VER_MAJOR),
                      cuda_home && *cuda_home ? cuda_home : "/usr/local/cuda");
    /* a $CUDA_HOME path that does not fit is not tried: cut short, it names another file */
    const char *names[] = {"libcublas.so." BENCH_STR(CUBLAS_VER_MAJOR),
                           w0 > 0 && (size_t)w0 < sizeof home[0] ? home[0] : NULL,
                           w1 > 0 && (size_t)w1 < sizeof home[1] ? home[1] : NULL,
                           "libcublas.so"};
    if (env && *env) {
        cb->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL); /* named: that one or none */
    } else {
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !cb->lib; i++)
            if (names[i]) cb->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!cb->lib) {
        snprintf(err, n, "cannot load cuBLAS: %s", dlerror());
        return -1;
    }
    LOAD(create, "cublasCreate_v2");
    LOAD(destroy, "cublasDestroy_v2");
    LOAD(set_stream, "cublasSetStream_v2");
    LOAD(gemm_ex, "cublasGemmEx");
    LOAD(grouped, "cublasGemmGroupedBatchedEx");
    LOAD(status_string, "cublasGetStatusString");
    if (!cb->create || !cb->destroy || !cb->set_stream || !cb->gemm_ex) {
        snprintf(err, n, "cuBLAS lacks cublasCreate_v2/cublasSetStream_v2/cublasGemmEx");
        dlclose(cb->lib);
        cb->lib = NULL;
        return -1;
    }
    cublasStatus_t s = cb->create(&cb->h);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, n, "cublasCreate failed: %s",
                 cb->status_string ? cb->status_string(s) : "?");
        dlclose(cb->lib);
        cb->lib = NULL;
        return -1;
    }
    return 0;
}

static void cublas_close(cublas_dl *cb) {
    if (cb->h) cb->destroy(cb->h);
    /* NOTE: libcublas is not dlclose'd: its cudart keeps process-wide state and atexit
     * handlers that would run after the unmapping. */
    cb->h = NULL;
}

static const char *cb_status(const cublas_dl *cb, cublasStatus_t s) {
    return cb->status_string ? cb->status_string(s) : "cuBLAS error";
}
#endif /* NVFP4JIT_HAVE_CUBLAS */

/* ---- one row of results ------------------------------------------------------------------ */
typedef struct bench_row {
    char impl[96];
    double us; /* < 0: not available */
    char note[256];
} bench_row;

typedef struct run_ctx {
    const char *cmd;
    nvfp4jit_plan *plan;
    tool_data *data;
    tool_dev *dev;
} run_ctx;

static int run_nvfp4(void *u) {
    run_ctx *rc = u;
    nvfp4jit_status s = nvfp4jit_plan_run(rc->plan, rc->data->g, rc->data->n, rc->dev->stream);
    if (s != NVFP4JIT_OK) return tool_lib_fail(rc->cmd, rc->dev->ctx, s, "nvfp4jit_plan_run");
    return 0;
}

/* ---- host time per call ------------------------------------------------------------------ */
typedef struct graph_run {
    const char *cmd;
    tool_dev *dev;
    CUgraphExec exec;
} graph_run;

static int run_graph(void *u) {
    graph_run *g = u;
    CUresult r = g->dev->api->cuGraphLaunch(g->exec, g->dev->stream);
    return r == CUDA_SUCCESS ? 0 : tool_cu_fail(g->cmd, g->dev, r, "cuGraphLaunch");
}

static double host_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Host microseconds per call, measured with the host clock around a burst of calls (no
 * synchronisation inside the burst): out[0] plan_run with the same pointers as the last call,
 * out[1] with new pointers every call (two sets of C buffers, alternating; a burst of 12,
 * below the plan's 16 upload buffers), out[2] cuGraphLaunch of a captured plan_run; out[3]
 * the GPU time of one graph replay and out[4] of one eager plan_run, timed alternately in one
 * loop (events, cold L2, medians): timed one after the other, the later one ran on a GPU that
 * had been busy longer and was up to 10 % slower on the long sets (bench/RESULTS.md,
 * 2026-12-06). @return 0 or 1 after a message. */
static int host_times(const char *cmd, tool_dev *dev, nvfp4jit_plan *plan, tool_data *d,
                      int iters, CUdeviceptr flush, double out[5]) {
    const tool_cuda *api = dev->api;
    nvfp4jit_ctx *ctx = dev->ctx;
    nvfp4jit_group *g2 = malloc(d->n * sizeof *g2);
    int rc = 0;
    CUgraph graph = NULL;
    graph_run gr = {cmd, dev, NULL};
    if (!g2) return tool_fail(cmd, "out of host memory");
    memcpy(g2, d->g, d->n * sizeof *g2);
    for (size_t i = 0; i < d->n && !rc; i++) {
        g2[i].c = 0;
        if (d->g[i].m == 0) continue;
        CUdeviceptr c = 0;
        CUresult r = api->cuMemAlloc(&c, (size_t)(d->g[i].m * d->g[i].n * 2));
        if (r != CUDA_SUCCESS) rc = tool_cu_fail(cmd, dev, r, "cuMemAlloc (second C)");
        g2[i].c = c;
    }
#define HT_RUN(groups)                                                                       \
    do {                                                                                     \
        nvfp4jit_status s_ = nvfp4jit_plan_run(plan, (groups), d->n, dev->stream);           \
        if (s_ != NVFP4JIT_OK) {                                                             \
            rc = tool_lib_fail(cmd, ctx, s_, "nvfp4jit_plan_run");                           \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)
    if (rc) goto out;
    /* warm-up: upload buffers allocated for both pointer sets */
    for (int i = 0; i < 16; i++) HT_RUN(i % 2 ? g2 : d->g);
    HT_RUN(d->g);
    api->cuStreamSynchronize(dev->stream);
    double t0 = host_us();
    for (int i = 0; i < iters; i++) HT_RUN(d->g);
    out[0] = (host_us() - t0) / iters;
    api->cuStreamSynchronize(dev->stream);
    const int burst = 12;
    t0 = host_us();
    for (int i = 0; i < burst; i++) HT_RUN(i % 2 ? g2 : d->g);
    out[1] = (host_us() - t0) / burst;
    api->cuStreamSynchronize(dev->stream);
    CUresult r = api->cuStreamBeginCapture(dev->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS) {
        rc = tool_cu_fail(cmd, dev, r, "cuStreamBeginCapture");
        goto out;
    }
    nvfp4jit_status s = nvfp4jit_plan_run(plan, d->g, d->n, dev->stream);
    r = api->cuStreamEndCapture(dev->stream, &graph);
    if (s != NVFP4JIT_OK) {
        rc = tool_lib_fail(cmd, ctx, s, "nvfp4jit_plan_run (captured)");
        goto out;
    }
    if (r == CUDA_SUCCESS) r = api->cuGraphInstantiate(&gr.exec, graph, 0);
    if (r != CUDA_SUCCESS) {
        rc = tool_cu_fail(cmd, dev, r, "capturing a run into a graph");
        goto out;
    }
    if ((rc = run_graph(&gr))) goto out;
    api->cuStreamSynchronize(dev->stream);
    t0 = host_us();
    for (int i = 0; i < iters && !rc; i++) rc = run_graph(&gr);
    out[2] = (host_us() - t0) / iters;
    api->cuStreamSynchronize(dev->stream);
    if (!rc) {
        run_ctx eager = {cmd, plan, d, dev};
        const tool_work_fn fns[2] = {run_graph, run_nvfp4};
        void *const users[2] = {&gr, &eager};
        double med[2];
        rc = tool_time_each(cmd, dev, 2, fns, users, 3, iters, flush, FLUSH_BYTES, med, NULL,
                            NULL);
        out[3] = med[0];
        out[4] = med[1];
    }
#undef HT_RUN
out:
    api->cuStreamSynchronize(dev->stream);
    if (gr.exec) api->cuGraphExecDestroy(gr.exec);
    if (graph) api->cuGraphDestroy(graph);
    for (size_t i = 0; i < d->n; i++)
        if (g2[i].c) api->cuMemFree(g2[i].c);
    free(g2);
    return rc;
}

/* ---- the MoE path on the same data ---------------------------------------------------------- */
typedef struct moe_run_ctx {
    const char *cmd;
    tool_dev *dev;
    nvfp4jit_moe_plan *plan;
    nvfp4jit_moe_call call;
} moe_run_ctx;

static int run_moe(void *u) {
    moe_run_ctx *m = u;
    nvfp4jit_status s = nvfp4jit_moe_run(m->plan, &m->call, m->dev->stream);
    return s == NVFP4JIT_OK ? 0 : tool_lib_fail(m->cmd, m->dev->ctx, s, "nvfp4jit_moe_run");
}

/* The set as one MoE layer (every group one expert; needs one N and K): tokens and token
 * scales packed contiguously (scales at 128-row boundaries), offsets uploaded once, the
 * weights as registered per-expert pointers (an empty group's expert borrows another's, it is
 * never read). Prints the MoE row (GPU time, timed alone), with `grouped` (not NULL) the MoE
 * call and that plan's grouped call timed in turn, and its host times. The results are not checked
 * here: tests/test_moe.c checks them (bit-exact against the grouped call). @return 0, 1 after a
 * message, 2 when the set is not one layer (skipped with a note). */
static int bench_moe(const char *cmd, tool_dev *dev, tool_data *d, int iters, CUdeviceptr flush,
                     FILE *csv, const char *set_name, const nvfp4jit_variant *force,
                     nvfp4jit_plan *grouped, double *gpu_us) {
    const tool_cuda *api = dev->api;
    nvfp4jit_ctx *ctx = dev->ctx;
    size_t E = d->n;
    int64_t N = d->g[0].n, K = d->g[0].k, rows = 0;
    size_t first = E;
    for (size_t e = 0; e < E; e++) {
        if (d->g[e].n != N || d->g[e].k != K) return 2;
        rows += d->g[e].m;
        if (d->g[e].m > 0 && first == E) first = e;
    }
    if (first == E) return 2;
    int rc = 0;
    int *off = calloc(E + 1, sizeof *off), *sfo = calloc(E, sizeof *sfo);
    uint64_t *bp = calloc(E, sizeof *bp), *sp = calloc(E, sizeof *sp);
    int64_t sf_rows = nvfp4jit_moe_scale_rows(rows, (int)E);
    size_t ab = (size_t)(rows * K / 2), sab = (size_t)sf_rows * (size_t)(K / 16);
    unsigned char *ha = calloc(ab ? ab : 1, 1), *hs = calloc(sab, 1);
    CUdeviceptr da = 0, ds = 0, dc = 0, dc2 = 0, doff = 0, dsfo = 0;
    nvfp4jit_weights *w = NULL;
    nvfp4jit_moe_plan *plan = NULL;
    CUgraph graph = NULL;
    CUgraphExec ge = NULL;
    if (!off || !sfo || !bp || !sp || !ha || !hs) {
        rc = tool_fail(cmd, "out of host memory");
        goto out;
    }
    int r = 0, sr = 0;
    for (size_t e = 0; e < E; e++) {
        off[e] = r;
        sfo[e] = sr;
        int64_t m = d->g[e].m;
        if (m > 0) {
            memcpy(ha + (size_t)r * (size_t)(K / 2), d->a[e], (size_t)(m * K / 2));
            memcpy(hs + (size_t)sr * (size_t)(K / 16), d->sfa[e], nvfp4jit_ext_ref_sf_bytes(m, K));
        }
        r += (int)m;
        sr += (int)((m + 127) / 128 * 128);
        bp[e] = d->g[m > 0 ? e : first].b;
        sp[e] = d->g[m > 0 ? e : first].sfb;
    }
    off[E] = r;
    CUresult cr;
    if ((cr = api->cuMemAlloc(&da, ab ? ab : 16)) || (cr = api->cuMemAlloc(&ds, sab)) ||
        (cr = api->cuMemAlloc(&dc, (size_t)(rows * N * 2) + 16)) ||
        (cr = api->cuMemAlloc(&dc2, (size_t)(rows * N * 2) + 16)) ||
        (cr = api->cuMemAlloc(&doff, (E + 1) * sizeof *off)) ||
        (cr = api->cuMemAlloc(&dsfo, E * sizeof *sfo)) || (cr = api->cuMemcpyHtoD(da, ha, ab)) ||
        (cr = api->cuMemcpyHtoD(ds, hs, sab)) ||
        (cr = api->cuMemcpyHtoD(doff, off, (E + 1) * sizeof *off)) ||
        (cr = api->cuMemcpyHtoD(dsfo, sfo, E * sizeof *sfo))) {
        rc = tool_cu_fail(cmd, dev, cr, "MoE buffers");
        goto out;
    }
    nvfp4jit_weights_desc wd = {(int)E, N, K, 0, 0, bp, sp};
    nvfp4jit_status s = nvfp4jit_weights_create(ctx, NVFP4JIT_ARCH_SM90A, &wd, &w);
    if (s == NVFP4JIT_OK) s = nvfp4jit_moe_plan_create(w, rows > 0 ? rows : 1, force, &plan);
    if (s != NVFP4JIT_OK) {
        rc = tool_lib_fail(cmd, ctx, s, "MoE plan");
        goto out;
    }
    nvfp4jit_moe_info info;
    nvfp4jit_moe_plan_info(plan, &info);
    moe_run_ctx mr = {cmd, dev, plan, {da, ds, dc, doff, dsfo}};
    double mn, us = 0, host[3] = {0};
    if ((rc = tool_time(cmd, dev, run_moe, &mr, 3, iters, flush, FLUSH_BYTES, &us, &mn))) goto out;
    api->cuStreamSynchronize(dev->stream);
    double t0 = host_us();
    for (int i = 0; i < iters && !rc; i++) rc = run_moe(&mr);
    host[0] = (host_us() - t0) / iters;
    api->cuStreamSynchronize(dev->stream);
    t0 = host_us();
    for (int i = 0; i < iters && !rc; i++) {
        mr.call.c = i % 2 ? dc2 : dc;
        rc = run_moe(&mr);
    }
    host[1] = (host_us() - t0) / iters;
    mr.call.c = dc;
    api->cuStreamSynchronize(dev->stream);
    if (rc) goto out;
    if ((cr = api->cuStreamBeginCapture(dev->stream, CU_STREAM_CAPTURE_MODE_GLOBAL))) {
        rc = tool_cu_fail(cmd, dev, cr, "cuStreamBeginCapture");
        goto out;
    }
    s = nvfp4jit_moe_run(plan, &mr.call, dev->stream);
    cr = api->cuStreamEndCapture(dev->stream, &graph);
    if (s == NVFP4JIT_OK && cr == CUDA_SUCCESS) cr = api->cuGraphInstantiate(&ge, graph, 0);
    if (s != NVFP4JIT_OK || cr != CUDA_SUCCESS) {
        rc = s != NVFP4JIT_OK ? tool_lib_fail(cmd, ctx, s, "nvfp4jit_moe_run (captured)")
                              : tool_cu_fail(cmd, dev, cr, "capturing a MoE run");
        goto out;
    }
    api->cuGraphLaunch(ge, dev->stream);
    api->cuStreamSynchronize(dev->stream);
    t0 = host_us();
    for (int i = 0; i < iters; i++) api->cuGraphLaunch(ge, dev->stream);
    host[2] = (host_us() - t0) / iters;
    api->cuStreamSynchronize(dev->stream);
    /* The driver's floor on this host: the same bursts of launches of an empty kernel with the
     * MoE GEMM's grid and parameter bytes (a u64 and a 64-byte struct): as a graph of two such
     * kernel nodes whose first node's parameters are updated every call (what the sm_90a MoE
     * call does), and as one plain launch. What the MoE call costs above the graph floor is the
     * library's. */
    double floor_us[2] = {-1, -1};
    {
        static const char ptx[] =
            ".version 8.0\n.target sm_90a\n.address_size 64\n"
            ".visible .entry nvfp4jit_empty(.param .u64 b, .param .align 8 .b8 m[64]) { ret; }\n";
        CUmodule mod = NULL;
        CUfunction fn = NULL;
        if (api->cuModuleLoadData(&mod, ptx) == CUDA_SUCCESS &&
            api->cuModuleGetFunction(&fn, mod, "nvfp4jit_empty") == CUDA_SUCCESS) {
            unsigned char pm[64] = {0};
            uint64_t pb = 0;
            void *args[] = {&pb, pm};
            CUgraph fg = NULL;
            CUgraphExec fge = NULL;
            CUgraphNode n1 = NULL, n2 = NULL;
            CUDA_KERNEL_NODE_PARAMS kp;
            memset(&kp, 0, sizeof kp);
            kp.func = fn;
            kp.gridDimX = info.prep_grid ? info.prep_grid : 1;
            kp.gridDimY = kp.gridDimZ = kp.blockDimY = kp.blockDimZ = 1;
            kp.blockDimX = 256;
            kp.kernelParams = args;
            int graph_ok = api->cuGraphCreate(&fg, 0) == CUDA_SUCCESS &&
                           api->cuGraphAddKernelNode(&n1, fg, NULL, 0, &kp) == CUDA_SUCCESS;
            CUDA_KERNEL_NODE_PARAMS kp2 = kp;
            kp2.gridDimX = info.grid;
            graph_ok = graph_ok && api->cuGraphAddKernelNode(&n2, fg, &n1, 1, &kp2) == CUDA_SUCCESS &&
                       api->cuGraphInstantiate(&fge, fg, 0) == CUDA_SUCCESS;
            for (int way = 0; way < 2; way++) {
                CUresult lr = way == 0 && !graph_ok ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
                for (int rep = 0; rep < 2 && lr == CUDA_SUCCESS; rep++) { /* warm, then timed */
                    api->cuStreamSynchronize(dev->stream);
                    t0 = host_us();
                    for (int i = 0; i < iters && lr == CUDA_SUCCESS; i++) {
                        if (way == 0) {
                            pm[0] = (unsigned char)i; /* a changed call: the node is updated */
                            lr = api->cuGraphExecKernelNodeSetParams(fge, n1, &kp);
                            if (lr == CUDA_SUCCESS) lr = api->cuGraphLaunch(fge, dev->stream);
                        } else {
                            lr = api->cuLaunchKernel(fn, info.grid, 1, 1, 256, 1, 1, 0,
                                                     dev->stream, args, NULL);
                        }
                    }
                    floor_us[way] = lr == CUDA_SUCCESS ? (host_us() - t0) / iters : -1;
                }
            }
            api->cuStreamSynchronize(dev->stream);
            if (fge) api->cuGraphExecDestroy(fge);
            if (fg) api->cuGraphDestroy(fg);
            api->cuStreamSynchronize(dev->stream);
        }
        if (mod) api->cuModuleUnload(mod);
    }
    printf("  %-36s %10.2f  (MoE path, %s: %zu experts, offsets on the device)\n",
           tool_variant_str(&info.variant), us,
           force ? "the grouped call's variant" : "MoE heuristic", E);
    if (grouped) {
        /* The grouped call (the first variant: the same as the MoE plan's when force is
         * given) and the MoE call in turn (tool_time_each): the comparison issue 12 asks for,
         * free of the drift between two separate measurements (the clocks fall under the
         * power cap during a long run); the line above is timed alone. */
        run_ctx rx = {cmd, grouped, d, dev};
        tool_work_fn fns[2] = {run_nvfp4, run_moe};
        void *users[2] = {&rx, &mr};
        double ab[2] = {0, 0};
        if ((rc = tool_time_each(cmd, dev, 2, fns, users, 3, iters, flush, FLUSH_BYTES, ab, NULL,
                                 NULL)))
            goto out;
        printf("  interleaved, %s: grouped call %.2f us, MoE path %.2f us (MoE %+.1f %%)\n",
               force ? "same variant" : "each its own choice", ab[0], ab[1],
               100.0 * (ab[1] / ab[0] - 1.0));
        if (csv)
            fprintf(csv, "%s,nvfp4jit MoE vs grouped interleaved %s,%.3f,,,,\"grouped %.3f us\"\n",
                    set_name, tool_variant_str(&info.variant), ab[1], ab[0]);
    }
    printf("  MoE host us per call: %.1f same pointers, %.1f new C every call, %.1f graph replay "
           "(plan setup %.1f ms, %.1f MB on the device)\n",
           host[0], host[1], host[2], info.setup_ms, info.device_bytes / 1e6);
    printf("  driver floor host us per call: %.1f two-node graph with an updated node, %.1f one "
           "plain launch (empty kernels, the same grids and parameter bytes)\n",
           floor_us[0], floor_us[1]);
    if (csv)
        fprintf(csv, "%s,nvfp4jit MoE %s,%.3f,,,,\"host us/call %.2f|%.2f|%.2f; driver floor "
                     "%.2f|%.2f\"\n", set_name, tool_variant_str(&info.variant), us, host[0],
                host[1], host[2], floor_us[0], floor_us[1]);
    *gpu_us = us;
out:
    if (ge) api->cuGraphExecDestroy(ge);
    if (graph) api->cuGraphDestroy(graph);
    nvfp4jit_moe_plan_destroy(plan);
    nvfp4jit_weights_destroy(w);
    CUdeviceptr *dp[] = {&da, &ds, &dc, &dc2, &doff, &dsfo};
    for (size_t i = 0; i < sizeof dp / sizeof *dp; i++)
        if (*dp[i]) api->cuMemFree(*dp[i]);
    free(off);
    free(sfo);
    free(bp);
    free(sp);
    free(ha);
    free(hs);
    return rc;
}

#ifdef NVFP4JIT_HAVE_CUBLAS
/* Dequantised operands of the non-empty groups, on the device. */
typedef struct dq_set {
    int count; /* non-empty groups */
    int *m, *n, *k;
    CUdeviceptr *a, *b, *c;   /* our A [M,K], B [N,K], C [M,N], all row-major */
    CUdeviceptr parr;         /* device pointer arrays for the grouped call: B, A, C */
    cublasOperation_t *ta, *tb; /* host arrays of the grouped call */
    float *alpha, *beta;
    int *gs;
    cudaDataType_t type;
    const char *cmd;
    const cublas_dl *cb;
    tool_dev *dev;
    int grouped_failed;
    char why[200];
} dq_set;

static void dq_free(dq_set *q) {
    for (int i = 0; i < q->count; i++) {
        if (q->a && q->a[i]) q->dev->api->cuMemFree(q->a[i]);
        if (q->b && q->b[i]) q->dev->api->cuMemFree(q->b[i]);
        if (q->c && q->c[i]) q->dev->api->cuMemFree(q->c[i]);
    }
    if (q->parr) q->dev->api->cuMemFree(q->parr);
    free(q->m);
    free(q->n);
    free(q->k);
    free(q->a);
    free(q->b);
    free(q->c);
    free(q->ta);
    free(q->tb);
    free(q->alpha);
    free(q->beta);
    free(q->gs);
    q->ta = q->tb = NULL;
    q->alpha = q->beta = NULL;
    q->gs = NULL;
    q->count = 0;
    q->m = q->n = q->k = NULL;
    q->a = q->b = q->c = NULL;
    q->parr = 0;
}

static int dq_alloc(dq_set *q, size_t bytes, CUdeviceptr *p) {
    CUresult r = q->dev->api->cuMemAlloc(p, bytes ? bytes : 16);
    if (r != CUDA_SUCCESS) return tool_cu_fail(q->cmd, q->dev, r, "cuMemAlloc (cuBLAS operands)");
    return 0;
}

static int dq_create(dq_set *q, const tool_data *d, int bf16) {
    const tool_cuda *api = q->dev->api;
    int n = 0;
    for (size_t i = 0; i < d->n; i++) n += d->g[i].m > 0;
    q->m = calloc((size_t)n + 1, sizeof *q->m);
    q->n = calloc((size_t)n + 1, sizeof *q->n);
    q->k = calloc((size_t)n + 1, sizeof *q->k);
    q->a = calloc((size_t)n + 1, sizeof *q->a);
    q->b = calloc((size_t)n + 1, sizeof *q->b);
    q->c = calloc((size_t)n + 1, sizeof *q->c);
    q->ta = calloc((size_t)n + 1, sizeof *q->ta);
    q->tb = calloc((size_t)n + 1, sizeof *q->tb);
    q->alpha = calloc((size_t)n + 1, sizeof *q->alpha);
    q->beta = calloc((size_t)n + 1, sizeof *q->beta);
    q->gs = calloc((size_t)n + 1, sizeof *q->gs);
    q->count = n;
    q->type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    if (!q->m || !q->n || !q->k || !q->a || !q->b || !q->c || !q->ta || !q->tb || !q->alpha ||
        !q->beta || !q->gs)
        return tool_fail(q->cmd, "out of host memory");
    for (int i = 0; i < n; i++) {
        q->ta[i] = CUBLAS_OP_T;
        q->tb[i] = CUBLAS_OP_N;
        q->alpha[i] = 1.0f;
        q->beta[i] = 0.0f;
        q->gs[i] = 1; /* one problem per cuBLAS group: every group has its own shape */
    }
    size_t max_elems = 0;
    for (size_t i = 0; i < d->n; i++) {
        const nvfp4jit_group *g = &d->g[i];
        if (g->m == 0) continue;
        size_t e = (size_t)((g->m > g->n ? g->m : g->n) * g->k);
        if (e > max_elems) max_elems = e;
    }
    uint16_t *host = malloc(max_elems * 2 + 16);
    if (!host) return tool_fail(q->cmd, "out of host memory");
    int threads = tool_nthreads(), j = 0, rc = 0;
    CUresult r;
    for (size_t i = 0; i < d->n && !rc; i++) {
        const nvfp4jit_group *g = &d->g[i];
        if (g->m == 0) continue; /* cuBLAS gets only the non-empty groups */
        q->m[j] = (int)g->m;
        q->n[j] = (int)g->n;
        q->k[j] = (int)g->k;
        if ((rc = dq_alloc(q, (size_t)(g->m * g->k * 2), &q->a[j])) ||
            (rc = dq_alloc(q, (size_t)(g->n * g->k * 2), &q->b[j])) ||
            (rc = dq_alloc(q, (size_t)(g->m * g->n * 2), &q->c[j])))
            break;
        tool_dequant(d->a[i], d->sfa[i], g->m, g->k, bf16, host, threads);
        if ((r = api->cuMemcpyHtoD(q->a[j], host, (size_t)(g->m * g->k * 2)))) {
            rc = tool_cu_fail(q->cmd, q->dev, r, "cuMemcpyHtoD");
            break;
        }
        tool_dequant(d->b[i], d->sfb[i], g->n, g->k, bf16, host, threads);
        if ((r = api->cuMemcpyHtoD(q->b[j], host, (size_t)(g->n * g->k * 2)))) {
            rc = tool_cu_fail(q->cmd, q->dev, r, "cuMemcpyHtoD");
            break;
        }
        j++;
    }
    free(host);
    if (rc) return rc;
    /* pointer arrays of the grouped call live in device memory: cuBLAS's A = our B */
    if (n > 0) {
        uint64_t *pa = malloc(3 * (size_t)n * sizeof *pa);
        if (!pa) return tool_fail(q->cmd, "out of host memory");
        for (int i = 0; i < n; i++) {
            pa[i] = q->b[i];
            pa[n + i] = q->a[i];
            pa[2 * n + i] = q->c[i];
        }
        rc = dq_alloc(q, 3 * (size_t)n * sizeof *pa, &q->parr);
        if (!rc && (r = api->cuMemcpyHtoD(q->parr, pa, 3 * (size_t)n * sizeof *pa)))
            rc = tool_cu_fail(q->cmd, q->dev, r, "cuMemcpyHtoD (pointer arrays)");
        free(pa);
    }
    return rc;
}

/* Row-major C[M,N] = A[M,K] * B[N,K]^T is column-major C^T[N,M] = B * A^T:
 * cublasGemmEx(OP_T, OP_N, n, m, k, B, ldb=k, A, lda=k, C, ldc=n), fp32 compute. */
static int run_loop(void *u) {
    dq_set *q = u;
    const float alpha = 1.0f, beta = 0.0f;
    for (int i = 0; i < q->count; i++) {
        cublasStatus_t s = q->cb->gemm_ex(
            q->cb->h, CUBLAS_OP_T, CUBLAS_OP_N, q->n[i], q->m[i], q->k[i], &alpha,
            (const void *)(uintptr_t)q->b[i], q->type, q->k[i], (const void *)(uintptr_t)q->a[i],
            q->type, q->k[i], &beta, (void *)(uintptr_t)q->c[i], q->type, q->n[i],
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (s != CUBLAS_STATUS_SUCCESS)
            return tool_fail(q->cmd, "cublasGemmEx (group %d): %s", i, cb_status(q->cb, s));
    }
    return 0;
}

static int run_grouped(void *u) {
    dq_set *q = u;
    int n = q->count;
    const void *const *parr = (const void *const *)(uintptr_t)q->parr;
    cublasStatus_t s = q->cb->grouped(q->cb->h, q->ta, q->tb, q->n, q->m, q->k, q->alpha, parr,
                                      q->type, q->k, parr + n, q->type, q->k, q->beta,
                                      (void *const *)(parr + 2 * n), q->type, q->n, n, q->gs,
                                      CUBLAS_COMPUTE_32F);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(q->why, sizeof q->why, "cublasGemmGroupedBatchedEx: %s", cb_status(q->cb, s));
        q->grouped_failed = 1;
        return 1; /* reported by the caller as "not available" */
    }
    return 0;
}

/* Compare cuBLAS's C of the first non-empty group with nvfp4jit's (both approximate the same
 * exact product), to catch a wrong argument mapping. @return rel_l2, or -1. */
static double cross_check(const dq_set *q, const tool_data *d) {
    for (size_t i = 0; i < d->n; i++) {
        const nvfp4jit_group *g = &d->g[i];
        if (g->m == 0) continue;
        size_t cnt = (size_t)(g->m * g->n);
        uint16_t *x = malloc(cnt * 2), *y = malloc(cnt * 2);
        double res = -1;
        if (x && y && q->dev->api->cuMemcpyDtoH(x, q->c[0], cnt * 2) == CUDA_SUCCESS &&
            q->dev->api->cuMemcpyDtoH(y, (CUdeviceptr)g->c, cnt * 2) == CUDA_SUCCESS) {
            double num = 0, den = 0;
            for (size_t e = 0; e < cnt; e++) {
                double b = nvfp4jit_ext_ref_f16_to_double(y[e]), a;
                if (q->type == CUDA_R_16BF) {
                    uint32_t u = (uint32_t)x[e] << 16;
                    float f;
                    memcpy(&f, &u, 4);
                    a = f;
                } else {
                    a = nvfp4jit_ext_ref_f16_to_double(x[e]);
                }
                num += (a - b) * (a - b);
                den += b * b;
            }
            res = den > 0 ? sqrt(num / den) : sqrt(num);
        }
        free(x);
        free(y);
        return res;
    }
    return -1;
}
#endif /* NVFP4JIT_HAVE_CUBLAS */

/* ---- printing ------------------------------------------------------------------------------ */
static void print_row(FILE *csv, const char *set, const bench_row *r, double flops,
                      double best_cublas) {
    if (r->us < 0) {
        printf("  %-36s %10s  %s\n", r->impl, "n/a", r->note);
        if (csv) fprintf(csv, "%s,%s,,,,,\"%s\"\n", set, r->impl, r->note);
        return;
    }
    double tf = flops / (r->us * 1e-6) / 1e12;
    double sp = best_cublas > 0 ? best_cublas / r->us : 0;
    printf("  %-36s %10.2f %9.1f %7.1f%%", r->impl, r->us, tf, 100.0 * tf / PEAK_TFLOPS);
    if (sp > 0) printf(" %8.2fx", sp);
    else printf(" %9s", "-");
    if (r->note[0]) printf("  %s", r->note);
    printf("\n");
    if (csv) {
        fprintf(csv, "%s,%s,%.3f,%.2f,%.2f,", set, r->impl, r->us, tf, 100.0 * tf / PEAK_TFLOPS);
        if (sp > 0) fprintf(csv, "%.3f", sp);
        fprintf(csv, ",\"%s\"\n", r->note);
    }
}

int cmd_bench(int argc, char **argv) {
    static const tool_usage u = {
        "bench", "[--problems FILE --set NAME | --groups MxNxK,...] [--variant V,...] [--csv FILE] [--iters N] [--no-cublas]",
        "Needs a GPU. For each problem set: time the chosen variant (CUDA events around each\n"
        "launch, warm-up first, median of --iters; a 256 MiB buffer is overwritten between\n"
        "launches, outside the events, so each launch starts with a cold L2), and in the same\n"
        "run cuBLAS on the same products with the operands dequantised beforehand (on the\n"
        "CPU, exactly) to fp16 and to bf16: cublasGemmGroupedBatchedEx and a loop of\n"
        "cublasGemmEx, fp32 compute, the same flushing; groups with M = 0 are left out for\n"
        "cuBLAS. Prints us, TFLOP/s (2*sum(M*N*K)), % of the 749 TFLOP/s fp16 peak and the\n"
        "speed-up over the best cuBLAS; --csv writes the same rows. --variant takes a\n"
        "comma-separated list (\"auto\" = the library's choice) on the same data; the geomean\n"
        "line is given for each. All implementations of a set are timed in one loop, in rounds:\n"
        "each runs one untimed lead launch (its median is printed as \"first after another\")\n"
        "and 5 timed ones per round, so that the clocks' fall under the GPU's power cap during\n"
        "a long run reaches them alike. Each variant also gets a line of host microseconds\n"
        "per call (host clock around a burst of calls: same pointers, new pointers every call,\n"
        "replay of a captured CUDA graph) and the GPU time of a replay, timed in turn with\n"
        "eager calls."};
    tool_prob_opts po = {0};
    const char *csv_path = NULL, *variant_s = NULL;
    int iters = 30, seed = 1, no_cublas = 0, moe = 0;
    const tool_opt opts[] = {
        TOOL_PROB_OPTS(po),
        {"csv", OPT_STRING, &csv_path, "FILE", "also write the rows as CSV", 0, 0},
        {"iters", OPT_INT, &iters, "N", "timed launches per implementation (default 30)", 20,
         100000},
        {"variant", OPT_STRING, &variant_s, "V,...",
         "variants to time instead of the library's choice (auto), comma-separated", 0, 0},
        {"no-cublas", OPT_FLAG, &no_cublas, NULL, "leave the cuBLAS rows out", 0, 0},
        {"moe", OPT_FLAG, &moe, NULL,
         "also time the set as one MoE layer (nvfp4jit_moe_run; sm_90a; groups of one N, K), with its host us per call and the driver's floor (an empty kernel's launch)", 0, 0},
        {"seed", OPT_INT, &seed, "N", "random data seed (default 1)", 0, 2147483647},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    /* the variants to time: NULL entry = the library's choice */
    nvfp4jit_variant forced[BENCH_MAX_VARIANTS];
    const nvfp4jit_variant *force[BENCH_MAX_VARIANTS] = {NULL};
    int nvar = 1;
    if (variant_s) {
        nvar = 0;
        const char *p = variant_s;
        for (;;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char one[96];
            if (nvar == BENCH_MAX_VARIANTS)
                return tool_bad_usage(u.cmd, "--variant: at most %d variants",
                                      BENCH_MAX_VARIANTS);
            if (len == 0 || len >= sizeof one)
                return tool_bad_usage(u.cmd, "--variant '%s': empty or overlong entry",
                                      variant_s);
            memcpy(one, p, len);
            one[len] = '\0';
            if (!strcmp(one, "auto")) {
                force[nvar++] = NULL;
            } else if (nvfp4jit_variant_parse(one, &forced[nvar]) != NVFP4JIT_OK) {
                return tool_bad_usage(u.cmd, "--variant '%s': expected e.g. sm90a:128x128x64:s3 "
                                      "or auto", one);
            } else {
                force[nvar] = &forced[nvar];
                nvar++;
            }
            if (!e) break;
            p = e + 1;
        }
    }
    nvfp4jit_ext_set *sets = NULL;
    size_t nsets = 0;
    if ((r = tool_load_sets(u.cmd, &po, &sets, &nsets))) return r;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) {
        tool_sets_free(sets, nsets);
        return 1;
    }
    int rc = 0;
    FILE *csv = NULL;
    tool_dev dev;
    memset(&dev, 0, sizeof dev);
    int dev_open = 0;
    CUdeviceptr flush = 0;
#ifdef NVFP4JIT_HAVE_CUBLAS
    cublas_dl cb;
    memset(&cb, 0, sizeof cb);
    char cb_err[512] = "";
    int have_cb = 0;
#endif
    double log_ours[BENCH_MAX_VARIANTS] = {0}, log_best = 0;
    int n_geo = 0, n_geo_ours = 0;
    char vname[BENCH_MAX_VARIANTS][96];
    memset(vname, 0, sizeof vname);

    char why[512] = "";
    int cc = tool_device_cc(ctx, why, sizeof why);
    nvfp4jit_arch arch;
    if (!cc) {
        rc = tool_fail(u.cmd, "needs a CUDA device (%s)", why);
        goto done;
    }
    if (tool_arch_for_cc(cc, &arch)) {
        rc = tool_fail(u.cmd, "the CUDA device is sm_%d; kernels exist for sm_90a and sm_100a",
                       cc);
        goto done;
    }
    for (int vi = 0; vi < nvar; vi++)
        if (force[vi] && force[vi]->arch != arch) {
            rc = tool_bad_usage(u.cmd, "--variant %s does not run on this %s GPU",
                                tool_variant_str(force[vi]), tool_arch_name(arch));
            goto done;
        }
    if (tool_dev_open(u.cmd, ctx, &dev)) {
        rc = 1;
        goto done;
    }
    dev_open = 1;
    CUresult cr = dev.api->cuMemAlloc(&flush, FLUSH_BYTES);
    if (cr != CUDA_SUCCESS) {
        rc = tool_cu_fail(u.cmd, &dev, cr, "cuMemAlloc (256 MiB L2 flush buffer)");
        goto done;
    }
#ifdef NVFP4JIT_HAVE_CUBLAS
    if (no_cublas) {
        snprintf(cb_err, sizeof cb_err, "--no-cublas");
    } else if (cublas_open(&cb, cb_err, sizeof cb_err) == 0) {
        have_cb = 1;
        cublasStatus_t s = cb.set_stream(cb.h, (cudaStream_t)dev.stream);
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(cb_err, sizeof cb_err, "cublasSetStream: %s", cb_status(&cb, s));
            have_cb = 0;
        }
    }
    if (!have_cb && !no_cublas)
        fprintf(stderr, "nvfp4jit bench: warning: %s; cuBLAS rows left out\n", cb_err);
#else
    fprintf(stderr, "nvfp4jit bench: warning: built without cuBLAS; cuBLAS rows left out\n");
#endif
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            rc = tool_fail(u.cmd, "cannot write %s", csv_path);
            goto done;
        }
        fprintf(csv, "set,impl,us,tflops,pct_of_749,speedup_vs_best_cublas,note\n");
    }
    printf("%s, %d timed launches each after warm-up, L2 flushed between launches\n",
           tool_arch_name(arch), iters);
    for (size_t si = 0; si < nsets && !rc; si++) {
        const nvfp4jit_ext_set *set = &sets[si];
        double flops = tool_set_flops(set);
        printf("\n== %s: %zu groups, %.3f GFLOP\n", set->name, set->count, flops * 1e-9);
        nvfp4jit_group *g = tool_groups_from_set(set);
        if (!g) {
            rc = tool_fail(u.cmd, "out of host memory");
            break;
        }
        tool_data data;
        if (tool_data_create(u.cmd, &dev, set, (uint64_t)seed + si, &data)) {
            free(g);
            rc = 1;
            break;
        }
        bench_row rows[BENCH_MAX_VARIANTS + 4];
        int nrows = 0;
        nvfp4jit_variant first_v;
        int first_ok = 0;
        memset(rows, 0, sizeof rows);
        /* every variant's plan, kept until its set's timing is done */
        nvfp4jit_plan *plans[BENCH_MAX_VARIANTS] = {NULL};
        for (int vi = 0; vi < nvar && !rc; vi++) {
            nvfp4jit_status s = nvfp4jit_plan_create(ctx, arch, g, set->count, force[vi],
                                                     &plans[vi]);
            if (s != NVFP4JIT_OK) {
                char what[256];
                snprintf(what, sizeof what, "cannot plan set '%s'", set->name);
                rc = tool_lib_fail(u.cmd, ctx, s, what);
                break;
            }
            nvfp4jit_plan *plan = plans[vi];
            tool_print_plan(plan, 2);
            if (vi == 0) {
                first_v = *nvfp4jit_plan_variant(plan, NULL);
                first_ok = 1;
            }
            bench_row *ours = &rows[nrows++];
            snprintf(ours->impl, sizeof ours->impl, "nvfp4jit %s",
                     tool_variant_str(nvfp4jit_plan_variant(plan, NULL)));
            snprintf(vname[vi], sizeof vname[vi], "%s",
                     force[vi] ? tool_variant_str(force[vi]) : "auto");
            double ht[5] = {0};
            if (host_times(u.cmd, &dev, plan, &data, iters, flush, ht) == 0) {
                printf("  host us per call: %.1f same pointers, %.1f new pointers, %.1f graph "
                       "replay (GPU %.2f us per replay, %.2f eager, timed alternately)\n",
                       ht[0], ht[1], ht[2], ht[3], ht[4]);
                if (csv)
                    fprintf(csv, "%s,%s host us/call same|new pointers|graph replay,%.2f,,,,"
                                 "\"%.2f|%.2f|%.2f; graph replay GPU %.2f us, eager %.2f us "
                                 "(alternately)\"\n",
                            set->name, ours->impl, ht[1], ht[0], ht[1], ht[2], ht[3], ht[4]);
            } else {
                rc = 1;
            }
            dev.api->cuStreamSynchronize(dev.stream);
        }
        free(g);
        if (moe && !rc && arch == NVFP4JIT_ARCH_SM90A) {
            /* the grouped call's (first) variant as MoE, then the MoE heuristic's choice */
            double mus = 0;
            int same = first_ok && (first_v.strategy == NVFP4JIT_STRATEGY_ACT16 ||
                                    first_v.strategy == NVFP4JIT_STRATEGY_ACT16P);
            int mr = same ? bench_moe(u.cmd, &dev, &data, iters, flush, csv, set->name, &first_v,
                                      plans[0], &mus)
                          : 0;
            if (mr == 0)
                mr = bench_moe(u.cmd, &dev, &data, iters, flush, csv, set->name, NULL, plans[0],
                               &mus);
            if (mr == 1) rc = 1;
            else if (mr == 2) printf("  MoE path: n/a (the groups differ in N or K, or all are empty)\n");
        }
        /* Every implementation of the set (each variant, each cuBLAS call) is timed in one loop,
         * a short block of each in turn, each launch after its own L2 flush (tool_time_each): a
         * sustained run of a long set meets the GPU's power cap and its clocks fall over the run
         * (the same variant timed three times in a row: 342, 354, 412 us on prefill8-up, H100,
         * bench/RESULTS.md 2026-12-06), so implementations timed one after the other would be
         * ranked by their place in the order. Each block's lead launch (after another
         * implementation's) is left out of the median and shown in the note. */
        int nours = nrows;
        double best = -1;
        tool_work_fn fns[BENCH_MAX_VARIANTS + 4];
        void *users[BENCH_MAX_VARIANTS + 4];
        int row_of[BENCH_MAX_VARIANTS + 4];
        run_ctx rx[BENCH_MAX_VARIANTS];
        int nw = 0;
        for (int vi = 0; vi < nours && !rc; vi++) {
            rx[vi] = (run_ctx){u.cmd, plans[vi], &data, &dev};
            fns[nw] = run_nvfp4;
            users[nw] = &rx[vi];
            row_of[nw++] = vi;
        }
#ifdef NVFP4JIT_HAVE_CUBLAS
        dq_set q[2];
        memset(q, 0, sizeof q);
        int qrow[2][2] = {{-1, -1}, {-1, -1}}; /* [bf16][grouped, loop]: rows timed */
        for (int bf16 = 0; bf16 < 2 && have_cb && !rc; bf16++) {
            q[bf16].cmd = u.cmd;
            q[bf16].cb = &cb;
            q[bf16].dev = &dev;
            const char *tn = bf16 ? "bf16" : "fp16";
            int ig = nrows++, il = nrows++;
            bench_row *rg = &rows[ig], *rl = &rows[il];
            snprintf(rg->impl, sizeof rg->impl, "cuBLAS %s grouped", tn);
            snprintf(rl->impl, sizeof rl->impl, "cuBLAS %s loop of GemmEx", tn);
            if (dq_create(&q[bf16], &data, bf16)) {
                rc = 1;
                break;
            }
            if (q[bf16].count == 0) {
                rg->us = rl->us = -1;
                snprintf(rg->note, sizeof rg->note, "every group has M = 0");
                snprintf(rl->note, sizeof rl->note, "every group has M = 0");
                continue;
            }
            if (!cb.grouped) {
                rg->us = -1;
                snprintf(rg->note, sizeof rg->note, "cublasGemmGroupedBatchedEx not in this cuBLAS");
            } else if (run_grouped(&q[bf16])) { /* a trial call: it may refuse the problem */
                rg->us = -1;
                snprintf(rg->note, sizeof rg->note, "%s", q[bf16].why);
            } else {
                fns[nw] = run_grouped;
                users[nw] = &q[bf16];
                row_of[nw++] = ig;
                qrow[bf16][0] = ig;
            }
            fns[nw] = run_loop;
            users[nw] = &q[bf16];
            row_of[nw++] = il;
            qrow[bf16][1] = il;
        }
#endif
        if (!rc && nw > 0) {
            double med[BENCH_MAX_VARIANTS + 4], lead[BENCH_MAX_VARIANTS + 4];
            if (tool_time_each(u.cmd, &dev, nw, fns, users, 3, iters, flush, FLUSH_BYTES, med,
                               NULL, lead)) {
                rc = 1;
#ifdef NVFP4JIT_HAVE_CUBLAS
                for (int bf16 = 0; bf16 < 2; bf16++) /* run_grouped leaves the message to us */
                    if (q[bf16].grouped_failed) tool_fail(u.cmd, "%s", q[bf16].why);
#endif
            }
            for (int w = 0; w < nw && !rc; w++) {
                rows[row_of[w]].us = med[w];
                if (lead[w] > 0) /* its first launch after the previous implementation's */
                    snprintf(rows[row_of[w]].note, sizeof rows[row_of[w]].note,
                             "first after another: %.2f", lead[w]);
            }
        }
#ifdef NVFP4JIT_HAVE_CUBLAS
        for (int bf16 = 0; bf16 < 2; bf16++) {
            for (int j = 0; j < 2 && !rc; j++) {
                int ri = qrow[bf16][j];
                if (ri < 0) continue;
                /* each cuBLAS call's C against nvfp4jit's (the last variant's): the grouped call
                 * and the loop write the same buffers, so each runs once more, alone, first */
                if ((j == 0 ? run_grouped : run_loop)(&q[bf16])) {
                    rc = j == 0 ? tool_fail(u.cmd, "%s", q[bf16].why) : 1;
                    break;
                }
                CUresult sr = dev.api->cuStreamSynchronize(dev.stream);
                if (sr != CUDA_SUCCESS) {
                    rc = tool_cu_fail(u.cmd, &dev, sr, "cuStreamSynchronize (cuBLAS)");
                    break;
                }
                double e = cross_check(&q[bf16], &data);
                if (e < 0 || e > 2e-2) {
                    size_t at = strlen(rows[ri].note);
                    snprintf(rows[ri].note + at, sizeof rows[ri].note - at,
                             "%sWARNING: C differs from nvfp4jit's (rel_l2 %.3g)", at ? "; " : "",
                             e);
                }
                if (rows[ri].us > 0 && (best < 0 || rows[ri].us < best)) best = rows[ri].us;
            }
            if (q[bf16].dev) dq_free(&q[bf16]);
        }
#endif
        dev.api->cuStreamSynchronize(dev.stream);
        for (int vi = 0; vi < nvar; vi++) nvfp4jit_plan_destroy(plans[vi]);
        if (!rc) {
            printf("  %-36s %10s %9s %8s %9s\n", "implementation", "us", "TFLOP/s", "%peak",
                   "vs best");
            for (int i = 0; i < nrows; i++) print_row(csv, set->name, &rows[i], flops, best);
            int all = 1;
            for (int i = 0; i < nours; i++) all &= rows[i].us > 0;
            if (all) {
                for (int i = 0; i < nours; i++) log_ours[i] += log(rows[i].us);
                n_geo_ours++;
                if (best > 0) {
                    log_best += log(best);
                    n_geo++;
                }
            }
        }
        dev.api->cuStreamSynchronize(dev.stream);
        tool_data_free(&dev, &data);
        fflush(stdout);
    }
    if (!rc && n_geo_ours > 1) {
        double gb = n_geo == n_geo_ours ? exp(log_best / n_geo) : -1;
        printf("\n");
        for (int vi = 0; vi < nvar; vi++) {
            double go = exp(log_ours[vi] / n_geo_ours);
            printf("geomean over %d sets: nvfp4jit %s %.2f us", n_geo_ours, vname[vi], go);
            if (gb > 0) printf(", best cuBLAS %.2f us, %.2fx", gb, gb / go);
            printf("\n");
            if (csv) {
                fprintf(csv, "geomean,nvfp4jit %s,%.3f,,,", vname[vi], go);
                if (gb > 0) fprintf(csv, "%.3f,\"best cuBLAS %.3f us\"\n", gb / go, gb);
                else fprintf(csv, ",\n");
            }
        }
    }
done:
    if (csv && fclose(csv) != 0 && !rc) rc = tool_fail(u.cmd, "error writing %s", csv_path);
#ifdef NVFP4JIT_HAVE_CUBLAS
    if (have_cb || cb.h) cublas_close(&cb);
#endif
    if (flush) dev.api->cuMemFree(flush);
    if (dev_open) tool_dev_close(&dev);
    nvfp4jit_ctx_destroy(ctx);
    tool_sets_free(sets, nsets);
    return rc;
}
