/* test_emu.c - the sm_100a family on the CPU emulator (tests/emu.c): every valid sm_100a
 * variant, rendered with EMU=1 and compiled for the host, runs its real blob (the family's
 * blob_fill with a recording cuTensorMapEncodeTiled) over problem sets with tails, M = 0
 * groups and several groups, on fresh random data, compared with the CPU reference. The
 * static shared section comes from the variant's real cubin (NVRTC + nvJitLink). Needs a
 * host C++ compiler (c++ or $CXX), no GPU.
 *
 * Emulated, never run on a B200: this proves the kernel against the emulator's reading of
 * the PTX ISA, not against the hardware. */
#include <limits.h>
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
    uint32_t moe_section, moe_static_bytes; /* the MoE entry's (0: none) */
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
    /* the MoE entry: its section, and its static bytes from its line of the ptxas log
     * (nvfp4jit_kernel_resources reports the grouped entry's) */
    long ms = emu_elf_section_size(cubin, n, ".nv.shared." NJ_KERNEL_NAME "_moe");
    const void *log;
    size_t ln;
    ev->moe_section = ms > 0 ? (uint32_t)ms : 0;
    ev->moe_static_bytes = 0;
    if (ms > 0 && nvfp4jit_kernel_artifact(k, NVFP4JIT_ARTIFACT_LOG, &log, &ln) == NVFP4JIT_OK) {
        const char *f = strstr(log, "Function properties for " NJ_KERNEL_NAME "_moe\n");
        const char *u = f ? strstr(f, "Used ") : NULL;
        const char *b = u ? strstr(u, " bytes smem") : NULL;
        if (b) {
            const char *q = b;
            while (q > u && q[-1] >= '0' && q[-1] <= '9') q--;
            ev->moe_static_bytes = (uint32_t)strtoul(q, NULL, 10);
        }
    }
    if (ms > 0 && !ev->moe_static_bytes) {
        snprintf(err, errn, "MoE entry's static shared bytes not found in the log");
        return -1;
    }
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

int emu_build_moe_variant(const char *spec, const char *dir, emu_kernel *k, uint32_t *section,
                          uint32_t *static_bytes, char *err, size_t errn) {
    nvfp4jit_ctx_options o = {0};
    o.disable_disk_cache = 1;
    nvfp4jit_ctx *ctx = NULL;
    emu_variant ev;
    memset(&ev, 0, sizeof ev);
    int rc = -1;
    if (nvfp4jit_ctx_create(&o, &ctx) != NVFP4JIT_OK ||
        nvfp4jit_variant_parse(spec, &ev.v) != NVFP4JIT_OK) {
        snprintf(err, errn, "no context or bad variant %s", spec);
    } else if (cubin_layout(ctx, &ev, err, errn) == 0 && build_variant(ctx, dir, &ev, err, errn) == 0) {
        *k = ev.k;
        *section = ev.moe_section;
        *static_bytes = ev.moe_static_bytes;
        rc = 0;
    }
    nvfp4jit_ctx_destroy(ctx);
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
                        rg, nr, seed | 1, NULL, NULL};
        if (emu_run(&ev->k, &l, blob, st, err, errn) == 0) bad = set_check(g, n, ev->name);
    }
    free(blob);
    set_free(g, n);
    return bad;
}


/* ---- the MoE entry ---------------------------------------------------------------------- */
/* One MoE problem: E experts of N x K weights, max_rows token rows, counts per expert; the
 * offsets as a kernel on the device would get them (rows back to back, scales at 128-row
 * boundaries), then optionally one planted fault. */
#define MOE_MAXE 512
typedef struct moe_set {
    int E;
    int64_t n, k, max_rows, sf_rows;
    int counts[MOE_MAXE], off[MOE_MAXE + 1], sfo[MOE_MAXE];
    uint8_t *a, *sfa, *b, *sfb;
    uint16_t *c; /* max_rows x N with GUARD elements before and tail_rows rows after */
    int64_t tail_rows;
    size_t b_bytes, sfb_bytes;
} moe_set;

static size_t moe_c_elems(const moe_set *m) {
    return (size_t)((m->max_rows + m->tail_rows) * m->n) + GUARD;
}

static void moe_make(moe_set *m, uint64_t seed) {
    ref_rng r;
    ref_rng_seed(&r, seed);
    int64_t K = m->k, N = m->n;
    m->sf_rows = nvfp4jit_moe_scale_rows(m->max_rows, m->E);
    m->a = aligned_alloc(256, (size_t)(m->max_rows * K / 2 + 255) / 256 * 256);
    m->sfa = aligned_alloc(256, (size_t)(m->sf_rows * K / 16 + 255) / 256 * 256);
    m->b_bytes = (size_t)(N * K / 2);
    m->sfb_bytes = ref_sf_bytes(N, K);
    m->b = aligned_alloc(256, ((size_t)m->E * m->b_bytes + 255) / 256 * 256);
    m->sfb = aligned_alloc(256, ((size_t)m->E * m->sfb_bytes + 255) / 256 * 256);
    /* a tail as long as every tile the grid could run: a kernel that lost its row clamp
     * writes into it, not into the heap */
    m->tail_rows = 128 * (m->max_rows / 128 + m->E + 2);
    m->c = malloc(moe_c_elems(m) * 2);
    if (!m->a || !m->sfa || !m->b || !m->sfb || !m->c) abort();
    ref_fill_packed(&r, m->a, m->max_rows, K);
    memset(m->sfa, 0xFF, (size_t)(m->sf_rows * K / 16)); /* NaN where no expert's scales are */
    int cap = scale_cap_k(K);
    int rr = 0, ss = 0;
    for (int e = 0; e < m->E; e++) {
        ref_fill_packed(&r, m->b + e * m->b_bytes, N, K);
        ref_fill_scales(&r, m->sfb + e * m->sfb_bytes, N, K, e % 2 ? 8 : cap);
        m->off[e] = rr;
        m->sfo[e] = ss;
        if (m->counts[e])
            ref_fill_scales(&r, m->sfa + (size_t)ss * (size_t)(K / 16), m->counts[e], K,
                            e % 2 ? cap : 8);
        rr += m->counts[e];
        ss += (m->counts[e] + 127) / 128 * 128;
    }
    m->off[m->E] = rr;
    memset(m->c, 0xFF, moe_c_elems(m) * 2);
}

static void moe_free(moe_set *m) {
    free(m->a);
    free(m->sfa);
    free(m->b);
    free(m->sfb);
    free(m->c);
}

/* Compare expert e's rows of C with the CPU reference. @return mismatches. */
static int64_t moe_check_expert(const moe_set *m, int e, const char *label) {
    int64_t cnt = m->counts[e], N = m->n, K = m->k;
    if (!cnt) return 0;
    const uint8_t *a = m->a + (size_t)m->off[e] * (size_t)(K / 2);
    const uint8_t *sa = m->sfa + (size_t)m->sfo[e] * (size_t)(K / 16);
    const uint8_t *b = m->b + e * m->b_bytes, *sb = m->sfb + e * m->sfb_bytes;
    uint16_t *ref = malloc((size_t)(cnt * N) * 2);
    double *abs_sum = malloc((size_t)(cnt * N) * sizeof *abs_sum);
    if (!ref || !abs_sum) abort();
    ref_gemm(a, sa, b, sb, cnt, N, K, ref, 1);
    ref_gemm_abs(a, sa, b, sb, cnt, N, K, abs_sum);
    const uint16_t *out = m->c + GUARD + (size_t)m->off[e] * (size_t)N;
    int64_t nb = 0, first = -1;
    for (int64_t i = 0; i < cnt * N; i++) {
        double o = ref_f16_to_double(out[i]), r = ref_f16_to_double(ref[i]);
        int ok;
        if (isnan(o) || isnan(r)) ok = 0;
        else if (o == r) ok = 1;
        else if (isinf(o) || isinf(r)) ok = 0;
        else ok = fabs(o - r) <= 1e-3 + 1e-3 * fabs(r) + ((double)K / 16 + 4) / 16777216.0 * abs_sum[i];
        if (!ok && nb++ == 0) first = i;
    }
    if (nb)
        fprintf(stderr, "  %s expert %d (%lldx%lldx%lld at row %d): %lld bad, first (%lld,%lld) got %g want %g\n",
                label, e, (long long)cnt, (long long)N, (long long)K, m->off[e], (long long)nb,
                (long long)(first / N), (long long)(first % N), ref_f16_to_double(out[first]),
                ref_f16_to_double(ref[first]));
    free(ref);
    free(abs_sum);
    return nb;
}

/* Run the MoE entry once over m with offsets off/sfo (possibly planted). *status gets the
 * status word. @return 0 or -1 (emulator error in err). */
static int moe_run(nvfp4jit_ctx *ctx, emu_variant *ev, moe_set *m, const int *off, const int *sfo,
                   uint64_t seed, int lazy, int32_t *status, emu_stats *st, char *err, size_t errn) {
    drv_api api = stub_api();
    size_t bs = sm100_moe_blob_size(m->E);
    unsigned char *blob = aligned_alloc(256, (bs + 255) / 256 * 256);
    if (!blob) abort();
    static uint64_t bp[MOE_MAXE], sp[MOE_MAXE];
    for (int e = 0; e < m->E; e++) {
        bp[e] = (uint64_t)(uintptr_t)(m->b + e * m->b_bytes);
        sp[e] = (uint64_t)(uintptr_t)(m->sfb + e * m->sfb_bytes);
    }
    CUtensorMap amap;
    int rc = -1;
    status[0] = 0;
    status[1] = INT_MAX;
    if (sm100_moe_blob_fill(ctx, &api, &ev->v, m->E, m->n, m->k, bp, sp, blob) != NVFP4JIT_OK ||
        sm100_moe_token_map(ctx, &api, &ev->v, (uint64_t)(uintptr_t)m->a, m->max_rows, m->k,
                            &amap) != NVFP4JIT_OK) {
        snprintf(err, errn, "MoE blob: %s", nvfp4jit_last_error(ctx));
    } else {
        nj_moe_args args = {(uint64_t)(uintptr_t)m->a, (uint64_t)(uintptr_t)m->sfa,
                            (uint64_t)(uintptr_t)(m->c + GUARD), (uint64_t)(uintptr_t)off,
                            (uint64_t)(uintptr_t)sfo, (uint64_t)(uintptr_t)status,
                            (int32_t)m->max_rows, (int32_t)m->sf_rows, 0};
        emu_range rg[4] = {{m->a, (size_t)(m->max_rows * m->k / 2)},
                           {m->sfa, (size_t)(m->sf_rows * m->k / 16)},
                           {m->b, (size_t)m->E * m->b_bytes},
                           {m->sfb, (size_t)m->E * m->sfb_bytes}};
        int64_t grid = sm100_moe_grid(&ev->v, m->E, m->n, m->max_rows);
        emu_launch l = {(unsigned)grid, sm100_moe_threads(&ev->v), fam_get(ev->v.arch)->dyn_smem(&ev->v),
                        ev->moe_section, ev->moe_static_bytes, lazy, rg, 4, seed | 1, &args, &amap};
        rc = emu_run(&ev->k, &l, blob, st, err, errn);
    }
    free(blob);
    return rc;
}

/* rows of C no valid expert owns (and the guards) still hold the poison */
static int64_t moe_untouched(const moe_set *m, const unsigned char *owned) {
    int64_t bad = 0;
    for (int e = 0; e < GUARD; e++) bad += m->c[e] != 0xFFFF;
    for (size_t e = GUARD + (size_t)(m->max_rows * m->n); e < moe_c_elems(m); e++)
        bad += m->c[e] != 0xFFFF;
    for (int64_t r = 0; r < m->max_rows; r++)
        if (!owned[r])
            for (int64_t j = 0; j < m->n; j++) bad += m->c[GUARD + r * m->n + j] != 0xFFFF;
    return bad;
}

typedef struct moe_shape {
    int E;
    int64_t n, k, max_rows;
    int counts[MOE_MAXE];
} moe_shape;

/* More experts than the kernel has threads (192): each thread then scans a chunk of
 * experts (the schedule's chunk walk); 450 experts, most empty, 40 with 1..40 rows. */
static void moe_many(ref_rng *r, moe_shape *s) {
    memset(s, 0, sizeof *s);
    s->E = 450;
    s->n = 64;
    s->k = 128;
    int64_t tot = 0;
    for (int i = 0; i < 40; i++) {
        int e = (int)(ref_rng_next(r) % 450);
        s->counts[e] += 1 + (int)(ref_rng_next(r) % 40);
    }
    s->counts[449] += 3; /* the last expert non-empty */
    for (int e = 0; e < s->E; e++) tot += s->counts[e];
    s->max_rows = tot + 5;
}

/* Random MoE sets: 1..8 experts, some empty, counts uneven (not multiples of 128, one
 * expert sometimes over 128 rows), the total at most max_rows (sometimes exactly). */
static void moe_random(ref_rng *r, moe_shape *s) {
    memset(s, 0, sizeof *s);
    s->E = 1 + (int)(ref_rng_next(r) % 8);
    s->n = (int64_t)(ref_rng_next(r) % 24 + 1) * 8;
    s->k = (int64_t)(ref_rng_next(r) % 8 + 1) * 64;
    int64_t tot = 0;
    for (int e = 0; e < s->E; e++) {
        unsigned d = (unsigned)(ref_rng_next(r) % 8);
        s->counts[e] = d == 0 ? 0 : d == 1 ? 129 + (int)(ref_rng_next(r) % 100)
                                           : 1 + (int)(ref_rng_next(r) % 90);
        tot += s->counts[e];
    }
    s->max_rows = tot + (ref_rng_next(r) % 2 ? 0 : (int64_t)(ref_rng_next(r) % 50));
    if (s->max_rows == 0) s->max_rows = 1;
}

/* fixed MoE sets: empty experts first, last and between; a 128-row expert; one expert over
 * two tiles; max_rows exactly the total and beyond it; N not a multiple of 64, K with a
 * partial k-tile */
static const moe_shape moe_fixed[] = {
    {5, 136, 320, 400, {0, 130, 1, 0, 77}},
    {3, 64, 256, 300, {128, 0, 172}},
    {4, 200, 448, 260, {1, 2, 257, 0}},
};

/* Run one MoE shape: the right offsets (every expert against the reference, rows past the
 * total untouched). @return mismatches or -1. */
static int64_t moe_run_shape(nvfp4jit_ctx *ctx, emu_variant *ev, const moe_shape *sh,
                             uint64_t seed, int lazy, emu_stats *st, char *err, size_t errn) {
    moe_set m;
    memset(&m, 0, sizeof m);
    m.E = sh->E;
    m.n = sh->n;
    m.k = sh->k;
    m.max_rows = sh->max_rows;
    memcpy(m.counts, sh->counts, sizeof m.counts);
    moe_make(&m, seed);
    int32_t status[2];
    int64_t bad = -1;
    if (moe_run(ctx, ev, &m, m.off, m.sfo, seed, lazy, status, st, err, errn) == 0) {
        bad = 0;
        for (int e = 0; e < m.E; e++) bad += moe_check_expert(&m, e, ev->name);
        unsigned char *owned = calloc((size_t)m.max_rows, 1);
        if (!owned) abort();
        memset(owned, 1, (size_t)m.off[m.E]);
        int64_t u = moe_untouched(&m, owned);
        if (u) fprintf(stderr, "  %s: %lld elements written outside the experts' rows\n", ev->name, (long long)u);
        if (status[0] || status[1] != INT_MAX) {
            fprintf(stderr, "  %s: status {%d, %d} on good offsets\n", ev->name, status[0], status[1]);
            bad++;
        }
        bad += u;
        free(owned);
    }
    moe_free(&m);
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
    long long moe_sets; /* MoE entry runs (counted in sets, mismatches, errors too) */
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
    /* the MoE entry: the fixed shapes with copies landing lazily, a random one, the first
     * again eagerly */
    if (!ev.k.fn_moe || !ev.moe_section) {
        fprintf(stderr, "  %s: no MoE entry in the build or the cubin\n", ev.name);
        if (!t->errors++) snprintf(t->first_err, sizeof t->first_err, "no MoE entry");
    } else {
        static moe_shape rsh, many;
        moe_random(rr, &rsh);
        moe_many(rr, &many);
        struct {
            const moe_shape *s;
            int lazy;
        } mr[] = {{&moe_fixed[0], 1}, {&moe_fixed[1], 1}, {&moe_fixed[2], 1}, {&rsh, 1},
                  {&many, 1}, {&moe_fixed[0], 0}};
        for (size_t j = 0; j < sizeof mr / sizeof mr[0]; j++) {
            int64_t bad = moe_run_shape(ctx, &ev, mr[j].s, ref_rng_next(rr), mr[j].lazy, &t->st,
                                        err, sizeof err);
            int tiles = 0;
            for (int e = 0; e < mr[j].s->E; e++) tiles |= mr[j].s->counts[e] > 0;
            t->sets++;
            t->moe_sets++;
            t->tile_sets += tiles;
            if (bad < 0) t->tile_errors += tiles;
            if (bad < 0) {
                fprintf(stderr, "  %s MoE set %zu: %s\n", ev.name, j, err);
                if (!t->errors++) snprintf(t->first_err, sizeof t->first_err, "%s", err);
            } else {
                t->mismatches += bad;
            }
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
        printf("emu: %lld variants, %lld problem sets (%lld through the MoE entry), %lld "
               "mismatches\n", t.variants, t.sets, t.moe_sets, t.mismatches);
    printf("  (%llu CTAs, %llu TMA boxes, %llu bulk copies, %llu tcgen05.cp, %llu MMAs, %llu "
           "tcgen05.ld)\n", t.st.ctas, t.st.tma, t.st.bulk, t.st.cp, t.st.mma, t.st.ld);
    if (!only || !*only) CHECKF(t.variants == (long long)nv, "ran %lld of %zu", t.variants, nv);
    CHECK(t.errors == 0);
    CHECK(t.mismatches == 0);
    tu_rmtree(dir);
    nvfp4jit_ctx_destroy(ctx);
}


/* Planted bad offsets on a set of 8 experts (max_rows 256): each run must report the fault
 * (the sm_90a bits and lowest expert: 1 offsets negative or decreasing, 2 rows past
 * max_rows, 4 scale offset not a multiple of 128 or past the scale buffer), never read or
 * write outside the buffers (the emulator's range checks on every TMA and bulk copy, the
 * poisoned guard and tail of C), void the whole call on a row fault and skip only the faulty
 * expert on a scale fault (the others right). @return failed expectations, or -1. */
static const struct moe_fault {
    const char *what;
    int expert, field, value; /* field: 0 = offsets[expert], 1 = sf_offsets[expert] */
    int bits, lowest;         /* want; bits 0: no fault (the run must be right) */
} moe_faults[] = {
    {"sf offset not a multiple of 128", 3, 1, 100, 4, 3},
    {"sf offset past the scale buffer", 6, 1, 1 << 20, 4, 6},
    {"sf offset one block past the buffer", 7, 1, 1280, 4, 7},
    {"sf offset at the last block (valid)", 7, 1, 1152, 0, INT_MAX},
    {"negative sf offset", 7, 1, -128, 4, 7},
    {"misaligned sf offset of an empty expert (never read)", 1, 1, 77, 0, INT_MAX},
    {"offsets decreasing (a negative count)", 3, 0, 200, 1, 3},
    {"negative offset", 0, 0, -5, 1, 0},
    {"rows past max_rows", 8, 0, 100000, 2, 7},
    {"rows one past max_rows", 8, 0, 257, 2, 7},
    {"offset near INT_MAX", 8, 0, INT_MAX, 2, 7},
    {"offset INT_MIN", 2, 0, INT_MIN, 1, 1},
    {"last offset INT_MIN", 8, 0, INT_MIN, 1, 7},
};

static int64_t moe_fault_run(nvfp4jit_ctx *ctx, emu_variant *ev, const struct moe_fault *f,
                             uint64_t seed, emu_stats *st, char *err, size_t errn) {
    static const int c1[8] = {5, 0, 17, 130, 1, 0, 64, 9};
    moe_set m;
    memset(&m, 0, sizeof m);
    m.E = 8;
    m.n = 136;
    m.k = 320;
    m.max_rows = 256;
    memcpy(m.counts, c1, sizeof c1);
    moe_make(&m, seed);
    int off[9], sfo[8];
    memcpy(off, m.off, sizeof off);
    memcpy(sfo, m.sfo, sizeof sfo);
    if (f->field) sfo[f->expert] = f->value;
    else off[f->expert] = f->value;
    if (!f->bits && f->field && m.counts[f->expert]) { /* a valid move: the scales move too */
        size_t row = (size_t)(m.k / 16), n = (size_t)(m.counts[f->expert] + 127) / 128 * 128;
        memmove(m.sfa + (size_t)f->value * row, m.sfa + (size_t)m.sfo[f->expert] * row, n * row);
        m.sfo[f->expert] = f->value;
    }
    int32_t status[2];
    int64_t bad = -1;
    if (moe_run(ctx, ev, &m, off, sfo, seed, 1, status, st, err, errn) == 0) {
        bad = 0;
        if (status[0] != f->bits || status[1] != f->lowest) {
            fprintf(stderr, "  %s, %s: status {%d, %d}, want {%d, %d}\n", ev->name, f->what,
                    status[0], status[1], f->bits, f->lowest);
            bad++;
        }
        /* row faults: nothing written; a scale fault: its expert's rows not written */
        unsigned char *owned = calloc((size_t)m.max_rows, 1);
        if (!owned) abort();
        int row_fault = f->bits & 3;
        for (int e = 0; e < m.E && !row_fault; e++) {
            if (f->bits == 4 && e == f->expert) continue;
            memset(owned + m.off[e], 1, (size_t)m.counts[e]);
            bad += moe_check_expert(&m, e, ev->name);
        }
        int64_t u = moe_untouched(&m, owned);
        if (u) fprintf(stderr, "  %s, %s: %lld elements written outside the valid experts' rows\n",
                       ev->name, f->what, (long long)u);
        bad += u;
        free(owned);
    }
    moe_free(&m);
    return bad;
}

/* Build a variant and run every planted fault on it (counted as sets: failed expectations as
 * mismatches). */
static void run_variant_faults(nvfp4jit_ctx *ctx, const char *dir, const nvfp4jit_variant *v,
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
    for (size_t i = 0; i < sizeof moe_faults / sizeof moe_faults[0]; i++) {
        int64_t bad = moe_fault_run(ctx, &ev, &moe_faults[i], ref_rng_next(rr), &t->st, err,
                                    sizeof err);
        t->sets++;
        t->moe_sets++;
        if (bad < 0) {
            fprintf(stderr, "  %s, %s: %s\n", ev.name, moe_faults[i].what, err);
            if (!t->errors++) snprintf(t->first_err, sizeof t->first_err, "%s", err);
        } else {
            t->mismatches += bad;
        }
    }
    emu_kernel_close(&ev.k);
}

typedef void (*variant_body)(nvfp4jit_ctx *ctx, const char *dir, const nvfp4jit_variant *v,
                             ref_rng *rr, emu_totals *t);

/* The planted faults on one variant per BLOCK_N x BLOCK_K (NVFP4JIT_EMU_ONLY narrows). */
static void t_moe_faults(void) {
    static const char *vars[] = {"sm100a:128x64x256:s3", "sm100a:128x128x256:s2",
                                 "sm100a:128x64x128:s5", "sm100a:128x128x128:s4"};
    nvfp4jit_ctx *ctx = mkctx();
    REQUIRE(ctx);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    uint64_t seed = seed_now();
    printf("  emu seed %llu (NVFP4JIT_EMU_SEED=%llu reproduces)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    ref_rng rr;
    ref_rng_seed(&rr, seed);
    emu_totals t;
    memset(&t, 0, sizeof t);
    const char *only = getenv("NVFP4JIT_EMU_ONLY");
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        if (only && *only && !strstr(vars[i], only)) continue;
        nvfp4jit_variant v;
        REQUIRE(nvfp4jit_variant_parse(vars[i], &v) == NVFP4JIT_OK);
        run_variant_faults(ctx, dir, &v, &rr, &t);
    }
    printf("emu MoE faults: %lld variants, %lld planted runs, %lld failed expectations, %lld "
           "refused by the emulator\n", t.variants, t.sets, t.mismatches, t.errors);
    CHECK(t.errors == 0);
    CHECK(t.mismatches == 0);
    tu_rmtree(dir);
    nvfp4jit_ctx_destroy(ctx);
}
/* The current template with one text replaced, in a temp NVFP4JIT_TEMPLATE_DIR, run on the
 * emulator for the given variants. @return the totals (t->errors, t->mismatches). */
static int run_mutant_with(variant_body body, const char *from, const char *to,
                           const char *from2, const char *to2, const char *const *variants,
                           size_t nvar, emu_totals *t) {
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
        if (nvfp4jit_variant_parse(variants[i], &v) == NVFP4JIT_OK) body(ctx, dir, &v, &rr, t);
    }
    nvfp4jit_ctx_destroy(ctx);
    if (old) setenv("NVFP4JIT_TEMPLATE_DIR", saved, 1);
    else unsetenv("NVFP4JIT_TEMPLATE_DIR");
    tu_rmtree(dir);
    return 0;
}

static int run_mutant(const char *from, const char *to, const char *from2, const char *to2,
                      const char *const *variants, size_t nvar, emu_totals *t) {
    return run_mutant_with(run_variant, from, to, from2, to2, variants, nvar, t);
}

/* Seeded defects of the MoE entry the emulator must catch (wrong results, a fault not
 * reported, a write outside the valid rows, or an emulator error; the messages printed are
 * expected). The clamp mutants run the planted faults, the rest the MoE sets of run_variant. */
static void t_moe_mutants(void) {
    static const struct {
        const char *what, *from, *to, *variant;
        int faults;
    } m[] = {
        {"no row clamp at max_rows", "if (b > p.max_rows) return -2;", "",
         "sm100a:128x64x256:s3", 1},
        {"no scale-offset clamp", "s > p.sf_rows - ((b - a + 127) & ~127)", "0",
         "sm100a:128x128x128:s2", 1},
        {"row fault does not void the call", "if (row_fault) moe_pick[0] = 1;", "",
         "sm100a:128x64x128:s2", 1},
        {"tile schedule off by one (boundary tile to the next expert)", "if (mt < first + t) {",
         "if (mt <= first + t) {", "sm100a:128x64x256:s2", 0},
        {"tile count without the partial tile", "if (cnt > 0) tiles += (cnt + 127) / 128;",
         "if (cnt > 0) tiles += cnt / 128;", "sm100a:128x128x256:s2", 0},
        {"no row mask at the expert's end",
         "const int M = moe_expert(moe, group, &moe_r0, &moe_s0);",
         "const int M = ${BLOCK_M} + 0 * moe_expert(moe, group, &moe_r0, &moe_s0);",
         "sm100a:128x64x128:s3", 0},
        {"token rows from the tile's first expert row, not the expert's",
         "tma_2d_g2s(A_s, A_tmap, it * ${BLOCK_K}, a_row0 + off_m,",
         "tma_2d_g2s(A_s, A_tmap, it * ${BLOCK_K}, off_m,", "sm100a:128x128x128:s3", 0},
    };
    const char *only = getenv("NVFP4JIT_EMU_MUTANT");
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (only && *only && !strstr(m[i].what, only)) continue;
        emu_totals t;
        REQUIRE(run_mutant_with(m[i].faults ? run_variant_faults : run_variant, m[i].from,
                                m[i].to, NULL, NULL, &m[i].variant, 1, &t) == 0);
        CHECKF(t.errors + t.mismatches > 0, "not caught: %s", m[i].what);
        printf("  MoE mutant \"%s\": %lld runs refused, %lld mismatches\n", m[i].what, t.errors,
               t.mismatches);
    }
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
    /* 5 grouped and 6 MoE sets per variant; the MoE entry has the same round-up */
    CHECKF(t.variants == 4 && t.sets == 4 * 11, "%lld variants, %lld sets run", t.variants, t.sets);
    CHECKF(t.tile_sets >= 4 * 9, "%lld sets with a tile (the fixed ones: %d)", t.tile_sets, 4 * 9);
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
    {"moe_faults", t_moe_faults},
    {"moe_mutants", t_moe_mutants},
    {"tma_probe_compile", emu_probe_compile_test},
    {"tma_probe", emu_probe_run},
    {NULL, NULL},
};
