/* jit.c - the one JIT path (see jit.h): render -> key -> disk cache -> NVRTC/nvJitLink ->
 * module, for the grouped-GEMM variants and the GPU reference alike. */
#include "jit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "compile.h"
#include "family.h"
#include "variant.h"

/* ---- rendering a variant ---- */
int nj_variant_params(const nvfp4jit_variant *v, tmpl_param *p, int cap) {
    const family *f = fam_get(v->arch);
    int n = 0;
    if (!f || cap < 10) return 0;
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
    if (f->params) n += f->params(v, p + n, cap - n);
    return n;
}

nvfp4jit_status nj_render(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_buf *out) {
    const family *f = fam_get(v->arch);
    NJ_RETURN_IF(ctx, !f, NVFP4JIT_ERR_UNSUPPORTED_ARCH, "arch %d is not supported",
                 (int)v->arch);
    tmpl_param p[48];
    int n = nj_variant_params(v, p, (int)(sizeof p / sizeof p[0]));
    return tmpl_render(ctx, f->template_name, p, n, out);
}

/* ---- modules ---- */
static void module_free(nj_module *m) {
    if (!m) return;
    nj_buf_free(&m->source);
    nj_buf_free(&m->ptx);
    nj_buf_free(&m->cubin);
    nj_buf_free(&m->log);
    free(m->loads);
    free(m);
}

void nj_jit_free_all(nvfp4jit_ctx *ctx) {
    const drv_api *api = NULL;
    drv_ctx cur = {NULL, 0};
    for (nj_module *m = ctx->kernels; m; m = m->next) {
        if (!m->nloads) continue;
        /* a module exists only if the driver was loaded: drv_load returns the same table */
        if (!api && (api = drv_load())) cur = drv_ctx_current(api);
        /* NOTE: cuModuleUnload acts on the current context; the modules of other (maybe
         * destroyed) contexts are left to those contexts' destruction (jit.h). */
        for (int i = 0; i < m->nloads; i++)
            if (api && cur.h && drv_ctx_same(cur, m->loads[i].ctx))
                api->cuModuleUnload(m->loads[i].mod);
    }
    nj_module *m = ctx->kernels;
    while (m) {
        nj_module *n = m->next;
        module_free(m);
        m = n;
    }
    ctx->kernels = NULL;
}

nvfp4jit_status nj_jit_load(nvfp4jit_ctx *ctx, const drv_api *api, nj_module *k) {
    drv_ctx cur;
    CUresult cr = drv_ctx_get(api, &cur);
    if (cr != CUDA_SUCCESS) return drv_fail(ctx, cr, "reading the current CUDA context");
    return nj_jit_load_in(ctx, api, k, cur);
}

nvfp4jit_status nj_jit_load_in(nvfp4jit_ctx *ctx, const drv_api *api, nj_module *k, drv_ctx cur) {
    if (k->mod && drv_ctx_same(k->mod_ctx, cur)) return NVFP4JIT_OK;
    nj_ctx_module *e = NULL, *dead = NULL;
    for (int i = 0; i < k->nloads; i++) {
        /* the current entry's attribute may have been raised through k (src/moe.c) */
        if (k->mod && drv_ctx_same(k->loads[i].ctx, k->mod_ctx))
            k->loads[i].dyn_smem_attr = k->dyn_smem_attr;
        if (drv_ctx_same(k->loads[i].ctx, cur)) e = &k->loads[i];
        /* a destroyed context's handle now names cur: its module died with it */
        else if (k->loads[i].ctx.h == cur.h) dead = &k->loads[i];
    }
    if (e) { /* loaded in this context before: switch to it */
        k->mod = e->mod;
        k->fn = e->fn;
        k->fn_prep = e->fn_prep;
        k->dyn_smem_attr = e->dyn_smem_attr;
        k->mod_ctx = cur;
        return NVFP4JIT_OK;
    }
    if (!dead && k->nloads == k->cap_loads) {
        int cap = k->cap_loads ? 2 * k->cap_loads : 2;
        nj_ctx_module *n = realloc(k->loads, (size_t)cap * sizeof *n);
        NJ_RETURN_IF(ctx, !n, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (module list of %s)",
                     k->what);
        k->loads = n;
        k->cap_loads = cap;
    }
    char what[160];
    snprintf(what, sizeof what, "cuModuleLoadData (%s)", k->what);
    CUmodule m;
    CUresult r = api->cuModuleLoadData(&m, k->cubin.data);
    if (r != CUDA_SUCCESS) return drv_fail(ctx, r, what);
    CUfunction fn, fn_prep = NULL;
    r = api->cuModuleGetFunction(&fn, m, k->fn_name);
    if (r == CUDA_SUCCESS && k->res.shared_dynamic_bytes > 48 * 1024)
        r = api->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    k->res.shared_dynamic_bytes);
    /* only modules that have a prep kernel ask for it: asking a module without one would be
     * an API error (CUDA_ERROR_NOT_FOUND) that compute-sanitizer reports */
    if (r == CUDA_SUCCESS && k->prep_name[0])
        r = api->cuModuleGetFunction(&fn_prep, m, k->prep_name);
    if (r != CUDA_SUCCESS) {
        api->cuModuleUnload(m);
        snprintf(what, sizeof what, "preparing the kernel function (%s)", k->what);
        return drv_fail(ctx, r, what);
    }
    /* a dead context's entry is taken over (its module is not unloaded: it went with it) */
    e = dead ? dead : &k->loads[k->nloads++];
    e->ctx = cur;
    e->mod = m;
    e->fn = fn;
    e->fn_prep = fn_prep;
    e->dyn_smem_attr =
        k->res.shared_dynamic_bytes > 48 * 1024 ? k->res.shared_dynamic_bytes : 48 * 1024;
    k->mod = m;
    k->fn = fn;
    k->fn_prep = fn_prep;
    k->dyn_smem_attr = e->dyn_smem_attr;
    k->mod_ctx = cur;
    return NVFP4JIT_OK;
}

/* ---- the disk cache ---- */
/* Look key up in the disk cache (none: 0). On a good entry with the same source as m or as
 * alt (the fallback's render, or NULL), move its PTX, cubin and log (and alt's source) into
 * m, parse the resources from the log and return 1. A corrupt entry
 * (moved aside by the cache) or a failed lookup is a warning, and 0. */
static int cache_fetch(nvfp4jit_ctx *ctx, nj_module *m, const nj_buf *alt) {
    if (!ctx->disk_cache) return 0;
    cache_entry e;
    cache_entry_init(&e);
    char why[1024] = "";
    int hit = 0;
    cache_result cr = cache_lookup(ctx->cache_dir, m->key, &e, why, sizeof why);
    int same = cr == CACHE_HIT && e.source.len == m->source.len &&
               memcmp(e.source.data, m->source.data, m->source.len) == 0;
    int same_alt = cr == CACHE_HIT && !same && alt && alt->data && e.source.len == alt->len &&
                   memcmp(e.source.data, alt->data, alt->len) == 0;
    if (same || same_alt) {
        nj_buf tmp;
        if (same_alt) { /* the entry is the fallback's: the module's source is what was compiled */
            tmp = m->source; m->source = e.source; e.source = tmp;
        }
        tmp = m->ptx; m->ptx = e.ptx; e.ptx = tmp;
        tmp = m->cubin; m->cubin = e.cubin; e.cubin = tmp;
        tmp = m->log; m->log = e.log; e.log = tmp;
        nvrtc_parse_resources(m->log.data, m->fn_name, &m->res);
        hit = 1;
    } else if (cr == CACHE_CORRUPT) {
        nj_warn(ctx, "cache entry %s (%s) was corrupt (%s); rebuilding it", m->key, m->what,
                why);
    } else if (cr == CACHE_ERROR) {
        nj_warn(ctx, "cache lookup of %s (%s) failed (%s); compiling", m->key, m->what, why);
    }
    cache_entry_free(&e);
    return hit;
}

/* The manifest lines of an entry: what it is, the key fields as "key.<name> = value", the
 * resources and the compile time and its parts. The one writer for every module. */
static int manifest_lines(const nj_module *m, const char *label, const char *keytext,
                          nj_buf *out) {
    int rc = nj_buf_printf(out, "variant = %s\nlibrary = %s\n", label, NVFP4JIT_VERSION_STRING);
    for (const char *p = keytext; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq)
            rc |= nj_buf_printf(out, "key.%.*s = %.*s\n", (int)(eq - p), p,
                                (int)(len - (size_t)(eq - p) - 1), eq + 1);
        if (!e) break;
        p = e + 1;
    }
    const nvfp4jit_resources *r = &m->res;
    rc |= nj_buf_printf(out, "registers = %d\nshared_static = %d\nshared_dynamic = %d\n",
                        r->registers, r->shared_static_bytes, r->shared_dynamic_bytes);
    rc |= nj_buf_printf(out, "spill_stores = %d\nspill_loads = %d\nstack_frame = %d\n",
                        r->spill_store_bytes, r->spill_load_bytes, r->local_bytes);
    rc |= nj_buf_printf(out, "threads = %d\ncompile_ms = %.1f\n", r->threads, r->compile_ms);
    rc |= nj_buf_printf(out, "render_ms = %.1f\nnvrtc_ms = %.1f\nlink_ms = %.1f\n",
                        r->render_ms, r->nvrtc_ms, r->link_ms);
    return rc;
}

/* Store m under its key in the disk cache, if there is a writable one; a failure is a
 * warning (the module stays usable). @return an nvfp4jit_cache_state: NONE (no disk cache),
 * READ_ONLY, STORED or STORE_FAILED. */
static int cache_put(nvfp4jit_ctx *ctx, const nj_module *m, const char *label,
                     const char *keytext) {
    if (!ctx->disk_cache) return NVFP4JIT_CACHE_NONE;
    if (ctx->cache_read_only) return NVFP4JIT_CACHE_READ_ONLY;
    cache_entry e; /* borrows the buffers for the store */
    cache_entry_init(&e);
    if (manifest_lines(m, label, keytext, &e.manifest_extra)) {
        nj_buf_free(&e.manifest_extra);
        nj_warn(ctx, "cannot store %s (%s) in the cache (out of memory); it is still usable",
                m->key, m->what);
        return NVFP4JIT_CACHE_STORE_FAILED;
    }
    e.source = m->source;
    e.ptx = m->ptx;
    e.cubin = m->cubin;
    e.log = m->log;
    char err[1024] = "";
    int st = NVFP4JIT_CACHE_STORED;
    if (cache_store(ctx->cache_dir, m->key, &e, err, sizeof err) != 0) {
        nj_warn(ctx, "cannot store %s (%s) in the cache (%s); it is still usable", m->key,
                m->what, err);
        st = NVFP4JIT_CACHE_STORE_FAILED;
    }
    nj_buf_free(&e.manifest_extra);
    return st;
}

/* Write the artifacts to <ctx->dump_dir>/<stem>.{cu,ptx,cubin,log} when it is set. */
static void dump_artifacts(nvfp4jit_ctx *ctx, const nj_module *m) {
    const char *dir = ctx->dump_dir;
    if (!*dir) return;
    if (nj_mkdirs(dir, 0755) != 0) {
        nj_warn(ctx, "NVFP4JIT_DUMP_DIR=%s: %s", dir, strerror(errno));
        return;
    }
    const struct { const char *ext; const nj_buf *b; } f[] = {
        {"cu", &m->source}, {"ptx", &m->ptx}, {"cubin", &m->cubin}, {"log", &m->log}};
    for (int i = 0; i < 4; i++) {
        char path[NJ_PATH_CAP + 200];
        snprintf(path, sizeof path, "%s/%s.%s", dir, m->stem, f[i].ext);
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(f[i].b->data ? f[i].b->data : "", 1, f[i].b->len, fp) != f[i].b->len)
            nj_warn(ctx, "cannot write %s: %s", path, strerror(errno));
        if (fp) fclose(fp);
    }
}

int jit_test_force_fallback;

/* Why a compile is worse than its fallback would be, into why (empty: it is not): ptxas'
 * notes C7510..C7519 ("Potential Performance Loss: wgmma.mma_async instructions are
 * serialized due to ...": the kernel waits for each wgmma before the next one), or spills. */
static void degraded(const nvrtc_result *r, char *why, size_t n) {
    why[0] = '\0';
    const char *log = r->log.data;
    if (log && strstr(log, "wgmma.mma_async instructions are serialized")) {
        char code[6] = "C751?";
        const char *c = strstr(log, "(C751");
        if (c && c[5] >= '0' && c[5] <= '9') memcpy(code, c + 1, 5);
        snprintf(why, n, "ptxas serialised its wgmma pipeline (%s)", code);
    } else if (r->res.spill_store_bytes > 0 || r->res.spill_load_bytes > 0) {
        snprintf(why, n, "it spilled (%d bytes stored, %d loaded)", r->res.spill_store_bytes,
                 r->res.spill_load_bytes);
    }
}

/* The primary render (*source, compiled into *r) is degraded (why): compile the fallback
 * render alt. If it compiles, its results replace *r and alt becomes *source, with a note at
 * the top of the log saying why; if it fails to compile, the primary stays, with a note (and
 * the failure only on the context's warnings). */
static nvfp4jit_status compile_fallback(nvfp4jit_ctx *ctx, const char *prog, const char *arch,
                                        int lto, const char *why, nj_buf *alt, nj_buf *source,
                                        nvrtc_result *r) {
    nvrtc_result f;
    nvrtc_result_init(&f);
    /* a failure here is not the caller's: its message must not replace the context's */
    char *saved = ctx->msg ? malloc(NJ_MSG_CAP) : NULL;
    if (saved) memcpy(saved, ctx->msg, NJ_MSG_CAP);
    nvfp4jit_status s = nvrtc_compile(ctx, alt->data, prog, arch, lto, &f);
    if (s != NVFP4JIT_OK && saved) memcpy(ctx->msg, saved, NJ_MSG_CAP);
    free(saved);
    nj_buf note;
    nj_buf_init(&note);
    int oom;
    if (s != NVFP4JIT_OK) {
        nj_warn(ctx, "%s: the fallback render (the first: %s) did not compile; keeping the first",
                prog, why);
        nvrtc_result_free(&f);
        oom = nj_buf_printf(&note, "== nvfp4jit ==\nthis render: %s; its fallback render failed "
                            "to compile\n", why);
        oom |= nj_buf_append(&note, r->log.data, r->log.len);
        if (oom) {
            nj_buf_free(&note);
            return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (log)");
        }
        nj_buf_free(&r->log);
        r->log = note;
        return NVFP4JIT_OK;
    }
    oom = nj_buf_printf(&note, "== nvfp4jit ==\nthe fallback render (RING_UNROLL=0); the first "
                        "render: %s\n", why);
    oom |= nj_buf_append(&note, f.log.data, f.log.len);
    if (oom) {
        nj_buf_free(&note);
        nvrtc_result_free(&f);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (log)");
    }
    nj_buf_free(&f.log);
    f.log = note;
    f.res.nvrtc_ms += r->res.nvrtc_ms;
    f.res.link_ms += r->res.link_ms;
    nvrtc_result_free(r);
    *r = f;
    nj_buf tmp = *source;
    *source = *alt;
    *alt = tmp;
    return NVFP4JIT_OK;
}

/* ---- the path ---- */
nvfp4jit_status nj_jit_get(nvfp4jit_ctx *ctx, const nj_jit_req *req, nj_module **out) {
    *out = NULL;
    for (nj_module *k = ctx->kernels; k; k = k->next) { /* the in-memory map */
        if (k->kind == req->kind && nj_variant_eq(&k->v, &req->v)) {
            k->res.from_cache = 2;
            k->res.compile_ms = k->res.render_ms = k->res.nvrtc_ms = k->res.link_ms = 0;
            dump_artifacts(ctx, k);
            *out = k;
            return NVFP4JIT_OK;
        }
    }
    double t0 = nj_now_ms();
    nj_module *k = calloc(1, sizeof *k);
    NJ_RETURN_IF(ctx, !k, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (kernel)");
    k->kind = req->kind;
    k->v = req->v;
    snprintf(k->what, sizeof k->what, "%s", req->what);
    snprintf(k->stem, sizeof k->stem, "%s", req->stem);
    snprintf(k->fn_name, sizeof k->fn_name, "%s", req->kernel_name);
    snprintf(k->prep_name, sizeof k->prep_name, "%s", req->prep_name ? req->prep_name : "");
    nj_buf_init(&k->source);
    nj_buf_init(&k->ptx);
    nj_buf_init(&k->cubin);
    nj_buf_init(&k->log);
    nvfp4jit_status s =
        tmpl_render(ctx, req->template_name, req->params, req->nparams, &k->source);
    if (s != NVFP4JIT_OK) {
        module_free(k);
        return s;
    }
    nj_buf alt; /* the fallback's render */
    nj_buf_init(&alt);
    if (req->fallback) {
        s = tmpl_render(ctx, req->template_name, req->fallback, req->nfallback, &alt);
        if (s != NVFP4JIT_OK) {
            module_free(k);
            return s;
        }
    }
    double render_ms = nj_now_ms() - t0;
    /* The key: everything that changes the cubin. */
    nj_buf keytext, keybuf;
    nj_buf_init(&keytext);
    nj_buf_init(&keybuf);
    int oom = req->key_kind ? nj_buf_printf(&keytext, "kind=%s\n", req->key_kind) : 0;
    oom |= nj_buf_printf(&keytext, "format=%d\nkernel=%s\n", NJ_CACHE_FORMAT, req->kernel_name);
    oom |= nvrtc_key_text(req->arch_name, req->lto, &keytext);
    oom |= nj_buf_append(&keybuf, keytext.data, keytext.len);
    oom |= nj_buf_append(&keybuf, k->source.data, k->source.len);
    if (oom) {
        nj_buf_free(&keytext);
        nj_buf_free(&keybuf);
        nj_buf_free(&alt);
        module_free(k);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (cache key)");
    }
    nj_hash128_hex(keybuf.data, keybuf.len, k->key);
    nj_buf_free(&keybuf);

    if (ctx->disk_cache) cache_entry_path(ctx->cache_dir, k->key, k->path, sizeof k->path);
    if (cache_fetch(ctx, k, req->fallback ? &alt : NULL)) {
        k->res.from_cache = 1;
    } else {
        nvrtc_result r;
        nvrtc_result_init(&r);
        char prog[128];
        snprintf(prog, sizeof prog, "%s.cu", req->stem);
        s = nvrtc_compile(ctx, k->source.data, prog, req->arch_name, req->lto, &r);
        /* the GEMM's own numbers (the spill check below, the resources): not the prep's */
        if (s == NVFP4JIT_OK) nvrtc_parse_resources(r.log.data, req->kernel_name, &r.res);
        if (s != NVFP4JIT_OK) {
            nvrtc_result_free(&r);
            nj_buf_free(&keytext);
            nj_buf_free(&alt);
            module_free(k);
            return s;
        }
        int forced = req->fallback ? jit_test_force_fallback : 0;
        if (forced) {
            jit_test_force_fallback = 0;
            if (forced == 2) nvrtc_test_force_failure = 1;
        }
        char why[160] = "";
        if (req->fallback) degraded(&r, why, sizeof why);
        if (forced && !why[0]) snprintf(why, sizeof why, "forced (test hook)");
        if (why[0]) {
            s = compile_fallback(ctx, prog, req->arch_name, req->lto, why, &alt, &k->source, &r);
            if (s != NVFP4JIT_OK) {
                nvrtc_result_free(&r);
                nj_buf_free(&keytext);
                nj_buf_free(&alt);
                module_free(k);
                return s;
            }
        }
        k->ptx = r.ptx;
        k->cubin = r.cubin;
        k->log = r.log;
        k->res = r.res; /* with nvrtc_ms, link_ms */
        nvrtc_parse_resources(k->log.data, k->fn_name, &k->res); /* (a fallback's log) */
        k->res.compile_ms = nj_now_ms() - t0;
        k->res.from_cache = 0;
    }
    /* setmaxnreg (act16's wide form): the producer warpgroup's .dec must free what the
     * consumers' .inc take, or .inc waits forever (USETMAXREG.TRY_ALLOC loops). The pool is the
     * registers at entry (ptxas' count) times the threads; it must hold 128 producer threads at
     * PRODUCER_REGS and the others at CONSUMER_REGS (a cached cubin is checked too: the
     * cache directory is untrusted input). */
    long long preg = 0, creg = 0;
    for (int i = 0; i < req->nparams; i++) {
        if (!strcmp(req->params[i].name, "PRODUCER_REGS")) preg = req->params[i].ival;
        if (!strcmp(req->params[i].name, "CONSUMER_REGS")) creg = req->params[i].ival;
    }
    if (preg > 0 && creg > 0 &&
        (long long)k->res.registers * req->threads < 128 * preg + (req->threads - 128LL) * creg) {
        nvfp4jit_status bad = nj_fail(ctx, NVFP4JIT_ERR_COMPILE,
                                      "%s: %d registers per thread at entry do not cover the "
                                      "setmaxnreg split (128 threads at %lld, %d at %lld)",
                                      req->what, k->res.registers, preg, req->threads - 128, creg);
        nj_buf_free(&keytext);
        nj_buf_free(&alt);
        module_free(k);
        return bad;
    }
    k->res.threads = req->threads;
    k->res.shared_dynamic_bytes = req->dyn_smem;
    k->res.render_ms = render_ms;
    k->res.cache_state = k->res.from_cache ? NVFP4JIT_CACHE_STORED
                                           : cache_put(ctx, k, req->label, keytext.data);
    nj_buf_free(&keytext);
    nj_buf_free(&alt);
    if (!ctx->disk_cache) k->path[0] = '\0';
    k->next = ctx->kernels;
    ctx->kernels = k;
    dump_artifacts(ctx, k);
    *out = k;
    return NVFP4JIT_OK;
}

nvfp4jit_status nj_jit_variant(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_module **out) {
    *out = NULL;
    NJ_FORWARD_IF_ERROR(nj_variant_check(ctx, v));
    const family *f = fam_get(v->arch);
    char name[96], stem[96];
    nj_variant_format(v, name, sizeof name);
    snprintf(stem, sizeof stem, "%s", name);
    for (char *c = stem; *c; c++)
        if (*c == ':') *c = '_';
    tmpl_param p[48];
    nj_jit_req req = {
        .kind = NJ_KIND_VARIANT,
        .v = *v,
        .what = name,
        .label = name,
        .stem = stem,
        .template_name = f->template_name,
        .params = p,
        .nparams = nj_variant_params(v, p, (int)(sizeof p / sizeof p[0])),
        .arch_name = f->arch_name,
        .kernel_name = NJ_KERNEL_NAME,
        /* only the sm_90a act16 strategies have a prep kernel */
        .prep_name = v->arch == NVFP4JIT_ARCH_SM90A && v->strategy != NVFP4JIT_STRATEGY_DUAL
                         ? NJ_KERNEL_NAME "_prep"
                         : NULL,
        .key_kind = NULL, /* (variant keys predate the kind line: they stay as they were) */
        .threads = f->threads(v),
        .dyn_smem = (int)f->dyn_smem(v),
    };
    /* compiled whole-program where the family asks (src/compile.c: setmaxnreg) */
    for (int i = 0; i < req.nparams; i++)
        if (strcmp(p[i].name, "WHOLE_PROGRAM") == 0) req.lto = p[i].ival != 0;
    /* act16's ring unrolled with constant slots (RING_UNROLL=1): where ptxas serialises its
     * wgmma pipeline, the ring with the slot in a register instead (templates/sm90a_act16.cuh) */
    tmpl_param fb[48];
    for (int i = 0; i < req.nparams; i++) {
        if (strcmp(p[i].name, "RING_UNROLL") != 0 || p[i].ival != 1) continue;
        memcpy(fb, p, sizeof fb[0] * (size_t)req.nparams);
        fb[i].ival = 0;
        req.fallback = fb;
        req.nfallback = req.nparams;
        break;
    }
    return nj_jit_get(ctx, &req, out);
}
