/* heuristic.h - choosing a variant without tuning: a cost model over the valid space. */
#ifndef NJ_HEURISTIC_H
#define NJ_HEURISTIC_H

#include "common.h"

typedef struct heur_cand {
    nvfp4jit_variant v;
    double est_us;      /* estimated time */
    double mma_us;      /* tensor-core time of the busiest SM */
    double decode_us;   /* dequantisation time of the busiest SM (sm_90a) */
    double mem_us;      /* DRAM floor: unique bytes / bandwidth, plus L2 re-reads */
    long long tiles;
    double waves;
    double waste;       /* fraction of MMA work spent on padding (M/N tails) */
} heur_cand;

/* Rank every valid variant of arch for the problem set, best first. Writes at most cap
 * candidates, *count = number ranked. sms = 0: the device's, or the arch's usual count. */
nvfp4jit_status heur_rank(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g,
                          size_t n, int sms, heur_cand *out, size_t cap, size_t *count);

nvfp4jit_status heur_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g,
                            size_t n, nvfp4jit_variant *v, nvfp4jit_choice *choice);

#endif
