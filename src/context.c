/* context.c - context creation and destruction. The environment is read here, once, into
 * the context (struct nvfp4jit_ctx, common.h); nothing below reads it again, so a change of
 * the environment after nvfp4jit_ctx_create has no effect on that context.
 * NOTE: NVFP4JIT_CUDA_DRIVER is the exception: src/driver.c reads it when it loads the driver,
 * once per process, because the driver table is process-wide (one dlopen'ed libcuda shared
 * by every context; contexts cannot each have their own driver), and the first context that
 * launches decides. */
#include "context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "jit.h"

/* Copy a non-empty environment variable into out. @return 0 (also when unset or empty: out
 * ""), -1 when it does not fit. */
static int env_copy(const char *name, char *out, size_t n) {
    const char *v = getenv(name);
    out[0] = '\0';
    if (!v || !*v) return 0;
    if (strlen(v) >= n) return -1;
    memcpy(out, v, strlen(v) + 1);
    return 0;
}

nvfp4jit_status nj_ctx_create(const nvfp4jit_ctx_options *opts, nvfp4jit_ctx **out) {
    *out = NULL;
    nvfp4jit_ctx *c = calloc(1, sizeof *c);
    if (!c) return nj_fail_create(NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (context)");
    c->msg = calloc(1, NJ_MSG_CAP);
    c->warn = calloc(1, NJ_MSG_CAP);
    if (!c->msg || !c->warn) {
        nj_ctx_destroy(c);
        return nj_fail_create(NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (context)");
    }
    c->disk_cache = !(opts && opts->disable_disk_cache);
    c->verbose = opts ? opts->verbose : 0;
    /* the environment, once (see the top) */
    static const char *const dirs[] = {"NVFP4JIT_DUMP_DIR", "NVFP4JIT_TEMPLATE_DIR"};
    char *const dst[] = {c->dump_dir, c->template_dir};
    for (int i = 0; i < 2; i++) {
        /* 200 bytes for "/<file name>" below it */
        if (env_copy(dirs[i], dst[i], sizeof c->dump_dir - 200)) {
            nj_ctx_destroy(c);
            return nj_fail_create(NVFP4JIT_ERR_INVALID_ARG, "%s is longer than %zu bytes",
                                  dirs[i], sizeof c->dump_dir - 201);
        }
    }
    const char *off = getenv("NVFP4JIT_NO_TUNE");
    c->no_tune = off && *off && strcmp(off, "0") != 0;
    if (opts && opts->cache_dir) {
        if (!*opts->cache_dir || strlen(opts->cache_dir) >= sizeof c->cache_dir - 128) {
            nj_ctx_destroy(c);
            return nj_fail_create(NVFP4JIT_ERR_INVALID_ARG,
                                  "cache_dir is empty or longer than %zu bytes",
                                  sizeof c->cache_dir - 128);
        }
        snprintf(c->cache_dir, sizeof c->cache_dir, "%s", opts->cache_dir);
    } else {
        int r = cache_default_dir(c->cache_dir, sizeof c->cache_dir - 128);
        if (r == -2) { /* silently going without the disk cache would hide a typo */
            nj_ctx_destroy(c);
            return nj_fail_create(NVFP4JIT_ERR_INVALID_ARG,
                                  "the cache directory from NVFP4JIT_CACHE_DIR (or "
                                  "XDG_CACHE_HOME or HOME) is longer than %zu bytes",
                                  sizeof c->cache_dir - 129);
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

nvfp4jit_status nj_ctx_create_like(const nvfp4jit_ctx *parent, nvfp4jit_ctx **out) {
    *out = NULL;
    nvfp4jit_ctx *c = calloc(1, sizeof *c);
    if (c) {
        c->msg = calloc(1, NJ_MSG_CAP);
        c->warn = calloc(1, NJ_MSG_CAP);
    }
    if (!c || !c->msg || !c->warn) {
        nj_ctx_destroy(c);
        return nj_fail_create(NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (context)");
    }
    memcpy(c->cache_dir, parent->cache_dir, sizeof c->cache_dir);
    c->disk_cache = parent->disk_cache;
    c->cache_read_only = parent->cache_read_only;
    memcpy(c->dump_dir, parent->dump_dir, sizeof c->dump_dir);
    memcpy(c->template_dir, parent->template_dir, sizeof c->template_dir);
    c->no_tune = parent->no_tune;
    *out = c;
    return NVFP4JIT_OK;
}

void nj_ctx_destroy(nvfp4jit_ctx *ctx) {
    if (!ctx) return;
    nj_jit_free_all(ctx);
    free(ctx->msg);
    free(ctx->warn);
    free(ctx);
}
