/* tuner.c - autotuning (nvfp4jit_tune): rank with the cost model, compile the best-ranked
 * variants in parallel, time each through the plan API, check the winner against the CPU
 * reference, store it in the tuning database (tunedb.c).
 *
 * Layering: the tuner sits above the plan API (it calls the internal nj_plan_create/_run/
 * _destroy and nj_jit_variant, which keep the error message as internals do), and below
 * nothing: no other file of src/ calls into it. The database it writes is below the plan API (plan_create reads it), so the two
 * halves of tuning live in two files and the source has no circle (tools/depgraph.sh). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "driver.h"
#include "family.h"
#include "heuristic.h"
#include "reference.h"
#include "tunedb.h"
#include "context.h"
#include "dispatch.h"
#include "jit.h"
#include "variant.h"

/* ---- candidates and the compile pool ------------------------------------------------------ */
#define TUNE_ATOL 1e-3
#define TUNE_RTOL 1e-3
#define TUNE_ACC_EPS(k) (((double)(k) / 16 + 4) / 16777216.0) /* fp32 accumulation, as tests */
#define TUNE_CHECK_BUDGET 4e9                                  /* multiply-adds of the check */
#define TUNE_TIE 0.03
/* the L2 flush between timed launches where the driver does not give the L2's size: as
 * tools/cmd_bench.c FLUSH_BYTES */
#define TUNE_FLUSH_DEFAULT ((size_t)256 << 20)

typedef struct tune_cand {
    heur_cand h;
    nvfp4jit_status st; /* compile status */
    int compiled;
    double med, min;
    char err[512];
} tune_cand;

typedef struct tune_pool {
    pthread_mutex_t mu;
    tune_cand *c;
    size_t n, next, done;
    double deadline_ms; /* 0 = none */
    const nvfp4jit_ctx *parent; /* each worker compiles in a context like it */
    int progress;
} tune_pool;

static void progress_bar(int on, const char *phase, size_t done, size_t total) {
    if (!on || total == 0) return;
    int width = 30, fill = (int)(width * done / total);
    fprintf(stderr, "\rnvfp4jit tune: %-8s [", phase);
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %zu/%zu", done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

static void *compile_worker(void *u) {
    tune_pool *p = u;
    nvfp4jit_ctx *c = NULL;
    nvfp4jit_status cs = nj_ctx_create_like(p->parent, &c);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n) break;
        tune_cand *t = &p->c[i];
        if (i > 0 && p->deadline_ms > 0 && nj_now_ms() > p->deadline_ms) {
            t->st = NVFP4JIT_ERR_NOT_FOUND;
            snprintf(t->err, sizeof t->err, "time limit reached before compiling");
        } else if (cs != NVFP4JIT_OK) {
            t->st = cs;
            snprintf(t->err, sizeof t->err, "cannot create a context: %s",
                     nj_thread_create_msg());
        } else {
            nj_module *k = NULL;
            t->st = nj_jit_variant(c, &t->h.v, &k);
            if (t->st != NVFP4JIT_OK)
                snprintf(t->err, sizeof t->err, "%.500s", c->msg);
            else
                t->compiled = 1;
        }
        pthread_mutex_lock(&p->mu);
        p->done++;
        progress_bar(p->progress, "compile", p->done, p->n);
        pthread_mutex_unlock(&p->mu);
    }
    nj_ctx_destroy(c);
    return NULL;
}

/* A driver call in a function that cleans up at `out`: on failure s = the error, goto out. */
#define DRV_CHECK_GOTO(s, ctx, api, call, what)                                              \
    do {                                                                                     \
        CUresult drv_r_ = (api)->call;                                                       \
        if (drv_r_ != CUDA_SUCCESS) {                                                        \
            (s) = drv_fail((ctx), drv_r_, (what));                                           \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

/* Sort us[0..n) ascending (insertion sort: n is small). @return the median. */
static double sorted_median(double *us, int n) {
    for (int i = 1; i < n; i++) {
        double x = us[i];
        int j = i - 1;
        while (j >= 0 && us[j] > x) {
            us[j + 1] = us[j];
            j--;
        }
        us[j + 1] = x;
    }
    return n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
}

/* Launches per candidate per round in time_plans, after one untimed lead launch. */
#define TUNE_BLOCK 5

/* Copy rows [r0, r0+rows) of a packed operand and its scale block (r0 % 128 == 0). */
static nvfp4jit_status fetch_rows(nvfp4jit_ctx *ctx, const drv_api *api, uint64_t data,
                                  uint64_t sf, int64_t r0, int64_t rows, int64_t k, uint8_t **hd,
                                  uint8_t **hs) {
    size_t nd = (size_t)(rows * k / 2), ns = ref_sf_bytes(rows, k);
    *hd = malloc(nd);
    *hs = malloc(ns);
    NJ_RETURN_IF(ctx, !*hd || !*hs, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (check)");
    DRV_CHECK(ctx, api, cuMemcpyDtoH(*hd, (CUdeviceptr)(data + (uint64_t)(r0 * k / 2)), nd),
              "cuMemcpyDtoH (check)");
    DRV_CHECK(ctx, api, cuMemcpyDtoH(*hs, (CUdeviceptr)(sf + ref_sf_offset(r0, 0, k)), ns),
              "cuMemcpyDtoH (check)");
    return NVFP4JIT_OK;
}

/* ---- the reference check of the winner ---------------------------------------------------- */
/* Compare one block of C (rows [r0, r0+mr) x columns [c0, c0+nr) of group p, on the device
 * after a run of the winner) with the CPU reference. @return NVFP4JIT_OK with *pass set (and
 * the first bad element in why), or an error. */
static nvfp4jit_status check_block(nvfp4jit_ctx *ctx, const drv_api *api,
                                   const nvfp4jit_group *p, size_t gi, int64_t r0, int64_t mr,
                                   int64_t c0, int64_t nr, int threads, int *pass, char *why,
                                   size_t why_n) {
    uint8_t *ha = NULL, *hsa = NULL, *hb = NULL, *hsb = NULL;
    uint16_t *hc = NULL, *ref = NULL;
    double *abs_sum = NULL;
    nvfp4jit_status s = fetch_rows(ctx, api, p->a, p->sfa, r0, mr, p->k, &ha, &hsa);
    if (s == NVFP4JIT_OK) s = fetch_rows(ctx, api, p->b, p->sfb, c0, nr, p->k, &hb, &hsb);
    if (s == NVFP4JIT_OK) {
        hc = malloc((size_t)(mr * p->n) * 2);
        ref = malloc((size_t)(mr * nr) * 2);
        abs_sum = malloc((size_t)(mr * nr) * sizeof *abs_sum);
        if (!hc || !ref || !abs_sum)
            s = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (check)");
    }
    if (s == NVFP4JIT_OK) {
        CUresult r = api->cuMemcpyDtoH(hc, (CUdeviceptr)(p->c + (uint64_t)(r0 * p->n * 2)),
                                       (size_t)(mr * p->n) * 2);
        if (r != CUDA_SUCCESS) s = drv_fail(ctx, r, "cuMemcpyDtoH (check)");
    }
    if (s == NVFP4JIT_OK) {
        ref_gemm(ha, hsa, hb, hsb, mr, nr, p->k, ref, threads);
        ref_gemm_abs(ha, hsa, hb, hsb, mr, nr, p->k, abs_sum);
        for (int64_t y = 0; y < mr && *pass; y++) {
            for (int64_t x = 0; x < nr; x++) {
                double o = ref_f16_to_double(hc[y * p->n + c0 + x]);
                double rv = ref_f16_to_double(ref[y * nr + x]);
                double lim = TUNE_ATOL + TUNE_RTOL * fabs(rv) +
                             TUNE_ACC_EPS(p->k) * abs_sum[y * nr + x];
                int bad = isnan(o) || isnan(rv) ||
                          ((isinf(o) || isinf(rv)) ? o != rv : fabs(o - rv) > lim);
                if (bad) {
                    *pass = 0;
                    snprintf(why, why_n, "group %zu, C[%lld,%lld] = %.6g, reference %.6g", gi,
                             (long long)(r0 + y), (long long)(c0 + x), o, rv);
                    break;
                }
            }
        }
    }
    free(ha);
    free(hsa);
    free(hb);
    free(hsb);
    free(hc);
    free(ref);
    free(abs_sum);
    return s;
}

/* Compare C (on the device, after a run of the winner) with the reference on sampled blocks:
 * the first and the last 128-row block of A against the first and the last of B, per group,
 * while the budget of multiply-adds lasts. @return NVFP4JIT_OK with *pass set, or an error. */
static nvfp4jit_status check_result(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_group *g, size_t n, int *pass, char *why,
                                    size_t why_n) {
    *pass = 1;
    why[0] = '\0';
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
    double budget = TUNE_CHECK_BUDGET;
    nvfp4jit_status s = NVFP4JIT_OK;
    for (size_t i = 0; i < n && *pass && s == NVFP4JIT_OK; i++) {
        const nvfp4jit_group *p = &g[i];
        if (p->m == 0) continue;
        int64_t ablk[2] = {0, (p->m - 1) / 128 * 128}, bblk[2] = {0, (p->n - 1) / 128 * 128};
        int na = ablk[1] ? 2 : 1, nb = bblk[1] ? 2 : 1;
        for (int ia = 0; ia < na && *pass && s == NVFP4JIT_OK; ia++) {
            int64_t r0 = ablk[ia], mr = p->m - r0 < 128 ? p->m - r0 : 128;
            for (int ib = 0; ib < nb && *pass && s == NVFP4JIT_OK; ib++) {
                int64_t c0 = bblk[ib], nr = p->n - c0 < 128 ? p->n - c0 : 128;
                double macs = (double)mr * (double)nr * (double)p->k;
                if (macs > budget) continue; /* out of budget: a sample of the groups only */
                budget -= 2 * macs;
                s = check_block(ctx, api, p, i, r0, mr, c0, nr, threads, pass, why, why_n);
            }
        }
    }
    return s;
}

/* ---- the steps of nvfp4jit_tune ------------------------------------------------------------ */
/* One run of the tuner: its inputs, its settings (the options with defaults applied), the
 * candidates and the timing resources. */
typedef struct tuner {
    nvfp4jit_ctx *ctx;
    const drv_api *api;
    const family *fam;
    nvfp4jit_arch arch;
    const nvfp4jit_group *g;
    size_t n;
    nvfp4jit_tune_options o; /* as given (zeroed when NULL) */
    int cands, iters, warmup, progress;
    double deadline_ms; /* 0 = none */
    tune_cand *c;       /* the heuristic's best k, in its order */
    size_t k;
    CUstream st;
    CUevent *ev; /* nev = 2 * TUNE_BLOCK * timed candidates: a pair per timed run of a round */
    size_t nev;
    CUdeviceptr flush; /* the L2 flush buffer (0: none could be allocated) */
    size_t flush_bytes;
} tuner;

/* Check the arguments and options, apply the defaults, open the device (the driver, a current
 * context) and check that it runs arch. Allocates nothing. */
static nvfp4jit_status tuner_init(tuner *t, nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                  const nvfp4jit_group *groups, size_t n,
                                  const nvfp4jit_tune_options *opt) {
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->arch = arch;
    t->g = groups;
    t->n = n;
    t->fam = fam_get(arch);
    NJ_RETURN_IF(ctx, !t->fam, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)arch);
    NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, groups, n, 0));
    nvfp4jit_tune_options *o = &t->o;
    if (opt) *o = *opt;
    if (o->results_count) *o->results_count = 0;
    NJ_RETURN_IF(ctx, o->candidates < 0 || o->iters < 0 || o->warmup < 0 || o->jobs < 0 ||
                          !(o->time_limit_s >= 0) || (o->results_cap && !o->results),
                 NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_tune: negative or inconsistent option");
    t->cands = o->candidates ? o->candidates : 12;
    t->iters = o->iters ? (o->iters < 10 ? 10 : o->iters) : 20;
    t->warmup = o->warmup ? o->warmup : 3;
    t->progress = o->progress && isatty(2);
    t->deadline_ms = o->time_limit_s > 0 ? nj_now_ms() + o->time_limit_s * 1e3 : 0;

    nvfp4jit_status s;
    t->api = drv_get(ctx, &s);
    if (!t->api) return s;
    NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, groups, n, 1));
    int cc = ctx->device_cc;
    NJ_RETURN_IF(ctx, cc != t->fam->cc, /* "a" cubins run on exactly one cc (family.h) */
                 NVFP4JIT_ERR_ARCH_MISMATCH,
                 "cannot tune %s on a device of compute capability %d.%d", t->fam->arch_name,
                 cc / 10, cc % 10);
    return NVFP4JIT_OK;
}

/* sm_90a: after the heuristic's candidates, the act16sk (stream-K) twin of each of the first
 * TUNE_SK_TWINS act16 / act16p candidates of distinct tiles, where the twin is a candidate for
 * the set (heur_estimate) and its schedule splits tiles on the device's CTA slots (elsewhere it
 * is act16p's schedule, timed already or not worth it: src/fam_sm90.c). The heuristic
 * leaves act16sk out (it has no model of when stream-K wins: bench/RESULTS.md 2026-12-06, where
 * it beat act16 of the same tile by up to 13 % where it splits, and the model's error between
 * tiles is larger than that); timed here, it wins only where it measures more than 3 % faster
 * than every ranked candidate (the tie rule prefers the heuristic's order; twins come last). */
#define TUNE_SK_TWINS NVFP4JIT_TUNE_MAX_EXTRA
static nvfp4jit_status tuner_add_sk(tuner *t) {
    if (t->arch != NVFP4JIT_ARCH_SM90A || t->k == 0) return NVFP4JIT_OK;
    tune_cand *c = realloc(t->c, (t->k + TUNE_SK_TWINS) * sizeof *c);
    if (!c) return nj_fail(t->ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (tune)");
    t->c = c;
    const size_t k0 = t->k;
    const int sms = fam_model_sms(t->fam);
    int added = 0;
    for (size_t i = 0; i < k0 && added < TUNE_SK_TWINS; i++) {
        nvfp4jit_variant v = c[i].h.v;
        if (v.strategy != NVFP4JIT_STRATEGY_ACT16 && v.strategy != NVFP4JIT_STRATEGY_ACT16P)
            continue;
        v.strategy = NVFP4JIT_STRATEGY_ACT16SK;
        int dup = 0;
        for (size_t j = k0; j < t->k; j++) dup |= !memcmp(&c[j].h.v, &v, sizeof v);
        if (dup) continue; /* (act16 and act16p of one tile: one twin) */
        heur_cand h;
        if (heur_estimate(t->ctx, t->g, t->n, 0, &v, &h) != NVFP4JIT_OK) continue;
        /* only where act16sk splits tiles (elsewhere it runs act16p's schedule) */
        const int occ = h.ctas_per_sm > 0 ? h.ctas_per_sm : 1;
        if (!sm90_sk_splits(&v, t->g, t->n, (unsigned)sms * (unsigned)occ)) continue;
        memset(&c[t->k], 0, sizeof c[t->k]);
        c[t->k].h = h;
        c[t->k].med = c[t->k].min = -1;
        t->k++;
        added++;
    }
    return NVFP4JIT_OK;
}

/* Rank with the cost model (sms = 0: the device's SM count where it runs the arch, else the
 * family's default; as plan creation does) and keep the best t->cands as the candidates. */
static nvfp4jit_status tuner_rank(tuner *t) {
    size_t total = 0;
    NJ_FORWARD_IF_ERROR(heur_rank(t->ctx, t->arch, t->g, t->n, 0, NULL, 0, &total));
    size_t k = total < (size_t)t->cands ? total : (size_t)t->cands;
    tune_cand *c = calloc(k ? k : 1, sizeof *c);
    heur_cand *hc = calloc(k ? k : 1, sizeof *hc);
    if (!c || !hc) {
        free(c);
        free(hc);
        return nj_fail(t->ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (tune)");
    }
    nvfp4jit_status s = heur_rank(t->ctx, t->arch, t->g, t->n, 0, hc, k, &total);
    if (s != NVFP4JIT_OK) {
        free(c);
        free(hc);
        return s;
    }
    for (size_t i = 0; i < k; i++) {
        c[i].h = hc[i];
        c[i].med = c[i].min = -1;
    }
    free(hc);
    t->c = c;
    t->k = k;
    return tuner_add_sk(t);
}

/* Compile every candidate: in parallel, one context per thread, into the shared disk cache
 * (the caller's context then loads from it); without a disk cache one by one on the caller's
 * context. A candidate that fails keeps its status and message; none is fatal. */
static void tuner_compile(tuner *t) {
    nvfp4jit_ctx *ctx = t->ctx;
    if (ctx->disk_cache && ctx->cache_dir[0]) {
        tune_pool pool;
        memset(&pool, 0, sizeof pool);
        pthread_mutex_init(&pool.mu, NULL);
        pool.c = t->c;
        pool.n = t->k;
        pool.deadline_ms = t->deadline_ms;
        pool.parent = ctx;
        pool.progress = t->progress;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int jobs = t->o.jobs ? t->o.jobs : (ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu);
        if ((size_t)jobs > t->k) jobs = (int)t->k;
        pthread_t tid[64];
        int started = 0;
        if (jobs > 64) jobs = 64;
        for (int i = 0; i < jobs; i++)
            if (pthread_create(&tid[i], NULL, compile_worker, &pool) == 0) started++;
            else break;
        if (started == 0) compile_worker(&pool);
        for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
        pthread_mutex_destroy(&pool.mu);
        return;
    }
    for (size_t i = 0; i < t->k; i++) {
        tune_cand *c = &t->c[i];
        nj_module *kk = NULL;
        if (i > 0 && t->deadline_ms > 0 && nj_now_ms() > t->deadline_ms) {
            c->st = NVFP4JIT_ERR_NOT_FOUND;
            snprintf(c->err, sizeof c->err, "time limit reached before compiling");
        } else {
            c->st = nj_jit_variant(ctx, &c->h.v, &kk);
            if (c->st == NVFP4JIT_OK) c->compiled = 1;
            else snprintf(c->err, sizeof c->err, "%.500s", ctx->msg);
        }
        progress_bar(t->progress, "compile", i + 1, t->k);
    }
}

/* Time every compiled candidate through a plan of its own (median and minimum of t->iters
 * runs). A failed launch is fatal (the context may be unusable); so is having timed none. */
/* Time m plans together: warmup untimed launches of each, then rounds in which every plan in
 * turn runs a block: one untimed lead launch, then TUNE_BLOCK timed ones, each between its own
 * event pair (ev: 2 * TUNE_BLOCK * m, one round's, read after the round); iters is rounded up
 * to whole rounds, and the plans' order is reversed every other round. Every launch after
 * the L2 is flushed (flush_bytes of flush overwritten on the stream, outside the events; flush
 * 0: none), as `nvfp4jit bench` times. Cold L2: a grouped GEMM of an MoE layer finds its
 * weights in DRAM, and back-to-back launches of a set that fits in L2 would rank variants by a
 * warm L2 that real calls do not have. In turn: during a long run the GPU's clocks fall under
 * its power cap (342 -> 412 us for one variant timed three times in a row on prefill8-up, an
 * H100, bench/RESULTS.md 2026-12-06), so candidates timed one after the other would be ranked
 * by their place in the order; in turn, the fall reaches each alike. The lead launch: each
 * timed launch follows one of its own plan, as in `bench`. After the first round, no new round
 * starts past deadline_ms (0: none). med[j], mn[j]: plan j's median and fastest timed launch,
 * in us, over the rounds run. */
static nvfp4jit_status time_plans(tuner *t, nvfp4jit_plan **plans, size_t m, double *med,
                                  double *mn) {
    nvfp4jit_ctx *ctx = t->ctx;
    const drv_api *api = t->api;
    CUstream st = t->st;
    const int rounds = (t->iters + TUNE_BLOCK - 1) / TUNE_BLOCK, timed = rounds * TUNE_BLOCK;
    double *us = malloc((size_t)timed * m * sizeof *us);
    NJ_RETURN_IF(ctx, !us, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (timing)");
    nvfp4jit_status s = NVFP4JIT_OK;
    for (size_t j = 0; j < m; j++)
        for (int i = 0; i < t->warmup; i++) {
            s = nj_plan_run(plans[j], t->g, t->n, st);
            if (s != NVFP4JIT_OK) goto out;
        }
    int done = 0;
    for (int i = 0; i < rounds; i++) {
        if (i > 0 && t->deadline_ms > 0 && nj_now_ms() > t->deadline_ms) break;
        progress_bar(t->progress, "time", (size_t)i, (size_t)rounds);
        for (size_t k = 0; k < m; k++) {
            const size_t j = i % 2 ? m - 1 - k : k;
            for (int b = -1; b < TUNE_BLOCK; b++) {
                if (t->flush)
                    DRV_CHECK_GOTO(s, ctx, api,
                                   cuMemsetD8Async(t->flush, (unsigned char)(i + b), t->flush_bytes,
                                                   st),
                                   "cuMemsetD8Async (L2 flush)");
                if (b < 0) { /* the lead: untimed */
                    s = nj_plan_run(plans[j], t->g, t->n, st);
                    if (s != NVFP4JIT_OK) goto out;
                    continue;
                }
                CUevent *e = &t->ev[2 * (j * TUNE_BLOCK + (size_t)b)];
                DRV_CHECK_GOTO(s, ctx, api, cuEventRecord(e[0], st), "cuEventRecord");
                s = nj_plan_run(plans[j], t->g, t->n, st);
                if (s != NVFP4JIT_OK) goto out;
                DRV_CHECK_GOTO(s, ctx, api, cuEventRecord(e[1], st), "cuEventRecord");
            }
        }
        DRV_CHECK_GOTO(s, ctx, api, cuStreamSynchronize(st), "cuStreamSynchronize (a launch failed)");
        for (size_t j = 0; j < m; j++) {
            for (int b = 0; b < TUNE_BLOCK; b++) {
                float ms = 0;
                CUevent *e = &t->ev[2 * (j * TUNE_BLOCK + (size_t)b)];
                DRV_CHECK_GOTO(s, ctx, api, cuEventElapsedTime(&ms, e[0], e[1]),
                               "cuEventElapsedTime");
                us[j * (size_t)timed + (size_t)(done * TUNE_BLOCK + b)] = (double)ms * 1e3;
            }
        }
        done++;
    }
    progress_bar(t->progress, "time", (size_t)rounds, (size_t)rounds);
    for (size_t j = 0; j < m; j++) {
        med[j] = sorted_median(us + j * (size_t)timed, done * TUNE_BLOCK);
        mn[j] = us[j * (size_t)timed];
    }
out:
    free(us);
    return s;
}

static nvfp4jit_status tuner_time(tuner *t) {
    nvfp4jit_ctx *ctx = t->ctx;
    const drv_api *api = t->api;
    /* the compiled candidates, each with a plan, all alive while they are timed in turn */
    nvfp4jit_plan **plans = calloc(t->k ? t->k : 1, sizeof *plans);
    size_t *idx = calloc(t->k ? t->k : 1, sizeof *idx);
    double *med = calloc(t->k ? t->k : 1, sizeof *med), *mn = calloc(t->k ? t->k : 1, sizeof *mn);
    size_t m = 0;
    nvfp4jit_status s = NVFP4JIT_OK;
    if (!plans || !idx || !med || !mn) {
        s = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (tune)");
        goto out;
    }
    DRV_CHECK_GOTO(s, ctx, api, cuStreamCreate(&t->st, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    /* the L2 flush buffer: twice the device's L2 (TUNE_FLUSH_DEFAULT where the driver does not
     * say); without the memory, candidates are timed with a warm L2, with a warning */
    CUdevice dev;
    int l2 = 0;
    if (api->cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
        api->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) != CUDA_SUCCESS)
        l2 = 0;
    t->flush_bytes = l2 > 0 ? 2 * (size_t)l2 : TUNE_FLUSH_DEFAULT;
    if (api->cuMemAlloc(&t->flush, t->flush_bytes) != CUDA_SUCCESS) {
        t->flush = 0;
        nj_warn(ctx, "tune: no %zu MiB of device memory for the L2 flush; candidates are timed "
                     "with a warm L2 (their times are lower than bench's)",
                t->flush_bytes >> 20);
    }
    for (size_t i = 0; i < t->k; i++) {
        tune_cand *c = &t->c[i];
        if (!c->compiled) continue;
        if (i > 0 && t->deadline_ms > 0 && nj_now_ms() > t->deadline_ms) {
            c->st = NVFP4JIT_ERR_NOT_FOUND;
            snprintf(c->err, sizeof c->err, "time limit reached before timing");
            continue;
        }
        s = nj_plan_create(ctx, t->arch, t->g, t->n, &c->h.v, &plans[m]);
        if (s != NVFP4JIT_OK) {
            char name[96], failmsg[1024];
            nj_variant_format(&c->h.v, name, sizeof name);
            snprintf(failmsg, sizeof failmsg, "timing %s: %.900s", name, ctx->msg);
            s = nj_fail(ctx, s, "%s", failmsg);
            goto out;
        }
        idx[m++] = i;
    }
    if (m == 0) {
        /* every candidate failed to compile: report the first error */
        nvfp4jit_status fail = t->c[0].st != NVFP4JIT_OK ? t->c[0].st : NVFP4JIT_ERR_INTERNAL;
        s = nj_fail(ctx, fail, "no candidate could be compiled; the first: %s", t->c[0].err);
        goto out;
    }
    t->nev = 2 * (size_t)TUNE_BLOCK * m;
    t->ev = calloc(t->nev, sizeof *t->ev);
    if (!t->ev) {
        t->nev = 0;
        s = nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (events)");
        goto out;
    }
    for (size_t i = 0; i < t->nev; i++)
        DRV_CHECK_GOTO(s, ctx, api, cuEventCreate(&t->ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
    s = time_plans(t, plans, m, med, mn);
    if (s != NVFP4JIT_OK) {
        char failmsg[1024];
        snprintf(failmsg, sizeof failmsg, "timing the candidates: %.900s", ctx->msg);
        s = nj_fail(ctx, s, "%s", failmsg);
        goto out;
    }
    for (size_t j = 0; j < m; j++) {
        tune_cand *c = &t->c[idx[j]];
        c->med = med[j];
        c->min = mn[j];
        if (t->o.verbose) {
            char name[96];
            nj_variant_format(&c->h.v, name, sizeof name);
            fprintf(stderr, "nvfp4jit tune: #%zu %-28s est %9.2f us  median %9.2f us  min %9.2f us\n",
                    idx[j] + 1, name, c->h.est_us, c->med, c->min);
        }
    }
out:
    if (t->st) api->cuStreamSynchronize(t->st);
    for (size_t j = 0; j < m; j++) nj_plan_destroy(plans[j]);
    free(plans);
    free(idx);
    free(med);
    free(mn);
    return s;
}

/* Choose: the fastest median; ties within TUNE_TIE go to the better heuristic rank. The pick
 * runs once more and its output is checked against the CPU reference; a pick that fails is
 * dropped (with a warning) and the choice is made again. @return NVFP4JIT_OK with *win the
 * index of the winner, or an error (also when no timed candidate passes). */
static nvfp4jit_status tuner_choose(tuner *t, long *win) {
    nvfp4jit_ctx *ctx = t->ctx;
    const tune_cand *c = t->c;
    size_t k = t->k;
    *win = -1;
    int *dropped = calloc(k, sizeof *dropped);
    NJ_RETURN_IF(ctx, !dropped, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (tune)");
    nvfp4jit_status s = NVFP4JIT_OK;
    for (;;) {
        double fastest = -1;
        for (size_t i = 0; i < k; i++)
            if (c[i].med >= 0 && !dropped[i] && (fastest < 0 || c[i].med < fastest))
                fastest = c[i].med;
        if (fastest < 0) break;
        long pick = -1;
        for (size_t i = 0; i < k && pick < 0; i++)
            if (c[i].med >= 0 && !dropped[i] && c[i].med <= fastest * (1.0 + TUNE_TIE))
                pick = (long)i;
        nvfp4jit_plan *plan = NULL;
        s = nj_plan_create(ctx, t->arch, t->g, t->n, &c[pick].h.v, &plan);
        if (s == NVFP4JIT_OK) s = nj_plan_run(plan, t->g, t->n, t->st);
        if (s == NVFP4JIT_OK) {
            CUresult r = t->api->cuStreamSynchronize(t->st);
            if (r != CUDA_SUCCESS) s = drv_fail(ctx, r, "cuStreamSynchronize (check run)");
        }
        nj_plan_destroy(plan);
        int pass = 0;
        char why[256] = "";
        if (s == NVFP4JIT_OK) s = check_result(ctx, t->api, t->g, t->n, &pass, why, sizeof why);
        if (s != NVFP4JIT_OK) break;
        if (pass) {
            *win = pick;
            break;
        }
        char name[96];
        nj_variant_format(&c[pick].h.v, name, sizeof name);
        nj_warn(ctx, "tune: %s was fastest but fails the reference check (%s); dropped", name,
                why);
        dropped[pick] = 1;
    }
    free(dropped);
    if (s == NVFP4JIT_OK && *win < 0)
        s = nj_fail(ctx, NVFP4JIT_ERR_INTERNAL,
                    "no timed candidate passes the reference check (see the warnings)");
    return s;
}

/* Store the winner in the tuning database under this device's key. @return NVFP4JIT_OK, or
 * NVFP4JIT_ERR_TUNE_DB with the reason (the choice itself stands). */
static nvfp4jit_status tuner_store(tuner *t, long win) {
    nvfp4jit_ctx *ctx = t->ctx;
    char path[4200], sig[TDB_SIG_MAX], err[1024] = "", why[1024] = "";
    tdb_entry e;
    memset(&e, 0, sizeof e);
    NJ_RETURN_IF(ctx, tdb_path(ctx->cache_dir, path, sizeof path) != 0, NVFP4JIT_ERR_TUNE_DB,
                 "the context has no cache directory: the result is not stored");
    NJ_RETURN_IF(ctx, cache_check_dir(ctx->cache_dir, why, sizeof why) != CACHE_TRUSTED,
                 NVFP4JIT_ERR_TUNE_DB, "the result is not stored: %s", why);
    NJ_RETURN_IF(ctx, tdb_signature(t->arch, t->g, t->n, sig, sizeof sig) != 0 ||
                          tdb_device_key(sig, &e.key) != 0,
                 NVFP4JIT_ERR_TUNE_DB, "cannot form the database key");
    e.v = t->c[win].h.v;
    e.us = t->c[win].med;
    NJ_RETURN_IF(ctx, tdb_store(ctx, path, &e, err, sizeof err) != 0, NVFP4JIT_ERR_TUNE_DB,
                 "cannot store the result in %s: %s", path, err);
    return NVFP4JIT_OK;
}

/* Fill the caller's results table (every candidate, in the heuristic's order). A winner is
 * marked only when the tuning chose one (status OK, or a choice that could not be stored). */
static void tuner_report(const tuner *t, nvfp4jit_status fail, const nvfp4jit_variant *best) {
    const nvfp4jit_tune_options *o = &t->o;
    if (o->results_count) *o->results_count = t->k;
    for (size_t i = 0; i < t->k && i < o->results_cap; i++) {
        const tune_cand *c = &t->c[i];
        nvfp4jit_tune_result *res = &o->results[i];
        memset(res, 0, sizeof *res);
        res->variant = c->h.v;
        res->heuristic_rank = (int)i;
        res->est_us = c->h.est_us;
        res->median_us = c->med;
        res->min_us = c->min;
        res->status = c->st;
        res->winner = 0;
        if (fail == NVFP4JIT_OK || fail == NVFP4JIT_ERR_TUNE_DB)
            res->winner = c->med >= 0 && !memcmp(&c->h.v, best, sizeof *best);
    }
}

static void tuner_free(tuner *t) {
    if (t->ev) {
        for (size_t i = 0; i < t->nev; i++)
            if (t->ev[i]) t->api->cuEventDestroy(t->ev[i]);
        free(t->ev);
    }
    if (t->st) t->api->cuStreamDestroy(t->st);
    if (t->flush) t->api->cuMemFree(t->flush);
    free(t->c);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_tune(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                           const nvfp4jit_group *groups, size_t n,
                                           const nvfp4jit_tune_options *opt,
                                           nvfp4jit_variant *best, double *best_us) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !best, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_tune: best is NULL");
    tuner t;
    NJ_FORWARD_IF_ERROR(tuner_init(&t, ctx, arch, groups, n, opt));
    NJ_FORWARD_IF_ERROR(tuner_rank(&t));
    tuner_compile(&t);
    long win = -1;
    nvfp4jit_status s = tuner_time(&t);
    if (s == NVFP4JIT_OK) s = tuner_choose(&t, &win);
    if (s == NVFP4JIT_OK) {
        *best = t.c[win].h.v;
        if (best_us) *best_us = t.c[win].med;
        if (!t.o.no_store) s = tuner_store(&t, win);
    }
    tuner_report(&t, s, best);
    tuner_free(&t);
    return s;
}
