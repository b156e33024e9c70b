/* family.h - one kernel family per architecture, and the one home of every fact about an
 * arch: which compute capability runs it, its names, its usual SM count, its hardware limits,
 * the cost model's per-arch terms (heuristic.c reads them), its validity rules, the
 * parameters its template is rendered with (the device-blob and shared-memory layouts among
 * them: the template static_asserts them, so a drift fails to compile), and the host half of
 * its dispatch. Code generation lives in templates/; choices live in heuristic.c. */
#ifndef NJ_FAMILY_H
#define NJ_FAMILY_H

#include "common.h"
#include "driver.h"
#include "template.h"

/* Launch geometry and the device blob a family's kernel reads. The kernel's signature is
 *   extern "C" __global__ void <KERNEL_NAME>(const unsigned char *blob)
 * and it is launched with grid (num_ctas,1,1), block (threads,1,1), dyn_smem bytes. */
/* sm_90a act16: the prep kernel's third parameter (templates/sm90a_act16.cuh PrepTab,
 * __grid_constant__): for a grouped call of at most NJ_PREP_TAB_GROUPS groups, what the prep
 * needs of each group, so that its first loads are the tokens themselves rather than the blob's
 * header and then its group descriptors, two dependent memory round trips before them
 * (bench/RESULTS.md, 2026-12-06). num_groups = 0: read the blob (more groups, or a MoE call). */
#define NJ_PREP_TAB_GROUPS 32
typedef struct nj_prep_group {
    uint64_t a, sfa, ws; /* the group's tokens, their scales, its fp16 tokens in the workspace */
    int32_t k, prep0;    /* K, the group's first prep item */
} nj_prep_group;
typedef struct nj_prep_tab {
    int32_t num_groups, items, pad[2];
    nj_prep_group g[NJ_PREP_TAB_GROUPS];
} nj_prep_tab;
_Static_assert(sizeof(nj_prep_group) == 32 && sizeof(nj_prep_tab) == 16 + 32 * 32,
               "nj_prep_tab must match PrepTab");

typedef struct fam_launch {
    unsigned num_ctas;
    unsigned threads;
    size_t dyn_smem;
    /* optional first kernel <KERNEL_NAME>_prep(blob, MoeArgs, PrepTab), launched before the
     * main one on the same stream: prep_ctas x prep_threads threads, no dynamic shared
     * memory; 0 = none */
    unsigned prep_ctas;
    unsigned prep_threads;
    nj_prep_tab prep_tab; /* its third parameter (num_groups 0: none) */
} fam_launch;

/* The second parameter of the sm_90a act16/act16p kernels and of their prep kernel
 * (templates/sm90a_act16.cuh MoeArgs, 64 bytes): all zero for the grouped call (plan_run),
 * the per-call pointers of a MoE call (src/moe.c) otherwise. */
typedef struct nj_moe_args {
    uint64_t a, sfa, c, offsets, sf_offsets, status;
    int32_t max_rows, sf_rows;
    uint64_t tiles; /* sm_90a: the plan's tile table (prep writes it, the GEMM reads it) */
} nj_moe_args;
_Static_assert(sizeof(nj_moe_args) == 64, "nj_moe_args must match MoeArgs (64 bytes)");

/* sm_90a act16: token-prep items (16 values each) per 256-thread CTA of the prep kernel, 4 per
 * thread (templates/sm90a_act16.cuh PREP_CTA_ITEMS) */
#define NJ_ACT16_PREP_CTA_ITEMS 1024

/* sm_100a: the DRAM round trip a stage ring must cover, in microseconds (an assumption, see
 * heuristic.c "sm_100a stages" and fam_sm100.c) */
#define SM100_RING_LATENCY_US 1.0

/* The cost model's per-arch terms (heuristic.c says how they combine; the values and where
 * they were measured: fam_sm90.c, fam_sm100.c). */
typedef struct fam_rates {
    double clock_ghz;
    double mma_flops_per_clk; /* per SM */
    double decode_per_clk;    /* values per clock per SM, 0 = no decode */
    double dram_bytes_per_us; /* bytes per microsecond */
    double tile_overhead_us;  /* prologue + epilogue of one tile */
    double iter_overhead_clk; /* per k-step: barriers, waits, loop (not overlapped) */
    /* sm_90a act16: the weights are decoded into registers (tokens by a prep kernel), and the
     * fp16 token tile crosses L2 once per CTA */
    double act16_decode_per_clk; /* weight values per clock per SM */
    double l2_bytes_per_clk;     /* L2 -> shared memory, per SM */
    double act16p_tile_us;       /* act16p's per-tile cost (instead of tile_overhead_us) */
    double act16_stage_clk;      /* per ring stage of one CTA: barrier wait, release, loop */
    double act16_unrolled_dec;   /* decode time factor with the ring unrolled (ring_unrolled) */
    double act16_unrolled_stage_clk; /* act16_stage_clk with the ring unrolled */
    /* sm_100a occupancy: registers per thread (ptxas), and the ring's DRAM round trip */
    int regs_per_thread;
    double ring_latency_us;
} fam_rates;

typedef struct family {
    nvfp4jit_arch arch;
    const char *arch_name;     /* "sm_90a" (NVRTC's target, messages) */
    const char *short_name;    /* "sm90a" (variant names: nvfp4jit_variant_format) */
    const char *template_name; /* "sm90a_grouped.cu" */
    /* NOTE: "a" targets are not forward compatible: an sm_90a cubin runs only on compute
     * capability 9.0, an sm_100a one only on 10.0. cc = major * 10 + minor. */
    int cc;
    int default_sms;            /* SMs of the usual part (H100/H200 132, B200 148): the
                                   heuristic's count when no device of this cc is present */
    size_t smem_block_max;      /* opt-in dynamic + static shared memory per block */
    size_t smem_sm;             /* shared memory per SM */
    int regs_sm;                /* 32-bit registers per SM */
    int threads_sm;             /* resident threads per SM */
    const fam_rates *rates;     /* the cost model's terms */
    /* The heuristic leaves out variants whose device workspace (workspace_size) would exceed
     * this many bytes for the set (0: no limit); forced or tuned, they are still planned. */
    double heur_max_workspace;
    /* Validity rules. @return 1 if valid, else 0 with the broken rule in why. */
    int (*check)(const nvfp4jit_variant *v, char *why, size_t why_n);
    int (*threads)(const nvfp4jit_variant *v);
    size_t (*dyn_smem)(const nvfp4jit_variant *v);
    /* Template parameters beyond the common ones (ARCH, BLOCK_M, BLOCK_N, BLOCK_K, STAGES,
     * SWAP_AB, THREADS, DYN_SMEM, KERNEL_NAME, which the caller sets). @return count. */
    int (*params)(const nvfp4jit_variant *v, tmpl_param *p, int cap);
    /* Enumerate the variant space: calls emit for every candidate (valid or not; the caller
     * filters with check). */
    void (*enumerate)(void (*emit)(const nvfp4jit_variant *v, void *u), void *u);
    /* Bytes of the device blob for this problem set. */
    size_t (*blob_size)(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n);
    /* Bytes of device workspace the kernels need for this problem set (NULL or 0: none). The
     * plan owns it (grow-only, freed with the plan); blob_fill gets its address. */
    size_t (*workspace_size)(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n);
    /* Fill the host copy of the blob. dev is the device address the blob will have (for
     * pointers inside it). May call the driver (tensor maps). Sets *launch.
     * @return NVFP4JIT_OK or an error recorded on ctx. */
    nvfp4jit_status (*blob_fill)(nvfp4jit_ctx *ctx, const drv_api *api,
                                 const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n,
                                 unsigned char *host, uint64_t dev, uint64_t workspace,
                                 fam_launch *launch);
    /* Tensor-memory columns one CTA allocates (tcgen05.alloc), or NULL where the arch has
     * no tensor memory. The heuristic's occupancy model reads it. */
    int (*tmem_cols)(const nvfp4jit_variant *v);
    /* Limits of a variant that depend on the problem set (NULL: none), the one check of
     * them: the heuristic leaves out the variants a set exceeds, and nvfp4jit_plan_create
     * refuses a forced or tuned one before anything is compiled or allocated (blob_fill
     * checks again at launch only as a guard). @return 1 if the set fits, else 0 with the
     * reason in why (why_n may be 0: no reason wanted). */
    int (*fits)(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, char *why,
                size_t why_n);
    /* CTAs of v the kernel is compiled to fit on one SM (its __launch_bounds__), which the
     * heuristic's occupancy model uses; NULL or 0: the heuristic's own estimate. */
    int (*ctas_per_sm)(const nvfp4jit_variant *v);
    /* 1 if v's k-loop ring is unrolled with constant slots (sm_90a act16: RING_UNROLL),
     * which the heuristic charges less per stage and per decoded block; NULL: never */
    int (*ring_unrolled)(const nvfp4jit_variant *v);
} family;

/* fam_sm90.c: RING_UNROLL of an sm_90a variant (1: act16 or act16p that ptxas keeps
 * pipelined unrolled on the toolchain the tables were made with) */
int sm90_ring_unrolled(const nvfp4jit_variant *v);
/* 1 if v's tile and stages are in the table of variants whose unrolled ring degrades: the
 * act16 one (act16p_only 0, which act16p uses too) or act16p's own (1); compile.ring_table */
int sm90_ring_listed(const nvfp4jit_variant *v, int act16p_only);
/* act16's wide form (BLOCK_M 256, BLOCK_N > 64: two consumer warpgroups of 128 rows, a producer
 * warpgroup, setmaxnreg; src/fam_sm90.c act16_wide) */
int sm90_act16_wide(const nvfp4jit_variant *v);

/* act16sk's static schedule, data-parallel waves then stream-K (fam_sm90.c, where it is
 * described): into units, 8 int32 per unit {group, weight tile, token tile, s0, s1, nfix,
 * writer, 0} (room for every tile plus one per CTA), first[grid + 1] (CTA c runs units
 * first[c] .. first[c+1]-1); *grid = min(ctas, tiles) where no tile is split (a split would
 * save too little), else ctas when the set has two waves of tiles or more, else min(ctas, the
 * set's stages). tests/test_variant.c checks its invariants. */
void sm90_sk_schedule(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n,
                      unsigned ctas, unsigned char *units, int32_t *first, size_t *num_units,
                      unsigned *grid);
/* 1 if sm90_sk_schedule splits tiles of the set on ctas CTAs (0: it runs act16p's schedule) */
int sm90_sk_splits(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, unsigned ctas);

/* Device-blob and shared-memory layouts reach the template as integer parameters named
 * BLOB_* and SMEM_* (fam_sm90.c, fam_sm100.c list them); the template uses them and
 * static_asserts its structs and its own derivation against them. */

/* The MoE entry of the sm_90a act16/act16p kernels (fam_sm90.c; layout there). */
size_t sm90_moe_blob_size(int experts);
size_t sm90_moe_dyn_smem(const nvfp4jit_variant *v, int experts);
/* @return 1 if v is act16/act16p and its MoE kernel fits shared memory with `experts`. */
int sm90_moe_fits(const nvfp4jit_variant *v, int experts);
int64_t sm90_moe_tiles_bound(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows);
size_t sm90_moe_table_bytes(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows);
nvfp4jit_status sm90_moe_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                   const nvfp4jit_variant *v, int experts, int64_t n, int64_t k,
                                   const uint64_t *b, const uint64_t *sfb, int64_t max_rows,
                                   uint64_t ws, unsigned char *host);

/* The MoE entry <KERNEL_NAME>_moe(blob, MoeArgs, __grid_constant__ CUtensorMap tokens) of
 * the sm_100a family (fam_sm100.c; layout there): the plan's constant blob, the per-call
 * token map, and the grid for the worst case of (weights, max rows). */
size_t sm100_moe_blob_size(int experts);
nvfp4jit_status sm100_moe_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, int experts, int64_t n, int64_t k,
                                    const uint64_t *b, const uint64_t *sfb, unsigned char *host);
nvfp4jit_status sm100_moe_token_map(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, uint64_t a, int64_t max_rows,
                                    int64_t k, void *map);
int64_t sm100_moe_grid(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows);
unsigned sm100_moe_threads(const nvfp4jit_variant *v);

extern const family fam_sm90a;
/* Test hook: when > 0, act16p's grouped grid has at most this many CTAs (act16sk's: this
 * many, up to its slots) (each runs many tiles,
 * so the ring's padding and phases run on across tiles; tests/test_gpu.c). */
extern int sm90_test_persist_ctas;
extern const family fam_sm100a;

/* The family table (src/arch.c). @return the family of an arch, or NULL. */
const family *fam_get(nvfp4jit_arch arch);
/* The family whose short name ("sm90a") followed by ':' begins s (a variant name), with
 * *len = that prefix's length; or NULL. */
const family *fam_by_short_name(const char *s, size_t *len);
/* @return the family whose cubins run on compute capability cc (major*10+minor), or NULL. */
const family *fam_for_cc(int cc);
/* The SM count the heuristic models for f: the device's, when a device is present (the
 * current CUDA context's device, else device 0; no context is created) and runs f's code
 * (its compute capability is f->cc), else f->default_sms. Asks the driver each time: the
 * answer does not depend on whether anything was launched before. */
int fam_model_sms(const family *f);

#endif
