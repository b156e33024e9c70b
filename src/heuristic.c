/* heuristic.c - the cost model.
 *
 * For a candidate variant every group is cut into tiles (X rows x Y rows: with swap_ab the
 * weights are X). One CTA runs one tile; one CTA fits an SM (the kernels ask for most of the
 * shared memory). A tile's time is its k-steps times the slower of two pipes that overlap:
 *   mma    = 2*BM*BN*BK flops at the tensor-core rate per SM
 *   decode = (BM+BN)*BK values at the measured dequantisation rate per SM (sm_90a only:
 *            about 10 values/clock as measured in the whole kernel), nothing for sm_100a (fp4 tensor cores)
 * plus a fixed cost per k-step (barriers and waits that do not overlap) and per tile. Tiles are spread over the SMs in waves (the busiest SM
 * sets the time). The DRAM floor is every byte read once (A, B, scales) plus C written, plus
 * re-reads of the operand that is not shared by consecutive CTAs, at the measured bandwidth;
 * the estimate is the larger of the floor and the compute time. The per-arch terms (rates,
 * limits, SMs) are the family's (family.h: fam_rates; values in fam_sm90.c, fam_sm100.c).
 *
 * The choice is a function of (arch, shapes, SM count) only: the SM count is an explicit
 * input (heur_rank's sms; plans record it). Ranking is in two steps so that it is
 * deterministic: a total order (heur_cand_cmp: the estimate, then the variant's fields),
 * then a pass that lets near-ties (within 2 % of the fastest left) go to the sm_100a variant
 * whose ring covers the round trip, then to the smaller shared-memory footprint, then the
 * smaller tile (prefer_simpler). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "heuristic.h"
#include "variant.h"

/* sm_100a stages. One k-step of a CTA is its MMA time (the tensor core, shared by the CTAs
 * resident on the SM) plus a fixed per-step cost. The producer can run at most STAGES k-steps
 * ahead, and a stage's TMA load takes a DRAM round trip (fam_rates.ring_latency_us) before the
 * MMA can use it, so a ring of S stages in each of o resident CTAs completes at most o*S
 * stages per (latency + o*step): per stage of the SM, max(step, (latency + o*step) / (o*S)).
 * o = CTAs per SM = min(by shared memory (the family's per-SM size / (the dynamic size + the
 * static section: 1 KB reserved + mbarriers)), by tensor memory (512 columns / the
 * allocation), by registers, by threads). Co-resident CTAs also overlap one CTA's epilogue
 * with another's main loop (the per-tile cost is spread over o CTA slots, as for act16).
 *
 * sm_90a act16, per k-step of one CTA, with o CTAs of the variant resident per SM:
 *   max(o * (max(decode, mma) + 1.2 min(decode, mma)^2 / (decode + mma)), o * L2 bytes / L2 rate)
 * decode and wgmma overlap in part (a warpgroup decodes the next k-step while its previous
 * wgmma group is in flight, then waits for it); the fp16 token tile's L2 traffic would bind
 * only on the widest token tiles (ncu after the diet: L2 at 37 % of peak on bench1 128x128,
 * 52 % on prefill8-up 128x192; tensor pipe 58 % and 84 %); or what the ring allows when that
 * is longer: a stage is held
 * while it is decoded and while the wgmma reading its tokens is in flight, so STAGES - 2
 * loads run ahead, each a round trip (fam_rates.ring_latency_us): (latency + step) /
 * (STAGES - 2). Fitted on the H200 after the consumer's instruction diet (2026-12-04):
 * bench1 128x128 s4 171.5 us, s6 153.1, s8 150.1 (k-step ~733 clocks unlimited, ~846 at s4:
 * a round trip of ~960 clocks), 128x192 on bench2 s4 108.8, s6 100.4 (~1140 clocks): 1100
 * (0.63 us); decode64-up 128x24 at 2 CTAs per SM s4 324 -> s8 301 us. Each stage also costs
 * its barrier wait, release and loop (fam_rates.act16_stage_clk per 64-k block at BLOCK_K 64,
 * shared by two blocks at 128: decode64-up 128x24 at 3 CTAs 301 -> 278 us, decode64-down
 * 163 -> 151; the wide tiles lost with BLOCK_K 128, where only 3 stages fit).
 * (Before it, 2 and 3 stages were a factor 1.6 and 1.15 and 4..8 ties.) */

typedef struct rank_acc {
    const family *f;
    const fam_rates *r;
    int sms;
    const nvfp4jit_group *g;
    size_t n;
    heur_cand *all;
    size_t count, cap;
    int oom;
} rank_acc;

static void estimate(const rank_acc *a, const nvfp4jit_variant *v, heur_cand *c) {
    memset(c, 0, sizeof *c);
    const fam_rates *r = a->r;
    const family *f = a->f;
    double clk_per_us = r->clock_ghz * 1e3;
    long long tiles = 0;
    double work_us = 0, max_tile_us = 0, useful = 0, padded = 0, bytes = 0;
    double mma_total = 0, dec_total = 0, prep_bytes = 0;
    const int act16 = v->arch == NVFP4JIT_ARCH_SM90A && v->strategy != NVFP4JIT_STRATEGY_DUAL;
    /* CTAs per SM: one for the dual kernels (they ask for most of shared memory); act16's
     * small tiles fit several (registers: ~N/2 + 56 per thread; shared memory; threads) */
    int occ = 1;
    double ring_clk = 0; /* sm_100a: k-step time per SM stage the ring allows (0: no limit) */
    if (v->arch == NVFP4JIT_ARCH_SM100A) {
        int threads = f->threads(v), cols = f->tmem_cols ? f->tmem_cols(v) : 512;
        double cta_smem = (double)f->dyn_smem(v) + 1024 + 8.0 * (2 * v->stages + 1) + 4;
        c->occ_smem = (int)((double)f->smem_sm / cta_smem);
        c->occ_tmem = 512 / cols;
        c->occ_regs = f->regs_sm / (r->regs_per_thread * threads);
        occ = c->occ_smem < c->occ_tmem ? c->occ_smem : c->occ_tmem;
        if (c->occ_regs < occ) occ = c->occ_regs;
        if (f->threads_sm / threads < occ) occ = f->threads_sm / threads;
        if (occ < 1) occ = 1;
        double step = 2.0 * v->block_m * v->block_n * v->block_k / r->mma_flops_per_clk +
                      r->iter_overhead_clk;
        double lat = r->ring_latency_us * r->clock_ghz * 1e3;
        ring_clk = (lat + occ * step) / ((double)occ * v->stages);
        c->ctas_per_sm = occ;
        c->kstep_us = step / (r->clock_ghz * 1e3);
        c->ring_us = ring_clk / (r->clock_ghz * 1e3);
    }
    if (act16 && f->ctas_per_sm && f->ctas_per_sm(v) > 0) {
        occ = f->ctas_per_sm(v); /* what the kernel is compiled for (act16p: its grid too) */
    } else if (act16) {
        int threads = f->threads(v), regs = v->block_n / 2 + 56;
        regs = regs < 64 ? 64 : (regs + 7) / 8 * 8;
        int by_regs = f->regs_sm / (regs * threads);
        int by_smem = (int)((double)f->smem_sm / ((double)f->dyn_smem(v) + 1024));
        int by_threads = f->threads_sm / threads;
        occ = by_regs < by_smem ? by_regs : by_smem;
        if (by_threads < occ) occ = by_threads;
        if (occ < 1) occ = 1;
    }
    for (size_t i = 0; i < a->n; i++) {
        const nvfp4jit_group *g = &a->g[i];
        if (g->m == 0) continue;
        double rx = (double)(v->swap_ab ? g->n : g->m), ry = (double)(v->swap_ab ? g->m : g->n);
        double tx = ceil(rx / v->block_m), ty = ceil(ry / v->block_n);
        double ksteps = ceil((double)g->k / v->block_k);
        double mma = 2.0 * v->block_m * v->block_n * v->block_k / r->mma_flops_per_clk;
        double dec = r->decode_per_clk > 0
                         ? (double)(v->block_m + v->block_n) * v->block_k / r->decode_per_clk
                         : 0;
        /* the per-k-step cost showed on swapped tiles (weights streamed on the M side, few
         * tokens: short k-steps whose barriers and waits are not hidden), not on the 128x128
         * token tiles (measured, see fam_sm90.c) */
        double iter = v->swap_ab || v->arch != NVFP4JIT_ARCH_SM90A ? r->iter_overhead_clk : 0;
        double step = fmax(mma, dec) + iter;
        /* sm_100a: o CTAs share the tensor core, each k-step of a CTA takes o steps of the
         * SM, or what its ring allows when that is longer (see SM100_RING_LATENCY_US) */
        double alone = step; /* one CTA alone on an SM (a set with fewer tiles than SMs) */
        if (ring_clk > 0) {
            double lat = r->ring_latency_us * r->clock_ghz * 1e3;
            alone = fmax(step, (lat + step) / v->stages);
            step = occ * fmax(step, ring_clk);
        }
        if (act16) {
            /* weights only are decoded in the kernel; tokens arrive as fp16 through L2 */
            dec = (double)v->block_m * v->block_k / r->act16_decode_per_clk;
            /* the ring unrolled with constant slots: fewer instructions per block and stage */
            const int unrolled = f->ring_unrolled && f->ring_unrolled(v);
            if (unrolled) dec *= r->act16_unrolled_dec;
            const double stage_clk = unrolled ? r->act16_unrolled_stage_clk : r->act16_stage_clk;
            double l2 = ((double)v->block_n * v->block_k * 2 +
                         (double)v->block_m * v->block_k / 2 + 512.0) /
                        r->l2_bytes_per_clk;
            double o = occ, lat = r->ring_latency_us * r->clock_ghz * 1e3;
            /* decode and wgmma overlap in part (the next k-step's decode runs while the
             * previous wgmma group is in flight), the more the longer the wgmma: the longer
             * one plus 1.2 min^2 / (decode + mma) (fits 128x128 ~733 and 128x192 ~914 clocks
             * per k-step on the H200, from bench1 and the tensor pipe's 84 % on prefill8-up) */
            double lo = fmin(dec, mma);
            step = fmax(o * (fmax(dec, mma) + 1.2 * lo * lo / (dec + mma) +
                             stage_clk * 64.0 / v->block_k),
                        o * l2);
            /* the ring: a stage is held while it is decoded and while the wgmma that reads
             * its tokens is in flight; the consumers release a stage after the first block
             * of the next one, so about 1 + 1/KSUB stages are held (KSUB 64-k blocks per
             * stage) and STAGES - 1 - 1/KSUB loads are in flight ahead of them, each a round
             * trip of lat (decode64-up 128x24x256 at 3 stages measured 257 us, faster than
             * any BLOCK_K 64 or 128 ring) */
            double ahead = v->stages - 1 - 64.0 / v->block_k;
            double ring = (lat + step) / (ahead > 0.5 ? ahead : 0.5);
            c->kstep_us = step / clk_per_us;
            c->ring_us = ring / clk_per_us;
            step = fmax(step, ring);
            prep_bytes += (double)g->m * g->k * (0.5 + 1.0 / 16 + 2.0);
        }
        /* act16p: a persistent CTA loads its next tile while it stores the last one */
        double tile_us = ksteps * step / clk_per_us +
                         (v->strategy == NVFP4JIT_STRATEGY_ACT16P ? r->act16p_tile_us
                                                                  : r->tile_overhead_us);
        tiles += (long long)(tx * ty);
        work_us += tx * ty * tile_us;
        mma_total += tx * ty * ksteps * mma / clk_per_us;
        dec_total += tx * ty * ksteps * dec / clk_per_us;
        double alone_us = ring_clk > 0 ? ksteps * alone / clk_per_us + r->tile_overhead_us
                                        : tile_us;
        if (alone_us > max_tile_us) max_tile_us = alone_us;
        useful += (double)g->m * g->n;
        padded += tx * v->block_m * ty * v->block_n;
        /* DRAM: operands once (0.5 B/value + 1/16 B of scale), C once (2 B/value), and the
         * operand that consecutive CTAs do not share re-read once per tile of the other
         * (from L2 mostly: counted at a quarter of its bytes). */
        double kbytes = (double)g->k * (0.5 + 1.0 / 16);
        bytes += (double)(g->m + g->n) * kbytes + 2.0 * g->m * g->n;
        bytes += 0.25 * (ty > 1 ? (ty - 1) : 0) * rx * kbytes;
    }
    int sms = a->sms * occ; /* CTA slots */
    double waves = tiles ? ceil((double)tiles / sms) : 0;
    /* busiest SM: at least one tile, at most the work spread evenly rounded up to waves */
    double comp_us = tiles ? fmax(max_tile_us, fmax(work_us / sms, waves * (work_us / tiles)))
                           : 0;
    double mem_us = bytes / r->dram_bytes_per_us;
    c->v = *v;
    if (act16) c->ctas_per_sm = occ;
    c->tiles = tiles;
    c->waves = waves;
    c->mma_us = tiles ? mma_total / fmin((double)tiles, (double)sms) : 0;
    c->decode_us = tiles ? dec_total / fmin((double)tiles, (double)sms) : 0;
    c->mem_us = mem_us;
    c->waste = padded > 0 ? 1.0 - useful / padded : 0;
    c->est_us = fmax(comp_us, mem_us) + 3.0; /* + launch */
    if (act16) /* + the prep kernel (tokens to fp16: read packed, write fp16) and its launch */
        c->est_us += prep_bytes / r->dram_bytes_per_us + 2.0;
}

/* v is a candidate for the set: valid, within the variant's limits, and holding no more
 * device workspace than the heuristic picks (act16's fp16 tokens) */
static int cand_ok(const rank_acc *a, const nvfp4jit_variant *v) {
    char why[256];
    if (!a->f->check(v, why, sizeof why)) return 0;
    if (a->f->fits && !a->f->fits(v, a->g, a->n, NULL, 0)) return 0;
    if (a->f->heur_max_workspace > 0 && a->f->workspace_size &&
        (double)a->f->workspace_size(v, a->g, a->n) > a->f->heur_max_workspace)
        return 0;
    return 1;
}

static void rank_emit(const nvfp4jit_variant *v, void *u) {
    rank_acc *a = u;
    if (a->oom) return;
    /* act16sk (stream-K) is never ranked (an explicit variant, or the tuner's twins of ranked
     * act16 candidates: tuner.c tuner_add_sk): where it splits tiles it beat act16 of the same
     * tile by up to 13 % (H100, bench1 at 128x96), elsewhere it is act16p's schedule, and this
     * model's error between tiles is larger than the gain (bench/RESULTS.md 2026-12-06) */
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16SK) return;
    /* act16's wide form (two consumer warpgroups of 128 rows; family.h sm90_act16_wide) is not
     * ranked either until it has been timed on a GPU against the tiles this model picks
     * (issue 13 part 4, bench/RESULTS.md 2026-12-08): this model does not know its costs (its
     * estimate put it first on bench2, prefill8-up, skewed8-up and single-large) */
    if (v->arch == NVFP4JIT_ARCH_SM90A && sm90_act16_wide(v)) return;
    if (!cand_ok(a, v)) return;
    if (a->count == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        heur_cand *p = realloc(a->all, cap * sizeof *p);
        if (!p) { a->oom = 1; return; }
        a->all = p;
        a->cap = cap;
    }
    estimate(a, v, &a->all[a->count++]);
}

static size_t smem_of(const nvfp4jit_variant *v) { return fam_get(v->arch)->dyn_smem(v); }

/* The stable key: the variant's fields in a fixed order. */
static int variant_cmp(const nvfp4jit_variant *a, const nvfp4jit_variant *b) {
    const int ka[7] = {(int)a->arch, a->block_m, a->block_n, a->block_k, a->stages, a->swap_ab,
                       a->strategy};
    const int kb[7] = {(int)b->arch, b->block_m, b->block_n, b->block_k, b->stages, b->swap_ab,
                       b->strategy};
    for (int i = 0; i < 7; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

int heur_cand_cmp(const heur_cand *a, const heur_cand *b) {
    int na = isnan(a->est_us), nb = isnan(b->est_us); /* (never: but then still an order) */
    if (na != nb) return na - nb;
    if (!na && a->est_us != b->est_us) return a->est_us < b->est_us ? -1 : 1;
    return variant_cmp(&a->v, &b->v);
}

static int cand_qsort_cmp(const void *pa, const void *pb) { return heur_cand_cmp(pa, pb); }

/* Which of two near-tied candidates to prefer: a ring that covers the (assumed) round trip
 * (sm_100a) before one that does not, then less shared memory, then the smaller tile, then
 * the total order. */
static int prefer_cmp(const heur_cand *a, const heur_cand *b) {
    int ra = a->ring_us > a->kstep_us, rb = b->ring_us > b->kstep_us;
    if (ra != rb) return ra - rb;

    size_t sa = smem_of(&a->v), sb = smem_of(&b->v);
    if (sa != sb) return sa < sb ? -1 : 1;
    long ta = (long)a->v.block_m * a->v.block_n, tb = (long)b->v.block_m * b->v.block_n;
    if (ta != tb) return ta < tb ? -1 : 1;
    return heur_cand_cmp(a, b);
}

#define HEUR_TIE 0.02 /* estimates within 2 % are noise */

/* c[0..n) sorted by heur_cand_cmp. Position i gets, of the candidates left whose estimate is
 * within HEUR_TIE of the fastest left (c[i]), the one prefer_cmp puts first; the others keep
 * their order. A pure function of the sorted list, so as deterministic as the order. */
void heur_prefer(heur_cand *c, size_t n) {
    for (size_t i = 0; i + 1 < n; i++) {
        double lim = c[i].est_us + HEUR_TIE * c[i].est_us;
        size_t best = i;
        for (size_t j = i + 1; j < n && c[j].est_us <= lim; j++)
            if (prefer_cmp(&c[j], &c[best]) < 0) best = j;
        /* then, for act16's narrow token tiles of decode sets (BLOCK_N <= 32), of the same tile
         * and strategy with as many CTAs per SM, the deepest ring within the tie: their
         * k-steps are short, so the round trip's spread shows (H200 after the ring unroll:
         * decode64-up 128x24x128 at 2 CTAs per SM s4 243.7 us, s5 237.9, s6 235.5, decode64-down
         * s4 140.3, s6 137.3, all tied in the model; but bench2 128x96x128 s4 92.3, s6 94.2) */
        for (size_t j = i; j < n && c[j].est_us <= lim; j++) {
            const nvfp4jit_variant *a = &c[j].v, *b = &c[best].v;
            if (j != best && b->block_n <= 32 && b->strategy == NVFP4JIT_STRATEGY_ACT16 &&
                a->arch == b->arch && a->block_m == b->block_m &&
                a->block_n == b->block_n && a->block_k == b->block_k &&
                a->strategy == b->strategy && a->swap_ab == b->swap_ab &&
                c[j].ctas_per_sm == c[best].ctas_per_sm && a->stages > b->stages)
                best = j;
        }
        if (best != i) {
            heur_cand t = c[best];
            memmove(&c[i + 1], &c[i], (best - i) * sizeof *c);
            c[i] = t;
        }
    }
}

nvfp4jit_status heur_rank(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g,
                          size_t n, int sms, heur_cand *out, size_t cap, size_t *count) {
    const family *f = fam_get(arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH, "arch %d is not supported", (int)arch);
    NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, g, n, 0));
    rank_acc a;
    memset(&a, 0, sizeof a);
    a.f = f;
    a.r = f->rates;
    a.sms = sms > 0 ? sms : fam_model_sms(f);
    a.g = g;
    a.n = n;
    f->enumerate(rank_emit, &a);
    if (a.oom) {
        free(a.all);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (heuristic)");
    }
    qsort(a.all, a.count, sizeof *a.all, cand_qsort_cmp);
    heur_prefer(a.all, a.count);
    for (size_t i = 0; i < a.count && i < cap; i++) out[i] = a.all[i];
    if (count) *count = a.count;
    free(a.all);
    NJ_RETURN_IF(ctx, a.count == 0, NVFP4JIT_ERR_INTERNAL, "no valid variant for this arch");
    return NVFP4JIT_OK;
}

nvfp4jit_status heur_estimate(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n, int sms,
                              const nvfp4jit_variant *v, heur_cand *out) {
    const family *f = fam_get(v->arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH, "arch %d is not supported",
                 (int)v->arch);
    NJ_FORWARD_IF_ERROR(nj_check_groups(ctx, g, n, 0));
    rank_acc a;
    memset(&a, 0, sizeof a);
    a.f = f;
    a.r = f->rates;
    a.sms = sms > 0 ? sms : fam_model_sms(f);
    a.g = g;
    a.n = n;
    if (!cand_ok(&a, v)) return NVFP4JIT_ERR_INVALID_VARIANT; /* (no message: a probe) */
    estimate(&a, v, out);
    return NVFP4JIT_OK;
}

nvfp4jit_status heur_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g,
                            size_t n, int sms, nvfp4jit_variant *v, nvfp4jit_choice *choice) {
    heur_cand best;
    size_t count = 0;
    NJ_FORWARD_IF_ERROR(heur_rank(ctx, arch, g, n, sms, &best, 1, &count));
    *v = best.v;
    *choice = NVFP4JIT_CHOICE_HEURISTIC;
    return NVFP4JIT_OK;
}
