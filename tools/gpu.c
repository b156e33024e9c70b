/* gpu.c - device, test data, timing and dequantisation helpers of the tool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* ---- device ---------------------------------------------------------------------------------- */
int tool_device_cc(nvfp4jit_ctx *ctx, char *why, size_t why_n) {
    int cc = 0;
    nvfp4jit_status s = nvfp4jit_device_arch(ctx, &cc);
    if (s != NVFP4JIT_OK) {
        const char *d = nvfp4jit_last_error(ctx);
        snprintf(why, why_n, "%s%s%s", nvfp4jit_status_string(s), d && *d ? ": " : "",
                 d ? d : "");
        return 0;
    }
    return cc;
}

int tool_arch_for_cc(int cc, nvfp4jit_arch *arch) {
    return nvfp4jit_arch_for_cc(cc, arch) == NVFP4JIT_OK ? 0 : -1;
}

int tool_cu_fail(const char *cmd, const tool_dev *d, CUresult r, const char *what) {
    const char *name = "CUDA_ERROR_UNKNOWN", *str = "";
    if (d && d->api) {
        d->api->cuGetErrorName(r, &name);
        d->api->cuGetErrorString(r, &str);
    }
    return tool_fail(cmd, "%s: %s (%s)", what, name ? name : "?", str ? str : "");
}

/* The tool's driver table, filled once from the driver the library loaded.
 * @return it, or NULL with the missing entry point's name in *missing. */
static const tool_cuda *cuda_table(const char **missing) {
    static tool_cuda t;
    static int loaded;
    if (loaded) return &t;
    *missing = NULL;
#define PROC(field, sym)                                                                     \
    if (!*missing && !(*(void **)(&t.field) = nvfp4jit_ext_cuda_proc(sym))) *missing = sym;
    PROC(cuGetErrorName, "cuGetErrorName");
    PROC(cuGetErrorString, "cuGetErrorString");
    PROC(cuCtxSynchronize, "cuCtxSynchronize");
    PROC(cuMemAlloc, "cuMemAlloc_v2");
    PROC(cuMemFree, "cuMemFree_v2");
    PROC(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    PROC(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    PROC(cuMemsetD8Async, "cuMemsetD8Async");
    PROC(cuStreamCreate, "cuStreamCreate");
    PROC(cuStreamDestroy, "cuStreamDestroy_v2");
    PROC(cuStreamSynchronize, "cuStreamSynchronize");
    PROC(cuEventCreate, "cuEventCreate");
    PROC(cuEventDestroy, "cuEventDestroy_v2");
    PROC(cuEventRecord, "cuEventRecord");
    PROC(cuEventElapsedTime, "cuEventElapsedTime");
    PROC(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    PROC(cuStreamEndCapture, "cuStreamEndCapture");
    PROC(cuGraphInstantiate, "cuGraphInstantiateWithFlags");
    PROC(cuGraphLaunch, "cuGraphLaunch");
    PROC(cuGraphExecDestroy, "cuGraphExecDestroy");
    PROC(cuGraphDestroy, "cuGraphDestroy");
    PROC(cuModuleLoadData, "cuModuleLoadData");
    PROC(cuModuleUnload, "cuModuleUnload");
    PROC(cuModuleGetFunction, "cuModuleGetFunction");
    PROC(cuLaunchKernel, "cuLaunchKernel");
    PROC(cuGraphCreate, "cuGraphCreate");
    PROC(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2");
    PROC(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
#undef PROC
    if (*missing) return NULL;
    loaded = 1;
    return &t;
}

int tool_dev_open(const char *cmd, nvfp4jit_ctx *ctx, tool_dev *d) {
    memset(d, 0, sizeof *d);
    d->ctx = ctx;
    nvfp4jit_status st = nvfp4jit_ext_cuda_init(ctx);
    if (st != NVFP4JIT_OK) return tool_lib_fail(cmd, ctx, st, "cannot use the CUDA driver");
    const char *missing = NULL;
    d->api = cuda_table(&missing);
    if (!d->api)
        return tool_fail(cmd, "the CUDA driver has no entry point %s", missing ? missing : "?");
    /* NOTE: a blocking stream (flags 0) is ordered with the legacy default stream, on which
     * the synchronous cuMemcpy/cuMemset calls run; a pageable cuMemcpyHtoD may return
     * before its DMA lands, so a non-blocking stream could race with it. */
    CUresult r = d->api->cuStreamCreate(&d->stream, CU_STREAM_DEFAULT);
    if (r != CUDA_SUCCESS) return tool_cu_fail(cmd, d, r, "cuStreamCreate");
    char why[256];
    d->cc = tool_device_cc(ctx, why, sizeof why);
    return 0;
}

void tool_dev_close(tool_dev *d) {
    if (d->api && d->stream) {
        d->api->cuStreamSynchronize(d->stream);
        d->api->cuStreamDestroy(d->stream);
    }
    d->stream = NULL;
}

/* ---- decode tables --------------------------------------------------------------------------- */
static double e2m1_v[16];
static double e4m3_v[256];
static uint16_t f16_tab[256][16];  /* [scale byte][code] -> fp16 bits of code * scale */
static uint16_t bf16_tab[256][16]; /* the same in bf16 */
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static uint16_t bf16_from_float(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                     /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static void build_tables(void) {
    for (unsigned c = 0; c < 16; c++) e2m1_v[c] = nvfp4jit_ext_ref_e2m1(c);
    for (unsigned s = 0; s < 256; s++) {
        e4m3_v[s] = nvfp4jit_ext_ref_e4m3(s);
        for (unsigned c = 0; c < 16; c++) {
            double v = e2m1_v[c] * e4m3_v[s];
            f16_tab[s][c] = nvfp4jit_ext_ref_f16_from_double(v);
            bf16_tab[s][c] = bf16_from_float((float)v);
        }
    }
}

static void tables(void) { pthread_once(&tab_once, build_tables); }

/* ---- the scale cap of the random test data --------------------------------------------------
 * Why a cap at all: an e2m1 value (up to 6) times an e4m3 scale (up to 448) reaches 2688, and
 * one product of two such values (7.2e6) is already far outside fp16 (65504), so data that
 * spans the whole scale range on both operands has no representable answer. We keep the
 * whole e2m1 range (all 16 codes, uniformly) and scales from the subnormals (2^-9) up to a
 * cap 2^max_exp * 1.875 chosen per K from what the generator actually produces:
 *   t = E[(a*sa)^2] (measured on a sample drawn by the reference's fill_packed and
 *   fill_scales) is the rms of one product a*sa*b*sb; a K-long dot product then has rms
 *   sqrt(K)*t, and fp32 accumulation of it (rounding at every add, partial sums ~ sqrt(k)*t)
 *   has an error of rms about 2e-8 * K * t. The check needs |err| <= 1e-3 + 1e-3*|ref|
 *   also for outputs near 0, so we require K * t <= 2000: error rms <= 4e-5, i.e. 1e-3 is more than 20 sigma, and
 *   outputs stay below ~2000/sqrt(K) * 10 << 65504.
 * For K = 7168 this gives scales up to about 2^-2; for K = 64 up to about 2^2 (depending on
 * how fill_scales spreads exponents). The largest cap that meets the bound is used, so
 * small K get the widest scale range the fp16 output allows.
 * Checked on the CPU (128x512 outputs of random data, fp32 accumulation both sequential and
 * in 16-k chunks as an MMA does, rounded to fp16, against the reference's gemm and compare): no
 * element fails for K = 64..16384 at the chosen caps, and for K = 7168 not even at caps
 * 3 exponent steps higher, so the bound leaves a wide margin. */
#define SCALE_BUDGET 2000.0

static double sample_mean_sq(int max_exp, int64_t k) {
    const int64_t rows = 64;
    uint8_t *p = malloc((size_t)(rows * k / 2));
    uint8_t *sf = malloc(nvfp4jit_ext_ref_sf_bytes(rows, k));
    if (!p || !sf) {
        free(p);
        free(sf);
        return INFINITY;
    }
    nvfp4jit_ext_rng r;
    nvfp4jit_ext_rng_seed(&r, 0x5eed0000u + (uint64_t)(max_exp + 64));
    nvfp4jit_ext_ref_fill_packed(&r, p, rows, k);
    nvfp4jit_ext_ref_fill_scales(&r, sf, rows, k, max_exp);
    double sum = 0;
    for (int64_t row = 0; row < rows; row++) {
        for (int64_t j = 0; j < k / 16; j++) {
            double s = e4m3_v[sf[nvfp4jit_ext_ref_sf_offset(row, j, k)]];
            const uint8_t *q = p + row * (k / 2) + j * 8;
            for (int b = 0; b < 8; b++) {
                double lo = e2m1_v[q[b] & 15] * s, hi = e2m1_v[q[b] >> 4] * s;
                sum += lo * lo + hi * hi;
            }
        }
    }
    free(p);
    free(sf);
    return sum / (double)(rows * k);
}

int tool_scale_max_exp(int64_t k) {
    static struct { int64_t k; int e; } memo[64];
    static int nmemo;
    tables();
    if (k < 16) k = 16;
    k = (k + 15) / 16 * 16;
    for (int i = 0; i < nmemo; i++)
        if (memo[i].k == k) return memo[i].e;
    int best = -9;
    for (int e = 8; e >= -9; e--) {
        double t = sample_mean_sq(e, k);
        if (t * (double)k <= SCALE_BUDGET) {
            best = e;
            break;
        }
    }
    if (nmemo < 64) {
        memo[nmemo].k = k;
        memo[nmemo].e = best;
        nmemo++;
    }
    return best;
}

/* ---- data ------------------------------------------------------------------------------------ */
void tool_data_free(tool_dev *d, tool_data *t) {
    if (!t) return;
    for (size_t i = 0; t->g && i < t->n; i++) {
        uint64_t p[5] = {t->g[i].a, t->g[i].b, t->g[i].sfa, t->g[i].sfb, t->g[i].c};
        for (int j = 0; j < 5; j++)
            if (p[j] && d && d->api) d->api->cuMemFree((CUdeviceptr)p[j]);
        if (t->a) free(t->a[i]);
        if (t->b) free(t->b[i]);
        if (t->sfa) free(t->sfa[i]);
        if (t->sfb) free(t->sfb[i]);
    }
    free(t->g);
    free(t->a);
    free(t->b);
    free(t->sfa);
    free(t->sfb);
    free(t->max_exp);
    memset(t, 0, sizeof *t);
}

static int upload(const char *cmd, tool_dev *d, const void *host, size_t n, uint64_t *dev) {
    CUdeviceptr p = 0;
    CUresult r = d->api->cuMemAlloc(&p, n ? n : 16);
    if (r != CUDA_SUCCESS) return tool_cu_fail(cmd, d, r, "cuMemAlloc");
    *dev = (uint64_t)p;
    if (host && n) {
        r = d->api->cuMemcpyHtoD(p, host, n);
        if (r != CUDA_SUCCESS) return tool_cu_fail(cmd, d, r, "cuMemcpyHtoD");
    }
    return 0;
}

int tool_data_create(const char *cmd, tool_dev *d, const nvfp4jit_ext_set *s, uint64_t seed,
                     tool_data *t) {
    memset(t, 0, sizeof *t);
    tables();
    size_t n = s->count;
    t->n = n;
    t->g = tool_groups_from_set(s);
    t->a = calloc(n, sizeof *t->a);
    t->b = calloc(n, sizeof *t->b);
    t->sfa = calloc(n, sizeof *t->sfa);
    t->sfb = calloc(n, sizeof *t->sfb);
    t->max_exp = calloc(n, sizeof *t->max_exp);
    if (!t->g || !t->a || !t->b || !t->sfa || !t->sfb || !t->max_exp) {
        tool_data_free(d, t);
        return tool_fail(cmd, "out of host memory");
    }
    for (size_t i = 0; i < n; i++) {
        nvfp4jit_group *g = &t->g[i];
        if (g->m == 0) continue; /* pointers of an empty group are not read */
        size_t na = (size_t)(g->m * g->k / 2), nb = (size_t)(g->n * g->k / 2);
        size_t nsa = nvfp4jit_ext_ref_sf_bytes(g->m, g->k);
        size_t nsb = nvfp4jit_ext_ref_sf_bytes(g->n, g->k);
        t->a[i] = malloc(na);
        t->b[i] = malloc(nb);
        t->sfa[i] = malloc(nsa);
        t->sfb[i] = malloc(nsb);
        if (!t->a[i] || !t->b[i] || !t->sfa[i] || !t->sfb[i]) {
            tool_data_free(d, t);
            return tool_fail(cmd, "out of host memory (group %zu)", i);
        }
        int e = tool_scale_max_exp(g->k);
        t->max_exp[i] = e;
        nvfp4jit_ext_rng r;
        nvfp4jit_ext_rng_seed(&r, seed * 0x9E3779B97F4A7C15ull + i);
        nvfp4jit_ext_ref_fill_packed(&r, t->a[i], g->m, g->k);
        nvfp4jit_ext_ref_fill_scales(&r, t->sfa[i], g->m, g->k, e);
        nvfp4jit_ext_ref_fill_packed(&r, t->b[i], g->n, g->k);
        nvfp4jit_ext_ref_fill_scales(&r, t->sfb[i], g->n, g->k, e);
        if (upload(cmd, d, t->a[i], na, &g->a) || upload(cmd, d, t->b[i], nb, &g->b) ||
            upload(cmd, d, t->sfa[i], nsa, &g->sfa) || upload(cmd, d, t->sfb[i], nsb, &g->sfb) ||
            upload(cmd, d, NULL, (size_t)(g->m * g->n * 2), &g->c)) {
            tool_data_free(d, t);
            return 1;
        }
    }
    CUresult r = d->api->cuCtxSynchronize(); /* every upload has landed */
    if (r != CUDA_SUCCESS) {
        tool_data_free(d, t);
        return tool_cu_fail(cmd, d, r, "cuCtxSynchronize (after the uploads)");
    }
    return 0;
}

/* ---- timing ---------------------------------------------------------------------------------- */
int tool_time_each(const char *cmd, tool_dev *d, int n, const tool_work_fn *fn, void *const *user,
                   int warmup, int iters, CUdeviceptr flush, size_t flush_bytes, double *median_us,
                   double *min_us, double *lead_us) {
    const tool_cuda *api = d->api;
    int rc = 0;
    /* n > 1: rounds of one block per work, each block a lead launch and TOOL_BLOCK timed ones;
     * the works' order reversed every other round (a steady drift then reaches each alike);
     * one round's events, read after the round */
    const int block = n > 1 ? TOOL_BLOCK : iters, lead = n > 1;
    const int rounds = (iters + block - 1) / block, per = lead + block, timed = rounds * block;
    size_t nev = (size_t)n * (size_t)per * 2;
    CUevent *ev = calloc(nev, sizeof *ev);
    double *us = calloc((size_t)n * (size_t)timed, sizeof *us);
    double *lu = calloc((size_t)n * (size_t)rounds, sizeof *lu);
    if (!ev || !us || !lu) {
        free(ev);
        free(us);
        free(lu);
        return tool_fail(cmd, "out of host memory");
    }
    CUresult r;
    for (size_t i = 0; i < nev; i++) {
        if ((r = api->cuEventCreate(&ev[i], CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
            rc = tool_cu_fail(cmd, d, r, "cuEventCreate");
            goto out;
        }
    }
    for (int i = 0; i < warmup; i++) {
        for (int f = 0; f < n; f++) {
            if (flush && (r = api->cuMemsetD8Async(flush, (unsigned char)i, flush_bytes, d->stream))) {
                rc = tool_cu_fail(cmd, d, r, "cuMemsetD8Async (L2 flush)");
                goto out;
            }
            if ((rc = fn[f](user[f]))) goto out;
        }
    }
    for (int i = 0; i < rounds; i++) {
        for (int k = 0; k < n; k++) {
            const int f = i % 2 ? n - 1 - k : k;
            for (int j = 0; j < per; j++) {
                CUevent *e = &ev[((size_t)f * (size_t)per + (size_t)j) * 2];
                /* the flush sits outside the events: it is not part of the measured time */
                if (flush && (r = api->cuMemsetD8Async(flush, (unsigned char)(i + j + 1),
                                                       flush_bytes, d->stream))) {
                    rc = tool_cu_fail(cmd, d, r, "cuMemsetD8Async (L2 flush)");
                    goto out;
                }
                if ((r = api->cuEventRecord(e[0], d->stream))) {
                    rc = tool_cu_fail(cmd, d, r, "cuEventRecord");
                    goto out;
                }
                if ((rc = fn[f](user[f]))) goto out;
                if ((r = api->cuEventRecord(e[1], d->stream))) {
                    rc = tool_cu_fail(cmd, d, r, "cuEventRecord");
                    goto out;
                }
            }
        }
        if ((r = api->cuStreamSynchronize(d->stream))) {
            rc = tool_cu_fail(cmd, d, r, "cuStreamSynchronize (a launch failed)");
            goto out;
        }
        for (int f = 0; f < n; f++) {
            for (int j = 0; j < per; j++) {
                float ms = 0;
                CUevent *e = &ev[((size_t)f * (size_t)per + (size_t)j) * 2];
                if ((r = api->cuEventElapsedTime(&ms, e[0], e[1]))) {
                    rc = tool_cu_fail(cmd, d, r, "cuEventElapsedTime");
                    goto out;
                }
                if (j < lead) lu[(size_t)f * (size_t)rounds + (size_t)i] = (double)ms * 1e3;
                else us[(size_t)f * (size_t)timed + (size_t)(i * block + j - lead)] = (double)ms * 1e3;
            }
        }
    }
    for (int f = 0; f < n; f++) {
        double *v = us + (size_t)f * (size_t)timed;
        median_us[f] = tool_median(v, timed); /* sorts */
        if (min_us) min_us[f] = v[0];
        if (lead_us) lead_us[f] = lead ? tool_median(lu + (size_t)f * (size_t)rounds, rounds) : -1;
    }
out:
    if (rc) api->cuStreamSynchronize(d->stream);
    for (size_t i = 0; i < nev; i++)
        if (ev[i]) api->cuEventDestroy(ev[i]);
    free(ev);
    free(us);
    free(lu);
    return rc;
}

int tool_time(const char *cmd, tool_dev *d, tool_work_fn fn, void *user, int warmup, int iters,
              CUdeviceptr flush, size_t flush_bytes, double *median_us, double *min_us) {
    return tool_time_each(cmd, d, 1, &fn, &user, warmup, iters, flush, flush_bytes, median_us,
                          min_us, NULL);
}

/* ---- dequantisation -------------------------------------------------------------------------- */
typedef struct dq_job {
    const uint8_t *packed, *sf;
    int64_t r0, r1, k;
    int bf16;
    uint16_t *out;
} dq_job;

static void *dq_run(void *u) {
    const dq_job *j = u;
    const int64_t kb = j->k / 16;
    for (int64_t r = j->r0; r < j->r1; r++) {
        const uint8_t *row = j->packed + r * (j->k / 2);
        uint16_t *o = j->out + r * j->k;
        for (int64_t b = 0; b < kb; b++) {
            uint8_t s = j->sf[nvfp4jit_ext_ref_sf_offset(r, b, j->k)];
            const uint16_t *tab = j->bf16 ? bf16_tab[s] : f16_tab[s];
            const uint8_t *q = row + b * 8;
            uint16_t *ob = o + b * 16;
            for (int i = 0; i < 8; i++) {
                ob[2 * i] = tab[q[i] & 15]; /* element 2j: low nibble */
                ob[2 * i + 1] = tab[q[i] >> 4];
            }
        }
    }
    return NULL;
}

void tool_dequant(const uint8_t *packed, const uint8_t *sf, int64_t rows, int64_t k, int bf16,
                  uint16_t *out, int threads) {
    tables();
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    if ((int64_t)threads > rows) threads = rows > 0 ? (int)rows : 1;
    dq_job jobs[64];
    pthread_t tid[64];
    int started[64] = {0};
    for (int t = 0; t < threads; t++) {
        jobs[t] = (dq_job){packed, sf, rows * t / threads, rows * (t + 1) / threads, k, bf16, out};
        if (t > 0 && pthread_create(&tid[t], NULL, dq_run, &jobs[t]) == 0) started[t] = 1;
    }
    dq_run(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else dq_run(&jobs[t]); /* could not start a thread: do its rows here */
    }
}
