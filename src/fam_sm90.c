/* fam_sm90.c - the sm_90a family (templates/sm90a_grouped.cu): validity rules, template
 * parameters, and the device blob its kernel reads.
 *
 * Blob layout v1 (must match the template):
 *   16 bytes header {int num_tiles, num_groups, 0, 0}
 *   num_groups x 64 bytes {u64 a, b, sfa, sfb, c; int m, n, k, pad[3]}
 *   num_tiles x 16 bytes {int group, tx, ty, 0}
 * One CTA per tile; tiles are ordered weight-tile outer (B's tile index outermost) so CTAs
 * that run at the same time read the same weight tile through L2. Groups with M = 0 get no
 * tiles and their pointers are never read. */
#include <stdio.h>
#include <string.h>

#include "family.h"

#define SM90_SMEM_MAX 232448 /* 227 KB: the opt-in per-block maximum on sm_90 */
#define SM90_REGS_MAX 65536  /* registers per SM */

static int sf_blocks(int rows) {
    if (rows % 128 == 0 || 128 % rows == 0) return (rows + 127) / 128;
    return (rows + 127) / 128 + 1; /* a tile can straddle two 128-row scale blocks */
}

static size_t sm90_dyn_smem(const nvfp4jit_variant *v) {
    size_t ksub = (size_t)v->block_k / 64;
    size_t raw = (size_t)(v->block_m + v->block_n) * v->block_k / 2 +
                 (size_t)(sf_blocks(v->block_m) + sf_blocks(v->block_n)) * ksub * 512;
    size_t f = (size_t)(v->block_m + v->block_n) * v->block_k * 2;
    return 2 * f + (size_t)v->stages * raw + 1024; /* + slack for 1024-byte alignment */
}

static int sm90_threads(const nvfp4jit_variant *v) { return 2 * v->block_m; }

static int sm90_check(const nvfp4jit_variant *v, char *why, size_t n) {
    if (v->block_m != 64 && v->block_m != 128 && v->block_m != 256) {
        snprintf(why, n, "BLOCK_M=%d: must be 64, 128 or 256 (one m64 wgmma per warpgroup)",
                 v->block_m);
        return 0;
    }
    /* PTX ISA wgmma .f16 shapes: m64nNk16 with N a multiple of 8 in 8..256 */
    if (v->block_n < 8 || v->block_n > 256 || v->block_n % 8) {
        snprintf(why, n, "BLOCK_N=%d: wgmma m64nNk16 needs N a multiple of 8 in 8..256",
                 v->block_n);
        return 0;
    }
    if (v->block_k != 64 && v->block_k != 128) {
        snprintf(why, n, "BLOCK_K=%d: must be 64 or 128 (whole 64-k scale blocks)", v->block_k);
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

static int sm90_params(const nvfp4jit_variant *v, tmpl_param *p, int cap) {
    (void)v;
    (void)p;
    (void)cap;
    return 0;
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
                        nvfp4jit_variant v = {NVFP4JIT_ARCH_SM90A, bm[i], bn[j], bk[k], st[l], s};
                        emit(&v, u);
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

static size_t sm90_blob_size(const nvfp4jit_variant *v, const nvfp4jit_group *g, size_t n) {
    return 16 + 64 * n + 16 * count_tiles(v, g, n);
}

static nvfp4jit_status sm90_blob_fill(nvfp4jit_ctx *ctx, const drv_api *api,
                                      const nvfp4jit_variant *v, const nvfp4jit_group *g,
                                      size_t n, unsigned char *host, uint64_t dev,
                                      fam_launch *launch) {
    (void)api;
    (void)dev;
    size_t tiles = count_tiles(v, g, n);
    NJ_RETURN_IF(ctx, tiles > 0x7fffffff, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "problem set needs %zu tiles (more than a grid holds)", tiles);
    memset(host, 0, 16 + 64 * n);
    int32_t hdr[4] = {(int32_t)tiles, (int32_t)n, 0, 0};
    memcpy(host, hdr, sizeof hdr);
    for (size_t i = 0; i < n; i++) {
        unsigned char *d = host + 16 + 64 * i;
        uint64_t p[5] = {g[i].a, g[i].b, g[i].sfa, g[i].sfb, g[i].c};
        int32_t s[3] = {(int32_t)g[i].m, (int32_t)g[i].n, (int32_t)g[i].k};
        memcpy(d, p, sizeof p);
        memcpy(d + 40, s, sizeof s);
    }
    int32_t *t = (int32_t *)(host + 16 + 64 * n);
    for (size_t i = 0; i < n; i++) {
        if (g[i].m == 0) continue;
        int64_t rx, ry;
        rows_xy(v, &g[i], &rx, &ry);
        int tx = (int)((rx + v->block_m - 1) / v->block_m);
        int ty = (int)((ry + v->block_n - 1) / v->block_n);
        if (v->swap_ab) { /* X = weights: X tile outer */
            for (int a = 0; a < tx; a++)
                for (int b = 0; b < ty; b++) {
                    t[0] = (int32_t)i; t[1] = a; t[2] = b; t[3] = 0;
                    t += 4;
                }
        } else { /* Y = weights: Y tile outer */
            for (int b = 0; b < ty; b++)
                for (int a = 0; a < tx; a++) {
                    t[0] = (int32_t)i; t[1] = a; t[2] = b; t[3] = 0;
                    t += 4;
                }
        }
    }
    launch->num_ctas = (unsigned)tiles;
    launch->threads = (unsigned)sm90_threads(v);
    launch->dyn_smem = sm90_dyn_smem(v);
    return NVFP4JIT_OK;
}

const family fam_sm90a = {
    NVFP4JIT_ARCH_SM90A, "sm_90a", "sm90a_grouped.cu", sm90_check, sm90_threads,
    sm90_dyn_smem, sm90_params, sm90_enumerate, sm90_blob_size, sm90_blob_fill,
};
