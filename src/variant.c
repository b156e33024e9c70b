/* variant.c - the variant rules (through each arch's family), names, the variant space,
 * and the problem-set checks. Nothing here clears the context's message. */
#include "variant.h"

#include <stdio.h>
#include <string.h>

#include "family.h"

nvfp4jit_status nj_variant_check(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v) {
    NJ_RETURN_IF(ctx, !v, NVFP4JIT_ERR_INVALID_ARG, "variant is NULL");
    const family *f = fam_get(v->arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)v->arch);
    char why[512] = "";
    if (!f->check(v, why, sizeof why)) {
        char name[96];
        nj_variant_format(v, name, sizeof name);
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_VARIANT, "variant %s: %s", name, why);
    }
    return NVFP4JIT_OK;
}

int nj_variant_format(const nvfp4jit_variant *v, char *buf, size_t n) {
    char dummy[1];
    if (!buf) { /* measuring only: snprintf must not see a NULL buffer with n > 0 */
        buf = dummy;
        n = 0;
    }
    if (!v) return snprintf(buf, n, "(null)");
    const family *f = fam_get(v->arch); /* (arch.c) */
    const char *a = f ? f->short_name : "arch?";
    return snprintf(buf, n, "%s:%dx%dx%d:s%d%s%s", a, v->block_m, v->block_n, v->block_k,
                    v->stages, v->swap_ab ? ":swap" : "",
                    v->strategy == NVFP4JIT_STRATEGY_ACT16    ? ":act16"
                    : v->strategy == NVFP4JIT_STRATEGY_ACT16P ? ":act16p"
                    : v->strategy == NVFP4JIT_STRATEGY_ACT16SK ? ":act16sk"
                    : v->strategy != 0                        ? ":strategy?"
                                                              : "");
}

/* One number of a variant name: decimal digits only (no sign, blank or leading zero), at most
 * NVFP4JIT_VARIANT_MAX_PARAM. @return the position after it, or NULL. */
static const char *parse_param(const char *s, int *out) {
    if (*s < '1' || *s > '9') return NULL;
    long v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > NVFP4JIT_VARIANT_MAX_PARAM) return NULL;
    }
    *out = (int)v;
    return s;
}

static const char *skip_lit(const char *s, const char *lit) {
    size_t n = strlen(lit);
    return strncmp(s, lit, n) ? NULL : s + n;
}

nvfp4jit_status nj_variant_parse(const char *s, nvfp4jit_variant *out) {
    if (!s || !out) return NVFP4JIT_ERR_INVALID_ARG;
    nvfp4jit_variant v;
    memset(&v, 0, sizeof v);
    size_t plen = 0;
    const family *f = fam_by_short_name(s, &plen); /* "sm90a:", "sm100a:" (src/arch.c) */
    if (!f) return NVFP4JIT_ERR_INVALID_ARG;
    v.arch = f->arch;
    const char *p = s + plen;
    /* strict: the exact form nvfp4jit_variant_format writes, every number range-checked */
    if (!(p = parse_param(p, &v.block_m)) || !(p = skip_lit(p, "x")) ||
        !(p = parse_param(p, &v.block_n)) || !(p = skip_lit(p, "x")) ||
        !(p = parse_param(p, &v.block_k)) || !(p = skip_lit(p, ":s")) ||
        !(p = parse_param(p, &v.stages)))
        return NVFP4JIT_ERR_INVALID_ARG;
    const char *q;
    if ((q = skip_lit(p, ":swap"))) {
        v.swap_ab = 1;
        p = q;
    }
    if (!strcmp(p, ":act16")) v.strategy = NVFP4JIT_STRATEGY_ACT16;
    else if (!strcmp(p, ":act16p")) v.strategy = NVFP4JIT_STRATEGY_ACT16P;
    else if (!strcmp(p, ":act16sk")) v.strategy = NVFP4JIT_STRATEGY_ACT16SK;
    else if (*p) return NVFP4JIT_ERR_INVALID_ARG;
    *out = v;
    return NVFP4JIT_OK;
}

typedef struct space_acc {
    const family *f;
    nvfp4jit_variant *out;
    size_t cap, count;
} space_acc;

static void space_emit(const nvfp4jit_variant *v, void *u) {
    space_acc *a = u;
    char why[256];
    if (!a->f->check(v, why, sizeof why)) return;
    if (a->out && a->count < a->cap) a->out[a->count] = *v;
    a->count++;
}

nvfp4jit_status nj_variant_space(nvfp4jit_arch arch, nvfp4jit_variant *out, size_t cap,
                                 size_t *count) {
    if (!count || (cap && !out)) return NVFP4JIT_ERR_INVALID_ARG;
    const family *f = fam_get(arch);
    if (!f) return NVFP4JIT_ERR_UNSUPPORTED_ARCH;
    space_acc a = {f, out, cap, 0};
    f->enumerate(space_emit, &a);
    *count = a.count;
    return NVFP4JIT_OK;
}

int nj_variant_eq(const nvfp4jit_variant *a, const nvfp4jit_variant *b) {
    return a->arch == b->arch && a->block_m == b->block_m && a->block_n == b->block_n &&
           a->block_k == b->block_k && a->stages == b->stages && a->swap_ab == b->swap_ab &&
           a->strategy == b->strategy;
}

/* ---- problem sets ---- */
nvfp4jit_status nj_check_groups(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n,
                                int pointers) {
    NJ_RETURN_IF(ctx, !g && n, NVFP4JIT_ERR_INVALID_ARG, "groups is NULL");
    NJ_RETURN_IF(ctx, n == 0, NVFP4JIT_ERR_INVALID_PROBLEM, "problem set has no groups");
    NJ_RETURN_IF(ctx, n > NVFP4JIT_MAX_GROUPS, NVFP4JIT_ERR_INVALID_PROBLEM,
                 "problem set has %zu groups (at most %u)", n, NVFP4JIT_MAX_GROUPS);
    for (size_t i = 0; i < n; i++) {
        const nvfp4jit_group *p = &g[i];
        NJ_RETURN_IF(ctx, p->m < 0, NVFP4JIT_ERR_INVALID_PROBLEM, "group %zu: M=%lld is negative",
                     i, (long long)p->m);
        NJ_RETURN_IF(ctx, p->n < 8 || p->n % 8, NVFP4JIT_ERR_INVALID_PROBLEM,
                     "group %zu: N=%lld is not a positive multiple of 8", i, (long long)p->n);
        NJ_RETURN_IF(ctx, p->k < 64 || p->k % 64, NVFP4JIT_ERR_INVALID_PROBLEM,
                     "group %zu: K=%lld is not a multiple of 64 (>= 64)", i, (long long)p->k);
        /* sizes must fit the kernels' 32-bit indexing and TMA's dimension limits */
        NJ_RETURN_IF(ctx, p->m > NVFP4JIT_MAX_DIM || p->n > NVFP4JIT_MAX_DIM ||
                              p->k > NVFP4JIT_MAX_DIM,
                     NVFP4JIT_ERR_INVALID_PROBLEM,
                     "group %zu: %lldx%lldx%lld exceeds 2^24 in some dimension", i,
                     (long long)p->m, (long long)p->n, (long long)p->k);
        if (!pointers || p->m == 0) continue;
        const struct { const char *name; uint64_t v; } ptrs[] = {
            {"A", p->a}, {"B", p->b}, {"SFA", p->sfa}, {"SFB", p->sfb}, {"C", p->c}};
        for (int j = 0; j < 5; j++) {
            NJ_RETURN_IF(ctx, ptrs[j].v == 0, NVFP4JIT_ERR_INVALID_PROBLEM,
                         "group %zu: pointer %s is NULL", i, ptrs[j].name);
            NJ_RETURN_IF(ctx, ptrs[j].v % 16, NVFP4JIT_ERR_INVALID_PROBLEM,
                         "group %zu: pointer %s=0x%llx is not 16-byte aligned", i, ptrs[j].name,
                         (unsigned long long)ptrs[j].v);
        }
    }
    return NVFP4JIT_OK;
}
