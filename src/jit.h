/* jit.h - the one JIT path. Every kernel the library builds, a grouped-GEMM variant or the
 * GPU reference, goes through nj_jit_get:
 *   in-memory map -> render (template) -> key -> disk cache -> NVRTC -> nvJitLink ->
 *   disk cache store (with one manifest writer) -> module, loaded lazily by nj_jit_load.
 *
 * Module unload policy (one for every module): a kernel's module is loaded once in each CUDA
 * context it is launched in, at its first launch there, and kept (nj_module.loads: one entry a
 * context, so alternating launches in several contexts load nothing more). nvfp4jit_ctx_destroy
 * unloads each of them whose CUDA context is current on the calling thread; those of other
 * CUDA contexts (not current, maybe destroyed already: cuModuleUnload acts on the current
 * context and a handle of a destroyed one is not valid) are left to their context's
 * destruction, which frees them. */
#ifndef NJ_JIT_H
#define NJ_JIT_H

#include "common.h"
#include "driver.h"
#include "template.h"

#define NJ_KERNEL_NAME "nvfp4jit_grouped"

typedef enum nj_kind {
    NJ_KIND_VARIANT = 0,  /* a grouped-GEMM variant (family template) */
    NJ_KIND_REFERENCE = 1 /* the GPU reference kernel of one arch (src/gpuref.c) */
} nj_kind;

/* A kernel's module as loaded in one CUDA context, with its functions. The context is kept
 * with its ID: a handle reused by a newer context does not find the dead context's module. */
typedef struct nj_ctx_module {
    drv_ctx ctx;
    CUmodule mod;
    CUfunction fn, fn_prep;
    int dyn_smem_attr;
} nj_ctx_module;

/* A compiled module: the public nvfp4jit_kernel is this struct. Owned by its context (the
 * list ctx->kernels), freed by nvfp4jit_ctx_destroy. */
struct nvfp4jit_kernel {
    struct nvfp4jit_kernel *next;
    nj_kind kind;
    nvfp4jit_variant v; /* the map's key with kind; the reference: only v.arch is set */
    char what[96];      /* for messages: "sm90a:128x128x64:s4", "reference kernel" */
    char stem[96];      /* file name stem: the NVRTC program and the dump files */
    char key[33];
    char path[NJ_PATH_CAP]; /* cache entry directory, "" without disk cache */
    nj_buf source, ptx, cubin, log;
    nvfp4jit_resources res;
    /* device side, loaded on first launch in each CUDA context (nj_jit_load) */
    char fn_name[64], prep_name[64]; /* entry points; prep_name "" = none */
    nj_ctx_module *loads;            /* one entry a CUDA context it was loaded in */
    int nloads, cap_loads;
    /* the entry of the context of the last nj_jit_load (a copy; nj_jit_load stores
     * dyn_smem_attr back into it before it switches to another context's entry) */
    CUmodule mod;
    CUfunction fn;
    CUfunction fn_prep; /* prep_name's function, else NULL */
    int dyn_smem_attr;  /* fn's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: only ever raised */
    drv_ctx mod_ctx;    /* the CUDA context mod was loaded in */
};
typedef struct nvfp4jit_kernel nj_module;

/* What to build. The strings are copied; params are read during the call only. */
typedef struct nj_jit_req {
    nj_kind kind;
    nvfp4jit_variant v;        /* identity (with kind) in the context's map */
    const char *what;          /* for messages */
    const char *label;         /* the manifest's "variant =" value */
    const char *stem;          /* NVRTC program "<stem>.cu", dump files "<stem>.<ext>" */
    const char *template_name; /* templates/<name> */
    const tmpl_param *params;
    int nparams;
    /* Rendered and compiled instead when ptxas reports that the params' render serialised
     * its wgmma pipeline (C751x: no async wgmma, a large loss) or spilled; NULL: none. The module is
     * then the fallback's (source, PTX, cubin; its log starts with a note), cached under the
     * key of the params' render. */
    const tmpl_param *fallback;
    int nfallback;
    const char *arch_name;     /* "sm_90a" / "sm_100a" */
    const char *kernel_name;   /* the entry point */
    const char *prep_name;     /* a second entry point loaded with it, or NULL */
    const char *key_kind;      /* NULL, or a "kind=<x>" line that keeps these keys apart */
    int threads, dyn_smem;     /* what the launch uses (reported in the resources) */
    int lto;                   /* compile whole-program (src/compile.c): the WHOLE_PROGRAM param */
} nj_jit_req;

/* Test hook: when non-zero, the next compile of a request with a fallback takes its primary
 * render as serialised by ptxas (1), and also fails the fallback's compile (2). */
extern int jit_test_force_fallback;

/* The one path: the module of req from ctx's map, else rendered and compiled (or taken
 * from the disk cache) and added to the map. Times go to (*out)->res (render_ms, nvrtc_ms,
 * link_ms, compile_ms; from_cache). Writes the artifacts to ctx->dump_dir when set. Never
 * clears ctx's message. @return NVFP4JIT_OK with *out owned by ctx, or a template, compile,
 * link or out-of-memory error recorded on ctx (*out NULL). */
nvfp4jit_status nj_jit_get(nvfp4jit_ctx *ctx, const nj_jit_req *req, nj_module **out);

/* A grouped-GEMM variant through nj_jit_get (checked first: NVFP4JIT_ERR_INVALID_VARIANT /
 * UNSUPPORTED_ARCH). What nvfp4jit_compile does, without clearing the message. */
nvfp4jit_status nj_jit_variant(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_module **out);

/* The template parameters of a variant (ARCH, BLOCK_M, ... and the family's own).
 * @return their count (at most cap). */
int nj_variant_params(const nvfp4jit_variant *v, tmpl_param *p, int cap);
/* Render a variant's source into out (no compile). */
nvfp4jit_status nj_render(nvfp4jit_ctx *ctx, const nvfp4jit_variant *v, nj_buf *out);

/* Load m's module in the current CUDA context (once per context; see the unload policy
 * above): its entry point, its prep entry point when it has one, and the dynamic shared
 * memory attribute when the launch needs more than 48 KiB; then make that context's entry
 * m's current one (m->mod, fn, fn_prep, dyn_smem_attr, mod_ctx). */
nvfp4jit_status nj_jit_load(nvfp4jit_ctx *ctx, const drv_api *api, nj_module *m);
/* nj_jit_load with the current context already read (drv_ctx_get) by the caller: the steady
 * state of a plan run reads it once. */
nvfp4jit_status nj_jit_load_in(nvfp4jit_ctx *ctx, const drv_api *api, nj_module *m, drv_ctx cur);

/* Free every module of ctx (nvfp4jit_ctx_destroy), unloading per the policy above. */
void nj_jit_free_all(nvfp4jit_ctx *ctx);

#endif
