/* cmd_explain.c - `nvfp4jit variants` (the valid variant space) and `nvfp4jit explain` (the
 * heuristic's candidates, their estimated costs and why the winner won). No GPU needed; with
 * one, its SM count is used and a tuned entry of the tuning database is reported. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "choose.h"
#include "gpu.h"

/* Parse "sm_90a,sm_100a" into archs (deduplicated, in order). @return count, or -1 after a
 * usage message. */
int tool_parse_arch_list(const char *cmd, const char *s, nvfp4jit_arch *out, int cap) {
    int n = 0;
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char tok[32];
        nvfp4jit_arch a;
        if (len == 0 || len >= sizeof tok) {
            tool_bad_usage(cmd, "--arch '%s': expected a comma-separated list of sm_100a, sm_90a",
                           s);
            return -1;
        }
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (tool_parse_arch(tok, &a)) {
            tool_bad_usage(cmd, "--arch: '%s' is not sm_100a or sm_90a", tok);
            return -1;
        }
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= out[i] == a;
        if (!dup && n < cap) out[n++] = a;
        if (!e) break;
        p = e + 1;
    }
    return n;
}

/* Default archs: the device's when it runs one, else every arch. @return count. */
int tool_default_archs(nvfp4jit_ctx *ctx, nvfp4jit_arch *out) {
    char why[256];
    int cc = tool_device_cc(ctx, why, sizeof why);
    nvfp4jit_arch a;
    if (cc && tool_arch_for_cc(cc, &a) == 0) {
        out[0] = a;
        return 1;
    }
    out[0] = NVFP4JIT_ARCH_SM90A;
    out[1] = NVFP4JIT_ARCH_SM100A;
    return 2;
}

/* ---- variants ------------------------------------------------------------------------------- */
int cmd_variants(int argc, char **argv) {
    static const tool_usage u = {
        "variants", "[--arch ARCH[,ARCH]] [--count]",
        "List the valid variant space of each arch (nvfp4jit_variant_space): every variant\n"
        "that passes the arch's rules (MMA shapes, shared memory, registers), one per line in\n"
        "the form --variant takes, with its threads per CTA and dynamic shared memory.\n"
        "Default: sm_90a and sm_100a. --count prints only the counts."};
    const char *arch_s = NULL;
    int count_only = 0;
    const tool_opt opts[] = {
        {"arch", OPT_STRING, &arch_s, "ARCH", "sm_90a, sm_100a or both, comma-separated", 0, 0},
        {"count", OPT_FLAG, &count_only, NULL, "print only the number of variants per arch", 0,
         0},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    nvfp4jit_arch archs[4] = {NVFP4JIT_ARCH_SM90A, NVFP4JIT_ARCH_SM100A};
    int narch = 2;
    if (arch_s && (narch = tool_parse_arch_list(u.cmd, arch_s, archs, 4)) < 0) return 2;
    for (int ai = 0; ai < narch; ai++) {
        size_t n = 0;
        nvfp4jit_status s = nvfp4jit_variant_space(archs[ai], NULL, 0, &n);
        if (s != NVFP4JIT_OK) return tool_lib_fail(u.cmd, NULL, s, "nvfp4jit_variant_space");
        nvfp4jit_variant *v = calloc(n ? n : 1, sizeof *v);
        if (!v) return tool_fail(u.cmd, "out of memory");
        s = nvfp4jit_variant_space(archs[ai], v, n, &n);
        if (s != NVFP4JIT_OK) {
            free(v);
            return tool_lib_fail(u.cmd, NULL, s, "nvfp4jit_variant_space");
        }
        if (count_only) {
            printf("%s: %zu valid variants\n", tool_arch_name(archs[ai]), n);
            free(v);
            continue;
        }
        printf("# %s: %zu valid variants\n", tool_arch_name(archs[ai]), n);
        printf("# %-30s %7s %12s\n", "variant", "threads", "dyn_smem_B");
        for (size_t i = 0; i < n; i++) {
            int threads = 0;
            size_t smem = 0;
            nvfp4jit_ext_variant_launch(&v[i], &threads, &smem);
            printf("  %-30s %7d %12zu\n", tool_variant_str(&v[i]), threads, smem);
        }
        free(v);
    }
    return 0;
}

/* ---- explain -------------------------------------------------------------------------------- */
static const char *term_name(int t) {
    static const char *n[] = {"mma (tensor-core time)", "decode (dequantisation time)",
                              "mem (DRAM floor)"};
    return n[t];
}

static double term_val(const nvfp4jit_ext_candidate *c, int t) {
    return t == 0 ? c->mma_us : t == 1 ? c->decode_us : c->mem_us;
}

static int same_tile(const nvfp4jit_variant *a, const nvfp4jit_variant *b) {
    return a->block_m == b->block_m && a->block_n == b->block_n && a->block_k == b->block_k &&
           a->swap_ab == b->swap_ab && a->strategy == b->strategy;
}

/* Margin of candidate r over the winner w, and the term it loses most on. */
static void compare(const nvfp4jit_ext_candidate *w, const nvfp4jit_ext_candidate *r,
                    const char *label) {
    double d = r->est_us - w->est_us, pct = w->est_us > 0 ? 100.0 * d / w->est_us : 0;
    printf("  %s: %s, est %.2f us: margin %+.2f us (%+.1f %%)\n", label,
           tool_variant_str(&r->variant), r->est_us, d, pct);
    if (fabs(d) <= 0.02 * fmin(w->est_us, r->est_us)) {
        printf("    near-tie (within 2 %%): decided by the smaller shared-memory footprint, "
               "then the smaller tile\n");
        return;
    }
    int worst = -1;
    double wd = 0;
    for (int t = 0; t < 3; t++) {
        double x = term_val(r, t) - term_val(w, t);
        if (x > wd) {
            wd = x;
            worst = t;
        }
    }
    if (worst >= 0)
        printf("    it loses most on %s (%+.2f us)", term_name(worst), wd);
    else
        printf("    it is not worse on any single term (it loses on overhead and waves)");
    if (r->waste > w->waste + 0.005)
        printf("; it pads more (%.1f %% vs %.1f %%)", 100.0 * r->waste, 100.0 * w->waste);
    if (r->waves > w->waves) printf("; it needs more waves (%.2f vs %.2f)", r->waves, w->waves);
    printf("\n");
}

static void explain_winner(const nvfp4jit_ext_candidate *c, size_t n) {
    const nvfp4jit_ext_candidate *w = &c[0];
    int dom = 0;
    for (int t = 1; t < 3; t++)
        if (term_val(w, t) > term_val(w, dom)) dom = t;
    printf("winner: %s, est %.2f us\n", tool_variant_str(&w->variant), w->est_us);
    printf("  dominant term: %s = %.2f us (%s)\n", term_name(dom), term_val(w, dom),
           dom == 2 ? "memory-bound: the operands' bytes at DRAM bandwidth"
                    : dom == 1 ? "decode-bound: dequantising e2m1 to fp16 costs more than the MMA"
                               : "compute-bound: tensor-core time of the busiest SM");
    double rest = w->est_us - 3.0 - term_val(w, dom);
    if (rest > 0.05 * w->est_us)
        printf("  other time: %.2f us beyond that term (per-tile prologue/epilogue, %.2f waves "
               "over %lld tiles, %.1f %% padding)\n",
               rest, w->waves, w->tiles, 100.0 * w->waste);
    if (n < 2) {
        printf("  runner-up: none (only one valid variant)\n");
        return;
    }
    compare(w, &c[1], "runner-up");
    /* the runner-up often differs only in stages (same cost): show the best other tile too */
    if (same_tile(&w->variant, &c[1].variant)) {
        for (size_t i = 2; i < n; i++) {
            if (!same_tile(&w->variant, &c[i].variant)) {
                char label[64];
                snprintf(label, sizeof label, "best other tile (rank %zu)", i + 1);
                compare(w, &c[i], label);
                break;
            }
        }
    }
}

int cmd_explain(int argc, char **argv) {
    static const tool_usage u = {
        "explain",
        "[--problems FILE --set NAME | --groups MxNxK,...] [--arch ARCH[,ARCH]] [--top N | --all]"
        " [--sms N]",
        "Print the candidates the heuristic considered for each problem set and arch, best\n"
        "first (top N, default 10; --all for every valid variant), with the cost model's terms:\n"
        "  est    estimated time (us): max(compute, DRAM floor) + 3 us launch\n"
        "  mma    tensor-core time of the busiest SM\n"
        "  decode dequantisation time of the busiest SM (sm_90a; 0 on sm_100a)\n"
        "  mem    DRAM floor: unique bytes / bandwidth, plus L2 re-reads\n"
        "  tiles, waves (tiles / SMs, rounded up), waste (fraction of MMA work on padding)\n"
        "and why the winner won: which term dominated and its margin to the runner-up. On a\n"
        "GPU, its SM count is used (else the arch's usual one, or --sms) and a tuned entry of\n"
        "the tuning database for the set is reported (dispatch uses it instead).\n"
        "Default arch: the GPU's, else sm_90a and sm_100a. Default sets: bench* of\n"
        "problems/gpumode.txt."};
    tool_prob_opts po = {0};
    const char *arch_s = NULL;
    int top = 10, all = 0, sms = 0;
    const tool_opt opts[] = {
        TOOL_PROB_OPTS(po),
        {"arch", OPT_STRING, &arch_s, "ARCH", "sm_90a, sm_100a or both, comma-separated", 0, 0},
        {"top", OPT_INT, &top, "N", "candidates to print (default 10)", 1, 1000000},
        {"all", OPT_FLAG, &all, NULL, "print every valid variant", 0, 0},
        {"sms", OPT_INT, &sms, "N", "SM count to model (default: the GPU's or the arch's)", 1,
         4096},
        {NULL, OPT_FLAG, NULL, NULL, NULL, 0, 0},
    };
    int r = tool_parse(&u, opts, argc, argv, NULL, 0, NULL);
    if (r >= 0) return r;
    nvfp4jit_arch archs[4];
    int narch = 0;
    if (arch_s && (narch = tool_parse_arch_list(u.cmd, arch_s, archs, 4)) < 0) return 2;
    nvfp4jit_ext_set *sets = NULL;
    size_t nsets = 0;
    if ((r = tool_load_sets(u.cmd, &po, &sets, &nsets))) return r;
    nvfp4jit_ctx *ctx = tool_ctx(u.cmd);
    if (!ctx) {
        tool_sets_free(sets, nsets);
        return 1;
    }
    if (!narch) narch = tool_default_archs(ctx, archs);
    int rc = 0;
    for (size_t si = 0; si < nsets && !rc; si++) {
        const nvfp4jit_ext_set *set = &sets[si];
        nvfp4jit_group *g = tool_groups_from_set(set);
        if (!g) {
            rc = tool_fail(u.cmd, "out of memory");
            break;
        }
        int64_t sum_m = 0;
        for (size_t i = 0; i < set->count; i++) sum_m += set->groups[i].m;
        for (int ai = 0; ai < narch && !rc; ai++) {
            size_t total = 0;
            nvfp4jit_status s =
                nvfp4jit_ext_rank(ctx, archs[ai], g, set->count, sms, NULL, 0, &total);
            nvfp4jit_ext_candidate *c = NULL;
            if (s == NVFP4JIT_OK) {
                c = calloc(total ? total : 1, sizeof *c);
                if (!c) {
                    rc = tool_fail(u.cmd, "out of memory");
                    break;
                }
                s = nvfp4jit_ext_rank(ctx, archs[ai], g, set->count, sms, c, total, &total);
            }
            if (s != NVFP4JIT_OK) {
                char what[256];
                snprintf(what, sizeof what, "cannot rank variants of set '%s' for %s", set->name,
                         tool_arch_name(archs[ai]));
                rc = tool_lib_fail(u.cmd, ctx, s, what);
                free(c);
                break;
            }
            int use_sms = sms ? sms : 0;
            char sig[NVFP4JIT_EXT_SIGNATURE_MAX] = "";
            nvfp4jit_ext_tune_signature(archs[ai], g, set->count, sig, sizeof sig);
            printf("== set %s: %zu group%s, sum M = %" PRId64 ", %.3f GFLOP; %s",
                   set->name, set->count, set->count == 1 ? "" : "s", sum_m,
                   tool_set_flops(set) * 1e-9, tool_arch_name(archs[ai]));
            if (use_sms) printf(", %d SMs (--sms)", use_sms);
            printf("; %zu valid variants\n", total);
            printf("   signature: %s\n", sig);
            size_t show = all ? total : (size_t)top < total ? (size_t)top : total;
            printf("  %4s  %-28s %9s %9s %9s %9s %7s %6s %6s\n", "rank", "variant", "est_us",
                   "mma_us", "decode_us", "mem_us", "tiles", "waves", "waste");
            for (size_t i = 0; i < show; i++)
                printf("  %4zu  %-28s %9.2f %9.2f %9.2f %9.2f %7lld %6.2f %5.1f%%\n", i + 1,
                       tool_variant_str(&c[i].variant), c[i].est_us, c[i].mma_us, c[i].decode_us,
                       c[i].mem_us, c[i].tiles, c[i].waves, 100.0 * c[i].waste);
            if (show < total)
                printf("  ... %zu more (--all to print them)\n", total - show);
            if (archs[ai] == NVFP4JIT_ARCH_SM100A && show) {
                /* the occupancy and ring terms behind the stage choice (heuristic.c) */
                printf("  sm_100a occupancy and ring (a stage's TMA load must cover a DRAM round "
                       "trip, assumed %.2f us):\n", nvfp4jit_ext_sm100_ring_latency_us());
                printf("  %4s  %-28s %7s %5s %5s %5s %9s %9s %8s\n", "rank", "variant",
                       "CTAs/SM", "smem", "tmem", "regs", "kstep_us", "ring_us", "buffers");
                for (size_t i = 0; i < show; i++)
                    printf("  %4zu  %-28s %7d %5d %5d %5d %9.3f %9.3f %8d%s\n", i + 1,
                           tool_variant_str(&c[i].variant), c[i].ctas_per_sm, c[i].occ_smem,
                           c[i].occ_tmem, c[i].occ_regs, c[i].kstep_us, c[i].ring_us,
                           c[i].ctas_per_sm * c[i].variant.stages,
                           c[i].ring_us > c[i].kstep_us ? "  ring-bound" : "");
                printf("  (CTAs/SM = min(smem, tmem = 512 / allocated columns, regs, threads); "
                       "ring_us = (round trip + CTAs x kstep) / buffers per stage of the SM; "
                       "a k-step costs max(kstep_us, ring_us) per CTA slot)\n");
            }
            explain_winner(c, total);
            nvfp4jit_variant tv;
            if (nvfp4jit_ext_tune_lookup(ctx, archs[ai], g, set->count, &tv))
                printf("  tuned: the tuning database has %s for this set on this GPU; "
                       "dispatch uses it instead of the heuristic\n", tool_variant_str(&tv));
            free(c);
        }
        free(g);
        fflush(stdout);
    }
    nvfp4jit_ctx_destroy(ctx);
    tool_sets_free(sets, nsets);
    return rc;
}
