/* nvfp4jit.c - the public face (as Lua's lapi.c is): the entry points of the context, the
 * variants, the problem checks, the compile path, plans and the GPU reference. Each checks its
 * arguments, clears the context's message (where it can fail on a context) and calls the
 * internals (context.c, variant.c, jit.c, dispatch.c, gpuref.c), which never call an
 * nvfp4jit_* function and never clear the message. (Not moved here yet: the accessors of
 * dispatch.c, the MoE entry points of moe.c and the tuner's of tune.c; they too clear the
 * message only on entry and call internals only.) */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "context.h"
#include "dispatch.h"
#include "gpuref.h"
#include "jit.h"
#include "variant.h"

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

/* ---- context (src/context.c) ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_ctx_create(const nvfp4jit_ctx_options *opts,
                                                 nvfp4jit_ctx **out) {
    if (!out)
        return nj_fail_create(NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_ctx_create: out is NULL");
    return nj_ctx_create(opts, out);
}

NVFP4JIT_API void nvfp4jit_ctx_destroy(nvfp4jit_ctx *ctx) { nj_ctx_destroy(ctx); }

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

/* ---- variants and problem sets (src/variant.c) ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_variant *v) {
    nj_clear(ctx);
    return nj_variant_check(ctx, v); /* ctx NULL: no message anywhere */
}

NVFP4JIT_API int nvfp4jit_variant_format(const nvfp4jit_variant *v, char *buf, size_t n) {
    return nj_variant_format(v, buf, n);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_parse(const char *s, nvfp4jit_variant *out) {
    return nj_variant_parse(s, out);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_variant_space(nvfp4jit_arch arch, nvfp4jit_variant *out,
                                                    size_t cap, size_t *count) {
    return nj_variant_space(arch, out, cap, count);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_problem_check(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_group *groups,
                                                    size_t num_groups) {
    nj_clear(ctx);
    return nj_check_groups(ctx, groups, num_groups, 1);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_problem_check_shapes(nvfp4jit_ctx *ctx,
                                                           const nvfp4jit_group *groups,
                                                           size_t num_groups) {
    nj_clear(ctx);
    return nj_check_groups(ctx, groups, num_groups, 0);
}

/* ---- compiling (src/jit.c) ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_compile(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v,
                                              nvfp4jit_kernel **out) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !v || !out, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_compile: %s is NULL",
                 !v ? "variant" : "out");
    return nj_jit_variant(ctx, v, out);
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

/* ---- plans (src/dispatch.c) ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_create(nvfp4jit_ctx *ctx, nvfp4jit_arch arch,
                                                  const nvfp4jit_group *groups,
                                                  size_t num_groups,
                                                  const nvfp4jit_variant *force,
                                                  nvfp4jit_plan **out) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    NJ_RETURN_IF(ctx, !out, NVFP4JIT_ERR_INVALID_ARG, "nvfp4jit_plan_create: out is NULL");
    return nj_plan_create(ctx, arch, groups, num_groups, force, out);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_plan_run(nvfp4jit_plan *p, const nvfp4jit_group *groups,
                                               size_t num_groups, void *stream) {
    if (!p) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(nj_plan_ctx(p));
    return nj_plan_run(p, groups, num_groups, stream);
}

NVFP4JIT_API void nvfp4jit_plan_destroy(nvfp4jit_plan *p) { nj_plan_destroy(p); }

/* ---- the GPU reference (src/gpuref.c) ---- */
NVFP4JIT_API nvfp4jit_status nvfp4jit_reference_run_ex(nvfp4jit_ctx *ctx,
                                                       const nvfp4jit_group *groups,
                                                       size_t num_groups, const uint64_t *sum_abs,
                                                       void *stream) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    return gpuref_run(ctx, groups, num_groups, sum_abs, stream);
}

NVFP4JIT_API nvfp4jit_status nvfp4jit_reference_run(nvfp4jit_ctx *ctx,
                                                    const nvfp4jit_group *groups,
                                                    size_t num_groups, void *stream) {
    if (!ctx) return NVFP4JIT_ERR_INVALID_ARG;
    nj_clear(ctx);
    return gpuref_run(ctx, groups, num_groups, NULL, stream);
}
