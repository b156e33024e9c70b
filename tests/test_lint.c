/* test_lint.c - the lint area: checks read from the COMPILED artifacts of every variant (the
 * PTX that NVRTC produced and the cubin nvJitLink linked), not re-derived from the template's
 * own arithmetic. The analysis itself is in tests/lint_ptx.c (see lint.h); the tensor maps
 * come from the family's blob_fill run against a recording cuTensorMapEncodeTiled.
 *
 * Per variant:
 *  1. alignment: every cp.async.bulk.tensor destination is known (for every path and every
 *     loop iteration) to be aligned to what its tensor map's swizzle needs (128B: 1024,
 *     64B: 512, none: 128); bulk-copy and cp.async destinations to 16; the start address of
 *     every UMMA (tcgen05.mma) and wgmma A/B shared-memory descriptor lies in the first row
 *     of a swizzle atom (address mod span < row bytes) - where it advances by a run-time loop
 *     (sm_100a's k-step loop) the atom base (the part without the loop term) is checked and
 *     the loop term must be a multiple of 16;
 *  2. transaction bytes: per mbarrier, the bytes announced by expect_tx equal the bytes its
 *     copies deliver: TMA boxes in full (the recorded map's box x element size: out-of-bounds
 *     elements are zero-filled and still counted, static) plus the bulk copies' size operands
 *     (run-time values: compared as affine expressions over the same registers);
 *  3. sm_100a: the tcgen05 instruction descriptor is a constant that decodes to the variant's
 *     M and N, E2M1 A and B, UE4M3 scales, K-major, dense, no negation; the A/B shared-memory
 *     descriptors' fields (layout, SBO, version) match the tensor maps' swizzle; the scale
 *     descriptors are unswizzled with SBO 128. sm_90a: wgmma descriptors are 128B-swizzle with
 *     SBO 1024 (act16: its token map is 128B-swizzled);
 *  4. sm_100a tensor memory: the tcgen05.alloc immediate is a power of two in 32..512, covers
 *     the accumulator (N from the instruction descriptor) and every column tcgen05.cp writes
 *     (offsets from the PTX; the k-loop's trip count bounded by BLOCK_K/64, the number of
 *     MMA_K = 64 steps of a k-tile - the one input taken from the variant), the scale columns
 *     do not overlap the accumulator, and the MMA's SFA operand lies inside the columns
 *     tcgen05.cp wrote (SFB's, with its run-time lane offset, is not bounded by the known
 *     bits: reported as loose, see tmem_cols_range); CTAs co-resident by shared memory x columns <= 512 is
 *     reported, and a variant over it is listed as waiting in tcgen05.alloc (a waiting CTA
 *     holds no columns and depends on no other CTA, so it is slow, not a hang).
 * The sm_90a space (~650 variants) is covered by a sample with every value of every
 * dimension for every strategy; NVFP4JIT_LINT_ALL=1 lints all of it (~4 min on 2 cores). */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile.h"
#include "family.h"
#include "jit.h"
#include "lint.h"
#include "testutil.h"

typedef struct lint_stats {
    int tensor_copies, bulk_copies, cp_async, expect_tx, descs, advances, mmas;
    int misaligned; /* alignment failures (the old-template test counts them) */
    int loose;      /* run-time tensor-memory column terms left out of the range check */
    int fails;
    int tmem_cols, tmem_used, ctas_smem;
    unsigned idesc;
    uint64_t desc_hi;
} lint_stats;

static int lint_verbose(void) {
    const char *e = getenv("NVFP4JIT_LINT_VERBOSE");
    return e && *e == '1';
}

#define LFAIL(st, ...)                                                                       \
    do {                                                                                     \
        fprintf(stderr, "  lint %s: ", name);                                                \
        fprintf(stderr, __VA_ARGS__);                                                        \
        fprintf(stderr, "\n");                                                               \
        (st)->fails++;                                                                       \
    } while (0)

/* the operand that is a memory reference [..] (the mbarrier of an expect_tx) */
static const char *mem_operand(const lint_insn *in) {
    for (int i = 0; i < in->nops; i++)
        if (in->ops[i][0] == '[') return in->ops[i];
    return NULL;
}

typedef struct txgroup {
    char text[160];   /* mbarrier operand */
    lint_affine key;  /* mbarrier address */
    lint_affine want; /* expect_tx bytes */
    lint_affine got;  /* copies' bytes */
    int nexp, ncopy;
} txgroup;

/* copies and expect_tx meet at one mbarrier: the same operand, or the same affine address */
static txgroup *tx_find(txgroup *g, int *n, int cap, const char *text, const lint_affine *key) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(g[i].text, text) || lint_affine_eq(&g[i].key, key)) return &g[i];
    if (*n == cap) return NULL;
    txgroup *t = &g[(*n)++];
    memset(t, 0, sizeof *t);
    snprintf(t->text, sizeof t->text, "%s", text);
    t->key = *key;
    t->want.ok = t->got.ok = 1;
    return t;
}

/* Start address of a shared-memory matrix descriptor (start field = address >> 4, bits 0-13):
 * in the first row of a swizzle atom of `span` bytes with rows of `row` bytes. */
static void check_desc_start(const char *name, const lint_prog *p, const char *op,
                             unsigned span, unsigned row, const char *what, lint_stats *st) {
    tnum t = lint_operand(p, op);
    uint64_t fld;
    int bits = 0;
    while ((1u << bits) < span / 16) bits++;
    st->descs++;
    if (tnum_low_known(t, bits, &fld)) {
        uint64_t res = fld << 4;
        if (res >= row) {
            LFAIL(st, "%s descriptor %s: start address = %llu mod %u, not in the first %u-byte "
                  "row of a swizzle atom", what, op, (unsigned long long)res, span, row);
            st->misaligned++;
        }
        return;
    }
    /* a run-time term: split the address it was built from into atom base + loop terms */
    uint64_t hi, adv;
    int ar = lint_desc_addr(p, op, &hi, &adv);
    if (ar < 0) {
        LFAIL(st, "%s descriptor %s: start address not known mod %u and not traceable", what, op,
              span);
        st->misaligned++;
        return;
    }
    lint_affine a = lint_affine_of(p, p->reg[ar]);
    if (!a.ok) {
        LFAIL(st, "%s descriptor %s: address %s is not affine", what, op, p->reg[ar]);
        st->misaligned++;
        return;
    }
    a.c += (long long)adv; /* an advance added to the start field after the shift */
    tnum base = tnum_const((uint64_t)a.c);
    char buf[512];
    lint_affine_str(p, &a, buf, sizeof buf);
    for (int i = 0; i < a.n; i++) {
        tnum term = tnum_mul(lint_atom_val(p, a.atom[i]), tnum_const((uint64_t)a.coef[i]));
        if (tnum_aligned(term, span)) continue;
        if (a.atom[i] >= p->nreg && a.coef[i] > 0 && a.coef[i] % 16 == 0 && a.coef[i] < row) {
            st->advances++; /* k-step inside the atom's row: trip count not bounded here */
            continue;
        }
        LFAIL(st, "%s descriptor %s: address %s: term %lld*%s is not a multiple of %u", what,
              op, buf, (long long)a.coef[i],
              a.atom[i] >= p->nreg ? "iter" : p->reg[a.atom[i]], span);
        st->misaligned++;
        return;
    }
    uint64_t r = base.v % span;
    if (r >= row) {
        LFAIL(st, "%s descriptor %s: address %s: atom offset %llu mod %u", what, op, buf,
              (unsigned long long)r, span);
        st->misaligned++;
    }
}

/* the constant fields of a descriptor (bits 14..63), from its value or the or-ed constant */
static int desc_fields(const lint_prog *p, const char *op, uint64_t *hi) {
    tnum t = lint_operand(p, op);
    if ((t.m >> 14) == 0) {
        *hi = t.v & ~0x3FFFULL;
        return 1;
    }
    return lint_desc_addr(p, op, hi, NULL) >= 0 && *hi != 0;
}

/* Record the tensor maps the family encodes for one small group (the lint needs their
 * swizzle and box; the host-side rules are tests/test_hostmap.c's). */
static int record_maps(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v) {
    const family *f = fam_get(v->arch);
    nvfp4jit_group g = {200, 136, 320, 0x10000000, 0x20000000, 0x30000000, 0x40000000,
                        0x50000000};
    size_t bs = f->blob_size(v, &g, 1);
    unsigned char *blob = calloc(1, bs);
    fam_launch L;
    memset(&L, 0, sizeof L);
    hostmap_reset();
    nvfp4jit_status s = f->blob_fill(ctx, hostmap_api(), v, &g, 1, blob, 0x60000000,
                                     0x70000000, &L);
    free(blob);
    return s == NVFP4JIT_OK ? hostmap_count() : -1;
}

/* Column range [*lo, *hi] of a tensor-memory address operand relative to the allocation's
 * base (the one atom with coefficient 1: the address read from tcgen05.alloc's slot): loop
 * terms bounded by `trips` iterations, other run-time terms by their known bits. A run-time
 * term whose known bits allow more than 16 columns makes the operand "loose" (counted in
 * *loose, @return 2, no range): SFB's lane offset (off_n % 128) / 32 is 0..3, but the compiler
 * folds it with the column constant into a signed remainder in 8/16-bit steps whose known
 * bits only bound the sum by 255. @return 1 with a range, 0 if unbounded. */
static int tmem_cols_range(const lint_prog *p, const char *op, int trips, long long *lo,
                           long long *hi, int *loose) {
    lint_affine a = lint_affine_of(p, op);
    if (!a.ok) return 0;
    *lo = *hi = a.c;
    int based = 0;
    for (int t = 0; t < a.n; t++) {
        long long c = a.coef[t], span;
        if (a.atom[t] >= p->nreg) {
            span = c * (trips - 1);
        } else if (c == 1 && !based) {
            based = 1;
            continue;
        } else {
            tnum v = lint_atom_val(p, a.atom[t]);
            if (v.m >> 16) return 0; /* not small */
            if (c * (long long)((v.v | v.m) - v.v) > 16 || c * (long long)v.v > 16) {
                if (loose) ++*loose;
                return 2; /* the term may hold a constant part too: no range at all */
            }
            *lo += c > 0 ? c * (long long)v.v : c * (long long)(v.v | v.m);
            span = c > 0 ? c * (long long)((v.v | v.m) - v.v) : 0;
        }
        if (span > 0) *hi += span; else *lo += span;
    }
    return based;
}

/* Lint one entry of a variant (NJ_KERNEL_NAME, or the sm_100a MoE entry NJ_KERNEL_NAME
 * "_moe", whose token map is encoded like the grouped A map: same box and swizzle, so the
 * recorded maps serve both). @return number of failures; *out gets the counts. */
static int lint_entry(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, const char *entry,
                      lint_stats *out) {
    lint_stats st0, *st = &st0;
    memset(st, 0, sizeof *st);
    char name[160];
    nvfp4jit_variant_format(v, name, sizeof name);
    if (strcmp(entry, NJ_KERNEL_NAME)) snprintf(name + strlen(name), sizeof name - strlen(name), " (%s)", entry);
    nvfp4jit_kernel *k = NULL;
    if (nvfp4jit_compile(ctx, v, &k) != NVFP4JIT_OK) {
        LFAIL(st, "does not compile: %.300s", nvfp4jit_last_error(ctx));
        *out = *st;
        return st->fails;
    }
    const void *ptx, *cubin;
    size_t np, nc;
    nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_PTX, &ptx, &np);
    nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &cubin, &nc);
    lint_prog p;
    char err[256];
    if (lint_load(&p, ptx, entry, cubin, nc, err, sizeof err) != 0) {
        LFAIL(st, "%s", err);
        *out = *st;
        return st->fails;
    }
    const int sm100 = v->arch == NVFP4JIT_ARCH_SM100A;
    const int act16 = !sm100 && v->strategy != NVFP4JIT_STRATEGY_DUAL;
    if (p.dyn_base < 0)
        LFAIL(st, "no .nv.shared.%s section in the cubin: dynamic base unknown", entry);

    /* tensor maps in encode order; copies in program order use them in this pattern
     * (asm volatile statements keep their order): sm_100a A, B; act16, per stage, a token box
     * per 64-k block, the weights, and one scale box of the stage's 64-k blocks of every 128-row
     * block a weight tile touches (fam_sm90.c act16_sf_map) */
    int nmaps = record_maps(ctx, v);
    int pat[32], plen = 0;
    if (sm100) {
        pat[plen++] = 0;
        pat[plen++] = 1;
    } else if (act16) {
        int ksub = v->block_k / 64;
        for (int j = 0; j < ksub; j++) pat[plen++] = 0;
        pat[plen++] = 1;
        pat[plen++] = 2; /* the stage's scales: one 3-D box (fam_sm90.c act16_sf_map) */
    }
    if (nmaps < 0 || (plen && nmaps < 2)) LFAIL(st, "blob_fill with the stub driver failed");

    txgroup groups[64];
    int ngroups = 0, ntensor = 0, alloc_cols = -1;
    int cp_min = 1 << 30, cp_max = -1, mma_sf_lo = 1 << 30, mma_sf_hi = -1;
    unsigned idesc = 0;
    const int sub = v->block_k / 64; /* MMA_K = 64 steps per k-tile (sm_100a) */
    for (int i = 0; i < p.n; i++) {
        const lint_insn *in = &p.in[i];
        const char *op = in->op;
        if (!strncmp(op, "cp.async.bulk.tensor", 20)) {
            st->tensor_copies++;
            if (!plen || nmaps < 2) {
                LFAIL(st, "line %d: a tensor copy in a variant without tensor maps", in->line);
                continue;
            }
            const hostmap_rec *m = hostmap_get(pat[ntensor++ % plen]);
            unsigned need = hostmap_dst_align(m);
            tnum t = lint_operand(&p, in->ops[0]);
            if (!tnum_aligned(t, need)) {
                char b[16];
                tnum_str(t, 10, b, sizeof b);
                LFAIL(st, "line %d: TMA destination %s = %s (bits 9..0) not known %u-aligned",
                      in->line, in->ops[0], b, need);
                st->misaligned++;
            }
            lint_affine key = lint_affine_of(&p, in->ops[2]);
            txgroup *g = tx_find(groups, &ngroups, 64, in->ops[2], &key);
            if (g) {
                lint_affine bytes = {(int64_t)hostmap_box_bytes(m), 0, {0}, {0}, 1};
                lint_affine_add(&g->got, &bytes, 1);
                g->ncopy++;
            }
        } else if (!strncmp(op, "cp.async.bulk.shared", 20)) {
            st->bulk_copies++;
            if (!tnum_aligned(lint_operand(&p, in->ops[0]), 16)) {
                LFAIL(st, "line %d: bulk-copy destination %s not 16-aligned", in->line, in->ops[0]);
                st->misaligned++;
            }
            lint_affine key = lint_affine_of(&p, in->ops[3]);
            lint_affine bytes = lint_affine_of(&p, in->ops[2]);
            txgroup *g = tx_find(groups, &ngroups, 64, in->ops[3], &key);
            if (g) {
                lint_affine_add(&g->got, &bytes, 1);
                g->ncopy++;
            }
        } else if (!strncmp(op, "cp.async.cg.", 12) || !strncmp(op, "cp.async.ca.", 12)) {
            st->cp_async++;
            uint64_t sz = 16;
            tnum s = lint_operand(&p, in->ops[2]);
            if (!s.m) sz = s.v;
            if (!tnum_aligned(lint_operand(&p, in->ops[0]), sz)) {
                LFAIL(st, "line %d: cp.async destination %s not %llu-aligned", in->line,
                      in->ops[0], (unsigned long long)sz);
                st->misaligned++;
            }
        } else if (strstr(op, "expect_tx")) {
            st->expect_tx++;
            const char *mb = mem_operand(in);
            if (!mb) continue;
            lint_affine key = lint_affine_of(&p, mb);
            lint_affine bytes = lint_affine_of(&p, in->ops[in->nops - 1]);
            txgroup *g = tx_find(groups, &ngroups, 64, mb, &key);
            if (g) {
                lint_affine_add(&g->want, &bytes, 1);
                g->nexp++;
            }
        } else if (!strncmp(op, "tcgen05.alloc", 13)) {
            tnum c = lint_operand(&p, in->ops[in->nops - 1]);
            alloc_cols = c.m ? -1 : (int)c.v;
        } else if (!strncmp(op, "tcgen05.mma", 11)) {
            st->mmas++;
            /* [d], a_desc, b_desc, i_desc, [sfa], [sfb], enable */
            tnum id = lint_operand(&p, in->ops[3]);
            if (id.m & 0xFFFFFFFFULL) {
                LFAIL(st, "line %d: instruction descriptor %s is not a constant", in->line,
                      in->ops[3]);
            } else {
                idesc = (unsigned)id.v;
                /* PTX ISA "Instruction descriptor" for .kind::mxf4nvf4 (CUTLASS
                 * InstrDescriptorBlockScaled): 0-1 sparse id, 2 sparse, 4-5 B scale id,
                 * 7-9 A format, 10-12 B format (E2M1 = 1), 13/14 negate A/B, 15/16 A/B
                 * major (0 = K), 17-22 N >> 3, 23 scale format (0 = UE4M3), 24-28 M >> 4,
                 * 29-30 A scale id, 31 K size (0 = dense K 64) */
                unsigned n = ((idesc >> 17) & 63) << 3, m = ((idesc >> 24) & 31) << 4;
                unsigned af = (idesc >> 7) & 7, bf = (idesc >> 10) & 7, sc = (idesc >> 23) & 1;
                unsigned rest = idesc & ((3u << 0) | (1u << 2) | (3u << 4) | (3u << 13) |
                                         (3u << 15) | (3u << 29) | (1u << 31));
                if ((int)n != v->block_n || (int)m != v->block_m || af != 1 || bf != 1 ||
                    sc != 0 || rest)
                    LFAIL(st, "idesc 0x%08x decodes to M %u N %u A fmt %u B fmt %u scale %s "
                          "other bits 0x%x; want M %d N %d E2M1 E2M1 UE4M3 0", idesc, m, n, af,
                          bf, sc ? "UE8M0" : "UE4M3", rest, v->block_m, v->block_n);
            }
            /* scale operands: inside the columns tcgen05.cp writes (checked after the loop) */
            for (int j = 4; j <= 5 && in->nops > 5; j++) {
                long long lo, hi;
                int rr = tmem_cols_range(&p, in->ops[j], sub, &lo, &hi, &st->loose);
                if (rr == 2) continue; /* not checked: counted as loose */
                if (!rr) {
                    LFAIL(st, "line %d: scale operand %s: columns not bounded", in->line,
                          in->ops[j]);
                    continue;
                }
                if (lo < mma_sf_lo) mma_sf_lo = (int)lo;
                if (hi > mma_sf_hi) mma_sf_hi = (int)hi;
            }
            /* A/B descriptors against the maps' swizzle */
            if (nmaps >= 2) {
                const hostmap_rec *ma = hostmap_get(0), *mb = hostmap_get(1);
                const hostmap_rec *mm[2] = {ma, mb};
                for (int j = 0; j < 2; j++) {
                    unsigned span = hostmap_dst_align(mm[j]);
                    unsigned row = span / 8; /* 8 rows per swizzle atom */
                    const char *dop = in->ops[1 + j];
                    check_desc_start(name, &p, dop, span, row, j ? "B" : "A", st);
                    uint64_t hi;
                    if (!desc_fields(&p, dop, &hi)) {
                        LFAIL(st, "line %d: %s descriptor fields not constant", in->line,
                              j ? "B" : "A");
                        continue;
                    }
                    /* PTX ISA tcgen05 "Shared memory descriptor": 32-45 SBO >> 4, 46-47
                     * version 1, 49-51 base offset, 52 LBO mode, 61-63 layout (2 = 128B
                     * swizzle, 4 = 64B, 6 = 32B); LBO (16-29) is unused for swizzled K-major */
                    unsigned layout = (unsigned)(hi >> 61), sbo = (unsigned)((hi >> 32) & 0x3FFF) << 4;
                    unsigned ver = (unsigned)((hi >> 46) & 3), boff = (unsigned)((hi >> 49) & 7);
                    unsigned want_layout = mm[j]->swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 2
                                           : mm[j]->swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 4
                                           : mm[j]->swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 6 : 0;
                    if (layout != want_layout || sbo != 8 * row || ver != 1 || boff != 0 ||
                        ((hi >> 52) & 1))
                        LFAIL(st, "%s descriptor high word 0x%08llx: layout %u SBO %u version %u "
                              "base offset %u; the map's swizzle wants layout %u SBO %u",
                              j ? "B" : "A", (unsigned long long)(hi >> 32), layout, sbo, ver,
                              boff, want_layout, 8 * row);
                    st->desc_hi = hi >> 32;
                }
            }
        } else if (!strncmp(op, "tcgen05.cp", 10)) {
            uint64_t hi;
            check_desc_start(name, &p, in->ops[1], 16, 16, "scale", st);
            if (!desc_fields(&p, in->ops[1], &hi)) {
                LFAIL(st, "line %d: scale descriptor fields not constant", in->line);
            } else {
                unsigned layout = (unsigned)(hi >> 61), sbo = (unsigned)((hi >> 32) & 0x3FFF) << 4;
                /* 32x128b.warpx4 from the blocked layout: 32 rows x 16 bytes, no swizzle, 8-row
                 * core-matrix groups 128 bytes apart */
                if (layout != 0 || sbo != 128 || ((hi >> 46) & 3) != 1)
                    LFAIL(st, "scale descriptor high word 0x%08llx: layout %u SBO %u",
                          (unsigned long long)(hi >> 32), layout, sbo);
            }
            /* columns written: base + c + sum step*iter, iter < sub; 4 columns per copy */
            long long lo, hi2;
            if (tmem_cols_range(&p, in->ops[0], sub, &lo, &hi2, NULL) != 1) {
                LFAIL(st, "line %d: tcgen05.cp destination %s: columns not bounded", in->line,
                      in->ops[0]);
            } else {
                if (lo < cp_min) cp_min = (int)lo;
                if (hi2 + 4 > cp_max) cp_max = (int)hi2 + 4;
            }
        } else if (!strncmp(op, "wgmma.mma_async", 15)) {
            st->mmas++;
            /* descriptors: the 64-bit register operands (SS: A and B; RS: B) */
            for (int j = 1; j < in->nops; j++) {
                if (strncmp(in->ops[j], "%rd", 3)) continue;
                /* 128B swizzle: 1024-byte atoms of 8 rows x 128 bytes */
                check_desc_start(name, &p, in->ops[j], 1024, 128, "wgmma", st);
                uint64_t hi;
                if (!desc_fields(&p, in->ops[j], &hi)) {
                    LFAIL(st, "line %d: wgmma descriptor fields not constant", in->line);
                    continue;
                }
                /* PTX ISA wgmma "Matrix Descriptor Format": 16-29 LBO >> 4, 32-45 SBO >> 4,
                 * 62-63 swizzle (1 = 128B) */
                unsigned sw = (unsigned)(hi >> 62), sbo = (unsigned)((hi >> 32) & 0x3FFF) << 4;
                unsigned want_sw = 1;
                if (act16 && nmaps >= 1 && hostmap_get(0)->swizzle != CU_TENSOR_MAP_SWIZZLE_128B)
                    want_sw = 99; /* the token map must be 128B-swizzled for this layout */
                if (sw != want_sw || sbo != 1024)
                    LFAIL(st, "wgmma descriptor high word 0x%08llx: swizzle %u SBO %u, want 1, "
                          "1024", (unsigned long long)(hi >> 32), sw, sbo);
                st->desc_hi = hi >> 32;
            }
        }
    }
    /* 2. transaction bytes per mbarrier */
    for (int i = 0; i < ngroups; i++) {
        txgroup *g = &groups[i];
        char a[512], b[512], kk[256];
        lint_affine_str(&p, &g->want, a, sizeof a);
        lint_affine_str(&p, &g->got, b, sizeof b);
        lint_affine_str(&p, &g->key, kk, sizeof kk);
        if (!g->nexp)
            LFAIL(st, "copies to mbarrier %s complete %s bytes that no expect_tx announces", kk, b);
        else if (g->ncopy && !lint_affine_eq(&g->want, &g->got))
            LFAIL(st, "mbarrier %s: expect_tx %s bytes, copies deliver %s", kk, a, b);
    }
    if (plen && ntensor % plen)
        LFAIL(st, "%d tensor copies: not whole stages of the pattern (%d per stage)", ntensor, plen);
    /* 4. tensor memory */
    const family *f = fam_get(v->arch);
    long long smem_cta = (long long)f->dyn_smem(v) + (p.static_shared > 0 ? p.static_shared : 0);
    st->ctas_smem = (int)(233472 / smem_cta); /* 228 KB of shared memory per SM */
    if (sm100) {
        int n = (int)((idesc >> 17) & 63) << 3;
        st->tmem_cols = alloc_cols;
        st->tmem_used = cp_max > n ? cp_max : n;
        if (alloc_cols < 32 || alloc_cols > 512 || (alloc_cols & (alloc_cols - 1)))
            LFAIL(st, "tcgen05.alloc of %d columns: not a power of two in 32..512", alloc_cols);
        if (cp_max < 0)
            LFAIL(st, "no tcgen05.cp destinations found");
        else if (cp_min < n)
            LFAIL(st, "scale columns from %d overlap the accumulator (0..%d)", cp_min, n - 1);
        /* the MMA's scale addresses (with SFB's run-time lane offset) read written columns */
        if (cp_max >= 0 && (mma_sf_lo < cp_min || mma_sf_hi >= cp_max))
            LFAIL(st, "MMA scale columns %d..%d outside the copied %d..%d", mma_sf_lo, mma_sf_hi,
                  cp_min, cp_max - 1);
        if (st->tmem_used > alloc_cols)
            LFAIL(st, "uses %d tensor-memory columns, allocates %d", st->tmem_used, alloc_cols);
        if (!st->mmas) LFAIL(st, "no tcgen05.mma");
    }
    st->idesc = idesc;
    if (lint_verbose() || st->fails) {
        printf("  %-30s base 0x%llx copies %d+%d+%d expect_tx %d descs %d (k-loop %d) ", name,
               (unsigned long long)p.dyn_base, st->tensor_copies, st->bulk_copies, st->cp_async,
               st->expect_tx, st->descs, st->advances);
        if (sm100)
            printf("idesc 0x%08x desc 0x%08llx tmem %d/%d (%d loose) CTAs/SM smem %d tmem %d%s",
                   idesc, (unsigned long long)st->desc_hi, st->tmem_used, alloc_cols, st->loose,
                   st->ctas_smem, alloc_cols > 0 ? 512 / alloc_cols : 0,
                   alloc_cols > 0 && st->ctas_smem * alloc_cols > 512 ? " (waits in alloc)" : "");
        printf("%s\n", st->fails ? " FAIL" : "");
    }
    lint_free(&p);
    *out = *st;
    return st->fails;
}

static int lint_variant(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, lint_stats *out) {
    return lint_entry(ctx, v, NJ_KERNEL_NAME, out);
}

static nvfp4jit_ctx *mk(void) {
    nvfp4jit_ctx_options o = {0};
    nvfp4jit_ctx *c = NULL;
    nvfp4jit_ctx_create(&o, &c); /* default cache dir: test.sh points it at a fresh one */
    return c;
}

static void t_sm100a(void) {
    nvfp4jit_ctx *ctx = mk();
    REQUIRE(ctx);
    size_t n = 0;
    REQUIRE(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM100A, NULL, 0, &n) == NVFP4JIT_OK);
    nvfp4jit_variant *vs = calloc(n, sizeof *vs);
    REQUIRE(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM100A, vs, n, &n) == NVFP4JIT_OK);
    int bad = 0, waits = 0;
    for (size_t i = 0; i < n; i++) {
        lint_stats st;
        bad += lint_variant(ctx, &vs[i], &st) > 0;
        CHECK(st.tensor_copies > 0 && st.bulk_copies > 0 && st.expect_tx > 0 && st.mmas > 0);
        if (st.ctas_smem * st.tmem_cols > 512) { /* documented: slow, not a hang */
            char vn[96];
            nvfp4jit_variant_format(&vs[i], vn, sizeof vn);
            printf("  %s: %d CTAs fit by shared memory, %d by tensor memory (%d columns): the "
                   "others wait in tcgen05.alloc\n", vn, st.ctas_smem, 512 / st.tmem_cols,
                   st.tmem_cols);
            waits++;
        }
    }
    CHECKF(bad == 0, "%d of %zu sm_100a variants fail the lint", bad, n);
    printf("  lint: %zu sm_100a variants, %d failing, %d wait for tensor memory at full "
           "shared-memory occupancy\n", n, bad, waits);
    /* the MoE entry of every variant: the same rules (its A copies read the per-call token
     * map, its scale copies the per-call token scales) */
    int bad_moe = 0;
    for (size_t i = 0; i < n; i++) {
        lint_stats st;
        bad_moe += lint_entry(ctx, &vs[i], NJ_KERNEL_NAME "_moe", &st) > 0;
        CHECK(st.tensor_copies > 0 && st.bulk_copies > 0 && st.expect_tx > 0 && st.mmas > 0);
    }
    CHECKF(bad_moe == 0, "%d of %zu sm_100a MoE entries fail the lint", bad_moe, n);
    printf("  lint: %zu sm_100a MoE entries, %d failing\n", n, bad_moe);
    free(vs);
    nvfp4jit_ctx_destroy(ctx);
}

/* The descriptor tracer on hand-written PTX: an advance added to the start field after the
 * shift is found and counted; one or-ed into it (a review's counter-example: `or.b32 x, start,
 * 8` passed as a field, +0 bytes) and advances that would carry out of the 14-bit field are
 * not traceable, so the start check fails rather than passing them. */
static void t_desc_trace(void) {
    static const char *ptx =
        ".version 8.0\n.target sm_90a\n.address_size 64\n"
        ".extern .shared .align 16 .b8 smem[];\n"
        ".visible .entry k(\n.param .u64 k_p\n)\n{\n"
        ".reg .b32 %r<20>;\n.reg .b64 %rd<20>;\n"
        "ld.param.u32 %r1, [k_p];\n"
        "mov.u32 %r2, smem;\n"
        "add.s32 %r3, %r2, %r1;\n"
        "shr.u32 %r4, %r3, 4;\n"
        "or.b32 %r5, %r4, 65536;\n"
        "or.b32 %r6, %r5, 8;\n"
        "cvt.u64.u32 %rd1, %r6;\n"
        "or.b64 %rd2, %rd1, 4611686293305294848;\n"
        "add.s32 %r7, %r5, 8;\n"
        "cvt.u64.u32 %rd3, %r7;\n"
        "or.b64 %rd4, %rd3, 4611686293305294848;\n"
        "add.s32 %r8, %r5, 16383;\n"
        "add.s32 %r9, %r8, 1;\n"
        "cvt.u64.u32 %rd5, %r9;\n"
        "or.b64 %rd6, %rd5, 4611686293305294848;\n"
        "ret;\n}\n";
    lint_prog p;
    char err[256];
    REQUIRE(lint_load(&p, ptx, "k", NULL, 0, err, sizeof err) == 0);
    uint64_t hi, off;
    CHECK(lint_desc_addr(&p, "%rd2", &hi, &off) < 0); /* or-ed into the start field */
    int r = lint_desc_addr(&p, "%rd4", &hi, &off);     /* added: 8 * 16 bytes */
    CHECK(r >= 0 && off == 128 && hi == (4611686293305294848ULL | 65536));
    CHECK(lint_desc_addr(&p, "%rd6", &hi, &off) < 0); /* 16384: out of the field */
    lint_free(&p);
}

static void t_sm90a(void) {
    nvfp4jit_ctx *ctx = mk();
    REQUIRE(ctx);
    size_t n = 0;
    REQUIRE(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, NULL, 0, &n) == NVFP4JIT_OK);
    nvfp4jit_variant *vs = calloc(n, sizeof *vs);
    REQUIRE(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM90A, vs, n, &n) == NVFP4JIT_OK);
    const char *all = getenv("NVFP4JIT_LINT_ALL");
    unsigned char *pick = calloc(n, 1);
    if (all && *all == '1') {
        memset(pick, 1, n);
    } else {
        /* greedy cover: a variant is taken if it brings a (strategy, swap, dimension, value)
         * pair not yet covered */
        enum { D = 4 };
        static unsigned char seen[4][2][D][512];
        memset(seen, 0, sizeof seen);
        int wide_k[3] = {0, 0, 0};
        for (size_t i = 0; i < n; i++) {
            const nvfp4jit_variant *v = &vs[i];
            int val[D] = {v->block_m, v->block_n, v->block_k, v->stages};
            int news = 0;
            for (int d = 0; d < D; d++) news += !seen[v->strategy][v->swap_ab][d][val[d] & 511];
            /* act16's wide form (its own consumer and producer code): one per BLOCK_K */
            if (sm90_act16_wide(v) && !wide_k[v->block_k / 128]) {
                wide_k[v->block_k / 128] = 1;
                news = 1;
            }
            if (!news) continue;
            pick[i] = 1;
            for (int d = 0; d < D; d++) seen[v->strategy][v->swap_ab][d][val[d] & 511] = 1;
        }
    }
    int bad = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
        if (!pick[i]) continue;
        lint_stats st;
        bad += lint_variant(ctx, &vs[i], &st) > 0;
        done++;
        if (vs[i].strategy == NVFP4JIT_STRATEGY_DUAL)
            CHECK(st.cp_async > 0 && st.mmas > 0 && st.descs > 0);
        else
            CHECK(st.tensor_copies > 0 && st.expect_tx > 0 && st.mmas > 0 && st.descs > 0);
    }
    CHECKF(bad == 0, "%d of %d sm_90a variants fail the lint", bad, done);
    printf("  lint: %d of %zu sm_90a variants (%s), %d failing\n", done, n,
           done == (int)n ? "all" : "every value of every dimension per strategy and swap; "
                                    "NVFP4JIT_LINT_ALL=1 for all", bad);
    free(pick);
    free(vs);
    nvfp4jit_ctx_destroy(ctx);
}

/* The lint must see the defect it was written for: the current sm_100a template with its
 * run-time round-up of the dynamic base removed (the pre-fix template, 488f55a^) fails it.
 * NVFP4JIT_TEMPLATE_DIR makes the library read templates from a directory first. */
static void t_no_roundup(void) {
    const char *src = getenv("NVFP4JIT_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/sm100a_grouped.cu",
             src && *src ? src : NVFP4JIT_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *line = "const int smem = (smem_raw + 1023) & ~1023;";
    char *at = strstr(text, line);
    REQUIRE(at);
    const char *repl = "const int smem = smem_raw;";
    size_t rl = strlen(repl), ll = strlen(line);
    memmove(at + rl, at + ll, strlen(at + ll) + 1);
    memcpy(at, repl, rl);
    const char *dir = tu_tmpdir();
    snprintf(path, sizeof path, "%s/sm100a_grouped.cu", dir);
    f = fopen(path, "wb");
    REQUIRE(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    const char *old = getenv("NVFP4JIT_TEMPLATE_DIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("NVFP4JIT_TEMPLATE_DIR", dir, 1);
    nvfp4jit_ctx *ctx = mk();
    static const nvfp4jit_variant vs[] = {{NVFP4JIT_ARCH_SM100A, 128, 64, 256, 6, 0, 0},
                                          {NVFP4JIT_ARCH_SM100A, 128, 128, 128, 7, 0, 0}};
    for (size_t i = 0; ctx && i < sizeof vs / sizeof *vs; i++) {
        lint_stats st;
        printf("  (failures below are expected: the template without the round-up)\n");
        int fails = lint_variant(ctx, &vs[i], &st);
        CHECKF(fails > 0 && st.misaligned > 0, "lint passed a template without the round-up "
               "(%d failures, %d misaligned)", fails, st.misaligned);
    }
    nvfp4jit_ctx_destroy(ctx);
    if (saved) {
        setenv("NVFP4JIT_TEMPLATE_DIR", saved, 1);
        free(saved);
    } else {
        unsetenv("NVFP4JIT_TEMPLATE_DIR");
    }
    tu_rmtree(dir);
}

/* ---- seed equivalence (issue 9 part 5; docs/sm100a-seed-vs-family.md) ---- */

/* The PTX facts of one sm_100a kernel: dynamic base, instruction and descriptor constants. */
typedef struct seed_facts {
    long long base;
    unsigned idesc;
    unsigned desc_hi, sf_hi;
    int mma, cp, tma, bulk;
    int tma_misaligned; /* tensor-copy destinations not known 1024-aligned (128B swizzle) */
} seed_facts;

static void ptx_facts(const char *ptx, const char *entry, const unsigned char *cubin, size_t nc,
                      seed_facts *f) {
    memset(f, 0, sizeof *f);
    lint_prog p;
    char err[256];
    if (lint_load(&p, ptx, entry, cubin, nc, err, sizeof err)) {
        CHECKF(0, "%s", err);
        return;
    }
    f->base = p.dyn_base;
    for (int i = 0; i < p.n; i++) {
        const lint_insn *in = &p.in[i];
        uint64_t hi;
        if (!strncmp(in->op, "tcgen05.mma", 11)) {
            f->mma++;
            tnum t = lint_operand(&p, in->ops[3]);
            if (!(t.m & 0xFFFFFFFFULL)) f->idesc = (unsigned)t.v;
            if (desc_fields(&p, in->ops[1], &hi)) f->desc_hi = (unsigned)(hi >> 32);
        } else if (!strncmp(in->op, "tcgen05.cp", 10)) {
            f->cp++;
            if (desc_fields(&p, in->ops[1], &hi)) f->sf_hi = (unsigned)(hi >> 32);
        } else if (!strncmp(in->op, "cp.async.bulk.tensor", 20)) {
            f->tma++;
            f->tma_misaligned += !tnum_aligned(lint_operand(&p, in->ops[0]), 1024);
        } else if (!strncmp(in->op, "cp.async.bulk.shared", 20)) {
            f->bulk++;
        }
    }
    lint_free(&p);
}

/* nvdisasm (or cuobjdump -sass): $NVFP4JIT_NVDISASM, PATH, /usr/local/cuda/bin */
static int find_disasm(char *cmd, size_t n) {
    const char *e = getenv("NVFP4JIT_NVDISASM");
    if (e && *e && access(e, X_OK) == 0) {
        snprintf(cmd, n, "'%s' -c", e);
        return 1;
    }
    static const char *const tries[][2] = {{"nvdisasm", "-c"}, {"cuobjdump", "-sass"}};
    for (int i = 0; i < 2; i++) {
        char out[4096], q[256];
        snprintf(q, sizeof q, "command -v %s || ls /usr/local/cuda/bin/%s", tries[i][0],
                 tries[i][0]);
        if (tu_run(q, out, sizeof out) == 0 && out[0] == '/') {
            out[strcspn(out, "\n")] = '\0';
            snprintf(cmd, n, "'%s' %s", out, tries[i][1]);
            return 1;
        }
    }
    return 0;
}

/* SASS instruction classes, counted by opcode prefix */
static const char *const sass_class[] = {"UTCOMMA", "UTCCP", "UTMALDG", "UBLKCP", "UTCBAR",
                                         "SYNCS", "LDTM"};
enum { NCLASS = 7 };

/* Count the SASS classes of function `fn` (NULL: the whole cubin; the family's cubin holds
 * the grouped and the MoE entry): nvdisasm names a function's code ".text.<fn>:",
 * cuobjdump "Function : <fn>". */
static int sass_counts(const char *disasm, const void *cubin, size_t n, const char *fn,
                       int *cnt) {
    const char *dir = tu_tmpdir();
    char path[4096], cmd[8192];
    snprintf(path, sizeof path, "%s/k.cubin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(cubin, 1, n, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s '%s'", disasm, path);
    static char out[1 << 22];
    int rc = tu_run(cmd, out, sizeof out);
    tu_rmtree(dir);
    if (rc) return -1;
    memset(cnt, 0, NCLASS * sizeof *cnt);
    int in_fn = fn == NULL;
    for (char *l = out; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl) *nl = '\0';
        if (fn) {
            const char *t = strstr(l, ".text."), *f = strstr(l, "Function : ");
            if (t && strchr(t, ':') && !strstr(l, "*/")) {
                size_t fl = strlen(fn);
                in_fn = !strncmp(t + 6, fn, fl) && t[6 + fl] == ':';
            } else if (f) {
                in_fn = !strcmp(f + 11, fn);
            }
        }
        char *s = in_fn ? strstr(l, "*/") : NULL;
        if (s) {
            s += 2;
            while (*s == ' ' || *s == '\t') s++;
            if (*s == '@') { /* predicate */
                s += strcspn(s, " \t");
                while (*s == ' ' || *s == '\t') s++;
            }
            for (int c = 0; c < NCLASS; c++)
                if (!strncmp(s, sass_class[c], strlen(sass_class[c]))) cnt[c]++;
        }
        l = nl ? nl + 1 : NULL;
    }
    return 0;
}

static void t_seed(void) {
    const char *src = getenv("NVFP4JIT_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/seed/seed_sm100a.cu", src && *src ? src : NVFP4JIT_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    nvfp4jit_ctx *ctx = mk();
    REQUIRE(ctx);
    nvrtc_result r;
    nvrtc_result_init(&r);
    nvfp4jit_status st = nvrtc_compile(ctx, text, "seed_sm100a.cu", "sm_100a", 0, &r);
    CHECKF(st == NVFP4JIT_OK, "seed: %.400s", nvfp4jit_last_error(ctx));
    nvfp4jit_variant fv = {NVFP4JIT_ARCH_SM100A, 128, 64, 256, 6, 0, 0};
    nvfp4jit_kernel *k = NULL;
    CHECK(nvfp4jit_compile(ctx, &fv, &k) == NVFP4JIT_OK);
    if (st || !k) goto out;
    const void *fptx, *fcubin;
    size_t fnp, fnc;
    nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_PTX, &fptx, &fnp);
    nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &fcubin, &fnc);
    seed_facts sf, ff;
    ptx_facts(r.ptx.data, "grouped_kernel", (const unsigned char *)r.cubin.data, r.cubin.len, &sf);
    ptx_facts(fptx, NJ_KERNEL_NAME, fcubin, fnc, &ff);
    printf("  %-22s %8s %10s %10s %6s %4s %4s %4s %4s\n", "PTX", "dyn base", "idesc",
           "A/B desc", "SF", "mma", "cp", "tma", "bulk");
    printf("  %-22s %#8llx %#10x %#10x %#6x %4d %4d %4d %4d\n", "seed", sf.base, sf.idesc,
           sf.desc_hi, sf.sf_hi, sf.mma, sf.cp, sf.tma, sf.bulk);
    printf("  %-22s %#8llx %#10x %#10x %#6x %4d %4d %4d %4d\n", "sm100a:128x64x256:s6",
           ff.base, ff.idesc, ff.desc_hi, ff.sf_hi, ff.mma, ff.cp, ff.tma, ff.bulk);
    /* the constants the review read (both agree with the PTX ISA and CUTLASS, see the doc) */
    CHECK(sf.idesc == 0x08100480 && ff.idesc == 0x08100480);
    CHECK(sf.desc_hi == 0x40004040 && ff.desc_hi == 0x40004040);
    CHECK(sf.sf_hi == 0x4008 && ff.sf_hi == 0x4008);
    /* both place dynamic shared memory after a 0x470-byte static section under nvJitLink:
     * the seed relies on __align__(1024) (only nvcc's padding made it hold), the family
     * rounds up at run time */
    CHECK(sf.base == 0x470 && ff.base == 0x470);
    CHECKF(sf.tma_misaligned == sf.tma && ff.tma_misaligned == 0, "misaligned TMA destinations: "
           "seed %d of %d (its __align__(1024) is not kept), family %d", sf.tma_misaligned,
           sf.tma, ff.tma_misaligned);
    /* PTX shape: the seed unrolls its k-loop (3 x 4 MMAs per pass); the family issues a full
     * k-tile straight-line (4 MMAs) and the partial last one through an unrolled loop of
     * guarded steps (4 more); before issue 9 part 5 it had one run-time loop (1 MMA) */
    CHECKF(sf.mma == 12 && ff.mma == 8, "tcgen05.mma in the PTX: seed %d, family %d", sf.mma,
           ff.mma);
    char disasm[4200];
    if (!find_disasm(disasm, sizeof disasm)) {
        nvrtc_result_free(&r);
        nvfp4jit_ctx_destroy(ctx);
        SKIP("seed SASS counts need nvdisasm or cuobjdump (none in PATH or /usr/local/cuda/bin; "
             "NVFP4JIT_NVDISASM=path to point at one); the PTX facts above were checked");
    }
    int sc[NCLASS], fc[NCLASS];
    REQUIRE(sass_counts(disasm, r.cubin.data, r.cubin.len, NULL, sc) == 0);
    REQUIRE(sass_counts(disasm, fcubin, fnc, NJ_KERNEL_NAME, fc) == 0);
    /* NVRTC/nvJitLink 13.0 (2026-12-03). A compiler update may change these: then re-read
     * the SASS, update the numbers here and in docs/sm100a-seed-vs-family.md. */
    static const int want_seed[NCLASS] = {12, 24, 12, 12, 4, 46, 1};
    static const int want_fam[NCLASS] = {8, 16, 10, 10, 2, 39, 1};
    printf("  %-22s", "SASS");
    for (int c = 0; c < NCLASS; c++) printf(" %7s", sass_class[c]);
    printf("\n  %-22s", "seed");
    for (int c = 0; c < NCLASS; c++) printf(" %7d", sc[c]);
    printf("\n  %-22s", "sm100a:128x64x256:s6");
    for (int c = 0; c < NCLASS; c++) printf(" %7d", fc[c]);
    printf("\n");
    for (int c = 0; c < NCLASS; c++) {
        CHECKF(sc[c] == want_seed[c], "seed %s: %d, expected %d", sass_class[c], sc[c],
               want_seed[c]);
        CHECKF(fc[c] == want_fam[c], "family %s: %d, expected %d", sass_class[c], fc[c],
               want_fam[c]);
    }
out:
    nvrtc_result_free(&r);
    nvfp4jit_ctx_destroy(ctx);
}

/* The wgmma groups of an act16 GEMM kernel in its SASS (function NJ_KERNEL_NAME): every 64-k
 * block issues one warpgroup.arrive (wgmma.fence) and then its 4 wgmmas, so HGMMA = 4 x
 * WARPGROUP.ARRIVE, and every HGMMA's N is a width of the variant. ptxas adds arrives (and
 * a dummy HGMMA.64x8x16) where control flow splits a block's group: the token-width menu as a
 * branch per block did (6 arrives per block, bench/probe/act16-width-branch.patch), and its
 * pipeline lost its overlap on the GPU (bench3 26 -> 30 us, tensor pipe 79 -> 58 % busy; H100,
 * bench/RESULTS.md 2026-12-07). @return 0, -1 if the disassembler failed. */
static int sass_wgmma(const char *disasm, const void *cubin, size_t n, int *hgmma, int *arrive,
                      int *bad_n, int *first_bad_n, const int *widths, int nw, int *setmaxnreg) {
    const char *dir = tu_tmpdir();
    char path[4096], cmd[8400];
    snprintf(path, sizeof path, "%s/k.cubin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(cubin, 1, n, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s '%s'", disasm, path);
    static char out[1 << 23];
    int rc = tu_run(cmd, out, sizeof out);
    tu_rmtree(dir);
    if (rc) return -1;
    *hgmma = *arrive = *bad_n = *first_bad_n = *setmaxnreg = 0;
    int in_fn = 0;
    for (char *l = out; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl) *nl = '\0';
        const char *t = strstr(l, ".text."), *fh = strstr(l, "Function : ");
        if (t && strchr(t, ':') && !strstr(l, "*/")) {
            size_t fl = strlen(NJ_KERNEL_NAME);
            in_fn = !strncmp(t + 6, NJ_KERNEL_NAME, fl) && t[6 + fl] == ':';
        } else if (fh) {
            in_fn = !strcmp(fh + 11, NJ_KERNEL_NAME);
        }
        char *s = in_fn ? strstr(l, "*/") : NULL;
        if (s) {
            s += 2;
            while (*s == ' ' || *s == '\t') s++;
            if (*s == '@') {
                s += strcspn(s, " \t");
                while (*s == ' ' || *s == '\t') s++;
            }
            int m = 0, nn = 0, k = 0;
            if (!strncmp(s, "WARPGROUP.ARRIVE", 16)) {
                (*arrive)++;
            } else if (!strncmp(s, "USETMAXREG", 10)) {
                (*setmaxnreg)++;
            } else if (sscanf(s, "HGMMA.%dx%dx%d", &m, &nn, &k) == 3) {
                (*hgmma)++;
                int ok = 0;
                for (int i = 0; i < nw; i++) ok |= widths[i] == nn;
                if (!ok && !(*bad_n)++) *first_bad_n = nn;
            }
        }
        l = nl ? nl + 1 : NULL;
    }
    return 0;
}

static void t_sm90a_wgmma_groups(void) {
    char disasm[4200];
    if (!find_disasm(disasm, sizeof disasm))
        SKIP("skipped: the wgmma group check needs nvdisasm or cuobjdump (none in PATH or "
             "/usr/local/cuda/bin; NVFP4JIT_NVDISASM=path to point at one)");
    nvfp4jit_ctx *ctx = mk();
    REQUIRE(ctx);
    /* the gpumode and decode choices, a BLOCK_K 64 ring, act16p, act16sk and a variant of the
     * ring-in-a-register table */
    static const char *const vs[] = {
        "sm90a:128x128x128:s4:swap:act16", "sm90a:192x128x64:s6:swap:act16",
        "sm90a:128x96x128:s4:swap:act16",  "sm90a:128x24x128:s6:swap:act16",
        "sm90a:192x96x128:s4:swap:act16",  "sm90a:128x128x64:s4:swap:act16p",
        "sm90a:128x128x128:s4:swap:act16sk", "sm90a:128x24x256:s3:swap:act16",
        /* the wide form (two m64 halves per consumer warpgroup, a group each) */
        "sm90a:256x128x64:s6:swap:act16",   "sm90a:256x96x256:s2:swap:act16"};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        nvfp4jit_variant v;
        REQUIRE(nvfp4jit_variant_parse(vs[i], &v) == NVFP4JIT_OK);
        nvfp4jit_kernel *k = NULL;
        CHECKF(nvfp4jit_compile(ctx, &v, &k) == NVFP4JIT_OK, "%s: %s", vs[i],
               nvfp4jit_last_error(ctx));
        if (!k) continue;
        const void *cubin;
        size_t n;
        REQUIRE(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &cubin, &n) == NVFP4JIT_OK);
        int widths[4] = {v.block_n, 0, 0, 0}, nw = 1;
        int hg = 0, ar = 0, bad = 0, bad_n = 0, smr = 0;
        REQUIRE(sass_wgmma(disasm, cubin, n, &hg, &ar, &bad, &bad_n, widths, nw, &smr) == 0);
        printf("  %-36s HGMMA %4d  WARPGROUP.ARRIVE %3d\n", vs[i], hg, ar);
        CHECKF(hg > 0 && hg == 4 * ar, "%s: %d HGMMA, %d WARPGROUP.ARRIVE (4 per arrive: one "
               "wgmma group per 64-k block)", vs[i], hg, ar);
        CHECKF(bad == 0, "%s: %d HGMMA of N %d, not a width of the variant", vs[i], bad, bad_n);
    }
    nvfp4jit_ctx_destroy(ctx);
}

/* act16's wide form (src/fam_sm90.c act16_wide): its producer warpgroup gives registers to the
 * consumers with setmaxnreg, which ptxas keeps only when nvJitLink compiles the whole program
 * (src/compile.c, lto). The library's module has both setmaxnreg in its SASS (USETMAXREG: the
 * producer's .dec, the consumers' .inc) and no C7504 in its log; the same source through the PTX
 * path (lto 0, the library's path for every kernel before the wide form) has none and C7504 (the
 * check fails where the instruction is dropped: every consumer thread would then have the
 * launch's 168 registers, and ptxas would have allocated for 232). The narrow form has none. */
static void t_sm90a_setmaxnreg(void) {
    char disasm[4200];
    if (!find_disasm(disasm, sizeof disasm))
        SKIP("skipped: the setmaxnreg check needs nvdisasm or cuobjdump (none in PATH or "
             "/usr/local/cuda/bin; NVFP4JIT_NVDISASM=path to point at one)");
    nvfp4jit_ctx *ctx = mk();
    REQUIRE(ctx);
    static const struct { const char *v; int want; } cases[] = {
        {"sm90a:256x96x128:s4:swap:act16", 2}, {"sm90a:256x72x64:s8:swap:act16", 2},
        {"sm90a:256x64x64:s4:swap:act16", 0},  {"sm90a:128x128x128:s4:swap:act16", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nvfp4jit_variant v;
        REQUIRE(nvfp4jit_variant_parse(cases[i].v, &v) == NVFP4JIT_OK);
        nvfp4jit_kernel *k = NULL;
        CHECKF(nvfp4jit_compile(ctx, &v, &k) == NVFP4JIT_OK, "%s: %s", cases[i].v,
               nvfp4jit_last_error(ctx));
        if (!k) continue;
        const void *cubin, *log, *src;
        size_t n, nl, ns;
        REQUIRE(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &cubin, &n) == NVFP4JIT_OK);
        REQUIRE(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_LOG, &log, &nl) == NVFP4JIT_OK);
        REQUIRE(nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_SOURCE, &src, &ns) == NVFP4JIT_OK);
        int widths[1] = {v.block_n}, hg, ar, bad, bad_n, smr = -1;
        REQUIRE(sass_wgmma(disasm, cubin, n, &hg, &ar, &bad, &bad_n, widths, 1, &smr) == 0);
        printf("  %-34s USETMAXREG %d (want %d)\n", cases[i].v, smr, cases[i].want);
        CHECKF(smr == cases[i].want && !strstr(log, "C7504"), "%s: %d USETMAXREG, want %d; log:\n%.1500s",
               cases[i].v, smr, cases[i].want, (const char *)log);
        if (!cases[i].want) continue;
        /* the same source through the PTX path */
        nvrtc_result r;
        nvrtc_result_init(&r);
        REQUIRE(nvrtc_compile(ctx, src, "wide_ptx_path.cu", "sm_90a", 0, &r) == NVFP4JIT_OK);
        int smr0 = -1;
        REQUIRE(sass_wgmma(disasm, r.cubin.data, r.cubin.len, &hg, &ar, &bad, &bad_n, widths, 1,
                           &smr0) == 0);
        printf("  %-34s through the PTX path: USETMAXREG %d, C7504 %s\n", "", smr0,
               strstr(r.log.data, "C7504") ? "in the log" : "not in the log");
        CHECKF(smr0 == 0 && strstr(r.log.data, "C7504"), "%s through the PTX path: %d USETMAXREG",
               cases[i].v, smr0);
        nvrtc_result_free(&r);
    }
    nvfp4jit_ctx_destroy(ctx);
}

const test_case tests_lint[] = {
    {"seed", t_seed},
    {"hostmap_sm100a", hostmap_test_sm100a},
    {"hostmap_sm90a", hostmap_test_sm90a},
    {"no_roundup", t_no_roundup},
    {"sm100a", t_sm100a},
    {"sm90a", t_sm90a},
    {"desc_trace", t_desc_trace},
    {"sm90a_wgmma_groups", t_sm90a_wgmma_groups},
    {"sm90a_setmaxnreg", t_sm90a_setmaxnreg},
    {NULL, NULL},
};
