/* Issue 13 part 4 (2026-12-07, thirteenth session): which compile path keeps setmaxnreg?
 * The act16 template uses a producer WARP, not a warpgroup, because ptxas ignores setmaxnreg
 * (C7504) when nvJitLink compiles the library's PTX. A test kernel (3 warpgroups, the last one
 * gives registers back with setmaxnreg.dec 40, the others take 232) through:
 *   1. NVRTC -> PTX -> nvJitLink (the library's path today)
 *   2. NVRTC straight to a cubin (-arch=sm_90a)
 *   3. NVRTC -dlto -> LTO-IR -> nvJitLink -lto
 *   4. the same LTO-IR -> nvJitLink -lto -ptx (is there still PTX to inspect and lint? a plain
 *      -lto link gives none: nvJitLinkGetLinkedPtxSize fails without -ptx)
 * Writes path1.cubin .. path3.cubin, path4.ptx into the current directory; bash
 * bench/probe/setmaxnreg-paths.sh builds it and counts USETMAXREG in each cubin's SASS. CPU only. */
#include <nvJitLink.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SRC =
    "extern \"C\" __global__ void __launch_bounds__(384, 1) k(float *out, const float *in, int n) {\n"
    "  if (threadIdx.x / 128 == 2) {\n"
    "    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\\n\");\n"
    "    if (threadIdx.x == 256) out[0] = 1.f;\n"
    "    return;\n"
    "  }\n"
    "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\\n\");\n"
    "  float acc[160];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 160; i++) acc[i] = in[threadIdx.x + i * 384];\n"
    "  for (int j = 0; j < n; j++) {\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 160; i++) acc[i] = acc[i] * acc[(i + 1) % 160] + 1.f;\n"
    "  }\n"
    "  float s = 0;\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 160; i++) s += acc[i];\n"
    "  out[threadIdx.x] = s;\n"
    "}\n";

static int put(const char *f, const void *d, size_t n) {
    FILE *o = fopen(f, "wb");
    if (!o) return 1;
    size_t w = fwrite(d, 1, n, o);
    return fclose(o) != 0 || w != n;
}

/* NVRTC with opts; *out: PTX (kind 0), cubin (1) or LTO-IR (2). */
static int rtc(const char **opts, int nopts, int kind, char **out, size_t *n) {
    nvrtcProgram p;
    if (nvrtcCreateProgram(&p, SRC, "k.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return 1;
    nvrtcResult r = nvrtcCompileProgram(p, nopts, opts);
    size_t ln = 0;
    nvrtcGetProgramLogSize(p, &ln);
    char *log = calloc(1, ln + 1);
    if (log && ln) nvrtcGetProgramLog(p, log);
    printf("   NVRTC rc %d%s%s", (int)r, log && *log ? ", log:\n" : "\n", log ? log : "");
    free(log);
    if (r != NVRTC_SUCCESS) return 1;
    if (kind == 1) { /* a cubin compile: is its PTX there too (one compile for both)? */
        size_t pn = 0;
        nvrtcResult pr = nvrtcGetPTXSize(p, &pn);
        printf("   PTX of the same compile: rc %d, %zu bytes\n", (int)pr, pn);
    }
    r = kind == 0 ? nvrtcGetPTXSize(p, n) : kind == 1 ? nvrtcGetCUBINSize(p, n) : nvrtcGetLTOIRSize(p, n);
    *out = r == NVRTC_SUCCESS ? malloc(*n ? *n : 1) : NULL;
    if (*out) r = kind == 0 ? nvrtcGetPTX(p, *out) : kind == 1 ? nvrtcGetCUBIN(p, *out) : nvrtcGetLTOIR(p, *out);
    nvrtcDestroyProgram(&p);
    return !*out || r != NVRTC_SUCCESS;
}

/* nvJitLink of one input; ptx: ask for PTX (-ptx) instead of a cubin. */
static int link(const char **opts, int nopts, nvJitLinkInputType t, const char *in, size_t n,
                int ptx, const char *file) {
    nvJitLinkHandle h;
    if (nvJitLinkCreate(&h, (uint32_t)nopts, opts) != NVJITLINK_SUCCESS) return 1;
    nvJitLinkResult r = nvJitLinkAddData(h, t, in, n, "k");
    if (r == NVJITLINK_SUCCESS) r = nvJitLinkComplete(h);
    size_t ln = 0;
    nvJitLinkGetInfoLogSize(h, &ln);
    char *log = calloc(1, ln + 1);
    if (log && ln) nvJitLinkGetInfoLog(h, log);
    printf("   nvJitLink rc %d, info log:\n%s", (int)r, log ? log : "");
    free(log);
    size_t m = 0;
    char *o = NULL;
    if (r == NVJITLINK_SUCCESS)
        r = ptx ? nvJitLinkGetLinkedPtxSize(h, &m) : nvJitLinkGetLinkedCubinSize(h, &m);
    if (r == NVJITLINK_SUCCESS && (o = malloc(m ? m : 1)) != NULL)
        r = ptx ? nvJitLinkGetLinkedPtx(h, o) : nvJitLinkGetLinkedCubin(h, o);
    int bad = r != NVJITLINK_SUCCESS || !o || put(file, o, ptx && m ? m - 1 : m);
    printf("   -> %s (%zu bytes)%s\n", file, m, bad ? " FAILED" : "");
    free(o);
    nvJitLinkDestroy(&h);
    return bad;
}

int main(void) {
    const char *rtc_ptx[] = {"--gpu-architecture=compute_90a", "-default-device", "--std=c++17"};
    const char *rtc_cubin[] = {"-arch=sm_90a", "-default-device", "--std=c++17"};
    const char *rtc_lto[] = {"--gpu-architecture=compute_90a", "-dlto", "-default-device", "--std=c++17"};
    const char *lk[] = {"-arch=sm_90a", "-verbose", "-O3"};
    const char *lk_lto[] = {"-arch=sm_90a", "-verbose", "-O3", "-lto"};
    const char *lk_lto_ptx[] = {"-arch=sm_90a", "-O3", "-lto", "-ptx"};
    char *b = NULL;
    size_t n = 0;
    int bad = 0;
    printf("== 1. NVRTC -> PTX -> nvJitLink\n");
    bad |= rtc(rtc_ptx, 3, 0, &b, &n) || link(lk, 3, NVJITLINK_INPUT_PTX, b, n - 1, 0, "path1.cubin");
    free(b);
    printf("== 2. NVRTC straight to a cubin\n");
    bad |= rtc(rtc_cubin, 3, 1, &b, &n) || put("path2.cubin", b, n);
    free(b);
    printf("== 3. NVRTC -dlto -> nvJitLink -lto\n");
    bad |= rtc(rtc_lto, 4, 2, &b, &n) || link(lk_lto, 4, NVJITLINK_INPUT_LTOIR, b, n, 0, "path3.cubin");
    printf("== 4. the same LTO-IR -> nvJitLink -lto -ptx\n");
    bad |= link(lk_lto_ptx, 4, NVJITLINK_INPUT_LTOIR, b, n, 1, "path4.ptx");
    free(b);
    return bad;
}
