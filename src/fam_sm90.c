/* fam_sm90.c - the sm_90a family (templates/sm90a_grouped.cu): what runs it, its limits and
 * cost-model terms, validity rules, template parameters, the shared-memory layout and the
 * device blob its kernel reads.
 *
 * Blob layout v1 (the structs below; the template static_asserts its own against the
 * BLOB_* parameters sm90_params passes):
 *   16 bytes header {int num_tiles, num_groups, 0, 0}
 *   num_groups x 64 bytes {u64 a, b, sfa, sfb, c; int m, n, k, pad[3]}
 *   num_tiles x 16 bytes {int group, tx, ty, 0}
 * One CTA per tile; tiles are ordered weight-tile outer (B's tile index outermost) so CTAs
 * that run at the same time read the same weight tile through L2. Groups with M = 0 get no
 * tiles and their pointers are never read.
 *
 * Strategy act16 (templates/sm90a_act16.cuh) has its own blob:
 *   64 bytes header {int num_tiles, num_groups, prep_items, 0; u64 maps_off, tiles_off,
 *                    groups_off, 0, 0, 0}
 *   groups: num_groups x 64 bytes {u64 a, b, sfa, sfb, c, ws; int m, n, k, prep0}
 *   maps (64-byte aligned): 3 CUtensorMaps per group (fp16 tokens in the workspace, packed
 *        weights, weight scales), 128 bytes each; none for M = 0 (cuTensorMapEncodeTiled
 *        rejects 0 rows)
 *   tiles: num_tiles x 16 bytes {int group, weight tile, token tile, 0}, weight tile outer
 *   act16sk instead: num_tiles units of 32 bytes {group, weight tile, token tile, s0, s1,
 *   nfix, writer, 0} (stages s0 .. s1-1 of the tile), then sk_ctas + 1 ints at sk_first_off
 *   (CTA c runs units first[c] .. first[c+1]-1); its workspace holds, after the tokens
 *   (256-byte aligned), one fp32 BLOCK_M x BLOCK_N partial slot per CTA and one int flag per
 *   CTA (sm90_sk_schedule)
 * The workspace holds every group's tokens as fp16, M x K each (k permuted inside each 64-k
 * block, see the template); prep item i of group g (16 values) is prep0(g) + row*K/16 + j. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"

#define SM90_SMEM_MAX 232448 /* 227 KB: the opt-in per-block maximum on sm_90 */
/* (these are the table's fields below: read them from fam_sm90a elsewhere) */
#define SM90_SMEM_SM 233472  /* 228 KB of shared memory per SM */
#define SM90_REGS_MAX 65536  /* registers per SM */

/* ---- the device blob (host side; the template's structs are checked against these) ---- */
typedef struct dual_hdr { int32_t num_tiles, num_groups, pad0, pad1; } dual_hdr;
typedef struct dual_group {
    uint64_t a, b, sfa, sfb, c;
    int32_t m, n, k, pad[3];
} dual_group;
typedef struct blob_tile { int32_t group, tx, ty, pad; } blob_tile;
_Static_assert(sizeof(dual_hdr) == 16 && sizeof(dual_group) == 64 && sizeof(blob_tile) == 16,
               "blob layout v1");
typedef struct act16_hdr {
    int32_t num_tiles, num_groups, prep_items, sk_ctas;
    uint64_t maps_off, tiles_off, groups_off;
    uint64_t sk_first_off, sk_part, sk_flags; /* act16sk (0 otherwise), see sm90_sk_schedule */
} act16_hdr;
/* act16sk: a unit is stages s0 .. s1-1 of a tile (see sm90_sk_schedule) */
typedef struct blob_unit { int32_t group, tx, ty, s0, s1, nfix, writer, pad; } blob_unit;
_Static_assert(sizeof(blob_unit) == 32, "act16sk unit");
typedef struct act16_group {
    uint64_t a, b, sfa, sfb, c, ws;
    int32_t m, n, k, prep0;
} act16_group;
#define ACT16_MAPS 3 /* CUtensorMaps per group: fp16 tokens, packed weights, weight scales */
_Static_assert(sizeof(act16_hdr) == 64 && sizeof(act16_group) == 64, "act16 blob layout");
/* NOTE: cuTensorMapEncodeTiled writes 128 bytes and wants them 64-byte aligned */
_Static_assert(sizeof(CUtensorMap) == 128, "a tensor map is 128 bytes");

/* ---- the shared-memory layouts (the template gets them as SMEM_* parameters) ---- */
typedef struct dual_smem {
    size_t f_x, f_y;          /* fp16 tiles of X and Y: 2 buffers of f_x + f_y at 0 */
    size_t raw_x, raw_y, raw_sf; /* one stage of packed X, Y rows and their scale blocks */
    size_t raw_off;           /* the cp.async ring of STAGES stages */
    size_t end;
} dual_smem;
typedef struct act16_smem {
    size_t tok, w, sf;        /* one stage: fp16 tokens, packed weights, weight scales */
    size_t w_off, sf_off;     /* rings (tokens at 0) */
    size_t bar_off;           /* 2 x STAGES mbarriers */
    size_t tile_of;           /* act16p: the tile each stage carries (STAGES ints) */
    size_t moe_off;           /* the MoE entry's tables: tiles, offsets, scale offsets, counts
                               * (4 (4 E + 2) bytes) */
    size_t end;               /* the grouped kernel's end (= moe_off) */
} act16_smem;

static int sf_blocks(int rows) {
    if (rows % 128 == 0 || 128 % rows == 0) return (rows + 127) / 128;
    return (rows + 127) / 128 + 1; /* a tile can straddle two 128-row scale blocks */
}

/* act16's prep kernel: NJ_ACT16_PREP_CTA_ITEMS items of 16 token values per 256-thread CTA,
 * a 1-D grid whose item indices (up to the last CTA's end) are ints (act16_blob_fill) */
#define ACT16_MAX_ITEMS (0x7fffffffLL - (NJ_ACT16_PREP_CTA_ITEMS - 1))

int sm90_test_persist_ctas;

/* act16, act16p and act16sk (the same kernel; act16p and act16sk launch a persistent grid) */
static int is_act16(const nvfp4jit_variant *v) {
    return v->strategy == NVFP4JIT_STRATEGY_ACT16 || v->strategy == NVFP4JIT_STRATEGY_ACT16P ||
           v->strategy == NVFP4JIT_STRATEGY_ACT16SK;
}
static int is_persistent(const nvfp4jit_variant *v) {
    return v->strategy == NVFP4JIT_STRATEGY_ACT16P || v->strategy == NVFP4JIT_STRATEGY_ACT16SK;
}

/* 128-row scale blocks one weight tile touches: tiles start at multiples of BLOCK_M, so at an
 * offset of 0 or 64 inside a block (BLOCK_M 192: 64..255 and 0..191 both touch two) */
static int act16_sf_blocks(const nvfp4jit_variant *v) {
    int off = v->block_m % 128 ? 64 : 0;
    return (off + v->block_m + 127) / 128;
}

/* act16's wide form (issue 13 part 4): one tile per CTA at BLOCK_M 256 with more tokens than 4
 * consumer warpgroups x m64 fit registers for (BLOCK_N > 64): two consumer warpgroups of 128
 * weight rows (two m64 wgmmas each, 2 x BLOCK_N/2 accumulators per thread) and a producer
 * warpgroup that gives its registers to them with setmaxnreg, which ptxas keeps only when it
 * compiles the whole program (src/compile.c's LTO path: the WHOLE_PROGRAM parameter). 384
 * threads at one CTA per SM launch with 168 registers each (65536 / 384, a multiple of 8); the
 * producer keeps ACT16_WIDE_PRODUCER_REGS and the consumers take the rest:
 * 168 + (168 - 40) * 128 / 256 = 232. */
#define ACT16_WIDE_PRODUCER_REGS 40
static int act16_wide(const nvfp4jit_variant *v) {
    return v->strategy == NVFP4JIT_STRATEGY_ACT16 && v->block_m == 256 && v->block_n > 64;
}
int sm90_act16_wide(const nvfp4jit_variant *v) { return act16_wide(v); }
static int act16_wide_consumer_regs(void) {
    int launch = SM90_REGS_MAX / 384;
    launch -= launch % 8;
    int r = launch + (launch - ACT16_WIDE_PRODUCER_REGS) * 128 / 256;
    r -= r % 8;
    return r > 255 ? 248 : r;
}

/* Registers per thread at one CTA per SM. Each of the 4 SM sub-partitions has a quarter of the
 * register file and takes every 4th warp, so with BLOCK_M/16 consumer warps plus the producer
 * warp one sub-partition holds BLOCK_M/64 + 1 warps (ptxas reports 166 for 288 threads, not
 * 65536/288). A multiple of 8, at most 255. */
static int act16_consumer_regs(const nvfp4jit_variant *v) {
    if (act16_wide(v)) return act16_wide_consumer_regs();
    int r = SM90_REGS_MAX / 4 / 32 / (v->block_m / 64 + 1);
    r -= r % 8;
    return r > 255 ? 255 : r;
}

static size_t sm90_dyn_smem(const nvfp4jit_variant *v);

/* Registers the register rule (sm90_check) expects an act16 consumer thread to need: N/2
 * accumulators, 32 fragment registers (two k-tiles) and ~26 for the rest; act16p's tile loop a
 * few more on the wide tiles (see sm90_check). */
static int act16_need_regs(const nvfp4jit_variant *v) {
    /* (+58 rather than 56, and 8 more at BLOCK_K 128: with the bound at 72 registers for 3
     * CTAs, ptxas serialised the wgmmas of 128x32 (C7513) and 128x24x128 spilled 20 bytes;
     * compile.act16_occupancy) */
    int need = v->block_n / 2 + 58 + (v->block_k > 64 ? 8 : 0);
    /* the wide form: a second half's accumulators and its row offsets (4 registers) */
    if (act16_wide(v)) need += v->block_n / 2 + 4;
    if (is_persistent(v) && v->block_m >= 192) need += 9;
    /* act16sk's fix-up (flags, slot addresses beside the accumulators): 64x64x64:s4 spilled
     * 28 bytes at act16p's 96 registers */
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16SK) need += 8;
    return need;
}

/* act16 (one CTA per tile): the CTAs per SM the kernel is compiled for (MIN_CTAS, the second
 * argument of its __launch_bounds__): the most whose warps fit the register file at the
 * register rule's need rounded up to 8 (each of the 4 sub-partitions holds a quarter of the
 * registers and every 4th warp, as in act16_consumer_regs), whose shared memory (+1 KB
 * reserved per CTA) fits the SM and whose threads fit 2048. ptxas then caps the registers to
 * fit: 128x24 went from 79 registers (2 CTAs) to 72 (3 CTAs), decode64-up 324 -> 302 us on the
 * H200 (bench/RESULTS.md 2026-12-04). act16p the same: its persistent grid is that many CTAs
 * per SM (with one, the decode tiles ran 30-40 % slower than act16's three). */
static int sm90_ctas_per_sm(const nvfp4jit_variant *v) {
    if (!is_act16(v) || act16_wide(v)) return 1;
    int need = act16_need_regs(v), warps = (2 * v->block_m + 32) / 32;
    need = need < 72 ? 72 : (need + 7) / 8 * 8; /* (64: 64x8 spilled 4 bytes at 6 CTAs) */
    size_t smem = sm90_dyn_smem(v) + 1024;
    int o = 1;
    while ((o + 1) * warps <= 64 && (size_t)(o + 1) * smem <= SM90_SMEM_SM &&
           ((o + 1) * warps + 3) / 4 * 32 * need <= SM90_REGS_MAX / 4)
        o++;
    return o;
}

/* act16 variants whose unrolled ring (RING_UNROLL=1, templates/
 * sm90a_act16.cuh) ptxas serialises (C7511/C7512) or spills (128x32x128, 256x8x256) on NVRTC
 * 13.0, as {BLOCK_M, BLOCK_N, BLOCK_K, STAGES}: they are rendered with the ring in a
 * register, and the heuristic charges them that ring. compile.ring_table compiles each one's
 * unrolled render and a sample of the others and fails when a toolchain changes the answer;
 * a variant not listed that degrades anyway gets the same render from src/jit.c's fallback. */
static const short ring_fallback[][4] = {
    {64, 8, 128, 2}, {64, 8, 128, 3}, {64, 8, 128, 4}, {64, 8, 128, 6}, {128, 8, 128, 2},
    {128, 8, 128, 3}, {128, 8, 128, 4}, {128, 8, 128, 6}, {192, 8, 128, 2}, {192, 8, 128, 3},
    {192, 8, 128, 4}, {192, 8, 128, 6}, {128, 32, 128, 2}, {128, 32, 128, 3},
    {128, 32, 128, 4}, {128, 32, 128, 6}, {64, 48, 128, 2}, {64, 48, 128, 3},
    {128, 48, 128, 2}, {128, 48, 128, 3}, {128, 48, 128, 4}, {256, 48, 128, 2},
    {256, 48, 128, 3}, {256, 48, 128, 4}, {256, 48, 128, 6}, {64, 192, 128, 2},
    {128, 192, 128, 2}, {128, 192, 128, 3}, {64, 8, 256, 2}, {64, 8, 256, 3}, {128, 8, 256, 2},
    {128, 8, 256, 3}, {192, 8, 256, 2}, {192, 8, 256, 3}, {256, 8, 256, 2}, {256, 8, 256, 3},
    {256, 8, 256, 4}, {64, 16, 256, 2}, {64, 16, 256, 3}, {128, 16, 256, 2}, {128, 16, 256, 3},
    {128, 16, 256, 4}, {256, 16, 256, 2}, {256, 16, 256, 3}, {256, 16, 256, 4},
    {64, 24, 256, 2}, {128, 24, 256, 2}, {128, 24, 256, 3}, {256, 24, 256, 2},
    {256, 24, 256, 3}, {256, 24, 256, 4}, {64, 32, 256, 2}, {128, 32, 256, 2},
    {128, 32, 256, 3}, {256, 32, 256, 2}, {256, 32, 256, 3}, {256, 32, 256, 4},
    {128, 48, 256, 2}, {256, 48, 256, 2}, {256, 48, 256, 3}, {192, 96, 256, 2}
};

/* act16p: its unrolled ring (the tile loop and the producer's padding to slot 0 live beside
 * it) degrades on these too, besides every variant of ring_fallback: 125 serialised (C7512),
 * 24 spilled, of the 323 not in ring_fallback when the whole act16p space was compiled
 * unrolled (NVRTC 13.0, 2026-12-05; bench/RESULTS.md). Checked like ring_fallback. */
static const short ring_fallback_p[][4] = {
    {64, 8, 64, 2}, {64, 8, 64, 3}, {64, 8, 64, 4}, {64, 8, 64, 6}, {64, 8, 64, 8},
    {128, 8, 64, 2}, {128, 8, 64, 3}, {128, 8, 64, 4}, {128, 8, 64, 6}, {128, 8, 64, 8},
    {192, 8, 64, 2}, {192, 8, 64, 3}, {192, 8, 64, 4}, {192, 8, 64, 6}, {192, 8, 64, 8},
    {64, 16, 64, 2}, {64, 16, 64, 3}, {64, 16, 64, 4}, {64, 16, 64, 6}, {64, 16, 64, 8},
    {128, 16, 64, 2}, {128, 16, 64, 3}, {128, 16, 64, 4}, {128, 16, 64, 6}, {128, 16, 64, 8},
    {64, 24, 64, 2}, {64, 24, 64, 3}, {64, 24, 64, 4}, {64, 24, 64, 6}, {128, 24, 64, 2},
    {128, 24, 64, 3}, {128, 24, 64, 4}, {128, 24, 64, 6}, {128, 24, 64, 8}, {64, 32, 64, 3},
    {64, 32, 64, 6}, {128, 32, 64, 3}, {128, 32, 64, 6}, {256, 32, 64, 3}, {256, 32, 64, 6},
    {64, 48, 64, 2}, {64, 48, 64, 3}, {64, 48, 64, 4}, {64, 48, 64, 6}, {128, 48, 64, 2},
    {128, 48, 64, 3}, {128, 48, 64, 4}, {128, 48, 64, 6}, {128, 48, 64, 8}, {256, 48, 64, 2},
    {256, 48, 64, 3}, {256, 48, 64, 4}, {256, 48, 64, 6}, {256, 48, 64, 8}, {64, 64, 64, 2},
    {64, 64, 64, 3}, {64, 64, 64, 4}, {128, 64, 64, 2}, {128, 64, 64, 3}, {128, 64, 64, 4},
    {128, 64, 64, 6}, {128, 64, 64, 8}, {64, 96, 64, 3}, {192, 96, 64, 3}, {192, 96, 64, 6},
    {64, 128, 64, 2}, {64, 128, 64, 3}, {64, 192, 64, 2}, {64, 192, 64, 3}, {64, 192, 64, 4},
    {128, 192, 64, 2}, {128, 192, 64, 3}, {128, 192, 64, 4}, {128, 192, 64, 6}, {128, 8, 128, 8},
    {256, 8, 128, 2}, {256, 8, 128, 3}, {256, 8, 128, 4}, {256, 8, 128, 6}, {256, 8, 128, 8},
    {64, 16, 128, 2}, {64, 16, 128, 3}, {64, 16, 128, 4}, {64, 16, 128, 6}, {128, 16, 128, 2},
    {128, 16, 128, 3}, {128, 16, 128, 4}, {128, 16, 128, 6}, {128, 16, 128, 8}, {256, 16, 128, 2},
    {256, 16, 128, 3}, {256, 16, 128, 4}, {256, 16, 128, 6}, {256, 16, 128, 8}, {64, 24, 128, 2},
    {64, 24, 128, 3}, {64, 24, 128, 4}, {128, 24, 128, 2}, {128, 24, 128, 3}, {128, 24, 128, 4},
    {128, 24, 128, 6}, {256, 24, 128, 2}, {256, 24, 128, 3}, {256, 24, 128, 4}, {256, 24, 128, 6},
    {256, 24, 128, 8}, {64, 32, 128, 2}, {64, 32, 128, 3}, {64, 32, 128, 4}, {256, 32, 128, 2},
    {256, 32, 128, 3}, {256, 32, 128, 4}, {256, 32, 128, 6}, {256, 32, 128, 8}, {64, 64, 128, 2},
    {64, 64, 128, 3}, {192, 64, 128, 2}, {192, 64, 128, 3}, {192, 64, 128, 4}, {192, 64, 128, 6},
    {64, 96, 128, 2}, {192, 96, 128, 2}, {192, 96, 128, 3}, {192, 96, 128, 4}, {64, 8, 256, 4},
    {128, 8, 256, 4}, {192, 8, 256, 4}, {192, 8, 256, 6}, {64, 16, 256, 4}, {192, 16, 256, 2},
    {192, 16, 256, 3}, {192, 16, 256, 4}, {192, 16, 256, 6}, {64, 24, 256, 3}, {192, 24, 256, 2},
    {192, 24, 256, 3}, {192, 24, 256, 4}, {192, 32, 256, 2}, {192, 32, 256, 3}, {192, 32, 256, 4},
    {64, 48, 256, 2}, {192, 48, 256, 2}, {192, 48, 256, 3}, {192, 48, 256, 4}, {192, 64, 256, 2},
    {192, 64, 256, 3}, {128, 96, 256, 2}, {128, 96, 256, 3}, {128, 128, 256, 2}
};

static int ring_listed(const short (*t)[4], size_t n, const nvfp4jit_variant *v) {
    for (size_t i = 0; i < n; i++)
        if (t[i][0] == v->block_m && t[i][1] == v->block_n && t[i][2] == v->block_k &&
            t[i][3] == v->stages)
            return 1;
    return 0;
}

int sm90_ring_listed(const nvfp4jit_variant *v, int act16p_only) {
    if (act16p_only) return ring_listed(ring_fallback_p, sizeof ring_fallback_p / sizeof ring_fallback_p[0], v);
    return ring_listed(ring_fallback, sizeof ring_fallback / sizeof ring_fallback[0], v);
}

int sm90_ring_unrolled(const nvfp4jit_variant *v) {
    if (v->arch != NVFP4JIT_ARCH_SM90A || !is_act16(v)) return 0;
    if (sm90_ring_listed(v, 0)) return 0;
    return !is_persistent(v) || !sm90_ring_listed(v, 1);
}

/* Offsets from the kernel's 1024-byte aligned base (the launch asks for 1024 bytes more:
 * the dynamic base is only 16-byte aligned, see DESIGN.md "Static shared memory"). */
static void dual_layout(const nvfp4jit_variant *v, dual_smem *l) {
    size_t ksub = (size_t)v->block_k / 64;
    l->f_x = (size_t)v->block_m * v->block_k * 2;
    l->f_y = (size_t)v->block_n * v->block_k * 2;
    l->raw_x = (size_t)v->block_m * v->block_k / 2;
    l->raw_y = (size_t)v->block_n * v->block_k / 2;
    l->raw_sf = (size_t)(sf_blocks(v->block_m) + sf_blocks(v->block_n)) * ksub * 512;
    l->raw_off = 2 * (l->f_x + l->f_y);
    l->end = l->raw_off + (size_t)v->stages * (l->raw_x + l->raw_y + l->raw_sf);
}

static void act16_layout(const nvfp4jit_variant *v, act16_smem *l) {
    size_t st = (size_t)v->stages, ksub = (size_t)v->block_k / 64; /* 64-k blocks per stage */
    l->tok = ksub * v->block_n * 128; /* per 64-k block: BLOCK_N rows x 64 fp16, 128B-swizzled */
    l->w = (size_t)v->block_m * v->block_k / 2; /* BLOCK_M rows x BLOCK_K packed e2m1 */
    l->sf = ksub * act16_sf_blocks(v) * 512;
    l->w_off = st * l->tok;
    l->sf_off = l->w_off + st * l->w;
    l->bar_off = l->sf_off + st * l->sf;
    l->tile_of = l->bar_off + 16 * st;
    l->moe_off = l->tile_of + 4 * st;
    l->end = l->moe_off;
}

static size_t sm90_dyn_smem(const nvfp4jit_variant *v) {
    if (is_act16(v)) {
        act16_smem l;
        act16_layout(v, &l);
        return l.end + 1024; /* + slack for 1024-byte alignment */
    }
    dual_smem l;
    dual_layout(v, &l);
    return l.end + 1024; /* + slack for 1024-byte alignment */
}

static int sm90_threads(const nvfp4jit_variant *v) {
    /* act16: one consumer warpgroup per 64 weight rows + one producer warp; the wide form: two
     * consumer warpgroups of 128 rows + a producer warpgroup */
    if (act16_wide(v)) return 384;
    return is_act16(v) ? 2 * v->block_m + 32 : 2 * v->block_m;
}

static int sm90_check(const nvfp4jit_variant *v, char *why, size_t n) {
    int act16 = is_act16(v);
    if (v->block_m != 64 && v->block_m != 128 && v->block_m != 256 &&
        !(act16 && v->block_m == 192)) {
        snprintf(why, n, "BLOCK_M=%d: must be 64, 128 or 256, or 192 with act16 (one m64 "
                 "wgmma per warpgroup)", v->block_m);
        return 0;
    }
    /* PTX ISA wgmma .f16 shapes: m64nNk16 with N a multiple of 8 in 8..256 */
    if (v->block_n < 8 || v->block_n > 256 || v->block_n % 8) {
        snprintf(why, n, "BLOCK_N=%d: wgmma m64nNk16 needs N a multiple of 8 in 8..256",
                 v->block_n);
        return 0;
    }
    if (v->block_k != 64 && v->block_k != 128 && !(v->block_k == 256 && is_act16(v))) {
        snprintf(why, n, "BLOCK_K=%d: must be 64 or 128 (whole 64-k scale blocks), or 256 with "
                 "act16", v->block_k);
        return 0;
    }
    if (v->stages < 2 || v->stages > 8) {
        snprintf(why, n, "STAGES=%d: must be 2..8", v->stages);
        return 0;
    }
    if (v->swap_ab != 0 && v->swap_ab != 1) {
        snprintf(why, n, "swap_ab=%d: must be 0 or 1", v->swap_ab);
        return 0;
    }
    if (v->strategy != NVFP4JIT_STRATEGY_DUAL && !is_act16(v)) {
        snprintf(why, n, "strategy=%d: must be 0 (dual), 1 (act16), 2 (act16p) or 3 (act16sk)",
                 v->strategy);
        return 0;
    }
    if (is_act16(v)) {
        if (!v->swap_ab) {
            snprintf(why, n, "act16 puts the weights on wgmma's M side: needs swap_ab = 1");
            return 0;
        }
        if (v->block_k != 64 && v->block_k != 128 && v->block_k != 256) {
            snprintf(why, n, "BLOCK_K=%d: act16 needs 64, 128 or 256 (one, two or four 64-k "
                     "blocks per stage)", v->block_k);
            return 0;
        }
        size_t smem = sm90_dyn_smem(v);
        if (smem > SM90_SMEM_MAX) {
            snprintf(why, n, "needs %zu bytes of shared memory (> %d)", smem, SM90_SMEM_MAX);
            return 0;
        }
        /* consumer thread: N/2 accumulators, 32 fragment registers (two k-tiles) and ~24 for
         * the rest (ptxas fits 256x64 in 96 and 128x192 in 164 without spilling); act16p's
         * tile loop needs a few more: with them 192x128 spilled 4 bytes at 128 registers, the
         * only act16p variant that spilled when all were compiled (2026-12-03); with the MoE
         * entry's tile table (issue 12) 256x64 act16p spilled 12 bytes too, so BLOCK_M 256
         * gets the same margin */
        /* the wide form stores C through its idle ring (templates/sm90a_act16.cuh C_STAGE):
         * its direct stores of 2 x N/2 accumulators spilled (256x128x64:s2, 8 bytes, both
         * renders of the ring; 2026-12-08) */
        if (act16_wide(v)) {
            act16_smem l;
            act16_layout(v, &l);
            size_t staged = (size_t)v->block_n * (2 * (size_t)v->block_m + 16);
            if (staged > l.bar_off) {
                snprintf(why, n, "BLOCK_M=256 x BLOCK_N=%d (two consumer warpgroups of 128 rows) "
                         "stages C in its ring: needs %zu bytes, %d stages give %zu", v->block_n,
                         staged, v->stages, l.bar_off);
                return 0;
            }
        }
        int need = act16_need_regs(v), have = act16_consumer_regs(v);
        if (need > have) {
            snprintf(why, n,
                     "needs ~%d registers per consumer thread (%d accumulators), %d consumer "
                     "warpgroups allow %d%s",
                     need, act16_wide(v) ? v->block_n : v->block_n / 2,
                     act16_wide(v) ? 2 : v->block_m / 64, have,
                     act16_wide(v) ? " (two halves of 128 rows, the producer's registers given "
                                     "to them)" : "");
            return 0;
        }
        return 1;
    }
    size_t smem = sm90_dyn_smem(v);
    if (smem > SM90_SMEM_MAX) {
        snprintf(why, n, "needs %zu bytes of shared memory (> %d)", smem, SM90_SMEM_MAX);
        return 0;
    }
    /* Registers per thread: N/2 f32 accumulators, the addressing the kernel hoists out of
     * its k loop (4 per decode item, 3 per copied chunk) and ~40 for the rest, must fit the
     * register file at one CTA per SM and 255 per thread (ptxas spills otherwise). */
    int threads = sm90_threads(v);
    int items = ((v->block_m + v->block_n) * (v->block_k / 16) + threads - 1) / threads;
    int chunks = ((v->block_m + v->block_n) * (v->block_k / 32) + threads - 1) / threads;
    int need = v->block_n / 2 + 4 * items + 3 * chunks + 40;
    /* Measured (every variant compiled, 2026-12-02): more than 8 hoisted decode items per
     * thread spills at 128 threads, so the rule keeps to at most 8. */
    if (items > 8) {
        snprintf(why, n, "%d decode items per thread (> 8: the hoisted addressing spills)", items);
        return 0;
    }
    int have = SM90_REGS_MAX / threads;
    if (have > 255) have = 255;
    if (need > have) {
        snprintf(why, n, "needs ~%d registers per thread (%d accumulators), %d threads allow %d",
                 need, v->block_n / 2, threads, have);
        return 0;
    }
    return 1;
}

#define PARAM(name, value)                                                                   \
    do {                                                                                     \
        if (n < cap) p[n++] = (tmpl_param){name, 0, (long long)(value), NULL};              \
    } while (0)

/* The layouts the template reads (templates/sm90a_grouped.cu, sm90a_act16.cuh). */
static int sm90_params(const nvfp4jit_variant *v, tmpl_param *p, int cap) {
    int n = 0;
    if (is_act16(v)) {
        act16_smem l;
        act16_layout(v, &l);
        PARAM("BLOB_HDR_BYTES", sizeof(act16_hdr));
        PARAM("BLOB_GROUP_BYTES", sizeof(act16_group));
        PARAM("BLOB_GROUP_M", offsetof(act16_group, m));
        PARAM("BLOB_GROUP_WS", offsetof(act16_group, ws));
        PARAM("BLOB_HDR_MAPS_OFF", offsetof(act16_hdr, maps_off));
        PARAM("BLOB_MAP_BYTES", sizeof(CUtensorMap));
        PARAM("BLOB_GROUP_MAPS", ACT16_MAPS);
        PARAM("BLOB_TILE_BYTES", sizeof(blob_tile));
        PARAM("BLOB_UNIT_BYTES", sizeof(blob_unit));
        PARAM("BLOB_HDR_SK_FLAGS", offsetof(act16_hdr, sk_flags));
        PARAM("MOE_ARGS_BYTES", sizeof(nj_moe_args));
        PARAM("PREP_CTA_ITEMS", NJ_ACT16_PREP_CTA_ITEMS);
        PARAM("PREP_TAB_GROUPS", NJ_PREP_TAB_GROUPS);
        PARAM("PREP_TAB_BYTES", sizeof(nj_prep_tab));
        PARAM("MIN_CTAS", sm90_ctas_per_sm(v));
        PARAM("CW_ROWS", act16_wide(v) ? 128 : 64);
        PARAM("PRODUCER_REGS", act16_wide(v) ? ACT16_WIDE_PRODUCER_REGS : 0);
        PARAM("CONSUMER_REGS", act16_wide(v) ? act16_wide_consumer_regs() : 0);
        /* src/jit.c: compiled whole-program (NVRTC -dlto, nvJitLink -lto) where 1 */
        PARAM("WHOLE_PROGRAM", act16_wide(v));
        /* the ring unrolled with constant slots (act16 not listed in ring_fallback):
         * src/jit.c falls back to 0 where ptxas serialises its wgmma pipeline or it spills
         * all the same */
        PARAM("RING_UNROLL", sm90_ring_unrolled(v));
        PARAM("SMEM_TOK_BYTES", l.tok);
        PARAM("SMEM_W_BYTES", l.w);
        PARAM("SMEM_SF_BYTES", l.sf);
        PARAM("SMEM_W_OFF", l.w_off);
        PARAM("SMEM_SF_OFF", l.sf_off);
        PARAM("SMEM_BAR_OFF", l.bar_off);
        PARAM("SMEM_TILE_OF", l.tile_of);
        PARAM("SMEM_MOE_OFF", l.moe_off);
        return n;
    }
    dual_smem l;
    dual_layout(v, &l);
    PARAM("BLOB_HDR_BYTES", sizeof(dual_hdr));
    PARAM("BLOB_GROUP_BYTES", sizeof(dual_group));
    PARAM("BLOB_GROUP_M", offsetof(dual_group, m));
    PARAM("BLOB_TILE_BYTES", sizeof(blob_tile));
    PARAM("SMEM_F_X", l.f_x);
    PARAM("SMEM_F_Y", l.f_y);
    PARAM("SMEM_RAW_X", l.raw_x);
    PARAM("SMEM_RAW_Y", l.raw_y);
    PARAM("SMEM_RAW_SF", l.raw_sf);
    PARAM("SMEM_RAW_OFF", l.raw_off);
    return n;
}

static void sm90_enumerate(void (*emit)(const nvfp4jit_variant *, void *), void *u) {
    static const int bm[] = {64, 128, 256};
    static const int bn[] = {8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
    static const int bk[] = {64, 128};
    static const int st[] = {2, 3, 4, 6};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sizeof bm / sizeof *bm; i++)
            for (size_t j = 0; j < sizeof bn / sizeof *bn; j++)
                for (size_t k = 0; k < sizeof bk / sizeof *bk; k++)
                    for (size_t l = 0; l < sizeof st / sizeof *st; l++) {
                        nvfp4jit_variant v = {NVFP4JIT_ARCH_SM90A, bm[i], bn[j], bk[k], st[l], s, 0};
                        emit(&v, u);
                    }
    static const int st16[] = {2, 3, 4, 6, 8};
    static const int bm16[] = {64, 128, 192, 256};
    for (size_t i = 0; i < sizeof bm16 / sizeof *bm16; i++)
        for (size_t j = 0; j < sizeof bn / sizeof *bn; j++)
            for (int kk = 64; kk <= 256; kk *= 2)
                for (size_t l = 0; l < sizeof st16 / sizeof *st16; l++) {
                    nvfp4jit_variant v = {NVFP4JIT_ARCH_SM90A, bm16[i], bn[j], kk, st16[l], 1,
                                          NVFP4JIT_STRATEGY_ACT16};
                    emit(&v, u);
                    v.strategy = NVFP4JIT_STRATEGY_ACT16P;
                    emit(&v, u);
                    /* act16sk: for sets of few waves of wide tiles (the decode tiles have
                     * hundreds of waves) */
                    if (bn[j] >= 64) {
                        v.strategy = NVFP4JIT_STRATEGY_ACT16SK;
                        emit(&v, u);
                    }
                }
}

static void rows_xy(const nvfp4jit_variant *v, const nvfp4jit_group *g, int64_t *rx,
                    int64_t *ry) {
    *rx = v->swap_ab ? g->n : g->m;
    *ry = v->swap_ab ? g->m : g->n;
}

static size_t count_tiles(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n) {
    size_t t = 0;
    for (size_t i = 0; i < n; i++) {
        if (g[i].m == 0) continue;
        int64_t rx, ry;
        rows_xy(v, &g[i], &rx, &ry);
        t += (size_t)((rx + v->block_m - 1) / v->block_m) * (size_t)((ry + v->block_n - 1) / v->block_n);
    }
    return t;
}

#define ACT16_GROUP_MAPS_BYTES (ACT16_MAPS * sizeof(CUtensorMap))

/* the tensor maps: after the groups, 64-byte aligned */
static size_t act16_maps_off(size_t n) {
    return (sizeof(act16_hdr) + sizeof(act16_group) * n + 63) / 64 * 64;
}

/* act16sk: CTA slots exist for at most this many SMs (more than any sm_90 part has: the H100
 * SXM and the H200 have 132; a device with more runs on this many); the workspace holds a
 * partial slot and a flag per CTA slot */
#define SK_MAX_SMS 160
static size_t sk_cap(const nvfp4jit_variant *v) {
    return (size_t)SK_MAX_SMS * (size_t)sm90_ctas_per_sm(v);
}
static size_t sk_slot_bytes(const nvfp4jit_variant *v) {
    return (size_t)v->block_m * (size_t)v->block_n * 4;
}

static size_t sm90_blob_size(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n) {
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16SK) /* units: at most one per tile and one more per CTA */
        return act16_maps_off(n) + ACT16_GROUP_MAPS_BYTES * n +
               sizeof(blob_unit) * (count_tiles(v, g, n) + sk_cap(v)) + 4 * (sk_cap(v) + 1);
    if (is_act16(v))
        return act16_maps_off(n) + ACT16_GROUP_MAPS_BYTES * n +
               sizeof(blob_tile) * count_tiles(v, g, n);
    return sizeof(dual_hdr) + sizeof(dual_group) * n + sizeof(blob_tile) * count_tiles(v, g, n);
}

static size_t sm90_workspace_size(const nvfp4jit_variant *v, const nvfp4jit_group *g,
                                  size_t n) {
    if (!is_act16(v)) return 0;
    size_t b = 0;
    for (size_t i = 0; i < n; i++) b += (size_t)g[i].m * (size_t)g[i].k * 2;
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16SK) /* tokens, then the partial slots and flags */
        b = (b + 255) / 256 * 256 + sk_cap(v) * (sk_slot_bytes(v) + 4);
    return b;
}

/* act16sk's static schedule (sm90_sk_schedule), data-parallel waves then stream-K over the
 * rest. The tiles in act16's order (per group, weight tile outer), t = 0 .. N-1, C CTAs (one
 * wave), W = floor(N / C). With W >= 2 the first D = (W - 1) C tiles are data-parallel: CTA c
 * runs tiles c, c + C, ..., c + (W - 2) C whole (at each moment the grid works on C
 * consecutive tiles, act16's L2 locality), and stream-K covers the last C + r tiles (r = N mod
 * C: 1 to 2 tiles per CTA, few pieces per tile); with W < 2 (D = 0) stream-K covers all; and
 * where splitting would save less than SK_MIN_STAGES stages, no tile is split (D = N, a grid of
 * min(C, N)). The
 * stream-K region: its tiles laid end to end as their stages (k-steps of BLOCK_K), T in all,
 * cut into G = min(C, T) equal ranges (CTA c: stages floor(cT/G) .. floor((c+1)T/G) - 1 of the
 * region), each range a list of units (one per tile it touches), after the CTA's data-parallel
 * tiles. A tile cut by range ends has a first piece (its stages from 0; the last unit of its
 * CTA, run last) and later pieces, each the first stream-K unit of the next CTAs: those store
 * fp32 partials to their CTA's slot and set its flag (writer = 1); the first piece adds them in
 * CTA order (nfix of them) and stores C. A CTA waits only for the first stream-K units of later
 * CTAs, which wait for nothing (their data-parallel tiles before them do not wait either).
 * (Pure stream-K over every tile, the first version, spread the grid's CTAs over all of a long
 * set's tiles at once: prefill8-up read 8.7x act16's DRAM bytes, bench/RESULTS.md.) */
#define SK_MIN_STAGES 8 /* what a split must save, in stages (sm90_sk_schedule) */
typedef struct sk_cursor { /* a walk over the tiles in act16's order */
    const nvfp4jit_variant *v;
    const nvfp4jit_group *g;
    size_t n, gi;
    int64_t t0;             /* index of the group's first tile */
    int64_t tx, ty, ns;     /* the group's weight tiles, token tiles, stages per tile */
} sk_cursor;

static void sk_group(sk_cursor *k) { /* from gi on, the next group with tokens */
    while (k->gi < k->n && k->g[k->gi].m == 0) k->gi++;
    if (k->gi >= k->n) return;
    const nvfp4jit_group *g = &k->g[k->gi];
    k->tx = (g->n + k->v->block_m - 1) / k->v->block_m;
    k->ty = (g->m + k->v->block_n - 1) / k->v->block_n;
    k->ns = (g->k + k->v->block_k - 1) / k->v->block_k;
}

static void sk_start(sk_cursor *k, const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n) {
    memset(k, 0, sizeof *k);
    k->v = v, k->g = g, k->n = n;
    sk_group(k);
}

/* moves the cursor forward to the group holding tile t (t below the set's tile count) */
static void sk_seek(sk_cursor *k, int64_t t) {
    while (t >= k->t0 + k->tx * k->ty) {
        k->t0 += k->tx * k->ty;
        k->gi++;
        sk_group(k);
    }
}

/* the set's tiles (*N) and stages (*Tall) at v's tile, and whether the schedule splits tiles:
 * the data-parallel grid's part-empty last wave costs ceil(N / C) - N / C tiles of time, each of
 * about Tall / N stages; a split costs a second ring fill and the fix-up, about SK_MIN_STAGES
 * stages (H100: bench3, 0.09 tiles x 32 stages, lost 25 %; bench1 at 128x128, 0.33 x 56, and at
 * 128x96, 0.64 x 56, won 3 % and 13 %; prefill8-up, 0.24 x 56, tied; bench2, 0.06 x 16, lost 2 %:
 * bench/RESULTS.md). Otherwise every tile is data-parallel and act16sk runs act16p's schedule. */
static int sk_split(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, int64_t C,
                    int64_t *N_out, int64_t *T_out) {
    int64_t N = 0, Tall = 0;
    for (size_t i = 0; i < n; i++) {
        if (g[i].m == 0) continue;
        int64_t tiles = (g[i].n + v->block_m - 1) / v->block_m * ((g[i].m + v->block_n - 1) / v->block_n);
        N += tiles;
        Tall += tiles * ((g[i].k + v->block_k - 1) / v->block_k);
    }
    *N_out = N;
    *T_out = Tall;
    /* (up C - N) Tall >= SK_MIN_STAGES C N, as Tall >= ceil(SK_MIN_STAGES C N / (up C - N)):
     * no product of Tall that could overflow) */
    const int64_t up = (N + C - 1) / C, idle = up * C - N;
    return N > 0 && idle > 0 && Tall >= ((int64_t)SK_MIN_STAGES * C * N + idle - 1) / idle;
}

int sm90_sk_splits(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, unsigned ctas) {
    int64_t N, Tall;
    return sk_split(v, g, n, ctas > 0 ? ctas : 1, &N, &Tall);
}

void sm90_sk_schedule(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n,
                      unsigned ctas, unsigned char *units, int32_t *first, size_t *num_units,
                      unsigned *grid) {
    int64_t N, Tall;
    const int64_t C = ctas > 0 ? ctas : 1;
    const int split = sk_split(v, g, n, C, &N, &Tall);
    const int64_t W = N / C;
    const int64_t D = !split ? N : W >= 2 ? (W - 1) * C : 0; /* data-parallel tiles */
    /* the stream-K region: its first stage (SD) and stage count (T) */
    int64_t SD = 0;
    sk_cursor k;
    sk_start(&k, v, g, n);
    if (split && D > 0) {
        sk_seek(&k, D - 1);
        SD = 0;
        for (size_t i = 0; i < k.gi; i++)
            if (g[i].m)
                SD += (g[i].n + v->block_m - 1) / v->block_m *
                      ((g[i].m + v->block_n - 1) / v->block_n) *
                      ((g[i].k + v->block_k - 1) / v->block_k);
        SD += (D - k.t0) * k.ns;
    }
    const int64_t T = !split ? 0 : Tall - SD;
    int64_t G = C < T ? C : T;
    if (!split) G = C < N ? C : N;
    else if (D > 0) G = C; /* (T >= C + r tiles: more stages than CTAs) */
    size_t nu = 0, last_head = 0;
    /* the stream-K cursor: tile ti (in group k.gi: weight tile a, token tile b), its first
     * stage I (region coordinates) */
    sk_cursor s;
    sk_start(&s, v, g, n);
    int64_t ti = D, I = 0;
    if (T > 0) sk_seek(&s, ti);
    for (int64_t c = 0; c < G; c++) {
        first[c] = (int32_t)nu;
        /* the data-parallel tiles c, c + C, ... below D, whole */
        sk_cursor d;
        sk_start(&d, v, g, n);
        for (int64_t t = c; t < D; t += C) {
            sk_seek(&d, t);
            int64_t l = t - d.t0;
            blob_unit u = {(int32_t)d.gi, (int32_t)(l / d.ty), (int32_t)(l % d.ty), 0,
                           (int32_t)d.ns, 0, 0, 0};
            memcpy(units + sizeof u * nu++, &u, sizeof u);
        }
        const int64_t lo = c * T / G, hi = (c + 1) * T / G;
        for (int64_t pos = lo; pos < hi;) {
            while (pos >= I + s.ns) { /* the next tile */
                I += s.ns;
                sk_seek(&s, ++ti);
            }
            const int64_t l = ti - s.t0, end = hi < I + s.ns ? hi : I + s.ns;
            blob_unit u = {(int32_t)s.gi, (int32_t)(l / s.ty), (int32_t)(l % s.ty), (int32_t)(pos - I),
                           (int32_t)(end - I), 0, pos > I, 0};
            if (u.s0 == 0 && end < I + s.ns) last_head = nu; /* a first piece of a split tile */
            if (u.writer) {                                 /* a later piece: the head's to add */
                blob_unit h;
                memcpy(&h, units + sizeof h * last_head, sizeof h);
                h.nfix++;
                memcpy(units + sizeof h * last_head, &h, sizeof h);
            }
            memcpy(units + sizeof u * nu++, &u, sizeof u);
            pos = end;
        }
    }
    first[G] = (int32_t)nu;
    *num_units = nu;
    *grid = (unsigned)G;
}

static nvfp4jit_status act16_map(nvfp4jit_ctx *ctx, const drv_api *api, void *map, uint64_t ptr,
                                 CUtensorMapDataType type, int64_t inner, int64_t rows,
                                 int64_t row_bytes, int box_inner, int box_rows,
                                 CUtensorMapSwizzle swz, size_t gi, const char *which) {
    cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)row_bytes};
    cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_rows};
    cuuint32_t es[2] = {1, 1};
    /* out-of-bounds rows (past M or N) are zero-filled and still count as transferred bytes */
    CUresult r = api->cuTensorMapEncodeTiled((CUtensorMap *)map, type, 2, (void *)(uintptr_t)ptr,
                                             dims, strides, box, es,
                                             CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                                             CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "group %zu: cuTensorMapEncodeTiled (%s)", gi, which);
        return drv_fail(ctx, r, what);
    }
    return NVFP4JIT_OK;
}

/* The weight scales of one group or expert: 512-byte blocks (128 rows x 64 k), block (row block
 * rb, k block kb) at (rb * nk + kb) * 512, as a 3-D tensor {128 u32, nk k blocks, row blocks};
 * one box per stage: its KSUB k blocks of every row block its weight tile touches (past nk or
 * past the last row block: zero-filled, never read). A tensor copy rather than a plain bulk
 * copy, so compute-sanitizer's racecheck follows its mbarrier completion. */
static nvfp4jit_status act16_sf_map(nvfp4jit_ctx *ctx, const drv_api *api,
                                    const nvfp4jit_variant *v, void *map, uint64_t ptr,
                                    int64_t n, int64_t k, size_t gi, const char *which) {
    cuuint64_t dims[3] = {128, (cuuint64_t)(k / 64), (cuuint64_t)((n + 127) / 128)};
    cuuint64_t strides[2] = {512, (cuuint64_t)(k / 64) * 512};
    cuuint32_t box[3] = {128, (cuuint32_t)(v->block_k / 64), (cuuint32_t)act16_sf_blocks(v)};
    cuuint32_t es[3] = {1, 1, 1};
    CUresult r = api->cuTensorMapEncodeTiled((CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3,
                                             (void *)(uintptr_t)ptr, dims, strides, box, es,
                                             CU_TENSOR_MAP_INTERLEAVE_NONE,
                                             CU_TENSOR_MAP_SWIZZLE_NONE,
                                             CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "group %zu: cuTensorMapEncodeTiled (%s)", gi, which);
        return drv_fail(ctx, r, what);
    }
    return NVFP4JIT_OK;
}

static nvfp4jit_status act16_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                       const nvfp4jit_variant *v, const nvfp4jit_group *g,
                                       size_t n, unsigned char *host, uint64_t ws,
                                       fam_launch *launch) {
    size_t tiles = count_tiles(v, g, n);
    NJ_RETURN_IF(ctx, tiles > 0x7fffffff, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "problem set needs %zu tiles (more than a grid holds)", tiles);
    size_t mo = act16_maps_off(n), to = mo + ACT16_GROUP_MAPS_BYTES * n;
    memset(host, 0, to);
    int64_t items = 0;
    uint64_t wsp = ws;
    for (size_t i = 0; i < n; i++) {
        act16_group d = {g[i].a, g[i].b, g[i].sfa, g[i].sfb, g[i].c, wsp,
                         (int32_t)g[i].m, (int32_t)g[i].n, (int32_t)g[i].k, (int32_t)items};
        memcpy(host + sizeof(act16_hdr) + sizeof d * i, &d, sizeof d);
        if (g[i].m > 0) {
            unsigned char *maps = host + mo + ACT16_GROUP_MAPS_BYTES * i;
            NJ_FORWARD_IF_ERROR(act16_map(ctx, api, maps, wsp, CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                          g[i].k, g[i].m, g[i].k * 2, 64, v->block_n,
                                          CU_TENSOR_MAP_SWIZZLE_128B, i, "fp16 tokens"));
            NJ_FORWARD_IF_ERROR(act16_map(ctx, api, maps + 128, g[i].b,
                                          CU_TENSOR_MAP_DATA_TYPE_UINT8, g[i].k / 2, g[i].n,
                                          g[i].k / 2, v->block_k / 2, v->block_m,
                                          CU_TENSOR_MAP_SWIZZLE_NONE, i, "weights"));
            NJ_FORWARD_IF_ERROR(act16_sf_map(ctx, api, v, maps + 256, g[i].sfb, g[i].n, g[i].k,
                                             i, "weight scales"));
        }
        items += g[i].m * (g[i].k / 16);
        wsp += (uint64_t)g[i].m * (uint64_t)g[i].k * 2;
        NJ_RETURN_IF(ctx, items > ACT16_MAX_ITEMS, NVFP4JIT_ERR_INVALID_PROBLEM,
                     "problem set has more than 2^31 token values / 16 (act16 prep grid)");
    }
    act16_hdr hdr = {(int32_t)tiles, (int32_t)n, (int32_t)items, 0, mo, to, sizeof hdr, 0, 0, 0};
    memset(&launch->prep_tab, 0, sizeof launch->prep_tab);
    if (n <= NJ_PREP_TAB_GROUPS) { /* the prep's lookup from its parameter (family.h) */
        launch->prep_tab.num_groups = (int32_t)n;
        launch->prep_tab.items = (int32_t)items;
        for (size_t i = 0; i < n; i++) {
            act16_group d;
            memcpy(&d, host + sizeof(act16_hdr) + sizeof d * i, sizeof d);
            launch->prep_tab.g[i] = (nj_prep_group){d.a, d.sfa, d.ws, d.k, d.prep0};
        }
    }
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16SK) {
        unsigned sms = ctx->device_sms > 0 ? (unsigned)ctx->device_sms
                                           : (unsigned)fam_sm90a.default_sms;
        if (sms > SK_MAX_SMS) sms = SK_MAX_SMS; /* the workspace's slots (sk_cap) */
        unsigned ctas = sms * (unsigned)sm90_ctas_per_sm(v), grid = 0;
        if (sm90_test_persist_ctas > 0 && (size_t)sm90_test_persist_ctas <= sk_cap(v))
            ctas = (unsigned)sm90_test_persist_ctas;
        size_t nu = 0, cap = tiles + sk_cap(v);
        int32_t *first = (int32_t *)(host + to + sizeof(blob_unit) * cap);
        sm90_sk_schedule(v, g, n, ctas, host + to, first, &nu, &grid);
        uint64_t part = ws + (wsp - ws + 255) / 256 * 256;
        hdr.num_tiles = (int32_t)nu;
        hdr.sk_ctas = (int32_t)grid;
        hdr.sk_first_off = to + sizeof(blob_unit) * cap;
        hdr.sk_part = part;
        hdr.sk_flags = part + sk_cap(v) * sk_slot_bytes(v);
        memcpy(host, &hdr, sizeof hdr);
        launch->num_ctas = grid;
        launch->threads = (unsigned)sm90_threads(v);
        launch->dyn_smem = sm90_dyn_smem(v);
        launch->prep_ctas = (unsigned)((items + NJ_ACT16_PREP_CTA_ITEMS - 1) / NJ_ACT16_PREP_CTA_ITEMS);
        launch->prep_threads = 256;
        return NVFP4JIT_OK;
    }
    memcpy(host, &hdr, sizeof hdr);
    unsigned char *t = host + to;
    for (size_t i = 0; i < n; i++) {
        if (g[i].m == 0) continue;
        int tx = (int)((g[i].n + v->block_m - 1) / v->block_m);
        int ty = (int)((g[i].m + v->block_n - 1) / v->block_n);
        for (int a = 0; a < tx; a++)
            for (int b = 0; b < ty; b++) {
                blob_tile bt = {(int32_t)i, a, b, 0};
                memcpy(t, &bt, sizeof bt);
                t += sizeof bt;
            }
    }
    launch->num_ctas = (unsigned)tiles;
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16P) { /* persistent: the CTAs that fit at once */
        unsigned sms = ctx->device_sms > 0 ? (unsigned)ctx->device_sms
                                           : (unsigned)fam_sm90a.default_sms;
        sms *= (unsigned)sm90_ctas_per_sm(v);
        if (sm90_test_persist_ctas > 0) sms = (unsigned)sm90_test_persist_ctas;
        if (launch->num_ctas > sms) launch->num_ctas = sms;
    }
    launch->threads = (unsigned)sm90_threads(v);
    launch->dyn_smem = sm90_dyn_smem(v);
    launch->prep_ctas = (unsigned)((items + NJ_ACT16_PREP_CTA_ITEMS - 1) / NJ_ACT16_PREP_CTA_ITEMS);
    launch->prep_threads = 256;
    return NVFP4JIT_OK;
}

static int sm90_fits(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n, char *why,
                     size_t why_n) {
    /* (M, N <= 2^24 and n <= 2^20: the count cannot overflow) */
    size_t tiles = count_tiles(v, g, n);
    if (tiles > 0x7fffffff) {
        snprintf(why, why_n, "the set needs %zu tiles of %dx%d (a grid holds at most 2^31 - 1)",
                 tiles, v->block_m, v->block_n);
        return 0;
    }
    if (!is_act16(v)) return 1;
    /* M, K <= 2^24 and n <= 2^20 (nvfp4jit_problem_check_shapes): no int64 overflow */
    int64_t items = 0;
    for (size_t i = 0; i < n; i++) {
        items += g[i].m * (g[i].k / 16);
        if (items > ACT16_MAX_ITEMS) {
            snprintf(why, why_n, "act16 handles at most %lld blocks of 16 token values (sum of "
                     "M*K/16); this set exceeds that by group %zu", ACT16_MAX_ITEMS, i);
            return 0;
        }
    }
    return 1;
}

/* ---- the MoE entry (src/moe.c): one constant blob per plan ----
 * Layout: the act16 blob with num_tiles = 0 and prep_items = 0; per expert a group {0, b, 0,
 * sfb, 0, ws, 0, n, k, 0} and the weights and weight-scale maps at slots 1 and 2 of its three
 * (slot 0 unused); after them, at maps_off + 384 E, one fp16 token map over the whole
 * workspace (max_rows rows). Each call's tile table is written by the prep kernel into plan
 * memory of sm90_moe_table_bytes (16 bytes {tile count, 0, C}, then 16 per tile). */
size_t sm90_moe_blob_size(int experts) {
    return act16_maps_off((size_t)experts) + ACT16_GROUP_MAPS_BYTES * (size_t)experts +
           sizeof(CUtensorMap);
}

size_t sm90_moe_dyn_smem(const nvfp4jit_variant *v, int experts) {
    (void)experts; /* the MoE tables live in plan memory: the grouped kernel's layout */
    return sm90_dyn_smem(v);
}

int sm90_moe_fits(const nvfp4jit_variant *v, int experts) {
    (void)experts; /* (act16sk's schedule is the grouped blob's: no MoE entry) */
    return is_act16(v) && v->strategy != NVFP4JIT_STRATEGY_ACT16SK;
}

/* The most tiles a MoE call of max_rows rows over E experts of N columns can have: monotone
 * offsets inside [0, max_rows] give sum ceil(cnt_e / BLOCK_N) <= ceil(max_rows / BLOCK_N) + E
 * token tiles, times the weight tiles (the kernel's bound, templates/sm90a_act16.cuh
 * moe_tiles). */
int64_t sm90_moe_tiles_bound(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows) {
    return (n + v->block_m - 1) / v->block_m * ((max_rows + v->block_n - 1) / v->block_n + experts);
}

size_t sm90_moe_table_bytes(const nvfp4jit_variant *v, int experts, int64_t n, int64_t max_rows) {
    return 16 * (size_t)(1 + sm90_moe_tiles_bound(v, experts, n, max_rows));
}

nvfp4jit_status sm90_moe_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                   const nvfp4jit_variant *v, int experts, int64_t n, int64_t k,
                                   const uint64_t *b, const uint64_t *sfb, int64_t max_rows,
                                   uint64_t ws, unsigned char *host) {
    size_t E = (size_t)experts, mo = act16_maps_off(E), end = sm90_moe_blob_size(experts);
    memset(host, 0, end);
    act16_hdr hdr = {0, experts, 0, 0, mo, end, sizeof hdr, 0, 0, 0};
    memcpy(host, &hdr, sizeof hdr);
    for (size_t e = 0; e < E; e++) {
        act16_group d = {0, b[e], 0, sfb[e], 0, ws, 0, (int32_t)n, (int32_t)k, 0};
        memcpy(host + sizeof hdr + sizeof d * e, &d, sizeof d);
        unsigned char *maps = host + mo + ACT16_GROUP_MAPS_BYTES * e;
        NJ_FORWARD_IF_ERROR(act16_map(ctx, api, maps + 128, b[e], CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                      k / 2, n, k / 2, v->block_k / 2, v->block_m,
                                      CU_TENSOR_MAP_SWIZZLE_NONE, e, "expert weights"));
        NJ_FORWARD_IF_ERROR(act16_sf_map(ctx, api, v, maps + 256, sfb[e], n, k, e,
                                         "expert weight scales"));
    }
    return act16_map(ctx, api, host + mo + ACT16_GROUP_MAPS_BYTES * E, ws, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, k,
                     max_rows, k * 2, 64, v->block_n, CU_TENSOR_MAP_SWIZZLE_128B, E,
                     "fp16 tokens (all experts)");
}

static nvfp4jit_status sm90_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                      const nvfp4jit_variant *v, const nvfp4jit_group *g,
                                      size_t n, unsigned char *host, uint64_t dev,
                                      uint64_t workspace, fam_launch *launch) {
    (void)dev;
    if (is_act16(v))
        return act16_blob_fill(ctx, api, v, g, n, host, workspace, launch);
    (void)api;
    size_t tiles = count_tiles(v, g, n);
    NJ_RETURN_IF(ctx, tiles > 0x7fffffff, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "problem set needs %zu tiles (more than a grid holds)", tiles);
    dual_hdr hdr = {(int32_t)tiles, (int32_t)n, 0, 0};
    memcpy(host, &hdr, sizeof hdr);
    for (size_t i = 0; i < n; i++) {
        dual_group d = {g[i].a, g[i].b, g[i].sfa, g[i].sfb, g[i].c,
                        (int32_t)g[i].m, (int32_t)g[i].n, (int32_t)g[i].k, {0}};
        memcpy(host + sizeof hdr + sizeof d * i, &d, sizeof d);
    }
    unsigned char *t = host + sizeof hdr + sizeof(dual_group) * n;
    for (size_t i = 0; i < n; i++) {
        if (g[i].m == 0) continue;
        int64_t rx, ry;
        rows_xy(v, &g[i], &rx, &ry);
        int tx = (int)((rx + v->block_m - 1) / v->block_m);
        int ty = (int)((ry + v->block_n - 1) / v->block_n);
        for (int o = 0; o < (v->swap_ab ? tx : ty); o++) /* the weights' tile outer */
            for (int q = 0; q < (v->swap_ab ? ty : tx); q++) {
                blob_tile bt = {(int32_t)i, v->swap_ab ? o : q, v->swap_ab ? q : o, 0};
                memcpy(t, &bt, sizeof bt);
                t += sizeof bt;
            }
    }
    launch->num_ctas = (unsigned)tiles;
    launch->threads = (unsigned)sm90_threads(v);
    launch->dyn_smem = sm90_dyn_smem(v);
    launch->prep_ctas = 0;
    launch->prep_threads = 0;
    return NVFP4JIT_OK;
}

/* ---- the cost model's terms (heuristic.c says how they combine) ----
 * decode_per_clk: measured on the H200 (bench3, 128x128x64: ~1700 clocks per k-tile of 16K
 * values, 2026-12-02), not the standalone decoder rate of DESIGN.md.
 * iter_overhead_clk: tuning on the H200 (2026-12-02) found BLOCK_K 128 16 % faster than 64 for
 * the 256x24 decode tiles of decode64-down, i.e. ~1000 clocks per extra k-step there; 400 is a
 * compromise; on bench3/bench4 (128x128 unswapped tiles) BLOCK_K 128 lost 8-11 % in tuning,
 * so on sm_90a the term applies to swapped tiles only.
 * act16 terms, fitted to 42 `nvfp4jit bench` timings on the H200 (bench/RESULTS.md and
 * bench/data/2026-12-03-h200-act16-sweep-*.csv, 2026-12-03, plus the heuristic run after
 * them): 20 weight values decoded per clock per SM, 28 bytes per clock per SM from L2 to
 * shared memory. act16p measured within 2 % of act16 (its tiles are long; bench/RESULTS.md):
 * no credit for the overlapped prologue (1.5 us per tile, as act16), so ties go to act16 and
 * the tuner decides. */
static const fam_rates sm90_rates = {
    .clock_ghz = 1.75,
    .mma_flops_per_clk = 4096.0,
    .decode_per_clk = 10.0,
    .dram_bytes_per_us = 4.25e6,
    .tile_overhead_us = 1.5,
    .iter_overhead_clk = 400.0,
    .act16_decode_per_clk = 20.0,
    .l2_bytes_per_clk = 48.0,
    .act16p_tile_us = 1.5,
    .act16_stage_clk = 75.0, /* fitted 2026-12-04: decode64-up BLOCK_K 64 -> 128 (heuristic.c) */
    .act16_unrolled_dec = 0.88,        /* SASS: ~81 vs ~92 instructions per 64-k block */
    .act16_unrolled_stage_clk = 40.0,  /* SASS: ~15 vs ~30 per stage (wait, release, slot) */
    .regs_per_thread = 0,
    .ring_latency_us = 0.63, /* act16's ring (heuristic.c): ~1100 clocks, fitted 2026-12-04 */
};

const family fam_sm90a = {
    .arch = NVFP4JIT_ARCH_SM90A,
    .arch_name = "sm_90a",
    .short_name = "sm90a",
    .template_name = "sm90a_grouped.cu",
    .cc = 90,
    .default_sms = 132, /* H100 SXM and H200 */
    .smem_block_max = SM90_SMEM_MAX,
    .smem_sm = SM90_SMEM_SM,
    .regs_sm = SM90_REGS_MAX,
    .threads_sm = 2048,
    .rates = &sm90_rates,
    /* act16's fp16 token workspace (2 bytes per token value) is device memory the plan
     * holds: sets that would need more are planned with the dual strategy */
    .heur_max_workspace = 4.0 * 1024 * 1024 * 1024,
    .check = sm90_check,
    .threads = sm90_threads,
    .dyn_smem = sm90_dyn_smem,
    .ctas_per_sm = sm90_ctas_per_sm,
    .ring_unrolled = sm90_ring_unrolled,
    .params = sm90_params,
    .enumerate = sm90_enumerate,
    .blob_size = sm90_blob_size,
    .workspace_size = sm90_workspace_size,
    .blob_fill = sm90_blob_fill,
    .tmem_cols = NULL,
    .fits = sm90_fits,
};
