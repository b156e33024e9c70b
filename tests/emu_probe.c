/* emu_probe.c - the part of the emulator's model that Hopper shares with Blackwell, checked on
 * the hardware: a small sm_90a kernel (NVRTC + nvJitLink, the library's path) TMA-loads 2-D
 * boxes of 8-bit and 16-bit tensors with no swizzle and 32/64/128-byte swizzle, in bounds,
 * partly and fully out of bounds and at negative coordinates, to 1024-aligned and to
 * 128-aligned-but-not-1024-aligned shared destinations, dumps the shared bytes, and the host
 * compares them byte for byte with emu_tma_box_2d (same map parameters through
 * emu_encode_tiled). It also checks the transaction count: the barrier completes with
 * expect_tx(box bytes) and does not with expect_tx(box bytes + 16).
 * (Hopper rejects 16U4_ALIGN8B; the 4-bit path shares the byte placement, not the proof.)
 *
 * Tests (area emu): tma_probe_compile (always: the probe compiles for sm_90a) and tma_probe
 * (needs a device of compute capability 9.0; run it on the H200 with
 * `./nvfp4jit_tests emu tma_probe`). */
#include <stdint.h>
#include <stdlib.h>

#include "compile.h"
#include "driver.h"
#include "emu.h"
#include "testutil.h"

static const char probe_src[] =
    "// TMA probe (tests/emu_probe.c): one CTA per job, thread 0 issues one 2-D box load\n"
    "extern \"C\" __global__ void tma_probe(const unsigned char *maps, const int *jobs,\n"
    "                                       unsigned char *out, unsigned *status, int delta) {\n"
    "  extern __shared__ __align__(16) unsigned char smem_raw[];\n"
    "  __shared__ __align__(8) unsigned long long mbar;\n"
    "  const int *j = jobs + 6 * blockIdx.x;   // map, x, y, dst offset, bytes, out offset\n"
    "  const unsigned base = (unsigned)__cvta_generic_to_shared(smem_raw);\n"
    "  const unsigned al = (base + 1023) & ~1023u;   // the host reserves 1024 bytes of slack\n"
    "  unsigned char *s = smem_raw + (al - base);\n"
    "  for (int i = threadIdx.x; i < 4096; i += blockDim.x) s[i] = 0xEE;\n"
    "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n"
    "    const unsigned bar = (unsigned)__cvta_generic_to_shared(&mbar);\n"
    "    const unsigned dst = al + j[3];\n"
    "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"(bar));\n"
    "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\"\n"
    "                 :: \"r\"(bar), \"r\"(j[4] + delta) : \"memory\");\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n"
    "                 \" [%0], [%1, {%2, %3}], [%4];\"\n"
    "                 :: \"r\"(dst), \"l\"(maps + 128 * j[0]), \"r\"(j[1]), \"r\"(j[2]), \"r\"(bar)\n"
    "                 : \"memory\");\n"
    "    unsigned done = 0;\n"
    "    const long long t0 = clock64();\n"
    "    while (!done && clock64() - t0 < (1LL << 28)) {\n"
    "      asm volatile(\"{\\n\\t.reg .pred p;\\n\\t\"\n"
    "                   \"mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\\n\\t\"\n"
    "                   \"selp.u32 %0, 1, 0, p;\\n\\t}\" : \"=r\"(done) : \"r\"(bar) : \"memory\");\n"
    "    }\n"
    "    status[blockIdx.x] = done ? 1u : 2u;   // 2: the phase never completed\n"
    "    status[gridDim.x + blockIdx.x] = dst;   // the absolute shared address\n"
    "  }\n"
    "  __syncthreads();\n"
    "  for (int i = threadIdx.x; i < j[4]; i += blockDim.x) out[j[5] + i] = s[j[3] + i];\n"
    "}\n";

static int emu_probe_compile(nvfp4jit_ctx *ctx, const char *arch, nvrtc_result *r) {
    nvrtc_result_init(r);
    return nvrtc_compile(ctx, probe_src, "tma_probe.cu", arch, 0, r) == NVFP4JIT_OK ? 0 : -1;
}

typedef struct pmap {
    CUtensorMapDataType t;
    int esize;
    cuuint64_t w, h;
    cuuint32_t bw, bh;
    CUtensorMapSwizzle sw;
} pmap;

static const pmap maps[] = {
    {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, 200, 50, 128, 16, CU_TENSOR_MAP_SWIZZLE_128B},
    {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, 200, 50, 64, 16, CU_TENSOR_MAP_SWIZZLE_64B},
    {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, 200, 50, 32, 8, CU_TENSOR_MAP_SWIZZLE_32B},
    {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, 200, 50, 64, 8, CU_TENSOR_MAP_SWIZZLE_NONE},
    {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, 100, 50, 64, 8, CU_TENSOR_MAP_SWIZZLE_128B},
    {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, 100, 50, 32, 16, CU_TENSOR_MAP_SWIZZLE_64B},
};
#define NMAPS (sizeof maps / sizeof maps[0])
static const int coords[][2] = {{0, 0}, {64, 8}, {128, 0}, {0, 40}, {-32, -4}, {192, 48}, {400, 0}};
#define NCO (sizeof coords / sizeof coords[0])
#define STRIDE 256 /* bytes per row of both tensors */

/* jobs for destination offsets offs[]: 6 ints each */
static int make_jobs(int *jobs, const int *offs, int noffs, int *out_bytes) {
    int n = 0, o = 0;
    for (int d = 0; d < noffs; d++)
        for (size_t m = 0; m < NMAPS; m++)
            for (size_t c = 0; c < NCO; c++) {
                int bytes = (int)(maps[m].bw * maps[m].bh) * maps[m].esize;
                int *j = jobs + 6 * n++;
                j[0] = (int)m;
                j[1] = coords[c][0];
                j[2] = coords[c][1];
                j[3] = offs[d];
                j[4] = bytes;
                j[5] = o;
                o += bytes;
            }
    *out_bytes = o;
    return n;
}

void emu_probe_run(void) {
    nvfp4jit_ctx *ctx = NULL;
    nvfp4jit_ctx_options opt = {0};
    opt.disable_disk_cache = 1;
    REQUIRE(nvfp4jit_ctx_create(&opt, &ctx) == NVFP4JIT_OK);
    nvfp4jit_status s;
    const drv_api *api = drv_get(ctx, &s);
    /* not the "no CUDA device" wording: that would mark the whole emu area skipped in CTest */
    if (!api || ctx->device_cc != 90) {
        int cc = api ? ctx->device_cc : 0;
        nvfp4jit_ctx_destroy(ctx);
        SKIP("skipped: the TMA probe needs a GPU of compute capability 9.0 (found %d)", cc);
    }
    nvrtc_result r;
    if (emu_probe_compile(ctx, "sm_90a", &r)) {
        fprintf(stderr, "  %s\n", nvfp4jit_last_error(ctx));
        CHECK(0);
        nvrtc_result_free(&r);
        nvfp4jit_ctx_destroy(ctx);
        return;
    }
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    REQUIRE(api->cuModuleLoadData(&mod, r.cubin.data) == CUDA_SUCCESS);
    REQUIRE(api->cuModuleGetFunction(&fn, mod, "tma_probe") == CUDA_SUCCESS);
    /* the two tensors: every byte non-zero, so zero fill shows */
    size_t gsize = (size_t)STRIDE * 50;
    uint8_t *host = malloc(gsize);
    REQUIRE(host);
    for (size_t i = 0; i < gsize; i++) host[i] = (uint8_t)(1 + (i * 131 + (i >> 8) * 17) % 255);
    CUdeviceptr dg, dmaps, djobs, dout, dstat;
    REQUIRE(api->cuMemAlloc(&dg, gsize) == CUDA_SUCCESS);
    REQUIRE(api->cuMemcpyHtoD(dg, host, gsize) == CUDA_SUCCESS);
    unsigned char hmaps[NMAPS * 128] __attribute__((aligned(64)));
    emu_tmap emaps[NMAPS];
    for (size_t m = 0; m < NMAPS; m++) {
        cuuint64_t dims[2] = {maps[m].w, maps[m].h}, str[1] = {STRIDE};
        cuuint32_t box[2] = {maps[m].bw, maps[m].bh}, es[2] = {1, 1};
        CUtensorMap tm;
        REQUIRE(api->cuTensorMapEncodeTiled((CUtensorMap *)(hmaps + 128 * m), maps[m].t, 2,
                                            (void *)(uintptr_t)dg, dims, str, box, es,
                                            CU_TENSOR_MAP_INTERLEAVE_NONE, maps[m].sw,
                                            CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
        REQUIRE(emu_encode_tiled(&tm, maps[m].t, 2, host, dims, str, box, es,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, maps[m].sw,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
        memcpy(&emaps[m], &tm, sizeof emaps[m]);
    }
    REQUIRE(api->cuMemAlloc(&dmaps, sizeof hmaps) == CUDA_SUCCESS);
    REQUIRE(api->cuMemcpyHtoD(dmaps, hmaps, sizeof hmaps) == CUDA_SUCCESS);
    /* launches: aligned destinations; 128-aligned destinations inside the swizzle pattern;
     * aligned destinations with expect_tx + 16 (must never complete) */
    static const int aligned[] = {0}, shifted[] = {128, 384, 640};
    struct {
        const int *offs;
        int n, delta;
        const char *what;
    } runs[] = {{aligned, 1, 0, "1024-aligned destinations"},
                {shifted, 3, 0, "destinations 128/384/640 bytes past a 1024 boundary"},
                {aligned, 1, 16, "expect_tx of 16 bytes more than the box"}};
    uint8_t *emu_smem = malloc(65536);
    REQUIRE(emu_smem);
    long long compared = 0, bad = 0;
    for (size_t ri = 0; ri < sizeof runs / sizeof runs[0]; ri++) {
        static int jobs[6 * 3 * NMAPS * NCO];
        int ob = 0, nj = make_jobs(jobs, runs[ri].offs, runs[ri].n, &ob);
        uint8_t *out = malloc((size_t)ob);
        unsigned *stat = malloc(sizeof(unsigned) * 2 * (size_t)nj);
        REQUIRE(out && stat);
        REQUIRE(api->cuMemAlloc(&djobs, sizeof(int) * 6 * (size_t)nj) == CUDA_SUCCESS);
        REQUIRE(api->cuMemAlloc(&dout, (size_t)ob) == CUDA_SUCCESS);
        REQUIRE(api->cuMemAlloc(&dstat, sizeof(unsigned) * 2 * (size_t)nj) == CUDA_SUCCESS);
        REQUIRE(api->cuMemcpyHtoD(djobs, jobs, sizeof(int) * 6 * (size_t)nj) == CUDA_SUCCESS);
        int delta = runs[ri].delta;
        void *args[] = {&dmaps, &djobs, &dout, &dstat, &delta};
        CUresult lr = api->cuLaunchKernel(fn, (unsigned)nj, 1, 1, 128, 1, 1, 4096 + 1024, NULL,
                                          args, NULL);
        if (lr == CUDA_SUCCESS) lr = api->cuCtxSynchronize();
        CHECKF(lr == CUDA_SUCCESS, "%s: launch failed (%d): the hardware rejects what the "
               "emulator accepts", runs[ri].what, (int)lr);
        if (lr != CUDA_SUCCESS) break;
        REQUIRE(api->cuMemcpyDtoH(out, dout, (size_t)ob) == CUDA_SUCCESS);
        REQUIRE(api->cuMemcpyDtoH(stat, dstat, sizeof(unsigned) * 2 * (size_t)nj) == CUDA_SUCCESS);
        for (int b = 0; b < nj; b++) {
            const int *j = jobs + 6 * b;
            unsigned want = delta ? 2u : 1u;
            CHECKF(stat[b] == want, "%s, map %d at (%d,%d): barrier %s", runs[ri].what, j[0],
                   j[1], j[2], stat[b] == 1 ? "completed" : "never completed");
            if (delta) continue;
            uint32_t dst = stat[nj + b];
            char err[256];
            memset(emu_smem, 0xEE, 65536);
            long n = emu_tma_box_2d(&emaps[j[0]], j[1], j[2], emu_smem, 65536, dst, err, sizeof err);
            CHECKF(n == j[4], "model: %s", n < 0 ? err : "byte count differs");
            if (n != j[4]) continue;
            int diff = 0;
            for (int i = 0; i < j[4]; i++)
                if (emu_smem[dst + (uint32_t)i] != out[j[5] + i]) {
                    if (!diff++)
                        fprintf(stderr, "  %s, map %d (%d-byte elements, swizzle %d) at (%d,%d), "
                                "shared 0x%x: byte %d is 0x%02x on the GPU, 0x%02x in the model\n",
                                runs[ri].what, j[0], maps[j[0]].esize, (int)maps[j[0]].sw, j[1],
                                j[2], dst, i, out[j[5] + i], emu_smem[dst + (uint32_t)i]);
                }
            compared += j[4];
            bad += diff;
        }
        api->cuMemFree(djobs);
        api->cuMemFree(dout);
        api->cuMemFree(dstat);
        free(out);
        free(stat);
    }
    printf("  TMA probe: %lld bytes compared with the emulator's model, %lld differ\n", compared,
           bad);
    CHECK(bad == 0);
    CHECK(compared > 0);
    free(emu_smem);
    free(host);
    api->cuMemFree(dg);
    api->cuMemFree(dmaps);
    api->cuModuleUnload(mod);
    nvrtc_result_free(&r);
    nvfp4jit_ctx_destroy(ctx);
}

void emu_probe_compile_test(void) {
    nvfp4jit_ctx *ctx = NULL;
    nvfp4jit_ctx_options opt = {0};
    opt.disable_disk_cache = 1;
    REQUIRE(nvfp4jit_ctx_create(&opt, &ctx) == NVFP4JIT_OK);
    nvrtc_result r;
    int rc = emu_probe_compile(ctx, "sm_90a", &r);
    CHECKF(rc == 0, "%s", nvfp4jit_last_error(ctx));
    if (rc == 0) {
        CHECK(strstr(r.ptx.data, "cp.async.bulk.tensor.2d") != NULL);
        CHECK(r.cubin.len > 0);
    }
    nvrtc_result_free(&r);
    nvfp4jit_ctx_destroy(ctx);
}
