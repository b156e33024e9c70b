/* cmd_demo.c - `nvfp4jit demo`: plan, compile and cache for each set and arch; on a GPU of
 * that arch also run the grouped GEMM on random data over the whole e2m1 range, check every
 * group against the CPU reference and time it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

#define DEMO_ATOL 1e-3
#define DEMO_RTOL 1e-3
#define DEMO_REL_L2 1e-3

static const char *choice_str(nvfp4jit_choice c) {
    switch (c) {
    case NVFP4JIT_CHOICE_HEURISTIC: return "heuristic";
    case NVFP4JIT_CHOICE_FORCED: return "forced";
    case NVFP4JIT_CHOICE_TUNED: return "tuned";
    }
    return "?";
}

void tool_print_plan(const nvfp4jit_plan *plan, int ind) {
    nvfp4jit_choice ch = NVFP4JIT_CHOICE_HEURISTIC;
    const nvfp4jit_variant *v = nvfp4jit_plan_variant(plan, &ch);
    const nvfp4jit_kernel *k = nvfp4jit_plan_kernel(plan);
    nvfp4jit_resources r;
    memset(&r, 0, sizeof r);
    if (k) nvfp4jit_kernel_resources(k, &r);
    size_t src = 0;
    const void *d;
    if (k && nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_SOURCE, &d, &src) != NVFP4JIT_OK)
        src = 0;
    printf("%*svariant:       %s (%s)\n", ind, "", tool_variant_str(v), choice_str(ch));
    printf("%*ssource:        %zu bytes\n", ind, "", src);
    if (r.from_cache)
        printf("%*scache:         hit (%s)\n", ind, "", r.from_cache == 2 ? "memory" : "disk");
    else
        printf("%*scache:         miss: compiled in %.1f ms\n", ind, "", r.compile_ms);
    tool_print_resources(&r, ind);
}

typedef struct run_ctx {
    const char *cmd;
    nvfp4jit_plan *plan;
    tool_data *data;
    tool_dev *dev;
} run_ctx;

static int run_once(void *u) {
    run_ctx *rc = u;
    nvfp4jit_status s = nvfp4jit_plan_run(rc->plan, rc->data->g, rc->data->n, rc->dev->stream);
    if (s != NVFP4JIT_OK) return tool_lib_fail(rc->cmd, rc->dev->ctx, s, "nvfp4jit_plan_run");
    return 0;
}

/* Run once on poisoned C, check every group, then time. @return 0 PASS, 1 FAIL or error. */
static int run_and_check(const char *cmd, tool_dev *dev, nvfp4jit_plan *plan, tool_data *data,
                         int iters, int ind) {
    const tool_cuda *api = dev->api;
    CUresult r;
    /* NOTE: 0xFFFF is an fp16 NaN, and NaN never passes the check: an element the kernel
     * does not write fails. */
    for (size_t i = 0; i < data->n; i++) {
        const nvfp4jit_group *g = &data->g[i];
        if (g->m == 0) continue;
        if ((r = api->cuMemsetD8Async((CUdeviceptr)g->c, 0xFF, (size_t)(g->m * g->n * 2),
                                      dev->stream)))
            return tool_cu_fail(cmd, dev, r, "cuMemsetD8 (poisoning C)");
    }
    run_ctx rc = {cmd, plan, data, dev};
    if (run_once(&rc)) return 1;
    if ((r = api->cuStreamSynchronize(dev->stream)))
        return tool_cu_fail(cmd, dev, r, "the grouped GEMM failed (cuStreamSynchronize)");

    int threads = tool_nthreads(), failed = 0, min_e = 99, max_e = -99;
    int64_t elements = 0;
    double max_abs = 0, worst_l2 = 0;
    for (size_t i = 0; i < data->n; i++) {
        const nvfp4jit_group *g = &data->g[i];
        if (g->m == 0) continue;
        size_t cnt = (size_t)(g->m * g->n);
        uint16_t *out = malloc(cnt * 2), *ref = malloc(cnt * 2);
        if (!out || !ref) {
            free(out);
            free(ref);
            return tool_fail(cmd, "out of host memory");
        }
        if ((r = api->cuMemcpyDtoH(out, (CUdeviceptr)g->c, cnt * 2))) {
            free(out);
            free(ref);
            return tool_cu_fail(cmd, dev, r, "cuMemcpyDtoH");
        }
        nvfp4jit_ext_ref_gemm(data->a[i], data->sfa[i], data->b[i], data->sfb[i], g->m, g->n,
                              g->k, ref, threads);
        nvfp4jit_ext_ref_check chk;
        memset(&chk, 0, sizeof chk);
        int ok = nvfp4jit_ext_ref_compare(out, ref, (int64_t)cnt, DEMO_ATOL, DEMO_RTOL,
                                          DEMO_REL_L2, &chk);
        elements += (int64_t)cnt;
        if (chk.max_abs_err > max_abs || isnan(chk.max_abs_err)) max_abs = chk.max_abs_err;
        if (chk.rel_l2 > worst_l2 || isnan(chk.rel_l2)) worst_l2 = chk.rel_l2;
        if (data->max_exp[i] < min_e) min_e = data->max_exp[i];
        if (data->max_exp[i] > max_e) max_e = data->max_exp[i];
        if (!ok) {
            failed++;
            printf("%*sFAIL group %zu (%" PRId64 "x%" PRId64 "x%" PRId64 "): %" PRId64
                   " of %zu elements outside |err| <= %g + %g*|ref|, rel_l2 %.3g (limit %g)",
                   ind, "", i, g->m, g->n, g->k, chk.bad, cnt, DEMO_ATOL, DEMO_RTOL, chk.rel_l2,
                   DEMO_REL_L2);
            if (chk.first_bad >= 0 && (size_t)chk.first_bad < cnt) {
                int64_t row = chk.first_bad / g->n, col = chk.first_bad % g->n;
                printf("; first at [%" PRId64 ",%" PRId64 "]: got %.6g, want %.6g", row, col,
                       nvfp4jit_ext_ref_f16_to_double(out[chk.first_bad]),
                       nvfp4jit_ext_ref_f16_to_double(ref[chk.first_bad]));
            }
            printf("\n");
        }
        free(out);
        free(ref);
    }
    if (failed) {
        printf("%*scheck:         FAIL (%d group%s)\n", ind, "", failed, failed == 1 ? "" : "s");
    } else if (elements == 0) {
        printf("%*scheck:         PASS (every group has M = 0: nothing to compare)\n", ind, "");
    } else {
        printf("%*scheck:         PASS: %" PRId64 " elements, max |err| %.3g, worst rel_l2 %.3g "
               "(atol=%g, rtol=%g, rel_l2 <= %g; scales up to 2^%d..2^%d * 1.875)\n",
               ind, "", elements, max_abs, worst_l2, DEMO_ATOL, DEMO_RTOL, DEMO_REL_L2, min_e,
               max_e);
    }
    double med = 0, mn = 0;
    if (tool_time(cmd, dev, run_once, &rc, 3, iters, 0, 0, &med, &mn)) return 1;
    double flops = 0;
    for (size_t i = 0; i < data->n; i++)
        flops += 2.0 * (double)data->g[i].m * (double)data->g[i].n * (double)data->g[i].k;
    printf("%*stime:          %.2f us (median of %d, min %.2f us), %.1f TFLOP/s\n", ind, "",
           med, iters, mn, med > 0 ? flops / (med * 1e-6) / 1e12 : 0.0);
    return failed ? 1 : 0;
}

int cmd_demo(int argc, char **argv) {
    static const tool_usage u = {
        "demo", "[--arch ARCH] [--problems FILE --set NAME | --groups MxNxK,...] [--variant V]",
        "For each problem set and arch: make a plan (the heuristic's variant), compile it or\n"
        "load it from the cache, and print the variant, source size, compile time, cache\n"
        "hit/miss and resources. On a GPU of that arch, also fill random operands (all 16\n"
        "e2m1 codes; e4m3 scales from 2^-9 up to a cap per K that keeps the outputs and the\n"
        "fp32 accumulation error inside fp16 range and the tolerance), poison C with NaN, run\n"
        "the grouped GEMM, check every group against the CPU reference (|err| <= 1e-3 +\n"
        "1e-3*|ref| and rel_l2 <= 1e-3) and time it (median of --iters launches).\n"
        "Default sets: bench* of problems/gpumode.txt. Default arch: the GPU's; without a\n"
        "GPU both sm_90a and sm_100a (rendered, compiled and cached only).\n"
        "Exit 1 on any FAIL or library error."};
    tool_prob_opts po = {0};
    const char *arch_s = NULL, *variant_s = NULL;
    int seed = 1, iters = 20;
    const tool_opt opts[] = {
        {"arch", OPT_STRING, &arch_s, "ARCH", "sm_90a or sm_100a (default: see above)", 0, 0},
        TOOL_PROB_OPTS(po),
        {"variant", OPT_STRING, &variant_s, "V", "force a variant instead of the heuristic",
         0, 0},
        {"seed", OPT_INT, &seed, "N", "random data seed (default 1)", 0, 2147483647},
        {"iters", OPT_INT, &iters, "N", "timed launches (default 20)", 1, 100000},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;

    nvfp4jit_arch archs[2];
    int narch = 0;
    nvfp4jit_variant force;
    if (arch_s) {
        if (tool_parse_arch(arch_s, &archs[0]))
            return tool_bad_usage(u.cmd, "--arch '%s': expected sm_100a or sm_90a", arch_s);
        narch = 1;
    }
    if (variant_s) {
        if (nvfp4jit_variant_parse(variant_s, &force) != NVFP4JIT_OK)
            return tool_bad_usage(u.cmd, "--variant '%s': expected e.g. sm90a:128x128x64:s3",
                                  variant_s);
        if (narch && archs[0] != force.arch)
            return tool_bad_usage(u.cmd, "--variant %s is not for --arch %s", variant_s, arch_s);
        archs[0] = force.arch;
        narch = 1;
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
    /* validate every set before any work, with the library's own message */
    for (size_t i = 0; i < nsets && !rc; i++) {
        nvfp4jit_group *g = tool_groups_from_set(&sets[i]);
        if (!g) {
            rc = tool_fail(u.cmd, "out of host memory");
            break;
        }
        nvfp4jit_status s = nvfp4jit_problem_check_shapes(ctx, g, sets[i].count);
        free(g);
        if (s != NVFP4JIT_OK) {
            char what[256];
            snprintf(what, sizeof what, "invalid problem set '%s'", sets[i].name);
            rc = tool_lib_fail(u.cmd, ctx, s, what);
        }
    }
    if (rc) goto done;

    char why[512] = "";
    int cc = tool_device_cc(ctx, why, sizeof why);
    nvfp4jit_arch dev_arch = NVFP4JIT_ARCH_SM90A;
    int dev_ok = cc && tool_arch_for_cc(cc, &dev_arch) == 0;
    if (!narch) {
        if (dev_ok) {
            archs[narch++] = dev_arch;
        } else {
            archs[narch++] = NVFP4JIT_ARCH_SM90A;
            archs[narch++] = NVFP4JIT_ARCH_SM100A;
        }
    }
    if (!cc)
        printf("no CUDA device: rendered, compiled and cached only (%s)\n", why);
    else if (!dev_ok)
        printf("the CUDA device is sm_%d, which runs neither sm_90a nor sm_100a: rendered, "
               "compiled and cached only\n", cc);

    tool_dev dev;
    int dev_open = 0;
    memset(&dev, 0, sizeof dev);
    for (size_t si = 0; si < nsets; si++) {
        const nvfp4jit_ext_set *set = &sets[si];
        double flops = tool_set_flops(set);
        int64_t sum_m = 0;
        for (size_t i = 0; i < set->count; i++) sum_m += set->groups[i].m;
        printf("== set %s: %zu group%s, sum M = %" PRId64 ", %.3f GFLOP\n", set->name,
               set->count, set->count == 1 ? "" : "s", sum_m, flops * 1e-9);
        nvfp4jit_group *g = tool_groups_from_set(set);
        if (!g) {
            rc = tool_fail(u.cmd, "out of host memory");
            break;
        }
        tool_data data;
        int have_data = 0;
        memset(&data, 0, sizeof data);
        for (int ai = 0; ai < narch; ai++) {
            nvfp4jit_arch a = archs[ai];
            printf("-- %s\n", tool_arch_name(a));
            nvfp4jit_plan *plan = NULL;
            nvfp4jit_status s =
                nvfp4jit_plan_create(ctx, a, g, set->count, variant_s ? &force : NULL, &plan);
            if (s != NVFP4JIT_OK) {
                char what[256];
                snprintf(what, sizeof what, "cannot plan set '%s' for %s", set->name,
                         tool_arch_name(a));
                rc = tool_lib_fail(u.cmd, ctx, s, what);
                continue;
            }
            tool_print_plan(plan, 3);
            if (dev_ok && a == dev_arch) {
                if (!dev_open) {
                    if (tool_dev_open(u.cmd, ctx, &dev)) {
                        rc = 1;
                        nvfp4jit_plan_destroy(plan);
                        continue;
                    }
                    dev_open = 1;
                }
                if (!have_data) {
                    if (tool_data_create(u.cmd, &dev, set, (uint64_t)seed + si, &data)) {
                        rc = 1;
                        nvfp4jit_plan_destroy(plan);
                        continue;
                    }
                    have_data = 1;
                }
                if (run_and_check(u.cmd, &dev, plan, &data, iters, 3)) rc = 1;
                /* the plan may still be running: finish before destroying it */
                dev.api->cuStreamSynchronize(dev.stream);
            } else if (cc && dev_ok) {
                printf("   run:           skipped (the GPU is %s)\n", tool_arch_name(dev_arch));
            }
            nvfp4jit_plan_destroy(plan);
        }
        if (have_data) tool_data_free(&dev, &data);
        free(g);
        fflush(stdout);
    }
    if (dev_open) tool_dev_close(&dev);
done:
    nvfp4jit_ctx_destroy(ctx);
    tool_sets_free(sets, nsets);
    return rc;
}
