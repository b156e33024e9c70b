/* ext.c - the extension API (include/nvfp4jit_ext.h): thin wrappers over internal subsystems
 * for tools built on the library (the nvfp4jit command). Like nvfp4jit.c for nvfp4jit.h, this
 * is a face: it checks arguments, clears the context's message where it takes one, and calls
 * the subsystem; nothing in src/ calls it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "driver.h"
#include "family.h"
#include "heuristic.h"
#include "problems.h"
#include "reference.h"
#include "tunedb.h"

_Static_assert(NVFP4JIT_EXT_SIGNATURE_MAX == TDB_SIG_MAX, "signature size: one value");

/* ---- problem sets ------------------------------------------------------------------------- */
NVFP4JIT_API int nvfp4jit_ext_parse_shape(const char *tok, size_t len, nvfp4jit_ext_shape *out,
                                          char *err, size_t err_n) {
    return prob_parse_shape(tok, len, out, err, err_n);
}

NVFP4JIT_API int nvfp4jit_ext_parse_groups(const char *s, const char *name,
                                           nvfp4jit_ext_set *out, char *err, size_t err_n) {
    return prob_parse_groups(s, name, out, err, err_n);
}

NVFP4JIT_API int nvfp4jit_ext_problems_load(const char *path, nvfp4jit_ext_problems *out,
                                            char *err, size_t err_n) {
    return prob_load_file(path, out, err, err_n);
}

NVFP4JIT_API void nvfp4jit_ext_set_free(nvfp4jit_ext_set *s) { prob_set_free(s); }

NVFP4JIT_API void nvfp4jit_ext_problems_free(nvfp4jit_ext_problems *f) { prob_file_free(f); }

/* ---- the CPU reference -------------------------------------------------------------------- */
NVFP4JIT_API double nvfp4jit_ext_ref_e2m1(unsigned code) { return ref_e2m1(code); }
NVFP4JIT_API double nvfp4jit_ext_ref_e4m3(unsigned byte) { return ref_e4m3(byte); }
NVFP4JIT_API uint16_t nvfp4jit_ext_ref_f16_from_double(double x) {
    return ref_f16_from_double(x);
}
NVFP4JIT_API double nvfp4jit_ext_ref_f16_to_double(uint16_t h) { return ref_f16_to_double(h); }
NVFP4JIT_API size_t nvfp4jit_ext_ref_sf_bytes(int64_t rows, int64_t k) {
    return ref_sf_bytes(rows, k);
}
NVFP4JIT_API size_t nvfp4jit_ext_ref_sf_offset(int64_t r, int64_t j, int64_t k) {
    return ref_sf_offset(r, j, k);
}

NVFP4JIT_API void nvfp4jit_ext_ref_gemm(const uint8_t *a, const uint8_t *sfa, const uint8_t *b,
                                        const uint8_t *sfb, int64_t m, int64_t n, int64_t k,
                                        uint16_t *c, int threads) {
    ref_gemm(a, sfa, b, sfb, m, n, k, c, threads);
}

NVFP4JIT_API void nvfp4jit_ext_rng_seed(nvfp4jit_ext_rng *r, uint64_t seed) {
    ref_rng_seed(r, seed);
}

NVFP4JIT_API void nvfp4jit_ext_ref_fill_packed(nvfp4jit_ext_rng *r, uint8_t *packed,
                                               int64_t rows, int64_t k) {
    ref_fill_packed(r, packed, rows, k);
}

NVFP4JIT_API void nvfp4jit_ext_ref_fill_scales(nvfp4jit_ext_rng *r, uint8_t *sf_blocked,
                                               int64_t rows, int64_t k, int max_exp) {
    ref_fill_scales(r, sf_blocked, rows, k, max_exp);
}

NVFP4JIT_API int nvfp4jit_ext_ref_compare(const uint16_t *out, const uint16_t *ref,
                                          int64_t count, double atol, double rtol,
                                          double rel_l2, nvfp4jit_ext_ref_check *res) {
    return ref_compare(out, ref, count, atol, rtol, rel_l2, res);
}

/* ---- the disk cache ----------------------------------------------------------------------- */
NVFP4JIT_API int nvfp4jit_ext_cache_foreach(const char *dir, nvfp4jit_ext_cache_visit_fn cb,
                                            void *user) {
    if (!dir) return -1;
    return cache_foreach(dir, cb, user);
}

NVFP4JIT_API int nvfp4jit_ext_cache_manifest(const char *dir, const char *key, char *out,
                                             size_t n) {
    return cache_read_manifest(dir, key, out, n);
}

NVFP4JIT_API int nvfp4jit_ext_cache_clear(const char *dir, char *err, size_t err_n) {
    if (!dir) {
        if (err && err_n) snprintf(err, err_n, "no cache directory");
        return -1;
    }
    return cache_clear(dir, err, err_n);
}

/* ---- the tuning database ------------------------------------------------------------------ */
NVFP4JIT_API int nvfp4jit_ext_tune_signature(nvfp4jit_arch arch, const nvfp4jit_group *g,
                                             size_t n, char *out, size_t cap) {
    return tdb_signature(arch, g, n, out, cap);
}

NVFP4JIT_API int nvfp4jit_ext_tune_lookup(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                          const nvfp4jit_group *g, size_t n,
                                          nvfp4jit_variant *v) {
    if (!v) return 0;
    nj_clear(ctx);
    return tune_lookup(ctx, arch, g, n, v);
}

/* ---- the heuristic----------------------------------------------------------------------- */
static void candidate_from(nvfp4jit_ext_candidate *o, const heur_cand *h) {
    memset(o, 0, sizeof *o);
    o->variant = h->v;
    o->est_us = h->est_us;
    o->mma_us = h->mma_us;
    o->decode_us = h->decode_us;
    o->mem_us = h->mem_us;
    o->tiles = h->tiles;
    o->waves = h->waves;
    o->waste = h->waste;
    o->ctas_per_sm = h->ctas_per_sm;
    o->occ_smem = h->occ_smem;
    o->occ_tmem = h->occ_tmem;
    o->occ_regs = h->occ_regs;
    o->kstep_us = h->kstep_us;
    o->ring_us = h->ring_us;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_rank(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                               const nvfp4jit_group *g, size_t n, int sms,
                                               nvfp4jit_ext_candidate *out, size_t cap,
                                               size_t *count) {
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !count || (cap && !out), NVFP4JIT_ERR_INVALID_ARG,
                 "nvfp4jit_ext_rank: count is NULL, or out is NULL with cap > 0");
    heur_cand *h = NULL;
    if (cap) {
        h = calloc(cap, sizeof *h);
        NJ_RETURN_IF(ctx, !h, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (rank)");
    }
    nvfp4jit_status s = heur_rank(ctx, arch, g, n, sms, h, cap, count);
    if (s == NVFP4JIT_OK)
        for (size_t i = 0; i < cap && i < *count; i++) candidate_from(&out[i], &h[i]);
    free(h);
    return s;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_choose(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                 const nvfp4jit_group *g, size_t n,
                                                 nvfp4jit_variant *v, nvfp4jit_choice *choice) {
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !v, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_ext_choose: v is NULL");
    return heur_choose(ctx, arch, g, n, 0, v, choice); /* 0: the family's model SM count */
}

NVFP4JIT_API double nvfp4jit_ext_sm100_ring_latency_us(void) { return SM100_RING_LATENCY_US; }

NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_variant_launch(const nvfp4jit_variant *v,
                                                         int *threads, size_t *dyn_smem) {
    if (!v || !threads || !dyn_smem) return NVFP4JIT_ERR_INVALID_ARG;
    const family *f = fam_get(v->arch);
    if (!f) return NVFP4JIT_ERR_UNSUPPORTED_ARCH;
    *threads = f->threads(v);
    *dyn_smem = f->dyn_smem(v);
    return NVFP4JIT_OK;
}

/* ---- the CUDA driver--------------------------------------------------------------------- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ext_cuda_init(nvfp4jit_ctx *ctx) {
    nj_clear(ctx);
    nvfp4jit_status s = NVFP4JIT_OK;
    return drv_get(ctx, &s) ? NVFP4JIT_OK : s;
}

NVFP4JIT_API void *nvfp4jit_ext_cuda_proc(const char *name) { return drv_proc(name); }
