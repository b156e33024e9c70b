/* heuristic.h - choosing a variant without tuning: a cost model over the valid space. */
#ifndef NJ_HEURISTIC_H
#define NJ_HEURISTIC_H

#include "common.h"
#include "family.h" /* SM100_RING_LATENCY_US, the family's cost-model terms */

typedef struct heur_cand {
    nvfp4jit_variant v;
    double est_us;      /* estimated time */
    double mma_us;      /* tensor-core time of the busiest SM */
    double decode_us;   /* dequantisation time of the busiest SM (sm_90a) */
    double mem_us;      /* DRAM floor: unique bytes / bandwidth, plus L2 re-reads */
    long long tiles;
    double waves;
    double waste;       /* fraction of MMA work spent on padding (M/N tails) */
    /* sm_100a occupancy and ring (sm_90a act16: ctas_per_sm, kstep_us, ring_us; 0
     * elsewhere): CTAs per SM and what limits it, the
     * tensor-core time of one k-step, and the time per k-step the mbarrier ring allows when
     * it must cover a DRAM round trip (heuristic.c "sm_100a stages") */
    int ctas_per_sm, occ_smem, occ_tmem, occ_regs;
    double kstep_us, ring_us;
} heur_cand;

/* Rank every valid variant of arch for the problem set, best first (heuristic.c: a total
 * order, then near-ties to the simpler variant). Writes at most cap candidates, *count =
 * number ranked. The result depends on (arch, shapes, sms) only. sms = 0: fam_model_sms (the
 * device's count when a device runs arch, else the arch's usual count). */
nvfp4jit_status heur_rank(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g,
                          size_t n, int sms, heur_cand *out, size_t cap, size_t *count);

/* The cost model's estimate of one variant v for the set (as heur_rank would rank it), into
 * *out; NVFP4JIT_ERR_INVALID_VARIANT (without a message) when v is not a candidate: invalid,
 * past one of its limits for the set, or over the heuristic's workspace bound. For variants
 * heur_rank leaves out (act16sk) it is the act16 model of the same tile (no stream-K term). */
nvfp4jit_status heur_estimate(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n, int sms,
                              const nvfp4jit_variant *v, heur_cand *out);
/* The first of heur_rank. */
nvfp4jit_status heur_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g,
                            size_t n, int sms, nvfp4jit_variant *v, nvfp4jit_choice *choice);

/* c[0..n) sorted by heur_cand_cmp: of the candidates within 2 % of each position's fastest,
 * the simplest first (less shared memory, smaller tile; for narrow act16 tiles the deepest
 * ring of one tile), as heur_rank does (heuristic.c). */
void heur_prefer(heur_cand *c, size_t n);

/* The ranking's total order (exposed for its property test): estimate, then the variant's
 * fields (arch, block_m, block_n, block_k, stages, swap_ab, strategy). @return <0, 0, >0. */
int heur_cand_cmp(const heur_cand *a, const heur_cand *b);

/* The MoE heuristic (src/moe.c): row counts of max_rows tokens over `experts` experts at
 * the quantiles of distribution `kind` (0 even, 1 Poisson, 2 exponential), ascending, into
 * out[experts]; the variant a MoE plan of that shape runs with (least worst-case regret over
 * the kinds); whether a variant of arch can serve a MoE plan (sm_90a: act16 becomes act16p
 * in *v; sm_100a: any valid variant). */
void nj_moe_counts(int64_t max_rows, int experts, int kind, int64_t *out);
nvfp4jit_status nj_moe_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, int experts, int64_t n,
                              int64_t k, int64_t max_rows, int sms, nvfp4jit_variant *v);
int nj_moe_usable(nvfp4jit_variant *v, int experts, nvfp4jit_arch arch);

#endif
