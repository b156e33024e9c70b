/* compile.h - NVRTC to PTX, nvJitLink to cubin, and the resource report. */
#ifndef NJ_COMPILE_H
#define NJ_COMPILE_H

#include "common.h"

typedef struct nvrtc_result {
    nj_buf ptx, cubin, log;
    nvfp4jit_resources res; /* registers, smem, spills, local, nvrtc_ms, link_ms; threads 0 */
} nvrtc_result;

void nvrtc_result_init(nvrtc_result *r);
void nvrtc_result_free(nvrtc_result *r);

/* Compile `src` for arch ("sm_90a" / "sm_100a"); lto: whole-program (NVRTC -dlto, nvJitLink
 * -lto; compile.c says why: setmaxnreg), else NVRTC -> PTX -> nvJitLink. Options contain no
 * absolute paths.
 * @return NVFP4JIT_OK, NVFP4JIT_ERR_COMPILE or NVFP4JIT_ERR_LINK (with the full log on ctx and
 * in r->log), NVFP4JIT_ERR_OUT_OF_MEMORY. */
nvfp4jit_status nvrtc_compile(nvfp4jit_ctx *ctx, const char *src, const char *prog_name,
                              const char *arch, int lto, nvrtc_result *r);

/* The option strings and tool versions that go into the cache key, as text (lto as above). */
int nvrtc_key_text(const char *arch, int lto, nj_buf *out);

/* Parse a ptxas/nvJitLink info log into res (registers, spills, stack, smem). fn: the entry
 * function whose numbers are wanted (a module may hold several, e.g. a GEMM and its prep
 * kernel, in the order ptxas chose): only its part of the log (ptxas' "Compiling entry
 * function 'fn'" section, else nvJitLink's "Function properties for 'fn'"); NULL, or fn not
 * named in the log: the first numbers of the whole log. */
void nvrtc_parse_resources(const char *log, const char *fn, nvfp4jit_resources *res);

/* Test hook: when non-zero, the next compile fails as if NVRTC (1), nvJitLink's cubin link (2)
 * or the lto path's PTX link (3) failed. */
extern int nvrtc_test_force_failure;

#endif
