/* test_emu.c - the sm_100a family on the CPU emulator (tests/emu.c): every valid sm_100a
 * variant, rendered with EMU=1 and compiled for the host, runs its real blob (the family's
 * blob_fill with a recording cuTensorMapEncodeTiled) over problem sets with tails, M = 0
 * groups and several groups, on fresh random data, compared with the CPU reference. The
 * static shared section comes from the variant's real cubin (NVRTC + nvJitLink). Needs a
 * host C++ compiler (c++ or $CXX), no GPU.
 *
 * Emulated, never run on a B200: this proves the kernel against the emulator's reading of
 * the PTX ISA, not against the hardware. */
#include <math.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "emu.h"
#include "family.h"
#include "jit.h"
#include "reference.h"
#include "template.h"
#include "testutil.h"

typedef struct emu_variant {
    nvfp4jit_variant v;
    char name[96];
    emu_kernel k;
    uint32_t section, static_bytes;
} emu_variant;

static drv_api stub_api(void) {
    drv_api a;
    memset(&a, 0, sizeof a);
    a.cuTensorMapEncodeTiled = emu_encode_tiled;
    return a;
}

/* The variant's real cubin: the size of its static shared section and its static bytes. */
static int cubin_layout(nvfp4jit_ctx *ctx, emu_variant *ev, char *err, size_t errn) {
    nvfp4jit_kernel *k = NULL;
    if (nvfp4jit_compile(ctx, &ev->v, &k) != NVFP4JIT_OK) {
        snprintf(err, errn, "compile: %s", nvfp4jit_last_error(ctx));
        return -1;
    }
    const void *cubin;
    size_t n;
    nvfp4jit_resources res;
    if (nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_CUBIN, &cubin, &n) != NVFP4JIT_OK ||
        nvfp4jit_kernel_resources(k, &res) != NVFP4JIT_OK) {
        snprintf(err, errn, "no cubin/resources");
        return -1;
    }
    long s = emu_elf_section_size(cubin, n, ".nv.shared." NJ_KERNEL_NAME);
    if (s < 0) {
        snprintf(err, errn, "no .nv.shared." NJ_KERNEL_NAME " section in the cubin");
        return -1;
    }
    ev->section = (uint32_t)s;
    ev->static_bytes = (uint32_t)res.shared_static_bytes;
    return 0;
}

/* Render the variant with EMU=1 (the parameters nj_render passes, plus EMU) and build it. */
static int build_variant(nvfp4jit_ctx *ctx, const char *dir, emu_variant *ev, char *err,
                         size_t errn) {
    const family *f = fam_get(ev->v.arch);
    tmpl_param p[48];
    int n = 0;
    p[n++] = (tmpl_param){"ARCH", 1, 0, f->arch_name};
    p[n++] = (tmpl_param){"BLOCK_M", 0, ev->v.block_m, NULL};
    p[n++] = (tmpl_param){"BLOCK_N", 0, ev->v.block_n, NULL};
    p[n++] = (tmpl_param){"BLOCK_K", 0, ev->v.block_k, NULL};
    p[n++] = (tmpl_param){"STAGES", 0, ev->v.stages, NULL};
    p[n++] = (tmpl_param){"SWAP_AB", 0, ev->v.swap_ab, NULL};
    p[n++] = (tmpl_param){"STRATEGY", 0, ev->v.strategy, NULL};
    p[n++] = (tmpl_param){"THREADS", 0, f->threads(&ev->v), NULL};
    p[n++] = (tmpl_param){"DYN_SMEM", 0, (long long)f->dyn_smem(&ev->v), NULL};
    p[n++] = (tmpl_param){"KERNEL_NAME", 1, 0, NJ_KERNEL_NAME};
    if (f->params) n += f->params(&ev->v, p + n, 40 - n);
    p[n++] = (tmpl_param){"EMU", 0, 1, NULL};
    nj_buf src;
    nj_buf_init(&src);
    if (tmpl_render(ctx, f->template_name, p, n, &src) != NVFP4JIT_OK) {
        snprintf(err, errn, "render: %s", nvfp4jit_last_error(ctx));
        nj_buf_free(&src);
        return -1;
    }
    if (strstr(src.data, "asm")) {
        snprintf(err, errn, "the EMU render still contains inline asm");
        nj_buf_free(&src);
        return -1;
    }
    char tag[128];
    snprintf(tag, sizeof tag, "%dx%dx%d_s%d", ev->v.block_m, ev->v.block_n, ev->v.block_k,
             ev->v.stages);
    int rc = emu_kernel_build(src.data, src.len, dir, tag, NJ_KERNEL_NAME, &ev->k, err, errn);
    nj_buf_free(&src);
    return rc;
}

/* ---- problem sets ----------------------------------------------------------------------- */
typedef struct hgroup {
    int64_t m, n, k;
    uint8_t *a, *b, *sfa, *sfb;
    uint16_t *c; /* with GUARD elements on both sides */
} hgroup;
#define GUARD 64
#define MAXG 8

static int scale_cap_k(int64_t k) {
    int e = 0;
    while ((64LL << (2 * e)) < k) e++;
    return -1 - e;
}

static void set_make(hgroup *g, const int64_t (*shapes)[3], size_t n, uint64_t seed) {
    ref_rng r;
    ref_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        hgroup *h = &g[i];
        memset(h, 0, sizeof *h);
        h->m = shapes[i][0];
        h->n = shapes[i][1];
        h->k = shapes[i][2];
        /* buffers of exactly the contract's size (16-byte aligned for TMA and bulk copies) */
        h->a = aligned_alloc(256, (size_t)(h->m * h->k / 2 + 256) / 256 * 256);
        h->b = aligned_alloc(256, (size_t)(h->n * h->k / 2 + 256) / 256 * 256);
        h->sfa = aligned_alloc(256, (ref_sf_bytes(h->m, h->k) + 256) / 256 * 256);
        h->sfb = aligned_alloc(256, (ref_sf_bytes(h->n, h->k) + 256) / 256 * 256);
        h->c = malloc(((size_t)(h->m * h->n) + 2 * GUARD) * 2);
        if (!h->a || !h->b || !h->sfa || !h->sfb || !h->c) abort();
        ref_fill_packed(&r, h->a, h->m, h->k);
        ref_fill_packed(&r, h->b, h->n, h->k);
        /* one operand over the whole scale range (subnormal..448), the other capped so sums
         * stay inside fp16; which one alternates by group */
        int cap = scale_cap_k(h->k);
        ref_fill_scales(&r, h->sfa, h->m, h->k, i % 2 ? cap : 8);
        ref_fill_scales(&r, h->sfb, h->n, h->k, i % 2 ? 8 : cap);
        memset(h->c, 0xFF, ((size_t)(h->m * h->n) + 2 * GUARD) * 2); /* fp16 NaN */
    }
}

static void set_free(hgroup *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(g[i].a);
        free(g[i].b);
        free(g[i].sfa);
        free(g[i].sfb);
        free(g[i].c);
    }
}

/* DESIGN.md tolerance plus the fp32 accumulation allowance (README "Numerics"). */
static int64_t set_check(const hgroup *g, size_t n, const char *label) {
    int64_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const hgroup *h = &g[i];
        for (int e = 0; e < GUARD; e++)
            if (h->c[e] != 0xFFFF || h->c[GUARD + h->m * h->n + e] != 0xFFFF) {
                fprintf(stderr, "  %s group %zu: write outside C\n", label, i);
                bad++;
                break;
            }
        if (h->m == 0) continue;
        size_t cnt = (size_t)(h->m * h->n);
        uint16_t *ref = malloc(cnt * 2);
        double *abs_sum = malloc(cnt * sizeof *abs_sum);
        if (!ref || !abs_sum) abort();
        ref_gemm(h->a, h->sfa, h->b, h->sfb, h->m, h->n, h->k, ref, 1);
        ref_gemm_abs(h->a, h->sfa, h->b, h->sfb, h->m, h->n, h->k, abs_sum);
        const uint16_t *out = h->c + GUARD;
        int64_t nb = 0, first = -1;
        for (size_t e = 0; e < cnt; e++) {
            double o = ref_f16_to_double(out[e]), r = ref_f16_to_double(ref[e]);
            int ok;
            if (isnan(o) || isnan(r)) ok = 0;
            else if (o == r) ok = 1;
            else if (isinf(o) || isinf(r)) ok = 0;
            else
                ok = fabs(o - r) <= 1e-3 + 1e-3 * fabs(r) +
                                        ((double)h->k / 16 + 4) / 16777216.0 * abs_sum[e];
            if (!ok && nb++ == 0) first = (int64_t)e;
        }
        if (nb) {
            fprintf(stderr, "  %s group %zu (%lldx%lldx%lld): %lld bad, first (%lld,%lld) got %g want %g\n",
                    label, i, (long long)h->m, (long long)h->n, (long long)h->k, (long long)nb,
                    (long long)(first / h->n), (long long)(first % h->n),
                    ref_f16_to_double(out[first]), ref_f16_to_double(ref[first]));
            bad += nb;
        }
        free(ref);
        free(abs_sum);
    }
    return bad;
}

/* Run one problem set on one variant. @return mismatching elements, or -1 on an emulator
 * error (printed). */
static int64_t run_set(nvfp4jit_ctx *ctx, emu_variant *ev, const int64_t (*shapes)[3],
                       size_t n, uint64_t seed, int lazy, emu_stats *st, char *err,
                       size_t errn) {
    hgroup g[MAXG];
    nvfp4jit_group pg[MAXG];
    set_make(g, shapes, n, seed);
    for (size_t i = 0; i < n; i++) {
        pg[i] = (nvfp4jit_group){g[i].m, g[i].n, g[i].k, (uint64_t)(uintptr_t)g[i].a,
                                 (uint64_t)(uintptr_t)g[i].b, (uint64_t)(uintptr_t)g[i].sfa,
                                 (uint64_t)(uintptr_t)g[i].sfb, (uint64_t)(uintptr_t)(g[i].c + GUARD)};
        if (!g[i].m) pg[i].a = pg[i].b = pg[i].sfa = pg[i].sfb = pg[i].c = 0;
    }
    const family *f = fam_get(ev->v.arch);
    drv_api api = stub_api();
    size_t bs = f->blob_size(&ev->v, pg, n);
    unsigned char *blob = aligned_alloc(256, (bs + 255) / 256 * 256);
    fam_launch fl;
    memset(&fl, 0, sizeof fl);
    int64_t bad = -1;
    if (!blob) abort();
    if (f->blob_fill(ctx, &api, &ev->v, pg, n, blob, (uint64_t)(uintptr_t)blob, 0, &fl) !=
        NVFP4JIT_OK) {
        snprintf(err, errn, "blob_fill: %s", nvfp4jit_last_error(ctx));
    } else {
        emu_range rg[4 * MAXG];
        int nr = 0;
        for (size_t i = 0; i < n; i++) {
            if (!g[i].m) continue;
            rg[nr++] = (emu_range){g[i].a, (size_t)(g[i].m * g[i].k / 2)};
            rg[nr++] = (emu_range){g[i].b, (size_t)(g[i].n * g[i].k / 2)};
            rg[nr++] = (emu_range){g[i].sfa, ref_sf_bytes(g[i].m, g[i].k)};
            rg[nr++] = (emu_range){g[i].sfb, ref_sf_bytes(g[i].n, g[i].k)};
        }
        emu_launch l = {fl.num_ctas, fl.threads, fl.dyn_smem, ev->section, ev->static_bytes, lazy,
                        rg, nr, seed | 1};
        if (emu_run(&ev->k, &l, blob, st, err, errn) == 0) bad = set_check(g, n, ev->name);
    }
    free(blob);
    set_free(g, n);
    return bad;
}

/* fixed sets: tails on M (M < 128, M % 128 != 0, M = 0), N (multiple of 8, not of 64), K
 * (multiple of 64, not of BLOCK_K; K < BLOCK_K) and several groups */
static const int64_t set_a[][3] = {{200, 136, 320}, {0, 64, 128}, {1, 8, 64}, {130, 72, 192}};
static const int64_t set_b[][3] = {{128, 128, 512}, {64, 200, 384}, {257, 64, 256}};
static const int64_t set_c[][3] = {{77, 24, 448}, {0, 128, 256}, {128, 264, 64}};

static void random_set(ref_rng *r, int64_t (*s)[3], size_t *n) {
    *n = 2 + ref_rng_next(r) % 3;
    for (size_t i = 0; i < *n; i++) {
        s[i][0] = (int64_t)(ref_rng_next(r) % 6 == 0 ? 0 : ref_rng_next(r) % 300 + 1);
        s[i][1] = (int64_t)(ref_rng_next(r) % 33 + 1) * 8;
        s[i][2] = (int64_t)(ref_rng_next(r) % 10 + 1) * 64;
    }
    /* at least one non-empty group: with every M = 0 (about 1 draw in 80) no CTA runs, and
     * old_template, which expects every run to be refused, failed at random */
    int any = 0;
    for (size_t i = 0; i < *n; i++) any |= s[i][0] > 0;
    if (!any) s[0][0] = 1;
}

static uint64_t seed_now(void) {
    const char *s = getenv("NVFP4JIT_EMU_SEED");
    if (s && *s) return strtoull(s, NULL, 0);
    return (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

static nvfp4jit_ctx *mkctx(void) {
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = getenv("NVFP4JIT_CACHE_DIR") ? 0 : 1;
    nvfp4jit_ctx *c = NULL;
    nvfp4jit_ctx_create(&o, &c);
    return c;
}

typedef struct emu_totals {
    long long variants, sets, mismatches, errors;
    /* the sets with at least one group of M > 0 (a set of only M = 0 groups launches no
     * tile: no TMA load, no MMA) and how many of those were refused */
    long long tile_sets, tile_errors;
    char first_err[2048];
    emu_stats st;
} emu_totals;

/* Build one variant and run it over 3 fixed sets + 1 fresh random set with copies landing
 * lazily, and set A once more with copies landing eagerly; the thread interleaving is drawn
 * from the seed too. */
static void run_variant(nvfp4jit_ctx *ctx, const char *dir, const nvfp4jit_variant *v,
                        ref_rng *rr, emu_totals *t) {
    char err[2048];
    emu_variant ev;
    memset(&ev, 0, sizeof ev);
    ev.v = *v;
    nvfp4jit_variant_format(&ev.v, ev.name, sizeof ev.name);
    t->variants++;
    if (cubin_layout(ctx, &ev, err, sizeof err) || build_variant(ctx, dir, &ev, err, sizeof err)) {
        fprintf(stderr, "  %s: %s\n", ev.name, err);
        if (!t->errors++) snprintf(t->first_err, sizeof t->first_err, "%s", err);
        return;
    }
    int64_t rs[4][3];
    size_t rn;
    random_set(rr, rs, &rn);
    struct {
        const int64_t (*s)[3];
        size_t n;
        int lazy;
    } runs[] = {{set_a, 4, 1}, {set_b, 3, 1}, {set_c, 3, 1}, {(const int64_t(*)[3])rs, rn, 1},
                {set_a, 4, 0}};
    for (size_t j = 0; j < sizeof runs / sizeof runs[0]; j++) {
        int tiles = 0;
        for (size_t i = 0; i < runs[j].n; i++) tiles |= runs[j].s[i][0] > 0;
        int64_t bad = run_set(ctx, &ev, runs[j].s, runs[j].n, ref_rng_next(rr), runs[j].lazy,
                              &t->st, err, sizeof err);
        t->sets++;
        t->tile_sets += tiles;
        if (bad < 0) {
            fprintf(stderr, "  %s set %zu: %s\n", ev.name, j, err);
            if (!t->errors++) snprintf(t->first_err, sizeof t->first_err, "%s", err);
            t->tile_errors += tiles;
        } else {
            t->mismatches += bad;
        }
    }
    emu_kernel_close(&ev.k);
}

/* Every valid sm_100a variant (NVFP4JIT_EMU_ONLY=substring narrows it while iterating). */
static void t_variants(void) {
    nvfp4jit_ctx *ctx = mkctx();
    REQUIRE(ctx);
    nvfp4jit_variant vs[64];
    size_t nv = 0;
    REQUIRE(nvfp4jit_variant_space(NVFP4JIT_ARCH_SM100A, vs, 64, &nv) == NVFP4JIT_OK);
    REQUIRE(nv > 0 && nv <= 64);
    const char *dir0 = tu_tmpdir();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", dir0);
    uint64_t seed = seed_now();
    printf("  emu seed %llu (NVFP4JIT_EMU_SEED=%llu reproduces)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    ref_rng rr;
    ref_rng_seed(&rr, seed);
    emu_totals t;
    memset(&t, 0, sizeof t);
    const char *only = getenv("NVFP4JIT_EMU_ONLY");
    for (size_t i = 0; i < nv; i++) {
        char name[96];
        nvfp4jit_variant_format(&vs[i], name, sizeof name);
        if (only && *only && !strstr(name, only)) continue;
        run_variant(ctx, dir, &vs[i], &rr, &t);
    }
    if (t.errors)
        printf("emu: %lld variants, %lld problem sets, %lld mismatches, %lld refused by the "
               "emulator (above)\n", t.variants, t.sets, t.mismatches, t.errors);
    else
        printf("emu: %lld variants, %lld problem sets, %lld mismatches\n", t.variants, t.sets,
               t.mismatches);
    printf("  (%llu CTAs, %llu TMA boxes, %llu bulk copies, %llu tcgen05.cp, %llu MMAs, %llu "
           "tcgen05.ld)\n", t.st.ctas, t.st.tma, t.st.bulk, t.st.cp, t.st.mma, t.st.ld);
    if (!only || !*only) CHECKF(t.variants == (long long)nv, "ran %lld of %zu", t.variants, nv);
    CHECK(t.errors == 0);
    CHECK(t.mismatches == 0);
    tu_rmtree(dir);
    nvfp4jit_ctx_destroy(ctx);
}

/* The current template with one text replaced, in a temp NVFP4JIT_TEMPLATE_DIR, run on the
 * emulator for the given variants. @return the totals (t->errors, t->mismatches). */
static int run_mutant(const char *from, const char *to, const char *from2, const char *to2,
                      const char *const *variants, size_t nvar, emu_totals *t) {
    memset(t, 0, sizeof *t);
    const char *text;
    size_t len;
    nj_buf scratch, mut;
    nj_buf_init(&scratch);
    nj_buf_init(&mut);
    if (tmpl_find(NULL, "sm100a_grouped.cu", &text, &len, &scratch)) return -1;
    const char *hit = strstr(text, from);
    if (!hit || strstr(hit + 1, from)) { /* exactly once */
        nj_buf_free(&scratch);
        return -1;
    }
    nj_buf_append(&mut, text, (size_t)(hit - text));
    nj_buf_puts(&mut, to);
    nj_buf_puts(&mut, hit + strlen(from));
    if (from2) { /* a second replacement, in the first's result */
        char *h2 = strstr(mut.data, from2);
        if (!h2) {
            nj_buf_free(&scratch);
            nj_buf_free(&mut);
            return -1;
        }
        nj_buf tmp;
        nj_buf_init(&tmp);
        nj_buf_append(&tmp, mut.data, (size_t)(h2 - mut.data));
        nj_buf_puts(&tmp, to2);
        nj_buf_puts(&tmp, h2 + strlen(from2));
        nj_buf_free(&mut);
        mut = tmp;
    }
    char dir[4096], path[8300];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(path, sizeof path, "%s/sm100a_grouped.cu", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(mut.data, 1, mut.len, f);
    fclose(f);
    nj_buf_free(&scratch);
    nj_buf_free(&mut);
    const char *old = getenv("NVFP4JIT_TEMPLATE_DIR");
    char saved[4096] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("NVFP4JIT_TEMPLATE_DIR", dir, 1);
    nvfp4jit_ctx *ctx = mkctx();
    uint64_t seed = seed_now();
    printf("  emu seed %llu (NVFP4JIT_EMU_SEED=%llu reproduces)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    ref_rng rr;
    ref_rng_seed(&rr, seed);
    for (size_t i = 0; ctx && i < nvar; i++) {
        nvfp4jit_variant v;
        if (nvfp4jit_variant_parse(variants[i], &v) == NVFP4JIT_OK) run_variant(ctx, dir, &v, &rr, t);
    }
    nvfp4jit_ctx_destroy(ctx);
    if (old) setenv("NVFP4JIT_TEMPLATE_DIR", saved, 1);
    else unsetenv("NVFP4JIT_TEMPLATE_DIR");
    tu_rmtree(dir);
    return 0;
}

/* The template before issue 9 part 1 (no run-time round-up of the dynamic shared base): the
 * cubin's static section puts the tiles 0x430-0x490 bytes in, and the emulator must refuse
 * the first TMA load (or, where the base happens to be 128-aligned, the first MMA). One
 * variant per BLOCK_N x BLOCK_K, stages spread. Every set with a tile must be refused; the
 * random set may draw only M = 0 groups (about 1 in 90), which run no TMA load and no MMA,
 * so it proves nothing either way and is not counted. The 4 fixed sets always have tiles. */
static void t_old_template(void) {
    static const char *vars[] = {"sm100a:128x64x256:s6", "sm100a:128x128x256:s2",
                                 "sm100a:128x64x128:s7", "sm100a:128x128x128:s4"};
    emu_totals t;
    printf("  (the emulator errors printed below are expected)\n");
    /* the kernel text of 488f55a^ (issue 9 part 1 reverted), in today's EMU-capable template */
    REQUIRE(run_mutant("extern __shared__ __align__(16) char smem_ptr[];",
                       "extern __shared__ __align__(1024) char smem_ptr[];",
                       "const int smem_raw = (int)__cvta_generic_to_shared(smem_ptr);\n"
                       "  const int smem = (smem_raw + 1023) & ~1023;",
                       "const int smem = (int)__cvta_generic_to_shared(smem_ptr);", vars, 4,
                       &t) == 0);
    CHECKF(t.variants == 4 && t.sets == 4 * 5, "%lld variants, %lld sets run", t.variants, t.sets);
    CHECKF(t.tile_sets >= 4 * 4, "%lld sets with a tile (the fixed ones: %d)", t.tile_sets, 4 * 4);
    CHECKF(t.tile_errors == t.tile_sets, "%lld of %lld runs with a tile refused", t.tile_errors,
           t.tile_sets);
    CHECKF(strstr(t.first_err, "not 128-byte aligned") != NULL, "first error: %s", t.first_err);
    printf("  pre-fix template: %lld of %lld runs with a tile refused (%lld sets without a tile "
           "not counted), e.g. \"%s\"\n", t.tile_errors, t.tile_sets, t.sets - t.tile_sets,
           t.first_err);
}

/* Seeded defects the emulator must catch, each on one variant (wrong results or an error;
 * the messages printed are expected). */
static void t_mutants(void) {
    static const struct {
        const char *what, *from, *to, *variant, *from2, *to2;
    } m[] = {
        {"B scales of the second 64-row tile", "const int sfb_lane = (off_n % 128) / 32;",
         "const int sfb_lane = 0;", "sm100a:128x64x256:s3", NULL, NULL},
        {"instruction descriptor N", "((u32)${BLOCK_N} >> 3U << 17U)", "((u32)${BLOCK_N} >> 4U << 17U)",
         "sm100a:128x128x128:s2", NULL, NULL},
        {"descriptor stride byte offset", "(desc_encode(8 * ${SW}) << 32ULL)",
         "(desc_encode(4 * ${SW}) << 32ULL)", "sm100a:128x64x128:s2", NULL, NULL},
        {"swizzle layout type", "local LAYOUT = (SW == 128) and 2 or 4",
         "local LAYOUT = (SW == 128) and 4 or 2", "sm100a:128x128x256:s2", NULL, NULL},
        {"expect_tx of a partial k-tile", "${A_SIZE + B_SIZE} + 2 * nsub * 512",
         "${A_SIZE + B_SIZE} + 2 * ${SUB} * 512", "sm100a:128x64x256:s2", NULL, NULL},
        {"expect_tx without the B tile", "${A_SIZE + B_SIZE} + 2 * nsub * 512",
         "${A_SIZE} + 2 * nsub * 512", "sm100a:128x128x256:s3", NULL, NULL},
        {"producer does not wait for the MMA", "if (it >= ${STAGES}) mbarrier_wait(",
         "if (0) mbarrier_wait(", "sm100a:128x64x128:s2", NULL, NULL},
        {"epilogue does not wait for the MMAs", "mbarrier_wait(done_mbar, 0);", "",
         "sm100a:128x128x128:s3", NULL, NULL},
        {"tcgen05.ld from another warp's lanes", "tmem_ld(t, warp_id * 32 + m0 * 16",
         "tmem_ld(t, ((warp_id + 1) % 4) * 32 + m0 * 16", "sm100a:128x64x256:s4", NULL, NULL},
        {"A scales of a partial k-tile read past the buffer (expect_tx to match)",
         "bulk_g2s(SFA_s, SFA_base + kb * 512, nsub * 512",
         "bulk_g2s(SFA_s, SFA_base + kb * 512, ${SUB} * 512", "sm100a:128x64x256:s2",
         "${A_SIZE + B_SIZE} + 2 * nsub * 512", "${A_SIZE + B_SIZE} + (nsub + ${SUB}) * 512"},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        emu_totals t;
        REQUIRE(run_mutant(m[i].from, m[i].to, m[i].from2, m[i].to2, &m[i].variant, 1, &t) == 0);
        CHECKF(t.errors + t.mismatches > 0, "not caught: %s", m[i].what);
        printf("  mutant \"%s\": %lld runs refused, %lld mismatches\n", m[i].what, t.errors,
               t.mismatches);
    }
}

/* The TMA model against the PTX ISA's swizzle tables ("Swizzling modes": 16-byte cell c of
 * 128-byte line i of the pattern lands at cell c ^ (i % rows of the pattern)), out-of-bounds
 * zero fill, the full-box byte count, and the 128-byte destination rule. */
static void t_tma_model(void) {
    static uint8_t g[64 * 256] __attribute__((aligned(256)));
    for (int i = 0; i < 64 * 256; i++) g[i] = (uint8_t)(1 + i % 251);
    static uint8_t smem[8192];
    static const struct {
        CUtensorMapSwizzle sw;
        int span, lines; /* pattern rows */
    } modes[] = {{CU_TENSOR_MAP_SWIZZLE_128B, 128, 8}, {CU_TENSOR_MAP_SWIZZLE_64B, 64, 4},
                 {CU_TENSOR_MAP_SWIZZLE_32B, 32, 2}};
    char err[256];
    for (size_t mi = 0; mi < 3; mi++) {
        int span = modes[mi].span;
        cuuint64_t dims[2] = {200, 64}, str[1] = {256};
        cuuint32_t box[2] = {(cuuint32_t)span, 16}, es[2] = {1, 1};
        CUtensorMap tm;
        REQUIRE(emu_encode_tiled(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, g, dims, str, box, es,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, modes[mi].sw,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
        emu_tmap m;
        memcpy(&m, &tm, sizeof m);
        for (uint32_t dst = 1024; dst < 2048; dst += 128) {
            memset(smem, 0xEE, sizeof smem);
            long n = emu_tma_box_2d(&m, 8, 4, smem, sizeof smem, dst, err, sizeof err);
            REQUIRE(n == span * 16);
            for (int r = 0; r < 16; r++)
                for (int b = 0; b < span; b++) {
                    uint32_t logical = dst + (uint32_t)(r * span + b);
                    uint32_t line = logical / 128, cell = (logical % 128) / 16;
                    uint32_t phys = line * 128 + ((cell ^ (line % (uint32_t)modes[mi].lines)) * 16) +
                                    logical % 16;
                    CHECK(smem[phys] == g[(4 + r) * 256 + 8 + b]);
                }
        }
        /* partly out of bounds (columns 192..199 of 200 exist, rows 60..63 of 64): zeros, full
         * byte count */
        memset(smem, 0xEE, sizeof smem);
        long n = emu_tma_box_2d(&m, 192, 60, smem, sizeof smem, 0, err, sizeof err);
        CHECK(n == span * 16);
        for (int r = 0; r < 16; r++)
            for (int b = 0; b < span; b++) {
                uint8_t v = smem[emu_swizzle((uint32_t)(r * span + b), span)];
                int in = 192 + b < 200 && 60 + r < 64;
                CHECK(v == (in ? g[(60 + r) * 256 + 192 + b] : 0));
            }
        CHECK(emu_tma_box_2d(&m, 0, 0, smem, sizeof smem, 0x430, err, sizeof err) < 0);
        CHECK(strstr(err, "not 128-byte aligned") != NULL);
    }
    /* 4-bit elements (16U4_ALIGN8B): packed, out of bounds per element */
    cuuint64_t dims[2] = {100, 3}, str[1] = {64};
    cuuint32_t box[2] = {128, 4}, es[2] = {1, 1};
    CUtensorMap tm;
    REQUIRE(emu_encode_tiled(&tm, CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B, 2, g, dims, str, box, es,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                             CU_TENSOR_MAP_L2_PROMOTION_NONE,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
    emu_tmap m;
    memcpy(&m, &tm, sizeof m);
    memset(smem, 0xEE, sizeof smem);
    CHECK(emu_tma_box_2d(&m, 0, 0, smem, sizeof smem, 0, err, sizeof err) == 64 * 4);
    for (int r = 0; r < 4; r++)
        for (int b = 0; b < 64; b++) {
            uint8_t want = r < 3 && b < 50 ? g[r * 64 + b] : 0;
            CHECK(smem[emu_swizzle((uint32_t)(r * 64 + b), 64)] == want);
        }
    /* the recording stub refuses what cuTensorMapEncodeTiled refuses */
    cuuint32_t big[2] = {256, 4};
    CHECK(emu_encode_tiled(&tm, CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B, 2, g, dims, str, big, es,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                           CU_TENSOR_MAP_L2_PROMOTION_NONE,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_ERROR_INVALID_VALUE);
}

const test_case tests_emu[] = {
    {"tma_model", t_tma_model},
    {"variants", t_variants},
    {"old_template", t_old_template},
    {"mutants", t_mutants},
    {"tma_probe_compile", emu_probe_compile_test},
    {"tma_probe", emu_probe_run},
    {NULL, NULL},
};
