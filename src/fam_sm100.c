/* fam_sm100.c - the sm_100a family (templates/sm100a_grouped.cu), grown from the seed.
 * COMPILED AND INSPECTED ONLY: no Blackwell GPU was available; the dispatch below has never
 * launched. plan_run refuses it on anything but a compute-capability 10.0 device.
 *
 * Blob layout (the structs below; the template static_asserts its own against the BLOB_*
 * parameters sm100_params passes):
 *   64-byte header {int num_tiles, num_groups, 0, 0; u64 maps_off, tiles_off, groups_off, 0..}
 *   groups: num_groups x 32 bytes {u64 c, sfa, sfb; int m, n}
 *   maps (64-byte aligned): 2 CUtensorMaps per group (A then B), 128 bytes each; a group with
 *        M = 0 gets none encoded (cuTensorMapEncodeTiled rejects zero dimensions)
 *   tiles: num_tiles x 16 bytes {int group, off_m, off_n, K}
 *
 * The MoE blob (sm100_moe_blob_fill, for the entry <KERNEL_NAME>_moe; built once per plan):
 *   the same header with num_tiles = 0, num_groups = E, k = K; groups: E x {0, 0, sfb of the
 *   expert; 0, N}; maps: per expert an unused slot (the A slot, zero) and the weight map; no
 *   tiles (the kernel schedules its tiles from the offsets). The token map is per call: a
 *   kernel parameter (sm100_moe_token_map). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"

#define SM100_SMEM_MAX 232448 /* 227 KB opt-in per block */

/* ---- the device blob (host side; the template's structs are checked against these) ---- */
typedef struct sm100_hdr {
    int32_t num_tiles, num_groups, k, pad; /* k: the MoE blob's K (0 in a grouped blob) */
    uint64_t maps_off, tiles_off, groups_off, pad2[3];
} sm100_hdr;
typedef struct sm100_group {
    uint64_t c, sfa, sfb;
    int32_t m, n;
} sm100_group;
typedef struct sm100_tile { int32_t group, off_m, off_n, k; } sm100_tile;
#define SM100_MAPS 2 /* CUtensorMaps per group: A, B */
_Static_assert(sizeof(sm100_hdr) == 64 && sizeof(sm100_group) == 32 && sizeof(sm100_tile) == 16,
               "sm_100a blob layout");
_Static_assert(sizeof(CUtensorMap) == 128, "a tensor map is 128 bytes");

/* ---- the shared-memory layout: STAGES stages of {A, B, SFA, SFB} from the 1024-byte aligned
 * base (the template gets the sizes as SMEM_* parameters) ---- */
typedef struct sm100_smem { size_t a, b, sf, stage, end; } sm100_smem;

static void sm100_layout(const nvfp4jit_variant *v, sm100_smem *l) {
    l->a = (size_t)v->block_m * v->block_k / 2; /* 4-bit elements */
    l->b = (size_t)v->block_n * v->block_k / 2;
    l->sf = (size_t)128 * v->block_k / 16; /* BLOCK_K/64 blocks of 512 bytes (128 rows) */
    l->stage = l->a + l->b + 2 * l->sf;
    l->end = (size_t)v->stages * l->stage;
}

static size_t sm100_dyn_smem(const nvfp4jit_variant *v) {
    sm100_smem l;
    sm100_layout(v, &l);
    return l.end + 1024; /* + alignment slack */
}
static int sm100_threads(const nvfp4jit_variant *v) { return v->block_m + 64; }

/* the template gets it as TMEM_COLS (and checks it; the lint area reads the tcgen05.alloc
 * immediate) */
static int tmem_cols(const nvfp4jit_variant *v) {
    int need = v->block_n + 8 * (v->block_k / 64); /* accumulator + SFA + SFB columns */
    int c = 32;
    while (c < need) c *= 2;
    return c;
}

static int sm100_check(const nvfp4jit_variant *v, char *why, size_t n) {
    if (v->block_m != 128) {
        snprintf(why, n, "BLOCK_M=%d: the 1-CTA tcgen05.mma with 128 tensor-memory lanes needs 128",
                 v->block_m);
        return 0;
    }
    /* MMA N for M = 128 may be 16..256 in steps of 16 (PTX ISA tcgen05.mma shapes); the scale
     * handling (one 128-row SFB block, lane offset per tile) and the epilogue are proven for
     * tiles that divide 128 rows: 64 (the seed) and 128. */
    if (v->block_n != 64 && v->block_n != 128) {
        snprintf(why, n, "BLOCK_N=%d: must be 64 or 128 (tiles that divide one 128-row scale block)",
                 v->block_n);
        return 0;
    }
    if (v->block_k != 128 && v->block_k != 256) {
        snprintf(why, n, "BLOCK_K=%d: must be 128 (64-byte swizzle) or 256 (128-byte swizzle, the seed)",
                 v->block_k);
        return 0;
    }
    if (v->stages < 2 || v->stages > 8) {
        snprintf(why, n, "STAGES=%d: must be 2..8", v->stages);
        return 0;
    }
    if (v->strategy) {
        snprintf(why, n, "strategy=%d: the sm_100a family has one strategy (0)", v->strategy);
        return 0;
    }
    if (v->swap_ab) {
        snprintf(why, n, "swap_ab: not supported by the sm_100a family");
        return 0;
    }
    if (tmem_cols(v) > 512) {
        snprintf(why, n, "needs %d tensor-memory columns (> 512)", tmem_cols(v));
        return 0;
    }
    size_t smem = sm100_dyn_smem(v);
    if (smem > SM100_SMEM_MAX) {
        snprintf(why, n, "needs %zu bytes of shared memory (> %d)", smem, SM100_SMEM_MAX);
        return 0;
    }
    return 1;
}

#define PARAM(name, value)                                                                   \
    do {                                                                                     \
        if (n < cap) p[n++] = (tmpl_param){name, 0, (long long)(value), NULL};              \
    } while (0)

/* The layouts the template reads (templates/sm100a_grouped.cu). */
static int sm100_params(const nvfp4jit_variant *v, tmpl_param *p, int cap) {
    int n = 0;
    sm100_smem l;
    sm100_layout(v, &l);
    PARAM("BLOB_HDR_BYTES", sizeof(sm100_hdr));
    PARAM("BLOB_HDR_MAPS_OFF", offsetof(sm100_hdr, maps_off));
    PARAM("BLOB_GROUP_BYTES", sizeof(sm100_group));
    PARAM("BLOB_GROUP_M", offsetof(sm100_group, m));
    PARAM("BLOB_MAP_BYTES", sizeof(CUtensorMap));
    PARAM("BLOB_GROUP_MAPS", SM100_MAPS);
    PARAM("BLOB_TILE_BYTES", sizeof(sm100_tile));
    PARAM("SMEM_A_BYTES", l.a);
    PARAM("SMEM_B_BYTES", l.b);
    PARAM("SMEM_SF_BYTES", l.sf);
    PARAM("TMEM_COLS", tmem_cols(v));
    return n;
}

static void sm100_enumerate(void (*emit)(const nvfp4jit_variant *, void *), void *u) {
    static const int bn[] = {64, 128};
    static const int bk[] = {128, 256};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 2; j++)
            for (int s = 2; s <= 8; s++) {
                nvfp4jit_variant v = {NVFP4JIT_ARCH_SM100A, 128, bn[i], bk[j], s, 0, 0};
                emit(&v, u);
            }
}

static size_t count_tiles(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n) {
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (g[i].m > 0)
            t += (size_t)((g[i].m + v->block_m - 1) / v->block_m) *
                 (size_t)((g[i].n + v->block_n - 1) / v->block_n);
    return t;
}

#define SM100_GROUP_MAPS_BYTES (SM100_MAPS * sizeof(CUtensorMap))

/* the tensor maps: after the groups, 64-byte aligned */
static size_t maps_off(size_t n) {
    return (sizeof(sm100_hdr) + sizeof(sm100_group) * n + 63) / 64 * 64;
}

static size_t sm100_blob_size(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n) {
    return maps_off(n) + SM100_GROUP_MAPS_BYTES * n + sizeof(sm100_tile) * count_tiles(v, g, n);
}

/* The tile count's limit (blob_fill checks it again as a guard). */
static int sm100_fits(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, char *why,
                      size_t why_n) {
    size_t tiles = count_tiles(v, g, n);
    if (tiles <= 0x7fffffff) return 1;
    snprintf(why, why_n, "the set needs %zu tiles of %dx%d (a grid holds at most 2^31 - 1)", tiles,
             v->block_m, v->block_n);
    return 0;
}

static nvfp4jit_status encode_map(nvfp4jit_ctx *ctx, const drv_api *api, void *map, uint64_t ptr,
                                  int64_t rows, int64_t k, int box_rows, int block_k, size_t gi,
                                  const char *which) {
    /* 4-bit elements, K innermost: dims {K, rows}, row stride K/2 bytes, box {BLOCK_K, rows of
     * the tile}; out-of-bounds rows are zero-filled. Swizzle span = BLOCK_K/2 bytes. */
    cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)(k / 2)};
    cuuint32_t box[2] = {(cuuint32_t)block_k, (cuuint32_t)box_rows};
    cuuint32_t es[2] = {1, 1};
    CUresult r = api->cuTensorMapEncodeTiled(
        (CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B, 2, (void *)(uintptr_t)ptr, dims,
        strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
        block_k == 256 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "group %zu: cuTensorMapEncodeTiled (%s)", gi, which);
        return drv_fail(ctx, r, what);
    }
    return NVFP4JIT_OK;
}

static nvfp4jit_status sm100_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                       const nvfp4jit_variant *v, const nvfp4jit_group *g,
                                       size_t n, unsigned char *host, uint64_t dev,
                                       uint64_t workspace, fam_launch *launch) {
    (void)dev;
    (void)workspace;
    size_t tiles = count_tiles(v, g, n);
    NJ_RETURN_IF(ctx, tiles > 0x7fffffff, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "problem set needs %zu tiles (more than a grid holds)", tiles);
    size_t mo = maps_off(n), to = mo + SM100_GROUP_MAPS_BYTES * n;
    memset(host, 0, to);
    sm100_hdr hdr = {(int32_t)tiles, (int32_t)n, 0, 0, mo, to, sizeof hdr, {0}};
    memcpy(host, &hdr, sizeof hdr);
    unsigned char *t = host + to;
    for (size_t i = 0; i < n; i++) {
        sm100_group d = {g[i].c, g[i].sfa, g[i].sfb, (int32_t)g[i].m, (int32_t)g[i].n};
        memcpy(host + sizeof hdr + sizeof d * i, &d, sizeof d);
        if (g[i].m == 0) continue;
        unsigned char *maps = host + mo + SM100_GROUP_MAPS_BYTES * i;
        NJ_FORWARD_IF_ERROR(encode_map(ctx, api, maps, g[i].a, g[i].m, g[i].k, v->block_m,
                                       v->block_k, i, "A"));
        NJ_FORWARD_IF_ERROR(encode_map(ctx, api, maps + sizeof(CUtensorMap), g[i].b, g[i].n,
                                       g[i].k, v->block_n, v->block_k, i, "B"));
        int tm = (int)((g[i].m + v->block_m - 1) / v->block_m);
        int tn = (int)((g[i].n + v->block_n - 1) / v->block_n);
        for (int b = 0; b < tn; b++) /* weight (B) tile outer: CTAs side by side share it */
            for (int a = 0; a < tm; a++) {
                sm100_tile bt = {(int32_t)i, a * v->block_m, b * v->block_n, (int32_t)g[i].k};
                memcpy(t, &bt, sizeof bt);
                t += sizeof bt;
            }
    }
    launch->num_ctas = (unsigned)tiles;
    launch->threads = (unsigned)sm100_threads(v);
    launch->dyn_smem = sm100_dyn_smem(v);
    return NVFP4JIT_OK;
}

/* ---- the MoE entry (src/moe.c) ---------------------------------------------------------- */

size_t sm100_moe_blob_size(int experts) {
    return maps_off((size_t)experts) + SM100_GROUP_MAPS_BYTES * (size_t)experts;
}

nvfp4jit_status sm100_moe_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, int experts, int64_t n, int64_t k,
                                    const uint64_t *b, const uint64_t *sfb, unsigned char *host) {
    size_t E = (size_t)experts, mo = maps_off(E);
    memset(host, 0, sm100_moe_blob_size(experts));
    sm100_hdr hdr = {0, (int32_t)experts, (int32_t)k, 0, mo, 0, sizeof hdr, {0}};
    memcpy(host, &hdr, sizeof hdr);
    for (size_t e = 0; e < E; e++) {
        sm100_group d = {0, 0, sfb[e], 0, (int32_t)n};
        memcpy(host + sizeof hdr + sizeof d * e, &d, sizeof d);
        NJ_FORWARD_IF_ERROR(encode_map(ctx, api, host + mo + SM100_GROUP_MAPS_BYTES * e +
                                       sizeof(CUtensorMap), b[e], n, k, v->block_n, v->block_k,
                                       e, "B"));
    }
    return NVFP4JIT_OK;
}

nvfp4jit_status sm100_moe_token_map(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, uint64_t a, int64_t max_rows,
                                    int64_t k, void *map) {
    /* the grouped A map over the whole token tensor: rows past max_rows are zero-filled,
     * rows of the next expert are loaded and never stored (the kernel masks on the expert's
     * row count) */
    return encode_map(ctx, api, map, a, max_rows, k, v->block_m, v->block_k, 0, "A, tokens");
}

int64_t sm100_moe_grid(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows) {
    /* every expert adds at most one partial token tile, and only a non-empty one */
    int64_t partial = experts < max_rows ? experts : max_rows;
    return (n + v->block_n - 1) / v->block_n * ((max_rows + v->block_m - 1) / v->block_m + partial);
}

unsigned sm100_moe_threads(const nvfp4jit_variant *v) { return (unsigned)sm100_threads(v); }

/* ---- the cost model's terms (heuristic.c says how they combine) ----
 * B200 datasheet-level numbers (no B200 was lent): fp4 tensor cores (no decode), 7 TB/s.
 * regs_per_thread: ptxas reports 70 for 128x64x256:s6 (review 2026-12-03).
 * NOTE: ring_latency_us (SM100_RING_LATENCY_US) is an assumption, not a measurement: about
 * 0.5-0.7 us of unloaded HBM latency on Hopper-class parts (published pointer-chase
 * microbenchmarks) plus queueing at full bandwidth. With 1 us, 128x128x256 (0.32 us per
 * k-step) needs about 4-5 stage buffers per SM in flight: s2 (2 CTAs x 2) falls short, s3
 * (2 CTAs x 3) and s5..s6 (1 CTA) cover it. Replace it with a B200 measurement when one
 * exists. */
static const fam_rates sm100_rates = {
    .clock_ghz = 1.9,
    .mma_flops_per_clk = 16384.0,
    .decode_per_clk = 0.0,
    .dram_bytes_per_us = 7.0e6,
    .tile_overhead_us = 1.0,
    .iter_overhead_clk = 100.0,
    .act16_decode_per_clk = 0,
    .l2_bytes_per_clk = 0,
    .act16p_tile_us = 0,
    .regs_per_thread = 72,
    .ring_latency_us = SM100_RING_LATENCY_US,
};

const family fam_sm100a = {
    .arch = NVFP4JIT_ARCH_SM100A,
    .arch_name = "sm_100a",
    .short_name = "sm100a",
    .template_name = "sm100a_grouped.cu",
    .cc = 100,
    .default_sms = 148, /* B200 */
    .smem_block_max = SM100_SMEM_MAX,
    .smem_sm = 233472, /* 228 KB per SM */
    .regs_sm = 65536,
    .threads_sm = 2048,
    .rates = &sm100_rates,
    .heur_max_workspace = 0,
    .check = sm100_check,
    .threads = sm100_threads,
    .dyn_smem = sm100_dyn_smem,
    .params = sm100_params,
    .enumerate = sm100_enumerate,
    .blob_size = sm100_blob_size,
    .workspace_size = NULL,
    .blob_fill = sm100_blob_fill,
    .tmem_cols = tmem_cols,
    .fits = sm100_fits,
};
