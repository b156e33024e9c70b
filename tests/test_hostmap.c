/* test_hostmap.c - the host half of each family (blob_fill) against a recording
 * cuTensorMapEncodeTiled (tests/hostmap_stub.c), for random problem sets with M = 0 groups,
 * M < 128, N and K tails (issue 9 part 3). Part of the lint area.
 *  - every encoded map obeys cuTensorMapEncodeTiled's documented rules (cuda.h: data type,
 *    rank, 16-byte global address, dims in 1..2^32 and even for 16U4_ALIGN8B, strides
 *    multiples of 16 below 2^40 and covering the previous dimension, box 1..256 with a
 *    16-byte multiple inner extent, element strides 1..8, inner box bytes <= the swizzle
 *    span), sits 64-byte aligned in the blob, and describes exactly its buffer (a TMA box never
 *    reads past it: out-of-bounds elements are zero-filled, not read);
 *  - every output element is covered by exactly one tile of the blob's tile list;
 *  - every scale byte the kernel consumes is the byte the blocked-layout formula (DESIGN.md)
 *    gives, and no scale read leaves the padded buffer: for sm_100a the producer's bulk-copy
 *    ranges (a host model of templates/sm100a_grouped.cu's producer addressing, kept next to
 *    it below), for act16 the weight-scale boxes (map 3) the producer asks for.
 * What a stub cannot show: that the driver accepts these maps (the H200 rejects 16U4_ALIGN8B,
 * so the sm_100a maps were never encoded by a real driver) and how TMA lays boxes out. */
#include <stdint.h>
#include <time.h>

#include "family.h"
#include "lint.h"
#include "testutil.h"

static uint64_t rng;
static uint32_t rnd(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33);
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1)); }

/* blocked layout (DESIGN.md): byte of row r, scale column j, for `cols` = K/16 columns */
static uint64_t blocked(int64_t r, int64_t j, int64_t cols) {
    int64_t pc = (cols + 3) / 4 * 4;
    return (uint64_t)(((r / 128) * (pc / 4) + j / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 +
                      (j % 4));
}
static uint64_t blocked_size(int64_t rows, int64_t k) {
    return (uint64_t)((rows + 127) / 128 * 128) * (uint64_t)((k / 16 + 3) / 4 * 4);
}

#define BUF_A 0x100000000ULL
#define BUF_STEP 0x10000000000ULL /* buffers 1 TB apart: ranges never overlap */

typedef struct bufs {
    uint64_t a, b, sfa, sfb, c;
} bufs;

static void make_group(nvfp4jit_group *g, size_t i) {
    uint64_t base = BUF_A + (uint64_t)i * 8 * BUF_STEP;
    g->a = base;
    g->b = base + BUF_STEP;
    g->sfa = base + 2 * BUF_STEP;
    g->sfb = base + 3 * BUF_STEP;
    g->c = base + 4 * BUF_STEP;
}

/* one map against cuda.h's rules and against the buffer [lo, lo+len) it must stay inside */
static void check_map(const char *name, const hostmap_rec *r, const unsigned char *blob,
                      uint64_t lo, uint64_t len, const char *what) {
    int eb = hostmap_elem_bits(r->type);
    CHECKF(eb > 0, "%s %s: data type %d", name, what, (int)r->type);
    CHECKF(r->rank >= 1 && r->rank <= 5, "%s %s: rank %u", name, what, r->rank);
    CHECKF(r->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE, "%s %s: interleave", name, what);
    CHECKF(r->addr % 16 == 0, "%s %s: global address %#llx not 16-aligned", name, what,
           (unsigned long long)r->addr);
    CHECKF(((const unsigned char *)r->where - blob) % 64 == 0, "%s %s: map not 64-aligned in "
           "the blob", name, what);
    uint64_t prev = 0;
    for (unsigned i = 0; i < r->rank; i++) {
        CHECKF(r->dims[i] >= 1 && r->dims[i] <= (1ULL << 32), "%s %s: dim %u = %llu", name, what,
               i, (unsigned long long)r->dims[i]);
        CHECKF(r->box[i] >= 1 && r->box[i] <= 256, "%s %s: box %u = %u", name, what, i, r->box[i]);
        CHECKF(r->es[i] >= 1 && r->es[i] <= 8, "%s %s: element stride %u = %u", name, what, i,
               r->es[i]);
        if (i == 0) {
            prev = r->dims[0] * (uint64_t)eb / 8;
        } else {
            uint64_t s = r->strides[i - 1];
            CHECKF(s % 16 == 0 && s < (1ULL << 40) && s >= prev, "%s %s: stride %u = %llu "
                   "(previous extent %llu)", name, what, i - 1, (unsigned long long)s,
                   (unsigned long long)prev);
            prev = s * r->dims[i];
        }
    }
    if (r->type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B)
        CHECKF(r->dims[0] % 2 == 0, "%s %s: 16U4_ALIGN8B dim 0 = %llu odd", name, what,
               (unsigned long long)r->dims[0]);
    uint64_t inner = (uint64_t)r->box[0] * (uint64_t)eb / 8;
    CHECKF(inner % 16 == 0, "%s %s: inner box %llu bytes", name, what, (unsigned long long)inner);
    unsigned sw = r->swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 128
                  : r->swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                  : r->swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32 : 0;
    CHECKF(r->swizzle <= CU_TENSOR_MAP_SWIZZLE_128B, "%s %s: swizzle %d", name, what,
           (int)r->swizzle);
    if (sw) CHECKF(inner <= sw, "%s %s: inner box %llu bytes > swizzle %u", name, what,
                   (unsigned long long)inner, sw);
    /* the whole described tensor lies inside its buffer */
    uint64_t last = r->addr + r->dims[0] * (uint64_t)eb / 8;
    for (unsigned i = 1; i < r->rank; i++) last += r->strides[i - 1] * (r->dims[i] - 1);
    CHECKF(r->addr >= lo && last <= lo + len, "%s %s: map covers [%#llx, %#llx), buffer [%#llx, "
           "%#llx)", name, what, (unsigned long long)r->addr, (unsigned long long)last,
           (unsigned long long)lo, (unsigned long long)(lo + len));
}

/* tiles: count hits per (group, tile row, tile col); every cell of every M > 0 group once */
static void check_cover(const char *name, const nvfp4jit_group *g, size_t n, const int32_t *t,
                        long long nt, int bm, int bn, int swap, int sm100) {
    for (size_t gi = 0; gi < n; gi++) {
        int64_t rx = swap ? g[gi].n : g[gi].m, ry = swap ? g[gi].m : g[gi].n;
        if (g[gi].m == 0) {
            for (long long i = 0; i < nt; i++)
                CHECKF(t[4 * i] != (int32_t)gi, "%s: a tile of the empty group %zu", name, gi);
            continue;
        }
        int64_t tx = (rx + bm - 1) / bm, ty = (ry + bn - 1) / bn;
        unsigned char *cnt = calloc((size_t)(tx * ty), 1);
        for (long long i = 0; i < nt; i++) {
            const int32_t *e = t + 4 * i;
            if (e[0] != (int32_t)gi) continue;
            int64_t a = sm100 ? e[1] / bm : e[1], b = sm100 ? e[2] / bn : e[2];
            if (sm100) {
                CHECKF(e[1] % bm == 0 && e[2] % bn == 0 && e[3] == (int32_t)g[gi].k,
                       "%s: tile {%d,%d,%d,%d}", name, e[0], e[1], e[2], e[3]);
            }
            if (a < 0 || a >= tx || b < 0 || b >= ty) {
                CHECKF(0, "%s: group %zu tile (%lld,%lld) outside %lldx%lld", name, gi,
                       (long long)a, (long long)b, (long long)tx, (long long)ty);
                continue;
            }
            cnt[a * ty + b]++;
        }
        for (int64_t c = 0; c < tx * ty; c++)
            CHECKF(cnt[c] == 1, "%s: group %zu (%lldx%lld) tile %lld covered %d times", name, gi,
                   (long long)g[gi].m, (long long)g[gi].n, (long long)c, cnt[c]);
        free(cnt);
    }
}

/* sm_100a producer, host model of templates/sm100a_grouped.cu (keep in step with it): k-tile
 * `it` of a tile copies nsub = min(BLOCK_K/64, K/64 - it*BLOCK_K/64) blocks of 512 bytes from
 * sf + (off/128) * (K/64) * 512 + it*(BLOCK_K/64)*512, for SFA (off_m) and SFB (off_n); the
 * MMA takes row r, scale column j from byte (j/4 - kb)*512 + blocked position of (r, j%4) of
 * that range (tcgen05.cp 32x128b.warpx4 of the 32x16-byte block, the seed's layout). */
static void check_sm100_scales(const char *name, const nvfp4jit_variant *v,
                               const nvfp4jit_group *g, const int32_t *e) {
    int64_t K = g->k, kblocks = K / 64, cols = K / 16;
    int sub = v->block_k / 64;
    int64_t iters = (K + v->block_k - 1) / v->block_k;
    for (int side = 0; side < 2; side++) {
        int64_t off = side ? e[2] : e[1], rows = side ? g->n : g->m;
        int tile = side ? v->block_n : v->block_m;
        uint64_t buf = side ? g->sfb : g->sfa, size = blocked_size(rows, K);
        for (int64_t it = 0; it < iters; it++) {
            int64_t kb = it * sub, nsub = sub < kblocks - kb ? sub : kblocks - kb;
            uint64_t start = buf + (uint64_t)((off / 128) * kblocks * 512 + kb * 512);
            uint64_t len = (uint64_t)nsub * 512;
            CHECKF(start >= buf && start + len <= buf + size, "%s: %s copy [%#llx,+%llu) past "
                   "the padded buffer (%llu bytes)", name, side ? "SFB" : "SFA",
                   (unsigned long long)(start - buf), (unsigned long long)len,
                   (unsigned long long)size);
            /* every (row, column) the MMA consumes: rows of the tile (padding rows too: the
             * buffer is padded to 128 rows), the k-tile's scale columns */
            for (int64_t r = off; r < off + tile; r += 7)
                for (int64_t j = kb * 4; j < (kb + nsub) * 4; j++) {
                    uint64_t want = buf + blocked(r, j, cols);
                    uint64_t got = start + (uint64_t)((j / 4 - kb) * 512 + (r % 32) * 16 +
                                                      ((r % 128) / 32) * 4 + (j % 4));
                    if (want != got) {
                        CHECKF(0, "%s: %s row %lld col %lld: consumed byte %#llx, formula %#llx",
                               name, side ? "SFB" : "SFA", (long long)r, (long long)j,
                               (unsigned long long)(got - buf), (unsigned long long)(want - buf));
                        return;
                    }
                }
        }
    }
}

/* act16: the producer asks map 3 (weight scales: rows of 512 bytes = one 128-row x 64-k block,
 * block (r/128)*(K/64) + k/64) for box rows (x0/128 + min(b, last))*nk + kt, b < SFB_BLK
 * (templates/sm90a_act16.cuh); a consumer of weight row gr < N reads block gr/128 - x0/128. */
static void check_act16_scales(const char *name, const nvfp4jit_variant *v,
                               const nvfp4jit_group *g, const hostmap_rec *m, int tx) {
    int64_t nk = g->k / 64, x0 = (int64_t)tx * v->block_m, rb = (g->n + 127) / 128;
    int ksub = v->block_k / 64, sfb_blk = ((v->block_m % 128 ? 64 : 0) + v->block_m + 127) / 128;
    /* a 3-D tensor {128 u32, nk k blocks, row blocks}, one box per stage: {128, KSUB, SFB_BLK},
     * origin (0, kt * KSUB, x0 / 128) (fam_sm90.c act16_sf_map) */
    CHECKF(m->rank == 3 && m->dims[0] == 128 && m->dims[1] == (uint64_t)nk &&
               m->dims[2] == (uint64_t)rb && m->strides[0] == 512 &&
               m->strides[1] == (uint64_t)nk * 512 && m->box[0] == 128 &&
               m->box[1] == (unsigned)ksub && m->box[2] == (unsigned)sfb_blk,
           "%s: scale map rank %u dims %llu x %llu x %llu box %u x %u x %u", name, m->rank,
           (unsigned long long)m->dims[0], (unsigned long long)m->dims[1],
           (unsigned long long)m->dims[2], m->box[0], m->box[1], m->box[2]);
    for (int64_t kb = 0; kb < nk; kb++) {
        for (int64_t gr = x0; gr < x0 + v->block_m && gr < g->n; gr++) {
            int64_t b = gr / 128 - x0 / 128;
            CHECKF(b >= 0 && b < sfb_blk && x0 / 128 + b < rb,
                   "%s: weight row %lld needs box row block %lld", name, (long long)gr,
                   (long long)b);
            /* the consumer's block [b][kb % KSUB] of the stage kb / KSUB box: global block
             * (x0/128 + b, kb), i.e. the formula's for (gr, 4kb..) */
            uint64_t box = (uint64_t)((x0 / 128 + b) * nk + kb) * 512;
            uint64_t want = blocked(gr, kb * 4, g->k / 16) & ~511ULL;
            if (box != want) {
                CHECKF(0, "%s: row %lld k-block %lld: box at %llu, formula block at %llu", name,
                       (long long)gr, (long long)kb, (unsigned long long)box,
                       (unsigned long long)want);
                return;
            }
        }
    }
}

/* act16sk's blob (the schedule's own rules: test_variant.c sk_schedule): header fields, the
 * units' stages cover every tile's stages once, first[] is the CTAs' unit ranges, the grid is
 * the schedule's, a split tile's first piece is its CTA's last unit and its later pieces the
 * next CTAs' writers, and the partial slots and flags lie in the workspace after the tokens */
static void check_sk(const char *name, const nvfp4jit_variant *v, const nvfp4jit_group *g,
                     size_t n, const unsigned char *blob, size_t bs, uint64_t ws,
                     const fam_launch *L) {
    int32_t h32[4];
    uint64_t h64[6];
    memcpy(h32, blob, sizeof h32);
    memcpy(h64, blob + 16, sizeof h64);
    long long nu = h32[0], ctas = h32[3];
    CHECKF(ctas >= 0 && L->num_ctas == (unsigned)ctas, "%s: grid %u, schedule %lld CTAs", name,
           L->num_ctas, ctas);
    CHECKF(h64[3] + 4 * (uint64_t)(ctas + 1) <= bs && h64[1] + 32 * (uint64_t)nu <= h64[3],
           "%s: units or first[] outside the blob", name);
    if (h64[3] + 4 * (uint64_t)(ctas + 1) > bs || h64[1] + 32 * (uint64_t)nu > h64[3]) return;
    const int32_t *u = (const int32_t *)(blob + h64[1]), *first = (const int32_t *)(blob + h64[3]);
    CHECKF(ctas == 0 || (first[0] == 0 && first[ctas] == nu), "%s: first[] ends", name);
    for (long long c = 0; c < ctas; c++)
        CHECKF(first[c + 1] > first[c], "%s: CTA %lld has no unit", name, c);
    /* what the kernel relies on (templates/sm90a_act16.cuh, the fix-up): a piece with later
     * pieces (nfix > 0) is its CTA's last unit (its fix-up uses the idle ring), and its later
     * pieces are the writer units (one per CTA at most) of the next nfix CTAs, same tile, each
     * starting where the one before ended */
    for (long long c = 0; c < ctas; c++) {
        int writers = 0;
        for (int32_t j = first[c]; j < first[c + 1]; j++) {
            const int32_t *x = u + 8 * j;
            writers += x[6] != 0;
            if (x[0] < 0 || (size_t)x[0] >= n) continue; /* (reported by the cover check) */
            const int32_t ns = (int32_t)((g[x[0]].k + v->block_k - 1) / v->block_k);
            /* a piece from a later stage writes partials; a first piece that does not end the
             * tile adds the later ones (else the kernel would store a partial sum as C) */
            CHECKF(x[6] == (x[3] > 0), "%s: CTA %lld unit %d (stages %d..%d): writer %d", name, c,
                   j, x[3], x[4], x[6]);
            CHECKF((x[3] == 0 && x[4] < ns) == (x[5] > 0), "%s: CTA %lld unit %d (stages %d..%d "
                   "of %d): nfix %d", name, c, j, x[3], x[4], ns, x[5]);
            if (x[5] <= 0) continue;
            CHECKF(j == first[c + 1] - 1, "%s: CTA %lld: unit %d (nfix %d) is not its CTA's last",
                   name, c, j, x[5]);
            CHECKF(c + x[5] < ctas, "%s: CTA %lld: nfix %d past the grid", name, c, x[5]);
            int32_t at = x[4];
            for (int32_t f = 1; f <= x[5] && c + f < ctas; f++) {
                const int32_t *y = NULL;
                for (int32_t k = first[c + f]; k < first[c + f + 1] && !y; k++)
                    if (u[8 * k + 6]) y = u + 8 * k;
                CHECKF(y && y[0] == x[0] && y[1] == x[1] && y[2] == x[2] && y[3] == at,
                       "%s: CTA %lld: piece %d of its split tile not CTA %lld's writer", name, c,
                       f, c + f);
                if (y) at = y[4];
            }
        }
        CHECKF(writers <= 1, "%s: CTA %lld has %d writer units", name, c, writers);
    }
    uint64_t tok = 0;
    for (size_t i = 0; i < n; i++) tok += (uint64_t)(g[i].m * g[i].k * 2);
    uint64_t part = h64[4], flags = h64[5], slot = (uint64_t)v->block_m * v->block_n * 4;
    CHECKF(part >= ws + tok && part % 256 == 0 && flags >= part + slot * (uint64_t)ctas,
           "%s: partial slots at +%llu, flags at +%llu, tokens end at +%llu", name,
           (unsigned long long)(part - ws), (unsigned long long)(flags - ws),
           (unsigned long long)tok);
    for (size_t gi = 0; gi < n; gi++) {
        if (g[gi].m == 0) {
            for (long long i = 0; i < nu; i++)
                CHECKF(u[8 * i] != (int32_t)gi, "%s: a unit of the empty group %zu", name, gi);
            continue;
        }
        int64_t tx = (g[gi].n + v->block_m - 1) / v->block_m, ty = (g[gi].m + v->block_n - 1) / v->block_n;
        int64_t ns = (g[gi].k + v->block_k - 1) / v->block_k;
        int64_t *cnt = calloc((size_t)(tx * ty), sizeof *cnt);
        for (long long i = 0; i < nu; i++) {
            const int32_t *e = u + 8 * i;
            if (e[0] != (int32_t)gi) continue;
            if (e[1] < 0 || e[1] >= tx || e[2] < 0 || e[2] >= ty || e[3] < 0 || e[4] <= e[3] ||
                e[4] > ns) {
                CHECKF(0, "%s: group %zu unit {%d,%d,%d..%d} outside %lldx%lld tiles, %lld stages",
                       name, gi, e[1], e[2], e[3], e[4], (long long)tx, (long long)ty, (long long)ns);
                continue;
            }
            cnt[e[1] * ty + e[2]] += e[4] - e[3];
        }
        for (int64_t c = 0; c < tx * ty; c++)
            CHECKF(cnt[c] == ns, "%s: group %zu tile %lld: %lld of %lld stages", name, gi,
                   (long long)c, (long long)cnt[c], (long long)ns);
        free(cnt);
    }
}

static void run_set(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nvfp4jit_group *g, size_t n) {
    const family *f = fam_get(v->arch);
    char name[128], vn[96];
    nvfp4jit_variant_format(v, vn, sizeof vn);
    snprintf(name, sizeof name, "%s [%zu groups, g0 %lldx%lldx%lld]", vn, n, (long long)g[0].m,
             (long long)g[0].n, (long long)g[0].k);
    size_t bs = f->blob_size(v, g, n);
    unsigned char *blob = calloc(1, bs);
    fam_launch L;
    memset(&L, 0, sizeof L);
    hostmap_reset();
    uint64_t ws = 0x7000000000000ULL;
    nvfp4jit_status s = f->blob_fill(ctx, hostmap_api(), v, g, n, blob, 0x60000000, ws, &L);
    CHECKF(s == NVFP4JIT_OK, "%s: blob_fill: %s", name, nvfp4jit_last_error(ctx));
    if (s) {
        free(blob);
        return;
    }
    const int sm100 = v->arch == NVFP4JIT_ARCH_SM100A;
    const int act16 = !sm100 && v->strategy != NVFP4JIT_STRATEGY_DUAL;
    int32_t h32[4];
    memcpy(h32, blob, sizeof h32);
    uint64_t h64[3] = {0, 0, 0};
    if (sm100 || act16) memcpy(h64, blob + 16, sizeof h64);
    long long nt = h32[0];
    size_t tiles_off = sm100 || act16 ? (size_t)h64[1] : 16 + 64 * n;
    const int sk = v->strategy == NVFP4JIT_STRATEGY_ACT16SK;
    CHECK(tiles_off + (sk ? 32 : 16) * (size_t)nt <= bs);
    const int32_t *t = (const int32_t *)(blob + tiles_off);
    if (sk)
        check_sk(name, v, g, n, blob, bs, ws, &L);
    else
        check_cover(name, g, n, t, nt, v->block_m, v->block_n, v->swap_ab, sm100);
    if (v->strategy == NVFP4JIT_STRATEGY_ACT16P)
        CHECK(L.num_ctas <= (unsigned)nt && (L.num_ctas >= 1 || nt == 0));
    else if (!sk)
        CHECK(L.num_ctas == (unsigned)nt);
    /* maps: per group with M > 0, in blob order */
    int per = sm100 ? 2 : act16 ? 3 : 0;
    int want_maps = 0;
    for (size_t i = 0; i < n; i++) want_maps += g[i].m > 0 ? per : 0;
    CHECKF(hostmap_count() == want_maps, "%s: %d maps encoded, want %d", name, hostmap_count(),
           want_maps);
    uint64_t wsp = ws;
    for (size_t i = 0; i < n && per; i++) {
        const unsigned char *slot = blob + h64[0] + (size_t)per * 128 * i;
        if (g[i].m == 0) {
            CHECKF(hostmap_index_of(slot) < 0, "%s: a map for the empty group %zu", name, i);
            continue;
        }
        const hostmap_rec *m[3];
        for (int j = 0; j < per; j++) {
            int idx = hostmap_index_of(slot + 128 * j);
            m[j] = hostmap_get(idx);
            CHECKF(m[j] != NULL, "%s: group %zu map %d not in its slot", name, i, j);
            if (!m[j]) goto next;
        }
        if (sm100) {
            check_map(name, m[0], blob, g[i].a, (uint64_t)(g[i].m * g[i].k / 2), "A");
            check_map(name, m[1], blob, g[i].b, (uint64_t)(g[i].n * g[i].k / 2), "B");
            CHECK(m[0]->box[1] == (unsigned)v->block_m && m[1]->box[1] == (unsigned)v->block_n);
            CHECK(m[0]->box[0] == (unsigned)v->block_k && m[1]->box[0] == (unsigned)v->block_k);
            for (long long k = 0; k < nt; k++)
                if (t[4 * k] == (int32_t)i) check_sm100_scales(name, v, &g[i], t + 4 * k);
        } else {
            check_map(name, m[0], blob, wsp, (uint64_t)(g[i].m * g[i].k * 2), "fp16 tokens");
            check_map(name, m[1], blob, g[i].b, (uint64_t)(g[i].n * g[i].k / 2), "weights");
            check_map(name, m[2], blob, g[i].sfb, blocked_size(g[i].n, g[i].k), "weight scales");
            int tx = (int)((g[i].n + v->block_m - 1) / v->block_m);
            for (int x = 0; x < tx; x++) check_act16_scales(name, v, &g[i], m[2], x);
        }
    next:
        wsp += (uint64_t)(g[i].m * g[i].k * 2);
    }
    free(blob);
}

/* random sets: 1..4 groups, M in {0, 1..127, up to 700}, N a multiple of 8 up to 520,
 * K a multiple of 64 up to 1280 (tails against every tile size) */
static void random_sets(nvfp4jit_arch arch, int sets) {
    const char *se = getenv("NVFP4JIT_TEST_SEED");
    uint64_t seed = se && *se ? strtoull(se, NULL, 0) : (uint64_t)time(NULL);
    rng = seed;
    printf("  seed %llu (NVFP4JIT_TEST_SEED to repeat)\n", (unsigned long long)seed);
    nvfp4jit_ctx *ctx = NULL;
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    REQUIRE(nvfp4jit_ctx_create(&o, &ctx) == NVFP4JIT_OK);
    size_t nv = 0;
    REQUIRE(nvfp4jit_variant_space(arch, NULL, 0, &nv) == NVFP4JIT_OK);
    nvfp4jit_variant *vs = calloc(nv, sizeof *vs);
    REQUIRE(nvfp4jit_variant_space(arch, vs, nv, &nv) == NVFP4JIT_OK);
    long long checked = 0;
    for (int s = 0; s < sets; s++) {
        nvfp4jit_group g[4];
        size_t n = (size_t)rnd_in(1, 4);
        for (size_t i = 0; i < n; i++) {
            memset(&g[i], 0, sizeof g[i]);
            int kind = (int)rnd_in(0, 3);
            g[i].m = kind == 0 ? 0 : kind == 1 ? rnd_in(1, 127) : rnd_in(1, 700);
            g[i].n = 8 * rnd_in(1, 65);
            g[i].k = 64 * rnd_in(1, 20);
            make_group(&g[i], i);
        }
        if (s == 0) { /* the review's shapes: 200x136x320, M = 0, 1x8x64, 384x4096x7168 */
            n = 4;
            int64_t sh[4][3] = {{200, 136, 320}, {0, 64, 128}, {1, 8, 64}, {384, 4096, 7168}};
            for (size_t i = 0; i < n; i++) {
                g[i].m = sh[i][0];
                g[i].n = sh[i][1];
                g[i].k = sh[i][2];
                make_group(&g[i], i);
            }
        }
        for (size_t i = 0; i < nv; i++) {
            int before = tu_failures;
            run_set(ctx, &vs[i], g, n);
            checked++;
            if (tu_failures > before + 20) break;
        }
    }
    printf("  %zu variants x %d problem sets: %lld blob fills checked\n", nv, sets, checked);
    free(vs);
    nvfp4jit_ctx_destroy(ctx);
}

void hostmap_test_sm100a(void) { random_sets(NVFP4JIT_ARCH_SM100A, 40); }
void hostmap_test_sm90a(void) { random_sets(NVFP4JIT_ARCH_SM90A, 6); }
