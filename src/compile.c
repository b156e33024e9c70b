/* compile.c - NVRTC + nvJitLink.
 *
 * NVRTC renders PTX for compute_XXa; nvJitLink assembles it into an sm_XXa cubin and gives
 * ptxas' report (-verbose), which is where the resource numbers come from. No include paths
 * are passed: templates include no headers, so keys hold no absolute paths.
 *
 * Whole-program (lto): NVRTC compiles to LTO-IR (-dlto), nvJitLink links it (-lto) into the
 * cubin, and a second link of the same IR (-lto -ptx, no ptxas) gives the PTX that `inspect`
 * and the lint read. For kernels that use setmaxnreg: on PTX input nvJitLink runs ptxas with
 * --compile-only, which ignores setmaxnreg (C7504, "to maintain compatibility across
 * compilation units"); from LTO-IR it compiles the whole program and keeps it
 * (bench/probe/setmaxnreg-paths.sh, bench/RESULTS.md 2026-12-07). It costs about half a second
 * more per compile (the PTX link repeats the IR optimisation), so the other kernels keep the
 * PTX path (and their cache keys). */
#include "compile.h"

#include <nvJitLink.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nvrtc_test_force_failure;

void nvrtc_result_init(nvrtc_result *r) {
    memset(r, 0, sizeof *r);
    nj_buf_init(&r->ptx);
    nj_buf_init(&r->cubin);
    nj_buf_init(&r->log);
}

void nvrtc_result_free(nvrtc_result *r) {
    nj_buf_free(&r->ptx);
    nj_buf_free(&r->cubin);
    nj_buf_free(&r->log);
}

/* Options, fixed per arch. NOTE: "-default-device" makes unannotated functions __device__
 * (the templates rely on it). NOTE: "-minimal" leaves out the parts of NVRTC's implicit
 * headers that the templates do not use (textures, surfaces, the cudadevrt runtime
 * functions, ...): less to parse (the front end about halves: 3-11 ms of a cold compile on
 * the build box), and the same PTX and cubin byte for byte for every variant measured
 * (bench/RESULTS.md, 2026-12-03 compile split). */
static int nvrtc_opts(const char *arch, int lto, const char **o, char *archopt, size_t n) {
    snprintf(archopt, n, "--gpu-architecture=compute_%s", arch + 3); /* sm_90a -> compute_90a */
    int k = 0;
    o[k++] = archopt;
    if (lto) o[k++] = "-dlto";
    o[k++] = "-default-device";
    o[k++] = "--std=c++17";
    o[k++] = "-lineinfo";
    o[k++] = "--extra-device-vectorization";
    o[k++] = "-minimal";
    return k;
}

/* the links: LINK_PTX (PTX in, cubin out), LINK_LTO (LTO-IR in, cubin out), LINK_LTO_PTX
 * (LTO-IR in, PTX out: no ptxas, so no report) */
enum { LINK_PTX, LINK_LTO, LINK_LTO_PTX };
static int link_opts(const char *arch, int mode, const char **o, char *archopt, size_t n) {
    snprintf(archopt, n, "-arch=%s", arch);
    int k = 0;
    o[k++] = archopt;
    if (mode != LINK_PTX) o[k++] = "-lto";
    o[k++] = mode == LINK_LTO_PTX ? "-ptx" : "-verbose";
    o[k++] = "-O3";
    return k;
}

int nvrtc_key_text(const char *arch, int lto, nj_buf *out) {
    const char *o[16];
    char a1[64], a2[64];
    int n1 = nvrtc_opts(arch, lto, o, a1, sizeof a1);
    int rc = nj_buf_printf(out, "arch=%s\nnvrtc_opts=", arch);
    for (int i = 0; i < n1; i++) rc |= nj_buf_printf(out, "%s ", o[i]);
    int n2 = link_opts(arch, lto ? LINK_LTO : LINK_PTX, o, a2, sizeof a2);
    rc |= nj_buf_puts(out, "\nlink_opts=");
    for (int i = 0; i < n2; i++) rc |= nj_buf_printf(out, "%s ", o[i]);
    if (lto) { /* (the PTX path's text stays as it was: its cache keys do not change) */
        n2 = link_opts(arch, LINK_LTO_PTX, o, a2, sizeof a2);
        rc |= nj_buf_puts(out, "\nptx_link_opts=");
        for (int i = 0; i < n2; i++) rc |= nj_buf_printf(out, "%s ", o[i]);
    }
    int ma = 0, mi = 0;
    unsigned la = 0, li = 0;
    nvrtcVersion(&ma, &mi);
    nvJitLinkVersion(&la, &li);
    rc |= nj_buf_printf(out, "\nnvrtc=%d.%d\nnvjitlink=%u.%u\n", ma, mi, la, li);
    return rc;
}

/* The decimal number at q (digits only), saturated at INT_MAX: the log may come from the
 * cache directory, and atoi's overflow is undefined. */
static int log_num(const char *q) {
    long long v = 0;
    for (; *q >= '0' && *q <= '9'; q++)
        if ((v = v * 10 + (*q - '0')) > 0x7fffffff) return 0x7fffffff;
    return (int)v;
}

static int num_before(const char *log, const char *suffix, int *val) {
    /* find the first "<number> <suffix>" and return the number (the suffix can also stand
     * in other text, e.g. ptxas' C7513 "... defining input registers of a wgmma") */
    for (const char *p = strstr(log, suffix); p; p = strstr(p + 1, suffix)) {
        const char *q = p;
        while (q > log && q[-1] == ' ') q--;
        const char *e = q;
        while (q > log && q[-1] >= '0' && q[-1] <= '9') q--;
        if (q == e) continue;
        *val = log_num(q);
        return 1;
    }
    return 0;
}

/* The part of log that speaks of entry function fn: ptxas' "Compiling entry function 'fn'"
 * up to the next such line (or the log's end); else nvJitLink's "Function properties for
 * 'fn':" and the line after it; else NULL. A copy the caller frees. */
static char *log_section(const char *log, const char *fn) {
    char mark[160];
    const char *b = NULL, *e = NULL;
    snprintf(mark, sizeof mark, "Compiling entry function '%s'", fn);
    if ((b = strstr(log, mark)) != NULL) {
        e = strstr(b + strlen(mark), "Compiling entry function '");
        if (!e) e = b + strlen(b);
    } else {
        snprintf(mark, sizeof mark, "Function properties for '%s':", fn);
        if ((b = strstr(log, mark)) == NULL) return NULL;
        e = strchr(b, '\n');
        if (e) e = strchr(e + 1, '\n');
        if (!e) e = b + strlen(b);
    }
    char *s = malloc((size_t)(e - b) + 1);
    if (s) {
        memcpy(s, b, (size_t)(e - b));
        s[e - b] = '\0';
    }
    return s;
}

void nvrtc_parse_resources(const char *log, const char *fn, nvfp4jit_resources *res) {
    if (!log) return;
    char *sec = fn && strlen(fn) < 100 ? log_section(log, fn) : NULL;
    if (sec) { /* only what the section says (another function's numbers must not stay) */
        log = sec;
        res->registers = res->local_bytes = res->spill_store_bytes = res->spill_load_bytes = 0;
        res->shared_static_bytes = 0;
    }
    /* ptxas says "Used N registers", nvJitLink's own summary "used N registers": take the
     * first of either (some nvJitLink builds print only the second) */
    int v;
    if (num_before(log, " registers", &v))
        res->registers = v;
    if (num_before(log, "bytes stack frame", &v)) res->local_bytes = v;
    if (num_before(log, "bytes spill stores", &v)) res->spill_store_bytes = v;
    if (num_before(log, "bytes spill loads", &v)) res->spill_load_bytes = v;
    const char *u = strstr(log, "Used ");
    if (u) {
        const char *eol = strchr(u, '\n');
        const char *s = strstr(u, "bytes smem");
        if (s && (!eol || s < eol)) {
            const char *q = s;
            while (q > u && q[-1] == ' ') q--;
            while (q > u && q[-1] >= '0' && q[-1] <= '9') q--;
            res->shared_static_bytes = log_num(q);
        }
    } else if ((u = strstr(log, "used ")) != NULL) { /* nvJitLink's summary line */
        const char *eol = strchr(u, '\n');
        const char *s = strstr(u, "bytes smem");
        if (s && (!eol || s < eol)) {
            const char *q = s;
            while (q > u && q[-1] == ' ') q--;
            while (q > u && q[-1] >= '0' && q[-1] <= '9') q--;
            res->shared_static_bytes = log_num(q);
        }
    }
    free(sec);
}

/* One nvJitLink run (mode: LINK_*) over in: its info and error logs appended to r->log, its
 * output into *out (a PTX output without its NUL). */
static nvfp4jit_status jit_link(nvfp4jit_ctx *ctx, const char *prog_name, const char *arch,
                                int mode, const nj_buf *in, nvrtc_result *r, nj_buf *out) {
    const char *o[16];
    char a2[64];
    const int ptx_out = mode == LINK_LTO_PTX;
    int n2 = link_opts(arch, mode, o, a2, sizeof a2);
    nvJitLinkHandle h = NULL;
    nvJitLinkResult lr = nvJitLinkCreate(&h, (uint32_t)n2, o);
    if (lr != NVJITLINK_SUCCESS)
        return nj_fail(ctx, NVFP4JIT_ERR_LINK, "nvJitLinkCreate failed (%d)", (int)lr);
    lr = mode == LINK_PTX
             ? nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, in->data, in->len, "kernel.ptx")
             : nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, in->data, in->len, "kernel.ltoir");
    if (lr == NVJITLINK_SUCCESS) lr = nvJitLinkComplete(h);
    /* (2: the cubin link fails, 3: the LTO path's PTX link) */
    if (nvrtc_test_force_failure == 2 + ptx_out) {
        nvrtc_test_force_failure = 0;
        lr = NVJITLINK_ERROR_PTX_COMPILE;
        nj_buf_puts(&r->log, "forced nvJitLink failure (test hook)\n");
    }
    size_t n = 0;
    nvJitLinkGetInfoLogSize(h, &n);
    if (n > 1) {
        char *l = malloc(n);
        if (l && nvJitLinkGetInfoLog(h, l) == NVJITLINK_SUCCESS) {
            nj_buf_puts(&r->log, ptx_out ? "== nvJitLink (PTX) ==\n" : "== nvJitLink ==\n");
            nj_buf_puts(&r->log, l);
        }
        free(l);
    }
    n = 0;
    nvJitLinkGetErrorLogSize(h, &n);
    if (n > 1) {
        char *l = malloc(n);
        if (l && nvJitLinkGetErrorLog(h, l) == NVJITLINK_SUCCESS) {
            nj_buf_puts(&r->log, "== nvJitLink errors ==\n");
            nj_buf_puts(&r->log, l);
        }
        free(l);
    }
    if (lr != NVJITLINK_SUCCESS) {
        nvJitLinkDestroy(&h);
        return nj_fail(ctx, NVFP4JIT_ERR_LINK, "nvJitLink failed for %s (%s%s): error %d\n%s",
                       prog_name, arch, ptx_out ? ", the PTX link" : "", (int)lr,
                       r->log.data ? r->log.data : "");
    }
    size_t cn = 0;
    lr = ptx_out ? nvJitLinkGetLinkedPtxSize(h, &cn) : nvJitLinkGetLinkedCubinSize(h, &cn);
    char *buf = lr == NVJITLINK_SUCCESS ? malloc(cn ? cn : 1) : NULL;
    if (buf) lr = ptx_out ? nvJitLinkGetLinkedPtx(h, buf) : nvJitLinkGetLinkedCubin(h, buf);
    nvJitLinkDestroy(&h);
    if (lr != NVJITLINK_SUCCESS) {
        free(buf);
        return nj_fail(ctx, NVFP4JIT_ERR_LINK, "nvJitLink gave no %s for %s (%s): error %d",
                       ptx_out ? "PTX" : "cubin", prog_name, arch, (int)lr);
    }
    if (!buf)
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (%s)", ptx_out ? "PTX" : "cubin");
    int oom = nj_buf_set(out, buf, ptx_out && cn ? cn - 1 : cn); /* (a PTX size counts its NUL) */
    free(buf);
    if (oom)
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (%s)", ptx_out ? "PTX" : "cubin");
    return NVFP4JIT_OK;
}

nvfp4jit_status nvrtc_compile(nvfp4jit_ctx *ctx, const char *src, const char *prog_name,
                              const char *arch, int lto, nvrtc_result *r) {
    const char *o[16];
    char a1[64];
    int n1 = nvrtc_opts(arch, lto, o, a1, sizeof a1);
    double t0 = nj_now_ms();
    nvrtcProgram prog = NULL;
    nvrtcResult nr = nvrtcCreateProgram(&prog, src, prog_name, 0, NULL, NULL);
    if (nr != NVRTC_SUCCESS)
        return nj_fail(ctx, NVFP4JIT_ERR_COMPILE, "nvrtcCreateProgram: %s",
                       nvrtcGetErrorString(nr));
    nr = nvrtcCompileProgram(prog, n1, o);
    size_t logn = 0;
    nvrtcGetProgramLogSize(prog, &logn);
    if (logn > 1) {
        char *l = malloc(logn);
        if (l && nvrtcGetProgramLog(prog, l) == NVRTC_SUCCESS) {
            nj_buf_puts(&r->log, "== NVRTC ==\n");
            nj_buf_puts(&r->log, l);
        }
        free(l);
    }
    if (nvrtc_test_force_failure == 1) {
        nvrtc_test_force_failure = 0;
        nr = NVRTC_ERROR_COMPILATION;
        nj_buf_puts(&r->log, "forced NVRTC failure (test hook)\n");
    }
    if (nr != NVRTC_SUCCESS) {
        nvrtcDestroyProgram(&prog);
        return nj_fail(ctx, NVFP4JIT_ERR_COMPILE, "NVRTC failed for %s (%s): %s\n%s", prog_name,
                       arch, nvrtcGetErrorString(nr), r->log.data ? r->log.data : "");
    }
    /* NVRTC's output: the PTX, or (lto) the LTO-IR; sizes count a PTX's terminating NUL */
    size_t outn = 0;
    nr = lto ? nvrtcGetLTOIRSize(prog, &outn) : nvrtcGetPTXSize(prog, &outn);
    char *out = nr == NVRTC_SUCCESS ? malloc(outn ? outn : 1) : NULL;
    if (out) nr = lto ? nvrtcGetLTOIR(prog, out) : nvrtcGetPTX(prog, out);
    nvrtcDestroyProgram(&prog);
    if (nr != NVRTC_SUCCESS) {
        free(out);
        return nj_fail(ctx, NVFP4JIT_ERR_COMPILE, "NVRTC gave no %s for %s (%s): %s",
                       lto ? "LTO-IR" : "PTX", prog_name, arch, nvrtcGetErrorString(nr));
    }
    if (!out) return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (%s)", lto ? "LTO-IR" : "PTX");
    nj_buf ir;
    nj_buf_init(&ir);
    int oom = nj_buf_set(lto ? &ir : &r->ptx, out, lto || !outn ? outn : outn - 1);
    free(out);
    if (oom) {
        nj_buf_free(&ir);
        return nj_fail(ctx, NVFP4JIT_ERR_OUT_OF_MEMORY, "out of memory (%s)", lto ? "LTO-IR" : "PTX");
    }
    double t1 = nj_now_ms();
    nvfp4jit_status st;
    if (lto) { /* the cubin first (its log has the resource numbers), then the PTX */
        st = jit_link(ctx, prog_name, arch, LINK_LTO, &ir, r, &r->cubin);
        if (st == NVFP4JIT_OK) st = jit_link(ctx, prog_name, arch, LINK_LTO_PTX, &ir, r, &r->ptx);
    } else {
        st = jit_link(ctx, prog_name, arch, LINK_PTX, &r->ptx, r, &r->cubin);
    }
    nj_buf_free(&ir);
    if (st != NVFP4JIT_OK) return st;
    if (!r->log.data) nj_buf_puts(&r->log, "");
    nvrtc_parse_resources(r->log.data, NULL, &r->res);
    r->res.nvrtc_ms = t1 - t0;
    r->res.link_ms = nj_now_ms() - t1;
    return NVFP4JIT_OK;
}
