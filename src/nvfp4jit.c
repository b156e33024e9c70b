/* nvfp4jit.c - context, status strings, versions, variants, problem validation and the
 * compile path (render -> cache lookup -> NVRTC/nvJitLink -> cache store). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "common.h"
#include "compile.h"
#include "family.h"
#include "gpuref.h"
#include "kernel.h"
#include "template.h"

const char *nj_thread_create_msg(void);

NVFP4JIT_API int nvfp4jit_version_number(void) { return NVFP4JIT_VERSION_NUMBER; }
NVFP4JIT_API const char *nvfp4jit_version_string(void) { return NVFP4JIT_VERSION_STRING; }

NVFP4JIT_API const char *nvfp4jit_status_string(nvfp4jit_status s) {
    switch (s) {
#define NVFP4JIT_X_STR(name, value, desc)                                                    \
    case NVFP4JIT_##name:                                                                    \
        return "NVFP4JIT_" #name ": " desc;
        NVFP4JIT_STATUS_MAP(NVFP4JIT_X_STR)
#undef NVFP4JIT_X_STR
    }
    return "NVFP4JIT_?: unknown status";
}

/* ---- context ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ctx_create(const nvfp4jit_ctx_options *opts,
                                                 nvfp4jit_ctx **out) {
    if (!out) return nj_fail(NULL, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_ctx_create: out is NULL");
    *out = NULL;
    nvfp4jit_ctx *c = calloc(1, sizeof *c);
    if (!c) return nj_fail(NULL, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (context)");
    c->msg = calloc(1, NJ_MSG_CAP);
    c->warn = calloc(1, NJ_MSG_CAP);
    if (!c->msg || !c->warn) {
        nvfp4jit_ctx_destroy(c);
        return nj_fail(NULL, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (context)");
    }
    c->disk_cache = !(opts && opts->disable_disk_cache);
    c->verbose = opts ? opts->verbose : 0;
    if (opts && opts->cache_dir) {
        if (!*opts->cache_dir || strlen(opts->cache_dir) >= sizeof c->cache_dir - 128) {
            nvfp4jit_ctx_destroy(c);
            return nj_fail(NULL, NVFP4JIT_ERR_INVALID_ARG,
                           "cache_dir is empty or longer than %zu bytes",
                           sizeof c->cache_dir - 128);
        }
        snprintf(c->cache_dir, sizeof c->cache_dir, "%s", opts->cache_dir);
    } else {
        int r = cache_default_dir(c->cache_dir, sizeof c->cache_dir - 128);
        if (r == -2) { /* silently going without the disk cache would hide a typo */
            nvfp4jit_ctx_destroy(c);
            return nj_fail(NULL, NVFP4JIT_ERR_INVALID_ARG,
                           "the cache directory from NVFP4JIT_CACHE_DIR (or XDG_CACHE_HOME or "
                           "HOME) is longer than %zu bytes", sizeof c->cache_dir - 129);
        }
        if (r != 0) {
            c->cache_dir[0] = '\0';
            c->disk_cache = 0; /* no HOME and no override: memory only */
        }
    }
    if (c->disk_cache) {
        char why[1024];
        cache_trust t = cache_check_dir(c->cache_dir, why, sizeof why);
        if (t != CACHE_TRUSTED) nj_warn(c, "%s", why);
        if (t == CACHE_UNTRUSTED) c->disk_cache = 0;
        c->cache_read_only = t == CACHE_READ_ONLY;
    }
    *out = c;
    return NVFP4JIT_OK;
}

static void kernel_free(nvfp4jit_kernel *k);

NVFP4JIT_API void nvfp4jit_ctx_destroy(nvfp4jit_ctx *ctx) {
    if (!ctx) return;
    nvfp4jit_kernel *k = ctx->kernels;
    while (k) {
        nvfp4jit_kernel *n = k->next;
        kernel_free(k);
        k = n;
    }
    gpuref_free(ctx);
    free(ctx->msg);
    free(ctx->warn);
    free(ctx);
}

NVFP4JIT_API const char *nvfp4jit_last_error(const nvfp4jit_ctx *ctx) {
    if (!ctx) return nj_thread_create_msg();
    return ctx->msg ? ctx->msg : "";
}
NVFP4JIT_API const char *nvfp4jit_last_warning(const nvfp4jit_ctx *ctx) {
    return ctx && ctx->warn ? ctx->warn : "";
}
NVFP4JIT_API const char *nvfp4jit_cache_dir(const nvfp4jit_ctx *ctx) {
    return ctx ? ctx->cache_dir : "";
}

/* ---- variants ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_variant *v) {
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !v, NVFP4JIT_ERR_INVALID_ARG, "variant is NULL");
    const family *f = fam_get(v->arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH,
                 "arch %d is not supported (sm_90a = 90, sm_100a = 100)", (int)v->arch);
    char why[512] = "";
    if (!f->check(v, why, sizeof why)) {
        char name[96];
        nvfp4jit_variant_format(v, name, sizeof name);
        return nj_fail(ctx, NVFP4JIT_ERR_INVALID_VARIANT, "variant %s: %s", name, why);
    }
    return NVFP4JIT_OK;
}

NVFP4JIT_API int nvfp4jit_variant_format(const nvfp4jit_variant *v, char *buf, size_t n) {
    char dummy[1];
    if (!buf) { /* measuring only: snprintf must not see a NULL buffer with n > 0 */
        buf = dummy;
        n = 0;
    }
    if (!v) return snprintf(buf, n, "(null)");
    const family *f = fam_get(v->arch);
    const char *a = f ? f->short_name : "arch?";
    return snprintf(buf, n, "%s:%dx%dx%d:s%d%s%s", a, v->block_m, v->block_n, v->block_k,
                    v->stages, v->swap_ab ? ":swap" : "",
                    v->strategy == NVFP4JIT_STRATEGY_ACT16    ? ":act16"
                    : v->strategy == NVFP4JIT_STRATEGY_ACT16P ? ":act16p"
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

NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_parse(const char *s, nvfp4jit_variant *out) {
    if (!s || !out) return NVFP4JIT_ERR_INVALID_ARG;
    nvfp4jit_variant v;
    memset(&v, 0, sizeof v);
    const char *p;
    if ((p = skip_lit(s, "sm90a:"))) v.arch = NVFP4JIT_ARCH_SM90A;
    else if ((p = skip_lit(s, "sm100a:"))) v.arch = NVFP4JIT_ARCH_SM100A;
    else return NVFP4JIT_ERR_INVALID_ARG;
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

NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_space(nvfp4jit_arch arch, nvfp4jit_variant *out,
                                                    size_t cap, size_t *count) {
    if (!count || (cap && !out)) return NVFP4JIT_ERR_INVALID_ARG;
    const family *f = fam_get(arch);
    if (!f) return NVFP4JIT_ERR_UNSUPPORTED_ARCH;
    space_acc a = {f, out, cap, 0};
    f->enumerate(space_emit, &a);
    *count = a.count;
    return NVFP4JIT_OK;
}

/* ---- problem validation ---- */
static nvfp4jit_status check_groups(nvfp4jit_ctx *ctx, const nvfp4jit_group *g, size_t n,
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

NVFP4JIT_API nvfp4jit_status nvfp4jit_problem_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_group *groups,
                                                    size_t num_groups) {
    nj_clear(ctx);
    return check_groups(ctx, groups, num_groups, 1);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_problem_check_shapes(nvfp4jit_ctx *ctx,
                                                           const nvfp4jit_group *groups,
                                                           size_t num_groups) {
    nj_clear(ctx);
    return check_groups(ctx, groups, num_groups, 0);
}

/* ---- rendering and compiling ---- */
nvfp4jit_status nj_render(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_buf *out) {
    const family *f = fam_get(v->arch);
    tmpl_param p[48];
    int n = 0;
    p[n++] = (tmpl_param){"ARCH", 1, 0, f->arch_name};
    p[n++] = (tmpl_param){"BLOCK_M", 0, v->block_m, NULL};
    p[n++] = (tmpl_param){"BLOCK_N", 0, v->block_n, NULL};
    p[n++] = (tmpl_param){"BLOCK_K", 0, v->block_k, NULL};
    p[n++] = (tmpl_param){"STAGES", 0, v->stages, NULL};
    p[n++] = (tmpl_param){"SWAP_AB", 0, v->swap_ab, NULL};
    p[n++] = (tmpl_param){"STRATEGY", 0, v->strategy, NULL};
    p[n++] = (tmpl_param){"THREADS", 0, f->threads(v), NULL};
    p[n++] = (tmpl_param){"DYN_SMEM", 0, (long long)f->dyn_smem(v), NULL};
    p[n++] = (tmpl_param){"KERNEL_NAME", 1, 0, NJ_KERNEL_NAME};
    if (f->params) n += f->params(v, p + n, (int)(sizeof p / sizeof p[0]) - n);
    return tmpl_render(ctx, f->template_name, p, n, out);
}

static void kernel_free(nvfp4jit_kernel *k) {
    if (!k) return;
    /* Modules are not unloaded here: the context they live in may be gone already. */
    nj_buf_free(&k->source);
    nj_buf_free(&k->ptx);
    nj_buf_free(&k->cubin);
    nj_buf_free(&k->log);
    free(k);
}

static void manifest_lines(const nvfp4jit_kernel *k, const char *keytext, nj_buf *m) {
    char name[96];
    nvfp4jit_variant_format(&k->v, name, sizeof name);
    nj_buf_printf(m, "variant = %s\n", name);
    nj_buf_printf(m, "library = %s\n", NVFP4JIT_VERSION_STRING);
    /* key fields, one "key.<name> = value" line each */
    const char *p = keytext;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq) {
            nj_buf_printf(m, "key.%.*s = %.*s\n", (int)(eq - p), p, (int)(len - (size_t)(eq - p) - 1),
                          eq + 1);
        }
        if (!e) break;
        p = e + 1;
    }
    nj_buf_printf(m, "registers = %d\nshared_static = %d\nshared_dynamic = %d\n",
                  k->res.registers, k->res.shared_static_bytes, k->res.shared_dynamic_bytes);
    nj_buf_printf(m, "spill_stores = %d\nspill_loads = %d\nstack_frame = %d\nthreads = %d\n",
                  k->res.spill_store_bytes, k->res.spill_load_bytes, k->res.local_bytes,
                  k->res.threads);
    nj_buf_printf(m, "compile_ms = %.1f\n", k->res.compile_ms);
}

static int variant_eq(const nvfp4jit_variant *a, const nvfp4jit_variant *b) {
    return a->arch == b->arch && a->block_m == b->block_m && a->block_n == b->block_n &&
           a->block_k == b->block_k && a->stages == b->stages && a->swap_ab == b->swap_ab &&
           a->strategy == b->strategy;
}

/* Write artifacts to $NVFP4JIT_DUMP_DIR/<variant>.{cu,ptx,cubin,log} when it is set. */
static void dump_artifacts(nvfp4jit_ctx *ctx, const nvfp4jit_kernel *k) {
    const char *dir = getenv("NVFP4JIT_DUMP_DIR");
    if (!dir || !*dir) return;
    if (nj_mkdirs(dir, 0755) != 0) {
        nj_warn(ctx, "NVFP4JIT_DUMP_DIR=%s: %s", dir, strerror(errno));
        return;
    }
    char name[96];
    nvfp4jit_variant_format(&k->v, name, sizeof name);
    for (char *c = name; *c; c++)
        if (*c == ':') *c = '_';
    const struct { const char *ext; const nj_buf *b; } f[] = {
        {"cu", &k->source}, {"ptx", &k->ptx}, {"cubin", &k->cubin}, {"log", &k->log}};
    for (int i = 0; i < 4; i++) {
        char path[4600];
        snprintf(path, sizeof path, "%s/%s.%s", dir, name, f[i].ext);
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(f[i].b->data ? f[i].b->data : "", 1, f[i].b->len, fp) != f[i].b->len)
            nj_warn(ctx, "cannot write %s: %s", path, strerror(errno));
        if (fp) fclose(fp);
    }
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_compile(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v,
                                              nvfp4jit_kernel **out) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !v || !out, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_compile: %s is NULL",
                 !v ? "variant" : "out");
    *out = NULL;
    NJ_FORWARD_IF_ERROR(nvfp4jit_variant_check(ctx, v));
    for (nvfp4jit_kernel *k = ctx->kernels; k; k = k->next) {
        if (variant_eq(&k->v, v)) {
            k->res.from_cache = 2;
            k->res.compile_ms = 0;
            dump_artifacts(ctx, k);
            *out = k;
            return NVFP4JIT_OK;
        }
    }
    const family *f = fam_get(v->arch);
    double t0 = nj_now_ms();
    nvfp4jit_kernel *k = calloc(1, sizeof *k);
    NJ_RETURN_IF(ctx, !k, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (kernel)");
    k->v = *v;
    nj_buf_init(&k->source);
    nj_buf_init(&k->ptx);
    nj_buf_init(&k->cubin);
    nj_buf_init(&k->log);
    nvfp4jit_status s = nj_render(ctx, v, &k->source);
    if (s != NVFP4JIT_OK) {
        kernel_free(k);
        return s;
    }
    /* The key: everything that changes the cubin. */
    nj_buf keytext, keybuf;
    nj_buf_init(&keytext);
    nj_buf_init(&keybuf);
    int oom = nj_buf_printf(&keytext, "format=%d\nkernel=%s\n", NJ_CACHE_FORMAT, NJ_KERNEL_NAME);
    oom |= nvrtc_key_text(f->arch_name, &keytext);
    oom |= nj_buf_append(&keybuf, keytext.data, keytext.len);
    oom |= nj_buf_append(&keybuf, k->source.data, k->source.len);
    if (oom) {
        nj_buf_free(&keytext);
        nj_buf_free(&keybuf);
        kernel_free(k);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (cache key)");
    }
    nj_hash128_hex(keybuf.data, keybuf.len, k->key);
    nj_buf_free(&keybuf);
    k->res.threads = f->threads(v);
    k->res.shared_dynamic_bytes = (int)f->dyn_smem(v);

    char vname[96];
    nvfp4jit_variant_format(v, vname, sizeof vname);
    nj_artifacts art = {&k->source, &k->ptx, &k->cubin, &k->log};
    if (ctx->disk_cache) cache_entry_path(ctx->cache_dir, k->key, k->path, sizeof k->path);
    int hit = nj_cache_fetch(ctx, k->key, vname, &art, &k->res);
    if (hit) k->res.from_cache = 1;
    if (!hit) {
        nvrtc_result r;
        nvrtc_result_init(&r);
        char prog[128];
        nvfp4jit_variant_format(v, prog, sizeof prog);
        for (char *c = prog; *c; c++)
            if (*c == ':') *c = '_';
        strncat(prog, ".cu", sizeof prog - strlen(prog) - 1);
        s = nvrtc_compile(ctx, k->source.data, prog, f->arch_name, &r);
        if (s != NVFP4JIT_OK) {
            nvrtc_result_free(&r);
            nj_buf_free(&keytext);
            kernel_free(k);
            return s;
        }
        k->ptx = r.ptx;
        k->cubin = r.cubin;
        k->log = r.log;
        int thr = k->res.threads, dyn = k->res.shared_dynamic_bytes;
        k->res = r.res;
        k->res.threads = thr;
        k->res.shared_dynamic_bytes = dyn;
        k->res.compile_ms = nj_now_ms() - t0;
        k->res.from_cache = 0;
        if (ctx->disk_cache) {
            nj_buf m;
            nj_buf_init(&m);
            manifest_lines(k, keytext.data, &m);
            nj_cache_put(ctx, k->key, vname, &art, &m);
            nj_buf_free(&m);
        }
    }
    nj_buf_free(&keytext);
    if (!ctx->disk_cache) k->path[0] = '\0';
    k->next = ctx->kernels;
    ctx->kernels = k;
    dump_artifacts(ctx, k);
    *out = k;
    return NVFP4JIT_OK;
}

int nj_cache_fetch(nvfp4jit_ctx *ctx, const char *key, const char *what, nj_artifacts *a,
                   nvfp4jit_resources *res) {
    if (!ctx->disk_cache) return 0;
    cache_entry e;
    cache_entry_init(&e);
    char why[1024] = "";
    int hit = 0;
    cache_result cr = cache_lookup(ctx->cache_dir, key, &e, why, sizeof why);
    if (cr == CACHE_HIT && e.source.len == a->source->len &&
        memcmp(e.source.data, a->source->data, a->source->len) == 0) {
        nj_buf tmp;
        tmp = *a->ptx; *a->ptx = e.ptx; e.ptx = tmp;
        tmp = *a->cubin; *a->cubin = e.cubin; e.cubin = tmp;
        tmp = *a->log; *a->log = e.log; e.log = tmp;
        nvrtc_parse_resources(a->log->data, res);
        hit = 1;
    } else if (cr == CACHE_CORRUPT) {
        nj_warn(ctx, "cache entry %s (%s) was corrupt (%s); rebuilding it", key, what, why);
    } else if (cr == CACHE_ERROR) {
        nj_warn(ctx, "cache lookup of %s (%s) failed (%s); compiling", key, what, why);
    }
    cache_entry_free(&e);
    return hit;
}

void nj_cache_put(nvfp4jit_ctx *ctx, const char *key, const char *what, const nj_artifacts *a,
                  const nj_buf *manifest) {
    if (!ctx->disk_cache || ctx->cache_read_only) return;
    cache_entry e; /* borrows the buffers for the store */
    cache_entry_init(&e);
    e.source = *a->source;
    e.ptx = *a->ptx;
    e.cubin = *a->cubin;
    e.log = *a->log;
    e.manifest_extra = *manifest;
    char err[1024] = "";
    if (cache_store(ctx->cache_dir, key, &e, err, sizeof err) != 0)
        nj_warn(ctx, "cannot store %s (%s) in the cache (%s); it is still usable", key, what,
                err);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_kernel_artifact(const nvfp4jit_kernel *k,
                                                      nvfp4jit_artifact what,
                                                      const void **data, size_t *size) {
    if (!k || !data) return NVFP4JIT_ERR_INVALID_ARG;
    const nj_buf *b = NULL;
    switch (what) {
    case NVFP4JIT_ARTIFACT_SOURCE: b = &k->source; break;
    case NVFP4JIT_ARTIFACT_PTX: b = &k->ptx; break;
    case NVFP4JIT_ARTIFACT_CUBIN: b = &k->cubin; break;
    case NVFP4JIT_ARTIFACT_LOG: b = &k->log; break;
    case NVFP4JIT_ARTIFACT_CACHE_KEY:
        *data = k->key;
        if (size) *size = strlen(k->key);
        return NVFP4JIT_OK;
    case NVFP4JIT_ARTIFACT_CACHE_PATH:
        *data = k->path;
        if (size) *size = strlen(k->path);
        return NVFP4JIT_OK;
    default: return NVFP4JIT_ERR_INVALID_ARG;
    }
    *data = b->data ? b->data : "";
    if (size) *size = b->len;
    return NVFP4JIT_OK;
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_kernel_resources(const nvfp4jit_kernel *k,
                                                       nvfp4jit_resources *out) {
    if (!k || !out) return NVFP4JIT_ERR_INVALID_ARG;
    *out = k->res;
    return NVFP4JIT_OK;
}

NVFP4JIT_API const nvfp4jit_variant *nvfp4jit_kernel_variant(const nvfp4jit_kernel *k) {
    return k ? &k->v : NULL;
}
