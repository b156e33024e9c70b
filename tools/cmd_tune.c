/* cmd_tune.c - `nvfp4jit tune` (autotune problem sets on the GPU, nvfp4jit_tune) and
 * `nvfp4jit warm` (compile the variant space, or each set's heuristic choice, into the disk
 * cache with several threads, one context each). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "choose.h"
#include "gpu.h"

static void bar(int on, const char *what, size_t done, size_t total) {
    if (!on || total == 0) return;
    int width = 30, fill = (int)(width * done / total);
    fprintf(stderr, "\rnvfp4jit %s [", what);
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %zu/%zu", done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* ---- warm ---------------------------------------------------------------------------------- */
typedef struct warm_job {
    nvfp4jit_variant v;
    nvfp4jit_status st;
    int from_cache;
    int cache_state; /* nvfp4jit_cache_state of the compiled kernel */
    int skipped;     /* not compiled: the disk cache turned out unusable first */
    char err[1024];  /* a failure's detail, or the failed store's warning */
} warm_job;

typedef struct warm_pool {
    pthread_mutex_t mu;
    warm_job *jobs;
    size_t n, next, done;
    int progress, verbose;
    int stop; /* a compile found no usable disk cache: nothing more can be stored */
} warm_pool;

static void *warm_worker(void *u) {
    warm_pool *p = u;
    nvfp4jit_ctx_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = tool_g.cache_dir;
    o.verbose = 1;
    nvfp4jit_ctx *ctx = NULL;
    nvfp4jit_status cs = nvfp4jit_ctx_create(&o, &ctx);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n) break;
        warm_job *j = &p->jobs[i];
        if (stop) {
            j->skipped = 1;
        } else if (cs != NVFP4JIT_OK) {
            j->st = cs;
            snprintf(j->err, sizeof j->err, "cannot create a context: %s",
                     nvfp4jit_last_error(NULL));
        } else {
            nvfp4jit_kernel *k = NULL;
            j->st = nvfp4jit_compile(ctx, &j->v, &k);
            if (j->st != NVFP4JIT_OK) {
                snprintf(j->err, sizeof j->err, "%.1000s", nvfp4jit_last_error(ctx));
            } else {
                nvfp4jit_resources r;
                memset(&r, 0, sizeof r);
                nvfp4jit_kernel_resources(k, &r);
                j->from_cache = r.from_cache;
                j->cache_state = r.cache_state;
                if (r.cache_state == NVFP4JIT_CACHE_STORE_FAILED)
                    snprintf(j->err, sizeof j->err, "%.1000s", nvfp4jit_last_warning(ctx));
            }
        }
        pthread_mutex_lock(&p->mu);
        /* no disk cache, or another user's: true of every variant, so stop compiling */
        if (!j->skipped && j->st == NVFP4JIT_OK && (j->cache_state == NVFP4JIT_CACHE_NONE ||
                                                    j->cache_state == NVFP4JIT_CACHE_READ_ONLY))
            p->stop = 1;
        p->done++;
        if (p->verbose && !j->skipped) {
            char name[96];
            nvfp4jit_variant_format(&j->v, name, sizeof name);
            if (p->progress) fputc('\r', stderr);
            fprintf(stderr, "%-28s %s\n", name,
                    j->st != NVFP4JIT_OK                          ? "FAILED"
                    : j->cache_state != NVFP4JIT_CACHE_STORED     ? "FAILED (not stored)"
                    : j->from_cache                               ? "cached"
                                                                  : "compiled");
        }
        bar(p->progress, "warm", p->done, p->n);
        pthread_mutex_unlock(&p->mu);
    }
    nvfp4jit_ctx_destroy(ctx);
    return NULL;
}

static int add_job(warm_job **jobs, size_t *n, size_t *cap, const nvfp4jit_variant *v) {
    for (size_t i = 0; i < *n; i++)
        if (!memcmp(&(*jobs)[i].v, v, sizeof *v)) return 0;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        warm_job *p = realloc(*jobs, nc * sizeof *p);
        if (!p) return -1;
        *jobs = p;
        *cap = nc;
    }
    memset(&(*jobs)[*n], 0, sizeof **jobs);
    (*jobs)[(*n)++].v = *v;
    return 0;
}

int cmd_warm(int argc, char **argv) {
    static const tool_usage u = {
        "warm",
        "[--arch ARCH[,ARCH]] [--problems FILE [--set NAME] | --groups MxNxK,...] [--jobs N]"
        " [--verbose]",
        "Compile into the disk cache, with --jobs threads (one context each, sharing the cache\n"
        "directory): the whole valid variant space of each arch, or, with --problems/--set/\n"
        "--groups, the heuristic's choice for each set and arch. Variants already in the\n"
        "cache are only verified. Prints how many were compiled, found cached or failed, and\n"
        "the rate in variants per second. Default arch: sm_90a and sm_100a. A progress bar is\n"
        "drawn when stderr is a terminal. A variant that does not reach the disk cache counts\n"
        "as failed: no cache directory (exit 1 at once), one that is not used (writable by\n"
        "other users) or is another user's (warm stops at the first such variant), or a\n"
        "store that failed. Exit 1 when any variant fails."};
    tool_prob_opts po = {0};
    const char *arch_s = NULL;
    int jobs = 0, verbose = 0;
    const tool_opt opts[] = {
        {"arch", OPT_STRING, &arch_s, "ARCH", "sm_90a, sm_100a or both, comma-separated", 0, 0},
        TOOL_PROB_OPTS(po),
        {"jobs", OPT_INT, &jobs, "N", "compile threads (default: online CPUs)", 1, 256},
        {"verbose", OPT_FLAG, &verbose, NULL, "one line per variant on stderr", 0, 0},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    if (tool_g.no_disk_cache)
        return tool_bad_usage(u.cmd, "warm fills the disk cache: --no-disk-cache leaves "
                                     "nothing to do");
    nvfp4jit_arch archs[4] = {NVFP4JIT_ARCH_SM90A, NVFP4JIT_ARCH_SM100A};
    int narch = 2;
    if (arch_s && (narch = tool_parse_arch_list(u.cmd, arch_s, archs, 4)) < 0) return 2;
    int use_sets = po.problems || po.set || po.groups;
    nvfp4jit_ext_set *sets = NULL;
    size_t nsets = 0;
    if (use_sets && (r = tool_load_sets(u.cmd, &po, &sets, &nsets))) return r;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) {
        tool_sets_free(sets, nsets);
        return 1;
    }
    /* why the directory is not used or read-only, if it is (the context's only warning) */
    char cache_why[1024];
    snprintf(cache_why, sizeof cache_why, "%.1000s", nvfp4jit_last_warning(ctx));
    int rc = 0;
    warm_job *list = NULL;
    if (!*nvfp4jit_cache_dir(ctx)) {
        rc = tool_fail(u.cmd, "no disk cache directory (NVFP4JIT_CACHE_DIR, XDG_CACHE_HOME and "
                              "HOME are unset): give --cache-dir DIR or set one of them");
        goto done;
    }
    size_t n = 0, cap = 0;
    size_t per_arch[4] = {0};
    for (int ai = 0; ai < narch && !rc; ai++) {
        size_t before = n;
        if (!use_sets) {
            size_t cnt = 0;
            nvfp4jit_status s = nvfp4jit_variant_space(archs[ai], NULL, 0, &cnt);
            nvfp4jit_variant *v = s == NVFP4JIT_OK ? calloc(cnt ? cnt : 1, sizeof *v) : NULL;
            if (s == NVFP4JIT_OK && !v) {
                rc = tool_fail(u.cmd, "out of memory");
                break;
            }
            if (s == NVFP4JIT_OK) s = nvfp4jit_variant_space(archs[ai], v, cnt, &cnt);
            if (s != NVFP4JIT_OK) {
                free(v);
                rc = tool_lib_fail(u.cmd, NULL, s, "nvfp4jit_variant_space");
                break;
            }
            for (size_t i = 0; i < cnt && !rc; i++)
                if (add_job(&list, &n, &cap, &v[i])) rc = tool_fail(u.cmd, "out of memory");
            free(v);
        } else {
            for (size_t si = 0; si < nsets && !rc; si++) {
                nvfp4jit_group *g = tool_groups_from_set(&sets[si]);
                if (!g) {
                    rc = tool_fail(u.cmd, "out of memory");
                    break;
                }
                nvfp4jit_variant v;
                nvfp4jit_choice ch;
                nvfp4jit_status s =
                    nvfp4jit_ext_choose(ctx, archs[ai], g, sets[si].count, &v, &ch);
                free(g);
                if (s != NVFP4JIT_OK) {
                    char what[256];
                    snprintf(what, sizeof what, "cannot choose a variant for set '%s' on %s",
                             sets[si].name, tool_arch_name(archs[ai]));
                    rc = tool_lib_fail(u.cmd, ctx, s, what);
                    break;
                }
                if (add_job(&list, &n, &cap, &v)) rc = tool_fail(u.cmd, "out of memory");
            }
        }
        per_arch[ai] = n - before;
    }
    if (rc) goto done;
    if (jobs == 0) jobs = tool_nthreads();
    if ((size_t)jobs > n) jobs = n ? (int)n : 1;
    warm_pool pool;
    memset(&pool, 0, sizeof pool);
    pthread_mutex_init(&pool.mu, NULL);
    pool.jobs = list;
    pool.n = n;
    pool.progress = isatty(2);
    pool.verbose = verbose;
    double t0 = tool_now_ms();
    pthread_t *tid = calloc((size_t)jobs, sizeof *tid);
    int started = 0;
    for (int t = 0; tid && t < jobs; t++) {
        if (pthread_create(&tid[t], NULL, warm_worker, &pool) != 0) break;
        started++;
    }
    if (started == 0) warm_worker(&pool);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
    pthread_mutex_destroy(&pool.mu);
    double secs = (tool_now_ms() - t0) * 1e-3;
    size_t compiled = 0, cached = 0, failed = 0, skipped = 0;
    int no_cache = 0, read_only = 0;
    for (size_t i = 0; i < n; i++) {
        if (list[i].skipped) {
            failed++;
            skipped++;
        } else if (list[i].st != NVFP4JIT_OK) {
            failed++;
            fprintf(stderr, "nvfp4jit warm: %s: %s: %s\n", tool_variant_str(&list[i].v),
                    nvfp4jit_status_string(list[i].st), list[i].err);
        } else if (list[i].cache_state == NVFP4JIT_CACHE_STORE_FAILED) {
            failed++;
            fprintf(stderr, "nvfp4jit warm: %s: compiled, but not stored in the disk cache: %s\n",
                    tool_variant_str(&list[i].v), list[i].err);
        } else if (list[i].cache_state != NVFP4JIT_CACHE_STORED) {
            failed++;
            no_cache |= list[i].cache_state == NVFP4JIT_CACHE_NONE;
            read_only |= list[i].cache_state == NVFP4JIT_CACHE_READ_ONLY;
        } else if (list[i].from_cache) {
            cached++;
        } else {
            compiled++;
        }
    }
    if (no_cache || read_only) {
        char dflt[1200];
        snprintf(dflt, sizeof dflt, "%.1000s %s", nvfp4jit_cache_dir(ctx),
                 no_cache ? "is not used" : "is another user's (read-only)");
        fflush(stdout);
        fprintf(stderr, "nvfp4jit warm: nothing can be stored in the disk cache: %s", *cache_why
                ? cache_why : dflt);
        if (skipped) fprintf(stderr, " (%zu variant%s not compiled)", skipped,
                             skipped == 1 ? "" : "s");
        fputc('\n', stderr);
    }
    printf("warm: %zu variant%s (", n, n == 1 ? "" : "s");
    for (int ai = 0; ai < narch; ai++)
        printf("%s%s: %zu", ai ? ", " : "", tool_arch_name(archs[ai]), per_arch[ai]);
    printf("%s) into %s\n", use_sets ? "; the heuristic's choices" : "; the whole valid space",
           nvfp4jit_cache_dir(ctx));
    printf("warm: %zu compiled, %zu already cached, %zu failed in %.2f s with %d job%s: "
           "%.1f variants/s\n",
           compiled, cached, failed, secs, started ? started : 1, started == 1 ? "" : "s",
           secs > 0 ? (double)n / secs : 0.0);
    if (failed) rc = 1;
done:
    free(list);
    nvfp4jit_ctx_destroy(ctx);
    tool_sets_free(sets, nsets);
    return rc;
}

/* ---- tune ---------------------------------------------------------------------------------- */
static const char *result_status(const nvfp4jit_tune_result *r) {
    if (r->status == NVFP4JIT_ERR_NOT_FOUND) return "skipped (time limit)";
    if (r->status != NVFP4JIT_OK) return "compile failed";
    return r->median_us >= 0 ? "" : "not timed";
}

int cmd_tune(int argc, char **argv) {
    static const tool_usage u = {
        "tune",
        "[--problems FILE --set NAME | --groups MxNxK,...] [--arch ARCH] [--candidates K]"
        " [--time-limit S] [--iters N] [--jobs N] [--seed N] [--no-store] [--verbose]",
        "Needs a GPU. For each problem set: fill random operands the way `demo` does (all 16\n"
        "e2m1 codes, e4m3 scales capped per K), take the heuristic's K best-ranked variants\n"
        "(--candidates, default 12; on sm_90a up to 4 more: the act16sk stream-K twins of the\n"
        "best act16 ones where they would split tiles), compile them in parallel into the\n"
        "cache, time each with CUDA events (3 warm-up launches, then the median of --iters,\n"
        "default 20, at least 10, each launch after an L2 flush as in bench; the candidates\n"
        "in turn, 5 launches of each per round, as the GPU's clocks fall during long runs),\n"
        "choose the fastest (candidates within 3 % of it are tied; the tie goes to the one\n"
        "the heuristic ranked higher), check it against the CPU reference on a sample of\n"
        "every group, and store it in the tuning database\n"
        "<cache_dir>/tune-v1.txt (unless --no-store). Later plans for a set with the same\n"
        "signature (arch, per group: M rounded up to 0, 8 or a power of two, N, K) on the same\n"
        "GPU, driver and library use it (choice 'tuned'). --time-limit bounds the compile +\n"
        "timing time of each set.\n"
        "Default sets: bench* of problems/gpumode.txt. Default arch: the GPU's."};
    tool_prob_opts po = {0};
    const char *arch_s = NULL, *tl_s = NULL;
    int cands = 12, iters = 20, jobs = 0, seed = 1, no_store = 0, verbose = 0;
    const tool_opt opts[] = {
        TOOL_PROB_OPTS(po),
        {"arch", OPT_STRING, &arch_s, "ARCH", "sm_90a or sm_100a (must be the GPU's)", 0, 0},
        {"candidates", OPT_INT, &cands, "K", "variants to time (default 12)", 1, 100000},
        {"time-limit", OPT_STRING, &tl_s, "S", "seconds per set for compile + timing", 0, 0},
        {"iters", OPT_INT, &iters, "N", "timed launches per candidate (default 20)", 10, 100000},
        {"jobs", OPT_INT, &jobs, "N", "compile threads (default: online CPUs, at most 16)", 1,
         64},
        {"seed", OPT_INT, &seed, "N", "random data seed (default 1)", 0, 2147483647},
        {"no-store", OPT_FLAG, &no_store, NULL, "do not write the tuning database", 0, 0},
        {"verbose", OPT_FLAG, &verbose, NULL, "one line per candidate on stderr while timing",
         0, 0},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    double time_limit = 0;
    if (tl_s) {
        char *end;
        time_limit = strtod(tl_s, &end);
        if (end == tl_s || *end || !(time_limit > 0) || time_limit > 1e7)
            return tool_bad_usage(u.cmd, "--time-limit '%s': expected a positive number of "
                                         "seconds", tl_s);
    }
    nvfp4jit_arch want = NVFP4JIT_ARCH_SM90A;
    if (arch_s && tool_parse_arch(arch_s, &want))
        return tool_bad_usage(u.cmd, "--arch '%s': expected sm_100a or sm_90a", arch_s);
    nvfp4jit_ext_set *sets = NULL;
    size_t nsets = 0;
    if ((r = tool_load_sets(u.cmd, &po, &sets, &nsets))) return r;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) {
        tool_sets_free(sets, nsets);
        return 1;
    }
    int rc = 0;
    tool_dev dev;
    int dev_open = 0;
    memset(&dev, 0, sizeof dev);
    const size_t rcap = (size_t)cands + NVFP4JIT_TUNE_MAX_EXTRA; /* + the act16sk twins */
    nvfp4jit_tune_result *res = calloc(rcap, sizeof *res);
    if (!res) {
        rc = tool_fail(u.cmd, "out of memory");
        goto done;
    }
    for (size_t si = 0; si < nsets; si++) {
        nvfp4jit_group *g = tool_groups_from_set(&sets[si]);
        if (!g) {
            rc = tool_fail(u.cmd, "out of memory");
            goto done;
        }
        nvfp4jit_status s = nvfp4jit_problem_check_shapes(ctx, g, sets[si].count);
        free(g);
        if (s != NVFP4JIT_OK) {
            char what[256];
            snprintf(what, sizeof what, "invalid problem set '%s'", sets[si].name);
            rc = tool_lib_fail(u.cmd, ctx, s, what);
            goto done;
        }
    }
    char why[512] = "";
    int cc = tool_device_cc(ctx, why, sizeof why);
    nvfp4jit_arch arch;
    if (!cc) {
        rc = tool_fail(u.cmd, "tuning needs a GPU: %s", why);
        goto done;
    }
    if (tool_arch_for_cc(cc, &arch)) {
        rc = tool_fail(u.cmd, "the GPU is sm_%d, which runs neither sm_90a nor sm_100a", cc);
        goto done;
    }
    if (arch_s && want != arch) {
        rc = tool_fail(u.cmd, "--arch %s: the GPU runs %s kernels only", arch_s,
                       tool_arch_name(arch));
        goto done;
    }
    if (tool_dev_open(u.cmd, ctx, &dev)) {
        rc = 1;
        goto done;
    }
    dev_open = 1;
    printf("tuning database: %s\n", nvfp4jit_tune_db_path(ctx));
    for (size_t si = 0; si < nsets; si++) {
        const nvfp4jit_ext_set *set = &sets[si];
        tool_data data;
        if (tool_data_create(u.cmd, &dev, set, (uint64_t)seed + si, &data)) {
            rc = 1;
            continue;
        }
        char sig[NVFP4JIT_EXT_SIGNATURE_MAX] = "";
        nvfp4jit_ext_tune_signature(arch, data.g, data.n, sig, sizeof sig);
        printf("== set %s: %zu group%s, %.3f GFLOP, %s\n   signature: %s\n", set->name,
               set->count, set->count == 1 ? "" : "s", tool_set_flops(set) * 1e-9,
               tool_arch_name(arch), sig);
        fflush(stdout);
        nvfp4jit_tune_options o;
        memset(&o, 0, sizeof o);
        o.candidates = cands;
        o.time_limit_s = time_limit;
        o.iters = iters;
        o.jobs = jobs;
        o.progress = 1;
        o.verbose = verbose;
        o.no_store = no_store;
        o.results = res;
        o.results_cap = rcap;
        size_t nres = 0;
        o.results_count = &nres;
        nvfp4jit_variant best;
        double best_us = 0;
        nvfp4jit_status s = nvfp4jit_tune(ctx, arch, data.g, data.n, &o, &best, &best_us);
        if (nres > rcap) nres = rcap;
        if (nres) {
            printf("  %4s  %-28s %9s %10s %10s  %s\n", "rank", "variant", "est_us", "median_us",
                   "min_us", "");
            for (size_t i = 0; i < nres; i++) {
                const nvfp4jit_tune_result *x = &res[i];
                if (x->median_us >= 0)
                    printf("  %4d  %-28s %9.2f %10.2f %10.2f  %s\n", x->heuristic_rank + 1,
                           tool_variant_str(&x->variant), x->est_us, x->median_us, x->min_us,
                           x->winner ? "<- winner" : "");
                else
                    printf("  %4d  %-28s %9.2f %10s %10s  %s\n", x->heuristic_rank + 1,
                           tool_variant_str(&x->variant), x->est_us, "-", "-",
                           result_status(x));
            }
        }
        if (s != NVFP4JIT_OK && s != NVFP4JIT_ERR_TUNE_DB) {
            char what[256];
            snprintf(what, sizeof what, "cannot tune set '%s'", set->name);
            rc = tool_lib_fail(u.cmd, ctx, s, what);
        } else {
            double h_us = nres && res[0].median_us >= 0 ? res[0].median_us : -1;
            printf("  tuned: %s, %.2f us (median)", tool_variant_str(&best), best_us);
            if (h_us > 0)
                printf("; the heuristic's choice %s: %.2f us (%.2fx)",
                       tool_variant_str(&res[0].variant), h_us, h_us / best_us);
            printf("; checked against the CPU reference: PASS\n");
            if (s == NVFP4JIT_ERR_TUNE_DB)
                rc = tool_lib_fail(u.cmd, ctx, s, "cannot store the result");
            else
                printf("  %s\n", no_store ? "not stored (--no-store)" : "stored");
        }
        dev.api->cuStreamSynchronize(dev.stream);
        tool_data_free(&dev, &data);
        fflush(stdout);
    }
done:
    free(res);
    if (dev_open) tool_dev_close(&dev);
    nvfp4jit_ctx_destroy(ctx);
    tool_sets_free(sets, nsets);
    return rc;
}
